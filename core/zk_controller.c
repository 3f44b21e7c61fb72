/*
** core/zk_controller.c: the ZooKeeper-era controller (`controller = zookeeper`),
** following Kafka 2.x's KafkaController, ControllerContext,
** PartitionStateMachine and ReplicaStateMachine (read at the 2.8 tag),
** reduced to broker failure and startup.
**
** It runs inside the broker that won /controller (core/broker_zk.c), so it
** fails with that broker, and sends from that broker's node. Its state is a
** cache of ZooKeeper (ControllerContext): the live brokers with their broker
** epochs and every partition's state znode with its zkVersion.
**
**   won /controller (epoch E)  --READ_STATE-->  onControllerFailover: cache
**       everything, send every partition to every live broker (LeaderAndIsr +
**       UpdateMetadata), then handle the brokers that are not registered as
**       failed ones
**   BROKERS watch  onBrokerFailure / onBrokerStartup: a broker whose znode
**       went is offline: partitions it led get a leader, it leaves the ISRs;
**       a new one gets the whole state and may lead leaderless partitions
**   ISR watch      a leader changed an ISR itself: update the cache, send
**       UpdateMetadata (IsrChangeNotificationHandler)
**
** Every change is written first, to the partition's state znode with the
** cached zkVersion (KafkaZkClient.updateLeaderAndIsr), and sent to brokers only
** when the write succeeded; a BadVersion (the leader changed the ISR
** meanwhile) refreshes the cache from ZooKeeper's answer and decides again. A
** controller whose session expired is answered SESSION_EXPIRED, so its
** writes fail; what it sends without writing (UpdateMetadata after a broker
** failure that needs no election, onReplicasBecomeOffline) reaches brokers
** with its old epoch, and brokers that know a newer epoch refuse it
** (STALE_CONTROLLER_EPOCH, core/broker_zk.c): the zombie controller is fenced
** by epoch.
**
** Decisions (ks_zk_controller_decide):
**   - leader offline or none: OfflinePartitionLeaderElectionStrategy, the
**     first replica in assignment order that is live and in the ISR, the new
**     ISR being the live ISR members; with unclean.leader.election.enable
**     the first live replica, ISR = it; else no leader (-1) and the dead
**     replicas leave the ISR except its last member;
**   - leader live: dead replicas leave the ISR except its last member
**     (ReplicaStateMachine.doRemoveReplicasFromIsr);
**   - every change bumps the leader epoch (LeaderAndIsr.newLeaderAndIsr), also
**     an ISR removal that keeps the leader, as Kafka's ZooKeeper-era code did.
**
** Simplifications: one write per partition (Kafka batches them in one
** multi-request); no StopReplica, no controlled shutdown, no preferred
** leader election, no reassignment, no topic deletion; LeaderAndIsr goes to
** every live broker with the metadata (Kafka sends LeaderAndIsr to the
** replicas, UpdateMetadata to all); responses to the controller's requests
** are not modelled (a broker that misses one converges with the next
** change or when it re-registers).
*/
#include "zk_controller.h"

#include "base.h"

#include <stdlib.h>
#include <string.h>

struct ks_zk_controller {
    ks_world *world;
    const struct ks_cluster_spec *spec;
    const struct ks_topic_config *topics;
    int32_t topic_count;
    int32_t broker_id;
    ks_node_id zk_node;
    int64_t session_id;
    int32_t epoch;
    const struct ks_cluster_observer *observer;
    int32_t broker_count;
    bool loaded; /* READ_STATE answered */
    bool live[KS_BROKER_COUNT_MAX];
    int64_t broker_epochs[KS_BROKER_COUNT_MAX];
    struct ks_partition_state **parts; /* the cache; partition_epoch = zkVersion */
};

static bool list_contains(const int32_t *list, int32_t count, int32_t id)
{
    for (int32_t i = 0; i < count; i++) {
        if (list[i] == id) {
            return true;
        }
    }
    return false;
}

static bool is_live(const bool *live, int32_t id)
{
    return id >= 1 && live[id - 1];
}

