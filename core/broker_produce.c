/*
** core/broker_produce.c: ProduceRequest on the leader (ReplicaManager
** appendRecords, Partition.appendRecordsToLeader, DelayedProduce), the
** coordinator's internal appends (ks_broker_append_internal) and the test
** hook, which share one path.
**
** One append: the leader checks that it leads the partition, refuses an
** acks=all write while the ISR is below min(min.insync.replicas, RF)
** (NOT_ENOUGH_REPLICAS, without appending), parses the batch (its CRC),
** refuses one larger than the topic's max.message.bytes (MESSAGE_TOO_LARGE),
** refuses a control batch from a client (INVALID_RECORD),
** checks the idempotent producer's sequence (core/producer_state.c: a
** duplicate of one of the last five batches is answered with its original
** offsets and not written again), appends, and answers:
**   acks=0    no response at all, even for errors;
**   acks=1    once the disk has the append (at the disk's idle time);
**   acks=all  once the HW passes the batch (DelayedProduce), with
**             NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min
**             ISR meanwhile (the data stays either way, kafka-reference 9.6),
**             NOT_LEADER_OR_FOLLOWER if leadership moved, REQUEST_TIMED_OUT
**             after the request's timeout.
**
** A request of several partitions (a PRODUCE_REQUESTS bundle, core/proto.h)
** is taken whole in one event: each batch goes the one-append path in
** order, its answer gathered into the request's one PRODUCE_RESPONSES
** (struct ks__gather; KafkaApis.handleProduceRequest answers a request
** once, when every partition is done), and the followers' parked fetches its
** appends release wait until the last batch is in (broker->
** deferred_releases, in append order; ReplicaManager.appendRecords queues
** its delayed-fetch completions on the action queue that KafkaApis runs
** after the request), so a follower's answer carries every partition of the
** request it follows. At 12 brokers x 1,200 partitions and 10,000 records/s
** (bench_scale) requests carry ~5 batches; with the bundle the run took
** 302.8 M instructions per simulated second instead of 319.8 M (~1 partition
** of a request per follower: fetches per batch fall less than requests).
**   A4  deferred_releases is empty outside ks__produce_on_requests.
**   A5  a gather holds the answers of its bundle's batches given so far,
**       each once; it is sent and freed with the last, or freed when the
**       broker stops (broker->gathers); gather_current is NULL outside
**       ks__produce_on_requests.
**
** Transaction verification (KIP-890 part 1, transaction.partition.
** verification.enable; ReplicaManager.handleProduceAppend and
** maybeStartTransactionVerificationForPartition, UnifiedLog
** .maybeStartTransactionVerification, AddPartitionsToTxnManager): a
** transactional producer's data batch for a partition where its producer id
** has no transaction open (UnifiedLog.hasOngoingTransaction) would start one.
** Before appending it, the leader makes (or reuses) the producer's
** verification entry, whose guard it remembers, and asks the transaction
** coordinator whether the partition is in the producer's ongoing
** transaction (AddPartitionsToTxn with verifyOnly; the local coordinator
** directly when this broker is it). The answer NONE appends the batch with
** that guard; the append refuses a transactional batch that starts a
** transaction without the entry's current guard (INVALID_TXN_STATE,
** UnifiedLog.analyzeAndValidateProducerState), and any transactional batch or
** marker appended clears the entry (UnifiedLog.updateProducers), so a
** verification answered before an ABORT marker cannot let the batch in
** after it. Coordinator errors are mapped as handleProduceAppend does:
** PRODUCER_FENCED -> INVALID_PRODUCER_EPOCH; CONCURRENT_TRANSACTIONS,
** NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE
** and an unanswered request (NETWORK_EXCEPTION after 30 s) ->
** NOT_ENOUGH_REPLICAS, which the producer retries. Without verification a
** late batch (one delayed past its transaction's ABORT or COMMIT marker, with
** the same producer epoch) opens a transaction no coordinator knows of, and
** nothing ever writes its marker: the hanging transaction of KAFKA-14402.
** A verification entry expires after producer.id.expiration.ms at the next
** producer.id.expiration.check.interval.ms check (ProducerStateManager
** .removeExpiredProducers), applied lazily (expire_verifications).
**
** The group coordinator's TxnOffsetCommit takes the same path
** (ks_broker_verify_txn_offsets, KAFKA-15449: GroupCoordinator
** .handleTxnCommitOffsets, CoordinatorPartitionWriter
** .maybeStartTransactionVerification): verifyOnly under the verification
** config alone, the answer handed to ks_group_coordinator_txn_offsets_verified
** with PRODUCER_FENCED as INVALID_PRODUCER_EPOCH, and its append
** (ORIGIN_COORDINATOR) checked against the guard with INVALID_TXN_STATE.
**
** Transaction version 2 (KIP-890 part 2, transaction.version = 2, whatever
** the verification config says): the same path adds the partition instead
** of only asking (AddPartitionsToTxnManager's addPartition operation,
** verifyOnly false; the local coordinator answers through
** ks_broker_txn_add_answered once the change is written). A transaction
** counts as open only under the batch's epoch (KAFKA-18575): a batch of the
** next epoch that finds the previous transaction still open is answered
** CONCURRENT_TRANSACTIONS before any add. The broker retries an add refused
** with CONCURRENT_TRANSACTIONS every add.partitions.to.txn.retry.backoff.ms
** (20) for add.partitions.to.txn.retry.backoff.max.ms (100) (KAFKA-18654)
** before answering the producer.
**
** Invariants:
**   V1  a verification in flight is in broker->verifying, with its timer
**       armed (its timeout, or its retry), or its add pending at this
**       broker's own coordinator, until its answer, its timeout or the
**       broker's crash; its Produce is answered exactly once (appended, or
**       refused), or its TxnOffsetCommit handed back to the group
**       coordinator exactly once.
**   A1  an acks=all append is pending only while the HW is below its end:
**       it completes when the HW reaches required_offset, on leadership loss,
**       or at its timeout, exactly once, and its timer is armed until then.
**   A2  every pending append is for a partition this broker leads (becoming
**       follower fails them all; a crash drops them with the memory).
**   A3  no answer leaves before the disk has finished the work queued so far
**       (responses wait for ks_disk_idle_at_ns); callbacks never run
**       synchronously.
*/
#include "broker_int.h"
#include "array.h"

