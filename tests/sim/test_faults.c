/* tests/sim/test_faults.c: the fault schedule of a run (sim/faults.c).
 *
 * Goal: each fault fires once, at its time or when its trigger first holds,
 * changes the world as its action says, and is undone exactly once (by its
 * own duration, or earlier by a heal), never undoing what a later fault did.
 * Method: a small cluster (three brokers, one producer) built from scenario
 * text on a world of its own, with the fault schedule driven as sim/run.c
 * drives it (the after-event hook evaluates triggers); the test runs the
 * world to chosen times and reads the world's state (links, pauses, node
 * delays, loss) and the reported timeline lines. The fault-action table
 * itself is checked against the [fault] key table, and its INI form against
 * the loader (what it writes loads back to the same fault). */
#include "../../sim/fault_actions.h"
#include "../../sim/faults.h"
#include "../../sim/scenario_int.h"
#include "../../sim/world_int.h"
#include "../testlib.h"

#include <string.h>

#define MS 1000000ll
#define S  1000000000ll

static const char base_scenario[] = "[scenario]\n"
                                    "name = faults\n"
                                    "seed = 3\n"
                                    "duration = 20s\n"
                                    "[cluster]\n"
                                    "brokers = 3\n"
                                    "[topic orders]\n"
                                    "partitions = 1\n"
                                    "replication.factor = 3\n"
                                    "[producer p1]\n"
                                    "topic = orders\n"
                                    "acks = all\n"
                                    "rate = 200/s\n"
                                    "keys = 10\n";

struct report_line {
    ks_time_ns at_ns;
    char *kind;
    char *detail;
};

struct fault_env {
    char *dir;
    struct ks_scenario *scenario;
    struct ks_cluster_spec spec;
    ks_world *world;
    struct ks_cluster_observer observer;
    struct ks_cluster *cluster;
    struct ks_faults *faults;
    GArray *reports; /* struct report_line */
};

static void on_report(void *context, const struct ks_fault_report *report)
{
    struct fault_env *env = context;
    struct report_line line = { report->at_ns, g_strdup(report->kind), g_strdup(report->detail) };
    g_array_append_val(env->reports, line);
}

static void on_cluster_event(void *context, const struct ks_cluster_event *event)
{
    struct fault_env *env = context;
    ks_faults_on_cluster_event(env->faults, event);
}

static void after_event(ks_world *world, void *context)
{
    (void)world;
    struct fault_env *env = context;
    ks_faults_after_event(env->faults);
}

/* Builds and starts the cluster of base_scenario plus `faults_text`; false
 * (with the message printed) if the scenario does not load. */
static bool env_init(struct fault_env *env, const char *faults_text)
{
    memset(env, 0, sizeof *env);
    g_autofree char *text = g_strconcat(base_scenario, faults_text, NULL);
    GError *error = NULL;
    if (!ks_scenario_load_from_data("faults.ini", text, &env->scenario, &error)) {
        fprintf(stderr, "\nscenario: %s\n", error->message);
        g_error_free(error);
        return false;
    }
    const struct ks_scenario *s = env->scenario;
    env->spec = (struct ks_cluster_spec){
        .cluster = &s->cluster,
        .topics = s->topics,
        .topic_count = (int32_t)s->topic_count,
        .producers = s->producers,
        .producer_count = (int32_t)s->producer_count,
        .consumers = s->consumers,
        .consumer_count = (int32_t)s->consumer_count,
    };
    env->dir = g_dir_make_tmp("ksim-faults-XXXXXX", NULL);
    struct ks_world_config config = {
        .seed = s->seed,
        .run_dir = env->dir,
        .node_count = ks_cluster_node_count(&env->spec),
        .network_latency_ns = (ks_time_ns)s->network_latency_ns,
        .network_jitter_ns = (ks_time_ns)s->network_jitter_ns,
        .disk_fsync_latency_ns = (ks_time_ns)s->disk_fsync_latency_ns,
        .disk_bandwidth_bytes_per_s = s->disk_bandwidth_bytes_per_s,
    };
    env->world = ks_world_new(&config, &error);
    if (env->world == NULL) {
        fprintf(stderr, "\nworld: %s\n", error->message);
        g_error_free(error);
        return false;
    }
    env->reports = g_array_new(FALSE, TRUE, sizeof(struct report_line));
    env->observer = (struct ks_cluster_observer){ .context = env, .on_event = on_cluster_event };
    env->cluster = ks_cluster_new(env->world, &env->spec, &env->observer);
    env->faults = ks_faults_new(env->world, env->cluster, s, &env->spec, on_report, env);
    ks_world_set_after_event(env->world, after_event, env);
    ks_cluster_start(env->cluster);
    ks_faults_start(env->faults);
    return true;
}

