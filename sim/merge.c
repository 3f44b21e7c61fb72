/*
** sim/merge.c: `ksim merge OUT.db IN.db...` and the run copier that sweep and
** explore use to gather their workers' databases.
**
** Method. The output is built table by table with ATTACH: one input at a
** time is attached as "source", a temporary table maps its old run ids to the
** new ones, and one INSERT ... SELECT per table copies every row of the runs
** being moved (ordered by new run id, then by the source rowid, so the rows of
** one run keep their order). Attaching one input at a time keeps clear of
** SQLite's limit on attached databases whatever the number of shards.
**
** Determinism (R1): the new ids follow the order of the runs list the caller
** gives. `ksim merge` sorts that list by the content of the runs rows, never by
** the order of the files on the command line, so shards merged in any order
** give the same database. Inputs are processed in the order in which they
** first appear in that list, again a function of the content only.
**
** Schema. The recorder (sim/recorder.c) owns the schema; merge copies what it
** finds: a table missing in the output is created with the input's own
** CREATE statement (and its indexes), and rows are copied by the columns both
** sides have. Tables without a run_id column (none in SPEC 4, but allowed) are
** copied once: rows already present are not repeated.
*/
#include "merge.h"

#include "commands.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

G_DEFINE_QUARK(ks-merge-error-quark, ks_merge_error)

/* ---- small SQLite helpers ---------------------------------------------------- */

static bool exec_sql(sqlite3 *db, const char *sql, GError **error)
{
    char *message = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &message) != SQLITE_OK) {
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_OUTPUT, "%s (in: %.200s)",
                    message ? message : sqlite3_errmsg(db), sql);
        sqlite3_free(message);
        return false;
    }
    return true;
}

static char *quote_ident(const char *name)
{
    GString *text = g_string_new("\"");
    for (const char *c = name; *c; c++) {
        if (*c == '"') {
            g_string_append_c(text, '"');
        }
        g_string_append_c(text, *c);
    }
    g_string_append_c(text, '"');
    return g_string_free(text, FALSE);
}

/* Column names of schema.table in declaration order; *has_run_id tells if
 * one is run_id; *rowid_alias receives the name of a lone INTEGER PRIMARY KEY
 * column other than run_id (owned, g_free) or NULL. */
static GPtrArray *table_columns(sqlite3 *db, const char *schema, const char *table,
                                bool *has_run_id, char **rowid_alias)
{
    GPtrArray *columns = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *quoted = quote_ident(table);
    g_autofree char *sql = g_strdup_printf("PRAGMA %s.table_info(%s)", schema, quoted);
    sqlite3_stmt *stmt = NULL;
    int pk_count = 0;
    char *pk_name = NULL;
    bool pk_integer = false;
    *has_run_id = false;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK) {
        while (sqlite3_step(stmt) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(stmt, 1);
            const char *type = (const char *)sqlite3_column_text(stmt, 2);
            if (name == NULL) {
                continue;
            }
            g_ptr_array_add(columns, g_strdup(name));
            if (strcmp(name, "run_id") == 0) {
                *has_run_id = true;
            }
            if (sqlite3_column_int(stmt, 5) > 0) {
                pk_count++;
                g_free(pk_name);
                pk_name = g_strdup(name);
                pk_integer = type != NULL && g_ascii_strcasecmp(type, "INTEGER") == 0;
            }
        }
    }
    sqlite3_finalize(stmt);
    if (rowid_alias != NULL) {
        *rowid_alias = NULL;
        if (pk_count == 1 && pk_integer && strcmp(pk_name, "run_id") != 0) {
            *rowid_alias = g_steal_pointer(&pk_name);
        }
    }
    g_free(pk_name);
    return columns;
}

static bool ptr_array_has(GPtrArray *array, const char *text)
{
    for (guint i = 0; i < array->len; i++) {
        if (strcmp(g_ptr_array_index(array, i), text) == 0) {
            return true;
        }
    }
    return false;
}

/* User tables of `schema` (sqlite_ internals skipped), sorted by name, each
 * with its CREATE statement: pairs name, sql. */
