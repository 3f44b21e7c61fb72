/* tests/sim/test_availability.c: the clients' view of unavailability
 * (produce_unavailable_ms) and the names of the reasons.
 *
 * Goal: a partition counts from the moment a record sent to it has waited
 * longer than the threshold until that record's outcome, overlapping waits
 * count once, waits end at the end of `duration`, and partitions add up.
 * Method: hand-built outcomes with known send and outcome times; every
 * expected figure is computed in the comment next to it. The cluster's view
 * needs a running cluster and is tested by whole runs in tests/sim/test_run.c. */
#include "../../sim/availability.h"
#include "../testlib.h"

#include <string.h>

#define MS (1000000ULL)
#define S  (1000000000ULL)

static struct ks_record_outcome outcome(int32_t partition, ks_time_ns sent_ns, ks_time_ns end_ns,
                                        enum ks_record_outcome_kind kind)
{
    struct ks_record_outcome o = { .producer_index = 0,
                                   .seq = 0,
                                   .topic_index = 0,
                                   .partition = partition,
                                   .offset = -1,
                                   .sent_ns = sent_ns,
                                   .acked_ns = end_ns,
                                   .outcome = kind,
                                   .acked_broker = -1,
                                   .acked_leader_epoch = -1 };
    return o;
}

static void test_availability_produce(void)
{
    struct ks_record_outcome outcomes[] = {
        /* partition 0: waits 10.0+1 .. 13.0 and 10.5+1 .. 14.0 overlap: 11.0 .. 14.0 = 3 s */
        outcome(0, 10 * S, 13 * S, KS_OUTCOME_ACKED),
        outcome(0, 10 * S + 500 * MS, 14 * S, KS_OUTCOME_FAILED),
        /* partition 0 again, apart: 20.0+1 .. 21.5 = 0.5 s */
        outcome(0, 20 * S, 21 * S + 500 * MS, KS_OUTCOME_UNKNOWN),
        /* partition 1: exactly the threshold does not count; 999 ms neither */
        outcome(1, 5 * S, 6 * S, KS_OUTCOME_ACKED),
        outcome(1, 7 * S, 7 * S + 999 * MS, KS_OUTCOME_ACKED),
        /* partition 1: its outcome after the end (30 s): 29.0 .. 30.0 = 1 s */
        outcome(1, 28 * S, 40 * S, KS_OUTCOME_ACKED),
        /* no partition (the producer never had metadata), another topic: left out */
        outcome(-1, 0, 20 * S, KS_OUTCOME_FAILED),
    };
    struct ks_record_outcome other_topic = outcome(0, 0, 20 * S, KS_OUTCOME_ACKED);
    other_topic.topic_index = 1;
    size_t count = G_N_ELEMENTS(outcomes);
    struct ks_record_outcome all[G_N_ELEMENTS(outcomes) + 1];
    memcpy(all, outcomes, sizeof outcomes);
    all[count] = other_topic;
    GArray *intervals = g_array_new(FALSE, FALSE, sizeof(struct ks_unavailable_interval));
    uint64_t total = ks_availability_produce(all, count + 1, 1, 1 * S, 30 * S, intervals);
    CU_ASSERT_EQUAL(total, 3 * S + 500 * MS + 1 * S);
    CU_ASSERT_EQUAL_FATAL(intervals->len, 3);
    const struct ks_unavailable_interval *a =
        &g_array_index(intervals, struct ks_unavailable_interval, 0);
    CU_ASSERT_EQUAL(a->partition, 0);
    CU_ASSERT_EQUAL(a->start_ns, 11 * S);
    CU_ASSERT_EQUAL(a->end_ns, 14 * S);
    CU_ASSERT_TRUE(a->produce_view);
    CU_ASSERT_EQUAL(a->reason, KS_UNAVAILABLE_RECORDS_WAITING);
    const struct ks_unavailable_interval *c =
        &g_array_index(intervals, struct ks_unavailable_interval, 2);
    CU_ASSERT_EQUAL(c->partition, 1);
    CU_ASSERT_EQUAL(c->end_ns, 30 * S);
    /* A shorter threshold sees more. 500 ms: partition 0 10.5 .. 14.0 and
     * 20.5 .. 21.5 (4.5 s); partition 1 5.5 .. 6.0, 7.5 .. 7.999 and
     * 28.5 .. 30.0 (2.499 s). */
    uint64_t shorter = ks_availability_produce(all, count + 1, 1, 500 * MS, 30 * S, NULL);
    CU_ASSERT_EQUAL(shorter, 4500 * MS + 2499 * MS);
    g_array_free(intervals, TRUE);
}

/* Nothing waited: zero, and no interval. */
static void test_availability_produce_quiet(void)
{
    struct ks_record_outcome outcomes[3] = {
        outcome(0, 0, 5 * MS, KS_OUTCOME_ACKED),
        outcome(0, 1 * S, 1 * S + 7 * MS, KS_OUTCOME_ACKED),
        outcome(2, 2 * S, 2 * S + 100 * MS, KS_OUTCOME_FAILED),
    };
    GArray *intervals = g_array_new(FALSE, FALSE, sizeof(struct ks_unavailable_interval));
    CU_ASSERT_EQUAL(ks_availability_produce(outcomes, 3, 1, 1 * S, 60 * S, intervals), 0);
    CU_ASSERT_EQUAL(intervals->len, 0);
    g_array_free(intervals, TRUE);
}

static void test_availability_reason_names(void)
{
    CU_ASSERT_STRING_EQUAL(ks_unavailable_reason_name(KS_UNAVAILABLE_NO_LEADER), "no_leader");
    CU_ASSERT_STRING_EQUAL(ks_unavailable_reason_name(KS_UNAVAILABLE_LEADER_NOT_SERVING),
                           "leader_not_serving");
    CU_ASSERT_STRING_EQUAL(ks_unavailable_reason_name(KS_UNAVAILABLE_ISR_BELOW_MIN),
                           "isr_below_min");
    CU_ASSERT_STRING_EQUAL(ks_unavailable_reason_name(KS_UNAVAILABLE_RECORDS_WAITING),
                           "records_waiting");
}

void ks_test_register_availability(void)
{
    static const struct ks_test_case cases[] = {
        { "produce", test_availability_produce },
        { "produce_quiet", test_availability_produce_quiet },
        { "reason_names", test_availability_reason_names },
    };
    KS_TEST_ADD_SUITE("sim/availability", cases);
}