static void env_deinit(struct fault_env *env)
{
    if (env->world != NULL) {
        ks_world_set_after_event(env->world, NULL, NULL);
    }
    ks_faults_free(env->faults);
    ks_cluster_free(env->cluster);
    ks_world_free(env->world);
    for (guint i = 0; env->reports != NULL && i < env->reports->len; i++) {
        struct report_line *line = &g_array_index(env->reports, struct report_line, i);
        g_free(line->kind);
        g_free(line->detail);
    }
    if (env->reports != NULL) {
        g_array_free(env->reports, TRUE);
    }
    ks_scenario_free(env->scenario);
    if (env->dir != NULL) {
        ks_test_remove_tree(env->dir);
    }
    g_free(env->dir);
}

static void run_to(struct fault_env *env, int64_t at_ns)
{
    ks_world_run_until(env->world, (ks_time_ns)at_ns);
}

/* How many reported lines have this kind and a detail starting with prefix. */
static int reports_matching(const struct fault_env *env, const char *kind, const char *prefix)
{
    int count = 0;
    for (guint i = 0; i < env->reports->len; i++) {
        const struct report_line *line = &g_array_index(env->reports, struct report_line, i);
        count += strcmp(line->kind, kind) == 0 && g_str_has_prefix(line->detail, prefix);
    }
    return count;
}

/* The time of the first such line, or -1. */
static int64_t report_time(const struct fault_env *env, const char *kind, const char *prefix)
{
    for (guint i = 0; i < env->reports->len; i++) {
        const struct report_line *line = &g_array_index(env->reports, struct report_line, i);
        if (strcmp(line->kind, kind) == 0 && g_str_has_prefix(line->detail, prefix)) {
            return (int64_t)line->at_ns;
        }
    }
    return -1;
}

/* ---- triggers ------------------------------------------------------------------ */

/* A trigger with a delay holds once: the fault fires once after the delay,
 * the trigger line is reported once, and a later trigger still fires (the
 * delayed one, counted twice, used to use up the pending count). */
static void test_trigger_with_delay(void)
{
    struct fault_env env;
    CU_ASSERT_FATAL(env_init(&env, "[fault first]\nwhen = acked(p1) >= 10\ndelay = 100ms\n"
                                   "action = pause\ntarget = 3\nduration = 100ms\n"
                                   "[fault second]\nwhen = acked(p1) >= 300\naction = slow\n"
                                   "target = 2\nnetwork.latency = 5ms\nduration = 100ms\n"));
    run_to(&env, 5 * S);
    CU_ASSERT_EQUAL(reports_matching(&env, "trigger", "trigger of fault first holds"), 1);
    CU_ASSERT_EQUAL(reports_matching(&env, "fault", "fault first: pause broker 3"), 1);
    CU_ASSERT_EQUAL(report_time(&env, "fault", "fault first: pause broker 3"),
                    report_time(&env, "trigger", "trigger of fault first holds") + 100 * MS);
    CU_ASSERT_EQUAL(reports_matching(&env, "trigger", "trigger of fault second holds"), 1);
    CU_ASSERT_EQUAL(reports_matching(&env, "fault", "fault second: slow broker 2"), 1);
    env_deinit(&env);
}

/* ---- heal ---------------------------------------------------------------------------- */

static bool link_up(const struct fault_env *env, ks_node_id source, ks_node_id target)
{
    return ks_world_net_link_is_up(env->world, source, target);
}

/* Every kind of fault a heal can name (partition, slow, pause, drop) is
 * undone by `heal fault = NAME` at once, as its own duration would undo it;
 * a second fault of the same kind then does the same to the same nodes, and
 * the healed fault's duration timer, which comes due while the second is in
 * effect, must not undo it. */
