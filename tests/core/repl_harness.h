/*
** tests/core/repl_harness.h: a small cluster fixture shared by the
** replication, controller and producer-state suites: Kafka's default
** settings, one world, brokers and the controller built by core/cluster.c
** without clients, direct appends at a leader (ks_broker_append_for_test),
** crash/restart through the world and the cluster hooks, and a copy of every
** event the cluster reports. Everything is static inline so that each suite
** uses only what it needs.
*/
#pragma once

#include "../../core/base.h"
#include "../../core/batch.h"
#include "../../core/broker.h"
#include "../../core/cluster.h"
#include "../../core/controller.h"
#include "../../core/log.h"
#include "../../core/proto.h"
#include "../../sim/narrate.h"
#include "../testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H_MS KS_NS_PER_MS
#define H_S KS_NS_PER_S
#define H_APPENDS_MAX 256
#define H_TOPICS_MAX 2

struct h_event {
    ks_time_ns at_ns;
    enum ks_cluster_event_kind kind;
    int32_t broker;
    int32_t topic_index;
    int32_t partition;
    enum ks_event_reason reason;
};

struct h_append {
    bool done;
    int16_t error;
    int64_t base_offset;
    ks_time_ns done_ns;
    ks_world *world;
};

struct harness {
    struct ks_test_env env;
    struct ks_cluster_config cluster_config;
    struct ks_topic_config *topics; /* H_TOPICS_MAX, heap: the struct is large */
    int32_t topic_count;
    struct ks_cluster_spec spec;
    struct ks_cluster_observer observer;
    struct ks_cluster *cluster;
    GArray *events; /* struct h_event */
    struct h_append appends[H_APPENDS_MAX];
    int32_t append_count;
    bool verbose;
    struct ks_producer_config producer; /* used when producer_count is 1 */
    int32_t producer_count;
    GArray *outcomes; /* struct ks_record_outcome (key dropped) */
};

static inline void h_on_event(void *context, const struct ks_cluster_event *event)
{
    struct harness *h = context;
    struct h_event copy;
    memset(&copy, 0, sizeof copy);
    copy.at_ns = event->at_ns;
    copy.kind = event->kind;
    copy.broker = event->broker;
    copy.topic_index = event->topic_index;
    copy.partition = event->partition;
    copy.reason = event->reason;
    g_array_append_val(h->events, copy);
    if (h->verbose) {
        g_autoptr(GString) detail = g_string_new(NULL);
        g_autoptr(GString) explain = g_string_new(NULL);
        ks_narrate_event(&h->spec, event, detail, explain);
        fprintf(stderr, "  %10.3f ms %-16s %s\n", (double)event->at_ns / 1e6,
                ks_cluster_event_kind_name(event->kind), detail->str);
    }
}

static inline void h_on_record(void *context, const struct ks_record_outcome *outcome)
{
    struct harness *h = context;
    struct ks_record_outcome copy = *outcome;
    copy.key = NULL;
    g_array_append_val(h->outcomes, copy);
}

/* Kafka's defaults (kafka-reference 4), in internal units. */
static inline void h_defaults(struct harness *h, int32_t broker_count)
{
    struct ks_cluster_config *c = &h->cluster_config;
    memset(c, 0, sizeof *c);
    c->broker_count = broker_count;
    c->replica_lag_ns_max = 30000 * (int64_t)H_MS;
    c->replica_fetch_wait_ns_max = 500 * (int64_t)H_MS;
    c->replica_fetch_min_bytes = 1;
    c->replica_fetch_max_bytes = 1048576;
    c->replica_fetch_response_max_bytes = 10485760;
    c->replica_fetch_backoff_ns = 1000 * (int64_t)H_MS;
    c->replica_hw_checkpoint_interval_ns = 5000 * (int64_t)H_MS;
    c->broker_session_timeout_ns = 9000 * (int64_t)H_MS;
    c->broker_heartbeat_interval_ns = 2000 * (int64_t)H_MS;
    c->unclean_leader_election_enable = false;
    c->auto_leader_rebalance_enable = false;
    c->leader_imbalance_check_interval_ns = 300 * (int64_t)H_S;
    c->recovery_point_checkpoint_interval_ns = 60000 * (int64_t)H_MS;
    c->retention_check_interval_ns = 300000 * (int64_t)H_MS;
    c->offsets_topic_partition_count = 50;
    c->offsets_topic_replication_factor = 3;
    c->group_initial_rebalance_delay_ns = 3000 * (int64_t)H_MS;
    c->truncation = KS_TRUNCATION_LEADER_EPOCH;
    c->hw_requires_min_isr = true;
    h->topics = calloc(H_TOPICS_MAX, sizeof(struct ks_topic_config));
    CU_ASSERT_PTR_NOT_NULL_FATAL(h->topics);
    h->topic_count = 0;
    h->events = g_array_new(FALSE, TRUE, sizeof(struct h_event));
    h->outcomes = g_array_new(FALSE, TRUE, sizeof(struct ks_record_outcome));
    h->append_count = 0;
    h->producer_count = 0;
    h->verbose = getenv("KS_TEST_VERBOSE") != NULL;
}

