/*
** tests/core/test_txn_fetch.c: a leader's answer to a read_committed fetch
** (KIP-98): served up to the last stable offset, with the partition's
** LastStableOffset and AbortedTransactions after its records
** (struct ks_fetch_txn_trailer), while a read_uncommitted answer keeps the
** old layout and reads up to the HW.
*/
#include "repl_harness.h"

static void fetch_at(struct cluster_fixture *h, int64_t offset, uint8_t isolation_level)
{
    _Alignas(8) uint8_t
        message[sizeof(struct ks_fetch_request) + sizeof(struct ks_fetch_request_partition)];
    memset(message, 0, sizeof message);
    struct ks_fetch_request *request = (struct ks_fetch_request *)message;
    request->correlation_id = 5;
    request->replica_id = KS_FETCH_CONSUMER_REPLICA_ID;
    request->min_bytes = 1;
    request->max_bytes = 1 << 20;
    request->partition_count = 1;
    request->isolation_level = isolation_level;
    struct ks_fetch_request_partition *entry =
        (struct ks_fetch_request_partition *)(message + sizeof *request);
    entry->fetch_offset = offset;
    entry->log_start_offset = -1;
    entry->current_leader_epoch = -1;
    entry->last_fetched_epoch = -1;
    entry->partition_max_bytes = 1 << 20;
    ks_world_send(h->env.world, KS_NODE_DRIVER, 1, KS_MSG_FETCH_REQUEST, message, sizeof message);
    cf_run_for(h, 5 * H_MS);
}

/* A transactional batch of `count` records. */
static GByteArray *txn_data(int64_t producer_id, int32_t base_sequence, int32_t count)
{
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, KS_EPOCH_BASE_MS, producer_id, 0, base_sequence);
    builder.attributes = KS_ATTR_TRANSACTIONAL;
    for (int32_t i = 0; i < count; i++) {
        ks_batch_builder_add(&builder, KS_EPOCH_BASE_MS, NULL, -1, "t", 1, NULL, 0);
    }
    GByteArray *bytes = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    return bytes;
}

/* Producer 7's transaction at 0-2, a plain record at 3, 7's ABORT marker at
 * 4, producer 8's open transaction at 5-6. */
static void append_aborted_and_open(struct cluster_fixture *h)
{
    h_append_batch(h, 1, 0, 0, KS_ACKS_ALL, txn_data(7, 0, 3));
    h_append(h, 1, 0, 0, KS_ACKS_ALL, "plain");
    h_append_batch(h, 1, 0, 0, KS_ACKS_ALL,
                   ks_batch_build_end_txn_marker(KS_EPOCH_BASE_MS, 7, 0, false, 0));
    h_append_batch(h, 1, 0, 0, KS_ACKS_ALL, txn_data(8, 0, 2));
}

struct answer {
    const struct ks_fetch_response_partition *part;
    int64_t last_offset; /* of the last batch, -1 none */
    /* Copied out: the trailer follows records of any length, unaligned. */
    struct ks_fetch_txn_trailer trailer;
    struct ks_fetch_aborted aborted[4];
};

static struct answer read_answer(const struct h_client_box *box, bool read_committed)
{
    struct answer answer;
    memset(&answer, 0, sizeof answer);
    answer.last_offset = -1;
    CU_ASSERT_EQUAL_FATAL(box->kind, KS_MSG_FETCH_RESPONSE);
    size_t position = sizeof(struct ks_fetch_response);
    answer.part = (const struct ks_fetch_response_partition *)(box->bytes + position);
    position += sizeof *answer.part;
    size_t at = 0;
    while (at < answer.part->records_bytes) {
        struct ks_batch_view view;
        size_t batch_bytes = 0;
        CU_ASSERT_EQUAL_FATAL(ks_batch_parse(box->bytes + position + at,
                                             answer.part->records_bytes - at, &view, &batch_bytes),
                              KS_BATCH_OK);
        answer.last_offset = ks_batch_last_offset(&view);
        at += batch_bytes;
    }
    position += answer.part->records_bytes;
    if (read_committed) {
        memcpy(&answer.trailer, box->bytes + position, sizeof answer.trailer);
        position += sizeof answer.trailer;
        CU_ASSERT_FATAL(answer.trailer.aborted_count >= 0 && answer.trailer.aborted_count <= 4);
        memcpy(answer.aborted, box->bytes + position,
               (size_t)answer.trailer.aborted_count * sizeof answer.aborted[0]);
        position += (size_t)answer.trailer.aborted_count * sizeof answer.aborted[0];
    }
    CU_ASSERT_EQUAL(position, box->byte_count);
    return answer;
}

