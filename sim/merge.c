/*
** sim/merge.c: `ksim merge OUT.db IN.db...` and the run copier that sweep and
** explore use to gather their workers' databases.
**
** Method. The inputs are attached to the output connection (up to
** ATTACH_COUNT_MAX at once: SQLite's default limit is 10) and one
** transaction copies run after run, in the order of the caller's list, with
** one prepared INSERT ... SELECT per (input, table) and the run's new id
** bound as a parameter; the rows of one run keep their stored order (the
** recorder's run_id indexes make each run a range lookup). With more inputs,
** they are first gathered a group at a time into a staging database, which
** is then copied in list order the same way, so that `out` still changes in
** one transaction.
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

#include "../core/base.h"

#include "commands.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

G_DEFINE_QUARK(ks - merge - error - quark, ks_merge_error)

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
    g_autofree char *sql =
        g_strdup_printf("SELECT name, sql FROM %s.sqlite_master WHERE type = 'table' "
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

/* SQLite attaches at most 10 databases by default; one is kept free. */
#define ATTACH_COUNT_MAX 9

static bool attach_as(sqlite3 *out, const char *path, const char *alias, GError **error)
{
    sqlite3_stmt *stmt = NULL;
    g_autofree char *sql = g_strdup_printf("ATTACH DATABASE ?1 AS %s", alias);
    int rc = sqlite3_prepare_v2(out, sql, -1, &stmt, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(stmt, 1, path, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(stmt) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(stmt);
    if (rc != SQLITE_OK) {
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_INPUT, "%s: cannot attach: %s", path,
                    sqlite3_errmsg(out));
        return false;
    }
    return true;
}

static void detach_as(sqlite3 *out, const char *alias)
{
    g_autofree char *sql = g_strdup_printf("DETACH DATABASE %s", alias);
    sqlite3_exec(out, sql, NULL, NULL, NULL);
}

/* Creates `table` in main from the attached database's CREATE statement,
 * then that database's indexes on it. */
static bool create_like(sqlite3 *out, const char *alias, const char *table, const char *create_sql,
                        GError **error)
{
    if (!exec_sql(out, create_sql, error)) {
        return false;
    }
    sqlite3_stmt *stmt = NULL;
    g_autofree char *sql = g_strdup_printf("SELECT sql FROM %s.sqlite_master WHERE type = "
                                           "'index' AND tbl_name = ?1 AND sql IS NOT NULL "
                                           "ORDER BY name",
                                           alias);
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

/* How one table of one attached input is copied. */
struct copier {
    sqlite3_stmt *stmt; /* ?1 new run id, ?2 old run id when per_run */
    bool per_run;
};

/* Builds the copy of alias.table into main (creating the table first if
 * main lacks it): with run ids on both sides, one run at a time, its rows in
 * their stored order; else the rows main does not have yet, at once. A
 * table with no common column gives stmt = NULL. */
static bool make_copier(sqlite3 *out, const char *alias, const char *table, const char *create_sql,
                        struct copier *copier, GError **error)
{
    copier->stmt = NULL;
    copier->per_run = false;
    if (!table_exists(out, "main", table) && !create_like(out, alias, table, create_sql, error)) {
        return false;
    }
    bool out_has_run_id = false;
    bool source_has_run_id = false;
    g_autofree char *rowid_alias = NULL;
    GPtrArray *out_columns = table_columns(out, "main", table, &out_has_run_id, &rowid_alias);
    GPtrArray *source_columns = table_columns(out, alias, table, &source_has_run_id, NULL);
    copier->per_run = source_has_run_id && out_has_run_id;
    GString *names = g_string_new("");
    GString *values = g_string_new("");
    for (guint i = 0; i < out_columns->len; i++) {
        const char *column = g_ptr_array_index(out_columns, i);
        if (!ptr_array_has(source_columns, column) ||
            (rowid_alias != NULL && strcmp(column, rowid_alias) == 0)) {
            continue;
        }
        g_autofree char *quoted = quote_ident(column);
        bool mapped = copier->per_run && strcmp(column, "run_id") == 0;
        g_string_append_printf(names, "%s%s", names->len ? ", " : "", quoted);
        g_string_append_printf(values, "%s%s%s", values->len ? ", " : "", mapped ? "?1" : "s.",
                               mapped ? "" : quoted);
    }
    g_autofree char *quoted_table = quote_ident(table);
    g_autofree char *sql = NULL;
    if (names->len > 0 && copier->per_run) {
        sql = g_strdup_printf("INSERT INTO main.%s (%s) SELECT %s FROM %s.%s s "
                              "WHERE s.run_id = ?2 ORDER BY s.rowid",
                              quoted_table, names->str, values->str, alias, quoted_table);
    } else if (names->len > 0) {
        sql = g_strdup_printf("INSERT INTO main.%s (%s) SELECT %s FROM %s.%s s "
                              "EXCEPT SELECT %s FROM main.%s",
                              quoted_table, names->str, values->str, alias, quoted_table,
                              names->str, quoted_table);
    }
    g_string_free(names, TRUE);
    g_string_free(values, TRUE);
    g_ptr_array_unref(out_columns);
    g_ptr_array_unref(source_columns);
    if (sql != NULL && sqlite3_prepare_v2(out, sql, -1, &copier->stmt, NULL) != SQLITE_OK) {
        return exec_sql(out, sql, error); /* reports the error */
    }
    return true;
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

/* The inputs to read, in the order of their first run in the list (R1),
 * then, with every_input, the others (those in `only`, if not NULL) in the
 * given order. */
static GArray *input_order(size_t input_count, const struct ks_merge_run *runs, size_t run_count,
                           bool every_input, const bool *only, GError **error)
{
    GArray *order = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    g_autofree bool *seen = g_new0(bool, input_count + 1);
    for (size_t k = 0; k < run_count + (every_input ? input_count : 0); k++) {
        uint32_t input_index = k < run_count ? runs[k].input_index : (uint32_t)(k - run_count);
        if (input_index >= input_count) {
            g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_INPUT, "no input %u", input_index);
            g_array_unref(order);
            return NULL;
        }
        if (k >= run_count && only != NULL && !only[input_index]) {
            continue;
        }
        if (!seen[input_index]) {
            seen[input_index] = true;
            g_array_append_val(order, input_index);
        }
    }
    return order;
}

/* Copies the runs from at most ATTACH_COUNT_MAX inputs, all attached at once,
 * in one transaction: run k becomes max(out's run_id) + 1 + k, and the rows
 * land in list order. */
static bool append_direct(sqlite3 *out, const char *const *inputs, size_t input_count,
                          const struct ks_merge_run *runs, size_t run_count, int64_t *new_ids,
                          bool every_input, const bool *only, GError **error)
{
    GArray *order = input_order(input_count, runs, run_count, every_input, only, error);
    if (order == NULL) {
        return false;
    }
    ks_assert(order->len <= ATTACH_COUNT_MAX);
    GPtrArray **copiers = g_new0(GPtrArray *, input_count + 1);
    bool ok = true;
    guint attached = 0;
    for (; ok && attached < order->len; attached++) {
        uint32_t input_index = g_array_index(order, uint32_t, attached);
        g_autofree char *alias = g_strdup_printf("src%u", input_index);
        ok = attach_as(out, inputs[input_index], alias, error);
        if (!ok) {
            break;
        }
    }
    bool began = ok && exec_sql(out, "BEGIN IMMEDIATE", error);
    ok = ok && began;
    int64_t base_id = ok ? max_run_id(out) : 0;
    for (guint i = 0; ok && i < order->len; i++) {
        uint32_t input_index = g_array_index(order, uint32_t, i);
        g_autofree char *alias = g_strdup_printf("src%u", input_index);
        GPtrArray *tables = schema_tables(out, alias);
        copiers[input_index] = g_ptr_array_new_with_free_func(g_free);
        for (guint t = 0; ok && t + 1 < tables->len; t += 2) {
            struct copier *copier = g_new0(struct copier, 1);
            g_ptr_array_add(copiers[input_index], copier);
            ok = make_copier(out, alias, g_ptr_array_index(tables, t),
                             g_ptr_array_index(tables, t + 1), copier, error);
            if (ok && copier->stmt != NULL && !copier->per_run &&
                sqlite3_step(copier->stmt) != SQLITE_DONE) {
                ok = exec_sql(out, sqlite3_sql(copier->stmt), error);
            }
        }
        g_ptr_array_unref(tables);
    }
    for (size_t k = 0; ok && k < run_count; k++) {
        GPtrArray *list = copiers[runs[k].input_index];
        for (guint c = 0; ok && list != NULL && c < list->len; c++) {
            struct copier *copier = g_ptr_array_index(list, c);
            if (copier->stmt == NULL || !copier->per_run) {
                continue;
            }
            sqlite3_bind_int64(copier->stmt, 1, base_id + 1 + (int64_t)k);
            sqlite3_bind_int64(copier->stmt, 2, runs[k].run_id);
            if (sqlite3_step(copier->stmt) != SQLITE_DONE) {
                g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_OUTPUT,
                            "copying run %" G_GINT64_FORMAT " of %s: %s", runs[k].run_id,
                            inputs[runs[k].input_index], sqlite3_errmsg(out));
                ok = false;
            }
            sqlite3_reset(copier->stmt);
        }
    }
    for (size_t i = 0; i < input_count; i++) {
        for (guint c = 0; copiers[i] != NULL && c < copiers[i]->len; c++) {
            sqlite3_finalize(((struct copier *)g_ptr_array_index(copiers[i], c))->stmt);
        }
        if (copiers[i] != NULL) {
            g_ptr_array_unref(copiers[i]);
        }
    }
    g_free(copiers);
    ok = ok && exec_sql(out, "COMMIT", error);
    if (!ok && began) {
        sqlite3_exec(out, "ROLLBACK", NULL, NULL, NULL);
    }
    for (guint i = 0; i < attached; i++) {
        g_autofree char *alias = g_strdup_printf("src%u", g_array_index(order, uint32_t, i));
        detach_as(out, alias);
    }
    g_array_unref(order);
    if (ok && new_ids != NULL) {
        for (size_t k = 0; k < run_count; k++) {
            new_ids[k] = base_id + 1 + (int64_t)k;
        }
    }
    return ok;
}

/* More inputs than can be attached at once: gather them into a staging
 * database a group at a time (staged ids follow list order within each
 * group), then copy the staging database into `out` in list order. */
static bool append_staged(sqlite3 *out, const char *const *inputs, size_t input_count,
                          const struct ks_merge_run *runs, size_t run_count, int64_t *new_ids,
                          bool every_input, GError **error)
{
    GArray *order = input_order(input_count, runs, run_count, every_input, NULL, error);
    if (order == NULL) {
        return false;
    }
    g_autofree char *staging_path = NULL;
    int fd = g_file_open_tmp("ksim-merge-XXXXXX.db", &staging_path, NULL);
    sqlite3 *staging = NULL;
    bool ok = fd >= 0;
    if (fd >= 0) {
        close(fd);
        ok = sqlite3_open(staging_path, &staging) == SQLITE_OK;
    }
    if (!ok) {
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_OUTPUT,
                    "cannot create a temporary database");
    } else {
        sqlite3_exec(staging, "PRAGMA synchronous = OFF; PRAGMA journal_mode = OFF", NULL, NULL,
                     NULL);
    }
    g_autofree int64_t *staged_ids = g_new0(int64_t, run_count + 1);
    g_autofree bool *in_group = g_new0(bool, input_count + 1);
    for (guint first = 0; ok && first < order->len; first += ATTACH_COUNT_MAX) {
        memset(in_group, 0, (input_count + 1) * sizeof *in_group);
        for (guint i = first; i < order->len && i < first + ATTACH_COUNT_MAX; i++) {
            in_group[g_array_index(order, uint32_t, i)] = true;
        }
        /* The group's runs, in list order. */
        GArray *group = g_array_new(FALSE, FALSE, sizeof(struct ks_merge_run));
        GArray *positions = g_array_new(FALSE, FALSE, sizeof(size_t));
        for (size_t k = 0; k < run_count; k++) {
            if (in_group[runs[k].input_index]) {
                g_array_append_val(group, runs[k]);
                g_array_append_val(positions, k);
            }
        }
        g_autofree int64_t *ids = g_new0(int64_t, group->len + 1);
        ok = append_direct(staging, inputs, input_count,
                           (const struct ks_merge_run *)(void *)group->data, group->len, ids,
                           every_input, in_group, error);
        for (guint j = 0; ok && j < group->len; j++) {
            staged_ids[g_array_index(positions, size_t, j)] = ids[j];
        }
        g_array_unref(group);
        g_array_unref(positions);
    }
    if (staging != NULL) {
        sqlite3_close(staging);
    }
    if (ok) {
        g_autofree struct ks_merge_run *final_runs = g_new0(struct ks_merge_run, run_count + 1);
        for (size_t k = 0; k < run_count; k++) {
            final_runs[k].input_index = 0;
            final_runs[k].run_id = staged_ids[k];
        }
        const char *staging_inputs[] = { staging_path };
        ok = append_direct(out, staging_inputs, 1, final_runs, run_count, new_ids, true, NULL,
                           error);
    }
    if (staging_path != NULL) {
        g_unlink(staging_path);
    }
    g_array_unref(order);
    return ok;
}

