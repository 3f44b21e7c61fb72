/*
** sim/narrate.c: the timeline line and the --explain text of every model
** event (sim/narrate.h), from the event's typed fields and the scenario.
**
** Each kind of event has one function below; reason_phrase holds every
** short "why" in one switch over enum ks_event_reason, so a new reason
** cannot go unnarrated without a compiler warning. Texts are built in
** GStrings: nothing is cut, whatever the lengths of names and lists.
**
** What the prose may rely on (core/cluster.h documents each kind's fields):
** the event, the scenario's configs (a producer's acks, a consumer's name
** and group, replication.truncation, the min-ISR rule), and topic names.
** Nothing here reads the model's current state: an event describes the
** moment it happened.
*/
#include "narrate.h"

#include "../core/assignor.h"
#include "../core/proto.h"

#include <inttypes.h>

#define OFFSETS_TOPIC "__consumer_offsets"

/* ---- small helpers ------------------------------------------------------------ */

/* The cluster's topics are the spec's, then __consumer_offsets when there
 * are consumers (core/cluster.h). */
static const char *topic_name(const struct ks_cluster_spec *spec, int32_t topic_index)
{
    if (topic_index >= 0 && topic_index < spec->topic_count) {
        return spec->topics[topic_index].name;
    }
    if (topic_index == spec->topic_count && spec->consumer_count > 0) {
        return OFFSETS_TOPIC;
    }
    if (topic_index == spec->topic_count + (spec->consumer_count > 0 ? 1 : 0) &&
        ks_cluster_spec_has_txn(spec)) {
        return "__transaction_state";
    }
    return "?";
}

/* "1,2,3" in the given order, or "(none)". */
static void append_ids(GString *out, const int32_t *ids, int32_t count)
{
    if (count == 0) {
        g_string_append(out, "(none)");
        return;
    }
    for (int32_t i = 0; i < count; i++) {
        g_string_append_printf(out, i > 0 ? ",%d" : "%d", ids[i]);
    }
}

/* The ids as a NUL-terminated string owned by the caller's scratch GString. */
static const char *ids_text(GString *scratch, const int32_t *ids, int32_t count)
{
    g_string_truncate(scratch, 0);
    append_ids(scratch, ids, count);
    return scratch->str;
}

/* The short cause of an event, as the timeline writes it in parentheses;
 * NULL for reasons that are narrated by their own sentences. For member
 * causes it is the verb phrase after "member <id>". */
static const char *reason_phrase(enum ks_event_reason reason)
{
    switch (reason) {
    case KS_REASON_SESSION_EXPIRED: return "no heartbeat within broker.session.timeout.ms";
    case KS_REASON_BROKER_RESTARTED: return "restarted: new incarnation registers fenced";
    case KS_REASON_REPLICA_BACK: return "a replica came back";
    case KS_REASON_PREFERRED_LEADER: return "preferred leader";
    case KS_REASON_UNCLEAN_SHUTDOWN: return "restarted: a new incarnation leaves the ISR and ELR";
    case KS_REASON_TRUNCATE_TO_HIGH_WATERMARK: return "its high watermark";
    case KS_REASON_TRUNCATE_NO_COMMON_EPOCH:
        return "no common leader epoch: to the leader's end offset";
    case KS_REASON_TRUNCATE_TO_LEADER_LEO: return "leader's log end offset";
    case KS_REASON_TRUNCATE_REALIGN_BATCH: return "realign with the leader's batch";
    case KS_REASON_RETRIES_EXHAUSTED: return " (retries exhausted)";
    case KS_REASON_ERROR_AFTER_DELIVERY_TIMEOUT: return " (delivery.timeout.ms passed)";
    case KS_REASON_ERROR_NOT_RETRIABLE: return " (not retriable)";
    case KS_REASON_DELIVERY_TIMEOUT: return "delivery.timeout.ms passed";
    case KS_REASON_DELIVERY_TIMEOUT_IN_FLIGHT: return "delivery.timeout.ms passed while in flight";
    case KS_REASON_BUFFER_FULL_MAX_BLOCK: return "buffer.memory full for max.block.ms";
    case KS_REASON_NO_METADATA_MAX_BLOCK: return "no metadata within max.block.ms";
    case KS_REASON_PRODUCER_CRASHED: return "producer crashed";
    case KS_REASON_RECORD_TOO_LARGE:
        return "MESSAGE_TOO_LARGE: larger than max.request.size or buffer.memory";
    case KS_REASON_CONNECTION_BROKER_DOWN: return "broker down";
    case KS_REASON_CONNECTION_TIMEOUT: return "no answer within request.timeout.ms";
    case KS_REASON_CONNECTION_SETUP_TIMEOUT:
        return "not set up within socket.connection.setup.timeout.ms";
    case KS_REASON_CONNECTION_REFUSED: return "connection refused";
    case KS_REASON_MEMBER_JOINED: return "joined";
    case KS_REASON_MEMBER_SESSION_TIMEOUT: return "session timed out";
    case KS_REASON_MEMBER_NOT_REJOINED: return "did not rejoin in time";
    case KS_REASON_MEMBER_LEFT: return "left";
    case KS_REASON_GROUP_APPEND_FAILED: return "group metadata append failed";
    case KS_REASON_CONTROLLER_DOWN: return "controller down: no active controller";
    case KS_REASON_CONTROLLER_BACK: return "controller back: active again, broker sessions restart";
    case KS_REASON_ZNODE_DELETED: return "its ZooKeeper session expired";
    case KS_REASON_CONTROLLED_SHUTDOWN: return "controlled shutdown";
    case KS_REASON_SHUTDOWN_REQUESTED: return "asks for a controlled shutdown";
    case KS_REASON_SHUTDOWN_TIMED_OUT: return "no answer from the controller in time";
    case KS_REASON_SHUTDOWN_NOT_CONTROLLED: return "without a controlled shutdown";
    case KS_REASON_SHUTDOWN_ATTEMPTS_FAILED: return "every controlled shutdown attempt failed";
    case KS_REASON_NONE:
    case KS_REASON_FOLLOWER_CAUGHT_UP:
    case KS_REASON_FOLLOWER_LAGGING:
    case KS_REASON_BROKER_FENCED:
    case KS_REASON_TRUNCATE_DIVERGING_EPOCH:
    case KS_REASON_NOT_ENOUGH_REPLICAS:
    case KS_REASON_TXN_NOT_VERIFIED:
    case KS_REASON_TXN_PREPARE_COMMIT:
    case KS_REASON_TXN_PREPARE_ABORT:
    case KS_REASON_TXN_COMPLETE_COMMIT:
    case KS_REASON_TXN_COMPLETE_ABORT:
    case KS_REASON_TXN_LOADED:
    case KS_REASON_NO_COMMITTED_OFFSET:
    case KS_REASON_OFFSET_OUT_OF_RANGE:
    case KS_REASON_REWIND:
    case KS_REASON_NO_COMMITTED_OFFSET_NONE:
    case KS_REASON_OFFSET_OUT_OF_RANGE_NONE:
    case KS_REASON_REGISTRATION_REFUSED:
    case KS_REASON_SINK_FENCED:
    case KS_REASON_POLL_INTERVAL_EXCEEDED:
    case KS_REASON_ZK_NODE_EXISTS:
    case KS_REASON_ZK_BAD_VERSION:
    case KS_REASON_ZK_NO_SESSION:
    case KS_REASON_INVALID_SESSION_TIMEOUT:
    case KS_REASON_LOG_TRUNCATION:
    case KS_REASON_LOG_TRUNCATION_NONE:
    case KS_REASON_TXN_COMMITTED:
    case KS_REASON_TXN_ABORTED:
    case KS_REASON_TXN_FENCED:
    case KS_REASON_TXN_ABANDONED:
    case KS_REASON_COUNT: break;
    }
    return NULL;
}

static const char *phrase(enum ks_event_reason reason)
{
    const char *text = reason_phrase(reason);
    return text != NULL ? text : "?";
}

/* True if a producer of the topic does not wait for the ISR (acks=1 or 0). */
static bool weak_acks_on_topic(const struct ks_cluster_spec *spec, int32_t topic_index)
{
    for (int32_t i = 0; i < spec->producer_count; i++) {
        const struct ks_producer_config *producer = &spec->producers[i];
        if (producer->topic_index == topic_index && producer->acks != KS_ACKS_ALL) {
            return true;
        }
    }
    return false;
}

/* What an ISR of isr_count replicas means for acks=all writes. */
static void append_min_isr_consequence(const struct ks_cluster_spec *spec, GString *out,
                                       int32_t isr_count, int32_t min_isr)
{
    if (isr_count < min_isr) {
        g_string_append_printf(out,
                               "The ISR is now smaller than min.insync.replicas (%d), so "
                               "acks=all writes are refused until it grows back%s.",
                               min_isr,
                               spec->cluster->hw_requires_min_isr
                                   ? ", and the high watermark stops advancing (Kafka 3.7+, "
                                     "KAFKA-15583)"
                                   : "");
    } else {
        g_string_append_printf(out,
                               "It still meets min.insync.replicas (%d), so acks=all writes "
                               "go on, committed on fewer copies.",
                               min_isr);
    }
}

/* ---- KIP-966: eligible leader replicas ------------------------------------------------ */

static bool ids_equal(const int32_t *a, int32_t a_count, const int32_t *b, int32_t b_count)
{
    if (a_count != b_count) {
        return false;
    }
    for (int32_t i = 0; i < a_count; i++) {
        if (a[i] != b[i]) {
            return false;
        }
    }
    return true;
}

/* True when the event carries ELR facts (only with eligible.leader.replicas.enable). */
static bool has_elr_facts(const struct ks_cluster_event *e)
{
    return e->elr_old_count > 0 || e->elr_new_count > 0 || e->last_known_leader >= 0;
}

/* " elr 2 -> 2,3 last known leader 3" for the timeline line, when there is
 * something to say. */
static void append_elr_detail(GString *detail, const struct ks_cluster_event *e)
{
    if (!has_elr_facts(e)) {
        return;
    }
    if (!ids_equal(e->elr_old, e->elr_old_count, e->elr_new, e->elr_new_count)) {
        g_string_append(detail, " elr ");
        append_ids(detail, e->elr_old, e->elr_old_count);
        g_string_append(detail, " -> ");
        append_ids(detail, e->elr_new, e->elr_new_count);
    } else if (e->elr_new_count > 0) {
        g_string_append(detail, " elr ");
        append_ids(detail, e->elr_new, e->elr_new_count);
    }
    if (e->last_known_leader >= 0) {
        g_string_append_printf(detail, " last known leader %d", e->last_known_leader);
    }
}

