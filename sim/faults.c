/*
** sim/faults.c: applying a scenario's [fault NAME] sections to a running
** world and cluster (contract in sim/faults.h, SPEC section 2).
**
** Life of one fault:
**
**   PENDING --(at: timer on node 0 | when: trigger holds after an event)-->
**     [delay] --> FIRED: targets resolved now, action applied, reported
**   FIRED --(duration / restart.after: timer on node 0)--> UNDONE
**   any   --(ks_faults_stop: the final phase)--> nothing fires any more
**
** Rules:
**   F1  A fault fires at most once (its state's `fired`), and its trigger
**       counts as holding at most once (`triggered`): a delayed fault is
**       scheduled once, and pending_trigger_count counts exactly the
**       triggers that have not held yet.
**   F2  Every action is reported once and mixed into the trace hash with its
**       resolved nodes, so two runs that resolve a target differently differ.
**   F3  A crash is ks_world_node_crash then ks_cluster_on_node_crashed; a
**       restart is ks_world_node_restart then ks_cluster_on_node_restarted.
**       Crashing a node that is down, or restarting one that is up, is
**       reported as skipped and changes nothing.
**   F4  The driver (node 0) is never a target and is never cut off.
** Randomness: only `random` targets and corrupt positions draw, from
** KS_RNG_FAULT, in the order faults fire.
** A rewind is told to the consumer through ks_cluster_consumer_rewind (a
** seek that the consumer applies at its next poll boundary); rewinding a
** consumer that is down is reported as skipped and changes nothing.
*/
#include "faults.h"

#include "../core/base.h"
#include "../core/consumer.h"
#include "../core/log.h"

#include <inttypes.h>
#include <string.h>

struct fault_state {
    struct ks_faults *owner; /* not owned */
    int32_t index;
    bool fired;
    bool triggered; /* its `when` has held (it fires then, or after `delay`) */
    bool undone;
    GArray *nodes; /* ks_node_id: what the action touched (for undo and restart) */
    GArray *cuts;  /* ks_cut_id of a partition fault */
};

struct ks_faults {
    ks_world *world;                   /* not owned */
    struct ks_cluster *cluster;        /* not owned */
    const struct ks_scenario *scenario; /* not owned */
    const struct ks_cluster_spec *spec; /* not owned */
    ks_fault_report_fn *report;
    void *report_context;
    struct fault_state *states;
    size_t state_count;
    size_t pending_trigger_count;
    bool stopped;
    uint32_t node_count;
    int64_t *crash_count;   /* [node] */
    int64_t *restart_count; /* [node] */
    bool *slowed;           /* [node]: a slow fault set a delay on it */
    int32_t *tp_base;       /* [topic_index]: first slot in elections */
    int64_t *elections;     /* [tp_base[topic] + partition] */
    GString *detail;
};

/* ---- names ------------------------------------------------------------------- */

void ks_faults_node_name(const struct ks_faults *faults, ks_node_id node, char *buffer,
                         size_t buffer_bytes)
{
    const struct ks_scenario *s = faults->scenario;
    uint32_t brokers = (uint32_t)s->cluster.broker_count;
    ks_node_id controller = ks_cluster_controller_node(faults->spec);
    if (node >= 1 && node <= brokers) {
        g_snprintf(buffer, buffer_bytes, "broker %u", node);
        return;
    }
    if (node == controller) {
        g_snprintf(buffer, buffer_bytes, "controller");
        return;
    }
    for (size_t i = 0; i < s->producer_count; i++) {
        if (ks_cluster_producer_node(faults->spec, (int32_t)i) == node) {
            g_snprintf(buffer, buffer_bytes, "producer %s", s->producers[i].name);
            return;
        }
    }
    for (size_t i = 0; i < s->consumer_count; i++) {
        if (ks_cluster_consumer_node(faults->spec, (int32_t)i) == node) {
            g_snprintf(buffer, buffer_bytes, "consumer %s", s->consumers[i].name);
            return;
        }
    }
    g_snprintf(buffer, buffer_bytes, "node %u", node);
}

static void append_nodes(const struct ks_faults *faults, GString *out, const GArray *nodes)
{
    for (guint i = 0; i < nodes->len; i++) {
        char name[96];
        ks_faults_node_name(faults, g_array_index(nodes, ks_node_id, i), name, sizeof name);
        g_string_append_printf(out, "%s%s", i > 0 ? ", " : "", name);
    }
}

static int32_t broker_of(const struct ks_faults *faults, const GArray *nodes)
{
    if (nodes->len == 1) {
        ks_node_id node = g_array_index(nodes, ks_node_id, 0);
        if (node >= 1 && node <= (uint32_t)faults->scenario->cluster.broker_count) {
            return (int32_t)node;
        }
    }
    return -1;
}

static void report(struct ks_faults *faults, const char *kind, int32_t broker, struct ks_tp tp,
                   const char *explain)
{
    struct ks_fault_report r = {
        .at_ns = ks_world_now_ns(faults->world),
        .kind = kind,
        .broker = broker,
        .topic_index = tp.topic_index,
        .partition = tp.partition,
        .detail = faults->detail->str,
        .explain = explain,
    };
    faults->report(faults->report_context, &r);
}

static const struct ks_tp no_tp = { -1, -1 };

/* The partition a fault is about, for the events table. */
static struct ks_tp fault_tp(const struct ks_fault *fault)
{
    switch (fault->target.kind) {
    case KS_TARGET_LEADER:
    case KS_TARGET_FOLLOWER:
    case KS_TARGET_FOLLOWERS:
        return fault->target.tp;
    case KS_TARGET_NONE:
    case KS_TARGET_BROKER:
    case KS_TARGET_CONTROLLER:
    case KS_TARGET_RANDOM:
    case KS_TARGET_PRODUCER:
    case KS_TARGET_CONSUMER:
        break;
    }
    if (fault->action == KS_FAULT_CORRUPT) {
        return fault->corrupt_tp;
    }
    return no_tp;
}

/* ---- targets -------------------------------------------------------------------- */

static void add_node(GArray *nodes, ks_node_id node)
{
    for (guint i = 0; i < nodes->len; i++) {
        if (g_array_index(nodes, ks_node_id, i) == node) {
            return;
        }
    }
    g_array_append_val(nodes, node);
}

/* Resolves one target now, appending its nodes. False (with *why) when it
 * names nothing at this moment (no leader, no live broker). */
