/* tests/sim/test_recorder.c: the SQLite recorder.
 *
 * Goal: the database has every table and column SPEC section 4 names (and
 * docs/database.md's extras), a run is all-or-nothing (one transaction),
 * events are numbered per run, a database made before the newer columns
 * existed gets them on open, and a database that is not ours is refused
 * without being modified. Method: open a fresh file in a temporary
 * folder, record a run through the API, read it back with plain SQL; abort a
 * second run and check that none of it stayed; then hand the recorder a
 * foreign database, a newer schema and a file that is not SQLite, and compare
 * the bytes before and after. */
#include "../../sim/recorder.h"
#include "../testlib.h"

#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>

static char *temp_db(char **dir_out)
{
    char *dir = g_dir_make_tmp("ksim-recorder-XXXXXX", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    *dir_out = dir;
    return g_build_filename(dir, "test.db", NULL);
}

static int64_t count_rows(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *stmt = NULL;
    int64_t value = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
        value = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
    return value;
}

/* Every SPEC 4 column can be selected. */
static void test_recorder_schema(void)
{
    char *dir = NULL;
    char *path = temp_db(&dir);
    struct ks_recorder *recorder = ks_recorder_open(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(recorder);
    sqlite3 *db = ks_recorder_db(recorder);
    static const char *const selects[] = {
        "SELECT count(*) FROM (SELECT run_id, scenario, seed, params, started_at, wall_ms, "
        "sim_ms, events, trace_hash, verdict FROM runs)",
        "SELECT count(*) FROM (SELECT run_id, metric, value FROM summary)",
        "SELECT count(*) FROM (SELECT run_id, t_ns, kind, broker, topic, partition, detail, "
        "event_id FROM events)",
        "SELECT count(*) FROM (SELECT run_id, producer, seq, key, topic, partition, offset, "
        "sent_ns, acked_ns, outcome, final, final_offset, acked_broker, acked_leader_epoch "
        "FROM records)",
        "SELECT count(*) FROM (SELECT run_id, t_ns, topic, partition, broker, role, leo, hw, "
        "leader_epoch, isr FROM partition_state)",
        "SELECT count(*) FROM (SELECT run_id, kind, topic, partition, detail, producer, "
        "group_id, first_seq, last_seq, first_offset, last_offset, record_count, acked_broker, "
        "acked_leader_epoch, cause, cause_event_id FROM anomalies)",
        "SELECT count(*) FROM (SELECT run_id, topic, partition, view, reason, start_ns, end_ns "
        "FROM unavailability)",
        "SELECT count(*) FROM (SELECT run_id, expr, actual, passed FROM expectations)",
        "SELECT count(*) FROM (SELECT version FROM schema_version)",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(selects); i++) {
        CU_ASSERT(count_rows(db, selects[i]) >= 0);
    }
    sqlite3_stmt *stmt = NULL;
    CU_ASSERT_FATAL(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, NULL) == SQLITE_OK);
    CU_ASSERT_FATAL(sqlite3_step(stmt) == SQLITE_ROW);
    CU_ASSERT_STRING_EQUAL((const char *)sqlite3_column_text(stmt, 0), "wal");
    sqlite3_finalize(stmt);
    ks_recorder_close(recorder);
    ks_test_remove_tree(dir);
    g_free(path);
    g_free(dir);
}

static void record_one_run(struct ks_recorder *recorder, bool commit)
{
    int64_t run_id = ks_recorder_begin_run(recorder, "demo", 7, "{}", "2026-01-01T00:00:00Z",
                                           "runs/demo-s7", NULL);
    CU_ASSERT_FATAL(run_id > 0);
    struct ks_recorder_event_facts facts;
    ks_recorder_event_facts_init(&facts);
    facts.fault = "kill";
    ks_recorder_add_event(recorder, 10, "fault", 2, NULL, -1, "crash broker 2", &facts);
    ks_recorder_event_facts_init(&facts);
    facts.reason = "session_expired";
    facts.leader_old = 2;
    facts.leader = 3;
    facts.leader_epoch_old = 4;
    facts.leader_epoch = 5;
    facts.isr_old = "2,3";
    facts.isr = "3";
    ks_recorder_add_event(recorder, 20, "leader_elected", 3, "orders", 0, "leader 3", &facts);
    ks_recorder_event_facts_init(&facts);
    facts.offset_from = 7;
    facts.offset_to = 9;
    facts.leo_old = 9;
    facts.leo = 7;
    ks_recorder_add_event(recorder, 30, "truncation", 2, "orders", 0, "broker 2 truncates", &facts);
    struct ks_recorder_record_row row = { "p1", 0,       "k1",      "orders", 0, 5, 1,
                                          2,    "acked", "present", 5,        2, 3 };
    ks_recorder_add_record(recorder, &row);
    row.seq = 1;
    row.key = NULL;
    row.offset = -1;
    row.acked_ns = -1;
    row.outcome = "unknown";
    row.final = "missing";
    row.final_offset = -1;
    row.acked_broker = -1;
    row.acked_leader_epoch = -1;
    ks_recorder_add_record(recorder, &row);
    struct ks_recorder_state_row state = { 100, "orders", 0,     1, 0,   "leader", 5,
                                           5,   1,        "1,2", 1, "3", "" };
    ks_recorder_add_partition_state(recorder, &state);
    ks_recorder_add_summary(recorder, "acked_lost", 0, NULL);
    ks_recorder_add_summary(recorder, "produce_p50_ms", 1.5, NULL);
    ks_recorder_add_summary(recorder, "trace_hash", 0, "00000000deadbeef");
    ks_recorder_add_anomaly(recorder, "lost", "orders", 0, "p1:1");
    struct ks_recorder_anomaly_row anomaly = {
        .kind = "lost",
        .topic = "orders",
        .partition = 0,
        .detail = "p1:2..3",
        .producer = "p1",
        .group_id = NULL,
        .first_seq = 2,
        .last_seq = 3,
        .first_offset = 6,
        .last_offset = 7,
        .record_count = 2,
        .acked_broker = 2,
        .acked_leader_epoch = 3,
        .cause = "truncation",
        .cause_event_id = 2,
    };
    ks_recorder_add_anomaly_row(recorder, &anomaly);
    ks_recorder_add_unavailability(recorder, "orders", 0, "cluster", "leader_down", 10, 30);
    ks_recorder_add_expectation(recorder, "acked_lost = 0", "0", true);
    ks_recorder_add_topic(recorder, "orders", 1, 3, "min.insync.replicas=2");
    if (commit) {
        CU_ASSERT_TRUE(ks_recorder_finish_run(recorder, 12, 1, 60000000000ull, 1234, 0xdeadbeefull,
                                              "PASS", NULL));
    } else {
        ks_recorder_abort_run(recorder);
    }
}

/* A committed run is all there; an aborted one left nothing behind. */
static void test_recorder_one_run(void)
{
    char *dir = NULL;
    char *path = temp_db(&dir);
    struct ks_recorder *recorder = ks_recorder_open(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(recorder);
    record_one_run(recorder, true);
    record_one_run(recorder, false);
    ks_recorder_close(recorder);

    /* Read back through a second, read-only connection. */
    recorder = ks_recorder_open_readonly(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(recorder);
    sqlite3 *db = ks_recorder_db(recorder);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT count(*) FROM runs"), 1);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT count(*) FROM events"), 3);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT event_id FROM events WHERE kind = 'leader_elected'"), 2);
    /* The typed columns: set where given, NULL elsewhere. */
    CU_ASSERT_EQUAL(count_rows(db, "SELECT count(*) FROM events WHERE fault = 'kill' AND "
                                   "leader IS NULL AND reason IS NULL"),
                    1);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT count(*) FROM events WHERE kind = 'leader_elected' "
                                   "AND reason = 'session_expired' AND leader_old = 2 AND "
                                   "leader = 3 AND leader_epoch_old = 4 AND leader_epoch = 5 "
                                   "AND isr_old = '2,3' AND isr = '3' AND fault IS NULL AND "
                                   "offset_from IS NULL"),
                    1);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT offset_to - offset_from FROM events WHERE "
                                   "kind = 'truncation' AND leo_old = 9 AND leo = 7"),
                    2);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT acked_leader_epoch FROM records WHERE seq = 0"), 3);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT count(*) FROM records WHERE final = 'missing' "
                                   "AND final_offset IS NULL AND acked_broker IS NULL"),
                    1);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT count(*) FROM records WHERE key IS NULL"), 1);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT count(*) FROM records WHERE outcome = 'acked'"), 1);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT sim_ms FROM runs"), 60000);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT count(*) FROM runs WHERE trace_hash = "
                                   "'00000000deadbeef' AND verdict = 'PASS'"),
                    1);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT count(*) FROM summary"), 3);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT typeof(value) = 'integer' FROM summary "
                                   "WHERE metric = 'acked_lost'"),
                    1);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT count(*) FROM partition_state WHERE hw = 5"), 1);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT count(*) FROM partition_state WHERE elr = '3' AND "
                                   "last_known_elr = ''"),
                    1);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT count(*) FROM anomalies"), 2);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT count(*) FROM anomalies WHERE record_count IS NULL "
                                   "AND cause IS NULL"),
                    1);
    /* The cause names an event of the same run. */
    CU_ASSERT_EQUAL(count_rows(db, "SELECT count(*) FROM anomalies a JOIN events e ON "
                                   "e.run_id = a.run_id AND e.event_id = a.cause_event_id "
                                   "WHERE e.kind = 'leader_elected' AND a.record_count = 2"),
                    1);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT end_ns - start_ns FROM unavailability"), 20);
    CU_ASSERT_EQUAL(count_rows(db, "SELECT passed FROM expectations"), 1);
    CU_ASSERT_TRUE(ks_recorder_busy_us(recorder) >= 0);
    ks_recorder_close(recorder);
    ks_test_remove_tree(dir);
    g_free(path);
    g_free(dir);
}

