/* tests/sim/test_checker.c: the record-level metrics on hand-built inputs.
 *
 * Goal: each metric of sim/checker.h counts exactly the anomalies its
 * definition names, and nothing else; every record gets the final state the
 * final read gives it; anomaly rows are ranges that add up to the counts and
 * are never capped; a group's records are lost only between its first and
 * final position, and unseen at or after it. Method: build small arrays of
 * producer outcomes, final-read records, replica fingerprints, consumer
 * processings and group positions by hand, with a known number of lost,
 * duplicated, reordered, divergent, skipped and unread records, run the
 * checker and compare every count and the anomaly rows; a clean input must
 * give zeros. */
#include "../../sim/checker.h"
#include "../testlib.h"

#include <string.h>

static const char *const producer_names[] = { "p1", "p2" };
static const char *const topic_names[] = { "orders" };
static const char *const group_names[] = { "g1", "g2" };

static struct ks_record_outcome acked(int32_t producer, int64_t seq, int32_t partition,
                                      int64_t offset, ks_time_ns sent_ns, ks_time_ns acked_ns)
{
    struct ks_record_outcome o = { .producer_index = producer,
                                   .seq = seq,
                                   .key = NULL,
                                   .topic_index = 0,
                                   .partition = partition,
                                   .offset = offset,
                                   .sent_ns = sent_ns,
                                   .acked_ns = acked_ns,
                                   .outcome = KS_OUTCOME_ACKED,
                                   .acked_broker = 1,
                                   .acked_leader_epoch = 0 };
    return o;
}

static struct ks_read_record rec(int32_t partition, int64_t offset, int32_t producer, int64_t seq)
{
    struct ks_read_record r = { 0, partition, offset, producer, seq, KS_READ_TXN_NONE, 0, 0, 0 };
    return r;
}

static void init_input(struct ks_checker_input *in, const struct ks_record_outcome *outcomes,
                       size_t outcome_count, const struct ks_read_record *read, size_t read_count)
{
    memset(in, 0, sizeof *in);
    in->outcomes = outcomes;
    in->outcome_count = outcome_count;
    in->producer_names = producer_names;
    in->producer_count = 2;
    in->topic_names = topic_names;
    in->final_read = read;
    in->final_read_count = read_count;
}

static size_t count_kind(const struct ks_checker_output *out, enum ks_anomaly_kind kind)
{
    size_t n = 0;
    for (guint i = 0; i < out->anomalies->len; i++) {
        if (g_array_index(out->anomalies, struct ks_anomaly, i).kind == kind) {
            n++;
        }
    }
    return n;
}

/* The first row of kind; an empty row (kind count) when there is none, so
 * a failing test reports instead of crashing. */
static const struct ks_anomaly *first_of(const struct ks_checker_output *out,
                                         enum ks_anomaly_kind kind)
{
    static const struct ks_anomaly none = { .kind = KS_ANOMALY_KIND_COUNT, .detail = "" };
    for (guint i = 0; i < out->anomalies->len; i++) {
        const struct ks_anomaly *a = &g_array_index(out->anomalies, struct ks_anomaly, i);
        if (a->kind == kind) {
            return a;
        }
    }
    return &none;
}

/* Records the topic's own cleanup removed are not losses: on partition 0
 * retention moved the log start to 5, so offsets 0..4 may be gone; partition
 * 1 is compacted, so key "a" at offset 0 is superseded by "a" at offset 2,
 * but key "b" at offset 1 has no newer value and its absence is a loss. */
static void test_checker_cleanup_is_not_loss(void)
{
    struct ks_record_outcome outcomes[6] = {
        acked(0, 0, 0, 3, 0, 1), acked(0, 1, 0, 5, 0, 1), acked(0, 2, 0, 6, 0, 1),
        acked(0, 3, 1, 0, 0, 1), acked(0, 4, 1, 1, 0, 1), acked(0, 5, 1, 2, 0, 1),
    };
    outcomes[3].key = "a";
    outcomes[4].key = "b";
    outcomes[5].key = "a";
    /* p1:2 at offset 6 is missing above the log start: a real loss. */
    struct ks_read_record read[2] = { rec(0, 5, 0, 1), rec(1, 2, 0, 5) };
    struct ks_partition_final parts[2] = {
        { .topic_index = 0, .partition = 0, .log_start_offset = 5, .compacted = false },
        { .topic_index = 0, .partition = 1, .log_start_offset = 0, .compacted = true },
    };
    struct ks_checker_input in;
    init_input(&in, outcomes, 6, read, 2);
    in.partitions = parts;
    in.partition_count = 2;
    struct ks_checker_output out;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.acked_lost, 2);         /* p1:2 (offset 6) and p1:4 (key b) */
    CU_ASSERT_EQUAL(out.records_cleaned_up, 2); /* p1:0 (retention), p1:3 (superseded) */
    CU_ASSERT_EQUAL(out.finals[0], KS_FINAL_CLEANED_UP);
    CU_ASSERT_EQUAL(out.finals[1], KS_FINAL_PRESENT);
    CU_ASSERT_EQUAL(out.final_offsets[1], 5);
    CU_ASSERT_EQUAL(out.finals[2], KS_FINAL_MISSING);
    CU_ASSERT_EQUAL(out.final_offsets[2], -1);
    CU_ASSERT_EQUAL(out.finals[3], KS_FINAL_CLEANED_UP);
    CU_ASSERT_EQUAL(out.finals[4], KS_FINAL_MISSING);
    ks_checker_output_clear(&out);

    /* Without the partition facts every missing record is a loss. */
    init_input(&in, outcomes, 6, read, 2);
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.acked_lost, 4);
    CU_ASSERT_EQUAL(out.records_cleaned_up, 0);
    ks_checker_output_clear(&out);
}

