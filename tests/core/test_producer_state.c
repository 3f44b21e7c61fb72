/* tests/core/test_producer_state.c: idempotent producer state on the leader
 * (kafka-reference 5.3).
 *
 * Method: first the table alone (core/producer_state.c): unknown producers
 * accept any sequence, duplicates of the last five batches are recognised
 * with their original offsets, gaps and stale epochs are refused, a new
 * epoch must start at 0, sequences wrap after INT32_MAX. Then on a real
 * cluster (repl_harness.h): a batch sent twice to the leader is appended once
 * and answered with its first offset, a gap gets OUT_OF_ORDER_SEQUENCE_NUMBER,
 * and after the leader crashes the new leader, which rebuilt the state from
 * the batches it replicated, still recognises the duplicate. */
#include "repl_harness.h"

#include "../../core/producer_state.h"

static void test_rules(void)
{
    struct ks_producer_state *state = ks_producer_state_new();
    int64_t base = -1;
    int64_t last = -1;
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 7, 0, 42, 45, &base, &last), KS_ERR_NONE);
    CU_ASSERT_EQUAL(ks_producer_state_check(state, -1, -1, -1, -1, NULL, NULL), KS_ERR_NONE);
    ks_producer_state_update(state, 7, 0, 0, 4, 100, 104);
    ks_producer_state_update(state, 7, 0, 5, 9, 105, 109);
    CU_ASSERT_EQUAL(ks_producer_state_producer_count(state), 1);
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 7, 0, 5, 9, &base, &last),
                    KS_ERR_DUPLICATE_SEQUENCE_NUMBER);
    CU_ASSERT_EQUAL(base, 105);
    CU_ASSERT_EQUAL(last, 109);
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 7, 0, 0, 4, &base, &last),
                    KS_ERR_DUPLICATE_SEQUENCE_NUMBER);
    CU_ASSERT_EQUAL(base, 100);
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 7, 0, 10, 12, NULL, NULL), KS_ERR_NONE);
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 7, 0, 11, 12, NULL, NULL),
                    KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    /* Older epoch: fenced. Newer epoch: must restart at 0. */
    ks_producer_state_update(state, 8, 3, 0, 0, 200, 200);
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 8, 2, 1, 1, NULL, NULL),
                    KS_ERR_INVALID_PRODUCER_EPOCH);
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 8, 4, 1, 1, NULL, NULL),
                    KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 8, 4, 0, 3, NULL, NULL), KS_ERR_NONE);
    /* Only the last five batches are remembered. */
    for (int32_t i = 0; i < 5; i++) {
        ks_producer_state_update(state, 7, 0, 10 + i, 10 + i, 110 + i, 110 + i);
    }
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 7, 0, 5, 9, NULL, NULL),
                    KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 7, 0, 10, 10, NULL, NULL),
                    KS_ERR_DUPLICATE_SEQUENCE_NUMBER);
    /* Wrap-around after INT32_MAX. */
    ks_producer_state_update(state, 9, 0, INT32_MAX - 1, INT32_MAX, 300, 301);
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 9, 0, 0, 1, NULL, NULL), KS_ERR_NONE);
    ks_producer_state_clear(state);
    CU_ASSERT_EQUAL(ks_producer_state_producer_count(state), 0);
    ks_producer_state_free(state);
}

static void test_update_from_batches(void)
{
    GByteArray *a = h_batch("a", 3, 55, 1, 0);
    GByteArray *b = h_batch("b", 2, 55, 1, 3);
    ks_batch_set_offset_and_epoch(a->data, 10, 0);
    ks_batch_set_offset_and_epoch(b->data, 13, 0);
    GByteArray *both = g_byte_array_new();
    g_byte_array_append(both, a->data, a->len);
    g_byte_array_append(both, b->data, b->len);
    struct ks_producer_state *state = ks_producer_state_new();
    ks_producer_state_update_from_batches(state, both->data, both->len);
    int64_t base = -1;
    int64_t last = -1;
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 55, 1, 3, 4, &base, &last),
                    KS_ERR_DUPLICATE_SEQUENCE_NUMBER);
    CU_ASSERT_EQUAL(base, 13);
    CU_ASSERT_EQUAL(last, 14);
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 55, 1, 5, 5, NULL, NULL), KS_ERR_NONE);
    ks_producer_state_free(state);
    g_byte_array_unref(a);
    g_byte_array_unref(b);
    g_byte_array_unref(both);
}

