/*
** sim/fault_actions.c: the fault-action table and what follows from it at
** load time: the keys and rules of each action, its JSON and INI forms, its
** part of the key reference (contract and how to add an action in
** sim/fault_actions.h).
**
** Invariants:
**   A1  rows[i].action == i for every action, and every action has a row
**       (asserted by ks_fault_action_row, _Static_assert on the count).
**   A2  Every key a row names is a key of the [fault] key table
**       (sim/scenario_keys.c); the scanner admits only those (tests check it).
**   A3  A healable or bare_heal row has an undo; a row with `duration` or
**       `restart.after` has an undo (its timer calls it).
*/
#include "fault_actions.h"

#include "../core/base.h"
#include "faults_int.h"
#include "scenario_int.h"

#include <inttypes.h>
#include <string.h>

/* ---- rules beyond keys and target ------------------------------------------------------ */

/* slow changes something only with a non-zero latency. */
/* A failover moves a group between clusters (sim/run.c fires it). */
static bool rule_failover(const struct ks_fault_site *site)
{
    return ks_fault_site_fail(site, KS_SCENARIO_ERROR_CONFLICT, "action",
                              "[fault %s] (failover) moves a client to another cluster: it needs "
                              "[cluster NAME] sections and a [mirror NAME]",
                              site->fault->name);
}

static bool rule_slow(const struct ks_fault_site *site)
{
    const struct ks_fault *fault = site->fault;
    if (fault->disk_latency_ns == 0 && fault->network_latency_ns == 0) {
        return ks_fault_site_fail(site, KS_SCENARIO_ERROR_MISSING, NULL,
                                  "[fault %s] (slow) needs disk.latency and/or network.latency",
                                  fault->name);
    }
    return true;
}

/* A drop with loss 0 drops nothing. */
static bool rule_drop(const struct ks_fault_site *site)
{
    if (site->fault->loss_ppm == 0) {
        return ks_fault_site_fail(site, KS_SCENARIO_ERROR_VALUE, "loss",
                                  "[fault %s] (drop) with a loss of 0 drops nothing: give a "
                                  "loss above 0",
                                  site->fault->name);
    }
    return true;
}

/* ---- schedule rules ------------------------------------------------------------------- */

static int32_t fault_index(const struct ks_fault_site *site, const struct ks_fault *fault)
{
    return (int32_t)(fault - site->scenario->faults);
}

/* Whether `earlier` may fire before `later` (or at the same time, first):
 * both at fixed times and `earlier` sooner (a tie goes by file order, the
 * order ks_faults_start schedules them in); a trigger may fire any time. */
static bool may_fire_before(const struct ks_fault_site *site, const struct ks_fault *earlier,
                            const struct ks_fault *later)
{
    if (!earlier->has_at || !later->has_at) {
        return true;
    }
    return earlier->at_ns < later->at_ns || (earlier->at_ns == later->at_ns &&
                                             fault_index(site, earlier) < fault_index(site, later));
}

static bool names_brokers(enum ks_target_kind kind)
{
    switch (kind) {
    case KS_TARGET_BROKER:
    case KS_TARGET_LEADER:
    case KS_TARGET_FOLLOWER:
    case KS_TARGET_FOLLOWERS:
    case KS_TARGET_RANDOM:
    case KS_TARGET_RACK:
    case KS_TARGET_ALL: return true;
    case KS_TARGET_NONE:
    case KS_TARGET_CONTROLLER:
    case KS_TARGET_ZOOKEEPER:
    case KS_TARGET_CLUSTER:
    case KS_TARGET_PRODUCER:
    case KS_TARGET_CONSUMER: break;
    }
    return false;
}

/* Whether two targets may name a common node when they fire: fixed brokers
 * are compared, a target resolved at fire time (leader(TP), random) may be
 * any broker, a client or the controller only itself. */
static bool may_share_node(const struct ks_scenario *scenario, const struct ks_target *a,
                           const struct ks_target *b)
{
    if (names_brokers(a->kind) && names_brokers(b->kind)) {
        bool in_a[KS_BROKER_COUNT_MAX] = { false };
        bool in_b[KS_BROKER_COUNT_MAX] = { false };
        if (!ks_scenario_target_brokers(scenario, a, in_a) ||
            !ks_scenario_target_brokers(scenario, b, in_b)) {
            return true;
        }
        for (int32_t b_id = 0; b_id < scenario->cluster.broker_count; b_id++) {
            if (in_a[b_id] && in_b[b_id]) {
                return true;
            }
        }
        return false;
    }
    return a->kind == b->kind && a->client_index == b->client_index &&
           (a->kind == KS_TARGET_PRODUCER || a->kind == KS_TARGET_CONSUMER ||
            a->kind == KS_TARGET_CONTROLLER || a->kind == KS_TARGET_ZOOKEEPER ||
            (a->kind == KS_TARGET_CLUSTER && a->cluster_index == b->cluster_index));
}

