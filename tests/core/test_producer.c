/*
** tests/core/test_producer.c: the producer client against a fake broker.
**
** Goal: the producer batches, retries, times out and numbers its records as
** Kafka's Java producer does with the same settings, and ends every record
** exactly once. Method: a test world with B brokers whose nodes run a small
** fake broker (a receiver registered here): it answers Metadata from a table
** the test controls, hands out a producer id, appends Produce batches to an
** in-memory per-partition log (reading the identity header of each record),
** applies Kafka's idempotence sequence checks, and can be told to drop
** responses, stay silent or refuse as a non-leader. The observer collects the
** record outcomes. Each test drives the simulated clock and checks the log and
** the outcomes: batching by size and linger, retry backoff bounds, the ack
** path, a lost response (a duplicate without idempotence, none with it, and the
** resent batch keeps its sequence), request timeouts, delivery timeouts ending
** records as unknown, NOT_LEADER_OR_FOLLOWER forcing a metadata refresh,
** reordering with 5 in flight, acks=0, buffer.memory blocking and crashes,
** and with max.in.flight 1 the muting of a partition in flight across a
** leader change (until its request's timeout, a reset, not its batch's
** delivery timeout).
** The per-record fast path (a send() that only adds to an open batch runs no
** sender pass) is checked from outside: keys of every width are encoded,
** sized and reported exactly as sent, and a leader that crashes while records
** only add to an open batch is noticed at the next send(), not at linger.ms.
*/
#include <inttypes.h>
#include <stdio.h>

#include "../../core/base.h"
#include "../../core/batch.h"
#include "../../core/partitioner.h"
#include "../../core/producer.h"
#include "../../core/proto.h"
#include "../testlib.h"
#include "cluster_fixture.h"

#include <stdlib.h>
#include <string.h>

#define MS                  KS_NS_PER_MS
#define FAKE_PARTITIONS_MAX 8
#define FAKE_BROKERS_MAX    3
#define FAKE_LOG_MAX        20000

struct fake_entry {
    int64_t seq;  /* from the identity header */
    char key[32]; /* "" for null */
};

struct fake_batch_info { /* idempotence: the last batches per partition */
    int32_t first_sequence;
    int32_t last_sequence;
    int64_t base_offset;
};

struct fake_partition {
    struct fake_entry *log; /* FAKE_LOG_MAX */
    int64_t leo;
    int64_t producer_id; /* -1: no state */
    int16_t epoch;
    int32_t last_sequence;
    struct fake_batch_info recent[5];
    int32_t recent_count;
};

struct fake_cluster {
    int32_t broker_count;
    int32_t partition_count;
    int32_t leader[FAKE_PARTITIONS_MAX]; /* metadata table */
    int32_t epoch[FAKE_PARTITIONS_MAX];  /* ... its leader epochs */
    bool leader_hint;                    /* KIP-951: NOT_LEADER_OR_FOLLOWER names the leader */
    bool metadata_silent;                /* metadata requests get no answer */
    int32_t metadata_stale_leader;       /* > 0: metadata names this leader in epoch 0 */
    struct fake_partition parts[FAKE_PARTITIONS_MAX];
    /* faults */
    int32_t drop_responses;            /* drop the next N produce responses (after appending) */
    bool silent[FAKE_BROKERS_MAX + 1]; /* no append, no answer */
    int16_t refuse_error[FAKE_BROKERS_MAX + 1]; /* answer every produce with this error */
    int32_t
        swallow[FAKE_PARTITIONS_MAX]; /* the next N batches of a partition: no append, no answer */
    /* observations */
    int32_t produce_requests; /* batches: one PRODUCE_REQUEST each, alone or in a bundle */
    int32_t bundles;          /* PRODUCE_REQUESTS messages */
    int32_t metadata_requests;
    int32_t init_pid_requests;
    int32_t connects;            /* ApiVersions requests: connection attempts */
    int32_t connect_broker[256]; /* which broker got each */
    int32_t batch_count;
    int32_t batch_records[4096];
    int64_t batch_bytes[4096];
    ks_time_ns batch_arrival_ns[4096];
    int32_t batch_sequence[4096];
    int32_t batch_partition[4096];
    int32_t broker_of_batch[4096];
    int32_t duplicate_answers;
    int32_t metadata_broker[256]; /* which broker got each metadata request */
    int32_t out_of_order_answers;
};

struct fake_node {
    struct fake_cluster *cluster;
    int32_t broker_id;
};

struct outcomes {
    int64_t acked, failed, unknown;
    int64_t events;
    int64_t *offset_by_seq; /* -2: not reported */
    int32_t *partition_by_seq;
    int32_t *reports_by_seq;
    ks_time_ns *acked_ns_by_seq;
    ks_time_ns *sent_ns_by_seq;
    char (*key_by_seq)[32]; /* as reported; "" for a null key */
    int64_t capacity;
};

struct fixture {
    struct ks_test_env env;
    struct ks_cluster_config cluster;
    struct ks_topic_config *topic;
    struct ks_producer_config config;
    struct ks_cluster_spec spec;
    struct ks_cluster_observer observer;
    struct outcomes out;
    struct fake_cluster *fake;
    struct fake_node nodes[FAKE_BROKERS_MAX + 1];
    struct ks_producer *producer;
};

/* ---- the fake broker ------------------------------------------------------ */

static void fake_send(ks_world *world, ks_node_id self, ks_node_id target, uint32_t kind,
                      const void *message, size_t bytes)
{
    ks_world_send(world, self, target, kind, message, bytes);
}

static void fake_metadata(struct fake_cluster *fake, ks_world *world, struct fake_node *node,
                          ks_node_id source, const struct ks_metadata_request *request)
{
    if (fake->metadata_requests < 256) {
        fake->metadata_broker[fake->metadata_requests] = node->broker_id;
    }
    fake->metadata_requests++;
    size_t head = ks_proto_metadata_bytes(fake->broker_count);
    size_t bytes = head + (size_t)fake->partition_count * sizeof(struct ks_metadata_partition);
    uint8_t *message = calloc(1, bytes);
    struct ks_metadata_response response;
    memset(&response, 0, sizeof response);
    response.correlation_id = request->correlation_id;
    response.topic_index = request->topic_index;
    response.answering_broker = node->broker_id;
    response.broker_count = fake->broker_count;
    for (int32_t b = 0; b < fake->broker_count; b++) {
        response.broker_alive[b] = 1;
    }
    response.partition_count = fake->partition_count;
    ks_proto_metadata_encode(&response, message);
    struct ks_metadata_partition *entries = (struct ks_metadata_partition *)(message + head);
    for (int32_t i = 0; i < fake->partition_count; i++) {
        entries[i].partition = i;
        entries[i].leader = fake->leader[i];
        entries[i].leader_epoch = fake->epoch[i];
        if (fake->metadata_stale_leader > 0) {
            entries[i].leader = fake->metadata_stale_leader;
            entries[i].leader_epoch = 0;
        }
        entries[i].error_code = fake->leader[i] < 0 ? KS_ERR_LEADER_NOT_AVAILABLE : KS_ERR_NONE;
    }
    fake_send(world, (ks_node_id)node->broker_id, source, KS_MSG_METADATA_RESPONSE, message, bytes);
    free(message);
}

/* Kafka's ProducerAppendInfo checks, reduced to one producer. */
static int16_t fake_check_sequence(struct fake_partition *part, const struct ks_batch_view *batch,
                                   int64_t *duplicate_offset)
{
    if (batch->producer_id < 0) {
        return KS_ERR_NONE;
    }
    int32_t first = batch->base_sequence;
    int32_t last = batch->base_sequence + batch->last_offset_delta;
    if (part->producer_id != batch->producer_id) {
        return KS_ERR_NONE; /* no state: any sequence */
    }
    if (batch->producer_epoch < part->epoch) {
        return KS_ERR_INVALID_PRODUCER_EPOCH;
    }
    if (batch->producer_epoch > part->epoch) {
        return first == 0 ? KS_ERR_NONE : KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
    }
    for (int32_t i = 0; i < part->recent_count; i++) {
        if (part->recent[i].first_sequence == first && part->recent[i].last_sequence == last) {
            *duplicate_offset = part->recent[i].base_offset;
            return KS_ERR_DUPLICATE_SEQUENCE_NUMBER;
        }
    }
    return first == part->last_sequence + 1 ? KS_ERR_NONE : KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
}

static void fake_remember(struct fake_partition *part, const struct ks_batch_view *batch,
                          int64_t base_offset)
{
    if (batch->producer_id < 0) {
        return;
    }
    if (part->producer_id != batch->producer_id || part->epoch != batch->producer_epoch) {
        part->recent_count = 0;
    }
    part->producer_id = batch->producer_id;
    part->epoch = batch->producer_epoch;
    part->last_sequence = batch->base_sequence + batch->last_offset_delta;
    if (part->recent_count == 5) {
        memmove(&part->recent[0], &part->recent[1], 4 * sizeof(part->recent[0]));
        part->recent_count = 4;
    }
    part->recent[part->recent_count++] =
        (struct fake_batch_info){ batch->base_sequence, part->last_sequence, base_offset };
}

static void fake_append(struct fake_partition *part, const struct ks_batch_view *batch)
{
    struct ks_record_iter iter;
    struct ks_record_view record;
    ks_record_iter_init(&iter, batch);
    while (ks_record_iter_next(&iter, &record, NULL)) {
        CU_ASSERT_FATAL(part->leo < FAKE_LOG_MAX);
        struct fake_entry *entry = &part->log[part->leo++];
        memset(entry, 0, sizeof(*entry));
        entry->seq = -1;
        CU_ASSERT_EQUAL(record.header_count, 1);
        if (record.header_count >= 1) {
            char text[96] = { 0 };
            int32_t n = record.headers[0].value_bytes;
            CU_ASSERT(record.headers[0].key_bytes == 7 &&
                      memcmp(record.headers[0].key, KS_IDENTITY_HEADER, 7) == 0);
            if (n > 0 && n < 95) {
                memcpy(text, record.headers[0].value, (size_t)n);
                const char *colon = strrchr(text, ':');
                CU_ASSERT_PTR_NOT_NULL(colon);
                if (colon != NULL) {
                    entry->seq = strtoll(colon + 1, NULL, 10);
                }
            }
        }
        if (record.key != NULL && record.key_bytes > 0 && record.key_bytes < 31) {
            memcpy(entry->key, record.key, (size_t)record.key_bytes);
        }
    }
}

static void fake_produce(struct fake_cluster *fake, ks_world *world, struct fake_node *node,
                         ks_node_id source, const uint8_t *message, size_t bytes)
{
    fake->produce_requests++;
    const struct ks_produce_request *request = (const struct ks_produce_request *)message;
    CU_ASSERT_FATAL(bytes == sizeof(*request) + request->batch_bytes);
    if (fake->silent[node->broker_id]) {
        return;
    }
    struct ks_batch_view batch;
    size_t batch_bytes = 0;
    CU_ASSERT_FATAL(ks_batch_parse(message + sizeof(*request), request->batch_bytes, &batch,
                                   &batch_bytes) == KS_BATCH_OK);
    int32_t n = fake->batch_count++;
    CU_ASSERT_FATAL(n < 4096);
    fake->batch_records[n] = batch.record_count;
    fake->batch_bytes[n] = (int64_t)batch_bytes;
    fake->batch_arrival_ns[n] = ks_world_now_ns(world);
    fake->batch_sequence[n] = batch.base_sequence;
    fake->batch_partition[n] = request->partition;
    fake->broker_of_batch[n] = node->broker_id;
    if (fake->swallow[request->partition] > 0) {
        fake->swallow[request->partition]--;
        return;
    }

    struct ks_produce_response response;
    memset(&response, 0, sizeof(response));
    response.correlation_id = request->correlation_id;
    response.topic_index = request->topic_index;
    response.partition = request->partition;
    response.base_offset = -1;
    response.current_leader_id = -1;
    response.current_leader_epoch = -1;
    struct fake_partition *part = &fake->parts[request->partition];
    int16_t error = fake->refuse_error[node->broker_id];
    if (error == KS_ERR_NONE && fake->leader[request->partition] != node->broker_id) {
        error = KS_ERR_NOT_LEADER_OR_FOLLOWER;
        if (fake->leader_hint) {
            response.current_leader_id = fake->leader[request->partition];
            response.current_leader_epoch = fake->epoch[request->partition];
        }
    }
    if (error == KS_ERR_NONE) {
        int64_t duplicate_offset = -1;
        error = fake_check_sequence(part, &batch, &duplicate_offset);
        if (error == KS_ERR_DUPLICATE_SEQUENCE_NUMBER) {
            /* Kafka answers a resend of a recent batch with its offset */
            fake->duplicate_answers++;
            error = KS_ERR_NONE;
            response.base_offset = duplicate_offset;
        } else if (error == KS_ERR_NONE) {
            response.base_offset = part->leo;
            fake_remember(part, &batch, part->leo);
            fake_append(part, &batch);
        } else if (error == KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER) {
            fake->out_of_order_answers++;
        }
    }
    response.error_code = error;
    if (request->acks == KS_ACKS_NONE) {
        return;
    }
    if (fake->drop_responses > 0) {
        fake->drop_responses--;
        return;
    }
    fake_send(world, (ks_node_id)node->broker_id, source, KS_MSG_PRODUCE_RESPONSE, &response,
              sizeof(response));
}

