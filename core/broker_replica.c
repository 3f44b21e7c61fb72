/*
** core/broker_replica.c: the state of one partition replica on a broker:
** its role, its LEO (the log's) and HW, and, on a leader, what it knows of
** each follower and the ISR changes it asks the controller for.
**
** Invariants (asserted in ks__replica_check, run at every HW change and by
** ks_broker_check after every message under KS_DEBUG):
**   R1  hw <= leo on every replica.
**   R2  log_start_offset <= hw.
**   R3  a leader's hw only grows while it stays leader in one leader epoch.
**   R4  a leader is in its own ISR.
**   R5  the role matches the last applied controller state: NONE only before
**       any state; a LEADER's state names this broker leader, its epoch
**       started at or below its LEO, and it tracks one follower state per
**       other assigned replica; a FOLLOWER's state names another broker or
**       none.
**   R6  an AlterPartition is in flight only on a leader, and for the leader
**       epoch the replica is in.
**
** Replica roles, driven by the controller's partition-state pushes
** (Partition.makeLeader / makeFollower, Partition.scala):
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
** The leader's HW (Partition.maybeIncrementLeaderHW) is the minimum LEO over
** the maximal ISR (KIP-497: the committed ISR plus members of an expansion in
** flight) and over followers that are caught up and alive; with
** hw_requires_min_isr (KAFKA-15583, Kafka 3.7+) it does not move while the
** ISR is below min(min.insync.replicas, RF). Membership of the maximal ISR
** is asked of a lagging follower directly (in_maximal_isr: the committed
** ISR, then the one in flight) rather than of a list built first: at 12
** brokers x 1,200 partitions the list was built 28,500 times a simulated
** second for at most two questions each (the run went from 227.2 M
** instructions to 226.2 M; the 3 x 3 consumer run from 626.5 M to
** 624.5 M). ISR changes go through the
** controller (AlterPartition): expansion when a follower reaches the HW and
** the start of the leader's epoch (Partition.maybeExpandIsr), shrink when it
** has not caught up for replica.lag.time.max.ms (Partition.maybeShrinkIsr,
** run every replica.lag.time.max.ms / 2). A follower joins only if the
** metadata says it is unfenced and, in KRaft, its fetches came from the
** incarnation the metadata knows (Partition.isReplicaIsrEligible, KIP-903);
** the request carries each member's broker epoch (addBrokerEpochToIsr).
** The answer (Partition.handleAlterPartitionError): INELIGIBLE_REPLICA resets
** to the committed ISR (a later fetch may try again); FENCED_LEADER_EPOCH,
** INVALID_UPDATE_VERSION, INVALID_REQUEST and UNKNOWN_TOPIC_OR_PARTITION
** leave the change pending, unsent, until a push overrides it; other errors
** are retried. An unanswered (or retried) AlterPartition is re-sent after
** 5 s (a simplification of AlterPartitionManager's retries).
**
**   IDLE --expand/shrink--> IN_FLIGHT --NONE----------------------> IDLE
**   IN_FLIGHT --INELIGIBLE_REPLICA--> IDLE
**   IN_FLIGHT --stale (see above)---> REFUSED --newer push--------> IDLE
**   IN_FLIGHT/REFUSED --newer push or new leader epoch------------> IDLE
*/
#include "broker_int.h"
#include "array.h"

#include "group.h"
#include "txn_coord.h"
#include "producer_state.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- checks and small helpers ---------------------------------------------- */

void ks__replica_check(const struct ks_broker *broker, struct ks__replica *replica)
{
    int64_t leo = ks__leo_of(replica);
    ks_assert(replica->hw <= leo);                               /* R1 */
    ks_assert(ks_log_start_offset(replica->log) <= replica->hw); /* R2 */
    switch (replica->role) {
    case KS_ROLE_LEADER:
        ks_assert(
            ks__list_contains(replica->state.isr, replica->state.isr_count, broker->id)); /* R4 */
        ks_assert(replica->has_state);                                                    /* R5 */
        ks_assert(replica->state.leader == broker->id);                                   /* R5 */
        ks_assert(replica->epoch_start_offset <= leo);                                    /* R5 */
        ks_assert(replica->follower_count == replica->state.replica_count - 1);           /* R5 */
        if (replica->hw_floor_epoch == replica->state.leader_epoch) {
            ks_assert(replica->hw >= replica->hw_floor); /* R3 */
        }
        replica->hw_floor_epoch = replica->state.leader_epoch;
        replica->hw_floor = replica->hw;
        break;
    case KS_ROLE_FOLLOWER:
        ks_assert(replica->has_state);                  /* R5 */
        ks_assert(replica->state.leader != broker->id); /* R5 */
        replica->hw_floor_epoch = -1;
        break;
    case KS_ROLE_NONE:
        ks_assert(!replica->has_state); /* R5 */
        replica->hw_floor_epoch = -1;
        break;
    }
    switch (replica->alter_state) {
    case KS__ALTER_IDLE: break;
    case KS__ALTER_IN_FLIGHT:
    case KS__ALTER_REFUSED:
        ks_assert(replica->role == KS_ROLE_LEADER);                             /* R6 */
        ks_assert(replica->alter->leader_epoch == replica->state.leader_epoch); /* R6 */
        break;
    }
}

