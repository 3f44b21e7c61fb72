/*
** core/broker_int.h: the broker module's internal header (SQLite's
** btreeInt.h pattern). core/broker.h is the public face; this file is shared
** only by the broker's own files and is never included outside them:
**
**   broker.c          the shell: life cycle, message dispatch, the controller
**                     session, metadata / InitProducerId / ListOffsets,
**                     deferred responses, queries, ks_broker_check
**   broker_replica.c  replica state: roles, LEO/HW, ISR (invariants R1..R6)
**   broker_fetcher.c  the follower fetcher and its KIP-227 session (F1..F4)
**   broker_serve.c    the leader's fetch serving and DelayedFetch, the session cache (S1..S4)
**   broker_produce.c  produce handling, acks and DelayedProduce (A1..A3)
**   broker_logs.c     the log directory: loading, checkpoints, log tasks
**
** Cross-file functions are ks__<area>_<verb>. Every function runs on the
** broker's node, from one of its event handlers (or from the driver between
** events for the life-cycle calls), unless it says otherwise.
*/
#pragma once

#include "base.h"
#include "broker.h"
#include "cluster.h"
#include "config.h"
#include "log.h"
#include "proto.h"
#include "world.h"

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

struct ks_producer_state;
struct ks_group_coordinator;
struct ks_txn_coordinator;

#define KS__REQUEST_TIMEOUT_NS        (30 * KS_NS_PER_S)
#define KS__ALTER_RETRY_NS            (5 * KS_NS_PER_S)
#define KS__COMPACTION_INTERVAL_NS    (15 * KS_NS_PER_S) /* log.cleaner.backoff.ms */
#define KS__REFUSED_EVENT_INTERVAL_NS KS_NS_PER_S

/* ---- replica state (broker_replica.c) -------------------------------------- */

/* What a leader knows of one follower (Kafka's Replica.scala ReplicaState). */
struct ks__follower_state {
    int32_t broker_id;
    int64_t broker_epoch; /* from its fetches (KIP-903); -1: none yet */
    int64_t leo;          /* -1: unknown since this broker became leader */
    ks_time_ns last_fetch_ns;
    int64_t leader_leo_at_last_fetch; /* -1: none */
    ks_time_ns last_caught_up_ns;
    /* Quiet in the follower's fetch session (broker_serve.c, S5): caught up
     * and unchanged, so each fetch of that session would only move the two
     * times above to its own time; they are then read as at least
     * broker->session_fetch_ns[broker_id - 1] (ks__replica_follower_wake). */
    bool quiet;
};

/* A leader's AlterPartition request towards the controller (KIP-497). */
enum ks__alter_state {
    KS__ALTER_IDLE,      /* no ISR change requested */
    KS__ALTER_IN_FLIGHT, /* `alter` sent, no answer or newer push yet (R6) */
    KS__ALTER_REFUSED,   /* refused as stale (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION,
                            INVALID_REQUEST, UNKNOWN_TOPIC_OR_PARTITION): still pending,
                            not re-sent, until a newer push (R6) */
};

/* Fields are ordered so that no padding falls between them (issue 16: one
 * per replica, 30,000 at 12 x 10,000). */
struct ks__replica {
    int32_t topic_index;
    int32_t partition;
    const struct ks_topic_config *topic; /* not owned */
    struct ks_log *log;                  /* owned */
    enum ks_role role;
    bool has_state;
    bool refused_once;    /* leader */
    bool producers_valid; /* both */
    int64_t hw;
    struct ks_partition_state state; /* last applied controller state */
    /* R3 bookkeeping: the hw last seen by ks__replica_check while leader in
     * hw_floor_epoch (-1: not leader since the last check). */
    int32_t hw_floor_epoch;
    int64_t hw_floor;
    /* leader */
    /* Owned, room for topic->replication_factor (the followers are the
     * replicas but this one): sized to the topic, not to
     * KS_REPLICATION_FACTOR_MAX, which was 0.9 KB of each replica's 1.4. */
    struct ks__follower_state *followers;
    int32_t follower_count;
    enum ks__alter_state alter_state;
    int64_t epoch_start_offset;
    ks_time_ns alter_sent_ns;
    /* The ISR change in flight or refused (read only while alter_state is
     * not IDLE). Owned; allocated at the replica's first ISR change and
     * kept for the next: most replicas never make one, and it was 224 of
     * each replica's 544 bytes. */
    struct ks_alter_partition_request *alter;
    ks_time_ns refused_event_ns;
    /* follower */
    ks_time_ns fetch_backoff_until_ns;
    /* F6 (broker_fetcher.c): its position in the request list its leader's
     * fetcher built last (a hint: checked against the list's key there). */
    uint32_t fetch_at;
    /* S9 (broker_serve.c): the fetch sessions at this broker holding this
     * partition, each with its position there (owned; session_ref_count
     * of session_ref_capacity used), so a touch reaches them directly. */
    uint32_t session_ref_count;
    uint32_t session_ref_capacity;
    struct ks__session_ref *session_refs;
    /* both */
    struct ks_producer_state *producers; /* owned */
};

