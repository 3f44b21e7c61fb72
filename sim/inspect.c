/*
** sim/inspect.c: `ksim list DB` and `ksim compare DB RUN_A RUN_B` (SPEC
** section 1): what a database holds, and how two of its runs differ.
**
**   list     one line per run, in run_id order: id, scenario, seed, verdict,
**            the headline metrics (acked_lost, duplicates, consumed_lost,
**            unavailable_ms, produce_unavailable_ms), and the sweep setting
**            when the run belongs to a sweep.
**   compare  the settings that differ (runs.params flattened to the names
**            `--set` takes: `producer.p1.acks`, `topic.orders.min.insync.replicas`,
**            plus the seed), every summary metric side by side with the
**            change, and the anomaly counts per kind (records, from
**            anomalies.record_count).
**
** Both only read (ks_recorder_open_readonly: a file that is not a ksim
** database is refused untouched). Exit codes: 0 printed; 2 bad input (no such
** database or run, wrong arguments).
*/
#include "checker.h"
#include "recorder.h"
#include "scenario.h"

#include <glib.h>
#include <inttypes.h>
#include "commands.h"

#include <json-glib/json-glib.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

/* ---- small helpers ------------------------------------------------------------ */

static bool table_exists(sqlite3 *db, const char *table)
{
    sqlite3_stmt *stmt = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", -1,
                           &stmt, NULL) == SQLITE_OK) {
        sqlite3_bind_text(stmt, 1, table, -1, SQLITE_STATIC);
        found = sqlite3_step(stmt) == SQLITE_ROW;
    }
    sqlite3_finalize(stmt);
    return found;
}

static char *column_text(sqlite3_stmt *stmt, int column)
{
    const unsigned char *text = sqlite3_column_text(stmt, column);
    return g_strdup(text != NULL ? (const char *)text : "-");
}

/* The summary value of metric for run_id as text, "-" if absent. Owned. */
static char *summary_text(sqlite3 *db, int64_t run_id, const char *metric)
{
    sqlite3_stmt *stmt = NULL;
    char *text = NULL;
    if (sqlite3_prepare_v2(db, "SELECT value FROM summary WHERE run_id = ? AND metric = ?", -1,
                           &stmt, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(stmt, 1, run_id);
        sqlite3_bind_text(stmt, 2, metric, -1, SQLITE_STATIC);
        if (sqlite3_step(stmt) == SQLITE_ROW) {
            text = column_text(stmt, 0);
        }
    }
    sqlite3_finalize(stmt);
    return text != NULL ? text : g_strdup("-");
}

static struct ks_recorder *open_db(const char *command, const char *path)
{
    GError *error = NULL;
    struct ks_recorder *recorder = ks_recorder_open_readonly(path, &error);
    if (recorder == NULL) {
        fprintf(stderr, "ksim %s: %s\n", command, error->message);
        g_error_free(error);
    }
    return recorder;
}

static bool parse_run_id(const char *text, int64_t *out)
{
    guint64 value = 0;
    if (!g_ascii_string_to_unsigned(text, 10, 1, G_MAXINT64, &value, NULL)) {
        return false;
    }
    *out = (int64_t)value;
    return true;
}

/* ---- list ---------------------------------------------------------------------- */

static const char *const list_metrics[] = {
    "acked_lost", "duplicates", "consumed_lost", "unavailable_ms", "produce_unavailable_ms",
};

static int list_runs(sqlite3 *db, const char *path)
{
    bool sweeps = table_exists(db, "sweep_runs");
    const char *sql = sweeps ? "SELECT r.run_id, r.scenario, r.seed, r.verdict, w.setting "
                               "FROM runs r LEFT JOIN sweep_runs w ON w.run_id = r.run_id "
                               "ORDER BY r.run_id"
                             : "SELECT run_id, scenario, seed, verdict, NULL FROM runs "
                               "ORDER BY run_id";
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK) {
        fprintf(stderr, "%s:1: %s\n", path, sqlite3_errmsg(db));
        return 2;
    }
    printf("%-5s %-28s %6s %-7s", "run", "scenario", "seed", "verdict");
    for (size_t m = 0; m < G_N_ELEMENTS(list_metrics); m++) {
        printf(" %*s", (int)strlen(list_metrics[m]), list_metrics[m]);
    }
    printf("%s\n", sweeps ? "  setting" : "");
    int64_t count = 0;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        int64_t run_id = sqlite3_column_int64(stmt, 0);
        g_autofree char *scenario = column_text(stmt, 1);
        g_autofree char *verdict = column_text(stmt, 3);
        printf("%-5" PRId64 " %-28s %6" PRId64 " %-7s", run_id, scenario,
               (int64_t)sqlite3_column_int64(stmt, 2), verdict);
        for (size_t m = 0; m < G_N_ELEMENTS(list_metrics); m++) {
            g_autofree char *value = summary_text(db, run_id, list_metrics[m]);
            printf(" %*s", (int)strlen(list_metrics[m]), value);
        }
        const unsigned char *setting = sqlite3_column_text(stmt, 4);
        if (sweeps) {
            printf("  %s", setting != NULL ? (const char *)setting : "-");
        }
        putchar('\n');
        count++;
    }
    sqlite3_finalize(stmt);
    if (count == 0) {
        printf("(no runs)\n");
    }
    return 0;
}

