/*
** core/proto.h: the messages brokers, the controller and clients exchange.
**
** Every message is a plain C struct sent with ks_world_send(world, source,
** target, KIND, bytes, size), sometimes followed by an array of fixed-size
** entries and/or trailing record-batch bytes. Build messages in zeroed memory
** (calloc, or memset before filling): the trace hash covers every byte,
** padding included. The receiver gets a borrowed view; it must check
** message_bytes against the layout before reading (ks_proto_* helpers below).
**
** Field names follow Kafka's protocol where they exist (error_code is
** Kafka's ErrorCode, hw is HighWatermark ...), in ksim's snake case.
**
** Kinds:
**     1 ..  99  this file (client <-> broker, broker <-> broker, broker <-> controller)
**   100 .. 199  consumer-group protocol (core/group_proto.h, the "groups" module)
**   200 .. 299  broker/controller timer kinds (for ks_world_schedule's trace kind)
**   300 .. 399  producer timer kinds; 400 .. 499 consumer/group timer kinds
**   500 .. 509  MirrorMaker 2 timer kinds (core/mirror.h); 510 .. 599 free
**   (message kinds and timer kinds are separate numberings, told apart in the
**   trace hash: the transaction message kinds 400 .. 419 are not timer kinds)
**
** Layouts (all sizes in bytes, little-endian native structs; the simulated
** network copies bytes, so no byte-order conversion is needed):
**
**   METADATA_REQUEST        struct ks_metadata_request
**   METADATA_RESPONSE       struct ks_metadata_response
**                           + partition_count * struct ks_metadata_partition
**   INIT_PRODUCER_ID_*      struct ks_init_producer_id_request / _response
**   PRODUCE_REQUEST         struct ks_produce_request + batch_bytes of batch
**   PRODUCE_REQUESTS        struct ks_produce_bundle, then count times:
**                           struct ks_produce_bundle_entry + a PRODUCE_REQUEST
**                           message of entry.bytes, zero-padded to a multiple of 8
**   PRODUCE_RESPONSES       struct ks_produce_bundle + count * struct ks_produce_response
**   PRODUCE_RESPONSE        struct ks_produce_response
**   FETCH_REQUEST           struct ks_fetch_request
**                           + partition_count * struct ks_fetch_request_partition
**   FETCH_RESPONSE          struct ks_fetch_response, then partition_count times:
**                           struct ks_fetch_response_partition + records_bytes of records
**                           (+ struct ks_fetch_txn_trailer + aborted_count *
**                           struct ks_fetch_aborted when read_committed)
**   LIST_OFFSETS_*          struct ks_list_offsets_request / _response
**   OFFSET_FOR_LEADER_EPOCH_*  struct ks_offset_for_leader_epoch_request / _response
**   API_VERSIONS_*          struct ks_api_versions_request / _response
**   BROKER_HEARTBEAT_*      struct ks_broker_heartbeat_request / _response
**   ALTER_PARTITION_*       struct ks_alter_partition_request / _response
**   PARTITION_STATE         struct ks_partition_state_push (wire form, below)
**                           + partition_count * struct ks_partition_state
**   ZK_REQUEST              struct ks_zk_request
**   ZK_RESPONSE, ZK_WATCH   struct ks_zk_response (wire form)
**                           + partition_count * struct ks_partition_state (READ_STATE)
**   LEADER_AND_ISR          struct ks_leader_and_isr + struct ks_partition_state_push
**                           (wire form) + partition_count * struct ks_partition_state
**
** Three messages carry one entry per broker (ks_metadata_response,
** ks_partition_state_push, ks_zk_response). In memory their arrays hold
** KS_BROKER_COUNT_MAX entries; on the wire they hold
** ks_proto_broker_slots(broker_count) = max(64, broker_count) rounded up to a
** multiple of 8, so that up to 64 brokers the bytes (and every trace hash) are
** those of the fixed 64-entry layout these messages had before the limit was
** raised. Build and read them with ks_proto_*_encode / _decode.
**
** Producer ids: InitProducerId is answered by any live broker (Kafka asks the
** controller for id blocks; ksim lets the broker allocate, a simplification):
** id = broker_id * 1000000 + incarnation * 10000 + n, where incarnation counts
** the broker's restarts and n counts ids it handed out since; epoch 0. Ids are
** deterministic and never reused within a run.
*/
#pragma once

#include "config.h"
#include "world.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Kafka error codes (kafka-reference 7) ------------------------------ */

