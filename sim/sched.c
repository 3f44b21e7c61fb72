/*
** sim/sched.c: the virtual clock and the event scheduler.
**
** Events (timers and messages in flight) live in a pool: one array of
** struct ks__event indexed by slot, with a free list, so scheduling a timer
** allocates nothing once the pool has grown to the run's high-water mark.
** Pending events are ordered by 4-ary min-heaps of 16-byte entries
** (at_ns, seq << 24 | slot); seq is the world's insertion counter, so two
** events at the same time run in the order they were scheduled (STYLE 3.6).
** There are two heaps: the near one holds the events due less than NEAR_NS
** (50 ms) after they were scheduled (messages, processing and linger
** timers), the far one the rest (request timeouts, long polls,
** max.poll.interval.ms), which are mostly cancelled before they are due. The
** next event is the smaller of the two roots in (at_ns, seq), so the order is
** exactly that of one heap; the split only keeps the near heap, which every
** event passes through, small. In the 3 x 3 benchmark with a consumer group
** (issue 16) a single heap held about 550 entries, 93 % of them cancelled
** timeouts, and its sift-downs cost 330 instructions per event; split (and
** compacted from 64 cancelled entries on), they cost 110. Compacting from
** 1,024 cancelled entries on instead of 64 made the far heap's compactions
** (a scan and a rebuild) 16 times rarer: 777.4 M to 773.5 M instructions
** at 3 x 3, 383.0 M to 381.9 M at 12 x 1,200.
** The root being run is popped lazily: the first event its handler schedules
** into the same heap takes the root's place with a single sift-down
** (heap_settle), since "handle one event, schedule the next" is the common
** step. Both that and a plain pop move an entry that mostly belongs near the
** bottom into the root's place, so they sift a hole down to a leaf along
** the smallest children and let the entry rise from there (sift_hole, Floyd's
** bottom-up variant), and a full set of four children is compared as a
** branch-free tournament. The allocation, push and free of an event, and the
** trace hash of a processed one, are inlined into the scheduler's paths.
** A processed event's slot is released without the message-buffer check
** of event_free (slot_release): a timer has none, and a delivered message's
** buffer is taken for its receiver first; the check and the call it made
** with a NULL buffer cost 689.6 M against 692.7 M instructions at 3 x 3.
** Together these took the 3 x 3 benchmark from 968.6 M to 946.2 M
** instructions (issue 16).
**
** Cache lines. An event is 64 bytes and the pool starts on a 64-byte
** boundary, so an event is one cache line (g_new's 16-byte alignment put
** three events in four across two); a heap's block starts on one too, with
** three unused entries before index 0, so that the four children of an index,
** which every level of a sift reads together, are one line rather than two.
**
** Invariants (asserted as S1..S5):
**   S1  The clock never goes back: an event is never scheduled before now, and
**       at_ns = now + delay must not overflow.
**   S2  seq is unique and increasing; it fits in 40 bits, a slot in 24.
**   S3  A slot is in exactly one place: the free list, one heap, or one paused
**       node's deferred queue (in_heap says which of the last two, and heap
**       which heap).
**   S4  A ks_timer_id is (generation << 32 | slot + 1); freeing a slot bumps its
**       generation, so a stale id never cancels a newer timer.
**   S5  A heap's cancelled_count counts the cancelled entries still in it;
**       when they are more than half of it (and more than COMPACT_MIN,
**       1,024), the heap is compacted, so lazy cancellation cannot grow
**       memory without bound.
**
** Node ownership. Each event records its node's incarnation (bumped at crash
** and at restart). When an event is popped it is discarded, silently, if its
** node is down or its incarnation is stale: this is how a crash drops every
** pending timer of the node and every message in flight to it, in O(1).
** Discarded and cancelled events are neither counted nor hashed and do not
** move the clock.
**
** Pause. An event whose node is paused when it comes due is moved, in pop
** order, to the node's deferred queue. Resume pushes the queue back with
** at_ns = now and fresh seqs, so the events run right after the resuming
** event, in their original order.
*/
#include "world_int.h"

#include <stdlib.h>
#include <string.h>

/* A heap is compacted only from COMPACT_MIN cancelled entries on (S5): 16 KiB
 * of heap entries and 64 KiB of pool slots at most. */
