/*
** sim/scenario.h: scenario files (SPEC section 2) as plain, frozen data.
**
** Life of a scenario (STYLE 3.11):
**
**   ks_scenario_parse(path)          read the file: syntax, duplicates, unknown
**                                    sections and keys, every typed value checked
**                                    against the key table (type, unit, range)
**   ks_scenario_apply_set(...)  *    --set section.name.key=value, same table,
**                                    same checks; last one wins; a failed set
**                                    changes nothing
**   ks_scenario_finalize()           fill defaults (topics inherit the cluster's
**                                    log.* values), resolve names to indexes,
**                                    parse targets, triggers and expectation
**                                    values, check cross-field rules; fills the
**                                    struct
**
**   ks_scenario_load() = parse + finalize, for callers without --set.
**
** Every error is a GError in KS_SCENARIO_ERROR whose message is exactly
** "FILE:LINE: what is wrong" (for a value that came from --set:
** "--set KEY=VALUE: what is wrong"). The struct fields below are valid only
** after a successful finalize; calling apply_set again makes the scenario
** unfinalized until the next finalize (every field is rebuilt from the
** assignments, so nothing is left over from the previous one).
**
** Units: every time is int64 ns, every size int64/int32 bytes, as in
** core/config.h; -1 means "not set / never" where a field's comment says so.
*/
#pragma once

#include "../core/config.h"
#include "kafka_versions.h"

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* ---- errors ------------------------------------------------------------ */

#define KS_SCENARIO_ERROR (ks_scenario_error_quark())
GQuark ks_scenario_error_quark(void);

enum ks_scenario_error {
    KS_SCENARIO_ERROR_SYNTAX,      /* a line that is not a section, key = value or comment */
    KS_SCENARIO_ERROR_UNKNOWN_KEY, /* unknown section or key, expectation not a metric */
    KS_SCENARIO_ERROR_VALUE,       /* bad value, unit, range, trigger, target */
    KS_SCENARIO_ERROR_DUPLICATE,   /* a key or section given twice */
    KS_SCENARIO_ERROR_MISSING,     /* a required key is absent */
    KS_SCENARIO_ERROR_REFERENCE,   /* a name of a missing topic, client, fault, broker */
    KS_SCENARIO_ERROR_CONFLICT,    /* keys that cannot go together (min.insync > RF, ...) */
    KS_SCENARIO_ERROR_IO,          /* the file cannot be read (or is not a regular file,
                                      or is too large) */
    KS_SCENARIO_ERROR_NOT_MODELLED /* a Kafka setting that ksim knows and does not model */
};

/* ---- limits ------------------------------------------------------------- */

#define KS_SCENARIO_FILE_BYTES_MAX      (16 << 20) /* a larger file is refused, unread */
#define KS_SCENARIO_NAME_BYTES_MAX      63         /* client, fault names; [a-zA-Z0-9._-] */
#define KS_SCENARIO_TOPIC_COUNT_MAX     KS_TOPIC_COUNT_MAX
#define KS_SCENARIO_CLIENT_COUNT_MAX    256 /* producers, and consumers, each */
#define KS_SCENARIO_FAULT_COUNT_MAX     1024
#define KS_SCENARIO_PARTITION_COUNT_MAX KS_PARTITION_COUNT_MAX /* per topic */
/* partitions x replication.factor summed over every topic of every cluster
 * (internal topics aside): per replica the model keeps its state, a log and
 * its files (docs/scale-out.md, Limits). */
#define KS_SCENARIO_REPLICA_COUNT_MAX   150000
/* partitions x brokers summed over the clusters (internal topics aside):
 * every broker keeps the state of every partition of its cluster. */
#define KS_SCENARIO_METADATA_COUNT_MAX  5000000
#define KS_FAULT_TARGET_COUNT_MAX       80 /* names on one side of a network fault */
#define KS_EXPECT_VALUE_COUNT_MAX       16
#define KS_SCENARIO_CLUSTER_COUNT_MAX   4 /* [cluster NAME] sections */
#define KS_SCENARIO_MIRROR_COUNT_MAX    8 /* [mirror NAME] sections */

