/*
** core/txn_coord.c: the transaction coordinator (KIP-98) and the partition
** leader's WriteTxnMarkers.
**
** Design (Kafka's coordinator/transaction package, paraphrased):
**
** State of one transactional id (TransactionMetadata): producer id and epoch,
** transaction.timeout.ms, the state (Empty 0, Ongoing 1, PrepareCommit 2,
** PrepareAbort 3, CompleteCommit 4, CompleteAbort 5, Dead 6,
** PrepareEpochFence 7: TransactionState's ids), the partitions of the open
** transaction, and its start and last-update times. A change is computed
** first (the "transit metadata" of prepareTransitionTo), appended to the
** id's __transaction_state partition, and applied only when the append
** succeeds (completeTransitionTo); while it is in flight the id is pending
** and every request for it gets CONCURRENT_TRANSACTIONS.
**
** Requests (TransactionCoordinator):
**   InitProducerId   (handleInitProducerId) a new id gets a producer id and
**                    epoch 0 (state Empty). An id in Empty or Complete* gets
**                    its epoch bumped (state Empty): the previous instance is
**                    fenced. An id with an Ongoing transaction is fenced first
**                    (prepareFenceProducerEpoch: epoch + 1) and its
**                    transaction aborted with that epoch; the caller gets
**                    CONCURRENT_TRANSACTIONS and retries until the abort is
**                    complete, then gets one more bump. Prepare*:
**                    CONCURRENT_TRANSACTIONS.
**   AddPartitionsToTxn (handleAddPartitionsToTransaction) a producer id that
**                    is not the id's: INVALID_PRODUCER_ID_MAPPING (ksim:
**                    INVALID_TXN_STATE); an epoch that is not the current one:
**                    PRODUCER_FENCED; Prepare*: CONCURRENT_TRANSACTIONS; a
**                    partition already in an Ongoing transaction: NONE at once;
**                    else state Ongoing with the partition added (the start
**                    time set when the transaction begins).
**   EndTxn           (handleEndTransaction) the same id and epoch checks;
**                    Ongoing -> PrepareCommit or PrepareAbort, answered NONE
**                    once that record is written (the commit decision); then
**                    the markers. A retry of a completed end with the same
**                    result: NONE; of one still in Prepare*: CONCURRENT_TRANSACTIONS;
**                    any other state: INVALID_TXN_STATE.
**   markers          (TransactionMarkerChannelManager) a COMMIT or ABORT
**                    control batch for every partition of the transaction,
**                    sent to its leader (WriteTxnMarkers; the local log when
**                    that is this broker) and retried every 100 ms (ksim: a
**                    fixed backoff; Kafka retries through its inter-broker
**                    client) until each leader has appended it; then
**                    CompleteCommit or CompleteAbort is written and the
**                    partition list cleared.
**   timeouts         (abortTimedOutTransactions, every
**                    transaction.abort.timed.out.transaction.cleanup.interval.ms)
**                    an Ongoing transaction older than its timeout is fenced
**                    (epoch + 1) and aborted with that epoch: its producer's
**                    next request gets PRODUCER_FENCED (Kafka before KIP-890).
** Transaction version 2 (KIP-890 part 2, [cluster] transaction.version = 2;
** TransactionVersion.supportsEpochBump):
**   EndTxn           Ongoing -> Prepare* with the epoch + 1
**                    (prepareAbortOrCommit): the markers carry it and the
**                    answer returns it. At an epoch of Short.MaxValue - 1 or
**                    more the transaction also gets the next producer id,
**                    which replaces id and epoch (0) at the Complete* record
**                    (prepareComplete). In Prepare* and Complete* only the
**                    retry of the EndTxn that bumped it (epoch one below, or
**                    the previous id's last epoch after an overflow) passes;
**                    any other epoch is PRODUCER_FENCED (isValidEpoch).
**   fences           the abort of a fence bumps once more (epoch + 2 in all),
**                    as 4.0's endTransaction with the server's version does.
**   implicit adds    a partition leader's AddPartitionsToTxn (not verifyOnly,
**                    KS_MSG_TXN_VERIFY_REQUEST with add_partition) is
**                    handleAddPartitionsToTransaction for that partition,
**                    answered to the leader once the change is written.
** Loading (TransactionStateManager.loadTransactionsForTxnTopicPartition): a
** new leader of a __transaction_state partition reads it from the log start to
** the LEO, keeps each id's last value (a null value deletes it), and resumes
** the markers of every transaction it finds in PrepareCommit or PrepareAbort:
** a crash between the commit decision and the markers completes after
** recovery. The coordinator epoch written into each marker is the
** partition's leader epoch.
**
** Records (TransactionLog, version 0 of key and value, big-endian):
**   key:   version int16 0, transactional id (int16 length + bytes)
**   value: version int16 0, producer id int64, producer epoch int16,
**          transaction timeout ms int32, state int8, partitions (int32 count
**          of topics, each: topic name string, int32 count, int32 ids),
**          last update ms int64, start ms int64
**
** Simplifications: one partition per AddPartitionsToTxn and per
** WriteTxnMarkers request (Kafka batches them); no transactional.id
** expiration; the producer id of a new id comes from this broker's own
** counter (Kafka's ProducerIdManager blocks from the controller): unique over
** the run all the same; an epoch never reaches Short.MaxValue in a run
** through InitProducerId (Kafka would move to a new producer id); under
** transaction version 2 the next producer id of an exhausted epoch is not
** written into the record.
*/
#include "txn_coord.h"
#include "base.h"
#include "batch.h"
#include "broker.h"
#include "cluster.h"
#include "group.h"
#include "log.h"
#include "proto.h"

#include <glib.h>
#include <stdlib.h>
#include <string.h>

enum txn_state {
    TXN_EMPTY = 0,
    TXN_ONGOING = 1,
    TXN_PREPARE_COMMIT = 2,
    TXN_PREPARE_ABORT = 3,
    TXN_COMPLETE_COMMIT = 4,
    TXN_COMPLETE_ABORT = 5,
};

enum part_state { PART_NOT_OWNED, PART_LOADING, PART_OWNED };

enum txn_timer_kind {
    KS_TIMER_TXN_LOAD = 270,
    KS_TIMER_TXN_ABORT_CHECK = 271,
    KS_TIMER_TXN_MARKERS = 272,
};

#define MARKER_RETRY_NS ((ks_time_ns)100 * KS_NS_PER_MS)

struct txn_part {
    int32_t topic_index;
    int32_t partition;
    bool marked;        /* the leader appended this transaction's marker */
    int64_t request_id; /* a WriteTxnMarkers in flight, 0 none */
    ks_time_ns sent_ns; /* when it was sent */
};

/* The persisted part of a transaction's metadata. */
struct txn_value {
    int64_t producer_id;
    int16_t producer_epoch;
    int64_t timeout_ns;
    enum txn_state state;
    int64_t start_ns; /* ns of simulated time; -1 no transaction */
    int64_t update_ns;
    GArray *parts; /* struct txn_part, owned */
    /* transaction.version 2: the producer id the transaction moves to at
     * its Complete* record when its epoch ran out (Kafka's nextProducerId),
     * -1 none. Not in the record (see Simplifications). */
    int64_t next_producer_id;
};