/* Rows are never capped: 10,050 lost records with a gap after each (every
 * other seq) give 10,050 rows, and the one divergent partition still has its
 * row; the rows add up to the counts. */
static void test_checker_rows_never_capped(void)
{
    size_t lost = 10050;
    struct ks_record_outcome *outcomes = g_new(struct ks_record_outcome, lost);
    for (size_t i = 0; i < lost; i++) {
        outcomes[i] = acked(0, (int64_t)(2 * i), 0, (int64_t)(2 * i), 0, 1);
    }
    int64_t offsets[1] = { 0 };
    uint64_t fp_a[1] = { ks_checker_fingerprint(0, 0, 0, 0) };
    uint64_t fp_b[1] = { ks_checker_fingerprint(0, 7, 0, 0) };
    struct ks_replica_read replicas[2] = {
        { 0, 1, 1, 1, offsets, fp_a, 1 },
        { 0, 1, 2, 1, offsets, fp_b, 1 },
    };
    struct ks_checker_input in;
    init_input(&in, outcomes, lost, NULL, 0);
    in.replicas = replicas;
    in.replica_count = 2;
    struct ks_checker_output out;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.acked_lost, (int64_t)lost);
    CU_ASSERT_EQUAL(count_kind(&out, KS_ANOMALY_LOST), lost);
    CU_ASSERT_EQUAL(out.kind_counts[KS_ANOMALY_LOST], (int64_t)lost);
    CU_ASSERT_EQUAL(out.divergent_partitions, 1);
    CU_ASSERT_EQUAL(count_kind(&out, KS_ANOMALY_DIVERGENT), 1);
    ks_checker_output_clear(&out);
    g_free(outcomes);
}

/* A clean history: every acked record read once, in order. */
static void test_checker_clean(void)
{
    struct ks_record_outcome outcomes[4];
    struct ks_read_record read[4];
    for (int i = 0; i < 4; i++) {
        outcomes[i] = acked(0, i, 0, i, (ks_time_ns)i * 1000000, (ks_time_ns)i * 1000000 + 2000000);
        read[i] = rec(0, i, 0, i);
    }
    struct ks_checker_input in;
    init_input(&in, outcomes, 4, read, 4);
    struct ks_checker_output out;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.records_acked, 4);
    CU_ASSERT_EQUAL(out.acked_lost, 0);
    CU_ASSERT_EQUAL(out.duplicates, 0);
    CU_ASSERT_EQUAL(out.reordered, 0);
    CU_ASSERT_EQUAL(out.anomalies->len, 0);
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(out.finals[i], KS_FINAL_PRESENT);
        CU_ASSERT_EQUAL(out.final_offsets[i], i);
    }
    CU_ASSERT_DOUBLE_EQUAL(out.produce_p50_ms, 2.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(out.produce_p99_ms, 2.0, 1e-9);
    ks_checker_output_clear(&out);
}

/* Two acked records missing; a failed record missing does not count; an
 * acks=0 producer's missing record counts even though it was never acked. */
