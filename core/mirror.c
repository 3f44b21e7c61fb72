/*
** core/mirror.c: one MirrorMaker 2 source task as a node (core/mirror.h).
**
** Design (Kafka's MirrorSourceTask, read from connect/mirror; paraphrased):
**
** - poll (MirrorSourceTask.poll): the task's consumer is assigned every
**   partition of the source topic, without a group, and starts at the
**   earliest offset (MirrorSourceConfig's consumer auto.offset.reset =
**   earliest; initializeConsumer seeks only partitions with a committed
**   source offset). Each partition is fetched from its leader, up to the HW,
**   at most max.poll.records records at a time, long-polling
**   fetch.max.wait.ms. Control batches never reach the task.
** - convertRecord: each record goes to the same partition of the remote
**   topic with its key, value, timestamp and headers (so the identity header
**   ksim's producers write names the copy as well).
** - the Connect worker sends the records with a producer of
**   max.in.flight.requests.per.connection = 1 and delivery.timeout.ms = MAX
**   (Worker.baseProducerConfigs): ksim keeps one batch in flight per
**   partition and retries it until it is acked, the same bytes every time, so
**   an idempotent producer's retry is deduplicated by the target leader
**   (DUPLICATE_SEQUENCE_NUMBER answers the first append's offset) and a
**   non-idempotent one may write a record twice. A target that lost the
**   producer's state (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID,
**   INVALID_PRODUCER_EPOCH) gets the batch again under a new producer id.
**   The next fetch of a partition waits for its batch's ack: the copy lags
**   the source by a fetch and a produce round trip at least.
** - commitRecord: the ack names each copy's target offset; the offset-sync
**   writer (core/mirror_sync.c, OffsetSyncWriter) decides which syncs to send
**   to partition 0 of the offset-syncs topic on the source; at most
**   KS_MIRROR_OUTSTANDING_SYNCS_MAX are in flight, a failed one is dropped
**   (the next one supersedes it).
** - commit (offset.flush.interval.ms): delayed syncs become pending, and the
**   source offsets acked so far are committed (WorkerSourceTask commits the
**   acked prefix to Connect's offsets topic); a restarted task resumes there
**   and copies again what it copied after that commit.
**
** Simplifications: one fetch request per partition (Kafka's consumer groups
** the partitions of a broker in one), no ApiVersions handshake, the Connect
** offsets topic is state of this object that survives its crash (its
** records live on the target cluster, which a crash of the task does not
** touch), topics are created by the specs.
**
** Invariants (ks_mirror_check):
**   M1  committed_position <= mirrored_next <= position for every partition.
**   M2  a partition with a batch holds its records' source offsets, all in
**       [mirrored_next, position), ascending.
**   M3  every request in flight names a live slot: at most one fetch or
**       produce per partition, and only in the matching state.
**   M4  outstanding offset syncs never exceed KS_MIRROR_OUTSTANDING_SYNCS_MAX.
**   M5  the checkpoint side has at most one request of its pass in flight,
**       and one fetch of the offset-syncs topic.
*/
#include "mirror.h"

#include "base.h"
#include "batch.h"
#include "group_proto.h"
#include "mirror_sync.h"
#include "proto.h"

#include <glib.h>
#include <stdlib.h>
#include <string.h>

enum {
    KS_TIMER_MIRROR_START = 500,
    KS_TIMER_MIRROR_TIMEOUT = 501, /* a request's request.timeout.ms */
    KS_TIMER_MIRROR_BACKOFF = 502, /* retry.backoff.ms of a partition */
    KS_TIMER_MIRROR_FLUSH = 503,   /* offset.flush.interval.ms */
    KS_TIMER_MIRROR_META = 504,    /* metadata retry */
    KS_TIMER_MIRROR_EMIT = 505,    /* emit.checkpoints.interval.seconds */
    KS_TIMER_MIRROR_CYCLE = 506,   /* a checkpoint step's retry.backoff.ms */
};

/* Where the checkpoint side's cycle over the groups stands. */
enum cycle_step {
    CYCLE_IDLE,
    CYCLE_FIND,    /* the group's coordinator on the source */
    CYCLE_FETCH,   /* its committed offsets there */
    CYCLE_PRODUCE, /* its new checkpoints to the target */
    /* sync.group.offsets.enabled: the target group's offsets */
    CYCLE_TARGET_FIND,
    CYCLE_TARGET_FETCH,
    CYCLE_TARGET_COMMIT,
};

enum request_kind {
    REQ_METADATA,
    REQ_INIT_PID,
    REQ_FETCH,
    REQ_PRODUCE,
    REQ_SYNC,
    /* the checkpoint side */
    REQ_SYNCS_FETCH,   /* reading the offset-syncs topic */
    REQ_FIND_COORD,    /* the group's coordinator on the source */
    REQ_OFFSET_FETCH,  /* the group's committed offsets */
    REQ_CHECKPOINTS,   /* a group's checkpoints to the target's checkpoints topic */
    REQ_OFFSET_COMMIT, /* sync.group.offsets: the translated offsets to the target group */
};

/* Metadata slots: the topics the task needs, each on one cluster. */
enum { META_SOURCE, META_TARGET, META_SYNCS, META_CHECKPOINTS, META_COUNT };

struct request {
    int64_t correlation_id;
    enum request_kind kind;
    int32_t slot; /* FETCH, PRODUCE: partition; METADATA: meta slot */
    ks_node_id node;
    ks_timer_id timeout;
    struct ks_mirror *mirror;
};

struct meta {
    bool target_side;
    int32_t topic_index;
    int32_t partition_count;
    int32_t *leader; /* [partition] broker id, -1 unknown */
    bool known;
    bool stale;
    bool in_flight;
    int32_t next_broker; /* 0-based rotation over the cluster's brokers */
    ks_timer_id retry_timer;
    struct ks_mirror *mirror;
};

enum part_state { PART_IDLE, PART_FETCHING, PART_PRODUCING };

struct part {
    enum part_state state;
    int64_t position;           /* next source offset to fetch */
    int64_t mirrored_next;      /* next source offset whose copy is not acked */
    int64_t committed_position; /* source offset a restart resumes from */
    int64_t source_hw;
    /* The records for the target, kept for retries: a batch without
     * producer id, encoded at each send with the current one. NULL: none. */
    GByteArray *batch;
    GArray *upstream;     /* int64_t: its records' source offsets */
    int64_t sequence_pid; /* the producer id `sequence` counts for */
    int32_t sequence;     /* next idempotent sequence on the target partition */
    int64_t sent_pid;     /* the producer id of the batch in flight */
    ks_timer_id backoff_timer;
    struct ks_mirror *mirror;
};

struct ks_mirror {
    ks_world *world;
    const struct ks_mirror_config *config;
    const struct ks_mirror_observer *observer;
    bool up;
    bool started;
    int64_t next_correlation_id;
    GPtrArray *requests; /* struct request, owned, in sending order */
    struct meta meta[META_COUNT];
    struct part *parts;
    struct ks_offset_sync_writer *syncs; /* NULL: emit.offset-syncs.enabled = false */
    int64_t producer_id;                 /* -1: none yet (or not idempotent) */
    int16_t producer_epoch;
    bool pid_in_flight;
    int32_t pid_next_broker;
    ks_timer_id start_timer;
    ks_timer_id flush_timer;
    int64_t record_count;
    int64_t sync_count;
    /* The checkpoint side (MirrorCheckpointTask); store NULL without it. */
    struct ks_offset_sync_store *store;
    int64_t syncs_position; /* next offset of the offset-syncs topic to read */
    bool syncs_fetching;
    bool syncs_read_to_end;
    ks_timer_id syncs_backoff_timer;
    ks_timer_id emit_timer;
    enum cycle_step cycle_step;
    bool cycle_in_flight;
    ks_timer_id cycle_timer;
    int32_t cycle_group;                 /* the group the cycle is at */
    int32_t coordinator;                 /* its coordinator on the source, -1 */
    struct ks_offset_sync *cycle_points; /* [partition] checkpoints being sent */
    bool *cycle_has;                     /* [partition] */
    struct ks_offset_sync *last;         /* [group * partitions + p] last acked checkpoint */
    bool *has_last;
    int64_t checkpoint_count;
    bool group_sync_due; /* this pass also syncs the target groups' offsets */
    ks_time_ns group_sync_next_ns;
    int64_t *commit_offsets;  /* [partition] the target group's new offsets, -1 none */
    int64_t group_sync_count; /* target group commits accepted */
};

static void drive(struct ks_mirror *m);
static void drive_checkpoints(struct ks_mirror *m);
static void on_checkpoints_acked(struct ks_mirror *m, int16_t error);