static void fake_receive(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                         const void *message, size_t message_bytes, void *context)
{
    struct fake_node *node = context;
    struct fake_cluster *fake = node->cluster;
    CU_ASSERT_EQUAL((int32_t)self, node->broker_id);
    switch (kind) {
    case KS_MSG_METADATA_REQUEST:
        CU_ASSERT_FATAL(message_bytes == sizeof(struct ks_metadata_request));
        if (!fake->silent[node->broker_id] && !fake->metadata_silent) {
            fake_metadata(fake, world, node, source, message);
        } else if (fake->metadata_requests < 256) {
            fake->metadata_broker[fake->metadata_requests++] = node->broker_id;
        }
        break;
    case KS_MSG_INIT_PRODUCER_ID_REQUEST: {
        CU_ASSERT_FATAL(message_bytes == sizeof(struct ks_init_producer_id_request));
        fake->init_pid_requests++;
        if (fake->silent[node->broker_id]) {
            break;
        }
        const struct ks_init_producer_id_request *request = message;
        struct ks_init_producer_id_response response;
        memset(&response, 0, sizeof(response));
        response.correlation_id = request->correlation_id;
        response.producer_id = 1000 + fake->init_pid_requests;
        response.producer_epoch = 0;
        fake_send(world, self, source, KS_MSG_INIT_PRODUCER_ID_RESPONSE, &response,
                  sizeof(response));
        break;
    }
    case KS_MSG_PRODUCE_REQUEST:
        fake_produce(fake, world, node, source, message, message_bytes);
        break;
    case KS_MSG_PRODUCE_REQUESTS: { /* a request of several partitions: each batch */
        size_t at = 0;
        const uint8_t *entry = NULL;
        size_t entry_bytes = 0;
        fake->bundles++;
        while (ks_proto_bundle_next(message, message_bytes, &at, &entry, &entry_bytes)) {
            fake_produce(fake, world, node, source, entry, entry_bytes);
        }
        break;
    }
    case KS_MSG_API_VERSIONS_REQUEST: {
        /* A new connection; a silent broker (cut off) never answers. */
        CU_ASSERT_FATAL(message_bytes == sizeof(struct ks_api_versions_request));
        if (fake->connects < 256) {
            fake->connect_broker[fake->connects] = node->broker_id;
        }
        fake->connects++;
        if (fake->silent[node->broker_id]) {
            break;
        }
        const struct ks_api_versions_request *request = message;
        struct ks_api_versions_response response;
        memset(&response, 0, sizeof(response));
        response.correlation_id = request->correlation_id;
        fake_send(world, self, source, KS_MSG_API_VERSIONS_RESPONSE, &response, sizeof(response));
        break;
    }
    default: CU_FAIL("unexpected message kind");
    }
}

/* ---- the observer ----------------------------------------------------------- */

static void on_record(void *context, const struct ks_record_outcome *outcome)
{
    struct outcomes *out = context;
    CU_ASSERT_FATAL(outcome->seq >= 0 && outcome->seq < out->capacity);
    out->reports_by_seq[outcome->seq]++;
    out->offset_by_seq[outcome->seq] = outcome->offset;
    out->partition_by_seq[outcome->seq] = outcome->partition;
    out->acked_ns_by_seq[outcome->seq] = outcome->acked_ns;
    out->sent_ns_by_seq[outcome->seq] = outcome->sent_ns;
    if (outcome->key != NULL) {
        CU_ASSERT(strlen(outcome->key) < sizeof(out->key_by_seq[0]));
        snprintf(out->key_by_seq[outcome->seq], sizeof(out->key_by_seq[0]), "%s", outcome->key);
    }
    CU_ASSERT(outcome->acked_ns >= outcome->sent_ns);
    switch (outcome->outcome) {
    case KS_OUTCOME_ACKED: out->acked++; break;
    case KS_OUTCOME_FAILED: out->failed++; break;
    case KS_OUTCOME_UNKNOWN: out->unknown++; break;
    }
}

static void on_event(void *context, const struct ks_cluster_event *event)
{
    struct outcomes *out = context;
    CU_ASSERT_EQUAL(event->kind, KS_EV_PRODUCER_ERROR);
    CU_ASSERT_EQUAL(event->producer_index, 0);
    CU_ASSERT_NOT_EQUAL(event->reason, KS_REASON_NONE);
    out->events++;
}

/* ---- fixture ------------------------------------------------------------------ */

/* Kafka's defaults (core/config.c): acks=all, idempotent, linger 5 ms, ...;
 * 100 records at 1000/s, null keys, 100-byte values. */
static void default_config(struct ks_producer_config *config)
{
    ks_producer_config_defaults(config);
    snprintf(config->name, sizeof(config->name), "p1");
    config->count = 100;
    config->start_jitter_ns = 0; /* the tests assert exact send times */
}

/* Sets up the world and the fake brokers; call fixture_start after
 * adjusting f->config and the fake cluster. */
static void fixture_init(struct fixture *f, int32_t broker_count, int32_t partition_count)
{
    memset(f, 0, sizeof(*f));
    ks_test_env_init(&f->env, 42, (uint32_t)(broker_count + 3));
    f->cluster.broker_count = broker_count;
    f->cluster.client_leader_epochs = true;    /* KIP-320, as the key table's default */
    f->cluster.client_leader_discovery = true; /* KIP-951 */
    f->topic = calloc(1, sizeof(*f->topic));
    snprintf(f->topic->name, sizeof(f->topic->name), "orders");
    f->topic->partition_count = partition_count;
    f->topic->replication_factor = 1;
    default_config(&f->config);
    f->spec.cluster = &f->cluster;
    f->spec.topics = f->topic;
    f->spec.topic_count = 1;
    f->spec.producers = &f->config;
    f->spec.producer_count = 1;
    f->fake = calloc(1, sizeof(*f->fake));
    f->fake->broker_count = broker_count;
    f->fake->partition_count = partition_count;
    for (int32_t i = 0; i < partition_count; i++) {
        f->fake->leader[i] = 1 + i % broker_count;
        f->fake->parts[i].log = calloc(FAKE_LOG_MAX, sizeof(struct fake_entry));
        f->fake->parts[i].producer_id = -1;
    }
    for (int32_t b = 1; b <= broker_count; b++) {
        f->nodes[b].cluster = f->fake;
        f->nodes[b].broker_id = b;
        ks_world_set_receiver(f->env.world, (ks_node_id)b, fake_receive, &f->nodes[b]);
    }
    f->out.capacity = FAKE_LOG_MAX;
    f->out.offset_by_seq = calloc(FAKE_LOG_MAX, sizeof(int64_t));
    f->out.partition_by_seq = calloc(FAKE_LOG_MAX, sizeof(int32_t));
    f->out.reports_by_seq = calloc(FAKE_LOG_MAX, sizeof(int32_t));
    f->out.acked_ns_by_seq = calloc(FAKE_LOG_MAX, sizeof(ks_time_ns));
    f->out.sent_ns_by_seq = calloc(FAKE_LOG_MAX, sizeof(ks_time_ns));
    f->out.key_by_seq = calloc(FAKE_LOG_MAX, sizeof(f->out.key_by_seq[0]));
    f->observer.context = &f->out;
    f->observer.on_record = on_record;
    f->observer.on_event = on_event;
}

/* The producer's invariants after every event, not only between the 1 ms
 * steps: P10 (the sender's ready index places every partition that is not
 * marked dirty as its head batch says) fails at the first event after a
 * change that did not mark its partition. */
static void check_after_event(ks_world *world, void *context)
{
    (void)world;
    struct fixture *f = context;
    if (f->producer != NULL) {
        ks_producer_check(f->producer);
    }
}

static void fixture_start(struct fixture *f)
{
    f->producer = ks_producer_new(f->env.world, &f->spec, 0, &f->observer);
    ks_world_set_after_event(f->env.world, check_after_event, f);
    ks_producer_start(f->producer);
}

/* Runs the world in 1 ms steps, checking the producer's invariants. */
static void fixture_run(struct fixture *f, ks_time_ns until_ns)
{
    ks_time_ns now = ks_world_now_ns(f->env.world);
    while (now < until_ns) {
        now = now + MS < until_ns ? now + MS : until_ns;
        ks_world_run_until(f->env.world, now);
        ks_producer_check(f->producer);
    }
}

/* P1 from outside: every record sent was reported exactly once. */
static void check_each_record_once(struct fixture *f)
{
    int64_t sent = ks_producer_sent_count(f->producer);
    CU_ASSERT_EQUAL(f->out.acked + f->out.failed + f->out.unknown, sent);
    for (int64_t seq = 0; seq < sent; seq++) {
        CU_ASSERT_EQUAL(f->out.reports_by_seq[seq], 1);
    }
    CU_ASSERT_TRUE(ks_producer_idle(f->producer));
    CU_ASSERT_EQUAL(ks_producer_acked_count(f->producer), f->out.acked);
}

/* Copies of each seq across all partitions of the fake log. */
static int64_t fake_duplicates(const struct fake_cluster *fake)
{
    int64_t duplicates = 0;
    int32_t *seen = calloc(FAKE_LOG_MAX, sizeof(int32_t));
    for (int32_t i = 0; i < fake->partition_count; i++) {
        for (int64_t o = 0; o < fake->parts[i].leo; o++) {
            int64_t seq = fake->parts[i].log[o].seq;
            if (seq >= 0 && seq < FAKE_LOG_MAX && seen[seq]++ > 0) {
                duplicates++;
            }
        }
    }
    free(seen);
    return duplicates;
}

/* Records that appear after a record with a higher seq in one partition. */
static int64_t fake_reordered(const struct fake_cluster *fake)
{
    int64_t reordered = 0;
    for (int32_t i = 0; i < fake->partition_count; i++) {
        int64_t highest = -1;
        for (int64_t o = 0; o < fake->parts[i].leo; o++) {
            int64_t seq = fake->parts[i].log[o].seq;
            if (seq < highest) {
                reordered++;
            }
            highest = seq > highest ? seq : highest;
        }
    }
    return reordered;
}

static void fixture_deinit(struct fixture *f)
{
    ks_world_set_after_event(f->env.world, NULL, NULL);
    ks_producer_free(f->producer);
    ks_test_env_deinit(&f->env);
    for (int32_t i = 0; i < f->fake->partition_count; i++) {
        free(f->fake->parts[i].log);
    }
    free(f->fake);
    free(f->topic);
    free(f->out.offset_by_seq);
    free(f->out.partition_by_seq);
    free(f->out.reports_by_seq);
    free(f->out.acked_ns_by_seq);
    free(f->out.sent_ns_by_seq);
    free(f->out.key_by_seq);
}

/* ---- tests -------------------------------------------------------------------- */

static void test_record_size_matches_builder(void)
{
    /* The accumulator's size accounting must equal what the codec writes. */
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, 1000, -1, -1, -1);
    size_t expected = KS_BATCH_HEADER_BYTES;
    const char *header_value = "p1:123456";
    struct ks_header_view header = { (const uint8_t *)KS_IDENTITY_HEADER, 7,
                                     (const uint8_t *)header_value, 9 };
    uint8_t value[300] = { 0 };
    for (int32_t i = 0; i < 20; i++) {
        int64_t ts = 1000 + i * 37;
        const char *key = i % 3 == 0 ? NULL : "key-77";
        int32_t key_bytes = key ? 6 : -1;
        int32_t value_bytes = i * 15;
        ks_batch_builder_add(&builder, ts, key, key_bytes, value, value_bytes, &header, 1);
        expected += ks_producer_record_size_bytes(i, ts - 1000, key_bytes, value_bytes, 7, 9);
        CU_ASSERT_EQUAL(ks_batch_builder_size(&builder), expected);
    }
    ks_batch_builder_deinit(&builder);
}

/* The same at every varint length boundary: timestamp deltas of either sign
 * and offset deltas, key, value and header lengths whose zigzag codes need
 * 1, 2, 3 and 4 bytes (63/64 and 8191/8192 are where a length's code grows),
 * and a record long enough that its own length varint takes 3 bytes. */
