/*
** sim/report.c: `ksim report DB [--run ID] -o FILE.html` (and `ksim run
** --report FILE.html`): one self-contained page to step through a run.
**
** The page, top to bottom:
**   header     scenario, description, run, seed, --set overrides, verdict
**   summary    each [expect] line with PASS/FAIL, the metrics, the anomalies
**   logs       per user partition, every replica's log at each step of the
**              run (table replica_logs: elections, ISR changes, truncations,
**              recoveries, retention, faults, the final phase), drawn by the
**              page's script: offsets coloured by leader epoch, HW and LEO
**              marked, acked, lost, duplicated and truncated offsets
**              highlighted; stepped with Previous/Next (and the arrow keys),
**              each step linked to its line of the timeline
**   timeline   the narrated timeline (events.detail and events.explain)
**   plots      throughput, latency, ISR and HW/LEO (sim/plot.c, gnuplot SVG
**              embedded as data: URLs, so the page needs no other file)
**   scenario   faults, and every effective setting (runs.params)
**
** Self-contained: the CSS and the script (plots/report.css, plots/report.js,
** found like the gnuplot scripts, ks_plot_script_dir) are copied into the
** page; the run's data for the drawings is one JSON block (escaped so that
** no "</" can end the script early). The page loads nothing from the network.
** Static parts are plain HTML written here; the script only draws the logs
** and links them to the timeline. Opened as FILE.html#selftest the script
** also clicks through its own controls and writes what it saw into the
** page (tests/report.sh reads it with headless Chromium).
**
** Only reads the database. Exit codes: 0 written; 2 bad input (not a ksim
** database, no such run, a bad -o, the assets missing); 3 the file could
** not be written.
*/
#include "report.h"

#include "commands.h"
#include "plot.h"
#include "recorder.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <json-glib/json-glib.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define ANOMALY_ROWS_MAX  200 /* rows shown; the table holds them all */
#define HW_PLOTS_MAX      4   /* HW/LEO plots of the first partitions */
#define REPORT_ERROR      (report_error_quark())
#define REPORT_ERROR_BAD  2
#define REPORT_ERROR_HOST 3

G_DEFINE_QUARK(ks - report - error - quark, report_error)

/* ---- small helpers ------------------------------------------------------------ */

static void append_escaped(GString *out, const char *text)
{
    for (const char *c = text != NULL ? text : ""; *c != '\0'; c++) {
        switch (*c) {
        case '&': g_string_append(out, "&amp;"); break;
        case '<': g_string_append(out, "&lt;"); break;
        case '>': g_string_append(out, "&gt;"); break;
        case '"': g_string_append(out, "&quot;"); break;
        case '\'': g_string_append(out, "&#39;"); break;
        default: g_string_append_c(out, *c);
        }
    }
}

static sqlite3_stmt *query(sqlite3 *db, const char *sql, int64_t run_id)
{
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK) {
        sqlite3_finalize(stmt);
        return NULL;
    }
    if (sqlite3_bind_parameter_count(stmt) >= 1) {
        sqlite3_bind_int64(stmt, 1, run_id);
    }
    return stmt;
}

static const char *text_at(sqlite3_stmt *stmt, int column)
{
    const unsigned char *text = sqlite3_column_text(stmt, column);
    return text != NULL ? (const char *)text : NULL;
}

static bool is_null(sqlite3_stmt *stmt, int column)
{
    return sqlite3_column_type(stmt, column) == SQLITE_NULL;
}

/* Whether table has the column (any column when column is NULL: the table
 * exists). Names are ksim's own, never the user's. */
static bool has_column(sqlite3 *db, const char *table, const char *column)
{
    g_autofree char *sql =
        column != NULL ? g_strdup_printf("SELECT 1 FROM pragma_table_info('%s') WHERE name = '%s'",
                                         table, column)
                       : g_strdup_printf("SELECT 1 FROM pragma_table_info('%s')", table);
    sqlite3_stmt *stmt = NULL;
    bool found = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK &&
                 sqlite3_step(stmt) == SQLITE_ROW;
    sqlite3_finalize(stmt);
    return found;
}

/* The root object of runs.params (parsed by parser, which owns it), or NULL. */
static JsonObject *params_object(JsonParser *parser, const char *params)
{
    if (params == NULL || !json_parser_load_from_data(parser, params, -1, NULL)) {
        return NULL;
    }
    JsonNode *root = json_parser_get_root(parser);
    return root != NULL && JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
}

/* "12.345s" */
static void append_seconds(GString *out, int64_t t_ns)
{
    g_string_append_printf(out, "%" PRId64 ".%03" PRId64 "s", t_ns / 1000000000,
                           t_ns / 1000000 % 1000);
}

/* ---- the run -------------------------------------------------------------------- */

struct report_run {
    int64_t run_id;
    char *scenario;
    char *description;
    int64_t seed;
    char *params;
    char *started_at;
    int64_t sim_ms;
    int64_t events;
    char *trace_hash;
    char *verdict;
    char *run_dir;
    char *overrides; /* "a=b, c=d" or NULL */
};

