/*
** core/zk.c: the ZooKeeper service of `controller = zookeeper`, reduced to
** what Kafka's ZooKeeper-era brokers and controller use (Kafka 2.x's
** KafkaZkClient and ZkData, read at the 2.8 tag; ZooKeeper's SessionTracker
** for expiry). One node: an ensemble (quorum, leader election inside
** ZooKeeper) is not modelled.
**
** Znodes:
**   /brokers/ids/N       ephemeral: broker N's registration, data = its
**                        broker epoch (KIP-380 uses the czxid; ksim the
**                        incarnation the broker sends with CONNECT)
**   /controller          ephemeral: the controller's broker id
**   /controller_epoch    persistent: bumped by the broker that creates
**                        /controller, in the same transaction
**                        (KafkaZkClient.registerControllerAndIncrementControllerEpoch)
**   /brokers/topics/T/partitions/P/state
**                        persistent: leader, leader_epoch, isr, controller_epoch
**                        and the znode's zkVersion (struct ks_partition_state with
**                        partition_epoch = zkVersion), set only by a conditional
**                        setData with the expected version
**
** Sessions: CONNECT opens one (owned by a broker incarnation), PING keeps it
** alive; as ZooKeeper's ExpiryQueue, a session expires at the first tick of
** tickTime (3000 ms, ZooKeeper's default) at or after its last ping plus
** zookeeper.session.timeout.ms, and its ephemeral znodes are deleted. A
** request on an expired session is answered SESSION_EXPIRED, which is how a
** broker learns it lost its session. Pings are not answered otherwise (ksim
** needs no response to keep a session).
**
** Watches, one message each (KS_MSG_ZK_WATCH):
**   CONTROLLER  /controller was deleted: to every session whose ELECT found
**               it existing (one-shot, as an exists watch);
**   BROKERS     /brokers/ids changed: to the controller's session, with the
**               live brokers (a children watch the controller keeps);
**   ISR         a leader changed a partition's ISR: to the controller's session
**               (Kafka 1.x-2.x's /isr_change_notification, without its 2.5 s
**               batching in ReplicaManager.maybePropagateIsrChanges).
**
** Leaders write the ISR themselves (Partition.updateIsr before KIP-497 moved
** it to AlterPartition in 2.7): a KS_MSG_ALTER_PARTITION_REQUEST to this node
** is ReplicationUtils.updateLeaderAndIsr's conditional update. It succeeds
** only on a live session of that broker incarnation with the znode's current
** zkVersion; a stale version is refused with the state as it is
** (INVALID_UPDATE_VERSION), and, as in Kafka's Partition ("Cached zkVersion
** not equal to that in zookeeper, skip updating ISR"), the leader waits for
** the controller's LeaderAndIsr instead of re-reading.
**
** A crash of the node keeps every znode and session (ZooKeeper writes each
** transaction to its log before answering); while it is down or cut off
** nothing is answered, so no session can be kept alive and no ISR changes.
** On restart every session gets a full timeout again.
**
** Invariants (ks_zk_check, after every ZooKeeper event in KS_DEBUG builds):
**   Z1  /controller_epoch only grows, and each epoch went to one broker
**       (one controller per controller epoch).
**   Z2  a partition's zkVersion and leader epoch only grow: every write goes
**       through set_partition(), which asserts it.
**   Z3  every ephemeral znode is owned by a live session of its broker.
**   Z4  session ids are unique and ascending; broker ids are in range.
*/
#include "zk.h"
#include "placement.h"

#include "base.h"
#include "controller.h"

#include <glib.h>
#include <stdlib.h>
#include <string.h>

#define ZK_TICK_NS ((ks_time_ns)3000 * 1000 * 1000) /* ZooKeeper's default tickTime */

struct zk_session {
    int64_t id;
    int32_t broker_id;
    int64_t broker_epoch;
    ks_time_ns expires_ns;
    bool watch_controller; /* an exists watch on /controller */
};

struct zk_part {
    struct ks_partition_state state; /* partition_epoch = zkVersion */
    int32_t controller_epoch;        /* the writer's */
    int32_t version_seen;            /* Z2: as of the last write */
    int32_t leader_epoch_seen;
};

