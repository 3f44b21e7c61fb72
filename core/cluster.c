/*
** core/cluster.c: the cluster model as the driver sees it (core/cluster.h):
** builds brokers, the controller, producers and consumers on one world,
** forwards the driver's fault hooks to them and answers the driver's queries.
**
** The topic array the brokers and the controller see is the spec's topics
** plus, when consumers exist, the internal topic __consumer_offsets at index
** spec->topic_count: offsets.topic.num.partitions partitions, replication
** factor min(offsets.topic.replication.factor, brokers), the broker's
** min.insync.replicas,
** cleanup.policy=compact, segment.bytes 100 MiB (offsets.topic.segment.bytes).
** When a producer sets transactional.id, the internal topic __transaction_state
** follows it (after __consumer_offsets when both exist):
** transaction.state.log.num.partitions partitions, replication factor
** min(transaction.state.log.replication.factor, brokers),
** transaction.state.log.min.isr, compacted, 100 MiB segments
** (TransactionStateManager.transactionTopicConfigs).
**
** The controller is one node (`controllers = 1`, see core/controller.c). A
** crash of it is an outage: the world drops its timers and the messages sent
** to it, so nobody fences brokers, elects leaders or changes an ISR until it
** returns; brokers keep serving with the metadata they last had. Its state
** survives the crash (process or power): a KRaft controller appends every
** change to its metadata log, and KafkaRaftClient.flushLeaderLog flushes the
** log in the same step that advances the leader's end offset, before the
** controller is told the records are committed; so what it acted on is on
** disk. On its
** return it gives every registered broker a fresh session, as
** ClusterControlManager.activate does (BrokerHeartbeatManager.register sets
** lastContactNs to now). Both are recorded as INFO events.
*/
#include "cluster.h"

#include "base.h"
#include "broker.h"
#include "controller.h"
#include "raft.h"
#include "zk.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consumer.h"
#include "producer.h"

#define OFFSETS_TOPIC_NAME "__consumer_offsets"
#define TXN_TOPIC_NAME     "__transaction_state"

struct ks_cluster {
    ks_world *world;
    const struct ks_cluster_spec *spec;         /* not owned */
    const struct ks_cluster_observer *observer; /* not owned */
    struct ks_topic_config *topics;             /* owned: spec's + internal */
    int32_t topic_count;
    struct ks_broker **brokers;       /* [broker_count], index id-1 */
    struct ks_controller *controller; /* controller = kraft: the only one, or controller(1) */
    /* controllers = 3 or 5: every voter ([0] is `controller`), and the
     * cross-voter checks of core/raft.h. */
    struct ks_controller *voters[KS_RAFT_VOTERS_MAX];
    struct ks_raft *voter_rafts[KS_RAFT_VOTERS_MAX];
    int32_t voter_count;
    struct ks_raft_quorum_checker *quorum_checker;
    struct ks_zk *zk; /* controller = zookeeper (the controller is a broker) */
    struct ks_producer **producers;
    struct ks_consumer **consumers;
};

const char *ks_cluster_event_kind_name(enum ks_cluster_event_kind kind)
{
    switch (kind) {
    case KS_EV_TOPIC_CREATED: return "topic_created";
    case KS_EV_LEADER_ELECTED: return "leader_elected";
    case KS_EV_UNCLEAN_ELECTION: return "unclean_election";
    case KS_EV_NO_LEADER: return "no_leader";
    case KS_EV_ISR_SHRINK: return "isr_shrink";
    case KS_EV_ISR_EXPAND: return "isr_expand";
    case KS_EV_TRUNCATION: return "truncation";
    case KS_EV_RECOVERY: return "recovery";
    case KS_EV_BROKER_FENCED: return "broker_fenced";
    case KS_EV_BROKER_UNFENCED: return "broker_unfenced";
    case KS_EV_BROKER_STARTED: return "broker_started";
    case KS_EV_PRODUCE_REFUSED: return "produce_refused";
    case KS_EV_PRODUCER_ERROR: return "producer_error";
    case KS_EV_REBALANCE: return "rebalance";
    case KS_EV_OFFSET_COMMIT: return "offset_commit";
    case KS_EV_TXN_END: return "txn_end";
    case KS_EV_TXN_STATE: return "txn_state";
    case KS_EV_OFFSET_RESET: return "offset_reset";
    case KS_EV_RETENTION: return "retention";
    case KS_EV_COMPACTION: return "compaction";
    case KS_EV_INFO: return "info";
    case KS_EV_ELR_CHANGE: return "elr_change";
    case KS_EV_ZK_SESSION_EXPIRED: return "zk_session_expired";
    case KS_EV_CONTROLLER_ELECTED: return "controller_elected";
    case KS_EV_CONTROLLER_RESIGNED: return "controller_resigned";
    case KS_EV_STALE_CONTROLLER: return "stale_controller";
    case KS_EV_BROKER_STOPPED: return "broker_stopped";
    case KS_EV_KIND_COUNT: break;
    }
    return "unknown";
}