void ks_mirror_config_defaults(struct ks_mirror_config *out)
{
    memset(out, 0, sizeof *out);
    out->offset_syncs_topic_index = -1;
    out->offset_lag_max = KS_MIRROR_OFFSET_LAG_MAX_DEFAULT;
    out->acks = KS_ACKS_ALL;
    out->enable_idempotence = true;
    out->request_timeout_ns = 30000 * (int64_t)KS_NS_PER_MS;
    out->retry_backoff_ns = 100 * (int64_t)KS_NS_PER_MS;
    out->fetch_max_wait_ns = 500 * (int64_t)KS_NS_PER_MS;
    out->max_poll_records = 500;
    out->max_partition_fetch_bytes = 1048576;
    out->offset_flush_interval_ns = 60000 * (int64_t)KS_NS_PER_MS;
    out->start_ns = 0;
    out->checkpoints_topic_index = -1;
    out->emit_checkpoints_interval_ns = (int64_t)KS_MIRROR_EMIT_CHECKPOINTS_INTERVAL_NS_DEFAULT;
    out->sync_group_offsets_enabled = false;
    out->sync_group_offsets_interval_ns = 60000 * (int64_t)KS_NS_PER_MS;
}

/* ---- nodes ------------------------------------------------------------------ */

static ks_node_id broker_node(const struct ks_mirror *m, bool target_side, int32_t broker)
{
    const struct ks_mirror_config *c = m->config;
    ks_assert(broker >= 1 &&
              broker <= (target_side ? c->target_broker_count : c->source_broker_count));
    return (target_side ? c->target_broker_node : c->source_broker_node) + (ks_node_id)broker - 1;
}

/* ---- requests --------------------------------------------------------------- */

static void on_request_timeout(ks_world *world, void *context);

static struct request *request_add(struct ks_mirror *m, enum request_kind kind, int32_t slot,
                                   ks_node_id node)
{
    struct request *r = g_new0(struct request, 1);
    r->correlation_id = ++m->next_correlation_id;
    r->kind = kind;
    r->slot = slot;
    r->node = node;
    r->mirror = m;
    r->timeout =
        ks_world_schedule(m->world, m->config->node, (ks_time_ns)m->config->request_timeout_ns,
                          KS_TIMER_MIRROR_TIMEOUT, on_request_timeout, r);
    g_ptr_array_add(m->requests, r);
    return r;
}

/* Removes r from the requests (freed by the array); returns its fields. */
static struct request request_take(struct ks_mirror *m, struct request *r)
{
    struct request copy = *r;
    ks_world_cancel(m->world, r->timeout);
    g_ptr_array_remove(m->requests, r);
    return copy;
}

static struct request *request_find(struct ks_mirror *m, int64_t correlation_id, ks_node_id node)
{
    for (guint i = 0; i < m->requests->len; i++) {
        struct request *r = g_ptr_array_index(m->requests, i);
        if (r->correlation_id == correlation_id) {
            return r->node == node ? r : NULL;
        }
    }
    return NULL;
}

/* Arms *timer for retry.backoff.ms unless it is armed already. */
static void arm_backoff(struct ks_mirror *m, ks_timer_id *timer, uint32_t kind, ks_event_fn *fn,
                        void *context)
{
    if (*timer == 0) {
        *timer = ks_world_schedule(m->world, m->config->node,
                                   (ks_time_ns)m->config->retry_backoff_ns, kind, fn, context);
    }
}

/* Sends batch (borrowed) to a partition's leader as one Produce request of
 * the given kind and slot. */
static void send_produce_request(struct ks_mirror *m, enum request_kind kind, int32_t slot,
                                 bool target_side, int32_t leader, int32_t topic_index,
                                 int32_t partition, enum ks_acks acks, const GByteArray *batch)
{
    struct request *r = request_add(m, kind, slot, broker_node(m, target_side, leader));
    size_t bytes = sizeof(struct ks_produce_request) + batch->len;
    uint8_t *message = calloc(1, bytes);
    ks_assert(message != NULL);
    struct ks_produce_request *request = (struct ks_produce_request *)message;
    request->correlation_id = r->correlation_id;
    request->timeout_ns = m->config->request_timeout_ns;
    request->topic_index = topic_index;
    request->partition = partition;
    request->acks = (int16_t)acks;
    request->batch_bytes = batch->len;
    memcpy(message + sizeof *request, batch->data, batch->len);
    ks_world_send(m->world, m->config->node, r->node, KS_MSG_PRODUCE_REQUEST, message, bytes);
    free(message);
}

/* The one partition of a Fetch answer and its records; false when the
 * answer does not hold exactly one. */
static bool fetch_answer(const uint8_t *message, size_t bytes,
                         struct ks_fetch_response_partition *fp_out, const uint8_t **records_out)
{
    struct ks_fetch_response response;
    ks_assert(bytes >= sizeof response);
    memcpy(&response, message, sizeof response);
    if (response.partition_count != 1 || bytes < sizeof response + sizeof *fp_out) {
        return false;
    }
    memcpy(fp_out, message + sizeof response, sizeof *fp_out);
    ks_assert(sizeof response + sizeof *fp_out + fp_out->records_bytes <= bytes);
    *records_out = message + sizeof response + sizeof *fp_out;
    return true;
}

/* ---- metadata ----------------------------------------------------------------- */

static void on_meta_retry(ks_world *world, void *context)
{
    (void)world;
    struct meta *meta = context;
    meta->retry_timer = 0;
    meta->stale = true;
    drive(meta->mirror);
}

static void send_metadata(struct ks_mirror *m, int32_t slot)
{
    struct meta *meta = &m->meta[slot];
    int32_t count =
        meta->target_side ? m->config->target_broker_count : m->config->source_broker_count;
    int32_t broker = meta->next_broker % count + 1;
    meta->next_broker = (meta->next_broker + 1) % count;
    struct request *r =
        request_add(m, REQ_METADATA, slot, broker_node(m, meta->target_side, broker));
    struct ks_metadata_request request;
    memset(&request, 0, sizeof request);
    request.correlation_id = r->correlation_id;
    request.topic_index = meta->topic_index;
    meta->in_flight = true;
    meta->stale = false;
    ks_world_send(m->world, m->config->node, r->node, KS_MSG_METADATA_REQUEST, &request,
                  sizeof request);
}

static void meta_retry_later(struct ks_mirror *m, int32_t slot)
{
    struct meta *meta = &m->meta[slot];
    arm_backoff(m, &meta->retry_timer, KS_TIMER_MIRROR_META, on_meta_retry, meta);
}

static void on_metadata_response(struct ks_mirror *m, struct request *r, const uint8_t *message,
                                 size_t bytes)
{
    struct ks_metadata_response response;
    size_t head = ks_proto_metadata_decode(message, bytes, &response);
    ks_assert(
        ks_proto_fits(bytes, head, response.partition_count, sizeof(struct ks_metadata_partition)));
    struct request done = request_take(m, r);
    struct meta *meta = &m->meta[done.slot];
    meta->in_flight = false;
    if (response.error_code != KS_ERR_NONE) {
        meta_retry_later(m, done.slot);
        return;
    }
    bool all = true;
    for (int32_t p = 0; p < meta->partition_count; p++) {
        meta->leader[p] = -1;
    }
    for (int32_t i = 0; i < response.partition_count; i++) {
        struct ks_metadata_partition mp;
        memcpy(&mp, message + head + (size_t)i * sizeof mp, sizeof mp);
        if (mp.partition >= 0 && mp.partition < meta->partition_count) {
            meta->leader[mp.partition] = mp.error_code == KS_ERR_NONE ? mp.leader : -1;
        }
    }
    for (int32_t p = 0; p < meta->partition_count; p++) {
        all = all && meta->leader[p] >= 1;
    }
    meta->known = true;
    if (!all) {
        meta_retry_later(m, done.slot); /* LEADER_NOT_AVAILABLE somewhere: ask again */
    }
}

static void mark_stale(struct ks_mirror *m, int32_t slot)
{
    if (!m->meta[slot].in_flight) {
        m->meta[slot].stale = true;
    }
}

static int32_t leader_of(const struct ks_mirror *m, int32_t slot, int32_t partition)
{
    const struct meta *meta = &m->meta[slot];
    return meta->known ? meta->leader[partition] : -1;
}

/* ---- producer id ---------------------------------------------------------------- */

static void send_init_pid(struct ks_mirror *m)
{
    int32_t count = m->config->target_broker_count;
    int32_t broker = m->pid_next_broker % count + 1;
    m->pid_next_broker = (m->pid_next_broker + 1) % count;
    struct request *r = request_add(m, REQ_INIT_PID, -1, broker_node(m, true, broker));
    struct ks_init_producer_id_request request;
    memset(&request, 0, sizeof request);
    request.correlation_id = r->correlation_id;
    m->pid_in_flight = true;
    ks_world_send(m->world, m->config->node, r->node, KS_MSG_INIT_PRODUCER_ID_REQUEST, &request,
                  sizeof request);
}

