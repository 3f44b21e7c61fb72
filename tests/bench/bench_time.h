/* tests/bench/bench_time.h: the benchmarks' two clocks.
 *
 * The figures are measured in the process's CPU time (user + system, so the
 * kernel's work for write() and read() counts): on a machine shared with
 * other processes, wall time also counts the time this process waited for a
 * core, or slept in the kernel's dirty-page throttling because of what
 * others wrote, and both vary from run to run far more than the code's own
 * cost. Wall time is printed next to it on comment lines. Every benchmark is
 * single-threaded, so process and thread CPU time are the same. */
#ifndef KS_BENCH_TIME_H
#define KS_BENCH_TIME_H

#include <time.h>

static inline double bench_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline double bench_wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
