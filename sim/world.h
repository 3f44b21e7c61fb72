/*
** sim/world.h: how the driver (scenario runner, tests, benchmarks) builds and
** steers the simulated world that core/world.h describes to Kafka code.
**
** The world knows nodes, links, files and events; it knows nothing of brokers
** or partitions. Faults are applied here and are data: a crash drops timers, a
** partition drops messages, power loss drops unsynced bytes.
*/
#pragma once

#include "../core/world.h"

#include <glib.h>
#include <setjmp.h>
#include <stdio.h>

struct ks_world_config {
    uint64_t seed;
    const char *run_dir;           /* real folder that holds every node's files; created */
    uint32_t node_count;           /* node ids 0 .. node_count-1; 0 is the driver */
    ks_time_ns network_latency_ns; /* one-way, default for every link */
    ks_time_ns network_jitter_ns;  /* uniform extra delay in [0, jitter] */
    ks_time_ns disk_fsync_latency_ns;
    uint64_t disk_bandwidth_bytes_per_s; /* 0 = free */
    uint32_t open_file_count_max;        /* real descriptors kept open; 0 = 512 */
    /* The operating system's writeback (sim/disk.c, "Durability model"): a
     * file dirty for disk_writeback_expire_ns is written back at the next
     * wake-up of its node's flusher, every disk_writeback_interval_ns (Linux's
     * vm.dirty_expire_centisecs and vm.dirty_writeback_centisecs). Interval 0
     * or expire KS_TIME_NEVER: nothing is written back by age. The flusher
     * wakes at a per-node phase drawn from the seed, or at multiples of the
     * interval when disk_writeback_aligned. */
    ks_time_ns disk_writeback_expire_ns;
    ks_time_ns disk_writeback_interval_ns;
    bool disk_writeback_aligned;
    /* Writers wait for writeback while the node's dirty bytes exceed this
     * (vm.dirty_bytes / dirty_ratio); 0 = no limit. */
    uint64_t disk_dirty_limit_bytes;
    /* The page cache of each node: reads of bytes outside it cost the disk;
     * 0 = unlimited (every byte written or read in this world stays cached
     * until a power loss). */
    uint64_t disk_page_cache_bytes;
};

/* Returns a new world, or NULL with *error set if run_dir cannot be made.
 * Owned by the caller: ks_world_free. */
ks_world *ks_world_new(const struct ks_world_config *config, GError **error);
void ks_world_free(ks_world *world); /* NULL is a no-op; closes every file */

/* A view of world for one cluster of several sharing its clock, events and
 * random streams (one event order): core/ code given the view sees nodes
 * 0 .. node_count-1, where 0 is the driver and node n >= 1 is the world's
 * node_base + n - 1, and paths under the folder path_prefix (one component,
 * e.g. "east": its broker-1/... is the run folder's east/broker-1/...).
 * Timers scheduled and receivers set through the view get the view back,
 * with its node ids. A node outside the view (a client of two clusters)
 * may send to a node of the view; the view sees its id wrapped, and answers
 * reach it. Owned by world, freed with it; views of views are not allowed.
 * The driver steers nodes (crash, partition, ...) through the world with
 * the world's ids (ks_world_view_node). */
ks_world *ks_world_view_new(ks_world *world, uint32_t node_base, uint32_t node_count,
                            const char *path_prefix);
/* The world's id of the view's node. */
ks_node_id ks_world_view_node(const ks_world *view, ks_node_id node);

/* ---- running ---------------------------------------------------------- */

/* Runs events in (time, seq) order while the next one is at or before
 * until_ns, then sets the clock to until_ns. Returns events processed. */
uint64_t ks_world_run_until(ks_world *world, ks_time_ns until_ns);
/* Runs until no event is pending or until_ns passes. */
uint64_t ks_world_run_until_idle(ks_world *world, ks_time_ns until_ns);
uint64_t ks_world_event_count(const ks_world *world);
/* Called after every processed event (trigger evaluation, checkers); NULL clears. */
void ks_world_set_after_event(ks_world *world, void (*fn)(ks_world *world, void *context),
                              void *context);

/* ---- trace ------------------------------------------------------------ */

/* Running 64-bit hash over every processed event's (at_ns, kind, node, payload). */
uint64_t ks_world_trace_hash(const ks_world *world);
/* Writes one line per processed event to `out` (borrowed; NULL stops). */
void ks_world_set_trace(ks_world *world, FILE *out);
/* Folds a driver-level observation (an election, a record outcome) into the hash. */
void ks_world_trace_mix(ks_world *world, uint32_t kind, ks_node_id node, const void *bytes,
                        size_t byte_count);

/* ---- node faults ------------------------------------------------------ */

/* Crash: drop node's timers and in-flight messages to it; the node is down
 * until restarted. With power_loss, every file of the node loses its unsynced
 * bytes (and the last unsynced write may be torn, KS_RNG_DISK; see sim/disk.c). */
