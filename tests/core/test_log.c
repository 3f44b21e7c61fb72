/*
** tests/core/test_log.c: the segment log's normal operation.
**
** Goal: appends, reads, indexes, rolls, truncation, timestamps, the epoch
** cache, checkpoints, retention and compaction behave as Kafka's do
** (kafka-reference 1-3, 9.7), and the files on disk are in Kafka's format.
** Method: each test builds a fresh world and log folder, drives the log
** through its API with small segment and index settings so that every
** boundary is crossed, then checks results against an independent model
** computed in the test (expected index entries from batch sizes, expected
** surviving keys) and against the bytes of the real files.
*/
#include "log_fixture.h"

#include "../../sim/dumplog.h"

#include <glib/gstdio.h>
#include <inttypes.h>

#define TS0 INT64_C(1767225600000)

static struct ks_log *open_log(struct ks_test_env *env, const struct ks_log_config *config)
{
    struct ks_log_recovery_report report;
    struct ks_log *log = ks_log_open(env->world, LOG_NODE, LOG_DIR, config, 0, true, &report);
    CU_ASSERT_PTR_NOT_NULL_FATAL(log);
    CU_ASSERT_FALSE(report.recovered);
    return log;
}

static GByteArray *read_real_file(struct ks_test_env *env, const char *name)
{
    char *relative = g_strdup_printf("%s/%s", LOG_DIR, name);
    char *path = ks_world_real_path(env->world, relative);
    gchar *contents = NULL;
    gsize length = 0;
    GByteArray *bytes = g_byte_array_new();
    if (g_file_get_contents(path, &contents, &length, NULL)) {
        g_byte_array_append(bytes, (const guint8 *)contents, (guint)length);
        g_free(contents);
    } else {
        g_byte_array_unref(bytes);
        bytes = NULL;
    }
    g_free(path);
    g_free(relative);
    return bytes;
}

static uint32_t be32(const uint8_t *bytes)
{
    return (uint32_t)bytes[0] << 24 | (uint32_t)bytes[1] << 16 | (uint32_t)bytes[2] << 8 | bytes[3];
}

