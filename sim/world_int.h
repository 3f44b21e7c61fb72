/*
** sim/world_int.h: the inside of struct ks_world, shared by the files that
** implement the world (world.c, sched.c, rng.c, net.c, disk.c) and by nothing
** else. Symbols here are ks__ (module-internal, STYLE 3.3).
*/
#pragma once

#include "../core/base.h"
#include "world.h"

#include <glib.h>
#include <setjmp.h>
#include <stdio.h>

#define KS__NONE           UINT32_MAX /* "no event" in event links */
#define KS__SLOT_BITS      24         /* heap entries pack (seq << 24 | slot) */
#define KS__SLOT_COUNT_MAX (1u << KS__SLOT_BITS)
#define KS__SEQ_MAX        (UINT64_C(1) << (64 - KS__SLOT_BITS))

/* disk.c S4: the staging buffers' budget (world->stage_budget_bytes). */
#define KS__STAGE_BUDGET_BYTES ((uint64_t)256 * 1024 * 1024)

/* Message buffers (net.c): size classes of 64 << c bytes, c < the count;
 * a message larger than the largest, or sent owned, is its sender's or its
 * own g_malloc'd buffer (KS__MESSAGE_MALLOC). */
#define KS__MESSAGE_CLASS_COUNT 12 /* 64 B .. 128 KiB */
#define KS__MESSAGE_MALLOC      0xff
/* 0 under AddressSanitizer: every message its own g_malloc block */
#if defined(__SANITIZE_ADDRESS__)
#define KS__MESSAGE_POOL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KS__MESSAGE_POOL 0
#endif
#endif
#ifndef KS__MESSAGE_POOL
#define KS__MESSAGE_POOL 1
#endif

enum ks__event_type { KS__EVENT_FREE, KS__EVENT_TIMER, KS__EVENT_MESSAGE };

/* One pending event, in the world's pool (an array indexed by slot). */
struct ks__event {
    ks_time_ns at_ns;
    uint32_t generation; /* bumped when the slot is freed; part of ks_timer_id */
    uint8_t type;        /* enum ks__event_type */
    bool cancelled;      /* lazily removed: dropped when popped or compacted */
    bool in_heap;        /* false while deferred in a paused node's queue */
    uint8_t heap;        /* while in_heap: enum ks__heap_kind */
    ks_node_id node;     /* timer owner, or message target */
    ks_node_id source;   /* messages only */
    uint32_t kind;
    uint32_t incarnation; /* node's incarnation when scheduled (timer) or sent (message) */
    uint32_t next;        /* free list, or the paused node's deferred queue */
    uint8_t buffer_class; /* messages: of u.message.bytes, or KS__MESSAGE_MALLOC */
    union {
        struct {
            ks_event_fn *fn;
            void *context;  /* not owned */
            ks_world *view; /* not owned: the world fn gets (the root or a view) */
        } timer;
        struct {
            uint8_t *bytes; /* owned (ks__message_buffer_free); NULL when empty */
            size_t byte_count;
        } message;
    } u;
};

/* A heap entry: ordered by at_ns, then seq_slot (seq in the high bits, so the
 * order is (at_ns, seq), and the slot rides along for free). */
struct ks__heap_entry {
    ks_time_ns at_ns;
    uint64_t seq_slot;
};

/* The scheduler's two heaps (sched.c): events due within NEAR_NS of
 * the time they were scheduled, and the rest (timeouts, mostly cancelled). */
enum ks__heap_kind { KS__HEAP_NEAR, KS__HEAP_FAR, KS__HEAP_COUNT };

struct ks__heap {
    struct ks__heap_entry *entries; /* owned; a 4-ary min-heap */
    uint32_t count;
    uint32_t capacity;
    uint32_t cancelled_count; /* cancelled entries still in it (S5) */
};

/* A tiny open-addressing map from uint64 to uint64 (UINT64_MAX keys are not
 * allowed). It is only ever looked up, never iterated, so its layout cannot
 * reach the simulation. */
struct ks__map {
    uint64_t *keys;
    uint64_t *values;
    uint32_t capacity; /* power of two, or 0 */
    uint32_t count;
};

/* One (source, target) connection of the network (net.c). */
struct ks__connection {
    uint64_t pair;               /* ks__pair(source, target); UINT64_MAX: an empty slot */
    ks_time_ns last_delivery_ns; /* of its last message (N1) */
    uint64_t jitter_state;       /* its own splitmix64 jitter stream */
};

/* Open addressing by pair, like struct ks__map: only looked up, never
 * iterated. */
struct ks__connections {
    struct ks__connection *slots; /* owned */
    uint32_t capacity;            /* power of two, or 0 */
    uint32_t count;
};