static void test_checker_lost(void)
{
    struct ks_record_outcome outcomes[6] = {
        acked(0, 0, 0, 0, 0, 1),
        acked(0, 1, 0, 1, 0, 1),
        acked(0, 2, 0, 2, 0, 1),
        acked(0, 3, 0, 3, 0, 1),
    };
    outcomes[4] = acked(0, 4, 0, -1, 0, 1);
    outcomes[4].outcome = KS_OUTCOME_FAILED;
    outcomes[5] = acked(1, 0, 0, -1, 0, 0);
    outcomes[5].outcome = KS_OUTCOME_UNKNOWN;
    struct ks_read_record read[2] = { rec(0, 0, 0, 0), rec(0, 1, 0, 2) };
    bool acks_none[2] = { false, true };
    struct ks_checker_input in;
    init_input(&in, outcomes, 6, read, 2);
    in.producer_acks_none = acks_none;
    struct ks_checker_output out;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.acked_lost, 3); /* p1:1, p1:3, p2:0 (acks=0) */
    CU_ASSERT_EQUAL(out.records_failed, 1);
    CU_ASSERT_EQUAL(out.records_unknown, 1);
    CU_ASSERT_EQUAL(count_kind(&out, KS_ANOMALY_LOST), 3); /* p1:1 and p1:3 are not adjacent */
    const struct ks_anomaly *a = first_of(&out, KS_ANOMALY_LOST);
    CU_ASSERT_PTR_NOT_NULL(strstr(a->detail, "p1:1 acked by broker 1 in epoch 0 at offset 1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a->detail, "cause unknown"));
    CU_ASSERT_EQUAL(a->acked_broker, 1);
    CU_ASSERT_EQUAL(a->acked_leader_epoch, 0);
    CU_ASSERT_EQUAL(out.finals[4], KS_FINAL_MISSING); /* failed, and not written either */
    ks_checker_output_clear(&out);
}

/* A fake cause: records acked before t=5 went in event 3 (a truncation),
 * later ones are unexplained. */
static struct ks_cause fake_cause(void *context, const struct ks_record_outcome *o)
{
    int *calls = context;
    (*calls)++;
    if (o->acked_ns < 5) {
        return (struct ks_cause){ "truncation", 3, 9000000000 };
    }
    return (struct ks_cause){ NULL, -1, 0 };
}

/* Consecutive lost records form one range; a change of cause, acking
 * epoch or a gap in the offsets splits it. */
static void test_checker_lost_ranges(void)
{
    struct ks_record_outcome outcomes[8];
    for (int i = 0; i < 8; i++) {
        outcomes[i] = acked(0, 10 + i, 0, 100 + i, (ks_time_ns)i, (ks_time_ns)i);
    }
    outcomes[7].acked_leader_epoch = 1; /* seq 17: another epoch */
    struct ks_checker_input in;
    init_input(&in, outcomes, 8, NULL, 0);
    int calls = 0;
    in.cause_of_lost = fake_cause;
    in.cause_context = &calls;
    struct ks_checker_output out;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(calls, 8);
    CU_ASSERT_EQUAL(out.acked_lost, 8);
    /* seqs 10..14 (truncation), 15..16 (unknown), 17 (epoch 1). */
    CU_ASSERT_EQUAL_FATAL(count_kind(&out, KS_ANOMALY_LOST), 3);
    const struct ks_anomaly *a = &g_array_index(out.anomalies, struct ks_anomaly, 0);
    CU_ASSERT_EQUAL(a->first_seq, 10);
    CU_ASSERT_EQUAL(a->last_seq, 14);
    CU_ASSERT_EQUAL(a->first_offset, 100);
    CU_ASSERT_EQUAL(a->last_offset, 104);
    CU_ASSERT_EQUAL(a->record_count, 5);
    CU_ASSERT_STRING_EQUAL(a->cause, "truncation");
    CU_ASSERT_EQUAL(a->cause_event, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(a->detail, "p1:10..14 acked by broker 1 in epoch 0 at offsets "
                                             "100..104"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a->detail, "cause: truncation (event 4 at 9.000s)"));
    const struct ks_anomaly *b = &g_array_index(out.anomalies, struct ks_anomaly, 1);
    CU_ASSERT_EQUAL(b->first_seq, 15);
    CU_ASSERT_EQUAL(b->record_count, 2);
    CU_ASSERT_PTR_NULL(b->cause);
    const struct ks_anomaly *c = &g_array_index(out.anomalies, struct ks_anomaly, 2);
    CU_ASSERT_EQUAL(c->first_seq, 17);
    CU_ASSERT_EQUAL(c->acked_leader_epoch, 1);
    ks_checker_output_clear(&out);
}

/* A retried batch written twice: two duplicates (one record three times
 * counts 2), and the retry does not make the records between it reordered;
 * final states say which records were duplicated. */
static void test_checker_duplicates(void)
{
    struct ks_record_outcome outcomes[3] = { acked(0, 0, 0, 0, 0, 1), acked(0, 1, 0, 1, 0, 1),
                                             acked(0, 2, 0, 2, 0, 1) };
    struct ks_read_record read[6] = { rec(0, 0, 0, 0), rec(0, 1, 0, 1), rec(0, 2, 0, 1),
                                      rec(0, 3, 0, 2), rec(0, 4, 0, 1), rec(0, 5, -1, 0) };
    struct ks_checker_input in;
    init_input(&in, outcomes, 3, read, 6);
    struct ks_checker_output out;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.duplicates, 2);
    CU_ASSERT_EQUAL(out.acked_lost, 0);
    CU_ASSERT_EQUAL(out.reordered, 0);
    CU_ASSERT_EQUAL(count_kind(&out, KS_ANOMALY_DUPLICATE), 2);
    CU_ASSERT_EQUAL(out.kind_counts[KS_ANOMALY_DUPLICATE], 2);
    CU_ASSERT_EQUAL(out.finals[0], KS_FINAL_PRESENT);
    CU_ASSERT_EQUAL(out.finals[1], KS_FINAL_DUPLICATED);
    CU_ASSERT_EQUAL(out.final_offsets[1], 1);
    int64_t offset = -7;
    CU_ASSERT_EQUAL(ks_checker_final_of(&out, 0, 1, &offset), KS_FINAL_DUPLICATED);
    CU_ASSERT_EQUAL(offset, 1);
    CU_ASSERT_EQUAL(ks_checker_final_of(&out, 0, 9, &offset), KS_FINAL_MISSING);
    CU_ASSERT_EQUAL(offset, -1);
    ks_checker_output_clear(&out);

    /* A whole batch written again forms one row. */
    struct ks_read_record again[6] = { rec(0, 0, 0, 0), rec(0, 1, 0, 1), rec(0, 2, 0, 2),
                                       rec(0, 3, 0, 0), rec(0, 4, 0, 1), rec(0, 5, 0, 2) };
    init_input(&in, outcomes, 3, again, 6);
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.duplicates, 3);
    CU_ASSERT_EQUAL_FATAL(count_kind(&out, KS_ANOMALY_DUPLICATE), 1);
    const struct ks_anomaly *a = first_of(&out, KS_ANOMALY_DUPLICATE);
    CU_ASSERT_EQUAL(a->record_count, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(a->detail, "p1:0..2 at offsets 3..5 copies offsets 0..2"));
    ks_checker_output_clear(&out);
}

/* Seqs 0,3,4,1,2 in partition 0: 3 and 4 appear before 1 (sent earlier), so
 * two records are reordered; another producer's order and another partition
 * do not interfere. */
