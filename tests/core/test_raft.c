/* tests/core/test_raft.c: the KRaft quorum (core/raft.c).
 *
 * Method: 3 or 5 voters on a test world (nodes 1..N), each node's messages
 * routed to its ks_raft; after every event the cross-voter invariants of
 * Kafka's RaftEventSimulationTest run (ks_raft_quorum_check: one leader per
 * epoch, monotonic high watermarks, consistent committed data that a
 * majority holds). Each test drives one story: an election, commits seen on
 * every voter in order, leader crash and failover with nothing committed
 * lost, a cut-off leader that resigns by check quorum and whose uncommitted
 * records are truncated when it rejoins, and a restart that replays the log. */
#include "../../core/base.h"
#include "../../core/raft.h"
#include "../testlib.h"

#include <stdio.h>
#include <string.h>

#define T_MS ((ks_time_ns)1000000)
#define T_S  (1000 * T_MS)

struct node_log {
    GArray *values; /* int64_t per committed record, in the order on_commit gave them */
    int64_t last_offset;
};

struct quorum {
    struct ks_test_env env;
    int32_t count;
    struct ks_raft *nodes[KS_RAFT_VOTERS_MAX];
    struct node_log logs[KS_RAFT_VOTERS_MAX];
    struct ks_raft_quorum_checker *checker;
    int32_t state_changes;
};

static void on_commit(void *context, int64_t offset, const uint8_t *value, int32_t value_bytes)
{
    struct node_log *log = context;
    CU_ASSERT_EQUAL_FATAL(value_bytes, (int32_t)sizeof(int64_t));
    CU_ASSERT_TRUE(offset > log->last_offset); /* once each, in offset order */
    log->last_offset = offset;
    int64_t v;
    memcpy(&v, value, sizeof(v));
    g_array_append_val(log->values, v);
}

static void on_receive(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                       const void *message, size_t message_bytes, void *context)
{
    (void)world;
    (void)self;
    CU_ASSERT_TRUE(ks_raft_receive(context, source, kind, message, message_bytes));
}

static void after_event(ks_world *world, void *context)
{
    (void)world;
    struct quorum *q = context;
    ks_raft_quorum_check(q->checker, q->nodes, q->count);
}

static void quorum_init(struct quorum *q, int32_t count, uint64_t seed)
{
    memset(q, 0, sizeof(*q));
    ks_test_env_init(&q->env, seed, (uint32_t)count + 1);
    q->count = count;
    ks_node_id voters[KS_RAFT_VOTERS_MAX];
    for (int32_t i = 0; i < count; i++) {
        voters[i] = (ks_node_id)(i + 1);
    }
    struct ks_raft_config config;
    ks_raft_config_defaults(&config);
    for (int32_t i = 0; i < count; i++) {
        q->logs[i].values = g_array_new(false, false, sizeof(int64_t));
        q->logs[i].last_offset = -1;
        struct ks_raft_listener listener = { .on_commit = on_commit, .context = &q->logs[i] };
        char dir[64];
        snprintf(dir, sizeof(dir), "controller-%d/__cluster_metadata-0", i + 1);
        q->nodes[i] = ks_raft_new(q->env.world, voters[i], voters, count, &config, dir, &listener);
        ks_world_set_receiver(q->env.world, voters[i], on_receive, q->nodes[i]);
    }
    q->checker = ks_raft_quorum_checker_new();
    ks_world_set_after_event(q->env.world, after_event, q);
    for (int32_t i = 0; i < count; i++) {
        ks_raft_start(q->nodes[i]);
    }
}

static void quorum_free(struct quorum *q)
{
    ks_world_set_after_event(q->env.world, NULL, NULL);
    for (int32_t i = 0; i < q->count; i++) {
        ks_raft_free(q->nodes[i]);
        g_array_free(q->logs[i].values, true);
    }
    ks_raft_quorum_checker_free(q->checker);
    ks_test_env_deinit(&q->env);
}

/* The index of the one leader among the nodes that are up, or -1. */
static int32_t leader_index(const struct quorum *q)
{
    int32_t found = -1;
    int32_t best_epoch = -1;
    for (int32_t i = 0; i < q->count; i++) {
        if (ks_world_node_is_up(q->env.world, (ks_node_id)(i + 1)) &&
            ks_raft_role(q->nodes[i]) == KS_RAFT_LEADER &&
            ks_raft_epoch(q->nodes[i]) > best_epoch) {
            found = i;
            best_epoch = ks_raft_epoch(q->nodes[i]);
        }
    }
    return found;
}

static void run_until(struct quorum *q, ks_time_ns at_ns)
{
    ks_world_run_until(q->env.world, at_ns);
}

