/*
** core/consumer.c: the consumer client (Kafka's classic KafkaConsumer with
** ConsumerCoordinator and Fetcher), one per consumer node.
**
** Phases (the consumer's group state machine):
**
**   IDLE --start/restart--> FIND --FindCoordinator ok--> JOIN --JoinGroup ok-->
**   SYNC --SyncGroup ok--> OFFSETS --OffsetFetch ok--> ACTIVE
**   any --coordinator error/timeout--> FIND (member id kept)
**   ACTIVE --REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID /
**            max.poll.interval.ms exceeded--> JOIN at the next poll boundary
**
** Rebalancing is eager: before rejoining, the consumer gives up every
** partition (fetched but unprocessed records are dropped). A rejoin happens
** only between polls, as in Kafka, where the rebalance runs inside poll().
**
** The poll loop (ACTIVE). Fetches run ahead: one FetchRequest in flight per
** leader broker for the assigned partitions whose buffer is empty, served up
** to the HW (replica_id -1), long-polled with fetch.min.bytes and
** fetch.max.wait.ms. A poll takes up to max.poll.records buffered records;
** each record then takes processing.time (one timer per record, so a crash
** stops processing exactly between two records). Control batches are skipped.
** Every processed record is reported with observer->on_consumed.
**
** Commit modes (commit = ...):
**   before-process  poll, commit the batch's end offsets and wait for the
**                   acknowledgement, then process: at-most-once (a crash
**                   while processing loses the rest of the batch).
**   after-process   poll, process, then commit and wait: at-least-once (a
**                   crash before the commit is acknowledged re-delivers).
**   auto            enable.auto.commit: at a poll at least
**                   auto.commit.interval.ms after the previous auto commit,
**                   commit the positions returned by earlier polls
**                   asynchronously (Kafka commits inside poll()), and
**                   synchronously before a rebalance.
**   atomic          the offset is stored together with the output in a sink
**                   that stands for an external database (the pattern of
**                   "Storing Offsets Outside Kafka" in KafkaConsumer's
**                   documentation). The sink is one small file per
**                   partition and group on the driver node's disk (node 0,
**                   which never fails), written in the same event as the
**                   record's processing, so the pair is atomic and shared by
**                   every member of the group. On assignment a partition
**                   resumes from the sink's offset when it has one, not from
**                   the group's committed offset, which is still committed
**                   (asynchronously) for lag and tools. Each consumer that
**                   takes a partition claims its sink (a new claim epoch);
**                   a member that lost the partition but still processes
**                   buffered records (paused, or cut off from the
**                   coordinator) is refused by the sink: fenced, as a
**                   database fences a stale lock holder. Exactly-once
**                   processing, as long as the log itself keeps the records.
**   processor       (output.topic; commit = after-process) each processed
**                   record also goes to the processor's producer as one
**                   output record keyed by the input's identity. Without
**                   transactional.id: after the batch, flush() (the producer
**                   idle), then commitSync: at-least-once. With it: after the
**                   batch, the processed positions and the group metadata go
**                   into the producer's transaction (ks_producer_end_txn,
**                   sendOffsetsToTransaction + commitTransaction) and the
**                   consumer polls again once it ended: committed, the
**                   positions are the committed offsets; aborted, the
**                   consumer rejoins and resumes from the committed offsets
**                   (Kafka Streams' exactly_once_v2). The application
**                   blocked on its producer (send(), flush(),
**                   commitTransaction(), or initTransactions() before it
**                   polls) is woken by the producer: its listener
**                   (ks_producer_set_listener) runs after each of the
**                   producer's events and wakes the consumer once what it
**                   waits for holds, as the Java client's futures complete.
**
** Offsets: with no committed offset, or on OFFSET_OUT_OF_RANGE, the consumer
** applies auto.offset.reset with ListOffsets (earliest = log start, latest =
** HW) and emits KS_EV_OFFSET_RESET; with `none` the partition stays idle (Kafka
** would throw NoOffsetForPartitionException to the application).
**
** Timeouts and disconnects: every request gives up after request.timeout.ms
** (30 s); a group request, heartbeat or commit that does then marks the
** coordinator unknown, a fetch, Metadata or ListOffsets asks for new metadata.
** A broker whose process crashed resets its connections (the driver tells the
** consumer, ks_consumer_on_broker_down), and a broker that is down refuses new
** ones: the requests to it fail at once, in the consumer's next event, as
** NetworkClient reports a disconnect, and FindCoordinator and Metadata go to
** brokers that are up (leastLoadedNode skips nodes in reconnect backoff). A
** network partition gives no such signal: requests across it time out. A
** member whose heartbeats get no answer for session.timeout.ms also marks the
** coordinator unknown, and the heartbeat timer looks it up again by itself,
** also in the middle of a batch (KIP-62: AbstractCoordinator.HeartbeatThread
** calls lookupCoordinator and retries after retry.backoff.ms). Any of these
** stays in its generation: after a coordinator move the new coordinator,
** which loads the group from __consumer_offsets, accepts it.
**
** Member ids: a fresh join asks for an id (KIP-394 MEMBER_ID_REQUIRED) and
** gets "<consumer name>-<n>", n counting this consumer's fresh joins across
** its crashes, so an id never names two incarnations.
**
** Rewind (scenario `action = rewind`, KafkaConsumer#seek): at the next poll
** boundary (after the batch in progress and its commit) every assigned
** partition seeks to the log start, the HW, an offset or a time (ListOffsets
** by timestamp; the HW when no record is that recent), buffered and in-flight
** fetched records are dropped, and the new position is committed like any
** other, so the records from there are processed again. An offset outside
** the log is found out of range by the next fetch and auto.offset.reset
** applies, as in Kafka. A rewind that arrives between generations applies to
** the next assignment; a crashed consumer ignores it.
**
** Invariants (asserted; ks_consumer_check checks them with the channel,
** assignment and batch bookkeeping after every consumer event in KS_DEBUG
** builds):
**   C1  processed_position <= consumed_position <= fetch_position per partition.
**   C2  records are processed in offset order within a partition.
**   C3  a partition is being fetched exactly while the request it was last
**       sent in (fetch_correlation_id) is the one in flight on its fetch
**       broker's channel: nothing is stored that every answer, failure or
**       reset of that channel would have to clear (a scan of every
**       partition per fetch response, issue 16). Correlation ids are never
**       reused, so a later request on the channel does not count.
**   C4  reset_pending_count and validate_pending_count are the numbers of
**       partitions with reset_pending and with validate_pending (every
**       change goes through set_reset_pending / set_validate_pending).
**   C5  buffered_count is the sum of every partition's buffered records
**       (fetched, not yet polled): a poll stops looking for records once it
**       took them all.
*/
#include "consumer.h"

#include "array.h"
#include "assignor.h"
#include "base.h"
#include "batch.h"
#include "group.h"
#include "group_proto.h"
#include "producer.h"
#include "proto.h"
#include "txn.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_BACKOFF_NS (100 * KS_NS_PER_MS) /* retry.backoff.ms = 100 */
/* A processor's output key: key-<(input producer index + 1) * 10^12 + input seq>. */
#define OUTPUT_KEY_PRODUCER_UNIT INT64_C(1000000000000)
#define FETCH_MAX_BYTES          52428800 /* fetch.max.bytes = 52428800 */

enum consumer_timer_kind {
    KS_TIMER_CONSUMER_START = 400,
    KS_TIMER_CONSUMER_WAKE = 401,
    KS_TIMER_CONSUMER_PROCESS = 402,
    KS_TIMER_CONSUMER_HEARTBEAT = 403,
    KS_TIMER_CONSUMER_POLL_INTERVAL = 404,
    KS_TIMER_CONSUMER_TIMEOUT = 405,
    KS_TIMER_CONSUMER_RESET = 406,
};

enum phase { PH_IDLE, PH_FIND, PH_JOIN, PH_SYNC, PH_OFFSETS, PH_ACTIVE };

/* Request channels: at most one request in flight on each. */
enum channel_kind {
    CH_GROUP, /* FindCoordinator, JoinGroup, SyncGroup, OffsetFetch */
    CH_COMMIT,
    CH_HEARTBEAT,
    CH_METADATA,
    CH_LIST_OFFSETS,
    CH_VALIDATE, /* OffsetsForLeaderEpoch (KIP-320) */
    CH_FETCH,    /* + broker index: one per broker */
};

struct ks_consumer;

struct channel {
    struct ks_consumer *c; /* not owned */
    int32_t index;         /* into c->channels */
    bool in_flight;
    int64_t correlation_id;
    uint32_t kind;  /* the request's message kind */
    int32_t broker; /* where the request in flight went */
    ks_timer_id timeout_timer;
};

struct pending_record {
    int64_t offset;
    int32_t producer_index;
    int32_t leader_epoch; /* the batch's partition leader epoch */
    int64_t seq;
};

struct part {
    int32_t partition;
    int32_t leader;       /* broker id from metadata, -1 unknown */
    int32_t leader_epoch; /* from metadata or a KIP-951 hint, -1 unknown */
    bool position_known;
    /* KIP-320 (client.leader.epochs): the epoch of the record before
     * consumed_position (FetchPosition.offsetEpoch), -1 unknown; and whether
     * the position awaits validation after a leader change. */
    int32_t position_epoch;
    bool validate_pending;
    int64_t validate_sent_offset; /* the position the request in flight validates, -1 none */
    bool reset_pending;           /* needs ListOffsets */
    int64_t reset_timestamp;      /* KS_LIST_OFFSETS_EARLIEST / LATEST or ms */
    bool reset_is_rewind;
    int64_t out_of_range_offset; /* the position the leader refused, -1: nothing committed */
    bool idle_no_offset;         /* auto.offset.reset = none and nothing committed */
    int64_t fetch_position;      /* next offset to fetch */
    int64_t consumed_position;   /* after the last record returned by a poll */
    int64_t processed_position;
    int64_t committed;     /* acknowledged by the coordinator; -1 none */
    int64_t commit_sent;   /* the offset in the commit in flight, -1 if none */
    int64_t hw;            /* from the last fetch response (read_committed: the LSO); -1 unknown */
    int64_t skip_position; /* after trailing batches no record came from (markers,
                              aborted batches), not yet taken into the position; -1 none */
    /* The partition's fetch in flight, if any: the request (its
     * correlation id) and the broker it went to. The partition is being
     * fetched while that request is the one in flight on that broker's
     * fetch channel (fetch_in_flight, C3). */
    int64_t fetch_correlation_id;
    int32_t fetch_broker;
    int64_t fetch_sent_offset; /* its fetch offset: a response for another one is stale */
    GArray *buffer;            /* struct pending_record: fetched, polled up to buffer_head */
    guint buffer_head;         /* records before it were polled (a partial poll moves it) */
    ks_file *sink;             /* atomic mode: open sink file, or NULL */
    int64_t sink_epoch;        /* this consumer's claim on the sink */
    bool fenced;               /* the sink refused a store: another member claimed it */
};

/* The fetched records not yet polled. */
static guint buffered(const struct part *part)
{
    return part->buffer->len - part->buffer_head;
}

struct ks_consumer {
    ks_world *world;                            /* not owned */
    const struct ks_cluster_spec *spec;         /* not owned */
    const struct ks_consumer_config *config;    /* not owned */
    const struct ks_cluster_observer *observer; /* not owned */
    int32_t index;
    ks_node_id node;
    int32_t broker_count;
    int32_t topic_partition_count;
    bool crashed;
    bool started;
    bool stopped; /* a fatal error reached the application: it consumes no more */
    int32_t incarnation;

    enum phase phase;
    int32_t coordinator; /* broker id, -1 unknown */
    int32_t next_broker; /* rotation for FindCoordinator / Metadata */
    char member_id[KS_GROUP_MEMBER_ID_BYTES];
    int32_t generation;
    bool rejoin_needed;
    bool metadata_known;
    bool metadata_stale;
    ks_time_ns last_heartbeat_ok_ns;

    /* The assignment of the current generation: parts[i] for assigned partitions. */
    struct part *parts; /* partition_count entries; assigned[p] says which count */
    bool *assigned;
    int32_t assigned_count;
    /* How many partitions have reset_pending, and validate_pending (C4):
     * ListOffsets and OffsetsForLeaderEpoch look for one only when there is
     * one, not in a scan of every partition at every poll (issue 16). */
    int32_t reset_pending_count;
    int32_t validate_pending_count;
    guint buffered_count; /* fetched records not yet polled, in every partition (C5) */
    GArray *owned;        /* struct ks_group_topic_partition: for the sticky assignor */
    int32_t owned_generation;

    /* The poll loop. */
    GArray *batch;            /* struct pending_record + partition in topic order */
    GArray *batch_partitions; /* int32_t per batch record */
    guint batch_next;
    bool processing;
    bool commit_then_process; /* before-process: waiting for the commit ack */
    bool commit_then_poll;    /* after-process: waiting for the commit ack */
    ks_time_ns next_auto_commit_ns;
    int32_t poll_rotation;
    bool rewind_pending;
    int rewind_kind;
    int64_t rewind_value;

    int64_t processed_count;
    int64_t correlation_counter;
    int32_t fresh_join_count; /* member ids "<name>-<n>" used so far; kept across crashes */

    struct channel *channels; /* CH_FETCH + broker_count */
    int32_t channel_count;
    /* send_fetches' scratch: the partitions to fetch in partition order,
     * then by leader (fetch_order, 2 x topic_partition_count), and where
     * each leader's run ends (fetch_end, broker_count + 1, by broker id). */
    int32_t *fetch_order;
    int32_t *fetch_end;
    ks_timer_id wake_timer;
    ks_time_ns wake_at_ns;
    /* Connections reset by a broker going down (its process crashed, or a
     * connect was refused), handled in the consumer's next event. */
    bool *broker_reset; /* broker_count, index id - 1 */
    ks_timer_id reset_timer;
    ks_timer_id process_timer;
    ks_timer_id heartbeat_timer;
    ks_timer_id poll_interval_timer;
    ks_timer_id start_timer;
    ks_time_ns start_at_ns; /* start + its start.jitter draw; KS_TIME_NEVER until drawn */

    /* A processor (output.topic): its producer, not owned (a node of its own). */
    struct ks_producer *output;
    bool flush_then_commit; /* at-least-once: flush() the output, then commitSync() */
    bool txn_then_poll;     /* exactly-once: the transaction with the offsets is ending */
    int64_t txn_ended_seen; /* the producer's ended count when it began to end */
    /* Blocked on the producer, woken by its listener (on_output_change):
     * before the next poll (flush, commitTransaction, initTransactions), or
     * in send() of the record being processed. */
    bool output_wait_poll;
    bool output_wait_send;
};

