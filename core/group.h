/*
** core/group.h: the group coordinator that runs inside every broker (Kafka's
** GroupCoordinator + GroupMetadataManager, classic protocol).
**
** A broker owns one ks_group_coordinator for its lifetime (created when the
** broker starts, freed when it crashes or stops). The coordinator of group G
** is the broker leading partition
**   abs(javaStringHash(G)) mod offsets.topic.num.partitions
** of the internal topic __consumer_offsets (kafka-reference 6.6). Committed
** offsets and group generations are records in that partition, appended with
** ks_broker_append_internal and acknowledged only once the HW passes them, so
** they can be lost by the same faults as data. The record layouts, the state
** machine and the invariants are in core/group.c's design block; the message
** layouts are in core/group_proto.h.
**
** All functions run on the owning broker's node.
*/
#pragma once

#include "world.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ks_broker;
struct ks_group_coordinator;

/* Builds the coordinator of `broker` (borrowed; must outlive it). It owns
 * no partition until ks_group_coordinator_on_leadership says so. Owned by the
 * caller: ks_group_coordinator_free. */
struct ks_group_coordinator *ks_group_coordinator_new(struct ks_broker *broker);
/* NULL is a no-op. Pending appends' callbacks must not run after this: the
 * broker frees the coordinator only when it drops its own in-flight work
 * (crash) or has no more events. */
void ks_group_coordinator_free(struct ks_group_coordinator *g);
/* Every message of kind KS_GROUP_KIND_MIN..KS_GROUP_KIND_MAX (core/group_proto.h)
 * reaching the broker, from `source` (a consumer node). message is borrowed. */
void ks_group_coordinator_handle(struct ks_group_coordinator *g, ks_node_id source, uint32_t kind,
                                 const void *message, size_t message_bytes);
/* This broker became (is_leader) or stopped being the leader of partition
 * `partition` of __consumer_offsets. On becoming leader the coordinator marks
 * the partition loading and, in a zero-delay timer, loads its groups from the
 * local log, from the log start offset to the LEO, as Kafka's
 * CoordinatorLoaderImpl.load reads to the log end (until then requests get
 * COORDINATOR_LOAD_IN_PROGRESS); on losing it, it forgets them and answers
 * NOT_COORDINATOR. */
void ks_group_coordinator_on_leadership(struct ks_group_coordinator *g, int32_t partition,
                                        bool is_leader);
/* The COMMIT (commit) or ABORT marker of producer_id's transaction is
 * written (acks=all) to partition `partition` of __consumer_offsets, led
 * here: the producer's pending transactional offsets of the groups in that
 * partition become committed or vanish (KafkaApis.handleWriteTxnMarkersRequest
 * -> GroupCoordinator.onTransactionCompleted). A partition not loaded here
 * is left alone: its load reads the marker from the log. */
/* The transaction coordinator's answer to the verification of a
 * TxnOffsetCommit (ks_broker_verify_txn_offsets): message is the request as
 * it came from source; error a core/proto.h code (NONE: go on and append it
 * with guard). */
void ks_group_coordinator_txn_offsets_verified(struct ks_group_coordinator *g, ks_node_id source,
                                               const void *message, size_t message_bytes,
                                               int16_t error, uint64_t guard);
void ks_group_coordinator_txn_completed(struct ks_group_coordinator *g, int32_t partition,
                                        int64_t producer_id, bool commit);
/* Whole-coordinator check (STYLE 3.7): G1 and G3 of core/group.c's design
 * block for every group, plus the member, join-timer, offset-cache and
 * pending-append bookkeeping. Asserts; returns only when all hold. Runs after
 * every coordinator event in KS_DEBUG builds; tests may call it between
 * events. */
void ks_group_coordinator_check(const struct ks_group_coordinator *g);

/* ---- pure helpers (also used by the consumer and the tests) ------------- */

/* Java's String.hashCode over the UTF-16 code units of the UTF-8 string s
 * (32-bit wrap). Invalid UTF-8 bytes count as one unit each. */
int32_t ks_group_java_string_hash(const char *s);
/* abs(javaStringHash(group_id)) mod partition_count, with abs(MIN) = 0
 * (Kafka's Utils.abs). partition_count > 0. */
int32_t ks_group_offsets_partition(const char *group_id, int32_t partition_count);