#define SLOT_MASK   (KS__SLOT_COUNT_MAX - 1)
#define COMPACT_MIN 1024u
/* 4,096 slots of 64 bytes: 256 KiB, half a core's L2 here */
#define PREFETCH_POOL_MIN 4096u
/* Cache lines (see "Cache lines" above). */
#define LINE_BYTES 64
/* Entries before a heap's index 0 in its block: then the four children of
 * an index, 4i + 1 .. 4i + 4, start at 16 * (4i + 4) bytes into the block. */
#define HEAP_PAD (LINE_BYTES / sizeof(struct ks__heap_entry) - 1)
/* An event due this soon after it is scheduled goes to the near heap. */
#define NEAR_NS (50 * KS_NS_PER_MS)

_Static_assert(sizeof(struct ks__event) == LINE_BYTES, "an event is one cache line");
_Static_assert(LINE_BYTES % sizeof(struct ks__heap_entry) == 0, "heap entries tile a line");

/* A block of count elements of element_bytes, on a cache line boundary,
 * holding the first kept_count elements of old (an aligned block of
 * old_count elements, or NULL), which it frees. */
static void *aligned_renew(void *old, size_t old_count, size_t kept_count, size_t count,
                           size_t element_bytes)
{
    ks_assert(kept_count <= old_count && kept_count <= count);
    void *block = g_aligned_alloc0(count, element_bytes, LINE_BYTES);
    if (old != NULL) {
        memcpy(block, old, kept_count * element_bytes);
        g_aligned_free(old);
    }
    return block;
}

/* The heap's block holds HEAP_PAD entries before entries[0]. */
static void heap_resize(struct ks__heap *heap, uint32_t capacity)
{
    struct ks__heap_entry *block = heap->entries != NULL ? heap->entries - HEAP_PAD : NULL;
    block = aligned_renew(block, HEAP_PAD + heap->capacity, HEAP_PAD + heap->count,
                          HEAP_PAD + capacity, sizeof(struct ks__heap_entry));
    heap->entries = block + HEAP_PAD;
    heap->capacity = capacity;
}

/* Doubles a full heap's room: a heap always has room for one more entry. */
static __attribute__((noinline, cold)) void heap_grow(struct ks__heap *heap)
{
    heap_resize(heap, 2 * heap->capacity);
}

void ks__sched_init(ks_world *world)
{
    world->pool_capacity = 1024;
    world->pool = aligned_renew(NULL, 0, 0, world->pool_capacity, sizeof(struct ks__event));
    world->pool_used = 0;
    world->free_head = KS__NONE;
    for (int h = 0; h < KS__HEAP_COUNT; h++) {
        struct ks__heap *heap = &world->heaps[h];
        heap->entries = NULL;
        heap->capacity = 0;
        heap->count = 0;
        heap->cancelled_count = 0;
        heap_resize(heap, 1024);
    }
    world->seq_next = 1;
}

void ks__sched_deinit(ks_world *world)
{
    for (uint32_t slot = 0; slot < world->pool_used; slot++) {
        struct ks__event *event = &world->pool[slot];
        if (event->type == KS__EVENT_MESSAGE) {
            g_free(event->u.message.bytes); /* any message buffer is a g_malloc block */
        }
    }
    g_aligned_free(world->pool);
    world->pool = NULL;
    for (int h = 0; h < KS__HEAP_COUNT; h++) {
        g_aligned_free(world->heaps[h].entries - HEAP_PAD);
        world->heaps[h].entries = NULL;
    }
}

static void pool_grow(ks_world *world)
{
    ks_assert(world->pool_capacity < KS__SLOT_COUNT_MAX); /* S2 */
    world->pool = aligned_renew(world->pool, world->pool_capacity, world->pool_used,
                                2 * world->pool_capacity, sizeof(struct ks__event));
    world->pool_capacity *= 2;
}

/* A free event slot: the free list's head, else the pool's next (S2). */
static inline uint32_t event_alloc(ks_world *world)
{
    uint32_t slot = world->free_head;
    if (slot != KS__NONE) {
        world->free_head = world->pool[slot].next;
    } else {
        if (world->pool_used == world->pool_capacity) {
            pool_grow(world);
        }
        slot = world->pool_used++;
        world->pool[slot].generation = 1;
    }
    struct ks__event *event = &world->pool[slot];
    ks_assert(event->type == KS__EVENT_FREE || slot == world->pool_used - 1);
    event->cancelled = false;
    event->in_heap = false;
    event->next = KS__NONE;
    return slot;
}

