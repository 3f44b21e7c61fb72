/*
** tests/core/cluster_fixture.h: the one way the suites of tests/core and the
** benchmarks of tests/bench build a whole cluster.
**
** cf_init fills every config with Kafka's defaults (core/config.c) and makes
** one change of its own: auto.leader.rebalance.enable is off, so no
** preferred-leader move lands in the middle of a test that did not ask for
** one. The caller adds topics, a producer and consumers, adjusts any setting,
** then cf_start makes a fresh run folder and a world (1 ms latency, no jitter,
** 2 ms fsync, 500 MiB/s unless world_config says otherwise), builds the model
** with core/cluster.c and starts it. Crash and restart go through the world
** and then the cluster's hooks, as the driver does. In tests the controller,
** producer and consumer checks (ks_cluster_check) run after every event.
**
** The observer, unless the caller sets its own before cf_build, records what
** the suites look at: every event (kind, place, detail), every record outcome,
** the consumer group's rebalances, and per offset how often it was acknowledged
** and processed.
**
** Header-only (static inline) and free of CUnit, so that the benchmarks use it
** too; group_fixture.h and repl_harness.h add the suites' own helpers.
*/
#pragma once

#include "../../core/base.h"
#include "../../core/cluster.h"
#include "../../core/config.h"
#include "../../sim/narrate.h"
#include "../../sim/world.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CF_MS             KS_NS_PER_MS
#define CF_S              KS_NS_PER_S
#define CF_TOPICS_MAX     2
#define CF_CONSUMERS_MAX  4
#define CF_APPENDS_MAX    256
#define CF_REBALANCES_MAX 64
#define CF_PARTITIONS_MAX 8 /* of topic 0, for the acked / processed maps */
#define CF_OFFSETS_MAX    20000

struct cf_event {
    ks_time_ns at_ns;
    enum ks_cluster_event_kind kind;
    int32_t broker;
    int32_t topic_index;
    int32_t partition;
    enum ks_event_reason reason;
    int64_t leo_old, leo_new, offset_old; /* offsets and counts, as the event gives them */
    int64_t record_count, batch_count, byte_count;
};

struct cf_rebalance {
    ks_time_ns at_ns;
    int32_t generation; /* parsed from the detail; -1 if absent */
    char detail[512];
};

/* One direct append at a leader (repl_harness.h h_append). */
struct cf_append {
    bool done;
    int16_t error;
    int64_t base_offset;
    ks_time_ns done_ns;
    ks_world *world;
};

struct cluster_fixture {
    /* The world, made by cf_build. */
    struct ks_world_config world_config;
    struct {
        char *run_dir;   /* owned: a fresh folder under $TMPDIR */
        ks_world *world; /* owned */
    } env;
    bool check_every_event; /* ks_cluster_check after every event (cf_init: true) */
    /* The configs: Kafka's defaults from cf_init, adjusted before cf_build. */
    struct ks_cluster_config cluster_config;
    struct ks_topic_config *topics; /* CF_TOPICS_MAX, heap; each owns its assignment */
    int32_t topic_count;
    struct ks_producer_config producer; /* used when producer_count is 1 */
    int32_t producer_count;
    struct ks_consumer_config consumers[CF_CONSUMERS_MAX];
    int32_t consumer_count;
    struct ks_cluster_spec spec;
    struct ks_cluster_observer observer; /* the recorder below unless the caller's */
    struct ks_cluster *cluster;
    /* What the recorder saw. */
    bool verbose;     /* print every event (KS_TEST_VERBOSE set) */
    GArray *events;   /* struct cf_event */
    GArray *outcomes; /* struct ks_record_outcome, key dropped */
    struct cf_rebalance rebalances[CF_REBALANCES_MAX];
    int32_t rebalance_count;
    int32_t offset_resets;
    int32_t poll_interval_exits; /* members that left for max.poll.interval.ms */
    int32_t unclean_elections;
    int64_t acked_count;
    bool (*acked)[CF_OFFSETS_MAX];        /* [CF_PARTITIONS_MAX], heap */
    int32_t (*processed)[CF_OFFSETS_MAX]; /* [CF_PARTITIONS_MAX]: times each offset was processed */
    int64_t consumed_count;
    int64_t consumed_by[CF_CONSUMERS_MAX];
    bool bad_identity; /* a processed record without producer 0's identity */
    /* Direct appends at a leader (repl_harness.h). */
    struct cf_append appends[CF_APPENDS_MAX];
    int32_t append_count;
};

/* ---- the recorder ---------------------------------------------------------------- */

