/* tests/sim/test_sweep.c: merging databases, shards and seed ranges.
 *
 * Goal: `ksim merge` gives the same database whatever the order of its inputs
 * (run ids included), keeps every row of every run with its run renumbered,
 * and leaves a database the recorder still accepts; ks_merge_append numbers
 * after what is there; `--shard I/N` slices cover every work item exactly
 * once; `--seeds` and `--shard` reject malformed text; a real sweep makes
 * settings x seeds runs and the same database with --jobs 1 and --jobs 2;
 * explore's random schedules are a function of the seed and load as
 * ordinary [fault] sections.
 * Method: hand-made SPEC 4 databases (tests/sim/fixture_db.h) merged in
 * different orders and compared through a canonical text dump of every
 * table (rows sorted by every column); shards checked by counting owners;
 * the sweep runs a one-second scenario through ks_sweep_main. */
#include "../../sim/commands.h"
#include "../../sim/merge.h"
#include "../../sim/recorder.h"
#include "../../sim/scenario.h"
#include "../../sim/sweep.h"
#include "../testlib.h"
#include "fixture_db.h"

#include <glib/gstdio.h>
#include <string.h>

/* Every table of the database, sorted by name, each row as text, rows
 * sorted by every column. Owned: g_free. */
static char *dump_db(const char *path)
{
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    GString *text = g_string_new("");
    GPtrArray *tables = g_ptr_array_new_with_free_func(g_free);
    sqlite3_stmt *stmt = NULL;
    sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", -1,
                       &stmt, NULL);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        g_ptr_array_add(tables, g_strdup((const char *)sqlite3_column_text(stmt, 0)));
    }
    sqlite3_finalize(stmt);
    for (guint t = 0; t < tables->len; t++) {
        const char *table = g_ptr_array_index(tables, t);
        g_autofree char *probe = g_strdup_printf("SELECT * FROM \"%s\" LIMIT 0", table);
        sqlite3_prepare_v2(db, probe, -1, &stmt, NULL);
        int columns = sqlite3_column_count(stmt);
        sqlite3_finalize(stmt);
        GString *order = g_string_new("");
        for (int c = 1; c <= columns; c++) {
            g_string_append_printf(order, "%s%d", c > 1 ? ", " : "", c);
        }
        g_autofree char *sql =
            g_strdup_printf("SELECT * FROM \"%s\" ORDER BY %s", table, order->str);
        g_string_free(order, TRUE);
        g_string_append_printf(text, "[%s]\n", table);
        sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);
        while (sqlite3_step(stmt) == SQLITE_ROW) {
            for (int c = 0; c < columns; c++) {
                const char *value = (const char *)sqlite3_column_text(stmt, c);
                g_string_append_printf(text, "%s|", value ? value : "NULL");
            }
            g_string_append_c(text, '\n');
        }
        sqlite3_finalize(stmt);
    }
    g_ptr_array_unref(tables);
    sqlite3_close(db);
    return g_string_free(text, FALSE);
}

static int64_t count_rows(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
    sqlite3_stmt *stmt = NULL;
    int64_t value = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
        value = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return value;
}

/* Three shard-like inputs: two settings, seeds spread over the files, one
 * with a timeline, one with a run that also exists elsewhere (same scenario,
 * params and seed). */
static void make_inputs(const char *dir, char *paths[3])
{
    for (int i = 0; i < 3; i++) {
        paths[i] = g_strdup_printf("%s/in%d.db", dir, i);
        sqlite3 *db = fixture_db_create(paths[i]);
        for (int64_t seed = 1 + i; seed <= 9; seed += 3) {
            fixture_add_run(db, "demo", seed, "{\"acks\":\"1\"}", "producer.p1.acks=1",
                            (double)seed, 0, 100.0 * (double)seed);
            fixture_add_run(db, "demo", seed, "{\"acks\":\"all\"}", "producer.p1.acks=all", 0,
                            (double)(seed % 2), 50.0);
        }
        if (i == 1) {
            int64_t run_id = fixture_add_run(db, "demo", 100, "{\"acks\":\"1\"}", NULL, 3, 0, 0);
            fixture_add_timeline(db, run_id);
        }
        if (i == 2) {
            /* A repeat of a run of in0 with another outcome. */
            fixture_add_run(db, "demo", 1, "{\"acks\":\"1\"}", "producer.p1.acks=1", 42, 0, 0);
        }
        sqlite3_close(db);
    }
}

