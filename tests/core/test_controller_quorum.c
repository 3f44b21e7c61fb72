/* tests/core/test_controller_quorum.c: controllers = 3 and 5 (core/raft.c
 * under core/controller.c's quorum).
 *
 * Method: a 3-broker cluster (cluster_fixture.h runs ks_cluster_check after
 * every event, which includes the quorum's cross-voter checks: one leader per
 * epoch, monotonic high watermarks, committed metadata identical on every
 * voter and held by a majority). The active controller crashes: another one
 * becomes active, no broker session expires because of the failover, a
 * later broker crash is still handled (fencing, election from the ISR), and
 * the crashed controller comes back and catches up from the log. With five
 * controllers two may be down; with three down of five nobody is active. */
#include "repl_harness.h"

#include "../../core/controller.h"
#include "../../core/raft.h"

static ks_node_id controller_node(struct cluster_fixture *h, int32_t number)
{
    return ks_cluster_controller_voter_node(&h->spec, number - 1);
}

/* Three brokers, `controllers` voters, orders-0 on 1,2,3 with min ISR 2, started. */
static void quorum_cluster(struct cluster_fixture *h, int32_t controllers, uint64_t seed)
{
    static const int32_t assign[] = { 1, 2, 3 };
    cf_init(h, 3);
    h->cluster_config.controller_count = controllers;
    cf_topic(h, "orders", 1, 3, 2, assign);
    cf_start(h, seed);
}

static void test_failover_keeps_state_and_sessions(void)
{
    struct cluster_fixture h;
    quorum_cluster(&h, 3, 31);
    /* Nobody is active before the first election timeout (1 s at least). */
    cf_run_until(&h, 900 * H_MS);
    CU_ASSERT_EQUAL(ks_cluster_active_kraft_controller(h.cluster), -1);
    cf_run_until(&h, 5 * H_S);
    int32_t first = ks_cluster_active_kraft_controller(h.cluster);
    CU_ASSERT_TRUE_FATAL(first >= 1 && first <= 3);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_CONTROLLER_ELECTED), 1);
    /* The active controller crashes: within the fetch timeout (2 s) plus an
     * election another one is active; the brokers' sessions survive. */
    cf_crash(&h, controller_node(&h, first), true);
    cf_run_until(&h, 9 * H_S);
    int32_t second = ks_cluster_active_kraft_controller(h.cluster);
    CU_ASSERT_TRUE_FATAL(second >= 1 && second != first);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_CONTROLLER_ELECTED), 2);
    cf_run_until(&h, 25 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_BROKER_FENCED), 0);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 1);
    /* The new active controller still does the controller's work: broker 1
     * dies, its session expires, 2 leads from the ISR. */
    cf_crash(&h, 1, false);
    cf_run_until(&h, 36 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_BROKER_FENCED), 1);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    /* The old controller returns, replays the log and follows; the state it
     * shows is the committed one (leader 2). */
    cf_restart(&h, controller_node(&h, first));
    cf_run_until(&h, 42 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_active_kraft_controller(h.cluster), second);
    cf_free(&h);
}

static void test_five_controllers_tolerate_two(void)
{
    struct cluster_fixture h;
    quorum_cluster(&h, 5, 32);
    cf_run_until(&h, 5 * H_S);
    int32_t first = ks_cluster_active_kraft_controller(h.cluster);
    CU_ASSERT_TRUE_FATAL(first >= 1);
    /* The active one and another go down: three of five elect a leader. */
    int32_t other = first % 5 + 1;
    cf_crash(&h, controller_node(&h, first), false);
    cf_crash(&h, controller_node(&h, other), false);
    cf_run_until(&h, 12 * H_S);
    int32_t second = ks_cluster_active_kraft_controller(h.cluster);
    CU_ASSERT_TRUE_FATAL(second >= 1 && second != first && second != other);
    /* A third down: no majority, the leader resigns by check quorum and no
     * one is active; broker changes wait. */
    cf_crash(&h, controller_node(&h, second), false);
    cf_run_until(&h, 20 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_active_kraft_controller(h.cluster), -1);
    cf_crash(&h, 1, false);
    cf_run_until(&h, 35 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_BROKER_FENCED), 0);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 1); /* nobody moved it */
    /* Two come back: a majority again; the new active controller restarts
     * the sessions and fences broker 1 one session timeout later. */
    cf_restart(&h, controller_node(&h, first));
    cf_restart(&h, controller_node(&h, other));
    cf_run_until(&h, 60 * H_S);
    CU_ASSERT_TRUE(ks_cluster_active_kraft_controller(h.cluster) >= 1);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_BROKER_FENCED), 1);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    cf_free(&h);
}

void ks_test_register_controller_quorum(void)
{
    static const struct ks_test_case cases[] = {
        { "failover_keeps_state_and_sessions", test_failover_keeps_state_and_sessions },
        { "five_controllers_tolerate_two", test_five_controllers_tolerate_two },
    };
    KS_TEST_ADD_SUITE("core/controller_quorum", cases);
}
