/*
** sim/sched.c: the virtual clock and the event scheduler.
**
** Events (timers and messages in flight) live in a pool: one array of
** struct ks__event indexed by slot, with a free list, so scheduling a timer
** allocates nothing once the pool has grown to the run's high-water mark.
** Pending events are ordered by a 4-ary min-heap of 16-byte entries
** (at_ns, seq << 24 | slot); seq is the world's insertion counter, so two
** events at the same time run in the order they were scheduled (STYLE 3.6).
** The root being run is popped lazily: the first event its handler schedules
** takes the root's place with a single sift-down (heap_settle), since
** "handle one event, schedule the next" is the common step.
**
** Invariants (asserted as S1..S5):
**   S1  The clock never goes back: an event is never scheduled before now, and
**       at_ns = now + delay must not overflow.
**   S2  seq is unique and increasing; it fits in 40 bits, a slot in 24.
**   S3  A slot is in exactly one place: the free list, the heap, or one paused
**       node's deferred queue (in_heap says which of the last two).
**   S4  A ks_timer_id is (generation << 32 | slot + 1); freeing a slot bumps its
**       generation, so a stale id never cancels a newer timer.
**   S5  heap_cancelled_count counts the cancelled entries still in the heap;
**       when they are more than half of it (and more than 1024), the heap is
**       compacted, so lazy cancellation cannot grow memory without bound.
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

#define SLOT_MASK   (KS__SLOT_COUNT_MAX - 1)
#define COMPACT_MIN 1024u

void ks__sched_init(ks_world *world)
{
    world->pool_capacity = 1024;
    world->pool = g_new0(struct ks__event, world->pool_capacity);
    world->pool_used = 0;
    world->free_head = KS__NONE;
    world->heap_capacity = 1024;
    world->heap = g_new(struct ks__heap_entry, world->heap_capacity);
    world->heap_count = 0;
    world->seq_next = 1;
}

void ks__sched_deinit(ks_world *world)
{
    for (uint32_t slot = 0; slot < world->pool_used; slot++) {
        struct ks__event *event = &world->pool[slot];
        if (event->type == KS__EVENT_MESSAGE) {
            g_free(event->u.message.bytes);
        }
    }
    g_free(world->pool);
    g_free(world->heap);
    world->pool = NULL;
    world->heap = NULL;
}

uint32_t ks__event_alloc(ks_world *world)
{
    uint32_t slot = world->free_head;
    if (slot != KS__NONE) {
        world->free_head = world->pool[slot].next;
    } else {
        if (world->pool_used == world->pool_capacity) {
            ks_assert(world->pool_capacity < KS__SLOT_COUNT_MAX); /* S2 */
            world->pool_capacity *= 2;
            world->pool = g_renew(struct ks__event, world->pool, world->pool_capacity);
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