/* ---- small shared types --------------------------------------------------- */

/* A topic-partition as Kafka writes it, "orders-0": topic index into
 * scenario->topics (resolved), partition number (checked < partition_count). */
struct ks_tp {
    int32_t topic_index;
    int32_t partition;
};

enum ks_compare_op { KS_OP_EQ, KS_OP_NE, KS_OP_LT, KS_OP_LE, KS_OP_GT, KS_OP_GE };

/* ---- world settings (-> struct ks_world_config) ---------------------------- */

/* network.latency.A-B = 20ms: one-way latency between brokers A and B, both ways. */
struct ks_link_latency {
    int32_t broker_a; /* 1..brokers, broker_a < broker_b */
    int32_t broker_b;
    int64_t latency_ns;
    uint32_t line; /* 0 when it came from --set */
};

/* ---- several clusters: [cluster NAME], [mirror NAME] ------------------------ */

/* One [cluster NAME]: what [cluster] gives a one-cluster scenario (the
 * [cluster] fields of struct ks_scenario hold the first one's values too). */
struct ks_scenario_cluster {
    char name[KS_SCENARIO_NAME_BYTES_MAX + 1];
    uint32_t line; /* of the [cluster NAME] header */
    struct ks_cluster_config cluster;
    struct ks_log_config log_defaults;
    int32_t default_replication_factor;
    int32_t num_partitions_default;
    int64_t network_latency_ns;
    struct ks_link_latency *link_latencies; /* owned; network.latency.A-B inside it */
    size_t link_latency_count;
};

/* [scenario] network.latency.east-west = 40ms: one-way latency between every
 * node of one cluster and every node of the other (a mirror's node belongs
 * to its target cluster). Default: the larger of the two clusters'
 * network.latency. */
struct ks_cluster_link {
    int32_t cluster_a; /* index into clusters, cluster_a < cluster_b */
    int32_t cluster_b;
    int64_t latency_ns;
    uint32_t line;
};

/* [mirror NAME]: one MirrorMaker 2 source + checkpoint task (core/mirror.h),
 * Kafka's MirrorMaker 2 key names. */
struct ks_mirror_spec {
    char name[KS_SCENARIO_NAME_BYTES_MAX + 1];
    uint32_t line;
    int32_t source_cluster; /* source = NAME */
    int32_t target_cluster; /* target = NAME */
    int32_t topic_index;    /* topics = orders: a topic of the source cluster */
    int32_t remote_topic_index; /* "<source>.<topic>" on the target (made when not declared) */
    char separator[8];          /* replication.policy.separator = . */
    int32_t replication_factor; /* replication.factor = 2: of a remote topic ksim makes */
    int64_t offset_lag_max;     /* offset.lag.max = 100 */
    bool emit_checkpoints;      /* emit.checkpoints.enabled = true */
    int64_t emit_checkpoints_interval_ns;   /* emit.checkpoints.interval.seconds = 60 */
    bool sync_group_offsets_enabled;        /* sync.group.offsets.enabled = false */
    int64_t sync_group_offsets_interval_ns; /* sync.group.offsets.interval.seconds = 60 */
    int64_t offset_flush_interval_ns;       /* offset.flush.interval.ms = 60000 */
    enum ks_acks acks;                      /* producer.acks = all */
    bool enable_idempotence;                /* producer.enable.idempotence = true */
    int64_t start_ns;                       /* start = 0s (ksim) */
};

/* ---- faults [fault NAME] --------------------------------------------------- */

/* What a fault does. Everything about each action (keys, rules, how it
 * fires and is undone, its JSON) is its row in sim/fault_actions.c. */