int32_t ks__replica_maximal_isr(const struct ks__replica *replica, int32_t *out)
{
    int32_t count = 0;
    for (int32_t i = 0; i < replica->state.isr_count; i++) {
        out[count++] = replica->state.isr[i];
    }
    if (replica->alter_state != KS__ALTER_IDLE) {
        for (int32_t i = 0; i < replica->alter->isr_count; i++) {
            if (!ks__list_contains(out, count, replica->alter->isr[i])) {
                out[count++] = replica->alter->isr[i];
            }
        }
    }
    return count;
}

/* Whether id is in the maximal ISR (ks__replica_maximal_isr) without
 * building it: the HW advance asks this of at most its lagging followers,
 * and building the list cost more than the whole question (28 of its 68
 * instructions a call at 12 brokers x 1,200 partitions). */
static bool in_maximal_isr(const struct ks__replica *replica, int32_t id)
{
    return ks__list_contains(replica->state.isr, replica->state.isr_count, id) ||
           (replica->alter_state != KS__ALTER_IDLE &&
            ks__list_contains(replica->alter->isr, replica->alter->isr_count, id));
}

/* A follower's last caught-up time: a quiet one (S5 of broker_serve.c) was
 * caught up at every fetch of its session since it turned quiet. */
static ks_time_ns caught_up_ns(const struct ks_broker *broker,
                               const struct ks__follower_state *follower)
{
    if (follower->quiet) {
        ks_time_ns fetched = broker->session_fetch_ns[follower->broker_id - 1];
        return fetched > follower->last_caught_up_ns ? fetched : follower->last_caught_up_ns;
    }
    return follower->last_caught_up_ns;
}

/* Replica.isCaughtUp: at the leader's LEO, or caught up within replica.lag.time.max.ms. */
static bool follower_caught_up(const struct ks_broker *broker, const struct ks__replica *replica,
                               const struct ks__follower_state *follower)
{
    int64_t lag_max = broker->spec->cluster->replica_lag_ns_max;
    return follower->leo == ks__leo_of(replica) ||
           (int64_t)(ks__broker_now_ns(broker) - caught_up_ns(broker, follower)) <= lag_max;
}

static struct ks__follower_state *find_follower(struct ks__replica *replica, int32_t broker_id)
{
    for (int32_t i = 0; i < replica->follower_count; i++) {
        if (replica->followers[i].broker_id == broker_id) {
            return &replica->followers[i];
        }
    }
    return NULL;
}

/* ---- high watermark ----------------------------------------------------------- */

void ks__replica_maybe_advance_hw(struct ks_broker *broker, struct ks__replica *replica)
{
    if (replica->role != KS_ROLE_LEADER) {
        return;
    }
    /* The candidate is at most the leader's LEO: at HW = LEO (every fetch
     * of a caught-up follower) there is nothing to compute. */
    int64_t candidate = ks__leo_of(replica);
    if (candidate <= replica->hw) {
        return;
    }
    /* KAFKA-15583 (3.7+): no HW advance while the ISR is under min ISR. */
    if (broker->spec->cluster->hw_requires_min_isr &&
        replica->state.isr_count < ks_topic_min_isr(replica->topic)) {
        return;
    }
    for (int32_t i = 0; i < replica->follower_count; i++) {
        const struct ks__follower_state *follower = &replica->followers[i];
        if (follower->leo >= candidate) {
            continue; /* membership is asked only of a follower that would lower it */
        }
        if (in_maximal_isr(replica, follower->broker_id) ||
            (follower_caught_up(broker, replica, follower) &&
             ks__broker_alive(broker, follower->broker_id))) {
            candidate = follower->leo;
        }
    }
    if (candidate <= replica->hw) {
        return;
    }
    replica->hw = candidate;
    ks__serve_touch(broker, replica);
    ks_log_on_stable_below(replica->log, candidate);
    ks__replica_check(broker, replica);
    ks__produce_complete_pending(broker, replica, KS__PENDING_HW_ADVANCED, KS_ERR_NONE);
    ks__serve_release(broker, replica->topic_index, replica->partition, KS__RELEASE_CONSUMERS);
}