/* Drops the partition's fetched records not yet polled (C5). */
static void buffer_clear(struct ks_consumer *c, struct part *part)
{
    c->buffered_count -= buffered(part);
    ks_array_set_size(part->buffer, 0);
    part->buffer_head = 0;
}

/* The only writers of reset_pending and validate_pending (C4). */
static void set_reset_pending(struct ks_consumer *c, struct part *part, bool pending)
{
    if (part->reset_pending != pending) {
        part->reset_pending = pending;
        c->reset_pending_count += pending ? 1 : -1;
    }
}

static void set_validate_pending(struct ks_consumer *c, struct part *part, bool pending)
{
    if (part->validate_pending != pending) {
        part->validate_pending = pending;
        c->validate_pending_count += pending ? 1 : -1;
    }
}

static void drive(struct ks_consumer *c);
static void poll_step(struct ks_consumer *c);
static void cancel_timers(struct ks_consumer *c);
static void revoke_all(struct ks_consumer *c);
static void start_rejoin(struct ks_consumer *c, const char *reason);

/* ---- small helpers -------------------------------------------------------------- */

static ks_time_ns now_ns(const struct ks_consumer *c)
{
    return ks_world_now_ns(c->world);
}

static const char *topic_name(const struct ks_consumer *c)
{
    return c->spec->topics[c->config->topic_index].name;
}

/* A new event of this consumer about `partition` of its topic (-1: none);
 * the caller adds its facts and emits it. */
static struct ks_cluster_event event_new(const struct ks_consumer *c,
                                         enum ks_cluster_event_kind kind,
                                         enum ks_event_reason reason, int32_t partition)
{
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, now_ns(c), kind);
    event.reason = reason;
    event.consumer_index = c->index;
    event.topic_index = partition >= 0 ? c->config->topic_index : -1;
    event.partition = partition;
    return event;
}

static void emit(struct ks_consumer *c, const struct ks_cluster_event *event)
{
    if (c->observer == NULL || c->observer->on_event == NULL) {
        return;
    }
    c->observer->on_event(c->observer->context, event);
}

/* Where a ListOffsets lookup of `timestamp` positions a partition. */
static enum ks_event_position position_of(int64_t timestamp)
{
    if (timestamp == KS_LIST_OFFSETS_EARLIEST) {
        return KS_POSITION_EARLIEST;
    }
    return timestamp == KS_LIST_OFFSETS_LATEST ? KS_POSITION_LATEST : KS_POSITION_TIMESTAMP;
}

/* Tells the observer where this consumer now stands in partition p (after
 * the event that explains it, so the driver can link the two). */
static void report_position(struct ks_consumer *c, int32_t p, int64_t offset,
                            enum ks_position_kind kind)
{
    if (c->observer == NULL || c->observer->on_position == NULL) {
        return;
    }
    struct ks_consumer_position position = {
        .consumer_index = c->index,
        .topic_index = c->config->topic_index,
        .partition = p,
        .offset = offset,
        .kind = kind,
        .at_ns = now_ns(c),
    };
    c->observer->on_position(c->observer->context, &position);
}

static void note_broker_down(struct ks_consumer *c, int32_t broker);

/* Sends a request of channel `channel` (-1: fire and forget) to broker. A
 * broker that is down refuses the connection: nothing is sent, and the
 * channel fails at once (NetworkClient sees the refused connect as a
 * disconnect), in the consumer's next event. */
static void send_to_broker(struct ks_consumer *c, int32_t channel, int32_t broker, uint32_t kind,
                           const void *bytes, size_t byte_count)
{
    ks_assert(broker >= 1 && broker <= c->broker_count);
    if (channel >= 0) {
        c->channels[channel].broker = broker;
    }
    if (!ks_world_node_is_up(c->world, (ks_node_id)broker)) {
        note_broker_down(c, broker);
        return;
    }
    ks_world_send(c->world, c->node, (ks_node_id)broker, kind, bytes, byte_count);
}

/* A broker for FindCoordinator or Metadata, in rotation (Kafka:
 * leastLoadedNode): one that can be connected to, skipping brokers that are
 * down (their connections were reset and each reconnect is refused, so the
 * Java client keeps them in reconnect backoff); any broker if all are down. */
static int32_t rotate_broker(struct ks_consumer *c)
{
    for (int32_t tries = 0; tries < c->broker_count; tries++) {
        int32_t broker = 1 + c->next_broker % c->broker_count;
        c->next_broker++;
        if (ks_world_node_is_up(c->world, (ks_node_id)broker)) {
            return broker;
        }
    }
    int32_t broker = 1 + c->next_broker % c->broker_count;
    c->next_broker++;
    return broker;
}

static void on_wake(ks_world *world, void *context)
{
    struct ks_consumer *c = context;
    (void)world;
    c->wake_timer = 0;
    drive(c);
#ifdef KS_DEBUG
    ks_consumer_check(c);
#endif
}

/* Runs drive() after delay_ns (keeps an earlier pending wake). */
static void wake_after(struct ks_consumer *c, ks_time_ns delay_ns)
{
    ks_time_ns at = now_ns(c) + delay_ns;
    if (c->wake_timer != 0 && c->wake_at_ns <= at) {
        return;
    }
    ks_world_cancel(c->world, c->wake_timer);
    c->wake_at_ns = at;
    c->wake_timer =
        ks_world_schedule(c->world, c->node, delay_ns, KS_TIMER_CONSUMER_WAKE, on_wake, c);
}

/* ---- channels ------------------------------------------------------------------------ */

static void on_channel_timeout(ks_world *world, void *context);

/* Every request waits request.timeout.ms for its answer (the broker holds a
 * fetch at most fetch.max.wait.ms, which must be shorter). A broker that goes
 * down fails the requests sent to it at once instead (note_broker_down): the
 * kernel resets a crashed process's connections. */
static int64_t channel_begin(struct ks_consumer *c, int32_t index, uint32_t kind)
{
    struct channel *ch = &c->channels[index];
    ks_assert(!ch->in_flight);
    ch->in_flight = true;
    ch->kind = kind;
    ch->broker = -1;
    ch->correlation_id = ++c->correlation_counter;
    ch->timeout_timer =
        ks_world_schedule(c->world, c->node, (ks_time_ns)c->config->request_timeout_ns,
                          KS_TIMER_CONSUMER_TIMEOUT, on_channel_timeout, ch);
    return ch->correlation_id;
}

/* True (and the channel freed) when a response matches the request in flight. */
static bool channel_end(struct ks_consumer *c, int32_t index, int64_t correlation_id)
{
    struct channel *ch = &c->channels[index];
    if (!ch->in_flight || ch->correlation_id != correlation_id) {
        return false;
    }
    ch->in_flight = false;
    ks_world_cancel(c->world, ch->timeout_timer);
    ch->timeout_timer = 0;
    return true;
}

static void channel_reset(struct ks_consumer *c, int32_t index)
{
    struct channel *ch = &c->channels[index];
    ks_world_cancel(c->world, ch->timeout_timer);
    ch->timeout_timer = 0;
    ch->in_flight = false;
}

static void coordinator_unknown(struct ks_consumer *c)
{
    c->coordinator = -1;
    channel_reset(c, CH_GROUP);
    channel_reset(c, CH_HEARTBEAT);
    channel_reset(c, CH_COMMIT); /* a synchronous commit is sent again (poll_step) */
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        c->parts[p].commit_sent = -1;
    }
    if (c->phase != PH_ACTIVE && c->phase != PH_IDLE) {
        c->phase = PH_FIND;
    }
    wake_after(c, RETRY_BACKOFF_NS);
}

/* A request that will get no answer: its time ran out, or its connection was
 * reset. Group requests, heartbeats and commits mark the coordinator
 * unknown (AbstractCoordinator: a disconnect or timeout of the coordinator's
 * connection is markCoordinatorUnknown); fetches, metadata and ListOffsets
 * ask for new metadata and try again after the backoff. */
static void channel_failed(struct ks_consumer *c, int32_t index)
{
    struct channel *ch = &c->channels[index];
    ks_world_cancel(c->world, ch->timeout_timer);
    ch->timeout_timer = 0;
    ch->in_flight = false;
    if (index == CH_GROUP || index == CH_HEARTBEAT || index == CH_COMMIT) {
        coordinator_unknown(c);
        if (index == CH_COMMIT) {
            /* A synchronous commit is retried once the coordinator is found. */
            wake_after(c, RETRY_BACKOFF_NS);
        }
    } else if (index >= CH_FETCH) {
        c->metadata_stale = true; /* its partitions are no longer being fetched (C3) */
        wake_after(c, RETRY_BACKOFF_NS);
    } else {
        c->metadata_stale = true;
        wake_after(c, RETRY_BACKOFF_NS);
    }
}

static void on_channel_timeout(ks_world *world, void *context)
{
    struct channel *ch = context;
    struct ks_consumer *c = ch->c;
    (void)world;
    ch->timeout_timer = 0;
    channel_failed(c, ch->index);
#ifdef KS_DEBUG
    ks_consumer_check(c);
#endif
}

/* The connections to every broker marked in broker_reset were reset: the
 * requests in flight on them fail, and a coordinator there is unknown
 * (NetworkClient reports the disconnect to each request's handler). */
static void on_broker_resets(ks_world *world, void *context)
{
    struct ks_consumer *c = context;
    (void)world;
    c->reset_timer = 0;
    for (int32_t b = 1; b <= c->broker_count; b++) {
        if (!c->broker_reset[b - 1]) {
            continue;
        }
        c->broker_reset[b - 1] = false;
        for (int32_t i = 0; i < c->channel_count; i++) {
            if (c->channels[i].in_flight && c->channels[i].broker == b) {
                channel_failed(c, i);
            }
        }
        if (c->coordinator == b) {
            coordinator_unknown(c);
        }
    }
#ifdef KS_DEBUG
    ks_consumer_check(c);
#endif
}

static void note_broker_down(struct ks_consumer *c, int32_t broker)
{
    ks_assert(broker >= 1 && broker <= c->broker_count);
    if (c->crashed) {
        return;
    }
    c->broker_reset[broker - 1] = true;
    if (c->reset_timer == 0) {
        c->reset_timer =
            ks_world_schedule(c->world, c->node, 0, KS_TIMER_CONSUMER_RESET, on_broker_resets, c);
    }
}

void ks_consumer_on_broker_down(struct ks_consumer *c, int32_t broker)
{
    note_broker_down(c, broker);
}

/* ---- assignment and positions ---------------------------------------------------- */

static void close_sink(struct ks_consumer *c, struct part *part)
{
    (void)c;
    ks_disk_close(part->sink);
    part->sink = NULL;
}

static char *sink_path(const struct ks_consumer *c, int32_t partition)
{
    /* Group ids may hold any character; keep [A-Za-z0-9._-] only. */
    char safe[KS_GROUP_ID_BYTES];
    size_t n = 0;
    for (const char *p = c->config->group_id; *p != 0 && n + 1 < sizeof(safe); p++) {
        char ch = *p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
        safe[n++] = ok ? ch : '_';
    }
    safe[n] = 0;
    if (n == 0 || strcmp(safe, ".") == 0 || strcmp(safe, "..") == 0) {
        g_strlcpy(safe, "group", sizeof(safe));
    }
    return g_strdup_printf("consumer-sink/%s/%s-%d.offset", safe, topic_name(c), partition);
}

/* The sink of a partition: 16 bytes, big-endian.
 *   0  int64  offset: the next record to process (-1: none stored)
 *   8  int64  claim epoch: bumped by each consumer that takes the partition
 * A store succeeds only while the stored epoch is the writer's own claim, so
 * a member that lost the partition but still processes its last records (a
 * zombie: paused, or cut off from the coordinator) is fenced, as a database
 * fences a stale lock holder (and as Kafka's transactions fence an old
 * producer epoch). */
static void sink_read(struct ks_consumer *c, struct part *part, int64_t *offset_out,
                      int64_t *epoch_out)
{
    (void)c;
    uint8_t bytes[16];
    size_t read_count = 0;
    *offset_out = -1;
    *epoch_out = 0;
    if (ks_disk_read(part->sink, bytes, sizeof(bytes), 0, &read_count) != KS_IO_OK ||
        read_count != sizeof(bytes)) {
        return;
    }
    uint64_t offset = 0;
    uint64_t epoch = 0;
    for (int i = 0; i < 8; i++) {
        offset = (offset << 8) | bytes[i];
        epoch = (epoch << 8) | bytes[8 + i];
    }
    *offset_out = (int64_t)offset;
    *epoch_out = (int64_t)epoch;
}

static void sink_write_raw(struct ks_consumer *c, struct part *part, int64_t offset, int64_t epoch)
{
    (void)c;
    uint8_t bytes[16];
    for (int i = 0; i < 8; i++) {
        bytes[i] = (uint8_t)((uint64_t)offset >> (56 - 8 * i));
        bytes[8 + i] = (uint8_t)((uint64_t)epoch >> (56 - 8 * i));
    }
    ks_assert(ks_disk_pwrite(part->sink, bytes, sizeof(bytes), 0) == KS_IO_OK);
}

/* Opens the partition's sink and claims it (a new epoch). Returns the stored
 * offset, -1 if none. */
static int64_t sink_claim(struct ks_consumer *c, struct part *part)
{
    char *path = sink_path(c, part->partition);
    enum ks_io_result result;
    part->sink = ks_disk_open(c->world, KS_NODE_DRIVER, path, KS_DISK_CREATE, &result);
    g_free(path);
    ks_assert(part->sink != NULL);
    int64_t offset = -1;
    int64_t epoch = 0;
    sink_read(c, part, &offset, &epoch);
    part->sink_epoch = epoch + 1;
    part->fenced = false;
    sink_write_raw(c, part, offset, part->sink_epoch);
    return offset;
}

/* Stores offset if this consumer's claim still holds; false when fenced. */
static bool sink_store(struct ks_consumer *c, struct part *part, int64_t offset)
{
    ks_assert(part->sink != NULL);
    int64_t stored_offset = -1;
    int64_t epoch = 0;
    sink_read(c, part, &stored_offset, &epoch);
    if (epoch != part->sink_epoch) {
        if (!part->fenced) {
            part->fenced = true;
            struct ks_cluster_event event =
                event_new(c, KS_EV_INFO, KS_REASON_SINK_FENCED, part->partition);
            event.sink_epoch = part->sink_epoch;
            event.sink_epoch_found = epoch;
            emit(c, &event);
        }
        return false;
    }
    sink_write_raw(c, part, offset, epoch);
    return true;
}

