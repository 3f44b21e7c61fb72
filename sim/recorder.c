/*
** sim/recorder.c: the SQLite recorder (SPEC section 4). See sim/recorder.h.
**
** Design:
**   - Schema: every table of SPEC 4, plus schema_version, topics (for `ksim
**     describe`), unavailability (the intervals behind unavailable_ms and
**     produce_unavailable_ms) and extra columns: runs.record_ms (wall time
**     spent recording), runs.run_dir (the run folder, for dump-log and
**     describe), partition_state.leader / replica_index / elr /
**     last_known_elr, events.event_id,
**     records.final / final_offset / acked_broker / acked_leader_epoch, and
**     the anomalies' range and cause columns. docs/database.md describes
**     every table and column. A database made before a column existed gets
**     it added (ALTER TABLE ADD COLUMN, NULL in old rows), see added_columns.
**   - Whose file it is (R1): nothing is written to a file until it is known
**     to be ksim's or empty. Ours means PRAGMA application_id = "ksim"
**     (KS_RECORDER_APPLICATION_ID, set when ksim creates the schema), or, for
**     databases of earlier ksim versions and of `ksim merge`, which had no
**     application_id, every table and column SPEC 4 names plus
**     schema_version. Another program's file, even with a `runs` or a
**     `schema_version` table, is refused byte for byte unchanged, and so is a
**     newer schema. An older ksim database is migrated (missing tables and
**     columns added, application_id set) in one transaction.
**   - Creation and migration run in one BEGIN IMMEDIATE transaction that
**     identifies the file again inside it, so that runs creating one new
**     database at the same time wait for each other (busy timeout) instead
**     of failing; an up-to-date database is not written at all on open.
**   - A database that cannot be written (read-only file or folder, an empty
**     name) is refused before SQLite opens it, so no -wal or -shm file is
**     left behind; read-only opens (describe, plot) use a URI that creates
**     no side files either (readonly_uri).
**   - One transaction per run: BEGIN IMMEDIATE in begin_run, COMMIT in
**     finish_run. Nothing of a run is visible until it commits; a killed
**     process leaves the previous state (SQLite's journal rolls it back).
**   - Prepared statements are made once per connection and reused (reset,
**     clear bindings) for every row.
**   - Errors: the first failing row is remembered (sticky) and reported by
**     finish_run, which then rolls the whole run back. Adding rows never
**     aborts the simulation.
**   - trace_hash is stored as 16 hex digits of text: SQLite integers are
**     signed and REAL loses bits.
*/
#include "recorder.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUSY_TIMEOUT_MS 120000

G_DEFINE_QUARK(ks - recorder - error - quark, ks_recorder_error)

