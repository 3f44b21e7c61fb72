/* tests/bench/bench_clients.c: what the client models cost on top of the
 * replication model.
 *
 * Goal: "producer and consumer paths add no more than 30% to the replication
 * benchmark's wall time at the same record rate". Two runs of the same
 * workload in one process: 3 brokers, one topic with 12 partitions and RF 3,
 * 50,000 records/s of 100-byte values (1000 keys, the identity header) for
 * 60 simulated seconds.
 *
 *   (a) baseline: no client nodes. A driver timer on node 0 fires every 5 ms
 *       (the producer's linger.ms), takes the records that fell due since the
 *       last tick (record k is due at k / rate, as the producer's own
 *       schedule), routes each by murmur2 of its key as the producer does,
 *       builds one batch per partition with core/batch.h (split at batch.size
 *       16 KiB) and appends it at the partition's leader through
 *       ks_broker_append_for_test with acks=all.
 *   (b) clients: the same records sent by one core/producer.c producer with
 *       Kafka's defaults (acks=all, idempotent, linger 5 ms, batch.size 16 KiB),
 *       plus one consumer group with one core/consumer.c consumer reading the
 *       topic from the earliest offset (commit after-process, processing.time
 *       1 us, so it keeps up).
 *
 * Both runs simulate the same span (62 s, longer only if records are still
 * unacknowledged or unconsumed then). Each side runs twice, in the order
 * a b b a, and the cheaper run of each counts. Every time is the process's
 * CPU time (bench_time.h), as in the other benchmarks: on a shared machine
 * wall time also counts the waits for a core. Prints
 *
 *   BENCH client_overhead <v> x ratio=<v>,  v = cpu(b) / cpu(a)
 *
 * then the goal (<= 1.3) as met or not, and one comment line per run with
 * its CPU and wall times, events and record counts, so a reader can check
 * both runs did the same work. */
#include "../../core/base.h"
#include "../../core/batch.h"
#include "../../core/broker.h"
#include "../../core/cluster.h"
#include "../../core/partitioner.h"
#include "../../sim/world.h"
#include "../core/cluster_fixture.h"
#include "bench_time.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PARTITIONS         12
#define RATE_PER_S         50000
#define VALUE_BYTES        100
#define KEY_COUNT          1000
#define DURATION_S         60
#define RECORD_COUNT       ((int64_t)RATE_PER_S * DURATION_S)
#define LINGER_NS          (5 * KS_NS_PER_MS)
#define BATCH_SIZE_BYTES   16384
#define RUN_END_NS         ((ks_time_ns)(DURATION_S + 2) * KS_NS_PER_S)
#define DRAIN_STEP_NS      (500 * KS_NS_PER_MS)
#define DRAIN_END_NS       ((ks_time_ns)(DURATION_S + 15) * KS_NS_PER_S)
#define PROCESSING_NS      ((int64_t)KS_NS_PER_US) /* the consumer's processing.time */
#define TIMER_BENCH_DRIVER 0xBC01u
#define GOAL_OVERHEAD      1.3

/* What one run did. */
struct run_result {
    double wall_s;
    double cpu_s;
    uint64_t events;
    ks_time_ns sim_end_ns;
    int64_t sent;
    int64_t acked;
    int64_t failed;
    int64_t consumed;          /* processings, duplicates included */
    int64_t consumed_distinct; /* distinct producer records processed */
    int64_t log_bytes;         /* on all replicas of the bench topic */
};

/* ---- the shared configuration ---------------------------------------------- */

/* Kafka's defaults (tests/core/cluster_fixture.h) for 3 brokers and the bench
 * topic, 100 us of network jitter, no checks after every event (they are not
 * what is measured); the producer and the consumer when asked for. */
