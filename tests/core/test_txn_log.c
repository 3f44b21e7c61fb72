/*
** tests/core/test_txn_log.c: transactions in the segment log (KIP-98):
** the commit/abort marker's bytes, the producer state's first unstable offset
** and last stable offset, the `.txnindex` file (Kafka's 34-byte AbortedTxn
** entries), and how they survive a reopen, a lost index file (recovery
** rebuilds it) and a truncation.
*/
#include "log_fixture.h"

#include "../../core/producer_state.h"
#include "../../core/proto.h"
#include "../../core/txn.h"

#define TS0 INT64_C(1767225600000)

/* A transactional data batch of record_count records. */
static GByteArray *txn_batch(int64_t producer_id, int32_t base_sequence, int32_t record_count)
{
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, TS0, producer_id, 0, base_sequence);
    builder.attributes = KS_ATTR_TRANSACTIONAL;
    for (int32_t i = 0; i < record_count; i++) {
        ks_batch_builder_add(&builder, TS0 + i, "k", 1, "value", 5, NULL, 0);
    }
    GByteArray *bytes = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    return bytes;
}

static int64_t append(struct ks_log *log, GByteArray *bytes)
{
    int64_t base = -1;
    int64_t last = -1;
    CU_ASSERT_EQUAL_FATAL(ks_log_append_as_leader(log, bytes->data, bytes->len, 0, 0, &base, &last),
                          KS_LOG_OK);
    g_byte_array_unref(bytes);
    return base;
}

static int64_t be64(const uint8_t *p)
{
    uint64_t value = 0;
    for (int i = 0; i < 8; i++) {
        value = value << 8 | p[i];
    }
    return (int64_t)value;
}

#define TXN_INDEX LOG_DIR "/00000000000000000000.txnindex"

static void test_marker_bytes(void)
{
    GByteArray *bytes = ks_batch_build_end_txn_marker(TS0, 42, 3, true, 7);
    struct ks_batch_view view;
    CU_ASSERT_EQUAL_FATAL(ks_batch_parse(bytes->data, bytes->len, &view, NULL), KS_BATCH_OK);
    CU_ASSERT_EQUAL(view.attributes, KS_ATTR_TRANSACTIONAL | KS_ATTR_CONTROL);
    CU_ASSERT_EQUAL(view.producer_id, 42);
    CU_ASSERT_EQUAL(view.producer_epoch, 3);
    CU_ASSERT_EQUAL(view.base_sequence, -1);
    CU_ASSERT_EQUAL(view.record_count, 1);
    CU_ASSERT_EQUAL(ks_batch_control_type(&view), KS_CONTROL_COMMIT);
    struct ks_record_iter iter;
    struct ks_record_view record;
    ks_record_iter_init(&iter, &view);
    CU_ASSERT_FATAL(ks_record_iter_next(&iter, &record, NULL));
    static const uint8_t key[4] = { 0, 0, 0, 1 };
    static const uint8_t value[6] = { 0, 0, 0, 0, 0, 7 };
    CU_ASSERT_EQUAL_FATAL(record.key_bytes, 4);
    CU_ASSERT(memcmp(record.key, key, 4) == 0);
    CU_ASSERT_EQUAL_FATAL(record.value_bytes, 6);
    CU_ASSERT(memcmp(record.value, value, 6) == 0);
    CU_ASSERT_FALSE(ks_record_iter_next(&iter, &record, NULL));
    g_byte_array_unref(bytes);
    bytes = ks_batch_build_end_txn_marker(TS0, 42, 3, false, 7);
    CU_ASSERT_EQUAL_FATAL(ks_batch_parse(bytes->data, bytes->len, &view, NULL), KS_BATCH_OK);
    CU_ASSERT_EQUAL(ks_batch_control_type(&view), KS_CONTROL_ABORT);
    g_byte_array_unref(bytes);
    /* A data batch has no control type. */
    bytes = txn_batch(1, 0, 1);
    CU_ASSERT_EQUAL_FATAL(ks_batch_parse(bytes->data, bytes->len, &view, NULL), KS_BATCH_OK);
    CU_ASSERT_EQUAL(ks_batch_control_type(&view), -1);
    g_byte_array_unref(bytes);
}