/* Whether some fault of `action` (or, with `also`, of that action) may fire
 * before site->fault on a node its target names. */
static bool preceded_by(const struct ks_fault_site *site, enum ks_fault_action action,
                        enum ks_fault_action also)
{
    const struct ks_scenario *scenario = site->scenario;
    for (size_t i = 0; i < scenario->fault_count; i++) {
        const struct ks_fault *other = &scenario->faults[i];
        if (other == site->fault || (other->action != action && other->action != also)) {
            continue;
        }
        if (may_fire_before(site, other, site->fault) &&
            may_share_node(scenario, &other->target, &site->fault->target)) {
            return true;
        }
    }
    return false;
}

/* A restart brings back a node that is down: some crash or stop must be
 * able to have taken it down before. */
static bool schedule_restart(const struct ks_fault_site *site)
{
    if (preceded_by(site, KS_FAULT_CRASH, KS_FAULT_STOP)) {
        return true;
    }
    g_autofree char *target = ks_scenario_format_target(site->scenario, &site->fault->target);
    return ks_fault_site_fail(site, KS_SCENARIO_ERROR_CONFLICT, "target",
                              "[fault %s] restarts %s, which no crash or stop before it can have "
                              "stopped: a restart of a running node changes nothing",
                              site->fault->name, target);
}

/* A controlled shutdown is a broker's: stop takes brokers, not the controller. */
static bool rule_stop(const struct ks_fault_site *site)
{
    if (site->fault->target.kind == KS_TARGET_CONTROLLER) {
        return ks_fault_site_fail(site, KS_SCENARIO_ERROR_VALUE, "target",
                                  "stop is a broker's controlled shutdown: target = controller "
                                  "is not a broker");
    }
    return true;
}

/* rolling-restart restarts brokers, one after the other. */
static bool rule_rolling_restart(const struct ks_fault_site *site)
{
    const struct ks_fault *fault = site->fault;
    for (uint32_t i = 0; i < fault->side_a.count; i++) {
        if (!names_brokers(fault->side_a.items[i].kind)) {
            g_autofree char *name =
                ks_scenario_format_target(site->scenario, &fault->side_a.items[i]);
            return ks_fault_site_fail(site, KS_SCENARIO_ERROR_VALUE, "target",
                                      "rolling-restart restarts brokers: '%s' is not one (give "
                                      "all, broker ids, rack(NAME), leader(TP) ...)",
                                      name);
        }
    }
    return true;
}

/* A resume wakes a paused node: some pause must come first. */
static bool schedule_resume(const struct ks_fault_site *site)
{
    if (preceded_by(site, KS_FAULT_PAUSE, KS_FAULT_PAUSE)) {
        return true;
    }
    g_autofree char *target = ks_scenario_format_target(site->scenario, &site->fault->target);
    return ks_fault_site_fail(site, KS_SCENARIO_ERROR_CONFLICT, "target",
                              "[fault %s] resumes %s, which no pause before it can have "
                              "paused: a resume of a running node changes nothing",
                              site->fault->name, target);
}

/* heal fault = NAME must find that fault in effect; without a name, some
 * fault that a bare heal undoes must be able to be. */
static bool schedule_heal(const struct ks_fault_site *site)
{
    const struct ks_fault *heal = site->fault;
    const struct ks_scenario *scenario = site->scenario;
    if (heal->heal_fault_index < 0) {
        for (size_t i = 0; i < scenario->fault_count; i++) {
            const struct ks_fault *other = &scenario->faults[i];
            if (other != heal && ks_fault_action_row(other->action)->bare_heal &&
                may_fire_before(site, other, heal)) {
                return true;
            }
        }
        g_autofree char *bare = ks_fault_action_list(KS_FAULT_ACTIONS_BARE_HEAL, "or");
        return ks_fault_site_fail(site, KS_SCENARIO_ERROR_CONFLICT, NULL,
                                  "[fault %s] heals every network fault, but no %s fault "
                                  "fires before it: the heal would change nothing",
                                  heal->name, bare);
    }
    const struct ks_fault *healed = &scenario->faults[heal->heal_fault_index];
    if (!may_fire_before(site, healed, heal)) {
        g_autofree char *at = ks__format_duration(healed->at_ns);
        return ks_fault_site_fail(site, KS_SCENARIO_ERROR_CONFLICT, "fault",
                                  "fault = %s: that fault fires at %s, after this heal: the heal "
                                  "would change nothing",
                                  healed->name, at);
    }
    if (healed->has_at && heal->has_at && healed->duration_ns >= 0 &&
        healed->at_ns + healed->duration_ns < heal->at_ns) {
        g_autofree char *end = ks__format_duration(healed->at_ns + healed->duration_ns);
        return ks_fault_site_fail(site, KS_SCENARIO_ERROR_CONFLICT, "fault",
                                  "fault = %s: that fault ends at %s by its duration, before "
                                  "this heal: the heal would change nothing",
                                  healed->name, end);
    }
    return true;
}