/* Returns slot to the free list, when it holds no message buffer (a timer,
 * or a message whose buffer its caller took). */
static inline void slot_release(ks_world *world, uint32_t slot)
{
    struct ks__event *event = &world->pool[slot];
    ks_assert(event->type != KS__EVENT_FREE);
    ks_assert(event->type != KS__EVENT_MESSAGE || event->u.message.bytes == NULL);
    event->type = KS__EVENT_FREE;
    event->generation++; /* S4 */
    event->next = world->free_head;
    world->free_head = slot;
}

/* Returns slot to the free list, with its message buffer if it has one. */
static inline void event_free(ks_world *world, uint32_t slot)
{
    struct ks__event *event = &world->pool[slot];
    ks_assert(event->type != KS__EVENT_FREE);
    if (event->type == KS__EVENT_MESSAGE) {
        ks__message_buffer_free(world, event->u.message.bytes, event->buffer_class);
        event->u.message.bytes = NULL;
    }
    event->type = KS__EVENT_FREE;
    event->generation++; /* S4 */
    event->next = world->free_head;
    world->free_head = slot;
}

/* ---- the 4-ary heap ----------------------------------------------------- */

/* (at_ns, seq_slot) as one 128-bit number: a branch-free comparison, which
 * matters because the heap's comparisons are unpredictable by nature. */
static inline unsigned __int128 entry_key(const struct ks__heap_entry *e)
{
    return ((unsigned __int128)e->at_ns << 64) | e->seq_slot;
}

static inline bool entry_less(const struct ks__heap_entry *a, const struct ks__heap_entry *b)
{
    return entry_key(a) < entry_key(b);
}

/* The smallest of the four children first .. first + 3 (all in the heap),
 * by a tournament of three branch-free comparisons. */
static inline uint32_t min_of_four(const struct ks__heap_entry *heap, uint32_t first)
{
    uint32_t a = first + (uint32_t)entry_less(&heap[first + 1], &heap[first]);
    uint32_t b = first + 2 + (uint32_t)entry_less(&heap[first + 3], &heap[first + 2]);
    return entry_less(&heap[b], &heap[a]) ? b : a;
}

/* The smallest child of index, or count when it has none. */
static inline uint32_t min_child(const struct ks__heap_entry *heap, uint32_t count, uint32_t index)
{
    uint32_t first = 4 * index + 1;
    if (first + 4 <= count) {
        return min_of_four(heap, first);
    }
    if (first >= count) {
        return count;
    }
    uint32_t best = first;
    for (uint32_t child = first + 1; child < count; child++) {
        if (entry_less(&heap[child], &heap[best])) {
            best = child;
        }
    }
    return best;
}

static void sift_down(struct ks__heap_entry *heap, uint32_t count, uint32_t index)
{
    struct ks__heap_entry moving = heap[index];
    for (;;) {
        uint32_t best = min_child(heap, count, index);
        if (best == count || !entry_less(&heap[best], &moving)) {
            break;
        }
        heap[index] = heap[best];
        index = best;
    }
    heap[index] = moving;
}

/* Puts `moving` into the hole at index, raising the hole while moving is
 * smaller than its parent. */
static inline void sift_up(struct ks__heap_entry *heap, uint32_t index,
                           struct ks__heap_entry moving)
{
    while (index > 0) {
        uint32_t parent = (index - 1) / 4;
        if (!entry_less(&moving, &heap[parent])) {
            break;
        }
        heap[index] = heap[parent];
        index = parent;
    }
    heap[index] = moving;
}

/* Puts `moving` where the root was, in a heap whose root is gone, when
 * moving is likely to belong near the bottom (the heap's last entry, or an
 * event due after most pending ones): the hole at the root goes down along
 * the smallest children to a leaf without comparing with moving (Floyd's
 * bottom-up variant), and moving rises from there. One comparison a level
 * fewer than sift_down when moving ends low, which it mostly does. */
static void sift_hole(struct ks__heap_entry *heap, uint32_t count, struct ks__heap_entry moving)
{
    uint32_t index = 0;
    for (;;) {
        uint32_t best = min_child(heap, count, index);
        if (best == count) {
            break;
        }
        heap[index] = heap[best];
        index = best;
    }
    sift_up(heap, index, moving);
}

