/*
** core/broker_fetcher.c: the follower fetcher (Kafka's ReplicaFetcherThread
** over AbstractFetcherThread): one fetch request per (follower, leader)
** broker pair covering every partition this broker follows from that leader
** (kafka-reference 9); the next one leaves as soon as the response is
** processed (at the disk's idle time). A fetch with no response within 30 s
** (Kafka's replica.socket.timeout.ms / request.timeout default) is abandoned
** and re-sent after replica.fetch.backoff.ms; a partition that got an error
** backs off on its own for replica.fetch.backoff.ms.
**
** Invariants (asserted here and in ks_broker_check):
**   F1  each fetcher is in one state: IDLE (no timer), SCHEDULED (only its
**       kick timer armed) or IN_FLIGHT (one request out, only its timeout
**       armed).
**   F2  at most one request per leader is outstanding, and only the response
**       carrying its correlation id is processed; a later or abandoned one is
**       ignored.
**   F3  a follower appends only batches that start at its LEO: it skips what
**       it has and first cuts back a batch it holds only part of; its HW is
**       the leader's, capped at its own LEO and raised to its log start
**       (R1, R2 of broker_replica.c).
**   F4  a fetcher's session partitions are in (topic, partition) order; with
**       no session (session_id 0) the list is empty and the next request is
**       a full one; `pending` exists exactly while a request is IN_FLIGHT.
**   F5  an incremental request is built from the session and the partitions
**       marked dirty since the last build (each partition of a response, and
**       each replica whose log end or start moved outside a response:
**       ks__fetcher_touch), recomputing only those entries; a whole build
**       (every followed partition) follows a role or leader change, a
**       change of the shutdown flag, the end of a partition's backoff, or a
**       build that sent nothing. Both give the same request, which KS_DEBUG
**       builds check at every build. Kafka's FetchSessionHandler.Builder
**       compares every partition with the session (ReplicaFetcherThread
**       .buildFetch adds each one); the request is the same, the cost here
**       is proportional to what changed.
**       The request is built in a buffer the broker keeps between kicks
**       (broker->fetch_request) and sent as a copy (ks_world_send takes a
**       buffer from the world's pool: cheaper than a new GByteArray per
**       kick); the session list a response replaces is kept as the next
**       request's list (`spare`).
**   F6  the dirty list holds the replicas themselves (a response's are
**       looked up once, for handle_partition; a touch passes its own), and
**       every entry of the request list a fetcher built last has its
**       replica's position there in replica->fetch_at: a whole build sets
**       it for each entry, an incremental one for an entry it inserts, and
**       an entry inserted or removed moves the hints of those after it
**       (list_shift_hints; rare: a backoff starts, or a partition is
**       fetched again between whole builds). An incremental build starts
**       from that list (F5: the session is the last list built, or the
**       build is whole), so it finds each dirty entry at its hint, checked
**       against the key there, instead of a ks__broker_find_replica and a
**       binary search of the session per dirty partition; a hint that
**       does not match means the entry is not in the list (KS_DEBUG builds
**       confirm by search, and check every hint after each incremental
**       build). Replicas are freed only when the broker stops, after its
**       fetchers' lists are dropped, so a listed replica stays valid. At
**       12 brokers x 1,200 partitions (35,000 dirty partitions a simulated
**       second) ks__fetcher_kick went from 20.4 M instructions inclusive
**       to 17.0 M; the run from 231.5 M to 227.2 M (3 x 3 consumer run:
**       631.4 M to 626.5 M).
**
** KIP-227 fetch sessions (FetchSessionHandler and its Builder): the first
** request to a leader is a full one (epoch 0) and creates a session there;
** each later one (epoch 1, 2, ...) lists only the partitions added or whose
** fetch data changed (fetch offset, log start, leader epoch, last fetched
** epoch) since the last, and names those removed (a partition backing off
** or no longer followed from this leader) as forgotten. A session error
** (FETCH_SESSION_ID_NOT_FOUND: the leader restarted or evicted it;
** INVALID_FETCH_SESSION_EPOCH) or an abandoned request drops the session:
** the next request is full again (it closes the old session if it had one).
** A response lists only the partitions the leader had something new for.
**
**   IDLE --kick, partitions to fetch--> IN_FLIGHT --response--> IDLE, kick
**   IDLE --kick, all backing off------> SCHEDULED --timer-----> IDLE, kick
**   IN_FLIGHT --30 s, no response-----> SCHEDULED (replica.fetch.backoff.ms)
**   IN_FLIGHT --new leader epoch------> IDLE, kick (ks__fetcher_restart)
**
** Truncation (AbstractFetcherThread.truncateOnFetchResponse and
** handleOutOfRangeError): a response with a diverging epoch (KIP-320) cuts
** the log to the end of the last epoch both logs share (KIP-101, KIP-279);
** OFFSET_OUT_OF_RANGE with the leader below this LEO cuts back to the
** leader's LEO (pre-KIP-101 behaviour, reached after an unclean election or
** in high-watermark mode), and with this LEO below the leader's log start the
** log restarts empty there (truncateFullyAndStartAt).
*/
#include "broker_int.h"