/* ---- truncation ------------------------------------------------------------------ */

void ks__replica_truncate(struct ks_broker *broker, struct ks__replica *replica,
                          enum ks_event_reason why, int64_t offset, int32_t diverging_epoch,
                          int64_t diverging_end_offset)
{
    int64_t leo_before = ks__leo_of(replica);
    int64_t hw_before = replica->hw;
    if (offset >= leo_before) {
        return;
    }
    ks_log_truncate_to(replica->log, offset);
    ks__logs_after_truncation(broker);
    ks__serve_touch(broker, replica);
    int64_t leo = ks__leo_of(replica);
    if (replica->hw > leo) {
        replica->hw = leo;
    }
    int64_t start = ks_log_start_offset(replica->log);
    if (replica->hw < start) {
        replica->hw = start;
    }
    replica->producers_valid = false;
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, 0, KS_EV_TRUNCATION);
    event.reason = why;
    event.topic_index = replica->topic_index;
    event.partition = replica->partition;
    event.offset = offset;
    event.leader_new = replica->state.leader;
    event.diverging_epoch = diverging_epoch;
    event.diverging_end_offset = diverging_end_offset;
    event.leo_old = leo_before;
    event.leo_new = leo;
    event.offset_from = leo;
    event.offset_to = leo_before;
    event.hw_old = hw_before;
    event.hw_new = replica->hw;
    event.log_start_offset = start;
    ks_broker_emit(broker, &event);
    ks__replica_check(broker, replica);
}

/* ---- ISR changes (leader side) ---------------------------------------------------- */

static void send_alter(struct ks_broker *broker, struct ks__replica *replica)
{
    replica->alter_sent_ns = ks__broker_now_ns(broker);
    ks_world_send(broker->world, (ks_node_id)broker->id, broker->controller_node,
                  KS_MSG_ALTER_PARTITION_REQUEST, replica->alter, sizeof *replica->alter);
}

static int compare_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a;
    int32_t y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* KRaft, with broker epochs (KIP-903); not the ZooKeeper era (an older
 * kafka.version, or controller = zookeeper, whose metadata has no broker
 * epochs). */
static bool kraft_era(const struct ks_broker *broker)
{
    return broker->spec->cluster->truncation == KS_TRUNCATION_LEADER_EPOCH &&
           broker->spec->cluster->controller_model != KS_CONTROLLER_MODEL_ZOOKEEPER;
}

static void request_isr(struct ks_broker *broker, struct ks__replica *replica, const int32_t *isr,
                        int32_t isr_count)
{
    ks_assert(replica->alter_state == KS__ALTER_IDLE);
    ks_assert(replica->role == KS_ROLE_LEADER); /* R6 */
    ks_assert(isr_count >= 1 && isr_count <= KS_REPLICATION_FACTOR_MAX);
    if (replica->alter == NULL) {
        replica->alter = malloc(sizeof *replica->alter);
        ks_assert(replica->alter != NULL);
    }
    memset(replica->alter, 0, sizeof *replica->alter);
    replica->alter->broker_id = broker->id;
    replica->alter->topic_index = replica->topic_index;
    replica->alter->partition = replica->partition;
    replica->alter->leader_epoch = replica->state.leader_epoch;
    replica->alter->partition_epoch = replica->state.partition_epoch;
    replica->alter->isr_count = isr_count;
    memcpy(replica->alter->isr, isr, sizeof(int32_t) * (size_t)isr_count);
    qsort(replica->alter->isr, (size_t)isr_count, sizeof(int32_t), compare_int32);
    /* Partition.addBrokerEpochToIsr: our own epoch, each follower's from its
     * fetches, -1 where none is known (or in the ZooKeeper era). */
    bool kraft = kraft_era(broker);
    for (int32_t i = 0; i < isr_count; i++) {
        int32_t id = replica->alter->isr[i];
        const struct ks__follower_state *follower = find_follower(replica, id);
        int64_t epoch = -1;
        if (kraft && id == broker->id) {
            epoch = broker->broker_epoch;
        } else if (kraft && follower != NULL) {
            epoch = follower->broker_epoch;
        }
        replica->alter->isr_broker_epochs[i] = epoch;
    }
    replica->alter->broker_epoch = broker->broker_epoch;
    replica->alter_state = KS__ALTER_IN_FLIGHT;
    send_alter(broker, replica);
}

