/*
** sim/explore.c: `ksim explore SCENARIO --seeds A-B [--faults N] [--jobs N]
** [--db FILE] [--shard I/N] [--out DIR]` (SPEC 1).
**
** For each seed, a random fault schedule replaces the scenario's own [fault]
** sections; the run's [expect] decides. A failing seed is shrunk and written
** as a reproducer scenario file.
**
** Schedule (R1: a pure function of the seed and the scenario). A splitmix64
** generator seeded from the seed and a constant of explore's own draws, in a
** fixed order: the number of faults (1..N), then per fault its action, time,
** target and parameters. Actions: crash (mode process or power, usually with
** restart.after), restart (with its own crash before it), isolate (a network
** partition of one node, sometimes the controller, with a duration), groups
** (the brokers split in two sides, with a duration), slow (disk or network
** latency, with a duration), pause (with a duration), stop (a controlled
** shutdown, usually with restart.after), rolling-restart (every broker, with
** a downtime), drop (a loss on every link, with a duration). Times fall in
** 5%..85% of the scenario's duration, on whole milliseconds; targets are a
** broker id, leader(TP) or follower(TP) of the scenario's own topics, or,
** when [cluster] racks is set, sometimes a whole rack(NAME) (crash, slow,
** pause, stop, isolate). Never drawn: faults the loader refuses as no-ops (a
** restart with nothing before it, a crash of the KRaft controller, a drop of
** 0). The simulation's own randomness is untouched: the generator is only
** used to write [fault] sections.
**
** A failure's "kind" is the sorted list of the expectations that failed
** (from the expectations table of the run's database).
**
** Shrinking (R2: every candidate is a full run, so what is kept fails for
** real). First drop faults one at a time, keeping every drop after which the
** same expectations still fail (the same kind); then move each remaining
** fault later (by half the time left, then a quarter, ...), keeping moves
** after which it still fails that way. At most SHRINK_RUNS_MAX runs per
** seed. Shrink runs record into a scratch database that is thrown away.
**
** Reproducer (R3): the original file's text without its [fault] sections,
** with `seed = S` in [scenario], plus the shrunk schedule as ordinary [fault]
** sections and a header comment with the command that runs it. It is loaded
** and run once more before the summary says it reproduces.
*/
#include "commands.h"

#include "../core/base.h"
#include "fault_actions.h"
#include "recorder.h"
#include "run.h"
#include "scenario.h"
#include "sweep.h"
#include "sweep_int.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SHRINK_RUNS_MAX        48
#define EXPLORE_FAULTS_DEFAULT 3
#define EXPLORE_FAULTS_MAX     64

/* ---- the generator ------------------------------------------------------------ */

struct explore_rng {
    uint64_t state;
};

