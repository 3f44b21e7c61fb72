/*
** core/broker_serve.c: the leader's side of FetchRequest (ReplicaManager
** fetchMessages, Partition.fetchRecords, DelayedFetch): followers
** (replica_id >= 0) and consumers (replica_id -1) alike.
**
** A request is handled in three phases, in Kafka's order
** (Partition.fetchRecords: readRecords, then updateFollowerFetchState):
**   1. plan: each partition entry is validated (UNKNOWN_TOPIC_OR_PARTITION,
**      NOT_LEADER_OR_FOLLOWER, FENCED / UNKNOWN_LEADER_EPOCH) and checked for
**      a diverging epoch (KIP-320, followers in leader-epoch mode);
**   2. build: the response is assembled from the replicas' state as it is
**      before this request moved anything (Partition.readRecords takes the
**      HW, log start and LEO before reading): those three and the records
**      from the fetch offset up to the LEO (followers) or the HW (consumers);
**   3. record: a follower's fetch offset is recorded for every entry read
**      without an error or a diverging epoch (Replica.updateFetchStateOrThrow
**      through ks__replica_record_follower_fetch, which may expand the ISR
**      and advance the HW, completing produce and releasing consumer
**      fetches). Only when the request is first served: a parked one served
**      again does not record it again (ReplicaManager.readFromLog with
**      updateFetchState = !readFromPurgatory, from DelayedFetch.onComplete).
** So the HW a follower learns from a response is the one from before its own
** fetch moved it: the follower learns an advance one fetch later, and a
** follower parked with nothing to fetch learns it only with the next data or
** at max_wait (a HW advance does not complete a follower's DelayedFetch).
**
** A request with nothing to say (no error, no diverging epoch, fewer than
** min_bytes of records) parks for up to max_wait (DelayedFetch): it is served
** again on new data (followers), a HW advance (consumers), a leadership
** change, or its deadline, and then answered with whatever there is once the
** deadline passed.
**
** Invariants:
**   S1  a request parks only before its deadline, and a parked fetch keeps
**       its expiry timer armed until it is answered (the timer fires at the
**       deadline, or when the node resumes if it was paused then); each
**       source has at most one parked fetch (a new request from it replaces
**       the old one, whose sender timed out).
**   S2  every follower-state change a request causes happens in the record
**       phase, after its whole response is built, and only when it is first
**       served; a diverging or refused partition changes nothing.
**   S3  followers are served up to the LEO, consumers up to the HW.
*/
#include "broker_int.h"

#include <stdlib.h>
#include <string.h>

/* Whether serve_fetch may park a request that has nothing to say yet. */
enum serve_mode {
    SERVE_MAY_PARK,   /* a new request, or a released one before its deadline */
    SERVE_ANSWER_NOW, /* the deadline passed: answer with whatever there is */
};

/* The plan-phase outcome of one partition entry. */
struct entry_plan {
    struct ks__replica *replica; /* NULL when refused before the replica was found */
    int16_t error_code;
    bool diverging;
    int32_t diverging_epoch;
    int64_t diverging_end_offset;
    int32_t leader_epoch;
    bool record_fetch; /* set by build: read without an error, so phase 3 records it */
};

/* Whether serve_fetch records a follower's fetch (phase 3). */
enum serve_pass {
    SERVE_FIRST,          /* a new request */
    SERVE_FROM_PURGATORY, /* a parked request served again */
};

static void serve_fetch(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                        size_t message_bytes, enum serve_mode mode, enum serve_pass pass,
                        ks_time_ns deadline_ns);

static const struct ks_fetch_request_partition *request_entries(const uint8_t *request)
{
    return (const struct ks_fetch_request_partition *)(request + sizeof(struct ks_fetch_request));
}

static bool delayed_contains(const struct ks__delayed_fetch *item, int32_t topic_index,
                             int32_t partition)
{
    const struct ks_fetch_request *request = (const struct ks_fetch_request *)item->request;
    const struct ks_fetch_request_partition *entries = request_entries(item->request);
    for (int32_t i = 0; i < request->partition_count; i++) {
        if (entries[i].topic_index == topic_index && entries[i].partition == partition) {
            return true;
        }
    }
    return false;
}

