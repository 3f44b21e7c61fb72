/*
** core/cluster.h: the Kafka cluster model as the driver (sim/) sees it:
** brokers, the controller, producers and consumers on one world, built from
** frozen configs, observed through callbacks, steered by fault hooks.
**
** Node ids (the world's nodes) are fixed by the spec:
**   0                      the driver (sim/)
**   1 .. B                 broker ids 1..B (node id == broker id)
**   B+1 .. B+K             the controllers: K = controllers (1, 3 or 5; with 1 a crash
**                          of it is an outage, with 3 or 5 they are a KRaft quorum,
**                          controller(N) is node B+N), or with controller = zookeeper
**                          K = 1, the ZooKeeper node (the controller is a broker)
**   B+K+1 .. B+K+P         producers, in spec order
**   B+K+P+1 .. B+K+P+C     consumers, in spec order
**
** Topics are addressed by index in the spec's topic array; the internal topic
** __consumer_offsets, when any consumer exists, gets index topic_count (the
** last one), so ks_cluster_topic_count() may be one more than the spec's.
*/
#pragma once

#include "base.h"
#include "config.h"
#include "log.h"
#include "world.h"

struct ks_cluster;

struct ks_cluster_spec {
    const struct ks_cluster_config *cluster;
    const struct ks_topic_config *topics; /* borrowed; must outlive the cluster */
    int32_t topic_count;
    const struct ks_producer_config *producers;
    int32_t producer_count;
    const struct ks_consumer_config *consumers;
    int32_t consumer_count;
    /* Several clusters: the names identity headers resolve against (every
     * producer of the run, so that a record mirrored from another cluster
     * keeps its producer); consumed records then carry indexes into this
     * array. NULL: producers. */
    const struct ks_producer_config *identity_producers;
    int32_t identity_producer_count;
};

/* ---- what the cluster reports ------------------------------------------ */

enum ks_cluster_event_kind {
    KS_EV_TOPIC_CREATED,
    KS_EV_LEADER_ELECTED,   /* a leader change after creation (counted in leader_elections) */
    KS_EV_UNCLEAN_ELECTION, /* also a leader election, of a replica outside the ISR */
    KS_EV_NO_LEADER,        /* a partition lost its leader and none could be elected */
    KS_EV_ISR_SHRINK,
    KS_EV_ISR_EXPAND,
    KS_EV_TRUNCATION,    /* a follower dropped offsets */
    KS_EV_RECOVERY,      /* log recovery after an unclean shutdown */
    KS_EV_BROKER_FENCED, /* session expired */
    KS_EV_BROKER_UNFENCED,
    KS_EV_BROKER_STARTED,
    KS_EV_PRODUCE_REFUSED, /* NOT_ENOUGH_REPLICAS and friends */
    KS_EV_PRODUCER_ERROR,  /* a client-side timeout, a failed record */
    KS_EV_REBALANCE,       /* a consumer group's new generation */
    KS_EV_OFFSET_COMMIT,
    KS_EV_OFFSET_RESET, /* a consumer fell back to auto.offset.reset */
    KS_EV_RETENTION,    /* segments deleted */
    KS_EV_COMPACTION,
    KS_EV_INFO,       /* anything else worth a timeline line */
    KS_EV_ELR_CHANGE, /* KIP-966: a partition's ELR changed, its ISR and leader did not */
    /* controller = zookeeper */
    KS_EV_ZK_SESSION_EXPIRED,  /* ZooKeeper expired a broker's session: its ephemerals go */
    KS_EV_CONTROLLER_ELECTED,  /* a broker created /controller: the new controller epoch;
                                  controllers = 3|5: a KRaft voter became active (broker -1) */
    KS_EV_CONTROLLER_RESIGNED, /* a controller learned that its session expired */
    KS_EV_STALE_CONTROLLER,    /* a broker refused a request of an older controller epoch */
    KS_EV_BROKER_STOPPED,      /* a clean shutdown finished: logs flushed, marker written */
    KS_EV_TXN_END,             /* a transactional producer's transaction ended (its view) */
    KS_EV_TXN_STATE,           /* a transaction coordinator's state change or load */
    KS_EV_KIND_COUNT
};

const char *ks_cluster_event_kind_name(enum ks_cluster_event_kind kind); /* "leader_elected" */

/* Why an event happened, for every kind in one enum (one column can hold
 * it); KS_REASON_NONE when the kind says it all. */
