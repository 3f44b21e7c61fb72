/* tests/core/test_broker_replica.c: the replica invariants of the broker
 * module (core/broker_replica.c R1..R6, with the fetcher's F1) and the
 * whole-object check that asserts them (suite "core/broker_replica").
 *
 * Goal: the invariants hold through the faults that stress them, and the
 * check really catches each one when it is broken.
 *
 * Method: (1) a 3-broker cluster with a producer goes through an ISR shrink
 * and expand (a follower cut off and healed), a leader's power loss, its
 * restart and re-election; after every event ks_broker_check runs on every
 * broker, and independently of it the test watches each leader's HW through
 * the public replica state and counts any decrease within one leader epoch
 * (R3). (2) On a settled cluster, each invariant is broken by hand through
 * the module's internal header in a forked child, which must then die in
 * ks_broker_check (ks_assert aborts); the same check on the untouched state
 * must pass. (3) A zombie leader's story is checked through the typed facts
 * of its events (fencing, ISR, election, truncation), which sim/narrate.c
 * and the events table read. */
#include "repl_harness.h"

#include "../../core/broker_int.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define R_BROKERS    3
#define R_PARTITIONS 2

static const int32_t ASSIGN[] = { 1, 2, 3, 2, 3, 1 };

/* What the after-event hook saw. */
struct watch {
    struct cluster_fixture *h;
    int64_t checks;
    int64_t hw_decreases; /* R3 seen from outside: must stay 0 */
    int32_t epochs_seen;  /* distinct (partition, leader epoch) pairs led */
    int32_t leader[R_PARTITIONS];
    int32_t epoch[R_PARTITIONS];
    int64_t hw[R_PARTITIONS];
};

static void watch_after_event(ks_world *world, void *context)
{
    (void)world;
    struct watch *w = context;
    for (int32_t b = 1; b <= R_BROKERS; b++) {
        ks_broker_check(ks_cluster_broker(w->h->cluster, b));
        w->checks++;
        for (int32_t p = 0; p < R_PARTITIONS; p++) {
            struct ks_replica_state state = h_state(w->h, b, 0, p);
            if (state.role != KS_ROLE_LEADER) {
                continue;
            }
            if (w->leader[p] == b && w->epoch[p] == state.leader_epoch) {
                w->hw_decreases += state.hw < w->hw[p];
            } else {
                w->epochs_seen++;
            }
            w->leader[p] = b;
            w->epoch[p] = state.leader_epoch;
            w->hw[p] = state.hw;
        }
    }
}

static void test_invariants_hold_through_faults(void)
{
    struct cluster_fixture h;
    cf_init(&h, R_BROKERS);
    h.cluster_config.replica_lag_ns_max = 2 * (int64_t)H_S; /* shrink within seconds */
    cf_topic(&h, "orders", R_PARTITIONS, 3, 2, ASSIGN);
    h_add_producer(&h, 2000, 1000000);
    cf_start(&h, 5);
    struct watch w;
    memset(&w, 0, sizeof w);
    w.h = &h;
    for (int32_t p = 0; p < R_PARTITIONS; p++) {
        w.leader[p] = -1;
    }
    ks_world_set_after_event(h.env.world, watch_after_event, &w);
    cf_run_until(&h, 3 * H_S);
    /* Broker 3 cut off from everyone: it drops out of both ISRs. */
    ks_node_id lone = 3;
    ks_node_id others[8];
    size_t other_count = 0;
    for (ks_node_id n = 1; n < ks_cluster_node_count(&h.spec); n++) {
        if (n != lone) {
            others[other_count++] = n;
        }
    }
    ks_cut_id cut = ks_world_net_partition(h.env.world, &lone, 1, others, other_count);
    cf_run_until(&h, 8 * H_S);
    CU_ASSERT(cf_count(&h, KS_EV_ISR_SHRINK) >= 1);
    ks_world_net_heal(h.env.world, cut);
    /* Its fetch lost in the cut is abandoned after the 30 s request timeout;
     * then it catches up and rejoins. */
    cf_run_until(&h, 40 * H_S);
    CU_ASSERT(cf_count(&h, KS_EV_ISR_EXPAND) >= 1);
    /* The leader of partition 0 loses power; another is elected once its
     * session expires; it comes back and rejoins. */
    cf_crash(&h, 1, true);
    cf_run_until(&h, 52 * H_S);
    CU_ASSERT(cf_count(&h, KS_EV_LEADER_ELECTED) >= 1);
    cf_restart(&h, 1);
    cf_run_until(&h, 80 * H_S);
    ks_world_set_after_event(h.env.world, NULL, NULL);
    CU_ASSERT(h_outcome_count(&h, KS_OUTCOME_ACKED) > 50000); /* the HWs really moved */
    CU_ASSERT(w.checks > 1000);
    CU_ASSERT(w.epochs_seen >= R_PARTITIONS + 1); /* at least one re-election was watched */
    CU_ASSERT_EQUAL(w.hw_decreases, 0);
    cf_free(&h);
}

