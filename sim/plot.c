/*
** sim/plot.c: `ksim plot DB [--run ID] --kind KIND [-o FILE.png|.svg]
** [--partition TP]` (SPEC sections 1 and 4).
**
** The program reads a ksim database, writes the numbers a plot needs as
** tab-separated data files into a fresh temporary folder, and runs gnuplot as
** a child process on one of the scripts in plots/ (KIND.gp, which loads
** common.gp), handing it the folder, the output file and a few variables with
** -e. The scripts hold every visual choice; this file holds the queries.
**
**   kind          data                                   from
**   throughput    acked records per second per time bin   records.acked_ns
**                 (of one partition with --partition)
**   latency       p50/p99 of acked_ns - sent_ns per bin   records (idem)
**   isr           ISR size per partition over time        partition_state (leader rows)
**   hw            LEO and HW per replica of one partition partition_state, events
**   loss          acked_lost, duplicates per setting      summary, sweep_runs
**   availability  unavailable_ms and produce_unavailable_ms summary, sweep_runs
**                 per setting (the cluster's and the clients' view)
**
** Fault windows (throughput, latency, isr) come from the events table: a
** fault's start event opens a window named by the fault, its end event (or a
** restart of a crashed broker) closes it, and a window still open when the
** run ends is closed at the end (see fault_windows below).
**
** Time bins: the width is the first of 10 ms, 20 ms, 50 ms, ... 60 s that
** gives at most 60 bins over the run, so a 60 s run is shown per second.
** --from/--to zoom the time axis of the per-run kinds (xmin/xmax; a fault
** window's label moves to the zoom's left edge when the window started
** before it); titles name the run's --set overrides or sweep setting.
**
** Where the scripts are: $KSIM_PLOT_DIR, else ../plots next to the
** executable (bin/ksim -> plots/), else ./plots.
**
** Exit codes: 0 written; 2 bad input (unknown option, kind or run, a file
** that is not a ksim database, nothing to plot, gnuplot missing); 3 gnuplot
** failed or a temporary file could not be written.
*/
#include "commands.h"
#include "plot.h"
#include "recorder.h"
#include "scenario.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum plot_kind {
    PLOT_THROUGHPUT,
    PLOT_LATENCY,
    PLOT_ISR,
    PLOT_HW,
    PLOT_LOSS,
    PLOT_AVAILABILITY,
    PLOT_MIRROR_LAG,
    PLOT_KIND_COUNT
};

static const char *const kind_names[PLOT_KIND_COUNT] = {
    "throughput", "latency", "isr", "hw", "loss", "availability", "mirror-lag"
};

/* What one `ksim plot` is doing: inputs, the temp folder, gnuplot's variables. */
struct plot_job {
    sqlite3 *db;
    enum plot_kind kind;
    int64_t run_id;        /* the run (per-run kinds) */
    const char *partition; /* --partition TP, or NULL (borrowed) */
    double from_s;         /* --from, or -1 */
    double to_s;           /* --to, or -1 */
    char *datadir;         /* owned temp folder */
    GString *variables;    /* gnuplot -e text */
    /* the run, for titles and the time axis */
    char *scenario;
    char *overrides; /* "producer.p1.acks=1, ..." (--set or the sweep setting), or NULL */
    int64_t seed;
    double end_s; /* x axis end: max(sim_ms, last data point) */
};

/* Errors inside plot.c: exit 2 (input) or 3 (host). */
#define PLOT_INPUT 2
#define PLOT_HOST  3

/* name = 'value'; a newline in value becomes gnuplot's "\n" between
 * two quoted parts (a title or label on two lines). */
static void set_var_text(struct plot_job *job, const char *name, const char *value)
{
    GString *quoted = g_string_new("'");
    for (const char *c = value; *c; c++) {
        if (*c == '\'') {
            g_string_append_c(quoted, '\''); /* gnuplot: '' inside '...' */
        }
        if (*c == '\n') {
            g_string_append(quoted, "'.\"\\n\".'");
            continue;
        }
        g_string_append_c(quoted, *c);
    }
    g_string_append_c(quoted, '\'');
    g_string_append_printf(job->variables, "%s = %s; ", name, quoted->str);
    g_string_free(quoted, TRUE);
}

static void set_var_number(struct plot_job *job, const char *name, double value)
{
    char buffer[G_ASCII_DTOSTR_BUF_SIZE];
    g_ascii_formatd(buffer, sizeof buffer, "%.9g", value);
    /* gnuplot divides integers as integers: keep a decimal point. */
    if (strchr(buffer, '.') == NULL && strchr(buffer, 'e') == NULL) {
        g_strlcat(buffer, ".0", sizeof buffer);
    }
    g_string_append_printf(job->variables, "%s = %s; ", name, buffer);
}

static void set_var_int(struct plot_job *job, const char *name, int64_t value)
{
    g_string_append_printf(job->variables, "%s = %" G_GINT64_FORMAT "; ", name, value);
}

static FILE *open_data(struct plot_job *job, const char *name)
{
    g_autofree char *path = g_build_filename(job->datadir, name, NULL);
    FILE *file = fopen(path, "w");
    if (file == NULL) {
        fprintf(stderr, "ksim plot: %s: %s\n", path, g_strerror(errno));
    }
    return file;
}

/* Numbers in data files: always '.' as the decimal point. */
static void put_number(FILE *file, double value)
{
    char buffer[G_ASCII_DTOSTR_BUF_SIZE];
    if (isnan(value)) {
        fputs("NaN", file);
        return;
    }
    fputs(g_ascii_formatd(buffer, sizeof buffer, "%.6f", value), file);
}

/* Labels go into tab-separated files: no tabs or newlines in them. */
static void put_label(FILE *file, const char *text)
{
    for (const char *c = text ? text : ""; *c; c++) {
        fputc(*c == '\t' || *c == '\n' || *c == '\r' ? ' ' : *c, file);
    }
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK) {
        fprintf(stderr, "ksim plot: the database lacks what this plot needs: %s\n",
                sqlite3_errmsg(db));
        sqlite3_finalize(stmt);
        return NULL;
    }
    return stmt;
}

/* ---- time bins ------------------------------------------------------------- */

static int64_t choose_bin_ns(double end_s)
{
    static const int64_t widths_ms[] = { 10,   20,   50,    100,   200,   500,    1000,
                                         2000, 5000, 10000, 30000, 60000, 300000, 600000 };
    for (size_t i = 0; i < G_N_ELEMENTS(widths_ms); i++) {
        if (end_s * 1000.0 / (double)widths_ms[i] <= 60.0) {
            return widths_ms[i] * 1000000;
        }
    }
    return widths_ms[G_N_ELEMENTS(widths_ms) - 1] * 1000000;
}

static char *bin_text(int64_t bin_ns)
{
    if (bin_ns % 1000000000 == 0) {
        return g_strdup_printf("%" G_GINT64_FORMAT " s", bin_ns / 1000000000);
    }
    return g_strdup_printf("%" G_GINT64_FORMAT " ms", bin_ns / 1000000);
}

/* ---- the run --------------------------------------------------------------- */

/* Reads the run's row (or picks the latest run); 0 or PLOT_INPUT. */
static int load_run(struct plot_job *job, bool run_given)
{
    sqlite3_stmt *stmt;
    if (!run_given) {
        stmt = prepare(job->db, "SELECT MAX(run_id) FROM runs");
        if (stmt == NULL || sqlite3_step(stmt) != SQLITE_ROW ||
            sqlite3_column_type(stmt, 0) == SQLITE_NULL) {
            sqlite3_finalize(stmt);
            fprintf(stderr, "ksim plot: the database holds no run\n");
            return PLOT_INPUT;
        }
        job->run_id = sqlite3_column_int64(stmt, 0);
        sqlite3_finalize(stmt);
    }
    stmt = prepare(job->db, "SELECT scenario, seed, COALESCE(sim_ms, 0) FROM runs "
                            "WHERE run_id = ?1");
    if (stmt == NULL) {
        return PLOT_INPUT;
    }
    sqlite3_bind_int64(stmt, 1, job->run_id);
    if (sqlite3_step(stmt) != SQLITE_ROW) {
        sqlite3_finalize(stmt);
        fprintf(stderr, "ksim plot: no run %" G_GINT64_FORMAT " in the database\n", job->run_id);
        return PLOT_INPUT;
    }
    const char *scenario = (const char *)sqlite3_column_text(stmt, 0);
    job->scenario = g_strdup(scenario ? scenario : "?");
    job->seed = sqlite3_column_int64(stmt, 1);
    job->end_s = sqlite3_column_double(stmt, 2) / 1000.0;
    sqlite3_finalize(stmt);
    job->overrides = ks_plot_run_overrides(job->db, job->run_id);
    return 0;
}