/* A partition has exactly one shape: groups, isolate, or from with to. */
static bool rule_partition(const struct ks_fault_site *site)
{
    const char *name = site->fault->name;
    bool from = ks_fault_site_has(site, "from");
    bool to = ks_fault_site_has(site, "to");
    int shapes =
        ks_fault_site_has(site, "groups") + ks_fault_site_has(site, "isolate") + (from || to);
    if (shapes != 1) {
        return ks_fault_site_fail(
            site, shapes == 0 ? KS_SCENARIO_ERROR_MISSING : KS_SCENARIO_ERROR_CONFLICT, NULL,
            "[fault %s] (partition) needs exactly one of 'groups', "
            "'isolate' or 'from' with 'to'",
            name);
    }
    if (from != to) {
        return ks_fault_site_fail(site, KS_SCENARIO_ERROR_MISSING, NULL,
                                  "[fault %s] (partition) needs both 'from' and 'to'", name);
    }
    return true;
}

/* heal fault = NAME names a fault that a heal can undo. */
static bool rule_heal(const struct ks_fault_site *site)
{
    int32_t healed = site->fault->heal_fault_index;
    if (healed < 0) {
        return true;
    }
    const struct ks_fault_action_row *row =
        ks_fault_action_find(ks_fault_site_written_action(site, healed));
    if (row == NULL || !row->healable) {
        g_autofree char *list = ks_fault_action_list(KS_FAULT_ACTIONS_HEALABLE, "or");
        return ks_fault_site_fail(site, KS_SCENARIO_ERROR_VALUE, "fault",
                                  "fault = %s: only a %s fault can be healed",
                                  site->scenario->faults[healed].name, list);
    }
    return true;
}

/* ---- the table -------------------------------------------------------------------------------- */

#define KEY(name, kind)                 \
    {                                   \
        name, KS_FAULT_KEY_##kind, NULL \
    }
#define NEEDED(name, kind, hint)        \
    {                                   \
        name, KS_FAULT_KEY_##kind, hint \
    }