const char *ks_event_reason_name(enum ks_event_reason reason)
{
    switch (reason) {
    case KS_REASON_NONE: return "none";
    case KS_REASON_SESSION_EXPIRED: return "session_expired";
    case KS_REASON_BROKER_RESTARTED: return "broker_restarted";
    case KS_REASON_REPLICA_BACK: return "replica_back";
    case KS_REASON_PREFERRED_LEADER: return "preferred_leader";
    case KS_REASON_FOLLOWER_CAUGHT_UP: return "follower_caught_up";
    case KS_REASON_FOLLOWER_LAGGING: return "follower_lagging";
    case KS_REASON_BROKER_FENCED: return "broker_fenced";
    case KS_REASON_UNCLEAN_SHUTDOWN: return "unclean_shutdown";
    case KS_REASON_TRUNCATE_TO_HIGH_WATERMARK: return "truncate_to_high_watermark";
    case KS_REASON_TRUNCATE_DIVERGING_EPOCH: return "truncate_diverging_epoch";
    case KS_REASON_TRUNCATE_NO_COMMON_EPOCH: return "truncate_no_common_epoch";
    case KS_REASON_TRUNCATE_TO_LEADER_LEO: return "truncate_to_leader_leo";
    case KS_REASON_TRUNCATE_REALIGN_BATCH: return "truncate_realign_batch";
    case KS_REASON_NOT_ENOUGH_REPLICAS: return "not_enough_replicas";
    case KS_REASON_TXN_NOT_VERIFIED: return "txn_not_verified";
    case KS_REASON_RETRIES_EXHAUSTED: return "retries_exhausted";
    case KS_REASON_ERROR_AFTER_DELIVERY_TIMEOUT: return "error_after_delivery_timeout";
    case KS_REASON_ERROR_NOT_RETRIABLE: return "error_not_retriable";
    case KS_REASON_DELIVERY_TIMEOUT: return "delivery_timeout";
    case KS_REASON_DELIVERY_TIMEOUT_IN_FLIGHT: return "delivery_timeout_in_flight";
    case KS_REASON_BUFFER_FULL_MAX_BLOCK: return "buffer_full_max_block";
    case KS_REASON_NO_METADATA_MAX_BLOCK: return "no_metadata_max_block";
    case KS_REASON_PRODUCER_CRASHED: return "producer_crashed";
    case KS_REASON_RECORD_TOO_LARGE: return "record_too_large";
    case KS_REASON_CONNECTION_BROKER_DOWN: return "connection_broker_down";
    case KS_REASON_CONNECTION_TIMEOUT: return "connection_timeout";
    case KS_REASON_CONNECTION_SETUP_TIMEOUT: return "connection_setup_timeout";
    case KS_REASON_CONNECTION_REFUSED: return "connection_refused";
    case KS_REASON_MEMBER_JOINED: return "member_joined";
    case KS_REASON_MEMBER_SESSION_TIMEOUT: return "member_session_timeout";
    case KS_REASON_MEMBER_NOT_REJOINED: return "member_not_rejoined";
    case KS_REASON_MEMBER_LEFT: return "member_left";
    case KS_REASON_GROUP_APPEND_FAILED: return "group_append_failed";
    case KS_REASON_NO_COMMITTED_OFFSET: return "no_committed_offset";
    case KS_REASON_OFFSET_OUT_OF_RANGE: return "offset_out_of_range";
    case KS_REASON_REWIND: return "rewind";
    case KS_REASON_NO_COMMITTED_OFFSET_NONE: return "no_committed_offset_none";
    case KS_REASON_OFFSET_OUT_OF_RANGE_NONE: return "offset_out_of_range_none";
    case KS_REASON_REGISTRATION_REFUSED: return "registration_refused";
    case KS_REASON_SINK_FENCED: return "sink_fenced";
    case KS_REASON_POLL_INTERVAL_EXCEEDED: return "poll_interval_exceeded";
    case KS_REASON_ZK_NODE_EXISTS: return "zk_node_exists";
    case KS_REASON_ZK_BAD_VERSION: return "zk_bad_version";
    case KS_REASON_ZK_NO_SESSION: return "zk_no_session";
    case KS_REASON_ZNODE_DELETED: return "znode_deleted";
    case KS_REASON_CONTROLLER_DOWN: return "controller_down";
    case KS_REASON_CONTROLLER_BACK: return "controller_back";
    case KS_REASON_CONTROLLED_SHUTDOWN: return "controlled_shutdown";
    case KS_REASON_SHUTDOWN_REQUESTED: return "shutdown_requested";
    case KS_REASON_SHUTDOWN_TIMED_OUT: return "shutdown_timed_out";
    case KS_REASON_SHUTDOWN_NOT_CONTROLLED: return "shutdown_not_controlled";
    case KS_REASON_INVALID_SESSION_TIMEOUT: return "invalid_session_timeout";
    case KS_REASON_LOG_TRUNCATION: return "log_truncation";
    case KS_REASON_LOG_TRUNCATION_NONE: return "log_truncation_none";
    case KS_REASON_TXN_COMMITTED: return "txn_committed";
    case KS_REASON_TXN_ABORTED: return "txn_aborted";
    case KS_REASON_TXN_FENCED: return "txn_fenced";
    case KS_REASON_TXN_ABANDONED: return "txn_abandoned";
    case KS_REASON_TXN_PREPARE_COMMIT: return "txn_prepare_commit";
    case KS_REASON_TXN_PREPARE_ABORT: return "txn_prepare_abort";
    case KS_REASON_TXN_COMPLETE_COMMIT: return "txn_complete_commit";
    case KS_REASON_TXN_COMPLETE_ABORT: return "txn_complete_abort";
    case KS_REASON_TXN_LOADED: return "txn_loaded";
    case KS_REASON_SHUTDOWN_ATTEMPTS_FAILED: return "shutdown_attempts_failed";
    case KS_REASON_COUNT: break;
    }
    return "unknown";
}

