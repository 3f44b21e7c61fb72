/*
** sim/merge.h: copying runs between ksim databases (SPEC 4), for `ksim merge`
** and for sweep/explore, whose worker processes each write their own
** database that the parent then appends to the user's --db in a fixed order.
**
** A "run" is its row in runs plus every row with its run_id in any other
** table that has a run_id column (summary, events, records, partition_state,
** anomalies, expectations, and ksim's extra tables such as sweep_runs). Copying
** gives each run a new run_id; rows of one run keep their order.
*/
#pragma once

#include <glib.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One run of one input: inputs[input_index], runs.run_id = run_id. */
struct ks_merge_run {
    uint32_t input_index;
    int64_t run_id;
};

/* Appends `runs`, in that order, from the input databases (paths) to the
 * open database `out`, numbering them max(out's run_id) + 1, + 2, ...
 * Tables missing in `out` are created from the first input that has them;
 * tables present on both sides are copied by their common columns; a single
 * INTEGER PRIMARY KEY column other than run_id is left to SQLite. Runs in one
 * transaction. If new_ids is not NULL it must hold run_count entries and
 * receives the new ids. On failure *error says what and `out` is unchanged. */
bool ks_merge_append(sqlite3 *out, const char *const *inputs, size_t input_count,
                     const struct ks_merge_run *runs, size_t run_count, int64_t *new_ids,
                     GError **error);

/* Writes every run of the inputs to a new database at out_path (which must
 * not exist), ordered by (scenario, params, seed) and then by the rest of the
 * runs row, so that the result is the same whatever the order of the inputs.
 * Each input must be a ksim database (a runs table with SPEC 4's columns). */
bool ks_merge_files(const char *out_path, const char *const *inputs, size_t input_count,
                    GError **error);

/* True if the open database has a runs table with SPEC 4's columns. */
bool ks_merge_is_ksim_db(sqlite3 *db);

/* Opens `path` read-only and checks it is a ksim database; on failure *error
 * reads "PATH: why" and NULL is returned. Close with sqlite3_close. */
sqlite3 *ks_merge_open_ksim_db(const char *path, GError **error);

GQuark ks_merge_error_quark(void);
#define KS_MERGE_ERROR (ks_merge_error_quark())
enum ks_merge_error { KS_MERGE_ERROR_INPUT, KS_MERGE_ERROR_OUTPUT };