char *ks_plot_run_overrides(struct sqlite3 *db, int64_t run_id)
{
    GString *text = g_string_new(NULL);
    /* runs.overrides (a JSON array of KEY=VALUE), when the database has it. */
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT value FROM runs, json_each(runs.overrides) WHERE run_id = ?1",
                           -1, &stmt, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(stmt, 1, run_id);
        while (sqlite3_step(stmt) == SQLITE_ROW) {
            const char *value = (const char *)sqlite3_column_text(stmt, 0);
            g_string_append_printf(text, "%s%s", text->len > 0 ? ", " : "", value ? value : "");
        }
    }
    sqlite3_finalize(stmt);
    stmt = NULL;
    if (sqlite3_prepare_v2(db, "SELECT setting FROM sweep_runs WHERE run_id = ?1", -1, &stmt,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_int64(stmt, 1, run_id);
        if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0) != NULL &&
            sqlite3_column_text(stmt, 0)[0] != '\0') {
            g_string_append_printf(text, "%s%s", text->len > 0 ? ", " : "",
                                   (const char *)sqlite3_column_text(stmt, 0));
        }
    }
    sqlite3_finalize(stmt);
    if (text->len == 0) {
        g_string_free(text, TRUE);
        return NULL;
    }
    return g_string_free(text, FALSE);
}

/* "WHAT - SCENARIO [OVERRIDES], seed N (run M)"; the overrides go to a
 * second line when the title would not fit a slide's width. */
static void set_title(struct plot_job *job, const char *what)
{
    g_autofree char *run = g_strdup_printf("seed %" G_GINT64_FORMAT " (run %" G_GINT64_FORMAT ")",
                                           job->seed, job->run_id);
    g_autofree char *title = NULL;
    if (job->overrides == NULL) {
        title = g_strdup_printf("%s - %s, %s", what, job->scenario, run);
    } else if (strlen(what) + strlen(job->scenario) + strlen(job->overrides) + strlen(run) < 90) {
        title = g_strdup_printf("%s - %s [%s], %s", what, job->scenario, job->overrides, run);
    } else {
        title = g_strdup_printf("%s - %s, %s\n%s", what, job->scenario, run, job->overrides);
    }
    set_var_text(job, "title_text", title);
}

/* ---- fault windows ------------------------------------------------------------ */

/* Fault windows from the driver's events (sim/faults.c): a fault starts
 * with kind "fault" and a detail "fault NAME: what"; its effect ends with
 * "heal" (partition, slow, drop: "fault NAME ends: ..."; a heal fault:
 * "fault H: heal NAME" or "... heal every network fault"), "resume" (pause)
 * or "restart" (crash; "fault NAME restart.after: restart broker 2", or a
 * restart fault of the same broker); "final" (the end of the scenario's
 * duration) closes whatever is still open. Windows pair by NAME first. */
struct window {
    double start_s;
    double end_s;
    char *key;
    char *label;
    int broker;
    bool open;
};

/* "fault NAME: ..." or "fault NAME ends ..." -> NAME; else the first word. */
static char *fault_key(const char *detail)
{
    if (detail == NULL) {
        return g_strdup("");
    }
    if (g_str_has_prefix(detail, "fault ")) {
        detail += strlen("fault ");
    }
    return g_strndup(detail, strcspn(detail, " :\t"));
}

static void window_clear(gpointer data)
{
    struct window *window = data;
    g_free(window->key);
    g_free(window->label);
}

/* Which open windows an end event closes; see the comment above. */
static bool window_ends(const struct window *window, const char *kind, const char *key,
                        const char *detail, int broker)
{
    if (strcmp(kind, "final") == 0 || strcmp(window->key, key) == 0) {
        return true;
    }
    bool crash = strstr(window->label, ": crash") != NULL;
    bool pause = strstr(window->label, ": pause") != NULL;
    if (strcmp(kind, "restart") == 0) {
        return crash && broker >= 0 && window->broker == broker;
    }
    if (strcmp(kind, "resume") == 0) {
        return pause && broker >= 0 && window->broker == broker;
    }
    if (strcmp(kind, "heal") == 0 && detail != NULL) {
        const char *healed = strstr(detail, ": heal ");
        if (healed == NULL) {
            return false;
        }
        healed += strlen(": heal ");
        if (g_str_has_prefix(healed, "every")) {
            return strstr(window->label, ": partition") != NULL ||
                   strstr(window->label, ": cut") != NULL ||
                   strstr(window->label, ": drop") != NULL;
        }
        return strncmp(healed, window->key, strlen(window->key)) == 0 &&
               (healed[strlen(window->key)] == '\0' || healed[strlen(window->key)] == ' ');
    }
    return false;
}

static void window_event(GArray *windows, double t_s, const char *kind, int broker,
                         const char *detail)
{
    g_autofree char *key = fault_key(detail);
    if (strcmp(kind, "fault") == 0) {
        const char *text = detail ? detail : kind;
        if (g_str_has_prefix(text, "fault ")) {
            text += strlen("fault ");
        }
        /* Long details (a partition of many nodes) are cut to keep labels apart. */
        g_autofree char *label =
            g_utf8_strlen(text, -1) > 44 ? g_strdup_printf("%.41s...", text) : g_strdup(text);
        struct window window = { .start_s = t_s,
                                 .end_s = -1,
                                 .key = g_strdup(key),
                                 .label = g_strdup(label),
                                 .broker = broker,
                                 .open = true };
        g_array_append_val(windows, window);
        return;
    }
    if (strcmp(kind, "heal") != 0 && strcmp(kind, "resume") != 0 && strcmp(kind, "restart") != 0 &&
        strcmp(kind, "final") != 0) {
        return;
    }
    bool all = strcmp(kind, "final") == 0 ||
               (strcmp(kind, "heal") == 0 && detail && strstr(detail, ": heal every"));
    for (guint i = windows->len; i-- > 0;) {
        struct window *window = &g_array_index(windows, struct window, i);
        if (window->open && window_ends(window, kind, key, detail, broker)) {
            window->open = false;
            window->end_s = t_s;
            if (!all) {
                break; /* the latest matching window only */
            }
        }
    }
}

/* Writes faults.dat; sets has_faults. Returns false on a host error. */
static bool fault_windows(struct plot_job *job)
{
    GArray *windows = g_array_new(FALSE, TRUE, sizeof(struct window));
    g_array_set_clear_func(windows, window_clear);
    sqlite3_stmt *stmt = prepare(job->db, "SELECT t_ns, kind, broker, detail FROM events "
                                          "WHERE run_id = ?1 ORDER BY t_ns, rowid");
    if (stmt != NULL) {
        sqlite3_bind_int64(stmt, 1, job->run_id);
        while (sqlite3_step(stmt) == SQLITE_ROW) {
            double t_s = (double)sqlite3_column_int64(stmt, 0) / 1e9;
            const char *kind = (const char *)sqlite3_column_text(stmt, 1);
            int broker =
                sqlite3_column_type(stmt, 2) == SQLITE_NULL ? -1 : sqlite3_column_int(stmt, 2);
            const char *detail = (const char *)sqlite3_column_text(stmt, 3);
            if (kind == NULL) {
                continue;
            }
            window_event(windows, t_s, kind, broker, detail);
        }
        sqlite3_finalize(stmt);
    }
    FILE *file = open_data(job, "faults.dat");
    if (file == NULL) {
        g_array_unref(windows);
        return false;
    }
    /* A window of no width (a restart, a heal) still shows as a thin band. */
    double width_min_s = job->end_s / 300.0;
    for (guint i = 0; i < windows->len; i++) {
        struct window *window = &g_array_index(windows, struct window, i);
        double end_s = window->open ? job->end_s : window->end_s;
        if (end_s - window->start_s < width_min_s) {
            end_s = window->start_s + width_min_s;
        }
        put_number(file, window->start_s);
        fputc('\t', file);
        put_number(file, end_s);
        fputc('\t', file);
        put_label(file, window->label);
        fputc('\t', file);
        /* Stagger label heights so that close windows do not overlap. */
        put_number(file, 0.97 - 0.07 * (double)(i % 5));
        fputc('\t', file);
        /* The label's x: the start, or the left edge of a zoom that starts
         * inside the window (else the label would be cut off). */
        put_number(file, job->from_s > window->start_s && job->from_s < end_s ? job->from_s
                                                                              : window->start_s);
        fputc('\n', file);
    }
    fclose(file);
    set_var_int(job, "has_faults", windows->len > 0 ? 1 : 0);
    g_array_unref(windows);
    return true;
}