/* ---- node layout ------------------------------------------------------------- */

/* The node count the controllers take: controllers = N KRaft voters, or
 * the one ZooKeeper node. */
static int32_t controller_node_count(const struct ks_cluster_spec *spec)
{
    if (spec->cluster->controller_model == KS_CONTROLLER_MODEL_ZOOKEEPER ||
        spec->cluster->controller_count < 1) {
        return 1;
    }
    return spec->cluster->controller_count;
}

uint32_t ks_cluster_node_count(const struct ks_cluster_spec *spec)
{
    return (uint32_t)(1 + spec->cluster->broker_count + controller_node_count(spec) +
                      spec->producer_count + spec->consumer_count);
}

ks_node_id ks_cluster_controller_voter_node(const struct ks_cluster_spec *spec, int32_t index)
{
    ks_assert(index >= 0 && index < controller_node_count(spec));
    return (ks_node_id)(spec->cluster->broker_count + 1 + index);
}

ks_node_id ks_cluster_controller_node(const struct ks_cluster_spec *spec)
{
    return (ks_node_id)(spec->cluster->broker_count + 1);
}

ks_node_id ks_cluster_producer_node(const struct ks_cluster_spec *spec, int32_t producer_index)
{
    ks_assert(producer_index >= 0 && producer_index < spec->producer_count);
    return (ks_node_id)(spec->cluster->broker_count + 1 + controller_node_count(spec) +
                        producer_index);
}

ks_node_id ks_cluster_consumer_node(const struct ks_cluster_spec *spec, int32_t consumer_index)
{
    ks_assert(consumer_index >= 0 && consumer_index < spec->consumer_count);
    return (ks_node_id)(spec->cluster->broker_count + 1 + controller_node_count(spec) +
                        spec->producer_count + consumer_index);
}

/* ---- building ------------------------------------------------------------------ */

static void offsets_topic_config(const struct ks_cluster_spec *spec, struct ks_topic_config *out)
{
    /* A config built by hand may leave the offsets topic unset: Kafka's defaults. */
    struct ks_cluster_config defaults;
    ks_cluster_config_defaults(&defaults);
    ks_topic_config_defaults(out);
    g_strlcpy(out->name, OFFSETS_TOPIC_NAME, sizeof out->name);
    out->partition_count = spec->cluster->offsets_topic_partition_count > 0
                               ? spec->cluster->offsets_topic_partition_count
                               : defaults.offsets_topic_partition_count;
    int32_t rf = spec->cluster->offsets_topic_replication_factor;
    if (rf < 1) {
        rf = defaults.offsets_topic_replication_factor;
    }
    if (rf > spec->cluster->broker_count) {
        rf = spec->cluster->broker_count;
    }
    out->replication_factor = rf;
    /* GroupCoordinator creates the topic with the broker's defaults, so its
     * min.insync.replicas is the broker's (Kafka's offsets topic config sets
     * only cleanup.policy, segment.bytes and compression.type); acks=all
     * commits are refused while its ISR is smaller (capped at the RF by
     * ks_topic_min_isr, as for any topic). */
    out->min_insync_replicas = spec->cluster->min_insync_replicas > 0
                                   ? spec->cluster->min_insync_replicas
                                   : defaults.min_insync_replicas;
    out->unclean_leader_election_enable = spec->cluster->unclean_leader_election_enable;
    /* Broker log defaults from the first user topic when there is one (they
     * carry the cluster's log.* settings), else Kafka's; then the internal
     * topic's own. */
    if (spec->topic_count > 0) {
        out->log = spec->topics[0].log;
    }
    out->log.segment_bytes = 104857600; /* offsets.topic.segment.bytes */
    out->log.retention_ns = -1;
    out->log.retention_bytes = -1;
    out->log.cleanup_compact = true;
    out->log.cleanup_delete = false;
    /* GroupCoordinator creates it with compression.type=producer. */
    ks_compression_config_init(&out->compression);
    out->compression.codec = KS_COMPRESSION_PRODUCER;
}

/* True when some producer is transactional: the cluster then has
 * __transaction_state. */
bool ks_cluster_spec_has_txn(const struct ks_cluster_spec *spec)
{
    for (int32_t i = 0; i < spec->producer_count; i++) {
        if (spec->producers[i].transactional_id[0] != 0) {
            return true;
        }
    }
    return false;
}