/* Producer 7: offsets 0-2 and 7, aborted at 8; a plain batch at 3-4;
 * producer 8: 5-6, committed at 9. */
static struct ks_log *build_two_transactions(struct ks_test_env *env,
                                             const struct ks_log_config *config)
{
    struct ks_log *log = ks_log_open(env->world, LOG_NODE, LOG_DIR, config, 0, true, NULL);
    CU_ASSERT_EQUAL(append(log, txn_batch(7, 0, 3)), 0);
    CU_ASSERT_EQUAL(ks_log_first_unstable_offset(log, 3), 0);
    CU_ASSERT_EQUAL(append(log, log_fixture_batch(2, 0, 10, TS0)), 3);
    CU_ASSERT_EQUAL(append(log, txn_batch(8, 0, 2)), 5);
    CU_ASSERT_EQUAL(append(log, txn_batch(7, 3, 1)), 7);
    CU_ASSERT_EQUAL(ks_log_open_txn_count(log), 2);
    CU_ASSERT_EQUAL(ks_log_last_stable_offset(log, 8), 0);
    CU_ASSERT_EQUAL(append(log, ks_batch_build_end_txn_marker(TS0, 7, 0, false, 1)), 8);
    CU_ASSERT_EQUAL(ks_log_open_txn_count(log), 1);
    /* The abort's marker is not replicated yet: the LSO stays at 0 until the
     * HW passes it, then moves to producer 8's first offset. */
    CU_ASSERT_EQUAL(ks_log_last_stable_offset(log, 8), 0);
    CU_ASSERT_EQUAL(ks_log_last_stable_offset(log, 9), 5);
    CU_ASSERT_EQUAL(append(log, ks_batch_build_end_txn_marker(TS0, 8, 0, true, 1)), 9);
    CU_ASSERT_EQUAL(ks_log_open_txn_count(log), 0);
    CU_ASSERT_EQUAL(ks_log_last_stable_offset(log, 9), 5);
    CU_ASSERT_EQUAL(ks_log_first_unstable_offset(log, 10), -1);
    CU_ASSERT_EQUAL(ks_log_last_stable_offset(log, 10), 10);
    return log;
}

static void check_aborted(struct ks_log *log)
{
    GArray *aborted = g_array_new(FALSE, FALSE, sizeof(struct ks_aborted_txn));
    ks_log_collect_aborted(log, 0, 10, aborted);
    CU_ASSERT_EQUAL_FATAL(aborted->len, 1);
    const struct ks_aborted_txn *entry = &g_array_index(aborted, struct ks_aborted_txn, 0);
    CU_ASSERT_EQUAL(entry->producer_id, 7);
    CU_ASSERT_EQUAL(entry->first_offset, 0);
    CU_ASSERT_EQUAL(entry->last_offset, 8);
    CU_ASSERT_EQUAL(entry->last_stable_offset, 5);
    ks_log_collect_aborted(log, 9, 10, aborted); /* its marker is below the fetch */
    CU_ASSERT_EQUAL(aborted->len, 0);
    ks_log_collect_aborted(log, 8, 9, aborted);
    CU_ASSERT_EQUAL(aborted->len, 1);
    g_array_free(aborted, TRUE);
}

static void check_txn_index_file(struct ks_test_env *env)
{
    GByteArray *bytes = log_fixture_real_bytes(env, TXN_INDEX);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
    CU_ASSERT_EQUAL_FATAL(bytes->len, 34);
    CU_ASSERT(bytes->data[0] == 0 && bytes->data[1] == 0);
    CU_ASSERT_EQUAL(be64(bytes->data + 2), 7);
    CU_ASSERT_EQUAL(be64(bytes->data + 10), 0);
    CU_ASSERT_EQUAL(be64(bytes->data + 18), 8);
    CU_ASSERT_EQUAL(be64(bytes->data + 26), 5);
    g_byte_array_unref(bytes);
}