bool ks_zk_controller_decide(const struct ks_partition_state *state, const bool *live,
                             bool unclean_enabled, struct ks_partition_state *out,
                             enum ks_elected_from *from_out)
{
    *out = *state;
    *from_out = KS_ELECTED_FROM_NONE;
    if (!is_live(live, state->leader)) {
        int32_t leader = -1;
        for (int32_t i = 0; i < state->replica_count && leader < 0; i++) {
            int32_t id = state->replicas[i];
            if (is_live(live, id) && list_contains(state->isr, state->isr_count, id)) {
                leader = id;
                *from_out = KS_ELECTED_FROM_ISR;
            }
        }
        if (leader < 0 && unclean_enabled) {
            for (int32_t i = 0; i < state->replica_count && leader < 0; i++) {
                if (is_live(live, state->replicas[i])) {
                    leader = state->replicas[i];
                    *from_out = KS_ELECTED_FROM_ANY_REPLICA;
                }
            }
        }
        out->leader = leader;
        if (*from_out == KS_ELECTED_FROM_ANY_REPLICA) {
            out->isr[0] = leader;
            out->isr_count = 1;
        }
    }
    if (*from_out != KS_ELECTED_FROM_ANY_REPLICA) {
        /* Dead replicas leave the ISR, but the last member stays. */
        int32_t kept = 0;
        int32_t isr[KS_REPLICATION_FACTOR_MAX];
        for (int32_t i = 0; i < state->isr_count; i++) {
            if (is_live(live, state->isr[i])) {
                isr[kept++] = state->isr[i];
            }
        }
        if (kept == 0) {
            isr[kept++] = state->isr[state->isr_count - 1];
        }
        memcpy(out->isr, isr, sizeof(int32_t) * (size_t)kept);
        out->isr_count = kept;
    }
    bool changed = out->leader != state->leader || out->isr_count != state->isr_count ||
                   memcmp(out->isr, state->isr, sizeof(int32_t) * (size_t)out->isr_count) != 0;
    if (changed) {
        out->leader_epoch = state->leader_epoch + 1;
    }
    return changed;
}

/* ---- sending to brokers ------------------------------------------------------------- */

/* LeaderAndIsr/UpdateMetadata with `count` entries (NULL when 0) to every
 * live broker. */
static void send_state(struct ks_zk_controller *controller,
                       const struct ks_partition_state *entries, int32_t count, int32_t only_broker)
{
    size_t bytes = sizeof(struct ks_leader_and_isr) + sizeof(struct ks_partition_state_push) +
                   (size_t)count * sizeof(struct ks_partition_state);
    for (int32_t id = 1; id <= controller->broker_count; id++) {
        if (!controller->live[id - 1] || (only_broker > 0 && id != only_broker)) {
            continue;
        }
        uint8_t *message = calloc(1, bytes);
        ks_assert(message != NULL);
        struct ks_leader_and_isr header = { .controller_id = controller->broker_id,
                                            .controller_epoch = controller->epoch };
        memcpy(message, &header, sizeof header);
        struct ks_partition_state_push push;
        memset(&push, 0, sizeof push);
        push.broker_epoch = controller->broker_epochs[id - 1];
        push.metadata_version = -1; /* not used under zookeeper */
        push.partition_count = count;
        push.broker_count = controller->broker_count;
        for (int32_t i = 0; i < controller->broker_count; i++) {
            push.broker_alive[i] = (uint8_t)controller->live[i];
        }
        memcpy(message + sizeof header, &push, sizeof push);
        if (count > 0) {
            memcpy(message + sizeof header + sizeof push, entries,
                   (size_t)count * sizeof(struct ks_partition_state));
        }
        ks_world_send(controller->world, (ks_node_id)controller->broker_id, (ks_node_id)id,
                      KS_MSG_LEADER_AND_ISR, message, bytes);
        free(message);
    }
}

static void send_everything(struct ks_zk_controller *controller, int32_t only_broker)
{
    int32_t count = 0;
    for (int32_t t = 0; t < controller->topic_count; t++) {
        count += controller->topics[t].partition_count;
    }
    struct ks_partition_state *entries =
        calloc((size_t)(count > 0 ? count : 1), sizeof(struct ks_partition_state));
    ks_assert(entries != NULL);
    int32_t at = 0;
    for (int32_t t = 0; t < controller->topic_count; t++) {
        for (int32_t p = 0; p < controller->topics[t].partition_count; p++) {
            entries[at++] = controller->parts[t][p];
        }
    }
    send_state(controller, entries, count, only_broker);
    free(entries);
}

/* ---- deciding and writing ------------------------------------------------------------- */

static void write_partition(struct ks_zk_controller *controller,
                            const struct ks_partition_state *cached,
                            const struct ks_partition_state *want)
{
    struct ks_zk_request request;
    memset(&request, 0, sizeof request);
    request.op = KS_ZK_OP_WRITE_PARTITION;
    request.broker_id = controller->broker_id;
    request.session_id = controller->session_id;
    request.controller_epoch = controller->epoch;
    request.expected_version = cached->partition_epoch;
    request.state = *want;
    ks_world_send(controller->world, (ks_node_id)controller->broker_id, controller->zk_node,
                  KS_MSG_ZK_REQUEST, &request, sizeof request);
}

/* Decides one partition against the live brokers; writes a change. Returns
 * true if a write went out. */