static void test_record_size_at_varint_boundaries(void)
{
    static const int64_t deltas[] = {
        0,    1,    -1,    63,      64,      -64,           -65,
        8191, 8192, -8193, 1048575, 1048576, -1000000000LL, INT64_C(1) << 40
    };
    static const int32_t lengths[] = { -1, 0, 1, 63, 64, 65, 8191, 8192, 20000 };
    uint8_t *bytes = g_malloc0(20000);
    for (size_t d = 0; d < G_N_ELEMENTS(deltas); d++) {
        for (size_t k = 0; k < G_N_ELEMENTS(lengths); k++) {
            int32_t key_bytes = lengths[k];
            int32_t value_bytes = lengths[(k + d) % G_N_ELEMENTS(lengths)];
            int32_t header_value_bytes = lengths[(k + 2 * d) % G_N_ELEMENTS(lengths)];
            if (header_value_bytes < 0) {
                header_value_bytes = 0; /* the identity header always has a value */
            }
            int32_t offset_delta = (int32_t)(d * 1000 + k * 300);
            struct ks_header_view header = { (const uint8_t *)KS_IDENTITY_HEADER, 7, bytes,
                                             header_value_bytes };
            struct ks_batch_builder builder;
            ks_batch_builder_init(&builder, 5000, -1, -1, -1);
            ks_batch_builder_add_at(&builder, offset_delta, 5000 + deltas[d],
                                    key_bytes < 0 ? NULL : bytes, key_bytes,
                                    value_bytes < 0 ? NULL : bytes, value_bytes, &header, 1);
            size_t expected = KS_BATCH_HEADER_BYTES +
                              ks_producer_record_size_bytes(offset_delta, deltas[d], key_bytes,
                                                            value_bytes, 7, header_value_bytes);
            CU_ASSERT_EQUAL(ks_batch_builder_size(&builder), expected);
            ks_batch_builder_deinit(&builder);
        }
    }
    g_free(bytes);
}

static void test_retry_backoff_bounds(void)
{
    int64_t initial = 100 * MS, max = 1000 * MS;
    uint64_t x = 99;
    for (int32_t retry = 1; retry <= 8; retry++) {
        uint64_t term = (uint64_t)initial << (retry - 1);
        if (term > (uint64_t)max) {
            term = (uint64_t)max;
        }
        ks_time_ns low = KS_TIME_NEVER, high = 0;
        for (int i = 0; i < 2000; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            ks_time_ns b = ks_producer_retry_backoff_ns(initial, max, retry, x >> 11);
            low = b < low ? b : low;
            high = b > high ? b : high;
            CU_ASSERT(b >= term * 8 / 10);
            CU_ASSERT(b <= term * 12 / 10);
            CU_ASSERT(b <= (uint64_t)max);
        }
        /* the jitter really spreads: about +-20 % */
        CU_ASSERT(low < term * 82 / 100);
        if (term * 12 / 10 <= (uint64_t)max) {
            CU_ASSERT(high > term * 118 / 100);
        }
    }
    /* max <= initial: constant, as Kafka's ExponentialBackoff */
    CU_ASSERT_EQUAL(ks_producer_retry_backoff_ns(100 * MS, 50 * MS, 3, 12345), 100 * MS);
}

static void test_ack_path_keyed(void)
{
    struct fixture f;
    fixture_init(&f, 2, 4);
    f.config.key_count = 50;
    f.config.count = 300;
    fixture_start(&f);
    fixture_run(&f, 2 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked, 300);
    CU_ASSERT_EQUAL(f.out.failed + f.out.unknown, 0);
    CU_ASSERT_EQUAL(f.fake->init_pid_requests, 1);
    CU_ASSERT_EQUAL(ks_producer_id(f.producer), 1001);
    /* every record is in the log at the offset reported, at the partition
     * murmur2 gives for its key */
    int64_t total = 0;
    for (int32_t i = 0; i < 4; i++) {
        for (int64_t o = 0; o < f.fake->parts[i].leo; o++) {
            const struct fake_entry *entry = &f.fake->parts[i].log[o];
            CU_ASSERT_FATAL(entry->seq >= 0 && entry->seq < 300);
            CU_ASSERT_EQUAL(f.out.offset_by_seq[entry->seq], o);
            CU_ASSERT_EQUAL(f.out.partition_by_seq[entry->seq], i);
            CU_ASSERT_EQUAL(ks_partitioner_key_partition(entry->key, strlen(entry->key), 4), i);
            CU_ASSERT(strncmp(entry->key, "key-", 4) == 0);
            total++;
        }
    }
    CU_ASSERT_EQUAL(total, 300);
    CU_ASSERT_EQUAL(fake_duplicates(f.fake), 0);
    CU_ASSERT_EQUAL(fake_reordered(f.fake), 0);
    /* sequences of each partition's batches start at 0 and are contiguous */
    int32_t next_sequence[4] = { 0 };
    for (int32_t n = 0; n < f.fake->batch_count; n++) {
        int32_t part = f.fake->batch_partition[n];
        CU_ASSERT_EQUAL(f.fake->batch_sequence[n], next_sequence[part]);
        next_sequence[part] += f.fake->batch_records[n];
    }
    check_each_record_once(&f);
    fixture_deinit(&f);
}

