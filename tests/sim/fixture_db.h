/*
** tests/sim/fixture_db.h: hand-made ksim databases for the plot and sweep
** suites, built with the tables and columns of SPEC section 4 only (so that
** plots and merge are tested against the contract, not against the
** recorder's extras), plus ksim's sweep_runs table.
**
** A timeline run: one producer sends 200 records/s to orders-0 and orders-1
** for 10 s; broker 1 crashes at 4 s (fault "kill-leader") and restarts at
** 6 s; acks sent during the crash are answered at 6 s (so latency and
** throughput show the hole); broker 2 becomes leader of orders-0 at 4.5 s;
** the ISR is 1,2,3 except 2,3 from 4 s to 9 s.
*/
#pragma once

#include <glib.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

static inline void fixture_exec(sqlite3 *db, const char *sql)
{
    char *message = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &message) != SQLITE_OK) {
        g_error("fixture: %s: %s", sql, message);
    }
}

static inline sqlite3 *fixture_db_create(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK) {
        g_error("fixture: cannot create %s", path);
    }
    fixture_exec(db,
                 "CREATE TABLE schema_version(version INTEGER);"
                 "INSERT INTO schema_version VALUES (1);"
                 "CREATE TABLE runs(run_id INTEGER PRIMARY KEY, scenario TEXT, seed INTEGER, "
                 "params TEXT, started_at TEXT, wall_ms INTEGER, sim_ms INTEGER, events INTEGER, "
                 "trace_hash TEXT, verdict TEXT);"
                 "CREATE TABLE summary(run_id INTEGER, metric TEXT, value);"
                 "CREATE TABLE events(run_id INTEGER, t_ns INTEGER, kind TEXT, broker INTEGER, "
                 "topic TEXT, partition INTEGER, detail TEXT);"
                 "CREATE TABLE records(run_id INTEGER, producer TEXT, seq INTEGER, key TEXT, "
                 "topic TEXT, partition INTEGER, offset INTEGER, sent_ns INTEGER, "
                 "acked_ns INTEGER, outcome TEXT);"
                 "CREATE TABLE partition_state(run_id INTEGER, t_ns INTEGER, topic TEXT, "
                 "partition INTEGER, broker INTEGER, role TEXT, leo INTEGER, hw INTEGER, "
                 "leader_epoch INTEGER, isr TEXT);"
                 "CREATE TABLE anomalies(run_id INTEGER, kind TEXT, topic TEXT, "
                 "partition INTEGER, detail TEXT);"
                 "CREATE TABLE expectations(run_id INTEGER, expr TEXT, actual TEXT, "
                 "passed INTEGER);"
                 "CREATE TABLE sweep_runs(run_id INTEGER PRIMARY KEY, setting TEXT);"
                 "CREATE INDEX records_run ON records(run_id);");
    return db;
}

static inline void fixture_step(sqlite3 *db, const char *sql, const char *format, ...)
{
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK) {
        g_error("fixture: %s: %s", sql, sqlite3_errmsg(db));
    }
    va_list args;
    va_start(args, format);
    for (int i = 0; format[i]; i++) {
        if (format[i] == 'i') {
            sqlite3_bind_int64(stmt, i + 1, va_arg(args, int64_t));
        } else if (format[i] == 'd') {
            sqlite3_bind_double(stmt, i + 1, va_arg(args, double));
        } else {
            const char *text = va_arg(args, const char *);
            if (text == NULL) {
                sqlite3_bind_null(stmt, i + 1);
            } else {
                sqlite3_bind_text(stmt, i + 1, text, -1, SQLITE_TRANSIENT);
            }
        }
    }
    va_end(args);
    if (sqlite3_step(stmt) != SQLITE_DONE) {
        g_error("fixture: %s: %s", sql, sqlite3_errmsg(db));
    }
    sqlite3_finalize(stmt);
}