/* Eager revocation: give up every partition and drop fetched records. */
static void revoke_all(struct ks_consumer *c)
{
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        struct part *part = &c->parts[p];
        buffer_clear(c, part);
        close_sink(c, part);
        part->position_known = false;
        set_reset_pending(c, part, false);
        part->idle_no_offset = false;
        set_validate_pending(c, part, false);
        part->position_epoch = -1;
        c->assigned[p] = false;
    }
    c->assigned_count = 0;
    for (int32_t i = CH_FETCH; i < c->channel_count; i++) {
        channel_reset(c, i);
    }
    channel_reset(c, CH_LIST_OFFSETS);
    channel_reset(c, CH_VALIDATE);
    ks_array_set_size(c->batch, 0);
    ks_array_set_size(c->batch_partitions, 0);
    c->batch_next = 0;
}

/* ---- the group protocol ------------------------------------------------------------- */

static void send_find_coordinator(struct ks_consumer *c)
{
    struct ks_group_find_coordinator_request request;
    memset(&request, 0, sizeof(request));
    request.correlation_id = (int32_t)channel_begin(c, CH_GROUP, KS_GROUP_FIND_COORDINATOR_REQUEST);
    g_strlcpy(request.group_id, c->config->group_id, sizeof(request.group_id));
    send_to_broker(c, CH_GROUP, rotate_broker(c), KS_GROUP_FIND_COORDINATOR_REQUEST, &request,
                   sizeof(request));
}

static void send_join(struct ks_consumer *c)
{
    int32_t owned_count = (int32_t)c->owned->len;
    size_t bytes = sizeof(struct ks_group_join_request) +
                   (size_t)owned_count * sizeof(struct ks_group_topic_partition);
    uint8_t *message = g_malloc0(bytes);
    struct ks_group_join_request request;
    memset(&request, 0, sizeof(request));
    request.correlation_id = (int32_t)channel_begin(c, CH_GROUP, KS_GROUP_JOIN_REQUEST);
    request.topic_index = c->config->topic_index;
    request.session_timeout_ns = c->config->session_timeout_ns;
    request.rebalance_timeout_ns = c->config->max_poll_interval_ns;
    request.assignor = (int32_t)c->config->assignor;
    request.owned_generation = owned_count > 0 ? c->owned_generation : -1;
    request.owned_count = owned_count;
    if (c->member_id[0] == 0) {
        /* A fresh join: the next number of this client's member ids. */
        request.member_number = ++c->fresh_join_count;
    }
    g_strlcpy(request.group_id, c->config->group_id, sizeof(request.group_id));
    g_strlcpy(request.member_id, c->member_id, sizeof(request.member_id));
    g_strlcpy(request.client_id, c->config->name, sizeof(request.client_id));
    memcpy(message, &request, sizeof(request));
    if (owned_count > 0) {
        memcpy(message + sizeof(request), c->owned->data,
               (size_t)owned_count * sizeof(struct ks_group_topic_partition));
    }
    send_to_broker(c, CH_GROUP, c->coordinator, KS_GROUP_JOIN_REQUEST, message, bytes);
    g_free(message);
}

static void send_offset_fetch(struct ks_consumer *c)
{
    int32_t count = c->assigned_count;
    size_t bytes = sizeof(struct ks_group_offset_fetch_request) +
                   (size_t)count * sizeof(struct ks_group_topic_partition);
    uint8_t *message = g_malloc0(bytes);
    struct ks_group_offset_fetch_request request;
    memset(&request, 0, sizeof(request));
    request.correlation_id = (int32_t)channel_begin(c, CH_GROUP, KS_GROUP_OFFSET_FETCH_REQUEST);
    request.entry_count = count;
    g_strlcpy(request.group_id, c->config->group_id, sizeof(request.group_id));
    memcpy(message, &request, sizeof(request));
    size_t position = sizeof(request);
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        if (c->assigned[p]) {
            struct ks_group_topic_partition tp = { c->config->topic_index, p };
            memcpy(message + position, &tp, sizeof(tp));
            position += sizeof(tp);
        }
    }
    send_to_broker(c, CH_GROUP, c->coordinator, KS_GROUP_OFFSET_FETCH_REQUEST, message, bytes);
    g_free(message);
}

static void on_heartbeat_timer(ks_world *world, void *context);

static void arm_heartbeat_after(struct ks_consumer *c, ks_time_ns delay_ns)
{
    ks_world_cancel(c->world, c->heartbeat_timer);
    c->heartbeat_timer = ks_world_schedule(c->world, c->node, delay_ns, KS_TIMER_CONSUMER_HEARTBEAT,
                                           on_heartbeat_timer, c);
}

static void arm_heartbeat(struct ks_consumer *c)
{
    arm_heartbeat_after(c, (ks_time_ns)c->config->heartbeat_interval_ns);
}

static void heartbeat_tick(struct ks_consumer *c);

static void on_heartbeat_timer(ks_world *world, void *context)
{
    struct ks_consumer *c = context;
    (void)world;
    c->heartbeat_timer = 0;
    heartbeat_tick(c);
#ifdef KS_DEBUG
    ks_consumer_check(c);
#endif
}

static void heartbeat_tick(struct ks_consumer *c)
{
    if (c->generation < 0 || c->member_id[0] == 0 ||
        (c->phase != PH_ACTIVE && c->phase != PH_OFFSETS && c->phase != PH_SYNC)) {
        return; /* re-armed when the member joins again */
    }
    if (c->coordinator < 0) {
        /* KIP-62: the heartbeat thread looks the coordinator up itself
         * (AbstractCoordinator.HeartbeatThread.run: lookupCoordinator, then
         * wait retry.backoff.ms), so a member busy processing a batch finds a
         * new coordinator and keeps its session there. */
        if (!c->channels[CH_GROUP].in_flight) {
            send_find_coordinator(c);
        }
        arm_heartbeat_after(c, RETRY_BACKOFF_NS);
        return;
    }
    arm_heartbeat(c);
    if (now_ns(c) >= c->last_heartbeat_ok_ns + (ks_time_ns)c->config->session_timeout_ns) {
        /* Kafka's heartbeat thread: no answer for a whole session. */
        coordinator_unknown(c);
        wake_after(c, 0);
        return;
    }
    if (c->channels[CH_HEARTBEAT].in_flight) {
        return;
    }
    struct ks_group_member_request request;
    memset(&request, 0, sizeof(request));
    request.correlation_id = (int32_t)channel_begin(c, CH_HEARTBEAT, KS_GROUP_HEARTBEAT_REQUEST);
    request.generation = c->generation;
    g_strlcpy(request.group_id, c->config->group_id, sizeof(request.group_id));
    g_strlcpy(request.member_id, c->member_id, sizeof(request.member_id));
    send_to_broker(c, CH_HEARTBEAT, c->coordinator, KS_GROUP_HEARTBEAT_REQUEST, &request,
                   sizeof(request));
}

static void send_leave(struct ks_consumer *c)
{
    if (c->coordinator < 0 || c->member_id[0] == 0) {
        return;
    }
    struct ks_group_member_request request;
    memset(&request, 0, sizeof(request));
    request.correlation_id = (int32_t)++c->correlation_counter; /* fire and forget */
    request.generation = c->generation;
    g_strlcpy(request.group_id, c->config->group_id, sizeof(request.group_id));
    g_strlcpy(request.member_id, c->member_id, sizeof(request.member_id));
    send_to_broker(c, -1, c->coordinator, KS_GROUP_LEAVE_REQUEST, &request, sizeof(request));
}

/* Rejoin (at the next poll boundary when a batch is being processed). */
static void start_rejoin(struct ks_consumer *c, const char *reason)
{
    (void)reason;
    c->rejoin_needed = true;
    if (c->phase == PH_ACTIVE && (c->processing || c->commit_then_process || c->commit_then_poll)) {
        return; /* poll_step() rejoins once the batch is done */
    }
    if (c->phase == PH_IDLE) {
        return;
    }
    c->commit_then_poll = false;
    c->commit_then_process = false;
    revoke_all(c);
    c->phase = c->coordinator >= 0 ? PH_JOIN : PH_FIND;
    c->rejoin_needed = false;
    channel_reset(c, CH_GROUP);
    wake_after(c, 0);
}

/* The leader computes the assignment with the group's assignor. */
static void send_sync(struct ks_consumer *c, const struct ks_group_join_response *response,
                      const struct ks_group_join_member *members,
                      const struct ks_group_topic_partition *owned)
{
    int32_t member_count = response->member_count;
    int32_t entry_count = 0;
    struct ks_group_assignment_entry *entries = NULL;
    if (member_count > 0) {
        int32_t topic_count = c->spec->topic_count;
        struct ks_assignor_topic *topics = g_new0(struct ks_assignor_topic, (gsize)topic_count);
        for (int32_t t = 0; t < topic_count; t++) {
            topics[t].name = c->spec->topics[t].name;
            topics[t].partition_count = c->spec->topics[t].partition_count;
        }
        struct ks_assignor_member *assignor_members =
            g_new0(struct ks_assignor_member, (gsize)member_count);
        int32_t *subscriptions = g_new0(int32_t, (gsize)member_count);
        const struct ks_group_topic_partition *next_owned = owned;
        for (int32_t m = 0; m < member_count; m++) {
            subscriptions[m] = members[m].topic_index;
            assignor_members[m].member_id = members[m].member_id;
            assignor_members[m].topics = &subscriptions[m];
            assignor_members[m].topic_count =
                members[m].topic_index >= 0 && members[m].topic_index < topic_count ? 1 : 0;
            assignor_members[m].owned = next_owned;
            assignor_members[m].owned_count = members[m].owned_count;
            assignor_members[m].owned_generation = members[m].owned_generation;
            next_owned += members[m].owned_count;
        }
        int32_t slot_count = ks_assignor_slot_count(topics, topic_count);
        int32_t *owner = g_new0(int32_t, (gsize)slot_count + 1);
        ks_assignor_assign((enum ks_assignor)response->assignor, topics, topic_count,
                           assignor_members, member_count, owner);
        entries = g_new0(struct ks_group_assignment_entry, (gsize)slot_count + 1);
        for (int32_t t = 0, s = 0; t < topic_count; t++) {
            for (int32_t p = 0; p < topics[t].partition_count; p++, s++) {
                if (owner[s] >= 0) {
                    g_strlcpy(entries[entry_count].member_id, members[owner[s]].member_id,
                              sizeof(entries[entry_count].member_id));
                    entries[entry_count].topic_index = t;
                    entries[entry_count].partition = p;
                    entry_count++;
                }
            }
        }
        g_free(owner);
        g_free(subscriptions);
        g_free(assignor_members);
        g_free(topics);
    }
    size_t bytes = sizeof(struct ks_group_sync_request) +
                   (size_t)entry_count * sizeof(struct ks_group_assignment_entry);
    uint8_t *message = g_malloc0(bytes);
    struct ks_group_sync_request request;
    memset(&request, 0, sizeof(request));
    request.correlation_id = (int32_t)channel_begin(c, CH_GROUP, KS_GROUP_SYNC_REQUEST);
    request.generation = c->generation;
    request.entry_count = entry_count;
    g_strlcpy(request.group_id, c->config->group_id, sizeof(request.group_id));
    g_strlcpy(request.member_id, c->member_id, sizeof(request.member_id));
    memcpy(message, &request, sizeof(request));
    if (entry_count > 0) {
        memcpy(message + sizeof(request), entries,
               (size_t)entry_count * sizeof(struct ks_group_assignment_entry));
    }
    g_free(entries);
    send_to_broker(c, CH_GROUP, c->coordinator, KS_GROUP_SYNC_REQUEST, message, bytes);
    g_free(message);
}

/* Errors that send a member back to JoinGroup; coordinator errors send it to
 * FindCoordinator. Returns true when handled. */
static bool handle_group_error(struct ks_consumer *c, int16_t error)
{
    switch (error) {
    case KS_GROUP_ERR_NONE: return false;
    case KS_GROUP_ERR_NOT_COORDINATOR:
    case KS_GROUP_ERR_COORDINATOR_NOT_AVAILABLE:
        /* Rediscover; an active member keeps its generation (the new
         * coordinator answers UNKNOWN_MEMBER_ID if it does not know it). */
        coordinator_unknown(c);
        return true;
    case KS_GROUP_ERR_COORDINATOR_LOAD_IN_PROGRESS: wake_after(c, RETRY_BACKOFF_NS); return true;
    case KS_GROUP_ERR_UNKNOWN_MEMBER_ID:
        c->member_id[0] = 0;
        c->generation = -1;
        start_rejoin(c, "unknown member id");
        return true;
    case KS_GROUP_ERR_ILLEGAL_GENERATION:
        c->generation = -1;
        start_rejoin(c, "illegal generation");
        return true;
    case KS_GROUP_ERR_REBALANCE_IN_PROGRESS: start_rejoin(c, "rebalance in progress"); return true;
    }
    wake_after(c, RETRY_BACKOFF_NS);
    return true;
}

static void on_find_coordinator_response(struct ks_consumer *c,
                                         const struct ks_group_find_coordinator_response *r)
{
    if (!channel_end(c, CH_GROUP, r->correlation_id)) {
        return;
    }
    if (r->error_code != KS_GROUP_ERR_NONE || r->coordinator_id < 1 ||
        r->coordinator_id > c->broker_count) {
        wake_after(c, RETRY_BACKOFF_NS);
        return;
    }
    c->coordinator = r->coordinator_id;
    c->last_heartbeat_ok_ns = now_ns(c);
    if (c->phase == PH_FIND) {
        c->phase = PH_JOIN;
    }
    drive(c);
}

