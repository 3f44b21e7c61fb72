/*
** core/assignor.c: range, round-robin and eager sticky partition assignment,
** as Kafka's client assignors compute them (kafka-reference 6.2-6.5).
**
** Member order (6.2): ksim has no static members (group.instance.id), so
** members are ordered by member id in strcmp order. All three assignors work
** on that order, never on the caller's array order.
**
** Range (RangeAssignor): per topic, the subscribed members in order; with P
** partitions and C members, member i gets q+1 partitions if i < r else q,
** starting at i*q + min(i, r), where q = P div C, r = P mod C.
**
** Round robin (RoundRobinAssignor): every partition of every subscribed topic,
** sorted by topic name then number, dealt to a circular list of the members;
** for each partition the list advances to the next member subscribed to its
** topic, which takes it, and then steps once more.
**
** Sticky (eager StickyAssignor, AbstractStickyAssignor in Kafka 3.x):
**   0. Ownership claims: a member's owned partitions (from its last
**      generation) count only if the topic still exists and the member still
**      subscribes to it; when several members claim a partition, the highest
**      generation wins, and a tie leaves it unowned.
**   1. When every member subscribes to the same topics (the only case a ksim
**      group produces), Kafka's "constrained" algorithm: minQuota = P div C,
**      maxQuota = ceil(P / C), and exactly P mod C members may hold maxQuota.
**      Each member keeps its valid owned partitions up to its quota (maxQuota
**      while members over minQuota are still allowed, else minQuota), in its
**      owned order; the rest are freed. The free partitions, sorted by topic
**      index then number, go round robin to the members still under
**      minQuota, then one each to members at minQuota until P mod C members
**      hold maxQuota. So the result is balanced first and sticky second.
**   2. Otherwise (members subscribe to different topics; Kafka's "general"
**      path is a long search) a simpler greedy rule with the same priorities:
**      keep valid claims, give each free partition to its least loaded
**      subscribed member, then move partitions from a member to a subscribed
**      member holding two or more fewer until no such move exists.
**      This is a ksim simplification; it is balanced where moves can balance.
**
** Invariants (asserted):
**   A1  every partition of a subscribed topic has exactly one owner, which
**       subscribes to its topic; partitions of unsubscribed topics have -1.
*/
#include "assignor.h"

#include "base.h"

#include <glib.h>
#include <string.h>

int32_t ks_assignor_slot(const struct ks_assignor_topic *topics, int32_t topic_index,
                         int32_t partition)
{
    int32_t slot = 0;
    for (int32_t t = 0; t < topic_index; t++) {
        slot += topics[t].partition_count;
    }
    ks_assert(partition >= 0);
    ks_assert(partition < topics[topic_index].partition_count);
    return slot + partition;
}

int32_t ks_assignor_slot_count(const struct ks_assignor_topic *topics, int32_t topic_count)
{
    int32_t count = 0;
    for (int32_t t = 0; t < topic_count; t++) {
        count += topics[t].partition_count;
    }
    return count;
}

const char *ks_assignor_name(enum ks_assignor assignor)
{
    switch (assignor) {
    case KS_ASSIGNOR_RANGE: return "range";
    case KS_ASSIGNOR_ROUNDROBIN: return "roundrobin";
    case KS_ASSIGNOR_STICKY: return "sticky";
    }
    return "?";
}

static bool member_subscribes(const struct ks_assignor_member *member, int32_t topic_index)
{
    for (int32_t i = 0; i < member->topic_count; i++) {
        if (member->topics[i] == topic_index) {
            return true;
        }
    }
    return false;
}

/* The member indexes sorted by member id (kafka-reference 6.2). */
static int compare_member_index(const void *a, const void *b, void *context)
{
    const struct ks_assignor_member *members = context;
    int32_t ia = *(const int32_t *)a;
    int32_t ib = *(const int32_t *)b;
    int c = strcmp(members[ia].member_id, members[ib].member_id);
    if (c != 0) {
        return c;
    }
    return ia < ib ? -1 : (ia > ib ? 1 : 0);
}

static int32_t *sorted_member_order(const struct ks_assignor_member *members, int32_t member_count)
{
    int32_t *order = g_new0(int32_t, (gsize)member_count + 1);
    for (int32_t i = 0; i < member_count; i++) {
        order[i] = i;
    }
    g_qsort_with_data(order, member_count, sizeof(int32_t), compare_member_index,
                      (gpointer)members);
    return order;
}

/* ---- range ---------------------------------------------------------------- */