enum ks_event_reason {
    KS_REASON_NONE,
    /* elections and fencing */
    KS_REASON_SESSION_EXPIRED,  /* no heartbeat within broker.session.timeout.ms */
    KS_REASON_BROKER_RESTARTED, /* a new incarnation registers, fenced */
    KS_REASON_REPLICA_BACK,     /* an unfenced replica lets an offline partition elect */
    KS_REASON_PREFERRED_LEADER, /* auto.leader.rebalance.enable */
    /* ISR changes */
    KS_REASON_FOLLOWER_CAUGHT_UP, /* the leader's AlterPartition adds a follower */
    KS_REASON_FOLLOWER_LAGGING,   /* the leader's AlterPartition drops followers */
    KS_REASON_BROKER_FENCED,      /* the controller drops a fenced broker */
    KS_REASON_UNCLEAN_SHUTDOWN,   /* KIP-966: a new incarnation leaves every ISR and ELR */
    /* truncation */
    KS_REASON_TRUNCATE_TO_HIGH_WATERMARK, /* replication.truncation = high-watermark */
    KS_REASON_TRUNCATE_DIVERGING_EPOCH,   /* KIP-101/KIP-279: to the end of the shared epoch */
    KS_REASON_TRUNCATE_NO_COMMON_EPOCH,   /* a diverging epoch the follower does not share */
    KS_REASON_TRUNCATE_TO_LEADER_LEO,     /* OFFSET_OUT_OF_RANGE, the leader's log is shorter */
    KS_REASON_TRUNCATE_REALIGN_BATCH,     /* the LEO was inside one of the leader's batches */
    /* refused produce */
    KS_REASON_NOT_ENOUGH_REPLICAS, /* acks=all with the ISR below min ISR */
    KS_REASON_TXN_NOT_VERIFIED,    /* KIP-890: the coordinator did not confirm the partition */
    /* producer errors (error_code holds the Kafka error where there is one) */
    KS_REASON_RETRIES_EXHAUSTED,            /* a retriable error, retries ran out */
    KS_REASON_ERROR_AFTER_DELIVERY_TIMEOUT, /* a retriable error after delivery.timeout.ms */
    KS_REASON_ERROR_NOT_RETRIABLE,
    KS_REASON_DELIVERY_TIMEOUT,           /* delivery.timeout.ms passed in the accumulator */
    KS_REASON_DELIVERY_TIMEOUT_IN_FLIGHT, /* ... while the request was in flight */
    KS_REASON_BUFFER_FULL_MAX_BLOCK,      /* send() blocked max.block.ms on buffer.memory */
    KS_REASON_NO_METADATA_MAX_BLOCK,      /* send() blocked max.block.ms on metadata */
    KS_REASON_PRODUCER_CRASHED,           /* records lost with the producer process */
    KS_REASON_RECORD_TOO_LARGE,         /* send() refused: over max.request.size or buffer.memory */
    KS_REASON_CONNECTION_BROKER_DOWN,   /* a connection closed: the broker is down */
    KS_REASON_CONNECTION_TIMEOUT,       /* ... no answer within request.timeout.ms */
    KS_REASON_CONNECTION_SETUP_TIMEOUT, /* ... not set up in socket.connection.setup.timeout */
    KS_REASON_CONNECTION_REFUSED,       /* ... a connect to a broker that is down */
    /* what started a rebalance round (struct ks_event_cause) */
    KS_REASON_MEMBER_JOINED,
    KS_REASON_MEMBER_SESSION_TIMEOUT,
    KS_REASON_MEMBER_NOT_REJOINED, /* did not rejoin within the rebalance timeout */
    KS_REASON_MEMBER_LEFT,
    KS_REASON_GROUP_APPEND_FAILED, /* the group metadata append failed */
    /* consumer positions */
    KS_REASON_NO_COMMITTED_OFFSET,      /* auto.offset.reset applied (position) */
    KS_REASON_OFFSET_OUT_OF_RANGE,      /* auto.offset.reset applied to a refused position */
    KS_REASON_REWIND,                   /* scenario action rewind (a seek) */
    KS_REASON_NO_COMMITTED_OFFSET_NONE, /* auto.offset.reset=none: the partition stays unread */
    KS_REASON_OFFSET_OUT_OF_RANGE_NONE,
    /* other facts (KS_EV_INFO) */
    KS_REASON_REGISTRATION_REFUSED,   /* DUPLICATE_BROKER_REGISTRATION */
    KS_REASON_SINK_FENCED,            /* commit = atomic: another member claimed the sink */
    KS_REASON_POLL_INTERVAL_EXCEEDED, /* max.poll.interval.ms: the member leaves */
    KS_REASON_CONTROLLER_DOWN,        /* the only controller crashed: no elections, no fencing */
    KS_REASON_CONTROLLER_BACK,        /* it returned: state from its log, fresh broker sessions */
    /* controller = zookeeper (KS_EV_INFO) */
    KS_REASON_ZK_NODE_EXISTS, /* /brokers/ids/N still owned by the old session */
    KS_REASON_ZK_BAD_VERSION, /* a leader's ISR write with a stale zkVersion */
    KS_REASON_ZK_NO_SESSION,  /* a leader's ISR write without a live session */
    KS_REASON_ZNODE_DELETED,  /* elections: the broker's /brokers/ids/N went with its session */
    /* controlled shutdown (action = stop) */
    KS_REASON_CONTROLLED_SHUTDOWN,     /* the controller moves leaders and ISRs off a broker
                                           that asked to shut down, then lets it go */
    KS_REASON_SHUTDOWN_REQUESTED,      /* the broker asks (heartbeat with WantShutDown) */
    KS_REASON_SHUTDOWN_TIMED_OUT,      /* stopped without the controller's answer */
    KS_REASON_SHUTDOWN_NOT_CONTROLLED, /* controlled.shutdown.enable = false */
    KS_REASON_INVALID_SESSION_TIMEOUT, /* JoinGroup refused: the consumer stops */
    /* KIP-320 position validation (KS_EV_OFFSET_RESET) */
    KS_REASON_LOG_TRUNCATION,      /* the log was truncated below the position: seek to its end */
    KS_REASON_LOG_TRUNCATION_NONE, /* ... with auto.offset.reset=none: the partition stays unread */
    /* how a transaction ended for its producer (KS_EV_TXN_END) */
    KS_REASON_TXN_COMMITTED, /* commitTransaction() returned */
    KS_REASON_TXN_ABORTED,   /* abortTransaction() returned */
    KS_REASON_TXN_FENCED, /* PRODUCER_FENCED / INVALID_PRODUCER_EPOCH: the coordinator aborts it */
    KS_REASON_TXN_ABANDONED, /* the producer crashed with it open: the coordinator aborts it */
    /* controller = zookeeper: every ControlledShutdown attempt failed; the broker stops anyway */
    KS_REASON_SHUTDOWN_ATTEMPTS_FAILED,
    /* the transaction coordinator (KS_EV_TXN_STATE) */
    KS_REASON_TXN_PREPARE_COMMIT,  /* PrepareCommit written: the commit is decided */
    KS_REASON_TXN_PREPARE_ABORT,   /* PrepareAbort written (by EndTxn, a fence or a timeout) */
    KS_REASON_TXN_COMPLETE_COMMIT, /* every marker written; CompleteCommit written */
    KS_REASON_TXN_COMPLETE_ABORT,
    KS_REASON_TXN_LOADED, /* a new leader of a __transaction_state partition loaded it */
    KS_REASON_COUNT
};

