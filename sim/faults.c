/*
** sim/faults.c: applying a scenario's [fault NAME] sections to a running
** world and cluster (contract in sim/faults.h, SPEC section 2): the schedule
** (timers, triggers), target resolution, and the generic part of firing and
** undoing a fault. What each action does is its row's business
** (sim/fault_actions.c names the functions, sim/fault_fire.c has them).
**
** Life of one fault:
**
**   PENDING --(at: timer on node 0 | when: trigger holds after an event)-->
**     [delay] --> FIRED: target resolved now, row->fire applies and reports
**   FIRED --(duration / restart.after: timer on node 0)--> UNDONE (row->undo)
**   (stop and rolling-restart go on after firing: they wait for the
**   brokers' controlled shutdowns, and a rolling restart for its catch-ups,
**   through cluster events; see sim/fault_fire.c)
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
**       reported as skipped and changes nothing. A stop goes to the model
**       first (ks_cluster_stop_broker: a controlled shutdown takes the
**       broker's own time), and only when the broker reports that it has
**       stopped does its node go down in the world (on_broker_stopped).
**   F4  The driver (node 0) is never a target and is never cut off.
**   F5  A fault is undone at most once (`undone`), by its timer or by a
**       heal; its timer does nothing after that, so a healed fault's
**       duration cannot undo what a later fault did to the same nodes.
** Randomness: only `random` targets and corrupt positions draw, from
** KS_RNG_FAULT, in the order faults fire.
*/
#include "faults_int.h"

#include "../core/base.h"

#include <inttypes.h>
#include <string.h>

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
    if (s->cluster.controller_model != KS_CONTROLLER_MODEL_ZOOKEEPER &&
        s->cluster.controller_count > 1 && node >= controller &&
        node < controller + (uint32_t)s->cluster.controller_count) {
        g_snprintf(buffer, buffer_bytes, "controller %u", node - controller + 1);
        return;
    }
    if (node == controller) {
        g_snprintf(buffer, buffer_bytes,
                   s->cluster.controller_model == KS_CONTROLLER_MODEL_ZOOKEEPER ? "zookeeper"
                                                                                : "controller");
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

void ks__faults_append_nodes(const struct ks_faults *faults, GString *out, const GArray *nodes)
{
    for (guint i = 0; i < nodes->len; i++) {
        char name[96];
        ks_faults_node_name(faults, g_array_index(nodes, ks_node_id, i), name, sizeof name);
        g_string_append_printf(out, "%s%s", i > 0 ? ", " : "", name);
    }
}

bool ks__faults_is_broker(const struct ks_faults *faults, ks_node_id node)
{
    return node >= 1 && node <= (uint32_t)faults->scenario->cluster.broker_count;
}

int32_t ks__faults_broker_of(const struct ks_faults *faults, const GArray *nodes)
{
    if (nodes->len == 1 && ks__faults_is_broker(faults, g_array_index(nodes, ks_node_id, 0))) {
        return (int32_t)g_array_index(nodes, ks_node_id, 0);
    }
    return -1;
}

void ks__faults_report(struct ks_faults *faults, const char *kind, int32_t broker, struct ks_tp tp,
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
        .fault_index = faults->current_fault,
    };
    faults->report(faults->report_context, &r);
}

void ks__faults_skip(struct ks_faults *faults, int32_t broker, struct ks_tp tp)
{
    faults->skipped_count++;
    ks__faults_report(faults, "skipped", broker, tp, NULL);
}

