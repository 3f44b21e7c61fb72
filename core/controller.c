/*
** core/controller.c: the controller (KRaft's QuorumController reduced to one
** node that never fails by itself: `controller = kraft`; it can still be cut
** off from brokers by network faults).
**
** State: per partition a struct ks_partition_state (replicas in assignment
** order, leader, leader epoch, partition epoch, ISR) plus the metadata
** version at which it last changed; per broker its registration (incarnation
** = broker epoch), last heartbeat time and fenced flag. Every change bumps a
** global metadata version (KRaft's metadata log offset).
**
** Invariants (asserted; ks_controller_check checks them all after every
** controller event in KS_DEBUG builds):
**   C1  leader is -1 or a replica of the partition, unfenced when elected;
**       fencing a leader moves leadership off it, so a fenced broker never
**       stays leader.
**   C2  a clean leader is in the ISR. Without ELR the ISR is never empty
**       (KRaft keeps the last member when fencing, kafka-reference 9.4); with
**       ELR it may be, and then there is no leader.
**   C3  leader epoch and partition epoch only grow. Every change of a
**       partition goes through touch(), which asserts the growth against the
**       epochs of the previous change and bumps the partition epoch.
**   C4  (KIP-966) the ELR and LastKnownElr are empty unless
**       eligible.leader.replicas.enable; ELR members are replicas outside the
**       ISR, each once, ascending; LastKnownElr holds at most one replica and
**       is empty while the partition has a leader.
**   C5  a broker in controlled shutdown is registered and unfenced, leads no
**       partition and is in no ISR but as its last member (it is not active:
**       elections, AlterPartition and preferred-leader moves skip it).
**
** Broker life cycle as the controller sees it:
**
**   (known) --registration of a new incarnation (restart)--> FENCED
**   FENCED --heartbeat not wanting to be fenced, with the metadata applied
**            up to its registration--> UNFENCED
**   UNFENCED --no heartbeat for broker.session.timeout.ms--> FENCED, out of ISRs
**   UNFENCED --heartbeat WantShutDown, leads partitions--> CONTROLLED_SHUTDOWN:
**            out of ISRs, its partitions elect without it
**   UNFENCED or FENCED --heartbeat WantShutDown, leads nothing--> FENCED, out of
**            ISRs, answered ShouldShutDown
**   CONTROLLED_SHUTDOWN --heartbeat WantShutDown once every active broker has
**            reported the moves--> FENCED, answered ShouldShutDown
**   (controlled shutdown: controlled_shutdown(), after KRaft's
**   BrokerHeartbeatManager.calculateNextBrokerState and
**   ReplicationControlManager.processBrokerHeartbeat)
**
** (BrokerHeartbeatManager.calculateNextBrokerState: a broker fenced because
** its session expired while it was only cut off is unfenced by its first
** heartbeat that gets through; a restarted one once it caught up. The broker
** side, with its exponential backoff, is BrokerLifecycleManager in
** core/broker.c.)
**
** A restarted broker registers a new incarnation (broker epoch). What
** happens to its old session depends on the era being modelled:
**   - replication.truncation = leader-epoch (KRaft, the default): as in
**     Kafka's ClusterControlManager, a second registration is refused with
**     DUPLICATE_BROKER_REGISTRATION while the old incarnation's session is
**     still valid. The broker keeps retrying; the old session expires, which
**     fences it and removes it from every ISR (except where it is the last
**     member), and only then does it register, fenced, and catch up. So a
**     broker that lost data in a crash never leads on the strength of an
**     ISR membership it held before (KIP-966 reaches the same end for 3.7+).
**   - replication.truncation = high-watermark (Kafka before 0.11, with its
**     ZooKeeper controller): a quick restart was often not noticed as a
**     failure, so the new incarnation registers at once and stays in the
**     ISRs; only leadership moves off it. KIP-101's scenarios rely on this.
** Session expiry fences the broker and removes it from every ISR (except
** where it is the last member).
**
** Elections (kafka-reference 9.8, PartitionChangeBuilder): the first replica
** in assignment order that is in the ISR and unfenced; if none and unclean
** election is enabled (cluster or topic), the first unfenced replica, with the
** ISR reset to it (KS_EV_UNCLEAN_ELECTION); else leader -1 (KS_EV_NO_LEADER).
** Every leader change bumps the leader epoch; every change bumps the
** partition epoch. Elections run when a leader is fenced, when a broker is
** unfenced (for leaderless partitions), and for preferred leaders when
** auto.leader.rebalance.enable (below).
**
** Preferred-leader balancing (QuorumController
** maybeScheduleNextBalancePartitionLeaders, ReplicationControlManager
** maybeBalancePartitionLeaders): not a fixed clock from start-up. After
** every controller event, if some partition's leader is not its preferred
** replica (replicas[0]; a leaderless partition counts too) and no check is
** scheduled, one is scheduled leader.imbalance.check.interval later. So a
** check runs one interval after leadership moved away, not on multiples of
** the interval since start. The check elects each preferred replica that is
** unfenced and in the ISR, at most 1000 per pass (MAX_ELECTIONS_PER_IMBALANCE);
** a pass that hit the cap is followed 10 ms later by another, otherwise the
** next one is again an interval after the first event that finds an
** imbalance. ksim visits partitions in (topic, partition) order where Kafka
** walks a hash set, which only matters beyond the cap.
**
**   DEFERRED --event, imbalance--> SCHEDULED (in interval)
**   IMMEDIATELY --event, imbalance--> SCHEDULED (in 10 ms)
**   SCHEDULED --check, < 1000 elections--> DEFERRED
**   SCHEDULED --check, 1000 elections----> IMMEDIATELY
**
** AlterPartition (ReplicationControlManager.alterPartition and
** validateAlterPartitionData), checked in Kafka's order: the sender's broker
** epoch (STALE_BROKER_EPOCH), the partition (UNKNOWN_TOPIC_OR_PARTITION),
** epochs newer than ours (NOT_CONTROLLER), an older leader epoch
** (FENCED_LEADER_EPOCH), a sender that is not the leader (INVALID_REQUEST),
** an older partition epoch (INVALID_UPDATE_VERSION), an ISR that is not a
** set of replicas holding the leader (INVALID_REQUEST), and every member of
** the new ISR, old or new, registered, unfenced and of the broker epoch the
** leader saw in its fetches unless it sent -1 (INELIGIBLE_REPLICA;
** ineligibleReplicasForIsr). An ISR equal to the current one changes nothing
** (no new partition epoch), as PartitionChangeBuilder writes no record.
**
** Eligible Leader Replicas (KIP-966; eligible.leader.replicas.enable, off by
** default as in Kafka 4.0), as PartitionChangeBuilder builds every change
** (maybePopulateTargetElr, electLeader, maybeUpdateRecordElr,
** maybeUpdateLastKnownLeader) and ReplicationControlManager calls it:
**   - whenever the ISR changes (fencing, AlterPartition, an unclean
**     shutdown), a new ISR of at least min(min.insync.replicas, RF) clears
**     the ELR; a smaller one makes the ELR (old ELR + old ISR) minus the new
**     ISR minus a broker that shut down uncleanly. Because the HW cannot move
**     while the ISR is below min ISR (KAFKA-15583), those replicas hold every
**     committed record;
**   - fencing may empty the ISR (without ELR the last member stays); the
**     change that empties it stores the leader before it as LastKnownElr;
**   - elections take the ISR first, the ELR when the ISR is empty (the ISR
**     becomes that leader, which leaves the ELR), then the last known leader
**     when ISR and ELR are empty (an unclean election: ISR = that leader, ELR
**     cleared), then unclean election if enabled. Any change that leaves a
**     leader clears LastKnownElr. Kafka's canElectLastKnownLeader at the
**     snapshot ksim follows returns true without the liveness test its log
**     line implies; ksim elects the last known leader only when unfenced, as
**     Kafka's ELR documentation (kafka.apache.org/40, Eligible Leader
**     Replicas) states;
**   - a broker that registers a new incarnation has shut down uncleanly as
**     far as the controller knows (ClusterControlManager.registerBroker calls
**     ReplicationControlManager.handleBrokerUncleanShutdown for every new
**     incarnation): it leaves every ISR and ELR, so a replica that may have
**     lost unflushed data is never elected from them. ksim restarts always
**     register a new incarnation, so every restart counts as unclean.
** Not modelled: the unclean recovery manager KIP-966 proposed (it is not in
** Kafka's code), ClearElrRecord on a min.insync.replicas change (ksim has no
** dynamic configs), and brokers learning the ELR.
**
** Propagation: after each change the controller pushes to every registered
** broker the partitions changed since the version that broker last
** acknowledged in a heartbeat, and it does the same after answering a
** heartbeat that reports an older version. Pushes to a cut-off broker are
** lost, but as soon as heartbeats get through it converges.
*/
#include "controller.h"

#include "base.h"
#include "placement.h"
#include "raft.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cpart {
    struct ks_partition_state state;
    bool imbalanced;             /* leader != replicas[0]: counted in imbalanced_count */
    struct ks_partition_elr elr; /* C4; the controller's only (not pushed) */
    int64_t changed_version;
    int32_t leader_epoch_touched; /* C3: the epochs as of the last touch() */
    int32_t partition_epoch_touched;
};

/* QuorumController.ImbalanceSchedule. */
enum balance_schedule {
    BALANCE_DEFERRED,    /* schedule the next check an interval after an event */
    BALANCE_SCHEDULED,   /* balance_timer armed */
    BALANCE_IMMEDIATELY, /* the last check hit its cap: the next one in 10 ms */
};

#define MAX_ELECTIONS_PER_IMBALANCE 1000
#define BALANCE_IMMEDIATE_DELAY_NS  (10 * KS_NS_PER_MS)

struct cbroker {
    bool registered; /* a live incarnation is known */
    bool fenced;
    int64_t broker_epoch;
    ks_time_ns last_heartbeat_ns;
    int64_t acked_version;    /* from its last heartbeat */
    int64_t catch_up_version; /* its registration's version (registerBrokerRecordOffset) */
    int64_t refused_epoch;    /* last incarnation told DUPLICATE_BROKER_REGISTRATION */
    /* Controlled shutdown (BrokerRegistration.inControlledShutdown): set when
     * the broker's heartbeat asks while it leads partitions, cleared when it
     * is fenced; the version its leader and ISR moves reached. */
    bool in_controlled_shutdown;
    int64_t controlled_shutdown_version;
};