enum ks_fault_action {
    KS_FAULT_CRASH,           /* target; mode; restart.after */
    KS_FAULT_RESTART,         /* target */
    KS_FAULT_PARTITION,       /* groups | isolate | from+to; duration */
    KS_FAULT_HEAL,            /* fault = NAME heals that one; without it every network fault */
    KS_FAULT_SLOW,            /* target; disk.latency and/or network.latency; duration */
    KS_FAULT_PAUSE,           /* target; duration (resumes after) */
    KS_FAULT_RESUME,          /* target */
    KS_FAULT_DROP,            /* loss (ppm) on every link; duration */
    KS_FAULT_CORRUPT,         /* target broker; partition = TP; bytes; position.bytes */
    KS_FAULT_REWIND,          /* target consumer(NAME); to = earliest | latest | offset | time */
    KS_FAULT_STOP,            /* target brokers: controlled shutdown; restart.after */
    KS_FAULT_ROLLING_RESTART, /* target = all | brokers (a list, side_a); downtime;
                                 catch.up.timeout */
    KS_FAULT_FAILOVER,        /* target consumer(NAME): its group moves to the mirror's target
                                 (several clusters) */
    KS_FAULT_ACTION_COUNT
};

/* A target, resolved when the fault fires (SPEC 2 "Targets"). */
enum ks_target_kind {
    KS_TARGET_NONE,       /* no target given (heal, drop) */
    KS_TARGET_BROKER,     /* broker_id */
    KS_TARGET_LEADER,     /* leader(TP) */
    KS_TARGET_FOLLOWER,   /* follower(TP): first replica in assignment order not the leader */
    KS_TARGET_FOLLOWERS,  /* followers(TP): all of them */
    KS_TARGET_CONTROLLER, /* controller (under zookeeper: the broker that is controller) */
    KS_TARGET_RANDOM,     /* a live broker drawn from KS_RNG_FAULT */
    KS_TARGET_RACK,       /* rack(NAME): every broker of the rack of broker_id */
    KS_TARGET_ALL,        /* all: every broker */
    KS_TARGET_PRODUCER,   /* producer(NAME): client_index into scenario->producers */
    KS_TARGET_CONSUMER,   /* consumer(NAME): client_index into scenario->consumers */
    KS_TARGET_ZOOKEEPER,  /* zookeeper: the ZooKeeper node (controller = zookeeper) */
    KS_TARGET_CLUSTER     /* cluster(NAME): every node of a cluster (several clusters) */
};

struct ks_target {
    enum ks_target_kind kind;
    int32_t broker_id;    /* KS_TARGET_BROKER; KS_TARGET_RACK: the rack's lowest broker id */
    struct ks_tp tp;      /* LEADER, FOLLOWER, FOLLOWERS */
    int32_t client_index; /* PRODUCER, CONSUMER */
    /* CONTROLLER: 0 the active controller when the fault fires, N >= 1
     * controller(N), the N-th controller node (node id brokers + N). */
    int32_t controller_number;
    int32_t cluster_index; /* CLUSTER: index into scenario->clusters */
    /* BROKER written NAME:ID (several clusters): broker_id of cluster
     * cluster_index */
    bool in_cluster;
};

struct ks_target_list {
    struct ks_target items[KS_FAULT_TARGET_COUNT_MAX];
    uint32_t count;
};

enum ks_crash_mode { KS_CRASH_PROCESS, KS_CRASH_POWER };

/* How a partition fault names its sides. */
enum ks_net_shape {
    KS_NET_GROUPS,  /* groups = A | B: cut every link between side_a and side_b, both ways */
    KS_NET_ISOLATE, /* isolate = X: side_a = {X}; cut X from every other node, both ways */
    KS_NET_ONE_WAY  /* from = A, to = B: cut messages from side_a to side_b only */
};

enum ks_rewind_to { KS_REWIND_EARLIEST, KS_REWIND_LATEST, KS_REWIND_OFFSET, KS_REWIND_TIME };

