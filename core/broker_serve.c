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
**   S3  followers are served up to the LEO, consumers up to the HW, or the
**       last stable offset for a read_committed consumer (KIP-98: the first
**       offset of the oldest transaction not yet decided below the HW).
**   S4  a session's partitions are in (topic, partition) order, each once;
**       an incremental answer lists a partition only if it carries records,
**       an error or a diverging epoch, or its HW or log start differs from
**       the one last answered in that session.
**   S5  a serve of an incremental session visits (plans, reads, records) the
**       partitions the request lists, those touched since the session's last
**       serve (ks__serve_touch: the leader's LEO, log start, HW, role, epoch
**       or ISR changed) and those its last serve did not find quiet; every
**       other partition of the session is quiet: it would read nothing and
**       answer nothing new (fetch offset = LEO = HW, HW and log start as last
**       answered, no error), and its follower is caught up in the ISR, so
**       the one effect a fetch has on it is to set the follower's last fetch
**       and caught-up times to the fetch's time. That effect is kept lazily:
**       broker->session_fetch_ns holds each follower's last fetch time, read
**       for every quiet partition of it (broker_replica.c), and written into
**       the follower's state when the partition wakes (it is visited again,
**       forgotten, or its session ends or is replaced). Kafka's
**       IncrementalFetchContext visits the whole session on every fetch
**       (foreachPartition, then Partition.fetchRecords and
**       updateFollowerFetchState for each); the bytes out and every state
**       read are the same, only the cost is proportional to what changed.
**       KS_DEBUG builds check every unvisited partition is quiet.
**   S6  a parked fetch's key bits (one bit of 64 per partition,
**       key_bit) cover every partition it may be released for:
**       its session's (a session ORs in the bit of every partition it ever
**       held, and its partitions change only through a request of its own
**       follower, which replaces that follower's parked fetch first, S1) and
**       its request's. ks__serve_release tests the bit, kept in an array in
**       step with broker->delayed, before it looks at a parked fetch, so an
**       append costs the parked fetches that may hold its partition rather
**       than all of them (a leader of 100 brokers has up to 99 followers'
**       fetches parked). Kafka's DelayedOperationPurgatory finds them by
**       key (watchers per TopicPartitionOperationKey); completion order here
**       stays the order of broker->delayed, as before.
**   S7  a session's partition caches its replica (ks__session_partition
**       .replica): what ks__broker_find_replica answers for its key, set
**       when the partition joins the session and, for a replica created
**       later (a partition the leader did not host yet), when it opens
**       (S9); replicas are freed only when the broker stops, after its
**       sessions are dropped, so a cached one stays valid. A serve of a
**       session, its visits and its wake-ups use it instead of a lookup
**       per partition (at 100 brokers × 10,000 partitions the lookups were
**       the hottest function: a cache miss each). KS_DEBUG builds check
**       every cached replica after every message and at every use.
**   S8  a session's awake list (ks__fetch_session.awake, S5's partitions
**       its last serve did not find quiet) holds their session positions,
**       ascending, each below the session's length: a partition joining
**       the session (session_put) or leaving it (forgotten) shifts them
**       with the list (session_shift), and one leaving drops out, so a serve
**       takes them without a lookup (it looked each one up by key before).
**       ks_broker_check asserts the order and bounds; KS_DEBUG builds'
**       S5 check (session_check_quiet) fails on a position left behind.
**   S9  touches go straight to the sessions holding the partition: each
**       replica lists them with its position in each (ks__replica
**       .session_refs, the reverse of S7's cache, which is now always set:
**       a partition joining a session takes its replica then, and a
**       replica opened later joins the sessions already holding its key,
**       ks__serve_link_replica), and ks__serve_touch adds that position
**       to the session's touched list (ks__fetch_session.touched, each
**       once: ks__session_partition.touched), as session_request does for
**       the partitions a request lists. A serve takes its visits from the
**       awake and touched lists alone. A partition joining or leaving a
**       session moves the positions after it in both lists and in their
**       replicas' refs (session_shift); a session leaving (closed,
**       replaced, evicted, or every one when the broker stops, before its
**       replicas close) takes its refs along. ks_broker_check asserts
**       every session partition with a replica has exactly one ref at its
**       position, and no other ref exists. ks__serve_release asks the
**       refs of the appended partition's replica whether a parked session
**       fetch holds it, rather than searching the session (a binary search
**       per parked fetch its key bit lets through; 0.3 % of the run at
**       12 x 1,200). Before, the broker kept one list
**       of every key touched and each session scanned all of it at each
**       serve (at 12 brokers x 1,200 partitions ~8.6 keys a serve, most
**       for partitions it does not hold: a key bit test, then a binary
**       search for about one in three); and because that count was what
**       the "every partition" shortcut of session_visit compared with the
**       session's size, 73 % of the partitions visited there were quiet
**       ones visited whole (181,000 visits a simulated second; 70,000 now).
**       Whole run at that size: 297 M instructions per simulated second
**       before, 251 M after.
**
** KIP-227 fetch sessions, leader side (FetchSession.scala: FetchManager
** newContext, FullFetchContext, IncrementalFetchContext, FetchSessionCache,
** CachedPartition.maybeUpdateResponseData). A follower's full request
** (epoch 0) closes the session it names, if any, and creates one holding its
** partitions, when the cache has a free slot (max.incremental.fetch.session.
** cache.slots = 1000) or a session unused for 120 s to evict; otherwise it is
** answered without one (session id 0). An incremental request (epoch > 0)
** must name a known session (FETCH_SESSION_ID_NOT_FOUND) at its expected
** epoch (INVALID_FETCH_SESSION_EPOCH); its partitions update or join the
** session, its forgotten ones leave it, and the request is then served as
** the session's whole partition list, parked (DelayedFetch) as that list,
** and answered per S4. Every session is lost when the leader stops. Not
** modelled: Kafka's cache sharding and its eviction of a less-used session
** by a busier one (ksim's sessions all belong to followers, Kafka's
** privileged kind); consumers fetch sessionless.
**
** Cost: a fetch served allocates nothing in the common case, and makes one
** GLib call for its response's headers (bytes_reserve) rather than one per
** partition. The request a
** session expands to, the visit list and the response are built in buffers
** the broker keeps between serves (a pool, since a serve can nest in
** another: a HW advance releases a parked consumer fetch), the plans live
** on the stack for up to 8 partitions and in a kept buffer of the same
** pool for more, an incremental answer drops its
** quiet partitions in place, and an answered DelayedFetch is kept, with its
** request buffer, for the next park.
*/
#include "broker_int.h"

#include "array.h"

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
    int32_t current_leader_id; /* KIP-951 hint with the error; -1 none */
    int32_t current_leader_epoch;
    bool record_fetch;      /* set by build: read without an error, so phase 3 records it */
    uint32_t records_bytes; /* set by build */
};

/* Whether serve_fetch records a follower's fetch (phase 3). */
enum serve_pass {
    SERVE_FIRST,          /* a new request */
    SERVE_FROM_PURGATORY, /* a parked request served again */
};

/* The KIP-227 session a request is served in (S4). */
struct serve_session {
    int32_t id; /* 0: none */
    bool incremental;
    /* S5: the session positions (guint) of the request's entries, in order;
     * NULL when they are the session's whole list (a full request). */
    const GArray *visit;
    /* The session of id while it exists, else NULL: found once per serve
     * (sessions change only through a new request, never during a serve). */
    struct ks__fetch_session *cached;
};

static void serve_fetch(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                        size_t message_bytes, enum serve_mode mode, enum serve_pass pass,
                        struct serve_session session, ks_time_ns deadline_ns);
static bool session_holds(const struct ks__fetch_session *session, int32_t topic_index,
                          int32_t partition);
static struct ks__fetch_session *session_find(struct ks_broker *broker, int32_t id, guint *index);
static struct ks__replica *session_replica(struct ks_broker *broker,
                                           struct ks__session_partition *part);
static GByteArray *session_serve_request(struct ks_broker *broker,
                                         struct ks__fetch_session *session,
                                         const struct ks_fetch_request *header, GArray **visit_out);

static const struct ks_fetch_request_partition *request_entries(const uint8_t *request)
{
    return (const struct ks_fetch_request_partition *)(request + sizeof(struct ks_fetch_request));
}

/* S6: one bit of 64 for a partition (a multiplicative hash of its indexes:
 * the same on every run). */