static const struct ks_fault_action_row rows[] = {
    {
        .name = "crash",
        .action = KS_FAULT_CRASH,
        .keys = { KEY("target", TARGET), KEY("mode", MODE), KEY("restart.after", RESTART_AFTER) },
        .target = KS_FAULT_TARGET_ANY,
        .keys_doc = "`target` (required), `mode`, `restart.after`",
        .fire = ks__fault_fire_crash,
        .undo = ks__fault_undo_crash,
        .undo_label = "restart.after",
    },
    {
        .name = "restart",
        .action = KS_FAULT_RESTART,
        .keys = { KEY("target", TARGET) },
        .target = KS_FAULT_TARGET_ANY,
        .schedule_rule = schedule_restart,
        .keys_doc = "`target` (required)",
        .fire = ks__fault_fire_restart,
    },
    {
        .name = "partition",
        .action = KS_FAULT_PARTITION,
        .keys = { KEY("groups", GROUPS), KEY("isolate", ISOLATE), KEY("from", FROM), KEY("to", TO),
                  KEY("duration", DURATION) },
        .rule = rule_partition,
        .keys_doc = "one of `groups`, `isolate`, `from` + `to`; `duration`",
        .healable = true,
        .bare_heal = true,
        .fire = ks__fault_fire_partition,
        .undo = ks__fault_undo_partition,
        .undo_label = "ends",
    },
    {
        .name = "heal",
        .action = KS_FAULT_HEAL,
        .keys = { KEY("fault", FAULT) },
        .rule = rule_heal,
        .schedule_rule = schedule_heal,
        .keys_doc = "`fault`",
        .fire = ks__fault_fire_heal,
    },
    {
        .name = "slow",
        .action = KS_FAULT_SLOW,
        .keys = { KEY("target", TARGET), KEY("disk.latency", DISK_LATENCY),
                  KEY("network.latency", NETWORK_LATENCY), KEY("duration", DURATION) },
        .target = KS_FAULT_TARGET_ANY,
        .rule = rule_slow,
        .keys_doc = "`target` (required), `disk.latency` and/or `network.latency`, `duration`",
        .healable = true,
        .fire = ks__fault_fire_slow,
        .undo = ks__fault_undo_slow,
        .undo_label = "ends",
    },
    {
        .name = "pause",
        .action = KS_FAULT_PAUSE,
        .keys = { KEY("target", TARGET), KEY("duration", DURATION) },
        .target = KS_FAULT_TARGET_ANY,
        .keys_doc = "`target` (required), `duration`",
        .healable = true,
        .fire = ks__fault_fire_pause,
        .undo = ks__fault_undo_pause,
        .undo_label = "ends",
    },
    {
        .name = "resume",
        .action = KS_FAULT_RESUME,
        .keys = { KEY("target", TARGET) },
        .target = KS_FAULT_TARGET_ANY,
        .schedule_rule = schedule_resume,
        .keys_doc = "`target` (required)",
        .fire = ks__fault_fire_resume,
    },
    {
        .name = "drop",
        .action = KS_FAULT_DROP,
        .keys = { NEEDED("loss", LOSS, "e.g. 1%"), KEY("duration", DURATION) },
        .rule = rule_drop,
        .keys_doc = "`loss` (required), `duration`",
        .healable = true,
        .bare_heal = true,
        .fire = ks__fault_fire_drop,
        .undo = ks__fault_undo_drop,
        .undo_label = "ends",
    },
    {
        .name = "corrupt",
        .action = KS_FAULT_CORRUPT,
        .keys = { KEY("target", TARGET), NEEDED("partition", PARTITION, "e.g. orders-0"),
                  KEY("bytes", BYTES), KEY("position.bytes", POSITION_BYTES) },
        .target = KS_FAULT_TARGET_BROKER,
        .target_wrong = "corrupt damages a broker's log: target must be a broker",
        .keys_doc = "`target` (a broker, required), `partition` (required), `bytes`, "
                    "`position.bytes`",
        .fire = ks__fault_fire_corrupt,
    },
    {
        .name = "rewind",
        .action = KS_FAULT_REWIND,
        .keys = { KEY("target", TARGET),
                  NEEDED("to", REWIND_TO, "earliest, latest, offset or time") },
        .target = KS_FAULT_TARGET_CONSUMER,
        .target_wrong = "rewind needs target = consumer(NAME)",
        .keys_doc = "`target` (`consumer(NAME)`, required), `to` (required)",
        .fire = ks__fault_fire_rewind,
    },
    {
        .name = "stop",
        .action = KS_FAULT_STOP,
        .keys = { KEY("target", TARGET), KEY("restart.after", RESTART_AFTER) },
        .target = KS_FAULT_TARGET_BROKER,
        .target_wrong = "stop is a broker's controlled shutdown: the target must name brokers",
        .rule = rule_stop,
        .keys_doc = "`target` (brokers, required), `restart.after` (from when it has stopped)",
        .fire = ks__fault_fire_stop,
        .undo = ks__fault_undo_stop,
        .undo_label = "restart.after",
    },
    {
        .name = "rolling-restart",
        .action = KS_FAULT_ROLLING_RESTART,
        .keys = { NEEDED("target", TARGETS, "all, or a list of brokers"),
                  NEEDED("downtime", DOWNTIME, "how long each broker stays down, e.g. 10s"),
                  KEY("catch.up.timeout", CATCH_UP_TIMEOUT) },
        .rule = rule_rolling_restart,
        .keys_doc = "`target` (`all` or a list of brokers, required), `downtime` (required), "
                    "`catch.up.timeout`",
        .fire = ks__fault_fire_rolling_restart,
    },
    {
        .name = "failover",
        .action = KS_FAULT_FAILOVER,
        .keys = { KEY("target", TARGET) },
        .target = KS_FAULT_TARGET_CLIENT,
        .target_wrong = "failover moves a consumer group or a producer: target = consumer(NAME) "
                        "or producer(NAME)",
        .rule = rule_failover,
        .keys_doc = "`target` (`consumer(NAME)` or `producer(NAME)`, required). A consumer: "
                    "every consumer of its group on its cluster stops, and a copy of each "
                    "(`NAME.TARGET`) joins the group on the mirror's target cluster, reading the "
                    "remote topic from the group's synced offsets there. A producer: it stops, "
                    "and a copy (`NAME.TARGET`, same settings, its `count` counted afresh) "
                    "writes from then on to the remote topic on the target (several clusters "
                    "only)",
        .fire = ks__fault_fire_failover,
    },
};