/* ---- throughput and latency ------------------------------------------------------ */

static bool split_tp(const char *text, char **topic, int *partition);

/* The records of --partition only (all when absent): binds ?3 (topic) and
 * ?4 (partition) of a records query that ends in RECORDS_OF_PARTITION. */
#define RECORDS_OF_PARTITION " AND (?3 IS NULL OR (topic = ?3 AND \"partition\" = ?4))"

static bool bind_partition(struct plot_job *job, sqlite3_stmt *stmt)
{
    if (job->partition == NULL) {
        sqlite3_bind_null(stmt, 3);
        return true;
    }
    g_autofree char *topic = NULL;
    int partition = -1;
    if (!split_tp(job->partition, &topic, &partition)) {
        fprintf(stderr, "ksim plot: --partition %s: expected TOPIC-PARTITION\n", job->partition);
        return false;
    }
    sqlite3_bind_text(stmt, 3, topic, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(stmt, 4, partition);
    return true;
}

/* " of orders-0" for titles, or "". Owned. */
static char *partition_suffix(const struct plot_job *job)
{
    return job->partition != NULL ? g_strdup_printf(" of %s", job->partition) : g_strdup("");
}

/* Extends end_s to the last acknowledgement. */
static int64_t records_end(struct plot_job *job, int64_t *acked_count)
{
    sqlite3_stmt *stmt = prepare(job->db, "SELECT count(*), MAX(acked_ns) FROM records "
                                          "WHERE run_id = ?1 AND outcome = 'acked' "
                                          "AND acked_ns IS NOT NULL" RECORDS_OF_PARTITION);
    *acked_count = 0;
    if (stmt == NULL) {
        return -1;
    }
    sqlite3_bind_int64(stmt, 1, job->run_id);
    if (!bind_partition(job, stmt)) {
        sqlite3_finalize(stmt);
        return -1;
    }
    int64_t last_ns = 0;
    if (sqlite3_step(stmt) == SQLITE_ROW) {
        *acked_count = sqlite3_column_int64(stmt, 0);
        last_ns = sqlite3_column_int64(stmt, 1);
    }
    sqlite3_finalize(stmt);
    if ((double)last_ns / 1e9 > job->end_s) {
        job->end_s = (double)last_ns / 1e9;
    }
    return last_ns;
}

static int plot_throughput(struct plot_job *job)
{
    int64_t acked_count = 0;
    if (records_end(job, &acked_count) < 0) {
        return PLOT_INPUT;
    }
    if (acked_count == 0) {
        fprintf(stderr, "ksim plot: run %" G_GINT64_FORMAT " has no acknowledged records\n",
                job->run_id);
        return PLOT_INPUT;
    }
    int64_t bin_ns = choose_bin_ns(job->end_s);
    int64_t bin_count = (int64_t)ceil(job->end_s * 1e9 / (double)bin_ns);
    if (bin_count < 1) {
        bin_count = 1;
    }
    g_autofree int64_t *counts = g_new0(int64_t, bin_count + 1);
    sqlite3_stmt *stmt =
        prepare(job->db, "SELECT acked_ns / ?2, count(*) FROM records "
                         "WHERE run_id = ?1 AND outcome = 'acked' AND "
                         "acked_ns IS NOT NULL" RECORDS_OF_PARTITION " GROUP BY 1");
    if (stmt == NULL) {
        return PLOT_INPUT;
    }
    sqlite3_bind_int64(stmt, 1, job->run_id);
    sqlite3_bind_int64(stmt, 2, bin_ns);
    bind_partition(job, stmt);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        int64_t bin = sqlite3_column_int64(stmt, 0);
        if (bin >= 0 && bin <= bin_count) {
            counts[bin] += sqlite3_column_int64(stmt, 1);
        }
    }
    sqlite3_finalize(stmt);
    if (counts[bin_count] > 0) {
        bin_count++; /* an ack exactly at the end */
        job->end_s = (double)(bin_count * bin_ns) / 1e9;
    }
    FILE *file = open_data(job, "throughput.dat");
    if (file == NULL) {
        return PLOT_HOST;
    }
    double bin_s = (double)bin_ns / 1e9;
    for (int64_t bin = 0; bin <= bin_count; bin++) {
        /* The last line repeats the last bin so that steps reach the end. */
        int64_t value_bin = bin < bin_count ? bin : bin_count - 1;
        put_number(file, (double)bin * bin_s);
        fputc('\t', file);
        put_number(file, (double)counts[value_bin] / bin_s);
        fputc('\n', file);
    }
    fclose(file);
    if (!fault_windows(job)) {
        return PLOT_HOST;
    }
    g_autofree char *bin_label = bin_text(bin_ns);
    set_var_text(job, "bin_text", bin_label);
    set_var_number(job, "xmax", job->end_s);
    g_autofree char *suffix = partition_suffix(job);
    g_autofree char *what = g_strdup_printf("Throughput%s (acknowledged records)", suffix);
    set_title(job, what);
    return 0;
}

static double percentile(const GArray *values, double fraction)
{
    /* Nearest rank on sorted values. */
    guint rank = (guint)ceil(fraction * values->len);
    if (rank < 1) {
        rank = 1;
    }
    return g_array_index(values, double, rank - 1);
}

static void write_latency_bin(FILE *file, int64_t bin, int64_t previous_bin, double bin_s,
                              GArray *values, double *minimum, double *maximum)
{
    if (previous_bin >= 0 && bin > previous_bin + 1) {
        fputc('\n', file); /* no acknowledgement in between: break the line */
    }
    double p50 = percentile(values, 0.50);
    double p99 = percentile(values, 0.99);
    put_number(file, ((double)bin + 0.5) * bin_s);
    fputc('\t', file);
    put_number(file, p50);
    fputc('\t', file);
    put_number(file, p99);
    fprintf(file, "\t%u\n", values->len);
    *minimum = MIN(*minimum, p50);
    *maximum = MAX(*maximum, p99);
}

static int plot_latency(struct plot_job *job)
{
    int64_t acked_count = 0;
    if (records_end(job, &acked_count) < 0) {
        return PLOT_INPUT;
    }
    if (acked_count == 0) {
        fprintf(stderr, "ksim plot: run %" G_GINT64_FORMAT " has no acknowledged records\n",
                job->run_id);
        return PLOT_INPUT;
    }
    int64_t bin_ns = choose_bin_ns(job->end_s);
    sqlite3_stmt *stmt =
        prepare(job->db, "SELECT acked_ns / ?2, (acked_ns - sent_ns) / 1e6 FROM records "
                         "WHERE run_id = ?1 AND outcome = 'acked' AND acked_ns IS NOT "
                         "NULL" RECORDS_OF_PARTITION " ORDER BY 1, 2");
    if (stmt == NULL) {
        return PLOT_INPUT;
    }
    FILE *file = open_data(job, "latency.dat");
    if (file == NULL) {
        sqlite3_finalize(stmt);
        return PLOT_HOST;
    }
    sqlite3_bind_int64(stmt, 1, job->run_id);
    sqlite3_bind_int64(stmt, 2, bin_ns);
    bind_partition(job, stmt);
    GArray *values = g_array_new(FALSE, FALSE, sizeof(double));
    int64_t current_bin = -1;
    int64_t previous_bin = -1;
    double minimum = INFINITY;
    double maximum = 0;
    double bin_s = (double)bin_ns / 1e9;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        int64_t bin = sqlite3_column_int64(stmt, 0);
        double latency_ms = sqlite3_column_double(stmt, 1);
        if (bin != current_bin && values->len > 0) {
            write_latency_bin(file, current_bin, previous_bin, bin_s, values, &minimum, &maximum);
            previous_bin = current_bin;
            g_array_set_size(values, 0);
        }
        current_bin = bin;
        g_array_append_val(values, latency_ms);
    }
    if (values->len > 0) {
        write_latency_bin(file, current_bin, previous_bin, bin_s, values, &minimum, &maximum);
    }
    g_array_unref(values);
    sqlite3_finalize(stmt);
    fclose(file);
    if (!fault_windows(job)) {
        return PLOT_HOST;
    }
    g_autofree char *bin_label = bin_text(bin_ns);
    set_var_text(job, "bin_text", bin_label);
    set_var_number(job, "xmax", job->end_s);
    /* A log scale when the spread is wide (retries after a fault). */
    set_var_int(job, "logscale", minimum > 0 && maximum / minimum > 50.0 ? 1 : 0);
    g_autofree char *suffix = partition_suffix(job);
    g_autofree char *what = g_strdup_printf("Produce latency%s (send to acknowledgement)", suffix);
    set_title(job, what);
    return 0;
}

