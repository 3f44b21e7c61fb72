/* tests/sim/test_mirror_check.c: the mirror metrics on hand-built inputs.
 *
 * Goal: each count of sim/mirror_check.h counts exactly the records its
 * definition names: what a lost source cluster loses is what the target does
 * not hold; a surviving source's unmirrored tail is lag, not loss; the
 * source's own losses, failed records, other topics and records without an
 * identity are not the mirror's; mirror_lag sums the partitions' positive
 * gaps; a group that fails over counts as duplicates only the records it
 * processes again. Method: small arrays with a known number of each, and a
 * clean input that must give zeros. */
#include "../../sim/mirror_check.h"
#include "../testlib.h"

#include <string.h>

static struct ks_record_outcome outcome(int32_t producer, int64_t seq, int32_t topic_index,
                                        enum ks_record_outcome_kind kind)
{
    struct ks_record_outcome o = { .producer_index = producer,
                                   .seq = seq,
                                   .key = NULL,
                                   .topic_index = topic_index,
                                   .partition = 0,
                                   .offset = seq,
                                   .sent_ns = 0,
                                   .acked_ns = 1,
                                   .outcome = kind,
                                   .acked_broker = 1,
                                   .acked_leader_epoch = 0 };
    return o;
}

static struct ks_read_record rec(int64_t offset, int32_t producer, int64_t seq)
{
    struct ks_read_record r = { 0, 0, offset, producer, seq, KS_READ_TXN_NONE, 0, 0, 0 };
    return r;
}

/* Ten records of producer 0 acked on topic 0; the source holds all of them;
 * the target holds the first target_count. */
struct fixture {
    struct ks_record_outcome outcomes[10];
    struct ks_read_record source[10];
    struct ks_read_record target[20];
    struct ks_mirror_check_input in;
};

static void fixture_init(struct fixture *f, size_t target_count)
{
    memset(f, 0, sizeof *f);
    for (int64_t s = 0; s < 10; s++) {
        f->outcomes[s] = outcome(0, s, 0, KS_OUTCOME_ACKED);
        f->source[s] = rec(s, 0, s);
    }
    for (size_t s = 0; s < target_count; s++) {
        f->target[s] = rec((int64_t)s, 0, (int64_t)s);
    }
    f->in = (struct ks_mirror_check_input){
        .outcomes = f->outcomes,
        .outcome_count = 10,
        .producer_count = 1,
        .source_topic_index = 0,
        .source_read = f->source,
        .source_read_count = 10,
        .target_read = f->target,
        .target_read_count = target_count,
    };
}

static void test_mirror_check_clean(void)
{
    struct fixture f;
    fixture_init(&f, 10);
    struct ks_mirror_check_output out;
    ks_mirror_check_run(&f.in, &out);
    CU_ASSERT_EQUAL(out.records_acked, 10);
    CU_ASSERT_EQUAL(out.mirrored, 10);
    CU_ASSERT_EQUAL(out.mirror_lost, 0);
    CU_ASSERT_EQUAL(out.mirror_unmirrored, 0);
    CU_ASSERT_EQUAL(out.mirror_duplicates, 0);
    /* a lost source loses nothing the target holds */
    f.in.source_lost = true;
    ks_mirror_check_run(&f.in, &out);
    CU_ASSERT_EQUAL(out.mirrored, 10);
    CU_ASSERT_EQUAL(out.mirror_lost, 0);
}

static void test_mirror_check_lag_is_not_loss(void)
{
    struct fixture f;
    fixture_init(&f, 7);
    struct ks_mirror_check_output out;
    ks_mirror_check_run(&f.in, &out);
    CU_ASSERT_EQUAL(out.mirrored, 7);
    CU_ASSERT_EQUAL(out.mirror_unmirrored, 3);
    CU_ASSERT_EQUAL(out.mirror_lost, 0);
}

static void test_mirror_check_source_lost(void)
{
    struct fixture f;
    fixture_init(&f, 7);
    f.in.source_lost = true; /* the source read is ignored, though it holds all ten */
    struct ks_mirror_check_output out;
    ks_mirror_check_run(&f.in, &out);
    CU_ASSERT_EQUAL(out.records_acked, 10);
    CU_ASSERT_EQUAL(out.mirrored, 7);
    CU_ASSERT_EQUAL(out.mirror_lost, 3);
    CU_ASSERT_EQUAL(out.mirror_unmirrored, 0);
    /* the loss equals the lag when the source was lost: HW 10, mirrored up to 7 */
    int64_t hw = 10;
    int64_t next = 7;
    CU_ASSERT_EQUAL(out.mirror_lost, ks_mirror_lag(&hw, &next, 1));
}

