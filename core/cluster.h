/*
** core/cluster.h: the Kafka cluster model as the driver (sim/) sees it:
** brokers, the controller, producers and consumers on one world, built from
** frozen configs, observed through callbacks, steered by fault hooks.
**
** Node ids (the world's nodes) are fixed by the spec:
**   0                      the driver (sim/)
**   1 .. B                 broker ids 1..B (node id == broker id)
**   B+1                    the controller (KRaft-like, does not fail by itself)
**   B+2 .. B+1+P           producers, in spec order
**   B+2+P .. B+1+P+C       consumers, in spec order
**
** Topics are addressed by index in the spec's topic array; the internal topic
** __consumer_offsets, when any consumer exists, gets index topic_count (the
** last one), so ks_cluster_topic_count() may be one more than the spec's.
*/
#pragma once

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
};

/* ---- what the cluster reports ------------------------------------------ */

enum ks_cluster_event_kind {
    KS_EV_TOPIC_CREATED,
    KS_EV_LEADER_ELECTED,    /* a leader change after creation (counted in leader_elections) */
    KS_EV_UNCLEAN_ELECTION,  /* also a leader election, of a replica outside the ISR */
    KS_EV_NO_LEADER,         /* a partition lost its leader and none could be elected */
    KS_EV_ISR_SHRINK,
    KS_EV_ISR_EXPAND,
    KS_EV_TRUNCATION,        /* a follower dropped offsets */
    KS_EV_RECOVERY,          /* log recovery after an unclean shutdown */
    KS_EV_BROKER_FENCED,     /* session expired */
    KS_EV_BROKER_UNFENCED,
    KS_EV_BROKER_STARTED,
    KS_EV_PRODUCE_REFUSED,   /* NOT_ENOUGH_REPLICAS and friends */
    KS_EV_PRODUCER_ERROR,    /* a client-side timeout, a failed record */
    KS_EV_REBALANCE,         /* a consumer group's new generation */
    KS_EV_OFFSET_COMMIT,
    KS_EV_OFFSET_RESET,      /* a consumer fell back to auto.offset.reset */
    KS_EV_RETENTION,         /* segments deleted */
    KS_EV_COMPACTION,
    KS_EV_INFO,              /* anything else worth a timeline line */
    KS_EV_KIND_COUNT
};

const char *ks_cluster_event_kind_name(enum ks_cluster_event_kind kind); /* "leader_elected" */

struct ks_cluster_event {
    ks_time_ns at_ns;
    enum ks_cluster_event_kind kind;
    int32_t broker;          /* broker id, or -1 */
    int32_t topic_index;     /* or -1 */
    int32_t partition;       /* or -1 */
    const char *detail;      /* borrowed, one line: "leader 2 epoch 3 isr 2,3" */
    const char *explain;     /* borrowed, sentences for --explain; may be NULL */
};

enum ks_record_outcome_kind { KS_OUTCOME_ACKED, KS_OUTCOME_FAILED, KS_OUTCOME_UNKNOWN };

struct ks_record_outcome {
    int32_t producer_index;
    int64_t seq;             /* the producer's record number, from 0 */
    const char *key;         /* borrowed text as sent; NULL for a null key */
    int32_t topic_index;
    int32_t partition;
    int64_t offset;          /* -1 if unknown */
    ks_time_ns sent_ns;
    ks_time_ns acked_ns;     /* when the outcome was learned */
    enum ks_record_outcome_kind outcome;
    int32_t acked_broker;    /* acked: the broker that answered (acks=0: the one written to); -1 */
    int32_t acked_leader_epoch; /* acked: its leader epoch from the response; -1 unknown */
};

struct ks_consumed_record {
    int32_t consumer_index;
    int32_t generation;
    int32_t topic_index;
    int32_t partition;
    int64_t offset;
    int32_t producer_index;  /* from the identity header; -1 if absent */
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
    KS_POSITION_ASSIGNED,  /* resumes at the committed (or sink) offset */
    KS_POSITION_RESET,     /* auto.offset.reset: no committed offset, or out of range */
    KS_POSITION_REWIND,    /* scenario action rewind (KafkaConsumer#seek) */
    KS_POSITION_COMMITTED  /* a commit of `offset` was acknowledged */
};

struct ks_consumer_position {
    int32_t consumer_index;
    int32_t topic_index;
    int32_t partition;
    int64_t offset;          /* the next offset to process (committed: the offset committed) */
    enum ks_position_kind kind;
    ks_time_ns at_ns;
};

struct ks_cluster_observer {
    void *context;
    void (*on_event)(void *context, const struct ks_cluster_event *event);
    void (*on_record)(void *context, const struct ks_record_outcome *outcome);
    void (*on_consumed)(void *context, const struct ks_consumed_record *consumed);
    void (*on_position)(void *context, const struct ks_consumer_position *position); /* may be NULL */
};

/* ---- building ----------------------------------------------------------- */

uint32_t ks_cluster_node_count(const struct ks_cluster_spec *spec); /* including node 0 */
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
/* After ks_world_node_restart(node): reload from disk (log recovery if the
 * shutdown was unclean), re-arm timers, rejoin. */
void ks_cluster_on_node_restarted(struct ks_cluster *cluster, ks_node_id node);
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
                              int32_t topic_index, int32_t partition,
                              struct ks_replica_state *out);
/* The replica's open log (borrowed; valid until the next event), or NULL if
 * the broker is down or does not host it. The checker reads it. */
struct ks_log *ks_cluster_replica_log(struct ks_cluster *cluster, int32_t broker_id,
                                      int32_t topic_index, int32_t partition);
bool ks_cluster_broker_is_up(const struct ks_cluster *cluster, int32_t broker_id);

int64_t ks_cluster_producer_acked_count(const struct ks_cluster *cluster, int32_t producer_index);
int64_t ks_cluster_producer_sent_count(const struct ks_cluster *cluster, int32_t producer_index);
