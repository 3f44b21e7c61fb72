/*
** sim/net.c: the virtual network.
**
** One FIFO connection per ordered pair (source, target), as TCP gives. A
** message sent at now arrives at
**
**   max(now + latency(source, target) + delay(source) + delay(target) + jitter,
**       last arrival on this connection)
**
** where jitter is drawn uniformly from [0, network_jitter_ns] from the
** connection's own random stream (one splitmix64 state per connection, seeded
** from the run seed and the pair: sim/rng.c), so that more messages on one
** connection never shift the delays of another (a producer's acks setting
** does not move the followers' fetches). Jitter never reorders a connection
** (N1). Equal arrival times keep send order through the scheduler's seq.
**
** Faults (all data, all deterministic):
**   - cuts: a one-way link source->target is down while any active cut names
**     it (N2: cut_counts holds, per link, the number of active cuts naming it).
**     A partition of sides A and B is one cut naming a->b and b->a for every a
**     in A, b in B. ks_world_net_heal removes one cut; heal_all removes all.
**   - loss: each message is dropped at send with probability loss_ppm / 10^6
**     (one KS_RNG_NET draw per message, made only while loss_ppm > 0).
**   - slow node: extra latency on every message to or from it.
** A message is dropped, and the sender learns nothing, if its link is down at
** send time or at delivery time, if the target is down at delivery, or if the
** target crashed (and maybe restarted) while it was in flight (incarnation).
** A message from a node that is down is dropped too (its code cannot run).
** Messages to a paused node wait in the scheduler until it resumes.
** The driver (node 0) is never cut off (asserted).
**
** Message buffers. ks_world_send copies the message into a buffer of the
** world, freed when the message is delivered or dropped: a free list per
** size class (64 B to 128 KiB, powers of two), so that a run allocates only
** up to its high-water mark of messages in flight instead of a malloc and a
** free per message (issue 16). Each buffer is a g_malloc block of its
** class's size, so g_free is right for any of them. Under AddressSanitizer
** every message is its own g_malloc block, freed at delivery, so that a
** receiver reading its message after it returned is still caught.
*/
#include "world_int.h"

#include <string.h>

#define MESSAGE_CLASS_MIN_BYTES 64

/* ---- the uint64 -> uint64 map ----------------------------------------------- */

/* Fibonacci hashing: the top log2(capacity) bits of key times 2^64 / phi.
 * Keys are (source << 32 | target) pairs of small node ids, and the top bits
 * of the product mix both halves: a 12-broker cluster's 182 pairs each sit
 * in their home slot of 512, where the low bits of a murmur-style mix took
 * three probes on average (issue 16). */
static inline uint32_t map_hash(uint64_t key, uint32_t capacity)
{
    return (uint32_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - __builtin_ctz(capacity)));
}

void ks__map_deinit(struct ks__map *map)
{
    g_free(map->keys);
    g_free(map->values);
    memset(map, 0, sizeof *map);
}

bool ks__map_get(const struct ks__map *map, uint64_t key, uint64_t *value_out)
{
    if (map->count == 0) {
        return false;
    }
    for (uint32_t i = map_hash(key, map->capacity);; i = (i + 1) & (map->capacity - 1)) {
        if (map->keys[i] == key) {
            *value_out = map->values[i];
            return true;
        }
        if (map->keys[i] == UINT64_MAX) {
            return false;
        }
    }
}

static void map_grow(struct ks__map *map)
{
    uint32_t old_capacity = map->capacity;
    uint64_t *old_keys = map->keys;
    uint64_t *old_values = map->values;
    map->capacity = old_capacity == 0 ? 64 : old_capacity * 2;
    map->keys = g_new(uint64_t, map->capacity);
    map->values = g_new(uint64_t, map->capacity);
    memset(map->keys, 0xff, sizeof(uint64_t) * map->capacity);
    map->count = 0;
    for (uint32_t i = 0; i < old_capacity; i++) {
        if (old_keys[i] != UINT64_MAX) {
            ks__map_set(map, old_keys[i], old_values[i]);
        }
    }
    g_free(old_keys);
    g_free(old_values);
}

/* The value slot of key, inserted with `initial` if missing. Valid until the
 * next insertion. */
static uint64_t *map_slot(struct ks__map *map, uint64_t key, uint64_t initial)
{
    ks_assert(key != UINT64_MAX);
    if ((map->count + 1) * 2 > map->capacity) {
        map_grow(map);
    }
    for (uint32_t i = map_hash(key, map->capacity);; i = (i + 1) & (map->capacity - 1)) {
        if (map->keys[i] == key) {
            return &map->values[i];
        }
        if (map->keys[i] == UINT64_MAX) {
            map->keys[i] = key;
            map->values[i] = initial;
            map->count++;
            return &map->values[i];
        }
    }
}

