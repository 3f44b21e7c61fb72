/*
** sim/checker.c: record-level metrics (definitions in sim/checker.h).
**
** Method: identities (producer, seq) become 64-bit keys; every question
** ("is this acked record in the final read?", "how many copies?", "did the
** group process it?") is answered by sorting key arrays and binary search, so
** the anomaly rows come out in a deterministic order without iterating hash
** tables. Anomalies of one kind are first collected one record at a time,
** sorted, and then merged into ranges of consecutive records that share
** everything but their number (producer or group, partition, broker and
** epoch, cause).
**
** Invariants:
**   K1  every outcome gets exactly one final state; acked_lost equals the
**       acked (or acks=0) outcomes whose final state is MISSING (by
**       construction: check_lost counts exactly those).
**   K2  the records of a kind's rows add up to that kind's count (asserted).
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

const char *ks_anomaly_kind_name(enum ks_anomaly_kind kind)
{
    switch (kind) {
    case KS_ANOMALY_LOST: return "lost";
    case KS_ANOMALY_DUPLICATE: return "duplicate";
    case KS_ANOMALY_REORDERED: return "reordered";
    case KS_ANOMALY_DIVERGENT: return "divergent";
    case KS_ANOMALY_CONSUMED_LOST: return "consumed_lost";
    case KS_ANOMALY_CONSUMED_UNSEEN: return "consumed_unseen";
    case KS_ANOMALY_CONSUMED_DUPLICATE: return "consumed_duplicate";
    case KS_ANOMALY_ABORTED_READ: return "aborted_read";
    case KS_ANOMALY_TXN_HANGING: return "txn_hanging";
    case KS_ANOMALY_PREMATURE_READ: return "premature_read";
    case KS_ANOMALY_EOS_MISSING: return "eos_missing";
    case KS_ANOMALY_EOS_DUPLICATE: return "eos_duplicate";
    case KS_ANOMALY_KIND_COUNT: break;
    }
    return "?";
}

bool ks_anomaly_kind_is_txn(enum ks_anomaly_kind kind)
{
    return kind == KS_ANOMALY_ABORTED_READ || kind == KS_ANOMALY_TXN_HANGING ||
           kind == KS_ANOMALY_PREMATURE_READ;
}

bool ks_anomaly_kind_is_eos(enum ks_anomaly_kind kind)
{
    return kind == KS_ANOMALY_EOS_MISSING || kind == KS_ANOMALY_EOS_DUPLICATE;
}

const char *ks_final_name(enum ks_final final)
{
    switch (final) {
    case KS_FINAL_MISSING: return "missing";
    case KS_FINAL_PRESENT: return "present";
    case KS_FINAL_DUPLICATED: return "duplicated";
    case KS_FINAL_CLEANED_UP: return "cleaned_up";
    }
    return "?";
}

/* ---- group positions ---------------------------------------------------------- */

static gint64 cursor_key(int32_t group, int32_t topic_index, int32_t partition)
{
    return ((gint64)group << 42) ^ ((gint64)topic_index << 21) ^ (gint64)partition;
}

void ks_group_tracker_init(struct ks_group_tracker *tracker)
{
    tracker->cursors = g_array_new(FALSE, FALSE, sizeof(struct ks_group_cursor));
    tracker->skips = g_array_new(FALSE, FALSE, sizeof(struct ks_group_skip));
    tracker->index = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
}

void ks_group_tracker_deinit(struct ks_group_tracker *tracker)
{
    g_array_free(tracker->cursors, TRUE);
    g_array_free(tracker->skips, TRUE);
    g_hash_table_destroy(tracker->index);
    memset(tracker, 0, sizeof *tracker);
}

/* The cursor of (group, topic, partition), created at offset if new. */
static struct ks_group_cursor *tracker_cursor(struct ks_group_tracker *tracker, int32_t group,
                                              int32_t topic_index, int32_t partition,
                                              int64_t offset, ks_time_ns at_ns, int32_t event,
                                              bool *created)
{
    gint64 key = cursor_key(group, topic_index, partition);
    gpointer found = g_hash_table_lookup(tracker->index, &key);
    *created = found == NULL;
    if (found != NULL) {
        return &g_array_index(tracker->cursors, struct ks_group_cursor,
                              GPOINTER_TO_UINT(found) - 1);
    }
    struct ks_group_cursor cursor = {
        .group = group,
        .topic_index = topic_index,
        .partition = partition,
        .first_position = offset,
        .first_ns = at_ns,
        .first_event = event,
        .position = offset,
    };
    g_array_append_val(tracker->cursors, cursor);
    g_hash_table_insert(tracker->index, g_memdup2(&key, sizeof key),
                        GUINT_TO_POINTER(tracker->cursors->len));
    return &g_array_index(tracker->cursors, struct ks_group_cursor, tracker->cursors->len - 1);
}

void ks_group_tracker_position(struct ks_group_tracker *tracker, int32_t group, int32_t topic_index,
                               int32_t partition, int64_t offset, enum ks_position_kind kind,
                               ks_time_ns at_ns, int32_t event)
{
    if (kind == KS_POSITION_COMMITTED || offset < 0) {
        return; /* a commit says where a restart would resume, not what was processed */
    }
    bool created = false;
    struct ks_group_cursor *cursor =
        tracker_cursor(tracker, group, topic_index, partition, offset, at_ns, event, &created);
    if (created) {
        return;
    }
    if (offset > cursor->position) {
        struct ks_group_skip skip = {
            .group = group,
            .topic_index = topic_index,
            .partition = partition,
            .from_offset = cursor->position,
            .to_offset = offset,
            .at_ns = at_ns,
            .kind = kind,
            .event = event,
            .event_ns = at_ns,
        };
        g_array_append_val(tracker->skips, skip);
    }
    cursor->position = offset; /* backwards too: records are processed again */
}

