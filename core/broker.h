/*
** core/broker.h: one Kafka broker: its log directory broker-<id>/, its
** partition replicas (leader or follower), the follower fetchers, produce
** handling with acks and idempotence, and its session with the controller.
** The module's files and their design blocks (replica state machine and
** invariants R1..R6 in core/broker_replica.c) are listed in
** core/broker_int.h, which only those files include.
**
** Two kinds of callers:
**   - core/cluster.c builds, starts, crashes and restarts brokers and asks
**     them about their replicas;
**   - the group coordinator (core/group.c) runs inside a broker and uses the
**     "coordinator services" below to read and append __consumer_offsets.
** Everything here runs on the broker's node (from its event handlers) or
** from the driver between events.
*/
#pragma once

#include "cluster.h"
#include "config.h"
#include "log.h"
#include "world.h"

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

struct ks_broker;
struct ks_txn_response;

/* ---- life cycle (core/cluster.c) ---------------------------------------- */

/* Builds broker `broker_id` (1..N; node id == broker id). `topics` holds
 * topic_count topics: the spec's, plus __consumer_offsets last when
 * spec->consumer_count > 0 (borrowed; must outlive the broker). spec and
 * observer are borrowed too. Does not touch the disk or the network until
 * ks_broker_start. Owned by the caller: ks_broker_free. */
struct ks_broker *ks_broker_new(ks_world *world, const struct ks_cluster_spec *spec,
                                const struct ks_topic_config *topics, int32_t topic_count,
                                int32_t broker_id, const struct ks_cluster_observer *observer);
/* Registers the receiver, opens the log directory (recovering it after an
 * unclean shutdown), and starts heartbeating to the controller. */
void ks_broker_start(struct ks_broker *broker);
/* NULL is a no-op. Closes logs without writing the clean-shutdown marker. */
void ks_broker_free(struct ks_broker *broker);
/* The world already dropped the node's timers (process crash or power loss):
 * forget in-memory state, close files. No checkpoint, no clean marker. */
void ks_broker_on_crash(struct ks_broker *broker);
/* The node is up again: reopen the log directory from disk (recovery from the
 * recovery-point checkpoint, since the shutdown was unclean), new broker
 * epoch, register with the controller. */
void ks_broker_on_restart(struct ks_broker *broker);
/* Clean shutdown: flush logs, write the checkpoints and .kafka_cleanshutdown,
 * then stop (the node stays up but silent until ks_broker_on_restart). */
void ks_broker_shutdown(struct ks_broker *broker);
bool ks_broker_is_running(const struct ks_broker *broker);
/* controller = zookeeper: the controller epoch this broker runs a controller
 * with, or -1 when it is not the controller. */
int32_t ks_broker_zk_controller_epoch(const struct ks_broker *broker);
/* Controlled shutdown (scenario action `stop`, Kafka's BrokerServer.shutdown
 * with controlled.shutdown.enable): the broker asks the controller in its
 * heartbeats (WantShutDown) until the controller has moved its leaderships
 * and ISR memberships away and says it may go (ShouldShutDown), or until the
 * shutdown timeout; then ks_broker_shutdown and KS_EV_BROKER_STOPPED. With
 * controlled.shutdown.enable = false it shuts down at once. Returns false,
 * changing nothing, when the broker is not running or is stopping already.
 * Called by the driver (node 0's events) through core/cluster.c. */
bool ks_broker_begin_controlled_shutdown(struct ks_broker *broker);
/* Running and in a controlled shutdown that has not finished. */
bool ks_broker_stopping(const struct ks_broker *broker);

/* ---- queries (driver and tests) ------------------------------------------ */

/* The broker's own view of a replica it hosts; false if it does not host it
 * or is not running. */
bool ks_broker_replica_state(const struct ks_broker *broker, int32_t topic_index, int32_t partition,
                             struct ks_replica_state *out);
/* Borrowed; NULL if not hosted or not running. */
struct ks_log *ks_broker_replica_log(struct ks_broker *broker, int32_t topic_index,
                                     int32_t partition);
/* True when the broker has no delayed produce or pending internal append. */
bool ks_broker_idle(const struct ks_broker *broker);
/* The whole-object check (STYLE 3.7): asserts every invariant the broker
 * module's design blocks claim (B1..B3, R1..R6, F1, S1, A1..A2). Runs after
 * every message a broker receives in KS_DEBUG builds; tests may call it after
 * every event. Aborts on a violation. */
void ks_broker_check(const struct ks_broker *broker);

/* Test and benchmark hook: appends `batch` (one batch built with core/batch.h)
 * as leader with the given acks, as a ProduceRequest would, and calls done
 * (may be NULL) with the outcome when a producer would get its response. */
void ks_broker_append_for_test(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                               enum ks_acks acks, const uint8_t *batch, size_t batch_bytes,
                               void (*done)(void *context, int16_t error, int64_t base_offset),
                               void *context);

/* ---- coordinator services (core/group.c) --------------------------------- */

ks_world *ks_broker_world(struct ks_broker *broker);
int32_t ks_broker_id(const struct ks_broker *broker);
ks_node_id ks_broker_node(const struct ks_broker *broker);
const struct ks_cluster_spec *ks_broker_spec(const struct ks_broker *broker);
const struct ks_cluster_observer *ks_broker_observer(const struct ks_broker *broker);
/* Index of topic `name` in the broker's topic array (e.g. "__consumer_offsets"), or -1. */
int32_t ks_broker_topic_index(const struct ks_broker *broker, const char *name);
/* Leader of a partition from this broker's metadata cache; -1 if none/unknown. */
int32_t ks_broker_partition_leader(struct ks_broker *broker, int32_t topic_index,
                                   int32_t partition);
