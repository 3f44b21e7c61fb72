/*
** core/broker.c: a Kafka broker, the shell of the broker module: its life
** cycle (start, crash, restart, clean shutdown), the dispatch of every
** message it receives, its session with the controller (heartbeats and the
** partition-state pushes), the small client requests (Metadata,
** InitProducerId, ListOffsets), responses deferred to the disk's idle time,
** and the queries of core/broker.h. The other concepts live in their own
** files (core/broker_int.h lists them): replica state, the follower fetcher,
** fetch serving, produce, and the log directory.
**
** Invariants (asserted by ks_broker_check after every message under KS_DEBUG,
** together with R1..R6, F1, S1 and A1..A2 of the other files):
**   B1  a broker that is not running holds no replica, no pending produce,
**       parked fetch or deferred response, and every fetcher is IDLE.
**   B2  a running broker has its periodic timers armed: heartbeat (the next
**       registration or heartbeat, or the timeout of the one in flight), ISR
**       check, both checkpoints and the log tasks.
**   B3  every message a broker receives is well formed and of a kind a
**       broker handles: internal messages are built by ksim's own nodes,
**       so a malformed one is a bug and asserts (stale ones, such as an
**       old incarnation's answers, are ignored by their handlers).
**
**   (new) --start--> RUNNING --crash (world dropped timers)--> DOWN
**   RUNNING --shutdown (flush, checkpoints, marker)---------> DOWN
**   RUNNING --begin controlled shutdown--> STOPPING (heartbeats WantShutDown)
**   STOPPING --ShouldShutDown, or the shutdown timeout--> shutdown --> DOWN
**   STOPPING --crash--> DOWN
**   DOWN --restart (recovery unless the marker is there, new broker epoch,
**          register again)--> RUNNING
**
** Controlled shutdown follows KRaft's broker (BrokerServer.shutdown,
** BrokerLifecycleManager): with controlled.shutdown.enable it enters
** PENDING_CONTROLLED_SHUTDOWN and sends a heartbeat at once with
** WantShutDown; until the controller answers ShouldShutDown it keeps serving
** (as a follower of the partitions the controller moved away) and keeps
** heartbeating, the first time 50 ms after the first answer
** (BrokerLifecycleManager: "a little bit sooner than we usually would"),
** then every broker.heartbeat.interval.ms; BrokerServer.shutdown waits at
** most its timeout (KafkaBroker.shutdown(): 5 minutes) and then shuts down
** anyway. The shutdown itself is the clean one (logs flushed, checkpoints,
** .kafka_cleanshutdown), reported as KS_EV_BROKER_STOPPED. A broker that is
** not registered yet (KRaft: not RUNNING) skips the controlled part, as
** BeginControlledShutdownEvent does.
**
** Simplifications (see docs/model.md):
**   - inter-broker requests carry full partition lists (no incremental fetch
**     sessions): the messages are small at ksim's scales;
**   - the producer id allocator lives on each broker (proto.h);
**   - a broker hosts exactly the replicas the controller assigns; there is no
**     reassignment.
*/
#include "array.h"
#include "broker_int.h"

#include "group.h"
#include "txn_coord.h"

#include <glib.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ------------------------------------------------------- */

void ks_broker_emit(struct ks_broker *broker, struct ks_cluster_event *event)
{
    if (broker->observer == NULL || broker->observer->on_event == NULL) {
        return;
    }
    event->at_ns = ks__broker_now_ns(broker);
    event->broker = broker->id;
    broker->observer->on_event(broker->observer->context, event);
}

struct ks__replica *ks__broker_find_replica(const struct ks_broker *broker, int32_t topic_index,
                                            int32_t partition)
{
    if (!broker->running || topic_index < 0 || topic_index >= broker->topic_count ||
        partition < 0 || partition >= broker->topics[topic_index].partition_count) {
        return NULL;
    }
    struct ks__replica *replica = broker->replicas[topic_index][partition];
    if (replica == NULL || replica->log == NULL) {
        return NULL;
    }
    return replica;
}

bool ks__broker_alive(const struct ks_broker *broker, int32_t id)
{
    return id >= 1 && id <= broker->spec->cluster->broker_count && broker->broker_alive[id - 1];
}

/* ---- deferred sends and callbacks ----------------------------------------- */

static void deferred_fire(ks_world *world, void *context)
{
    struct ks__deferred *item = context;
    struct ks_broker *broker = item->broker;
    g_ptr_array_remove(broker->deferred, item);
    if (item->bytes != NULL) {
        /* The world takes the copy made at ks__broker_send_at. */
        ks_world_send_owned(world, (ks_node_id)broker->id, item->target, item->kind, item->bytes,
                            item->byte_count);
    } else if (item->done != NULL) {
        item->done(item->context, item->error, item->base_offset);
    }
    free(item);
}

void ks__broker_send_at(struct ks_broker *broker, ks_time_ns at_ns, ks_node_id target,
                        uint32_t kind, const void *bytes, size_t byte_count)
{
    ks_time_ns now = ks__broker_now_ns(broker);
    if (at_ns <= now) {
        ks_world_send(broker->world, (ks_node_id)broker->id, target, kind, bytes, byte_count);
        return;
    }
    struct ks__deferred *item = calloc(1, sizeof *item);
    ks_assert(item != NULL);
    item->broker = broker;
    item->target = target;
    item->kind = kind;
    item->bytes = g_malloc(byte_count ? byte_count : 1);
    memcpy(item->bytes, bytes, byte_count);
    item->byte_count = byte_count;
    ks_ptr_array_add(broker->deferred, item);
    item->timer = ks_world_schedule(broker->world, (ks_node_id)broker->id, at_ns - now,
                                    KS_TIMER_BROKER_RESPOND, deferred_fire, item);
}

void ks__broker_callback_at(struct ks_broker *broker, ks_time_ns at_ns,
                            void (*done)(void *context, int16_t error, int64_t base_offset),
                            void *context, int16_t error, int64_t base_offset)
{
    if (done == NULL) {
        return;
    }
    ks_time_ns now = ks__broker_now_ns(broker);
    struct ks__deferred *item = calloc(1, sizeof *item);
    ks_assert(item != NULL);
    item->broker = broker;
    item->done = done;
    item->context = context;
    item->error = error;
    item->base_offset = base_offset;
    ks_ptr_array_add(broker->deferred, item);
    item->timer =
        ks_world_schedule(broker->world, (ks_node_id)broker->id, at_ns > now ? at_ns - now : 0,
                          KS_TIMER_BROKER_RESPOND, deferred_fire, item);
}

/* ---- controller session ---------------------------------------------------------- */