const char *ks_event_reason_name(enum ks_event_reason reason); /* "session_expired" */

/* Where a consumer position was looked up (KS_EV_OFFSET_RESET). */
enum ks_event_position {
    KS_POSITION_NONE,
    KS_POSITION_EARLIEST,  /* the log start offset */
    KS_POSITION_LATEST,    /* the HW */
    KS_POSITION_TIMESTAMP, /* the first record at or after a time */
    KS_POSITION_OFFSET,    /* an offset given by the application */
};

/* Where an election found its leader (PartitionChangeBuilder.electAnyLeader's
 * order, kafka-reference 9.8 and 9.9). */
enum ks_elected_from {
    KS_ELECTED_FROM_NONE,              /* no leader (NO_LEADER), or not an election */
    KS_ELECTED_FROM_ISR,               /* an unfenced ISR member: a clean election */
    KS_ELECTED_FROM_ELR,               /* KIP-966: the ISR was empty; an unfenced ELR member */
    KS_ELECTED_FROM_LAST_KNOWN_LEADER, /* KIP-966: ISR and ELR empty; the last known leader */
    KS_ELECTED_FROM_ANY_REPLICA        /* unclean.leader.election.enable: any unfenced replica */
};

enum ks_record_outcome_kind { KS_OUTCOME_ACKED, KS_OUTCOME_FAILED, KS_OUTCOME_UNKNOWN };

struct ks_event_tp {
    int32_t topic_index;
    int32_t partition;
};

struct ks_event_offset {
    int32_t topic_index;
    int32_t partition;
    int64_t offset;
};

/* One member of a new group generation and the partitions it was given. */
struct ks_event_member {
    const char *member_id;                /* borrowed */
    const struct ks_event_tp *assignment; /* borrowed, assignment_count entries */
    int32_t assignment_count;
};

/* One thing that started or extended a rebalance round, in order. */
struct ks_event_cause {
    enum ks_event_reason reason; /* KS_REASON_MEMBER_* or KS_REASON_GROUP_APPEND_FAILED */
    const char *member_id;       /* borrowed; NULL for GROUP_APPEND_FAILED */
};