enum stmt_id {
    ST_RUN_INSERT,
    ST_RUN_FINISH,
    ST_EVENT,
    ST_RECORD,
    ST_STATE,
    ST_SUMMARY,
    ST_ANOMALY,
    ST_EXPECT,
    ST_TOPIC,
    ST_UNAVAILABLE,
    ST_REPLICA_LOG,
    ST_RUN_OVERRIDES,
    ST_MIRROR_LAG,
    ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
    [ST_RUN_INSERT] = "INSERT INTO runs(scenario, seed, params, started_at, run_dir, verdict) "
                      "VALUES (?, ?, ?, ?, ?, 'RUNNING')",
    [ST_RUN_FINISH] = "UPDATE runs SET wall_ms = ?, record_ms = ?, sim_ms = ?, events = ?, "
                      "trace_hash = ?, verdict = ? WHERE run_id = ?",
    [ST_EVENT] = "INSERT INTO events(run_id, t_ns, kind, broker, topic, \"partition\", detail, "
                 "event_id, reason, fault, leader_old, leader, leader_epoch_old, leader_epoch, "
                 "replicas, isr_old, isr, \"offset\", offset_from, offset_to, leo_old, leo, "
                 "hw_old, hw, log_start_offset, record_count, producer, consumer, group_id, "
                 "generation, error, explain, timeline, elr_old, elr, last_known_leader) VALUES "
                 "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                 "?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [ST_RECORD] = "INSERT INTO records(run_id, producer, seq, key, topic, \"partition\", "
                  "\"offset\", sent_ns, acked_ns, outcome, final, final_offset, acked_broker, "
                  "acked_leader_epoch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [ST_STATE] = "INSERT INTO partition_state(run_id, t_ns, topic, \"partition\", broker, role, "
                 "leo, hw, leader_epoch, isr, leader, replica_index, elr, last_known_elr) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [ST_SUMMARY] = "INSERT INTO summary(run_id, metric, value) VALUES (?, ?, ?)",
    [ST_ANOMALY] = "INSERT INTO anomalies(run_id, kind, topic, \"partition\", detail, producer, "
                   "group_id, first_seq, last_seq, first_offset, last_offset, record_count, "
                   "acked_broker, acked_leader_epoch, cause, cause_event_id) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [ST_EXPECT] = "INSERT INTO expectations(run_id, expr, actual, passed) VALUES (?, ?, ?, ?)",
    [ST_TOPIC] = "INSERT INTO topics(run_id, topic, partitions, replication_factor, configs) "
                 "VALUES (?, ?, ?, ?, ?)",
    [ST_UNAVAILABLE] = "INSERT INTO unavailability(run_id, topic, \"partition\", view, reason, "
                       "start_ns, end_ns) VALUES (?, ?, ?, ?, ?, ?, ?)",
    [ST_RUN_OVERRIDES] = "UPDATE runs SET overrides = ? WHERE run_id = ?",
    [ST_MIRROR_LAG] = "INSERT INTO mirror_lag(run_id, t_ns, mirror, lag) VALUES (?, ?, ?, ?)",
    [ST_REPLICA_LOG] = "INSERT INTO replica_logs(run_id, event_id, t_ns, topic, \"partition\", "
                       "broker, replica_index, state, leo, hw, log_start_offset, leader_epoch, "
                       "epochs, leader, isr) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
};

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS runs(run_id INTEGER PRIMARY KEY, scenario TEXT NOT NULL,"
    " seed INTEGER NOT NULL, params TEXT, started_at TEXT, wall_ms INTEGER, sim_ms INTEGER,"
    " events INTEGER, trace_hash TEXT, verdict TEXT, record_ms INTEGER, run_dir TEXT,"
    " overrides TEXT);"
    "CREATE TABLE IF NOT EXISTS summary(run_id INTEGER NOT NULL, metric TEXT NOT NULL, value);"
    "CREATE TABLE IF NOT EXISTS events(run_id INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    " kind TEXT NOT NULL, broker INTEGER, topic TEXT, \"partition\" INTEGER, detail TEXT,"
    " event_id INTEGER, reason TEXT, fault TEXT, leader_old INTEGER, leader INTEGER,"
    " leader_epoch_old INTEGER, leader_epoch INTEGER, replicas TEXT, isr_old TEXT, isr TEXT,"
    " \"offset\" INTEGER, offset_from INTEGER, offset_to INTEGER, leo_old INTEGER, leo INTEGER,"
    " hw_old INTEGER, hw INTEGER, log_start_offset INTEGER, record_count INTEGER,"
    " producer TEXT, consumer TEXT, group_id TEXT, generation INTEGER, error TEXT,"
    " explain TEXT, timeline INTEGER, elr_old TEXT, elr TEXT, last_known_leader INTEGER);"
    "CREATE TABLE IF NOT EXISTS records(run_id INTEGER NOT NULL, producer TEXT NOT NULL,"
    " seq INTEGER NOT NULL, key TEXT, topic TEXT, \"partition\" INTEGER, \"offset\" INTEGER,"
    " sent_ns INTEGER, acked_ns INTEGER,"
    " outcome TEXT NOT NULL CHECK (outcome IN ('acked', 'failed', 'unknown')),"
    " final TEXT CHECK (final IN ('present', 'missing', 'duplicated', 'cleaned_up')),"
    " final_offset INTEGER, acked_broker INTEGER, acked_leader_epoch INTEGER);"
    "CREATE TABLE IF NOT EXISTS partition_state(run_id INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    " topic TEXT NOT NULL, \"partition\" INTEGER NOT NULL, broker INTEGER NOT NULL, role TEXT,"
    " leo INTEGER, hw INTEGER, leader_epoch INTEGER, isr TEXT, leader INTEGER,"
    " replica_index INTEGER, elr TEXT, last_known_elr TEXT);"
    "CREATE TABLE IF NOT EXISTS anomalies(run_id INTEGER NOT NULL, kind TEXT NOT NULL,"
    " topic TEXT, \"partition\" INTEGER, detail TEXT, producer TEXT, group_id TEXT,"
    " first_seq INTEGER, last_seq INTEGER, first_offset INTEGER, last_offset INTEGER,"
    " record_count INTEGER, acked_broker INTEGER, acked_leader_epoch INTEGER, cause TEXT,"
    " cause_event_id INTEGER);"
    "CREATE TABLE IF NOT EXISTS unavailability(run_id INTEGER NOT NULL, topic TEXT NOT NULL,"
    " \"partition\" INTEGER NOT NULL, view TEXT NOT NULL CHECK (view IN ('cluster', 'produce')),"
    " reason TEXT, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS expectations(run_id INTEGER NOT NULL, expr TEXT NOT NULL,"
    " actual TEXT, passed INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS topics(run_id INTEGER NOT NULL, topic TEXT NOT NULL,"
    " partitions INTEGER, replication_factor INTEGER, configs TEXT);"
    "CREATE TABLE IF NOT EXISTS replica_logs(run_id INTEGER NOT NULL, event_id INTEGER NOT NULL,"
    " t_ns INTEGER NOT NULL, topic TEXT NOT NULL, \"partition\" INTEGER NOT NULL,"
    " broker INTEGER NOT NULL, replica_index INTEGER, state TEXT, leo INTEGER, hw INTEGER,"
    " log_start_offset INTEGER, leader_epoch INTEGER, epochs TEXT, leader INTEGER, isr TEXT);"
    "CREATE TABLE IF NOT EXISTS mirror_lag(run_id INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    " mirror TEXT NOT NULL, lag INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS summary_run ON summary(run_id);"
    "CREATE INDEX IF NOT EXISTS events_run ON events(run_id, t_ns);"
    "CREATE INDEX IF NOT EXISTS records_run ON records(run_id);"
    "CREATE INDEX IF NOT EXISTS partition_state_run ON partition_state(run_id, t_ns);"
    "CREATE INDEX IF NOT EXISTS anomalies_run ON anomalies(run_id);"
    "CREATE INDEX IF NOT EXISTS expectations_run ON expectations(run_id);"
    "CREATE INDEX IF NOT EXISTS topics_run ON topics(run_id);"
    "CREATE INDEX IF NOT EXISTS unavailability_run ON unavailability(run_id);"
    "CREATE INDEX IF NOT EXISTS replica_logs_run ON replica_logs(run_id, event_id);"
    "CREATE INDEX IF NOT EXISTS mirror_lag_run ON mirror_lag(run_id, t_ns);";

/* Columns added after a table first shipped: a database made before them
 * gets them on its next open for writing (old rows read NULL). */
static const struct {
    const char *table;
    const char *column;
    const char *declaration;
} added_columns[] = {
    { "runs", "record_ms", "INTEGER" },
    { "partition_state", "leader", "INTEGER" },
    { "partition_state", "replica_index", "INTEGER" },
    /* schema version 2 */
    { "runs", "run_dir", "TEXT" },
    { "events", "event_id", "INTEGER" },
    { "records", "final", "TEXT" },
    { "records", "final_offset", "INTEGER" },
    { "records", "acked_broker", "INTEGER" },
    { "records", "acked_leader_epoch", "INTEGER" },
    { "anomalies", "producer", "TEXT" },
    { "anomalies", "group_id", "TEXT" },
    { "anomalies", "first_seq", "INTEGER" },
    { "anomalies", "last_seq", "INTEGER" },
    { "anomalies", "first_offset", "INTEGER" },
    { "anomalies", "last_offset", "INTEGER" },
    { "anomalies", "record_count", "INTEGER" },
    { "anomalies", "acked_broker", "INTEGER" },
    { "anomalies", "acked_leader_epoch", "INTEGER" },
    { "anomalies", "cause", "TEXT" },
    { "anomalies", "cause_event_id", "INTEGER" },
    /* schema version 3 */
    { "runs", "overrides", "TEXT" },
    { "events", "reason", "TEXT" },
    { "events", "fault", "TEXT" },
    { "events", "leader_old", "INTEGER" },
    { "events", "leader", "INTEGER" },
    { "events", "leader_epoch_old", "INTEGER" },
    { "events", "leader_epoch", "INTEGER" },
    { "events", "replicas", "TEXT" },
    { "events", "isr_old", "TEXT" },
    { "events", "isr", "TEXT" },
    { "events", "offset", "INTEGER" },
    { "events", "offset_from", "INTEGER" },
    { "events", "offset_to", "INTEGER" },
    { "events", "leo_old", "INTEGER" },
    { "events", "leo", "INTEGER" },
    { "events", "hw_old", "INTEGER" },
    { "events", "hw", "INTEGER" },
    { "events", "log_start_offset", "INTEGER" },
    { "events", "record_count", "INTEGER" },
    { "events", "producer", "TEXT" },
    { "events", "consumer", "TEXT" },
    { "events", "group_id", "TEXT" },
    { "events", "generation", "INTEGER" },
    { "events", "error", "TEXT" },
    { "events", "explain", "TEXT" },
    { "events", "timeline", "INTEGER" },
    { "partition_state", "elr", "TEXT" },
    { "partition_state", "last_known_elr", "TEXT" },
    { "events", "elr_old", "TEXT" },
    { "events", "elr", "TEXT" },
    { "events", "last_known_leader", "INTEGER" },
};

struct ks_recorder {
    sqlite3 *db;
    char *path;
    sqlite3_stmt *stmts[ST_COUNT];
    int64_t run_id;      /* the open run, 0 when none */
    int64_t event_count; /* events added to the open run (events.event_id) */
    bool failed;         /* a row of the open run failed */
    char *failure;       /* its message */
    int64_t busy_us;
};

/* ---- timing --------------------------------------------------------------- */

/* The recorder measures its own wall time to report the share of a run spent
 * recording. Wall time stays here and in runs.wall_ms/record_ms: it never
 * reaches the simulated world. */
static int64_t busy_start(void)
{
    return g_get_monotonic_time();
}

static void busy_stop(struct ks_recorder *recorder, int64_t start_us)
{
    recorder->busy_us += g_get_monotonic_time() - start_us;
}

/* ---- opening -------------------------------------------------------------- */

/* The integer's single result, or -1 with *error set (SQLite errors on a file
 * that is not a database are KS_RECORDER_ERROR_FOREIGN). */
static int64_t query_int(sqlite3 *db, const char *sql, const char *path, GError **error)
{
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);
    int64_t value = -1;
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(stmt);
        if (rc == SQLITE_ROW) {
            value = sqlite3_column_int64(stmt, 0);
            rc = SQLITE_OK;
        }
    }
    if (rc != SQLITE_OK) {
        int code = sqlite3_extended_errcode(db) & 0xff;
        if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) {
            g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_FOREIGN,
                        "%s:1: not a SQLite database (%s)", path, sqlite3_errmsg(db));
        } else {
            g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN, "%s:1: %s", path,
                        sqlite3_errmsg(db));
        }
        value = -1;
    }
    sqlite3_finalize(stmt);
    return value;
}