static void delayed_free(struct ks__delayed_fetch *item)
{
    free(item->request);
    free(item);
}

/* DelayedFetch.tryComplete / onExpiration: answer now if the request has
 * min_bytes available (or whatever there is once it expired); otherwise it
 * parks again until its original deadline. */
static void delayed_complete(struct ks_broker *broker, struct ks__delayed_fetch *item,
                             enum serve_mode mode)
{
    g_ptr_array_remove(broker->delayed, item);
    ks_world_cancel(broker->world, item->timer);
    serve_fetch(broker, item->source, item->request, item->request_bytes, mode,
                SERVE_FROM_PURGATORY, item->deadline_ns);
    delayed_free(item);
}

static void delayed_expire(ks_world *world, void *context)
{
    (void)world;
    struct ks__delayed_fetch *item = context;
    item->timer = 0;
    delayed_complete(item->broker, item, SERVE_ANSWER_NOW);
}

static bool waiter_selected(const struct ks__delayed_fetch *item, enum ks__release_waiters waiters)
{
    switch (waiters) {
    case KS__RELEASE_FOLLOWERS: return item->origin == KS__FETCH_FROM_FOLLOWER;
    case KS__RELEASE_CONSUMERS: return item->origin == KS__FETCH_FROM_CONSUMER;
    case KS__RELEASE_ALL: return true;
    }
    return false;
}