int ks_list_main(int argc, char **argv)
{
    GOptionContext *context = g_option_context_new("DB - the runs in a database, one line each");
    g_option_context_set_description(
        context,
        "Prints one line per run: its id (for --run and compare), scenario, seed, verdict,\n"
        "acked_lost, duplicates, consumed_lost, unavailable_ms and produce_unavailable_ms,\n"
        "and the sweep setting when the run belongs to a sweep (\"-\": no such metric).\n"
        "\n"
        "Examples:\n"
        "  ksim list ksim.db\n"
        "  ksim compare ksim.db 1 2\n");
    GError *error = NULL;
    int code = 2;
    struct ks_recorder *recorder = NULL;
    if (!g_option_context_parse(context, &argc, &argv, &error)) {
        fprintf(stderr, "ksim list: %s (see --help)\n", error->message);
        g_error_free(error);
        goto out;
    }
    if (argc != 2) {
        fprintf(stderr, "ksim list: expected one DB file (see --help)\n");
        goto out;
    }
    recorder = open_db("list", argv[1]);
    if (recorder != NULL) {
        code = list_runs(ks_recorder_db(recorder), argv[1]);
    }
out:
    ks_recorder_close(recorder);
    g_option_context_free(context);
    return code;
}

/* ---- compare: settings ------------------------------------------------------------ */

struct setting {
    char *key;   /* "producer.p1.acks" */
    char *value; /* "1" */
};

static void setting_clear(gpointer data)
{
    struct setting *s = data;
    g_free(s->key);
    g_free(s->value);
}

static char *scalar_text(JsonNode *node)
{
    if (JSON_NODE_HOLDS_NULL(node)) {
        return g_strdup("null");
    }
    if (JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_STRING) {
        return g_strdup(json_node_get_string(node));
    }
    return json_to_string(node, FALSE);
}

/* Flattens node under prefix into settings: objects by member name, arrays
 * of named objects (topics, producers, ...) by their name, other arrays as
 * their JSON text. */
static void flatten(JsonNode *node, const char *prefix, GArray *settings)
{
    if (JSON_NODE_HOLDS_OBJECT(node)) {
        JsonObject *object = json_node_get_object(node);
        GList *members = json_object_get_members(object); /* in document order */
        for (GList *m = members; m != NULL; m = m->next) {
            const char *name = m->data;
            g_autofree char *key =
                prefix[0] != '\0' ? g_strdup_printf("%s.%s", prefix, name) : g_strdup(name);
            flatten(json_object_get_member(object, name), key, settings);
        }
        g_list_free(members);
        return;
    }
    if (JSON_NODE_HOLDS_ARRAY(node)) {
        JsonArray *array = json_node_get_array(node);
        guint length = json_array_get_length(array);
        bool named = length > 0;
        for (guint i = 0; i < length && named; i++) {
            JsonNode *item = json_array_get_element(array, i);
            named = JSON_NODE_HOLDS_OBJECT(item) &&
                    json_object_has_member(json_node_get_object(item), "name");
        }
        if (named) {
            for (guint i = 0; i < length; i++) {
                JsonObject *item = json_array_get_object_element(array, i);
                const char *name = json_object_get_string_member(item, "name");
                GList *members = json_object_get_members(item);
                for (GList *m = members; m != NULL; m = m->next) {
                    if (strcmp(m->data, "name") == 0) {
                        continue;
                    }
                    g_autofree char *key = g_strdup_printf(
                        "%s.%s.%s", prefix, name != NULL ? name : "?", (const char *)m->data);
                    flatten(json_object_get_member(item, m->data), key, settings);
                }
                g_list_free(members);
            }
            return;
        }
    }
    struct setting s = { g_strdup(prefix), JSON_NODE_HOLDS_ARRAY(node) ? json_to_string(node, FALSE)
                                                                       : scalar_text(node) };
    g_array_append_val(settings, s);
}