enum ks_error {
    KS_ERR_UNKNOWN_SERVER_ERROR = -1,
    KS_ERR_NONE = 0,
    KS_ERR_OFFSET_OUT_OF_RANGE = 1,
    KS_ERR_CORRUPT_MESSAGE = 2,
    KS_ERR_UNKNOWN_TOPIC_OR_PARTITION = 3,
    KS_ERR_LEADER_NOT_AVAILABLE = 5,
    KS_ERR_NOT_LEADER_OR_FOLLOWER = 6,
    KS_ERR_REQUEST_TIMED_OUT = 7,
    KS_ERR_BROKER_NOT_AVAILABLE = 8, /* ControlledShutdown from a broker the controller lost */
    KS_ERR_MESSAGE_TOO_LARGE = 10,
    KS_ERR_NETWORK_EXCEPTION = 13,
    KS_ERR_COORDINATOR_LOAD_IN_PROGRESS = 14,
    KS_ERR_COORDINATOR_NOT_AVAILABLE = 15,
    KS_ERR_NOT_COORDINATOR = 16,
    KS_ERR_NOT_ENOUGH_REPLICAS = 19,
    KS_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20,
    KS_ERR_ILLEGAL_GENERATION = 22,
    KS_ERR_UNKNOWN_MEMBER_ID = 25,
    KS_ERR_REBALANCE_IN_PROGRESS = 27,
    KS_ERR_NOT_CONTROLLER = 41,  /* AlterPartition with epochs newer than the controller's */
    KS_ERR_INVALID_REQUEST = 42, /* AlterPartition from a non-leader, or a bad ISR */
    KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER = 45,
    KS_ERR_DUPLICATE_SEQUENCE_NUMBER = 46,
    KS_ERR_INVALID_PRODUCER_EPOCH = 47,
    KS_ERR_KAFKA_STORAGE_ERROR = 56,
    KS_ERR_UNKNOWN_PRODUCER_ID = 59,
    KS_ERR_FETCH_SESSION_ID_NOT_FOUND = 70,  /* KIP-227: the leader has no such session */
    KS_ERR_INVALID_FETCH_SESSION_EPOCH = 71, /* KIP-227: not the epoch the session expects */
    KS_ERR_FENCED_LEADER_EPOCH = 74,
    KS_ERR_UNKNOWN_LEADER_EPOCH = 75,
    KS_ERR_STALE_BROKER_EPOCH = 77, /* from an incarnation the controller does not know */
    KS_ERR_OFFSET_NOT_AVAILABLE = 78,
    KS_ERR_INVALID_UPDATE_VERSION = 96,         /* AlterPartition with a stale partition epoch */
    KS_ERR_DUPLICATE_BROKER_REGISTRATION = 101, /* old incarnation's session still valid */
    KS_ERR_INELIGIBLE_REPLICA = 107,    /* an ISR member fenced, unregistered or of a stale epoch */
    KS_ERR_STALE_CONTROLLER_EPOCH = 11, /* a request from a controller of an older epoch */
    KS_ERR_INVALID_TXN_STATE = 48,      /* EndTxn/AddPartitionsToTxn in the wrong state */
    KS_ERR_CONCURRENT_TRANSACTIONS = 51, /* the previous transaction is still completing */
    KS_ERR_PRODUCER_FENCED = 90,         /* a newer instance of the transactional.id */
    KS_ERR_INVALID_RECORD = 87,          /* a client's Produce carried a control batch */
};

/* "NOT_LEADER_OR_FOLLOWER" etc.; "UNKNOWN" for codes not listed above. */
static inline const char *ks_error_name(int16_t error_code)
{
    switch (error_code) {
    case KS_ERR_UNKNOWN_SERVER_ERROR: return "UNKNOWN_SERVER_ERROR";
    case KS_ERR_NONE: return "NONE";
    case KS_ERR_OFFSET_OUT_OF_RANGE: return "OFFSET_OUT_OF_RANGE";
    case KS_ERR_CORRUPT_MESSAGE: return "CORRUPT_MESSAGE";
    case KS_ERR_UNKNOWN_TOPIC_OR_PARTITION: return "UNKNOWN_TOPIC_OR_PARTITION";
    case KS_ERR_LEADER_NOT_AVAILABLE: return "LEADER_NOT_AVAILABLE";
    case KS_ERR_NOT_LEADER_OR_FOLLOWER: return "NOT_LEADER_OR_FOLLOWER";
    case KS_ERR_STALE_CONTROLLER_EPOCH: return "STALE_CONTROLLER_EPOCH";
    case KS_ERR_REQUEST_TIMED_OUT: return "REQUEST_TIMED_OUT";
    case KS_ERR_BROKER_NOT_AVAILABLE: return "BROKER_NOT_AVAILABLE";
    case KS_ERR_MESSAGE_TOO_LARGE: return "MESSAGE_TOO_LARGE";
    case KS_ERR_NETWORK_EXCEPTION: return "NETWORK_EXCEPTION";
    case KS_ERR_COORDINATOR_LOAD_IN_PROGRESS: return "COORDINATOR_LOAD_IN_PROGRESS";
    case KS_ERR_COORDINATOR_NOT_AVAILABLE: return "COORDINATOR_NOT_AVAILABLE";
    case KS_ERR_NOT_COORDINATOR: return "NOT_COORDINATOR";
    case KS_ERR_NOT_ENOUGH_REPLICAS: return "NOT_ENOUGH_REPLICAS";
    case KS_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND: return "NOT_ENOUGH_REPLICAS_AFTER_APPEND";
    case KS_ERR_ILLEGAL_GENERATION: return "ILLEGAL_GENERATION";
    case KS_ERR_UNKNOWN_MEMBER_ID: return "UNKNOWN_MEMBER_ID";
    case KS_ERR_REBALANCE_IN_PROGRESS: return "REBALANCE_IN_PROGRESS";
    case KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER: return "OUT_OF_ORDER_SEQUENCE_NUMBER";
    case KS_ERR_DUPLICATE_SEQUENCE_NUMBER: return "DUPLICATE_SEQUENCE_NUMBER";
    case KS_ERR_INVALID_PRODUCER_EPOCH: return "INVALID_PRODUCER_EPOCH";
    case KS_ERR_KAFKA_STORAGE_ERROR: return "KAFKA_STORAGE_ERROR";
    case KS_ERR_UNKNOWN_PRODUCER_ID: return "UNKNOWN_PRODUCER_ID";
    case KS_ERR_FENCED_LEADER_EPOCH: return "FENCED_LEADER_EPOCH";
    case KS_ERR_UNKNOWN_LEADER_EPOCH: return "UNKNOWN_LEADER_EPOCH";
    case KS_ERR_OFFSET_NOT_AVAILABLE: return "OFFSET_NOT_AVAILABLE";
    case KS_ERR_NOT_CONTROLLER: return "NOT_CONTROLLER";
    case KS_ERR_INVALID_REQUEST: return "INVALID_REQUEST";
    case KS_ERR_STALE_BROKER_EPOCH: return "STALE_BROKER_EPOCH";
    case KS_ERR_INVALID_UPDATE_VERSION: return "INVALID_UPDATE_VERSION";
    case KS_ERR_INELIGIBLE_REPLICA: return "INELIGIBLE_REPLICA";
    case KS_ERR_DUPLICATE_BROKER_REGISTRATION: return "DUPLICATE_BROKER_REGISTRATION";
    case KS_ERR_INVALID_TXN_STATE: return "INVALID_TXN_STATE";
    case KS_ERR_CONCURRENT_TRANSACTIONS: return "CONCURRENT_TRANSACTIONS";
    case KS_ERR_PRODUCER_FENCED: return "PRODUCER_FENCED";
    case KS_ERR_INVALID_RECORD: return "INVALID_RECORD";
    }
    return "UNKNOWN";
}