static void assert_refused_unchanged(const char *path)
{
    gchar *before = NULL;
    gsize before_bytes = 0;
    CU_ASSERT_FATAL(g_file_get_contents(path, &before, &before_bytes, NULL));
    GError *error = NULL;
    struct ks_recorder *recorder = ks_recorder_open(path, &error);
    CU_ASSERT_PTR_NULL(recorder);
    CU_ASSERT_PTR_NOT_NULL_FATAL(error);
    CU_ASSERT_TRUE(g_error_matches(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_FOREIGN));
    g_clear_error(&error);
    ks_recorder_close(recorder);
    gchar *after = NULL;
    gsize after_bytes = 0;
    CU_ASSERT_FATAL(g_file_get_contents(path, &after, &after_bytes, NULL));
    CU_ASSERT_EQUAL(before_bytes, after_bytes);
    CU_ASSERT_TRUE(before_bytes == after_bytes && memcmp(before, after, before_bytes) == 0);
    g_free(before);
    g_free(after);
}

/* Another program's database, a newer ksim's and a text file are refused
 * byte for byte untouched. */
static void test_recorder_refuses_foreign(void)
{
    char *dir = NULL;
    char *path = temp_db(&dir);
    sqlite3 *db = NULL;
    CU_ASSERT_FATAL(sqlite3_open(path, &db) == SQLITE_OK);
    CU_ASSERT(sqlite3_exec(db,
                           "CREATE TABLE customers(id INTEGER); INSERT INTO customers "
                           "VALUES (1)",
                           NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    assert_refused_unchanged(path);

    char *newer = g_build_filename(dir, "newer.db", NULL);
    CU_ASSERT_FATAL(sqlite3_open(newer, &db) == SQLITE_OK);
    CU_ASSERT(sqlite3_exec(db,
                           "CREATE TABLE schema_version(version INTEGER); INSERT INTO "
                           "schema_version VALUES (99)",
                           NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    assert_refused_unchanged(newer);

    char *text = g_build_filename(dir, "notes.txt", NULL);
    CU_ASSERT_FATAL(g_file_set_contents(text,
                                        "this is not a database, it is a long text "
                                        "file that SQLite must refuse to use at all\n",
                                        -1, NULL));
    assert_refused_unchanged(text);

    GError *error = NULL;
    char *missing = g_build_filename(dir, "no", "such", "folder.db", NULL);
    CU_ASSERT_PTR_NULL(ks_recorder_open(missing, &error));
    CU_ASSERT_PTR_NOT_NULL(error);
    g_clear_error(&error);
    CU_ASSERT_FALSE(g_file_test(missing, G_FILE_TEST_EXISTS));

    ks_test_remove_tree(dir);
    g_free(missing);
    g_free(text);
    g_free(newer);
    g_free(path);
    g_free(dir);
}

void ks_test_register_recorder(void)
{
    static const struct ks_test_case cases[] = {
        { "schema", test_recorder_schema },
        { "one_run", test_recorder_one_run },
        { "refuses_foreign", test_recorder_refuses_foreign },
    };
    KS_TEST_ADD_SUITE("sim/recorder", cases);
}
