/*
** sim/main.c: the ksim command line (SPEC section 1).
**
** `ksim COMMAND ARGS...`: run, check and describe live here (with
** sim/run.c and sim/describe.c); dump-log, sweep, explore, merge and plot
** are other modules' entry points (sim/commands.h). Those are declared weak
** so that a build without one of them still links and says
** "not available in this build" (exit 3) instead of failing to build.
**
** Exit codes: 0 ok (every expectation held), 1 an expectation failed, 2 bad
** input (FILE:LINE: message on stderr, nothing written), 3 internal error.
** An assertion failure (abort) also exits 3: SIGABRT is caught and turned
** into _exit(3) after ks_assert has printed its message and the seed.
*/
#include "commands.h"
#include "recorder.h"
#include "run.h"
#include "scenario.h"
#include "world.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#pragma weak ks_dumplog_main
#pragma weak ks_sweep_main
#pragma weak ks_explore_main
#pragma weak ks_merge_main
#pragma weak ks_plot_main

int ks_describe_main(int argc, char **argv); /* sim/describe.c */
int ks_list_main(int argc, char **argv);     /* sim/inspect.c */
int ks_compare_main(int argc, char **argv);  /* sim/inspect.c */

static const char usage_text[] =
    "usage: ksim COMMAND [ARGS...]\n"
    "\n"
    "commands:\n"
    "  run SCENARIO [--seed N] [--set KEY=VALUE]... [--db FILE] [--dir RUNDIR]\n"
    "               [--explain] [--trace FILE] [--json] [--quiet]\n"
    "                             run one scenario, print its timeline and verdict\n"
    "  check SCENARIO|FOLDER... [--seeds A-B] [--db FILE] [--dir DIR]\n"
    "                             run each, one PASS/FAIL line each\n"
    "  sweep SCENARIO --vary KEY=V1,V2,... --seeds A-B [--jobs N] [--db FILE]\n"
    "  explore SCENARIO --seeds A-B [--faults N] [--jobs N] [--db FILE]\n"
    "  merge OUT.db IN.db...      combine databases made by shards\n"
    "  plot DB [--run ID] --kind throughput|latency|isr|hw|loss|availability [-o FILE]\n"
    "  dump-log PATH [--print-data-log] [--deep-iteration]\n"
    "  describe DB [--run ID] [--at TIME]\n"
    "                             topic state as kafka-topics.sh --describe shows it\n"
    "  list DB                    the runs in a database, one line each\n"
    "  compare DB RUN_A RUN_B     settings that differ, metrics side by side, anomaly counts\n"
    "\n"
    "examples:\n"
    "  ksim run scenarios/quickstart.ini\n"
    "  ksim run scenarios/quickstart.ini --seed 7 --set producer.p1.acks=1 --explain\n"
    "  ksim check scenarios\n"
    "  ksim describe ksim.db --at 12s\n"
    "\n"
    "`ksim COMMAND --help` describes each command. Exit codes: 0 ok, 1 an expectation\n"
    "failed, 2 bad input, 3 internal error.\n";

static void on_abort(int signal_number)
{
    (void)signal_number;
    _exit(3);
}

/* ---- shared helpers ----------------------------------------------------------- */

/* Parses the options of a GOptionContext; errors are bad input (exit 2). */
static bool parse_options(GOptionContext *context, int *argc, char ***argv)
{
    GError *error = NULL;
    if (!g_option_context_parse(context, argc, argv, &error)) {
        fprintf(stderr, "ksim: %s (see --help)\n", error->message);
        g_error_free(error);
        return false;
    }
    return true;
}

static bool parse_seed(const char *text, uint64_t *out)
{
    guint64 value = 0;
    if (!g_ascii_string_to_unsigned(text, 10, 0, G_MAXUINT64, &value, NULL)) {
        return false;
    }
    *out = value;
    return true;
}

/* Loads a scenario, applies --set assignments, finalizes. Prints the error
 * (FILE:LINE: what is wrong) and returns NULL on bad input. */
static struct ks_scenario *load_scenario(const char *path, char **sets)
{
    GError *error = NULL;
    struct ks_scenario *scenario = NULL;
    if (!ks_scenario_parse(path, &scenario, &error)) {
        fprintf(stderr, "%s\n", error->message);
        g_error_free(error);
        return NULL;
    }
    for (size_t i = 0; sets != NULL && sets[i] != NULL; i++) {
        if (!ks_scenario_apply_set(scenario, sets[i], &error)) {
            fprintf(stderr, "%s\n", error->message);
            g_error_free(error);
            ks_scenario_free(scenario);
            return NULL;
        }
    }
    if (!ks_scenario_finalize(scenario, &error)) {
        fprintf(stderr, "%s\n", error->message);
        g_error_free(error);
        ks_scenario_free(scenario);
        return NULL;
    }
    return scenario;
}