static void assign_range(const struct ks_assignor_topic *topics, int32_t topic_count,
                         const struct ks_assignor_member *members, const int32_t *order,
                         int32_t member_count, int32_t *owner_out)
{
    int32_t *subscribed = g_new0(int32_t, (gsize)member_count + 1);
    for (int32_t t = 0; t < topic_count; t++) {
        int32_t subscribed_count = 0;
        for (int32_t k = 0; k < member_count; k++) {
            if (member_subscribes(&members[order[k]], t)) {
                subscribed[subscribed_count++] = order[k];
            }
        }
        if (subscribed_count == 0) {
            continue;
        }
        int32_t partition_count = topics[t].partition_count;
        int32_t quotient = partition_count / subscribed_count;
        int32_t remainder = partition_count % subscribed_count;
        for (int32_t i = 0; i < subscribed_count; i++) {
            int32_t start = i * quotient + (i < remainder ? i : remainder);
            int32_t length = quotient + (i < remainder ? 1 : 0);
            for (int32_t p = start; p < start + length; p++) {
                owner_out[ks_assignor_slot(topics, t, p)] = subscribed[i];
            }
        }
    }
    g_free(subscribed);
}

/* ---- round robin ------------------------------------------------------------ */

static int compare_topic_by_name(const void *a, const void *b, void *context)
{
    const struct ks_assignor_topic *topics = context;
    int32_t ia = *(const int32_t *)a;
    int32_t ib = *(const int32_t *)b;
    int c = strcmp(topics[ia].name, topics[ib].name);
    if (c != 0) {
        return c;
    }
    return ia < ib ? -1 : (ia > ib ? 1 : 0);
}

static void assign_roundrobin(const struct ks_assignor_topic *topics, int32_t topic_count,
                              const struct ks_assignor_member *members, const int32_t *order,
                              int32_t member_count, int32_t *owner_out)
{
    int32_t *topic_order = g_new0(int32_t, (gsize)topic_count + 1);
    for (int32_t t = 0; t < topic_count; t++) {
        topic_order[t] = t;
    }
    g_qsort_with_data(topic_order, topic_count, sizeof(int32_t), compare_topic_by_name,
                      (gpointer)topics);
    int32_t cursor = 0; /* position in the circular member list */
    for (int32_t k = 0; k < topic_count; k++) {
        int32_t t = topic_order[k];
        bool any = false;
        for (int32_t m = 0; m < member_count; m++) {
            any = any || member_subscribes(&members[m], t);
        }
        if (!any) {
            continue;
        }
        for (int32_t p = 0; p < topics[t].partition_count; p++) {
            while (!member_subscribes(&members[order[cursor]], t)) {
                cursor = (cursor + 1) % member_count;
            }
            owner_out[ks_assignor_slot(topics, t, p)] = order[cursor];
            cursor = (cursor + 1) % member_count;
        }
    }
    g_free(topic_order);
}

/* ---- sticky ------------------------------------------------------------------ */

/* Step 0: claim[slot] = the member whose claim on the partition is valid, or
 * -1. */
static void sticky_claims(const struct ks_assignor_topic *topics, int32_t topic_count,
                          const struct ks_assignor_member *members, const int32_t *order,
                          int32_t member_count, int32_t *claim)
{
    int32_t slot_count = ks_assignor_slot_count(topics, topic_count);
    int32_t *claim_generation = g_new0(int32_t, (gsize)slot_count + 1);
    bool *tied = g_new0(bool, (gsize)slot_count + 1);
    for (int32_t s = 0; s < slot_count; s++) {
        claim[s] = -1;
        claim_generation[s] = -1;
    }
    for (int32_t k = 0; k < member_count; k++) {
        const struct ks_assignor_member *member = &members[order[k]];
        if (member->owned_generation < 0) {
            continue;
        }
        for (int32_t i = 0; i < member->owned_count; i++) {
            const struct ks_group_topic_partition *tp = &member->owned[i];
            if (tp->topic_index < 0 || tp->topic_index >= topic_count || tp->partition < 0 ||
                tp->partition >= topics[tp->topic_index].partition_count ||
                !member_subscribes(member, tp->topic_index)) {
                continue;
            }
            int32_t s = ks_assignor_slot(topics, tp->topic_index, tp->partition);
            if (claim[s] == order[k]) {
                continue; /* listed twice by one member */
            }
            if (member->owned_generation > claim_generation[s]) {
                claim[s] = order[k];
                claim_generation[s] = member->owned_generation;
                tied[s] = false;
            } else if (member->owned_generation == claim_generation[s]) {
                tied[s] = true;
            }
        }
    }
    for (int32_t s = 0; s < slot_count; s++) {
        if (tied[s]) {
            claim[s] = -1;
        }
    }
    g_free(claim_generation);
    g_free(tied);
}

