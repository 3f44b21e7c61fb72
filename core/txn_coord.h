/*
** core/txn_coord.h: the transaction coordinator that runs inside every broker
** (Kafka's TransactionCoordinator + TransactionStateManager +
** TransactionMarkerChannelManager, KIP-98), and the partition leader's side
** of WriteTxnMarkers.
**
** A broker owns one ks_txn_coordinator for its lifetime when the cluster has
** __transaction_state (a producer sets transactional.id; core/cluster.c). The
** coordinator of transactional id T is the broker leading partition
**   abs(javaStringHash(T)) mod transaction.state.log.num.partitions
** (TransactionStateManager.partitionFor). Every state change of a
** transaction is a record of that partition, appended with
** ks_broker_append_internal and applied only once the HW passes it; a new
** leader loads the partition's records and completes what its predecessor
** left half done. The state machine, the record layouts and the simplifications
** are in core/txn_coord.c's design block; the messages in core/proto.h.
**
** All functions run on the owning broker's node.
*/
#pragma once

#include "world.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KS_TXN_TOPIC_NAME "__transaction_state"

struct ks_broker;
struct ks_txn_request;
struct ks_txn_coordinator;

/* Builds the coordinator of `broker` (borrowed; must outlive it). It owns no
 * partition until ks_txn_coordinator_on_leadership says so. Owned by the
 * caller: ks_txn_coordinator_free. */
struct ks_txn_coordinator *ks_txn_coordinator_new(struct ks_broker *broker);
/* NULL is a no-op. Cancels its timers; pending appends' callbacks never run
 * after it (the broker drops them with its memory). */
void ks_txn_coordinator_free(struct ks_txn_coordinator *t);
/* Every message of kind KS_MSG_TXN_FIRST..KS_MSG_TXN_LAST reaching the
 * broker. message is borrowed. */
void ks_txn_coordinator_handle(struct ks_txn_coordinator *t, ks_node_id source, uint32_t kind,
                               const void *message, size_t message_bytes);
/* This broker became (is_leader) or stopped being the leader of partition
 * `partition` of __transaction_state: load it (in a zero-delay timer; until
 * then COORDINATOR_LOAD_IN_PROGRESS), or forget its transactions. */
void ks_txn_coordinator_on_leadership(struct ks_txn_coordinator *t, int32_t partition,
                                      bool is_leader);
/* KIP-890 part 1 (TransactionCoordinator.handleVerifyPartitionsInTransaction):
 * whether request's partition is in the ongoing transaction of its
 * transactional id, producer id and epoch. NONE if it is; INVALID_TXN_STATE
 * if not, or if the id is unknown or has another producer id (Kafka:
 * INVALID_PRODUCER_ID_MAPPING); PRODUCER_FENCED for another epoch;
 * CONCURRENT_TRANSACTIONS while the transaction is in PrepareCommit or
 * PrepareAbort; NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS. Changes
 * nothing. Also the answer to a KS_MSG_TXN_VERIFY_REQUEST. */
int16_t ks_txn_coordinator_verify(const struct ks_txn_coordinator *t,
                                  const struct ks_txn_request *request);
/* KIP-890 part 2 (transaction.version 2; AddPartitionsToTxn from this
 * broker's partition leader, not verifyOnly): adds request's partition to the
 * transaction as a producer's AddPartitionsToTxn would
 * (handleAddPartitionsToTransaction), and answers the leader through
 * ks_broker_txn_add_answered, at once or once the change is written. */
void ks_txn_coordinator_add_for_leader(struct ks_txn_coordinator *t,
                                       const struct ks_txn_request *request);