struct ks_zk {
    ks_world *world;
    const struct ks_cluster_spec *spec;
    const struct ks_topic_config *topics;
    int32_t topic_count;
    ks_node_id node;
    const struct ks_cluster_observer *observer;
    int32_t broker_count;
    GArray *sessions; /* struct zk_session, live ones only, ascending id */
    int64_t next_session_id;
    int64_t broker_owner[KS_BROKER_COUNT_MAX]; /* /brokers/ids/N's session, 0: none */
    int64_t broker_epoch[KS_BROKER_COUNT_MAX];
    int64_t controller_owner; /* /controller's session, 0: none */
    int32_t controller_id;
    int32_t controller_epoch;
    GArray *epoch_owner; /* Z1: [epoch - 1] = the broker that got it */
    struct zk_part **parts;
};

/* ---- helpers ---------------------------------------------------------------- */

static void emit(const struct ks_zk *zk, const struct ks_cluster_event *event)
{
    if (zk->observer != NULL && zk->observer->on_event != NULL) {
        zk->observer->on_event(zk->observer->context, event);
    }
}

static struct zk_session *find_session(const struct ks_zk *zk, int64_t id)
{
    for (guint i = 0; i < zk->sessions->len; i++) {
        struct zk_session *session = &g_array_index(zk->sessions, struct zk_session, i);
        if (session->id == id) {
            return session;
        }
    }
    return NULL;
}

/* The live session of a broker incarnation (the leader's ISR writes carry the
 * broker epoch, not the session id). */
static struct zk_session *find_incarnation(const struct ks_zk *zk, int32_t broker_id,
                                           int64_t broker_epoch)
{
    for (guint i = 0; i < zk->sessions->len; i++) {
        struct zk_session *session = &g_array_index(zk->sessions, struct zk_session, i);
        if (session->broker_id == broker_id && session->broker_epoch == broker_epoch) {
            return session;
        }
    }
    return NULL;
}

static ks_time_ns expiry_ns(const struct ks_zk *zk)
{
    /* ExpiryQueue.roundToNextInterval: the first tick after now + timeout. */
    ks_time_ns at =
        ks_world_now_ns(zk->world) + (ks_time_ns)zk->spec->cluster->zookeeper_session_timeout_ns;
    return (at / ZK_TICK_NS + 1) * ZK_TICK_NS;
}

static void fill_brokers(const struct ks_zk *zk, struct ks_zk_response *response)
{
    response->broker_count = zk->broker_count;
    for (int32_t i = 0; i < zk->broker_count; i++) {
        response->live[i] = (uint8_t)(zk->broker_owner[i] != 0);
        response->broker_epochs[i] = zk->broker_owner[i] != 0 ? zk->broker_epoch[i] : -1;
    }
    response->controller_id = zk->controller_id;
    response->controller_epoch = zk->controller_epoch;
}

/* A response or watch in its wire form (core/proto.c), `count` partition
 * states (READ_STATE) after it. */
static void send_response(struct ks_zk *zk, ks_node_id target, uint32_t kind,
                          const struct ks_zk_response *response)
{
    size_t head = ks_proto_zk_bytes(response->broker_count);
    size_t bytes = head + (size_t)(kind == KS_MSG_ZK_RESPONSE && response->op == KS_ZK_OP_READ_STATE
                                       ? response->partition_count
                                       : 0) *
                              sizeof(struct ks_partition_state);
    uint8_t *message = calloc(1, bytes);
    ks_assert(message != NULL);
    ks_proto_zk_encode(response, message);
    size_t at = head;
    if (bytes > head) {
        for (int32_t t = 0; t < zk->topic_count; t++) {
            for (int32_t p = 0; p < zk->topics[t].partition_count; p++) {
                memcpy(message + at, &zk->parts[t][p].state, sizeof(struct ks_partition_state));
                at += sizeof(struct ks_partition_state);
            }
        }
    }
    ks_assert(at == bytes);
    ks_world_send(zk->world, zk->node, target, kind, message, bytes);
    free(message);
}

static void watch_to_controller(struct ks_zk *zk, enum ks_zk_watch watch,
                                const struct ks_partition_state *state)
{
    const struct zk_session *session = find_session(zk, zk->controller_owner);
    if (session == NULL) {
        return;
    }
    struct ks_zk_response message;
    memset(&message, 0, sizeof message);
    message.op = watch;
    message.session_id = session->id;
    fill_brokers(zk, &message);
    if (state != NULL) {
        message.state = *state;
    }
    send_response(zk, (ks_node_id)session->broker_id, KS_MSG_ZK_WATCH, &message);
}