static void report_run_clear(struct report_run *run)
{
    g_free(run->scenario);
    g_free(run->description);
    g_free(run->params);
    g_free(run->started_at);
    g_free(run->trace_hash);
    g_free(run->verdict);
    g_free(run->run_dir);
    g_free(run->overrides);
}

static bool load_run(sqlite3 *db, int64_t run_id, struct report_run *run, GError **error)
{
    if (run_id <= 0) {
        sqlite3_stmt *latest = query(db, "SELECT max(run_id) FROM runs", 0);
        if (latest != NULL && sqlite3_step(latest) == SQLITE_ROW && !is_null(latest, 0)) {
            run_id = sqlite3_column_int64(latest, 0);
        }
        sqlite3_finalize(latest);
        if (run_id <= 0) {
            g_set_error(error, REPORT_ERROR, REPORT_ERROR_BAD, "the database holds no run");
            return false;
        }
    }
    bool with_dir = has_column(db, "runs", "run_dir");
    sqlite3_stmt *stmt =
        query(db,
              with_dir ? "SELECT scenario, seed, params, started_at, sim_ms, events, trace_hash, "
                         "verdict, run_dir FROM runs WHERE run_id = ?1"
                       : "SELECT scenario, seed, params, started_at, sim_ms, events, trace_hash, "
                         "verdict, NULL FROM runs WHERE run_id = ?1",
              run_id);
    if (stmt == NULL || sqlite3_step(stmt) != SQLITE_ROW) {
        sqlite3_finalize(stmt);
        g_set_error(error, REPORT_ERROR, REPORT_ERROR_BAD, "no run %" PRId64 " in the database",
                    run_id);
        return false;
    }
    run->run_id = run_id;
    run->scenario = g_strdup(text_at(stmt, 0) ? text_at(stmt, 0) : "?");
    run->seed = sqlite3_column_int64(stmt, 1);
    run->params = g_strdup(text_at(stmt, 2) ? text_at(stmt, 2) : "{}");
    run->started_at = g_strdup(text_at(stmt, 3));
    run->sim_ms = sqlite3_column_int64(stmt, 4);
    run->events = sqlite3_column_int64(stmt, 5);
    run->trace_hash = g_strdup(text_at(stmt, 6));
    run->verdict = g_strdup(text_at(stmt, 7) ? text_at(stmt, 7) : "?");
    run->run_dir = g_strdup(text_at(stmt, 8));
    sqlite3_finalize(stmt);
    run->overrides = ks_plot_run_overrides(db, run_id);
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *object = params_object(parser, run->params);
    JsonObject *scenario = object != NULL && json_object_has_member(object, "scenario")
                               ? json_object_get_object_member(object, "scenario")
                               : NULL;
    if (scenario != NULL && json_object_has_member(scenario, "description")) {
        run->description = g_strdup(json_object_get_string_member(scenario, "description"));
    }
    return true;
}

/* ---- static sections -------------------------------------------------------------- */

static void write_header(GString *out, const struct report_run *run)
{
    bool pass = strcmp(run->verdict, "PASS") == 0;
    g_string_append(out, "<header>\n<h1>");
    append_escaped(out, run->scenario);
    g_string_append_printf(out, " <span class=\"verdict %s\">", pass ? "pass" : "fail");
    append_escaped(out, run->verdict);
    g_string_append(out, "</span></h1>\n");
    if (run->description != NULL && run->description[0] != '\0') {
        g_string_append(out, "<p class=\"description\">");
        append_escaped(out, run->description);
        g_string_append(out, "</p>\n");
    }
    g_string_append_printf(
        out,
        "<p class=\"meta\">run %" PRId64 " &middot; seed %" PRId64 " &middot; %" PRId64
        ".%03" PRId64 " s simulated &middot; %" PRId64 " events",
        run->run_id, run->seed, run->sim_ms / 1000, run->sim_ms % 1000, run->events);
    if (run->trace_hash != NULL) {
        g_string_append(out, " &middot; trace_hash <code>");
        append_escaped(out, run->trace_hash);
        g_string_append(out, "</code>");
    }
    if (run->overrides != NULL) {
        g_string_append(out, "<br>settings changed from the scenario file: <code>");
        append_escaped(out, run->overrides);
        g_string_append(out, "</code>");
    }
    g_string_append(out, "</p>\n<nav><a href=\"#summary\">Summary</a> <a href=\"#logs\">Replica "
                         "logs</a> <a href=\"#timeline\">Timeline</a> <a href=\"#plots\">Plots</a> "
                         "<a href=\"#scenario\">Scenario</a></nav>\n</header>\n");
}