static struct cf_append *send(struct cluster_fixture *h, int32_t broker, const char *tag,
                              int32_t count, int32_t seq)
{
    return h_append_batch(h, broker, 0, 0, KS_ACKS_ALL, h_batch(tag, count, 1000001, 0, seq));
}

static void test_duplicates_across_leader_change(void)
{
    static const int32_t assign[] = { 1, 2, 3 };
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 1, 3, 2, assign);
    cf_start(&h, 31);
    cf_run_until(&h, 500 * H_MS);
    struct cf_append *first = send(&h, 1, "a", 4, 0);
    cf_run_for(&h, 100 * H_MS);
    struct cf_append *second = send(&h, 1, "b", 2, 4);
    cf_run_for(&h, 100 * H_MS);
    CU_ASSERT_EQUAL(first->error, KS_ERR_NONE);
    CU_ASSERT_EQUAL(second->base_offset, 4);
    /* A retry of the second batch (its response was "lost"). */
    struct cf_append *retry = send(&h, 1, "b", 2, 4);
    cf_run_for(&h, 100 * H_MS);
    CU_ASSERT_EQUAL(retry->error, KS_ERR_NONE);
    CU_ASSERT_EQUAL(retry->base_offset, 4);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).leo, 6);
    struct cf_append *gap = send(&h, 1, "gap", 1, 9);
    cf_run_for(&h, 10 * H_MS);
    CU_ASSERT_EQUAL(gap->error, KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).leo, 6);
    /* The leader dies; broker 2 takes over and must know the producer. */
    cf_crash(&h, 1, false);
    cf_run_for(&h, 12 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    struct cf_append *again = send(&h, 2, "b", 2, 4);
    cf_run_for(&h, 100 * H_MS);
    CU_ASSERT_EQUAL(again->error, KS_ERR_NONE);
    CU_ASSERT_EQUAL(again->base_offset, 4);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).leo, 6);
    struct cf_append *gap2 = send(&h, 2, "gap", 1, 7);
    struct cf_append *next = send(&h, 2, "c", 1, 6);
    cf_run_for(&h, 100 * H_MS);
    CU_ASSERT_EQUAL(gap2->error, KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    CU_ASSERT_EQUAL(next->error, KS_ERR_NONE);
    CU_ASSERT_EQUAL(next->base_offset, 6);
    /* After a restart the state is rebuilt from the log as well. */
    cf_restart(&h, 1);
    cf_run_for(&h, 5 * H_S);
    cf_crash(&h, 2, false);
    cf_crash(&h, 3, false);
    cf_run_for(&h, 12 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 1);
    struct cf_append *dup =
        h_append_batch(&h, 1, 0, 0, KS_ACKS_LEADER, h_batch("c", 1, 1000001, 0, 6));
    cf_run_for(&h, 10 * H_MS);
    CU_ASSERT_EQUAL(dup->error, KS_ERR_NONE);
    CU_ASSERT_EQUAL(dup->base_offset, 6);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).leo, 7);
    cf_free(&h);
}

void ks_test_register_producer_state(void)
{
    static const struct ks_test_case cases[] = {
        { "rules", test_rules },
        { "update_from_batches", test_update_from_batches },
        { "duplicates_across_leader_change", test_duplicates_across_leader_change },
    };
    KS_TEST_ADD_SUITE("core/producer_state", cases);
}