static bool resolve_target(struct ks_faults *faults, const struct ks_target *target,
                           GArray *nodes, GString *why)
{
    struct ks_cluster *cluster = faults->cluster;
    char tp_text[300];
    switch (target->kind) {
    case KS_TARGET_NONE:
        g_string_assign(why, "no target");
        return false;
    case KS_TARGET_BROKER:
        add_node(nodes, (ks_node_id)target->broker_id);
        return true;
    case KS_TARGET_LEADER: {
        int32_t leader = ks_cluster_leader(cluster, target->tp.topic_index, target->tp.partition);
        if (leader < 0) {
            g_string_printf(why, "%s has no leader",
                            ks_scenario_format_tp(faults->scenario, target->tp, tp_text,
                                                  sizeof tp_text));
            return false;
        }
        add_node(nodes, (ks_node_id)leader);
        return true;
    }
    case KS_TARGET_FOLLOWER:
    case KS_TARGET_FOLLOWERS: {
        int32_t replicas[KS_REPLICATION_FACTOR_MAX];
        int32_t count = ks_cluster_replicas(cluster, target->tp.topic_index, target->tp.partition,
                                            replicas, KS_REPLICATION_FACTOR_MAX);
        int32_t leader = ks_cluster_leader(cluster, target->tp.topic_index, target->tp.partition);
        guint before = nodes->len;
        for (int32_t i = 0; i < count; i++) {
            if (replicas[i] != leader) {
                add_node(nodes, (ks_node_id)replicas[i]);
                if (target->kind == KS_TARGET_FOLLOWER) {
                    break;
                }
            }
        }
        if (nodes->len == before) {
            g_string_printf(why, "%s has no follower",
                            ks_scenario_format_tp(faults->scenario, target->tp, tp_text,
                                                  sizeof tp_text));
            return false;
        }
        return true;
    }
    case KS_TARGET_CONTROLLER:
        add_node(nodes, ks_cluster_controller_node(faults->spec));
        return true;
    case KS_TARGET_RANDOM: {
        int32_t live[KS_BROKER_COUNT_MAX];
        uint64_t live_count = 0;
        for (int32_t b = 1; b <= faults->scenario->cluster.broker_count; b++) {
            if (ks_world_node_is_up(faults->world, (ks_node_id)b)) {
                live[live_count++] = b;
            }
        }
        if (live_count == 0) {
            g_string_assign(why, "no live broker");
            return false;
        }
        uint64_t pick = ks_world_random_below(faults->world, KS_RNG_FAULT, live_count);
        add_node(nodes, (ks_node_id)live[pick]);
        return true;
    }
    case KS_TARGET_PRODUCER:
        add_node(nodes, ks_cluster_producer_node(faults->spec, target->client_index));
        return true;
    case KS_TARGET_CONSUMER:
        add_node(nodes, ks_cluster_consumer_node(faults->spec, target->client_index));
        return true;
    }
    return false;
}

static bool resolve_list(struct ks_faults *faults, const struct ks_target_list *list,
                         GArray *nodes, GString *why)
{
    for (uint32_t i = 0; i < list->count; i++) {
        if (!resolve_target(faults, &list->items[i], nodes, why)) {
            return false;
        }
    }
    return nodes->len > 0;
}

/* ---- node actions ------------------------------------------------------------------ */

static void mix_fault(struct ks_faults *faults, const struct fault_state *state, uint32_t what)
{
    uint32_t words[2 + 64] = { (uint32_t)state->index, what };
    size_t count = 2;
    for (guint i = 0; i < state->nodes->len && count < G_N_ELEMENTS(words); i++) {
        words[count++] = g_array_index(state->nodes, ks_node_id, i);
    }
    ks_world_trace_mix(faults->world, KS_KIND_DRIVER_MIX_FAULT, KS_NODE_DRIVER, words,
                       count * sizeof words[0]);
}

/* What a crash means, in words: what the disk keeps, and what the node's
 * role makes the cluster do next. Owned: g_free. */
static char *crash_explain(const struct ks_faults *faults, ks_node_id node, bool power)
{
    GString *text = g_string_new(NULL);
    const struct ks_scenario *s = faults->scenario;
    bool broker = node >= 1 && node <= (uint32_t)s->cluster.broker_count;
    if (power) {
        g_string_append(text, "Power fails: the node stops at once and its disk keeps only "
                              "what was fsynced. Kafka does not fsync by default (it relies on "
                              "replication), so the tail of its logs may be gone or torn; "
                              "recovery finds the damage by CRC when it restarts.");
    } else {
        g_string_append(text, "The process dies but the machine stays up: the operating "
                              "system's page cache survives, so every byte it wrote is still "
                              "on disk.");
    }
    if (!broker) {
        g_string_append(text, node == ks_cluster_controller_node(faults->spec)
                                  ? " The controller stops watching sessions and electing "
                                    "leaders until it is back."
                                  : " A client loses what it held in memory: records it had "
                                    "not yet sent, or had not yet processed and committed.");
        return g_string_free(text, FALSE);
    }
    GString *led = g_string_new(NULL);
    int32_t led_count = 0;
    int32_t orphaned = 0; /* led partitions with no other live ISR member */
    for (size_t t = 0; t < s->topic_count; t++) {
        for (int32_t p = 0; p < s->topics[t].partition_count; p++) {
            if (ks_cluster_leader(faults->cluster, (int32_t)t, p) == (int32_t)node) {
                int32_t isr[KS_REPLICATION_FACTOR_MAX];
                int32_t isr_count = ks_cluster_isr(faults->cluster, (int32_t)t, p, isr,
                                                   KS_REPLICATION_FACTOR_MAX);
                bool successor = false;
                for (int32_t i = 0; i < isr_count; i++) {
                    successor = successor || (isr[i] != (int32_t)node &&
                                              ks_cluster_broker_is_up(faults->cluster, isr[i]));
                }
                orphaned += !successor;
                if (led_count < 4) {
                    g_string_append_printf(led, "%s%s-%d", led_count > 0 ? ", " : "",
                                           s->topics[t].name, p);
                }
                led_count++;
            }
        }
    }
    if (led_count > 0) {
        g_string_append_printf(text,
                               " It leads %s%s: until the controller misses its heartbeats "
                               "(broker.session.timeout.ms) it stays leader on paper, and "
                               "writes to %s wait or fail. %s",
                               led->str, led_count > 4 ? " and more" : "",
                               led_count > 1 ? "them" : "it",
                               orphaned == 0 ? "Then a live replica from the ISR takes over."
                               : orphaned == led_count
                                   ? "No other ISR member is alive: there is no clean "
                                     "successor, so the partition stays offline unless an "
                                     "unclean election is allowed."
                                   : "Then a live ISR member takes over where there is one; "
                                     "where there is none, there is no clean successor.");
    } else {
        g_string_append(text, " It leads no partition, so writes go on; its replicas stop "
                              "fetching and drop out of the ISR once the controller fences "
                              "it or they fall replica.lag.time.max.ms behind.");
    }
    g_string_free(led, TRUE);
    return g_string_free(text, FALSE);
}

/* Reports, for each partition a broker about to crash leads, where its
 * replicas stand (leader LEO and HW, each follower's LEO), and what that
 * means for the producers' acks: the lesson of an acks scenario. */
