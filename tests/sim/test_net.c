/*
** tests/sim/test_net.c: the virtual network (suite "sim/net").
**
** Goal: messages arrive after the modelled latency, each (source, target)
** connection is FIFO whatever the jitter, and every network fault drops
** exactly what the contract says: partitions (both directions), one-way cuts,
** counted overlapping cuts and heal, loss in ppm, a crash of the target
** (also with a restart while in flight), a link that goes down in flight.
** Messages to a paused node wait for resume. Method: receivers log (time,
** source, kind, payload) and the tests compare the log with the contract;
** FIFO is a property test over 50 seeds with jitter 100 times the latency;
** jitter streams are per connection (traffic elsewhere shifts nothing).
** Message buffers: every size arrives intact, across the size classes and
** past the largest, and a delivered or dropped message's buffer is reused.
*/
#include "../testlib.h"

#include "../../sim/world_int.h"

#include <string.h>

struct delivery {
    ks_time_ns at_ns;
    ks_node_id self, source;
    uint32_t kind;
    uint64_t payload;
};

struct inbox {
    struct delivery *items;
    size_t count, capacity;
};

static void receive(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                    const void *message, size_t message_bytes, void *context)
{
    struct inbox *inbox = context;
    if (inbox->count == inbox->capacity) {
        inbox->capacity = inbox->capacity ? inbox->capacity * 2 : 64;
        inbox->items = g_renew(struct delivery, inbox->items, inbox->capacity);
    }
    struct delivery d = { ks_world_now_ns(world), self, source, kind, 0 };
    CU_ASSERT_EQUAL(message_bytes, sizeof d.payload);
    if (message_bytes == sizeof d.payload) {
        memcpy(&d.payload, message, sizeof d.payload);
    }
    inbox->items[inbox->count++] = d;
}

static void send_u64(ks_world *world, ks_node_id source, ks_node_id target, uint64_t payload)
{
    ks_world_send(world, source, target, 7, &payload, sizeof payload);
}

static void env_with_jitter(struct ks_test_env *env, uint64_t seed, uint32_t nodes,
                            ks_time_ns latency_ns, ks_time_ns jitter_ns)
{
    struct ks_world_config config = {
        .seed = seed,
        .node_count = nodes,
        .network_latency_ns = latency_ns,
        .network_jitter_ns = jitter_ns,
    };
    ks_test_env_init_config(env, &config);
}

static void test_latency_and_copy(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 3);
    struct inbox inbox = { 0 };
    ks_world_set_receiver(env.world, 2, receive, &inbox);
    uint64_t payload = 1234;
    ks_world_send(env.world, 1, 2, 9, &payload, sizeof payload);
    payload = 999; /* the world copied the bytes */
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    CU_ASSERT_EQUAL_FATAL(inbox.count, 1);
    CU_ASSERT_EQUAL(inbox.items[0].payload, 1234);
    CU_ASSERT_EQUAL(inbox.items[0].at_ns, 1000000); /* 1ms test latency */
    CU_ASSERT_EQUAL(inbox.items[0].source, 1);
    CU_ASSERT_EQUAL(inbox.items[0].self, 2);
    CU_ASSERT_EQUAL(inbox.items[0].kind, 9);
    /* Per-link latency (both ways) and slow-node delay. */
    ks_world_net_set_link_latency(env.world, 1, 2, 5000);
    ks_world_net_set_node_delay(env.world, 2, 300);
    ks_time_ns start = ks_world_now_ns(env.world);
    send_u64(env.world, 1, 2, 1);
    ks_world_set_receiver(env.world, 1, receive, &inbox);
    send_u64(env.world, 2, 1, 2);
    send_u64(env.world, 0, 1, 3); /* default latency, 0 delay */
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    CU_ASSERT_EQUAL_FATAL(inbox.count, 4);
    CU_ASSERT_EQUAL(inbox.items[1].at_ns - start, 5300);
    CU_ASSERT_EQUAL(inbox.items[2].at_ns - start, 5300);
    CU_ASSERT_EQUAL(inbox.items[3].at_ns - start, 1000000);
    /* No receiver: dropped silently. */
    send_u64(env.world, 2, 0, 4);
    CU_ASSERT_EQUAL(ks_world_run_until_idle(env.world, KS_TIME_NEVER), 0);
    g_free(inbox.items);
    ks_test_env_deinit(&env);
}