static void write_expectations(GString *out, sqlite3 *db, int64_t run_id)
{
    sqlite3_stmt *stmt = query(db,
                               "SELECT expr, actual, passed FROM expectations WHERE run_id = ?1 "
                               "ORDER BY rowid",
                               run_id);
    bool any = false;
    while (stmt != NULL && sqlite3_step(stmt) == SQLITE_ROW) {
        if (!any) {
            g_string_append(out, "<h3>Expectations</h3>\n<ul class=\"expectations\">\n");
            any = true;
        }
        bool passed = sqlite3_column_int(stmt, 2) != 0;
        g_string_append_printf(out, "<li class=\"%s\"><span class=\"badge\">%s</span> <code>",
                               passed ? "pass" : "fail", passed ? "PASS" : "FAIL");
        append_escaped(out, text_at(stmt, 0));
        g_string_append(out, "</code> (actual ");
        append_escaped(out, text_at(stmt, 1));
        g_string_append(out, ")</li>\n");
    }
    sqlite3_finalize(stmt);
    g_string_append(out, any ? "</ul>\n" : "<p>No expectations: the verdict is PASS.</p>\n");
}

/* Metrics whose value is worth a second look when not zero. */
static bool metric_alarming(const char *metric)
{
    static const char *const names[] = { "acked_lost",         "duplicates",
                                         "reordered",          "divergent_partitions",
                                         "consumed_lost",      "unclean_elections",
                                         "consumed_duplicates" };
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        if (strcmp(metric, names[i]) == 0) {
            return true;
        }
    }
    return false;
}

static void write_metrics(GString *out, sqlite3 *db, int64_t run_id)
{
    sqlite3_stmt *stmt =
        query(db, "SELECT metric, value FROM summary WHERE run_id = ?1 ORDER BY rowid", run_id);
    g_string_append(out, "<h3>Metrics</h3>\n<dl class=\"metrics\">\n");
    while (stmt != NULL && sqlite3_step(stmt) == SQLITE_ROW) {
        const char *metric = text_at(stmt, 0);
        const char *value = text_at(stmt, 1);
        bool alarm =
            metric != NULL && metric_alarming(metric) && value != NULL && strcmp(value, "0") != 0;
        g_string_append_printf(out, "<div%s><dt>", alarm ? " class=\"alarm\"" : "");
        append_escaped(out, metric);
        g_string_append(out, "</dt><dd>");
        if (sqlite3_column_type(stmt, 1) == SQLITE_FLOAT) {
            /* Latencies and rates: three decimals, as the summary table prints them. */
            g_string_append_printf(out, "%.3f", sqlite3_column_double(stmt, 1));
        } else {
            append_escaped(out, value);
        }
        g_string_append(out, "</dd></div>\n");
    }
    sqlite3_finalize(stmt);
    g_string_append(out, "</dl>\n");
}

static void write_anomalies(GString *out, sqlite3 *db, int64_t run_id)
{
    sqlite3_stmt *stmt = query(db,
                               "SELECT kind, topic, \"partition\", detail FROM anomalies "
                               "WHERE run_id = ?1 ORDER BY rowid",
                               run_id);
    int64_t rows = 0;
    while (stmt != NULL && sqlite3_step(stmt) == SQLITE_ROW) {
        if (rows == 0) {
            g_string_append(out, "<h3>Anomalies</h3>\n<table class=\"anomalies\">\n"
                                 "<tr><th>kind</th><th>partition</th><th>what</th></tr>\n");
        }
        rows++;
        if (rows > ANOMALY_ROWS_MAX) {
            continue;
        }
        g_string_append_printf(out, "<tr class=\"%s\"><td>",
                               text_at(stmt, 0) ? text_at(stmt, 0) : "");
        append_escaped(out, text_at(stmt, 0));
        g_string_append(out, "</td><td>");
        if (text_at(stmt, 1) != NULL) {
            append_escaped(out, text_at(stmt, 1));
            g_string_append_printf(out, "-%d", sqlite3_column_int(stmt, 2));
        }
        g_string_append(out, "</td><td>");
        append_escaped(out, text_at(stmt, 3));
        g_string_append(out, "</td></tr>\n");
    }
    sqlite3_finalize(stmt);
    if (rows > 0) {
        g_string_append(out, "</table>\n");
    }
    if (rows > ANOMALY_ROWS_MAX) {
        g_string_append_printf(out,
                               "<p>... and %" PRId64 " more rows (table <code>anomalies</code>, "
                               "run %" PRId64 ").</p>\n",
                               rows - ANOMALY_ROWS_MAX, run_id);
    }
    if (rows == 0) {
        g_string_append(out, "<h3>Anomalies</h3>\n<p>None: every acknowledged record was in the "
                             "final read, once, in order.</p>\n");
    }
}