static uint64_t key_bit(int32_t topic_index, int32_t partition)
{
    uint64_t key = (uint64_t)(uint32_t)topic_index << 32 | (uint32_t)partition;
    return UINT64_C(1) << ((key * UINT64_C(0x9E3779B97F4A7C15)) >> 58);
}

/* broker->delayed and broker->delayed_key_bits change together (S6). */
static void delayed_add(struct ks_broker *broker, struct ks__delayed_fetch *item, uint64_t key_bits)
{
    ks_ptr_array_add(broker->delayed, item);
    ks_array_append_val(broker->delayed_key_bits, key_bits);
}

/* g_ptr_array_remove_index and g_array_remove_index, inline: broker->
 * delayed has no free function, and neither array clears or is terminated
 * (about 110 instructions a parked fetch answered, in two GLib calls). */
static void delayed_remove_index(struct ks_broker *broker, guint index)
{
    guint after = broker->delayed->len - index - 1;
    memmove(&broker->delayed->pdata[index], &broker->delayed->pdata[index + 1],
            after * sizeof(gpointer));
    broker->delayed->len--;
    uint64_t *key_bits = (uint64_t *)(void *)broker->delayed_key_bits->data;
    memmove(&key_bits[index], &key_bits[index + 1], after * sizeof *key_bits);
    broker->delayed_key_bits->len--;
}

/* ---- buffers kept between serves ------------------------------------------------------- */

/* Makes room for `bytes` more at the end of out without changing its length,
 * and returns the length up to which bytes_claim may then take room without
 * a GLib call. GLib never shrinks an array's allocation, so the room stays
 * until out grows past it (records appended in between use some of it). */
static size_t bytes_reserve(GByteArray *out, size_t bytes)
{
    guint length = out->len;
    ks_byte_array_set_size(out, (guint)(length + bytes));
    ks_array_set_size((GArray *)(void *)out, length);
    return length + bytes;
}

/* Takes `bytes` of room made by bytes_reserve (not written yet) at the end
 * of out; returns their position. */
static size_t bytes_claim(GByteArray *out, size_t bytes)
{
    size_t position = out->len;
    out->len += (guint)bytes;
    return position;
}

#define SCRATCH_KEPT_MAX  8             /* buffers of each kind a broker keeps */
#define SCRATCH_BYTES_MAX (1024 * 1024) /* a larger one is freed, not kept */

/* The pools of kept buffers (broker->serve_scratch, serve_visits,
 * delayed_spare) are made with room for SCRATCH_KEPT_MAX and never hold
 * more, and have no free function and no NULL end, so taking the last one
 * and adding one are only the length (GLib's steal and add cost about 40
 * instructions each, several times per serve). */
static GPtrArray *pool_new(void)
{
    return g_ptr_array_sized_new(SCRATCH_KEPT_MAX);
}

static void *pool_take_last(GPtrArray *pool)
{
    ks_assert(pool->len > 0);
    return pool->pdata[--pool->len];
}

static void pool_add(GPtrArray *pool, void *item)
{
    ks_assert(pool->len < SCRATCH_KEPT_MAX); /* within the room made by pool_new */
    pool->pdata[pool->len++] = item;
}

/* An empty buffer from the broker's pool (a new one when it is empty).
 * Owned by the caller until scratch_give. */
static GByteArray *scratch_take(struct ks_broker *broker)
{
    if (broker->serve_scratch != NULL && broker->serve_scratch->len > 0) {
        GByteArray *bytes = pool_take_last(broker->serve_scratch);
        ks_array_set_size((GArray *)(void *)bytes, 0); /* a byte array: no clear, no zero end */
        return bytes;
    }
    return g_byte_array_sized_new(4096);
}

static void scratch_give(struct ks_broker *broker, GByteArray *bytes)
{
    if (broker->serve_scratch == NULL) {
        broker->serve_scratch = pool_new();
    }
    if (broker->serve_scratch->len >= SCRATCH_KEPT_MAX || bytes->len > SCRATCH_BYTES_MAX) {
        g_byte_array_unref(bytes);
        return;
    }
    pool_add(broker->serve_scratch, bytes);
}

/* An empty visit list (guint), as scratch_take. */
static GArray *visits_take(struct ks_broker *broker)
{
    if (broker->serve_visits != NULL && broker->serve_visits->len > 0) {
        GArray *visit = pool_take_last(broker->serve_visits);
        ks_array_set_size(visit, 0);
        return visit;
    }
    return g_array_new(FALSE, FALSE, sizeof(guint));
}

static void visits_give(struct ks_broker *broker, GArray *visit)
{
    if (visit == NULL) {
        return;
    }
    if (broker->serve_visits == NULL) {
        broker->serve_visits = pool_new();
    }
    if (broker->serve_visits->len >= SCRATCH_KEPT_MAX) {
        g_array_free(visit, TRUE);
        return;
    }
    pool_add(broker->serve_visits, visit);
}

void ks__serve_free_scratch(struct ks_broker *broker)
{
    if (broker->delayed_spare != NULL) {
        for (guint i = 0; i < broker->delayed_spare->len; i++) {
            struct ks__delayed_fetch *item = g_ptr_array_index(broker->delayed_spare, i);
            free(item->request);
            free(item);
        }
        g_ptr_array_free(broker->delayed_spare, TRUE);
        broker->delayed_spare = NULL;
    }
    if (broker->serve_scratch != NULL) {
        for (guint i = 0; i < broker->serve_scratch->len; i++) {
            g_byte_array_unref(g_ptr_array_index(broker->serve_scratch, i));
        }
        g_ptr_array_free(broker->serve_scratch, TRUE);
        broker->serve_scratch = NULL;
    }
    if (broker->serve_visits != NULL) {
        for (guint i = 0; i < broker->serve_visits->len; i++) {
            g_array_free(g_ptr_array_index(broker->serve_visits, i), TRUE);
        }
        g_ptr_array_free(broker->serve_visits, TRUE);
        broker->serve_visits = NULL;
    }
}

/* S9: whether the session holds the replica's partition: its refs say. */
static bool replica_in_session(const struct ks__replica *replica,
                               const struct ks__fetch_session *session)
{
    for (uint32_t i = 0; i < replica->session_ref_count; i++) {
        if (replica->session_refs[i].session == session) {
            return true;
        }
    }
    return false;
}

/* replica: the partition's, or NULL when the broker hosts none (then a
 * session is searched). */
static bool delayed_contains(const struct ks__delayed_fetch *item, int32_t topic_index,
                             int32_t partition, const struct ks__replica *replica)
{
    if (item->session != NULL) { /* S5 */
#if KS_DEBUG
        ks_assert(replica == NULL || replica_in_session(replica, item->session) ==
                                         session_holds(item->session, topic_index, partition));
#endif
        return replica != NULL ? replica_in_session(replica, item->session)
                               : session_holds(item->session, topic_index, partition);
    }
    const struct ks_fetch_request *request = (const struct ks_fetch_request *)item->request;
    const struct ks_fetch_request_partition *entries = request_entries(item->request);
    for (int32_t i = 0; i < request->partition_count; i++) {
        if (entries[i].topic_index == topic_index && entries[i].partition == partition) {
            return true;
        }
    }
    return false;
}

/* An answered or replaced parked fetch goes to the broker's spares, for
 * the next park (a follower parks after nearly every fetch). */
static void delayed_free(struct ks__delayed_fetch *item)
{
    struct ks_broker *broker = item->broker;
    if (broker->delayed_spare == NULL) {
        broker->delayed_spare = pool_new();
    }
    if (broker->delayed_spare->len >= SCRATCH_KEPT_MAX ||
        item->request_capacity_bytes > SCRATCH_BYTES_MAX) {
        free(item->request);
        free(item);
        return;
    }
    pool_add(broker->delayed_spare, item);
}

/* DelayedFetch.tryComplete / onExpiration: answer now if the request has
 * min_bytes available (or whatever there is once it expired); otherwise it
 * parks again until its original deadline. */