/* Adds a runs row, its summary and (setting != NULL) a sweep_runs row. */
static inline int64_t fixture_add_run(sqlite3 *db, const char *scenario, int64_t seed,
                                      const char *params, const char *setting, double acked_lost,
                                      double duplicates, double unavailable_ms)
{
    g_autofree char *hash =
        g_strdup_printf("%016" G_GINT64_MODIFIER "x", (gint64)(seed * 7919 + (int64_t)acked_lost));
    fixture_step(db,
                 "INSERT INTO runs(scenario, seed, params, started_at, wall_ms, sim_ms, events, "
                 "trace_hash, verdict) VALUES (?1, ?2, ?3, '2026-01-01T00:00:00Z', 5, 10000, "
                 "?4, ?5, ?6)",
                 "sisiss", scenario, seed, params, (int64_t)(1000 + seed), hash,
                 acked_lost > 0 ? "FAIL" : "PASS");
    int64_t run_id = sqlite3_last_insert_rowid(db);
    const char *names[] = { "acked_lost", "duplicates", "unavailable_ms", "throughput_rps" };
    double values[] = { acked_lost, duplicates, unavailable_ms, 380.0 + (double)seed };
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        fixture_step(db, "INSERT INTO summary VALUES (?1, ?2, ?3)", "isd", run_id, names[i],
                     values[i]);
    }
    fixture_step(db, "INSERT INTO expectations VALUES (?1, 'acked_lost = 0', ?2, ?3)", "isi",
                 run_id, acked_lost > 0 ? "1" : "0", (int64_t)(acked_lost > 0 ? 0 : 1));
    if (setting != NULL) {
        fixture_step(db, "INSERT INTO sweep_runs VALUES (?1, ?2)", "is", run_id, setting);
    }
    return run_id;
}

/* Adds the timeline described at the top to run_id. */
static inline void fixture_add_timeline(sqlite3 *db, int64_t run_id)
{
    const int64_t second_ns = 1000000000;
    fixture_exec(db, "BEGIN");
    for (int64_t seq = 0; seq < 2000; seq++) {
        int64_t sent_ns = seq * 5000000;
        int64_t acked_ns = sent_ns + 3000000 + (seq % 7) * 400000;
        if (sent_ns >= 4 * second_ns && sent_ns < 6 * second_ns) {
            acked_ns = 6 * second_ns + (seq % 50) * 1000000;
        }
        g_autofree char *key = g_strdup_printf("%" G_GINT64_FORMAT, seq % 100);
        fixture_step(db,
                     "INSERT INTO records VALUES (?1, 'p1', ?2, ?3, 'orders', ?4, ?5, ?6, "
                     "?7, 'acked')",
                     "iisiiii", run_id, seq, key, seq % 2, seq / 2, sent_ns, acked_ns);
    }
    fixture_step(db,
                 "INSERT INTO events VALUES (?1, ?2, 'fault', 1, NULL, NULL, "
                 "'fault kill-leader: crash broker 1 (process)')",
                 "ii", run_id, 4 * second_ns);
    fixture_step(db,
                 "INSERT INTO events VALUES (?1, ?2, 'restart', 1, NULL, NULL, "
                 "'fault kill-leader restart.after: restart broker 1')",
                 "ii", run_id, 6 * second_ns);
    fixture_step(db,
                 "INSERT INTO events VALUES (?1, ?2, 'leader_elected', 2, 'orders', 0, "
                 "'broker 2 leads orders-0 in epoch 1')",
                 "ii", run_id, 4500000000);
    for (int64_t t_ns = 0; t_ns <= 10 * second_ns; t_ns += second_ns / 2) {
        bool shrunk = t_ns >= 4 * second_ns && t_ns < 9 * second_ns;
        for (int64_t partition = 0; partition < 2; partition++) {
            for (int64_t broker = 1; broker <= 3; broker++) {
                bool down = broker == 1 && t_ns >= 4 * second_ns && t_ns < 6 * second_ns;
                int64_t leader = partition == 0 && t_ns >= 4500000000 ? 2 : 1;
                int64_t leo = t_ns / 10000000 - (broker == 1 && shrunk ? 30 : 0);
                fixture_step(db,
                             "INSERT INTO partition_state VALUES (?1, ?2, 'orders', ?3, ?4, "
                             "?5, ?6, ?7, ?8, ?9)",
                             "iiiisiiis", run_id, t_ns, partition, broker,
                             down               ? "offline"
                             : broker == leader ? "leader"
                                                : "follower",
                             down ? (int64_t)-1 : leo, down ? (int64_t)-1 : leo - 2,
                             (int64_t)(leader == 2 ? 1 : 0), shrunk ? "2,3" : "1,2,3");
            }
        }
    }
    fixture_exec(db, "UPDATE partition_state SET leo = NULL, hw = NULL WHERE leo = -1");
    fixture_exec(db, "COMMIT");
}