#include "batch.h"
#include "compress.h"
#include "group.h"
#include "producer_state.h"
#include "txn_coord.h"

#include <stdlib.h>
#include <string.h>

/* ---- completion ------------------------------------------------------------------ */

/* A5: a bundle's answer, kept until the last batch has its own; then one
 * PRODUCE_RESPONSES (struct ks_produce_bundle + count answers, in request
 * order) leaves when the latest of them may (A3). */
static void gather_put(struct ks_broker *broker, struct ks__gather *gather, uint32_t index,
                       const struct ks_produce_response *response, ks_time_ns at_ns)
{
    ks_assert(index < gather->count && gather->remaining > 0);
    ks_assert(gather->responses[index].correlation_id == 0); /* answered once (A1, V1) */
    gather->responses[index] = *response;
    gather->at_ns = MAX(gather->at_ns, at_ns);
    if (--gather->remaining > 0) {
        return;
    }
    size_t bytes = sizeof(struct ks_produce_bundle) + gather->count * sizeof *response;
    uint8_t *message = g_malloc(bytes);
    struct ks_produce_bundle bundle = { .count = gather->count };
    memcpy(message, &bundle, sizeof bundle);
    memcpy(message + sizeof bundle, gather->responses, gather->count * sizeof *response);
    ks__broker_send_at(broker, gather->at_ns, gather->source, KS_MSG_PRODUCE_RESPONSES, message,
                       bytes);
    g_free(message);
    bool removed = g_ptr_array_remove(broker->gathers, gather);
    ks_assert(removed);
    g_free(gather);
}

void ks__produce_drop_gathers(struct ks_broker *broker)
{
    for (guint i = 0; i < broker->gathers->len; i++) {
        g_free(g_ptr_array_index(broker->gathers, i));
    }
    g_ptr_array_set_size(broker->gathers, 0);
}

static void complete(struct ks_broker *broker, const struct ks__completion *completion,
                     int16_t error, int64_t base_offset, ks_time_ns at_ns)
{
    switch (completion->kind) {
    case KS__COMPLETE_CALLBACK:
        ks__broker_callback_at(broker, at_ns, completion->done, completion->context, error,
                               base_offset);
        return;
    case KS__COMPLETE_NETWORK: break;
    }
    struct ks_produce_response response;
    memset(&response, 0, sizeof response);
    response.correlation_id = completion->correlation_id;
    response.topic_index = completion->topic_index;
    response.partition = completion->partition;
    response.base_offset = error == KS_ERR_NONE ? base_offset : -1;
    response.error_code = error;
    struct ks__replica *replica =
        ks__broker_find_replica(broker, completion->topic_index, completion->partition);
    response.log_start_offset = replica != NULL ? ks_log_start_offset(replica->log) : -1;
    response.leader_epoch =
        replica != NULL && replica->role == KS_ROLE_LEADER ? replica->state.leader_epoch : -1;
    /* KIP-951: KafkaApis.handleProduceRequest adds the partition's current
     * leader from the broker's metadata cache (getCurrentLeader) to a
     * NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH answer, so the producer
     * can retry there without a metadata round trip. */
    response.current_leader_id = -1;
    response.current_leader_epoch = -1;
    if (broker->spec->cluster->client_leader_discovery &&
        (error == KS_ERR_NOT_LEADER_OR_FOLLOWER || error == KS_ERR_FENCED_LEADER_EPOCH) &&
        completion->topic_index >= 0 && completion->topic_index < broker->topic_count &&
        completion->partition >= 0 &&
        completion->partition < broker->topics[completion->topic_index].partition_count) {
        const struct ks_partition_state *state =
            &broker->meta[completion->topic_index][completion->partition];
        if (state->partition_epoch >= 0 && state->leader >= 1) {
            response.current_leader_id = state->leader;
            response.current_leader_epoch = state->leader_epoch;
        }
    }
    if (completion->gather != NULL) {
        gather_put(broker, completion->gather, completion->gather_index, &response, at_ns);
        return;
    }
    ks__broker_send_at(broker, at_ns, completion->source, KS_MSG_PRODUCE_RESPONSE, &response,
                       sizeof response);
}

static bool pending_selected(const struct ks__pending_produce *item,
                             const struct ks__replica *replica, enum ks__pending_outcome outcome)
{
    if (item->completion.topic_index != replica->topic_index ||
        item->completion.partition != replica->partition) {
        return false;
    }
    switch (outcome) {
    case KS__PENDING_HW_ADVANCED: return replica->hw >= item->required_offset;
    case KS__PENDING_FAIL_ALL: return true;
    }
    return false;
}

void ks__produce_complete_pending(struct ks_broker *broker, struct ks__replica *replica,
                                  enum ks__pending_outcome outcome, int16_t error)
{
    if (broker->pending->len == 0) {
        return;
    }
    int32_t isr[KS_REPLICATION_FACTOR_MAX * 2];
    int32_t isr_count = ks__replica_maximal_isr(replica, isr);
    /* Collected first: completing one changes broker->pending. */
    struct ks__pending_produce *local[16];
    struct ks__pending_produce **done = local;
    if (broker->pending->len > G_N_ELEMENTS(local)) {
        done = g_new(struct ks__pending_produce *, broker->pending->len);
    }
    guint done_count = 0;
    for (guint i = 0; i < broker->pending->len; i++) {
        struct ks__pending_produce *item = g_ptr_array_index(broker->pending, i);
        if (pending_selected(item, replica, outcome)) {
            done[done_count++] = item;
        }
    }
    ks_time_ns at = ks_disk_idle_at_ns(broker->world, (ks_node_id)broker->id); /* A3 */
    for (guint i = 0; i < done_count; i++) {
        struct ks__pending_produce *item = done[i];
        g_ptr_array_remove(broker->pending, item);
        ks_world_cancel(broker->world, item->timer);
        int16_t code = error;
        switch (outcome) {
        case KS__PENDING_HW_ADVANCED:
            /* kafka-reference 9.6: the data stays either way. */
            code = isr_count >= ks_topic_min_isr(replica->topic)
                       ? KS_ERR_NONE
                       : KS_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND;
            break;
        case KS__PENDING_FAIL_ALL: break;
        }
        complete(broker, &item->completion, code, item->base_offset, at);
        free(item);
    }
    if (done != local) {
        g_free(done);
    }
}