static inline void cf_on_event(void *context, const struct ks_cluster_event *event)
{
    struct cluster_fixture *cf = context;
    struct cf_event copy;
    memset(&copy, 0, sizeof copy);
    copy.at_ns = event->at_ns;
    copy.kind = event->kind;
    copy.broker = event->broker;
    copy.topic_index = event->topic_index;
    copy.partition = event->partition;
    copy.reason = event->reason;
    copy.leo_old = event->leo_old;
    copy.leo_new = event->leo_new;
    copy.offset_old = event->offset_old;
    copy.record_count = event->record_count;
    copy.batch_count = event->batch_count;
    copy.byte_count = event->byte_count;
    g_array_append_val(cf->events, copy);
    bool rebalance = event->kind == KS_EV_REBALANCE && cf->rebalance_count < CF_REBALANCES_MAX;
    if (cf->verbose || rebalance) {
        /* The timeline line, written by sim/narrate.c from the typed facts:
         * a rebalance's lists each member's assignment ("c1-1=orders-0,orders-1"). */
        g_autoptr(GString) detail = g_string_new(NULL);
        g_autoptr(GString) explain = g_string_new(NULL);
        ks_narrate_event(&cf->spec, event, detail, explain);
        if (cf->verbose) {
            fprintf(stderr, "  %10.3f ms %-16s %s\n", (double)event->at_ns / 1e6,
                    ks_cluster_event_kind_name(event->kind), detail->str);
        }
        if (rebalance) {
            struct cf_rebalance *r = &cf->rebalances[cf->rebalance_count++];
            r->at_ns = event->at_ns;
            r->generation = event->generation;
            snprintf(r->detail, sizeof(r->detail), "%s", detail->str);
        }
    }
    if (event->kind == KS_EV_INFO && event->reason == KS_REASON_POLL_INTERVAL_EXCEEDED) {
        cf->poll_interval_exits++;
    } else if (event->kind == KS_EV_OFFSET_RESET) {
        cf->offset_resets++;
    } else if (event->kind == KS_EV_UNCLEAN_ELECTION) {
        cf->unclean_elections++;
    }
}

static inline void cf_on_record(void *context, const struct ks_record_outcome *outcome)
{
    struct cluster_fixture *cf = context;
    struct ks_record_outcome copy = *outcome;
    copy.key = NULL;
    g_array_append_val(cf->outcomes, copy);
    if (outcome->outcome == KS_OUTCOME_ACKED) {
        cf->acked_count++;
        if (outcome->topic_index == 0 && outcome->partition >= 0 &&
            outcome->partition < CF_PARTITIONS_MAX && outcome->offset >= 0 &&
            outcome->offset < CF_OFFSETS_MAX) {
            cf->acked[outcome->partition][outcome->offset] = true;
        }
    }
}

static inline void cf_on_consumed(void *context, const struct ks_consumed_record *consumed)
{
    struct cluster_fixture *cf = context;
    cf->consumed_count++;
    if (consumed->consumer_index >= 0 && consumed->consumer_index < CF_CONSUMERS_MAX) {
        cf->consumed_by[consumed->consumer_index]++;
    }
    if (consumed->producer_index != 0 || consumed->seq < 0) {
        cf->bad_identity = true;
    }
    if (consumed->topic_index == 0 && consumed->partition >= 0 &&
        consumed->partition < CF_PARTITIONS_MAX && consumed->offset >= 0 &&
        consumed->offset < CF_OFFSETS_MAX) {
        cf->processed[consumed->partition][consumed->offset]++;
    }
}

/* ---- building ------------------------------------------------------------------------ */