#include "array.h"
#include "batch.h"
#include "producer_state.h"

#include <inttypes.h>
#include <string.h>

static void fetcher_kick_timer(ks_world *world, void *context);
static void session_reset(struct ks__fetcher *fetcher);

static struct ks__fetcher_ref *fetcher_ref(struct ks_broker *broker, int32_t leader_id)
{
    return &broker->fetcher_refs[leader_id - 1];
}

/* Arms the kick timer for at_ns (now if earlier) unless one is armed. */
static void schedule_kick(struct ks_broker *broker, int32_t leader_id, ks_time_ns at_ns)
{
    struct ks__fetcher *fetcher = &broker->fetchers[leader_id - 1];
    if (fetcher->state == KS__FETCHER_SCHEDULED) {
        return;
    }
    ks_assert(fetcher->state == KS__FETCHER_IDLE); /* F1 */
    ks_time_ns now = ks__broker_now_ns(broker);
    fetcher->kick_timer = ks_world_schedule(broker->world, (ks_node_id)broker->id,
                                            at_ns > now ? at_ns - now : 0, KS_TIMER_BROKER_FETCH,
                                            fetcher_kick_timer, fetcher_ref(broker, leader_id));
    fetcher->state = KS__FETCHER_SCHEDULED;
}

static void fetch_timeout(ks_world *world, void *context)
{
    (void)world;
    struct ks__fetcher_ref *ref = context;
    struct ks_broker *broker = ref->broker;
    struct ks__fetcher *fetcher = &broker->fetchers[ref->leader_id - 1];
    ks_assert(fetcher->state == KS__FETCHER_IN_FLIGHT); /* F1: the timeout is armed only then */
    fetcher->timeout_timer = 0;
    fetcher->state = KS__FETCHER_IDLE;
    session_reset(fetcher); /* FetchSessionHandler.handleError */
    schedule_kick(broker, ref->leader_id,
                  ks__broker_now_ns(broker) +
                      (ks_time_ns)broker->spec->cluster->replica_fetch_backoff_ns);
}

/* Keeps a request list no longer used for the next one (fetcher->spare). */
static void spare_give(struct ks__fetcher *fetcher, GArray *list)
{
    if (fetcher->spare != NULL) {
        g_array_free(fetcher->spare, TRUE);
    }
    fetcher->spare = list;
}

static GArray *spare_take(struct ks__fetcher *fetcher)
{
    GArray *list = fetcher->spare;
    fetcher->spare = NULL;
    if (list == NULL) {
        return g_array_new(FALSE, FALSE, sizeof(struct ks_fetch_request_partition));
    }
    ks_array_set_size(list, 0);
    return list;
}

static void session_reset(struct ks__fetcher *fetcher)
{
    if (fetcher->session_id != 0) {
        fetcher->close_session_id = fetcher->session_id;
    }
    fetcher->session_id = 0;
    fetcher->session_epoch = 0;
    if (fetcher->session != NULL) {
        ks_array_set_size(fetcher->session, 0);
    }
    if (fetcher->pending != NULL) {
        spare_give(fetcher, fetcher->pending);
        fetcher->pending = NULL;
    }
}

void ks__fetcher_drop_sessions(struct ks_broker *broker)
{
    for (int32_t i = 0; i < KS_BROKER_COUNT_MAX; i++) {
        struct ks__fetcher *fetcher = &broker->fetchers[i];
        session_reset(fetcher);
        if (fetcher->session != NULL) {
            g_array_free(fetcher->session, TRUE);
            fetcher->session = NULL;
        }
        spare_give(fetcher, NULL);
        fetcher->close_session_id = 0;
        if (fetcher->followed != NULL) {
            g_ptr_array_free(fetcher->followed, TRUE);
            fetcher->followed = NULL;
        }
        if (fetcher->dirty != NULL) {
            g_array_free(fetcher->dirty, TRUE);
            fetcher->dirty = NULL;
        }
    }
    if (broker->fetch_request != NULL) {
        g_byte_array_unref(broker->fetch_request);
        broker->fetch_request = NULL;
    }
}

#define DIRTY_MAX 4096 /* F5: more changes than that and the next build visits all */

static inline void mark_dirty(struct ks__fetcher *fetcher, struct ks__replica *replica)
{
    if (fetcher->rebuild) {
        return;
    }
    if (fetcher->dirty == NULL) {
        fetcher->dirty = g_array_new(FALSE, FALSE, sizeof(struct ks__replica *));
    }
    if (fetcher->dirty->len >= DIRTY_MAX) {
        fetcher->rebuild = true;
        ks_array_set_size(fetcher->dirty, 0);
        return;
    }
    ks_array_append_val(fetcher->dirty, replica);
}

