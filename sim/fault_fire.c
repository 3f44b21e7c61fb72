/*
** sim/fault_fire.c: what each fault action does to the running world and
** cluster when it fires, and how that is undone (the fire and undo functions
** that the rows of sim/fault_actions.c name), with the timeline line each
** reports and, for --explain, what it means for Kafka.
**
** Every function here runs in a driver event (node 0). The generic part in
** sim/faults.c has already marked the fault fired (F1) and, for an action
** that takes a `target`, resolved it into state->nodes and mixed the fault
** into the trace hash (F2); an action without a target mixes itself when it
** applies. A fire function returns whether it took effect; one that changes
** nothing reports itself skipped (ks__faults_skip). Rules F3 and F4 of
** sim/faults.c hold here too: a crash or restart goes to the world first and
** then to the model, and the driver is never a target.
**
** Simplification (docs/model.md): faults on one node do not add up, except
** network cuts, which the world counts. A slow fault sets the node's delay
** and its undo clears it, a pause's undo resumes the node, a drop sets the
** one loss rate and its undo clears it, whatever another fault of the same
** kind still holds there.
*/
#include "faults_int.h"
#include "scenario_int.h"

#include "../core/base.h"
#include "../core/consumer.h"
#include "../core/log.h"

#include <inttypes.h>
#include <string.h>

/* ---- crash, restart ------------------------------------------------------------------- */

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
        bool zookeeper = faults->spec->cluster->controller_model == KS_CONTROLLER_MODEL_ZOOKEEPER;
        bool controller_node = node >= ks_cluster_controller_node(faults->spec) &&
                               (int32_t)(node - ks_cluster_controller_node(faults->spec)) <
                                   (zookeeper ? 1 : faults->spec->cluster->controller_count);
        g_string_append(text, !controller_node
                                  ? " A client loses what it held in memory: records it had "
                                    "not yet sent, or had not yet processed and committed."
                              : zookeeper ? " ZooKeeper answers nothing until it is back: no "
                                            "session is kept alive and no ISR changes, but its "
                                            "znodes and sessions are on its disk."
                              : faults->spec->cluster->controller_count > 1
                                  ? " If it is the active controller, the other controllers "
                                    "notice when its fetches stop (controller.quorum.fetch."
                                    "timeout.ms) and elect a new one, which continues from the "
                                    "committed metadata log."
                                  : " The controller stops watching sessions and "
                                    "electing leaders until it is back; with one "
                                    "controller (controllers = 1) no other takes over.");
        return g_string_free(text, FALSE);
    }
    GString *led = g_string_new(NULL);
    int32_t led_count = 0;
    int32_t orphaned = 0; /* led partitions with no other live ISR member */
    for (size_t t = 0; t < s->topic_count; t++) {
        for (int32_t p = 0; p < s->topics[t].partition_count; p++) {
            if (ks_cluster_leader(faults->cluster, (int32_t)t, p) == (int32_t)node) {
                int32_t isr[KS_REPLICATION_FACTOR_MAX];
                int32_t isr_count =
                    ks_cluster_isr(faults->cluster, (int32_t)t, p, isr, KS_REPLICATION_FACTOR_MAX);
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
        g_string_append_printf(
            text,
            " It leads %s%s: until the controller misses its heartbeats "
            "(broker.session.timeout.ms) it stays leader on paper, and "
            "writes to %s wait or fail. %s",
            led->str, led_count > 4 ? " and more" : "", led_count > 1 ? "them" : "it",
            orphaned == 0           ? "Then a live replica from the ISR takes over."
            : orphaned == led_count ? "No other ISR member is alive: there is no clean "
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
            if (ks_cluster_leader(faults->cluster, (int32_t)t, p) != (int32_t)node || shown >= 4) {
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
            int32_t isr_count =
                ks_cluster_isr(faults->cluster, (int32_t)t, p, isr, KS_REPLICATION_FACTOR_MAX);
            g_string_printf(faults->detail,
                            "%s-%d at the crash: leader %u leo %" PRId64 " hw %" PRId64,
                            s->topics[t].name, p, node, leader.leo, leader.hw);
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
                                                   down_in_sync->len > 0 ? ", " : "", replicas[r]);
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
                GString *list = producer->acks == KS_ACKS_ALL      ? strong
                                : producer->acks == KS_ACKS_LEADER ? one
                                                                   : none;
                g_string_append_printf(list, "%s%s", list->len > 0 ? ", " : "", producer->name);
            }
            GString *text = g_string_new(NULL);
            if (leader.leo <= leader.hw) {
                g_string_append_printf(text,
                                       "Every record leader %u holds is below its high "
                                       "watermark, so committed: each was on every "
                                       "in-sync replica when it was committed.",
                                       node);
                if (down_in_sync->len > 0) {
                    g_string_append_printf(text,
                                           " But in-sync follower %s is down already: if "
                                           "it lost power, it kept only what it had fsynced.",
                                           down_in_sync->str);
                } else {
                    g_string_append(text, " A follower from the ISR can take over without "
                                          "losing any of them.");
                }
            } else {
                g_string_append_printf(text,
                                       "Offsets %" PRId64 "..%" PRId64 " are on leader %u "
                                       "but not yet committed (at or above its high watermark "
                                       "%" PRId64 ").",
                                       leader.hw, leader.leo - 1, node, leader.hw);
                if (strong->len > 0) {
                    g_string_append_printf(text,
                                           " Producer %s (acks=all) has no answer for "
                                           "them yet and will retry or fail.",
                                           strong->str);
                }
                if (one->len > 0) {
                    g_string_append_printf(text,
                                           " Producer %s (acks=1) got its answer as soon "
                                           "as the leader appended them.",
                                           one->str);
                }
                if (none->len > 0) {
                    g_string_append_printf(text,
                                           " Producer %s (acks=0) never waits for an "
                                           "answer: it counted them as sent.",
                                           none->str);
                }
                if (follower_leo_max >= 0 && follower_leo_max < leader.leo) {
                    g_string_append_printf(text,
                                           " Offsets %" PRId64 "..%" PRId64 " are on no "
                                           "follower yet (a fetch response in flight may still "
                                           "bring some): whatever a new leader lacks is gone%s.",
                                           follower_leo_max, leader.leo - 1,
                                           one->len + none->len > 0 ? ", acknowledged or not" : "");
                }
            }
            ks__faults_report(faults, "replicas", (int32_t)node, (struct ks_tp){ (int32_t)t, p },
                              text->str);
            g_string_free(text, TRUE);
            g_string_free(down_in_sync, TRUE);
            g_string_free(strong, TRUE);
            g_string_free(one, TRUE);
            g_string_free(none, TRUE);
        }
    }
}