void ks__broker_apply_push(struct ks_broker *broker, const uint8_t *message, size_t message_bytes)
{
    struct ks_partition_state_push push;
    size_t head = ks_proto_push_decode(message, message_bytes, &push); /* B3 */
    ks_assert(ks_proto_fits(message_bytes, head, push.partition_count,
                            sizeof(struct ks_partition_state))); /* B3 */
    if (push.broker_epoch != broker->broker_epoch) {
        return; /* sent to an earlier incarnation */
    }
    for (int32_t i = 0; i < push.broker_count && i < KS_BROKER_COUNT_MAX; i++) {
        broker->broker_alive[i] = push.broker_alive[i];
        broker->broker_epochs[i] = push.broker_epochs[i];
    }
    /* Kafka applies a LeaderAndIsr (or a metadata delta) to every partition
     * first and then adds the new followers to their leaders' fetchers in
     * one call (ReplicaManager.makeFollowers, then ReplicaFetcherManager.
     * addFetcherForPartitions): one fetch restart per leader, after the
     * loop, in leader-id order. Restarting per partition sent a full fetch
     * request per partition, each abandoning the last: quadratic in the
     * partitions a broker follows (12 x 10,000 never got past start-up). */
    broker->push_applying = true;
    int32_t broker_count = broker->spec->cluster->broker_count;
    memset(broker->restart_pending, 0, (size_t)broker_count);
    for (int32_t i = 0; i < push.partition_count; i++) {
        struct ks_partition_state state;
        memcpy(&state, message + head + (size_t)i * sizeof state, sizeof state);
        ks__replica_apply_state(broker, &state);
    }
    broker->push_applying = false;
    for (int32_t i = 0; i < broker_count; i++) {
        if (broker->restart_pending[i]) {
            broker->restart_pending[i] = 0;
            ks__fetcher_restart(broker, i + 1);
        }
    }
    if (push.metadata_version > broker->metadata_version) {
        broker->metadata_version = push.metadata_version;
    }
}

static void on_partition_state(struct ks_broker *broker, const uint8_t *message,
                               size_t message_bytes)
{
    ks__broker_apply_push(broker, message, message_bytes);
}

static bool zookeeper_mode(const struct ks_broker *broker)
{
    return broker->spec->cluster->controller_model == KS_CONTROLLER_MODEL_ZOOKEEPER;
}

/* The heartbeat timer's period: ZooKeeper pings under zookeeper. */
static ks_time_ns heartbeat_interval_ns(const struct ks_broker *broker)
{
    return zookeeper_mode(broker) ? ks__zk_ping_interval_ns(broker)
                                  : (ks_time_ns)broker->spec->cluster->broker_heartbeat_interval_ns;
}

/* The broker's side of its session (BrokerLifecycleManager): one
 * registration or heartbeat in flight at a time, the next one scheduled from
 * the answer.
 *
 *   STARTING, not registered --registration answered NONE--> registered,
 *       heartbeat at once (DUPLICATE_BROKER_REGISTRATION or no answer: retry
 *       after the backoff)
 *   STARTING --answer not caught up--> heartbeat again in 10 ms
 *   STARTING --answer caught up--> RECOVERY, ready to unfence (ksim's log
 *       recovery ran at the restart), heartbeat at once with want_fence 0
 *   RECOVERY --answer unfenced--> RUNNING; RECOVERY/RUNNING: next heartbeat
 *       broker.heartbeat.interval.ms after the answer
 *   any --error or no answer within broker.session.timeout.ms / 2--> retry
 *       after the backoff
 *
 * The backoff is Kafka's ExponentialBackoff(100 ms, x2, broker.session.
 * timeout.ms, jitter 0.02) over the failures since the last good answer; the
 * request timeout is session / 2 (the heartbeat channel's retry timeout,
 * KAFKA-14392). A broker that started with the cluster is registered and
 * RUNNING from the start (the cluster is formed before topics are created). */
#define LIFECYCLE_BACKOFF_INITIAL_NS    (100 * KS_NS_PER_MS)
#define LIFECYCLE_STARTING_HEARTBEAT_NS (10 * KS_NS_PER_MS)

static void communicate(ks_world *world, void *context);
static void communication_timeout(ks_world *world, void *context);

static void schedule_communication(struct ks_broker *broker, ks_time_ns delay_ns)
{
    ks_assert(!broker->communication_in_flight);
    broker->heartbeat_timer = ks_world_schedule(broker->world, (ks_node_id)broker->id, delay_ns,
                                                KS_TIMER_BROKER_HEARTBEAT, communicate, broker);
}

/* ExponentialBackoff.backoff(failed_attempts): initial * 2^attempts, capped
 * at the session timeout, times a uniform factor in [0.98, 1.02). */
static ks_time_ns lifecycle_backoff_ns(struct ks_broker *broker)
{
    ks_time_ns max_ns = (ks_time_ns)broker->spec->cluster->broker_session_timeout_ns;
    ks_time_ns term_ns = LIFECYCLE_BACKOFF_INITIAL_NS;
    for (int64_t i = 0; i < broker->failed_attempts && term_ns < max_ns; i++) {
        term_ns *= 2;
    }
    if (term_ns > max_ns) {
        term_ns = max_ns;
    }
    ks_time_ns jitter_ns = term_ns / 50;
    ks_time_ns backoff_ns =
        term_ns - jitter_ns + ks_world_random_scaled(broker->world, KS_RNG_CLUSTER, 2 * jitter_ns);
    return backoff_ns < max_ns ? backoff_ns : max_ns;
}

/* controllers = 3 or 5: the broker talks to the controller it believes
 * active (NodeToControllerChannelManager's cached controller). A hint from
 * NOT_CONTROLLER or a push from a controller moves it there; a request that
 * timed out moves it to the next voter. */
static int32_t quorum_size(const struct ks_broker *broker)
{
    return zookeeper_mode(broker) ? 1 : broker->spec->cluster->controller_count;
}

static bool is_controller_node(const struct ks_broker *broker, ks_node_id node)
{
    int32_t first = broker->spec->cluster->broker_count + 1;
    return (int32_t)node >= first && (int32_t)node < first + quorum_size(broker);
}

static void next_controller(struct ks_broker *broker, int32_t hint)
{
    if (quorum_size(broker) <= 1) {
        return;
    }
    if (hint > 0 && is_controller_node(broker, (ks_node_id)hint)) {
        broker->controller_node = (ks_node_id)hint;
        return;
    }
    int32_t first = broker->spec->cluster->broker_count + 1;
    int32_t index = ((int32_t)broker->controller_node - first + 1) % quorum_size(broker);
    broker->controller_node = (ks_node_id)(first + index);
}

static void communication_failed(struct ks_broker *broker)
{
    ks_time_ns delay_ns = lifecycle_backoff_ns(broker);
    broker->failed_attempts++;
    schedule_communication(broker, delay_ns);
}

