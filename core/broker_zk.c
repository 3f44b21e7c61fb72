/*
** core/broker_zk.c: the broker's side of `controller = zookeeper` (Kafka
** 2.x's KafkaServer startup, KafkaZkClient, KafkaController's election and
** ReplicaManager's controller-epoch checks, read at the 2.8 tag).
**
** Session: at (re)start the broker opens a ZooKeeper session (CONNECT), then
** creates /brokers/ids/N (REGISTER) and, once registered, tries to create
** /controller (ELECT, KafkaController.elect; KafkaServer.startup registers
** the broker before its controller starts). It pings every third of
** zookeeper.session.timeout.ms on its heartbeat timer. A new incarnation
** whose predecessor's session has not expired yet finds /brokers/ids/N
** taken (NODE_EXISTS) and retries at every ping until the old znode goes
** (Kafka's broker fails to start then and is restarted by its supervisor;
** ksim retries in place). Any answer SESSION_EXPIRED means the session is
** gone: a controller resigns (onControllerResignation), and the broker
** opens a new session and registers again (KafkaController's
** handleNewSession / KafkaZkClient's re-registration).
**
** Election: the first ELECT ZooKeeper sees wins /controller and the next
** controller epoch; the others keep an exists watch and race again when it
** is deleted. The winner runs core/zk_controller.c in this process.
**
** Fencing (ReplicaManager.becomeLeaderOrFollower / maybeUpdateMetadataCache):
** a LeaderAndIsr or UpdateMetadata whose controller epoch is older than the
** newest this broker accepted is refused with STALE_CONTROLLER_EPOCH
** (KS_EV_STALE_CONTROLLER); an accepted one raises that epoch. The epoch is
** in memory only: a restarted broker accepts any controller again, as
** Kafka's does (its requests then carry the broker epoch of an earlier
** incarnation, which the push's broker_epoch check ignores).
**
** Controlled shutdown (KafkaServer.controlledShutdown, ZooKeeper mode): a
** stopping broker sends ControlledShutdown to the controller it learnt from
** the newest LeaderAndIsr it accepted and keeps serving. An answer with no
** partition left to move lets it stop; an error, partitions left, no known
** controller or no answer within controller.socket.timeout.ms (30 s) is a
** failed attempt, retried after controlled.shutdown.retry.backoff.ms (5 s),
** controlled.shutdown.max.retries (3) attempts in all (Kafka's defaults:
** ksim refuses the keys, docs/model.md). After the last one it stops anyway
** (Kafka: "Proceeding to do an unclean shutdown"; the logs still close
** cleanly). The controller's side is ks_zk_controller_on_controlled_shutdown.
**
** Invariant (checked by ks_broker_check through ks__zk_check): a broker that
** runs a controller has a session, and its controller epoch is at most the
** newest /controller_epoch (the cluster checks one controller per epoch).
*/
#include "broker_int.h"

#include "zk_controller.h"

#include <stdlib.h>
#include <string.h>

ks_time_ns ks__zk_ping_interval_ns(const struct ks_broker *broker)
{
    return (ks_time_ns)broker->spec->cluster->zookeeper_session_timeout_ns / 3;
}

int32_t ks__zk_controller_epoch(const struct ks_broker *broker)
{
    return broker->zk.controller != NULL ? ks_zk_controller_epoch(broker->zk.controller) : -1;
}

int32_t ks_broker_zk_controller_epoch(const struct ks_broker *broker)
{
    return ks__zk_controller_epoch(broker);
}

static void send_request(struct ks_broker *broker, enum ks_zk_op op)
{
    struct ks_zk_request request;
    memset(&request, 0, sizeof request);
    request.op = op;
    request.broker_id = broker->id;
    request.session_id = broker->zk.session_id;
    request.broker_epoch = broker->broker_epoch;
    ks_world_send(broker->world, (ks_node_id)broker->id, broker->controller_node, KS_MSG_ZK_REQUEST,
                  &request, sizeof request);
}