static void txn_topic_config(const struct ks_cluster_spec *spec, struct ks_topic_config *out)
{
    /* The offsets topic's broker-default base, then the transaction log's
     * own settings (TransactionStateManager.transactionTopicConfigs:
     * compact, segment.bytes 100 MiB, unclean election off, min.isr). */
    offsets_topic_config(spec, out);
    g_strlcpy(out->name, TXN_TOPIC_NAME, sizeof out->name);
    struct ks_cluster_config defaults;
    ks_cluster_config_defaults(&defaults);
    const struct ks_cluster_config *c = spec->cluster;
    out->partition_count = c->txn_topic_partition_count > 0 ? c->txn_topic_partition_count
                                                            : defaults.txn_topic_partition_count;
    int32_t rf = c->txn_topic_replication_factor > 0 ? c->txn_topic_replication_factor
                                                     : defaults.txn_topic_replication_factor;
    out->replication_factor = rf > c->broker_count ? c->broker_count : rf;
    out->min_insync_replicas =
        c->txn_topic_min_isr > 0 ? c->txn_topic_min_isr : defaults.txn_topic_min_isr;
    out->unclean_leader_election_enable = false;
}

struct ks_cluster *ks_cluster_new(ks_world *world, const struct ks_cluster_spec *spec,
                                  const struct ks_cluster_observer *observer)
{
    struct ks_cluster *cluster = calloc(1, sizeof *cluster);
    ks_assert(cluster != NULL);
    cluster->world = world;
    cluster->spec = spec;
    cluster->observer = observer;
    int32_t broker_count = spec->cluster->broker_count;
    ks_assert(broker_count >= 1 && broker_count <= KS_BROKER_COUNT_MAX);
    bool has_txn = ks_cluster_spec_has_txn(spec);
    cluster->topic_count =
        spec->topic_count + (spec->consumer_count > 0 ? 1 : 0) + (has_txn ? 1 : 0);
    cluster->topics = calloc((size_t)(cluster->topic_count > 0 ? cluster->topic_count : 1),
                             sizeof(struct ks_topic_config));
    ks_assert(cluster->topics != NULL);
    for (int32_t t = 0; t < spec->topic_count; t++) {
        ks_topic_config_copy(&cluster->topics[t], &spec->topics[t]);
    }
    if (spec->consumer_count > 0) {
        offsets_topic_config(spec, &cluster->topics[spec->topic_count]);
    }
    if (has_txn) {
        txn_topic_config(spec, &cluster->topics[cluster->topic_count - 1]);
    }
    cluster->brokers = calloc((size_t)broker_count, sizeof(struct ks_broker *));
    ks_assert(cluster->brokers != NULL);
    for (int32_t i = 0; i < broker_count; i++) {
        cluster->brokers[i] =
            ks_broker_new(world, spec, cluster->topics, cluster->topic_count, i + 1, observer);
    }
    if (spec->cluster->controller_model == KS_CONTROLLER_MODEL_ZOOKEEPER) {
        cluster->zk = ks_zk_new(world, spec, cluster->topics, cluster->topic_count,
                                ks_cluster_controller_node(spec), observer);
    } else if (controller_node_count(spec) == 1) {
        cluster->controller = ks_controller_new(world, spec, cluster->topics, cluster->topic_count,
                                                ks_cluster_controller_node(spec), observer);
    } else {
        cluster->voter_count = controller_node_count(spec);
        ks_node_id voters[KS_RAFT_VOTERS_MAX];
        for (int32_t i = 0; i < cluster->voter_count; i++) {
            voters[i] = ks_cluster_controller_voter_node(spec, i);
        }
        struct ks_raft_config raft_config;
        ks_raft_config_from_cluster(spec->cluster, &raft_config);
        for (int32_t i = 0; i < cluster->voter_count; i++) {
            cluster->voters[i] =
                ks_controller_new_voter(world, spec, cluster->topics, cluster->topic_count, i,
                                        voters, cluster->voter_count, &raft_config, observer);
            cluster->voter_rafts[i] = ks_controller_raft(cluster->voters[i]);
        }
        cluster->quorum_checker = ks_raft_quorum_checker_new();
        for (int32_t i = 0; i < cluster->voter_count; i++) {
            ks_controller_set_quorum_check(cluster->voters[i], cluster->voter_rafts,
                                           cluster->voter_count, cluster->quorum_checker);
        }
        cluster->controller = cluster->voters[0];
    }
    if (spec->producer_count > 0) {
        cluster->producers = calloc((size_t)spec->producer_count, sizeof(struct ks_producer *));
        ks_assert(cluster->producers != NULL);
        for (int32_t i = 0; i < spec->producer_count; i++) {
            cluster->producers[i] = ks_producer_new(world, spec, i, observer);
        }
    }
    if (spec->consumer_count > 0) {
        cluster->consumers = calloc((size_t)spec->consumer_count, sizeof(struct ks_consumer *));
        ks_assert(cluster->consumers != NULL);
        for (int32_t i = 0; i < spec->consumer_count; i++) {
            cluster->consumers[i] = ks_consumer_new(world, spec, i, observer);
        }
    }
    /* A processor's consumer feeds its producer (consume-transform-produce). */
    for (int32_t i = 0; i < spec->producer_count; i++) {
        int32_t consumer = spec->producers[i].input_consumer_index;
        if (consumer >= 0) {
            ks_assert(consumer < spec->consumer_count);
            ks_consumer_set_output(cluster->consumers[consumer], cluster->producers[i]);
        }
    }
    return cluster;
}

