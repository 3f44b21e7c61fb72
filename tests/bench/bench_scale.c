/* tests/bench/bench_scale.c: how the cluster model's cost grows with the
 * cluster (issue 16).
 *
 * Every size runs in a forked child of its own, so that its peak resident
 * memory (VmHWM of /proc/self/status, read in the child at its end) is its
 * own and one size's heap does not make the next one's allocations cheaper.
 * Each child builds the cluster with tests/core/cluster_fixture.h (Kafka's
 * defaults, RF 3, min.insync.replicas 2, 100 us of network jitter, no checks
 * after every event), starts it and runs a warm-up (topic creation, the
 * first fetches, the files made): WARMUP_S simulated seconds, and with a
 * producer on until its first record is acknowledged (in 100 ms steps, at
 * most WARMUP_MAX_S). A new replica's leader-epoch-checkpoint is created
 * empty (no fsync), but a leader fsyncs its epoch cache when it assigns an
 * epoch (2 ms a write here, as Kafka's LeaderEpochFileCache does), so a
 * broker leading thousands of replicas (3 x 10,000) keeps its disk busy for
 * seconds of simulated time before every leader serves.
 * An idle size of the curves warms up as long as its loaded twin did. It
 * then measures the next `measure_s` simulated seconds in CPU time and
 * wall time. The producer
 * sends 100-byte values with max(1000, partitions) keys, so that every
 * partition gets records; the 3 x 3 size adds one consumer group of one
 * consumer, as the quickstart has.
 *
 *   BENCH scale_<B>x<P> <v> sim-s/wall-s ratio=<v / baseline's v>
 *
 * v is simulated seconds per wall second of the measured span, as the
 * issue's goals are stated; the baseline is the 3 x 3 size measured in the
 * same run (so its own ratio is 1). Comment lines give, per size, the same
 * speed in CPU time (the steadier figure on a shared machine, bench_time.h),
 * the startup's cost, events, records and peak RSS, and each goal as met or
 * not. Then the growth curves, in CPU time:
 *
 *   - idle: 12 brokers, no client, P = 12, 120, 1,200, 10,000 partitions,
 *     5,000 / 2,500 / 1,500 / 400 simulated seconds (a few tenths of a CPU
 *     second each): CPU microseconds per partition per simulated second;
 *   - per record: the same sizes with a producer at 5,000 records/s for
 *     40 / 20 / 10 / 5 simulated seconds, in steady state (the warm-up runs
 *     until five records per key are acknowledged, so that the partitions'
 *     first appends, each rewriting a leader-epoch-checkpoint, are over):
 *     (CPU of the loaded run - the idle run's CPU for as many simulated
 *     seconds) per record sent. For information (no goal): the same per
 *     batch sent, and per record with null keys, which the sticky
 *     partitioner batches whatever the partition count. Keyed records'
 *     batches shrink from 3 records at 12 partitions to 1 from about 1,000
 *     up, so the keyed curve is mostly the cost of a batch, the null-key
 *     one that of the partitions;
 *   - brokers: 3, 12, 48, 100 brokers at 1,200 partitions and 5,000
 *     records/s: CPU seconds per simulated second.
 *
 * Flat means within 2x from the smallest to the largest size.
 *
 * The run folders go to a tmpfs (bench_use_tmpfs in bench_time.h): on an
 * ext4 folder that many files were deleted from, creating the 15,000 files
 * of 3,000 replicas cost 21 CPU seconds in the kernel's inode allocation
 * (recently_deleted, find_inode_bit), against 1 s on tmpfs, and that cost
 * is the host's, varies with its history, and is not the model's.
 *
 * Where the CPU goes (callgrind, whole runs of one size): at 100 x 1,200
 * and 20,000 records/s the producer's sender passes took about 70 % of 8.7 G
 * instructions, each a visit of every partition with a queued batch
 * (expiry, readiness, the next wakeup); grouping the drain by leader and
 * skipping the pass for a record that opens a lone lingering batch brought
 * the run to 6.8 G. The producer now keeps its partitions in order of the
 * time their head batch becomes sendable, and per leader those that are
 * (P10 in core/producer.c), so a pass costs what is ready and what changed:
 * at 12 x 10,000 and 5,000 records/s the passes went from 0.99 G to 0.05 G
 * instructions (1 simulated second after the warm-up).
 * A fetch session's follower and leader now visit only the partitions that
 * changed since its last fetch (F5 in core/broker_fetcher.c, S5 in
 * core/broker_serve.c): 12 x 1,200 at 10,000 records/s for 1 s went from
 * 2.66 G to 2.28 G instructions, and an idle partition costs about 0.6 CPU
 * microseconds per simulated second at 10,000 partitions (7-9 before).
 *
 * `bench_scale BROKERS PARTITIONS RATE SECONDS [consumer|steady]` runs that
 * one size in this process (with the 3 x 3 size's consumer group, or with the
 * curves' steady-state warm-up, when asked) and prints its comment line (for
 * perf record or callgrind). */