static void test_checker_reordered(void)
{
    struct ks_read_record read[8] = {
        rec(0, 0, 0, 0), rec(0, 1, 0, 3), rec(0, 2, 1, 7), rec(0, 3, 0, 4),
        rec(0, 4, 0, 1), rec(0, 5, 0, 2), rec(1, 0, 0, 5), rec(1, 1, 0, 6),
    };
    struct ks_checker_input in;
    init_input(&in, NULL, 0, read, 8);
    struct ks_checker_output out;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.reordered, 2);
    CU_ASSERT_EQUAL(out.duplicates, 0);
    CU_ASSERT_EQUAL(count_kind(&out, KS_ANOMALY_REORDERED), 2); /* offsets 1 and 3: not adjacent */
    CU_ASSERT_PTR_NOT_NULL(strstr(first_of(&out, KS_ANOMALY_REORDERED)->detail,
                                  "p1:3 at offset 1 before p1:1 at offset 4"));
    ks_checker_output_clear(&out);
}

/* Replicas that agree below the common HW are fine even if they differ
 * above it; one that holds another record at offset 1 is divergent. */
static void test_checker_divergent(void)
{
    int64_t offsets[3] = { 0, 1, 2 };
    uint64_t fp_a[3] = { ks_checker_fingerprint(0, 0, 0, 0), ks_checker_fingerprint(0, 1, 0, 1),
                         ks_checker_fingerprint(0, 2, 0, 2) };
    uint64_t fp_b[3] = { fp_a[0], fp_a[1], ks_checker_fingerprint(0, 9, 0, 2) };
    uint64_t fp_c[3] = { fp_a[0], ks_checker_fingerprint(0, 8, 0, 1), fp_a[2] };
    struct ks_replica_read replicas[5] = {
        { 0, 0, 1, 3, offsets, fp_a, 3 }, { 0, 0, 2, 2, offsets, fp_b, 3 },
        { 0, 1, 1, 3, offsets, fp_a, 3 }, { 0, 1, 2, 3, offsets, fp_c, 3 },
        { 0, 1, 3, 3, offsets, fp_a, 3 },
    };
    struct ks_checker_input in;
    init_input(&in, NULL, 0, NULL, 0);
    in.replicas = replicas;
    in.replica_count = 5;
    struct ks_checker_output out;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.divergent_partitions, 1);
    CU_ASSERT_EQUAL(count_kind(&out, KS_ANOMALY_DIVERGENT), 1);
    CU_ASSERT_EQUAL(g_array_index(out.anomalies, struct ks_anomaly, 0).partition, 1);
    ks_checker_output_clear(&out);
}

/* The tracker: the first reported position is the group's start, a
 * processed record moves it on, a forward jump is a skip, a backward one
 * (a rewind) is not; commits do not move it. */
static void test_checker_group_tracker(void)
{
    struct ks_group_tracker t;
    ks_group_tracker_init(&t);
    ks_group_tracker_position(&t, 0, 0, 0, 10, KS_POSITION_RESET, 100, 4);
    for (int64_t o = 10; o < 15; o++) {
        ks_group_tracker_processed(&t, 0, 0, 0, o);
    }
    ks_group_tracker_position(&t, 0, 0, 0, 40, KS_POSITION_COMMITTED, 200, -1);
    ks_group_tracker_position(&t, 0, 0, 0, 20, KS_POSITION_ASSIGNED, 300, -1);
    ks_group_tracker_position(&t, 0, 0, 0, 12, KS_POSITION_REWIND, 400, 9);
    ks_group_tracker_processed(&t, 0, 0, 0, 12);
    ks_group_tracker_processed(&t, 1, 0, 0, 3); /* another group, never positioned */
    CU_ASSERT_EQUAL_FATAL(t.cursors->len, 2);
    const struct ks_group_cursor *c = &g_array_index(t.cursors, struct ks_group_cursor, 0);
    CU_ASSERT_EQUAL(c->first_position, 10);
    CU_ASSERT_EQUAL(c->first_ns, 100);
    CU_ASSERT_EQUAL(c->first_event, 4);
    CU_ASSERT_EQUAL(c->position, 13);
    CU_ASSERT_EQUAL_FATAL(t.skips->len, 1);
    const struct ks_group_skip *s = &g_array_index(t.skips, struct ks_group_skip, 0);
    CU_ASSERT_EQUAL(s->from_offset, 15);
    CU_ASSERT_EQUAL(s->to_offset, 20);
    CU_ASSERT_EQUAL(s->kind, KS_POSITION_ASSIGNED);
    CU_ASSERT_EQUAL(g_array_index(t.cursors, struct ks_group_cursor, 1).position, 4);
    ks_group_tracker_deinit(&t);
}

/* Group g1 reads partition 0 (offsets 0..9): it started at offset 2
 * (auto.offset.reset=latest), processed 2..4, skipped 5..6 by an offset
 * reset, processed 7, and stands at 8 when the run ends: 0..1 are out of
 * scope, 5..6 lost (cause offset_reset), 8..9 unseen. Group g2 (two
 * members) processed 0,1,1,2 of partition 0 and has no position: one
 * duplicate processing, and 3..9 unseen. */