struct txn {
    char id[KS_TRANSACTIONAL_ID_BYTES];
    int32_t partition; /* of __transaction_state */
    struct txn_value v;
    bool pending;    /* a state change is being written */
    bool completing; /* the Complete* record is being written */
    bool resumed;    /* loaded in Prepare*: an earlier coordinator decided it */
    int64_t previous_producer_id; /* before an epoch overflow moved it, -1 none */
};

/* A state change being written: applied by on_append_done. */
struct pending {
    struct ks_txn_coordinator *t;
    char id[KS_TRANSACTIONAL_ID_BYTES];
    int32_t partition;
    uint32_t load_epoch;
    struct txn_value next; /* owned */
    /* the client waiting for it, kind 0 none */
    ks_node_id reply_to;
    uint32_t reply_kind;
    int64_t correlation_id;
    int16_t reply_error; /* what to answer on success (InitProducerId after a fence) */
};

/* A marker appended locally (coordinator side) or for a remote coordinator
 * (partition-leader side). */
struct marker_ctx {
    struct ks_txn_coordinator *t;
    bool remote;
    ks_node_id reply_to;
    struct ks_txn_markers_request request;
};

struct ks_txn_coordinator {
    struct ks_broker *broker;
    ks_world *world;
    int32_t topic;
    int32_t partition_count;
    enum part_state *states;
    uint32_t *load_epochs;
    GPtrArray *txns;    /* struct txn *, in creation order (never iterated by hash) */
    GPtrArray *pending; /* struct pending * and struct marker_ctx * in flight */
    GPtrArray *markers; /* struct marker_ctx * in flight */
    ks_timer_id load_timer;
    ks_timer_id abort_timer;
    ks_timer_id marker_timer;
    int64_t next_request_id;
};

static ks_time_ns now_ns(const struct ks_txn_coordinator *t)
{
    return ks_world_now_ns(t->world);
}

static int64_t ms_of(int64_t ns)
{
    return KS_EPOCH_BASE_MS + ns / (int64_t)KS_NS_PER_MS;
}

static int64_t ns_of(int64_t ms)
{
    return ms <= KS_EPOCH_BASE_MS ? 0 : (ms - KS_EPOCH_BASE_MS) * (int64_t)KS_NS_PER_MS;
}

static void value_copy(struct txn_value *out, const struct txn_value *in)
{
    *out = *in;
    out->parts = g_array_new(FALSE, TRUE, sizeof(struct txn_part));
    g_array_append_vals(out->parts, in->parts->data, in->parts->len);
}

static struct txn *txn_find(const struct ks_txn_coordinator *t, const char *id)
{
    for (guint i = 0; i < t->txns->len; i++) {
        struct txn *txn = g_ptr_array_index(t->txns, i);
        if (strcmp(txn->id, id) == 0) {
            return txn;
        }
    }
    return NULL;
}

static void txn_free(struct txn *txn)
{
    g_array_free(txn->v.parts, TRUE);
    free(txn);
}

static struct txn *txn_new(struct ks_txn_coordinator *t, const char *id, int32_t partition)
{
    struct txn *txn = calloc(1, sizeof *txn);
    ks_assert(txn != NULL);
    g_strlcpy(txn->id, id, sizeof txn->id);
    txn->partition = partition;
    txn->v.producer_id = -1;
    txn->v.producer_epoch = -1;
    txn->v.next_producer_id = -1;
    txn->previous_producer_id = -1;
    txn->v.parts = g_array_new(FALSE, TRUE, sizeof(struct txn_part));
    g_ptr_array_add(t->txns, txn);
    return txn;
}

/* ---- records ------------------------------------------------------------------- */

static void put_i16(GByteArray *b, int16_t v)
{
    uint8_t x[2] = { (uint8_t)((uint16_t)v >> 8), (uint8_t)v };
    g_byte_array_append(b, x, 2);
}

static void put_i32(GByteArray *b, int32_t v)
{
    uint8_t x[4];
    for (int i = 0; i < 4; i++) {
        x[i] = (uint8_t)((uint32_t)v >> (24 - 8 * i));
    }
    g_byte_array_append(b, x, 4);
}

static void put_i64(GByteArray *b, int64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++) {
        x[i] = (uint8_t)((uint64_t)v >> (56 - 8 * i));
    }
    g_byte_array_append(b, x, 8);
}

static void put_string(GByteArray *b, const char *s)
{
    size_t n = strlen(s);
    put_i16(b, (int16_t)n);
    g_byte_array_append(b, (const uint8_t *)s, (guint)n);
}

struct reader {
    const uint8_t *p;
    int32_t left;
    bool bad;
};

static uint64_t get_bytes(struct reader *r, int n)
{
    if (r->bad || r->left < n) {
        r->bad = true;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; i++) {
        v = (v << 8) | r->p[i];
    }
    r->p += n;
    r->left -= n;
    return v;
}

static void get_string(struct reader *r, char *out, size_t out_bytes)
{
    int16_t n = (int16_t)get_bytes(r, 2);
    out[0] = 0;
    if (r->bad || n < 0 || n > r->left) {
        r->bad = true;
        return;
    }
    size_t copy = (size_t)n < out_bytes - 1 ? (size_t)n : out_bytes - 1;
    memcpy(out, r->p, copy);
    out[copy] = 0;
    r->p += n;
    r->left -= n;
}

static GByteArray *build_record(struct ks_txn_coordinator *t, const char *id,
                                const struct txn_value *v)
{
    const struct ks_cluster_spec *spec = ks_broker_spec(t->broker);
    (void)spec;
    GByteArray *key = g_byte_array_new();
    GByteArray *value = g_byte_array_new();
    put_i16(key, 0);
    put_string(key, id);
    put_i16(value, 0);
    put_i64(value, v->producer_id);
    put_i16(value, v->producer_epoch);
    put_i32(value, (int32_t)(v->timeout_ns / (int64_t)KS_NS_PER_MS));
    uint8_t state = (uint8_t)v->state;
    g_byte_array_append(value, &state, 1);
    /* Partitions grouped by topic, in the order they were added. */
    GArray *topics = g_array_new(FALSE, FALSE, sizeof(int32_t));
    for (guint i = 0; i < v->parts->len; i++) {
        int32_t topic = g_array_index(v->parts, struct txn_part, i).topic_index;
        bool seen = false;
        for (guint k = 0; k < topics->len; k++) {
            seen = seen || g_array_index(topics, int32_t, k) == topic;
        }
        if (!seen) {
            g_array_append_val(topics, topic);
        }
    }
    put_i32(value, (int32_t)topics->len);
    for (guint k = 0; k < topics->len; k++) {
        int32_t topic = g_array_index(topics, int32_t, k);
        put_string(value, ks_broker_topic_name(t->broker, topic));
        int32_t count = 0;
        for (guint i = 0; i < v->parts->len; i++) {
            count += g_array_index(v->parts, struct txn_part, i).topic_index == topic;
        }
        put_i32(value, count);
        for (guint i = 0; i < v->parts->len; i++) {
            const struct txn_part *part = &g_array_index(v->parts, struct txn_part, i);
            if (part->topic_index == topic) {
                put_i32(value, part->partition);
            }
        }
    }
    g_array_free(topics, TRUE);
    put_i64(value, ms_of(v->update_ns));
    put_i64(value, v->start_ns < 0 ? -1 : ms_of(v->start_ns));
    struct ks_batch_builder builder;
    int64_t timestamp = ms_of((int64_t)now_ns(t));
    ks_batch_builder_init(&builder, timestamp, -1, -1, -1);
    ks_batch_builder_add(&builder, timestamp, key->data, (int32_t)key->len, value->data,
                         (int32_t)value->len, NULL, 0);
    GByteArray *batch = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    g_byte_array_unref(key);
    g_byte_array_unref(value);
    return batch;
}

