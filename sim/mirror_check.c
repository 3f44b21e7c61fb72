/*
** sim/mirror_check.c: the mirror metrics of sim/mirror_check.h.
**
** Design: every look-up is a binary search in an array of identities sorted
** by (producer, seq), so the result depends on the inputs only (no hash
** order). O((n + m) log m) for n outcomes and m read records.
*/
#include "mirror_check.h"

#include "../core/base.h"

#include <stdlib.h>
#include <string.h>

struct identity {
    int32_t producer_index;
    int64_t seq;
};

static int identity_compare(const void *a, const void *b)
{
    const struct identity *x = a;
    const struct identity *y = b;
    if (x->producer_index != y->producer_index) {
        return x->producer_index < y->producer_index ? -1 : 1;
    }
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The identities of records (those without one left out), sorted; owned by
 * the caller (g_free), *count_out entries. */
static struct identity *sorted_identities(const struct ks_read_record *records, size_t count,
                                          size_t *count_out)
{
    struct identity *ids = g_new(struct identity, count + 1);
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        if (records[i].producer_index >= 0) {
            ids[n++] = (struct identity){ records[i].producer_index, records[i].seq };
        }
    }
    qsort(ids, n, sizeof *ids, identity_compare);
    *count_out = n;
    return ids;
}

static bool contains(const struct identity *ids, size_t count, int32_t producer_index, int64_t seq)
{
    struct identity key = { producer_index, seq };
    return bsearch(&key, ids, count, sizeof *ids, identity_compare) != NULL;
}

/* As the checker counts acked records (sim/checker.c is_acked): acked, or
 * sent by an acks=0 producer, which is never told otherwise. */
static bool counts_as_acked(const struct ks_mirror_check_input *in,
                            const struct ks_record_outcome *o)
{
    bool acks_none = in->producer_acks_none != NULL && o->producer_index < in->producer_count &&
                     in->producer_acks_none[o->producer_index];
    return o->outcome == KS_OUTCOME_ACKED || acks_none;
}

void ks_mirror_check_run(const struct ks_mirror_check_input *in, struct ks_mirror_check_output *out)
{
    memset(out, 0, sizeof *out);
    size_t target_count = 0;
    struct identity *target =
        sorted_identities(in->target_read, in->target_read_count, &target_count);
    for (size_t i = 1; i < target_count; i++) {
        if (identity_compare(&target[i - 1], &target[i]) == 0) {
            out->mirror_duplicates++;
        }
    }
    size_t source_count = 0;
    struct identity *source =
        in->source_lost ? g_new(struct identity, 1)
                        : sorted_identities(in->source_read, in->source_read_count, &source_count);
    for (size_t i = 0; i < in->outcome_count; i++) {
        const struct ks_record_outcome *o = &in->outcomes[i];
        if (o->topic_index != in->source_topic_index || o->producer_index < 0 ||
            !counts_as_acked(in, o)) {
            continue;
        }
        out->records_acked++;
        if (contains(target, target_count, o->producer_index, o->seq)) {
            out->mirrored++;
        } else if (in->source_lost) {
            out->mirror_lost++;
        } else if (contains(source, source_count, o->producer_index, o->seq)) {
            out->mirror_unmirrored++;
        }
    }
    ks_assert(out->mirrored + out->mirror_lost + out->mirror_unmirrored <= out->records_acked);
    ks_assert(!in->source_lost || out->mirror_unmirrored == 0);
    ks_assert(in->source_lost || out->mirror_lost == 0);
    g_free(target);
    g_free(source);
}

int64_t ks_mirror_lag(const int64_t *source_hw, const int64_t *mirrored_next,
                      int32_t partition_count)
{
    int64_t lag = 0;
    for (int32_t p = 0; p < partition_count; p++) {
        if (source_hw[p] > mirrored_next[p]) {
            lag += source_hw[p] - mirrored_next[p];
        }
    }
    return lag;
}

int64_t ks_mirror_failover_duplicates(const struct ks_consumed_record *consumed,
                                      size_t consumed_count, ks_time_ns failover_ns)
{
    struct identity *before = g_new(struct identity, consumed_count + 1);
    size_t before_count = 0;
    for (size_t i = 0; i < consumed_count; i++) {
        const struct ks_consumed_record *c = &consumed[i];
        if (c->at_ns < failover_ns && c->producer_index >= 0) {
            before[before_count++] = (struct identity){ c->producer_index, c->seq };
        }
    }
    qsort(before, before_count, sizeof *before, identity_compare);
    int64_t duplicates = 0;
    for (size_t i = 0; i < consumed_count; i++) {
        const struct ks_consumed_record *c = &consumed[i];
        if (c->at_ns >= failover_ns && c->producer_index >= 0 &&
            contains(before, before_count, c->producer_index, c->seq)) {
            duplicates++;
        }
    }
    g_free(before);
    return duplicates;
}