/* The sentences on how an ISR change moved the ELR (KIP-966), if it did. */
static void append_elr_explain(GString *explain, const struct ks_cluster_event *e)
{
    if (!has_elr_facts(e)) {
        return;
    }
    g_autoptr(GString) added = g_string_new(NULL);
    int32_t added_count = 0;
    for (int32_t i = 0; i < e->elr_new_count; i++) {
        bool was = false;
        for (int32_t j = 0; j < e->elr_old_count; j++) {
            was = was || e->elr_old[j] == e->elr_new[i];
        }
        if (!was) {
            g_string_append_printf(added, added_count > 0 ? ",%d" : "%d", e->elr_new[i]);
            added_count++;
        }
    }
    g_autoptr(GString) now = g_string_new(NULL);
    if (e->elr_new_count == 0) {
        g_string_append(now, "empty");
    } else {
        append_ids(now, e->elr_new, e->elr_new_count);
    }
    if (e->reason == KS_REASON_UNCLEAN_SHUTDOWN) {
        g_string_append_printf(explain,
                               " Broker %d registered a new incarnation, which the controller "
                               "takes as an unclean shutdown: it may have lost unflushed records, "
                               "so it leaves the ISR and the eligible leader replicas (ELR now "
                               "%s) and cannot be elected from them (KIP-966).",
                               e->broker, now->str);
    } else if (added_count > 0) {
        g_string_append_printf(
            explain,
            " %s %s %s the ISR while it is below min.insync.replicas (%d): the "
            "high watermark has not moved since the ISR fell below it, so "
            "unless %s unflushed records in a crash, %s every committed "
            "record, and the controller keeps %s as %s (ELR now %s; "
            "KIP-966).",
            added_count > 1 ? "Brokers" : "Broker", added->str,
            added_count > 1 ? "leave" : "leaves", e->isr_count_min,
            added_count > 1 ? "they lose" : "it loses", added_count > 1 ? "they hold" : "it holds",
            added_count > 1 ? "them" : "it",
            added_count > 1 ? "eligible leader replicas" : "an eligible leader replica", now->str);
    } else if (e->elr_new_count == 0 && e->elr_old_count > 0) {
        g_string_append_printf(explain,
                               " The ISR is back at min.insync.replicas (%d), so the controller "
                               "clears the eligible leader replicas: ISR members are again the "
                               "only candidates.",
                               e->isr_count_min);
    }
    if (e->isr_old_count > 0 && e->isr_new_count == 0 && e->last_known_leader >= 0) {
        g_string_append_printf(explain,
                               " The ISR is empty now. The controller remembers broker %d, the "
                               "leader when it emptied, as LastKnownElr: if the ISR and the ELR "
                               "are both empty when it is back, it is elected, uncleanly.",
                               e->last_known_leader);
    }
}

/* ---- controller: topics, elections, fencing, ISR ------------------------------------ */

static void narrate_topic_created(const struct ks_cluster_spec *spec,
                                  const struct ks_cluster_event *e, GString *detail,
                                  GString *explain)
{
    g_string_append_printf(detail, "%s-%d leader %d epoch %d replicas ",
                           topic_name(spec, e->topic_index), e->partition, e->leader_new,
                           e->leader_epoch_new);
    append_ids(detail, e->replicas, e->replica_count);
    g_string_append(detail, " isr ");
    append_ids(detail, e->isr_new, e->isr_new_count);
    g_string_append(explain, "The topic is created: every replica starts in the ISR and the "
                             "preferred replica (first in the assignment) becomes leader with "
                             "epoch 0.");
}

static void narrate_clean_election(const struct ks_cluster_spec *spec,
                                   const struct ks_cluster_event *e, GString *detail,
                                   GString *explain)
{
    const char *name = topic_name(spec, e->topic_index);
    g_autoptr(GString) isr = g_string_new(NULL);
    append_ids(isr, e->isr_new, e->isr_new_count);
    g_string_append_printf(detail, "%s-%d leader %d epoch %d isr %s (%s", name, e->partition,
                           e->leader_new, e->leader_epoch_new, isr->str, phrase(e->reason));
    if (e->reason == KS_REASON_CONTROLLED_SHUTDOWN) {
        g_string_append_printf(detail, " of broker %d", e->leader_old);
    }
    g_string_append_printf(detail, "%s)",
                           e->elected_from == KS_ELECTED_FROM_ELR ? "; from the ELR" : "");
    append_elr_detail(detail, e);
    if (e->elected_from == KS_ELECTED_FROM_ELR) {
        g_autoptr(GString) elr = g_string_new(NULL);
        if (e->elr_new_count == 0) {
            g_string_append(elr, "now empty");
        } else {
            append_ids(elr, e->elr_new, e->elr_new_count);
        }
        g_string_append_printf(explain,
                               "The ISR of %s-%d is empty, so the controller elects from its "
                               "eligible leader replicas (KIP-966): broker %d left the ISR while "
                               "it was below min.insync.replicas, when the high watermark could "
                               "not move, so it holds every committed record. It becomes leader "
                               "with epoch %d and the only ISR member (ELR: %s). A clean "
                               "election: nothing committed is lost, where the last replica "
                               "standing could have come back without its unflushed records.",
                               name, e->partition, e->leader_new, e->leader_epoch_new, elr->str);
        return;
    }
    if (e->reason == KS_REASON_CONTROLLED_SHUTDOWN) {
        g_string_append_printf(explain,
                               "Broker %d asked to shut down, so before it stops the controller "
                               "moves its leadership of %s-%d to broker %d, the first live "
                               "replica in assignment order that is in the ISR (%s), with leader "
                               "epoch %d. The old leader is still running and becomes a "
                               "follower: records it took that the new leader lacks were never "
                               "committed, and it truncates them%s",
                               e->leader_old, name, e->partition, e->leader_new, isr->str,
                               e->leader_epoch_new,
                               weak_acks_on_topic(spec, e->topic_index)
                                   ? " (an acks=1 or acks=0 producer may have been told they "
                                     "were written)."
                                   : "; no acks=all producer was told they were written.");
        return;
    }
    if (e->reason == KS_REASON_PREFERRED_LEADER) {
        g_string_append(explain, "auto.leader.rebalance.enable: the preferred replica (first in "
                                 "the assignment) is alive and in the ISR, so the controller "
                                 "moves leadership back to it to spread leaders evenly. It is a "
                                 "clean election: no data is lost.");
        return;
    }
    g_string_append_printf(explain,
                           "The controller elects broker %d, the first live replica of %s-%d in "
                           "assignment order that is in the ISR (%s), and bumps the leader epoch "
                           "to %d. ",
                           e->leader_new, name, e->partition, isr->str, e->leader_epoch_new);
    if (spec->cluster->truncation == KS_TRUNCATION_HIGH_WATERMARK) {
        g_string_append(explain,
                        "Being in the ISR does not prove it holds every committed record here: "
                        "under replication.truncation = high-watermark a replica that became a "
                        "follower again (after a restart, say) cut its log to its own high "
                        "watermark, which can lag the leader's, and may have dropped committed "
                        "records (KIP-101). The other replicas will truncate to its log.");
        return;
    }
    g_string_append_printf(explain,
                           "An ISR member has every committed record unless it lost unflushed "
                           "writes to a power failure. Barring that, records above its log end "
                           "that the old leader had were never committed, and the other replicas "
                           "will truncate them%s",
                           weak_acks_on_topic(spec, e->topic_index)
                               ? ": a producer with acks=1 or acks=0 may have been told they "
                                 "were written, but an acks=all producer was not."
                               : ", which no acks=all producer was told were written.");
}

static void narrate_unclean_election(const struct ks_cluster_spec *spec,
                                     const struct ks_cluster_event *e, GString *detail,
                                     GString *explain)
{
    const char *name = topic_name(spec, e->topic_index);
    g_autoptr(GString) old_isr = g_string_new(NULL);
    append_ids(old_isr, e->isr_old, e->isr_old_count);
    g_string_append_printf(detail, "%s-%d unclean leader %d epoch %d isr ", name, e->partition,
                           e->leader_new, e->leader_epoch_new);
    append_ids(detail, e->isr_new, e->isr_new_count);
    g_string_append_printf(
        detail, " (old isr %s; %s%s)", old_isr->str, phrase(e->reason),
        e->elected_from == KS_ELECTED_FROM_LAST_KNOWN_LEADER ? "; last known leader" : "");
    append_elr_detail(detail, e);
    if (e->elected_from == KS_ELECTED_FROM_LAST_KNOWN_LEADER) {
        g_string_append_printf(explain,
                               "The ISR and the eligible leader replicas of %s-%d are empty (every "
                               "ELR member came back from an unclean shutdown), so the controller "
                               "elects broker %d, the last known leader (KIP-966), whatever "
                               "unclean.leader.election.enable says: Kafka before 4.0 kept it as "
                               "the last ISR member and elected it the same way. It is counted as "
                               "an unclean election: if it lost unflushed records, the other "
                               "replicas will truncate to its log.",
                               name, e->partition, e->leader_new);
        return;
    }
    g_string_append_printf(explain,
                           "No replica of %s-%d in the ISR (%s) is available (registered, "
                           "unfenced), and unclean.leader.election.enable is true, so the "
                           "controller makes broker %d leader although it was not in sync. Every "
                           "record it lacks is gone, committed and acknowledged ones included: "
                           "the other replicas will truncate to its log when they come back.",
                           name, e->partition, old_isr->str, e->leader_new);
}

static void narrate_no_leader(const struct ks_cluster_spec *spec, const struct ks_cluster_event *e,
                              GString *detail, GString *explain)
{
    const char *name = topic_name(spec, e->topic_index);
    g_autoptr(GString) isr = g_string_new(NULL);
    append_ids(isr, e->isr_new, e->isr_new_count);
    g_string_append_printf(detail, "%s-%d no leader (isr %s; %s)", name, e->partition, isr->str,
                           phrase(e->reason));
    append_elr_detail(detail, e);
    if (has_elr_facts(e)) {
        g_autoptr(GString) elr = g_string_new(NULL);
        append_ids(elr, e->elr_new, e->elr_new_count);
        g_autofree char *isr_part =
            e->isr_new_count == 0 ? g_strdup("its ISR is empty")
                                  : g_strdup_printf("no member of its ISR (%s) is alive", isr->str);
        g_string_append_printf(explain,
                               "%s-%d: %s, no eligible leader replica (%s) is alive, and unclean "
                               "leader election is disabled, so it stays without a leader until "
                               "one of them is back (KIP-966: an ELR member first, then the last "
                               "known leader if both lists are empty).",
                               name, e->partition, isr_part, elr->str);
        return;
    }
    g_string_append_printf(explain,
                           "%s-%d has no live replica in its ISR (%s) and unclean leader "
                           "election is disabled, so it stays without a leader: producers and "
                           "consumers get LEADER_NOT_AVAILABLE / NOT_LEADER_OR_FOLLOWER until an "
                           "ISR member comes back. Availability is traded for not losing "
                           "committed records.",
                           name, e->partition, isr->str);
}