/* ---- ISR and HW/LEO ----------------------------------------------------------- */

static int isr_size(const char *isr)
{
    if (isr == NULL || *isr == '\0') {
        return 0;
    }
    int size = 1;
    for (const char *c = isr; *c; c++) {
        size += *c == ',';
    }
    return size;
}

/* Extends end_s to the last partition_state sample. */
static void state_end(struct plot_job *job)
{
    sqlite3_stmt *stmt = prepare(job->db, "SELECT MAX(t_ns) FROM partition_state "
                                          "WHERE run_id = ?1");
    if (stmt == NULL) {
        return;
    }
    sqlite3_bind_int64(stmt, 1, job->run_id);
    if (sqlite3_step(stmt) == SQLITE_ROW) {
        double last_s = (double)sqlite3_column_int64(stmt, 0) / 1e9;
        job->end_s = MAX(job->end_s, last_s);
    }
    sqlite3_finalize(stmt);
}

/* Splits "orders-0" at its last '-'. */
static bool split_tp(const char *text, char **topic, int *partition)
{
    const char *dash = strrchr(text, '-');
    if (dash == NULL || dash == text || dash[1] == '\0') {
        return false;
    }
    char *end = NULL;
    long value = strtol(dash + 1, &end, 10);
    if (*end != '\0' || value < 0) {
        return false;
    }
    *topic = g_strndup(text, (gsize)(dash - text));
    *partition = (int)value;
    return true;
}

