/* tests/bench/bench_time.h: the benchmarks' two clocks, and the folder
 * their files go to.
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

#include <glib.h>
#include <time.h>
#include <unistd.h>

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

/* Points TMPDIR (and so g_dir_make_tmp, and the cluster fixture's run
 * folders) at a tmpfs: KSIM_BENCH_TMPDIR when set, else /dev/shm when it is
 * writable, else TMPDIR as it is; returns the folder. Call it first in
 * main, before anything reads g_get_tmp_dir (glib reads it once).
 *
 * Why: on a disk file system the CPU time of creating, writing and deleting
 * files depends on the host's history, not on ksim. On this machine's ext4,
 * creating the 15,000 files of 3,000 replicas cost 21 CPU seconds in inode
 * allocation in a folder many files had been deleted from (1 s on tmpfs),
 * and a write() allocates blocks, journals and waits on the writeback of
 * what earlier runs or other processes dirtied. On tmpfs a write() is a page
 * allocation and a copy, the same from run to run; the log's files still
 * are real files, read back by the same system calls. */
static inline const char *bench_use_tmpfs(void)
{
    const char *dir = g_getenv("KSIM_BENCH_TMPDIR");
    if (dir == NULL && access("/dev/shm", W_OK) == 0) {
        dir = "/dev/shm";
    }
    if (dir != NULL) {
        g_setenv("TMPDIR", dir, TRUE);
    }
    return g_get_tmp_dir();
}

#endif