static void pending_timeout(ks_world *world, void *context)
{
    (void)world;
    struct ks__pending_produce *item = context;
    struct ks_broker *broker = item->broker;
    item->timer = 0;
    bool removed = g_ptr_array_remove(broker->pending, item);
    ks_assert(removed); /* A1: completed exactly once */
    complete(broker, &item->completion, KS_ERR_REQUEST_TIMED_OUT, -1, ks__broker_now_ns(broker));
    free(item);
}

/* ---- the append ---------------------------------------------------------------------- */

static void refuse_event(struct ks_broker *broker, struct ks__replica *replica)
{
    ks_time_ns now = ks__broker_now_ns(broker);
    if (replica->refused_once && now - replica->refused_event_ns < KS__REFUSED_EVENT_INTERVAL_NS) {
        return;
    }
    replica->refused_once = true;
    replica->refused_event_ns = now;
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, 0, KS_EV_PRODUCE_REFUSED);
    event.reason = KS_REASON_NOT_ENOUGH_REPLICAS;
    event.topic_index = replica->topic_index;
    event.partition = replica->partition;
    event.leader_new = broker->id;
    event.isr_new_count =
        ks_cluster_event_set_list(event.isr_new, replica->state.isr, replica->state.isr_count);
    event.isr_count_min = ks_topic_min_isr(replica->topic);
    ks_broker_emit(broker, &event);
}

/* The last sequence number of a batch (wrapping at INT32_MAX), or -1. */
static int32_t batch_last_sequence(const struct ks_batch_view *view)
{
    if (view->base_sequence < 0) {
        return -1;
    }
    return (int32_t)(((int64_t)view->base_sequence + view->last_offset_delta) %
                     ((int64_t)INT32_MAX + 1));
}

/* Arranges the answer of an append that reached the log (or was a duplicate
 * of a cached batch) ending at last_offset. */
static void answer_append(struct ks_broker *broker, struct ks__replica *replica, enum ks_acks acks,
                          int64_t timeout_ns, int64_t base_offset, int64_t last_offset,
                          const struct ks__completion *completion)
{
    /* Kafka answers a duplicate of a cached batch like the original append
     * (ProducerStateManager: the batch metadata gives the original offsets). */
    ks_time_ns disk_done = ks_disk_idle_at_ns(broker->world, (ks_node_id)broker->id); /* A3 */
    switch (acks) {
    case KS_ACKS_NONE: return;
    case KS_ACKS_LEADER: complete(broker, completion, KS_ERR_NONE, base_offset, disk_done); return;
    case KS_ACKS_ALL: break;
    }
    if (replica->hw > last_offset) {
        complete(broker, completion, KS_ERR_NONE, base_offset, disk_done);
        return;
    }
    ks_assert(replica->role == KS_ROLE_LEADER); /* A2 */
    struct ks__pending_produce *item = calloc(1, sizeof *item);
    ks_assert(item != NULL);
    item->broker = broker;
    item->completion = *completion;
    item->base_offset = base_offset;
    item->required_offset = last_offset + 1;
    ks_ptr_array_add(broker->pending, item);
    item->timer = ks_world_schedule(broker->world, (ks_node_id)broker->id,
                                    timeout_ns > 0 ? (ks_time_ns)timeout_ns : 0,
                                    KS_TIMER_BROKER_PRODUCE_TIMEOUT, pending_timeout, item);
}

/* UnifiedLog.hasOngoingTransaction: the producer id has a transaction open
 * on the partition. Under transaction.version 2 only one of the batch's
 * epoch counts (Kafka 4.0, KAFKA-18575): a batch of the next transaction
 * (the epoch bumped by EndTxn) that finds the previous one still open (its
 * marker not yet written) starts a transaction of its own. */
static bool txn_open_for(const struct ks_broker *broker, const struct ks__replica *replica,
                         const struct ks_batch_view *view)
{
    if (!ks_log_has_ongoing_txn(replica->log, view->producer_id)) {
        return false;
    }
    return broker->spec->cluster->transaction_version < 2 ||
           ks_producer_state_epoch(replica->producers, view->producer_id) == view->producer_epoch;
}

/* UnifiedLog.removeExpiredProducers: the verification entries that the
 * periodic check has removed by now (producer.id.expiration.ms). */
static void expire_verifications(const struct ks_broker *broker, struct ks__replica *replica)
{
    const struct ks_cluster_config *config = broker->spec->cluster;
    ks_producer_state_verification_expire(replica->producers, (int64_t)ks__broker_now_ns(broker),
                                          config->producer_id_expiration_ns,
                                          config->producer_id_expiration_check_interval_ns);
}

/* UnifiedLog.analyzeAndValidateProducerState's check for a client's
 * transactional data batch (KIP-890 part 1): NONE when the producer has a
 * transaction open here, or verification is off, or the batch carries the
 * producer's current verification guard and is not above its lowest
 * sequence; else INVALID_TXN_STATE (or OUT_OF_ORDER_SEQUENCE_NUMBER,
 * ProducerAppendInfo.checkSequence). */
static int16_t verification_check(const struct ks_broker *broker, struct ks__replica *replica,
                                  const struct ks_batch_view *view, uint64_t guard)
{
    if ((!broker->spec->cluster->txn_partition_verification_enable &&
         broker->spec->cluster->transaction_version < 2) ||
        txn_open_for(broker, replica, view)) {
        return KS_ERR_NONE;
    }
    expire_verifications(broker, replica);
    uint64_t current = ks_producer_state_verification_guard(replica->producers, view->producer_id);
    if (current == 0 || current != guard) {
        return KS_ERR_INVALID_TXN_STATE; /* "Record was not part of an ongoing transaction" */
    }
    int32_t lowest =
        ks_producer_state_verification_lowest_sequence(replica->producers, view->producer_id);
    return view->base_sequence > lowest ? KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER : KS_ERR_NONE;
}