/* runs.params as settings named as --set names them; NULL if unreadable. */
static GArray *run_settings(const char *params)
{
    static const struct {
        const char *section;
        const char *prefix;
    } sections[] = { { "scenario", "scenario" },  { "cluster", "cluster" },
                     { "topics", "topic" },       { "producers", "producer" },
                     { "consumers", "consumer" }, { "faults", "fault" },
                     { "expect", "expect" } };
    JsonParser *parser = json_parser_new();
    if (params == NULL || !json_parser_load_from_data(parser, params, -1, NULL) ||
        !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser))) {
        g_object_unref(parser);
        return NULL;
    }
    GArray *settings = g_array_new(FALSE, FALSE, sizeof(struct setting));
    g_array_set_clear_func(settings, setting_clear);
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    GList *members = json_object_get_members(root);
    for (GList *m = members; m != NULL; m = m->next) {
        const char *prefix = m->data;
        for (size_t i = 0; i < G_N_ELEMENTS(sections); i++) {
            if (strcmp(sections[i].section, m->data) == 0) {
                prefix = sections[i].prefix;
            }
        }
        flatten(json_object_get_member(root, m->data), prefix, settings);
    }
    g_list_free(members);
    g_object_unref(parser);
    return settings;
}

/* ---- compare ---------------------------------------------------------------------- */

struct run_facts {
    int64_t run_id;
    char *scenario;
    int64_t seed;
    char *verdict;
    char *params;
};

static bool load_facts(sqlite3 *db, const char *path, int64_t run_id, struct run_facts *out)
{
    sqlite3_stmt *stmt = NULL;
    memset(out, 0, sizeof *out);
    if (sqlite3_prepare_v2(db, "SELECT scenario, seed, verdict, params FROM runs WHERE run_id = ?",
                           -1, &stmt, NULL) != SQLITE_OK) {
        fprintf(stderr, "%s:1: %s\n", path, sqlite3_errmsg(db));
        return false;
    }
    sqlite3_bind_int64(stmt, 1, run_id);
    bool found = sqlite3_step(stmt) == SQLITE_ROW;
    if (found) {
        out->run_id = run_id;
        out->scenario = column_text(stmt, 0);
        out->seed = sqlite3_column_int64(stmt, 1);
        out->verdict = column_text(stmt, 2);
        const unsigned char *params = sqlite3_column_text(stmt, 3);
        out->params = params != NULL ? g_strdup((const char *)params) : NULL;
    } else {
        fprintf(stderr, "%s:1: no run with id %" PRId64 " (ksim list %s shows the runs)\n", path,
                run_id, path);
    }
    sqlite3_finalize(stmt);
    return found;
}

static void facts_clear(struct run_facts *facts)
{
    g_free(facts->scenario);
    g_free(facts->verdict);
    g_free(facts->params);
}

static const char *lookup_setting(const GArray *settings, const char *key)
{
    for (guint i = 0; settings != NULL && i < settings->len; i++) {
        const struct setting *s = &g_array_index(settings, struct setting, i);
        if (strcmp(s->key, key) == 0) {
            return s->value;
        }
    }
    return NULL;
}

/* Appends a (key, value in A, value in B) row; NULL: absent. */
static void add_row(GPtrArray *rows, const char *key, const char *a, const char *b)
{
    g_ptr_array_add(rows, g_strdup(key));
    g_ptr_array_add(rows, g_strdup(a != NULL ? a : "(absent)"));
    g_ptr_array_add(rows, g_strdup(b != NULL ? b : "(absent)"));
}