/* ---- the follower fetcher (broker_fetcher.c) --------------------------------- */

/* One fetcher per leader broker (Kafka's fetcher thread), F1. */
enum ks__fetcher_state {
    KS__FETCHER_IDLE = 0,  /* nothing in flight, no kick armed (zeroed memory) */
    KS__FETCHER_SCHEDULED, /* kick_timer armed: fetch after backoff or disk idle */
    KS__FETCHER_IN_FLIGHT, /* one request out, timeout_timer armed */
};

struct ks__fetcher {
    enum ks__fetcher_state state;
    int64_t correlation_id;    /* of the request in flight */
    ks_timer_id timeout_timer; /* armed exactly while IN_FLIGHT */
    ks_timer_id kick_timer;    /* armed exactly while SCHEDULED */
    /* The KIP-227 session with this leader (FetchSessionHandler), F4. */
    int32_t session_id;       /* 0: none, the next request is a full one */
    int32_t session_epoch;    /* the next incremental request's */
    int32_t close_session_id; /* a session the next full request closes; 0 none */
    int32_t pending_epoch;    /* the epoch of the request in flight */
    GArray *session; /* struct ks_fetch_request_partition as the leader has them; NULL empty */
    GArray *pending; /* the session as the request in flight leaves it; NULL none */
    GArray *spare;   /* a session list no longer used, for the next request's; NULL none */
    /* The hosted replicas that follow this leader, as of broker->
     * follow_generation = followed_generation; a superset of them otherwise
     * never holds, so it is rebuilt then (NULL: not built). */
    GPtrArray *followed;
    uint64_t followed_generation;
    /* F5: the partitions whose request entry may have changed since the
     * last request was built (their replicas, unordered, F6);
     * the next incremental request recomputes only those, unless
     * `rebuild`, the shutdown flag moved (shutdown_seen) or a backoff ends
     * (backoff_end_ns, the earliest known). */
    GArray *dirty;
    bool rebuild;
    bool shutdown_seen;
    ks_time_ns backoff_end_ns;
};

/* A timer context that outlives every timer: one per possible leader, in the
 * broker object. */
struct ks__fetcher_ref {
    struct ks_broker *broker;
    int32_t leader_id;
};

/* ---- produce (broker_produce.c) ------------------------------------------------ */

enum ks__completion_kind {
    KS__COMPLETE_NETWORK,  /* a ProduceResponse to `source` */
    KS__COMPLETE_CALLBACK, /* done(context, ...) later on this node; done may be NULL */
};

struct ks__completion {
    enum ks__completion_kind kind;
    ks_node_id source;
    int64_t correlation_id;
    int32_t topic_index;
    int32_t partition;
    void (*done)(void *context, int16_t error, int64_t base_offset);
    void *context;
    /* A batch of a PRODUCE_REQUESTS bundle (NETWORK only): its answer is
     * gathered into the request's one PRODUCE_RESPONSES (A5); NULL else. */
    struct ks__gather *gather;
    uint32_t gather_index; /* its position in the request */
};

/* The answers of one PRODUCE_REQUESTS bundle, sent together once every
 * batch has one (A5; KafkaApis.handleProduceRequest answers a request once,
 * when every partition is done). In broker->gathers until sent. */
struct ks__gather {
    ks_node_id source;
    uint32_t count;
    uint32_t remaining; /* batches not answered yet */
    ks_time_ns at_ns;   /* the latest time an answer may leave (A3) */
    struct ks_produce_response responses[];
};