void ks__map_set(struct ks__map *map, uint64_t key, uint64_t value)
{
    *map_slot(map, key, value) = value;
}

/* ---- connections ------------------------------------------------------------------- */

static void connections_grow(struct ks__connections *table)
{
    struct ks__connection *old_slots = table->slots;
    uint32_t old_capacity = table->capacity;
    table->capacity = old_capacity == 0 ? 64 : old_capacity * 2;
    table->slots = g_new(struct ks__connection, table->capacity);
    for (uint32_t i = 0; i < table->capacity; i++) {
        table->slots[i].pair = UINT64_MAX;
    }
    for (uint32_t k = 0; k < old_capacity; k++) {
        if (old_slots[k].pair == UINT64_MAX) {
            continue;
        }
        uint32_t i = map_hash(old_slots[k].pair, table->capacity);
        while (table->slots[i].pair != UINT64_MAX) {
            i = (i + 1) & (table->capacity - 1);
        }
        table->slots[i] = old_slots[k];
    }
    g_free(old_slots);
}

/* The connection of pair, made at its first message: no delivery yet, and
 * its jitter stream at the start that ks__rng_link_seed gives it. Valid
 * until the next new connection. One lookup serves both the FIFO rule and
 * the jitter draw of a send (they were two maps, two lookups a message). */
static struct ks__connection *connection(ks_world *world, uint64_t pair)
{
    struct ks__connections *table = &world->connections;
    ks_assert(pair != UINT64_MAX);
    if ((table->count + 1) * 2 > table->capacity) {
        connections_grow(table);
    }
    for (uint32_t i = map_hash(pair, table->capacity);; i = (i + 1) & (table->capacity - 1)) {
        struct ks__connection *slot = &table->slots[i];
        if (slot->pair == pair) {
            return slot;
        }
        if (slot->pair == UINT64_MAX) {
            *slot = (struct ks__connection){ pair, 0, ks__rng_link_seed(world->seed, pair) };
            table->count++;
            return slot;
        }
    }
}

/* ---- message buffers ---------------------------------------------------------------- */

/* A buffer of at least byte_count bytes (> 0), and its class. */
static uint8_t *message_buffer_new(ks_world *world, size_t byte_count, uint8_t *class_out)
{
    ks_assert(byte_count > 0);
    if (!KS__MESSAGE_POOL || byte_count > (size_t)MESSAGE_CLASS_MIN_BYTES
                                              << (KS__MESSAGE_CLASS_COUNT - 1)) {
        *class_out = KS__MESSAGE_MALLOC;
        return g_malloc(byte_count);
    }
    /* the smallest class of 64 << c >= byte_count bytes */
    uint8_t buffer_class =
        byte_count <= MESSAGE_CLASS_MIN_BYTES
            ? 0
            : (uint8_t)(64 - __builtin_clzll((unsigned long long)byte_count - 1) - 6);
    *class_out = buffer_class;
    void *buffer = world->message_free[buffer_class];
    if (buffer == NULL) {
        return g_malloc((size_t)MESSAGE_CLASS_MIN_BYTES << buffer_class);
    }
    memcpy(&world->message_free[buffer_class], buffer, sizeof(void *));
    return buffer;
}

void ks__message_buffer_free(ks_world *world, uint8_t *bytes, uint8_t buffer_class)
{
    if (bytes == NULL) {
        return;
    }
    if (buffer_class == KS__MESSAGE_MALLOC) {
        g_free(bytes);
        return;
    }
    ks_assert(buffer_class < KS__MESSAGE_CLASS_COUNT);
    memcpy(bytes, &world->message_free[buffer_class], sizeof(void *));
    world->message_free[buffer_class] = bytes;
}

static void message_buffers_deinit(ks_world *world)
{
    for (int c = 0; c < KS__MESSAGE_CLASS_COUNT; c++) {
        void *buffer = world->message_free[c];
        while (buffer != NULL) {
            void *next;
            memcpy(&next, buffer, sizeof next);
            g_free(buffer);
            buffer = next;
        }
        world->message_free[c] = NULL;
    }
}

/* ---- set-up --------------------------------------------------------------------- */

void ks__net_init(ks_world *world)
{
    world->cuts = g_array_new(FALSE, TRUE, sizeof(struct ks__cut));
}

