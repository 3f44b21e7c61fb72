/*
** core/group.c: the group coordinator inside a broker (Kafka's classic
** GroupCoordinator and GroupMetadataManager, eager rebalancing).
**
** Ownership. The coordinator owns the groups of every __consumer_offsets
** partition its broker leads. ks_group_coordinator_on_leadership marks a
** partition LOADING and arms a zero-delay load timer; the load reads the local
** log from its start to its LEO (as Kafka's loader reads to the log end: a new
** leader keeps its whole log, so records above its HW become committed) and
** rebuilds the latest committed offset per key and each group's generation.
** Requests for a LOADING partition get COORDINATOR_LOAD_IN_PROGRESS; for a
** partition not led here, NOT_COORDINATOR. FindCoordinator is answered by any
** broker from its metadata cache.
**
** Records in __consumer_offsets (Kafka's own layouts, big-endian; strings are
** int16 length + UTF-8 bytes):
**
**   offset commit key (version 1)      group metadata key (version 2)
**     0  int16   version = 1              0  int16   version = 2
**     2  string  group id                 2  string  group id
**     .  string  topic name
**     .  int32   partition
**
**   offset commit value (version 1)    group metadata value (ksim version 1)
**     0  int16   version = 1              0  int16   version = 1
**     2  int64   offset (next to read)    2  string  protocol type "consumer"
**    10  string  metadata ("")            .  int32   generation
**     .  int64   commit timestamp (ms)    .  string  protocol (assignor name)
**     .  int64   expire timestamp (-1)    .  string  leader member id
**                                         .  int32   member count, then per member:
**                                              string  member id
**                                              string  client id
**                                              string  subscribed topic name
**                                              int64   session timeout (ns)
**                                              int64   rebalance timeout (ns)
**                                              int32   assignor
**                                              int32   assigned count, then per
**                                                      partition: string topic,
**                                                      int32 partition
**
** As Kafka's GroupMetadataValue, the group record lists the members and
** their assignments, written when the leader's SyncGroup completes a
** generation; a new coordinator loads the group Stable with those members
** and restarts their session timers, so members carry on without a
** rebalance. (Version 0, without members, is still read.)
**
** A TxnOffsetCommit (KIP-98) writes the same offset commit records in a
** transactional batch under the producer's id and epoch; its offsets stay
** pending for that producer until the transaction's COMMIT or ABORT marker
** reaches the partition (see "transactional offset commits" below).
**
** A commit is acknowledged only when ks_broker_append_internal reports the HW
** past it; only then does the in-memory cache change. So an unclean election
** of an offsets partition can lose acknowledged commits, as in Kafka.
**
** Group state machine (Kafka's GroupState):
**
**   EMPTY --join--> PREPARING_REBALANCE --all joined / rebalance timeout-->
**   COMPLETING_REBALANCE --leader's SyncGroup persisted--> STABLE
**   STABLE / COMPLETING --join, leave, session expiry--> PREPARING_REBALANCE
**   PREPARING --no member left--> EMPTY (generation + 1)
**
** A new member first gets MEMBER_ID_REQUIRED with its id and joins again
** with it (KIP-394). Members waiting for a JoinGroup or SyncGroup answer
** need no heartbeat (hasSatisfiedHeartbeat); others leave after
** session.timeout.ms without one. A member that does not rejoin within the
** rebalance timeout (the largest max.poll.interval.ms) is dropped from the
** round.
**
** The first rebalance of an empty group waits group.initial.rebalance.delay.ms
** in whole windows (Kafka's InitialDelayedJoin, and the new coordinator's
** GroupMetadataManager.tryCompleteInitialRebalanceElseSchedule): when a window
** ends and a new member joined during it, another window of
** min(delay, remaining) follows, where remaining starts at the rebalance
** timeout minus the delay and shrinks by each window; otherwise the join
** completes. So two members joining together wait two windows (about 6 s with
** the 3 s default), not one window from the last join.
**
** Invariants (asserted; ks_group_coordinator_check checks G1 and G3 with the
** group and member bookkeeping after every coordinator event in KS_DEBUG
** builds):
**   G1  a group in STABLE or COMPLETING_REBALANCE has a leader among its members.
**   G2  the generation only grows (in the state machine; a load takes the
**       generation the log holds, see load_group_value).
**   G3  a member's session timer is armed while it is in the group.
*/
#include "group.h"

#include "assignor.h"
#include "base.h"
#include "batch.h"
#include "broker.h"
#include "group_proto.h"
#include "proto.h"

#include <glib.h>
#include <stdio.h>
#include <string.h>

/* An OffsetFetch entry carries the topic index in 16 bits (group_proto.h):
 * every user topic and the two internal ones fit. */
_Static_assert(KS_TOPIC_COUNT_MAX + 2 <= INT16_MAX, "a topic index fits 16 bits");

#define KS_OFFSETS_TOPIC           "__consumer_offsets"
#define KS_TIMER_GROUP_LOAD        450u
#define KS_TIMER_GROUP_SESSION     451u
#define KS_TIMER_GROUP_JOIN        452u
#define OFFSET_COMMIT_EVENT_GAP_NS KS_NS_PER_S

enum partition_state { PART_NOT_OWNED, PART_LOADING, PART_OWNED };

enum group_state { GROUP_EMPTY, GROUP_PREPARING, GROUP_COMPLETING, GROUP_STABLE };

struct coordinator;
struct group;

struct member {
    struct group *group; /* not owned */
    char member_id[KS_GROUP_MEMBER_ID_BYTES];
    char client_id[KS_GROUP_CLIENT_ID_BYTES];
    ks_node_id node;
    int32_t topic_index;
    int64_t session_timeout_ns;
    int64_t rebalance_timeout_ns;
    int32_t assignor;
    int32_t owned_generation;
    GArray *owned;      /* struct ks_group_topic_partition */
    GArray *assignment; /* struct ks_group_topic_partition */
    bool join_pending;
    int32_t join_correlation;
    bool sync_pending;
    int32_t sync_correlation;
    ks_timer_id session_timer;
};

struct offset_entry {
    int32_t topic_index;
    int32_t partition;
    int64_t offset;
    int64_t record_offset; /* where its commit record is in the log; -1 unknown */
};

/* A transactional offset commit waiting for its transaction's marker
 * (GroupMetadata.pendingTransactionalOffsetCommits). */
struct txn_offset {
    int64_t producer_id;
    int32_t topic_index;
    int32_t partition;
    int64_t offset;
    int64_t record_offset; /* its record's log offset once appended; -1 before */
};

/* What started or extended the current rebalance round (KS_EV_REBALANCE). */
struct rebalance_cause {
    enum ks_event_reason reason;
    char member_id[KS_GROUP_MEMBER_ID_BYTES]; /* "" for KS_REASON_GROUP_APPEND_FAILED */
};

#define REBALANCE_CAUSES_MAX 32

struct group {
    struct coordinator *coordinator; /* not owned */
    char group_id[KS_GROUP_ID_BYTES];
    int32_t partition; /* of __consumer_offsets */
    enum group_state state;
    int32_t generation;
    int32_t protocol; /* enum ks_assignor */
    char leader_id[KS_GROUP_MEMBER_ID_BYTES];
    GPtrArray *members;     /* struct member, owned, in join order */
    GArray *offsets;        /* struct offset_entry, sorted by (topic, partition) */
    GArray *txn_offsets;    /* struct txn_offset, in arrival order */
    GPtrArray *pending_ids; /* char*, owned: ids given with MEMBER_ID_REQUIRED (KIP-394) */
    ks_timer_id join_timer;
    bool initial_delay; /* the first rebalance of an empty group is waiting */
    /* The initial delay's window (InitialDelayedJoin): its length, the
     * rebalance time left after it, and whether a new member joined during
     * it (then another window follows). */
    int64_t initial_window_ns;
    int64_t initial_remaining_ns;
    bool new_member_added;
    /* Why the current round started, then what joined it (bounded: the
     * causes past REBALANCE_CAUSES_MAX are only counted). */
    struct rebalance_cause causes[REBALANCE_CAUSES_MAX];
    int32_t cause_count;
    int64_t causes_dropped;
    ks_time_ns last_commit_event_ns;
    bool commit_event_ever;
    int64_t commits_since_event;
};

/* One append in flight; owned by the coordinator's pending list. */
struct pending_append {
    struct coordinator *coordinator;
    char group_id[KS_GROUP_ID_BYTES];
    int32_t partition;
    uint32_t load_epoch; /* the partition's ownership epoch at send time */
    bool is_sync;        /* group metadata for a SyncGroup, else offset commit */
    bool is_txn;         /* a TxnOffsetCommit of producer_id */
    int64_t producer_id;
    int32_t generation;
    ks_node_id reply_node;
    int32_t correlation_id;
    GArray *entries; /* struct offset_entry (commits) */
    uint64_t guard;  /* a TxnOffsetCommit's verification guard (KIP-890), or 0 */
};

struct coordinator {
    struct ks_broker *broker; /* not owned */
    ks_world *world;          /* not owned */
    int32_t offsets_topic;    /* -1 if there is none */
    int32_t partition_count;
    enum partition_state *partition_states;
    uint32_t *load_epochs;
    ks_timer_id load_timer;
    GPtrArray *groups;  /* struct group, owned, sorted by group id */
    GPtrArray *pending; /* struct pending_append, owned */
};

/* struct ks_group_coordinator is the public name of struct coordinator. */
struct ks_group_coordinator {
    struct coordinator c;
};

static void coordinator_check(const struct coordinator *c);

/* ---- pure helpers ---------------------------------------------------------- */