/* Triggers (SPEC 2): `when = FN(ARGS) OP VALUE`. Every function yields an
 * integer; a bare `crashed(1)`, `restarted(2)`, `elected(orders-0)` means
 * `>= 1`. A trigger fires once, the first time it holds after an event.
 *   hw(B, TP)      high watermark of broker B's replica of TP (-1 if none)
 *   leo(B, TP)     log end offset of broker B's replica of TP (-1 if none)
 *   isr_size(TP)   size of TP's ISR as the controller knows it
 *   crashed(B)     how many times broker B has crashed so far
 *   restarted(B)   how many times broker B has restarted so far
 *   elected(TP)    leader changes of TP after its initial election
 *   acked(P)       records producer P saw acknowledged */
enum ks_trigger_fn {
    KS_TRIGGER_HW,
    KS_TRIGGER_LEO,
    KS_TRIGGER_ISR_SIZE,
    KS_TRIGGER_CRASHED,
    KS_TRIGGER_RESTARTED,
    KS_TRIGGER_ELECTED,
    KS_TRIGGER_ACKED
};

struct ks_trigger {
    enum ks_trigger_fn fn;
    int32_t broker_id;      /* HW, LEO, CRASHED, RESTARTED; else 0 */
    struct ks_tp tp;        /* HW, LEO, ISR_SIZE, ELECTED; else {-1, -1} */
    int32_t producer_index; /* ACKED; else -1 */
    enum ks_compare_op op;
    int64_t value;
};

struct ks_fault {
    char name[KS_SCENARIO_NAME_BYTES_MAX + 1];
    uint32_t line; /* line of the [fault NAME] header */
    enum ks_fault_action action;
    /* When: exactly one of at / when. delay postpones a trigger's action. */
    bool has_at;
    int64_t at_ns; /* at = 10s */
    bool has_when;
    struct ks_trigger when;   /* when = hw(2, orders-0) >= 2 */
    int64_t delay_ns;         /* delay = 3ms; 0 default */
    struct ks_target target;  /* target = ...; kind NONE if absent */
    enum ks_crash_mode mode;  /* mode = process (default) | power */
    int64_t restart_after_ns; /* restart.after; -1 = stays down */
    int64_t duration_ns;      /* duration: undo after this; -1 = until heal/resume/end */
    /* partition */
    enum ks_net_shape net_shape;
    struct ks_target_list side_a; /* groups left, isolate's node, from; rolling-restart's
                                     target list */
    struct ks_target_list side_b; /* groups right, to; empty for isolate */
    /* slow: extra latency on the target's disk operations / messages; 0 = unchanged */
    int64_t disk_latency_ns;    /* disk.latency */
    int64_t network_latency_ns; /* network.latency */
    /* drop */
    uint32_t loss_ppm; /* loss = 1% | 0.5% | 10000ppm */
    /* corrupt */
    struct ks_tp corrupt_tp;        /* partition = orders-0 */
    int32_t corrupt_bytes;          /* bytes = 1 (default) */
    int64_t corrupt_position_bytes; /* position.bytes; -1 = drawn from KS_RNG_FAULT
                                       within the active segment's last batch */
    /* rewind */
    enum ks_rewind_to rewind_to; /* to = earliest | latest | 1234 | 5s */
    int64_t rewind_offset;       /* KS_REWIND_OFFSET */
    int64_t rewind_time_ns;      /* KS_REWIND_TIME: first record with timestamp >= this */
    /* heal */
    int32_t heal_fault_index; /* fault = NAME -> index into scenario->faults; -1 = all */
    /* rolling-restart */
    int64_t downtime_ns;         /* downtime: each broker stays down this long; -1 = not set */
    int64_t catch_up_timeout_ns; /* catch.up.timeout = 5m: the longest a step waits for zero
                                    under-replicated partitions after its restart */
    /* failover: the [mirror] whose remote topic the group reads after it
     * (index into scenario->mirrors), set when the scenario is finalized */
    int32_t failover_mirror;
};

/* ---- expectations [expect] -------------------------------------------------- */