static void connect(struct ks_broker *broker)
{
    broker->zk.session_id = 0;
    broker->zk.connecting = true;
    broker->zk.registered = false;
    send_request(broker, KS_ZK_OP_CONNECT);
}

static void resign(struct ks_broker *broker)
{
    if (broker->zk.controller == NULL) {
        return;
    }
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, 0, KS_EV_CONTROLLER_RESIGNED);
    event.controller_id = broker->id;
    event.controller_epoch = ks_zk_controller_epoch(broker->zk.controller);
    ks_zk_controller_free(broker->zk.controller);
    broker->zk.controller = NULL;
    ks_broker_emit(broker, &event);
}

void ks__zk_start(struct ks_broker *broker)
{
    ks_assert(broker->zk.controller == NULL);
    broker->zk.controller_epoch_seen = 0; /* KafkaController.InitialControllerEpoch */
    broker->zk.controller_id_seen = -1;
    connect(broker);
}

void ks__zk_stop(struct ks_broker *broker, bool clean)
{
    if (clean && broker->zk.session_id != 0) {
        send_request(broker, KS_ZK_OP_CLOSE);
    }
    ks_zk_controller_free(broker->zk.controller);
    broker->zk.controller = NULL;
    broker->zk.session_id = 0;
    broker->zk.connecting = false;
    broker->zk.registered = false;
    ks_world_cancel(broker->world, broker->zk.shutdown_retry_timer);
    broker->zk.shutdown_retry_timer = 0;
    broker->zk.shutdown_correlation_id = 0;
    broker->zk.shutdown_attempts_left = 0;
}

/* ---- controlled shutdown ------------------------------------------------------------ */

/* KafkaConfig's defaults for the keys ksim refuses (docs/model.md). */
#define SHUTDOWN_MAX_ATTEMPTS     3 /* controlled.shutdown.max.retries */
#define SHUTDOWN_RETRY_BACKOFF_NS ((ks_time_ns)5000 * KS_NS_PER_MS) /* .retry.backoff.ms */
#define CONTROLLER_SOCKET_TIMEOUT_NS \
    ((ks_time_ns)30000 * KS_NS_PER_MS) /* controller.socket.timeout.ms */

static void shutdown_attempt(ks_world *world, void *context);

/* A failed attempt: the next after the backoff, or stop without the controller. */
static void shutdown_attempt_failed(struct ks_broker *broker)
{
    broker->zk.shutdown_correlation_id = 0;
    if (broker->zk.shutdown_attempts_left > 0) {
        broker->zk.shutdown_retry_timer =
            ks_world_schedule(broker->world, (ks_node_id)broker->id, SHUTDOWN_RETRY_BACKOFF_NS,
                              KS_TIMER_BROKER_SHUTDOWN_RETRY, shutdown_attempt, broker);
        return;
    }
    ks__broker_finish_shutdown(broker, KS_REASON_SHUTDOWN_ATTEMPTS_FAILED);
}

static void shutdown_request_timed_out(ks_world *world, void *context)
{
    (void)world;
    struct ks_broker *broker = context;
    broker->zk.shutdown_retry_timer = 0;
    shutdown_attempt_failed(broker);
}

static void shutdown_attempt(ks_world *world, void *context)
{
    (void)world;
    struct ks_broker *broker = context;
    broker->zk.shutdown_retry_timer = 0;
    broker->zk.shutdown_attempts_left--;
    if (broker->zk.controller_id_seen < 1) {
        shutdown_attempt_failed(broker); /* "No zk controller present in the metadata cache" */
        return;
    }
    struct ks_controlled_shutdown_request request;
    memset(&request, 0, sizeof request);
    request.broker_id = broker->id;
    request.broker_epoch = broker->broker_epoch;
    request.correlation_id = ++broker->zk.shutdown_correlation_next;
    broker->zk.shutdown_correlation_id = request.correlation_id;
    ks_world_send(broker->world, (ks_node_id)broker->id, (ks_node_id)broker->zk.controller_id_seen,
                  KS_MSG_CONTROLLED_SHUTDOWN_REQUEST, &request, sizeof request);
    broker->zk.shutdown_retry_timer =
        ks_world_schedule(broker->world, (ks_node_id)broker->id, CONTROLLER_SOCKET_TIMEOUT_NS,
                          KS_TIMER_BROKER_SHUTDOWN_RETRY, shutdown_request_timed_out, broker);
}