void ks__fetcher_touch(struct ks_broker *broker, const struct ks__replica *replica)
{
    int32_t leader = replica->state.leader;
    if (replica->role == KS_ROLE_FOLLOWER && leader >= 1 &&
        leader <= broker->spec->cluster->broker_count) {
        /* A hosted replica, const only to the toucher: the next build
         * writes its F6 hint. */
        mark_dirty(&broker->fetchers[leader - 1], (struct ks__replica *)replica);
    }
}

static int entry_order(const struct ks_fetch_request_partition *a,
                       const struct ks_fetch_request_partition *b)
{
    if (a->topic_index != b->topic_index) {
        return a->topic_index < b->topic_index ? -1 : 1;
    }
    return a->partition < b->partition ? -1 : (a->partition > b->partition ? 1 : 0);
}

/* FetchSessionHandler.Builder.build for an incremental request: appends to
 * message the entries of `next` that are new or changed against the
 * session, then the forgotten ones; returns how many entries it listed and
 * the forgotten count in *forgotten. Both lists are in (topic, partition)
 * order (F4). */
static int32_t append_incremental(const GArray *session, const GArray *next, GByteArray *message,
                                  int32_t *forgotten)
{
    GArray *gone = NULL; /* made at the first forgotten one */
    int32_t listed = 0;
    guint i = 0;
    guint j = 0;
    while (i < session->len || j < next->len) {
        const struct ks_fetch_request_partition *old =
            i < session->len ? &g_array_index(session, struct ks_fetch_request_partition, i) : NULL;
        const struct ks_fetch_request_partition *now =
            j < next->len ? &g_array_index(next, struct ks_fetch_request_partition, j) : NULL;
        int order = old == NULL ? 1 : (now == NULL ? -1 : entry_order(old, now));
        if (order < 0) {
            struct ks_fetch_forgotten item = { old->topic_index, old->partition };
            if (gone == NULL) {
                gone = g_array_new(FALSE, FALSE, sizeof(struct ks_fetch_forgotten));
            }
            ks_array_append_val(gone, item);
            i++;
            continue;
        }
        if (order > 0 || memcmp(old, now, sizeof *now) != 0) {
            ks_byte_array_append(message, (const guint8 *)now, sizeof *now);
            listed++;
        }
        if (order == 0) {
            i++;
        }
        j++;
    }
    *forgotten = 0;
    if (gone != NULL) {
        ks_byte_array_append(message, (const guint8 *)gone->data,
                            gone->len * (guint)sizeof(struct ks_fetch_forgotten));
        *forgotten = (int32_t)gone->len;
        g_array_free(gone, TRUE);
    }
    return listed;
}

/* KRaft, in controlled shutdown: a partition with no leader, or whose ISR no
 * longer holds this broker, is no longer fetched (ReplicaManager.
 * applyLocalFollowersDelta stops those fetchers once beginControlledShutdown
 * has run), so the leader cannot take the stopping broker back into the ISR.
 * Under zookeeper the controller's StopReplica is not modelled. */
static bool stopped_for_shutdown(const struct ks_broker *broker, const struct ks__replica *replica)
{
    return broker->shutdown_pending &&
           broker->spec->cluster->controller_model != KS_CONTROLLER_MODEL_ZOOKEEPER &&
           (replica->state.leader < 1 ||
            !ks__list_contains(replica->state.isr, replica->state.isr_count, broker->id));
}

/* One partition's request entry; false when it is not fetched now (not
 * followed from leader_id, stopped for a shutdown, or backing off: then
 * *earliest_backoff is lowered to its end). */
static bool entry_for(const struct ks_broker *broker, const struct ks__replica *replica,
                      int32_t leader_id, ks_time_ns now, bool epochs,
                      struct ks_fetch_request_partition *entry, ks_time_ns *earliest_backoff)
{
    if (replica->log == NULL || replica->role != KS_ROLE_FOLLOWER ||
        replica->state.leader != leader_id || stopped_for_shutdown(broker, replica)) {
        return false;
    }
    if (replica->fetch_backoff_until_ns > now) {
        if (replica->fetch_backoff_until_ns < *earliest_backoff) {
            *earliest_backoff = replica->fetch_backoff_until_ns;
        }
        return false;
    }
    memset(entry, 0, sizeof *entry);
    entry->topic_index = replica->topic_index;
    entry->partition = replica->partition;
    entry->fetch_offset = ks__leo_of(replica);
    entry->log_start_offset = ks_log_start_offset(replica->log);
    entry->current_leader_epoch = replica->state.leader_epoch;
    entry->last_fetched_epoch = epochs ? ks_log_epoch_at_end(replica->log) : -1;
    entry->partition_max_bytes = broker->spec->cluster->replica_fetch_max_bytes;
    return true;
}

/* Collects one request entry per partition followed from leader_id that is
 * not backing off, in (topic, partition) order; returns how many, and the
 * earliest backoff end of the others in *earliest_backoff (KS_TIME_NEVER if
 * none). */