/* An acks=all append waiting for the HW (Kafka's DelayedProduce), A1. */
struct ks__pending_produce {
    struct ks_broker *broker;
    struct ks__completion completion;
    int64_t base_offset;
    int64_t required_offset; /* HW must reach this */
    ks_timer_id timer;
};

/* A transactional Produce waiting for the transaction coordinator's answer
 * before it is appended (KIP-890 part 1: ReplicaManager.handleProduceAppend,
 * AddPartitionsToTxnManager.verifyTransaction), V1. */
struct ks__verifying {
    struct ks_broker *broker;
    int64_t request_id; /* the KS_MSG_TXN_VERIFY_REQUEST's correlation id */
    uint64_t guard;     /* the partition's VerificationGuard for the producer */
    uint8_t *message;   /* a copy of the Produce message, owned */
    size_t message_bytes;
    ks_node_id source;             /* the producer */
    ks_timer_id timer;             /* the verification's request timeout, or its retry */
    bool local_add;                /* its add waits at this broker's own coordinator (no timer) */
    struct ks_txn_request request; /* what the coordinator is asked */
    ks_time_ns started_ns;         /* the first attempt */
    struct ks__gather *gather;     /* the bundle it came in (A5), or NULL */
    uint32_t gather_index;
    /* message is a TxnOffsetCommit for this broker's group coordinator
     * (GroupCoordinator.handleTxnCommitOffsets), not a Produce. */
    bool txn_offsets;
};

/* Which pending appends of a partition complete_pending finishes. */
enum ks__pending_outcome {
    KS__PENDING_HW_ADVANCED, /* those the HW passed: NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND */
    KS__PENDING_FAIL_ALL,    /* all of them with the given error (leadership lost) */
};

/* ---- fetch serving (broker_serve.c) ---------------------------------------------- */

/* Who sent a FetchRequest: decides how far it is served (S3) and which
 * changes release it when parked. */
enum ks__fetch_origin {
    KS__FETCH_FROM_FOLLOWER, /* replica_id >= 0: served up to the LEO */
    KS__FETCH_FROM_CONSUMER, /* replica_id < 0: served up to the HW */
};

/* Which parked fetches of a partition ks__serve_release answers. */
enum ks__release_waiters {
    KS__RELEASE_FOLLOWERS, /* new data was appended */
    KS__RELEASE_CONSUMERS, /* the HW moved */
    KS__RELEASE_ALL,       /* leadership changed */
};

/* A parked FetchRequest (Kafka's DelayedFetch), S1. */
struct ks__delayed_fetch {
    struct ks_broker *broker;
    ks_node_id source;
    uint8_t *request; /* owned copy */
    size_t request_bytes;
    size_t request_capacity_bytes; /* allocated for request (a reused item keeps it) */
    enum ks__fetch_origin origin;
    ks_time_ns deadline_ns; /* now + max_wait when first parked */
    ks_timer_id timer;
    int32_t session_id; /* KIP-227: request (expanded to the partitions visited, S5) of it; 0 */
    struct ks__fetch_session *session; /* that session while it exists (S5); else NULL */
    bool incremental;                  /* answer only the partitions with something new (S4) */
};

/* A KIP-227 fetch session at the leader (FetchSession.scala's FetchSession
 * and CachedPartition). */
struct ks__session_partition {
    struct ks_fetch_request_partition request; /* as last requested */
    int64_t hw;                                /* as last answered; -1 after an error */
    int64_t log_start_offset;                  /* as last answered */
    /* S7, S9 (broker_serve.c): ks__broker_find_replica of its key (set
     * when the partition joins the session or its replica opens). Not
     * owned. */
    struct ks__replica *replica;
    bool touched; /* S9: in its session's touched list */
};

/* S9: a session holding a replica's partition, at `at` in its list. */
struct ks__session_ref {
    struct ks__fetch_session *session;
    guint at;
};

struct ks__fetch_session {
    int32_t id;
    int32_t epoch; /* the next request's */
    int32_t replica_id;
    ks_time_ns last_used_ns;
    GArray *partitions; /* struct ks__session_partition, in (topic, partition) order */
    /* S5: the partitions a serve visits besides those touched since the
     * last one (guint positions in `partitions`, ascending, S8 of
     * broker_serve.c): those the last serve did not find quiet.
     * visit_all: every partition (a new session, or one whose follower
     * moved on). */
    GArray *awake;
    /* S9: the positions (guint, unordered, each once) of the partitions
     * touched or listed since the last serve. */
    GArray *touched;
    int64_t replica_epoch; /* the follower's broker epoch at its last request */
    bool visit_all;
    uint64_t key_bits; /* S6: the key bits of every partition it ever held (never cleared) */
};