static void test_read_committed_fetch(void)
{
    struct cluster_fixture h;
    struct h_client_box box;
    h_client_cluster(&h, &box, 6);
    /* 0-2 producer 7 (aborted at 4), 3 plain, 5-6 producer 8 (still open). */
    append_aborted_and_open(&h);
    cf_run_for(&h, 100 * H_MS);
    CU_ASSERT_EQUAL_FATAL(h_state(&h, 1, 0, 0).hw, 7);

    fetch_at(&h, 0, KS_ISOLATION_READ_UNCOMMITTED);
    struct answer answer = read_answer(&box, false);
    CU_ASSERT_EQUAL(answer.part->hw, 7);
    CU_ASSERT_EQUAL(answer.last_offset, 6); /* up to the HW */

    fetch_at(&h, 0, KS_ISOLATION_READ_COMMITTED);
    answer = read_answer(&box, true);
    CU_ASSERT_EQUAL(answer.part->hw, 7);
    CU_ASSERT_EQUAL(answer.last_offset, 4); /* up to the LSO: producer 8 is open */
    CU_ASSERT_EQUAL(answer.trailer.last_stable_offset, 5);
    CU_ASSERT_EQUAL_FATAL(answer.trailer.aborted_count, 1);
    CU_ASSERT_EQUAL(answer.aborted[0].producer_id, 7);
    CU_ASSERT_EQUAL(answer.aborted[0].first_offset, 0);

    /* From past the abort marker, no aborted transaction overlaps. */
    fetch_at(&h, 5, KS_ISOLATION_READ_COMMITTED);
    answer = read_answer(&box, true);
    CU_ASSERT_EQUAL(answer.part->records_bytes, 0);
    CU_ASSERT_EQUAL(answer.trailer.aborted_count, 0);

    /* Producer 8 commits: once the marker is below the HW, the LSO is the HW. */
    h_append_batch(&h, 1, 0, 0, KS_ACKS_ALL,
                   ks_batch_build_end_txn_marker(KS_EPOCH_BASE_MS, 8, 0, true, 0));
    cf_run_for(&h, 100 * H_MS);
    fetch_at(&h, 5, KS_ISOLATION_READ_COMMITTED);
    answer = read_answer(&box, true);
    CU_ASSERT_EQUAL(answer.trailer.last_stable_offset, 8);
    CU_ASSERT_EQUAL(answer.last_offset, 7);
    CU_ASSERT_EQUAL(answer.trailer.aborted_count, 0);
    cf_free(&h);
}

/* A consumer over the same kind of log: producer 7 aborted (0-2, marker 4),
 * plain records at 3 and 8, producer 8 committed (5-6, marker 7). */
static void consume_with(enum ks_isolation_level level, const int32_t expected[9])
{
    static const int32_t assign[] = { 1, 2, 3 };
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 1, 3, 2, assign);
    struct ks_consumer_config *consumer = cf_consumer(&h, "c1", "g1", 0);
    consumer->isolation_level = level;
    consumer->auto_offset_reset = KS_RESET_EARLIEST;
    consumer->commit = KS_COMMIT_AFTER_PROCESS;
    consumer->start_ns = 2 * H_S;
    cf_start(&h, 6);
    cf_run_until(&h, 500 * H_MS);
    append_aborted_and_open(&h);
    h_append_batch(&h, 1, 0, 0, KS_ACKS_ALL,
                   ks_batch_build_end_txn_marker(KS_EPOCH_BASE_MS, 8, 0, true, 0));
    h_append(&h, 1, 0, 0, KS_ACKS_ALL, "plain");
    cf_run_until(&h, 15 * H_S);
    for (int32_t offset = 0; offset < 9; offset++) {
        CU_ASSERT_EQUAL(h.processed[0][offset], expected[offset]);
    }
    cf_free(&h);
}

static void test_read_committed_consumer(void)
{
    static const int32_t committed[9] = { 0, 0, 0, 1, 0, 1, 1, 0, 1 };
    consume_with(KS_READ_COMMITTED, committed);
}

static void test_read_uncommitted_consumer(void)
{
    static const int32_t uncommitted[9] = { 1, 1, 1, 1, 0, 1, 1, 0, 1 };
    consume_with(KS_READ_UNCOMMITTED, uncommitted);
}

void ks_test_register_txn_fetch(void)
{
    static const struct ks_test_case cases[] = {
        { "read_committed fetch: LSO and aborted transactions", test_read_committed_fetch },
        { "read_committed consumer drops aborted records", test_read_committed_consumer },
        { "read_uncommitted consumer skips only markers", test_read_uncommitted_consumer },
    };
    KS_TEST_ADD_SUITE("core/txn_fetch", cases);
}