static void test_append_assigns_offsets_and_reads_back(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    struct ks_log_config config = log_fixture_config();
    struct ks_log *log = open_log(&env, &config);
    CU_ASSERT_EQUAL(ks_log_leo(log), 0);
    CU_ASSERT_EQUAL(ks_log_segment_count(log), 1);
    CU_ASSERT_STRING_EQUAL(ks_log_dir(log), LOG_DIR);
    int64_t expected_base = 0;
    for (int i = 0; i < 20; i++) {
        int32_t count = 1 + i % 5;
        int64_t base = log_fixture_append(log, count, i * 10, 20, TS0 + i, 3, NULL);
        CU_ASSERT_EQUAL(base, expected_base);
        expected_base += count;
    }
    CU_ASSERT_EQUAL(ks_log_leo(log), expected_base);
    /* Every offset reads back the batch that holds it, stamped with epoch 3. */
    for (int64_t offset = 0; offset < expected_base; offset++) {
        GByteArray *out = g_byte_array_new();
        CU_ASSERT_EQUAL(ks_log_read(log, offset, INT64_MAX, 1, out), KS_LOG_OK);
        struct ks_batch_view batch;
        size_t batch_bytes = 0;
        CU_ASSERT_EQUAL_FATAL(ks_batch_parse(out->data, out->len, &batch, &batch_bytes),
                              KS_BATCH_OK);
        CU_ASSERT_EQUAL(batch_bytes, out->len); /* KIP-74: one whole batch over max_bytes */
        CU_ASSERT(batch.base_offset <= offset && offset <= ks_batch_last_offset(&batch));
        CU_ASSERT_EQUAL(batch.partition_leader_epoch, 3);
        g_byte_array_unref(out);
    }
    /* upto_offset stops before a batch whose last offset reaches it. */
    GByteArray *out = g_byte_array_new();
    CU_ASSERT_EQUAL(ks_log_read(log, 0, 0, 1 << 20, out), KS_LOG_OK);
    CU_ASSERT_EQUAL(out->len, 0); /* nothing below upto 0 */
    g_byte_array_set_size(out, 0);
    CU_ASSERT_EQUAL(ks_log_read(log, 0, 3, 1 << 20, out), KS_LOG_OK);
    int64_t count = 0;
    for (size_t position = 0; position < out->len; count++) {
        struct ks_batch_view batch;
        size_t batch_bytes = 0;
        CU_ASSERT_EQUAL_FATAL(
            ks_batch_parse(out->data + position, out->len - position, &batch, &batch_bytes),
            KS_BATCH_OK);
        CU_ASSERT(ks_batch_last_offset(&batch) < 3);
        position += batch_bytes;
    }
    CU_ASSERT_EQUAL(count, 2); /* offsets 0 and 1..2 */
    g_byte_array_set_size(out, 0);
    CU_ASSERT_EQUAL(ks_log_read(log, expected_base, INT64_MAX, 100, out), KS_LOG_OK);
    CU_ASSERT_EQUAL(out->len, 0);
    CU_ASSERT_EQUAL(ks_log_read(log, expected_base + 1, INT64_MAX, 100, out),
                    KS_LOG_OFFSET_OUT_OF_RANGE);
    CU_ASSERT_EQUAL(ks_log_read(log, -1, INT64_MAX, 100, out), KS_LOG_OFFSET_OUT_OF_RANGE);
    g_byte_array_unref(out);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

static void test_bad_input_is_refused(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 2, 2);
    struct ks_log_config config = log_fixture_config();
    struct ks_log *log = open_log(&env, &config);
    GByteArray *bytes = log_fixture_batch(3, 0, 10, TS0);
    int64_t base = 0;
    int64_t last = 0;
    bytes->data[bytes->len - 1] ^= 1;
    CU_ASSERT_EQUAL(ks_log_append_as_leader(log, bytes->data, bytes->len, 0, 0, &base, &last),
                    KS_LOG_CORRUPT);
    bytes->data[bytes->len - 1] ^= 1;
    CU_ASSERT_EQUAL(ks_log_append_as_leader(log, bytes->data, bytes->len - 1, 0, 0, &base, &last),
                    KS_LOG_CORRUPT);
    CU_ASSERT_EQUAL(ks_log_leo(log), 0);
    /* Follower appends keep offsets and must not go below the LEO. */
    ks_batch_set_offset_and_epoch(bytes->data, 5, 2);
    CU_ASSERT_EQUAL(ks_log_append_as_follower(log, bytes->data, bytes->len, 0), KS_LOG_OK);
    CU_ASSERT_EQUAL(ks_log_leo(log), 8);
    CU_ASSERT_EQUAL(ks_log_latest_epoch(log), 2);
    CU_ASSERT_EQUAL(ks_log_append_as_follower(log, bytes->data, bytes->len, 0),
                    KS_LOG_OFFSET_OUT_OF_RANGE);
    ks_batch_set_offset_and_epoch(bytes->data, 8, 4);
    CU_ASSERT_EQUAL(ks_log_append_as_follower(log, bytes->data, bytes->len, 0), KS_LOG_OK);
    int32_t epoch = 0;
    int64_t end = 0;
    CU_ASSERT(ks_log_epoch_end_offset(log, 3, &epoch, &end));
    CU_ASSERT_EQUAL(epoch, 2);
    CU_ASSERT_EQUAL(end, 8);
    CU_ASSERT_EQUAL(ks_log_epoch_at_end(log), 4);
    g_byte_array_unref(bytes);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

/* The *_checked appends skip the CRC only for the prefix the caller says it
 * checked: a corrupt batch after that prefix, or one the prefix only partly
 * covers, is still refused on the leader and on the follower path, and
 * nothing is written. */
static void test_corrupt_batch_refused_on_every_append_path(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 2, 2);
    struct ks_log_config config = log_fixture_config();
    struct ks_log *log = open_log(&env, &config);
    GByteArray *good = log_fixture_batch(2, 0, 10, TS0);
    GByteArray *bad = log_fixture_batch(3, 0, 20, TS0);
    bad->data[bad->len - 1] ^= 1;
    struct ks_batch_view view;
    CU_ASSERT_EQUAL(ks_batch_parse(good->data, good->len, &view, NULL), KS_BATCH_OK);
    CU_ASSERT_EQUAL(ks_batch_parse(bad->data, bad->len, &view, NULL), KS_BATCH_BAD_CRC);
    CU_ASSERT_EQUAL(ks_batch_parse_crc_checked(bad->data, bad->len, &view, NULL), KS_BATCH_OK);
    GByteArray *both = g_byte_array_new();
    g_byte_array_append(both, good->data, good->len);
    g_byte_array_append(both, bad->data, bad->len);
    GByteArray *copy = g_byte_array_new();
    int64_t base = -1;
    int64_t last = -1;
    /* Leader: no prefix, a prefix covering only the good batch, a prefix
     * ending inside the bad batch. */
    size_t prefixes[] = { 0, good->len, good->len + 8 };
    for (size_t i = 0; i < G_N_ELEMENTS(prefixes); i++) {
        g_byte_array_set_size(copy, 0);
        g_byte_array_append(copy, both->data, both->len);
        CU_ASSERT_EQUAL(ks_log_append_as_leader_checked(log, copy->data, copy->len, prefixes[i], 0,
                                                        0, &base, &last),
                        KS_LOG_CORRUPT);
        g_byte_array_set_size(copy, 0);
        g_byte_array_append(copy, bad->data, bad->len);
        CU_ASSERT_EQUAL(ks_log_append_as_leader_checked(
                            log, copy->data, copy->len,
                            prefixes[i] < bad->len ? prefixes[i] / 2 : 0, 0, 0, &base, &last),
                        KS_LOG_CORRUPT);
    }
    CU_ASSERT_EQUAL(ks_log_append_as_leader(log, bad->data, bad->len, 0, 0, &base, &last),
                    KS_LOG_CORRUPT);
    CU_ASSERT_EQUAL(ks_log_leo(log), 0);
    CU_ASSERT_EQUAL(ks_log_size_bytes(log), 0);
    /* Follower: the same with offsets set. */
    ks_batch_set_offset_and_epoch(both->data, 0, 1);
    ks_batch_set_offset_and_epoch(both->data + good->len, 2, 1);
    ks_batch_set_offset_and_epoch(bad->data, 0, 1);
    for (size_t i = 0; i < G_N_ELEMENTS(prefixes); i++) {
        CU_ASSERT_EQUAL(
            ks_log_append_as_follower_checked(log, both->data, both->len, prefixes[i], 0),
            KS_LOG_CORRUPT);
    }
    CU_ASSERT_EQUAL(ks_log_append_as_follower_checked(log, bad->data, bad->len, 8, 0),
                    KS_LOG_CORRUPT);
    CU_ASSERT_EQUAL(ks_log_append_as_follower(log, bad->data, bad->len, 0), KS_LOG_CORRUPT);
    /* The follower's parse of the first batch covers that batch only. */
    struct ks_batch_view first;
    CU_ASSERT_EQUAL(ks_batch_parse(both->data, both->len, &first, NULL), KS_BATCH_OK);
    CU_ASSERT_EQUAL(ks_log_append_as_follower_parsed(log, both->data, both->len, &first, 0),
                    KS_LOG_CORRUPT);
    CU_ASSERT_EQUAL(ks_log_leo(log), 0);
    CU_ASSERT_EQUAL(ks_log_size_bytes(log), 0);
    /* A good batch with its checked prefix is accepted on both paths. */
    g_byte_array_set_size(copy, 0);
    g_byte_array_append(copy, good->data, good->len);
    CU_ASSERT_EQUAL(
        ks_log_append_as_leader_checked(log, copy->data, copy->len, copy->len, 0, 0, &base, &last),
        KS_LOG_OK);
    CU_ASSERT_EQUAL(base, 0);
    CU_ASSERT_EQUAL(last, 1);
    ks_batch_set_offset_and_epoch(good->data, 2, 0);
    CU_ASSERT_EQUAL(ks_log_append_as_follower_checked(log, good->data, good->len, good->len, 0),
                    KS_LOG_OK);
    CU_ASSERT_EQUAL(ks_log_leo(log), 4);
    ks_batch_set_offset_and_epoch(good->data, 4, 0);
    CU_ASSERT_EQUAL(ks_batch_parse(good->data, good->len, &first, NULL), KS_BATCH_OK);
    CU_ASSERT_EQUAL(ks_log_append_as_follower_parsed(log, good->data, good->len, &first, 0),
                    KS_LOG_OK);
    CU_ASSERT_EQUAL(ks_log_leo(log), 6);
    g_byte_array_unref(copy);
    g_byte_array_unref(both);
    g_byte_array_unref(bad);
    g_byte_array_unref(good);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

/* The expected offset index, computed from batch sizes with Kafka's rule. */
static void test_index_matches_kafka_rule_and_lookups(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 3, 2);
    struct ks_log_config config = log_fixture_config();
    config.index_interval_bytes = 300;
    struct ks_log *log = open_log(&env, &config);
    GArray *expected = g_array_new(FALSE, FALSE, sizeof(int64_t) * 2);
    int64_t since = 0;
    int64_t position = 0;
    for (int i = 0; i < 60; i++) {
        int32_t count = 1 + (i * 7) % 4;
        GPtrArray *kept = g_ptr_array_new_with_free_func((GDestroyNotify)g_byte_array_unref);
        int64_t base = log_fixture_append(log, count, i, 10 + (i * 13) % 90, TS0 + i, 0, kept);
        GByteArray *bytes = g_ptr_array_index(kept, 0);
        if (since > config.index_interval_bytes) {
            int64_t entry[2] = { base + count - 1, position };
            g_array_append_val(expected, entry);
            since = 0;
        }
        since += bytes->len;
        position += bytes->len;
        g_ptr_array_unref(kept);
    }
    CU_ASSERT(expected->len > 5);
    GByteArray *index = read_real_file(&env, "00000000000000000000.index");
    CU_ASSERT_PTR_NOT_NULL_FATAL(index);
    CU_ASSERT_EQUAL(index->len, expected->len * 8);
    for (guint i = 0; i < expected->len && (i + 1) * 8 <= index->len; i++) {
        const int64_t *entry = &g_array_index(expected, int64_t, i * 2);
        CU_ASSERT_EQUAL(be32(index->data + i * 8), entry[0]);
        CU_ASSERT_EQUAL(be32(index->data + i * 8 + 4), entry[1]);
    }
    /* Reads at each indexed offset, one before and one after. */
    for (guint i = 0; i < expected->len; i++) {
        int64_t indexed = g_array_index(expected, int64_t, i * 2);
        for (int64_t offset = indexed - 1; offset <= indexed + 1; offset++) {
            if (offset < 0 || offset >= ks_log_leo(log)) {
                continue;
            }
            GByteArray *out = g_byte_array_new();
            CU_ASSERT_EQUAL(ks_log_read(log, offset, INT64_MAX, 1, out), KS_LOG_OK);
            struct ks_batch_view batch;
            CU_ASSERT_EQUAL_FATAL(ks_batch_parse(out->data, out->len, &batch, NULL), KS_BATCH_OK);
            CU_ASSERT(batch.base_offset <= offset && offset <= ks_batch_last_offset(&batch));
            g_byte_array_unref(out);
        }
    }
    /* A clean reopen loads the same index and answers the same. */
    ks_log_close(log);
    log = open_log(&env, &config);
    GByteArray *index_again = read_real_file(&env, "00000000000000000000.index");
    CU_ASSERT_EQUAL(index_again->len, index->len);
    CU_ASSERT(memcmp(index_again->data, index->data, index->len) == 0);
    int64_t batch_count = 0;
    GByteArray *all = log_fixture_read_all(log, &batch_count);
    CU_ASSERT_EQUAL(batch_count, 60);
    CU_ASSERT_EQUAL((int64_t)all->len, ks_log_size_bytes(log));
    g_byte_array_unref(all);
    g_byte_array_unref(index_again);
    g_byte_array_unref(index);
    g_array_free(expected, TRUE);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

static void test_roll_and_read_across_segments(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 4, 2);
    struct ks_log_config config = log_fixture_config();
    config.segment_bytes = 1000;
    config.index_interval_bytes = 200;
    struct ks_log *log = open_log(&env, &config);
    for (int i = 0; i < 100; i++) {
        log_fixture_append(log, 2, i * 2, 30, TS0 + i, 0, NULL);
    }
    CU_ASSERT_EQUAL(ks_log_leo(log), 200);
    CU_ASSERT(ks_log_segment_count(log) > 10);
    /* Rolled segments were fsynced: the recovery point is the active base. */
    CU_ASSERT(ks_log_recovery_point(log) > 0);
    char **names = ks_disk_list(env.world, LOG_NODE, LOG_DIR);
    CU_ASSERT_PTR_NOT_NULL_FATAL(names);
    int log_files = 0;
    int64_t previous_base = -1;
    for (char **name = names; *name != NULL; name++) {
        if (g_str_has_suffix(*name, ".log")) {
            CU_ASSERT_EQUAL(strlen(*name), 24);
            int64_t base = g_ascii_strtoll(*name, NULL, 10);
            CU_ASSERT(base > previous_base);
            previous_base = base;
            log_files++;
            /* Each segment stays at or under segment.bytes (batches are small). */
            char *relative = g_strdup_printf("%s/%s", LOG_DIR, *name);
            enum ks_io_result result;
            ks_file *file = ks_disk_open(env.world, LOG_NODE, relative, 0, &result);
            CU_ASSERT(ks_disk_size(file) <= config.segment_bytes);
            ks_disk_close(file);
            g_free(relative);
        }
    }
    ks_disk_list_free(names);
    CU_ASSERT_EQUAL(log_files, ks_log_segment_count(log));
    for (int64_t offset = 0; offset < 200; offset++) {
        GByteArray *out = g_byte_array_new();
        CU_ASSERT_EQUAL(ks_log_read(log, offset, INT64_MAX, 1, out), KS_LOG_OK);
        struct ks_batch_view batch;
        CU_ASSERT_EQUAL_FATAL(ks_batch_parse(out->data, out->len, &batch, NULL), KS_BATCH_OK);
        CU_ASSERT(batch.base_offset <= offset && offset <= ks_batch_last_offset(&batch));
        g_byte_array_unref(out);
    }
    int64_t batch_count = 0;
    GByteArray *all = log_fixture_read_all(log, &batch_count);
    CU_ASSERT_EQUAL(batch_count, 100);
    g_byte_array_unref(all);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

/* segment.ms rolls by record timestamps (first batch vs incoming), a full
 * offset index rolls too, flush.messages and flush.ms fsync and move the
 * recovery point. */
static void test_roll_by_time_index_and_flush_settings(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 13, 4);
    struct ks_log_config config = log_fixture_config();
    config.segment_ns = 10 * (int64_t)KS_NS_PER_S;
    struct ks_log *log = ks_log_open(env.world, 1, "broker-1/t-0", &config, 0, true, NULL);
    /* Batches 3 s apart: a segment spans at most 10 s of timestamps. */
    for (int i = 0; i < 12; i++) {
        log_fixture_append(log, 1, i, 10, TS0 + i * 3000, 0, NULL);
    }
    /* Segments start at batches 0, 4, 8: 4 * 3 s = 12 s > 10 s. */
    CU_ASSERT_EQUAL(ks_log_segment_count(log), 3);
    CU_ASSERT(ks_disk_exists(env.world, 1, "broker-1/t-0/00000000000000000004.log"));
    CU_ASSERT(ks_disk_exists(env.world, 1, "broker-1/t-0/00000000000000000008.log"));
    ks_log_close(log);

    config = log_fixture_config();
    config.index_interval_bytes = 0;    /* an entry for every batch but the first */
    config.segment_index_bytes = 8 * 4; /* four entries */
    log = ks_log_open(env.world, 2, "broker-2/t-0", &config, 0, true, NULL);
    for (int i = 0; i < 20; i++) {
        log_fixture_append(log, 1, i, 10, TS0, 0, NULL);
    }
    /* Each segment holds 5 batches: the first without an entry, then 4. */
    CU_ASSERT_EQUAL(ks_log_segment_count(log), 4);
    ks_log_close(log);
    /* The counts should_roll reads (R13) follow the indexes loaded at open
     * (clean) and rebuilt by recovery: the full active segment rolls. */
    for (int32_t i = 0; i < 2; i++) {
        log = ks_log_open(env.world, 2, "broker-2/t-0", &config, 15 + 5 * i, i == 0, NULL);
        CU_ASSERT_EQUAL(ks_log_segment_count(log), 4 + i);
        log_fixture_append(log, 1, 20 + 5 * i, 10, TS0, 0, NULL);
        CU_ASSERT_EQUAL(ks_log_segment_count(log), 5 + i);
        for (int32_t j = 1; j < 5; j++) {
            log_fixture_append(log, 1, 20 + 5 * i + j, 10, TS0, 0, NULL);
        }
        CU_ASSERT_EQUAL(ks_log_segment_count(log), 5 + i);
        ks_log_close(log);
    }

    config = log_fixture_config();
    config.flush_messages = 5;
    log = ks_log_open(env.world, 3, "broker-3/t-0", &config, 0, true, NULL);
    log_fixture_append(log, 1, 0, 10, TS0, 0, NULL); /* epoch 0 starts: its file is fsynced */
    uint64_t fsyncs = ks_world_disk_fsync_count(env.world, 3);
    for (int i = 1; i < 4; i++) {
        log_fixture_append(log, 1, i, 10, TS0, 0, NULL);
    }
    CU_ASSERT_EQUAL(ks_log_recovery_point(log), 0);
    CU_ASSERT_EQUAL(ks_world_disk_fsync_count(env.world, 3), fsyncs);
    log_fixture_append(log, 1, 4, 10, TS0, 0, NULL);
    CU_ASSERT_EQUAL(ks_log_recovery_point(log), 5);
    CU_ASSERT(ks_world_disk_fsync_count(env.world, 3) > fsyncs);
    CU_ASSERT_EQUAL(
        ks_world_disk_durable_size(env.world, 3, "broker-3/t-0/00000000000000000000.log"),
        ks_log_size_bytes(log));
    ks_log_close(log);

    config = log_fixture_config();
    config.flush_ns = 2 * (int64_t)KS_NS_PER_S;
    log = ks_log_open(env.world, 3, "broker-3/u-0", &config, 0, true, NULL);
    log_fixture_append(log, 3, 0, 10, TS0, 0, NULL);
    ks_log_maybe_flush(log, 1 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(ks_log_recovery_point(log), 0);
    ks_log_maybe_flush(log, 2 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(ks_log_recovery_point(log), 3);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

/* Truncation leaves exactly what a fresh log with the same appends has. */
static void test_truncation_matches_fresh_log(void)
{
    const int64_t points[] = { 0, 1, 37, 38, 99, 150, 199 };
    for (size_t p = 0; p < KS_ARRAY_COUNT(points); p++) {
        struct ks_test_env env;
        ks_test_env_init(&env, 5, 3);
        struct ks_log_config config = log_fixture_config();
        config.segment_bytes = 1500;
        config.index_interval_bytes = 150;
        struct ks_log *log = open_log(&env, &config);
        for (int i = 0; i < 100; i++) {
            if (i == 50) {
                ks_log_epoch_assign(log, 7, ks_log_leo(log));
            }
            log_fixture_append(log, 2, i * 2, 25, TS0 + i, i < 50 ? 5 : 7, NULL);
        }
        int64_t point = points[p];
        ks_log_truncate_to(log, point);
        /* Batches hold 2 records; an odd point cuts the batch holding it. */
        int64_t expected_leo = point - point % 2;
        CU_ASSERT_EQUAL(ks_log_leo(log), expected_leo);
        if (expected_leo <= 100) {
            CU_ASSERT(ks_log_latest_epoch(log) == 5 || expected_leo == 0);
        } else {
            CU_ASSERT_EQUAL(ks_log_latest_epoch(log), 7);
        }
        CU_ASSERT(ks_log_recovery_point(log) <= ks_log_leo(log));
        /* Append the rest again; the files must equal a log that never truncated. */
        for (int64_t i = expected_leo / 2; i < 100; i++) {
            log_fixture_append(log, 2, (int32_t)i * 2, 25, TS0 + i, i < 50 ? 5 : 7, NULL);
        }
        CU_ASSERT_EQUAL(ks_log_leo(log), 200);
        /* The reference: the same appends into another folder. */
        struct ks_log *reference =
            ks_log_open(env.world, 2, "broker-2/orders-0", &config, 0, true, NULL);
        for (int i = 0; i < 100; i++) {
            log_fixture_append(reference, 2, i * 2, 25, TS0 + i, i < 50 ? 5 : 7, NULL);
        }
        int64_t count_a = 0;
        int64_t count_b = 0;
        GByteArray *a = log_fixture_read_all(log, &count_a);
        GByteArray *b = log_fixture_read_all(reference, &count_b);
        CU_ASSERT_EQUAL(a->len, b->len);
        CU_ASSERT(a->len == b->len && memcmp(a->data, b->data, a->len) == 0);
        CU_ASSERT_EQUAL(ks_log_segment_count(log), ks_log_segment_count(reference));
        ks_log_close(log);
        ks_log_close(reference);
        /* Index files are identical too (same rule, rebuilt or incremental). */
        char **names = ks_disk_list(env.world, 2, "broker-2/orders-0");
        for (char **name = names; name != NULL && *name != NULL; name++) {
            if (!g_str_has_suffix(*name, "index")) {
                continue;
            }
            char *path_a = g_strdup_printf("%s/%s/%s", env.run_dir, LOG_DIR, *name);
            char *path_b = g_strdup_printf("%s/broker-2/orders-0/%s", env.run_dir, *name);
            gchar *bytes_a = NULL;
            gchar *bytes_b = NULL;
            gsize length_a = 0;
            gsize length_b = 0;
            bool read_a = g_file_get_contents(path_a, &bytes_a, &length_a, NULL);
            bool read_b = g_file_get_contents(path_b, &bytes_b, &length_b, NULL);
            CU_ASSERT(read_a && read_b);
            if (read_a && read_b) {
                /* The time index of the truncated segment may lack the final
                 * entry a roll adds; offset indexes must match exactly. */
                if (g_str_has_suffix(*name, ".index")) {
                    CU_ASSERT_EQUAL(length_a, length_b);
                    CU_ASSERT(length_a == length_b && memcmp(bytes_a, bytes_b, length_a) == 0);
                }
            }
            g_free(bytes_a);
            g_free(bytes_b);
            g_free(path_a);
            g_free(path_b);
        }
        ks_disk_list_free(names);
        g_byte_array_unref(a);
        g_byte_array_unref(b);
        ks_test_env_deinit(&env);
    }
}

static void test_truncate_fully_and_start_at(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 6, 2);
    struct ks_log_config config = log_fixture_config();
    config.segment_bytes = 500;
    struct ks_log *log = open_log(&env, &config);
    for (int i = 0; i < 20; i++) {
        log_fixture_append(log, 3, i, 20, TS0, 1, NULL);
    }
    ks_log_truncate_fully_and_start_at(log, 1000);
    CU_ASSERT_EQUAL(ks_log_leo(log), 1000);
    CU_ASSERT_EQUAL(ks_log_start_offset(log), 1000);
    CU_ASSERT_EQUAL(ks_log_segment_count(log), 1);
    CU_ASSERT_EQUAL(ks_log_latest_epoch(log), -1);
    CU_ASSERT_FALSE(ks_disk_exists(env.world, LOG_NODE, LOG_DIR "/00000000000000000000.log"));
    CU_ASSERT(ks_disk_exists(env.world, LOG_NODE, LOG_DIR "/00000000000000001000.log"));
    CU_ASSERT_EQUAL(log_fixture_append(log, 2, 0, 10, TS0, 2, NULL), 1000);
    GByteArray *out = g_byte_array_new();
    CU_ASSERT_EQUAL(ks_log_read(log, 999, INT64_MAX, 100, out), KS_LOG_OFFSET_OUT_OF_RANGE);
    g_byte_array_unref(out);
    ks_log_close(log);
    log = open_log(&env, &config);
    CU_ASSERT_EQUAL(ks_log_leo(log), 1002);
    CU_ASSERT_EQUAL(ks_log_start_offset(log), 1000);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

static void test_offset_for_timestamp(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 7, 2);
    struct ks_log_config config = log_fixture_config();
    config.segment_bytes = 800;
    config.index_interval_bytes = 100;
    struct ks_log *log = open_log(&env, &config);
    /* Batch i holds records with timestamps TS0 + 10*i, +1, +2. */
    for (int i = 0; i < 50; i++) {
        log_fixture_append(log, 3, i * 3, 15, TS0 + 10 * i, 0, NULL);
    }
    for (int64_t t = TS0 - 5; t <= TS0 + 500; t++) {
        int64_t found = ks_log_offset_for_timestamp(log, t);
        /* Model: first record whose timestamp >= t. */
        int64_t expected = 150;
        for (int i = 0; i < 50 && expected == 150; i++) {
            for (int r = 0; r < 3; r++) {
                if (TS0 + 10 * i + r >= t) {
                    expected = i * 3 + r;
                    break;
                }
            }
        }
        CU_ASSERT_EQUAL(found, expected);
    }
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

static void test_epoch_cache_rules_and_file(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 8, 2);
    struct ks_log_config config = log_fixture_config();
    struct ks_log *log = open_log(&env, &config);
    int32_t epoch = 0;
    int64_t end = 0;
    /* Created with the log, empty, as Kafka's CheckpointFile creates it; no
     * temporary file was written for it. */
    GByteArray *created = read_real_file(&env, "leader-epoch-checkpoint");
    CU_ASSERT_PTR_NOT_NULL_FATAL(created);
    CU_ASSERT_EQUAL(created->len, 0);
    g_byte_array_unref(created);
    CU_ASSERT_FALSE(ks_log_epoch_end_offset(log, 5, &epoch, &end));
    CU_ASSERT_EQUAL(epoch, -1);
    CU_ASSERT_EQUAL(end, -1);
    CU_ASSERT_EQUAL(ks_log_epoch_at_end(log), -1);
    ks_log_epoch_assign(log, 1, 0);
    log_fixture_append(log, 5, 0, 10, TS0, 1, NULL);
    ks_log_epoch_assign(log, 3, 5);
    log_fixture_append(log, 5, 0, 10, TS0, 3, NULL);
    ks_log_epoch_assign(log, 2, 10); /* not above the latest: ignored */
    CU_ASSERT_EQUAL(ks_log_latest_epoch(log), 3);
    CU_ASSERT(ks_log_epoch_end_offset(log, 1, &epoch, &end));
    CU_ASSERT_EQUAL(epoch, 1);
    CU_ASSERT_EQUAL(end, 5);
    CU_ASSERT(ks_log_epoch_end_offset(log, 2, &epoch, &end)); /* KIP-279: largest <= 2 */
    CU_ASSERT_EQUAL(epoch, 1);
    CU_ASSERT_EQUAL(end, 5);
    CU_ASSERT(ks_log_epoch_end_offset(log, 9, &epoch, &end));
    CU_ASSERT_EQUAL(epoch, 3);
    CU_ASSERT_EQUAL(end, 10);
    CU_ASSERT_FALSE(ks_log_epoch_end_offset(log, 0, &epoch, &end));
    CU_ASSERT_EQUAL(ks_log_epoch_at_end(log), 3);
    GByteArray *file = read_real_file(&env, "leader-epoch-checkpoint");
    CU_ASSERT_PTR_NOT_NULL_FATAL(file);
    g_byte_array_append(file, (const guint8 *)"", 1);
    CU_ASSERT_STRING_EQUAL((const char *)file->data, "0\n2\n1 0\n3 5\n");
    g_byte_array_unref(file);
    CU_ASSERT_FALSE(ks_disk_exists(env.world, LOG_NODE, LOG_DIR "/leader-epoch-checkpoint.tmp"));
    /* Truncation removes entries at or above the point and rewrites the file. */
    ks_log_truncate_to(log, 5);
    CU_ASSERT_EQUAL(ks_log_latest_epoch(log), 1);
    CU_ASSERT_EQUAL(ks_log_epoch_at_end(log), 1);
    file = read_real_file(&env, "leader-epoch-checkpoint");
    g_byte_array_append(file, (const guint8 *)"", 1);
    CU_ASSERT_STRING_EQUAL((const char *)file->data, "0\n1\n1 0\n");
    g_byte_array_unref(file);
    /* A reopen reads it back. */
    ks_log_close(log);
    log = open_log(&env, &config);
    CU_ASSERT_EQUAL(ks_log_latest_epoch(log), 1);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

static void test_checkpoint_round_trip_and_malformed(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 9, 2);
    struct ks_checkpoint_entry entries[3];
    memset(entries, 0, sizeof(entries));
    strcpy(entries[0].topic, "orders");
    entries[0].partition = 0;
    entries[0].offset = 1532;
    strcpy(entries[1].topic, "orders");
    entries[1].partition = 1;
    entries[1].offset = 1498;
    strcpy(entries[2].topic, "__consumer_offsets");
    entries[2].partition = 49;
    entries[2].offset = 0;
    ks_checkpoint_write(env.world, LOG_NODE, "broker-1/replication-offset-checkpoint", entries, 3);
    char *path = ks_world_real_path(env.world, "broker-1/replication-offset-checkpoint");
    gchar *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents(path, &text, NULL, NULL));
    CU_ASSERT_STRING_EQUAL(text, "0\n3\norders 0 1532\norders 1 1498\n__consumer_offsets 49 0\n");
    g_free(text);
    GArray *back =
        ks_checkpoint_read(env.world, LOG_NODE, "broker-1/replication-offset-checkpoint");
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    CU_ASSERT_EQUAL(back->len, 3);
    for (guint i = 0; i < back->len && i < 3; i++) {
        const struct ks_checkpoint_entry *entry =
            &g_array_index(back, struct ks_checkpoint_entry, i);
        CU_ASSERT_STRING_EQUAL(entry->topic, entries[i].topic);
        CU_ASSERT_EQUAL(entry->partition, entries[i].partition);
        CU_ASSERT_EQUAL(entry->offset, entries[i].offset);
    }
    g_array_free(back, TRUE);
    const char *bad[] = {
        "",       "1\n0\n", "0\n2\norders 0 5\n", "0\n1\norders x 5\n", "0\n1\norders 0 5 extra\n",
        "0\n-1\n"
    };
    for (size_t i = 0; i < KS_ARRAY_COUNT(bad); i++) {
        enum ks_io_result result;
        ks_file *file = ks_disk_open(env.world, LOG_NODE, "broker-1/replication-offset-checkpoint",
                                     KS_DISK_TRUNCATE, &result);
        CU_ASSERT_PTR_NOT_NULL_FATAL(file);
        ks_disk_append(file, bad[i], strlen(bad[i]));
        ks_disk_close(file);
        CU_ASSERT_PTR_NULL(
            ks_checkpoint_read(env.world, LOG_NODE, "broker-1/replication-offset-checkpoint"));
    }
    CU_ASSERT_PTR_NULL(ks_checkpoint_read(env.world, LOG_NODE, "broker-1/missing"));
    g_free(path);
    ks_test_env_deinit(&env);
}

/* The checkpoint text is formatted without printf: byte for byte what
 * "%s %" PRId32 " %" PRId64 "\n" gives, for the numbers' edges (no offset
 * written today is negative, but a HW or a recovery point of -1 must still
 * round-trip as printf wrote it), for a name of the longest legal length,
 * for no lines at all, and through the line-by-line path with lines
 * skipped (as the log-start checkpoint skips zeros), read back. */
static void test_checkpoint_text_matches_printf(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 9, 2);
    static const int32_t partitions[] = { 0, 1, 9, 10, 99, 100, 12345, INT32_MAX, -1, INT32_MIN };
    static const int64_t offsets[] = { 0,
                                       -1,
                                       1,
                                       9,
                                       10,
                                       99,
                                       100,
                                       999999999,
                                       1000000000,
                                       INT64_C(4294967296),
                                       INT64_C(999999999999999999),
                                       INT64_C(1000000000000000000),
                                       INT64_MAX,
                                       INT64_MIN,
                                       INT64_MIN + 1,
                                       -10 };
    char long_name[KS_TOPIC_NAME_BYTES_MAX + 1];
    memset(long_name, 'x', KS_TOPIC_NAME_BYTES_MAX);
    long_name[KS_TOPIC_NAME_BYTES_MAX] = '\0';
    const char *names[] = { "a", "orders", "__consumer_offsets", long_name };
    size_t count = KS_ARRAY_COUNT(partitions) * KS_ARRAY_COUNT(offsets);
    struct ks_checkpoint_entry *entries = g_new0(struct ks_checkpoint_entry, count);
    GString *expected = g_string_new(NULL);
    g_string_append_printf(expected, "0\n%zu\n", count);
    size_t n = 0;
    for (size_t p = 0; p < KS_ARRAY_COUNT(partitions); p++) {
        for (size_t o = 0; o < KS_ARRAY_COUNT(offsets); o++) {
            const char *name = names[n % KS_ARRAY_COUNT(names)];
            g_strlcpy(entries[n].topic, name, sizeof entries[n].topic);
            entries[n].partition = partitions[p];
            entries[n].offset = offsets[o];
            g_string_append_printf(expected, "%s %" PRId32 " %" PRId64 "\n", name, partitions[p],
                                   offsets[o]);
            n++;
        }
    }
    const char *file = "broker-1/recovery-point-offset-checkpoint";
    char *path = ks_world_real_path(env.world, file);
    ks_checkpoint_write(env.world, LOG_NODE, file, entries, count);
    gchar *text = NULL;
    gsize text_bytes = 0;
    CU_ASSERT_FATAL(g_file_get_contents(path, &text, &text_bytes, NULL));
    CU_ASSERT_EQUAL(text_bytes, expected->len);
    CU_ASSERT_STRING_EQUAL(text, expected->str);
    g_free(text);
    CU_ASSERT_FALSE(
        ks_disk_exists(env.world, LOG_NODE, "broker-1/recovery-point-offset-checkpoint.tmp"));
    /* Line by line, every other entry skipped, in a buffer sized for all
     * of them with the longest name. */
    struct ks_checkpoint_text lines;
    ks_checkpoint_text_init(&lines, count, KS_TOPIC_NAME_BYTES_MAX);
    size_t kept = 0;
    GString *body = g_string_new(NULL);
    size_t kept_index[KS_ARRAY_COUNT(partitions) * KS_ARRAY_COUNT(offsets)];
    for (size_t i = 0; i < count; i += 2) {
        if (entries[i].partition < 0) {
            continue; /* a reader refuses these */
        }
        kept_index[kept] = i;
        ks_checkpoint_text_add(&lines, entries[i].topic, strlen(entries[i].topic),
                               entries[i].partition, entries[i].offset);
        g_string_append_printf(body, "%s %" PRId32 " %" PRId64 "\n", entries[i].topic,
                               entries[i].partition, entries[i].offset);
        kept++;
    }
    ks_checkpoint_text_write(env.world, LOG_NODE, file, &lines);
    g_string_printf(expected, "0\n%zu\n%s", kept, body->str);
    CU_ASSERT_FATAL(g_file_get_contents(path, &text, &text_bytes, NULL));
    CU_ASSERT_EQUAL(text_bytes, expected->len);
    CU_ASSERT_STRING_EQUAL(text, expected->str);
    g_free(text);
    GArray *back = ks_checkpoint_read(env.world, LOG_NODE, file);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    CU_ASSERT_EQUAL(back->len, kept);
    for (guint i = 0; i < back->len; i++) {
        const struct ks_checkpoint_entry *entry =
            &g_array_index(back, struct ks_checkpoint_entry, i);
        CU_ASSERT_STRING_EQUAL(entry->topic, entries[kept_index[i]].topic);
        CU_ASSERT_EQUAL(entry->partition, entries[kept_index[i]].partition);
        CU_ASSERT_EQUAL(entry->offset, entries[kept_index[i]].offset);
    }
    g_array_free(back, TRUE);
    /* No lines: "0\n0\n". */
    ks_checkpoint_text_init(&lines, 0, 1);
    ks_checkpoint_text_write(env.world, LOG_NODE, file, &lines);
    CU_ASSERT_FATAL(g_file_get_contents(path, &text, &text_bytes, NULL));
    CU_ASSERT_STRING_EQUAL(text, "0\n0\n");
    g_free(text);
    g_string_free(body, TRUE);
    g_string_free(expected, TRUE);
    g_free(entries);
    g_free(path);
    ks_test_env_deinit(&env);
}