struct ks__node {
    bool up;
    bool paused;
    uint32_t incarnation;                  /* bumped at crash and at restart */
    uint32_t deferred_head, deferred_tail; /* events that came due while paused */
    ks_receive_fn *receiver;
    void *receiver_context;  /* not owned */
    ks_world *receiver_view; /* not owned: the world the receiver was set through */
    ks_time_ns net_delay_ns;
    /* disk (disk.c, "Cost model") */
    ks_time_ns disk_delay_ns;     /* the slow fault's latency per device request */
    ks_time_ns disk_done_at_ns;   /* the calls the node waits for are done (ks_disk_idle_at_ns) */
    ks_time_ns device_idle_at_ns; /* the device has done every request queued on it */
    ks_time_ns flusher_next_ns;   /* next flusher wake-up; KS_TIME_NEVER: no writeback by age */
    ks_time_ns flusher_phase_ns;  /* wake-ups at phase + k * interval, k >= 1 */
    int64_t dirty_bytes;          /* sum of the node's files' dirty bytes */
    int64_t cached_bytes;         /* sum of the node's files' cached ranges */
    GQueue dirty_files;           /* struct ks__file_record, oldest dirtied first (disk.c) */
    GQueue cached_files;          /* struct ks__file_record, last touched first */
    struct ks_world_disk_stats disk_stats;
};

struct ks__cut {
    bool active;
    GArray *pairs; /* uint64 (source << 32 | target); NULL once healed */
};

struct ks__file_record; /* sim/disk.c */

struct ks_world {
    /* Views (ks_world_view_new): a view has only these four fields and
     * node_count; every seam call through it goes to its root with node ids
     * and paths translated (ks__view_global, ks__view_path). */
    ks_world *root;          /* not owned; the world itself when it is no view */
    uint32_t view_node_base; /* the root's id of the view's node 1 */
    char *view_path_prefix;  /* owned; the folder of the view's files */
    GPtrArray *views;        /* the root's views (owned), or NULL */
    uint64_t seed;
    char *run_dir; /* owned */
    uint32_t node_count;
    ks_time_ns network_latency_ns;
    ks_time_ns network_jitter_ns;
    ks_time_ns disk_fsync_latency_ns;
    uint64_t disk_bandwidth_bytes_per_s;
    uint32_t open_file_count_max;
    ks_time_ns disk_writeback_expire_ns;   /* KS_TIME_NEVER: no writeback by age */
    ks_time_ns disk_writeback_interval_ns; /* 0: the flusher never wakes */
    bool disk_writeback_aligned;
    uint64_t disk_dirty_limit_bytes; /* 0: none */
    uint64_t disk_page_cache_bytes;  /* 0: unlimited */

    /* clock and scheduler (sched.c) */
    ks_time_ns now_ns;
    uint64_t seq_next;
    uint64_t event_count;
    struct ks__event *pool; /* owned; slots */
    uint32_t pool_capacity;
    uint32_t pool_used; /* slots ever handed out (high-water mark) */
    uint32_t free_head; /* free list of slots */
    struct ks__heap heaps[KS__HEAP_COUNT];
    /* 1 + the heap whose root is being run (see heap_settle), or 0 */
    uint8_t root_taken;
    void (*after_event_fn)(ks_world *world, void *context);
    void *after_event_context; /* not owned */

    /* trace (world.c) */
    uint64_t trace_hash;
    FILE *trace_out; /* not owned */

    /* host I/O failures (disk.c host_fail): not simulated faults */
    jmp_buf *host_escape; /* not owned; where the first failure jumps, or NULL */
    char *host_error;     /* owned: that failure's message; the disk stops writing */

    /* randomness (rng.c) */
    uint64_t rng[KS_RNG_COUNT][4];

    /* nodes */
    struct ks__node *nodes; /* owned, node_count */

    /* network (net.c) */
    struct ks__connections connections; /* per (source, target) pair that sent */
    struct ks__map link_latency_ns;     /* overrides per (source, target) */
    struct ks__map cut_counts;          /* active cuts naming (source, target) */
    GArray *cuts;                       /* struct ks__cut, cut id = index + 1 */
    /* free message buffers per size class, each g_malloc'd and holding the
     * next one's address in its first bytes (owned) */
    void *message_free[KS__MESSAGE_CLASS_COUNT];
    uint32_t active_cut_count;
    uint32_t loss_ppm;

    /* disk (disk.c) */
    GHashTable *files;                           /* path -> struct ks__file_record (owned) */
    struct ks__file_record *lru_head, *lru_tail; /* records holding a real fd */
    uint32_t open_fd_count;
    struct ks_file *handles;        /* every open handle, so that ks_world_free can close them */
    uint64_t staged_capacity_bytes; /* S4: the staging buffers' capacity, all files */
    uint64_t stage_budget_bytes;    /* S4: when they are all written out and freed */
};

/* sched.c */
void ks__sched_init(ks_world *world);
void ks__sched_deinit(ks_world *world);
/* A new event due at at_ns, pushed into its heap; the caller fills in its
 * type and fields before the scheduler runs again (the pool may move: the
 * pointer is valid until the next event is added). */