static void test_fifo_under_jitter(void)
{
    for (uint64_t seed = 1; seed <= 50; seed++) {
        struct ks_test_env env;
        env_with_jitter(&env, seed, 4, 1000, 100000);
        struct inbox inbox = { 0 };
        ks_world_set_receiver(env.world, 3, receive, &inbox);
        uint64_t sent[3] = { 0 };
        /* Three senders interleave 200 messages each over a few ms. */
        for (int round = 0; round < 200; round++) {
            for (ks_node_id source = 0; source < 3; source++) {
                send_u64(env.world, source, 3, ((uint64_t)source << 32) | sent[source]++);
            }
            ks_world_run_until(env.world, ks_world_now_ns(env.world) + 2000);
        }
        ks_world_run_until_idle(env.world, KS_TIME_NEVER);
        CU_ASSERT_EQUAL(inbox.count, 600);
        uint64_t next[3] = { 0 };
        bool reordered_across = false;
        ks_time_ns last_at = 0;
        for (size_t i = 0; i < inbox.count; i++) {
            struct delivery *d = &inbox.items[i];
            CU_ASSERT_EQUAL(d->payload >> 32, d->source);
            CU_ASSERT_EQUAL(d->payload & 0xffffffff, next[d->source]);
            next[d->source] = (d->payload & 0xffffffff) + 1;
            CU_ASSERT(d->at_ns >= last_at);
            last_at = d->at_ns;
            if (i > 0 && inbox.items[i - 1].source != d->source &&
                (inbox.items[i - 1].payload & 0xffffffff) > (d->payload & 0xffffffff)) {
                reordered_across = true;
            }
        }
        /* The jitter is real: different connections do overtake each other. */
        CU_ASSERT_TRUE(reordered_across);
        g_free(inbox.items);
        ks_test_env_deinit(&env);
    }
}

static void test_partition_both_ways(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 5);
    struct inbox inbox = { 0 };
    for (ks_node_id n = 1; n < 5; n++) {
        ks_world_set_receiver(env.world, n, receive, &inbox);
    }
    ks_node_id a[] = { 1, 2 };
    ks_node_id b[] = { 3 };
    ks_cut_id cut = ks_world_net_partition(env.world, a, 2, b, 1);
    CU_ASSERT_FALSE(ks_world_net_link_is_up(env.world, 1, 3));
    CU_ASSERT_FALSE(ks_world_net_link_is_up(env.world, 3, 2));
    CU_ASSERT_TRUE(ks_world_net_link_is_up(env.world, 1, 2));
    CU_ASSERT_TRUE(ks_world_net_link_is_up(env.world, 3, 4));
    CU_ASSERT_TRUE(ks_world_net_link_is_up(env.world, 0, 3));
    send_u64(env.world, 1, 3, 1);
    send_u64(env.world, 3, 1, 2);
    send_u64(env.world, 2, 3, 3);
    send_u64(env.world, 1, 2, 4); /* same side */
    send_u64(env.world, 3, 4, 5); /* not named */
    send_u64(env.world, 0, 3, 6); /* driver */
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    CU_ASSERT_EQUAL_FATAL(inbox.count, 3);
    CU_ASSERT_EQUAL(inbox.items[0].payload, 4);
    CU_ASSERT_EQUAL(inbox.items[1].payload, 5);
    CU_ASSERT_EQUAL(inbox.items[2].payload, 6);
    ks_world_net_heal(env.world, cut);
    CU_ASSERT_TRUE(ks_world_net_link_is_up(env.world, 1, 3));
    CU_ASSERT_TRUE(ks_world_net_link_is_up(env.world, 3, 1));
    send_u64(env.world, 1, 3, 7);
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    CU_ASSERT_EQUAL(inbox.count, 4);
    g_free(inbox.items);
    ks_test_env_deinit(&env);
}