/* ---- responses ---------------------------------------------------------------- */

static void reply(struct ks_txn_coordinator *t, ks_node_id to, uint32_t kind,
                  int64_t correlation_id, int16_t error, const struct txn *txn)
{
    struct ks_txn_response response;
    memset(&response, 0, sizeof response);
    response.correlation_id = correlation_id;
    response.error_code = error;
    response.coordinator_id = -1;
    if (txn != NULL && error == KS_ERR_NONE) {
        response.producer_id = txn->v.producer_id;
        response.producer_epoch = txn->v.producer_epoch;
        if (txn->v.next_producer_id >= 0) {
            /* An EndTxn that ran out of epochs: the producer goes on with
             * the next producer id at epoch 0. */
            response.producer_id = txn->v.next_producer_id;
            response.producer_epoch = 0;
        }
    }
    if (to == ks_broker_node(t->broker) && kind == KS_MSG_TXN_VERIFY_RESPONSE) {
        ks_broker_txn_add_answered(t->broker, &response); /* our own leader's implicit add */
        return;
    }
    ks_world_send(t->world, ks_broker_node(t->broker), to, kind, &response, sizeof response);
}

/* transaction.version 2 (KIP-890 part 2): every EndTxn bumps the epoch. */
static bool epoch_bump_per_txn(const struct ks_txn_coordinator *t)
{
    return ks_broker_spec(t->broker)->cluster->transaction_version >= 2;
}

/* ---- state changes ---------------------------------------------------------------- */

static void on_append_done(void *context, int16_t error, int64_t base_offset);
static void start_markers(struct ks_txn_coordinator *t);

/* Writes `next` for txn; the client (reply_kind != 0) is answered when it is written. */
static void transit(struct ks_txn_coordinator *t, struct txn *txn, struct txn_value *next,
                    ks_node_id reply_to, uint32_t reply_kind, int64_t correlation_id,
                    int16_t reply_error)
{
    ks_assert(!txn->pending);
    struct pending *p = calloc(1, sizeof *p);
    ks_assert(p != NULL);
    p->t = t;
    g_strlcpy(p->id, txn->id, sizeof p->id);
    p->partition = txn->partition;
    p->load_epoch = t->load_epochs[txn->partition];
    p->next = *next; /* takes next->parts */
    p->next.update_ns = (int64_t)now_ns(t);
    p->reply_to = reply_to;
    p->reply_kind = reply_kind;
    p->correlation_id = correlation_id;
    p->reply_error = reply_error;
    txn->pending = true;
    GByteArray *batch = build_record(t, txn->id, &p->next);
    g_ptr_array_add(t->pending, p);
    ks_broker_append_internal(t->broker, t->topic, txn->partition, batch->data, batch->len,
                              on_append_done, p);
    g_byte_array_unref(batch);
}

/* TransactionStateManager.appendTransactionToLog's error mapping. */
static int16_t map_append_error(int16_t error)
{
    switch (error) {
    case KS_ERR_NONE: return KS_ERR_NONE;
    case KS_ERR_NOT_LEADER_OR_FOLLOWER: return KS_ERR_NOT_COORDINATOR;
    default: return KS_ERR_COORDINATOR_NOT_AVAILABLE;
    }
}

/* ---- timeline events ------------------------------------------------------------ */

/* A TXN_STATE event for a state change of txn to `next` just written:
 * Prepare* (the decision; a bumped epoch means a fence, by a newer instance's
 * InitProducerId (reply_kind set) or transaction.timeout.ms) and Complete*
 * (every marker written). Empty and Ongoing are routine: no event. */
static void emit_state(struct ks_txn_coordinator *t, struct txn *txn, const struct txn_value *next,
                       uint32_t reply_kind)
{
    enum ks_event_reason reason = KS_REASON_NONE;
    switch (next->state) {
    case TXN_PREPARE_COMMIT: reason = KS_REASON_TXN_PREPARE_COMMIT; break;
    case TXN_PREPARE_ABORT: reason = KS_REASON_TXN_PREPARE_ABORT; break;
    case TXN_COMPLETE_COMMIT: reason = KS_REASON_TXN_COMPLETE_COMMIT; break;
    case TXN_COMPLETE_ABORT: reason = KS_REASON_TXN_COMPLETE_ABORT; break;
    case TXN_EMPTY:
    case TXN_ONGOING: return;
    }
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, 0, KS_EV_TXN_STATE);
    event.reason = reason;
    event.topic_index = t->topic;
    event.partition = txn->partition;
    event.transactional_id = txn->id;
    event.txn_producer_id = next->producer_id;
    event.txn_producer_epoch = next->producer_epoch;
    /* The Complete* record lists no partitions any more: count the Prepare's. */
    event.partition_count = (int32_t)txn->v.parts->len;
    event.resumed = txn->resumed && reason != KS_REASON_TXN_PREPARE_COMMIT &&
                    reason != KS_REASON_TXN_PREPARE_ABORT;
    /* A fence bumps the epoch once more than an EndTxn does (which bumps
     * it by one under transaction.version 2, else not at all). */
    int16_t end_bump = epoch_bump_per_txn(t) ? 1 : 0;
    if (reason == KS_REASON_TXN_PREPARE_ABORT &&
        next->producer_epoch > txn->v.producer_epoch + end_bump) {
        event.error_code = KS_ERR_PRODUCER_FENCED;
        event.elapsed_ns = txn->v.start_ns >= 0 ? (int64_t)now_ns(t) - txn->v.start_ns : 0;
        event.txn_timed_out = reply_kind == 0; /* abortTimedOutTransactions */
    }
    if (reason != KS_REASON_TXN_PREPARE_COMMIT && reason != KS_REASON_TXN_PREPARE_ABORT) {
        txn->resumed = false;
    }
    ks_broker_emit(t->broker, &event);
}