/* ---- the check catches each broken invariant ----------------------------------- */

/* Runs fn in a child process and reports whether it died of ks_assert
 * (abort). The child never returns to CUnit. */
static bool dies(void (*fn)(struct cluster_fixture *h), struct cluster_fixture *h)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int null_fd = open("/dev/null", O_WRONLY);
        dup2(null_fd, 2);
        fn(h);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static struct ks_broker *broker_of(struct cluster_fixture *h, int32_t broker_id)
{
    return ks_cluster_broker(h->cluster, broker_id);
}

static struct ks__replica *replica_of(struct cluster_fixture *h, int32_t broker_id)
{
    return broker_of(h, broker_id)->replicas[0][0];
}

static void check_all(struct cluster_fixture *h)
{
    for (int32_t b = 1; b <= R_BROKERS; b++) {
        ks_broker_check(broker_of(h, b));
    }
}

static void untouched(struct cluster_fixture *h)
{
    check_all(h);
}

static void break_r1(struct cluster_fixture *h)
{
    struct ks__replica *leader = replica_of(h, 1);
    leader->hw = ks__leo_of(leader) + 1;
    check_all(h);
}

static void break_r2(struct cluster_fixture *h)
{
    replica_of(h, 2)->hw = ks_log_start_offset(replica_of(h, 2)->log) - 1;
    check_all(h);
}

static void break_r3(struct cluster_fixture *h)
{
    check_all(h); /* records the leader's HW for its epoch */
    replica_of(h, 1)->hw -= 1;
    check_all(h);
}

static void break_r4(struct cluster_fixture *h)
{
    struct ks__replica *leader = replica_of(h, 1);
    int32_t kept = 0;
    for (int32_t i = 0; i < leader->state.isr_count; i++) {
        if (leader->state.isr[i] != 1) {
            leader->state.isr[kept++] = leader->state.isr[i];
        }
    }
    leader->state.isr_count = kept;
    check_all(h);
}

static void break_r5(struct cluster_fixture *h)
{
    replica_of(h, 2)->state.leader = 2; /* a follower whose state names it leader */
    check_all(h);
}

static void break_r6(struct cluster_fixture *h)
{
    replica_of(h, 3)->alter_state = KS__ALTER_IN_FLIGHT; /* on a follower */
    check_all(h);
}

static void break_f1(struct cluster_fixture *h)
{
    struct ks__fetcher *fetcher = &broker_of(h, 2)->fetchers[0]; /* towards leader 1 */
    fetcher->state =
        fetcher->state == KS__FETCHER_IN_FLIGHT ? KS__FETCHER_SCHEDULED : KS__FETCHER_IN_FLIGHT;
    check_all(h);
}

static void test_check_catches_violations(void)
{
    struct cluster_fixture h;
    cf_init(&h, R_BROKERS);
    cf_topic(&h, "orders", 1, 3, 2, ASSIGN);
    cf_start(&h, 11);
    cf_run_until(&h, 1 * H_S);
    for (int i = 0; i < 3; i++) {
        h_append(&h, 1, 0, 0, KS_ACKS_ALL, "m");
    }
    cf_run_until(&h, 2 * H_S);
    CU_ASSERT_EQUAL_FATAL(h_state(&h, 1, 0, 0).role, KS_ROLE_LEADER);
    CU_ASSERT_EQUAL_FATAL(h_state(&h, 1, 0, 0).hw, 3);
    CU_ASSERT_FALSE(dies(untouched, &h));
    CU_ASSERT_TRUE(dies(break_r1, &h));
    CU_ASSERT_TRUE(dies(break_r2, &h));
    CU_ASSERT_TRUE(dies(break_r3, &h));
    CU_ASSERT_TRUE(dies(break_r4, &h));
    CU_ASSERT_TRUE(dies(break_r5, &h));
    CU_ASSERT_TRUE(dies(break_r6, &h));
    CU_ASSERT_TRUE(dies(break_f1, &h));
    /* The parent's state was never touched. */
    check_all(&h);
    cf_free(&h);
}

/* The leader's HW waits for a lagging follower of the maximal ISR (KIP-497):
 * one in the committed ISR, or one only in the ISR change in flight; once
 * the change is gone, a follower outside the ISR that is not caught up no
 * longer holds it back. */