static void test_checker_consumed(void)
{
    struct ks_read_record read[10];
    for (int i = 0; i < 10; i++) {
        read[i] = rec(0, i, 0, i);
    }
    struct ks_consumed_record consumed[8] = {
        { .consumer_index = 0, .partition = 0, .offset = 2, .producer_index = 0, .seq = 2 },
        { .consumer_index = 0, .partition = 0, .offset = 3, .producer_index = 0, .seq = 3 },
        { .consumer_index = 0, .partition = 0, .offset = 4, .producer_index = 0, .seq = 4 },
        { .consumer_index = 0, .partition = 0, .offset = 7, .producer_index = 0, .seq = 7 },
        { .consumer_index = 1, .partition = 0, .offset = 0, .producer_index = 0, .seq = 0 },
        { .consumer_index = 1, .partition = 0, .offset = 1, .producer_index = 0, .seq = 1 },
        { .consumer_index = 2, .partition = 0, .offset = 1, .producer_index = 0, .seq = 1 },
        { .consumer_index = 2, .partition = 0, .offset = 2, .producer_index = 0, .seq = 2 },
    };
    struct ks_group_tracker t;
    ks_group_tracker_init(&t);
    ks_group_tracker_position(&t, 0, 0, 0, 2, KS_POSITION_RESET, 1000, 0);
    for (int i = 0; i < 3; i++) {
        ks_group_tracker_processed(&t, 0, 0, 0, consumed[i].offset);
    }
    ks_group_tracker_position(&t, 0, 0, 0, 7, KS_POSITION_RESET, 5000000000, 6);
    ks_group_tracker_processed(&t, 0, 0, 0, 7);
    int32_t consumer_group[3] = { 0, 1, 1 };
    int32_t consumer_topic[3] = { 0, 0, 0 };
    struct ks_checker_input in;
    init_input(&in, NULL, 0, read, 10);
    in.consumed = consumed;
    in.consumed_count = 8;
    in.consumer_group = consumer_group;
    in.consumer_topic = consumer_topic;
    in.consumer_count = 3;
    in.group_count = 2;
    in.group_names = group_names;
    in.cursors = (const struct ks_group_cursor *)(void *)t.cursors->data;
    in.cursor_count = t.cursors->len;
    in.skips = (const struct ks_group_skip *)(void *)t.skips->data;
    in.skip_count = t.skips->len;
    struct ks_checker_output out;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.consumed_lost, 2);
    CU_ASSERT_EQUAL(out.consumed_unseen, 2 + 7);
    CU_ASSERT_EQUAL(out.consumed_duplicates, 1);
    CU_ASSERT_EQUAL(out.out_of_scope, 2);
    CU_ASSERT_EQUAL(out.cursor_out_of_scope[0], 2);
    const struct ks_anomaly *lost = first_of(&out, KS_ANOMALY_CONSUMED_LOST);
    CU_ASSERT_EQUAL(lost->group, 0);
    CU_ASSERT_EQUAL(lost->first_offset, 5);
    CU_ASSERT_EQUAL(lost->last_offset, 6);
    CU_ASSERT_STRING_EQUAL(lost->cause, "offset_reset");
    CU_ASSERT_EQUAL(lost->cause_event, 6);
    CU_ASSERT_PTR_NOT_NULL(strstr(lost->detail, "group g1 never processed offsets 5..6"));
    CU_ASSERT_EQUAL(count_kind(&out, KS_ANOMALY_CONSUMED_UNSEEN), 2);
    const struct ks_anomaly *unseen = first_of(&out, KS_ANOMALY_CONSUMED_UNSEEN);
    CU_ASSERT_EQUAL(unseen->first_offset, 8);
    CU_ASSERT_EQUAL(unseen->last_offset, 9);
    CU_ASSERT_PTR_NOT_NULL(strstr(unseen->detail, "group g1 had not reached offsets 8..9"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(first_of(&out, KS_ANOMALY_CONSUMED_DUPLICATE)->detail, "group g2"));
    ks_checker_output_clear(&out);
    ks_group_tracker_deinit(&t);
}

/* A group in a fault-free run that is merely slow: everything it has not
 * processed is at or after its position, so nothing is lost. */
static void test_checker_slow_group_loses_nothing(void)
{
    struct ks_read_record read[100];
    struct ks_consumed_record consumed[40];
    struct ks_group_tracker t;
    ks_group_tracker_init(&t);
    ks_group_tracker_position(&t, 0, 0, 0, 0, KS_POSITION_RESET, 0, -1);
    for (int i = 0; i < 100; i++) {
        read[i] = rec(0, i, 0, i);
    }
    for (int i = 0; i < 40; i++) {
        consumed[i] = (struct ks_consumed_record){
            .consumer_index = 0, .partition = 0, .offset = i, .producer_index = 0, .seq = i
        };
        ks_group_tracker_processed(&t, 0, 0, 0, i);
    }
    int32_t consumer_group[1] = { 0 };
    int32_t consumer_topic[1] = { 0 };
    struct ks_checker_input in;
    init_input(&in, NULL, 0, read, 100);
    in.consumed = consumed;
    in.consumed_count = 40;
    in.consumer_group = consumer_group;
    in.consumer_topic = consumer_topic;
    in.consumer_count = 1;
    in.group_count = 1;
    in.group_names = group_names;
    in.cursors = (const struct ks_group_cursor *)(void *)t.cursors->data;
    in.cursor_count = t.cursors->len;
    struct ks_checker_output out;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.consumed_lost, 0);
    CU_ASSERT_EQUAL(out.consumed_unseen, 60);
    CU_ASSERT_EQUAL(count_kind(&out, KS_ANOMALY_CONSUMED_UNSEEN), 1);
    ks_checker_output_clear(&out);
    ks_group_tracker_deinit(&t);
}