/* ---- the shell (broker.c) -------------------------------------------------------------- */

/* A message or callback deferred to a later time (the disk's idle time). */
struct ks__deferred {
    struct ks_broker *broker;
    ks_timer_id timer;
    /* either a message ... */
    ks_node_id target;
    uint32_t kind;
    uint8_t *bytes; /* owned */
    size_t byte_count;
    /* ... or a callback */
    void (*done)(void *context, int16_t error, int64_t base_offset);
    void *context;
    int16_t error;
    int64_t base_offset;
};

/* BrokerLifecycleManager's BrokerState, as far as ksim models it
 * (controlled shutdown is the shutdown_* fields beside it). */
enum ks__lifecycle_state {
    KS__LIFECYCLE_STARTING, /* registering, or registered and catching up with metadata */
    KS__LIFECYCLE_RECOVERY, /* caught up, asking to be unfenced */
    KS__LIFECYCLE_RUNNING,  /* unfenced */
};

struct ks_zk_controller;

/* controller = zookeeper: the broker's ZooKeeper client (core/broker_zk.c). */
struct ks__zk_client {
    int64_t session_id; /* 0: none (CONNECT sent when connecting) */
    bool connecting;
    bool registered;                     /* /brokers/ids/N is this session's */
    int32_t controller_epoch_seen;       /* newest epoch of an accepted controller request */
    struct ks_zk_controller *controller; /* while this broker is the controller */
    int32_t controller_id_seen;          /* of the newest accepted LeaderAndIsr; -1: none */
    /* Controlled shutdown (KafkaServer.controlledShutdown): attempts left, the
     * request in flight (its correlation id, 0: none) and the timer that
     * ends its wait or the backoff before the next attempt. */
    int32_t shutdown_attempts_left;
    int64_t shutdown_correlation_id;
    int64_t shutdown_correlation_next;
    ks_timer_id shutdown_retry_timer;
};

struct ks_broker {
    ks_world *world;
    const struct ks_cluster_spec *spec;   /* not owned */
    const struct ks_topic_config *topics; /* not owned */
    int32_t topic_count;
    /* ks_broker_topic_index's: topic name (borrowed from topics) -> index + 1;
     * looked up only, never iterated. Owned. */
    GHashTable *topic_by_name;
    int32_t id;
    const struct ks_cluster_observer *observer; /* not owned */
    ks_node_id controller_node;
    char dir[32];

    bool running;
    int64_t broker_epoch;
    int32_t incarnation;
    /* The controller session (broker.c, BrokerLifecycleManager). */
    bool registered;
    enum ks__lifecycle_state lifecycle;
    bool ready_to_unfence;
    bool communication_in_flight; /* heartbeat_timer is then the request's timeout */
    int64_t communication_correlation_id;
    int64_t failed_attempts; /* since the last successful answer: the backoff's exponent */
    /* Controlled shutdown (core/broker.c): asked, and whether the controller
     * answered a heartbeat that asked (BrokerLifecycleManager's
     * gotControlledShutdownResponse). */
    bool shutdown_pending;
    bool shutdown_answered;
    ks_timer_id shutdown_timer; /* the shutdown timeout */
    int64_t metadata_version;
    uint8_t broker_alive[KS_BROKER_COUNT_MAX];
    int64_t broker_epochs[KS_BROKER_COUNT_MAX]; /* registered incarnations, from the pushes */
    struct ks_partition_state **meta; /* [topic][partition]; partition_epoch -1 = unknown */
    struct ks__replica ***replicas;   /* [topic][partition]; NULL = not hosted */
    /* The hosted replicas (those of `replicas` that are not NULL) in (topic,
     * partition) order: the periodic tasks and the fetcher visit these, not
     * every partition of the cluster (a broker of 100 hosts 3 % of them). */
    GPtrArray *hosted;
    /* Bumped whenever a replica is opened or closed or its role or leader
     * changes: the fetchers' followed lists are rebuilt after that. */
    uint64_t follow_generation;
    /* While a controller push is applied (ks__broker_apply_push): the
     * leaders whose fetchers restart once after it, not once per partition
     * (ReplicaManager.makeFollowers hands the fetcher manager all of a
     * LeaderAndIsr's partitions in one addFetcherForPartitions). */
    bool push_applying;
    uint8_t restart_pending[KS_BROKER_COUNT_MAX]; /* [leader_id - 1] */