static GPtrArray *schema_tables(sqlite3 *db, const char *schema)
{
    GPtrArray *tables = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *sql = g_strdup_printf(
        "SELECT name, sql FROM %s.sqlite_master WHERE type = 'table' "
        "AND name NOT LIKE 'sqlite_%%' AND sql IS NOT NULL ORDER BY name",
        schema);
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK) {
        while (sqlite3_step(stmt) == SQLITE_ROW) {
            g_ptr_array_add(tables, g_strdup((const char *)sqlite3_column_text(stmt, 0)));
            g_ptr_array_add(tables, g_strdup((const char *)sqlite3_column_text(stmt, 1)));
        }
    }
    sqlite3_finalize(stmt);
    return tables;
}

static bool table_exists(sqlite3 *db, const char *schema, const char *table)
{
    g_autofree char *sql = g_strdup_printf(
        "SELECT 1 FROM %s.sqlite_master WHERE type = 'table' AND name = ?1", schema);
    sqlite3_stmt *stmt = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK) {
        sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
        found = sqlite3_step(stmt) == SQLITE_ROW;
    }
    sqlite3_finalize(stmt);
    return found;
}

/* Creates `table` in main from the source's CREATE statement, then the
 * source's indexes on it. */
static bool create_like_source(sqlite3 *out, const char *table, const char *create_sql,
                               GError **error)
{
    if (!exec_sql(out, create_sql, error)) {
        return false;
    }
    sqlite3_stmt *stmt = NULL;
    const char *sql = "SELECT sql FROM source.sqlite_master WHERE type = 'index' "
                      "AND tbl_name = ?1 AND sql IS NOT NULL ORDER BY name";
    if (sqlite3_prepare_v2(out, sql, -1, &stmt, NULL) != SQLITE_OK) {
        return exec_sql(out, sql, error);
    }
    sqlite3_bind_text(stmt, 1, table, -1, SQLITE_TRANSIENT);
    GPtrArray *indexes = g_ptr_array_new_with_free_func(g_free);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        g_ptr_array_add(indexes, g_strdup((const char *)sqlite3_column_text(stmt, 0)));
    }
    sqlite3_finalize(stmt);
    bool ok = true;
    for (guint i = 0; ok && i < indexes->len; i++) {
        ok = exec_sql(out, g_ptr_array_index(indexes, i), error);
    }
    g_ptr_array_unref(indexes);
    return ok;
}

/* Copies one table of the attached source into main: rows of the runs in
 * temp.ks_merge_map (with new ids), or, without a run_id column, the rows
 * main does not have yet. */
static bool copy_table(sqlite3 *out, const char *table, const char *create_sql, GError **error)
{
    if (!table_exists(out, "main", table) && !create_like_source(out, table, create_sql, error)) {
        return false;
    }
    bool out_has_run_id = false;
    bool source_has_run_id = false;
    g_autofree char *rowid_alias = NULL;
    GPtrArray *out_columns = table_columns(out, "main", table, &out_has_run_id, &rowid_alias);
    GPtrArray *source_columns = table_columns(out, "source", table, &source_has_run_id, NULL);
    GString *names = g_string_new("");
    GString *values = g_string_new("");
    for (guint i = 0; i < out_columns->len; i++) {
        const char *column = g_ptr_array_index(out_columns, i);
        if (!ptr_array_has(source_columns, column) ||
            (rowid_alias != NULL && strcmp(column, rowid_alias) == 0)) {
            continue;
        }
        g_autofree char *quoted = quote_ident(column);
        bool mapped = source_has_run_id && out_has_run_id && strcmp(column, "run_id") == 0;
        g_string_append_printf(names, "%s%s", names->len ? ", " : "", quoted);
        g_string_append_printf(values, "%s%s%s", values->len ? ", " : "",
                               mapped ? "m.new_id" : "s.", mapped ? "" : quoted);
    }
    g_autofree char *quoted_table = quote_ident(table);
    char *sql;
    if (names->len == 0) {
        sql = NULL;
    } else if (source_has_run_id && out_has_run_id) {
        sql = g_strdup_printf("INSERT INTO main.%s (%s) SELECT %s FROM source.%s s "
                              "JOIN temp.ks_merge_map m ON m.old_id = s.run_id "
                              "ORDER BY m.new_id, s.rowid",
                              quoted_table, names->str, values->str, quoted_table);
    } else {
        g_autofree char *plain = g_strdup(values->str);
        /* No run ids: add only rows main does not have yet. */
        sql = g_strdup_printf("INSERT INTO main.%s (%s) SELECT %s FROM source.%s s "
                              "EXCEPT SELECT %s FROM main.%s",
                              quoted_table, names->str, plain, quoted_table, names->str,
                              quoted_table);
    }
    bool ok = sql == NULL || exec_sql(out, sql, error);
    g_free(sql);
    g_string_free(names, TRUE);
    g_string_free(values, TRUE);
    g_ptr_array_unref(out_columns);
    g_ptr_array_unref(source_columns);
    return ok;
}

