/*
** sim/sweep.c: `ksim sweep SCENARIO --vary KEY=V1,V2,... [--vary ...]
** --seeds A-B [--jobs N] [--db FILE] [--shard I/N] [--set KEY=VALUE]...`
** (SPEC 1), and the worker pool, seed and shard parsing that explore shares.
**
** A sweep is the cross product of the --vary values (the first --vary varies
** slowest) times the seeds; job k is setting k / seeds, seed A + k % seeds.
** Every setting is loaded, --set and finalized in the parent before any run
** starts, so a bad key or value is reported (exit 2) before work is done.
**
** The pool (R1..R3):
**   R1  Each run is single-threaded and deterministic, so it may run in any
**       process: workers are forked children that take the next job index
**       from a counter in shared memory (the faster worker takes more jobs).
**   R2  No two processes write one SQLite file: each worker records into its
**       own database in a temporary folder, and the parent alone appends
**       their runs to --db (sim/merge.c), in job order: run k goes in once
**       runs 0..k-1 are in, while the workers go on with later jobs. The run
**       ids, and so the whole database, are the same with any --jobs.
**   R3  A run's real log folders go to the worker's own run folder, reused
**       run after run, in memory where possible (make_runs_dir), and
**       removed at the end.
**   R4  Workers never outlive the pool: each asks the kernel for SIGKILL
**       when its parent dies (PR_SET_PDEATHSIG, then checks getppid() in
**       case the parent died before that), and SIGINT, SIGTERM or SIGHUP to
**       the parent kill the workers, wait for them, remove the temporary
**       folders and end the parent with the same signal. The runs appended
**       so far stay in --db (each was one committed transaction). A parent
**       killed with SIGKILL cannot clean up; its folders carry a lock that
**       dies with it, and the next pool removes them (ks_host_temp_dir_new).
**
** --shard I/N keeps the jobs k with k mod N == I - 1; `ksim merge` then
** combines the shards' databases (docs/scale-out.md).
*/
#include "sweep.h"
#include "sweep_int.h"
#include "world.h"

#include "commands.h"
#include "merge.h"
#include "recorder.h"
#include "scenario.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

G_DEFINE_QUARK(ks - sweep - error - quark, ks_sweep_error)
#define KS_SWEEP_ERROR (ks_sweep_error_quark())

static bool parse_u64(const char *text, uint64_t *value)
{
    if (text == NULL || *text == '\0' || !g_ascii_isdigit(*text)) {
        return false;
    }
    char *end = NULL;
    errno = 0;
    guint64 parsed = g_ascii_strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0') {
        return false;
    }
    *value = parsed;
    return true;
}

bool ks_sweep_parse_seeds(const char *text, uint64_t *first, uint64_t *last, GError **error)
{
    g_auto(GStrv) parts = g_strsplit(text, "-", 2);
    uint64_t a = 0;
    uint64_t b = 0;
    bool ok = parts[0] != NULL && parse_u64(parts[0], &a);
    if (ok) {
        b = a;
        if (parts[1] != NULL) {
            ok = parse_u64(parts[1], &b);
        }
    }
    if (!ok || b < a || b > (uint64_t)INT64_MAX) {
        /* Seeds are stored in SQLite's signed 64-bit integers. */
        g_set_error(error, KS_SWEEP_ERROR, 0,
                    "--seeds %s: expected A-B with 0 <= A <= B <= %" G_GINT64_FORMAT " (e.g. 1-20)",
                    text, G_MAXINT64);
        return false;
    }
    *first = a;
    *last = b;
    return true;
}

bool ks_sweep_parse_shard(const char *text, uint32_t *shard_index, uint32_t *shard_count,
                          GError **error)
{
    g_auto(GStrv) parts = g_strsplit(text, "/", 2);
    uint64_t index = 0;
    uint64_t count = 0;
    if (parts[0] == NULL || parts[1] == NULL || !parse_u64(parts[0], &index) ||
        !parse_u64(parts[1], &count) || count < 1 || count > 1000000 || index < 1 ||
        index > count) {
        g_set_error(error, KS_SWEEP_ERROR, 0, "--shard %s: expected I/N with 1 <= I <= N", text);
        return false;
    }
    *shard_index = (uint32_t)index;
    *shard_count = (uint32_t)count;
    return true;
}

bool ks_sweep_shard_owns(uint64_t item_index, uint32_t shard_index, uint32_t shard_count)
{
    return item_index % shard_count == (uint64_t)(shard_index - 1);
}

/* ---- the worker pool ------------------------------------------------------------ */

struct pool_shared {
    uint64_t next_job;      /* the next job index to take (atomic) */
    uint64_t finished_jobs; /* for the progress line (atomic) */
    struct ks_pool_slot slots[];
};

static size_t pool_shared_bytes(size_t job_count)
{
    return sizeof(struct pool_shared) + job_count * sizeof(struct ks_pool_slot);
}