void ks_group_tracker_processed(struct ks_group_tracker *tracker, int32_t group,
                                int32_t topic_index, int32_t partition, int64_t offset)
{
    bool created = false;
    struct ks_group_cursor *cursor =
        tracker_cursor(tracker, group, topic_index, partition, offset, 0, -1, &created);
    cursor->position = MAX(cursor->position, offset + 1);
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

static const char *topic_label(const struct ks_checker_input *in, int32_t topic_index)
{
    if (in->topic_names != NULL && topic_index >= 0 && in->topic_names[topic_index] != NULL) {
        return in->topic_names[topic_index];
    }
    return "?";
}

static const char *group_name(const struct ks_checker_input *in, int32_t group, char *buffer,
                              size_t buffer_bytes)
{
    if (in->group_names != NULL && group >= 0 && group < in->group_count) {
        return in->group_names[group];
    }
    g_snprintf(buffer, buffer_bytes, "#%d", group);
    return buffer;
}

static struct ks_anomaly anomaly_new(enum ks_anomaly_kind kind, int32_t topic_index,
                                     int32_t partition)
{
    struct ks_anomaly a = {
        .kind = kind,
        .kind_name = ks_anomaly_kind_name(kind),
        .topic_index = topic_index,
        .partition = partition,
        .producer_index = -1,
        .group = -1,
        .first_seq = -1,
        .last_seq = -1,
        .first_offset = -1,
        .last_offset = -1,
        .record_count = 0,
        .first_ns = (ks_time_ns)-1,
        .last_ns = (ks_time_ns)-1,
        .acked_broker = -1,
        .acked_leader_epoch = -1,
        .broker = -1,
        .other_broker = -1,
        .cause = NULL,
        .cause_event = -1,
        .cause_ns = 0,
    };
    return a;
}

static void add_anomaly(struct ks_checker_output *out, struct ks_anomaly *a)
{
    bool one = a->kind == KS_ANOMALY_DIVERGENT || a->kind == KS_ANOMALY_TXN_HANGING;
    out->kind_counts[a->kind] += one ? 1 : a->record_count;
    g_array_append_val(out->anomalies, *a);
}

/* "12" or "12..40": a number or a range. */
static void format_range(char *buffer, size_t buffer_bytes, int64_t first, int64_t last)
{
    if (first == last) {
        g_snprintf(buffer, buffer_bytes, "%" PRId64, first);
    } else {
        g_snprintf(buffer, buffer_bytes, "%" PRId64 "..%" PRId64, first, last);
    }
}

/* Appends "; cause: KIND (event N at T)" where N is the events table's
 * event_id (index + 1). */
static void append_cause(struct ks_anomaly *a)
{
    size_t used = strlen(a->detail);
    if (a->cause == NULL) {
        g_snprintf(a->detail + used, sizeof a->detail - used, "; cause unknown");
    } else if (a->cause_event >= 0) {
        g_snprintf(a->detail + used, sizeof a->detail - used, "; cause: %s (event %d at %.3fs)",
                   a->cause, a->cause_event + 1, (double)a->cause_ns / 1e9);
    } else {
        g_snprintf(a->detail + used, sizeof a->detail - used, "; cause: %s", a->cause);
    }
}

/* ---- outcomes and the final read ---------------------------------------------- */

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
        case KS_OUTCOME_FAILED: out->records_failed++; break;
        case KS_OUTCOME_UNKNOWN: out->records_unknown++; break;
        }
    }
    out->produce_p50_ms = (double)ks_checker_percentile(latencies, latency_count, 50) / 1e6;
    out->produce_p99_ms = (double)ks_checker_percentile(latencies, latency_count, 99) / 1e6;
    g_free(latencies);
}

/* Sorted identity keys of the final read; marks each identity's first copy
 * and fills out->copies. */
static struct keyed *read_keys(const struct ks_checker_input *in, size_t *count_out, bool *is_first,
                               struct ks_checker_output *out)
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
            struct ks_checker_copies copies = { keys[i].key, in->final_read[keys[i].index].offset,
                                                1 };
            g_array_append_val(out->copies, copies);
        } else {
            g_array_index(out->copies, struct ks_checker_copies, out->copies->len - 1).count++;
        }
    }
    *count_out = count;
    return keys;
}

static const struct ks_checker_copies *find_copies(const GArray *copies, uint64_t key)
{
    size_t lo = 0;
    size_t hi = copies->len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g_array_index(copies, struct ks_checker_copies, mid).key < key) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo < copies->len && g_array_index(copies, struct ks_checker_copies, lo).key == key) {
        return &g_array_index(copies, struct ks_checker_copies, lo);
    }
    return NULL;
}