static void report_led_replicas(struct ks_faults *faults, ks_node_id node)
{
    const struct ks_scenario *s = faults->scenario;
    const struct ks_cluster_spec *spec = faults->spec;
    int32_t shown = 0;
    for (size_t t = 0; t < s->topic_count; t++) {
        for (int32_t p = 0; p < s->topics[t].partition_count; p++) {
            if (ks_cluster_leader(faults->cluster, (int32_t)t, p) != (int32_t)node ||
                shown >= 4) {
                continue;
            }
            struct ks_replica_state leader;
            if (!ks_cluster_replica_state(faults->cluster, (int32_t)node, (int32_t)t, p, &leader)) {
                continue;
            }
            shown++;
            int32_t replicas[KS_REPLICATION_FACTOR_MAX];
            int32_t isr[KS_REPLICATION_FACTOR_MAX];
            int32_t replica_count = ks_cluster_replicas(faults->cluster, (int32_t)t, p, replicas,
                                                        KS_REPLICATION_FACTOR_MAX);
            int32_t isr_count = ks_cluster_isr(faults->cluster, (int32_t)t, p, isr,
                                               KS_REPLICATION_FACTOR_MAX);
            g_string_printf(faults->detail, "%s-%d at the crash: leader %u leo %" PRId64
                            " hw %" PRId64, s->topics[t].name, p, node, leader.leo, leader.hw);
            int64_t follower_leo_max = -1;
            GString *down_in_sync = g_string_new(NULL);
            for (int32_t r = 0; r < replica_count; r++) {
                if (replicas[r] == (int32_t)node) {
                    continue;
                }
                struct ks_replica_state follower;
                if (ks_cluster_replica_state(faults->cluster, replicas[r], (int32_t)t, p,
                                             &follower)) {
                    g_string_append_printf(faults->detail, ", follower %d leo %" PRId64,
                                           replicas[r], follower.leo);
                    if (follower.leo > follower_leo_max) {
                        follower_leo_max = follower.leo;
                    }
                } else {
                    g_string_append_printf(faults->detail, ", follower %d down", replicas[r]);
                    for (int32_t i = 0; i < isr_count; i++) {
                        if (isr[i] == replicas[r]) {
                            g_string_append_printf(down_in_sync, "%s%d",
                                                   down_in_sync->len > 0 ? ", " : "",
                                                   replicas[r]);
                        }
                    }
                }
            }
            g_string_append(faults->detail, " (isr ");
            for (int32_t i = 0; i < isr_count; i++) {
                g_string_append_printf(faults->detail, "%s%d", i > 0 ? "," : "", isr[i]);
            }
            g_string_append(faults->detail, ")");
            /* The producers of this topic, by acks. */
            GString *strong = g_string_new(NULL);
            GString *one = g_string_new(NULL);
            GString *none = g_string_new(NULL);
            for (int32_t i = 0; i < spec->producer_count; i++) {
                const struct ks_producer_config *producer = &spec->producers[i];
                if (producer->topic_index != (int32_t)t) {
                    continue;
                }
                GString *list = producer->acks == KS_ACKS_ALL ? strong
                                : producer->acks == KS_ACKS_LEADER ? one : none;
                g_string_append_printf(list, "%s%s", list->len > 0 ? ", " : "", producer->name);
            }
            GString *text = g_string_new(NULL);
            if (leader.leo <= leader.hw) {
                g_string_append_printf(text, "Every record leader %u holds is below its high "
                                             "watermark, so committed: each was on every "
                                             "in-sync replica when it was committed.", node);
                if (down_in_sync->len > 0) {
                    g_string_append_printf(text, " But in-sync follower %s is down already: if "
                                           "it lost power, it kept only what it had fsynced.",
                                           down_in_sync->str);
                } else {
                    g_string_append(text, " A follower from the ISR can take over without "
                                          "losing any of them.");
                }
            } else {
                g_string_append_printf(text, "Offsets %" PRId64 "..%" PRId64 " are on leader %u "
                                       "but not yet committed (at or above its high watermark "
                                       "%" PRId64 ").", leader.hw, leader.leo - 1, node,
                                       leader.hw);
                if (strong->len > 0) {
                    g_string_append_printf(text, " Producer %s (acks=all) has no answer for "
                                           "them yet and will retry or fail.", strong->str);
                }
                if (one->len > 0) {
                    g_string_append_printf(text, " Producer %s (acks=1) got its answer as soon "
                                           "as the leader appended them.", one->str);
                }
                if (none->len > 0) {
                    g_string_append_printf(text, " Producer %s (acks=0) never waits for an "
                                           "answer: it counted them as sent.", none->str);
                }
                if (follower_leo_max >= 0 && follower_leo_max < leader.leo) {
                    g_string_append_printf(text, " Offsets %" PRId64 "..%" PRId64 " are on no "
                                           "follower yet (a fetch response in flight may still "
                                           "bring some): whatever a new leader lacks is gone%s.",
                                           follower_leo_max, leader.leo - 1,
                                           one->len + none->len > 0 ? ", acknowledged or not"
                                                                    : "");
                }
            }
            report(faults, "replicas", (int32_t)node, (struct ks_tp){ (int32_t)t, p }, text->str);
            g_string_free(text, TRUE);
            g_string_free(down_in_sync, TRUE);
            g_string_free(strong, TRUE);
            g_string_free(one, TRUE);
            g_string_free(none, TRUE);
        }
    }
}

static void crash_nodes(struct ks_faults *faults, struct fault_state *state, bool power,
                        const char *origin)
{
    const struct ks_fault *fault = &faults->scenario->faults[state->index];
    GArray *done = g_array_new(FALSE, FALSE, sizeof(ks_node_id));
    for (guint i = 0; i < state->nodes->len; i++) {
        ks_node_id node = g_array_index(state->nodes, ks_node_id, i);
        char name[96];
        ks_faults_node_name(faults, node, name, sizeof name);
        if (!ks_world_node_is_up(faults->world, node)) {
            g_string_printf(faults->detail, "fault %s: %s is already down, not crashed again",
                            fault->name, name);
            report(faults, "skipped", broker_of(faults, state->nodes), fault_tp(fault), NULL);
            continue;
        }
        if (fault->target.kind == KS_TARGET_BROKER) {
            g_string_printf(faults->detail, "fault %s: crash %s (%s)", fault->name, name,
                            power ? "power loss" : "process crash");
        } else {
            g_string_printf(faults->detail, "fault %s: crash %s (%s, %s)", fault->name, name,
                            origin, power ? "power loss" : "process crash");
        }
        char *explain = crash_explain(faults, node, power);
        report(faults, "fault", node <= (uint32_t)faults->scenario->cluster.broker_count
                                    ? (int32_t)node : -1,
               fault_tp(fault), explain);
        g_free(explain);
        if (node >= 1 && node <= (uint32_t)faults->scenario->cluster.broker_count) {
            report_led_replicas(faults, node);
        }
        ks_world_node_crash(faults->world, node, power);
        ks_cluster_on_node_crashed(faults->cluster, node);
        faults->crash_count[node]++;
        g_array_append_val(done, node);
    }
    /* Only what this fault crashed is restarted by its restart.after. */
    g_array_set_size(state->nodes, 0);
    g_array_append_vals(state->nodes, done->data, done->len);
    g_array_free(done, TRUE);
}

static void restart_node(struct ks_faults *faults, ks_node_id node, const char *why)
{
    char name[96];
    ks_faults_node_name(faults, node, name, sizeof name);
    if (ks_world_node_is_up(faults->world, node)) {
        g_string_printf(faults->detail, "%s: %s is already up", why, name);
        report(faults, "skipped", -1, no_tp, NULL);
        return;
    }
    g_string_printf(faults->detail, "%s: restart %s", why, name);
    report(faults, "restart", node <= (uint32_t)faults->scenario->cluster.broker_count
                                  ? (int32_t)node : -1,
           no_tp,
           "The node starts again. A broker reloads its logs from disk (recovering them "
           "if it stopped uncleanly), registers with the controller, and comes back as a "
           "follower: it must catch up from the leaders before it rejoins the ISR.");
    /* Reported first: the restart causes what the model reports next (recovery). */
    ks_world_node_restart(faults->world, node);
    ks_cluster_on_node_restarted(faults->cluster, node);
    faults->restart_count[node]++;
}

/* ---- undo (duration, restart.after) -------------------------------------------------- */

