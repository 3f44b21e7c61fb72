/* tests/core/test_zk_controller.c: controller = zookeeper (core/zk.c,
 * core/broker_zk.c, core/zk_controller.c).
 *
 * Method: the pure decision (ks_zk_controller_decide) is checked on
 * hand-computed cases against Kafka 2.x's OfflinePartitionLeaderElectionStrategy
 * and doRemoveReplicasFromIsr; then a 3-broker cluster (cluster_fixture.h,
 * which runs ks_cluster_check after every event: Z1..Z4 and one controller
 * per epoch) elects a controller through /controller, loses a leader to
 * session expiry, and fences a paused controller by its epoch. */
#include "repl_harness.h"

#include "../../core/zk_controller.h"

static struct ks_partition_state state_of(int32_t leader, const int32_t *isr, int32_t isr_count)
{
    struct ks_partition_state state;
    memset(&state, 0, sizeof state);
    state.replica_count = 3;
    state.replicas[0] = 1;
    state.replicas[1] = 2;
    state.replicas[2] = 3;
    state.leader = leader;
    state.leader_epoch = 4;
    state.partition_epoch = 7;
    state.isr_count = isr_count;
    memcpy(state.isr, isr, sizeof(int32_t) * (size_t)isr_count);
    return state;
}

static void test_decide(void)
{
    static const int32_t isr_321[] = { 3, 2, 1 };
    struct ks_partition_state out;
    enum ks_elected_from from;
    bool live[3] = { true, true, true };
    /* All live: nothing to write. */
    struct ks_partition_state s = state_of(1, isr_321, 3);
    CU_ASSERT_FALSE(ks_zk_controller_decide(&s, live, false, &out, &from));
    /* Leader 1 dead: the first live replica in assignment order that is in
     * the ISR (2, not 3 which comes first in the ISR); the ISR loses 1; the
     * leader epoch grows. */
    live[0] = false;
    CU_ASSERT_TRUE(ks_zk_controller_decide(&s, live, false, &out, &from));
    CU_ASSERT_EQUAL(out.leader, 2);
    CU_ASSERT_EQUAL(from, KS_ELECTED_FROM_ISR);
    CU_ASSERT_EQUAL(out.leader_epoch, 5);
    CU_ASSERT_EQUAL(out.isr_count, 2);
    CU_ASSERT_EQUAL(out.isr[0], 3);
    CU_ASSERT_EQUAL(out.isr[1], 2);
    CU_ASSERT_EQUAL(out.partition_epoch, 7); /* the zkVersion is ZooKeeper's to bump */
    /* A dead follower leaves the ISR, the leader stays, the epoch still grows
     * (LeaderAndIsr.newLeaderAndIsr in the ZooKeeper era). */
    live[0] = true;
    live[2] = false;
    CU_ASSERT_TRUE(ks_zk_controller_decide(&s, live, false, &out, &from));
    CU_ASSERT_EQUAL(out.leader, 1);
    CU_ASSERT_EQUAL(from, KS_ELECTED_FROM_NONE);
    CU_ASSERT_EQUAL(out.leader_epoch, 5);
    CU_ASSERT_EQUAL(out.isr_count, 2);
    /* ISR {1} and 1 dead: no leader, the last member stays; unclean election
     * takes the first live replica and makes it the ISR. */
    static const int32_t isr_1[] = { 1 };
    s = state_of(1, isr_1, 1);
    live[0] = false;
    live[2] = true;
    CU_ASSERT_TRUE(ks_zk_controller_decide(&s, live, false, &out, &from));
    CU_ASSERT_EQUAL(out.leader, -1);
    CU_ASSERT_EQUAL(out.isr_count, 1);
    CU_ASSERT_EQUAL(out.isr[0], 1);
    CU_ASSERT_TRUE(ks_zk_controller_decide(&s, live, true, &out, &from));
    CU_ASSERT_EQUAL(out.leader, 2);
    CU_ASSERT_EQUAL(from, KS_ELECTED_FROM_ANY_REPLICA);
    CU_ASSERT_EQUAL(out.isr_count, 1);
    CU_ASSERT_EQUAL(out.isr[0], 2);
    /* Already leaderless with the same ISR: nothing to write again. */
    struct ks_partition_state none = state_of(-1, isr_1, 1);
    CU_ASSERT_FALSE(ks_zk_controller_decide(&none, live, false, &out, &from));
}

static void zk_cluster(struct cluster_fixture *h)
{
    static const int32_t assign[] = { 1, 2, 3 };
    cf_init(h, 3);
    h->cluster_config.controller_model = KS_CONTROLLER_MODEL_ZOOKEEPER;
    h->cluster_config.zookeeper_session_timeout_ns = 6 * H_S;
    h->cluster_config.task_phase = KS_TASK_PHASE_ALIGNED;
    cf_topic(h, "orders", 1, 3, 1, assign);
}

/* ControlledShutdownPartitionLeaderElectionStrategy: the first replica in
 * assignment order that is live, in the ISR and not shutting down; the
 * shutting-down brokers leave the ISR; no candidate or a single replica: no
 * change (the leader stays). */