static bool same_subscriptions(const struct ks_assignor_member *members, int32_t member_count,
                               int32_t topic_count)
{
    for (int32_t t = 0; t < topic_count; t++) {
        bool first = member_subscribes(&members[0], t);
        for (int32_t m = 1; m < member_count; m++) {
            if (member_subscribes(&members[m], t) != first) {
                return false;
            }
        }
    }
    return true;
}

/* An ordered list of member indexes with Java-iterator removal. */
struct member_list {
    int32_t *items;
    int32_t count;
};

static void member_list_remove_at(struct member_list *list, int32_t index)
{
    ks_assert(index >= 0 && index < list->count);
    memmove(&list->items[index], &list->items[index + 1],
            sizeof(int32_t) * (size_t)(list->count - index - 1));
    list->count--;
}

/* Topic indexes sorted by name: the order free partitions are dealt in. */
static int32_t *topics_by_name(const struct ks_assignor_topic *topics, int32_t topic_count)
{
    int32_t *topic_order = g_new0(int32_t, (gsize)topic_count + 1);
    for (int32_t t = 0; t < topic_count; t++) {
        topic_order[t] = t;
    }
    g_qsort_with_data(topic_order, topic_count, sizeof(int32_t), compare_topic_by_name,
                      (gpointer)topics);
    return topic_order;
}

static bool valid_owned(const struct ks_assignor_topic *topics, int32_t topic_count,
                        const struct ks_group_topic_partition *tp)
{
    return tp->topic_index >= 0 && tp->topic_index < topic_count && tp->partition >= 0 &&
           tp->partition < topics[tp->topic_index].partition_count;
}

/* Kafka's constrained assignment (all members subscribe to the same topics),
 * following AbstractStickyAssignor.constrainedAssign step by step; members
 * are visited in member-id order. */
static void sticky_constrained(const struct ks_assignor_topic *topics, int32_t topic_count,
                               const struct ks_assignor_member *members, const int32_t *order,
                               int32_t member_count, const int32_t *claim, int32_t *owner_out)
{
    int32_t partition_count = 0;
    for (int32_t t = 0; t < topic_count; t++) {
        if (member_subscribes(&members[0], t)) {
            partition_count += topics[t].partition_count;
        }
    }
    int32_t quota_min = partition_count / member_count;
    int32_t quota_max = (partition_count + member_count - 1) / member_count;
    int32_t over_min_expected = partition_count % member_count;
    int32_t over_min_count = 0;
    int32_t *held = g_new0(int32_t, (gsize)member_count + 1); /* by member index */
    struct member_list under = { g_new0(int32_t, (gsize)member_count + 1), 0 };
    struct member_list at_min = { g_new0(int32_t, (gsize)member_count + 1), 0 };

    /* Step 1: keep owned partitions up to the quota, in owned order. */
    for (int32_t k = 0; k < member_count; k++) {
        int32_t m = order[k];
        const struct ks_assignor_member *member = &members[m];
        int32_t valid = 0;
        for (int32_t i = 0; i < member->owned_count; i++) {
            const struct ks_group_topic_partition *tp = &member->owned[i];
            if (valid_owned(topics, topic_count, tp) &&
                claim[ks_assignor_slot(topics, tp->topic_index, tp->partition)] == m) {
                valid++;
            }
        }
        int32_t keep;
        if (valid < quota_min) {
            keep = valid;
            under.items[under.count++] = m;
        } else if (valid >= quota_max && over_min_count < over_min_expected) {
            keep = quota_max;
            over_min_count++;
            if (over_min_count == over_min_expected) {
                at_min.count = 0;
            }
        } else {
            keep = quota_min;
            if (over_min_count < over_min_expected) {
                at_min.items[at_min.count++] = m;
            }
        }
        for (int32_t i = 0; i < member->owned_count && held[m] < keep; i++) {
            const struct ks_group_topic_partition *tp = &member->owned[i];
            if (!valid_owned(topics, topic_count, tp)) {
                continue;
            }
            int32_t s = ks_assignor_slot(topics, tp->topic_index, tp->partition);
            if (claim[s] == m && owner_out[s] == -1) {
                owner_out[s] = m;
                held[m]++;
            }
        }
    }

    /* Step 2: deal the free partitions round robin, first over the members
     * under quota_min (restarting while any remain), then over the members
     * at quota_min until enough hold quota_max. */
    int32_t *topic_order = topics_by_name(topics, topic_count);
    struct member_list *list = &under;
    int32_t cursor = 0;
    for (int32_t k = 0; k < topic_count; k++) {
        int32_t t = topic_order[k];
        if (!member_subscribes(&members[0], t)) {
            continue;
        }
        for (int32_t p = 0; p < topics[t].partition_count; p++) {
            int32_t s = ks_assignor_slot(topics, t, p);
            if (owner_out[s] != -1) {
                continue;
            }
            if (cursor >= list->count) {
                ks_assert(under.count > 0 || at_min.count > 0);
                list = under.count > 0 ? &under : &at_min;
                cursor = 0;
            }
            int32_t m = list->items[cursor];
            owner_out[s] = m;
            held[m]++;
            if (held[m] == quota_min) {
                member_list_remove_at(list, cursor);
                at_min.items[at_min.count++] = m;
            } else if (held[m] == quota_max) {
                over_min_count++;
                member_list_remove_at(list, cursor);
            } else {
                cursor++;
            }
        }
    }
    ks_assert(over_min_count <= over_min_expected);
    g_free(topic_order);
    g_free(under.items);
    g_free(at_min.items);
    g_free(held);
}