void ks__net_deinit(ks_world *world)
{
    message_buffers_deinit(world);
    g_free(world->connections.slots);
    memset(&world->connections, 0, sizeof world->connections);
    ks__map_deinit(&world->link_latency_ns);
    ks__map_deinit(&world->cut_counts);
    if (world->cuts != NULL) {
        for (guint i = 0; i < world->cuts->len; i++) {
            struct ks__cut *cut = &g_array_index(world->cuts, struct ks__cut, i);
            if (cut->pairs != NULL) {
                g_array_free(cut->pairs, TRUE);
            }
        }
        g_array_free(world->cuts, TRUE);
        world->cuts = NULL;
    }
}

/* ---- sending -------------------------------------------------------------------- */

bool ks__net_link_is_up_cut(const ks_world *world, ks_node_id source, ks_node_id target)
{
    uint64_t count = 0;
    return !ks__map_get(&world->cut_counts, ks__pair(source, target), &count) || count == 0;
}

void ks_world_set_receiver(ks_world *world, ks_node_id node, ks_receive_fn *fn, void *context)
{
    struct ks__node *n = ks__node(world->root, ks__view_global(world, node));
    n->receiver = fn;
    n->receiver_context = context;
    n->receiver_view = world;
}

bool ks_world_node_is_up(const ks_world *world, ks_node_id node)
{
    return ks__node(world->root, ks__view_global(world, node))->up;
}

/* owned: message is the sender's g_malloc'd buffer, which the event takes
 * (and which is freed here when the message is dropped at once); else the
 * event holds a copy in a buffer of the world's (see "Message buffers").
 * Inlined into both senders, where owned is a constant. */
static inline __attribute__((always_inline)) void net_send(ks_world *world, ks_node_id source,
                                                           ks_node_id target, uint32_t kind,
                                                           const void *message,
                                                           size_t message_bytes, bool owned)
{
    source = ks__view_global(world, source);
    target = ks__view_global(world, target);
    world = world->root;
    struct ks__node *from = ks__node(world, source);
    struct ks__node *to = ks__node(world, target);
    ks_assert(message != NULL || message_bytes == 0);
    if (!from->up || !ks__net_link_is_up(world, source, target) ||
        (world->loss_ppm > 0 &&
         ks_world_random_below(world, KS_RNG_NET, 1000000) < world->loss_ppm)) {
        if (owned) {
            g_free((void *)message);
        }
        return;
    }
    uint64_t pair = ks__pair(source, target);
    ks_time_ns latency_ns = world->network_latency_ns;
    if (world->link_latency_ns.count > 0) {
        ks__map_get(&world->link_latency_ns, pair, &latency_ns);
    }
    struct ks__connection *conn = connection(world, pair);
    ks_time_ns jitter_ns = 0;
    if (world->network_jitter_ns > 0) {
        uint64_t draw = ks__rng_splitmix64(&conn->jitter_state);
        /* Multiply-shift into [0, jitter]; its bias (below jitter / 2^64) does
         * not matter for a delay. */
        unsigned __int128 scaled = (unsigned __int128)draw * (world->network_jitter_ns + 1);
        jitter_ns = world->network_jitter_ns == UINT64_MAX ? draw : (ks_time_ns)(scaled >> 64);
    }
    ks_time_ns at_ns = world->now_ns + latency_ns;
    ks_assert(at_ns >= world->now_ns);
    ks_time_ns extra_ns = from->net_delay_ns + to->net_delay_ns + jitter_ns;
    ks_assert(at_ns + extra_ns >= at_ns);
    at_ns += extra_ns;
    if (conn->last_delivery_ns > at_ns) {
        at_ns = conn->last_delivery_ns; /* N1: FIFO per connection */
    }
    conn->last_delivery_ns = at_ns;

    struct ks__event *event = ks__event_add(world, at_ns);
    event->type = KS__EVENT_MESSAGE;
    event->node = target;
    event->source = source;
    event->kind = kind;
    event->incarnation = to->incarnation;
    event->buffer_class = KS__MESSAGE_MALLOC;
    if (message_bytes == 0) {
        if (owned) {
            g_free((void *)message);
        }
        event->u.message.bytes = NULL;
    } else if (owned) {
        event->u.message.bytes = (uint8_t *)message;
    } else {
        uint8_t *copy = message_buffer_new(world, message_bytes, &event->buffer_class);
        memcpy(copy, message, message_bytes);
        event->u.message.bytes = copy;
    }
    event->u.message.byte_count = message_bytes;
}