/* True if `table` exists with every column of the NULL-terminated list. */
static bool has_columns(sqlite3 *db, const char *table, const char *const *columns)
{
    for (size_t i = 0; columns[i] != NULL; i++) {
        char *sql = sqlite3_mprintf("SELECT count(*) FROM pragma_table_info(%Q) WHERE name = %Q",
                                    table, columns[i]);
        sqlite3_stmt *stmt = NULL;
        bool found = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK &&
                     sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_int64(stmt, 0) == 1;
        sqlite3_finalize(stmt);
        sqlite3_free(sql);
        if (!found) {
            return false;
        }
    }
    return true;
}

/* The tables and columns of SPEC section 4 that every ksim database has
 * had, from the first schema on (plus schema_version): a database without
 * application_id that has all of them is one an earlier ksim (or `ksim
 * merge`) made. Another program's file with a `runs` or a `schema_version`
 * table of its own does not have them all. */
static const struct {
    const char *table;
    const char *const *columns; /* NULL-terminated */
} legacy_tables[] = {
    { "schema_version", (const char *const[]){ "version", NULL } },
    { "runs",
      (const char *const[]){ "run_id", "scenario", "seed", "params", "started_at", "wall_ms",
                             "sim_ms", "events", "trace_hash", "verdict", NULL } },
    { "summary", (const char *const[]){ "run_id", "metric", "value", NULL } },
    { "events", (const char *const[]){ "run_id", "t_ns", "kind", "broker", "topic", "partition",
                                       "detail", NULL } },
    { "records", (const char *const[]){ "run_id", "producer", "seq", "key", "topic", "partition",
                                        "offset", "sent_ns", "acked_ns", "outcome", NULL } },
    { "partition_state",
      (const char *const[]){ "run_id", "t_ns", "topic", "partition", "broker", "role", "leo", "hw",
                             "leader_epoch", "isr", NULL } },
    { "anomalies",
      (const char *const[]){ "run_id", "kind", "topic", "partition", "detail", NULL } },
    { "expectations", (const char *const[]){ "run_id", "expr", "actual", "passed", NULL } },
};