static void write_timeline(GString *out, sqlite3 *db, int64_t run_id)
{
    bool typed = has_column(db, "events", "timeline");
    sqlite3_stmt *stmt =
        query(db,
              typed ? "SELECT event_id, t_ns, kind, detail, explain FROM events WHERE run_id = ?1 "
                      "AND (timeline IS NULL OR timeline = 1) ORDER BY event_id"
                    : "SELECT event_id, t_ns, kind, detail, NULL FROM events WHERE run_id = ?1 "
                      "ORDER BY event_id",
              run_id);
    g_string_append(out, "<section id=\"timeline\">\n<h2>Timeline</h2>\n"
                         "<p class=\"hint\">What mattered, in order (the database's "
                         "<code>events</code> table holds every event). A <b>logs</b> button "
                         "shows the replicas' logs at that step.</p>\n"
                         "<label class=\"toggle\"><input type=\"checkbox\" id=\"show-explain\" "
                         "checked> explain each step</label>\n"
                         "<table class=\"timeline\">\n");
    while (stmt != NULL && sqlite3_step(stmt) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(stmt, 0);
        const char *kind = text_at(stmt, 2) ? text_at(stmt, 2) : "";
        g_string_append_printf(out, "<tr id=\"ev-%" PRId64 "\" class=\"ev k-", id);
        append_escaped(out, kind);
        g_string_append_printf(out, "\" data-event=\"%" PRId64 "\"><td class=\"t\">", id);
        append_seconds(out, sqlite3_column_int64(stmt, 1));
        g_string_append(out, "</td><td class=\"kind\">");
        append_escaped(out, kind);
        g_string_append(out, "</td><td class=\"what\">");
        append_escaped(out, text_at(stmt, 3));
        if (text_at(stmt, 4) != NULL && text_at(stmt, 4)[0] != '\0') {
            g_string_append(out, "<div class=\"explain\">");
            append_escaped(out, text_at(stmt, 4));
            g_string_append(out, "</div>");
        }
        g_string_append(out, "</td><td class=\"go\"></td></tr>\n");
    }
    sqlite3_finalize(stmt);
    g_string_append(out, "</table>\n</section>\n");
}

/* ---- the logs' data (JSON for the script) ------------------------------------------ */

/* Adds [[from, to], ...] (inclusive) of one partition from a query whose
 * columns are topic, partition, from, to (and maybe more, added as numbers
 * or text after them). */
static void add_ranges(JsonBuilder *b, sqlite3 *db, const char *sql, int64_t run_id,
                       const char *topic, int32_t partition)
{
    sqlite3_stmt *stmt = query(db, sql, run_id);
    json_builder_begin_array(b);
    if (stmt != NULL) {
        sqlite3_bind_text(stmt, 2, topic, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(stmt, 3, partition);
    }
    while (stmt != NULL && sqlite3_step(stmt) == SQLITE_ROW) {
        json_builder_begin_array(b);
        int columns = sqlite3_column_count(stmt);
        for (int c = 0; c < columns; c++) {
            if (sqlite3_column_type(stmt, c) == SQLITE_TEXT) {
                json_builder_add_string_value(b, text_at(stmt, c));
            } else if (is_null(stmt, c)) {
                json_builder_add_null_value(b);
            } else {
                json_builder_add_int_value(b, sqlite3_column_int64(stmt, c));
            }
        }
        json_builder_end_array(b);
    }
    sqlite3_finalize(stmt);
    json_builder_end_array(b);
}

/* Consecutive offsets the producers were told they had acked, as ranges
 * (gaps and islands); the lost ranges with their cause; the duplicated
 * offsets of the final read. */
static void add_highlights(JsonBuilder *b, sqlite3 *db, int64_t run_id, const char *topic,
                           int32_t partition)
{
    json_builder_set_member_name(b, "acked");
    add_ranges(b, db,
               "SELECT min(o), max(o) FROM (SELECT o, o - row_number() OVER (ORDER BY o) AS g "
               "FROM (SELECT DISTINCT \"offset\" AS o FROM records WHERE run_id = ?1 AND "
               "topic = ?2 AND \"partition\" = ?3 AND outcome = 'acked' AND \"offset\" IS NOT "
               "NULL)) GROUP BY g ORDER BY 1",
               run_id, topic, partition);
    json_builder_set_member_name(b, "lost");
    add_ranges(b, db,
               "SELECT first_offset, last_offset, record_count, cause FROM anomalies WHERE "
               "run_id = ?1 AND topic = ?2 AND \"partition\" = ?3 AND kind = 'lost' AND "
               "first_offset IS NOT NULL ORDER BY first_offset",
               run_id, topic, partition);
    json_builder_set_member_name(b, "duplicated");
    add_ranges(b, db,
               "SELECT first_offset, last_offset, record_count FROM anomalies WHERE run_id = ?1 "
               "AND topic = ?2 AND \"partition\" = ?3 AND kind = 'duplicate' AND first_offset "
               "IS NOT NULL ORDER BY first_offset",
               run_id, topic, partition);
}

static void add_int_or_null(JsonBuilder *b, const char *name, sqlite3_stmt *stmt, int column)
{
    json_builder_set_member_name(b, name);
    if (is_null(stmt, column)) {
        json_builder_add_null_value(b);
    } else {
        json_builder_add_int_value(b, sqlite3_column_int64(stmt, column));
    }
}

/* "1,2,3" -> [1, 2, 3] */
static void add_id_list(JsonBuilder *b, const char *text)
{
    json_builder_begin_array(b);
    g_auto(GStrv) parts = g_strsplit(text != NULL ? text : "", ",", -1);
    for (size_t i = 0; parts[i] != NULL; i++) {
        if (parts[i][0] != '\0') {
            json_builder_add_int_value(b, g_ascii_strtoll(parts[i], NULL, 10));
        }
    }
    json_builder_end_array(b);
}

/* One replica's row of a step. */
static void add_replica(JsonBuilder *b, sqlite3_stmt *stmt)
{
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "broker");
    json_builder_add_int_value(b, sqlite3_column_int64(stmt, 1));
    json_builder_set_member_name(b, "state");
    json_builder_add_string_value(b, text_at(stmt, 2) ? text_at(stmt, 2) : "none");
    add_int_or_null(b, "leo", stmt, 3);
    add_int_or_null(b, "hw", stmt, 4);
    add_int_or_null(b, "start", stmt, 5);
    add_int_or_null(b, "epoch", stmt, 6);
    json_builder_set_member_name(b, "epochs");
    g_autoptr(JsonParser) parser = json_parser_new();
    const char *epochs = text_at(stmt, 7);
    if (epochs != NULL && json_parser_load_from_data(parser, epochs, -1, NULL)) {
        json_builder_add_value(b, json_node_copy(json_parser_get_root(parser)));
    } else {
        json_builder_add_null_value(b);
    }
    json_builder_end_object(b);
}