static void delayed_complete(struct ks_broker *broker, struct ks__delayed_fetch *item,
                             enum serve_mode mode)
{
    guint index = 0; /* a loop: g_ptr_array_find calls a function per element */
    while (index < broker->delayed->len && g_ptr_array_index(broker->delayed, index) != item) {
        index++;
    }
    ks_assert(index < broker->delayed->len);
    delayed_remove_index(broker, index);
    ks_world_cancel(broker->world, item->timer);
    /* item->session is the session of its id while that exists (S5), but
     * only for an incremental request. */
    struct ks__fetch_session *cached =
        item->session != NULL ? item->session : session_find(broker, item->session_id, NULL);
    struct serve_session session = { item->session_id, item->incremental, NULL, cached };
    if (item->session != NULL) {
        /* S5: the session's partitions to visit now, from its request's
         * header (a parked request of a session is its whole list). */
        GArray *visit = NULL;
        GByteArray *request = session_serve_request(
            broker, item->session, (const struct ks_fetch_request *)item->request, &visit);
        session.visit = visit;
        serve_fetch(broker, item->source, request->data, request->len, mode, SERVE_FROM_PURGATORY,
                    session, item->deadline_ns);
        scratch_give(broker, request);
        visits_give(broker, visit);
    } else {
        serve_fetch(broker, item->source, item->request, item->request_bytes, mode,
                    SERVE_FROM_PURGATORY, session, item->deadline_ns);
    }
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
    /* Collected first: completing one changes broker->delayed. On the heap
     * only when more than the local array's match (a leader of 100 brokers
     * has up to 99 fetches parked, of which an append wakes a few). */
    struct ks__delayed_fetch *local[16];
    struct ks__delayed_fetch **ready = local;
    guint ready_count = 0;
    uint64_t bit = key_bit(topic_index, partition);
    const uint64_t *key_bits = (const uint64_t *)(void *)broker->delayed_key_bits->data;
    /* S9: the sessions holding it, from its replica's refs (found once). */
    const struct ks__replica *replica = NULL;
    bool replica_found = false;
    for (guint i = 0; i < broker->delayed->len; i++) {
        struct ks__delayed_fetch *item = g_ptr_array_index(broker->delayed, i);
        if ((key_bits[i] & bit) == 0) {
#if KS_DEBUG
            ks_assert(!delayed_contains(item, topic_index, partition, NULL)); /* S6 */
#endif
            continue;
        }
        if (!replica_found && item->session != NULL) {
            replica = ks__broker_find_replica(broker, topic_index, partition);
            replica_found = true;
        }
        if (waiter_selected(item, waiters) &&
            delayed_contains(item, topic_index, partition, replica)) {
            if (ready == local && ready_count == G_N_ELEMENTS(local)) {
                ready = g_new(struct ks__delayed_fetch *, broker->delayed->len);
                memcpy(ready, local, sizeof local);
            }
            ready[ready_count++] = item;
        }
    }
    for (guint i = 0; i < ready_count; i++) {
        delayed_complete(broker, ready[i], SERVE_MAY_PARK);
    }
    if (ready != local) {
        g_free(ready);
    }
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

/* KIP-951 (client.leader.discovery): KafkaApis.handleFetchRequest adds the
 * partition's leader from the broker's metadata cache (getCurrentLeader) to a
 * NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH answer, as the produce path
 * does (core/broker_produce.c). -1, -1 when the broker knows no leader. */
static void current_leader_hint(const struct ks_broker *broker, const struct ks__replica *replica,
                                int16_t error_code, int32_t *leader_out, int32_t *epoch_out)
{
    *leader_out = -1;
    *epoch_out = -1;
    if (!broker->spec->cluster->client_leader_discovery ||
        (error_code != KS_ERR_NOT_LEADER_OR_FOLLOWER && error_code != KS_ERR_FENCED_LEADER_EPOCH)) {
        return;
    }
    const struct ks_partition_state *state =
        &broker->meta[replica->topic_index][replica->partition];
    if (state->partition_epoch >= 0 && state->leader >= 1) {
        *leader_out = state->leader;
        *epoch_out = state->leader_epoch;
    }
}

int16_t ks__serve_epoch_error(const struct ks__replica *replica, int32_t current_leader_epoch)
{
    if (replica->role != KS_ROLE_LEADER) {
        return KS_ERR_NOT_LEADER_OR_FOLLOWER;
    }
    if (current_leader_epoch >= 0 && current_leader_epoch < replica->state.leader_epoch) {
        return KS_ERR_FENCED_LEADER_EPOCH;
    }
    if (current_leader_epoch > replica->state.leader_epoch) {
        return KS_ERR_UNKNOWN_LEADER_EPOCH;
    }
    return KS_ERR_NONE;
}

struct ks__replica *ks__serve_leader_for(struct ks_broker *broker, int32_t topic_index,
                                         int32_t partition, int32_t current_leader_epoch,
                                         int16_t *error_code)
{
    struct ks__replica *replica = ks__broker_find_replica(broker, topic_index, partition);
    *error_code = replica == NULL ? KS_ERR_UNKNOWN_TOPIC_OR_PARTITION
                                  : ks__serve_epoch_error(replica, current_leader_epoch);
    return *error_code == KS_ERR_NONE ? replica : NULL;
}

/* part: the session's partition the entry was made from, or NULL (S7). */
static void plan_entry(struct ks_broker *broker, const struct ks_fetch_request *request,
                       const struct ks_fetch_request_partition *entry,
                       struct ks__session_partition *part, struct entry_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->diverging_epoch = -1;
    plan->diverging_end_offset = -1;
    plan->current_leader_id = -1;
    plan->current_leader_epoch = -1;
    struct ks__replica *replica =
        part != NULL ? session_replica(broker, part)
                     : ks__broker_find_replica(broker, entry->topic_index, entry->partition);
    if (replica == NULL) {
        plan->error_code = KS_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        return;
    }
    plan->replica = replica;
    plan->error_code = ks__serve_epoch_error(replica, entry->current_leader_epoch);
    if (plan->error_code != KS_ERR_NONE) {
        current_leader_hint(broker, replica, plan->error_code, &plan->current_leader_id,
                            &plan->current_leader_epoch);
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
static size_t build_entry_records(struct ks__replica *replica,
                                  const struct ks_fetch_request_partition *entry,
                                  struct entry_plan *plan, enum ks__fetch_origin origin,
                                  bool read_committed, bool room_left, GByteArray *out,
                                  bool *says_something, int64_t *upto_out);

/* A read_committed consumer's trailer (struct ks_fetch_txn_trailer): the
 * LSO it was served up to and the aborted transactions that overlap what it
 * can read from its fetch offset (Partition.fetchRecords with
 * FetchIsolation.TXN_COMMITTED, UnifiedLog.collectAbortedTransactions). */
static void append_txn_trailer(struct ks__replica *replica,
                               const struct ks_fetch_request_partition *entry, int64_t lso,
                               GByteArray *out)
{
    struct ks_fetch_txn_trailer trailer;
    memset(&trailer, 0, sizeof trailer);
    trailer.last_stable_offset = lso;
    GArray *aborted = g_array_new(FALSE, FALSE, sizeof(struct ks_aborted_txn));
    if (lso >= 0 && entry->fetch_offset < lso) {
        ks_log_collect_aborted(replica->log, entry->fetch_offset, lso, aborted);
    }
    trailer.aborted_count = (int32_t)aborted->len;
    ks_byte_array_append(out, (const guint8 *)&trailer, sizeof trailer);
    for (guint i = 0; i < aborted->len; i++) {
        const struct ks_aborted_txn *txn = &g_array_index(aborted, struct ks_aborted_txn, i);
        struct ks_fetch_aborted wire = { txn->producer_id, txn->first_offset };
        ks_byte_array_append(out, (const guint8 *)&wire, sizeof wire);
    }
    g_array_free(aborted, TRUE);
}

static size_t build_entry(struct ks__replica *replica,
                          const struct ks_fetch_request_partition *entry, struct entry_plan *plan,
                          enum ks__fetch_origin origin, bool read_committed, bool room_left,
                          GByteArray *out, bool *says_something)
{
    int64_t upto = -1;
    size_t records = build_entry_records(replica, entry, plan, origin, read_committed, room_left,
                                         out, says_something, &upto);
    if (read_committed) {
        append_txn_trailer(replica, entry, upto, out);
    }
    return records;
}

static size_t build_entry_records(struct ks__replica *replica,
                                  const struct ks_fetch_request_partition *entry,
                                  struct entry_plan *plan, enum ks__fetch_origin origin,
                                  bool read_committed, bool room_left, GByteArray *out,
                                  bool *says_something, int64_t *upto_out)
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
    part.current_leader_id = plan->current_leader_id;
    part.current_leader_epoch = plan->current_leader_epoch;
    /* The header's room was reserved by the caller (bytes_claim); it is
     * written once it is complete. */
    size_t header_position = bytes_claim(out, sizeof part);
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
    case KS__FETCH_FROM_CONSUMER:
        upto = read_committed ? ks_log_last_stable_offset(replica->log, replica->hw) : replica->hw;
        break;
    }
    ks_assert(upto <= part.leader_leo); /* S3 with R1 */
    *upto_out = upto;
    size_t before = out->len;
    if (entry->fetch_offset < upto && room_left) {
        size_t max = entry->partition_max_bytes > 0 ? (size_t)entry->partition_max_bytes : 1;
        enum ks_log_result result = ks_log_read(replica->log, entry->fetch_offset, upto, max, out);
        if (result == KS_LOG_OFFSET_OUT_OF_RANGE) {
            ks_byte_array_set_size(out, (guint)before);
            part.error_code = KS_ERR_OFFSET_OUT_OF_RANGE;
            *says_something = true;
        } else if (result != KS_LOG_OK) {
            ks_byte_array_set_size(out, (guint)before);
            part.error_code = KS_ERR_KAFKA_STORAGE_ERROR;
            *says_something = true;
        }
    }
    part.records_bytes = (uint32_t)(out->len - before);
    memcpy(out->data + header_position, &part, sizeof part);
    plan->record_fetch = part.error_code == KS_ERR_NONE;
    plan->records_bytes = part.records_bytes;
    return part.records_bytes;
}

/* ---- KIP-227 fetch sessions (S4, S5) ------------------------------------------------ */

#define SESSION_CACHE_SLOTS 1000                /* max.incremental.fetch.session.cache.slots */
#define SESSION_EVICTION_NS (120 * KS_NS_PER_S) /* FetchSessionCache's evictionMs */

typedef struct ks_fetch_forgotten partition_key;

static int partition_order(int32_t topic_a, int32_t partition_a, int32_t topic_b,
                           int32_t partition_b)
{
    if (topic_a != topic_b) {
        return topic_a < topic_b ? -1 : 1;
    }
    return partition_a < partition_b ? -1 : (partition_a > partition_b ? 1 : 0);
}

static const struct ks__session_partition *session_at(const struct ks__fetch_session *session,
                                                      guint at)
{
    return &g_array_index(session->partitions, struct ks__session_partition, at);
}

/* S7: the replica of a session's partition, through its cache (S9 keeps
 * it set from the partition's joining or its replica's opening). */
static struct ks__replica *session_replica(struct ks_broker *broker,
                                           struct ks__session_partition *part)
{
#if KS_DEBUG
    ks_assert(part->replica ==
              ks__broker_find_replica(broker, part->request.topic_index, part->request.partition));
#else
    (void)broker;
#endif
    return part->replica;
}

static struct ks__session_partition *session_part(struct ks__fetch_session *session, guint at)
{
    return &g_array_index(session->partitions, struct ks__session_partition, at);
}

/* ---- S9: each replica's sessions (the reverse of ks__session_partition.replica) ---- */

static void ref_add(struct ks__replica *replica, struct ks__fetch_session *session, guint at)
{
    if (replica->session_ref_count == replica->session_ref_capacity) {
        uint32_t capacity =
            replica->session_ref_capacity > 0 ? replica->session_ref_capacity * 2 : 2;
        replica->session_refs =
            realloc(replica->session_refs, capacity * sizeof *replica->session_refs);
        ks_assert(replica->session_refs != NULL);
        replica->session_ref_capacity = capacity;
    }
    struct ks__session_ref *ref = &replica->session_refs[replica->session_ref_count++];
    ref->session = session;
    ref->at = at;
}

static struct ks__session_ref *ref_find(struct ks__replica *replica,
                                        const struct ks__fetch_session *session)
{
    for (uint32_t i = 0; i < replica->session_ref_count; i++) {
        if (replica->session_refs[i].session == session) {
            return &replica->session_refs[i];
        }
    }
    ks_assert(false && "S9: a session partition's replica lists its session");
    return NULL;
}

/* The order of a replica's refs matters to nobody: the last moves into the gap. */
static void ref_remove(struct ks__replica *replica, const struct ks__fetch_session *session)
{
    struct ks__session_ref *ref = ref_find(replica, session);
    *ref = replica->session_refs[--replica->session_ref_count];
}

guint ks__key_position(const void *base, guint count, size_t stride, int32_t topic_index,
                       int32_t partition, bool *found)
{
    guint low = 0;
    guint high = count;
    while (low < high) {
        guint middle = low + (high - low) / 2;
        partition_key key;
        memcpy(&key, (const uint8_t *)base + (size_t)middle * stride, sizeof key);
        int order = partition_order(key.topic_index, key.partition, topic_index, partition);
        if (order == 0) {
            *found = true;
            return middle;
        }
        if (order < 0) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    *found = false;
    return low;
}

/* The position of (topic, partition) in the session, or where it belongs. */
static guint session_position(const struct ks__fetch_session *session, int32_t topic_index,
                              int32_t partition, bool *found)
{
    return ks__key_position(session->partitions->data, session->partitions->len,
                            sizeof(struct ks__session_partition), topic_index, partition, found);
}

static bool session_holds(const struct ks__fetch_session *session, int32_t topic_index,
                          int32_t partition)
{
    bool found = false;
    session_position(session, topic_index, partition, &found);
    return found;
}

/* S5: every quiet partition of the session wakes (its follower's fetch
 * times brought up to the session's last fetch), and the session's next
 * serve visits all its partitions: the session ends, or its follower
 * opened another one. */
static void session_wake_all(struct ks_broker *broker, struct ks__fetch_session *session)
{
    for (guint i = 0; i < session->partitions->len; i++) {
        ks__replica_follower_wake(broker, session_replica(broker, session_part(session, i)),
                                  session->replica_id);
    }
    session->visit_all = true;
}

static void session_free(struct ks_broker *broker, struct ks__fetch_session *session)
{
    session_wake_all(broker, session);
    for (guint i = 0; i < session->partitions->len; i++) {
        struct ks__replica *replica = session_part(session, i)->replica;
        if (replica != NULL) {
            ref_remove(replica, session); /* S9 */
        }
    }
    for (guint i = 0; i < broker->delayed->len; i++) {
        struct ks__delayed_fetch *item = g_ptr_array_index(broker->delayed, i);
        if (item->session == session) {
            item->session = NULL; /* answered as it was parked (S4: everything) */
        }
    }
    g_array_free(session->partitions, TRUE);
    g_array_free(session->awake, TRUE);
    g_array_free(session->touched, TRUE);
    free(session);
}

void ks__serve_drop_sessions(struct ks_broker *broker)
{
    if (broker->fetch_sessions == NULL) {
        return;
    }
    for (guint i = 0; i < broker->fetch_sessions->len; i++) {
        session_free(broker, g_ptr_array_index(broker->fetch_sessions, i));
    }
    g_ptr_array_free(broker->fetch_sessions, TRUE);
    broker->fetch_sessions = NULL;
}

/* S9: the partition at `at` joins the session's touched list (once). */
static void session_mark(struct ks__fetch_session *session, guint at)
{
    struct ks__session_partition *part = session_part(session, at);
    if (!part->touched) {
        part->touched = true;
        ks_array_append_val(session->touched, at);
    }
}

void ks__serve_touch(struct ks_broker *broker, const struct ks__replica *replica)
{
    ks__fetcher_touch(broker, replica);
    /* S9: straight to the sessions holding it (a new session visits all
     * its partitions at first, but marking them costs nothing more). */
    for (uint32_t i = 0; i < replica->session_ref_count; i++) {
        session_mark(replica->session_refs[i].session, replica->session_refs[i].at);
    }
}

void ks__serve_link_replica(struct ks_broker *broker, struct ks__replica *replica)
{
    for (guint i = 0; broker->fetch_sessions != NULL && i < broker->fetch_sessions->len; i++) {
        struct ks__fetch_session *session = g_ptr_array_index(broker->fetch_sessions, i);
        bool found = false;
        guint at = session_position(session, replica->topic_index, replica->partition, &found);
        if (found) {
            struct ks__session_partition *part = session_part(session, at);
            ks_assert(part->replica == NULL); /* none could be found before it opened */
            part->replica = replica;
            ref_add(replica, session, at);
        }
    }
}

static struct ks__fetch_session *session_find(struct ks_broker *broker, int32_t id, guint *index)
{
    if (broker->fetch_sessions == NULL || id == 0) {
        return NULL;
    }
    for (guint i = 0; i < broker->fetch_sessions->len; i++) {
        struct ks__fetch_session *session = g_ptr_array_index(broker->fetch_sessions, i);
        if (session->id == id) {
            if (index != NULL) {
                *index = i;
            }
            return session;
        }
    }
    return NULL;
}

/* S8, S9: a list of session positions follows a partition inserted at
 * `at` (inserted: those at or past it move up one) or removed from there
 * (that one leaves the list, those past it move down one). */
static void positions_shift(GArray *positions, guint at, bool inserted)
{
    guint *list = (guint *)(void *)positions->data;
    guint kept = 0;
    for (guint i = 0; i < positions->len; i++) {
        guint position = list[i];
        if (position >= at) {
            if (!inserted && position == at) {
                continue;
            }
            position = inserted ? position + 1 : position - 1;
        }
        list[kept++] = position;
    }
    ks_array_set_size(positions, kept);
}

/* S8, S9: everything that holds session positions follows a partition
 * inserted at `at` or removed from there. */
static void session_shift(struct ks__fetch_session *session, guint at, bool inserted)
{
    positions_shift(session->awake, at, inserted);
    positions_shift(session->touched, at, inserted);
    for (guint i = at; i < session->partitions->len; i++) {
        struct ks__session_partition *part = session_part(session, i);
        if (part->replica != NULL) {
            ref_find(part->replica, session)->at = i;
        }
    }
}

/* Updates or adds a partition of the session; returns its position. */
static guint session_put(struct ks_broker *broker, struct ks__fetch_session *session,
                         const struct ks_fetch_request_partition *entry)
{
    bool found = false;
    guint at = session_position(session, entry->topic_index, entry->partition, &found);
    if (found) {
        g_array_index(session->partitions, struct ks__session_partition, at).request = *entry;
        return at;
    }
    struct ks__session_partition part;
    memset(&part, 0, sizeof part);
    part.request = *entry;
    session->key_bits |= key_bit(entry->topic_index, entry->partition); /* S6 */
    part.hw = -1;
    part.log_start_offset = -1;
    part.replica = ks__broker_find_replica(broker, entry->topic_index, entry->partition); /* S9 */
    g_array_insert_val(session->partitions, at, part);
    if (part.replica != NULL) {
        ref_add(part.replica, session, at); /* those past it move in session_shift */
    }
    session_shift(session, at, true);
    return at;
}

/* FetchSessionCache.maybeCreateSession: a free slot, or the least recently
 * used session if it is stale; NULL when the cache is full. */
static struct ks__fetch_session *session_create(struct ks_broker *broker, int32_t replica_id,
                                                int64_t replica_epoch)
{
    ks_time_ns now = ks__broker_now_ns(broker);
    if (broker->fetch_sessions == NULL) {
        broker->fetch_sessions = g_ptr_array_new();
    }
    if (broker->fetch_sessions->len >= SESSION_CACHE_SLOTS) {
        guint oldest = 0;
        for (guint i = 1; i < broker->fetch_sessions->len; i++) {
            const struct ks__fetch_session *a = g_ptr_array_index(broker->fetch_sessions, i);
            const struct ks__fetch_session *b = g_ptr_array_index(broker->fetch_sessions, oldest);
            if (a->last_used_ns < b->last_used_ns) {
                oldest = i;
            }
        }
        struct ks__fetch_session *victim = g_ptr_array_index(broker->fetch_sessions, oldest);
        if (victim->last_used_ns + SESSION_EVICTION_NS > now) {
            return NULL;
        }
        g_ptr_array_remove_index(broker->fetch_sessions, oldest);
        session_free(broker, victim);
    }
    struct ks__fetch_session *session = calloc(1, sizeof *session);
    ks_assert(session != NULL);
    /* Kafka draws random ids; ksim numbers them, with the incarnation in the
     * high bits so that a session of an earlier life is never found. */
    session->id = (int32_t)(((uint32_t)broker->incarnation & 0x7fu) << 24 |
                            ((uint32_t)++broker->fetch_session_count & 0xffffffu));
    session->epoch = 1;
    session->replica_id = replica_id;
    session->replica_epoch = replica_epoch;
    session->last_used_ns = now;
    session->partitions = g_array_new(FALSE, FALSE, sizeof(struct ks__session_partition));
    session->awake = g_array_new(FALSE, FALSE, sizeof(guint));
    session->touched = g_array_new(FALSE, FALSE, sizeof(guint));
    session->visit_all = true; /* until session_settle has seen them all */
    ks_ptr_array_add(broker->fetch_sessions, session);
    return session;
}

#define VISIT_INSERT_MAX 32 /* up to this many, a visit list is sorted as it is made */

/* Adds the session position at to list[0, *count), in order and once. */
static inline __attribute__((always_inline)) void visit_add_at(guint *list, guint *count, guint at)
{
    guint j = *count;
    while (j > 0 && list[j - 1] > at) {
        j--;
    }
    if (j > 0 && list[j - 1] == at) {
        return;
    }
    if (j < *count) { /* mostly it goes at the end: no libc call */
        memmove(list + j + 1, list + j, (*count - j) * sizeof *list);
    }
    list[j] = at;
    (*count)++;
}

#define VISIT_BITMAP_STACK_WORDS 256 /* positions below 16,384: the bitmap on the stack */

static inline void visit_bit_set(uint64_t *bits, guint length, guint at)
{
    ks_assert(at < length); /* S8 */
    bits[at >> 6] |= UINT64_C(1) << (at & 63);
}

/* ks__serve_visit_union for at most VISIT_INSERT_MAX positions, inlined in
 * session_visit: most serves visit a few partitions. */
static inline __attribute__((always_inline)) guint
visit_union_short(const guint *awake, guint awake_count, const guint *touched, guint touched_count,
                  guint *out)
{
    guint count = 0;
    /* S8: the awake ones by position; in order, so the sorted list takes
     * each at its end. */
    for (guint i = 0; i < awake_count; i++) {
        visit_add_at(out, &count, awake[i]);
    }
    for (guint i = 0; i < touched_count; i++) {
        visit_add_at(out, &count, touched[i]);
    }
    return count;
}

guint ks__serve_visit_union(const guint *awake, guint awake_count, const guint *touched,
                            guint touched_count, guint length, guint *out)
{
    if (awake_count + touched_count <= VISIT_INSERT_MAX) {
        return visit_union_short(awake, awake_count, touched, touched_count, out);
    }
    guint count = 0;
    /* The same ascending list, each position once, from a bitmap of the
     * session's positions: one bit per partition to clear and scan instead
     * of a qsort of every position and a pass for duplicates (at 12 x
     * 10,000 with 5,000 records/s the qsort was 2.4 % of the run). */
    guint words = (length + 63) / 64;
    uint64_t bits_stack[VISIT_BITMAP_STACK_WORDS];
    uint64_t *bits = words <= VISIT_BITMAP_STACK_WORDS ? bits_stack : g_new(uint64_t, words);
    memset(bits, 0, words * sizeof *bits);
    for (guint i = 0; i < awake_count; i++) {
        visit_bit_set(bits, length, awake[i]);
    }
    for (guint i = 0; i < touched_count; i++) {
        visit_bit_set(bits, length, touched[i]);
    }
    for (guint w = 0; w < words; w++) {
        for (uint64_t word = bits[w]; word != 0; word &= word - 1) {
            out[count++] = w * 64 + (guint)__builtin_ctzll(word);
        }
    }
    if (bits != bits_stack) {
        g_free(bits);
    }
    return count;
}

/* S5: the positions of the partitions a serve of the session visits, in
 * order: those awake, and those touched or listed since its last serve
 * (S9: its touched list); every one after visit_all, or when there are no
 * fewer of them than the session holds (a small session: the same serve,
 * for less). Each wakes (its fetch times as of the session's last fetch)
 * before anything reads or records it. */
static GArray *session_visit(struct ks_broker *broker, struct ks__fetch_session *session)
{
    guint *touched = (guint *)(void *)session->touched->data;
    guint touched_count = session->touched->len;
    guint bound = touched_count + session->awake->len;
    if (session->visit_all || bound >= session->partitions->len) {
        for (guint i = 0; i < touched_count; i++) {
            session_part(session, touched[i])->touched = false;
        }
        ks_array_set_size(session->touched, 0);
        session->visit_all = false;
        ks_array_set_size(session->awake, session->partitions->len);
        guint *awake = (guint *)(void *)session->awake->data;
        for (guint i = 0; i < session->partitions->len; i++) {
            struct ks__session_partition *part = session_part(session, i);
            ks__replica_follower_wake(broker, session_replica(broker, part), session->replica_id);
            awake[i] = i;
        }
        return NULL; /* NULL: every partition, in the session's order */
    }
    GArray *visit = visits_take(broker);
    ks_array_set_size(visit, bound);
    guint *list = (guint *)(void *)visit->data;
    for (guint i = 0; i < touched_count; i++) {
        session_part(session, touched[i])->touched = false;
    }
    const guint *awake = (const guint *)(const void *)session->awake->data;
    guint count = bound <= VISIT_INSERT_MAX
                      ? visit_union_short(awake, session->awake->len, touched, touched_count, list)
                      : ks__serve_visit_union(awake, session->awake->len, touched, touched_count,
                                              session->partitions->len, list);
    ks_array_set_size(session->touched, 0);
    ks_array_set_size(visit, count);
    session->visit_all = false;
    /* Awake until session_settle finds them quiet. */
    ks_array_set_size(session->awake, count);
    if (count > 0) { /* an empty list may have no data at all */
        memcpy(session->awake->data, list, count * sizeof *list);
    }
    for (guint i = 0; i < count; i++) {
        struct ks__session_partition *part = session_part(session, list[i]);
        ks__replica_follower_wake(broker, session_replica(broker, part), session->replica_id);
    }
    return visit;
}

#if KS_DEBUG
/* S5: a partition a serve does not visit is quiet: its follower's state is,
 * and so is what the leader would answer (nothing: no records, no error,
 * HW and log start as last answered). */
static void session_check_quiet(struct ks_broker *broker, const struct ks__fetch_session *session,
                                const GArray *visit)
{
    guint next = 0;
    for (guint i = 0; i < session->partitions->len; i++) {
        if (next < visit->len && g_array_index(visit, guint, next) == i) {
            next++;
            continue;
        }
        const struct ks__session_partition *part = session_at(session, i);
        const struct ks__replica *replica =
            ks__broker_find_replica(broker, part->request.topic_index, part->request.partition);
        ks_assert(replica != NULL && replica->role == KS_ROLE_LEADER);
        ks_assert(ks__serve_epoch_error(replica, part->request.current_leader_epoch) ==
                  KS_ERR_NONE);
        ks_assert(part->request.fetch_offset == ks__leo_of(replica));
        ks_assert(replica->hw == part->hw);
        ks_assert(ks_log_start_offset(replica->log) == part->log_start_offset);
        bool quiet = false;
        for (int32_t f = 0; f < replica->follower_count; f++) {
            if (replica->followers[f].broker_id == session->replica_id) {
                quiet = replica->followers[f].quiet;
            }
        }
        ks_assert(quiet);
    }
}
#endif

/* A request of the header with the entries of the session's partitions at
 * the positions in visit (all when NULL). */
static GByteArray *session_entries(struct ks_broker *broker,
                                   const struct ks__fetch_session *session,
                                   struct ks_fetch_request *header, const GArray *visit)
{
    guint count = visit != NULL ? visit->len : session->partitions->len;
    header->partition_count = (int32_t)count;
    GByteArray *out = scratch_take(broker);
    ks_byte_array_set_size(
        out, (guint)(sizeof *header + count * sizeof(struct ks_fetch_request_partition)));
    memcpy(out->data, header, sizeof *header);
    struct ks_fetch_request_partition *entries =
        (struct ks_fetch_request_partition *)(out->data + sizeof *header);
    for (guint i = 0; i < count; i++) {
        const struct ks__session_partition *part =
            session_at(session, visit != NULL ? g_array_index(visit, guint, i) : i);
        memcpy(&entries[i], &part->request, sizeof part->request);
    }
    return out;
}

/* The request a serve of the session answers: header with the entries of
 * the partitions it visits (*visit_out, session positions; NULL: all). */
static GByteArray *session_serve_request(struct ks_broker *broker,
                                         struct ks__fetch_session *session,
                                         const struct ks_fetch_request *header, GArray **visit_out)
{
    GArray *visit = session_visit(broker, session);
    struct ks_fetch_request request = *header;
    request.forgotten_count = 0;
    GByteArray *out = session_entries(broker, session, &request, visit);
    *visit_out = visit;
    return out;
}

/* FetchManager.newContext for a follower's session request: applies it to
 * the cache and returns the request to serve (S5: the session's partitions
 * to visit, a new array, their positions in *visit_out, NULL for a full
 * request), or NULL with the session error in *error_code. */
static GByteArray *session_request(struct ks_broker *broker, const uint8_t *message,
                                   struct serve_session *session_out, GArray **visit_out,
                                   int16_t *error_code)
{
    struct ks_fetch_request request;
    memcpy(&request, message, sizeof request);
    const struct ks_fetch_request_partition *entries = request_entries(message);
    const uint8_t *forgotten_bytes =
        message + sizeof request +
        (size_t)request.partition_count * sizeof(struct ks_fetch_request_partition);
    *error_code = KS_ERR_NONE;
    *visit_out = NULL;
    session_out->id = 0;
    session_out->incremental = false;
    session_out->visit = NULL;
    session_out->cached = NULL;
    ks_time_ns now = ks__broker_now_ns(broker);
    struct ks_fetch_request header = request;
    header.forgotten_count = 0;
    if (request.session_epoch == 0) {
        guint index = 0;
        struct ks__fetch_session *old = session_find(broker, request.session_id, &index);
        if (old != NULL && old->replica_id == request.replica_id) {
            g_ptr_array_remove_index(broker->fetch_sessions, index);
            session_free(broker, old);
        }
        /* S5: quiet partitions belong to the follower's newest session. */
        for (guint i = 0; broker->fetch_sessions != NULL && i < broker->fetch_sessions->len; i++) {
            struct ks__fetch_session *other = g_ptr_array_index(broker->fetch_sessions, i);
            if (other->replica_id == request.replica_id) {
                session_wake_all(broker, other);
            }
        }
        struct ks__fetch_session *session =
            session_create(broker, request.replica_id, request.replica_epoch);
        if (session != NULL) {
            for (int32_t i = 0; i < request.partition_count; i++) {
                session_put(broker, session, &entries[i]); /* visited: visit_all */
            }
            session_out->id = session->id;
            session_out->cached = session;
            broker->session_fetch_ns[request.replica_id - 1] = now;
        }
        GByteArray *out = scratch_take(broker);
        ks_byte_array_append(out, (const guint8 *)&header, sizeof header);
        ks_byte_array_append(out, (const guint8 *)entries,
                             (guint)request.partition_count *
                                 (guint)sizeof(struct ks_fetch_request_partition));
        return out;
    }
    struct ks__fetch_session *session = session_find(broker, request.session_id, NULL);
    if (session == NULL || session->replica_id != request.replica_id) {
        *error_code = KS_ERR_FETCH_SESSION_ID_NOT_FOUND;
        return NULL;
    }
    if (session->epoch != request.session_epoch) {
        *error_code = KS_ERR_INVALID_FETCH_SESSION_EPOCH;
        return NULL;
    }
    if (request.replica_epoch != session->replica_epoch) {
        session_wake_all(broker, session); /* S5: its quiet states hold the old epoch */
        session->replica_epoch = request.replica_epoch;
    }
    for (int32_t i = 0; i < request.partition_count; i++) {
        session_mark(session, session_put(broker, session, &entries[i])); /* S5: listed */
    }
    for (int32_t i = 0; i < request.forgotten_count; i++) {
        struct ks_fetch_forgotten item;
        memcpy(&item, forgotten_bytes + (size_t)i * sizeof item, sizeof item);
        bool found = false;
        guint at = session_position(session, item.topic_index, item.partition, &found);
        if (found) {
            struct ks__replica *replica = session_replica(broker, session_part(session, at));
            ks__replica_follower_wake(broker, replica, session->replica_id);
            if (replica != NULL) {
                ref_remove(replica, session); /* S9 */
            }
            g_array_remove_index(session->partitions, at);
            session_shift(session, at, false);
        }
    }
    session->epoch = session->epoch == INT32_MAX ? 1 : session->epoch + 1;
    session->last_used_ns = now;
    session_out->id = session->id;
    session_out->incremental = true;
    session_out->cached = session;
    GArray *visit = session_visit(broker, session);
#if KS_DEBUG
    if (visit != NULL) {
        session_check_quiet(broker, session, visit);
    }
#endif
    /* The quiet partitions' fetch time (S5): after the visited ones woke. */
    broker->session_fetch_ns[request.replica_id - 1] = now;
    GByteArray *out = session_entries(broker, session, &header, visit);
    *visit_out = visit;
    session_out->visit = visit;
    return out;
}

/* The session position of the i-th entry served. */
static guint visited_at(struct serve_session session, guint i)
{
    return session.visit != NULL ? g_array_index(session.visit, guint, i) : i;
}

/* IncrementalFetchContext / FullFetchContext.updateAndGenerateResponseData:
 * records what each partition's answer told the follower, and in an
 * incremental session keeps only the partitions with something new (S4).
 * out holds a whole response built from the partitions visited (S5). */
static void answer_in_session(struct ks_broker *broker, struct serve_session session,
                              GByteArray *out)
{
    struct ks__fetch_session *cached = session.cached;
    struct ks_fetch_response header;
    memcpy(&header, out->data, sizeof header);
    guint served =
        session.visit != NULL ? session.visit->len : (cached != NULL ? cached->partitions->len : 0);
    if (cached == NULL || (guint)header.partition_count != served) {
        return; /* evicted, or changed since it parked: answer everything */
    }
    cached->last_used_ns = ks__broker_now_ns(broker);
    /* Kept answers move down over dropped ones, in place. */
    size_t kept_end = sizeof header;
    int32_t kept_count = 0;
    size_t position = sizeof header;
    for (guint i = 0; i < served; i++) {
        struct ks__session_partition *part = &g_array_index(
            cached->partitions, struct ks__session_partition, visited_at(session, i));
        struct ks_fetch_response_partition answer;
        memcpy(&answer, out->data + position, sizeof answer);
        size_t bytes = sizeof answer + answer.records_bytes;
        bool must = answer.records_bytes > 0 || answer.error_code != KS_ERR_NONE ||
                    answer.diverging || answer.hw != part->hw ||
                    answer.log_start_offset != part->log_start_offset;
        part->hw = answer.error_code != KS_ERR_NONE ? -1 : answer.hw;
        part->log_start_offset = answer.log_start_offset;
        if (must || !session.incremental) {
            if (kept_end != position) {
                memmove(out->data + kept_end, out->data + position, bytes);
            }
            kept_end += bytes;
            kept_count++;
        }
        position += bytes;
    }
    ks_assert(position == out->len);
    header.partition_count = kept_count;
    memcpy(out->data, &header, sizeof header);
    ks_array_set_size((GArray *)(void *)out, (guint)kept_end); /* shrinks: the length only */
}

/* S5, after a request's first serve: a visited partition that read nothing
 * and answered nothing new, whose follower is caught up in the ISR at HW =
 * LEO, turns quiet; the others stay awake for the next serve. */
static void session_settle(struct ks_broker *broker, struct serve_session session,
                           const struct ks_fetch_request_partition *entries,
                           const struct entry_plan *plans, int32_t count)
{
    struct ks__fetch_session *cached = session.cached;
    guint served =
        session.visit != NULL ? session.visit->len : (cached != NULL ? cached->partitions->len : 0);
    if (cached == NULL || (guint)count != served) {
        return;
    }
    ks_array_set_size(cached->awake, 0);
    cached->visit_all = false;
    for (int32_t i = 0; i < count; i++) {
        const struct ks__session_partition *part =
            session_at(cached, visited_at(session, (guint)i));
        struct ks__replica *replica = plans[i].replica;
        bool quiet = plans[i].record_fetch && plans[i].records_bytes == 0 && replica != NULL &&
                     part->hw == replica->hw &&
                     part->log_start_offset == ks_log_start_offset(replica->log) &&
                     ks__replica_follower_sleep(broker, replica, cached->replica_id,
                                                entries[i].fetch_offset);
        if (!quiet) {
            guint at = visited_at(session, (guint)i);
            ks_array_append_val(cached->awake, at); /* S8: in order, as visited */
        }
    }
}

static void park(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                 size_t message_bytes, enum ks__fetch_origin origin, struct serve_session session,
                 ks_time_ns deadline_ns)
{
    ks_time_ns now = ks__broker_now_ns(broker);
    ks_assert(deadline_ns > now); /* S1 */
#if KS_DEBUG
    ks_assert(session.cached == session_find(broker, session.id, NULL));
#endif
    struct ks__delayed_fetch *item = NULL;
    if (broker->delayed_spare != NULL && broker->delayed_spare->len > 0) {
        item = pool_take_last(broker->delayed_spare);
    } else {
        item = calloc(1, sizeof *item);
        ks_assert(item != NULL);
    }
    if (item->request_capacity_bytes < message_bytes || item->request == NULL) {
        free(item->request);
        item->request = malloc(message_bytes > 0 ? message_bytes : 1);
        ks_assert(item->request != NULL);
        item->request_capacity_bytes = message_bytes;
    }
    item->broker = broker;
    item->source = source;
    item->timer = 0;
    memcpy(item->request, message, message_bytes);
    item->request_bytes = message_bytes;
    item->origin = origin;
    item->deadline_ns = deadline_ns;
    item->session_id = session.id;
    item->incremental = session.incremental;
    /* S5: an incremental request is served again as its session's partitions
     * to visit then; a full one as it came. */
    item->session = session.incremental ? session.cached : NULL;
    uint64_t key_bits = item->session != NULL ? item->session->key_bits : 0;
    const struct ks_fetch_request *parked = (const struct ks_fetch_request *)item->request;
    const struct ks_fetch_request_partition *entries = request_entries(item->request);
    for (int32_t i = 0; i < parked->partition_count; i++) {
        key_bits |= key_bit(entries[i].topic_index, entries[i].partition);
    }
    delayed_add(broker, item, key_bits);
    item->timer = ks_world_schedule(broker->world, (ks_node_id)broker->id, deadline_ns - now,
                                    KS_TIMER_BROKER_DELAYED_FETCH, delayed_expire, item);
}

/* S7: the session's partition the i-th entry served was made from, or NULL
 * (no session, or a parked full request whose entries are not the session's
 * list: it may have named a partition twice). */
static struct ks__session_partition *served_part(struct serve_session session, guint i,
                                                 const struct ks_fetch_request_partition *entry)
{
    if (session.cached == NULL) {
        return NULL;
    }
    guint at = visited_at(session, i);
    if (at >= session.cached->partitions->len) {
        return NULL;
    }
    struct ks__session_partition *part = session_part(session.cached, at);
    bool same = part->request.topic_index == entry->topic_index &&
                part->request.partition == entry->partition;
    return same ? part : NULL;
}

/* Plans, builds and sends the response, or parks the request (fewer than
 * min_bytes available before deadline_ns; KS_TIME_NEVER for a new request:
 * now + max_wait). */
static void serve_fetch(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                        size_t message_bytes, enum serve_mode mode, enum serve_pass pass,
                        struct serve_session session, ks_time_ns deadline_ns)
{
    struct ks_fetch_request request;
    memcpy(&request, message, sizeof request);
#if KS_DEBUG
    ks_assert(session.cached == session_find(broker, session.id, NULL));
#endif
    const struct ks_fetch_request_partition *entries = request_entries(message);
    enum ks__fetch_origin origin =
        request.replica_id < 0 ? KS__FETCH_FROM_CONSUMER : KS__FETCH_FROM_FOLLOWER;
    struct entry_plan local[8];
    struct entry_plan *plans = local;
    /* More than 8: in a kept buffer (a follower's session of a leader at
     * 12 × 1,200 holds about 30), not a malloc per serve. */
    GByteArray *plans_bytes = NULL;
    if ((size_t)request.partition_count > G_N_ELEMENTS(local)) {
        plans_bytes = scratch_take(broker);
        ks_byte_array_set_size(plans_bytes,
                               (guint)((size_t)request.partition_count * sizeof *plans));
        plans = (struct entry_plan *)(void *)plans_bytes->data;
    }
    for (int32_t i = 0; i < request.partition_count; i++) {
        plan_entry(broker, &request, &entries[i], served_part(session, (guint)i, &entries[i]),
                   &plans[i]); /* sets every field */
    }
    GByteArray *out = scratch_take(broker);
    struct ks_fetch_response header;
    memset(&header, 0, sizeof header);
    header.correlation_id = request.correlation_id;
    header.partition_count = request.partition_count;
    header.session_id = session.id;
    const size_t part_bytes = sizeof(struct ks_fetch_response_partition);
    /* Room for the response header and every partition's header at once. */
    size_t room_end =
        bytes_reserve(out, sizeof header + (size_t)request.partition_count * part_bytes);
    memcpy(out->data + bytes_claim(out, sizeof header), &header, sizeof header);
    size_t total_records = 0;
    bool anything_to_say = false;
    size_t response_max = request.max_bytes > 0 ? (size_t)request.max_bytes : SIZE_MAX;
    for (int32_t i = 0; i < request.partition_count; i++) {
        if (out->len + part_bytes > room_end) { /* records took the room */
            room_end = bytes_reserve(out, (size_t)(request.partition_count - i) * part_bytes);
        }
        bool says_something = false;
        total_records += build_entry(plans[i].replica, &entries[i], &plans[i], origin,
                                     origin == KS__FETCH_FROM_CONSUMER &&
                                         request.isolation_level == KS_ISOLATION_READ_COMMITTED,
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
        scratch_give(broker, out);
        if (session.id != 0 && pass == SERVE_FIRST) {
            session_settle(broker, session, entries, plans, request.partition_count);
        }
        if (plans_bytes != NULL) {
            scratch_give(broker, plans_bytes);
        }
        park(broker, source, message, message_bytes, origin, session, deadline_ns);
        return;
    }
    if (session.id != 0) {
        answer_in_session(broker, session, out);
        if (pass == SERVE_FIRST) {
            session_settle(broker, session, entries, plans, request.partition_count);
        }
    }
    if (plans_bytes != NULL) {
        scratch_give(broker, plans_bytes);
    }
    ks__broker_send_at(broker, ks_disk_idle_at_ns(broker->world, (ks_node_id)broker->id), source,
                       KS_MSG_FETCH_RESPONSE, out->data, out->len);
    scratch_give(broker, out);
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
    ks_assert(message_bytes ==
              sizeof request +
                  (size_t)request.partition_count * sizeof(struct ks_fetch_request_partition) +
                  (size_t)request.forgotten_count * sizeof(struct ks_fetch_forgotten));
    /* A follower or consumer has one fetch outstanding: a new one from the
     * same source replaces a parked one (its sender timed out), S1. */
    for (guint i = 0; i < broker->delayed->len; i++) {
        struct ks__delayed_fetch *item = g_ptr_array_index(broker->delayed, i);
        if (item->source == source) {
            delayed_remove_index(broker, i);
            ks_world_cancel(broker->world, item->timer);
            delayed_free(item);
            break;
        }
    }
    struct serve_session session = { 0, false, NULL, NULL };
    if (!request.session) {
        serve_fetch(broker, source, message, message_bytes, SERVE_MAY_PARK, SERVE_FIRST, session,
                    KS_TIME_NEVER);
        return;
    }
    int16_t error_code = KS_ERR_NONE;
    GArray *visit = NULL;
    GByteArray *expanded = session_request(broker, message, &session, &visit, &error_code);
    if (expanded == NULL) {
        struct ks_fetch_response header;
        memset(&header, 0, sizeof header);
        header.correlation_id = request.correlation_id;
        header.error_code = error_code;
        ks__broker_send_at(broker, ks_disk_idle_at_ns(broker->world, (ks_node_id)broker->id),
                           source, KS_MSG_FETCH_RESPONSE, &header, sizeof header);
        return;
    }
    serve_fetch(broker, source, expanded->data, expanded->len, SERVE_MAY_PARK, SERVE_FIRST, session,
                KS_TIME_NEVER);
    scratch_give(broker, expanded);
    visits_give(broker, visit);
}

/* ---- OffsetsForLeaderEpoch (consumers) ---------------------------------------------- */

/* KafkaApis.handleOffsetForLeaderEpochRequest for a consumer: the leader
 * checks the client's current epoch as a fetch does (Partition.getLocalLog:
 * FENCED / UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER) and answers the end
 * offset of the requested epoch (Partition.lastOffsetForLeaderEpoch, through
 * UnifiedLog.endOffsetForEpoch: the largest epoch not above the requested
 * one and the start of the next one, the LEO for the latest), or undefined
 * (-1, -1) when its log knows no epoch that old. */
void ks__serve_offset_for_leader_epoch(struct ks_broker *broker, ks_node_id source,
                                       const struct ks_offset_for_leader_epoch_request *request)
{
    struct ks_offset_for_leader_epoch_response response;
    memset(&response, 0, sizeof response);
    response.correlation_id = request->correlation_id;
    response.topic_index = request->topic_index;
    response.partition = request->partition;
    response.end_offset = -1;
    response.leader_epoch = -1;
    struct ks__replica *replica =
        ks__serve_leader_for(broker, request->topic_index, request->partition,
                             request->current_leader_epoch, &response.error_code);
    if (replica != NULL) {
        int32_t epoch = -1;
        int64_t end = -1;
        if (ks_log_epoch_end_offset(replica->log, request->leader_epoch, &epoch, &end)) {
            response.leader_epoch = epoch;
            response.end_offset = end;
        }
    }
    ks_world_send(broker->world, (ks_node_id)broker->id, source,
                  KS_MSG_OFFSET_FOR_LEADER_EPOCH_RESPONSE, &response, sizeof response);
}

void ks__serve_check_parked(const struct ks_broker *broker)
{
    uint64_t linked = 0; /* S9: session partitions with a replica */
    for (guint i = 0; broker->fetch_sessions != NULL && i < broker->fetch_sessions->len; i++) {
        const struct ks__fetch_session *session = g_ptr_array_index(broker->fetch_sessions, i);
        guint touched = 0;
        for (guint j = 0; j < session->partitions->len; j++) {
            const struct ks__session_partition *part = session_at(session, j);
            ks_assert(part->replica == ks__broker_find_replica(broker, part->request.topic_index,
                                                               part->request.partition)); /* S7 */
            touched += part->touched ? 1 : 0;
            if (part->replica == NULL) {
                continue;
            }
            linked++;
            guint refs = 0;
            for (uint32_t k = 0; k < part->replica->session_ref_count; k++) {
                const struct ks__session_ref *ref = &part->replica->session_refs[k];
                if (ref->session == session) {
                    ks_assert(ref->at == j); /* S9 */
                    refs++;
                }
            }
            ks_assert(refs == 1); /* S9 */
        }
        ks_assert(touched == session->touched->len); /* S9: each once */
        for (guint j = 0; j < session->touched->len; j++) {
            guint at = g_array_index(session->touched, guint, j);
            ks_assert(at < session->partitions->len && session_at(session, at)->touched);
        }
    }
    for (guint i = 0; i < broker->hosted->len; i++) {
        linked -= ks__hosted(broker, i)->session_ref_count; /* S9: no ref to a gone session */
    }
    ks_assert(linked == 0);
    for (guint i = 0; broker->fetch_sessions != NULL && i < broker->fetch_sessions->len; i++) {
        const struct ks__fetch_session *session = g_ptr_array_index(broker->fetch_sessions, i);
        for (guint j = 0; j < session->awake->len; j++) {
            guint at = g_array_index(session->awake, guint, j);
            ks_assert(at < session->partitions->len); /* S8 */
            ks_assert(j == 0 || g_array_index(session->awake, guint, j - 1) < at);
        }
    }
    ks_assert(broker->delayed_key_bits->len == broker->delayed->len); /* S6 */
    for (guint i = 0; i < broker->delayed->len; i++) {
        const struct ks__delayed_fetch *item = g_ptr_array_index(broker->delayed, i);
        uint64_t bits = g_array_index(broker->delayed_key_bits, uint64_t, i);
        if (item->session != NULL) {
            for (guint j = 0; j < item->session->partitions->len; j++) {
                const struct ks__session_partition *part = session_at(item->session, j);
                ks_assert(bits & key_bit(part->request.topic_index, part->request.partition));
            }
        }
        const struct ks_fetch_request *parked = (const struct ks_fetch_request *)item->request;
        const struct ks_fetch_request_partition *entries = request_entries(item->request);
        for (int32_t j = 0; j < parked->partition_count; j++) {
            ks_assert(bits & key_bit(entries[j].topic_index, entries[j].partition)); /* S6 */
        }
    }
}