static void test_heal_every_kind_by_name(void)
{
    struct fault_env env;
    CU_ASSERT_FATAL(
        env_init(&env, "[fault cut]\nat = 1s\naction = partition\ngroups = 1 | 2,3\nduration = 4s\n"
                       "[fault mend-cut]\nat = 2s\naction = heal\nfault = cut\n"
                       "[fault cut2]\nat = 3s\naction = partition\ngroups = 1 | 2\nduration = 10s\n"
                       "[fault lag]\nat = 1s\naction = slow\ntarget = 2\nnetwork.latency = 100ms\n"
                       "duration = 4s\n"
                       "[fault mend-lag]\nat = 2s\naction = heal\nfault = lag\n"
                       "[fault lag2]\nat = 3s\naction = slow\ntarget = 2\ndisk.latency = 50ms\n"
                       "network.latency = 30ms\nduration = 10s\n"
                       "[fault nap]\nat = 1s\naction = pause\ntarget = 3\nduration = 4s\n"
                       "[fault mend-nap]\nat = 2s\naction = heal\nfault = nap\n"
                       "[fault nap2]\nat = 3s\naction = pause\ntarget = 3\nduration = 10s\n"
                       "[fault lossy]\nat = 1s\naction = drop\nloss = 5%\nduration = 4s\n"
                       "[fault mend-lossy]\nat = 2s\naction = heal\nfault = lossy\n"
                       "[fault lossy2]\nat = 3s\naction = drop\nloss = 1%\nduration = 10s\n"));
    /* In effect. */
    run_to(&env, 1500 * MS);
    CU_ASSERT_FALSE(link_up(&env, 1, 2));
    CU_ASSERT_FALSE(link_up(&env, 3, 1));
    CU_ASSERT_EQUAL(ks__node(env.world, 2)->net_delay_ns, 100 * MS);
    CU_ASSERT_TRUE(ks_world_node_is_paused(env.world, 3));
    CU_ASSERT_EQUAL(env.world->loss_ppm, 50000);
    /* Healed by name: each undone, with its own timeline line. */
    run_to(&env, 2500 * MS);
    CU_ASSERT_TRUE(link_up(&env, 1, 2));
    CU_ASSERT_TRUE(link_up(&env, 3, 1));
    CU_ASSERT_EQUAL(ks__node(env.world, 2)->net_delay_ns, 0);
    CU_ASSERT_FALSE(ks_world_node_is_paused(env.world, 3));
    CU_ASSERT_EQUAL(env.world->loss_ppm, 0);
    CU_ASSERT_EQUAL(report_time(&env, "heal", "fault mend-cut heals cut: network partition healed"),
                    2 * S);
    CU_ASSERT_EQUAL(report_time(&env, "heal", "fault mend-lag heals lag: broker 2 no longer slow"),
                    2 * S);
    CU_ASSERT_EQUAL(report_time(&env, "resume", "fault mend-nap heals nap: resume broker 3"),
                    2 * S);
    CU_ASSERT_EQUAL(report_time(&env, "heal", "fault mend-lossy heals lossy: no more message loss"),
                    2 * S);
    /* Past 5s, when the healed faults' durations would have ended: the second
     * faults still hold. */
    run_to(&env, 5500 * MS);
    CU_ASSERT_FALSE(link_up(&env, 1, 2));
    CU_ASSERT_TRUE(link_up(&env, 1, 3));
    CU_ASSERT_EQUAL(ks__node(env.world, 2)->net_delay_ns, 30 * MS);
    CU_ASSERT_EQUAL(ks__node(env.world, 2)->disk_delay_ns, 50 * MS);
    CU_ASSERT_TRUE(ks_world_node_is_paused(env.world, 3));
    CU_ASSERT_EQUAL(env.world->loss_ppm, 10000);
    CU_ASSERT_EQUAL(reports_matching(&env, "heal", "fault cut ends"), 0);
    CU_ASSERT_EQUAL(reports_matching(&env, "heal", "fault lag ends"), 0);
    CU_ASSERT_EQUAL(reports_matching(&env, "resume", "fault nap ends"), 0);
    CU_ASSERT_EQUAL(reports_matching(&env, "heal", "fault lossy ends"), 0);
    /* The second faults end by their own durations, once each. */
    run_to(&env, 13500 * MS);
    CU_ASSERT_TRUE(link_up(&env, 1, 2));
    CU_ASSERT_EQUAL(ks__node(env.world, 2)->net_delay_ns, 0);
    CU_ASSERT_EQUAL(ks__node(env.world, 2)->disk_delay_ns, 0);
    CU_ASSERT_FALSE(ks_world_node_is_paused(env.world, 3));
    CU_ASSERT_EQUAL(env.world->loss_ppm, 0);
    CU_ASSERT_EQUAL(report_time(&env, "heal", "fault cut2 ends: network partition healed"), 13 * S);
    CU_ASSERT_EQUAL(report_time(&env, "heal", "fault lag2 ends: broker 2 no longer slow"), 13 * S);
    CU_ASSERT_EQUAL(report_time(&env, "resume", "fault nap2 ends: resume broker 3"), 13 * S);
    CU_ASSERT_EQUAL(report_time(&env, "heal", "fault lossy2 ends: no more message loss"), 13 * S);
    CU_ASSERT_EQUAL(reports_matching(&env, "heal", "fault cut"), 1); /* cut2's end only */
    env_deinit(&env);
}