/* CommunicationEvent: a registration until one was accepted, then heartbeats. */
static void communicate(ks_world *world, void *context)
{
    (void)world;
    struct ks_broker *broker = context;
    ks_assert(!broker->communication_in_flight);
    struct ks_broker_heartbeat_request request;
    memset(&request, 0, sizeof request);
    request.broker_id = broker->id;
    request.broker_epoch = broker->broker_epoch;
    request.metadata_version = broker->registered ? broker->metadata_version : -1;
    request.want_fence = broker->ready_to_unfence ? 0 : 1;
    request.want_shutdown = broker->shutdown_pending ? 1 : 0;
    request.correlation_id = ++broker->communication_correlation_id;
    ks_world_send(broker->world, (ks_node_id)broker->id, broker->controller_node,
                  KS_MSG_BROKER_HEARTBEAT_REQUEST, &request, sizeof request);
    broker->communication_in_flight = true;
    broker->heartbeat_timer =
        ks_world_schedule(broker->world, (ks_node_id)broker->id,
                          (ks_time_ns)broker->spec->cluster->broker_session_timeout_ns / 2,
                          KS_TIMER_BROKER_HEARTBEAT_TIMEOUT, communication_timeout, broker);
}

static void communication_timeout(ks_world *world, void *context)
{
    (void)world;
    struct ks_broker *broker = context;
    ks_assert(broker->communication_in_flight);
    broker->communication_in_flight = false;
    next_controller(broker, 0);
    communication_failed(broker);
}

/* BrokerHeartbeatResponseEvent's success branch, by state. */
static void on_heartbeat_accepted(struct ks_broker *broker,
                                  const struct ks_broker_heartbeat_response *response)
{
    ks_time_ns interval_ns = (ks_time_ns)broker->spec->cluster->broker_heartbeat_interval_ns;
    switch (broker->lifecycle) {
    case KS__LIFECYCLE_STARTING:
        if (!response->caught_up) {
            schedule_communication(broker, LIFECYCLE_STARTING_HEARTBEAT_NS);
            return;
        }
        /* BrokerServer then finishes its start-up (log recovery, which ksim
         * did at the restart) and calls setReadyToUnfence: at once. */
        broker->lifecycle = KS__LIFECYCLE_RECOVERY;
        broker->ready_to_unfence = true;
        schedule_communication(broker, 0);
        return;
    case KS__LIFECYCLE_RECOVERY:
        if (!response->fenced) {
            broker->lifecycle = KS__LIFECYCLE_RUNNING;
        }
        schedule_communication(broker, interval_ns);
        return;
    case KS__LIFECYCLE_RUNNING: schedule_communication(broker, interval_ns); return;
    }
}

/* controller = zookeeper: the heartbeat timer is the ZooKeeper client's ping
 * (the lifecycle machine above is KRaft's only). */
static void heartbeat_tick(ks_world *world, void *context)
{
    struct ks_broker *broker = context;
    (void)world;
    ks_assert(zookeeper_mode(broker));
    ks__zk_tick(broker);
    broker->heartbeat_timer =
        ks_world_schedule(broker->world, (ks_node_id)broker->id, heartbeat_interval_ns(broker),
                          KS_TIMER_BROKER_HEARTBEAT, heartbeat_tick, broker);
}

static void on_shutdown_answer(struct ks_broker *broker,
                               const struct ks_broker_heartbeat_response *response);

static void on_heartbeat_response(struct ks_broker *broker,
                                  const struct ks_broker_heartbeat_response *response)
{
    if (response->broker_epoch != broker->broker_epoch || !broker->communication_in_flight ||
        response->correlation_id != broker->communication_correlation_id) {
        return; /* for an earlier incarnation, or answered after its timeout */
    }
    ks_world_cancel(broker->world, broker->heartbeat_timer);
    broker->communication_in_flight = false;
    if (response->error_code == KS_ERR_NOT_CONTROLLER) {
        /* Not the active controller: ask the one it names (or the next)
         * after the channel's retry backoff; not a failed attempt. */
        next_controller(broker, response->controller_hint);
        schedule_communication(broker, LIFECYCLE_BACKOFF_INITIAL_NS);
        return;
    }
    if (response->error_code != KS_ERR_NONE) {
        communication_failed(broker);
        return;
    }
    broker->failed_attempts = 0;
    if (!broker->registered) {
        /* Registered: send a heartbeat immediately. */
        broker->registered = true;
        schedule_communication(broker, 0);
        return;
    }
    if (broker->shutdown_pending) {
        on_shutdown_answer(broker, response);
        return;
    }
    on_heartbeat_accepted(broker, response);
}

/* ---- controlled shutdown ------------------------------------------------------------ */

/* KafkaBroker.shutdown()'s default timeout: how long BrokerServer.shutdown
 * waits for the controller to let the broker go. */
#define SHUTDOWN_TIMEOUT_NS ((ks_time_ns)5 * 60 * KS_NS_PER_S)
/* BrokerLifecycleManager: the heartbeat after the first answer that does not
 * let the broker go comes this soon. */
#define SHUTDOWN_FIRST_RETRY_NS ((ks_time_ns)50 * KS_NS_PER_MS)

/* The clean shutdown at the end of a controlled one (or instead of it). */
void ks__broker_finish_shutdown(struct ks_broker *broker, enum ks_event_reason why)
{
    ks_broker_shutdown(broker); /* drop_memory clears the pending state and timer */
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, 0, KS_EV_BROKER_STOPPED);
    event.reason = why;
    event.broker_epoch = broker->broker_epoch;
    ks_broker_emit(broker, &event);
}

static void shutdown_timed_out(ks_world *world, void *context)
{
    (void)world;
    struct ks_broker *broker = context;
    broker->shutdown_timer = 0;
    ks__broker_finish_shutdown(broker, KS_REASON_SHUTDOWN_TIMED_OUT);
}

/* Sends the next heartbeat after delay_ns (0: now) instead of at its slot.
 * KRaft: the scheduled communication is moved, unless a request is in
 * flight (its answer schedules the next one); controller = zookeeper: the
 * ping timer is. */
static void heartbeat_after(struct ks_broker *broker, ks_time_ns delay_ns)
{
    if (!zookeeper_mode(broker) && broker->communication_in_flight) {
        return;
    }
    ks_world_cancel(broker->world, broker->heartbeat_timer);
    broker->heartbeat_timer = 0;
    if (zookeeper_mode(broker)) {
        if (delay_ns == 0) {
            heartbeat_tick(broker->world, broker);
            return;
        }
        broker->heartbeat_timer =
            ks_world_schedule(broker->world, (ks_node_id)broker->id, delay_ns,
                              KS_TIMER_BROKER_HEARTBEAT, heartbeat_tick, broker);
        return;
    }
    if (delay_ns == 0) {
        communicate(broker->world, broker);
        return;
    }
    schedule_communication(broker, delay_ns);
}

/* BrokerLifecycleManager's BrokerHeartbeatResponseEvent in
 * PENDING_CONTROLLED_SHUTDOWN, for an accepted answer (an error is retried
 * after the backoff, as in every state; the only error the controller
 * answers is a refused registration, and a broker not registered shuts down
 * without the controller, as BeginControlledShutdownEvent does outside
 * RUNNING). */