/*
** One fact the model reports. core/ writes no prose: sim/narrate.c turns
** these fields (with the scenario) into the timeline line and the --explain
** text. Every field not listed for a kind keeps its ks_cluster_event_init
** value: -1 for ids, epochs and offsets, 0 for counts, NULL for pointers.
** Ranges [offset_from, offset_to) are half-open. Lists are in the
** controller's order (replicas in assignment order, the ISR as stored).
** Pointers are borrowed and valid during the callback only.
**
**   kind               broker      fields
**   TOPIC_CREATED      leader      leader_new, leader_epoch_new, replicas, isr_new
**   LEADER_ELECTED     new leader  reason (SESSION_EXPIRED, BROKER_RESTARTED,
**   UNCLEAN_ELECTION               REPLICA_BACK, PREFERRED_LEADER, UNCLEAN_SHUTDOWN,
**                                  CONTROLLED_SHUTDOWN),
**   NO_LEADER          -1          leader_old, leader_new (-1 for NO_LEADER),
**                                  leader_epoch_old, leader_epoch_new, replicas,
**                                  isr_old, isr_new (an unclean election, or one from
**                                  the ELR, sets the ISR to the new leader),
**                                  elected_from, and the KIP-966 facts below
**   ISR_SHRINK         leader or   reason (FOLLOWER_LAGGING, or BROKER_FENCED or
**   ISR_EXPAND         the fenced  CONTROLLED_SHUTDOWN with broker = the broker removed;
**                      broker      UNCLEAN_SHUTDOWN with broker = the restarted one;
**                                  FOLLOWER_CAUGHT_UP), leader_new (the partition's
**                                  leader), isr_old, isr_new (empty only with ELR),
**                                  isr_count_min, and the KIP-966 facts below
**   ELR_CHANGE         the broker  reason UNCLEAN_SHUTDOWN (broker = the restarted one
**                      removed     left the ELR), leader_new, isr_new, isr_count_min,
**                                  and the KIP-966 facts below
**   (KIP-966 facts)                elr_old, elr_new (ascending ids), last_known_leader
**                                  (LastKnownElr after the change, -1 if empty): all
**                                  empty / -1 unless eligible.leader.replicas.enable
**   TRUNCATION         follower    reason, offset (the offset asked for), leo_old,
**                                  leo_new, [offset_from, offset_to) = the offsets
**                                  dropped, hw_old, hw_new, log_start_offset,
**                                  leader_new (the leader it follows), diverging_epoch and
**                                  diverging_end_offset (the leader's answer), and
**                                  for TRUNCATE_TO_LEADER_LEO offset = the leader's LEO
**   RECOVERY           broker      offset (the recovery point it re-read from),
**                                  leo_old (the LEO the broker had when it
**                                  crashed, -1 if not known), offset_old (the LEO
**                                  its files implied at the restart: what was left
**                                  after the page cache), leo_new, [offset_from,
**                                  offset_to) = the offsets lost (against leo_old,
**                                  else offset_old), record_count, batch_count,
**                                  byte_count = what the log lost against the
**                                  crash (against the files when leo_old is -1;
**                                  a count is -1 when not known), cut_batch_count
**                                  and cut_byte_count (what recovery itself cut:
**                                  torn or invalid batches), segment_count
**                                  (segments it deleted), hw_new (from the
**                                  checkpoint, clamped)
**   BROKER_FENCED      broker      reason: SESSION_EXPIRED (removed from every ISR but
**                                  where it is the last member), BROKER_RESTARTED
**                                  (keeps its ISR memberships) or CONTROLLED_SHUTDOWN
**                                  (the controller lets it shut down: out of every ISR
**                                  but where it is the last member, leads nothing)
**   BROKER_UNFENCED    broker      -
**   BROKER_STARTED     broker      broker_epoch
**   PRODUCE_REFUSED    leader      reason NOT_ENOUGH_REPLICAS, isr_new (the ISR),
**                                  isr_count_min; or reason TXN_NOT_VERIFIED
**                                  (KIP-890: a transactional batch that would
**                                  start a transaction, refused after the
**                                  coordinator's answer), error_code (what the
**                                  producer gets), record_count
**   PRODUCER_ERROR     -1 or the   producer_index, and either (partition may be -1)
**                      broker      reason RETRIES_EXHAUSTED, ERROR_AFTER_DELIVERY_TIMEOUT,
**                                  ERROR_NOT_RETRIABLE (with error_code),
**                                  DELIVERY_TIMEOUT, DELIVERY_TIMEOUT_IN_FLIGHT,
**                                  BUFFER_FULL_MAX_BLOCK, NO_METADATA_MAX_BLOCK,
**                                  PRODUCER_CRASHED, RECORD_TOO_LARGE,
**                                  record_count, outcome, suppressed_count (records
**                                  failed since the previous line of the partition);
**                                  or reason CONNECTION_BROKER_DOWN,
**                                  CONNECTION_TIMEOUT or CONNECTION_SETUP_TIMEOUT
**                                  (a connect that failed: no batches), broker,
**                                  batch_count,
**                                  record_count (in flight, retried), idempotent
**   REBALANCE          coordinator group_id, generation, assignor, group_leader_id,
**                                  members, causes, offsets_partition
**   OFFSET_COMMIT      coordinator group_id, offsets (as committed; topic_index is the
**                                  first one's), suppressed_count (commits since the
**                                  previous commit event that had none of their own),
**                                  offsets_partition
**   OFFSET_RESET       -1          consumer_index, reason, position, offset (the new
**                                  position), offset_old (the refused position)
**   RETENTION          broker      segment_count, log_start_offset (new),
**                                  [offset_from, offset_to) = [old, new log start)
**   COMPACTION         broker      record_count (removed)
**   INFO               ...         reason REGISTRATION_REFUSED (broker);
**                                  SINK_FENCED (-1; consumer_index, sink_epoch,
**                                  sink_epoch_found); POLL_INTERVAL_EXCEEDED (-1;
**                                  consumer_index); INVALID_SESSION_TIMEOUT (-1;
**                                  consumer_index); CONTROLLER_DOWN/BACK (-1);
**                                  ZK_NODE_EXISTS (broker: its registration waits for
**                                  the old session's znode to go); ZK_BAD_VERSION and
**                                  ZK_NO_SESSION (broker = the leader; topic_index,
**                                  partition, isr_old = the ISR it holds, isr_new = the
**                                  ISR it wanted, leader_epoch_new, zk_version = the
**                                  version it wrote against, zk_version_found);
**                                  SHUTDOWN_REQUESTED (broker: it asks the controller
**                                  for a controlled shutdown)
**   ZK_SESSION_EXPIRED broker      broker_epoch; controller_id when that broker was
**                                  the controller (else -1)
**   CONTROLLER_ELECTED new         controller_epoch (the new epoch), controller_id
**                      controller  (controllers = 3|5: broker -1, controller_id N of
**                                  controller(N), controller_epoch the KRaft epoch)
**   CONTROLLER_RESIGNED the old    controller_epoch (its epoch); controllers = 3|5 as
**                      controller  CONTROLLER_ELECTED
**   STALE_CONTROLLER   refusing    controller_id, controller_epoch (the request's),
**                      broker      controller_epoch_old (the newest the broker knows),
**                                  partition_count (entries in the refused request)
**   BROKER_STOPPED     broker      reason CONTROLLED_SHUTDOWN (the controller let it
**                                  go), SHUTDOWN_TIMED_OUT (no answer within the
**                                  shutdown timeout) or SHUTDOWN_NOT_CONTROLLED
**                                  (controlled.shutdown.enable = false); the driver
**                                  then takes its node down (sim/faults.c)
**   TXN_END            -1          producer_index, reason (TXN_COMMITTED, TXN_ABORTED,
**                                  TXN_FENCED, TXN_ABANDONED), [offset_from, offset_to)
**                                  = the producer's record numbers (seq) the
**                                  transaction held, record_count, partition_count
**                                  (partitions added to it), error_code (FENCED: the
**                                  error that fenced it)
**   TXN_STATE          coordinator topic_index/partition: the __transaction_state
**                                  partition; reason TXN_PREPARE_COMMIT,
**                                  TXN_PREPARE_ABORT (error_code PRODUCER_FENCED when
**                                  the abort fences the epoch: a newer instance, or
**                                  txn_timed_out: transaction.timeout.ms; elapsed_ns
**                                  the transaction's age), TXN_COMPLETE_COMMIT or
**                                  TXN_COMPLETE_ABORT: transactional_id, txn_producer_id,
**                                  txn_producer_epoch, partition_count (partitions of
**                                  the transaction), resumed (its decision was written
**                                  by an earlier coordinator: the markers were
**                                  resumed after a load); or reason TXN_LOADED:
**                                  record_count (transactional ids loaded),
**                                  batch_count (of them in PrepareCommit or
**                                  PrepareAbort: their markers are resumed),
**                                  leader_epoch_new (the partition's epoch)
*/
struct ks_cluster_event {
    ks_time_ns at_ns;
    enum ks_cluster_event_kind kind;
    enum ks_event_reason reason;
    int32_t broker;         /* broker id, or -1 */
    int32_t topic_index;    /* or -1 */
    int32_t partition;      /* or -1 */
    int32_t producer_index; /* in the spec, or -1 */
    int32_t consumer_index; /* in the spec, or -1 */
    /* leadership */
    int32_t leader_old;
    int32_t leader_new;
    int32_t leader_epoch_old;
    int32_t leader_epoch_new;
    /* assignment and ISR */
    int32_t replica_count;
    int32_t replicas[KS_REPLICATION_FACTOR_MAX];
    int32_t isr_old_count;
    int32_t isr_old[KS_REPLICATION_FACTOR_MAX];
    int32_t isr_new_count;
    int32_t isr_new[KS_REPLICATION_FACTOR_MAX];
    int32_t isr_count_min; /* min(min.insync.replicas, replication.factor) */
    /* KIP-966: eligible leader replicas before and after, LastKnownElr after */
    int32_t elr_old_count;
    int32_t elr_old[KS_REPLICATION_FACTOR_MAX];
    int32_t elr_new_count;
    int32_t elr_new[KS_REPLICATION_FACTOR_MAX];
    int32_t last_known_leader;
    enum ks_elected_from elected_from;
    /* offsets */
    int64_t offset;
    int64_t offset_old;
    int64_t offset_from;
    int64_t offset_to;
    int64_t leo_old;
    int64_t leo_new;
    int64_t hw_old;
    int64_t hw_new;
    int64_t log_start_offset;
    int32_t diverging_epoch;
    int64_t diverging_end_offset;
    /* counts */
    int64_t record_count;
    int64_t batch_count;
    int64_t byte_count;
    int32_t segment_count;
    int64_t suppressed_count;
    int64_t cut_batch_count; /* RECOVERY: cut by recovery itself */
    int64_t cut_byte_count;
    /* producers */
    int16_t error_code; /* a Kafka error (core/proto.h), KS_ERR_NONE if none */
    enum ks_record_outcome_kind outcome;
    bool idempotent;
    /* brokers */
    int64_t broker_epoch;
    /* controller = zookeeper */
    int32_t controller_id;
    int32_t controller_epoch;
    int32_t controller_epoch_old;
    int32_t partition_count;
    int32_t zk_version;
    int32_t zk_version_found;
    /* consumers and groups */
    enum ks_event_position position;
    int64_t sink_epoch;
    int64_t sink_epoch_found;
    const char *group_id;
    /* the transaction coordinator (TXN_STATE); transactional_id borrowed */
    const char *transactional_id;
    int64_t txn_producer_id;
    int16_t txn_producer_epoch;
    bool resumed;
    bool txn_timed_out; /* TXN_PREPARE_ABORT with a fence: transaction.timeout.ms */
    int64_t elapsed_ns;
    int32_t generation;
    enum ks_assignor assignor;
    const char *group_leader_id;
    int32_t offsets_partition; /* the group's partition of __consumer_offsets */
    const struct ks_event_member *members;
    int32_t member_count;
    const struct ks_event_cause *causes;
    int32_t cause_count;
    const struct ks_event_offset *offsets;
    int32_t offset_count;
};

