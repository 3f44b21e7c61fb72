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
** Controlled shutdown (doControlledShutdown): a ControlledShutdown request
** from a live broker of the current broker epoch marks it shutting down
** (ControllerContext.shuttingDownBrokerIds: live, but no longer eligible,
** as liveBrokerIds leaves it out). Partitions with more than one replica
** that it leads get ControlledShutdownPartitionLeaderElectionStrategy's
** leader (ks_zk_controller_decide_shutdown); those it follows drop it from
** the ISR (OfflineReplica, last member kept). The answer, sent once those
** writes are answered, counts every partition it still leads
** (partitionLeadersOnBroker, single-replica ones included, so a broker
** leading one never gets a clean answer, as in Kafka). The mark goes when
** the broker's znode goes or it registers again.
**
** Simplifications: one write per partition (Kafka batches them in one
** multi-request); no StopReplica (a shutting-down follower keeps fetching
** until it stops), no preferred
** leader election, no reassignment, no topic deletion; LeaderAndIsr goes to
** every live broker with the metadata (Kafka sends LeaderAndIsr to the
** replicas, UpdateMetadata to all); responses to the controller's requests
** are not modelled (a broker that misses one converges with the next
** change or when it re-registers).
*/
#include "zk_controller.h"

#include "base.h"

#include <glib.h>
#include <stdlib.h>
#include <string.h>

/* A ControlledShutdown waiting for the writes it caused. */
struct shutdown_wait {
    int32_t broker_id;
    ks_node_id node;
    int64_t correlation_id;
    GArray *pending; /* struct ks_event_tp: writes not answered yet */
};

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
    struct ks_partition_state **parts;       /* the cache; partition_epoch = zkVersion */
    bool shutting_down[KS_BROKER_COUNT_MAX]; /* ControllerContext.shuttingDownBrokerIds */
    GArray *shutdown_waits;                  /* struct shutdown_wait, in arrival order */
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

bool ks_zk_controller_decide_shutdown(const struct ks_partition_state *state, const bool *live,
                                      const bool *shutting_down, struct ks_partition_state *out,
                                      enum ks_elected_from *from_out)
{
    *out = *state;
    *from_out = KS_ELECTED_FROM_NONE;
    if (state->replica_count <= 1) {
        return false;
    }
    int32_t leader = -1;
    for (int32_t i = 0; i < state->replica_count && leader < 0; i++) {
        int32_t id = state->replicas[i];
        if (is_live(live, id) && !shutting_down[id - 1] &&
            list_contains(state->isr, state->isr_count, id)) {
            leader = id;
        }
    }
    if (leader < 0) {
        return false;
    }
    int32_t kept = 0;
    for (int32_t i = 0; i < state->isr_count; i++) {
        int32_t id = state->isr[i];
        if (id < 1 || !shutting_down[id - 1]) {
            out->isr[kept++] = id;
        }
    }
    out->isr_count = kept;
    out->leader = leader;
    out->leader_epoch = state->leader_epoch + 1;
    *from_out = KS_ELECTED_FROM_ISR;
    return true;
}

/* ---- sending to brokers ------------------------------------------------------------- */

/* LeaderAndIsr/UpdateMetadata with `count` entries (NULL when 0) to every
 * live broker. */