struct ks_controller {
    ks_world *world;
    const struct ks_cluster_spec *spec;   /* not owned */
    const struct ks_topic_config *topics; /* not owned */
    int32_t topic_count;
    ks_node_id node;
    const struct ks_cluster_observer *observer; /* not owned */
    int32_t broker_count;
    struct cbroker brokers[KS_BROKER_COUNT_MAX];
    struct cpart **parts; /* [topic][partition] */
    int64_t version;
    ks_timer_id session_timer;
    bool push_pending;
    /* Preferred-leader balancing (see the design block). */
    enum balance_schedule balance_schedule;
    ks_timer_id balance_timer; /* armed exactly while SCHEDULED */
    int32_t imbalanced_count;  /* partitions whose leader is not the preferred one */
    struct quorum *quorum;     /* controllers > 1: the KRaft quorum (below); NULL with one */
};

/* ---- the quorum (controllers = 3 or 5) ----------------------------------------
 *
 * With several controllers each one is a voter of core/raft.c's quorum and
 * keeps two copies of the controller state: the committed one, which every
 * voter builds by applying the committed metadata records in log order
 * (QuorumController's replay of committed batches), and, on the active
 * controller only, the working copy above (parts, brokers, version) that the
 * controller's logic changes, as QuorumController applies its own records
 * before they commit. The active controller is the Raft leader once it has
 * committed a record of its epoch (so it has replayed everything before):
 * then the working copy starts as the committed one, every broker session
 * restarts at now (BrokerHeartbeatManager after QuorumController.claim: a
 * failover fences no one by itself), and its timers arm. At the end of every
 * controller event the working copy's changes become records
 * (PartitionRecord, BrokerRecord: the whole entity, ksim's own encoding),
 * appended to the metadata log; the answers to the brokers' requests of that
 * event wait until those records are committed (QuorumController answers a
 * write only once committed), and pushes to brokers carry the committed copy
 * only, so a broker never sees a change that a failover could lose. When the
 * leader loses its leadership (QuorumController.renounce) its working copy
 * and unanswered requests are dropped; its next activation starts again from
 * the committed copy. A controller that is not active answers NOT_CONTROLLER
 * with the active controller's node as hint.
 *
 * Bootstrap: the cluster's first state (brokers registered, topics created
 * with their first leaders) is computed once by the first controller, copied
 * to every controller's committed copy and pushed to the brokers at start, as
 * Kafka's bootstrap metadata is formatted into every controller; the log
 * holds only what changes after it. */
#define QUORUM_PENDING_BYTES_MAX 256

struct pending_response {
    int64_t required_offset; /* sent once the high watermark reaches it; -1: end of this event */
    ks_node_id target;
    uint32_t kind;
    size_t message_bytes;
    uint8_t message[QUORUM_PENDING_BYTES_MAX];
};

/* What a broker's registration holds in the log (BrokerRegistration and
 * its fencing records). */
struct broker_persisted {
    int64_t broker_epoch;
    int64_t catch_up_version;
    int64_t refused_epoch;
    int64_t controlled_shutdown_version;
    uint8_t registered;
    uint8_t fenced;
    uint8_t in_controlled_shutdown;
    uint8_t reserved[5];
};

struct partition_record {
    int64_t version;
    int64_t changed_version;
    struct ks_partition_state state;
    struct ks_partition_elr elr;
};

struct broker_record {
    int64_t version;
    int32_t broker_id;
    int32_t reserved;
    struct broker_persisted registration;
};

struct quorum {
    struct ks_raft *raft;
    int32_t index; /* 0-based: controller(index + 1) */
    bool active;
    struct cpart **committed_parts;
    struct broker_persisted committed_brokers[KS_BROKER_COUNT_MAX];
    int64_t committed_version;
    struct cpart **boot_parts;
    struct broker_persisted boot_brokers[KS_BROKER_COUNT_MAX];
    int64_t boot_version;
    /* The working copy as last logged (what the next records are diffed against). */
    struct broker_persisted logged_brokers[KS_BROKER_COUNT_MAX];
    int64_t logged_version;
    GArray *pending; /* struct pending_response, in the order of the requests */
    /* The cross-voter checks (KS_DEBUG), shared with the other voters. */
    struct ks_raft *const *peers;
    int32_t peer_count;
    struct ks_raft_quorum_checker *checker;
};

/* ---- small helpers ------------------------------------------------------- */

/* A new event of `kind` at the current time, about broker (-1) and
 * topic_index/partition (-1); the caller adds its facts and emits it. */
static struct ks_cluster_event event_new(const struct ks_controller *controller,
                                         enum ks_cluster_event_kind kind, int32_t broker,
                                         int32_t topic_index, int32_t partition)
{
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, ks_world_now_ns(controller->world), kind);
    event.broker = broker;
    event.topic_index = topic_index;
    event.partition = partition;
    return event;
}

static void emit(struct ks_controller *controller, const struct ks_cluster_event *event)
{
    if (controller->observer == NULL || controller->observer->on_event == NULL) {
        return;
    }
    controller->observer->on_event(controller->observer->context, event);
}

/* An election or ISR change event: the partition's state after the change
 * and, unless before is NULL, its leader, epoch and ISR before it. */
static struct ks_cluster_event partition_event(const struct ks_controller *controller,
                                               enum ks_cluster_event_kind kind, int32_t broker,
                                               const struct ks_partition_state *state,
                                               const struct ks_partition_state *before)
{
    struct ks_cluster_event event =
        event_new(controller, kind, broker, state->topic_index, state->partition);
    event.leader_new = state->leader;
    event.leader_epoch_new = state->leader_epoch;
    event.replica_count =
        ks_cluster_event_set_list(event.replicas, state->replicas, state->replica_count);
    event.isr_new_count = ks_cluster_event_set_list(event.isr_new, state->isr, state->isr_count);
    const struct ks_topic_config *topic = &controller->topics[state->topic_index];
    event.isr_count_min = ks_topic_min_isr(topic);
    if (before != NULL) {
        event.leader_old = before->leader;
        event.leader_epoch_old = before->leader_epoch;
        event.isr_old_count =
            ks_cluster_event_set_list(event.isr_old, before->isr, before->isr_count);
    }
    return event;
}

/* The KIP-966 facts of an event: the ELR before (NULL: unchanged) and the
 * partition's ELR and last known leader after. */
static void add_elr_facts(struct ks_cluster_event *event, const struct ks_partition_elr *before,
                          const struct ks_partition_elr *after)
{
    const struct ks_partition_elr *old = before != NULL ? before : after;
    event->elr_old_count = ks_cluster_event_set_list(event->elr_old, old->elr, old->elr_count);
    event->elr_new_count = ks_cluster_event_set_list(event->elr_new, after->elr, after->elr_count);
    event->last_known_leader = after->last_known_elr_count > 0 ? after->last_known_elr[0] : -1;
}

