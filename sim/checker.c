/*
** sim/checker.c: record-level metrics (definitions in sim/checker.h).
**
** Method: identities (producer, seq) become 64-bit keys; every question
** ("is this acked record in the final read?", "how many copies?", "did the
** group process it?") is answered by sorting key arrays and binary search, so
** the anomaly rows come out in a deterministic order without hash tables.
*/
#include "checker.h"

#include "../core/base.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Identity key: producer_index + 1 in the top 24 bits, seq in the low 40. */
static uint64_t identity_key(int32_t producer_index, int64_t seq)
{
    ks_assert(producer_index >= 0);
    ks_assert(seq >= 0);
    return ((uint64_t)(producer_index + 1) << 40) | ((uint64_t)seq & ((UINT64_C(1) << 40) - 1));
}

static uint64_t mix64(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

uint64_t ks_checker_fingerprint(int32_t producer_index, int64_t seq, uint32_t batch_crc,
                                int64_t offset)
{
    if (producer_index >= 0) {
        return mix64(identity_key(producer_index, seq));
    }
    return mix64(((uint64_t)batch_crc << 32) ^ (uint64_t)offset ^ UINT64_C(0x5a5a000000000000));
}

static int compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a;
    int64_t y = *(const int64_t *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

int64_t ks_checker_percentile(int64_t *values, size_t count, int pct)
{
    ks_assert(pct > 0 && pct <= 100);
    if (count == 0) {
        return 0;
    }
    qsort(values, count, sizeof values[0], compare_i64);
    /* Nearest rank: the smallest value with at least pct% of values <= it. */
    size_t rank = ((size_t)pct * count + 99) / 100;
    if (rank == 0) {
        rank = 1;
    }
    return values[rank - 1];
}

/* ---- key arrays ------------------------------------------------------------- */

struct keyed {
    uint64_t key;
    int64_t index; /* position in the source array (tie-break: first copy first) */
};

static int compare_keyed(const void *a, const void *b)
{
    const struct keyed *x = a;
    const struct keyed *y = b;
    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    return x->index < y->index ? -1 : x->index > y->index ? 1 : 0;
}

/* Index of the first entry with key, or -1. */
static int64_t find_key(const struct keyed *items, size_t count, uint64_t key)
{
    size_t lo = 0;
    size_t hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (items[mid].key < key) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return (lo < count && items[lo].key == key) ? (int64_t)lo : -1;
}

static const char *producer_name(const struct ks_checker_input *in, int32_t producer_index)
{
    if (in->producer_names != NULL && producer_index >= 0 && producer_index < in->producer_count) {
        return in->producer_names[producer_index];
    }
    return "?";
}

static const char *const anomaly_kinds[KS_CHECKER_KIND_COUNT] = {
    "lost", "duplicate", "reordered", "divergent", "consumed_lost", "consumed_duplicate",
};

static void add_anomaly(struct ks_checker_output *out, const char *kind, int32_t topic_index,
                        int32_t partition, const char *format, ...) G_GNUC_PRINTF(5, 6);

static void add_anomaly(struct ks_checker_output *out, const char *kind, int32_t topic_index,
                        int32_t partition, const char *format, ...)
{
    /* Rows are capped per kind: a run that loses 50,000 records must still
     * list its divergent partitions. */
    size_t kind_index = 0;
    while (kind_index < KS_CHECKER_KIND_COUNT && strcmp(anomaly_kinds[kind_index], kind) != 0) {
        kind_index++;
    }
    ks_assert(kind_index < KS_CHECKER_KIND_COUNT);
    if (out->kind_row_counts[kind_index] >= KS_CHECKER_ANOMALY_COUNT_MAX) {
        return;
    }
    out->kind_row_counts[kind_index]++;
    struct ks_anomaly anomaly = { .kind = kind, .topic_index = topic_index,
                                  .partition = partition };
    va_list args;
    va_start(args, format);
    g_vsnprintf(anomaly.detail, sizeof anomaly.detail, format, args);
    va_end(args);
    g_array_append_val(out->anomalies, anomaly);
}

/* ---- the metrics -------------------------------------------------------------- */

static void count_outcomes(const struct ks_checker_input *in, struct ks_checker_output *out)
{
    int64_t *latencies = g_new(int64_t, in->outcome_count + 1);
    size_t latency_count = 0;
    for (size_t i = 0; i < in->outcome_count; i++) {
        const struct ks_record_outcome *o = &in->outcomes[i];
        switch (o->outcome) {
        case KS_OUTCOME_ACKED:
            out->records_acked++;
            latencies[latency_count++] =
                o->acked_ns >= o->sent_ns ? (int64_t)(o->acked_ns - o->sent_ns) : 0;
            break;
        case KS_OUTCOME_FAILED:
            out->records_failed++;
            break;
        case KS_OUTCOME_UNKNOWN:
            out->records_unknown++;
            break;
        }
    }
    out->produce_p50_ms = (double)ks_checker_percentile(latencies, latency_count, 50) / 1e6;
    out->produce_p99_ms = (double)ks_checker_percentile(latencies, latency_count, 99) / 1e6;
    g_free(latencies);
}

/* Sorted identity keys of the final read; marks each identity's first copy. */
static struct keyed *read_keys(const struct ks_checker_input *in, size_t *count_out,
                               bool *is_first)
{
    struct keyed *keys = g_new(struct keyed, in->final_read_count + 1);
    size_t count = 0;
    for (size_t i = 0; i < in->final_read_count; i++) {
        const struct ks_read_record *r = &in->final_read[i];
        is_first[i] = false;
        if (r->producer_index >= 0) {
            keys[count].key = identity_key(r->producer_index, r->seq);
            keys[count].index = (int64_t)i;
            count++;
        }
    }
    qsort(keys, count, sizeof keys[0], compare_keyed);
    for (size_t i = 0; i < count; i++) {
        if (i == 0 || keys[i].key != keys[i - 1].key) {
            is_first[keys[i].index] = true;
        }
    }
    *count_out = count;
    return keys;
}

static const struct ks_partition_final *find_partition(const struct ks_checker_input *in,
                                                       int32_t topic_index, int32_t partition)
{
    for (size_t i = 0; i < in->partition_count; i++) {
        if (in->partitions[i].topic_index == topic_index &&
            in->partitions[i].partition == partition) {
            return &in->partitions[i];
        }
    }
    return NULL;
}

/* For compacted partitions: "topic/partition/key" -> the highest offset at
 * which the final read holds that key. Keys come from the outcomes, found by
 * identity. Used for look-ups only; nothing iterates it. Owned by the caller. */
static GHashTable *compacted_key_offsets(const struct ks_checker_input *in)
{
    GHashTable *latest = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    bool any = false;
    for (size_t i = 0; i < in->partition_count; i++) {
        any = any || in->partitions[i].compacted;
    }
    if (!any) {
        return latest;
    }
    size_t count = in->outcome_count;
    struct keyed *by_identity = g_new(struct keyed, count + 1);
    for (size_t i = 0; i < count; i++) {
        by_identity[i].key = identity_key(in->outcomes[i].producer_index, in->outcomes[i].seq);
        by_identity[i].index = (int64_t)i;
    }
    qsort(by_identity, count, sizeof by_identity[0], compare_keyed);
    for (size_t i = 0; i < in->final_read_count; i++) {
        const struct ks_read_record *r = &in->final_read[i];
        const struct ks_partition_final *part = find_partition(in, r->topic_index, r->partition);
        if (part == NULL || !part->compacted || r->producer_index < 0) {
            continue;
        }
        int64_t at = find_key(by_identity, count, identity_key(r->producer_index, r->seq));
        if (at < 0 || in->outcomes[by_identity[at].index].key == NULL) {
            continue;
        }
        char *name = g_strdup_printf("%d/%d/%s", r->topic_index, r->partition,
                                     in->outcomes[by_identity[at].index].key);
        int64_t *offset = g_hash_table_lookup(latest, name);
        if (offset == NULL) {
            offset = g_new(int64_t, 1);
            *offset = r->offset;
            g_hash_table_insert(latest, name, offset);
        } else {
            *offset = MAX(*offset, r->offset);
            g_free(name);
        }
    }
    g_free(by_identity);
    return latest;
}

/* True if the topic's own cleanup explains why an acked record is missing. */
static bool cleaned_up(const struct ks_checker_input *in, GHashTable *latest,
                       const struct ks_record_outcome *o)
{
    const struct ks_partition_final *part = find_partition(in, o->topic_index, o->partition);
    if (part == NULL || o->offset < 0) {
        return false;
    }
    if (o->offset < part->log_start_offset) {
        return true; /* deleted with its segment by retention */
    }
    if (!part->compacted || o->key == NULL) {
        return false;
    }
    char *name = g_strdup_printf("%d/%d/%s", o->topic_index, o->partition, o->key);
    const int64_t *newest = g_hash_table_lookup(latest, name);
    g_free(name);
    return newest != NULL && *newest > o->offset; /* superseded by a newer value */
}

static void check_lost(const struct ks_checker_input *in, const struct keyed *keys,
                       size_t key_count, struct ks_checker_output *out)
{
    GHashTable *latest = compacted_key_offsets(in);
    for (size_t i = 0; i < in->outcome_count; i++) {
        const struct ks_record_outcome *o = &in->outcomes[i];
        bool acks_none = in->producer_acks_none != NULL && o->producer_index >= 0 &&
                         o->producer_index < in->producer_count &&
                         in->producer_acks_none[o->producer_index];
        if (o->outcome != KS_OUTCOME_ACKED && !acks_none) {
            continue;
        }
        if (find_key(keys, key_count, identity_key(o->producer_index, o->seq)) >= 0) {
            continue;
        }
        if (cleaned_up(in, latest, o)) {
            out->records_cleaned_up++;
            continue;
        }
        out->acked_lost++;
        add_anomaly(out, "lost", o->topic_index, o->partition,
                    "%s:%" PRId64 " acked at offset %" PRId64 " (t=%.3fs) missing from the final read",
                    producer_name(in, o->producer_index), o->seq, o->offset,
                    (double)o->acked_ns / 1e9);
    }
    g_hash_table_destroy(latest);
}

static void check_duplicates(const struct ks_checker_input *in, const struct keyed *keys,
                             size_t key_count, struct ks_checker_output *out)
{
    for (size_t i = 1; i < key_count; i++) {
        if (keys[i].key != keys[i - 1].key) {
            continue;
        }
        const struct ks_read_record *first = &in->final_read[keys[i - 1].index];
        const struct ks_read_record *copy = &in->final_read[keys[i].index];
        out->duplicates++;
        add_anomaly(out, "duplicate", copy->topic_index, copy->partition,
                    "%s:%" PRId64 " at offset %" PRId64 " copies offset %" PRId64,
                    producer_name(in, copy->producer_index), copy->seq, copy->offset,
                    first->offset);
    }
}

/* Walks each partition backwards, keeping per producer the smallest seq seen
 * later in the log: a record with a larger seq appears before an earlier one. */
static void check_reordered(const struct ks_checker_input *in, const bool *is_first,
                            struct ks_checker_output *out)
{
    int32_t producer_count = in->producer_count > 0 ? in->producer_count : 0;
    int64_t *min_seq = g_new(int64_t, (size_t)producer_count + 1);
    int64_t *min_offset = g_new(int64_t, (size_t)producer_count + 1);
    size_t end = in->final_read_count;
    while (end > 0) {
        size_t start = end - 1;
        const struct ks_read_record *last = &in->final_read[start];
        while (start > 0 && in->final_read[start - 1].topic_index == last->topic_index &&
               in->final_read[start - 1].partition == last->partition) {
            start--;
        }
        for (int32_t p = 0; p < producer_count; p++) {
            min_seq[p] = INT64_MAX;
        }
        for (size_t i = end; i-- > start;) {
            const struct ks_read_record *r = &in->final_read[i];
            if (!is_first[i] || r->producer_index < 0 || r->producer_index >= producer_count) {
                continue;
            }
            int32_t p = r->producer_index;
            if (r->seq > min_seq[p]) {
                out->reordered++;
                add_anomaly(out, "reordered", r->topic_index, r->partition,
                            "%s:%" PRId64 " at offset %" PRId64 " before %s:%" PRId64
                            " at offset %" PRId64,
                            producer_name(in, p), r->seq, r->offset, producer_name(in, p),
                            min_seq[p], min_offset[p]);
            } else {
                min_seq[p] = r->seq;
                min_offset[p] = r->offset;
            }
        }
        end = start;
    }
    g_free(min_seq);
    g_free(min_offset);
}

/* Two replicas disagree when an offset both hold below the common HW has
 * different fingerprints. Offsets held by one only are not compared:
 * compaction and retention legitimately make holes differ. */
static bool replicas_differ(const struct ks_replica_read *a, const struct ks_replica_read *b,
                            int64_t common_hw, int64_t *offset_out)
{
    size_t i = 0;
    size_t j = 0;
    while (i < a->count && j < b->count) {
        int64_t oa = a->offsets[i];
        int64_t ob = b->offsets[j];
        if (oa >= common_hw || ob >= common_hw) {
            break;
        }
        if (oa < ob) {
            i++;
        } else if (ob < oa) {
            j++;
        } else {
            if (a->fingerprints[i] != b->fingerprints[j]) {
                *offset_out = oa;
                return true;
            }
            i++;
            j++;
        }
    }
    return false;
}

static void check_divergence(const struct ks_checker_input *in, struct ks_checker_output *out)
{
    size_t start = 0;
    while (start < in->replica_count) {
        size_t end = start + 1;
        const struct ks_replica_read *first = &in->replicas[start];
        while (end < in->replica_count && in->replicas[end].topic_index == first->topic_index &&
               in->replicas[end].partition == first->partition) {
            end++;
        }
        int64_t common_hw = INT64_MAX;
        for (size_t i = start; i < end; i++) {
            common_hw = MIN(common_hw, in->replicas[i].hw);
        }
        for (size_t i = start + 1; i < end; i++) {
            int64_t offset = -1;
            if (replicas_differ(first, &in->replicas[i], common_hw, &offset)) {
                out->divergent_partitions++;
                add_anomaly(out, "divergent", first->topic_index, first->partition,
                            "brokers %d and %d hold different records at offset %" PRId64
                            " below the common HW %" PRId64,
                            first->broker, in->replicas[i].broker, offset, common_hw);
                break;
            }
        }
        start = end;
    }
}

struct group_keyed {
    int32_t group;
    uint64_t key;
};

static int compare_group_keyed(const void *a, const void *b)
{
    const struct group_keyed *x = a;
    const struct group_keyed *y = b;
    if (x->group != y->group) {
        return x->group < y->group ? -1 : 1;
    }
    return x->key < y->key ? -1 : x->key > y->key ? 1 : 0;
}

static bool group_processed(const struct group_keyed *items, size_t count, int32_t group,
                            uint64_t key)
{
    struct group_keyed probe = { group, key };
    return bsearch(&probe, items, count, sizeof items[0], compare_group_keyed) != NULL;
}

static void check_consumed(const struct ks_checker_input *in, const bool *is_first,
                           struct ks_checker_output *out)
{
    if (in->consumer_count <= 0 || in->group_count <= 0) {
        return;
    }
    struct group_keyed *items = g_new(struct group_keyed, in->consumed_count + 1);
    size_t count = 0;
    for (size_t i = 0; i < in->consumed_count; i++) {
        const struct ks_consumed_record *c = &in->consumed[i];
        if (c->producer_index < 0 || c->consumer_index < 0 ||
            c->consumer_index >= in->consumer_count) {
            continue;
        }
        items[count].group = in->consumer_group[c->consumer_index];
        items[count].key = identity_key(c->producer_index, c->seq);
        count++;
    }
    qsort(items, count, sizeof items[0], compare_group_keyed);
    for (size_t i = 1; i < count; i++) {
        if (items[i].group == items[i - 1].group && items[i].key == items[i - 1].key) {
            out->consumed_duplicates++;
        }
    }
    for (int32_t g = 0; g < in->group_count; g++) {
        for (size_t i = 0; i < in->final_read_count; i++) {
            const struct ks_read_record *r = &in->final_read[i];
            if (!is_first[i]) {
                continue;
            }
            bool reads_topic = false;
            for (int32_t c = 0; c < in->consumer_count && !reads_topic; c++) {
                reads_topic = in->consumer_group[c] == g && in->consumer_topic[c] == r->topic_index;
            }
            if (!reads_topic ||
                group_processed(items, count, g, identity_key(r->producer_index, r->seq))) {
                continue;
            }
            out->consumed_lost++;
            add_anomaly(out, "consumed_lost", r->topic_index, r->partition,
                        "%s:%" PRId64 " at offset %" PRId64 " never processed by group %d",
                        producer_name(in, r->producer_index), r->seq, r->offset, g);
        }
    }
    g_free(items);
}

void ks_checker_run(const struct ks_checker_input *input, struct ks_checker_output *out)
{
    memset(out, 0, sizeof *out);
    out->anomalies = g_array_new(FALSE, TRUE, sizeof(struct ks_anomaly));
    count_outcomes(input, out);
    bool *is_first = g_new0(bool, input->final_read_count + 1);
    size_t key_count = 0;
    struct keyed *keys = read_keys(input, &key_count, is_first);
    check_lost(input, keys, key_count, out);
    check_duplicates(input, keys, key_count, out);
    check_reordered(input, is_first, out);
    check_divergence(input, out);
    check_consumed(input, is_first, out);
    g_free(keys);
    g_free(is_first);
}

void ks_checker_output_clear(struct ks_checker_output *out)
{
    if (out->anomalies != NULL) {
        g_array_free(out->anomalies, TRUE);
        out->anomalies = NULL;
    }
}