static void test_retention_by_time_and_size(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 10, 3);
    struct ks_log_config config = log_fixture_config();
    config.segment_bytes = 600;
    config.retention_ns = 60LL * KS_NS_PER_S;
    struct ks_log *log = open_log(&env, &config);
    /* Record times: batch i at TS0 + i seconds. */
    for (int i = 0; i < 40; i++) {
        log_fixture_append(log, 2, i * 2, 30, TS0 + i * 1000, 0, NULL);
    }
    int32_t segments = ks_log_segment_count(log);
    CU_ASSERT(segments > 5);
    /* Nothing is old at t = 50 s. */
    CU_ASSERT_EQUAL(ks_log_apply_retention(log, 50 * KS_NS_PER_S, ks_log_leo(log)), 0);
    /* At t = 80 s, batches older than 20 s go; but the HW holds them at 0. */
    CU_ASSERT_EQUAL(ks_log_apply_retention(log, 80 * KS_NS_PER_S, 0), 0);
    int32_t deleted = ks_log_apply_retention(log, 80 * KS_NS_PER_S, ks_log_leo(log));
    CU_ASSERT(deleted > 0);
    CU_ASSERT_EQUAL(ks_log_segment_count(log), segments - deleted);
    int64_t start = ks_log_start_offset(log);
    CU_ASSERT(start > 0);
    char *name = g_strdup_printf("%s/%020" PRId64 ".log", LOG_DIR, start);
    CU_ASSERT(ks_disk_exists(env.world, LOG_NODE, name));
    g_free(name);
    CU_ASSERT_FALSE(ks_disk_exists(env.world, LOG_NODE, LOG_DIR "/00000000000000000000.log"));
    /* Batch i (offsets 2i, 2i+1) has timestamp TS0 + i s. Deleted: every
     * batch below `start` is older than 80 - 60 = 20 s; kept: the first
     * remaining segment [start, next) holds a batch that is not. */
    CU_ASSERT((start / 2 - 1) * 1000 < 20000);
    int64_t next_base = -1;
    char **listed = ks_disk_list(env.world, LOG_NODE, LOG_DIR);
    for (char **entry = listed; *entry != NULL; entry++) {
        int64_t base = g_ascii_strtoll(*entry, NULL, 10);
        if (g_str_has_suffix(*entry, ".log") && base > start && next_base < 0) {
            next_base = base;
        }
    }
    ks_disk_list_free(listed);
    CU_ASSERT_FATAL(next_base > start);
    CU_ASSERT((next_base / 2 - 1) * 1000 >= 20000);
    GByteArray *out = g_byte_array_new();
    CU_ASSERT_EQUAL(ks_log_read(log, start - 1, INT64_MAX, 100, out), KS_LOG_OFFSET_OUT_OF_RANGE);
    CU_ASSERT_EQUAL(ks_log_read(log, start, INT64_MAX, 100, out), KS_LOG_OK);
    CU_ASSERT(out->len > 0);
    g_byte_array_unref(out);
    /* Far in the future everything but the active segment goes. */
    ks_log_apply_retention(log, 10000 * KS_NS_PER_S, ks_log_leo(log));
    CU_ASSERT_EQUAL(ks_log_segment_count(log), 1);
    CU_ASSERT_EQUAL(ks_log_leo(log), 80);
    ks_log_close(log);

    /* Size: keep at most ~1500 bytes beyond the active segment. */
    config.retention_ns = -1;
    config.retention_bytes = 1500;
    log = ks_log_open(env.world, 2, "broker-2/orders-0", &config, 0, true, NULL);
    for (int i = 0; i < 40; i++) {
        log_fixture_append(log, 2, i * 2, 30, TS0 + i * 1000, 0, NULL);
    }
    ks_log_apply_retention(log, 0, ks_log_leo(log));
    CU_ASSERT(ks_log_size_bytes(log) >= 1500);
    CU_ASSERT(ks_log_size_bytes(log) < 1500 + config.segment_bytes + 200);
    ks_log_advance_start_offset(log, ks_log_leo(log) - 1);
    CU_ASSERT_EQUAL(ks_log_start_offset(log), ks_log_leo(log) - 1);
    CU_ASSERT_EQUAL(ks_log_segment_count(log), 1);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

