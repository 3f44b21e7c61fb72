/*
** sim/cause.c: cause attribution (what it uses and the rules: sim/cause.h).
**
** The index keeps the candidate events in event order, which is time order
** (the run appends events as they happen). Look-ups start from a binary
** search on time; the candidate lists are short (faults, elections,
** truncations, recoveries), so this stays cheap for runs that lose many
** records.
*/
#include "cause.h"

#include "../core/base.h"

#include <string.h>

enum candidate_kind {
    CANDIDATE_POWER_LOSS,
    CANDIDATE_ELECTION,
    CANDIDATE_UNCLEAN_ELECTION,
    CANDIDATE_TRUNCATION,
    CANDIDATE_RECOVERY,
    CANDIDATE_RETENTION,
    CANDIDATE_CONSUMER_CRASH
};

struct candidate {
    enum candidate_kind kind;
    int32_t event;
    ks_time_ns at_ns;
    int32_t broker;
    int32_t topic_index;
    int32_t partition;
    int32_t consumer_index; /* CONSUMER_CRASH */
    int32_t leader_new;     /* elections */
    int32_t leader_epoch_new;
    int64_t offset_from; /* TRUNCATION, RECOVERY, RETENTION: [from, to), -1 unknown */
    int64_t offset_to;
    int64_t leo_new; /* RECOVERY */
};

struct ks_cause_index {
    const struct ks_scenario *scenario; /* not owned */
    const struct ks_steps *steps;       /* not owned; may be NULL */
    GArray *candidates;                 /* struct candidate, in time order */
};

struct ks_cause_index *ks_cause_index_new(const struct ks_scenario *scenario,
                                          const struct ks_steps *steps)
{
    struct ks_cause_index *index = g_new0(struct ks_cause_index, 1);
    index->scenario = scenario;
    index->steps = steps;
    index->candidates = g_array_new(FALSE, FALSE, sizeof(struct candidate));
    return index;
}

void ks_cause_index_free(struct ks_cause_index *index)
{
    if (index == NULL) {
        return;
    }
    g_array_free(index->candidates, TRUE);
    g_free(index);
}

/* The candidate kind of a fault event: the fault is read from the event's
 * fault field (never from its text). False if it removes nothing. */
static bool fault_candidate(const struct ks_cause_index *index, const struct ks_cause_event *e,
                            struct candidate *c)
{
    if (e->fault_index < 0 || (size_t)e->fault_index >= index->scenario->fault_count) {
        return false;
    }
    const struct ks_fault *fault = &index->scenario->faults[e->fault_index];
    if (fault->action != KS_FAULT_CRASH) {
        return false;
    }
    if (fault->target.kind == KS_TARGET_CONSUMER) {
        c->kind = CANDIDATE_CONSUMER_CRASH;
        c->consumer_index = fault->target.client_index;
        return true;
    }
    if (fault->mode == KS_CRASH_POWER && e->broker >= 0) {
        c->kind = CANDIDATE_POWER_LOSS;
        return true;
    }
    return false; /* a process crash keeps the page cache: it removes nothing */
}

void ks_cause_index_add(struct ks_cause_index *index, const struct ks_cause_event *e)
{
    struct candidate c = { .event = e->event,
                           .at_ns = e->at_ns,
                           .broker = e->broker,
                           .topic_index = e->topic_index,
                           .partition = e->partition,
                           .consumer_index = -1,
                           .leader_new = e->leader_new,
                           .leader_epoch_new = e->leader_epoch_new,
                           .offset_from = e->offset_from,
                           .offset_to = e->offset_to,
                           .leo_new = e->leo_new };
    const char *kind = e->kind;
    if (strcmp(kind, "truncation") == 0) {
        c.kind = CANDIDATE_TRUNCATION;
    } else if (strcmp(kind, "leader_elected") == 0) {
        c.kind = CANDIDATE_ELECTION;
    } else if (strcmp(kind, "unclean_election") == 0) {
        c.kind = CANDIDATE_UNCLEAN_ELECTION;
    } else if (strcmp(kind, "recovery") == 0) {
        c.kind = CANDIDATE_RECOVERY;
    } else if (strcmp(kind, "retention") == 0) {
        c.kind = CANDIDATE_RETENTION;
    } else if (strcmp(kind, "fault") != 0 || !fault_candidate(index, e, &c)) {
        return;
    }
    if (index->candidates->len > 0) {
        const struct candidate *last =
            &g_array_index(index->candidates, struct candidate, index->candidates->len - 1);
        ks_assert(last->at_ns <= e->at_ns);
        ks_assert(last->event < e->event);
    }
    g_array_append_val(index->candidates, c);
}