/* The same check for the group coordinator's transactional offset commits
 * (AppendOrigin.COORDINATOR, batchMissingRequiredVerification): only the
 * verification config counts. */
static int16_t coordinator_verification_check(const struct ks_broker *broker,
                                              struct ks__replica *replica,
                                              const struct ks_batch_view *view, uint64_t guard)
{
    if (!broker->spec->cluster->txn_partition_verification_enable ||
        ks_log_has_ongoing_txn(replica->log, view->producer_id)) {
        return KS_ERR_NONE;
    }
    expire_verifications(broker, replica);
    uint64_t current = ks_producer_state_verification_guard(replica->producers, view->producer_id);
    return current != 0 && current == guard ? KS_ERR_NONE : KS_ERR_INVALID_TXN_STATE;
}

/* A leader append's copy of a batch up to this size lives on the stack. */
#define COPY_ON_STACK_BYTES_MAX 4096

/* Who asks for an append (Kafka's AppendOrigin). */
enum append_origin {
    ORIGIN_CLIENT,      /* a Produce request */
    ORIGIN_COORDINATOR, /* the group coordinator's transactional offsets */
    ORIGIN_INTERNAL,    /* markers, coordinators' own records, tests */
};

static bool is_transactional_data(const struct ks_batch_view *view)
{
    return (view->attributes & KS_ATTR_TRANSACTIONAL) != 0 &&
           (view->attributes & KS_ATTR_CONTROL) == 0 && view->producer_id >= 0;
}

/* Appends one batch as leader and arranges the completion. A client's and
 * the group coordinator's transactional batches are checked against guard
 * (KIP-890; 0 when it was not verified). */
static void leader_append(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                          enum ks_acks acks, int64_t timeout_ns, const uint8_t *batch,
                          size_t batch_bytes, const struct ks__completion *completion,
                          enum append_origin origin, uint64_t guard)
{
    ks_time_ns now = ks__broker_now_ns(broker);
    struct ks__replica *replica = ks__broker_find_replica(broker, topic_index, partition);
    /* ReplicaManager.getPartitionOrError: a partition the metadata does not
     * have is UNKNOWN_TOPIC_OR_PARTITION, one this broker does not lead
     * NOT_LEADER_OR_FOLLOWER. */
    if (topic_index < 0 || topic_index >= broker->topic_count || partition < 0 ||
        partition >= broker->topics[topic_index].partition_count) {
        complete(broker, completion, KS_ERR_UNKNOWN_TOPIC_OR_PARTITION, -1, now);
        return;
    }
    if (replica == NULL || replica->role != KS_ROLE_LEADER) {
        complete(broker, completion, KS_ERR_NOT_LEADER_OR_FOLLOWER, -1, now);
        return;
    }
    if (acks == KS_ACKS_ALL && replica->state.isr_count < ks_topic_min_isr(replica->topic)) {
        refuse_event(broker, replica);
        complete(broker, completion, KS_ERR_NOT_ENOUGH_REPLICAS, -1, now);
        return;
    }
    struct ks_batch_view view;
    size_t parsed_bytes = 0;
    if (ks_batch_parse(batch, batch_bytes, &view, &parsed_bytes) != KS_BATCH_OK) {
        complete(broker, completion, KS_ERR_CORRUPT_MESSAGE, -1, now);
        return;
    }
    /* UnifiedLog.analyzeAndValidateRecords: a batch larger than the topic's
     * max.message.bytes (the broker's message.max.bytes unless the topic sets
     * it) is refused with RecordTooLargeException, MESSAGE_TOO_LARGE, before
     * anything is appended. */
    if ((int64_t)parsed_bytes > replica->topic->log.max_message_bytes) {
        complete(broker, completion, KS_ERR_MESSAGE_TOO_LARGE, -1, now);
        return;
    }
    /* LogValidator.validateBatch: "Clients are not allowed to write control
     * records" (InvalidRecordException, INVALID_RECORD); only the
     * coordinators' appends may carry transaction markers. */
    if (origin == ORIGIN_CLIENT && (view.attributes & KS_ATTR_CONTROL) != 0) {
        complete(broker, completion, KS_ERR_INVALID_RECORD, -1, now);
        return;
    }
    if (!replica->producers_valid) {
        ks_producer_state_rebuild(replica->producers, replica->log);
        replica->producers_valid = true;
    }
    int32_t last_seq = batch_last_sequence(&view);
    int64_t base_offset = -1;
    int64_t last_offset = -1;
    /* ProducerAppendInfo.append: a transaction marker (a control batch) has
     * no sequence; only its epoch is checked (appendEndTxnMarker). */
    bool marker = (view.attributes & KS_ATTR_CONTROL) != 0;
    int16_t check =
        marker ? ks_producer_state_check_epoch(replica->producers, view.producer_id,
                                               view.producer_epoch)
               : ks_producer_state_check(replica->producers, view.producer_id, view.producer_epoch,
                                         view.base_sequence, last_seq, &base_offset, &last_offset);
    /* UnifiedLog: a duplicate is answered first, then the verification,
     * then ProducerAppendInfo's epoch and sequence checks. */
    if (origin != ORIGIN_INTERNAL && check != KS_ERR_DUPLICATE_SEQUENCE_NUMBER &&
        is_transactional_data(&view)) {
        int16_t verified = origin == ORIGIN_CLIENT
                               ? verification_check(broker, replica, &view, guard)
                               : coordinator_verification_check(broker, replica, &view, guard);
        if (verified != KS_ERR_NONE) {
            complete(broker, completion, verified, -1, now);
            return;
        }
    }
    if (check == KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER || check == KS_ERR_INVALID_PRODUCER_EPOCH) {
        complete(broker, completion, check, -1, now);
        return;
    }
    /* LogValidator: recompress when the topic's compression.type differs
     * from the batch's codec (core/compress.c decides; NULL keeps it). */
    GByteArray *rebuilt = NULL;
    if (check != KS_ERR_DUPLICATE_SEQUENCE_NUMBER && parsed_bytes == batch_bytes) {
        rebuilt = ks_compress_for_topic(&replica->topic->compression, batch, batch_bytes);
    }
    if (rebuilt != NULL) {
        /* UnifiedLog.append re-checks the size when recompression may have
         * changed it. */
        if ((int64_t)rebuilt->len > replica->topic->log.max_message_bytes) {
            g_byte_array_unref(rebuilt);
            complete(broker, completion, KS_ERR_MESSAGE_TOO_LARGE, -1, now);
            return;
        }
        batch = rebuilt->data;
        batch_bytes = parsed_bytes = rebuilt->len;
    }
    if (check != KS_ERR_DUPLICATE_SEQUENCE_NUMBER) {
        /* The log stamps offsets and the epoch in place: a copy of the
         * request's bytes, on the stack when it fits (most produce batches;
         * no allocation per append). */
        uint8_t stack_copy[COPY_ON_STACK_BYTES_MAX];
        uint8_t *copy = batch_bytes <= sizeof stack_copy ? stack_copy : malloc(batch_bytes);
        ks_assert(copy != NULL);
        memcpy(copy, batch, batch_bytes);
        /* The parse above checked the first batch's CRC; the log does not
         * check those bytes again (it checks any batch after them), nor
         * decode the header of an unchanged batch again (R10 of log.c). */
        enum ks_log_result result =
            rebuilt == NULL
                ? ks_log_append_as_leader_parsed(replica->log, copy, batch_bytes, &view,
                                                 replica->state.leader_epoch, now, &base_offset,
                                                 &last_offset)
                : ks_log_append_as_leader_checked(replica->log, copy, batch_bytes, parsed_bytes,
                                                  replica->state.leader_epoch, now, &base_offset,
                                                  &last_offset);
        ks__serve_touch(broker, replica); /* S5 of broker_serve.c: the LEO */
        if (copy != stack_copy) {
            free(copy);
        }
        if (rebuilt != NULL) {
            g_byte_array_unref(rebuilt);
        }
        if (result != KS_LOG_OK) {
            complete(broker, completion,
                     result == KS_LOG_CORRUPT ? KS_ERR_CORRUPT_MESSAGE : KS_ERR_KAFKA_STORAGE_ERROR,
                     -1, now);
            return;
        }
        if (!marker) {
            ks_producer_state_update(replica->producers, view.producer_id, view.producer_epoch,
                                     view.base_sequence, last_seq, base_offset, last_offset);
        } else {
            ks_producer_state_update_marker(replica->producers, view.producer_id,
                                            view.producer_epoch);
        }
        if ((view.attributes & KS_ATTR_TRANSACTIONAL) != 0 && view.producer_id >= 0) {
            /* UnifiedLog.updateProducers: the transaction has its first
             * offset, or is complete: the verification entry goes. */
            ks_producer_state_verification_clear(replica->producers, view.producer_id);
        }
        if (broker->releases_deferred) {
            struct ks_fetch_forgotten key = { .topic_index = topic_index, .partition = partition };
            ks_array_append_val(broker->deferred_releases, key);
        } else {
            ks__serve_release(broker, topic_index, partition, KS__RELEASE_FOLLOWERS);
        }
        ks__replica_maybe_advance_hw(broker, replica);
    }
    answer_append(broker, replica, acks, timeout_ns, base_offset, last_offset, completion);
}