/* A heal that names a fault not in effect changes nothing and says so: one
 * that has not fired yet still fires later and ends by its own duration;
 * one that has ended stays ended. Both are skips (faults_skipped). The heals
 * fire by triggers: at fixed times the loader refuses them, since their
 * timing alone makes them no-ops (tests/sim/test_scenario.c). */
static void test_heal_not_in_effect(void)
{
    struct fault_env env;
    CU_ASSERT_FATAL(
        env_init(&env, "[fault early]\nwhen = acked(p1) >= 1\naction = heal\nfault = late\n"
                       "[fault late]\nat = 1s\naction = partition\nisolate = 1\nduration = 1s\n"
                       "[fault after]\nwhen = acked(p1) >= 1\ndelay = 2900ms\naction = heal\n"
                       "fault = late\n"));
    run_to(&env, 1500 * MS);
    int64_t early =
        report_time(&env, "skipped", "fault early skipped: fault late has not fired yet");
    CU_ASSERT(early > 0 && early < 1 * S);
    CU_ASSERT_FALSE(link_up(&env, 1, 2));
    run_to(&env, 2500 * MS);
    CU_ASSERT_TRUE(link_up(&env, 1, 2));
    CU_ASSERT_EQUAL(report_time(&env, "heal", "fault late ends: network partition healed"), 2 * S);
    run_to(&env, 4500 * MS);
    CU_ASSERT_EQUAL(
        report_time(&env, "skipped", "fault after skipped: fault late has ended already"),
        early + 2900 * MS);
    CU_ASSERT_EQUAL(ks_faults_skipped_count(env.faults), 2);
    CU_ASSERT_EQUAL(reports_matching(&env, "heal", "fault late"), 1);
    env_deinit(&env);
}

/* A heal without a name undoes the partitions and drops in effect, once
 * each (their durations end nothing later), and leaves slow and pause
 * faults alone. */
static void test_heal_without_name(void)
{
    struct fault_env env;
    CU_ASSERT_FATAL(
        env_init(&env, "[fault cut]\nat = 1s\naction = partition\nfrom = 1\nto = 2\nduration = 3s\n"
                       "[fault lossy]\nat = 1s\naction = drop\nloss = 2%\nduration = 3s\n"
                       "[fault lag]\nat = 1s\naction = slow\ntarget = 3\nnetwork.latency = 20ms\n"
                       "[fault nap]\nat = 1s\naction = pause\ntarget = 2\n"
                       "[fault mend]\nat = 2s\naction = heal\n"
                       "[fault lossy2]\nat = 3s\naction = drop\nloss = 1%\nduration = 10s\n"));
    run_to(&env, 1500 * MS);
    CU_ASSERT_FALSE(link_up(&env, 1, 2));
    CU_ASSERT_TRUE(link_up(&env, 2, 1));
    run_to(&env, 2500 * MS);
    CU_ASSERT_EQUAL(report_time(&env, "heal", "fault mend: heal every network fault"), 2 * S);
    CU_ASSERT_TRUE(link_up(&env, 1, 2));
    CU_ASSERT_EQUAL(env.world->loss_ppm, 0);
    CU_ASSERT_EQUAL(ks__node(env.world, 3)->net_delay_ns, 20 * MS);
    CU_ASSERT_TRUE(ks_world_node_is_paused(env.world, 2));
    run_to(&env, 4500 * MS); /* past cut's and lossy's durations */
    CU_ASSERT_EQUAL(env.world->loss_ppm, 10000);
    CU_ASSERT_EQUAL(reports_matching(&env, "heal", "fault cut ends"), 0);
    CU_ASSERT_EQUAL(reports_matching(&env, "heal", "fault lossy ends"), 0);
    env_deinit(&env);
}