static void test_checker_percentile(void)
{
    int64_t values[100];
    for (int i = 0; i < 100; i++) {
        values[i] = 100 - i; /* unsorted on purpose */
    }
    CU_ASSERT_EQUAL(ks_checker_percentile(values, 100, 50), 50);
    CU_ASSERT_EQUAL(ks_checker_percentile(values, 100, 99), 99);
    CU_ASSERT_EQUAL(ks_checker_percentile(values, 100, 100), 100);
    int64_t one = 7;
    CU_ASSERT_EQUAL(ks_checker_percentile(&one, 1, 99), 7);
    CU_ASSERT_EQUAL(ks_checker_percentile(NULL, 0, 50), 0);
}

/* Transactions of producer p1 (transactional) and two consumers of topic 0:
 * consumer 0 in group g1 (read_committed), consumer 1 in g2
 * (read_uncommitted). */
static void init_two_groups(struct ks_checker_input *in, const struct ks_txn_outcome *txns,
                            size_t txn_count, const struct ks_consumed_record *consumed,
                            size_t consumed_count)
{
    static const bool transactional[2] = { true, false };
    static const bool read_committed[2] = { true, false };
    static const int32_t consumer_group[2] = { 0, 1 };
    static const int32_t consumer_topic[2] = { 0, 0 };
    in->producer_transactional = transactional;
    in->txns = txns;
    in->txn_count = txn_count;
    in->consumed = consumed;
    in->consumed_count = consumed_count;
    in->consumer_group = consumer_group;
    in->consumer_topic = consumer_topic;
    in->consumer_read_committed = read_committed;
    in->consumer_count = 2;
    in->group_count = 2;
    in->group_names = group_names;
}

/* Transactions: producer p1 is transactional; its records 0..3 are a
 * committed transaction, 4..7 an aborted one, 8..9 one that never ended. The
 * final read holds 0, 1, 3 (committed), 4, 5 (an ABORT marker follows) and
 * 8, 9 (no marker: open). Only the committed record 2 counts as lost; the
 * read_committed group g1 processing aborted record 4 is one aborted read,
 * the read_uncommitted group g2 processing 4 and 5 two aborted_seen; g1 is not
 * expected to process 5 (aborted) and has not reached 8, 9 (held back by the
 * open transaction, which is the one hanging). */
static void test_checker_transactions(void)
{
    struct ks_record_outcome outcomes[10];
    for (int i = 0; i < 10; i++) {
        outcomes[i] = acked(0, i, 0, -1, 0, 1000);
    }
    static const int64_t seqs[7] = { 0, 1, 3, 4, 5, 8, 9 };
    static const int32_t states[7] = { KS_READ_TXN_COMMITTED, KS_READ_TXN_COMMITTED,
                                       KS_READ_TXN_COMMITTED, KS_READ_TXN_ABORTED,
                                       KS_READ_TXN_ABORTED,   KS_READ_TXN_OPEN,
                                       KS_READ_TXN_OPEN };
    struct ks_read_record read[7];
    for (int i = 0; i < 7; i++) {
        read[i] = rec(0, i, 0, seqs[i]);
        read[i].txn = states[i];
    }
    struct ks_consumed_record consumed[11];
    size_t consumed_count = 0;
    for (int i = 0; i < 4; i++) { /* g1: 0, 1, 3 and the aborted 4 */
        consumed[consumed_count++] = (struct ks_consumed_record){
            .consumer_index = 0, .offset = i, .producer_index = 0, .seq = seqs[i]
        };
    }
    for (int i = 0; i < 7; i++) { /* g2: everything */
        consumed[consumed_count++] = (struct ks_consumed_record){
            .consumer_index = 1, .offset = i, .producer_index = 0, .seq = seqs[i]
        };
    }
    struct ks_txn_outcome txns[2] = { { 0, true, 0, 4 }, { 0, false, 4, 8 } };
    struct ks_checker_input in;
    init_input(&in, outcomes, 10, read, 7);
    init_two_groups(&in, txns, 2, consumed, consumed_count);
    struct ks_checker_output out;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.acked_lost, 1);
    CU_ASSERT_EQUAL(first_of(&out, KS_ANOMALY_LOST)->first_seq, 2);
    CU_ASSERT_EQUAL(out.txn_committed, 1);
    CU_ASSERT_EQUAL(out.txn_aborted, 1);
    CU_ASSERT_EQUAL(out.aborted_read, 1);
    CU_ASSERT_EQUAL(out.aborted_seen, 2);
    CU_ASSERT_EQUAL(out.txn_hanging, 1);
    CU_ASSERT_EQUAL(out.consumed_unseen, 2); /* g1: 8 and 9; g2 has processed all */
    CU_ASSERT_EQUAL(out.consumed_lost, 0);
    /* One row each: g1's aborted read of offset 3 (record 4), and the open
     * transaction at offsets 5..6 counted once. */
    const struct ks_anomaly *aborted = first_of(&out, KS_ANOMALY_ABORTED_READ);
    CU_ASSERT_EQUAL(aborted->kind, KS_ANOMALY_ABORTED_READ);
    CU_ASSERT_EQUAL(aborted->group, 0);
    CU_ASSERT_EQUAL(aborted->first_offset, 3);
    CU_ASSERT_EQUAL(aborted->last_offset, 3);
    CU_ASSERT_EQUAL(aborted->record_count, 1);
    const struct ks_anomaly *hanging = first_of(&out, KS_ANOMALY_TXN_HANGING);
    CU_ASSERT_EQUAL(hanging->kind, KS_ANOMALY_TXN_HANGING);
    CU_ASSERT_EQUAL(hanging->producer_index, 0);
    CU_ASSERT_EQUAL(hanging->first_offset, 5);
    CU_ASSERT_EQUAL(hanging->last_offset, 6);
    CU_ASSERT_EQUAL(hanging->first_seq, 8);
    CU_ASSERT_EQUAL(hanging->last_seq, 9);
    CU_ASSERT_EQUAL(hanging->record_count, 2);
    CU_ASSERT_EQUAL(out.kind_counts[KS_ANOMALY_ABORTED_READ], 1);
    CU_ASSERT_EQUAL(out.kind_counts[KS_ANOMALY_TXN_HANGING], 1);
    ks_checker_output_clear(&out);
    /* The same records from a producer that is not transactional: every
     * missing acked record is lost, and nothing is an aborted read. */
    in.producer_transactional = NULL;
    for (int i = 0; i < 7; i++) {
        read[i].txn = KS_READ_TXN_NONE;
    }
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.acked_lost, 3);
    CU_ASSERT_EQUAL(out.aborted_read, 0);
    CU_ASSERT_EQUAL(out.aborted_seen, 0);
    CU_ASSERT_EQUAL(out.txn_hanging, 0);
    CU_ASSERT_EQUAL(first_of(&out, KS_ANOMALY_ABORTED_READ)->kind, KS_ANOMALY_KIND_COUNT);
    CU_ASSERT_EQUAL(first_of(&out, KS_ANOMALY_TXN_HANGING)->kind, KS_ANOMALY_KIND_COUNT);
    CU_ASSERT_EQUAL(out.consumed_unseen, 3);
    ks_checker_output_clear(&out);
}