static void on_shutdown_answer(struct ks_broker *broker,
                               const struct ks_broker_heartbeat_response *response)
{
    if (response->should_shut_down) {
        ks__broker_finish_shutdown(broker, KS_REASON_CONTROLLED_SHUTDOWN);
        return;
    }
    if (!broker->shutdown_answered) {
        broker->shutdown_answered = true;
        heartbeat_after(broker, SHUTDOWN_FIRST_RETRY_NS);
        return;
    }
    heartbeat_after(broker, (ks_time_ns)broker->spec->cluster->broker_heartbeat_interval_ns);
}

bool ks_broker_begin_controlled_shutdown(struct ks_broker *broker)
{
    if (!broker->running || broker->shutdown_pending) {
        return false;
    }
    if (!broker->spec->cluster->controlled_shutdown_enable || !broker->registered) {
        ks__broker_finish_shutdown(broker, KS_REASON_SHUTDOWN_NOT_CONTROLLED);
        return true;
    }
    broker->shutdown_pending = true;
    broker->shutdown_answered = false;
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, 0, KS_EV_INFO);
    event.reason = KS_REASON_SHUTDOWN_REQUESTED;
    ks_broker_emit(broker, &event);
    broker->shutdown_timer =
        ks_world_schedule(broker->world, (ks_node_id)broker->id, SHUTDOWN_TIMEOUT_NS,
                          KS_TIMER_BROKER_SHUTDOWN_TIMEOUT, shutdown_timed_out, broker);
    if (zookeeper_mode(broker)) {
        ks__zk_begin_controlled_shutdown(broker); /* a ControlledShutdown request instead */
        return true;
    }
    heartbeat_after(broker, 0); /* "Send the next heartbeat immediately" */
    return true;
}

bool ks_broker_stopping(const struct ks_broker *broker)
{
    return broker->running && broker->shutdown_pending;
}

/* ---- other client requests ------------------------------------------------------ */

