/* tests/sim/test_recorder_open.c: whose database it is, before anything is written.
 *
 * Goal: the recorder writes to a file only once it has identified it
 * positively as ksim's (application_id, or the whole SPEC 4 schema of an
 * earlier ksim), migrates such an earlier database, never leaves side files
 * (-wal, -shm) behind a read-only open, refuses names that are not files, and
 * lets several processes create one new database at the same time. Method:
 * hand-made SQLite files (another program's with a `schema_version` or a
 * `runs` table of its own, one with another application_id, a version-1
 * database exactly as the previous ksim made it), compared byte for byte
 * before and after; and forked processes released together by a pipe, each
 * opening the same new path. */
#include "../../sim/recorder.h"
#include "../testlib.h"

#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The schema of ksim's recorder before application_id and runs.run_dir
 * (schema version 1), as that version created it. */
static const char v1_schema[] =
    "CREATE TABLE schema_version(version INTEGER NOT NULL);"
    "INSERT INTO schema_version(version) VALUES (1);"
    "CREATE TABLE runs(run_id INTEGER PRIMARY KEY, scenario TEXT NOT NULL,"
    " seed INTEGER NOT NULL, params TEXT, started_at TEXT, wall_ms INTEGER, sim_ms INTEGER,"
    " events INTEGER, trace_hash TEXT, verdict TEXT, record_ms INTEGER);"
    "CREATE TABLE summary(run_id INTEGER NOT NULL, metric TEXT NOT NULL, value);"
    "CREATE TABLE events(run_id INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    " kind TEXT NOT NULL, broker INTEGER, topic TEXT, \"partition\" INTEGER, detail TEXT);"
    "CREATE TABLE records(run_id INTEGER NOT NULL, producer TEXT NOT NULL,"
    " seq INTEGER NOT NULL, key TEXT, topic TEXT, \"partition\" INTEGER, \"offset\" INTEGER,"
    " sent_ns INTEGER, acked_ns INTEGER,"
    " outcome TEXT NOT NULL CHECK (outcome IN ('acked', 'failed', 'unknown')));"
    "CREATE TABLE partition_state(run_id INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    " topic TEXT NOT NULL, \"partition\" INTEGER NOT NULL, broker INTEGER NOT NULL, role TEXT,"
    " leo INTEGER, hw INTEGER, leader_epoch INTEGER, isr TEXT, leader INTEGER,"
    " replica_index INTEGER);"
    "CREATE TABLE anomalies(run_id INTEGER NOT NULL, kind TEXT NOT NULL,"
    " topic TEXT, \"partition\" INTEGER, detail TEXT);"
    "CREATE TABLE expectations(run_id INTEGER NOT NULL, expr TEXT NOT NULL,"
    " actual TEXT, passed INTEGER NOT NULL);"
    "CREATE TABLE topics(run_id INTEGER NOT NULL, topic TEXT NOT NULL,"
    " partitions INTEGER, replication_factor INTEGER, configs TEXT);"
    "INSERT INTO runs(scenario, seed, params, verdict) VALUES ('old', 3, '{}', 'PASS');"
    "PRAGMA journal_mode = WAL;";