/* ---- stop and rolling-restart ----------------------------------------------------------- */

/* A stop shuts the broker down through the controller, then its node is
 * down; restart.after counts from then; a restart fault of a stopped broker
 * works like one of a crashed one. */
static void test_stop_and_restart(void)
{
    struct fault_env env;
    CU_ASSERT_FATAL(env_init(&env, "[fault s]\nat = 1s\naction = stop\ntarget = 2\n"
                                   "restart.after = 2s\n"
                                   "[fault t]\nat = 8s\naction = stop\ntarget = 3\n"
                                   "[fault b]\nat = 12s\naction = restart\ntarget = 3\n"));
    run_to(&env, 1 * S + 1 * MS);
    CU_ASSERT_EQUAL(report_time(&env, "fault", "fault s: stop broker 2 (controlled shutdown)"),
                    1 * S);
    CU_ASSERT_TRUE(ks_world_node_is_up(env.world, 2)); /* still shutting down */
    run_to(&env, 6 * S);
    CU_ASSERT_TRUE(ks_world_node_is_up(env.world, 2)); /* back after restart.after */
    int64_t back = report_time(&env, "restart", "fault s restart.after: restart broker 2");
    CU_ASSERT(back > 3 * S && back < 5 * S); /* stopped within ~2 s of asking, + 2 s */
    run_to(&env, 11 * S);
    CU_ASSERT_FALSE(ks_world_node_is_up(env.world, 3));
    run_to(&env, 13 * S);
    CU_ASSERT_TRUE(ks_world_node_is_up(env.world, 3));
    CU_ASSERT_EQUAL(report_time(&env, "restart", "fault b: restart broker 3"), 12 * S);
    CU_ASSERT_EQUAL(ks_faults_skipped_count(env.faults), 0);
    env_deinit(&env);
}

/* A rolling restart goes broker by broker: each stops, stays down for
 * `downtime`, restarts, and the next goes only once no partition is
 * under-replicated. */
static void test_rolling_restart_steps(void)
{
    struct fault_env env;
    CU_ASSERT_FATAL(env_init(&env, "[fault r]\nat = 1s\naction = rolling-restart\n"
                                   "target = 3,1\ndowntime = 1s\n"));
    run_to(&env, 19 * S);
    int64_t stop3 = report_time(&env, "fault", "fault r step 1/2: stop broker 3");
    int64_t back3 = report_time(&env, "fault", "fault r step 1/2: broker 3 is back in every ISR");
    int64_t stop1 = report_time(&env, "fault", "fault r step 2/2: stop broker 1");
    int64_t back1 = report_time(&env, "fault", "fault r step 2/2: broker 1 is back in every ISR");
    int64_t done = report_time(&env, "fault", "fault r: rolling restart done");
    CU_ASSERT_EQUAL(stop3, 1 * S);
    CU_ASSERT(back3 > stop3 + 1 * S);
    CU_ASSERT_EQUAL(stop1, back3);
    CU_ASSERT(back1 > stop1 + 1 * S);
    CU_ASSERT_EQUAL(done, back1);
    CU_ASSERT_EQUAL(reports_matching(&env, "restart", "fault r step"), 2);
    CU_ASSERT_EQUAL(reports_matching(&env, "fault", "fault r step 1/2: stop broker 2"), 0);
    env_deinit(&env);
}

/* A broker that is down when its turn comes is skipped; one that cannot
 * bring the partitions back to full ISRs (another broker is down) ends the
 * rolling restart at catch.up.timeout, and the brokers after it are left. */