void ks_world_node_crash(ks_world *world, ks_node_id node, bool power_loss);
void ks_world_node_restart(ks_world *world, ks_node_id node);
void ks_world_node_pause(ks_world *world, ks_node_id node);
void ks_world_node_resume(ks_world *world, ks_node_id node);
bool ks_world_node_is_paused(const ks_world *world, ks_node_id node);

/* ---- network faults --------------------------------------------------- */

/* Link faults are counted: a one-way link source->target is down while any
 * active cut names it. Each call returns a cut id; ks_world_net_heal removes it. */
typedef uint32_t ks_cut_id;
/* Cuts every link between a node in `side_a` and a node in `side_b`, both ways. */
ks_cut_id ks_world_net_partition(ks_world *world, const ks_node_id *side_a, size_t a_count,
                                 const ks_node_id *side_b, size_t b_count);
/* Cuts source->target only. */
ks_cut_id ks_world_net_cut_one_way(ks_world *world, ks_node_id source, ks_node_id target);
void ks_world_net_heal(ks_world *world, ks_cut_id cut);
void ks_world_net_heal_all(ks_world *world);
bool ks_world_net_link_is_up(const ks_world *world, ks_node_id source, ks_node_id target);
void ks_world_net_set_link_latency(ks_world *world, ks_node_id a, ks_node_id b,
                                   ks_time_ns latency_ns); /* both directions */
/* Extra latency on every message to or from node (a slow node); 0 clears. */
void ks_world_net_set_node_delay(ks_world *world, ks_node_id node, ks_time_ns extra_ns);
/* Drops each message with this probability in parts per million (0..1000000). */
void ks_world_net_set_loss_ppm(ks_world *world, uint32_t loss_ppm);

/* ---- disk faults ------------------------------------------------------ */

/* Extra latency added to every disk operation of node; 0 clears. */
void ks_world_disk_set_node_delay(ks_world *world, ks_node_id node, ks_time_ns extra_ns);
/* Flips (XOR 0xFF) byte_count bytes of a file at position, durably. */
bool ks_world_disk_corrupt(ks_world *world, ks_node_id node, const char *path,
                           int64_t position_bytes, size_t byte_count);
/* Bytes of the file that survive power loss now; -1 if there is no such file. */
int64_t ks_world_disk_durable_size(ks_world *world, ks_node_id node, const char *path);
uint64_t ks_world_disk_fsync_count(const ks_world *world, ks_node_id node);

/* What a node's disk did so far, for tests, benchmarks and the timeline. */
struct ks_world_disk_stats {
    uint64_t fsync_count;          /* ks_disk_fsync and ks_disk_fsync_background calls */
    uint64_t writeback_pass_count; /* flusher wake-ups that wrote something, and throttles */
    uint64_t writeback_bytes;      /* bytes made durable by writeback (not by fsync) */
    uint64_t throttle_count;       /* writes that waited because of the dirty limit */
    uint64_t read_miss_bytes;      /* bytes read from the device (outside the page cache) */
    int64_t dirty_bytes;           /* now: bytes that a power loss would lose */
    int64_t cached_bytes;          /* now: bytes in the node's page cache */
};
/* Fills *out as of now (running the node's flusher up to now first). */
void ks_world_disk_stats(ks_world *world, ks_node_id node, struct ks_world_disk_stats *out);
/* ---- host I/O failures ------------------------------------------------- */

/* A host call that fails under the disk (the real disk is full, a file
 * became unreadable) is not a simulated fault: the run cannot go on. With an
 * escape set, the failure is recorded ("REAL-PATH: CALL failed: why") and
 * longjmp()s there once (the escape is cleared first); the model is then in
 * the middle of an event, so the caller may only tear the run down: from
 * then on the disk discards unwritten bytes instead of writing them, and
 * freeing the world is safe. Without an escape, the message is printed and
 * the process exits 3. */
void ks_world_set_host_escape(ks_world *world, jmp_buf *escape);
/* The recorded failure, or NULL. Borrowed, valid until ks_world_free. */
const char *ks_world_host_error(const ks_world *world);

/* Removes a real folder tree (or file) of the host, outside the simulation: for
 * the driver replacing a run folder, and for tests and benchmarks cleaning up.
 * Symbolic links are removed, never followed. Errors are ignored. */
void ks_host_remove_tree(const char *path);

/* A private temporary folder "<base>/<prefix>XXXXXX" (base NULL: the
 * system's temporary folder) for a process and the workers it forks. It
 * holds a lock file that stays flock()ed while any of them is alive (the
 * descriptor is inherited), and before making it, folders of the same
 * prefix whose lock is free (left by a ksim that was killed) are removed,
 * so that even a SIGKILL leaks a folder only until the next ksim. Returns
 * the path (owned: pass to ks_host_temp_dir_free) and *lock_fd, or NULL
 * with *error set. */
char *ks_host_temp_dir_new(const char *base, const char *prefix, int *lock_fd, GError **error);
/* Removes the folder and closes its lock (after the children are gone). */
void ks_host_temp_dir_free(char *path, int lock_fd);
/* Real path of a run-relative path, for tools that read files directly
 * (dump-log, the checker). Owned by the caller: g_free. */
char *ks_world_real_path(const ks_world *world, const char *path);