/* Sets every field to "not given" (see the table above). */
static inline void ks_cluster_event_init(struct ks_cluster_event *event, ks_time_ns at_ns,
                                         enum ks_cluster_event_kind kind)
{
    *event = (struct ks_cluster_event){
        .at_ns = at_ns,
        .kind = kind,
        .reason = KS_REASON_NONE,
        .broker = -1,
        .topic_index = -1,
        .partition = -1,
        .producer_index = -1,
        .consumer_index = -1,
        .leader_old = -1,
        .leader_new = -1,
        .leader_epoch_old = -1,
        .leader_epoch_new = -1,
        .isr_count_min = -1,
        .last_known_leader = -1,
        .controller_id = -1,
        .controller_epoch = -1,
        .controller_epoch_old = -1,
        .zk_version = -1,
        .zk_version_found = -1,
        .elected_from = KS_ELECTED_FROM_NONE,
        .offset = -1,
        .offset_old = -1,
        .offset_from = -1,
        .offset_to = -1,
        .leo_old = -1,
        .leo_new = -1,
        .hw_old = -1,
        .hw_new = -1,
        .log_start_offset = -1,
        .diverging_epoch = -1,
        .diverging_end_offset = -1,
        .broker_epoch = -1,
        .sink_epoch = -1,
        .sink_epoch_found = -1,
        .generation = -1,
        .offsets_partition = -1,
    };
}