void ks__serve_release(struct ks_broker *broker, int32_t topic_index, int32_t partition,
                       enum ks__release_waiters waiters)
{
    if (broker->delayed->len == 0) {
        return;
    }
    GPtrArray *ready = NULL;
    for (guint i = 0; i < broker->delayed->len; i++) {
        struct ks__delayed_fetch *item = g_ptr_array_index(broker->delayed, i);
        if (!waiter_selected(item, waiters)) {
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
        delayed_complete(broker, g_ptr_array_index(ready, i), SERVE_MAY_PARK);
    }
    g_ptr_array_free(ready, TRUE);
}

/* ---- phase 1: plan (validation) ------------------------------------------------------ */

/* KIP-320 diverging-epoch check (Partition.readRecords): the follower's last
 * fetched epoch ends below its fetch offset here, or is unknown here. */
static void check_diverging(const struct ks__replica *replica,
                            const struct ks_fetch_request_partition *entry, struct entry_plan *plan)
{
    int32_t epoch = -1;
    int64_t end = -1;
    if (!ks_log_epoch_end_offset(replica->log, entry->last_fetched_epoch, &epoch, &end)) {
        /* LeaderEpochFileCache.endOffsetFor: an epoch older than every
         * known one answers (requested epoch, start of the first known
         * epoch), which is the log start offset here; with no epochs
         * at all, (requested epoch, LEO). */
        epoch = entry->last_fetched_epoch;
        end = ks_log_latest_epoch(replica->log) >= 0 ? ks_log_start_offset(replica->log)
                                                     : ks__leo_of(replica);
    }
    if (epoch < entry->last_fetched_epoch || end < entry->fetch_offset) {
        plan->diverging = true;
        plan->diverging_epoch = epoch;
        plan->diverging_end_offset = end;
    }
}

static void plan_entry(struct ks_broker *broker, const struct ks_fetch_request *request,
                       const struct ks_fetch_request_partition *entry, struct entry_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->diverging_epoch = -1;
    plan->diverging_end_offset = -1;
    struct ks__replica *replica =
        ks__broker_find_replica(broker, entry->topic_index, entry->partition);
    if (replica == NULL) {
        plan->error_code = KS_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        return;
    }
    plan->replica = replica;
    if (replica->role != KS_ROLE_LEADER) {
        plan->error_code = KS_ERR_NOT_LEADER_OR_FOLLOWER;
    } else if (entry->current_leader_epoch >= 0 &&
               entry->current_leader_epoch < replica->state.leader_epoch) {
        plan->error_code = KS_ERR_FENCED_LEADER_EPOCH;
    } else if (entry->current_leader_epoch > replica->state.leader_epoch) {
        plan->error_code = KS_ERR_UNKNOWN_LEADER_EPOCH;
    }
    if (plan->error_code != KS_ERR_NONE) {
        return;
    }
    plan->leader_epoch = replica->state.leader_epoch;
    bool follower = request->replica_id >= 0;
    bool epochs = broker->spec->cluster->truncation == KS_TRUNCATION_LEADER_EPOCH;
    if (follower && epochs && entry->last_fetched_epoch >= 0) {
        check_diverging(replica, entry, plan);
    }
}

/* ---- phase 2: build ------------------------------------------------------------------ */

/* Appends one partition's response header and records to out; returns the
 * record bytes and whether the partition has something to say (an error or
 * a diverging epoch) in *says_something, and sets plan->record_fetch when it
 * was read without either. */
static size_t build_entry(struct ks__replica *replica,
                          const struct ks_fetch_request_partition *entry, struct entry_plan *plan,
                          enum ks__fetch_origin origin, bool room_left, GByteArray *out,
                          bool *says_something)
{
    struct ks_fetch_response_partition part;
    memset(&part, 0, sizeof part);
    part.topic_index = entry->topic_index;
    part.partition = entry->partition;
    part.hw = -1;
    part.log_start_offset = -1;
    part.leader_leo = -1;
    part.diverging_epoch = -1;
    part.diverging_end_offset = -1;
    part.error_code = plan->error_code;
    size_t header_position = out->len;
    g_byte_array_append(out, (const guint8 *)&part, sizeof part);
    *says_something = false;
    if (part.error_code != KS_ERR_NONE) {
        *says_something = true;
        memcpy(out->data + header_position, &part, sizeof part);
        return 0;
    }
    part.leader_epoch = plan->leader_epoch;
    part.log_start_offset = ks_log_start_offset(replica->log);
    part.leader_leo = ks__leo_of(replica);
    part.hw = replica->hw;
    if (plan->diverging) {
        part.diverging = 1;
        part.diverging_epoch = plan->diverging_epoch;
        part.diverging_end_offset = plan->diverging_end_offset;
        *says_something = true;
        memcpy(out->data + header_position, &part, sizeof part);
        return 0;
    }
    if (entry->fetch_offset < part.log_start_offset || entry->fetch_offset > part.leader_leo) {
        part.error_code = KS_ERR_OFFSET_OUT_OF_RANGE;
        *says_something = true;
        memcpy(out->data + header_position, &part, sizeof part);
        return 0;
    }
    int64_t upto = 0;
    switch (origin) { /* S3 */
    case KS__FETCH_FROM_FOLLOWER: upto = part.leader_leo; break;
    case KS__FETCH_FROM_CONSUMER: upto = replica->hw; break;
    }
    ks_assert(upto <= part.leader_leo); /* S3 with R1 */
    size_t before = out->len;
    if (entry->fetch_offset < upto && room_left) {
        size_t max = entry->partition_max_bytes > 0 ? (size_t)entry->partition_max_bytes : 1;
        enum ks_log_result result = ks_log_read(replica->log, entry->fetch_offset, upto, max, out);
        if (result == KS_LOG_OFFSET_OUT_OF_RANGE) {
            g_byte_array_set_size(out, (guint)before);
            part.error_code = KS_ERR_OFFSET_OUT_OF_RANGE;
            *says_something = true;
        } else if (result != KS_LOG_OK) {
            g_byte_array_set_size(out, (guint)before);
            part.error_code = KS_ERR_KAFKA_STORAGE_ERROR;
            *says_something = true;
        }
    }
    part.records_bytes = (uint32_t)(out->len - before);
    memcpy(out->data + header_position, &part, sizeof part);
    plan->record_fetch = part.error_code == KS_ERR_NONE;
    return part.records_bytes;
}

static void park(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                 size_t message_bytes, enum ks__fetch_origin origin, ks_time_ns deadline_ns)
{
    ks_time_ns now = ks__broker_now_ns(broker);
    ks_assert(deadline_ns > now); /* S1 */
    struct ks__delayed_fetch *item = calloc(1, sizeof *item);
    ks_assert(item != NULL);
    item->broker = broker;
    item->source = source;
    item->request = malloc(message_bytes);
    ks_assert(item->request != NULL);
    memcpy(item->request, message, message_bytes);
    item->request_bytes = message_bytes;
    item->origin = origin;
    item->deadline_ns = deadline_ns;
    g_ptr_array_add(broker->delayed, item);
    item->timer = ks_world_schedule(broker->world, (ks_node_id)broker->id, deadline_ns - now,
                                    KS_TIMER_BROKER_DELAYED_FETCH, delayed_expire, item);
}

/* Plans, builds and sends the response, or parks the request (fewer than
 * min_bytes available before deadline_ns; KS_TIME_NEVER for a new request:
 * now + max_wait). */
static void serve_fetch(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                        size_t message_bytes, enum serve_mode mode, enum serve_pass pass,
                        ks_time_ns deadline_ns)
{
    struct ks_fetch_request request;
    memcpy(&request, message, sizeof request);
    const struct ks_fetch_request_partition *entries = request_entries(message);
    enum ks__fetch_origin origin =
        request.replica_id < 0 ? KS__FETCH_FROM_CONSUMER : KS__FETCH_FROM_FOLLOWER;
    struct entry_plan *plans =
        g_new0(struct entry_plan, request.partition_count > 0 ? (gsize)request.partition_count : 1);
    for (int32_t i = 0; i < request.partition_count; i++) {
        plan_entry(broker, &request, &entries[i], &plans[i]);
    }
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
        bool says_something = false;
        total_records += build_entry(plans[i].replica, &entries[i], &plans[i], origin,
                                     total_records < response_max, out, &says_something);
        anything_to_say |= says_something;
    }
    if (origin == KS__FETCH_FROM_FOLLOWER && pass == SERVE_FIRST) { /* phase 3, S2 */
        for (int32_t i = 0; i < request.partition_count; i++) {
            if (plans[i].record_fetch) {
                ks__replica_record_follower_fetch(broker, plans[i].replica, request.replica_id,
                                                  request.replica_epoch, entries[i].fetch_offset);
            }
        }
    }
    g_free(plans);
    ks_time_ns now = ks__broker_now_ns(broker);
    if (deadline_ns == KS_TIME_NEVER) {
        deadline_ns = now + (ks_time_ns)(request.max_wait_ns > 0 ? request.max_wait_ns : 0);
    }
    size_t min_bytes = request.min_bytes > 1 ? (size_t)request.min_bytes : 1;
    bool may_park = false;
    switch (mode) {
    case SERVE_MAY_PARK: may_park = true; break;
    case SERVE_ANSWER_NOW: may_park = false; break;
    }
    if (may_park && !anything_to_say && total_records < min_bytes && deadline_ns > now) {
        g_byte_array_unref(out);
        park(broker, source, message, message_bytes, origin, deadline_ns);
        return;
    }
    ks__broker_send_at(broker, ks_disk_idle_at_ns(broker->world, (ks_node_id)broker->id), source,
                       KS_MSG_FETCH_RESPONSE, out->data, out->len);
    g_byte_array_unref(out);
}

void ks__serve_on_request(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                          size_t message_bytes)
{
    /* Followers and consumers always send a whole request. */
    ks_assert(message_bytes >= sizeof(struct ks_fetch_request));
    struct ks_fetch_request request;
    memcpy(&request, message, sizeof request);
    ks_assert(ks_proto_fits(message_bytes, sizeof request, request.partition_count,
                            sizeof(struct ks_fetch_request_partition)));
    /* A follower or consumer has one fetch outstanding: a new one from the
     * same source replaces a parked one (its sender timed out), S1. */
    for (guint i = 0; i < broker->delayed->len; i++) {
        struct ks__delayed_fetch *item = g_ptr_array_index(broker->delayed, i);
        if (item->source == source) {
            g_ptr_array_remove_index(broker->delayed, i);
            ks_world_cancel(broker->world, item->timer);
            delayed_free(item);
            break;
        }
    }
    serve_fetch(broker, source, message, message_bytes, SERVE_MAY_PARK, SERVE_FIRST, KS_TIME_NEVER);
}
