/*
** sim/cause.c: cause attribution (what it uses and the rules: sim/cause.h).
**
** The index keeps the candidate events in event order, which is time order
** (the run appends events as they happen). Look-ups scan backwards and
** forwards from a binary search on time; the candidate lists are short
** (faults, elections, truncations), so this stays cheap for runs that lose
** many records.
*/
#include "cause.h"

#include "../core/base.h"

#include <string.h>

enum candidate_kind {
    CANDIDATE_POWER_LOSS,
    CANDIDATE_UNCLEAN_ELECTION,
    CANDIDATE_TRUNCATION,
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
};

struct ks_cause_index {
    const struct ks_scenario *scenario; /* not owned */
    GArray *candidates;                 /* struct candidate, in time order */
};

struct ks_cause_index *ks_cause_index_new(const struct ks_scenario *scenario)
{
    struct ks_cause_index *index = g_new0(struct ks_cause_index, 1);
    index->scenario = scenario;
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

int32_t ks_cause_fault_index(const struct ks_scenario *scenario, const char *detail)
{
    /* sim/faults.c writes "fault NAME: ..." (and "fault NAME ends: ...",
     * "fault NAME restart.after: ..." for what follows a fault). Until the
     * events carry the fault's name as a field, this is the one place that
     * reads it from the text. */
    if (detail == NULL || strncmp(detail, "fault ", 6) != 0) {
        return -1;
    }
    const char *name = detail + 6;
    size_t length = strcspn(name, ":");
    if (name[length] != ':') {
        return -1;
    }
    for (size_t i = 0; i < scenario->fault_count; i++) {
        if (strlen(scenario->faults[i].name) == length &&
            strncmp(scenario->faults[i].name, name, length) == 0) {
            return (int32_t)i;
        }
    }
    return -1;
}

void ks_cause_index_add(struct ks_cause_index *index, int32_t event, const char *kind,
                        ks_time_ns at_ns, int32_t broker, int32_t topic_index, int32_t partition,
                        const char *detail)
{
    struct candidate c = { .event = event,
                           .at_ns = at_ns,
                           .broker = broker,
                           .topic_index = topic_index,
                           .partition = partition,
                           .consumer_index = -1 };
    if (strcmp(kind, "truncation") == 0) {
        c.kind = CANDIDATE_TRUNCATION;
    } else if (strcmp(kind, "unclean_election") == 0) {
        c.kind = CANDIDATE_UNCLEAN_ELECTION;
    } else if (strcmp(kind, "retention") == 0) {
        c.kind = CANDIDATE_RETENTION;
    } else if (strcmp(kind, "fault") == 0) {
        int32_t f = ks_cause_fault_index(index->scenario, detail);
        if (f < 0) {
            return;
        }
        const struct ks_fault *fault = &index->scenario->faults[f];
        if (fault->action != KS_FAULT_CRASH) {
            return;
        }
        if (fault->target.kind == KS_TARGET_CONSUMER) {
            c.kind = CANDIDATE_CONSUMER_CRASH;
            c.consumer_index = fault->target.client_index;
        } else if (fault->mode == KS_CRASH_POWER && broker >= 0) {
            c.kind = CANDIDATE_POWER_LOSS;
        } else {
            return; /* a process crash keeps the page cache: it removes nothing */
        }
    } else {
        return;
    }
    if (index->candidates->len > 0) {
        ks_assert(
            g_array_index(index->candidates, struct candidate, index->candidates->len - 1).at_ns <=
            at_ns);
    }
    g_array_append_val(index->candidates, c);
}

/* Could candidate c have removed a record of (topic, partition) held by
 * broker (-1: unknown)? */
static bool removes(const struct candidate *c, int32_t topic_index, int32_t partition,
                    int32_t broker)
{
    bool same_partition = c->topic_index == topic_index && c->partition == partition;
    switch (c->kind) {
    case CANDIDATE_POWER_LOSS: return broker >= 0 && c->broker == broker;
    case CANDIDATE_UNCLEAN_ELECTION:
    case CANDIDATE_RETENTION: return same_partition;
    case CANDIDATE_TRUNCATION: return same_partition && (broker < 0 || c->broker == broker);
    case CANDIDATE_CONSUMER_CRASH: break;
    }
    return false;
}

static const char *candidate_name(enum candidate_kind kind)
{
    switch (kind) {
    case CANDIDATE_POWER_LOSS: return "power_loss";
    case CANDIDATE_UNCLEAN_ELECTION: return "unclean_election";
    case CANDIDATE_TRUNCATION: return "truncation";
    case CANDIDATE_RETENTION: return "retention";
    case CANDIDATE_CONSUMER_CRASH: break;
    }
    return "consumer_crash";
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

struct ks_cause ks_cause_of_lost(void *context, const struct ks_record_outcome *o)
{
    const struct ks_cause_index *index = context;
    const GArray *all = index->candidates;
    struct ks_cause cause = { NULL, -1, 0 };
    guint after = first_after(all, o->acked_ns);
    for (guint i = after; i < all->len; i++) {
        const struct candidate *c = &g_array_index(all, struct candidate, i);
        if (removes(c, o->topic_index, o->partition, o->acked_broker)) {
            cause = (struct ks_cause){ candidate_name(c->kind), c->event, c->at_ns };
            return cause;
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
            cause = (struct ks_cause){ candidate_name(c->kind), c->event, c->at_ns };
            break;
        }
    }
    return cause;
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
