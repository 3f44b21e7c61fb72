/*
** sim/plot.h: helpers of `ksim plot` (sim/plot.c) that others may reuse.
*/
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

struct sqlite3;

/* One plot to write (what `ksim plot` does after parsing its options). */
struct ks_plot_request {
    const char *kind;      /* "throughput", "latency", "isr", "hw", "loss", "availability" */
    int64_t run_id;        /* the run of the per-run kinds; 0: the latest */
    const char *partition; /* "orders-0", or NULL */
    double from_s;         /* the time axis from here, or -1 (the start) */
    double to_s;           /* ... to here, or -1 (the end) */
    const char *output;    /* FILE.png or FILE.svg */
};

/* Writes the plot with gnuplot from db (a ksim database with the tables
 * ks_plot_has_tables checks). Returns 0, 2 (bad input: an unknown kind or
 * run, nothing to plot, no gnuplot) or 3 (gnuplot or a temporary file
 * failed); messages go to stderr. */
int ks_plot_write(struct sqlite3 *db, const struct ks_plot_request *request);
/* False, with *error naming it, if db lacks a table the plots read. */
bool ks_plot_has_tables(struct sqlite3 *db, const char *db_path, GError **error);
/* What a run changed from its scenario file, for titles: its --set
 * overrides (runs.overrides) and its sweep setting, joined by ", "; NULL if
 * none. Owned: g_free. */
char *ks_plot_run_overrides(struct sqlite3 *db, int64_t run_id);

/* The folder holding the gnuplot scripts: $KSIM_PLOT_DIR, else ../plots next
 * to the executable when it holds common.gp, else "plots". Owned: g_free. */
char *ks_plot_script_dir(void);