static void compare_settings(const struct run_facts *a, const struct run_facts *b)
{
    GArray *sa = run_settings(a->params);
    GArray *sb = run_settings(b->params);
    GPtrArray *rows = g_ptr_array_new_with_free_func(g_free);
    if (a->seed != b->seed) {
        char ta[32];
        char tb[32];
        g_snprintf(ta, sizeof ta, "%" PRId64, a->seed);
        g_snprintf(tb, sizeof tb, "%" PRId64, b->seed);
        add_row(rows, "seed", ta, tb);
    }
    if (strcmp(a->scenario, b->scenario) != 0) {
        add_row(rows, "scenario", a->scenario, b->scenario);
    }
    for (guint i = 0; sa != NULL && sb != NULL && i < sa->len; i++) {
        const struct setting *s = &g_array_index(sa, struct setting, i);
        const char *other = lookup_setting(sb, s->key);
        if (other == NULL || strcmp(other, s->value) != 0) {
            add_row(rows, s->key, s->value, other);
        }
    }
    for (guint i = 0; sa != NULL && sb != NULL && i < sb->len; i++) {
        const struct setting *s = &g_array_index(sb, struct setting, i);
        if (lookup_setting(sa, s->key) == NULL) {
            add_row(rows, s->key, NULL, s->value);
        }
    }
    int key_width = (int)strlen("setting");
    int a_width = (int)strlen("run A");
    for (guint i = 0; i < rows->len; i += 3) {
        key_width = MAX(key_width, (int)strlen(g_ptr_array_index(rows, i)));
        a_width = MAX(a_width, (int)strlen(g_ptr_array_index(rows, i + 1)));
    }
    printf("settings that differ:\n");
    if (sa == NULL || sb == NULL) {
        printf("  (params missing or unreadable in run %" PRId64 ")\n",
               sa == NULL ? a->run_id : b->run_id);
    }
    if (rows->len == 0 && sa != NULL && sb != NULL) {
        printf("  (none: same settings and seed)\n");
    } else if (rows->len > 0) {
        printf("  %-*s  %-*s  %s\n", key_width, "setting", a_width, "run A", "run B");
    }
    for (guint i = 0; i < rows->len; i += 3) {
        printf("  %-*s  %-*s  %s\n", key_width, (const char *)g_ptr_array_index(rows, i), a_width,
               (const char *)g_ptr_array_index(rows, i + 1),
               (const char *)g_ptr_array_index(rows, i + 2));
    }
    g_ptr_array_unref(rows);
    if (sa != NULL) {
        g_array_unref(sa);
    }
    if (sb != NULL) {
        g_array_unref(sb);
    }
}

/* "+12", "-3.5", "" (equal), "differs" (text). Owned. */
static char *change_text(const char *a, const char *b)
{
    if (strcmp(a, b) == 0) {
        return g_strdup("");
    }
    char *end_a = NULL;
    char *end_b = NULL;
    double x = g_ascii_strtod(a, &end_a);
    double y = g_ascii_strtod(b, &end_b);
    if (end_a == a || *end_a != '\0' || end_b == b || *end_b != '\0') {
        return g_strdup("differs");
    }
    double d = y - x;
    if (d == (double)(int64_t)d) {
        return g_strdup_printf("%+" PRId64, (int64_t)d);
    }
    return g_strdup_printf("%+.3f", d);
}

static void compare_metrics(sqlite3 *db, const struct run_facts *a, const struct run_facts *b)
{
    printf("\nmetrics:\n  %-24s  %-20s  %-20s  %s\n", "metric", "run A", "run B", "change");
    size_t count = 0;
    const char *const *names = ks_scenario_metric_names(&count);
    GPtrArray *all = g_ptr_array_new_with_free_func(g_free);
    for (size_t i = 0; i < count; i++) {
        g_ptr_array_add(all, g_strdup(names[i]));
    }
    /* Metrics this build does not know (another ksim's database), by name. */
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT DISTINCT metric FROM summary WHERE run_id IN (?, ?) "
                           "ORDER BY metric",
                           -1, &stmt, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(stmt, 1, a->run_id);
        sqlite3_bind_int64(stmt, 2, b->run_id);
        while (sqlite3_step(stmt) == SQLITE_ROW) {
            const char *metric = (const char *)sqlite3_column_text(stmt, 0);
            bool known = false;
            for (guint i = 0; i < all->len && !known; i++) {
                known = strcmp(g_ptr_array_index(all, i), metric) == 0;
            }
            if (!known) {
                g_ptr_array_add(all, g_strdup(metric));
            }
        }
    }
    sqlite3_finalize(stmt);
    for (guint i = 0; i < all->len; i++) {
        const char *metric = g_ptr_array_index(all, i);
        g_autofree char *va = summary_text(db, a->run_id, metric);
        g_autofree char *vb = summary_text(db, b->run_id, metric);
        g_autofree char *change = change_text(va, vb);
        printf("  %-24s  %-20s  %-20s  %s\n", metric, va, vb, change);
    }
    g_ptr_array_unref(all);
}