static int32_t build_request(struct ks_broker *broker, int32_t leader_id, GArray *next,
                             ks_time_ns *earliest_backoff)
{
    ks_time_ns now = ks__broker_now_ns(broker);
    bool epochs = broker->spec->cluster->truncation == KS_TRUNCATION_LEADER_EPOCH;
    int32_t count = 0;
    *earliest_backoff = KS_TIME_NEVER;
    struct ks__fetcher *fetcher = &broker->fetchers[leader_id - 1];
    if (fetcher->followed == NULL || fetcher->followed_generation != broker->follow_generation) {
        /* Rebuilt from the hosted replicas after a role or leader change:
         * a request then visits only the partitions it lists. */
        if (fetcher->followed == NULL) {
            fetcher->followed = g_ptr_array_new();
        }
        g_ptr_array_set_size(fetcher->followed, 0);
        for (guint i = 0; i < broker->hosted->len; i++) {
            struct ks__replica *replica = ks__hosted(broker, i);
            if (replica->role == KS_ROLE_FOLLOWER && replica->state.leader == leader_id) {
                ks_ptr_array_add(fetcher->followed, replica);
            }
        }
        fetcher->followed_generation = broker->follow_generation;
    }
    for (guint i = 0; i < fetcher->followed->len; i++) {
        struct ks__replica *replica = g_ptr_array_index(fetcher->followed, i);
        struct ks_fetch_request_partition entry;
        if (entry_for(broker, replica, leader_id, now, epochs, &entry, earliest_backoff)) {
            replica->fetch_at = next->len; /* F6 */
            ks_array_append_val(next, entry);
            count++;
        }
    }
    return count;
}

static int replica_order(const struct ks__replica *x, const struct ks__replica *y)
{
    if (x->topic_index != y->topic_index) {
        return x->topic_index < y->topic_index ? -1 : 1;
    }
    return (x->partition > y->partition) - (x->partition < y->partition);
}

static gint dirty_order(gconstpointer a, gconstpointer b)
{
    return replica_order(*(struct ks__replica *const *)a, *(struct ks__replica *const *)b);
}

/* Sorts the dirty replicas by key (F5). They come mostly in order already
 * (a response's partitions are in session order, each marked after its own
 * touch), so a pass that finds them sorted replaces the sort: one replica
 * per key, so any sort gives the same array. */
static void dirty_sort(GArray *dirty)
{
    struct ks__replica *const *replicas = (struct ks__replica *const *)(void *)dirty->data;
    for (guint i = 1; i < dirty->len; i++) {
        if (replica_order(replicas[i - 1], replicas[i]) > 0) {
            g_array_sort(dirty, dirty_order);
            return;
        }
    }
}

/* F6: the position of replica's entry in list (the list being built from
 * the last one built), or where it belongs; *found says which. The hint
 * replica->fetch_at answers without a search whenever the entry is there. */
static guint list_position(const GArray *list, const struct ks__replica *replica, bool *found)
{
    guint at = replica->fetch_at;
    if (at < list->len) {
        const struct ks_fetch_request_partition *entry =
            &g_array_index(list, struct ks_fetch_request_partition, at);
        if (entry->topic_index == replica->topic_index && entry->partition == replica->partition) {
            *found = true;
            return at;
        }
    }
    at = ks__key_position(list->data, list->len, sizeof(struct ks_fetch_request_partition),
                          replica->topic_index, replica->partition, found);
#if KS_DEBUG
    ks_assert(!*found); /* F6: an entry of the list has its hint */
#endif
    return at;
}

/* F6: an entry joined or left list at `from`: the hints of the entries
 * after it follow their new positions (rare: a partition backing off, or
 * one fetched again without a whole build). */
static void list_shift_hints(struct ks_broker *broker, const GArray *list, guint from)
{
    for (guint i = from; i < list->len; i++) {
        const struct ks_fetch_request_partition *entry =
            &g_array_index(list, struct ks_fetch_request_partition, i);
        struct ks__replica *replica =
            ks__broker_find_replica(broker, entry->topic_index, entry->partition);
        ks_assert(replica != NULL); /* only hosted replicas are listed; none is freed */
        replica->fetch_at = i;
    }
}

#if KS_DEBUG
/* F6: every entry of the list built last has its replica's hint. */
static void check_hints(const struct ks_broker *broker, const GArray *list)
{
    for (guint i = 0; i < list->len; i++) {
        const struct ks_fetch_request_partition *entry =
            &g_array_index(list, struct ks_fetch_request_partition, i);
        const struct ks__replica *replica =
            ks__broker_find_replica(broker, entry->topic_index, entry->partition);
        ks_assert(replica != NULL && replica->fetch_at == i);
    }
}
#endif

/* F5: the next incremental request from the session and the partitions
 * marked dirty since the last build: `next` is the session with those
 * entries recomputed (added, changed or dropped), and message gets the
 * changed or added ones, then the dropped ones as forgotten, in (topic,
 * partition) order, as append_incremental would list them from a whole
 * build. Returns how many it listed. */