static void test_one_way_and_counted_cuts(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 4);
    struct inbox inbox = { 0 };
    for (ks_node_id n = 1; n < 4; n++) {
        ks_world_set_receiver(env.world, n, receive, &inbox);
    }
    ks_cut_id one_way = ks_world_net_cut_one_way(env.world, 1, 2);
    CU_ASSERT_FALSE(ks_world_net_link_is_up(env.world, 1, 2));
    CU_ASSERT_TRUE(ks_world_net_link_is_up(env.world, 2, 1));
    send_u64(env.world, 1, 2, 1);
    send_u64(env.world, 2, 1, 2);
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    CU_ASSERT_EQUAL_FATAL(inbox.count, 1);
    CU_ASSERT_EQUAL(inbox.items[0].payload, 2);
    /* Overlapping cuts: 1->2 is named by the one-way cut and a partition. */
    ks_node_id a[] = { 1 };
    ks_node_id b[] = { 2, 3 };
    ks_cut_id partition = ks_world_net_partition(env.world, a, 1, b, 2);
    ks_world_net_heal(env.world, one_way);
    CU_ASSERT_FALSE(ks_world_net_link_is_up(env.world, 1, 2)); /* still cut */
    CU_ASSERT_FALSE(ks_world_net_link_is_up(env.world, 2, 1));
    ks_world_net_heal(env.world, one_way); /* twice: harmless */
    CU_ASSERT_FALSE(ks_world_net_link_is_up(env.world, 1, 2));
    ks_world_net_heal(env.world, partition);
    CU_ASSERT_TRUE(ks_world_net_link_is_up(env.world, 1, 2));
    CU_ASSERT_TRUE(ks_world_net_link_is_up(env.world, 3, 1));
    /* heal_all */
    ks_world_net_cut_one_way(env.world, 3, 1);
    ks_world_net_cut_one_way(env.world, 3, 1);
    ks_world_net_partition(env.world, a, 1, b, 2);
    CU_ASSERT_FALSE(ks_world_net_link_is_up(env.world, 3, 1));
    ks_world_net_heal_all(env.world);
    for (ks_node_id s = 0; s < 4; s++) {
        for (ks_node_id t = 0; t < 4; t++) {
            CU_ASSERT_TRUE(ks_world_net_link_is_up(env.world, s, t));
        }
    }
    g_free(inbox.items);
    ks_test_env_deinit(&env);
}

struct cut_ctl {
    ks_node_id source, target;
};

static void cut_now(ks_world *world, void *context)
{
    struct cut_ctl *ctl = context;
    ks_world_net_cut_one_way(world, ctl->source, ctl->target);
}

static void test_link_down_in_flight(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 3);
    struct inbox inbox = { 0 };
    ks_world_set_receiver(env.world, 2, receive, &inbox);
    send_u64(env.world, 1, 2, 1); /* arrives at 1ms */
    struct cut_ctl ctl = { 1, 2 };
    ks_world_schedule(env.world, 0, 500000, 1, cut_now, &ctl); /* cut at 0.5ms */
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    CU_ASSERT_EQUAL(inbox.count, 0);
    g_free(inbox.items);
    ks_test_env_deinit(&env);
}

static void test_crash_drops_messages(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 3);
    struct inbox inbox = { 0 };
    ks_world_set_receiver(env.world, 2, receive, &inbox);
    ks_world_set_receiver(env.world, 1, receive, &inbox);
    send_u64(env.world, 1, 2, 1);
    ks_world_run_until(env.world, 100);
    ks_world_node_crash(env.world, 2, false);
    send_u64(env.world, 1, 2, 2); /* to a down node */
    send_u64(env.world, 2, 1, 3); /* from a down node */
    ks_world_run_until(env.world, 200);
    /* Restart while message 2 is in flight: it belongs to the old incarnation. */
    ks_world_node_restart(env.world, 2);
    send_u64(env.world, 1, 2, 4);
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    CU_ASSERT_EQUAL_FATAL(inbox.count, 1);
    CU_ASSERT_EQUAL(inbox.items[0].payload, 4);
    g_free(inbox.items);
    ks_test_env_deinit(&env);
}