static void test_hw_waits_for_maximal_isr(void)
{
    struct cluster_fixture h;
    cf_init(&h, R_BROKERS);
    h.cluster_config.replica_lag_ns_max = 100 * (int64_t)H_MS; /* not caught up at once */
    cf_topic(&h, "orders", 1, 3, 2, ASSIGN);
    cf_start(&h, 12);
    cf_run_until(&h, 1 * H_S);
    h_append(&h, 1, 0, 0, KS_ACKS_ALL, "m");
    cf_run_until(&h, 2 * H_S);
    struct ks_broker *broker = broker_of(&h, 1);
    struct ks__replica *leader = replica_of(&h, 1);
    CU_ASSERT_EQUAL_FATAL(leader->role, KS_ROLE_LEADER);
    CU_ASSERT_EQUAL_FATAL(leader->hw, 1);
    CU_ASSERT_EQUAL_FATAL(leader->follower_count, 2);
    h_append(&h, 1, 0, 0, KS_ACKS_LEADER, "n"); /* LEO 2; no fetch has run since */
    CU_ASSERT_EQUAL_FATAL(ks__leo_of(leader), 2);
    CU_ASSERT_EQUAL_FATAL(leader->hw, 1);
    struct ks__follower_state *two = &leader->followers[0];
    struct ks__follower_state *three = &leader->followers[1];
    CU_ASSERT_EQUAL_FATAL(two->broker_id, 2);
    CU_ASSERT_EQUAL_FATAL(three->broker_id, 3);
    two->quiet = false;
    three->quiet = false;
    two->last_caught_up_ns = 0;
    three->last_caught_up_ns = 0;
    static const int32_t committed[] = { 1, 2 };
    memcpy(leader->state.isr, committed, sizeof committed);
    leader->state.isr_count = 2;
    leader->alter_state = KS__ALTER_IDLE;
    /* Broker 2 lags in the committed ISR. */
    two->leo = 1;
    three->leo = 2;
    ks__replica_maybe_advance_hw(broker, leader);
    CU_ASSERT_EQUAL(leader->hw, 1);
    /* Broker 3 lags, only in the change in flight. */
    two->leo = 2;
    three->leo = 1;
    if (leader->alter == NULL) { /* allocated at the first ISR change */
        leader->alter = calloc(1, sizeof *leader->alter);
    }
    memset(leader->alter, 0, sizeof *leader->alter);
    leader->alter->leader_epoch = leader->state.leader_epoch;
    leader->alter->isr_count = 3;
    leader->alter->isr[0] = 1;
    leader->alter->isr[1] = 2;
    leader->alter->isr[2] = 3;
    leader->alter_state = KS__ALTER_IN_FLIGHT;
    ks__replica_maybe_advance_hw(broker, leader);
    CU_ASSERT_EQUAL(leader->hw, 1);
    /* No change in flight: broker 3, not caught up, is left behind. */
    leader->alter_state = KS__ALTER_IDLE;
    ks__replica_maybe_advance_hw(broker, leader);
    CU_ASSERT_EQUAL(leader->hw, 2);
    cf_free(&h);
}

/* ---- the facts the events carry ------------------------------------------------------ */

#define FACTS_MAX 256

struct facts {
    struct cluster_fixture *h;
    struct ks_cluster_event events[FACTS_MAX];
    int32_t count;
};

static struct facts *facts_of; /* the test's collector (one test at a time) */

static void facts_on_event(void *context, const struct ks_cluster_event *event)
{
    if (facts_of->count < FACTS_MAX) {
        struct ks_cluster_event *copy = &facts_of->events[facts_of->count++];
        *copy = *event;
        copy->members = NULL; /* borrowed pointers end with the callback */
        copy->causes = NULL;
        copy->offsets = NULL;
        copy->group_id = NULL;
        copy->group_leader_id = NULL;
    }
    cf_on_event(context, event);
}

static const struct ks_cluster_event *fact(const struct facts *f, enum ks_cluster_event_kind kind,
                                           int32_t broker)
{
    for (int32_t i = 0; i < f->count; i++) {
        if (f->events[i].kind == kind && f->events[i].broker == broker) {
            return &f->events[i];
        }
    }
    return NULL;
}

static bool list_is(const int32_t *list, int32_t count, const int32_t *expected,
                    int32_t expected_count)
{
    if (count != expected_count) {
        return false;
    }
    for (int32_t i = 0; i < count; i++) {
        if (list[i] != expected[i]) {
            return false;
        }
    }
    return true;
}

/* A leader cut off from everyone takes two writes alone (acks=1 gets its
 * answer, acks=all cannot); broker 2 is elected when its session expires;
 * after the heal the old leader truncates both writes by leader epoch. The
 * events must say exactly that, in fields: who, which offsets, which epochs
 * and ISRs, and why. */
