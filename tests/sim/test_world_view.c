/*
** tests/sim/test_world_view.c: views of one world (ks_world_view_new), the
** ground several clusters of one scenario stand on (issue 20).
**
** Goal: a view is transparent, and two clusters on views of one world run
** side by side on one clock without seeing each other. Method: the same
** cluster and workload run on a world directly and on a view of a world
** with the same nodes (base 1): the trace hash must be equal (same events,
** same times, same nodes, same bytes), and the files sit under the view's
** folder. Then two clusters on two views of one world: both produce and
** consume everything, their files are apart (east/broker-1, west/broker-1),
** the trace is the same for the same seed, and crashing every broker of one
** (through the world, with the world's ids) leaves the other acking. Last,
** a node outside a view (as a mirror's client of two clusters will be)
** exchanges messages with a view's node and the ids come back translated.
*/
#include "../core/cluster_fixture.h"
#include "../testlib.h"

#include <sys/stat.h>

/* 3 brokers, "orders" with 2 partitions (RF 3, min ISR 2), one producer of
 * 200 records/s for 5 s, one consumer from the earliest offset. */
static void workload(struct cluster_fixture *cf)
{
    cf_init(cf, 3);
    cf->cluster_config.offsets_topic_partition_count = 5;
    cf->cluster_config.group_initial_rebalance_delay_ns = 1000 * (int64_t)CF_MS;
    cf_topic(cf, "orders", 2, 3, 2, NULL);
    struct ks_producer_config *producer = cf_producer(cf, "p", 0);
    producer->rate_per_s = 200;
    producer->count = 1000;
    producer->key_count = 100;
    producer->value_bytes = 50;
    cf_consumer(cf, "c", "g", 0)->auto_offset_reset = KS_RESET_EARLIEST;
    cf->check_every_event = false;
    cf->spec = (struct ks_cluster_spec){
        .cluster = &cf->cluster_config,
        .topics = cf->topics,
        .topic_count = cf->topic_count,
        .producers = &cf->producer,
        .producer_count = 1,
        .consumers = cf->consumers,
        .consumer_count = cf->consumer_count,
    };
}

static ks_world *world_new(struct cluster_fixture *cf, char **run_dir_out, uint32_t node_count)
{
    GError *error = NULL;
    *run_dir_out = g_dir_make_tmp("ksim-test-XXXXXX", &error);
    ks_assert(*run_dir_out != NULL);
    cf->world_config.seed = 7;
    cf->world_config.run_dir = *run_dir_out;
    cf->world_config.node_count = node_count;
    ks_world *world = ks_world_new(&cf->world_config, &error);
    ks_assert(world != NULL);
    return world;
}

static bool exists_under(const char *run_dir, const char *path)
{
    g_autofree char *real = g_build_filename(run_dir, path, NULL);
    struct stat st;
    return stat(real, &st) == 0;
}

/* Runs root until both clusters (b may be NULL) have converged, at most 120 s
 * of simulated time from now (cf_drain for clusters on views). */
static void drain(ks_world *root, struct ks_cluster *a, struct ks_cluster *b)
{
    ks_time_ns end_ns = ks_world_now_ns(root) + 120 * CF_S;
    while (ks_world_now_ns(root) < end_ns) {
        ks_world_run_until(root, ks_world_now_ns(root) + 100 * CF_MS);
        if (ks_cluster_converged(a) && (b == NULL || ks_cluster_converged(b))) {
            return;
        }
    }
}

/* Runs the cluster of cf, already built on world or a view of it, to the
 * end of its workload and drains it. Returns the trace hash. */
static uint64_t run_one(struct cluster_fixture *cf, ks_world *root)
{
    ks_cluster_start(cf->cluster);
    ks_world_run_until(root, 8 * CF_S);
    ks_cluster_stop_producers(cf->cluster);
    drain(root, cf->cluster, NULL);
    return ks_world_trace_hash(root);
}