/* Z2: the only way a partition's state znode changes. */
static void set_partition(struct zk_part *part, const struct ks_partition_state *state,
                          int32_t controller_epoch)
{
    ks_assert(state->leader_epoch >= part->leader_epoch_seen); /* Z2 */
    ks_assert(part->state.partition_epoch == part->version_seen);
    ks_assert(part->state.partition_epoch < INT32_MAX);
    int32_t version = part->state.partition_epoch + 1;
    part->state.leader = state->leader;
    part->state.leader_epoch = state->leader_epoch;
    part->state.isr_count = state->isr_count;
    memcpy(part->state.isr, state->isr, sizeof part->state.isr);
    part->state.partition_epoch = version;
    part->controller_epoch = controller_epoch;
    part->version_seen = version;
    part->leader_epoch_seen = state->leader_epoch;
}

/* ---- sessions ------------------------------------------------------------------ */

static void delete_ephemerals(struct ks_zk *zk, int64_t session_id)
{
    bool brokers_changed = false;
    for (int32_t i = 0; i < zk->broker_count; i++) {
        if (zk->broker_owner[i] == session_id) {
            zk->broker_owner[i] = 0;
            brokers_changed = true;
        }
    }
    if (zk->controller_owner == session_id) {
        zk->controller_owner = 0;
        zk->controller_id = -1;
        /* Every exists watch on /controller fires (and is used up). */
        for (guint i = 0; i < zk->sessions->len; i++) {
            struct zk_session *session = &g_array_index(zk->sessions, struct zk_session, i);
            if (!session->watch_controller) {
                continue;
            }
            session->watch_controller = false;
            struct ks_zk_response message;
            memset(&message, 0, sizeof message);
            message.op = KS_ZK_WATCH_CONTROLLER;
            message.session_id = session->id;
            fill_brokers(zk, &message);
            send_response(zk, (ks_node_id)session->broker_id, KS_MSG_ZK_WATCH, &message);
        }
    }
    if (brokers_changed) {
        watch_to_controller(zk, KS_ZK_WATCH_BROKERS, NULL);
    }
}

static void session_tick(ks_world *world, void *context)
{
    struct ks_zk *zk = context;
    ks_time_ns now = ks_world_now_ns(world);
    for (guint i = 0; i < zk->sessions->len;) {
        struct zk_session session = g_array_index(zk->sessions, struct zk_session, i);
        if (session.expires_ns > now) {
            i++;
            continue;
        }
        g_array_remove_index(zk->sessions, i);
        struct ks_cluster_event event;
        ks_cluster_event_init(&event, now, KS_EV_ZK_SESSION_EXPIRED);
        event.broker = session.broker_id;
        event.broker_epoch = session.broker_epoch;
        event.controller_id = zk->controller_owner == session.id ? session.broker_id : -1;
        emit(zk, &event);
        delete_ephemerals(zk, session.id);
    }
    ks_world_schedule(zk->world, zk->node, ZK_TICK_NS, KS_TIMER_ZK_SESSION_CHECK, session_tick, zk);
#ifdef KS_DEBUG
    ks_zk_check(zk);
#endif
}

/* ---- requests ------------------------------------------------------------------- */

static void respond(struct ks_zk *zk, ks_node_id target, const struct ks_zk_response *response)
{
    send_response(zk, target, KS_MSG_ZK_RESPONSE, response);
}

/* The answer carries every partition's state znode after it (send_response). */
static void on_read_state(struct ks_zk *zk, ks_node_id source, struct ks_zk_response *response)
{
    int32_t count = 0;
    for (int32_t t = 0; t < zk->topic_count; t++) {
        count += zk->topics[t].partition_count;
    }
    response->partition_count = count;
    respond(zk, source, response);
}

static void on_write_partition(struct ks_zk *zk, const struct ks_zk_request *request,
                               struct ks_zk_response *response)
{
    const struct ks_partition_state *want = &request->state;
    ks_assert(want->topic_index >= 0 && want->topic_index < zk->topic_count);
    ks_assert(want->partition >= 0 &&
              want->partition < zk->topics[want->topic_index].partition_count);
    struct zk_part *part = &zk->parts[want->topic_index][want->partition];
    if (part->state.partition_epoch != request->expected_version) {
        response->error = KS_ZK_BAD_VERSION;
    } else {
        set_partition(part, want, request->controller_epoch);
    }
    response->state = part->state;
}