/* Adds a topic with an explicit assignment "leader first" per partition:
 * replicas[p * rf + j]. */
static inline struct ks_topic_config *h_topic(struct harness *h, const char *name,
                                              int32_t partitions, int32_t rf, int32_t min_isr,
                                              const int32_t *replicas)
{
    CU_ASSERT_FATAL(h->topic_count < H_TOPICS_MAX);
    struct ks_topic_config *t = &h->topics[h->topic_count++];
    memset(t, 0, sizeof *t);
    g_strlcpy(t->name, name, sizeof t->name);
    t->partition_count = partitions;
    t->replication_factor = rf;
    t->min_insync_replicas = min_isr;
    t->log.segment_bytes = 1073741824;
    t->log.segment_ns = INT64_C(7) * 24 * 3600 * (int64_t)H_S;
    t->log.index_interval_bytes = 4096;
    t->log.segment_index_bytes = 10485760;
    t->log.flush_messages = KS_INT64_UNSET;
    t->log.flush_ns = KS_INT64_UNSET;
    t->log.retention_ns = INT64_C(7) * 24 * 3600 * (int64_t)H_S;
    t->log.retention_bytes = -1;
    t->log.cleanup_delete = true;
    t->log.delete_retention_ns = 86400 * (int64_t)H_S;
    t->log.min_cleanable_dirty_ratio_permille = 500;
    t->log.max_message_bytes = 1048588;
    if (replicas != NULL) {
        t->has_assignment = true;
        for (int32_t p = 0; p < partitions; p++) {
            for (int32_t j = 0; j < rf; j++) {
                t->assignment[p][j] = replicas[p * rf + j];
            }
        }
    }
    return t;
}

static inline void h_start(struct harness *h, uint64_t seed)
{
    /* As the scenario loader does: topics inherit the cluster's setting. */
    for (int32_t t = 0; t < h->topic_count; t++) {
        if (h->cluster_config.unclean_leader_election_enable) {
            h->topics[t].unclean_leader_election_enable = true;
        }
    }
    h->spec.cluster = &h->cluster_config;
    h->spec.topics = h->topics;
    h->spec.topic_count = h->topic_count;
    h->spec.producers = h->producer_count > 0 ? &h->producer : NULL;
    h->spec.producer_count = h->producer_count;
    h->spec.consumers = NULL;
    h->spec.consumer_count = 0;
    h->observer.context = h;
    h->observer.on_event = h_on_event;
    h->observer.on_record = h_on_record;
    ks_test_env_init(&h->env, seed, ks_cluster_node_count(&h->spec));
    h->cluster = ks_cluster_new(h->env.world, &h->spec, &h->observer);
    ks_cluster_start(h->cluster);
}

static inline void h_free(struct harness *h)
{
    ks_cluster_free(h->cluster);
    ks_test_env_deinit(&h->env);
    g_array_free(h->events, TRUE);
    g_array_free(h->outcomes, TRUE);
    free(h->topics);
}

static inline ks_time_ns h_now(struct harness *h)
{
    return ks_world_now_ns(h->env.world);
}

static inline void h_run_until(struct harness *h, ks_time_ns at_ns)
{
    ks_world_run_until(h->env.world, at_ns);
}

static inline void h_run_for(struct harness *h, ks_time_ns delta_ns)
{
    ks_world_run_until(h->env.world, h_now(h) + delta_ns);
}

static inline void h_append_done(void *context, int16_t error, int64_t base_offset)
{
    struct h_append *a = context;
    a->done = true;
    a->error = error;
    a->base_offset = base_offset;
    a->done_ns = ks_world_now_ns(a->world);
}

