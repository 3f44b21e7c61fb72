/*
** core/group_proto.h: the group protocol between consumers and the group
** coordinator on a broker: message kinds 100..199 and their layouts.
**
** These stand for Kafka's FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
** LeaveGroup, OffsetCommit and OffsetFetch APIs (classic protocol). Fetch,
** Metadata and ListOffsets are the broker's own messages (core/proto.h).
**
** Layout: every message is one fixed header struct, built in zeroed memory
** (the world's trace hash covers padding too), optionally followed by an array
** of fixed entry structs whose count the header gives. Both ends are this
** same program, so the structs travel as they are; names are fixed-size,
** NUL-terminated and zero-padded. A receiver checks message_bytes against the
** header's count before reading entries (ks_group_proto_entries).
**
** Every request carries a correlation_id that its response echoes, so a
** client can ignore responses to requests it has given up on.
*/
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KS_GROUP_KIND_MIN 100u
#define KS_GROUP_KIND_MAX 199u

enum ks_group_kind {
    KS_GROUP_FIND_COORDINATOR_REQUEST = 100,
    KS_GROUP_FIND_COORDINATOR_RESPONSE = 101,
    KS_GROUP_JOIN_REQUEST = 102,
    KS_GROUP_JOIN_RESPONSE = 103,
    KS_GROUP_SYNC_REQUEST = 104,
    KS_GROUP_SYNC_RESPONSE = 105,
    KS_GROUP_HEARTBEAT_REQUEST = 106,
    KS_GROUP_HEARTBEAT_RESPONSE = 107,
    KS_GROUP_LEAVE_REQUEST = 108,
    KS_GROUP_LEAVE_RESPONSE = 109,
    KS_GROUP_OFFSET_COMMIT_REQUEST = 110,
    KS_GROUP_OFFSET_COMMIT_RESPONSE = 111,
    KS_GROUP_OFFSET_FETCH_REQUEST = 112,
    KS_GROUP_OFFSET_FETCH_RESPONSE = 113,
    KS_GROUP_TXN_OFFSET_COMMIT_REQUEST = 114, /* a transactional producer (KIP-98/447) */
    KS_GROUP_TXN_OFFSET_COMMIT_RESPONSE = 115,
};

/* Kafka error codes used by the group APIs (kafka-reference 7). Named with a
 * GROUP prefix so that they never clash with core/proto.h's list. */
#define KS_GROUP_ERR_NONE                         0
#define KS_GROUP_ERR_UNKNOWN_SERVER_ERROR         (-1)
#define KS_GROUP_ERR_REQUEST_TIMED_OUT            7
#define KS_GROUP_ERR_COORDINATOR_LOAD_IN_PROGRESS 14
#define KS_GROUP_ERR_COORDINATOR_NOT_AVAILABLE    15
#define KS_GROUP_ERR_NOT_COORDINATOR              16
#define KS_GROUP_ERR_ILLEGAL_GENERATION           22
#define KS_GROUP_ERR_INCONSISTENT_GROUP_PROTOCOL  23
#define KS_GROUP_ERR_UNKNOWN_MEMBER_ID            25
#define KS_GROUP_ERR_INVALID_SESSION_TIMEOUT      26
#define KS_GROUP_ERR_REBALANCE_IN_PROGRESS        27
#define KS_GROUP_ERR_MEMBER_ID_REQUIRED           79 /* KIP-394: join again with the given member_id */
#define KS_GROUP_ERR_UNSTABLE_OFFSET_COMMIT       88 /* KIP-447: a transactional commit is pending */
#define KS_GROUP_ERR_INVALID_PRODUCER_EPOCH       47 /* TxnOffsetCommit: the log refused the epoch */
#define KS_GROUP_ERR_INVALID_TXN_STATE            48 /* TxnOffsetCommit: not verified (KIP-890) */
#define KS_GROUP_ERR_CONCURRENT_TRANSACTIONS      51 /* TxnOffsetCommit: verification, retriable */

#define KS_GROUP_ID_BYTES        256 /* as struct ks_consumer_config group_id */
#define KS_GROUP_MEMBER_ID_BYTES 96
#define KS_GROUP_CLIENT_ID_BYTES 64