static bool has_legacy_schema(sqlite3 *db)
{
    for (size_t i = 0; i < G_N_ELEMENTS(legacy_tables); i++) {
        if (!has_columns(db, legacy_tables[i].table, legacy_tables[i].columns)) {
            return false;
        }
    }
    return true;
}

enum db_kind {
    DB_EMPTY,   /* no tables, no application_id: ksim may create its schema */
    DB_CURRENT, /* ksim's application_id and this build's schema version: nothing to change */
    DB_OLDER,   /* ours, by application_id or by an earlier ksim's schema: migrate first */
};

/* Decides, reading only, whether the open database is ksim's (R1 of the
 * design block). Sets *error (KS_RECORDER_ERROR_FOREIGN) and returns false
 * for anything else. */
static bool identify(sqlite3 *db, const char *path, enum db_kind *kind, GError **error)
{
    int64_t tables = query_int(db, "SELECT count(*) FROM sqlite_master", path, error);
    int64_t application_id = tables < 0 ? -1 : query_int(db, "PRAGMA application_id", path, error);
    if (tables < 0 || application_id < 0) {
        return false;
    }
    if (application_id == 0 && tables == 0) {
        *kind = DB_EMPTY;
        return true;
    }
    if (application_id != 0 && application_id != KS_RECORDER_APPLICATION_ID) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_FOREIGN,
                    "%s:1: not a ksim database (it belongs to another program: application_id "
                    "0x%08" PRIx64 "); left unchanged, use another --db",
                    path, (uint64_t)(uint32_t)application_id);
        return false;
    }
    if (application_id == 0 && !has_legacy_schema(db)) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_FOREIGN,
                    "%s:1: not a ksim database (it has tables, but not ksim's); "
                    "left unchanged, use another --db",
                    path);
        return false;
    }
    int64_t version =
        has_columns(db, "schema_version", (const char *const[]){ "version", NULL })
            ? query_int(db, "SELECT COALESCE(max(version), 0) FROM schema_version", path, error)
            : 0;
    if (version < 0) {
        return false;
    }
    if (version > KS_RECORDER_SCHEMA_VERSION) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_FOREIGN,
                    "%s:1: written by a newer ksim (schema version %" PRId64
                    ", this build knows %d); left unchanged",
                    path, version, KS_RECORDER_SCHEMA_VERSION);
        return false;
    }
    *kind = application_id == KS_RECORDER_APPLICATION_ID && version == KS_RECORDER_SCHEMA_VERSION
                ? DB_CURRENT
                : DB_OLDER;
    return true;
}

static bool exec_sql(sqlite3 *db, const char *sql, const char *path, GError **error)
{
    char *message = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &message) != SQLITE_OK) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN, "%s:1: %s", path,
                    message != NULL ? message : sqlite3_errmsg(db));
        sqlite3_free(message);
        return false;
    }
    return true;
}

/* Turns on WAL. A journal-mode change that finds another connection busy
 * with the file (one that has just switched it, say) fails with SQLITE_BUSY
 * at once, without SQLite's busy handler; so it waits here the way the busy
 * timeout waits for every other lock. */
static bool switch_to_wal(sqlite3 *db, const char *path, GError **error)
{
    int64_t deadline_us = g_get_monotonic_time() + (int64_t)BUSY_TIMEOUT_MS * 1000;
    for (;;) {
        int rc = sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
        if (rc == SQLITE_OK) {
            break;
        }
        if ((rc & 0xff) != SQLITE_BUSY || g_get_monotonic_time() > deadline_us) {
            g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN, "%s:1: %s", path,
                        sqlite3_errmsg(db));
            return false;
        }
        g_usleep(2000);
    }
    return exec_sql(db, "PRAGMA synchronous = NORMAL", path, error);
}

/* Creates or migrates the schema in one write transaction, after checking
 * again inside it (another process may have created or migrated the file
 * since identify() read it). BEGIN IMMEDIATE takes the write lock through
 * the busy handler, so two runs creating one new database queue up instead
 * of one failing with "database is locked" (a read that upgrades to a write
 * would fail at once with SQLITE_BUSY_SNAPSHOT). */
static bool prepare_schema(sqlite3 *db, const char *path, GError **error)
{
    if (!exec_sql(db, "BEGIN IMMEDIATE", path, error)) {
        return false;
    }
    enum db_kind kind = DB_EMPTY;
    bool ok = identify(db, path, &kind, error);
    if (ok && kind != DB_CURRENT) {
        ok = exec_sql(db, schema_sql, path, error);
        for (size_t i = 0; ok && i < G_N_ELEMENTS(added_columns); i++) {
            if (!has_columns(db, added_columns[i].table,
                             (const char *const[]){ added_columns[i].column, NULL })) {
                char *sql = sqlite3_mprintf("ALTER TABLE \"%w\" ADD COLUMN \"%w\" %s",
                                            added_columns[i].table, added_columns[i].column,
                                            added_columns[i].declaration);
                ok = exec_sql(db, sql, path, error);
                sqlite3_free(sql);
            }
        }
        char *stamp = sqlite3_mprintf("DELETE FROM schema_version;"
                                      "INSERT INTO schema_version(version) VALUES (%d);"
                                      "PRAGMA application_id = %d;",
                                      KS_RECORDER_SCHEMA_VERSION, KS_RECORDER_APPLICATION_ID);
        ok = ok && exec_sql(db, stamp, path, error);
        sqlite3_free(stamp);
    }
    if (!ok || !exec_sql(db, "COMMIT", path, error)) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return false;
    }
    return true;
}