static void test_linger_batching(void)
{
    /* 100 records/s, linger 50 ms. The first send() blocks until metadata
     * arrives (waitOnMetadata: a connection, its ApiVersions round trip of
     * 2 ms, then the Metadata round trip), so the first batch opens at 4 ms
     * and leaves at 54 ms (the connection is ready) with the records of
     * t = 0 (appended at 4), 10, 20, 30, 40 and 50 ms, and arrives 1 ms
     * later. */
    struct fixture f;
    fixture_init(&f, 1, 1);
    f.config.rate_per_s = 100;
    f.config.count = 20;
    f.config.linger_ns = 50 * MS;
    f.config.enable_idempotence = false;
    fixture_start(&f);
    fixture_run(&f, 1 * KS_NS_PER_S);
    CU_ASSERT_FATAL(f.fake->batch_count >= 2);
    CU_ASSERT_EQUAL(f.fake->batch_records[0], 6);
    CU_ASSERT_EQUAL(f.fake->batch_arrival_ns[0], 55 * MS);
    /* later batches: opened by one record, closed by linger: 5 records */
    CU_ASSERT_EQUAL(f.fake->batch_records[1], 5);
    CU_ASSERT_EQUAL(f.fake->batch_arrival_ns[1], 111 * MS);
    int32_t records = 0;
    for (int32_t n = 0; n < f.fake->batch_count; n++) {
        records += f.fake->batch_records[n];
        CU_ASSERT(f.fake->batch_records[n] <= 6);
    }
    CU_ASSERT_EQUAL(records, 20);
    CU_ASSERT_EQUAL(f.out.acked, 20);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

/* RecordAccumulator.drainBatchesForOneNode: once a broker is ready (one of
 * its partitions' batches lingered long enough), a request takes the first
 * batch of every partition it leads, young or not. One broker, 4 partitions,
 * keyed records every 10 ms and linger 50 ms: most batches leave with
 * another partition's, before their own linger.ms has passed; none waits
 * past it. Drained only when sendable, no batch left early (0 of 49 here)
 * and each request carried one batch. */
static void test_drain_takes_young_batches(void)
{
    struct fixture f;
    fixture_init(&f, 1, 4);
    f.config.rate_per_s = 100;
    f.config.count = 100;
    f.config.key_count = 50;
    f.config.linger_ns = 50 * MS;
    f.config.enable_idempotence = false;
    fixture_start(&f);
    fixture_run(&f, 2 * KS_NS_PER_S);
    CU_ASSERT_EQUAL_FATAL(f.out.acked, 100);
    int64_t next_offset[4] = { 0 };
    int32_t early = 0;
    int32_t requests = 0;
    int32_t several = 0;
    for (int32_t n = 0; n < f.fake->batch_count; n++) {
        int32_t part = f.fake->batch_partition[n];
        const struct fake_entry *first = &f.fake->parts[part].log[next_offset[part]];
        next_offset[part] += f.fake->batch_records[n];
        /* its first record's send() (the metadata wait holds the first ones to 4 ms) */
        ks_time_ns opened = f.out.sent_ns_by_seq[first->seq];
        opened = opened < 4 * MS ? 4 * MS : opened;
        ks_time_ns arrival = f.fake->batch_arrival_ns[n];
        CU_ASSERT(arrival <= opened + 50 * MS + 1 * MS); /* linger.ms and the 1 ms link */
        early += arrival < opened + 50 * MS;
        bool first_of_request = n == 0 || f.fake->batch_arrival_ns[n - 1] != arrival;
        requests += first_of_request;
        /* a request of several batches is one PRODUCE_REQUESTS message */
        several += !first_of_request && (n == 1 || f.fake->batch_arrival_ns[n - 2] != arrival);
    }
    CU_ASSERT(early * 2 > f.fake->batch_count);
    CU_ASSERT(requests * 2 < f.fake->batch_count);
    CU_ASSERT(several > 0);
    CU_ASSERT_EQUAL(f.fake->bundles, several);
    /* every batch the fake broker took was counted as sent, once */
    CU_ASSERT_EQUAL(ks_producer_batches_sent_count(f.producer), f.fake->batch_count);
    if (getenv("KS_TEST_VERBOSE") != NULL) {
        printf("%d batches, %d early, %d requests\n", f.fake->batch_count, early, requests);
    }
    check_each_record_once(&f);
    fixture_deinit(&f);
}

static void test_size_batching(void)
{
    /* batch.size 500 with ~130-byte records: a batch closes when the 4th
     * record does not fit, and goes at once although linger is 10 s. */
    struct fixture f;
    fixture_init(&f, 1, 1);
    f.config.batch_size_bytes = 500;
    f.config.linger_ns = 10000 * MS;
    f.config.count = 31;
    fixture_start(&f);
    fixture_run(&f, 100 * MS);
    CU_ASSERT_EQUAL(f.fake->batch_count, 10);
    for (int32_t n = 0; n < f.fake->batch_count; n++) {
        CU_ASSERT_EQUAL(f.fake->batch_records[n], 3);
        CU_ASSERT(f.fake->batch_bytes[n] <= 500);
        /* a batch leaves when the record after it arrives (every 1 ms) */
        CU_ASSERT(f.fake->batch_arrival_ns[n] <= (ks_time_ns)(3 * n + 5) * MS);
    }
    CU_ASSERT_EQUAL(f.out.acked, 30);
    /* the last record waits for linger.ms */
    fixture_run(&f, 11 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked, 31);
    CU_ASSERT_EQUAL(f.fake->batch_records[10], 1);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

static void lost_response_run(bool idempotent, int64_t *duplicates_out, int32_t *sequences_out)
{
    struct fixture f;
    fixture_init(&f, 1, 1);
    f.config.enable_idempotence = idempotent;
    f.config.count = 10;
    f.config.rate_per_s = 10000; /* all ten in one batch */
    f.config.request_timeout_ns = 1000 * MS;
    f.fake->drop_responses = 1;
    fixture_start(&f);
    fixture_run(&f, 5 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked, 10);
    CU_ASSERT_EQUAL(f.fake->batch_count, 2);
    /* the resend left after request.timeout.ms plus the backoff */
    CU_ASSERT(f.fake->batch_arrival_ns[1] >= f.fake->batch_arrival_ns[0] + 1000 * MS);
    CU_ASSERT(f.fake->batch_arrival_ns[1] <= f.fake->batch_arrival_ns[0] + 1200 * MS);
    *duplicates_out = fake_duplicates(f.fake);
    sequences_out[0] = f.fake->batch_sequence[0];
    sequences_out[1] = f.fake->batch_sequence[1];
    /* acked offsets: the copy whose answer arrived (the second one without
     * idempotence; with it the broker answers the resend with the first) */
    for (int64_t seq = 0; seq < 10; seq++) {
        CU_ASSERT_EQUAL(f.out.offset_by_seq[seq], idempotent ? seq : seq + 10);
    }
    check_each_record_once(&f);
    fixture_deinit(&f);
}

static void test_lost_response_duplicates_without_idempotence(void)
{
    int64_t duplicates = 0;
    int32_t sequences[2];
    lost_response_run(false, &duplicates, sequences);
    CU_ASSERT_EQUAL(duplicates, 10);
    CU_ASSERT_EQUAL(sequences[0], -1);
    CU_ASSERT_EQUAL(sequences[1], -1);
}

static void test_lost_response_no_duplicate_with_idempotence(void)
{
    int64_t duplicates = 0;
    int32_t sequences[2];
    lost_response_run(true, &duplicates, sequences);
    CU_ASSERT_EQUAL(duplicates, 0);
    CU_ASSERT_EQUAL(sequences[0], 0);
    CU_ASSERT_EQUAL(sequences[1], 0); /* the resend keeps its sequence */
}

static void test_request_timeout_then_recovery(void)
{
    /* The broker is cut off (silent) from 5 ms to 2.5 s; with
     * request.timeout.ms = 1 s the first requests time out at about 1 s and
     * close the connection (NetworkClient.handleTimedOutRequests). The
     * retries are not sent into the cut: they wait in the accumulator while
     * the producer reconnects (reconnect.backoff.ms 50 ms), and the connect's
     * SYN, unanswered, is resent after 1 s and 2 s more (TCP's doubling
     * retransmission). The one at about 4.05 s gets through: the connection
     * is ready again and every record is acknowledged once. */
    struct fixture f;
    fixture_init(&f, 1, 1);
    f.config.count = 50;
    f.config.request_timeout_ns = 1000 * MS;
    f.config.enable_idempotence = false;
    fixture_start(&f);
    fixture_run(&f, 5 * MS); /* metadata answered, the first batch sent */
    int32_t requests_before = f.fake->produce_requests;
    int32_t connects_before = f.fake->connects;
    f.fake->silent[1] = true;
    fixture_run(&f, 2500 * MS);
    CU_ASSERT_EQUAL(f.out.acked, 0);
    /* only the requests sent before the first timeout: no resend into the cut */
    ks_time_ns first_timeout = 5 * MS + 1000 * MS;
    CU_ASSERT(f.fake->produce_requests - requests_before <= 5);
    CU_ASSERT(f.fake->connects - connects_before >= 2); /* a reconnect and its SYN resend */
    f.fake->silent[1] = false;
    fixture_run(&f, 10 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked, 50);
    CU_ASSERT_EQUAL(fake_duplicates(f.fake), 0); /* silent broker appended nothing */
    for (int64_t seq = 0; seq < 50; seq++) {
        CU_ASSERT(f.out.acked_ns_by_seq[seq] >= first_timeout);
        CU_ASSERT(f.out.acked_ns_by_seq[seq] < 4200 * MS);
    }
    check_each_record_once(&f);
    fixture_deinit(&f);
}

static void test_delivery_timeout_unknown(void)
{
    /* A broker that never answers: every sent record ends unknown at
     * delivery.timeout.ms; records that never left end failed. */
    struct fixture f;
    fixture_init(&f, 1, 1);
    f.config.count = 200;
    f.config.rate_per_s = 100;
    f.config.max_in_flight = 1;
    f.config.request_timeout_ns = 1000 * MS;
    f.config.delivery_timeout_ns = 1500 * MS;
    f.config.enable_idempotence = false;
    fixture_start(&f);
    fixture_run(&f, 3 * MS);
    f.fake->silent[1] = true;
    fixture_run(&f, 1400 * MS);
    CU_ASSERT_EQUAL(f.out.acked + f.out.failed + f.out.unknown, 0);
    fixture_run(&f, 1510 * MS);
    CU_ASSERT(f.out.unknown > 0);
    CU_ASSERT_EQUAL(f.out.acked, 0);
    fixture_run(&f, 10 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked, 0);
    CU_ASSERT(f.out.unknown > 0);
    CU_ASSERT(f.out.failed > 0);
    CU_ASSERT_EQUAL(ks_producer_unknown_count(f.producer), f.out.unknown);
    CU_ASSERT_EQUAL(ks_producer_failed_count(f.producer), f.out.failed);
    CU_ASSERT(f.out.events > 0);
    CU_ASSERT(f.out.events <= 12); /* at most one line per partition per second */
    /* The deadline runs from the batch's creation (ProducerBatch.createdMs),
     * so a record that joined a waiting batch late ends before its own
     * sent + delivery.timeout.ms; never before the first batch's deadline,
     * never after its own. */
    for (int64_t seq = 0; seq < 200; seq++) {
        CU_ASSERT(f.out.acked_ns_by_seq[seq] >= 1500 * MS);
        /* record 0 waited 4 ms for a connection and metadata before its
         * batch was created */
        ks_time_ns appended =
            f.out.sent_ns_by_seq[seq] < 4 * MS ? 4 * MS : f.out.sent_ns_by_seq[seq];
        CU_ASSERT(f.out.acked_ns_by_seq[seq] <= appended + 1500 * MS);
    }
    check_each_record_once(&f);
    fixture_deinit(&f);
}

static void test_not_leader_refreshes_metadata(void)
{
    struct fixture f;
    fixture_init(&f, 2, 1);
    f.config.count = 100;
    fixture_start(&f);
    fixture_run(&f, 30 * MS);
    int64_t acked_before = f.out.acked;
    CU_ASSERT(acked_before > 0);
    int32_t metadata_before = f.fake->metadata_requests;
    f.fake->leader[0] = 2; /* leadership moves; broker 1 now refuses */
    fixture_run(&f, 2 * KS_NS_PER_S);
    CU_ASSERT(f.fake->metadata_requests > metadata_before);
    CU_ASSERT_EQUAL(f.out.acked, 100);
    bool broker2_used = false;
    for (int32_t n = 0; n < f.fake->batch_count; n++) {
        broker2_used |= f.fake->broker_of_batch[n] == 2;
    }
    CU_ASSERT_TRUE(broker2_used);
    CU_ASSERT_EQUAL(fake_duplicates(f.fake), 0);
    CU_ASSERT_EQUAL(fake_reordered(f.fake), 0);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

/* KIP-951: the old leader's NOT_LEADER_OR_FOLLOWER names the new leader and
 * its epoch (Sender.handleProduceResponse, Metadata.updatePartitionLeadership),
 * so the producer retries there at once, skipping the retry backoff
 * (RecordAccumulator.shouldBackoff), although no metadata request is answered.
 * Without the hint it would wait for metadata (request.timeout.ms, 30 s). */
static void test_leader_hint_without_metadata(void)
{
    struct fixture f;
    fixture_init(&f, 2, 1);
    f.config.count = 100;
    f.config.retry_backoff_ns = 100 * MS;
    f.config.retry_backoff_ns_max = 1000 * MS;
    fixture_start(&f);
    fixture_run(&f, 30 * MS);
    int64_t acked_before = f.out.acked;
    CU_ASSERT(acked_before > 0 && acked_before < 100);
    f.fake->metadata_silent = true;
    f.fake->leader_hint = true;
    f.fake->leader[0] = 2;
    f.fake->epoch[0] = 1;
    int32_t refused_before = f.fake->batch_count;
    fixture_run(&f, 60 * MS);
    /* The first refused batch was retried on broker 2 within a connect and
     * a round trip of the refusal, not after the retry backoff (80..120 ms). */
    ks_time_ns refused_ns = KS_TIME_NEVER, retried_ns = KS_TIME_NEVER;
    for (int32_t n = refused_before; n < f.fake->batch_count; n++) {
        if (f.fake->broker_of_batch[n] == 1 && refused_ns == KS_TIME_NEVER) {
            refused_ns = f.fake->batch_arrival_ns[n];
        }
        if (f.fake->broker_of_batch[n] == 2 && retried_ns == KS_TIME_NEVER) {
            retried_ns = f.fake->batch_arrival_ns[n];
        }
    }
    CU_ASSERT(refused_ns != KS_TIME_NEVER && retried_ns != KS_TIME_NEVER);
    CU_ASSERT(retried_ns - refused_ns < 20 * MS);
    fixture_run(&f, 2 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked, 100);
    CU_ASSERT_EQUAL(fake_duplicates(f.fake), 0);
    CU_ASSERT_EQUAL(fake_reordered(f.fake), 0);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

/* KIP-320: metadata from a broker that has not seen the new leader names the
 * old one in an older epoch; Metadata.updateLatestMetadata keeps the newer
 * leader it learned (here from a KIP-951 hint) instead of going back. */
static void test_metadata_with_older_epoch_is_ignored(void)
{
    struct fixture f;
    fixture_init(&f, 2, 1);
    f.config.count = 300;
    fixture_start(&f);
    fixture_run(&f, 30 * MS);
    f.fake->leader_hint = true;
    f.fake->leader[0] = 2;
    f.fake->epoch[0] = 1;
    f.fake->metadata_stale_leader = 1; /* every metadata answer is stale */
    int32_t metadata_before = f.fake->metadata_requests;
    fixture_run(&f, 3 * KS_NS_PER_S);
    CU_ASSERT(f.fake->metadata_requests > metadata_before); /* stale answers came */
    CU_ASSERT_EQUAL(f.out.acked, 300);
    /* after the move at most one round of batches was refused by broker 1 */
    int32_t refused = 0;
    for (int32_t n = 0; n < f.fake->batch_count; n++) {
        refused += f.fake->broker_of_batch[n] == 1 && f.fake->batch_arrival_ns[n] > 30 * MS;
    }
    CU_ASSERT(refused <= 2);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

static void reorder_run(bool idempotent, int64_t *reordered_out, int64_t *duplicates_out)
{
    /* Five batches in flight; the broker appends but its answers are lost
     * for a while, the connection times out, all five are retried. */
    struct fixture f;
    fixture_init(&f, 1, 1);
    f.config.enable_idempotence = idempotent;
    f.config.count = 40;
    f.config.rate_per_s = 1000;
    f.config.linger_ns = 0;
    f.config.batch_size_bytes = 400; /* ~2 records per batch */
    f.config.request_timeout_ns = 500 * MS;
    fixture_start(&f);
    fixture_run(&f, 3 * MS);
    f.fake->drop_responses = 5;
    fixture_run(&f, 5 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked, 40);
    *reordered_out = fake_reordered(f.fake);
    *duplicates_out = fake_duplicates(f.fake);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

static void test_reorder_without_idempotence(void)
{
    int64_t reordered = 0, duplicates = 0;
    reorder_run(false, &reordered, &duplicates);
    CU_ASSERT(reordered > 0);
    CU_ASSERT(duplicates > 0);
    reorder_run(true, &reordered, &duplicates);
    CU_ASSERT_EQUAL(reordered, 0);
    CU_ASSERT_EQUAL(duplicates, 0);
}

static void test_acks0_counts_as_acked(void)
{
    struct fixture f;
    fixture_init(&f, 1, 2);
    f.config.acks = KS_ACKS_NONE;
    f.config.count = 30;
    fixture_start(&f);
    fixture_run(&f, 3 * MS);
    f.fake->silent[1] = true; /* everything sent from now on is lost */
    fixture_run(&f, 1 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked, 30);
    CU_ASSERT_EQUAL(f.fake->init_pid_requests, 0); /* idempotence is off with acks=0 */
    CU_ASSERT_EQUAL(f.out.offset_by_seq[0], -1);
    CU_ASSERT(f.fake->parts[0].leo + f.fake->parts[1].leo < 30);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

static void test_buffer_memory_blocks_then_fails(void)
{
    /* buffer.memory holds two batches; the broker is silent; send() blocks
     * for max.block.ms and then fails the record; the application goes on. */
    struct fixture f;
    fixture_init(&f, 1, 1);
    f.config.batch_size_bytes = 1000;
    f.config.buffer_memory_bytes = 2000;
    f.config.max_block_ns = 200 * MS;
    f.config.count = 100;
    f.config.rate_per_s = 100;
    f.config.request_timeout_ns = 5000 * MS;
    f.config.delivery_timeout_ns = 6000 * MS;
    f.config.enable_idempotence = false;
    fixture_start(&f);
    fixture_run(&f, 3 * MS);
    f.fake->silent[1] = true;
    fixture_run(&f, 2 * KS_NS_PER_S);
    CU_ASSERT(f.out.failed > 0);
    CU_ASSERT_EQUAL(f.out.acked, 0);
    /* the blocked application sent fewer records than the rate asks */
    CU_ASSERT(ks_producer_sent_count(f.producer) < 200);
    f.fake->silent[1] = false;
    fixture_run(&f, 30 * KS_NS_PER_S);
    CU_ASSERT(f.out.acked > 0);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

static void test_crash_and_restart(void)
{
    struct fixture f;
    fixture_init(&f, 1, 1);
    f.config.count = 100;
    f.config.rate_per_s = 100;
    fixture_start(&f);
    fixture_run(&f, 300 * MS);
    int64_t acked = f.out.acked;
    CU_ASSERT(acked > 20);
    ks_node_id node = (ks_node_id)(f.cluster.broker_count + 2);
    ks_world_node_crash(f.env.world, node, false);
    ks_producer_on_crash(f.producer);
    CU_ASSERT_TRUE(ks_producer_idle(f.producer));
    int64_t sent_at_crash = ks_producer_sent_count(f.producer);
    CU_ASSERT_EQUAL(f.out.acked + f.out.unknown, sent_at_crash);
    fixture_run(&f, 1000 * MS);
    CU_ASSERT_EQUAL(ks_producer_sent_count(f.producer), sent_at_crash);
    ks_world_node_restart(f.env.world, node);
    ks_producer_on_restart(f.producer);
    fixture_run(&f, 3 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(ks_producer_sent_count(f.producer), 100);
    CU_ASSERT_EQUAL(f.fake->init_pid_requests, 2);
    CU_ASSERT_EQUAL(ks_producer_id(f.producer), 1002); /* a new producer id */
    CU_ASSERT_EQUAL(f.out.acked + f.out.unknown, 100);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

static void test_crashed_leader_resets_connection(void)
{
    /* The leader's process dies with batches in flight: the producer sees
     * the disconnect at once (no request.timeout.ms wait), refreshes
     * metadata, and sends to the new leader when the metadata names it. */
    struct fixture f;
    fixture_init(&f, 2, 1);
    f.config.count = 200;
    f.config.rate_per_s = 1000;
    fixture_start(&f);
    fixture_run(&f, 50 * MS);
    CU_ASSERT(f.out.acked > 0);
    ks_world_node_crash(f.env.world, 1, false);
    ks_producer_on_broker_down(f.producer, 1); /* as core/cluster.c tells it */
    f.fake->leader[0] = 2;
    fixture_run(&f, 1000 * MS);
    CU_ASSERT_EQUAL(f.out.acked, 200); /* far sooner than request.timeout.ms (30 s) */
    bool broker2_used = false;
    for (int32_t n = 0; n < f.fake->batch_count; n++) {
        broker2_used |= f.fake->broker_of_batch[n] == 2;
    }
    CU_ASSERT_TRUE(broker2_used);
    CU_ASSERT_EQUAL(fake_reordered(f.fake), 0);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

static void test_metadata_timeout_tries_another_broker(void)
{
    /* Two of three brokers never answer. The producer cannot even connect to
     * them: each connect fails at socket.connection.setup.timeout.ms (here
     * 300 ms) and the metadata attempt moves to another broker, until the
     * live one answers; no Metadata request is ever sent to a silent broker
     * (there is no connection to send it on). */
    struct fixture f;
    fixture_init(&f, 3, 3);
    for (int32_t i = 0; i < 3; i++) {
        f.fake->leader[i] = 3;
    }
    f.fake->silent[1] = true;
    f.fake->silent[2] = true;
    f.config.request_timeout_ns = 200 * MS;
    f.config.connection_setup_timeout_ns = 300 * MS;
    f.config.connection_setup_timeout_ns_max = 300 * MS;
    f.config.count = 10;
    fixture_start(&f);
    fixture_run(&f, 5 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked, 10);
    CU_ASSERT(f.fake->metadata_requests >= 1);
    for (int32_t i = 0; i < f.fake->metadata_requests && i < 256; i++) {
        CU_ASSERT_EQUAL(f.fake->metadata_broker[i], 3);
    }
    for (int32_t i = 1; i < f.fake->connects && i < 256; i++) {
        /* a failed connect is not tried again on the same broker next */
        if (f.fake->connect_broker[i - 1] != 3) {
            CU_ASSERT_NOT_EQUAL(f.fake->connect_broker[i], f.fake->connect_broker[i - 1]);
        }
    }
    check_each_record_once(&f);
    fixture_deinit(&f);
}

static void test_metadata_max_age_refresh(void)
{
    struct fixture f;
    fixture_init(&f, 1, 1);
    f.config.metadata_max_age_ns = 1000 * MS;
    f.config.count = 1;
    fixture_start(&f);
    fixture_run(&f, 5500 * MS);
    /* the bootstrap request, then one every second */
    CU_ASSERT_EQUAL(f.fake->metadata_requests, 6);
    fixture_deinit(&f);
}

static void test_out_of_order_gap_bumps_epoch(void)
{
    /* The broker forgets the producer's last batch (as after an unclean
     * election). The next batch is the one the producer expects to follow
     * its last ack, so the gap is real: it bumps the epoch, renumbers from
     * 0 and the broker takes the new epoch (KIP-360). */
    struct fixture f;
    fixture_init(&f, 1, 1);
    f.config.count = 100;
    f.config.rate_per_s = 100;
    fixture_start(&f);
    fixture_run(&f, 300 * MS);
    CU_ASSERT(f.out.acked > 10);
    CU_ASSERT_EQUAL(ks_producer_epoch(f.producer), 0);
    struct fake_partition *part = &f.fake->parts[0];
    part->last_sequence -= 1; /* a one-record batch vanished from its memory */
    part->recent_count = 0;
    fixture_run(&f, 3 * KS_NS_PER_S);
    CU_ASSERT(f.fake->out_of_order_answers >= 1);
    CU_ASSERT_EQUAL(ks_producer_epoch(f.producer), 1);
    CU_ASSERT_EQUAL(f.out.acked, 100);
    CU_ASSERT_EQUAL(part->epoch, 1);
    CU_ASSERT_EQUAL(fake_reordered(f.fake), 0);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

static void test_sticky_null_keys_spread(void)
{
    /* Null keys: runs of about batch.size bytes per partition, every
     * partition used, no record lost. */
    struct fixture f;
    fixture_init(&f, 3, 3);
    f.config.count = 3000;
    f.config.rate_per_s = 10000;
    f.config.batch_size_bytes = 2000;
    fixture_start(&f);
    fixture_run(&f, 3 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked, 3000);
    int64_t per_partition[3] = { 0 };
    int64_t switches = 0;
    for (int64_t seq = 0; seq < 3000; seq++) {
        int32_t part = f.out.partition_by_seq[seq];
        CU_ASSERT_FATAL(part >= 0 && part < 3);
        per_partition[part]++;
        if (seq > 0 && part != f.out.partition_by_seq[seq - 1]) {
            switches++;
        }
    }
    for (int32_t i = 0; i < 3; i++) {
        CU_ASSERT(per_partition[i] > 500);
    }
    /* ~130 bytes per record: a switch every 15..31 records, and a pick may
     * land on the same partition again */
    CU_ASSERT(switches >= 3000 / 31 * 1 / 2);
    CU_ASSERT(switches <= 3000 / 15 + 1);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

/* Three partitions led by one broker, one request in flight, no linger (every
 * batch is ready at once: they pile up behind the request), no idempotence:
 * 600 records at 6,000/s, all acknowledged. */
static void run_three_partitions_one_request(struct fixture *f)
{
    fixture_init(f, 1, 3);
    f->config.max_in_flight = 1;
    f->config.key_count = 30;
    f->config.count = 600;
    f->config.rate_per_s = 6000;
    f->config.linger_ns = 0;
    f->config.enable_idempotence = false;
    fixture_start(f);
    fixture_run(f, 2 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f->out.acked, 600);
}

static void test_request_carries_one_batch_per_partition(void)
{
    /* Three partitions led by one broker, one request in flight, no linger:
     * while a request is out, every partition gets new records, and the next
     * request takes the head batch of each (RecordAccumulator drain), so
     * batches of the three partitions arrive together; the next request
     * waits until all are answered. P13: the answer that frees the slot must
     * run the sender pass (the partitions are ready and no timer is due). */
    struct fixture f;
    run_three_partitions_one_request(&f);
    int32_t groups = 0;
    int32_t n = 0;
    while (n < f.fake->batch_count) {
        int32_t seen[3] = { 0 };
        int32_t m = n;
        while (m < f.fake->batch_count &&
               f.fake->batch_arrival_ns[m] == f.fake->batch_arrival_ns[n]) {
            seen[f.fake->batch_partition[m]]++;
            m++;
        }
        for (int32_t i = 0; i < 3; i++) {
            CU_ASSERT(seen[i] <= 1); /* at most one batch per partition per request */
        }
        if (m - n == 3) {
            groups++;
        }
        if (m < f.fake->batch_count) {
            /* one request at a time: the next leaves after the answers (2 ms round trip) */
            CU_ASSERT(f.fake->batch_arrival_ns[m] >= f.fake->batch_arrival_ns[n] + 2 * MS);
        }
        n = m;
    }
    CU_ASSERT(groups > 10);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

/* RecordAccumulator.drainBatchesForOneNode's drain index (per node since
 * Kafka 3.3, KAFKA-13834): each partition the walk visits becomes the
 * index, so a walk that goes round leaves it at the partition before its
 * start and the next request starts one partition earlier. Three
 * partitions on one broker, one request at a time, no linger, no
 * idempotence: no walk stops (every batch fits in max.request.size), so
 * request k starts at partition (-k) mod 3 and carries its batches in
 * cyclic order from there. (ksim before this started after the partition
 * drained last: partition 0 first in every request of all three.) */
static void test_drain_index_moves_back_one_per_walk(void)
{
    struct fixture f;
    run_three_partitions_one_request(&f);
    int32_t index = 0;
    int32_t full_by_first[3] = { 0 };
    int32_t n = 0;
    while (n < f.fake->batch_count) {
        int32_t m = n;
        int32_t rank_before = -1;
        while (m < f.fake->batch_count &&
               f.fake->batch_arrival_ns[m] == f.fake->batch_arrival_ns[n]) {
            int32_t rank = (f.fake->batch_partition[m] - index + 3) % 3;
            CU_ASSERT(rank > rank_before); /* cyclic order from the drain index */
            rank_before = rank;
            m++;
        }
        if (m - n == 3) {
            CU_ASSERT_EQUAL(f.fake->batch_partition[n], index);
            full_by_first[index]++;
        }
        index = (index + 2) % 3; /* the partition before the walk's start */
        n = m;
    }
    for (int32_t i = 0; i < 3; i++) {
        CU_ASSERT(full_by_first[i] > 3); /* every partition takes its turn first */
    }
    check_each_record_once(&f);
    fixture_deinit(&f);
}

/* RecordAccumulator.shouldStopDrainBatchesForPartition ends the node's whole
 * drain, not just the partition, and leaves the drain index there. An
 * idempotent producer, two partitions on one broker: the broker swallows one
 * batch of partition 0 (no append, no answer), so the later ones get
 * OUT_OF_ORDER_SEQUENCE_NUMBER and wait as retries until the swallowed one,
 * the partition's lowest sequence, is resolved by request.timeout.ms (1 s).
 * From the first drain that meets partition 0's waiting retry, every drain
 * of the broker starts and stops there: partition 1's batches, sendable all
 * along, do not leave either (ksim before this skipped partition 0 and sent
 * them). Once the timeout resends the swallowed batch, both go on: nothing
 * lost, duplicated or reordered. */
static void test_waiting_retry_stops_the_nodes_drain(void)
{
    struct fixture f;
    fixture_init(&f, 1, 2);
    f.config.key_count = 20;
    f.config.count = 300;
    f.config.rate_per_s = 100;
    f.config.request_timeout_ns = 1000 * MS;
    fixture_start(&f);
    fixture_run(&f, 500 * MS); /* the broker has partition 0's producer state */
    int32_t before = f.fake->batch_count;
    f.fake->swallow[0] = 1;
    fixture_run(&f, 5 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked, 300);
    CU_ASSERT_EQUAL(fake_duplicates(f.fake), 0);
    CU_ASSERT_EQUAL(fake_reordered(f.fake), 0);
    ks_time_ns swallowed = 0;
    for (int32_t n = before; n < f.fake->batch_count && swallowed == 0; n++) {
        if (f.fake->batch_partition[n] == 0) {
            swallowed = f.fake->batch_arrival_ns[n];
        }
    }
    CU_ASSERT_FATAL(swallowed > 500 * MS);
    /* After the retries' first backoff (100 ms +-20 %), until the timeout. */
    ks_time_ns from = swallowed + 200 * MS;
    ks_time_ns to = swallowed + 950 * MS;
    int32_t partition1_batches = 0;
    for (int32_t n = before; n < f.fake->batch_count; n++) {
        ks_time_ns at = f.fake->batch_arrival_ns[n];
        partition1_batches += f.fake->batch_partition[n] == 1 && at > from && at < to;
    }
    int32_t partition1_sent = 0; /* records send() gave partition 1 in the window */
    for (int64_t seq = 0; seq < 300; seq++) {
        ks_time_ns sent = f.out.sent_ns_by_seq[seq];
        partition1_sent += f.out.partition_by_seq[seq] == 1 && sent > from && sent < to;
    }
    CU_ASSERT(partition1_sent > 10);
    CU_ASSERT_EQUAL(partition1_batches, 0);
    if (getenv("KS_TEST_VERBOSE") != NULL) {
        printf("swallowed at %" PRId64 " ms; partition 1: %d records sent, %d batches arrived\n",
               (int64_t)(swallowed / MS), partition1_sent, partition1_batches);
    }
    check_each_record_once(&f);
    fixture_deinit(&f);
}

static void unresolved_run(bool broker_appends, int64_t *unknown_out, int16_t *epoch_out,
                           int64_t *duplicates_out, int64_t *acked_out)
{
    /* Idempotent; for 1.5 s the broker either says nothing (and writes
     * nothing) or writes but its answers are lost. The first batch's fate
     * stays unknown past delivery.timeout.ms: its sequence is "unresolved";
     * with nothing else in flight the producer bumps its epoch and starts
     * the partition again at sequence 0 (TransactionManager
     * maybeResolveSequences), and the broker takes the new epoch. A silent
     * broker also leaves the producer without a connection until a SYN
     * resend gets through (at about 3.35 s: the first timeout at 0.3 s, a
     * reconnect 50 ms later, its SYN resent after 1 s and 2 s more). */
    struct fixture f;
    fixture_init(&f, 1, 1);
    f.config.count = 500;
    f.config.rate_per_s = 100;
    f.config.request_timeout_ns = 300 * MS;
    f.config.delivery_timeout_ns = 1000 * MS;
    fixture_start(&f);
    fixture_run(&f, 3 * MS);
    if (broker_appends) {
        f.fake->drop_responses = 1000000;
    } else {
        f.fake->silent[1] = true;
    }
    fixture_run(&f, 1500 * MS);
    f.fake->drop_responses = 0;
    f.fake->silent[1] = false;
    fixture_run(&f, 7 * KS_NS_PER_S);
    *unknown_out = f.out.unknown;
    *epoch_out = ks_producer_epoch(f.producer);
    *duplicates_out = fake_duplicates(f.fake);
    *acked_out = f.out.acked;
    CU_ASSERT_EQUAL(f.fake->parts[0].epoch, *epoch_out);
    CU_ASSERT_EQUAL(fake_reordered(f.fake), 0);
    /* every record sent after the trouble is acked */
    for (int64_t seq = 400; seq < 500; seq++) {
        CU_ASSERT(f.out.offset_by_seq[seq] >= 0);
    }
    check_each_record_once(&f);
    fixture_deinit(&f);
}

static void test_unresolved_sequence_bumps_epoch(void)
{
    int64_t unknown = 0, duplicates = 0, acked = 0;
    int16_t epoch = -1;
    unresolved_run(false, &unknown, &epoch, &duplicates, &acked);
    CU_ASSERT(unknown > 0);
    CU_ASSERT(epoch >= 1);
    CU_ASSERT_EQUAL(duplicates, 0);
    CU_ASSERT(acked >= 100);
    unresolved_run(true, &unknown, &epoch, &duplicates, &acked);
    CU_ASSERT(unknown > 0);
    CU_ASSERT(epoch >= 1);
    CU_ASSERT_EQUAL(duplicates, 0); /* written once, reported unknown */
    CU_ASSERT(acked >= 100);
}

static void keys_run(int32_t key_count)
{
    struct fixture f;
    fixture_init(&f, 1, 2);
    f.config.key_count = key_count;
    f.config.count = 1200; /* seq widths 1 to 4 digits in the identity header */
    f.config.rate_per_s = 20000;
    fixture_start(&f);
    fixture_run(&f, 1 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked, 1200);
    int64_t total = 0;
    size_t shortest = 99, longest = 0;
    for (int32_t i = 0; i < 2; i++) {
        for (int64_t o = 0; o < f.fake->parts[i].leo; o++) {
            const struct fake_entry *entry = &f.fake->parts[i].log[o];
            CU_ASSERT_FATAL(entry->seq >= 0 && entry->seq < 1200);
            /* the key the broker read is the one reported, and of the form key-<n < keys> */
            CU_ASSERT_STRING_EQUAL(entry->key, f.out.key_by_seq[entry->seq]);
            CU_ASSERT_FATAL(strncmp(entry->key, "key-", 4) == 0);
            char *end = NULL;
            long long n = strtoll(entry->key + 4, &end, 10);
            CU_ASSERT(end != NULL && *end == '\0');
            CU_ASSERT(n >= 0 && n < key_count);
            CU_ASSERT_EQUAL(ks_partitioner_key_partition(entry->key, strlen(entry->key), 2), i);
            size_t length = strlen(entry->key);
            shortest = length < shortest ? length : shortest;
            longest = length > longest ? length : longest;
            total++;
        }
    }
    CU_ASSERT_EQUAL(total, 1200);
    /* the draws span several key widths when the key space allows */
    if (key_count >= 100) {
        CU_ASSERT(longest > shortest);
    }
    /* every batch the broker read has the size the producer accounted */
    for (int32_t n = 0; n < f.fake->batch_count; n++) {
        CU_ASSERT(f.fake->batch_bytes[n] <= f.config.batch_size_bytes);
    }
    check_each_record_once(&f);
    fixture_deinit(&f);
}

/* core/base.h's decimal text (the producer's keys and identities, the
 * log's checkpoints) against snprintf: every width, each side of every
 * power of ten, and the extremes. */
static void test_decimal_text(void)
{
    uint64_t values[80];
    int n = 0;
    values[n++] = 0;
    values[n++] = UINT64_MAX;
    for (uint64_t power = 1; power <= UINT64_C(10000000000000000000); power *= 10) {
        values[n++] = power - 1;
        values[n++] = power;
        values[n++] = power + 1;
        if (power > UINT64_MAX / 10) {
            break;
        }
    }
    for (int i = 0; i < n; i++) {
        char expected[24];
        char got[24];
        int length = snprintf(expected, sizeof expected, "%" PRIu64, values[i]);
        CU_ASSERT_EQUAL(ks_decimal_digits(values[i]), length);
        CU_ASSERT_EQUAL(ks_write_decimal(got, values[i]), length);
        CU_ASSERT_EQUAL(memcmp(got, expected, (size_t)length), 0);
    }
}

static void test_keys_of_every_width(void)
{
    keys_run(1);
    keys_run(150);
    keys_run(65536); /* the most keys whose texts and partitions are cached (P14) */
    keys_run(65537); /* one more: none cached */
    keys_run(2000000000);
}

static void test_crash_noticed_between_appends(void)
{
    /* linger 500 ms at 200 records/s (100 records fit in batch.size):
     * once a batch opens, every send() only adds to it, so no sender pass is
     * due for the append itself. The first batch goes to broker 1 at about
     * 500 ms; the leader crashes at 600 ms while the second one lingers. Its
     * connection is reset, which the producer sees at once (the driver's
     * ks_producer_on_broker_down runs a sender pass): it asks for metadata
     * right away, long before linger.ms would wake the sender, and sends the
     * rest to broker 2. */
    struct fixture f;
    fixture_init(&f, 2, 1);
    f.config.count = 150;
    f.config.rate_per_s = 200;
    f.config.linger_ns = 500 * MS;
    f.config.enable_idempotence = false;
    fixture_start(&f);
    fixture_run(&f, 600 * MS);
    CU_ASSERT_EQUAL_FATAL(f.fake->batch_count, 1); /* the first batch, to broker 1 */
    CU_ASSERT_EQUAL(f.fake->broker_of_batch[0], 1);
    int32_t metadata_before = f.fake->metadata_requests;
    ks_world_node_crash(f.env.world, 1, false);
    ks_producer_on_broker_down(f.producer, 1);
    f.fake->leader[0] = 2;
    fixture_run(&f, 606 * MS); /* a connect to broker 2 and a Metadata round trip */
    CU_ASSERT(f.fake->metadata_requests > metadata_before);
    fixture_run(&f, 3 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked + f.out.unknown, 150);
    for (int32_t n = 1; n < f.fake->batch_count; n++) {
        CU_ASSERT_EQUAL(f.fake->broker_of_batch[n], 2);
    }
    /* the first batch still waited for linger.ms (opened at about 4 ms) */
    CU_ASSERT(f.fake->batch_arrival_ns[0] >= 500 * MS);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

/* KafkaProducer.ensureValidRecordSize: a record whose serialized upper bound
 * (batch header + 21 + key, value and headers) is larger than
 * max.request.size fails at send() with RecordTooLargeException and is
 * never sent; one below it goes through. */
static void test_record_larger_than_max_request_size_fails_at_send(void)
{
    struct fixture f;
    fixture_init(&f, 1, 1);
    f.config.max_request_size_bytes = 1000;
    f.config.value_bytes = 1000;
    f.config.count = 20;
    fixture_start(&f);
    fixture_run(&f, 1 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.failed, 20);
    CU_ASSERT_EQUAL(f.out.acked, 0);
    CU_ASSERT_EQUAL(f.fake->produce_requests, 0);
    check_each_record_once(&f);
    fixture_deinit(&f);

    fixture_init(&f, 1, 1);
    f.config.max_request_size_bytes = 1000;
    f.config.value_bytes = 850;
    f.config.count = 20;
    fixture_start(&f);
    fixture_run(&f, 1 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked, 20);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

/* The counts of the real cluster's record outcomes. */
static void cluster_outcomes(const struct cluster_fixture *cf, int64_t *acked, int64_t *failed,
                             int64_t *unknown)
{
    *acked = *failed = *unknown = 0;
    for (guint i = 0; i < cf->outcomes->len; i++) {
        const struct ks_record_outcome *o =
            &g_array_index(cf->outcomes, struct ks_record_outcome, i);
        *acked += o->outcome == KS_OUTCOME_ACKED;
        *failed += o->outcome == KS_OUTCOME_FAILED;
        *unknown += o->outcome == KS_OUTCOME_UNKNOWN;
    }
}

/* The LEO of the partition's leader, by its own view. */
static int64_t leader_leo(struct cluster_fixture *cf, int32_t topic_index, int32_t partition)
{
    int32_t leader = ks_cluster_leader(cf->cluster, topic_index, partition);
    struct ks_replica_state state;
    CU_ASSERT_FATAL(leader >= 1);
    CU_ASSERT_FATAL(ks_cluster_replica_state(cf->cluster, leader, topic_index, partition, &state));
    return state.leo;
}

/* The topic's max.message.bytes: the leader refuses a batch larger than it
 * with MESSAGE_TOO_LARGE (UnifiedLog.analyzeAndValidateRecords), which the
 * producer does not retry for a one-record batch: the records fail, and none
 * is in the log. (ksim appended and acknowledged them.) */
static void test_topic_max_message_bytes_refuses_batches(void)
{
    struct cluster_fixture *cf = calloc(1, sizeof(*cf));
    cf_init(cf, 3);
    struct ks_topic_config *topic = cf_topic(cf, "orders", 1, 3, 2, NULL);
    topic->log.max_message_bytes = 400;
    struct ks_producer_config *p = cf_producer(cf, "p1", 0);
    p->value_bytes = 400; /* one record is a batch of about 480 bytes */
    p->rate_per_s = 50;
    p->count = 40;
    cf_start(cf, 7);
    cf_run_until(cf, 3 * CF_S);
    int64_t acked = 0, failed = 0, unknown = 0;
    cluster_outcomes(cf, &acked, &failed, &unknown);
    CU_ASSERT_EQUAL(failed, 40);
    CU_ASSERT_EQUAL(acked, 0);
    CU_ASSERT_EQUAL(unknown, 0);
    CU_ASSERT_EQUAL(leader_leo(cf, 0, 0), 0);
    cf_free(cf);
    free(cf);
}

/* Sender.completeBatch: MESSAGE_TOO_LARGE for a batch of several records
 * splits it (RecordAccumulator.splitAndReenqueue) with the compression ratio
 * estimate reset to at least 1. gzip shrinks these values about 25-fold, so
 * the estimate soon lets a batch hold 400 records (a linger.ms of them, 50 KB)
 * whose compressed batch (about 2.2 KB) exceeds the topic's 1500 bytes; its
 * pieces of at most batch.size (16 KiB) fit, and every record is acknowledged
 * once. */
static void test_message_too_large_splits_the_batch(void)
{
    struct cluster_fixture *cf = calloc(1, sizeof(*cf));
    cf_init(cf, 3);
    struct ks_topic_config *topic = cf_topic(cf, "orders", 1, 3, 2, NULL);
    topic->log.max_message_bytes = 1500;
    struct ks_producer_config *p = cf_producer(cf, "p1", 0);
    p->compression.codec = KS_CODEC_GZIP;
    p->rate_per_s = 20000;
    p->count = 60000;
    p->linger_ns = 20 * CF_MS;
    cf_start(cf, 11);
    cf_run_until(cf, 6 * CF_S);
    int64_t acked = 0, failed = 0, unknown = 0;
    cluster_outcomes(cf, &acked, &failed, &unknown);
    CU_ASSERT_EQUAL(acked, 60000);
    CU_ASSERT_EQUAL(failed + unknown, 0);
    CU_ASSERT_EQUAL(leader_leo(cf, 0, 0), 60000);
    cf_free(cf);
    free(cf);
}

/* The smallest record count among the log's batches (ks_log_scan). */
static bool smallest_batch(void *context, const struct ks_batch_view *batch)
{
    int32_t *smallest = context;
    if (*smallest < 0 || batch->record_count < *smallest) {
        *smallest = batch->record_count;
    }
    return true;
}

/* RecordAccumulator.ready calls a batch full by MemoryRecordsBuilder.isFull,
 * the estimated (compressed) bytes against batch.size, as the append does:
 * with gzip and a linger.ms that never ends first, a batch goes out only
 * once the estimate fills it. The filler values compress many-fold, so once
 * the ratio estimate has come down (0.005 per batch, CompressionRatioEstimator)
 * a batch holds far more than the 16 records of 1 KB that make batch.size
 * uncompressed: 234 records at the smallest here. Counting uncompressed
 * bytes, a batch counted as full at 16 records and went at the next sender
 * pass (19 records at the smallest). */
static void test_compressed_batch_full_by_estimate(void)
{
    struct cluster_fixture *cf = calloc(1, sizeof(*cf));
    cf_init(cf, 3);
    const int32_t replicas[] = { 1, 2, 3 };
    cf_topic(cf, "orders", 1, 3, 2, replicas);
    struct ks_producer_config *p = cf_producer(cf, "p1", 0);
    p->compression.codec = KS_CODEC_GZIP;
    p->rate_per_s = 10000;
    p->count = 40000;
    p->value_bytes = 1000;
    p->linger_ns = 2 * CF_S;
    cf_start(cf, 5);
    cf_run_until(cf, 8 * CF_S);
    int64_t acked = 0, failed = 0, unknown = 0;
    cluster_outcomes(cf, &acked, &failed, &unknown);
    CU_ASSERT_EQUAL(acked, 40000);
    int32_t smallest = -1;
    /* From offset 20,000 (the estimate long settled) to the last full batch. */
    ks_log_scan(ks_cluster_replica_log(cf->cluster, 1, 0, 0), 20000, 39000, smallest_batch,
                &smallest);
    if (getenv("KS_TEST_VERBOSE") != NULL) {
        printf("smallest batch after offset 20000: %d records\n", smallest);
    }
    CU_ASSERT(smallest >= 100);
    cf_free(cf);
    free(cf);
}

/* The producer's connection model (NetworkClient, ClusterConnectionStates):
 * cut off from the leader at 5 s, its requests time out at 35 s and close
 * the connection; the retries wait in the accumulator while reconnects fail
 * at socket.connection.setup.timeout.ms (10 s, then 20 s, at most 30 s, with
 * TCP's SYN resends in between), instead of being sent into the cut for
 * another 30 s each. When the cut heals at 45 s, the next SYN resend or
 * reconnect gets through within a few seconds, and everything is
 * acknowledged once (the old model resent into the cut at 35 s and
 * recovered only when that request timed out, at 65 s). */
static void test_cut_leader_reconnects_instead_of_resending(void)
{
    struct cluster_fixture *cf = calloc(1, sizeof(*cf));
    cf_init(cf, 3);
    const int32_t replicas[] = { 1, 2, 3 };
    cf_topic(cf, "orders", 1, 3, 2, replicas);
    struct ks_producer_config *p = cf_producer(cf, "p1", 0);
    p->rate_per_s = 100;
    p->count = 3000;
    cf_start(cf, 13);
    cf_run_until(cf, 5 * CF_S);
    ks_node_id producer = ks_cluster_producer_node(&cf->spec, 0);
    ks_node_id leader = 1;
    ks_cut_id cut = ks_world_net_partition(cf->env.world, &producer, 1, &leader, 1);
    cf_run_until(cf, 45 * CF_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(cf->cluster, 0, 0), 1); /* still the leader */
    int64_t acked_in_cut = cf->acked_count;
    ks_world_net_heal(cf->env.world, cut);
    cf_run_until(cf, 60 * CF_S);
    ks_time_ns first_ack = KS_TIME_NEVER;
    int64_t acked = 0, failed = 0, unknown = 0;
    for (guint i = 0; i < cf->outcomes->len; i++) {
        const struct ks_record_outcome *o =
            &g_array_index(cf->outcomes, struct ks_record_outcome, i);
        if (o->outcome == KS_OUTCOME_ACKED && o->acked_ns > 45 * CF_S && o->acked_ns < first_ack) {
            first_ack = o->acked_ns;
        }
    }
    cluster_outcomes(cf, &acked, &failed, &unknown);
    CU_ASSERT(acked_in_cut < 600); /* about 5 s worth before the cut */
    CU_ASSERT(first_ack < 45 * CF_S + 10 * CF_S);
    CU_ASSERT_EQUAL(acked, 3000);
    CU_ASSERT_EQUAL(failed + unknown, 0);
    CU_ASSERT_EQUAL(leader_leo(cf, 0, 0), 3000); /* idempotent: no duplicates */
    cf_free(cf);
    free(cf);
}

/* P10, the sender's ready index: a partition whose head batch is sendable
 * waits in its leader's ready set while that connection has no room. Here
 * (max.in.flight 1, linger 0, retries 0) batch B waits so behind batch A in
 * flight to broker 1; A is refused with a KIP-951 hint naming broker 2, fails
 * (no retries left) and leaves B's queue as it was. Only the leader change
 * moves B to broker 2's set: missed, the next pass would drain B from broker
 * 1's set (and P10, checked after every event, fails first). */
static void test_leader_hint_moves_a_ready_partition(void)
{
    struct fixture f;
    fixture_init(&f, 2, 1);
    f.config.enable_idempotence = false;
    f.config.retries = 0;
    f.config.max_in_flight = 1;
    f.config.linger_ns = 0;
    f.config.count = 100;
    fixture_start(&f);
    fixture_run(&f, 30 * MS);
    CU_ASSERT_FATAL(f.out.acked > 0 && f.out.acked < 100);
    f.fake->metadata_silent = true;
    f.fake->leader_hint = true;
    f.fake->leader[0] = 2;
    f.fake->epoch[0] = 1;
    int32_t before = f.fake->batch_count;
    fixture_run(&f, 2 * KS_NS_PER_S);
    ks_time_ns refused_ns = KS_TIME_NEVER, moved_ns = KS_TIME_NEVER;
    int32_t refused = 0;
    for (int32_t n = before; n < f.fake->batch_count; n++) {
        if (f.fake->broker_of_batch[n] == 1) {
            refused++;
            if (refused_ns == KS_TIME_NEVER) {
                refused_ns = f.fake->batch_arrival_ns[n];
            }
        } else if (moved_ns == KS_TIME_NEVER) {
            moved_ns = f.fake->batch_arrival_ns[n];
        }
    }
    /* One request was refused (max.in.flight 1), and the next went to broker
     * 2 after the refusal's answer (1 ms), a connect (2 ms) and its own trip
     * (1 ms): metadata never answered, and nothing else would move it. */
    CU_ASSERT_EQUAL(refused, 1);
    CU_ASSERT_FATAL(refused_ns != KS_TIME_NEVER && moved_ns != KS_TIME_NEVER);
    CU_ASSERT_EQUAL(moved_ns - refused_ns, 4 * MS);
    CU_ASSERT(f.out.failed > 0);
    CU_ASSERT_EQUAL(f.out.acked + f.out.failed, 100);
    CU_ASSERT_EQUAL(f.out.unknown, 0);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

/* P10: a partition with batches and no known leader is in no broker's
 * ready set and asks for metadata; the answer that names a leader must
 * place it again (on_metadata_response marks it), or its batches would wait
 * for good. The records go at the first metadata answer after the leader
 * appears, all of them. */
static void test_metadata_leader_places_a_leaderless_partition(void)
{
    struct fixture f;
    fixture_init(&f, 1, 1);
    f.config.key_count = 10;
    f.config.count = 100;
    f.fake->leader[0] = -1; /* LEADER_NOT_AVAILABLE */
    fixture_start(&f);
    fixture_run(&f, 50 * MS);
    CU_ASSERT_EQUAL(f.fake->batch_count, 0);
    CU_ASSERT(ks_producer_sent_count(f.producer) > 10); /* appended, not blocked */
    int32_t metadata_before = f.fake->metadata_requests;
    f.fake->leader[0] = 1;
    fixture_run(&f, 400 * MS);
    CU_ASSERT(f.fake->metadata_requests > metadata_before);
    CU_ASSERT_FATAL(f.fake->batch_count > 0);
    /* The first batch holds every record sent before the answer. */
    CU_ASSERT(f.fake->batch_records[0] > 10);
    CU_ASSERT(f.fake->batch_arrival_ns[0] < 200 * MS);
    fixture_run(&f, 2 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked, 100);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

/* P10: a batch that an append makes exactly full (MemoryRecordsBuilder.
 * isFull: its size reaches batch.size, with no record to close it) is
 * sendable at once, not at its linger end. A first run with a large
 * batch.size measures three records' batch; a second with batch.size that
 * size sends the batch when the third record fills it. */
static ks_time_ns full_batch_run(int32_t batch_size_bytes, int64_t *bytes_out)
{
    struct fixture f;
    fixture_init(&f, 1, 1);
    f.config.batch_size_bytes = batch_size_bytes;
    f.config.linger_ns = 10000 * MS;
    f.config.count = 3;
    fixture_start(&f);
    fixture_run(&f, 11 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.fake->batch_count, 1);
    CU_ASSERT_EQUAL(f.fake->batch_records[0], 3);
    CU_ASSERT_EQUAL(f.out.acked, 3);
    *bytes_out = f.fake->batch_bytes[0];
    ks_time_ns arrival_ns = f.fake->batch_arrival_ns[0];
    check_each_record_once(&f);
    fixture_deinit(&f);
    return arrival_ns;
}

static void test_full_batch_goes_before_linger(void)
{
    int64_t bytes = 0;
    ks_time_ns lingered_ns = full_batch_run(100000, &bytes);
    CU_ASSERT(lingered_ns > 10000 * MS); /* not full: it waited for linger.ms */
    int64_t full_bytes = 0;
    ks_time_ns full_ns = full_batch_run((int32_t)bytes, &full_bytes);
    CU_ASSERT_EQUAL(full_bytes, bytes);
    /* The three records are appended at 4 ms (the first send() waited for
     * metadata), the batch leaves with the third and arrives 1 ms later. */
    CU_ASSERT_EQUAL(full_ns, 5 * MS);
}

/* P12, the sender's sets of brokers and its list of requests in flight: a
 * pass visits only the brokers with something due (a reset, a connect, a
 * request past its deadline, a ready partition), so each set must follow
 * every change it mirrors (ks_producer_check compares them after every
 * event). Here, with three brokers each leading one partition, broker 2 is
 * cut off (its requests time out at request.timeout.ms, its reconnect waits
 * out the backoff, its SYN is resent), and broker 3 crashes (its connection
 * is reset and its partition moves to broker 1), while the records of the
 * other partitions go on. Once broker 2 answers again every record is
 * acknowledged exactly once. */
static void test_broker_sets_follow_cuts_and_crashes(void)
{
    struct fixture f;
    fixture_init(&f, 3, 3);
    f.config.enable_idempotence = false;
    f.config.count = 1500;
    f.config.rate_per_s = 1000;
    f.config.request_timeout_ns = 300 * MS;
    fixture_start(&f);
    fixture_run(&f, 20 * MS);
    CU_ASSERT_FATAL(f.out.acked > 0);
    f.fake->silent[2] = true;
    fixture_run(&f, 100 * MS);
    ks_world_node_crash(f.env.world, 3, false);
    ks_producer_on_broker_down(f.producer, 3);
    f.fake->leader[2] = 1;
    fixture_run(&f, 1000 * MS);
    /* The other brokers' records went on through the cut (about 1,100
     * sent by now), broker 2's waited. */
    CU_ASSERT(f.out.acked >= 600);
    CU_ASSERT(f.out.acked + 100 < ks_producer_sent_count(f.producer));
    f.fake->silent[2] = false;
    fixture_run(&f, 6 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked + f.out.failed + f.out.unknown, 1500);
    CU_ASSERT_EQUAL(f.out.failed + f.out.unknown, 0);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

/* P10: while the application is blocked on buffer.memory, every batch is
 * sendable (RecordAccumulator.ready's `exhausted`), lingering ones too. Two
 * partitions on one broker, linger.ms 10 s, room for two batches: when a
 * record does not fit its partition's batch and no memory is left for a new
 * one, the pass sends both partitions' batches in one request, the other
 * partition's lone lingering batch included (the flip of the producer-wide
 * readiness places every partition again). */
static void test_memory_exhausted_sends_lingering_batches(void)
{
    struct fixture f;
    fixture_init(&f, 1, 2);
    f.config.batch_size_bytes = 1000;
    f.config.buffer_memory_bytes = 2000;
    f.config.linger_ns = 10000 * MS;
    f.config.key_count = 10;
    f.config.count = 40;
    f.config.enable_idempotence = false;
    fixture_start(&f);
    fixture_run(&f, 100 * MS);
    CU_ASSERT_FATAL(f.fake->batch_count >= 2);
    CU_ASSERT_NOT_EQUAL(f.fake->batch_partition[0], f.fake->batch_partition[1]);
    CU_ASSERT_EQUAL(f.fake->batch_arrival_ns[0], f.fake->batch_arrival_ns[1]);
    CU_ASSERT(f.fake->batch_arrival_ns[0] < 100 * MS);
    fixture_run(&f, 30 * KS_NS_PER_S);
    CU_ASSERT_EQUAL(f.out.acked, 40);
    check_each_record_once(&f);
    fixture_deinit(&f);
}

/* Sender.guaranteeMessageOrder (max.in.flight.requests.per.connection = 1):
 * the sender mutes every partition it drains until that request's answer or
 * failure (RecordAccumulator.mutePartition / unmutePartition), so a partition
 * never has two batches in flight, not even across a leader change. Two
 * brokers, one partition led by broker 1, a producer without idempotence
 * (retries, one request per connection: the setting a Kafka user picks for
 * ordering). Broker 1 swallows one batch (no append, no answer); the
 * partition's leader then moves to broker 2, which the producer learns from
 * its metadata refresh (metadata.max.age.ms 100 ms) while the batch is still
 * in flight. `end` says how the flight ends: the request's timeout (1 s),
 * broker 1's crash resetting the connection 300 ms after the send, or the
 * batch's delivery.timeout.ms (400 ms, shorter than request.timeout.ms only
 * to make it end in flight), which ends the batch but, as Sender.failBatch
 * does not unmute, leaves the partition muted until the request times out.
 * Returns when the swallowed batch arrived; *moved_out gets the arrival of
 * the first batch at broker 2, *first_moved_out the seq of the first record
 * broker 2 appended, *swallowed_seq_out the swallowed batch's first record,
 * and out the outcome counts. */
enum mute_end { MUTE_END_TIMEOUT, MUTE_END_RESET, MUTE_END_EXPIRY };

static ks_time_ns muted_leader_change_run(enum mute_end end, ks_time_ns *moved_out,
                                          int64_t *first_moved_out, int64_t *swallowed_seq_out,
                                          struct outcomes *out)
{
    struct fixture f;
    fixture_init(&f, 2, 1);
    f.fake->leader[0] = 1;
    f.config.enable_idempotence = false;
    f.config.max_in_flight = 1;
    f.config.count = 1500;
    f.config.request_timeout_ns = 1000 * MS;
    f.config.metadata_max_age_ns = 100 * MS;
    if (end == MUTE_END_EXPIRY) {
        f.config.delivery_timeout_ns = 400 * MS;
    }
    fixture_start(&f);
    fixture_run(&f, 150 * MS);
    CU_ASSERT_FATAL(f.out.acked > 0);
    int32_t before = f.fake->batch_count;
    f.fake->swallow[0] = 1;
    fixture_run(&f, 160 * MS);
    int64_t leo = f.fake->parts[0].leo; /* broker 1's appends (the log is the partition's) */
    CU_ASSERT_FATAL(f.fake->batch_count > before);
    ks_time_ns swallowed = f.fake->batch_arrival_ns[before];
    CU_ASSERT_FATAL(f.fake->broker_of_batch[before] == 1);
    f.fake->leader[0] = 2;
    f.fake->epoch[0] = 1;
    if (end == MUTE_END_RESET) {
        fixture_run(&f, swallowed + 300 * MS);
        ks_producer_on_broker_down(f.producer, 1); /* as core/cluster.c tells it */
    }
    fixture_run(&f, 5 * KS_NS_PER_S);
    /* Nothing more went to broker 1: the producer knew the new leader long
     * before the swallowed batch's flight ended. */
    ks_time_ns moved = KS_TIME_NEVER;
    for (int32_t n = before + 1; n < f.fake->batch_count; n++) {
        CU_ASSERT_EQUAL(f.fake->broker_of_batch[n], 2);
        if (moved == KS_TIME_NEVER) {
            moved = f.fake->batch_arrival_ns[n];
        }
    }
    *moved_out = moved;
    *first_moved_out = f.fake->parts[0].leo > leo ? f.fake->parts[0].log[leo].seq : -1;
    *swallowed_seq_out = -1;
    for (int64_t seq = 0; seq < 1500 && *swallowed_seq_out < 0; seq++) {
        if (f.out.acked_ns_by_seq[seq] == 0 || f.out.acked_ns_by_seq[seq] > swallowed) {
            *swallowed_seq_out = seq; /* the first record not acked by then */
        }
    }
    CU_ASSERT_EQUAL(fake_duplicates(f.fake), 0);
    CU_ASSERT_EQUAL(fake_reordered(f.fake), 0);
    out->acked = f.out.acked;
    out->failed = f.out.failed;
    out->unknown = f.out.unknown;
    check_each_record_once(&f);
    if (getenv("KS_TEST_VERBOSE") != NULL) {
        printf("end %d: swallowed at %" PRId64 " ms, broker 2's first batch at %" PRId64
               " ms, first seq there %" PRId64 " (swallowed from %" PRId64 ")\n",
               (int)end, (int64_t)(swallowed / MS), (int64_t)(moved / MS), *first_moved_out,
               *swallowed_seq_out);
    }
    fixture_deinit(&f);
    return swallowed;
}

/* The request times out (1 s after it was sent): only then does the
 * partition go to broker 2, and its first batch there is the swallowed one,
 * retried; without muting, the batches behind it went to broker 2 as soon as
 * the metadata named it and the retry landed after them (reordered).
 * (Kafka's check is max.in.flight == 1 as configured; ksim's in_flight_max
 * is the same number.) */
static void test_muted_partition_waits_across_leader_change(void)
{
    ks_time_ns moved = 0;
    int64_t first = -1, swallowed_seq = -1;
    struct outcomes out = { 0 };
    ks_time_ns swallowed =
        muted_leader_change_run(MUTE_END_TIMEOUT, &moved, &first, &swallowed_seq, &out);
    CU_ASSERT(moved != KS_TIME_NEVER);
    CU_ASSERT(moved >= swallowed - MS + 1000 * MS); /* sent 1 ms before it arrived */
    CU_ASSERT(moved < swallowed + 1100 * MS);
    CU_ASSERT_EQUAL(first, swallowed_seq); /* the retry went first */
    CU_ASSERT_EQUAL(out.acked, 1500);
}

/* Broker 1's crash resets the connection (ks_producer_on_broker_down): the
 * request fails as disconnected, which unmutes the partition (Sender.
 * completeBatch of NetworkClient's disconnect), and the retry goes to broker
 * 2 at once, long before request.timeout.ms. */
static void test_reset_connection_unmutes(void)
{
    ks_time_ns moved = 0;
    int64_t first = -1, swallowed_seq = -1;
    struct outcomes out = { 0 };
    ks_time_ns swallowed =
        muted_leader_change_run(MUTE_END_RESET, &moved, &first, &swallowed_seq, &out);
    CU_ASSERT(moved > swallowed + 300 * MS);
    CU_ASSERT(moved < swallowed + 320 * MS); /* a connect to broker 2 and a trip */
    CU_ASSERT_EQUAL(first, swallowed_seq);
    CU_ASSERT_EQUAL(out.acked, 1500);
}

/* delivery.timeout.ms ends the swallowed batch in flight (unknown) about
 * 400 ms after its creation, but its partition stays muted until the request
 * times out (Sender.failBatch does not unmute; the request's own completion
 * does): nothing goes to broker 2 before, and the batches whose delivery
 * timeout passed while they waited in the queue end failed (never sent). */
static void test_batch_expired_in_flight_keeps_its_partition_muted(void)
{
    ks_time_ns moved = 0;
    int64_t first = -1, swallowed_seq = -1;
    struct outcomes out = { 0 };
    ks_time_ns swallowed =
        muted_leader_change_run(MUTE_END_EXPIRY, &moved, &first, &swallowed_seq, &out);
    CU_ASSERT(moved >= swallowed - MS + 1000 * MS);
    CU_ASSERT(moved < swallowed + 1100 * MS);
    CU_ASSERT(first > swallowed_seq); /* the swallowed records ended, unknown */
    CU_ASSERT(out.unknown > 0);
    CU_ASSERT(out.failed > 0); /* expired in the queue, never sent */
    CU_ASSERT_EQUAL(out.acked + out.failed + out.unknown, 1500);
}

void ks_test_register_producer(void)
{
    static const struct ks_test_case cases[] = {
        { "record size at varint boundaries", test_record_size_at_varint_boundaries },
        { "record size accounting matches the batch builder", test_record_size_matches_builder },
        { "retry backoff is exponential with +-20% jitter", test_retry_backoff_bounds },
        { "ack path: keyed records, offsets, sequences", test_ack_path_keyed },
        { "linger.ms holds a batch", test_linger_batching },
        { "a ready broker's request takes its young batches too", test_drain_takes_young_batches },
        { "the drain index moves back one partition per walk",
          test_drain_index_moves_back_one_per_walk },
        { "a retry waiting for its turn stops the node's whole drain",
          test_waiting_retry_stops_the_nodes_drain },
        { "batch.size closes a batch", test_size_batching },
        { "lost response duplicates without idempotence",
          test_lost_response_duplicates_without_idempotence },
        { "lost response: no duplicate with idempotence",
          test_lost_response_no_duplicate_with_idempotence },
        { "request timeout then recovery", test_request_timeout_then_recovery },
        { "delivery timeout ends records as unknown", test_delivery_timeout_unknown },
        { "NOT_LEADER_OR_FOLLOWER refreshes metadata", test_not_leader_refreshes_metadata },
        { "KIP-951: the refusal names the new leader", test_leader_hint_without_metadata },
        { "KIP-320: metadata with an older epoch is ignored",
          test_metadata_with_older_epoch_is_ignored },
        { "5 in flight reorder without idempotence only", test_reorder_without_idempotence },
        { "acks=0 counts records as acked when sent", test_acks0_counts_as_acked },
        { "buffer.memory blocks send() then fails it", test_buffer_memory_blocks_then_fails },
        { "crash ends records unknown; restart continues", test_crash_and_restart },
        { "a crashed leader resets the connection", test_crashed_leader_resets_connection },
        { "metadata timeout tries another broker", test_metadata_timeout_tries_another_broker },
        { "metadata.max.age.ms refreshes", test_metadata_max_age_refresh },
        { "OUT_OF_ORDER gap bumps the epoch (KIP-360)", test_out_of_order_gap_bumps_epoch },
        { "sticky partitioner spreads null keys", test_sticky_null_keys_spread },
        { "a request carries one batch per partition",
          test_request_carries_one_batch_per_partition },
        { "an unresolved sequence bumps the epoch", test_unresolved_sequence_bumps_epoch },
        { "decimal text of every width", test_decimal_text },
        { "keys of every width are sized, encoded and reported as sent", test_keys_of_every_width },
        { "a crashed leader's reset is noticed at once", test_crash_noticed_between_appends },
        { "a record over max.request.size fails at send()",
          test_record_larger_than_max_request_size_fails_at_send },
        { "max.message.bytes refuses a batch: MESSAGE_TOO_LARGE",
          test_topic_max_message_bytes_refuses_batches },
        { "MESSAGE_TOO_LARGE splits a batch of several records",
          test_message_too_large_splits_the_batch },
        { "a compressed batch is full by its estimated size (isFull)",
          test_compressed_batch_full_by_estimate },
        { "a cut-off leader: reconnect, not resend into the cut",
          test_cut_leader_reconnects_instead_of_resending },
        { "P10: a KIP-951 hint moves a ready partition to its new leader",
          test_leader_hint_moves_a_ready_partition },
        { "P10: metadata naming a leader places a leaderless partition",
          test_metadata_leader_places_a_leaderless_partition },
        { "P10: a batch filled to batch.size goes before linger.ms",
          test_full_batch_goes_before_linger },
        { "P10: blocked on memory, lingering batches go at once",
          test_memory_exhausted_sends_lingering_batches },
        { "P12: the sets of brokers follow cuts, timeouts and crashes",
          test_broker_sets_follow_cuts_and_crashes },
        { "max.in.flight 1 mutes a partition in flight across a leader change",
          test_muted_partition_waits_across_leader_change },
        { "max.in.flight 1: a reset connection unmutes its partitions",
          test_reset_connection_unmutes },
        { "max.in.flight 1: a batch expired in flight keeps its partition muted",
          test_batch_expired_in_flight_keeps_its_partition_muted },
    };
    KS_TEST_ADD_SUITE("core/producer", cases);
}