static void on_join_response(struct ks_consumer *c, const uint8_t *message, size_t bytes)
{
    struct ks_group_join_response r;
    ks_assert(bytes >= sizeof(r));
    memcpy(&r, message, sizeof(r));
    if (!channel_end(c, CH_GROUP, r.correlation_id) || c->phase != PH_JOIN) {
        return;
    }
    if (r.error_code == KS_GROUP_ERR_MEMBER_ID_REQUIRED) {
        g_strlcpy(c->member_id, r.member_id, sizeof(c->member_id));
        send_join(c);
        return;
    }
    if (r.error_code == KS_GROUP_ERR_INVALID_SESSION_TIMEOUT) {
        /* AbstractCoordinator.JoinGroupResponseHandler: a fatal error, raised
         * to the application (InvalidSessionTimeoutException from poll()),
         * which stops consuming. A restart of the consumer tries again. */
        struct ks_cluster_event event =
            event_new(c, KS_EV_INFO, KS_REASON_INVALID_SESSION_TIMEOUT, -1);
        emit(c, &event);
        cancel_timers(c);
        revoke_all(c);
        c->stopped = true;
        c->phase = PH_IDLE;
        c->member_id[0] = 0;
        c->generation = -1;
        c->rejoin_needed = false;
        return;
    }
    if (handle_group_error(c, r.error_code)) {
        return;
    }
    size_t expected = sizeof(r) + (size_t)r.member_count * sizeof(struct ks_group_join_member) +
                      (size_t)r.owned_total * sizeof(struct ks_group_topic_partition);
    ks_assert(bytes == expected);
    g_strlcpy(c->member_id, r.member_id, sizeof(c->member_id));
    c->generation = r.generation;
    c->phase = PH_SYNC;
    c->last_heartbeat_ok_ns = now_ns(c);
    arm_heartbeat(c);
    const struct ks_group_join_member *members = (const void *)(message + sizeof(r));
    const struct ks_group_topic_partition *owned =
        (const void *)(message + sizeof(r) +
                       (size_t)r.member_count * sizeof(struct ks_group_join_member));
    send_sync(c, &r, members, owned);
}

static void on_sync_response(struct ks_consumer *c, const uint8_t *message, size_t bytes)
{
    struct ks_group_sync_response r;
    ks_assert(bytes >= sizeof(r));
    memcpy(&r, message, sizeof(r));
    if (!channel_end(c, CH_GROUP, r.correlation_id) || c->phase != PH_SYNC) {
        return;
    }
    if (handle_group_error(c, r.error_code)) {
        return;
    }
    const struct ks_group_topic_partition *tps = ks_group_proto_entries(
        message, bytes, sizeof(r), r.partition_count, sizeof(struct ks_group_topic_partition));
    ks_assert(tps != NULL);
    revoke_all(c);
    ks_array_set_size(c->owned, 0);
    for (int32_t i = 0; i < r.partition_count; i++) {
        if (tps[i].topic_index != c->config->topic_index || tps[i].partition < 0 ||
            tps[i].partition >= c->topic_partition_count) {
            continue;
        }
        c->assigned[tps[i].partition] = true;
        c->assigned_count++;
        ks_array_append_val(c->owned, tps[i]);
    }
    c->owned_generation = c->generation;
    c->phase = PH_OFFSETS;
    drive(c);
}

static void on_offset_fetch_response(struct ks_consumer *c, const uint8_t *message, size_t bytes)
{
    struct ks_group_offset_fetch_response r;
    ks_assert(bytes >= sizeof(r));
    memcpy(&r, message, sizeof(r));
    if (!channel_end(c, CH_GROUP, r.correlation_id) || c->phase != PH_OFFSETS) {
        return;
    }
    if (handle_group_error(c, r.error_code)) {
        return;
    }
    const struct ks_group_offset_fetch_entry *entries = ks_group_proto_entries(
        message, bytes, sizeof(r), r.entry_count, sizeof(struct ks_group_offset_fetch_entry));
    ks_assert(entries != NULL);
    /* ConsumerCoordinator.OffsetFetchResponseHandler: a partition whose
     * transactional offset is still pending (UNSTABLE_OFFSET_COMMIT) fails
     * the whole fetch with UnstableOffsetCommitException, and the consumer
     * asks again after retry.backoff.ms; it takes none of the answer. */
    for (int32_t i = 0; i < r.entry_count; i++) {
        if (entries[i].error_code != KS_GROUP_ERR_NONE) {
            wake_after(c, RETRY_BACKOFF_NS);
            return;
        }
    }
    for (int32_t i = 0; i < r.entry_count; i++) {
        int32_t p = entries[i].partition;
        if (entries[i].topic_index != c->config->topic_index || p < 0 ||
            p >= c->topic_partition_count || !c->assigned[p]) {
            continue;
        }
        struct part *part = &c->parts[p];
        int64_t offset = entries[i].offset;
        part->committed = offset;
        if (c->config->commit == KS_COMMIT_ATOMIC) {
            /* The sink, not the group, says where processing stopped. */
            int64_t sink_offset = sink_claim(c, part);
            if (sink_offset >= 0) {
                offset = sink_offset;
            }
        }
        part->hw = -1;
        if (offset >= 0) {
            part->position_known = true;
            part->fetch_position = offset;
            part->skip_position = -1;
            part->consumed_position = offset;
            part->processed_position = offset;
            report_position(c, p, offset, KS_POSITION_ASSIGNED);
        } else if (c->config->auto_offset_reset == KS_RESET_NONE) {
            part->idle_no_offset = true;
            struct ks_cluster_event event =
                event_new(c, KS_EV_OFFSET_RESET, KS_REASON_NO_COMMITTED_OFFSET_NONE, p);
            emit(c, &event);
        } else {
            set_reset_pending(c, part, true);
            part->reset_is_rewind = false;
            part->out_of_range_offset = -1;
            part->reset_timestamp = c->config->auto_offset_reset == KS_RESET_EARLIEST
                                        ? KS_LIST_OFFSETS_EARLIEST
                                        : KS_LIST_OFFSETS_LATEST;
        }
    }
    c->phase = PH_ACTIVE;
    c->metadata_stale = true;
    drive(c);
}

/* ---- commits ------------------------------------------------------------------------ */

/* Commits position per assigned partition (consumed or processed). */
static void send_commit(struct ks_consumer *c, bool processed)
{
    if (c->channels[CH_COMMIT].in_flight || c->coordinator < 0) {
        return;
    }
    int32_t count = 0;
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        count += c->assigned[p] && c->parts[p].position_known;
    }
    size_t bytes = sizeof(struct ks_group_offset_commit_request) +
                   (size_t)count * sizeof(struct ks_group_offset_entry);
    uint8_t *message = g_malloc0(bytes);
    struct ks_group_offset_commit_request request;
    memset(&request, 0, sizeof(request));
    request.correlation_id = (int32_t)channel_begin(c, CH_COMMIT, KS_GROUP_OFFSET_COMMIT_REQUEST);
    request.generation = c->generation;
    request.entry_count = count;
    g_strlcpy(request.group_id, c->config->group_id, sizeof(request.group_id));
    g_strlcpy(request.member_id, c->member_id, sizeof(request.member_id));
    memcpy(message, &request, sizeof(request));
    size_t position = sizeof(request);
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        if (c->assigned[p] && c->parts[p].position_known) {
            struct ks_group_offset_entry e;
            memset(&e, 0, sizeof(e));
            e.topic_index = c->config->topic_index;
            e.partition = p;
            e.offset = processed ? c->parts[p].processed_position : c->parts[p].consumed_position;
            c->parts[p].commit_sent = e.offset;
            memcpy(message + position, &e, sizeof(e));
            position += sizeof(e);
        }
    }
    /* Remember what was sent, to mark it committed on the acknowledgement. */
    send_to_broker(c, CH_COMMIT, c->coordinator, KS_GROUP_OFFSET_COMMIT_REQUEST, message, bytes);
    g_free(message);
}

static void start_processing(struct ks_consumer *c);

/* CommitFailedException: the member was kicked out or a rebalance runs.
 * before-process: the batch is not processed (its records go to the next
 * owner from the last committed offset). A failed asynchronous commit (auto,
 * atomic) leaves the batch in progress alone. */
static void commit_failed(struct ks_consumer *c, int16_t error)
{
    if (c->commit_then_process) {
        ks_assert(!c->processing);
        ks_array_set_size(c->batch, 0);
        ks_array_set_size(c->batch_partitions, 0);
        c->batch_next = 0;
    }
    c->commit_then_process = false;
    c->commit_then_poll = false;
    if (!handle_group_error(c, error) || c->rejoin_needed) {
        c->rejoin_needed = true;
        start_rejoin(c, "commit failed");
    }
}

static void on_commit_response(struct ks_consumer *c, const struct ks_group_simple_response *r)
{
    if (!channel_end(c, CH_COMMIT, r->correlation_id)) {
        return;
    }
    if (r->error_code != KS_GROUP_ERR_NONE) {
        for (int32_t p = 0; p < c->topic_partition_count; p++) {
            c->parts[p].commit_sent = -1;
        }
    }
    if (r->error_code == KS_GROUP_ERR_NONE) {
        for (int32_t p = 0; p < c->topic_partition_count; p++) {
            if (c->assigned[p] && c->parts[p].commit_sent >= 0) {
                c->parts[p].committed = c->parts[p].commit_sent;
                report_position(c, p, c->parts[p].committed, KS_POSITION_COMMITTED);
            }
            c->parts[p].commit_sent = -1;
        }
        if (c->commit_then_process) {
            c->commit_then_process = false;
            start_processing(c);
            return;
        }
        if (c->commit_then_poll) {
            c->commit_then_poll = false;
        }
        drive(c);
        return;
    }
    bool retriable = r->error_code == KS_GROUP_ERR_NOT_COORDINATOR ||
                     r->error_code == KS_GROUP_ERR_COORDINATOR_NOT_AVAILABLE ||
                     r->error_code == KS_GROUP_ERR_COORDINATOR_LOAD_IN_PROGRESS ||
                     r->error_code == KS_GROUP_ERR_REQUEST_TIMED_OUT;
    if (retriable && (c->commit_then_process || c->commit_then_poll)) {
        /* commitSync retries: find the coordinator again, then resend. */
        if (r->error_code != KS_GROUP_ERR_COORDINATOR_LOAD_IN_PROGRESS) {
            c->coordinator = -1;
            channel_reset(c, CH_HEARTBEAT);
        }
        wake_after(c, RETRY_BACKOFF_NS);
        return;
    }
    if (retriable) {
        if (r->error_code != KS_GROUP_ERR_COORDINATOR_LOAD_IN_PROGRESS) {
            c->coordinator = -1;
        }
        wake_after(c, RETRY_BACKOFF_NS);
        return;
    }
    commit_failed(c, r->error_code);
}

/* ---- fetching ----------------------------------------------------------------------- */

/* KIP-320, SubscriptionState.maybeValidatePositionForCurrentLeader: after a
 * leader change (a newer epoch from metadata or a KIP-951 hint) a position
 * that has an epoch awaits validation (AWAIT_VALIDATION: not fetchable, its
 * buffered records dropped as FetchCollector drops those of a partition no
 * longer fetchable, so the position is the consumed one); one without an
 * epoch (a committed offset: ksim's commits carry no leader epoch) is taken
 * as it is (validatePosition). */
static void offset_out_of_range(struct ks_consumer *c, struct part *part);

static void maybe_validate(struct ks_consumer *c, struct part *part)
{
    if (!c->spec->cluster->client_leader_epochs || !part->position_known || part->reset_pending ||
        part->position_epoch < 0) {
        return;
    }
    buffer_clear(c, part);
    part->fetch_position = part->consumed_position;
    set_validate_pending(c, part, true);
    part->validate_sent_offset = -1;
}

static void send_metadata(struct ks_consumer *c)
{
    if (c->channels[CH_METADATA].in_flight) {
        return;
    }
    struct ks_metadata_request request;
    memset(&request, 0, sizeof(request));
    request.correlation_id = channel_begin(c, CH_METADATA, KS_MSG_METADATA_REQUEST);
    request.topic_index = c->config->topic_index;
    send_to_broker(c, CH_METADATA, rotate_broker(c), KS_MSG_METADATA_REQUEST, &request,
                   sizeof(request));
}

static void on_metadata_response(struct ks_consumer *c, const uint8_t *message, size_t bytes)
{
    struct ks_metadata_response r;
    size_t head = ks_proto_metadata_decode(message, bytes, &r);
    ks_assert(r.partition_count >= 0);
    ks_assert(bytes == head + (size_t)r.partition_count * sizeof(struct ks_metadata_partition));
    if (!channel_end(c, CH_METADATA, r.correlation_id)) {
        return;
    }
    if (r.error_code != KS_ERR_NONE) {
        wake_after(c, RETRY_BACKOFF_NS);
        return;
    }
    bool all_known = true;
    for (int32_t i = 0; i < r.partition_count; i++) {
        struct ks_metadata_partition mp;
        memcpy(&mp, message + head + (size_t)i * sizeof(mp), sizeof(mp));
        ks_assert(mp.partition >= 0 && mp.partition < c->topic_partition_count);
        struct part *part = &c->parts[mp.partition];
        if (c->spec->cluster->client_leader_epochs && part->leader_epoch >= 0 &&
            mp.leader_epoch < part->leader_epoch) {
            /* KIP-320: Metadata.updateLatestMetadata keeps what it has when
             * a broker with stale metadata answers with an older epoch. */
            all_known = all_known && (part->leader >= 1 || !c->assigned[mp.partition]);
            continue;
        }
        bool newer = part->leader_epoch >= 0 && mp.leader_epoch > part->leader_epoch;
        part->leader = mp.leader;
        part->leader_epoch = mp.leader_epoch;
        if (newer && mp.leader >= 1 && c->assigned[mp.partition]) {
            maybe_validate(c, part);
        }
        all_known = all_known && (mp.leader >= 1 || !c->assigned[mp.partition]);
    }
    c->metadata_known = true;
    c->metadata_stale = !all_known;
    if (!all_known) {
        wake_after(c, RETRY_BACKOFF_NS);
    }
    drive(c);
}

static void send_list_offsets(struct ks_consumer *c)
{
    if (c->channels[CH_LIST_OFFSETS].in_flight || c->reset_pending_count == 0) {
        return;
    }
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        struct part *part = &c->parts[p];
        if (!c->assigned[p] || !part->reset_pending || part->leader < 1) {
            continue;
        }
        struct ks_list_offsets_request request;
        memset(&request, 0, sizeof(request));
        request.correlation_id = channel_begin(c, CH_LIST_OFFSETS, KS_MSG_LIST_OFFSETS_REQUEST);
        request.topic_index = c->config->topic_index;
        request.partition = p;
        request.timestamp = part->reset_timestamp;
        request.current_leader_epoch =
            c->spec->cluster->client_leader_epochs ? part->leader_epoch : -1;
        send_to_broker(c, CH_LIST_OFFSETS, part->leader, KS_MSG_LIST_OFFSETS_REQUEST, &request,
                       sizeof(request));
        return;
    }
}

