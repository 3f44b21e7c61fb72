/* tests/core/test_controller.c: replica placement, leader election and broker
 * sessions in the controller.
 *
 * Method: the pure helpers (the placers of core/placement.h: AdminUtils,
 * kafka-reference 9.12, and KRaft's StripedReplicaPlacer; ks_controller_elect,
 * 9.8) are checked on hand-computed cases and, for the striped placer's rack
 * rule, over many seeds; then small
 * clusters (repl_harness.h) crash, restart and cut off brokers and the
 * controller's view (leader, epoch, ISR, events) is compared with what
 * KRaft's PartitionChangeBuilder would decide: first live ISR replica in
 * assignment order, unclean only when enabled, no leader otherwise, and
 * preferred-leader rebalance when enabled. With eligible.leader.replicas.enable
 * (KIP-966) the pure ks_controller_elect_eligible is checked on the order of
 * PartitionChangeBuilder.electAnyLeader, and a 3-broker cluster loses its
 * replicas one by one to follow the ELR, LastKnownElr and the unclean-shutdown
 * removal through to the last-known-leader election. */
#include "repl_harness.h"

#include "../../core/broker_int.h"
#include "../../core/placement.h"

static void test_assign_formula(void)
{
    int32_t out[6][KS_REPLICATION_FACTOR_MAX];
    memset(out, 0, sizeof out);
    ks_placement_admin_utils_fixed(3, NULL, 6, 3, 0, 0, out);
    /* p0: first broker[0]; then (first + 1 + (shift + j - 1) mod 2) mod 3. */
    CU_ASSERT_EQUAL(out[0][0], 1);
    CU_ASSERT_EQUAL(out[0][1], 2);
    CU_ASSERT_EQUAL(out[0][2], 3);
    CU_ASSERT_EQUAL(out[1][0], 2);
    CU_ASSERT_EQUAL(out[1][1], 3);
    CU_ASSERT_EQUAL(out[1][2], 1);
    /* p3: shift grows by one at every multiple of n. */
    CU_ASSERT_EQUAL(out[3][0], 1);
    CU_ASSERT_EQUAL(out[3][1], 3);
    CU_ASSERT_EQUAL(out[3][2], 2);
    ks_placement_admin_utils_fixed(3, NULL, 6, 2, 2, 1, out);
    CU_ASSERT_EQUAL(out[0][0], 3);
    CU_ASSERT_EQUAL(out[0][1], 2); /* (2 + 1 + 1) mod 3 = 1 -> broker 2 */
    for (int p = 0; p < 6; p++) {
        CU_ASSERT_NOT_EQUAL(out[p][0], out[p][1]);
    }
}

static void test_assign_racks(void)
{
    char racks[KS_BROKER_COUNT_MAX][32];
    memset(racks, 0, sizeof racks);
    g_strlcpy(racks[0], "a", 32);
    g_strlcpy(racks[1], "a", 32);
    g_strlcpy(racks[2], "b", 32);
    g_strlcpy(racks[3], "b", 32);
    int32_t out[8][KS_REPLICATION_FACTOR_MAX];
    memset(out, 0, sizeof out);
    ks_placement_admin_utils_fixed(4, (const char(*)[32])racks, 4, 2, 0, 0, out);
    for (int p = 0; p < 4; p++) {
        /* Alternated list 1(a),3(b),2(a),4(b): neighbours sit in other racks. */
        CU_ASSERT_STRING_NOT_EQUAL(racks[out[p][0] - 1], racks[out[p][1] - 1]);
    }
    CU_ASSERT_EQUAL(out[0][0], 1);
    CU_ASSERT_EQUAL(out[0][1], 3);
}

/* A splitmix64 stream standing in for KS_RNG_CLUSTER. */
static uint64_t test_random_below(void *context, uint64_t bound)
{
    uint64_t *state = context;
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (z ^ (z >> 31)) % bound;
}

static void six_brokers_three_racks(char (*racks)[32])
{
    memset(racks, 0, sizeof(char[KS_BROKER_COUNT_MAX][32]));
    const char *names[6] = { "a", "a", "b", "b", "c", "c" };
    for (int i = 0; i < 6; i++) {
        g_strlcpy(racks[i], names[i], 32);
    }
}

/* The layout: 6 brokers in racks a,a,b,b,c,c, 6 partitions of RF 3.
 * StripedReplicaPlacer puts one replica in each rack, leads twice from each
 * rack and once from each broker, whatever the seed. */
static void test_striped_one_replica_per_rack(void)
{
    char racks[KS_BROKER_COUNT_MAX][32];
    six_brokers_three_racks(racks);
    for (uint64_t seed = 1; seed <= 1000; seed++) {
        uint64_t state = seed;
        struct ks_placement placement = { .broker_count = 6,
                                          .racks = (const char(*)[32])racks,
                                          .partition_count = 6,
                                          .replication_factor = 3,
                                          .random_below = test_random_below,
                                          .random_context = &state };
        int32_t out[6][KS_REPLICATION_FACTOR_MAX];
        memset(out, 0, sizeof out);
        ks_placement_striped(&placement, out);
        int led_by_rack[3] = { 0 };
        int led_by_broker[6] = { 0 };
        for (int p = 0; p < 6; p++) {
            bool rack_used[3] = { false };
            for (int j = 0; j < 3; j++) {
                int rack = racks[out[p][j] - 1][0] - 'a';
                CU_ASSERT_FALSE(rack_used[rack]);
                rack_used[rack] = true;
            }
            led_by_rack[racks[out[p][0] - 1][0] - 'a']++;
            led_by_broker[out[p][0] - 1]++;
        }
        for (int r = 0; r < 3; r++) {
            CU_ASSERT_EQUAL(led_by_rack[r], 2);
        }
        for (int b = 0; b < 6; b++) {
            CU_ASSERT_EQUAL(led_by_broker[b], 1);
        }
    }
}

/* Without racks every broker is in one unnamed rack: leaders go round all
 * brokers before the lists are shuffled, and replicas are distinct. */
static void test_striped_without_racks(void)
{
    for (uint64_t seed = 1; seed <= 200; seed++) {
        uint64_t state = seed;
        struct ks_placement placement = { .broker_count = 5,
                                          .partition_count = 10,
                                          .replication_factor = 3,
                                          .random_below = test_random_below,
                                          .random_context = &state };
        int32_t out[10][KS_REPLICATION_FACTOR_MAX];
        memset(out, 0, sizeof out);
        ks_placement_striped(&placement, out);
        int led[5] = { 0 };
        for (int p = 0; p < 10; p++) {
            led[out[p][0] - 1]++;
        }
        for (int b = 0; b < 5; b++) {
            CU_ASSERT_EQUAL(led[b], 2);
        }
    }
}