/* The greedy path for members with different subscriptions. */
static void sticky_general(const struct ks_assignor_topic *topics, int32_t topic_count,
                           const struct ks_assignor_member *members, const int32_t *order,
                           int32_t member_count, const int32_t *claim, int32_t *owner_out)
{
    int32_t slot_count = ks_assignor_slot_count(topics, topic_count);
    int32_t *held = g_new0(int32_t, (gsize)member_count + 1);
    int32_t *slot_topic = g_new0(int32_t, (gsize)slot_count + 1);
    for (int32_t t = 0, s = 0; t < topic_count; t++) {
        for (int32_t p = 0; p < topics[t].partition_count; p++) {
            slot_topic[s++] = t;
        }
    }
    for (int32_t s = 0; s < slot_count; s++) {
        if (claim[s] >= 0) {
            owner_out[s] = claim[s];
            held[claim[s]]++;
        }
    }
    for (int32_t s = 0; s < slot_count; s++) {
        if (owner_out[s] != -1) {
            continue;
        }
        int32_t best = -1;
        for (int32_t k = 0; k < member_count; k++) {
            int32_t m = order[k];
            if (member_subscribes(&members[m], slot_topic[s]) &&
                (best == -1 || held[m] < held[best])) {
                best = m;
            }
        }
        if (best >= 0) {
            owner_out[s] = best;
            held[best]++;
        }
    }
    /* Balance: each move lowers the sum of squares of the loads, so it ends. */
    bool moved = true;
    while (moved) {
        moved = false;
        for (int32_t s = slot_count - 1; s >= 0 && !moved; s--) {
            int32_t from = owner_out[s];
            if (from < 0) {
                continue;
            }
            for (int32_t k = 0; k < member_count && !moved; k++) {
                int32_t to = order[k];
                if (to != from && member_subscribes(&members[to], slot_topic[s]) &&
                    held[to] + 1 < held[from]) {
                    owner_out[s] = to;
                    held[from]--;
                    held[to]++;
                    moved = true;
                }
            }
        }
    }
    g_free(slot_topic);
    g_free(held);
}

void ks_assignor_assign(enum ks_assignor assignor, const struct ks_assignor_topic *topics,
                        int32_t topic_count, const struct ks_assignor_member *members,
                        int32_t member_count, int32_t *owner_out)
{
    int32_t slot_count = ks_assignor_slot_count(topics, topic_count);
    for (int32_t s = 0; s < slot_count; s++) {
        owner_out[s] = -1;
    }
    if (member_count == 0) {
        return;
    }
    int32_t *order = sorted_member_order(members, member_count);
    switch (assignor) {
    case KS_ASSIGNOR_RANGE:
        assign_range(topics, topic_count, members, order, member_count, owner_out);
        break;
    case KS_ASSIGNOR_ROUNDROBIN:
        assign_roundrobin(topics, topic_count, members, order, member_count, owner_out);
        break;
    case KS_ASSIGNOR_STICKY: {
        int32_t *claim = g_new0(int32_t, (gsize)slot_count + 1);
        sticky_claims(topics, topic_count, members, order, member_count, claim);
        if (same_subscriptions(members, member_count, topic_count)) {
            sticky_constrained(topics, topic_count, members, order, member_count, claim, owner_out);
        } else {
            sticky_general(topics, topic_count, members, order, member_count, claim, owner_out);
        }
        g_free(claim);
        break;
    }
    }
    /* A1 */
    for (int32_t t = 0; t < topic_count; t++) {
        bool any = false;
        for (int32_t m = 0; m < member_count; m++) {
            any = any || member_subscribes(&members[m], t);
        }
        for (int32_t p = 0; p < topics[t].partition_count; p++) {
            int32_t owner = owner_out[ks_assignor_slot(topics, t, p)];
            if (any) {
                ks_assert(owner >= 0 && owner < member_count);
                ks_assert(member_subscribes(&members[owner], t));
            } else {
                ks_assert(owner == -1);
            }
        }
    }
    g_free(order);
}