static void on_metadata_request(struct ks_broker *broker, ks_node_id source,
                                const struct ks_metadata_request *request)
{
    int32_t t = request->topic_index;
    int32_t count = (t >= 0 && t < broker->topic_count) ? broker->topics[t].partition_count : 0;
    int32_t broker_count = broker->spec->cluster->broker_count;
    size_t head = ks_proto_metadata_bytes(broker_count);
    size_t bytes = head + (size_t)count * sizeof(struct ks_metadata_partition);
    uint8_t *message = calloc(1, bytes);
    ks_assert(message != NULL);
    struct ks_metadata_response response;
    memset(&response, 0, sizeof response);
    response.correlation_id = request->correlation_id;
    response.topic_index = t;
    response.answering_broker = broker->id;
    response.broker_count = broker_count;
    memcpy(response.broker_alive, broker->broker_alive,
           (size_t)ks_proto_broker_slots(broker_count));
    response.partition_count = count;
    if (count == 0) {
        response.error_code = KS_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    ks_proto_metadata_encode(&response, message);
    struct ks_metadata_partition *entries = (struct ks_metadata_partition *)(message + head);
    for (int32_t p = 0; p < count; p++) {
        const struct ks_partition_state *state = &broker->meta[t][p];
        entries[p].partition = p;
        entries[p].leader = state->partition_epoch >= 0 ? state->leader : -1;
        entries[p].leader_epoch = state->leader_epoch;
        entries[p].error_code = entries[p].leader < 0 ? KS_ERR_LEADER_NOT_AVAILABLE : KS_ERR_NONE;
    }
    ks_world_send(broker->world, (ks_node_id)broker->id, source, KS_MSG_METADATA_RESPONSE, message,
                  bytes);
    free(message);
}

static void on_api_versions(struct ks_broker *broker, ks_node_id source,
                            const struct ks_api_versions_request *request)
{
    struct ks_api_versions_response response;
    memset(&response, 0, sizeof response);
    response.correlation_id = request->correlation_id;
    ks_world_send(broker->world, (ks_node_id)broker->id, source, KS_MSG_API_VERSIONS_RESPONSE,
                  &response, sizeof response);
}

static void on_init_producer_id(struct ks_broker *broker, ks_node_id source,
                                const struct ks_init_producer_id_request *request)
{
    struct ks_init_producer_id_response response;
    memset(&response, 0, sizeof response);
    response.correlation_id = request->correlation_id;
    response.producer_id = ks_broker_allocate_producer_id(broker);
    response.producer_epoch = 0;
    response.error_code = KS_ERR_NONE;
    ks_world_send(broker->world, (ks_node_id)broker->id, source, KS_MSG_INIT_PRODUCER_ID_RESPONSE,
                  &response, sizeof response);
}

static void on_list_offsets(struct ks_broker *broker, ks_node_id source,
                            const struct ks_list_offsets_request *request)
{
    struct ks_list_offsets_response response;
    memset(&response, 0, sizeof response);
    response.correlation_id = request->correlation_id;
    response.topic_index = request->topic_index;
    response.partition = request->partition;
    response.offset = -1;
    response.leader_epoch = -1;
    struct ks__replica *replica =
        ks__serve_leader_for(broker, request->topic_index, request->partition,
                             request->current_leader_epoch, &response.error_code);
    if (replica != NULL) {
        response.leader_epoch = replica->state.leader_epoch;
        if (request->timestamp == KS_LIST_OFFSETS_LATEST) {
            response.offset = replica->hw;
        } else if (request->timestamp == KS_LIST_OFFSETS_EARLIEST) {
            response.offset = ks_log_start_offset(replica->log);
        } else {
            int64_t offset = ks_log_offset_for_timestamp(replica->log, request->timestamp);
            response.offset = offset > replica->hw ? replica->hw : offset;
        }
    }
    ks_world_send(broker->world, (ks_node_id)broker->id, source, KS_MSG_LIST_OFFSETS_RESPONSE,
                  &response, sizeof response);
}

/* ---- whole-object check ------------------------------------------------------------ */

static void check_fetchers(const struct ks_broker *broker)
{
    for (int32_t i = 0; i < KS_BROKER_COUNT_MAX; i++) {
        const struct ks__fetcher *fetcher = &broker->fetchers[i];
        switch (fetcher->state) { /* F1 */
        case KS__FETCHER_IDLE:
            ks_assert(fetcher->timeout_timer == 0 && fetcher->kick_timer == 0);
            break;
        case KS__FETCHER_SCHEDULED:
            ks_assert(fetcher->timeout_timer == 0 && fetcher->kick_timer != 0);
            break;
        case KS__FETCHER_IN_FLIGHT:
            ks_assert(fetcher->timeout_timer != 0 && fetcher->kick_timer == 0);
            break;
        }
        if (!broker->running) {
            ks_assert(fetcher->state == KS__FETCHER_IDLE); /* B1 */
        }
    }
}

static void check_parked(const struct ks_broker *broker)
{
    for (guint i = 0; i < broker->delayed->len; i++) {
        const struct ks__delayed_fetch *item = g_ptr_array_index(broker->delayed, i);
        ks_assert(item->timer != 0); /* S1 */
        for (guint j = i + 1; j < broker->delayed->len; j++) {
            const struct ks__delayed_fetch *other = g_ptr_array_index(broker->delayed, j);
            ks_assert(other->source != item->source); /* S1 */
        }
    }
    ks__serve_check_parked(broker); /* S6, S7, S8 of broker_serve.c */
    for (guint i = 0; i < broker->pending->len; i++) {
        const struct ks__pending_produce *item = g_ptr_array_index(broker->pending, i);
        const struct ks__replica *replica = ks__broker_find_replica(
            broker, item->completion.topic_index, item->completion.partition);
        ks_assert(item->timer != 0);                                   /* A1 */
        ks_assert(replica != NULL && replica->role == KS_ROLE_LEADER); /* A2 */
        ks_assert(replica->hw < item->required_offset);                /* A1 */
    }
    for (guint i = 0; i < broker->verifying->len; i++) {
        const struct ks__verifying *item = g_ptr_array_index(broker->verifying, i);
        ks_assert(item->timer != 0 || item->local_add); /* V1 */
        ks_assert(item->message != NULL);               /* V1 */
        ks_assert(item->guard != 0);                    /* V1 */
    }
}

void ks_broker_check(const struct ks_broker *broker)
{
    check_fetchers(broker);
    ks_assert(!broker->releases_deferred && broker->deferred_releases->len == 0); /* A4 */
    ks_assert(broker->gather_current == NULL);                                    /* A5 */
    if (!broker->running) {
        ks_assert(broker->pending->len == 0);   /* B1 */
        ks_assert(broker->verifying->len == 0); /* B1 */
        ks_assert(broker->delayed->len == 0);   /* B1 */
        ks_assert(broker->deferred->len == 0);  /* B1 */
        ks_assert(broker->gathers->len == 0);   /* B1 */
    } else {
        ks_assert(broker->heartbeat_timer != 0);           /* B2 */
        ks_assert(broker->isr_timer != 0);                 /* B2 */
        ks_assert(broker->hw_checkpoint_timer != 0);       /* B2 */
        ks_assert(broker->recovery_checkpoint_timer != 0); /* B2 */
        ks_assert(broker->log_tasks_timer != 0);           /* B2 */
    }
    check_parked(broker);
    if (!broker->running) {
        ks_assert(broker->hosted->len == 0); /* B1 */
    }
    for (guint i = 0; i < broker->hosted->len; i++) {
        struct ks__replica *replica = ks__hosted(broker, i);
        ks_assert(broker->replicas[replica->topic_index][replica->partition] == replica);
        if (i > 0) {
            const struct ks__replica *before = ks__hosted(broker, i - 1);
            ks_assert(before->topic_index < replica->topic_index ||
                      (before->topic_index == replica->topic_index &&
                       before->partition < replica->partition)); /* (topic, partition) order */
        }
        if (replica->log == NULL) {
            continue;
        }
        ks__replica_check(broker, replica);
    }
}

/* ---- receiving --------------------------------------------------------------------- */

/* Copies a fixed-size message into *out after checking its size (B3). */
#define READ_MESSAGE(out, bytes, message_bytes)      \
    do {                                             \
        ks_assert((message_bytes) >= sizeof *(out)); \
        memcpy((out), (bytes), sizeof *(out));       \
    } while (0)

static void dispatch(struct ks_broker *broker, ks_node_id source, enum ks_msg_kind kind,
                     const uint8_t *bytes, size_t message_bytes)
{
    switch (kind) {
    case KS_MSG_PARTITION_STATE:
        ks_assert(source == broker->controller_node || is_controller_node(broker, source)); /* B3 */
        if (source != broker->controller_node) {
            /* A newly active controller: heartbeat to it from now on. */
            broker->controller_node = source;
            if (broker->communication_in_flight && !broker->shutdown_pending) {
                ks_world_cancel(broker->world, broker->heartbeat_timer);
                broker->communication_in_flight = false;
                schedule_communication(broker, 0);
            }
        }
        on_partition_state(broker, bytes, message_bytes);
        return;
    case KS_MSG_BROKER_HEARTBEAT_RESPONSE: {
        struct ks_broker_heartbeat_response response;
        READ_MESSAGE(&response, bytes, message_bytes);
        on_heartbeat_response(broker, &response);
        return;
    }
    case KS_MSG_ALTER_PARTITION_RESPONSE: {
        struct ks_alter_partition_response response;
        READ_MESSAGE(&response, bytes, message_bytes);
        ks__replica_on_alter_response(broker, &response);
        return;
    }
    case KS_MSG_FETCH_REQUEST: ks__serve_on_request(broker, source, bytes, message_bytes); return;
    case KS_MSG_FETCH_RESPONSE:
        ks__fetcher_on_response(broker, source, bytes, message_bytes);
        return;
    case KS_MSG_PRODUCE_REQUEST:
        ks__produce_on_request(broker, source, bytes, message_bytes);
        return;
    case KS_MSG_PRODUCE_REQUESTS:
        ks__produce_on_requests(broker, source, bytes, message_bytes);
        return;
    case KS_MSG_METADATA_REQUEST: {
        struct ks_metadata_request request;
        READ_MESSAGE(&request, bytes, message_bytes);
        on_metadata_request(broker, source, &request);
        return;
    }
    case KS_MSG_INIT_PRODUCER_ID_REQUEST: {
        struct ks_init_producer_id_request request;
        READ_MESSAGE(&request, bytes, message_bytes);
        on_init_producer_id(broker, source, &request);
        return;
    }
    case KS_MSG_LIST_OFFSETS_REQUEST: {
        struct ks_list_offsets_request request;
        READ_MESSAGE(&request, bytes, message_bytes);
        on_list_offsets(broker, source, &request);
        return;
    }
    case KS_MSG_OFFSET_FOR_LEADER_EPOCH_REQUEST: {
        struct ks_offset_for_leader_epoch_request request;
        READ_MESSAGE(&request, bytes, message_bytes);
        ks__serve_offset_for_leader_epoch(broker, source, &request);
        return;
    }
    case KS_MSG_API_VERSIONS_REQUEST: {
        struct ks_api_versions_request request;
        READ_MESSAGE(&request, bytes, message_bytes);
        on_api_versions(broker, source, &request);
        return;
    }
    case KS_MSG_ZK_RESPONSE:
    case KS_MSG_ZK_WATCH:
    case KS_MSG_LEADER_AND_ISR:
    case KS_MSG_CONTROLLED_SHUTDOWN_REQUEST:
    case KS_MSG_CONTROLLED_SHUTDOWN_RESPONSE:
        ks_assert(zookeeper_mode(broker)); /* B3 */
        ks__zk_on_message(broker, source, kind, bytes, message_bytes);
        return;
    case KS_MSG_ZK_REQUEST:
    case KS_MSG_METADATA_RESPONSE:
    case KS_MSG_INIT_PRODUCER_ID_RESPONSE:
    case KS_MSG_PRODUCE_RESPONSE:
    case KS_MSG_PRODUCE_RESPONSES:
    case KS_MSG_LIST_OFFSETS_RESPONSE:
    case KS_MSG_API_VERSIONS_RESPONSE:
    case KS_MSG_OFFSET_FOR_LEADER_EPOCH_RESPONSE:
    case KS_MSG_BROKER_HEARTBEAT_REQUEST:
    case KS_MSG_ALTER_PARTITION_REQUEST:
    case KS_MSG_RAFT_VOTE_REQUEST:
    case KS_MSG_RAFT_VOTE_RESPONSE:
    case KS_MSG_RAFT_BEGIN_EPOCH:
    case KS_MSG_RAFT_BEGIN_EPOCH_RESPONSE:
    case KS_MSG_RAFT_FETCH_REQUEST:
    case KS_MSG_RAFT_FETCH_RESPONSE: break;
    }
    ks_assert(!"a message kind no broker receives"); /* B3 */
}

static void on_receive(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                       const void *message, size_t message_bytes, void *context)
{
    (void)world;
    (void)self;
    struct ks_broker *broker = context;
    if (!broker->running) {
        return;
    }
    if (kind >= KS_MSG_GROUP_FIRST && kind <= KS_MSG_GROUP_LAST) {
        /* Only consumers send group messages, and a broker has a
         * coordinator whenever the cluster has consumers. */
        ks_assert(broker->coordinator != NULL); /* B3 */
        ks_group_coordinator_handle(broker->coordinator, source, kind, message, message_bytes);
        return;
    }
    if (kind == KS_MSG_TXN_VERIFY_RESPONSE) {
        /* The coordinator's answer to this leader's verification (KIP-890). */
        ks__produce_on_verify_response(broker, message, message_bytes);
        return;
    }
    if (kind >= KS_MSG_TXN_FIRST && kind <= KS_MSG_TXN_LAST) {
        /* Transactional producers and transaction coordinators send these;
         * a broker has a transaction coordinator whenever the cluster has
         * __transaction_state (core/txn_coord.h). */
        ks_assert(broker->txn_coordinator != NULL); /* B3 */
        ks_txn_coordinator_handle(broker->txn_coordinator, source, kind, message, message_bytes);
        return;
    }
    dispatch(broker, source, (enum ks_msg_kind)kind, message, message_bytes);
#ifdef KS_DEBUG
    ks_broker_check(broker); /* after every message (make DEBUG=1) */
#endif
}

/* ---- life cycle ----------------------------------------------------------------------- */

struct ks_broker *ks_broker_new(ks_world *world, const struct ks_cluster_spec *spec,
                                const struct ks_topic_config *topics, int32_t topic_count,
                                int32_t broker_id, const struct ks_cluster_observer *observer)
{
    ks_assert(broker_id >= 1 && broker_id <= spec->cluster->broker_count);
    struct ks_broker *broker = calloc(1, sizeof *broker);
    ks_assert(broker != NULL);
    broker->world = world;
    broker->spec = spec;
    broker->topics = topics;
    broker->topic_count = topic_count;
    broker->id = broker_id;
    broker->observer = observer;
    broker->controller_node = ks_cluster_controller_node(spec);
    g_snprintf(broker->dir, sizeof broker->dir, "broker-%d", broker_id);
    for (int32_t i = 0; i < KS_BROKER_COUNT_MAX; i++) {
        broker->fetcher_refs[i].broker = broker;
        broker->fetcher_refs[i].leader_id = i + 1;
    }
    broker->meta = calloc((size_t)(topic_count > 0 ? topic_count : 1), sizeof *broker->meta);
    broker->replicas =
        calloc((size_t)(topic_count > 0 ? topic_count : 1), sizeof *broker->replicas);
    ks_assert(broker->meta != NULL && broker->replicas != NULL);
    for (int32_t t = 0; t < topic_count; t++) {
        broker->meta[t] =
            calloc((size_t)topics[t].partition_count, sizeof(struct ks_partition_state));
        broker->replicas[t] =
            calloc((size_t)topics[t].partition_count, sizeof(struct ks__replica *));
        ks_assert(broker->meta[t] != NULL && broker->replicas[t] != NULL);
    }
    broker->topic_by_name = g_hash_table_new(g_str_hash, g_str_equal);
    for (int32_t t = 0; t < topic_count; t++) {
        /* Names are unique (the loader refuses a topic given twice); were
         * one not, the first would win, as the scan it replaces found. */
        if (!g_hash_table_contains(broker->topic_by_name, topics[t].name)) {
            g_hash_table_insert(broker->topic_by_name, (gpointer)topics[t].name,
                                GINT_TO_POINTER(t + 1));
        }
    }
    broker->offsets_topic_index = ks_broker_topic_index(broker, "__consumer_offsets");
    broker->txn_topic_index = ks_broker_topic_index(broker, KS_TXN_TOPIC_NAME);
    broker->hosted = g_ptr_array_new();
    broker->pending = g_ptr_array_new();
    broker->verifying = g_ptr_array_new();
    broker->delayed = g_ptr_array_new();
    broker->delayed_key_bits = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    broker->deferred_releases = g_array_new(FALSE, FALSE, sizeof(struct ks_fetch_forgotten));
    broker->gathers = g_ptr_array_new();
    broker->deferred = g_ptr_array_new();
    broker->broker_epoch = 0;
    return broker;
}

static void reset_metadata(struct ks_broker *broker)
{
    for (int32_t t = 0; t < broker->topic_count; t++) {
        for (int32_t p = 0; p < broker->topics[t].partition_count; p++) {
            memset(&broker->meta[t][p], 0, sizeof broker->meta[t][p]);
            broker->meta[t][p].partition_epoch = -1;
            broker->meta[t][p].leader = -1;
            broker->meta[t][p].topic_index = t;
            broker->meta[t][p].partition = p;
        }
    }
    memset(broker->broker_alive, 0, sizeof broker->broker_alive);
    for (int32_t i = 0; i < KS_BROKER_COUNT_MAX; i++) {
        broker->broker_epochs[i] = -1;
    }
    broker->metadata_version = -1;
}

/* The delay before a periodic task's first run after the broker starts.
 * Real brokers do not start in the same nanosecond, and each task keeps the
 * phase its process start gave it (ReplicaManager.startup schedules
 * isr-expiration and the HW checkpoint from the start, LogManager.startup its
 * retention, flush and checkpoint tasks, BrokerLifecycleManager heartbeats
 * every broker.heartbeat.interval.ms from registration). So at the run's
 * start, with broker.task.phase = random, a task first runs at a uniform
 * point of its period, drawn per seed and per task; with `aligned`, and on a
 * restart (the restart time is the new process start), after `aligned_ns`.
 * One KS_RNG_PHASE draw per task at the run's start in both modes, so that
 * the setting never shifts the clients' start draws that follow. */
ks_time_ns ks__broker_first_run_ns(struct ks_broker *broker, ks_time_ns period_ns,
                                   ks_time_ns aligned_ns)
{
    if (broker->incarnation != 0) {
        return aligned_ns;
    }
    ks_time_ns phase_ns = ks_world_random_scaled(broker->world, KS_RNG_PHASE, period_ns);
    return broker->spec->cluster->task_phase == KS_TASK_PHASE_RANDOM ? phase_ns : aligned_ns;
}

static void start_common(struct ks_broker *broker)
{
    ks_world_set_receiver(broker->world, (ks_node_id)broker->id, on_receive, broker);
    reset_metadata(broker);
    broker->running = true;
    broker->producer_id_counter = 0;
    memset(broker->fetchers, 0, sizeof broker->fetchers);
    ks__logs_load(broker);
    if (broker->spec->consumer_count > 0 && broker->offsets_topic_index >= 0) {
        broker->coordinator = ks_group_coordinator_new(broker);
    }
    if (broker->txn_topic_index >= 0) {
        broker->txn_coordinator = ks_txn_coordinator_new(broker);
    }
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, 0, KS_EV_BROKER_STARTED);
    event.broker_epoch = broker->broker_epoch;
    ks_broker_emit(broker, &event);
    if (zookeeper_mode(broker)) {
        ks__zk_start(broker);
    }
    /* B2; the order of these timers (and of their phase draws) is part of the trace. */
    broker->communication_in_flight = false;
    broker->failed_attempts = 0;
    ks_time_ns heartbeat_ns = ks__broker_first_run_ns(broker, heartbeat_interval_ns(broker), 0);
    if (zookeeper_mode(broker)) {
        if (heartbeat_ns == 0) {
            heartbeat_tick(broker->world, broker);
        } else {
            broker->heartbeat_timer =
                ks_world_schedule(broker->world, (ks_node_id)broker->id, heartbeat_ns,
                                  KS_TIMER_BROKER_HEARTBEAT, heartbeat_tick, broker);
        }
    } else if (heartbeat_ns == 0) {
        communicate(broker->world, broker);
    } else {
        schedule_communication(broker, heartbeat_ns);
    }
    ks__replica_start_isr_check(broker);
    ks__logs_start_tasks(broker);
}