static int compare_ids(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a;
    int32_t y = *(const int32_t *)b;
    return (x > y) - (x < y);
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

static bool topic_unclean(const struct ks_controller *controller, int32_t topic_index)
{
    /* The loader already applied the cluster default to every topic that
     * does not override it (topic-level unclean.leader.election.enable). */
    return controller->topics[topic_index].unclean_leader_election_enable;
}

/* ClusterControlManager.isActive: registered, not fenced, not in controlled
 * shutdown; only such a broker may be elected or join an ISR. */
static bool broker_active(const struct cbroker *broker)
{
    return broker->registered && !broker->fenced && !broker->in_controlled_shutdown;
}

static void alive_array(const struct ks_controller *controller, bool *alive)
{
    for (int32_t i = 0; i < controller->broker_count; i++) {
        alive[i] = broker_active(&controller->brokers[i]);
    }
}

static bool elr_enabled(const struct ks_controller *controller)
{
    return controller->spec->cluster->eligible_leader_replicas_enable;
}

static void check_partition(const struct ks_partition_state *state, bool elr_enabled)
{
    if (!elr_enabled) {
        ks_assert(state->isr_count >= 1); /* C2 */
    } else if (state->isr_count == 0) {
        ks_assert(state->leader < 0); /* C2 */
    }
    ks_assert(state->isr_count <= state->replica_count);
    if (state->leader >= 0) {
        ks_assert(list_contains(state->replicas, state->replica_count, state->leader)); /* C1 */
        ks_assert(list_contains(state->isr, state->isr_count, state->leader));          /* C2 */
    }
}

/* ---- pure helpers --------------------------------------------------------- */

int32_t ks_controller_elect_eligible(const struct ks_partition_state *state,
                                     const struct ks_partition_elr *elr, const bool *alive,
                                     bool unclean_enabled, enum ks_elected_from *from_out)
{
    /* PartitionChangeBuilder.isValidNewLeader: in the ISR, or in the ELR
     * when the ISR is empty, and acceptable (unfenced). */
    for (int32_t i = 0; i < state->replica_count; i++) {
        int32_t id = state->replicas[i];
        if (!alive[id - 1]) {
            continue;
        }
        if (list_contains(state->isr, state->isr_count, id)) {
            *from_out = KS_ELECTED_FROM_ISR;
            return id;
        }
        if (state->isr_count == 0 && list_contains(elr->elr, elr->elr_count, id)) {
            *from_out = KS_ELECTED_FROM_ELR;
            return id;
        }
    }
    /* canElectLastKnownLeader: ISR and ELR empty, LastKnownElr holds one
     * replica, and (the documented rule, see the design block) it is unfenced. */
    if (state->isr_count == 0 && elr->elr_count == 0 && elr->last_known_elr_count == 1 &&
        alive[elr->last_known_elr[0] - 1]) {
        *from_out = KS_ELECTED_FROM_LAST_KNOWN_LEADER;
        return elr->last_known_elr[0];
    }
    if (unclean_enabled) {
        for (int32_t i = 0; i < state->replica_count; i++) {
            int32_t id = state->replicas[i];
            if (alive[id - 1]) {
                *from_out = KS_ELECTED_FROM_ANY_REPLICA;
                return id;
            }
        }
    }
    *from_out = KS_ELECTED_FROM_NONE;
    return -1;
}

int32_t ks_controller_elect(const struct ks_partition_state *state, const bool *alive,
                            bool unclean_enabled, bool *unclean_out)
{
    static const struct ks_partition_elr no_elr;
    enum ks_elected_from from = KS_ELECTED_FROM_NONE;
    int32_t leader = ks_controller_elect_eligible(state, &no_elr, alive, unclean_enabled, &from);
    *unclean_out = from == KS_ELECTED_FROM_ANY_REPLICA;
    return leader;
}

/* ---- Eligible Leader Replicas (KIP-966) -------------------------------------- */

static void remove_id(int32_t *list, int32_t *count, int32_t id)
{
    int32_t kept = 0;
    for (int32_t i = 0; i < *count; i++) {
        if (list[i] != id) {
            list[kept++] = list[i];
        }
    }
    *count = kept;
}

/* PartitionChangeBuilder.maybePopulateTargetElr, after the ISR changed from
 * old_isr to the partition's ISR: an ISR of min ISR or more clears the ELR;
 * a smaller one makes it (ELR + old ISR) - ISR - unclean_shutdown (a broker
 * id, or -1). Ascending, as the HashSet of small Integers that Kafka builds
 * it from iterates. */
static void elr_after_isr_change(const struct ks_controller *controller, struct cpart *part,
                                 const int32_t *old_isr, int32_t old_isr_count,
                                 int32_t unclean_shutdown)
{
    const struct ks_partition_state *state = &part->state;
    struct ks_partition_elr *elr = &part->elr;
    if (state->isr_count >= ks_topic_min_isr(&controller->topics[state->topic_index])) {
        elr->elr_count = 0;
        return;
    }
    int32_t count = 0;
    int32_t next[KS_REPLICATION_FACTOR_MAX];
    for (int32_t i = 0; i < state->replica_count; i++) {
        int32_t id = state->replicas[i];
        bool candidate = list_contains(elr->elr, elr->elr_count, id) ||
                         list_contains(old_isr, old_isr_count, id);
        if (candidate && !list_contains(state->isr, state->isr_count, id) &&
            id != unclean_shutdown) {
            next[count++] = id;
        }
    }
    qsort(next, (size_t)count, sizeof next[0], compare_ids);
    memcpy(elr->elr, next, sizeof(int32_t) * (size_t)count);
    elr->elr_count = count;
}

/* PartitionChangeBuilder.maybeUpdateLastKnownLeader for a change of the ISR:
 * the change that empties it remembers the leader before it. (A leaderless
 * partition whose ISR empties keeps its LastKnownElr: Kafka would store -1.) */
static void last_known_leader_after_isr_change(struct cpart *part, int32_t leader_before)
{
    struct ks_partition_elr *elr = &part->elr;
    if (part->state.isr_count == 0 && leader_before >= 0) {
        elr->last_known_elr[0] = leader_before;
        elr->last_known_elr_count = 1;
    } else if (part->state.leader >= 0) {
        elr->last_known_elr_count = 0;
    }
}

static void check_elr(const struct ks_controller *controller, const struct cpart *part)
{
    const struct ks_partition_state *state = &part->state;
    const struct ks_partition_elr *elr = &part->elr;
    if (!elr_enabled(controller)) {
        ks_assert(elr->elr_count == 0); /* C4 */
        ks_assert(elr->last_known_elr_count == 0);
        return;
    }
    ks_assert(elr->elr_count >= 0 && elr->elr_count <= state->replica_count);
    for (int32_t i = 0; i < elr->elr_count; i++) {
        ks_assert(list_contains(state->replicas, state->replica_count, elr->elr[i])); /* C4 */
        ks_assert(!list_contains(state->isr, state->isr_count, elr->elr[i]));
        if (i > 0) {
            ks_assert(elr->elr[i - 1] < elr->elr[i]);
        }
    }
    ks_assert(elr->last_known_elr_count == 0 || elr->last_known_elr_count == 1);
    if (elr->last_known_elr_count == 1) {
        ks_assert(list_contains(state->replicas, state->replica_count, elr->last_known_elr[0]));
        ks_assert(state->leader < 0); /* C4 */
    }
}

/* ---- pushing state to brokers --------------------------------------------- */

/* The state pushes carry: the working copy with one controller, the
 * committed copy with a quorum. */
struct push_view {
    struct cpart *const *parts;
    const struct cbroker *brokers;             /* one controller */
    const struct broker_persisted *registered; /* a quorum */
    int64_t version;
};

static struct push_view live_view(const struct ks_controller *controller)
{
    return (struct push_view){ controller->parts, controller->brokers, NULL, controller->version };
}

static struct push_view committed_view(const struct ks_controller *controller)
{
    return (struct push_view){ controller->quorum->committed_parts, NULL,
                               controller->quorum->committed_brokers,
                               controller->quorum->committed_version };
}

static bool view_registered(const struct push_view *view, int32_t index)
{
    return view->brokers != NULL ? view->brokers[index].registered
                                 : view->registered[index].registered != 0;
}

static int64_t view_broker_epoch(const struct push_view *view, int32_t index)
{
    return view->brokers != NULL ? view->brokers[index].broker_epoch
                                 : view->registered[index].broker_epoch;
}

static bool view_active(const struct push_view *view, int32_t index)
{
    if (view->brokers != NULL) {
        return broker_active(&view->brokers[index]);
    }
    const struct broker_persisted *broker = &view->registered[index];
    return broker->registered && !broker->fenced && !broker->in_controlled_shutdown;
}

static void push_view_to(struct ks_controller *controller, const struct push_view *view,
                         int32_t broker_id, int64_t since_version)
{
    if (!view_registered(view, broker_id - 1)) {
        return;
    }
    int32_t count = 0;
    for (int32_t t = 0; t < controller->topic_count; t++) {
        for (int32_t p = 0; p < controller->topics[t].partition_count; p++) {
            if (view->parts[t][p].changed_version > since_version) {
                count++;
            }
        }
    }
    size_t head = ks_proto_push_bytes(controller->broker_count);
    size_t bytes = head + (size_t)count * sizeof(struct ks_partition_state);
    uint8_t *message = calloc(1, bytes);
    ks_assert(message != NULL);
    struct ks_partition_state_push push;
    memset(&push, 0, sizeof push);
    push.broker_epoch = view_broker_epoch(view, broker_id - 1);
    push.metadata_version = view->version;
    push.partition_count = count;
    push.broker_count = controller->broker_count;
    int32_t slots = ks_proto_broker_slots(controller->broker_count);
    for (int32_t i = 0; i < slots; i++) {
        bool known = i < controller->broker_count && view_registered(view, i);
        push.broker_alive[i] = (uint8_t)(known && view_active(view, i));
        push.broker_epochs[i] = known ? view_broker_epoch(view, i) : -1;
    }
    ks_proto_push_encode(&push, message);
    struct ks_partition_state *entries = (struct ks_partition_state *)(message + head);
    int32_t index = 0;
    for (int32_t t = 0; t < controller->topic_count; t++) {
        for (int32_t p = 0; p < controller->topics[t].partition_count; p++) {
            if (view->parts[t][p].changed_version > since_version) {
                entries[index++] = view->parts[t][p].state;
            }
        }
    }
    ks_world_send(controller->world, controller->node, (ks_node_id)broker_id,
                  KS_MSG_PARTITION_STATE, message, bytes);
    free(message);
}

static void quorum_replicate(struct ks_controller *controller);

static void push_to(struct ks_controller *controller, int32_t broker_id, int64_t since_version)
{
    struct push_view view =
        controller->quorum != NULL ? committed_view(controller) : live_view(controller);
    push_view_to(controller, &view, broker_id, since_version);
}

/* With a quorum the changes go to the log first; brokers get them when they
 * are committed (quorum_on_high_watermark). */
static void push_all(struct ks_controller *controller)
{
    if (controller->quorum != NULL) {
        quorum_replicate(controller);
        return;
    }
    for (int32_t id = 1; id <= controller->broker_count; id++) {
        push_to(controller, id, controller->brokers[id - 1].acked_version);
    }
}

/* Sends a response; with a quorum, once this event's records are committed. */
static void respond(struct ks_controller *controller, ks_node_id target, uint32_t kind,
                    const void *message, size_t message_bytes)
{
    if (controller->quorum == NULL) {
        ks_world_send(controller->world, controller->node, target, kind, message, message_bytes);
        return;
    }
    struct pending_response pending;
    memset(&pending, 0, sizeof pending);
    ks_assert(message_bytes <= sizeof pending.message);
    pending.required_offset = -1;
    pending.target = target;
    pending.kind = kind;
    pending.message_bytes = message_bytes;
    memcpy(pending.message, message, message_bytes);
    g_array_append_val(controller->quorum->pending, pending);
}

/* Keeps imbalanced_count in step with the partition's leader. */
static void set_imbalanced(struct ks_controller *controller, struct cpart *part)
{
    bool imbalanced = part->state.leader != part->state.replicas[0];
    if (imbalanced != part->imbalanced) {
        controller->imbalanced_count += imbalanced ? 1 : -1;
        part->imbalanced = imbalanced;
    }
}

/* Records that a partition changed (a new version). */
static void touch(struct ks_controller *controller, struct cpart *part)
{
    check_partition(&part->state, elr_enabled(controller));
    /* C3: the leader epoch never goes back, and nothing but touch() moves the
     * partition epoch (PartitionChangeBuilder bumps it once per change). */
    ks_assert(part->state.leader_epoch >= part->leader_epoch_touched);
    ks_assert(part->state.partition_epoch == part->partition_epoch_touched);
    ks_assert(part->state.partition_epoch < INT32_MAX);
    part->state.partition_epoch++;
    part->leader_epoch_touched = part->state.leader_epoch;
    part->partition_epoch_touched = part->state.partition_epoch;
    part->changed_version = ++controller->version;
    set_imbalanced(controller, part);
}

/* ---- elections ------------------------------------------------------------ */

/* Elects a leader for a partition whose leader is gone or invalid; emits the
 * event. Returns true if the partition changed. `why` names the cause. */
static bool elect_partition(struct ks_controller *controller, int32_t topic_index,
                            int32_t partition, enum ks_event_reason why)
{
    struct cpart *part = &controller->parts[topic_index][partition];
    struct ks_partition_state *state = &part->state;
    bool alive[KS_BROKER_COUNT_MAX];
    alive_array(controller, alive);
    enum ks_elected_from from = KS_ELECTED_FROM_NONE;
    int32_t old_leader = state->leader;
    int32_t leader = ks_controller_elect_eligible(state, &part->elr, alive,
                                                  topic_unclean(controller, topic_index), &from);
    if (leader == old_leader) {
        return false;
    }
    struct ks_partition_state before = *state;
    struct ks_partition_elr elr_before = part->elr;
    state->leader = leader;
    state->leader_epoch++;
    enum ks_cluster_event_kind kind = KS_EV_LEADER_ELECTED;
    switch (from) {
    case KS_ELECTED_FROM_ISR: break;
    case KS_ELECTED_FROM_ELR:
        /* tryElection: a leader from the ELR is the new ISR and leaves the ELR. */
        state->isr[0] = leader;
        state->isr_count = 1;
        remove_id(part->elr.elr, &part->elr.elr_count, leader);
        break;
    case KS_ELECTED_FROM_LAST_KNOWN_LEADER:
    case KS_ELECTED_FROM_ANY_REPLICA:
        /* An unclean election sets the ISR to the leader (which can lose
         * committed records) and maybeUpdateRecordElr clears the ELR. */
        state->isr[0] = leader;
        state->isr_count = 1;
        part->elr.elr_count = 0;
        kind = KS_EV_UNCLEAN_ELECTION;
        break;
    case KS_ELECTED_FROM_NONE: kind = KS_EV_NO_LEADER; break;
    }
    if (leader >= 0) {
        part->elr.last_known_elr_count = 0; /* maybeUpdateLastKnownLeader */
    }
    touch(controller, part);
    struct ks_cluster_event event =
        partition_event(controller, kind, leader < 0 ? -1 : leader, state, &before);
    event.reason = why;
    event.elected_from = from;
    add_elr_facts(&event, &elr_before, &part->elr);
    emit(controller, &event);
    return true;
}

/* ReplicationControlManager.handleBrokerUncleanShutdown (KIP-966), for a
 * broker that registers a new incarnation: it leaves every ISR and ELR
 * (PartitionChangeBuilder's uncleanShutdownReplicas), and partitions without
 * a leader try an election without it. Only with ELR: without it the broker
 * is already out of every ISR but where it is the last member, which
 * Kafka keeps, so the change would change nothing. */
static void unclean_shutdown(struct ks_controller *controller, int32_t broker_id)
{
    for (int32_t t = 0; t < controller->topic_count; t++) {
        for (int32_t p = 0; p < controller->topics[t].partition_count; p++) {
            struct cpart *part = &controller->parts[t][p];
            struct ks_partition_state *state = &part->state;
            bool in_isr = list_contains(state->isr, state->isr_count, broker_id);
            if (!in_isr && !list_contains(part->elr.elr, part->elr.elr_count, broker_id)) {
                continue;
            }
            struct ks_partition_state before = *state;
            struct ks_partition_elr elr_before = part->elr;
            remove_id(state->isr, &state->isr_count, broker_id);
            elr_after_isr_change(controller, part, before.isr, before.isr_count, broker_id);
            if (in_isr) {
                last_known_leader_after_isr_change(part, before.leader);
            }
            struct ks_cluster_event event =
                partition_event(controller, in_isr ? KS_EV_ISR_SHRINK : KS_EV_ELR_CHANGE, broker_id,
                                state, &before);
            event.reason = KS_REASON_UNCLEAN_SHUTDOWN;
            add_elr_facts(&event, &elr_before, &part->elr);
            emit(controller, &event);
            if (state->leader == broker_id || state->leader < 0) {
                if (!elect_partition(controller, t, p, KS_REASON_UNCLEAN_SHUTDOWN)) {
                    touch(controller, part);
                }
            } else {
                touch(controller, part);
            }
        }
    }
}

/* KRaft generateLeaderAndIsrUpdates with brokerToRemove: with out_of_isr the
 * broker leaves every ISR it is in (but where it is the last member, KRaft
 * without ELR), and every partition it leads elects again without it, which
 * the caller has made not alive (fenced, or in controlled shutdown). */
static void remove_from_partitions(struct ks_controller *controller, int32_t broker_id,
                                   bool out_of_isr, enum ks_event_reason shrink_why,
                                   enum ks_event_reason elect_why)
{
    for (int32_t t = 0; t < controller->topic_count; t++) {
        for (int32_t p = 0; p < controller->topics[t].partition_count; p++) {
            struct cpart *part = &controller->parts[t][p];
            struct ks_partition_state *state = &part->state;
            bool changed = false;
            /* Without ELR the last ISR member stays (PartitionChangeBuilder.build
             * writes an empty ISR only with ELR enabled). */
            if (out_of_isr && (state->isr_count > 1 || elr_enabled(controller)) &&
                list_contains(state->isr, state->isr_count, broker_id)) {
                struct ks_partition_state before = *state;
                struct ks_partition_elr elr_before = part->elr;
                remove_id(state->isr, &state->isr_count, broker_id);
                if (elr_enabled(controller)) {
                    elr_after_isr_change(controller, part, before.isr, before.isr_count, -1);
                    last_known_leader_after_isr_change(part, before.leader);
                }
                changed = true;
                struct ks_cluster_event shrink =
                    partition_event(controller, KS_EV_ISR_SHRINK, broker_id, state, &before);
                shrink.reason = shrink_why;
                add_elr_facts(&shrink, &elr_before, &part->elr);
                emit(controller, &shrink);
            }
            if (state->leader == broker_id) {
                if (!elect_partition(controller, t, p, elect_why)) {
                    touch(controller, part);
                }
            } else if (changed) {
                touch(controller, part);
            }
        }
    }
}

static void fence_broker(struct ks_controller *controller, int32_t broker_id,
                         enum ks_event_reason why, bool remove_from_isr)
{
    struct cbroker *broker = &controller->brokers[broker_id - 1];
    if (broker->fenced) {
        return;
    }
    broker->fenced = true;
    broker->in_controlled_shutdown = false; /* a fenced broker is no longer shutting down */
    controller->version++;
    struct ks_cluster_event event = event_new(controller, KS_EV_BROKER_FENCED, broker_id, -1, -1);
    event.reason = why;
    emit(controller, &event);
    /* KRaft handleBrokerFenced: shrink ISRs, then re-elect. A restarted
     * broker registering fenced (remove_from_isr false) keeps its ISR
     * memberships; leadership still moves off it. */
    remove_from_partitions(controller, broker_id, remove_from_isr,
                           why == KS_REASON_CONTROLLED_SHUTDOWN ? KS_REASON_CONTROLLED_SHUTDOWN
                                                                : KS_REASON_BROKER_FENCED,
                           why);
}

static void unfence_broker(struct ks_controller *controller, int32_t broker_id)
{
    struct cbroker *broker = &controller->brokers[broker_id - 1];
    if (!broker->fenced) {
        return;
    }
    broker->fenced = false;
    controller->version++;
    struct ks_cluster_event event = event_new(controller, KS_EV_BROKER_UNFENCED, broker_id, -1, -1);
    emit(controller, &event);
    /* KRaft handleBrokerUnfenced: leaderless partitions may now elect. */
    for (int32_t t = 0; t < controller->topic_count; t++) {
        for (int32_t p = 0; p < controller->topics[t].partition_count; p++) {
            struct ks_partition_state *state = &controller->parts[t][p].state;
            if (state->leader < 0 &&
                list_contains(state->replicas, state->replica_count, broker_id)) {
                elect_partition(controller, t, p, KS_REASON_REPLICA_BACK);
            }
        }
    }
}

/* ---- timers ---------------------------------------------------------------- */

static void session_check(ks_world *world, void *context);
static void maybe_schedule_balance(struct ks_controller *controller);

static void arm_session_check(struct ks_controller *controller)
{
    ks_time_ns now = ks_world_now_ns(controller->world);
    ks_time_ns next = KS_TIME_NEVER;
    ks_time_ns timeout = (ks_time_ns)controller->spec->cluster->broker_session_timeout_ns;
    for (int32_t i = 0; i < controller->broker_count; i++) {
        const struct cbroker *broker = &controller->brokers[i];
        if (broker->registered && !broker->fenced) {
            ks_time_ns deadline = broker->last_heartbeat_ns + timeout + 1;
            if (deadline < next) {
                next = deadline;
            }
        }
    }
    ks_world_cancel(controller->world, controller->session_timer);
    controller->session_timer = 0;
    if (next == KS_TIME_NEVER) {
        return;
    }
    controller->session_timer =
        ks_world_schedule(controller->world, controller->node, next > now ? next - now : 0,
                          KS_TIMER_CONTROLLER_SESSION_CHECK, session_check, controller);
}

static void session_check(ks_world *world, void *context)
{
    struct ks_controller *controller = context;
    controller->session_timer = 0;
    ks_time_ns now = ks_world_now_ns(world);
    ks_time_ns timeout = (ks_time_ns)controller->spec->cluster->broker_session_timeout_ns;
    bool changed = false;
    for (int32_t i = 0; i < controller->broker_count; i++) {
        struct cbroker *broker = &controller->brokers[i];
        if (broker->registered && !broker->fenced && now > broker->last_heartbeat_ns + timeout) {
            fence_broker(controller, i + 1, KS_REASON_SESSION_EXPIRED, true);
            changed = true;
        }
    }
    if (changed) {
        push_all(controller);
    }
    arm_session_check(controller);
    maybe_schedule_balance(controller);
#ifdef KS_DEBUG
    ks_controller_check(controller);
#endif
}

static void balance_check(ks_world *world, void *context);

/* QuorumController.maybeScheduleNextBalancePartitionLeaders: run after every
 * controller event. */
static void maybe_schedule_balance(struct ks_controller *controller)
{
    const struct ks_cluster_config *cluster = controller->spec->cluster;
    if (controller->balance_schedule == BALANCE_SCHEDULED ||
        !cluster->auto_leader_rebalance_enable ||
        cluster->leader_imbalance_check_interval_ns <= 0 || controller->imbalanced_count == 0) {
        return;
    }
    ks_time_ns delay = controller->balance_schedule == BALANCE_DEFERRED
                           ? (ks_time_ns)cluster->leader_imbalance_check_interval_ns
                           : BALANCE_IMMEDIATE_DELAY_NS;
    controller->balance_timer =
        ks_world_schedule(controller->world, controller->node, delay, KS_TIMER_CONTROLLER_REBALANCE,
                          balance_check, controller);
    controller->balance_schedule = BALANCE_SCHEDULED;
}

/* ReplicationControlManager.maybeBalancePartitionLeaders: a preferred
 * election (PartitionChangeBuilder, Election.PREFERRED) for each partition
 * whose preferred replica is unfenced and in the ISR, at most
 * MAX_ELECTIONS_PER_IMBALANCE of them. */
static void balance_check(ks_world *world, void *context)
{
    (void)world;
    struct ks_controller *controller = context;
    ks_assert(controller->balance_schedule == BALANCE_SCHEDULED);
    controller->balance_timer = 0;
    bool alive[KS_BROKER_COUNT_MAX];
    alive_array(controller, alive);
    int32_t elections = 0;
    for (int32_t t = 0; t < controller->topic_count && elections < MAX_ELECTIONS_PER_IMBALANCE;
         t++) {
        for (int32_t p = 0;
             p < controller->topics[t].partition_count && elections < MAX_ELECTIONS_PER_IMBALANCE;
             p++) {
            struct cpart *part = &controller->parts[t][p];
            struct ks_partition_state *state = &part->state;
            int32_t preferred = state->replicas[0];
            if (!part->imbalanced || !alive[preferred - 1] ||
                !list_contains(state->isr, state->isr_count, preferred)) {
                continue;
            }
            struct ks_partition_state before = *state;
            state->leader = preferred;
            state->leader_epoch++;
            touch(controller, part);
            elections++;
            struct ks_cluster_event event =
                partition_event(controller, KS_EV_LEADER_ELECTED, preferred, state, &before);
            event.reason = KS_REASON_PREFERRED_LEADER;
            emit(controller, &event);
        }
    }
    controller->balance_schedule =
        elections >= MAX_ELECTIONS_PER_IMBALANCE ? BALANCE_IMMEDIATELY : BALANCE_DEFERRED;
    if (elections > 0) {
        push_all(controller);
    }
    maybe_schedule_balance(controller);
#ifdef KS_DEBUG
    ks_controller_check(controller);
#endif
}

/* ---- controlled shutdown --------------------------------------------------- */

/* BrokersToIsrs.hasLeaderships. */
static bool has_leaderships(const struct ks_controller *controller, int32_t broker_id)
{
    for (int32_t t = 0; t < controller->topic_count; t++) {
        for (int32_t p = 0; p < controller->topics[t].partition_count; p++) {
            if (controller->parts[t][p].state.leader == broker_id) {
                return true;
            }
        }
    }
    return false;
}

/* BrokerHeartbeatManager.lowestActiveOffset: the lowest metadata version an
 * active broker (unfenced, not shutting down) reported in a heartbeat;
 * INT64_MAX when there is none. */
static int64_t lowest_active_version(const struct ks_controller *controller)
{
    int64_t lowest = INT64_MAX;
    for (int32_t i = 0; i < controller->broker_count; i++) {
        const struct cbroker *broker = &controller->brokers[i];
        if (broker_active(broker) && broker->acked_version < lowest) {
            lowest = broker->acked_version;
        }
    }
    return lowest;
}

/* A heartbeat with WantShutDown: BrokerHeartbeatManager.calculateNextBrokerState
 * and the records ReplicationControlManager.processBrokerHeartbeat writes.
 *   FENCED -> SHUTDOWN_NOW (handleBrokerFenced: out of the ISRs it is in)
 *   UNFENCED, leads nothing -> SHUTDOWN_NOW (fenced, out of every ISR)
 *   UNFENCED, leads -> CONTROLLED_SHUTDOWN (handleBrokerInControlledShutdown:
 *     no longer active, out of every ISR, its partitions elect without it)
 *   CONTROLLED_SHUTDOWN -> SHUTDOWN_NOW once it leads nothing and every
 *     active broker has reported the version those moves reached (so the new
 *     leaders know before the old one goes); else it stays
 * Returns whether the broker may shut down now (ShouldShutDown); sets
 * *changed when a partition or a broker's state changed. */
static bool controlled_shutdown(struct ks_controller *controller, int32_t broker_id, bool *changed)
{
    struct cbroker *broker = &controller->brokers[broker_id - 1];
    if (broker->fenced) {
        remove_from_partitions(controller, broker_id, true, KS_REASON_CONTROLLED_SHUTDOWN,
                               KS_REASON_CONTROLLED_SHUTDOWN);
        *changed = true;
        return true;
    }
    if (!broker->in_controlled_shutdown) {
        if (!has_leaderships(controller, broker_id)) {
            fence_broker(controller, broker_id, KS_REASON_CONTROLLED_SHUTDOWN, true);
            *changed = true;
            return true;
        }
        broker->in_controlled_shutdown = true;
        controller->version++;
        remove_from_partitions(controller, broker_id, true, KS_REASON_CONTROLLED_SHUTDOWN,
                               KS_REASON_CONTROLLED_SHUTDOWN);
        broker->controlled_shutdown_version = controller->version;
        *changed = true;
        return false;
    }
    if (has_leaderships(controller, broker_id) ||
        broker->controlled_shutdown_version > lowest_active_version(controller)) {
        return false;
    }
    fence_broker(controller, broker_id, KS_REASON_CONTROLLED_SHUTDOWN, true);
    *changed = true;
    return true;
}

/* ---- messages -------------------------------------------------------------- */

static void on_heartbeat(struct ks_controller *controller, ks_node_id source,
                         const struct ks_broker_heartbeat_request *request)
{
    int32_t id = request->broker_id; /* on_receive asserted it is the sender's, in range */
    struct cbroker *broker = &controller->brokers[id - 1];
    ks_time_ns now = ks_world_now_ns(controller->world);
    struct ks_broker_heartbeat_response response;
    memset(&response, 0, sizeof response);
    response.broker_epoch = request->broker_epoch;
    response.correlation_id = request->correlation_id;
    bool changed = false;
    if (!broker->registered || request->broker_epoch != broker->broker_epoch) {
        ks_time_ns timeout = (ks_time_ns)controller->spec->cluster->broker_session_timeout_ns;
        bool kraft = controller->spec->cluster->truncation == KS_TRUNCATION_LEADER_EPOCH;
        if (kraft && broker->registered && !broker->fenced &&
            now <= broker->last_heartbeat_ns + timeout) {
            /* ClusterControlManager: the old incarnation's session is valid. */
            if (broker->refused_epoch != request->broker_epoch) {
                broker->refused_epoch = request->broker_epoch;
                struct ks_cluster_event event = event_new(controller, KS_EV_INFO, id, -1, -1);
                event.reason = KS_REASON_REGISTRATION_REFUSED;
                emit(controller, &event);
            }
            response.error_code = KS_ERR_DUPLICATE_BROKER_REGISTRATION;
            response.fenced = 1;
            response.correlation_id = request->correlation_id;
            response.metadata_version = controller->version;
            respond(controller, source, KS_MSG_BROKER_HEARTBEAT_RESPONSE, &response,
                    sizeof response);
            return;
        }
        /* A new incarnation registers fenced; leadership moves off it. */
        broker->registered = true;
        broker->broker_epoch = request->broker_epoch;
        broker->in_controlled_shutdown = false;
        fence_broker(controller, id, KS_REASON_BROKER_RESTARTED, false);
        /* Every new incarnation, clean stop or not: ClusterControlManager.
         * registerBroker compares incarnation ids, not the PreviousBrokerEpoch
         * KIP-966 adds to the request (the controller does not read it). */
        if (elr_enabled(controller)) {
            unclean_shutdown(controller, id);
        }
        broker->catch_up_version = controller->version;
        changed = true;
    }
    broker->last_heartbeat_ns = now;
    broker->acked_version = request->metadata_version;
    /* BrokerHeartbeatManager.calculateNextBrokerState: a fenced broker that
     * no longer wants to be fenced is unfenced once it has applied the
     * metadata up to its registration (registerBrokerRecordOffset), so a
     * broker fenced only because it was cut off is unfenced by the first
     * heartbeat that gets through. A broker asking to shut down goes into
     * controlled shutdown instead (ksim's brokers never ask to be fenced
     * again while unfenced). */
    bool caught_up = request->metadata_version >= broker->catch_up_version;
    if (request->want_shutdown) {
        response.should_shut_down = controlled_shutdown(controller, id, &changed) ? 1 : 0;
    } else if (broker->fenced && !request->want_fence && caught_up) {
        unfence_broker(controller, id);
        changed = true;
    }
    response.metadata_version = controller->version;
    response.fenced = broker->fenced ? 1 : 0;
    response.caught_up = caught_up ? 1 : 0;
    respond(controller, source, KS_MSG_BROKER_HEARTBEAT_RESPONSE, &response, sizeof response);
    if (changed) {
        push_all(controller);
    } else if (request->metadata_version < controller->version) {
        push_to(controller, id, request->metadata_version);
    }
    arm_session_check(controller);
}

/* ReplicationControlManager.ineligibleReplicasForIsr: every member of a new
 * ISR, old or new, must be registered, unfenced, not in controlled shutdown
 * and, unless the leader sent -1, of the broker epoch the leader saw in its
 * fetches (KIP-903). */
static bool isr_eligible(const struct ks_controller *controller,
                         const struct ks_alter_partition_request *request)
{
    for (int32_t i = 0; i < request->isr_count; i++) {
        const struct cbroker *member = &controller->brokers[request->isr[i] - 1];
        int64_t epoch = request->isr_broker_epochs[i];
        if (!broker_active(member) || (epoch != -1 && epoch != member->broker_epoch)) {
            return false;
        }
    }
    return true;
}

/* Replicas.validateIsr: members are replicas of the partition, each once;
 * and the leader is one of them. */
static bool isr_valid(const struct ks_partition_state *state,
                      const struct ks_alter_partition_request *request)
{
    for (int32_t i = 0; i < request->isr_count; i++) {
        int32_t id = request->isr[i];
        if (!list_contains(state->replicas, state->replica_count, id) ||
            list_contains(request->isr, i, id)) {
            return false;
        }
    }
    return request->isr_count >= 1 &&
           list_contains(request->isr, request->isr_count, state->leader);
}

/* The checks of ReplicationControlManager.alterPartition, in its order:
 * the sender's broker epoch (ClusterControlManager.checkBrokerEpoch), then
 * validateAlterPartitionData. */
static int16_t validate_alter(const struct ks_controller *controller,
                              const struct ks_alter_partition_request *request)
{
    const struct cbroker *sender = &controller->brokers[request->broker_id - 1];
    if (!sender->registered || sender->broker_epoch != request->broker_epoch) {
        return KS_ERR_STALE_BROKER_EPOCH;
    }
    if (request->topic_index < 0 || request->topic_index >= controller->topic_count ||
        request->partition < 0 ||
        request->partition >= controller->topics[request->topic_index].partition_count) {
        return KS_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    const struct ks_partition_state *state =
        &controller->parts[request->topic_index][request->partition].state;
    if (request->leader_epoch > state->leader_epoch ||
        request->partition_epoch > state->partition_epoch) {
        return KS_ERR_NOT_CONTROLLER; /* epochs from a newer controller than this one */
    }
    if (request->leader_epoch < state->leader_epoch) {
        return KS_ERR_FENCED_LEADER_EPOCH;
    }
    if (request->broker_id != state->leader) {
        return KS_ERR_INVALID_REQUEST;
    }
    if (request->partition_epoch < state->partition_epoch) {
        return KS_ERR_INVALID_UPDATE_VERSION;
    }
    if (!isr_valid(state, request)) {
        return KS_ERR_INVALID_REQUEST;
    }
    if (!isr_eligible(controller, request)) {
        return KS_ERR_INELIGIBLE_REPLICA;
    }
    return KS_ERR_NONE;
}

static bool same_members(const int32_t *a, int32_t a_count, const int32_t *b, int32_t b_count)
{
    if (a_count != b_count) {
        return false;
    }
    for (int32_t i = 0; i < a_count; i++) {
        if (!list_contains(b, b_count, a[i])) {
            return false;
        }
    }
    return true;
}

static void on_alter_partition(struct ks_controller *controller, ks_node_id source,
                               const struct ks_alter_partition_request *request)
{
    struct ks_alter_partition_response response;
    memset(&response, 0, sizeof response);
    response.topic_index = request->topic_index;
    response.partition = request->partition;
    response.error_code = validate_alter(controller, request);
    if (response.error_code != KS_ERR_NONE) {
        /* Kafka answers an error with no partition state: the leader keeps
         * what it has and waits for metadata (or retries). */
        response.leader = -1;
        response.leader_epoch = -1;
        response.partition_epoch = -1;
        respond(controller, source, KS_MSG_ALTER_PARTITION_RESPONSE, &response, sizeof response);
        return;
    }
    struct cpart *part = &controller->parts[request->topic_index][request->partition];
    struct ks_partition_state *state = &part->state;
    /* PartitionChangeBuilder writes no record when nothing changes: the
     * answer then carries the unchanged partition epoch. */
    bool changed = !same_members(request->isr, request->isr_count, state->isr, state->isr_count);
    if (changed) {
        bool grows = request->isr_count > state->isr_count;
        struct ks_partition_state before = *state;
        struct ks_partition_elr elr_before = part->elr;
        state->isr_count = request->isr_count;
        memcpy(state->isr, request->isr, sizeof(int32_t) * (size_t)request->isr_count);
        if (elr_enabled(controller)) {
            /* ReplicationControlManager.alterPartition builds the change with ELR. */
            elr_after_isr_change(controller, part, before.isr, before.isr_count, -1);
            last_known_leader_after_isr_change(part, before.leader);
        }
        touch(controller, part);
        struct ks_cluster_event event = partition_event(
            controller, grows ? KS_EV_ISR_EXPAND : KS_EV_ISR_SHRINK, state->leader, state, &before);
        event.reason = grows ? KS_REASON_FOLLOWER_CAUGHT_UP : KS_REASON_FOLLOWER_LAGGING;
        add_elr_facts(&event, &elr_before, &part->elr);
        emit(controller, &event);
    }
    response.leader = state->leader;
    response.leader_epoch = state->leader_epoch;
    response.partition_epoch = state->partition_epoch;
    response.isr_count = state->isr_count;
    memcpy(response.isr, state->isr, sizeof response.isr);
    respond(controller, source, KS_MSG_ALTER_PARTITION_RESPONSE, &response, sizeof response);
    if (changed) {
        push_all(controller);
    }
}

/* ---- the quorum's side (see the block at struct quorum) ---------------------- */

static int32_t active_controller_hint(const struct ks_controller *controller)
{
    int32_t leader = ks_raft_leader(controller->quorum->raft);
    return leader > 0 ? leader : 0;
}

/* QuorumController.handleEventException / the request path of a controller
 * that is not active: NOT_CONTROLLER, with the leader Raft knows. */
static void answer_not_controller(struct ks_controller *controller, ks_node_id source,
                                  uint32_t kind, const void *message, size_t message_bytes)
{
    if (kind == KS_MSG_BROKER_HEARTBEAT_REQUEST) {
        struct ks_broker_heartbeat_request request;
        ks_assert(message_bytes == sizeof request);
        memcpy(&request, message, sizeof request);
        struct ks_broker_heartbeat_response response;
        memset(&response, 0, sizeof response);
        response.broker_epoch = request.broker_epoch;
        response.correlation_id = request.correlation_id;
        response.error_code = KS_ERR_NOT_CONTROLLER;
        response.fenced = 1;
        response.controller_hint = active_controller_hint(controller);
        ks_world_send(controller->world, controller->node, source, KS_MSG_BROKER_HEARTBEAT_RESPONSE,
                      &response, sizeof response);
        return;
    }
    if (kind == KS_MSG_ALTER_PARTITION_REQUEST) {
        struct ks_alter_partition_request request;
        ks_assert(message_bytes == sizeof request);
        memcpy(&request, message, sizeof request);
        struct ks_alter_partition_response response;
        memset(&response, 0, sizeof response);
        response.topic_index = request.topic_index;
        response.partition = request.partition;
        response.error_code = KS_ERR_NOT_CONTROLLER;
        response.leader = -1;
        response.leader_epoch = -1;
        response.partition_epoch = -1;
        ks_world_send(controller->world, controller->node, source, KS_MSG_ALTER_PARTITION_RESPONSE,
                      &response, sizeof response);
        return;
    }
    ks_assert(!"unexpected message kind at the controller");
}

static struct broker_persisted persisted_of(const struct cbroker *broker)
{
    struct broker_persisted out;
    memset(&out, 0, sizeof out);
    out.broker_epoch = broker->broker_epoch;
    out.catch_up_version = broker->catch_up_version;
    out.refused_epoch = broker->refused_epoch;
    out.controlled_shutdown_version = broker->controlled_shutdown_version;
    out.registered = broker->registered ? 1 : 0;
    out.fenced = broker->fenced ? 1 : 0;
    out.in_controlled_shutdown = broker->in_controlled_shutdown ? 1 : 0;
    return out;
}

static void restore_persisted(struct cbroker *broker, const struct broker_persisted *from)
{
    broker->broker_epoch = from->broker_epoch;
    broker->catch_up_version = from->catch_up_version;
    broker->refused_epoch = from->refused_epoch;
    broker->controlled_shutdown_version = from->controlled_shutdown_version;
    broker->registered = from->registered != 0;
    broker->fenced = from->fenced != 0;
    broker->in_controlled_shutdown = from->in_controlled_shutdown != 0;
}

#define PARTITION_RECORD_KEY "PartitionRecord"
#define BROKER_RECORD_KEY    "BrokerRecord"

/* The working copy's changes since the last call become records. */
static void quorum_replicate(struct ks_controller *controller)
{
    struct quorum *quorum = controller->quorum;
    if (!quorum->active) {
        return;
    }
    for (int32_t t = 0; t < controller->topic_count; t++) {
        for (int32_t p = 0; p < controller->topics[t].partition_count; p++) {
            const struct cpart *part = &controller->parts[t][p];
            if (part->changed_version <= quorum->logged_version) {
                continue;
            }
            struct partition_record record;
            memset(&record, 0, sizeof record);
            record.version = controller->version;
            record.changed_version = part->changed_version;
            record.state = part->state;
            record.elr = part->elr;
            ks_assert(ks_raft_append(quorum->raft, PARTITION_RECORD_KEY, &record,
                                     (int32_t)sizeof record) >= 0);
        }
    }
    int32_t appended = 0;
    for (int32_t t = 0; t < controller->topic_count; t++) {
        for (int32_t p = 0; p < controller->topics[t].partition_count; p++) {
            appended += controller->parts[t][p].changed_version > quorum->logged_version ? 1 : 0;
        }
    }
    for (int32_t i = 0; i < controller->broker_count; i++) {
        struct broker_persisted now = persisted_of(&controller->brokers[i]);
        /* A version that moved without any change still gets a record, so
         * that the committed version reaches the working one. */
        bool only_version = appended == 0 && i == controller->broker_count - 1 &&
                            controller->version != quorum->logged_version;
        if (memcmp(&now, &quorum->logged_brokers[i], sizeof now) == 0 && !only_version) {
            continue;
        }
        appended++;
        struct broker_record record;
        memset(&record, 0, sizeof record);
        record.version = controller->version;
        record.broker_id = i + 1;
        record.registration = now;
        ks_assert(
            ks_raft_append(quorum->raft, BROKER_RECORD_KEY, &record, (int32_t)sizeof record) >= 0);
        quorum->logged_brokers[i] = now;
    }
    quorum->logged_version = controller->version;
}

static void quorum_send_ready(struct ks_controller *controller)
{
    struct quorum *quorum = controller->quorum;
    int64_t hw = ks_raft_hw(quorum->raft);
    guint sent = 0;
    while (sent < quorum->pending->len) {
        struct pending_response *pending =
            &g_array_index(quorum->pending, struct pending_response, sent);
        if (pending->required_offset < 0 || pending->required_offset > hw) {
            break;
        }
        ks_world_send(controller->world, controller->node, pending->target, pending->kind,
                      pending->message, pending->message_bytes);
        sent++;
    }
    g_array_remove_range(quorum->pending, 0, sent);
}

static void quorum_finish_event(struct ks_controller *controller)
{
    struct quorum *quorum = controller->quorum;
    quorum_replicate(controller);
    int64_t leo = ks_raft_leo(quorum->raft);
    for (guint i = 0; i < quorum->pending->len; i++) {
        struct pending_response *pending =
            &g_array_index(quorum->pending, struct pending_response, i);
        if (pending->required_offset < 0) {
            pending->required_offset = leo;
        }
    }
    quorum_send_ready(controller);
}

/* The working copy becomes the committed one (activation). */
static void quorum_load_working_copy(struct ks_controller *controller)
{
    struct quorum *quorum = controller->quorum;
    controller->imbalanced_count = 0;
    for (int32_t t = 0; t < controller->topic_count; t++) {
        for (int32_t p = 0; p < controller->topics[t].partition_count; p++) {
            struct cpart *part = &controller->parts[t][p];
            const struct cpart *committed = &quorum->committed_parts[t][p];
            part->state = committed->state;
            part->elr = committed->elr;
            part->changed_version = committed->changed_version;
            part->leader_epoch_touched = committed->state.leader_epoch;
            part->partition_epoch_touched = committed->state.partition_epoch;
            part->imbalanced = false;
            set_imbalanced(controller, part);
        }
    }
    ks_time_ns now = ks_world_now_ns(controller->world);
    for (int32_t i = 0; i < controller->broker_count; i++) {
        struct cbroker *broker = &controller->brokers[i];
        restore_persisted(broker, &quorum->committed_brokers[i]);
        broker->last_heartbeat_ns = now;
        broker->acked_version = -1;
        quorum->logged_brokers[i] = quorum->committed_brokers[i];
    }
    controller->version = quorum->committed_version;
    quorum->logged_version = controller->version;
}

static void quorum_activate(struct ks_controller *controller)
{
    struct quorum *quorum = controller->quorum;
    quorum_load_working_copy(controller);
    quorum->active = true;
    struct ks_cluster_event event = event_new(controller, KS_EV_CONTROLLER_ELECTED, -1, -1, -1);
    event.controller_id = quorum->index + 1;
    event.controller_epoch = ks_raft_epoch(quorum->raft);
    emit(controller, &event);
    /* Brokers learn the new leader from the metadata log (they are its
     * observers in Kafka): here from this first push of the committed state. */
    for (int32_t id = 1; id <= controller->broker_count; id++) {
        push_to(controller, id, -1);
    }
    controller->session_timer = 0;
    arm_session_check(controller);
    controller->balance_timer = 0;
    controller->balance_schedule = BALANCE_DEFERRED;
    maybe_schedule_balance(controller);
}

static void quorum_renounce(struct ks_controller *controller, bool emit_event)
{
    struct quorum *quorum = controller->quorum;
    if (!quorum->active) {
        return;
    }
    quorum->active = false;
    ks_world_cancel(controller->world, controller->session_timer);
    controller->session_timer = 0;
    ks_world_cancel(controller->world, controller->balance_timer);
    controller->balance_timer = 0;
    controller->balance_schedule = BALANCE_DEFERRED;
    g_array_set_size(quorum->pending, 0);
    if (emit_event) {
        struct ks_cluster_event event =
            event_new(controller, KS_EV_CONTROLLER_RESIGNED, -1, -1, -1);
        event.controller_id = quorum->index + 1;
        event.controller_epoch = ks_raft_epoch(quorum->raft);
        emit(controller, &event);
    }
}

static void quorum_on_commit(void *context, int64_t offset, const uint8_t *value,
                             int32_t value_bytes)
{
    (void)offset;
    struct ks_controller *controller = context;
    struct quorum *quorum = controller->quorum;
    if (value_bytes == (int32_t)sizeof(struct partition_record)) {
        struct partition_record record;
        memcpy(&record, value, sizeof record);
        int32_t t = record.state.topic_index;
        int32_t p = record.state.partition;
        ks_assert(t >= 0 && t < controller->topic_count && p >= 0 &&
                  p < controller->topics[t].partition_count);
        struct cpart *part = &quorum->committed_parts[t][p];
        /* Committed epochs only grow (C3 across failovers). */
        ks_assert(record.state.leader_epoch >= part->state.leader_epoch);
        ks_assert(record.state.partition_epoch > part->state.partition_epoch);
        part->state = record.state;
        part->elr = record.elr;
        part->changed_version = record.changed_version;
        if (record.version > quorum->committed_version) {
            quorum->committed_version = record.version;
        }
        return;
    }
    ks_assert(value_bytes == (int32_t)sizeof(struct broker_record));
    struct broker_record record;
    memcpy(&record, value, sizeof record);
    ks_assert(record.broker_id >= 1 && record.broker_id <= controller->broker_count);
    quorum->committed_brokers[record.broker_id - 1] = record.registration;
    if (record.version > quorum->committed_version) {
        quorum->committed_version = record.version;
    }
}

static void quorum_on_high_watermark(void *context, int64_t hw)
{
    (void)hw;
    struct ks_controller *controller = context;
    struct quorum *quorum = controller->quorum;
    if (!quorum->active) {
        if (ks_raft_leader_ready(quorum->raft)) {
            quorum_activate(controller);
        }
        return;
    }
    quorum_send_ready(controller);
    /* The committed copy moved: brokers get what they have not seen. */
    for (int32_t id = 1; id <= controller->broker_count; id++) {
        push_to(controller, id, controller->brokers[id - 1].acked_version);
    }
}

static void quorum_after_event(void *context)
{
    struct ks_controller *controller = context;
#ifdef KS_DEBUG
    ks_controller_check(controller);
    if (controller->quorum->checker != NULL) {
        ks_raft_quorum_check(controller->quorum->checker, controller->quorum->peers,
                             controller->quorum->peer_count);
    }
#else
    (void)controller;
#endif
}

void ks_controller_set_quorum_check(struct ks_controller *controller, struct ks_raft *const *peers,
                                    int32_t peer_count, struct ks_raft_quorum_checker *checker)
{
    ks_assert(controller->quorum != NULL);
    controller->quorum->peers = peers;
    controller->quorum->peer_count = peer_count;
    controller->quorum->checker = checker;
}

static void quorum_on_state(void *context, enum ks_raft_role role, int32_t epoch, int32_t leader_id)
{
    (void)epoch;
    (void)leader_id;
    struct ks_controller *controller = context;
    if (role != KS_RAFT_LEADER) {
        quorum_renounce(controller, true);
    }
}

/* Only brokers talk to the controller, and only with these two requests, each
 * sent whole by core/broker.c and never altered by the network (it delays and
 * drops, it does not corrupt). A wrong size, a broker id that is not the
 * sender's or out of range, an ISR longer than any replica list, or another
 * kind is a bug in ksim, so it asserts instead of being dropped. */
static void check_sender(const struct ks_controller *controller, int32_t broker_id,
                         ks_node_id source)
{
    ks_assert(broker_id >= 1 && broker_id <= controller->broker_count);
    ks_assert((ks_node_id)broker_id == source);
}

static void on_receive(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                       const void *message, size_t message_bytes, void *context)
{
    (void)world;
    (void)self;
    struct ks_controller *controller = context;
    if (controller->quorum != NULL) {
        if (ks_raft_receive(controller->quorum->raft, source, kind, message, message_bytes)) {
            return;
        }
        if (!controller->quorum->active) {
            answer_not_controller(controller, source, kind, message, message_bytes);
            return;
        }
    }
    switch (kind) {
    case KS_MSG_BROKER_HEARTBEAT_REQUEST: {
        struct ks_broker_heartbeat_request request;
        ks_assert(message_bytes == sizeof request);
        memcpy(&request, message, sizeof request);
        check_sender(controller, request.broker_id, source);
        on_heartbeat(controller, source, &request);
        break;
    }
    case KS_MSG_ALTER_PARTITION_REQUEST: {
        struct ks_alter_partition_request request;
        ks_assert(message_bytes == sizeof request);
        memcpy(&request, message, sizeof request);
        check_sender(controller, request.broker_id, source);
        ks_assert(request.isr_count >= 0 && request.isr_count <= KS_REPLICATION_FACTOR_MAX);
        on_alter_partition(controller, source, &request);
        break;
    }
    default: ks_assert(!"unexpected message kind at the controller");
    }
    /* Every request is a controller write event (QuorumController), after
     * which the balance check may be scheduled. */
    maybe_schedule_balance(controller);
    if (controller->quorum != NULL) {
        quorum_finish_event(controller);
    }
#ifdef KS_DEBUG
    ks_controller_check(controller);
#endif
}

/* ---- whole-object check ------------------------------------------------------- */

static void check_broker_list(const struct ks_controller *controller, const int32_t *list,
                              int32_t count)
{
    for (int32_t i = 0; i < count; i++) {
        ks_assert(list[i] >= 1 && list[i] <= controller->broker_count);
        for (int32_t j = 0; j < i; j++) {
            ks_assert(list[j] != list[i]); /* a broker appears once */
        }
    }
}

void ks_controller_check(const struct ks_controller *controller)
{
    if (controller->quorum != NULL) {
        ks_raft_check(controller->quorum->raft);
        if (!controller->quorum->active) {
            return; /* a standby's working copy is not in use */
        }
        ks_assert(controller->version >= controller->quorum->committed_version);
    }
    ks_assert(controller->broker_count >= 1 && controller->broker_count <= KS_BROKER_COUNT_MAX);
    bool any_session = false;
    for (int32_t i = 0; i < controller->broker_count; i++) {
        const struct cbroker *broker = &controller->brokers[i];
        /* Versions a broker acknowledges or must reach were handed out here. */
        ks_assert(broker->acked_version <= controller->version);
        ks_assert(broker->catch_up_version <= controller->version);
        if (broker->in_controlled_shutdown) {
            ks_assert(broker->registered && !broker->fenced); /* C4 */
        }
        any_session = any_session || (broker->registered && !broker->fenced);
    }
    /* arm_session_check after every change: a live session always expires. */
    if (any_session) {
        ks_assert(controller->session_timer != 0);
    }
    /* The balance timer is armed exactly while a check is scheduled. */
    ks_assert((controller->balance_schedule == BALANCE_SCHEDULED) ==
              (controller->balance_timer != 0));
    int32_t imbalanced = 0;
    for (int32_t t = 0; t < controller->topic_count; t++) {
        for (int32_t p = 0; p < controller->topics[t].partition_count; p++) {
            const struct cpart *part = &controller->parts[t][p];
            const struct ks_partition_state *state = &part->state;
            ks_assert(state->topic_index == t);
            ks_assert(state->partition == p);
            ks_assert(state->replica_count == controller->topics[t].replication_factor);
            check_broker_list(controller, state->replicas, state->replica_count);
            check_broker_list(controller, state->isr, state->isr_count);
            for (int32_t i = 0; i < state->isr_count; i++) {
                ks_assert(list_contains(state->replicas, state->replica_count, state->isr[i]));
            }
            check_partition(state, elr_enabled(controller)); /* C1, C2 */
            check_elr(controller, part);                     /* C4 */
            for (int32_t i = 0; i < state->isr_count; i++) {
                if (controller->brokers[state->isr[i] - 1].in_controlled_shutdown) {
                    ks_assert(state->isr_count == 1); /* C5 */
                }
            }
            if (state->leader >= 0) {
                ks_assert(!controller->brokers[state->leader - 1].in_controlled_shutdown); /* C5 */
            }
            if (state->leader >= 0) {
                const struct cbroker *leader = &controller->brokers[state->leader - 1];
                ks_assert(leader->registered); /* C1 */
                ks_assert(!leader->fenced);    /* C1 */
            }
            ks_assert(state->leader_epoch == part->leader_epoch_touched);       /* C3 */
            ks_assert(state->partition_epoch == part->partition_epoch_touched); /* C3 */
            ks_assert(part->changed_version <= controller->version);
            ks_assert(part->imbalanced == (state->leader != state->replicas[0]));
            imbalanced += part->imbalanced;
        }
    }
    ks_assert(imbalanced == controller->imbalanced_count);
}

/* ---- life cycle ------------------------------------------------------------ */

struct ks_controller *ks_controller_new(ks_world *world, const struct ks_cluster_spec *spec,
                                        const struct ks_topic_config *topics, int32_t topic_count,
                                        ks_node_id node, const struct ks_cluster_observer *observer)
{
    struct ks_controller *controller = calloc(1, sizeof *controller);
    ks_assert(controller != NULL);
    controller->world = world;
    controller->spec = spec;
    controller->topics = topics;
    controller->topic_count = topic_count;
    controller->node = node;
    controller->observer = observer;
    controller->broker_count = spec->cluster->broker_count;
    ks_assert(controller->broker_count >= 1 && controller->broker_count <= KS_BROKER_COUNT_MAX);
    controller->parts = calloc((size_t)(topic_count > 0 ? topic_count : 1), sizeof(struct cpart *));
    ks_assert(controller->parts != NULL);
    for (int32_t t = 0; t < topic_count; t++) {
        controller->parts[t] = calloc((size_t)topics[t].partition_count, sizeof(struct cpart));
        ks_assert(controller->parts[t] != NULL);
    }
    /* Brokers start registered and unfenced with epoch 1 (the cluster is
     * assumed formed before topics are created); session clocks start now. */
    for (int32_t i = 0; i < controller->broker_count; i++) {
        controller->brokers[i].registered = true;
        controller->brokers[i].broker_epoch = 1;
        controller->brokers[i].acked_version = -1;
    }
    return controller;
}

void ks_controller_free(struct ks_controller *controller)
{
    if (controller == NULL) {
        return;
    }
    for (int32_t t = 0; t < controller->topic_count; t++) {
        free(controller->parts[t]);
    }
    free(controller->parts);
    if (controller->quorum != NULL) {
        struct quorum *quorum = controller->quorum;
        ks_raft_free(quorum->raft);
        for (int32_t t = 0; t < controller->topic_count; t++) {
            free(quorum->committed_parts[t]);
            free(quorum->boot_parts[t]);
        }
        free(quorum->committed_parts);
        free(quorum->boot_parts);
        g_array_free(quorum->pending, true);
        free(quorum);
    }
    free(controller);
}

static void create_topic(struct ks_controller *controller, int32_t topic_index);

static struct cpart **parts_new(const struct ks_controller *controller)
{
    struct cpart **parts =
        calloc((size_t)(controller->topic_count > 0 ? controller->topic_count : 1),
               sizeof(struct cpart *));
    ks_assert(parts != NULL);
    for (int32_t t = 0; t < controller->topic_count; t++) {
        parts[t] = calloc((size_t)controller->topics[t].partition_count, sizeof(struct cpart));
        ks_assert(parts[t] != NULL);
    }
    return parts;
}

static void parts_copy(const struct ks_controller *controller, struct cpart **to,
                       struct cpart *const *from)
{
    for (int32_t t = 0; t < controller->topic_count; t++) {
        memcpy(to[t], from[t],
               sizeof(struct cpart) * (size_t)controller->topics[t].partition_count);
    }
}

struct ks_controller *ks_controller_new_voter(ks_world *world, const struct ks_cluster_spec *spec,
                                              const struct ks_topic_config *topics,
                                              int32_t topic_count, int32_t index,
                                              const ks_node_id *voters, int32_t voter_count,
                                              const struct ks_raft_config *raft_config,
                                              const struct ks_cluster_observer *observer)
{
    ks_assert(index >= 0 && index < voter_count);
    struct ks_controller *controller =
        ks_controller_new(world, spec, topics, topic_count, voters[index], observer);
    struct quorum *quorum = calloc(1, sizeof *quorum);
    ks_assert(quorum != NULL);
    controller->quorum = quorum;
    quorum->index = index;
    quorum->committed_parts = parts_new(controller);
    quorum->boot_parts = parts_new(controller);
    quorum->pending = g_array_new(false, true, sizeof(struct pending_response));
    char dir[64];
    snprintf(dir, sizeof dir, "controller-%d/__cluster_metadata-0", index + 1);
    struct ks_raft_listener listener = {
        .on_state = quorum_on_state,
        .on_commit = quorum_on_commit,
        .on_high_watermark = quorum_on_high_watermark,
        .after_event = quorum_after_event,
        .context = controller,
    };
    quorum->raft =
        ks_raft_new(world, voters[index], voters, voter_count, raft_config, dir, &listener);
    return controller;
}

/* The bootstrap state becomes the committed copy (start, restart). */
static void quorum_load_boot(struct ks_controller *controller)
{
    struct quorum *quorum = controller->quorum;
    parts_copy(controller, quorum->committed_parts, quorum->boot_parts);
    memcpy(quorum->committed_brokers, quorum->boot_brokers, sizeof quorum->boot_brokers);
    quorum->committed_version = quorum->boot_version;
}

void ks_controller_start_voter(struct ks_controller *controller,
                               const struct ks_controller *bootstrap)
{
    struct quorum *quorum = controller->quorum;
    ks_assert(quorum != NULL);
    ks_world_set_receiver(controller->world, controller->node, on_receive, controller);
    if (bootstrap == NULL) {
        /* The first controller computes the bootstrap state and hands it to
         * the brokers, as if formatted into every node. */
        for (int32_t t = 0; t < controller->topic_count; t++) {
            create_topic(controller, t);
        }
        parts_copy(controller, quorum->boot_parts, controller->parts);
        for (int32_t i = 0; i < controller->broker_count; i++) {
            quorum->boot_brokers[i] = persisted_of(&controller->brokers[i]);
        }
        quorum->boot_version = controller->version;
    } else {
        ks_assert(bootstrap->quorum != NULL);
        parts_copy(controller, quorum->boot_parts, bootstrap->quorum->boot_parts);
        memcpy(quorum->boot_brokers, bootstrap->quorum->boot_brokers, sizeof quorum->boot_brokers);
        quorum->boot_version = bootstrap->quorum->boot_version;
    }
    quorum_load_boot(controller);
    if (bootstrap == NULL) {
        for (int32_t id = 1; id <= controller->broker_count; id++) {
            push_to(controller, id, -1);
        }
    }
    ks_raft_start(quorum->raft);
}

/* Replica placement draws from KS_RNG_CLUSTER. */
static uint64_t placement_random_below(void *context, uint64_t bound)
{
    return ks_world_random_below(context, KS_RNG_CLUSTER, bound);
}

/* The placer of the controller being modelled (core/placement.h): KRaft's
 * QuorumController creates every topic through ReplicationControlManager,
 * whose ClusterControlManager holds a StripedReplicaPlacer, with racks or
 * without. The ZooKeeper-era controller (core/zk.c, create_topic) places
 * with AdminUtils.assignReplicasToBrokers (ks_placement_admin_utils); both
 * go through ks_placement_assign_topic. */
static ks_placer_fn *placer_for(const struct ks_controller *controller)
{
    (void)controller;
    return ks_placement_striped;
}

static void create_topic(struct ks_controller *controller, int32_t topic_index)
{
    const struct ks_topic_config *topic = &controller->topics[topic_index];
    int32_t rf = topic->replication_factor;
    ks_assert(rf >= 1 && rf <= controller->broker_count && rf <= KS_REPLICATION_FACTOR_MAX);
    bool fenced[KS_BROKER_COUNT_MAX];
    for (int32_t i = 0; i < controller->broker_count; i++) {
        fenced[i] = !controller->brokers[i].registered || controller->brokers[i].fenced;
    }
    int32_t(*assignment)[KS_REPLICATION_FACTOR_MAX] =
        ks_placement_assign_topic(topic, placer_for(controller),
                                  (struct ks_placement){
                                      .broker_count = controller->broker_count,
                                      .racks = controller->spec->cluster->racks,
                                      .fenced = fenced,
                                      .random_below = placement_random_below,
                                      .random_context = controller->world,
                                  });
    for (int32_t p = 0; p < topic->partition_count; p++) {
        struct cpart *part = &controller->parts[topic_index][p];
        struct ks_partition_state *state = &part->state;
        state->topic_index = topic_index;
        state->partition = p;
        state->replica_count = rf;
        for (int32_t j = 0; j < rf; j++) {
            int32_t id = assignment[p][j];
            ks_assert(id >= 1 && id <= controller->broker_count);
            state->replicas[j] = id;
            state->isr[j] = id;
        }
        state->isr_count = rf;
        state->leader = state->replicas[0];
        state->leader_epoch = 0;
        state->partition_epoch = 0;
        check_partition(state, elr_enabled(controller));
        part->leader_epoch_touched = 0; /* C3: the epochs every later touch() grows from */
        part->partition_epoch_touched = 0;
        part->changed_version = ++controller->version;
        struct ks_cluster_event event =
            partition_event(controller, KS_EV_TOPIC_CREATED, state->leader, state, NULL);
        emit(controller, &event);
    }
    free(assignment);
}

void ks_controller_start(struct ks_controller *controller)
{
    ks_world_set_receiver(controller->world, controller->node, on_receive, controller);
    for (int32_t t = 0; t < controller->topic_count; t++) {
        create_topic(controller, t);
    }
    push_all(controller);
    arm_session_check(controller);
    maybe_schedule_balance(controller);
#ifdef KS_DEBUG
    ks_controller_check(controller);
#endif
}

void ks_controller_start_after_restart(struct ks_controller *controller)
{
    ks_world_set_receiver(controller->world, controller->node, on_receive, controller);
    if (controller->quorum != NULL) {
        /* Memory is gone: the committed copy is rebuilt from the log as the
         * high watermark is learned again; timers were dropped. */
        controller->session_timer = 0;
        controller->balance_timer = 0;
        quorum_renounce(controller, false);
        quorum_load_boot(controller);
        ks_raft_start(controller->quorum->raft);
        return;
    }
    ks_time_ns now = ks_world_now_ns(controller->world);
    for (int32_t i = 0; i < controller->broker_count; i++) {
        controller->brokers[i].last_heartbeat_ns = now;
    }
    controller->session_timer = 0;
    arm_session_check(controller);
    /* QuorumController.renounce cancels the balance check and a newly active
     * controller schedules it afresh (processBatchEndOffset of its
     * activation): an interval from now. */
    controller->balance_timer = 0;
    controller->balance_schedule = BALANCE_DEFERRED;
    maybe_schedule_balance(controller);
#ifdef KS_DEBUG
    ks_controller_check(controller);
#endif
}

/* ---- queries ---------------------------------------------------------------- */

const struct ks_partition_state *ks_controller_partition(const struct ks_controller *controller,
                                                         int32_t topic_index, int32_t partition)
{
    if (topic_index < 0 || topic_index >= controller->topic_count || partition < 0 ||
        partition >= controller->topics[topic_index].partition_count) {
        return NULL;
    }
    if (controller->quorum != NULL && !controller->quorum->active) {
        return &controller->quorum->committed_parts[topic_index][partition].state;
    }
    return &controller->parts[topic_index][partition].state;
}

const struct ks_partition_elr *ks_controller_partition_elr(const struct ks_controller *controller,
                                                           int32_t topic_index, int32_t partition)
{
    if (topic_index < 0 || topic_index >= controller->topic_count || partition < 0 ||
        partition >= controller->topics[topic_index].partition_count) {
        return NULL;
    }
    if (controller->quorum != NULL && !controller->quorum->active) {
        return &controller->quorum->committed_parts[topic_index][partition].elr;
    }
    return &controller->parts[topic_index][partition].elr;
}

bool ks_controller_broker_fenced(const struct ks_controller *controller, int32_t broker_id)
{
    if (broker_id < 1 || broker_id > controller->broker_count) {
        return true;
    }
    if (controller->quorum != NULL && !controller->quorum->active) {
        return controller->quorum->committed_brokers[broker_id - 1].fenced != 0;
    }
    return controller->brokers[broker_id - 1].fenced;
}

int64_t ks_controller_metadata_version(const struct ks_controller *controller)
{
    if (controller->quorum != NULL && !controller->quorum->active) {
        return controller->quorum->committed_version;
    }
    return controller->version;
}

bool ks_controller_is_active(const struct ks_controller *controller)
{
    return controller->quorum == NULL || controller->quorum->active;
}

struct ks_raft *ks_controller_raft(const struct ks_controller *controller)
{
    return controller->quorum != NULL ? controller->quorum->raft : NULL;
}
