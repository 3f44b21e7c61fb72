/*
** tests/bench/bench_log.c: throughput of the segment log on the simulated
** disk (which writes real files), against plain system calls on the same
** machine in the same run, so the ratios mean something on a shared host.
**
**   log_append_mb_per_s    leader appends of 16 KiB batches of 1 KiB records
**                          (CRC check, offset assignment, index upkeep); 8
**                          rounds of 64 MiB alternating with plain write() of
**                          the same bytes in the same chunks; ratio = best
**                          append round / best write round.
**   log_lookups_per_s      ks_log_read of one batch at uniformly random
**                          offsets of a log of 10 million records (100-record
**                          batches, 4 MiB segments); ratio = / 1e6.
**   log_recovery_mb_per_s  ks_log_open with clean_shutdown=false and recovery
**                          point 0 over that log (every batch CRC-checked,
**                          indexes rebuilt); ratio = / plain read() of the
**                          same files in 1 MiB chunks.
** Each figure is the best of a few repetitions (wall clock; this is a
** benchmark, not the simulation). MB = 10^6 bytes.
*/
#include <stdio.h>

#include "../../core/base.h"
#include "../../core/log.h"
#include "../../sim/world.h"

#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define APPEND_BYTES_TOTAL   (64LL * 1024 * 1024)
#define APPEND_REPEATS       8
#define LOOKUP_RECORDS       10000000
#define LOOKUP_BATCH_RECORDS 100
#define REPEATS              3

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Kafka's log defaults (core/config.c) with 64 MiB segments that never roll
 * by age and no retention. */
static struct ks_log_config bench_config(void)
{
    struct ks_log_config config;
    ks_log_config_defaults(&config);
    config.segment_bytes = 64LL * 1024 * 1024;
    config.segment_ns = INT64_MAX;
    config.retention_ns = -1;
    return config;
}

static GByteArray *make_batch(int32_t record_count, int32_t value_bytes)
{
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, KS_EPOCH_BASE_MS, -1, -1, -1);
    char *value = g_malloc0((size_t)value_bytes);
    for (int32_t i = 0; i < record_count; i++) {
        ks_batch_builder_add(&builder, KS_EPOCH_BASE_MS, NULL, -1, value, value_bytes, NULL, 0);
    }
    g_free(value);
    GByteArray *bytes = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    return bytes;
}

static ks_world *new_world(const char *run_dir)
{
    struct ks_world_config config = { .seed = 1, .run_dir = run_dir, .node_count = 2 };
    ks_world *world = ks_world_new(&config, NULL);
    ks_assert(world != NULL);
    return world;
}

static double bench_append_once(const char *base_dir, int repeat, const GByteArray *batch)
{
    char *run_dir = g_strdup_printf("%s/append-%d", base_dir, repeat);
    g_mkdir_with_parents(run_dir, 0755);
    ks_world *world = new_world(run_dir);
    struct ks_log_config config = bench_config();
    struct ks_log *log = ks_log_open(world, 1, "broker-1/bench-0", &config, 0, true, NULL);
    uint8_t *bytes = g_memdup2(batch->data, batch->len);
    int64_t count = APPEND_BYTES_TOTAL / batch->len;
    double start = now_s();
    for (int64_t i = 0; i < count; i++) {
        int64_t base = 0;
        int64_t last = 0;
        enum ks_log_result result =
            ks_log_append_as_leader(log, bytes, batch->len, 1, 0, &base, &last);
        ks_assert(result == KS_LOG_OK);
    }
    double elapsed = now_s() - start;
    g_free(bytes);
    ks_log_close(log);
    ks_world_free(world);
    ks_host_remove_tree(run_dir);
    g_free(run_dir);
    return (double)(count * (int64_t)batch->len) / elapsed / 1e6;
}

