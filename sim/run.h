/*
** sim/run.h: one scenario run, start to verdict (SPEC sections 1, 4, 5).
**
**   ks_run_scenario(scenario, options, result)
**     build the world and the cluster   (ks_world_new, ks_cluster_new/start)
**     schedule the faults               (timed events on node 0, triggers checked
**                                        after every event)
**     run to `duration`, then the final phase (final.heal: stop producers,
**     heal, resume, restart, drain until converged or final.drain passes)
**     final read and checker            (every SPEC 5 metric)
**     expectations                      ([expect], PASS/FAIL each)
**     recorder                          (one SQLite transaction per run)
**     print                             (timeline, summary table, verdicts, or
**                                        one JSON object with --json)
**
** Used by `ksim run`, `ksim check`, and by sweep/explore (which run many
** scenarios in one process: nothing here keeps global state).
*/
#pragma once

#include "scenario.h"

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ks_recorder; /* sim/recorder.h */

struct ks_run_options {
    uint64_t seed; /* used when seed_given; else scenario->seed */
    bool seed_given;
    const char *db_path;          /* SQLite file; NULL: no database (unless recorder) */
    struct ks_recorder *recorder; /* not owned; an open database to use instead of db_path */
    const char *run_dir;          /* NULL: ks_run_default_dir; emptied first if a ksim run folder */
    bool run_dir_discarded;       /* the caller removes run_dir after the run: runs.run_dir NULL */
    FILE *out;                    /* timeline, summary and verdicts; NULL = silent */
    bool explain;                 /* narrate each timeline line (needs out) */
    bool json;                    /* print one JSON object on out instead of the text */
    bool quiet;                   /* only the verdict line on out */
    bool progress;                /* progress on stderr (the caller checks isatty) */
    const char *trace_path;       /* every world event to this file; NULL: none */
    /* The --set assignments as given, printed in the reproduce line; may be NULL. */
    const char *const *set_assignments;
    size_t set_count;
};

#define KS_RUN_FAILURE_BYTES 512

struct ks_run_result {
    int64_t run_id; /* runs.run_id, or 0 without a database */
    uint64_t seed;
    uint64_t trace_hash;
    double metrics[KS_METRIC_COUNT]; /* SPEC 5 order (enum ks_metric); trace_hash's
                                        entry holds the hash's low 53 bits only */
    int expect_count;
    int expect_failed;
    char first_failure[KS_RUN_FAILURE_BYTES]; /* "expr (actual X)" of the first FAIL, or "" */
    char verdict[16];  /* "PASS" or "FAIL" (PASS also when there is no [expect]) */
    int64_t wall_ms;   /* wall time of the whole run (never reaches the world) */
    int64_t record_ms; /* of which spent in the recorder */
    bool mirror_metrics; /* the scenario has a [mirror NAME]: the mirror metrics are shown */
    bool eos_metrics;  /* a consumer is a processor: eos_missing, eos_duplicates are shown */
    bool txn_metrics;  /* a producer is transactional: the txn_* metrics are shown */
};

/* Whether a metric is part of the run's summary: the transaction metrics
 * only when a producer sets transactional.id, eos_missing and eos_duplicates
 * only when a consumer has output.topic (so other runs' outputs keep their
 * keys). */
bool ks_run_metric_shown(const struct ks_run_result *result, enum ks_metric metric);

/* Runs a finalized scenario. Returns the exit code of SPEC 1: 0 every
 * expectation held, 1 one failed, 2 bad input (unusable database, trace file
 * or run folder, or a run folder locked by another run of the same
 * settings: *error says what, nothing was written), 3 internal error or a
 * host I/O failure (*error set). *result is filled for 0 and 1. The run
 * folder is locked (flock on its marker file) from phase 1 to the end. */
int ks_run_scenario(const struct ks_scenario *scenario, const struct ks_run_options *options,
                    struct ks_run_result *result, GError **error);

/* A run folder's name, "<name>-s<seed>-<hash>": hash is the first 8 hex
 * digits of the SHA-256 of the scenario's canonical params JSON, so that two
 * runs with different settings never share a folder, and the same settings
 * always get the same one. Owned: g_free. */
char *ks_run_dir_name(const struct ks_scenario *scenario, uint64_t seed);

/* The run folder used when options->run_dir is NULL: "runs/" +
 * ks_run_dir_name. Owned: g_free. */
char *ks_run_default_dir(const struct ks_scenario *scenario, uint64_t seed);

/* Formats a metric value as the summary table and --json show it (integers
 * without a fraction, latencies with 3 decimals, trace_hash as 16 hex
 * digits). Returns buffer. */
char *ks_run_format_metric(const struct ks_run_result *result, enum ks_metric metric, char *buffer,
                           size_t buffer_bytes);