static void undo_fault(ks_world *world, void *context)
{
    (void)world;
    struct fault_state *state = context;
    struct ks_faults *faults = state->owner;
    const struct ks_fault *fault = &faults->scenario->faults[state->index];
    if (faults->stopped || state->undone) {
        return;
    }
    state->undone = true;
    mix_fault(faults, state, 2);
    switch (fault->action) {
    case KS_FAULT_PARTITION:
        for (guint i = 0; i < state->cuts->len; i++) {
            ks_world_net_heal(faults->world, g_array_index(state->cuts, ks_cut_id, i));
        }
        g_array_set_size(state->cuts, 0);
        g_string_printf(faults->detail, "fault %s ends: network partition healed", fault->name);
        report(faults, "heal", -1, no_tp,
               "The cut links work again; brokers that were cut off reconnect, fetch what "
               "they missed, and can rejoin the ISR.");
        break;
    case KS_FAULT_SLOW:
        for (guint i = 0; i < state->nodes->len; i++) {
            ks_node_id node = g_array_index(state->nodes, ks_node_id, i);
            if (fault->disk_latency_ns > 0) {
                ks_world_disk_set_node_delay(faults->world, node, 0);
            }
            if (fault->network_latency_ns > 0) {
                ks_world_net_set_node_delay(faults->world, node, 0);
            }
        }
        g_string_printf(faults->detail, "fault %s ends: ", fault->name);
        append_nodes(faults, faults->detail, state->nodes);
        g_string_append(faults->detail, " no longer slow");
        report(faults, "heal", broker_of(faults, state->nodes), fault_tp(fault), NULL);
        break;
    case KS_FAULT_PAUSE:
        for (guint i = 0; i < state->nodes->len; i++) {
            ks_node_id node = g_array_index(state->nodes, ks_node_id, i);
            if (ks_world_node_is_up(faults->world, node) &&
                ks_world_node_is_paused(faults->world, node)) {
                ks_world_node_resume(faults->world, node);
            }
        }
        g_string_printf(faults->detail, "fault %s ends: resume ", fault->name);
        append_nodes(faults, faults->detail, state->nodes);
        report(faults, "resume", broker_of(faults, state->nodes), fault_tp(fault),
               "The paused process continues as if no time had passed: it handles the "
               "timers and messages that waited, and only then learns that the cluster "
               "moved on without it (a long garbage-collection pause).");
        break;
    case KS_FAULT_DROP:
        ks_world_net_set_loss_ppm(faults->world, 0);
        g_string_printf(faults->detail, "fault %s ends: no more message loss", fault->name);
        report(faults, "heal", -1, no_tp, NULL);
        break;
    case KS_FAULT_CRASH: {
        char why[128];
        g_snprintf(why, sizeof why, "fault %s restart.after", fault->name);
        for (guint i = 0; i < state->nodes->len; i++) {
            restart_node(faults, g_array_index(state->nodes, ks_node_id, i), why);
        }
        break;
    }
    case KS_FAULT_RESTART:
    case KS_FAULT_HEAL:
    case KS_FAULT_RESUME:
    case KS_FAULT_CORRUPT:
    case KS_FAULT_REWIND:
        break;
    }
}

static void schedule_undo(struct ks_faults *faults, struct fault_state *state, int64_t delay_ns,
                          uint32_t kind)
{
    if (delay_ns < 0) {
        return;
    }
    ks_world_schedule(faults->world, KS_NODE_DRIVER, (ks_time_ns)delay_ns, kind, undo_fault, state);
}

/* ---- network actions --------------------------------------------------------------------- */

static void all_nodes_except(const struct ks_faults *faults, const GArray *except, GArray *out)
{
    for (ks_node_id node = 1; node < faults->node_count; node++) {
        bool excluded = false;
        for (guint i = 0; i < except->len && !excluded; i++) {
            excluded = g_array_index(except, ks_node_id, i) == node;
        }
        if (!excluded) {
            g_array_append_val(out, node);
        }
    }
}

/* ---- what a network cut means ----------------------------------------------------------- */

static bool in_nodes(const GArray *nodes, ks_node_id node)
{
    for (guint i = 0; i < nodes->len; i++) {
        if (g_array_index(nodes, ks_node_id, i) == node) {
            return true;
        }
    }
    return false;
}

/* Whether messages from `from` still reach `to` across the cut a | b. */
static bool cut_passes(const GArray *a, const GArray *b, bool one_way, ks_node_id from,
                       ks_node_id to)
{
    if (in_nodes(a, from) && in_nodes(b, to)) {
        return false;
    }
    return one_way || !(in_nodes(b, from) && in_nodes(a, to));
}

static bool cut_talks(const GArray *a, const GArray *b, bool one_way, ks_node_id x, ks_node_id y)
{
    return cut_passes(a, b, one_way, x, y) && cut_passes(a, b, one_way, y, x);
}

static void append_id_list(GString *out, const int32_t *ids, int32_t count)
{
    for (int32_t i = 0; i < count; i++) {
        g_string_append_printf(out, "%s%d", i > 0 ? ", " : "", ids[i]);
    }
}

/* Describes the actual cut: where the controller is, and for each partition
 * it splits, what its leader can still do. Owned: g_free. */