/* How many partitions plot_isr will draw. */
static int64_t count_partitions(struct plot_job *job, const char *topic, int partition)
{
    sqlite3_stmt *stmt =
        prepare(job->db, "SELECT count(*) FROM (SELECT DISTINCT topic, partition FROM "
                         "partition_state WHERE run_id = ?1 AND (?2 IS NULL OR (topic = "
                         "?2 AND partition = ?3)) AND (?2 IS NOT NULL OR topic NOT LIKE "
                         "'\\_\\_%' ESCAPE '\\'))");
    int64_t count = 0;
    if (stmt == NULL) {
        return 0;
    }
    sqlite3_bind_int64(stmt, 1, job->run_id);
    if (topic != NULL) {
        sqlite3_bind_text(stmt, 2, topic, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(stmt, 3, partition);
    }
    if (sqlite3_step(stmt) == SQLITE_ROW) {
        count = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
    return count;
}

static int plot_isr(struct plot_job *job)
{
    state_end(job);
    /* One ISR per (partition, time): the controller's view is the same in
     * every replica's row, so take the first row of each sample. Internal
     * topics (__consumer_offsets) only when asked for. */
    sqlite3_stmt *stmt =
        prepare(job->db, "SELECT topic, partition, t_ns, isr FROM partition_state "
                         "WHERE run_id = ?1 AND (?2 IS NULL OR (topic = ?2 AND "
                         "partition = ?3)) AND (?2 IS NOT NULL OR topic NOT LIKE '\\_\\_%' "
                         "ESCAPE '\\') ORDER BY topic, partition, t_ns, rowid");
    if (stmt == NULL) {
        return PLOT_INPUT;
    }
    g_autofree char *want_topic = NULL;
    int want_partition = -1;
    if (job->partition != NULL && !split_tp(job->partition, &want_topic, &want_partition)) {
        sqlite3_finalize(stmt);
        fprintf(stderr, "ksim plot: --partition %s: expected TOPIC-PARTITION\n", job->partition);
        return PLOT_INPUT;
    }
    sqlite3_bind_int64(stmt, 1, job->run_id);
    if (want_topic != NULL) {
        sqlite3_bind_text(stmt, 2, want_topic, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(stmt, 3, want_partition);
    }
    FILE *file = open_data(job, "isr.dat");
    if (file == NULL) {
        sqlite3_finalize(stmt);
        return PLOT_HOST;
    }
    /* Equal sizes would hide each other: each partition's line is lifted a
     * little, by at most 0.3 in all. */
    int64_t partition_count = count_partitions(job, want_topic, want_partition);
    double shift = partition_count > 1 ? MIN(0.04, 0.3 / (double)partition_count) : 0.0;
    GString *names = g_string_new("");
    int series = 0;
    int size_max = 1;
    g_autofree char *current = NULL;
    int64_t last_t_ns = -1;
    int last_size = 0;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        const char *topic = (const char *)sqlite3_column_text(stmt, 0);
        g_autofree char *name =
            g_strdup_printf("%s-%d", topic ? topic : "?", sqlite3_column_int(stmt, 1));
        int64_t t_ns = sqlite3_column_int64(stmt, 2);
        int size = isr_size((const char *)sqlite3_column_text(stmt, 3));
        if (current == NULL || strcmp(current, name) != 0) {
            if (current != NULL) {
                /* Close the previous series at the run's end. */
                fprintf(file, "%.6f\t%d\t%.6f\n\n\n", job->end_s, last_size,
                        last_size + shift * (series - 1));
            }
            g_free(current);
            current = g_strdup(name);
            g_string_append_printf(names, "%s%s", names->len ? " " : "", name);
            series++;
            last_t_ns = -1;
        }
        if (t_ns == last_t_ns) {
            continue;
        }
        last_t_ns = t_ns;
        last_size = size;
        size_max = MAX(size_max, size);
        fprintf(file, "%.6f\t%d\t%.6f\n", (double)t_ns / 1e9, size, size + shift * (series - 1));
    }
    if (current != NULL) {
        fprintf(file, "%.6f\t%d\t%.6f\n", job->end_s, last_size, last_size + shift * (series - 1));
    }
    sqlite3_finalize(stmt);
    fclose(file);
    if (series == 0) {
        fprintf(stderr, "ksim plot: run %" G_GINT64_FORMAT " has no partition state%s%s\n",
                job->run_id, job->partition ? " for " : "", job->partition ? job->partition : "");
        g_string_free(names, TRUE);
        return PLOT_INPUT;
    }
    if (!fault_windows(job)) {
        g_string_free(names, TRUE);
        return PLOT_HOST;
    }
    set_var_number(job, "xmax", job->end_s);
    set_var_int(job, "ymax", size_max);
    set_var_int(job, "series", series);
    set_var_int(job, "shifted", series > 1 ? 1 : 0);
    set_var_text(job, "names", names->str);
    set_title(job, "ISR size per partition");
    g_string_free(names, TRUE);
    return 0;
}

/* The first partition of the run (user topics first) when --partition is absent. */
static bool first_partition(struct plot_job *job, char **topic, int *partition)
{
    sqlite3_stmt *stmt = prepare(job->db, "SELECT topic, partition FROM partition_state "
                                          "WHERE run_id = ?1 ORDER BY topic LIKE '\\_\\_%' "
                                          "ESCAPE '\\', topic, partition LIMIT 1");
    bool found = false;
    if (stmt == NULL) {
        return false;
    }
    sqlite3_bind_int64(stmt, 1, job->run_id);
    if (sqlite3_step(stmt) == SQLITE_ROW) {
        *topic = g_strdup((const char *)sqlite3_column_text(stmt, 0));
        *partition = sqlite3_column_int(stmt, 1);
        found = true;
    }
    sqlite3_finalize(stmt);
    return found;
}

/* elections.dat: leader changes of the partition, from events. */
static bool election_marks(struct plot_job *job, const char *topic, int partition)
{
    sqlite3_stmt *stmt =
        prepare(job->db, "SELECT t_ns, kind, broker, detail FROM events WHERE run_id = ?1 "
                         "AND topic = ?2 AND partition = ?3 AND (kind LIKE '%elect%' OR "
                         "kind LIKE '%leader%') ORDER BY t_ns, rowid");
    if (stmt == NULL) {
        return false;
    }
    FILE *file = open_data(job, "elections.dat");
    if (file == NULL) {
        sqlite3_finalize(stmt);
        return false;
    }
    sqlite3_bind_int64(stmt, 1, job->run_id);
    sqlite3_bind_text(stmt, 2, topic, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(stmt, 3, partition);
    int count = 0;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        const char *kind = (const char *)sqlite3_column_text(stmt, 1);
        int broker = sqlite3_column_type(stmt, 2) == SQLITE_NULL ? -1 : sqlite3_column_int(stmt, 2);
        g_autofree char *label = NULL;
        if (kind != NULL && strstr(kind, "unclean") != NULL) {
            label = g_strdup_printf("unclean: leader %d", broker);
        } else if (kind != NULL && strstr(kind, "no_leader") != NULL) {
            label = g_strdup("no leader");
        } else if (broker >= 0) {
            label = g_strdup_printf("leader %d", broker);
        } else {
            label = g_strdup(kind ? kind : "election");
        }
        put_number(file, (double)sqlite3_column_int64(stmt, 0) / 1e9);
        fputc('\t', file);
        put_label(file, label);
        fputc('\t', file);
        put_number(file, 0.55 - 0.06 * (double)(count % 4));
        fputc('\n', file);
        count++;
    }
    sqlite3_finalize(stmt);
    fclose(file);
    set_var_int(job, "has_elections", count > 0 ? 1 : 0);
    return true;
}

static int plot_hw(struct plot_job *job)
{
    state_end(job);
    g_autofree char *topic = NULL;
    int partition = -1;
    if (job->partition != NULL) {
        if (!split_tp(job->partition, &topic, &partition)) {
            fprintf(stderr, "ksim plot: --partition %s: expected TOPIC-PARTITION\n",
                    job->partition);
            return PLOT_INPUT;
        }
    } else if (!first_partition(job, &topic, &partition)) {
        fprintf(stderr, "ksim plot: run %" G_GINT64_FORMAT " has no partition state\n",
                job->run_id);
        return PLOT_INPUT;
    }
    sqlite3_stmt *stmt =
        prepare(job->db, "SELECT broker, t_ns, leo, hw FROM partition_state WHERE "
                         "run_id = ?1 AND topic = ?2 AND partition = ?3 AND broker IS "
                         "NOT NULL ORDER BY broker, t_ns, rowid");
    if (stmt == NULL) {
        return PLOT_INPUT;
    }
    FILE *file = open_data(job, "hw.dat");
    if (file == NULL) {
        sqlite3_finalize(stmt);
        return PLOT_HOST;
    }
    sqlite3_bind_int64(stmt, 1, job->run_id);
    sqlite3_bind_text(stmt, 2, topic, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(stmt, 3, partition);
    GString *brokers = g_string_new("");
    int series = 0;
    int current = -1;
    bool down = false;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        int broker = sqlite3_column_int(stmt, 0);
        if (series == 0 || broker != current) {
            if (series > 0) {
                fputs("\n\n", file);
            }
            current = broker;
            down = false;
            series++;
            g_string_append_printf(brokers, "%s%d", brokers->len ? " " : "", broker);
        }
        if (sqlite3_column_type(stmt, 2) == SQLITE_NULL) {
            /* The broker is down: one blank line breaks its lines. */
            if (!down) {
                fputc('\n', file);
            }
            down = true;
            continue;
        }
        down = false;
        put_number(file, (double)sqlite3_column_int64(stmt, 1) / 1e9);
        for (int column = 2; column <= 3; column++) {
            fputc('\t', file);
            put_number(file, sqlite3_column_type(stmt, column) == SQLITE_NULL
                                 ? NAN
                                 : (double)sqlite3_column_int64(stmt, column));
        }
        fputc('\n', file);
    }
    sqlite3_finalize(stmt);
    fclose(file);
    if (series == 0) {
        fprintf(stderr, "ksim plot: run %" G_GINT64_FORMAT " has no partition state for %s-%d\n",
                job->run_id, topic, partition);
        g_string_free(brokers, TRUE);
        return PLOT_INPUT;
    }
    if (!election_marks(job, topic, partition) || !fault_windows(job)) {
        g_string_free(brokers, TRUE);
        return PLOT_HOST;
    }
    set_var_number(job, "xmax", job->end_s);
    set_var_int(job, "series", series);
    set_var_text(job, "brokers", brokers->str);
    g_autofree char *what = g_strdup_printf("LEO and HW of %s-%d per replica", topic, partition);
    set_title(job, what);
    g_string_free(brokers, TRUE);
    return 0;
}

/* Each mirror's lag over time (table mirror_lag, runs with a [mirror NAME]),
 * with the fault windows (a cut link, a lost cluster) shaded. */
static int plot_mirror_lag(struct plot_job *job)
{
    state_end(job);
    sqlite3_stmt *stmt = prepare(job->db, "SELECT mirror, t_ns, lag FROM mirror_lag WHERE "
                                          "run_id = ?1 ORDER BY mirror, t_ns, rowid");
    if (stmt == NULL) {
        return PLOT_INPUT;
    }
    FILE *file = open_data(job, "mirror-lag.dat");
    if (file == NULL) {
        sqlite3_finalize(stmt);
        return PLOT_HOST;
    }
    sqlite3_bind_int64(stmt, 1, job->run_id);
    GString *mirrors = g_string_new("");
    g_autofree char *current = NULL;
    int series = 0;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        const char *mirror = (const char *)sqlite3_column_text(stmt, 0);
        if (current == NULL || strcmp(mirror, current) != 0) {
            if (series > 0) {
                fputs("\n\n", file);
            }
            g_free(current);
            current = g_strdup(mirror);
            series++;
            g_string_append_printf(mirrors, "%s%s", mirrors->len ? " " : "", mirror);
        }
        put_number(file, (double)sqlite3_column_int64(stmt, 1) / 1e9);
        fputc('\t', file);
        put_number(file, (double)sqlite3_column_int64(stmt, 2));
        fputc('\n', file);
    }
    sqlite3_finalize(stmt);
    fclose(file);
    if (series == 0) {
        fprintf(stderr,
                "ksim plot: run %" G_GINT64_FORMAT " has no mirror lag (a scenario with a "
                "[mirror NAME] records it)\n",
                job->run_id);
        g_string_free(mirrors, TRUE);
        return PLOT_INPUT;
    }
    if (!fault_windows(job)) {
        g_string_free(mirrors, TRUE);
        return PLOT_HOST;
    }
    set_var_number(job, "xmax", job->end_s);
    set_var_int(job, "series", series);
    set_var_text(job, "mirrors", mirrors->str);
    set_title(job, "mirror lag (records the target has not yet acknowledged)");
    g_string_free(mirrors, TRUE);
    return 0;
}

/* ---- per setting (sweeps) -------------------------------------------------------- */

struct setting_stats {
    char *label;
    int64_t runs;
    double sum[2];
    double minimum[2];
    double maximum[2];
};

static void setting_clear(gpointer data)
{
    struct setting_stats *stats = data;
    g_free(stats->label);
}

/* Groups runs by setting: sweep_runs.setting when the database has sweep
 * runs (the scenario's name is prefixed when there are several scenarios),
 * else the scenario name. Settings keep the order of their first run. */
static GArray *collect_settings(struct plot_job *job, const char *metric_a, const char *metric_b)
{
    sqlite3_stmt *probe = NULL;
    bool have_sweeps = false;
    if (sqlite3_prepare_v2(job->db, "SELECT 1 FROM sweep_runs LIMIT 1", -1, &probe, NULL) ==
        SQLITE_OK) {
        have_sweeps = sqlite3_step(probe) == SQLITE_ROW;
    }
    sqlite3_finalize(probe);
    int64_t scenario_count = 0;
    if (sqlite3_prepare_v2(job->db, "SELECT count(DISTINCT scenario) FROM runs", -1, &probe,
                           NULL) == SQLITE_OK &&
        sqlite3_step(probe) == SQLITE_ROW) {
        scenario_count = sqlite3_column_int64(probe, 0);
    }
    sqlite3_finalize(probe);
    const char *sql_sweep =
        "SELECT r.run_id, r.scenario, w.setting, "
        "(SELECT value FROM summary s WHERE s.run_id = r.run_id AND s.metric = ?1), "
        "(SELECT value FROM summary s WHERE s.run_id = r.run_id AND s.metric = ?2) "
        "FROM runs r JOIN sweep_runs w ON w.run_id = r.run_id ORDER BY r.run_id";
    const char *sql_plain =
        "SELECT r.run_id, r.scenario, r.scenario, "
        "(SELECT value FROM summary s WHERE s.run_id = r.run_id AND s.metric = ?1), "
        "(SELECT value FROM summary s WHERE s.run_id = r.run_id AND s.metric = ?2) "
        "FROM runs r ORDER BY r.run_id";
    sqlite3_stmt *stmt = prepare(job->db, have_sweeps ? sql_sweep : sql_plain);
    if (stmt == NULL) {
        return NULL;
    }
    sqlite3_bind_text(stmt, 1, metric_a, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 2, metric_b ? metric_b : metric_a, -1, SQLITE_STATIC);
    GArray *settings = g_array_new(FALSE, TRUE, sizeof(struct setting_stats));
    g_array_set_clear_func(settings, setting_clear);
    GHashTable *index = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        const char *scenario = (const char *)sqlite3_column_text(stmt, 1);
        const char *setting = (const char *)sqlite3_column_text(stmt, 2);
        if (sqlite3_column_type(stmt, 3) == SQLITE_NULL) {
            continue; /* a run without summary rows (killed) */
        }
        g_autofree char *label =
            have_sweeps && scenario_count > 1
                ? g_strdup_printf("%s: %s", scenario ? scenario : "?", setting ? setting : "")
                : g_strdup(setting && *setting ? setting : "(default)");
        gpointer found = NULL;
        guint position;
        if (g_hash_table_lookup_extended(index, label, NULL, &found)) {
            position = GPOINTER_TO_UINT(found);
        } else {
            struct setting_stats stats = { .label = g_strdup(label),
                                           .minimum = { INFINITY, INFINITY },
                                           .maximum = { -INFINITY, -INFINITY } };
            position = settings->len;
            g_array_append_val(settings, stats);
            g_hash_table_insert(index, g_strdup(label), GUINT_TO_POINTER(position));
        }
        struct setting_stats *stats = &g_array_index(settings, struct setting_stats, position);
        stats->runs++;
        for (int m = 0; m < 2; m++) {
            double value = sqlite3_column_double(stmt, 3 + m);
            stats->sum[m] += value;
            stats->minimum[m] = MIN(stats->minimum[m], value);
            stats->maximum[m] = MAX(stats->maximum[m], value);
        }
    }
    sqlite3_finalize(stmt);
    g_hash_table_unref(index);
    return settings;
}