static void resume_node(ks_world *world, void *context)
{
    ks_world_node_resume(world, *(ks_node_id *)context);
}

static void test_paused_target_waits(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 3);
    struct inbox inbox = { 0 };
    ks_world_set_receiver(env.world, 2, receive, &inbox);
    ks_world_node_pause(env.world, 2);
    for (uint64_t i = 0; i < 5; i++) {
        send_u64(env.world, 1, 2, i);
    }
    ks_node_id node = 2;
    ks_world_schedule(env.world, 0, 5000000, 1, resume_node, &node);
    ks_world_run_until(env.world, 4000000);
    CU_ASSERT_EQUAL(inbox.count, 0);
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    CU_ASSERT_EQUAL_FATAL(inbox.count, 5);
    for (uint64_t i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(inbox.items[i].payload, i);
        CU_ASSERT_EQUAL(inbox.items[i].at_ns, 5000000);
    }
    g_free(inbox.items);
    ks_test_env_deinit(&env);
}

static void test_loss_ppm(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 5, 3);
    struct inbox inbox = { 0 };
    ks_world_set_receiver(env.world, 2, receive, &inbox);
    ks_world_net_set_loss_ppm(env.world, 250000); /* 25% */
    for (uint64_t i = 0; i < 20000; i++) {
        send_u64(env.world, 1, 2, i);
        if (i % 1000 == 999) {
            ks_world_run_until_idle(env.world, KS_TIME_NEVER);
        }
    }
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    /* 15000 expected; sd ~61. */
    CU_ASSERT(inbox.count > 14600 && inbox.count < 15400);
    for (size_t i = 1; i < inbox.count; i++) {
        CU_ASSERT_FATAL(inbox.items[i].payload > inbox.items[i - 1].payload);
    }
    size_t before = inbox.count;
    ks_world_net_set_loss_ppm(env.world, 1000000);
    send_u64(env.world, 1, 2, 0);
    ks_world_net_set_loss_ppm(env.world, 0);
    send_u64(env.world, 1, 2, 1);
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    CU_ASSERT_EQUAL(inbox.count, before + 1);
    g_free(inbox.items);
    ks_test_env_deinit(&env);
}

/* Each connection draws its jitter from its own stream: extra traffic on one
 * connection (2 -> 1 in world b) leaves the delays of another (0 -> 3)
 * exactly as they were, while those delays really vary and differ between
 * seeds. */
static void test_jitter_per_connection(void)
{
    struct ks_test_env a, b, c;
    env_with_jitter(&a, 9, 4, 1000, 500);
    env_with_jitter(&b, 9, 4, 1000, 500);
    env_with_jitter(&c, 10, 4, 1000, 500);
    struct inbox in_a = { 0 }, in_b = { 0 }, in_c = { 0 }, other = { 0 };
    ks_world_set_receiver(a.world, 3, receive, &in_a);
    ks_world_set_receiver(b.world, 3, receive, &in_b);
    ks_world_set_receiver(c.world, 3, receive, &in_c);
    ks_world_set_receiver(b.world, 1, receive, &other);
    for (uint64_t i = 0; i < 100; i++) {
        send_u64(b.world, 2, 1, i);
        send_u64(b.world, 2, 1, i);
        send_u64(a.world, 0, 3, i);
        send_u64(b.world, 0, 3, i);
        send_u64(c.world, 0, 3, i);
        ks_world_run_until(a.world, (i + 1) * 10000);
        ks_world_run_until(b.world, (i + 1) * 10000);
        ks_world_run_until(c.world, (i + 1) * 10000);
    }
    CU_ASSERT_EQUAL_FATAL(in_a.count, 100);
    CU_ASSERT_EQUAL_FATAL(in_b.count, 100);
    CU_ASSERT_EQUAL_FATAL(in_c.count, 100);
    CU_ASSERT_EQUAL(other.count, 200);
    bool varies = false;
    bool seeds_differ = false;
    for (size_t i = 0; i < 100; i++) {
        ks_time_ns delay = in_a.items[i].at_ns - i * 10000;
        CU_ASSERT(delay >= 1000 && delay <= 1500);
        CU_ASSERT_EQUAL(in_a.items[i].at_ns, in_b.items[i].at_ns);
        varies = varies || in_a.items[i].at_ns - i * 10000 != in_a.items[0].at_ns;
        seeds_differ = seeds_differ || in_a.items[i].at_ns != in_c.items[i].at_ns;
    }
    CU_ASSERT_TRUE(varies);
    CU_ASSERT_TRUE(seeds_differ);
    g_free(in_a.items);
    g_free(in_b.items);
    g_free(in_c.items);
    g_free(other.items);
    ks_test_env_deinit(&a);
    ks_test_env_deinit(&b);
    ks_test_env_deinit(&c);
}