static char *partition_explain(const struct ks_faults *faults, const GArray *a, const GArray *b,
                               bool one_way)
{
    const struct ks_scenario *s = faults->scenario;
    const struct ks_cluster_spec *spec = faults->spec;
    ks_node_id controller = ks_cluster_controller_node(spec);
    GString *text = g_string_new(one_way ? "Messages in that direction are lost; the other "
                                           "direction still works, but a request whose answer "
                                           "is lost fails all the same. "
                                         : "Messages across the cut are lost; each side keeps "
                                           "running with what it knows. ");
    if (in_nodes(a, controller) || in_nodes(b, controller)) {
        g_string_append_printf(text, "The controller is in the %s group. ",
                               in_nodes(a, controller) ? "first" : "second");
    } else {
        g_string_append(text, "The controller is on neither side and still hears from every "
                              "broker. ");
    }
    int32_t described = 0;
    int32_t skipped = 0;
    for (size_t t = 0; t < s->topic_count; t++) {
        for (int32_t p = 0; p < s->topics[t].partition_count; p++) {
            int32_t leader = ks_cluster_leader(faults->cluster, (int32_t)t, p);
            if (leader < 1) {
                continue;
            }
            int32_t replicas[KS_REPLICATION_FACTOR_MAX];
            int32_t isr[KS_REPLICATION_FACTOR_MAX];
            int32_t replica_count = ks_cluster_replicas(faults->cluster, (int32_t)t, p, replicas,
                                                        KS_REPLICATION_FACTOR_MAX);
            int32_t isr_count = ks_cluster_isr(faults->cluster, (int32_t)t, p, isr,
                                               KS_REPLICATION_FACTOR_MAX);
            bool leader_ok = cut_talks(a, b, one_way, (ks_node_id)leader, controller);
            int32_t cut[KS_REPLICATION_FACTOR_MAX];
            int32_t cut_count = 0;
            int32_t cut_in_sync = 0;
            for (int32_t r = 0; r < replica_count; r++) {
                if (replicas[r] != leader &&
                    !cut_talks(a, b, one_way, (ks_node_id)replicas[r], (ks_node_id)leader)) {
                    cut[cut_count++] = replicas[r];
                    for (int32_t i = 0; i < isr_count; i++) {
                        cut_in_sync += isr[i] == replicas[r];
                    }
                }
            }
            GString *blocked = g_string_new(NULL);
            GString *unanswered = g_string_new(NULL);
            GString *writing = g_string_new(NULL);
            bool writing_weak = false; /* a producer that still reaches it uses acks=1 or 0 */
            for (int32_t i = 0; i < spec->producer_count; i++) {
                if (spec->producers[i].topic_index != (int32_t)t) {
                    continue;
                }
                ks_node_id node = ks_cluster_producer_node(spec, i);
                bool request = cut_passes(a, b, one_way, node, (ks_node_id)leader);
                bool answer = cut_passes(a, b, one_way, (ks_node_id)leader, node);
                GString *list = request && answer ? writing : request ? unanswered : blocked;
                writing_weak = writing_weak ||
                               (request && answer && spec->producers[i].acks != KS_ACKS_ALL);
                g_string_append_printf(list, "%s%s", list->len > 0 ? ", " : "",
                                       spec->producers[i].name);
            }
            bool affected = !leader_ok || cut_count > 0 || blocked->len > 0 ||
                            unanswered->len > 0;
            if (affected && described >= 3) {
                skipped++;
            } else if (affected) {
                described++;
                g_string_append_printf(text, "For %s-%d, leader %d %s the controller", s->topics[t].name,
                                       p, leader, leader_ok ? "still reaches" : "is cut off from");
                if (cut_count > 0) {
                    g_string_append(text, ", and follower");
                    g_string_append(text, cut_count > 1 ? "s " : " ");
                    append_id_list(text, cut, cut_count);
                    g_string_append(text, " can no longer fetch from it");
                }
                g_string_append(text, ". ");
                if (leader_ok && cut_in_sync > 0) {
                    g_string_append_printf(text, "Writes with acks=all wait for the cut "
                                           "followers until, after replica.lag.time.max.ms, "
                                           "leader %d has the controller drop them from the "
                                           "ISR. ", leader);
                } else if (!leader_ok) {
                    int32_t others[KS_REPLICATION_FACTOR_MAX];
                    int32_t other_count = 0;
                    for (int32_t i = 0; i < isr_count; i++) {
                        if (isr[i] != leader &&
                            cut_talks(a, b, one_way, (ks_node_id)isr[i], controller)) {
                            others[other_count++] = isr[i];
                        }
                    }
                    if (cut_in_sync > 0) {
                        g_string_append(text, "It cannot shrink its ISR, so writes with acks=all "
                                              "to it wait and time out. ");
                    }
                    g_string_append(text, "After broker.session.timeout.ms the controller "
                                          "fences it and ");
                    if (other_count > 0) {
                        g_string_append(text, "elects a new leader from the ISR members it "
                                              "still hears from (");
                        append_id_list(text, others, other_count);
                        g_string_append(text, "). ");
                    } else {
                        g_string_append(text, s->topics[t].unclean_leader_election_enable
                                                  ? "finds no other ISR member it hears from: "
                                                    "unclean election is enabled, so an "
                                                    "out-of-sync replica may take over. "
                                                  : "finds no other ISR member it hears from, "
                                                    "so the partition goes offline. ");
                    }
                    if (writing->len > 0 && cut_in_sync > 0) {
                        g_string_append_printf(text, "Producer %s still writes to leader %d, "
                                               "but with in-sync followers cut off nothing it "
                                               "takes from now on can be committed, and all of "
                                               "it is truncated when it rejoins the new "
                                               "leader%s. ", writing->str, leader,
                                               writing_weak ? " (acks=1 and acks=0 writes "
                                               "among it count as written all the same)" : "");
                    } else if (writing->len > 0) {
                        g_string_append_printf(text, "Producer %s still writes to leader %d, "
                                               "which, alone in its ISR, commits those writes "
                                               "by itself: a leader elected without them "
                                               "loses them. ", writing->str, leader);
                    }
                }
                if (blocked->len > 0) {
                    g_string_append_printf(text, "Producer %s can no longer reach leader %d. ",
                                           blocked->str, leader);
                }
                if (unanswered->len > 0) {
                    g_string_append_printf(text, "Producer %s still reaches leader %d, which "
                                           "writes what it sends, but the answers are lost: "
                                           "the producer times out and sends again. ",
                                           unanswered->str, leader);
                }
            }
            g_string_free(blocked, TRUE);
            g_string_free(unanswered, TRUE);
            g_string_free(writing, TRUE);
        }
    }
    if (skipped > 0) {
        g_string_append_printf(text, "(%d more partition(s) are split likewise.) ", skipped);
    }
    GString *fenced = g_string_new(NULL);
    for (int32_t id = 1; id <= s->cluster.broker_count; id++) {
        bool leads = false;
        for (size_t t = 0; t < s->topic_count && !leads; t++) {
            for (int32_t p = 0; p < s->topics[t].partition_count && !leads; p++) {
                leads = ks_cluster_leader(faults->cluster, (int32_t)t, p) == id;
            }
        }
        if (!leads && !cut_talks(a, b, one_way, (ks_node_id)id, controller)) {
            g_string_append_printf(fenced, "%s%d", fenced->len > 0 ? ", " : "", id);
        }
    }
    if (fenced->len > 0) {
        g_string_append_printf(text, "Broker %s cannot reach the controller either: after "
                               "broker.session.timeout.ms it is fenced and dropped from the "
                               "ISRs. ", fenced->str);
    }
    bool any_fenced = fenced->len > 0;
    g_string_free(fenced, TRUE);
    if (described == 0 && !any_fenced) {
        g_string_append(text, "No partition leader is cut off from its followers, its "
                              "producers or the controller.");
    }
    while (text->len > 0 && text->str[text->len - 1] == ' ') {
        g_string_truncate(text, text->len - 1);
    }
    return g_string_free(text, FALSE);
}

static void apply_partition(struct ks_faults *faults, struct fault_state *state, GString *why)
{
    const struct ks_fault *fault = &faults->scenario->faults[state->index];
    GArray *a = g_array_new(FALSE, FALSE, sizeof(ks_node_id));
    GArray *b = g_array_new(FALSE, FALSE, sizeof(ks_node_id));
    bool ok = resolve_list(faults, &fault->side_a, a, why);
    if (ok && fault->net_shape == KS_NET_ISOLATE) {
        all_nodes_except(faults, a, b);
    } else if (ok) {
        ok = resolve_list(faults, &fault->side_b, b, why);
    }
    if (!ok || b->len == 0) {
        g_string_printf(faults->detail, "fault %s skipped: %s", fault->name,
                        why->len > 0 ? why->str : "a side names no node");
        report(faults, "skipped", -1, no_tp, NULL);
    } else {
        if (fault->net_shape == KS_NET_ONE_WAY) {
            for (guint i = 0; i < a->len; i++) {
                for (guint j = 0; j < b->len; j++) {
                    ks_cut_id cut = ks_world_net_cut_one_way(faults->world,
                                                             g_array_index(a, ks_node_id, i),
                                                             g_array_index(b, ks_node_id, j));
                    g_array_append_val(state->cuts, cut);
                }
            }
        } else {
            ks_cut_id cut = ks_world_net_partition(faults->world, (const ks_node_id *)a->data,
                                                   a->len, (const ks_node_id *)b->data, b->len);
            g_array_append_val(state->cuts, cut);
        }
        g_array_append_vals(state->nodes, a->data, a->len);
        g_array_append_vals(state->nodes, b->data, b->len);
        mix_fault(faults, state, 1);
        g_string_printf(faults->detail, "fault %s: %s ", fault->name,
                        fault->net_shape == KS_NET_ONE_WAY ? "cut messages from" : "partition");
        append_nodes(faults, faults->detail, a);
        g_string_append(faults->detail, fault->net_shape == KS_NET_ONE_WAY ? " to " : " | ");
        if (fault->net_shape == KS_NET_ISOLATE) {
            g_string_append(faults->detail, "everyone else");
        } else {
            append_nodes(faults, faults->detail, b);
        }
        char *explain = partition_explain(faults, a, b, fault->net_shape == KS_NET_ONE_WAY);
        report(faults, "fault", broker_of(faults, a), no_tp, explain);
        g_free(explain);
        schedule_undo(faults, state, fault->duration_ns, KS_KIND_DRIVER_UNDO);
    }
    g_array_free(a, TRUE);
    g_array_free(b, TRUE);
}