void ks__event_free(ks_world *world, uint32_t slot)
{
    struct ks__event *event = &world->pool[slot];
    ks_assert(event->type != KS__EVENT_FREE);
    if (event->type == KS__EVENT_MESSAGE) {
        g_free(event->u.message.bytes);
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

static void sift_down(struct ks__heap_entry *heap, uint32_t count, uint32_t index)
{
    struct ks__heap_entry moving = heap[index];
    for (;;) {
        uint32_t first = 4 * index + 1;
        if (first >= count) {
            break;
        }
        uint32_t best = first;
        uint32_t last = first + 4 < count ? first + 4 : count;
        for (uint32_t child = first + 1; child < last; child++) {
            if (entry_less(&heap[child], &heap[best])) {
                best = child;
            }
        }
        if (!entry_less(&heap[best], &moving)) {
            break;
        }
        heap[index] = heap[best];
        index = best;
    }
    heap[index] = moving;
}

static void heap_insert(ks_world *world, struct ks__heap_entry entry)
{
    if (world->root_taken) {
        /* Every entry is >= the taken root, so entry may start at the root. */
        world->root_taken = false;
        world->heap[0] = entry;
        sift_down(world->heap, world->heap_count, 0);
        return;
    }
    if (world->heap_count == world->heap_capacity) {
        world->heap_capacity *= 2;
        world->heap = g_renew(struct ks__heap_entry, world->heap, world->heap_capacity);
    }
    struct ks__heap_entry *heap = world->heap;
    uint32_t index = world->heap_count++;
    while (index > 0) {
        uint32_t parent = (index - 1) / 4;
        if (!entry_less(&entry, &heap[parent])) {
            break;
        }
        heap[index] = heap[parent];
        index = parent;
    }
    heap[index] = entry;
}

/* The root of a heap whose run_one took it is still in place (root_taken):
 * the first push during the handler overwrites it and sifts down once, which
 * halves the heap work of the common "handle one event, schedule one" step.
 * Settling does the real pop when no push came. */
static void heap_settle(ks_world *world)
{
    if (!world->root_taken) {
        return;
    }
    world->root_taken = false;
    world->heap_count--;
    if (world->heap_count > 0) {
        world->heap[0] = world->heap[world->heap_count];
        sift_down(world->heap, world->heap_count, 0);
    }
}

static struct ks__heap_entry heap_pop(ks_world *world)
{
    ks_assert(!world->root_taken);
    ks_assert(world->heap_count > 0);
    struct ks__heap_entry top = world->heap[0];
    world->heap_count--;
    if (world->heap_count > 0) {
        world->heap[0] = world->heap[world->heap_count];
        sift_down(world->heap, world->heap_count, 0);
    }
    return top;
}

/* S5: drops cancelled entries and rebuilds the heap (keys are unique, so the
 * rebuilt heap pops in exactly the same order). */
static void heap_compact(ks_world *world)
{
    heap_settle(world);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < world->heap_count; i++) {
        uint32_t slot = (uint32_t)(world->heap[i].seq_slot & SLOT_MASK);
        if (world->pool[slot].cancelled) {
            ks__event_free(world, slot);
        } else {
            world->heap[kept++] = world->heap[i];
        }
    }
    world->heap_count = kept;
    world->heap_cancelled_count = 0;
    if (kept > 1) {
        for (uint32_t i = (kept - 2) / 4 + 1; i-- > 0;) {
            sift_down(world->heap, kept, i);
        }
    }
}

void ks__event_push(ks_world *world, uint32_t slot, ks_time_ns at_ns)
{
    ks_assert(at_ns >= world->now_ns); /* S1 */
    uint64_t seq = world->seq_next++;
    ks_assert(seq < KS__SEQ_MAX); /* S2 */
    struct ks__event *event = &world->pool[slot];
    event->at_ns = at_ns;
    event->in_heap = true;
    heap_insert(world, (struct ks__heap_entry){ at_ns, (seq << KS__SLOT_BITS) | slot });
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
    uint32_t slot = ks__event_alloc(world);
    struct ks__event *event = &world->pool[slot];
    event->type = KS__EVENT_TIMER;
    event->node = owner;
    event->source = owner;
    event->kind = kind;
    event->incarnation = node->incarnation;
    event->u.timer.fn = fn;
    event->u.timer.context = context;
    event->u.timer.view = view;
    ks__event_push(world, slot, at_ns);
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
        world->heap_cancelled_count++;
        if (world->heap_cancelled_count > COMPACT_MIN &&
            world->heap_cancelled_count * 2 > world->heap_count) {
            heap_compact(world);
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
        ks__event_free(world, slot);
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
            ks__event_free(world, slot);
        } else {
            ks__event_push(world, slot, world->now_ns);
        }
        slot = next;
    }
}

/* ---- running -------------------------------------------------------------- */

/* Pops events due at or before until_ns until one is processed; returns false
 * when none is left in that window. */
static bool run_one(ks_world *world, ks_time_ns until_ns)
{
    ks_assert(!world->root_taken);
    while (world->heap_count > 0 && world->heap[0].at_ns <= until_ns) {
        struct ks__heap_entry entry = world->heap[0];
        uint32_t slot = (uint32_t)(entry.seq_slot & SLOT_MASK);
        struct ks__event *event = &world->pool[slot];
        if (event->cancelled) {
            heap_pop(world);
            world->heap_cancelled_count--;
            ks__event_free(world, slot);
            continue;
        }
        struct ks__node *node = &world->nodes[event->node];
        if (!node->up || event->incarnation != node->incarnation) {
            heap_pop(world);
            ks__event_free(world, slot); /* crashed since: dropped */
            continue;
        }
        if (node->paused) {
            heap_pop(world);
            defer_event(world, slot);
            continue;
        }
        ks_assert(entry.at_ns >= world->now_ns); /* S1 */
        if (event->type == KS__EVENT_MESSAGE) {
            /* Dropped if the link went down while in flight, or nobody listens. */
            if (!ks__net_link_is_up(world, event->source, event->node) || node->receiver == NULL) {
                heap_pop(world);
                ks__event_free(world, slot);
                continue;
            }
        }
        world->root_taken = true; /* popped lazily: see heap_settle */
        /* The next event is almost always one of the root's children: start
         * loading their pool slots while this one runs (the pool is touched in
         * heap order, which is random in memory). */
        for (uint32_t child = 1; child <= 4 && child < world->heap_count; child++) {
            __builtin_prefetch(&world->pool[world->heap[child].seq_slot & SLOT_MASK]);
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
            ks__event_free(world, slot);
            fn(view, context);
        } else {
            uint8_t *bytes = event->u.message.bytes;
            size_t byte_count = event->u.message.byte_count;
            ks_node_id source = event->source;
            ks_node_id target = event->node;
            uint32_t kind = event->kind;
            event->u.message.bytes = NULL;
            ks__event_free(world, slot);
            ks_world *view = node->receiver_view;
            node->receiver(view, ks__view_local(view, target), ks__view_local(view, source), kind,
                           bytes, byte_count, node->receiver_context);
            g_free(bytes);
        }
        heap_settle(world);
        if (world->after_event_fn != NULL) {
            world->after_event_fn(world, world->after_event_context);
        }
        return true;
    }
    return false;
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
    /* Stopped by the time limit rather than by running out of events. */
    if (world->heap_count > 0 && until_ns > world->now_ns) {
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