/* Copies count ids into one of the event's lists (count <= KS_REPLICATION_FACTOR_MAX). */
static inline int32_t ks_cluster_event_set_list(int32_t *list, const int32_t *ids, int32_t count)
{
    ks_assert(count >= 0 && count <= KS_REPLICATION_FACTOR_MAX);
    for (int32_t i = 0; i < count; i++) {
        list[i] = ids[i];
    }
    return count;
}

struct ks_record_outcome {
    int32_t producer_index;
    int64_t seq;     /* the producer's record number, from 0 */
    const char *key; /* borrowed text as sent; NULL for a null key */
    int32_t topic_index;
    int32_t partition;
    int64_t offset; /* -1 if unknown */
    ks_time_ns sent_ns;
    ks_time_ns acked_ns; /* when the outcome was learned */
    enum ks_record_outcome_kind outcome;
    int32_t acked_broker; /* acked: the broker that answered (acks=0: the one written to); -1 */
    int32_t acked_leader_epoch; /* acked: its leader epoch from the response; -1 unknown */
};

struct ks_consumed_record {
    int32_t consumer_index;
    int32_t generation;
    int32_t topic_index;
    int32_t partition;
    int64_t offset;
    int32_t producer_index; /* from the identity header; -1 if absent */
    int64_t seq;
    ks_time_ns at_ns;
};