/* The batch of part as sent now: its records under the current producer id
 * and the partition's next sequence (idempotence), or the plain batch. A
 * retry under the same id gets the same bytes, which the target leader
 * deduplicates. Owned by the caller (g_byte_array_unref). */
static GByteArray *encode_batch(struct ks_mirror *m, struct part *part)
{
    if (m->producer_id < 0) {
        part->sent_pid = -1;
        return g_byte_array_ref(part->batch);
    }
    if (part->sequence_pid != m->producer_id) {
        part->sequence_pid = m->producer_id; /* a new id starts at sequence 0 */
        part->sequence = 0;
    }
    part->sent_pid = m->producer_id;
    struct ks_batch_view view;
    size_t view_bytes = 0;
    enum ks_batch_status status =
        ks_batch_parse(part->batch->data, part->batch->len, &view, &view_bytes);
    ks_assert(status == KS_BATCH_OK);
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, view.base_timestamp, m->producer_id, m->producer_epoch,
                          part->sequence);
    struct ks_record_iter iter;
    struct ks_record_view record;
    ks_record_iter_init(&iter, &view);
    while (ks_record_iter_next(&iter, &record, NULL)) {
        ks_batch_builder_add(&builder, record.timestamp, record.key, record.key_bytes, record.value,
                             record.value_bytes, record.headers, record.header_count);
    }
    GByteArray *encoded = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    return encoded;
}

static void on_init_pid_response(struct ks_mirror *m, struct request *r, const uint8_t *message,
                                 size_t bytes)
{
    struct ks_init_producer_id_response response;
    ks_assert(bytes >= sizeof response);
    memcpy(&response, message, sizeof response);
    request_take(m, r);
    m->pid_in_flight = false;
    if (response.error_code != KS_ERR_NONE) {
        return; /* drive asks another broker */
    }
    m->producer_id = response.producer_id;
    m->producer_epoch = response.producer_epoch;
}

/* ---- fetch (the task's consumer) -------------------------------------------------- */

static void on_backoff(ks_world *world, void *context);

static void backoff(struct ks_mirror *m, int32_t partition)
{
    struct part *part = &m->parts[partition];
    part->state = PART_IDLE;
    arm_backoff(m, &part->backoff_timer, KS_TIMER_MIRROR_BACKOFF, on_backoff, part);
}

/* One Fetch of one partition of a source topic, as a consumer. */
static void send_fetch_of(struct ks_mirror *m, enum request_kind kind, int32_t topic_index,
                          int32_t partition, int64_t offset, int32_t leader)
{
    struct request *r = request_add(m, kind, partition, broker_node(m, false, leader));
    size_t bytes = sizeof(struct ks_fetch_request) + sizeof(struct ks_fetch_request_partition);
    uint8_t *message = calloc(1, bytes);
    ks_assert(message != NULL);
    struct ks_fetch_request *request = (struct ks_fetch_request *)message;
    request->correlation_id = r->correlation_id;
    request->replica_epoch = -1;
    request->replica_id = KS_FETCH_CONSUMER_REPLICA_ID;
    request->min_bytes = 1;
    /* The offset-syncs read never parks: a broker keeps one parked fetch
     * per client node (core/broker_serve.c S1), and this node's source
     * partitions' fetches park there; it polls every retry.backoff.ms
     * instead (MM2 reads it with a consumer of its own). */
    request->max_wait_ns = kind == REQ_SYNCS_FETCH ? 0 : m->config->fetch_max_wait_ns;
    request->max_bytes = m->config->max_partition_fetch_bytes;
    request->partition_count = 1;
    struct ks_fetch_request_partition *fp = (struct ks_fetch_request_partition *)(request + 1);
    fp->topic_index = topic_index;
    fp->partition = partition;
    fp->fetch_offset = offset;
    fp->log_start_offset = -1;
    fp->current_leader_epoch = -1;
    fp->last_fetched_epoch = -1;
    fp->partition_max_bytes = m->config->max_partition_fetch_bytes;
    ks_world_send(m->world, m->config->node, r->node, KS_MSG_FETCH_REQUEST, message, bytes);
    free(message);
}

static void send_fetch(struct ks_mirror *m, int32_t partition, int32_t leader)
{
    struct part *part = &m->parts[partition];
    part->state = PART_FETCHING;
    send_fetch_of(m, REQ_FETCH, m->config->source_topic_index, partition, part->position, leader);
}

/* Takes the records of one fetched partition at or after its position, at
 * most max.poll.records, into a new batch for the target. */
static void take_records(struct ks_mirror *m, int32_t partition, const uint8_t *records,
                         size_t records_bytes)
{
    struct part *part = &m->parts[partition];
    struct ks_batch_builder builder;
    bool building = false;
    int32_t taken = 0;
    size_t at = 0;
    while (at < records_bytes && taken < m->config->max_poll_records) {
        struct ks_batch_view batch;
        size_t batch_bytes = 0;
        if (ks_batch_parse(records + at, records_bytes - at, &batch, &batch_bytes) != KS_BATCH_OK) {
            break; /* a partial batch at the end (max bytes) */
        }
        at += batch_bytes;
        int64_t last = ks_batch_last_offset(&batch);
        if (last < part->position) {
            continue;
        }
        if ((batch.attributes & KS_ATTR_CONTROL) != 0) {
            part->position = last + 1; /* never reaches the task */
            continue;
        }
        struct ks_record_iter iter;
        struct ks_record_view record;
        ks_record_iter_init(&iter, &batch);
        bool whole = true;
        while (ks_record_iter_next(&iter, &record, NULL)) {
            if (record.offset < part->position) {
                continue;
            }
            if (taken == m->config->max_poll_records) {
                whole = false;
                break;
            }
            if (!building) {
                ks_batch_builder_init(&builder, record.timestamp, -1, -1, -1);
                building = true;
            }
            ks_batch_builder_add(&builder, record.timestamp, record.key, record.key_bytes,
                                 record.value, record.value_bytes, record.headers,
                                 record.header_count);
            g_array_append_val(part->upstream, record.offset);
            part->position = record.offset + 1;
            taken++;
        }
        ks_record_iter_deinit(&iter);
        if (whole) {
            part->position = last + 1; /* offsets the batch left out (compaction) */
        }
    }
    if (building) {
        part->batch = ks_batch_builder_finish(&builder);
        ks_batch_builder_deinit(&builder);
    }
}

static void on_fetch_response(struct ks_mirror *m, struct request *r, const uint8_t *message,
                              size_t bytes)
{
    struct request done = request_take(m, r);
    int32_t partition = done.slot;
    struct part *part = &m->parts[partition];
    ks_assert(part->state == PART_FETCHING);
    part->state = PART_IDLE;
    struct ks_fetch_response_partition fp;
    const uint8_t *records = NULL;
    if (!fetch_answer(message, bytes, &fp, &records)) {
        mark_stale(m, META_SOURCE);
        backoff(m, partition);
        return;
    }
    if (fp.error_code == KS_ERR_OFFSET_OUT_OF_RANGE) {
        /* auto.offset.reset = earliest */
        part->position = fp.log_start_offset > 0 ? fp.log_start_offset : 0;
        if (part->mirrored_next > part->position) {
            part->mirrored_next = part->position;
        }
        if (part->committed_position > part->mirrored_next) {
            part->committed_position = part->mirrored_next;
        }
        return;
    }
    if (fp.error_code != KS_ERR_NONE) {
        mark_stale(m, META_SOURCE);
        backoff(m, partition);
        return;
    }
    part->source_hw = fp.hw;
    take_records(m, partition, records, fp.records_bytes);
    if (part->batch == NULL && part->upstream->len == 0) {
        /* Nothing new: everything fetched was skipped (control batches) or
         * the long poll ended empty. A position with no record in it moves
         * the copy forward too. */
        part->mirrored_next = part->position;
    }
}

/* ---- produce (the Connect worker's producer) -------------------------------------- */

static void send_produce(struct ks_mirror *m, int32_t partition, int32_t leader)
{
    struct part *part = &m->parts[partition];
    GByteArray *batch = encode_batch(m, part);
    part->state = PART_PRODUCING;
    send_produce_request(m, REQ_PRODUCE, partition, true, leader, m->config->target_topic_index,
                         partition, m->config->acks, batch);
    g_byte_array_unref(batch);
}

static void fire_syncs(struct ks_mirror *m);

/* The copy of the partition's batch is acked at base_offset (-1: acks=0,
 * no offset known, no sync: MirrorSourceTask.commitRecord without offset). */