void ks__zk_begin_controlled_shutdown(struct ks_broker *broker)
{
    broker->zk.shutdown_attempts_left = SHUTDOWN_MAX_ATTEMPTS;
    shutdown_attempt(broker->world, broker);
}

static void on_shutdown_response(struct ks_broker *broker,
                                 const struct ks_controlled_shutdown_response *response)
{
    if (!broker->shutdown_pending || response->correlation_id == 0 ||
        response->correlation_id != broker->zk.shutdown_correlation_id) {
        return; /* an earlier attempt's, answered after its timeout */
    }
    ks_world_cancel(broker->world, broker->zk.shutdown_retry_timer);
    broker->zk.shutdown_retry_timer = 0;
    if (response->error_code == KS_ERR_NONE && response->remaining == 0) {
        ks__broker_finish_shutdown(broker, KS_REASON_CONTROLLED_SHUTDOWN);
        return;
    }
    shutdown_attempt_failed(broker);
}

/* A ControlledShutdown for this broker's controller; a broker that is not
 * (or no longer) the controller answers NOT_CONTROLLER, as
 * KafkaController.doControlledShutdown's !isActive does. */
static void on_shutdown_request(struct ks_broker *broker, ks_node_id source,
                                const struct ks_controlled_shutdown_request *request)
{
    if (broker->zk.controller != NULL) {
        ks_zk_controller_on_controlled_shutdown(broker->zk.controller, source, request);
        return;
    }
    struct ks_controlled_shutdown_response response;
    memset(&response, 0, sizeof response);
    response.error_code = KS_ERR_NOT_CONTROLLER;
    response.correlation_id = request->correlation_id;
    ks_world_send(broker->world, (ks_node_id)broker->id, source,
                  KS_MSG_CONTROLLED_SHUTDOWN_RESPONSE, &response, sizeof response);
}

void ks__zk_tick(struct ks_broker *broker)
{
    if (broker->zk.session_id == 0) {
        if (!broker->zk.connecting) {
            connect(broker);
        }
        return;
    }
    send_request(broker, KS_ZK_OP_PING);
    if (!broker->zk.registered) {
        send_request(broker, KS_ZK_OP_REGISTER);
    }
}

static void on_response(struct ks_broker *broker, const uint8_t *bytes, size_t message_bytes)
{
    struct ks_zk_response response;
    ks_proto_zk_decode(bytes, message_bytes, &response); /* B3 */
    if (response.op == KS_ZK_OP_CONNECT) {
        if (!broker->zk.connecting) {
            return; /* an earlier incarnation's */
        }
        broker->zk.connecting = false;
        broker->zk.session_id = response.session_id;
        send_request(broker, KS_ZK_OP_REGISTER);
        return;
    }
    if (response.session_id != broker->zk.session_id || broker->zk.session_id == 0) {
        return; /* about a session this process no longer has */
    }
    if (response.error == KS_ZK_SESSION_EXPIRED) {
        resign(broker);
        connect(broker);
        return;
    }
    switch (response.op) {
    case KS_ZK_OP_REGISTER:
        if (response.error == KS_ZK_OK && !broker->zk.registered) {
            /* KafkaServer.startup registers before the controller starts. */
            broker->zk.registered = true;
            broker->registered = true;
            send_request(broker, KS_ZK_OP_ELECT);
        }
        return;
    case KS_ZK_OP_ELECT:
        if (response.error == KS_ZK_OK && broker->zk.controller == NULL) {
            broker->zk.controller = ks_zk_controller_new(
                broker->world, broker->spec, broker->topics, broker->topic_count, broker->id,
                broker->controller_node, broker->zk.session_id, response.controller_epoch,
                broker->observer);
        }
        return;
    case KS_ZK_OP_READ_STATE:
    case KS_ZK_OP_WRITE_PARTITION:
        if (broker->zk.controller != NULL) {
            ks_zk_controller_on_response(broker->zk.controller, &response, bytes, message_bytes);
        }
        return;
    default: ks_assert(!"unexpected ZooKeeper answer"); /* B3 */
    }
}