static const char *candidate_name(enum candidate_kind kind)
{
    switch (kind) {
    case CANDIDATE_POWER_LOSS: return "power_loss";
    case CANDIDATE_ELECTION: return "leader_elected";
    case CANDIDATE_UNCLEAN_ELECTION: return "unclean_election";
    case CANDIDATE_TRUNCATION: return "truncation";
    case CANDIDATE_RECOVERY: return "recovery";
    case CANDIDATE_RETENTION: return "retention";
    case CANDIDATE_CONSUMER_CRASH: break;
    }
    return "consumer_crash";
}

static struct ks_cause cause_of(const struct candidate *c)
{
    return (struct ks_cause){ candidate_name(c->kind), c->event, c->at_ns };
}

/* First candidate with at_ns > t. */
static guint first_after(const GArray *candidates, ks_time_ns t)
{
    guint lo = 0;
    guint hi = candidates->len;
    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2;
        if (g_array_index(candidates, struct candidate, mid).at_ns <= t) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* ---- by offset ---------------------------------------------------------------------------- */

static bool same_partition(const struct candidate *c, const struct ks_record_outcome *o)
{
    return c->topic_index == o->topic_index && c->partition == o->partition;
}

static bool covers(const struct candidate *c, int64_t offset)
{
    return c->offset_from >= 0 && c->offset_from <= offset && offset < c->offset_to;
}

/* Could the offset that candidate c removed from its broker have been
 * record o? Yes if the broker's last picture before c holds o; if that
 * picture's log ended before the offset, yes unless the log already ran in
 * a later epoch than o's (whatever it fetched since was newer); no picture
 * at all: yes (the range is all there is to go on). */
static bool removed_the_record(const struct ks_cause_index *index, const struct candidate *c,
                               const struct ks_record_outcome *o)
{
    const struct ks_log_view *before =
        ks_steps_last_online(index->steps, c->event, o->topic_index, o->partition, c->broker);
    if (before == NULL) {
        return true;
    }
    if (o->offset < before->leo) {
        return ks_log_view_holds(index->steps, before, o->offset, o->acked_leader_epoch);
    }
    const struct ks_epoch_entry *entries = ks_steps_epochs(index->steps, before);
    return o->acked_leader_epoch < 0 || before->epoch_count == 0 ||
           entries[before->epoch_count - 1].epoch <= o->acked_leader_epoch;
}

/* Did candidate c remove record o from broker (-1: any broker)? */
static bool removed_from(const struct ks_cause_index *index, const struct candidate *c,
                         const struct ks_record_outcome *o, int32_t broker)
{
    if (!same_partition(c, o)) {
        return false;
    }
    switch (c->kind) {
    case CANDIDATE_TRUNCATION:
        return (broker < 0 || c->broker == broker) && covers(c, o->offset) &&
               removed_the_record(index, c, o);
    case CANDIDATE_RETENTION: return covers(c, o->offset) && removed_the_record(index, c, o);
    case CANDIDATE_RECOVERY: {
        if (broker >= 0 && c->broker != broker) {
            return false;
        }
        if (covers(c, o->offset)) {
            return removed_the_record(index, c, o);
        }
        /* Power loss restores the files to what was fsynced: recovery then
         * finds nothing to cut, and only the log end it recovered to tells
         * that the offset went, if the broker held it before. */
        if (c->offset_from >= 0 || c->leo_new < 0 || c->leo_new > o->offset) {
            return false;
        }
        const struct ks_log_view *before =
            ks_steps_last_online(index->steps, c->event, o->topic_index, o->partition, c->broker);
        return before != NULL &&
               ks_log_view_holds(index->steps, before, o->offset, o->acked_leader_epoch);
    }
    case CANDIDATE_POWER_LOSS:
    case CANDIDATE_ELECTION:
    case CANDIDATE_UNCLEAN_ELECTION:
    case CANDIDATE_CONSUMER_CRASH: break;
    }
    return false;
}

/* The cause a removal names: a recovery is named by the power loss of its
 * broker that preceded it, when there was one. */
static struct ks_cause removal_cause(const struct ks_cause_index *index, guint removal)
{
    const GArray *all = index->candidates;
    const struct candidate *c = &g_array_index(all, struct candidate, removal);
    if (c->kind == CANDIDATE_RECOVERY) {
        for (guint i = removal; i-- > 0;) {
            const struct candidate *p = &g_array_index(all, struct candidate, i);
            if (p->kind == CANDIDATE_POWER_LOSS && p->broker == c->broker) {
                return cause_of(p);
            }
        }
    }
    return cause_of(c);
}

/* Did the leader chosen by election c hold record o then? Unknown (no
 * picture of that step): treated as held, so the election is not blamed. */
static bool leader_held(const struct ks_cause_index *index, const struct candidate *c,
                        const struct ks_record_outcome *o)
{
    const struct ks_step *step =
        ks_steps_find(index->steps, c->event, o->topic_index, o->partition);
    if (step == NULL) {
        return true;
    }
    const struct ks_log_view *view = ks_steps_view_of(index->steps, step, c->leader_new);
    return view != NULL && ks_log_view_holds(index->steps, view, o->offset, o->acked_leader_epoch);
}

static struct ks_cause cause_by_offset(const struct ks_cause_index *index,
                                       const struct ks_record_outcome *o)
{
    const GArray *all = index->candidates;
    guint after_send = first_after(all, o->sent_ns);
    /* 1: the losing election. */
    guint losing = all->len;
    for (guint i = after_send; i < all->len; i++) {
        const struct candidate *c = &g_array_index(all, struct candidate, i);
        /* An election before o's epoch began cannot have lost it: o was
         * written after it (records carry the epoch of their leader). */
        bool after_written =
            o->acked_leader_epoch < 0 || c->leader_epoch_new > o->acked_leader_epoch;
        if ((c->kind == CANDIDATE_ELECTION || c->kind == CANDIDATE_UNCLEAN_ELECTION) &&
            same_partition(c, o) && after_written && !leader_held(index, c, o)) {
            losing = i;
            break;
        }
    }
    if (losing < all->len) {
        const struct candidate *l = &g_array_index(all, struct candidate, losing);
        /* 2: what removed it from the new leader before the election. */
        for (guint i = losing; i-- > after_send;) {
            if (removed_from(index, &g_array_index(all, struct candidate, i), o, l->leader_new)) {
                return removal_cause(index, i);
            }
        }
        /* 3: an unclean election of a replica that never had it. */
        if (l->kind == CANDIDATE_UNCLEAN_ELECTION) {
            return cause_of(l);
        }
    }
    /* 4: only the acknowledging broker had it. */
    for (guint i = after_send; i < all->len; i++) {
        if (removed_from(index, &g_array_index(all, struct candidate, i), o, o->acked_broker)) {
            return removal_cause(index, i);
        }
    }
    return (struct ks_cause){ NULL, -1, 0 };
}

/* ---- by time (records without an offset) ------------------------------------------------- */

/* Could candidate c have removed a record of (topic, partition) held by
 * broker (-1: unknown)? */
static bool removes(const struct candidate *c, int32_t topic_index, int32_t partition,
                    int32_t broker)
{
    bool same = c->topic_index == topic_index && c->partition == partition;
    switch (c->kind) {
    case CANDIDATE_POWER_LOSS: return broker >= 0 && c->broker == broker;
    case CANDIDATE_UNCLEAN_ELECTION:
    case CANDIDATE_RETENTION: return same;
    case CANDIDATE_TRUNCATION: return same && (broker < 0 || c->broker == broker);
    case CANDIDATE_ELECTION:
    case CANDIDATE_RECOVERY:
    case CANDIDATE_CONSUMER_CRASH: break;
    }
    return false;
}

static struct ks_cause cause_by_time(const struct ks_cause_index *index,
                                     const struct ks_record_outcome *o)
{
    const GArray *all = index->candidates;
    guint after = first_after(all, o->acked_ns);
    for (guint i = after; i < all->len; i++) {
        const struct candidate *c = &g_array_index(all, struct candidate, i);
        if (removes(c, o->topic_index, o->partition, o->acked_broker)) {
            return cause_of(c);
        }
    }
    /* Nothing after the ack: the broker may have failed while its answer
     * was on its way. */
    for (guint i = after; i-- > 0;) {
        const struct candidate *c = &g_array_index(all, struct candidate, i);
        if (c->at_ns <= o->sent_ns) {
            break;
        }
        if (removes(c, o->topic_index, o->partition, o->acked_broker)) {
            return cause_of(c);
        }
    }
    return (struct ks_cause){ NULL, -1, 0 };
}

struct ks_cause ks_cause_of_lost(void *context, const struct ks_record_outcome *o)
{
    const struct ks_cause_index *index = context;
    if (o->offset < 0 || index->steps == NULL) {
        return cause_by_time(index, o);
    }
    return cause_by_offset(index, o);
}

int32_t ks_cause_group_crash_before(const struct ks_cause_index *index,
                                    const int32_t *consumer_group, int32_t group, ks_time_ns at_ns)
{
    const GArray *all = index->candidates;
    for (guint i = first_after(all, at_ns); i-- > 0;) {
        const struct candidate *c = &g_array_index(all, struct candidate, i);
        if (c->kind == CANDIDATE_CONSUMER_CRASH && c->consumer_index >= 0 &&
            consumer_group[c->consumer_index] == group) {
            return c->event;
        }
    }
    return -1;
}