/* The run summary metrics of SPEC section 5, in SPEC order, and ksim's own
 * faults_skipped before events and trace_hash. */
enum ks_metric {
    KS_METRIC_RECORDS_SENT,
    KS_METRIC_RECORDS_ACKED,
    KS_METRIC_RECORDS_FAILED,
    KS_METRIC_RECORDS_UNKNOWN,
    KS_METRIC_ACKED_LOST,
    KS_METRIC_DUPLICATES,
    KS_METRIC_REORDERED,
    KS_METRIC_DIVERGENT_PARTITIONS,
    KS_METRIC_CONSUMED_LOST,
    KS_METRIC_CONSUMED_UNSEEN,
    KS_METRIC_CONSUMED_DUPLICATES,
    KS_METRIC_TXN_COMMITTED, /* transactions (shown only when a producer is transactional) */
    KS_METRIC_TXN_ABORTED,
    KS_METRIC_ABORTED_READ,
    KS_METRIC_ABORTED_SEEN,
    KS_METRIC_TXN_HANGING,
    KS_METRIC_PREMATURE_READ,
    KS_METRIC_MIRRORED, /* mirrors (shown only when the scenario has a [mirror NAME]) */
    KS_METRIC_MIRROR_LOST,
    KS_METRIC_MIRROR_UNMIRRORED,
    KS_METRIC_MIRROR_DUPLICATES,
    KS_METRIC_MIRROR_LAG,
    KS_METRIC_MIRROR_LAG_MAX,
    KS_METRIC_FAILOVER_DUPLICATES,
    KS_METRIC_EOS_MISSING, /* processors (shown only when a consumer has output.topic) */
    KS_METRIC_EOS_DUPLICATES,
    KS_METRIC_LEADER_ELECTIONS,
    KS_METRIC_UNCLEAN_ELECTIONS,
    KS_METRIC_ISR_SHRINKS,
    KS_METRIC_ISR_EXPANDS,
    KS_METRIC_UNAVAILABLE_MS,
    KS_METRIC_PRODUCE_UNAVAILABLE_MS,
    KS_METRIC_PRODUCE_P50_MS,
    KS_METRIC_PRODUCE_P99_MS,
    KS_METRIC_THROUGHPUT_RPS,
    KS_METRIC_FAULTS_SKIPPED,
    KS_METRIC_EVENTS,
    KS_METRIC_TRACE_HASH,
    KS_METRIC_COUNT
};

/* Returns the metric names in SPEC order (index = enum ks_metric); *count is
 * set to KS_METRIC_COUNT. Static storage. */
const char *const *ks_scenario_metric_names(size_t *count);

enum ks_expect_kind {
    KS_EXPECT_METRIC,           /* acked_lost = 0 */
    KS_EXPECT_PARTITION_LEADER, /* partition.orders-0.leader = 2  (-1: no leader) */
    KS_EXPECT_PARTITION_ISR,    /* partition.orders-0.isr = 2,3   (compared as sets;
                                      with < <= > >= the one value is an ISR size) */
    KS_EXPECT_PARTITION_LEADER_EPOCH,
    KS_EXPECT_PARTITION_HW /* the leader's final HW */
};

/* One [expect] line. Values are decimal numbers ("0", "1000", "12.5");
 * integer values are exact in `values` (|v| < 2^53). A list (more than one
 * value) is allowed only for isr and only with = or !=. trace_hash compares
 * as text: value_text against the 16-hex-digit hash. */
struct ks_expectation {
    char key[128];        /* as written: "partition.orders-0.isr" */
    char value_text[256]; /* as written, operator stripped: "2,3" */
    uint32_t line;        /* 0 when it came from --set */
    enum ks_expect_kind kind;
    enum ks_metric metric; /* KS_EXPECT_METRIC */
    struct ks_tp tp;       /* partition.* */
    enum ks_compare_op op;
    double values[KS_EXPECT_VALUE_COUNT_MAX]; /* isr lists are sorted ascending */
    uint32_t value_count;
};

