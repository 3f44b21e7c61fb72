/*
** tests/sim/test_world.c: the world as a whole (suite "sim/world").
**
** Goal: a run is a function of its seed. The same seed gives the same trace
** (text and hash), another seed a different one; the trace lines have the
** documented shape; driver observations fold into the hash; ks_world_new
** reports an unusable run folder as a GError. Method: a small gossip workload
** (nodes forward messages to random peers after random delays, with jitter,
** loss, a crash, a pause and a partition) runs twice per seed, writing its
** trace to memory, and the results are compared. Misuse (bad paths, time
** overflow, crashing the driver, unknown nodes) must abort through ks_assert:
** checked in a forked child. The byte hash is checked against the
** documented algorithm, written here one byte at a time.
*/
#include "../testlib.h"

#include "../../core/base.h"
#include "../../sim/world_int.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct gossip {
    ks_world *world;
    uint32_t node_count;
    int budget;
};

static void gossip_receive(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                           const void *message, size_t message_bytes, void *context)
{
    (void)source;
    (void)kind;
    struct gossip *g = context;
    if (g->budget-- <= 0) {
        return;
    }
    uint64_t hops = 0;
    memcpy(&hops, message, message_bytes < sizeof hops ? message_bytes : sizeof hops);
    hops++;
    ks_node_id target =
        1 + (ks_node_id)ks_world_random_below(world, KS_RNG_WORKLOAD, g->node_count - 1);
    ks_world_send(world, self, target, (uint32_t)(hops % 5), &hops, sizeof hops);
}

static void tick(ks_world *world, void *context)
{
    struct gossip *g = context;
    if (g->budget <= 0) {
        return;
    }
    uint64_t zero = 0;
    ks_node_id source =
        1 + (ks_node_id)ks_world_random_below(world, KS_RNG_WORKLOAD, g->node_count - 1);
    ks_world_send(world, source, 1 + source % (g->node_count - 1), 1, &zero, sizeof zero);
    ks_world_schedule(world, KS_NODE_DRIVER, ks_world_random_below(world, KS_RNG_WORKLOAD, 200000),
                      2, tick, g);
}

static void faults(ks_world *world, void *context)
{
    (void)context;
    ks_time_ns now = ks_world_now_ns(world);
    if (now == 5000000) {
        ks_world_node_crash(world, 2, false);
        ks_world_node_pause(world, 3);
    } else if (now == 9000000) {
        ks_world_node_restart(world, 2);
        ks_world_node_resume(world, 3);
        ks_node_id a[] = { 1 }, b[] = { 4, 5 };
        ks_world_net_partition(world, a, 1, b, 2);
    } else if (now == 14000000) {
        ks_world_net_heal_all(world);
    }
}

struct run_result {
    uint64_t hash;
    uint64_t events;
    char *trace; /* owned */
};

static struct run_result run_gossip(uint64_t seed)
{
    struct ks_world_config config = {
        .seed = seed,
        .node_count = 6,
        .network_latency_ns = 100000,
        .network_jitter_ns = 50000,
    };
    struct ks_test_env env;
    ks_test_env_init_config(&env, &config);
    char *buffer = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&buffer, &length);
    ks_world_set_trace(env.world, out);
    ks_world_net_set_loss_ppm(env.world, 20000);
    struct gossip g = { env.world, 6, 3000 };
    for (ks_node_id n = 1; n < 6; n++) {
        ks_world_set_receiver(env.world, n, gossip_receive, &g);
    }
    ks_world_schedule(env.world, KS_NODE_DRIVER, 0, 2, tick, &g);
    ks_world_schedule(env.world, KS_NODE_DRIVER, 5000000, 3, faults, NULL);
    ks_world_schedule(env.world, KS_NODE_DRIVER, 9000000, 3, faults, NULL);
    ks_world_schedule(env.world, KS_NODE_DRIVER, 14000000, 3, faults, NULL);
    ks_world_run_until_idle(env.world, 100 * KS_NS_PER_MS);
    ks_world_set_trace(env.world, NULL);
    fclose(out);
    struct run_result r = { ks_world_trace_hash(env.world), ks_world_event_count(env.world),
                            buffer };
    ks_test_env_deinit(&env);
    return r;
}