/* A TXN_STATE event for a loaded __transaction_state partition. */
static void emit_loaded(struct ks_txn_coordinator *t, int32_t partition)
{
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, 0, KS_EV_TXN_STATE);
    event.reason = KS_REASON_TXN_LOADED;
    event.topic_index = t->topic;
    event.partition = partition;
    event.leader_epoch_new = ks_broker_partition_leader_epoch(t->broker, t->topic, partition);
    for (guint i = 0; i < t->txns->len; i++) {
        struct txn *txn = g_ptr_array_index(t->txns, i);
        if (txn->partition != partition) {
            continue;
        }
        event.record_count++;
        txn->resumed = txn->v.state == TXN_PREPARE_COMMIT || txn->v.state == TXN_PREPARE_ABORT;
        event.batch_count += txn->resumed;
    }
    ks_broker_emit(t->broker, &event);
}

static void on_append_done(void *context, int16_t error, int64_t base_offset)
{
    (void)base_offset;
    struct pending *p = context;
    struct ks_txn_coordinator *t = p->t;
    bool removed = g_ptr_array_remove(t->pending, p);
    ks_assert(removed);
    struct txn *txn = txn_find(t, p->id);
    bool current = p->load_epoch == t->load_epochs[p->partition] && txn != NULL &&
                   t->states[p->partition] == PART_OWNED;
    if (!current) {
        /* The partition moved (or was reloaded) meanwhile: the new owner
         * decides; the client retries on NOT_COORDINATOR. */
        if (p->reply_kind != 0) {
            reply(t, p->reply_to, p->reply_kind, p->correlation_id, KS_ERR_NOT_COORDINATOR, NULL);
        }
    } else if (error != KS_ERR_NONE) {
        txn->pending = false;
        txn->completing = false;
        if (p->reply_kind != 0) {
            reply(t, p->reply_to, p->reply_kind, p->correlation_id, map_append_error(error), NULL);
        }
        /* A Prepare* or Complete* not written: the marker timer tries again. */
        start_markers(t);
    } else {
        txn->pending = false;
        txn->completing = false;
        emit_state(t, txn, &p->next, p->reply_kind);
        g_array_free(txn->v.parts, TRUE);
        txn->v = p->next;
        p->next.parts = NULL;
        if (p->reply_kind != 0) {
            reply(t, p->reply_to, p->reply_kind, p->correlation_id, p->reply_error, txn);
        }
        if (txn->v.state == TXN_PREPARE_COMMIT || txn->v.state == TXN_PREPARE_ABORT) {
            start_markers(t);
        }
    }
    if (p->next.parts != NULL) {
        g_array_free(p->next.parts, TRUE);
    }
    free(p);
}

/* ---- markers ------------------------------------------------------------------ */

static void markers_due(ks_world *world, void *context);

static void start_markers(struct ks_txn_coordinator *t)
{
    if (t->marker_timer == 0) {
        t->marker_timer = ks_world_schedule(t->world, ks_broker_node(t->broker), 0,
                                            KS_TIMER_TXN_MARKERS, markers_due, t);
    }
}

static struct txn_part *find_part_by_request(struct ks_txn_coordinator *t, int64_t request_id,
                                             struct txn **txn_out)
{
    for (guint i = 0; i < t->txns->len; i++) {
        struct txn *txn = g_ptr_array_index(t->txns, i);
        for (guint k = 0; k < txn->v.parts->len; k++) {
            struct txn_part *part = &g_array_index(txn->v.parts, struct txn_part, k);
            if (part->request_id == request_id) {
                *txn_out = txn;
                return part;
            }
        }
    }
    return NULL;
}

/* A marker's outcome for the coordinator, local or remote. */
static void marker_result(struct ks_txn_coordinator *t, int64_t request_id, int16_t error)
{
    struct txn *txn = NULL;
    struct txn_part *part = find_part_by_request(t, request_id, &txn);
    if (part == NULL) {
        return; /* a stale answer */
    }
    part->request_id = 0;
    if (error == KS_ERR_NONE) {
        part->marked = true;
    }
    /* A pass now, not at the retry timer already set: Kafka writes the
     * completion as soon as the last marker is answered
     * (TransactionMarkerRequestCompletionHandler, then
     * TransactionMarkerChannelManager.maybeWriteTxnCompletion). The pass
     * resends nothing that is in flight or failed less than a backoff ago. */
    if (t->marker_timer != 0) {
        ks_world_cancel(t->world, t->marker_timer);
        t->marker_timer = 0;
    }
    start_markers(t);
}

static void on_local_marker(void *context, int16_t error, int64_t base_offset)
{
    (void)base_offset;
    struct marker_ctx *m = context;
    struct ks_txn_coordinator *t = m->t;
    bool removed = g_ptr_array_remove(t->markers, m);
    ks_assert(removed);
    if (error == KS_ERR_NONE) {
        ks_broker_txn_marker_written(t->broker, m->request.topic_index, m->request.partition,
                                     m->request.producer_id, m->request.commit != 0);
    }
    if (m->remote) {
        struct ks_txn_markers_response response;
        memset(&response, 0, sizeof response);
        response.correlation_id = m->request.correlation_id;
        response.topic_index = m->request.topic_index;
        response.partition = m->request.partition;
        response.error_code = error;
        ks_world_send(t->world, ks_broker_node(t->broker), m->reply_to,
                      KS_MSG_TXN_WRITE_MARKERS_RESPONSE, &response, sizeof response);
    } else {
        marker_result(t, m->request.correlation_id, error);
    }
    free(m);
}

static void append_marker(struct ks_txn_coordinator *t, const struct ks_txn_markers_request *r,
                          bool remote, ks_node_id reply_to)
{
    struct marker_ctx *m = calloc(1, sizeof *m);
    ks_assert(m != NULL);
    m->t = t;
    m->remote = remote;
    m->reply_to = reply_to;
    m->request = *r;
    g_ptr_array_add(t->markers, m);
    ks_broker_append_marker(t->broker, r->topic_index, r->partition, r->producer_id,
                            r->producer_epoch, r->commit != 0, r->coordinator_epoch,
                            on_local_marker, m);
}

static void send_marker(struct ks_txn_coordinator *t, struct txn *txn, struct txn_part *part)
{
    int32_t leader = ks_broker_partition_leader(t->broker, part->topic_index, part->partition);
    part->sent_ns = now_ns(t);
    if (leader < 0) {
        return; /* no leader known: the next pass tries again */
    }
    struct ks_txn_markers_request r;
    memset(&r, 0, sizeof r);
    r.correlation_id = ++t->next_request_id;
    r.producer_id = txn->v.producer_id;
    r.producer_epoch = txn->v.producer_epoch;
    r.topic_index = part->topic_index;
    r.partition = part->partition;
    r.commit = txn->v.state == TXN_PREPARE_COMMIT;
    int32_t epoch = ks_broker_partition_leader_epoch(t->broker, t->topic, txn->partition);
    r.coordinator_epoch = epoch < 0 ? 0 : epoch;
    part->request_id = r.correlation_id;
    if (leader == ks_broker_id(t->broker)) {
        append_marker(t, &r, false, 0);
    } else {
        ks_world_send(t->world, ks_broker_node(t->broker), (ks_node_id)leader,
                      KS_MSG_TXN_WRITE_MARKERS_REQUEST, &r, sizeof r);
    }
}