static void test_rolling_restart_bounded(void)
{
    struct fault_env env;
    CU_ASSERT_FATAL(env_init(&env, "[fault c]\nat = 500ms\naction = crash\ntarget = 3\n"
                                   "[fault r]\nat = 1s\naction = rolling-restart\ntarget = all\n"
                                   "downtime = 1s\ncatch.up.timeout = 3s\n"));
    run_to(&env, 19 * S);
    CU_ASSERT_EQUAL(report_time(&env, "fault", "fault r step 1/3: stop broker 1"), 1 * S);
    int64_t back = report_time(&env, "restart", "fault r step 1/3: restart broker 1");
    CU_ASSERT(back > 2 * S);
    int64_t ends = report_time(&env, "fault", "fault r step 1/3: ");
    CU_ASSERT(ends >= 0);
    CU_ASSERT_EQUAL(
        report_time(&env, "fault", "fault r step 1/3: 1 partition(s) still under-replicated 3s"),
        back + 3 * S);
    CU_ASSERT_EQUAL(reports_matching(&env, "fault", "fault r step 2/3"), 0);
    CU_ASSERT_FALSE(ks_world_node_is_up(env.world, 3)); /* never restarted */
    env_deinit(&env);
    /* Broker 3 is down when its turn comes: skipped, and counted. */
    CU_ASSERT_FATAL(env_init(&env, "[fault c]\nat = 500ms\naction = crash\ntarget = 3\n"
                                   "[fault r]\nat = 1s\naction = rolling-restart\ntarget = 3,1\n"
                                   "downtime = 500ms\n"));
    run_to(&env, 2 * S);
    CU_ASSERT_EQUAL(report_time(&env, "skipped", "fault r step 1/2: broker 3 is down, skipped"),
                    1 * S);
    CU_ASSERT_EQUAL(report_time(&env, "fault", "fault r step 2/2: stop broker 1"), 1 * S);
    CU_ASSERT_EQUAL(ks_faults_skipped_count(env.faults), 1);
    env_deinit(&env);
}

/* ---- the table --------------------------------------------------------------------- */

static bool is_common_key(const char *key)
{
    return strcmp(key, "action") == 0 || strcmp(key, "at") == 0 || strcmp(key, "when") == 0 ||
           strcmp(key, "delay") == 0;
}

/* A1-A3: one row per action, found by its name; every key a row names is a
 * [fault] key, and every [fault] key is some row's; whatever a timer or a
 * heal may undo has an undo. */
static void test_table_rows(void)
{
    bool used[64] = { false };
    size_t key_count = 0;
    const struct ks__key_spec *keys = ks__key_table(KS__SECTION_FAULT, &key_count);
    CU_ASSERT_FATAL(key_count <= G_N_ELEMENTS(used));
    for (int a = 0; a < KS_FAULT_ACTION_COUNT; a++) {
        const struct ks_fault_action_row *row = ks_fault_action_row((enum ks_fault_action)a);
        CU_ASSERT_EQUAL(row->action, a);
        CU_ASSERT_PTR_EQUAL(ks_fault_action_find(row->name), row);
        CU_ASSERT_STRING_EQUAL(ks_fault_action_name((enum ks_fault_action)a), row->name);
        CU_ASSERT_PTR_NOT_NULL(row->fire);
        CU_ASSERT_PTR_NOT_NULL(row->keys_doc);
        CU_ASSERT_EQUAL(row->target_wrong != NULL, row->target == KS_FAULT_TARGET_BROKER ||
                                                       row->target == KS_FAULT_TARGET_CONSUMER ||
                                                       row->target == KS_FAULT_TARGET_CLIENT);
        /* rolling-restart's target is a list, parsed by the action itself. */
        const struct ks_fault_key *target = ks_fault_action_key(row, "target");
        CU_ASSERT_EQUAL(target != NULL && target->kind == KS_FAULT_KEY_TARGET,
                        row->target != KS_FAULT_TARGET_NONE);
        if (row->healable || row->bare_heal || ks_fault_action_key(row, "duration") != NULL ||
            ks_fault_action_key(row, "restart.after") != NULL) {
            CU_ASSERT_PTR_NOT_NULL(row->undo);
            CU_ASSERT_PTR_NOT_NULL(row->undo_label);
        }
        CU_ASSERT(!row->bare_heal || row->healable);
        for (size_t i = 0; i < KS_FAULT_ACTION_KEY_COUNT_MAX && row->keys[i].name != NULL; i++) {
            const struct ks__key_spec *spec = ks__key_find(KS__SECTION_FAULT, row->keys[i].name);
            CU_ASSERT_PTR_NOT_NULL(spec);
            CU_ASSERT_FALSE(is_common_key(row->keys[i].name));
            if (spec != NULL) {
                used[spec - keys] = true;
            }
        }
    }
    for (size_t k = 0; k < key_count; k++) {
        if (!is_common_key(keys[k].name) && !used[k]) {
            fprintf(stderr, "\n[fault] key '%s' belongs to no action\n", keys[k].name);
        }
        CU_ASSERT(is_common_key(keys[k].name) || used[k]);
    }
    CU_ASSERT_PTR_NULL(ks_fault_action_find("explode"));
    g_autofree char *all = ks_fault_action_list(KS_FAULT_ACTIONS_ALL, "or");
    CU_ASSERT_STRING_EQUAL(all, "crash, restart, partition, heal, slow, pause, resume, drop, "
                                "corrupt, rewind, stop, rolling-restart or failover");
    g_autofree char *healable = ks_fault_action_list(KS_FAULT_ACTIONS_HEALABLE, "or");
    CU_ASSERT_STRING_EQUAL(healable, "partition, slow, pause or drop");
    g_autofree char *bare = ks_fault_action_list(KS_FAULT_ACTIONS_BARE_HEAL, "and");
    CU_ASSERT_STRING_EQUAL(bare, "partition and drop");
}