static void test_merge_order_independent(void)
{
    g_autofree char *dir = g_dir_make_tmp("ksim-merge-XXXXXX", NULL);
    char *paths[3];
    make_inputs(dir, paths);
    g_autofree char *out_a = g_strdup_printf("%s/a.db", dir);
    g_autofree char *out_b = g_strdup_printf("%s/b.db", dir);
    const char *order_a[] = { paths[0], paths[1], paths[2] };
    const char *order_b[] = { paths[2], paths[0], paths[1] };
    GError *error = NULL;
    CU_ASSERT_TRUE(ks_merge_files(out_a, order_a, 3, &error));
    CU_ASSERT_TRUE(ks_merge_files(out_b, order_b, 3, &error));
    CU_ASSERT_PTR_NULL(error);
    g_autofree char *dump_a = dump_db(out_a);
    g_autofree char *dump_b = dump_db(out_b);
    CU_ASSERT_STRING_EQUAL(dump_a, dump_b);

    /* 18 sweep runs + the timeline run + the repeat, ids 1..20. */
    CU_ASSERT_EQUAL(count_rows(out_a, "SELECT count(*) FROM runs"), 20);
    CU_ASSERT_EQUAL(count_rows(out_a, "SELECT MIN(run_id) * 100 + MAX(run_id) FROM runs"), 120);
    CU_ASSERT_EQUAL(count_rows(out_a, "SELECT count(*) FROM records"), 2000);
    CU_ASSERT_EQUAL(count_rows(out_a, "SELECT count(*) FROM summary"), 80);
    /* Every sweep_runs row still names a run of the same setting. */
    CU_ASSERT_EQUAL(count_rows(out_a, "SELECT count(*) FROM sweep_runs w JOIN runs r USING "
                                      "(run_id) WHERE (w.setting LIKE '%=all') = "
                                      "(r.params LIKE '%all%')"),
                    19);
    /* Rows moved with their run: the timeline's records belong to seed 100. */
    CU_ASSERT_EQUAL(count_rows(out_a, "SELECT count(DISTINCT r.seed) FROM records x "
                                      "JOIN runs r USING (run_id)"),
                    1);
    /* Ordered by (scenario, params, seed): the first run is acks=1, seed 1. */
    CU_ASSERT_EQUAL(count_rows(out_a, "SELECT seed FROM runs WHERE run_id = 1"), 1);
    /* schema_version is copied once, so the recorder accepts the result. */
    CU_ASSERT_EQUAL(count_rows(out_a, "SELECT count(*) FROM schema_version"), 1);
    struct ks_recorder *recorder = ks_recorder_open_readonly(out_a, &error);
    CU_ASSERT_PTR_NOT_NULL(recorder);
    g_clear_error(&error);
    ks_recorder_close(recorder);

    /* The output must be new; inputs must be ksim databases. */
    CU_ASSERT_FALSE(ks_merge_files(out_a, order_a, 3, &error));
    g_clear_error(&error);
    g_autofree char *foreign = g_strdup_printf("%s/foreign.db", dir);
    sqlite3 *db = NULL;
    sqlite3_open(foreign, &db);
    fixture_exec(db, "CREATE TABLE t(x)");
    sqlite3_close(db);
    g_autofree char *out_c = g_strdup_printf("%s/c.db", dir);
    const char *bad[] = { paths[0], foreign };
    CU_ASSERT_FALSE(ks_merge_files(out_c, bad, 2, &error));
    CU_ASSERT_EQUAL(error ? error->code : -1, KS_MERGE_ERROR_INPUT);
    g_clear_error(&error);
    CU_ASSERT_FALSE(g_file_test(out_c, G_FILE_TEST_EXISTS));

    for (int i = 0; i < 3; i++) {
        g_free(paths[i]);
    }
    ks_test_remove_tree(dir);
}