/* A fenced broker never leads a new partition (but may hold a replica). */
static void test_striped_fenced_never_leads(void)
{
    bool fenced[KS_BROKER_COUNT_MAX] = { false, true, false };
    bool follower_seen = false;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        uint64_t state = seed;
        struct ks_placement placement = { .broker_count = 3,
                                          .fenced = fenced,
                                          .partition_count = 4,
                                          .replication_factor = 3,
                                          .random_below = test_random_below,
                                          .random_context = &state };
        int32_t out[4][KS_REPLICATION_FACTOR_MAX];
        memset(out, 0, sizeof out);
        ks_placement_striped(&placement, out);
        for (int p = 0; p < 4; p++) {
            CU_ASSERT_NOT_EQUAL(out[p][0], 2);
            follower_seen = follower_seen || out[p][1] == 2 || out[p][2] == 2;
        }
    }
    CU_ASSERT_TRUE(follower_seen);
}

/* AdminUtils' own Javadoc example: brokers 0..5 in racks 1,3,3,2,2,1 (ksim
 * ids 1..6), fixed start 0: alternated list 0,3,1,5,4,2, partitions
 * 0 -> 0,3,1 ... 5 -> 2,0,3, and partition 6 shifts its followers: 0,4,2. */
static void test_admin_utils_rack_aware(void)
{
    char racks[KS_BROKER_COUNT_MAX][32];
    memset(racks, 0, sizeof racks);
    const char *names[6] = { "rack1", "rack3", "rack3", "rack2", "rack2", "rack1" };
    for (int i = 0; i < 6; i++) {
        g_strlcpy(racks[i], names[i], 32);
    }
    static const int32_t expected[7][3] = { { 0, 3, 1 }, { 3, 1, 5 }, { 1, 5, 4 }, { 5, 4, 2 },
                                            { 4, 2, 0 }, { 2, 0, 3 }, { 0, 4, 2 } };
    int32_t out[7][KS_REPLICATION_FACTOR_MAX];
    memset(out, 0, sizeof out);
    ks_placement_admin_utils_fixed(6, (const char(*)[32])racks, 7, 3, 0, 0, out);
    for (int p = 0; p < 7; p++) {
        for (int j = 0; j < 3; j++) {
            CU_ASSERT_EQUAL(out[p][j], expected[p][j] + 1);
        }
    }
}

/* Through a running cluster (controller = kraft): the topic the controller
 * creates on the layout never has two replicas in one rack. */
static void test_cluster_rack_placement(void)
{
    for (uint64_t seed = 1; seed <= 20; seed++) {
        struct cluster_fixture h;
        cf_init(&h, 6);
        six_brokers_three_racks(h.cluster_config.racks);
        cf_topic(&h, "orders", 6, 3, 2, NULL);
        cf_start(&h, seed);
        for (int32_t p = 0; p < 6; p++) {
            int32_t replicas[4];
            CU_ASSERT_EQUAL(ks_cluster_replicas(h.cluster, 0, p, replicas, 4), 3);
            bool rack_used[3] = { false };
            for (int j = 0; j < 3; j++) {
                int rack = h.cluster_config.racks[replicas[j] - 1][0] - 'a';
                CU_ASSERT_FALSE(rack_used[rack]);
                rack_used[rack] = true;
            }
        }
        cf_free(&h);
    }
}

static void test_elect_rules(void)
{
    struct ks_partition_state state;
    memset(&state, 0, sizeof state);
    state.replica_count = 3;
    state.replicas[0] = 1;
    state.replicas[1] = 2;
    state.replicas[2] = 3;
    state.isr_count = 2;
    state.isr[0] = 3;
    state.isr[1] = 2;
    bool alive[3] = { true, true, true };
    bool unclean = true;
    /* Assignment order, not ISR order: 2 before 3; 1 is not in the ISR. */
    CU_ASSERT_EQUAL(ks_controller_elect(&state, alive, false, &unclean), 2);
    CU_ASSERT_FALSE(unclean);
    alive[1] = false;
    CU_ASSERT_EQUAL(ks_controller_elect(&state, alive, false, &unclean), 3);
    alive[2] = false;
    CU_ASSERT_EQUAL(ks_controller_elect(&state, alive, false, &unclean), -1);
    CU_ASSERT_EQUAL(ks_controller_elect(&state, alive, true, &unclean), 1);
    CU_ASSERT_TRUE(unclean);
    alive[0] = false;
    CU_ASSERT_EQUAL(ks_controller_elect(&state, alive, true, &unclean), -1);
}

/* KIP-966's order: ISR, then the ELR only while the ISR is empty, then the
 * last known leader only while both are empty and it is unfenced, then
 * unclean election. */
static void test_elect_eligible_order(void)
{
    struct ks_partition_state state;
    memset(&state, 0, sizeof state);
    state.replica_count = 3;
    state.replicas[0] = 3;
    state.replicas[1] = 2;
    state.replicas[2] = 1;
    state.isr_count = 1;
    state.isr[0] = 1;
    struct ks_partition_elr elr;
    memset(&elr, 0, sizeof elr);
    elr.elr_count = 1;
    elr.elr[0] = 2;
    bool alive[3] = { true, true, true };
    enum ks_elected_from from = KS_ELECTED_FROM_NONE;
    /* A live ISR member wins over an ELR member earlier in the assignment. */
    CU_ASSERT_EQUAL(ks_controller_elect_eligible(&state, &elr, alive, false, &from), 1);
    CU_ASSERT_EQUAL(from, KS_ELECTED_FROM_ISR);
    /* ISR not empty but dead: the ELR is not a candidate. */
    alive[0] = false;
    CU_ASSERT_EQUAL(ks_controller_elect_eligible(&state, &elr, alive, false, &from), -1);
    CU_ASSERT_EQUAL(from, KS_ELECTED_FROM_NONE);
    /* Empty ISR: the ELR member. */
    state.isr_count = 0;
    CU_ASSERT_EQUAL(ks_controller_elect_eligible(&state, &elr, alive, false, &from), 2);
    CU_ASSERT_EQUAL(from, KS_ELECTED_FROM_ELR);
    /* A fenced ELR member: no leader, even with a live last known leader. */
    alive[1] = false;
    elr.last_known_elr_count = 1;
    elr.last_known_elr[0] = 3;
    CU_ASSERT_EQUAL(ks_controller_elect_eligible(&state, &elr, alive, false, &from), -1);
    /* ... but unclean election takes any live replica. */
    CU_ASSERT_EQUAL(ks_controller_elect_eligible(&state, &elr, alive, true, &from), 3);
    CU_ASSERT_EQUAL(from, KS_ELECTED_FROM_ANY_REPLICA);
    /* Empty ELR too: the last known leader, whatever unclean says. */
    elr.elr_count = 0;
    CU_ASSERT_EQUAL(ks_controller_elect_eligible(&state, &elr, alive, false, &from), 3);
    CU_ASSERT_EQUAL(from, KS_ELECTED_FROM_LAST_KNOWN_LEADER);
    /* Not while it is fenced. */
    alive[2] = false;
    CU_ASSERT_EQUAL(ks_controller_elect_eligible(&state, &elr, alive, false, &from), -1);
    /* Without ELR lists it is ks_controller_elect. */
    bool unclean = true;
    alive[0] = alive[1] = alive[2] = true;
    state.isr_count = 1;
    CU_ASSERT_EQUAL(ks_controller_elect(&state, alive, false, &unclean), 1);
    CU_ASSERT_FALSE(unclean);
}