static void narrate_fenced(const struct ks_cluster_spec *spec, const struct ks_cluster_event *e,
                           GString *detail, GString *explain)
{
    (void)spec;
    g_string_append_printf(detail, "broker %d fenced (%s%s)", e->broker, phrase(e->reason),
                           e->reason == KS_REASON_CONTROLLED_SHUTDOWN ? ": it may stop now" : "");
    if (e->reason == KS_REASON_CONTROLLED_SHUTDOWN) {
        g_string_append_printf(explain,
                               "Broker %d leads nothing any more and every active broker has "
                               "seen the moves, so the controller lets it shut down "
                               "(ShouldShutDown) and fences it: it is out of every ISR (except "
                               "where it is the last member). Being fenced, it can register "
                               "again as soon as it restarts.",
                               e->broker);
        return;
    }
    if (e->reason == KS_REASON_BROKER_RESTARTED) {
        g_string_append_printf(explain,
                               "Broker %d registers a new incarnation after a restart, so the "
                               "controller fences it until it has caught up with the metadata "
                               "and replaces it as leader where it led. It keeps its ISR "
                               "memberships (as the ZooKeeper-era controller did on a quick "
                               "restart), so it can be elected again at once.",
                               e->broker);
        return;
    }
    g_string_append_printf(explain,
                           "The controller fences broker %d (%s): it is removed from every ISR "
                           "(%s) and replaced as leader where it led. It must heartbeat again and "
                           "catch up with the metadata to be unfenced.",
                           e->broker, phrase(e->reason),
                           spec->cluster->eligible_leader_replicas_enable
                               ? "the last member too: with Eligible Leader Replicas an ISR may "
                                 "become empty"
                               : "except where it is the last member");
}

static void narrate_isr_change(const struct ks_cluster_spec *spec, const struct ks_cluster_event *e,
                               GString *detail, GString *explain)
{
    const char *name = topic_name(spec, e->topic_index);
    g_autoptr(GString) scratch = g_string_new(NULL);
    g_autofree char *new_isr = g_strdup(ids_text(scratch, e->isr_new, e->isr_new_count));
    g_string_append_printf(detail, "%s-%d isr %s -> %s ", name, e->partition,
                           ids_text(scratch, e->isr_old, e->isr_old_count), new_isr);
    if (e->reason == KS_REASON_UNCLEAN_SHUTDOWN) {
        g_string_append_printf(detail, "(broker %d restarted)", e->broker);
        append_elr_detail(detail, e);
        append_elr_explain(explain, e);
        g_string_erase(explain, 0, explain->len > 0 && explain->str[0] == ' ' ? 1 : 0);
        return;
    }
    if (e->reason == KS_REASON_CONTROLLED_SHUTDOWN) {
        g_string_append_printf(detail, "(broker %d shutting down)", e->broker);
        append_elr_detail(detail, e);
        g_string_append_printf(explain,
                               "Broker %d asked to shut down, so the controller drops it from the "
                               "ISR of %s-%d, which becomes %s, before it stops: acks=all writes "
                               "stop waiting for it. ",
                               e->broker, name, e->partition,
                               e->isr_new_count == 0 ? "empty" : new_isr);
        append_min_isr_consequence(spec, explain, e->isr_new_count, e->isr_count_min);
        append_elr_explain(explain, e);
        return;
    }
    bool zookeeper = spec->cluster->controller_model == KS_CONTROLLER_MODEL_ZOOKEEPER;
    if (e->reason == KS_REASON_BROKER_FENCED && zookeeper) {
        g_string_append_printf(detail, "(broker %d gone from ZooKeeper)", e->broker);
        g_string_append_printf(explain,
                               "Broker %d's ZooKeeper session expired, so controller %d removes "
                               "it from the ISR of %s-%d in ZooKeeper (a conditional write), "
                               "which becomes %s, with a new leader epoch. ",
                               e->broker, e->controller_id, name, e->partition, new_isr);
        append_min_isr_consequence(spec, explain, e->isr_new_count, e->isr_count_min);
        return;
    }
    if (e->reason == KS_REASON_BROKER_FENCED) {
        g_string_append_printf(detail, "(broker %d fenced)", e->broker);
        append_elr_detail(detail, e);
        g_string_append_printf(explain,
                               "Broker %d lost its session, so the controller drops it from the "
                               "ISR of %s-%d, which becomes %s. ",
                               e->broker, name, e->partition,
                               e->isr_new_count == 0 ? "empty" : new_isr);
        append_min_isr_consequence(spec, explain, e->isr_new_count, e->isr_count_min);
        append_elr_explain(explain, e);
        return;
    }
    g_string_append_printf(detail, "(leader %d)", e->leader_new);
    append_elr_detail(detail, e);
    if (zookeeper) {
        g_string_append_printf(
            explain,
            "Leader %d of %s-%d %s, so it writes the new ISR %s to the partition's state znode "
            "in ZooKeeper itself, conditional on the zkVersion it holds (Kafka before KIP-497). "
            "The controller hears of it through the ISR change notification. ",
            e->leader_new, name, e->partition,
            e->kind == KS_EV_ISR_EXPAND
                ? "saw a follower catch up with its high watermark"
                : "found followers not caught up for replica.lag.time.max.ms",
            new_isr);
        append_min_isr_consequence(spec, explain, e->isr_new_count, e->isr_count_min);
        return;
    }
    if (e->kind == KS_EV_ISR_EXPAND) {
        g_string_append_printf(explain,
                               "A follower of %s-%d caught up with the leader's high watermark, "
                               "so leader %d asks the controller to add it back: the ISR becomes "
                               "%s. acks=all writes now wait for it too, and it may be elected "
                               "leader cleanly.",
                               name, e->partition, e->leader_new, new_isr);
        append_elr_explain(explain, e);
        return;
    }
    bool several = e->isr_old_count - e->isr_new_count > 1;
    g_string_append_printf(explain,
                           "Leader %d of %s-%d found %s that %s not caught up for "
                           "replica.lag.time.max.ms and asks the controller to drop %s: the ISR "
                           "becomes %s. The high watermark no longer waits for %s. ",
                           e->leader_new, name, e->partition, several ? "followers" : "a follower",
                           several ? "have" : "has", several ? "them" : "it", new_isr,
                           several ? "them" : "it");
    append_min_isr_consequence(spec, explain, e->isr_new_count, e->isr_count_min);
    append_elr_explain(explain, e);
}

/* KIP-966: the ELR changed alone (a broker that restarted left it). */
static void narrate_elr_change(const struct ks_cluster_spec *spec, const struct ks_cluster_event *e,
                               GString *detail, GString *explain)
{
    g_string_append_printf(detail, "%s-%d", topic_name(spec, e->topic_index), e->partition);
    append_elr_detail(detail, e);
    g_string_append_printf(detail, " (%s)", phrase(e->reason));
    append_elr_explain(explain, e);
    g_string_erase(explain, 0, explain->len > 0 && explain->str[0] == ' ' ? 1 : 0);
    if (explain->len == 0) {
        g_string_append_printf(explain,
                               "The controller changed the eligible leader replicas of %s-%d "
                               "(KIP-966); its ISR and leader stay as they were.",
                               topic_name(spec, e->topic_index), e->partition);
    }
}

/* ---- brokers: truncation, recovery, log tasks, refused writes --------------------------- */

/* Producers of a topic that do not wait for every in-sync replica ("p1
 * (acks=1), p2 (acks=0)", at most four named); returns how many there are. */
static int32_t append_weak_acks_producers(const struct ks_cluster_spec *spec, GString *out,
                                          int32_t topic_index)
{
    int32_t count = 0;
    for (int32_t i = 0; i < spec->producer_count; i++) {
        const struct ks_producer_config *producer = &spec->producers[i];
        if (producer->topic_index != topic_index || producer->acks == KS_ACKS_ALL) {
            continue;
        }
        if (count < 4) {
            g_string_append_printf(out, "%s%s (acks=%d)", count > 0 ? ", " : "", producer->name,
                                   producer->acks == KS_ACKS_NONE ? 0 : 1);
        }
        count++;
    }
    return count;
}

/* What dropping [target, LEO) of a replica loses, as far as its broker
 * knew: the part below its HW was committed; acks=1 and acks=0 writes may
 * have been acknowledged before any follower had them. */
static void append_dropped(const struct ks_cluster_spec *spec, GString *out,
                           const struct ks_cluster_event *e)
{
    int64_t target = e->offset;
    int64_t leo = e->leo_old;
    int64_t committed_end = e->hw_old < leo ? e->hw_old : leo;
    g_autoptr(GString) producers = g_string_new(NULL);
    int32_t weak = append_weak_acks_producers(spec, producers, e->topic_index);
    g_autoptr(GString) weak_text = g_string_new(NULL);
    if (weak > 0) {
        g_string_append_printf(weak_text,
                               " But producer %s%s %s not wait for the followers: a leader "
                               "acknowledges an acks=1 write as soon as it has appended it "
                               "(acks=0 gets no answer at all), so some of %s may have been "
                               "acknowledged and are lost all the same.",
                               producers->str, weak > 4 ? " and more" : "",
                               weak > 1 ? "do" : "does",
                               committed_end > target ? "the others" : "these records");
    }
    if (committed_end <= target) {
        g_string_append_printf(out,
                               "None of them is below this replica's high watermark (%" PRId64
                               "), so it has no sign that they were committed; if the new leader "
                               "came from the ISR, they were not, and no acks=all write among "
                               "them was acknowledged.%s",
                               e->hw_old, weak_text->str);
        return;
    }
    g_string_append_printf(out,
                           "Offsets %" PRId64 "..%" PRId64 " were below this replica's high "
                           "watermark (%" PRId64 "): they had been committed, so their "
                           "producers may have been told they were written, whatever their "
                           "acks. Only an unclean election (a leader from outside the ISR) or an "
                           "in-sync replica that lost unflushed data can cut committed records: "
                           "these are lost.",
                           target, committed_end - 1, e->hw_old);
    if (committed_end < leo) {
        g_string_append_printf(out, " It has no sign that %" PRId64 "..%" PRId64 " were committed.",
                               committed_end, leo - 1);
        g_string_append(out, weak_text->str);
    }
}

