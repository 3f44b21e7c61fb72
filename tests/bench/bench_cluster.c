/* tests/bench/bench_cluster.c: how fast the cluster model runs.
 *
 * Workload: 3 brokers, one topic with 12 partitions and RF 3, 50,000
 * records/s of 100-byte values (1000 keys) for 60 simulated seconds, sent by
 * one producer of core/producer.c with Kafka's defaults (acks=all,
 * idempotent, linger.ms 5, batch.size 16 KiB). Prints:
 *
 *   BENCH cluster_speedup <sim-s per cpu-s> sim-s/cpu-s ratio=<same>
 *   BENCH cluster_events_per_s <events per cpu second> events/s ratio=<that /
 *         a bare binary heap's push+pop rate measured in the same run>
 *   BENCH cluster_disk_overhead <v> x ratio=<v>, v = time of the run /
 *         time of plain write() calls of the same bytes in writes of the
 *         log's average batch size (the cost of everything but the bytes)
 *
 * and the peak resident memory (getrusage ru_maxrss). The workload runs
 * twice (the runs must agree on events and bytes) and the plain writes three
 * times, in a folder of their own; the cheaper of each counts. Every time is
 * the process's CPU time (bench_time.h); each run's wall time is printed on a
 * comment line. In wall time the plain writes of ~1.2 GB, issued right after
 * the run dirtied as much, took 1.8 s of CPU but 6-11 s of wall time on a
 * loaded machine (waiting for a core, and in the kernel's dirty throttling),
 * which is what made cluster_disk_overhead swing between runs. */
#include "../../core/base.h"
#include "../../core/batch.h"
#include "../../core/broker.h"
#include "../../core/cluster.h"
#include "../../core/log.h"
#include "../../core/producer.h"
#include "../../sim/world.h"
#include "../core/cluster_fixture.h"
#include "bench_time.h"

#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define PARTITIONS  12
#define RATE_PER_S  50000
#define VALUE_BYTES 100
#define DURATION_S  60
#define TICK_NS     (5 * KS_NS_PER_MS)

/* A bare binary min-heap of (time, seq): the scheduler's floor. */
struct heap_item {
    uint64_t at;
    uint64_t seq;
};

static bool item_less(const struct heap_item *a, const struct heap_item *b)
{
    return a->at != b->at ? a->at < b->at : a->seq < b->seq;
}

static double heap_rate(uint64_t operations)
{
    size_t capacity = 4096;
    struct heap_item *heap = malloc(capacity * sizeof *heap);
    size_t count = 0;
    uint64_t seq = 0;
    uint64_t x = 88172645463325252ull;
    double start = bench_cpu_s();
    /* Keep ~1000 pending events; each step pops one and pushes one. */
    for (uint64_t step = 0; step < operations + 1000; step++) {
        uint64_t now = 0;
        if (count >= 1000) {
            now = heap[0].at;
            heap[0] = heap[--count];
            size_t i = 0;
            for (;;) {
                size_t l = 2 * i + 1, r = l + 1, m = i;
                if (l < count && item_less(&heap[l], &heap[m]))
                    m = l;
                if (r < count && item_less(&heap[r], &heap[m]))
                    m = r;
                if (m == i)
                    break;
                struct heap_item t = heap[i];
                heap[i] = heap[m];
                heap[m] = t;
                i = m;
            }
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        struct heap_item item = { now + (x % 1000000), seq++ };
        size_t i = count++;
        heap[i] = item;
        while (i > 0 && item_less(&heap[i], &heap[(i - 1) / 2])) {
            struct heap_item t = heap[i];
            heap[i] = heap[(i - 1) / 2];
            heap[(i - 1) / 2] = t;
            i = (i - 1) / 2;
        }
    }
    double elapsed = bench_cpu_s() - start;
    free(heap);
    return (double)operations / (elapsed > 0 ? elapsed : 1e-9);
}

static double plain_write_s(const char *dir, int64_t total_bytes, int64_t chunk_bytes)
{
    char *path = g_build_filename(dir, "plain-write.bin", NULL);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0) {
        g_free(path);
        return 0;
    }
    if (chunk_bytes < 1) {
        chunk_bytes = 4096;
    }
    char *buffer = malloc((size_t)chunk_bytes);
    memset(buffer, 'w', (size_t)chunk_bytes);
    double start = bench_cpu_s();
    for (int64_t written = 0; written < total_bytes; written += chunk_bytes) {
        if (write(fd, buffer, (size_t)chunk_bytes) < 0) {
            break;
        }
    }
    double elapsed = bench_cpu_s() - start;
    close(fd);
    g_unlink(path);
    g_free(path);
    free(buffer);
    return elapsed;
}

static int64_t average_batch_bytes(struct ks_cluster *model, int32_t broker)
{
    struct ks_log *log = ks_cluster_replica_log(model, broker, 0, 0);
    if (log == NULL) {
        return 4096;
    }
    int64_t offset = ks_log_start_offset(log);
    int64_t leo = ks_log_leo(log);
    int64_t batches = 0;
    int64_t bytes = 0;
    GByteArray *chunk = g_byte_array_new();
    while (offset < leo) {
        g_byte_array_set_size(chunk, 0);
        if (ks_log_read(log, offset, leo, 1 << 20, chunk) != KS_LOG_OK || chunk->len == 0) {
            break;
        }
        size_t position = 0;
        while (position < chunk->len) {
            struct ks_batch_view view;
            size_t batch_bytes = 0;
            if (ks_batch_parse(chunk->data + position, chunk->len - position, &view,
                               &batch_bytes) != KS_BATCH_OK) {
                break;
            }
            batches++;
            bytes += (int64_t)batch_bytes;
            offset = ks_batch_last_offset(&view) + 1;
            position += batch_bytes;
        }
    }
    g_byte_array_unref(chunk);
    return batches > 0 ? bytes / batches : 4096;
}