int32_t ks_group_java_string_hash(const char *s)
{
    uint32_t hash = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p != 0) {
        uint32_t code_point;
        size_t length = 1;
        if (p[0] < 0x80) {
            code_point = p[0];
        } else if ((p[0] & 0xE0) == 0xC0 && (p[1] & 0xC0) == 0x80) {
            code_point = ((uint32_t)(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
            length = 2;
        } else if ((p[0] & 0xF0) == 0xE0 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80) {
            code_point =
                ((uint32_t)(p[0] & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
            length = 3;
        } else if ((p[0] & 0xF8) == 0xF0 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80 &&
                   (p[3] & 0xC0) == 0x80) {
            code_point = ((uint32_t)(p[0] & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) |
                         ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
            length = 4;
        } else {
            code_point = p[0]; /* invalid byte: one unit */
        }
        if (code_point >= 0x10000) {
            /* A UTF-16 surrogate pair: two units. */
            uint32_t v = code_point - 0x10000;
            hash = hash * 31u + (0xD800u + (v >> 10));
            hash = hash * 31u + (0xDC00u + (v & 0x3FFu));
        } else {
            hash = hash * 31u + code_point;
        }
        p += length;
    }
    return (int32_t)hash;
}

int32_t ks_group_offsets_partition(const char *group_id, int32_t partition_count)
{
    ks_assert(partition_count > 0);
    int32_t hash = ks_group_java_string_hash(group_id);
    int32_t positive = hash == INT32_MIN ? 0 : (hash < 0 ? -hash : hash);
    return positive % partition_count;
}

/* ---- record encoding --------------------------------------------------------- */

static void put_i16(GByteArray *out, int16_t v)
{
    uint8_t b[2] = { (uint8_t)((uint16_t)v >> 8), (uint8_t)v };
    g_byte_array_append(out, b, 2);
}

static void put_i32(GByteArray *out, int32_t v)
{
    uint32_t u = (uint32_t)v;
    uint8_t b[4] = { (uint8_t)(u >> 24), (uint8_t)(u >> 16), (uint8_t)(u >> 8), (uint8_t)u };
    g_byte_array_append(out, b, 4);
}

static void put_i64(GByteArray *out, int64_t v)
{
    put_i32(out, (int32_t)((uint64_t)v >> 32));
    put_i32(out, (int32_t)(uint32_t)(uint64_t)v);
}

static void put_string(GByteArray *out, const char *s)
{
    size_t n = strlen(s);
    ks_assert(n < 32768);
    put_i16(out, (int16_t)n);
    g_byte_array_append(out, (const guint8 *)s, (guint)n);
}

struct reader {
    const uint8_t *bytes;
    int32_t count;
    int32_t position;
    bool bad;
};

static bool take(struct reader *r, int32_t n)
{
    if (r->bad || n < 0 || r->position + n > r->count) {
        r->bad = true;
        return false;
    }
    return true;
}

static int16_t get_i16(struct reader *r)
{
    if (!take(r, 2)) {
        return 0;
    }
    const uint8_t *b = r->bytes + r->position;
    r->position += 2;
    return (int16_t)(uint16_t)(((uint16_t)b[0] << 8) | b[1]);
}

static int32_t get_i32(struct reader *r)
{
    if (!take(r, 4)) {
        return 0;
    }
    const uint8_t *b = r->bytes + r->position;
    r->position += 4;
    return (int32_t)(((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) |
                     b[3]);
}

static int64_t get_i64(struct reader *r)
{
    uint64_t high = (uint32_t)get_i32(r);
    uint64_t low = (uint32_t)get_i32(r);
    return (int64_t)((high << 32) | low);
}

/* Copies a string into out (size out_bytes), NUL-terminated. */
static void get_string(struct reader *r, char *out, size_t out_bytes)
{
    int16_t n = get_i16(r);
    if (!take(r, n) || (size_t)n >= out_bytes) {
        r->bad = true;
        out[0] = 0;
        return;
    }
    memcpy(out, r->bytes + r->position, (size_t)n);
    out[n] = 0;
    r->position += n;
}

/* ---- lookups ------------------------------------------------------------------ */

static const char *topic_name(struct coordinator *c, int32_t topic_index)
{
    const struct ks_cluster_spec *spec = ks_broker_spec(c->broker);
    if (topic_index >= 0 && topic_index < spec->topic_count) {
        return spec->topics[topic_index].name;
    }
    if (topic_index == c->offsets_topic) {
        return KS_OFFSETS_TOPIC;
    }
    return "?";
}

static int32_t topic_partition_count(struct coordinator *c, int32_t topic_index)
{
    const struct ks_cluster_spec *spec = ks_broker_spec(c->broker);
    if (topic_index >= 0 && topic_index < spec->topic_count) {
        return spec->topics[topic_index].partition_count;
    }
    return 0;
}

static int compare_group_id(const void *a, const void *b)
{
    const struct group *ga = *(struct group *const *)a;
    const struct group *gb = *(struct group *const *)b;
    return strcmp(ga->group_id, gb->group_id);
}

static struct group *find_group(struct coordinator *c, const char *group_id)
{
    for (guint i = 0; i < c->groups->len; i++) {
        struct group *group = g_ptr_array_index(c->groups, i);
        if (strcmp(group->group_id, group_id) == 0) {
            return group;
        }
    }
    return NULL;
}

static struct group *get_or_create_group(struct coordinator *c, const char *group_id,
                                         int32_t partition)
{
    struct group *group = find_group(c, group_id);
    if (group != NULL) {
        return group;
    }
    group = g_new0(struct group, 1);
    group->coordinator = c;
    g_strlcpy(group->group_id, group_id, sizeof(group->group_id));
    group->partition = partition;
    group->state = GROUP_EMPTY;
    group->generation = 0;
    group->members = g_ptr_array_new();
    group->offsets = g_array_new(FALSE, TRUE, sizeof(struct offset_entry));
    group->txn_offsets = g_array_new(FALSE, TRUE, sizeof(struct txn_offset));
    group->pending_ids = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(c->groups, group);
    g_ptr_array_sort(c->groups, compare_group_id);
    return group;
}

static struct member *find_member(struct group *group, const char *member_id)
{
    for (guint i = 0; i < group->members->len; i++) {
        struct member *m = g_ptr_array_index(group->members, i);
        if (strcmp(m->member_id, member_id) == 0) {
            return m;
        }
    }
    return NULL;
}

static void member_free(struct coordinator *c, struct member *m)
{
    ks_world_cancel(c->world, m->session_timer);
    g_array_free(m->owned, TRUE);
    g_array_free(m->assignment, TRUE);
    g_free(m);
}

static void group_free(struct coordinator *c, struct group *group)
{
    for (guint i = 0; i < group->members->len; i++) {
        member_free(c, g_ptr_array_index(group->members, i));
    }
    g_ptr_array_free(group->members, TRUE);
    g_array_free(group->offsets, TRUE);
    g_array_free(group->txn_offsets, TRUE);
    g_ptr_array_free(group->pending_ids, TRUE);
    ks_world_cancel(c->world, group->join_timer);
    g_free(group);
}

static void set_offset(struct group *group, int32_t topic_index, int32_t partition, int64_t offset,
                       int64_t record_offset)
{
    guint i = 0;
    for (; i < group->offsets->len; i++) {
        struct offset_entry *e = &g_array_index(group->offsets, struct offset_entry, i);
        if (e->topic_index == topic_index && e->partition == partition) {
            e->offset = offset;
            e->record_offset = record_offset;
            return;
        }
        if (e->topic_index > topic_index ||
            (e->topic_index == topic_index && e->partition > partition)) {
            break;
        }
    }
    struct offset_entry fresh = { topic_index, partition, offset, record_offset };
    g_array_insert_val(group->offsets, i, fresh);
}

static int64_t get_offset(const struct group *group, int32_t topic_index, int32_t partition)
{
    for (guint i = 0; i < group->offsets->len; i++) {
        const struct offset_entry *e = &g_array_index(group->offsets, struct offset_entry, i);
        if (e->topic_index == topic_index && e->partition == partition) {
            return e->offset;
        }
    }
    return -1;
}

/* ---- sending -------------------------------------------------------------------- */

static void send_bytes(struct coordinator *c, ks_node_id target, uint32_t kind, const void *bytes,
                       size_t byte_count)
{
    ks_world_send(c->world, ks_broker_node(c->broker), target, kind, bytes, byte_count);
}

static void send_simple(struct coordinator *c, ks_node_id target, uint32_t kind,
                        int32_t correlation_id, int16_t error_code)
{
    struct ks_group_simple_response response;
    memset(&response, 0, sizeof(response));
    response.correlation_id = correlation_id;
    response.error_code = error_code;
    send_bytes(c, target, kind, &response, sizeof(response));
}

static void send_join_error(struct coordinator *c, ks_node_id target, int32_t correlation_id,
                            int16_t error_code)
{
    struct ks_group_join_response response;
    memset(&response, 0, sizeof(response));
    response.correlation_id = correlation_id;
    response.error_code = error_code;
    response.generation = -1;
    send_bytes(c, target, KS_GROUP_JOIN_RESPONSE, &response, sizeof(response));
}

static void send_sync_response(struct coordinator *c, struct member *m, int16_t error_code)
{
    int32_t count = error_code == KS_GROUP_ERR_NONE ? (int32_t)m->assignment->len : 0;
    size_t bytes = sizeof(struct ks_group_sync_response) +
                   (size_t)count * sizeof(struct ks_group_topic_partition);
    uint8_t *message = g_malloc0(bytes);
    struct ks_group_sync_response response;
    memset(&response, 0, sizeof(response));
    response.correlation_id = m->sync_correlation;
    response.error_code = error_code;
    response.generation = m->group->generation;
    response.partition_count = count;
    memcpy(message, &response, sizeof(response));
    if (count > 0) {
        memcpy(message + sizeof(response), m->assignment->data,
               (size_t)count * sizeof(struct ks_group_topic_partition));
    }
    send_bytes(c, m->node, KS_GROUP_SYNC_RESPONSE, message, bytes);
    g_free(message);
    m->sync_pending = false;
}

/* Ownership check shared by every group request. Returns NONE when this
 * broker coordinates the group's partition and it is loaded. */
static int16_t check_coordinator(struct coordinator *c, const char *group_id,
                                 int32_t *partition_out)
{
    if (c->offsets_topic < 0) {
        return KS_GROUP_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    int32_t partition = ks_group_offsets_partition(group_id, c->partition_count);
    *partition_out = partition;
    switch (c->partition_states[partition]) {
    case PART_NOT_OWNED: return KS_GROUP_ERR_NOT_COORDINATOR;
    case PART_LOADING: return KS_GROUP_ERR_COORDINATOR_LOAD_IN_PROGRESS;
    case PART_OWNED: return KS_GROUP_ERR_NONE;
    }
    return KS_GROUP_ERR_NOT_COORDINATOR;
}

/* ---- appends to __consumer_offsets ------------------------------------------ */

static int64_t now_ms(struct coordinator *c)
{
    return KS_EPOCH_BASE_MS + (int64_t)(ks_world_now_ns(c->world) / KS_NS_PER_MS);
}

/* The offset commit records of `entries`; a TxnOffsetCommit's batch is
 * transactional under the producer's id and epoch, without a sequence
 * (GroupMetadataManager.generateOffsetRecords: RecordBatch.NO_SEQUENCE). */
static GByteArray *build_commit_batch(struct coordinator *c, const char *group_id,
                                      const GArray *entries, int64_t producer_id,
                                      int16_t producer_epoch)
{
    struct ks_batch_builder builder;
    int64_t timestamp = now_ms(c);
    ks_batch_builder_init(&builder, timestamp, producer_id, producer_epoch, -1);
    if (producer_id >= 0) {
        builder.attributes = (int16_t)(builder.attributes | KS_ATTR_TRANSACTIONAL);
    }
    for (guint i = 0; i < entries->len; i++) {
        const struct offset_entry *e = &g_array_index(entries, struct offset_entry, i);
        GByteArray *key = g_byte_array_new();
        GByteArray *value = g_byte_array_new();
        put_i16(key, 1);
        put_string(key, group_id);
        put_string(key, topic_name(c, e->topic_index));
        put_i32(key, e->partition);
        put_i16(value, 1);
        put_i64(value, e->offset);
        put_string(value, "");
        put_i64(value, timestamp);
        put_i64(value, -1);
        ks_batch_builder_add(&builder, timestamp, key->data, (int32_t)key->len, value->data,
                             (int32_t)value->len, NULL, 0);
        g_byte_array_unref(key);
        g_byte_array_unref(value);
    }
    GByteArray *batch = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    return batch;
}

static GByteArray *build_group_batch(struct coordinator *c, const struct group *group)
{
    struct ks_batch_builder builder;
    int64_t timestamp = now_ms(c);
    ks_batch_builder_init(&builder, timestamp, -1, -1, -1);
    GByteArray *key = g_byte_array_new();
    GByteArray *value = g_byte_array_new();
    put_i16(key, 2);
    put_string(key, group->group_id);
    put_i16(value, 1);
    put_string(value, "consumer");
    put_i32(value, group->generation);
    put_string(value, ks_assignor_name((enum ks_assignor)group->protocol));
    put_string(value, group->leader_id);
    put_i32(value, (int32_t)group->members->len);
    for (guint i = 0; i < group->members->len; i++) {
        const struct member *m = g_ptr_array_index(group->members, i);
        put_string(value, m->member_id);
        put_string(value, m->client_id);
        put_string(value, topic_name(c, m->topic_index));
        put_i64(value, m->session_timeout_ns);
        put_i64(value, m->rebalance_timeout_ns);
        put_i32(value, m->assignor);
        put_i32(value, (int32_t)m->assignment->len);
        for (guint k = 0; k < m->assignment->len; k++) {
            const struct ks_group_topic_partition *tp =
                &g_array_index(m->assignment, struct ks_group_topic_partition, k);
            put_string(value, topic_name(c, tp->topic_index));
            put_i32(value, tp->partition);
        }
    }
    ks_batch_builder_add(&builder, timestamp, key->data, (int32_t)key->len, value->data,
                         (int32_t)value->len, NULL, 0);
    g_byte_array_unref(key);
    g_byte_array_unref(value);
    GByteArray *batch = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    return batch;
}

static void on_append_done(void *context, int16_t error, int64_t base_offset);

static void append(struct coordinator *c, struct pending_append *pending, GByteArray *batch)
{
    g_ptr_array_add(c->pending, pending);
    if (pending->is_txn) {
        ks_broker_append_internal_guarded(c->broker, c->offsets_topic, pending->partition,
                                          batch->data, batch->len, pending->guard, on_append_done,
                                          pending);
    } else {
        ks_broker_append_internal(c->broker, c->offsets_topic, pending->partition, batch->data,
                                  batch->len, on_append_done, pending);
    }
    g_byte_array_unref(batch);
}

/* Kafka's GroupMetadataManager error mapping for failed appends. */
static int16_t map_append_error(int16_t error)
{
    switch (error) {
    case KS_ERR_NONE: return KS_GROUP_ERR_NONE;
    case KS_ERR_UNKNOWN_TOPIC_OR_PARTITION:
    case KS_ERR_NOT_ENOUGH_REPLICAS:
    case KS_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case KS_ERR_REQUEST_TIMED_OUT: return KS_GROUP_ERR_COORDINATOR_NOT_AVAILABLE;
    case KS_ERR_NOT_LEADER_OR_FOLLOWER:
    case KS_ERR_KAFKA_STORAGE_ERROR: return KS_GROUP_ERR_NOT_COORDINATOR;
    /* "We may see INVALID_TXN_STATE ... due to transaction verification",
     * returned unmapped (maybeConvertOffsetCommitError). */
    case KS_ERR_INVALID_TXN_STATE: return KS_GROUP_ERR_INVALID_TXN_STATE;
    }
    return KS_GROUP_ERR_UNKNOWN_SERVER_ERROR;
}

/* ---- rebalancing ------------------------------------------------------------------ */

static void prepare_rebalance(struct coordinator *c, struct group *group,
                              enum ks_event_reason reason, const char *member_id);
static void maybe_complete_join(struct coordinator *c, struct group *group);

static void on_session_expired(ks_world *world, void *context);

static void arm_session(struct coordinator *c, struct member *m)
{
    ks_world_cancel(c->world, m->session_timer);
    m->session_timer =
        ks_world_schedule(c->world, ks_broker_node(c->broker), (ks_time_ns)m->session_timeout_ns,
                          KS_TIMER_GROUP_SESSION, on_session_expired, m);
    ks_assert(m->session_timer != 0); /* G3 */
}

/* Adds a cause to the round in progress; member_id may be NULL. */
static void note_cause(struct group *group, enum ks_event_reason reason, const char *member_id)
{
    if (group->cause_count == REBALANCE_CAUSES_MAX) {
        group->causes_dropped++;
        return;
    }
    struct rebalance_cause *cause = &group->causes[group->cause_count++];
    cause->reason = reason;
    g_strlcpy(cause->member_id, member_id != NULL ? member_id : "", sizeof(cause->member_id));
}

static void remove_member(struct coordinator *c, struct group *group, struct member *m,
                          enum ks_event_reason reason)
{
    char member_id[KS_GROUP_MEMBER_ID_BYTES];
    g_strlcpy(member_id, m->member_id, sizeof(member_id));
    bool was_leader = strcmp(group->leader_id, m->member_id) == 0;
    g_ptr_array_remove(group->members, m);
    member_free(c, m);
    if (was_leader) {
        group->leader_id[0] = 0;
        if (group->members->len > 0) {
            struct member *next = g_ptr_array_index(group->members, 0);
            g_strlcpy(group->leader_id, next->member_id, sizeof(group->leader_id));
        }
    }
    switch (group->state) {
    case GROUP_EMPTY: break;
    case GROUP_PREPARING:
        note_cause(group, reason, member_id);
        maybe_complete_join(c, group);
        break;
    case GROUP_COMPLETING:
    case GROUP_STABLE: prepare_rebalance(c, group, reason, member_id); break;
    }
}

static void on_session_expired(ks_world *world, void *context)
{
    struct member *m = context;
    struct group *group = m->group;
    struct coordinator *c = group->coordinator;
    (void)world;
    m->session_timer = 0;
    if (m->join_pending || m->sync_pending) {
        /* Kafka's MemberMetadata.hasSatisfiedHeartbeat: a member waiting for
         * a JoinGroup or SyncGroup answer needs no heartbeat (the rebalance
         * timeout bounds that wait instead). */
        arm_session(c, m);
    } else {
        remove_member(c, group, m,
                      KS_REASON_MEMBER_SESSION_TIMEOUT); /* G3: it leaves with its timer */
    }
#ifdef KS_DEBUG
    coordinator_check(c);
#endif
}

static void on_join_deadline(ks_world *world, void *context)
{
    struct group *group = context;
    struct coordinator *c = group->coordinator;
    (void)world;
    group->join_timer = 0;
    if (group->initial_delay && group->new_member_added && group->initial_remaining_ns != 0) {
        /* InitialDelayedJoin.onComplete: a member joined during this window,
         * so wait another one, as long as rebalance time remains. */
        int64_t configured = ks_broker_spec(c->broker)->cluster->group_initial_rebalance_delay_ns;
        int64_t window =
            configured < group->initial_remaining_ns ? configured : group->initial_remaining_ns;
        int64_t remaining = group->initial_remaining_ns - group->initial_window_ns;
        group->new_member_added = false;
        group->initial_window_ns = window;
        group->initial_remaining_ns = remaining > 0 ? remaining : 0;
        group->join_timer =
            ks_world_schedule(c->world, ks_broker_node(c->broker), (ks_time_ns)window,
                              KS_TIMER_GROUP_JOIN, on_join_deadline, group);
#ifdef KS_DEBUG
        coordinator_check(c);
#endif
        return;
    }
    group->initial_delay = false;
    group->new_member_added = false;
    /* Members that did not rejoin within the rebalance timeout leave. */
    for (guint i = group->members->len; i > 0; i--) {
        struct member *m = g_ptr_array_index(group->members, i - 1);
        if (!m->join_pending) {
            note_cause(group, KS_REASON_MEMBER_NOT_REJOINED, m->member_id);
            g_ptr_array_remove_index(group->members, i - 1);
            member_free(c, m);
        }
    }
    if (group->members->len > 0 && find_member(group, group->leader_id) == NULL) {
        struct member *first = g_ptr_array_index(group->members, 0);
        g_strlcpy(group->leader_id, first->member_id, sizeof(group->leader_id));
    }
    maybe_complete_join(c, group);
#ifdef KS_DEBUG
    coordinator_check(c);
#endif
}

static int64_t rebalance_timeout_ns(const struct group *group)
{
    int64_t timeout = 0;
    for (guint i = 0; i < group->members->len; i++) {
        const struct member *m = g_ptr_array_index(group->members, i);
        timeout = m->rebalance_timeout_ns > timeout ? m->rebalance_timeout_ns : timeout;
    }
    return timeout;
}

static void prepare_rebalance(struct coordinator *c, struct group *group,
                              enum ks_event_reason reason, const char *member_id)
{
    if (group->state == GROUP_PREPARING) {
        return;
    }
    group->cause_count = 0;
    group->causes_dropped = 0;
    note_cause(group, reason, member_id);
    /* Members still waiting for a SyncGroup answer learn of the new round. */
    for (guint i = 0; i < group->members->len; i++) {
        struct member *m = g_ptr_array_index(group->members, i);
        if (m->sync_pending) {
            send_sync_response(c, m, KS_GROUP_ERR_REBALANCE_IN_PROGRESS);
        }
    }
    bool was_empty = group->state == GROUP_EMPTY;
    group->state = GROUP_PREPARING;
    ks_world_cancel(c->world, group->join_timer);
    int64_t delay_ns;
    if (was_empty) {
        /* GroupMetadataManager.prepareRebalance: the first window, and the
         * rebalance time that remains after it. */
        group->initial_delay = true;
        group->new_member_added = false;
        delay_ns = ks_broker_spec(c->broker)->cluster->group_initial_rebalance_delay_ns;
        int64_t remaining = rebalance_timeout_ns(group) - delay_ns;
        group->initial_window_ns = delay_ns;
        group->initial_remaining_ns = remaining > 0 ? remaining : 0;
    } else {
        group->initial_delay = false;
        group->new_member_added = false;
        delay_ns = rebalance_timeout_ns(group);
    }
    group->join_timer = ks_world_schedule(c->world, ks_broker_node(c->broker), (ks_time_ns)delay_ns,
                                          KS_TIMER_GROUP_JOIN, on_join_deadline, group);
    maybe_complete_join(c, group);
}

static void send_join_responses(struct coordinator *c, struct group *group)
{
    /* The leader gets every member with its subscription and owned partitions. */
    int32_t owned_total = 0;
    for (guint i = 0; i < group->members->len; i++) {
        const struct member *m = g_ptr_array_index(group->members, i);
        owned_total += (int32_t)m->owned->len;
    }
    for (guint i = 0; i < group->members->len; i++) {
        struct member *m = g_ptr_array_index(group->members, i);
        bool leader = strcmp(m->member_id, group->leader_id) == 0;
        int32_t member_count = leader ? (int32_t)group->members->len : 0;
        int32_t owned_count = leader ? owned_total : 0;
        size_t bytes = sizeof(struct ks_group_join_response) +
                       (size_t)member_count * sizeof(struct ks_group_join_member) +
                       (size_t)owned_count * sizeof(struct ks_group_topic_partition);
        uint8_t *message = g_malloc0(bytes);
        struct ks_group_join_response response;
        memset(&response, 0, sizeof(response));
        response.correlation_id = m->join_correlation;
        response.error_code = KS_GROUP_ERR_NONE;
        response.generation = group->generation;
        response.assignor = group->protocol;
        response.member_count = member_count;
        response.owned_total = owned_count;
        g_strlcpy(response.leader_id, group->leader_id, sizeof(response.leader_id));
        g_strlcpy(response.member_id, m->member_id, sizeof(response.member_id));
        memcpy(message, &response, sizeof(response));
        size_t position = sizeof(response);
        for (int32_t k = 0; k < member_count; k++) {
            const struct member *other = g_ptr_array_index(group->members, (guint)k);
            struct ks_group_join_member entry;
            memset(&entry, 0, sizeof(entry));
            g_strlcpy(entry.member_id, other->member_id, sizeof(entry.member_id));
            entry.topic_index = other->topic_index;
            entry.owned_generation = other->owned_generation;
            entry.owned_count = (int32_t)other->owned->len;
            memcpy(message + position, &entry, sizeof(entry));
            position += sizeof(entry);
        }
        for (int32_t k = 0; k < member_count; k++) {
            const struct member *other = g_ptr_array_index(group->members, (guint)k);
            size_t n = other->owned->len * sizeof(struct ks_group_topic_partition);
            if (n > 0) {
                memcpy(message + position, other->owned->data, n);
            }
            position += n;
        }
        ks_assert(position == bytes);
        send_bytes(c, m->node, KS_GROUP_JOIN_RESPONSE, message, bytes);
        g_free(message);
        m->join_pending = false;
    }
}

static void maybe_complete_join(struct coordinator *c, struct group *group)
{
    if (group->state != GROUP_PREPARING || group->initial_delay) {
        return;
    }
    for (guint i = 0; i < group->members->len; i++) {
        const struct member *m = g_ptr_array_index(group->members, i);
        if (!m->join_pending) {
            return;
        }
    }
    ks_world_cancel(c->world, group->join_timer);
    group->join_timer = 0;
    int32_t previous = group->generation;
    group->generation++;
    ks_assert(group->generation > previous); /* G2 */
    if (group->members->len == 0) {
        group->state = GROUP_EMPTY;
        group->leader_id[0] = 0;
        return;
    }
    if (find_member(group, group->leader_id) == NULL) {
        struct member *first = g_ptr_array_index(group->members, 0);
        g_strlcpy(group->leader_id, first->member_id, sizeof(group->leader_id));
    }
    struct member *leader = find_member(group, group->leader_id);
    ks_assert(leader != NULL); /* G1 */
    group->protocol = leader->assignor;
    group->state = GROUP_COMPLETING;
    for (guint i = 0; i < group->members->len; i++) {
        struct member *m = g_ptr_array_index(group->members, i);
        g_array_set_size(m->assignment, 0);
        arm_session(c, m); /* Kafka restarts each session when the join completes */
    }
    send_join_responses(c, group);
}

/* ---- request handlers ------------------------------------------------------------- */

static void handle_find_coordinator(struct coordinator *c, ks_node_id source,
                                    const struct ks_group_find_coordinator_request *request)
{
    struct ks_group_find_coordinator_response response;
    memset(&response, 0, sizeof(response));
    response.correlation_id = request->correlation_id;
    response.coordinator_id = -1;
    if (c->offsets_topic < 0) {
        response.error_code = KS_GROUP_ERR_COORDINATOR_NOT_AVAILABLE;
    } else {
        char group_id[KS_GROUP_ID_BYTES];
        g_strlcpy(group_id, request->group_id, sizeof(group_id));
        int32_t partition = ks_group_offsets_partition(group_id, c->partition_count);
        int32_t leader = ks_broker_partition_leader(c->broker, c->offsets_topic, partition);
        response.coordinator_id = leader;
        response.error_code =
            leader < 0 ? KS_GROUP_ERR_COORDINATOR_NOT_AVAILABLE : KS_GROUP_ERR_NONE;
    }
    send_bytes(c, source, KS_GROUP_FIND_COORDINATOR_RESPONSE, &response, sizeof(response));
}

static void handle_join(struct coordinator *c, ks_node_id source,
                        const struct ks_group_join_request *request,
                        const struct ks_group_topic_partition *owned)
{
    char group_id[KS_GROUP_ID_BYTES];
    g_strlcpy(group_id, request->group_id, sizeof(group_id));
    /* GroupCoordinatorService.joinGroup checks the session timeout against
     * group.min/max.session.timeout.ms before anything else. */
    const struct ks_cluster_config *cluster = ks_broker_spec(c->broker)->cluster;
    if (request->session_timeout_ns < cluster->group_min_session_timeout_ns ||
        request->session_timeout_ns > cluster->group_max_session_timeout_ns) {
        send_join_error(c, source, request->correlation_id, KS_GROUP_ERR_INVALID_SESSION_TIMEOUT);
        return;
    }
    int32_t partition = -1;
    int16_t error = check_coordinator(c, group_id, &partition);
    if (error != KS_GROUP_ERR_NONE) {
        send_join_error(c, source, request->correlation_id, error);
        return;
    }
    struct group *group = get_or_create_group(c, group_id, partition);
    if (request->member_id[0] == 0) {
        /* KIP-394 (2.2+): a new member first gets its id with
         * MEMBER_ID_REQUIRED and joins again with it, so a retried join
         * never leaves a ghost member behind. Ids are "<client>-<n>", n
         * chosen by the client (group_proto.h). */
        struct ks_group_join_response response;
        memset(&response, 0, sizeof(response));
        response.correlation_id = request->correlation_id;
        response.error_code = KS_GROUP_ERR_MEMBER_ID_REQUIRED;
        response.generation = -1;
        char client_id[KS_GROUP_CLIENT_ID_BYTES];
        g_strlcpy(client_id, request->client_id, sizeof(client_id));
        ks_assert(request->member_number >= 1);
        snprintf(response.member_id, sizeof(response.member_id), "%s-%d", client_id,
                 request->member_number);
        g_ptr_array_add(group->pending_ids, g_strdup(response.member_id));
        send_bytes(c, source, KS_GROUP_JOIN_RESPONSE, &response, sizeof(response));
        return;
    }
    struct member *m = find_member(group, request->member_id);
    if (m == NULL) {
        guint pending_index = 0;
        bool pending = false;
        for (guint i = 0; i < group->pending_ids->len && !pending; i++) {
            if (strcmp(g_ptr_array_index(group->pending_ids, i), request->member_id) == 0) {
                pending = true;
                pending_index = i;
            }
        }
        if (!pending) {
            send_join_error(c, source, request->correlation_id, KS_GROUP_ERR_UNKNOWN_MEMBER_ID);
            return;
        }
        g_ptr_array_remove_index(group->pending_ids, pending_index);
        m = g_new0(struct member, 1);
        m->group = group;
        m->owned = g_array_new(FALSE, TRUE, sizeof(struct ks_group_topic_partition));
        m->assignment = g_array_new(FALSE, TRUE, sizeof(struct ks_group_topic_partition));
        g_strlcpy(m->client_id, request->client_id, sizeof(m->client_id));
        g_strlcpy(m->member_id, request->member_id, sizeof(m->member_id));
        g_ptr_array_add(group->members, m);
        if (group->leader_id[0] == 0) {
            g_strlcpy(group->leader_id, m->member_id, sizeof(group->leader_id));
        }
        /* GroupMetadataManager.classicGroupJoinNewMember: a new member in the
         * initial rebalance (PREPARING after EMPTY) earns another window. */
        if (group->state == GROUP_PREPARING && group->initial_delay) {
            group->new_member_added = true;
        }
    }
    m->node = source;
    m->topic_index = request->topic_index;
    m->session_timeout_ns = request->session_timeout_ns;
    m->rebalance_timeout_ns = request->rebalance_timeout_ns;
    m->assignor = request->assignor;
    m->owned_generation = request->owned_generation;
    g_array_set_size(m->owned, 0);
    g_array_append_vals(m->owned, owned, (guint)request->owned_count);
    m->join_pending = true;
    m->join_correlation = request->correlation_id;
    arm_session(c, m);
    switch (group->state) {
    case GROUP_EMPTY:
    case GROUP_COMPLETING:
    case GROUP_STABLE: prepare_rebalance(c, group, KS_REASON_MEMBER_JOINED, m->member_id); break;
    case GROUP_PREPARING: maybe_complete_join(c, group); break;
    }
}

static void emit_rebalance(struct coordinator *c, struct group *group)
{
    /* The members and their assignments, copied into the event's types. */
    guint member_count = group->members->len;
    guint tp_count = 0;
    for (guint i = 0; i < member_count; i++) {
        const struct member *m = g_ptr_array_index(group->members, i);
        tp_count += m->assignment->len;
    }
    struct ks_event_member *members = g_new0(struct ks_event_member, member_count + 1);
    struct ks_event_tp *tps = g_new0(struct ks_event_tp, tp_count + 1);
    guint used = 0;
    for (guint i = 0; i < member_count; i++) {
        const struct member *m = g_ptr_array_index(group->members, i);
        members[i].member_id = m->member_id;
        members[i].assignment = tps + used;
        members[i].assignment_count = (int32_t)m->assignment->len;
        for (guint k = 0; k < m->assignment->len; k++) {
            const struct ks_group_topic_partition *tp =
                &g_array_index(m->assignment, struct ks_group_topic_partition, k);
            tps[used].topic_index = tp->topic_index;
            tps[used].partition = tp->partition;
            used++;
        }
    }
    struct ks_event_cause causes[REBALANCE_CAUSES_MAX];
    for (int32_t i = 0; i < group->cause_count; i++) {
        causes[i].reason = group->causes[i].reason;
        causes[i].member_id =
            group->causes[i].member_id[0] != 0 ? group->causes[i].member_id : NULL;
    }
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, 0, KS_EV_REBALANCE);
    event.group_id = group->group_id;
    event.generation = group->generation;
    event.assignor = (enum ks_assignor)group->protocol;
    event.group_leader_id = group->leader_id;
    event.offsets_partition = group->partition;
    event.members = members;
    event.member_count = (int32_t)member_count;
    event.causes = causes;
    event.cause_count = group->cause_count;
    event.suppressed_count = group->causes_dropped;
    ks_broker_emit(c->broker, &event);
    g_free(tps);
    g_free(members);
}

static void complete_sync(struct coordinator *c, struct group *group)
{
    group->state = GROUP_STABLE;
    emit_rebalance(c, group);
    for (guint i = 0; i < group->members->len; i++) {
        struct member *m = g_ptr_array_index(group->members, i);
        if (m->sync_pending) {
            send_sync_response(c, m, KS_GROUP_ERR_NONE);
        }
    }
}

static void handle_sync(struct coordinator *c, ks_node_id source,
                        const struct ks_group_sync_request *request,
                        const struct ks_group_assignment_entry *entries)
{
    char group_id[KS_GROUP_ID_BYTES];
    g_strlcpy(group_id, request->group_id, sizeof(group_id));
    int32_t partition = -1;
    int16_t error = check_coordinator(c, group_id, &partition);
    struct group *group = error == KS_GROUP_ERR_NONE ? find_group(c, group_id) : NULL;
    struct member *m = group != NULL ? find_member(group, request->member_id) : NULL;
    if (error == KS_GROUP_ERR_NONE && m == NULL) {
        error = KS_GROUP_ERR_UNKNOWN_MEMBER_ID;
    }
    if (error == KS_GROUP_ERR_NONE && request->generation != group->generation) {
        error = KS_GROUP_ERR_ILLEGAL_GENERATION;
    }
    if (error == KS_GROUP_ERR_NONE && group->state == GROUP_PREPARING) {
        error = KS_GROUP_ERR_REBALANCE_IN_PROGRESS;
    }
    if (error != KS_GROUP_ERR_NONE) {
        struct ks_group_sync_response response;
        memset(&response, 0, sizeof(response));
        response.correlation_id = request->correlation_id;
        response.error_code = error;
        response.generation = -1;
        send_bytes(c, source, KS_GROUP_SYNC_RESPONSE, &response, sizeof(response));
        return;
    }
    m->node = source;
    m->sync_pending = true;
    m->sync_correlation = request->correlation_id;
    arm_session(c, m);
    if (group->state == GROUP_STABLE) {
        send_sync_response(c, m, KS_GROUP_ERR_NONE);
        return;
    }
    ks_assert(group->state == GROUP_COMPLETING);
    if (strcmp(m->member_id, group->leader_id) != 0) {
        return; /* waits for the leader's assignment */
    }
    for (guint i = 0; i < group->members->len; i++) {
        struct member *each = g_ptr_array_index(group->members, i);
        g_array_set_size(each->assignment, 0);
    }
    for (int32_t k = 0; k < request->entry_count; k++) {
        struct member *owner = find_member(group, entries[k].member_id);
        if (owner != NULL) {
            struct ks_group_topic_partition tp = { entries[k].topic_index, entries[k].partition };
            g_array_append_val(owner->assignment, tp);
        }
    }
    /* Persist the new generation before anyone starts consuming under it. */
    struct pending_append *pending = g_new0(struct pending_append, 1);
    pending->coordinator = c;
    g_strlcpy(pending->group_id, group->group_id, sizeof(pending->group_id));
    pending->partition = group->partition;
    pending->load_epoch = c->load_epochs[group->partition];
    pending->is_sync = true;
    pending->generation = group->generation;
    append(c, pending, build_group_batch(c, group));
}

static void handle_heartbeat(struct coordinator *c, ks_node_id source,
                             const struct ks_group_member_request *request)
{
    char group_id[KS_GROUP_ID_BYTES];
    g_strlcpy(group_id, request->group_id, sizeof(group_id));
    int32_t partition = -1;
    int16_t error = check_coordinator(c, group_id, &partition);
    struct group *group = error == KS_GROUP_ERR_NONE ? find_group(c, group_id) : NULL;
    struct member *m = group != NULL ? find_member(group, request->member_id) : NULL;
    if (error == KS_GROUP_ERR_NONE && m == NULL) {
        error = KS_GROUP_ERR_UNKNOWN_MEMBER_ID;
    }
    if (error == KS_GROUP_ERR_NONE) {
        m->node = source;
        if (request->generation != group->generation) {
            error = group->state == GROUP_PREPARING ? KS_GROUP_ERR_REBALANCE_IN_PROGRESS
                                                    : KS_GROUP_ERR_ILLEGAL_GENERATION;
        } else if (group->state == GROUP_PREPARING) {
            error = KS_GROUP_ERR_REBALANCE_IN_PROGRESS;
            arm_session(c, m);
        } else {
            arm_session(c, m);
        }
    }
    send_simple(c, source, KS_GROUP_HEARTBEAT_RESPONSE, request->correlation_id, error);
}

static void handle_leave(struct coordinator *c, ks_node_id source,
                         const struct ks_group_member_request *request)
{
    char group_id[KS_GROUP_ID_BYTES];
    g_strlcpy(group_id, request->group_id, sizeof(group_id));
    int32_t partition = -1;
    int16_t error = check_coordinator(c, group_id, &partition);
    struct group *group = error == KS_GROUP_ERR_NONE ? find_group(c, group_id) : NULL;
    struct member *m = group != NULL ? find_member(group, request->member_id) : NULL;
    if (error == KS_GROUP_ERR_NONE && m == NULL) {
        error = KS_GROUP_ERR_UNKNOWN_MEMBER_ID;
    }
    send_simple(c, source, KS_GROUP_LEAVE_RESPONSE, request->correlation_id, error);
    if (error == KS_GROUP_ERR_NONE) {
        remove_member(c, group, m, KS_REASON_MEMBER_LEFT);
    }
}

static void handle_offset_commit(struct coordinator *c, ks_node_id source,
                                 const struct ks_group_offset_commit_request *request,
                                 const struct ks_group_offset_entry *entries)
{
    char group_id[KS_GROUP_ID_BYTES];
    g_strlcpy(group_id, request->group_id, sizeof(group_id));
    int32_t partition = -1;
    int16_t error = check_coordinator(c, group_id, &partition);
    if (error == KS_GROUP_ERR_NONE) {
        struct group *group = find_group(c, group_id);
        if (request->generation < 0 && request->member_id[0] == 0) {
            /* A commit outside the group protocol (an admin tool): Kafka
             * accepts it only while the group has no members. */
            if (group == NULL) {
                group = get_or_create_group(c, group_id, partition);
            }
            if (group->state != GROUP_EMPTY) {
                error = KS_GROUP_ERR_UNKNOWN_MEMBER_ID;
            }
        } else {
            struct member *m = group != NULL ? find_member(group, request->member_id) : NULL;
            if (m == NULL) {
                error = KS_GROUP_ERR_UNKNOWN_MEMBER_ID;
            } else if (request->generation != group->generation) {
                error = KS_GROUP_ERR_ILLEGAL_GENERATION;
            } else if (group->state == GROUP_COMPLETING) {
                error = KS_GROUP_ERR_REBALANCE_IN_PROGRESS;
            } else {
                arm_session(c, m); /* a commit counts as liveness too */
            }
        }
    }
    if (error != KS_GROUP_ERR_NONE) {
        send_simple(c, source, KS_GROUP_OFFSET_COMMIT_RESPONSE, request->correlation_id, error);
        return;
    }
    struct pending_append *pending = g_new0(struct pending_append, 1);
    pending->coordinator = c;
    g_strlcpy(pending->group_id, group_id, sizeof(pending->group_id));
    pending->partition = partition;
    pending->load_epoch = c->load_epochs[partition];
    pending->is_sync = false;
    pending->reply_node = source;
    pending->correlation_id = request->correlation_id;
    pending->entries = g_array_new(FALSE, TRUE, sizeof(struct offset_entry));
    for (int32_t k = 0; k < request->entry_count; k++) {
        struct offset_entry e = { entries[k].topic_index, entries[k].partition, entries[k].offset,
                                  -1 };
        if (topic_partition_count(c, e.topic_index) > e.partition && e.partition >= 0 &&
            e.offset >= 0) {
            g_array_append_val(pending->entries, e);
        }
    }
    if (pending->entries->len == 0) {
        g_array_free(pending->entries, TRUE);
        g_free(pending);
        send_simple(c, source, KS_GROUP_OFFSET_COMMIT_RESPONSE, request->correlation_id,
                    KS_GROUP_ERR_NONE);
        return;
    }
    append(c, pending, build_commit_batch(c, group_id, pending->entries, -1, -1));
}

static void emit_commit(struct coordinator *c, struct group *group,
                        const struct pending_append *pending)
{
    /* At most one timeline line per group per second (the rest are counted). */
    ks_time_ns now = ks_world_now_ns(c->world);
    group->commits_since_event++;
    if (group->commit_event_ever &&
        now < group->last_commit_event_ns + OFFSET_COMMIT_EVENT_GAP_NS) {
        return;
    }
    guint count = pending->entries->len;
    struct ks_event_offset *offsets = g_new0(struct ks_event_offset, count + 1);
    for (guint i = 0; i < count; i++) {
        const struct offset_entry *e = &g_array_index(pending->entries, struct offset_entry, i);
        offsets[i].topic_index = e->topic_index;
        offsets[i].partition = e->partition;
        offsets[i].offset = e->offset;
    }
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, 0, KS_EV_OFFSET_COMMIT);
    event.topic_index = count > 0 ? offsets[0].topic_index : -1;
    event.group_id = group->group_id;
    event.offsets_partition = group->partition;
    event.offsets = offsets;
    event.offset_count = (int32_t)count;
    event.suppressed_count = group->commits_since_event - 1;
    ks_broker_emit(c->broker, &event);
    g_free(offsets);
    group->last_commit_event_ns = now;
    group->commit_event_ever = true;
    group->commits_since_event = 0;
}

static void txn_commit_appended(struct coordinator *c, struct group *group,
                                const struct pending_append *pending, int16_t group_error,
                                int64_t base_offset);

static void on_append_done(void *context, int16_t error, int64_t base_offset)
{
    struct pending_append *pending = context;
    struct coordinator *c = pending->coordinator;
    bool removed = g_ptr_array_remove(c->pending, pending);
    ks_assert(removed);
    bool still_owned = c->partition_states[pending->partition] == PART_OWNED &&
                       c->load_epochs[pending->partition] == pending->load_epoch;
    int16_t group_error = map_append_error(error);
    if (group_error == KS_GROUP_ERR_NONE && !still_owned) {
        group_error = KS_GROUP_ERR_NOT_COORDINATOR;
    }
    struct group *group = still_owned ? find_group(c, pending->group_id) : NULL;
    if (pending->is_sync) {
        if (group != NULL && group->state == GROUP_COMPLETING &&
            group->generation == pending->generation) {
            if (group_error == KS_GROUP_ERR_NONE) {
                complete_sync(c, group);
            } else {
                /* Kafka answers the pending syncs with the error and
                 * rebalances again. */
                for (guint i = 0; i < group->members->len; i++) {
                    struct member *m = g_ptr_array_index(group->members, i);
                    if (m->sync_pending) {
                        send_sync_response(c, m, group_error);
                    }
                }
                prepare_rebalance(c, group, KS_REASON_GROUP_APPEND_FAILED, NULL);
            }
        }
    } else if (pending->is_txn) {
        if (error == KS_ERR_INVALID_PRODUCER_EPOCH) {
            group_error = KS_GROUP_ERR_INVALID_PRODUCER_EPOCH; /* passed through, as Kafka does */
        }
        txn_commit_appended(c, group, pending, group_error, base_offset);
        g_array_free(pending->entries, TRUE);
    } else {
        if (group_error == KS_GROUP_ERR_NONE && group != NULL) {
            for (guint i = 0; i < pending->entries->len; i++) {
                const struct offset_entry *e =
                    &g_array_index(pending->entries, struct offset_entry, i);
                set_offset(group, e->topic_index, e->partition, e->offset, base_offset);
            }
            emit_commit(c, group, pending);
        }
        send_simple(c, pending->reply_node, KS_GROUP_OFFSET_COMMIT_RESPONSE,
                    pending->correlation_id, group_error);
        g_array_free(pending->entries, TRUE);
    }
    g_free(pending);
#ifdef KS_DEBUG
    coordinator_check(c);
#endif
}

static bool txn_offset_pending(const struct group *group, int32_t topic_index, int32_t partition);

static void handle_offset_fetch(struct coordinator *c, ks_node_id source,
                                const struct ks_group_offset_fetch_request *request,
                                const struct ks_group_topic_partition *entries)
{
    char group_id[KS_GROUP_ID_BYTES];
    g_strlcpy(group_id, request->group_id, sizeof(group_id));
    int32_t partition = -1;
    int16_t error = check_coordinator(c, group_id, &partition);
    int32_t count = error == KS_GROUP_ERR_NONE ? request->entry_count : 0;
    size_t bytes = sizeof(struct ks_group_offset_fetch_response) +
                   (size_t)count * sizeof(struct ks_group_offset_fetch_entry);
    uint8_t *message = g_malloc0(bytes);
    struct ks_group_offset_fetch_response response;
    memset(&response, 0, sizeof(response));
    response.correlation_id = request->correlation_id;
    response.error_code = error;
    response.entry_count = count;
    memcpy(message, &response, sizeof(response));
    struct group *group = error == KS_GROUP_ERR_NONE ? find_group(c, group_id) : NULL;
    for (int32_t k = 0; k < count; k++) {
        struct ks_group_offset_fetch_entry e;
        memset(&e, 0, sizeof(e));
        ks_assert(entries[k].topic_index >= 0 && entries[k].topic_index <= INT16_MAX);
        e.topic_index = (int16_t)entries[k].topic_index;
        e.partition = entries[k].partition;
        e.offset = -1;
        if (txn_offset_pending(group, entries[k].topic_index, e.partition)) {
            e.error_code = KS_GROUP_ERR_UNSTABLE_OFFSET_COMMIT; /* this partition only */
        } else if (group != NULL) {
            e.offset = get_offset(group, entries[k].topic_index, e.partition);
        }
        memcpy(message + sizeof(response) + (size_t)k * sizeof(e), &e, sizeof(e));
    }
    send_bytes(c, source, KS_GROUP_OFFSET_FETCH_RESPONSE, message, bytes);
    g_free(message);
}

static void handle_message(struct coordinator *c, ks_node_id source, uint32_t kind,
                           const void *message, size_t message_bytes);
static void handle_txn_offset_commit(struct coordinator *c, ks_node_id source,
                                     const struct ks_group_txn_offset_commit_request *request,
                                     const struct ks_group_offset_entry *entries,
                                     const void *message, size_t message_bytes, bool verified,
                                     uint64_t guard);

void ks_group_coordinator_handle(struct ks_group_coordinator *g, ks_node_id source, uint32_t kind,
                                 const void *message, size_t message_bytes)
{
    handle_message(&g->c, source, kind, message, message_bytes);
#ifdef KS_DEBUG
    coordinator_check(&g->c);
#endif
}

static void handle_message(struct coordinator *c, ks_node_id source, uint32_t kind,
                           const void *message, size_t message_bytes)
{
    switch ((enum ks_group_kind)kind) {
    case KS_GROUP_FIND_COORDINATOR_REQUEST:
        ks_assert(message_bytes == sizeof(struct ks_group_find_coordinator_request));
        handle_find_coordinator(c, source, message);
        return;
    case KS_GROUP_JOIN_REQUEST: {
        const struct ks_group_join_request *request = message;
        ks_assert(message_bytes >= sizeof(*request));
        const void *owned =
            ks_group_proto_entries(message, message_bytes, sizeof(*request), request->owned_count,
                                   sizeof(struct ks_group_topic_partition));
        ks_assert(owned != NULL);
        handle_join(c, source, request, owned);
        return;
    }
    case KS_GROUP_SYNC_REQUEST: {
        const struct ks_group_sync_request *request = message;
        ks_assert(message_bytes >= sizeof(*request));
        const void *entries =
            ks_group_proto_entries(message, message_bytes, sizeof(*request), request->entry_count,
                                   sizeof(struct ks_group_assignment_entry));
        ks_assert(entries != NULL);
        handle_sync(c, source, request, entries);
        return;
    }
    case KS_GROUP_HEARTBEAT_REQUEST:
        ks_assert(message_bytes == sizeof(struct ks_group_member_request));
        handle_heartbeat(c, source, message);
        return;
    case KS_GROUP_LEAVE_REQUEST:
        ks_assert(message_bytes == sizeof(struct ks_group_member_request));
        handle_leave(c, source, message);
        return;
    case KS_GROUP_OFFSET_COMMIT_REQUEST: {
        const struct ks_group_offset_commit_request *request = message;
        ks_assert(message_bytes >= sizeof(*request));
        const void *entries =
            ks_group_proto_entries(message, message_bytes, sizeof(*request), request->entry_count,
                                   sizeof(struct ks_group_offset_entry));
        ks_assert(entries != NULL);
        handle_offset_commit(c, source, request, entries);
        return;
    }
    case KS_GROUP_OFFSET_FETCH_REQUEST: {
        const struct ks_group_offset_fetch_request *request = message;
        ks_assert(message_bytes >= sizeof(*request));
        const void *entries =
            ks_group_proto_entries(message, message_bytes, sizeof(*request), request->entry_count,
                                   sizeof(struct ks_group_topic_partition));
        ks_assert(entries != NULL);
        handle_offset_fetch(c, source, request, entries);
        return;
    }
    case KS_GROUP_TXN_OFFSET_COMMIT_REQUEST: {
        const struct ks_group_txn_offset_commit_request *request = message;
        ks_assert(message_bytes >= sizeof(*request));
        const void *entries =
            ks_group_proto_entries(message, message_bytes, sizeof(*request), request->entry_count,
                                   sizeof(struct ks_group_offset_entry));
        ks_assert(entries != NULL);
        handle_txn_offset_commit(c, source, request, entries, message, message_bytes, false, 0);
        return;
    }
    case KS_GROUP_TXN_OFFSET_COMMIT_RESPONSE:
    case KS_GROUP_FIND_COORDINATOR_RESPONSE:
    case KS_GROUP_JOIN_RESPONSE:
    case KS_GROUP_SYNC_RESPONSE:
    case KS_GROUP_HEARTBEAT_RESPONSE:
    case KS_GROUP_LEAVE_RESPONSE:
    case KS_GROUP_OFFSET_COMMIT_RESPONSE:
    case KS_GROUP_OFFSET_FETCH_RESPONSE: break;
    }
    /* A response kind or an unknown kind reaching a broker is a bug. */
    ks_assert(!"unexpected group message kind at a broker");
}

/* ---- loading ------------------------------------------------------------------------ */

/* A group metadata record: the latest one wins (a log that lost records to
 * an unclean election may even bring an older generation back, as Kafka's
 * would). */
static void load_group_value(struct coordinator *c, int32_t partition, const char *group_id,
                             const struct ks_record_view *record)
{
    struct reader value = { record->value, record->value_bytes, 0, false };
    char text[KS_GROUP_MEMBER_ID_BYTES];
    char leader[KS_GROUP_MEMBER_ID_BYTES];
    int16_t version = get_i16(&value);
    get_string(&value, text, sizeof(text)); /* protocol type */
    int32_t generation = get_i32(&value);
    get_string(&value, text, sizeof(text)); /* protocol */
    get_string(&value, leader, sizeof(leader));
    int32_t member_count = get_i32(&value);
    if (value.bad || member_count < 0) {
        return;
    }
    struct group *group = get_or_create_group(c, group_id, partition);
    group->generation = generation;
    for (guint i = 0; i < group->members->len; i++) {
        member_free(c, g_ptr_array_index(group->members, i));
    }
    g_ptr_array_set_size(group->members, 0);
    group->leader_id[0] = 0;
    group->protocol = KS_ASSIGNOR_RANGE;
    for (int32_t a = 0; a < 3; a++) {
        if (strcmp(text, ks_assignor_name((enum ks_assignor)a)) == 0) {
            group->protocol = a;
        }
    }
    if (version < 1) {
        return;
    }
    for (int32_t i = 0; i < member_count && !value.bad; i++) {
        struct member *m = g_new0(struct member, 1);
        m->group = group;
        m->owned = g_array_new(FALSE, TRUE, sizeof(struct ks_group_topic_partition));
        m->assignment = g_array_new(FALSE, TRUE, sizeof(struct ks_group_topic_partition));
        char name[KS_TOPIC_NAME_BYTES_MAX + 1];
        get_string(&value, m->member_id, sizeof(m->member_id));
        get_string(&value, m->client_id, sizeof(m->client_id));
        get_string(&value, name, sizeof(name));
        m->topic_index = ks_broker_topic_index(c->broker, name);
        m->session_timeout_ns = get_i64(&value);
        m->rebalance_timeout_ns = get_i64(&value);
        m->assignor = get_i32(&value);
        m->owned_generation = -1;
        int32_t assigned_count = get_i32(&value);
        for (int32_t k = 0; k < assigned_count && !value.bad; k++) {
            get_string(&value, name, sizeof(name));
            struct ks_group_topic_partition tp = { ks_broker_topic_index(c->broker, name),
                                                   get_i32(&value) };
            if (tp.topic_index >= 0) {
                g_array_append_val(m->assignment, tp);
            }
        }
        g_ptr_array_add(group->members, m);
    }
    if (value.bad) {
        /* A malformed record (never written by this program): keep no members. */
        for (guint i = 0; i < group->members->len; i++) {
            member_free(c, g_ptr_array_index(group->members, i));
        }
        g_ptr_array_set_size(group->members, 0);
        return;
    }
    if (find_member(group, leader) != NULL) {
        g_strlcpy(group->leader_id, leader, sizeof(group->leader_id));
    }
}

static void load_record(struct coordinator *c, int32_t partition,
                        const struct ks_record_view *record)
{
    if (record->key == NULL || record->key_bytes < 2) {
        return;
    }
    struct reader key = { record->key, record->key_bytes, 0, false };
    int16_t key_version = get_i16(&key);
    char group_id[KS_GROUP_ID_BYTES];
    get_string(&key, group_id, sizeof(group_id));
    if (key.bad) {
        return;
    }
    if (key_version == 0 || key_version == 1) {
        char name[KS_TOPIC_NAME_BYTES_MAX + 1];
        get_string(&key, name, sizeof(name));
        int32_t topic_partition = get_i32(&key);
        int32_t topic_index = ks_broker_topic_index(c->broker, name);
        if (key.bad || topic_index < 0) {
            return;
        }
        struct group *group = get_or_create_group(c, group_id, partition);
        if (record->value == NULL || record->value_bytes < 0) {
            set_offset(group, topic_index, topic_partition, -1, record->offset); /* tombstone */
            return;
        }
        struct reader value = { record->value, record->value_bytes, 0, false };
        (void)get_i16(&value);
        int64_t offset = get_i64(&value);
        if (!value.bad) {
            set_offset(group, topic_index, topic_partition, offset, record->offset);
        }
    } else if (key_version == 2) {
        if (record->value == NULL || record->value_bytes < 0) {
            return;
        }
        load_group_value(c, partition, group_id, record);
    }
}

struct load_scan {
    struct coordinator *c;
    int32_t partition;
    int64_t from; /* the log start: a first batch may begin below it */
};

static bool load_batch(void *context, const struct ks_batch_view *batch);

static void load_partition(struct coordinator *c, int32_t partition)
{
    /* Every batch from the log start to the LEO (as ks_broker_load_local
     * reads, plus the transactional batches and markers load_batch needs). */
    int64_t from = ks_broker_log_start_offset(c->broker, c->offsets_topic, partition);
    if (from < 0) {
        return;
    }
    struct load_scan scan = { c, partition, from };
    ks_broker_scan_local(c->broker, c->offsets_topic, partition, from,
                         ks_broker_leo(c->broker, c->offsets_topic, partition), load_batch, &scan);
}

static void on_load(ks_world *world, void *context)
{
    struct coordinator *c = context;
    (void)world;
    c->load_timer = 0;
    for (int32_t p = 0; p < c->partition_count; p++) {
        if (c->partition_states[p] == PART_LOADING) {
            load_partition(c, p);
            c->partition_states[p] = PART_OWNED;
            /* Loaded groups with members are Stable; their sessions start now
             * (GroupMetadataManager schedules every member's expiration). */
            for (guint i = 0; i < c->groups->len; i++) {
                struct group *group = g_ptr_array_index(c->groups, i);
                if (group->partition != p || group->members->len == 0) {
                    continue;
                }
                if (group->leader_id[0] == 0) {
                    struct member *first = g_ptr_array_index(group->members, 0);
                    g_strlcpy(group->leader_id, first->member_id, sizeof(group->leader_id));
                }
                group->state = GROUP_STABLE;
                for (guint k = 0; k < group->members->len; k++) {
                    arm_session(c, g_ptr_array_index(group->members, k));
                }
            }
        }
    }
#ifdef KS_DEBUG
    coordinator_check(c);
#endif
}

static void drop_partition_groups(struct coordinator *c, int32_t partition)
{
    for (guint i = c->groups->len; i > 0; i--) {
        struct group *group = g_ptr_array_index(c->groups, i - 1);
        if (group->partition == partition) {
            g_ptr_array_remove_index(c->groups, i - 1);
            group_free(c, group);
        }
    }
}

/* ---- transactional offset commits (KIP-98, KIP-447) ------------------------------ */

/* Kafka's GroupCoordinator.handleTxnCommitOffsets and GroupMetadata's
 * pendingTransactionalOffsetCommits, paraphrased:
 *   - A TxnOffsetCommit finds or creates the group (an Empty one), checks the
 *     member (validateOffsetCommit with isTransactional: generation -1 with
 *     an Empty group, or no member id and no generation, pass; otherwise
 *     the member must exist and its generation match, KIP-447's fencing of
 *     a zombie that lost its partitions), then records every offset as
 *     pending for the producer id (prepareTxnOffsetCommit) and appends a
 *     transactional batch under the producer's id and epoch.
 *   - The append's outcome: on success each pending offset learns where its
 *     record is (onTxnOffsetCommitAppend); on failure it is dropped
 *     (failPendingTxnOffsetCommit) and the producer retries.
 *   - When the transaction's COMMIT or ABORT marker is written to the group's
 *     partition (KafkaApis.handleWriteTxnMarkersRequest calls
 *     onTransactionCompleted, GroupMetadataManager.handleTxnCompletion), the
 *     producer's pending offsets become committed (completePendingTxnOffsetCommit:
 *     only where the cache holds nothing or an older record) or vanish.
 *   - While an offset is pending, OffsetFetch with requireStable (every
 *     consumer since Kafka 2.5 asks so: ConsumerCoordinator.
 *     sendOffsetFetchRequest, OffsetFetch v7) answers that partition
 *     UNSTABLE_OFFSET_COMMIT, the others as usual (GroupMetadataManager.
 *     getOffsets, OffsetMetadataManager.fetchOffsets).
 *   - Loading reads transactional batches into per-producer pending offsets
 *     and applies a marker to them (GroupMetadataManager.doLoadGroupsAndOffsets);
 *     what has no marker yet stays pending.
 * Simplifications: one error per TxnOffsetCommit request (Kafka answers per
 * partition); every OffsetFetch requires stable offsets (ksim's clients are
 * all 2.5+ consumers, and MM2's admin fetches, which do not, never meet a
 * transactional group in the shipped scenarios); plain commits in flight do
 * not make an offset unstable (the ZooKeeper-era GroupMetadataManager's
 * pendingOffsetCommits would; 4.0's coordinator instead runs the fetch as a
 * write, after them). */

static guint txn_offset_find(const struct group *group, int64_t producer_id, int32_t topic_index,
                             int32_t partition)
{
    for (guint i = 0; i < group->txn_offsets->len; i++) {
        const struct txn_offset *t = &g_array_index(group->txn_offsets, struct txn_offset, i);
        if (t->producer_id == producer_id && t->topic_index == topic_index &&
            t->partition == partition) {
            return i;
        }
    }
    return G_MAXUINT;
}

/* True when the cache has no committed offset for (topic, partition) or one
 * whose record lies before record_offset (CommitRecordMetadataAndOffset.olderThan). */
static bool cached_older_than(const struct group *group, int32_t topic_index, int32_t partition,
                              int64_t record_offset)
{
    for (guint i = 0; i < group->offsets->len; i++) {
        const struct offset_entry *e = &g_array_index(group->offsets, struct offset_entry, i);
        if (e->topic_index == topic_index && e->partition == partition) {
            return e->offset < 0 || e->record_offset < record_offset;
        }
    }
    return true;
}

/* completePendingTxnOffsetCommit: the producer's pending offsets become the
 * group's (commit) or are dropped (abort). */
static void complete_txn(struct group *group, int64_t producer_id, bool commit)
{
    for (guint i = group->txn_offsets->len; i > 0; i--) {
        struct txn_offset t = g_array_index(group->txn_offsets, struct txn_offset, i - 1);
        if (t.producer_id != producer_id) {
            continue;
        }
        g_array_remove_index(group->txn_offsets, i - 1);
        /* A pending offset whose record never reached the log has nothing to
         * commit (Kafka asserts it cannot happen: the producer waits for the
         * TxnOffsetCommit answer before EndTxn). */
        if (commit && t.record_offset >= 0 &&
            cached_older_than(group, t.topic_index, t.partition, t.record_offset)) {
            set_offset(group, t.topic_index, t.partition, t.offset, t.record_offset);
        }
    }
}

static void txn_commit_appended(struct coordinator *c, struct group *group,
                                const struct pending_append *pending, int16_t group_error,
                                int64_t base_offset)
{
    for (guint k = 0; group != NULL && k < pending->entries->len; k++) {
        const struct offset_entry *e = &g_array_index(pending->entries, struct offset_entry, k);
        guint i = txn_offset_find(group, pending->producer_id, e->topic_index, e->partition);
        if (i == G_MAXUINT) {
            continue;
        }
        struct txn_offset *t = &g_array_index(group->txn_offsets, struct txn_offset, i);
        if (t->offset != e->offset) {
            continue; /* a later TxnOffsetCommit replaced it */
        }
        if (group_error == KS_GROUP_ERR_NONE) {
            t->record_offset = base_offset;
        } else {
            g_array_remove_index(group->txn_offsets, i);
        }
    }
    send_simple(c, pending->reply_node, KS_GROUP_TXN_OFFSET_COMMIT_RESPONSE,
                pending->correlation_id, group_error);
}

/* GroupMetadata.hasPendingOffsetCommitsForTopicPartition, its transactional
 * half: a producer's offset for the partition waits for its marker. */
static bool txn_offset_pending(const struct group *group, int32_t topic_index, int32_t partition)
{
    for (guint i = 0; group != NULL && i < group->txn_offsets->len; i++) {
        const struct txn_offset *t = &g_array_index(group->txn_offsets, struct txn_offset, i);
        if (t->topic_index == topic_index && t->partition == partition) {
            return true;
        }
    }
    return false;
}

/* GroupCoordinator.validateOffsetCommit with isTransactional = true. */
static int16_t txn_validate_member(struct coordinator *c, struct group *group,
                                   const struct ks_group_txn_offset_commit_request *request)
{
    if (request->generation < 0 && group->state == GROUP_EMPTY) {
        return KS_GROUP_ERR_NONE;
    }
    if (request->generation < 0 && request->member_id[0] == 0) {
        return KS_GROUP_ERR_NONE; /* a client before KIP-447 sends neither */
    }
    struct member *m = find_member(group, request->member_id);
    if (m == NULL) {
        return KS_GROUP_ERR_UNKNOWN_MEMBER_ID;
    }
    if (request->generation != group->generation) {
        return KS_GROUP_ERR_ILLEGAL_GENERATION;
    }
    arm_session(c, m);
    return KS_GROUP_ERR_NONE;
}

/* KIP-890 part 1 for TxnOffsetCommit (KAFKA-15449; GroupCoordinator
 * .handleTxnCommitOffsets's postVerificationCallback and
 * GroupMetadataManager.maybeConvertOffsetCommitError, as
 * GroupCoordinatorService.commitTransactionalOffsets does through the
 * runtime's scheduleTransactionalWriteOperation): a verification error in the
 * group API's words. NETWORK_EXCEPTION becomes COORDINATOR_LOAD_IN_PROGRESS
 * (retried without a lookup); INVALID_TXN_STATE, INVALID_PRODUCER_EPOCH and
 * the coordinator's retriable errors pass unchanged. */
static int16_t map_verify_error(int16_t error)
{
    switch (error) {
    case KS_ERR_NONE: return KS_GROUP_ERR_NONE;
    case KS_ERR_NETWORK_EXCEPTION:
    case KS_ERR_COORDINATOR_LOAD_IN_PROGRESS: return KS_GROUP_ERR_COORDINATOR_LOAD_IN_PROGRESS;
    case KS_ERR_COORDINATOR_NOT_AVAILABLE: return KS_GROUP_ERR_COORDINATOR_NOT_AVAILABLE;
    case KS_ERR_NOT_COORDINATOR: return KS_GROUP_ERR_NOT_COORDINATOR;
    case KS_ERR_CONCURRENT_TRANSACTIONS: return KS_GROUP_ERR_CONCURRENT_TRANSACTIONS;
    case KS_ERR_INVALID_PRODUCER_EPOCH: return KS_GROUP_ERR_INVALID_PRODUCER_EPOCH;
    case KS_ERR_INVALID_TXN_STATE: return KS_GROUP_ERR_INVALID_TXN_STATE;
    }
    return KS_GROUP_ERR_UNKNOWN_SERVER_ERROR;
}

void ks_group_coordinator_txn_offsets_verified(struct ks_group_coordinator *g, ks_node_id source,
                                               const void *message, size_t message_bytes,
                                               int16_t error, uint64_t guard)
{
    struct coordinator *c = &g->c;
    const struct ks_group_txn_offset_commit_request *request = message;
    ks_assert(message_bytes >= sizeof(*request));
    if (error != KS_ERR_NONE) {
        send_simple(c, source, KS_GROUP_TXN_OFFSET_COMMIT_RESPONSE, request->correlation_id,
                    map_verify_error(error));
        return;
    }
    const void *entries =
        ks_group_proto_entries(message, message_bytes, sizeof(*request), request->entry_count,
                               sizeof(struct ks_group_offset_entry));
    ks_assert(entries != NULL);
    handle_txn_offset_commit(c, source, request, entries, message, message_bytes, true, guard);
}

/* verified: the transaction coordinator has confirmed the __consumer_offsets
 * partition (with guard), or the first pass decided it needs no asking. */
static void handle_txn_offset_commit(struct coordinator *c, ks_node_id source,
                                     const struct ks_group_txn_offset_commit_request *request,
                                     const struct ks_group_offset_entry *entries,
                                     const void *message, size_t message_bytes, bool verified,
                                     uint64_t guard)
{
    char group_id[KS_GROUP_ID_BYTES];
    g_strlcpy(group_id, request->group_id, sizeof(group_id));
    int32_t partition = -1;
    int16_t error = check_coordinator(c, group_id, &partition);
    struct group *group = NULL;
    if (error == KS_GROUP_ERR_NONE) {
        group = get_or_create_group(c, group_id, partition);
        /* Verification first, then the member (doTxnCommitOffsets). */
        char transactional_id[sizeof request->transactional_id];
        g_strlcpy(transactional_id, request->transactional_id, sizeof transactional_id);
        if (!verified &&
            ks_broker_verify_txn_offsets(c->broker, c->offsets_topic, partition, transactional_id,
                                         request->producer_id, request->producer_epoch, source,
                                         message, message_bytes)) {
            return; /* ks_group_coordinator_txn_offsets_verified goes on */
        }
        error = txn_validate_member(c, group, request);
    }
    if (error != KS_GROUP_ERR_NONE) {
        send_simple(c, source, KS_GROUP_TXN_OFFSET_COMMIT_RESPONSE, request->correlation_id,
                    error);
        return;
    }
    struct pending_append *pending = g_new0(struct pending_append, 1);
    pending->coordinator = c;
    g_strlcpy(pending->group_id, group_id, sizeof(pending->group_id));
    pending->partition = partition;
    pending->load_epoch = c->load_epochs[partition];
    pending->is_txn = true;
    pending->producer_id = request->producer_id;
    pending->guard = guard;
    pending->reply_node = source;
    pending->correlation_id = request->correlation_id;
    pending->entries = g_array_new(FALSE, TRUE, sizeof(struct offset_entry));
    for (int32_t k = 0; k < request->entry_count; k++) {
        struct offset_entry e = { entries[k].topic_index, entries[k].partition, entries[k].offset,
                                  -1 };
        if (topic_partition_count(c, e.topic_index) <= e.partition || e.partition < 0 ||
            e.offset < 0) {
            continue;
        }
        g_array_append_val(pending->entries, e);
        /* prepareTxnOffsetCommit: pending from now on, not yet appended. */
        struct txn_offset t = { request->producer_id, e.topic_index, e.partition, e.offset, -1 };
        guint i = txn_offset_find(group, request->producer_id, e.topic_index, e.partition);
        if (i == G_MAXUINT) {
            g_array_append_val(group->txn_offsets, t);
        } else {
            g_array_index(group->txn_offsets, struct txn_offset, i) = t;
        }
    }
    if (pending->entries->len == 0) {
        g_array_free(pending->entries, TRUE);
        g_free(pending);
        send_simple(c, source, KS_GROUP_TXN_OFFSET_COMMIT_RESPONSE, request->correlation_id,
                    KS_GROUP_ERR_NONE);
        return;
    }
    append(c, pending,
           build_commit_batch(c, group_id, pending->entries, request->producer_id,
                              request->producer_epoch));
}

void ks_group_coordinator_txn_completed(struct ks_group_coordinator *g, int32_t partition,
                                        int64_t producer_id, bool commit)
{
    struct coordinator *c = &g->c;
    if (c->offsets_topic < 0 || partition < 0 || partition >= c->partition_count ||
        c->partition_states[partition] != PART_OWNED) {
        return; /* not loaded here: a later load reads the marker itself */
    }
    for (guint i = 0; i < c->groups->len; i++) {
        struct group *group = g_ptr_array_index(c->groups, i);
        if (group->partition == partition) {
            complete_txn(group, producer_id, commit);
        }
    }
#ifdef KS_DEBUG
    coordinator_check(c);
#endif
}

/* An offset commit record of a transactional batch: pending for its
 * producer until a marker of that producer follows in the log. */
static void load_txn_record(struct coordinator *c, int32_t partition, int64_t producer_id,
                            const struct ks_record_view *record)
{
    if (record->key == NULL || record->key_bytes < 2) {
        return;
    }
    struct reader key = { record->key, record->key_bytes, 0, false };
    int16_t key_version = get_i16(&key);
    char group_id[KS_GROUP_ID_BYTES];
    char name[KS_TOPIC_NAME_BYTES_MAX + 1];
    get_string(&key, group_id, sizeof(group_id));
    get_string(&key, name, sizeof(name));
    int32_t topic_partition = get_i32(&key);
    int32_t topic_index = ks_broker_topic_index(c->broker, name);
    if (key.bad || (key_version != 0 && key_version != 1) || topic_index < 0) {
        return;
    }
    struct group *group = get_or_create_group(c, group_id, partition);
    guint i = txn_offset_find(group, producer_id, topic_index, topic_partition);
    if (record->value == NULL || record->value_bytes < 0) {
        if (i != G_MAXUINT) {
            g_array_remove_index(group->txn_offsets, i);
        }
        return;
    }
    struct reader value = { record->value, record->value_bytes, 0, false };
    (void)get_i16(&value);
    int64_t offset = get_i64(&value);
    if (value.bad) {
        return;
    }
    struct txn_offset t = { producer_id, topic_index, topic_partition, offset, record->offset };
    if (i == G_MAXUINT) {
        g_array_append_val(group->txn_offsets, t);
    } else {
        g_array_index(group->txn_offsets, struct txn_offset, i) = t;
    }
}

static bool load_batch(void *context, const struct ks_batch_view *batch)
{
    struct load_scan *scan = context;
    struct coordinator *c = scan->c;
    if ((batch->attributes & KS_ATTR_CONTROL) != 0) {
        int type = ks_batch_control_type(batch);
        if (type == KS_CONTROL_COMMIT || type == KS_CONTROL_ABORT) {
            for (guint i = 0; i < c->groups->len; i++) {
                struct group *group = g_ptr_array_index(c->groups, i);
                if (group->partition == scan->partition) {
                    complete_txn(group, batch->producer_id, type == KS_CONTROL_COMMIT);
                }
            }
        }
        return true;
    }
    bool transactional = (batch->attributes & KS_ATTR_TRANSACTIONAL) != 0 && batch->producer_id >= 0;
    struct ks_record_iter iter;
    struct ks_record_view record;
    ks_record_iter_init(&iter, batch);
    while (ks_record_iter_next(&iter, &record, NULL)) {
        if (record.offset < scan->from) {
            continue;
        }
        if (transactional) {
            load_txn_record(c, scan->partition, batch->producer_id, &record);
        } else {
            load_record(c, scan->partition, &record);
        }
    }
    ks_record_iter_deinit(&iter);
    return true;
}

void ks_group_coordinator_on_leadership(struct ks_group_coordinator *g, int32_t partition,
                                        bool is_leader)
{
    struct coordinator *c = &g->c;
    if (c->offsets_topic < 0) {
        return;
    }
    ks_assert(partition >= 0 && partition < c->partition_count);
    if (is_leader) {
        if (c->partition_states[partition] != PART_NOT_OWNED) {
            return; /* already leading (a new epoch of the same leader) */
        }
        c->load_epochs[partition]++;
        c->partition_states[partition] = PART_LOADING;
        if (c->load_timer == 0) {
            c->load_timer = ks_world_schedule(c->world, ks_broker_node(c->broker), 0,
                                              KS_TIMER_GROUP_LOAD, on_load, c);
        }
    } else {
        if (c->partition_states[partition] == PART_NOT_OWNED) {
            return;
        }
        c->load_epochs[partition]++;
        c->partition_states[partition] = PART_NOT_OWNED;
        drop_partition_groups(c, partition);
    }
#ifdef KS_DEBUG
    coordinator_check(c);
#endif
}

/* ---- whole-object check ------------------------------------------------------------- */

static const struct member *member_named(const struct group *group, const char *member_id)
{
    for (guint i = 0; i < group->members->len; i++) {
        const struct member *m = g_ptr_array_index(group->members, i);
        if (strcmp(m->member_id, member_id) == 0) {
            return m;
        }
    }
    return NULL;
}

static void check_members(const struct group *group)
{
    for (guint i = 0; i < group->members->len; i++) {
        const struct member *m = g_ptr_array_index(group->members, i);
        ks_assert(m->group == group);
        ks_assert(m->member_id[0] != 0);
        ks_assert(member_named(group, m->member_id) == m); /* ids are unique */
        ks_assert(m->session_timer != 0);                  /* G3 */
        /* Join answers go out together when the round completes, sync
         * answers when the leader's assignment is persisted or the round
         * restarts, so a member waits only in the state that answers it. */
        if (m->join_pending) {
            ks_assert(group->state == GROUP_PREPARING);
        }
        if (m->sync_pending) {
            ks_assert(group->state == GROUP_COMPLETING);
        }
    }
}

static void check_group(const struct coordinator *c, const struct group *group)
{
    ks_assert(group->coordinator == c);
    ks_assert(group->generation >= 0);
    /* Groups live only on the partitions this broker coordinates, loaded. */
    ks_assert(group->partition == ks_group_offsets_partition(group->group_id, c->partition_count));
    ks_assert(c->partition_states[group->partition] == PART_OWNED);
    check_members(group);
    bool has_members = group->members->len > 0;
    ks_assert(has_members == (group->leader_id[0] != 0));
    if (has_members) {
        ks_assert(member_named(group, group->leader_id) != NULL);
    }
    switch (group->state) {
    case GROUP_EMPTY: ks_assert(!has_members); break;
    case GROUP_PREPARING: break;
    case GROUP_COMPLETING:
    case GROUP_STABLE:
        ks_assert(has_members); /* G1 */
        break;
    }
    /* The join timer runs exactly while a round gathers members. */
    ks_assert((group->state == GROUP_PREPARING) == (group->join_timer != 0));
    if (group->initial_delay) {
        ks_assert(group->state == GROUP_PREPARING);
        ks_assert(group->initial_remaining_ns >= 0);
    }
    if (group->new_member_added) {
        ks_assert(group->initial_delay);
    }
    for (guint i = 1; i < group->offsets->len; i++) {
        const struct offset_entry *before =
            &g_array_index(group->offsets, struct offset_entry, i - 1);
        const struct offset_entry *e = &g_array_index(group->offsets, struct offset_entry, i);
        ks_assert(before->topic_index < e->topic_index ||
                  (before->topic_index == e->topic_index && before->partition < e->partition));
    }
}

static void coordinator_check(const struct coordinator *c)
{
    ks_assert(c->partition_count >= 0);
    if (c->offsets_topic < 0) {
        ks_assert(c->groups->len == 0);
        ks_assert(c->pending->len == 0);
        return;
    }
    bool loading = false;
    for (int32_t p = 0; p < c->partition_count; p++) {
        loading = loading || c->partition_states[p] == PART_LOADING;
    }
    if (loading) {
        ks_assert(c->load_timer != 0); /* on_load finishes every LOADING partition */
    }
    for (guint i = 0; i < c->groups->len; i++) {
        const struct group *group = g_ptr_array_index(c->groups, i);
        if (i > 0) {
            const struct group *before = g_ptr_array_index(c->groups, i - 1);
            ks_assert(strcmp(before->group_id, group->group_id) < 0); /* sorted, unique */
        }
        check_group(c, group);
    }
    for (guint i = 0; i < c->pending->len; i++) {
        const struct pending_append *pending = g_ptr_array_index(c->pending, i);
        ks_assert(pending->coordinator == c);
        ks_assert(pending->partition >= 0 && pending->partition < c->partition_count);
        ks_assert(pending->is_sync == (pending->entries == NULL));
    }
}

void ks_group_coordinator_check(const struct ks_group_coordinator *g)
{
    coordinator_check(&g->c);
}

/* ---- life cycle -------------------------------------------------------------------- */

struct ks_group_coordinator *ks_group_coordinator_new(struct ks_broker *broker)
{
    struct ks_group_coordinator *g = g_new0(struct ks_group_coordinator, 1);
    struct coordinator *c = &g->c;
    c->broker = broker;
    c->world = ks_broker_world(broker);
    c->offsets_topic = ks_broker_topic_index(broker, KS_OFFSETS_TOPIC);
    const struct ks_cluster_spec *spec = ks_broker_spec(broker);
    c->partition_count = spec->cluster->offsets_topic_partition_count;
    if (c->partition_count <= 0) {
        c->offsets_topic = -1;
        c->partition_count = 0;
    }
    c->partition_states = g_new0(enum partition_state, (gsize)c->partition_count + 1);
    c->load_epochs = g_new0(uint32_t, (gsize)c->partition_count + 1);
    c->groups = g_ptr_array_new();
    c->pending = g_ptr_array_new();
    return g;
}

void ks_group_coordinator_free(struct ks_group_coordinator *g)
{
    if (g == NULL) {
        return;
    }
    struct coordinator *c = &g->c;
    ks_world_cancel(c->world, c->load_timer);
    for (guint i = 0; i < c->groups->len; i++) {
        group_free(c, g_ptr_array_index(c->groups, i));
    }
    g_ptr_array_free(c->groups, TRUE);
    for (guint i = 0; i < c->pending->len; i++) {
        struct pending_append *pending = g_ptr_array_index(c->pending, i);
        if (pending->entries != NULL) {
            g_array_free(pending->entries, TRUE);
        }
        g_free(pending);
    }
    g_ptr_array_free(c->pending, TRUE);
    g_free(c->partition_states);
    g_free(c->load_epochs);
    g_free(g);
}