    struct ks__fetcher fetchers[KS_BROKER_COUNT_MAX];         /* [leader_id - 1] */
    struct ks__fetcher_ref fetcher_refs[KS_BROKER_COUNT_MAX]; /* [leader_id - 1] */
    /* F5: the buffer every fetcher builds its request in, kept between
     * kicks (a kick never nests in another) and sent as a copy; owned, NULL
     * until the first kick. */
    GByteArray *fetch_request;
    int64_t next_correlation_id;
    int32_t producer_id_counter;

    GPtrArray *pending;       /* struct ks__pending_produce *, in arrival order */
    GPtrArray *verifying;     /* struct ks__verifying *, in arrival order */
    GPtrArray *delayed;       /* struct ks__delayed_fetch * */
    GArray *delayed_key_bits; /* uint64_t: delayed[i]'s key bits, in step with it (S6) */
    /* While a PRODUCE_REQUESTS bundle is appended (releases_deferred), the
     * partitions whose followers' parked fetches its appends release, as
     * struct ks_fetch_forgotten keys in append order: released once the
     * whole request is in (broker_produce.c). */
    bool releases_deferred;
    GArray *deferred_releases;
    /* The bundle being taken (ks__produce_on_requests): its answers'
     * gather and the position of the batch in hand; NULL outside. */
    struct ks__gather *gather_current;
    uint32_t gather_index;
    GPtrArray *gathers;          /* struct ks__gather *, owned: bundles not answered yet (A5) */
    GPtrArray *deferred;         /* struct ks__deferred * */
    GPtrArray *fetch_sessions;   /* struct ks__fetch_session *, oldest first; NULL none yet */
    int32_t fetch_session_count; /* sessions created by this incarnation */
    /* The time of each follower's last fetch served first in a session
     * ([follower_id - 1]): the fetch time of its quiet partitions. */
    ks_time_ns session_fetch_ns[KS_BROKER_COUNT_MAX];
    /* Buffers broker_serve.c builds requests and responses in, kept between
     * serves (GByteArray *, owned; NULL until the first). A serve can nest
     * in another (a HW advance releases a parked fetch), so each takes its
     * own from the pool and gives it back. */
    GPtrArray *serve_scratch;
    GPtrArray *serve_visits;  /* the same for S5's visit lists (GArray * of guint) */
    GPtrArray *delayed_spare; /* answered parked fetches, for the next park; NULL none */

    ks_timer_id heartbeat_timer;
    ks_timer_id isr_timer;
    ks_timer_id hw_checkpoint_timer;
    ks_timer_id recovery_checkpoint_timer;
    ks_timer_id log_tasks_timer;
    struct ks_group_coordinator *coordinator;
    int32_t offsets_topic_index;
    struct ks_txn_coordinator *txn_coordinator; /* when __transaction_state exists */
    int32_t txn_topic_index;
    struct ks__zk_client zk;            /* controller = zookeeper only */
    struct ks__log_memory **log_memory; /* [topic][partition] or NULL; broker_logs.c */
};

/* ---- small shared helpers ---------------------------------------------------------------- */

static inline ks_time_ns ks__broker_now_ns(const struct ks_broker *broker)
{
    return ks_world_now_ns(broker->world);
}

/* The i-th hosted replica, in (topic, partition) order. */
static inline struct ks__replica *ks__hosted(const struct ks_broker *broker, guint i)
{
    return g_ptr_array_index(broker->hosted, i);
}

static inline bool ks__list_contains(const int32_t *list, int32_t count, int32_t id)
{
    for (int32_t i = 0; i < count; i++) {
        if (list[i] == id) {
            return true;
        }
    }
    return false;
}

static inline int64_t ks__min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static inline int64_t ks__leo_of(const struct ks__replica *replica)
{
    return ks_log_leo(replica->log);
}