enum ks_final ks_checker_final_of(const struct ks_checker_output *out, int32_t producer_index,
                                  int64_t seq, int64_t *offset_out)
{
    *offset_out = -1;
    if (producer_index < 0 || seq < 0 || out->copies == NULL) {
        return KS_FINAL_MISSING;
    }
    const struct ks_checker_copies *copies =
        find_copies(out->copies, identity_key(producer_index, seq));
    if (copies == NULL) {
        return KS_FINAL_MISSING;
    }
    *offset_out = copies->first_offset;
    return copies->count > 1 ? KS_FINAL_DUPLICATED : KS_FINAL_PRESENT;
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

/* True if the topic's own cleanup explains why a record is missing. */
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

/* Whether the producer's transaction holding record seq committed. */
static bool txn_committed(const struct ks_checker_input *in, int32_t producer_index, int64_t seq)
{
    for (size_t i = 0; i < in->txn_count; i++) {
        const struct ks_txn_outcome *t = &in->txns[i];
        if (t->producer_index == producer_index && seq >= t->seq_from && seq < t->seq_to) {
            return t->committed;
        }
    }
    return false; /* never ended (still open at the end) */
}

static bool counts_as_acked(const struct ks_checker_input *in, const struct ks_record_outcome *o)
{
    bool known = o->producer_index >= 0 && o->producer_index < in->producer_count;
    bool acks_none =
        in->producer_acks_none != NULL && known && in->producer_acks_none[o->producer_index];
    if (in->producer_transactional != NULL && known &&
        in->producer_transactional[o->producer_index] &&
        !txn_committed(in, o->producer_index, o->seq)) {
        return false; /* an aborted (or never committed) transaction's record */
    }
    return o->outcome == KS_OUTCOME_ACKED || acks_none;
}

/* Every outcome's final state (records.final). */
static void judge_finals(const struct ks_checker_input *in, struct ks_checker_output *out)
{
    GHashTable *latest = compacted_key_offsets(in);
    for (size_t i = 0; i < in->outcome_count; i++) {
        const struct ks_record_outcome *o = &in->outcomes[i];
        int64_t offset = -1;
        enum ks_final final = ks_checker_final_of(out, o->producer_index, o->seq, &offset);
        if (final == KS_FINAL_MISSING && cleaned_up(in, latest, o)) {
            final = KS_FINAL_CLEANED_UP;
        }
        out->finals[i] = (uint8_t) final;
        out->final_offsets[i] = offset;
        if (counts_as_acked(in, o) && final == KS_FINAL_CLEANED_UP) {
            out->records_cleaned_up++;
        }
    }
    g_hash_table_destroy(latest);
}

/* ---- lost ----------------------------------------------------------------------- */

struct lost_item {
    const struct ks_record_outcome *outcome;
    struct ks_cause cause;
};

static int compare_lost(const void *a, const void *b)
{
    const struct ks_record_outcome *x = ((const struct lost_item *)a)->outcome;
    const struct ks_record_outcome *y = ((const struct lost_item *)b)->outcome;
    if (x->topic_index != y->topic_index) {
        return x->topic_index < y->topic_index ? -1 : 1;
    }
    if (x->partition != y->partition) {
        return x->partition < y->partition ? -1 : 1;
    }
    if (x->producer_index != y->producer_index) {
        return x->producer_index < y->producer_index ? -1 : 1;
    }
    return x->seq < y->seq ? -1 : x->seq > y->seq ? 1 : 0;
}

/* True if b continues the range that ends with a. */
static bool lost_continues(const struct lost_item *a, const struct lost_item *b)
{
    const struct ks_record_outcome *x = a->outcome;
    const struct ks_record_outcome *y = b->outcome;
    bool offsets_follow =
        (x->offset < 0 && y->offset < 0) || (x->offset >= 0 && y->offset == x->offset + 1);
    return x->topic_index == y->topic_index && x->partition == y->partition &&
           x->producer_index == y->producer_index && y->seq == x->seq + 1 && offsets_follow &&
           x->acked_broker == y->acked_broker && x->acked_leader_epoch == y->acked_leader_epoch &&
           a->cause.cause == b->cause.cause && a->cause.event == b->cause.event;
}

static void lost_row(const struct ks_checker_input *in, const struct lost_item *first,
                     const struct lost_item *last, int64_t count, struct ks_checker_output *out)
{
    const struct ks_record_outcome *o = first->outcome;
    struct ks_anomaly a = anomaly_new(KS_ANOMALY_LOST, o->topic_index, o->partition);
    a.producer_index = o->producer_index;
    a.first_seq = o->seq;
    a.last_seq = last->outcome->seq;
    a.first_offset = o->offset;
    a.last_offset = last->outcome->offset;
    a.record_count = count;
    a.first_ns = o->acked_ns;
    a.last_ns = last->outcome->acked_ns;
    a.acked_broker = o->acked_broker;
    a.acked_leader_epoch = o->acked_leader_epoch;
    a.cause = first->cause.cause;
    a.cause_event = first->cause.event;
    a.cause_ns = first->cause.at_ns;
    char seqs[48];
    char offsets[48];
    char by[64] = "";
    format_range(seqs, sizeof seqs, a.first_seq, a.last_seq);
    format_range(offsets, sizeof offsets, a.first_offset, a.last_offset);
    if (o->acked_broker >= 0 && o->acked_leader_epoch >= 0) {
        g_snprintf(by, sizeof by, " by broker %d in epoch %d", o->acked_broker,
                   o->acked_leader_epoch);
    } else if (o->acked_broker >= 0) {
        g_snprintf(by, sizeof by, " (acks=0: written to broker %d)", o->acked_broker);
    }
    char where[80];
    if (a.first_offset >= 0) {
        g_snprintf(where, sizeof where, " at offset%s %s", count > 1 ? "s" : "", offsets);
    } else {
        where[0] = '\0';
    }
    char times[64];
    if (count > 1) {
        g_snprintf(times, sizeof times, "t=%.3fs..%.3fs", (double)a.first_ns / 1e9,
                   (double)a.last_ns / 1e9);
    } else {
        g_snprintf(times, sizeof times, "t=%.3fs", (double)a.first_ns / 1e9);
    }
    char records[48] = "";
    if (count > 1) {
        g_snprintf(records, sizeof records, " (%" PRId64 " records)", count);
    }
    g_snprintf(a.detail, sizeof a.detail, "%s:%s acked%s%s (%s) missing from the final read%s",
               producer_name(in, o->producer_index), seqs, by, where, times, records);
    append_cause(&a);
    add_anomaly(out, &a);
}

static void check_lost(const struct ks_checker_input *in, struct ks_checker_output *out)
{
    GArray *items = g_array_new(FALSE, FALSE, sizeof(struct lost_item));
    for (size_t i = 0; i < in->outcome_count; i++) {
        const struct ks_record_outcome *o = &in->outcomes[i];
        if (!counts_as_acked(in, o) || out->finals[i] != KS_FINAL_MISSING) {
            continue;
        }
        out->acked_lost++;
        struct lost_item item = { .outcome = o, .cause = { NULL, -1, 0 } };
        if (in->cause_of_lost != NULL) {
            item.cause = in->cause_of_lost(in->cause_context, o);
        }
        g_array_append_val(items, item);
    }
    if (items->len > 1) { /* an empty GArray's data may be NULL */
        qsort(items->data, items->len, sizeof(struct lost_item), compare_lost);
    }
    guint start = 0;
    while (start < items->len) {
        guint end = start + 1;
        while (end < items->len && lost_continues(&g_array_index(items, struct lost_item, end - 1),
                                                  &g_array_index(items, struct lost_item, end))) {
            end++;
        }
        lost_row(in, &g_array_index(items, struct lost_item, start),
                 &g_array_index(items, struct lost_item, end - 1), (int64_t)(end - start), out);
        start = end;
    }
    g_array_free(items, TRUE);
}

/* ---- duplicates and reordering ---------------------------------------------- */

/* One record of the final read that is an anomaly by itself (an extra copy,
 * a reordered record), with the offset it refers to (the copied offset, or
 * the offset of the earlier-sent record it precedes). */
struct read_item {
    size_t read_index;
    int64_t other_offset;
    int64_t other_seq;
};

static int compare_read_item(const void *a, const void *b)
{
    size_t x = ((const struct read_item *)a)->read_index;
    size_t y = ((const struct read_item *)b)->read_index;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* Merges items (sorted by read index) of consecutive offsets and seqs of one
 * producer into rows. Duplicates also need the copied offsets to follow. */
static void read_item_rows(const struct ks_checker_input *in, GArray *items,
                           enum ks_anomaly_kind kind, struct ks_checker_output *out)
{
    if (items->len > 1) { /* an empty GArray's data may be NULL */
        qsort(items->data, items->len, sizeof(struct read_item), compare_read_item);
    }
    guint start = 0;
    while (start < items->len) {
        const struct read_item *first = &g_array_index(items, struct read_item, start);
        const struct ks_read_record *r = &in->final_read[first->read_index];
        guint end = start + 1;
        while (end < items->len) {
            const struct read_item *prev = &g_array_index(items, struct read_item, end - 1);
            const struct read_item *next = &g_array_index(items, struct read_item, end);
            const struct ks_read_record *p = &in->final_read[prev->read_index];
            const struct ks_read_record *n = &in->final_read[next->read_index];
            bool follows = n->topic_index == p->topic_index && n->partition == p->partition &&
                           n->producer_index == p->producer_index && n->seq == p->seq + 1 &&
                           n->offset == p->offset + 1;
            if (kind == KS_ANOMALY_DUPLICATE) {
                follows = follows && next->other_offset == prev->other_offset + 1;
            } else {
                follows = follows && next->other_offset == prev->other_offset;
            }
            if (!follows) {
                break;
            }
            end++;
        }
        const struct read_item *last_item = &g_array_index(items, struct read_item, end - 1);
        const struct ks_read_record *last = &in->final_read[last_item->read_index];
        int64_t count = (int64_t)(end - start);
        struct ks_anomaly a = anomaly_new(kind, r->topic_index, r->partition);
        a.producer_index = r->producer_index;
        a.first_seq = r->seq;
        a.last_seq = last->seq;
        a.first_offset = r->offset;
        a.last_offset = last->offset;
        a.record_count = count;
        char seqs[48];
        char offsets[48];
        char others[48];
        char records[48] = "";
        format_range(seqs, sizeof seqs, r->seq, last->seq);
        format_range(offsets, sizeof offsets, r->offset, last->offset);
        if (count > 1) {
            g_snprintf(records, sizeof records, " (%" PRId64 " records)", count);
        }
        const char *name = producer_name(in, r->producer_index);
        if (kind == KS_ANOMALY_DUPLICATE) {
            format_range(others, sizeof others, first->other_offset, last_item->other_offset);
            g_snprintf(a.detail, sizeof a.detail, "%s:%s at offset%s %s copies offset%s %s%s", name,
                       seqs, count > 1 ? "s" : "", offsets, count > 1 ? "s" : "", others, records);
        } else {
            g_snprintf(a.detail, sizeof a.detail,
                       "%s:%s at offset%s %s before %s:%" PRId64 " at offset %" PRId64 "%s", name,
                       seqs, count > 1 ? "s" : "", offsets, name, first->other_seq,
                       first->other_offset, records);
        }
        add_anomaly(out, &a);
        start = end;
    }
}

static void check_duplicates(const struct ks_checker_input *in, const struct keyed *keys,
                             size_t key_count, struct ks_checker_output *out)
{
    GArray *items = g_array_new(FALSE, FALSE, sizeof(struct read_item));
    for (size_t i = 1; i < key_count; i++) {
        if (keys[i].key != keys[i - 1].key) {
            continue;
        }
        size_t first = i - 1;
        while (first > 0 && keys[first - 1].key == keys[i].key) {
            first--;
        }
        out->duplicates++;
        struct read_item item = { (size_t)keys[i].index, in->final_read[keys[first].index].offset,
                                  -1 };
        g_array_append_val(items, item);
    }
    read_item_rows(in, items, KS_ANOMALY_DUPLICATE, out);
    g_array_free(items, TRUE);
}

/* Walks each partition backwards, keeping per producer the smallest seq seen
 * later in the log: a record with a larger seq appears before an earlier one. */
static void check_reordered(const struct ks_checker_input *in, const bool *is_first,
                            struct ks_checker_output *out)
{
    int32_t producer_count = in->producer_count > 0 ? in->producer_count : 0;
    int64_t *min_seq = g_new(int64_t, (size_t)producer_count + 1);
    int64_t *min_offset = g_new(int64_t, (size_t)producer_count + 1);
    GArray *items = g_array_new(FALSE, FALSE, sizeof(struct read_item));
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
                struct read_item item = { i, min_offset[p], min_seq[p] };
                g_array_append_val(items, item);
            } else {
                min_seq[p] = r->seq;
                min_offset[p] = r->offset;
            }
        }
        end = start;
    }
    read_item_rows(in, items, KS_ANOMALY_REORDERED, out);
    g_array_free(items, TRUE);
    g_free(min_seq);
    g_free(min_offset);
}