#include "../../core/base.h"
#include "../../core/cluster.h"
#include "../../core/config.h"
#include "../../sim/world.h"
#include "../core/cluster_fixture.h"
#include "bench_time.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define WARMUP_S     1
#define WARMUP_MAX_S 60
#define VALUE_BYTES  100

struct size {
    int32_t brokers;
    int32_t partitions;
    uint64_t rate_per_s; /* 0: no producer */
    bool consumer;
    int32_t measure_s;    /* simulated seconds measured after the warm-up */
    ks_time_ns warmup_ns; /* 0: as the header says */
    bool null_keys;       /* the producer sends null keys (sticky partitioner) */
    int64_t warm_acked;   /* the warm-up also lasts until this many records are acked */
};

/* What a child measured, sent back through a pipe. */
struct result {
    bool ok;
    double startup_cpu_s; /* the warm-up */
    ks_time_ns warmup_ns;
    double cpu_s; /* the measured span */
    double wall_s;
    uint64_t events;      /* in the measured span */
    int64_t sent;         /* records sent in the measured span */
    int64_t batches;      /* batches sent in the measured span */
    int64_t acked;        /* at the end */
    int64_t peak_rss_kib; /* VmHWM */
};

static int64_t peak_rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) {
        return -1;
    }
    char line[256];
    int64_t kib = -1;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kib = g_ascii_strtoll(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kib;
}

static void run_size(const struct size *size, struct result *out)
{
    struct cluster_fixture *cf = calloc(1, sizeof *cf);
    ks_assert(cf != NULL);
    cf_init(cf, size->brokers);
    cf->check_every_event = false;
    cf->world_config.network_jitter_ns = 100 * KS_NS_PER_US;
    cf_topic(cf, "bench", size->partitions, 3, 2, NULL);
    if (size->rate_per_s > 0) {
        struct ks_producer_config *producer = cf_producer(cf, "p1", 0);
        producer->rate_per_s = size->rate_per_s;
        producer->count = -1;
        producer->key_count =
            size->null_keys ? 0 : (size->partitions > 1000 ? size->partitions : 1000);
        producer->value_bytes = VALUE_BYTES;
    }
    if (size->consumer) {
        struct ks_consumer_config *consumer = cf_consumer(cf, "c1", "g1", 0);
        consumer->processing_ns = KS_NS_PER_MS;
    }
    cf->observer = (struct ks_cluster_observer){ 0 };
    cf_build(cf, 1);
    ks_world *world = cf->env.world;
    struct ks_cluster *model = cf->cluster;

    double start = bench_cpu_s();
    ks_cluster_start(model);
    ks_time_ns warm_end =
        size->warmup_ns > 0 ? size->warmup_ns : (ks_time_ns)WARMUP_S * KS_NS_PER_S;
    ks_world_run_until(world, warm_end);
    while (size->warmup_ns == 0 && size->rate_per_s > 0 &&
           (ks_cluster_producer_acked_count(model, 0) == 0 ||
            ks_cluster_producer_acked_count(model, 0) < size->warm_acked) &&
           warm_end < (ks_time_ns)WARMUP_MAX_S * KS_NS_PER_S) {
        warm_end += 100 * KS_NS_PER_MS;
        ks_world_run_until(world, warm_end);
    }
    out->warmup_ns = warm_end;
    double warm = bench_cpu_s();
    double warm_wall = bench_wall_s();
    uint64_t events0 = ks_world_event_count(world);
    int64_t sent0 = size->rate_per_s > 0 ? ks_cluster_producer_sent_count(model, 0) : 0;
    int64_t batches0 = ks_cluster_producer_batches_sent_count(model, 0);
    ks_world_run_until(world, warm_end + (ks_time_ns)size->measure_s * KS_NS_PER_S);
    out->cpu_s = bench_cpu_s() - warm;
    out->wall_s = bench_wall_s() - warm_wall;
    out->startup_cpu_s = warm - start;
    out->events = ks_world_event_count(world) - events0;
    out->sent = size->rate_per_s > 0 ? ks_cluster_producer_sent_count(model, 0) - sent0 : 0;
    out->batches = ks_cluster_producer_batches_sent_count(model, 0) - batches0;
    out->acked = size->rate_per_s > 0 ? ks_cluster_producer_acked_count(model, 0) : 0;
    out->peak_rss_kib = peak_rss_kib();
    out->ok = size->rate_per_s == 0 || out->acked > 0;
    cf_free(cf);
    free(cf);
}