/* One pass over the transactions that wait for markers: send what is not
 * in flight (or in flight longer than request.timeout.ms, or failed a retry
 * backoff ago), write Complete* for those whose markers are all written. */
static void markers_due(ks_world *world, void *context)
{
    (void)world;
    struct ks_txn_coordinator *t = context;
    t->marker_timer = 0;
    ks_time_ns now = now_ns(t);
    bool again = false;
    for (guint i = 0; i < t->txns->len; i++) {
        struct txn *txn = g_ptr_array_index(t->txns, i);
        if (t->states[txn->partition] != PART_OWNED || txn->pending ||
            (txn->v.state != TXN_PREPARE_COMMIT && txn->v.state != TXN_PREPARE_ABORT)) {
            continue;
        }
        bool all = true;
        for (guint k = 0; k < txn->v.parts->len; k++) {
            struct txn_part *part = &g_array_index(txn->v.parts, struct txn_part, k);
            if (part->marked) {
                continue;
            }
            all = false;
            again = true;
            bool stale =
                part->request_id != 0 && now - part->sent_ns >= (ks_time_ns)30 * KS_NS_PER_S;
            bool backed_off = part->request_id == 0 &&
                              (part->sent_ns == 0 || now - part->sent_ns >= MARKER_RETRY_NS);
            if (stale || backed_off) {
                send_marker(t, txn, part);
            }
        }
        if (all) {
            struct txn_value next;
            value_copy(&next, &txn->v);
            next.state =
                txn->v.state == TXN_PREPARE_COMMIT ? TXN_COMPLETE_COMMIT : TXN_COMPLETE_ABORT;
            g_array_set_size(next.parts, 0);
            if (next.next_producer_id >= 0) {
                /* prepareComplete: after an epoch overflow the transaction
                 * moves to the next producer id once its markers are written. */
                txn->previous_producer_id = next.producer_id;
                next.producer_id = next.next_producer_id;
                next.producer_epoch = 0;
                next.next_producer_id = -1;
            }
            txn->completing = true;
            transit(t, txn, &next, 0, 0, 0, KS_ERR_NONE);
        }
    }
    if (again) {
        t->marker_timer = ks_world_schedule(t->world, ks_broker_node(t->broker), MARKER_RETRY_NS,
                                            KS_TIMER_TXN_MARKERS, markers_due, t);
    }
}

/* ---- requests ----------------------------------------------------------------- */

static int32_t partition_for(const struct ks_txn_coordinator *t, const char *id)
{
    /* TransactionStateManager.partitionFor: Utils.abs(hashCode) % count, the
     * same formula as the group coordinator's. */
    return ks_group_offsets_partition(id, t->partition_count);
}

/* NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, or NONE. */
static int16_t ownership_error(const struct ks_txn_coordinator *t, int32_t partition)
{
    switch (t->states[partition]) {
    case PART_NOT_OWNED: return KS_ERR_NOT_COORDINATOR;
    case PART_LOADING: return KS_ERR_COORDINATOR_LOAD_IN_PROGRESS;
    case PART_OWNED: break;
    }
    return KS_ERR_NONE;
}

static void fence_and_abort(struct ks_txn_coordinator *t, struct txn *txn, ks_node_id reply_to,
                            uint32_t reply_kind, int64_t correlation_id, int16_t reply_error)
{
    /* prepareFenceProducerEpoch, then the abort with the bumped epoch. Under
     * transaction.version 2 the abort (endTransaction with the server's
     * version) bumps it once more (prepareAbortOrCommit), so that the fenced
     * producer's EndTxn with its old epoch cannot pass for a retry of an
     * EndTxn that bumped it by one. */
    int32_t bump = epoch_bump_per_txn(t) ? 2 : 1;
    ks_assert(txn->v.producer_epoch + bump <= INT16_MAX);
    struct txn_value next;
    value_copy(&next, &txn->v);
    next.producer_epoch = (int16_t)(txn->v.producer_epoch + bump);
    next.state = TXN_PREPARE_ABORT;
    for (guint k = 0; k < next.parts->len; k++) {
        struct txn_part *part = &g_array_index(next.parts, struct txn_part, k);
        part->marked = false;
        part->request_id = 0;
        part->sent_ns = 0;
    }
    transit(t, txn, &next, reply_to, reply_kind, correlation_id, reply_error);
}

static void handle_init(struct ks_txn_coordinator *t, ks_node_id source,
                        const struct ks_txn_request *r, const char *id)
{
    const uint32_t kind = KS_MSG_TXN_INIT_PRODUCER_ID_RESPONSE;
    int32_t partition = partition_for(t, id);
    int16_t error = ownership_error(t, partition);
    if (error != KS_ERR_NONE) {
        reply(t, source, kind, r->correlation_id, error, NULL);
        return;
    }
    struct txn *txn = txn_find(t, id);
    if (txn == NULL) {
        txn = txn_new(t, id, partition);
    }
    if (txn->pending || txn->v.state == TXN_PREPARE_COMMIT || txn->v.state == TXN_PREPARE_ABORT) {
        reply(t, source, kind, r->correlation_id, KS_ERR_CONCURRENT_TRANSACTIONS, NULL);
        return;
    }
    if (txn->v.state == TXN_ONGOING) {
        fence_and_abort(t, txn, source, kind, r->correlation_id, KS_ERR_CONCURRENT_TRANSACTIONS);
        return;
    }
    struct txn_value next;
    value_copy(&next, &txn->v);
    if (next.producer_id < 0) {
        next.producer_id = ks_broker_allocate_producer_id(t->broker);
        next.producer_epoch = 0;
    } else {
        next.producer_epoch = (int16_t)(next.producer_epoch + 1);
    }
    next.timeout_ns = r->timeout_ns;
    next.state = TXN_EMPTY;
    next.start_ns = -1;
    g_array_set_size(next.parts, 0);
    transit(t, txn, &next, source, kind, r->correlation_id, KS_ERR_NONE);
}

/* The checks AddPartitionsToTxn and EndTxn share; NONE when they pass. */
static int16_t check_producer(const struct ks_txn_coordinator *t, const struct ks_txn_request *r,
                              const char *id, struct txn **txn_out)
{
    int32_t partition = partition_for(t, id);
    int16_t error = ownership_error(t, partition);
    if (error != KS_ERR_NONE) {
        return error;
    }
    struct txn *txn = txn_find(t, id);
    if (txn == NULL || txn->v.producer_id != r->producer_id) {
        return KS_ERR_INVALID_TXN_STATE; /* Kafka: INVALID_PRODUCER_ID_MAPPING */
    }
    if (r->producer_epoch != txn->v.producer_epoch) {
        return KS_ERR_PRODUCER_FENCED;
    }
    if (txn->pending) {
        return KS_ERR_CONCURRENT_TRANSACTIONS;
    }
    *txn_out = txn;
    return KS_ERR_NONE;
}