void ks_broker_start(struct ks_broker *broker)
{
    /* The controller expects incarnation 1 at start (controller.c). */
    broker->broker_epoch = 1;
    broker->incarnation = 0;
    broker->registered = true;
    broker->lifecycle = KS__LIFECYCLE_RUNNING;
    broker->ready_to_unfence = true;
    start_common(broker);
}

static void drop_memory(struct ks_broker *broker)
{
    if (zookeeper_mode(broker)) {
        ks__zk_stop(broker, false);
    }
    /* Timers are gone already (crash) or are cancelled here (shutdown). */
    ks_world_cancel(broker->world, broker->heartbeat_timer);
    ks_world_cancel(broker->world, broker->isr_timer);
    ks_world_cancel(broker->world, broker->hw_checkpoint_timer);
    ks_world_cancel(broker->world, broker->recovery_checkpoint_timer);
    ks_world_cancel(broker->world, broker->log_tasks_timer);
    ks_world_cancel(broker->world, broker->shutdown_timer);
    broker->shutdown_timer = 0;
    broker->shutdown_pending = false;
    broker->shutdown_answered = false;
    broker->heartbeat_timer = 0;
    broker->isr_timer = 0;
    broker->hw_checkpoint_timer = 0;
    broker->recovery_checkpoint_timer = 0;
    broker->log_tasks_timer = 0;
    for (guint i = 0; i < broker->pending->len; i++) {
        struct ks__pending_produce *item = g_ptr_array_index(broker->pending, i);
        ks_world_cancel(broker->world, item->timer);
        free(item);
    }
    g_ptr_array_set_size(broker->pending, 0);
    ks__produce_drop_verifying(broker);
    ks__produce_drop_gathers(broker);
    for (guint i = 0; i < broker->delayed->len; i++) {
        struct ks__delayed_fetch *item = g_ptr_array_index(broker->delayed, i);
        ks_world_cancel(broker->world, item->timer);
        free(item->request);
        free(item);
    }
    g_ptr_array_set_size(broker->delayed, 0);
    g_array_set_size(broker->delayed_key_bits, 0);
    for (guint i = 0; i < broker->deferred->len; i++) {
        struct ks__deferred *item = g_ptr_array_index(broker->deferred, i);
        ks_world_cancel(broker->world, item->timer);
        g_free(item->bytes);
        free(item);
    }
    g_ptr_array_set_size(broker->deferred, 0);
    for (int32_t i = 0; i < KS_BROKER_COUNT_MAX; i++) {
        ks_world_cancel(broker->world, broker->fetchers[i].timeout_timer);
        ks_world_cancel(broker->world, broker->fetchers[i].kick_timer);
    }
    ks__fetcher_drop_sessions(broker);
    ks__serve_drop_sessions(broker);
    memset(broker->fetchers, 0, sizeof broker->fetchers); /* all IDLE (B1) */
    ks_group_coordinator_free(broker->coordinator);
    broker->coordinator = NULL;
    ks_txn_coordinator_free(broker->txn_coordinator);
    broker->txn_coordinator = NULL;
    for (guint i = 0; i < broker->hosted->len; i++) {
        struct ks__replica *replica = ks__hosted(broker, i);
        broker->replicas[replica->topic_index][replica->partition] = NULL;
        ks__replica_close(replica);
    }
    g_ptr_array_set_size(broker->hosted, 0);
    broker->follow_generation++;
    broker->running = false;
}