/* ---- divergence --------------------------------------------------------------- */

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
                struct ks_anomaly a =
                    anomaly_new(KS_ANOMALY_DIVERGENT, first->topic_index, first->partition);
                a.first_offset = offset;
                a.last_offset = offset;
                a.record_count = 1;
                a.broker = first->broker;
                a.other_broker = in->replicas[i].broker;
                g_snprintf(a.detail, sizeof a.detail,
                           "brokers %d and %d hold different records at offset %" PRId64
                           " below the common HW %" PRId64,
                           first->broker, in->replicas[i].broker, offset, common_hw);
                add_anomaly(out, &a);
                break;
            }
        }
        start = end;
    }
}

/* ---- consumer groups ---------------------------------------------------------- */

struct processing {
    int32_t group;
    uint64_t key;
    int32_t topic_index;
    int32_t partition;
    int64_t offset;
};

static int compare_processing(const void *a, const void *b)
{
    const struct processing *x = a;
    const struct processing *y = b;
    if (x->group != y->group) {
        return x->group < y->group ? -1 : 1;
    }
    return x->key < y->key ? -1 : x->key > y->key ? 1 : 0;
}

static int compare_processing_offset(const void *a, const void *b)
{
    const struct processing *x = a;
    const struct processing *y = b;
    if (x->group != y->group) {
        return x->group < y->group ? -1 : 1;
    }
    if (x->topic_index != y->topic_index) {
        return x->topic_index < y->topic_index ? -1 : 1;
    }
    if (x->partition != y->partition) {
        return x->partition < y->partition ? -1 : 1;
    }
    return x->offset < y->offset ? -1 : x->offset > y->offset ? 1 : 0;
}

static bool group_processed(const struct processing *items, size_t count, int32_t group,
                            uint64_t key)
{
    struct processing probe = { .group = group, .key = key };
    return bsearch(&probe, items, count, sizeof items[0], compare_processing) != NULL;
}

/* consumed_duplicate rows (extra processings) or aborted_read rows
 * (processings of aborted records by a read_committed group), merged over
 * runs of the same or the next offset of one partition. */
static void processing_rows(const struct ks_checker_input *in, GArray *extras,
                            enum ks_anomaly_kind kind, struct ks_checker_output *out)
{
    if (extras->len > 1) { /* an empty GArray's data may be NULL */
        qsort(extras->data, extras->len, sizeof(struct processing), compare_processing_offset);
    }
    guint start = 0;
    while (start < extras->len) {
        const struct processing *first = &g_array_index(extras, struct processing, start);
        guint end = start + 1;
        while (end < extras->len) {
            const struct processing *prev = &g_array_index(extras, struct processing, end - 1);
            const struct processing *next = &g_array_index(extras, struct processing, end);
            if (next->group != prev->group || next->topic_index != prev->topic_index ||
                next->partition != prev->partition || next->offset > prev->offset + 1) {
                break;
            }
            end++;
        }
        const struct processing *last = &g_array_index(extras, struct processing, end - 1);
        struct ks_anomaly a = anomaly_new(kind, first->topic_index, first->partition);
        a.group = first->group;
        a.first_offset = first->offset;
        a.last_offset = last->offset;
        a.record_count = (int64_t)(end - start);
        char offsets[48];
        char name[16];
        format_range(offsets, sizeof offsets, first->offset, last->offset);
        if (kind == KS_ANOMALY_ABORTED_READ) {
            g_snprintf(a.detail, sizeof a.detail,
                       "group %s (read_committed) processed offset%s %s of aborted "
                       "transactions (%" PRId64 " record%s)",
                       group_name(in, first->group, name, sizeof name),
                       first->offset == last->offset ? "" : "s", offsets, a.record_count,
                       a.record_count == 1 ? "" : "s");
        } else if (kind == KS_ANOMALY_PREMATURE_READ) {
            g_snprintf(a.detail, sizeof a.detail,
                       "group %s (read_committed) processed offset%s %s (%" PRId64
                       " record%s) before their transaction's COMMIT marker was written: "
                       "past the last stable offset",
                       group_name(in, first->group, name, sizeof name),
                       first->offset == last->offset ? "" : "s", offsets, a.record_count,
                       a.record_count == 1 ? "" : "s");
        } else {
            g_snprintf(a.detail, sizeof a.detail,
                       "group %s processed offset%s %s again (%" PRId64 " extra processing%s)",
                       group_name(in, first->group, name, sizeof name),
                       first->offset == last->offset ? "" : "s", offsets, a.record_count,
                       a.record_count == 1 ? "" : "s");
        }
        add_anomaly(out, &a);
        start = end;
    }
}