/* Kafka's retriable flag (kafka-reference 7). */
static inline bool ks_error_is_retriable(int16_t error_code)
{
    switch (error_code) {
    case KS_ERR_CORRUPT_MESSAGE:
    case KS_ERR_UNKNOWN_TOPIC_OR_PARTITION:
    case KS_ERR_LEADER_NOT_AVAILABLE:
    case KS_ERR_NOT_LEADER_OR_FOLLOWER:
    case KS_ERR_REQUEST_TIMED_OUT:
    case KS_ERR_NETWORK_EXCEPTION:
    case KS_ERR_COORDINATOR_LOAD_IN_PROGRESS:
    case KS_ERR_COORDINATOR_NOT_AVAILABLE:
    case KS_ERR_NOT_COORDINATOR:
    case KS_ERR_NOT_ENOUGH_REPLICAS:
    case KS_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case KS_ERR_KAFKA_STORAGE_ERROR:
    case KS_ERR_FENCED_LEADER_EPOCH:
    case KS_ERR_UNKNOWN_LEADER_EPOCH:
    case KS_ERR_OFFSET_NOT_AVAILABLE:
    case KS_ERR_CONCURRENT_TRANSACTIONS: return true;
    }
    return false;
}

/* ---- message kinds ------------------------------------------------------ */

enum ks_msg_kind {
    KS_MSG_METADATA_REQUEST = 1,
    KS_MSG_METADATA_RESPONSE = 2,
    KS_MSG_INIT_PRODUCER_ID_REQUEST = 3,
    KS_MSG_INIT_PRODUCER_ID_RESPONSE = 4,
    KS_MSG_PRODUCE_REQUEST = 5,
    KS_MSG_PRODUCE_RESPONSE = 6,
    KS_MSG_FETCH_REQUEST = 7,
    KS_MSG_FETCH_RESPONSE = 8,
    KS_MSG_LIST_OFFSETS_REQUEST = 9,
    KS_MSG_LIST_OFFSETS_RESPONSE = 10,
    KS_MSG_API_VERSIONS_REQUEST = 11, /* the first request on a new connection */
    KS_MSG_API_VERSIONS_RESPONSE = 12,
    KS_MSG_OFFSET_FOR_LEADER_EPOCH_REQUEST = 13, /* consumer position validation (KIP-320) */
    KS_MSG_OFFSET_FOR_LEADER_EPOCH_RESPONSE = 14,
    KS_MSG_PRODUCE_REQUESTS = 15,         /* one Produce request of several partitions (a bundle) */
    KS_MSG_PRODUCE_RESPONSES = 16,        /* its one answer: every partition's, in request order */
    KS_MSG_BROKER_HEARTBEAT_REQUEST = 20, /* also registration (first one after start) */
    KS_MSG_BROKER_HEARTBEAT_RESPONSE = 21,
    KS_MSG_ALTER_PARTITION_REQUEST = 22,
    KS_MSG_ALTER_PARTITION_RESPONSE = 23,
    KS_MSG_PARTITION_STATE = 24, /* controller -> broker: LeaderAndIsr + metadata */
    /* controller = zookeeper (core/zk.c, core/broker_zk.c, core/zk_controller.c) */
    KS_MSG_ZK_REQUEST = 25,     /* broker -> ZooKeeper: struct ks_zk_request */
    KS_MSG_ZK_RESPONSE = 26,    /* ZooKeeper -> broker: struct ks_zk_response (+ entries) */
    KS_MSG_ZK_WATCH = 27,       /* ZooKeeper -> broker: a watch fired: struct ks_zk_response */
    KS_MSG_LEADER_AND_ISR = 28, /* ZooKeeper-era controller -> broker: ks_leader_and_isr + push */
    /* broker -> ZooKeeper-era controller and back: struct ks_controlled_shutdown_* */
    KS_MSG_CONTROLLED_SHUTDOWN_REQUEST = 45,
    KS_MSG_CONTROLLED_SHUTDOWN_RESPONSE = 46,
    /* KRaft quorum between controllers (core/raft.c) */
    KS_MSG_RAFT_VOTE_REQUEST = 29,         /* struct ks_raft_vote_request */
    KS_MSG_RAFT_VOTE_RESPONSE = 30,        /* struct ks_raft_vote_response */
    KS_MSG_RAFT_BEGIN_EPOCH = 31,          /* struct ks_raft_begin_epoch (BeginQuorumEpoch) */
    KS_MSG_RAFT_BEGIN_EPOCH_RESPONSE = 32, /* struct ks_raft_begin_epoch */
    KS_MSG_RAFT_FETCH_REQUEST = 33,        /* struct ks_raft_fetch_request */
    KS_MSG_RAFT_FETCH_RESPONSE = 34,       /* struct ks_raft_fetch_response + batch_bytes */
};

#define KS_MSG_GROUP_FIRST 100u /* consumer-group kinds: 100 .. 199 */
#define KS_MSG_GROUP_LAST  199u
#define KS_MSG_TXN_FIRST   400u /* transaction kinds (core/proto.h, the end): 400 .. 419 */
#define KS_MSG_TXN_LAST    419u

