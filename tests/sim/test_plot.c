/* tests/sim/test_plot.c: `ksim plot` renders every kind, and refuses what it
 * cannot plot.
 *
 * Goal: each of the seven kinds turns a ksim database into a real image, and
 * the input errors of SPEC 1 (unknown run, a database that is not ksim's,
 * a run with nothing to plot, gnuplot missing) exit 2 without writing one.
 * Method: a hand-made database (tests/sim/fixture_db.h: SPEC 4 tables only,
 * one run with a crash window and an election, plus six sweep runs over two
 * settings) is plotted through ks_plot_main as the command line would call
 * it; each output is checked for the PNG (or SVG) signature and a size that
 * a blank image would not reach. KSIM_TEST_KEEP_PLOTS=FOLDER keeps the
 * images for a look. */
#include "../../sim/commands.h"
#include "../testlib.h"
#include "fixture_db.h"

#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct plot_env {
    char *dir;     /* owned temp folder */
    char *db_path; /* owned */
    int64_t timeline_run;
    int64_t empty_run;
};

static void plot_env_init(struct plot_env *env)
{
    env->dir = g_dir_make_tmp("ksim-plot-test-XXXXXX", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(env->dir);
    env->db_path = g_build_filename(env->dir, "runs.db", NULL);
    sqlite3 *db = fixture_db_create(env->db_path);
    env->timeline_run = fixture_add_run(db, "acks1-crash", 7, "{\"acks\":\"1\"}", NULL, 0, 0, 0);
    fixture_add_timeline(db, env->timeline_run);
    env->empty_run = fixture_add_run(db, "acks1-crash", 8, "{\"acks\":\"1\"}", NULL, 0, 0, 0);
    for (int64_t seed = 1; seed <= 3; seed++) {
        fixture_add_run(db, "acks1-crash", seed, "{\"acks\":\"1\"}", "producer.p1.acks=1",
                        (double)(seed * 10), (double)seed, 2000.0 + (double)seed * 100);
        fixture_add_run(db, "acks1-crash", seed, "{\"acks\":\"all\"}", "producer.p1.acks=all", 0,
                        (double)(seed - 1), 9000.0 + (double)seed * 300);
    }
    sqlite3_close(db);
}

/* KSIM_TEST_KEEP_PLOTS=FOLDER keeps a copy of every image, for a human to
 * look at. */
static void keep_images(const char *dir)
{
    const char *keep = g_getenv("KSIM_TEST_KEEP_PLOTS");
    GDir *listing = keep != NULL ? g_dir_open(dir, 0, NULL) : NULL;
    if (listing == NULL) {
        return;
    }
    const char *name;
    while ((name = g_dir_read_name(listing)) != NULL) {
        if (!g_str_has_suffix(name, ".png") && !g_str_has_suffix(name, ".svg")) {
            continue;
        }
        g_autofree char *source = g_build_filename(dir, name, NULL);
        g_autofree char *target = g_build_filename(keep, name, NULL);
        g_autofree char *data = NULL;
        gsize length = 0;
        if (g_file_get_contents(source, &data, &length, NULL)) {
            g_file_set_contents(target, data, (gssize)length, NULL);
        }
    }
    g_dir_close(listing);
}

static void plot_env_deinit(struct plot_env *env)
{
    keep_images(env->dir);
    ks_test_remove_tree(env->dir);
    g_free(env->dir);
    g_free(env->db_path);
}

/* Runs `ksim plot` with the given arguments after "plot DB". */
static int run_plot(struct plot_env *env, const char *db_path, const char *const *args)
{
    const char *argv[16] = { "plot", db_path ? db_path : env->db_path };
    int argc = 2;
    for (; args[argc - 2] != NULL; argc++) {
        argv[argc] = args[argc - 2];
    }
    argv[argc] = NULL;
    return ks_plot_main(argc, (char **)argv);
}

/* Size in bytes, or -1; checks the signature of PNG or SVG. */
static int64_t image_bytes(const char *path, bool svg)
{
    g_autofree char *data = NULL;
    gsize length = 0;
    if (!g_file_get_contents(path, &data, &length, NULL)) {
        return -1;
    }
    static const unsigned char png_signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    if (svg) {
        if (strstr(data, "<svg") == NULL) {
            return -1;
        }
    } else if (length < 8 || memcmp(data, png_signature, 8) != 0) {
        return -1;
    }
    return (int64_t)length;
}

static void check_kind(const char *kind, const char *extra_option, const char *extra_value)
{
    struct plot_env env;
    plot_env_init(&env);
    g_autofree char *output = g_strdup_printf("%s/%s.png", env.dir, kind);
    g_autofree char *run = g_strdup_printf("%" G_GINT64_FORMAT, env.timeline_run);
    const char *args[] = { "--kind", kind,         "-o",        output, "--run",
                           run,      extra_option, extra_value, NULL };
    CU_ASSERT_EQUAL(run_plot(&env, NULL, args), 0);
    int64_t bytes = image_bytes(output, false);
    /* An empty 1100x620 frame compresses to a few kB; lines, bars and text
     * take it well past 15 kB. */
    CU_ASSERT(bytes > 15000);
    plot_env_deinit(&env);
}

static void test_plot_throughput(void)
{
    check_kind("throughput", NULL, NULL);
}

static void test_plot_latency(void)
{
    check_kind("latency", NULL, NULL);
}

static void test_plot_isr(void)
{
    check_kind("isr", NULL, NULL);
}

static void test_plot_hw(void)
{
    check_kind("hw", "--partition", "orders-0");
}

static void test_plot_loss(void)
{
    check_kind("loss", NULL, NULL);
}

static void test_plot_availability(void)
{
    check_kind("availability", NULL, NULL);
}

/* mirror-lag: a run without the table's rows (the fixture's database has
 * SPEC 4's tables only) is refused; with a mirror's lag rising during the
 * crash window and falling after, it draws. */
static void test_plot_mirror_lag(void)
{
    struct plot_env env;
    plot_env_init(&env);
    g_autofree char *output = g_strdup_printf("%s/mirror-lag.png", env.dir);
    g_autofree char *run = g_strdup_printf("%" G_GINT64_FORMAT, env.timeline_run);
    const char *args[] = { "--kind", "mirror-lag", "-o", output, "--run", run, NULL };
    CU_ASSERT_EQUAL(run_plot(&env, NULL, args), 2);
    CU_ASSERT_FALSE(g_file_test(output, G_FILE_TEST_EXISTS));
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(env.db_path, &db), SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(db,
                                 "CREATE TABLE mirror_lag(run_id INTEGER NOT NULL, t_ns INTEGER "
                                 "NOT NULL, mirror TEXT NOT NULL, lag INTEGER NOT NULL)",
                                 NULL, NULL, NULL),
                    SQLITE_OK);
    for (int i = 0; i <= 100; i++) {
        int64_t lag = i < 40 ? 20 : i < 70 ? 20 + (i - 40) * 50 : 20;
        char *sql = sqlite3_mprintf("INSERT INTO mirror_lag VALUES (%s, %lld, 'east-to-west', "
                                    "%lld)",
                                    run, (long long)i * 100000000LL, (long long)lag);
        CU_ASSERT_EQUAL(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_free(sql);
    }
    sqlite3_close(db);
    CU_ASSERT_EQUAL(run_plot(&env, NULL, args), 0);
    CU_ASSERT(image_bytes(output, false) > 15000);
    plot_env_deinit(&env);
}

/* The latest run is the default; -o .svg switches the terminal. */
static void test_plot_svg_and_default_run(void)
{
    struct plot_env env;
    plot_env_init(&env);
    g_autofree char *output = g_strdup_printf("%s/hw.svg", env.dir);
    const char *args_latest[] = { "--kind", "hw", "-o", output, NULL };
    /* The latest run is a sweep run without partition state: nothing to plot. */
    CU_ASSERT_EQUAL(run_plot(&env, NULL, args_latest), 2);
    CU_ASSERT_FALSE(g_file_test(output, G_FILE_TEST_EXISTS));
    g_autofree char *run = g_strdup_printf("%" G_GINT64_FORMAT, env.timeline_run);
    const char *args[] = { "--kind", "hw", "-o", output, "--run", run, NULL };
    CU_ASSERT_EQUAL(run_plot(&env, NULL, args), 0);
    CU_ASSERT(image_bytes(output, true) > 5000);
    plot_env_deinit(&env);
}

static void test_plot_input_errors(void)
{
    struct plot_env env;
    plot_env_init(&env);
    g_autofree char *output = g_strdup_printf("%s/x.png", env.dir);
    g_autofree char *empty = g_strdup_printf("%" G_GINT64_FORMAT, env.empty_run);
    const char *unknown_run[] = { "--kind", "throughput", "-o", output, "--run", "999", NULL };
    const char *empty_run[] = { "--kind", "throughput", "-o", output, "--run", empty, NULL };
    const char *bad_kind[] = { "--kind", "pie", "-o", output, NULL };
    const char *bad_name[] = { "--kind", "loss", "-o", "x.gif", NULL };
    const char *isr_missing[] = { "--kind", "isr", "-o", output, "--run", empty, NULL };
    CU_ASSERT_EQUAL(run_plot(&env, NULL, unknown_run), 2);
    CU_ASSERT_EQUAL(run_plot(&env, NULL, empty_run), 2);
    CU_ASSERT_EQUAL(run_plot(&env, NULL, bad_kind), 2);
    CU_ASSERT_EQUAL(run_plot(&env, NULL, bad_name), 2);
    CU_ASSERT_EQUAL(run_plot(&env, NULL, isr_missing), 2);

    /* Not ksim's: another program's SQLite file, and a text file. */
    g_autofree char *foreign = g_build_filename(env.dir, "foreign.db", NULL);
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(foreign, &db), SQLITE_OK);
    fixture_exec(db, "CREATE TABLE runs(id INTEGER, name TEXT); INSERT INTO runs VALUES (1,'x')");
    sqlite3_close(db);
    g_autofree char *text = g_build_filename(env.dir, "notes.txt", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(text, "not a database, just text\n", -1, NULL));
    const char *loss[] = { "--kind", "loss", "-o", output, NULL };
    CU_ASSERT_EQUAL(run_plot(&env, foreign, loss), 2);
    CU_ASSERT_EQUAL(run_plot(&env, text, loss), 2);
    g_autofree char *missing = g_build_filename(env.dir, "missing.db", NULL);
    CU_ASSERT_EQUAL(run_plot(&env, missing, loss), 2);
    CU_ASSERT_FALSE(g_file_test(missing, G_FILE_TEST_EXISTS));
    CU_ASSERT_FALSE(g_file_test(output, G_FILE_TEST_EXISTS));

    /* gnuplot missing: an empty PATH. */
    g_autofree char *path = g_strdup(g_getenv("PATH"));
    g_setenv("PATH", "", TRUE);
    CU_ASSERT_EQUAL(run_plot(&env, NULL, loss), 2);
    g_setenv("PATH", path ? path : "/usr/bin:/bin", TRUE);
    CU_ASSERT_FALSE(g_file_test(output, G_FILE_TEST_EXISTS));
    plot_env_deinit(&env);
}

void ks_test_register_plot(void)
{
    static const struct ks_test_case cases[] = {
        { "throughput", test_plot_throughput },
        { "latency", test_plot_latency },
        { "isr", test_plot_isr },
        { "hw", test_plot_hw },
        { "loss", test_plot_loss },
        { "availability", test_plot_availability },
        { "mirror-lag", test_plot_mirror_lag },
        { "svg and default run", test_plot_svg_and_default_run },
        { "input errors", test_plot_input_errors },
    };
    KS_TEST_ADD_SUITE("sim/plot", cases);
}