/* Appending numbers after the runs already there, in the given order. */
static void test_merge_append_numbers_after(void)
{
    g_autofree char *dir = g_dir_make_tmp("ksim-merge-XXXXXX", NULL);
    char *paths[3];
    make_inputs(dir, paths);
    sqlite3 *out = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(paths[0], &out), SQLITE_OK);
    /* Runs 3 and 1 of in1, in that order, appended to in0 (6 runs). */
    const char *inputs[] = { paths[1] };
    struct ks_merge_run runs[] = { { 0, 3 }, { 0, 1 } };
    int64_t new_ids[2] = { 0, 0 };
    GError *error = NULL;
    CU_ASSERT_TRUE(ks_merge_append(out, inputs, 1, runs, 2, new_ids, &error));
    CU_ASSERT_EQUAL(new_ids[0], 7);
    CU_ASSERT_EQUAL(new_ids[1], 8);
    sqlite3_close(out);
    /* in1 holds seeds 2, 5, 8, each as acks=1 then acks=all: its run 3 is
     * seed 5 and its run 1 seed 2. */
    CU_ASSERT_EQUAL(count_rows(paths[0], "SELECT seed FROM runs WHERE run_id = 7"), 5);
    CU_ASSERT_EQUAL(count_rows(paths[0], "SELECT seed FROM runs WHERE run_id = 8"), 2);
    CU_ASSERT_EQUAL(count_rows(paths[0], "SELECT count(*) FROM summary WHERE run_id = 8"), 4);
    CU_ASSERT_EQUAL(count_rows(paths[0], "SELECT count(*) FROM schema_version"), 1);
    for (int i = 0; i < 3; i++) {
        g_free(paths[i]);
    }
    ks_test_remove_tree(dir);
}

/* More inputs than SQLite attaches at once (12 > 9): the staged path. */
static void test_merge_many_inputs(void)
{
    g_autofree char *dir = g_dir_make_tmp("ksim-merge-XXXXXX", NULL);
    enum { INPUTS = 12 };
    char *paths[INPUTS];
    const char *forward[INPUTS];
    const char *backward[INPUTS];
    for (int i = 0; i < INPUTS; i++) {
        paths[i] = g_strdup_printf("%s/shard%02d.db", dir, i);
        sqlite3 *db = fixture_db_create(paths[i]);
        /* Seeds interleave across inputs, so runs of one input are not
         * neighbours in the merged order. */
        fixture_add_run(db, "many", i, "{}", "a=1", (double)i, 0, 0);
        fixture_add_run(db, "many", i + INPUTS, "{}", "a=1", 0, (double)i, 0);
        sqlite3_close(db);
        forward[i] = paths[i];
        backward[INPUTS - 1 - i] = paths[i];
    }
    g_autofree char *out_a = g_strdup_printf("%s/a.db", dir);
    g_autofree char *out_b = g_strdup_printf("%s/b.db", dir);
    GError *error = NULL;
    CU_ASSERT_TRUE(ks_merge_files(out_a, forward, INPUTS, &error));
    CU_ASSERT_TRUE(ks_merge_files(out_b, backward, INPUTS, &error));
    CU_ASSERT_PTR_NULL(error);
    g_clear_error(&error);
    CU_ASSERT_EQUAL(count_rows(out_a, "SELECT count(*) FROM runs"), 2 * INPUTS);
    CU_ASSERT_EQUAL(count_rows(out_a, "SELECT count(*) FROM summary"), 8 * INPUTS);
    /* Ids follow the seeds: run k is seed k - 1. */
    CU_ASSERT_EQUAL(count_rows(out_a, "SELECT count(*) FROM runs WHERE seed = run_id - 1"),
                    2 * INPUTS);
    CU_ASSERT_EQUAL(count_rows(out_a, "SELECT count(*) FROM schema_version"), 1);
    g_autofree char *dump_a = dump_db(out_a);
    g_autofree char *dump_b = dump_db(out_b);
    CU_ASSERT_STRING_EQUAL(dump_a, dump_b);
    for (int i = 0; i < INPUTS; i++) {
        g_free(paths[i]);
    }
    ks_test_remove_tree(dir);
}