/* Timer kinds used by brokers and the controller (trace only). */
enum ks_broker_timer_kind {
    KS_TIMER_BROKER_HEARTBEAT = 200,
    KS_TIMER_BROKER_FETCH = 201,         /* follower: next fetch (after backoff) */
    KS_TIMER_BROKER_FETCH_TIMEOUT = 202, /* follower: request.timeout for a fetch */
    KS_TIMER_BROKER_DELAYED_FETCH = 203, /* leader: long-poll expiry */
    KS_TIMER_BROKER_ISR_CHECK = 204,     /* leader: isr-expiration task */
    KS_TIMER_BROKER_HW_CHECKPOINT = 205,
    KS_TIMER_BROKER_RECOVERY_CHECKPOINT = 206,
    KS_TIMER_BROKER_PRODUCE_TIMEOUT = 207,
    KS_TIMER_BROKER_RESPOND = 208,   /* a response deferred to the disk's idle time */
    KS_TIMER_BROKER_LOG_TASKS = 209, /* retention, compaction, flush.ms */
    KS_TIMER_BROKER_ALTER_PARTITION_RETRY = 210,
    KS_TIMER_BROKER_HEARTBEAT_TIMEOUT = 211,  /* a registration or heartbeat unanswered */
    KS_TIMER_BROKER_SHUTDOWN_TIMEOUT = 212,   /* controlled shutdown: stop without the answer */
    KS_TIMER_BROKER_SHUTDOWN_RETRY = 213,     /* zookeeper: next ControlledShutdown attempt */
    KS_TIMER_BROKER_TXN_VERIFY_TIMEOUT = 214, /* KIP-890: a verification unanswered */
    KS_TIMER_BROKER_TXN_ADD_RETRY = 215,      /* KIP-890 part 2: an implicit add again */
    KS_TIMER_CONTROLLER_SESSION_CHECK = 220,
    KS_TIMER_CONTROLLER_REBALANCE = 221,
    KS_TIMER_CONTROLLER_START = 222,
    KS_TIMER_ZK_SESSION_CHECK = 230, /* ZooKeeper: expire sessions without pings */
    KS_TIMER_RAFT_ROLE = 240,        /* election, fetch or check-quorum timeout, backoff */
    KS_TIMER_RAFT_SEND = 241,        /* follower: next fetch; leader: BeginQuorumEpoch resend */
    KS_TIMER_RAFT_FETCH_WAIT = 242,  /* leader: a parked fetch's long poll ends */
};

/* ListOffsets special timestamps (Kafka's). */
#define KS_LIST_OFFSETS_LATEST   INT64_C(-1)
#define KS_LIST_OFFSETS_EARLIEST INT64_C(-2)

/* replica_id of a FetchRequest sent by a consumer (served up to the HW). */
#define KS_FETCH_CONSUMER_REPLICA_ID (-1)

/* ---- Metadata ------------------------------------------------------------ */

/* Asks any broker for the partitions of one topic, from its metadata cache. */
struct ks_metadata_request {
    int64_t correlation_id;
    int32_t topic_index; /* index in the spec's topics; topic_count = __consumer_offsets */
    int32_t reserved;
};

struct ks_metadata_partition {
    int32_t partition;
    int32_t leader; /* broker id, -1 if none */
    int32_t leader_epoch;
    int16_t error_code; /* NONE, or LEADER_NOT_AVAILABLE when leader == -1 */
    int16_t reserved;
};

struct ks_metadata_response {
    int64_t correlation_id;
    int32_t topic_index;
    int16_t error_code; /* UNKNOWN_TOPIC_OR_PARTITION for a bad index */
    int16_t reserved;
    int32_t answering_broker; /* id of the broker that answered */
    int32_t broker_count;     /* brokers 1..broker_count */
    /* The answering broker's view: broker_alive[id - 1] = 1 when the
     * controller last told it that broker `id` is registered and unfenced. */
    uint8_t broker_alive[KS_BROKER_COUNT_MAX];
    int32_t partition_count; /* entries that follow */
    int32_t reserved2;
    /* followed by partition_count * struct ks_metadata_partition */
};

/* ---- InitProducerId ----------------------------------------------------- */

struct ks_init_producer_id_request {
    int64_t correlation_id;
};

struct ks_init_producer_id_response {
    int64_t correlation_id;
    int64_t producer_id; /* broker_id * 1000000 + counter */
    int16_t producer_epoch;
    int16_t error_code;
    int32_t reserved;
};

/* ---- Produce ------------------------------------------------------------- */

/* One batch for one partition. A request of one partition is this message
 * alone; a request of several (the producer drains at most one batch per
 * partition into a request to their leader) is a PRODUCE_REQUESTS bundle of
 * these, one network message, which the leader appends whole before any
 * follower's parked fetch is released (ReplicaManager.appendRecords, then
 * its action queue). Each batch keeps its own correlation id; a bundle is
 * answered once, by a PRODUCE_RESPONSES of every batch's answer, when the
 * last is done (KafkaApis.handleProduceRequest's one response per request;
 * acks=0: none), a lone batch by a PRODUCE_RESPONSE. */
struct ks_produce_request {
    int64_t correlation_id;
    int64_t timeout_ns; /* request.timeout.ms: how long acks=all may wait */
    int32_t topic_index;
    int32_t partition;
    int16_t acks;         /* 0, 1, -1 (enum ks_acks) */
    int16_t flags;        /* KS_PRODUCE_FLAG_* */
    uint32_t batch_bytes; /* bytes of the record batch that follow */
    /* followed by batch_bytes: one record batch v2 built with core/batch.h,
     * carrying producer id / epoch / base sequence for idempotence; then,
     * with KS_PRODUCE_FLAG_TRANSACTIONAL_ID, KS_TRANSACTIONAL_ID_BYTES of
     * the producer's transactional.id (NUL-padded) */
};

/* PRODUCE_REQUESTS: the batches of one Produce request to one leader. */
struct ks_produce_bundle {
    uint32_t count; /* entries, at least 2 */
    uint32_t reserved;
};

struct ks_produce_bundle_entry {
    uint32_t bytes; /* of the PRODUCE_REQUEST message that follows */
    uint32_t reserved;
};

/* The bytes an entry of `message_bytes` takes in a bundle, its header and
 * padding included. */
static inline size_t ks_proto_bundle_entry_bytes(size_t message_bytes)
{
    return sizeof(struct ks_produce_bundle_entry) + ((message_bytes + 7) & ~(size_t)7);
}

/* Walks a PRODUCE_REQUESTS bundle: *at starts at 0; each call sets *entry
 * and *entry_bytes to the next PRODUCE_REQUEST message and returns true, or
 * returns false after the last. Asserts the layout (ksim's own producers
 * build it). */
bool ks_proto_bundle_next(const uint8_t *message, size_t message_bytes, size_t *at,
                          const uint8_t **entry, size_t *entry_bytes);

