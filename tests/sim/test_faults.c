/* tests/sim/test_faults.c: the fault schedule of a run (sim/faults.c).
 *
 * Goal: each fault fires once, at its time or when its trigger first holds,
 * changes the world as its action says, and is undone exactly once (by its
 * own duration, or earlier by a heal), never undoing what a later fault did.
 * Method: a small cluster (three brokers, one producer) built from scenario
 * text on a world of its own, with the fault schedule driven as sim/run.c
 * drives it (the after-event hook evaluates triggers); the test runs the
 * world to chosen times and reads the world's state (links, pauses, node
 * delays, loss) and the reported timeline lines. */
#include "../../sim/faults.h"
#include "../../sim/world_int.h"
#include "../testlib.h"

#include <string.h>

#define MS 1000000ll
#define S 1000000000ll

static const char base_scenario[] =
    "[scenario]\n"
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
    CU_ASSERT_FATAL(env_init(&env,
                             "[fault first]\nwhen = acked(p1) >= 10\ndelay = 100ms\n"
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

void ks_test_register_faults(void)
{
    static const struct ks_test_case cases[] = {
        { "trigger with delay", test_trigger_with_delay },
    };
    KS_TEST_ADD_SUITE("sim/faults", cases);
}