static void on_request(struct ks_zk *zk, ks_node_id source, const struct ks_zk_request *request)
{
    ks_assert(request->broker_id >= 1 && request->broker_id <= zk->broker_count);
    ks_assert((ks_node_id)request->broker_id == source);
    struct ks_zk_response response;
    memset(&response, 0, sizeof response);
    response.op = request->op;
    response.session_id = request->session_id;
    int32_t index = request->broker_id - 1;
    if (request->op == KS_ZK_OP_CONNECT) {
        struct zk_session session = { .id = zk->next_session_id++,
                                      .broker_id = request->broker_id,
                                      .broker_epoch = request->broker_epoch,
                                      .expires_ns = expiry_ns(zk),
                                      .watch_controller = false };
        g_array_append_val(zk->sessions, session);
        response.session_id = session.id;
        respond(zk, source, &response);
        return;
    }
    struct zk_session *session = find_session(zk, request->session_id);
    if (session == NULL) {
        response.error = KS_ZK_SESSION_EXPIRED;
        respond(zk, source, &response);
        return;
    }
    session->expires_ns = expiry_ns(zk); /* every request touches the session */
    switch (request->op) {
    case KS_ZK_OP_PING: return;
    case KS_ZK_OP_CLOSE: {
        /* Gone at once, with its ephemerals (no answer: the process is gone). */
        int64_t id = session->id;
        for (guint i = 0; i < zk->sessions->len; i++) {
            if (g_array_index(zk->sessions, struct zk_session, i).id == id) {
                g_array_remove_index(zk->sessions, i);
                break;
            }
        }
        delete_ephemerals(zk, id);
        return;
    }
    case KS_ZK_OP_REGISTER:
        /* KafkaZkClient.registerBroker: checkedEphemeralCreate fails while
         * another session owns the znode. */
        if (zk->broker_owner[index] != 0 && zk->broker_owner[index] != session->id) {
            response.error = KS_ZK_NODE_EXISTS;
            struct ks_cluster_event event;
            ks_cluster_event_init(&event, ks_world_now_ns(zk->world), KS_EV_INFO);
            event.reason = KS_REASON_ZK_NODE_EXISTS;
            event.broker = request->broker_id;
            event.broker_epoch = session->broker_epoch;
            emit(zk, &event);
        } else if (zk->broker_owner[index] == 0) {
            zk->broker_owner[index] = session->id;
            zk->broker_epoch[index] = session->broker_epoch;
            watch_to_controller(zk, KS_ZK_WATCH_BROKERS, NULL);
        }
        fill_brokers(zk, &response);
        respond(zk, source, &response);
        return;
    case KS_ZK_OP_ELECT:
        if (zk->controller_owner != 0) {
            response.error = KS_ZK_NODE_EXISTS;
            session->watch_controller = true;
        } else {
            zk->controller_owner = session->id;
            zk->controller_id = request->broker_id;
            zk->controller_epoch++;
            g_array_append_val(zk->epoch_owner, request->broker_id);
            struct ks_cluster_event event;
            ks_cluster_event_init(&event, ks_world_now_ns(zk->world), KS_EV_CONTROLLER_ELECTED);
            event.broker = request->broker_id;
            event.controller_id = request->broker_id;
            event.controller_epoch = zk->controller_epoch;
            emit(zk, &event);
        }
        fill_brokers(zk, &response);
        respond(zk, source, &response);
        return;
    case KS_ZK_OP_READ_STATE:
        fill_brokers(zk, &response);
        on_read_state(zk, source, &response);
        return;
    case KS_ZK_OP_WRITE_PARTITION:
        on_write_partition(zk, request, &response);
        fill_brokers(zk, &response);
        respond(zk, source, &response);
        return;
    default: ks_assert(!"unknown ZooKeeper operation");
    }
}