static char *worker_db_path(const char *temp_dir, uint32_t worker)
{
    g_autofree char *name = g_strdup_printf("worker-%u.db", worker);
    return g_build_filename(temp_dir, name, NULL);
}

/* R4: the signal that stopped the pool, for its wait loop; 0 while none.
 * A process-wide variable because a signal handler can reach nothing else;
 * it never touches the simulated world. */
static volatile sig_atomic_t pool_signal;

static void on_pool_signal(int signal_number)
{
    pool_signal = signal_number;
}

static const int pool_signals[] = { SIGINT, SIGTERM, SIGHUP };

/* Installs on_pool_signal for each signal that is not ignored (a shell
 * starts background jobs with SIGINT ignored; that choice is kept). */
static void catch_pool_signals(struct sigaction saved[G_N_ELEMENTS(pool_signals)])
{
    pool_signal = 0;
    for (size_t i = 0; i < G_N_ELEMENTS(pool_signals); i++) {
        sigaction(pool_signals[i], NULL, &saved[i]);
        if (saved[i].sa_handler != SIG_IGN) {
            /* SA_RESTART: the parent's SQLite calls must not see EINTR. */
            struct sigaction action = { .sa_handler = on_pool_signal, .sa_flags = SA_RESTART };
            sigemptyset(&action.sa_mask);
            sigaction(pool_signals[i], &action, NULL);
        }
    }
}

static void restore_pool_signals(const struct sigaction saved[G_N_ELEMENTS(pool_signals)])
{
    for (size_t i = 0; i < G_N_ELEMENTS(pool_signals); i++) {
        sigaction(pool_signals[i], &saved[i], NULL);
    }
}

/* R4, in a new worker: die with the parent, and take the default action
 * for the signals the parent catches. */
static void worker_bind_to_parent(pid_t parent)
{
    for (size_t i = 0; i < G_N_ELEMENTS(pool_signals); i++) {
        if (signal(pool_signals[i], SIG_DFL) == SIG_IGN) {
            signal(pool_signals[i], SIG_IGN); /* ignored before the pool: still ignored */
        }
    }
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
        _exit(3); /* the parent is already gone */
    }
    if (pool_signal != 0) {
        _exit(128 + pool_signal); /* caught by the parent's handler before the reset */
    }
}

/* R3: where the workers' run folders go. A run writes and deletes a few
 * thousand small files (its brokers' segment logs), which costs three times
 * the simulation itself on a journaling file system; in memory it costs
 * little, and the folders are thrown away anyway. $KSIM_RUN_TMPDIR, else
 * /dev/shm when it is a writable folder, else the temporary folder.
 * Owned: g_free; a fresh folder made for this pool. */
static char *make_runs_dir(const char *temp_dir, int *lock_fd)
{
    const char *base = g_getenv("KSIM_RUN_TMPDIR");
    if (base == NULL || *base == '\0') {
        base = g_file_test("/dev/shm", G_FILE_TEST_IS_DIR) && access("/dev/shm", W_OK) == 0
                   ? "/dev/shm"
                   : NULL;
    }
    *lock_fd = -1;
    if (base != NULL) {
        char *dir = ks_host_temp_dir_new(base, "ksim-runs-", lock_fd, NULL);
        if (dir != NULL) {
            return dir;
        }
    }
    char *dir = g_build_filename(temp_dir, "runs", NULL);
    g_mkdir_with_parents(dir, 0755);
    return dir;
}

/* The body of a worker process; never returns. */
G_GNUC_NORETURN static void worker_main(struct pool_shared *shared, size_t job_count,
                                        ks_pool_job_fn *fn, void *context, const char *temp_dir,
                                        const char *runs_dir, uint32_t worker)
{
    g_autofree char *db_path = worker_db_path(temp_dir, worker);
    g_autofree char *name = g_strdup_printf("worker-%u", worker);
    g_autofree char *worker_dir = g_build_filename(temp_dir, name, NULL);
    g_autofree char *run_dir = g_build_filename(runs_dir, name, NULL);
    GError *error = NULL;
    g_mkdir_with_parents(worker_dir, 0755);
    struct ks_recorder *recorder = ks_recorder_open(db_path, &error);
    if (recorder == NULL) {
        fprintf(stderr, "ksim: worker %u: %s\n", worker, error->message);
        g_error_free(error);
        _exit(3);
    }
    /* A worker's database is a temporary file that the parent reads once:
     * no fsync (a busy disk made every commit wait). */
    sqlite3_exec((sqlite3 *)ks_recorder_db(recorder), "PRAGMA synchronous = OFF", NULL, NULL, NULL);
    for (;;) {
        uint64_t job = __atomic_fetch_add(&shared->next_job, 1, __ATOMIC_SEQ_CST);
        if (job >= job_count) {
            break;
        }
        struct ks_pool_slot *slot = &shared->slots[job];
        slot->worker = (int32_t)worker;
        fn(context, (size_t)job, recorder, run_dir, worker_dir, slot);
        __atomic_store_n(&slot->done, 1, __ATOMIC_SEQ_CST);
        __atomic_fetch_add(&shared->finished_jobs, 1, __ATOMIC_SEQ_CST);
    }
    ks_recorder_close(recorder);
    fflush(NULL);
    _exit(0);
}