/* ---- FindCoordinator (any broker answers from its metadata) ------------- */

struct ks_group_find_coordinator_request {
    int32_t correlation_id;
    int32_t reserved;
    char group_id[KS_GROUP_ID_BYTES];
};

struct ks_group_find_coordinator_response {
    int32_t correlation_id;
    int16_t error_code; /* COORDINATOR_NOT_AVAILABLE when no leader is known */
    int16_t reserved;
    int32_t coordinator_id; /* broker id (== node id), -1 if none */
    int32_t reserved2;
};

/* ---- JoinGroup ------------------------------------------------------------ */

/* A partition a member owned in its last generation (the sticky assignor's
 * "userData", Kafka's StickyAssignor subscription). */
struct ks_group_topic_partition {
    int32_t topic_index;
    int32_t partition;
};

/* Followed by owned_count struct ks_group_topic_partition. */
struct ks_group_join_request {
    int32_t correlation_id;
    int32_t topic_index;          /* the subscription: one topic per consumer in ksim */
    int64_t session_timeout_ns;   /* session.timeout.ms */
    int64_t rebalance_timeout_ns; /* max.poll.interval.ms, as Kafka's rebalance timeout */
    int32_t assignor;             /* enum ks_assignor: the protocol the member supports */
    int32_t owned_generation;     /* generation of the owned partitions, -1 if none */
    int32_t owned_count;
    /* With member_id "": the n of the new id "<client_id>-<n>", the client's
     * count of fresh joins (it never repeats, even across the client's
     * crashes): a deterministic stand-in for the random UUID suffix of
     * Kafka's member ids, so an id is never given to two incarnations. */
    int32_t member_number;
    char group_id[KS_GROUP_ID_BYTES];
    char member_id[KS_GROUP_MEMBER_ID_BYTES]; /* "" to join as a new member */
    char client_id[KS_GROUP_CLIENT_ID_BYTES]; /* the consumer's name: member ids derive from it */
};

/* One member as the leader sees it in a JoinGroup response. */
struct ks_group_join_member {
    char member_id[KS_GROUP_MEMBER_ID_BYTES];
    int32_t topic_index;
    int32_t owned_generation;
    int32_t owned_count; /* its entries follow the previous members' in the owned array */
    int32_t reserved;
};

/* Followed by member_count struct ks_group_join_member (only for the
 * leader; 0 for followers), then the sum of their owned_count
 * struct ks_group_topic_partition, in member order. */
struct ks_group_join_response {
    int32_t correlation_id;
    int16_t error_code;
    int16_t reserved;
    int32_t generation;
    int32_t assignor; /* the protocol the group chose: enum ks_assignor */
    int32_t member_count;
    int32_t owned_total;
    char leader_id[KS_GROUP_MEMBER_ID_BYTES];
    char member_id[KS_GROUP_MEMBER_ID_BYTES]; /* the id given to (or kept by) this member */
};

/* ---- SyncGroup ---------------------------------------------------------- */

struct ks_group_assignment_entry {
    char member_id[KS_GROUP_MEMBER_ID_BYTES];
    int32_t topic_index;
    int32_t partition;
};

/* Followed by entry_count struct ks_group_assignment_entry (the leader's
 * assignment; 0 from followers). */
struct ks_group_sync_request {
    int32_t correlation_id;
    int32_t generation;
    int32_t entry_count;
    int32_t reserved;
    char group_id[KS_GROUP_ID_BYTES];
    char member_id[KS_GROUP_MEMBER_ID_BYTES];
};

/* Followed by partition_count struct ks_group_topic_partition: this member's
 * assignment. */
struct ks_group_sync_response {
    int32_t correlation_id;
    int16_t error_code;
    int16_t reserved;
    int32_t generation;
    int32_t partition_count;
};

/* ---- Heartbeat and LeaveGroup --------------------------------------------- */

struct ks_group_member_request { /* Heartbeat and LeaveGroup */
    int32_t correlation_id;
    int32_t generation;
    char group_id[KS_GROUP_ID_BYTES];
    char member_id[KS_GROUP_MEMBER_ID_BYTES];
};

