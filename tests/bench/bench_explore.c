/* tests/bench/bench_explore.c: how many seeds `ksim explore` runs per second
 * on a quickstart-sized scenario (issue 16).
 *
 * The scenario is scenarios/quickstart.ini's cluster and clients (3 brokers,
 * one topic of 3 partitions, RF 3, 500 records/s, one consumer group; 30
 * simulated s and a 60 s drain) with no [expect] and no [fault] of its own,
 * so that no seed fails and explore shrinks nothing: every second counted
 * is a seed run. explore runs seeds 1-SEEDS with --jobs 1 and --faults 3,
 * then `ksim sweep` runs the same seeds with no fault (one --vary value,
 * --jobs 1), in a folder of its own. Prints
 *
 *   BENCH explore_seeds_per_s <v> seeds/s ratio=<v / the sweep's rate>
 *
 * v is seeds per wall second with up to 3 random faults per seed (what a
 * user waits for); the baseline is the plain runs of the same seeds by
 * sweep, measured in the same run, so the ratio is what the schedule, its
 * faults and their recovery cost. The CPU time of each pass (this process
 * and its children) is on a comment line. */
#include "../../sim/commands.h"
#include "bench_time.h"

#include <fcntl.h>
#include <glib.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#define SEEDS 10

static const char scenario_text[] = "[scenario]\n"
                                    "name = bench-explore\n"
                                    "seed = 1\n"
                                    "duration = 30s\n"
                                    "final.heal = true\n"
                                    "final.drain = 60s\n"
                                    "\n"
                                    "[cluster]\n"
                                    "brokers = 3\n"
                                    "network.latency = 1ms\n"
                                    "disk.fsync.latency = 2ms\n"
                                    "\n"
                                    "[topic orders]\n"
                                    "partitions = 3\n"
                                    "replication.factor = 3\n"
                                    "min.insync.replicas = 2\n"
                                    "\n"
                                    "[producer p1]\n"
                                    "topic = orders\n"
                                    "acks = all\n"
                                    "rate = 500/s\n"
                                    "keys = 100\n"
                                    "value.bytes = 100\n"
                                    "\n"
                                    "[consumer c1]\n"
                                    "group.id = g1\n"
                                    "topic = orders\n"
                                    "commit = after-process\n"
                                    "processing.time = 1ms\n"
                                    "auto.offset.reset = earliest\n";

static double cpu_with_children_s(void)
{
    struct rusage self, children;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &children);
    return (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + children.ru_utime.tv_sec +
                    children.ru_stime.tv_sec) +
           (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec + children.ru_utime.tv_usec +
                    children.ru_stime.tv_usec) /
               1e6;
}

/* One pass of explore (sweep false) or sweep over seeds 1-SEEDS; returns its
 * exit code, and its wall and CPU seconds. */
static int seeds_pass(const char *dir, const char *ini, bool sweep, double *wall_s, double *cpu_s)
{
    char *db = g_strdup_printf("%s/%s.db", dir, sweep ? "sweep" : "explore");
    char seeds[32];
    g_snprintf(seeds, sizeof seeds, "1-%d", SEEDS);
    char *explore_argv[] = { "explore", (char *)ini, "--seeds", seeds,   "--faults",  "3", "--jobs",
                             "1",       "--db",      db,        "--out", (char *)dir, NULL };
    char *sweep_argv[] = { "sweep",   (char *)ini, "--vary", "producer.p1.acks=all",
                           "--seeds", seeds,       "--jobs", "1",
                           "--db",    db,          NULL };
    char **argv = sweep ? sweep_argv : explore_argv;
    int argc = 0;
    while (argv[argc] != NULL) {
        argc++;
    }
    /* explore's progress and summary lines are not this benchmark's output. */
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    close(null);
    double wall = bench_wall_s();
    double cpu = cpu_with_children_s();
    int code = sweep ? ks_sweep_main(argc, argv) : ks_explore_main(argc, argv);
    *cpu_s = cpu_with_children_s() - cpu;
    *wall_s = bench_wall_s() - wall;
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    g_free(db);
    return code;
}

int main(void)
{
    printf("# files in %s (bench_use_tmpfs; the ksim processes inherit TMPDIR)\n",
           bench_use_tmpfs());
    char *dir = g_dir_make_tmp("ksim-bench-explore-XXXXXX", NULL);
    if (dir == NULL) {
        fprintf(stderr, "bench_explore: no temporary folder\n");
        return 1;
    }
    char *ini = g_build_filename(dir, "bench-explore.ini", NULL);
    if (!g_file_set_contents(ini, scenario_text, -1, NULL)) {
        fprintf(stderr, "bench_explore: cannot write %s\n", ini);
        return 1;
    }
    double wall3 = 0, cpu3 = 0, wall0 = 0, cpu0 = 0;
    int code3 = seeds_pass(dir, ini, false, &wall3, &cpu3);
    int code0 = seeds_pass(dir, ini, true, &wall0, &cpu0);
    char *rm = g_strdup_printf("rm -rf '%s'", dir);
    if (system(rm) != 0) {
        fprintf(stderr, "bench_explore: could not remove its folder\n");
    }
    g_free(rm);
    g_free(ini);
    g_free(dir);
    printf("# %d seeds, --jobs 1: explore --faults 3 wall %.2f s cpu %.2f s (exit %d); "
           "sweep wall %.2f s cpu %.2f s (exit %d)\n",
           SEEDS, wall3, cpu3, code3, wall0, cpu0, code0);
    if (code3 != 0 || code0 != 0) {
        printf("# explore failed\n");
        return 1;
    }
    double rate3 = SEEDS / (wall3 > 0 ? wall3 : 1e-9);
    double rate0 = SEEDS / (wall0 > 0 ? wall0 : 1e-9);
    printf("BENCH explore_seeds_per_s %.2f seeds/s ratio=%.4f\n", rate3, rate3 / rate0);
    printf("# in CPU time: %.2f seeds/cpu-s explored, %.2f swept\n",
           SEEDS / (cpu3 > 0 ? cpu3 : 1e-9), SEEDS / (cpu0 > 0 ? cpu0 : 1e-9));
    return 0;
}