/* Evaluates `actual OP expected`. */
bool ks_compare(enum ks_compare_op op, double actual, double expected);

/* ---- the scenario ------------------------------------------------------------ */

struct ks_scenario_raw; /* private: the assignments as read, for --set and re-finalize */

struct ks_scenario {
    /* [scenario] */
    char *name;                       /* name; default: file name without folder and .ini */
    char *description;                /* description; "" default */
    char *path;                       /* the file as given to load ("<name>" for load_from_data) */
    uint64_t seed;                    /* seed = 1 default; --seed: set this field after finalize
                                (or apply_set "scenario.seed=N" before it) */
    int64_t duration_ns;              /* duration = 60s default */
    bool final_heal;                  /* final.heal = true */
    int64_t final_drain_ns;           /* final.drain = 60s */
    int64_t unavailable_threshold_ns; /* unavailable.threshold = 1s (produce_unavailable_ms) */
    /* kafka.version = 4.0: the row of sim/kafka_versions.c whose defaults the
     * other sections took (static storage; the default row when not given) */
    const struct ks_kafka_version *kafka_version;

    /* [cluster]: world */
    int64_t network_latency_ns;             /* network.latency = 1ms */
    int64_t network_jitter_ns;              /* network.jitter = 0 */
    int64_t disk_fsync_latency_ns;          /* disk.fsync.latency = 2ms */
    uint64_t disk_bandwidth_bytes_per_s;    /* disk.bandwidth = 500MiB (per second); 0 = free */
    int64_t disk_writeback_expire_ns;       /* disk.writeback.expire = 30s; KS_INT64_UNSET never */
    int64_t disk_writeback_interval_ns;     /* disk.writeback.interval = 5s; KS_INT64_UNSET never */
    int64_t disk_dirty_limit_bytes;         /* disk.dirty.limit = 2GiB; 0 = none */
    int64_t disk_page_cache_bytes;          /* disk.page.cache = 10GiB; 0 = unlimited */
    struct ks_link_latency *link_latencies; /* owned; sorted by (broker_a, broker_b) */
    size_t link_latency_count;

    /* [cluster]: Kafka */
    struct ks_cluster_config cluster;
    struct ks_log_config log_defaults;  /* log.* broker defaults that topics inherit */
    int32_t default_replication_factor; /* default.replication.factor = 1 */
    int32_t num_partitions_default;     /* num.partitions = 1 */

    /* [topic NAME], in file order; every field filled (inherited defaults applied) */
    struct ks_topic_config *topics; /* owned */
    size_t topic_count;
    /* [producer NAME], [consumer NAME], in file order */
    struct ks_producer_config *producers; /* owned */
    size_t producer_count;
    struct ks_consumer_config *consumers; /* owned */
    size_t consumer_count;
    /* [fault NAME], in file order */
    struct ks_fault *faults; /* owned */
    size_t fault_count;
    /* [expect], in file order */
    struct ks_expectation *expectations; /* owned */
    size_t expectation_count;

    /* Several clusters: 0 for the one-cluster form ([cluster] or none), else
     * the [cluster NAME] sections in file order (the [cluster] fields above
     * hold clusters[0]'s values). topic_cluster[t], producer_cluster[p] and
     * consumer_cluster[c] give each one's cluster (0 in the one-cluster form). */
    struct ks_scenario_cluster *clusters; /* owned */
    size_t cluster_count;
    struct ks_cluster_link *cluster_links; /* owned; sorted by (cluster_a, cluster_b) */
    size_t cluster_link_count;
    int32_t *topic_cluster;    /* owned, [topic_count] */
    int32_t *producer_cluster; /* owned, [producer_count] */
    int32_t *consumer_cluster; /* owned, [consumer_count] */
    struct ks_mirror_spec *mirrors; /* owned, [mirror NAME] in file order */
    size_t mirror_count;

    bool finalized;              /* the fields above are valid */
    struct ks_scenario_raw *raw; /* owned, private */
};