/* Compaction: the last value of each key survives at its original offset,
 * order is kept, nothing at or above the active segment changes. */
static void test_compaction_keeps_last_value_per_key(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 11, 2);
    struct ks_log_config config = log_fixture_config();
    config.segment_bytes = 700;
    config.cleanup_compact = true;
    config.cleanup_delete = false;
    struct ks_log *log = open_log(&env, &config);
    /* 200 records over 10 keys; value = the record's index as text. */
    for (int i = 0; i < 100; i++) {
        struct ks_batch_builder builder;
        ks_batch_builder_init(&builder, TS0 + i, -1, -1, -1);
        for (int r = 0; r < 2; r++) {
            int n = i * 2 + r;
            char key[8];
            char value[16];
            int key_bytes = snprintf(key, sizeof(key), "k%d", (n * 7) % 10);
            int value_bytes = snprintf(value, sizeof(value), "%d", n);
            bool tombstone = n == 150; /* key (150*7)%10 = 0 deleted at 150 */
            ks_batch_builder_add(&builder, TS0 + i, key, key_bytes, tombstone ? NULL : value,
                                 tombstone ? -1 : value_bytes, NULL, 0);
        }
        GByteArray *bytes = ks_batch_builder_finish(&builder);
        ks_batch_builder_deinit(&builder);
        int64_t base = 0;
        int64_t last = 0;
        CU_ASSERT_EQUAL(ks_log_append_as_leader(log, bytes->data, bytes->len, 0, 0, &base, &last),
                        KS_LOG_OK);
        g_byte_array_unref(bytes);
    }
    int64_t leo = ks_log_leo(log);
    int32_t segments = ks_log_segment_count(log);
    /* The active segment's base is the largest segment file name. */
    int64_t active_base = 0;
    char **listed = ks_disk_list(env.world, LOG_NODE, LOG_DIR);
    for (char **name = listed; *name != NULL; name++) {
        if (g_str_has_suffix(*name, ".log")) {
            active_base = g_ascii_strtoll(*name, NULL, 10);
        }
    }
    ks_disk_list_free(listed);
    CU_ASSERT(active_base > 0);
    int64_t removed = ks_log_compact(log, 1000 * KS_NS_PER_S, leo);
    CU_ASSERT(removed > 0);
    CU_ASSERT_EQUAL(ks_log_leo(log), leo);
    CU_ASSERT_EQUAL(ks_log_segment_count(log), segments);
    /* Model: below the active base, offset n survives iff it is the last
     * write of its key below the active base (the tombstone is young, so it
     * stays); at and above the active base everything survives. */
    bool expected[200];
    for (int n = 0; n < 200; n++) {
        expected[n] = true;
        if (n < active_base) {
            for (int later = n + 1; later < active_base; later++) {
                if ((later * 7) % 10 == (n * 7) % 10) {
                    expected[n] = false;
                }
            }
        }
    }
    int64_t expected_removed = 0;
    for (int n = 0; n < 200; n++) {
        expected_removed += expected[n] ? 0 : 1;
    }
    CU_ASSERT_EQUAL(removed, expected_removed);
    int64_t batch_count = 0;
    GByteArray *all = log_fixture_read_all(log, &batch_count);
    int64_t previous_offset = -1;
    bool seen[200] = { false };
    for (size_t position = 0; position < all->len;) {
        struct ks_batch_view batch;
        size_t batch_bytes = 0;
        CU_ASSERT_EQUAL_FATAL(
            ks_batch_parse(all->data + position, all->len - position, &batch, &batch_bytes),
            KS_BATCH_OK);
        struct ks_record_iter iter;
        struct ks_record_view record;
        ks_record_iter_init(&iter, &batch);
        while (ks_record_iter_next(&iter, &record, NULL)) {
            CU_ASSERT(record.offset > previous_offset); /* order kept */
            CU_ASSERT_FATAL(record.offset >= 0 && record.offset < 200);
            previous_offset = record.offset;
            seen[record.offset] = true;
            /* Offsets unchanged: the value is the original index. */
            if (record.value != NULL) {
                char text[16] = { 0 };
                memcpy(text, record.value, (size_t)record.value_bytes);
                CU_ASSERT_EQUAL(g_ascii_strtoll(text, NULL, 10), record.offset);
            } else {
                CU_ASSERT_EQUAL(record.offset, 150);
            }
        }
        position += batch_bytes;
    }
    for (int n = 0; n < 200; n++) {
        CU_ASSERT_EQUAL(seen[n], expected[n]);
    }
    g_byte_array_unref(all);
    /* Compacting again removes nothing more. */
    CU_ASSERT_EQUAL(ks_log_compact(log, 1000 * KS_NS_PER_S, leo), 0);
    /* No leftovers of the swap protocol. */
    char **names = ks_disk_list(env.world, LOG_NODE, LOG_DIR);
    for (char **name = names; *name != NULL; name++) {
        CU_ASSERT_FALSE(g_str_has_suffix(*name, ".cleaned"));
        CU_ASSERT_FALSE(g_str_has_suffix(*name, ".swap"));
    }
    ks_disk_list_free(names);
    /* A reopen (clean, then unclean) sees the same log. */
    ks_log_close(log);
    struct ks_log_recovery_report report;
    log = ks_log_open(env.world, LOG_NODE, LOG_DIR, &config, 0, false, &report);
    CU_ASSERT_EQUAL(ks_log_leo(log), leo);
    CU_ASSERT_EQUAL(report.dropped_bytes, 0);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

