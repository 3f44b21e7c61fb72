/*
** tests/core/group_fixture.h: a small whole cluster (brokers, controller, one
** producer, consumers) on a fresh world, for the group and consumer suites.
** Header-only (static functions) so that each suite gets its own copy.
**
** The observer keeps every rebalance event (time, generation, timeline line), every
** acknowledged record's offset, and how many times each offset of each
** partition was processed by the group.
*/
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/cluster.h"
#include "../../core/consumer.h"
#include "../../sim/narrate.h"
#include "../testlib.h"

#define GF_MS 1000000ULL
#define GF_S 1000000000ULL
#define GF_PARTITIONS_MAX 8
#define GF_OFFSETS_MAX 20000
#define GF_CONSUMERS_MAX 4
#define GF_REBALANCES_MAX 64

struct gf_rebalance {
    ks_time_ns at_ns;
    int32_t generation;
    char detail[512];
};

struct gf_fixture {
    struct ks_test_env env;
    struct ks_cluster_config cluster_config;
    struct ks_topic_config *topic;
    struct ks_producer_config producer;
    struct ks_consumer_config consumers[GF_CONSUMERS_MAX];
    struct ks_cluster_spec spec;
    struct ks_cluster_observer observer;
    struct ks_cluster *cluster;
    /* what was observed */
    struct gf_rebalance rebalances[GF_REBALANCES_MAX];
    int32_t rebalance_count;
    int32_t offset_resets;
    int32_t poll_interval_exits;   /* members that left for max.poll.interval.ms */
    int32_t unclean_elections;
    int64_t acked_count;
    int32_t processed[GF_PARTITIONS_MAX][GF_OFFSETS_MAX];   /* times each offset was processed */
    bool acked[GF_PARTITIONS_MAX][GF_OFFSETS_MAX];
    int64_t consumed_count;
    int64_t consumed_by[GF_CONSUMERS_MAX];
    bool bad_identity;                                       /* a record without its producer */
};

static inline void gf_on_event(void *context, const struct ks_cluster_event *event)
{
    struct gf_fixture *f = context;
    if (event->kind == KS_EV_REBALANCE && f->rebalance_count < GF_REBALANCES_MAX) {
        struct gf_rebalance *r = &f->rebalances[f->rebalance_count++];
        r->at_ns = event->at_ns;
        r->generation = event->generation;
        /* The timeline line lists each member's assignment ("c1-1=orders-0,orders-1"). */
        g_autoptr(GString) detail = g_string_new(NULL);
        g_autoptr(GString) explain = g_string_new(NULL);
        ks_narrate_event(&f->spec, event, detail, explain);
        snprintf(r->detail, sizeof(r->detail), "%s", detail->str);
    } else if (event->kind == KS_EV_INFO && event->reason == KS_REASON_POLL_INTERVAL_EXCEEDED) {
        f->poll_interval_exits++;
    } else if (event->kind == KS_EV_OFFSET_RESET) {
        f->offset_resets++;
    } else if (event->kind == KS_EV_UNCLEAN_ELECTION) {
        f->unclean_elections++;
    }
}

static inline void gf_on_record(void *context, const struct ks_record_outcome *outcome)
{
    struct gf_fixture *f = context;
    if (outcome->outcome == KS_OUTCOME_ACKED) {
        f->acked_count++;
        if (outcome->partition >= 0 && outcome->partition < GF_PARTITIONS_MAX &&
            outcome->offset >= 0 && outcome->offset < GF_OFFSETS_MAX) {
            f->acked[outcome->partition][outcome->offset] = true;
        }
    }
}

static inline void gf_on_consumed(void *context, const struct ks_consumed_record *consumed)
{
    struct gf_fixture *f = context;
    f->consumed_count++;
    if (consumed->consumer_index >= 0 && consumed->consumer_index < GF_CONSUMERS_MAX) {
        f->consumed_by[consumed->consumer_index]++;
    }
    if (consumed->producer_index != 0 || consumed->seq < 0) {
        f->bad_identity = true;
    }
    if (consumed->partition >= 0 && consumed->partition < GF_PARTITIONS_MAX &&
        consumed->offset >= 0 && consumed->offset < GF_OFFSETS_MAX) {
        f->processed[consumed->partition][consumed->offset]++;
    }
}

