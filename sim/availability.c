/*
** sim/availability.c: unavailable_ms and produce_unavailable_ms (definitions
** and the Kafka classes they follow in sim/availability.h).
**
** Invariants (asserted):
**   A1  a partition has at most one open interval, and it has a reason.
**   A2  intervals never end before they start, and nothing opens after close.
**
** The tracker keeps, per user partition (from the moment its leader first
** serves: the topic's creation is not an outage), the reason it is unavailable now
** (NONE when available) and since when. A change of reason closes the open
** interval and opens the next one, so the intervals say why, not only how
** long. Everything it reads is a query of the controller's or a broker's
** state; it never changes the world.
*/
#include "availability.h"

#include "../core/base.h"
#include "world.h"

#include <stdlib.h>
#include <string.h>

const char *ks_unavailable_reason_name(enum ks_unavailable_reason reason)
{
    switch (reason) {
    case KS_UNAVAILABLE_NONE: return "none";
    case KS_UNAVAILABLE_NO_LEADER: return "no_leader";
    case KS_UNAVAILABLE_LEADER_DOWN: return "leader_down";
    case KS_UNAVAILABLE_LEADER_PAUSED: return "leader_paused";
    case KS_UNAVAILABLE_LEADER_NOT_SERVING: return "leader_not_serving";
    case KS_UNAVAILABLE_ISR_BELOW_MIN: return "isr_below_min";
    case KS_UNAVAILABLE_RECORDS_WAITING: return "records_waiting";
    case KS_UNAVAILABLE_REASON_COUNT: break;
    }
    return "?";
}

struct slot {
    int32_t topic_index;
    int32_t partition;
    enum ks_unavailable_reason reason; /* now; NONE: available */
    ks_time_ns since_ns;
    bool served; /* its leader has served once: measuring started */
};

struct ks_availability {
    const struct ks_scenario *scenario; /* not owned */
    const struct ks_cluster *cluster;   /* not owned */
    const ks_world *world;              /* not owned */
    struct slot *slots;                 /* one per user partition, in (topic, partition) order */
    int32_t slot_count;
    bool *acks_all;            /* [topic_index] */
    int32_t unavailable_count; /* slots with a reason now */
    int32_t unserved_count;    /* slots whose leader has not served yet */
    bool dirty;
    bool closed;
    uint64_t total_ns;
    GArray *intervals; /* struct ks_unavailable_interval */
};

struct ks_availability *ks_availability_new(const struct ks_scenario *scenario,
                                            const struct ks_cluster *cluster, const ks_world *world)
{
    struct ks_availability *a = g_new0(struct ks_availability, 1);
    a->scenario = scenario;
    a->cluster = cluster;
    a->world = world;
    for (size_t t = 0; t < scenario->topic_count; t++) {
        a->slot_count += scenario->topics[t].partition_count;
    }
    a->slots = g_new0(struct slot, (size_t)a->slot_count + 1);
    int32_t slot = 0;
    for (size_t t = 0; t < scenario->topic_count; t++) {
        for (int32_t p = 0; p < scenario->topics[t].partition_count; p++) {
            a->slots[slot].topic_index = (int32_t)t;
            a->slots[slot].partition = p;
            a->slots[slot].reason = KS_UNAVAILABLE_NONE;
            slot++;
        }
    }
    /* "acks=all topics": those that some acks=all producer writes to; only
     * their writes can be refused for a small ISR. */
    a->acks_all = g_new0(bool, scenario->topic_count + 1);
    for (size_t i = 0; i < scenario->producer_count; i++) {
        const struct ks_producer_config *producer = &scenario->producers[i];
        if (producer->acks == KS_ACKS_ALL && producer->topic_index >= 0 &&
            (size_t)producer->topic_index < scenario->topic_count) {
            a->acks_all[producer->topic_index] = true;
        }
    }
    a->unserved_count = a->slot_count;
    a->intervals = g_array_new(FALSE, FALSE, sizeof(struct ks_unavailable_interval));
    a->dirty = true; /* the first update evaluates (topics are created at time 0) */
    return a;
}