/* The steps of one partition: replica_logs joined with their events. */
static int64_t add_steps(JsonBuilder *b, sqlite3 *db, int64_t run_id, const char *topic,
                         int32_t partition)
{
    sqlite3_stmt *stmt = query(
        db,
        "SELECT l.event_id, l.broker, l.state, l.leo, l.hw, l.log_start_offset, l.leader_epoch, "
        "l.epochs, l.leader, l.isr, l.t_ns, e.kind, e.broker, e.detail, e.offset_from, "
        "e.offset_to FROM replica_logs l LEFT JOIN events e ON e.run_id = l.run_id AND "
        "e.event_id = l.event_id WHERE l.run_id = ?1 AND l.topic = ?2 AND l.\"partition\" = ?3 "
        "ORDER BY l.event_id, l.replica_index",
        run_id);
    if (stmt != NULL) {
        sqlite3_bind_text(stmt, 2, topic, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(stmt, 3, partition);
    }
    json_builder_begin_array(b);
    int64_t current = -1;
    int64_t count = 0;
    while (stmt != NULL && sqlite3_step(stmt) == SQLITE_ROW) {
        int64_t event = sqlite3_column_int64(stmt, 0);
        if (event != current) {
            if (current >= 0) {
                json_builder_end_array(b);
                json_builder_end_object(b);
            }
            current = event;
            count++;
            json_builder_begin_object(b);
            json_builder_set_member_name(b, "event");
            json_builder_add_int_value(b, event);
            json_builder_set_member_name(b, "t_ns");
            json_builder_add_int_value(b, sqlite3_column_int64(stmt, 10));
            json_builder_set_member_name(b, "kind");
            json_builder_add_string_value(b, text_at(stmt, 11) ? text_at(stmt, 11) : "");
            add_int_or_null(b, "broker", stmt, 12);
            json_builder_set_member_name(b, "detail");
            json_builder_add_string_value(b, text_at(stmt, 13) ? text_at(stmt, 13) : "");
            add_int_or_null(b, "from", stmt, 14);
            add_int_or_null(b, "to", stmt, 15);
            add_int_or_null(b, "leader", stmt, 8);
            json_builder_set_member_name(b, "isr");
            add_id_list(b, text_at(stmt, 9));
            json_builder_set_member_name(b, "replicas");
            json_builder_begin_array(b);
        }
        add_replica(b, stmt);
    }
    if (current >= 0) {
        json_builder_end_array(b);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    sqlite3_finalize(stmt);
    return count;
}

/* {"partitions": [{"name", "topic", "partition", "acked", "lost",
 * "duplicated", "steps": [...]}, ...]} for the user topics. */
static char *logs_json(sqlite3 *db, int64_t run_id, int64_t *step_count)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "partitions");
    json_builder_begin_array(b);
    bool have_logs = has_column(db, "replica_logs", NULL);
    sqlite3_stmt *stmt = query(db,
                               "SELECT topic, partitions FROM topics WHERE run_id = ?1 "
                               "ORDER BY rowid",
                               run_id);
    *step_count = 0;
    while (have_logs && stmt != NULL && sqlite3_step(stmt) == SQLITE_ROW) {
        g_autofree char *topic = g_strdup(text_at(stmt, 0));
        int32_t partitions = sqlite3_column_int(stmt, 1);
        for (int32_t p = 0; p < partitions; p++) {
            json_builder_begin_object(b);
            json_builder_set_member_name(b, "name");
            g_autofree char *name = g_strdup_printf("%s-%d", topic, p);
            json_builder_add_string_value(b, name);
            add_highlights(b, db, run_id, topic, p);
            json_builder_set_member_name(b, "steps");
            *step_count += add_steps(b, db, run_id, topic, p);
            json_builder_end_object(b);
        }
    }
    sqlite3_finalize(stmt);
    json_builder_end_array(b);
    json_builder_end_object(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autofree char *text = json_to_string(root, FALSE);
    /* Inside <script>, "</" would end the block: JSON may write it "<\/". */
    GString *safe = g_string_new(NULL);
    for (const char *c = text; *c != '\0'; c++) {
        if (c[0] == '<' && c[1] == '/') {
            g_string_append(safe, "<\\");
            continue;
        }
        g_string_append_c(safe, *c);
    }
    return g_string_free(safe, FALSE);
}

static void write_logs(GString *out, const char *json, int64_t step_count)
{
    g_string_append(out, "<section id=\"logs\">\n<h2>Replica logs, step by step</h2>\n");
    if (step_count == 0) {
        g_string_append(out, "<p>This database has no pictures of the replicas' logs (table "
                             "<code>replica_logs</code>: recorded by ksim since schema version "
                             "3).</p>\n");
    } else {
        g_string_append(out,
                        "<p class=\"hint\">Each row is one replica's log as its broker held it: "
                        "offsets from the log start to the log end (LEO), coloured by the leader "
                        "epoch they were written in; the black bar is the high watermark (HW). "
                        "Use <b>Previous</b>/<b>Next</b> or the arrow keys to step through the "
                        "run; a fault is pictured just before it takes effect, everything else "
                        "just after.</p>\n<div id=\"partitions\"></div>\n");
    }
    g_string_append(out, "<script type=\"application/json\" id=\"ksim-data\">");
    g_string_append(out, json);
    g_string_append(out, "</script>\n</section>\n");
}

/* ---- plots ------------------------------------------------------------------------- */

/* Appends <figure><img src="data:image/svg+xml;base64,..."></figure>, or
 * nothing when the plot has nothing to show. */
static void add_plot(GString *out, sqlite3 *db, int64_t run_id, const char *kind,
                     const char *partition, const char *dir, const char *caption)
{
    g_autofree char *file =
        g_strdup_printf("%s%s%s.svg", kind, partition ? "-" : "", partition ? partition : "");
    g_autofree char *path = g_build_filename(dir, file, NULL);
    struct ks_plot_request request = { .kind = kind,
                                       .run_id = run_id,
                                       .partition = partition,
                                       .from_s = -1,
                                       .to_s = -1,
                                       .output = path };
    /* A plot with nothing to show says so on stderr; the page leaves it out. */
    int saved = dup(STDERR_FILENO);
    FILE *quiet = fopen("/dev/null", "w");
    if (quiet != NULL) {
        fflush(stderr);
        dup2(fileno(quiet), STDERR_FILENO);
    }
    int code = ks_plot_write(db, &request);
    if (quiet != NULL) {
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        fclose(quiet);
    }
    close(saved);
    gchar *svg = NULL;
    gsize svg_bytes = 0;
    if (code != 0 || !g_file_get_contents(path, &svg, &svg_bytes, NULL)) {
        return;
    }
    g_unlink(path);
    g_autofree char *base64 = g_base64_encode((const guchar *)svg, svg_bytes);
    g_free(svg);
    g_string_append(out, "<figure><img alt=\"");
    append_escaped(out, caption);
    g_string_append_printf(out, "\" src=\"data:image/svg+xml;base64,%s\"><figcaption>", base64);
    append_escaped(out, caption);
    g_string_append(out, "</figcaption></figure>\n");
}

static void write_plots(GString *out, sqlite3 *db, int64_t run_id)
{
    g_string_append(out, "<section id=\"plots\">\n<h2>Plots</h2>\n");
    g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
    g_autofree char *dir = g_dir_make_tmp("ksim-report-XXXXXX", NULL);
    if (gnuplot == NULL || dir == NULL) {
        g_string_append(out, "<p>No plots: gnuplot is not installed (Debian: "
                             "<code>apt-get install gnuplot-nox</code>).</p>\n</section>\n");
        if (dir != NULL) {
            g_rmdir(dir);
        }
        return;
    }
    add_plot(out, db, run_id, "throughput", NULL, dir,
             "Throughput: acknowledged records per "
             "second, fault windows shaded");
    add_plot(out, db, run_id, "latency", NULL, dir, "Produce latency, p50 and p99");
    add_plot(out, db, run_id, "isr", NULL, dir, "ISR size per partition");
    sqlite3_stmt *stmt =
        query(db, "SELECT topic, partitions FROM topics WHERE run_id = ?1 ORDER BY rowid", run_id);
    int shown = 0;
    while (stmt != NULL && sqlite3_step(stmt) == SQLITE_ROW && shown < HW_PLOTS_MAX) {
        int32_t partitions = sqlite3_column_int(stmt, 1);
        for (int32_t p = 0; p < partitions && shown < HW_PLOTS_MAX; p++, shown++) {
            g_autofree char *tp = g_strdup_printf("%s-%d", text_at(stmt, 0), p);
            g_autofree char *caption = g_strdup_printf("LEO and HW of every replica of %s", tp);
            add_plot(out, db, run_id, "hw", tp, dir, caption);
        }
    }
    sqlite3_finalize(stmt);
    g_rmdir(dir);
    g_string_append(out, "</section>\n");
}

/* ---- the scenario ------------------------------------------------------------------ */

static void write_scenario(GString *out, const struct report_run *run)
{
    g_string_append(out, "<section id=\"scenario\">\n<h2>Scenario</h2>\n");
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *object = params_object(parser, run->params);
    if (object != NULL) {
        JsonNode *root = json_parser_get_root(parser);
        JsonArray *faults = json_object_has_member(object, "faults")
                                ? json_object_get_array_member(object, "faults")
                                : NULL;
        guint count = faults != NULL ? json_array_get_length(faults) : 0;
        if (count > 0) {
            g_string_append(out, "<h3>Faults</h3>\n<table class=\"faults\">\n");
        }
        for (guint i = 0; i < count; i++) {
            JsonObject *fault = json_array_get_object_element(faults, i);
            GList *members = json_object_get_members(fault);
            g_string_append(out, "<tr>");
            for (GList *m = members; m != NULL; m = m->next) {
                JsonNode *value = json_object_get_member(fault, m->data);
                g_autofree char *text =
                    JSON_NODE_HOLDS_VALUE(value) && json_node_get_value_type(value) == G_TYPE_STRING
                        ? g_strdup(json_node_get_string(value))
                        : json_to_string(value, FALSE);
                g_string_append(out, "<td><span class=\"key\">");
                append_escaped(out, m->data);
                g_string_append(out, "</span> ");
                append_escaped(out, text);
                g_string_append(out, "</td>");
            }
            g_list_free(members);
            g_string_append(out, "</tr>\n");
        }
        if (count > 0) {
            g_string_append(out, "</table>\n");
        }
        JsonGenerator *generator = json_generator_new();
        json_generator_set_root(generator, root);
        json_generator_set_pretty(generator, TRUE);
        g_autofree char *pretty = json_generator_to_data(generator, NULL);
        g_object_unref(generator);
        g_string_append(out, "<details><summary>Every effective setting (runs.params)</summary>"
                             "<pre>");
        append_escaped(out, pretty);
        g_string_append(out, "</pre></details>\n");
    }
    if (run->run_dir != NULL) {
        g_string_append(out, "<p>The brokers' logs of this run: <code>");
        append_escaped(out, run->run_dir);
        g_string_append(out, "</code> (<code>ksim dump-log</code> reads them).</p>\n");
    }
    g_string_append(out, "</section>\n");
}

/* ---- the page ------------------------------------------------------------------------ */

static char *read_asset(const char *name, GError **error)
{
    g_autofree char *dir = ks_plot_script_dir();
    g_autofree char *path = g_build_filename(dir, name, NULL);
    char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL)) {
        g_set_error(error, REPORT_ERROR, REPORT_ERROR_BAD,
                    "%s: cannot read the page's asset (set KSIM_PLOT_DIR to ksim's plots "
                    "folder)",
                    path);
        return NULL;
    }
    return text;
}