static void test_lso_and_txn_index(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    struct ks_log_config config = log_fixture_config();
    struct ks_log *log = build_two_transactions(&env, &config);
    check_aborted(log);
    ks_log_flush(log);
    check_txn_index_file(&env);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

/* ProducerStateManager.onHighWatermarkUpdated: once the HW has passed a
 * completed transaction's marker it is forgotten, so it no longer counts as
 * unstable even for a lower HW (which a real HW never goes back to); open
 * transactions stay whatever the offset. */
static void test_stable_transactions_forgotten(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    struct ks_log_config config = log_fixture_config();
    struct ks_log *log = ks_log_open(env.world, LOG_NODE, LOG_DIR, &config, 0, true, NULL);
    CU_ASSERT_EQUAL(append(log, txn_batch(7, 0, 3)), 0);
    CU_ASSERT_EQUAL(append(log, ks_batch_build_end_txn_marker(TS0, 7, 0, true, 1)), 3);
    CU_ASSERT_EQUAL(append(log, txn_batch(8, 0, 2)), 4);
    /* HW 3: the commit marker is not below it, so producer 7's transaction
     * is still unstable. */
    ks_log_on_stable_below(log, 3);
    CU_ASSERT_EQUAL(ks_log_first_unstable_offset(log, 2), 0);
    /* HW 4 passes the marker: forgotten. Producer 8's open one stays, even
     * past its records. */
    ks_log_on_stable_below(log, 4);
    CU_ASSERT_EQUAL(ks_log_first_unstable_offset(log, 2), 4);
    ks_log_on_stable_below(log, 100);
    CU_ASSERT_EQUAL(ks_log_open_txn_count(log), 1);
    CU_ASSERT_EQUAL(ks_log_first_unstable_offset(log, 6), 4);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

/* A log without transactions writes no `.txnindex`, as Kafka's lazily
 * created TransactionIndex. */
static void test_no_txn_index_without_aborts(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 2, 2);
    struct ks_log_config config = log_fixture_config();
    struct ks_log *log = ks_log_open(env.world, LOG_NODE, LOG_DIR, &config, 0, true, NULL);
    append(log, log_fixture_batch(2, 0, 10, TS0));
    append(log, txn_batch(3, 0, 2));
    append(log, ks_batch_build_end_txn_marker(TS0, 3, 0, true, 0));
    ks_log_flush(log);
    CU_ASSERT_FALSE(ks_disk_exists(env.world, LOG_NODE, TXN_INDEX));
    CU_ASSERT_EQUAL(ks_log_last_stable_offset(log, 5), 5);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

/* A reopened log reads its `.txnindex` and rebuilds the open transactions
 * from its batches (Kafka's producer state load). */
static void test_reopen_keeps_open_transactions(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 3, 2);
    struct ks_log_config config = log_fixture_config();
    struct ks_log *log = build_two_transactions(&env, &config);
    CU_ASSERT_EQUAL(append(log, txn_batch(9, 0, 2)), 10);
    ks_log_flush(log);
    ks_log_close(log);
    log = ks_log_open(env.world, LOG_NODE, LOG_DIR, &config, 12, true, NULL);
    check_aborted(log);
    CU_ASSERT_EQUAL(ks_log_open_txn_count(log), 1);
    CU_ASSERT_EQUAL(ks_log_last_stable_offset(log, 12), 10);
    CU_ASSERT_EQUAL(append(log, ks_batch_build_end_txn_marker(TS0, 9, 0, false, 2)), 12);
    CU_ASSERT_EQUAL(ks_log_last_stable_offset(log, 13), 13);
    GArray *aborted = g_array_new(FALSE, FALSE, sizeof(struct ks_aborted_txn));
    ks_log_collect_aborted(log, 0, 13, aborted);
    CU_ASSERT_EQUAL_FATAL(aborted->len, 2);
    CU_ASSERT_EQUAL(g_array_index(aborted, struct ks_aborted_txn, 1).first_offset, 10);
    CU_ASSERT_EQUAL(g_array_index(aborted, struct ks_aborted_txn, 1).last_offset, 12);
    CU_ASSERT_EQUAL(g_array_index(aborted, struct ks_aborted_txn, 1).last_stable_offset, 13);
    g_array_free(aborted, TRUE);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

/* Recovery after an unclean shutdown rebuilds the transaction index of the
 * recovered segments (LogSegment.recover): a lost `.txnindex` comes back
 * with the same bytes. */
static void test_recovery_rebuilds_txn_index(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 4, 2);
    struct ks_log_config config = log_fixture_config();
    struct ks_log *log = build_two_transactions(&env, &config);
    ks_log_flush(log);
    ks_log_close(log);
    CU_ASSERT_EQUAL(ks_disk_delete(env.world, LOG_NODE, TXN_INDEX), KS_IO_OK);
    struct ks_log_recovery_report report;
    log = ks_log_open(env.world, LOG_NODE, LOG_DIR, &config, 0, false, &report);
    CU_ASSERT(report.recovered);
    check_aborted(log);
    ks_log_flush(log);
    check_txn_index_file(&env);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

/* Truncation below an abort marker drops its entry (TransactionIndex.
 * truncateTo) and reopens both transactions. */
static void test_truncation_drops_entries(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 5, 2);
    struct ks_log_config config = log_fixture_config();
    struct ks_log *log = build_two_transactions(&env, &config);
    ks_log_truncate_to(log, 8);
    GArray *aborted = g_array_new(FALSE, FALSE, sizeof(struct ks_aborted_txn));
    ks_log_collect_aborted(log, 0, 8, aborted);
    CU_ASSERT_EQUAL(aborted->len, 0);
    g_array_free(aborted, TRUE);
    CU_ASSERT_EQUAL(ks_log_open_txn_count(log), 2);
    CU_ASSERT_EQUAL(ks_log_last_stable_offset(log, 8), 0);
    ks_log_flush(log);
    GByteArray *bytes = log_fixture_real_bytes(&env, TXN_INDEX);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
    CU_ASSERT_EQUAL(bytes->len, 0);
    g_byte_array_unref(bytes);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

static bool parse_view(const GByteArray *bytes, int64_t base_offset, struct ks_batch_view *view)
{
    ks_batch_set_offset_and_epoch(bytes->data, base_offset, 0);
    return ks_batch_parse(bytes->data, bytes->len, view, NULL) == KS_BATCH_OK;
}

/* CompletedFetch with READ_COMMITTED over: producer 7 at 0-2 (aborted at 8),
 * plain batch 3-4, producer 8 at 5-6 (committed at 9), producer 7 again at 7,
 * then producer 7's next transaction at 10 (not aborted). */
static void test_read_committed_filter(void)
{
    struct {
        GByteArray *bytes;
        int64_t base;
        bool skipped;
    } batches[] = {
        { txn_batch(7, 0, 3), 0, true },
        { log_fixture_batch(2, 0, 10, TS0), 3, false },
        { txn_batch(8, 0, 2), 5, false },
        { txn_batch(7, 3, 1), 7, true },
        { ks_batch_build_end_txn_marker(TS0, 7, 0, false, 1), 8, true },
        { ks_batch_build_end_txn_marker(TS0, 8, 0, true, 1), 9, true },
        { txn_batch(7, 4, 1), 10, false },
    };
    const struct ks_fetch_aborted aborted[] = { { 7, 0 } };
    struct ks_txn_filter committed;
    struct ks_txn_filter uncommitted;
    ks_txn_filter_init(&committed, aborted, 1);
    ks_txn_filter_init(&uncommitted, NULL, 0);
    CU_ASSERT_PTR_NULL(uncommitted.aborted); /* nothing to drop: nothing allocated */
    CU_ASSERT_PTR_NULL(uncommitted.aborted_pids);
    for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
        struct ks_batch_view view;
        CU_ASSERT_FATAL(parse_view(batches[i].bytes, batches[i].base, &view));
        CU_ASSERT_EQUAL(ks_txn_filter_skip(&committed, &view), batches[i].skipped);
        /* read_uncommitted drops only the markers. */
        CU_ASSERT_EQUAL(ks_txn_filter_skip(&uncommitted, &view),
                        (view.attributes & KS_ATTR_CONTROL) != 0);
        g_byte_array_unref(batches[i].bytes);
    }
    ks_txn_filter_deinit(&committed);
    ks_txn_filter_deinit(&uncommitted);
}

/* A fetch starting inside an aborted transaction, with its first offset
 * below the fetch offset: the batch is still dropped. */
static void test_read_committed_filter_mid_transaction(void)
{
    const struct ks_fetch_aborted aborted[] = { { 8, 12 }, { 7, 0 } }; /* any order */
    struct ks_txn_filter filter;
    ks_txn_filter_init(&filter, aborted, 2);
    GByteArray *seven = txn_batch(7, 3, 1);
    GByteArray *eight = txn_batch(8, 0, 1);
    struct ks_batch_view view;
    CU_ASSERT_FATAL(parse_view(eight, 6, &view));
    CU_ASSERT_FALSE(ks_txn_filter_skip(&filter, &view)); /* 8's abort starts at 12 */
    CU_ASSERT_FATAL(parse_view(seven, 7, &view));
    CU_ASSERT_TRUE(ks_txn_filter_skip(&filter, &view));
    CU_ASSERT_FATAL(parse_view(eight, 12, &view));
    CU_ASSERT_TRUE(ks_txn_filter_skip(&filter, &view));
    g_byte_array_unref(seven);
    g_byte_array_unref(eight);
    ks_txn_filter_deinit(&filter);
}

/* Zombie fencing on a partition (ProducerAppendInfo.appendEndTxnMarker): a
 * marker of a newer epoch, appended by the leader or read back from the log,
 * becomes the producer's epoch, so the old instance's batches are refused
 * with INVALID_PRODUCER_EPOCH, while the new instance starts at sequence 0. */
static void test_marker_fences_old_epoch(void)
{
    struct ks_producer_state *state = ks_producer_state_new();
    ks_producer_state_update(state, 7000, 0, 0, 9, 0, 9);
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 7000, 0, 10, 19, NULL, NULL), KS_ERR_NONE);
    ks_producer_state_update_marker(state, 7000, 1);
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 7000, 0, 10, 19, NULL, NULL),
                    KS_ERR_INVALID_PRODUCER_EPOCH);
    CU_ASSERT_EQUAL(ks_producer_state_check_epoch(state, 7000, 0), KS_ERR_INVALID_PRODUCER_EPOCH);
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 7000, 2, 0, 9, NULL, NULL), KS_ERR_NONE);
    /* A marker of the same epoch keeps the sequence: the next transaction
     * continues it. */
    ks_producer_state_clear(state);
    ks_producer_state_update(state, 7000, 3, 0, 9, 0, 9);
    ks_producer_state_update_marker(state, 7000, 3);
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 7000, 3, 10, 19, NULL, NULL), KS_ERR_NONE);
    /* The rebuild from the log's bytes reads the marker's epoch too. */
    ks_producer_state_clear(state);
    ks_producer_state_update(state, 7000, 0, 0, 9, 0, 9);
    GByteArray *marker = ks_batch_build_end_txn_marker(TS0, 7000, 1, false, 0);
    ks_producer_state_update_from_batches(state, marker->data, marker->len);
    CU_ASSERT_EQUAL(ks_producer_state_check(state, 7000, 0, 10, 19, NULL, NULL),
                    KS_ERR_INVALID_PRODUCER_EPOCH);
    g_byte_array_unref(marker);
    ks_producer_state_free(state);
}

void ks_test_register_txn_log(void)
{
    static const struct ks_test_case cases[] = {
        { "end-transaction marker bytes", test_marker_bytes },
        { "a marker fences the older epoch", test_marker_fences_old_epoch },
        { "LSO and .txnindex", test_lso_and_txn_index },
        { "stable transactions forgotten", test_stable_transactions_forgotten },
        { "no .txnindex without aborts", test_no_txn_index_without_aborts },
        { "reopen keeps open transactions", test_reopen_keeps_open_transactions },
        { "recovery rebuilds .txnindex", test_recovery_rebuilds_txn_index },
        { "truncation drops entries", test_truncation_drops_entries },
        { "read_committed filter", test_read_committed_filter },
        { "read_committed filter mid-transaction", test_read_committed_filter_mid_transaction },
    };
    KS_TEST_ADD_SUITE("core/txn_log", cases);
}