/* Runs the size in a child; false if the child failed. */
static bool measure(const struct size *size, struct result *out)
{
    memset(out, 0, sizeof *out);
    int fds[2];
    ks_assert(pipe(fds) == 0);
    fflush(stdout);
    pid_t child = fork();
    ks_assert(child >= 0);
    if (child == 0) {
        close(fds[0]);
        struct result r;
        memset(&r, 0, sizeof r);
        run_size(size, &r);
        ssize_t n = write(fds[1], &r, sizeof r);
        _exit(n == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fds[1]);
    ssize_t n = read(fds[0], out, sizeof *out);
    close(fds[0]);
    int status = 0;
    waitpid(child, &status, 0);
    return n == (ssize_t)sizeof *out && WIFEXITED(status) && WEXITSTATUS(status) == 0 && out->ok;
}

static double per_wall(const struct size *size, const struct result *r)
{
    return (double)size->measure_s / (r->wall_s > 0 ? r->wall_s : 1e-9);
}

static double per_cpu(const struct size *size, const struct result *r)
{
    return (double)size->measure_s / (r->cpu_s > 0 ? r->cpu_s : 1e-9);
}

static void comment(const struct size *size, const struct result *r)
{
    printf("# %dx%d %" G_GUINT64_FORMAT " rec/s: %d sim-s in cpu %.2f s (%.1f sim-s/cpu-s), wall "
           "%.2f s; startup (%.1f sim-s) cpu %.2f s; events %" G_GUINT64_FORMAT
           ", sent %" G_GINT64_FORMAT " in %" G_GINT64_FORMAT " batches, peak RSS %.1f MB\n",
           size->brokers, size->partitions, size->rate_per_s, size->measure_s, r->cpu_s,
           per_cpu(size, r), r->wall_s, (double)r->warmup_ns / 1e9, r->startup_cpu_s, r->events,
           r->sent, r->batches, (double)r->peak_rss_kib / 1024.0);
}

static void goal(const char *what, bool met)
{
    printf("# goal %s: %s\n", what, met ? "met" : "NOT met");
}

/* The ratio of the largest to the smallest of values[0..n). */
static double spread(const double *values, int n)
{
    double lo = values[0], hi = values[0];
    for (int i = 1; i < n; i++) {
        lo = values[i] < lo ? values[i] : lo;
        hi = values[i] > hi ? values[i] : hi;
    }
    return lo > 0 ? hi / lo : 0;
}

int main(int argc, char **argv)
{
    bool ok = true;
    bench_use_tmpfs();
    bool consumer = argc == 6 && strcmp(argv[5], "consumer") == 0;
    bool steady = argc == 6 && strcmp(argv[5], "steady") == 0;
    if (argc == 5 || consumer || steady) {
        int32_t partitions = atoi(argv[2]);
        struct size one = { atoi(argv[1]),
                            partitions,
                            (uint64_t)atoll(argv[3]),
                            consumer,
                            atoi(argv[4]),
                            0,
                            false,
                            steady ? 5 * (partitions > 1000 ? partitions : 1000) : 0 };
        struct result r;
        run_size(&one, &r);
        comment(&one, &r);
        return r.ok ? 0 : 1;
    }
    /* ---- the sizes ---- */
    /* 3 x 3 measures 300 simulated seconds: at ~900 per CPU second its
     * 60 took 0.07 s, too short to time in wall time on a shared machine
     * (one run read 524 per wall second against 906 per CPU second). */
    static const struct size sizes[] = {
        { 3, 3, 500, true, 300, 0, false, 0 },
        { 12, 1200, 10000, false, 10, 0, false, 0 },
        { 100, 10000, 20000, false, 2, 0, false, 0 },
    };
    enum { SIZE_COUNT = sizeof sizes / sizeof sizes[0] };
    struct result results[SIZE_COUNT];
    for (int i = 0; i < SIZE_COUNT; i++) {
        if (sizes[i].brokers > KS_BROKER_COUNT_MAX ||
            sizes[i].partitions > KS_PARTITION_COUNT_MAX) {
            printf("# %dx%d: above the limits (%d brokers, %d partitions per topic)\n",
                   sizes[i].brokers, sizes[i].partitions, KS_BROKER_COUNT_MAX,
                   KS_PARTITION_COUNT_MAX);
            results[i].ok = false;
            continue;
        }
        if (!measure(&sizes[i], &results[i])) {
            printf("# %dx%d: the run failed\n", sizes[i].brokers, sizes[i].partitions);
            ok = false;
            continue;
        }
        comment(&sizes[i], &results[i]);
    }
    double baseline = results[0].ok ? per_wall(&sizes[0], &results[0]) : 0;
    for (int i = 0; i < SIZE_COUNT; i++) {
        if (!results[i].ok) {
            continue;
        }
        double v = per_wall(&sizes[i], &results[i]);
        printf("BENCH scale_%dx%d %.2f sim-s/wall-s ratio=%.4f\n", sizes[i].brokers,
               sizes[i].partitions, v, baseline > 0 ? v / baseline : 0);
    }
    printf("# baseline: scale_3x3 measured above, in the same run; run folders in %s\n",
           g_get_tmp_dir());
    if (results[0].ok) {
        goal("3x3 >= 700 sim-s/wall-s", per_wall(&sizes[0], &results[0]) >= 700);
    }
    if (results[1].ok) {
        goal("12x1200 >= 20 sim-s/wall-s", per_wall(&sizes[1], &results[1]) >= 20);
    }
    for (int i = 2; i < SIZE_COUNT; i++) {
        if (results[i].ok) {
            char what[64];
            g_snprintf(what, sizeof what, "%dx%d >= 2 sim-s/wall-s", sizes[i].brokers,
                       sizes[i].partitions);
            goal(what, per_wall(&sizes[i], &results[i]) >= 2);
            g_snprintf(what, sizeof what, "%dx%d peak RSS < 2 GB", sizes[i].brokers,
                       sizes[i].partitions);
            goal(what, results[i].peak_rss_kib < 2 * 1024 * 1024);
        }
    }

    /* ---- growth against partitions: idle, and per record ---- */
    static const int32_t partitions[] = { 12, 120, 1200, 10000 };
    /* Idle simulated seconds per size, for a few tenths of a CPU second
     * each: an idle partition costs from ~5 us per simulated second at 12
     * partitions (the brokers' own work shared by few) to ~0.07 at 10,000. */
    static const int32_t idle_seconds[] = { 5000, 2500, 1500, 400 };
    /* Loaded simulated seconds: 5 s at 12 partitions took 0.05 CPU s. */
    static const int32_t loaded_seconds[] = { 40, 20, 10, 5 };
    enum { CURVE = sizeof partitions / sizeof partitions[0] };
    double idle_us[CURVE], record_us[CURVE], batch_us[CURVE], sticky_us[CURVE];
    int curve_n = 0;
    for (int i = 0; i < CURVE; i++) {
        if (partitions[i] > KS_PARTITION_COUNT_MAX) {
            printf("# curve: %d partitions above the limit %d\n", partitions[i],
                   KS_PARTITION_COUNT_MAX);
            continue;
        }
        /* Steady state: the warm-up lasts until five records per key are
         * acknowledged, so that all but e^-5 (0.7 %) of the keys' partitions
         * have had their first batch appended on every replica. A
         * follower's first append of an epoch rewrites the partition's
         * leader-epoch-checkpoint (LeaderEpochFileCache.assign, a host file
         * write and rename): once per partition, not per record. Measured
         * from the first acknowledgement instead, 10,000 partitions' first
         * appends fell in the span and tripled its cost per record. */
        int64_t keys = partitions[i] > 1000 ? partitions[i] : 1000;
        struct size loaded = {
            12, partitions[i], 5000, false, loaded_seconds[i], 0, false, 5 * keys
        };
        struct result ri, rl;
        bool loaded_ok = measure(&loaded, &rl);
        struct size idle = { 12, partitions[i], 0, false, idle_seconds[i], rl.warmup_ns, false, 0 };
        if (!loaded_ok || !measure(&idle, &ri)) {
            printf("# curve: the runs at %d partitions failed\n", partitions[i]);
            ok = false;
            continue;
        }
        comment(&idle, &ri);
        comment(&loaded, &rl);
        idle_us[curve_n] = ri.cpu_s * 1e6 / ((double)partitions[i] * idle.measure_s);
        /* The idle cost of the loaded run's span, taken off its CPU time. */
        double idle_share = ri.cpu_s * loaded.measure_s / idle.measure_s;
        record_us[curve_n] = (rl.cpu_s - idle_share) * 1e6 / (double)(rl.sent > 0 ? rl.sent : 1);
        batch_us[curve_n] =
            (rl.cpu_s - idle_share) * 1e6 / (double)(rl.batches > 0 ? rl.batches : 1);
        /* The same load with null keys: the sticky partitioner fills a
         * batch of one partition at a time whatever their number, so this
         * curve shows the cost of the partitions apart from that of
         * batches, which keyed records make smaller as partitions grow. */
        struct size sticky = loaded;
        sticky.null_keys = true;
        sticky.warmup_ns = rl.warmup_ns;
        struct result rs;
        sticky_us[curve_n] = 0;
        if (measure(&sticky, &rs)) {
            comment(&sticky, &rs);
            sticky_us[curve_n] =
                (rs.cpu_s - idle_share) * 1e6 / (double)(rs.sent > 0 ? rs.sent : 1);
        }
        /* The idle figure whole as well: what the 12 idle brokers cost per
         * simulated second is a part per broker (each follower session's
         * empty fetch every replica.fetch.wait.max.ms, the periodic tasks)
         * and a part per partition (its lines in the offset checkpoints). */
        printf("# curve partitions=%d idle %.3f cpu-us/partition/sim-s (the cluster: %.1f "
               "cpu-us/sim-s), per record %.3f cpu-us/record (%.2f records a batch: %.3f "
               "cpu-us/batch; null keys: %.3f cpu-us/record)\n",
               partitions[i], idle_us[curve_n], idle_us[curve_n] * partitions[i],
               record_us[curve_n], (double)rl.sent / (double)(rl.batches > 0 ? rl.batches : 1),
               batch_us[curve_n], sticky_us[curve_n]);
        curve_n++;
    }
    if (curve_n > 1) {
        printf("# curve spread (largest / smallest): idle %.2fx, per record %.2fx (for "
               "information: per batch %.2fx, null keys per record %.2fx)\n",
               spread(idle_us, curve_n), spread(record_us, curve_n), spread(batch_us, curve_n),
               spread(sticky_us, curve_n));
        goal("idle cost per partition flat within 2x", spread(idle_us, curve_n) <= 2);
        goal("cost per record flat within 2x", spread(record_us, curve_n) <= 2);
    }

    /* ---- growth against brokers ---- */
    static const int32_t brokers[] = { 3, 12, 48, 100 };
    for (size_t i = 0; i < sizeof brokers / sizeof brokers[0]; i++) {
        if (brokers[i] > KS_BROKER_COUNT_MAX || 1200 > KS_PARTITION_COUNT_MAX) {
            printf("# curve: %d brokers above the limit %d\n", brokers[i], KS_BROKER_COUNT_MAX);
            continue;
        }
        struct size s = { brokers[i], 1200, 5000, false, 5, 0, false, 0 };
        struct result r;
        if (!measure(&s, &r)) {
            printf("# curve: the run with %d brokers failed\n", brokers[i]);
            ok = false;
            continue;
        }
        comment(&s, &r);
        printf("# curve brokers=%d partitions=1200 %.4f cpu-s/sim-s\n", brokers[i],
               r.cpu_s / s.measure_s);
    }
    return ok ? 0 : 1;
}