static int64_t append_producer_batch(struct ks_log *log, int64_t producer_id, int32_t sequence,
                                     const char *key_a, const char *key_b)
{
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, TS0, producer_id, 0, sequence);
    ks_batch_builder_add(&builder, TS0, key_a, 2, "x", 1, NULL, 0);
    ks_batch_builder_add(&builder, TS0, key_b, 2, "y", 1, NULL, 0);
    GByteArray *bytes = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    int64_t base = 0;
    int64_t last = 0;
    CU_ASSERT_EQUAL(ks_log_append_as_leader(log, bytes->data, bytes->len, 0, 0, &base, &last),
                    KS_LOG_OK);
    g_byte_array_unref(bytes);
    return base;
}

/* An emptied batch survives as a header only when it is its producer's last
 * batch (so the producer's sequence state survives); others vanish. */
static void test_compaction_keeps_last_producer_batch_header(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 14, 2);
    struct ks_log_config config = log_fixture_config();
    config.segment_bytes = 100; /* one batch per segment */
    config.cleanup_compact = true;
    struct ks_log *log = open_log(&env, &config);
    append_producer_batch(log, 7, 0, "k0", "k1");   /* offsets 0-1: emptied, not last of 7 */
    append_producer_batch(log, 7, 2, "k0", "k1");   /* 2-3: emptied, last of 7: header kept */
    append_producer_batch(log, 8, 0, "k0", "k1");   /* 4-5: kept whole */
    append_producer_batch(log, -1, -1, "k0", "k1"); /* 6-7: active segment, untouched */
    CU_ASSERT_EQUAL(ks_log_compact(log, 0, ks_log_leo(log)), 4);
    int64_t batch_count = 0;
    GByteArray *all = log_fixture_read_all(log, &batch_count);
    CU_ASSERT_EQUAL(batch_count, 3);
    struct ks_batch_view batch;
    size_t batch_bytes = 0;
    CU_ASSERT_EQUAL_FATAL(ks_batch_parse(all->data, all->len, &batch, &batch_bytes), KS_BATCH_OK);
    CU_ASSERT_EQUAL(batch.base_offset, 2);
    CU_ASSERT_EQUAL(ks_batch_last_offset(&batch), 3);
    CU_ASSERT_EQUAL(batch.record_count, 0);
    CU_ASSERT_EQUAL(batch.producer_id, 7);
    CU_ASSERT_EQUAL(batch.base_sequence, 2);
    CU_ASSERT_EQUAL(batch_bytes, KS_BATCH_HEADER_BYTES);
    CU_ASSERT_EQUAL_FATAL(
        ks_batch_parse(all->data + batch_bytes, all->len - batch_bytes, &batch, NULL), KS_BATCH_OK);
    CU_ASSERT_EQUAL(batch.base_offset, 4);
    CU_ASSERT_EQUAL(batch.record_count, 2);
    /* Reading at an offset of the vanished batch starts at the next one. */
    GByteArray *out = g_byte_array_new();
    CU_ASSERT_EQUAL(ks_log_read(log, 0, INT64_MAX, 1, out), KS_LOG_OK);
    CU_ASSERT_EQUAL_FATAL(ks_batch_parse(out->data, out->len, &batch, NULL), KS_BATCH_OK);
    CU_ASSERT_EQUAL(batch.base_offset, 2);
    g_byte_array_unref(out);
    g_byte_array_unref(all);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