static int32_t elr_of(struct cluster_fixture *h, int32_t *out)
{
    return ks_cluster_elr(h->cluster, 0, 0, out, KS_REPLICATION_FACTOR_MAX);
}

/* RF 3, min ISR 2, replicas 3,2,1. Brokers die one by one (process crashes,
 * so their sessions expire and they are fenced), then come back. */
static void test_elr_last_replica_standing(void)
{
    static const int32_t assign[] = { 3, 2, 1 };
    struct cluster_fixture h;
    cf_init(&h, 3);
    h.cluster_config.eligible_leader_replicas_enable = true;
    cf_topic(&h, "orders", 1, 3, 2, assign);
    cf_start(&h, 24);
    int32_t ids[KS_REPLICATION_FACTOR_MAX];
    int32_t isr[KS_REPLICATION_FACTOR_MAX];
    cf_run_until(&h, 1 * H_S);
    /* 1 fenced: ISR 3,2 still meets min ISR, so no ELR. */
    cf_crash(&h, 1, false);
    cf_run_until(&h, 12 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 2);
    CU_ASSERT_EQUAL(elr_of(&h, ids), 0);
    /* 2 fenced: ISR 3 is below min ISR, 2 becomes eligible. */
    cf_crash(&h, 2, false);
    cf_run_until(&h, 23 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 1);
    CU_ASSERT_EQUAL_FATAL(elr_of(&h, ids), 1);
    CU_ASSERT_EQUAL(ids[0], 2);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 3);
    /* 3 fenced: the ISR empties (with ELR it may), 3 joins the ELR and is
     * remembered as the last known leader; nobody can lead. */
    cf_crash(&h, 3, false);
    cf_run_until(&h, 34 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 0);
    CU_ASSERT_EQUAL_FATAL(elr_of(&h, ids), 2);
    CU_ASSERT_EQUAL(ids[0], 2);
    CU_ASSERT_EQUAL(ids[1], 3);
    CU_ASSERT_EQUAL(ks_cluster_last_known_elr(h.cluster, 0, 0, ids, 4), 1);
    CU_ASSERT_EQUAL(ids[0], 3);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), -1);
    /* 3 restarts: a new incarnation is an unclean shutdown, so it leaves the
     * ELR; 2 is still eligible (fenced), so 3 does not lead although it is
     * the last known leader. */
    cf_restart(&h, 3);
    cf_run_until(&h, 40 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_ELR_CHANGE), 1);
    CU_ASSERT_EQUAL_FATAL(elr_of(&h, ids), 1);
    CU_ASSERT_EQUAL(ids[0], 2);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_BROKER_UNFENCED), 1); /* 3, back and caught up */
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), -1);
    /* 2 restarts too: the ELR empties, and the last known leader 3 is
     * elected, an unclean election (ISR = 3). */
    cf_restart(&h, 2);
    cf_run_until(&h, 46 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_ELR_CHANGE), 2);
    CU_ASSERT_EQUAL(elr_of(&h, ids), 0);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 3);
    CU_ASSERT_EQUAL(h.unclean_elections, 1);
    CU_ASSERT_EQUAL(ks_cluster_last_known_elr(h.cluster, 0, 0, ids, 4), 0);
    CU_ASSERT(ks_cluster_isr(h.cluster, 0, 0, isr, 4) >= 1);
    cf_free(&h);
}

/* The same deaths with ELR off: the last ISR member stays in the ISR, no
 * ELR is kept, and it is elected cleanly when it is back. */
static void test_no_elr_keeps_last_member(void)
{
    static const int32_t assign[] = { 3, 2, 1 };
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 1, 3, 2, assign);
    cf_start(&h, 24);
    int32_t ids[KS_REPLICATION_FACTOR_MAX];
    cf_run_until(&h, 1 * H_S);
    cf_crash(&h, 1, false);
    cf_run_until(&h, 12 * H_S);
    cf_crash(&h, 2, false);
    cf_run_until(&h, 23 * H_S);
    cf_crash(&h, 3, false);
    cf_run_until(&h, 34 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, ids, 4), 1);
    CU_ASSERT_EQUAL(ids[0], 3);
    CU_ASSERT_EQUAL(elr_of(&h, ids), 0);
    CU_ASSERT_EQUAL(ks_cluster_last_known_elr(h.cluster, 0, 0, ids, 4), 0);
    cf_restart(&h, 3);
    cf_run_until(&h, 40 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 3);
    CU_ASSERT_EQUAL(h.unclean_elections, 0);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_ELR_CHANGE), 0);
    cf_free(&h);
}

/* Leader crash: fenced after broker.session.timeout.ms, the first live ISR
 * replica in assignment order takes over with epoch + 1. */
static void test_clean_election(void)
{
    static const int32_t assign[] = { 3, 1, 2 };
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 1, 3, 1, assign);
    cf_start(&h, 21);
    cf_run_until(&h, 1 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 3);
    CU_ASSERT_EQUAL(ks_cluster_leader_epoch(h.cluster, 0, 0), 0);
    cf_crash(&h, 3, false);
    cf_run_until(&h, 9 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 3); /* session still valid */
    cf_run_until(&h, 11 * H_S);
    const struct cf_event *fenced = cf_find(&h, KS_EV_BROKER_FENCED, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fenced);
    /* Last heartbeat at 0 s: 0 + 9 s, seen by the check just after. */
    CU_ASSERT_TRUE(fenced->at_ns > 9 * H_S && fenced->at_ns <= 9 * H_S + 2 * H_MS);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 1);
    CU_ASSERT_EQUAL(ks_cluster_leader_epoch(h.cluster, 0, 0), 1);
    int32_t isr[4];
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 2);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_LEADER_ELECTED), 1);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_UNCLEAN_ELECTION), 0);
    cf_run_until(&h, 12 * H_S);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).role, KS_ROLE_LEADER);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).leader_epoch, 1);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).role, KS_ROLE_FOLLOWER);
    cf_free(&h);
}

