/*
** core/broker.c: a Kafka broker: replicas, follower fetchers, the leader's
** fetch serving (with DelayedFetch long polls), produce with acks and
** idempotence (DelayedProduce), ISR maintenance through AlterPartition, the
** controller session, checkpoints and restart with recovery.
**
** Invariants (asserted as R1..R4 in replica_check):
**   R1  hw <= leo on every replica.
**   R2  log_start_offset <= hw.
**   R3  a leader's hw only grows while it stays leader in one leader epoch.
**   R4  a leader is in its own ISR.
**
** Replica roles, driven by the controller's partition-state pushes:
**
**   NONE --(state: leader = me)--------------------> LEADER  (epoch cache gets
**                                                     (epoch, LEO); producer
**                                                     state rebuilt if unknown)
**   NONE/LEADER --(state: leader = other or -1)-----> FOLLOWER (HW mode: truncate
**                                                     to the local HW first)
**   FOLLOWER --(state: leader = me, epoch+1)--------> LEADER
**   LEADER --(state: new epoch, leader elsewhere)---> FOLLOWER (pending acks=all
**                                                     produce fail NOT_LEADER)
**
** Replication (kafka-reference 9): one fetch request per (follower, leader)
** broker pair covers every partition the follower follows from that leader
** (Kafka's fetcher thread); the next one leaves as soon as the response is
** processed (at the disk's idle time). The leader serves followers up to its
** LEO and consumers (replica_id -1) up to the HW, and parks a request with no
** data for up to max_wait (DelayedFetch), releasing it on new data (followers),
** a HW advance (consumers), a leadership change, or the timeout. A fetch with
** no response within 30 s (Kafka's replica.socket.timeout.ms / request.timeout
** default) is abandoned and re-sent after replica.fetch.backoff.ms.
**
** Simplifications (see docs/model.md):
**   - inter-broker requests carry full partition lists (no incremental fetch
**     sessions): the messages are small at ksim's scales;
**   - the producer id allocator lives on each broker (proto.h);
**   - a broker hosts exactly the replicas the controller assigns; there is no
**     reassignment;
**   - AlterPartition is re-sent when unanswered for 5 s (Kafka's
**     AlterPartitionManager retries on its channel's timeout).
*/
#include "broker.h"

#include "base.h"
#include "batch.h"
#include "producer_state.h"
#include "proto.h"

#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group.h"

#define REQUEST_TIMEOUT_NS (30 * KS_NS_PER_S)
#define ALTER_RETRY_NS (5 * KS_NS_PER_S)
#define INTERNAL_APPEND_TIMEOUT_NS (30 * KS_NS_PER_S)
#define COMPACTION_INTERVAL_NS (15 * KS_NS_PER_S) /* log.cleaner.backoff.ms */
#define REFUSED_EVENT_INTERVAL_NS KS_NS_PER_S

/* ---- types --------------------------------------------------------------- */

struct follower_state {
    int32_t broker_id;
    int64_t leo;                      /* -1: unknown since this broker became leader */
    ks_time_ns last_fetch_ns;
    int64_t leader_leo_at_last_fetch; /* -1: none */
    ks_time_ns last_caught_up_ns;
};

struct replica {
    int32_t topic_index;
    int32_t partition;
    const struct ks_topic_config *topic; /* not owned */
    struct ks_log *log;                  /* owned */
    enum ks_role role;
    int64_t hw;
    bool has_state;
    struct ks_partition_state state;     /* last applied controller state */
    /* leader */
    struct follower_state followers[KS_REPLICATION_FACTOR_MAX];
    int32_t follower_count;
    int64_t epoch_start_offset;
    bool alter_in_flight;
    ks_time_ns alter_sent_ns;
    struct ks_alter_partition_request alter;
    ks_time_ns refused_event_ns;
    bool refused_once;
    /* follower */
    ks_time_ns fetch_backoff_until_ns;
    /* both */
    struct ks_producer_state *producers; /* owned */
    bool producers_valid;
};

struct fetcher {
    bool in_flight;
    int64_t correlation_id;
    ks_timer_id timeout_timer;
    ks_timer_id kick_timer;
};

enum completion_kind { COMPLETE_NETWORK, COMPLETE_CALLBACK };

struct completion {
    enum completion_kind kind;
    ks_node_id source;
    int64_t correlation_id;
    int32_t topic_index;
    int32_t partition;
    void (*done)(void *context, int16_t error, int64_t base_offset);
    void *context;
};

struct pending_produce {
    struct ks_broker *broker;
    struct completion completion;
    int64_t base_offset;
    int64_t required_offset; /* HW must reach this */
    ks_timer_id timer;
};

struct delayed_fetch {
    struct ks_broker *broker;
    ks_node_id source;
    uint8_t *request; /* owned copy */
    size_t request_bytes;
    bool consumer;
    ks_time_ns deadline_ns; /* now + max_wait when first parked */
    ks_timer_id timer;
};

struct deferred {
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

struct ks_broker {
    ks_world *world;
    const struct ks_cluster_spec *spec;         /* not owned */
    const struct ks_topic_config *topics;       /* not owned */
    int32_t topic_count;
    int32_t id;
    const struct ks_cluster_observer *observer; /* not owned */
    ks_node_id controller_node;
    char dir[32];

    bool running;
    int64_t broker_epoch;
    int32_t incarnation;
    bool registered;
    int64_t metadata_version;
    uint8_t broker_alive[KS_BROKER_COUNT_MAX];
    struct ks_partition_state **meta; /* [topic][partition]; partition_epoch -1 = unknown */
    struct replica ***replicas;       /* [topic][partition]; NULL = not hosted */

    struct fetcher fetchers[KS_BROKER_COUNT_MAX];
    int64_t next_correlation_id;
    int32_t producer_id_counter;

    GPtrArray *pending;  /* struct pending_produce *, in arrival order */
    GPtrArray *delayed;  /* struct delayed_fetch * */
    GPtrArray *deferred; /* struct deferred * */

