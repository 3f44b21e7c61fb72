/* tests/sim/test_checker.c: the record-level metrics on hand-built inputs.
 *
 * Goal: each metric of sim/checker.h counts exactly the anomalies its
 * definition names, and nothing else. Method: build small arrays of producer
 * outcomes, final-read records, replica fingerprints and consumer
 * processings by hand, with a known number of lost, duplicated, reordered
 * and divergent records, run the checker and compare every count and the
 * anomaly rows; a clean input must give zeros. */
#include "../../sim/checker.h"
#include "../testlib.h"

#include <string.h>

static const char *const producer_names[] = { "p1", "p2" };
static const char *const topic_names[] = { "orders" };

static struct ks_record_outcome acked(int32_t producer, int64_t seq, int32_t partition,
                                      int64_t offset, ks_time_ns sent_ns, ks_time_ns acked_ns)
{
    struct ks_record_outcome o = { .producer_index = producer, .seq = seq, .key = NULL,
                                   .topic_index = 0, .partition = partition, .offset = offset,
                                   .sent_ns = sent_ns, .acked_ns = acked_ns,
                                   .outcome = KS_OUTCOME_ACKED };
    return o;
}

static struct ks_read_record rec(int32_t partition, int64_t offset, int32_t producer, int64_t seq)
{
    struct ks_read_record r = { 0, partition, offset, producer, seq };
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

static size_t count_kind(const struct ks_checker_output *out, const char *kind)
{
    size_t n = 0;
    for (guint i = 0; i < out->anomalies->len; i++) {
        if (strcmp(g_array_index(out->anomalies, struct ks_anomaly, i).kind, kind) == 0) {
            n++;
        }
    }
    return n;
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
    ks_checker_output_clear(&out);

    /* Without the partition facts every missing record is a loss. */
    init_input(&in, outcomes, 6, read, 2);
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.acked_lost, 4);
    CU_ASSERT_EQUAL(out.records_cleaned_up, 0);
    ks_checker_output_clear(&out);
}

/* Rows are capped per kind: 10,050 lost records keep 10,000 "lost" rows and
 * still leave room for the one divergent partition (the counts stay exact). */
static void test_checker_rows_capped_per_kind(void)
{
    size_t lost = KS_CHECKER_ANOMALY_COUNT_MAX + 50;
    struct ks_record_outcome *outcomes = g_new(struct ks_record_outcome, lost);
    for (size_t i = 0; i < lost; i++) {
        outcomes[i] = acked(0, (int64_t)i, 0, (int64_t)i, 0, 1);
    }
    int64_t offsets[1] = { 0 };
    uint64_t fp_a[1] = { ks_checker_fingerprint(0, 0, 0, 0) };
    uint64_t fp_b[1] = { ks_checker_fingerprint(0, 7, 0, 0) };
    struct ks_replica_read replicas[2] = {
        { 0, 1, 1, 1, offsets, fp_a, 1 }, { 0, 1, 2, 1, offsets, fp_b, 1 },
    };
    struct ks_checker_input in;
    init_input(&in, outcomes, lost, NULL, 0);
    in.replicas = replicas;
    in.replica_count = 2;
    struct ks_checker_output out;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.acked_lost, (int64_t)lost);
    CU_ASSERT_EQUAL(count_kind(&out, "lost"), KS_CHECKER_ANOMALY_COUNT_MAX);
    CU_ASSERT_EQUAL(out.divergent_partitions, 1);
    CU_ASSERT_EQUAL(count_kind(&out, "divergent"), 1);
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
    CU_ASSERT_DOUBLE_EQUAL(out.produce_p50_ms, 2.0, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(out.produce_p99_ms, 2.0, 1e-9);
    ks_checker_output_clear(&out);
}

/* Two acked records missing; a failed record missing does not count; an
 * acks=0 producer's missing record counts even though it was never acked. */
static void test_checker_lost(void)
{
    struct ks_record_outcome outcomes[6] = {
        acked(0, 0, 0, 0, 0, 1), acked(0, 1, 0, 1, 0, 1), acked(0, 2, 0, 2, 0, 1),
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
    CU_ASSERT_EQUAL(count_kind(&out, "lost"), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_array_index(out.anomalies, struct ks_anomaly, 0).detail,
                                  "p1:1"));
    ks_checker_output_clear(&out);
}

/* A retried batch written twice: two duplicates (one record three times
 * counts 2), and the retry does not make the records between it reordered. */
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
    CU_ASSERT_EQUAL(count_kind(&out, "duplicate"), 2);
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
    CU_ASSERT_EQUAL(count_kind(&out, "reordered"), 2);
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
    CU_ASSERT_EQUAL(count_kind(&out, "divergent"), 1);
    CU_ASSERT_EQUAL(g_array_index(out.anomalies, struct ks_anomaly, 0).partition, 1);
    ks_checker_output_clear(&out);
}

/* Group 0 (two members) processes records 0,1,1,2 of 0..3: one lost (3), one
 * duplicate. Group 1 reads another topic and is not charged for orders. */
static void test_checker_consumed(void)
{
    struct ks_read_record read[4] = { rec(0, 0, 0, 0), rec(0, 1, 0, 1), rec(0, 2, 0, 2),
                                      rec(0, 3, 0, 3) };
    struct ks_consumed_record consumed[4] = {
        { .consumer_index = 0, .producer_index = 0, .seq = 0 },
        { .consumer_index = 0, .producer_index = 0, .seq = 1 },
        { .consumer_index = 1, .producer_index = 0, .seq = 1 },
        { .consumer_index = 1, .producer_index = 0, .seq = 2 },
    };
    int32_t consumer_group[3] = { 0, 0, 1 };
    int32_t consumer_topic[3] = { 0, 0, 5 };
    struct ks_checker_input in;
    init_input(&in, NULL, 0, read, 4);
    in.consumed = consumed;
    in.consumed_count = 4;
    in.consumer_group = consumer_group;
    in.consumer_topic = consumer_topic;
    in.consumer_count = 3;
    in.group_count = 2;
    struct ks_checker_output out;
    ks_checker_run(&in, &out);
    CU_ASSERT_EQUAL(out.consumed_lost, 1);
    CU_ASSERT_EQUAL(out.consumed_duplicates, 1);
    ks_checker_output_clear(&out);
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

void ks_test_register_checker(void)
{
    static const struct ks_test_case cases[] = {
        { "clean", test_checker_clean },
        { "lost", test_checker_lost },
        { "cleanup is not loss", test_checker_cleanup_is_not_loss },
        { "rows capped per kind", test_checker_rows_capped_per_kind },
        { "duplicates", test_checker_duplicates },
        { "reordered", test_checker_reordered },
        { "divergent", test_checker_divergent },
        { "consumed", test_checker_consumed },
        { "percentile", test_checker_percentile },
    };
    KS_TEST_ADD_SUITE("sim/checker", cases);
}