/* ProduceRequest.transactionalId is set: a transactional producer's request
 * (the leader verifies its batches with the coordinator, KIP-890). The flag
 * is set only then, so a non-transactional request keeps its bytes. */
#define KS_PRODUCE_FLAG_TRANSACTIONAL_ID 1

struct ks_produce_response {
    int64_t correlation_id;
    int32_t topic_index;
    int32_t partition;
    int64_t base_offset; /* -1 on error */
    int64_t log_start_offset;
    int16_t error_code;
    int16_t reserved;
    int32_t leader_epoch; /* the answering leader's epoch; -1 if it is not the leader */
    /* KIP-951 CurrentLeader: with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH,
     * the leader and epoch the answering broker's metadata names; -1 unknown. */
    int32_t current_leader_id;
    int32_t current_leader_epoch;
};

/* ---- Fetch ---------------------------------------------------------------- */

struct ks_fetch_request {
    int64_t correlation_id;
    int64_t replica_epoch; /* KIP-903 ReplicaState.ReplicaEpoch: the follower's broker epoch; -1 */
    int32_t replica_id;    /* follower broker id, or -1 for a consumer */
    int32_t min_bytes;
    int64_t max_wait_ns; /* long poll: replica.fetch.wait.max.ms / fetch.max.wait.ms */
    int32_t max_bytes;   /* whole response */
    int32_t partition_count;
    /* KIP-227 fetch sessions, used only when `session` is 1 (followers;
     * consumers leave the zeroes and fetch sessionless, FetchMetadata
     * LEGACY). session_epoch 0 is a full request that creates a session
     * (and closes session_id if not 0); above 0 an incremental one: the
     * partitions listed are those added or changed since the last request,
     * and forgotten_count entries name those removed. */
    int32_t session_id;
    int32_t session_epoch;
    int32_t forgotten_count;
    uint8_t session;
    /* isolation.level (KIP-98): 0 read_uncommitted (served up to the HW),
     * 1 read_committed (up to the LSO; each partition's answer then carries
     * struct ks_fetch_txn_trailer after its records). Consumers only. */
    uint8_t isolation_level;
    uint8_t reserved[2];
    /* followed by partition_count * struct ks_fetch_request_partition, then
     * forgotten_count * struct ks_fetch_forgotten */
};

struct ks_fetch_forgotten {
    int32_t topic_index;
    int32_t partition;
};

struct ks_fetch_request_partition {
    int32_t topic_index;
    int32_t partition;
    int64_t fetch_offset;         /* follower: its LEO */
    int64_t log_start_offset;     /* follower's; -1 for consumers */
    int32_t current_leader_epoch; /* -1: do not check */
    int32_t last_fetched_epoch; /* KIP-320 / IBP 2.7: epoch of the batch before fetch_offset; -1 */
    int32_t partition_max_bytes;
    int32_t reserved;
};

struct ks_fetch_response {
    int64_t correlation_id;
    int16_t error_code; /* request-level: the KIP-227 session errors */
    int16_t reserved;
    int32_t partition_count;
    int32_t session_id; /* KIP-227: the session this request used or created; 0 none */
    int32_t reserved2;
    /* followed, partition_count times, by struct ks_fetch_response_partition
     * and its records_bytes of record batches (whole batches, offsets set) */
};

struct ks_fetch_response_partition {
    int32_t topic_index;
    int32_t partition;
    int64_t hw; /* HighWatermark */
    int64_t log_start_offset;
    int64_t leader_leo; /* ksim extra, for observers; not used for decisions */
    /* Diverging epoch (KIP-320 fetch path): when `diverging` is 1 the
     * follower's log diverges from the leader's; no records come with it.
     * The follower truncates to min(diverging_end_offset, its own end offset
     * for diverging_epoch) and fetches again; when it knows no epoch that
     * old, to min(diverging_end_offset, its LEO) (AbstractFetcherThread
     * getOffsetTruncationState). diverging_end_offset is never -1 here. */
    int32_t diverging_epoch;
    int32_t leader_epoch; /* the leader's current epoch */
    int64_t diverging_end_offset;
    int16_t error_code;
    int16_t diverging;
    uint32_t records_bytes;
    /* KIP-951 CurrentLeader: with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH
     * (and client.leader.discovery), the leader and epoch the answering
     * broker's metadata names; -1 unknown. */
    int32_t current_leader_id;
    int32_t current_leader_epoch;
};

#define KS_ISOLATION_READ_UNCOMMITTED 0
#define KS_ISOLATION_READ_COMMITTED   1

/* After each partition's records, in the answer to a read_committed request
 * only (so a read_uncommitted exchange keeps its bytes): the partition's
 * LastStableOffset and its AbortedTransactions, aborted_count times struct
 * ks_fetch_aborted, oldest first (UnifiedLog.collectAbortedTransactions). */
struct ks_fetch_txn_trailer {
    int64_t last_stable_offset; /* -1 with an error */
    int32_t aborted_count;
    int32_t reserved;
};

struct ks_fetch_aborted {
    int64_t producer_id;
    int64_t first_offset;
};

/* ---- ApiVersions ---------------------------------------------------------- */

/* NetworkClient sends ApiVersions first on every new connection and uses the
 * connection only once it is answered; ksim's producer lets this one round
 * trip stand for the TCP handshake as well (its connection model). Any broker
 * answers at once. */
struct ks_api_versions_request {
    int64_t correlation_id;
};

struct ks_api_versions_response {
    int64_t correlation_id;
    int16_t error_code;
    int16_t reserved;
    int32_t reserved2;
};

/* ---- ListOffsets (one partition per request) ---------------------------- */

struct ks_list_offsets_request {
    int64_t correlation_id;
    int32_t topic_index;
    int32_t partition;
    int64_t timestamp;            /* LATEST (-1), EARLIEST (-2), or ms since Unix epoch */
    int32_t current_leader_epoch; /* -1: do not check */
    int32_t reserved;
};