static void batch_acked(struct ks_mirror *m, int32_t partition, int64_t base_offset)
{
    struct part *part = &m->parts[partition];
    for (guint i = 0; i < part->upstream->len; i++) {
        int64_t upstream = g_array_index(part->upstream, int64_t, i);
        int64_t downstream = base_offset >= 0 ? base_offset + (int64_t)i : -1;
        if (m->syncs != NULL && downstream >= 0) {
            ks_offset_sync_writer_record(m->syncs, partition, upstream, downstream);
        }
        if (m->observer != NULL && m->observer->on_mirrored != NULL) {
            m->observer->on_mirrored(m->observer->context, partition, upstream, downstream);
        }
    }
    m->record_count += part->upstream->len;
    if (part->sent_pid >= 0 && part->sent_pid == part->sequence_pid) {
        part->sequence += (int32_t)part->upstream->len;
    }
    part->mirrored_next = part->position;
    g_array_set_size(part->upstream, 0);
    g_byte_array_unref(part->batch);
    part->batch = NULL;
    part->state = PART_IDLE;
    fire_syncs(m);
}

static void on_produce_response(struct ks_mirror *m, struct request *r, const uint8_t *message,
                                size_t bytes)
{
    struct ks_produce_response response;
    ks_assert(bytes >= sizeof response);
    memcpy(&response, message, sizeof response);
    struct request done = request_take(m, r);
    if (done.kind == REQ_CHECKPOINTS) {
        on_checkpoints_acked(m, response.error_code);
        return;
    }
    if (done.kind == REQ_SYNC) {
        ks_offset_sync_writer_sent_done(m->syncs);
        if (response.error_code == KS_ERR_NONE) {
            m->sync_count++;
        } else {
            mark_stale(m, META_SYNCS);
        }
        return;
    }
    int32_t partition = done.slot;
    struct part *part = &m->parts[partition];
    ks_assert(part->state == PART_PRODUCING);
    part->state = PART_IDLE;
    int16_t error = response.error_code;
    if (error == KS_ERR_NONE || error == KS_ERR_DUPLICATE_SEQUENCE_NUMBER) {
        batch_acked(m, partition, response.base_offset);
        return;
    }
    if (error == KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER || error == KS_ERR_UNKNOWN_PRODUCER_ID ||
        error == KS_ERR_INVALID_PRODUCER_EPOCH) {
        /* The leader lost this producer's state (an unclean election, a
         * truncation): a new id, with which the batch starts at sequence 0. */
        if (m->config->enable_idempotence && !m->pid_in_flight &&
            part->sent_pid == m->producer_id) {
            m->producer_id = -1;
        }
    } else {
        mark_stale(m, META_TARGET);
    }
    backoff(m, partition);
}

/* ---- offset syncs ------------------------------------------------------------------ */

static void fire_syncs(struct ks_mirror *m)
{
    if (m->syncs == NULL) {
        return;
    }
    int32_t leader = leader_of(m, META_SYNCS, 0);
    if (leader < 1) {
        return; /* they stay pending until the leader is known */
    }
    int32_t partition = 0;
    struct ks_offset_sync sync;
    while (ks_offset_sync_writer_next(m->syncs, &partition, &sync)) {
        uint8_t key[512];
        size_t key_bytes =
            ks_offset_sync_key_encode(m->config->source_topic_name, partition, key, sizeof key);
        ks_assert(key_bytes <= sizeof key);
        uint8_t value[KS_OFFSET_SYNC_VALUE_BYTES];
        ks_offset_sync_value_encode(sync, value);
        struct ks_batch_builder builder;
        int64_t now_ms = (int64_t)(ks_world_now_ns(m->world) / KS_NS_PER_MS);
        ks_batch_builder_init(&builder, now_ms, -1, -1, -1);
        ks_batch_builder_add(&builder, now_ms, key, (int32_t)key_bytes, value,
                             (int32_t)sizeof value, NULL, 0);
        GByteArray *batch = ks_batch_builder_finish(&builder);
        ks_batch_builder_deinit(&builder);
        send_produce_request(m, REQ_SYNC, 0, false, leader, m->config->offset_syncs_topic_index, 0,
                             KS_ACKS_ALL, batch);
        g_byte_array_unref(batch);
    }
}

/* ---- the checkpoint side (MirrorCheckpointTask) ------------------------------------- */

static void on_syncs_backoff(ks_world *world, void *context)
{
    (void)world;
    struct ks_mirror *m = context;
    m->syncs_backoff_timer = 0;
    drive(m);
}

static void syncs_backoff(struct ks_mirror *m)
{
    mark_stale(m, META_SYNCS);
    arm_backoff(m, &m->syncs_backoff_timer, KS_TIMER_MIRROR_CYCLE, on_syncs_backoff, m);
}

/* Reading the offset-syncs topic into the store (OffsetSyncStore.handleRecord):
 * records of other topics or partitions are ignored; the first time the
 * read reaches the HW, translation starts (OffsetSyncStore.start's read to
 * the end). */
static void on_syncs_fetch_response(struct ks_mirror *m, struct request *r, const uint8_t *message,
                                    size_t bytes)
{
    request_take(m, r);
    m->syncs_fetching = false;
    struct ks_fetch_response_partition fp;
    const uint8_t *records = NULL;
    if (!fetch_answer(message, bytes, &fp, &records)) {
        syncs_backoff(m);
        return;
    }
    if (fp.error_code == KS_ERR_OFFSET_OUT_OF_RANGE) {
        m->syncs_position = fp.log_start_offset > 0 ? fp.log_start_offset : 0;
        return;
    }
    if (fp.error_code != KS_ERR_NONE) {
        syncs_backoff(m);
        return;
    }
    size_t at = 0;
    while (at < fp.records_bytes) {
        struct ks_batch_view batch;
        size_t batch_bytes = 0;
        if (ks_batch_parse(records + at, fp.records_bytes - at, &batch, &batch_bytes) !=
            KS_BATCH_OK) {
            break;
        }
        at += batch_bytes;
        int64_t last = ks_batch_last_offset(&batch);
        if (last < m->syncs_position) {
            continue;
        }
        struct ks_record_iter iter;
        struct ks_record_view record;
        ks_record_iter_init(&iter, &batch);
        while (ks_record_iter_next(&iter, &record, NULL)) {
            if (record.offset < m->syncs_position || record.key == NULL || record.value == NULL) {
                continue;
            }
            char topic[256];
            int32_t partition = -1;
            struct ks_offset_sync sync;
            if (ks_offset_sync_key_decode(record.key, (size_t)record.key_bytes, topic, sizeof topic,
                                          &partition) &&
                ks_offset_sync_value_decode(record.value, (size_t)record.value_bytes, &sync) &&
                strcmp(topic, m->config->source_topic_name) == 0 && partition >= 0 &&
                partition < m->config->partition_count) {
                ks_offset_sync_store_add(m->store, partition, sync);
            }
        }
        m->syncs_position = last + 1;
    }
    if (m->syncs_position >= fp.hw && !m->syncs_read_to_end) {
        m->syncs_read_to_end = true;
        ks_offset_sync_store_read_to_end(m->store);
    }
    if (m->syncs_position >= fp.hw) {
        /* at the end: the next poll after retry.backoff.ms */
        arm_backoff(m, &m->syncs_backoff_timer, KS_TIMER_MIRROR_CYCLE, on_syncs_backoff, m);
    }
}

static void on_cycle_timer(ks_world *world, void *context)
{
    (void)world;
    struct ks_mirror *m = context;
    m->cycle_timer = 0;
    drive(m);
}

/* The current step failed: it is tried again after retry.backoff.ms, from
 * the coordinator look-up (a new coordinator may answer). */
static void cycle_retry(struct ks_mirror *m)
{
    m->cycle_in_flight = false;
    m->cycle_step = CYCLE_FIND;
    m->coordinator = -1;
    arm_backoff(m, &m->cycle_timer, KS_TIMER_MIRROR_CYCLE, on_cycle_timer, m);
}

static void cycle_next_group(struct ks_mirror *m)
{
    m->cycle_in_flight = false;
    m->coordinator = -1;
    m->cycle_group++;
    m->cycle_step = m->cycle_group < m->config->group_count ? CYCLE_FIND : CYCLE_IDLE;
}

/* The group's checkpoints are done for this pass: on to its target offsets
 * (MirrorCheckpointTask.syncGroupOffset) when they are due and it has a
 * checkpoint, else to the next group. */