/* ---- tick labels of the settings (sweeps) ---------------------------------------- */

/* A sweep label is "KEY=VALUE, KEY=VALUE" (sim/sweep.c). Keys on a slide
 * are shortened to what follows their section ("producer.p1.acks" ->
 * "acks", "topic.orders.min.insync.replicas" -> "min.insync.replicas"),
 * when that stays unambiguous among the varied keys; the x label then names
 * the full keys. */
static const char *key_tail(const char *key)
{
    static const char *const sections[] = { "producer.", "consumer.", "topic.", "fault." };
    for (size_t i = 0; i < G_N_ELEMENTS(sections); i++) {
        if (g_str_has_prefix(key, sections[i])) {
            const char *name_end = strchr(key + strlen(sections[i]), '.');
            return name_end != NULL ? name_end + 1 : key;
        }
    }
    if (g_str_has_prefix(key, "cluster.") || g_str_has_prefix(key, "scenario.")) {
        return strchr(key, '.') + 1;
    }
    return key;
}

/* The assignments of one label. Owned: g_strfreev. */
static char **label_parts(const char *label)
{
    return g_strsplit(label, ", ", -1);
}

/* The varied keys, in order, from the first setting; NULL if the labels are
 * not KEY=VALUE lists with the same keys (plain scenario names). */
static GPtrArray *common_keys(const GArray *settings)
{
    GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < settings->len; i++) {
        const struct setting_stats *stats = &g_array_index(settings, struct setting_stats, i);
        g_auto(GStrv) parts = label_parts(stats->label);
        guint count = g_strv_length(parts);
        if (i > 0 && count != keys->len) {
            g_ptr_array_free(keys, TRUE);
            return NULL;
        }
        for (guint j = 0; j < count; j++) {
            const char *equals = strchr(parts[j], '=');
            if (equals == NULL) {
                g_ptr_array_free(keys, TRUE);
                return NULL;
            }
            g_autofree char *key = g_strndup(parts[j], (gsize)(equals - parts[j]));
            if (i == 0) {
                g_ptr_array_add(keys, g_steal_pointer(&key));
            } else if (strcmp(key, g_ptr_array_index(keys, j)) != 0) {
                g_ptr_array_free(keys, TRUE);
                return NULL;
            }
        }
    }
    return keys;
}

static char *varied_keys(const GArray *settings)
{
    GPtrArray *keys = common_keys(settings);
    if (keys == NULL) {
        return NULL;
    }
    g_ptr_array_add(keys, NULL);
    char *text = g_strjoinv(", ", (char **)keys->pdata);
    g_ptr_array_free(keys, TRUE);
    return text;
}

/* Appends text to a gnuplot double-quoted string. */
static void append_quoted(GString *out, const char *text)
{
    for (const char *c = text; *c != '\0'; c++) {
        if (*c == '"' || *c == '\\') {
            g_string_append_c(out, '\\');
        }
        g_string_append_c(out, *c);
    }
}

/* One assignment of a tick, wrapped to lines of at most width characters
 * after a '.', '=', '-' or '_' (at most 3 lines, the last cut with "..."
 * when still too long). Returns the lines used. */
static int append_wrapped(GString *out, const char *text, int width)
{
    int lines = 0;
    const char *rest = text;
    while (*rest != '\0') {
        if (lines > 0) {
            g_string_append(out, "\\n");
        }
        lines++;
        size_t length = strlen(rest);
        if ((int)length <= width || width < 4) {
            append_quoted(out, rest);
            break;
        }
        if (lines == 3) {
            g_autofree char *cut = g_strndup(rest, (gsize)(width - 3));
            append_quoted(out, cut);
            g_string_append(out, "...");
            break;
        }
        int split = width;
        while (split > width / 2 && strchr(".=-_", rest[split - 1]) == NULL) {
            split--;
        }
        if (split <= width / 2) {
            split = width;
        }
        g_autofree char *head = g_strndup(rest, (gsize)split);
        append_quoted(out, head);
        rest += split;
    }
    return lines;
}

/* gnuplot's `set xtics (...)` for the settings: one line per assignment,
 * keys shortened when unambiguous (*shortened), each line at most as wide
 * as a tick's share of the plot (about 900 pixels, 7 a character); when
 * even that share is too narrow, one line each, slanted (*rotate). */
static char *tick_labels(const GArray *settings, bool *shortened, bool *rotate, int *lines_max)
{
    GPtrArray *keys = common_keys(settings);
    *shortened = false;
    if (keys != NULL) {
        *shortened = true;
        for (guint i = 0; i < keys->len && *shortened; i++) {
            const char *tail = key_tail(g_ptr_array_index(keys, i));
            *shortened = strcmp(tail, g_ptr_array_index(keys, i)) != 0;
            for (guint j = 0; j < i; j++) {
                *shortened = *shortened && strcmp(tail, key_tail(g_ptr_array_index(keys, j))) != 0;
            }
        }
    }
    /* About 950 pixels of plot width (the key is above it), 8 a character,
     * a little gap between. */
    int width = (int)(950.0 / 8.0 / (double)MAX(settings->len, 1u)) - 1;
    *rotate = width < 8;
    *lines_max = 1;
    GString *out = g_string_new("set xtics (");
    for (guint i = 0; i < settings->len; i++) {
        const struct setting_stats *stats = &g_array_index(settings, struct setting_stats, i);
        g_auto(GStrv) parts = keys != NULL ? label_parts(stats->label) : NULL;
        g_string_append_printf(out, "%s\"", i > 0 ? ", " : "");
        int lines = 0;
        if (parts == NULL) {
            lines = append_wrapped(out, stats->label, *rotate ? 40 : width);
        }
        for (guint j = 0; parts != NULL && parts[j] != NULL; j++) {
            const char *equals = strchr(parts[j], '=');
            g_autofree char *key = g_strndup(parts[j], (gsize)(equals - parts[j]));
            g_autofree char *line =
                g_strdup_printf("%s=%s", *shortened ? key_tail(key) : key, equals + 1);
            if (j > 0) {
                g_string_append(out, *rotate ? ", " : "\\n");
            }
            lines += append_wrapped(out, line, *rotate ? 60 : width);
        }
        *lines_max = MAX(*lines_max, *rotate ? 1 : lines);
        g_string_append_printf(out, "\" %u", i);
    }
    g_string_append(out, ")");
    if (keys != NULL) {
        g_ptr_array_free(keys, TRUE);
    }
    return g_string_free(out, FALSE);
}