struct ks_list_offsets_response {
    int64_t correlation_id;
    int32_t topic_index;
    int32_t partition;
    int64_t offset; /* latest = HW (read_uncommitted), earliest = log start */
    int32_t leader_epoch;
    int16_t error_code;
    int16_t reserved;
};

/* ---- OffsetsForLeaderEpoch (one partition per request) -------------------- */

/* A consumer validating its position after a leader change (KIP-320,
 * OffsetsForLeaderEpochClient): the end offset of leader_epoch in the
 * leader's log (Partition.lastOffsetForLeaderEpoch). Followers use the
 * diverging-epoch field of their fetches instead (KIP-320 fetch path). */
struct ks_offset_for_leader_epoch_request {
    int64_t correlation_id;
    int32_t topic_index;
    int32_t partition;
    int32_t current_leader_epoch; /* the client's view of the leader's epoch; -1: do not check */
    int32_t leader_epoch;         /* the epoch of the record before the position */
};

struct ks_offset_for_leader_epoch_response {
    int64_t correlation_id;
    int32_t topic_index;
    int32_t partition;
    int64_t end_offset;   /* -1 (UNDEFINED_EPOCH_OFFSET): no epoch that old is known */
    int32_t leader_epoch; /* the largest epoch <= the requested one; -1 undefined */
    int16_t error_code;
    int16_t reserved;
};

/* ---- broker <-> controller ----------------------------------------------- */

/* BrokerRegistration and BrokerHeartbeat in one message kind: while the
 * broker is not registered (after a restart) it is a registration, refused
 * with DUPLICATE_BROKER_REGISTRATION while the previous incarnation's session
 * is valid (KRaft rules); afterwards a heartbeat. One is in flight at a time
 * (BrokerLifecycleManager, core/broker.c says when the next one leaves).
 * metadata_version is the highest controller metadata version the broker
 * has applied; the controller answers and then pushes every partition state
 * that changed after that version, so a broker whose heartbeats get through
 * always converges. */
struct ks_broker_heartbeat_request {
    int32_t broker_id;
    uint8_t want_fence;    /* BrokerHeartbeatRequest.WantFence: not ready to be unfenced yet */
    uint8_t want_shutdown; /* 1: controlled shutdown (BrokerHeartbeat's WantShutDown) */
    int16_t reserved;
    int64_t broker_epoch;     /* incarnation: bumps on each restart */
    int64_t metadata_version; /* applied so far; -1 after a restart */
    int64_t correlation_id;   /* echoed, so that a late answer is not taken for the current one */
};

struct ks_broker_heartbeat_response {
    int64_t broker_epoch;     /* echoed */
    int64_t correlation_id;   /* echoed */
    int64_t metadata_version; /* controller's current version */
    int16_t error_code;
    uint8_t fenced;           /* 1 while the controller considers the broker fenced */
    uint8_t caught_up;        /* IsCaughtUp: metadata_version reached its registration's */
    uint8_t should_shut_down; /* 1: controlled shutdown granted (ShouldShutDown) */
    uint8_t reserved;
    int32_t controller_hint; /* NOT_CONTROLLER: the active controller's node, 0 if unknown */
};

/* Leader -> controller: set the ISR (one request in flight per partition).
 * AlterPartition v3 (KIP-903): each ISR member comes with the broker epoch
 * the leader saw in its fetches (its own for itself), -1 to skip the check
 * (not fetched yet, or the ZooKeeper era, which had no broker epochs). */
struct ks_alter_partition_request {
    int32_t broker_id;
    int32_t topic_index;
    int32_t partition;
    int32_t leader_epoch;
    int32_t partition_epoch; /* the version the leader bases its change on */
    int32_t isr_count;
    int32_t isr[KS_REPLICATION_FACTOR_MAX];
    int64_t isr_broker_epochs[KS_REPLICATION_FACTOR_MAX];
    int64_t broker_epoch;
};

/* The answer (ReplicationControlManager.alterPartition): STALE_BROKER_EPOCH
 * (the sender's incarnation), UNKNOWN_TOPIC_OR_PARTITION, NOT_CONTROLLER
 * (epochs newer than the controller's), FENCED_LEADER_EPOCH,
 * INVALID_REQUEST (not the leader, or an ISR that is not a subset of the
 * replicas holding the leader), INVALID_UPDATE_VERSION (stale partition
 * epoch), INELIGIBLE_REPLICA (a member fenced, unregistered or of another
 * broker epoch), else NONE with the partition's state. */
struct ks_alter_partition_response {
    int32_t topic_index;
    int32_t partition;
    int16_t error_code;
    int16_t reserved;
    int32_t leader;
    int32_t leader_epoch;
    int32_t partition_epoch;
    int32_t isr_count;
    int32_t isr[KS_REPLICATION_FACTOR_MAX];
};

/* Controller -> broker: the state of some partitions (KRaft's metadata log
 * records, LeaderAndIsr of the ZooKeeper era). Brokers apply an entry when
 * its partition_epoch is newer than what they hold. */
struct ks_partition_state {
    int32_t topic_index;
    int32_t partition;
    int32_t leader; /* -1: none */
    int32_t leader_epoch;
    int32_t partition_epoch; /* bumps on every leader or ISR change */
    int32_t replica_count;
    int32_t replicas[KS_REPLICATION_FACTOR_MAX]; /* assignment order, preferred first */
    int32_t isr_count;
    int32_t isr[KS_REPLICATION_FACTOR_MAX];
};

struct ks_partition_state_push {
    int64_t broker_epoch;     /* the incarnation it is meant for; others ignore it */
    int64_t metadata_version; /* controller version these entries bring the broker to */
    int32_t partition_count;
    int32_t broker_count;
    uint8_t broker_alive[KS_BROKER_COUNT_MAX]; /* registered and unfenced */
    /* The registered incarnation of each broker (KRaftMetadataCache's broker
     * epochs, which a leader compares with a follower's fetches); -1 none. */
    int64_t broker_epochs[KS_BROKER_COUNT_MAX];
    /* followed by partition_count * struct ks_partition_state */
};

/* ---- controller = zookeeper ------------------------------------------------ */