/* ISR = {1}; 1 dies: no leader (unclean disabled). 2 returning does not
 * help (not in ISR); 1 returning restores the partition. With unclean
 * election enabled, 2 is elected at once and the ISR becomes {2}. */
static void offline_partition(bool unclean_enabled)
{
    static const int32_t assign[] = { 1, 2 };
    struct cluster_fixture h;
    cf_init(&h, 2);
    h.cluster_config.unclean_leader_election_enable = unclean_enabled;
    cf_topic(&h, "orders", 1, 2, 1, assign);
    cf_start(&h, 22);
    cf_run_until(&h, 1 * H_S);
    cf_crash(&h, 2, false);
    cf_run_until(&h, 11 * H_S);
    int32_t isr[4];
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 1);
    cf_crash(&h, 1, false);
    cf_run_until(&h, 22 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), -1);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_NO_LEADER), 1);
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 1); /* last member kept */
    CU_ASSERT_EQUAL(isr[0], 1);
    cf_restart(&h, 2);
    cf_run_until(&h, 26 * H_S);
    if (unclean_enabled) {
        CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
        CU_ASSERT_EQUAL(cf_count(&h, KS_EV_UNCLEAN_ELECTION), 1);
        CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 1);
        CU_ASSERT_EQUAL(isr[0], 2);
    } else {
        CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), -1);
        CU_ASSERT_EQUAL(cf_count(&h, KS_EV_UNCLEAN_ELECTION), 0);
        cf_restart(&h, 1);
        cf_run_until(&h, 30 * H_S);
        CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 1);
        CU_ASSERT_EQUAL(cf_count(&h, KS_EV_LEADER_ELECTED), 1);
    }
    cf_free(&h);
}

static void test_offline_then_clean(void)
{
    offline_partition(false);
}

static void test_unclean_election(void)
{
    offline_partition(true);
}

/* A broker cut off from the controller only is fenced, loses leadership,
 * and converges again (unfenced, ISR back) once its heartbeats get through. */
static void test_controller_partition_converges(void)
{
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 3, 3, 1, NULL);
    cf_start(&h, 23);
    cf_run_until(&h, 1 * H_S);
    ks_node_id broker = 2;
    ks_node_id controller = ks_cluster_controller_node(&h.spec);
    ks_cut_id cut = ks_world_net_partition(h.env.world, &broker, 1, &controller, 1);
    cf_run_until(&h, 15 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_BROKER_FENCED), 1);
    for (int32_t p = 0; p < 3; p++) {
        CU_ASSERT_NOT_EQUAL(ks_cluster_leader(h.cluster, 0, p), 2);
    }
    ks_world_net_heal(h.env.world, cut);
    cf_run_until(&h, 25 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_BROKER_UNFENCED), 1);
    for (int32_t p = 0; p < 3; p++) {
        int32_t isr[4];
        CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, p, isr, 4), 3);
        /* Broker 2's own view agrees with the controller's. */
        struct ks_replica_state state = h_state(&h, 2, 0, p);
        CU_ASSERT_EQUAL(state.leader_epoch, ks_cluster_leader_epoch(h.cluster, 0, p));
        CU_ASSERT_EQUAL(state.role, KS_ROLE_FOLLOWER);
    }
    cf_free(&h);
}

/* controllers = 1: a crash of the controller is an outage. The leader's
 * broker dies at 1 s and the controller at 2 s: nothing is fenced or elected
 * while it is down, although the broker's session ran out at 10 s. Back at
 * 20 s, it restarts every session clock (ClusterControlManager.activate), so
 * the dead broker is fenced and replaced 9 s later, not at once. Power loss
 * keeps its state (the metadata log is flushed before it acts). */
static void controller_outage(bool power)
{
    static const int32_t assign[] = { 3, 1, 2 };
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 1, 3, 1, assign);
    cf_start(&h, 24);
    cf_run_until(&h, 1 * H_S);
    ks_node_id controller = ks_cluster_controller_node(&h.spec);
    cf_crash(&h, 3, false);
    cf_run_until(&h, 2 * H_S);
    cf_crash(&h, controller, power);
    cf_run_until(&h, 20 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_BROKER_FENCED), 0);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_LEADER_ELECTED), 0);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 3);
    cf_restart(&h, controller);
    cf_run_until(&h, 28 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_BROKER_FENCED), 0); /* a fresh session: 20 s + 9 s */
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 3);
    cf_run_until(&h, 30 * H_S);
    const struct cf_event *fenced = cf_find(&h, KS_EV_BROKER_FENCED, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fenced);
    CU_ASSERT_TRUE(fenced->at_ns > 29 * H_S && fenced->at_ns <= 29 * H_S + 2 * H_MS);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 1);
    CU_ASSERT_EQUAL(ks_cluster_leader_epoch(h.cluster, 0, 0), 1);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_LEADER_ELECTED), 1);
    cf_free(&h);
}

static void test_controller_crash_is_outage(void)
{
    controller_outage(false);
}

static void test_controller_power_loss_keeps_state(void)
{
    controller_outage(true);
}

/* auto.leader.rebalance.enable: leadership returns to the preferred replica
 * once it is back in the ISR, at the first balance check. Kafka's controller
 * schedules that check one leader.imbalance.check.interval after the event
 * that made the partition imbalanced (QuorumController
 * maybeScheduleNextBalancePartitionLeaders), not on multiples of the
 * interval since start: broker 1 is fenced at 9.001 s, so with a 30 s
 * interval the check runs at 39.001 s, not at 30 s. */
static void test_preferred_rebalance(void)
{
    static const int32_t assign[] = { 1, 2, 3 };
    struct cluster_fixture h;
    cf_init(&h, 3);
    h.cluster_config.auto_leader_rebalance_enable = true;
    h.cluster_config.leader_imbalance_check_interval_ns = 30 * (int64_t)H_S;
    cf_topic(&h, "orders", 1, 3, 1, assign);
    cf_start(&h, 24);
    cf_run_until(&h, 1 * H_S);
    cf_crash(&h, 1, false);
    cf_run_until(&h, 12 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    const struct cf_event *moved = cf_find(&h, KS_EV_LEADER_ELECTED, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(moved);
    ks_time_ns moved_ns = moved->at_ns;                /* the events array grows: keep the value */
    CU_ASSERT_EQUAL(moved_ns, 9 * H_S + 1 * H_MS + 1); /* session check: 1 ns past expiry */
    cf_restart(&h, 1);
    cf_run_until(&h, 20 * H_S);
    int32_t isr[4];
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 3); /* 1 is back in the ISR */
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    cf_run_until(&h, 39 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2); /* no check at 30 s */
    cf_run_until(&h, 40 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 1);
    CU_ASSERT_EQUAL(ks_cluster_leader_epoch(h.cluster, 0, 0), 2);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_LEADER_ELECTED), 2);
    const struct cf_event *back = cf_find(&h, KS_EV_LEADER_ELECTED, 20 * H_S);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    CU_ASSERT_EQUAL(back->reason, KS_REASON_PREFERRED_LEADER);
    CU_ASSERT_EQUAL(back->at_ns, moved_ns + 30 * H_S);
    /* Balanced again: no check is scheduled until leadership moves. */
    cf_run_until(&h, 100 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_LEADER_ELECTED), 2);
    cf_free(&h);
}