#undef KEY
#undef NEEDED

_Static_assert(KS_ARRAY_COUNT(rows) == KS_FAULT_ACTION_COUNT, "one row per fault action (A1)");

const struct ks_fault_action_row *ks_fault_action_row(enum ks_fault_action action)
{
    ks_assert((size_t)action < KS_ARRAY_COUNT(rows));
    const struct ks_fault_action_row *row = &rows[action];
    ks_assert(row->action == action); /* A1 */
    if (row->healable || row->bare_heal) {
        ks_assert(row->undo != NULL); /* A3 */
    }
    return row;
}

const char *ks_fault_action_name(enum ks_fault_action action)
{
    return ks_fault_action_row(action)->name;
}

const struct ks_fault_action_row *ks_fault_action_find(const char *name)
{
    for (size_t i = 0; i < KS_ARRAY_COUNT(rows); i++) {
        if (strcmp(rows[i].name, name) == 0) {
            return ks_fault_action_row(rows[i].action);
        }
    }
    return NULL;
}

const struct ks_fault_key *ks_fault_action_key(const struct ks_fault_action_row *row,
                                               const char *key)
{
    for (size_t i = 0; i < KS_FAULT_ACTION_KEY_COUNT_MAX && row->keys[i].name != NULL; i++) {
        if (strcmp(row->keys[i].name, key) == 0) {
            return &row->keys[i];
        }
    }
    return NULL;
}

char *ks_fault_action_keys_text(const struct ks_fault_action_row *row)
{
    GString *text = g_string_new(NULL);
    for (size_t i = 0; i < KS_FAULT_ACTION_KEY_COUNT_MAX && row->keys[i].name != NULL; i++) {
        g_string_append_printf(text, "%s%s", i > 0 ? " " : "", row->keys[i].name);
    }
    return g_string_free(text, FALSE);
}

static bool in_set(const struct ks_fault_action_row *row, enum ks_fault_action_set set)
{
    switch (set) {
    case KS_FAULT_ACTIONS_ALL: return true;
    case KS_FAULT_ACTIONS_HEALABLE: return row->healable;
    case KS_FAULT_ACTIONS_BARE_HEAL: return row->bare_heal;
    }
    return false;
}

char *ks_fault_action_list(enum ks_fault_action_set set, const char *conjunction)
{
    const char *names[KS_ARRAY_COUNT(rows)];
    size_t count = 0;
    for (size_t i = 0; i < KS_ARRAY_COUNT(rows); i++) {
        if (in_set(&rows[i], set)) {
            names[count++] = rows[i].name;
        }
    }
    GString *text = g_string_new(NULL);
    for (size_t i = 0; i < count; i++) {
        if (i > 0) {
            g_string_append_printf(text, i + 1 == count ? " %s " : ", ", conjunction);
        }
        g_string_append(text, names[i]);
    }
    return g_string_free(text, FALSE);
}

/* ---- load time ------------------------------------------------------------------------------- */

void ks_fault_init(struct ks_fault *fault, const char *name, uint32_t line,
                   enum ks_fault_action action)
{
    memset(fault, 0, sizeof *fault);
    g_strlcpy(fault->name, name, sizeof fault->name);
    fault->line = line;
    fault->action = action;
    fault->mode = KS_CRASH_PROCESS;
    fault->restart_after_ns = -1;
    fault->duration_ns = -1;
    fault->target.kind = KS_TARGET_NONE;
    fault->corrupt_bytes = 1;
    fault->corrupt_position_bytes = -1;
    fault->corrupt_tp = (struct ks_tp){ -1, -1 };
    fault->heal_fault_index = -1;
    fault->downtime_ns = -1;
    fault->catch_up_timeout_ns = KS_FAULT_CATCH_UP_TIMEOUT_NS_DEFAULT;
}

static bool target_fits(enum ks_fault_target_rule rule, const struct ks_target *target)
{
    switch (rule) {
    case KS_FAULT_TARGET_NONE:
    case KS_FAULT_TARGET_ANY: return true;
    case KS_FAULT_TARGET_BROKER:
        return target->kind != KS_TARGET_PRODUCER && target->kind != KS_TARGET_CONSUMER &&
               target->kind != KS_TARGET_NONE;
    case KS_FAULT_TARGET_CONSUMER: return target->kind == KS_TARGET_CONSUMER;
    case KS_FAULT_TARGET_CLIENT:
        return target->kind == KS_TARGET_CONSUMER || target->kind == KS_TARGET_PRODUCER;
    }
    return false;
}