/* Builds one batch of `count` records with values "<tag>-<i>". */
static inline GByteArray *h_batch(const char *tag, int32_t count, int64_t producer_id,
                                  int16_t producer_epoch, int32_t base_sequence)
{
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, KS_EPOCH_BASE_MS, producer_id, producer_epoch,
                          base_sequence);
    for (int32_t i = 0; i < count; i++) {
        char value[64];
        int length = snprintf(value, sizeof value, "%s-%d", tag, i);
        ks_batch_builder_add(&builder, KS_EPOCH_BASE_MS, NULL, -1, value, length, NULL, 0);
    }
    GByteArray *bytes = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    return bytes;
}

/* Appends a batch at broker `broker_id` as leader (as a ProduceRequest would). */
static inline struct h_append *h_append_batch(struct harness *h, int32_t broker_id,
                                              int32_t topic_index, int32_t partition,
                                              enum ks_acks acks, GByteArray *batch)
{
    CU_ASSERT_FATAL(h->append_count < H_APPENDS_MAX);
    struct h_append *a = &h->appends[h->append_count++];
    memset(a, 0, sizeof *a);
    a->world = h->env.world;
    a->error = -100;
    struct ks_broker *broker = ks_cluster_broker(h->cluster, broker_id);
    ks_broker_append_for_test(broker, topic_index, partition, acks, batch->data, batch->len,
                              h_append_done, a);
    g_byte_array_unref(batch);
    return a;
}

static inline struct h_append *h_append(struct harness *h, int32_t broker_id, int32_t topic_index,
                                        int32_t partition, enum ks_acks acks, const char *tag)
{
    return h_append_batch(h, broker_id, topic_index, partition, acks, h_batch(tag, 1, -1, -1, -1));
}

static inline void h_crash(struct harness *h, int32_t node, bool power)
{
    ks_world_node_crash(h->env.world, (ks_node_id)node, power);
    ks_cluster_on_node_crashed(h->cluster, (ks_node_id)node);
}

static inline void h_restart(struct harness *h, int32_t node)
{
    ks_world_node_restart(h->env.world, (ks_node_id)node);
    ks_cluster_on_node_restarted(h->cluster, (ks_node_id)node);
}

static inline int32_t h_count(const struct harness *h, enum ks_cluster_event_kind kind)
{
    int32_t count = 0;
    for (guint i = 0; i < h->events->len; i++) {
        if (g_array_index(h->events, struct h_event, i).kind == kind) {
            count++;
        }
    }
    return count;
}

/* The first event of a kind at or after from_ns, or NULL. */
static inline const struct h_event *h_find(const struct harness *h,
                                           enum ks_cluster_event_kind kind, ks_time_ns from_ns)
{
    for (guint i = 0; i < h->events->len; i++) {
        const struct h_event *e = &g_array_index(h->events, struct h_event, i);
        if (e->kind == kind && e->at_ns >= from_ns) {
            return e;
        }
    }
    return NULL;
}

static inline struct ks_replica_state h_state(struct harness *h, int32_t broker_id,
                                              int32_t topic_index, int32_t partition)
{
    struct ks_replica_state state;
    memset(&state, 0, sizeof state);
    state.leo = -1;
    state.hw = -1;
    ks_cluster_replica_state(h->cluster, broker_id, topic_index, partition, &state);
    return state;
}

/* CRC of the batch holding `offset` in a broker's replica (identifies its
 * records independently of offsets and leader epochs); 0 if absent. */
static inline uint32_t h_batch_crc_at(struct harness *h, int32_t broker_id, int32_t topic_index,
                                      int32_t partition, int64_t offset)
{
    struct ks_log *log = ks_cluster_replica_log(h->cluster, broker_id, topic_index, partition);
    if (log == NULL || offset >= ks_log_leo(log)) {
        return 0;
    }
    GByteArray *out = g_byte_array_new();
    uint32_t crc = 0;
    if (ks_log_read(log, offset, ks_log_leo(log), 1, out) == KS_LOG_OK && out->len > 0) {
        struct ks_batch_view view;
        size_t bytes = 0;
        if (ks_batch_parse(out->data, out->len, &view, &bytes) == KS_BATCH_OK) {
            crc = view.crc;
        }
    }
    g_byte_array_unref(out);
    return crc;
}

/* True when two replicas hold the same batches at every offset below both LEOs. */
static inline bool h_logs_agree(struct harness *h, int32_t a, int32_t b, int32_t topic_index,
                                int32_t partition)
{
    struct ks_replica_state sa = h_state(h, a, topic_index, partition);
    struct ks_replica_state sb = h_state(h, b, topic_index, partition);
    int64_t end = sa.leo < sb.leo ? sa.leo : sb.leo;
    for (int64_t offset = 0; offset < end; offset++) {
        if (h_batch_crc_at(h, a, topic_index, partition, offset) !=
            h_batch_crc_at(h, b, topic_index, partition, offset)) {
            return false;
        }
    }
    return true;
}