static void bench_fixture_init(struct cluster_fixture *cf, bool with_producer, bool with_consumer,
                               int64_t processing_ns)
{
    cf_init(cf, 3);
    cf->check_every_event = false;
    cf->world_config.network_jitter_ns = 100 * KS_NS_PER_US;
    cf_topic(cf, "bench", PARTITIONS, 3, 2, NULL);
    if (with_producer) {
        struct ks_producer_config *producer = cf_producer(cf, "p1", 0);
        producer->linger_ns = LINGER_NS;
        producer->batch_size_bytes = BATCH_SIZE_BYTES;
        producer->rate_per_s = RATE_PER_S;
        producer->count = RECORD_COUNT;
        producer->key_count = KEY_COUNT;
        producer->value_bytes = VALUE_BYTES;
    }
    if (with_consumer) {
        struct ks_consumer_config *consumer = cf_consumer(cf, "c1", "g1", 0);
        consumer->commit = KS_COMMIT_AFTER_PROCESS;
        consumer->auto_offset_reset = KS_RESET_EARLIEST;
        consumer->processing_ns = processing_ns;
    }
}

static int64_t topic_log_bytes(struct ks_cluster *model)
{
    int64_t bytes = 0;
    for (int32_t b = 1; b <= 3; b++) {
        for (int32_t p = 0; p < PARTITIONS; p++) {
            struct ks_log *log = ks_cluster_replica_log(model, b, 0, p);
            if (log != NULL) {
                bytes += ks_log_size_bytes(log);
            }
        }
    }
    return bytes;
}

/* ---- (a) the baseline driver ----------------------------------------------- */

struct pending_record {
    int64_t seq;
    int32_t key_number;
    int64_t timestamp_ms;
};

struct driver {
    ks_world *world;
    struct ks_cluster *model;
    int64_t next_seq;            /* records generated so far */
    GArray *pending[PARTITIONS]; /* of struct pending_record, not yet appended */
    int64_t pending_count;
    int64_t appended;
    int64_t acked;
    int64_t failed;
    int64_t batches;
    uint8_t value[VALUE_BYTES];
};

struct append_context {
    struct driver *driver;
    int32_t record_count;
};

static void driver_append_done(void *context, int16_t error, int64_t base_offset)
{
    (void)base_offset;
    struct append_context *append = context;
    if (error == 0) {
        append->driver->acked += append->record_count;
    } else {
        append->driver->failed += append->record_count;
    }
    free(append);
}

static void driver_send_batch(struct driver *d, struct ks_broker *broker, int32_t partition,
                              struct ks_batch_builder *builder)
{
    struct append_context *append = malloc(sizeof *append);
    ks_assert(append != NULL);
    append->driver = d;
    append->record_count = builder->record_count; /* before finish resets it */
    GByteArray *bytes = ks_batch_builder_finish(builder);
    ks_broker_append_for_test(broker, 0, partition, KS_ACKS_ALL, bytes->data, bytes->len,
                              driver_append_done, append);
    g_byte_array_unref(bytes);
    d->batches++;
}

/* Appends partition p's pending records at its leader, in batches of at most
 * batch.size bytes, as the producer's accumulator would. */
static void driver_flush_partition(struct driver *d, int32_t p, struct ks_broker *broker)
{
    GArray *records = d->pending[p];
    struct ks_batch_builder builder;
    bool open = false;
    for (guint i = 0; i < records->len; i++) {
        const struct pending_record *r = &g_array_index(records, struct pending_record, i);
        char key[32];
        int key_bytes = snprintf(key, sizeof key, "key-%d", r->key_number);
        char header_value[96];
        int header_bytes =
            snprintf(header_value, sizeof header_value, "p1:%lld", (long long)r->seq);
        struct ks_header_view header = {
            .key = (const uint8_t *)KS_IDENTITY_HEADER,
            .key_bytes = (int32_t)strlen(KS_IDENTITY_HEADER),
            .value = (const uint8_t *)header_value,
            .value_bytes = header_bytes,
        };
        if (open && ks_batch_builder_size(&builder) + 64 + VALUE_BYTES > BATCH_SIZE_BYTES) {
            driver_send_batch(d, broker, p, &builder);
            ks_batch_builder_deinit(&builder);
            open = false;
        }
        if (!open) {
            ks_batch_builder_init(&builder, r->timestamp_ms, -1, -1, -1);
            open = true;
        }
        ks_batch_builder_add(&builder, r->timestamp_ms, key, key_bytes, d->value, VALUE_BYTES,
                             &header, 1);
    }
    if (open) {
        driver_send_batch(d, broker, p, &builder);
        ks_batch_builder_deinit(&builder);
    }
    d->appended += records->len;
    d->pending_count -= records->len;
    g_array_set_size(records, 0);
}