/* A leader's ISR write (see the design block). */
static void on_isr_write(struct ks_zk *zk, ks_node_id source,
                         const struct ks_alter_partition_request *request)
{
    ks_assert(request->broker_id >= 1 && request->broker_id <= zk->broker_count);
    ks_assert((ks_node_id)request->broker_id == source);
    ks_assert(request->isr_count >= 1 && request->isr_count <= KS_REPLICATION_FACTOR_MAX);
    ks_assert(request->topic_index >= 0 && request->topic_index < zk->topic_count);
    ks_assert(request->partition >= 0 &&
              request->partition < zk->topics[request->topic_index].partition_count);
    struct zk_part *part = &zk->parts[request->topic_index][request->partition];
    struct ks_alter_partition_response response;
    memset(&response, 0, sizeof response);
    response.topic_index = request->topic_index;
    response.partition = request->partition;
    struct zk_session *session = find_incarnation(zk, request->broker_id, request->broker_epoch);
    struct ks_partition_state before = part->state;
    enum ks_event_reason refused = KS_REASON_NONE;
    if (session == NULL) {
        response.error_code = KS_ERR_UNKNOWN_SERVER_ERROR; /* SessionExpired */
        refused = KS_REASON_ZK_NO_SESSION;
    } else if (request->partition_epoch != part->state.partition_epoch) {
        response.error_code = KS_ERR_INVALID_UPDATE_VERSION; /* BadVersion */
        refused = KS_REASON_ZK_BAD_VERSION;
    } else {
        session->expires_ns = expiry_ns(zk);
        struct ks_partition_state want = part->state;
        want.leader_epoch = request->leader_epoch;
        want.isr_count = request->isr_count;
        memcpy(want.isr, request->isr, sizeof(int32_t) * (size_t)request->isr_count);
        set_partition(part, &want, part->controller_epoch);
        struct ks_cluster_event event;
        bool grows = request->isr_count > before.isr_count;
        ks_cluster_event_init(&event, ks_world_now_ns(zk->world),
                              grows ? KS_EV_ISR_EXPAND : KS_EV_ISR_SHRINK);
        event.reason = grows ? KS_REASON_FOLLOWER_CAUGHT_UP : KS_REASON_FOLLOWER_LAGGING;
        event.broker = request->broker_id;
        event.topic_index = request->topic_index;
        event.partition = request->partition;
        event.leader_old = before.leader;
        event.leader_new = part->state.leader;
        event.leader_epoch_old = before.leader_epoch;
        event.leader_epoch_new = part->state.leader_epoch;
        event.replica_count = ks_cluster_event_set_list(event.replicas, part->state.replicas,
                                                        part->state.replica_count);
        event.isr_old_count =
            ks_cluster_event_set_list(event.isr_old, before.isr, before.isr_count);
        event.isr_new_count =
            ks_cluster_event_set_list(event.isr_new, part->state.isr, part->state.isr_count);
        event.isr_count_min = ks_topic_min_isr(&zk->topics[request->topic_index]);
        emit(zk, &event);
        watch_to_controller(zk, KS_ZK_WATCH_ISR, &part->state);
    }
    if (refused != KS_REASON_NONE) {
        struct ks_cluster_event event;
        ks_cluster_event_init(&event, ks_world_now_ns(zk->world), KS_EV_INFO);
        event.reason = refused;
        event.broker = request->broker_id;
        event.topic_index = request->topic_index;
        event.partition = request->partition;
        event.leader_epoch_new = request->leader_epoch;
        event.isr_old_count =
            ks_cluster_event_set_list(event.isr_old, before.isr, before.isr_count);
        event.isr_new_count =
            ks_cluster_event_set_list(event.isr_new, request->isr, request->isr_count);
        event.zk_version = request->partition_epoch;
        event.zk_version_found = before.partition_epoch;
        emit(zk, &event);
    }
    response.leader = part->state.leader;
    response.leader_epoch = part->state.leader_epoch;
    response.partition_epoch = part->state.partition_epoch;
    response.isr_count = part->state.isr_count;
    memcpy(response.isr, part->state.isr, sizeof response.isr);
    ks_world_send(zk->world, zk->node, source, KS_MSG_ALTER_PARTITION_RESPONSE, &response,
                  sizeof response);
}

/* Only brokers talk to ZooKeeper, with messages core/broker_zk.c and
 * core/broker_replica.c build whole; anything else is a bug in ksim. */