static void show_progress(const char *label, uint64_t done, size_t total, int64_t start_us)
{
    double elapsed_s = (double)(g_get_monotonic_time() - start_us) / 1e6;
    double rate = elapsed_s > 0 ? (double)done / elapsed_s : 0;
    if (done == 0 || rate <= 0) {
        fprintf(stderr, "\r%s: %" G_GUINT64_FORMAT "/%zu runs ...          ", label, done, total);
    } else {
        double left_s = (double)(total - done) / rate;
        fprintf(stderr, "\r%s: %" G_GUINT64_FORMAT "/%zu runs, %.1f runs/s, %.0f s left      ",
                label, done, total, rate, left_s);
    }
    fflush(stderr);
}

/* The parent's side of R2: appends finished runs to the output database in
 * job order while the workers go on, so that little is left to copy when
 * the last worker ends. Jobs before next_job are appended (or had no run). */
struct gatherer {
    sqlite3 *out;
    GPtrArray *inputs; /* the workers' database paths */
    size_t next_job;
    int64_t *new_ids; /* per job: the id in the output, 0 if none */
    const struct ks_pool_options *options;
    void *context;
    GError *error; /* the first failure; appending stops there */
};

/* Appends the finished prefix of the jobs; with `final`, every job left
 * (those of a worker that died have done = 0 and are skipped). */
static void gather_prefix(struct gatherer *gatherer, struct pool_shared *shared, size_t job_count,
                          bool final)
{
    size_t end = gatherer->next_job;
    while (end < job_count && __atomic_load_n(&shared->slots[end].done, __ATOMIC_SEQ_CST)) {
        end++;
    }
    if (final) {
        end = job_count;
    }
    if (gatherer->error != NULL || end == gatherer->next_job) {
        return;
    }
    GArray *runs = g_array_new(FALSE, FALSE, sizeof(struct ks_merge_run));
    GArray *jobs = g_array_new(FALSE, FALSE, sizeof(size_t));
    for (size_t i = gatherer->next_job; i < end; i++) {
        const struct ks_pool_slot *slot = &shared->slots[i];
        if (__atomic_load_n(&slot->done, __ATOMIC_SEQ_CST) && slot->run_id > 0) {
            struct ks_merge_run run = { .input_index = (uint32_t)slot->worker,
                                        .run_id = slot->run_id };
            g_array_append_val(runs, run);
            g_array_append_val(jobs, i);
        }
    }
    g_autofree int64_t *ids = g_new0(int64_t, runs->len + 1);
    bool ok =
        runs->len == 0 ||
        ks_merge_append(gatherer->out, (const char *const *)gatherer->inputs->pdata,
                        gatherer->inputs->len, (const struct ks_merge_run *)(void *)runs->data,
                        runs->len, ids, &gatherer->error);
    if (ok) {
        for (guint i = 0; i < jobs->len; i++) {
            gatherer->new_ids[g_array_index(jobs, size_t, i)] = ids[i];
        }
        if (gatherer->options->appended != NULL && jobs->len > 0) {
            gatherer->options->appended(gatherer->context, gatherer->out,
                                        (const size_t *)(void *)jobs->data, ids, jobs->len);
        }
        gatherer->next_job = end;
    }
    g_array_unref(runs);
    g_array_unref(jobs);
}

/* Waits for every worker while appending what they finish; with progress,
 * redraws the line. Returns the number of workers that died. */
static uint32_t wait_workers(const pid_t *pids, uint32_t count, struct pool_shared *shared,
                             size_t job_count, struct gatherer *gatherer, int64_t start_us)
{
    uint32_t live = count;
    uint32_t failed = 0;
    const struct ks_pool_options *options = gatherer->options;
    while (live > 0) {
        if (pool_signal != 0) {
            /* R4: stop at once; what was appended stays. */
            for (uint32_t i = 0; i < count; i++) {
                kill(pids[i], SIGKILL);
            }
            for (uint32_t i = 0; i < count; i++) {
                while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR) {
                }
            }
            return count;
        }
        int status = 0;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid < 0 && errno == EINTR) {
            continue;
        }
        if (pid < 0) {
            break;
        }
        if (pid == 0) {
            gather_prefix(gatherer, shared, job_count, false);
            if (options->progress) {
                show_progress(options->label,
                              __atomic_load_n(&shared->finished_jobs, __ATOMIC_SEQ_CST), job_count,
                              start_us);
            }
            g_usleep(50000);
            continue;
        }
        for (uint32_t i = 0; i < count; i++) {
            if (pids[i] == pid) {
                live--;
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                    failed++;
                }
            }
        }
    }
    gather_prefix(gatherer, shared, job_count, true);
    if (options->progress) {
        show_progress(options->label, __atomic_load_n(&shared->finished_jobs, __ATOMIC_SEQ_CST),
                      job_count, start_us);
        fputc('\n', stderr);
    }
    return failed;
}

