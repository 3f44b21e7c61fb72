/* tests/core/test_controller.c: replica placement, leader election and broker
 * sessions in the controller.
 *
 * Method: the pure helpers (ks_controller_assign, kafka-reference 9.12, and
 * ks_controller_elect, 9.8) are checked on hand-computed cases; then small
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

static void test_assign_formula(void)
{
    int32_t out[6][KS_REPLICATION_FACTOR_MAX];
    memset(out, 0, sizeof out);
    ks_controller_assign(3, NULL, 6, 3, 0, 0, out);
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
    ks_controller_assign(3, NULL, 6, 2, 2, 1, out);
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
    ks_controller_assign(4, (const char(*)[32])racks, 4, 2, 0, 0, out);
    for (int p = 0; p < 4; p++) {
        /* Alternated list 1(a),3(b),2(a),4(b): neighbours sit in other racks. */
        CU_ASSERT_STRING_NOT_EQUAL(racks[out[p][0] - 1], racks[out[p][1] - 1]);
    }
    CU_ASSERT_EQUAL(out[0][0], 1);
    CU_ASSERT_EQUAL(out[0][1], 3);
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

/* auto.leader.rebalance.enable: leadership returns to the preferred replica
 * once it is back in the ISR. */
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
    cf_restart(&h, 1);
    cf_run_until(&h, 20 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    cf_run_until(&h, 31 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 1);
    CU_ASSERT_EQUAL(ks_cluster_leader_epoch(h.cluster, 0, 0), 2);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_LEADER_ELECTED), 2);
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

void ks_test_register_controller(void)
{
    static const struct ks_test_case cases[] = {
        { "assign_formula", test_assign_formula },
        { "assign_racks", test_assign_racks },
        { "elect_rules", test_elect_rules },
        { "elect_eligible_order", test_elect_eligible_order },
        { "elr_last_replica_standing", test_elr_last_replica_standing },
        { "no_elr_keeps_last_member", test_no_elr_keeps_last_member },
        { "clean_election", test_clean_election },
        { "offline_then_clean", test_offline_then_clean },
        { "unclean_election", test_unclean_election },
        { "controller_partition_converges", test_controller_partition_converges },
        { "preferred_rebalance", test_preferred_rebalance },
        { "placement_deterministic", test_placement_deterministic },
        { "quick_restart_rules", test_quick_restart_rules },
    };
    KS_TEST_ADD_SUITE("core/controller", cases);
}