void ks_cluster_start(struct ks_cluster *cluster)
{
    if (cluster->zk != NULL) {
        /* Topics exist in ZooKeeper before the brokers connect. */
        ks_zk_start(cluster->zk);
    }
    for (int32_t i = 0; i < cluster->spec->cluster->broker_count; i++) {
        ks_broker_start(cluster->brokers[i]);
    }
    if (cluster->voter_count > 1) {
        for (int32_t i = 0; i < cluster->voter_count; i++) {
            ks_controller_start_voter(cluster->voters[i], i == 0 ? NULL : cluster->voters[0]);
        }
    } else if (cluster->controller != NULL) {
        ks_controller_start(cluster->controller);
    }
    for (int32_t i = 0; i < cluster->spec->producer_count; i++) {
        if (cluster->producers[i] != NULL) {
            ks_producer_start(cluster->producers[i]);
        }
    }
    for (int32_t i = 0; i < cluster->spec->consumer_count; i++) {
        if (cluster->consumers[i] != NULL) {
            ks_consumer_start(cluster->consumers[i]);
        }
    }
}

void ks_cluster_free(struct ks_cluster *cluster)
{
    if (cluster == NULL) {
        return;
    }
    for (int32_t i = 0; i < cluster->spec->producer_count; i++) {
        if (cluster->producers[i] != NULL) {
            ks_producer_free(cluster->producers[i]);
        }
    }
    for (int32_t i = 0; i < cluster->spec->consumer_count; i++) {
        if (cluster->consumers[i] != NULL) {
            ks_consumer_free(cluster->consumers[i]);
        }
    }
    free(cluster->producers);
    free(cluster->consumers);
    for (int32_t i = 0; i < cluster->spec->cluster->broker_count; i++) {
        ks_broker_free(cluster->brokers[i]);
    }
    free(cluster->brokers);
    if (cluster->voter_count > 1) {
        for (int32_t i = 0; i < cluster->voter_count; i++) {
            ks_controller_free(cluster->voters[i]);
        }
        ks_raft_quorum_checker_free(cluster->quorum_checker);
    } else {
        ks_controller_free(cluster->controller);
    }
    ks_zk_free(cluster->zk);
    for (int32_t t = 0; t < cluster->topic_count; t++) {
        ks_topic_config_deinit(&cluster->topics[t]);
    }
    free(cluster->topics);
    free(cluster);
}

/* The controller whose view the driver's queries read: the only one; with
 * a quorum the active controller (the up one of the highest epoch), else the
 * voter that has committed the most. */
static const struct ks_controller *reference_controller(const struct ks_cluster *cluster)
{
    if (cluster->voter_count <= 1) {
        return cluster->controller;
    }
    const struct ks_controller *best = NULL;
    int32_t best_epoch = -1;
    for (int32_t i = 0; i < cluster->voter_count; i++) {
        const struct ks_controller *voter = cluster->voters[i];
        ks_node_id node = ks_cluster_controller_voter_node(cluster->spec, i);
        int32_t epoch = ks_raft_epoch(cluster->voter_rafts[i]);
        if (ks_controller_is_active(voter) && ks_world_node_is_up(cluster->world, node) &&
            epoch > best_epoch) {
            best = voter;
            best_epoch = epoch;
        }
    }
    if (best != NULL) {
        return best;
    }
    best = cluster->voters[0];
    for (int32_t i = 1; i < cluster->voter_count; i++) {
        if (ks_controller_metadata_version(cluster->voters[i]) >
            ks_controller_metadata_version(best)) {
            best = cluster->voters[i];
        }
    }
    return best;
}

/* The partition's state as the cluster's source of truth holds it: the
 * KRaft controller, or ZooKeeper's state znode. */
static const struct ks_partition_state *partition_state(const struct ks_cluster *cluster,
                                                        int32_t topic_index, int32_t partition)
{
    if (cluster->zk != NULL) {
        return ks_zk_partition(cluster->zk, topic_index, partition);
    }
    return ks_controller_partition(reference_controller(cluster), topic_index, partition);
}

/* ---- fault hooks ------------------------------------------------------------------ */

/* Which object a node is: 'b' broker, 'c' controller, 'p' producer, 'k' consumer. */
static char node_kind(const struct ks_cluster *cluster, ks_node_id node, int32_t *index_out)
{
    const struct ks_cluster_spec *spec = cluster->spec;
    int32_t b = spec->cluster->broker_count;
    int32_t n = (int32_t)node;
    if (n >= 1 && n <= b) {
        *index_out = n - 1;
        return 'b';
    }
    int32_t c = controller_node_count(spec);
    if (n >= b + 1 && n <= b + c) {
        *index_out = n - b - 1;
        return 'c';
    }
    if (n >= b + 1 + c && n < b + 1 + c + spec->producer_count) {
        *index_out = n - b - 1 - c;
        return 'p';
    }
    if (n >= b + 1 + c + spec->producer_count &&
        n < b + 1 + c + spec->producer_count + spec->consumer_count) {
        *index_out = n - b - 1 - c - spec->producer_count;
        return 'k';
    }
    *index_out = -1;
    return '?';
}