/* ks_world_send_owned is ks_world_send without the copy: the same deliveries
 * (time, bytes) and the same trace hash, with the buffer taken by the world
 * whether the message is delivered, dropped at once (cut link, down sender,
 * loss) or dropped in flight (crash); the ASan build checks that every
 * buffer is freed exactly once. */
static void receive_empty(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                          const void *message, size_t message_bytes, void *context)
{
    (void)world;
    (void)self;
    (void)source;
    (void)kind;
    CU_ASSERT_PTR_NULL(message);
    CU_ASSERT_EQUAL(message_bytes, 0);
    (*(size_t *)context)++;
}

static void send_both_ways(ks_world *world, bool owned, uint64_t payload)
{
    if (owned) {
        uint64_t *copy = g_malloc(sizeof *copy);
        *copy = payload;
        ks_world_send_owned(world, 1, 2, 7, copy, sizeof *copy);
    } else {
        send_u64(world, 1, 2, payload);
    }
}

static void test_send_owned_same_as_send(void)
{
    uint64_t hashes[2];
    size_t counts[2];
    for (int owned = 0; owned < 2; owned++) {
        struct ks_test_env env;
        env_with_jitter(&env, 3, 3, 1000000, 500000);
        struct inbox inbox = { 0 };
        ks_world_set_receiver(env.world, 2, receive, &inbox);
        ks_world_net_set_loss_ppm(env.world, 300000);
        for (uint64_t i = 0; i < 200; i++) {
            send_both_ways(env.world, owned, i);
        }
        ks_world_net_set_loss_ppm(env.world, 0);
        ks_cut_id cut = ks_world_net_cut_one_way(env.world, 1, 2);
        send_both_ways(env.world, owned, 1000); /* dropped: the link is cut */
        ks_world_net_heal(env.world, cut);
        ks_world_run_until_idle(env.world, KS_TIME_NEVER);
        send_both_ways(env.world, owned, 2000);
        ks_world_node_crash(env.world, 2, false); /* 2000 is dropped in flight */
        ks_world_run_until_idle(env.world, KS_TIME_NEVER);
        ks_world_node_restart(env.world, 2);
        /* A message of no bytes (to node 0): owned, the world frees the
         * buffer it was given and delivers no bytes. */
        size_t empty_count = 0;
        ks_world_set_receiver(env.world, 0, receive_empty, &empty_count);
        if (owned) {
            ks_world_send_owned(env.world, 1, 0, 8, g_malloc(8), 0);
        } else {
            ks_world_send(env.world, 1, 0, 8, NULL, 0);
        }
        ks_world_run_until_idle(env.world, KS_TIME_NEVER);
        CU_ASSERT_EQUAL(empty_count, 1);
        counts[owned] = inbox.count;
        hashes[owned] = ks_world_trace_hash(env.world);
        for (size_t i = 0; i < inbox.count; i++) {
            CU_ASSERT(inbox.items[i].payload < 200);
        }
        g_free(inbox.items);
        ks_test_env_deinit(&env);
    }
    CU_ASSERT(counts[0] > 100 && counts[0] < 180); /* the loss did drop some */
    CU_ASSERT_EQUAL(counts[0], counts[1]);
    CU_ASSERT_EQUAL(hashes[0], hashes[1]);
}

