/*
** sim/main.c: the ksim command line (SPEC section 1).
**
** `ksim COMMAND ARGS...`: run, check and help live here (with sim/run.c);
** the other commands are other modules' entry points (sim/commands.h). One
** static table (`commands` below) names every command with its entry point,
** its synopsis and a one-line summary: dispatch, `ksim help`, `ksim --help`
** and tests/cli.sh (every row answers `--help` with exit 0) all read it, so
** a command cannot be renamed in one place and missed in another. Adding a
** command is one row.
**
** Exit codes: 0 ok (every expectation held), 1 an expectation failed, 2 bad
** input (FILE:LINE: message on stderr, nothing written), 3 internal error.
** An assertion failure (abort) also exits 3: SIGABRT is caught and turned
** into _exit(3) after ks_assert has printed its message and the seed.
*/
#include "commands.h"
#include "recorder.h"
#include "report.h"
#include "run.h"
#include "scenario.h"
#include "sweep.h"
#include "world.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ksim's own version. The Kafka release whose defaults and behaviours the
 * model follows without kafka.version is the default row of the version
 * table (sim/kafka_versions.c). */
#define KSIM_VERSION "0.9.0"

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

/* A seed: 0 to INT64_MAX, which SQLite's signed integers store as given
 * (a larger one would read back as a negative number). */