static int32_t build_from_dirty(struct ks_broker *broker, int32_t leader_id, GArray *next,
                                GByteArray *message, int32_t *forgotten)
{
    struct ks__fetcher *fetcher = &broker->fetchers[leader_id - 1];
    ks_time_ns now = ks__broker_now_ns(broker);
    bool epochs = broker->spec->cluster->truncation == KS_TRUNCATION_LEADER_EPOCH;
    ks_array_append(next, fetcher->session->data, fetcher->session->len,
                    sizeof(struct ks_fetch_request_partition));
    GArray *gone = NULL; /* made at the first forgotten one */
    int32_t listed = 0;
    GArray *dirty = fetcher->dirty;
    if (dirty != NULL) {
        dirty_sort(dirty);
    }
    struct ks__replica *const *replicas =
        dirty != NULL ? (struct ks__replica *const *)(void *)dirty->data : NULL;
    for (guint i = 0; dirty != NULL && i < dirty->len; i++) {
        struct ks__replica *replica = replicas[i];
        if (i > 0 && replica == replicas[i - 1]) {
            continue;
        }
        bool found = false;
        guint at = list_position(next, replica, &found);
        struct ks_fetch_request_partition entry;
        bool fetched = entry_for(broker, replica, leader_id, now, epochs, &entry,
                                 &fetcher->backoff_end_ns);
        if (!fetched) {
            if (found) {
                g_array_remove_index(next, at);
                list_shift_hints(broker, next, at);
                if (gone == NULL) {
                    gone = g_array_new(FALSE, FALSE, sizeof(struct ks_fetch_forgotten));
                }
                struct ks_fetch_forgotten key = { replica->topic_index, replica->partition };
                ks_array_append_val(gone, key);
            }
            continue;
        }
        if (found && memcmp(&g_array_index(next, struct ks_fetch_request_partition, at), &entry,
                            sizeof entry) == 0) {
            continue;
        }
        if (found) {
            g_array_index(next, struct ks_fetch_request_partition, at) = entry;
        } else {
            g_array_insert_val(next, at, entry);
            list_shift_hints(broker, next, at);
        }
        ks_byte_array_append(message, (const guint8 *)&entry, sizeof entry);
        listed++;
    }
    *forgotten = 0;
    if (gone != NULL) {
        ks_byte_array_append(message, (const guint8 *)gone->data,
                            gone->len * (guint)sizeof(struct ks_fetch_forgotten));
        *forgotten = (int32_t)gone->len;
        g_array_free(gone, TRUE);
    }
    return listed;
}