static void on_watch(struct ks_broker *broker, const uint8_t *bytes, size_t message_bytes)
{
    struct ks_zk_response watch;
    ks_assert(ks_proto_zk_decode(bytes, message_bytes, &watch) == message_bytes); /* B3 */
    if (watch.session_id != broker->zk.session_id || broker->zk.session_id == 0) {
        return;
    }
    if (watch.op == KS_ZK_WATCH_CONTROLLER) {
        send_request(broker, KS_ZK_OP_ELECT); /* KafkaController's ControllerChange: elect */
        return;
    }
    if (broker->zk.controller != NULL) {
        ks_zk_controller_on_watch(broker->zk.controller, &watch);
    }
}

static void on_leader_and_isr(struct ks_broker *broker, const uint8_t *bytes, size_t message_bytes)
{
    struct ks_leader_and_isr header;
    struct ks_partition_state_push push;
    ks_assert(message_bytes >= sizeof header); /* B3 */
    memcpy(&header, bytes, sizeof header);
    ks_proto_push_decode(bytes + sizeof header, message_bytes - sizeof header, &push); /* B3 */
    if (header.controller_epoch < broker->zk.controller_epoch_seen) {
        struct ks_cluster_event event;
        ks_cluster_event_init(&event, 0, KS_EV_STALE_CONTROLLER);
        event.error_code = KS_ERR_STALE_CONTROLLER_EPOCH;
        event.controller_id = header.controller_id;
        event.controller_epoch = header.controller_epoch;
        event.controller_epoch_old = broker->zk.controller_epoch_seen;
        event.partition_count = push.partition_count;
        ks_broker_emit(broker, &event);
        return;
    }
    if (push.broker_epoch != broker->broker_epoch) {
        return; /* meant for an earlier incarnation */
    }
    broker->zk.controller_epoch_seen = header.controller_epoch;
    broker->zk.controller_id_seen = header.controller_id;
    ks__broker_apply_push(broker, bytes + sizeof header, message_bytes - sizeof header);
}

void ks__zk_on_message(struct ks_broker *broker, ks_node_id source, uint32_t kind,
                       const uint8_t *bytes, size_t message_bytes)
{
    switch (kind) {
    case KS_MSG_ZK_RESPONSE:
        ks_assert(source == broker->controller_node); /* B3 */
        on_response(broker, bytes, message_bytes);
        return;
    case KS_MSG_ZK_WATCH:
        ks_assert(source == broker->controller_node); /* B3 */
        on_watch(broker, bytes, message_bytes);
        return;
    case KS_MSG_LEADER_AND_ISR:
        ks_assert(source >= 1 && (int32_t)source <= broker->spec->cluster->broker_count); /* B3 */
        on_leader_and_isr(broker, bytes, message_bytes);
        return;
    case KS_MSG_CONTROLLED_SHUTDOWN_REQUEST: {
        struct ks_controlled_shutdown_request request;
        ks_assert(message_bytes == sizeof request); /* B3 */
        memcpy(&request, bytes, sizeof request);
        on_shutdown_request(broker, source, &request);
        return;
    }
    case KS_MSG_CONTROLLED_SHUTDOWN_RESPONSE: {
        struct ks_controlled_shutdown_response response;
        ks_assert(message_bytes == sizeof response); /* B3 */
        memcpy(&response, bytes, sizeof response);
        on_shutdown_response(broker, &response);
        return;
    }
    default: ks_assert(!"not a ZooKeeper-era message"); /* B3 */
    }
}