struct ks__event *ks__event_add(ks_world *world, ks_time_ns at_ns);
/* Frees every event deferred by a paused node. */
void ks__sched_drop_deferred(ks_world *world, ks_node_id node);
void ks__sched_replay_deferred(ks_world *world, ks_node_id node);

/* rng.c */
void ks__rng_init(ks_world *world, uint64_t seed);
/* The first state of connection `pair`'s own jitter stream (net.c), derived
 * from the run seed like the world's streams but with an index past them. */
uint64_t ks__rng_link_seed(uint64_t seed, uint64_t pair);
/* One splitmix64 step: advances *state, returns the next output (inline:
 * once per message, for its jitter). */
static inline uint64_t ks__rng_splitmix64(uint64_t *x)
{
    *x += UINT64_C(0x9E3779B97F4A7C15);
    uint64_t z = *x;
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* world.c: trace hash (its algorithm: world.c's design comment) */
static inline uint64_t ks__hash_u64(uint64_t hash, uint64_t value)
{
    uint64_t h = (hash << 23) | (hash >> 41);
    return (h ^ value) * UINT64_C(0x9E3779B97F4A7C15);
}
uint64_t ks__hash_bytes(uint64_t hash, const void *bytes, size_t byte_count);
/* Writes the event's trace line to world->trace_out. */
void ks__trace_print(const ks_world *world, const struct ks__event *event);

#define KS__TRACE_TIMER   1
#define KS__TRACE_MESSAGE 2

/* Folds a processed event into the trace hash (inline: once per event). */
static inline void ks__trace_event(ks_world *world, const struct ks__event *event)
{
    uint64_t h = world->trace_hash;
    bool message = event->type == KS__EVENT_MESSAGE;
    h = ks__hash_u64(h, message ? KS__TRACE_MESSAGE : KS__TRACE_TIMER);
    h = ks__hash_u64(h, event->at_ns);
    h = ks__hash_u64(h, event->kind);
    h = ks__hash_u64(h, event->node);
    if (message) {
        h = ks__hash_u64(h, event->source);
        h = ks__hash_bytes(h, event->u.message.bytes, event->u.message.byte_count);
    }
    world->trace_hash = h;
    if (world->trace_out != NULL) {
        ks__trace_print(world, event);
    }
}

/* net.c */
void ks__net_init(ks_world *world);
void ks__net_deinit(ks_world *world);
/* Whether the one-way link source -> target is up: true without a look-up
 * while no cut is active (inline: once per message sent and delivered). */
bool ks__net_link_is_up_cut(const ks_world *world, ks_node_id source, ks_node_id target);
static inline bool ks__net_link_is_up(const ks_world *world, ks_node_id source, ks_node_id target)
{
    return world->active_cut_count == 0 || ks__net_link_is_up_cut(world, source, target);
}
/* Gives back a delivered or dropped message's buffer. */
void ks__message_buffer_free(ks_world *world, uint8_t *bytes, uint8_t buffer_class);
void ks__map_deinit(struct ks__map *map);
bool ks__map_get(const struct ks__map *map, uint64_t key, uint64_t *value_out);
void ks__map_set(struct ks__map *map, uint64_t key, uint64_t value);

/* disk.c */
bool ks__disk_init(ks_world *world, GError **error);
void ks__disk_deinit(ks_world *world);
/* A crash of node: a process crash ends its waits; a power loss runs its
 * flusher up to now, then loses what is not durable (disk.c). */
void ks__disk_crash(ks_world *world, ks_node_id node, bool power_loss);

static inline struct ks__node *ks__node(const ks_world *world, ks_node_id node)
{
    ks_assert(node < world->node_count);
    return &world->nodes[node];
}

/* A view's node id in the root's numbering: node 0 is the driver in both;
 * the view's node n >= 1 is the root's view_node_base + n - 1. The sum wraps
 * (unsigned), so an id of a node outside the view that a message named as its
 * source (ks__view_local) maps back to itself. */
static inline ks_node_id ks__view_global(const ks_world *view, ks_node_id node)
{
    if (view->root == view || node == KS_NODE_DRIVER) {
        return node;
    }
    return node + view->view_node_base - 1;
}

static inline ks_node_id ks__view_local(const ks_world *view, ks_node_id node)
{
    if (view->root == view || node == KS_NODE_DRIVER) {
        return node;
    }
    /* the node just before the view's range would look like the driver */
    ks_assert(node != view->view_node_base - 1);
    return node - view->view_node_base + 1;
}

/* path under the view's folder, owned by the caller (g_free); NULL for the
 * root, whose paths stay as they are. */
char *ks__view_path(const ks_world *view, const char *path);

static inline uint64_t ks__pair(ks_node_id source, ks_node_id target)
{
    return ((uint64_t)source << 32) | target;
}