void ks__fetcher_kick(struct ks_broker *broker, int32_t leader_id)
{
    struct ks__fetcher *fetcher = &broker->fetchers[leader_id - 1];
    if (!broker->running || fetcher->state != KS__FETCHER_IDLE) {
        return;
    }
    /* Kept between kicks (F5); a kick does not nest in another. */
    if (broker->fetch_request == NULL) {
        broker->fetch_request = g_byte_array_sized_new(4096);
    }
    GByteArray *message = broker->fetch_request;
    ks_byte_array_set_size(message, 0);
    struct ks_fetch_request header;
    memset(&header, 0, sizeof header);
    ks_byte_array_append(message, (const guint8 *)&header, sizeof header);
    ks_time_ns earliest_backoff = KS_TIME_NEVER;
    GArray *next = spare_take(fetcher);
    int32_t listed = 0;
    int32_t forgotten = 0;
    int32_t session_id = fetcher->session_id;
    int32_t session_epoch = 0;
    /* F5: an incremental request from what changed, when nothing that
     * changes many entries at once happened since the last build. */
    bool from_dirty = session_id != 0 && fetcher->session != NULL && fetcher->session->len > 0 &&
                      !fetcher->rebuild && fetcher->followed != NULL &&
                      fetcher->followed_generation == broker->follow_generation &&
                      fetcher->shutdown_seen == broker->shutdown_pending &&
                      ks__broker_now_ns(broker) < fetcher->backoff_end_ns;
    if (from_dirty) {
        session_epoch = fetcher->session_epoch;
        listed = build_from_dirty(broker, leader_id, next, message, &forgotten);
#if KS_DEBUG
        /* F5: the same request as a whole build makes. */
        GArray *whole = g_array_new(FALSE, FALSE, sizeof(struct ks_fetch_request_partition));
        ks_time_ns ignored = KS_TIME_NEVER;
        build_request(broker, leader_id, whole, &ignored);
        ks_assert(whole->len == next->len);
        ks_assert(memcmp(whole->data, next->data,
                         whole->len * sizeof(struct ks_fetch_request_partition)) == 0);
        GByteArray *check = g_byte_array_new();
        ks_byte_array_append(check, message->data, sizeof header);
        int32_t check_forgotten = 0;
        int32_t check_listed = append_incremental(fetcher->session, whole, check, &check_forgotten);
        ks_assert(check_listed == listed && check_forgotten == forgotten);
        ks_assert(check->len == message->len && memcmp(check->data, message->data, check->len) == 0);
        g_byte_array_unref(check);
        g_array_free(whole, TRUE);
        check_hints(broker, next);
#endif
    }
    if (fetcher->dirty != NULL) {
        ks_array_set_size(fetcher->dirty, 0);
    }
    int32_t count = from_dirty ? (int32_t)next->len : 0;
    if (!from_dirty) {
        fetcher->rebuild = false;
        fetcher->shutdown_seen = broker->shutdown_pending;
        count = build_request(broker, leader_id, next, &earliest_backoff);
        fetcher->backoff_end_ns = earliest_backoff;
        listed = count;
    }
    if (count == 0) {
        spare_give(fetcher, next);
        fetcher->rebuild = true; /* F5: the session is not what the next request starts from */
        earliest_backoff = fetcher->backoff_end_ns;
        if (earliest_backoff != KS_TIME_NEVER) {
            schedule_kick(broker, leader_id, earliest_backoff);
        }
        return;
    }
    if (from_dirty) {
        /* the message holds the entries and forgotten ones already */
    } else if (session_id == 0) {
        ks_byte_array_append(message, (const guint8 *)next->data,
                            next->len * (guint)sizeof(struct ks_fetch_request_partition));
        session_id = fetcher->close_session_id;
    } else {
        session_epoch = fetcher->session_epoch;
        listed = append_incremental(fetcher->session, next, message, &forgotten);
    }
    ks_assert(fetcher->pending == NULL); /* F4 */
    fetcher->pending = next;
    fetcher->pending_epoch = session_epoch;
    struct ks_fetch_request *request = (struct ks_fetch_request *)message->data;
    request->session = 1;
    request->session_id = session_id;
    request->session_epoch = session_epoch;
    request->forgotten_count = forgotten;
    request->correlation_id = ++broker->next_correlation_id;
    request->replica_id = broker->id;
    /* KIP-903: the follower's broker epoch, which the leader hands to the
     * controller with an ISR change; the ZooKeeper era had none. */
    request->replica_epoch =
        broker->spec->cluster->truncation == KS_TRUNCATION_LEADER_EPOCH ? broker->broker_epoch : -1;
    request->min_bytes = broker->spec->cluster->replica_fetch_min_bytes;
    request->max_wait_ns = broker->spec->cluster->replica_fetch_wait_ns_max;
    request->max_bytes = broker->spec->cluster->replica_fetch_response_max_bytes;
    request->partition_count = listed;
    fetcher->state = KS__FETCHER_IN_FLIGHT;
    fetcher->correlation_id = request->correlation_id;
    ks_world_send(broker->world, (ks_node_id)broker->id, (ks_node_id)leader_id,
                  KS_MSG_FETCH_REQUEST, message->data, message->len);
    fetcher->timeout_timer = ks_world_schedule(
        broker->world, (ks_node_id)broker->id, KS__REQUEST_TIMEOUT_NS,
        KS_TIMER_BROKER_FETCH_TIMEOUT, fetch_timeout, fetcher_ref(broker, leader_id));
}

static void fetcher_kick_timer(ks_world *world, void *context)
{
    (void)world;
    struct ks__fetcher_ref *ref = context;
    struct ks__fetcher *fetcher = &ref->broker->fetchers[ref->leader_id - 1];
    ks_assert(fetcher->state == KS__FETCHER_SCHEDULED); /* F1 */
    fetcher->kick_timer = 0;
    fetcher->state = KS__FETCHER_IDLE;
    ks__fetcher_kick(ref->broker, ref->leader_id);
}

void ks__fetcher_restart(struct ks_broker *broker, int32_t leader_id)
{
    /* A new leader epoch: Kafka re-adds the partition to the fetcher for
     * the leader's broker, and a leader that restarted has reset the old
     * connection. Abandon a request still in flight (its response, if any,
     * no longer matches: F2) and fetch afresh. */
    struct ks__fetcher *fetcher = &broker->fetchers[leader_id - 1];
    if (fetcher->state == KS__FETCHER_IN_FLIGHT) {
        fetcher->state = KS__FETCHER_IDLE;
        ks_world_cancel(broker->world, fetcher->timeout_timer);
        fetcher->timeout_timer = 0;
        session_reset(fetcher); /* the leader may have moved its session on */
    }
    ks__fetcher_kick(broker, leader_id);
}

/* ---- responses ------------------------------------------------------------------------ */

/* Truncation target for a diverging epoch (AbstractFetcherThread
 * getOffsetTruncationState, KIP-101/KIP-279). The leader answered with
 * (leader_epoch, leader_end_offset): its largest epoch not above our last
 * fetched one and where that epoch ends in its log.
 *   - We know that epoch: cut at the smaller of the two ends (and our LEO).
 *   - We only know smaller epochs (KIP-279): cut at the end of our largest
 *     smaller epoch and ask again.
 *   - We know no epoch that old (our log begins with a later epoch, e.g.
 *     after two unclean elections), or the leader sent no epoch: Kafka
 *     trusts the leader's end offset, min(leader end offset, LEO). It does
 *     not fall back to the HW; that fallback belongs to the
 *     OffsetsForLeaderEpoch path when the leader knows no offset at all
 *     (UNDEFINED_EPOCH_OFFSET), which the fetch path never sends: the
 *     leader answers OFFSET_OUT_OF_RANGE instead (Partition.readRecords). */