static char *make_db(const char *dir, const char *name, const char *sql)
{
    char *path = g_build_filename(dir, name, NULL);
    sqlite3 *db = NULL;
    CU_ASSERT_FATAL(sqlite3_open(path, &db) == SQLITE_OK);
    CU_ASSERT(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    return path;
}

/* Read-write, so that its close removes the WAL files it opened. */
static int64_t query(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    int64_t value = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
        value = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return value;
}

static bool side_files_exist(const char *path)
{
    g_autofree char *wal = g_strdup_printf("%s-wal", path);
    g_autofree char *shm = g_strdup_printf("%s-shm", path);
    return g_file_test(wal, G_FILE_TEST_EXISTS) || g_file_test(shm, G_FILE_TEST_EXISTS);
}

static GBytes *read_bytes(const char *path)
{
    gchar *contents = NULL;
    gsize length = 0;
    CU_ASSERT_FATAL(g_file_get_contents(path, &contents, &length, NULL));
    return g_bytes_new_take(contents, length);
}

/* True if path holds exactly `before`; consumes `before`. */
static bool unchanged(GBytes *before, const char *path)
{
    GBytes *after = read_bytes(path);
    bool same = g_bytes_equal(before, after);
    g_bytes_unref(after);
    g_bytes_unref(before);
    return same;
}

/* Opening for writing and for reading both refuse path (FOREIGN) and leave
 * its bytes as they were, with no side file made. */
static void assert_foreign_untouched(const char *path)
{
    GBytes *before = read_bytes(path);
    for (int readonly = 0; readonly <= 1; readonly++) {
        GError *error = NULL;
        struct ks_recorder *recorder =
            readonly ? ks_recorder_open_readonly(path, &error) : ks_recorder_open(path, &error);
        CU_ASSERT_PTR_NULL(recorder);
        CU_ASSERT_TRUE(g_error_matches(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_FOREIGN));
        CU_ASSERT_TRUE(error != NULL && strstr(error->message, "not a ksim database") != NULL);
        g_clear_error(&error);
        ks_recorder_close(recorder);
    }
    CU_ASSERT_TRUE(unchanged(before, path));
    CU_ASSERT_FALSE(side_files_exist(path));
}

/* Files that only look like ksim's: a schema_version table of version 1 with
 * another program's tables beside it, a runs table of its own, ksim's whole
 * schema under another program's application_id. */
static void test_recorder_open_foreign_lookalikes(void)
{
    g_autofree char *dir = g_dir_make_tmp("ksim-recorder-open-XXXXXX", NULL);
    g_autofree char *a = make_db(dir, "a.db",
                                 "CREATE TABLE schema_version(version INTEGER);"
                                 "INSERT INTO schema_version VALUES (1);"
                                 "CREATE TABLE mine(x); INSERT INTO mine VALUES (1)");
    assert_foreign_untouched(a);
    g_autofree char *b = make_db(dir, "b.db",
                                 "CREATE TABLE schema_version(version INTEGER);"
                                 "INSERT INTO schema_version VALUES (1);"
                                 "CREATE TABLE runs(x); INSERT INTO runs VALUES (7)");
    assert_foreign_untouched(b);
    g_autofree char *c = make_db(dir, "c.db", "CREATE TABLE schema_version(v)");
    assert_foreign_untouched(c);
    g_autofree char *sql = g_strdup_printf("%sPRAGMA application_id = 1234;", v1_schema);
    g_autofree char *d = make_db(dir, "d.db", sql);
    assert_foreign_untouched(d);
    ks_test_remove_tree(dir);
}

/* A database of the previous ksim (no application_id, schema version 1) is
 * read as it is, and migrated when opened for writing: application_id set,
 * runs.run_dir added, its runs kept. */
static void test_recorder_open_migrates_v1(void)
{
    g_autofree char *dir = g_dir_make_tmp("ksim-recorder-open-XXXXXX", NULL);
    g_autofree char *path = make_db(dir, "old.db", v1_schema);
    GBytes *before = read_bytes(path);
    GError *error = NULL;
    struct ks_recorder *reader = ks_recorder_open_readonly(path, &error);
    CU_ASSERT_PTR_NOT_NULL(reader);
    CU_ASSERT_PTR_NULL(error);
    ks_recorder_close(reader);
    CU_ASSERT_TRUE(unchanged(before, path));

    struct ks_recorder *writer = ks_recorder_open(path, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(writer);
    int64_t run_id = ks_recorder_begin_run(writer, "new", 4, "{}", "2026-01-01T00:00:00Z",
                                           "runs/new-s4-00000000", &error);
    CU_ASSERT_EQUAL(run_id, 2);
    CU_ASSERT_TRUE(ks_recorder_finish_run(writer, 1, 0, 0, 0, 0, "PASS", &error));
    ks_recorder_close(writer);
    CU_ASSERT_EQUAL(query(path, "PRAGMA application_id"), KS_RECORDER_APPLICATION_ID);
    CU_ASSERT_EQUAL(query(path, "SELECT max(version) FROM schema_version"),
                    KS_RECORDER_SCHEMA_VERSION);
    CU_ASSERT_EQUAL(query(path, "SELECT count(*) FROM schema_version"), 1);
    CU_ASSERT_EQUAL(query(path, "SELECT count(*) FROM runs WHERE scenario = 'old'"), 1);
    CU_ASSERT_EQUAL(query(path, "SELECT count(*) FROM runs WHERE run_dir IS NULL"), 1);
    CU_ASSERT_EQUAL(query(path, "SELECT count(*) FROM runs WHERE run_dir = "
                                "'runs/new-s4-00000000'"),
                    1);
    /* The columns of schema versions 2 and 3 (issue 11's results) are added, NULL in old
     * rows. */
    static const char *const added[][2] = {
        { "events", "event_id" },
        { "records", "final" },
        { "records", "final_offset" },
        { "records", "acked_leader_epoch" },
        { "anomalies", "cause" },
        { "anomalies", "cause_event_id" },
        { "runs", "record_ms" },
        /* and those of schema version 3: the events' typed columns */
        { "events", "fault" },
        { "events", "offset_from" },
        { "events", "isr_old" },
        { "events", "leader_epoch" },
        /* schema version 3: KIP-966's lists */
        { "partition_state", "elr" },
        { "partition_state", "last_known_elr" },
        { "events", "elr" },
        { "events", "last_known_leader" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(added); i++) {
        g_autofree char *sql =
            g_strdup_printf("SELECT count(*) FROM pragma_table_info('%s') WHERE name = '%s'",
                            added[i][0], added[i][1]);
        CU_ASSERT_EQUAL(query(path, sql), 1);
    }
    CU_ASSERT_EQUAL(query(path, "SELECT count(*) FROM sqlite_master WHERE name = "
                                "'unavailability'"),
                    1);
    CU_ASSERT_PTR_NULL(error);
    ks_test_remove_tree(dir);
}

/* A new database carries ksim's application_id; reopening it changes no byte;
 * reading it leaves no -wal or -shm file (a read-only connection to a WAL
 * database cannot remove the ones it makes). */
static void test_recorder_open_no_side_effects(void)
{
    g_autofree char *dir = g_dir_make_tmp("ksim-recorder-open-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "new.db", NULL);
    struct ks_recorder *writer = ks_recorder_open(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(writer);
    ks_recorder_close(writer);
    CU_ASSERT_EQUAL(query(path, "PRAGMA application_id"), KS_RECORDER_APPLICATION_ID);
    CU_ASSERT_FALSE(side_files_exist(path));
    GBytes *before = read_bytes(path);
    writer = ks_recorder_open(path, NULL);
    CU_ASSERT_PTR_NOT_NULL(writer);
    ks_recorder_close(writer);
    GError *error = NULL;
    struct ks_recorder *reader = ks_recorder_open_readonly(path, &error);
    CU_ASSERT_PTR_NOT_NULL(reader);
    CU_ASSERT_PTR_NOT_NULL(reader != NULL ? ks_recorder_db(reader) : NULL);
    ks_recorder_close(reader);
    CU_ASSERT_FALSE(side_files_exist(path));
    CU_ASSERT_TRUE(unchanged(before, path));
    g_clear_error(&error);
    ks_test_remove_tree(dir);
}

/* Names that are not a file: SQLite would record into a temporary or an
 * in-memory database and lose the run. */
static void test_recorder_open_refuses_non_files(void)
{
    g_autofree char *dir = g_dir_make_tmp("ksim-recorder-open-XXXXXX", NULL);
    const char *names[] = { "", ":memory:", dir };
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        GError *error = NULL;
        CU_ASSERT_PTR_NULL(ks_recorder_open(names[i], &error));
        CU_ASSERT_TRUE(g_error_matches(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN));
        g_clear_error(&error);
    }
    CU_ASSERT_FALSE(g_file_test(":memory:", G_FILE_TEST_EXISTS));
    ks_test_remove_tree(dir);
}

/* Several processes create the same new database at once, released together
 * from a pipe, many times over: every one must open it (creation and the WAL
 * switch wait for the lock like later writes do). */
static void test_recorder_open_concurrent_create(void)
{
    enum { ROUNDS = 40, PROCESSES = 4 };
    g_autofree char *dir = g_dir_make_tmp("ksim-recorder-open-XXXXXX", NULL);
    int failures = 0;
    for (int round = 0; round < ROUNDS; round++) {
        g_autofree char *name = g_strdup_printf("race-%d.db", round);
        g_autofree char *path = g_build_filename(dir, name, NULL);
        int gate[2];
        CU_ASSERT_FATAL(pipe(gate) == 0);
        pid_t pids[PROCESSES];
        for (int p = 0; p < PROCESSES; p++) {
            pids[p] = fork();
            CU_ASSERT_FATAL(pids[p] >= 0);
            if (pids[p] == 0) {
                char byte;
                close(gate[1]);
                ssize_t n = read(gate[0], &byte, 1); /* EOF when the parent closes it */
                (void)n;
                GError *error = NULL;
                struct ks_recorder *recorder = ks_recorder_open(path, &error);
                if (recorder == NULL) {
                    fprintf(stderr, "concurrent create: %s\n", error->message);
                }
                ks_recorder_close(recorder);
                _exit(recorder != NULL ? 0 : 1);
            }
        }
        close(gate[0]);
        close(gate[1]);
        for (int p = 0; p < PROCESSES; p++) {
            int status = 0;
            waitpid(pids[p], &status, 0);
            failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        CU_ASSERT_EQUAL(query(path, "SELECT count(*) FROM schema_version"), 1);
    }
    CU_ASSERT_EQUAL(failures, 0);
    ks_test_remove_tree(dir);
}

void ks_test_register_recorder_open(void)
{
    static const struct ks_test_case cases[] = {
        { "foreign_lookalikes", test_recorder_open_foreign_lookalikes },
        { "migrates_v1", test_recorder_open_migrates_v1 },
        { "no_side_effects", test_recorder_open_no_side_effects },
        { "refuses_non_files", test_recorder_open_refuses_non_files },
        { "concurrent_create", test_recorder_open_concurrent_create },
    };
    KS_TEST_ADD_SUITE("sim/recorder-open", cases);
}