static int plot_settings(struct plot_job *job, bool loss)
{
    GArray *settings = loss ? collect_settings(job, "acked_lost", "duplicates")
                            : collect_settings(job, "unavailable_ms", "produce_unavailable_ms");
    if (settings == NULL) {
        return PLOT_INPUT;
    }
    if (settings->len == 0) {
        fprintf(stderr, "ksim plot: the database holds no run with a summary\n");
        g_array_unref(settings);
        return PLOT_INPUT;
    }
    FILE *file = open_data(job, "settings.dat");
    if (file == NULL) {
        g_array_unref(settings);
        return PLOT_HOST;
    }
    size_t label_bytes_max = 0;
    for (guint i = 0; i < settings->len; i++) {
        struct setting_stats *stats = &g_array_index(settings, struct setting_stats, i);
        fprintf(file, "%u\t", i);
        put_label(file, stats->label);
        fprintf(file, "\t%" G_GINT64_FORMAT, stats->runs);
        for (int m = 0; m < 2; m++) {
            fputc('\t', file);
            put_number(file, stats->sum[m] / (double)stats->runs);
            fputc('\t', file);
            put_number(file, stats->minimum[m]);
            fputc('\t', file);
            put_number(file, stats->maximum[m]);
        }
        fputc('\n', file);
        label_bytes_max = MAX(label_bytes_max, strlen(stats->label));
    }
    fclose(file);
    set_var_int(job, "count", settings->len);
    (void)label_bytes_max;
    bool shortened = false;
    bool rotate = false;
    int tick_lines = 1;
    g_autofree char *xtics = tick_labels(settings, &shortened, &rotate, &tick_lines);
    set_var_text(job, "xtics_cmd", xtics);
    set_var_int(job, "rotate", rotate ? 1 : 0);
    set_var_int(job, "tick_lines", tick_lines);
    int64_t run_total = 0;
    int64_t runs_min = G_MAXINT64;
    int64_t runs_max = 0;
    for (guint i = 0; i < settings->len; i++) {
        struct setting_stats *stats = &g_array_index(settings, struct setting_stats, i);
        run_total += stats->runs;
        runs_min = MIN(runs_min, stats->runs);
        runs_max = MAX(runs_max, stats->runs);
    }
    g_autofree char *runs_text =
        runs_min == runs_max
            ? g_strdup_printf("%" G_GINT64_FORMAT, runs_min)
            : g_strdup_printf("%" G_GINT64_FORMAT "-%" G_GINT64_FORMAT, runs_min, runs_max);
    g_autofree char *keys = shortened ? varied_keys(settings) : NULL;
    g_autofree char *xlabel = g_strdup_printf("setting%s%s\nbars: mean over %s run%s each; "
                                              "whiskers: min and max",
                                              keys != NULL ? ": " : "", keys ? keys : "", runs_text,
                                              runs_max == 1 ? "" : "s");
    set_var_text(job, "xlabel_text", xlabel);
    sqlite3_stmt *stmt = prepare(job->db, "SELECT MIN(scenario), count(DISTINCT scenario) "
                                          "FROM runs");
    g_autofree char *title = NULL;
    if (stmt != NULL && sqlite3_step(stmt) == SQLITE_ROW) {
        const char *scenario = (const char *)sqlite3_column_text(stmt, 0);
        title = g_strdup_printf(
            "%s per setting - %s%s (%" G_GINT64_FORMAT " runs)",
            loss ? "Acknowledged records lost and duplicated" : "Unavailability",
            scenario ? scenario : "?", sqlite3_column_int64(stmt, 1) > 1 ? " and others" : "",
            (gint64)run_total);
    }
    sqlite3_finalize(stmt);
    set_var_text(job, "title_text", title ? title : "per setting");
    g_array_unref(settings);
    return 0;
}

/* ---- gnuplot ------------------------------------------------------------------- */

char *ks_plot_script_dir(void)
{
    const char *env = g_getenv("KSIM_PLOT_DIR");
    if (env != NULL && *env != '\0') {
        return g_strdup(env);
    }
    g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
    if (exe != NULL) {
        g_autofree char *bin = g_path_get_dirname(exe);
        char *candidate = g_build_filename(bin, "..", "plots", NULL);
        g_autofree char *probe = g_build_filename(candidate, "common.gp", NULL);
        if (g_file_test(probe, G_FILE_TEST_IS_REGULAR)) {
            return candidate;
        }
        g_free(candidate);
    }
    return g_strdup("plots");
}

static int run_gnuplot(struct plot_job *job, const char *gnuplot, const char *script_dir,
                       const char *output, bool svg)
{
    g_autofree char *script_name = g_strdup_printf("%s.gp", kind_names[job->kind]);
    g_autofree char *script = g_build_filename(script_dir, script_name, NULL);
    if (!g_file_test(script, G_FILE_TEST_IS_REGULAR)) {
        fprintf(stderr,
                "ksim plot: %s: no such script (set KSIM_PLOT_DIR to ksim's plots "
                "folder)\n",
                script);
        return PLOT_INPUT;
    }
    set_var_text(job, "term", svg ? "svg" : "png");
    set_var_text(job, "outfile", output);
    set_var_text(job, "datadir", job->datadir);
    set_var_text(job, "scriptdir", script_dir);
    const char *argv[] = { gnuplot, "-e", job->variables->str, script, NULL };
    g_autofree char *child_out = NULL;
    g_autofree char *child_err = NULL;
    int status = 0;
    GError *error = NULL;
    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &child_out,
                      &child_err, &status, &error)) {
        fprintf(stderr, "ksim plot: cannot run gnuplot: %s\n", error->message);
        g_error_free(error);
        return PLOT_HOST;
    }
    if (!g_spawn_check_wait_status(status, &error)) {
        fprintf(stderr, "ksim plot: gnuplot failed (%s):\n%s", error->message,
                child_err ? child_err : "");
        g_error_free(error);
        return PLOT_HOST;
    }
    struct stat info;
    if (g_stat(output, &info) != 0 || info.st_size == 0) {
        fprintf(stderr, "ksim plot: gnuplot wrote nothing to %s:\n%s", output,
                child_err ? child_err : "");
        return PLOT_HOST;
    }
    return 0;
}

static void remove_folder(const char *path)
{
    GDir *dir = g_dir_open(path, 0, NULL);
    if (dir != NULL) {
        const char *name;
        while ((name = g_dir_read_name(dir)) != NULL) {
            g_autofree char *file = g_build_filename(path, name, NULL);
            g_unlink(file);
        }
        g_dir_close(dir);
    }
    g_rmdir(path);
}

/* The usage on out; returns code (0 for --help, 2 for a bad command line). */
static int usage(FILE *out, int code)
{
    fprintf(out,
            "usage: ksim plot DB [--run ID] --kind KIND [-o FILE.png|FILE.svg]\n"
            "                    [--partition TP] [--from TIME] [--to TIME]\n"
            "  KIND: throughput | latency | isr | hw (per run; default the latest run)\n"
            "        loss | availability (per sweep setting, over every run)\n"
            "  --partition TP   one partition only (throughput, latency and isr: its records or\n"
            "                   its line; hw: which partition, default the first)\n"
            "  --from, --to     zoom the time axis (12s, 1500ms, or bare seconds)\n"
            "  default output: KIND.png\n"
            "\n"
            "Titles name the scenario, its --set overrides (or the sweep setting), the seed\n"
            "and the run.\n"
            "\n"
            "Examples:\n"
            "  ksim plot ksim.db --kind hw -o hw.svg\n"
            "  ksim plot ksim.db --run 2 --kind hw --partition orders-0 --from 9s --to 12s\n");
    return code;
}

/* The SPEC 4 tables the plots read; false with *error naming a missing one. */
bool ks_plot_has_tables(struct sqlite3 *db, const char *db_path, GError **error)
{
    static const char *const tables[] = { "runs", "summary", "events", "records",
                                          "partition_state" };
    for (size_t i = 0; i < G_N_ELEMENTS(tables); i++) {
        sqlite3_stmt *stmt = NULL;
        bool found = sqlite3_prepare_v2(db,
                                        "SELECT 1 FROM sqlite_master WHERE type = 'table' "
                                        "AND name = ?1",
                                        -1, &stmt, NULL) == SQLITE_OK &&
                     sqlite3_bind_text(stmt, 1, tables[i], -1, SQLITE_STATIC) == SQLITE_OK &&
                     sqlite3_step(stmt) == SQLITE_ROW;
        sqlite3_finalize(stmt);
        if (!found) {
            g_set_error(error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_FOREIGN,
                        "%s:1: not a ksim database (no %s table)", db_path, tables[i]);
            return false;
        }
    }
    return true;
}