static bool parse_seed(const char *text, uint64_t *out)
{
    guint64 value = 0;
    if (!g_ascii_string_to_unsigned(text, 10, 0, G_MAXINT64, &value, NULL)) {
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

/* --report: the page of the run just recorded (sim/report.c). */
static int write_run_report(const char *db_path, int64_t run_id, const char *path)
{
    GError *error = NULL;
    struct ks_recorder *recorder = ks_recorder_open_readonly(db_path, &error);
    int code =
        recorder != NULL ? ks_report_write(ks_recorder_db(recorder), run_id, path, &error) : 3;
    if (code != 0) {
        fprintf(stderr, "ksim run: --report: %s\n", error->message);
        g_error_free(error);
    }
    ks_recorder_close(recorder);
    return code;
}

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
    char *report_path = NULL;
    GOptionEntry entries[] = {
        { "seed", 0, 0, G_OPTION_ARG_STRING, &seed_text, "Seed (default: the scenario's)", "N" },
        { "set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &sets, "Override a scenario key (repeatable)",
          "KEY=VALUE" },
        { "db", 0, 0, G_OPTION_ARG_FILENAME, &db_path, "SQLite database (default ksim.db)",
          "FILE" },
        { "dir", 0, 0, G_OPTION_ARG_FILENAME, &run_dir,
          "Run folder (default runs/<name>-s<seed>-<settings hash>)", "RUNDIR" },
        { "explain", 0, 0, G_OPTION_ARG_NONE, &explain, "Narrate each timeline step", NULL },
        { "trace", 0, 0, G_OPTION_ARG_FILENAME, &trace_path, "Write every world event to FILE",
          "FILE" },
        { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print one JSON object: the run summary", NULL },
        { "quiet", 0, 0, G_OPTION_ARG_NONE, &quiet, "Print only the verdict line", NULL },
        { "report", 0, 0, G_OPTION_ARG_FILENAME, &report_path,
          "Also write the run's page, as ksim report does", "FILE.html" },
        { NULL, 0, 0, 0, NULL, NULL, NULL },
    };
    GOptionContext *context = g_option_context_new("SCENARIO - run one scenario");
    g_option_context_add_main_entries(context, entries, NULL);
    g_option_context_set_description(
        context, "Runs the scenario to its duration, heals and drains (final.heal), reads every\n"
                 "partition, and prints the timeline, the summary metrics and each [expect] line.\n"
                 "Exit 0: every expectation held; 1: one failed; 2: bad input; 3: internal error.\n"
                 "\n"
                 "The brokers' logs go to the run folder, runs/<name>-s<seed>-<hash> by default,\n"
                 "where <hash> stands for the effective settings (--set included), so runs with\n"
                 "other settings never share a folder; runs.run_dir in the database records it. A\n"
                 "run locks its folder: a second run of the same settings and seed into it while\n"
                 "the first runs fails at once (exit 2).\n"
                 "\n"
                 "Examples:\n"
                 "  ksim run scenarios/quickstart.ini\n"
                 "  ksim run scenarios/quickstart.ini --seed 3 --set producer.p1.acks=1 --explain\n"
                 "  ksim run scenarios/quickstart.ini --json --db /tmp/runs.db\n"
                 "  ksim run scenarios/kip101-scenario1-hw.ini --report kip101.html\n");
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
        fprintf(stderr, "ksim run: --seed %s: expected an integer from 0 to %" PRId64 "\n",
                seed_text, INT64_MAX);
        goto out;
    }
    scenario = load_scenario(argv[1], sets);
    if (scenario == NULL) {
        goto out;
    }
    GError *report_error = NULL;
    if (report_path != NULL && !ks_report_check_output(report_path, &report_error)) {
        fprintf(stderr, "ksim run: --report %s\n", report_error->message);
        g_error_free(report_error);
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
        /* Host failures (file errors: a full disk) are not ksim's bugs. */
        fprintf(stderr, "%s%s\n",
                code != 3 ? ""
                : error->domain == G_FILE_ERROR || error->domain == KS_RECORDER_ERROR
                    ? "ksim: "
                    : "ksim: internal error: ",
                error->message);
        g_error_free(error);
    }
    if (report_path != NULL && (code == 0 || code == 1) && result.run_id > 0) {
        int report_code = write_run_report(options.db_path, result.run_id, report_path);
        code = report_code != 0 ? report_code : code;
    }
out:
    ks_scenario_free(scenario);
    g_option_context_free(context);
    g_free(report_path);
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
    char *name = ks_run_dir_name(scenario, seed);
    char *run_dir = g_build_filename(parent, name, NULL);
    struct ks_run_options options = {
        .seed = seed,
        .seed_given = true,
        .recorder = recorder,
        .run_dir = run_dir,
        .run_dir_discarded = remove_after,
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
    int temp_lock = -1;
    struct ks_recorder *recorder = NULL;
    if (!parse_options(context, &argc, &argv)) {
        goto out;
    }
    if (argc < 2) {
        fprintf(stderr, "ksim check: expected at least one SCENARIO or FOLDER (see --help)\n");
        goto out;
    }
    if (dir != NULL && *dir == '\0') {
        fprintf(stderr, "ksim check: --dir '': an empty folder name\n");
        goto out;
    }
    uint64_t first = 0;
    uint64_t last = 0;
    GError *seeds_error = NULL;
    if (seeds_text != NULL && !ks_sweep_parse_seeds(seeds_text, &first, &last, &seeds_error)) {
        fprintf(stderr, "ksim check: %s\n", seeds_error->message);
        g_error_free(seeds_error);
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
    /* Locked while ksim lives: a check killed midway leaves it only until
     * the next ksim check removes it. */
    GError *error = NULL;
    temp = ks_host_temp_dir_new(NULL, "ksim-check-", &temp_lock, &error);
    if (temp == NULL) {
        fprintf(stderr, "ksim check: %s\n", error->message);
        g_error_free(error);
        code = 3;
        goto out;
    }
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
    ks_host_temp_dir_free(temp, temp_lock);
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

/* ---- the command table ---------------------------------------------------------- */

typedef int command_fn(int argc, char **argv);

static int help_main(int argc, char **argv);

struct command {
    const char *name;
    command_fn *fn;
    const char *synopsis; /* the arguments after the name; '\n' continues on the next line */
    const char *summary;  /* one line */
};

/* Every command, in the order `ksim --help` lists them (SPEC section 1's). */
static const struct command commands[] = {
    { "run", run_main,
      "SCENARIO [--seed N] [--set KEY=VALUE]... [--db FILE] [--dir RUNDIR]\n"
      "[--explain] [--trace FILE] [--json] [--quiet] [--report FILE.html]",
      "run one scenario, print its timeline, summary and verdict" },
    { "check", check_main, "SCENARIO|FOLDER... [--seeds A-B] [--db FILE] [--dir DIR]",
      "run each, evaluate its [expect]; one PASS/FAIL line each" },
    { "sweep", ks_sweep_main,
      "SCENARIO --vary KEY=V1,V2,... [--vary ...] --seeds A-B [--jobs N] [--db FILE]\n"
      "[--shard I/N]",
      "every combination of settings with every seed, into one database" },
    { "explore", ks_explore_main,
      "SCENARIO --seeds A-B [--faults N] [--jobs N] [--db FILE] [--shard I/N]",
      "random fault schedules; a shrunk reproducer file for each failing seed" },
    { "merge", ks_merge_main, "OUT.db IN.db...", "combine databases made by shards" },
    { "plot", ks_plot_main,
      "DB [--run ID] --kind throughput|latency|isr|hw|loss|availability|mirror-lag\n"
      "[-o FILE.png|.svg]",
      "a graph of a run, or of a sweep per setting" },
    { "dump-log", ks_dumplog_main, "PATH [--print-data-log] [--deep-iteration]",
      "inspect segment files as kafka-dump-log.sh does" },
    { "describe", ks_describe_main, "DB [--run ID] [--at TIME]",
      "topic state as kafka-topics.sh --describe shows it" },
    { "list", ks_list_main, "DB", "the runs in a database, one line each" },
    { "compare", ks_compare_main, "DB RUN_A RUN_B",
      "settings that differ, metrics side by side, anomaly counts" },
    { "report", ks_report_main, "DB [--run ID] -o FILE.html",
      "a self-contained page to step through a run" },
    { "help", help_main, "[COMMAND]", "this text, or one command's usage" },
};

static const struct command *find_command(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++) {
        if (strcmp(commands[i].name, name) == 0) {
            return &commands[i];
        }
    }
    return NULL;
}

/* The synopsis of one command, continuation lines indented under it. */
static void print_synopsis(FILE *out, const struct command *command, const char *prefix)
{
    int indent = (int)(strlen(prefix) + strlen(command->name) + 1);
    fprintf(out, "%s%s ", prefix, command->name);
    for (const char *p = command->synopsis; *p != '\0'; p++) {
        fputc(*p, out);
        if (*p == '\n') {
            fprintf(out, "%*s", indent, "");
        }
    }
    fputc('\n', out);
}

static void print_usage(FILE *out)
{
    fputs("usage: ksim COMMAND [ARGS...]\n\ncommands:\n", out);
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++) {
        print_synopsis(out, &commands[i], "  ");
        fprintf(out, "      %s\n", commands[i].summary);
    }
    fputs("\n"
          "examples:\n"
          "  ksim run scenarios/quickstart.ini\n"
          "  ksim run scenarios/quickstart.ini --seed 7 --set producer.p1.acks=1 --explain\n"
          "  ksim check scenarios\n"
          "  ksim describe ksim.db --at 12s\n"
          "\n"
          "`ksim help COMMAND` or `ksim COMMAND --help` describes each command;\n"
          "`ksim --version` prints the version. Exit codes: 0 ok, 1 an expectation\n"
          "failed, 2 bad input, 3 internal error.\n",
          out);
}

/* Runs one command; argv[0] is its name. */
static int dispatch(const struct command *command, int argc, char **argv)
{
    /* GOption's --help and error texts name the program: "ksim run". */
    char *prgname = g_strdup_printf("ksim %s", command->name);
    g_set_prgname(prgname);
    g_free(prgname);
    return command->fn(argc, argv);
}

/* `ksim help [COMMAND]`: the usage on stdout, exit 0; an unknown command is
 * bad input. A command's own usage is its `--help`. */
static int help_main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        print_usage(stdout);
        return 0;
    }
    const struct command *command = find_command(argv[1]);
    if (command == NULL || argc > 2) {
        fprintf(stderr, "ksim help: %s: %s (commands: see ksim --help)\n",
                argc > 2 ? argv[2] : argv[1],
                argc > 2 ? "expected one COMMAND" : "no such command");
        return 2;
    }
    char *help_argv[] = { (char *)command->name, "--help", NULL };
    return dispatch(command, 2, help_argv);
}

int main(int argc, char **argv)
{
    signal(SIGABRT, on_abort);
    /* A file size limit (ulimit -f) then fails a write with EFBIG, a host
     * I/O error with its path, instead of killing ksim without a word. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        print_usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_usage(stdout);
        return 0;
    }
    if (strcmp(name, "--version") == 0) {
        g_autofree char *names = ks_kafka_version_names();
        printf("ksim %s (defaults and behaviours of Apache Kafka %s; kafka.version: %s)\n",
               KSIM_VERSION, ks_kafka_version_default()->name, names);
        return 0;
    }
    const struct command *command = find_command(name);
    if (command == NULL) {
        fprintf(stderr, "ksim: unknown command '%s'\n\n", name);
        print_usage(stderr);
        return 2;
    }
    return dispatch(command, argc - 1, argv + 1);
}