static void test_same_seed_same_trace(void)
{
    for (uint64_t seed = 1; seed <= 5; seed++) {
        struct run_result a = run_gossip(seed);
        struct run_result b = run_gossip(seed);
        struct run_result c = run_gossip(seed + 1000);
        CU_ASSERT(a.events > 1000);
        CU_ASSERT_EQUAL(a.hash, b.hash);
        CU_ASSERT_EQUAL(a.events, b.events);
        CU_ASSERT_STRING_EQUAL(a.trace, b.trace);
        CU_ASSERT_NOT_EQUAL(a.hash, c.hash);
        CU_ASSERT(strcmp(a.trace, c.trace) != 0);
        free(a.trace);
        free(b.trace);
        free(c.trace);
    }
}

static void noop(ks_world *world, void *context)
{
    (void)world;
    (void)context;
}

static void ignore(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                   const void *message, size_t message_bytes, void *context)
{
    (void)world, (void)self, (void)source, (void)kind, (void)message, (void)message_bytes;
    (void)context;
}

static void test_trace_lines(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 3);
    char *buffer = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&buffer, &length);
    ks_world_set_trace(env.world, out);
    ks_world_set_receiver(env.world, 2, ignore, NULL);
    ks_world_schedule(env.world, 1, 5, 42, noop, NULL);
    ks_world_send(env.world, 1, 2, 17, "abc", 3);
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    fclose(out);
    CU_ASSERT_STRING_EQUAL(buffer, "5 timer kind=42 node=1\n"
                                   "1000000 msg kind=17 node=2 from=1 bytes=3\n");
    free(buffer);
    ks_test_env_deinit(&env);
}

static void test_hash_covers_payload_and_mix(void)
{
    uint64_t hashes[4];
    for (int variant = 0; variant < 4; variant++) {
        struct ks_test_env env;
        ks_test_env_init(&env, 1, 3);
        ks_world_set_receiver(env.world, 2, ignore, NULL);
        const char *payload = variant == 1 ? "abd" : "abc";
        ks_world_send(env.world, 1, 2, 17, payload, 3);
        ks_world_run_until_idle(env.world, KS_TIME_NEVER);
        if (variant == 2) {
            ks_world_trace_mix(env.world, 1, 0, "x", 1);
        }
        if (variant == 3) {
            ks_world_trace_mix(env.world, 1, 0, "y", 1);
        }
        hashes[variant] = ks_world_trace_hash(env.world);
        ks_test_env_deinit(&env);
    }
    CU_ASSERT_NOT_EQUAL(hashes[0], hashes[1]);
    CU_ASSERT_NOT_EQUAL(hashes[0], hashes[2]);
    CU_ASSERT_NOT_EQUAL(hashes[2], hashes[3]);
}

static void test_bad_run_dir(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    /* A run folder under a regular file cannot be made. */
    ks_file *f = ks_disk_open(env.world, 1, "plain", KS_DISK_CREATE, NULL);
    ks_disk_close(f);
    char *real = ks_world_real_path(env.world, "plain");
    char *bad = g_build_filename(real, "sub", NULL);
    struct ks_world_config config = { .seed = 1, .node_count = 2, .run_dir = bad };
    GError *error = NULL;
    ks_world *world = ks_world_new(&config, &error);
    CU_ASSERT_PTR_NULL(world);
    CU_ASSERT_PTR_NOT_NULL(error);
    g_clear_error(&error);
    g_free(bad);
    g_free(real);
    ks_world_free(NULL);
    ks_test_env_deinit(&env);
}

static void test_free_closes_open_handles(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    /* Left open on purpose (and a message and a timer pending): world_free
     * releases them, which the ASan build checks. */
    ks_file *f = ks_disk_open(env.world, 1, "open/at/exit", KS_DISK_CREATE, NULL);
    ks_disk_append(f, "x", 1);
    ks_world_set_receiver(env.world, 1, ignore, NULL);
    ks_world_send(env.world, 0, 1, 1, "pending", 7);
    ks_world_schedule(env.world, 1, 100, 1, noop, NULL);
    CU_ASSERT_EQUAL(ks_world_run_until(env.world, 10), 0);
    ks_test_env_deinit(&env);
}