static inline void gf_default_log(struct ks_log_config *log)
{
    log->segment_bytes = 1073741824;
    log->segment_ns = (int64_t)7 * 24 * 3600 * (int64_t)GF_S;
    log->index_interval_bytes = 4096;
    log->segment_index_bytes = 10485760;
    log->flush_messages = INT64_MAX;
    log->flush_ns = KS_INT64_UNSET;
    log->retention_ns = (int64_t)7 * 24 * 3600 * (int64_t)GF_S;
    log->retention_bytes = -1;
    log->cleanup_delete = true;
    log->delete_retention_ns = (int64_t)24 * 3600 * (int64_t)GF_S;
    log->min_cleanable_dirty_ratio_permille = 500;
    log->max_message_bytes = 1048588;
}

static inline void gf_default_consumer(struct ks_consumer_config *c, const char *name)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "%s", name);
    snprintf(c->group_id, sizeof(c->group_id), "g1");
    c->topic_index = 0;
    c->commit = KS_COMMIT_AFTER_PROCESS;
    c->auto_commit_interval_ns = 5000 * (int64_t)GF_MS;
    c->processing_ns = 1 * (int64_t)GF_MS;
    c->auto_offset_reset = KS_RESET_EARLIEST;
    c->session_timeout_ns = 6000 * (int64_t)GF_MS;
    c->heartbeat_interval_ns = 1000 * (int64_t)GF_MS;
    c->max_poll_interval_ns = 300000 * (int64_t)GF_MS;
    c->max_poll_records = 500;
    c->fetch_min_bytes = 1;
    c->fetch_max_wait_ns = 500 * (int64_t)GF_MS;
    c->max_partition_fetch_bytes = 1048576;
    c->assignor = KS_ASSIGNOR_RANGE;
}

/* 3 brokers, topic orders (partitions, RF 3, min ISR 2), producer p1 at
 * `rate` records/s for `count` records, consumer_count consumers c1.. in g1. */
static inline void gf_init(struct gf_fixture *f, uint64_t seed, int32_t partition_count, uint64_t rate,
                    int64_t count, int32_t consumer_count)
{
    memset(f, 0, sizeof(*f));
    struct ks_cluster_config *cc = &f->cluster_config;
    cc->broker_count = 3;
    cc->replica_lag_ns_max = 30000 * (int64_t)GF_MS;
    cc->replica_fetch_wait_ns_max = 500 * (int64_t)GF_MS;
    cc->replica_fetch_min_bytes = 1;
    cc->replica_fetch_max_bytes = 1048576;
    cc->replica_fetch_response_max_bytes = 10485760;
    cc->replica_fetch_backoff_ns = 1000 * (int64_t)GF_MS;
    cc->replica_hw_checkpoint_interval_ns = 5000 * (int64_t)GF_MS;
    cc->broker_session_timeout_ns = 9000 * (int64_t)GF_MS;
    cc->broker_heartbeat_interval_ns = 2000 * (int64_t)GF_MS;
    cc->unclean_leader_election_enable = false;
    cc->auto_leader_rebalance_enable = false;
    cc->leader_imbalance_check_interval_ns = 300 * (int64_t)GF_S;
    cc->recovery_point_checkpoint_interval_ns = 60 * (int64_t)GF_S;
    cc->retention_check_interval_ns = 300 * (int64_t)GF_S;
    cc->offsets_topic_partition_count = 5;
    cc->offsets_topic_replication_factor = 3;
    cc->group_initial_rebalance_delay_ns = 1000 * (int64_t)GF_MS;
    cc->truncation = KS_TRUNCATION_LEADER_EPOCH;
    cc->hw_requires_min_isr = true;

    f->topic = calloc(1, sizeof(*f->topic));
    snprintf(f->topic->name, sizeof(f->topic->name), "orders");
    f->topic->partition_count = partition_count;
    f->topic->replication_factor = 3;
    f->topic->min_insync_replicas = 2;
    gf_default_log(&f->topic->log);

    struct ks_producer_config *p = &f->producer;
    snprintf(p->name, sizeof(p->name), "p1");
    p->topic_index = 0;
    p->acks = KS_ACKS_ALL;
    p->enable_idempotence = true;
    p->retries = INT32_MAX;
    p->max_in_flight = 5;
    p->linger_ns = 5 * (int64_t)GF_MS;
    p->batch_size_bytes = 16384;
    p->buffer_memory_bytes = 33554432;
    p->delivery_timeout_ns = 120000 * (int64_t)GF_MS;
    p->request_timeout_ns = 30000 * (int64_t)GF_MS;
    p->retry_backoff_ns = 100 * (int64_t)GF_MS;
    p->retry_backoff_ns_max = 1000 * (int64_t)GF_MS;
    p->metadata_max_age_ns = 300000 * (int64_t)GF_MS;
    p->max_block_ns = 60000 * (int64_t)GF_MS;
    p->rate_per_s = rate;
    p->count = count;
    p->key_count = 100;
    p->value_bytes = 50;

    for (int32_t i = 0; i < consumer_count; i++) {
        char name[16];
        snprintf(name, sizeof(name), "c%d", i + 1);
        gf_default_consumer(&f->consumers[i], name);
    }
    f->spec.cluster = cc;
    f->spec.topics = f->topic;
    f->spec.topic_count = 1;
    f->spec.producers = &f->producer;
    f->spec.producer_count = 1;
    f->spec.consumers = f->consumers;
    f->spec.consumer_count = consumer_count;
    f->observer.context = f;
    f->observer.on_event = gf_on_event;
    f->observer.on_record = gf_on_record;
    f->observer.on_consumed = gf_on_consumed;
    ks_test_env_init(&f->env, seed, ks_cluster_node_count(&f->spec));
}