static void append_values(struct quorum *q, int32_t leader, int64_t first, int32_t count)
{
    for (int32_t i = 0; i < count; i++) {
        int64_t v = first + i;
        CU_ASSERT_TRUE(ks_raft_append(q->nodes[leader], "Test", &v, (int32_t)sizeof(v)) >= 0);
    }
}

static void crash(struct quorum *q, int32_t index, bool power)
{
    ks_world_node_crash(q->env.world, (ks_node_id)(index + 1), power);
}

static void restart(struct quorum *q, int32_t index)
{
    ks_world_node_restart(q->env.world, (ks_node_id)(index + 1));
    g_array_set_size(q->logs[index].values, 0); /* the owner forgets, the log replays */
    q->logs[index].last_offset = -1;
    ks_raft_start(q->nodes[index]);
}

static void test_elects_one_leader_and_commits(void)
{
    struct quorum q;
    quorum_init(&q, 3, 11);
    /* Nobody leads before the first election timeout (1 s at the least). */
    run_until(&q, 999 * T_MS);
    CU_ASSERT_EQUAL(leader_index(&q), -1);
    /* The first timeout ends before 2 s; its candidate wins at once. */
    run_until(&q, 2100 * T_MS);
    int32_t leader = leader_index(&q);
    CU_ASSERT_TRUE_FATAL(leader >= 0);
    CU_ASSERT_EQUAL(ks_raft_epoch(q.nodes[leader]), 1);
    for (int32_t i = 0; i < 3; i++) {
        if (i != leader) {
            CU_ASSERT_EQUAL(ks_raft_role(q.nodes[i]), KS_RAFT_FOLLOWER);
            CU_ASSERT_EQUAL(ks_raft_leader(q.nodes[i]), (int32_t)(leader + 1));
        }
    }
    append_values(&q, leader, 100, 10);
    /* Not committed on the append: a majority must fetch it first. */
    CU_ASSERT_EQUAL(q.logs[leader].values->len, 0);
    run_until(&q, 3 * T_S);
    for (int32_t i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL_FATAL(q.logs[i].values->len, 10);
        for (int32_t k = 0; k < 10; k++) {
            CU_ASSERT_EQUAL(g_array_index(q.logs[i].values, int64_t, k), 100 + k);
        }
        /* LeaderChange at 0, then the ten records. */
        CU_ASSERT_EQUAL(ks_raft_hw(q.nodes[i]), 11);
    }
    /* A quiet quorum keeps its leader: followers' long polls reset the
     * timers. */
    run_until(&q, 30 * T_S);
    CU_ASSERT_EQUAL(leader_index(&q), leader);
    CU_ASSERT_EQUAL(ks_raft_epoch(q.nodes[leader]), 1);
    /* A follower refuses appends. */
    int64_t v = 1;
    CU_ASSERT_EQUAL(ks_raft_append(q.nodes[(leader + 1) % 3], "Test", &v, sizeof(v)), -1);
    quorum_free(&q);
}

static void test_leader_crash_fails_over(void)
{
    struct quorum q;
    quorum_init(&q, 3, 12);
    run_until(&q, 3 * T_S);
    int32_t first = leader_index(&q);
    CU_ASSERT_TRUE_FATAL(first >= 0);
    append_values(&q, first, 0, 5);
    run_until(&q, 4 * T_S);
    crash(&q, first, true);
    /* A follower runs when its fetch timeout (2 s) passes without an answer
     * from the leader, whose long polls answer at least every 500 ms. */
    run_until(&q, 4 * T_S + 1499 * T_MS);
    CU_ASSERT_EQUAL(leader_index(&q), -1);
    run_until(&q, 10 * T_S);
    int32_t second = leader_index(&q);
    CU_ASSERT_TRUE_FATAL(second >= 0 && second != first);
    CU_ASSERT_TRUE(ks_raft_epoch(q.nodes[second]) >= 2);
    /* Nothing committed is lost: the new leader continues the log. */
    append_values(&q, second, 5, 5);
    run_until(&q, 11 * T_S);
    for (int32_t i = 0; i < 3; i++) {
        if (i == first) {
            continue;
        }
        CU_ASSERT_EQUAL_FATAL(q.logs[i].values->len, 10);
        for (int32_t k = 0; k < 10; k++) {
            CU_ASSERT_EQUAL(g_array_index(q.logs[i].values, int64_t, k), k);
        }
    }
    /* The old leader comes back as a follower and replays the whole log. */
    restart(&q, first);
    run_until(&q, 16 * T_S);
    CU_ASSERT_EQUAL(ks_raft_role(q.nodes[first]), KS_RAFT_FOLLOWER);
    CU_ASSERT_EQUAL(leader_index(&q), second);
    CU_ASSERT_EQUAL_FATAL(q.logs[first].values->len, 10);
    for (int32_t k = 0; k < 10; k++) {
        CU_ASSERT_EQUAL(g_array_index(q.logs[first].values, int64_t, k), k);
    }
    quorum_free(&q);
}