static void handle_add(struct ks_txn_coordinator *t, ks_node_id source,
                       const struct ks_txn_request *r, const char *id, uint32_t kind)
{
    struct txn *txn = NULL;
    int16_t error = check_producer(t, r, id, &txn);
    if (error == KS_ERR_NONE &&
        (txn->v.state == TXN_PREPARE_COMMIT || txn->v.state == TXN_PREPARE_ABORT)) {
        error = KS_ERR_CONCURRENT_TRANSACTIONS;
    }
    if (error != KS_ERR_NONE) {
        reply(t, source, kind, r->correlation_id, error, NULL);
        return;
    }
    if (txn->v.state == TXN_ONGOING) {
        for (guint k = 0; k < txn->v.parts->len; k++) {
            const struct txn_part *part = &g_array_index(txn->v.parts, struct txn_part, k);
            if (part->topic_index == r->topic_index && part->partition == r->partition) {
                reply(t, source, kind, r->correlation_id, KS_ERR_NONE, txn);
                return;
            }
        }
    }
    struct txn_value next;
    value_copy(&next, &txn->v);
    if (txn->v.state != TXN_ONGOING) {
        next.start_ns = (int64_t)now_ns(t);
        g_array_set_size(next.parts, 0);
    }
    next.state = TXN_ONGOING;
    struct txn_part part;
    memset(&part, 0, sizeof part);
    part.topic_index = r->topic_index;
    part.partition = r->partition;
    g_array_append_val(next.parts, part);
    transit(t, txn, &next, source, kind, r->correlation_id, KS_ERR_NONE);
}

/* EndTxn's checks under transaction.version 2 (endTransaction's
 * isValidEpoch with a TV_2 client): the epoch must be the current one in
 * Ongoing and Empty; in Prepare* and Complete* only a retry of the EndTxn
 * that bumped it passes (its epoch one below the current one, or the last
 * epoch of the previous producer id after an overflow). */
static int16_t check_end_v2(const struct ks_txn_coordinator *t, const struct ks_txn_request *r,
                            const char *id, struct txn **txn_out)
{
    int16_t error = ownership_error(t, partition_for(t, id));
    if (error != KS_ERR_NONE) {
        return error;
    }
    struct txn *txn = txn_find(t, id);
    if (txn == NULL) {
        return KS_ERR_INVALID_TXN_STATE; /* Kafka: INVALID_PRODUCER_ID_MAPPING */
    }
    bool retry_on_overflow = r->producer_id == txn->previous_producer_id &&
                             r->producer_epoch == INT16_MAX - 1 && txn->v.producer_epoch == 0;
    bool retry_on_bump = r->producer_epoch + 1 == txn->v.producer_epoch;
    if (txn->v.producer_id != r->producer_id && !retry_on_overflow) {
        return KS_ERR_INVALID_TXN_STATE;
    }
    bool valid = false;
    switch (txn->v.state) {
    case TXN_EMPTY:
    case TXN_ONGOING: valid = r->producer_epoch == txn->v.producer_epoch; break;
    case TXN_PREPARE_COMMIT:
    case TXN_PREPARE_ABORT: valid = retry_on_bump; break;
    case TXN_COMPLETE_COMMIT:
    case TXN_COMPLETE_ABORT: valid = retry_on_bump || retry_on_overflow; break;
    }
    if (!valid) {
        return KS_ERR_PRODUCER_FENCED;
    }
    if (txn->pending) {
        return KS_ERR_CONCURRENT_TRANSACTIONS;
    }
    *txn_out = txn;
    return KS_ERR_NONE;
}

static void handle_end(struct ks_txn_coordinator *t, ks_node_id source,
                       const struct ks_txn_request *r, const char *id)
{
    const uint32_t kind = KS_MSG_TXN_END_RESPONSE;
    struct txn *txn = NULL;
    bool bump = epoch_bump_per_txn(t);
    int16_t error = bump ? check_end_v2(t, r, id, &txn) : check_producer(t, r, id, &txn);
    if (error != KS_ERR_NONE) {
        reply(t, source, kind, r->correlation_id, error, NULL);
        return;
    }
    bool commit = r->commit != 0;
    switch (txn->v.state) {
    case TXN_ONGOING: {
        struct txn_value next;
        value_copy(&next, &txn->v);
        next.state = commit ? TXN_PREPARE_COMMIT : TXN_PREPARE_ABORT;
        if (bump) {
            /* KIP-890 part 2 (TransactionMetadata.prepareAbortOrCommit with
             * TV_2): the epoch goes up by one at every end, and the markers
             * carry the bumped epoch, so a late batch of this transaction
             * (old epoch) is refused wherever it lands. An epoch that would
             * reach Short.MaxValue (isProducerEpochExhausted) also gets the
             * next producer id, taken at the Complete* record. */
            if (txn->v.producer_epoch >= INT16_MAX - 1) {
                next.next_producer_id = ks_broker_allocate_producer_id(t->broker);
            }
            next.producer_epoch = (int16_t)(txn->v.producer_epoch + 1);
        }
        transit(t, txn, &next, source, kind, r->correlation_id, KS_ERR_NONE);
        return;
    }
    case TXN_COMPLETE_COMMIT: error = commit ? KS_ERR_NONE : KS_ERR_INVALID_TXN_STATE; break;
    case TXN_COMPLETE_ABORT: error = commit ? KS_ERR_INVALID_TXN_STATE : KS_ERR_NONE; break;
    case TXN_PREPARE_COMMIT:
        error = commit ? KS_ERR_CONCURRENT_TRANSACTIONS : KS_ERR_INVALID_TXN_STATE;
        break;
    case TXN_PREPARE_ABORT:
        error = commit ? KS_ERR_INVALID_TXN_STATE : KS_ERR_CONCURRENT_TRANSACTIONS;
        break;
    case TXN_EMPTY: error = KS_ERR_INVALID_TXN_STATE; break;
    }
    /* A retried end that already completed: Kafka answers with the current
     * producer id and epoch, which a TV_2 producer goes on with. */
    reply(t, source, kind, r->correlation_id, error, bump ? txn : NULL);
}

/* AddOffsetsToTxn (KafkaApis.handleAddOffsetsToTxnRequest): the group's
 * __consumer_offsets partition, partitionFor(group.id), joins the
 * transaction as any partition does (handleAddPartitionsToTransaction), so
 * that the transaction's marker also reaches the offsets its TxnOffsetCommit
 * writes there. */
static void handle_add_offsets(struct ks_txn_coordinator *t, ks_node_id source,
                               const struct ks_txn_add_offsets_request *r)
{
    char id[KS_TRANSACTIONAL_ID_BYTES];
    char group_id[sizeof r->group_id];
    g_strlcpy(id, r->txn.transactional_id, sizeof id);
    g_strlcpy(group_id, r->group_id, sizeof group_id);
    struct ks_txn_request add = r->txn;
    add.topic_index = ks_broker_topic_index(t->broker, "__consumer_offsets");
    if (add.topic_index < 0) {
        /* No group exists in this cluster (no consumer): nothing to add to. */
        reply(t, source, KS_MSG_TXN_ADD_OFFSETS_RESPONSE, r->txn.correlation_id,
              KS_ERR_COORDINATOR_NOT_AVAILABLE, NULL);
        return;
    }
    add.partition = ks_group_offsets_partition(
        group_id, ks_broker_partition_count(t->broker, add.topic_index));
    handle_add(t, source, &add, id, KS_MSG_TXN_ADD_OFFSETS_RESPONSE);
}