static void on_list_offsets_response(struct ks_consumer *c,
                                     const struct ks_list_offsets_response *r)
{
    if (!channel_end(c, CH_LIST_OFFSETS, r->correlation_id)) {
        return;
    }
    int32_t p = r->partition;
    ks_assert(r->topic_index == c->config->topic_index);
    ks_assert(p >= 0 && p < c->topic_partition_count);
    if (!c->assigned[p] || !c->parts[p].reset_pending) {
        drive(c);
        return;
    }
    struct part *part = &c->parts[p];
    if (r->error_code != KS_ERR_NONE || r->offset < 0) {
        c->metadata_stale = true;
        wake_after(c, RETRY_BACKOFF_NS);
        return;
    }
    set_reset_pending(c, part, false);
    set_validate_pending(c, part, false);
    part->position_epoch = r->leader_epoch; /* OffsetFetcher.resetPositionsIfNeeded */
    part->position_known = true;
    part->fetch_position = r->offset;
    part->skip_position = -1;
    part->consumed_position = r->offset;
    part->processed_position = r->offset;
    if (c->config->commit == KS_COMMIT_ATOMIC && part->sink != NULL) {
        (void)sink_store(c, part, r->offset);
    }
    enum ks_event_reason reason = part->reset_is_rewind            ? KS_REASON_REWIND
                                  : part->out_of_range_offset >= 0 ? KS_REASON_OFFSET_OUT_OF_RANGE
                                                                   : KS_REASON_NO_COMMITTED_OFFSET;
    struct ks_cluster_event event = event_new(c, KS_EV_OFFSET_RESET, reason, p);
    event.position = position_of(part->reset_timestamp);
    event.offset = r->offset;
    event.offset_old = part->reset_is_rewind ? -1 : part->out_of_range_offset;
    emit(c, &event);
    report_position(c, p, r->offset,
                    part->reset_is_rewind ? KS_POSITION_REWIND : KS_POSITION_RESET);
    if (part->reset_is_rewind) {
        part->reset_is_rewind = false;
        part->committed = -1;
    }
    drive(c);
}

/* OffsetsForLeaderEpochClient: one partition awaiting validation at a time,
 * sent to its leader with the position's epoch and the leader's current one. */
static void send_validation(struct ks_consumer *c)
{
    if (c->channels[CH_VALIDATE].in_flight || c->validate_pending_count == 0) {
        return;
    }
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        struct part *part = &c->parts[p];
        if (!c->assigned[p] || !part->validate_pending || part->leader < 1) {
            continue;
        }
        struct ks_offset_for_leader_epoch_request request;
        memset(&request, 0, sizeof(request));
        request.correlation_id =
            channel_begin(c, CH_VALIDATE, KS_MSG_OFFSET_FOR_LEADER_EPOCH_REQUEST);
        request.topic_index = c->config->topic_index;
        request.partition = p;
        request.current_leader_epoch = part->leader_epoch;
        request.leader_epoch = part->position_epoch;
        part->validate_sent_offset = part->consumed_position;
        send_to_broker(c, CH_VALIDATE, part->leader, KS_MSG_OFFSET_FOR_LEADER_EPOCH_REQUEST,
                       &request, sizeof(request));
        return;
    }
}

/* A truncation below the position (SubscriptionState.maybeCompleteValidation):
 * with auto.offset.reset earliest or latest the consumer seeks to the end
 * offset of the diverging epoch (Kafka logs "Truncation detected ...
 * resetting offset to the first offset known to diverge") and reads the new
 * leader's records from there; with none the application gets a
 * LogTruncationException, and ksim leaves the partition unread. */
static void truncation_detected(struct ks_consumer *c, struct part *part,
                                const struct ks_offset_for_leader_epoch_response *r)
{
    int64_t position = part->consumed_position;
    if (c->config->auto_offset_reset == KS_RESET_NONE) {
        part->idle_no_offset = true;
        part->position_known = false;
        struct ks_cluster_event event =
            event_new(c, KS_EV_OFFSET_RESET, KS_REASON_LOG_TRUNCATION_NONE, part->partition);
        event.offset_old = position;
        event.offset = r->end_offset;
        emit(c, &event);
        return;
    }
    part->fetch_position = r->end_offset;
    part->consumed_position = r->end_offset;
    if (part->processed_position > r->end_offset) {
        part->processed_position = r->end_offset;
    }
    part->position_epoch = r->leader_epoch;
    if (c->config->commit == KS_COMMIT_ATOMIC && part->sink != NULL) {
        (void)sink_store(c, part, r->end_offset);
    }
    struct ks_cluster_event event =
        event_new(c, KS_EV_OFFSET_RESET, KS_REASON_LOG_TRUNCATION, part->partition);
    event.position = KS_POSITION_OFFSET;
    event.offset = r->end_offset;
    event.offset_old = position;
    emit(c, &event);
    report_position(c, part->partition, r->end_offset, KS_POSITION_RESET);
}

static void on_validation_response(struct ks_consumer *c,
                                   const struct ks_offset_for_leader_epoch_response *r)
{
    if (!channel_end(c, CH_VALIDATE, r->correlation_id)) {
        return;
    }
    int32_t p = r->partition;
    ks_assert(r->topic_index == c->config->topic_index);
    ks_assert(p >= 0 && p < c->topic_partition_count);
    struct part *part = &c->parts[p];
    if (!c->assigned[p] || !part->validate_pending ||
        part->validate_sent_offset != part->consumed_position) {
        drive(c); /* the position moved since the request was sent */
        return;
    }
    if (r->error_code != KS_ERR_NONE) {
        /* FENCED / UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER: new metadata, then again. */
        part->validate_sent_offset = -1;
        c->metadata_stale = true;
        wake_after(c, RETRY_BACKOFF_NS);
        return;
    }
    set_validate_pending(c, part, false);
    part->validate_sent_offset = -1;
    if (r->end_offset < 0 || r->leader_epoch < 0) {
        /* No epoch that old on the leader: reset as for an out-of-range position. */
        offset_out_of_range(c, part);
    } else if (r->end_offset < part->consumed_position) {
        truncation_detected(c, part, r);
    }
    drive(c);
}

/* A fetch request for up to this many partitions is built on the stack. */
#define FETCH_STACK_PARTITIONS 32

/* Whether the partition is in the fetch request in flight on its fetch
 * broker's channel (C3). */
static inline bool fetch_in_flight(const struct ks_consumer *c, const struct part *part)
{
    if (part->fetch_broker < 1) {
        return false; /* never fetched */
    }
    const struct channel *ch = &c->channels[CH_FETCH + part->fetch_broker - 1];
    return ch->in_flight && ch->correlation_id == part->fetch_correlation_id;
}

/* Whether partition p goes into the next fetch of its leader: assigned, at
 * a known and valid position, with nothing buffered or being fetched, and
 * its leader's fetch channel free. */
static inline bool fetchable(const struct ks_consumer *c, int32_t p)
{
    const struct part *part = &c->parts[p];
    /* The usual refusal first: its leader's fetch is still in flight. */
    return part->leader >= 1 && part->leader <= c->broker_count &&
           !c->channels[CH_FETCH + part->leader - 1].in_flight && c->assigned[p] &&
           !fetch_in_flight(c, part) && buffered(part) == 0 && part->position_known &&
           !part->reset_pending && !part->validate_pending;
}

/* One FetchRequest to broker for the `count` partitions ids[] (ascending). */
static void send_fetch(struct ks_consumer *c, int32_t broker, const int32_t *ids, int32_t count)
{
    int32_t ch = CH_FETCH + broker - 1;
    size_t bytes =
        sizeof(struct ks_fetch_request) + (size_t)count * sizeof(struct ks_fetch_request_partition);
    /* Every byte is copied from a zeroed struct below, and the world
     * copies the message: a request of a few partitions needs no
     * allocation (issue 16). */
    uint8_t stack_message[sizeof(struct ks_fetch_request) +
                          FETCH_STACK_PARTITIONS * sizeof(struct ks_fetch_request_partition)];
    uint8_t *message = count <= FETCH_STACK_PARTITIONS ? stack_message : g_malloc(bytes);
    struct ks_fetch_request request;
    memset(&request, 0, sizeof(request));
    request.correlation_id = channel_begin(c, ch, KS_MSG_FETCH_REQUEST);
    request.replica_id = KS_FETCH_CONSUMER_REPLICA_ID;
    request.min_bytes = c->config->fetch_min_bytes;
    request.max_wait_ns = c->config->fetch_max_wait_ns;
    request.max_bytes = FETCH_MAX_BYTES;
    request.partition_count = count;
    request.isolation_level = c->config->isolation_level == KS_READ_COMMITTED
                                  ? KS_ISOLATION_READ_COMMITTED
                                  : KS_ISOLATION_READ_UNCOMMITTED;
    memcpy(message, &request, sizeof(request));
    size_t position = sizeof(request);
    for (int32_t k = 0; k < count; k++) {
        int32_t p = ids[k];
        struct part *part = &c->parts[p];
        struct ks_fetch_request_partition fp;
        memset(&fp, 0, sizeof(fp));
        fp.topic_index = c->config->topic_index;
        fp.partition = p;
        fp.fetch_offset = part->fetch_position;
        fp.log_start_offset = -1;
        /* KIP-320: the consumer's view of the leader's epoch, which
         * the leader checks (FENCED / UNKNOWN_LEADER_EPOCH). */
        fp.current_leader_epoch = c->spec->cluster->client_leader_epochs ? part->leader_epoch : -1;
        fp.last_fetched_epoch = -1;
        fp.partition_max_bytes = c->config->max_partition_fetch_bytes;
        memcpy(message + position, &fp, sizeof(fp));
        position += sizeof(fp);
        part->fetch_correlation_id = c->channels[ch].correlation_id;
        part->fetch_broker = broker;
        part->fetch_sent_offset = part->fetch_position;
    }
    ks_assert(position == bytes);
    send_to_broker(c, ch, broker, KS_MSG_FETCH_REQUEST, message, bytes);
    if (message != stack_message) {
        g_free(message);
    }
}

static void send_fetches(struct ks_consumer *c)
{
    /* The fetchable partitions (found, in partition order) sorted by leader
     * (a counting sort into by_leader): one scan of the partitions, where a
     * scan per broker for its count and one for its request cost partitions
     * x brokers at every poll (issue 16). Nothing below changes whether
     * another broker's partition is fetchable: a request marks only its own
     * partitions, and a broker found down is handled in the next event
     * (note_broker_down). */
    /* Every leader's fetch still in flight (a poll while processing,
     * usually): no partition is fetchable, and none need be looked at. */
    bool channel_free = false;
    for (int32_t broker = 1; broker <= c->broker_count && !channel_free; broker++) {
        channel_free = !c->channels[CH_FETCH + broker - 1].in_flight;
    }
    if (!channel_free) {
        return;
    }
    int32_t *found = c->fetch_order;
    int32_t total = 0;
    bool one_leader = true; /* the usual case: one broker's fetch came back */
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        if (fetchable(c, p)) {
            one_leader =
                one_leader && (total == 0 || c->parts[p].leader == c->parts[found[0]].leader);
            found[total++] = p;
        }
    }
    if (total == 0) {
        return;
    }
    if (one_leader) {
        send_fetch(c, c->parts[found[0]].leader, found, total);
        return;
    }
    int32_t *by_leader = c->fetch_order + c->topic_partition_count;
    int32_t *end = c->fetch_end;
    memset(end, 0, (size_t)(c->broker_count + 1) * sizeof(*end));
    for (int32_t k = 0; k < total; k++) {
        end[c->parts[found[k]].leader]++;
    }
    int32_t start = 0;
    for (int32_t broker = 1; broker <= c->broker_count; broker++) {
        int32_t count = end[broker];
        end[broker] = start; /* its run's start, moved to its end below */
        start += count;
    }
    for (int32_t k = 0; k < total; k++) {
        by_leader[end[c->parts[found[k]].leader]++] = found[k];
    }
    for (int32_t broker = 1; broker <= c->broker_count; broker++) {
        if (end[broker] > end[broker - 1]) {
            send_fetch(c, broker, by_leader + end[broker - 1], end[broker] - end[broker - 1]);
        }
    }
}

/* "<producer name>:<seq>" → producer index and seq. */
/* The identity header's value as every ksim producer writes it, "<name>:<seq>"
 * with seq in decimal digits only (header_value_text in core/producer.c): the
 * producer and seq found without copying the text or calling strtoll, which
 * were a tenth of the consumer's cost per record (issue 16). False when the
 * value is not of that form (a NUL byte, no colon, no digits or more than
 * 18 after it): parse_identity then reads it the general way, which gives
 * the same answer for every value this accepts. */
static bool parse_identity_digits(const struct ks_consumer *c, const struct ks_header_view *header,
                                  int32_t *producer_out, int64_t *seq_out)
{
    const uint8_t *value = header->value;
    size_t length = (size_t)header->value_bytes;
    if (memchr(value, 0, length) != NULL) {
        return false;
    }
    const uint8_t *colon = memrchr(value, ':', length);
    if (colon == NULL) {
        return false;
    }
    size_t name_bytes = (size_t)(colon - value);
    size_t digit_count = length - name_bytes - 1;
    if (digit_count == 0 || digit_count > 18) {
        return false; /* 18 digits cannot overflow an int64 */
    }
    int64_t seq = 0;
    for (size_t i = name_bytes + 1; i < length; i++) {
        if (value[i] < '0' || value[i] > '9') {
            return false;
        }
        seq = seq * 10 + (value[i] - '0');
    }
    const struct ks_producer_config *producers =
        c->spec->identity_producers != NULL ? c->spec->identity_producers : c->spec->producers;
    int32_t producer_count = c->spec->identity_producers != NULL ? c->spec->identity_producer_count
                                                                 : c->spec->producer_count;
    for (int32_t i = 0; i < producer_count; i++) {
        if (strlen(producers[i].name) == name_bytes &&
            memcmp(producers[i].name, value, name_bytes) == 0) {
            *producer_out = i;
            *seq_out = seq;
            return true;
        }
    }
    return true; /* no such producer: -1, -1, as the general way finds */
}

static void parse_identity(const struct ks_consumer *c, const struct ks_record_view *record,
                           int32_t *producer_out, int64_t *seq_out)
{
    *producer_out = -1;
    *seq_out = -1;
    size_t name_bytes = strlen(KS_IDENTITY_HEADER);
    for (int32_t h = 0; h < record->header_count; h++) {
        const struct ks_header_view *header = &record->headers[h];
        if (header->key_bytes != (int32_t)name_bytes ||
            memcmp(header->key, KS_IDENTITY_HEADER, name_bytes) != 0 || header->value_bytes <= 0 ||
            header->value_bytes >= 128) {
            continue;
        }
        if (parse_identity_digits(c, header, producer_out, seq_out)) {
            return;
        }
        char text[128];
        memcpy(text, header->value, (size_t)header->value_bytes);
        text[header->value_bytes] = 0;
        char *colon = strrchr(text, ':');
        if (colon == NULL) {
            return;
        }
        *colon = 0;
        const struct ks_producer_config *producers =
            c->spec->identity_producers != NULL ? c->spec->identity_producers : c->spec->producers;
        int32_t producer_count = c->spec->identity_producers != NULL
                                     ? c->spec->identity_producer_count
                                     : c->spec->producer_count;
        for (int32_t i = 0; i < producer_count; i++) {
            if (strcmp(producers[i].name, text) == 0) {
                *producer_out = i;
                *seq_out = g_ascii_strtoll(colon + 1, NULL, 10);
                return;
            }
        }
        return;
    }
}