/* A preferred replica that is not yet back in the ISR when the check runs:
 * the check is itself a controller event, after which the still imbalanced
 * partition gets the next check a whole interval later, so leadership
 * returns at the first check after the replica is back in the ISR. */
static void test_preferred_rebalance_retry(void)
{
    static const int32_t assign[] = { 1, 2, 3 };
    struct cluster_fixture h;
    cf_init(&h, 3);
    h.cluster_config.auto_leader_rebalance_enable = true;
    h.cluster_config.leader_imbalance_check_interval_ns = 10 * (int64_t)H_S;
    cf_topic(&h, "orders", 1, 3, 1, assign);
    cf_start(&h, 26);
    cf_run_until(&h, 1 * H_S);
    cf_crash(&h, 1, false);
    cf_run_until(&h, 22 * H_S); /* moved at 9.001 s; the check at 19.001 s finds 1 down */
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    cf_restart(&h, 1);
    cf_run_until(&h, 28 * H_S); /* 1 is back in the ISR, the next check is due at 29.001 s */
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    cf_run_until(&h, 30 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 1);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_LEADER_ELECTED), 2);
    const struct cf_event *back = cf_find(&h, KS_EV_LEADER_ELECTED, 20 * H_S);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    CU_ASSERT_EQUAL(back->reason, KS_REASON_PREFERRED_LEADER);
    CU_ASSERT_EQUAL(back->at_ns, 29 * H_S + 1 * H_MS + 1); /* moved + 2 intervals */
    cf_free(&h);
}

/* A broker cut off from the controller only: fenced when its session
 * expires, and unfenced by the first heartbeat that gets through after the
 * heal (BrokerHeartbeatManager: it does not want to be fenced and has applied
 * the metadata up to its registration long ago), one network latency after
 * it left. Its heartbeats meanwhile failed after 4.5 s each and were retried
 * after 100 ms, 200 ms, ... (BrokerLifecycleManager's ExponentialBackoff). */
static void test_cut_off_broker_unfenced_by_first_heartbeat(void)
{
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 3, 3, 1, NULL);
    cf_start(&h, 28);
    cf_run_until(&h, 1 * H_S);
    ks_node_id node = 2;
    ks_node_id controller = ks_cluster_controller_node(&h.spec);
    ks_cut_id cut = ks_world_net_partition(h.env.world, &node, 1, &controller, 1);
    cf_run_until(&h, 15 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_BROKER_FENCED), 1);
    struct ks_broker *broker = ks_cluster_broker(h.cluster, 2);
    CU_ASSERT_TRUE(broker->failed_attempts >= 2);
    ks_world_net_heal(h.env.world, cut);
    /* Step until broker 2 sends its next heartbeat. */
    int64_t sent_before = broker->communication_correlation_id;
    while (broker->communication_correlation_id == sent_before && cf_now(&h) < 30 * H_S) {
        cf_run_for(&h, 1 * H_MS / 10);
    }
    ks_time_ns sent_ns = cf_now(&h);
    CU_ASSERT_TRUE(sent_ns < 30 * H_S);
    cf_run_for(&h, 100 * H_MS);
    const struct cf_event *unfenced = cf_find(&h, KS_EV_BROKER_UNFENCED, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(unfenced);
    CU_ASSERT_TRUE(unfenced->at_ns > sent_ns);
    CU_ASSERT_TRUE(unfenced->at_ns <= sent_ns + 1 * H_MS); /* that very heartbeat */
    CU_ASSERT_EQUAL(broker->failed_attempts, 0);
    cf_free(&h);
}

/* A quick restart under KRaft rules: the new incarnation's registration is
 * refused while the old session is valid (until 9.001 s) and retried with
 * BrokerLifecycleManager's backoff, 100 ms doubling up to the session
 * timeout with 2 % jitter: attempts at about 1.1, 1.2, 1.4, 1.8, 2.6, 4.2, 7.4
 * and 13.8 s, the last accepted. Then it heartbeats at once, again 10 ms
 * later once it has the metadata, asks to be unfenced and is, some 20 ms
 * after registering (a heartbeat every 2 s would take until 11.1 s, and the
 * next 2 s for the unfencing). */
static void test_restart_registration_backoff(void)
{
    static const int32_t assign[] = { 1, 2, 3 };
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 1, 3, 1, assign);
    cf_start(&h, 29);
    cf_run_until(&h, 1 * H_S);
    cf_crash(&h, 3, false);
    cf_run_for(&h, 100 * H_MS);
    cf_restart(&h, 3);
    cf_run_until(&h, 13 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_BROKER_UNFENCED), 0);
    struct ks_broker *broker = ks_cluster_broker(h.cluster, 3);
    CU_ASSERT_EQUAL(broker->failed_attempts, 7);
    CU_ASSERT_FALSE(broker->registered);
    cf_run_until(&h, 15 * H_S);
    const struct cf_event *unfenced = cf_find(&h, KS_EV_BROKER_UNFENCED, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(unfenced);
    /* 1.1 s + 12.7 s of backoff (+-2 %) + 7 refused round trips + ~20 ms. */
    CU_ASSERT_TRUE(unfenced->at_ns >= 13500 * H_MS && unfenced->at_ns <= 14200 * H_MS);
    CU_ASSERT_EQUAL(broker->lifecycle, KS__LIFECYCLE_RUNNING);
    cf_run_until(&h, 16 * H_S);
    int32_t isr[4];
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 3);
    cf_free(&h);
}

/* A restart after the old session expired: registered at once, unfenced as
 * soon as it caught up with the metadata (within a few round trips), not at
 * its next heartbeat period. */
