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
**                          batches, 4 MiB segments); ratio = / the same
**                          lookups (same offsets, same files) done the
**                          simplest fast way: a binary search over a dense
**                          in-memory index of every batch of the segments,
**                          then a copy of the batch from a read-only mapping
**                          of its segment file (as ks_log reads settled
**                          segments, sim/disk.c M1). ks_log keeps Kafka's
**                          sparse index instead, so it scans a few batch
**                          headers per lookup: the ratio is that price.
**   log_recovery_mb_per_s  ks_log_open with clean_shutdown=false and recovery
**                          point 0 over that log (every batch CRC-checked,
**                          indexes rebuilt); ratio = / plain read() of the
**                          same files in 1 MiB chunks.
** Each figure is the best of a few repetitions, in the process's CPU time
** (bench_time.h; this is a benchmark, not the simulation). MB = 10^6 bytes.
*/
#include <stdio.h>

#include "../../core/base.h"
#include "../../core/log.h"
#include "../../sim/world.h"
#include "bench_time.h"

#include <fcntl.h>
#include <glib.h>
#include <sys/mman.h>
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
    double start = bench_cpu_s();
    for (int64_t i = 0; i < count; i++) {
        int64_t base = 0;
        int64_t last = 0;
        enum ks_log_result result =
            ks_log_append_as_leader(log, bytes, batch->len, 1, 0, &base, &last);
        ks_assert(result == KS_LOG_OK);
    }
    double elapsed = bench_cpu_s() - start;
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
    double start = bench_cpu_s();
    for (int64_t i = 0; i < count; i++) {
        ssize_t written = write(fd, batch->data, batch->len);
        ks_assert(written == (ssize_t)batch->len);
    }
    double elapsed = bench_cpu_s() - start;
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

/* The baseline of the lookups: every batch of the log's segment files in
 * one sorted array, and each segment file mapped read-only. */
struct dense_batch {
    int64_t base_offset;
    int32_t segment_index;
    int32_t position;
    int32_t bytes;
};

struct dense_index {
    GArray *batches; /* struct dense_batch, sorted by base_offset */
    GPtrArray *maps; /* const uint8_t *, one per segment */
    GArray *lengths; /* size_t, the mapped lengths */
};

static uint32_t be32(const uint8_t *bytes)
{
    return (uint32_t)bytes[0] << 24 | (uint32_t)bytes[1] << 16 | (uint32_t)bytes[2] << 8 |
           (uint32_t)bytes[3];
}