/* Checks, writing nothing, that path can hold a database we may write: not
 * empty, a regular writable file in a writable folder (SQLite writes -wal
 * and -shm files beside it), or absent in an existing writable folder. */
static bool check_writable_path(const char *path, GError **error)
{
    if (path[0] == '\0' || strcmp(path, ":memory:") == 0) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN,
                    "--db '%s': not a file name (SQLite would record into a temporary "
                    "database that is gone when ksim exits)",
                    path);
        return false;
    }
    g_autofree char *folder = g_path_get_dirname(path);
    GStatBuf info;
    if (g_stat(path, &info) == 0) {
        if (!S_ISREG(info.st_mode)) {
            g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN,
                        "%s:1: not a regular file", path);
            return false;
        }
        if (access(path, W_OK) != 0) {
            g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN,
                        "%s:1: read-only (%s); ksim records runs into it", path, g_strerror(errno));
            return false;
        }
    } else if (errno != ENOENT || !g_file_test(folder, G_FILE_TEST_IS_DIR)) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN, "%s:1: cannot create: %s",
                    path, errno != ENOENT ? g_strerror(errno) : "no such folder");
        return false;
    }
    if (access(folder, W_OK | X_OK) != 0) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN,
                    "%s:1: its folder %s is not writable (%s); SQLite keeps -wal and -shm "
                    "files beside the database",
                    path, folder, g_strerror(errno));
        return false;
    }
    return true;
}

/* The URI that opens path for reading only and leaves nothing behind: a
 * read-only connection to a WAL database would otherwise create -wal and
 * -shm files that it cannot remove. With no -wal and no -journal beside it,
 * no writer has the file open (a WAL writer keeps its -wal while open), and
 * immutable=1 reads it without locks or side files; else mode=ro shares the
 * writer's files. Owned: g_free. */
static char *readonly_uri(const char *path)
{
    g_autofree char *absolute = g_canonicalize_filename(path, NULL);
    g_autofree char *wal = g_strdup_printf("%s-wal", path);
    g_autofree char *journal = g_strdup_printf("%s-journal", path);
    bool quiet = !g_file_test(wal, G_FILE_TEST_EXISTS) && !g_file_test(journal, G_FILE_TEST_EXISTS);
    GString *uri = g_string_new("file:");
    for (const char *c = absolute; *c != '\0'; c++) {
        if (*c == '%' || *c == '?' || *c == '#' || (unsigned char)*c < 0x20) {
            g_string_append_printf(uri, "%%%02X", (unsigned char)*c);
        } else {
            g_string_append_c(uri, *c);
        }
    }
    g_string_append(uri, quiet ? "?immutable=1" : "?mode=ro");
    return g_string_free(uri, FALSE);
}

static struct ks_recorder *open_common(const char *path, bool readonly, GError **error)
{
    int64_t start_us = busy_start();
    if (readonly && !g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN, "%s:1: no such database",
                    path);
        return NULL;
    }
    if (!readonly && !check_writable_path(path, error)) {
        return NULL;
    }
    sqlite3 *db = NULL;
    g_autofree char *uri = readonly ? readonly_uri(path) : NULL;
    int flags = readonly ? (SQLITE_OPEN_READONLY | SQLITE_OPEN_URI)
                         : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    if (sqlite3_open_v2(readonly ? uri : path, &db, flags, NULL) != SQLITE_OK) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN, "%s:1: cannot open: %s", path,
                    db != NULL ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS); /* parallel jobs queue for the write lock */
    enum db_kind kind = DB_EMPTY;
    bool ok = identify(db, path, &kind, error);
    if (ok && readonly && kind == DB_EMPTY) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_FOREIGN,
                    "%s:1: holds no ksim runs (an empty database)", path);
        ok = false;
    }
    /* R1: only now, with the file known to be ours (or empty), may it change. */
    if (ok && !readonly) {
        ok = switch_to_wal(db, path, error) &&
             (kind == DB_CURRENT || prepare_schema(db, path, error));
    }
    if (!ok) {
        sqlite3_close(db);
        return NULL;
    }
    struct ks_recorder *recorder = g_new0(struct ks_recorder, 1);
    recorder->db = db;
    recorder->path = g_strdup(path);
    if (!readonly) {
        for (int i = 0; i < ST_COUNT; i++) {
            if (sqlite3_prepare_v3(db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                   &recorder->stmts[i], NULL) != SQLITE_OK) {
                g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN,
                            "%s:1: %s (the database's tables do not match ksim's)", path,
                            sqlite3_errmsg(db));
                ks_recorder_close(recorder);
                return NULL;
            }
        }
    }
    busy_stop(recorder, start_us);
    return recorder;
}

struct ks_recorder *ks_recorder_open(const char *path, GError **error)
{
    return open_common(path, false, error);
}

struct ks_recorder *ks_recorder_open_readonly(const char *path, GError **error)
{
    return open_common(path, true, error);
}

void ks_recorder_close(struct ks_recorder *recorder)
{
    if (recorder == NULL) {
        return;
    }
    ks_recorder_abort_run(recorder);
    for (int i = 0; i < ST_COUNT; i++) {
        sqlite3_finalize(recorder->stmts[i]);
    }
    sqlite3_close(recorder->db);
    g_free(recorder->path);
    g_free(recorder->failure);
    g_free(recorder);
}