/* Runs fn in a child process and reports whether it died of ks_assert
 * (abort). The child never returns to CUnit. */
static bool dies(void (*fn)(ks_world *world), ks_world *world)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int null_fd = open("/dev/null", O_WRONLY);
        dup2(null_fd, 2);
        fn(world);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void misuse_dotdot(ks_world *world)
{
    ks_disk_open(world, 1, "a/../b", KS_DISK_CREATE, NULL);
}

static void misuse_absolute(ks_world *world)
{
    ks_disk_exists(world, 1, "/etc/passwd");
}

static void misuse_empty_component(ks_world *world)
{
    ks_disk_mkdir(world, 1, "a//b");
}

static void misuse_overflow(ks_world *world)
{
    ks_world_run_until(world, 10);
    ks_world_schedule(world, 1, UINT64_MAX - 5, 1, noop, NULL);
}

static void misuse_crash_driver(ks_world *world)
{
    ks_world_node_crash(world, KS_NODE_DRIVER, false);
}

static void misuse_bad_node(ks_world *world)
{
    ks_world_send(world, 1, 99, 1, "x", 1);
}

static void fine(ks_world *world)
{
    ks_world_schedule(world, 1, UINT64_MAX - 20, 1, noop, NULL);
    ks_disk_mkdir(world, 1, "a/..b/c.d");
}

static void test_misuse_asserts(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 3);
    CU_ASSERT_FALSE(dies(fine, env.world));
    CU_ASSERT_TRUE(dies(misuse_dotdot, env.world));
    CU_ASSERT_TRUE(dies(misuse_absolute, env.world));
    CU_ASSERT_TRUE(dies(misuse_empty_component, env.world));
    CU_ASSERT_TRUE(dies(misuse_overflow, env.world));
    CU_ASSERT_TRUE(dies(misuse_crash_driver, env.world));
    CU_ASSERT_TRUE(dies(misuse_bad_node, env.world));
    ks_test_env_deinit(&env);
}

/* The trace hash's bytes as world.c's header documents them: little-endian
 * 8-byte words, the last one zero-padded, then the length; each word w gives
 * h = (rotl(h, 23) XOR w) * 0x9E3779B97F4A7C15. */
static uint64_t reference_hash_bytes(uint64_t h, const uint8_t *bytes, size_t byte_count)
{
    for (size_t i = 0; i < byte_count; i += 8) {
        uint64_t word = 0;
        for (size_t k = 0; k < 8 && i + k < byte_count; k++) {
            word |= (uint64_t)bytes[i + k] << (8 * k);
        }
        h = (((h << 23) | (h >> 41)) ^ word) * UINT64_C(0x9E3779B97F4A7C15);
    }
    return (((h << 23) | (h >> 41)) ^ (uint64_t)byte_count) * UINT64_C(0x9E3779B97F4A7C15);
}

static void test_hash_bytes_as_documented(void)
{
    uint8_t bytes[301];
    for (size_t i = 0; i < sizeof bytes; i++) {
        bytes[i] = (uint8_t)(i * 151 + 7);
    }
    bool same = true;
    for (size_t length = 0; length <= 300; length++) {
        /* every length, from an unaligned start too */
        for (size_t start = 0; start <= 1; start++) {
            uint64_t seed = UINT64_C(0x6b73696d74726163) + length;
            same = same && ks__hash_bytes(seed, bytes + start, length) ==
                               reference_hash_bytes(seed, bytes + start, length);
        }
    }
    CU_ASSERT_TRUE(same);
}

void ks_test_register_world(void)
{
    static const struct ks_test_case cases[] = {
        { "same_seed_same_trace", test_same_seed_same_trace },
        { "trace_lines", test_trace_lines },
        { "hash_covers_payload_and_mix", test_hash_covers_payload_and_mix },
        { "hash_bytes_as_documented", test_hash_bytes_as_documented },
        { "bad_run_dir", test_bad_run_dir },
        { "free_closes_open_handles", test_free_closes_open_handles },
        { "misuse_asserts", test_misuse_asserts },
    };
    KS_TEST_ADD_SUITE("sim/world", cases);
}