static void test_restart_unfenced_once_caught_up(void)
{
    static const int32_t assign[] = { 1, 2, 3 };
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 1, 3, 1, assign);
    cf_start(&h, 30);
    cf_run_until(&h, 1 * H_S);
    cf_crash(&h, 3, false);
    cf_run_until(&h, 12 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_BROKER_FENCED), 1);
    cf_restart(&h, 3);
    cf_run_for(&h, 100 * H_MS);
    const struct cf_event *unfenced = cf_find(&h, KS_EV_BROKER_UNFENCED, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(unfenced);
    /* Registration, a heartbeat not yet caught up, one 10 ms later that is,
     * and the one asking to be unfenced: four round trips and 10 ms. */
    CU_ASSERT_TRUE(unfenced->at_ns <= 12 * H_S + 20 * H_MS);
    cf_free(&h);
}

/* AlterPartition answers, in ReplicationControlManager.alterPartition's
 * order. Broker 1 (the leader of orders-0) has its receiver taken over by the
 * test, which sends requests in its name and reads the answers. */
struct alter_box {
    int32_t count;
    struct ks_alter_partition_response last;
};

static void alter_capture(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                          const void *message, size_t message_bytes, void *context)
{
    (void)world;
    (void)self;
    (void)source;
    struct alter_box *box = context;
    if (kind == KS_MSG_ALTER_PARTITION_RESPONSE && message_bytes == sizeof box->last) {
        memcpy(&box->last, message, sizeof box->last);
        box->count++;
    }
}

/* Sends an AlterPartition from `broker` (leader epoch, partition epoch, the
 * ISR and its members' broker epochs, the sender's broker epoch) and returns
 * the controller's answer. */
static struct ks_alter_partition_response alter(struct cluster_fixture *h, struct alter_box *box,
                                                int32_t broker, int32_t leader_epoch,
                                                int32_t partition_epoch, const int32_t *isr,
                                                const int64_t *isr_epochs, int32_t isr_count,
                                                int64_t broker_epoch)
{
    struct ks_alter_partition_request request;
    memset(&request, 0, sizeof request);
    request.broker_id = broker;
    request.topic_index = 0;
    request.partition = 0;
    request.leader_epoch = leader_epoch;
    request.partition_epoch = partition_epoch;
    request.isr_count = isr_count;
    for (int32_t i = 0; i < isr_count; i++) {
        request.isr[i] = isr[i];
        request.isr_broker_epochs[i] = isr_epochs[i];
    }
    request.broker_epoch = broker_epoch;
    int32_t before = box->count;
    ks_world_send(h->env.world, (ks_node_id)broker, ks_cluster_controller_node(&h->spec),
                  KS_MSG_ALTER_PARTITION_REQUEST, &request, sizeof request);
    cf_run_for(h, 5 * H_MS);
    CU_ASSERT_EQUAL(box->count, before + 1);
    return box->last;
}

static void test_alter_partition_validation(void)
{
    static const int32_t assign[] = { 1, 2, 3 };
    static const int32_t isr_123[] = { 1, 2, 3 };
    static const int32_t isr_12[] = { 1, 2 };
    static const int32_t isr_23[] = { 2, 3 };
    static const int32_t isr_125[] = { 1, 2, 5 };
    static const int32_t isr_113[] = { 1, 1, 3 };
    static const int64_t ones[] = { 1, 1, 1 };
    static const int64_t stale_3[] = { 1, 1, 7 };
    static const int64_t unknown_3[] = { 1, 1, -1 };
    struct cluster_fixture h;
    cf_init(&h, 4);
    cf_topic(&h, "orders", 1, 3, 1, assign);
    cf_start(&h, 27);
    cf_run_until(&h, 100 * H_MS);
    struct alter_box box;
    memset(&box, 0, sizeof box);
    ks_world_set_receiver(h.env.world, 1, alter_capture, &box);
    /* Leader 1, leader epoch 0, partition epoch 0, ISR 1,2,3, broker epochs 1. */
    CU_ASSERT_EQUAL(alter(&h, &box, 1, 0, 0, isr_12, ones, 2, 2).error_code,
                    KS_ERR_STALE_BROKER_EPOCH);
    CU_ASSERT_EQUAL(alter(&h, &box, 1, 1, 0, isr_12, ones, 2, 1).error_code, KS_ERR_NOT_CONTROLLER);
    CU_ASSERT_EQUAL(alter(&h, &box, 1, 0, 3, isr_12, ones, 2, 1).error_code, KS_ERR_NOT_CONTROLLER);
    CU_ASSERT_EQUAL(alter(&h, &box, 1, 0, 0, isr_23, ones, 2, 1).error_code,
                    KS_ERR_INVALID_REQUEST); /* the ISR must hold the leader */
    CU_ASSERT_EQUAL(alter(&h, &box, 1, 0, 0, isr_125, ones, 3, 1).error_code,
                    KS_ERR_INVALID_REQUEST); /* 5 is no replica */
    CU_ASSERT_EQUAL(alter(&h, &box, 1, 0, 0, isr_113, ones, 3, 1).error_code,
                    KS_ERR_INVALID_REQUEST); /* a member twice */
    /* The same ISR: accepted, nothing changes, no new partition epoch. */
    struct ks_alter_partition_response same = alter(&h, &box, 1, 0, 0, isr_123, ones, 3, 1);
    CU_ASSERT_EQUAL(same.error_code, KS_ERR_NONE);
    CU_ASSERT_EQUAL(same.partition_epoch, 0);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_ISR_SHRINK) + cf_count(&h, KS_EV_ISR_EXPAND), 0);
    /* A member of another incarnation than the registered one. */
    CU_ASSERT_EQUAL(alter(&h, &box, 1, 0, 0, isr_123, stale_3, 3, 1).error_code,
                    KS_ERR_INELIGIBLE_REPLICA);
    /* A shrink is accepted: partition epoch 1. */
    struct ks_alter_partition_response shrunk = alter(&h, &box, 1, 0, 0, isr_12, ones, 2, 1);
    CU_ASSERT_EQUAL(shrunk.error_code, KS_ERR_NONE);
    CU_ASSERT_EQUAL(shrunk.partition_epoch, 1);
    CU_ASSERT_EQUAL(shrunk.isr_count, 2);
    CU_ASSERT_EQUAL(alter(&h, &box, 1, 0, 0, isr_123, ones, 3, 1).error_code,
                    KS_ERR_INVALID_UPDATE_VERSION);
    /* Broker 2 is not the leader: INVALID_REQUEST, after the epoch checks. */
    struct alter_box box2;
    memset(&box2, 0, sizeof box2);
    ks_world_set_receiver(h.env.world, 2, alter_capture, &box2);
    CU_ASSERT_EQUAL(alter(&h, &box2, 2, 0, 1, isr_12, ones, 2, 1).error_code,
                    KS_ERR_INVALID_REQUEST);
    /* Broker 3 crashes; once fenced, adding it back is refused even with no
     * epoch given (-1): fenced members are ineligible. */
    cf_crash(&h, 3, false);
    cf_run_until(&h, 10 * H_S);
    CU_ASSERT_PTR_NOT_NULL(cf_find(&h, KS_EV_BROKER_FENCED, 0));
    CU_ASSERT_EQUAL(alter(&h, &box, 1, 0, 1, isr_123, unknown_3, 3, 1).error_code,
                    KS_ERR_INELIGIBLE_REPLICA);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 1);
    int32_t isr[4];
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 2);
    cf_free(&h);
}