static void test_event_facts_of_a_zombie_leader(void)
{
    static const int32_t isr_all[] = { 1, 2, 3 };
    static const int32_t isr_23[] = { 2, 3 };
    struct cluster_fixture h;
    struct facts f;
    memset(&f, 0, sizeof f);
    facts_of = &f;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 1, 3, 1, ASSIGN);
    cf_start(&h, 5);
    h.observer.on_event = facts_on_event;
    cf_run_until(&h, 500 * H_MS);
    ks_node_id zombie = 1;
    ks_node_id others[] = { 2, 3, 4 };
    ks_cut_id cut = ks_world_net_partition(h.env.world, &zombie, 1, others, 3);
    h_append(&h, 1, 0, 0, KS_ACKS_LEADER, "zombie-write");
    h_append(&h, 1, 0, 0, KS_ACKS_ALL, "zombie-all");
    cf_run_for(&h, 40 * H_S);
    ks_world_net_heal(h.env.world, cut);
    cf_run_for(&h, 10 * H_S); /* its next heartbeat, after the backoff, leaves at about 46 s */

    const struct ks_cluster_event *fenced = fact(&f, KS_EV_BROKER_FENCED, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fenced);
    CU_ASSERT_EQUAL(fenced->reason, KS_REASON_SESSION_EXPIRED);

    const struct ks_cluster_event *shrink = fact(&f, KS_EV_ISR_SHRINK, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(shrink);
    CU_ASSERT_EQUAL(shrink->reason, KS_REASON_BROKER_FENCED);
    CU_ASSERT_TRUE(list_is(shrink->isr_old, shrink->isr_old_count, isr_all, 3));
    CU_ASSERT_TRUE(list_is(shrink->isr_new, shrink->isr_new_count, isr_23, 2));
    CU_ASSERT_EQUAL(shrink->isr_count_min, 1);

    const struct ks_cluster_event *elected = fact(&f, KS_EV_LEADER_ELECTED, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(elected);
    CU_ASSERT_EQUAL(elected->reason, KS_REASON_SESSION_EXPIRED);
    CU_ASSERT_EQUAL(elected->topic_index, 0);
    CU_ASSERT_EQUAL(elected->partition, 0);
    CU_ASSERT_EQUAL(elected->leader_old, 1);
    CU_ASSERT_EQUAL(elected->leader_new, 2);
    CU_ASSERT_EQUAL(elected->leader_epoch_old, 0);
    CU_ASSERT_EQUAL(elected->leader_epoch_new, 1);
    CU_ASSERT_TRUE(list_is(elected->isr_new, elected->isr_new_count, isr_23, 2));
    CU_ASSERT_TRUE(list_is(elected->replicas, elected->replica_count, isr_all, 3));
    CU_ASSERT_EQUAL(fact(&f, KS_EV_UNCLEAN_ELECTION, 2), NULL);

    const struct ks_cluster_event *cut_back = fact(&f, KS_EV_TRUNCATION, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cut_back);
    CU_ASSERT_EQUAL(cut_back->reason, KS_REASON_TRUNCATE_DIVERGING_EPOCH);
    CU_ASSERT_EQUAL(cut_back->topic_index, 0);
    CU_ASSERT_EQUAL(cut_back->partition, 0);
    CU_ASSERT_EQUAL(cut_back->leader_new, 2);
    CU_ASSERT_EQUAL(cut_back->diverging_epoch, 0);
    CU_ASSERT_EQUAL(cut_back->diverging_end_offset, 0); /* epoch 1 started at offset 0 */
    CU_ASSERT_EQUAL(cut_back->offset, 0);
    CU_ASSERT_EQUAL(cut_back->leo_old, 2);
    CU_ASSERT_EQUAL(cut_back->leo_new, 0);
    CU_ASSERT_EQUAL(cut_back->offset_from, 0);
    CU_ASSERT_EQUAL(cut_back->offset_to, 2);
    CU_ASSERT_EQUAL(cut_back->hw_old, 0);
    CU_ASSERT_EQUAL(cut_back->hw_new, 0);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).leo, 0);
    facts_of = NULL;
    cf_free(&h);
}

void ks_test_register_broker_replica(void)
{
    static const struct ks_test_case cases[] = {
        { "invariants_hold_through_faults", test_invariants_hold_through_faults },
        { "check_catches_violations", test_check_catches_violations },
        { "hw_waits_for_maximal_isr", test_hw_waits_for_maximal_isr },
        { "event_facts_of_a_zombie_leader", test_event_facts_of_a_zombie_leader },
    };
    KS_TEST_ADD_SUITE("core/broker_replica", cases);
}