bool ks_fault_check(const struct ks_fault_site *site)
{
    const struct ks_fault *fault = site->fault;
    const struct ks_fault_action_row *row = ks_fault_action_row(fault->action);
    if (row->target != KS_FAULT_TARGET_NONE && !ks_fault_site_has(site, "target")) {
        return ks_fault_site_fail(site, KS_SCENARIO_ERROR_MISSING, NULL,
                                  "[fault %s] (%s) needs a 'target'", fault->name, row->name);
    }
    if (!target_fits(row->target, &fault->target)) {
        return ks_fault_site_fail(site, KS_SCENARIO_ERROR_VALUE, "target", "%s", row->target_wrong);
    }
    for (size_t i = 0; i < KS_FAULT_ACTION_KEY_COUNT_MAX && row->keys[i].name != NULL; i++) {
        const struct ks_fault_key *key = &row->keys[i];
        if (key->needs != NULL && !ks_fault_site_has(site, key->name)) {
            return ks_fault_site_fail(site, KS_SCENARIO_ERROR_MISSING, NULL,
                                      "[fault %s] (%s) needs '%s' (%s)", fault->name, row->name,
                                      key->name, key->needs);
        }
    }
    return row->rule == NULL || row->rule(site);
}

bool ks_fault_check_schedule(const struct ks_fault_site *site)
{
    const struct ks_fault_action_row *row = ks_fault_action_row(site->fault->action);
    return row->schedule_rule == NULL || row->schedule_rule(site);
}

struct ks_tp ks_fault_tp(const struct ks_fault *fault)
{
    switch (fault->target.kind) {
    case KS_TARGET_LEADER:
    case KS_TARGET_FOLLOWER:
    case KS_TARGET_FOLLOWERS: return fault->target.tp;
    case KS_TARGET_NONE:
    case KS_TARGET_BROKER:
    case KS_TARGET_CONTROLLER:
    case KS_TARGET_ZOOKEEPER:
    case KS_TARGET_RANDOM:
    case KS_TARGET_RACK:
    case KS_TARGET_ALL:
    case KS_TARGET_CLUSTER:
    case KS_TARGET_PRODUCER:
    case KS_TARGET_CONSUMER: break;
    }
    return fault->corrupt_tp; /* {-1, -1} unless the action takes `partition` */
}

/* ---- writing back: the value of one key ---------------------------------------------------- */

static char *format_target_list(const struct ks_scenario *scenario,
                                const struct ks_target_list *list)
{
    GString *text = g_string_new(NULL);
    for (uint32_t i = 0; i < list->count; i++) {
        g_autofree char *one = ks_scenario_format_target(scenario, &list->items[i]);
        g_string_append_printf(text, "%s%s", i == 0 ? "" : ",", one);
    }
    return g_string_free(text, FALSE);
}

/* One key's value, for JSON and INI alike. */
struct key_value {
    enum { VALUE_NONE, VALUE_TEXT, VALUE_INT, VALUE_DURATION } type; /* NONE: not shown */
    char *text;            /* VALUE_TEXT, owned; NULL: no value (JSON null) */
    int64_t number;        /* VALUE_INT; VALUE_DURATION in ns, -1: not set (JSON null) */
    bool is_default;       /* INI leaves it out */
    const char *json_name; /* NULL: the key's name */
    const char *ini_unit;  /* VALUE_INT in INI: "ppm"; NULL: none */
};

static struct key_value text_value(char *text)
{
    return (struct key_value){ .type = VALUE_TEXT, .text = text, .is_default = text == NULL };
}

static struct key_value duration_value(int64_t ns, int64_t default_ns)
{
    return (
        struct key_value){ .type = VALUE_DURATION, .number = ns, .is_default = ns == default_ns };
}

/* The value of a key of `kind` in `fault`. A partition shows only the keys
 * of its shape. */