/* eos_missing and eos_duplicates: a processor reads topic 0 and writes
 * topic 1. Input p1:0..4 (p1:4 in an aborted transaction, so out of
 * scope); outputs name p1:0 once, p1:1 twice (one more copy inside an
 * aborted transaction, not counted), p1:2 three times, and nothing names
 * p1:3: one missing, three duplicates. */
static void test_processor_outputs(void)
{
    struct ks_read_record read[] = {
        rec(0, 0, 0, 0), rec(0, 1, 0, 1), rec(0, 2, 0, 2), rec(0, 3, 0, 3), rec(0, 4, 0, 4),
        rec(0, 0, 1, 0), rec(0, 1, 1, 1), rec(0, 2, 1, 2), rec(0, 3, 1, 3), rec(0, 4, 1, 4),
        rec(0, 5, 1, 5), rec(0, 6, 1, 6), rec(0, 7, 1, 7),
    };
    read[4].txn = KS_READ_TXN_ABORTED;
    /* Outputs: topic 1, produced by p2 (index 1), naming their inputs. */
    static const int64_t sources[] = { 0, 1, 1, 2, 2, 2, 4, 1 };
    for (int i = 0; i < 8; i++) {
        read[5 + i].topic_index = 1;
        read[5 + i].source_producer = 1; /* p1 + 1 */
        read[5 + i].source_seq = sources[i];
        read[5 + i].txn = KS_READ_TXN_COMMITTED;
    }
    read[12].txn = KS_READ_TXN_ABORTED; /* the third copy of p1:1 */
    static const char *const two_topics[] = { "input", "output" };
    struct ks_checker_input in;
    init_input(&in, NULL, 0, read, G_N_ELEMENTS(read));
    in.topic_names = two_topics;
    struct ks_checker_processor processor = { 0, 1 };
    in.processors = &processor;
    in.processor_count = 1;
    struct ks_checker_output out;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.eos_missing, 1);    /* p1:3 */
    CU_ASSERT_EQUAL(out.eos_duplicates, 3); /* p1:1 once more, p1:2 twice more */
    /* The rows: which input is missing, and which outputs repeat which input. */
    CU_ASSERT_EQUAL(count_kind(&out, KS_ANOMALY_EOS_MISSING), 1);
    const struct ks_anomaly *missing = first_of(&out, KS_ANOMALY_EOS_MISSING);
    CU_ASSERT_EQUAL(missing->topic_index, 0);
    CU_ASSERT_EQUAL(missing->producer_index, 0);
    CU_ASSERT_EQUAL(missing->first_offset, 3);
    CU_ASSERT_EQUAL(missing->last_offset, 3);
    CU_ASSERT_EQUAL(missing->first_seq, 3);
    CU_ASSERT_EQUAL(missing->record_count, 1);
    CU_ASSERT_EQUAL(count_kind(&out, KS_ANOMALY_EOS_DUPLICATE), 2);
    const struct ks_anomaly *dup = first_of(&out, KS_ANOMALY_EOS_DUPLICATE);
    CU_ASSERT_EQUAL(dup->topic_index, 1); /* p1:1's outputs at 1 and 2 (7 is aborted) */
    CU_ASSERT_EQUAL(dup->first_seq, 1);
    CU_ASSERT_EQUAL(dup->first_offset, 1);
    CU_ASSERT_EQUAL(dup->last_offset, 2);
    CU_ASSERT_EQUAL(dup->record_count, 1);
    const struct ks_anomaly *dup2 = dup + 1; /* rows of one kind are adjacent */
    CU_ASSERT_EQUAL(dup2->kind, KS_ANOMALY_EOS_DUPLICATE);
    CU_ASSERT_EQUAL(dup2->first_seq, 2);
    CU_ASSERT_EQUAL(dup2->first_offset, 3);
    CU_ASSERT_EQUAL(dup2->last_offset, 5);
    CU_ASSERT_EQUAL(dup2->record_count, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(dup2->detail, "output-0@3, output-0@4, output-0@5"));
    CU_ASSERT_EQUAL(out.kind_counts[KS_ANOMALY_EOS_DUPLICATE], 3);
    ks_checker_output_clear(&out);
    /* Two processors of one pipeline (two members of a group) count it once. */
    struct ks_checker_processor two[] = { { 0, 1 }, { 0, 1 } };
    in.processors = two;
    in.processor_count = 2;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.eos_missing, 1);
    CU_ASSERT_EQUAL(out.eos_duplicates, 3);
    ks_checker_output_clear(&out);
    /* Without the processor, the same read counts nothing. */
    in.processor_count = 0;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.eos_missing, 0);
    CU_ASSERT_EQUAL(out.eos_duplicates, 0);
    ks_checker_output_clear(&out);
}