static void on_receive(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                       const void *message, size_t message_bytes, void *context)
{
    (void)world;
    (void)self;
    struct ks_zk *zk = context;
    switch (kind) {
    case KS_MSG_ZK_REQUEST: {
        struct ks_zk_request request;
        ks_assert(message_bytes == sizeof request);
        memcpy(&request, message, sizeof request);
        on_request(zk, source, &request);
        break;
    }
    case KS_MSG_ALTER_PARTITION_REQUEST: {
        struct ks_alter_partition_request request;
        ks_assert(message_bytes == sizeof request);
        memcpy(&request, message, sizeof request);
        on_isr_write(zk, source, &request);
        break;
    }
    default: ks_assert(!"unexpected message kind at ZooKeeper");
    }
#ifdef KS_DEBUG
    ks_zk_check(zk);
#endif
}

/* ---- life cycle ------------------------------------------------------------------ */

struct ks_zk *ks_zk_new(ks_world *world, const struct ks_cluster_spec *spec,
                        const struct ks_topic_config *topics, int32_t topic_count, ks_node_id node,
                        const struct ks_cluster_observer *observer)
{
    struct ks_zk *zk = calloc(1, sizeof *zk);
    ks_assert(zk != NULL);
    zk->world = world;
    zk->spec = spec;
    zk->topics = topics;
    zk->topic_count = topic_count;
    zk->node = node;
    zk->observer = observer;
    zk->broker_count = spec->cluster->broker_count;
    ks_assert(zk->broker_count >= 1 && zk->broker_count <= KS_BROKER_COUNT_MAX);
    zk->sessions = g_array_new(FALSE, TRUE, sizeof(struct zk_session));
    zk->epoch_owner = g_array_new(FALSE, TRUE, sizeof(int32_t));
    zk->next_session_id = 1;
    zk->controller_id = -1;
    zk->controller_epoch = 0; /* KafkaController.InitialControllerEpoch */
    zk->parts = calloc((size_t)(topic_count > 0 ? topic_count : 1), sizeof(struct zk_part *));
    ks_assert(zk->parts != NULL);
    for (int32_t t = 0; t < topic_count; t++) {
        zk->parts[t] = calloc((size_t)topics[t].partition_count, sizeof(struct zk_part));
        ks_assert(zk->parts[t] != NULL);
    }
    return zk;
}

void ks_zk_free(struct ks_zk *zk)
{
    if (zk == NULL) {
        return;
    }
    for (int32_t t = 0; t < zk->topic_count; t++) {
        free(zk->parts[t]);
    }
    free(zk->parts);
    g_array_free(zk->sessions, TRUE);
    g_array_free(zk->epoch_owner, TRUE);
    free(zk);
}

/* Replica placement draws from KS_RNG_CLUSTER, as the KRaft controller's. */
static uint64_t zk_random_below(void *context, uint64_t bound)
{
    return ks_world_random_below(context, KS_RNG_CLUSTER, bound);
}

static void create_topic(struct ks_zk *zk, int32_t topic_index)
{
    const struct ks_topic_config *topic = &zk->topics[topic_index];
    int32_t rf = topic->replication_factor;
    ks_assert(rf >= 1 && rf <= zk->broker_count && rf <= KS_REPLICATION_FACTOR_MAX);
    /* The ZooKeeper era's placer, AdminUtils.assignReplicasToBrokers
     * (core/placement.c), with its two random draws; it knows no fencing. */
    int32_t(*assignment)[KS_REPLICATION_FACTOR_MAX] =
        ks_placement_assign_topic(topic, ks_placement_admin_utils,
                                  (struct ks_placement){
                                      .broker_count = zk->broker_count,
                                      .racks = zk->spec->cluster->racks,
                                      .random_below = zk_random_below,
                                      .random_context = zk->world,
                                  });
    for (int32_t p = 0; p < topic->partition_count; p++) {
        struct ks_partition_state *state = &zk->parts[topic_index][p].state;
        state->topic_index = topic_index;
        state->partition = p;
        state->replica_count = rf;
        for (int32_t j = 0; j < rf; j++) {
            state->replicas[j] = assignment[p][j];
            state->isr[j] = assignment[p][j];
        }
        state->isr_count = rf;
        /* The leader the first controller's NewPartition -> OnlinePartition
         * would write; ksim writes it with the topic. */
        state->leader = state->replicas[0];
        state->leader_epoch = 0;
        state->partition_epoch = 0;
        struct ks_cluster_event event;
        ks_cluster_event_init(&event, ks_world_now_ns(zk->world), KS_EV_TOPIC_CREATED);
        event.broker = state->leader;
        event.topic_index = topic_index;
        event.partition = p;
        event.leader_new = state->leader;
        event.leader_epoch_new = 0;
        event.replica_count = ks_cluster_event_set_list(event.replicas, state->replicas, rf);
        event.isr_new_count = ks_cluster_event_set_list(event.isr_new, state->isr, rf);
        event.isr_count_min = ks_topic_min_isr(topic);
        emit(zk, &event);
    }
    free(assignment);
}