void ks_world_send(ks_world *world, ks_node_id source, ks_node_id target, uint32_t kind,
                   const void *message, size_t message_bytes)
{
    net_send(world, source, target, kind, message, message_bytes, false);
}

void ks_world_send_owned(ks_world *world, ks_node_id source, ks_node_id target, uint32_t kind,
                         void *message, size_t message_bytes)
{
    net_send(world, source, target, kind, message, message_bytes, true);
}

/* ---- faults ------------------------------------------------------------------------ */

static void cut_add_pair(ks_world *world, struct ks__cut *cut, ks_node_id source, ks_node_id target)
{
    ks_assert(source < world->node_count);
    ks_assert(target < world->node_count);
    ks_assert(source != KS_NODE_DRIVER); /* the driver is never cut off */
    ks_assert(target != KS_NODE_DRIVER);
    if (source == target) {
        return;
    }
    uint64_t pair = ks__pair(source, target);
    uint64_t count = 0;
    ks__map_get(&world->cut_counts, pair, &count);
    ks__map_set(&world->cut_counts, pair, count + 1);
    g_array_append_val(cut->pairs, pair);
}

static ks_cut_id cut_new(ks_world *world)
{
    struct ks__cut cut = { .active = true, .pairs = g_array_new(FALSE, FALSE, sizeof(uint64_t)) };
    g_array_append_val(world->cuts, cut);
    world->active_cut_count++;
    return (ks_cut_id)world->cuts->len;
}

ks_cut_id ks_world_net_partition(ks_world *world, const ks_node_id *side_a, size_t a_count,
                                 const ks_node_id *side_b, size_t b_count)
{
    ks_cut_id id = cut_new(world);
    struct ks__cut *cut = &g_array_index(world->cuts, struct ks__cut, id - 1);
    for (size_t i = 0; i < a_count; i++) {
        for (size_t j = 0; j < b_count; j++) {
            cut_add_pair(world, cut, side_a[i], side_b[j]);
            cut_add_pair(world, cut, side_b[j], side_a[i]);
        }
    }
    return id;
}

ks_cut_id ks_world_net_cut_one_way(ks_world *world, ks_node_id source, ks_node_id target)
{
    ks_cut_id id = cut_new(world);
    struct ks__cut *cut = &g_array_index(world->cuts, struct ks__cut, id - 1);
    cut_add_pair(world, cut, source, target);
    return id;
}

void ks_world_net_heal(ks_world *world, ks_cut_id id)
{
    ks_assert(id >= 1 && id <= world->cuts->len);
    struct ks__cut *cut = &g_array_index(world->cuts, struct ks__cut, id - 1);
    if (!cut->active) {
        return; /* healing twice is harmless */
    }
    for (guint i = 0; i < cut->pairs->len; i++) {
        uint64_t pair = g_array_index(cut->pairs, uint64_t, i);
        uint64_t count = 0;
        bool found = ks__map_get(&world->cut_counts, pair, &count);
        ks_assert(found); /* N2 */
        ks_assert(count > 0);
        ks__map_set(&world->cut_counts, pair, count - 1);
    }
    g_array_free(cut->pairs, TRUE);
    cut->pairs = NULL;
    cut->active = false;
    ks_assert(world->active_cut_count > 0);
    world->active_cut_count--;
}

void ks_world_net_heal_all(ks_world *world)
{
    for (guint i = 0; i < world->cuts->len; i++) {
        ks_world_net_heal(world, (ks_cut_id)(i + 1));
    }
    ks_assert(world->active_cut_count == 0);
}

bool ks_world_net_link_is_up(const ks_world *world, ks_node_id source, ks_node_id target)
{
    ks_assert(source < world->node_count);
    ks_assert(target < world->node_count);
    return ks__net_link_is_up(world, source, target);
}

void ks_world_net_set_link_latency(ks_world *world, ks_node_id a, ks_node_id b,
                                   ks_time_ns latency_ns)
{
    ks_assert(a < world->node_count);
    ks_assert(b < world->node_count);
    ks__map_set(&world->link_latency_ns, ks__pair(a, b), latency_ns);
    ks__map_set(&world->link_latency_ns, ks__pair(b, a), latency_ns);
}

void ks_world_net_set_node_delay(ks_world *world, ks_node_id node, ks_time_ns extra_ns)
{
    ks__node(world, node)->net_delay_ns = extra_ns;
}

void ks_world_net_set_loss_ppm(ks_world *world, uint32_t loss_ppm)
{
    ks_assert(loss_ppm <= 1000000);
    world->loss_ppm = loss_ppm;
}