static bool merge_append(sqlite3 *out, const char *const *inputs, size_t input_count,
                         const struct ks_merge_run *runs, size_t run_count, int64_t *new_ids,
                         bool every_input, GError **error)
{
    GArray *order = input_order(input_count, runs, run_count, every_input, NULL, error);
    if (order == NULL) {
        return false;
    }
    bool direct = order->len <= ATTACH_COUNT_MAX;
    g_array_unref(order);
    return direct ? append_direct(out, inputs, input_count, runs, run_count, new_ids, every_input,
                                  NULL, error)
                  : append_staged(out, inputs, input_count, runs, run_count, new_ids, every_input,
                                  error);
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
    static const char *const required[] = { "run_id", "scenario", "seed", "params" };
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
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_INPUT, "%s: %s", path, g_strerror(errno));
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
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_INPUT, "%s: not an SQLite database: %s",
                    path, sqlite3_errmsg(db));
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
        struct run_key key = { .run = { .input_index = input_index } };
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
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_OUTPUT, "%s: exists already", out_path);
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
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_OUTPUT, "%s: cannot create: %s", out_path,
                    sqlite3_errmsg(out));
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
    bool help = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
    if (argc < 3 || help) {
        fprintf(help ? stdout : stderr,
                "usage: ksim merge OUT.db IN.db...\n"
                "  combines ksim databases (e.g. from sweep --shard) into a new OUT.db;\n"
                "  run ids are renumbered by (scenario, params, seed).\n");
        return help ? 0 : 2;
    }
    const char *out_path = argv[1];
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], out_path) == 0) {
            fprintf(stderr, "ksim merge: %s: the output is also an input\n", out_path);
            return 2;
        }
        /* The same file twice (by any name) would copy its runs twice, and
         * SQLite cannot attach one file twice either. */
        GStatBuf a;
        for (int j = 2; j < i && g_stat(argv[i], &a) == 0; j++) {
            GStatBuf b;
            if (g_stat(argv[j], &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
                fprintf(stderr, "ksim merge: %s: given twice (also as %s)\n", argv[i], argv[j]);
                return 2;
            }
        }
    }
    /* Write next to the output, then rename, so that a failed merge leaves
     * nothing behind. */
    g_autofree char *temp_path = g_strdup_printf("%s.merge-%d", out_path, (int)getpid());
    if (g_file_test(out_path, G_FILE_TEST_EXISTS)) {
        fprintf(stderr, "ksim merge: %s: exists already (merge writes a new database)\n", out_path);
        return 2;
    }
    GError *error = NULL;
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