/* Where a consumer stands in a partition, reported whenever that changes
 * other than by processing: it takes up a position (from the committed
 * offset or its atomic sink when assigned, from auto.offset.reset, or from a
 * rewind), or the coordinator acknowledges a commit. The driver follows each
 * group's position with these and the processed records (consumed_lost,
 * consumed_unseen in sim/checker.h). */
enum ks_position_kind {
    KS_POSITION_ASSIGNED, /* resumes at the committed (or sink) offset */
    KS_POSITION_RESET,    /* auto.offset.reset: no committed offset, or out of range */
    KS_POSITION_REWIND,   /* scenario action rewind (KafkaConsumer#seek) */
    KS_POSITION_COMMITTED /* a commit of `offset` was acknowledged */
};

struct ks_consumer_position {
    int32_t consumer_index;
    int32_t topic_index;
    int32_t partition;
    int64_t offset; /* the next offset to process (committed: the offset committed) */
    enum ks_position_kind kind;
    ks_time_ns at_ns;
};

struct ks_cluster_observer {
    void *context;
    void (*on_event)(void *context, const struct ks_cluster_event *event);
    void (*on_record)(void *context, const struct ks_record_outcome *outcome);
    void (*on_consumed)(void *context, const struct ks_consumed_record *consumed);
    void (*on_position)(void *context,
                        const struct ks_consumer_position *position); /* may be NULL */
};

/* ---- building ----------------------------------------------------------- */

uint32_t ks_cluster_node_count(const struct ks_cluster_spec *spec); /* including node 0 */
/* True when a producer sets transactional.id (the cluster has __transaction_state). */
bool ks_cluster_spec_has_txn(const struct ks_cluster_spec *spec);
ks_node_id ks_cluster_controller_node(const struct ks_cluster_spec *spec);
ks_node_id ks_cluster_producer_node(const struct ks_cluster_spec *spec, int32_t producer_index);
ks_node_id ks_cluster_consumer_node(const struct ks_cluster_spec *spec, int32_t consumer_index);

/* Builds the model on `world` (which must have ks_cluster_node_count nodes).
 * spec and observer are borrowed and must outlive the cluster. */
struct ks_cluster *ks_cluster_new(ks_world *world, const struct ks_cluster_spec *spec,
                                  const struct ks_cluster_observer *observer);
/* Starts brokers and the controller, creates topics (initial elections), and
 * arms the clients' start timers. */
void ks_cluster_start(struct ks_cluster *cluster);
void ks_cluster_free(struct ks_cluster *cluster);

/* ---- fault hooks: the driver changes the world, then tells the model ---- */

/* After ks_world_node_crash(node): drop the node's in-memory state. */
void ks_cluster_on_node_crashed(struct ks_cluster *cluster, ks_node_id node);
/* After a broker that stopped cleanly exits (its node goes down): its
 * connections close, so clients see the disconnect at once. */
void ks_cluster_on_broker_exited(struct ks_cluster *cluster, int32_t broker_id);
/* After ks_world_node_restart(node): reload from disk (log recovery if the
 * shutdown was unclean), re-arm timers, rejoin. */
void ks_cluster_on_node_restarted(struct ks_cluster *cluster, ks_node_id node);
/* Scenario action `stop`: broker broker_id (asserted in range) begins a
 * controlled shutdown (core/broker.c); when it has finished it reports
 * KS_EV_BROKER_STOPPED and is no longer running, and the driver takes its
 * node down (ks_world_node_crash in process mode: its files are flushed and
 * the clean-shutdown marker written, so a restart recovers nothing). Returns
 * false, changing nothing, when the broker is not running or is stopping
 * already. */
bool ks_cluster_stop_broker(struct ks_cluster *cluster, int32_t broker_id);
/* Whether broker broker_id is running and has begun a controlled shutdown
 * that has not finished. */
bool ks_cluster_broker_stopping(const struct ks_cluster *cluster, int32_t broker_id);
/* Scenario action `rewind`: consumer consumer_index (asserted in range) seeks
 * every partition it is assigned, as KafkaConsumer#seekToBeginning (kind 0),
 * #seekToEnd (1: the HW), #seek(offset) (2: value is the offset) or
 * #offsetsForTimes then #seek (3: value is a simulated time in ns; the first
 * record with a timestamp at or after it, or the HW if none is that recent).
 * kind is enum ks_consumer_rewind_kind of core/consumer.h, whose values equal
 * sim/scenario.h's enum ks_rewind_to. The seek takes effect at the
 * consumer's next poll boundary (after the batch in progress and its
 * commit); a consumer between generations applies it to the assignment it
 * gets next. A crashed consumer ignores it (no process to seek; a restart
 * resumes from the committed offsets). */