static void test_shards_cover_once(void)
{
    for (uint32_t count = 1; count <= 7; count++) {
        for (uint64_t item = 0; item < 100; item++) {
            int owners = 0;
            for (uint32_t index = 1; index <= count; index++) {
                owners += ks_sweep_shard_owns(item, index, count) ? 1 : 0;
            }
            CU_ASSERT_EQUAL(owners, 1);
        }
    }
    /* Balanced: 10 seeds over 4 shards give 3, 3, 2, 2. */
    int sizes[4] = { 0, 0, 0, 0 };
    for (uint64_t item = 0; item < 10; item++) {
        for (uint32_t index = 1; index <= 4; index++) {
            sizes[index - 1] += ks_sweep_shard_owns(item, index, 4) ? 1 : 0;
        }
    }
    CU_ASSERT_EQUAL(sizes[0], 3);
    CU_ASSERT_EQUAL(sizes[1], 3);
    CU_ASSERT_EQUAL(sizes[2], 2);
    CU_ASSERT_EQUAL(sizes[3], 2);
}

static void test_parse_seeds_and_shards(void)
{
    uint64_t first = 0;
    uint64_t last = 0;
    uint32_t index = 0;
    uint32_t count = 0;
    GError *error = NULL;
    CU_ASSERT_TRUE(ks_sweep_parse_seeds("3-17", &first, &last, &error));
    CU_ASSERT_EQUAL(first, 3);
    CU_ASSERT_EQUAL(last, 17);
    CU_ASSERT_TRUE(ks_sweep_parse_seeds("5", &first, &last, &error));
    CU_ASSERT_EQUAL(first, 5);
    CU_ASSERT_EQUAL(last, 5);
    const char *bad_seeds[] = { "", "9-3", "a-b", "1-", "-4", "1-2-3", "1 -2" };
    for (size_t i = 0; i < G_N_ELEMENTS(bad_seeds); i++) {
        CU_ASSERT_FALSE(ks_sweep_parse_seeds(bad_seeds[i], &first, &last, &error));
        CU_ASSERT_PTR_NOT_NULL(error);
        g_clear_error(&error);
    }
    CU_ASSERT_TRUE(ks_sweep_parse_shard("2/4", &index, &count, &error));
    CU_ASSERT_EQUAL(index, 2);
    CU_ASSERT_EQUAL(count, 4);
    const char *bad_shards[] = { "0/4", "5/4", "1/0", "1", "x/2", "1/2/3", "" };
    for (size_t i = 0; i < G_N_ELEMENTS(bad_shards); i++) {
        CU_ASSERT_FALSE(ks_sweep_parse_shard(bad_shards[i], &index, &count, &error));
        CU_ASSERT_PTR_NOT_NULL(error);
        g_clear_error(&error);
    }
}

/* The runs of a sweep database without wall-clock columns, by run id. */
static char *dump_runs(const char *path)
{
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    GString *text = g_string_new("");
    const char *queries[] = {
        "SELECT run_id, scenario, seed, params, sim_ms, events, trace_hash, verdict FROM runs "
        "ORDER BY run_id",
        "SELECT run_id, metric, value FROM summary ORDER BY 1, 2",
        "SELECT run_id, setting FROM sweep_runs ORDER BY 1",
        "SELECT run_id, count(*) FROM records GROUP BY 1 ORDER BY 1",
        "SELECT run_id, count(*) FROM events GROUP BY 1 ORDER BY 1",
    };
    for (size_t q = 0; q < G_N_ELEMENTS(queries); q++) {
        sqlite3_stmt *stmt = NULL;
        CU_ASSERT_EQUAL(sqlite3_prepare_v2(db, queries[q], -1, &stmt, NULL), SQLITE_OK);
        while (stmt != NULL && sqlite3_step(stmt) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(stmt); c++) {
                const char *value = (const char *)sqlite3_column_text(stmt, c);
                g_string_append_printf(text, "%s|", value ? value : "NULL");
            }
            g_string_append_c(text, '\n');
        }
        sqlite3_finalize(stmt);
    }
    sqlite3_close(db);
    return g_string_free(text, FALSE);
}