/* Kafka's defaults for broker_count brokers, no topics, no clients. */
static inline void cf_init(struct cluster_fixture *cf, int32_t broker_count)
{
    memset(cf, 0, sizeof *cf);
    cf->world_config = (struct ks_world_config){
        .seed = 1,
        .network_latency_ns = 1 * CF_MS,
        .network_jitter_ns = 0,
        .disk_fsync_latency_ns = 2 * CF_MS,
        .disk_bandwidth_bytes_per_s = 500ull * 1024 * 1024,
    };
    cf->check_every_event = true;
    ks_cluster_config_defaults(&cf->cluster_config);
    cf->cluster_config.broker_count = broker_count;
    cf->cluster_config.auto_leader_rebalance_enable = false;
    /* Unit tests assert exact times: brokers' periodic tasks in step and
     * clients starting exactly at `start`, as with network_jitter_ns = 0
     * above (scenarios get the timing noise of core/config.c's defaults). */
    cf->cluster_config.task_phase = KS_TASK_PHASE_ALIGNED;
    cf->topics = calloc(CF_TOPICS_MAX, sizeof(struct ks_topic_config));
    cf->acked = calloc(CF_PARTITIONS_MAX, sizeof *cf->acked);
    cf->processed = calloc(CF_PARTITIONS_MAX, sizeof *cf->processed);
    ks_assert(cf->topics != NULL && cf->acked != NULL && cf->processed != NULL);
    cf->events = g_array_new(FALSE, TRUE, sizeof(struct cf_event));
    cf->outcomes = g_array_new(FALSE, TRUE, sizeof(struct ks_record_outcome));
    cf->observer = (struct ks_cluster_observer){
        .context = cf,
        .on_event = cf_on_event,
        .on_record = cf_on_record,
        .on_consumed = cf_on_consumed,
    };
    cf->verbose = getenv("KS_TEST_VERBOSE") != NULL;
}

/* Adds a topic with Kafka's log defaults; replicas (may be NULL: Kafka's
 * placement) lists each partition's replicas leader first: replicas[p * rf + j]. */
static inline struct ks_topic_config *cf_topic(struct cluster_fixture *cf, const char *name,
                                               int32_t partitions, int32_t rf, int32_t min_isr,
                                               const int32_t *replicas)
{
    ks_assert(cf->topic_count < CF_TOPICS_MAX);
    struct ks_topic_config *t = &cf->topics[cf->topic_count++];
    ks_topic_config_defaults(t);
    g_strlcpy(t->name, name, sizeof t->name);
    t->partition_count = partitions;
    t->replication_factor = rf;
    t->min_insync_replicas = min_isr;
    if (replicas != NULL) {
        ks_topic_config_assignment_new(t);
        for (int32_t p = 0; p < partitions; p++) {
            for (int32_t j = 0; j < rf; j++) {
                t->assignment[p][j] = replicas[p * rf + j];
            }
        }
    }
    return t;
}

/* The producer (at most one) with Kafka's defaults, writing to topic_index. */
static inline struct ks_producer_config *cf_producer(struct cluster_fixture *cf, const char *name,
                                                     int32_t topic_index)
{
    ks_assert(cf->producer_count == 0);
    ks_producer_config_defaults(&cf->producer);
    g_strlcpy(cf->producer.name, name, sizeof cf->producer.name);
    cf->producer.topic_index = topic_index;
    cf->producer.start_jitter_ns = 0; /* exact start (see cf_init) */
    cf->producer_count = 1;
    return &cf->producer;
}

/* A consumer with Kafka's defaults in group_id, subscribed to topic_index. */
static inline struct ks_consumer_config *cf_consumer(struct cluster_fixture *cf, const char *name,
                                                     const char *group_id, int32_t topic_index)
{
    ks_assert(cf->consumer_count < CF_CONSUMERS_MAX);
    struct ks_consumer_config *c = &cf->consumers[cf->consumer_count++];
    ks_consumer_config_defaults(c);
    g_strlcpy(c->name, name, sizeof c->name);
    g_strlcpy(c->group_id, group_id, sizeof c->group_id);
    c->topic_index = topic_index;
    c->start_jitter_ns = 0; /* exact start (see cf_init) */
    return c;
}

static inline void cf_after_event(ks_world *world, void *context)
{
    (void)world;
    struct cluster_fixture *cf = context;
    if (cf->cluster != NULL) {
        ks_cluster_check(cf->cluster);
    }
}

/* Makes the run folder and the world (seed), and builds the model, not yet
 * started. Asserts on a host failure (no temporary folder). */
static inline void cf_build(struct cluster_fixture *cf, uint64_t seed)
{
    /* As the scenario loader does: topics inherit the cluster's setting. */
    for (int32_t t = 0; t < cf->topic_count; t++) {
        if (cf->cluster_config.unclean_leader_election_enable) {
            cf->topics[t].unclean_leader_election_enable = true;
        }
    }
    cf->spec = (struct ks_cluster_spec){
        .cluster = &cf->cluster_config,
        .topics = cf->topics,
        .topic_count = cf->topic_count,
        .producers = cf->producer_count > 0 ? &cf->producer : NULL,
        .producer_count = cf->producer_count,
        .consumers = cf->consumer_count > 0 ? cf->consumers : NULL,
        .consumer_count = cf->consumer_count,
    };
    GError *error = NULL;
    cf->env.run_dir = g_dir_make_tmp("ksim-test-XXXXXX", &error);
    if (cf->env.run_dir == NULL) {
        fprintf(stderr, "cluster_fixture: %s\n", error->message);
    }
    ks_assert(cf->env.run_dir != NULL);
    cf->world_config.seed = seed;
    cf->world_config.run_dir = cf->env.run_dir;
    cf->world_config.node_count = ks_cluster_node_count(&cf->spec);
    cf->env.world = ks_world_new(&cf->world_config, &error);
    if (cf->env.world == NULL) {
        fprintf(stderr, "cluster_fixture: %s\n", error->message);
    }
    ks_assert(cf->env.world != NULL);
    if (cf->check_every_event) {
        ks_world_set_after_event(cf->env.world, cf_after_event, cf);
    }
    cf->cluster = ks_cluster_new(cf->env.world, &cf->spec, &cf->observer);
}