bool ks_report_check_output(const char *path, GError **error)
{
    if (path == NULL || path[0] == '\0') {
        g_set_error(error, REPORT_ERROR, REPORT_ERROR_BAD, "-o: expected FILE.html");
        return false;
    }
    if (!g_str_has_suffix(path, ".html") && !g_str_has_suffix(path, ".htm")) {
        g_set_error(error, REPORT_ERROR, REPORT_ERROR_BAD, "%s: the name must end in .html", path);
        return false;
    }
    if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
        g_set_error(error, REPORT_ERROR, REPORT_ERROR_BAD, "%s: is a folder", path);
        return false;
    }
    g_autofree char *folder = g_path_get_dirname(path);
    if (!g_file_test(folder, G_FILE_TEST_IS_DIR) || access(folder, W_OK) != 0 ||
        (g_file_test(path, G_FILE_TEST_EXISTS) && access(path, W_OK) != 0)) {
        g_set_error(error, REPORT_ERROR, REPORT_ERROR_BAD, "%s: cannot write there (%s)", path,
                    !g_file_test(folder, G_FILE_TEST_IS_DIR) ? "no such folder"
                                                             : "permission denied");
        return false;
    }
    return true;
}

int ks_report_write(sqlite3 *db, int64_t run_id, const char *output, GError **error)
{
    if (!ks_report_check_output(output, error)) {
        return 2;
    }
    struct report_run run = { 0 };
    if (!load_run(db, run_id, &run, error)) {
        return 2;
    }
    g_autofree char *css = read_asset("report.css", error);
    g_autofree char *js = css != NULL ? read_asset("report.js", error) : NULL;
    if (js == NULL) {
        report_run_clear(&run);
        return 2;
    }
    int64_t step_count = 0;
    g_autofree char *json = logs_json(db, run.run_id, &step_count);
    GString *out = g_string_new("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
                                "charset=\"utf-8\">\n<meta name=\"viewport\" "
                                "content=\"width=device-width, initial-scale=1\">\n<title>");
    g_string_append_printf(out, "ksim report: ");
    append_escaped(out, run.scenario);
    g_string_append_printf(out, ", seed %" PRId64 " (run %" PRId64 ")</title>\n<style>\n", run.seed,
                           run.run_id);
    g_string_append(out, css);
    g_string_append(out, "</style>\n</head>\n<body>\n");
    write_header(out, &run);
    g_string_append(out, "<main>\n<section id=\"summary\">\n<h2>Summary</h2>\n");
    write_expectations(out, db, run.run_id);
    write_metrics(out, db, run.run_id);
    write_anomalies(out, db, run.run_id);
    g_string_append(out, "</section>\n");
    write_logs(out, json, step_count);
    write_timeline(out, db, run.run_id);
    write_plots(out, db, run.run_id);
    write_scenario(out, &run);
    g_string_append(out, "</main>\n<pre id=\"selftest\" hidden></pre>\n<script>\n");
    g_string_append(out, js);
    g_string_append(out, "</script>\n</body>\n</html>\n");
    GError *write_error = NULL;
    bool ok = g_file_set_contents(output, out->str, (gssize)out->len, &write_error);
    g_string_free(out, TRUE);
    report_run_clear(&run);
    if (!ok) {
        g_set_error(error, REPORT_ERROR, REPORT_ERROR_HOST, "%s", write_error->message);
        g_error_free(write_error);
        return 3;
    }
    return 0;
}