static void test_dump_log_format(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 12, 2);
    struct ks_log_config config = log_fixture_config();
    struct ks_log *log = open_log(&env, &config);
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, 1700000000000, 0, 0, 0);
    struct ks_header_view header = { (const uint8_t *)KS_IDENTITY_HEADER, 7,
                                     (const uint8_t *)"p1:0", 4 };
    for (int i = 0; i < 3; i++) {
        ks_batch_builder_add(&builder, 1700000000000, "abc", 3, "hello", 5, i == 0 ? &header : NULL,
                             i == 0 ? 1 : 0);
    }
    GByteArray *bytes = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    struct ks_batch_view view;
    CU_ASSERT_EQUAL_FATAL(ks_batch_parse(bytes->data, bytes->len, &view, NULL), KS_BATCH_OK);
    uint32_t crc = view.crc;
    size_t size = bytes->len;
    int64_t base = 0;
    int64_t last = 0;
    CU_ASSERT_EQUAL(ks_log_append_as_leader(log, bytes->data, bytes->len, 0, 0, &base, &last),
                    KS_LOG_OK);
    g_byte_array_unref(bytes);
    ks_log_close(log);
    char *path = ks_world_real_path(env.world, LOG_DIR "/00000000000000000000.log");
    char *out_text = NULL;
    size_t out_size = 0;
    FILE *out = open_memstream(&out_text, &out_size);
    FILE *err = fopen("/dev/null", "w");
    CU_ASSERT_EQUAL(ks_dumplog_path(path, KS_DUMPLOG_PRINT_DATA, out, err), 0);
    fclose(out);
    char *expected = g_strdup_printf(
        "Dumping %s\nLog starting offset: 0\n"
        "baseOffset: 0 lastOffset: 2 count: 3 baseSequence: 0 lastSequence: 2 producerId: 0 "
        "producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: %zu "
        "magic: 2 compresscodec: none crc: %u isvalid: true\n"
        "| offset: 0 CreateTime: 1700000000000 keySize: 3 valueSize: 5 sequence: 0 headerKeys: "
        "[ksim.id] key: abc payload: hello\n"
        "| offset: 1 CreateTime: 1700000000000 keySize: 3 valueSize: 5 sequence: 1 headerKeys: [] "
        "key: abc payload: hello\n"
        "| offset: 2 CreateTime: 1700000000000 keySize: 3 valueSize: 5 sequence: 2 headerKeys: [] "
        "key: abc payload: hello\n",
        path, size, crc);
    CU_ASSERT_STRING_EQUAL(out_text, expected);
    free(out_text);
    g_free(expected);
    /* A damaged byte: what is valid is printed, then Kafka's line and ours. */
    CU_ASSERT_FATAL(
        ks_world_disk_corrupt(env.world, LOG_NODE, LOG_DIR "/00000000000000000000.log", 40, 1));
    out_text = NULL;
    out = open_memstream(&out_text, &out_size);
    char *err_text = NULL;
    size_t err_size = 0;
    FILE *err_stream = open_memstream(&err_text, &err_size);
    CU_ASSERT_EQUAL(ks_dumplog_path(path, 0, out, err_stream), 1);
    fclose(out);
    fclose(err_stream);
    char *found = g_strdup_printf("Found %zu invalid bytes at the end of %s\n", size, path);
    CU_ASSERT_PTR_NOT_NULL(strstr(out_text, found));
    char *reason = g_strdup_printf("ksim: %s: invalid batch at position 0: bad CRC\n", path);
    CU_ASSERT_STRING_EQUAL(err_text, reason);
    g_free(found);
    g_free(reason);
    free(out_text);
    free(err_text);
    /* A missing file is exit 2; a folder dumps its segments. */
    CU_ASSERT_EQUAL(ks_dumplog_path("/nonexistent/x.log", 0, err, err), 2);
    char *folder = ks_world_real_path(env.world, LOG_DIR);
    CU_ASSERT_EQUAL(ks_dumplog_path(folder, 0, err, err), 1);
    g_free(folder);
    fclose(err);
    g_free(path);
    ks_test_env_deinit(&env);
}