static uint64_t rng_next(struct explore_rng *rng)
{
    /* splitmix64 */
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rng_below(struct explore_rng *rng, uint64_t bound)
{
    return bound == 0 ? 0 : rng_next(rng) % bound;
}

/* ---- faults ------------------------------------------------------------------- */

/* A generated fault: every field drawn, whatever the action; its row in the
 * fault table (sim/fault_actions.h) decides which of them its section shows. */
struct gen_fault {
    int64_t at_ms;         /* whole milliseconds; shrinking moves it */
    struct ks_fault fault; /* action, target, mode, restart.after, duration,
                               latencies, sides; `at` comes from at_ms */
};

/* What explore needs of the scenario, read once in the parent. */
struct explore {
    const char *path;
    char *text;               /* the original file, owned */
    struct ks_scenario *base; /* finalized, owned */
    int64_t duration_ms;
    int32_t broker_count;
    GPtrArray *tps; /* "orders-0" ..., user topics */
    uint32_t fault_max;
    const char *out_dir; /* NULL: current folder */
    char *found_by;      /* the explore command, for the header */
    uint64_t seed_first;
    GArray *seeds; /* uint64_t per pool job */
};

/* A broker id, leader(TP) or follower(TP) of the scenario's own topics. */
static void pick_target(struct explore_rng *rng, const struct explore *explore,
                        struct ks_target *out)
{
    uint64_t choice = rng_below(rng, 3);
    uint64_t broker = 1 + rng_below(rng, (uint64_t)explore->broker_count);
    uint64_t tp_index = rng_below(rng, explore->tps->len);
    *out = (struct ks_target){
        .kind = KS_TARGET_BROKER, .broker_id = (int32_t)broker, .tp = { -1, -1 }, .client_index = -1
    };
    if (choice != 0 && explore->tps->len > 0) {
        out->kind = choice == 1 ? KS_TARGET_LEADER : KS_TARGET_FOLLOWER;
        bool found = ks_scenario_parse_tp(explore->base, g_ptr_array_index(explore->tps, tp_index),
                                          &out->tp);
        ks_assert(found); /* the names come from the scenario's own topics */
    }
}

/* The rack of broker `broker` as a rack(NAME) target (its broker_id is the
 * rack's lowest broker id, as the loader stores it); false without racks. */
static bool rack_target(const struct explore *explore, int32_t broker, struct ks_target *out)
{
    const struct ks_cluster_config *cluster = &explore->base->cluster;
    if (broker < 1 || broker > cluster->broker_count || cluster->racks[broker - 1][0] == '\0') {
        return false;
    }
    int32_t lowest = broker;
    for (int32_t b = 1; b < broker; b++) {
        if (strcmp(cluster->racks[b - 1], cluster->racks[broker - 1]) == 0) {
            lowest = b;
            break;
        }
    }
    *out = (struct ks_target){
        .kind = KS_TARGET_RACK, .broker_id = lowest, .tp = { -1, -1 }, .client_index = -1
    };
    return true;
}

/* A random split of the brokers into two non-empty sides ("1,3 | 2"); both
 * empty with fewer than two brokers. Always draws the same number of values. */
static void split_brokers(struct explore_rng *rng, int32_t broker_count,
                          struct ks_target_list *side_a, struct ks_target_list *side_b)
{
    uint64_t mask = rng_next(rng);
    side_a->count = 0;
    side_b->count = 0;
    if (broker_count < 2 || broker_count > 63) {
        return;
    }
    uint64_t all = (1ull << broker_count) - 1;
    mask &= all;
    if (mask == 0 || mask == all) {
        mask = 1; /* broker 1 alone on side A */
    }
    for (int32_t b = 1; b <= broker_count; b++) {
        struct ks_target_list *side = (mask >> (b - 1)) & 1 ? side_a : side_b;
        side->items[side->count++] = (struct ks_target){
            .kind = KS_TARGET_BROKER, .broker_id = b, .tp = { -1, -1 }, .client_index = -1
        };
    }
}

/* R1: the schedule of one seed. */
static GArray *generate_schedule(const struct explore *explore, uint64_t seed)
{
    struct explore_rng rng = { .state = seed * 0xD1B54A32D192ED03ull ^ 0x4B53494D4558504Cull };
    GArray *faults = g_array_new(FALSE, TRUE, sizeof(struct gen_fault));
    uint64_t count = 1 + rng_below(&rng, explore->fault_max);
    int64_t span_ms = explore->duration_ms * 80 / 100;
    for (uint64_t i = 0; i < count; i++) {
        struct gen_fault gen;
        struct ks_fault *fault = &gen.fault;
        uint64_t roll = rng_below(&rng, 100);
        ks_fault_init(fault, "explore", 0,
                      roll < 28   ? KS_FAULT_CRASH
                      : roll < 36 ? KS_FAULT_RESTART
                      : roll < 56 ? KS_FAULT_PARTITION
                      : roll < 66 ? KS_FAULT_SLOW
                      : roll < 74 ? KS_FAULT_PAUSE
                      : roll < 84 ? KS_FAULT_STOP
                      : roll < 90 ? KS_FAULT_ROLLING_RESTART
                                  : KS_FAULT_DROP);
        fault->net_shape = roll < 48 ? KS_NET_ISOLATE : KS_NET_GROUPS;
        fault->has_at = true;
        gen.at_ms =
            explore->duration_ms * 5 / 100 + (int64_t)rng_below(&rng, (uint64_t)span_ms + 1);
        pick_target(&rng, explore, &fault->target);
        fault->mode = rng_below(&rng, 100) < 30 ? KS_CRASH_POWER : KS_CRASH_PROCESS;
        fault->restart_after_ns =
            rng_below(&rng, 100) < 75 ? (500 + (int64_t)rng_below(&rng, 9500)) * 1000000 : -1;
        fault->duration_ns = (500 + (int64_t)rng_below(&rng, 14500)) * 1000000;
        bool slow_disk = rng_below(&rng, 2) == 0;
        int64_t latency_ns = (20 + (int64_t)rng_below(&rng, 480)) * 1000000;
        *(slow_disk ? &fault->disk_latency_ns : &fault->network_latency_ns) = latency_ns;
        struct ks_target_list groups_b;
        split_brokers(&rng, explore->broker_count, &fault->side_a, &groups_b);
        if (fault->net_shape == KS_NET_GROUPS && fault->side_a.count > 0) {
            fault->side_b = groups_b;
        } else {
            /* isolate (also a groups fault with one broker: nothing to split) */
            fault->net_shape = KS_NET_ISOLATE;
            fault->side_a.count = 1;
            fault->side_a.items[0] = fault->target;
            fault->side_b.count = 0;
        }
        /* Drawn for every fault, used by some: a whole rack instead of the
         * target, the controller cut off, a rolling restart's downtime, a
         * drop's loss. */
        uint64_t wider = rng_below(&rng, 100);
        int64_t downtime_ms = 1000 + (int64_t)rng_below(&rng, 9000);
        uint32_t loss_ppm = (uint32_t)(10000 + rng_below(&rng, 190000));
        struct ks_target rack;
        bool rack_wide = wider < 25 && fault->target.kind == KS_TARGET_BROKER &&
                         rack_target(explore, fault->target.broker_id, &rack);
        if (rack_wide && fault->action != KS_FAULT_PARTITION) {
            fault->target = rack;
        }
        if (fault->action == KS_FAULT_PARTITION && fault->net_shape == KS_NET_ISOLATE) {
            if (rack_wide) {
                fault->side_a.items[0] = rack;
            } else if (wider >= 75) {
                fault->side_a.items[0] = (struct ks_target){ .kind = KS_TARGET_CONTROLLER,
                                                             .broker_id = -1,
                                                             .tp = { -1, -1 },
                                                             .client_index = -1 };
            }
        }
        if (fault->action == KS_FAULT_ROLLING_RESTART) {
            fault->side_a.count = 1;
            fault->side_a.items[0] = (struct ks_target){
                .kind = KS_TARGET_ALL, .broker_id = -1, .tp = { -1, -1 }, .client_index = -1
            };
            fault->side_b.count = 0;
            fault->downtime_ns = downtime_ms * 1000000;
        }
        fault->loss_ppm = loss_ppm;
        if (fault->action == KS_FAULT_RESTART) {
            /* A restart brings back what a crash left down: the loader
             * refuses one with nothing before it that could have stopped its
             * target, and one of a live node would be skipped. So it comes
             * with its own crash of the drawn broker id (no restart.after),
             * in the next slot, within the fault budget; without room it is
             * that crash alone. */
            struct gen_fault crash = gen;
            crash.fault.action = KS_FAULT_CRASH;
            crash.fault.target.kind = KS_TARGET_BROKER; /* broker_id holds the drawn broker */
            crash.fault.target.tp = (struct ks_tp){ -1, -1 };
            crash.fault.restart_after_ns = -1;
            g_array_append_val(faults, crash);
            int64_t room_ms = explore->duration_ms * 85 / 100 - gen.at_ms;
            if (i + 1 < count && room_ms >= 1) {
                gen.at_ms += 1 + (int64_t)rng_below(&rng, (uint64_t)MIN(room_ms, 10000));
                gen.fault.target = crash.fault.target;
                g_array_append_val(faults, gen);
                i++;
            }
            continue;
        }
        g_array_append_val(faults, gen);
    }
    return faults;
}

static int compare_fault_time(gconstpointer a, gconstpointer b)
{
    const struct gen_fault *x = a;
    const struct gen_fault *y = b;
    return x->at_ms < y->at_ms ? -1 : x->at_ms > y->at_ms;
}

/* The body of a [fault] section (without the header), as the fault table
 * writes it. Owned: g_free. */
static char *fault_body(const struct explore *explore, const struct gen_fault *gen)
{
    struct ks_fault fault = gen->fault;
    fault.at_ns = gen->at_ms * 1000000;
    GString *body = g_string_new("");
    ks_fault_write_ini(body, explore->base, &fault);
    return g_string_free(body, FALSE);
}

/* The base scenario with `faults` (sorted by time) as its schedule, finalized;
 * NULL with *error set if the scenario refuses them. Owned. */
static struct ks_scenario *scenario_with(const struct explore *explore, GArray *faults,
                                         GError **error)
{
    struct ks_scenario *scenario = ks_scenario_copy(explore->base);
    ks_scenario_remove_faults(scenario);
    bool ok = true;
    for (guint i = 0; ok && i < faults->len; i++) {
        g_autofree char *header = g_strdup_printf("fault explore-%u", i + 1);
        g_autofree char *body = fault_body(explore, &g_array_index(faults, struct gen_fault, i));
        ok = ks_scenario_add_section(scenario, header, body, "explore", error);
    }
    ok = ok && ks_scenario_finalize(scenario, error);
    if (!ok) {
        ks_scenario_free(scenario);
        return NULL;
    }
    return scenario;
}

/* ---- runs and their failure kinds --------------------------------------------- */

/* The failed expectations of run_id in the recorder's database, sorted and
 * joined with "; ". Owned: g_free. */
static char *failure_kind(struct ks_recorder *recorder, int64_t run_id)
{
    sqlite3 *db = (sqlite3 *)ks_recorder_db(recorder);
    sqlite3_stmt *stmt = NULL;
    GString *kind = g_string_new("");
    if (sqlite3_prepare_v2(db,
                           "SELECT expr FROM expectations WHERE run_id = ?1 AND NOT passed "
                           "ORDER BY expr",
                           -1, &stmt, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(stmt, 1, run_id);
        while (sqlite3_step(stmt) == SQLITE_ROW) {
            const char *expr = (const char *)sqlite3_column_text(stmt, 0);
            g_string_append_printf(kind, "%s%s", kind->len ? "; " : "", expr ? expr : "?");
        }
    }
    sqlite3_finalize(stmt);
    return g_string_free(kind, FALSE);
}

/* Runs `scenario` (with the seed) into `recorder`; returns the failure kind
 * ("" when every expectation held), or NULL if the run itself failed. */
static char *run_kind(const struct ks_scenario *scenario, uint64_t seed, bool seed_given,
                      struct ks_recorder *recorder, const char *run_dir,
                      struct ks_run_result *result, int *code)
{
    struct ks_run_options options = { .seed = seed,
                                      .seed_given = seed_given,
                                      .recorder = recorder,
                                      .run_dir = run_dir,
                                      .run_dir_discarded =
                                          true }; /* the pool's worker folder, removed at the end */
    GError *error = NULL;
    *code = ks_run_scenario(scenario, &options, result, &error);
    g_clear_error(&error);
    if (*code > 1) {
        return NULL;
    }
    return *code == 0 ? g_strdup("") : failure_kind(recorder, result->run_id);
}

/* Runs a candidate schedule; true if it fails with `kind`, and then its
 * first failure ("acked_lost = 0 (actual 12)") goes to failure. */
static bool still_fails(const struct explore *explore, GArray *faults, uint64_t seed,
                        const char *kind, struct ks_recorder *scratch, const char *run_dir,
                        int *runs, char *failure)
{
    (*runs)++;
    GError *error = NULL;
    struct ks_scenario *scenario = scenario_with(explore, faults, &error);
    if (scenario == NULL) {
        g_clear_error(&error);
        return false;
    }
    struct ks_run_result result;
    int code = 0;
    g_autofree char *got = run_kind(scenario, seed, true, scratch, run_dir, &result, &code);
    ks_scenario_free(scenario);
    bool same = got != NULL && strcmp(got, kind) == 0;
    if (same) {
        g_strlcpy(failure, result.first_failure, KS_RUN_FAILURE_BYTES);
    }
    return same;
}

/* R2: drop, then move later; `faults` is changed in place, and failure
 * (KS_RUN_FAILURE_BYTES, holding the original run's) becomes the kept
 * schedule's first failure. */
static void shrink(const struct explore *explore, GArray *faults, uint64_t seed, const char *kind,
                   struct ks_recorder *scratch, const char *run_dir, char *failure)
{
    int runs = 0;
    for (guint i = 0; i < faults->len && faults->len > 1 && runs < SHRINK_RUNS_MAX;) {
        GArray *candidate = g_array_copy(faults);
        g_array_remove_index(candidate, i);
        if (still_fails(explore, candidate, seed, kind, scratch, run_dir, &runs, failure)) {
            g_array_remove_index(faults, i); /* keep the drop; i names the next one now */
        } else {
            i++;
        }
        g_array_unref(candidate);
    }
    int64_t end_ms = explore->duration_ms * 95 / 100;
    for (guint i = 0; i < faults->len && runs < SHRINK_RUNS_MAX; i++) {
        /* Half the time left, then a quarter, ...: three tries per fault. */
        int misses = 0;
        for (int tries = 0; tries < 3 && runs < SHRINK_RUNS_MAX; tries++) {
            int64_t at_ms = g_array_index(faults, struct gen_fault, i).at_ms;
            int64_t step_ms = (end_ms - at_ms) >> (1 + misses);
            if (step_ms < 10) {
                break;
            }
            GArray *candidate = g_array_copy(faults);
            g_array_index(candidate, struct gen_fault, i).at_ms = at_ms + step_ms;
            if (still_fails(explore, candidate, seed, kind, scratch, run_dir, &runs, failure)) {
                g_array_index(faults, struct gen_fault, i).at_ms = at_ms + step_ms;
            } else {
                misses++;
            }
            g_array_unref(candidate);
        }
    }
    /* The order stays as the runs above had it (sections are named by
     * position), so that the reproducer is exactly what was checked. */
}

/* ---- the reproducer ------------------------------------------------------------- */

/* R3: the original text without [fault] sections, seed = S in [scenario]. */
static void write_base_text(GString *out, const char *text, uint64_t seed)
{
    if (g_str_has_prefix(text, "\xEF\xBB\xBF")) {
        text += 3; /* the loader skips a BOM at the start; here it would hide a header */
    }
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    bool in_fault = false;
    bool in_scenario = false;
    bool seen_scenario = false;
    for (size_t i = 0; lines[i] != NULL; i++) {
        const char *line = lines[i];
        const char *start = line + strspn(line, " \t");
        if (lines[i + 1] == NULL && *line == '\0') {
            break; /* the text's final newline */
        }
        if (*start == '[') {
            g_autofree char *name = g_strndup(start + 1, strcspn(start + 1, "]"));
            g_strstrip(name);
            in_fault = g_str_has_prefix(name, "fault ") || strcmp(name, "fault") == 0;
            in_scenario = strcmp(name, "scenario") == 0;
            if (!in_fault) {
                g_string_append_printf(out, "%s\n", line);
            }
            if (in_scenario) {
                seen_scenario = true;
                g_string_append_printf(
                    out, "seed = %" G_GUINT64_FORMAT "    # the failing seed (explore)\n", seed);
            }
            continue;
        }
        if (in_fault) {
            continue;
        }
        if (in_scenario && g_str_has_prefix(start, "seed") &&
            (start[4] == ' ' || start[4] == '\t' || start[4] == '=')) {
            continue;
        }
        g_string_append_printf(out, "%s\n", line);
    }
    if (!seen_scenario) {
        g_string_prepend(out, "");
        g_autofree char *head =
            g_strdup_printf("[scenario]\nseed = %" G_GUINT64_FORMAT "\n\n", seed);
        g_string_prepend(out, head);
    }
}

static char *reproducer_path(const struct explore *explore, uint64_t seed)
{
    g_autofree char *name =
        g_strdup_printf("explore-%s-s%" G_GUINT64_FORMAT ".ini", explore->base->name, seed);
    return explore->out_dir ? g_build_filename(explore->out_dir, name, NULL) : g_strdup(name);
}

static bool write_reproducer(const struct explore *explore, const char *path, uint64_t seed,
                             GArray *faults, guint fault_count_before, const char *first_failure,
                             GError **error)
{
    GString *text = g_string_new("");
    g_string_append_printf(text,
                           "# Reproducer written by ksim explore: seed %" G_GUINT64_FORMAT
                           " of %s fails its [expect]:\n"
                           "#   %s\n"
                           "# Found by:  %s\n"
                           "# The random schedule of %u fault(s) was shrunk to the %u below.\n"
                           "# Run it with:  ksim run %s\n\n",
                           seed, explore->path, first_failure, explore->found_by,
                           fault_count_before, faults->len, path);
    write_base_text(text, explore->text, seed);
    for (guint i = 0; i < faults->len; i++) {
        g_autofree char *body = fault_body(explore, &g_array_index(faults, struct gen_fault, i));
        g_string_append_printf(text, "\n[fault explore-%u]\n%s", i + 1, body);
    }
    bool ok = g_file_set_contents(path, text->str, (gssize)text->len, error);
    g_string_free(text, TRUE);
    return ok;
}

/* ---- one seed -------------------------------------------------------------------- */

/* slot->note: "KIND\tFILE\tBEFORE\tAFTER\tREPRODUCES\tFAILURE" for a failing
 * seed (FAILURE: the reproducer's first failed expectation). */
static void explore_job(void *context, size_t job_index, struct ks_recorder *recorder,
                        const char *run_dir, const char *worker_dir, struct ks_pool_slot *slot)
{
    struct explore *explore = context;
    uint64_t seed = g_array_index(explore->seeds, uint64_t, job_index);
    GArray *faults = generate_schedule(explore, seed);
    g_array_sort(faults, compare_fault_time);
    GError *error = NULL;
    struct ks_scenario *scenario = scenario_with(explore, faults, &error);
    if (scenario == NULL) {
        slot->code = 3;
        g_snprintf(slot->note, sizeof slot->note, "generated schedule refused: %s", error->message);
        g_error_free(error);
        g_array_unref(faults);
        return;
    }
    g_autofree char *kind =
        run_kind(scenario, seed, true, recorder, run_dir, &slot->result, &slot->code);
    ks_scenario_free(scenario);
    slot->run_id = slot->code <= 1 ? slot->result.run_id : 0;
    if (kind == NULL || slot->code != 1) {
        g_array_unref(faults);
        return;
    }
    guint before = faults->len;
    g_autofree char *scratch_path = g_build_filename(worker_dir, "shrink.db", NULL);
    struct ks_recorder *scratch = ks_recorder_open(scratch_path, &error);
    if (scratch == NULL) {
        g_snprintf(slot->note, sizeof slot->note, "%s\t\t%u\t%u\t0", kind, before, before);
        g_clear_error(&error);
        g_array_unref(faults);
        return;
    }
    char failure[KS_RUN_FAILURE_BYTES];
    g_strlcpy(failure, slot->result.first_failure, sizeof failure);
    /* Thrown away at the end of the seed: no fsync. */
    sqlite3_exec((sqlite3 *)ks_recorder_db(scratch), "PRAGMA synchronous = OFF", NULL, NULL, NULL);
    shrink(explore, faults, seed, kind, scratch, run_dir, failure);
    g_autofree char *path = reproducer_path(explore, seed);
    bool reproduces = false;
    if (write_reproducer(explore, path, seed, faults, before, failure, &error)) {
        struct ks_scenario *loaded = NULL;
        if (ks_scenario_load(path, &loaded, &error)) {
            struct ks_run_result result;
            int code = 0;
            g_autofree char *again =
                run_kind(loaded, seed, false, scratch, run_dir, &result, &code);
            reproduces = again != NULL && strcmp(again, kind) == 0;
            ks_scenario_free(loaded);
        }
    }
    if (error != NULL) {
        fprintf(stderr, "explore: seed %" G_GUINT64_FORMAT ": %s\n", seed, error->message);
        g_clear_error(&error);
    }
    ks_recorder_close(scratch);
    g_unlink(scratch_path);
    g_autofree char *wal = g_strdup_printf("%s-wal", scratch_path);
    g_autofree char *shm = g_strdup_printf("%s-shm", scratch_path);
    g_unlink(wal);
    g_unlink(shm);
    g_snprintf(slot->note, sizeof slot->note, "%s\t%s\t%u\t%u\t%d\t%s", kind, path, before,
               faults->len, reproduces ? 1 : 0, failure);
    g_array_unref(faults);
}

/* ---- the command ------------------------------------------------------------------- */

/* The usage on out; returns code (0 for --help, 2 for a bad command line). */
static int explore_usage(FILE *out, int code)
{
    fprintf(out, "usage: ksim explore SCENARIO --seeds A-B [--faults N] [--jobs N] [--db FILE]\n"
                 "                    [--shard I/N] [--out DIR]\n"
                 "  runs each seed with a random schedule of at most N faults (default 3) in\n"
                 "  place of the scenario's own; writes a shrunk reproducer for each failure\n");
    return code;
}

/* Fills what the generator needs from a finalized scenario (borrowed as
 * explore->base; the caller owns it). */
static bool explore_from_scenario(struct explore *explore, GError **error)
{
    explore->duration_ms = explore->base->duration_ns / 1000000;
    explore->broker_count = explore->base->cluster.broker_count;
    explore->tps = g_ptr_array_new_with_free_func(g_free);
    for (size_t t = 0; t < explore->base->topic_count; t++) {
        const struct ks_topic_config *topic = &explore->base->topics[t];
        for (int32_t p = 0; p < topic->partition_count; p++) {
            g_ptr_array_add(explore->tps, g_strdup_printf("%s-%d", topic->name, p));
        }
    }
    if (explore->duration_ms < 100 || explore->broker_count < 1) {
        g_set_error(error, KS_SCENARIO_ERROR, KS_SCENARIO_ERROR_VALUE,
                    "%s: explore needs a duration of at least 100ms and a broker",
                    explore->base->path);
        return false;
    }
    return true;
}

static bool load_explore(struct explore *explore, GError **error)
{
    gsize length = 0;
    /* Load first: the loader refuses a device or an oversized file unread. */
    if (!ks_scenario_load(explore->path, &explore->base, error)) {
        return false;
    }
    if (!g_file_get_contents(explore->path, &explore->text, &length, error)) {
        return false;
    }
    return explore_from_scenario(explore, error);
}

char *ks_explore_schedule_ini(const struct ks_scenario *scenario, uint64_t seed, uint32_t fault_max)
{
    struct explore explore = { .base = (struct ks_scenario *)scenario, .fault_max = fault_max };
    GError *error = NULL;
    GString *text = g_string_new("");
    if (explore_from_scenario(&explore, &error)) {
        GArray *faults = generate_schedule(&explore, seed);
        g_array_sort(faults, compare_fault_time);
        for (guint i = 0; i < faults->len; i++) {
            g_autofree char *body =
                fault_body(&explore, &g_array_index(faults, struct gen_fault, i));
            g_string_append_printf(text, "[fault explore-%u]\n%s\n", i + 1, body);
        }
        g_array_unref(faults);
    }
    g_clear_error(&error);
    if (explore.tps != NULL) {
        g_ptr_array_unref(explore.tps);
    }
    return g_string_free(text, FALSE);
}

struct failure_kind {
    char *kind;
    GString *seeds;
    int count;
};

static void print_summary(const struct explore *explore, struct ks_pool_slot *slots,
                          int *failed_out, int *broken_out)
{
    GPtrArray *kinds = g_ptr_array_new();
    int failed = 0;
    int broken = 0;
    int run = 0;
    int skipping = 0; /* passed with some fault skipped: that schedule was not all tried */
    for (guint j = 0; j < explore->seeds->len; j++) {
        uint64_t seed = g_array_index(explore->seeds, uint64_t, j);
        struct ks_pool_slot *slot = &slots[j];
        if (!slot->done || slot->code > 1) {
            broken++;
            printf("seed %" G_GUINT64_FORMAT ": run did not complete (%s)\n", seed,
                   slot->done ? slot->note : "worker died");
            continue;
        }
        run++;
        if (slot->code == 0) {
            skipping += slot->result.metrics[KS_METRIC_FAULTS_SKIPPED] > 0;
            continue;
        }
        failed++;
        g_auto(GStrv) parts = g_strsplit(slot->note, "\t", 6);
        const char *kind = parts[0] ? parts[0] : "?";
        struct failure_kind *entry = NULL;
        for (guint k = 0; k < kinds->len; k++) {
            struct failure_kind *candidate = g_ptr_array_index(kinds, k);
            if (strcmp(candidate->kind, kind) == 0) {
                entry = candidate;
            }
        }
        if (entry == NULL) {
            entry = g_new0(struct failure_kind, 1);
            entry->kind = g_strdup(kind);
            entry->seeds = g_string_new("");
            g_ptr_array_add(kinds, entry);
        }
        entry->count++;
        g_string_append_printf(entry->seeds, "%s%" G_GUINT64_FORMAT, entry->seeds->len ? ", " : "",
                               seed);
        printf("seed %" G_GUINT64_FORMAT ": FAIL %s\n", seed, slot->result.first_failure);
        if (g_strv_length(parts) < 6 || *parts[1] == '\0') {
            printf("    no reproducer written\n");
            continue;
        }
        printf("    shrunk from %s fault(s) to %s: %s\n    reproducer (%s): ksim run %s\n",
               parts[2], parts[3], parts[5],
               strcmp(parts[4], "1") == 0 ? "checked: fails again" : "DOES NOT fail again",
               parts[1]);
    }
    printf("explore: %d seeds run, %d failed, %u distinct failure kind(s)%s\n", run, failed,
           kinds->len, broken ? " (some runs did not complete)" : "");
    if (skipping > 0) {
        /* A skipped fault changed nothing: such a pass tried less than its
         * schedule says (faults_skipped; the timeline has the lines). */
        printf("  %d passing seed(s) had faults that changed nothing (faults_skipped > 0)\n",
               skipping);
    }
    for (guint k = 0; k < kinds->len; k++) {
        struct failure_kind *entry = g_ptr_array_index(kinds, k);
        printf("  %-40s %d seed(s): %s\n", entry->kind, entry->count, entry->seeds->str);
        g_free(entry->kind);
        g_string_free(entry->seeds, TRUE);
        g_free(entry);
    }
    g_ptr_array_unref(kinds);
    *failed_out = failed;
    *broken_out = broken;
}

static int explore_run(struct explore *explore, struct ks__pool_cli *cli)
{
    GError *error = NULL;
    uint64_t seed_last = 0;
    if (!ks_sweep_parse_seeds(cli->seeds_text, &explore->seed_first, &seed_last, &error) ||
        !load_explore(explore, &error)) {
        fprintf(stderr, "ksim explore: %s\n", error->message);
        g_error_free(error);
        return 2;
    }
    if (explore->out_dir != NULL && g_mkdir_with_parents(explore->out_dir, 0755) != 0) {
        fprintf(stderr, "ksim explore: --out %s: %s\n", explore->out_dir, g_strerror(errno));
        return 2;
    }
    explore->seeds = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    for (uint64_t seed = explore->seed_first; seed <= seed_last; seed++) {
        if (ks_sweep_shard_owns(seed - explore->seed_first, cli->shard_index, cli->shard_count)) {
            g_array_append_val(explore->seeds, seed);
        }
        if (seed == G_MAXUINT64) {
            break;
        }
    }
    struct ks_pool_options options = { .jobs = cli->jobs,
                                       .label = "explore",
                                       .progress = isatty(STDERR_FILENO) != 0 };
    struct ks_pool_slot *slots =
        ks_pool_run(explore->seeds->len, explore_job, explore, &options, cli->db_path, &error);
    if (slots == NULL) {
        fprintf(stderr, "ksim explore: %s\n", error->message);
        int code = ks__pool_error_code(error);
        g_error_free(error);
        return code;
    }
    int failed = 0;
    int broken = 0;
    print_summary(explore, slots, &failed, &broken);
    ks_pool_free(slots, explore->seeds->len);
    return broken > 0 ? 3 : failed > 0 ? 1 : 0;
}

int ks_explore_main(int argc, char **argv)
{
    struct ks__pool_cli cli = {
        .db_path = "ksim.db", .jobs = 1, .shard_index = 1, .shard_count = 1
    };
    struct explore explore = { .fault_max = EXPLORE_FAULTS_DEFAULT };
    bool bad = false;
    for (int i = 1; i < argc && !bad; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            return explore_usage(stdout, 0);
        }
        if (ks__pool_cli_option("explore", argc, argv, &i, &cli, &bad)) {
            continue;
        }
        if (strcmp(arg, "--faults") == 0 && i + 1 < argc) {
            char *end = NULL;
            long value = strtol(argv[++i], &end, 10);
            if (*end != '\0' || value < 1 || value > EXPLORE_FAULTS_MAX) {
                fprintf(stderr, "ksim explore: --faults %s: expected 1 to %d\n", argv[i],
                        EXPLORE_FAULTS_MAX);
                bad = true;
            }
            explore.fault_max = (uint32_t)value;
        } else if (strcmp(arg, "--out") == 0 && i + 1 < argc) {
            explore.out_dir = argv[++i];
        } else if (arg[0] == '-' || explore.path != NULL) {
            fprintf(stderr,
                    "ksim explore: %s: unknown option, missing value or second "
                    "scenario\n",
                    arg);
            bad = true;
        } else {
            explore.path = arg;
        }
    }
    if (bad || explore.path == NULL || cli.seeds_text == NULL) {
        return explore_usage(stderr, 2);
    }
    GString *found_by = g_string_new("ksim");
    for (int i = 0; i < argc; i++) {
        g_autofree char *quoted = g_shell_quote(argv[i]);
        g_string_append_printf(found_by, " %s", strpbrk(argv[i], " '\"$\\") ? quoted : argv[i]);
    }
    explore.found_by = g_string_free(found_by, FALSE);
    int code = explore_run(&explore, &cli);
    g_free(explore.found_by);
    g_free(explore.text);
    ks_scenario_free(explore.base);
    if (explore.tps != NULL) {
        g_ptr_array_unref(explore.tps);
    }
    if (explore.seeds != NULL) {
        g_array_unref(explore.seeds);
    }
    return code;
}