struct ks_group_simple_response { /* Heartbeat, LeaveGroup and OffsetCommit */
    int32_t correlation_id;
    int16_t error_code;
    int16_t reserved;
};

/* ---- OffsetCommit and OffsetFetch ------------------------------------------ */

struct ks_group_offset_entry {
    int32_t topic_index;
    int32_t partition;
    int64_t offset; /* next offset to consume; -1 in a fetch response: none */
};

/* Followed by entry_count struct ks_group_offset_entry. generation -1 and
 * member_id "" commit outside the group protocol (as Kafka's admin tools),
 * accepted only while the group is empty; otherwise both must match the
 * group's. */
struct ks_group_offset_commit_request {
    int32_t correlation_id;
    int32_t generation;
    int32_t entry_count;
    int32_t reserved;
    char group_id[KS_GROUP_ID_BYTES];
    char member_id[KS_GROUP_MEMBER_ID_BYTES];
};

/* TxnOffsetCommit (sendOffsetsToTransaction's second request, sent by the
 * producer to the group's coordinator after AddOffsetsToTxn): followed by
 * entry_count struct ks_group_offset_entry. The offsets stay pending until
 * the transaction's marker reaches the group's __consumer_offsets partition.
 * generation and member_id are the consumer's group metadata (KIP-447):
 * generation -1 and member_id "" skip the member check, as requests of
 * clients before 2.5 do. Answered with struct ks_group_simple_response of
 * kind KS_GROUP_TXN_OFFSET_COMMIT_RESPONSE. */
struct ks_group_txn_offset_commit_request {
    int32_t correlation_id;
    int32_t generation;
    int32_t entry_count;
    int16_t producer_epoch;
    int16_t reserved;
    int64_t producer_id;
    char group_id[KS_GROUP_ID_BYTES];
    char member_id[KS_GROUP_MEMBER_ID_BYTES];
    char transactional_id[64]; /* KS_TRANSACTIONAL_ID_BYTES of core/proto.h */
};

/* Followed by entry_count struct ks_group_topic_partition. */
struct ks_group_offset_fetch_request {
    int32_t correlation_id;
    int32_t entry_count;
    char group_id[KS_GROUP_ID_BYTES];
};

/* One partition of an OffsetFetch response (OffsetFetchResponsePartition:
 * PartitionIndex, CommittedOffset, ErrorCode). error_code is the
 * partition's own: UNSTABLE_OFFSET_COMMIT (offset -1) while a transactional
 * offset commit for it is pending and the request requires stable offsets
 * (KIP-447, OffsetFetch v7+). Laid out in the 16 bytes of struct
 * ks_group_offset_entry: topic_index fits 16 bits (at most
 * KS_TOPIC_COUNT_MAX topics and the internal ones, asserted in group.c). */
struct ks_group_offset_fetch_entry {
    int16_t topic_index;
    int16_t error_code;
    int32_t partition;
    int64_t offset; /* next offset to consume; -1: nothing committed, or an error */
};
_Static_assert(sizeof(struct ks_group_offset_fetch_entry) == 16,
               "an OffsetFetch entry is 2+2+4+8 bytes");

/* Followed by entry_count struct ks_group_offset_fetch_entry. error_code is
 * the request's (COORDINATOR_LOAD_IN_PROGRESS while the partition loads, and
 * the other coordinator errors; no entries then); partitions carry their own
 * (UNSTABLE_OFFSET_COMMIT), as OffsetFetch v2+ answers. */
struct ks_group_offset_fetch_response {
    int32_t correlation_id;
    int16_t error_code;
    int16_t reserved;
    int32_t entry_count;
    int32_t reserved2;
};

/* Returns a pointer to the entries that follow a header of header_bytes when
 * message_bytes holds exactly count entries of entry_bytes, else NULL (a
 * malformed message, which is a bug between two parts of this program). */
static inline const void *ks_group_proto_entries(const void *message, size_t message_bytes,
                                                 size_t header_bytes, int32_t count,
                                                 size_t entry_bytes)
{
    if (count < 0 || message_bytes != header_bytes + (size_t)count * entry_bytes) {
        return NULL;
    }
    return (const uint8_t *)message + header_bytes;
}