/* ---- lookups from a segment's recent batches (segment_recent_skip) ------------------ */

#define RECENT_BATCHES 40

/* What one read saw and cost: its bytes, the node's disk time and page
 * cache after it. */
struct read_seen {
    GByteArray *bytes;
    ks_time_ns idle_ns;
    uint64_t read_miss_bytes;
    int64_t cached_bytes;
};

/* A log of RECENT_BATCHES equal batches, flushed, read at a fixed list of
 * offsets before and after another file pushes it out of a small page
 * cache. With `rewritten`, one byte of the segment is corrupted and
 * restored before the reads: the same bytes, but the segment's recent
 * batches no longer count, so every lookup scans the headers from the
 * index floor. Fills seen[] (one per read); returns the batch size. */
static size_t recent_reads(bool rewritten, struct read_seen *seen, size_t seen_count)
{
    struct ks_world_config world_config = {
        .seed = 1,
        .node_count = 2,
        .disk_fsync_latency_ns = 1000,
        .disk_bandwidth_bytes_per_s = 1000000000, /* 1 byte per ns */
        .disk_page_cache_bytes = 9000,
    };
    struct ks_test_env env;
    ks_test_env_init_config(&env, &world_config);
    struct ks_log_config config = log_fixture_config();
    struct ks_log *log = open_log(&env, &config);
    GByteArray *one = log_fixture_batch(1, 100, 100, TS0);
    size_t batch_bytes = one->len;
    g_byte_array_unref(one);
    for (int i = 0; i < RECENT_BATCHES; i++) {
        log_fixture_append(log, 1, 100, 100, TS0, 0, NULL);
    }
    ks_log_flush(log);
    const char *segment = LOG_DIR "/00000000000000000000.log";
    if (rewritten) {
        CU_ASSERT_FATAL(ks_world_disk_corrupt(env.world, LOG_NODE, segment, 500, 1));
        CU_ASSERT_FATAL(ks_world_disk_corrupt(env.world, LOG_NODE, segment, 500, 1));
    }
    /* Cached reads, then the same after another file took the cache. */
    const int64_t offsets[] = { 39, 35, 20, 39, 30, 31, 12, 38 };
    ks_assert(seen_count == G_N_ELEMENTS(offsets));
    for (size_t i = 0; i < G_N_ELEMENTS(offsets); i++) {
        if (i == 4) {
            ks_file *other =
                ks_disk_open(env.world, LOG_NODE, "broker-1/other", KS_DISK_CREATE, NULL);
            uint8_t block[8000] = { 0 };
            ks_disk_append(other, block, sizeof block);
            ks_disk_fsync(other);
            ks_disk_close(other);
        }
        seen[i].bytes = g_byte_array_new();
        CU_ASSERT_EQUAL(
            ks_log_read(log, offsets[i], INT64_MAX, i % 2 == 0 ? 1 : 1 << 20, seen[i].bytes),
            KS_LOG_OK);
        struct ks_batch_view batch;
        CU_ASSERT_EQUAL_FATAL(ks_batch_parse(seen[i].bytes->data, seen[i].bytes->len, &batch, NULL),
                              KS_BATCH_OK);
        CU_ASSERT_EQUAL(batch.base_offset, offsets[i]);
        struct ks_world_disk_stats stats;
        ks_world_disk_stats(env.world, LOG_NODE, &stats);
        seen[i].idle_ns = ks_disk_idle_at_ns(env.world, LOG_NODE);
        seen[i].read_miss_bytes = stats.read_miss_bytes;
        seen[i].cached_bytes = stats.cached_bytes;
    }
    ks_log_close(log);
    ks_test_env_deinit(&env);
    return batch_bytes;
}

/* A lookup that starts at a batch the segment remembers, skipping header
 * reads that would hit the page cache, answers, costs and leaves the cache
 * exactly as the scan from the index floor does, cached or not. */
static void test_recent_batches_read_as_the_scan(void)
{
    struct read_seen recent[8];
    struct read_seen scanned[8];
    size_t batch_bytes = recent_reads(false, recent, G_N_ELEMENTS(recent));
    recent_reads(true, scanned, G_N_ELEMENTS(scanned));
    CU_ASSERT(batch_bytes * RECENT_BATCHES > 4096); /* several headers before each found one */
    bool missed = false;
    for (size_t i = 0; i < G_N_ELEMENTS(recent); i++) {
        CU_ASSERT_EQUAL(recent[i].bytes->len, scanned[i].bytes->len);
        CU_ASSERT(recent[i].bytes->len == scanned[i].bytes->len &&
                  memcmp(recent[i].bytes->data, scanned[i].bytes->data, recent[i].bytes->len) == 0);
        CU_ASSERT_EQUAL(recent[i].idle_ns, scanned[i].idle_ns);
        CU_ASSERT_EQUAL(recent[i].read_miss_bytes, scanned[i].read_miss_bytes);
        CU_ASSERT_EQUAL(recent[i].cached_bytes, scanned[i].cached_bytes);
        missed |= recent[i].read_miss_bytes > 0;
        g_byte_array_unref(recent[i].bytes);
        g_byte_array_unref(scanned[i].bytes);
    }
    CU_ASSERT(missed); /* the reads after the other file went to the device */
}