/* The sentences on why the follower truncated (after the common first one). */
static void append_truncation_cause(const struct ks_cluster_spec *spec, GString *out,
                                    const struct ks_cluster_event *e)
{
    if (e->reason == KS_REASON_TRUNCATE_TO_HIGH_WATERMARK) {
        g_string_append_printf(out,
                               "replication.truncation = high-watermark (Kafka before 0.11): on "
                               "becoming a follower the replica drops everything above its own "
                               "high watermark, %" PRId64 ". That HW can lag the leader's (a "
                               "follower learns it one fetch late; a restarted broker reads it "
                               "from a checkpoint), so records among these may have been "
                               "committed and acknowledged. Those the current leader lacks are "
                               "gone; the rest are lost too if this replica becomes leader "
                               "before fetching them back (KIP-101 scenario 1).",
                               e->hw_old);
    } else if (e->reason == KS_REASON_TRUNCATE_NO_COMMON_EPOCH) {
        g_string_append_printf(out,
                               "Leader %d answered with epoch %d ending at %" PRId64 ", and this "
                               "follower knows no epoch that old (its log begins with a later "
                               "one), so it trusts the leader's end offset, as Kafka does. ",
                               e->leader_new, e->diverging_epoch, e->diverging_end_offset);
        append_dropped(spec, out, e);
    } else if (e->reason == KS_REASON_TRUNCATE_DIVERGING_EPOCH) {
        g_string_append_printf(out,
                               "KIP-101/KIP-279: the follower's last epoch ends at a different "
                               "offset on leader %d (epoch %d ends at %" PRId64 " there), so its "
                               "records above the last offset both logs share were written by a "
                               "leader that lost its leadership before the new leader had them. "
                               "The follower drops them so that the replicas do not diverge. ",
                               e->leader_new, e->diverging_epoch, e->diverging_end_offset);
        append_dropped(spec, out, e);
    } else if (e->reason == KS_REASON_TRUNCATE_TO_LEADER_LEO) {
        g_string_append_printf(out,
                               "The leader's log ends at %" PRId64 ", below this replica's end, "
                               "so the follower cuts its log back to the leader's end to stay a "
                               "copy of it. Records beyond that point exist nowhere else and are "
                               "lost.",
                               e->offset);
    } else if (e->reason == KS_REASON_TRUNCATE_REALIGN_BATCH) {
        g_string_append(out, "The follower's log ended inside one of the leader's batches, so "
                             "it drops the partial tail and copies the whole batch.");
    }
}

static void narrate_truncation(const struct ks_cluster_spec *spec, const struct ks_cluster_event *e,
                               GString *detail, GString *explain)
{
    const char *name = topic_name(spec, e->topic_index);
    g_string_append_printf(detail, "broker %d truncates %s-%d to %" PRId64 " (", e->broker, name,
                           e->partition, e->leo_new);
    if (e->reason == KS_REASON_TRUNCATE_DIVERGING_EPOCH) {
        g_string_append_printf(detail, "leader %d epoch %d ends at %" PRId64, e->leader_new,
                               e->diverging_epoch, e->diverging_end_offset);
    } else {
        g_string_append(detail, phrase(e->reason));
    }
    if (e->leo_old - e->leo_new == 1) {
        g_string_append_printf(detail, "), dropping offset %" PRId64, e->leo_new);
    } else {
        g_string_append_printf(detail, "), dropping offsets %" PRId64 "..%" PRId64, e->leo_new,
                               e->leo_old - 1);
    }
    g_string_append_printf(explain,
                           "Broker %d truncates %s-%d to offset %" PRId64 ", dropping %" PRId64
                           " record(s) from its log. ",
                           e->broker, name, e->partition, e->leo_new, e->leo_old - e->leo_new);
    append_truncation_cause(spec, explain, e);
}

/* "lost 120 record(s) in 3 batch(es), 14520 bytes" (counts that are not
 * known are left out). */
static void append_recovery_loss(GString *out, const struct ks_cluster_event *e)
{
    if (e->record_count > 0 || (e->record_count == 0 && e->byte_count == 0)) {
        g_string_append_printf(out, "lost %" PRId64 " record(s)", e->record_count);
    } else {
        g_string_append_printf(out, "lost offsets %" PRId64 "..%" PRId64, e->offset_from,
                               e->offset_to - 1);
    }
    if (e->batch_count > 0) {
        g_string_append_printf(out, " in %" PRId64 " batch(es)", e->batch_count);
    }
    g_string_append_printf(out, ", %" PRId64 " bytes", e->byte_count);
}

static void narrate_recovery(const struct ks_cluster_spec *spec, const struct ks_cluster_event *e,
                             GString *detail, GString *explain)
{
    const char *name = topic_name(spec, e->topic_index);
    bool lost_any = e->offset_to > e->offset_from || e->byte_count > 0;
    g_string_append_printf(detail,
                           "broker %d recovered %s-%d from offset %" PRId64 ": log end %" PRId64,
                           e->broker, name, e->partition, e->offset, e->leo_new);
    if (e->leo_old >= 0) {
        g_string_append_printf(detail, ", %" PRId64 " before the crash", e->leo_old);
    }
    g_string_append(detail, lost_any ? ": " : ": nothing lost");
    if (lost_any) {
        append_recovery_loss(detail, e);
    }
    if (e->cut_batch_count > 0 || e->cut_byte_count > 0) {
        g_string_append_printf(detail, " (recovery cut %" PRId64 " batch(es), %" PRId64 " bytes)",
                               e->cut_batch_count, e->cut_byte_count);
    }
    g_string_append_printf(explain,
                           "Broker %d did not shut down cleanly, so it re-reads %s-%d from its "
                           "recovery point (the last offset known to be fsynced), checks every "
                           "batch's CRC, and cuts the log at the first torn or missing batch. ",
                           e->broker, name, e->partition);
    if (e->leo_old >= 0 && e->offset_old < e->leo_old) {
        g_string_append_printf(
            explain,
            "Before the crash its log ended at offset %" PRId64 ", but at the restart its files "
            "held only up to offset %" PRId64 ": the power loss took the page cache, with every "
            "write that the operating system had not written back yet (dirty data goes to disk "
            "once it is disk.writeback.expire old) and that Kafka had not fsynced (it fsyncs "
            "only as flush.messages and flush.ms ask, and when a segment rolls). ",
            e->leo_old, e->offset_old);
    } else if (e->leo_old >= 0) {
        g_string_append(explain, "Its files still held everything the broker had written: the "
                                 "page cache survived, or the data had reached the disk. ");
    }
    if (e->cut_batch_count > 0 || e->cut_byte_count > 0) {
        g_string_append_printf(explain,
                               "Recovery itself cut %" PRId64 " torn or invalid batch(es), %" PRId64
                               " bytes, found by CRC. ",
                               e->cut_batch_count, e->cut_byte_count);
    }
    g_string_append_printf(explain,
                           "Its high watermark comes from replication-offset-checkpoint (%" PRId64
                           "), clamped to the log end.",
                           e->hw_new);
}

static void narrate_log_task(const struct ks_cluster_spec *spec, const struct ks_cluster_event *e,
                             GString *detail, GString *explain)
{
    const char *name = topic_name(spec, e->topic_index);
    if (e->kind == KS_EV_RETENTION) {
        g_string_append_printf(detail, "broker %d %s-%d: %d segment(s) deleted, log start %" PRId64,
                               e->broker, name, e->partition, e->segment_count,
                               e->log_start_offset);
        g_string_append(explain, "Retention deletes whole old segments below the high "
                                 "watermark. Each replica applies it to its own log on its own "
                                 "schedule; consumers behind the leader's new log start offset "
                                 "reset.");
        return;
    }
    g_string_append_printf(detail, "broker %d %s-%d: %" PRId64 " record(s) compacted away",
                           e->broker, name, e->partition, e->record_count);
    g_string_append(explain, "The log cleaner keeps only the latest record per key below the "
                             "high watermark. Each replica cleans its own log independently.");
}

/* KIP-890 part 1: the leader's verification said no. */
static void narrate_txn_not_verified(const struct ks_cluster_spec *spec,
                                     const struct ks_cluster_event *e, GString *detail,
                                     GString *explain)
{
    const char *name = topic_name(spec, e->topic_index);
    if (spec->cluster->transaction_version >= 2) {
        /* KIP-890 part 2: the leader asked to add the partition, not to verify it. */
        g_string_append_printf(detail,
                               "%s-%d %s: the transaction coordinator did not add the partition "
                               "to the producer's transaction for a transactional batch (%" PRId64
                               " record(s)) (KIP-890 part 2)",
                               name, e->partition, ks_error_name(e->error_code), e->record_count);
        g_string_append_printf(
            explain,
            "Leader %d asked the transaction coordinator to add %s-%d to the producer's "
            "transaction before appending the batch (transaction.version 2: the producer sends "
            "no AddPartitionsToTxn of its own), and the coordinator refused: the batch carries "
            "an epoch that an ended transaction or a fence has left behind (every commit or "
            "abort bumps the epoch). It is refused with %s and nothing is appended, so it "
            "cannot open a transaction that no coordinator knows of.",
            e->broker, name, e->partition, ks_error_name(e->error_code));
        return;
    }
    g_string_append_printf(detail,
                           "%s-%d %s: the transaction coordinator did not confirm a "
                           "transactional batch (%" PRId64 " record(s)) that would start a "
                           "transaction (KIP-890 verification)",
                           name, e->partition, ks_error_name(e->error_code), e->record_count);
    g_string_append_printf(explain,
                           "Leader %d asked the transaction coordinator whether %s-%d is in the "
                           "producer's ongoing transaction before appending the batch (KIP-890, "
                           "transaction.partition.verification.enable), and it is not: the batch "
                           "arrived after its transaction had ended (or its producer was fenced). "
                           "It is refused with %s and nothing is appended. Without the check "
                           "(Kafka before 3.6) it would have opened a transaction that no "
                           "coordinator knows of and no marker ever closes: a hanging "
                           "transaction, holding back the last stable offset.",
                           e->broker, name, e->partition, ks_error_name(e->error_code));
}

