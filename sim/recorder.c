/*
** sim/recorder.c: the SQLite recorder (SPEC section 4). See sim/recorder.h.
**
** Design:
**   - Schema: every table of SPEC 4, plus schema_version (ownership check),
**     topics (for `ksim describe`), unavailability (the intervals behind
**     unavailable_ms and produce_unavailable_ms) and extra columns:
**     runs.record_ms (wall time spent recording), partition_state.leader /
**     replica_index, events.event_id, records.final / final_offset /
**     acked_broker / acked_leader_epoch, and the anomalies' range and cause
**     columns. docs/database.md describes every table and column.
**     `CREATE TABLE IF NOT EXISTS`, so opening an existing database of ours
**     never changes its data; a database made before a column existed gets
**     it added (ALTER TABLE ADD COLUMN, NULL in old rows), see
**     added_columns.
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

#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

G_DEFINE_QUARK(ks-recorder-error-quark, ks_recorder_error)

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
    ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
    [ST_RUN_INSERT] = "INSERT INTO runs(scenario, seed, params, started_at, verdict) "
                      "VALUES (?, ?, ?, ?, 'RUNNING')",
    [ST_RUN_FINISH] = "UPDATE runs SET wall_ms = ?, record_ms = ?, sim_ms = ?, events = ?, "
                      "trace_hash = ?, verdict = ? WHERE run_id = ?",
    [ST_EVENT] = "INSERT INTO events(run_id, t_ns, kind, broker, topic, \"partition\", detail, "
                 "event_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    [ST_RECORD] = "INSERT INTO records(run_id, producer, seq, key, topic, \"partition\", "
                  "\"offset\", sent_ns, acked_ns, outcome, final, final_offset, acked_broker, "
                  "acked_leader_epoch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [ST_STATE] = "INSERT INTO partition_state(run_id, t_ns, topic, \"partition\", broker, role, "
                 "leo, hw, leader_epoch, isr, leader, replica_index) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
};

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL);"
    "INSERT INTO schema_version(version) SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM schema_version);"
    "CREATE TABLE IF NOT EXISTS runs(run_id INTEGER PRIMARY KEY, scenario TEXT NOT NULL,"
    " seed INTEGER NOT NULL, params TEXT, started_at TEXT, wall_ms INTEGER, sim_ms INTEGER,"
    " events INTEGER, trace_hash TEXT, verdict TEXT, record_ms INTEGER);"
    "CREATE TABLE IF NOT EXISTS summary(run_id INTEGER NOT NULL, metric TEXT NOT NULL, value);"
    "CREATE TABLE IF NOT EXISTS events(run_id INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    " kind TEXT NOT NULL, broker INTEGER, topic TEXT, \"partition\" INTEGER, detail TEXT,"
    " event_id INTEGER);"
    "CREATE TABLE IF NOT EXISTS records(run_id INTEGER NOT NULL, producer TEXT NOT NULL,"
    " seq INTEGER NOT NULL, key TEXT, topic TEXT, \"partition\" INTEGER, \"offset\" INTEGER,"
    " sent_ns INTEGER, acked_ns INTEGER,"
    " outcome TEXT NOT NULL CHECK (outcome IN ('acked', 'failed', 'unknown')),"
    " final TEXT CHECK (final IN ('present', 'missing', 'duplicated', 'cleaned_up')),"
    " final_offset INTEGER, acked_broker INTEGER, acked_leader_epoch INTEGER);"
    "CREATE TABLE IF NOT EXISTS partition_state(run_id INTEGER NOT NULL, t_ns INTEGER NOT NULL,"
    " topic TEXT NOT NULL, \"partition\" INTEGER NOT NULL, broker INTEGER NOT NULL, role TEXT,"
    " leo INTEGER, hw INTEGER, leader_epoch INTEGER, isr TEXT, leader INTEGER,"
    " replica_index INTEGER);"
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
    "CREATE INDEX IF NOT EXISTS summary_run ON summary(run_id);"
    "CREATE INDEX IF NOT EXISTS events_run ON events(run_id, t_ns);"
    "CREATE INDEX IF NOT EXISTS records_run ON records(run_id);"
    "CREATE INDEX IF NOT EXISTS partition_state_run ON partition_state(run_id, t_ns);"
    "CREATE INDEX IF NOT EXISTS anomalies_run ON anomalies(run_id);"
    "CREATE INDEX IF NOT EXISTS expectations_run ON expectations(run_id);"
    "CREATE INDEX IF NOT EXISTS topics_run ON topics(run_id);"
    "CREATE INDEX IF NOT EXISTS unavailability_run ON unavailability(run_id);";

/* Columns added after a table first shipped: a database made before them
 * gets them on its next open for writing (old rows read NULL). */