void ks_zk_start(struct ks_zk *zk)
{
    ks_world_set_receiver(zk->world, zk->node, on_receive, zk);
    for (int32_t t = 0; t < zk->topic_count; t++) {
        create_topic(zk, t);
    }
    ks_world_schedule(zk->world, zk->node, ZK_TICK_NS, KS_TIMER_ZK_SESSION_CHECK, session_tick, zk);
}

void ks_zk_on_restart(struct ks_zk *zk)
{
    ks_world_set_receiver(zk->world, zk->node, on_receive, zk);
    for (guint i = 0; i < zk->sessions->len; i++) {
        g_array_index(zk->sessions, struct zk_session, i).expires_ns = expiry_ns(zk);
    }
    ks_time_ns now = ks_world_now_ns(zk->world);
    ks_world_schedule(zk->world, zk->node, ZK_TICK_NS - now % ZK_TICK_NS, KS_TIMER_ZK_SESSION_CHECK,
                      session_tick, zk);
}

/* ---- queries and check --------------------------------------------------------------- */

const struct ks_partition_state *ks_zk_partition(const struct ks_zk *zk, int32_t topic_index,
                                                 int32_t partition)
{
    if (topic_index < 0 || topic_index >= zk->topic_count || partition < 0 ||
        partition >= zk->topics[topic_index].partition_count) {
        return NULL;
    }
    return &zk->parts[topic_index][partition].state;
}

int32_t ks_zk_current_controller(const struct ks_zk *zk)
{
    return zk->controller_id;
}

int32_t ks_zk_current_epoch(const struct ks_zk *zk)
{
    return zk->controller_epoch;
}

bool ks_zk_broker_registered(const struct ks_zk *zk, int32_t broker_id)
{
    return broker_id >= 1 && broker_id <= zk->broker_count && zk->broker_owner[broker_id - 1] != 0;
}

void ks_zk_check(const struct ks_zk *zk)
{
    ks_assert((int32_t)zk->epoch_owner->len == zk->controller_epoch); /* Z1 */
    if (zk->controller_owner != 0) {
        const struct zk_session *owner = find_session(zk, zk->controller_owner);
        ks_assert(owner != NULL && owner->broker_id == zk->controller_id); /* Z3 */
        ks_assert(g_array_index(zk->epoch_owner, int32_t, zk->controller_epoch - 1) ==
                  zk->controller_id); /* Z1 */
    } else {
        ks_assert(zk->controller_id == -1);
    }
    for (int32_t i = 0; i < zk->broker_count; i++) {
        if (zk->broker_owner[i] != 0) {
            const struct zk_session *owner = find_session(zk, zk->broker_owner[i]);
            ks_assert(owner != NULL && owner->broker_id == i + 1); /* Z3 */
        }
    }
    for (guint i = 0; i < zk->sessions->len; i++) {
        const struct zk_session *session = &g_array_index(zk->sessions, struct zk_session, i);
        ks_assert(session->broker_id >= 1 && session->broker_id <= zk->broker_count); /* Z4 */
        ks_assert(session->id < zk->next_session_id);
        if (i > 0) {
            ks_assert(g_array_index(zk->sessions, struct zk_session, i - 1).id < session->id);
        }
    }
    for (int32_t t = 0; t < zk->topic_count; t++) {
        for (int32_t p = 0; p < zk->topics[t].partition_count; p++) {
            const struct zk_part *part = &zk->parts[t][p];
            ks_assert(part->state.partition_epoch == part->version_seen);   /* Z2 */
            ks_assert(part->state.leader_epoch == part->leader_epoch_seen); /* Z2 */
            ks_assert(part->state.isr_count >= 1);                          /* as Kafka keeps it */
            ks_assert(part->state.isr_count <= part->state.replica_count);
        }
    }
}