static void test_cut_off_leader_resigns_and_truncates(void)
{
    struct quorum q;
    quorum_init(&q, 3, 13);
    run_until(&q, 3 * T_S);
    int32_t first = leader_index(&q);
    CU_ASSERT_TRUE_FATAL(first >= 0);
    append_values(&q, first, 0, 3);
    run_until(&q, 4 * T_S);
    int64_t committed = ks_raft_hw(q.nodes[first]);
    CU_ASSERT_EQUAL(committed, 4);
    /* Cut the leader off from both followers; it still accepts appends,
     * which never commit. */
    ks_node_id side_a[1] = { (ks_node_id)(first + 1) };
    ks_node_id side_b[2];
    int32_t b = 0;
    for (int32_t i = 0; i < 3; i++) {
        if (i != first) {
            side_b[b++] = (ks_node_id)(i + 1);
        }
    }
    ks_cut_id cut = ks_world_net_partition(q.env.world, side_a, 1, side_b, 2);
    append_values(&q, first, 1000, 4);
    CU_ASSERT_EQUAL(ks_raft_leo(q.nodes[first]), 8);
    /* Check quorum: 1.5 * fetch timeout = 3 s without a majority fetching,
     * counted from the last fetch, at most 500 ms before the cut. */
    run_until(&q, 4 * T_S + 2499 * T_MS);
    CU_ASSERT_EQUAL(ks_raft_role(q.nodes[first]), KS_RAFT_LEADER);
    run_until(&q, 7100 * T_MS);
    CU_ASSERT_EQUAL(ks_raft_role(q.nodes[first]), KS_RAFT_RESIGNED);
    CU_ASSERT_EQUAL(ks_raft_hw(q.nodes[first]), committed);
    /* Meanwhile the other two elected a leader and committed more. */
    int32_t second = leader_index(&q);
    CU_ASSERT_TRUE_FATAL(second >= 0 && second != first);
    append_values(&q, second, 3, 2);
    run_until(&q, 9 * T_S);
    /* Heal: the old leader learns the newer epoch, truncates its four
     * uncommitted records (diverging epoch) and takes the new log. */
    ks_world_net_heal(q.env.world, cut);
    run_until(&q, 20 * T_S);
    int32_t now_leader = leader_index(&q);
    CU_ASSERT_TRUE_FATAL(now_leader >= 0);
    int64_t hw = ks_raft_hw(q.nodes[now_leader]);
    for (int32_t i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(ks_raft_leo(q.nodes[i]), ks_raft_leo(q.nodes[now_leader]));
        CU_ASSERT_EQUAL(ks_raft_hw(q.nodes[i]), hw);
        CU_ASSERT_EQUAL_FATAL(q.logs[i].values->len, 5);
        for (int32_t k = 0; k < 5; k++) {
            CU_ASSERT_EQUAL(g_array_index(q.logs[i].values, int64_t, k), k);
        }
    }
    quorum_free(&q);
}

static void test_five_voters_need_three(void)
{
    struct quorum q;
    quorum_init(&q, 5, 14);
    run_until(&q, 3 * T_S);
    int32_t first = leader_index(&q);
    CU_ASSERT_TRUE_FATAL(first >= 0);
    /* Two followers down: three of five still commit. */
    int32_t down[2];
    int32_t d = 0;
    for (int32_t i = 0; i < 5 && d < 2; i++) {
        if (i != first) {
            down[d++] = i;
            crash(&q, i, false);
        }
    }
    append_values(&q, first, 0, 3);
    run_until(&q, 4 * T_S);
    CU_ASSERT_EQUAL(q.logs[first].values->len, 3);
    /* A third down: nothing commits and the leader resigns by check quorum;
     * no one can win an election with two voters. */
    int32_t third = -1;
    for (int32_t i = 0; i < 5; i++) {
        if (i != first && i != down[0] && i != down[1]) {
            third = i;
            break;
        }
    }
    crash(&q, third, false);
    append_values(&q, first, 3, 1);
    run_until(&q, 20 * T_S);
    CU_ASSERT_EQUAL(q.logs[first].values->len, 3);
    CU_ASSERT_EQUAL(leader_index(&q), -1);
    /* Two come back: a leader again, with the record the old leader could
     * not commit either committed by it (if it wins) or truncated. */
    restart(&q, down[0]);
    restart(&q, down[1]);
    run_until(&q, 40 * T_S);
    int32_t leader = leader_index(&q);
    CU_ASSERT_TRUE_FATAL(leader >= 0);
    CU_ASSERT_TRUE(q.logs[leader].values->len >= 3);
    for (int32_t k = 0; k < 3; k++) {
        CU_ASSERT_EQUAL(g_array_index(q.logs[leader].values, int64_t, k), k);
    }
    quorum_free(&q);
}