static void apply_heal(struct ks_faults *faults, struct fault_state *state)
{
    const struct ks_fault *fault = &faults->scenario->faults[state->index];
    mix_fault(faults, state, 1);
    if (fault->heal_fault_index >= 0) {
        struct fault_state *other = &faults->states[fault->heal_fault_index];
        for (guint i = 0; i < other->cuts->len; i++) {
            ks_world_net_heal(faults->world, g_array_index(other->cuts, ks_cut_id, i));
        }
        g_array_set_size(other->cuts, 0);
        other->undone = true;
        g_string_printf(faults->detail, "fault %s: heal %s", fault->name,
                        faults->scenario->faults[fault->heal_fault_index].name);
    } else {
        ks_world_net_heal_all(faults->world);
        ks_world_net_set_loss_ppm(faults->world, 0);
        for (size_t i = 0; i < faults->state_count; i++) {
            struct fault_state *other = &faults->states[i];
            enum ks_fault_action action = faults->scenario->faults[i].action;
            if (other->cuts->len > 0 || (action == KS_FAULT_DROP && other->fired)) {
                other->undone = true; /* its duration has nothing left to end */
            }
            g_array_set_size(other->cuts, 0);
        }
        g_string_printf(faults->detail, "fault %s: heal every network fault", fault->name);
    }
    report(faults, "heal", -1, no_tp,
           "The network is whole again; cut-off brokers reconnect and catch up.");
}

/* ---- corrupt ------------------------------------------------------------------------------- */

static int64_t read_be(const uint8_t *bytes, size_t count)
{
    uint64_t value = 0;
    for (size_t i = 0; i < count; i++) {
        value = (value << 8) | bytes[i];
    }
    return (int64_t)value;
}

/* Start of the last complete-looking batch of a segment file, or -1. */
static int64_t last_batch_position(ks_file *file)
{
    int64_t size = ks_disk_size(file);
    int64_t position = 0;
    int64_t last = -1;
    while (position + KS_BATCH_LOG_OVERHEAD_BYTES <= size) {
        uint8_t header[KS_BATCH_LOG_OVERHEAD_BYTES];
        size_t got = 0;
        if (ks_disk_read(file, header, sizeof header, position, &got) != KS_IO_OK ||
            got != sizeof header) {
            break;
        }
        int64_t length = read_be(header + 8, 4);
        if (length <= 0 || position + KS_BATCH_LOG_OVERHEAD_BYTES + length > size) {
            break;
        }
        last = position;
        position += KS_BATCH_LOG_OVERHEAD_BYTES + length;
    }
    return last;
}

static void apply_corrupt(struct ks_faults *faults, struct fault_state *state)
{
    const struct ks_fault *fault = &faults->scenario->faults[state->index];
    const struct ks_topic_config *topic = &faults->scenario->topics[fault->corrupt_tp.topic_index];
    for (guint n = 0; n < state->nodes->len; n++) {
        ks_node_id node = g_array_index(state->nodes, ks_node_id, n);
        char *dir = g_strdup_printf("broker-%u/%s-%d", node, topic->name, fault->corrupt_tp.partition);
        char **names = ks_disk_list(faults->world, node, dir);
        const char *segment = NULL;
        for (size_t i = 0; names != NULL && names[i] != NULL; i++) {
            if (g_str_has_suffix(names[i], ".log")) {
                segment = names[i]; /* sorted: the last one is the active segment */
            }
        }
        char *path = segment != NULL ? g_strdup_printf("%s/%s", dir, segment) : NULL;
        ks_file *file = path != NULL ? ks_disk_open(faults->world, node, path, 0, NULL) : NULL;
        int64_t position = fault->corrupt_position_bytes;
        int64_t size = file != NULL ? ks_disk_size(file) : 0;
        if (file != NULL && position < 0) {
            int64_t last = last_batch_position(file);
            if (last >= 0) {
                position = last + (int64_t)ks_world_random_below(faults->world, KS_RNG_FAULT,
                                                                 (uint64_t)(size - last));
            }
        }
        if (file == NULL || position < 0 || position + fault->corrupt_bytes > size) {
            g_string_printf(faults->detail, "fault %s skipped: no segment bytes to corrupt in %s",
                            fault->name, dir);
            report(faults, "skipped", (int32_t)node, fault->corrupt_tp, NULL);
        } else {
            ks_world_disk_corrupt(faults->world, node, path, position,
                                  (size_t)fault->corrupt_bytes);
            g_string_printf(faults->detail,
                            "fault %s: corrupt %d byte(s) of %s at position %" PRId64,
                            fault->name, fault->corrupt_bytes, path, position);
            report(faults, "fault", (int32_t)node, fault->corrupt_tp,
                   "Bytes on the disk change behind the broker's back. The batch's CRC no "
                   "longer matches: a reader or log recovery detects it and must not serve "
                   "the damaged records.");
        }
        ks_disk_close(file);
        g_free(path);
        ks_disk_list_free(names);
        g_free(dir);
    }
}

/* The driver passes enum ks_rewind_to to the consumer as it is. */
_Static_assert((int)KS_REWIND_EARLIEST == KS_CONSUMER_REWIND_EARLIEST &&
                   (int)KS_REWIND_LATEST == KS_CONSUMER_REWIND_LATEST &&
                   (int)KS_REWIND_OFFSET == KS_CONSUMER_REWIND_OFFSET &&
                   (int)KS_REWIND_TIME == KS_CONSUMER_REWIND_TIME,
               "enum ks_rewind_to and enum ks_consumer_rewind_kind must agree");

static void apply_rewind(struct ks_faults *faults, struct fault_state *state)
{
    const struct ks_fault *fault = &faults->scenario->faults[state->index];
    ks_assert(fault->target.kind == KS_TARGET_CONSUMER && state->nodes->len == 1);
    ks_node_id node = g_array_index(state->nodes, ks_node_id, 0);
    char name[96];
    ks_faults_node_name(faults, node, name, sizeof name);
    if (!ks_world_node_is_up(faults->world, node)) {
        g_string_printf(faults->detail, "fault %s skipped: %s is down, nothing to rewind",
                        fault->name, name);
        report(faults, "skipped", -1, no_tp, NULL);
        return;
    }
    int64_t value = 0;
    g_string_printf(faults->detail, "fault %s: rewind %s to ", fault->name, name);
    switch (fault->rewind_to) {
    case KS_REWIND_EARLIEST:
        g_string_append(faults->detail, "earliest");
        break;
    case KS_REWIND_LATEST:
        g_string_append(faults->detail, "latest");
        break;
    case KS_REWIND_OFFSET:
        value = fault->rewind_offset;
        g_string_append_printf(faults->detail, "offset %" PRId64, value);
        break;
    case KS_REWIND_TIME:
        value = fault->rewind_time_ns;
        g_string_append_printf(faults->detail, "time %.3fs", (double)value / 1e9);
        break;
    }
    report(faults, "fault", -1, no_tp,
           "The application seeks its consumer (KafkaConsumer#seek): at its next poll every "
           "partition it is assigned moves to the new position, which it then commits. "
           "Moving back re-processes records the group already processed; moving forward "
           "skips records.");
    ks_cluster_consumer_rewind(faults->cluster, fault->target.client_index,
                               (int)fault->rewind_to, value);
}