/* ---- ksim report ------------------------------------------------------------------- */

int ks_report_main(int argc, char **argv)
{
    char *run_text = NULL;
    char *output = NULL;
    GOptionEntry entries[] = {
        { "run", 0, 0, G_OPTION_ARG_STRING, &run_text, "Run id (default: the latest run)", "ID" },
        { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "The page to write", "FILE.html" },
        { NULL, 0, 0, 0, NULL, NULL, NULL },
    };
    GOptionContext *context =
        g_option_context_new("DB - a self-contained page to step through a run");
    g_option_context_add_main_entries(context, entries, NULL);
    g_option_context_set_description(
        context,
        "Writes one HTML file (no network, no other files): the scenario, the summary and\n"
        "each expectation's verdict, every replica's log drawn at each step that matters\n"
        "(elections, ISR changes, truncations, recoveries, faults; offsets coloured by\n"
        "leader epoch, HW and LEO marked, acked, lost, duplicated and truncated records\n"
        "highlighted), stepped with Previous/Next and linked to the narrated timeline, and\n"
        "the run's plots (gnuplot SVG). Open it in any browser. `ksim run --report FILE.html`\n"
        "writes the same page for the run it makes.\n"
        "\n"
        "Exit 0: written; 2: bad input (not a ksim database, no such run, a bad -o);\n"
        "3: the file could not be written.\n"
        "\n"
        "Examples:\n"
        "  ksim report ksim.db -o report.html\n"
        "  ksim report ksim.db --run 3 -o kip101.html\n");
    int code = 2;
    struct ks_recorder *recorder = NULL;
    GError *error = NULL;
    if (!g_option_context_parse(context, &argc, &argv, &error)) {
        fprintf(stderr, "ksim report: %s (see --help)\n", error->message);
        g_clear_error(&error);
        goto out;
    }
    if (argc != 2 || output == NULL) {
        fprintf(stderr, "ksim report: expected one DB file and -o FILE.html (see --help)\n");
        goto out;
    }
    guint64 run_id = 0;
    if (run_text != NULL &&
        !g_ascii_string_to_unsigned(run_text, 10, 1, G_MAXINT64, &run_id, NULL)) {
        fprintf(stderr, "ksim report: --run %s: not a run id\n", run_text);
        goto out;
    }
    if (!ks_report_check_output(output, &error)) {
        fprintf(stderr, "ksim report: %s\n", error->message);
        g_clear_error(&error);
        goto out;
    }
    recorder = ks_recorder_open_readonly(argv[1], &error);
    if (recorder == NULL || !ks_plot_has_tables(ks_recorder_db(recorder), argv[1], &error)) {
        fprintf(stderr, "ksim report: %s\n", error->message);
        g_clear_error(&error);
        goto out;
    }
    code = ks_report_write(ks_recorder_db(recorder), (int64_t)run_id, output, &error);
    if (code != 0) {
        fprintf(stderr, "ksim report: %s\n", error->message);
        g_clear_error(&error);
    } else {
        fprintf(stderr, "ksim report: wrote %s\n", output);
    }
out:
    ks_recorder_close(recorder);
    g_option_context_free(context);
    g_free(run_text);
    g_free(output);
    return code;
}
