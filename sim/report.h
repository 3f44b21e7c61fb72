/*
** sim/report.h: `ksim report DB [--run ID] -o FILE.html` and `ksim run
** --report FILE.html`: one self-contained HTML page to step through a run
** (sim/report.c has the design).
*/
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

struct sqlite3;

/* Checks, writing nothing, that path can take a report: a name ending in
 * .html or .htm, in an existing writable folder, not a folder itself.
 * False with *error ("FILE: what is wrong") otherwise: bad input. */
bool ks_report_check_output(const char *path, GError **error);

/* Writes the report of run run_id (0: the latest) of db to output. Returns
 * 0; 2 (bad input: no such run, the page's assets not found) or 3 (the file
 * could not be written), with *error set. Plots need gnuplot: without it
 * the page says so and has the rest. */
int ks_report_write(struct sqlite3 *db, int64_t run_id, const char *output, GError **error);