bool ks_recorder_run_dir(struct ks_recorder *recorder, int64_t run_id, int64_t *run_id_out,
                         char **run_dir_out, GError **error)
{
    *run_dir_out = NULL;
    sqlite3 *db = recorder->db;
    if (run_id == 0) {
        run_id = query_int(db, "SELECT COALESCE(max(run_id), 0) FROM runs", recorder->path, error);
        if (run_id <= 0) {
            if (run_id == 0) {
                g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN, "%s:1: holds no runs",
                            recorder->path);
            }
            return false;
        }
    }
    bool has_column = has_columns(db, "runs", (const char *const[]){ "run_dir", NULL });
    sqlite3_stmt *stmt = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(db,
                           has_column ? "SELECT run_dir FROM runs WHERE run_id = ?"
                                      : "SELECT NULL FROM runs WHERE run_id = ?",
                           -1, &stmt, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(stmt, 1, run_id);
        if (sqlite3_step(stmt) == SQLITE_ROW) {
            found = true;
            const unsigned char *text = sqlite3_column_text(stmt, 0);
            *run_dir_out = text != NULL ? g_strdup((const char *)text) : NULL;
        }
    }
    sqlite3_finalize(stmt);
    if (!found) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN,
                    "%s:1: no run with id %" PRId64, recorder->path, run_id);
        return false;
    }
    *run_id_out = run_id;
    return true;
}

struct sqlite3 *ks_recorder_db(struct ks_recorder *recorder)
{
    return recorder->db;
}

int64_t ks_recorder_busy_us(const struct ks_recorder *recorder)
{
    return recorder->busy_us;
}

/* ---- binding helpers --------------------------------------------------------- */

static void bind_text(sqlite3_stmt *stmt, int index, const char *text)
{
    if (text == NULL) {
        sqlite3_bind_null(stmt, index);
    } else {
        sqlite3_bind_text(stmt, index, text, -1, SQLITE_TRANSIENT);
    }
}

/* Negative values mean "not known": SQL NULL. */
static void bind_opt(sqlite3_stmt *stmt, int index, int64_t value)
{
    if (value < 0) {
        sqlite3_bind_null(stmt, index);
    } else {
        sqlite3_bind_int64(stmt, index, value);
    }
}

/* Steps a prepared insert of the open run; remembers the first failure. */
static void step_row(struct ks_recorder *recorder, sqlite3_stmt *stmt)
{
    int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE && !recorder->failed) {
        recorder->failed = true;
        recorder->failure = g_strdup_printf("%s: %s", recorder->path, sqlite3_errmsg(recorder->db));
    }
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
}

/* Guard shared by every add_*: only inside an open, healthy run. */
static sqlite3_stmt *row_stmt(struct ks_recorder *recorder, enum stmt_id id)
{
    if (recorder->run_id == 0 || recorder->failed) {
        return NULL;
    }
    sqlite3_stmt *stmt = recorder->stmts[id];
    sqlite3_bind_int64(stmt, 1, recorder->run_id);
    return stmt;
}

/* ---- a run ---------------------------------------------------------------------- */

int64_t ks_recorder_begin_run(struct ks_recorder *recorder, const char *scenario, uint64_t seed,
                              const char *params_json, const char *started_at, const char *run_dir,
                              GError **error)
{
    int64_t start_us = busy_start();
    g_return_val_if_fail(recorder->run_id == 0, 0);
    if (sqlite3_exec(recorder->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_WRITE,
                    "%s: cannot start a transaction: %s", recorder->path,
                    sqlite3_errmsg(recorder->db));
        return 0;
    }
    sqlite3_stmt *stmt = recorder->stmts[ST_RUN_INSERT];
    bind_text(stmt, 1, scenario);
    sqlite3_bind_int64(stmt, 2, (sqlite3_int64)seed);
    bind_text(stmt, 3, params_json);
    bind_text(stmt, 4, started_at);
    bind_text(stmt, 5, run_dir);
    int rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    if (rc != SQLITE_DONE) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_WRITE, "%s: %s", recorder->path,
                    sqlite3_errmsg(recorder->db));
        sqlite3_exec(recorder->db, "ROLLBACK", NULL, NULL, NULL);
        return 0;
    }
    recorder->run_id = sqlite3_last_insert_rowid(recorder->db);
    recorder->event_count = 0;
    recorder->failed = false;
    g_clear_pointer(&recorder->failure, g_free);
    busy_stop(recorder, start_us);
    return recorder->run_id;
}

void ks_recorder_add_event(struct ks_recorder *recorder, uint64_t t_ns, const char *kind,
                           int32_t broker, const char *topic, int32_t partition, const char *detail,
                           const struct ks_recorder_event_facts *facts)
{
    int64_t start_us = busy_start();
    sqlite3_stmt *stmt = row_stmt(recorder, ST_EVENT);
    struct ks_recorder_event_facts none;
    if (facts == NULL) {
        ks_recorder_event_facts_init(&none);
        facts = &none;
    }
    if (stmt != NULL) {
        sqlite3_bind_int64(stmt, 2, (sqlite3_int64)t_ns);
        bind_text(stmt, 3, kind);
        bind_opt(stmt, 4, broker);
        bind_text(stmt, 5, topic);
        bind_opt(stmt, 6, partition);
        bind_text(stmt, 7, detail);
        sqlite3_bind_int64(stmt, 8, ++recorder->event_count);
        bind_text(stmt, 9, facts->reason);
        bind_text(stmt, 10, facts->fault);
        bind_opt(stmt, 11, facts->leader_old);
        bind_opt(stmt, 12, facts->leader);
        bind_opt(stmt, 13, facts->leader_epoch_old);
        bind_opt(stmt, 14, facts->leader_epoch);
        bind_text(stmt, 15, facts->replicas);
        bind_text(stmt, 16, facts->isr_old);
        bind_text(stmt, 17, facts->isr);
        bind_opt(stmt, 18, facts->offset);
        bind_opt(stmt, 19, facts->offset_from);
        bind_opt(stmt, 20, facts->offset_to);
        bind_opt(stmt, 21, facts->leo_old);
        bind_opt(stmt, 22, facts->leo);
        bind_opt(stmt, 23, facts->hw_old);
        bind_opt(stmt, 24, facts->hw);
        bind_opt(stmt, 25, facts->log_start_offset);
        bind_opt(stmt, 26, facts->record_count);
        bind_text(stmt, 27, facts->producer);
        bind_text(stmt, 28, facts->consumer);
        bind_text(stmt, 29, facts->group_id);
        bind_opt(stmt, 30, facts->generation);
        bind_text(stmt, 31, facts->error);
        bind_text(stmt, 32, facts->explain);
        bind_opt(stmt, 33, facts->timeline);
        bind_text(stmt, 34, facts->elr_old);
        bind_text(stmt, 35, facts->elr);
        bind_opt(stmt, 36, facts->last_known_leader);
        step_row(recorder, stmt);
    }
    busy_stop(recorder, start_us);
}