void ks_cluster_consumer_rewind(struct ks_cluster *cluster, int32_t consumer_index, int kind,
                                int64_t value);

/* ---- the final phase ---------------------------------------------------- */

/* Producers stop sending new records; in-flight ones finish or time out. */
void ks_cluster_stop_producers(struct ks_cluster *cluster);
/* True when every partition has a leader, every live replica's LEO equals the
 * leader's, HW == LEO, no producer has records in flight, and every group has
 * processed up to the HW. */
bool ks_cluster_converged(const struct ks_cluster *cluster);
/* The whole-object checks (STYLE 3.7) of the controller and of every producer
 * and consumer: asserts; returns only when all hold. The model runs them after
 * its own events in KS_DEBUG builds; tests call this between events (the
 * brokers and their group coordinators check themselves in KS_DEBUG builds). */
void ks_cluster_check(const struct ks_cluster *cluster);

/* ---- queries (the controller's view unless said otherwise) -------------- */

int32_t ks_cluster_topic_count(const struct ks_cluster *cluster);
const char *ks_cluster_topic_name(const struct ks_cluster *cluster, int32_t topic_index);
int32_t ks_cluster_topic_index(const struct ks_cluster *cluster, const char *name); /* -1 */
int32_t ks_cluster_partition_count(const struct ks_cluster *cluster, int32_t topic_index);
int32_t ks_cluster_leader(const struct ks_cluster *cluster, int32_t topic_index,
                          int32_t partition); /* -1: none */
int32_t ks_cluster_leader_epoch(const struct ks_cluster *cluster, int32_t topic_index,
                                int32_t partition);
/* Fills out[] (up to out_count_max) and returns the count. */
int32_t ks_cluster_replicas(const struct ks_cluster *cluster, int32_t topic_index,
                            int32_t partition, int32_t *out, int32_t out_count_max);
int32_t ks_cluster_isr(const struct ks_cluster *cluster, int32_t topic_index, int32_t partition,
                       int32_t *out, int32_t out_count_max);
/* KIP-966: the partition's eligible leader replicas and LastKnownElr, the
 * same way (0 when eligible.leader.replicas.enable is off). */
int32_t ks_cluster_elr(const struct ks_cluster *cluster, int32_t topic_index, int32_t partition,
                       int32_t *out, int32_t out_count_max);
int32_t ks_cluster_last_known_elr(const struct ks_cluster *cluster, int32_t topic_index,
                                  int32_t partition, int32_t *out, int32_t out_count_max);

enum ks_role { KS_ROLE_NONE, KS_ROLE_LEADER, KS_ROLE_FOLLOWER };

/* The broker's own view of its replica. False if the broker does not host it
 * or is down. */
struct ks_replica_state {
    enum ks_role role;
    int64_t leo;
    int64_t hw;
    int64_t log_start_offset;
    int32_t leader_epoch;
};
bool ks_cluster_replica_state(const struct ks_cluster *cluster, int32_t broker_id,
                              int32_t topic_index, int32_t partition, struct ks_replica_state *out);
/* The replica's open log (borrowed; valid until the next event), or NULL if
 * the broker is down or does not host it. The checker reads it. */
struct ks_log *ks_cluster_replica_log(struct ks_cluster *cluster, int32_t broker_id,
                                      int32_t topic_index, int32_t partition);
bool ks_cluster_broker_is_up(const struct ks_cluster *cluster, int32_t broker_id);

int64_t ks_cluster_producer_acked_count(const struct ks_cluster *cluster, int32_t producer_index);
int64_t ks_cluster_producer_sent_count(const struct ks_cluster *cluster, int32_t producer_index);
int64_t ks_cluster_producer_batches_sent_count(const struct ks_cluster *cluster,
                                               int32_t producer_index);

/* controller = zookeeper: the broker /controller names (-1: none, or under
 * kraft) and /controller_epoch (-1 under kraft). */
int32_t ks_cluster_active_controller(const struct ks_cluster *cluster);
/* controller = kraft: which controller is active, N of controller(N) (1 with
 * one controller; -1 while a quorum has none, up). -1 under zookeeper. */
int32_t ks_cluster_active_kraft_controller(const struct ks_cluster *cluster);
/* Elections a quorum's voters won so far (0 with one controller). */
int32_t ks_cluster_controller_elections(const struct ks_cluster *cluster);
/* Node of controller(index + 1) (kraft), or the ZooKeeper node (index 0). */
ks_node_id ks_cluster_controller_voter_node(const struct ks_cluster_spec *spec, int32_t index);
int32_t ks_cluster_controller_epoch(const struct ks_cluster *cluster);
