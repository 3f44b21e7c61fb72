/*
** tests/core/repl_harness.h: the replication, controller and producer-state
** suites' helpers on top of cluster_fixture.h (brokers and the controller
** built by core/cluster.c, usually without clients): direct appends at a
** leader (ks_broker_append_for_test), a replica's state and batches, whether
** two replicas' logs agree, and one producer with Kafka's defaults. Everything
** is static inline so that each suite uses only what it needs.
*/
#pragma once

#include "cluster_fixture.h"
#include "../../core/batch.h"
#include "../../core/broker.h"
#include "../../core/controller.h"
#include "../../core/log.h"
#include "../../core/proto.h"
#include "../testlib.h"

#define H_MS CF_MS
#define H_S  CF_S

static inline void h_append_done(void *context, int16_t error, int64_t base_offset)
{
    struct cf_append *a = context;
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
    ks_batch_builder_init(&builder, KS_EPOCH_BASE_MS, producer_id, producer_epoch, base_sequence);
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
static inline struct cf_append *h_append_batch(struct cluster_fixture *h, int32_t broker_id,
                                               int32_t topic_index, int32_t partition,
                                               enum ks_acks acks, GByteArray *batch)
{
    CU_ASSERT_FATAL(h->append_count < CF_APPENDS_MAX);
    struct cf_append *a = &h->appends[h->append_count++];
    memset(a, 0, sizeof *a);
    a->world = h->env.world;
    a->error = -100;
    struct ks_broker *broker = ks_cluster_broker(h->cluster, broker_id);
    ks_broker_append_for_test(broker, topic_index, partition, acks, batch->data, batch->len,
                              h_append_done, a);
    g_byte_array_unref(batch);
    return a;
}

static inline struct cf_append *h_append(struct cluster_fixture *h, int32_t broker_id,
                                         int32_t topic_index, int32_t partition, enum ks_acks acks,
                                         const char *tag)
{
    return h_append_batch(h, broker_id, topic_index, partition, acks, h_batch(tag, 1, -1, -1, -1));
}

static inline struct ks_replica_state h_state(struct cluster_fixture *h, int32_t broker_id,
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
static inline uint32_t h_batch_crc_at(struct cluster_fixture *h, int32_t broker_id,
                                      int32_t topic_index, int32_t partition, int64_t offset)
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
static inline bool h_logs_agree(struct cluster_fixture *h, int32_t a, int32_t b,
                                int32_t topic_index, int32_t partition)
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

/* Producer p1 with Kafka's defaults (acks=all, idempotent) on topic 0:
 * `count` records at `rate_per_s`, 100 keys. */
static inline struct ks_producer_config *h_add_producer(struct cluster_fixture *h,
                                                        uint64_t rate_per_s, int64_t count)
{
    struct ks_producer_config *c = cf_producer(h, "p1", 0);
    c->rate_per_s = rate_per_s;
    c->count = count;
    c->key_count = 100;
    return c;
}

/* The identity header ("producer:seq") of the record at `offset` in a
 * broker's replica, copied into out; false if absent. */
static inline bool h_identity_at(struct cluster_fixture *h, int32_t broker_id, int32_t topic_index,
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
static inline int64_t h_acked_lost(struct cluster_fixture *h)
{
    int64_t lost = 0;
    for (guint i = 0; i < h->outcomes->len; i++) {
        const struct ks_record_outcome *o =
            &g_array_index(h->outcomes, struct ks_record_outcome, i);
        if (o->outcome != KS_OUTCOME_ACKED) {
            continue;
        }
        int32_t leader = ks_cluster_leader(h->cluster, o->topic_index, o->partition);
        char expect[160];
        char actual[64];
        g_snprintf(expect, sizeof expect, "%s:%" G_GINT64_FORMAT, h->producer.name, o->seq);
        if (leader < 1 ||
            !h_identity_at(h, leader, o->topic_index, o->partition, o->offset, actual,
                           sizeof actual) ||
            strcmp(expect, actual) != 0) {
            lost++;
        }
    }
    return lost;
}

static inline int64_t h_outcome_count(struct cluster_fixture *h, enum ks_record_outcome_kind kind)
{
    int64_t count = 0;
    for (guint i = 0; i < h->outcomes->len; i++) {
        if (g_array_index(h->outcomes, struct ks_record_outcome, i).outcome == kind) {
            count++;
        }
    }
    return count;
}

/* The last message a test's client (the driver's node) received, for the
 * client side of the protocol spoken by hand (ks_world_set_receiver with
 * h_client_receive). */
struct h_client_box {
    uint32_t kind;
    _Alignas(8) uint8_t bytes[8192];
    size_t byte_count;
    int32_t count;
};

static inline void h_client_receive(ks_world *world, ks_node_id self, ks_node_id source,
                                    uint32_t kind, const void *message, size_t message_bytes,
                                    void *context)
{
    (void)world;
    (void)self;
    (void)source;
    struct h_client_box *box = context;
    box->kind = kind;
    box->byte_count = message_bytes < sizeof box->bytes ? message_bytes : sizeof box->bytes;
    memcpy(box->bytes, message, box->byte_count);
    box->count++;
}

/* Three brokers, orders-0 on 1,2,3 (min ISR 2), started with `seed` and run
 * to 500 ms, with the driver's node as a hand-driven client whose answers
 * land in *box. */
static inline void h_client_cluster(struct cluster_fixture *h, struct h_client_box *box,
                                    uint64_t seed)
{
    static const int32_t assign[] = { 1, 2, 3 };
    cf_init(h, 3);
    cf_topic(h, "orders", 1, 3, 2, assign);
    cf_start(h, seed);
    memset(box, 0, sizeof *box);
    ks_world_set_receiver(h->env.world, KS_NODE_DRIVER, h_client_receive, box);
    cf_run_until(h, 500 * H_MS);
}