void ks_availability_free(struct ks_availability *a)
{
    if (a == NULL) {
        return;
    }
    g_array_free(a->intervals, TRUE);
    g_free(a->slots);
    g_free(a->acks_all);
    g_free(a);
}

enum ks_unavailable_reason ks_availability_reason(const struct ks_cluster *cluster,
                                                  const ks_world *world,
                                                  const struct ks_topic_config *topic,
                                                  int32_t topic_index, int32_t partition,
                                                  bool acks_all)
{
    int32_t leader = ks_cluster_leader(cluster, topic_index, partition);
    if (leader < 0) {
        return KS_UNAVAILABLE_NO_LEADER;
    }
    if (!ks_cluster_broker_is_up(cluster, leader)) {
        return KS_UNAVAILABLE_LEADER_DOWN;
    }
    if (ks_world_node_is_paused(world, (ks_node_id)leader)) {
        return KS_UNAVAILABLE_LEADER_PAUSED; /* a paused leader answers nobody */
    }
    /* The broker serves produce requests only as leader of the controller's
     * current epoch: a restarted broker starts without partition state and
     * gets it only once registered (and, in KRaft, after its old session
     * expired), and a newly elected leader learns of it by a message. */
    struct ks_replica_state state;
    if (!ks_cluster_replica_state(cluster, leader, topic_index, partition, &state) ||
        state.role != KS_ROLE_LEADER ||
        state.leader_epoch != ks_cluster_leader_epoch(cluster, topic_index, partition)) {
        return KS_UNAVAILABLE_LEADER_NOT_SERVING;
    }
    if (acks_all) {
        int32_t isr[KS_REPLICATION_FACTOR_MAX];
        int32_t isr_count =
            ks_cluster_isr(cluster, topic_index, partition, isr, KS_REPLICATION_FACTOR_MAX);
        if (isr_count < ks_topic_min_isr(topic)) {
            return KS_UNAVAILABLE_ISR_BELOW_MIN;
        }
    }
    return KS_UNAVAILABLE_NONE;
}

static void close_slot(struct ks_availability *a, struct slot *slot, ks_time_ns end_ns)
{
    ks_assert(slot->reason != KS_UNAVAILABLE_NONE); /* A1 */
    if (end_ns > slot->since_ns) {
        struct ks_unavailable_interval interval = {
            .topic_index = slot->topic_index,
            .partition = slot->partition,
            .produce_view = false,
            .reason = slot->reason,
            .start_ns = slot->since_ns,
            .end_ns = end_ns,
        };
        g_array_append_val(a->intervals, interval);
        a->total_ns += end_ns - slot->since_ns;
    }
    slot->reason = KS_UNAVAILABLE_NONE;
    a->unavailable_count--;
}

static void evaluate(struct ks_availability *a, ks_time_ns now_ns)
{
    a->dirty = false;
    for (int32_t i = 0; i < a->slot_count; i++) {
        struct slot *slot = &a->slots[i];
        enum ks_unavailable_reason reason = ks_availability_reason(
            a->cluster, a->world, &a->scenario->topics[slot->topic_index], slot->topic_index,
            slot->partition, a->acks_all[slot->topic_index]);
        if (!slot->served) {
            /* A new topic's leaders learn of their election by a message: the
             * partition exists for clients from the moment one serves. */
            slot->served = reason == KS_UNAVAILABLE_NONE;
            a->unserved_count -= slot->served ? 1 : 0;
            continue;
        }
        if (reason == slot->reason) {
            continue;
        }
        if (slot->reason != KS_UNAVAILABLE_NONE) {
            close_slot(a, slot, now_ns);
        }
        if (reason != KS_UNAVAILABLE_NONE) {
            slot->reason = reason;
            slot->since_ns = now_ns;
            a->unavailable_count++;
        }
    }
}

void ks_availability_mark_dirty(struct ks_availability *a)
{
    a->dirty = true;
}