/* ZooKeeper operations ksim's brokers use (KafkaZkClient's calls reduced to
 * the znodes Kafka's controller and brokers touch, see core/zk.c). */
enum ks_zk_op {
    KS_ZK_OP_CONNECT = 1,         /* open a session (the znodes' owner) */
    KS_ZK_OP_PING = 2,            /* keep the session alive */
    KS_ZK_OP_REGISTER = 3,        /* create ephemeral /brokers/ids/N */
    KS_ZK_OP_ELECT = 4,           /* create ephemeral /controller, bump /controller_epoch */
    KS_ZK_OP_READ_STATE = 5,      /* the controller reads brokers and partition states */
    KS_ZK_OP_WRITE_PARTITION = 6, /* conditional set of .../partitions/P/state */
    KS_ZK_OP_CLOSE = 7,           /* a clean shutdown closes the session */
};

/* ZooKeeper's own result codes (KeeperException.Code). */
enum ks_zk_error {
    KS_ZK_OK = 0,
    KS_ZK_BAD_VERSION = -103,
    KS_ZK_NODE_EXISTS = -110,
    KS_ZK_SESSION_EXPIRED = -112,
};

/* Watches ZooKeeper fires (one notification message each). */
enum ks_zk_watch {
    KS_ZK_WATCH_CONTROLLER = 1, /* /controller was deleted */
    KS_ZK_WATCH_BROKERS = 2,    /* the children of /brokers/ids changed */
    KS_ZK_WATCH_ISR = 3,        /* a leader changed a partition's ISR (isr_change_notification) */
};

struct ks_zk_request {
    int32_t op; /* enum ks_zk_op */
    int32_t broker_id;
    int64_t session_id;              /* 0 for CONNECT */
    int64_t broker_epoch;            /* CONNECT: the incarnation, kept as /brokers/ids/N's data */
    int32_t controller_epoch;        /* WRITE_PARTITION: the writer's (stored in the znode) */
    int32_t expected_version;        /* WRITE_PARTITION: the zkVersion the write is based on */
    struct ks_partition_state state; /* WRITE_PARTITION: leader, leader epoch, ISR */
};

/* Answers and watch notifications. state.partition_epoch is the znode's
 * zkVersion. live[] and broker_epochs[] are /brokers/ids (READ_STATE and the
 * BROKERS watch). */
struct ks_zk_response {
    int32_t op;    /* enum ks_zk_op, or enum ks_zk_watch for ZK_WATCH */
    int32_t error; /* enum ks_zk_error */
    int64_t session_id;
    int32_t controller_id; /* ELECT: the controller, winner or not */
    int32_t controller_epoch;
    int32_t broker_count;
    int32_t partition_count; /* READ_STATE: entries that follow */
    uint8_t live[KS_BROKER_COUNT_MAX];
    int64_t broker_epochs[KS_BROKER_COUNT_MAX];
    struct ks_partition_state state; /* WRITE_PARTITION and the ISR watch */
};

/* LeaderAndIsr (leaders and ISRs, with partitions) and UpdateMetadata (live
 * brokers, no partitions) of the ZooKeeper-era controller, followed by a
 * struct ks_partition_state_push and its entries. */
struct ks_leader_and_isr {
    int32_t controller_id;
    int32_t controller_epoch;
};

/* ControlledShutdown (Kafka 2.x, ZooKeeper era; KafkaServer.controlledShutdown
 * to KafkaController.doControlledShutdown). remaining is the number of
 * partitions the broker still leads: 0 lets it stop. */
struct ks_controlled_shutdown_request {
    int32_t broker_id;
    int32_t pad;
    int64_t broker_epoch;
    int64_t correlation_id;
};

struct ks_controlled_shutdown_response {
    int16_t error_code;
    int16_t pad;
    int32_t remaining;
    int64_t correlation_id;
};

/* ---- checked access to variable-length messages ------------------------- */

/* True when a message of message_bytes can hold `header` plus count entries
 * of entry_bytes each. */
static inline bool ks_proto_fits(size_t message_bytes, size_t header_bytes, int64_t count,
                                 size_t entry_bytes)
{
    if (count < 0 || message_bytes < header_bytes) {
        return false;
    }
    return (uint64_t)count <= (message_bytes - header_bytes) / (entry_bytes ? entry_bytes : 1);
}

/* ---- the per-broker arrays on the wire (core/proto.c) ---- */

#define KS_PROTO_BROKER_SLOTS_MIN 64 /* the fixed array size up to ksim 2026's limit */

_Static_assert(KS_BROKER_COUNT_MAX % 8 == 0 && KS_BROKER_COUNT_MAX >= KS_PROTO_BROKER_SLOTS_MIN,
               "the wire's broker slots come in eights");

/* Entries a message about broker_count brokers carries per broker array. */
static inline int32_t ks_proto_broker_slots(int32_t broker_count)
{
    int32_t n = broker_count > KS_PROTO_BROKER_SLOTS_MIN ? broker_count : KS_PROTO_BROKER_SLOTS_MIN;
    return (n + 7) / 8 * 8;
}

/* Each _bytes function gives the wire size of the fixed part (what the
 * entries follow); _encode writes that many bytes of `in` to `out` (zeroed
 * memory); _decode checks that `bytes` holds the fixed part (B3), fills all
 * of *out (entries past the slots zero) and returns the fixed part's size. */
size_t ks_proto_push_bytes(int32_t broker_count);
void ks_proto_push_encode(const struct ks_partition_state_push *in, uint8_t *out);
size_t ks_proto_push_decode(const uint8_t *message, size_t bytes,
                            struct ks_partition_state_push *out);
size_t ks_proto_metadata_bytes(int32_t broker_count);
void ks_proto_metadata_encode(const struct ks_metadata_response *in, uint8_t *out);
size_t ks_proto_metadata_decode(const uint8_t *message, size_t bytes,
                                struct ks_metadata_response *out);
size_t ks_proto_zk_bytes(int32_t broker_count);
void ks_proto_zk_encode(const struct ks_zk_response *in, uint8_t *out);
size_t ks_proto_zk_decode(const uint8_t *message, size_t bytes, struct ks_zk_response *out);