void ks_broker_on_crash(struct ks_broker *broker)
{
    if (broker->running) {
        ks__logs_remember(broker); /* for the recovery line only */
    }
    drop_memory(broker);
}

void ks_broker_on_restart(struct ks_broker *broker)
{
    if (broker->running) {
        drop_memory(broker);
    }
    broker->broker_epoch++;
    broker->incarnation++;
    broker->registered = false;
    broker->lifecycle = KS__LIFECYCLE_STARTING;
    broker->ready_to_unfence = false;
    start_common(broker);
}

void ks_broker_shutdown(struct ks_broker *broker)
{
    if (!broker->running) {
        return;
    }
    ks__logs_shutdown(broker);
    if (zookeeper_mode(broker)) {
        ks__zk_stop(broker, true);
    }
    drop_memory(broker);
}

void ks_broker_free(struct ks_broker *broker)
{
    if (broker == NULL) {
        return;
    }
    drop_memory(broker);
    ks__logs_forget(broker);
    for (int32_t t = 0; t < broker->topic_count; t++) {
        free(broker->meta[t]);
        free(broker->replicas[t]);
    }
    free(broker->meta);
    free(broker->replicas);
    g_hash_table_destroy(broker->topic_by_name);
    g_ptr_array_free(broker->hosted, TRUE);
    g_ptr_array_free(broker->pending, TRUE);
    g_ptr_array_free(broker->verifying, TRUE);
    g_ptr_array_free(broker->delayed, TRUE);
    g_array_free(broker->delayed_key_bits, TRUE);
    g_array_free(broker->deferred_releases, TRUE);
    ks__produce_drop_gathers(broker);
    g_ptr_array_free(broker->gathers, TRUE);
    g_ptr_array_free(broker->deferred, TRUE);
    ks__serve_free_scratch(broker);
    free(broker);
}