/* A failover's INI form loads back to the same fault, standby included. */
static void test_failover_round_trip(void)
{
    static const char text[] = "[cluster east]\n[cluster west]\n"
                               "[topic orders]\ncluster = east\n"
                               "[mirror m]\nsource = east\ntarget = west\ntopics = orders\n"
                               "[consumer c1]\ngroup.id = g\ntopic = orders\n"
                               "[fault f]\nat = 6s\naction = failover\ntarget = consumer(c1)\n";
    struct ks_scenario *s = NULL;
    GError *error = NULL;
    CU_ASSERT_FATAL(ks_scenario_load_from_data("t.ini", text, &s, &error));
    struct ks_scenario *back = ks_scenario_copy(s);
    ks_scenario_remove_faults(back);
    GString *body = g_string_new(NULL);
    ks_fault_write_ini(body, s, &s->faults[0]);
    CU_ASSERT_TRUE(ks_scenario_add_section(back, "fault f", body->str, "ini", &error));
    CU_ASSERT_TRUE_FATAL(ks_scenario_finalize(back, &error));
    g_autofree char *json = ks_scenario_params_json(s);
    g_autofree char *json_back = ks_scenario_params_json(back);
    CU_ASSERT_STRING_EQUAL(json, json_back);
    CU_ASSERT_EQUAL(back->consumer_count, 2); /* c1 and its standby c1.west */
    g_string_free(body, TRUE);
    ks_scenario_free(back);
    ks_scenario_free(s);
}

/* Every action's INI form (explore's schedules and reproducers) loads back to
 * the same fault: the same params JSON, key for key. */
