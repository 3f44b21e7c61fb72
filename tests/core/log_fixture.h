/*
** tests/core/log_fixture.h: helpers shared by the log suites (test_log.c,
** test_log_recovery.c): a default configuration, a batch maker, and a
** whole-log reader that checks the log against what was appended.
*/
#pragma once

#include <stdio.h>

#include "../../core/base.h"
#include "../../core/config.h"
#include "../../core/log.h"
#include "../testlib.h"

#include <string.h>

#define LOG_NODE ((ks_node_id)1)
#define LOG_DIR  "broker-1/orders-0"

/* Kafka's log defaults (core/config.c). */
static inline struct ks_log_config log_fixture_config(void)
{
    struct ks_log_config config;
    ks_log_config_defaults(&config);
    return config;
}

/* A batch of record_count records "k<key_base+i>" = value_bytes of 'v',
 * timestamp ts_ms (+i). Owned by the caller. */
static inline GByteArray *log_fixture_batch(int32_t record_count, int32_t key_base,
                                            int32_t value_bytes, int64_t ts_ms)
{
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, ts_ms, -1, -1, -1);
    char value[4096];
    memset(value, 'v', sizeof(value));
    ks_assert(value_bytes <= (int32_t)sizeof(value));
    for (int32_t i = 0; i < record_count; i++) {
        char key[32];
        int key_bytes = snprintf(key, sizeof(key), "k%d", key_base + i);
        ks_batch_builder_add(&builder, ts_ms + i, key, key_bytes, value, value_bytes, NULL, 0);
    }
    GByteArray *bytes = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    return bytes;
}

/* Appends one batch as leader; returns its base offset (asserts success). */
static inline int64_t log_fixture_append(struct ks_log *log, int32_t record_count, int32_t key_base,
                                         int32_t value_bytes, int64_t ts_ms, int32_t epoch,
                                         GPtrArray *kept_batches)
{
    GByteArray *bytes = log_fixture_batch(record_count, key_base, value_bytes, ts_ms);
    int64_t base = -1;
    int64_t last = -1;
    enum ks_log_result result =
        ks_log_append_as_leader(log, bytes->data, bytes->len, epoch, 0, &base, &last);
    CU_ASSERT_EQUAL_FATAL(result, KS_LOG_OK);
    CU_ASSERT_EQUAL(last - base + 1, record_count);
    if (kept_batches != NULL) {
        g_ptr_array_add(kept_batches, bytes);
    } else {
        g_byte_array_unref(bytes);
    }
    return base;
}

/* Reads the whole log from its start through ks_log_read; every batch must
 * parse and continue the previous one. Returns the batches' bytes
 * concatenated (owned by the caller) and the batch count. */
static inline GByteArray *log_fixture_read_all(struct ks_log *log, int64_t *batch_count_out)
{
    GByteArray *all = g_byte_array_new();
    int64_t offset = ks_log_start_offset(log);
    int64_t count = 0;
    while (offset < ks_log_leo(log)) {
        GByteArray *out = g_byte_array_new();
        CU_ASSERT_EQUAL_FATAL(ks_log_read(log, offset, INT64_MAX, 1 << 20, out), KS_LOG_OK);
        if (out->len == 0) {
            g_byte_array_unref(out);
            break;
        }
        size_t position = 0;
        while (position < out->len) {
            struct ks_batch_view batch;
            size_t batch_bytes = 0;
            CU_ASSERT_EQUAL_FATAL(
                ks_batch_parse(out->data + position, out->len - position, &batch, &batch_bytes),
                KS_BATCH_OK);
            CU_ASSERT_FATAL(ks_batch_last_offset(&batch) >= offset);
            offset = ks_batch_last_offset(&batch) + 1;
            position += batch_bytes;
            count++;
        }
        g_byte_array_append(all, out->data, out->len);
        g_byte_array_unref(out);
    }
    *batch_count_out = count;
    return all;
}

/* The bytes of a file of the run folder (relative to it), read from the host;
 * NULL if it is missing. Owned by the caller. */
static inline GByteArray *log_fixture_real_bytes(struct ks_test_env *env, const char *relative)
{
    char *path = ks_world_real_path(env->world, relative);
    gchar *contents = NULL;
    gsize length = 0;
    GByteArray *bytes = NULL;
    if (g_file_get_contents(path, &contents, &length, NULL)) {
        bytes = g_byte_array_new_take((guint8 *)contents, length);
    }
    g_free(path);
    return bytes;
}