    ks_timer_id heartbeat_timer;
    ks_timer_id isr_timer;
    ks_timer_id hw_checkpoint_timer;
    ks_timer_id recovery_checkpoint_timer;
    ks_timer_id log_tasks_timer;
    struct ks_group_coordinator *coordinator;
    int32_t offsets_topic_index;
};

/* ---- small helpers ------------------------------------------------------- */

static ks_time_ns now_ns(const struct ks_broker *broker)
{
    return ks_world_now_ns(broker->world);
}

void ks_broker_emit(struct ks_broker *broker, enum ks_cluster_event_kind kind,
                    int32_t topic_index, int32_t partition, const char *detail,
                    const char *explain)
{
    if (broker->observer == NULL || broker->observer->on_event == NULL) {
        return;
    }
    struct ks_cluster_event event;
    memset(&event, 0, sizeof event);
    event.at_ns = now_ns(broker);
    event.kind = kind;
    event.broker = broker->id;
    event.topic_index = topic_index;
    event.partition = partition;
    event.detail = detail;
    event.explain = explain;
    broker->observer->on_event(broker->observer->context, &event);
}

static bool list_contains(const int32_t *list, int32_t count, int32_t id)
{
    for (int32_t i = 0; i < count; i++) {
        if (list[i] == id) {
            return true;
        }
    }
    return false;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int32_t min32(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

static struct replica *find_replica(const struct ks_broker *broker, int32_t topic_index,
                                    int32_t partition)
{
    if (!broker->running || topic_index < 0 || topic_index >= broker->topic_count ||
        partition < 0 || partition >= broker->topics[topic_index].partition_count) {
        return NULL;
    }
    struct replica *replica = broker->replicas[topic_index][partition];
    if (replica == NULL || replica->log == NULL) {
        return NULL;
    }
    return replica;
}

static int64_t leo_of(const struct replica *replica)
{
    return ks_log_leo(replica->log);
}

static int32_t effective_min_isr(const struct replica *replica)
{
    return min32(replica->topic->min_insync_replicas, replica->topic->replication_factor);
}

static void replica_check(const struct ks_broker *broker, const struct replica *replica)
{
    ks_assert(replica->hw <= leo_of(replica));                          /* R1 */
    ks_assert(ks_log_start_offset(replica->log) <= replica->hw);       /* R2 */
    if (replica->role == KS_ROLE_LEADER) {
        ks_assert(list_contains(replica->state.isr, replica->state.isr_count, broker->id)); /* R4 */
    }
}

/* Maximal ISR (KIP-497): the committed ISR plus members of an expansion in flight. */
static int32_t maximal_isr(const struct replica *replica, int32_t *out)
{
    int32_t count = 0;
    for (int32_t i = 0; i < replica->state.isr_count; i++) {
        out[count++] = replica->state.isr[i];
    }
    if (replica->alter_in_flight) {
        for (int32_t i = 0; i < replica->alter.isr_count; i++) {
            if (!list_contains(out, count, replica->alter.isr[i])) {
                out[count++] = replica->alter.isr[i];
            }
        }
    }
    return count;
}

static bool broker_alive(const struct ks_broker *broker, int32_t id)
{
    return id >= 1 && id <= broker->spec->cluster->broker_count && broker->broker_alive[id - 1];
}

/* ---- deferred sends and callbacks ----------------------------------------- */

static void deferred_fire(ks_world *world, void *context)
{
    struct deferred *item = context;
    struct ks_broker *broker = item->broker;
    g_ptr_array_remove(broker->deferred, item);
    if (item->bytes != NULL) {
        ks_world_send(world, (ks_node_id)broker->id, item->target, item->kind, item->bytes,
                      item->byte_count);
    } else if (item->done != NULL) {
        item->done(item->context, item->error, item->base_offset);
    }
    free(item->bytes);
    free(item);
}

/* Sends now, or at `at_ns` if later (a response that must wait for the disk). */
static void send_at(struct ks_broker *broker, ks_time_ns at_ns, ks_node_id target, uint32_t kind,
                    const void *bytes, size_t byte_count)
{
    ks_time_ns now = now_ns(broker);
    if (at_ns <= now) {
        ks_world_send(broker->world, (ks_node_id)broker->id, target, kind, bytes, byte_count);
        return;
    }
    struct deferred *item = calloc(1, sizeof *item);
    ks_assert(item != NULL);
    item->broker = broker;
    item->target = target;
    item->kind = kind;
    item->bytes = malloc(byte_count ? byte_count : 1);
    ks_assert(item->bytes != NULL);
    memcpy(item->bytes, bytes, byte_count);
    item->byte_count = byte_count;
    g_ptr_array_add(broker->deferred, item);
    item->timer = ks_world_schedule(broker->world, (ks_node_id)broker->id, at_ns - now,
                                    KS_TIMER_BROKER_RESPOND, deferred_fire, item);
}

static void callback_at(struct ks_broker *broker, ks_time_ns at_ns,
                        void (*done)(void *context, int16_t error, int64_t base_offset),
                        void *context, int16_t error, int64_t base_offset)
{
    if (done == NULL) {
        return;
    }
    ks_time_ns now = now_ns(broker);
    struct deferred *item = calloc(1, sizeof *item);
    ks_assert(item != NULL);
    item->broker = broker;
    item->done = done;
    item->context = context;
    item->error = error;
    item->base_offset = base_offset;
    g_ptr_array_add(broker->deferred, item);
    item->timer = ks_world_schedule(broker->world, (ks_node_id)broker->id,
                                    at_ns > now ? at_ns - now : 0, KS_TIMER_BROKER_RESPOND,
                                    deferred_fire, item);
}

static void complete(struct ks_broker *broker, const struct completion *completion, int16_t error,
                     int64_t base_offset, ks_time_ns at_ns)
{
    if (completion->kind == COMPLETE_CALLBACK) {
        callback_at(broker, at_ns, completion->done, completion->context, error, base_offset);
        return;
    }
    struct ks_produce_response response;
    memset(&response, 0, sizeof response);
    response.correlation_id = completion->correlation_id;
    response.topic_index = completion->topic_index;
    response.partition = completion->partition;
    response.base_offset = error == KS_ERR_NONE ? base_offset : -1;
    response.error_code = error;
    struct replica *replica = find_replica(broker, completion->topic_index, completion->partition);
    response.log_start_offset = replica != NULL ? ks_log_start_offset(replica->log) : -1;
    response.leader_epoch = replica != NULL && replica->role == KS_ROLE_LEADER
                                ? replica->state.leader_epoch
                                : -1;
    send_at(broker, at_ns, completion->source, KS_MSG_PRODUCE_RESPONSE, &response, sizeof response);
}

/* ---- delayed fetch --------------------------------------------------------- */

static bool serve_fetch(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                        size_t message_bytes, bool may_park, ks_time_ns deadline_ns);

static bool delayed_contains(const struct delayed_fetch *item, int32_t topic_index,
                             int32_t partition)
{
    const struct ks_fetch_request *request = (const struct ks_fetch_request *)item->request;
    const struct ks_fetch_request_partition *entries =
        (const struct ks_fetch_request_partition *)(item->request + sizeof *request);
    for (int32_t i = 0; i < request->partition_count; i++) {
        if (entries[i].topic_index == topic_index && entries[i].partition == partition) {
            return true;
        }
    }
    return false;
}

/* DelayedFetch.tryComplete / onExpiration: answer now if the request has
 * min_bytes available (or whatever there is once it expired); otherwise it
 * parks again until its original deadline. */
static void delayed_complete(struct ks_broker *broker, struct delayed_fetch *item, bool expired)
{
    g_ptr_array_remove(broker->delayed, item);
    ks_world_cancel(broker->world, item->timer);
    serve_fetch(broker, item->source, item->request, item->request_bytes, !expired,
                item->deadline_ns);
    free(item->request);
    free(item);
}

static void delayed_expire(ks_world *world, void *context)
{
    (void)world;
    struct delayed_fetch *item = context;
    item->timer = 0;
    delayed_complete(item->broker, item, true);
}

/* which: 0 = followers only (new data), 1 = consumers only (HW moved), 2 = all. */
static void release_delayed(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                            int which)
{
    if (broker->delayed->len == 0) {
        return;
    }
    GPtrArray *ready = NULL;
    for (guint i = 0; i < broker->delayed->len; i++) {
        struct delayed_fetch *item = g_ptr_array_index(broker->delayed, i);
        if ((which == 0 && item->consumer) || (which == 1 && !item->consumer)) {
            continue;
        }
        if (delayed_contains(item, topic_index, partition)) {
            if (ready == NULL) {
                ready = g_ptr_array_new();
            }
            g_ptr_array_add(ready, item);
        }
    }
    if (ready == NULL) {
        return;
    }
    for (guint i = 0; i < ready->len; i++) {
        delayed_complete(broker, g_ptr_array_index(ready, i), false);
    }
    g_ptr_array_free(ready, TRUE);
}

/* ---- high watermark and pending produce ----------------------------------- */

static bool follower_caught_up(const struct ks_broker *broker, const struct replica *replica,
                               const struct follower_state *follower)
{
    int64_t lag_max = broker->spec->cluster->replica_lag_ns_max;
    return follower->leo == leo_of(replica) ||
           (int64_t)(now_ns(broker) - follower->last_caught_up_ns) <= lag_max;
}

static void complete_pending(struct ks_broker *broker, struct replica *replica, bool all,
                             int16_t error)
{
    if (broker->pending->len == 0) {
        return;
    }
    int32_t isr[KS_REPLICATION_FACTOR_MAX * 2];
    int32_t isr_count = maximal_isr(replica, isr);
    GPtrArray *done = NULL;
    for (guint i = 0; i < broker->pending->len; i++) {
        struct pending_produce *item = g_ptr_array_index(broker->pending, i);
        if (item->completion.topic_index != replica->topic_index ||
            item->completion.partition != replica->partition) {
            continue;
        }
        if (all || replica->hw >= item->required_offset) {
            if (done == NULL) {
                done = g_ptr_array_new();
            }
            g_ptr_array_add(done, item);
        }
    }
    if (done == NULL) {
        return;
    }
    ks_time_ns at = ks_disk_idle_at_ns(broker->world, (ks_node_id)broker->id);
    for (guint i = 0; i < done->len; i++) {
        struct pending_produce *item = g_ptr_array_index(done, i);
        g_ptr_array_remove(broker->pending, item);
        ks_world_cancel(broker->world, item->timer);
        int16_t code = error;
        if (!all) {
            /* kafka-reference 9.6: the data stays either way. */
            code = isr_count >= effective_min_isr(replica) ? KS_ERR_NONE
                                                            : KS_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND;
        }
        complete(broker, &item->completion, code, item->base_offset, at);
        free(item);
    }
    g_ptr_array_free(done, TRUE);
}

static void maybe_advance_hw(struct ks_broker *broker, struct replica *replica)
{
    if (replica->role != KS_ROLE_LEADER) {
        return;
    }
    /* KAFKA-15583 (3.7+): no HW advance while the ISR is under min ISR. */
    if (broker->spec->cluster->hw_requires_min_isr &&
        replica->state.isr_count < effective_min_isr(replica)) {
        return;
    }
    int32_t isr[KS_REPLICATION_FACTOR_MAX * 2];
    int32_t isr_count = maximal_isr(replica, isr);
    int64_t candidate = leo_of(replica);
    for (int32_t i = 0; i < replica->follower_count; i++) {
        const struct follower_state *follower = &replica->followers[i];
        bool in_isr = list_contains(isr, isr_count, follower->broker_id);
        bool joining = follower_caught_up(broker, replica, follower) &&
                       broker_alive(broker, follower->broker_id);
        if (follower->leo < candidate && (in_isr || joining)) {
            candidate = follower->leo;
        }
    }
    if (candidate <= replica->hw) {
        return;
    }
    replica->hw = candidate;
    replica_check(broker, replica);
    complete_pending(broker, replica, false, KS_ERR_NONE);
    release_delayed(broker, replica->topic_index, replica->partition, 1);
}

static void pending_timeout(ks_world *world, void *context)
{
    (void)world;
    struct pending_produce *item = context;
    struct ks_broker *broker = item->broker;
    item->timer = 0;
    g_ptr_array_remove(broker->pending, item);
    complete(broker, &item->completion, KS_ERR_REQUEST_TIMED_OUT, -1, now_ns(broker));
    free(item);
}

/* ---- truncation ------------------------------------------------------------- */

static void truncate_replica(struct ks_broker *broker, struct replica *replica, int64_t offset,
                             const char *why_detail, const char *why_explain)
{
    int64_t leo_before = leo_of(replica);
    if (offset >= leo_before) {
        return;
    }
    ks_log_truncate_to(replica->log, offset);
    int64_t leo = leo_of(replica);
    if (replica->hw > leo) {
        replica->hw = leo;
    }
    int64_t start = ks_log_start_offset(replica->log);
    if (replica->hw < start) {
        replica->hw = start;
    }
    replica->producers_valid = false;
    char detail[256];
    char explain[900];
    const char *name = replica->topic->name;
    if (leo_before - leo == 1) {
        g_snprintf(detail, sizeof detail, "broker %d truncates %s-%d to %" PRId64
                   " (%s), dropping offset %" PRId64, broker->id, name, replica->partition, leo,
                   why_detail, leo);
    } else {
        g_snprintf(detail, sizeof detail, "broker %d truncates %s-%d to %" PRId64
                   " (%s), dropping offsets %" PRId64 "..%" PRId64, broker->id, name,
                   replica->partition, leo, why_detail, leo, leo_before - 1);
    }
    g_snprintf(explain, sizeof explain, "Broker %d truncates %s-%d to offset %" PRId64
               ", dropping %" PRId64 " record(s) from its log. %s",
               broker->id, name, replica->partition, leo, leo_before - leo, why_explain);
    ks_broker_emit(broker, KS_EV_TRUNCATION, replica->topic_index, replica->partition, detail,
                   explain);
    replica_check(broker, replica);
}

/* ---- follower fetcher ---------------------------------------------------------- */

static void fetcher_kick(struct ks_broker *broker, int32_t leader_id);

static void fetcher_kick_timer(ks_world *world, void *context);

/* The timer context must outlive the timer: encode (broker, leader) in the
 * fetcher slot itself. */
struct fetcher_ref {
    struct ks_broker *broker;
    int32_t leader_id;
};

static struct fetcher_ref *fetcher_ref(struct ks_broker *broker, int32_t leader_id);

static void schedule_kick(struct ks_broker *broker, int32_t leader_id, ks_time_ns at_ns)
{
    struct fetcher *fetcher = &broker->fetchers[leader_id - 1];
    if (fetcher->kick_timer != 0) {
        return;
    }
    ks_time_ns now = now_ns(broker);
    fetcher->kick_timer = ks_world_schedule(broker->world, (ks_node_id)broker->id,
                                            at_ns > now ? at_ns - now : 0, KS_TIMER_BROKER_FETCH,
                                            fetcher_kick_timer, fetcher_ref(broker, leader_id));
}

static void fetch_timeout(ks_world *world, void *context)
{
    (void)world;
    struct fetcher_ref *ref = context;
    struct ks_broker *broker = ref->broker;
    struct fetcher *fetcher = &broker->fetchers[ref->leader_id - 1];
    fetcher->timeout_timer = 0;
    fetcher->in_flight = false;
    schedule_kick(broker, ref->leader_id,
                  now_ns(broker) + (ks_time_ns)broker->spec->cluster->replica_fetch_backoff_ns);
}

static void fetcher_kick(struct ks_broker *broker, int32_t leader_id)
{
    struct fetcher *fetcher = &broker->fetchers[leader_id - 1];
    if (!broker->running || fetcher->in_flight || fetcher->kick_timer != 0) {
        return;
    }
    ks_time_ns now = now_ns(broker);
    ks_time_ns earliest_backoff = KS_TIME_NEVER;
    GByteArray *message = g_byte_array_new();
    struct ks_fetch_request header;
    memset(&header, 0, sizeof header);
    g_byte_array_append(message, (const guint8 *)&header, sizeof header);
    int32_t count = 0;
    bool epochs = broker->spec->cluster->truncation == KS_TRUNCATION_LEADER_EPOCH;
    for (int32_t t = 0; t < broker->topic_count; t++) {
        for (int32_t p = 0; p < broker->topics[t].partition_count; p++) {
            struct replica *replica = broker->replicas[t][p];
            if (replica == NULL || replica->log == NULL || replica->role != KS_ROLE_FOLLOWER ||
                replica->state.leader != leader_id) {
                continue;
            }
            if (replica->fetch_backoff_until_ns > now) {
                if (replica->fetch_backoff_until_ns < earliest_backoff) {
                    earliest_backoff = replica->fetch_backoff_until_ns;
                }
                continue;
            }
            struct ks_fetch_request_partition entry;
            memset(&entry, 0, sizeof entry);
            entry.topic_index = t;
            entry.partition = p;
            entry.fetch_offset = leo_of(replica);
            entry.log_start_offset = ks_log_start_offset(replica->log);
            entry.current_leader_epoch = replica->state.leader_epoch;
            entry.last_fetched_epoch = epochs ? ks_log_epoch_at_end(replica->log) : -1;
            entry.partition_max_bytes = broker->spec->cluster->replica_fetch_max_bytes;
            g_byte_array_append(message, (const guint8 *)&entry, sizeof entry);
            count++;
        }
    }
    if (count == 0) {
        g_byte_array_unref(message);
        if (earliest_backoff != KS_TIME_NEVER) {
            schedule_kick(broker, leader_id, earliest_backoff);
        }
        return;
    }
    struct ks_fetch_request *request = (struct ks_fetch_request *)message->data;
    request->correlation_id = ++broker->next_correlation_id;
    request->replica_id = broker->id;
    request->min_bytes = broker->spec->cluster->replica_fetch_min_bytes;
    request->max_wait_ns = broker->spec->cluster->replica_fetch_wait_ns_max;
    request->max_bytes = broker->spec->cluster->replica_fetch_response_max_bytes;
    request->partition_count = count;
    fetcher->in_flight = true;
    fetcher->correlation_id = request->correlation_id;
    ks_world_send(broker->world, (ks_node_id)broker->id, (ks_node_id)leader_id,
                  KS_MSG_FETCH_REQUEST, message->data, message->len);
    g_byte_array_unref(message);
    fetcher->timeout_timer = ks_world_schedule(broker->world, (ks_node_id)broker->id,
                                               REQUEST_TIMEOUT_NS, KS_TIMER_BROKER_FETCH_TIMEOUT,
                                               fetch_timeout, fetcher_ref(broker, leader_id));
}

static void fetcher_kick_timer(ks_world *world, void *context)
{
    (void)world;
    struct fetcher_ref *ref = context;
    ref->broker->fetchers[ref->leader_id - 1].kick_timer = 0;
    fetcher_kick(ref->broker, ref->leader_id);
}

/* Producers of a topic that do not wait for every in-sync replica ("p1
 * (acks=1), p2 (acks=0)"), for the narration; returns how many. */
static int32_t weak_acks_producers(const struct ks_broker *broker, int32_t topic_index,
                                   char *out, size_t out_bytes)
{
    int32_t count = 0;
    out[0] = '\0';
    for (int32_t i = 0; i < broker->spec->producer_count; i++) {
        const struct ks_producer_config *producer = &broker->spec->producers[i];
        if (producer->topic_index != topic_index || producer->acks == KS_ACKS_ALL) {
            continue;
        }
        size_t used = strlen(out);
        if (count < 4 && used < out_bytes) {
            g_snprintf(out + used, out_bytes - used, "%s%s (acks=%d)", count > 0 ? ", " : "",
                       producer->name, producer->acks == KS_ACKS_NONE ? 0 : 1);
        }
        count++;
    }
    return count;
}

/* What dropping [target, LEO) of a replica loses, as far as this broker
 * knows: the part below its HW was committed; acks=1 and acks=0
 * writes may have been acknowledged before any follower had them. */
static void describe_dropped(const struct ks_broker *broker, const struct replica *replica,
                             int64_t target, char *out, size_t out_bytes)
{
    int64_t leo = leo_of(replica);
    int64_t committed_end = min64(replica->hw, leo);
    char producers[300];
    int32_t weak = weak_acks_producers(broker, replica->topic_index, producers, sizeof producers);
    char weak_text[500] = "";
    if (weak > 0) {
        g_snprintf(weak_text, sizeof weak_text,
                   " But producer %s%s %s not wait for the followers: a leader acknowledges an "
                   "acks=1 write as soon as it has appended it (acks=0 gets no answer at all), "
                   "so some of %s may have been acknowledged and are lost all the same.",
                   producers, weak > 4 ? " and more" : "", weak > 1 ? "do" : "does",
                   committed_end > target ? "the others" : "these records");
    }
    if (committed_end <= target) {
        g_snprintf(out, out_bytes,
                   "None of them is below this replica's high watermark (%" PRId64 "), so it "
                   "has no sign that they were committed; if the new leader came from the ISR, "
                   "they were not, and no acks=all write among them was acknowledged.%s",
                   replica->hw, weak_text);
        return;
    }
    char rest[160] = "";
    if (committed_end < leo) {
        g_snprintf(rest, sizeof rest, " It has no sign that %" PRId64 "..%" PRId64
                   " were committed.", committed_end, leo - 1);
    }
    g_snprintf(out, out_bytes,
               "Offsets %" PRId64 "..%" PRId64 " were below this replica's high watermark "
               "(%" PRId64 "): they had been committed, so their producers may have been "
               "told they were written, whatever their acks. Only an unclean election (a leader "
               "from outside the ISR) or an in-sync replica that lost unflushed data can cut "
               "committed records: these are lost.%s%s",
               target, committed_end - 1, replica->hw, rest, committed_end < leo ? weak_text : "");
}

/* Truncation target for a diverging epoch (AbstractFetcherThread
 * getOffsetTruncationState, KIP-101/KIP-279). */
static int64_t diverging_target(const struct replica *replica, int32_t leader_epoch,
                                int64_t leader_end_offset, int32_t *matched_epoch_out)
{
    int64_t leo = leo_of(replica);
    *matched_epoch_out = -1;
    if (leader_epoch < 0) {
        return min64(replica->hw, leo);
    }
    int32_t epoch = -1;
    int64_t end = -1;
    if (!ks_log_epoch_end_offset(replica->log, leader_epoch, &epoch, &end)) {
        return min64(replica->hw, leo);
    }
    *matched_epoch_out = epoch;
    if (epoch != leader_epoch) {
        /* KIP-279: we do not know the leader's epoch: go back to the end of
         * our largest smaller epoch and ask again. */
        return min64(end, leo);
    }
    return min64(min64(end, leader_end_offset), leo);
}

static void follower_handle_partition(struct ks_broker *broker, int32_t leader_id,
                                      const struct ks_fetch_response_partition *part,
                                      const uint8_t *records)
{
    struct replica *replica = find_replica(broker, part->topic_index, part->partition);
    if (replica == NULL || replica->role != KS_ROLE_FOLLOWER || replica->state.leader != leader_id) {
        return;
    }
    ks_time_ns now = now_ns(broker);
    int64_t backoff = broker->spec->cluster->replica_fetch_backoff_ns;
    if (part->error_code == KS_ERR_OFFSET_OUT_OF_RANGE) {
        int64_t leo = leo_of(replica);
        if (leo > part->leader_leo) {
            /* The leader has less than we do (an unclean leader, or HW-mode
             * truncation): pre-KIP-101 Kafka truncates to the leader's LEO. */
            char explain[400];
            g_snprintf(explain, sizeof explain,
                       "The leader's log ends at %" PRId64 ", below this replica's end, so the "
                       "follower cuts its log back to the leader's end to stay a copy of it. "
                       "Records beyond that point exist nowhere else and are lost.",
                       part->leader_leo);
            truncate_replica(broker, replica, part->leader_leo, "leader's log end offset", explain);
        } else if (leo < part->log_start_offset) {
            ks_log_truncate_fully_and_start_at(replica->log, part->log_start_offset);
            replica->hw = part->log_start_offset;
            replica->producers_valid = false;
        } else {
            replica->fetch_backoff_until_ns = now + (ks_time_ns)backoff;
        }
        return;
    }
    if (part->error_code != KS_ERR_NONE) {
        /* NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH: wait for metadata. */
        replica->fetch_backoff_until_ns = now + (ks_time_ns)backoff;
        return;
    }
    if (part->diverging) {
        int32_t matched = -1;
        int64_t target =
            diverging_target(replica, part->diverging_epoch, part->diverging_end_offset, &matched);
        char detail[96];
        char explain[1400];
        if (part->diverging_epoch < 0 || matched < 0) {
            g_snprintf(detail, sizeof detail, "no common leader epoch: to its high watermark");
            g_snprintf(explain, sizeof explain,
                       "Leader %d and this follower share no known leader epoch, so it falls "
                       "back to its high watermark, as Kafka does without epoch data.",
                       leader_id);
        } else {
            g_snprintf(detail, sizeof detail, "leader %d epoch %d ends at %" PRId64, leader_id,
                       part->diverging_epoch, part->diverging_end_offset);
            char loss[1000];
            describe_dropped(broker, replica, target, loss, sizeof loss);
            g_snprintf(explain, sizeof explain,
                       "KIP-101/KIP-279: the follower's last epoch ends at a different offset on "
                       "leader %d (epoch %d ends at %" PRId64 " there), so its records above "
                       "the last offset both logs share were written by a leader that lost its "
                       "leadership before the new leader had them. The follower drops them so that "
                       "the replicas do not diverge. %s",
                       leader_id, part->diverging_epoch, part->diverging_end_offset, loss);
        }
        truncate_replica(broker, replica, target, detail, explain);
        return;
    }
    if (part->records_bytes > 0) {
        /* Skip batches we already have; a batch straddling our LEO (after an
         * HW truncation inside a batch) makes us cut back to its start. */
        size_t position = 0;
        size_t crc_checked_bytes = 0; /* of the first batch appended, parsed here */
        int64_t leo = leo_of(replica);
        while (position + KS_BATCH_HEADER_BYTES <= part->records_bytes) {
            struct ks_batch_view view;
            size_t batch_bytes = 0;
            if (ks_batch_parse(records + position, part->records_bytes - position, &view,
                               &batch_bytes) != KS_BATCH_OK) {
                break;
            }
            int64_t last = ks_batch_last_offset(&view);
            if (last < leo) {
                position += batch_bytes;
                continue;
            }
            crc_checked_bytes = batch_bytes;
            if (view.base_offset < leo) {
                truncate_replica(broker, replica, view.base_offset,
                                 "realign with the leader's batch",
                                 "The follower's log ended inside one of the leader's batches, "
                                 "so it drops the partial tail and copies the whole batch.");
            }
            break;
        }
        if (position < part->records_bytes) {
            enum ks_log_result result = ks_log_append_as_follower_checked(
                replica->log, records + position, part->records_bytes - position,
                crc_checked_bytes, now);
            if (result != KS_LOG_OK) {
                replica->fetch_backoff_until_ns = now + (ks_time_ns)backoff;
                return;
            }
            if (replica->producers_valid) {
                ks_producer_state_update_from_batches(replica->producers, records + position,
                                                      part->records_bytes - position);
            }
        }
    }
    int64_t leo = leo_of(replica);
    int64_t hw = min64(part->hw, leo);
    if (part->log_start_offset > ks_log_start_offset(replica->log) &&
        part->log_start_offset <= hw) {
        ks_log_advance_start_offset(replica->log, part->log_start_offset);
    }
    int64_t start = ks_log_start_offset(replica->log);
    replica->hw = hw < start ? start : hw;
    replica_check(broker, replica);
}

static void on_fetch_response(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                              size_t message_bytes)
{
    if (message_bytes < sizeof(struct ks_fetch_response) || source < 1 ||
        (int32_t)source > broker->spec->cluster->broker_count) {
        return;
    }
    int32_t leader_id = (int32_t)source;
    struct fetcher *fetcher = &broker->fetchers[leader_id - 1];
    struct ks_fetch_response header;
    memcpy(&header, message, sizeof header);
    if (!fetcher->in_flight || header.correlation_id != fetcher->correlation_id) {
        return;
    }
    fetcher->in_flight = false;
    ks_world_cancel(broker->world, fetcher->timeout_timer);
    fetcher->timeout_timer = 0;
    size_t position = sizeof header;
    for (int32_t i = 0; i < header.partition_count; i++) {
        if (message_bytes - position < sizeof(struct ks_fetch_response_partition)) {
            break;
        }
        struct ks_fetch_response_partition part;
        memcpy(&part, message + position, sizeof part);
        position += sizeof part;
        if (message_bytes - position < part.records_bytes) {
            break;
        }
        follower_handle_partition(broker, leader_id, &part, message + position);
        position += part.records_bytes;
    }
    /* The fetcher thread writes to the page cache, then fetches again. */
    ks_time_ns idle = ks_disk_idle_at_ns(broker->world, (ks_node_id)broker->id);
    if (idle > now_ns(broker)) {
        schedule_kick(broker, leader_id, idle);
    } else {
        fetcher_kick(broker, leader_id);
    }
}

/* ---- ISR changes (leader side) --------------------------------------------- */

static void send_alter(struct ks_broker *broker, struct replica *replica)
{
    replica->alter_sent_ns = now_ns(broker);
    ks_world_send(broker->world, (ks_node_id)broker->id, broker->controller_node,
                  KS_MSG_ALTER_PARTITION_REQUEST, &replica->alter, sizeof replica->alter);
}

static int compare_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a;
    int32_t y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void request_isr(struct ks_broker *broker, struct replica *replica, const int32_t *isr,
                        int32_t isr_count)
{
    ks_assert(!replica->alter_in_flight);
    ks_assert(isr_count >= 1 && isr_count <= KS_REPLICATION_FACTOR_MAX);
    memset(&replica->alter, 0, sizeof replica->alter);
    replica->alter.broker_id = broker->id;
    replica->alter.topic_index = replica->topic_index;
    replica->alter.partition = replica->partition;
    replica->alter.leader_epoch = replica->state.leader_epoch;
    replica->alter.partition_epoch = replica->state.partition_epoch;
    replica->alter.isr_count = isr_count;
    memcpy(replica->alter.isr, isr, sizeof(int32_t) * (size_t)isr_count);
    qsort(replica->alter.isr, (size_t)isr_count, sizeof(int32_t), compare_int32);
    replica->alter.broker_epoch = broker->broker_epoch;
    replica->alter_in_flight = true;
    send_alter(broker, replica);
}

static struct follower_state *find_follower(struct replica *replica, int32_t broker_id)
{
    for (int32_t i = 0; i < replica->follower_count; i++) {
        if (replica->followers[i].broker_id == broker_id) {
            return &replica->followers[i];
        }
    }
    return NULL;
}

/* kafka-reference 9.5: add a follower that reached the HW and the start of
 * the current leader epoch. */
static void maybe_expand_isr(struct ks_broker *broker, struct replica *replica,
                             const struct follower_state *follower)
{
    if (replica->alter_in_flight ||
        list_contains(replica->state.isr, replica->state.isr_count, follower->broker_id)) {
        return;
    }
    if (follower->leo < replica->hw || follower->leo < replica->epoch_start_offset ||
        !broker_alive(broker, follower->broker_id)) {
        return;
    }
    int32_t isr[KS_REPLICATION_FACTOR_MAX];
    int32_t count = replica->state.isr_count;
    memcpy(isr, replica->state.isr, sizeof(int32_t) * (size_t)count);
    isr[count++] = follower->broker_id;
    request_isr(broker, replica, isr, count);
}

/* kafka-reference 9.4: drop followers not caught up for replica.lag.time.max.ms. */
static void maybe_shrink_isr(struct ks_broker *broker, struct replica *replica)
{
    if (replica->role != KS_ROLE_LEADER) {
        return;
    }
    if (replica->alter_in_flight) {
        if (now_ns(broker) - replica->alter_sent_ns >= ALTER_RETRY_NS) {
            send_alter(broker, replica);
        }
        return;
    }
    int32_t isr[KS_REPLICATION_FACTOR_MAX];
    int32_t count = 0;
    bool shrink = false;
    for (int32_t i = 0; i < replica->state.isr_count; i++) {
        int32_t id = replica->state.isr[i];
        const struct follower_state *follower = find_follower(replica, id);
        if (id != broker->id && follower != NULL && !follower_caught_up(broker, replica, follower)) {
            shrink = true;
            continue;
        }
        isr[count++] = id;
    }
    if (shrink) {
        request_isr(broker, replica, isr, count);
    }
}

static void isr_check(ks_world *world, void *context)
{
    struct ks_broker *broker = context;
    for (int32_t t = 0; t < broker->topic_count; t++) {
        for (int32_t p = 0; p < broker->topics[t].partition_count; p++) {
            struct replica *replica = broker->replicas[t][p];
            if (replica != NULL && replica->log != NULL) {
                maybe_shrink_isr(broker, replica);
            }
        }
    }
    broker->isr_timer = ks_world_schedule(world, (ks_node_id)broker->id,
                                          (ks_time_ns)broker->spec->cluster->replica_lag_ns_max / 2,
                                          KS_TIMER_BROKER_ISR_CHECK, isr_check, broker);
}

static void on_alter_response(struct ks_broker *broker,
                              const struct ks_alter_partition_response *response)
{
    struct replica *replica = find_replica(broker, response->topic_index, response->partition);
    if (replica == NULL || !replica->alter_in_flight) {
        return;
    }
    replica->alter_in_flight = false;
    if (response->error_code != KS_ERR_NONE || response->leader != broker->id ||
        response->partition_epoch <= replica->state.partition_epoch) {
        /* Stale or refused: the controller's push brings the truth. */
        maybe_advance_hw(broker, replica);
        return;
    }
    replica->state.leader_epoch = response->leader_epoch;
    replica->state.partition_epoch = response->partition_epoch;
    replica->state.isr_count = response->isr_count;
    memcpy(replica->state.isr, response->isr, sizeof replica->state.isr);
    broker->meta[response->topic_index][response->partition] = replica->state;
    replica_check(broker, replica);
    maybe_advance_hw(broker, replica);
}

/* ---- leader fetch serving ------------------------------------------------------ */

static void record_follower_fetch(struct ks_broker *broker, struct replica *replica,
                                  int32_t follower_id, int64_t fetch_offset)
{
    struct follower_state *follower = find_follower(replica, follower_id);
    if (follower == NULL) {
        return;
    }
    ks_time_ns now = now_ns(broker);
    int64_t leader_leo = leo_of(replica);
    /* kafka-reference 9.2 (Replica.updateFetchStateOrThrow). */
    if (fetch_offset >= leader_leo) {
        if (now > follower->last_caught_up_ns) {
            follower->last_caught_up_ns = now;
        }
    } else if (fetch_offset >= follower->leader_leo_at_last_fetch) {
        if (follower->last_fetch_ns > follower->last_caught_up_ns) {
            follower->last_caught_up_ns = follower->last_fetch_ns;
        }
    }
    follower->leo = fetch_offset;
    follower->last_fetch_ns = now;
    follower->leader_leo_at_last_fetch = leader_leo;
    maybe_expand_isr(broker, replica, follower);
    maybe_advance_hw(broker, replica);
}

/* Builds and sends the response; returns true if the request was parked
 * instead (fewer than min_bytes available, before deadline_ns; KS_TIME_NEVER
 * for a new request: now + max_wait). */
static bool serve_fetch(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                        size_t message_bytes, bool may_park, ks_time_ns deadline_ns)
{
    struct ks_fetch_request request;
    memcpy(&request, message, sizeof request);
    const struct ks_fetch_request_partition *entries =
        (const struct ks_fetch_request_partition *)(message + sizeof request);
    bool consumer = request.replica_id < 0;
    bool epochs = broker->spec->cluster->truncation == KS_TRUNCATION_LEADER_EPOCH;
    GByteArray *out = g_byte_array_new();
    struct ks_fetch_response header;
    memset(&header, 0, sizeof header);
    header.correlation_id = request.correlation_id;
    header.partition_count = request.partition_count;
    g_byte_array_append(out, (const guint8 *)&header, sizeof header);
    size_t total_records = 0;
    bool anything_to_say = false;
    size_t response_max = request.max_bytes > 0 ? (size_t)request.max_bytes : SIZE_MAX;
    for (int32_t i = 0; i < request.partition_count; i++) {
        const struct ks_fetch_request_partition *entry = &entries[i];
        struct ks_fetch_response_partition part;
        memset(&part, 0, sizeof part);
        part.topic_index = entry->topic_index;
        part.partition = entry->partition;
        part.hw = -1;
        part.log_start_offset = -1;
        part.leader_leo = -1;
        part.diverging_epoch = -1;
        part.diverging_end_offset = -1;
        size_t header_position = out->len;
        g_byte_array_append(out, (const guint8 *)&part, sizeof part);
        struct replica *replica = find_replica(broker, entry->topic_index, entry->partition);
        if (replica == NULL) {
            part.error_code = KS_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        } else if (replica->role != KS_ROLE_LEADER) {
            part.error_code = KS_ERR_NOT_LEADER_OR_FOLLOWER;
        } else if (entry->current_leader_epoch >= 0 &&
                   entry->current_leader_epoch < replica->state.leader_epoch) {
            part.error_code = KS_ERR_FENCED_LEADER_EPOCH;
        } else if (entry->current_leader_epoch > replica->state.leader_epoch) {
            part.error_code = KS_ERR_UNKNOWN_LEADER_EPOCH;
        }
        if (part.error_code != KS_ERR_NONE) {
            anything_to_say = true;
            memcpy(out->data + header_position, &part, sizeof part);
            continue;
        }
        part.leader_epoch = replica->state.leader_epoch;
        /* KIP-320 diverging-epoch check (Partition.readRecords). */
        if (!consumer && epochs && entry->last_fetched_epoch >= 0) {
            int32_t epoch = -1;
            int64_t end = -1;
            if (!ks_log_epoch_end_offset(replica->log, entry->last_fetched_epoch, &epoch, &end)) {
                /* LeaderEpochFileCache.endOffsetFor: an epoch older than every
                 * known one answers (requested epoch, start of the first known
                 * epoch), which is the log start offset here; with no epochs
                 * at all, (requested epoch, LEO). */
                epoch = entry->last_fetched_epoch;
                end = ks_log_latest_epoch(replica->log) >= 0 ? ks_log_start_offset(replica->log)
                                                             : leo_of(replica);
            }
            if (epoch < entry->last_fetched_epoch || end < entry->fetch_offset) {
                part.diverging = 1;
                part.diverging_epoch = epoch;
                part.diverging_end_offset = end;
            }
        }
        if (!consumer && !part.diverging) {
            record_follower_fetch(broker, replica, request.replica_id, entry->fetch_offset);
        }
        part.log_start_offset = ks_log_start_offset(replica->log);
        part.leader_leo = leo_of(replica);
        if (part.diverging) {
            part.hw = replica->hw;
            anything_to_say = true;
            memcpy(out->data + header_position, &part, sizeof part);
            continue;
        }
        int64_t upto = consumer ? replica->hw : leo_of(replica);
        if (entry->fetch_offset < part.log_start_offset || entry->fetch_offset > leo_of(replica)) {
            part.error_code = KS_ERR_OFFSET_OUT_OF_RANGE;
            part.hw = replica->hw;
            anything_to_say = true;
            memcpy(out->data + header_position, &part, sizeof part);
            continue;
        }
        size_t before = out->len;
        if (entry->fetch_offset < upto && total_records < response_max) {
            size_t max = entry->partition_max_bytes > 0 ? (size_t)entry->partition_max_bytes : 1;
            enum ks_log_result result =
                ks_log_read(replica->log, entry->fetch_offset, upto, max, out);
            if (result == KS_LOG_OFFSET_OUT_OF_RANGE) {
                g_byte_array_set_size(out, (guint)before);
                part.error_code = KS_ERR_OFFSET_OUT_OF_RANGE;
                anything_to_say = true;
            } else if (result != KS_LOG_OK) {
                g_byte_array_set_size(out, (guint)before);
                part.error_code = KS_ERR_KAFKA_STORAGE_ERROR;
                anything_to_say = true;
            }
        }
        part.records_bytes = (uint32_t)(out->len - before);
        total_records += part.records_bytes;
        part.hw = replica->hw;
        /* The HW may have moved while recording this follower's fetch. */
        memcpy(out->data + header_position, &part, sizeof part);
    }
    ks_time_ns now = now_ns(broker);
    if (deadline_ns == KS_TIME_NEVER) {
        deadline_ns = now + (ks_time_ns)(request.max_wait_ns > 0 ? request.max_wait_ns : 0);
    }
    size_t min_bytes = request.min_bytes > 1 ? (size_t)request.min_bytes : 1;
    bool park = may_park && !anything_to_say && total_records < min_bytes && deadline_ns > now;
    if (park) {
        g_byte_array_unref(out);
        struct delayed_fetch *item = calloc(1, sizeof *item);
        ks_assert(item != NULL);
        item->broker = broker;
        item->source = source;
        item->request = malloc(message_bytes);
        ks_assert(item->request != NULL);
        memcpy(item->request, message, message_bytes);
        item->request_bytes = message_bytes;
        item->consumer = consumer;
        item->deadline_ns = deadline_ns;
        g_ptr_array_add(broker->delayed, item);
        item->timer = ks_world_schedule(broker->world, (ks_node_id)broker->id, deadline_ns - now,
                                        KS_TIMER_BROKER_DELAYED_FETCH, delayed_expire, item);
        return true;
    }
    send_at(broker, ks_disk_idle_at_ns(broker->world, (ks_node_id)broker->id), source,
            KS_MSG_FETCH_RESPONSE, out->data, out->len);
    g_byte_array_unref(out);
    return false;
}

static void on_fetch_request(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                             size_t message_bytes)
{
    if (message_bytes < sizeof(struct ks_fetch_request)) {
        return;
    }
    struct ks_fetch_request request;
    memcpy(&request, message, sizeof request);
    if (!ks_proto_fits(message_bytes, sizeof request, request.partition_count,
                       sizeof(struct ks_fetch_request_partition))) {
        return;
    }
    /* A follower or consumer has one fetch outstanding: a new one from the
     * same source replaces a parked one (its sender timed out). */
    for (guint i = 0; i < broker->delayed->len; i++) {
        struct delayed_fetch *item = g_ptr_array_index(broker->delayed, i);
        if (item->source == source) {
            g_ptr_array_remove_index(broker->delayed, i);
            ks_world_cancel(broker->world, item->timer);
            free(item->request);
            free(item);
            break;
        }
    }
    serve_fetch(broker, source, message, message_bytes, true, KS_TIME_NEVER);
}

/* ---- produce ----------------------------------------------------------------- */

static void refuse_event(struct ks_broker *broker, struct replica *replica)
{
    ks_time_ns now = now_ns(broker);
    if (replica->refused_once && now - replica->refused_event_ns < REFUSED_EVENT_INTERVAL_NS) {
        return;
    }
    replica->refused_once = true;
    replica->refused_event_ns = now;
    char detail[200];
    char explain[600];
    g_snprintf(detail, sizeof detail, "%s-%d NOT_ENOUGH_REPLICAS: isr size %d < min.insync.replicas %d",
               replica->topic->name, replica->partition, replica->state.isr_count,
               effective_min_isr(replica));
    g_snprintf(explain, sizeof explain,
               "Leader %d refuses an acks=all write to %s-%d without appending it: only %d "
               "replica(s) are in sync and min.insync.replicas is %d. The producer retries; the "
               "partition is unavailable for acks=all writes until the ISR grows back. This is "
               "the price of not acknowledging writes that too few replicas hold.",
               broker->id, replica->topic->name, replica->partition, replica->state.isr_count,
               effective_min_isr(replica));
    ks_broker_emit(broker, KS_EV_PRODUCE_REFUSED, replica->topic_index, replica->partition, detail,
                   explain);
}

/* Appends one batch as leader and arranges the completion. */
static void leader_append(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                          int16_t acks, int64_t timeout_ns, const uint8_t *batch,
                          size_t batch_bytes, const struct completion *completion)
{
    ks_time_ns now = now_ns(broker);
    struct replica *replica = find_replica(broker, topic_index, partition);
    if (topic_index < 0 || topic_index >= broker->topic_count) {
        complete(broker, completion, KS_ERR_UNKNOWN_TOPIC_OR_PARTITION, -1, now);
        return;
    }
    if (replica == NULL || replica->role != KS_ROLE_LEADER) {
        complete(broker, completion, KS_ERR_NOT_LEADER_OR_FOLLOWER, -1, now);
        return;
    }
    if (acks == KS_ACKS_ALL && replica->state.isr_count < effective_min_isr(replica)) {
        refuse_event(broker, replica);
        complete(broker, completion, KS_ERR_NOT_ENOUGH_REPLICAS, -1, now);
        return;
    }
    struct ks_batch_view view;
    size_t parsed_bytes = 0;
    if (ks_batch_parse(batch, batch_bytes, &view, &parsed_bytes) != KS_BATCH_OK) {
        complete(broker, completion, KS_ERR_CORRUPT_MESSAGE, -1, now);
        return;
    }
    if (!replica->producers_valid) {
        ks_producer_state_rebuild(replica->producers, replica->log);
        replica->producers_valid = true;
    }
    int32_t last_seq = view.base_sequence < 0
                           ? -1
                           : (int32_t)(((int64_t)view.base_sequence + view.last_offset_delta) %
                                       ((int64_t)INT32_MAX + 1));
    int64_t base_offset = -1;
    int64_t last_offset = -1;
    int16_t check = ks_producer_state_check(replica->producers, view.producer_id,
                                            view.producer_epoch, view.base_sequence, last_seq,
                                            &base_offset, &last_offset);
    if (check == KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER || check == KS_ERR_INVALID_PRODUCER_EPOCH) {
        complete(broker, completion, check, -1, now);
        return;
    }
    /* LogValidator: recompress when the topic's compression.type differs
     * from the batch's codec (core/compress.c decides; NULL keeps it). */
    GByteArray *rebuilt = NULL;
    if (check != KS_ERR_DUPLICATE_SEQUENCE_NUMBER && parsed_bytes == batch_bytes) {
        rebuilt = ks_compress_for_topic(&replica->topic->compression, batch, batch_bytes);
    }
    if (rebuilt != NULL) {
        batch = rebuilt->data;
        batch_bytes = parsed_bytes = rebuilt->len;
    }
    if (check != KS_ERR_DUPLICATE_SEQUENCE_NUMBER) {
        uint8_t *copy = malloc(batch_bytes);
        ks_assert(copy != NULL);
        memcpy(copy, batch, batch_bytes);
        /* The parse above checked the first batch's CRC; the log does not
         * check those bytes again (it checks any batch after them). */
        enum ks_log_result result = ks_log_append_as_leader_checked(
            replica->log, copy, batch_bytes, parsed_bytes, replica->state.leader_epoch, now,
            &base_offset, &last_offset);
        free(copy);
        if (rebuilt != NULL) {
            g_byte_array_unref(rebuilt);
        }
        if (result != KS_LOG_OK) {
            complete(broker, completion,
                     result == KS_LOG_CORRUPT ? KS_ERR_CORRUPT_MESSAGE : KS_ERR_KAFKA_STORAGE_ERROR,
                     -1, now);
            return;
        }
        ks_producer_state_update(replica->producers, view.producer_id, view.producer_epoch,
                                 view.base_sequence, last_seq, base_offset, last_offset);
        release_delayed(broker, topic_index, partition, 0);
        maybe_advance_hw(broker, replica);
    }
    /* Kafka answers a duplicate of a cached batch like the original append
     * (ProducerStateManager: the batch metadata gives the original offsets). */
    ks_time_ns disk_done = ks_disk_idle_at_ns(broker->world, (ks_node_id)broker->id);
    if (acks == KS_ACKS_NONE) {
        return;
    }
    if (acks == KS_ACKS_LEADER || replica->hw > last_offset) {
        complete(broker, completion, KS_ERR_NONE, base_offset, disk_done);
        return;
    }
    struct pending_produce *item = calloc(1, sizeof *item);
    ks_assert(item != NULL);
    item->broker = broker;
    item->completion = *completion;
    item->base_offset = base_offset;
    item->required_offset = last_offset + 1;
    g_ptr_array_add(broker->pending, item);
    item->timer = ks_world_schedule(broker->world, (ks_node_id)broker->id,
                                    timeout_ns > 0 ? (ks_time_ns)timeout_ns : 0,
                                    KS_TIMER_BROKER_PRODUCE_TIMEOUT, pending_timeout, item);
}

static void on_produce_request(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                               size_t message_bytes)
{
    if (message_bytes < sizeof(struct ks_produce_request)) {
        return;
    }
    struct ks_produce_request request;
    memcpy(&request, message, sizeof request);
    if (message_bytes - sizeof request < request.batch_bytes) {
        return;
    }
    struct completion completion;
    memset(&completion, 0, sizeof completion);
    completion.kind = COMPLETE_NETWORK;
    completion.source = source;
    completion.correlation_id = request.correlation_id;
    completion.topic_index = request.topic_index;
    completion.partition = request.partition;
    if (request.acks == KS_ACKS_NONE) {
        /* acks=0: no response at all, even for errors. */
        completion.kind = COMPLETE_CALLBACK;
        completion.done = NULL;
    }
    leader_append(broker, request.topic_index, request.partition, request.acks,
                  request.timeout_ns, message + sizeof request, request.batch_bytes, &completion);
}

void ks_broker_append_internal(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                               const uint8_t *batch, size_t batch_bytes,
                               void (*done)(void *context, int16_t error, int64_t base_offset),
                               void *context)
{
    struct completion completion;
    memset(&completion, 0, sizeof completion);
    completion.kind = COMPLETE_CALLBACK;
    completion.topic_index = topic_index;
    completion.partition = partition;
    completion.done = done;
    completion.context = context;
    leader_append(broker, topic_index, partition, KS_ACKS_ALL, (int64_t)INTERNAL_APPEND_TIMEOUT_NS,
                  batch, batch_bytes, &completion);
}

void ks_broker_append_for_test(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                               enum ks_acks acks, const uint8_t *batch, size_t batch_bytes,
                               void (*done)(void *context, int16_t error, int64_t base_offset),
                               void *context)
{
    struct completion completion;
    memset(&completion, 0, sizeof completion);
    completion.kind = COMPLETE_CALLBACK;
    completion.topic_index = topic_index;
    completion.partition = partition;
    completion.done = done;
    completion.context = context;
    leader_append(broker, topic_index, partition, (int16_t)acks, (int64_t)REQUEST_TIMEOUT_NS,
                  batch, batch_bytes, &completion);
}

/* ---- other client requests ------------------------------------------------------ */

static void on_metadata_request(struct ks_broker *broker, ks_node_id source,
                                const struct ks_metadata_request *request)
{
    int32_t t = request->topic_index;
    int32_t count = (t >= 0 && t < broker->topic_count) ? broker->topics[t].partition_count : 0;
    size_t bytes = sizeof(struct ks_metadata_response) +
                   (size_t)count * sizeof(struct ks_metadata_partition);
    uint8_t *message = calloc(1, bytes);
    ks_assert(message != NULL);
    struct ks_metadata_response *response = (struct ks_metadata_response *)message;
    response->correlation_id = request->correlation_id;
    response->topic_index = t;
    response->answering_broker = broker->id;
    response->broker_count = broker->spec->cluster->broker_count;
    memcpy(response->broker_alive, broker->broker_alive, sizeof response->broker_alive);
    response->partition_count = count;
    if (count == 0) {
        response->error_code = KS_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    struct ks_metadata_partition *entries =
        (struct ks_metadata_partition *)(message + sizeof(struct ks_metadata_response));
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

static void on_init_producer_id(struct ks_broker *broker, ks_node_id source,
                                const struct ks_init_producer_id_request *request)
{
    struct ks_init_producer_id_response response;
    memset(&response, 0, sizeof response);
    response.correlation_id = request->correlation_id;
    response.producer_id = (int64_t)broker->id * 1000000 + (int64_t)broker->incarnation * 10000 +
                           broker->producer_id_counter++;
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
    struct replica *replica = find_replica(broker, request->topic_index, request->partition);
    if (replica == NULL) {
        response.error_code = KS_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    } else if (replica->role != KS_ROLE_LEADER) {
        response.error_code = KS_ERR_NOT_LEADER_OR_FOLLOWER;
    } else if (request->current_leader_epoch >= 0 &&
               request->current_leader_epoch < replica->state.leader_epoch) {
        response.error_code = KS_ERR_FENCED_LEADER_EPOCH;
    } else if (request->current_leader_epoch > replica->state.leader_epoch) {
        response.error_code = KS_ERR_UNKNOWN_LEADER_EPOCH;
    } else {
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

/* ---- replicas: creation and role changes --------------------------------------- */

static struct replica *open_replica(struct ks_broker *broker, int32_t topic_index,
                                    int32_t partition, int64_t recovery_point,
                                    bool clean_shutdown, int64_t hw_checkpoint,
                                    int64_t log_start_checkpoint)
{
    struct replica *replica = calloc(1, sizeof *replica);
    ks_assert(replica != NULL);
    replica->topic_index = topic_index;
    replica->partition = partition;
    replica->topic = &broker->topics[topic_index];
    replica->role = KS_ROLE_NONE;
    replica->state.partition_epoch = -1;
    replica->state.leader = -1;
    replica->producers = ks_producer_state_new();
    char dir[KS_TOPIC_NAME_BYTES_MAX + 64];
    g_snprintf(dir, sizeof dir, "%s/%s-%d", broker->dir, replica->topic->name, partition);
    struct ks_log_recovery_report report;
    memset(&report, 0, sizeof report);
    replica->log = ks_log_open(broker->world, (ks_node_id)broker->id, dir, &replica->topic->log,
                               recovery_point, clean_shutdown, &report);
    ks_assert(replica->log != NULL);
    if (log_start_checkpoint > ks_log_start_offset(replica->log) &&
        log_start_checkpoint <= ks_log_leo(replica->log)) {
        ks_log_advance_start_offset(replica->log, log_start_checkpoint);
    }
    int64_t leo = ks_log_leo(replica->log);
    int64_t start = ks_log_start_offset(replica->log);
    /* kafka-reference 3.7: HW from the checkpoint, clamped to [start, LEO]. */
    int64_t hw = hw_checkpoint < 0 ? start : hw_checkpoint;
    replica->hw = hw > leo ? leo : (hw < start ? start : hw);
    broker->replicas[topic_index][partition] = replica;
    if (report.recovered) {
        char detail[256];
        char explain[700];
        g_snprintf(detail, sizeof detail, "broker %d recovered %s-%d from offset %" PRId64
                   ": dropped %" PRId64 " batch(es), %" PRId64 " bytes; log end %" PRId64,
                   broker->id, replica->topic->name, partition, report.recovered_from_offset,
                   report.dropped_batch_count, report.dropped_bytes, report.leo_after);
        g_snprintf(explain, sizeof explain,
                   "Broker %d did not shut down cleanly, so it re-reads %s-%d from its recovery "
                   "point (the last offset known to be fsynced), checks every batch's CRC, and "
                   "cuts the log at the first torn or missing batch. Its high watermark comes "
                   "from replication-offset-checkpoint (%" PRId64 "), clamped to the log end.",
                   broker->id, replica->topic->name, partition, replica->hw);
        ks_broker_emit(broker, KS_EV_RECOVERY, topic_index, partition, detail, explain);
    }
    return replica;
}

static void close_replica(struct replica *replica)
{
    ks_log_close(replica->log);
    ks_producer_state_free(replica->producers);
    free(replica);
}

static void fail_partition_ops(struct ks_broker *broker, struct replica *replica)
{
    complete_pending(broker, replica, true, KS_ERR_NOT_LEADER_OR_FOLLOWER);
    release_delayed(broker, replica->topic_index, replica->partition, 2);
}

static void become_leader(struct ks_broker *broker, struct replica *replica)
{
    /* Re-elected with a new epoch: pending acks=all produce keep waiting for
     * the HW, as Kafka's DelayedProduce does (it is keyed by partition). */
    replica->role = KS_ROLE_LEADER;
    replica->alter_in_flight = false;
    int64_t leo = leo_of(replica);
    /* KIP-101: a new leader records (epoch, LEO) in its epoch cache. */
    ks_log_epoch_assign(replica->log, replica->state.leader_epoch, leo);
    replica->epoch_start_offset = leo;
    ks_time_ns now = now_ns(broker);
    replica->follower_count = 0;
    for (int32_t i = 0; i < replica->state.replica_count; i++) {
        int32_t id = replica->state.replicas[i];
        if (id == broker->id) {
            continue;
        }
        struct follower_state *follower = &replica->followers[replica->follower_count++];
        memset(follower, 0, sizeof *follower);
        follower->broker_id = id;
        follower->leo = -1;
        follower->leader_leo_at_last_fetch = -1;
        follower->last_fetch_ns = 0;
        /* Partition.makeLeader: ISR members count as caught up now. */
        follower->last_caught_up_ns =
            list_contains(replica->state.isr, replica->state.isr_count, id) ? now : 0;
    }
    if (!replica->producers_valid) {
        ks_producer_state_rebuild(replica->producers, replica->log);
        replica->producers_valid = true;
    }
    replica_check(broker, replica);
    release_delayed(broker, replica->topic_index, replica->partition, 2);
    maybe_advance_hw(broker, replica);
    if (broker->coordinator != NULL && replica->topic_index == broker->offsets_topic_index) {
        ks_group_coordinator_on_leadership(broker->coordinator, replica->partition, true);
    }
}

static void become_follower(struct ks_broker *broker, struct replica *replica)
{
    bool was_leader = replica->role == KS_ROLE_LEADER;
    if (was_leader) {
        fail_partition_ops(broker, replica);
    }
    replica->role = KS_ROLE_FOLLOWER;
    replica->alter_in_flight = false;
    replica->fetch_backoff_until_ns = 0;
    /* Truncation needs a leader to follow: with no leader (an offline
     * partition) the ZooKeeper-era controller sent no LeaderAndIsr at all. */
    if (broker->spec->cluster->truncation == KS_TRUNCATION_HIGH_WATERMARK &&
        replica->state.leader >= 1) {
        char explain[600];
        g_snprintf(explain, sizeof explain,
                   "replication.truncation = high-watermark (Kafka before 0.11): on becoming a "
                   "follower the replica drops everything above its own high watermark, %" PRId64
                   ". That HW can lag the leader's (a follower learns it one fetch late; a "
                   "restarted broker reads it from a checkpoint), so records among these may "
                   "have been committed and acknowledged. Those the current leader lacks are "
                   "gone; the rest are lost too if this replica becomes leader before fetching "
                   "them back (KIP-101 scenario 1).",
                   replica->hw);
        truncate_replica(broker, replica, replica->hw, "its high watermark", explain);
    }
    if (was_leader && broker->coordinator != NULL &&
        replica->topic_index == broker->offsets_topic_index) {
        ks_group_coordinator_on_leadership(broker->coordinator, replica->partition, false);
    }
    if (replica->state.leader >= 1) {
        /* A new leader epoch: Kafka re-adds the partition to the fetcher for
         * the leader's broker, and a leader that restarted has reset the old
         * connection. Abandon a request still in flight (its response, if
         * any, no longer matches) and fetch afresh. */
        struct fetcher *fetcher = &broker->fetchers[replica->state.leader - 1];
        if (fetcher->in_flight) {
            fetcher->in_flight = false;
            ks_world_cancel(broker->world, fetcher->timeout_timer);
            fetcher->timeout_timer = 0;
        }
        fetcher_kick(broker, replica->state.leader);
    }
}

static void apply_partition_state(struct ks_broker *broker, const struct ks_partition_state *state)
{
    int32_t t = state->topic_index;
    int32_t p = state->partition;
    if (t < 0 || t >= broker->topic_count || p < 0 || p >= broker->topics[t].partition_count) {
        return;
    }
    if (state->partition_epoch > broker->meta[t][p].partition_epoch) {
        broker->meta[t][p] = *state;
    }
    if (!list_contains(state->replicas, state->replica_count, broker->id)) {
        return;
    }
    struct replica *replica = broker->replicas[t][p];
    if (replica == NULL) {
        replica = open_replica(broker, t, p, 0, true, -1, -1);
    }
    if (replica->has_state && state->partition_epoch <= replica->state.partition_epoch) {
        return;
    }
    struct ks_partition_state old = replica->state;
    bool had_state = replica->has_state;
    replica->state = *state;
    replica->has_state = true;
    if (state->leader == broker->id) {
        if (replica->role != KS_ROLE_LEADER || !had_state || old.leader_epoch != state->leader_epoch) {
            become_leader(broker, replica);
        } else {
            /* Same epoch: an ISR change (ours, or the controller's). */
            if (replica->alter_in_flight && state->partition_epoch > replica->alter.partition_epoch) {
                replica->alter_in_flight = false;
            }
            replica_check(broker, replica);
            maybe_advance_hw(broker, replica);
        }
        return;
    }
    if (replica->role != KS_ROLE_FOLLOWER || !had_state || old.leader != state->leader ||
        old.leader_epoch != state->leader_epoch) {
        become_follower(broker, replica);
    }
}

static void on_partition_state(struct ks_broker *broker, const uint8_t *message,
                               size_t message_bytes)
{
    if (message_bytes < sizeof(struct ks_partition_state_push)) {
        return;
    }
    struct ks_partition_state_push push;
    memcpy(&push, message, sizeof push);
    if (push.broker_epoch != broker->broker_epoch ||
        !ks_proto_fits(message_bytes, sizeof push, push.partition_count,
                       sizeof(struct ks_partition_state))) {
        return;
    }
    for (int32_t i = 0; i < push.broker_count && i < KS_BROKER_COUNT_MAX; i++) {
        broker->broker_alive[i] = push.broker_alive[i];
    }
    for (int32_t i = 0; i < push.partition_count; i++) {
        struct ks_partition_state state;
        memcpy(&state, message + sizeof push + (size_t)i * sizeof state, sizeof state);
        apply_partition_state(broker, &state);
    }
    if (push.metadata_version > broker->metadata_version) {
        broker->metadata_version = push.metadata_version;
    }
}

/* ---- controller session ---------------------------------------------------------- */

static void send_heartbeat(struct ks_broker *broker)
{
    struct ks_broker_heartbeat_request request;
    memset(&request, 0, sizeof request);
    request.broker_id = broker->id;
    request.broker_epoch = broker->broker_epoch;
    request.metadata_version = broker->registered ? broker->metadata_version : -1;
    ks_world_send(broker->world, (ks_node_id)broker->id, broker->controller_node,
                  KS_MSG_BROKER_HEARTBEAT_REQUEST, &request, sizeof request);
}

static void heartbeat_tick(ks_world *world, void *context)
{
    struct ks_broker *broker = context;
    (void)world;
    send_heartbeat(broker);
    broker->heartbeat_timer =
        ks_world_schedule(broker->world, (ks_node_id)broker->id,
                          (ks_time_ns)broker->spec->cluster->broker_heartbeat_interval_ns,
                          KS_TIMER_BROKER_HEARTBEAT, heartbeat_tick, broker);
}

static void on_heartbeat_response(struct ks_broker *broker,
                                  const struct ks_broker_heartbeat_response *response)
{
    if (response->broker_epoch != broker->broker_epoch) {
        return;
    }
    if (response->error_code == KS_ERR_NONE && !broker->registered) {
        broker->registered = true;
    }
}

/* ---- checkpoints and log tasks ---------------------------------------------------- */

enum checkpoint_kind { CHECKPOINT_HW, CHECKPOINT_RECOVERY, CHECKPOINT_LOG_START };

static void write_checkpoint(struct ks_broker *broker, enum checkpoint_kind kind)
{
    GArray *entries = g_array_new(FALSE, TRUE, sizeof(struct ks_checkpoint_entry));
    for (int32_t t = 0; t < broker->topic_count; t++) {
        for (int32_t p = 0; p < broker->topics[t].partition_count; p++) {
            struct replica *replica = broker->replicas[t][p];
            if (replica == NULL || replica->log == NULL) {
                continue;
            }
            struct ks_checkpoint_entry entry;
            memset(&entry, 0, sizeof entry);
            g_strlcpy(entry.topic, broker->topics[t].name, sizeof entry.topic);
            entry.partition = p;
            if (kind == CHECKPOINT_HW) {
                entry.offset = replica->hw;
            } else if (kind == CHECKPOINT_RECOVERY) {
                entry.offset = ks_log_recovery_point(replica->log);
            } else {
                entry.offset = ks_log_start_offset(replica->log);
                if (entry.offset == 0) {
                    continue;
                }
            }
            g_array_append_val(entries, entry);
        }
    }
    const char *file = kind == CHECKPOINT_HW         ? "replication-offset-checkpoint"
                       : kind == CHECKPOINT_RECOVERY ? "recovery-point-offset-checkpoint"
                                                     : "log-start-offset-checkpoint";
    char path[64];
    g_snprintf(path, sizeof path, "%s/%s", broker->dir, file);
    ks_checkpoint_write(broker->world, (ks_node_id)broker->id, path,
                        (const struct ks_checkpoint_entry *)(void *)entries->data, entries->len);
    g_array_free(entries, TRUE);
}

static void hw_checkpoint_tick(ks_world *world, void *context)
{
    struct ks_broker *broker = context;
    write_checkpoint(broker, CHECKPOINT_HW);
    broker->hw_checkpoint_timer = ks_world_schedule(
        world, (ks_node_id)broker->id,
        (ks_time_ns)broker->spec->cluster->replica_hw_checkpoint_interval_ns,
        KS_TIMER_BROKER_HW_CHECKPOINT, hw_checkpoint_tick, broker);
}

static void recovery_checkpoint_tick(ks_world *world, void *context)
{
    struct ks_broker *broker = context;
    write_checkpoint(broker, CHECKPOINT_RECOVERY);
    write_checkpoint(broker, CHECKPOINT_LOG_START);
    broker->recovery_checkpoint_timer = ks_world_schedule(
        world, (ks_node_id)broker->id,
        (ks_time_ns)broker->spec->cluster->recovery_point_checkpoint_interval_ns,
        KS_TIMER_BROKER_RECOVERY_CHECKPOINT, recovery_checkpoint_tick, broker);
}

static ks_time_ns log_task_interval(const struct ks_broker *broker)
{
    ks_time_ns interval = (ks_time_ns)broker->spec->cluster->retention_check_interval_ns;
    for (int32_t t = 0; t < broker->topic_count; t++) {
        const struct ks_log_config *log = &broker->topics[t].log;
        if (log->cleanup_compact && COMPACTION_INTERVAL_NS < interval) {
            interval = COMPACTION_INTERVAL_NS;
        }
        if (log->flush_ns > 0 && log->flush_ns != KS_INT64_UNSET &&
            (ks_time_ns)log->flush_ns < interval) {
            interval = (ks_time_ns)log->flush_ns;
        }
    }
    return interval > 0 ? interval : KS_NS_PER_S;
}

static void log_tasks_tick(ks_world *world, void *context)
{
    struct ks_broker *broker = context;
    ks_time_ns now = now_ns(broker);
    for (int32_t t = 0; t < broker->topic_count; t++) {
        for (int32_t p = 0; p < broker->topics[t].partition_count; p++) {
            struct replica *replica = broker->replicas[t][p];
            if (replica == NULL || replica->log == NULL) {
                continue;
            }
            ks_log_maybe_flush(replica->log, now);
            const struct ks_log_config *config = &broker->topics[t].log;
            if (config->cleanup_delete) {
                int32_t deleted = ks_log_apply_retention(replica->log, now, replica->hw);
                if (deleted > 0) {
                    char detail[200];
                    g_snprintf(detail, sizeof detail,
                               "broker %d %s-%d: %d segment(s) deleted, log start %" PRId64,
                               broker->id, broker->topics[t].name, p, deleted,
                               ks_log_start_offset(replica->log));
                    ks_broker_emit(broker, KS_EV_RETENTION, t, p, detail,
                                   "Retention deletes whole old segments below the high "
                                   "watermark. Each replica applies it to its own log on its "
                                   "own schedule; consumers behind the leader's new log start "
                                   "offset reset.");
                }
            }
            if (config->cleanup_compact) {
                int64_t removed = ks_log_compact(replica->log, now, replica->hw);
                if (removed > 0) {
                    char detail[200];
                    g_snprintf(detail, sizeof detail, "broker %d %s-%d: %" PRId64 " record(s) compacted away",
                               broker->id, broker->topics[t].name, p, removed);
                    ks_broker_emit(broker, KS_EV_COMPACTION, t, p, detail,
                                   "The log cleaner keeps only the latest record per key below "
                                   "the high watermark. Each replica cleans its own log "
                                   "independently.");
                }
            }
            if (replica->hw < ks_log_start_offset(replica->log)) {
                replica->hw = ks_log_start_offset(replica->log);
            }
        }
    }
    broker->log_tasks_timer = ks_world_schedule(world, (ks_node_id)broker->id,
                                                log_task_interval(broker),
                                                KS_TIMER_BROKER_LOG_TASKS, log_tasks_tick, broker);
}

/* ---- receiving --------------------------------------------------------------------- */

#ifdef KS_DEBUG
/* Whole-broker check after every message (make DEBUG=1; STYLE 3.7). */
static void broker_check(const struct ks_broker *broker)
{
    for (int32_t t = 0; t < broker->topic_count; t++) {
        for (int32_t p = 0; p < broker->topics[t].partition_count; p++) {
            const struct replica *replica = broker->replicas[t][p];
            if (replica == NULL || replica->log == NULL) {
                continue;
            }
            replica_check(broker, replica);
            if (replica->role == KS_ROLE_LEADER) {
                ks_assert(replica->state.leader == broker->id);
                ks_assert(replica->epoch_start_offset <= leo_of(replica));
            }
        }
    }
}
#endif

static void on_receive(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                       const void *message, size_t message_bytes, void *context)
{
    (void)world;
    (void)self;
    struct ks_broker *broker = context;
    if (!broker->running) {
        return;
    }
    const uint8_t *bytes = message;
    if (kind >= KS_MSG_GROUP_FIRST && kind <= KS_MSG_GROUP_LAST) {
        if (broker->coordinator != NULL) {
            ks_group_coordinator_handle(broker->coordinator, source, kind, message, message_bytes);
        }
        return;
    }
    switch (kind) {
    case KS_MSG_PARTITION_STATE:
        if (source == broker->controller_node) {
            on_partition_state(broker, bytes, message_bytes);
        }
        break;
    case KS_MSG_BROKER_HEARTBEAT_RESPONSE:
        if (message_bytes >= sizeof(struct ks_broker_heartbeat_response)) {
            struct ks_broker_heartbeat_response response;
            memcpy(&response, bytes, sizeof response);
            on_heartbeat_response(broker, &response);
        }
        break;
    case KS_MSG_ALTER_PARTITION_RESPONSE:
        if (message_bytes >= sizeof(struct ks_alter_partition_response)) {
            struct ks_alter_partition_response response;
            memcpy(&response, bytes, sizeof response);
            on_alter_response(broker, &response);
        }
        break;
    case KS_MSG_FETCH_REQUEST:
        on_fetch_request(broker, source, bytes, message_bytes);
        break;
    case KS_MSG_FETCH_RESPONSE:
        on_fetch_response(broker, source, bytes, message_bytes);
        break;
    case KS_MSG_PRODUCE_REQUEST:
        on_produce_request(broker, source, bytes, message_bytes);
        break;
    case KS_MSG_METADATA_REQUEST:
        if (message_bytes >= sizeof(struct ks_metadata_request)) {
            struct ks_metadata_request request;
            memcpy(&request, bytes, sizeof request);
            on_metadata_request(broker, source, &request);
        }
        break;
    case KS_MSG_INIT_PRODUCER_ID_REQUEST:
        if (message_bytes >= sizeof(struct ks_init_producer_id_request)) {
            struct ks_init_producer_id_request request;
            memcpy(&request, bytes, sizeof request);
            on_init_producer_id(broker, source, &request);
        }
        break;
    case KS_MSG_LIST_OFFSETS_REQUEST:
        if (message_bytes >= sizeof(struct ks_list_offsets_request)) {
            struct ks_list_offsets_request request;
            memcpy(&request, bytes, sizeof request);
            on_list_offsets(broker, source, &request);
        }
        break;
    default:
        break;
    }
#ifdef KS_DEBUG
    broker_check(broker);
#endif
}

/* ---- life cycle ----------------------------------------------------------------------- */

static struct fetcher_ref *fetcher_ref(struct ks_broker *broker, int32_t leader_id)
{
    /* One long-lived ref per leader, allocated right behind the broker. */
    struct fetcher_ref *refs = (struct fetcher_ref *)(void *)(broker + 1);
    return &refs[leader_id - 1];
}

struct ks_broker *ks_broker_new(ks_world *world, const struct ks_cluster_spec *spec,
                                const struct ks_topic_config *topics, int32_t topic_count,
                                int32_t broker_id, const struct ks_cluster_observer *observer)
{
    ks_assert(broker_id >= 1 && broker_id <= spec->cluster->broker_count);
    /* The broker and, right behind it, one fetcher_ref per possible leader. */
    struct ks_broker *broker =
        calloc(1, sizeof *broker + sizeof(struct fetcher_ref) * KS_BROKER_COUNT_MAX);
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
        struct fetcher_ref *ref = fetcher_ref(broker, i + 1);
        ref->broker = broker;
        ref->leader_id = i + 1;
    }
    broker->meta = calloc((size_t)(topic_count > 0 ? topic_count : 1), sizeof *broker->meta);
    broker->replicas = calloc((size_t)(topic_count > 0 ? topic_count : 1), sizeof *broker->replicas);
    ks_assert(broker->meta != NULL && broker->replicas != NULL);
    for (int32_t t = 0; t < topic_count; t++) {
        broker->meta[t] = calloc((size_t)topics[t].partition_count, sizeof(struct ks_partition_state));
        broker->replicas[t] = calloc((size_t)topics[t].partition_count, sizeof(struct replica *));
        ks_assert(broker->meta[t] != NULL && broker->replicas[t] != NULL);
    }
    broker->offsets_topic_index = ks_broker_topic_index(broker, "__consumer_offsets");
    broker->pending = g_ptr_array_new();
    broker->delayed = g_ptr_array_new();
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
    broker->metadata_version = -1;
}

/* Finds a checkpoint entry's offset, or -1. */
static int64_t checkpoint_lookup(GArray *entries, const char *topic, int32_t partition)
{
    if (entries == NULL) {
        return -1;
    }
    for (guint i = 0; i < entries->len; i++) {
        const struct ks_checkpoint_entry *entry =
            &g_array_index(entries, struct ks_checkpoint_entry, i);
        if (entry->partition == partition && strcmp(entry->topic, topic) == 0) {
            return entry->offset;
        }
    }
    return -1;
}

/* LogManager.loadLogs: open every partition folder found in broker-<id>/. */
static void load_logs(struct ks_broker *broker)
{
    char path[96];
    g_snprintf(path, sizeof path, "%s/.kafka_cleanshutdown", broker->dir);
    bool clean = ks_disk_exists(broker->world, (ks_node_id)broker->id, path);
    if (clean) {
        ks_disk_delete(broker->world, (ks_node_id)broker->id, path);
    }
    char **names = ks_disk_list(broker->world, (ks_node_id)broker->id, broker->dir);
    if (names == NULL) {
        return;
    }
    char cp[96];
    g_snprintf(cp, sizeof cp, "%s/recovery-point-offset-checkpoint", broker->dir);
    GArray *recovery = ks_checkpoint_read(broker->world, (ks_node_id)broker->id, cp);
    g_snprintf(cp, sizeof cp, "%s/replication-offset-checkpoint", broker->dir);
    GArray *hws = ks_checkpoint_read(broker->world, (ks_node_id)broker->id, cp);
    g_snprintf(cp, sizeof cp, "%s/log-start-offset-checkpoint", broker->dir);
    GArray *starts = ks_checkpoint_read(broker->world, (ks_node_id)broker->id, cp);
    for (char **name = names; *name != NULL; name++) {
        const char *dash = strrchr(*name, '-');
        if (dash == NULL || dash == *name || dash[1] == '\0') {
            continue;
        }
        char *end = NULL;
        long partition = strtol(dash + 1, &end, 10);
        if (*end != '\0' || partition < 0) {
            continue;
        }
        char topic[KS_TOPIC_NAME_BYTES_MAX + 1];
        size_t length = (size_t)(dash - *name);
        if (length > KS_TOPIC_NAME_BYTES_MAX) {
            continue;
        }
        memcpy(topic, *name, length);
        topic[length] = '\0';
        int32_t t = ks_broker_topic_index(broker, topic);
        if (t < 0 || partition >= broker->topics[t].partition_count ||
            broker->replicas[t][partition] != NULL) {
            continue;
        }
        int64_t recovery_point = checkpoint_lookup(recovery, topic, (int32_t)partition);
        open_replica(broker, t, (int32_t)partition, recovery_point < 0 ? 0 : recovery_point, clean,
                     checkpoint_lookup(hws, topic, (int32_t)partition),
                     checkpoint_lookup(starts, topic, (int32_t)partition));
    }
    if (recovery != NULL) {
        g_array_free(recovery, TRUE);
    }
    if (hws != NULL) {
        g_array_free(hws, TRUE);
    }
    if (starts != NULL) {
        g_array_free(starts, TRUE);
    }
    ks_disk_list_free(names);
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
static ks_time_ns first_run_ns(struct ks_broker *broker, ks_time_ns period_ns,
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
    load_logs(broker);
    if (broker->spec->consumer_count > 0 && broker->offsets_topic_index >= 0) {
        broker->coordinator = ks_group_coordinator_new(broker);
    }
    char detail[64];
    g_snprintf(detail, sizeof detail, "broker %d started (epoch %" PRId64 ")", broker->id,
               broker->broker_epoch);
    ks_broker_emit(broker, KS_EV_BROKER_STARTED, -1, -1, detail, NULL);
    const struct ks_cluster_config *cluster = broker->spec->cluster;
    ks_time_ns heartbeat_ns =
        first_run_ns(broker, (ks_time_ns)cluster->broker_heartbeat_interval_ns, 0);
    if (heartbeat_ns == 0) {
        heartbeat_tick(broker->world, broker);
    } else {
        broker->heartbeat_timer =
            ks_world_schedule(broker->world, (ks_node_id)broker->id, heartbeat_ns,
                              KS_TIMER_BROKER_HEARTBEAT, heartbeat_tick, broker);
    }
    ks_time_ns isr_ns = (ks_time_ns)cluster->replica_lag_ns_max / 2;
    broker->isr_timer = ks_world_schedule(broker->world, (ks_node_id)broker->id,
                                          first_run_ns(broker, isr_ns, isr_ns),
                                          KS_TIMER_BROKER_ISR_CHECK, isr_check, broker);
    ks_time_ns hw_ns = (ks_time_ns)cluster->replica_hw_checkpoint_interval_ns;
    broker->hw_checkpoint_timer = ks_world_schedule(
        broker->world, (ks_node_id)broker->id, first_run_ns(broker, hw_ns, hw_ns),
        KS_TIMER_BROKER_HW_CHECKPOINT, hw_checkpoint_tick, broker);
    ks_time_ns recovery_ns = (ks_time_ns)cluster->recovery_point_checkpoint_interval_ns;
    broker->recovery_checkpoint_timer = ks_world_schedule(
        broker->world, (ks_node_id)broker->id, first_run_ns(broker, recovery_ns, recovery_ns),
        KS_TIMER_BROKER_RECOVERY_CHECKPOINT, recovery_checkpoint_tick, broker);
    ks_time_ns log_ns = log_task_interval(broker);
    broker->log_tasks_timer = ks_world_schedule(broker->world, (ks_node_id)broker->id,
                                                first_run_ns(broker, log_ns, log_ns),
                                                KS_TIMER_BROKER_LOG_TASKS, log_tasks_tick, broker);
}

void ks_broker_start(struct ks_broker *broker)
{
    /* The controller expects incarnation 1 at start (controller.c). */
    broker->broker_epoch = 1;
    broker->incarnation = 0;
    broker->registered = true;
    start_common(broker);
}

static void drop_memory(struct ks_broker *broker)
{
    /* Timers are gone already (crash) or are cancelled here (shutdown). */
    ks_world_cancel(broker->world, broker->heartbeat_timer);
    ks_world_cancel(broker->world, broker->isr_timer);
    ks_world_cancel(broker->world, broker->hw_checkpoint_timer);
    ks_world_cancel(broker->world, broker->recovery_checkpoint_timer);
    ks_world_cancel(broker->world, broker->log_tasks_timer);
    broker->heartbeat_timer = 0;
    broker->isr_timer = 0;
    broker->hw_checkpoint_timer = 0;
    broker->recovery_checkpoint_timer = 0;
    broker->log_tasks_timer = 0;
    for (guint i = 0; i < broker->pending->len; i++) {
        struct pending_produce *item = g_ptr_array_index(broker->pending, i);
        ks_world_cancel(broker->world, item->timer);
        free(item);
    }
    g_ptr_array_set_size(broker->pending, 0);
    for (guint i = 0; i < broker->delayed->len; i++) {
        struct delayed_fetch *item = g_ptr_array_index(broker->delayed, i);
        ks_world_cancel(broker->world, item->timer);
        free(item->request);
        free(item);
    }
    g_ptr_array_set_size(broker->delayed, 0);
    for (guint i = 0; i < broker->deferred->len; i++) {
        struct deferred *item = g_ptr_array_index(broker->deferred, i);
        ks_world_cancel(broker->world, item->timer);
        free(item->bytes);
        free(item);
    }
    g_ptr_array_set_size(broker->deferred, 0);
    for (int32_t i = 0; i < KS_BROKER_COUNT_MAX; i++) {
        ks_world_cancel(broker->world, broker->fetchers[i].timeout_timer);
        ks_world_cancel(broker->world, broker->fetchers[i].kick_timer);
    }
    memset(broker->fetchers, 0, sizeof broker->fetchers);
    ks_group_coordinator_free(broker->coordinator);
    broker->coordinator = NULL;
    for (int32_t t = 0; t < broker->topic_count; t++) {
        for (int32_t p = 0; p < broker->topics[t].partition_count; p++) {
            if (broker->replicas[t][p] != NULL) {
                close_replica(broker->replicas[t][p]);
                broker->replicas[t][p] = NULL;
            }
        }
    }
    broker->running = false;
}

void ks_broker_on_crash(struct ks_broker *broker)
{
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
    start_common(broker);
}

void ks_broker_shutdown(struct ks_broker *broker)
{
    if (!broker->running) {
        return;
    }
    for (int32_t t = 0; t < broker->topic_count; t++) {
        for (int32_t p = 0; p < broker->topics[t].partition_count; p++) {
            if (broker->replicas[t][p] != NULL) {
                ks_log_flush(broker->replicas[t][p]->log);
            }
        }
    }
    write_checkpoint(broker, CHECKPOINT_HW);
    write_checkpoint(broker, CHECKPOINT_RECOVERY);
    write_checkpoint(broker, CHECKPOINT_LOG_START);
    char path[96];
    g_snprintf(path, sizeof path, "%s/.kafka_cleanshutdown", broker->dir);
    ks_file *file = ks_disk_open(broker->world, (ks_node_id)broker->id, path,
                                 KS_DISK_CREATE | KS_DISK_TRUNCATE, NULL);
    if (file != NULL) {
        char text[64];
        int length = g_snprintf(text, sizeof text, "{\"version\":0,\"brokerEpoch\":%" PRId64 "}",
                                broker->broker_epoch);
        ks_disk_append(file, text, (size_t)length);
        ks_disk_fsync(file);
        ks_disk_close(file);
    }
    drop_memory(broker);
}

void ks_broker_free(struct ks_broker *broker)
{
    if (broker == NULL) {
        return;
    }
    drop_memory(broker);
    for (int32_t t = 0; t < broker->topic_count; t++) {
        free(broker->meta[t]);
        free(broker->replicas[t]);
    }
    free(broker->meta);
    free(broker->replicas);
    g_ptr_array_free(broker->pending, TRUE);
    g_ptr_array_free(broker->delayed, TRUE);
    g_ptr_array_free(broker->deferred, TRUE);
    free(broker);
}

bool ks_broker_is_running(const struct ks_broker *broker)
{
    return broker->running;
}

/* ---- queries and coordinator services -------------------------------------------------- */

bool ks_broker_replica_state(const struct ks_broker *broker, int32_t topic_index,
                             int32_t partition, struct ks_replica_state *out)
{
    const struct replica *replica = find_replica(broker, topic_index, partition);
    if (replica == NULL) {
        return false;
    }
    out->role = replica->role;
    out->leo = leo_of(replica);
    out->hw = replica->hw;
    out->log_start_offset = ks_log_start_offset(replica->log);
    out->leader_epoch = replica->state.leader_epoch;
    return true;
}

struct ks_log *ks_broker_replica_log(struct ks_broker *broker, int32_t topic_index,
                                     int32_t partition)
{
    struct replica *replica = find_replica(broker, topic_index, partition);
    return replica != NULL ? replica->log : NULL;
}

bool ks_broker_idle(const struct ks_broker *broker)
{
    return broker->pending->len == 0;
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
    for (int32_t t = 0; t < broker->topic_count; t++) {
        if (strcmp(broker->topics[t].name, name) == 0) {
            return t;
        }
    }
    return -1;
}

int32_t ks_broker_partition_leader(struct ks_broker *broker, int32_t topic_index,
                                   int32_t partition)
{
    if (topic_index < 0 || topic_index >= broker->topic_count || partition < 0 ||
        partition >= broker->topics[topic_index].partition_count) {
        return -1;
    }
    const struct ks_partition_state *state = &broker->meta[topic_index][partition];
    return state->partition_epoch >= 0 ? state->leader : -1;
}

void ks_broker_scan_local(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                          int64_t offset, int64_t upto_offset, ks_log_batch_fn *visit,
                          void *context)
{
    struct replica *replica = find_replica(broker, topic_index, partition);
    if (replica != NULL) {
        ks_log_scan(replica->log, offset, upto_offset, visit, context);
    }
}

int64_t ks_broker_hw(struct ks_broker *broker, int32_t topic_index, int32_t partition)
{
    struct replica *replica = find_replica(broker, topic_index, partition);
    return replica != NULL ? replica->hw : -1;
}

int64_t ks_broker_leo(struct ks_broker *broker, int32_t topic_index, int32_t partition)
{
    struct replica *replica = find_replica(broker, topic_index, partition);
    return replica != NULL ? leo_of(replica) : -1;
}

int64_t ks_broker_log_start_offset(struct ks_broker *broker, int32_t topic_index,
                                   int32_t partition)
{
    struct replica *replica = find_replica(broker, topic_index, partition);
    return replica != NULL ? ks_log_start_offset(replica->log) : -1;
}