static const struct ks_group_cursor *find_cursor(const struct ks_checker_input *in, int32_t group,
                                                 int32_t topic_index, int32_t partition,
                                                 size_t *index_out)
{
    for (size_t i = 0; i < in->cursor_count; i++) {
        const struct ks_group_cursor *c = &in->cursors[i];
        if (c->group == group && c->topic_index == topic_index && c->partition == partition) {
            *index_out = i;
            return c;
        }
    }
    return NULL;
}

/* The latest skip of the group over offset: why the group moved past it. */
static struct ks_cause skip_cause(const struct ks_checker_input *in, int32_t group,
                                  int32_t topic_index, int32_t partition, int64_t offset)
{
    struct ks_cause cause = { NULL, -1, 0 };
    for (size_t i = in->skip_count; i-- > 0;) {
        const struct ks_group_skip *s = &in->skips[i];
        if (s->group != group || s->topic_index != topic_index || s->partition != partition ||
            offset < s->from_offset || offset >= s->to_offset) {
            continue;
        }
        cause.cause = s->kind == KS_POSITION_RESET    ? "offset_reset"
                      : s->kind == KS_POSITION_REWIND ? "rewind"
                                                      : "committed_before_processing";
        cause.event = s->event;
        cause.at_ns = s->event_ns;
        break;
    }
    return cause;
}

/* One unprocessed record of the final read, classified for a group. */
struct unprocessed {
    enum ks_anomaly_kind kind; /* CONSUMED_LOST or CONSUMED_UNSEEN */
    int64_t offset;
    struct ks_cause cause;
};

static void consumed_row(const struct ks_checker_input *in, int32_t group,
                         const struct ks_read_record *r, const struct unprocessed *first,
                         const struct unprocessed *last, int64_t count, int64_t position,
                         struct ks_checker_output *out)
{
    struct ks_anomaly a = anomaly_new(first->kind, r->topic_index, r->partition);
    a.group = group;
    a.first_offset = first->offset;
    a.last_offset = last->offset;
    a.record_count = count;
    char offsets[48];
    char name[16];
    format_range(offsets, sizeof offsets, first->offset, last->offset);
    const char *plural = count > 1 ? "s" : "";
    if (first->kind == KS_ANOMALY_CONSUMED_LOST) {
        a.cause = first->cause.cause;
        a.cause_event = first->cause.event;
        a.cause_ns = first->cause.at_ns;
        g_snprintf(a.detail, sizeof a.detail,
                   "group %s never processed offset%s %s (%" PRId64 " record%s) below its final "
                   "position %" PRId64,
                   group_name(in, group, name, sizeof name), plural, offsets, count, plural,
                   position);
        append_cause(&a);
    } else if (position >= 0) {
        g_snprintf(a.detail, sizeof a.detail,
                   "group %s had not reached offset%s %s (%" PRId64 " record%s) when the run "
                   "ended: its position was %" PRId64,
                   group_name(in, group, name, sizeof name), plural, offsets, count, plural,
                   position);
    } else {
        g_snprintf(a.detail, sizeof a.detail,
                   "group %s never took up a position in this partition: offset%s %s (%" PRId64
                   " record%s) unread",
                   group_name(in, group, name, sizeof name), plural, offsets, count, plural);
    }
    add_anomaly(out, &a);
}

/* Classifies the unprocessed records of one partition of the final read
 * [start, end) for group g and emits the rows. */
static void check_group_partition(const struct ks_checker_input *in, int32_t g, size_t start,
                                  size_t end, const bool *is_first, const struct processing *items,
                                  size_t item_count, struct ks_checker_output *out)
{
    const struct ks_read_record *head = &in->final_read[start];
    size_t cursor_index = 0;
    const struct ks_group_cursor *cursor =
        find_cursor(in, g, head->topic_index, head->partition, &cursor_index);
    int64_t first_position = cursor != NULL ? cursor->first_position : -1;
    int64_t position = cursor != NULL ? cursor->position : -1;
    bool read_committed = false;
    for (int32_t c = 0; c < in->consumer_count && in->consumer_read_committed != NULL; c++) {
        read_committed |= in->consumer_group[c] == g && in->consumer_read_committed[c];
    }
    GArray *run = g_array_new(FALSE, FALSE, sizeof(struct unprocessed));
    for (size_t i = start; i <= end; i++) {
        struct unprocessed u = { KS_ANOMALY_CONSUMED_UNSEEN, -1, { NULL, -1, 0 } };
        bool flush = i == end;
        bool have = false;
        if (!flush) {
            const struct ks_read_record *r = &in->final_read[i];
            if (!is_first[i]) {
                continue; /* an extra copy: neither breaks nor joins a range */
            }
            if (read_committed && r->txn == KS_READ_TXN_ABORTED) {
                continue; /* read_committed skips it: not the group's to process */
            }
            if (r->producer_index >= 0 &&
                group_processed(items, item_count, g, identity_key(r->producer_index, r->seq))) {
                flush = true;
            } else if (cursor != NULL && r->offset < first_position) {
                out->cursor_out_of_scope[cursor_index]++;
                out->out_of_scope++;
                flush = true;
            } else {
                have = true;
                u.offset = r->offset;
                if (cursor != NULL && r->offset < position) {
                    u.kind = KS_ANOMALY_CONSUMED_LOST;
                    u.cause = skip_cause(in, g, r->topic_index, r->partition, r->offset);
                    out->consumed_lost++;
                } else {
                    out->consumed_unseen++;
                }
            }
        }
        if (have && run->len > 0) {
            const struct unprocessed *prev = &g_array_index(run, struct unprocessed, run->len - 1);
            flush = prev->kind != u.kind || prev->cause.cause != u.cause.cause ||
                    prev->cause.event != u.cause.event;
        }
        if (flush && run->len > 0) {
            consumed_row(in, g, head, &g_array_index(run, struct unprocessed, 0),
                         &g_array_index(run, struct unprocessed, run->len - 1), (int64_t)run->len,
                         position, out);
            g_array_set_size(run, 0);
        }
        if (have) {
            g_array_append_val(run, u);
        }
    }
    g_array_free(run, TRUE);
}