static struct key_value key_value(const struct ks_scenario *scenario, const struct ks_fault *fault,
                                  enum ks_fault_key_kind kind)
{
    char tp[KS_TOPIC_NAME_BYTES_MAX + 16];
    switch (kind) {
    case KS_FAULT_KEY_TARGET:
        return fault->target.kind == KS_TARGET_NONE
                   ? (struct key_value){ .type = VALUE_NONE }
                   : text_value(ks_scenario_format_target(scenario, &fault->target));
    case KS_FAULT_KEY_MODE:
        return text_value(g_strdup(fault->mode == KS_CRASH_POWER ? "power" : "process"));
    case KS_FAULT_KEY_RESTART_AFTER: return duration_value(fault->restart_after_ns, -1);
    case KS_FAULT_KEY_DURATION: return duration_value(fault->duration_ns, -1);
    case KS_FAULT_KEY_GROUPS: {
        if (fault->net_shape != KS_NET_GROUPS) {
            return (struct key_value){ .type = VALUE_NONE };
        }
        g_autofree char *a = format_target_list(scenario, &fault->side_a);
        g_autofree char *b = format_target_list(scenario, &fault->side_b);
        return text_value(g_strdup_printf("%s | %s", a, b));
    }
    case KS_FAULT_KEY_ISOLATE:
    case KS_FAULT_KEY_FROM:
        if (fault->net_shape != (kind == KS_FAULT_KEY_ISOLATE ? KS_NET_ISOLATE : KS_NET_ONE_WAY)) {
            return (struct key_value){ .type = VALUE_NONE };
        }
        return text_value(format_target_list(scenario, &fault->side_a));
    case KS_FAULT_KEY_TO:
        if (fault->net_shape != KS_NET_ONE_WAY) {
            return (struct key_value){ .type = VALUE_NONE };
        }
        return text_value(format_target_list(scenario, &fault->side_b));
    case KS_FAULT_KEY_DISK_LATENCY: return duration_value(fault->disk_latency_ns, 0);
    case KS_FAULT_KEY_NETWORK_LATENCY: return duration_value(fault->network_latency_ns, 0);
    case KS_FAULT_KEY_LOSS:
        /* In ppm, as the world takes it; the JSON name says the unit. */
        return (struct key_value){
            .type = VALUE_INT, .number = fault->loss_ppm, .json_name = "loss.ppm", .ini_unit = "ppm"
        };
    case KS_FAULT_KEY_PARTITION:
        return text_value(
            g_strdup(ks_scenario_format_tp(scenario, fault->corrupt_tp, tp, sizeof tp)));
    case KS_FAULT_KEY_BYTES:
        return (struct key_value){ .type = VALUE_INT, .number = fault->corrupt_bytes };
    case KS_FAULT_KEY_POSITION_BYTES:
        return (struct key_value){ .type = VALUE_INT,
                                   .number = fault->corrupt_position_bytes,
                                   .is_default = fault->corrupt_position_bytes < 0 };
    case KS_FAULT_KEY_FAULT:
        return text_value(fault->heal_fault_index >= 0
                              ? g_strdup(scenario->faults[fault->heal_fault_index].name)
                              : NULL);
    case KS_FAULT_KEY_TARGETS: return text_value(format_target_list(scenario, &fault->side_a));
    case KS_FAULT_KEY_DOWNTIME: return duration_value(fault->downtime_ns, -1);
    case KS_FAULT_KEY_CATCH_UP_TIMEOUT:
        return duration_value(fault->catch_up_timeout_ns, KS_FAULT_CATCH_UP_TIMEOUT_NS_DEFAULT);
    case KS_FAULT_KEY_REWIND_TO:
        switch (fault->rewind_to) {
        case KS_REWIND_EARLIEST: return text_value(g_strdup("earliest"));
        case KS_REWIND_LATEST: return text_value(g_strdup("latest"));
        case KS_REWIND_OFFSET: return text_value(g_strdup_printf("%" PRId64, fault->rewind_offset));
        case KS_REWIND_TIME: return duration_value(fault->rewind_time_ns, -1);
        }
        break;
    }
    ks_assert(false);
    return (struct key_value){ .type = VALUE_NONE };
}

/* ---- runs.params ----------------------------------------------------------------------------- */

void ks_fault_json(JsonBuilder *builder, const struct ks_scenario *scenario,
                   const struct ks_fault *fault)
{
    const struct ks_fault_action_row *row = ks_fault_action_row(fault->action);
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "name");
    json_builder_add_string_value(builder, fault->name);
    json_builder_set_member_name(builder, "action");
    json_builder_add_string_value(builder, row->name);
    if (fault->has_at) {
        ks__json_duration(builder, "at", fault->at_ns);
    } else {
        g_autofree char *when = ks_scenario_format_trigger(scenario, &fault->when);
        json_builder_set_member_name(builder, "when");
        json_builder_add_string_value(builder, when);
        ks__json_duration(builder, "delay", fault->delay_ns);
    }
    for (size_t i = 0; i < KS_FAULT_ACTION_KEY_COUNT_MAX && row->keys[i].name != NULL; i++) {
        struct key_value value = key_value(scenario, fault, row->keys[i].kind);
        const char *name = value.json_name != NULL ? value.json_name : row->keys[i].name;
        switch (value.type) {
        case VALUE_NONE: break;
        case VALUE_TEXT:
            json_builder_set_member_name(builder, name);
            if (value.text == NULL) {
                json_builder_add_null_value(builder);
            } else {
                json_builder_add_string_value(builder, value.text);
            }
            break;
        case VALUE_INT:
            json_builder_set_member_name(builder, name);
            json_builder_add_int_value(builder, value.number);
            break;
        case VALUE_DURATION: ks__json_duration(builder, name, value.number); break;
        }
        g_free(value.text);
    }
    json_builder_end_object(builder);
}