static int64_t max_run_id(sqlite3 *db)
{
    int64_t value = 0;
    if (table_exists(db, "main", "runs")) {
        sqlite3_stmt *stmt = NULL;
        if (sqlite3_prepare_v2(db, "SELECT COALESCE(MAX(run_id), 0) FROM main.runs", -1, &stmt,
                               NULL) == SQLITE_OK &&
            sqlite3_step(stmt) == SQLITE_ROW) {
            value = sqlite3_column_int64(stmt, 0);
        }
        sqlite3_finalize(stmt);
    }
    return value;
}

/* One input into `out`, in one transaction: the runs old_ids[i] become
 * base + 1 + i, where base is out's largest run id (read inside the
 * transaction). SQLite cannot attach or detach inside a transaction, so the
 * attach brackets it. */
static bool copy_input(sqlite3 *out, const char *path, const int64_t *old_ids, size_t id_count,
                       int64_t *new_ids, GError **error)
{
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(out, "ATTACH DATABASE ?1 AS source", -1, &stmt, NULL) != SQLITE_OK) {
        return exec_sql(out, "ATTACH", error);
    }
    sqlite3_bind_text(stmt, 1, path, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(stmt);
    sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE) {
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_INPUT, "%s: cannot attach: %s", path,
                    sqlite3_errmsg(out));
        return false;
    }
    bool ok = exec_sql(out, "BEGIN IMMEDIATE", error);
    bool began = ok;
    int64_t base_id = ok ? max_run_id(out) : 0;
    ok = ok && exec_sql(out, "CREATE TEMP TABLE IF NOT EXISTS ks_merge_map "
                             "(old_id INTEGER PRIMARY KEY, new_id INTEGER NOT NULL);"
                             "DELETE FROM temp.ks_merge_map", error);
    if (ok && sqlite3_prepare_v2(out, "INSERT INTO temp.ks_merge_map (old_id, new_id) "
                                      "VALUES (?1, ?2)", -1, &stmt, NULL) == SQLITE_OK) {
        for (size_t i = 0; i < id_count; i++) {
            sqlite3_bind_int64(stmt, 1, old_ids[i]);
            sqlite3_bind_int64(stmt, 2, base_id + 1 + (int64_t)i);
            if (sqlite3_step(stmt) != SQLITE_DONE) {
                g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_INPUT,
                            "%s: run %" G_GINT64_FORMAT " given twice", path, old_ids[i]);
                ok = false;
                break;
            }
            sqlite3_reset(stmt);
        }
        sqlite3_finalize(stmt);
    }
    GPtrArray *tables = ok ? schema_tables(out, "source") : g_ptr_array_new();
    for (guint i = 0; ok && i + 1 < tables->len; i += 2) {
        ok = copy_table(out, g_ptr_array_index(tables, i), g_ptr_array_index(tables, i + 1),
                        error);
    }
    g_ptr_array_unref(tables);
    ok = ok && exec_sql(out, "DELETE FROM temp.ks_merge_map", error);
    ok = ok && exec_sql(out, "COMMIT", error);
    if (!ok && began) {
        sqlite3_exec(out, "ROLLBACK", NULL, NULL, NULL);
    }
    sqlite3_exec(out, "DETACH DATABASE source", NULL, NULL, NULL);
    if (ok && new_ids != NULL) {
        for (size_t i = 0; i < id_count; i++) {
            new_ids[i] = base_id + 1 + (int64_t)i;
        }
    }
    return ok;
}

/* The run ids of `runs` that come from input_index, in list order. */
static GArray *ids_of_input(const struct ks_merge_run *runs, size_t run_count,
                            uint32_t input_index)
{
    GArray *ids = g_array_new(FALSE, FALSE, sizeof(int64_t));
    for (size_t i = 0; i < run_count; i++) {
        if (runs[i].input_index == input_index) {
            g_array_append_val(ids, runs[i].run_id);
        }
    }
    return ids;
}