/* ---- ksim run ------------------------------------------------------------------- */

static int run_main(int argc, char **argv)
{
    char *seed_text = NULL;
    char **sets = NULL;
    char *db_path = NULL;
    char *run_dir = NULL;
    char *trace_path = NULL;
    gboolean explain = FALSE;
    gboolean json = FALSE;
    gboolean quiet = FALSE;
    GOptionEntry entries[] = {
        { "seed", 0, 0, G_OPTION_ARG_STRING, &seed_text, "Seed (default: the scenario's)", "N" },
        { "set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &sets, "Override a scenario key (repeatable)",
          "KEY=VALUE" },
        { "db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database (default ksim.db)", "FILE" },
        { "dir", 0, 0, G_OPTION_ARG_FILENAME, &run_dir,
          "Run folder (default runs/<name>-s<seed>)", "RUNDIR" },
        { "explain", 0, 0, G_OPTION_ARG_NONE, &explain, "Narrate each timeline step", NULL },
        { "trace", 0, 0, G_OPTION_ARG_FILENAME, &trace_path, "Write every world event to FILE",
          "FILE" },
        { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print one JSON object: the run summary", NULL },
        { "quiet", 0, 0, G_OPTION_ARG_NONE, &quiet, "Print only the verdict line", NULL },
        { NULL, 0, 0, 0, NULL, NULL, NULL },
    };
    GOptionContext *context = g_option_context_new("SCENARIO - run one scenario");
    g_option_context_add_main_entries(context, entries, NULL);
    g_option_context_set_description(
        context,
        "Runs the scenario to its duration, heals and drains (final.heal), reads every\n"
        "partition, and prints the timeline, the summary metrics and each [expect] line.\n"
        "Exit 0: every expectation held; 1: one failed; 2: bad input; 3: internal error.\n"
        "\n"
        "Examples:\n"
        "  ksim run scenarios/quickstart.ini\n"
        "  ksim run scenarios/quickstart.ini --seed 3 --set producer.p1.acks=1 --explain\n"
        "  ksim run scenarios/quickstart.ini --json --db /tmp/runs.db\n");
    int code = 2;
    struct ks_scenario *scenario = NULL;
    if (!parse_options(context, &argc, &argv)) {
        goto out;
    }
    if (argc != 2) {
        fprintf(stderr, "ksim run: expected one SCENARIO file, got %d arguments (see --help)\n",
                argc - 1);
        goto out;
    }
    uint64_t seed = 0;
    if (seed_text != NULL && !parse_seed(seed_text, &seed)) {
        fprintf(stderr, "ksim run: --seed %s: not a non-negative integer\n", seed_text);
        goto out;
    }
    scenario = load_scenario(argv[1], sets);
    if (scenario == NULL) {
        goto out;
    }
    struct ks_run_options options = {
        .seed = seed,
        .seed_given = seed_text != NULL,
        .db_path = db_path != NULL ? db_path : "ksim.db",
        .run_dir = run_dir,
        .out = stdout,
        .explain = explain,
        .json = json,
        .quiet = quiet && !json,
        .progress = isatty(STDERR_FILENO) && !json,
        .trace_path = trace_path,
        .set_assignments = (const char *const *)sets,
        .set_count = sets != NULL ? g_strv_length(sets) : 0,
    };
    struct ks_run_result result;
    GError *error = NULL;
    code = ks_run_scenario(scenario, &options, &result, &error);
    if (error != NULL) {
        fprintf(stderr, "%s%s\n", code == 3 ? "ksim: internal error: " : "", error->message);
        g_error_free(error);
    }
out:
    ks_scenario_free(scenario);
    g_option_context_free(context);
    g_free(seed_text);
    g_strfreev(sets);
    g_free(db_path);
    g_free(run_dir);
    g_free(trace_path);
    return code;
}

/* ---- ksim check ----------------------------------------------------------------- */

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Expands folders to their *.ini files (sorted by name); keeps files. */
static GPtrArray *collect_files(char **paths, bool *bad)
{
    GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
    for (size_t i = 0; paths[i] != NULL; i++) {
        if (!g_file_test(paths[i], G_FILE_TEST_IS_DIR)) {
            g_ptr_array_add(files, g_strdup(paths[i]));
            continue;
        }
        GError *error = NULL;
        GDir *dir = g_dir_open(paths[i], 0, &error);
        if (dir == NULL) {
            fprintf(stderr, "%s: %s\n", paths[i], error->message);
            g_error_free(error);
            *bad = true;
            continue;
        }
        GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
        const char *name;
        while ((name = g_dir_read_name(dir)) != NULL) {
            char *full = g_build_filename(paths[i], name, NULL);
            if (g_str_has_suffix(name, ".ini") && g_file_test(full, G_FILE_TEST_IS_REGULAR)) {
                g_ptr_array_add(names, full);
            } else {
                g_free(full);
            }
        }
        g_dir_close(dir);
        qsort(names->pdata, names->len, sizeof(char *), compare_strings);
        for (guint j = 0; j < names->len; j++) {
            g_ptr_array_add(files, g_strdup(names->pdata[j]));
        }
        g_ptr_array_free(names, TRUE);
    }
    return files;
}

static bool parse_seed_range(const char *text, uint64_t *first, uint64_t *last)
{
    char **parts = g_strsplit(text, "-", 2);
    bool ok = parts[0] != NULL && parse_seed(parts[0], first);
    if (ok) {
        ok = parts[1] == NULL ? (*last = *first, true) : parse_seed(parts[1], last);
    }
    g_strfreev(parts);
    return ok && *first <= *last;
}


struct check_tally {
    int passed;
    int failed;
    bool internal; /* a run ended in an internal error (exit 3) */
    bool bad;      /* a run met bad input (exit 2) */
};

/* Runs one scenario with one seed for `ksim check` and prints its line. */
static void check_one(const struct ks_scenario *scenario, uint64_t seed, bool show_seed,
                      struct ks_recorder *recorder, const char *parent, bool remove_after,
                      struct check_tally *tally)
{
    char *label = show_seed ? g_strdup_printf("%s (seed %" PRIu64 ")", scenario->name, seed)
                            : g_strdup(scenario->name);
    char *name = g_strdup_printf("%s-s%" PRIu64, scenario->name, seed);
    char *run_dir = g_build_filename(parent, name, NULL);
    struct ks_run_options options = {
        .seed = seed, .seed_given = true, .recorder = recorder, .run_dir = run_dir,
    };
    struct ks_run_result result;
    GError *error = NULL;
    int code = ks_run_scenario(scenario, &options, &result, &error);
    if (code == 0) {
        printf("PASS %s\n", label);
        tally->passed++;
    } else if (code == 1) {
        printf("FAIL %s: %s\n", label, result.first_failure);
        tally->failed++;
    } else {
        printf("FAIL %s: %s\n", label, error != NULL ? error->message : "internal error");
        tally->failed++;
        tally->internal = tally->internal || code == 3;
        tally->bad = tally->bad || code == 2;
    }
    fflush(stdout);
    g_clear_error(&error);
    if (remove_after) {
        ks_host_remove_tree(run_dir);
    }
    g_free(run_dir);
    g_free(name);
    g_free(label);
}

static int check_main(int argc, char **argv)
{
    char *seeds_text = NULL;
    char *db_path = NULL;
    char *dir = NULL;
    GOptionEntry entries[] = {
        { "seeds", 0, 0, G_OPTION_ARG_STRING, &seeds_text,
          "Run each scenario with every seed in A-B (default: its own seed)", "A-B" },
        { "db", 0, 0, G_OPTION_ARG_FILENAME, &db_path,
          "Record the runs here (default: a temporary database)", "FILE" },
        { "dir", 0, 0, G_OPTION_ARG_FILENAME, &dir,
          "Folder for the run folders (default: a temporary folder)", "DIR" },
        { NULL, 0, 0, 0, NULL, NULL, NULL },
    };
    GOptionContext *context =
        g_option_context_new("SCENARIO|FOLDER... - run scenarios and judge their [expect]");
    g_option_context_add_main_entries(context, entries, NULL);
    g_option_context_set_description(
        context,
        "A folder stands for its *.ini files, sorted by name. Prints `PASS name` or\n"
        "`FAIL name: expr (actual X)` for each run, then `N passed, N failed`.\n"
        "Exit 0: all passed; 1: one failed; 2: bad input (nothing is run); 3: internal error.\n"
        "\n"
        "Examples:\n"
        "  ksim check scenarios\n"
        "  ksim check scenarios/regress --seeds 1-20\n");
    int code = 2;
    GPtrArray *files = NULL;
    GPtrArray *scenarios = g_ptr_array_new_with_free_func((GDestroyNotify)ks_scenario_free);
    char *temp = NULL;
    struct ks_recorder *recorder = NULL;
    if (!parse_options(context, &argc, &argv)) {
        goto out;
    }
    if (argc < 2) {
        fprintf(stderr, "ksim check: expected at least one SCENARIO or FOLDER (see --help)\n");
        goto out;
    }
    uint64_t first = 0;
    uint64_t last = 0;
    if (seeds_text != NULL && !parse_seed_range(seeds_text, &first, &last)) {
        fprintf(stderr, "ksim check: --seeds %s: expected A-B with A <= B\n", seeds_text);
        goto out;
    }
    bool bad = false;
    files = collect_files(argv + 1, &bad);
    /* Load every file first: bad input stops everything before anything runs. */
    for (guint i = 0; i < files->len; i++) {
        struct ks_scenario *scenario = load_scenario(files->pdata[i], NULL);
        if (scenario == NULL) {
            bad = true;
        } else {
            g_ptr_array_add(scenarios, scenario);
        }
    }
    if (bad) {
        goto out;
    }
    temp = g_dir_make_tmp("ksim-check-XXXXXX", NULL);
    if (temp == NULL) {
        fprintf(stderr, "ksim check: cannot make a temporary folder\n");
        code = 3;
        goto out;
    }
    GError *error = NULL;
    char *db_file = db_path != NULL ? g_strdup(db_path) : g_build_filename(temp, "check.db", NULL);
    recorder = ks_recorder_open(db_file, &error);
    g_free(db_file);
    if (recorder == NULL) {
        fprintf(stderr, "%s\n", error->message);
        g_error_free(error);
        goto out;
    }
    struct check_tally tally = { 0 };
    for (guint i = 0; i < scenarios->len; i++) {
        const struct ks_scenario *scenario = scenarios->pdata[i];
        uint64_t from = seeds_text != NULL ? first : scenario->seed;
        uint64_t to = seeds_text != NULL ? last : scenario->seed;
        for (uint64_t seed = from; seed <= to; seed++) {
            check_one(scenario, seed, seeds_text != NULL, recorder, dir != NULL ? dir : temp,
                      dir == NULL, &tally);
            if (seed == UINT64_MAX) {
                break;
            }
        }
    }
    int passed = tally.passed;
    int failed = tally.failed;
    bool internal = tally.internal;
    bad = bad || tally.bad;
    printf("%d passed, %d failed\n", passed, failed);
    code = internal ? 3 : bad ? 2 : failed > 0 ? 1 : 0;
out:
    ks_recorder_close(recorder);
    if (temp != NULL) {
        ks_host_remove_tree(temp);
        g_free(temp);
    }
    if (files != NULL) {
        g_ptr_array_free(files, TRUE);
    }
    g_ptr_array_free(scenarios, TRUE);
    g_option_context_free(context);
    g_free(seeds_text);
    g_free(db_path);
    g_free(dir);
    return code;
}

/* ---- dispatch -------------------------------------------------------------------- */

typedef int command_fn(int argc, char **argv);

static int dispatch_optional(command_fn *fn, const char *name, int argc, char **argv)
{
    if (fn == NULL) {
        fprintf(stderr, "ksim: %s: not available in this build\n", name);
        return 3;
    }
    return fn(argc, argv);
}

int main(int argc, char **argv)
{
    signal(SIGABRT, on_abort);
    if (argc < 2) {
        fputs(usage_text, stderr);
        return 2;
    }
    const char *command = argv[1];
    if (strcmp(command, "--help") == 0 || strcmp(command, "-h") == 0 ||
        strcmp(command, "help") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    if (strcmp(command, "run") == 0) {
        return run_main(sub_argc, sub_argv);
    }
    if (strcmp(command, "check") == 0) {
        return check_main(sub_argc, sub_argv);
    }
    if (strcmp(command, "describe") == 0) {
        return ks_describe_main(sub_argc, sub_argv);
    }
    if (strcmp(command, "list") == 0) {
        return ks_list_main(sub_argc, sub_argv);
    }
    if (strcmp(command, "compare") == 0) {
        return ks_compare_main(sub_argc, sub_argv);
    }
    if (strcmp(command, "dump-log") == 0) {
        return dispatch_optional(ks_dumplog_main, command, sub_argc, sub_argv);
    }
    if (strcmp(command, "sweep") == 0) {
        return dispatch_optional(ks_sweep_main, command, sub_argc, sub_argv);
    }
    if (strcmp(command, "explore") == 0) {
        return dispatch_optional(ks_explore_main, command, sub_argc, sub_argv);
    }
    if (strcmp(command, "merge") == 0) {
        return dispatch_optional(ks_merge_main, command, sub_argc, sub_argv);
    }
    if (strcmp(command, "plot") == 0) {
        return dispatch_optional(ks_plot_main, command, sub_argc, sub_argv);
    }
    fprintf(stderr, "ksim: unknown command '%s'\n\n%s", command, usage_text);
    return 2;
}