/* ---- firing -------------------------------------------------------------------------------- */

static void apply_slow(struct ks_faults *faults, struct fault_state *state)
{
    const struct ks_fault *fault = &faults->scenario->faults[state->index];
    for (guint i = 0; i < state->nodes->len; i++) {
        ks_node_id node = g_array_index(state->nodes, ks_node_id, i);
        if (fault->disk_latency_ns > 0) {
            ks_world_disk_set_node_delay(faults->world, node, (ks_time_ns)fault->disk_latency_ns);
        }
        if (fault->network_latency_ns > 0) {
            ks_world_net_set_node_delay(faults->world, node, (ks_time_ns)fault->network_latency_ns);
        }
        faults->slowed[node] = true;
    }
    g_string_printf(faults->detail, "fault %s: slow ", fault->name);
    append_nodes(faults, faults->detail, state->nodes);
    if (fault->disk_latency_ns > 0) {
        g_string_append_printf(faults->detail, ", disk +%.3fms", (double)fault->disk_latency_ns / 1e6);
    }
    if (fault->network_latency_ns > 0) {
        g_string_append_printf(faults->detail, ", network +%.3fms",
                               (double)fault->network_latency_ns / 1e6);
    }
    report(faults, "fault", broker_of(faults, state->nodes), fault_tp(fault),
           "Everything the node does takes longer. A slow follower fetches less often; "
           "once it has not caught up for replica.lag.time.max.ms the leader drops it "
           "from the ISR.");
    schedule_undo(faults, state, fault->duration_ns, KS_KIND_DRIVER_UNDO);
}

static void apply_pause(struct ks_faults *faults, struct fault_state *state, bool pause)
{
    const struct ks_fault *fault = &faults->scenario->faults[state->index];
    for (guint i = 0; i < state->nodes->len; i++) {
        ks_node_id node = g_array_index(state->nodes, ks_node_id, i);
        if (!ks_world_node_is_up(faults->world, node)) {
            continue;
        }
        if (pause && !ks_world_node_is_paused(faults->world, node)) {
            ks_world_node_pause(faults->world, node);
        } else if (!pause && ks_world_node_is_paused(faults->world, node)) {
            ks_world_node_resume(faults->world, node);
        }
    }
    g_string_printf(faults->detail, "fault %s: %s ", fault->name, pause ? "pause" : "resume");
    append_nodes(faults, faults->detail, state->nodes);
    report(faults, pause ? "fault" : "resume", broker_of(faults, state->nodes), fault_tp(fault),
           pause ? "The process freezes (think of a long garbage-collection pause): it "
                   "handles no timer and no message, but it does not know it stopped. "
                   "The controller sees missed heartbeats; followers see a silent leader."
                 : "The paused process continues and handles everything that waited.");
    if (pause) {
        schedule_undo(faults, state, fault->duration_ns, KS_KIND_DRIVER_UNDO);
    }
}

static void fire(struct ks_faults *faults, struct fault_state *state)
{
    const struct ks_fault *fault = &faults->scenario->faults[state->index];
    if (faults->stopped || state->fired) {
        return;
    }
    state->fired = true; /* F1 */
    GString *why = g_string_new(NULL);
    bool needs_target = fault->action == KS_FAULT_CRASH || fault->action == KS_FAULT_RESTART ||
                        fault->action == KS_FAULT_SLOW || fault->action == KS_FAULT_PAUSE ||
                        fault->action == KS_FAULT_RESUME || fault->action == KS_FAULT_CORRUPT ||
                        fault->action == KS_FAULT_REWIND;
    if (needs_target && !resolve_target(faults, &fault->target, state->nodes, why)) {
        g_string_printf(faults->detail, "fault %s skipped: %s", fault->name, why->str);
        report(faults, "skipped", -1, fault_tp(fault), NULL);
        mix_fault(faults, state, 0);
        g_string_free(why, TRUE);
        return;
    }
    char *origin = ks_scenario_format_target(faults->scenario, &fault->target);
    if (fault->action != KS_FAULT_PARTITION) {
        mix_fault(faults, state, 1);
    }
    switch (fault->action) {
    case KS_FAULT_CRASH:
        crash_nodes(faults, state, fault->mode == KS_CRASH_POWER, origin);
        schedule_undo(faults, state, fault->restart_after_ns, KS_KIND_DRIVER_RESTART);
        break;
    case KS_FAULT_RESTART: {
        char label[128];
        g_snprintf(label, sizeof label, "fault %s", fault->name);
        for (guint i = 0; i < state->nodes->len; i++) {
            restart_node(faults, g_array_index(state->nodes, ks_node_id, i), label);
        }
        break;
    }
    case KS_FAULT_PARTITION:
        apply_partition(faults, state, why);
        break;
    case KS_FAULT_HEAL:
        apply_heal(faults, state);
        break;
    case KS_FAULT_SLOW:
        apply_slow(faults, state);
        break;
    case KS_FAULT_PAUSE:
        apply_pause(faults, state, true);
        break;
    case KS_FAULT_RESUME:
        apply_pause(faults, state, false);
        break;
    case KS_FAULT_DROP:
        ks_world_net_set_loss_ppm(faults->world, fault->loss_ppm);
        g_string_printf(faults->detail, "fault %s: drop %.4f%% of all messages", fault->name,
                        (double)fault->loss_ppm / 1e4);
        report(faults, "fault", -1, no_tp,
               "Messages are lost at random. Requests time out and are retried; a producer "
               "that retries without idempotence can write a record twice.");
        schedule_undo(faults, state, fault->duration_ns, KS_KIND_DRIVER_UNDO);
        break;
    case KS_FAULT_CORRUPT:
        apply_corrupt(faults, state);
        break;
    case KS_FAULT_REWIND:
        apply_rewind(faults, state);
        break;
    }
    g_free(origin);
    g_string_free(why, TRUE);
}

static void on_fault_timer(ks_world *world, void *context)
{
    (void)world;
    struct fault_state *state = context;
    fire(state->owner, state);
}

/* ---- triggers ------------------------------------------------------------------------------ */

static int64_t *election_slot(struct ks_faults *faults, struct ks_tp tp)
{
    if (tp.topic_index < 0 || (size_t)tp.topic_index >= faults->scenario->topic_count ||
        tp.partition < 0 ||
        tp.partition >= faults->scenario->topics[tp.topic_index].partition_count) {
        return NULL;
    }
    return &faults->elections[faults->tp_base[tp.topic_index] + tp.partition];
}