/* ---- INI ------------------------------------------------------------------------------------- */

/* Whole milliseconds where exact (explore's schedules are on whole ms). Owned. */
static char *ini_duration(int64_t ns)
{
    if (ns % 1000000 == 0) {
        return g_strdup_printf("%" PRId64 "ms", ns / 1000000);
    }
    return ks__format_duration(ns);
}

void ks_fault_write_ini(GString *out, const struct ks_scenario *scenario,
                        const struct ks_fault *fault)
{
    const struct ks_fault_action_row *row = ks_fault_action_row(fault->action);
    if (fault->has_at) {
        g_autofree char *at = ini_duration(fault->at_ns);
        g_string_append_printf(out, "at = %s\n", at);
    } else {
        g_autofree char *when = ks_scenario_format_trigger(scenario, &fault->when);
        g_string_append_printf(out, "when = %s\n", when);
        if (fault->delay_ns > 0) {
            g_autofree char *delay = ini_duration(fault->delay_ns);
            g_string_append_printf(out, "delay = %s\n", delay);
        }
    }
    g_string_append_printf(out, "action = %s\n", row->name);
    for (size_t i = 0; i < KS_FAULT_ACTION_KEY_COUNT_MAX && row->keys[i].name != NULL; i++) {
        struct key_value value = key_value(scenario, fault, row->keys[i].kind);
        g_autofree char *text = NULL;
        switch (value.type) {
        case VALUE_NONE: break;
        case VALUE_TEXT: text = g_steal_pointer(&value.text); break;
        case VALUE_INT:
            text = g_strdup_printf("%" PRId64 "%s", value.number,
                                   value.ini_unit != NULL ? value.ini_unit : "");
            break;
        case VALUE_DURATION: text = value.number >= 0 ? ini_duration(value.number) : NULL; break;
        }
        if (text != NULL && !value.is_default) {
            g_string_append_printf(out, "%s = %s\n", row->keys[i].name, text);
        }
    }
}

/* ---- the key reference ----------------------------------------------------------------------- */

void ks_fault_actions_write_reference(FILE *out)
{
    fputs("| action | keys besides `at`/`when`/`delay` |\n"
          "| --- | --- |\n",
          out);
    for (size_t i = 0; i < KS_ARRAY_COUNT(rows); i++) {
        fprintf(out, "| `%s` | %s |\n", rows[i].name, rows[i].keys_doc);
    }
    g_autofree char *healable = ks_fault_action_list(KS_FAULT_ACTIONS_HEALABLE, "or");
    g_autofree char *bare = ks_fault_action_list(KS_FAULT_ACTIONS_BARE_HEAL, "and");
    g_autofree char *bare_or = ks_fault_action_list(KS_FAULT_ACTIONS_BARE_HEAL, "or");
    fprintf(out,
            "\n"
            "`heal` with `fault = NAME` undoes that fault at once, if it is in effect; its own\n"
            "`duration` then ends nothing. A heal can name a %s fault; one that\n"
            "has not fired yet, was skipped or has ended already makes the heal a skipped line.\n"
            "`heal` without `fault` undoes every %s fault in effect.\n"
            "\n"
            "A fault that would change nothing whatever happens is refused when the scenario\n"
            "loads: `crash` or `restart` of `target = controller` under `controller = kraft`\n"
            "(that controller does not fail in this model), a `restart` (`resume`) with no\n"
            "`crash` (`pause`) before it that can have hit its target, a `heal` of a fault that\n"
            "fires after it or has ended by its `duration` before it, a `heal` without `fault`\n"
            "with no %s fault before it, a `drop` with a loss of 0. One that turns out to change\n"
            "nothing when it fires (a crash of a node that is down, a restart of one that is up,\n"
            "`leader(TP)` of a partition without a leader) is a `skipped` line of the timeline\n"
            "and counts in the `faults_skipped` metric.\n",
            healable, bare, bare_or);
}