static double bench_write_once(const char *base_dir, const GByteArray *batch)
{
    char *path = g_strdup_printf("%s/plain-write", base_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ks_assert(fd >= 0);
    int64_t count = APPEND_BYTES_TOTAL / batch->len;
    double start = now_s();
    for (int64_t i = 0; i < count; i++) {
        ssize_t written = write(fd, batch->data, batch->len);
        ks_assert(written == (ssize_t)batch->len);
    }
    double elapsed = now_s() - start;
    close(fd);
    g_unlink(path);
    g_free(path);
    return (double)(count * (int64_t)batch->len) / elapsed / 1e6;
}

static uint64_t splitmix(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double bench_lookups(struct ks_log *log)
{
    uint64_t state = 42;
    int64_t leo = ks_log_leo(log);
    GByteArray *out = g_byte_array_sized_new(8192);
    double best = 0;
    for (int repeat = 0; repeat < REPEATS; repeat++) {
        int64_t lookups = 0;
        double start = now_s();
        double elapsed = 0;
        while ((elapsed = now_s() - start) < 1.0) {
            for (int i = 0; i < 1000; i++) {
                int64_t offset = (int64_t)(splitmix(&state) % (uint64_t)leo);
                g_byte_array_set_size(out, 0);
                enum ks_log_result result = ks_log_read(log, offset, leo, 1, out);
                ks_assert(result == KS_LOG_OK);
                ks_assert(out->len > 0);
                lookups++;
            }
        }
        double rate = (double)lookups / elapsed;
        best = rate > best ? rate : best;
    }
    g_byte_array_unref(out);
    return best;
}

static double bench_plain_read(const char *folder, int64_t *bytes_out)
{
    GDir *dir = g_dir_open(folder, 0, NULL);
    ks_assert(dir != NULL);
    char *buffer = g_malloc(1 << 20);
    int64_t total = 0;
    double start = now_s();
    const char *name;
    while ((name = g_dir_read_name(dir)) != NULL) {
        if (!g_str_has_suffix(name, ".log")) {
            continue;
        }
        char *path = g_build_filename(folder, name, NULL);
        int fd = open(path, O_RDONLY);
        ks_assert(fd >= 0);
        ssize_t got;
        while ((got = read(fd, buffer, 1 << 20)) > 0) {
            total += got;
        }
        close(fd);
        g_free(path);
    }
    double elapsed = now_s() - start;
    g_dir_close(dir);
    g_free(buffer);
    *bytes_out = total;
    return (double)total / elapsed / 1e6;
}

int main(void)
{
    char *base_dir = g_dir_make_tmp("ksim-bench-log-XXXXXX", NULL);
    ks_assert(base_dir != NULL);

    /* 1. Appends against write(). */
    GByteArray *big = make_batch(16, 1024 - 9); /* ~1 KiB records, ~16 KiB batches */
    double append_best = 0;
    double write_best = 0;
    for (int repeat = 0; repeat < APPEND_REPEATS; repeat++) {
        double append = bench_append_once(base_dir, repeat, big);
        double plain = bench_write_once(base_dir, big);
        append_best = append > append_best ? append : append_best;
        write_best = plain > write_best ? plain : write_best;
    }
    g_byte_array_unref(big);
    printf("BENCH log_append_mb_per_s %.1f MB/s ratio=%.3f\n", append_best,
           append_best / write_best);

    /* 2. Lookups in a log of 10 million records. */
    char *run_dir = g_strdup_printf("%s/lookup", base_dir);
    g_mkdir_with_parents(run_dir, 0755);
    ks_world *world = new_world(run_dir);
    struct ks_log_config config = bench_config();
    config.segment_bytes = 4LL * 1024 * 1024;
    struct ks_log *log = ks_log_open(world, 1, "broker-1/bench-0", &config, 0, true, NULL);
    GByteArray *small = make_batch(LOOKUP_BATCH_RECORDS, 8);
    for (int64_t i = 0; i < LOOKUP_RECORDS / LOOKUP_BATCH_RECORDS; i++) {
        int64_t base = 0;
        int64_t last = 0;
        ks_assert(ks_log_append_as_leader(log, small->data, small->len, 1, 0, &base, &last) ==
                  KS_LOG_OK);
    }
    g_byte_array_unref(small);
    ks_assert(ks_log_leo(log) == LOOKUP_RECORDS);
    int32_t segments = ks_log_segment_count(log);
    double lookups = bench_lookups(log);
    printf("BENCH log_lookups_per_s %.0f lookups/s ratio=%.3f\n", lookups, lookups / 1e6);
    ks_log_close(log);

    /* 3. Recovery of that log against read(). */
    char *folder = g_strdup_printf("%s/broker-1/bench-0", run_dir);
    double recovery_best = 0;
    double read_best = 0;
    int64_t size = 0;
    for (int repeat = 0; repeat < REPEATS; repeat++) {
        double start = now_s();
        struct ks_log_recovery_report report;
        log = ks_log_open(world, 1, "broker-1/bench-0", &config, 0, false, &report);
        double elapsed = now_s() - start;
        ks_assert(ks_log_leo(log) == LOOKUP_RECORDS);
        ks_assert(report.dropped_bytes == 0);
        size = ks_log_size_bytes(log);
        ks_log_close(log);
        double rate = (double)size / elapsed / 1e6;
        recovery_best = rate > recovery_best ? rate : recovery_best;
        int64_t read_bytes = 0;
        double plain = bench_plain_read(folder, &read_bytes);
        ks_assert(read_bytes == size);
        read_best = plain > read_best ? plain : read_best;
    }
    printf("BENCH log_recovery_mb_per_s %.1f MB/s ratio=%.3f\n", recovery_best,
           recovery_best / read_best);
    fprintf(stderr, "bench_log: lookup log %d records, %d segments, %.0f MB\n", LOOKUP_RECORDS,
            segments, (double)size / 1e6);
    g_free(folder);
    ks_world_free(world);
    ks_host_remove_tree(base_dir);
    g_free(run_dir);
    g_free(base_dir);
    return 0;
}