static void test_ini_round_trip(void)
{
    static const char text[] =
        "[scenario]\nduration = 20s\n[cluster]\nbrokers = 3\n"
        "[topic orders]\npartitions = 3\nreplication.factor = 3\n"
        "[producer p1]\ntopic = orders\n[consumer c1]\ngroup.id = g\ntopic = orders\n"
        "[fault a]\nat = 1s\naction = partition\nisolate = leader(orders-1)\n"
        "[fault b]\nat = 2500us\naction = partition\nfrom = producer(p1)\nto = 1, 2\n"
        "duration = 500ms\n"
        "[fault b2]\nat = 2s\naction = partition\ngroups = 1 | 2,3\nduration = 1m\n"
        "[fault c]\nat = 3s\naction = heal\nfault = a\n"
        "[fault c2]\nat = 3s\naction = heal\n"
        "[fault d]\nat = 4s\naction = drop\nloss = 0.5%\nduration = 1s\n"
        "[fault f]\nat = 5s\naction = corrupt\ntarget = followers(orders-2)\n"
        "partition = orders-2\nbytes = 8\nposition.bytes = 100\n"
        "[fault f2]\nat = 5s\naction = corrupt\ntarget = 1\npartition = orders-0\n"
        "[fault g]\nat = 6s\naction = rewind\ntarget = consumer(c1)\nto = 42\n"
        "[fault h]\nwhen = acked(p1) >= 3\ndelay = 2ms\naction = rewind\n"
        "target = consumer(c1)\nto = 1.5s\n"
        "[fault h2]\nat = 6s\naction = rewind\ntarget = consumer(c1)\nto = latest\n"
        "[fault i]\nat = 7s\naction = pause\ntarget = controller\nduration = 2s\n"
        "[fault j]\nwhen = hw(2, orders-0) >= 2\naction = crash\ntarget = random\n"
        "mode = power\nrestart.after = 1500ms\n"
        "[fault l]\nat = 9s\naction = slow\ntarget = follower(orders-1)\n"
        "disk.latency = 5ms\nnetwork.latency = 50us\nduration = 1s\n"
        "[fault m]\nat = 9s\naction = resume\ntarget = consumer(c1)\n"
        "[fault m0]\nat = 8s\naction = pause\ntarget = consumer(c1)\n"
        "[fault n]\nwhen = crashed(1)\naction = restart\ntarget = 2\n"
        "[fault o]\nat = 10s\naction = stop\ntarget = leader(orders-0)\nrestart.after = 3s\n"
        "[fault p]\nat = 11s\naction = rolling-restart\ntarget = all\ndowntime = 2500ms\n"
        "[fault p2]\nat = 11s\naction = rolling-restart\ntarget = 3, 1\ndowntime = 1s\n"
        "catch.up.timeout = 90s\n";
    struct ks_scenario *s = NULL;
    GError *error = NULL;
    CU_ASSERT_FATAL(ks_scenario_load_from_data("t.ini", text, &s, &error));
    struct ks_scenario *back = ks_scenario_copy(s);
    ks_scenario_remove_faults(back);
    bool seen[KS_FAULT_ACTION_COUNT] = { false };
    for (size_t i = 0; i < s->fault_count; i++) {
        GString *body = g_string_new(NULL);
        ks_fault_write_ini(body, s, &s->faults[i]);
        g_autofree char *header = g_strdup_printf("fault %s", s->faults[i].name);
        bool added = ks_scenario_add_section(back, header, body->str, "ini", &error);
        if (!added) {
            fprintf(stderr, "\n%s\n%s", error->message, body->str);
            g_clear_error(&error);
        }
        CU_ASSERT_TRUE(added);
        seen[s->faults[i].action] = true;
        g_string_free(body, TRUE);
    }
    bool finalized = ks_scenario_finalize(back, &error);
    if (!finalized) {
        fprintf(stderr, "\n%s\n", error->message);
        g_clear_error(&error);
    }
    CU_ASSERT_TRUE_FATAL(finalized);
    g_autofree char *json = ks_scenario_params_json(s);
    g_autofree char *json_back = ks_scenario_params_json(back);
    CU_ASSERT_STRING_EQUAL(json, json_back);
    for (int a = 0; a < KS_FAULT_ACTION_COUNT; a++) {
        /* the text has every action but failover, which needs several
         * clusters (test_failover_round_trip) */
        CU_ASSERT_TRUE(seen[a] || a == KS_FAULT_FAILOVER);
    }
    /* Durations in whole milliseconds where exact, else the shortest exact form. */
    GString *body = g_string_new(NULL);
    ks_fault_write_ini(body, s, &s->faults[1]);
    CU_ASSERT_STRING_EQUAL(body->str, "at = 2500us\naction = partition\nfrom = producer(p1)\n"
                                      "to = 1,2\nduration = 500ms\n");
    g_string_free(body, TRUE);
    ks_scenario_free(back);
    ks_scenario_free(s);
}

void ks_test_register_faults(void)
{
    static const struct ks_test_case cases[] = {
        { "table rows", test_table_rows },
        { "ini round trip", test_ini_round_trip },
        { "failover ini round trip", test_failover_round_trip },
        { "trigger with delay", test_trigger_with_delay },
        { "heal every kind by name", test_heal_every_kind_by_name },
        { "heal of a fault not in effect", test_heal_not_in_effect },
        { "heal without a name", test_heal_without_name },
        { "stop and restart", test_stop_and_restart },
        { "rolling restart steps", test_rolling_restart_steps },
        { "rolling restart bounded", test_rolling_restart_bounded },
    };
    KS_TEST_ADD_SUITE("sim/faults", cases);
}