static void offset_out_of_range(struct ks_consumer *c, struct part *part)
{
    if (c->config->auto_offset_reset == KS_RESET_NONE) {
        part->idle_no_offset = true;
        part->position_known = false;
        struct ks_cluster_event event =
            event_new(c, KS_EV_OFFSET_RESET, KS_REASON_OFFSET_OUT_OF_RANGE_NONE, part->partition);
        event.offset_old = part->fetch_position;
        emit(c, &event);
        return;
    }
    set_reset_pending(c, part, true);
    part->reset_is_rewind = false;
    part->out_of_range_offset = part->fetch_position;
    part->reset_timestamp = c->config->auto_offset_reset == KS_RESET_EARLIEST
                                ? KS_LIST_OFFSETS_EARLIEST
                                : KS_LIST_OFFSETS_LATEST;
}

/* KIP-951 (client.leader.discovery): AbstractFetch.handleFetchSuccess takes
 * the CurrentLeader of a NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH answer
 * into the metadata (Metadata.updatePartitionLeadership: only a newer epoch)
 * and validates the position for that leader, so the next fetch goes there
 * without waiting for the metadata refresh, which is still requested. */
static void leader_hint(struct ks_consumer *c, struct part *part,
                        const struct ks_fetch_response_partition *fp)
{
    if (!c->spec->cluster->client_leader_discovery ||
        (fp->error_code != KS_ERR_NOT_LEADER_OR_FOLLOWER &&
         fp->error_code != KS_ERR_FENCED_LEADER_EPOCH) ||
        fp->current_leader_id < 1 || fp->current_leader_id > c->broker_count ||
        fp->current_leader_epoch < 0 ||
        (part->leader_epoch >= 0 && fp->current_leader_epoch <= part->leader_epoch)) {
        return;
    }
    part->leader = fp->current_leader_id;
    part->leader_epoch = fp->current_leader_epoch;
    maybe_validate(c, part);
}

/* The consumer's position moves past skipped batches (transaction markers,
 * aborted transactions) once everything before them was processed, as
 * Kafka's does (the fetch position it commits is past them): otherwise a
 * partition ending in a marker would never count as consumed. A log without
 * control batches never gets here. */
static void take_skipped(struct part *part)
{
    if (part->skip_position > part->consumed_position &&
        part->skip_position <= part->fetch_position && buffered(part) == 0 &&
        part->processed_position == part->consumed_position) {
        part->consumed_position = part->skip_position;
        part->processed_position = part->skip_position;
        part->skip_position = -1;
    }
}

static void on_fetch_response(struct ks_consumer *c, ks_node_id source, const uint8_t *message,
                              size_t bytes)
{
    struct ks_fetch_response r;
    ks_assert(bytes >= sizeof(r));
    memcpy(&r, message, sizeof(r));
    int32_t broker = (int32_t)source;
    ks_assert(broker >= 1 && broker <= c->broker_count);
    if (!channel_end(c, CH_FETCH + broker - 1, r.correlation_id)) {
        return;
    }
    /* The channel is free: none of its partitions is being fetched (C3). */
    size_t position = sizeof(r);
    bool read_committed = c->config->isolation_level == KS_READ_COMMITTED;
    for (int32_t i = 0; i < r.partition_count; i++) {
        struct ks_fetch_response_partition fp;
        ks_assert(position + sizeof(fp) <= bytes);
        memcpy(&fp, message + position, sizeof(fp));
        position += sizeof(fp);
        ks_assert(position + fp.records_bytes <= bytes);
        const uint8_t *records = message + position;
        position += fp.records_bytes;
        struct ks_fetch_txn_trailer trailer = { -1, 0, 0 };
        const uint8_t *aborted = NULL;
        if (read_committed) {
            ks_assert(position + sizeof(trailer) <= bytes);
            memcpy(&trailer, message + position, sizeof(trailer));
            position += sizeof(trailer);
            ks_assert(ks_proto_fits(bytes - position, 0, trailer.aborted_count,
                                    sizeof(struct ks_fetch_aborted)));
            aborted = message + position;
            position += (size_t)trailer.aborted_count * sizeof(struct ks_fetch_aborted);
        }
        int32_t p = fp.partition;
        ks_assert(fp.topic_index == c->config->topic_index); /* only ours were asked for */
        ks_assert(p >= 0 && p < c->topic_partition_count);
        if (!c->assigned[p]) {
            continue;
        }
        struct part *part = &c->parts[p];
        if (!part->position_known || part->reset_pending || part->validate_pending ||
            part->fetch_sent_offset != part->fetch_position) {
            continue; /* the position moved (a rewind, a validation) since this fetch was sent */
        }
        if (fp.error_code == KS_ERR_OFFSET_OUT_OF_RANGE) {
            offset_out_of_range(c, part);
            continue;
        }
        if (fp.error_code != KS_ERR_NONE) {
            c->metadata_stale = true; /* FetchCollector: requestMetadataUpdate */
            leader_hint(c, part, &fp);
            continue;
        }
        /* KafkaConsumer's read_committed lag is against the LSO. */
        part->hw = read_committed ? trailer.last_stable_offset : fp.hw;
        struct ks_txn_filter filter;
        if (read_committed && trailer.aborted_count > 0) {
            /* copied out first: the message need not be aligned for the struct */
            struct ks_fetch_aborted *aborted_list =
                g_new(struct ks_fetch_aborted, trailer.aborted_count);
            memcpy(aborted_list, aborted,
                   (size_t)trailer.aborted_count * sizeof(struct ks_fetch_aborted));
            ks_txn_filter_init(&filter, aborted_list, trailer.aborted_count);
            g_free(aborted_list);
        } else {
            ks_txn_filter_init(&filter, NULL, 0); /* allocates nothing */
        }
        size_t at = 0;
        while (at < fp.records_bytes) {
            struct ks_batch_view batch;
            size_t batch_bytes = 0;
            if (ks_batch_parse(records + at, fp.records_bytes - at, &batch, &batch_bytes) !=
                KS_BATCH_OK) {
                break; /* a partial batch at the end (max bytes) */
            }
            at += batch_bytes;
            int64_t last = ks_batch_last_offset(&batch);
            if (last < part->fetch_position) {
                continue;
            }
            /* CompletedFetch: control batches never reach the application;
             * read_committed also drops aborted transactions' batches. */
            if (!ks_txn_filter_skip(&filter, &batch)) {
                struct ks_record_iter iter;
                struct ks_record_view record;
                ks_record_iter_init(&iter, &batch);
                while (ks_record_iter_next(&iter, &record, NULL)) {
                    if (record.offset < part->fetch_position) {
                        continue;
                    }
                    struct pending_record pending;
                    pending.offset = record.offset;
                    pending.leader_epoch = batch.partition_leader_epoch;
                    parse_identity(c, &record, &pending.producer_index, &pending.seq);
                    ks_array_append_val(part->buffer, pending);
                    c->buffered_count++;
                    part->skip_position = -1;
                }
            } else {
                part->skip_position = last + 1;
            }
            part->fetch_position = last + 1;
        }
        ks_txn_filter_deinit(&filter);
        take_skipped(part);
    }
    drive(c);
}

/* ---- processing -------------------------------------------------------------------------- */

static void on_poll_interval_expired(ks_world *world, void *context)
{
    struct ks_consumer *c = context;
    (void)world;
    c->poll_interval_timer = 0;
    /* Kafka's heartbeat thread: poll() was not called within
     * max.poll.interval.ms, so the member leaves the group. */
    struct ks_cluster_event event = event_new(c, KS_EV_INFO, KS_REASON_POLL_INTERVAL_EXCEEDED, -1);
    emit(c, &event);
    send_leave(c);
    c->member_id[0] = 0;
    c->generation = -1;
    channel_reset(c, CH_HEARTBEAT);
    c->rejoin_needed = true;
#ifdef KS_DEBUG
    ks_consumer_check(c);
#endif
}

/* ---- a processor: consume, transform, produce ------------------------------------- */

static bool processor_transactional(const struct ks_consumer *c)
{
    return c->output != NULL && c->config->transactional_id[0] != 0;
}

/* ProducerFencedException reached the application (a newer instance holds
 * its transactional.id): it closes, as Kafka Streams closes a zombie task,
 * and consumes no more. A restart of the consumer starts a new instance. */
static void output_fenced(struct ks_consumer *c)
{
    struct ks_cluster_event event = event_new(c, KS_EV_INFO, KS_REASON_TXN_FENCED, -1);
    emit(c, &event);
    if (c->coordinator >= 0 && c->generation >= 0) {
        send_leave(c);
    }
    cancel_timers(c);
    revoke_all(c);
    c->processing = false;
    ks_array_set_size(c->batch, 0);
    ks_array_set_size(c->batch_partitions, 0);
    c->batch_next = 0;
    c->stopped = true;
    c->phase = PH_IDLE;
    c->member_id[0] = 0;
    c->generation = -1;
    c->rejoin_needed = false;
    c->txn_then_poll = false;
    c->flush_then_commit = false;
}

/* The end of a processed batch. At-least-once (no transactional.id): flush()
 * the output, then commitSync() the offsets. Exactly-once: the offsets go
 * into the producer's transaction (sendOffsetsToTransaction with the
 * consumer's group metadata, KIP-447), then commitTransaction(). True when
 * the processor took over the commit. */
static bool end_output(struct ks_consumer *c)
{
    if (!processor_transactional(c)) {
        c->flush_then_commit = true;
        wake_after(c, 0);
        return true;
    }
    GArray *offsets = g_array_new(FALSE, TRUE, sizeof(struct ks_group_offset_entry));
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        if (c->assigned[p] && c->parts[p].position_known) {
            struct ks_group_offset_entry e;
            memset(&e, 0, sizeof e);
            e.topic_index = c->config->topic_index;
            e.partition = p;
            e.offset = c->parts[p].processed_position;
            ks_array_append_val(offsets, e);
        }
    }
    c->txn_ended_seen = ks_producer_txn_ended_count(c->output, NULL);
    bool ending = ks_producer_end_txn(c->output, c->config->group_id, c->member_id, c->generation,
                                      (const struct ks_group_offset_entry *)(void *)offsets->data,
                                      (int32_t)offsets->len);
    g_array_free(offsets, TRUE);
    if (!ending && ks_producer_fenced(c->output)) {
        output_fenced(c);
        return true;
    }
    c->txn_then_poll = ending;
    if (ending) {
        c->output_wait_poll = true; /* commitTransaction() returns when it ended */
    } else {
        wake_after(c, 0);
    }
    return true;
}

/* What a processor waits for before its next poll; false while it waits. */
static bool output_step(struct ks_consumer *c)
{
    if (processor_transactional(c) && ks_producer_fenced(c->output)) {
        output_fenced(c);
        return false;
    }
    if (c->flush_then_commit) {
        if (!ks_producer_idle(c->output)) {
            c->output_wait_poll = true; /* flush() returns when the producer is idle */
            return false;
        }
        c->flush_then_commit = false;
        if (c->generation >= 0) {
            c->commit_then_poll = true;
            send_commit(c, true);
            if (!c->channels[CH_COMMIT].in_flight) {
                wake_after(c, RETRY_BACKOFF_NS);
            }
            return false;
        }
        return true;
    }
    if (c->txn_then_poll) {
        bool committed = false;
        if (ks_producer_txn_ended_count(c->output, &committed) == c->txn_ended_seen) {
            c->output_wait_poll = true;
            return false;
        }
        c->txn_then_poll = false;
        if (!committed) {
            /* The output was discarded with the offsets: process the batch
             * again from the committed offsets (Kafka Streams closes its
             * tasks and rejoins on TaskMigratedException). */
            c->rejoin_needed = true;
            return true;
        }
        for (int32_t p = 0; p < c->topic_partition_count; p++) {
            if (c->assigned[p] && c->parts[p].position_known) {
                c->parts[p].committed = c->parts[p].processed_position;
                report_position(c, p, c->parts[p].committed, KS_POSITION_COMMITTED);
            }
        }
    }
    return true;
}

static void finish_batch(struct ks_consumer *c)
{
    c->processing = false;
    ks_array_set_size(c->batch, 0);
    ks_array_set_size(c->batch_partitions, 0);
    c->batch_next = 0;
    /* Before KIP-447 (client.txn.group.metadata false) the application's
     * transaction does not depend on the consumer's membership:
     * sendOffsetsToTransaction(offsets, groupId) and commitTransaction() go
     * on after the consumer learned it was removed from the group, as they
     * would in the classic consume-transform-produce loop. */
    bool member_free = processor_transactional(c) && !c->spec->cluster->client_txn_group_metadata;
    if (c->output != NULL && (c->generation >= 0 || member_free) && end_output(c)) {
        return;
    }
    switch (c->config->commit) {
    case KS_COMMIT_AFTER_PROCESS:
        /* Commits are accepted while the group prepares a rebalance, so a
         * member told to rejoin still commits what it processed. */
        if (c->generation >= 0) {
            c->commit_then_poll = true;
            send_commit(c, true);
            if (!c->channels[CH_COMMIT].in_flight) {
                wake_after(c, RETRY_BACKOFF_NS);
            }
            return;
        }
        break;
    case KS_COMMIT_ATOMIC:
        if (c->generation >= 0) {
            send_commit(c, true); /* for lag and tools only */
        }
        break;
    case KS_COMMIT_BEFORE_PROCESS:
    case KS_COMMIT_AUTO: break;
    }
    drive(c);
}

static void on_process_timer(ks_world *world, void *context);