static bool reconcile(struct ks_zk_controller *controller, int32_t t, int32_t p)
{
    const struct ks_partition_state *cached = &controller->parts[t][p];
    struct ks_partition_state want;
    enum ks_elected_from from = KS_ELECTED_FROM_NONE;
    bool unclean = controller->topics[t].unclean_leader_election_enable;
    if (!ks_zk_controller_decide(cached, controller->live, unclean, &want, &from)) {
        return false;
    }
    write_partition(controller, cached, &want);
    return true;
}

static void reconcile_all(struct ks_zk_controller *controller)
{
    for (int32_t t = 0; t < controller->topic_count; t++) {
        for (int32_t p = 0; p < controller->topics[t].partition_count; p++) {
            reconcile(controller, t, p);
        }
    }
}

/* The facts of a change the controller wrote. */
static void emit_change(const struct ks_zk_controller *controller,
                        const struct ks_partition_state *before,
                        const struct ks_partition_state *after)
{
    if (controller->observer == NULL || controller->observer->on_event == NULL) {
        return;
    }
    enum ks_cluster_event_kind kind;
    int32_t broker = after->leader;
    enum ks_event_reason reason = KS_REASON_ZNODE_DELETED;
    enum ks_elected_from from = KS_ELECTED_FROM_NONE;
    if (after->leader != before->leader) {
        bool in_isr = list_contains(before->isr, before->isr_count, after->leader);
        if (after->leader < 0) {
            kind = KS_EV_NO_LEADER;
        } else if (in_isr) {
            kind = KS_EV_LEADER_ELECTED;
            from = KS_ELECTED_FROM_ISR;
        } else {
            kind = KS_EV_UNCLEAN_ELECTION;
            from = KS_ELECTED_FROM_ANY_REPLICA;
        }
        if (before->leader < 0) {
            reason = KS_REASON_REPLICA_BACK;
        }
    } else {
        kind = after->isr_count > before->isr_count ? KS_EV_ISR_EXPAND : KS_EV_ISR_SHRINK;
        reason = KS_REASON_BROKER_FENCED;
        /* The broker the ISR lost (the first one). */
        for (int32_t i = 0; i < before->isr_count; i++) {
            if (!list_contains(after->isr, after->isr_count, before->isr[i])) {
                broker = before->isr[i];
                break;
            }
        }
    }
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, ks_world_now_ns(controller->world), kind);
    event.reason = reason;
    event.broker = broker;
    event.topic_index = after->topic_index;
    event.partition = after->partition;
    event.leader_old = before->leader;
    event.leader_new = after->leader;
    event.leader_epoch_old = before->leader_epoch;
    event.leader_epoch_new = after->leader_epoch;
    event.elected_from = from;
    event.replica_count =
        ks_cluster_event_set_list(event.replicas, after->replicas, after->replica_count);
    event.isr_old_count = ks_cluster_event_set_list(event.isr_old, before->isr, before->isr_count);
    event.isr_new_count = ks_cluster_event_set_list(event.isr_new, after->isr, after->isr_count);
    event.isr_count_min = ks_topic_min_isr(&controller->topics[after->topic_index]);
    event.controller_id = controller->broker_id;
    event.controller_epoch = controller->epoch;
    controller->observer->on_event(controller->observer->context, &event);
}

static void take_brokers(struct ks_zk_controller *controller, const struct ks_zk_response *response)
{
    ks_assert(response->broker_count == controller->broker_count);
    for (int32_t i = 0; i < controller->broker_count; i++) {
        controller->live[i] = response->live[i] != 0;
        controller->broker_epochs[i] = response->broker_epochs[i];
    }
}

static bool entry_valid(const struct ks_zk_controller *controller,
                        const struct ks_partition_state *state)
{
    return state->topic_index >= 0 && state->topic_index < controller->topic_count &&
           state->partition >= 0 &&
           state->partition < controller->topics[state->topic_index].partition_count;
}

void ks_zk_controller_on_response(struct ks_zk_controller *controller,
                                  const struct ks_zk_response *response, const uint8_t *bytes,
                                  size_t byte_count)
{
    ks_assert(response->error != KS_ZK_SESSION_EXPIRED);
    if (response->op == KS_ZK_OP_READ_STATE) {
        ks_assert(ks_proto_fits(byte_count, sizeof *response, response->partition_count,
                                sizeof(struct ks_partition_state)));
        take_brokers(controller, response);
        for (int32_t i = 0; i < response->partition_count; i++) {
            struct ks_partition_state state;
            memcpy(&state, bytes + sizeof *response + (size_t)i * sizeof state, sizeof state);
            ks_assert(entry_valid(controller, &state));
            controller->parts[state.topic_index][state.partition] = state;
        }
        controller->loaded = true;
        send_everything(controller, -1);
        reconcile_all(controller);
        return;
    }
    ks_assert(response->op == KS_ZK_OP_WRITE_PARTITION);
    ks_assert(entry_valid(controller, &response->state));
    struct ks_partition_state *cached =
        &controller->parts[response->state.topic_index][response->state.partition];
    struct ks_partition_state before = *cached;
    if (response->state.partition_epoch > cached->partition_epoch) {
        *cached = response->state;
    }
    if (response->error == KS_ZK_BAD_VERSION) {
        /* The leader changed the ISR meanwhile: decide again on what ZooKeeper holds. */
        reconcile(controller, cached->topic_index, cached->partition);
        return;
    }
    ks_assert(response->error == KS_ZK_OK);
    emit_change(controller, &before, cached);
    send_state(controller, cached, 1, -1);
}