static void checkpoints_done(struct ks_mirror *m)
{
    bool any = false;
    size_t base = (size_t)m->cycle_group * (size_t)m->config->partition_count;
    for (int32_t p = 0; p < m->config->partition_count; p++) {
        any = any || m->has_last[base + (size_t)p];
    }
    if (!m->group_sync_due || !any) {
        cycle_next_group(m);
        return;
    }
    m->cycle_in_flight = false;
    m->coordinator = -1;
    m->cycle_step = CYCLE_TARGET_FIND;
}

static void on_emit(ks_world *world, void *context)
{
    (void)world;
    struct ks_mirror *m = context;
    m->emit_timer = ks_world_schedule(m->world, m->config->node,
                                      (ks_time_ns)m->config->emit_checkpoints_interval_ns,
                                      KS_TIMER_MIRROR_EMIT, on_emit, m);
    /* MirrorCheckpointTask.poll: one pass over the groups per interval; a
     * pass still running when the next is due simply goes on. */
    if (m->cycle_step == CYCLE_IDLE && m->config->group_count > 0 && m->syncs_read_to_end) {
        m->cycle_group = 0;
        m->cycle_step = CYCLE_FIND;
        /* sync.group.offsets.interval.seconds, checked at each pass */
        ks_time_ns now = ks_world_now_ns(m->world);
        m->group_sync_due = m->config->sync_group_offsets_enabled && now >= m->group_sync_next_ns;
        if (m->group_sync_due) {
            m->group_sync_next_ns = now + (ks_time_ns)m->config->sync_group_offsets_interval_ns;
        }
    }
    drive(m);
}

/* The cycle's step is on the target cluster (sync.group.offsets). */
static bool cycle_on_target(const struct ks_mirror *m)
{
    return m->cycle_step == CYCLE_TARGET_FIND || m->cycle_step == CYCLE_TARGET_FETCH ||
           m->cycle_step == CYCLE_TARGET_COMMIT;
}

static void send_find_coordinator(struct ks_mirror *m)
{
    bool target = cycle_on_target(m);
    struct meta *rotation = &m->meta[target ? META_TARGET : META_SYNCS];
    int32_t count = target ? m->config->target_broker_count : m->config->source_broker_count;
    int32_t broker = rotation->next_broker % count + 1;
    rotation->next_broker = (rotation->next_broker + 1) % count;
    struct request *r =
        request_add(m, REQ_FIND_COORD, m->cycle_group, broker_node(m, target, broker));
    struct ks_group_find_coordinator_request request;
    memset(&request, 0, sizeof request);
    request.correlation_id = (int32_t)r->correlation_id;
    g_strlcpy(request.group_id, m->config->group_ids[m->cycle_group], sizeof request.group_id);
    m->cycle_in_flight = true;
    ks_world_send(m->world, m->config->node, r->node, KS_GROUP_FIND_COORDINATOR_REQUEST, &request,
                  sizeof request);
}

static void send_offset_fetch(struct ks_mirror *m)
{
    bool target = cycle_on_target(m);
    int32_t topic_index = target ? m->config->target_topic_index : m->config->source_topic_index;
    int32_t count = m->config->partition_count;
    struct request *r =
        request_add(m, REQ_OFFSET_FETCH, m->cycle_group, broker_node(m, target, m->coordinator));
    size_t bytes = sizeof(struct ks_group_offset_fetch_request) +
                   (size_t)count * sizeof(struct ks_group_topic_partition);
    uint8_t *message = calloc(1, bytes);
    ks_assert(message != NULL);
    struct ks_group_offset_fetch_request *request = (struct ks_group_offset_fetch_request *)message;
    request->correlation_id = (int32_t)r->correlation_id;
    request->entry_count = count;
    g_strlcpy(request->group_id, m->config->group_ids[m->cycle_group], sizeof request->group_id);
    for (int32_t p = 0; p < count; p++) {
        struct ks_group_topic_partition tp = { topic_index, p };
        memcpy(message + sizeof *request + (size_t)p * sizeof tp, &tp, sizeof tp);
    }
    m->cycle_in_flight = true;
    ks_world_send(m->world, m->config->node, r->node, KS_GROUP_OFFSET_FETCH_REQUEST, message,
                  bytes);
    free(message);
}

/* The group's checkpoints of this pass, one record each
 * (MirrorCheckpointTask.checkpointRecord), to partition 0 of the
 * checkpoints topic with acks = all. */
static void send_checkpoints(struct ks_mirror *m, int32_t leader)
{
    const char *group = m->config->group_ids[m->cycle_group];
    int64_t now_ms = (int64_t)(ks_world_now_ns(m->world) / KS_NS_PER_MS);
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, now_ms, -1, -1, -1);
    for (int32_t p = 0; p < m->config->partition_count; p++) {
        if (!m->cycle_has[p]) {
            continue;
        }
        uint8_t key[1024];
        size_t key_bytes =
            ks_checkpoint_key_encode(group, m->config->target_topic_name, p, key, sizeof key);
        ks_assert(key_bytes <= sizeof key);
        uint8_t value[64];
        size_t value_bytes =
            ks_checkpoint_value_encode(m->cycle_points[p], "", value, sizeof value);
        ks_assert(value_bytes <= sizeof value);
        ks_batch_builder_add(&builder, now_ms, key, (int32_t)key_bytes, value, (int32_t)value_bytes,
                             NULL, 0);
    }
    GByteArray *batch = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    m->cycle_in_flight = true;
    send_produce_request(m, REQ_CHECKPOINTS, m->cycle_group, true, leader,
                         m->config->checkpoints_topic_index, 0, KS_ACKS_ALL, batch);
    g_byte_array_unref(batch);
}

static void on_find_coordinator_response(struct ks_mirror *m, struct request *r,
                                         const uint8_t *message, size_t bytes)
{
    struct ks_group_find_coordinator_response response;
    ks_assert(bytes == sizeof response);
    memcpy(&response, message, sizeof response);
    request_take(m, r);
    bool target = cycle_on_target(m);
    int32_t count = target ? m->config->target_broker_count : m->config->source_broker_count;
    if (response.error_code != KS_GROUP_ERR_NONE || response.coordinator_id < 1 ||
        response.coordinator_id > count) {
        if (target) {
            cycle_next_group(m); /* the target's offsets wait for the next sync */
        } else {
            cycle_retry(m);
        }
        return;
    }
    m->cycle_in_flight = false;
    m->coordinator = response.coordinator_id;
    m->cycle_step = target ? CYCLE_TARGET_FETCH : CYCLE_FETCH;
}

/* syncGroupOffset: the target group's offset of a partition moves to the
 * last checkpoint's downstream offset when it has none or is behind
 * (ks_checkpoint_sync_target); the commit goes outside the group protocol
 * and the coordinator takes it only while the group is empty, as MM2
 * syncs only idle groups. */
static void target_offsets_fetched(struct ks_mirror *m,
                                   const struct ks_group_offset_fetch_entry *entries,
                                   int32_t entry_count)
{
    int32_t count = m->config->partition_count;
    size_t base = (size_t)m->cycle_group * (size_t)count;
    bool any = false;
    for (int32_t p = 0; p < count; p++) {
        m->commit_offsets[p] = -1;
    }
    for (int32_t i = 0; i < entry_count; i++) {
        struct ks_group_offset_fetch_entry e;
        memcpy(&e, &entries[i], sizeof e);
        /* A partition answered with an error (a transactional offset still
         * pending) is left alone this cycle. */
        if (e.topic_index != m->config->target_topic_index || e.partition < 0 ||
            e.partition >= count || !m->has_last[base + (size_t)e.partition] ||
            e.error_code != KS_GROUP_ERR_NONE) {
            continue;
        }
        int64_t downstream = m->last[base + (size_t)e.partition].downstream_offset;
        if (ks_checkpoint_sync_target(e.offset >= 0, e.offset, downstream)) {
            m->commit_offsets[e.partition] = downstream;
            any = true;
        }
    }
    if (!any) {
        cycle_next_group(m);
        return;
    }
    m->cycle_in_flight = false;
    m->cycle_step = CYCLE_TARGET_COMMIT;
}