static bool process_one(struct ks_consumer *c)
{
    ks_assert(c->batch_next < c->batch->len);
    const struct pending_record *record =
        &g_array_index(c->batch, struct pending_record, c->batch_next);
    int32_t p = g_array_index(c->batch_partitions, int32_t, c->batch_next);
    struct part *part = &c->parts[p];
    ks_assert(record->offset >= part->processed_position); /* C2 */
    if (c->output != NULL) {
        if (!ks_producer_can_send(c->output)) {
            return false; /* send() blocks: try again shortly */
        }
        /* The transform: one output record whose key names the input
         * record, so that the checker can tie the two together. */
        int64_t key =
            record->producer_index < 0
                ? -1
                : (int64_t)(record->producer_index + 1) * OUTPUT_KEY_PRODUCER_UNIT + record->seq;
        ks_producer_send_output(c->output, key);
    }
    c->batch_next++;
    if (c->config->commit == KS_COMMIT_ATOMIC && part->sink != NULL &&
        !sink_store(c, part, record->offset + 1)) {
        return true; /* fenced: the output and the offset are refused together */
    }
    struct ks_consumed_record consumed;
    memset(&consumed, 0, sizeof(consumed));
    consumed.consumer_index = c->index;
    consumed.generation = c->generation;
    consumed.topic_index = c->config->topic_index;
    consumed.partition = p;
    consumed.offset = record->offset;
    consumed.producer_index = record->producer_index;
    consumed.seq = record->seq;
    consumed.at_ns = now_ns(c);
    if (c->observer != NULL && c->observer->on_consumed != NULL) {
        c->observer->on_consumed(c->observer->context, &consumed);
    }
    part->processed_position = record->offset + 1;
    c->processed_count++;
    return true;
}

static void process_tick(struct ks_consumer *c);

static void on_process_timer(ks_world *world, void *context)
{
    struct ks_consumer *c = context;
    (void)world;
    c->process_timer = 0;
    process_tick(c);
#ifdef KS_DEBUG
    ks_consumer_check(c);
#endif
}

static void process_tick(struct ks_consumer *c)
{
    c->output_wait_send = false; /* set again below if send() still blocks */
    if (!c->processing) {
        return;
    }
    bool done = process_one(c);
    if (c->batch_next >= c->batch->len) {
        finish_batch(c);
        return;
    }
    if (!done && c->output != NULL && ks_producer_fenced(c->output)) {
        output_fenced(c);
        return;
    }
    if (!done) {
        c->output_wait_send = true; /* send() blocks until the producer takes it */
        return;
    }
    c->process_timer = ks_world_schedule(c->world, c->node, (ks_time_ns)c->config->processing_ns,
                                         KS_TIMER_CONSUMER_PROCESS, on_process_timer, c);
}

static void start_processing(struct ks_consumer *c)
{
    c->processing = true;
    c->output_wait_send = false;
    if (c->config->processing_ns <= 0) {
        while (c->batch_next < c->batch->len) {
            if (!process_one(c)) {
                c->output_wait_send = true; /* send() blocks until the producer takes it */
                return;
            }
        }
        finish_batch(c);
        return;
    }
    c->process_timer = ks_world_schedule(c->world, c->node, (ks_time_ns)c->config->processing_ns,
                                         KS_TIMER_CONSUMER_PROCESS, on_process_timer, c);
}

/* One poll(): take up to max.poll.records buffered records. */
static bool take_batch(struct ks_consumer *c)
{
    int32_t limit = c->config->max_poll_records > 0 ? c->config->max_poll_records : 500;
    int32_t taken = 0;
    /* Once every buffered record is taken (C5), the partitions left have
     * none: the scan stops there, not at the last partition (issue 16). */
    for (int32_t k = 0; k < c->topic_partition_count && taken < limit && c->buffered_count > 0;
         k++) {
        int32_t p = (c->poll_rotation + k) % c->topic_partition_count;
        struct part *part = &c->parts[p];
        if (!c->assigned[p] || buffered(part) == 0) {
            continue;
        }
        /* The first n buffered records, copied at once (a copy per record
         * was a tenth of the consumer's cost per record, issue 16). */
        guint n = MIN(buffered(part), (guint)(limit - taken));
        const struct pending_record *first_taken =
            &g_array_index(part->buffer, struct pending_record, part->buffer_head);
        part->consumed_position = first_taken[n - 1].offset + 1;
        part->position_epoch = first_taken[n - 1].leader_epoch;
        g_array_append_vals(c->batch, first_taken, n);
        guint first = c->batch_partitions->len;
        ks_array_set_size(c->batch_partitions, first + n);
        for (guint i = 0; i < n; i++) {
            g_array_index(c->batch_partitions, int32_t, first + i) = p;
        }
        taken += (int32_t)n;
        part->buffer_head += n;
        c->buffered_count -= n;
        if (buffered(part) == 0) {
            buffer_clear(c, part);
        }
        ks_assert(part->processed_position <= part->consumed_position); /* C1 */
        ks_assert(part->consumed_position <= part->fetch_position);
    }
    c->poll_rotation = (c->poll_rotation + 1) % c->topic_partition_count;
    return taken > 0;
}

/* KafkaConsumer#seek* for every assigned partition, at a poll boundary. A
 * ListOffsets request still in flight (an auto.offset.reset) is forgotten, so
 * its answer cannot be taken for the rewind's. */
static void apply_rewind(struct ks_consumer *c)
{
    c->rewind_pending = false;
    channel_reset(c, CH_LIST_OFFSETS);
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        struct part *part = &c->parts[p];
        if (!c->assigned[p]) {
            continue;
        }
        buffer_clear(c, part);
        part->idle_no_offset = false;
        set_validate_pending(c, part, false);
        part->position_epoch = -1; /* seek(offset): no epoch */
        if (c->rewind_kind == KS_CONSUMER_REWIND_OFFSET) {
            part->position_known = true;
            set_reset_pending(c, part, false);
            part->fetch_position = c->rewind_value;
            part->skip_position = -1;
            part->consumed_position = c->rewind_value;
            part->processed_position = c->rewind_value;
            if (part->sink != NULL) {
                (void)sink_store(c, part, c->rewind_value);
            }
            struct ks_cluster_event event = event_new(c, KS_EV_OFFSET_RESET, KS_REASON_REWIND, p);
            event.position = KS_POSITION_OFFSET;
            event.offset = c->rewind_value;
            emit(c, &event);
            report_position(c, p, c->rewind_value, KS_POSITION_REWIND);
        } else {
            set_reset_pending(c, part, true);
            part->reset_is_rewind = true;
            part->reset_timestamp =
                c->rewind_kind == KS_CONSUMER_REWIND_EARLIEST ? KS_LIST_OFFSETS_EARLIEST
                : c->rewind_kind == KS_CONSUMER_REWIND_LATEST
                    ? KS_LIST_OFFSETS_LATEST
                    : KS_EPOCH_BASE_MS + c->rewind_value / (int64_t)KS_NS_PER_MS;
        }
    }
}

static void on_start(ks_world *world, void *context);

static bool positions_uncommitted(const struct ks_consumer *c)
{
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        const struct part *part = &c->parts[p];
        if (c->assigned[p] && part->position_known && buffered(part) == 0 &&
            part->processed_position == part->consumed_position &&
            part->committed != part->processed_position) {
            return true;
        }
    }
    return false;
}

static void poll_step(struct ks_consumer *c)
{
    c->output_wait_poll = false; /* output_step and the check below set it again */
    if (c->output != NULL && !output_step(c)) {
        return;
    }
    if (c->processing || c->commit_then_process || c->commit_then_poll) {
        if (c->commit_then_process || c->commit_then_poll) {
            /* A synchronous commit waits for the coordinator; resend if needed. */
            if (!c->channels[CH_COMMIT].in_flight) {
                if (c->generation < 0 || c->member_id[0] == 0) {
                    commit_failed(c, KS_GROUP_ERR_UNKNOWN_MEMBER_ID);
                } else if (c->coordinator < 0) {
                    if (!c->channels[CH_GROUP].in_flight) {
                        send_find_coordinator(c);
                    }
                } else {
                    send_commit(c, c->commit_then_poll);
                }
            }
        }
        return;
    }
    /* The application is back in poll(): the max.poll.interval.ms clock
     * only runs while it processes a batch (and commits it). */
    ks_world_cancel(c->world, c->poll_interval_timer);
    c->poll_interval_timer = 0;
    if (c->rejoin_needed) {
        if (c->config->commit == KS_COMMIT_AUTO && c->generation >= 0 && c->coordinator >= 0 &&
            !c->channels[CH_COMMIT].in_flight) {
            /* onJoinPrepare: auto-commit synchronously before revoking. */
            send_commit(c, false);
        }
        start_rejoin(c, "rejoin at poll");
        return;
    }
    if (c->rewind_pending) {
        apply_rewind(c);
    }
    if (c->coordinator < 0 && !c->channels[CH_GROUP].in_flight) {
        send_find_coordinator(c);
    }
    if (!c->metadata_known || c->metadata_stale) {
        send_metadata(c);
    }
    send_list_offsets(c);
    send_validation(c); /* KafkaConsumer.updateFetchPositions: validate, then reset */
    if (c->config->commit == KS_COMMIT_AUTO && now_ns(c) >= c->next_auto_commit_ns &&
        c->coordinator >= 0 && c->generation >= 0) {
        send_commit(c, false);
        c->next_auto_commit_ns = now_ns(c) + (ks_time_ns)c->config->auto_commit_interval_ns;
    }
    if (c->output != NULL && !c->rejoin_needed && !ks_producer_can_send(c->output)) {
        /* The processor's producer is not ready (initTransactions() after
         * a restart, say): the application waits before it polls. */
        c->output_wait_poll = true;
        send_fetches(c);
        return;
    }
    if (take_batch(c)) {
        /* poll() returned records: the application has max.poll.interval.ms
         * to process them and call poll() again. */
        c->poll_interval_timer =
            ks_world_schedule(c->world, c->node, (ks_time_ns)c->config->max_poll_interval_ns,
                              KS_TIMER_CONSUMER_POLL_INTERVAL, on_poll_interval_expired, c);
        if (c->config->commit == KS_COMMIT_BEFORE_PROCESS) {
            c->commit_then_process = true;
            if (c->coordinator >= 0 && c->generation >= 0) {
                send_commit(c, false);
            } else if (c->coordinator < 0 && !c->channels[CH_GROUP].in_flight) {
                send_find_coordinator(c);
            }
        } else {
            start_processing(c);
            if (c->processing) {
                send_fetches(c); /* prefetch while processing */
            }
            return;
        }
    } else if (c->config->commit == KS_COMMIT_AUTO) {
        wake_after(c, (ks_time_ns)c->config->auto_commit_interval_ns);
    } else if (positions_uncommitted(c) && c->coordinator >= 0 && c->generation >= 0 &&
               !c->channels[CH_COMMIT].in_flight && !processor_transactional(c)) {
        /* An empty poll followed by commitSync() still commits the position
         * (after an offset reset, say), as Kafka commits allConsumed(). */
        send_commit(c, true);
    }
    send_fetches(c);
}

static void drive(struct ks_consumer *c)
{
    if (c->crashed || !c->started || c->stopped) {
        return;
    }
    switch (c->phase) {
    case PH_IDLE: return;
    case PH_FIND:
        if (!c->channels[CH_GROUP].in_flight) {
            send_find_coordinator(c);
        }
        return;
    case PH_JOIN:
        if (c->coordinator < 0) {
            c->phase = PH_FIND;
            drive(c);
            return;
        }
        if (!c->channels[CH_GROUP].in_flight) {
            send_join(c);
        }
        return;
    case PH_SYNC: return;
    case PH_OFFSETS:
        if (c->coordinator < 0) {
            c->phase = PH_FIND;
            drive(c);
            return;
        }
        if (!c->channels[CH_GROUP].in_flight) {
            send_offset_fetch(c);
        }
        return;
    case PH_ACTIVE: poll_step(c); return;
    }
}

/* ---- receiving ------------------------------------------------------------------------ */

/* Only brokers answer a consumer, with the responses below, each sent whole by
 * core/broker.c or core/group.c (the network delays and drops messages, it
 * does not corrupt them). A wrong size, a sender that is not a broker, a
 * partition outside the consumer's topic or another kind is a bug in ksim, so
 * the handlers assert instead of dropping it. */
static void handle_message(struct ks_consumer *c, ks_node_id source, uint32_t kind,
                           const void *message, size_t message_bytes);

static void on_receive(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                       const void *message, size_t message_bytes, void *context)
{
    struct ks_consumer *c = context;
    (void)world;
    (void)self;
    if (c->crashed) {
        return;
    }
    handle_message(c, source, kind, message, message_bytes);
#ifdef KS_DEBUG
    ks_consumer_check(c);
#endif
}

static void handle_message(struct ks_consumer *c, ks_node_id source, uint32_t kind,
                           const void *message, size_t message_bytes)
{
    switch (kind) {
    case KS_GROUP_FIND_COORDINATOR_RESPONSE:
        ks_assert(message_bytes == sizeof(struct ks_group_find_coordinator_response));
        on_find_coordinator_response(c, message);
        return;
    case KS_GROUP_JOIN_RESPONSE: on_join_response(c, message, message_bytes); return;
    case KS_GROUP_SYNC_RESPONSE: on_sync_response(c, message, message_bytes); return;
    case KS_GROUP_HEARTBEAT_RESPONSE: {
        ks_assert(message_bytes == sizeof(struct ks_group_simple_response));
        const struct ks_group_simple_response *r = message;
        if (!channel_end(c, CH_HEARTBEAT, r->correlation_id)) {
            return;
        }
        if (r->error_code == KS_GROUP_ERR_NONE) {
            c->last_heartbeat_ok_ns = now_ns(c);
            return;
        }
        if (r->error_code == KS_GROUP_ERR_REBALANCE_IN_PROGRESS) {
            c->last_heartbeat_ok_ns = now_ns(c);
        }
        handle_group_error(c, r->error_code);
        return;
    }
    case KS_GROUP_LEAVE_RESPONSE: return;
    case KS_GROUP_OFFSET_COMMIT_RESPONSE:
        ks_assert(message_bytes == sizeof(struct ks_group_simple_response));
        on_commit_response(c, message);
        return;
    case KS_GROUP_OFFSET_FETCH_RESPONSE:
        on_offset_fetch_response(c, message, message_bytes);
        return;
    case KS_MSG_METADATA_RESPONSE: on_metadata_response(c, message, message_bytes); return;
    case KS_MSG_LIST_OFFSETS_RESPONSE:
        ks_assert(message_bytes == sizeof(struct ks_list_offsets_response));
        on_list_offsets_response(c, message);
        return;
    case KS_MSG_OFFSET_FOR_LEADER_EPOCH_RESPONSE:
        ks_assert(message_bytes == sizeof(struct ks_offset_for_leader_epoch_response));
        on_validation_response(c, message);
        return;
    case KS_MSG_FETCH_RESPONSE: on_fetch_response(c, source, message, message_bytes); return;
    }
    ks_assert(!"unexpected message kind at a consumer");
}

/* ---- life cycle ------------------------------------------------------------------------ */