bool ks_broker_is_running(const struct ks_broker *broker)
{
    return broker->running;
}

/* ---- queries and coordinator services -------------------------------------------------- */

bool ks_broker_replica_state(const struct ks_broker *broker, int32_t topic_index, int32_t partition,
                             struct ks_replica_state *out)
{
    const struct ks__replica *replica = ks__broker_find_replica(broker, topic_index, partition);
    if (replica == NULL) {
        return false;
    }
    out->role = replica->role;
    out->leo = ks__leo_of(replica);
    out->hw = replica->hw;
    out->log_start_offset = ks_log_start_offset(replica->log);
    out->leader_epoch = replica->state.leader_epoch;
    return true;
}

struct ks_log *ks_broker_replica_log(struct ks_broker *broker, int32_t topic_index,
                                     int32_t partition)
{
    struct ks__replica *replica = ks__broker_find_replica(broker, topic_index, partition);
    return replica != NULL ? replica->log : NULL;
}

bool ks_broker_idle(const struct ks_broker *broker)
{
    return broker->pending->len == 0 && broker->verifying->len == 0;
}

ks_world *ks_broker_world(struct ks_broker *broker)
{
    return broker->world;
}

int32_t ks_broker_id(const struct ks_broker *broker)
{
    return broker->id;
}

ks_node_id ks_broker_node(const struct ks_broker *broker)
{
    return (ks_node_id)broker->id;
}

const struct ks_cluster_spec *ks_broker_spec(const struct ks_broker *broker)
{
    return broker->spec;
}

const struct ks_cluster_observer *ks_broker_observer(const struct ks_broker *broker)
{
    return broker->observer;
}

int32_t ks_broker_topic_index(const struct ks_broker *broker, const char *name)
{
    /* A hash lookup, not a scan: the group coordinator resolves the topic of
     * every offset record it loads by name, and a cluster may have thousands
     * of topics (docs/scale-out.md, Limits). */
    gpointer value = g_hash_table_lookup(broker->topic_by_name, name);
    return value != NULL ? GPOINTER_TO_INT(value) - 1 : -1;
}

void ks_broker_txn_marker_written(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                                  int64_t producer_id, bool commit)
{
    if (broker->coordinator != NULL &&
        topic_index == ks_broker_topic_index(broker, "__consumer_offsets")) {
        ks_group_coordinator_txn_completed(broker->coordinator, partition, producer_id, commit);
    }
}

int32_t ks_broker_partition_leader(struct ks_broker *broker, int32_t topic_index, int32_t partition)
{
    if (topic_index < 0 || topic_index >= broker->topic_count || partition < 0 ||
        partition >= broker->topics[topic_index].partition_count) {
        return -1;
    }
    const struct ks_partition_state *state = &broker->meta[topic_index][partition];
    return state->partition_epoch >= 0 ? state->leader : -1;
}

const char *ks_broker_topic_name(const struct ks_broker *broker, int32_t topic_index)
{
    ks_assert(topic_index >= 0 && topic_index < broker->topic_count);
    return broker->topics[topic_index].name;
}

int32_t ks_broker_partition_count(const struct ks_broker *broker, int32_t topic_index)
{
    ks_assert(topic_index >= 0 && topic_index < broker->topic_count);
    return broker->topics[topic_index].partition_count;
}

int32_t ks_broker_partition_leader_epoch(struct ks_broker *broker, int32_t topic_index,
                                         int32_t partition)
{
    if (ks_broker_partition_leader(broker, topic_index, partition) < 0) {
        return -1;
    }
    return broker->meta[topic_index][partition].leader_epoch;
}

int64_t ks_broker_allocate_producer_id(struct ks_broker *broker)
{
    return (int64_t)broker->id * 1000000 + (int64_t)broker->incarnation * 10000 +
           broker->producer_id_counter++;
}

void ks_broker_scan_local(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                          int64_t offset, int64_t upto_offset, ks_log_batch_fn *visit,
                          void *context)
{
    struct ks__replica *replica = ks__broker_find_replica(broker, topic_index, partition);
    if (replica != NULL) {
        ks_log_scan(replica->log, offset, upto_offset, visit, context);
    }
}

struct load_scan {
    ks_broker_record_fn *visit;
    void *context;
    int64_t from; /* the log start: a first batch may begin below it */
};

static bool load_batch(void *context, const struct ks_batch_view *batch)
{
    struct load_scan *scan = context;
    if ((batch->attributes & KS_ATTR_CONTROL) != 0) {
        return true;
    }
    struct ks_record_iter iter;
    struct ks_record_view record;
    ks_record_iter_init(&iter, batch);
    while (ks_record_iter_next(&iter, &record, NULL)) {
        if (record.offset >= scan->from) {
            scan->visit(scan->context, &record);
        }
    }
    ks_record_iter_deinit(&iter);
    return true;
}

void ks_broker_load_local(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                          ks_broker_record_fn *visit, void *context)
{
    int64_t from = ks_broker_log_start_offset(broker, topic_index, partition);
    if (from < 0) {
        return;
    }
    struct load_scan scan = { visit, context, from };
    ks_broker_scan_local(broker, topic_index, partition, from,
                         ks_broker_leo(broker, topic_index, partition), load_batch, &scan);
}

int64_t ks_broker_hw(struct ks_broker *broker, int32_t topic_index, int32_t partition)
{
    struct ks__replica *replica = ks__broker_find_replica(broker, topic_index, partition);
    return replica != NULL ? replica->hw : -1;
}

int64_t ks_broker_leo(struct ks_broker *broker, int32_t topic_index, int32_t partition)
{
    struct ks__replica *replica = ks__broker_find_replica(broker, topic_index, partition);
    return replica != NULL ? ks__leo_of(replica) : -1;
}

int64_t ks_broker_log_start_offset(struct ks_broker *broker, int32_t topic_index, int32_t partition)
{
    struct ks__replica *replica = ks__broker_find_replica(broker, topic_index, partition);
    return replica != NULL ? ks_log_start_offset(replica->log) : -1;
}