struct ks_pool_slot *ks_pool_run(size_t job_count, ks_pool_job_fn *fn, void *context,
                                 const struct ks_pool_options *options, const char *db_path,
                                 GError **error)
{
    /* The output database must be usable before any work is done. */
    struct ks_recorder *check = ks_recorder_open(db_path, error);
    if (check == NULL) {
        return NULL;
    }
    ks_recorder_close(check);
    struct gatherer gatherer = { .options = options, .context = context };
    if (sqlite3_open_v2(db_path, &gatherer.out, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_OUTPUT, "%s: %s", db_path,
                    sqlite3_errmsg(gatherer.out));
        sqlite3_close(gatherer.out);
        return NULL;
    }
    sqlite3_busy_timeout(gatherer.out, 30000);
    /* WAL (set by the recorder) with NORMAL sync: a crash may lose the last
     * appended runs but never corrupts the file; one fsync per run would
     * make the parent the bottleneck on a busy disk. */
    sqlite3_exec(gatherer.out, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
    int temp_lock = -1;
    char *temp_dir = ks_host_temp_dir_new(NULL, "ksim-pool-", &temp_lock, error);
    size_t bytes = pool_shared_bytes(job_count);
    struct pool_shared *shared = temp_dir == NULL ? MAP_FAILED
                                                  : mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                                                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        if (temp_dir != NULL) {
            g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_OUTPUT, "mmap: %s",
                        g_strerror(errno));
            ks_host_temp_dir_free(temp_dir, temp_lock);
        }
        sqlite3_close(gatherer.out);
        return NULL;
    }
    memset(shared, 0, bytes);
    uint32_t workers = options->jobs < 1 ? 1 : options->jobs;
    if (workers > job_count && job_count > 0) {
        workers = (uint32_t)job_count;
    }
    gatherer.inputs = g_ptr_array_new_with_free_func(g_free);
    for (uint32_t w = 0; w < workers; w++) {
        g_ptr_array_add(gatherer.inputs, worker_db_path(temp_dir, w));
    }
    gatherer.new_ids = g_new0(int64_t, job_count + 1);
    int runs_lock = -1;
    char *runs_dir = make_runs_dir(temp_dir, &runs_lock);
    g_autofree pid_t *pids = g_new0(pid_t, workers);
    int64_t start_us = g_get_monotonic_time();
    struct sigaction saved_actions[G_N_ELEMENTS(pool_signals)];
    catch_pool_signals(saved_actions);
    pid_t parent = getpid();
    fflush(NULL);
    uint32_t started = 0;
    for (; started < workers && pool_signal == 0; started++) {
        pid_t pid = fork();
        if (pid == 0) {
            worker_bind_to_parent(parent);
            worker_main(shared, job_count, fn, context, temp_dir, runs_dir, started);
        }
        if (pid < 0) {
            break;
        }
        pids[started] = pid;
    }
    uint32_t died = wait_workers(pids, started, shared, job_count, &gatherer, start_us);
    int stopped_by = pool_signal;
    struct ks_pool_slot *slots = g_new(struct ks_pool_slot, job_count ? job_count : 1);
    memcpy(slots, shared->slots, job_count * sizeof *slots);
    munmap(shared, bytes);
    for (size_t i = 0; i < job_count; i++) {
        slots[i].run_id = gatherer.new_ids[i];
    }
    bool ok = started > 0 || job_count == 0;
    if (!ok) {
        g_set_error(error, KS_MERGE_ERROR, KS_MERGE_ERROR_OUTPUT, "fork: %s", g_strerror(errno));
    } else if (gatherer.error != NULL) {
        g_propagate_error(error, g_steal_pointer(&gatherer.error));
        ok = false;
    }
    if (ok && died > 0 && stopped_by == 0) {
        fprintf(stderr,
                "%s: %u worker process(es) stopped abnormally; their unfinished runs "
                "are missing\n",
                options->label, died);
    }
    g_clear_error(&gatherer.error);
    sqlite3_close(gatherer.out);
    g_ptr_array_unref(gatherer.inputs);
    g_free(gatherer.new_ids);
    if (runs_lock >= 0) {
        ks_host_temp_dir_free(runs_dir, runs_lock);
    } else {
        ks_host_remove_tree(runs_dir);
        g_free(runs_dir);
    }
    ks_host_temp_dir_free(temp_dir, temp_lock);
    restore_pool_signals(saved_actions);
    if (stopped_by != 0) {
        /* R4: end as the signal would have ended us, now that nothing is left. */
        fprintf(stderr,
                "\n%s: stopped by signal %d; the workers are stopped, the temporary "
                "folders removed; the runs finished before it are in %s\n",
                options->label, stopped_by, db_path);
        g_free(slots);
        signal(stopped_by, SIG_DFL);
        raise(stopped_by);
        _exit(128 + stopped_by);
    }
    if (!ok) {
        g_free(slots);
        return NULL;
    }
    return slots;
}