/* premature_read: records visible out of transaction order. Partition 0
 * holds a committed transaction (offsets 0..2, its COMMIT marker written at
 * 5 s), a non-transactional record (3) and a second committed transaction
 * (4, 5: marker at 8 s). The read_committed group g1 processes 0..2 at 6 s
 * (after their marker: fine), 4 at 7 s and 5 at 7.5 s (before theirs: both
 * premature, one row), 3 at 7 s (no transaction: never premature). The
 * read_uncommitted group g2 reads 4 at 1 s: Kafka's documented behaviour for
 * it, not counted. Then the same history with every processing after its
 * marker, and with the marker's time unknown, counts nothing. */
static void test_checker_premature_read(void)
{
    const ks_time_ns second = 1000000000;
    struct ks_read_record read[6];
    for (int i = 0; i < 6; i++) {
        read[i] = rec(0, i, 0, i);
        read[i].txn = KS_READ_TXN_COMMITTED;
        read[i].marker_ns = i < 3 ? 5 * second : 8 * second;
    }
    read[3].txn = KS_READ_TXN_NONE;
    read[3].marker_ns = 0;
    static const ks_time_ns at[6] = { 6 * second, 6 * second, 6 * second,
                                      7 * second, 7 * second, 7 * second + second / 2 };
    struct ks_consumed_record consumed[7];
    for (int i = 0; i < 6; i++) {
        consumed[i] = (struct ks_consumed_record){
            .consumer_index = 0, .offset = i, .producer_index = 0, .seq = i, .at_ns = at[i]
        };
    }
    consumed[6] = (struct ks_consumed_record){
        .consumer_index = 1, .offset = 4, .producer_index = 0, .seq = 4, .at_ns = second
    };
    struct ks_txn_outcome txns[2] = { { 0, true, 0, 3 }, { 0, true, 4, 6 } };
    struct ks_checker_input in;
    init_input(&in, NULL, 0, read, 6);
    init_two_groups(&in, txns, 2, consumed, 7);
    struct ks_checker_output out;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.premature_read, 2);
    CU_ASSERT_EQUAL(out.aborted_read, 0);
    CU_ASSERT_EQUAL(count_kind(&out, KS_ANOMALY_PREMATURE_READ), 1);
    const struct ks_anomaly *row = first_of(&out, KS_ANOMALY_PREMATURE_READ);
    CU_ASSERT_EQUAL(row->group, 0);
    CU_ASSERT_EQUAL(row->first_offset, 4);
    CU_ASSERT_EQUAL(row->last_offset, 5);
    CU_ASSERT_EQUAL(row->record_count, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(row->detail, "group g1 (read_committed)"));
    ks_checker_output_clear(&out);
    /* Read at the marker's time or later: in order. */
    consumed[4].at_ns = 8 * second;
    consumed[5].at_ns = 9 * second;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.premature_read, 0);
    CU_ASSERT_EQUAL(first_of(&out, KS_ANOMALY_PREMATURE_READ)->kind, KS_ANOMALY_KIND_COUNT);
    ks_checker_output_clear(&out);
    /* A marker whose time is not known judges nothing. */
    consumed[4].at_ns = 7 * second;
    read[4].marker_ns = 0;
    read[5].marker_ns = 0;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.premature_read, 0);
    ks_checker_output_clear(&out);
    /* A record replaced at the offset read (a truncation) is not judged. */
    read[4].marker_ns = 8 * second;
    read[4].seq = 40;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.premature_read, 0);
    ks_checker_output_clear(&out);
}

void ks_test_register_checker(void)
{
    static const struct ks_test_case cases[] = {
        { "processor outputs: eos_missing and eos_duplicates", test_processor_outputs },
        { "clean", test_checker_clean },
        { "lost", test_checker_lost },
        { "lost ranges", test_checker_lost_ranges },
        { "cleanup is not loss", test_checker_cleanup_is_not_loss },
        { "rows never capped", test_checker_rows_never_capped },
        { "duplicates", test_checker_duplicates },
        { "reordered", test_checker_reordered },
        { "divergent", test_checker_divergent },
        { "group tracker", test_checker_group_tracker },
        { "consumed", test_checker_consumed },
        { "slow group loses nothing", test_checker_slow_group_loses_nothing },
        { "percentile", test_checker_percentile },
        { "transactions", test_checker_transactions },
        { "premature read", test_checker_premature_read },
    };
    KS_TEST_ADD_SUITE("sim/checker", cases);
}