/* The same seed gives the same placement; every partition gets distinct replicas. */
static void test_placement_deterministic(void)
{
    int32_t first[12][3];
    for (int round = 0; round < 2; round++) {
        struct cluster_fixture h;
        cf_init(&h, 5);
        cf_topic(&h, "orders", 12, 3, 1, NULL);
        cf_start(&h, 99);
        for (int32_t p = 0; p < 12; p++) {
            int32_t replicas[4];
            CU_ASSERT_EQUAL(ks_cluster_replicas(h.cluster, 0, p, replicas, 4), 3);
            CU_ASSERT_NOT_EQUAL(replicas[0], replicas[1]);
            CU_ASSERT_NOT_EQUAL(replicas[1], replicas[2]);
            CU_ASSERT_NOT_EQUAL(replicas[0], replicas[2]);
            for (int j = 0; j < 3; j++) {
                if (round == 0) {
                    first[p][j] = replicas[j];
                } else {
                    CU_ASSERT_EQUAL(first[p][j], replicas[j]);
                }
            }
        }
        cf_free(&h);
    }
}

/* A quick restart (crash, restart 100 ms later). KRaft: the new incarnation
 * is refused while the old session is valid; the session expires (fenced,
 * removed from the ISR) and only then does it register and rejoin. The
 * ZooKeeper-era model of high-watermark mode registers it at once and keeps
 * it in the ISR. */
static void quick_restart(enum ks_truncation_mode mode, int32_t *isr_count_after_restart,
                          ks_time_ns *fenced_at)
{
    static const int32_t assign[] = { 1, 2, 3 };
    struct cluster_fixture h;
    cf_init(&h, 3);
    h.cluster_config.truncation = mode;
    cf_topic(&h, "orders", 1, 3, 1, assign);
    cf_start(&h, 25);
    cf_run_until(&h, 1 * H_S);
    cf_crash(&h, 3, false);
    cf_run_for(&h, 100 * H_MS);
    cf_restart(&h, 3);
    cf_run_until(&h, 5 * H_S);
    int32_t isr[4];
    *isr_count_after_restart = ks_cluster_isr(h.cluster, 0, 0, isr, 4);
    cf_run_until(&h, 20 * H_S);
    const struct cf_event *fenced = cf_find(&h, KS_EV_BROKER_FENCED, 0);
    *fenced_at = fenced != NULL ? fenced->at_ns : 0;
    /* Either way it ends back in the ISR, unfenced. */
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 3);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_BROKER_UNFENCED), 1);
    CU_ASSERT_EQUAL(h_state(&h, 3, 0, 0).role, KS_ROLE_FOLLOWER);
    cf_free(&h);
}

static void test_quick_restart_rules(void)
{
    int32_t isr_count = 0;
    ks_time_ns fenced_at = 0;
    quick_restart(KS_TRUNCATION_LEADER_EPOCH, &isr_count, &fenced_at);
    CU_ASSERT_EQUAL(isr_count, 3); /* not fenced yet at 5 s */
    /* Session expiry: last heartbeat received at 1 ms, + 9 s, seen 1 ns later. */
    CU_ASSERT_EQUAL(fenced_at, 9 * H_S + 1 * H_MS + 1);
    quick_restart(KS_TRUNCATION_HIGH_WATERMARK, &isr_count, &fenced_at);
    CU_ASSERT_EQUAL(isr_count, 3);                      /* stays in the ISR */
    CU_ASSERT_EQUAL(fenced_at, 1100 * H_MS + 1 * H_MS); /* fenced at registration */
}

/* ---- controlled shutdown ------------------------------------------------------------ */

static const int32_t ASSIGN_3X3[] = { 1, 2, 3, 2, 3, 1, 3, 1, 2 };

/* The first event of a kind with a reason at or after from_ns, or NULL. */
static const struct cf_event *find_reason(const struct cluster_fixture *h,
                                          enum ks_cluster_event_kind kind,
                                          enum ks_event_reason reason, ks_time_ns from_ns)
{
    for (guint i = 0; i < h->events->len; i++) {
        const struct cf_event *e = &g_array_index(h->events, struct cf_event, i);
        if (e->kind == kind && e->reason == reason && e->at_ns >= from_ns) {
            return e;
        }
    }
    return NULL;
}

static bool in_isr(struct cluster_fixture *h, int32_t partition, int32_t broker)
{
    int32_t isr[4];
    int32_t count = ks_cluster_isr(h->cluster, 0, partition, isr, 4);
    for (int32_t i = 0; i < count; i++) {
        if (isr[i] == broker) {
            return true;
        }
    }
    return false;
}

/* KRaft's controlled shutdown: the broker asks in its heartbeat; the
 * controller moves its leadership at once and drops it from every ISR, lets
 * it go once the other brokers have reported that metadata (their next
 * heartbeats: within broker.heartbeat.interval.ms), and fences it. It stops
 * cleanly, so its restart recovers nothing, registers at once (no valid
 * session to refuse it) and rejoins the ISRs. */