static const struct {
    const char *table;
    const char *column;
    const char *declaration;
} added_columns[] = {
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
};

struct ks_recorder {
    sqlite3 *db;
    char *path;
    sqlite3_stmt *stmts[ST_COUNT];
    int64_t run_id;   /* the open run, 0 when none */
    int64_t event_count; /* events added to the open run (events.event_id) */
    bool failed;      /* a row of the open run failed */
    char *failure;    /* its message */
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

/* 1 if the query's single integer result, -1 on error (message in *error). */
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

/* Checks that the database is empty or ours, without writing anything. */
static bool check_ownership(sqlite3 *db, const char *path, bool must_exist, GError **error)
{
    int64_t tables = query_int(db, "SELECT count(*) FROM sqlite_master", path, error);
    if (tables < 0) {
        return false;
    }
    int64_t has_version = query_int(
        db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
        path, error);
    if (has_version < 0) {
        return false;
    }
    if (tables == 0) {
        if (must_exist) {
            g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_FOREIGN,
                        "%s:1: holds no ksim runs (an empty database)", path);
            return false;
        }
        return true;
    }
    if (has_version == 0) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_FOREIGN,
                    "%s:1: not a ksim database (it has tables but no schema_version); "
                    "left unchanged, use another --db",
                    path);
        return false;
    }
    int64_t version = query_int(db, "SELECT max(version) FROM schema_version", path, error);
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

static bool has_column(sqlite3 *db, const char *table, const char *column)
{
    char *sql = sqlite3_mprintf("SELECT count(*) FROM pragma_table_info(%Q) WHERE name = %Q",
                                table, column);
    sqlite3_stmt *stmt = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
        found = sqlite3_column_int(stmt, 0) > 0;
    }
    sqlite3_finalize(stmt);
    sqlite3_free(sql);
    return found;
}

static bool add_missing_columns(sqlite3 *db, const char *path, GError **error)
{
    for (size_t i = 0; i < G_N_ELEMENTS(added_columns); i++) {
        if (has_column(db, added_columns[i].table, added_columns[i].column)) {
            continue;
        }
        char *sql = sqlite3_mprintf("ALTER TABLE \"%w\" ADD COLUMN \"%w\" %s",
                                    added_columns[i].table, added_columns[i].column,
                                    added_columns[i].declaration);
        bool ok = exec_sql(db, sql, path, error);
        sqlite3_free(sql);
        if (!ok) {
            return false;
        }
    }
    return true;
}

static struct ks_recorder *open_common(const char *path, bool readonly, GError **error)
{
    int64_t start_us = busy_start();
    if (readonly && !g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN,
                    "%s:1: no such database", path);
        return NULL;
    }
    sqlite3 *db = NULL;
    int flags = readonly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) {
        g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN, "%s:1: cannot open: %s",
                    path, db != NULL ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 120000); /* parallel jobs queue for the write lock */
    if (!check_ownership(db, path, readonly, error)) {
        sqlite3_close(db);
        return NULL;
    }
    if (!readonly) {
        if (!exec_sql(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;", path,
                      error) ||
            !exec_sql(db, schema_sql, path, error) || !add_missing_columns(db, path, error)) {
            sqlite3_close(db);
            return NULL;
        }
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
                              const char *params_json, const char *started_at, GError **error)
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
                           int32_t broker, const char *topic, int32_t partition,
                           const char *detail)
{
    int64_t start_us = busy_start();
    sqlite3_stmt *stmt = row_stmt(recorder, ST_EVENT);
    if (stmt != NULL) {
        sqlite3_bind_int64(stmt, 2, (sqlite3_int64)t_ns);
        bind_text(stmt, 3, kind);
        bind_opt(stmt, 4, broker);
        bind_text(stmt, 5, topic);
        bind_opt(stmt, 6, partition);
        bind_text(stmt, 7, detail);
        sqlite3_bind_int64(stmt, 8, ++recorder->event_count);
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
        .kind = kind, .topic = topic, .partition = partition, .detail = detail,
        .first_seq = -1, .last_seq = -1, .first_offset = -1, .last_offset = -1,
        .record_count = -1, .acked_broker = -1, .acked_leader_epoch = -1, .cause_event_id = -1,
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

void ks_recorder_add_expectation(struct ks_recorder *recorder, const char *expr,
                                 const char *actual, bool passed)
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
        recorder->failure = g_strdup_printf("%s: commit failed: %s", recorder->path,
                                            sqlite3_errmsg(recorder->db));
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