static int64_t anomaly_records(sqlite3 *db, int64_t run_id, const char *kind, bool counted)
{
    sqlite3_stmt *stmt = NULL;
    int64_t value = 0;
    /* txn_hanging counts transactions, one row each, as its metric does */
    const char *sql = counted && strcmp(kind, "txn_hanging") != 0
                          ? "SELECT coalesce(sum(coalesce(record_count, 1)), 0) FROM "
                            "anomalies WHERE run_id = ? AND kind = ?"
                          : "SELECT count(*) FROM anomalies WHERE run_id = ? AND kind = ?";
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(stmt, 1, run_id);
        sqlite3_bind_text(stmt, 2, kind, -1, SQLITE_STATIC);
        if (sqlite3_step(stmt) == SQLITE_ROW) {
            value = sqlite3_column_int64(stmt, 0);
        }
    }
    sqlite3_finalize(stmt);
    return value;
}

static void compare_anomalies(sqlite3 *db, const struct run_facts *a, const struct run_facts *b)
{
    /* Databases from before anomalies.record_count have one row per record. */
    sqlite3_stmt *probe = NULL;
    bool counted = sqlite3_prepare_v2(db, "SELECT record_count FROM anomalies LIMIT 0", -1, &probe,
                                      NULL) == SQLITE_OK;
    sqlite3_finalize(probe);
    printf("\nanomalies (records; divergent: partitions):\n  %-24s  %-20s  %-20s  %s\n", "kind",
           "run A", "run B", "change");
    for (int k = 0; k < KS_ANOMALY_KIND_COUNT; k++) {
        const char *kind = ks_anomaly_kind_name((enum ks_anomaly_kind)k);
        int64_t x = anomaly_records(db, a->run_id, kind, counted);
        int64_t y = anomaly_records(db, b->run_id, kind, counted);
        if ((ks_anomaly_kind_is_txn((enum ks_anomaly_kind)k) ||
             ks_anomaly_kind_is_eos((enum ks_anomaly_kind)k)) &&
            x == 0 && y == 0) {
            continue; /* kinds of transactions and processors: listed where a run has some */
        }
        char change[32] = "";
        if (x != y) {
            g_snprintf(change, sizeof change, "%+" PRId64, y - x);
        }
        printf("  %-24s  %-20" PRId64 "  %-20" PRId64 "  %s\n", kind, x, y, change);
    }
}

int ks_compare_main(int argc, char **argv)
{
    GOptionContext *context = g_option_context_new("DB RUN_A RUN_B - how two recorded runs differ");
    g_option_context_set_description(
        context,
        "Prints the settings that differ between the two runs (named as --set names\n"
        "them, e.g. producer.p1.acks), every summary metric of both side by side with\n"
        "the change from A to B, and the anomalous records per kind. Run ids are the\n"
        "ones `ksim list DB` shows.\n"
        "\n"
        "Examples:\n"
        "  ksim run scenarios/acks1-leader-crash.ini --db ab.db\n"
        "  ksim run scenarios/acks1-leader-crash.ini --set producer.p1.acks=all --db ab.db\n"
        "  ksim compare ab.db 1 2\n");
    GError *error = NULL;
    int code = 2;
    struct ks_recorder *recorder = NULL;
    struct run_facts a = { 0 };
    struct run_facts b = { 0 };
    int64_t id_a = 0;
    int64_t id_b = 0;
    if (!g_option_context_parse(context, &argc, &argv, &error)) {
        fprintf(stderr, "ksim compare: %s (see --help)\n", error->message);
        g_error_free(error);
        goto out;
    }
    if (argc != 4) {
        fprintf(stderr, "ksim compare: expected DB RUN_A RUN_B (see --help)\n");
        goto out;
    }
    if (!parse_run_id(argv[2], &id_a) || !parse_run_id(argv[3], &id_b)) {
        fprintf(stderr, "ksim compare: %s: not a run id (1, 2, ...)\n",
                parse_run_id(argv[2], &id_a) ? argv[3] : argv[2]);
        goto out;
    }
    recorder = open_db("compare", argv[1]);
    if (recorder == NULL) {
        goto out;
    }
    sqlite3 *db = ks_recorder_db(recorder);
    if (!load_facts(db, argv[1], id_a, &a) || !load_facts(db, argv[1], id_b, &b)) {
        goto out;
    }
    printf("run A: %" PRId64 " (%s, seed %" PRId64 ", %s)\n", a.run_id, a.scenario, a.seed,
           a.verdict);
    printf("run B: %" PRId64 " (%s, seed %" PRId64 ", %s)\n\n", b.run_id, b.scenario, b.seed,
           b.verdict);
    compare_settings(&a, &b);
    compare_metrics(db, &a, &b);
    compare_anomalies(db, &a, &b);
    code = 0;
out:
    facts_clear(&a);
    facts_clear(&b);
    ks_recorder_close(recorder);
    g_option_context_free(context);
    return code;
}