static void controller_fault_note(struct ks_cluster *cluster, enum ks_event_reason reason)
{
    if (cluster->observer == NULL || cluster->observer->on_event == NULL) {
        return;
    }
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, ks_world_now_ns(cluster->world), KS_EV_INFO);
    event.reason = reason;
    cluster->observer->on_event(cluster->observer->context, &event);
}

void ks_cluster_on_broker_exited(struct ks_cluster *cluster, int32_t broker_id)
{
    ks_assert(broker_id >= 1 && broker_id <= cluster->spec->cluster->broker_count);
    for (int32_t i = 0; i < cluster->spec->producer_count; i++) {
        if (cluster->producers[i] != NULL) {
            ks_producer_on_broker_down(cluster->producers[i], broker_id);
        }
    }
    for (int32_t i = 0; i < cluster->spec->consumer_count; i++) {
        if (cluster->consumers[i] != NULL) {
            ks_consumer_on_broker_down(cluster->consumers[i], broker_id);
        }
    }
}

void ks_cluster_on_node_crashed(struct ks_cluster *cluster, ks_node_id node)
{
    int32_t index = -1;
    switch (node_kind(cluster, node, &index)) {
    case 'b':
        ks_broker_on_crash(cluster->brokers[index]);
        /* The crashed process's connections are reset (its host's kernel
         * answers with RST): clients see the disconnect at once, unlike a
         * network partition, where their requests time out. */
        ks_cluster_on_broker_exited(cluster, index + 1);
        break;
    case 'c':
        if (cluster->voter_count > 1) {
            /* One voter of a quorum: the others elect a new leader if it led
             * (core/raft.c); nothing stops. */
            break;
        }
        if (cluster->zk == NULL) {
            controller_fault_note(cluster, KS_REASON_CONTROLLER_DOWN);
        }
        /* ZooKeeper keeps its znodes and sessions on disk (core/zk.c). */
        break;
    case 'p':
        if (cluster->producers[index] != NULL) {
            ks_producer_on_crash(cluster->producers[index]);
        }
        break;
    case 'k':
        if (cluster->consumers[index] != NULL) {
            ks_consumer_on_crash(cluster->consumers[index]);
        }
        break;
    default: break;
    }
}

void ks_cluster_on_node_restarted(struct ks_cluster *cluster, ks_node_id node)
{
    int32_t index = -1;
    switch (node_kind(cluster, node, &index)) {
    case 'b': ks_broker_on_restart(cluster->brokers[index]); break;
    case 'c':
        if (cluster->zk != NULL) {
            ks_zk_on_restart(cluster->zk);
            break;
        }
        /* The world dropped the controller's timers; its state is what its
         * flushed metadata log replays to. Restart re-registers the receiver,
         * restarts every broker session at now and re-arms its timers. */
        if (cluster->voter_count > 1) {
            ks_controller_start_after_restart(cluster->voters[index]);
            break;
        }
        ks_controller_start_after_restart(cluster->controller);
        controller_fault_note(cluster, KS_REASON_CONTROLLER_BACK);
        break;
    case 'p':
        if (cluster->producers[index] != NULL) {
            ks_producer_on_restart(cluster->producers[index]);
        }
        break;
    case 'k':
        if (cluster->consumers[index] != NULL) {
            ks_consumer_on_restart(cluster->consumers[index]);
        }
        break;
    default: break;
    }
}

bool ks_cluster_stop_broker(struct ks_cluster *cluster, int32_t broker_id)
{
    ks_assert(broker_id >= 1 && broker_id <= cluster->spec->cluster->broker_count);
    return ks_broker_begin_controlled_shutdown(cluster->brokers[broker_id - 1]);
}

bool ks_cluster_broker_stopping(const struct ks_cluster *cluster, int32_t broker_id)
{
    if (broker_id < 1 || broker_id > cluster->spec->cluster->broker_count) {
        return false;
    }
    return ks_broker_stopping(cluster->brokers[broker_id - 1]);
}

void ks_cluster_consumer_rewind(struct ks_cluster *cluster, int32_t consumer_index, int kind,
                                int64_t value)
{
    ks_assert(consumer_index >= 0 && consumer_index < cluster->spec->consumer_count);
    ks_assert(cluster->consumers[consumer_index] != NULL);
    /* ks_consumer_rewind ignores a crashed consumer. */
    ks_consumer_rewind(cluster->consumers[consumer_index], kind, value);
}

/* ---- final phase ---------------------------------------------------------------------- */

void ks_cluster_stop_producers(struct ks_cluster *cluster)
{
    for (int32_t i = 0; i < cluster->spec->producer_count; i++) {
        if (cluster->producers[i] != NULL) {
            ks_producer_stop(cluster->producers[i]);
        }
    }
}