/* ---- transaction verification (KIP-890 part 1) ---------------------------------------- */

static void verify_answer(struct ks_broker *broker, struct ks__verifying *item, int16_t error);
static void verify_send(struct ks_broker *broker, struct ks__verifying *item);
static enum ks_acks acks_from_wire(int16_t acks);

/* The request's completion: a ProduceResponse to its producer (acks=0:
 * none at all, even for errors). */
static void network_completion(const struct ks_broker *broker,
                               const struct ks_produce_request *request, ks_node_id source,
                               struct ks__completion *out)
{
    memset(out, 0, sizeof *out);
    out->kind = KS__COMPLETE_NETWORK;
    out->source = source;
    out->correlation_id = request->correlation_id;
    out->topic_index = request->topic_index;
    out->partition = request->partition;
    if (acks_from_wire(request->acks) == KS_ACKS_NONE) {
        out->kind = KS__COMPLETE_CALLBACK;
        out->done = NULL;
        return;
    }
    out->gather = broker->gather_current; /* A5: a batch of the bundle in hand */
    out->gather_index = broker->gather_index;
}

static void verify_timeout(ks_world *world, void *context)
{
    (void)world;
    struct ks__verifying *item = context;
    item->timer = 0;
    /* The inter-broker request got no answer: NETWORK_EXCEPTION. */
    verify_answer(item->broker, item, KS_ERR_NETWORK_EXCEPTION);
}

/* Asks the coordinator about item (again): AddPartitionsToTxnManager
 * .verifyTransaction, to the coordinator of the id, the leader of its
 * __transaction_state partition. */
static void verify_send(struct ks_broker *broker, struct ks__verifying *item)
{
    item->request_id = ++broker->next_correlation_id;
    item->request.correlation_id = item->request_id;
    item->local_add = false;
    int32_t txn_partition = ks_group_offsets_partition(
        item->request.transactional_id, broker->topics[broker->txn_topic_index].partition_count);
    int32_t coordinator =
        ks_broker_partition_leader(broker, broker->txn_topic_index, txn_partition);
    if (coordinator < 1) {
        verify_answer(broker, item, KS_ERR_COORDINATOR_NOT_AVAILABLE);
    } else if (coordinator == broker->id && item->request.add_partition != 0) {
        /* Answered through ks_broker_txn_add_answered, at once or when the
         * coordinator has written the partition into the transaction. */
        item->local_add = true;
        ks_txn_coordinator_add_for_leader(broker->txn_coordinator, &item->request);
    } else if (coordinator == broker->id) {
        verify_answer(broker, item,
                      ks_txn_coordinator_verify(broker->txn_coordinator, &item->request));
    } else {
        item->timer =
            ks_world_schedule(broker->world, (ks_node_id)broker->id, KS__REQUEST_TIMEOUT_NS,
                              KS_TIMER_BROKER_TXN_VERIFY_TIMEOUT, verify_timeout, item);
        ks_world_send(broker->world, (ks_node_id)broker->id, (ks_node_id)coordinator,
                      KS_MSG_TXN_VERIFY_REQUEST, &item->request, sizeof item->request);
    }
}