/* ---- broker.c ------------------------------------------------------------------------------ */

/* The hosted replica of (topic_index, partition) with an open log, or NULL
 * (not hosted, bad indexes, or the broker is not running). Borrowed. */
struct ks__replica *ks__broker_find_replica(const struct ks_broker *broker, int32_t topic_index,
                                            int32_t partition);
/* Applies a controller's push (struct ks_partition_state_push and its
 * entries): live brokers and partition states, if meant for this incarnation. */
void ks__broker_apply_push(struct ks_broker *broker, const uint8_t *message, size_t message_bytes);
/* True if the controller last said broker `id` is registered and unfenced. */
bool ks__broker_alive(const struct ks_broker *broker, int32_t id);
/* Sends now, or at `at_ns` if later (a response that must wait for the
 * disk). bytes are copied. */
void ks__broker_send_at(struct ks_broker *broker, ks_time_ns at_ns, ks_node_id target,
                        uint32_t kind, const void *bytes, size_t byte_count);
/* Calls done(context, error, base_offset) at at_ns (now if earlier), never
 * synchronously; nothing when done is NULL. */
void ks__broker_callback_at(struct ks_broker *broker, ks_time_ns at_ns,
                            void (*done)(void *context, int16_t error, int64_t base_offset),
                            void *context, int16_t error, int64_t base_offset);

/* ---- broker_replica.c ----------------------------------------------------------------------- */

/* Opens the replica's log folder (recovering it unless clean_shutdown) and
 * registers it in broker->replicas. hw_checkpoint and log_start_checkpoint
 * are -1 when absent; report_out (may be NULL) gets what recovery found.
 * Owned by the broker: ks__replica_close. */
struct ks__replica *ks__replica_open(struct ks_broker *broker, int32_t topic_index,
                                     int32_t partition, int64_t recovery_point, bool clean_shutdown,
                                     int64_t hw_checkpoint, int64_t log_start_checkpoint,
                                     struct ks_log_recovery_report *report_out);
void ks__replica_close(struct ks__replica *replica);
/* Asserts R1..R6 and records the R3 floor. */
void ks__replica_check(const struct ks_broker *broker, struct ks__replica *replica);
/* Maximal ISR (KIP-497): the committed ISR plus members of an expansion in
 * flight, into out (room for 2 * KS_REPLICATION_FACTOR_MAX); returns the count. */
int32_t ks__replica_maximal_isr(const struct ks__replica *replica, int32_t *out);
/* Applies one partition state from a controller push (LeaderAndIsr). */
void ks__replica_apply_state(struct ks_broker *broker, const struct ks_partition_state *state);
/* Leader: advance the HW to the minimum LEO of the (maximal) ISR, then
 * complete what it released. A no-op on a follower. */
void ks__replica_maybe_advance_hw(struct ks_broker *broker, struct ks__replica *replica);
/* S5 (broker_serve.c): a follower's state on a leader replica leaves its
 * quiet state, its fetch times brought up to its session's last fetch; a
 * no-op when not quiet, or when the replica or follower is not there. */
void ks__replica_follower_wake(struct ks_broker *broker, struct ks__replica *replica,
                               int32_t follower_id);
/* S5: after a fetch at fetch_offset recorded for follower_id: whether its
 * next fetches at that offset would change nothing but its fetch times
 * (the replica leads, fetch_offset = LEO = HW, the follower is in the
 * committed ISR at that offset); if so the follower's state turns quiet. */
bool ks__replica_follower_sleep(struct ks_broker *broker, struct ks__replica *replica,
                                int32_t follower_id, int64_t fetch_offset);
/* Leader: one follower's fetch at fetch_offset from its incarnation
 * follower_epoch (Replica.updateFetchStateOrThrow), then ISR expansion and
 * HW advance. */
void ks__replica_record_follower_fetch(struct ks_broker *broker, struct ks__replica *replica,
                                       int32_t follower_id, int64_t follower_epoch,
                                       int64_t fetch_offset);
/* Cuts the log at `offset` (a no-op at or above the LEO), clamps the HW,
 * and reports a KS_EV_TRUNCATION event: why (a KS_REASON_TRUNCATE_*), the
 * offset, the leader followed, the leader's diverging epoch and its end
 * offset (-1, -1 unless why is about one), and the LEOs, HWs and range dropped. */