/* A header damaged between the index floor and a remembered batch stops
 * the lookup as the scan does: the damage is a rewrite of the file. */
static void test_recent_batches_see_a_damaged_header(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    struct ks_log_config config = log_fixture_config();
    struct ks_log *log = open_log(&env, &config);
    GByteArray *one = log_fixture_batch(1, 100, 100, TS0);
    size_t batch_bytes = one->len;
    g_byte_array_unref(one);
    for (int i = 0; i < 20; i++) {
        log_fixture_append(log, 1, 100, 100, TS0, 0, NULL);
    }
    GByteArray *out = g_byte_array_new();
    CU_ASSERT_EQUAL(ks_log_read(log, 18, INT64_MAX, 1 << 20, out), KS_LOG_OK);
    CU_ASSERT(out->len == 2 * batch_bytes);
    /* batchLength of batch 10 (bytes 8-11 of its header). */
    CU_ASSERT_FATAL(ks_world_disk_corrupt(env.world, LOG_NODE, LOG_DIR "/00000000000000000000.log",
                                          (int64_t)(10 * batch_bytes + 8), 1));
    g_byte_array_set_size(out, 0);
    CU_ASSERT_EQUAL(ks_log_read(log, 18, INT64_MAX, 1 << 20, out), KS_LOG_OK);
    CU_ASSERT_EQUAL(out->len, 0);
    g_byte_array_unref(out);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

/* R11, R12 and R14 of core/log.c: the cached active segment and latest
 * epoch. Checks that the latest epoch is the cache's last entry, that the end
 * offset at the current epoch is the LEO (and the inline lookup the scan of
 * the cache for every epoch), and that an append lands in the
 * active segment: the tail reads back the appended batch, and the whole log
 * reads as it did before (a stale active segment writes elsewhere). */
static void caches_check(struct ks_log *log)
{
    int32_t count = ks_log_epoch_count(log);
    int32_t last_epoch = -1;
    int64_t last_start = -1;
    if (count > 0) {
        ks_log_epoch_entry(log, count - 1, &last_epoch, &last_start);
    }
    CU_ASSERT_EQUAL(ks_log_latest_epoch(log), last_epoch);
    int32_t epoch = 0;
    int64_t end = 0;
    bool found = ks_log_epoch_end_offset(log, INT32_MAX, &epoch, &end);
    CU_ASSERT_EQUAL(found, count > 0);
    if (found) {
        CU_ASSERT_EQUAL(epoch, last_epoch);
        CU_ASSERT_EQUAL(end, ks_log_leo(log));
    }
    /* R12, R14: the answers from the hot fields are the cache's. */
    int32_t at_end = -1;
    for (int32_t i = count; i > 0 && ks_log_leo(log) > 0; i--) {
        int32_t entry_epoch = 0;
        int64_t entry_start = 0;
        ks_log_epoch_entry(log, i - 1, &entry_epoch, &entry_start);
        if (entry_start < ks_log_leo(log)) {
            at_end = entry_epoch;
            break;
        }
    }
    CU_ASSERT_EQUAL(ks_log_epoch_at_end(log), at_end);
    for (int32_t requested = -1; requested <= last_epoch + 1; requested++) {
        int32_t inline_epoch = 0;
        int64_t inline_end = 0;
        int32_t scan_epoch = 0;
        int64_t scan_end = 0;
        bool inline_found = ks_log_epoch_end_offset(log, requested, &inline_epoch, &inline_end);
        bool scan_found = ks__log_epoch_end_offset_scan(log, requested, &scan_epoch, &scan_end);
        CU_ASSERT_EQUAL(inline_found, scan_found);
        CU_ASSERT_EQUAL(inline_epoch, scan_epoch);
        CU_ASSERT_EQUAL(inline_end, scan_end);
    }
    int64_t before_count = 0;
    GByteArray *before = log_fixture_read_all(log, &before_count);
    int64_t leo = ks_log_leo(log);
    GByteArray *bytes = log_fixture_batch(2, 900, 30, TS0 + 5000);
    int64_t base = -1;
    int64_t last = -1;
    CU_ASSERT_EQUAL_FATAL(ks_log_append_as_leader(log, bytes->data, bytes->len,
                                                  last_epoch >= 0 ? last_epoch : 1, 0, &base,
                                                  &last),
                          KS_LOG_OK);
    CU_ASSERT_EQUAL(base, leo);
    GByteArray *tail = g_byte_array_new();
    CU_ASSERT_EQUAL(ks_log_read(log, leo, INT64_MAX, 1 << 20, tail), KS_LOG_OK);
    CU_ASSERT(tail->len == bytes->len && memcmp(tail->data, bytes->data, bytes->len) == 0);
    int64_t after_count = 0;
    GByteArray *after = log_fixture_read_all(log, &after_count);
    CU_ASSERT_EQUAL(after_count, before_count + 1);
    CU_ASSERT(after->len == before->len + bytes->len &&
              (before->len == 0 || memcmp(after->data, before->data, before->len) == 0));
    g_byte_array_unref(before);
    g_byte_array_unref(after);
    g_byte_array_unref(tail);
    g_byte_array_unref(bytes);
}

static void test_active_segment_and_latest_epoch_follow_changes(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 7, 2);
    struct ks_log_config config = log_fixture_config();
    config.segment_bytes = 500;
    struct ks_log *log = open_log(&env, &config);
    caches_check(log);
    for (int i = 0; i < 20; i++) {
        log_fixture_append(log, 3, i, 20, TS0 + i, 1, NULL);
    }
    ks_log_epoch_assign(log, 3, ks_log_leo(log));
    caches_check(log); /* a new epoch that holds no batch yet */
    for (int i = 0; i < 20; i++) {
        log_fixture_append(log, 3, i, 20, TS0 + 20 + i, 3, NULL);
    }
    CU_ASSERT(ks_log_segment_count(log) > 4);
    caches_check(log); /* rolled */
    int32_t segments = ks_log_segment_count(log);
    ks_log_truncate_to(log, 10);
    CU_ASSERT(ks_log_segment_count(log) < segments);
    CU_ASSERT_EQUAL(ks_log_latest_epoch(log), 1);
    caches_check(log); /* segments and the epoch-3 entry dropped */
    ks_log_truncate_fully_and_start_at(log, 1000);
    CU_ASSERT_EQUAL(ks_log_latest_epoch(log), -1);
    caches_check(log);
    int64_t count = 0;
    GByteArray *closed = log_fixture_read_all(log, &count);
    ks_log_close(log);
    log = open_log(&env, &config);
    int64_t reopened_count = 0;
    GByteArray *reopened = log_fixture_read_all(log, &reopened_count);
    CU_ASSERT_EQUAL(reopened_count, count);
    CU_ASSERT(reopened->len == closed->len &&
              (closed->len == 0 || memcmp(reopened->data, closed->data, closed->len) == 0));
    caches_check(log);
    g_byte_array_unref(closed);
    g_byte_array_unref(reopened);
    ks_log_close(log);
    ks_test_env_deinit(&env);
}

void ks_test_register_log(void)
{
    static const struct ks_test_case cases[] = {
        { "append assigns offsets and reads back", test_append_assigns_offsets_and_reads_back },
        { "recent batches read as the scan", test_recent_batches_read_as_the_scan },
        { "recent batches see a damaged header", test_recent_batches_see_a_damaged_header },
        { "bad input is refused", test_bad_input_is_refused },
        { "corrupt batch refused on every append path",
          test_corrupt_batch_refused_on_every_append_path },
        { "index matches Kafka rule and lookups", test_index_matches_kafka_rule_and_lookups },
        { "roll and read across segments", test_roll_and_read_across_segments },
        { "roll by time, index and flush settings", test_roll_by_time_index_and_flush_settings },
        { "truncation matches fresh log", test_truncation_matches_fresh_log },
        { "truncate fully and start at", test_truncate_fully_and_start_at },
        { "active segment and latest epoch follow changes",
          test_active_segment_and_latest_epoch_follow_changes },
        { "offset for timestamp", test_offset_for_timestamp },
        { "epoch cache rules and file", test_epoch_cache_rules_and_file },
        { "checkpoint round trip and malformed", test_checkpoint_round_trip_and_malformed },
        { "checkpoint text matches printf", test_checkpoint_text_matches_printf },
        { "retention by time and size", test_retention_by_time_and_size },
        { "compaction keeps last value per key", test_compaction_keeps_last_value_per_key },
        { "compaction keeps last producer batch header",
          test_compaction_keeps_last_producer_batch_header },
        { "dump-log format", test_dump_log_format },
    };
    KS_TEST_ADD_SUITE("core/log", cases);
}