void ks_recorder_add_record(struct ks_recorder *recorder, const struct ks_recorder_record_row *row)
{
    int64_t start_us = busy_start();
    sqlite3_stmt *stmt = row_stmt(recorder, ST_RECORD);
    if (stmt != NULL) {
        bind_text(stmt, 2, row->producer);
        sqlite3_bind_int64(stmt, 3, row->seq);
        bind_text(stmt, 4, row->key);
        bind_text(stmt, 5, row->topic);
        bind_opt(stmt, 6, row->partition);
        bind_opt(stmt, 7, row->offset);
        bind_opt(stmt, 8, row->sent_ns);
        bind_opt(stmt, 9, row->acked_ns);
        bind_text(stmt, 10, row->outcome);
        bind_text(stmt, 11, row->final);
        bind_opt(stmt, 12, row->final_offset);
        bind_opt(stmt, 13, row->acked_broker);
        bind_opt(stmt, 14, row->acked_leader_epoch);
        step_row(recorder, stmt);
    }
    busy_stop(recorder, start_us);
}

void ks_recorder_add_partition_state(struct ks_recorder *recorder,
                                     const struct ks_recorder_state_row *row)
{
    int64_t start_us = busy_start();
    sqlite3_stmt *stmt = row_stmt(recorder, ST_STATE);
    if (stmt != NULL) {
        sqlite3_bind_int64(stmt, 2, (sqlite3_int64)row->t_ns);
        bind_text(stmt, 3, row->topic);
        sqlite3_bind_int(stmt, 4, row->partition);
        sqlite3_bind_int(stmt, 5, row->broker);
        bind_text(stmt, 6, row->role);
        bind_opt(stmt, 7, row->leo);
        bind_opt(stmt, 8, row->hw);
        bind_opt(stmt, 9, row->leader_epoch);
        bind_text(stmt, 10, row->isr);
        bind_opt(stmt, 11, row->leader);
        sqlite3_bind_int(stmt, 12, row->replica_index);
        bind_text(stmt, 13, row->elr);
        bind_text(stmt, 14, row->last_known_elr);
        step_row(recorder, stmt);
    }
    busy_stop(recorder, start_us);
}

void ks_recorder_set_run_overrides(struct ks_recorder *recorder, const char *overrides_json)
{
    int64_t start_us = busy_start();
    if (recorder->run_id != 0 && !recorder->failed) {
        sqlite3_stmt *stmt = recorder->stmts[ST_RUN_OVERRIDES];
        sqlite3_reset(stmt);
        sqlite3_clear_bindings(stmt);
        bind_text(stmt, 1, overrides_json);
        sqlite3_bind_int64(stmt, 2, recorder->run_id);
        step_row(recorder, stmt);
    }
    busy_stop(recorder, start_us);
}

void ks_recorder_add_replica_log(struct ks_recorder *recorder,
                                 const struct ks_recorder_replica_log_row *row)
{
    int64_t start_us = busy_start();
    sqlite3_stmt *stmt = row_stmt(recorder, ST_REPLICA_LOG);
    if (stmt != NULL) {
        sqlite3_bind_int64(stmt, 2, row->event_id);
        sqlite3_bind_int64(stmt, 3, (sqlite3_int64)row->t_ns);
        bind_text(stmt, 4, row->topic);
        sqlite3_bind_int64(stmt, 5, row->partition);
        sqlite3_bind_int64(stmt, 6, row->broker);
        bind_opt(stmt, 7, row->replica_index);
        bind_text(stmt, 8, row->state);
        bind_opt(stmt, 9, row->leo);
        bind_opt(stmt, 10, row->hw);
        bind_opt(stmt, 11, row->log_start_offset);
        bind_opt(stmt, 12, row->leader_epoch);
        bind_text(stmt, 13, row->epochs);
        bind_opt(stmt, 14, row->leader);
        bind_text(stmt, 15, row->isr);
        step_row(recorder, stmt);
    }
    busy_stop(recorder, start_us);
}

void ks_recorder_add_summary(struct ks_recorder *recorder, const char *metric, double value,
                             const char *value_text)
{
    int64_t start_us = busy_start();
    sqlite3_stmt *stmt = row_stmt(recorder, ST_SUMMARY);
    if (stmt != NULL) {
        bind_text(stmt, 2, metric);
        if (value_text != NULL) {
            sqlite3_bind_text(stmt, 3, value_text, -1, SQLITE_TRANSIENT);
        } else if (value == floor(value) && fabs(value) < 9.0e15) {
            sqlite3_bind_int64(stmt, 3, (sqlite3_int64)value);
        } else {
            sqlite3_bind_double(stmt, 3, value);
        }
        step_row(recorder, stmt);
    }
    busy_stop(recorder, start_us);
}

void ks_recorder_add_anomaly_row(struct ks_recorder *recorder,
                                 const struct ks_recorder_anomaly_row *row)
{
    int64_t start_us = busy_start();
    sqlite3_stmt *stmt = row_stmt(recorder, ST_ANOMALY);
    if (stmt != NULL) {
        bind_text(stmt, 2, row->kind);
        bind_text(stmt, 3, row->topic);
        bind_opt(stmt, 4, row->partition);
        bind_text(stmt, 5, row->detail);
        bind_text(stmt, 6, row->producer);
        bind_text(stmt, 7, row->group_id);
        bind_opt(stmt, 8, row->first_seq);
        bind_opt(stmt, 9, row->last_seq);
        bind_opt(stmt, 10, row->first_offset);
        bind_opt(stmt, 11, row->last_offset);
        bind_opt(stmt, 12, row->record_count);
        bind_opt(stmt, 13, row->acked_broker);
        bind_opt(stmt, 14, row->acked_leader_epoch);
        bind_text(stmt, 15, row->cause);
        bind_opt(stmt, 16, row->cause_event_id);
        step_row(recorder, stmt);
    }
    busy_stop(recorder, start_us);
}