/* After adjusting the configs: build and start the cluster. */
static inline void gf_start(struct gf_fixture *f)
{
    f->cluster = ks_cluster_new(f->env.world, &f->spec, &f->observer);
    ks_cluster_start(f->cluster);
}

static inline void gf_run_until(struct gf_fixture *f, ks_time_ns until_ns)
{
    ks_world_run_until(f->env.world, until_ns);
}

static inline void gf_crash(struct gf_fixture *f, ks_node_id node)
{
    ks_world_node_crash(f->env.world, node, false);
    ks_cluster_on_node_crashed(f->cluster, node);
}

static inline void gf_restart(struct gf_fixture *f, ks_node_id node)
{
    ks_world_node_restart(f->env.world, node);
    ks_cluster_on_node_restarted(f->cluster, node);
}

/* Runs until the cluster has converged (after stopping the producer), at
 * most `limit_ns` more. Returns true if it converged. */
static inline bool gf_drain(struct gf_fixture *f, ks_time_ns limit_ns)
{
    ks_cluster_stop_producers(f->cluster);
    ks_time_ns end = ks_world_now_ns(f->env.world) + limit_ns;
    while (ks_world_now_ns(f->env.world) < end) {
        gf_run_until(f, ks_world_now_ns(f->env.world) + 100 * GF_MS);
        if (ks_cluster_converged(f->cluster)) {
            return true;
        }
    }
    return false;
}

/* Acknowledged offsets never processed, and extra processings. */
static inline void gf_count(const struct gf_fixture *f, int64_t *lost_out, int64_t *duplicates_out)
{
    int64_t lost = 0;
    int64_t duplicates = 0;
    for (int32_t p = 0; p < GF_PARTITIONS_MAX; p++) {
        for (int32_t o = 0; o < GF_OFFSETS_MAX; o++) {
            if (f->acked[p][o] && f->processed[p][o] == 0) {
                lost++;
            }
            if (f->processed[p][o] > 1) {
                duplicates += f->processed[p][o] - 1;
            }
        }
    }
    *lost_out = lost;
    *duplicates_out = duplicates;
}

static inline void gf_deinit(struct gf_fixture *f)
{
    ks_cluster_free(f->cluster);
    ks_test_env_deinit(&f->env);
    free(f->topic);
}