static int64_t trigger_value(struct ks_faults *faults, const struct ks_trigger *trigger)
{
    struct ks_replica_state replica;
    switch (trigger->fn) {
    case KS_TRIGGER_HW:
    case KS_TRIGGER_LEO:
        if (!ks_cluster_replica_state(faults->cluster, trigger->broker_id, trigger->tp.topic_index,
                                      trigger->tp.partition, &replica)) {
            return -1;
        }
        return trigger->fn == KS_TRIGGER_HW ? replica.hw : replica.leo;
    case KS_TRIGGER_ISR_SIZE: {
        int32_t isr[KS_REPLICATION_FACTOR_MAX];
        return ks_cluster_isr(faults->cluster, trigger->tp.topic_index, trigger->tp.partition, isr,
                              KS_REPLICATION_FACTOR_MAX);
    }
    case KS_TRIGGER_CRASHED:
        return (uint32_t)trigger->broker_id < faults->node_count
                   ? faults->crash_count[trigger->broker_id] : 0;
    case KS_TRIGGER_RESTARTED:
        return (uint32_t)trigger->broker_id < faults->node_count
                   ? faults->restart_count[trigger->broker_id] : 0;
    case KS_TRIGGER_ELECTED: {
        int64_t *slot = election_slot(faults, trigger->tp);
        return slot != NULL ? *slot : 0;
    }
    case KS_TRIGGER_ACKED:
        return ks_cluster_producer_acked_count(faults->cluster, trigger->producer_index);
    }
    return 0;
}

void ks_faults_after_event(struct ks_faults *faults)
{
    if (faults->stopped || faults->pending_trigger_count == 0) {
        return;
    }
    for (size_t i = 0; i < faults->state_count; i++) {
        struct fault_state *state = &faults->states[i];
        const struct ks_fault *fault = &faults->scenario->faults[i];
        if (!fault->has_when || state->triggered || faults->stopped) {
            continue;
        }
        int64_t value = trigger_value(faults, &fault->when);
        if (!ks_compare(fault->when.op, (double)value, (double)fault->when.value)) {
            continue;
        }
        /* A trigger fires once (F1): with a delay the fault fires later, and
         * until then its condition must not count it again. */
        state->triggered = true;
        ks_assert(faults->pending_trigger_count > 0); /* F1 */
        faults->pending_trigger_count--;
        char *text = ks_scenario_format_trigger(faults->scenario, &fault->when);
        g_string_printf(faults->detail, "trigger of fault %s holds: %s (value %" PRId64 ")",
                        fault->name, text, value);
        g_free(text);
        report(faults, "trigger", -1, no_tp,
               "A trigger fires a fault when the cluster reaches a state rather than at a "
               "time, so the scenario hits the same narrow window in every run.");
        if (fault->delay_ns > 0) {
            ks_world_schedule(faults->world, KS_NODE_DRIVER, (ks_time_ns)fault->delay_ns,
                              KS_KIND_DRIVER_FAULT, on_fault_timer, state);
        } else {
            fire(faults, state);
        }
    }
}

void ks_faults_on_cluster_event(struct ks_faults *faults, const struct ks_cluster_event *event)
{
    if (event->kind != KS_EV_LEADER_ELECTED && event->kind != KS_EV_UNCLEAN_ELECTION) {
        return;
    }
    struct ks_tp tp = { event->topic_index, event->partition };
    int64_t *slot = election_slot(faults, tp);
    if (slot != NULL) {
        (*slot)++;
    }
}

/* ---- life ------------------------------------------------------------------------------------ */

struct ks_faults *ks_faults_new(ks_world *world, struct ks_cluster *cluster,
                                const struct ks_scenario *scenario,
                                const struct ks_cluster_spec *spec, ks_fault_report_fn *report_fn,
                                void *report_context)
{
    struct ks_faults *faults = g_new0(struct ks_faults, 1);
    faults->world = world;
    faults->cluster = cluster;
    faults->scenario = scenario;
    faults->spec = spec;
    faults->report = report_fn;
    faults->report_context = report_context;
    faults->node_count = ks_cluster_node_count(spec);
    faults->crash_count = g_new0(int64_t, faults->node_count);
    faults->restart_count = g_new0(int64_t, faults->node_count);
    faults->slowed = g_new0(bool, faults->node_count);
    faults->tp_base = g_new0(int32_t, scenario->topic_count + 1);
    int32_t total = 0;
    for (size_t t = 0; t < scenario->topic_count; t++) {
        faults->tp_base[t] = total;
        total += scenario->topics[t].partition_count;
    }
    faults->elections = g_new0(int64_t, (size_t)total + 1);
    faults->state_count = scenario->fault_count;
    faults->states = g_new0(struct fault_state, scenario->fault_count + 1);
    for (size_t i = 0; i < scenario->fault_count; i++) {
        struct fault_state *state = &faults->states[i];
        state->owner = faults;
        state->index = (int32_t)i;
        state->nodes = g_array_new(FALSE, FALSE, sizeof(ks_node_id));
        state->cuts = g_array_new(FALSE, FALSE, sizeof(ks_cut_id));
    }
    faults->detail = g_string_new(NULL);
    return faults;
}

void ks_faults_free(struct ks_faults *faults)
{
    if (faults == NULL) {
        return;
    }
    for (size_t i = 0; i < faults->state_count; i++) {
        g_array_free(faults->states[i].nodes, TRUE);
        g_array_free(faults->states[i].cuts, TRUE);
    }
    g_free(faults->states);
    g_free(faults->crash_count);
    g_free(faults->restart_count);
    g_free(faults->slowed);
    g_free(faults->tp_base);
    g_free(faults->elections);
    g_string_free(faults->detail, TRUE);
    g_free(faults);
}

void ks_faults_start(struct ks_faults *faults)
{
    for (size_t i = 0; i < faults->state_count; i++) {
        const struct ks_fault *fault = &faults->scenario->faults[i];
        if (fault->has_at) {
            ks_time_ns now = ks_world_now_ns(faults->world);
            ks_time_ns at = fault->at_ns > 0 ? (ks_time_ns)fault->at_ns : 0;
            ks_world_schedule(faults->world, KS_NODE_DRIVER, at > now ? at - now : 0,
                              KS_KIND_DRIVER_FAULT, on_fault_timer, &faults->states[i]);
        } else if (fault->has_when) {
            faults->pending_trigger_count++;
        }
    }
}

void ks_faults_stop(struct ks_faults *faults)
{
    faults->stopped = true;
}

void ks_faults_heal_everything(struct ks_faults *faults)
{
    ks_world *world = faults->world;
    faults->stopped = true;
    ks_world_net_heal_all(world);
    ks_world_net_set_loss_ppm(world, 0);
    for (size_t i = 0; i < faults->state_count; i++) {
        g_array_set_size(faults->states[i].cuts, 0);
    }
    g_string_assign(faults->detail, "final phase: producers stop, the network heals");
    report(faults, "final", -1, no_tp,
           "The scenario's time is up. ksim now repairs everything (network, slow disks, "
           "paused and crashed nodes) and lets the replicas converge, so that the final "
           "read shows what Kafka kept.");
    for (ks_node_id node = 1; node < faults->node_count; node++) {
        if (faults->slowed[node]) {
            ks_world_disk_set_node_delay(world, node, 0);
            ks_world_net_set_node_delay(world, node, 0);
            faults->slowed[node] = false;
        }
        if (ks_world_node_is_up(world, node) && ks_world_node_is_paused(world, node)) {
            ks_world_node_resume(world, node);
            char name[96];
            ks_faults_node_name(faults, node, name, sizeof name);
            g_string_printf(faults->detail, "final phase: resume %s", name);
            report(faults, "resume", node <= (uint32_t)faults->scenario->cluster.broker_count
                                         ? (int32_t)node : -1,
                   no_tp, NULL);
        }
    }
    for (ks_node_id node = 1; node < faults->node_count; node++) {
        if (!ks_world_node_is_up(world, node)) {
            restart_node(faults, node, "final phase");
        }
    }
}