static const char tiny_scenario[] =
    "[scenario]\nname = tiny\nduration = 1s\nfinal.drain = 5s\n\n"
    "[cluster]\nbrokers = 3\n\n"
    "[topic orders]\npartitions = 1\nreplication.factor = 3\nmin.insync.replicas = 2\n\n"
    "[producer p1]\ntopic = orders\nacks = all\nrate = 100/s\nkeys = 10\n\n"
    "[expect]\nacked_lost = 0\n";

static int run_sweep(const char *scenario, const char *db_path, const char *jobs)
{
    const char *argv[] = { "sweep",   scenario, "--vary", "producer.p1.acks=1,all",
                           "--seeds", "1-2",    "--jobs", jobs,
                           "--db",    db_path,  NULL };
    return ks_sweep_main((int)G_N_ELEMENTS(argv) - 1, (char **)argv);
}

static void test_sweep_jobs_deterministic(void)
{
    g_autofree char *dir = g_dir_make_tmp("ksim-sweep-XXXXXX", NULL);
    g_autofree char *scenario = g_build_filename(dir, "tiny.ini", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(scenario, tiny_scenario, -1, NULL));
    g_autofree char *db1 = g_build_filename(dir, "jobs1.db", NULL);
    g_autofree char *db2 = g_build_filename(dir, "jobs2.db", NULL);
    int code1 = run_sweep(scenario, db1, "1");
    int code2 = run_sweep(scenario, db2, "2");
    CU_ASSERT(code1 == 0 || code1 == 1);
    CU_ASSERT_EQUAL(code1, code2);
    /* 2 settings x 2 seeds. */
    CU_ASSERT_EQUAL(count_rows(db1, "SELECT count(*) FROM runs"), 4);
    CU_ASSERT_EQUAL(count_rows(db1, "SELECT count(DISTINCT setting) FROM sweep_runs"), 2);
    CU_ASSERT_EQUAL(count_rows(db1, "SELECT count(*) FROM runs WHERE sim_ms > 0"), 4);
    g_autofree char *dump1 = dump_runs(db1);
    g_autofree char *dump2 = dump_runs(db2);
    CU_ASSERT_STRING_EQUAL(dump1, dump2);
    /* A bad --vary key is refused before anything runs. */
    g_autofree char *db3 = g_build_filename(dir, "bad.db", NULL);
    const char *argv[] = { "sweep", scenario, "--vary", "producer.p9.acks=1,all", "--seeds", "1-2",
                           "--db",  db3,      NULL };
    CU_ASSERT_EQUAL(ks_sweep_main((int)G_N_ELEMENTS(argv) - 1, (char **)argv), 2);
    CU_ASSERT_FALSE(g_file_test(db3, G_FILE_TEST_EXISTS));
    ks_test_remove_tree(dir);
}

/* base_text with an explore schedule appended, loaded (asserted). NULL when
 * it does not load. */
static struct ks_scenario *load_schedule(const char *base_text, const char *text, uint64_t seed)
{
    g_autofree char *whole = g_strconcat(base_text, "\n", text, NULL);
    struct ks_scenario *loaded = NULL;
    GError *error = NULL;
    bool ok = ks_scenario_load_from_data("explored", whole, &loaded, &error);
    CU_ASSERT_TRUE(ok);
    if (!ok) {
        fprintf(stderr, "seed %" G_GUINT64_FORMAT ": %s\n%s", seed, error->message, text);
        g_clear_error(&error);
        return NULL;
    }
    return loaded;
}

/* Explore's schedules: a function of the seed, 1..N faults, valid fault
 * sections, times within 5%..85% of the duration, and varied across seeds. */