bool ks_cluster_converged(const struct ks_cluster *cluster)
{
    for (int32_t t = 0; t < cluster->topic_count; t++) {
        for (int32_t p = 0; p < cluster->topics[t].partition_count; p++) {
            const struct ks_partition_state *state = partition_state(cluster, t, p);
            if (state == NULL || state->leader < 1) {
                return false;
            }
            struct ks_replica_state leader;
            if (!ks_broker_replica_state(cluster->brokers[state->leader - 1], t, p, &leader) ||
                leader.role != KS_ROLE_LEADER || leader.leader_epoch != state->leader_epoch ||
                leader.hw != leader.leo) {
                return false;
            }
            for (int32_t r = 0; r < state->replica_count; r++) {
                int32_t id = state->replicas[r];
                if (id == state->leader || !ks_broker_is_running(cluster->brokers[id - 1])) {
                    continue;
                }
                struct ks_replica_state replica;
                if (!ks_broker_replica_state(cluster->brokers[id - 1], t, p, &replica) ||
                    replica.leo != leader.leo || replica.hw != replica.leo) {
                    return false;
                }
            }
        }
    }
    for (int32_t i = 0; i < cluster->spec->producer_count; i++) {
        if (cluster->producers[i] != NULL && !ks_producer_idle(cluster->producers[i])) {
            return false;
        }
    }
    for (int32_t i = 0; i < cluster->spec->consumer_count; i++) {
        if (cluster->consumers[i] != NULL && !ks_consumer_caught_up(cluster->consumers[i])) {
            return false;
        }
    }
    return true;
}

void ks_cluster_check(const struct ks_cluster *cluster)
{
    if (cluster->voter_count > 1) {
        for (int32_t i = 0; i < cluster->voter_count; i++) {
            ks_controller_check(cluster->voters[i]);
        }
        ks_raft_quorum_check(cluster->quorum_checker, cluster->voter_rafts, cluster->voter_count);
    } else if (cluster->controller != NULL) {
        ks_controller_check(cluster->controller);
    }
    if (cluster->zk != NULL) {
        ks_zk_check(cluster->zk);
        /* One controller per controller epoch: no two brokers run one with the
         * same epoch, and none with an epoch ZooKeeper has not handed out. */
        int32_t epochs[KS_BROKER_COUNT_MAX];
        for (int32_t i = 0; i < cluster->spec->cluster->broker_count; i++) {
            epochs[i] = ks_broker_zk_controller_epoch(cluster->brokers[i]);
            ks_assert(epochs[i] <= ks_zk_current_epoch(cluster->zk));
            for (int32_t j = 0; j < i; j++) {
                ks_assert(epochs[i] < 0 || epochs[j] != epochs[i]);
            }
        }
    }
    for (int32_t i = 0; i < cluster->spec->producer_count; i++) {
        if (cluster->producers[i] != NULL) {
            ks_producer_check(cluster->producers[i]);
        }
    }
    for (int32_t i = 0; i < cluster->spec->consumer_count; i++) {
        if (cluster->consumers[i] != NULL) {
            ks_consumer_check(cluster->consumers[i]);
        }
    }
}

/* ---- queries ------------------------------------------------------------------------------ */

int32_t ks_cluster_topic_count(const struct ks_cluster *cluster)
{
    return cluster->topic_count;
}

const char *ks_cluster_topic_name(const struct ks_cluster *cluster, int32_t topic_index)
{
    if (topic_index < 0 || topic_index >= cluster->topic_count) {
        return NULL;
    }
    return cluster->topics[topic_index].name;
}

int32_t ks_cluster_topic_index(const struct ks_cluster *cluster, const char *name)
{
    for (int32_t t = 0; t < cluster->topic_count; t++) {
        if (strcmp(cluster->topics[t].name, name) == 0) {
            return t;
        }
    }
    return -1;
}

int32_t ks_cluster_partition_count(const struct ks_cluster *cluster, int32_t topic_index)
{
    if (topic_index < 0 || topic_index >= cluster->topic_count) {
        return 0;
    }
    return cluster->topics[topic_index].partition_count;
}

int32_t ks_cluster_leader(const struct ks_cluster *cluster, int32_t topic_index, int32_t partition)
{
    const struct ks_partition_state *state = partition_state(cluster, topic_index, partition);
    return state != NULL ? state->leader : -1;
}

int32_t ks_cluster_leader_epoch(const struct ks_cluster *cluster, int32_t topic_index,
                                int32_t partition)
{
    const struct ks_partition_state *state = partition_state(cluster, topic_index, partition);
    return state != NULL ? state->leader_epoch : -1;
}

int32_t ks_cluster_replicas(const struct ks_cluster *cluster, int32_t topic_index,
                            int32_t partition, int32_t *out, int32_t out_count_max)
{
    const struct ks_partition_state *state = partition_state(cluster, topic_index, partition);
    if (state == NULL) {
        return 0;
    }
    int32_t count = state->replica_count < out_count_max ? state->replica_count : out_count_max;
    for (int32_t i = 0; i < count; i++) {
        out[i] = state->replicas[i];
    }
    return count;
}

int32_t ks_cluster_isr(const struct ks_cluster *cluster, int32_t topic_index, int32_t partition,
                       int32_t *out, int32_t out_count_max)
{
    const struct ks_partition_state *state = partition_state(cluster, topic_index, partition);
    if (state == NULL) {
        return 0;
    }
    int32_t count = state->isr_count < out_count_max ? state->isr_count : out_count_max;
    for (int32_t i = 0; i < count; i++) {
        out[i] = state->isr[i];
    }
    return count;
}