static int64_t diverging_target(const struct ks__replica *replica, int32_t leader_epoch,
                                int64_t leader_end_offset, int32_t *matched_epoch_out)
{
    int64_t leo = ks__leo_of(replica);
    *matched_epoch_out = -1;
    ks_assert(leader_end_offset >= 0); /* B3: a diverging epoch always has an end offset */
    if (leader_epoch < 0) {
        return ks__min64(leader_end_offset, leo);
    }
    int32_t epoch = -1;
    int64_t end = -1;
    if (!ks_log_epoch_end_offset(replica->log, leader_epoch, &epoch, &end)) {
        return ks__min64(leader_end_offset, leo);
    }
    *matched_epoch_out = epoch;
    if (epoch != leader_epoch) {
        /* KIP-279: we do not know the leader's epoch: go back to the end of
         * our largest smaller epoch and ask again. */
        return ks__min64(end, leo);
    }
    return ks__min64(ks__min64(end, leader_end_offset), leo);
}

/* OFFSET_OUT_OF_RANGE (AbstractFetcherThread.handleOutOfRangeError). */
static void on_out_of_range(struct ks_broker *broker, struct ks__replica *replica,
                            const struct ks_fetch_response_partition *part)
{
    int64_t leo = ks__leo_of(replica);
    if (leo > part->leader_leo) {
        /* The leader has less than we do (an unclean leader, or HW-mode
         * truncation): pre-KIP-101 Kafka truncates to the leader's LEO. */
        ks__replica_truncate(broker, replica, KS_REASON_TRUNCATE_TO_LEADER_LEO, part->leader_leo,
                             -1, -1);
    } else if (leo < part->log_start_offset) {
        ks_log_truncate_fully_and_start_at(replica->log, part->log_start_offset);
        ks__logs_after_truncation(broker);
        replica->hw = part->log_start_offset;
        replica->producers_valid = false;
    } else {
        replica->fetch_backoff_until_ns =
            ks__broker_now_ns(broker) + (ks_time_ns)broker->spec->cluster->replica_fetch_backoff_ns;
    }
}

/* A diverging epoch in the response (KIP-320): truncate to the common end. */
static void on_diverging(struct ks_broker *broker, struct ks__replica *replica, int32_t leader_id,
                         const struct ks_fetch_response_partition *part)
{
    int32_t matched = -1;
    int64_t target =
        diverging_target(replica, part->diverging_epoch, part->diverging_end_offset, &matched);
    ks_assert(replica->state.leader == leader_id); /* the response is from the leader followed */
    ks__replica_truncate(broker, replica,
                         part->diverging_epoch < 0 || matched < 0
                             ? KS_REASON_TRUNCATE_NO_COMMON_EPOCH
                             : KS_REASON_TRUNCATE_DIVERGING_EPOCH,
                         target, part->diverging_epoch, part->diverging_end_offset);
}

/* Appends the records of a response at the LEO (F3). Returns false if the
 * append failed (the partition backs off). */
static bool append_records(struct ks_broker *broker, struct ks__replica *replica,
                           const struct ks_fetch_response_partition *part, const uint8_t *records)
{
    /* Skip batches we already have; a batch straddling our LEO (after an
     * HW truncation inside a batch) makes us cut back to its start. */
    size_t position = 0;
    struct ks_batch_view first; /* the first batch appended, parsed here (R10) */
    bool first_parsed = false;
    int64_t leo = ks__leo_of(replica);
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
        first = view;
        first_parsed = true;
        if (view.base_offset < leo) {
            ks__replica_truncate(broker, replica, KS_REASON_TRUNCATE_REALIGN_BATCH,
                                 view.base_offset, -1, -1);
        }
        break;
    }
    if (position < part->records_bytes) {
        ks_time_ns now = ks__broker_now_ns(broker);
        enum ks_log_result result =
            first_parsed
                ? ks_log_append_as_follower_parsed(replica->log, records + position,
                                                   part->records_bytes - position, &first, now)
                : ks_log_append_as_follower_checked(replica->log, records + position,
                                                    part->records_bytes - position, 0, now);
        if (result != KS_LOG_OK) {
            replica->fetch_backoff_until_ns =
                now + (ks_time_ns)broker->spec->cluster->replica_fetch_backoff_ns;
            return false;
        }
        if (replica->producers_valid) {
            ks_producer_state_update_from_batches(replica->producers, records + position,
                                                  part->records_bytes - position);
        }
    }
    return true;
}