/* Crashes each node of state->nodes that is up; state->nodes keeps only
 * those, for restart.after. Returns how many it crashed. */
static guint crash_nodes(struct ks_faults *faults, struct ks__fault_state *state, bool power,
                         const char *origin)
{
    const struct ks_fault *fault = ks__faults_fault(faults, state);
    GArray *done = g_array_new(FALSE, FALSE, sizeof(ks_node_id));
    for (guint i = 0; i < state->nodes->len; i++) {
        ks_node_id node = g_array_index(state->nodes, ks_node_id, i);
        char name[96];
        ks_faults_node_name(faults, node, name, sizeof name);
        if (!ks_world_node_is_up(faults->world, node)) {
            g_string_printf(faults->detail, "fault %s: %s is already down, not crashed again",
                            fault->name, name);
            ks__faults_skip(faults, ks__faults_broker_of(faults, state->nodes), ks_fault_tp(fault));
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
        ks__faults_report(faults, "fault",
                          node <= (uint32_t)faults->scenario->cluster.broker_count ? (int32_t)node
                                                                                   : -1,
                          ks_fault_tp(fault), explain);
        g_free(explain);
        if (ks__faults_is_broker(faults, node)) {
            report_led_replicas(faults, node);
        }
        ks_world_node_crash(faults->world, node, power);
        ks_cluster_on_node_crashed(faults->cluster, node);
        faults->crash_count[node]++;
        g_array_append_val(done, node);
        ks_node_id partner = ks__faults_processor_partner(faults, node);
        if (partner != 0 && ks_world_node_is_up(faults->world, partner)) {
            /* A processor is one application: its consumer and producer
             * fall together (and ks__faults_restart_node brings both back). */
            ks_world_node_crash(faults->world, partner, power);
            ks_cluster_on_node_crashed(faults->cluster, partner);
            faults->crash_count[partner]++;
        }
        struct ks__fault_state *stopping = faults->stopping[node];
        if (stopping != NULL) {
            /* It crashed in the middle of its controlled shutdown: it is
             * down now all the same (a rolling restart brings it back after
             * its downtime, with log recovery). */
            faults->stopping[node] = NULL;
            ks__fault_stopped(faults, stopping, node);
        }
    }
    /* Only what this fault crashed is restarted by its restart.after. */
    g_array_set_size(state->nodes, 0);
    g_array_append_vals(state->nodes, done->data, done->len);
    g_array_free(done, TRUE);
    return state->nodes->len;
}

bool ks__fault_fire_crash(struct ks_faults *faults, struct ks__fault_state *state)
{
    const struct ks_fault *fault = ks__faults_fault(faults, state);
    g_autofree char *origin = ks_scenario_format_target(faults->scenario, &fault->target);
    guint crashed = crash_nodes(faults, state, fault->mode == KS_CRASH_POWER, origin);
    /* Scheduled even when every node was down already: the timer is part of
     * the trace, and restarts nothing then. */
    ks__faults_schedule_undo(faults, state, fault->restart_after_ns, KS_KIND_DRIVER_RESTART);
    return crashed > 0;
}

/* restart.after: restart what this fault crashed. */
void ks__fault_undo_crash(struct ks_faults *faults, struct ks__fault_state *state,
                          const char *label)
{
    for (guint i = 0; i < state->nodes->len; i++) {
        ks__faults_restart_node(faults, g_array_index(state->nodes, ks_node_id, i),
                                label != NULL ? label : "");
    }
}

bool ks__fault_fire_restart(struct ks_faults *faults, struct ks__fault_state *state)
{
    char label[128];
    g_snprintf(label, sizeof label, "fault %s", ks__faults_fault(faults, state)->name);
    bool restarted = false;
    for (guint i = 0; i < state->nodes->len; i++) {
        restarted |=
            ks__faults_restart_node(faults, g_array_index(state->nodes, ks_node_id, i), label);
    }
    return restarted;
}

/* ---- stop: a controlled shutdown ---------------------------------------------------------- */

/* What a controlled shutdown means, in words. Owned: g_free. */
static char *stop_explain(const struct ks_faults *faults)
{
    if (!faults->scenario->cluster.controlled_shutdown_enable) {
        return g_strdup("controlled.shutdown.enable = false: the broker flushes its logs, "
                        "writes the clean-shutdown marker and exits at once, without asking the "
                        "controller to move its leaderships first; partitions it led have no "
                        "leader until the controller misses its heartbeats.");
    }
    return g_strdup("An operator stops the broker (kafka-server-stop, a rolling upgrade): it asks "
                    "the controller in its heartbeat to shut down (WantShutDown). The controller "
                    "moves its leaderships to in-sync followers and drops it from the ISRs while "
                    "it still runs, and lets it go once every other broker has seen that; then "
                    "it flushes its logs, writes the clean-shutdown marker and exits. A restart "
                    "finds the marker and recovers nothing.");
}

bool ks__fault_fire_stop(struct ks_faults *faults, struct ks__fault_state *state)
{
    const struct ks_fault *fault = ks__faults_fault(faults, state);
    GArray *running = g_array_new(FALSE, FALSE, sizeof(ks_node_id));
    for (guint i = 0; i < state->nodes->len; i++) {
        ks_node_id node = g_array_index(state->nodes, ks_node_id, i);
        if (ks_cluster_broker_is_up(faults->cluster, (int32_t)node) &&
            !ks_cluster_broker_stopping(faults->cluster, (int32_t)node)) {
            g_array_append_val(running, node);
            continue;
        }
        char name[96];
        ks_faults_node_name(faults, node, name, sizeof name);
        g_string_printf(faults->detail, "fault %s: %s is %s, not stopped", fault->name, name,
                        ks_cluster_broker_stopping(faults->cluster, (int32_t)node)
                            ? "stopping already"
                            : "down already");
        ks__faults_skip(faults, (int32_t)node, ks_fault_tp(fault));
    }
    if (running->len > 0) {
        /* Reported first: the stop causes what the model reports next. */
        g_string_printf(faults->detail, "fault %s: stop ", fault->name);
        ks__faults_append_nodes(faults, faults->detail, running);
        g_string_append(faults->detail, faults->scenario->cluster.controlled_shutdown_enable
                                            ? " (controlled shutdown)"
                                            : " (controlled.shutdown.enable = false)");
        char *explain = stop_explain(faults);
        ks__faults_report(faults, "fault", ks__faults_broker_of(faults, running),
                          ks_fault_tp(fault), explain);
        g_free(explain);
    }
    /* Only what this fault stops is restarted by its restart.after. */
    g_array_set_size(state->nodes, 0);
    g_array_append_vals(state->nodes, running->data, running->len);
    g_array_free(running, TRUE);
    state->stop_done = 0;
    for (guint i = 0; i < state->nodes->len; i++) {
        bool begun =
            ks__faults_stop_node(faults, state, g_array_index(state->nodes, ks_node_id, i));
        ks_assert(begun); /* checked just above, in this same event */
    }
    return state->nodes->len > 0;
}

/* restart.after: restart what this fault stopped. */
void ks__fault_undo_stop(struct ks_faults *faults, struct ks__fault_state *state, const char *label)
{
    for (guint i = 0; i < state->nodes->len; i++) {
        ks__faults_restart_node(faults, g_array_index(state->nodes, ks_node_id, i),
                                label != NULL ? label : "");
    }
}

/* ---- rolling-restart ------------------------------------------------------------------------ */

static void roll_next(struct ks_faults *faults, struct ks__fault_state *state);

/* "fault R step 2/3" into buffer. */
static const char *roll_label(const struct ks_faults *faults, const struct ks__fault_state *state,
                              char *buffer, size_t buffer_bytes)
{
    g_snprintf(buffer, buffer_bytes, "fault %s step %u/%u", ks__faults_fault(faults, state)->name,
               state->roll_step + 1, state->nodes->len);
    return buffer;
}

static ks_node_id roll_node(const struct ks__fault_state *state)
{
    return g_array_index(state->nodes, ks_node_id, state->roll_step);
}

/* Partitions of every topic (__consumer_offsets too) whose ISR is smaller
 * than their replica list: Kafka's UnderReplicatedPartitions, which an
 * operator's rolling restart waits to see at 0. */
static int32_t under_replicated(const struct ks_faults *faults)
{
    int32_t count = 0;
    for (int32_t t = 0; t < ks_cluster_topic_count(faults->cluster); t++) {
        for (int32_t p = 0; p < ks_cluster_partition_count(faults->cluster, t); p++) {
            int32_t ids[KS_REPLICATION_FACTOR_MAX];
            int32_t replicas =
                ks_cluster_replicas(faults->cluster, t, p, ids, KS_REPLICATION_FACTOR_MAX);
            count +=
                ks_cluster_isr(faults->cluster, t, p, ids, KS_REPLICATION_FACTOR_MAX) < replicas;
        }
    }
    return count;
}

static void roll_check(ks_world *world, void *context)
{
    (void)world;
    struct ks__fault_state *state = context;
    struct ks_faults *faults = state->owner;
    state->roll_check_pending = false;
    if (faults->stopped || state->roll_phase != KS__ROLL_CATCHING_UP) {
        return;
    }
    ks_node_id node = roll_node(state);
    if (under_replicated(faults) > 0 || !ks_cluster_broker_is_up(faults->cluster, (int32_t)node)) {
        return;
    }
    ks_world_cancel(faults->world, state->roll_timer);
    state->roll_timer = 0;
    char label[160];
    char name[96];
    ks_faults_node_name(faults, node, name, sizeof name);
    g_string_printf(faults->detail,
                    "%s: %s is back in every ISR %.3f s after its restart (no under-replicated "
                    "partitions)",
                    roll_label(faults, state, label, sizeof label), name,
                    (double)(ks_world_now_ns(faults->world) - state->roll_back_ns) / 1e9);
    ks__faults_report(faults, "fault", (int32_t)node, KS__NO_TP,
                      "Every partition has all its replicas in sync again, so the operator goes "
                      "on with the next broker (as kafka's own upgrade guide asks: wait for the "
                      "UnderReplicatedPartitions metric to reach 0).");
    state->roll_step++;
    roll_next(faults, state);
}

void ks__faults_rolling_poke(struct ks_faults *faults)
{
    for (size_t i = 0; i < faults->state_count; i++) {
        struct ks__fault_state *state = &faults->states[i];
        if (state->roll_phase == KS__ROLL_CATCHING_UP && !state->roll_check_pending) {
            state->roll_check_pending = true;
            ks_world_schedule(faults->world, KS_NODE_DRIVER, 0, KS_KIND_DRIVER_ROLL, roll_check,
                              state);
        }
    }
}

/* catch.up.timeout passed: the rolling restart ends at this step. */
static void roll_timeout(ks_world *world, void *context)
{
    (void)world;
    struct ks__fault_state *state = context;
    struct ks_faults *faults = state->owner;
    state->roll_timer = 0;
    if (faults->stopped || state->roll_phase != KS__ROLL_CATCHING_UP) {
        return;
    }
    const struct ks_fault *fault = ks__faults_fault(faults, state);
    ks_node_id node = roll_node(state);
    char label[160];
    char name[96];
    ks_faults_node_name(faults, node, name, sizeof name);
    g_autofree char *timeout = ks__format_duration(fault->catch_up_timeout_ns);
    g_string_printf(faults->detail,
                    "%s: %d partition(s) still under-replicated %s after %s restarted "
                    "(catch.up.timeout): the rolling restart ends here, %u broker(s) not "
                    "restarted",
                    roll_label(faults, state, label, sizeof label), under_replicated(faults),
                    timeout, name, state->nodes->len - state->roll_step - 1);
    state->roll_phase = KS__ROLL_DONE;
    ks__faults_report(faults, "fault", (int32_t)node, KS__NO_TP,
                      "The brokers did not all get back in sync in time (a broker is still down, "
                      "cut off or too slow to catch up), so the operator stops the rolling "
                      "restart rather than take another replica away.");
}

/* The step's downtime is over: its broker starts again. */
static void roll_restart(ks_world *world, void *context)
{
    (void)world;
    struct ks__fault_state *state = context;
    struct ks_faults *faults = state->owner;
    if (faults->stopped || state->roll_phase != KS__ROLL_DOWN) {
        return; /* the final phase restarts what is down */
    }
    char label[160];
    ks__faults_restart_node(faults, roll_node(state),
                            roll_label(faults, state, label, sizeof label));
    state->roll_phase = KS__ROLL_CATCHING_UP;
    state->roll_back_ns = ks_world_now_ns(faults->world);
    state->roll_timer =
        ks_world_schedule(faults->world, KS_NODE_DRIVER,
                          (ks_time_ns)ks__faults_fault(faults, state)->catch_up_timeout_ns,
                          KS_KIND_DRIVER_ROLL, roll_timeout, state);
    ks__faults_rolling_poke(faults);
}

/* The next broker in turn that is up is stopped; brokers that are down or
 * stopping already are skipped. */
static void roll_next(struct ks_faults *faults, struct ks__fault_state *state)
{
    const struct ks_fault *fault = ks__faults_fault(faults, state);
    char label[160];
    char name[96];
    for (; state->roll_step < state->nodes->len; state->roll_step++) {
        ks_node_id node = roll_node(state);
        ks_faults_node_name(faults, node, name, sizeof name);
        roll_label(faults, state, label, sizeof label);
        state->roll_phase = KS__ROLL_STOPPING;
        if (ks_cluster_broker_is_up(faults->cluster, (int32_t)node) &&
            !ks_cluster_broker_stopping(faults->cluster, (int32_t)node)) {
            g_string_printf(faults->detail, "%s: stop %s%s", label, name,
                            faults->scenario->cluster.controlled_shutdown_enable
                                ? " (controlled shutdown)"
                                : " (controlled.shutdown.enable = false)");
            ks__faults_report(faults, "fault", (int32_t)node, KS__NO_TP, NULL);
            bool begun = ks__faults_stop_node(faults, state, node);
            ks_assert(begun);
            return;
        }
        g_string_printf(faults->detail, "%s: %s is %s, skipped", label, name,
                        ks_cluster_broker_stopping(faults->cluster, (int32_t)node)
                            ? "stopping already"
                            : "down");
        ks__faults_skip(faults, (int32_t)node, KS__NO_TP);
    }
    state->roll_phase = KS__ROLL_DONE;
    g_string_printf(faults->detail, "fault %s: rolling restart done", fault->name);
    ks__faults_report(faults, "fault", -1, KS__NO_TP, NULL);
}

bool ks__fault_fire_rolling_restart(struct ks_faults *faults, struct ks__fault_state *state)
{
    const struct ks_fault *fault = ks__faults_fault(faults, state);
    GString *why = g_string_new(NULL);
    bool resolved = ks__faults_resolve_list(faults, &fault->side_a, state->nodes, why);
    if (!resolved) {
        g_string_printf(faults->detail, "fault %s skipped: %s", fault->name,
                        why->len > 0 ? why->str : "no broker");
        ks__faults_skip(faults, -1, KS__NO_TP);
        ks__faults_mix(faults, state, 0);
        g_string_free(why, TRUE);
        return false;
    }
    g_string_free(why, TRUE);
    ks__faults_mix(faults, state, 1); /* F2: with the brokers just resolved */
    g_autofree char *downtime = ks__format_duration(fault->downtime_ns);
    g_autofree char *timeout = ks__format_duration(fault->catch_up_timeout_ns);
    g_string_printf(faults->detail, "fault %s: rolling restart of ", fault->name);
    ks__faults_append_nodes(faults, faults->detail, state->nodes);
    g_string_append_printf(faults->detail, ", %s down each", downtime);
    char *explain = stop_explain(faults);
    GString *text = g_string_new(explain);
    g_free(explain);
    g_string_append_printf(text,
                           " One broker at a time: each is stopped that way, started again "
                           "%s later, and the next goes only when no partition is "
                           "under-replicated any more (at most catch.up.timeout, %s).",
                           downtime, timeout);
    ks__faults_report(faults, "fault", -1, KS__NO_TP, text->str);
    g_string_free(text, TRUE);
    state->roll_step = 0;
    roll_next(faults, state);
    return true;
}

void ks__fault_stopped(struct ks_faults *faults, struct ks__fault_state *state, ks_node_id node)
{
    const struct ks_fault *fault = ks__faults_fault(faults, state);
    if (fault->action == KS_FAULT_STOP) {
        /* restart.after counts from when the last of its brokers is down. */
        state->stop_done++;
        if (state->stop_done == state->nodes->len) {
            ks__faults_schedule_undo(faults, state, fault->restart_after_ns,
                                     KS_KIND_DRIVER_RESTART);
        }
        return;
    }
    ks_assert(fault->action == KS_FAULT_ROLLING_RESTART);
    ks_assert(state->roll_phase == KS__ROLL_STOPPING && roll_node(state) == node);
    state->roll_phase = KS__ROLL_DOWN;
    ks_world_schedule(faults->world, KS_NODE_DRIVER, (ks_time_ns)fault->downtime_ns,
                      KS_KIND_DRIVER_ROLL, roll_restart, state);
}

/* ---- partition ------------------------------------------------------------------------- */

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
    if (spec->cluster->controller_model == KS_CONTROLLER_MODEL_ZOOKEEPER) {
        if (in_nodes(a, controller) || in_nodes(b, controller)) {
            g_string_append_printf(text,
                                   "ZooKeeper is in the %s group: a broker on the other side "
                                   "can neither ping it nor change an ISR, and loses its "
                                   "session after zookeeper.session.timeout.ms. ",
                                   in_nodes(a, controller) ? "first" : "second");
        }
    } else if (in_nodes(a, controller) || in_nodes(b, controller)) {
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
            int32_t isr_count =
                ks_cluster_isr(faults->cluster, (int32_t)t, p, isr, KS_REPLICATION_FACTOR_MAX);
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
                writing_weak =
                    writing_weak || (request && answer && spec->producers[i].acks != KS_ACKS_ALL);
                g_string_append_printf(list, "%s%s", list->len > 0 ? ", " : "",
                                       spec->producers[i].name);
            }
            bool affected = !leader_ok || cut_count > 0 || blocked->len > 0 || unanswered->len > 0;
            if (affected && described >= 3) {
                skipped++;
            } else if (affected) {
                described++;
                g_string_append_printf(text, "For %s-%d, leader %d %s the controller",
                                       s->topics[t].name, p, leader,
                                       leader_ok ? "still reaches" : "is cut off from");
                if (cut_count > 0) {
                    g_string_append(text, ", and follower");
                    g_string_append(text, cut_count > 1 ? "s " : " ");
                    append_id_list(text, cut, cut_count);
                    g_string_append(text, " can no longer fetch from it");
                }
                g_string_append(text, ". ");
                if (leader_ok && cut_in_sync > 0) {
                    g_string_append_printf(text,
                                           "Writes with acks=all wait for the cut "
                                           "followers until, after replica.lag.time.max.ms, "
                                           "leader %d has the controller drop them from the "
                                           "ISR. ",
                                           leader);
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
                        g_string_append_printf(text,
                                               "Producer %s still writes to leader %d, "
                                               "but with in-sync followers cut off nothing it "
                                               "takes from now on can be committed, and all of "
                                               "it is truncated when it rejoins the new "
                                               "leader%s. ",
                                               writing->str, leader,
                                               writing_weak
                                                   ? " (acks=1 and acks=0 writes "
                                                     "among it count as written all the same)"
                                                   : "");
                    } else if (writing->len > 0) {
                        g_string_append_printf(text,
                                               "Producer %s still writes to leader %d, "
                                               "which, alone in its ISR, commits those writes "
                                               "by itself: a leader elected without them "
                                               "loses them. ",
                                               writing->str, leader);
                    }
                }
                if (blocked->len > 0) {
                    g_string_append_printf(text, "Producer %s can no longer reach leader %d. ",
                                           blocked->str, leader);
                }
                if (unanswered->len > 0) {
                    g_string_append_printf(text,
                                           "Producer %s still reaches leader %d, which "
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
        g_string_append_printf(text,
                               "Broker %s cannot reach the controller either: after "
                               "broker.session.timeout.ms it is fenced and dropped from the "
                               "ISRs. ",
                               fenced->str);
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

bool ks__fault_fire_partition(struct ks_faults *faults, struct ks__fault_state *state)
{
    const struct ks_fault *fault = ks__faults_fault(faults, state);
    GString *why = g_string_new(NULL);
    GArray *a = g_array_new(FALSE, FALSE, sizeof(ks_node_id));
    GArray *b = g_array_new(FALSE, FALSE, sizeof(ks_node_id));
    bool ok = ks__faults_resolve_list(faults, &fault->side_a, a, why);
    if (ok && fault->net_shape == KS_NET_ISOLATE) {
        all_nodes_except(faults, a, b);
    } else if (ok) {
        ok = ks__faults_resolve_list(faults, &fault->side_b, b, why);
    }
    ok = ok && b->len > 0;
    for (guint i = 0; ok && i < a->len; i++) {
        /* Two names of one node (leader(orders-0) and rack(a), say) met only
         * now: a node cannot be cut from itself. */
        ks_node_id node = g_array_index(a, ks_node_id, i);
        if (in_nodes(b, node)) {
            char name[96];
            ks_faults_node_name(faults, node, name, sizeof name);
            g_string_printf(why, "%s is on both sides", name);
            ok = false;
        }
    }
    if (!ok) {
        g_string_printf(faults->detail, "fault %s skipped: %s", fault->name,
                        why->len > 0 ? why->str : "a side names no node");
        ks__faults_skip(faults, -1, KS__NO_TP);
    } else {
        if (fault->net_shape == KS_NET_ONE_WAY) {
            for (guint i = 0; i < a->len; i++) {
                for (guint j = 0; j < b->len; j++) {
                    ks_cut_id cut =
                        ks_world_net_cut_one_way(faults->world, g_array_index(a, ks_node_id, i),
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
        /* Mixed once its sides are resolved, so the trace names them (F2). */
        ks__faults_mix(faults, state, 1);
        g_string_printf(faults->detail, "fault %s: %s ", fault->name,
                        fault->net_shape == KS_NET_ONE_WAY ? "cut messages from" : "partition");
        ks__faults_append_nodes(faults, faults->detail, a);
        g_string_append(faults->detail, fault->net_shape == KS_NET_ONE_WAY ? " to " : " | ");
        if (fault->net_shape == KS_NET_ISOLATE) {
            g_string_append(faults->detail, "everyone else");
        } else {
            ks__faults_append_nodes(faults, faults->detail, b);
        }
        char *explain = partition_explain(faults, a, b, fault->net_shape == KS_NET_ONE_WAY);
        ks__faults_report(faults, "fault", ks__faults_broker_of(faults, a), KS__NO_TP, explain);
        g_free(explain);
        ks__faults_schedule_undo(faults, state, fault->duration_ns, KS_KIND_DRIVER_UNDO);
    }
    g_array_free(a, TRUE);
    g_array_free(b, TRUE);
    g_string_free(why, TRUE);
    return ok;
}

void ks__fault_undo_partition(struct ks_faults *faults, struct ks__fault_state *state,
                              const char *label)
{
    for (guint i = 0; i < state->cuts->len; i++) {
        ks_world_net_heal(faults->world, g_array_index(state->cuts, ks_cut_id, i));
    }
    g_array_set_size(state->cuts, 0);
    if (label == NULL) {
        return;
    }
    g_string_printf(faults->detail, "%s: network partition healed", label);
    ks__faults_report(faults, "heal", -1, KS__NO_TP,
                      "The cut links work again; brokers that were cut off reconnect, fetch "
                      "what they missed, and can rejoin the ISR.");
}

/* ---- heal -------------------------------------------------------------------------------- */

/* heal fault = NAME undoes that fault through its row's undo, as its own
 * timer would; heal without a name undoes every fault whose row says a bare
 * heal undoes it (partitions and drops), silently, in one line. */
bool ks__fault_fire_heal(struct ks_faults *faults, struct ks__fault_state *state)
{
    const struct ks_fault *fault = ks__faults_fault(faults, state);
    ks__faults_mix(faults, state, 1);
    if (fault->heal_fault_index < 0) {
        for (size_t i = 0; i < faults->state_count; i++) {
            struct ks__fault_state *other = &faults->states[i];
            const struct ks_fault *other_fault = ks__faults_fault(faults, other);
            if (ks_fault_action_row(other_fault->action)->bare_heal && other->applied &&
                !other->undone) {
                ks__faults_undo(faults, other, NULL);
            }
        }
        g_string_printf(faults->detail, "fault %s: heal every network fault", fault->name);
        ks__faults_report(faults, "heal", -1, KS__NO_TP,
                          "The network is whole again; cut-off brokers reconnect and catch up.");
        return true;
    }
    struct ks__fault_state *other = &faults->states[fault->heal_fault_index];
    const char *other_name = ks__faults_fault(faults, other)->name;
    if (!other->applied || other->undone) {
        /* Nothing of it is in effect: undoing it would change nothing now, and
         * must not keep it from firing (or ending) later. */
        g_string_printf(faults->detail, "fault %s skipped: fault %s %s", fault->name, other_name,
                        !other->fired   ? "has not fired yet"
                        : other->undone ? "has ended already"
                                        : "changed nothing");
        ks__faults_skip(faults, -1, KS__NO_TP);
        return false;
    }
    char label[160];
    g_snprintf(label, sizeof label, "fault %s heals %s", fault->name, other_name);
    ks__faults_undo(faults, other, label);
    return true;
}

/* ---- slow, pause, resume, drop ----------------------------------------------------------- */

bool ks__fault_fire_slow(struct ks_faults *faults, struct ks__fault_state *state)
{
    const struct ks_fault *fault = ks__faults_fault(faults, state);
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
    ks__faults_append_nodes(faults, faults->detail, state->nodes);
    if (fault->disk_latency_ns > 0) {
        g_string_append_printf(faults->detail, ", disk +%.3fms",
                               (double)fault->disk_latency_ns / 1e6);
    }
    if (fault->network_latency_ns > 0) {
        g_string_append_printf(faults->detail, ", network +%.3fms",
                               (double)fault->network_latency_ns / 1e6);
    }
    ks__faults_report(faults, "fault", ks__faults_broker_of(faults, state->nodes),
                      ks_fault_tp(fault),
                      "Everything the node does takes longer. A slow follower fetches less "
                      "often; once it has not caught up for replica.lag.time.max.ms the leader "
                      "drops it from the ISR.");
    ks__faults_schedule_undo(faults, state, fault->duration_ns, KS_KIND_DRIVER_UNDO);
    return true;
}

void ks__fault_undo_slow(struct ks_faults *faults, struct ks__fault_state *state, const char *label)
{
    const struct ks_fault *fault = ks__faults_fault(faults, state);
    for (guint i = 0; i < state->nodes->len; i++) {
        ks_node_id node = g_array_index(state->nodes, ks_node_id, i);
        if (fault->disk_latency_ns > 0) {
            ks_world_disk_set_node_delay(faults->world, node, 0);
        }
        if (fault->network_latency_ns > 0) {
            ks_world_net_set_node_delay(faults->world, node, 0);
        }
    }
    if (label == NULL) {
        return;
    }
    g_string_printf(faults->detail, "%s: ", label);
    ks__faults_append_nodes(faults, faults->detail, state->nodes);
    g_string_append(faults->detail, " no longer slow");
    ks__faults_report(faults, "heal", ks__faults_broker_of(faults, state->nodes),
                      ks_fault_tp(fault), NULL);
}

static void pause_nodes(struct ks_faults *faults, struct ks__fault_state *state, bool pause)
{
    const struct ks_fault *fault = ks__faults_fault(faults, state);
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
    ks__faults_append_nodes(faults, faults->detail, state->nodes);
    ks__faults_report(faults, pause ? "fault" : "resume",
                      ks__faults_broker_of(faults, state->nodes), ks_fault_tp(fault),
                      pause ? "The process freezes (think of a long garbage-collection pause): "
                              "it handles no timer and no message, but it does not know it "
                              "stopped. The controller sees missed heartbeats; followers see a "
                              "silent leader."
                            : "The paused process continues and handles everything that "
                              "waited.");
}

bool ks__fault_fire_pause(struct ks_faults *faults, struct ks__fault_state *state)
{
    pause_nodes(faults, state, true);
    ks__faults_schedule_undo(faults, state, ks__faults_fault(faults, state)->duration_ns,
                             KS_KIND_DRIVER_UNDO);
    return true;
}

bool ks__fault_fire_resume(struct ks_faults *faults, struct ks__fault_state *state)
{
    pause_nodes(faults, state, false);
    return true;
}

void ks__fault_undo_pause(struct ks_faults *faults, struct ks__fault_state *state,
                          const char *label)
{
    for (guint i = 0; i < state->nodes->len; i++) {
        ks_node_id node = g_array_index(state->nodes, ks_node_id, i);
        if (ks_world_node_is_up(faults->world, node) &&
            ks_world_node_is_paused(faults->world, node)) {
            ks_world_node_resume(faults->world, node);
        }
    }
    if (label == NULL) {
        return;
    }
    g_string_printf(faults->detail, "%s: resume ", label);
    ks__faults_append_nodes(faults, faults->detail, state->nodes);
    ks__faults_report(faults, "resume", ks__faults_broker_of(faults, state->nodes),
                      ks_fault_tp(ks__faults_fault(faults, state)),
                      "The paused process continues as if no time had passed: it handles the "
                      "timers and messages that waited, and only then learns that the cluster "
                      "moved on without it (a long garbage-collection pause).");
}

bool ks__fault_fire_drop(struct ks_faults *faults, struct ks__fault_state *state)
{
    const struct ks_fault *fault = ks__faults_fault(faults, state);
    ks__faults_mix(faults, state, 1);
    ks_world_net_set_loss_ppm(faults->world, fault->loss_ppm);
    g_string_printf(faults->detail, "fault %s: drop %.4f%% of all messages", fault->name,
                    (double)fault->loss_ppm / 1e4);
    ks__faults_report(faults, "fault", -1, KS__NO_TP,
                      "Messages are lost at random. Requests time out and are retried; a "
                      "producer that retries without idempotence can write a record twice.");
    ks__faults_schedule_undo(faults, state, fault->duration_ns, KS_KIND_DRIVER_UNDO);
    return true;
}

void ks__fault_undo_drop(struct ks_faults *faults, struct ks__fault_state *state, const char *label)
{
    (void)state;
    ks_world_net_set_loss_ppm(faults->world, 0);
    if (label == NULL) {
        return;
    }
    g_string_printf(faults->detail, "%s: no more message loss", label);
    ks__faults_report(faults, "heal", -1, KS__NO_TP, NULL);
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

bool ks__fault_fire_corrupt(struct ks_faults *faults, struct ks__fault_state *state)
{
    const struct ks_fault *fault = ks__faults_fault(faults, state);
    const struct ks_topic_config *topic = &faults->scenario->topics[fault->corrupt_tp.topic_index];
    bool corrupted = false;
    for (guint n = 0; n < state->nodes->len; n++) {
        ks_node_id node = g_array_index(state->nodes, ks_node_id, n);
        char *dir =
            g_strdup_printf("broker-%u/%s-%d", node, topic->name, fault->corrupt_tp.partition);
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
            ks__faults_skip(faults, (int32_t)node, fault->corrupt_tp);
        } else {
            ks_world_disk_corrupt(faults->world, node, path, position,
                                  (size_t)fault->corrupt_bytes);
            g_string_printf(faults->detail,
                            "fault %s: corrupt %d byte(s) of %s at position %" PRId64, fault->name,
                            fault->corrupt_bytes, path, position);
            ks__faults_report(faults, "fault", (int32_t)node, fault->corrupt_tp,
                              "Bytes on the disk change behind the broker's back. The batch's "
                              "CRC no longer matches: a reader or log recovery detects it and "
                              "must not serve the damaged records.");
            corrupted = true;
        }
        ks_disk_close(file);
        g_free(path);
        ks_disk_list_free(names);
        g_free(dir);
    }
    return corrupted;
}

/* ---- rewind -------------------------------------------------------------------------------- */

/* The driver passes enum ks_rewind_to to the consumer as it is. */
_Static_assert((int)KS_REWIND_EARLIEST == KS_CONSUMER_REWIND_EARLIEST &&
                   (int)KS_REWIND_LATEST == KS_CONSUMER_REWIND_LATEST &&
                   (int)KS_REWIND_OFFSET == KS_CONSUMER_REWIND_OFFSET &&
                   (int)KS_REWIND_TIME == KS_CONSUMER_REWIND_TIME,
               "enum ks_rewind_to and enum ks_consumer_rewind_kind must agree");

/* A rewind is told to the consumer through ks_cluster_consumer_rewind (a
 * seek that the consumer applies at its next poll boundary); rewinding a
 * consumer that is down is reported as skipped and changes nothing. */
/* A failover exists only with several clusters, which sim/run.c drives
 * (rule_failover refuses it in a one-cluster scenario). */
bool ks__fault_fire_failover(struct ks_faults *faults, struct ks__fault_state *state)
{
    (void)faults;
    (void)state;
    ks_assert(false);
    return false;
}

bool ks__fault_fire_rewind(struct ks_faults *faults, struct ks__fault_state *state)
{
    const struct ks_fault *fault = ks__faults_fault(faults, state);
    ks_assert(fault->target.kind == KS_TARGET_CONSUMER && state->nodes->len == 1);
    ks_node_id node = g_array_index(state->nodes, ks_node_id, 0);
    char name[96];
    ks_faults_node_name(faults, node, name, sizeof name);
    if (!ks_world_node_is_up(faults->world, node)) {
        g_string_printf(faults->detail, "fault %s skipped: %s is down, nothing to rewind",
                        fault->name, name);
        ks__faults_skip(faults, -1, KS__NO_TP);
        return false;
    }
    int64_t value = 0;
    g_string_printf(faults->detail, "fault %s: rewind %s to ", fault->name, name);
    switch (fault->rewind_to) {
    case KS_REWIND_EARLIEST: g_string_append(faults->detail, "earliest"); break;
    case KS_REWIND_LATEST: g_string_append(faults->detail, "latest"); break;
    case KS_REWIND_OFFSET:
        value = fault->rewind_offset;
        g_string_append_printf(faults->detail, "offset %" PRId64, value);
        break;
    case KS_REWIND_TIME:
        value = fault->rewind_time_ns;
        g_string_append_printf(faults->detail, "time %.3fs", (double)value / 1e9);
        break;
    }
    ks__faults_report(faults, "fault", -1, KS__NO_TP,
                      "The application seeks its consumer (KafkaConsumer#seek): at its next "
                      "poll every partition it is assigned moves to the new position, which it "
                      "then commits. Moving back re-processes records the group already "
                      "processed; moving forward skips records.");
    ks_cluster_consumer_rewind(faults->cluster, fault->target.client_index, (int)fault->rewind_to,
                               value);
    return true;
}