void ks_zk_controller_on_watch(struct ks_zk_controller *controller,
                               const struct ks_zk_response *watch)
{
    if (!controller->loaded) {
        return; /* READ_STATE, answered after this, brings the same */
    }
    if (watch->op == KS_ZK_WATCH_ISR) {
        ks_assert(entry_valid(controller, &watch->state));
        struct ks_partition_state *cached =
            &controller->parts[watch->state.topic_index][watch->state.partition];
        if (watch->state.partition_epoch > cached->partition_epoch) {
            *cached = watch->state;
            send_state(controller, cached, 1, -1);
        }
        return;
    }
    ks_assert(watch->op == KS_ZK_WATCH_BROKERS);
    bool was_live[KS_BROKER_COUNT_MAX];
    int64_t old_epochs[KS_BROKER_COUNT_MAX];
    memcpy(was_live, controller->live, sizeof was_live);
    memcpy(old_epochs, controller->broker_epochs, sizeof old_epochs);
    take_brokers(controller, watch);
    bool any_dead = false;
    bool offline_leader = false;
    for (int32_t i = 0; i < controller->broker_count; i++) {
        if (was_live[i] && !controller->live[i]) {
            any_dead = true;
        }
    }
    for (int32_t t = 0; t < controller->topic_count; t++) {
        for (int32_t p = 0; p < controller->topics[t].partition_count; p++) {
            int32_t leader = controller->parts[t][p].leader;
            if (leader >= 1 && was_live[leader - 1] && !controller->live[leader - 1]) {
                offline_leader = true;
            }
        }
    }
    /* onBrokerStartup: every live broker learns of the new one (UpdateMetadata),
     * the new broker gets the whole state. */
    bool any_new = false;
    for (int32_t i = 0; i < controller->broker_count; i++) {
        if (controller->live[i] &&
            (!was_live[i] || old_epochs[i] != controller->broker_epochs[i])) {
            any_new = true;
            send_everything(controller, i + 1);
        }
    }
    /* onReplicasBecomeOffline: without an election to carry it, the news of a
     * dead broker goes out as UpdateMetadata, before any write. */
    if (any_new || (any_dead && !offline_leader)) {
        send_state(controller, NULL, 0, -1);
    }
    reconcile_all(controller);
}

/* ---- life cycle ------------------------------------------------------------------------ */

struct ks_zk_controller *ks_zk_controller_new(ks_world *world, const struct ks_cluster_spec *spec,
                                              const struct ks_topic_config *topics,
                                              int32_t topic_count, int32_t broker_id,
                                              ks_node_id zk_node, int64_t session_id, int32_t epoch,
                                              const struct ks_cluster_observer *observer)
{
    struct ks_zk_controller *controller = calloc(1, sizeof *controller);
    ks_assert(controller != NULL);
    controller->world = world;
    controller->spec = spec;
    controller->topics = topics;
    controller->topic_count = topic_count;
    controller->broker_id = broker_id;
    controller->zk_node = zk_node;
    controller->session_id = session_id;
    controller->epoch = epoch;
    controller->observer = observer;
    controller->broker_count = spec->cluster->broker_count;
    controller->parts =
        calloc((size_t)(topic_count > 0 ? topic_count : 1), sizeof(struct ks_partition_state *));
    ks_assert(controller->parts != NULL);
    for (int32_t t = 0; t < topic_count; t++) {
        controller->parts[t] =
            calloc((size_t)topics[t].partition_count, sizeof(struct ks_partition_state));
        ks_assert(controller->parts[t] != NULL);
    }
    struct ks_zk_request request;
    memset(&request, 0, sizeof request);
    request.op = KS_ZK_OP_READ_STATE;
    request.broker_id = broker_id;
    request.session_id = session_id;
    ks_world_send(world, (ks_node_id)broker_id, zk_node, KS_MSG_ZK_REQUEST, &request,
                  sizeof request);
    return controller;
}

void ks_zk_controller_free(struct ks_zk_controller *controller)
{
    if (controller == NULL) {
        return;
    }
    for (int32_t t = 0; t < controller->topic_count; t++) {
        free(controller->parts[t]);
    }
    free(controller->parts);
    free(controller);
}

int32_t ks_zk_controller_epoch(const struct ks_zk_controller *controller)
{
    return controller->epoch;
}