static void release(struct cluster_fixture *cf, ks_world *world, char *run_dir)
{
    ks_cluster_free(cf->cluster);
    cf->cluster = NULL;
    ks_world_free(world);
    ks_host_remove_tree(run_dir);
    g_free(run_dir);
    cf_free(cf);
}

static void test_transparent(void)
{
    struct cluster_fixture direct;
    workload(&direct);
    char *direct_dir = NULL;
    uint32_t node_count = ks_cluster_node_count(&direct.spec);
    ks_world *world = world_new(&direct, &direct_dir, node_count);
    direct.cluster = ks_cluster_new(world, &direct.spec, &direct.observer);
    uint64_t direct_hash = run_one(&direct, world);
    CU_ASSERT_EQUAL(direct.acked_count, 1000);
    CU_ASSERT_TRUE(exists_under(direct_dir, "broker-1"));

    struct cluster_fixture viewed;
    workload(&viewed);
    char *viewed_dir = NULL;
    ks_world *root = world_new(&viewed, &viewed_dir, node_count);
    ks_world *view = ks_world_view_new(root, 1, node_count, "east");
    CU_ASSERT_EQUAL(ks_world_view_node(view, 0), 0);
    CU_ASSERT_EQUAL(ks_world_view_node(view, 3), 3);
    viewed.cluster = ks_cluster_new(view, &viewed.spec, &viewed.observer);
    uint64_t viewed_hash = run_one(&viewed, root);
    CU_ASSERT_EQUAL(viewed.acked_count, 1000);
    CU_ASSERT_TRUE(direct.consumed_count >= 1000);
    CU_ASSERT_EQUAL(viewed.consumed_count, direct.consumed_count);
    CU_ASSERT_EQUAL(viewed_hash, direct_hash);
    CU_ASSERT_TRUE(exists_under(viewed_dir, "east/broker-1"));
    CU_ASSERT_FALSE(exists_under(viewed_dir, "broker-1"));

    release(&direct, world, direct_dir);
    release(&viewed, root, viewed_dir);
}

/* Two clusters on one world; returns the trace hash. crash_west: every
 * broker of west crashes at 2 s. */
static uint64_t two_clusters(bool crash_west, int64_t *east_acked, int64_t *west_acked,
                             int64_t *east_consumed, int64_t *west_consumed)
{
    struct cluster_fixture east;
    struct cluster_fixture west;
    workload(&east);
    workload(&west);
    uint32_t east_count = ks_cluster_node_count(&east.spec);
    uint32_t west_count = ks_cluster_node_count(&west.spec);
    char *run_dir = NULL;
    /* node 0 is shared: the driver of both */
    ks_world *root = world_new(&east, &run_dir, east_count + west_count - 1);
    ks_world *east_view = ks_world_view_new(root, 1, east_count, "east");
    ks_world *west_view = ks_world_view_new(root, east_count, west_count, "west");
    CU_ASSERT_EQUAL(ks_world_view_node(west_view, 1), east_count);
    east.cluster = ks_cluster_new(east_view, &east.spec, &east.observer);
    west.cluster = ks_cluster_new(west_view, &west.spec, &west.observer);
    ks_cluster_start(east.cluster);
    ks_cluster_start(west.cluster);
    ks_world_run_until(root, 2 * CF_S);
    if (crash_west) {
        for (ks_node_id broker = 1; broker <= 3; broker++) {
            ks_world_node_crash(root, ks_world_view_node(west_view, broker), false);
            ks_cluster_on_node_crashed(west.cluster, broker);
        }
    }
    ks_world_run_until(root, 8 * CF_S);
    ks_cluster_stop_producers(east.cluster);
    ks_cluster_stop_producers(west.cluster);
    if (crash_west) {
        drain(root, east.cluster, NULL); /* west never converges: no brokers */
    } else {
        drain(root, east.cluster, west.cluster);
    }
    uint64_t hash = ks_world_trace_hash(root);
    CU_ASSERT_TRUE(exists_under(run_dir, "east/broker-1"));
    CU_ASSERT_TRUE(exists_under(run_dir, "west/broker-3"));
    *east_acked = east.acked_count;
    *west_acked = west.acked_count;
    *east_consumed = east.consumed_count;
    *west_consumed = west.consumed_count;
    ks_cluster_free(west.cluster);
    west.cluster = NULL;
    cf_free(&west);
    release(&east, root, run_dir);
    return hash;
}