static void narrate_refused(const struct ks_cluster_spec *spec, const struct ks_cluster_event *e,
                            GString *detail, GString *explain)
{
    const char *name = topic_name(spec, e->topic_index);
    if (e->reason == KS_REASON_TXN_NOT_VERIFIED) {
        narrate_txn_not_verified(spec, e, detail, explain);
        return;
    }
    g_string_append_printf(detail,
                           "%s-%d NOT_ENOUGH_REPLICAS: isr size %d < min.insync.replicas %d", name,
                           e->partition, e->isr_new_count, e->isr_count_min);
    g_string_append_printf(explain,
                           "Leader %d refuses an acks=all write to %s-%d without appending it: "
                           "only %d replica(s) are in sync and min.insync.replicas is %d. The "
                           "producer retries; the partition is unavailable for acks=all writes "
                           "until the ISR grows back. This is the price of not acknowledging "
                           "writes that too few replicas hold.",
                           e->broker, name, e->partition, e->isr_new_count, e->isr_count_min);
}

/* ---- producers ------------------------------------------------------------------------------- */

static const char *outcome_name(enum ks_record_outcome_kind outcome)
{
    switch (outcome) {
    case KS_OUTCOME_ACKED: return "acked";
    case KS_OUTCOME_FAILED: return "failed";
    case KS_OUTCOME_UNKNOWN: return "unknown";
    }
    return "?";
}

static void narrate_disconnect(const struct ks_cluster_spec *spec, const struct ks_cluster_event *e,
                               GString *detail, GString *explain)
{
    if (e->reason == KS_REASON_CONNECTION_SETUP_TIMEOUT) {
        g_string_append_printf(detail, "producer %s: connection to broker %d not set up (%s)",
                               spec->producers[e->producer_index].name, e->broker,
                               phrase(e->reason));
        g_string_append(explain,
                        "The producer's connect got no answer in time (the broker is cut off "
                        "or paused). It closes the attempt, waits reconnect.backoff.ms and tries "
                        "again with a longer setup timeout; its batches for that broker wait in "
                        "the accumulator instead of being sent into the cut.");
        return;
    }
    g_string_append_printf(detail,
                           "producer %s: connection to broker %d closed (%s): %" PRId64
                           " batch(es), %" PRId64 " record(s) in flight fail and are retried",
                           spec->producers[e->producer_index].name, e->broker, phrase(e->reason),
                           e->batch_count, e->record_count);
    g_string_append(explain,
                    e->idempotent
                        ? "The producer did not learn whether the broker wrote these batches. It "
                          "resends them with the same producer id and sequence numbers, so a "
                          "broker that already has one answers with the original offset instead "
                          "of writing it again."
                        : "The producer did not learn whether the broker wrote these batches. "
                          "Without idempotence it simply sends them again: a batch the broker "
                          "had already written is written twice, and with several requests in "
                          "flight the resends can land out of order.");
}

static void narrate_producer_error(const struct ks_cluster_spec *spec,
                                   const struct ks_cluster_event *e, GString *detail,
                                   GString *explain)
{
    if (e->reason == KS_REASON_CONNECTION_BROKER_DOWN ||
        e->reason == KS_REASON_CONNECTION_TIMEOUT ||
        e->reason == KS_REASON_CONNECTION_SETUP_TIMEOUT ||
        e->reason == KS_REASON_CONNECTION_REFUSED) {
        narrate_disconnect(spec, e, detail, explain);
        return;
    }
    g_autoptr(GString) why = g_string_new(NULL);
    if (e->reason == KS_REASON_RETRIES_EXHAUSTED ||
        e->reason == KS_REASON_ERROR_AFTER_DELIVERY_TIMEOUT ||
        e->reason == KS_REASON_ERROR_NOT_RETRIABLE) {
        g_string_append(why, ks_error_name(e->error_code));
    }
    g_string_append(why, phrase(e->reason));
    const char *producer = spec->producers[e->producer_index].name;
    const char *topic = topic_name(spec, e->topic_index);
    g_string_append_printf(detail, "producer %s: %" PRId64 " record(s) to %s", producer,
                           e->record_count, topic);
    if (e->partition >= 0) {
        g_string_append_printf(detail, "-%d", e->partition);
    }
    g_string_append_printf(detail, " %s: %s", outcome_name(e->outcome), why->str);
    if (e->suppressed_count > 0) {
        g_string_append_printf(detail, " (and %" PRId64 " more since the last line)",
                               e->suppressed_count);
    }
    if (e->reason == KS_REASON_BUFFER_FULL_MAX_BLOCK ||
        e->reason == KS_REASON_NO_METADATA_MAX_BLOCK) {
        g_string_append(explain, "send() blocked for max.block.ms (waiting for metadata or for "
                                 "buffer.memory to free) and gave up; the record never left the "
                                 "producer.");
    } else if (e->reason == KS_REASON_RECORD_TOO_LARGE) {
        g_string_append(explain, "send() refused the record before it reached the accumulator "
                                 "(RecordTooLargeException): its serialized size is larger than "
                                 "max.request.size or buffer.memory, so it can never be sent.");
    } else if (e->reason == KS_REASON_PRODUCER_CRASHED) {
        g_string_append(explain, "The producer process died with these records queued or in "
                                 "flight; some may have reached a broker, none will be retried.");
    } else if (e->outcome == KS_OUTCOME_UNKNOWN) {
        g_string_append(explain, "The producer gave up on these records without learning "
                                 "whether a broker wrote them (a request timed out or its "
                                 "connection was cut): they may or may not be in the log.");
    } else {
        g_string_append(explain, "A broker answered with an error the producer does not retry, "
                                 "or retries ran out after definite refusals: the records were "
                                 "not written.");
    }
}

/* ---- consumer groups and consumers ---------------------------------------------------------- */

static void narrate_rebalance(const struct ks_cluster_spec *spec, const struct ks_cluster_event *e,
                              GString *detail, GString *explain)
{
    const char *assignor = ks_assignor_name(e->assignor);
    g_string_append_printf(detail, "group %s generation %d %s:", e->group_id, e->generation,
                           assignor);
    for (int32_t i = 0; i < e->member_count; i++) {
        const struct ks_event_member *m = &e->members[i];
        g_string_append_printf(detail, " %s=", m->member_id);
        if (m->assignment_count == 0) {
            g_string_append(detail, "none");
        }
        for (int32_t k = 0; k < m->assignment_count; k++) {
            g_string_append_printf(detail, "%s%s-%d", k == 0 ? "" : ",",
                                   topic_name(spec, m->assignment[k].topic_index),
                                   m->assignment[k].partition);
        }
    }
    g_autoptr(GString) causes = g_string_new(NULL);
    for (int32_t i = 0; i < e->cause_count; i++) {
        const struct ks_event_cause *cause = &e->causes[i];
        if (i > 0) {
            g_string_append(causes, "; then ");
        }
        if (cause->member_id != NULL) {
            g_string_append_printf(causes, "member %s ", cause->member_id);
        }
        g_string_append(causes, phrase(cause->reason));
    }
    if (e->suppressed_count > 0) {
        g_string_append_printf(causes, "; then %" PRId64 " more", e->suppressed_count);
    }
    g_string_append_printf(explain,
                           "Broker %d, coordinator of group %s (it leads %s-%d), completed a "
                           "rebalance because %s: generation %d has %d member(s); the leader %s "
                           "assigned the partitions with the %s assignor. Under the eager "
                           "protocol each member gave up all its partitions before rejoining and "
                           "starts its new ones from the committed offsets; a member that was "
                           "cut off or paused may still process records it fetched before (a "
                           "zombie) until it learns that it left the group.",
                           e->broker, e->group_id, OFFSETS_TOPIC, e->offsets_partition,
                           e->cause_count > 0 ? causes->str : "the group changed", e->generation,
                           e->member_count, e->group_leader_id, assignor);
}

static void narrate_commit(const struct ks_cluster_spec *spec, const struct ks_cluster_event *e,
                           GString *detail, GString *explain)
{
    g_string_append_printf(detail, "group %s", e->group_id);
    for (int32_t i = 0; i < e->offset_count; i++) {
        const struct ks_event_offset *o = &e->offsets[i];
        g_string_append_printf(detail, " %s-%d=%" PRId64, topic_name(spec, o->topic_index),
                               o->partition, o->offset);
    }
    if (e->suppressed_count > 0) {
        g_string_append_printf(detail, " (%" PRId64 " commits since last line)",
                               e->suppressed_count + 1);
    }
    g_string_append_printf(explain,
                           "Group %s's committed offsets are now durable in %s-%d: the "
                           "coordinator (broker %d) acknowledged the commit only after the high "
                           "watermark passed it, so every in-sync replica holds it. A restarted "
                           "consumer resumes from these offsets.",
                           e->group_id, OFFSETS_TOPIC, e->offsets_partition, e->broker);
}

static void narrate_txn_end(const struct ks_cluster_spec *spec, const struct ks_cluster_event *e,
                            GString *detail, GString *explain)
{
    const char *producer = spec->producers[e->producer_index].name;
    const char *how = "?";
    const char *why = "";
    switch (e->reason) {
    case KS_REASON_TXN_COMMITTED:
        how = "committed";
        why = "commitTransaction() returned: the coordinator wrote PrepareCommit, so the "
              "commit markers follow (after a coordinator failover too), and read_committed "
              "consumers see these records once the markers pass the high watermark.";
        break;
    case KS_REASON_TXN_ABORTED:
        how = "aborted";
        why = "abortTransaction() returned: ABORT markers follow; read_committed consumers "
              "skip these records (the .txnindex lists the transaction), read_uncommitted ones "
              "still see them.";
        break;
    case KS_REASON_TXN_FENCED:
        how = "fenced";
        why = "A newer epoch of the producer's transactional.id exists (another instance called "
              "initTransactions(), or the coordinator aborted the transaction after "
              "transaction.timeout.ms): the producer gets ProducerFencedException and stops; "
              "the coordinator aborts the open transaction.";
        break;
    case KS_REASON_TXN_ABANDONED:
        how = "abandoned";
        why = "The producer crashed inside the transaction: the coordinator aborts it after "
              "transaction.timeout.ms, or when the restarted instance calls initTransactions().";
        break;
    default: why = "A transaction of the producer ended."; break;
    }
    g_string_append_printf(
        detail, "producer %s: transaction %s (records %" PRId64 "..%" PRId64 ", %d partition(s))",
        producer, how, e->offset_from, e->offset_to - 1, e->partition_count);
    if (e->error_code != 0) {
        g_string_append_printf(detail, " %s", ks_error_name(e->error_code));
    }
    g_string_append(explain, why);
}