/* Message sizes around the buffer classes' edges and past the largest. */
static const size_t buffer_sizes[] = { 1, 63, 64, 65, 1000, 131072, 131073, 300000 };

struct pattern_inbox {
    int received;
    int intact;
};

static uint8_t pattern_byte(size_t size, size_t i)
{
    return (uint8_t)(size * 31 + i * 7 + (i >> 8));
}

static void receive_pattern(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                            const void *message, size_t message_bytes, void *context)
{
    (void)world;
    (void)self;
    (void)source;
    (void)kind;
    struct pattern_inbox *inbox = context;
    const uint8_t *bytes = message;
    bool intact = true;
    for (size_t i = 0; i < message_bytes; i++) {
        intact = intact && bytes[i] == pattern_byte(message_bytes, i);
    }
    inbox->received++;
    inbox->intact += intact;
}

static void send_patterns(ks_world *world)
{
    for (size_t k = 0; k < sizeof buffer_sizes / sizeof buffer_sizes[0]; k++) {
        uint8_t *bytes = g_malloc(buffer_sizes[k]);
        for (size_t i = 0; i < buffer_sizes[k]; i++) {
            bytes[i] = pattern_byte(buffer_sizes[k], i);
        }
        ks_world_send(world, 1, 2, 7, bytes, buffer_sizes[k]);
        memset(bytes, 0, buffer_sizes[k]); /* the world holds its own copy */
        g_free(bytes);
    }
}

static uint32_t free_buffers(const ks_world *world, int buffer_class)
{
    uint32_t count = 0;
    for (void *b = world->message_free[buffer_class]; b != NULL; memcpy(&b, b, sizeof b)) {
        count++;
    }
    return count;
}

static void test_message_buffers(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 3);
    struct pattern_inbox inbox = { 0 };
    ks_world_set_receiver(env.world, 2, receive_pattern, &inbox);
    int rounds = 50;
    for (int r = 0; r < rounds; r++) {
        send_patterns(env.world);
        ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    }
    /* Some in flight when the target crashes: dropped, buffers given back. */
    send_patterns(env.world);
    ks_world_node_crash(env.world, 2, false);
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    int sizes = (int)(sizeof buffer_sizes / sizeof buffer_sizes[0]);
    CU_ASSERT_EQUAL(inbox.received, rounds * sizes);
    CU_ASSERT_EQUAL(inbox.intact, rounds * sizes);
    /* Eight in flight at a time: three of class 0 (1, 63, 64 bytes), one of
     * class 1 (65), class 4 (1000) and class 11 (131072); the two larger
     * ones are plain blocks. Reused, the classes hold no more than that. */
    uint32_t expected[KS__MESSAGE_CLASS_COUNT] = { 3, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1 };
    for (int c = 0; c < KS__MESSAGE_CLASS_COUNT; c++) {
        CU_ASSERT_EQUAL(free_buffers(env.world, c), KS__MESSAGE_POOL ? expected[c] : 0);
    }
    ks_test_env_deinit(&env);
}

void ks_test_register_net(void)
{
    static const struct ks_test_case cases[] = {
        { "latency_and_copy", test_latency_and_copy },
        { "fifo_under_jitter", test_fifo_under_jitter },
        { "jitter_per_connection", test_jitter_per_connection },
        { "partition_both_ways", test_partition_both_ways },
        { "one_way_and_counted_cuts", test_one_way_and_counted_cuts },
        { "link_down_in_flight", test_link_down_in_flight },
        { "crash_drops_messages", test_crash_drops_messages },
        { "paused_target_waits", test_paused_target_waits },
        { "loss_ppm", test_loss_ppm },
        { "send_owned_same_as_send", test_send_owned_same_as_send },
        { "message_buffers", test_message_buffers },
    };
    KS_TEST_ADD_SUITE("sim/net", cases);
}