static int32_t copy_ids(const int32_t *ids, int32_t count, int32_t *out, int32_t out_count_max)
{
    int32_t copied = count < out_count_max ? count : out_count_max;
    for (int32_t i = 0; i < copied; i++) {
        out[i] = ids[i];
    }
    return copied;
}

int32_t ks_cluster_elr(const struct ks_cluster *cluster, int32_t topic_index, int32_t partition,
                       int32_t *out, int32_t out_count_max)
{
    const struct ks_partition_elr *elr =
        cluster->controller != NULL
            ? ks_controller_partition_elr(reference_controller(cluster), topic_index, partition)
            : NULL;
    return elr != NULL ? copy_ids(elr->elr, elr->elr_count, out, out_count_max) : 0;
}

int32_t ks_cluster_last_known_elr(const struct ks_cluster *cluster, int32_t topic_index,
                                  int32_t partition, int32_t *out, int32_t out_count_max)
{
    const struct ks_partition_elr *elr =
        cluster->controller != NULL
            ? ks_controller_partition_elr(reference_controller(cluster), topic_index, partition)
            : NULL;
    return elr != NULL
               ? copy_ids(elr->last_known_elr, elr->last_known_elr_count, out, out_count_max)
               : 0;
}

bool ks_cluster_replica_state(const struct ks_cluster *cluster, int32_t broker_id,
                              int32_t topic_index, int32_t partition, struct ks_replica_state *out)
{
    if (broker_id < 1 || broker_id > cluster->spec->cluster->broker_count) {
        return false;
    }
    return ks_broker_replica_state(cluster->brokers[broker_id - 1], topic_index, partition, out);
}

struct ks_log *ks_cluster_replica_log(struct ks_cluster *cluster, int32_t broker_id,
                                      int32_t topic_index, int32_t partition)
{
    if (broker_id < 1 || broker_id > cluster->spec->cluster->broker_count) {
        return NULL;
    }
    return ks_broker_replica_log(cluster->brokers[broker_id - 1], topic_index, partition);
}

bool ks_cluster_broker_is_up(const struct ks_cluster *cluster, int32_t broker_id)
{
    if (broker_id < 1 || broker_id > cluster->spec->cluster->broker_count) {
        return false;
    }
    return ks_broker_is_running(cluster->brokers[broker_id - 1]) &&
           ks_world_node_is_up(cluster->world, (ks_node_id)broker_id);
}

/* The producer at producer_index, or NULL if there is none (yet). */
static const struct ks_producer *producer_at(const struct ks_cluster *cluster,
                                             int32_t producer_index)
{
    if (producer_index < 0 || producer_index >= cluster->spec->producer_count) {
        return NULL;
    }
    return cluster->producers[producer_index];
}

int64_t ks_cluster_producer_acked_count(const struct ks_cluster *cluster, int32_t producer_index)
{
    const struct ks_producer *p = producer_at(cluster, producer_index);
    return p != NULL ? ks_producer_acked_count(p) : 0;
}

int64_t ks_cluster_producer_sent_count(const struct ks_cluster *cluster, int32_t producer_index)
{
    const struct ks_producer *p = producer_at(cluster, producer_index);
    return p != NULL ? ks_producer_sent_count(p) : 0;
}

int64_t ks_cluster_producer_batches_sent_count(const struct ks_cluster *cluster,
                                               int32_t producer_index)
{
    const struct ks_producer *p = producer_at(cluster, producer_index);
    return p != NULL ? ks_producer_batches_sent_count(p) : 0;
}

/* ---- internal access for tests and benchmarks ---------------------------------------------- */

struct ks_broker *ks_cluster_broker(struct ks_cluster *cluster, int32_t broker_id)
{
    if (broker_id < 1 || broker_id > cluster->spec->cluster->broker_count) {
        return NULL;
    }
    return cluster->brokers[broker_id - 1];
}

/* ---- controller = zookeeper ------------------------------------------------------------------ */

int32_t ks_cluster_active_controller(const struct ks_cluster *cluster)
{
    return cluster->zk != NULL ? ks_zk_current_controller(cluster->zk) : -1;
}

int32_t ks_cluster_active_kraft_controller(const struct ks_cluster *cluster)
{
    if (cluster->zk != NULL) {
        return -1;
    }
    if (cluster->voter_count <= 1) {
        return 1;
    }
    const struct ks_controller *active = reference_controller(cluster);
    for (int32_t i = 0; i < cluster->voter_count; i++) {
        if (cluster->voters[i] == active && ks_controller_is_active(active) &&
            ks_world_node_is_up(cluster->world,
                                ks_cluster_controller_voter_node(cluster->spec, i))) {
            return i + 1;
        }
    }
    return -1;
}

int32_t ks_cluster_controller_elections(const struct ks_cluster *cluster)
{
    int32_t count = 0;
    for (int32_t i = 0; i < cluster->voter_count && cluster->voter_count > 1; i++) {
        count += ks_raft_election_count(cluster->voter_rafts[i]);
    }
    return count;
}

int32_t ks_cluster_controller_epoch(const struct ks_cluster *cluster)
{
    return cluster->zk != NULL ? ks_zk_current_epoch(cluster->zk) : -1;
}