/* Partition.isReplicaIsrEligible: the metadata says the broker is unfenced
 * (and, in KRaft, not in controlled shutdown: broker_alive is both) and, in KRaft, the
 * follower's fetches came from the incarnation the metadata knows (or did not
 * say which, -1). The ZooKeeper era only asked whether it was alive. */
static bool follower_isr_eligible(const struct ks_broker *broker,
                                  const struct ks__follower_state *follower)
{
    if (!ks__broker_alive(broker, follower->broker_id)) {
        return false;
    }
    if (!kraft_era(broker)) {
        return true;
    }
    int64_t cached = broker->broker_epochs[follower->broker_id - 1];
    return cached >= 0 && (follower->broker_epoch == -1 || follower->broker_epoch == cached);
}

/* kafka-reference 9.5 (Partition.maybeExpandIsr): add a follower that
 * reached the HW and the start of the current leader epoch, if eligible. */
static void maybe_expand_isr(struct ks_broker *broker, struct ks__replica *replica,
                             const struct ks__follower_state *follower)
{
    if (replica->alter_state != KS__ALTER_IDLE ||
        ks__list_contains(replica->state.isr, replica->state.isr_count, follower->broker_id)) {
        return;
    }
    if (follower->leo < replica->hw || follower->leo < replica->epoch_start_offset ||
        !follower_isr_eligible(broker, follower)) {
        return;
    }
    int32_t isr[KS_REPLICATION_FACTOR_MAX];
    int32_t count = replica->state.isr_count;
    memcpy(isr, replica->state.isr, sizeof(int32_t) * (size_t)count);
    isr[count++] = follower->broker_id;
    request_isr(broker, replica, isr, count);
}

/* kafka-reference 9.4 (Partition.maybeShrinkIsr): drop followers not caught
 * up for replica.lag.time.max.ms. */