/* cf_build, then start brokers, controller and clients (topics created). */
static inline void cf_start(struct cluster_fixture *cf, uint64_t seed)
{
    cf_build(cf, seed);
    ks_cluster_start(cf->cluster);
}

/* NULL-safe on what was never built. */
static inline void cf_free(struct cluster_fixture *cf)
{
    ks_cluster_free(cf->cluster);
    cf->cluster = NULL;
    ks_world_free(cf->env.world);
    cf->env.world = NULL;
    if (cf->env.run_dir != NULL) {
        ks_host_remove_tree(cf->env.run_dir);
        g_free(cf->env.run_dir);
        cf->env.run_dir = NULL;
    }
    if (cf->events != NULL) {
        g_array_free(cf->events, TRUE);
    }
    if (cf->outcomes != NULL) {
        g_array_free(cf->outcomes, TRUE);
    }
    for (int32_t t = 0; cf->topics != NULL && t < cf->topic_count; t++) {
        ks_topic_config_deinit(&cf->topics[t]);
    }
    free(cf->topics);
    free(cf->acked);
    free(cf->processed);
    cf->events = NULL;
    cf->outcomes = NULL;
    cf->topics = NULL;
    cf->topic_count = 0;
    cf->acked = NULL;
    cf->processed = NULL;
}

/* ---- running ----------------------------------------------------------------------- */

static inline ks_time_ns cf_now(struct cluster_fixture *cf)
{
    return ks_world_now_ns(cf->env.world);
}

static inline void cf_run_until(struct cluster_fixture *cf, ks_time_ns at_ns)
{
    ks_world_run_until(cf->env.world, at_ns);
}

static inline void cf_run_for(struct cluster_fixture *cf, ks_time_ns delta_ns)
{
    ks_world_run_until(cf->env.world, cf_now(cf) + delta_ns);
}

/* power: a power failure (unsynced writes lost), else a process crash. */
static inline void cf_crash(struct cluster_fixture *cf, ks_node_id node, bool power)
{
    ks_world_node_crash(cf->env.world, node, power);
    ks_cluster_on_node_crashed(cf->cluster, node);
}

static inline void cf_restart(struct cluster_fixture *cf, ks_node_id node)
{
    ks_world_node_restart(cf->env.world, node);
    ks_cluster_on_node_restarted(cf->cluster, node);
}

/* Stops the producer and runs until the cluster has converged, at most
 * limit_ns more. Returns true if it converged. */
static inline bool cf_drain(struct cluster_fixture *cf, ks_time_ns limit_ns)
{
    ks_cluster_stop_producers(cf->cluster);
    ks_time_ns end = cf_now(cf) + limit_ns;
    while (cf_now(cf) < end) {
        cf_run_for(cf, 100 * CF_MS);
        if (ks_cluster_converged(cf->cluster)) {
            return true;
        }
    }
    return false;
}

/* ---- what was recorded ------------------------------------------------------------------ */

static inline int32_t cf_count(const struct cluster_fixture *cf, enum ks_cluster_event_kind kind)
{
    int32_t count = 0;
    for (guint i = 0; i < cf->events->len; i++) {
        if (g_array_index(cf->events, struct cf_event, i).kind == kind) {
            count++;
        }
    }
    return count;
}

/* The first event of a kind at or after from_ns, or NULL. */
static inline const struct cf_event *cf_find(const struct cluster_fixture *cf,
                                             enum ks_cluster_event_kind kind, ks_time_ns from_ns)
{
    for (guint i = 0; i < cf->events->len; i++) {
        const struct cf_event *e = &g_array_index(cf->events, struct cf_event, i);
        if (e->kind == kind && e->at_ns >= from_ns) {
            return e;
        }
    }
    return NULL;
}