/* Copies every listed run into a fresh staging database, numbered 1..n in
 * list order (R1: inputs in the order of their first run in the list; with
 * every_input, the others follow in the given order so that their tables
 * exist even without runs). Each input is its own transaction there; the
 * caller then moves the staging database into the real output at once. */
static bool stage_runs(const char *staging_path, const char *const *inputs, size_t input_count,
                       const struct ks_merge_run *runs, size_t run_count, bool every_input,
                       GError **error)
{
    sqlite3 *staging = NULL;
    if (sqlite3_open_v2(staging_path, &staging, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                        NULL) != SQLITE_OK) {
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_OUTPUT, "%s: cannot create: %s",
                    staging_path, sqlite3_errmsg(staging));
        sqlite3_close(staging);
        return false;
    }
    sqlite3_exec(staging, "PRAGMA synchronous = OFF; PRAGMA journal_mode = OFF", NULL, NULL,
                 NULL);
    g_autofree bool *done = g_new0(bool, input_count ? input_count : 1);
    /* Ids are given per input in list order, but runs of several inputs may
     * interleave: the staging ids follow the input order, and a map puts
     * them back in list order below. */
    g_autofree int64_t *staged_ids = g_new0(int64_t, run_count ? run_count : 1);
    bool ok = true;
    for (size_t k = 0; ok && k < run_count + (every_input ? input_count : 0); k++) {
        uint32_t input_index = k < run_count ? runs[k].input_index : (uint32_t)(k - run_count);
        if (input_index >= input_count) {
            g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_INPUT, "no input %u", input_index);
            ok = false;
            break;
        }
        if (done[input_index]) {
            continue;
        }
        done[input_index] = true;
        GArray *ids = ids_of_input(runs, run_count, input_index);
        g_autofree int64_t *new_ids = g_new0(int64_t, ids->len ? ids->len : 1);
        ok = copy_input(staging, inputs[input_index], (int64_t *)(void *)ids->data, ids->len,
                        new_ids, error);
        for (size_t i = 0, j = 0; ok && i < run_count; i++) {
            if (runs[i].input_index == input_index) {
                staged_ids[i] = new_ids[j++];
            }
        }
        g_array_unref(ids);
    }
    /* Renumber the staging runs into list order: a second pass through the
     * same copier, from the staging file into itself is not possible, so the
     * list-order ids are kept in a column the final copy reads. */
    if (ok) {
        ok = exec_sql(staging, "CREATE TABLE IF NOT EXISTS ks_merge_order "
                               "(staged_id INTEGER PRIMARY KEY, position INTEGER NOT NULL)",
                      error);
        sqlite3_stmt *stmt = NULL;
        if (ok && sqlite3_prepare_v2(staging, "INSERT INTO ks_merge_order VALUES (?1, ?2)", -1,
                                     &stmt, NULL) == SQLITE_OK) {
            for (size_t i = 0; i < run_count; i++) {
                sqlite3_bind_int64(stmt, 1, staged_ids[i]);
                sqlite3_bind_int64(stmt, 2, (int64_t)i);
                sqlite3_step(stmt);
                sqlite3_reset(stmt);
            }
            sqlite3_finalize(stmt);
        }
    }
    sqlite3_close(staging);
    return ok;
}

/* The staging runs in list order. */
static GArray *staged_order(const char *staging_path, GError **error)
{
    sqlite3 *staging = NULL;
    GArray *ids = g_array_new(FALSE, FALSE, sizeof(int64_t));
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_open_v2(staging_path, &staging, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(staging, "SELECT staged_id FROM ks_merge_order ORDER BY position",
                           -1, &stmt, NULL) != SQLITE_OK) {
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_OUTPUT, "%s: %s", staging_path,
                    sqlite3_errmsg(staging));
        sqlite3_close(staging);
        g_array_unref(ids);
        return NULL;
    }
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(stmt, 0);
        g_array_append_val(ids, id);
    }
    sqlite3_finalize(stmt);
    sqlite3_close(staging);
    return ids;
}