static void handle_find(struct ks_txn_coordinator *t, ks_node_id source,
                        const struct ks_txn_request *r, const char *id)
{
    struct ks_txn_response response;
    memset(&response, 0, sizeof response);
    response.correlation_id = r->correlation_id;
    int32_t leader = ks_broker_partition_leader(t->broker, t->topic, partition_for(t, id));
    response.coordinator_id = leader;
    response.error_code = leader < 0 ? KS_ERR_COORDINATOR_NOT_AVAILABLE : KS_ERR_NONE;
    ks_world_send(t->world, ks_broker_node(t->broker), source, KS_MSG_TXN_FIND_COORDINATOR_RESPONSE,
                  &response, sizeof response);
}

/* ---- KIP-890 part 1: verification ------------------------------------------------ */

int16_t ks_txn_coordinator_verify(const struct ks_txn_coordinator *t,
                                  const struct ks_txn_request *r)
{
    char id[KS_TRANSACTIONAL_ID_BYTES];
    g_strlcpy(id, r->transactional_id, sizeof id);
    int32_t partition = partition_for(t, id);
    int16_t error = ownership_error(t, partition);
    if (error != KS_ERR_NONE) {
        return error;
    }
    const struct txn *txn = txn_find(t, id);
    if (txn == NULL || txn->v.producer_id != r->producer_id) {
        return KS_ERR_INVALID_TXN_STATE; /* Kafka: INVALID_PRODUCER_ID_MAPPING */
    }
    if (txn->v.producer_epoch != r->producer_epoch) {
        return KS_ERR_PRODUCER_FENCED;
    }
    if (txn->v.state == TXN_PREPARE_COMMIT || txn->v.state == TXN_PREPARE_ABORT) {
        return KS_ERR_CONCURRENT_TRANSACTIONS;
    }
    /* A pending change is not looked at: partitions join the metadata when
     * the AddPartitionsToTxn record is written and leave it when the
     * Complete* record is, and the leader checks its guard at the append. */
    for (guint k = 0; k < txn->v.parts->len; k++) {
        const struct txn_part *part = &g_array_index(txn->v.parts, struct txn_part, k);
        if (part->topic_index == r->topic_index && part->partition == r->partition) {
            return KS_ERR_NONE;
        }
    }
    /* Kafka 3.8+ answers TRANSACTION_ABORTABLE, which AddPartitionsToTxnManager
     * turns back into INVALID_TXN_STATE for producers before KIP-890 part 2;
     * 3.6 answered INVALID_TXN_STATE itself. */
    return KS_ERR_INVALID_TXN_STATE;
}

static void handle_verify(struct ks_txn_coordinator *t, ks_node_id source,
                          const struct ks_txn_request *r)
{
    /* The same bytes as every other answer of the coordinator (no txn: no
     * producer id or epoch). A leader on this broker asks directly
     * (ks_txn_coordinator_verify), never through this message. */
    reply(t, source, KS_MSG_TXN_VERIFY_RESPONSE, r->correlation_id,
          ks_txn_coordinator_verify(t, r), NULL);
}

/* ---- timeouts ----------------------------------------------------------------- */

static void abort_check(ks_world *world, void *context)
{
    (void)world;
    struct ks_txn_coordinator *t = context;
    ks_time_ns now = now_ns(t);
    for (guint i = 0; i < t->txns->len; i++) {
        struct txn *txn = g_ptr_array_index(t->txns, i);
        if (t->states[txn->partition] == PART_OWNED && !txn->pending &&
            txn->v.state == TXN_ONGOING && (int64_t)now - txn->v.start_ns > txn->v.timeout_ns) {
            fence_and_abort(t, txn, 0, 0, 0, KS_ERR_NONE);
        }
    }
    t->abort_timer = ks_world_schedule(
        t->world, ks_broker_node(t->broker),
        (ks_time_ns)ks_broker_spec(t->broker)->cluster->txn_abort_check_interval_ns,
        KS_TIMER_TXN_ABORT_CHECK, abort_check, t);
}

/* ---- loading ------------------------------------------------------------------- */

struct load_scan {
    struct ks_txn_coordinator *t;
    int32_t partition;
};

static void load_record(struct ks_txn_coordinator *t, int32_t partition,
                        const struct ks_record_view *record)
{
    struct reader key = { record->key, record->key_bytes, false };
    char id[KS_TRANSACTIONAL_ID_BYTES];
    if (record->key == NULL || (int16_t)get_bytes(&key, 2) != 0) {
        return;
    }
    get_string(&key, id, sizeof id);
    if (key.bad) {
        return;
    }
    struct txn *txn = txn_find(t, id);
    if (record->value == NULL) { /* a tombstone (expiration): gone */
        if (txn != NULL) {
            g_ptr_array_remove(t->txns, txn);
            txn_free(txn);
        }
        return;
    }
    struct reader r = { record->value, record->value_bytes, false };
    struct txn_value v;
    memset(&v, 0, sizeof v);
    (void)get_bytes(&r, 2);
    v.producer_id = (int64_t)get_bytes(&r, 8);
    v.producer_epoch = (int16_t)get_bytes(&r, 2);
    v.timeout_ns = (int64_t)(int32_t)get_bytes(&r, 4) * (int64_t)KS_NS_PER_MS;
    v.state = (enum txn_state)get_bytes(&r, 1);
    v.next_producer_id = -1;
    v.parts = g_array_new(FALSE, TRUE, sizeof(struct txn_part));
    int32_t topics = (int32_t)get_bytes(&r, 4);
    for (int32_t k = 0; k < topics && !r.bad; k++) {
        char name[256];
        get_string(&r, name, sizeof name);
        int32_t topic = ks_broker_topic_index(t->broker, name);
        int32_t count = (int32_t)get_bytes(&r, 4);
        for (int32_t i = 0; i < count && !r.bad; i++) {
            struct txn_part part;
            memset(&part, 0, sizeof part);
            part.topic_index = topic;
            part.partition = (int32_t)get_bytes(&r, 4);
            if (topic >= 0) {
                g_array_append_val(v.parts, part);
            }
        }
    }
    v.update_ns = ns_of((int64_t)get_bytes(&r, 8));
    int64_t start_ms = (int64_t)get_bytes(&r, 8);
    v.start_ns = start_ms < 0 ? -1 : ns_of(start_ms);
    if (r.bad || v.state > TXN_COMPLETE_ABORT) {
        g_array_free(v.parts, TRUE);
        return;
    }
    if (txn == NULL) {
        txn = txn_new(t, id, partition);
    }
    g_array_free(txn->v.parts, TRUE);
    txn->v = v;
}

static void load_visit(void *context, const struct ks_record_view *record)
{
    struct load_scan *scan = context;
    load_record(scan->t, scan->partition, record);
}