static void verify_retry(ks_world *world, void *context)
{
    (void)world;
    struct ks__verifying *item = context;
    item->timer = 0;
    verify_send(item->broker, item);
}

/* Whether the Produce needs the coordinator first; if so, starts the
 * verification (it owns a copy of the message from then on). */
static bool maybe_verify(struct ks_broker *broker, ks_node_id source,
                         const struct ks_produce_request *request, const uint8_t *message,
                         size_t message_bytes)
{
    /* maybeStartTransactionVerificationForPartitions: only with the broker
     * config on (or transaction.version 2, whose producers rely on the
     * leader to add the partition) and a transactional id in the request. */
    bool add = broker->spec->cluster->transaction_version >= 2;
    if ((!broker->spec->cluster->txn_partition_verification_enable && !add) ||
        (request->flags & KS_PRODUCE_FLAG_TRANSACTIONAL_ID) == 0 || broker->txn_topic_index < 0 ||
        broker->txn_coordinator == NULL) {
        return false;
    }
    ks_assert(message_bytes >= sizeof *request + request->batch_bytes + KS_TRANSACTIONAL_ID_BYTES);
    struct ks__replica *replica =
        ks__broker_find_replica(broker, request->topic_index, request->partition);
    struct ks_batch_view view;
    size_t parsed_bytes = 0;
    /* Not the leader, a bad batch, or no transaction to start: the append
     * path answers (Partition.maybeStartTransactionVerification). */
    if (replica == NULL || replica->role != KS_ROLE_LEADER ||
        ks_batch_parse(message + sizeof *request, request->batch_bytes, &view, &parsed_bytes) !=
            KS_BATCH_OK ||
        !is_transactional_data(&view)) {
        return false;
    }
    if (!replica->producers_valid) {
        ks_producer_state_rebuild(replica->producers, replica->log);
        replica->producers_valid = true;
    }
    if (txn_open_for(broker, replica, &view)) {
        return false;
    }
    if (add && ks_log_has_ongoing_txn(replica->log, view.producer_id) &&
        ks_producer_state_epoch(replica->producers, view.producer_id) < view.producer_epoch) {
        /* KAFKA-18575 (Kafka 4.0): the previous transaction's marker has not
         * reached this partition yet: CONCURRENT_TRANSACTIONS, which the
         * producer retries, before any add at the coordinator. */
        struct ks__completion completion;
        network_completion(broker, request, source, &completion);
        complete(broker, &completion, KS_ERR_CONCURRENT_TRANSACTIONS, -1,
                 ks__broker_now_ns(broker));
        return true;
    }
    struct ks__verifying *item = calloc(1, sizeof *item);
    ks_assert(item != NULL);
    item->broker = broker;
    item->source = source;
    item->started_ns = ks__broker_now_ns(broker);
    item->gather = broker->gather_current;
    item->gather_index = broker->gather_index;
    expire_verifications(broker, replica);
    item->guard = ks_producer_state_verification_start(replica->producers, view.producer_id,
                                                       view.base_sequence, view.producer_epoch,
                                                       (int64_t)item->started_ns);
    item->message = malloc(message_bytes);
    ks_assert(item->message != NULL);
    memcpy(item->message, message, message_bytes);
    item->message_bytes = message_bytes;
    ks_ptr_array_add(broker->verifying, item);

    struct ks_txn_request verify;
    memset(&verify, 0, sizeof verify);
    verify.producer_id = view.producer_id;
    verify.producer_epoch = view.producer_epoch;
    verify.topic_index = request->topic_index;
    verify.partition = request->partition;
    verify.add_partition = add ? 1 : 0;
    memcpy(verify.transactional_id, message + sizeof *request + request->batch_bytes,
           KS_TRANSACTIONAL_ID_BYTES);
    verify.transactional_id[KS_TRANSACTIONAL_ID_BYTES - 1] = '\0';
    item->request = verify;
    verify_send(broker, item);
    return true;
}

bool ks_broker_verify_txn_offsets(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                                  const char *transactional_id, int64_t producer_id,
                                  int16_t producer_epoch, ks_node_id source, const void *message,
                                  size_t message_bytes)
{
    /* maybeStartTransactionVerificationForPartitions: only with the config on
     * (the offsets path verifies, never adds, whatever transaction.version). */
    if (!broker->spec->cluster->txn_partition_verification_enable || broker->txn_topic_index < 0 ||
        broker->txn_coordinator == NULL || transactional_id[0] == '\0') {
        return false;
    }
    struct ks__replica *replica = ks__broker_find_replica(broker, topic_index, partition);
    if (replica == NULL || replica->role != KS_ROLE_LEADER) {
        return false; /* the append answers */
    }
    if (!replica->producers_valid) {
        ks_producer_state_rebuild(replica->producers, replica->log);
        replica->producers_valid = true;
    }
    /* Partition.maybeStartTransactionVerification: an open transaction needs
     * no guard. */
    if (ks_log_has_ongoing_txn(replica->log, producer_id)) {
        return false;
    }
    struct ks__verifying *item = calloc(1, sizeof *item);
    ks_assert(item != NULL);
    item->broker = broker;
    item->source = source;
    item->txn_offsets = true;
    item->started_ns = ks__broker_now_ns(broker);
    expire_verifications(broker, replica);
    /* RecordBatch.NO_SEQUENCE: the coordinator's batch has none. */
    item->guard = ks_producer_state_verification_start(replica->producers, producer_id, -1,
                                                       producer_epoch, (int64_t)item->started_ns);
    item->message = malloc(message_bytes);
    ks_assert(item->message != NULL);
    memcpy(item->message, message, message_bytes);
    item->message_bytes = message_bytes;
    ks_ptr_array_add(broker->verifying, item);
    memset(&item->request, 0, sizeof item->request);
    item->request.producer_id = producer_id;
    item->request.producer_epoch = producer_epoch;
    item->request.topic_index = topic_index;
    item->request.partition = partition;
    g_strlcpy(item->request.transactional_id, transactional_id,
              sizeof item->request.transactional_id);
    verify_send(broker, item);
    return true;
}