static void send_offset_commit(struct ks_mirror *m)
{
    int32_t count = m->config->partition_count;
    int32_t entries = 0;
    for (int32_t p = 0; p < count; p++) {
        entries += m->commit_offsets[p] >= 0;
    }
    struct request *r =
        request_add(m, REQ_OFFSET_COMMIT, m->cycle_group, broker_node(m, true, m->coordinator));
    size_t bytes = sizeof(struct ks_group_offset_commit_request) +
                   (size_t)entries * sizeof(struct ks_group_offset_entry);
    uint8_t *message = calloc(1, bytes);
    ks_assert(message != NULL);
    struct ks_group_offset_commit_request *request =
        (struct ks_group_offset_commit_request *)message;
    request->correlation_id = (int32_t)r->correlation_id;
    request->generation = -1; /* outside the group protocol (Admin.alterConsumerGroupOffsets) */
    request->entry_count = entries;
    g_strlcpy(request->group_id, m->config->group_ids[m->cycle_group], sizeof request->group_id);
    size_t at = sizeof *request;
    for (int32_t p = 0; p < count; p++) {
        if (m->commit_offsets[p] < 0) {
            continue;
        }
        struct ks_group_offset_entry e = { m->config->target_topic_index, p, m->commit_offsets[p] };
        memcpy(message + at, &e, sizeof e);
        at += sizeof e;
    }
    m->cycle_in_flight = true;
    ks_world_send(m->world, m->config->node, r->node, KS_GROUP_OFFSET_COMMIT_REQUEST, message,
                  bytes);
    free(message);
}

static void on_offset_commit_response(struct ks_mirror *m, struct request *r,
                                      const uint8_t *message, size_t bytes)
{
    struct ks_group_simple_response response;
    ks_assert(bytes == sizeof response);
    memcpy(&response, message, sizeof response);
    request_take(m, r);
    if (response.error_code == KS_GROUP_ERR_NONE) {
        m->group_sync_count++;
    }
    cycle_next_group(m); /* an active group (refused) is left alone */
}

/* checkpointsForGroup: a checkpoint per partition whose committed offset
 * translates and is more recent than the last one emitted. */
static void on_offset_fetch_response(struct ks_mirror *m, struct request *r, const uint8_t *message,
                                     size_t bytes)
{
    struct ks_group_offset_fetch_response response;
    ks_assert(bytes >= sizeof response);
    memcpy(&response, message, sizeof response);
    request_take(m, r);
    bool target = cycle_on_target(m);
    if (response.error_code != KS_GROUP_ERR_NONE) {
        if (target) {
            cycle_next_group(m);
        } else {
            cycle_retry(m);
        }
        return;
    }
    const struct ks_group_offset_fetch_entry *entries =
        ks_group_proto_entries(message, bytes, sizeof response, response.entry_count,
                               sizeof(struct ks_group_offset_fetch_entry));
    ks_assert(entries != NULL);
    if (target) {
        target_offsets_fetched(m, entries, response.entry_count);
        return;
    }
    int32_t count = m->config->partition_count;
    bool any = false;
    for (int32_t p = 0; p < count; p++) {
        m->cycle_has[p] = false;
    }
    for (int32_t i = 0; i < response.entry_count; i++) {
        struct ks_group_offset_fetch_entry e;
        memcpy(&e, &entries[i], sizeof e);
        if (e.topic_index != m->config->source_topic_index || e.partition < 0 ||
            e.partition >= count || e.offset < 0) {
            continue;
        }
        size_t slot = (size_t)m->cycle_group * (size_t)count + (size_t)e.partition;
        const struct ks_offset_sync *last = m->has_last[slot] ? &m->last[slot] : NULL;
        if (ks_checkpoint_next(m->store, e.partition, e.offset, last,
                               &m->cycle_points[e.partition])) {
            m->cycle_has[e.partition] = true;
            any = true;
        }
    }
    if (!any) {
        checkpoints_done(m);
        return;
    }
    m->cycle_in_flight = false;
    m->cycle_step = CYCLE_PRODUCE;
}

static void on_checkpoints_acked(struct ks_mirror *m, int16_t error)
{
    if (error != KS_ERR_NONE) {
        mark_stale(m, META_CHECKPOINTS);
        cycle_retry(m);
        return;
    }
    int32_t count = m->config->partition_count;
    for (int32_t p = 0; p < count; p++) {
        if (!m->cycle_has[p]) {
            continue;
        }
        size_t slot = (size_t)m->cycle_group * (size_t)count + (size_t)p;
        m->last[slot] = m->cycle_points[p];
        m->has_last[slot] = true;
        m->checkpoint_count++;
        if (m->observer != NULL && m->observer->on_checkpoint != NULL) {
            m->observer->on_checkpoint(m->observer->context, m->cycle_group, p,
                                       m->cycle_points[p].upstream_offset,
                                       m->cycle_points[p].downstream_offset);
        }
    }
    checkpoints_done(m);
}

/* The checkpoint side's part of the loop. */
static void drive_checkpoints(struct ks_mirror *m)
{
    if (m->store == NULL) {
        return;
    }
    if (m->cycle_in_flight || m->cycle_timer != 0) {
        return;
    }
    switch (m->cycle_step) {
    case CYCLE_IDLE: return;
    case CYCLE_FIND:
    case CYCLE_TARGET_FIND: send_find_coordinator(m); return;
    case CYCLE_FETCH:
    case CYCLE_TARGET_FETCH: send_offset_fetch(m); return;
    case CYCLE_TARGET_COMMIT: send_offset_commit(m); return;
    case CYCLE_PRODUCE: {
        int32_t leader = leader_of(m, META_CHECKPOINTS, 0);
        if (leader >= 1) {
            send_checkpoints(m, leader);
        }
        return;
    }
    }
}

/* ---- timers ---------------------------------------------------------------------------- */

/* A request failed without an answer (its timeout, or its broker went down). */
static void request_failed(struct ks_mirror *m, struct request done)
{
    switch (done.kind) {
    case REQ_METADATA:
        m->meta[done.slot].in_flight = false;
        meta_retry_later(m, done.slot);
        return;
    case REQ_INIT_PID: m->pid_in_flight = false; return;
    case REQ_FETCH:
        mark_stale(m, META_SOURCE);
        backoff(m, done.slot);
        return;
    case REQ_PRODUCE:
        mark_stale(m, META_TARGET);
        backoff(m, done.slot);
        return;
    case REQ_SYNC:
        ks_offset_sync_writer_sent_done(m->syncs);
        mark_stale(m, META_SYNCS);
        return;
    case REQ_SYNCS_FETCH:
        m->syncs_fetching = false;
        syncs_backoff(m);
        return;
    case REQ_FIND_COORD:
    case REQ_OFFSET_FETCH:
    case REQ_OFFSET_COMMIT: cycle_retry(m); return;
    case REQ_CHECKPOINTS:
        mark_stale(m, META_CHECKPOINTS);
        cycle_retry(m);
        return;
    }
}

static void on_request_timeout(ks_world *world, void *context)
{
    (void)world;
    struct request *r = context;
    struct ks_mirror *m = r->mirror;
    r->timeout = 0;
    struct request done = request_take(m, r);
    request_failed(m, done);
    drive(m);
}

static void on_backoff(ks_world *world, void *context)
{
    (void)world;
    struct part *part = context;
    part->backoff_timer = 0;
    drive(part->mirror);
}

static void on_flush(ks_world *world, void *context)
{
    (void)world;
    struct ks_mirror *m = context;
    m->flush_timer = ks_world_schedule(m->world, m->config->node,
                                       (ks_time_ns)m->config->offset_flush_interval_ns,
                                       KS_TIMER_MIRROR_FLUSH, on_flush, m);
    for (int32_t p = 0; p < m->config->partition_count; p++) {
        m->parts[p].committed_position = m->parts[p].mirrored_next;
    }
    if (m->syncs != NULL) {
        ks_offset_sync_writer_promote_delayed(m->syncs); /* MirrorSourceTask.commit */
    }
    drive(m);
}

/* ---- the loop ------------------------------------------------------------------------- */

/* Whether a fetch of this node is in flight to broker node `node`: the
 * node sends one at a time to a broker, as a consumer does (Kafka's
 * Fetcher sends one request per broker for all its partitions), because a
 * broker keeps one parked fetch per client node and a second would replace
 * the first (core/broker_serve.c S1). */
static bool fetching_from(const struct ks_mirror *m, ks_node_id node)
{
    for (guint i = 0; i < m->requests->len; i++) {
        const struct request *r = g_ptr_array_index(m->requests, i);
        if ((r->kind == REQ_FETCH || r->kind == REQ_SYNCS_FETCH) && r->node == node) {
            return true;
        }
    }
    return false;
}

/* Reads the offset-syncs topic (the checkpoint side): first, so that the
 * source partitions' fetches to the same broker do not starve it. */
static void drive_syncs_fetch(struct ks_mirror *m)
{
    if (m->store == NULL) {
        return;
    }
    int32_t syncs_leader = leader_of(m, META_SYNCS, 0);
    if (!m->syncs_fetching && m->syncs_backoff_timer == 0 && syncs_leader >= 1 &&
        !fetching_from(m, broker_node(m, false, syncs_leader))) {
        m->syncs_fetching = true;
        send_fetch_of(m, REQ_SYNCS_FETCH, m->config->offset_syncs_topic_index, 0, m->syncs_position,
                      syncs_leader);
    }
}