static void driver_tick(ks_world *world, void *context)
{
    struct driver *d = context;
    ks_time_ns now = ks_world_now_ns(world);
    /* Record k falls due at k / rate, the producer's own schedule. */
    while (d->next_seq < RECORD_COUNT &&
           (ks_time_ns)((unsigned __int128)d->next_seq * KS_NS_PER_S / RATE_PER_S) <= now) {
        struct pending_record r;
        r.seq = d->next_seq++;
        r.key_number = (int32_t)ks_world_random_below(world, KS_RNG_WORKLOAD, KEY_COUNT);
        r.timestamp_ms = KS_EPOCH_BASE_MS + (int64_t)(now / KS_NS_PER_MS);
        char key[32];
        int key_bytes = snprintf(key, sizeof key, "key-%d", r.key_number);
        int32_t p = ks_partitioner_key_partition(key, (size_t)key_bytes, PARTITIONS);
        g_array_append_val(d->pending[p], r);
        d->pending_count++;
    }
    /* A partition's records wait until its leader knows it leads. */
    for (int32_t p = 0; p < PARTITIONS; p++) {
        if (d->pending[p]->len == 0) {
            continue;
        }
        int32_t leader = ks_cluster_leader(d->model, 0, p);
        struct ks_replica_state state;
        if (leader < 0 || !ks_cluster_replica_state(d->model, leader, 0, p, &state) ||
            state.role != KS_ROLE_LEADER) {
            continue;
        }
        driver_flush_partition(d, p, ks_cluster_broker(d->model, leader));
    }
    if (d->next_seq < RECORD_COUNT || d->pending_count > 0) {
        ks_world_schedule(world, KS_NODE_DRIVER, LINGER_NS, TIMER_BENCH_DRIVER, driver_tick, d);
    }
}

static void run_baseline(struct run_result *out)
{
    struct cluster_fixture *cf = calloc(1, sizeof *cf);
    ks_assert(cf != NULL);
    bench_fixture_init(cf, false, false, 0);
    cf->observer = (struct ks_cluster_observer){ 0 };
    cf_build(cf, 1);
    ks_world *world = cf->env.world;
    struct ks_cluster *model = cf->cluster;
    struct driver *d = calloc(1, sizeof *d);
    ks_assert(d != NULL);
    d->world = world;
    d->model = model;
    for (int32_t p = 0; p < PARTITIONS; p++) {
        d->pending[p] = g_array_new(FALSE, FALSE, sizeof(struct pending_record));
    }
    memset(d->value, 'v', sizeof d->value);

    double start = bench_wall_s();
    double start_cpu = bench_cpu_s();
    ks_cluster_start(model);
    ks_world_schedule(world, KS_NODE_DRIVER, LINGER_NS, TIMER_BENCH_DRIVER, driver_tick, d);
    ks_world_run_until(world, RUN_END_NS);
    while (d->acked + d->failed < RECORD_COUNT && ks_world_now_ns(world) < DRAIN_END_NS) {
        ks_world_run_until(world, ks_world_now_ns(world) + DRAIN_STEP_NS);
    }
    out->wall_s = bench_wall_s() - start;
    out->cpu_s = bench_cpu_s() - start_cpu;
    out->events = ks_world_event_count(world);
    out->sim_end_ns = ks_world_now_ns(world);
    out->sent = d->appended;
    out->acked = d->acked;
    out->failed = d->failed;
    out->consumed = 0;
    out->consumed_distinct = 0;
    out->log_bytes = topic_log_bytes(model);

    cf_free(cf); /* batches still pending leak their small contexts */
    free(cf);
    for (int32_t p = 0; p < PARTITIONS; p++) {
        g_array_unref(d->pending[p]);
    }
    free(d);
}