static void handle_partition(struct ks_broker *broker, struct ks__replica *replica,
                             int32_t leader_id, const struct ks_fetch_response_partition *part,
                             const uint8_t *records)
{
    if (replica->role != KS_ROLE_FOLLOWER || replica->state.leader != leader_id ||
        stopped_for_shutdown(broker, replica)) {
        return; /* the role changed while the request was out */
    }
    if (part->error_code == KS_ERR_OFFSET_OUT_OF_RANGE) {
        on_out_of_range(broker, replica, part);
        return;
    }
    if (part->error_code != KS_ERR_NONE) {
        /* NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH: wait for metadata. */
        replica->fetch_backoff_until_ns =
            ks__broker_now_ns(broker) + (ks_time_ns)broker->spec->cluster->replica_fetch_backoff_ns;
        return;
    }
    if (part->diverging) {
        on_diverging(broker, replica, leader_id, part);
        return;
    }
    if (part->records_bytes > 0 && !append_records(broker, replica, part, records)) {
        return;
    }
    int64_t leo = ks__leo_of(replica);
    int64_t hw = ks__min64(part->hw, leo);
    if (part->log_start_offset > ks_log_start_offset(replica->log) &&
        part->log_start_offset <= hw) {
        ks_log_advance_start_offset(replica->log, part->log_start_offset);
    }
    int64_t start = ks_log_start_offset(replica->log);
    replica->hw = hw < start ? start : hw; /* F3 */
    ks_log_on_stable_below(replica->log, replica->hw);
    ks__replica_check(broker, replica);
}

/* FetchSessionHandler.handleResponse: false on a session error (the
 * session is dropped and nothing in the response is processed). */
static bool session_on_response(struct ks__fetcher *fetcher, const struct ks_fetch_response *header)
{
    ks_assert(fetcher->pending != NULL); /* F4 */
    if (header->error_code == KS_ERR_FETCH_SESSION_ID_NOT_FOUND ||
        header->error_code == KS_ERR_INVALID_FETCH_SESSION_EPOCH) {
        session_reset(fetcher);
        if (header->error_code == KS_ERR_FETCH_SESSION_ID_NOT_FOUND) {
            fetcher->close_session_id = 0; /* nothing to close */
        }
        return false;
    }
    fetcher->close_session_id = 0;
    if (header->session_id == 0) {
        /* The leader made no session (its cache is full): full requests. */
        session_reset(fetcher);
        fetcher->close_session_id = 0;
        return true;
    }
    fetcher->session_id = header->session_id;
    /* FetchMetadata.nextEpoch: 1 after a full request, wrapping to 1. */
    fetcher->session_epoch = fetcher->pending_epoch <= 0 || fetcher->pending_epoch == INT32_MAX
                                 ? 1
                                 : fetcher->pending_epoch + 1;
    if (fetcher->session != NULL) {
        spare_give(fetcher, fetcher->session);
    }
    fetcher->session = fetcher->pending;
    fetcher->pending = NULL;
    return true;
}

void ks__fetcher_on_response(struct ks_broker *broker, ks_node_id source, const uint8_t *message,
                             size_t message_bytes)
{
    /* Only brokers answer fetches, with a whole response. */
    ks_assert(source >= 1 && (int32_t)source <= broker->spec->cluster->broker_count);
    ks_assert(message_bytes >= sizeof(struct ks_fetch_response));
    int32_t leader_id = (int32_t)source;
    struct ks__fetcher *fetcher = &broker->fetchers[leader_id - 1];
    struct ks_fetch_response header;
    memcpy(&header, message, sizeof header);
    if (fetcher->state != KS__FETCHER_IN_FLIGHT ||
        header.correlation_id != fetcher->correlation_id) {
        return; /* F2: abandoned (timed out, or a new leader epoch) */
    }
    fetcher->state = KS__FETCHER_IDLE;
    ks_world_cancel(broker->world, fetcher->timeout_timer);
    fetcher->timeout_timer = 0;
    if (!session_on_response(fetcher, &header)) {
        ks__fetcher_kick(broker, leader_id); /* a full request, at once */
        return;
    }
    size_t position = sizeof header;
    for (int32_t i = 0; i < header.partition_count; i++) {
        ks_assert(message_bytes - position >= sizeof(struct ks_fetch_response_partition));
        struct ks_fetch_response_partition part;
        memcpy(&part, message + position, sizeof part);
        position += sizeof part;
        ks_assert(message_bytes - position >= part.records_bytes);
        /* A partition listed is in the session, so hosted: no replica, no
         * entry to recompute. */
        struct ks__replica *replica =
            ks__broker_find_replica(broker, part.topic_index, part.partition);
        if (replica != NULL) {
            handle_partition(broker, replica, leader_id, &part, message + position);
            mark_dirty(fetcher, replica); /* F5 */
        }
        position += part.records_bytes;
    }
    /* The fetcher thread writes to the page cache, then fetches again. */
    ks_time_ns idle = ks_disk_idle_at_ns(broker->world, (ks_node_id)broker->id);
    if (idle > ks__broker_now_ns(broker)) {
        schedule_kick(broker, leader_id, idle);
    } else {
        ks__fetcher_kick(broker, leader_id);
    }
}