/* handleProduceAppend's postVerificationCallback: the coordinator errors a
 * producer understands (AddPartitionsToTxnManager maps PRODUCER_FENCED). */
static int16_t verify_error_for_producer(int16_t error)
{
    switch (error) {
    case KS_ERR_PRODUCER_FENCED: return KS_ERR_INVALID_PRODUCER_EPOCH;
    case KS_ERR_CONCURRENT_TRANSACTIONS:
    case KS_ERR_NETWORK_EXCEPTION:
    case KS_ERR_COORDINATOR_LOAD_IN_PROGRESS:
    case KS_ERR_COORDINATOR_NOT_AVAILABLE:
    case KS_ERR_NOT_COORDINATOR: return KS_ERR_NOT_ENOUGH_REPLICAS; /* retried, no metadata */
    default: return error;
    }
}

/* The timeline's word of a refused transactional batch (not of the
 * retriable answers, which the producer simply retries). */
static void verify_refused_event(struct ks_broker *broker, const struct ks_produce_request *request,
                                 const uint8_t *batch, int16_t code)
{
    if (code == KS_ERR_NOT_ENOUGH_REPLICAS) {
        return;
    }
    struct ks_batch_view view;
    size_t parsed_bytes = 0;
    ks_assert(ks_batch_parse(batch, request->batch_bytes, &view, &parsed_bytes) == KS_BATCH_OK);
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, 0, KS_EV_PRODUCE_REFUSED);
    event.reason = KS_REASON_TXN_NOT_VERIFIED;
    event.topic_index = request->topic_index;
    event.partition = request->partition;
    event.leader_new = broker->id;
    event.error_code = code;
    event.record_count = view.last_offset_delta + 1;
    ks_broker_emit(broker, &event);
}

/* KAFKA-18654 (Kafka 4.0, ReplicaManager.appendRecords and
 * AddPartitionsToTxnConfig): an implicit add refused with
 * CONCURRENT_TRANSACTIONS (the previous transaction's markers are still
 * going out) is retried by the broker every add.partitions.to.txn.retry
 * .backoff.ms (default 20) while add.partitions.to.txn.retry.backoff.max.ms
 * (default 100) has not passed since the first attempt, rather than by the
 * producer. */

/* The verification's outcome: append with its guard, or refuse (V1). */
static void verify_answer(struct ks_broker *broker, struct ks__verifying *item, int16_t error)
{
    ks_world_cancel(broker->world, item->timer);
    item->timer = 0;
    item->local_add = false;
    ks_time_ns now = ks__broker_now_ns(broker);
    ks_time_ns backoff = (ks_time_ns)broker->spec->cluster->add_partitions_retry_backoff_ns;
    if (error == KS_ERR_CONCURRENT_TRANSACTIONS && item->request.add_partition != 0 &&
        now + backoff - item->started_ns <=
            (ks_time_ns)broker->spec->cluster->add_partitions_retry_backoff_max_ns) {
        item->request_id = 0; /* an answer to the old request is stale */
        item->timer = ks_world_schedule(broker->world, (ks_node_id)broker->id, backoff,
                                        KS_TIMER_BROKER_TXN_ADD_RETRY, verify_retry, item);
        return;
    }
    bool removed = g_ptr_array_remove(broker->verifying, item);
    ks_assert(removed); /* V1: answered once */
    if (item->txn_offsets) {
        /* AddPartitionsToTxnManager turns PRODUCER_FENCED into
         * INVALID_PRODUCER_EPOCH; the group coordinator maps the rest. */
        ks_group_coordinator_txn_offsets_verified(
            broker->coordinator, item->source, item->message, item->message_bytes,
            error == KS_ERR_PRODUCER_FENCED ? KS_ERR_INVALID_PRODUCER_EPOCH : error, item->guard);
        free(item->message);
        free(item);
        return;
    }
    struct ks_produce_request request;
    memcpy(&request, item->message, sizeof request);
    struct ks__completion completion;
    network_completion(broker, &request, item->source, &completion);
    if (completion.kind == KS__COMPLETE_NETWORK) {
        completion.gather = item->gather; /* A5: its bundle, taken earlier */
        completion.gather_index = item->gather_index;
    }
    if (error != KS_ERR_NONE) {
        int16_t code = verify_error_for_producer(error);
        verify_refused_event(broker, &request, item->message + sizeof request, code);
        complete(broker, &completion, code, -1, ks__broker_now_ns(broker));
    } else {
        leader_append(broker, request.topic_index, request.partition, acks_from_wire(request.acks),
                      request.timeout_ns, item->message + sizeof request, request.batch_bytes,
                      &completion, ORIGIN_CLIENT, item->guard);
    }
    free(item->message);
    free(item);
}

void ks__produce_on_verify_response(struct ks_broker *broker, const void *message,
                                    size_t message_bytes)
{
    ks_assert(message_bytes == sizeof(struct ks_txn_response));
    struct ks_txn_response response;
    memcpy(&response, message, sizeof response);
    for (guint i = 0; i < broker->verifying->len; i++) {
        struct ks__verifying *item = g_ptr_array_index(broker->verifying, i);
        if (item->request_id == response.correlation_id) {
            verify_answer(broker, item, response.error_code);
            return;
        }
    }
    /* An answer after its timeout: ignored. */
}

void ks_broker_txn_add_answered(struct ks_broker *broker, const struct ks_txn_response *response)
{
    ks__produce_on_verify_response(broker, response, sizeof *response);
}

void ks__produce_drop_verifying(struct ks_broker *broker)
{
    for (guint i = 0; i < broker->verifying->len; i++) {
        struct ks__verifying *item = g_ptr_array_index(broker->verifying, i);
        ks_world_cancel(broker->world, item->timer);
        free(item->message);
        free(item);
    }
    g_ptr_array_set_size(broker->verifying, 0);
}

static enum ks_acks acks_from_wire(int16_t acks)
{
    /* The producer writes enum ks_acks values (proto.h); anything else is a
     * malformed request. */
    ks_assert(acks == KS_ACKS_NONE || acks == KS_ACKS_LEADER || acks == KS_ACKS_ALL);
    return (enum ks_acks)acks;
}