/* ---- API ----------------------------------------------------------------------- */

/* Reads and checks a scenario file, then finalizes it. On success *out is a
 * new scenario owned by the caller (ks_scenario_free); on failure *out is
 * untouched and *error says "FILE:LINE: what is wrong". */
bool ks_scenario_load(const char *path, struct ks_scenario **out, GError **error);

/* Same as ks_scenario_load for text in memory; `name` stands for FILE in
 * messages and for path (tests, explore's generated files). */
bool ks_scenario_load_from_data(const char *name, const char *text, struct ks_scenario **out,
                                GError **error);

/* The same for `size` bytes that need not end in a NUL (a NUL inside is an
 * error with its line, as in a file). */
bool ks_scenario_load_from_bytes(const char *name, const void *data, size_t size,
                                 struct ks_scenario **out, GError **error);

/* Parse only: syntax, sections, keys and per-value checks; not finalized.
 * Follow with ks_scenario_apply_set* and ks_scenario_finalize.
 * ks_scenario_parse reads only a regular file of at most
 * KS_SCENARIO_FILE_BYTES_MAX bytes (KS_SCENARIO_ERROR_IO otherwise); every
 * text must be UTF-8 without NUL or control characters but tabs; a UTF-8 byte
 * order mark at the start is skipped. */
bool ks_scenario_parse(const char *path, struct ks_scenario **out, GError **error);
bool ks_scenario_parse_from_data(const char *name, const char *text, struct ks_scenario **out,
                                 GError **error);
bool ks_scenario_parse_from_bytes(const char *name, const void *data, size_t size,
                                  struct ks_scenario **out, GError **error);

/* Applies `section.name.key=value` (spaces around = allowed): scenario.duration=30s,
 * cluster.unclean.leader.election.enable=true, topic.orders.min.insync.replicas=2,
 * producer.p1.acks=1, consumer.c1.commit=atomic, fault.kill-leader.at=5s,
 * expect.acked_lost=>0. Topic, client and fault names must exist already (a
 * topic name may contain dots: the longest existing name wins). Checked by the
 * same key table; errors read "--set ASSIGNMENT: what is wrong". Leaves the
 * scenario unfinalized. */
bool ks_scenario_apply_set(struct ks_scenario *scenario, const char *assignment, GError **error);

/* Adds a whole section given as INI text, e.g. header "fault f3" and body
 * "at = 5s\naction = crash\ntarget = 2\n" (explore's generated faults).
 * `origin` names the text in errors ("explore"); lines count within body.
 * A section of that name must not exist yet. Leaves the scenario unfinalized. */
bool ks_scenario_add_section(struct ks_scenario *scenario, const char *header, const char *body,
                             const char *origin, GError **error);

/* Removes every [fault ...] section (explore replaces the schedule). */
void ks_scenario_remove_faults(struct ks_scenario *scenario);

/* Fills defaults, resolves names, checks cross-field rules, and (re)builds
 * every field. Idempotent. */
bool ks_scenario_finalize(struct ks_scenario *scenario, GError **error);

/* A deep copy, rebuilt from the assignments (finalized if the source was);
 * fields edited directly in the source are not carried over. Owned by the caller. */
struct ks_scenario *ks_scenario_copy(const struct ks_scenario *scenario);

void ks_scenario_free(struct ks_scenario *scenario); /* NULL is a no-op */
typedef struct ks_scenario ks_scenario;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ks_scenario, ks_scenario_free)

/* Canonical JSON of every effective setting (defaults filled in), Kafka's
 * names and units (ms, bytes), keys in a fixed order: equal scenarios give
 * byte-identical text. For runs.params. The seed is left out (runs.seed has
 * it), so runs that differ only by seed have equal params. Requires
 * finalized. Owned: g_free. */
char *ks_scenario_params_json(const struct ks_scenario *scenario);