/* ---- KRaft quorum (core/raft.c; Kafka's Vote, BeginQuorumEpoch, Fetch) ---- */

/* Node ids are the voters' ks_node_id; -1 for none. Every message carries the
 * sender's epoch; a receiver that sees a higher one moves to it first. */
struct ks_raft_vote_request {
    int32_t candidate_epoch;
    int32_t candidate_id;
    int32_t last_offset_epoch; /* epoch of the candidate's last record, -1 if empty */
    int32_t reserved;
    int64_t last_offset; /* the candidate's log end offset */
};

struct ks_raft_vote_response {
    int32_t leader_epoch; /* the voter's epoch */
    int32_t leader_id;    /* the leader the voter knows, -1 */
    int16_t error_code;   /* NONE or FENCED_LEADER_EPOCH */
    int16_t vote_granted; /* 0 or 1 */
    int32_t reserved;
};

struct ks_raft_begin_epoch {
    int32_t leader_epoch;
    int32_t leader_id;
    int16_t error_code; /* response: NONE or FENCED_LEADER_EPOCH */
    int16_t reserved16;
    int32_t reserved;
};

struct ks_raft_fetch_request {
    int64_t fetch_id; /* the follower's counter: a late answer to an older fetch is dropped */
    int64_t fetch_offset;
    int32_t current_leader_epoch;
    int32_t last_fetched_epoch; /* epoch of the record before fetch_offset, -1 */
    int32_t replica_id;
    int32_t reserved;
};

struct ks_raft_fetch_response {
    int64_t fetch_id;
    int64_t high_watermark;
    int64_t diverging_end_offset; /* -1, or: truncate to this (DivergingEpoch.EndOffset) */
    int32_t diverging_epoch;      /* -1 */
    int32_t leader_epoch;         /* CurrentLeader: the responder's epoch and leader */
    int32_t leader_id;
    int16_t
        error_code; /* NONE, FENCED_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH */
    int16_t reserved16;
    uint32_t batch_bytes; /* record batches follow */
    int32_t reserved;
};

/* ---- transactions (KIP-98): client <-> transaction coordinator ----------- */

enum ks_txn_msg_kind {
    KS_MSG_TXN_FIND_COORDINATOR_REQUEST = 400, /* any broker answers from its metadata */
    KS_MSG_TXN_FIND_COORDINATOR_RESPONSE = 401,
    KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST = 402, /* to the coordinator */
    KS_MSG_TXN_INIT_PRODUCER_ID_RESPONSE = 403,
    KS_MSG_TXN_ADD_PARTITIONS_REQUEST = 404,
    KS_MSG_TXN_ADD_PARTITIONS_RESPONSE = 405,
    KS_MSG_TXN_END_REQUEST = 406,
    KS_MSG_TXN_END_RESPONSE = 407,
    KS_MSG_TXN_WRITE_MARKERS_REQUEST = 408, /* coordinator -> partition leader */
    KS_MSG_TXN_WRITE_MARKERS_RESPONSE = 409,
    KS_MSG_TXN_ADD_OFFSETS_REQUEST = 410, /* struct ks_txn_add_offsets_request */
    KS_MSG_TXN_ADD_OFFSETS_RESPONSE = 411,
    /* KIP-890 part 1: AddPartitionsToTxn with verifyOnly = true, partition
     * leader -> coordinator (AddPartitionsToTxnManager.verifyTransaction),
     * a struct ks_txn_request for one partition; answered with a struct
     * ks_txn_response whose error_code is the partition's. With
     * add_partition set (transaction.version 2), verifyOnly = false: the
     * coordinator adds the partition, and answers once that is written. */
    KS_MSG_TXN_VERIFY_REQUEST = 412,
    KS_MSG_TXN_VERIFY_RESPONSE = 413,
};

#define KS_TRANSACTIONAL_ID_BYTES 64 /* as struct ks_producer_config transactional_id */

/* FindCoordinator(key_type = TRANSACTION) and InitProducerId with a
 * transactional id; the other three requests carry the producer's id and
 * epoch, which the coordinator checks (PRODUCER_FENCED when older). */
struct ks_txn_request {
    int64_t correlation_id;
    int64_t producer_id;
    int64_t timeout_ns; /* InitProducerId: transaction.timeout.ms */
    int16_t producer_epoch;
    int16_t commit;      /* EndTxn: 1 commit, 0 abort */
    int32_t topic_index; /* AddPartitionsToTxn: one partition per request */
    int32_t partition;
    /* KS_MSG_TXN_VERIFY_REQUEST: 0 verifyOnly (KIP-890 part 1); 1 add the
     * partition to the transaction (transaction.version 2, KIP-890 part 2:
     * AddPartitionsToTxnManager's addPartition operation). */
    int32_t add_partition;
    char transactional_id[KS_TRANSACTIONAL_ID_BYTES];
};

/* AddOffsetsToTxn (sendOffsetsToTransaction's first request): the
 * coordinator adds the group's __consumer_offsets partition to the
 * transaction, as AddPartitionsToTxn adds one; answered with struct
 * ks_txn_response. */
struct ks_txn_add_offsets_request {
    struct ks_txn_request txn; /* topic_index and partition unused */
    char group_id[256];        /* KS_GROUP_ID_BYTES of core/group_proto.h */
};

struct ks_txn_response {
    int64_t correlation_id;
    int64_t producer_id;    /* InitProducerId */
    int32_t coordinator_id; /* FindCoordinator: broker id, -1 none */
    int16_t producer_epoch;
    int16_t error_code;
};

/* WriteTxnMarkers for one partition (Kafka's request carries many). */
struct ks_txn_markers_request {
    int64_t correlation_id;
    int64_t producer_id;
    int32_t topic_index;
    int32_t partition;
    int32_t coordinator_epoch;
    int16_t producer_epoch;
    int16_t commit;
};

struct ks_txn_markers_response {
    int64_t correlation_id;
    int32_t topic_index;
    int32_t partition;
    int16_t error_code;
    int16_t reserved16;
    int32_t reserved;
};