void ks__produce_on_request(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                            size_t message_bytes)
{
    /* Producers always send a whole request with the whole batch. */
    ks_assert(message_bytes >= sizeof(struct ks_produce_request));
    struct ks_produce_request request;
    memcpy(&request, message, sizeof request);
    ks_assert(message_bytes - sizeof request >= request.batch_bytes);
    enum ks_acks acks = acks_from_wire(request.acks);
    struct ks__completion completion;
    network_completion(broker, &request, source, &completion);
    if (maybe_verify(broker, source, &request, message, message_bytes)) {
        return; /* appended (or refused) when the coordinator answers */
    }
    leader_append(broker, request.topic_index, request.partition, acks, request.timeout_ns,
                  message + sizeof request, request.batch_bytes, &completion, ORIGIN_CLIENT, 0);
}

void ks__produce_on_requests(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                             size_t message_bytes)
{
    ks_assert(!broker->releases_deferred && broker->deferred_releases->len == 0);
    struct ks_produce_bundle bundle;
    ks_assert(message_bytes >= sizeof bundle);
    memcpy(&bundle, message, sizeof bundle);
    /* A5: one answer for the request, unless acks=0 (no answer at all; a
     * request's batches share acks). */
    struct ks_produce_request first;
    ks_assert(message_bytes >=
              sizeof bundle + sizeof(struct ks_produce_bundle_entry) + sizeof first);
    memcpy(&first, message + sizeof bundle + sizeof(struct ks_produce_bundle_entry), sizeof first);
    if (acks_from_wire(first.acks) != KS_ACKS_NONE) {
        struct ks__gather *gather =
            g_malloc0(sizeof *gather + bundle.count * sizeof(struct ks_produce_response));
        gather->source = source;
        gather->count = bundle.count;
        gather->remaining = bundle.count;
        ks_ptr_array_add(broker->gathers, gather);
        broker->gather_current = gather;
    }
    broker->releases_deferred = true;
    size_t at = 0;
    const uint8_t *entry = NULL;
    size_t entry_bytes = 0;
    broker->gather_index = 0;
    while (ks_proto_bundle_next(message, message_bytes, &at, &entry, &entry_bytes)) {
        ks__produce_on_request(broker, source, entry, entry_bytes);
        broker->gather_index++;
    }
    ks_assert(broker->gather_index == bundle.count);
    broker->gather_current = NULL;
    broker->gather_index = 0;
    broker->releases_deferred = false;
    for (guint i = 0; i < broker->deferred_releases->len; i++) {
        const struct ks_fetch_forgotten *key =
            &g_array_index(broker->deferred_releases, struct ks_fetch_forgotten, i);
        ks__serve_release(broker, key->topic_index, key->partition, KS__RELEASE_FOLLOWERS);
    }
    g_array_set_size(broker->deferred_releases, 0);
}

/* An append whose outcome goes to done(context, ...) on this node. */
static void append_with_callback(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                                 enum ks_acks acks, int64_t timeout_ns, const uint8_t *batch,
                                 size_t batch_bytes, enum append_origin origin, uint64_t guard,
                                 void (*done)(void *context, int16_t error, int64_t base_offset),
                                 void *context)
{
    struct ks__completion completion;
    memset(&completion, 0, sizeof completion);
    completion.kind = KS__COMPLETE_CALLBACK;
    completion.topic_index = topic_index;
    completion.partition = partition;
    completion.done = done;
    completion.context = context;
    leader_append(broker, topic_index, partition, acks, timeout_ns, batch, batch_bytes, &completion,
                  origin, guard);
}

void ks_broker_append_internal(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                               const uint8_t *batch, size_t batch_bytes,
                               void (*done)(void *context, int16_t error, int64_t base_offset),
                               void *context)
{
    /* The group coordinator's writes wait for acks=all at most
     * offsets.commit.timeout.ms (GroupCoordinatorService passes it as the
     * runtime's write timeout), then fail with REQUEST_TIMED_OUT, which the
     * coordinator answers as COORDINATOR_NOT_AVAILABLE. */
    append_with_callback(broker, topic_index, partition, KS_ACKS_ALL,
                         broker->spec->cluster->offsets_commit_timeout_ns, batch, batch_bytes,
                         ORIGIN_INTERNAL, 0, done, context);
}

void ks_broker_append_internal_guarded(
    struct ks_broker *broker, int32_t topic_index, int32_t partition, const uint8_t *batch,
    size_t batch_bytes, uint64_t guard,
    void (*done)(void *context, int16_t error, int64_t base_offset), void *context)
{
    append_with_callback(broker, topic_index, partition, KS_ACKS_ALL,
                         broker->spec->cluster->offsets_commit_timeout_ns, batch, batch_bytes,
                         ORIGIN_COORDINATOR, guard, done, context);
}

void ks_broker_append_marker(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                             int64_t producer_id, int16_t producer_epoch, bool commit,
                             int32_t coordinator_epoch,
                             void (*done)(void *context, int16_t error, int64_t base_offset),
                             void *context)
{
    /* ReplicaManager.appendRecords with AppendOrigin.COORDINATOR and
     * requiredAcks -1, as KafkaApis.handleWriteTxnMarkersRequest appends
     * each marker: answered once the HW passes it. */
    int64_t timestamp_ms = KS_EPOCH_BASE_MS + (int64_t)(ks__broker_now_ns(broker) / KS_NS_PER_MS);
    GByteArray *batch = ks_batch_build_end_txn_marker(timestamp_ms, producer_id, producer_epoch,
                                                      commit, coordinator_epoch);
    append_with_callback(broker, topic_index, partition, KS_ACKS_ALL,
                         (int64_t)KS__REQUEST_TIMEOUT_NS, batch->data, batch->len, ORIGIN_INTERNAL,
                         0, done, context);
    g_byte_array_unref(batch);
}

void ks_broker_append_for_test(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                               enum ks_acks acks, const uint8_t *batch, size_t batch_bytes,
                               void (*done)(void *context, int16_t error, int64_t base_offset),
                               void *context)
{
    append_with_callback(broker, topic_index, partition, acks, (int64_t)KS__REQUEST_TIMEOUT_NS,
                         batch, batch_bytes, ORIGIN_INTERNAL, 0, done, context);
}