static void check_consumed(const struct ks_checker_input *in, const bool *is_first,
                           struct ks_checker_output *out)
{
    if (in->consumer_count <= 0 || in->group_count <= 0) {
        return;
    }
    struct processing *items = g_new(struct processing, in->consumed_count + 1);
    size_t count = 0;
    for (size_t i = 0; i < in->consumed_count; i++) {
        const struct ks_consumed_record *c = &in->consumed[i];
        if (c->producer_index < 0 || c->consumer_index < 0 ||
            c->consumer_index >= in->consumer_count) {
            continue;
        }
        items[count] = (struct processing){
            .group = in->consumer_group[c->consumer_index],
            .key = identity_key(c->producer_index, c->seq),
            .topic_index = c->topic_index,
            .partition = c->partition,
            .offset = c->offset,
        };
        count++;
    }
    qsort(items, count, sizeof items[0], compare_processing);
    GArray *extras = g_array_new(FALSE, FALSE, sizeof(struct processing));
    for (size_t i = 1; i < count; i++) {
        if (items[i].group == items[i - 1].group && items[i].key == items[i - 1].key) {
            out->consumed_duplicates++;
            g_array_append_val(extras, items[i]);
        }
    }
    processing_rows(in, extras, KS_ANOMALY_CONSUMED_DUPLICATE, out);
    g_array_free(extras, TRUE);
    for (int32_t g = 0; g < in->group_count; g++) {
        size_t start = 0;
        while (start < in->final_read_count) {
            const struct ks_read_record *head = &in->final_read[start];
            size_t end = start + 1;
            while (end < in->final_read_count &&
                   in->final_read[end].topic_index == head->topic_index &&
                   in->final_read[end].partition == head->partition) {
                end++;
            }
            bool reads_topic = false;
            for (int32_t c = 0; c < in->consumer_count && !reads_topic; c++) {
                reads_topic =
                    in->consumer_group[c] == g && in->consumer_topic[c] == head->topic_index;
            }
            if (reads_topic) {
                check_group_partition(in, g, start, end, is_first, items, count, out);
            }
            start = end;
        }
    }
    g_free(items);
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* One txn_hanging row: the open transaction of final_read[first]'s producer
 * in its partition, from that record to the partition's last record of it
 * (records of other producers may lie between). */
static void txn_hanging_row(const struct ks_checker_input *in, size_t first,
                            struct ks_checker_output *out)
{
    const struct ks_read_record *r = &in->final_read[first];
    struct ks_anomaly a = anomaly_new(KS_ANOMALY_TXN_HANGING, r->topic_index, r->partition);
    a.producer_index = r->producer_index;
    a.first_offset = r->offset;
    a.last_offset = r->offset;
    a.first_seq = r->seq;
    a.last_seq = r->seq;
    a.record_count = 0;
    for (size_t k = first; k < in->final_read_count; k++) {
        const struct ks_read_record *q = &in->final_read[k];
        if (q->topic_index != r->topic_index || q->partition != r->partition) {
            break;
        }
        if (q->txn == KS_READ_TXN_OPEN && q->producer_index == r->producer_index) {
            a.last_offset = q->offset;
            a.last_seq = q->seq;
            a.record_count++;
        }
    }
    out->txn_hanging++;
    char offsets[48];
    format_range(offsets, sizeof offsets, a.first_offset, a.last_offset);
    g_snprintf(a.detail, sizeof a.detail,
               "producer %s: its transaction from offset %" PRId64 " has no marker (%" PRId64
               " record%s in offsets %s): the last stable offset stays at %" PRId64,
               producer_name(in, r->producer_index), a.first_offset, a.record_count,
               a.record_count == 1 ? "" : "s", offsets, a.first_offset);
    add_anomaly(out, &a);
}

/* txn_committed, txn_aborted, aborted_read, aborted_seen, txn_hanging. */
static void check_transactions(const struct ks_checker_input *in, struct ks_checker_output *out)
{
    for (size_t i = 0; i < in->txn_count; i++) {
        if (in->txns[i].committed) {
            out->txn_committed++;
        } else {
            out->txn_aborted++;
        }
    }
    uint64_t *aborted = g_new(uint64_t, in->final_read_count + 1);
    size_t aborted_count = 0;
    for (size_t i = 0; i < in->final_read_count; i++) {
        const struct ks_read_record *r = &in->final_read[i];
        if (r->txn == KS_READ_TXN_ABORTED && r->producer_index >= 0) {
            aborted[aborted_count++] = identity_key(r->producer_index, r->seq);
        }
        /* One open transaction per (partition, producer): count its first record. */
        if (r->txn == KS_READ_TXN_OPEN) {
            bool first = true;
            for (size_t k = i; k > 0 && first; k--) {
                const struct ks_read_record *q = &in->final_read[k - 1];
                if (q->topic_index != r->topic_index || q->partition != r->partition) {
                    break;
                }
                first = !(q->txn == KS_READ_TXN_OPEN && q->producer_index == r->producer_index);
            }
            if (first) {
                txn_hanging_row(in, i, out);
            }
        }
    }
    qsort(aborted, aborted_count, sizeof aborted[0], compare_u64);
    GArray *reads = g_array_new(FALSE, FALSE, sizeof(struct processing));
    for (size_t i = 0; i < in->consumed_count; i++) {
        const struct ks_consumed_record *c = &in->consumed[i];
        if (c->producer_index < 0 || c->consumer_index < 0 ||
            c->consumer_index >= in->consumer_count) {
            continue;
        }
        uint64_t key = identity_key(c->producer_index, c->seq);
        if (bsearch(&key, aborted, aborted_count, sizeof aborted[0], compare_u64) == NULL) {
            continue;
        }
        if (in->consumer_read_committed != NULL && in->consumer_read_committed[c->consumer_index]) {
            out->aborted_read++;
            struct processing read = {
                .group = in->consumer_group[c->consumer_index],
                .key = key,
                .topic_index = c->topic_index,
                .partition = c->partition,
                .offset = c->offset,
            };
            g_array_append_val(reads, read);
        } else {
            out->aborted_seen++;
        }
    }
    processing_rows(in, reads, KS_ANOMALY_ABORTED_READ, out);
    g_array_free(reads, TRUE);
    g_free(aborted);
}

/* The final read's record at (topic, partition, offset), or NULL: a binary
 * search, the final read being in (topic, partition, offset) order. */
static const struct ks_read_record *
find_read(const struct ks_checker_input *in, int32_t topic_index, int32_t partition, int64_t offset)
{
    size_t low = 0;
    size_t high = in->final_read_count;
    while (low < high) {
        size_t mid = low + (high - low) / 2;
        const struct ks_read_record *r = &in->final_read[mid];
        int cmp = r->topic_index != topic_index ? (r->topic_index < topic_index ? -1 : 1)
                  : r->partition != partition   ? (r->partition < partition ? -1 : 1)
                  : r->offset != offset         ? (r->offset < offset ? -1 : 1)
                                                : 0;
        if (cmp == 0) {
            return r;
        }
        if (cmp < 0) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    return NULL;
}

/* premature_read: a read_committed consumer's processing of a committed
 * transaction's record before the marker that commits it was written. The
 * record is looked up at the offset the consumer read; a record since
 * replaced there (a truncation) is not judged. */
static void check_premature(const struct ks_checker_input *in, struct ks_checker_output *out)
{
    if (in->consumer_read_committed == NULL) {
        return;
    }
    GArray *reads = g_array_new(FALSE, FALSE, sizeof(struct processing));
    for (size_t i = 0; i < in->consumed_count; i++) {
        const struct ks_consumed_record *c = &in->consumed[i];
        if (c->producer_index < 0 || c->consumer_index < 0 ||
            c->consumer_index >= in->consumer_count ||
            !in->consumer_read_committed[c->consumer_index]) {
            continue;
        }
        const struct ks_read_record *r = find_read(in, c->topic_index, c->partition, c->offset);
        if (r == NULL || r->producer_index != c->producer_index || r->seq != c->seq ||
            r->txn != KS_READ_TXN_COMMITTED || r->marker_ns == 0 || c->at_ns >= r->marker_ns) {
            continue;
        }
        out->premature_read++;
        struct processing read = {
            .group = in->consumer_group[c->consumer_index],
            .key = identity_key(c->producer_index, c->seq),
            .topic_index = c->topic_index,
            .partition = c->partition,
            .offset = c->offset,
        };
        g_array_append_val(reads, read);
    }
    processing_rows(in, reads, KS_ANOMALY_PREMATURE_READ, out);
    g_array_free(reads, TRUE);
}

/* One record of a processor's pipeline: a visible input record, or a
 * committed output record keyed by the input it names. */
struct eos_item {
    uint64_t key;
    int32_t topic_index;
    int32_t partition;
    int64_t offset;
    size_t read_index; /* in the final read */
};

static int compare_eos_item(const void *a, const void *b)
{
    const struct eos_item *x = a;
    const struct eos_item *y = b;
    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    /* the final read's order, which is (topic, partition, offset) */
    return x->read_index < y->read_index ? -1 : x->read_index > y->read_index ? 1 : 0;
}

static int compare_eos_position(const void *a, const void *b)
{
    const struct eos_item *x = a;
    const struct eos_item *y = b;
    return x->read_index < y->read_index ? -1 : x->read_index > y->read_index ? 1 : 0;
}

/* An input record with more than one committed output: outputs
 * [first, first + count) of the sorted outputs. */
struct eos_dup {
    struct eos_item input;
    guint first;
    guint count;
};

static int compare_eos_dup(const void *a, const void *b)
{
    return compare_eos_position(&((const struct eos_dup *)a)->input,
                                &((const struct eos_dup *)b)->input);
}

static bool eos_visible(const struct ks_read_record *r)
{
    return r->txn == KS_READ_TXN_NONE || r->txn == KS_READ_TXN_COMMITTED;
}

/* eos_missing rows: the missing inputs (in final-read order) merged into
 * ranges of one partition and producer with no other visible input record
 * between them. */
static void eos_missing_rows(const struct ks_checker_input *in,
                             const struct ks_checker_processor *proc, GArray *missing,
                             struct ks_checker_output *out)
{
    if (missing->len > 1) {
        qsort(missing->data, missing->len, sizeof(struct eos_item), compare_eos_position);
    }
    guint start = 0;
    while (start < missing->len) {
        const struct eos_item *first = &g_array_index(missing, struct eos_item, start);
        const struct ks_read_record *head = &in->final_read[first->read_index];
        guint end = start + 1;
        while (end < missing->len) {
            const struct eos_item *prev = &g_array_index(missing, struct eos_item, end - 1);
            const struct eos_item *next = &g_array_index(missing, struct eos_item, end);
            const struct ks_read_record *r = &in->final_read[next->read_index];
            bool joins = r->topic_index == head->topic_index && r->partition == head->partition &&
                         r->producer_index == head->producer_index;
            for (size_t k = prev->read_index + 1; joins && k < next->read_index; k++) {
                const struct ks_read_record *q = &in->final_read[k];
                joins = !(eos_visible(q) && q->producer_index >= 0);
            }
            if (!joins) {
                break;
            }
            end++;
        }
        const struct eos_item *last = &g_array_index(missing, struct eos_item, end - 1);
        const struct ks_read_record *tail = &in->final_read[last->read_index];
        struct ks_anomaly a =
            anomaly_new(KS_ANOMALY_EOS_MISSING, head->topic_index, head->partition);
        a.producer_index = head->producer_index;
        a.first_seq = head->seq;
        a.last_seq = tail->seq;
        a.first_offset = head->offset;
        a.last_offset = tail->offset;
        a.record_count = (int64_t)(end - start);
        char offsets[48];
        char seqs[48];
        format_range(offsets, sizeof offsets, a.first_offset, a.last_offset);
        format_range(seqs, sizeof seqs, a.first_seq, a.last_seq);
        const char *plural = a.record_count == 1 ? "" : "s";
        g_snprintf(a.detail, sizeof a.detail,
                   "input offset%s %s (%" PRId64 " record%s, %s seq %s) ha%s no committed "
                   "output in %s",
                   plural, offsets, a.record_count, plural, producer_name(in, head->producer_index),
                   seqs, a.record_count == 1 ? "s" : "ve", topic_label(in, proc->output_topic));
        add_anomaly(out, &a);
        start = end;
    }
}

/* One eos_duplicate row: input record `input` named by the committed
 * outputs outputs[0..count) (count >= 2, in final-read order). */
static void eos_duplicate_row(const struct ks_checker_input *in, const struct eos_item *input,
                              const struct eos_item *outputs, size_t count,
                              struct ks_checker_output *out)
{
    const struct ks_read_record *source = &in->final_read[input->read_index];
    struct ks_anomaly a =
        anomaly_new(KS_ANOMALY_EOS_DUPLICATE, outputs[0].topic_index, outputs[0].partition);
    a.producer_index = source->producer_index;
    a.first_seq = source->seq;
    a.last_seq = source->seq;
    a.first_offset = outputs[0].offset;
    a.last_offset = outputs[count - 1].offset;
    a.record_count = (int64_t)count - 1;
    char list[160] = "";
    size_t used = 0;
    for (size_t i = 0; i < count && used + 24 < sizeof list; i++) {
        const struct eos_item *o = &outputs[i];
        g_snprintf(list + used, sizeof list - used, "%s%s-%d@%" PRId64, i > 0 ? ", " : "",
                   topic_label(in, o->topic_index), o->partition, o->offset);
        used = strlen(list);
    }
    if (used + 24 >= sizeof list) {
        g_strlcat(list, ", ...", sizeof list);
    }
    g_snprintf(a.detail, sizeof a.detail,
               "input %s-%d offset %" PRId64 " (%s seq %" PRId64 ") has %zu committed outputs "
               "(%" PRId64 " extra): %s",
               topic_label(in, source->topic_index), source->partition, source->offset,
               producer_name(in, source->producer_index), source->seq, count, a.record_count, list);
    add_anomaly(out, &a);
}

/* eos_missing, eos_duplicates: every visible input record of a processor's
 * input topic against the committed outputs that name it. */
static void check_processors(const struct ks_checker_input *in, struct ks_checker_output *out)
{
    GArray *inputs = g_array_new(FALSE, FALSE, sizeof(struct eos_item));
    GArray *outputs = g_array_new(FALSE, FALSE, sizeof(struct eos_item));
    GArray *missing = g_array_new(FALSE, FALSE, sizeof(struct eos_item));
    for (size_t k = 0; k < in->processor_count; k++) {
        const struct ks_checker_processor *proc = &in->processors[k];
        bool seen = false;
        for (size_t j = 0; j < k; j++) {
            seen = seen || (in->processors[j].input_topic == proc->input_topic &&
                            in->processors[j].output_topic == proc->output_topic);
        }
        if (seen) {
            continue; /* the members of one group form one pipeline: count it once */
        }
        g_array_set_size(inputs, 0);
        g_array_set_size(outputs, 0);
        g_array_set_size(missing, 0);
        for (size_t i = 0; i < in->final_read_count; i++) {
            const struct ks_read_record *r = &in->final_read[i];
            if (!eos_visible(r)) {
                continue;
            }
            struct eos_item item = { 0, r->topic_index, r->partition, r->offset, i };
            if (r->topic_index == proc->input_topic && r->producer_index >= 0) {
                item.key = identity_key(r->producer_index, r->seq);
                g_array_append_val(inputs, item);
            }
            if (r->topic_index == proc->output_topic && r->source_producer > 0) {
                item.key = identity_key(r->source_producer - 1, r->source_seq);
                g_array_append_val(outputs, item);
            }
        }
        if (inputs->len > 1) {
            qsort(inputs->data, inputs->len, sizeof(struct eos_item), compare_eos_item);
        }
        if (outputs->len > 1) {
            qsort(outputs->data, outputs->len, sizeof(struct eos_item), compare_eos_item);
        }
        /* duplicate rows come out in input order: collected, then sorted */
        GArray *dups = g_array_new(FALSE, FALSE, sizeof(struct eos_dup));
        guint o = 0;
        for (guint i = 0; i < inputs->len; i++) {
            const struct eos_item *input = &g_array_index(inputs, struct eos_item, i);
            if (i > 0 && input->key == g_array_index(inputs, struct eos_item, i - 1).key) {
                continue; /* the input's own duplicate (duplicates counts it) */
            }
            while (o < outputs->len &&
                   g_array_index(outputs, struct eos_item, o).key < input->key) {
                o++;
            }
            guint first = o;
            while (o < outputs->len &&
                   g_array_index(outputs, struct eos_item, o).key == input->key) {
                o++;
            }
            guint copies = o - first;
            if (copies == 0) {
                out->eos_missing++;
                g_array_append_val(missing, *input);
            } else if (copies > 1) {
                out->eos_duplicates += copies - 1;
                struct eos_dup dup = { *input, first, copies };
                g_array_append_val(dups, dup);
            }
        }
        eos_missing_rows(in, proc, missing, out);
        if (dups->len > 1) {
            qsort(dups->data, dups->len, sizeof(struct eos_dup), compare_eos_dup);
        }
        for (guint i = 0; i < dups->len; i++) {
            const struct eos_dup *dup = &g_array_index(dups, struct eos_dup, i);
            eos_duplicate_row(in, &dup->input, &g_array_index(outputs, struct eos_item, dup->first),
                              dup->count, out);
        }
        g_array_free(dups, TRUE);
    }
    g_array_free(inputs, TRUE);
    g_array_free(outputs, TRUE);
    g_array_free(missing, TRUE);
}

void ks_checker_run(const struct ks_checker_input *input, struct ks_checker_output *out)
{
    memset(out, 0, sizeof *out);
    out->anomalies = g_array_new(FALSE, TRUE, sizeof(struct ks_anomaly));
    out->copies = g_array_new(FALSE, FALSE, sizeof(struct ks_checker_copies));
    out->finals = g_new0(uint8_t, input->outcome_count + 1);
    out->final_offsets = g_new0(int64_t, input->outcome_count + 1);
    out->cursor_out_of_scope = g_new0(int64_t, input->cursor_count + 1);
    count_outcomes(input, out);
    bool *is_first = g_new0(bool, input->final_read_count + 1);
    size_t key_count = 0;
    struct keyed *keys = read_keys(input, &key_count, is_first, out);
    judge_finals(input, out);
    check_lost(input, out);
    check_duplicates(input, keys, key_count, out);
    check_reordered(input, is_first, out);
    check_divergence(input, out);
    check_consumed(input, is_first, out);
    check_transactions(input, out);
    check_premature(input, out);
    check_processors(input, out);
    /* K2 */
    ks_assert(out->kind_counts[KS_ANOMALY_LOST] == out->acked_lost);
    ks_assert(out->kind_counts[KS_ANOMALY_DUPLICATE] == out->duplicates);
    ks_assert(out->kind_counts[KS_ANOMALY_REORDERED] == out->reordered);
    ks_assert(out->kind_counts[KS_ANOMALY_DIVERGENT] == out->divergent_partitions);
    ks_assert(out->kind_counts[KS_ANOMALY_CONSUMED_LOST] == out->consumed_lost);
    ks_assert(out->kind_counts[KS_ANOMALY_CONSUMED_UNSEEN] == out->consumed_unseen);
    ks_assert(out->kind_counts[KS_ANOMALY_CONSUMED_DUPLICATE] == out->consumed_duplicates);
    ks_assert(out->kind_counts[KS_ANOMALY_ABORTED_READ] == out->aborted_read);
    ks_assert(out->kind_counts[KS_ANOMALY_TXN_HANGING] == out->txn_hanging);
    ks_assert(out->kind_counts[KS_ANOMALY_PREMATURE_READ] == out->premature_read);
    ks_assert(out->kind_counts[KS_ANOMALY_EOS_MISSING] == out->eos_missing);
    ks_assert(out->kind_counts[KS_ANOMALY_EOS_DUPLICATE] == out->eos_duplicates);
    g_free(keys);
    g_free(is_first);
}

void ks_checker_output_clear(struct ks_checker_output *out)
{
    if (out->anomalies != NULL) {
        g_array_free(out->anomalies, TRUE);
        out->anomalies = NULL;
    }
    if (out->copies != NULL) {
        g_array_free(out->copies, TRUE);
        out->copies = NULL;
    }
    g_clear_pointer(&out->finals, g_free);
    g_clear_pointer(&out->final_offsets, g_free);
    g_clear_pointer(&out->cursor_out_of_scope, g_free);
}