/* What one run of the workload did and cost. */
struct run_result {
    double cpu_s;
    double wall_s;
    uint64_t events;
    int64_t sent;
    int64_t acked;
    int64_t log_bytes; /* on all replicas of the bench topic */
    int64_t chunk;     /* the average batch size at partition 0's leader */
};

static void run_once(struct run_result *out)
{
    /* Kafka's defaults (tests/core/cluster_fixture.h), 100 us of network
     * jitter, no checks after every event (they are not what is measured). */
    struct cluster_fixture *cf = calloc(1, sizeof *cf);
    ks_assert(cf != NULL);
    cf_init(cf, 3);
    cf->check_every_event = false;
    cf->world_config.network_jitter_ns = 100 * KS_NS_PER_US;
    cf_topic(cf, "bench", PARTITIONS, 3, 2, NULL);
    struct ks_producer_config *producer = cf_producer(cf, "p1", 0);
    producer->rate_per_s = RATE_PER_S;
    producer->count = (int64_t)RATE_PER_S * DURATION_S;
    producer->key_count = 1000;
    producer->value_bytes = VALUE_BYTES;
    cf->observer = (struct ks_cluster_observer){ 0 };
    cf_build(cf, 1);
    ks_world *world = cf->env.world;
    struct ks_cluster *model = cf->cluster;

    double start_wall = bench_wall_s();
    double start = bench_cpu_s();
    ks_cluster_start(model);
    ks_world_run_until(world, (ks_time_ns)(DURATION_S + 1) * KS_NS_PER_S);
    out->cpu_s = bench_cpu_s() - start;
    out->wall_s = bench_wall_s() - start_wall;

    out->log_bytes = 0;
    for (int32_t b = 1; b <= 3; b++) {
        for (int32_t p = 0; p < PARTITIONS; p++) {
            struct ks_log *log = ks_cluster_replica_log(model, b, 0, p);
            if (log != NULL) {
                out->log_bytes += ks_log_size_bytes(log);
            }
        }
    }
    out->events = ks_world_event_count(world);
    out->sent = ks_cluster_producer_sent_count(model, 0);
    out->acked = ks_cluster_producer_acked_count(model, 0);
    /* The plain writes use the log's own write size: the average batch
     * size, measured on partition 0's leader (every replica appends whole
     * batches, one write each). */
    out->chunk = average_batch_bytes(model, ks_cluster_leader(model, 0, 0));
    cf_free(cf);
    free(cf);
}

static double min2(double a, double b)
{
    return a < b ? a : b;
}

/* The workload twice and the plain writes three times, in the order
 * run write run write write (the first run tells the bytes and the write
 * size); the cheaper of each counts. */
int main(void)
{
    printf("# files in %s (bench_use_tmpfs)\n", bench_use_tmpfs());
    char *write_dir = g_dir_make_tmp("ksim-bench-cluster-XXXXXX", NULL);
    ks_assert(write_dir != NULL);
    struct run_result runs[2];
    double writes[3];
    run_once(&runs[0]); /* first, to learn the bytes and the write size */
    writes[0] = plain_write_s(write_dir, runs[0].log_bytes, runs[0].chunk);
    run_once(&runs[1]);
    writes[1] = plain_write_s(write_dir, runs[0].log_bytes, runs[0].chunk);
    writes[2] = plain_write_s(write_dir, runs[0].log_bytes, runs[0].chunk);
    ks_host_remove_tree(write_dir);
    g_free(write_dir);
    for (int i = 0; i < 2; i++) {
        /* Same seed, same work: the two runs must agree. */
        ks_assert(runs[i].events == runs[0].events && runs[i].log_bytes == runs[0].log_bytes);
        printf("# run %d: records sent %" G_GINT64_FORMAT " acked %" G_GINT64_FORMAT
               ", log bytes on 3 brokers %" G_GINT64_FORMAT ", events %" G_GUINT64_FORMAT
               ", cpu %.2f s (wall %.2f s)\n",
               i + 1, runs[i].sent, runs[i].acked, runs[i].log_bytes, runs[i].events, runs[i].cpu_s,
               runs[i].wall_s);
    }
    printf("# plain write of the same bytes in %" G_GINT64_FORMAT
           "-byte writes: cpu %.3f s, %.3f s, %.3f s\n",
           runs[0].chunk, writes[0], writes[1], writes[2]);
    double elapsed = min2(runs[0].cpu_s, runs[1].cpu_s);
    double write_s = min2(writes[0], min2(writes[1], writes[2]));
    double heap = heap_rate(20000000);
    double sim_s = (double)(DURATION_S + 1);
    double events_per_s = (double)runs[0].events / elapsed;
    double overhead = write_s > 0 ? elapsed / write_s : 0;
    printf("BENCH cluster_speedup %.2f sim-s/cpu-s ratio=%.2f\n", sim_s / elapsed, sim_s / elapsed);
    printf("BENCH cluster_events_per_s %.0f events/s ratio=%.4f\n", events_per_s,
           events_per_s / heap);
    printf("BENCH cluster_disk_overhead %.2f x ratio=%.2f\n", overhead, overhead);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("# peak memory %.1f MB (ru_maxrss)\n", (double)usage.ru_maxrss / 1024.0);
    return runs[0].acked > 0 && runs[1].acked > 0 ? 0 : 1;
}
