/*
** core/world.h: the seam. Everything Kafka code (core/) may ask of the world it
** runs in: time, timers, randomness, messages and files. sim/ implements it
** (sim/world.c); core/ never includes anything from sim/ (make check-deps).
**
** Time. Simulated time is uint64_t nanoseconds since the start of the run. It
** only moves when the scheduler pops the next event. Events are ordered by
** (at_ns, seq) where seq is a per-world insertion counter, so two events at the
** same time run in the order they were scheduled.
**
** Nodes. A node is a broker, the controller, a producer or a consumer. Node ids
** are small integers handed out by whoever builds the world (sim/ driver);
** node 0 is the driver itself (fault schedule, samplers, final read), which
** never crashes, pauses or gets cut off. Every timer and every message belongs
** to a node (its owner, or its target):
**   - a crashed node's pending timers are dropped and messages to it are lost;
**   - a paused node's timers and incoming messages wait and run, in their
**     original order, when it is resumed (a long GC pause);
**   - a restarted node starts with no timers; its owner re-arms them.
**
** Contexts. `context` pointers passed to ks_world_schedule are borrowed: the
** world never frees them. Because a crash drops timers silently, a context must
** outlive every timer that names it (use long-lived objects: the broker, the
** producer), never a per-timer allocation.
**
** Messages. ks_world_send copies the bytes; the receiver gets a borrowed view
** valid for the duration of its handler. Messages on one (source, target)
** connection arrive in the order sent (TCP): jitter never reorders them. A
** message to a crashed or cut-off node is dropped and the sender learns
** nothing; its request times out, as with TCP. Build messages in zeroed memory
** (calloc/memset): the trace hash covers their bytes, padding included.
**
** Files. Paths are relative to the run directory and use '/'; a path with
** "..", a leading '/' or an empty component is a bug (ks_assert). Files belong
** to a node's disk: power loss of that node loses every byte written to its
** files after their last fsync, unless the operating system's writeback wrote
** it out first (see sim/disk.c for the fault model). Reads see "disk plus
** page cache": core cannot tell whether bytes are durable.
** Disk calls also have a simulated cost, as a page cache in front of a serial
** device sees them: a write lands in the page cache at once (unless the node
** has too much dirty data), an fsync and a read of uncached bytes wait for the
** device. ks_disk_idle_at_ns says when the calls a node made so far are done
** from the caller's view; a broker that must not answer before its append is
** done schedules its response at that time. ks_disk_fsync_background is an
** fsync the caller does not wait for (a Kafka scheduler thread's).
*/
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t ks_time_ns;  /* simulated time since run start */
typedef uint32_t ks_node_id;  /* 0 = the driver; brokers, controller, clients above */
typedef uint64_t ks_timer_id; /* 0 = none */
typedef struct ks_world ks_world;
typedef struct ks_file ks_file;

#define KS_NODE_DRIVER ((ks_node_id)0)
#define KS_TIME_NEVER  UINT64_MAX

/* One independent random stream per subsystem, all derived from the run seed,
 * so that more draws in one never shift another (TigerBeetle's rule). */
enum ks_rng_stream {
    KS_RNG_NET,      /* message loss (jitter: one stream per connection, sim/net.c) */
    KS_RNG_DISK,     /* torn writes */
    KS_RNG_WORKLOAD, /* keys, producer timing */
    KS_RNG_FAULT,    /* random targets, explore schedules */
    KS_RNG_CLUSTER,  /* replica placement, election tie-breaks, member ids */
    KS_RNG_CLIENT,   /* client backoff jitter, sticky partitioner */
    KS_RNG_PHASE,    /* process start timing: client start offsets, phases of the
                        brokers' periodic tasks (drawn once each, at start) */
    KS_RNG_COUNT
};

typedef void ks_event_fn(ks_world *world, void *context);

/* Called for each message delivered to `self`. `message` is borrowed for the
 * duration of the call. */
typedef void ks_receive_fn(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                           const void *message, size_t message_bytes, void *context);

/* ---- time and randomness ---------------------------------------------- */

ks_time_ns ks_world_now_ns(const ks_world *world);
uint64_t ks_world_seed(const ks_world *world);
uint64_t ks_world_random_u64(ks_world *world, enum ks_rng_stream stream);
/* Uniform in [0, bound), bound > 0, without modulo bias. */
uint64_t ks_world_random_below(ks_world *world, enum ks_rng_stream stream, uint64_t bound);
/* In [0, bound) from exactly one draw, also when bound is 0 (then 0): for a
 * draw whose count must not depend on a setting, so that turning a setting
 * off never shifts the draws after it. Multiply-shift without rejection; its
 * bias is below bound / 2^64. */
uint64_t ks_world_random_scaled(ks_world *world, enum ks_rng_stream stream, uint64_t bound);

/* ---- timers ----------------------------------------------------------- */

/* Runs fn(world, context) delay_ns from now, owned by `owner`. `kind` is a
 * small code naming the event for the trace and its hash (function addresses
 * differ between builds, so they cannot be hashed). Returns an id for
 * ks_world_cancel. */
ks_timer_id ks_world_schedule(ks_world *world, ks_node_id owner, ks_time_ns delay_ns, uint32_t kind,
                              ks_event_fn *fn, void *context);
/* Cancels a pending timer; a no-op if it already ran, was dropped or id is 0. */
void ks_world_cancel(ks_world *world, ks_timer_id id);

/* ---- network ---------------------------------------------------------- */