static void test_decide_shutdown(void)
{
    static const int32_t isr_321[] = { 3, 2, 1 };
    struct ks_partition_state out;
    enum ks_elected_from from;
    bool live[3] = { true, true, true };
    bool shutting[3] = { true, false, false };
    struct ks_partition_state s = state_of(1, isr_321, 3);
    CU_ASSERT_TRUE(ks_zk_controller_decide_shutdown(&s, live, shutting, &out, &from));
    CU_ASSERT_EQUAL(out.leader, 2);
    CU_ASSERT_EQUAL(from, KS_ELECTED_FROM_ISR);
    CU_ASSERT_EQUAL(out.leader_epoch, 5);
    CU_ASSERT_EQUAL(out.isr_count, 2);
    CU_ASSERT_EQUAL(out.isr[0], 3);
    CU_ASSERT_EQUAL(out.isr[1], 2);
    /* 2 shutting down too: 3 leads alone. */
    shutting[1] = true;
    CU_ASSERT_TRUE(ks_zk_controller_decide_shutdown(&s, live, shutting, &out, &from));
    CU_ASSERT_EQUAL(out.leader, 3);
    CU_ASSERT_EQUAL(out.isr_count, 1);
    CU_ASSERT_EQUAL(out.isr[0], 3);
    /* 3 dead as well: nobody qualifies, the leader stays. */
    live[2] = false;
    CU_ASSERT_FALSE(ks_zk_controller_decide_shutdown(&s, live, shutting, &out, &from));
    CU_ASSERT_EQUAL(from, KS_ELECTED_FROM_NONE);
    /* Outside the ISR a live replica is no candidate. */
    static const int32_t isr_1[] = { 1 };
    bool all_live[3] = { true, true, true };
    bool only_1[3] = { true, false, false };
    struct ks_partition_state alone = state_of(1, isr_1, 1);
    CU_ASSERT_FALSE(ks_zk_controller_decide_shutdown(&alone, all_live, only_1, &out, &from));
    /* A single replica never moves. */
    struct ks_partition_state single = state_of(1, isr_1, 1);
    single.replica_count = 1;
    CU_ASSERT_FALSE(ks_zk_controller_decide_shutdown(&single, all_live, only_1, &out, &from));
}

/* The leader's session expires: ZooKeeper deletes its znode, the controller
 * (a broker) elects the next ISR member, writes it with a new zkVersion and
 * tells the brokers. */
static void test_leader_session_expires(void)
{
    struct cluster_fixture h;
    zk_cluster(&h);
    cf_start(&h, 5);
    cf_run_until(&h, 1 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_CONTROLLER_ELECTED), 1);
    int32_t controller = ks_cluster_active_controller(h.cluster);
    CU_ASSERT_TRUE(controller >= 1 && controller <= 3);
    CU_ASSERT_EQUAL(ks_cluster_controller_epoch(h.cluster), 1);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 1);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).role, KS_ROLE_LEADER);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).role, KS_ROLE_FOLLOWER);
    /* Crash the leader (pings at 0, 2, 4 s): its session lasts until the
     * first 3 s tick after 4 + 6 = 10 s, i.e. 12 s. */
    cf_run_until(&h, 5 * H_S);
    cf_crash(&h, 1, false);
    cf_run_until(&h, 11 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 1); /* still registered */
    cf_run_until(&h, 13 * H_S);
    const struct cf_event *expired = cf_find(&h, KS_EV_ZK_SESSION_EXPIRED, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(expired);
    CU_ASSERT_EQUAL(expired->broker, 1);
    CU_ASSERT_EQUAL(expired->at_ns, 12 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    CU_ASSERT_EQUAL(ks_cluster_leader_epoch(h.cluster, 0, 0), 1);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).role, KS_ROLE_LEADER);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).leader_epoch, 1);
    /* Broker 1 comes back: it registers (its old znode is gone), follows 2
     * and rejoins the ISR through leader 2's own ZooKeeper write. */
    cf_restart(&h, 1);
    CU_ASSERT_TRUE(cf_drain(&h, 20 * H_S));
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).role, KS_ROLE_FOLLOWER);
    int32_t isr[4];
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 3);
    CU_ASSERT_TRUE(cf_count(&h, KS_EV_ISR_EXPAND) >= 1);
    cf_free(&h);
}

/* A controller paused past its session: another broker takes /controller
 * with the next epoch; the old one's later request is refused by epoch and
 * it resigns. */