static void on_load(ks_world *world, void *context)
{
    (void)world;
    struct ks_txn_coordinator *t = context;
    t->load_timer = 0;
    for (int32_t p = 0; p < t->partition_count; p++) {
        if (t->states[p] != PART_LOADING) {
            continue;
        }
        struct load_scan scan = { t, p };
        ks_broker_load_local(t->broker, t->topic, p, load_visit, &scan);
        t->states[p] = PART_OWNED;
        emit_loaded(t, p);
    }
    /* Loaded transactions in Prepare* get their markers again
     * (TransactionStateManager hands them to the marker channel). */
    start_markers(t);
}

static void drop_partition(struct ks_txn_coordinator *t, int32_t partition)
{
    for (guint i = t->txns->len; i > 0; i--) {
        struct txn *txn = g_ptr_array_index(t->txns, i - 1);
        if (txn->partition == partition) {
            g_ptr_array_remove_index(t->txns, i - 1);
            txn_free(txn);
        }
    }
}

void ks_txn_coordinator_on_leadership(struct ks_txn_coordinator *t, int32_t partition,
                                      bool is_leader)
{
    ks_assert(partition >= 0 && partition < t->partition_count);
    if (is_leader) {
        if (t->states[partition] != PART_NOT_OWNED) {
            return;
        }
        t->load_epochs[partition]++;
        drop_partition(t, partition);
        t->states[partition] = PART_LOADING;
        if (t->load_timer == 0) {
            t->load_timer = ks_world_schedule(t->world, ks_broker_node(t->broker), 0,
                                              KS_TIMER_TXN_LOAD, on_load, t);
        }
    } else if (t->states[partition] != PART_NOT_OWNED) {
        t->load_epochs[partition]++;
        t->states[partition] = PART_NOT_OWNED;
        drop_partition(t, partition);
    }
}

/* ---- life cycle and dispatch ----------------------------------------------------- */

struct ks_txn_coordinator *ks_txn_coordinator_new(struct ks_broker *broker)
{
    struct ks_txn_coordinator *t = calloc(1, sizeof *t);
    ks_assert(t != NULL);
    t->broker = broker;
    t->world = ks_broker_world(broker);
    t->topic = ks_broker_topic_index(broker, KS_TXN_TOPIC_NAME);
    ks_assert(t->topic >= 0);
    t->partition_count = ks_broker_partition_count(broker, t->topic);
    t->states = calloc((size_t)t->partition_count, sizeof *t->states);
    t->load_epochs = calloc((size_t)t->partition_count, sizeof *t->load_epochs);
    ks_assert(t->states != NULL && t->load_epochs != NULL);
    t->txns = g_ptr_array_new();
    t->pending = g_ptr_array_new();
    t->markers = g_ptr_array_new();
    t->abort_timer =
        ks_world_schedule(t->world, ks_broker_node(broker),
                          (ks_time_ns)ks_broker_spec(broker)->cluster->txn_abort_check_interval_ns,
                          KS_TIMER_TXN_ABORT_CHECK, abort_check, t);
    return t;
}

void ks_txn_coordinator_free(struct ks_txn_coordinator *t)
{
    if (t == NULL) {
        return;
    }
    ks_world_cancel(t->world, t->load_timer);
    ks_world_cancel(t->world, t->abort_timer);
    ks_world_cancel(t->world, t->marker_timer);
    for (guint i = 0; i < t->txns->len; i++) {
        txn_free(g_ptr_array_index(t->txns, i));
    }
    for (guint i = 0; i < t->pending->len; i++) {
        struct pending *p = g_ptr_array_index(t->pending, i);
        g_array_free(p->next.parts, TRUE);
        free(p);
    }
    for (guint i = 0; i < t->markers->len; i++) {
        free(g_ptr_array_index(t->markers, i));
    }
    g_ptr_array_free(t->txns, TRUE);
    g_ptr_array_free(t->pending, TRUE);
    g_ptr_array_free(t->markers, TRUE);
    free(t->states);
    free(t->load_epochs);
    free(t);
}

void ks_txn_coordinator_handle(struct ks_txn_coordinator *t, ks_node_id source, uint32_t kind,
                               const void *message, size_t message_bytes)
{
    switch (kind) {
    case KS_MSG_TXN_FIND_COORDINATOR_REQUEST:
    case KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST:
    case KS_MSG_TXN_ADD_PARTITIONS_REQUEST:
    case KS_MSG_TXN_END_REQUEST: {
        ks_assert(message_bytes == sizeof(struct ks_txn_request));
        struct ks_txn_request r;
        memcpy(&r, message, sizeof r);
        char id[KS_TRANSACTIONAL_ID_BYTES];
        g_strlcpy(id, r.transactional_id, sizeof id);
        if (kind == KS_MSG_TXN_FIND_COORDINATOR_REQUEST) {
            handle_find(t, source, &r, id);
        } else if (kind == KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST) {
            handle_init(t, source, &r, id);
        } else if (kind == KS_MSG_TXN_ADD_PARTITIONS_REQUEST) {
            handle_add(t, source, &r, id, KS_MSG_TXN_ADD_PARTITIONS_RESPONSE);
        } else {
            handle_end(t, source, &r, id);
        }
        return;
    }
    case KS_MSG_TXN_ADD_OFFSETS_REQUEST: {
        ks_assert(message_bytes == sizeof(struct ks_txn_add_offsets_request));
        struct ks_txn_add_offsets_request r;
        memcpy(&r, message, sizeof r);
        handle_add_offsets(t, source, &r);
        return;
    }
    case KS_MSG_TXN_VERIFY_REQUEST: {
        ks_assert(message_bytes == sizeof(struct ks_txn_request));
        struct ks_txn_request r;
        memcpy(&r, message, sizeof r);
        if (r.add_partition != 0) {
            char id[KS_TRANSACTIONAL_ID_BYTES];
            g_strlcpy(id, r.transactional_id, sizeof id);
            handle_add(t, source, &r, id, KS_MSG_TXN_VERIFY_RESPONSE);
        } else {
            handle_verify(t, source, &r);
        }
        return;
    }
    case KS_MSG_TXN_WRITE_MARKERS_REQUEST: {
        ks_assert(message_bytes == sizeof(struct ks_txn_markers_request));
        struct ks_txn_markers_request r;
        memcpy(&r, message, sizeof r);
        append_marker(t, &r, true, source);
        return;
    }
    case KS_MSG_TXN_WRITE_MARKERS_RESPONSE: {
        ks_assert(message_bytes == sizeof(struct ks_txn_markers_response));
        struct ks_txn_markers_response r;
        memcpy(&r, message, sizeof r);
        marker_result(t, r.correlation_id, r.error_code);
        return;
    }
    default: ks_assert(!"a transaction message kind no broker receives"); /* B3 */
    }
}

void ks_txn_coordinator_add_for_leader(struct ks_txn_coordinator *t,
                                       const struct ks_txn_request *request)
{
    struct ks_txn_request r = *request;
    r.transactional_id[KS_TRANSACTIONAL_ID_BYTES - 1] = '\0';
    handle_add(t, ks_broker_node(t->broker), &r, r.transactional_id, KS_MSG_TXN_VERIFY_RESPONSE);
}