static bool merge_append(sqlite3 *out, const char *const *inputs, size_t input_count,
                         const struct ks_merge_run *runs, size_t run_count, int64_t *new_ids,
                         bool every_input, GError **error)
{
    g_autofree char *staging_path = NULL;
    int fd = g_file_open_tmp("ksim-merge-XXXXXX.db", &staging_path, NULL);
    if (fd < 0) {
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_OUTPUT,
                    "cannot create a temporary file");
        return false;
    }
    close(fd);
    bool ok = stage_runs(staging_path, inputs, input_count, runs, run_count, every_input, error);
    GArray *order = ok ? staged_order(staging_path, error) : NULL;
    ok = order != NULL;
    /* The staging tables exclude ks_merge_order from the copy: drop it
     * after reading it. */
    if (ok) {
        sqlite3 *staging = NULL;
        sqlite3_open(staging_path, &staging);
        ok = exec_sql(staging, "DROP TABLE ks_merge_order", error);
        sqlite3_close(staging);
    }
    if (ok) {
        ok = copy_input(out, staging_path, (int64_t *)(void *)order->data, order->len, new_ids,
                        error);
    }
    if (order != NULL) {
        g_array_unref(order);
    }
    g_unlink(staging_path);
    return ok;
}

bool ks_merge_append(sqlite3 *out, const char *const *inputs, size_t input_count,
                     const struct ks_merge_run *runs, size_t run_count, int64_t *new_ids,
                     GError **error)
{
    return merge_append(out, inputs, input_count, runs, run_count, new_ids, false, error);
}

/* ---- ksim databases ------------------------------------------------------------ */

bool ks_merge_is_ksim_db(sqlite3 *db)
{
    static const char *const required[] = {"run_id", "scenario", "seed", "params"};
    bool has_run_id = false;
    if (!table_exists(db, "main", "runs")) {
        return false;
    }
    GPtrArray *columns = table_columns(db, "main", "runs", &has_run_id, NULL);
    bool ok = true;
    for (size_t i = 0; i < G_N_ELEMENTS(required); i++) {
        ok = ok && ptr_array_has(columns, required[i]);
    }
    g_ptr_array_unref(columns);
    return ok;
}

sqlite3 *ks_merge_open_ksim_db(const char *path, GError **error)
{
    sqlite3 *db = NULL;
    if (access(path, R_OK) != 0) {
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_INPUT, "%s: %s", path,
                    g_strerror(errno));
        return NULL;
    }
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_INPUT, "%s: cannot open: %s", path,
                    sqlite3_errmsg(db));
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 5000);
    /* A file that is not SQLite fails at the first read, not at open. */
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &stmt, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(stmt) == SQLITE_ROW ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(stmt);
    if (rc != SQLITE_OK) {
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_INPUT,
                    "%s: not an SQLite database: %s", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return NULL;
    }
    if (!ks_merge_is_ksim_db(db)) {
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_INPUT,
                    "%s: not a ksim database (no runs table with run_id, scenario, seed, params)",
                    path);
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

/* ---- merge by content ----------------------------------------------------------- */

/* A runs row as the sort sees it: the ordering columns as text or numbers. */
struct run_key {
    struct ks_merge_run run;
    char *scenario;
    char *params;
    int64_t seed;
    char *rest; /* every other column but run_id, as text, joined with \x1f */
};

static int compare_run_key(gconstpointer a, gconstpointer b)
{
    const struct run_key *x = a;
    const struct run_key *y = b;
    int c = g_strcmp0(x->scenario, y->scenario);
    if (c == 0) {
        c = g_strcmp0(x->params, y->params);
    }
    if (c == 0 && x->seed != y->seed) {
        c = x->seed < y->seed ? -1 : 1;
    }
    if (c == 0) {
        c = g_strcmp0(x->rest, y->rest);
    }
    return c;
}

static void clear_run_key(gpointer data)
{
    struct run_key *key = data;
    g_free(key->scenario);
    g_free(key->params);
    g_free(key->rest);
}