/* ---- (b) producer and consumer ---------------------------------------------- */

struct consume_counter {
    int64_t consumed;
    int64_t distinct;
    uint8_t *seen; /* one bit per producer seq */
};

static void on_consumed(void *context, const struct ks_consumed_record *consumed)
{
    struct consume_counter *counter = context;
    counter->consumed++;
    if (consumed->producer_index == 0 && consumed->seq >= 0 && consumed->seq < RECORD_COUNT) {
        uint8_t bit = (uint8_t)(1u << (consumed->seq & 7));
        uint8_t *byte = &counter->seen[consumed->seq >> 3];
        if ((*byte & bit) == 0) {
            *byte |= bit;
            counter->distinct++;
        }
    }
}

static void run_clients(struct run_result *out, bool with_consumer, int64_t processing_ns)
{
    struct cluster_fixture *cf = calloc(1, sizeof *cf);
    ks_assert(cf != NULL);
    bench_fixture_init(cf, true, with_consumer, processing_ns);
    struct consume_counter counter;
    memset(&counter, 0, sizeof counter);
    counter.seen = calloc((size_t)(RECORD_COUNT / 8 + 1), 1);
    ks_assert(counter.seen != NULL);
    cf->observer = (struct ks_cluster_observer){ .context = &counter, .on_consumed = on_consumed };
    cf_build(cf, 1);
    ks_world *world = cf->env.world;
    struct ks_cluster *model = cf->cluster;

    double start = bench_wall_s();
    double start_cpu = bench_cpu_s();
    ks_cluster_start(model);
    ks_world_run_until(world, RUN_END_NS);
    while ((ks_cluster_producer_acked_count(model, 0) < RECORD_COUNT ||
            (with_consumer && counter.distinct < RECORD_COUNT)) &&
           ks_world_now_ns(world) < DRAIN_END_NS) {
        ks_world_run_until(world, ks_world_now_ns(world) + DRAIN_STEP_NS);
    }
    out->wall_s = bench_wall_s() - start;
    out->cpu_s = bench_cpu_s() - start_cpu;
    out->events = ks_world_event_count(world);
    out->sim_end_ns = ks_world_now_ns(world);
    out->sent = ks_cluster_producer_sent_count(model, 0);
    out->acked = ks_cluster_producer_acked_count(model, 0);
    out->failed = 0;
    out->consumed = counter.consumed;
    out->consumed_distinct = counter.distinct;
    out->log_bytes = topic_log_bytes(model);

    cf_free(cf);
    free(cf);
    free(counter.seen);
}

/* cpus, walls: the two runs' CPU and wall times when the side ran twice,
 * or NULL. */
static void print_run(const char *label, const struct run_result *r, const double *cpus,
                      const double *walls)
{
    char runs[96] = "";
    if (cpus != NULL) {
        snprintf(runs, sizeof runs, " (best of %.2f and %.2f; wall %.2f and %.2f)", cpus[0],
                 cpus[1], walls[0], walls[1]);
    }
    printf("# %s: cpu %.2f s%s, wall %.2f s, events %" G_GUINT64_FORMAT
           ", simulated %.1f s, records sent %" G_GINT64_FORMAT " acked %" G_GINT64_FORMAT
           " failed %" G_GINT64_FORMAT " consumed %" G_GINT64_FORMAT " (distinct %" G_GINT64_FORMAT
           "), topic log bytes on"
           " 3 brokers %" G_GINT64_FORMAT "\n",
           label, r->cpu_s, runs, r->wall_s, r->events, (double)r->sim_end_ns / 1e9, r->sent,
           r->acked, r->failed, r->consumed, r->consumed_distinct, r->log_bytes);
}