/* One producer with Kafka's defaults (acks=all, idempotent) on topic 0. */
static inline struct ks_producer_config *h_add_producer(struct harness *h, uint64_t rate_per_s,
                                                        int64_t count)
{
    struct ks_producer_config *c = &h->producer;
    memset(c, 0, sizeof *c);
    g_strlcpy(c->name, "p1", sizeof c->name);
    c->topic_index = 0;
    c->acks = KS_ACKS_ALL;
    c->enable_idempotence = true;
    c->retries = INT32_MAX;
    c->max_in_flight = 5;
    c->linger_ns = 5 * (int64_t)H_MS;
    c->batch_size_bytes = 16384;
    c->buffer_memory_bytes = 33554432;
    c->delivery_timeout_ns = 120000 * (int64_t)H_MS;
    c->request_timeout_ns = 30000 * (int64_t)H_MS;
    c->retry_backoff_ns = 100 * (int64_t)H_MS;
    c->retry_backoff_ns_max = 1000 * (int64_t)H_MS;
    c->metadata_max_age_ns = 300000 * (int64_t)H_MS;
    c->max_block_ns = 60000 * (int64_t)H_MS;
    c->rate_per_s = rate_per_s;
    c->count = count;
    c->key_count = 100;
    c->value_bytes = 100;
    c->start_ns = 0;
    h->producer_count = 1;
    return c;
}

/* The identity header ("producer:seq") of the record at `offset` in a
 * broker's replica, copied into out; false if absent. */
static inline bool h_identity_at(struct harness *h, int32_t broker_id, int32_t topic_index,
                                 int32_t partition, int64_t offset, char *out, size_t out_bytes)
{
    struct ks_log *log = ks_cluster_replica_log(h->cluster, broker_id, topic_index, partition);
    if (log == NULL || offset >= ks_log_leo(log)) {
        return false;
    }
    GByteArray *bytes = g_byte_array_new();
    bool found = false;
    if (ks_log_read(log, offset, ks_log_leo(log), 1, bytes) == KS_LOG_OK) {
        struct ks_batch_view view;
        size_t batch_bytes = 0;
        if (ks_batch_parse(bytes->data, bytes->len, &view, &batch_bytes) == KS_BATCH_OK) {
            struct ks_record_iter iter;
            struct ks_record_view record;
            ks_record_iter_init(&iter, &view);
            while (!found && ks_record_iter_next(&iter, &record, NULL)) {
                if (record.offset != offset) {
                    continue;
                }
                for (int32_t i = 0; i < record.header_count; i++) {
                    const struct ks_header_view *header = &record.headers[i];
                    if (header->key_bytes == (int32_t)strlen(KS_IDENTITY_HEADER) &&
                        memcmp(header->key, KS_IDENTITY_HEADER, (size_t)header->key_bytes) == 0 &&
                        header->value_bytes >= 0 && (size_t)header->value_bytes < out_bytes) {
                        memcpy(out, header->value, (size_t)header->value_bytes);
                        out[header->value_bytes] = '\0';
                        found = true;
                    }
                }
            }
        }
    }
    g_byte_array_unref(bytes);
    return found;
}

/* Acked records of producer 0 missing from the current leaders' logs. */
static inline int64_t h_acked_lost(struct harness *h)
{
    int64_t lost = 0;
    for (guint i = 0; i < h->outcomes->len; i++) {
        const struct ks_record_outcome *o = &g_array_index(h->outcomes, struct ks_record_outcome, i);
        if (o->outcome != KS_OUTCOME_ACKED) {
            continue;
        }
        int32_t leader = ks_cluster_leader(h->cluster, o->topic_index, o->partition);
        char expect[160];
        char actual[64];
        g_snprintf(expect, sizeof expect, "%s:%" G_GINT64_FORMAT, h->producer.name, o->seq);
        if (leader < 1 || !h_identity_at(h, leader, o->topic_index, o->partition, o->offset, actual,
                                         sizeof actual) ||
            strcmp(expect, actual) != 0) {
            lost++;
        }
    }
    return lost;
}

static inline int64_t h_outcome_count(struct harness *h, enum ks_record_outcome_kind kind)
{
    int64_t count = 0;
    for (guint i = 0; i < h->outcomes->len; i++) {
        if (g_array_index(h->outcomes, struct ks_record_outcome, i).outcome == kind) {
            count++;
        }
    }
    return count;
}