static void send_state(struct ks_zk_controller *controller,
                       const struct ks_partition_state *entries, int32_t count, int32_t only_broker)
{
    size_t push_bytes = ks_proto_push_bytes(controller->broker_count);
    size_t bytes = sizeof(struct ks_leader_and_isr) + push_bytes +
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
        ks_proto_push_encode(&push, message + sizeof header);
        if (count > 0) {
            memcpy(message + sizeof header + push_bytes, entries,
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
    bool changed;
    if (is_live(controller->live, cached->leader) &&
        controller->shutting_down[cached->leader - 1]) {
        changed = ks_zk_controller_decide_shutdown(cached, controller->live,
                                                   controller->shutting_down, &want, &from);
    } else {
        /* Shutting-down brokers are live but not eligible: no election
         * picks them and, as followers, they leave the ISR. */
        bool eligible[KS_BROKER_COUNT_MAX];
        for (int32_t i = 0; i < controller->broker_count; i++) {
            eligible[i] = controller->live[i] && !controller->shutting_down[i];
        }
        changed = ks_zk_controller_decide(cached, eligible, unclean, &want, &from);
    }
    if (!changed) {
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
        } else if (is_live(controller->live, before->leader) &&
                   controller->shutting_down[before->leader - 1]) {
            reason = KS_REASON_CONTROLLED_SHUTDOWN;
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
        if (is_live(controller->live, broker) && controller->shutting_down[broker - 1]) {
            reason = KS_REASON_CONTROLLED_SHUTDOWN;
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

/* ---- controlled shutdown ------------------------------------------------------------ */

static void free_wait(struct shutdown_wait *wait)
{
    g_array_free(wait->pending, TRUE);
    wait->pending = NULL;
}

static void answer_wait(struct ks_zk_controller *controller, const struct shutdown_wait *wait,
                        int16_t error_code)
{
    struct ks_controlled_shutdown_response response;
    memset(&response, 0, sizeof response);
    response.error_code = error_code;
    response.correlation_id = wait->correlation_id;
    if (error_code == KS_ERR_NONE) {
        for (int32_t t = 0; t < controller->topic_count; t++) {
            for (int32_t p = 0; p < controller->topics[t].partition_count; p++) {
                response.remaining += controller->parts[t][p].leader == wait->broker_id;
            }
        }
    }
    ks_world_send(controller->world, (ks_node_id)controller->broker_id, wait->node,
                  KS_MSG_CONTROLLED_SHUTDOWN_RESPONSE, &response, sizeof response);
}

/* Answers every wait whose writes are all answered, in arrival order. */
static void answer_ready_waits(struct ks_zk_controller *controller)
{
    guint i = 0;
    while (i < controller->shutdown_waits->len) {
        struct shutdown_wait *wait =
            &g_array_index(controller->shutdown_waits, struct shutdown_wait, i);
        if (wait->pending->len > 0) {
            i++;
            continue;
        }
        struct shutdown_wait done = *wait;
        g_array_remove_index(controller->shutdown_waits, i);
        answer_wait(controller, &done, KS_ERR_NONE);
        free_wait(&done);
    }
}

/* A write of (t, p) was answered and nothing more follows: waits stop
 * waiting for it. */
static void shutdown_write_done(struct ks_zk_controller *controller, int32_t t, int32_t p)
{
    for (guint i = 0; i < controller->shutdown_waits->len; i++) {
        GArray *pending =
            g_array_index(controller->shutdown_waits, struct shutdown_wait, i).pending;
        for (guint j = 0; j < pending->len; j++) {
            const struct ks_event_tp *tp = &g_array_index(pending, struct ks_event_tp, j);
            if (tp->topic_index == t && tp->partition == p) {
                g_array_remove_index(pending, j);
                break;
            }
        }
    }
    answer_ready_waits(controller);
}

/* Waits of a broker that went away or asks again are dropped unanswered. */
static void drop_waits_of(struct ks_zk_controller *controller, int32_t broker_id)
{
    guint i = 0;
    while (i < controller->shutdown_waits->len) {
        struct shutdown_wait *wait =
            &g_array_index(controller->shutdown_waits, struct shutdown_wait, i);
        if (wait->broker_id != broker_id) {
            i++;
            continue;
        }
        free_wait(wait);
        g_array_remove_index(controller->shutdown_waits, i);
    }
}

void ks_zk_controller_on_controlled_shutdown(struct ks_zk_controller *controller, ks_node_id source,
                                             const struct ks_controlled_shutdown_request *request)
{
    struct shutdown_wait wait = { .broker_id = request->broker_id,
                                  .node = source,
                                  .correlation_id = request->correlation_id,
                                  .pending = NULL };
    int32_t id = request->broker_id;
    int16_t error = KS_ERR_NONE;
    if (!controller->loaded) {
        error = KS_ERR_NOT_CONTROLLER; /* not active yet: "Controller moved" */
    } else if (id < 1 || id > controller->broker_count || !controller->live[id - 1]) {
        error = KS_ERR_BROKER_NOT_AVAILABLE;
    } else if (request->broker_epoch < controller->broker_epochs[id - 1]) {
        error = KS_ERR_STALE_BROKER_EPOCH;
    }
    if (error != KS_ERR_NONE) {
        answer_wait(controller, &wait, error);
        return;
    }
    drop_waits_of(controller, id);
    controller->shutting_down[id - 1] = true;
    wait.pending = g_array_new(FALSE, FALSE, sizeof(struct ks_event_tp));
    for (int32_t t = 0; t < controller->topic_count; t++) {
        for (int32_t p = 0; p < controller->topics[t].partition_count; p++) {
            const struct ks_partition_state *cached = &controller->parts[t][p];
            if (cached->replica_count > 1 &&
                list_contains(cached->replicas, cached->replica_count, id) &&
                reconcile(controller, t, p)) {
                struct ks_event_tp tp = { .topic_index = t, .partition = p };
                g_array_append_val(wait.pending, tp);
            }
        }
    }
    g_array_append_val(controller->shutdown_waits, wait);
    answer_ready_waits(controller);
}

void ks_zk_controller_on_response(struct ks_zk_controller *controller,
                                  const struct ks_zk_response *response, const uint8_t *bytes,
                                  size_t byte_count)
{
    ks_assert(response->error != KS_ZK_SESSION_EXPIRED);
    if (response->op == KS_ZK_OP_READ_STATE) {
        size_t head = ks_proto_zk_bytes(response->broker_count);
        ks_assert(ks_proto_fits(byte_count, head, response->partition_count,
                                sizeof(struct ks_partition_state)));
        take_brokers(controller, response);
        for (int32_t i = 0; i < response->partition_count; i++) {
            struct ks_partition_state state;
            memcpy(&state, bytes + head + (size_t)i * sizeof state, sizeof state);
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
        if (!reconcile(controller, cached->topic_index, cached->partition)) {
            shutdown_write_done(controller, cached->topic_index, cached->partition);
        }
        return;
    }
    ks_assert(response->error == KS_ZK_OK);
    emit_change(controller, &before, cached);
    send_state(controller, cached, 1, -1);
    shutdown_write_done(controller, cached->topic_index, cached->partition);
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
            /* A leader put back a broker that is gone or shutting down.
             * ksim's clean stop is instant, so a fetch the broker sent just
             * before can arrive after its znode went; Kafka closes the
             * session last (after fetchers and logs), so its onBrokerFailure
             * comes after such a re-add and removes it. Removing it here
             * gives Kafka's order. */
            for (int32_t i = 0; i < cached->isr_count; i++) {
                int32_t id = cached->isr[i];
                if (!is_live(controller->live, id) || controller->shutting_down[id - 1]) {
                    reconcile(controller, cached->topic_index, cached->partition);
                    break;
                }
            }
        }
        return;
    }
    ks_assert(watch->op == KS_ZK_WATCH_BROKERS);
    bool was_live[KS_BROKER_COUNT_MAX];
    int64_t old_epochs[KS_BROKER_COUNT_MAX];
    memcpy(was_live, controller->live, sizeof was_live);
    memcpy(old_epochs, controller->broker_epochs, sizeof old_epochs);
    take_brokers(controller, watch);
    for (int32_t i = 0; i < controller->broker_count; i++) {
        if (controller->shutting_down[i] &&
            (!controller->live[i] || old_epochs[i] != controller->broker_epochs[i])) {
            controller->shutting_down[i] = false; /* onBrokerFailure */
            drop_waits_of(controller, i + 1);
        }
    }
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
    controller->shutdown_waits = g_array_new(FALSE, FALSE, sizeof(struct shutdown_wait));
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
    for (guint i = 0; i < controller->shutdown_waits->len; i++) {
        free_wait(&g_array_index(controller->shutdown_waits, struct shutdown_wait, i));
    }
    g_array_free(controller->shutdown_waits, TRUE);
    free(controller);
}

int32_t ks_zk_controller_epoch(const struct ks_zk_controller *controller)
{
    return controller->epoch;
}