/* With an argument, runs one side only (for profiling, or to split the
 * client cost): `baseline`, `clients [processing_ns]` (default 1000), or
 * `producer` (the producer without the consumer). No argument runs (a) and
 * (b) and prints the ratio. */
int main(int argc, char **argv)
{
    /* The two runs write 1.2 GB of log each, and the clients' run has the
     * 150 more replicas of __consumer_offsets: on this machine's ext4 the
     * host's file creation and deletion (0.8 s of openat, 0.3 s of unlink
     * in one clients run) varied with the disk's state and took the ratio
     * from 1.21 to 1.94 between runs. */
    const char *tmp = bench_use_tmpfs();
    const char *only = argc > 1 ? argv[1] : NULL;
    struct run_result baseline;
    struct run_result clients;
    memset(&baseline, 0, sizeof baseline);
    memset(&clients, 0, sizeof clients);
    if (only != NULL) {
        if (strcmp(only, "baseline") == 0) {
            run_baseline(&baseline);
        } else if (strcmp(only, "clients") == 0) {
            int64_t processing_ns = argc > 2 ? g_ascii_strtoll(argv[2], NULL, 10) : PROCESSING_NS;
            run_clients(&baseline, true, processing_ns);
        } else if (strcmp(only, "producer") == 0) {
            run_clients(&baseline, false, PROCESSING_NS);
        } else {
            fprintf(stderr,
                    "usage: bench_clients [baseline | clients [processing_ns] | producer]\n");
            return 2;
        }
        print_run(only, &baseline, NULL, NULL);
        return baseline.acked == RECORD_COUNT ? 0 : 1;
    }
    /* Each side twice, in the order a b b a, so that neither side always
     * runs first or last (page cache, the other helpers' load); the faster
     * run of each side counts. The runs are deterministic: a side's repeats
     * do the same events. */
    struct run_result repeat_a;
    struct run_result repeat_b;
    memset(&repeat_a, 0, sizeof repeat_a);
    memset(&repeat_b, 0, sizeof repeat_b);
    run_baseline(&baseline);
    run_clients(&clients, true, PROCESSING_NS);
    run_clients(&repeat_b, true, PROCESSING_NS);
    run_baseline(&repeat_a);
    double cpus_a[2] = { baseline.cpu_s, repeat_a.cpu_s };
    double cpus_b[2] = { clients.cpu_s, repeat_b.cpu_s };
    double walls_a[2] = { baseline.wall_s, repeat_a.wall_s };
    double walls_b[2] = { clients.wall_s, repeat_b.wall_s };
    ks_assert(repeat_a.events == baseline.events && repeat_b.events == clients.events);
    if (repeat_a.cpu_s < baseline.cpu_s) {
        baseline.wall_s = repeat_a.wall_s;
        baseline.cpu_s = repeat_a.cpu_s;
    }
    if (repeat_b.cpu_s < clients.cpu_s) {
        clients.wall_s = repeat_b.wall_s;
        clients.cpu_s = repeat_b.cpu_s;
    }
    double ratio = baseline.cpu_s > 0 ? clients.cpu_s / baseline.cpu_s : 0;
    print_run("baseline (driver appends at leaders)", &baseline, cpus_a, walls_a);
    print_run("clients (producer + consumer group)", &clients, cpus_b, walls_b);
    printf("BENCH client_overhead %.2f x ratio=%.2f\n", ratio, ratio);
    printf("# files in %s (bench_use_tmpfs)\n", tmp);
    printf("# goal client_overhead <= %.1f: %s\n", GOAL_OVERHEAD,
           ratio <= GOAL_OVERHEAD ? "met" : "NOT met");
    bool complete = baseline.acked == RECORD_COUNT && clients.acked == RECORD_COUNT &&
                    clients.consumed_distinct == RECORD_COUNT;
    if (!complete) {
        printf("# incomplete: expected %" G_GINT64_FORMAT " records acked in both runs and"
               " consumed in the second\n",
               (int64_t)RECORD_COUNT);
    }
    return complete ? 0 : 1;
}