void ks__replica_truncate(struct ks_broker *broker, struct ks__replica *replica,
                          enum ks_event_reason why, int64_t offset, int32_t diverging_epoch,
                          int64_t diverging_end_offset);
/* Starts the periodic ISR check (Kafka's isr-expiration task). */
void ks__replica_start_isr_check(struct ks_broker *broker);
/* The first run of a periodic task after start (broker.task.phase; broker.c). */
ks_time_ns ks__broker_first_run_ns(struct ks_broker *broker, ks_time_ns period_ns,
                                   ks_time_ns aligned_ns);
/* The controller answered an AlterPartition. */
void ks__replica_on_alter_response(struct ks_broker *broker,
                                   const struct ks_alter_partition_response *response);

/* ---- broker_fetcher.c ------------------------------------------------------------------------ */

/* F5: the request entry of a replica this broker follows may have changed
 * (its log's end or start, its backoff): its fetcher recomputes it. */
void ks__fetcher_touch(struct ks_broker *broker, const struct ks__replica *replica);
/* Sends the next fetch to leader_id if none is in flight or scheduled (F1). */
void ks__fetcher_kick(struct ks_broker *broker, int32_t leader_id);
/* Forgets every fetch session, both sides (a crash or shutdown). */
void ks__fetcher_drop_sessions(struct ks_broker *broker);
void ks__serve_drop_sessions(struct ks_broker *broker);
/* Frees the buffers kept between serves (ks_broker_free). */
void ks__serve_free_scratch(struct ks_broker *broker);
/* Forgets the request in flight to leader_id (its response will not match)
 * and fetches afresh: a new leader epoch (Kafka re-adds the partition). */
void ks__fetcher_restart(struct ks_broker *broker, int32_t leader_id);
void ks__fetcher_on_response(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                             size_t message_bytes);

/* ---- broker_serve.c ------------------------------------------------------------------------- */

void ks__serve_on_request(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                          size_t message_bytes);
/* A client request's check of the partition's leadership and of the
 * client's current leader epoch (-1: none): NOT_LEADER_OR_FOLLOWER,
 * FENCED_LEADER_EPOCH (older than the leader's), UNKNOWN_LEADER_EPOCH
 * (newer), or NONE. Fetch, ListOffsets and OffsetsForLeaderEpoch share it. */
int16_t ks__serve_epoch_error(const struct ks__replica *replica, int32_t current_leader_epoch);
/* The replica a ListOffsets or OffsetsForLeaderEpoch names when this broker
 * leads it in the client's epoch; else NULL, with *error_code
 * UNKNOWN_TOPIC_OR_PARTITION or ks__serve_epoch_error's answer. */
struct ks__replica *ks__serve_leader_for(struct ks_broker *broker, int32_t topic_index,
                                         int32_t partition, int32_t current_leader_epoch,
                                         int16_t *error_code);
/* OffsetsForLeaderEpoch from a consumer (KIP-320 position validation). */
void ks__serve_offset_for_leader_epoch(struct ks_broker *broker, ks_node_id source,
                                       const struct ks_offset_for_leader_epoch_request *request);
/* Answers the parked fetches of a partition selected by `waiters` (they may
 * park again until their original deadline). */
/* S6 (core/broker_serve.c): every parked fetch's key bits cover every
 * partition it may be released for; S7: every session partition's cached
 * replica is the one ks__broker_find_replica finds; S8, S9. */
void ks__serve_check_parked(const struct ks_broker *broker);
void ks__serve_release(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                       enum ks__release_waiters waiters);
/* The position of (topic_index, partition) in `count` elements of `stride`
 * bytes at base, each beginning with the two (a struct ks_fetch_forgotten
 * key; a fetch request entry does) and in (topic, partition) order, or
 * where it belongs; *found tells which. */
guint ks__key_position(const void *base, guint count, size_t stride, int32_t topic_index,
                       int32_t partition, bool *found);
/* The leader-side state of a replica changed (its log's end or start, its
 * HW, role, epoch or ISR): the fetch sessions visit it at their next serve
 * (S5). */
void ks__serve_touch(struct ks_broker *broker, const struct ks__replica *replica);
/* S5's visit list (broker_serve.c): the ascending union of awake (ascending,
 * each once) and touched (each once, any order), every position below
 * length, written to out (room for awake_count + touched_count); returns
 * its length. */