static void heap_insert(ks_world *world, enum ks__heap_kind kind, struct ks__heap_entry entry)
{
    struct ks__heap *heap = &world->heaps[kind];
    if (world->root_taken == 1 + kind) {
        /* Every entry is >= the taken root, so entry may start at the root. */
        world->root_taken = 0;
        sift_hole(heap->entries, heap->count, entry);
        return;
    }
    ks_assert(heap->count < heap->capacity);
    sift_up(heap->entries, heap->count++, entry);
    if (heap->count == heap->capacity) {
        /* grown after the push that filled it, not before the next one: a
         * call at the end needs no registers saved around it */
        heap_grow(heap);
    }
}

static void heap_remove_root(struct ks__heap *heap)
{
    ks_assert(heap->count > 0);
    heap->count--;
    if (heap->count > 0) {
        sift_hole(heap->entries, heap->count, heap->entries[heap->count]);
    }
}

/* The root of a heap whose run_one took it is still in place (root_taken):
 * the first push into that heap during the handler overwrites it and sifts
 * down once, which halves the heap work of the common "handle one event,
 * schedule one" step. Settling does the real pop when no such push came. */
static void heap_settle(ks_world *world)
{
    if (world->root_taken == 0) {
        return;
    }
    struct ks__heap *heap = &world->heaps[world->root_taken - 1];
    world->root_taken = 0;
    heap_remove_root(heap);
}

/* S5: drops a heap's cancelled entries and rebuilds it (keys are unique, so
 * the rebuilt heap pops in exactly the same order). Out of line and cold:
 * inlined, its loops made ks_world_cancel save and restore six registers on
 * every call, for a compaction once in 1,024 cancels or fewer. */
static __attribute__((noinline, cold)) void heap_compact(ks_world *world, struct ks__heap *heap)
{
    heap_settle(world); /* the taken root's slot is free already: never look at it */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < heap->count; i++) {
        uint32_t slot = (uint32_t)(heap->entries[i].seq_slot & SLOT_MASK);
        if (world->pool[slot].cancelled) {
            event_free(world, slot);
        } else {
            heap->entries[kept++] = heap->entries[i];
        }
    }
    heap->count = kept;
    heap->cancelled_count = 0;
    if (kept > 1) {
        for (uint32_t i = (kept - 2) / 4 + 1; i-- > 0;) {
            sift_down(heap->entries, kept, i);
        }
    }
}

/* Queues slot at at_ns with the next sequence number, in the near or far
 * heap (S1). */
static inline void event_push(ks_world *world, uint32_t slot, ks_time_ns at_ns)
{
    ks_assert(at_ns >= world->now_ns); /* S1 */
    uint64_t seq = world->seq_next++;
    ks_assert(seq < KS__SEQ_MAX); /* S2 */
    struct ks__event *event = &world->pool[slot];
    enum ks__heap_kind kind = at_ns - world->now_ns < NEAR_NS ? KS__HEAP_NEAR : KS__HEAP_FAR;
    event->at_ns = at_ns;
    event->in_heap = true;
    event->heap = (uint8_t)kind;
    heap_insert(world, kind, (struct ks__heap_entry){ at_ns, (seq << KS__SLOT_BITS) | slot });
}

struct ks__event *ks__event_add(ks_world *world, ks_time_ns at_ns)
{
    uint32_t slot = event_alloc(world);
    event_push(world, slot, at_ns);
    return &world->pool[slot];
}

/* ---- timers --------------------------------------------------------------- */

ks_time_ns ks_world_now_ns(const ks_world *world)
{
    return world->root->now_ns;
}

ks_timer_id ks_world_schedule(ks_world *world, ks_node_id owner, ks_time_ns delay_ns, uint32_t kind,
                              ks_event_fn *fn, void *context)
{
    ks_assert(fn != NULL);
    ks_world *view = world;
    owner = ks__view_global(view, owner);
    world = view->root;
    ks_time_ns at_ns = world->now_ns + delay_ns;
    ks_assert(at_ns >= world->now_ns); /* S1: no overflow */
    struct ks__node *node = ks__node(world, owner);
    uint32_t slot = event_alloc(world);
    struct ks__event *event = &world->pool[slot];
    event->type = KS__EVENT_TIMER;
    event->node = owner;
    event->source = owner;
    event->kind = kind;
    event->incarnation = node->incarnation;
    event->u.timer.fn = fn;
    event->u.timer.context = context;
    event->u.timer.view = view;
    event_push(world, slot, at_ns);
    return ((uint64_t)event->generation << 32) | (slot + 1);
}