static int compare_names(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void dense_index_build(struct dense_index *index, const char *folder)
{
    index->batches = g_array_new(FALSE, FALSE, sizeof(struct dense_batch));
    index->maps = g_ptr_array_new();
    index->lengths = g_array_new(FALSE, FALSE, sizeof(size_t));
    GDir *dir = g_dir_open(folder, 0, NULL);
    ks_assert(dir != NULL);
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    const char *name;
    while ((name = g_dir_read_name(dir)) != NULL) {
        if (g_str_has_suffix(name, ".log")) {
            g_ptr_array_add(names, g_strdup(name));
        }
    }
    g_dir_close(dir);
    g_ptr_array_sort(names, compare_names); /* 20-digit names: offset order */
    for (guint i = 0; i < names->len; i++) {
        char *path = g_build_filename(folder, names->pdata[i], NULL);
        int fd = open(path, O_RDONLY);
        ks_assert(fd >= 0);
        off_t size = lseek(fd, 0, SEEK_END);
        ks_assert(size > 0);
        const uint8_t *map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
        ks_assert(map != MAP_FAILED);
        close(fd);
        g_free(path);
        g_ptr_array_add(index->maps, (void *)map);
        size_t length = (size_t)size;
        g_array_append_val(index->lengths, length);
        for (off_t position = 0; position + KS_BATCH_HEADER_BYTES <= size;) {
            struct dense_batch batch = {
                .base_offset =
                    (int64_t)((uint64_t)be32(map + position) << 32 | be32(map + position + 4)),
                .segment_index = (int32_t)i,
                .position = (int32_t)position,
                .bytes = (int32_t)be32(map + position + 8) + KS_BATCH_LOG_OVERHEAD_BYTES,
            };
            g_array_append_val(index->batches, batch);
            position += batch.bytes;
        }
    }
    g_ptr_array_free(names, TRUE);
}

static void dense_index_free(struct dense_index *index)
{
    for (guint i = 0; i < index->maps->len; i++) {
        munmap(index->maps->pdata[i], g_array_index(index->lengths, size_t, i));
    }
    g_ptr_array_free(index->maps, TRUE);
    g_array_free(index->lengths, TRUE);
    g_array_free(index->batches, TRUE);
}

/* The batch holding offset, copied into out: the floor of a lookup. */
static void dense_lookup(const struct dense_index *index, int64_t offset, GByteArray *out)
{
    const struct dense_batch *batches = (const struct dense_batch *)(void *)index->batches->data;
    guint low = 0;
    guint high = index->batches->len;
    while (high - low > 1) {
        guint middle = low + (high - low) / 2;
        if (batches[middle].base_offset <= offset) {
            low = middle;
        } else {
            high = middle;
        }
    }
    const struct dense_batch *batch = &batches[low];
    const uint8_t *map = index->maps->pdata[batch->segment_index];
    g_byte_array_append(out, map + batch->position, (guint)batch->bytes);
}

/* Lookups per second over one second of random offsets, by ks_log_read
 * (index NULL) or by the dense index. */
static double lookup_round(struct ks_log *log, const struct dense_index *index, uint64_t seed,
                           GByteArray *out)
{
    uint64_t state = seed;
    int64_t leo = ks_log_leo(log);
    int64_t lookups = 0;
    double start = bench_cpu_s();
    double elapsed = 0;
    while ((elapsed = bench_cpu_s() - start) < 1.0) {
        for (int i = 0; i < 1000; i++) {
            int64_t offset = (int64_t)(splitmix(&state) % (uint64_t)leo);
            g_byte_array_set_size(out, 0);
            if (index == NULL) {
                enum ks_log_result result = ks_log_read(log, offset, leo, 1, out);
                ks_assert(result == KS_LOG_OK);
            } else {
                dense_lookup(index, offset, out);
            }
            ks_assert(out->len > 0);
            lookups++;
        }
    }
    return (double)lookups / elapsed;
}

/* Both ways in alternating rounds (the same offsets in each pair), best of
 * each; *baseline_out gets the dense index's best rate. */
static double bench_lookups(struct ks_log *log, const char *folder, double *baseline_out)
{
    struct dense_index index;
    dense_index_build(&index, folder);
    GByteArray *out = g_byte_array_sized_new(8192);
    double best = 0;
    double baseline = 0;
    for (int repeat = 0; repeat < REPEATS; repeat++) {
        uint64_t seed = 42 + (uint64_t)repeat;
        double rate = lookup_round(log, NULL, seed, out);
        double floor = lookup_round(log, &index, seed, out);
        best = rate > best ? rate : best;
        baseline = floor > baseline ? floor : baseline;
    }
    g_byte_array_unref(out);
    dense_index_free(&index);
    *baseline_out = baseline;
    return best;
}

static double bench_plain_read(const char *folder, int64_t *bytes_out)
{
    GDir *dir = g_dir_open(folder, 0, NULL);
    ks_assert(dir != NULL);
    char *buffer = g_malloc(1 << 20);
    int64_t total = 0;
    double start = bench_cpu_s();
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
    double elapsed = bench_cpu_s() - start;
    g_dir_close(dir);
    g_free(buffer);
    *bytes_out = total;
    return (double)total / elapsed / 1e6;
}

int main(void)
{
    printf("# files in %s (bench_use_tmpfs)\n", bench_use_tmpfs());
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
    char *folder = g_strdup_printf("%s/broker-1/bench-0", run_dir);
    g_free(ks_world_real_path(world, "broker-1/bench-0")); /* every staged byte in the files */
    double dense = 0;
    double lookups = bench_lookups(log, folder, &dense);
    printf("# lookups: dense in-memory index %.0f lookups/s\n", dense);
    printf("BENCH log_lookups_per_s %.0f lookups/s ratio=%.3f\n", lookups, lookups / dense);
    ks_log_close(log);

    /* 3. Recovery of that log against read(). */
    double recovery_best = 0;
    double read_best = 0;
    int64_t size = 0;
    for (int repeat = 0; repeat < REPEATS; repeat++) {
        double start = bench_cpu_s();
        struct ks_log_recovery_report report;
        log = ks_log_open(world, 1, "broker-1/bench-0", &config, 0, false, &report);
        double elapsed = bench_cpu_s() - start;
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