/* The same seed gives the same elections: a second run ends in the same
 * epochs and trace hash. */
static void test_deterministic(void)
{
    uint64_t hashes[2];
    int32_t epochs[2];
    for (int32_t run = 0; run < 2; run++) {
        struct quorum q;
        quorum_init(&q, 3, 15);
        run_until(&q, 3 * T_S);
        int32_t first = leader_index(&q);
        CU_ASSERT_TRUE_FATAL(first >= 0);
        crash(&q, first, false);
        run_until(&q, 12 * T_S);
        hashes[run] = ks_world_trace_hash(q.env.world);
        epochs[run] = ks_raft_epoch(q.nodes[(first + 1) % 3]);
        quorum_free(&q);
    }
    CU_ASSERT_EQUAL(hashes[0], hashes[1]);
    CU_ASSERT_EQUAL(epochs[0], epochs[1]);
}

/* Many seeds, random crashes and cuts: the invariants hold throughout
 * (RaftEventSimulationTest's style), and a leader exists once faults stop. */
static void test_random_faults(void)
{
    for (uint64_t seed = 100; seed < 160; seed++) {
        struct quorum q;
        quorum_init(&q, 3, seed);
        uint64_t x = seed * 2654435761u;
        ks_cut_id cut = 0;
        int64_t next_value = 0;
        for (int32_t step = 0; step < 20; step++) {
            run_until(&q, (ks_time_ns)(step + 1) * 1500 * T_MS);
            x = x * 6364136223846793005u + 1442695040888963407u;
            int32_t victim = (int32_t)((x >> 33) % 3);
            int32_t action = (int32_t)((x >> 40) % 5);
            int32_t leader = leader_index(&q);
            if (leader >= 0) {
                append_values(&q, leader, next_value, 2);
                next_value += 2;
            }
            ks_node_id id = (ks_node_id)(victim + 1);
            if (action == 0 && ks_world_node_is_up(q.env.world, id)) {
                crash(&q, victim, (x >> 50) & 1);
            } else if (action == 1 && !ks_world_node_is_up(q.env.world, id)) {
                restart(&q, victim);
            } else if (action == 2 && cut == 0) {
                ks_node_id others[2] = { (ks_node_id)((victim + 1) % 3 + 1),
                                         (ks_node_id)((victim + 2) % 3 + 1) };
                cut = ks_world_net_partition(q.env.world, &id, 1, others, 2);
            } else if (action == 3 && cut != 0) {
                ks_world_net_heal(q.env.world, cut);
                cut = 0;
            }
        }
        if (cut != 0) {
            ks_world_net_heal(q.env.world, cut);
        }
        for (int32_t i = 0; i < 3; i++) {
            if (!ks_world_node_is_up(q.env.world, (ks_node_id)(i + 1))) {
                restart(&q, i);
            }
        }
        run_until(&q, 60 * T_S);
        int32_t leader = leader_index(&q);
        CU_ASSERT_TRUE(leader >= 0);
        if (leader < 0 || ks_raft_hw(q.nodes[0]) != ks_raft_hw(q.nodes[1]) ||
            ks_raft_hw(q.nodes[1]) != ks_raft_hw(q.nodes[2])) {
            for (int32_t i = 0; i < 3; i++) {
                printf("seed %d node %d %s epoch %d leader %d leo %lld hw %lld\n", (int)seed, i + 1,
                       ks_raft_role_name(ks_raft_role(q.nodes[i])), ks_raft_epoch(q.nodes[i]),
                       ks_raft_leader(q.nodes[i]), (long long)ks_raft_leo(q.nodes[i]),
                       (long long)ks_raft_hw(q.nodes[i]));
            }
        }
        if (leader >= 0) {
            for (int32_t i = 0; i < 3; i++) {
                CU_ASSERT_EQUAL(ks_raft_hw(q.nodes[i]), ks_raft_hw(q.nodes[leader]));
            }
        }
        quorum_free(&q);
    }
}

void ks_test_register_raft(void)
{
    static const struct ks_test_case cases[] = {
        { "elects_one_leader_and_commits", test_elects_one_leader_and_commits },
        { "leader_crash_fails_over", test_leader_crash_fails_over },
        { "cut_off_leader_resigns_and_truncates", test_cut_off_leader_resigns_and_truncates },
        { "five_voters_need_three", test_five_voters_need_three },
        { "deterministic", test_deterministic },
        { "random_faults", test_random_faults },
    };
    KS_TEST_ADD_SUITE("core/raft", cases);
}