void ks_pool_free(struct ks_pool_slot *slots, size_t job_count)
{
    (void)job_count;
    g_free(slots);
}

/* ---- ksim sweep ------------------------------------------------------------------- */

struct sweep_setting {
    char *label;                  /* "producer.p1.acks=1, topic.orders.min.insync.replicas=2" */
    struct ks_scenario *scenario; /* finalized, owned */
};

struct sweep {
    GArray *settings; /* struct sweep_setting */
    uint64_t seed_first;
    uint64_t seed_count;
    GArray *jobs;      /* uint64_t: global job index k of each pool job */
    bool store_failed; /* a sweep_runs write failed */
};

static void sweep_setting_clear(gpointer data)
{
    struct sweep_setting *setting = data;
    g_free(setting->label);
    ks_scenario_free(setting->scenario);
}

/* ks_pool_appended_fn: each run's setting into sweep_runs (the plots group
 * runs by it), in the transaction-free gap after the runs were appended. A
 * failure here is reported and leaves the runs without their label. */
static void store_settings(void *context, sqlite3 *out, const size_t *jobs, const int64_t *run_ids,
                           size_t count)
{
    struct sweep *sweep = context;
    sqlite3_stmt *stmt = NULL;
    bool ok = sqlite3_exec(out,
                           "CREATE TABLE IF NOT EXISTS sweep_runs "
                           "(run_id INTEGER PRIMARY KEY, setting TEXT NOT NULL); BEGIN",
                           NULL, NULL, NULL) == SQLITE_OK &&
              sqlite3_prepare_v2(out, "INSERT OR REPLACE INTO sweep_runs VALUES (?1, ?2)", -1,
                                 &stmt, NULL) == SQLITE_OK;
    for (size_t i = 0; ok && i < count; i++) {
        uint64_t k = g_array_index(sweep->jobs, uint64_t, jobs[i]);
        const char *label =
            g_array_index(sweep->settings, struct sweep_setting, k / sweep->seed_count).label;
        sqlite3_bind_int64(stmt, 1, run_ids[i]);
        sqlite3_bind_text(stmt, 2, label, -1, SQLITE_TRANSIENT);
        ok = sqlite3_step(stmt) == SQLITE_DONE;
        sqlite3_reset(stmt);
    }
    sqlite3_finalize(stmt);
    ok = ok && sqlite3_exec(out, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
    if (!ok) {
        fprintf(stderr, "ksim sweep: sweep_runs: %s\n", sqlite3_errmsg(out));
        sqlite3_exec(out, "ROLLBACK", NULL, NULL, NULL);
        sweep->store_failed = true;
    }
}

static void sweep_job(void *context, size_t job_index, struct ks_recorder *recorder,
                      const char *run_dir, const char *worker_dir, struct ks_pool_slot *slot)
{
    (void)worker_dir;
    struct sweep *sweep = context;
    uint64_t k = g_array_index(sweep->jobs, uint64_t, job_index);
    const struct sweep_setting *setting =
        &g_array_index(sweep->settings, struct sweep_setting, k / sweep->seed_count);
    struct ks_run_options options = {
        .seed = sweep->seed_first + k % sweep->seed_count,
        .seed_given = true,
        .recorder = recorder,
        .run_dir = run_dir,
        .run_dir_discarded = true, /* R3: the worker's folder is reused and removed */
    };
    GError *error = NULL;
    slot->code = ks_run_scenario(setting->scenario, &options, &slot->result, &error);
    slot->run_id = slot->code <= 1 ? slot->result.run_id : 0;
    if (error != NULL) {
        g_strlcpy(slot->note, error->message, sizeof slot->note);
        g_error_free(error);
    }
}

/* The usage on out; returns code (0 for --help, 2 for a bad command line). */
static int sweep_usage(FILE *out, int code)
{
    fprintf(out, "usage: ksim sweep SCENARIO --vary KEY=V1,V2,... [--vary ...] --seeds A-B\n"
                 "                  [--jobs N] [--db FILE] [--shard I/N] [--set KEY=VALUE]...\n"
                 "  runs every combination of the --vary values with every seed, in N worker\n"
                 "  processes, into one database (default ksim.db)\n");
    return code;
}

/* Builds the settings: the cross product of the --vary lists, first slowest. */
static bool build_settings(const struct ks_scenario *base, GPtrArray *varies, GArray *settings,
                           GError **error)
{
    guint vary_count = varies->len;
    g_autofree guint *position = g_new0(guint, vary_count + 1);
    GPtrArray *values = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
    GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
    bool ok = true;
    for (guint v = 0; ok && v < vary_count; v++) {
        const char *text = g_ptr_array_index(varies, v);
        const char *equals = strchr(text, '=');
        if (equals == NULL || equals == text || equals[1] == '\0') {
            g_set_error(error, KS_SWEEP_ERROR, 0, "--vary %s: expected KEY=V1,V2,...", text);
            ok = false;
            break;
        }
        g_ptr_array_add(keys, g_strndup(text, (gsize)(equals - text)));
        g_ptr_array_add(values, g_strsplit(equals + 1, ",", -1));
    }
    while (ok) {
        GString *label = g_string_new("");
        struct ks_scenario *scenario = ks_scenario_copy(base);
        for (guint v = 0; ok && v < vary_count; v++) {
            char **list = g_ptr_array_index(values, v);
            g_autofree char *assignment = g_strdup_printf(
                "%s=%s", (const char *)g_ptr_array_index(keys, v), g_strstrip(list[position[v]]));
            g_string_append_printf(label, "%s%s", v ? ", " : "", assignment);
            ok = ks_scenario_apply_set(scenario, assignment, error);
            if (!ok && error != NULL && *error != NULL &&
                g_str_has_prefix((*error)->message, "--set ")) {
                /* The value came from --vary: say so. */
                char *message = g_strdup_printf("--vary %s", (*error)->message + strlen("--set "));
                g_free((*error)->message);
                (*error)->message = message;
            }
        }
        ok = ok && ks_scenario_finalize(scenario, error);
        if (!ok) {
            g_string_free(label, TRUE);
            ks_scenario_free(scenario);
            break;
        }
        struct sweep_setting setting = { .label = g_string_free(label, FALSE),
                                         .scenario = scenario };
        g_array_append_val(settings, setting);
        /* Next combination: the last --vary varies fastest. */
        guint v = vary_count;
        while (v > 0) {
            v--;
            char **list = g_ptr_array_index(values, v);
            if (list[++position[v]] != NULL) {
                break;
            }
            position[v] = 0;
            if (v == 0) {
                v = G_MAXUINT;
                break;
            }
        }
        if (v == G_MAXUINT || vary_count == 0) {
            break;
        }
    }
    g_ptr_array_unref(values);
    g_ptr_array_unref(keys);
    return ok;
}

/* One row of the sweep table: a metric and how its values print. */
enum column_format {
    COLUMN_COUNT,   /* whole numbers: min and max without a fraction, mean with one */
    COLUMN_RATE,    /* one decimal */
    COLUMN_LATENCY, /* milliseconds with three decimals */
};

struct metric_column {
    enum ks_metric metric;
    const char *name;
    enum column_format format;
    bool consumers_only; /* shown only when the scenario has consumers */
};

static const struct metric_column table_columns[] = {
    { KS_METRIC_ACKED_LOST, "acked_lost", COLUMN_COUNT, false },
    { KS_METRIC_DUPLICATES, "duplicates", COLUMN_COUNT, false },
    { KS_METRIC_CONSUMED_LOST, "consumed_lost", COLUMN_COUNT, true },
    { KS_METRIC_CONSUMED_DUPLICATES, "consumed_duplicates", COLUMN_COUNT, true },
    { KS_METRIC_UNAVAILABLE_MS, "unavailable_ms", COLUMN_COUNT, false },
    { KS_METRIC_PRODUCE_P50_MS, "produce_p50_ms", COLUMN_LATENCY, false },
    { KS_METRIC_PRODUCE_P99_MS, "produce_p99_ms", COLUMN_LATENCY, false },
    { KS_METRIC_THROUGHPUT_RPS, "throughput_rps", COLUMN_RATE, false },
};

/* min, mean and max of one metric over the runs of one setting. */
struct column_stats {
    double minimum;
    double sum;
    double maximum;
};

static void print_stats(FILE *out, enum column_format format, const struct column_stats *stats,
                        int runs)
{
    double mean = stats->sum / runs;
    switch (format) {
    case COLUMN_COUNT:
        fprintf(out, "  %12.0f %12.1f %12.0f", stats->minimum, mean, stats->maximum);
        return;
    case COLUMN_RATE:
        fprintf(out, "  %12.1f %12.1f %12.1f", stats->minimum, mean, stats->maximum);
        return;
    case COLUMN_LATENCY:
        fprintf(out, "  %12.3f %12.3f %12.3f", stats->minimum, mean, stats->maximum);
        return;
    }
}

/* The table at the end: per setting, the runs that completed, how many failed
 * their [expect], and min, mean and max over the seeds of each metric, one
 * line per metric. The spread between min and max is what the seeds did:
 * network jitter, client start offsets and the brokers' task phases are
 * drawn per seed (docs/model.md, "Timing noise"). */
static void print_sweep_table(FILE *out, const struct sweep *sweep,
                              const struct ks_pool_slot *slots)
{
    size_t label_width = strlen("setting");
    for (guint s = 0; s < sweep->settings->len; s++) {
        label_width =
            MAX(label_width, strlen(g_array_index(sweep->settings, struct sweep_setting, s).label));
    }
    bool consumers =
        g_array_index(sweep->settings, struct sweep_setting, 0).scenario->consumer_count > 0;
    size_t name_width = 0;
    for (size_t c = 0; c < G_N_ELEMENTS(table_columns); c++) {
        name_width = MAX(name_width, strlen(table_columns[c].name));
    }
    fprintf(out, "%-*s %5s %5s  %-*s  %12s %12s %12s\n", (int)label_width, "setting", "runs",
            "fail", (int)name_width, "metric", "min", "mean", "max");
    for (guint s = 0; s < sweep->settings->len; s++) {
        struct column_stats stats[G_N_ELEMENTS(table_columns)];
        int runs = 0;
        int failed = 0;
        for (size_t c = 0; c < G_N_ELEMENTS(table_columns); c++) {
            stats[c] = (struct column_stats){ INFINITY, 0, -INFINITY };
        }
        for (guint j = 0; j < sweep->jobs->len; j++) {
            uint64_t k = g_array_index(sweep->jobs, uint64_t, j);
            if (k / sweep->seed_count != s || !slots[j].done || slots[j].code > 1) {
                continue;
            }
            runs++;
            failed += slots[j].code == 1;
            for (size_t c = 0; c < G_N_ELEMENTS(table_columns); c++) {
                double value = slots[j].result.metrics[table_columns[c].metric];
                stats[c].minimum = MIN(stats[c].minimum, value);
                stats[c].sum += value;
                stats[c].maximum = MAX(stats[c].maximum, value);
            }
        }
        const char *label = g_array_index(sweep->settings, struct sweep_setting, s).label;
        bool first = true;
        for (size_t c = 0; c < G_N_ELEMENTS(table_columns); c++) {
            if (table_columns[c].consumers_only && !consumers) {
                continue;
            }
            if (first) {
                fprintf(out, "%-*s %5d %5d", (int)label_width, label, runs, failed);
            } else {
                fprintf(out, "%-*s %5s %5s", (int)label_width, "", "", "");
            }
            first = false;
            fprintf(out, "  %-*s", (int)name_width, table_columns[c].name);
            if (runs == 0) {
                fprintf(out, "  %12s %12s %12s", "-", "-", "-");
            } else {
                print_stats(out, table_columns[c].format, &stats[c], runs);
            }
            fputc('\n', out);
        }
    }
}

static bool parse_jobs(const char *text, uint32_t *jobs)
{
    uint64_t value = 0;
    if (!parse_u64(text, &value) || value < 1 || value > 1024) {
        return false;
    }
    *jobs = (uint32_t)value;
    return true;
}

bool ks__pool_cli_option(const char *command, int argc, char **argv, int *i,
                         struct ks__pool_cli *cli, bool *bad)
{
    const char *arg = argv[*i];
    bool has_value = *i + 1 < argc;
    GError *error = NULL;
    if (strcmp(arg, "--db") == 0 && has_value) {
        cli->db_path = argv[++*i];
    } else if (strcmp(arg, "--seeds") == 0 && has_value) {
        cli->seeds_text = argv[++*i];
    } else if (strcmp(arg, "--jobs") == 0 && has_value) {
        if (!parse_jobs(argv[++*i], &cli->jobs)) {
            fprintf(stderr, "ksim %s: --jobs %s: expected 1 to 1024\n", command, argv[*i]);
            *bad = true;
        }
    } else if (strcmp(arg, "--shard") == 0 && has_value) {
        if (!ks_sweep_parse_shard(argv[++*i], &cli->shard_index, &cli->shard_count, &error)) {
            fprintf(stderr, "ksim %s: %s\n", command, error->message);
            g_error_free(error);
            *bad = true;
        }
    } else {
        return false;
    }
    return true;
}

int ks__pool_error_code(const GError *error)
{
    return error->domain == KS_RECORDER_ERROR && error->code != KS_RECORDER_ERROR_WRITE ? 2 : 3;
}

static int sweep_run(const char *path, GPtrArray *varies, GPtrArray *sets, struct ks__pool_cli *cli)
{
    GError *error = NULL;
    uint64_t seed_last = 0;
    struct sweep sweep = { 0 };
    if (!ks_sweep_parse_seeds(cli->seeds_text, &sweep.seed_first, &seed_last, &error)) {
        fprintf(stderr, "ksim sweep: %s\n", error->message);
        g_error_free(error);
        return 2;
    }
    sweep.seed_count = seed_last - sweep.seed_first + 1;
    g_autoptr(ks_scenario) base = NULL;
    bool ok = ks_scenario_parse(path, &base, &error);
    for (guint i = 0; ok && i < sets->len; i++) {
        ok = ks_scenario_apply_set(base, g_ptr_array_index(sets, i), &error);
    }
    ok = ok && ks_scenario_finalize(base, &error);
    sweep.settings = g_array_new(FALSE, TRUE, sizeof(struct sweep_setting));
    g_array_set_clear_func(sweep.settings, sweep_setting_clear);
    ok = ok && build_settings(base, varies, sweep.settings, &error);
    if (!ok) {
        fprintf(stderr, "%s\n", error->message);
        g_error_free(error);
        g_array_unref(sweep.settings);
        return 2;
    }
    sweep.jobs = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    uint64_t total = (uint64_t)sweep.settings->len * sweep.seed_count;
    for (uint64_t k = 0; k < total; k++) {
        if (ks_sweep_shard_owns(k, cli->shard_index, cli->shard_count)) {
            g_array_append_val(sweep.jobs, k);
        }
    }
    struct ks_pool_options options = { .jobs = cli->jobs,
                                       .label = "sweep",
                                       .progress = isatty(STDERR_FILENO) != 0,
                                       .appended = store_settings };
    int64_t start_us = g_get_monotonic_time();
    struct ks_pool_slot *slots =
        ks_pool_run(sweep.jobs->len, sweep_job, &sweep, &options, cli->db_path, &error);
    int code = 0;
    if (slots == NULL) {
        fprintf(stderr, "ksim sweep: %s\n", error->message);
        code = ks__pool_error_code(error);
        g_error_free(error);
    } else {
        double elapsed_s = (double)(g_get_monotonic_time() - start_us) / 1e6;
        size_t missing = 0;
        for (guint j = 0; j < sweep.jobs->len; j++) {
            uint64_t k = g_array_index(sweep.jobs, uint64_t, j);
            const char *label =
                g_array_index(sweep.settings, struct sweep_setting, k / sweep.seed_count).label;
            if (!slots[j].done || slots[j].code > 1) {
                missing++;
                code = 3;
                fprintf(stderr,
                        "ksim sweep: run failed (%s): ksim run %s --seed %" G_GUINT64_FORMAT
                        " --set %s\n",
                        slots[j].done ? slots[j].note : "worker died", path,
                        sweep.seed_first + k % sweep.seed_count, label);
            } else if (slots[j].code == 1 && code == 0) {
                code = 1;
            }
        }
        if (sweep.store_failed) {
            code = 3;
        }
        print_sweep_table(stdout, &sweep, slots);
        fprintf(stderr, "sweep: %u runs in %.2f s (%.2f runs/s, %u jobs) into %s%s\n",
                sweep.jobs->len, elapsed_s, elapsed_s > 0 ? sweep.jobs->len / elapsed_s : 0.0,
                cli->jobs, cli->db_path, missing ? "; some runs are missing" : "");
        ks_pool_free(slots, sweep.jobs->len);
    }
    g_array_unref(sweep.jobs);
    g_array_unref(sweep.settings);
    return code;
}

int ks_sweep_main(int argc, char **argv)
{
    struct ks__pool_cli cli = {
        .db_path = "ksim.db", .jobs = 1, .shard_index = 1, .shard_count = 1
    };
    const char *path = NULL;
    GPtrArray *varies = g_ptr_array_new();
    GPtrArray *sets = g_ptr_array_new();
    bool bad = false;
    for (int i = 1; i < argc && !bad; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            g_ptr_array_unref(varies);
            g_ptr_array_unref(sets);
            return sweep_usage(stdout, 0);
        }
        if (ks__pool_cli_option("sweep", argc, argv, &i, &cli, &bad)) {
            continue;
        }
        if (strcmp(arg, "--vary") == 0 && i + 1 < argc) {
            g_ptr_array_add(varies, argv[++i]);
        } else if (strcmp(arg, "--set") == 0 && i + 1 < argc) {
            g_ptr_array_add(sets, argv[++i]);
        } else if (arg[0] == '-' || path != NULL) {
            fprintf(stderr, "ksim sweep: %s: unknown option, missing value or second scenario\n",
                    arg);
            bad = true;
        } else {
            path = arg;
        }
    }
    int code;
    if (bad || path == NULL || cli.seeds_text == NULL || varies->len == 0) {
        code = sweep_usage(stderr, 2);
    } else {
        code = sweep_run(path, varies, sets, &cli);
    }
    g_ptr_array_unref(varies);
    g_ptr_array_unref(sets);
    return code;
}