static void drive(struct ks_mirror *m)
{
    if (!m->up || !m->started) {
        return;
    }
    for (int32_t slot = 0; slot < META_COUNT; slot++) {
        struct meta *meta = &m->meta[slot];
        if (meta->topic_index >= 0 && !meta->in_flight && (meta->stale || !meta->known) &&
            meta->retry_timer == 0) {
            send_metadata(m, slot);
        }
    }
    if (m->config->enable_idempotence && m->producer_id < 0 && !m->pid_in_flight) {
        send_init_pid(m);
    }
    drive_syncs_fetch(m);
    for (int32_t p = 0; p < m->config->partition_count; p++) {
        struct part *part = &m->parts[p];
        if (part->state != PART_IDLE || part->backoff_timer != 0) {
            continue;
        }
        if (part->batch != NULL) {
            int32_t leader = leader_of(m, META_TARGET, p);
            bool pid_ready = !m->config->enable_idempotence || m->producer_id >= 0;
            if (leader >= 1 && pid_ready) {
                if (m->config->acks == KS_ACKS_NONE) {
                    send_produce(m, p, leader);
                    /* acks=0: no answer comes; the send is the ack */
                    struct request *r = g_ptr_array_index(m->requests, m->requests->len - 1);
                    request_take(m, r);
                    batch_acked(m, p, -1);
                } else {
                    send_produce(m, p, leader);
                }
            }
            continue;
        }
        int32_t leader = leader_of(m, META_SOURCE, p);
        if (leader >= 1 && !fetching_from(m, broker_node(m, false, leader))) {
            send_fetch(m, p, leader);
        }
    }
    fire_syncs(m);
    drive_checkpoints(m);
}

static void on_receive(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                       const void *message, size_t message_bytes, void *context)
{
    (void)world;
    (void)self;
    struct ks_mirror *m = context;
    bool group_kind = kind >= KS_GROUP_KIND_MIN && kind <= KS_GROUP_KIND_MAX;
    if (!m->up || message_bytes < (group_kind ? sizeof(int32_t) : sizeof(int64_t))) {
        return;
    }
    /* every answer starts with its request's correlation id (the group
     * protocol's is 32 bits) */
    int64_t correlation_id;
    if (group_kind) {
        int32_t id32;
        memcpy(&id32, message, sizeof id32);
        correlation_id = id32;
    } else {
        memcpy(&correlation_id, message, sizeof correlation_id);
    }
    struct request *r = request_find(m, correlation_id, source);
    if (r == NULL) {
        return; /* an answer to a request that timed out */
    }
    const uint8_t *bytes = message;
    if (kind == KS_GROUP_FIND_COORDINATOR_RESPONSE) {
        ks_assert(r->kind == REQ_FIND_COORD);
        on_find_coordinator_response(m, r, bytes, message_bytes);
        drive(m);
        return;
    }
    if (kind == KS_GROUP_OFFSET_FETCH_RESPONSE) {
        ks_assert(r->kind == REQ_OFFSET_FETCH);
        on_offset_fetch_response(m, r, bytes, message_bytes);
        drive(m);
        return;
    }
    if (kind == KS_GROUP_OFFSET_COMMIT_RESPONSE) {
        ks_assert(r->kind == REQ_OFFSET_COMMIT);
        on_offset_commit_response(m, r, bytes, message_bytes);
        drive(m);
        return;
    }
    switch ((enum ks_msg_kind)kind) {
    case KS_MSG_METADATA_RESPONSE:
        ks_assert(r->kind == REQ_METADATA);
        on_metadata_response(m, r, bytes, message_bytes);
        break;
    case KS_MSG_INIT_PRODUCER_ID_RESPONSE:
        ks_assert(r->kind == REQ_INIT_PID);
        on_init_pid_response(m, r, bytes, message_bytes);
        break;
    case KS_MSG_FETCH_RESPONSE:
        ks_assert(r->kind == REQ_FETCH || r->kind == REQ_SYNCS_FETCH);
        if (r->kind == REQ_SYNCS_FETCH) {
            on_syncs_fetch_response(m, r, bytes, message_bytes);
        } else {
            on_fetch_response(m, r, bytes, message_bytes);
        }
        break;
    case KS_MSG_PRODUCE_RESPONSE:
        ks_assert(r->kind == REQ_PRODUCE || r->kind == REQ_SYNC || r->kind == REQ_CHECKPOINTS);
        on_produce_response(m, r, bytes, message_bytes);
        break;
    default: return; /* nothing else is addressed to a client */
    }
    drive(m);
}

/* ---- life cycle ------------------------------------------------------------------------- */

/* The task's periodic timers: the offset flush, and the checkpoint side's
 * emission interval. */
static void arm_periodic(struct ks_mirror *m)
{
    m->flush_timer = ks_world_schedule(m->world, m->config->node,
                                       (ks_time_ns)m->config->offset_flush_interval_ns,
                                       KS_TIMER_MIRROR_FLUSH, on_flush, m);
    if (m->store != NULL) {
        m->emit_timer = ks_world_schedule(m->world, m->config->node,
                                          (ks_time_ns)m->config->emit_checkpoints_interval_ns,
                                          KS_TIMER_MIRROR_EMIT, on_emit, m);
    }
}

static void on_start(ks_world *world, void *context)
{
    (void)world;
    struct ks_mirror *m = context;
    m->start_timer = 0;
    m->started = true;
    arm_periodic(m);
    drive(m);
}

static void reset_state(struct ks_mirror *m)
{
    g_ptr_array_remove_range(m->requests, 0, m->requests->len); /* frees them */
    for (int32_t slot = 0; slot < META_COUNT; slot++) {
        struct meta *meta = &m->meta[slot];
        meta->known = false;
        meta->stale = false;
        meta->in_flight = false;
        meta->retry_timer = 0;
        for (int32_t p = 0; p < meta->partition_count; p++) {
            meta->leader[p] = -1;
        }
    }
    for (int32_t p = 0; p < m->config->partition_count; p++) {
        struct part *part = &m->parts[p];
        part->state = PART_IDLE;
        part->position = part->committed_position;
        part->mirrored_next = part->committed_position;
        part->source_hw = -1;
        if (part->batch != NULL) {
            g_byte_array_unref(part->batch);
            part->batch = NULL;
        }
        g_array_set_size(part->upstream, 0);
        part->sequence_pid = -1;
        part->sequence = 0;
        part->sent_pid = -1;
        part->backoff_timer = 0;
    }
    ks_offset_sync_writer_free(m->syncs);
    m->syncs =
        m->config->offset_syncs_topic_index >= 0
            ? ks_offset_sync_writer_new(m->config->partition_count, m->config->offset_lag_max)
            : NULL;
    m->producer_id = -1;
    m->producer_epoch = -1;
    m->pid_in_flight = false;
    m->start_timer = 0;
    m->flush_timer = 0;
    /* The checkpoint side reads the syncs topic again from its start
     * (OffsetSyncStore.start); the checkpoints it emitted are forgotten
     * (MM2 reads them back from the checkpoints topic: a simplification that
     * may emit a checkpoint twice, never a wrong one). */
    bool checkpoints =
        m->config->checkpoints_topic_index >= 0 && m->config->offset_syncs_topic_index >= 0;
    ks_offset_sync_store_free(m->store);
    m->store = checkpoints ? ks_offset_sync_store_new(m->config->partition_count, true) : NULL;
    m->syncs_position = 0;
    m->syncs_fetching = false;
    m->syncs_read_to_end = false;
    m->syncs_backoff_timer = 0;
    m->emit_timer = 0;
    m->cycle_step = CYCLE_IDLE;
    m->cycle_in_flight = false;
    m->cycle_timer = 0;
    m->cycle_group = 0;
    m->coordinator = -1;
    m->group_sync_due = false;
    m->group_sync_next_ns = ks_world_now_ns(m->world);
    size_t slots = (size_t)m->config->group_count * (size_t)m->config->partition_count;
    for (size_t i = 0; i < slots; i++) {
        m->has_last[i] = false;
    }
}

static void meta_init(struct ks_mirror *m, struct meta *meta, bool target_side, int32_t topic_index,
                      int32_t partition_count)
{
    meta->mirror = m;
    meta->target_side = target_side;
    meta->topic_index = topic_index;
    meta->partition_count = partition_count;
    meta->leader = g_new(int32_t, partition_count > 0 ? partition_count : 1);
}