/* The transaction coordinator's side (KS_EV_TXN_STATE). */
static void narrate_txn_loaded(const struct ks_cluster_spec *spec, const struct ks_cluster_event *e,
                               GString *detail, GString *explain)
{
    const char *name = topic_name(spec, e->topic_index);
    g_string_append_printf(detail,
                           "broker %d is the transaction coordinator of %s-%d (epoch %d): loaded "
                           "%" PRId64 " transactional id(s), %" PRId64 " with markers to finish",
                           e->broker, name, e->partition, e->leader_epoch_new, e->record_count,
                           e->batch_count);
    g_string_append_printf(explain,
                           "Broker %d became the leader of %s-%d, so it is now the transaction "
                           "coordinator of every transactional id that hashes there. It reads the "
                           "partition from its log (TransactionStateManager's load) and keeps "
                           "each id's last state. ",
                           e->broker, name, e->partition);
    if (e->batch_count > 0) {
        g_string_append(explain,
                        "A transaction found in PrepareCommit or PrepareAbort was decided by the "
                        "previous coordinator, which did not finish its markers: this one sends "
                        "them now, so the decision holds across the failover.");
    } else {
        g_string_append(explain, "No transaction waits for its markers.");
    }
}

static void narrate_txn_state(const struct ks_cluster_spec *spec, const struct ks_cluster_event *e,
                              GString *detail, GString *explain)
{
    if (e->reason == KS_REASON_TXN_LOADED) {
        narrate_txn_loaded(spec, e, detail, explain);
        return;
    }
    const char *state = "?";
    const char *why = "";
    switch (e->reason) {
    case KS_REASON_TXN_PREPARE_COMMIT:
        state = "PrepareCommit";
        why = "The coordinator wrote PrepareCommit to __transaction_state and it is replicated: "
              "the commit is decided (EndTxn is answered now), whatever happens to this broker. "
              "The COMMIT markers go to every partition of the transaction next.";
        break;
    case KS_REASON_TXN_PREPARE_ABORT:
        state = "PrepareAbort";
        why = e->error_code == 0
                  ? "The coordinator wrote PrepareAbort: the abort is decided, the ABORT markers "
                    "go to every partition of the transaction next."
              : e->txn_timed_out
                  ? "The transaction was open longer than its transaction.timeout.ms: the "
                    "coordinator fences the producer (epoch + 1, so its next request gets "
                    "PRODUCER_FENCED) and aborts the transaction with the new epoch."
                  : "A new instance of the transactional id called initTransactions(): the "
                    "coordinator fences the old one (epoch + 1) and aborts its open "
                    "transaction with the new epoch before it answers the new instance.";
        break;
    case KS_REASON_TXN_COMPLETE_COMMIT:
        state = "CompleteCommit";
        why = "Every partition of the transaction has its COMMIT marker: the coordinator writes "
              "CompleteCommit and forgets the partitions. The producer may begin its next "
              "transaction.";
        break;
    case KS_REASON_TXN_COMPLETE_ABORT:
        state = "CompleteAbort";
        why = "Every partition of the transaction has its ABORT marker: the coordinator writes "
              "CompleteAbort and forgets the partitions.";
        break;
    default: why = "The transaction coordinator changed the state of a transaction."; break;
    }
    g_string_append_printf(detail,
                           "transactional id %s (producer id %" PRId64
                           " epoch %d) %s on coordinator %d, %d partition(s)",
                           e->transactional_id != NULL ? e->transactional_id : "?",
                           e->txn_producer_id, e->txn_producer_epoch, state, e->broker,
                           e->partition_count);
    if (e->error_code != 0) {
        g_string_append_printf(detail, ", fenced (%s after %.3fs)",
                               e->txn_timed_out ? "transaction.timeout.ms" : "a new instance",
                               (double)e->elapsed_ns / 1e9);
    }
    if (e->resumed) {
        g_string_append(detail, ", markers resumed after the load");
        g_string_append(explain,
                        "This transaction was decided by the previous coordinator; this one "
                        "loaded the decision from __transaction_state and finished the markers. ");
    }
    g_string_append(explain, why);
    (void)spec;
}

static const char *position_name(enum ks_event_position position)
{
    switch (position) {
    case KS_POSITION_EARLIEST: return "earliest";
    case KS_POSITION_LATEST: return "latest";
    case KS_POSITION_TIMESTAMP: return "timestamp";
    case KS_POSITION_OFFSET: return "offset";
    case KS_POSITION_NONE: break;
    }
    return "?";
}

static void narrate_offset_reset(const struct ks_cluster_spec *spec,
                                 const struct ks_cluster_event *e, GString *detail,
                                 GString *explain)
{
    const struct ks_consumer_config *consumer = &spec->consumers[e->consumer_index];
    const char *name = topic_name(spec, e->topic_index);
    const char *how = position_name(e->position);
    if (e->reason == KS_REASON_NO_COMMITTED_OFFSET_NONE) {
        g_string_append_printf(detail,
                               "consumer %s: no committed offset for %s-%d and "
                               "auto.offset.reset=none",
                               consumer->name, name, e->partition);
        g_string_append(explain, "With auto.offset.reset=none a partition without a committed "
                                 "offset is an error for the application; this consumer leaves "
                                 "it unread.");
        return;
    }
    if (e->reason == KS_REASON_OFFSET_OUT_OF_RANGE_NONE) {
        g_string_append_printf(detail,
                               "consumer %s: offset %" PRId64 " of %s-%d is out of range and "
                               "auto.offset.reset=none",
                               consumer->name, e->offset_old, name, e->partition);
        g_string_append(explain, "With auto.offset.reset=none an out-of-range position is an "
                                 "error for the application; this consumer leaves the partition "
                                 "unread.");
        return;
    }
    if (e->reason == KS_REASON_LOG_TRUNCATION_NONE) {
        g_string_append_printf(detail,
                               "consumer %s: the log of %s-%d was truncated to %" PRId64
                               " below its position %" PRId64 " and auto.offset.reset=none",
                               consumer->name, name, e->partition, e->offset, e->offset_old);
        g_string_append(explain, "Validating its position after a leader change "
                                 "(OffsetsForLeaderEpoch, KIP-320), the consumer found the new "
                                 "leader's log shorter than what it had read: with "
                                 "auto.offset.reset=none that is a LogTruncationException for "
                                 "the application; this consumer leaves the partition unread.");
        return;
    }
    if (e->reason == KS_REASON_LOG_TRUNCATION) {
        g_string_append_printf(detail,
                               "consumer %s group %s %s-%d truncation detected at offset %" PRId64
                               ": reset to %" PRId64,
                               consumer->name, consumer->group_id, name, e->partition,
                               e->offset_old, e->offset);
        g_string_append_printf(explain,
                               "After a leader change consumer %s validated its position %" PRId64
                               " with the new leader (OffsetsForLeaderEpoch, KIP-320): the epoch "
                               "of the last record it read ends at offset %" PRId64
                               " there, so the records it read from %" PRId64
                               " on were truncated (an unclean election). It seeks back to %" PRId64
                               " and reads the new leader's records from there instead of "
                               "skipping them.",
                               consumer->name, e->offset_old, e->offset, e->offset, e->offset);
        return;
    }
    if (e->reason == KS_REASON_REWIND && e->position == KS_POSITION_OFFSET) {
        g_string_append_printf(detail, "consumer %s group %s %s-%d rewound to offset %" PRId64,
                               consumer->name, consumer->group_id, name, e->partition, e->offset);
        g_string_append(explain, "The consumer was rewound: it seeks to the given offset and "
                                 "processes the records from there again.");
        return;
    }
    g_string_append_printf(detail, "consumer %s group %s %s-%d %s to %s offset %" PRId64,
                           consumer->name, consumer->group_id, name, e->partition,
                           e->reason == KS_REASON_REWIND ? "rewound" : "reset", how, e->offset);
    if (e->reason == KS_REASON_REWIND) {
        g_string_append_printf(explain,
                               "Consumer %s was rewound: it seeks %s-%d to offset %" PRId64
                               " and will process the records from there again.",
                               consumer->name, name, e->partition, e->offset);
    } else if (e->reason == KS_REASON_OFFSET_OUT_OF_RANGE) {
        g_string_append_printf(explain,
                               "The leader of %s-%d refused consumer %s's position %" PRId64
                               " as out of range (below the log start or above the log end, e.g. "
                               "after retention or a truncation), so the consumer applies "
                               "auto.offset.reset=%s and moves to offset %" PRId64 ": records in "
                               "between are skipped or read again.",
                               name, e->partition, consumer->name, e->offset_old, how, e->offset);
    } else {
        g_string_append_printf(explain,
                               "Group %s has no committed offset for %s-%d, so consumer %s "
                               "applies auto.offset.reset=%s and starts at offset %" PRId64 ".",
                               consumer->group_id, name, e->partition, consumer->name, how,
                               e->offset);
    }
}

/* ---- other facts ----------------------------------------------------------------------------- */