static void on_start(ks_world *world, void *context)
{
    struct ks_consumer *c = context;
    (void)world;
    c->start_timer = 0;
    c->started = true;
    c->phase = PH_FIND;
    c->next_auto_commit_ns = now_ns(c) + (ks_time_ns)c->config->auto_commit_interval_ns;
    drive(c);
#ifdef KS_DEBUG
    ks_consumer_check(c);
#endif
}

struct ks_consumer *ks_consumer_new(ks_world *world, const struct ks_cluster_spec *spec,
                                    int32_t consumer_index,
                                    const struct ks_cluster_observer *observer)
{
    ks_assert(consumer_index >= 0 && consumer_index < spec->consumer_count);
    struct ks_consumer *c = g_new0(struct ks_consumer, 1);
    c->world = world;
    c->spec = spec;
    c->config = &spec->consumers[consumer_index];
    c->observer = observer;
    c->index = consumer_index;
    c->node = ks_cluster_consumer_node(spec, consumer_index);
    c->broker_count = spec->cluster->broker_count;
    ks_assert(c->config->topic_index >= 0 && c->config->topic_index < spec->topic_count);
    c->topic_partition_count = spec->topics[c->config->topic_index].partition_count;
    c->phase = PH_IDLE;
    c->coordinator = -1;
    c->generation = -1;
    c->owned_generation = -1;
    c->next_broker = consumer_index;
    c->parts = g_new0(struct part, (gsize)c->topic_partition_count + 1);
    c->assigned = g_new0(bool, (gsize)c->topic_partition_count + 1);
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        c->parts[p].partition = p;
        c->parts[p].leader = -1;
        c->parts[p].leader_epoch = -1;
        c->parts[p].position_epoch = -1;
        c->parts[p].validate_sent_offset = -1;
        c->parts[p].committed = -1;
        c->parts[p].commit_sent = -1;
        c->parts[p].hw = -1;
        c->parts[p].skip_position = -1;
        c->parts[p].buffer = g_array_new(FALSE, TRUE, sizeof(struct pending_record));
    }
    c->owned = g_array_new(FALSE, TRUE, sizeof(struct ks_group_topic_partition));
    c->batch = g_array_new(FALSE, TRUE, sizeof(struct pending_record));
    c->batch_partitions = g_array_new(FALSE, TRUE, sizeof(int32_t));
    c->broker_reset = g_new0(bool, (gsize)c->broker_count);
    c->channel_count = CH_FETCH + c->broker_count;
    c->channels = g_new0(struct channel, (gsize)c->channel_count);
    c->fetch_order = g_new0(int32_t, 2 * (gsize)c->topic_partition_count + 1);
    c->fetch_end = g_new0(int32_t, (gsize)c->broker_count + 1);
    for (int32_t i = 0; i < c->channel_count; i++) {
        c->channels[i].c = c;
        c->channels[i].index = i;
    }
    c->start_at_ns = KS_TIME_NEVER;
    ks_world_set_receiver(world, c->node, on_receive, c);
    return c;
}

void ks_consumer_start(struct ks_consumer *c)
{
    if (c->start_at_ns == KS_TIME_NEVER) {
        /* As the producer does (ks_producer_start): one draw from the phase
         * stream puts the join in [start, start + start.jitter]; the heartbeat
         * phase then follows from when the join completes, as in the Java
         * client (AbstractCoordinator.HeartbeatThread.enable calls
         * Heartbeat.resetTimeouts). A restart before that time keeps the
         * plan (start is a time since the run began). */
        ks_time_ns jitter = (ks_time_ns)c->config->start_jitter_ns;
        c->start_at_ns = (ks_time_ns)c->config->start_ns +
                         ks_world_random_scaled(c->world, KS_RNG_PHASE, jitter + 1);
    }
    ks_time_ns now = now_ns(c);
    ks_world_cancel(c->world, c->start_timer);
    c->start_timer =
        ks_world_schedule(c->world, c->node, c->start_at_ns > now ? c->start_at_ns - now : 0,
                          KS_TIMER_CONSUMER_START, on_start, c);
}

static void cancel_timers(struct ks_consumer *c)
{
    ks_world_cancel(c->world, c->wake_timer);
    ks_world_cancel(c->world, c->process_timer);
    ks_world_cancel(c->world, c->heartbeat_timer);
    ks_world_cancel(c->world, c->poll_interval_timer);
    ks_world_cancel(c->world, c->start_timer);
    ks_world_cancel(c->world, c->reset_timer);
    c->reset_timer = 0;
    for (int32_t b = 0; b < c->broker_count; b++) {
        c->broker_reset[b] = false;
    }
    c->wake_timer = 0;
    c->process_timer = 0;
    c->heartbeat_timer = 0;
    c->poll_interval_timer = 0;
    c->start_timer = 0;
    c->output_wait_poll = false;
    c->output_wait_send = false;
    for (int32_t i = 0; i < c->channel_count; i++) {
        channel_reset(c, i);
    }
}

void ks_consumer_free(struct ks_consumer *c)
{
    if (c == NULL) {
        return;
    }
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        close_sink(c, &c->parts[p]);
        g_array_free(c->parts[p].buffer, TRUE);
    }
    g_free(c->parts);
    g_free(c->assigned);
    g_array_free(c->owned, TRUE);
    g_array_free(c->batch, TRUE);
    g_array_free(c->batch_partitions, TRUE);
    g_free(c->channels);
    g_free(c->fetch_order);
    g_free(c->fetch_end);
    g_free(c->broker_reset);
    g_free(c);
}

/* The processor's producer finished an event: wake the application if what
 * it blocks on now holds (or the producer was fenced, which it must see). */
static void on_output_change(void *context)
{
    struct ks_consumer *c = context;
    if (c->crashed || c->stopped) {
        return;
    }
    bool fenced = processor_transactional(c) && ks_producer_fenced(c->output);
    if (c->output_wait_send && c->processing && (fenced || ks_producer_can_send(c->output))) {
        c->output_wait_send = false;
        ks_world_cancel(c->world, c->process_timer);
        c->process_timer =
            ks_world_schedule(c->world, c->node, 0, KS_TIMER_CONSUMER_PROCESS, on_process_timer, c);
    }
    if (!c->output_wait_poll) {
        return;
    }
    bool ready = c->flush_then_commit ? ks_producer_idle(c->output)
                 : c->txn_then_poll
                     ? ks_producer_txn_ended_count(c->output, NULL) != c->txn_ended_seen
                     : ks_producer_can_send(c->output);
    if (fenced || ready) {
        c->output_wait_poll = false;
        wake_after(c, 0);
    }
}

void ks_consumer_set_output(struct ks_consumer *c, struct ks_producer *output)
{
    c->output = output;
    ks_producer_set_listener(output, on_output_change, c);
}

void ks_consumer_on_crash(struct ks_consumer *c)
{
    cancel_timers(c);
    revoke_all(c);
    c->crashed = true;
    c->phase = PH_IDLE;
    c->coordinator = -1;
    c->member_id[0] = 0;
    c->generation = -1;
    c->rejoin_needed = false;
    c->processing = false;
    c->commit_then_process = false;
    c->commit_then_poll = false;
    c->flush_then_commit = false;
    c->txn_then_poll = false;
    c->rewind_pending = false;
    c->metadata_known = false;
    ks_array_set_size(c->owned, 0);
    c->owned_generation = -1;
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        c->parts[p].committed = -1;
        c->parts[p].hw = -1;
        c->parts[p].skip_position = -1;
        c->parts[p].leader = -1;
        c->parts[p].leader_epoch = -1;
    }
#ifdef KS_DEBUG
    ks_consumer_check(c);
#endif
}

void ks_consumer_on_restart(struct ks_consumer *c)
{
    c->crashed = false;
    c->stopped = false;
    c->incarnation++;
    ks_world_set_receiver(c->world, c->node, on_receive, c);
    if (!c->started) {
        ks_consumer_start(c);
        return;
    }
    c->phase = PH_FIND;
    c->next_auto_commit_ns = now_ns(c) + (ks_time_ns)c->config->auto_commit_interval_ns;
    wake_after(c, 0);
#ifdef KS_DEBUG
    ks_consumer_check(c);
#endif
}

bool ks_consumer_caught_up(const struct ks_consumer *c)
{
    if (c->crashed || c->stopped) {
        return true; /* it consumes nothing more: the rest of its group must */
    }
    if (c->phase != PH_ACTIVE || c->rejoin_needed || c->processing || c->commit_then_process ||
        c->commit_then_poll || c->generation < 0 || c->rewind_pending || c->flush_then_commit ||
        c->txn_then_poll) {
        return false;
    }
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        const struct part *part = &c->parts[p];
        if (!c->assigned[p]) {
            continue;
        }
        if (part->idle_no_offset) {
            continue;
        }
        if (!part->position_known || part->reset_pending || part->hw < 0 || buffered(part) > 0 ||
            part->processed_position < part->hw) {
            return false;
        }
        if (c->config->commit != KS_COMMIT_ATOMIC && part->committed < part->processed_position) {
            return false;
        }
    }
    return true;
}

void ks_consumer_rewind(struct ks_consumer *c, int kind, int64_t value)
{
    ks_assert(kind == KS_CONSUMER_REWIND_EARLIEST || kind == KS_CONSUMER_REWIND_LATEST ||
              kind == KS_CONSUMER_REWIND_OFFSET || kind == KS_CONSUMER_REWIND_TIME);
    if (c->crashed) {
        return;
    }
    c->rewind_pending = true;
    c->rewind_kind = kind;
    c->rewind_value = value;
    wake_after(c, 0);
#ifdef KS_DEBUG
    ks_consumer_check(c);
#endif
}

/* ---- whole-object check ------------------------------------------------------------------ */

static void check_channels(const struct ks_consumer *c)
{
    ks_assert(c->channel_count == CH_FETCH + c->broker_count);
    for (int32_t i = 0; i < c->channel_count; i++) {
        const struct channel *ch = &c->channels[i];
        ks_assert(ch->c == c);
        ks_assert(ch->index == i);
        /* channel_begin arms the timeout; every way out (answer, timeout,
         * reset) disarms it with the in-flight flag. */
        ks_assert(ch->in_flight == (ch->timeout_timer != 0));
    }
}

/* One partition of the assignment: C1 and what the fetch path keeps. */
static void check_assigned_part(const struct ks_consumer *c, const struct part *part)
{
    ks_assert(part->fetch_broker >= 0 && part->fetch_broker <= c->broker_count);
    if (fetch_in_flight(c, part)) {
        ks_assert(part->fetch_correlation_id <= c->correlation_counter); /* C3 */
    }
    if (!part->position_known) {
        return;
    }
    ks_assert(part->processed_position <= part->consumed_position); /* C1 */
    ks_assert(part->consumed_position <= part->fetch_position);     /* C1 */
    /* Fetched, not yet polled: ascending, between the last poll and the next fetch. */
    int64_t previous = part->consumed_position - 1;
    ks_assert(part->buffer_head <= part->buffer->len);
    for (guint i = part->buffer_head; i < part->buffer->len; i++) {
        int64_t offset = g_array_index(part->buffer, struct pending_record, i).offset;
        ks_assert(offset > previous);
        ks_assert(offset < part->fetch_position);
        previous = offset;
    }
}

/* The poll in progress: C2 for the records still to process. */
static void check_poll(const struct ks_consumer *c)
{
    ks_assert(c->batch->len == c->batch_partitions->len);
    ks_assert(c->batch_next <= c->batch->len);
    if (c->processing) {
        ks_assert(c->batch_next < c->batch->len); /* finish_batch ends it at the last one */
        ks_assert(c->process_timer != 0);
        ks_assert(!c->commit_then_process);
    }
    if (c->commit_then_process) {
        ks_assert(c->batch_next == 0); /* before-process: nothing done before the ack */
        ks_assert(c->batch->len > 0);
    }
    int64_t *next_offset = g_new(int64_t, (gsize)c->topic_partition_count + 1);
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        next_offset[p] = c->parts[p].processed_position;
    }
    for (guint i = c->batch_next; i < c->batch->len; i++) {
        int32_t p = g_array_index(c->batch_partitions, int32_t, i);
        ks_assert(p >= 0 && p < c->topic_partition_count);
        ks_assert(c->assigned[p]); /* a rejoin waits for the batch (start_rejoin) */
        int64_t offset = g_array_index(c->batch, struct pending_record, i).offset;
        ks_assert(offset >= next_offset[p]); /* C2 */
        next_offset[p] = offset + 1;
    }
    g_free(next_offset);
}

void ks_consumer_check(const struct ks_consumer *c)
{
    ks_assert(c->coordinator == -1 || (c->coordinator >= 1 && c->coordinator <= c->broker_count));
    if (c->generation >= 0) {
        ks_assert(c->member_id[0] != 0); /* a generation is joined under a member id */
    }
    check_channels(c);
    int32_t assigned_count = 0;
    int32_t reset_pending_count = 0;
    int32_t validate_pending_count = 0;
    guint buffered_count = 0;
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        const struct part *part = &c->parts[p];
        ks_assert(part->partition == p);
        reset_pending_count += part->reset_pending ? 1 : 0;
        validate_pending_count += part->validate_pending ? 1 : 0;
        buffered_count += buffered(part);
        if (c->assigned[p]) {
            assigned_count++;
            check_assigned_part(c, part);
        } else {
            /* revoke_all emptied it, and only assigned partitions are fetched. */
            ks_assert(buffered(part) == 0);
            ks_assert(!fetch_in_flight(c, part));
            ks_assert(part->sink == NULL);
        }
    }
    ks_assert(assigned_count == c->assigned_count);
    ks_assert(reset_pending_count == c->reset_pending_count);       /* C4 */
    ks_assert(validate_pending_count == c->validate_pending_count); /* C4 */
    ks_assert(buffered_count == c->buffered_count);                 /* C5 */
    check_poll(c);
    if (c->crashed || c->stopped) {
        ks_assert(c->phase == PH_IDLE);
        ks_assert(!c->processing);
        ks_assert(c->assigned_count == 0);
    }
    if (c->crashed) {
        ks_assert(!c->rewind_pending);
    }
}

int32_t ks_consumer_generation(const struct ks_consumer *c)
{
    return c->generation;
}

int64_t ks_consumer_processed_count(const struct ks_consumer *c)
{
    return c->processed_count;
}

int32_t ks_consumer_assignment(const struct ks_consumer *c, int32_t *out, int32_t out_count_max)
{
    int32_t n = 0;
    for (int32_t p = 0; p < c->topic_partition_count; p++) {
        if (c->assigned[p]) {
            if (n < out_count_max) {
                out[n] = p;
            }
            n++;
        }
    }
    return n;
}