static void test_zombie_controller_fenced(void)
{
    struct cluster_fixture h;
    zk_cluster(&h);
    cf_start(&h, 9);
    cf_run_until(&h, 1 * H_S);
    int32_t first = ks_cluster_active_controller(h.cluster);
    CU_ASSERT_FATAL(first >= 1);
    /* A follower that is not the controller dies; the controller freezes
     * before it handles the news. */
    int32_t victim = first == 3 ? 2 : 3;
    cf_run_until(&h, 9 * H_S);
    cf_crash(&h, (ks_node_id)victim, false);
    cf_run_until(&h, 10500 * H_MS);
    ks_world_node_pause(h.env.world, (ks_node_id)first);
    cf_run_until(&h, 30 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_controller_epoch(h.cluster), 2);
    int32_t second = ks_cluster_active_controller(h.cluster);
    CU_ASSERT_TRUE(second >= 1 && second != first && second != victim);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_STALE_CONTROLLER), 0);
    ks_world_node_resume(h.env.world, (ks_node_id)first);
    cf_run_until(&h, 31 * H_S);
    const struct cf_event *stale = cf_find(&h, KS_EV_STALE_CONTROLLER, 30 * H_S);
    CU_ASSERT_PTR_NOT_NULL_FATAL(stale);
    CU_ASSERT_EQUAL(stale->broker, second);
    const struct cf_event *resigned = cf_find(&h, KS_EV_CONTROLLER_RESIGNED, 30 * H_S);
    CU_ASSERT_PTR_NOT_NULL_FATAL(resigned);
    CU_ASSERT_EQUAL(resigned->broker, first);
    CU_ASSERT_EQUAL(ks_cluster_active_controller(h.cluster), second);
    CU_ASSERT_EQUAL(ks_cluster_controller_epoch(h.cluster), 2);
    cf_free(&h);
}

/* A controlled stop of a leader under zookeeper (KafkaServer.controlledShutdown,
 * KafkaController.doControlledShutdown): the controller moves the leadership
 * to the next ISR member and the broker stops only after the answer, so the
 * partition is never without a leader; later the broker's znode goes. */
static void test_controlled_shutdown_moves_leader(void)
{
    struct cluster_fixture h;
    zk_cluster(&h);
    cf_start(&h, 5);
    cf_run_until(&h, 3 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 1);
    CU_ASSERT_TRUE(ks_cluster_stop_broker(h.cluster, 1));
    CU_ASSERT_PTR_NULL(cf_find(&h, KS_EV_BROKER_STOPPED, 0)); /* still serving */
    cf_run_until(&h, 4 * H_S);
    const struct cf_event *elected = cf_find(&h, KS_EV_LEADER_ELECTED, 3 * H_S);
    const struct cf_event *stopped = cf_find(&h, KS_EV_BROKER_STOPPED, 3 * H_S);
    CU_ASSERT_PTR_NOT_NULL_FATAL(elected);
    CU_ASSERT_PTR_NOT_NULL_FATAL(stopped);
    CU_ASSERT_EQUAL(elected->reason, KS_REASON_CONTROLLED_SHUTDOWN);
    CU_ASSERT_EQUAL(stopped->reason, KS_REASON_CONTROLLED_SHUTDOWN);
    CU_ASSERT_TRUE(elected->at_ns < stopped->at_ns);
    CU_ASSERT_TRUE(stopped->at_ns < 3 * H_S + 100 * H_MS); /* round trips, not backoffs */
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_NO_LEADER), 0);
    int32_t isr[4];
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 2);
    cf_restart(&h, 1);
    CU_ASSERT_TRUE(cf_drain(&h, 20 * H_S));
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 3);
    cf_free(&h);
}

/* A broker leading a single-replica partition never gets an answer with
 * nothing left to move (partitionLeadersOnBroker counts it): after
 * controlled.shutdown.max.retries = 3 attempts, 5 s apart, it stops anyway. */
static void test_controlled_shutdown_attempts_fail(void)
{
    static const int32_t assign_1[] = { 1 };
    struct cluster_fixture h;
    zk_cluster(&h);
    cf_topic(&h, "alone", 1, 1, 1, assign_1);
    cf_start(&h, 6);
    cf_run_until(&h, 3 * H_S);
    CU_ASSERT_TRUE(ks_cluster_stop_broker(h.cluster, 1));
    cf_run_until(&h, 12900 * H_MS);
    CU_ASSERT_PTR_NULL(cf_find(&h, KS_EV_BROKER_STOPPED, 0));
    /* The replicated partition moved at the first attempt. */
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    cf_run_until(&h, 14 * H_S);
    const struct cf_event *stopped = cf_find(&h, KS_EV_BROKER_STOPPED, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(stopped);
    CU_ASSERT_EQUAL(stopped->reason, KS_REASON_SHUTDOWN_ATTEMPTS_FAILED);
    CU_ASSERT_TRUE(stopped->at_ns >= 13 * H_S && stopped->at_ns < 13 * H_S + 100 * H_MS);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_LEADER_ELECTED), 1);
    cf_free(&h);
}

void ks_test_register_zk_controller(void)
{
    static const struct ks_test_case cases[] = {
        { "decide", test_decide },
        { "decide_shutdown", test_decide_shutdown },
        { "controlled_shutdown_moves_leader", test_controlled_shutdown_moves_leader },
        { "controlled_shutdown_attempts_fail", test_controlled_shutdown_attempts_fail },
        { "leader_session_expires", test_leader_session_expires },
        { "zombie_controller_fenced", test_zombie_controller_fenced },
    };
    KS_TEST_ADD_SUITE("core/zk_controller", cases);
}