static bool parse_kind(const char *text, enum plot_kind *kind)
{
    for (int i = 0; i < PLOT_KIND_COUNT; i++) {
        if (strcmp(text, kind_names[i]) == 0) {
            *kind = (enum plot_kind)i;
            return true;
        }
    }
    return false;
}

static int plot_kind_data(struct plot_job *job, bool run_given)
{
    bool per_run = job->kind != PLOT_LOSS && job->kind != PLOT_AVAILABILITY;
    if (per_run) {
        int code = load_run(job, run_given);
        if (code != 0) {
            return code;
        }
    }
    switch (job->kind) {
    case PLOT_THROUGHPUT: return plot_throughput(job);
    case PLOT_LATENCY: return plot_latency(job);
    case PLOT_ISR: return plot_isr(job);
    case PLOT_HW: return plot_hw(job);
    case PLOT_LOSS: return plot_settings(job, true);
    case PLOT_AVAILABILITY: return plot_settings(job, false);
    case PLOT_MIRROR_LAG: return plot_mirror_lag(job);
    case PLOT_KIND_COUNT: break;
    }
    return PLOT_INPUT;
}

/* The zoom of --from/--to: the x range of the per-run plots. */
static int apply_range(struct plot_job *job)
{
    if (job->from_s < 0 && job->to_s < 0) {
        return 0;
    }
    double from_s = job->from_s >= 0 ? job->from_s : 0.0;
    double to_s = job->to_s >= 0 ? job->to_s : job->end_s;
    if (to_s <= from_s) {
        fprintf(stderr, "ksim plot: --from %.3fs --to %.3fs: an empty range\n", from_s, to_s);
        return PLOT_INPUT;
    }
    set_var_number(job, "xmin", from_s);
    set_var_number(job, "xmax", to_s);
    set_var_int(job, "zoomed", 1);
    return 0;
}

int ks_plot_write(sqlite3 *db, const struct ks_plot_request *request)
{
    struct plot_job job = { .db = db,
                            .run_id = request->run_id,
                            .partition = request->partition,
                            .from_s = request->from_s,
                            .to_s = request->to_s };
    if (!parse_kind(request->kind, &job.kind)) {
        fprintf(stderr,
                "ksim plot: --kind %s: expected throughput, latency, isr, hw, loss, mirror-lag or "
                "availability\n",
                request->kind);
        return PLOT_INPUT;
    }
    bool svg = g_str_has_suffix(request->output, ".svg");
    if (!svg && !g_str_has_suffix(request->output, ".png")) {
        fprintf(stderr, "ksim plot: -o %s: the name must end in .png or .svg\n", request->output);
        return PLOT_INPUT;
    }
    g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
    if (gnuplot == NULL) {
        fprintf(stderr, "ksim plot: gnuplot is not installed (Debian: apt-get install "
                        "gnuplot-nox)\n");
        return PLOT_INPUT;
    }
    GError *error = NULL;
    job.datadir = g_dir_make_tmp("ksim-plot-XXXXXX", &error);
    if (job.datadir == NULL) {
        fprintf(stderr, "ksim plot: %s\n", error->message);
        g_error_free(error);
        return PLOT_HOST;
    }
    job.variables = g_string_new("");
    g_autofree char *script_dir = ks_plot_script_dir();
    int code = plot_kind_data(&job, request->run_id > 0);
    if (code == 0) {
        code = apply_range(&job);
    }
    if (code == 0) {
        code = run_gnuplot(&job, gnuplot, script_dir, request->output, svg);
    }
    remove_folder(job.datadir);
    g_free(job.datadir);
    g_free(job.scenario);
    g_free(job.overrides);
    g_string_free(job.variables, TRUE);
    return code;
}

/* --from/--to: a duration as scenario files write it, or bare seconds. */
static bool parse_time_s(const char *text, double *out_s)
{
    int64_t ns = 0;
    g_autofree char *with_unit = NULL;
    const char *end = text + strspn(text, "0123456789.");
    if (*end == '\0') {
        with_unit = g_strdup_printf("%ss", text);
        text = with_unit;
    }
    if (!ks_scenario_parse_duration(text, &ns, NULL)) {
        return false;
    }
    *out_s = (double)ns / 1e9;
    return true;
}

int ks_plot_main(int argc, char **argv)
{
    const char *db_path = NULL;
    const char *output = NULL;
    const char *kind_text = NULL;
    struct ks_plot_request request = { .run_id = 0, .from_s = -1, .to_s = -1 };
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            return usage(stdout, 0);
        } else if (strcmp(arg, "--run") == 0 && has_value) {
            char *end = NULL;
            request.run_id = g_ascii_strtoll(argv[++i], &end, 10);
            if (*end != '\0' || request.run_id <= 0) {
                fprintf(stderr, "ksim plot: --run %s: expected a run id (1, 2, ...)\n", argv[i]);
                return 2;
            }
        } else if (strcmp(arg, "--kind") == 0 && has_value) {
            kind_text = argv[++i];
        } else if ((strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0) && has_value) {
            output = argv[++i];
        } else if (strcmp(arg, "--partition") == 0 && has_value) {
            request.partition = argv[++i];
        } else if ((strcmp(arg, "--from") == 0 || strcmp(arg, "--to") == 0) && has_value) {
            double *target = strcmp(arg, "--from") == 0 ? &request.from_s : &request.to_s;
            if (!parse_time_s(argv[++i], target)) {
                fprintf(stderr, "ksim plot: %s %s: expected a time such as 12s, 1500ms or 12.5\n",
                        arg, argv[i]);
                return 2;
            }
        } else if (arg[0] == '-') {
            fprintf(stderr, "ksim plot: %s: unknown option or missing value\n", arg);
            return usage(stderr, 2);
        } else if (db_path == NULL) {
            db_path = arg;
        } else {
            fprintf(stderr, "ksim plot: %s: only one database\n", arg);
            return usage(stderr, 2);
        }
    }
    if (db_path == NULL || kind_text == NULL) {
        return usage(stderr, 2);
    }
    enum plot_kind kind;
    if (!parse_kind(kind_text, &kind)) {
        fprintf(stderr,
                "ksim plot: --kind %s: expected throughput, latency, isr, hw, loss, mirror-lag or "
                "availability\n",
                kind_text);
        return 2;
    }
    if ((kind == PLOT_LOSS || kind == PLOT_AVAILABILITY) &&
        (request.from_s >= 0 || request.to_s >= 0 || request.partition != NULL)) {
        fprintf(stderr, "ksim plot: --from, --to and --partition apply to the per-run kinds "
                        "(throughput, latency, isr, hw)\n");
        return 2;
    }
    g_autofree char *default_output = g_strdup_printf("%s.png", kind_text);
    request.kind = kind_text;
    request.output = output != NULL ? output : default_output;
    if (!g_str_has_suffix(request.output, ".svg") && !g_str_has_suffix(request.output, ".png")) {
        fprintf(stderr, "ksim plot: -o %s: the name must end in .png or .svg\n", request.output);
        return 2;
    }
    GError *error = NULL;
    /* The recorder's read-only open: a database known to be ksim's, read
     * without leaving -wal/-shm files; then every table a plot reads must be
     * there, or a plot would come out empty and look like a result. */
    struct ks_recorder *recorder = ks_recorder_open_readonly(db_path, &error);
    if (recorder == NULL || !ks_plot_has_tables(ks_recorder_db(recorder), db_path, &error)) {
        fprintf(stderr, "ksim plot: %s\n", error->message);
        g_error_free(error);
        ks_recorder_close(recorder);
        return 2;
    }
    int code = ks_plot_write(ks_recorder_db(recorder), &request);
    if (code == 0 && kind != PLOT_LOSS && kind != PLOT_AVAILABILITY) {
        int64_t found_id = 0;
        g_autofree char *run_dir = NULL;
        ks_recorder_run_dir(recorder, request.run_id, &found_id, &run_dir, NULL);
        fprintf(stderr, "ksim plot: wrote %s (run %" G_GINT64_FORMAT "; its logs: %s)\n",
                request.output, found_id, run_dir != NULL ? run_dir : "not kept");
    } else if (code == 0) {
        fprintf(stderr, "ksim plot: wrote %s\n", request.output);
    }
    ks_recorder_close(recorder);
    return code;
}