static void test_controlled_shutdown(void)
{
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 3, 3, 2, ASSIGN_3X3);
    struct ks_producer_config *p = cf_producer(&h, "p1", 0);
    p->rate_per_s = 500;
    cf_start(&h, 31);
    cf_run_until(&h, 3 * H_S);
    ks_time_ns asked = cf_now(&h);
    CU_ASSERT_TRUE(ks_cluster_stop_broker(h.cluster, 2));
    CU_ASSERT_FALSE(ks_cluster_stop_broker(h.cluster, 2)); /* stopping already */
    CU_ASSERT_TRUE(ks_cluster_broker_stopping(h.cluster, 2));
    cf_run_for(&h, 10 * H_MS);
    /* Leadership of orders-1 moved to 3, the next ISR replica; 2 is in no ISR. */
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 1), 3);
    for (int32_t part = 0; part < 3; part++) {
        CU_ASSERT_FALSE(in_isr(&h, part, 2));
    }
    const struct cf_event *moved =
        find_reason(&h, KS_EV_LEADER_ELECTED, KS_REASON_CONTROLLED_SHUTDOWN, asked);
    CU_ASSERT_PTR_NOT_NULL(moved);
    CU_ASSERT(moved != NULL && moved->at_ns - asked < 5 * H_MS);
    CU_ASSERT_TRUE(ks_cluster_broker_stopping(h.cluster, 2)); /* still running, as a follower */
    cf_run_for(&h, 5 * H_S);
    const struct cf_event *stopped = cf_find(&h, KS_EV_BROKER_STOPPED, asked);
    CU_ASSERT_PTR_NOT_NULL_FATAL(stopped);
    CU_ASSERT_EQUAL(stopped->reason, KS_REASON_CONTROLLED_SHUTDOWN);
    CU_ASSERT_EQUAL(stopped->broker, 2);
    /* Let go after the others' next heartbeats: within a heartbeat interval and a bit. */
    CU_ASSERT(stopped->at_ns - asked <= 2 * H_S + 100 * H_MS);
    CU_ASSERT_PTR_NOT_NULL(
        find_reason(&h, KS_EV_BROKER_FENCED, KS_REASON_CONTROLLED_SHUTDOWN, asked));
    CU_ASSERT_PTR_NULL(find_reason(&h, KS_EV_BROKER_FENCED, KS_REASON_SESSION_EXPIRED, 0));
    CU_ASSERT_FALSE(ks_cluster_broker_is_up(h.cluster, 2));
    CU_ASSERT_FALSE(ks_cluster_broker_stopping(h.cluster, 2));
    /* The driver takes the stopped node down, then restarts it. */
    cf_crash(&h, 2, false);
    cf_run_for(&h, 2 * H_S);
    int32_t recoveries = cf_count(&h, KS_EV_RECOVERY);
    ks_time_ns back = cf_now(&h);
    cf_restart(&h, 2);
    cf_run_for(&h, 10 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_RECOVERY), recoveries); /* clean: the marker was there */
    CU_ASSERT_PTR_NULL(cf_find(&h, KS_EV_INFO, back));         /* registration not refused */
    for (int32_t part = 0; part < 3; part++) {
        CU_ASSERT_TRUE(in_isr(&h, part, 2));
    }
    CU_ASSERT_TRUE(cf_drain(&h, 30 * H_S));
    cf_free(&h);
}

/* controlled.shutdown.enable = false: the broker stops at once, cleanly,
 * still leading; the controller learns it only when the session expires. */
static void test_shutdown_not_controlled(void)
{
    struct cluster_fixture h;
    cf_init(&h, 3);
    h.cluster_config.controlled_shutdown_enable = false;
    cf_topic(&h, "orders", 3, 3, 2, ASSIGN_3X3);
    cf_start(&h, 32);
    cf_run_until(&h, 3 * H_S);
    CU_ASSERT_TRUE(ks_cluster_stop_broker(h.cluster, 2));
    const struct cf_event *stopped = cf_find(&h, KS_EV_BROKER_STOPPED, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(stopped);
    CU_ASSERT_EQUAL(stopped->reason, KS_REASON_SHUTDOWN_NOT_CONTROLLED);
    CU_ASSERT_EQUAL(stopped->at_ns, 3 * H_S);
    cf_crash(&h, 2, false);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 1), 2); /* on paper */
    cf_run_until(&h, 15 * H_S);
    CU_ASSERT_PTR_NOT_NULL(find_reason(&h, KS_EV_BROKER_FENCED, KS_REASON_SESSION_EXPIRED, 0));
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 1), 3);
    cf_free(&h);
}

/* A broker cut off from the controller never hears it may go: after the
 * shutdown timeout (KafkaBroker.shutdown's 5 minutes) it stops anyway. */
static void test_shutdown_times_out(void)
{
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 1, 3, 2, ASSIGN_3X3);
    cf_start(&h, 33);
    cf_run_until(&h, 2 * H_S);
    ks_node_id controller = ks_cluster_controller_node(&h.spec);
    ks_node_id cut_a[] = { 1 };
    ks_node_id cut_b[] = { controller };
    ks_world_net_partition(h.env.world, cut_a, 1, cut_b, 1);
    CU_ASSERT_TRUE(ks_cluster_stop_broker(h.cluster, 1));
    cf_run_until(&h, 2 * H_S + 299 * H_S);
    CU_ASSERT_TRUE(ks_cluster_broker_stopping(h.cluster, 1));
    cf_run_until(&h, 2 * H_S + 301 * H_S);
    const struct cf_event *stopped = cf_find(&h, KS_EV_BROKER_STOPPED, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(stopped);
    CU_ASSERT_EQUAL(stopped->reason, KS_REASON_SHUTDOWN_TIMED_OUT);
    CU_ASSERT_EQUAL(stopped->at_ns, 2 * H_S + 300 * H_S);
    cf_free(&h);
}

void ks_test_register_controller(void)
{
    static const struct ks_test_case cases[] = {
        { "assign_formula", test_assign_formula },
        { "assign_racks", test_assign_racks },
        { "striped_one_replica_per_rack", test_striped_one_replica_per_rack },
        { "striped_without_racks", test_striped_without_racks },
        { "striped_fenced_never_leads", test_striped_fenced_never_leads },
        { "admin_utils_rack_aware", test_admin_utils_rack_aware },
        { "cluster_rack_placement", test_cluster_rack_placement },
        { "elect_rules", test_elect_rules },
        { "elect_eligible_order", test_elect_eligible_order },
        { "elr_last_replica_standing", test_elr_last_replica_standing },
        { "no_elr_keeps_last_member", test_no_elr_keeps_last_member },
        { "clean_election", test_clean_election },
        { "offline_then_clean", test_offline_then_clean },
        { "unclean_election", test_unclean_election },
        { "controller_partition_converges", test_controller_partition_converges },
        { "controller_crash_is_outage", test_controller_crash_is_outage },
        { "controller_power_loss_keeps_state", test_controller_power_loss_keeps_state },
        { "preferred_rebalance", test_preferred_rebalance },
        { "preferred_rebalance_retry", test_preferred_rebalance_retry },
        { "placement_deterministic", test_placement_deterministic },
        { "quick_restart_rules", test_quick_restart_rules },
        { "alter_partition_validation", test_alter_partition_validation },
        { "cut_off_broker_unfenced_by_first_heartbeat",
          test_cut_off_broker_unfenced_by_first_heartbeat },
        { "restart_registration_backoff", test_restart_registration_backoff },
        { "restart_unfenced_once_caught_up", test_restart_unfenced_once_caught_up },
        { "controlled_shutdown", test_controlled_shutdown },
        { "shutdown_not_controlled", test_shutdown_not_controlled },
        { "shutdown_times_out", test_shutdown_times_out },
    };
    KS_TEST_ADD_SUITE("core/controller", cases);
}