static void test_explore_schedules(void)
{
    struct ks_scenario *base = NULL;
    GError *error = NULL;
    CU_ASSERT_FATAL(ks_scenario_load_from_data("tiny", tiny_scenario, &base, &error));
    GHashTable *distinct = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    int actions_seen[KS_FAULT_ACTION_COUNT] = { 0 };
    for (uint64_t seed = 1; seed <= 40; seed++) {
        g_autofree char *text = ks_explore_schedule_ini(base, seed, 3);
        g_autofree char *again = ks_explore_schedule_ini(base, seed, 3);
        CU_ASSERT_STRING_EQUAL(text, again);
        g_hash_table_add(distinct, g_strdup(text));
        struct ks_scenario *loaded = load_schedule(tiny_scenario, text, seed);
        if (loaded == NULL) {
            continue;
        }
        CU_ASSERT(loaded->fault_count >= 1 && loaded->fault_count <= 3);
        for (size_t i = 0; i < loaded->fault_count; i++) {
            CU_ASSERT(loaded->faults[i].at_ns >= 50000000 && loaded->faults[i].at_ns <= 850000000);
            actions_seen[loaded->faults[i].action]++;
        }
        ks_scenario_free(loaded);
    }
    /* 40 seeds give (nearly) 40 schedules, and every kind of fault. */
    CU_ASSERT(g_hash_table_size(distinct) >= 35);
    CU_ASSERT(actions_seen[KS_FAULT_CRASH] > 0);
    CU_ASSERT(actions_seen[KS_FAULT_RESTART] > 0);
    CU_ASSERT(actions_seen[KS_FAULT_PARTITION] > 0);
    CU_ASSERT(actions_seen[KS_FAULT_SLOW] > 0);
    CU_ASSERT(actions_seen[KS_FAULT_PAUSE] > 0);
    CU_ASSERT(actions_seen[KS_FAULT_STOP] > 0);
    CU_ASSERT(actions_seen[KS_FAULT_ROLLING_RESTART] > 0);
    CU_ASSERT(actions_seen[KS_FAULT_DROP] > 0);
    g_hash_table_unref(distinct);
    ks_scenario_free(base);

    /* With racks, some faults take a whole rack; some partitions cut the
     * controller off; every schedule loads. */
    static const char racked[] =
        "[scenario]\nname = racked\nduration = 1s\nfinal.drain = 5s\n\n"
        "[cluster]\nbrokers = 6\nracks = a,a,b,b,c,c\n\n"
        "[topic orders]\npartitions = 2\nreplication.factor = 3\nmin.insync.replicas = 2\n\n"
        "[producer p1]\ntopic = orders\nacks = all\nrate = 100/s\nkeys = 10\n\n"
        "[expect]\nacked_lost = 0\n";
    CU_ASSERT_FATAL(ks_scenario_load_from_data("racked", racked, &base, &error));
    int rack_faults = 0;
    int controller_cuts = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        g_autofree char *text = ks_explore_schedule_ini(base, seed, 3);
        rack_faults += strstr(text, "rack(") != NULL;
        controller_cuts += strstr(text, "isolate = controller") != NULL;
        struct ks_scenario *loaded = load_schedule(racked, text, seed);
        if (loaded != NULL) {
            ks_scenario_free(loaded);
        }
    }
    CU_ASSERT(rack_faults > 0);
    CU_ASSERT(controller_cuts > 0);
    ks_scenario_free(base);
}

void ks_test_register_sweep(void)
{
    static const struct ks_test_case cases[] = {
        { "merge is order independent", test_merge_order_independent },
        { "merge appends after existing runs", test_merge_append_numbers_after },
        { "merge of more inputs than attach allows", test_merge_many_inputs },
        { "shards cover every item once", test_shards_cover_once },
        { "seeds and shards parse", test_parse_seeds_and_shards },
        { "sweep is the same with --jobs 1 and 2", test_sweep_jobs_deterministic },
        { "explore schedules", test_explore_schedules },
    };
    KS_TEST_ADD_SUITE("sim/sweep", cases);
}