static void narrate_info(const struct ks_cluster_spec *spec, const struct ks_cluster_event *e,
                         GString *detail, GString *explain)
{
    if (e->reason == KS_REASON_REGISTRATION_REFUSED) {
        g_string_append_printf(detail,
                               "broker %d restarted: registration refused while its old session "
                               "is valid (DUPLICATE_BROKER_REGISTRATION)",
                               e->broker);
        g_string_append(explain, "The controller still counts the broker's previous incarnation "
                                 "as alive (its session has not expired), so it refuses the new "
                                 "registration. The broker retries every heartbeat interval; "
                                 "when the old session expires the controller fences it and "
                                 "removes it from the ISRs, and the new incarnation can register "
                                 "and catch up.");
    } else if (e->reason == KS_REASON_SINK_FENCED) {
        g_string_append_printf(
            detail,
            "consumer %s fenced from %s-%d by its sink (claim %" PRId64 ", now %" PRId64 ")",
            spec->consumers[e->consumer_index].name, topic_name(spec, e->topic_index), e->partition,
            e->sink_epoch, e->sink_epoch_found);
        g_string_append(explain, "Another member took this partition while this consumer still "
                                 "held records of it (it was paused or cut off). Its atomic "
                                 "store is refused, so those records are not processed twice.");
    } else if (e->reason == KS_REASON_POLL_INTERVAL_EXCEEDED) {
        const struct ks_consumer_config *consumer = &spec->consumers[e->consumer_index];
        g_string_append_printf(detail, "consumer %s left group %s: max.poll.interval.ms exceeded",
                               consumer->name, consumer->group_id);
        g_string_append(explain, "The consumer did not call poll() within max.poll.interval.ms, "
                                 "so it leaves the group and its partitions go to other members; "
                                 "it rejoins at its next poll.");
    } else if (e->reason == KS_REASON_ZK_NODE_EXISTS) {
        g_string_append_printf(detail,
                               "broker %d restarted: /brokers/ids/%d still belongs to its old "
                               "ZooKeeper session",
                               e->broker, e->broker);
        g_string_append(explain, "The previous incarnation's ZooKeeper session has not expired, "
                                 "so its ephemeral registration is still there and the new one "
                                 "fails (NODE_EXISTS). The broker retries at every ping; once "
                                 "ZooKeeper expires the old session the controller sees the "
                                 "broker go, and then come back.");
    } else if (e->reason == KS_REASON_ZK_BAD_VERSION || e->reason == KS_REASON_ZK_NO_SESSION) {
        g_autoptr(GString) scratch = g_string_new(NULL);
        g_autofree char *want = g_strdup(ids_text(scratch, e->isr_new, e->isr_new_count));
        bool bad_version = e->reason == KS_REASON_ZK_BAD_VERSION;
        g_string_append_printf(detail, "%s-%d leader %d cannot write isr %s to ZooKeeper (%s)",
                               topic_name(spec, e->topic_index), e->partition, e->broker, want,
                               bad_version ? "BadVersion" : "no session");
        if (bad_version) {
            g_string_append_printf(explain,
                                   "Leader %d wrote the ISR against zkVersion %d, but the znode "
                                   "is at version %d: someone else (the controller) changed the "
                                   "partition. As Kafka's Partition.updateIsr it skips the "
                                   "change and waits for the controller's LeaderAndIsr.",
                                   e->broker, e->zk_version, e->zk_version_found);
        } else {
            g_string_append_printf(explain,
                                   "Leader %d has no live ZooKeeper session, so it cannot change "
                                   "the ISR: it keeps %s and its high watermark waits for "
                                   "followers that may never come. acks=all writes to it wait "
                                   "and time out.",
                                   e->broker, ids_text(scratch, e->isr_old, e->isr_old_count));
        }
    } else if (e->reason == KS_REASON_CONTROLLER_BACK) {
        g_string_append(detail, phrase(e->reason));
        g_string_append(explain,
                        "Kafka's controller replays its metadata log, which it flushed "
                        "before acting on any change, so it knows every registration, "
                        "ISR and leader as before (ksim keeps that state across the "
                        "crash instead of writing the log). It gives every registered broker a "
                        "fresh session from now, as Kafka's ClusterControlManager.activate "
                        "does: a broker that died meanwhile is fenced "
                        "broker.session.timeout.ms later, not at once.");
    } else if (e->reason == KS_REASON_SHUTDOWN_REQUESTED) {
        g_string_append_printf(detail, "broker %d asks the controller for a controlled shutdown",
                               e->broker);
        if (spec->cluster->controller_model == KS_CONTROLLER_MODEL_ZOOKEEPER) {
            g_string_append(explain,
                            "The broker is told to stop (controlled.shutdown.enable): it sends "
                            "ControlledShutdown to the controller and keeps serving. The "
                            "controller elects other in-sync replicas for the partitions it "
                            "leads, drops it from the ISRs it follows, and answers with the "
                            "partitions it still leads; with none left it stops, otherwise it "
                            "tries again 5 s later, at most 3 times in all "
                            "(KafkaServer.controlledShutdown).");
        } else {
            g_string_append(explain,
                            "The broker is told to stop (controlled.shutdown.enable): it "
                            "sends a heartbeat at once with WantShutDown and keeps serving "
                            "until the controller has moved its leaderships and ISR "
                            "memberships to other brokers and lets it go (ShouldShutDown), "
                            "or until 5 minutes have passed.");
        }
    } else if (e->reason == KS_REASON_INVALID_SESSION_TIMEOUT) {
        const struct ks_consumer_config *consumer = &spec->consumers[e->consumer_index];
        g_string_append_printf(detail,
                               "consumer %s stopped: group %s refused session.timeout.ms = %" PRId64
                               " ms (INVALID_SESSION_TIMEOUT)",
                               consumer->name, consumer->group_id,
                               consumer->session_timeout_ns / (int64_t)KS_NS_PER_MS);
        g_string_append_printf(
            explain,
            "The coordinator accepts session timeouts between group.min.session.timeout.ms "
            "(%" PRId64 " ms) and group.max.session.timeout.ms (%" PRId64
            " ms). Outside them it refuses the JoinGroup, and the Java consumer throws "
            "InvalidSessionTimeoutException from poll(): the application stops consuming.",
            spec->cluster->group_min_session_timeout_ns / (int64_t)KS_NS_PER_MS,
            spec->cluster->group_max_session_timeout_ns / (int64_t)KS_NS_PER_MS);
    } else {
        g_string_append(detail, phrase(e->reason));
        g_string_append(explain, "With one controller (controllers = 1) there is no other to take "
                                 "over: until it returns nobody fences a broker that stops "
                                 "heartbeating, elects a new leader or changes an ISR. Brokers "
                                 "keep serving with the metadata they have; a partition whose "
                                 "leader dies stays without one.");
    }
}

static void narrate_stopped(const struct ks_cluster_event *e, GString *detail, GString *explain)
{
    g_string_append_printf(detail, "broker %d stopped cleanly", e->broker);
    if (e->reason != KS_REASON_CONTROLLED_SHUTDOWN) {
        g_string_append_printf(detail, " (%s)", phrase(e->reason));
    }
    g_string_append(explain, "It flushes every log, writes its checkpoints and the "
                             ".kafka_cleanshutdown marker, and exits: a restart finds the "
                             "marker and recovers nothing. ");
    if (e->reason == KS_REASON_CONTROLLED_SHUTDOWN) {
        g_string_append(explain, "Its leaderships moved before it went, so clients only had to "
                                 "find the new leaders.");
    } else if (e->reason == KS_REASON_SHUTDOWN_ATTEMPTS_FAILED) {
        g_string_append(explain, "None of its ControlledShutdown requests (controlled.shutdown."
                                 "max.retries = 3, 5 s apart) came back with no partition left to "
                                 "move: the controller could not be reached, or some partition had "
                                 "no other in-sync replica to lead it (a single replica always "
                                 "stays). Kafka logs \"Proceeding to do an unclean shutdown\" "
                                 "and stops anyway; the logs still close cleanly, and partitions "
                                 "it still leads have no leader until its ZooKeeper session "
                                 "closes.");
    } else if (e->reason == KS_REASON_SHUTDOWN_TIMED_OUT) {
        g_string_append(explain, "The controller never let it go (it could not be reached, or "
                                 "its partitions could not move) within the 5 minutes "
                                 "BrokerServer.shutdown waits, so it stopped anyway; partitions "
                                 "it still leads have no leader until the controller fences it.");
    } else {
        g_string_append(explain, "It did not ask the controller first, so partitions it led have "
                                 "no leader until the controller misses its heartbeats "
                                 "(broker.session.timeout.ms) and elects others.");
    }
}

void ks_narrate_event(const struct ks_cluster_spec *spec, const struct ks_cluster_event *event,
                      GString *detail, GString *explain)
{
    g_string_truncate(detail, 0);
    g_string_truncate(explain, 0);
    switch (event->kind) {
    case KS_EV_TOPIC_CREATED: narrate_topic_created(spec, event, detail, explain); return;
    case KS_EV_LEADER_ELECTED: narrate_clean_election(spec, event, detail, explain); return;
    case KS_EV_UNCLEAN_ELECTION: narrate_unclean_election(spec, event, detail, explain); return;
    case KS_EV_NO_LEADER: narrate_no_leader(spec, event, detail, explain); return;
    case KS_EV_ISR_SHRINK:
    case KS_EV_ISR_EXPAND: narrate_isr_change(spec, event, detail, explain); return;
    case KS_EV_TRUNCATION: narrate_truncation(spec, event, detail, explain); return;
    case KS_EV_RECOVERY: narrate_recovery(spec, event, detail, explain); return;
    case KS_EV_BROKER_FENCED: narrate_fenced(spec, event, detail, explain); return;
    case KS_EV_BROKER_UNFENCED:
        g_string_append_printf(detail, "broker %d unfenced", event->broker);
        g_string_append(explain, "The broker heartbeats again and has caught up with the "
                                 "metadata, so the controller unfences it: it may lead "
                                 "partitions and rejoin ISRs once its replicas catch up.");
        return;
    case KS_EV_BROKER_STARTED:
        g_string_append_printf(detail, "broker %d started (epoch %" PRId64 ")", event->broker,
                               event->broker_epoch);
        return;
    case KS_EV_PRODUCE_REFUSED: narrate_refused(spec, event, detail, explain); return;
    case KS_EV_PRODUCER_ERROR: narrate_producer_error(spec, event, detail, explain); return;
    case KS_EV_REBALANCE: narrate_rebalance(spec, event, detail, explain); return;
    case KS_EV_OFFSET_COMMIT: narrate_commit(spec, event, detail, explain); return;
    case KS_EV_OFFSET_RESET: narrate_offset_reset(spec, event, detail, explain); return;
    case KS_EV_RETENTION:
    case KS_EV_COMPACTION: narrate_log_task(spec, event, detail, explain); return;
    case KS_EV_INFO: narrate_info(spec, event, detail, explain); return;
    case KS_EV_ELR_CHANGE: narrate_elr_change(spec, event, detail, explain); return;
    case KS_EV_ZK_SESSION_EXPIRED:
        g_string_append_printf(detail, "ZooKeeper expired broker %d's session%s", event->broker,
                               event->controller_id > 0 ? " (the controller's)" : "");
        g_string_append_printf(explain,
                               "No ping from broker %d reached ZooKeeper for "
                               "zookeeper.session.timeout.ms, so ZooKeeper expires its session "
                               "and deletes its ephemeral znodes: /brokers/ids/%d%s. The broker "
                               "itself does not know yet.",
                               event->broker, event->broker,
                               event->controller_id > 0 ? " and /controller" : "");
        return;
    case KS_EV_CONTROLLER_ELECTED:
        if (event->broker < 0) {
            /* controllers = 3 or 5: a KRaft voter became the active controller. */
            g_string_append_printf(detail, "controller %d is the active controller (epoch %d)",
                                   event->controller_id, event->controller_epoch);
            g_string_append_printf(
                explain,
                "Controller %d won the votes of a majority of the controllers for epoch %d "
                "(KRaft's Vote: each voter grants one vote per epoch, to a candidate whose "
                "metadata log is at least as long as its own), then committed a record of its "
                "epoch once a majority had fetched it. Everything before it is committed too: "
                "the new active controller continues from the log, gives every broker a fresh "
                "session from now, and brokers send it their heartbeats.",
                event->controller_id, event->controller_epoch);
            return;
        }
        g_string_append_printf(detail, "broker %d is controller (epoch %d)", event->broker,
                               event->controller_epoch);
        g_string_append_printf(explain,
                               "Broker %d creates /controller first and raises "
                               "/controller_epoch to %d. It reads the cluster state from "
                               "ZooKeeper and sends it to every broker; brokers refuse requests "
                               "from any controller with an older epoch.",
                               event->broker, event->controller_epoch);
        return;
    case KS_EV_CONTROLLER_RESIGNED:
        if (event->broker < 0) {
            g_string_append_printf(detail, "controller %d is no longer active (epoch %d)",
                                   event->controller_id, event->controller_epoch);
            g_string_append(
                explain,
                "It lost the leadership of the metadata log: another controller runs in a newer "
                "epoch, or a majority of the controllers did not fetch from it within 1.5 times "
                "controller.quorum.fetch.timeout.ms and it resigned (check quorum). It drops "
                "its changes that were not committed and the requests it had not answered "
                "(QuorumController.renounce); brokers find the new active controller.");
            return;
        }
        g_string_append_printf(detail, "broker %d resigns as controller (epoch %d)", event->broker,
                               event->controller_epoch);
        g_string_append(explain, "ZooKeeper answers SESSION_EXPIRED: the broker learns that its "
                                 "session, and with it /controller, is gone. It stops acting as "
                                 "controller, opens a new session and registers again.");
        return;
    case KS_EV_STALE_CONTROLLER:
        g_string_append_printf(detail,
                               "broker %d refuses controller %d's request (epoch %d < %d, "
                               "STALE_CONTROLLER_EPOCH)",
                               event->broker, event->controller_id, event->controller_epoch,
                               event->controller_epoch_old);
        g_string_append_printf(explain,
                               "Broker %d has already accepted requests of controller epoch %d. "
                               "Broker %d still acts as controller of epoch %d: a zombie, whose "
                               "session expired without it noticing. Its %s is refused, so it "
                               "cannot undo what the new controller decided.",
                               event->broker, event->controller_epoch_old, event->controller_id,
                               event->controller_epoch,
                               event->partition_count > 0 ? "LeaderAndIsr" : "UpdateMetadata");
        return;
    case KS_EV_BROKER_STOPPED: narrate_stopped(event, detail, explain); return;
    case KS_EV_TXN_END: narrate_txn_end(spec, event, detail, explain); return;
    case KS_EV_TXN_STATE: narrate_txn_state(spec, event, detail, explain); return;
    case KS_EV_KIND_COUNT: break;
    }
    g_string_append(detail, ks_cluster_event_kind_name(event->kind));
}