guint ks__serve_visit_union(const guint *awake, guint awake_count, const guint *touched,
                            guint touched_count, guint length, guint *out);
/* S9: a replica just opened (in broker->replicas) joins the reverse index
 * of the fetch sessions already holding its partition. */
void ks__serve_link_replica(struct ks_broker *broker, struct ks__replica *replica);

/* ---- broker_produce.c ----------------------------------------------------------------------- */

void ks__produce_on_request(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                            size_t message_bytes);
/* A PRODUCE_REQUESTS bundle: each batch as ks__produce_on_request, then the
 * followers' fetches its appends release. */
void ks__produce_on_requests(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                             size_t message_bytes);
/* KIP-890 part 1: the coordinator's answer to a verification (a struct
 * ks_txn_response of kind KS_MSG_TXN_VERIFY_RESPONSE). */
void ks__produce_on_verify_response(struct ks_broker *broker, const void *message,
                                    size_t message_bytes);
/* Drops the verifications in flight (a crash or a stop: no answer). */
void ks__produce_drop_verifying(struct ks_broker *broker);
/* Frees the bundles' gathers (the broker stopped: nobody answers them). */
void ks__produce_drop_gathers(struct ks_broker *broker);

/* Finishes pending acks=all appends of the replica's partition (A1). */
void ks__produce_complete_pending(struct ks_broker *broker, struct ks__replica *replica,
                                  enum ks__pending_outcome outcome, int16_t error);

/* ---- broker_logs.c -------------------------------------------------------------------------- */

/* LogManager.loadLogs: opens every partition folder found in broker-<id>/. */
void ks__logs_load(struct ks_broker *broker);
/* Arms the checkpoint and log-task timers. */
void ks__logs_start_tasks(struct ks_broker *broker);
/* Clean shutdown: flush every log, write the three checkpoints and the
 * .kafka_cleanshutdown marker. */
void ks__logs_shutdown(struct ks_broker *broker);

/* At a crash, before the broker's memory goes: what each log held (its LEO
 * and segments), kept only so that the recovery line after the restart can
 * say what the crash cost (the files alone cannot: what vanished with the
 * page cache is simply not there). Not part of the broker's behaviour. */
void ks__logs_remember(struct ks_broker *broker);
/* Frees what ks__logs_remember kept (ks_broker_free). */
void ks__logs_forget(struct ks_broker *broker);
/* After a log was truncated: LogManager.truncateTo writes the recovery
 * points again, so that a crash after the truncation recovers from the
 * lowered point. */
void ks__logs_after_truncation(struct ks_broker *broker);

/* ---- broker_zk.c (controller = zookeeper) ---------------------------------------------------- */

/* At (re)start: open a session (CONNECT), then register and run for /controller. */
void ks__zk_start(struct ks_broker *broker);
/* The heartbeat timer under zookeeper: a ping (or a new CONNECT) and a
 * registration retry. */
void ks__zk_tick(struct ks_broker *broker);
/* ZK_RESPONSE, ZK_WATCH and LEADER_AND_ISR. */
void ks__zk_on_message(struct ks_broker *broker, ks_node_id source, uint32_t kind,
                       const uint8_t *bytes, size_t message_bytes);
/* The process stops: a clean shutdown closes the session (its ephemeral
 * znodes go at once), a crash leaves it to expire. Drops the controller. */
void ks__zk_stop(struct ks_broker *broker, bool clean);
/* controlled shutdown under zookeeper: ControlledShutdown requests to the
 * controller, at most controlled.shutdown.max.retries of them. */
void ks__zk_begin_controlled_shutdown(struct ks_broker *broker);
/* The clean stop that ends a controlled shutdown (or replaces it): the
 * broker stops and KS_EV_BROKER_STOPPED carries why (core/broker.c). */
void ks__broker_finish_shutdown(struct ks_broker *broker, enum ks_event_reason why);
/* The ping period: a third of zookeeper.session.timeout.ms (the ZooKeeper
 * client pings when idle for half its read timeout, two thirds of it). */
ks_time_ns ks__zk_ping_interval_ns(const struct ks_broker *broker);
/* The controller epoch this broker runs as controller with, or -1. */
int32_t ks__zk_controller_epoch(const struct ks_broker *broker);