struct ks_mirror *ks_mirror_new(ks_world *world, const struct ks_mirror_config *config,
                                const struct ks_mirror_observer *observer)
{
    ks_assert(config->partition_count >= 1);
    ks_assert(config->source_broker_count >= 1 && config->target_broker_count >= 1);
    ks_assert(config->max_poll_records >= 1);
    struct ks_mirror *m = g_new0(struct ks_mirror, 1);
    m->world = world;
    m->config = config;
    m->observer = observer;
    m->requests = g_ptr_array_new_with_free_func(g_free);
    meta_init(m, &m->meta[META_SOURCE], false, config->source_topic_index, config->partition_count);
    meta_init(m, &m->meta[META_TARGET], true, config->target_topic_index, config->partition_count);
    meta_init(m, &m->meta[META_SYNCS], false, config->offset_syncs_topic_index, 1);
    meta_init(m, &m->meta[META_CHECKPOINTS], true, config->checkpoints_topic_index, 1);
    ks_assert(config->group_count >= 0);
    size_t slots = (size_t)config->group_count * (size_t)config->partition_count;
    m->cycle_points = g_new0(struct ks_offset_sync, config->partition_count);
    m->cycle_has = g_new0(bool, config->partition_count);
    m->commit_offsets = g_new0(int64_t, config->partition_count);
    m->last = g_new0(struct ks_offset_sync, slots + 1);
    m->has_last = g_new0(bool, slots + 1);
    m->parts = g_new0(struct part, config->partition_count);
    for (int32_t p = 0; p < config->partition_count; p++) {
        m->parts[p].upstream = g_array_new(FALSE, FALSE, sizeof(int64_t));
        m->parts[p].mirror = m;
    }
    reset_state(m);
    m->up = true;
    ks_world_set_receiver(world, config->node, on_receive, m);
    return m;
}

void ks_mirror_start(struct ks_mirror *m)
{
    ks_time_ns now = ks_world_now_ns(m->world);
    ks_time_ns at = (ks_time_ns)m->config->start_ns;
    m->start_timer = ks_world_schedule(m->world, m->config->node, at > now ? at - now : 0,
                                       KS_TIMER_MIRROR_START, on_start, m);
}

void ks_mirror_free(struct ks_mirror *m)
{
    if (m == NULL) {
        return;
    }
    for (guint i = 0; i < m->requests->len; i++) {
        struct request *r = g_ptr_array_index(m->requests, i);
        ks_world_cancel(m->world, r->timeout);
    }
    g_ptr_array_free(m->requests, TRUE);
    for (int32_t slot = 0; slot < META_COUNT; slot++) {
        ks_world_cancel(m->world, m->meta[slot].retry_timer);
        g_free(m->meta[slot].leader);
    }
    for (int32_t p = 0; p < m->config->partition_count; p++) {
        ks_world_cancel(m->world, m->parts[p].backoff_timer);
        if (m->parts[p].batch != NULL) {
            g_byte_array_unref(m->parts[p].batch);
        }
        g_array_free(m->parts[p].upstream, TRUE);
    }
    ks_world_cancel(m->world, m->start_timer);
    ks_world_cancel(m->world, m->flush_timer);
    ks_world_cancel(m->world, m->emit_timer);
    ks_world_cancel(m->world, m->cycle_timer);
    ks_world_cancel(m->world, m->syncs_backoff_timer);
    ks_offset_sync_writer_free(m->syncs);
    ks_offset_sync_store_free(m->store);
    g_free(m->cycle_points);
    g_free(m->cycle_has);
    g_free(m->commit_offsets);
    g_free(m->last);
    g_free(m->has_last);
    g_free(m->parts);
    g_free(m);
}

void ks_mirror_on_crash(struct ks_mirror *m)
{
    /* The world dropped the node's timers; the ids in the state are stale. */
    m->up = false;
    m->started = false;
    reset_state(m);
}

void ks_mirror_on_restart(struct ks_mirror *m)
{
    ks_assert(!m->up);
    reset_state(m);
    m->up = true;
    m->started = true;
    arm_periodic(m);
    drive(m);
}

void ks_mirror_on_broker_down(struct ks_mirror *m, bool target, int32_t broker)
{
    if (!m->up) {
        return;
    }
    ks_node_id node = broker_node(m, target, broker);
    bool any = false;
    for (guint i = 0; i < m->requests->len;) {
        struct request *r = g_ptr_array_index(m->requests, i);
        if (r->node != node) {
            i++;
            continue;
        }
        struct request done = request_take(m, r);
        request_failed(m, done);
        any = true;
    }
    if (any) {
        drive(m);
    }
}

/* ---- queries ------------------------------------------------------------------------------ */

int64_t ks_mirror_mirrored_next(const struct ks_mirror *m, int32_t partition)
{
    ks_assert(partition >= 0 && partition < m->config->partition_count);
    return m->parts[partition].mirrored_next;
}

int64_t ks_mirror_source_hw(const struct ks_mirror *m, int32_t partition)
{
    ks_assert(partition >= 0 && partition < m->config->partition_count);
    return m->parts[partition].source_hw;
}

int64_t ks_mirror_record_count(const struct ks_mirror *m)
{
    return m->record_count;
}

int64_t ks_mirror_sync_count(const struct ks_mirror *m)
{
    return m->sync_count;
}

int64_t ks_mirror_checkpoint_count(const struct ks_mirror *m)
{
    return m->checkpoint_count;
}

int64_t ks_mirror_group_sync_count(const struct ks_mirror *m)
{
    return m->group_sync_count;
}

bool ks_mirror_checkpoint(const struct ks_mirror *m, int32_t group_index, int32_t partition,
                          struct ks_offset_sync *checkpoint_out)
{
    ks_assert(group_index >= 0 && group_index < m->config->group_count);
    ks_assert(partition >= 0 && partition < m->config->partition_count);
    size_t slot = (size_t)group_index * (size_t)m->config->partition_count + (size_t)partition;
    if (!m->has_last[slot]) {
        return false;
    }
    *checkpoint_out = m->last[slot];
    return true;
}

bool ks_mirror_caught_up(const struct ks_mirror *m)
{
    if (!m->up || !m->started) {
        return false;
    }
    for (int32_t p = 0; p < m->config->partition_count; p++) {
        const struct part *part = &m->parts[p];
        if (part->batch != NULL || part->source_hw < 0 || part->mirrored_next < part->source_hw) {
            return false;
        }
    }
    return true;
}

void ks_mirror_check(const struct ks_mirror *m)
{
    int32_t fetches = 0;
    int32_t produces = 0;
    for (int32_t p = 0; p < m->config->partition_count; p++) {
        const struct part *part = &m->parts[p];
        ks_assert(part->committed_position <= part->mirrored_next); /* M1 */
        ks_assert(part->mirrored_next <= part->position);
        if (part->batch != NULL) { /* M2 */
            ks_assert(part->upstream->len > 0);
            int64_t previous = part->mirrored_next - 1;
            for (guint i = 0; i < part->upstream->len; i++) {
                int64_t upstream = g_array_index(part->upstream, int64_t, i);
                ks_assert(upstream > previous);
                previous = upstream;
            }
            ks_assert(previous < part->position);
        } else {
            ks_assert(part->upstream->len == 0);
            ks_assert(part->state != PART_PRODUCING);
        }
        fetches += part->state == PART_FETCHING;
        produces += part->state == PART_PRODUCING;
    }
    int32_t fetch_requests = 0;
    int32_t produce_requests = 0;
    int32_t sync_requests = 0;
    int32_t cycle_requests = 0;
    int32_t syncs_fetches = 0;
    for (guint i = 0; i < m->requests->len; i++) { /* M3 */
        const struct request *r = g_ptr_array_index(m->requests, i);
        if (r->kind == REQ_FETCH) {
            ks_assert(m->parts[r->slot].state == PART_FETCHING);
            fetch_requests++;
        } else if (r->kind == REQ_PRODUCE) {
            ks_assert(m->parts[r->slot].state == PART_PRODUCING);
            produce_requests++;
        } else if (r->kind == REQ_SYNC) {
            sync_requests++;
        } else if (r->kind == REQ_SYNCS_FETCH) {
            syncs_fetches++;
        } else if (r->kind == REQ_FIND_COORD || r->kind == REQ_OFFSET_FETCH ||
                   r->kind == REQ_CHECKPOINTS || r->kind == REQ_OFFSET_COMMIT) {
            cycle_requests++;
        }
    }
    ks_assert(cycle_requests == (m->cycle_in_flight ? 1 : 0)); /* M5 */
    ks_assert(syncs_fetches == (m->syncs_fetching ? 1 : 0));
    ks_assert(fetch_requests == fetches);
    ks_assert(produce_requests == produces);
    if (m->syncs != NULL) { /* M4 */
        ks_assert(sync_requests == ks_offset_sync_writer_outstanding_count(m->syncs));
        ks_assert(sync_requests <= KS_MIRROR_OUTSTANDING_SYNCS_MAX);
    }
}