static void test_mirror_check_source_own_loss(void)
{
    struct fixture f;
    fixture_init(&f, 8);
    f.in.source_read_count = 8; /* the source lost seq 8 and 9 itself (acked_lost) */
    struct ks_mirror_check_output out;
    ks_mirror_check_run(&f.in, &out);
    CU_ASSERT_EQUAL(out.mirrored, 8);
    CU_ASSERT_EQUAL(out.mirror_unmirrored, 0);
    CU_ASSERT_EQUAL(out.mirror_lost, 0);
}

static void test_mirror_check_duplicates(void)
{
    struct fixture f;
    fixture_init(&f, 10);
    f.target[10] = rec(10, 0, 2);
    f.target[11] = rec(11, 0, 5);
    f.target[12] = rec(12, 0, 5);
    f.target[13] = rec(13, -1, 0); /* no identity: ignored */
    f.target[14] = rec(14, -1, 0);
    f.in.target_read_count = 15;
    struct ks_mirror_check_output out;
    ks_mirror_check_run(&f.in, &out);
    CU_ASSERT_EQUAL(out.mirrored, 10);
    CU_ASSERT_EQUAL(out.mirror_duplicates, 3);
}

static void test_mirror_check_what_counts(void)
{
    struct fixture f;
    fixture_init(&f, 0);
    f.outcomes[1] = outcome(0, 1, 1, KS_OUTCOME_ACKED);  /* another topic */
    f.outcomes[2] = outcome(0, 2, 0, KS_OUTCOME_FAILED); /* never acked */
    f.outcomes[3] = outcome(0, 3, 0, KS_OUTCOME_UNKNOWN);
    f.in.source_lost = true;
    struct ks_mirror_check_output out;
    ks_mirror_check_run(&f.in, &out);
    CU_ASSERT_EQUAL(out.records_acked, 7);
    CU_ASSERT_EQUAL(out.mirror_lost, 7);
    /* an acks=0 producer's records count as acked, as in sim/checker.h */
    const bool acks_none[] = { true };
    f.in.producer_acks_none = acks_none;
    ks_mirror_check_run(&f.in, &out);
    CU_ASSERT_EQUAL(out.records_acked, 9);
    CU_ASSERT_EQUAL(out.mirror_lost, 9);
}

static void test_mirror_check_lag(void)
{
    const int64_t hw[] = { 10, 5, 0, 3 };
    const int64_t next[] = { 4, 7, 0, 0 };
    CU_ASSERT_EQUAL(ks_mirror_lag(hw, next, 4), 6 + 0 + 0 + 3);
    CU_ASSERT_EQUAL(ks_mirror_lag(hw, hw, 4), 0);
    CU_ASSERT_EQUAL(ks_mirror_lag(NULL, NULL, 0), 0);
}

static struct ks_consumed_record processed(int64_t seq, ks_time_ns at_ns)
{
    struct ks_consumed_record c = { .consumer_index = 0,
                                    .generation = 1,
                                    .topic_index = 0,
                                    .partition = 0,
                                    .offset = seq,
                                    .producer_index = 0,
                                    .seq = seq,
                                    .at_ns = at_ns };
    return c;
}

static void test_mirror_check_failover_duplicates(void)
{
    struct ks_consumed_record consumed[32];
    size_t n = 0;
    for (int64_t s = 0; s < 10; s++) {
        consumed[n++] = processed(s, 10 + s); /* on the source, before the failover at 100 */
    }
    for (int64_t s = 7; s < 15; s++) {
        consumed[n++] = processed(s, 100 + s); /* on the target, from a translated offset 7 */
    }
    consumed[n++] = processed(12, 200); /* twice after the failover: not the failover's */
    consumed[n] = processed(3, 300);
    consumed[n++].producer_index = -1; /* no identity: ignored */
    CU_ASSERT_EQUAL(ks_mirror_failover_duplicates(consumed, n, 100), 3);
    /* a failover before anything was processed duplicates nothing */
    CU_ASSERT_EQUAL(ks_mirror_failover_duplicates(consumed, n, 0), 0);
    /* the instant itself belongs to after: seq 9, processed at 19, is after a
     * failover at 19 (then only 7 and 8 are processed again), before one at 20 */
    CU_ASSERT_EQUAL(ks_mirror_failover_duplicates(consumed, n, 19), 2);
    CU_ASSERT_EQUAL(ks_mirror_failover_duplicates(consumed, n, 20), 3);
    CU_ASSERT_EQUAL(ks_mirror_failover_duplicates(NULL, 0, 100), 0);
}

void ks_test_register_mirror_check(void)
{
    static const struct ks_test_case cases[] = {
        { "clean", test_mirror_check_clean },
        { "lag is not loss", test_mirror_check_lag_is_not_loss },
        { "source lost", test_mirror_check_source_lost },
        { "source's own loss", test_mirror_check_source_own_loss },
        { "duplicates", test_mirror_check_duplicates },
        { "what counts", test_mirror_check_what_counts },
        { "lag", test_mirror_check_lag },
        { "failover duplicates", test_mirror_check_failover_duplicates },
    };
    KS_TEST_ADD_SUITE("sim/mirror_check", cases);
}