int64_t ks_faults_skipped_count(const struct ks_faults *faults)
{
    return faults->skipped_count;
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
static bool resolve_target(struct ks_faults *faults, const struct ks_target *target, GArray *nodes,
                           GString *why)
{
    struct ks_cluster *cluster = faults->cluster;
    char tp_text[300];
    switch (target->kind) {
    case KS_TARGET_NONE: g_string_assign(why, "no target"); return false;
    case KS_TARGET_BROKER: add_node(nodes, (ks_node_id)target->broker_id); return true;
    case KS_TARGET_LEADER: {
        int32_t leader = ks_cluster_leader(cluster, target->tp.topic_index, target->tp.partition);
        if (leader < 0) {
            g_string_printf(
                why, "%s has no leader",
                ks_scenario_format_tp(faults->scenario, target->tp, tp_text, sizeof tp_text));
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
            g_string_printf(
                why, "%s has no follower",
                ks_scenario_format_tp(faults->scenario, target->tp, tp_text, sizeof tp_text));
            return false;
        }
        return true;
    }
    case KS_TARGET_CONTROLLER:
        if (faults->spec->cluster->controller_model == KS_CONTROLLER_MODEL_ZOOKEEPER) {
            /* The broker /controller names when the fault fires. */
            int32_t id = ks_cluster_active_controller(faults->cluster);
            if (id < 1) {
                g_string_printf(why, "no broker is controller (/controller is empty)");
                return false;
            }
            add_node(nodes, (ks_node_id)id);
            return true;
        }
        /* `controller` is the active one and controller(N) node brokers + N;
         * with one controller (controllers = 1) both are node brokers + 1. */
        if (faults->spec->cluster->controller_count > 1) {
            int32_t number = target->controller_number;
            for (int32_t i = 0; number < 1 && faults->resolving_restart &&
                                i < faults->spec->cluster->controller_count;
                 i++) {
                if (!ks_world_node_is_up(faults->world,
                                         ks_cluster_controller_voter_node(faults->spec, i))) {
                    number = i + 1; /* the one a crash of `controller` took down */
                }
            }
            if (number < 1) {
                number = ks_cluster_active_kraft_controller(faults->cluster);
                if (number < 1) {
                    g_string_printf(why, "no controller is active (the quorum has no leader)");
                    return false;
                }
            }
            add_node(nodes, ks_cluster_controller_voter_node(faults->spec, number - 1));
            return true;
        }
        add_node(nodes, ks_cluster_controller_node(faults->spec));
        return true;
    case KS_TARGET_CLUSTER:
        /* several clusters: sim/clusters.c fires these, never this module */
        g_string_assign(why, "cluster(NAME) names a whole cluster of several");
        return false;
    case KS_TARGET_ZOOKEEPER:
        if (faults->spec->cluster->controller_model != KS_CONTROLLER_MODEL_ZOOKEEPER) {
            g_string_printf(why, "there is no ZooKeeper node (controller = kraft)");
            return false;
        }
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
    case KS_TARGET_RACK:
    case KS_TARGET_ALL: {
        /* Fixed brokers, ascending: every broker of the rack, or all of them. */
        bool in[KS_BROKER_COUNT_MAX] = { false };
        ks_scenario_target_brokers(faults->scenario, target, in);
        for (int32_t b = 1; b <= faults->scenario->cluster.broker_count; b++) {
            if (in[b - 1]) {
                add_node(nodes, (ks_node_id)b);
            }
        }
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

bool ks__faults_resolve_list(struct ks_faults *faults, const struct ks_target_list *list,
                             GArray *nodes, GString *why)
{
    for (uint32_t i = 0; i < list->count; i++) {
        if (!resolve_target(faults, &list->items[i], nodes, why)) {
            return false;
        }
    }
    return nodes->len > 0;
}

/* ---- firing and undoing ------------------------------------------------------------------ */

void ks__faults_mix(struct ks_faults *faults, const struct ks__fault_state *state, uint32_t what)
{
    uint32_t words[2 + 64] = { (uint32_t)state->index, what };
    size_t count = 2;
    for (guint i = 0; i < state->nodes->len && count < G_N_ELEMENTS(words); i++) {
        words[count++] = g_array_index(state->nodes, ks_node_id, i);
    }
    ks_world_trace_mix(faults->world, KS_KIND_DRIVER_MIX_FAULT, KS_NODE_DRIVER, words,
                       count * sizeof words[0]);
}

/* A broker reported that its controlled shutdown finished (KS_EV_BROKER_STOPPED,
 * handled one event later so that the world is not changed inside the
 * model's own event): its process exits, so its node goes down as a process
 * crash that loses nothing (the broker flushed its logs and wrote the
 * clean-shutdown marker), and the fault that stopped it hears of it. In the
 * final phase it comes back at once. */
static void on_broker_stopped(ks_world *world, void *context)
{
    struct ks__stop_context *stop = context;
    struct ks_faults *faults = stop->owner;
    ks_node_id node = stop->node;
    struct ks__fault_state *state = faults->stopping[node];
    faults->stopping[node] = NULL;
    if (ks_world_node_is_up(world, node) &&
        !ks_cluster_broker_is_up(faults->cluster, (int32_t)node)) {
        ks_world_node_crash(world, node, false);
        /* Its sockets close as it exits (SocketServer.shutdown): requests in
         * flight to it fail at once instead of at request.timeout.ms. */
        ks_cluster_on_broker_exited(faults->cluster, (int32_t)node);
    }
    if (faults->stopped) {
        ks__faults_restart_node(faults, node, "final phase");
        return;
    }
    if (state != NULL) {
        ks__fault_stopped(faults, state, node);
    }
}

bool ks__faults_stop_node(struct ks_faults *faults, struct ks__fault_state *state, ks_node_id node)
{
    ks_assert(ks__faults_is_broker(faults, node));
    if (!ks_world_node_is_up(faults->world, node) ||
        ks_cluster_broker_stopping(faults->cluster, (int32_t)node) ||
        !ks_cluster_broker_is_up(faults->cluster, (int32_t)node)) {
        return false;
    }
    /* Set first: with controlled.shutdown.enable = false the broker stops
     * inside this call. */
    faults->stopping[node] = state;
    bool begun = ks_cluster_stop_broker(faults->cluster, (int32_t)node);
    ks_assert(begun);
    return true;
}

bool ks__faults_restart_node(struct ks_faults *faults, ks_node_id node, const char *why)
{
    char name[96];
    ks_faults_node_name(faults, node, name, sizeof name);
    if (ks_world_node_is_up(faults->world, node)) {
        g_string_printf(faults->detail, "%s: %s is already up", why, name);
        ks__faults_skip(faults, -1, KS__NO_TP);
        return false;
    }
    g_string_printf(faults->detail, "%s: restart %s", why, name);
    ks__faults_report(faults, "restart", ks__faults_is_broker(faults, node) ? (int32_t)node : -1,
                      KS__NO_TP,
                      "The node starts again. A broker reloads its logs from disk (recovering "
                      "them if it stopped uncleanly), registers with the controller, and comes "
                      "back as a follower: it must catch up from the leaders before it rejoins "
                      "the ISR.");
    /* Reported first: the restart causes what the model reports next (recovery). */
    ks_world_node_restart(faults->world, node);
    ks_cluster_on_node_restarted(faults->cluster, node);
    faults->restart_count[node]++;
    ks_node_id partner = ks__faults_processor_partner(faults, node);
    if (partner != 0 && !ks_world_node_is_up(faults->world, partner)) {
        ks_world_node_restart(faults->world, partner);
        ks_cluster_on_node_restarted(faults->cluster, partner);
        faults->restart_count[partner]++;
    }
    return true;
}

ks_node_id ks__faults_processor_partner(const struct ks_faults *faults, ks_node_id node)
{
    const struct ks_cluster_spec *spec = faults->spec;
    for (int32_t i = 0; i < spec->consumer_count; i++) {
        int32_t producer = spec->consumers[i].output_producer_index;
        if (producer < 0) {
            continue;
        }
        ks_node_id consumer_node = ks_cluster_consumer_node(spec, i);
        ks_node_id producer_node = ks_cluster_producer_node(spec, producer);
        if (node == consumer_node) {
            return producer_node;
        }
        if (node == producer_node) {
            return consumer_node;
        }
    }
    return 0;
}

/* The timer of a fault's duration or restart.after. */
static void on_undo_timer(ks_world *world, void *context)
{
    (void)world;
    struct ks__fault_state *state = context;
    struct ks_faults *faults = state->owner;
    const struct ks_fault *fault = ks__faults_fault(faults, state);
    if (faults->stopped || state->undone) {
        return; /* F5: healed already, or the final phase repairs everything */
    }
    ks__faults_mix(faults, state, 2);
    char label[128];
    g_snprintf(label, sizeof label, "fault %s %s", fault->name,
               ks_fault_action_row(fault->action)->undo_label);
    ks__faults_undo(faults, state, label);
}

void ks__faults_undo(struct ks_faults *faults, struct ks__fault_state *state, const char *label)
{
    const struct ks_fault_action_row *row =
        ks_fault_action_row(ks__faults_fault(faults, state)->action);
    ks_assert(row->undo != NULL); /* A3 */
    ks_assert(!state->undone);    /* F5 */
    state->undone = true;
    int32_t outer = faults->current_fault; /* a heal undoes other faults */
    faults->current_fault = state->index;
    row->undo(faults, state, label);
    faults->current_fault = outer;
}

void ks__faults_schedule_undo(struct ks_faults *faults, struct ks__fault_state *state,
                              int64_t delay_ns, uint32_t kind)
{
    if (delay_ns < 0) {
        return;
    }
    ks_world_schedule(faults->world, KS_NODE_DRIVER, (ks_time_ns)delay_ns, kind, on_undo_timer,
                      state);
}

static void fire_now(struct ks_faults *faults, struct ks__fault_state *state);

static void fire(struct ks_faults *faults, struct ks__fault_state *state)
{
    int32_t outer = faults->current_fault;
    faults->current_fault = state->index;
    fire_now(faults, state);
    faults->current_fault = outer;
}

static void fire_now(struct ks_faults *faults, struct ks__fault_state *state)
{
    const struct ks_fault *fault = ks__faults_fault(faults, state);
    if (faults->stopped || state->fired) {
        return;
    }
    state->fired = true; /* F1 */
    const struct ks_fault_action_row *row = ks_fault_action_row(fault->action);
    if (row->target != KS_FAULT_TARGET_NONE) {
        GString *why = g_string_new(NULL);
        faults->resolving_restart = fault->action == KS_FAULT_RESTART;
        bool resolved = resolve_target(faults, &fault->target, state->nodes, why);
        faults->resolving_restart = false;
        if (!resolved) {
            g_string_printf(faults->detail, "fault %s skipped: %s", fault->name, why->str);
            ks__faults_skip(faults, -1, ks_fault_tp(fault));
            ks__faults_mix(faults, state, 0);
        }
        g_string_free(why, TRUE);
        if (!resolved) {
            return;
        }
        ks__faults_mix(faults, state, 1); /* F2: with the nodes just resolved */
    }
    state->applied = row->fire(faults, state);
}

static void on_fault_timer(ks_world *world, void *context)
{
    (void)world;
    struct ks__fault_state *state = context;
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
                   ? faults->crash_count[trigger->broker_id]
                   : 0;
    case KS_TRIGGER_RESTARTED:
        return (uint32_t)trigger->broker_id < faults->node_count
                   ? faults->restart_count[trigger->broker_id]
                   : 0;
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
        struct ks__fault_state *state = &faults->states[i];
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
        faults->current_fault = (int32_t)i;
        ks__faults_report(
            faults, "trigger", -1, KS__NO_TP,
            "A trigger fires a fault when the cluster reaches a state rather than at a "
            "time, so the scenario hits the same narrow window in every run.");
        faults->current_fault = -1;
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
    if (event->kind == KS_EV_BROKER_STOPPED) {
        ks_node_id node = (ks_node_id)event->broker;
        ks_assert(node >= 1 && node < faults->node_count);
        ks_world_schedule(faults->world, KS_NODE_DRIVER, 0, KS_KIND_DRIVER_STOPPED,
                          on_broker_stopped, &faults->stop_contexts[node]);
        return;
    }
    if (event->kind == KS_EV_ISR_EXPAND) {
        ks__faults_rolling_poke(faults);
        return;
    }
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
    faults->stopping = g_new0(struct ks__fault_state *, faults->node_count);
    faults->stop_contexts = g_new0(struct ks__stop_context, faults->node_count);
    for (ks_node_id node = 0; node < faults->node_count; node++) {
        faults->stop_contexts[node] = (struct ks__stop_context){ faults, node };
    }
    faults->tp_base = g_new0(int32_t, scenario->topic_count + 1);
    int32_t total = 0;
    for (size_t t = 0; t < scenario->topic_count; t++) {
        faults->tp_base[t] = total;
        total += scenario->topics[t].partition_count;
    }
    faults->elections = g_new0(int64_t, (size_t)total + 1);
    faults->state_count = scenario->fault_count;
    faults->states = g_new0(struct ks__fault_state, scenario->fault_count + 1);
    for (size_t i = 0; i < scenario->fault_count; i++) {
        struct ks__fault_state *state = &faults->states[i];
        state->owner = faults;
        state->index = (int32_t)i;
        state->nodes = g_array_new(FALSE, FALSE, sizeof(ks_node_id));
        state->cuts = g_array_new(FALSE, FALSE, sizeof(ks_cut_id));
    }
    faults->detail = g_string_new(NULL);
    faults->current_fault = -1;
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
    g_free(faults->stopping);
    g_free(faults->stop_contexts);
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
    ks__faults_report(
        faults, "final", -1, KS__NO_TP,
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
            ks__faults_report(faults, "resume",
                              ks__faults_is_broker(faults, node) ? (int32_t)node : -1, KS__NO_TP,
                              NULL);
        }
    }
    for (ks_node_id node = 1; node < faults->node_count; node++) {
        if (!ks_world_node_is_up(world, node)) {
            ks__faults_restart_node(faults, node, "final phase");
        }
    }
}