/* ---- log pictures (--explain) ------------------------------------------------ */

#define PICTURE_CELLS 40 /* characters of a log */

struct picture_row {
    const struct ks_log_view *view;  /* this step's view */
    const struct ks_log_view *shown; /* the view drawn: this one, or the last online */
};

/* The offsets a picture shows: [lo, hi), all of a short log, else around
 * the log end and HW of the replica the step changed (focus; every replica
 * when -1, or when the focus's log is empty and nothing was dropped) and the
 * dropped range, padded by a third of their spread. */
static void picture_window(const struct picture_row *rows, int32_t count, int32_t focus,
                           int64_t dropped_from, int64_t dropped_to, int64_t *lo_out,
                           int64_t *hi_out)
{
    int64_t lo = INT64_MAX;
    int64_t hi = 0;
    bool focused = false;
    for (int32_t r = 0; r < count; r++) {
        focused = focused || (rows[r].shown != NULL && rows[r].view->broker == focus);
    }
    for (int32_t r = 0; r < count; r++) {
        if (rows[r].shown != NULL && (!focused || rows[r].view->broker == focus)) {
            lo = MIN(lo, MIN(rows[r].shown->hw, rows[r].shown->leo));
            hi = MAX(hi, MAX(rows[r].shown->hw, rows[r].shown->leo));
        }
    }
    if (focused && lo == hi && dropped_from < 0) {
        /* The replica came back with an empty log and nothing is known to be
         * dropped: show it against the others' logs, not as one offset. */
        for (int32_t r = 0; r < count; r++) {
            if (rows[r].shown != NULL) {
                lo = MIN(lo, MIN(rows[r].shown->hw, rows[r].shown->leo));
                hi = MAX(hi, MAX(rows[r].shown->hw, rows[r].shown->leo));
            }
        }
    }
    if (dropped_from >= 0) {
        lo = MIN(lo, dropped_from);
        hi = MAX(hi, dropped_to);
    }
    if (lo == INT64_MAX) {
        lo = 0;
    }
    if (hi <= PICTURE_CELLS - 1) {
        *lo_out = 0;
        *hi_out = MAX(hi + 1, 1);
        return;
    }
    int64_t pad = MAX((hi - lo) / 3, 4);
    *lo_out = MAX(lo - pad, 0);
    *hi_out = hi + pad;
}

/* The epoch of offset in view, or -1. */
static int32_t picture_epoch(const struct ks_steps *steps, const struct ks_log_view *view,
                             int64_t offset)
{
    return ks_log_view_epoch_at(steps, view, offset);
}

/* The mark of one offset: its epoch's digit, 'x' if dropped now, '.' past the log end. */
static char picture_mark(const struct ks_steps *steps, const struct ks_log_view *view,
                         int64_t first, int64_t per_cell, bool dropped_here, int64_t dropped_from,
                         int64_t dropped_to)
{
    if (first < view->log_start_offset) {
        return ' ';
    }
    if (first < view->leo) {
        int32_t epoch = picture_epoch(steps, view, first);
        return epoch >= 0 ? (char)('0' + epoch % 10) : '?';
    }
    if (dropped_here && first + per_cell > dropped_from && first < dropped_to) {
        return 'x';
    }
    return '.';
}

/* A short log (spaced): two columns per offset, the HW a '|' in the gap
 * before its offset, so that it hides no offset. A long one: one column
 * per run of per_cell offsets, the HW replacing the run it falls in. */
static void picture_bar(const struct ks_steps *steps, const struct ks_log_view *view, int64_t lo,
                        int64_t per_cell, int32_t cells, bool spaced, bool dropped_here,
                        int64_t dropped_from, int64_t dropped_to, GString *out)
{
    int32_t hw_cell = view->hw >= lo ? (int32_t)((view->hw - lo) / per_cell) : -1;
    for (int32_t c = 0; c < cells; c++) {
        int64_t first = lo + (int64_t)c * per_cell;
        char mark =
            picture_mark(steps, view, first, per_cell, dropped_here, dropped_from, dropped_to);
        if (spaced) {
            g_string_append_c(out, c == hw_cell ? '|' : ' ');
            g_string_append_c(out, mark);
        } else {
            g_string_append_c(out, c == hw_cell ? '|' : mark);
        }
    }
    if (spaced) {
        g_string_append_c(out, hw_cell == cells ? '|' : ' ');
    }
    /* A log that goes on past the picture ends in '>'. */
    if (view->leo > lo + (int64_t)cells * per_cell) {
        out->str[out->len - 1] = '>';
    }
}

void ks_narrate_log_picture(const struct ks_cluster_spec *spec, const struct ks_steps *steps,
                            const struct ks_step *step, int32_t dropped_broker,
                            int64_t dropped_from, int64_t dropped_to, const char *indent,
                            GString *out)
{
    struct picture_row rows[KS_REPLICATION_FACTOR_MAX];
    int32_t count = MIN(step->view_count, KS_REPLICATION_FACTOR_MAX);
    for (int32_t r = 0; r < count; r++) {
        rows[r].view = ks_steps_view(steps, step, r);
        rows[r].shown = rows[r].view->online
                            ? rows[r].view
                            : ks_steps_last_online(steps, step->event, step->topic_index,
                                                   step->partition, rows[r].view->broker);
    }
    int64_t lo = 0;
    int64_t hi = 0;
    picture_window(rows, count, dropped_broker, dropped_from, dropped_to, &lo, &hi);
    bool spaced = (hi - lo) * 2 < PICTURE_CELLS;
    int64_t per_cell = spaced ? 1 : (hi - lo + PICTURE_CELLS - 1) / PICTURE_CELLS;
    per_cell = MAX(per_cell, 1);
    int32_t cells = (int32_t)((hi - lo + per_cell - 1) / per_cell);
    if (per_cell == 1) {
        g_string_append_printf(out,
                               "%s%s-%d, offsets %" PRId64 "..%" PRId64
                               " (digit: the leader epoch of each offset; |: HW; x: "
                               "dropped now):\n",
                               indent, topic_name(spec, step->topic_index), step->partition, lo,
                               lo + cells - 1);
    } else {
        g_string_append_printf(out,
                               "%s%s-%d, offsets %" PRId64 "..%" PRId64 ", %" PRId64
                               " per character (digit: leader epoch; |: HW; x: dropped "
                               "now):\n",
                               indent, topic_name(spec, step->topic_index), step->partition, lo,
                               lo + (int64_t)cells * per_cell - 1, per_cell);
    }
    for (int32_t r = 0; r < count; r++) {
        const struct ks_log_view *view = rows[r].view;
        const char *role = !view->online ? (view->broker_up ? "no replica" : "down")
                           : view->role == KS_ROLE_LEADER   ? "leader"
                           : view->role == KS_ROLE_FOLLOWER ? "follower"
                                                            : "starting";
        g_string_append_printf(out, "%s  broker %-3d %-9s ", indent, view->broker, role);
        if (!view->online) {
            if (rows[r].shown != NULL) {
                g_string_append_printf(out, "last seen with HW %" PRId64 ", LEO %" PRId64 "\n",
                                       rows[r].shown->hw, rows[r].shown->leo);
            } else {
                g_string_append(out, "-\n");
            }
            continue;
        }
        picture_bar(steps, view, lo, per_cell, cells, spaced, view->broker == dropped_broker,
                    dropped_from, dropped_to, out);
        g_string_append_printf(out, "  HW %" PRId64 " LEO %" PRId64 "\n", view->hw, view->leo);
    }
}