void ks_recorder_add_anomaly(struct ks_recorder *recorder, const char *kind, const char *topic,
                             int32_t partition, const char *detail)
{
    struct ks_recorder_anomaly_row row = {
        .kind = kind,
        .topic = topic,
        .partition = partition,
        .detail = detail,
        .first_seq = -1,
        .last_seq = -1,
        .first_offset = -1,
        .last_offset = -1,
        .record_count = -1,
        .acked_broker = -1,
        .acked_leader_epoch = -1,
        .cause_event_id = -1,
    };
    ks_recorder_add_anomaly_row(recorder, &row);
}

void ks_recorder_add_unavailability(struct ks_recorder *recorder, const char *topic,
                                    int32_t partition, const char *view, const char *reason,
                                    uint64_t start_ns, uint64_t end_ns)
{
    int64_t start_us = busy_start();
    sqlite3_stmt *stmt = row_stmt(recorder, ST_UNAVAILABLE);
    if (stmt != NULL) {
        bind_text(stmt, 2, topic);
        sqlite3_bind_int(stmt, 3, partition);
        bind_text(stmt, 4, view);
        bind_text(stmt, 5, reason);
        sqlite3_bind_int64(stmt, 6, (sqlite3_int64)start_ns);
        sqlite3_bind_int64(stmt, 7, (sqlite3_int64)end_ns);
        step_row(recorder, stmt);
    }
    busy_stop(recorder, start_us);
}

void ks_recorder_add_mirror_lag(struct ks_recorder *recorder, uint64_t t_ns, const char *mirror,
                                int64_t lag)
{
    int64_t start_us = busy_start();
    sqlite3_stmt *stmt = row_stmt(recorder, ST_MIRROR_LAG);
    if (stmt != NULL) {
        sqlite3_bind_int64(stmt, 2, (sqlite3_int64)t_ns);
        bind_text(stmt, 3, mirror);
        sqlite3_bind_int64(stmt, 4, (sqlite3_int64)lag);
        step_row(recorder, stmt);
    }
    busy_stop(recorder, start_us);
}

void ks_recorder_add_expectation(struct ks_recorder *recorder, const char *expr, const char *actual,
                                 bool passed)
{
    int64_t start_us = busy_start();
    sqlite3_stmt *stmt = row_stmt(recorder, ST_EXPECT);
    if (stmt != NULL) {
        bind_text(stmt, 2, expr);
        bind_text(stmt, 3, actual);
        sqlite3_bind_int(stmt, 4, passed ? 1 : 0);
        step_row(recorder, stmt);
    }
    busy_stop(recorder, start_us);
}

void ks_recorder_add_topic(struct ks_recorder *recorder, const char *topic, int32_t partitions,
                           int32_t replication_factor, const char *configs)
{
    int64_t start_us = busy_start();
    sqlite3_stmt *stmt = row_stmt(recorder, ST_TOPIC);
    if (stmt != NULL) {
        bind_text(stmt, 2, topic);
        sqlite3_bind_int(stmt, 3, partitions);
        sqlite3_bind_int(stmt, 4, replication_factor);
        bind_text(stmt, 5, configs);
        step_row(recorder, stmt);
    }
    busy_stop(recorder, start_us);
}

bool ks_recorder_finish_run(struct ks_recorder *recorder, int64_t wall_ms, int64_t record_ms,
                            uint64_t sim_ns, uint64_t events, uint64_t trace_hash,
                            const char *verdict, GError **error)
{
    int64_t start_us = busy_start();
    g_return_val_if_fail(recorder->run_id != 0, false);
    if (!recorder->failed) {
        char hash_text[17];
        g_snprintf(hash_text, sizeof hash_text, "%016" PRIx64, trace_hash);
        sqlite3_stmt *stmt = recorder->stmts[ST_RUN_FINISH];
        sqlite3_bind_int64(stmt, 1, wall_ms);
        sqlite3_bind_int64(stmt, 2, record_ms);
        sqlite3_bind_int64(stmt, 3, (sqlite3_int64)(sim_ns / 1000000u));
        sqlite3_bind_int64(stmt, 4, (sqlite3_int64)events);
        sqlite3_bind_text(stmt, 5, hash_text, -1, SQLITE_TRANSIENT);
        bind_text(stmt, 6, verdict);
        sqlite3_bind_int64(stmt, 7, recorder->run_id);
        step_row(recorder, stmt);
    }
    if (!recorder->failed && sqlite3_exec(recorder->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        recorder->failed = true;
        recorder->failure =
            g_strdup_printf("%s: commit failed: %s", recorder->path, sqlite3_errmsg(recorder->db));
    }
    bool ok = !recorder->failed;
    if (!ok) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_WRITE, "%s", recorder->failure);
        sqlite3_exec(recorder->db, "ROLLBACK", NULL, NULL, NULL);
    }
    recorder->run_id = 0;
    recorder->failed = false;
    g_clear_pointer(&recorder->failure, g_free);
    busy_stop(recorder, start_us);
    return ok;
}

void ks_recorder_abort_run(struct ks_recorder *recorder)
{
    if (recorder->run_id != 0) {
        sqlite3_exec(recorder->db, "ROLLBACK", NULL, NULL, NULL);
        recorder->run_id = 0;
        recorder->failed = false;
        g_clear_pointer(&recorder->failure, g_free);
    }
}