void ks_availability_update(struct ks_availability *a, ks_time_ns now_ns)
{
    if (a->closed || (!a->dirty && a->unavailable_count == 0 && a->unserved_count == 0)) {
        return;
    }
    evaluate(a, now_ns);
}

void ks_availability_close(struct ks_availability *a, ks_time_ns end_ns)
{
    ks_assert(!a->closed); /* A2 */
    evaluate(a, end_ns);
    for (int32_t i = 0; i < a->slot_count; i++) {
        if (a->slots[i].reason != KS_UNAVAILABLE_NONE) {
            close_slot(a, &a->slots[i], end_ns);
        }
    }
    ks_assert(a->unavailable_count == 0);
    a->closed = true;
}

uint64_t ks_availability_total_ns(const struct ks_availability *a)
{
    return a->total_ns;
}

const GArray *ks_availability_intervals(const struct ks_availability *a)
{
    return a->intervals;
}

/* ---- the clients' view -------------------------------------------------------- */

static int compare_interval(const void *x, const void *y)
{
    const struct ks_unavailable_interval *a = x;
    const struct ks_unavailable_interval *b = y;
    if (a->topic_index != b->topic_index) {
        return a->topic_index < b->topic_index ? -1 : 1;
    }
    if (a->partition != b->partition) {
        return a->partition < b->partition ? -1 : 1;
    }
    if (a->start_ns != b->start_ns) {
        return a->start_ns < b->start_ns ? -1 : 1;
    }
    return a->end_ns < b->end_ns ? -1 : a->end_ns > b->end_ns ? 1 : 0;
}

uint64_t ks_availability_produce(const struct ks_record_outcome *outcomes, size_t outcome_count,
                                 int32_t topic_count, ks_time_ns threshold_ns, ks_time_ns end_ns,
                                 GArray *intervals_out)
{
    /* One interval per record that waited too long: from the moment it had
     * waited threshold_ns until its outcome (cut at end_ns). */
    GArray *waits = g_array_new(FALSE, FALSE, sizeof(struct ks_unavailable_interval));
    for (size_t i = 0; i < outcome_count; i++) {
        const struct ks_record_outcome *o = &outcomes[i];
        if (o->partition < 0 || o->topic_index < 0 || o->topic_index >= topic_count) {
            continue;
        }
        ks_time_ns start = o->sent_ns + threshold_ns;
        ks_time_ns end = MIN(o->acked_ns, end_ns);
        if (o->acked_ns <= o->sent_ns + threshold_ns || start >= end) {
            continue;
        }
        struct ks_unavailable_interval wait = {
            .topic_index = o->topic_index,
            .partition = o->partition,
            .produce_view = true,
            .reason = KS_UNAVAILABLE_RECORDS_WAITING,
            .start_ns = start,
            .end_ns = end,
        };
        g_array_append_val(waits, wait);
    }
    if (waits->len > 1) { /* an empty GArray's data may be NULL */
        qsort(waits->data, waits->len, sizeof(struct ks_unavailable_interval), compare_interval);
    }
    /* Merge the overlapping ones of each partition: a partition is
     * unavailable once, however many records wait at the same time. */
    uint64_t total_ns = 0;
    guint i = 0;
    while (i < waits->len) {
        struct ks_unavailable_interval merged =
            g_array_index(waits, struct ks_unavailable_interval, i);
        guint j = i + 1;
        while (j < waits->len) {
            const struct ks_unavailable_interval *next =
                &g_array_index(waits, struct ks_unavailable_interval, j);
            if (next->topic_index != merged.topic_index || next->partition != merged.partition ||
                next->start_ns > merged.end_ns) {
                break;
            }
            merged.end_ns = MAX(merged.end_ns, next->end_ns);
            j++;
        }
        ks_assert(merged.end_ns > merged.start_ns); /* A2 */
        total_ns += merged.end_ns - merged.start_ns;
        if (intervals_out != NULL) {
            g_array_append_val(intervals_out, merged);
        }
        i = j;
    }
    g_array_free(waits, TRUE);
    return total_ns;
}