/* Sets the handler for messages to `node`. context is borrowed. */
void ks_world_set_receiver(ks_world *world, ks_node_id node, ks_receive_fn *fn, void *context);
/* Sends a copy of message to target over the (source, target) connection. */
void ks_world_send(ks_world *world, ks_node_id source, ks_node_id target, uint32_t kind,
                   const void *message, size_t message_bytes);
/* ks_world_send without the copy: message is a g_malloc'd buffer that the
 * world takes (it frees it when the message is delivered or dropped). The
 * same event, bytes and trace as ks_world_send. */
void ks_world_send_owned(ks_world *world, ks_node_id source, ks_node_id target, uint32_t kind,
                         void *message, size_t message_bytes);
/* True if the node is up (not crashed). A paused node is up. */
bool ks_world_node_is_up(const ks_world *world, ks_node_id node);

/* ---- disk ------------------------------------------------------------- */

enum ks_io_result {
    KS_IO_OK,
    KS_IO_NOT_FOUND, /* open without KS_DISK_CREATE, rename or delete of a missing file */
    KS_IO_ERROR,     /* a simulated I/O error (reserved for a later fault) */
};

enum ks_disk_open_flags {
    KS_DISK_CREATE = 1u << 0,   /* create if missing */
    KS_DISK_TRUNCATE = 1u << 1, /* empty it */
};

/* Opens path on node's disk; NULL (and *result set) if missing without
 * KS_DISK_CREATE. The handle is owned by the caller: ks_disk_close it.
 * Parent folders are created as needed. */
ks_file *ks_disk_open(ks_world *world, ks_node_id node, const char *path, unsigned flags,
                      enum ks_io_result *result);
void ks_disk_close(ks_file *file); /* NULL is a no-op; does not fsync */
int64_t ks_disk_size(const ks_file *file);
/* A count that grows whenever bytes the file already held may have changed:
 * a write below its end, a truncate, corruption, a power loss, a change by
 * another program. Appends leave it. A reader that remembers where things
 * lie in a file checks with it that the file is as it left it. */
uint64_t ks_disk_rewrite_count(const ks_file *file);
/* True when every byte of [position, position + byte_count) is in the page
 * cache, so that a read of any of them costs no time and changes nothing
 * but the file's place in the cache's order, as a read of any other of them
 * would. */
bool ks_disk_cached(const ks_file *file, int64_t position_bytes, int64_t byte_count);
enum ks_io_result ks_disk_append(ks_file *file, const void *bytes, size_t byte_count);
enum ks_io_result ks_disk_pwrite(ks_file *file, const void *bytes, size_t byte_count,
                                 int64_t position_bytes);
/* Reads up to byte_count bytes at position; *read_count_out may be short at EOF. */
enum ks_io_result ks_disk_read(ks_file *file, void *bytes, size_t byte_count,
                               int64_t position_bytes, size_t *read_count_out);
enum ks_io_result ks_disk_fsync(ks_file *file);
/* The same durability at once, but the calling node does not wait: the
 * device does the work in the background (Kafka's scheduler threads: the
 * flush after a segment roll, flush.ms, checkpoint files). Later calls that
 * need the device queue behind it. */
enum ks_io_result ks_disk_fsync_background(ks_file *file);
enum ks_io_result ks_disk_truncate(ks_file *file, int64_t size_bytes);

/* Whole-file operations by path on node's disk. Rename replaces the target and
 * is durable at once (as after fsync of the folder: a simplification, see
 * docs/model.md). Delete of a missing file returns KS_IO_NOT_FOUND. */
enum ks_io_result ks_disk_rename(ks_world *world, ks_node_id node, const char *from,
                                 const char *to);
enum ks_io_result ks_disk_delete(ks_world *world, ks_node_id node, const char *path);
/* Replaces path's content with bytes atomically, as writing `<path>.tmp`
 * (ks_disk_open with KS_DISK_CREATE | KS_DISK_TRUNCATE, ks_disk_append),
 * fsyncing it (ks_disk_fsync when wait, else ks_disk_fsync_background),
 * closing it and renaming it over path do (Kafka's CheckpointFile.write:
 * temporary file, flush, atomic move): the same durability, cost, page-cache
 * and writeback effects, crash and power-loss outcome and result (a failed
 * write leaves `<path>.tmp` and path as they were), for less work. */
enum ks_io_result ks_disk_replace(ks_world *world, ks_node_id node, const char *path,
                                  const void *bytes, size_t byte_count, bool wait);
bool ks_disk_exists(ks_world *world, ks_node_id node, const char *path);
/* Creates a folder and its parents (durable at once). */
enum ks_io_result ks_disk_mkdir(ks_world *world, ks_node_id node, const char *path);
/* The same; true when the folder did not exist before this call, so that it
 * holds only what later calls put into it (a new log need not list it). */
bool ks_disk_mkdir_new(ks_world *world, ks_node_id node, const char *path);
/* Names (not paths) of the entries of folder `path`, sorted by strcmp, in a
 * NULL-terminated array owned by the caller: free with ks_disk_list_free.
 * Returns NULL if the folder does not exist. */
char **ks_disk_list(ks_world *world, ks_node_id node, const char *path);
void ks_disk_list_free(char **names);

/* When the disk calls node made so far are done from its view (>= now): the
 * last fsync, uncached read or throttled write it waited for. Background work
 * of the device (writeback, background fsyncs) only delays it through those. */
ks_time_ns ks_disk_idle_at_ns(const ks_world *world, ks_node_id node);