static void test_two_clusters(void)
{
    int64_t east_acked = 0;
    int64_t west_acked = 0;
    int64_t east_consumed = 0;
    int64_t west_consumed = 0;
    uint64_t hash = two_clusters(false, &east_acked, &west_acked, &east_consumed, &west_consumed);
    CU_ASSERT_EQUAL(east_acked, 1000);
    CU_ASSERT_EQUAL(west_acked, 1000);
    CU_ASSERT_TRUE(east_consumed >= 1000);
    CU_ASSERT_TRUE(west_consumed >= 1000);
    uint64_t again = two_clusters(false, &east_acked, &west_acked, &east_consumed, &west_consumed);
    CU_ASSERT_EQUAL(again, hash);

    /* West loses every broker: east does not notice. */
    two_clusters(true, &east_acked, &west_acked, &east_consumed, &west_consumed);
    CU_ASSERT_EQUAL(east_acked, 1000);
    CU_ASSERT_TRUE(east_consumed >= 1000);
    CU_ASSERT_TRUE(west_acked < 1000);
}

struct echo {
    ks_node_id self_seen;
    ks_node_id source_seen;
    ks_world *world_seen;
    int received;
};

static void echo_receive(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                         const void *message, size_t message_bytes, void *context)
{
    (void)kind;
    (void)message;
    (void)message_bytes;
    struct echo *echo = context;
    echo->self_seen = self;
    echo->source_seen = source;
    echo->world_seen = world;
    echo->received++;
    if (echo->received == 1) {
        ks_world_send(world, self, source, 2, "r", 1); /* the answer */
    }
}

static void test_outside_node(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 3, 10);
    /* The view holds the world's nodes 4..6 as its 1..3; node 9 is outside. */
    ks_world *view = ks_world_view_new(env.world, 4, 4, "west");
    struct echo inside = { 0 };
    struct echo outside = { 0 };
    ks_world_set_receiver(view, 2, echo_receive, &inside);
    ks_world_set_receiver(env.world, 9, echo_receive, &outside);
    outside.received = 1; /* no answer to the answer */
    ks_world_send(env.world, 9, ks_world_view_node(view, 2), 1, "q", 1);
    ks_world_run_until(env.world, 10 * CF_MS);
    CU_ASSERT_EQUAL(inside.received, 1);
    CU_ASSERT_EQUAL(inside.self_seen, 2);
    CU_ASSERT_PTR_EQUAL(inside.world_seen, view);
    CU_ASSERT_EQUAL(outside.received, 2);
    CU_ASSERT_EQUAL(outside.self_seen, 9);
    CU_ASSERT_EQUAL(outside.source_seen, 5); /* the view's node 2 */
    CU_ASSERT_PTR_EQUAL(outside.world_seen, env.world);
    /* The clock and the nodes are the root's. */
    CU_ASSERT_EQUAL(ks_world_now_ns(view), ks_world_now_ns(env.world));
    CU_ASSERT_TRUE(ks_world_node_is_up(view, 2));
    ks_world_node_crash(env.world, 5, false);
    CU_ASSERT_FALSE(ks_world_node_is_up(view, 2));
    ks_test_env_deinit(&env);
}

void ks_test_register_world_view(void)
{
    static const struct ks_test_case cases[] = {
        { "transparent", test_transparent },
        { "two_clusters", test_two_clusters },
        { "outside_node", test_outside_node },
    };
    KS_TEST_ADD_SUITE("sim/world_view", cases);
}