/* Writes the scenario back as an INI file: every assignment as read or set
 * (--set values included, in section order), one key per line, so that loading
 * the output gives an equal scenario (equal params JSON and seed). A finalized
 * scenario whose name came from its file name gets `name = NAME` in
 * [scenario], so the output loads with that name under any file name. */
void ks_scenario_write_ini(FILE *out, const struct ks_scenario *scenario);

/* Writes the Markdown key reference (docs/scenario-format.md is exactly this). */
void ks_scenario_write_key_reference(FILE *out);

/* Writes the Markdown list of Kafka settings ksim does not model, by section
 * (docs/model.md holds exactly this between its "not-modelled" markers). */
void ks_scenario_write_not_modelled(FILE *out);

/* ---- helpers ------------------------------------------------------------------- */

/* Parses a duration as a scenario file writes it: a plain decimal and a unit
 * (ns us ms s m h), exact to the nanosecond ("12s", "1.5s", "250ms"); no
 * sign, spaces, exponent, hex, nan or inf, and at most INT64_MAX ns. On
 * failure returns false and sets *error (KS_SCENARIO_ERROR_VALUE) to what is
 * wrong, without a location. For command-line times such as describe --at. */
bool ks_scenario_parse_duration(const char *text, int64_t *out_ns, GError **error);

/* Indexes by name, -1 if absent. Work on a finalized scenario. */
int32_t ks_scenario_topic_index(const struct ks_scenario *scenario, const char *name);
int32_t ks_scenario_producer_index(const struct ks_scenario *scenario, const char *name);
int32_t ks_scenario_consumer_index(const struct ks_scenario *scenario, const char *name);
int32_t ks_scenario_fault_index(const struct ks_scenario *scenario, const char *name);
int32_t ks_scenario_cluster_index(const struct ks_scenario *scenario, const char *name);
/* A shallow copy of scenario as the one-cluster scenario of cluster index:
 * its [cluster] settings, no faults, expectations, clusters or mirrors;
 * topics and clients still the whole scenario's (a caller replaces them).
 * Borrows every pointer: never free it. */
void ks_scenario_cluster_view(const struct ks_scenario *scenario, int32_t index,
                              struct ks_scenario *out);
/* The one-way latency between two clusters (network.latency.A-B in [scenario]). */
int64_t ks_scenario_cluster_link_latency(const struct ks_scenario *scenario, int32_t a, int32_t b);

/* Parses "orders-0" (split at the last '-') against the scenario's topics. */
bool ks_scenario_parse_tp(const struct ks_scenario *scenario, const char *text, struct ks_tp *out);

/* Formats "orders-0" into buffer (always NUL-terminated); returns buffer. */
char *ks_scenario_format_tp(const struct ks_scenario *scenario, struct ks_tp tp, char *buffer,
                            size_t buffer_bytes);

/* The brokers a target names whatever the cluster's state: a broker id, its
 * rack's brokers, every broker (all). Sets in[id - 1] for each and returns
 * true; false (in untouched) for a target resolved only when it fires
 * (leader(TP), random, ...) or one that names no broker. */
bool ks_scenario_target_brokers(const struct ks_scenario *scenario, const struct ks_target *target,
                                bool *in);

/* Formats a target / trigger as written in a file ("leader(orders-0)",
 * "hw(2, orders-0) >= 2"). Owned: g_free. */
char *ks_scenario_format_target(const struct ks_scenario *scenario, const struct ks_target *target);
char *ks_scenario_format_trigger(const struct ks_scenario *scenario,
                                 const struct ks_trigger *trigger);

/* Names as written in files: "crash", "==" / ">=", "power". Static storage. */
const char *ks_fault_action_name(enum ks_fault_action action);
const char *ks_compare_op_name(enum ks_compare_op op); /* "=", "!=", "<", ... */

/* Line of `key` in `section` ("cluster", "topic orders", "fault split",
 * "expect"); 0 if the key was not in the file (default or --set). */
uint32_t ks_scenario_key_line(const struct ks_scenario *scenario, const char *section,
                              const char *key);