void ks_world_cancel(ks_world *world, ks_timer_id id)
{
    if (id == 0) {
        return;
    }
    world = world->root;
    uint32_t slot = (uint32_t)id - 1;
    uint32_t generation = (uint32_t)(id >> 32);
    if (slot >= world->pool_used) {
        return;
    }
    struct ks__event *event = &world->pool[slot];
    if (event->type != KS__EVENT_TIMER || event->generation != generation || event->cancelled) {
        return;
    }
    event->cancelled = true;
    if (event->in_heap) {
        struct ks__heap *heap = &world->heaps[event->heap];
        heap->cancelled_count++;
        if (heap->cancelled_count > COMPACT_MIN && heap->cancelled_count * 2 > heap->count) {
            heap_compact(world, heap);
        }
    }
}

/* ---- pause ---------------------------------------------------------------- */

static void defer_event(ks_world *world, uint32_t slot)
{
    struct ks__event *event = &world->pool[slot];
    struct ks__node *node = &world->nodes[event->node];
    event->in_heap = false;
    event->next = KS__NONE;
    if (node->deferred_tail == KS__NONE) {
        node->deferred_head = slot;
    } else {
        world->pool[node->deferred_tail].next = slot;
    }
    node->deferred_tail = slot;
}

void ks__sched_drop_deferred(ks_world *world, ks_node_id node_id)
{
    struct ks__node *node = ks__node(world, node_id);
    uint32_t slot = node->deferred_head;
    while (slot != KS__NONE) {
        uint32_t next = world->pool[slot].next;
        event_free(world, slot);
        slot = next;
    }
    node->deferred_head = node->deferred_tail = KS__NONE;
}

void ks__sched_replay_deferred(ks_world *world, ks_node_id node_id)
{
    struct ks__node *node = ks__node(world, node_id);
    uint32_t slot = node->deferred_head;
    node->deferred_head = node->deferred_tail = KS__NONE;
    while (slot != KS__NONE) {
        uint32_t next = world->pool[slot].next;
        if (world->pool[slot].cancelled) {
            event_free(world, slot);
        } else {
            event_push(world, slot, world->now_ns);
        }
        slot = next;
    }
}

/* ---- running -------------------------------------------------------------- */

/* The heap whose root comes first in (at_ns, seq) order, or KS__HEAP_COUNT
 * when both are empty. */
static inline enum ks__heap_kind first_heap(const ks_world *world)
{
    const struct ks__heap *near = &world->heaps[KS__HEAP_NEAR];
    const struct ks__heap *far = &world->heaps[KS__HEAP_FAR];
    if (far->count == 0) {
        return near->count > 0 ? KS__HEAP_NEAR : KS__HEAP_COUNT;
    }
    if (near->count == 0 || entry_less(&far->entries[0], &near->entries[0])) {
        return KS__HEAP_FAR;
    }
    return KS__HEAP_NEAR;
}

/* Pops events due at or before until_ns until one is processed; returns false
 * when none is left in that window. */