/* Reads the runs rows of one input into keys. */
static bool read_run_keys(const char *path, uint32_t input_index, GArray *keys, GError **error)
{
    sqlite3 *db = ks_merge_open_ksim_db(path, error);
    if (db == NULL) {
        return false;
    }
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, "SELECT * FROM runs ORDER BY run_id", -1, &stmt, NULL) !=
        SQLITE_OK) {
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_INPUT, "%s: %s", path,
                    sqlite3_errmsg(db));
        sqlite3_close(db);
        return false;
    }
    int column_count = sqlite3_column_count(stmt);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        struct run_key key = {.run = {.input_index = input_index}};
        GString *rest = g_string_new("");
        for (int i = 0; i < column_count; i++) {
            const char *name = sqlite3_column_name(stmt, i);
            const char *text = (const char *)sqlite3_column_text(stmt, i);
            if (strcmp(name, "run_id") == 0) {
                key.run.run_id = sqlite3_column_int64(stmt, i);
            } else if (strcmp(name, "scenario") == 0) {
                key.scenario = g_strdup(text);
            } else if (strcmp(name, "params") == 0) {
                key.params = g_strdup(text);
            } else if (strcmp(name, "seed") == 0) {
                key.seed = sqlite3_column_int64(stmt, i);
            } else {
                g_string_append_printf(rest, "%s=%s\x1f", name, text ? text : "");
            }
        }
        key.rest = g_string_free(rest, FALSE);
        g_array_append_val(keys, key);
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return true;
}

bool ks_merge_files(const char *out_path, const char *const *inputs, size_t input_count,
                    GError **error)
{
    if (g_file_test(out_path, G_FILE_TEST_EXISTS)) {
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_OUTPUT, "%s: exists already",
                    out_path);
        return false;
    }
    GArray *keys = g_array_new(FALSE, TRUE, sizeof(struct run_key));
    g_array_set_clear_func(keys, clear_run_key);
    bool ok = true;
    for (size_t i = 0; ok && i < input_count; i++) {
        ok = read_run_keys(inputs[i], (uint32_t)i, keys, error);
    }
    if (!ok) {
        g_array_unref(keys);
        return false;
    }
    g_array_sort(keys, compare_run_key);
    g_autofree struct ks_merge_run *runs = g_new(struct ks_merge_run, keys->len + 1);
    for (guint i = 0; i < keys->len; i++) {
        runs[i] = g_array_index(keys, struct run_key, i).run;
    }
    sqlite3 *out = NULL;
    if (sqlite3_open_v2(out_path, &out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_OUTPUT, "%s: cannot create: %s",
                    out_path, sqlite3_errmsg(out));
        sqlite3_close(out);
        g_array_unref(keys);
        return false;
    }
    ok = merge_append(out, inputs, input_count, runs, keys->len, NULL, true, error);
    sqlite3_close(out);
    g_array_unref(keys);
    if (!ok) {
        unlink(out_path);
    }
    return ok;
}

/* ---- ksim merge ------------------------------------------------------------------- */

int ks_merge_main(int argc, char **argv)
{
    if (argc < 3 || (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))) {
        fprintf(stderr, "usage: ksim merge OUT.db IN.db...\n"
                        "  combines ksim databases (e.g. from sweep --shard) into a new OUT.db;\n"
                        "  run ids are renumbered by (scenario, params, seed).\n");
        return 2;
    }
    const char *out_path = argv[1];
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], out_path) == 0) {
            fprintf(stderr, "ksim merge: %s: the output is also an input\n", out_path);
            return 2;
        }
    }
    /* Write next to the output, then rename, so that a failed merge leaves
     * nothing behind. */
    g_autofree char *temp_path = g_strdup_printf("%s.merge-%d", out_path, (int)getpid());
    if (g_file_test(out_path, G_FILE_TEST_EXISTS)) {
        fprintf(stderr, "ksim merge: %s: exists already (merge writes a new database)\n",
                out_path);
        return 2;
    }
    GError *error = NULL;
    unlink(temp_path);
    if (!ks_merge_files(temp_path, (const char *const *)argv + 2, (size_t)argc - 2, &error)) {
        fprintf(stderr, "ksim merge: %s\n", error->message);
        int code = error->code == KS_MERGE_ERROR_INPUT ? 2 : 3;
        g_error_free(error);
        return code;
    }
    if (rename(temp_path, out_path) != 0) {
        fprintf(stderr, "ksim merge: %s: %s\n", out_path, g_strerror(errno));
        unlink(temp_path);
        return 3;
    }
    fprintf(stderr, "ksim merge: wrote %s from %d databases\n", out_path, argc - 2);
    return 0;
}
