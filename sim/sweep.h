/*
** sim/sweep.h: the pieces of `ksim sweep` and `ksim explore` that tests and
** other commands reuse: seed ranges, shards, and the pool of worker
** processes (sim/sweep.c, sim/explore.c).
*/
#pragma once

#include "run.h"

#include <glib.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

struct ks_recorder;

/* "A-B" (A <= B <= INT64_MAX) or a single "A": the seeds A..B. Errors read
 * "--seeds TEXT: what is wrong". */
bool ks_sweep_parse_seeds(const char *text, uint64_t *first, uint64_t *last, GError **error);

/* "I/N" with 1 <= I <= N: the I-th of N shards. */
bool ks_sweep_parse_shard(const char *text, uint32_t *shard_index, uint32_t *shard_count,
                          GError **error);

/* Whether work item `item_index` (0-based: a seed's offset from the first
 * seed, or a sweep run's index in the (setting, seed) order) belongs to shard
 * shard_index of shard_count. Round robin, so that every shard gets a share of
 * every setting: item mod N == I - 1. Every item belongs to exactly one shard. */
bool ks_sweep_shard_owns(uint64_t item_index, uint32_t shard_index, uint32_t shard_count);

/* ---- explore ---------------------------------------------------------------------- */

struct ks_scenario;

/* The random fault schedule explore gives `seed` on this (finalized)
 * scenario, at most fault_max faults, as [fault explore-N] sections in time
 * order (sim/explore.c). The same arguments give the same text. Owned:
 * g_free. */
char *ks_explore_schedule_ini(const struct ks_scenario *scenario, uint64_t seed,
                              uint32_t fault_max);

/* ---- the worker pool ----------------------------------------------------------- */

#define KS_POOL_NOTE_BYTES 1024

/* What a job reports back to the parent (lives in memory shared between
 * the processes; plain data only). */
struct ks_pool_slot {
    int32_t done;   /* 1 once the job finished */
    int32_t code;   /* ks_run_scenario's exit code (0, 1, 2, 3) */
    int32_t worker; /* the worker that ran it: index of its database */
    int32_t spare;
    int64_t run_id; /* in that worker's database; 0 if not recorded */
    struct ks_run_result result;
    char note[KS_POOL_NOTE_BYTES]; /* free text for the caller (explore) */
};

/* One job, run in a worker process. `recorder` is the worker's own database
 * (the parent merges them), `run_dir` a folder the job may use for its run,
 * `worker_dir` a private scratch folder. Fills *slot (done is set by the pool). */
typedef void ks_pool_job_fn(void *context, size_t job_index, struct ks_recorder *recorder,
                            const char *run_dir, const char *worker_dir, struct ks_pool_slot *slot);

/* Called in the parent after runs were appended to the output database
 * (`out`, open; in job order): job indexes and their new run ids. */
typedef void ks_pool_appended_fn(void *context, sqlite3 *out, const size_t *jobs,
                                 const int64_t *run_ids, size_t count);

struct ks_pool_options {
    uint32_t jobs;                 /* worker processes, >= 1 */
    const char *label;             /* "sweep", "explore": the progress line's prefix */
    bool progress;                 /* a progress line on stderr */
    ks_pool_appended_fn *appended; /* may be NULL */
};

/* Runs job_count jobs in options->jobs forked workers (each takes the next
 * job index from a shared counter, so the work balances itself), each with
 * its own database in a temporary folder; the parent appends every recorded
 * run to the database at db_path in job order as soon as the runs before it
 * are done, so that the result does not depend on the number of workers or
 * on timing. Returns the slots (owned: free with
 * ks_pool_free; slots[i].run_id is then the run's id in db_path, or 0), or
 * NULL with *error set when the pool could not run (host errors: exit 3). A
 * worker that died leaves its unfinished jobs with done = 0. */
struct ks_pool_slot *ks_pool_run(size_t job_count, ks_pool_job_fn *fn, void *context,
                                 const struct ks_pool_options *options, const char *db_path,
                                 GError **error);
void ks_pool_free(struct ks_pool_slot *slots, size_t job_count);