static void maybe_shrink_isr(struct ks_broker *broker, struct ks__replica *replica)
{
    if (replica->role != KS_ROLE_LEADER) {
        return;
    }
    switch (replica->alter_state) {
    case KS__ALTER_IDLE: break;
    case KS__ALTER_IN_FLIGHT:
        if (ks__broker_now_ns(broker) - replica->alter_sent_ns >= KS__ALTER_RETRY_NS) {
            send_alter(broker, replica);
        }
        return;
    case KS__ALTER_REFUSED: return; /* waits for the push that brings the truth */
    }
    int32_t isr[KS_REPLICATION_FACTOR_MAX];
    int32_t count = 0;
    bool shrink = false;
    for (int32_t i = 0; i < replica->state.isr_count; i++) {
        int32_t id = replica->state.isr[i];
        const struct ks__follower_state *follower = find_follower(replica, id);
        if (id != broker->id && follower != NULL &&
            !follower_caught_up(broker, replica, follower)) {
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
    for (guint i = 0; i < broker->hosted->len; i++) {
        struct ks__replica *replica = ks__hosted(broker, i);
        if (replica->log != NULL) {
            maybe_shrink_isr(broker, replica);
        }
    }
    broker->isr_timer = ks_world_schedule(world, (ks_node_id)broker->id,
                                          (ks_time_ns)broker->spec->cluster->replica_lag_ns_max / 2,
                                          KS_TIMER_BROKER_ISR_CHECK, isr_check, broker);
}

void ks__replica_start_isr_check(struct ks_broker *broker)
{
    ks_time_ns isr_ns = (ks_time_ns)broker->spec->cluster->replica_lag_ns_max / 2;
    broker->isr_timer = ks_world_schedule(broker->world, (ks_node_id)broker->id,
                                          ks__broker_first_run_ns(broker, isr_ns, isr_ns),
                                          KS_TIMER_BROKER_ISR_CHECK, isr_check, broker);
}

/* Partition.handleAlterPartitionError: what a leader does with a refused
 * ISR change. */
static void on_alter_refused(struct ks_broker *broker, struct ks__replica *replica,
                             int16_t error_code)
{
    switch (error_code) {
    case KS_ERR_INELIGIBLE_REPLICA:
        /* The controller says our partition epoch is current and nothing was
         * applied: back to the committed ISR; a later fetch may try again. */
        replica->alter_state = KS__ALTER_IDLE;
        ks__replica_maybe_advance_hw(broker, replica);
        return;
    case KS_ERR_UNKNOWN_TOPIC_OR_PARTITION:
    case KS_ERR_FENCED_LEADER_EPOCH:
    case KS_ERR_INVALID_UPDATE_VERSION:
    case KS_ERR_INVALID_REQUEST:
        /* Our state is stale: stay pending, without retrying, until the
         * metadata (a push) overrides it. */
        replica->alter_state = KS__ALTER_REFUSED;
        return;
    }
    /* Anything else (STALE_BROKER_EPOCH, NOT_CONTROLLER): Kafka retries; the
     * request stays in flight and isr_check re-sends it (KS__ALTER_RETRY_NS). */
}

void ks__replica_on_alter_response(struct ks_broker *broker,
                                   const struct ks_alter_partition_response *response)
{
    struct ks__replica *replica =
        ks__broker_find_replica(broker, response->topic_index, response->partition);
    if (replica == NULL || replica->alter_state != KS__ALTER_IN_FLIGHT) {
        return; /* answered already, or overtaken by a push (the push brings the truth) */
    }
    if (response->error_code != KS_ERR_NONE) {
        on_alter_refused(broker, replica, response->error_code);
        return;
    }
    /* Partition.handleAlterPartitionUpdate: an answer for another leader
     * epoch, or older than what we hold, is ignored (we stay pending until a
     * push); an equal partition epoch means the controller had nothing to
     * change, and the ISR is committed either way. */
    if (response->leader != broker->id || response->leader_epoch != replica->state.leader_epoch ||
        response->partition_epoch < replica->state.partition_epoch) {
        replica->alter_state = KS__ALTER_REFUSED;
        return;
    }
    replica->alter_state = KS__ALTER_IDLE;
    ks__serve_touch(broker, replica); /* the ISR */
    replica->state.partition_epoch = response->partition_epoch;
    replica->state.isr_count = response->isr_count;
    memcpy(replica->state.isr, response->isr, sizeof replica->state.isr);
    broker->meta[response->topic_index][response->partition] = replica->state;
    ks__replica_check(broker, replica);
    ks__replica_maybe_advance_hw(broker, replica);
}

/* ---- follower fetch state (leader side) -------------------------------------------- */

static void follower_wake(const struct ks_broker *broker, struct ks__follower_state *follower)
{
    if (!follower->quiet) {
        return;
    }
    ks_time_ns fetched = broker->session_fetch_ns[follower->broker_id - 1];
    follower->last_caught_up_ns = caught_up_ns(broker, follower);
    if (fetched > follower->last_fetch_ns) {
        follower->last_fetch_ns = fetched;
    }
    follower->quiet = false;
}

void ks__replica_follower_wake(struct ks_broker *broker, struct ks__replica *replica,
                               int32_t follower_id)
{
    if (replica == NULL || replica->role != KS_ROLE_LEADER) {
        return;
    }
    struct ks__follower_state *follower = find_follower(replica, follower_id);
    if (follower != NULL) {
        follower_wake(broker, follower);
    }
}

bool ks__replica_follower_sleep(struct ks_broker *broker, struct ks__replica *replica,
                                int32_t follower_id, int64_t fetch_offset)
{
    (void)broker;
    if (replica->role != KS_ROLE_LEADER || fetch_offset != ks__leo_of(replica) ||
        replica->hw != fetch_offset ||
        !ks__list_contains(replica->state.isr, replica->state.isr_count, follower_id)) {
        return false;
    }
    struct ks__follower_state *follower = find_follower(replica, follower_id);
    if (follower == NULL || follower->leo != fetch_offset ||
        follower->leader_leo_at_last_fetch != fetch_offset) {
        return false;
    }
    /* What a fetch at fetch_offset would do here: both times to its own
     * (now >= both), the LEOs as they are, no ISR expansion (a member), no
     * HW advance (HW = LEO). */
    follower->quiet = true;
    return true;
}

void ks__replica_record_follower_fetch(struct ks_broker *broker, struct ks__replica *replica,
                                       int32_t follower_id, int64_t follower_epoch,
                                       int64_t fetch_offset)
{
    struct ks__follower_state *follower = find_follower(replica, follower_id);
    if (follower == NULL) {
        return;
    }
    follower_wake(broker, follower); /* S5: the session woke it before its fetch time moved */
    follower->broker_epoch = follower_epoch;
    ks_time_ns now = ks__broker_now_ns(broker);
    int64_t leader_leo = ks__leo_of(replica);
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
    ks__replica_maybe_advance_hw(broker, replica);
}

/* ---- creation and role changes --------------------------------------------------------- */

struct ks__replica *ks__replica_open(struct ks_broker *broker, int32_t topic_index,
                                     int32_t partition, int64_t recovery_point, bool clean_shutdown,
                                     int64_t hw_checkpoint, int64_t log_start_checkpoint,
                                     struct ks_log_recovery_report *report_out)
{
    struct ks__replica *replica = calloc(1, sizeof *replica);
    ks_assert(replica != NULL);
    replica->topic_index = topic_index;
    replica->partition = partition;
    replica->topic = &broker->topics[topic_index];
    replica->followers =
        calloc((size_t)replica->topic->replication_factor, sizeof *replica->followers);
    ks_assert(replica->followers != NULL);
    replica->role = KS_ROLE_NONE;
    replica->state.partition_epoch = -1;
    replica->state.leader = -1;
    replica->hw_floor_epoch = -1;
    replica->alter_state = KS__ALTER_IDLE;
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
    ks__serve_link_replica(broker, replica); /* S9 of broker_serve.c */
    ks__serve_touch(broker, replica);
    /* Into broker->hosted at its (topic, partition) place: replicas are
     * opened in that order on start, so this is an append but for a
     * replica opened later (a reassignment). */
    guint at = broker->hosted->len;
    while (at > 0) {
        const struct ks__replica *before = ks__hosted(broker, at - 1);
        if (before->topic_index < topic_index ||
            (before->topic_index == topic_index && before->partition < partition)) {
            break;
        }
        at--;
    }
    g_ptr_array_insert(broker->hosted, (gint)at, replica);
    broker->follow_generation++;
    if (report_out != NULL) {
        *report_out = report; /* the recovery line: ks__logs_load */
    }
    return replica;
}

void ks__replica_close(struct ks__replica *replica)
{
    ks_log_close(replica->log);
    ks_producer_state_free(replica->producers);
    free(replica->followers);
    free(replica->alter);
    ks_assert(replica->session_ref_count == 0); /* its sessions went first (S9) */
    free(replica->session_refs);
    free(replica);
}

static void fail_partition_ops(struct ks_broker *broker, struct ks__replica *replica)
{
    ks__produce_complete_pending(broker, replica, KS__PENDING_FAIL_ALL,
                                 KS_ERR_NOT_LEADER_OR_FOLLOWER);
    ks__serve_release(broker, replica->topic_index, replica->partition, KS__RELEASE_ALL);
}

static void become_leader(struct ks_broker *broker, struct ks__replica *replica)
{
    /* Re-elected with a new epoch: pending acks=all produce keep waiting for
     * the HW, as Kafka's DelayedProduce does (it is keyed by partition). */
    replica->role = KS_ROLE_LEADER;
    broker->follow_generation++;
    replica->alter_state = KS__ALTER_IDLE;
    int64_t leo = ks__leo_of(replica);
    /* KIP-101: a new leader records (epoch, LEO) in its epoch cache. */
    ks_log_epoch_assign(replica->log, replica->state.leader_epoch, leo);
    replica->epoch_start_offset = leo;
    ks_time_ns now = ks__broker_now_ns(broker);
    replica->follower_count = 0;
    for (int32_t i = 0; i < replica->state.replica_count; i++) {
        int32_t id = replica->state.replicas[i];
        if (id == broker->id) {
            continue;
        }
        /* The replicas are the topic's replication factor, this one among them. */
        ks_assert(replica->follower_count < replica->topic->replication_factor);
        struct ks__follower_state *follower = &replica->followers[replica->follower_count++];
        memset(follower, 0, sizeof *follower); /* not quiet */
        follower->broker_id = id;
        follower->broker_epoch = -1;
        follower->leo = -1;
        follower->leader_leo_at_last_fetch = -1;
        follower->last_fetch_ns = 0;
        /* Partition.makeLeader: ISR members count as caught up now. */
        follower->last_caught_up_ns =
            ks__list_contains(replica->state.isr, replica->state.isr_count, id) ? now : 0;
    }
    if (!replica->producers_valid) {
        ks_producer_state_rebuild(replica->producers, replica->log);
        replica->producers_valid = true;
    }
    ks__replica_check(broker, replica);
    ks__serve_release(broker, replica->topic_index, replica->partition, KS__RELEASE_ALL);
    ks__replica_maybe_advance_hw(broker, replica);
    if (broker->txn_coordinator != NULL && replica->topic_index == broker->txn_topic_index) {
        ks_txn_coordinator_on_leadership(broker->txn_coordinator, replica->partition, true);
    }
    if (broker->coordinator != NULL && replica->topic_index == broker->offsets_topic_index) {
        ks_group_coordinator_on_leadership(broker->coordinator, replica->partition, true);
    }
}

static void become_follower(struct ks_broker *broker, struct ks__replica *replica)
{
    bool was_leader = replica->role == KS_ROLE_LEADER;
    if (was_leader) {
        fail_partition_ops(broker, replica);
    }
    replica->role = KS_ROLE_FOLLOWER;
    broker->follow_generation++;
    replica->alter_state = KS__ALTER_IDLE;
    replica->fetch_backoff_until_ns = 0;
    /* Truncation needs a leader to follow: with no leader (an offline
     * partition) the ZooKeeper-era controller sent no LeaderAndIsr at all. */
    if (broker->spec->cluster->truncation == KS_TRUNCATION_HIGH_WATERMARK &&
        replica->state.leader >= 1) {
        ks__replica_truncate(broker, replica, KS_REASON_TRUNCATE_TO_HIGH_WATERMARK, replica->hw, -1,
                             -1);
    }
    if (was_leader && broker->coordinator != NULL &&
        replica->topic_index == broker->offsets_topic_index) {
        ks_group_coordinator_on_leadership(broker->coordinator, replica->partition, false);
    }
    if (was_leader && broker->txn_coordinator != NULL &&
        replica->topic_index == broker->txn_topic_index) {
        ks_txn_coordinator_on_leadership(broker->txn_coordinator, replica->partition, false);
    }
    if (replica->state.leader >= 1 && broker->push_applying) {
        broker->restart_pending[replica->state.leader - 1] = 1; /* ks__broker_apply_push */
    } else if (replica->state.leader >= 1) {
        ks__fetcher_restart(broker, replica->state.leader);
    }
}

void ks__replica_apply_state(struct ks_broker *broker, const struct ks_partition_state *state)
{
    int32_t t = state->topic_index;
    int32_t p = state->partition;
    /* The controller pushes only partitions of the topics it was built with. */
    ks_assert(t >= 0 && t < broker->topic_count);
    ks_assert(p >= 0 && p < broker->topics[t].partition_count);
    if (state->partition_epoch > broker->meta[t][p].partition_epoch) {
        broker->meta[t][p] = *state;
    }
    if (!ks__list_contains(state->replicas, state->replica_count, broker->id)) {
        return;
    }
    struct ks__replica *replica = broker->replicas[t][p];
    if (replica == NULL) {
        replica = ks__replica_open(broker, t, p, 0, true, -1, -1, NULL);
    }
    if (replica->has_state && state->partition_epoch <= replica->state.partition_epoch) {
        return;
    }
    struct ks_partition_state old = replica->state;
    bool had_state = replica->has_state;
    replica->state = *state;
    replica->has_state = true;
    ks__serve_touch(broker, replica); /* role, epoch or ISR */
    broker->follow_generation++;      /* the leader may have moved */
    if (state->leader == broker->id) {
        if (replica->role != KS_ROLE_LEADER || !had_state ||
            old.leader_epoch != state->leader_epoch) {
            become_leader(broker, replica);
        } else {
            /* Same epoch: an ISR change (ours, or the controller's). */
            if (replica->alter_state != KS__ALTER_IDLE &&
                state->partition_epoch > replica->alter->partition_epoch) {
                replica->alter_state = KS__ALTER_IDLE;
            }
            ks__replica_check(broker, replica);
            ks__replica_maybe_advance_hw(broker, replica);
        }
        return;
    }
    if (replica->role != KS_ROLE_FOLLOWER || !had_state || old.leader != state->leader ||
        old.leader_epoch != state->leader_epoch) {
        become_follower(broker, replica);
    }
}