/* Appends one batch (built with core/batch.h) as leader with acks=all
 * semantics; done(context, error, base_offset) runs later, on this broker's
 * node, when the HW passes the batch (KS_ERR_NONE) or with an error
 * (NOT_LEADER_OR_FOLLOWER if not leader or leadership is lost,
 * NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT after 30 s). done is never called
 * synchronously and never after the broker crashed (pending appends are
 * dropped with the broker's memory: the coordinator is re-created anyway). */
void ks_broker_append_internal(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                               const uint8_t *batch, size_t batch_bytes,
                               void (*done)(void *context, int16_t error, int64_t base_offset),
                               void *context);
/* The same for the group coordinator's transactional offset commit batch:
 * with transaction.partition.verification.enable, a batch that would start a
 * transaction on the partition is refused with INVALID_TXN_STATE unless guard
 * is the producer's current verification guard (UnifiedLog's check for
 * AppendOrigin.COORDINATOR; 0 when not verified). */
void ks_broker_append_internal_guarded(
    struct ks_broker *broker, int32_t topic_index, int32_t partition, const uint8_t *batch,
    size_t batch_bytes, uint64_t guard,
    void (*done)(void *context, int16_t error, int64_t base_offset), void *context);
/* KIP-890 part 1 for TxnOffsetCommit (GroupCoordinator.handleTxnCommitOffsets,
 * GroupCoordinatorService.commitTransactionalOffsets through
 * ReplicaManager.maybeStartTransactionVerificationForPartition): when
 * verification is on and the producer has no transaction open on the
 * partition (a __consumer_offsets partition this broker leads), makes or
 * reuses its verification entry, asks the transaction coordinator of
 * transactional_id (verifyOnly) and returns true; the answer goes to
 * ks_group_coordinator_txn_offsets_verified with a copy of message (the
 * TxnOffsetCommit request and its entries, from source), possibly before
 * this returns. false: nothing to verify, the caller goes on. */
bool ks_broker_verify_txn_offsets(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                                  const char *transactional_id, int64_t producer_id,
                                  int16_t producer_epoch, ks_node_id source, const void *message,
                                  size_t message_bytes);
/* Appends a transaction marker (COMMIT or ABORT control batch) for the
 * producer as the partition's leader, for the transaction coordinator's
 * WriteTxnMarkers; done as for ks_broker_append_internal. */
void ks_broker_append_marker(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                             int64_t producer_id, int16_t producer_epoch, bool commit,
                             int32_t coordinator_epoch,
                             void (*done)(void *context, int16_t error, int64_t base_offset),
                             void *context);
/* A transaction marker of producer_id was written here as leader (its
 * append reached the HW): a marker in __consumer_offsets completes the
 * producer's pending transactional offset commits in the group coordinator
 * (KafkaApis.handleWriteTxnMarkersRequest's onTransactionCompleted). */
/* KIP-890 part 2: this broker's own transaction coordinator answers an
 * implicit add its partition leader asked for (the answer a
 * KS_MSG_TXN_VERIFY_RESPONSE would carry from another broker). */
void ks_broker_txn_add_answered(struct ks_broker *broker, const struct ks_txn_response *response);
void ks_broker_txn_marker_written(struct ks_broker *broker, int32_t topic_index,
                                  int32_t partition, int64_t producer_id, bool commit);
/* A new producer id (InitProducerId): unique over the run. */
int64_t ks_broker_allocate_producer_id(struct ks_broker *broker);
/* The name and partition count of topic topic_index (any topic of the broker's array). */
const char *ks_broker_topic_name(const struct ks_broker *broker, int32_t topic_index);
int32_t ks_broker_partition_count(const struct ks_broker *broker, int32_t topic_index);
/* The partition's leader epoch from this broker's metadata cache; -1 unknown. */
int32_t ks_broker_partition_leader_epoch(struct ks_broker *broker, int32_t topic_index,
                                         int32_t partition);
/* ks_log_scan over the local replica's log from offset up to upto_offset;
 * nothing happens if this broker does not host the partition. */
void ks_broker_scan_local(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                          int64_t offset, int64_t upto_offset, ks_log_batch_fn *visit,
                          void *context);
/* A coordinator's loading scan (GroupMetadataManager, TransactionStateManager):
 * visit(context, record) for every record of the local replica's data
 * batches from its log start to its LEO, in offset order; control batches
 * are skipped. Nothing happens if this broker does not host the partition. */
typedef void ks_broker_record_fn(void *context, const struct ks_record_view *record);
void ks_broker_load_local(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                          ks_broker_record_fn *visit, void *context);
/* The local replica's HW, LEO and log start; -1 if not hosted. */
int64_t ks_broker_hw(struct ks_broker *broker, int32_t topic_index, int32_t partition);
int64_t ks_broker_leo(struct ks_broker *broker, int32_t topic_index, int32_t partition);
int64_t ks_broker_log_start_offset(struct ks_broker *broker, int32_t topic_index,
                                   int32_t partition);
/* Reports `event` (built with ks_cluster_event_init) through the observer,
 * after setting its at_ns to now and its broker to this broker. Borrowed for
 * the call. */
void ks_broker_emit(struct ks_broker *broker, struct ks_cluster_event *event);

/* Tests and benchmarks: the broker object of a cluster (core/cluster.c);
 * NULL for a bad id. Borrowed. */
struct ks_broker *ks_cluster_broker(struct ks_cluster *cluster, int32_t broker_id);