static bool run_one(ks_world *world, ks_time_ns until_ns)
{
    ks_assert(world->root_taken == 0);
    for (;;) {
        enum ks__heap_kind kind = first_heap(world);
        if (kind == KS__HEAP_COUNT) {
            return false;
        }
        struct ks__heap *heap = &world->heaps[kind];
        struct ks__heap_entry entry = heap->entries[0];
        if (entry.at_ns > until_ns) {
            return false;
        }
        uint32_t slot = (uint32_t)(entry.seq_slot & SLOT_MASK);
        struct ks__event *event = &world->pool[slot];
        if (event->cancelled) {
            heap_remove_root(heap);
            heap->cancelled_count--;
            event_free(world, slot);
            continue;
        }
        struct ks__node *node = &world->nodes[event->node];
        if (!node->up || event->incarnation != node->incarnation) {
            heap_remove_root(heap);
            event_free(world, slot); /* crashed since: dropped */
            continue;
        }
        if (node->paused) {
            heap_remove_root(heap);
            defer_event(world, slot);
            continue;
        }
        ks_assert(entry.at_ns >= world->now_ns); /* S1 */
        if (event->type == KS__EVENT_MESSAGE) {
            /* Dropped if the link went down while in flight, or nobody listens. */
            if (!ks__net_link_is_up(world, event->source, event->node) || node->receiver == NULL) {
                heap_remove_root(heap);
                event_free(world, slot);
                continue;
            }
        }
        world->root_taken = (uint8_t)(1 + kind); /* popped lazily: see heap_settle */
        /* The next event is almost always one of the root's children: start
         * loading their pool slots while this one runs (the pool is touched in
         * heap order, which is random in memory). Only for a large pool: a
         * small one is in the caches already, and the loop cost 50
         * instructions an event in the 3 x 3 benchmark (issue 16), while
         * bench_world's 10,000 pending events ran 20-30 % slower without it. */
        if (world->pool_used > PREFETCH_POOL_MIN) {
            for (uint32_t child = 1; child <= 4 && child < heap->count; child++) {
                __builtin_prefetch(&world->pool[heap->entries[child].seq_slot & SLOT_MASK]);
            }
        }
        world->now_ns = entry.at_ns;
        world->event_count++;
        ks__trace_event(world, event);
        ks_assert_set_context(world->now_ns, world->seed);
        if (event->type == KS__EVENT_TIMER) {
            ks_event_fn *fn = event->u.timer.fn;
            void *context = event->u.timer.context;
            ks_world *view = event->u.timer.view;
            /* Freed first: a cancel of this id inside the handler is a no-op
             * and the handler may schedule into the same slot. */
            slot_release(world, slot);
            fn(view, context);
        } else {
            uint8_t *bytes = event->u.message.bytes;
            uint8_t buffer_class = event->buffer_class;
            size_t byte_count = event->u.message.byte_count;
            ks_node_id source = event->source;
            ks_node_id target = event->node;
            uint32_t kind_of_message = event->kind;
            event->u.message.bytes = NULL; /* taken: freed after the receiver */
            slot_release(world, slot);
            ks_world *view = node->receiver_view;
            node->receiver(view, ks__view_local(view, target), ks__view_local(view, source),
                           kind_of_message, bytes, byte_count, node->receiver_context);
            ks__message_buffer_free(world, bytes, buffer_class);
        }
        heap_settle(world);
        if (world->after_event_fn != NULL) {
            world->after_event_fn(world, world->after_event_context);
        }
        return true;
    }
}

uint64_t ks_world_run_until(ks_world *world, ks_time_ns until_ns)
{
    uint64_t processed = 0;
    while (run_one(world, until_ns)) {
        processed++;
    }
    if (until_ns > world->now_ns) {
        world->now_ns = until_ns;
    }
    return processed;
}

uint64_t ks_world_run_until_idle(ks_world *world, ks_time_ns until_ns)
{
    uint64_t processed = 0;
    while (run_one(world, until_ns)) {
        processed++;
    }
    /* Cancelled entries past the limit are no pending events: drop them,
     * so that a world holding only those counts as idle and keeps its clock
     * at its last event. Entries are ordered by (time, sequence) alone, so
     * removing them changes no later event's order. */
    for (enum ks__heap_kind kind = first_heap(world); kind != KS__HEAP_COUNT;
         kind = first_heap(world)) {
        struct ks__heap *heap = &world->heaps[kind];
        uint32_t slot = (uint32_t)(heap->entries[0].seq_slot & SLOT_MASK);
        if (!world->pool[slot].cancelled) {
            break;
        }
        heap_remove_root(heap);
        heap->cancelled_count--;
        event_free(world, slot);
    }
    /* Stopped by the time limit rather than by running out of events. */
    if (first_heap(world) != KS__HEAP_COUNT && until_ns > world->now_ns) {
        world->now_ns = until_ns;
    }
    return processed;
}

uint64_t ks_world_event_count(const ks_world *world)
{
    return world->event_count;
}

void ks_world_set_after_event(ks_world *world, void (*fn)(ks_world *world, void *context),
                              void *context)
{
    world->after_event_fn = fn;
    world->after_event_context = fn != NULL ? context : NULL;
}
