/* tests/core/test_replication.c: follower fetching, the leader's high
 * watermark, ISR shrink and expand, acks and min.insync.replicas, and the
 * two truncation modes on the exact scenarios of KIP-101 (1 and 2) and
 * KIP-279.
 *
 * Method: each test builds a small cluster (repl_harness.h: brokers and the
 * controller from core/cluster.c, Kafka's defaults, an explicit assignment)
 * on a fresh world, appends batches directly at a leader as a producer
 * would, drives crashes, restarts and network cuts through sim/world.h and
 * the cluster's fault hooks, and checks replica states, acknowledgements,
 * reported events and, for the KIP scenarios, whether the replicas' logs
 * agree batch by batch (by CRC) after the story has played out. The
 * high-watermark mode must lose or diverge exactly where KIP-101/KIP-279
 * say; the leader-epoch mode must not. */
#include "repl_harness.h"

#include "../../core/broker_int.h"

static const int32_t ASSIGN_123[] = { 1, 2, 3 };
static const int32_t ASSIGN_12[] = { 1, 2 };

/* An acks=all append completes once both followers fetched it and the HW
 * passed it; followers learn the HW on their next fetch. */
static void test_hw_advance(void)
{
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 1, 3, 2, ASSIGN_123);
    cf_start(&h, 1);
    cf_run_until(&h, 100 * H_MS);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 1);
    struct cf_append *a = h_append(&h, 1, 0, 0, KS_ACKS_ALL, "m1");
    CU_ASSERT_FALSE(a->done);
    /* The leader's HW cannot move before a follower's next fetch. */
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).hw, 0);
    cf_run_for(&h, 50 * H_MS);
    CU_ASSERT_TRUE(a->done);
    CU_ASSERT_EQUAL(a->error, KS_ERR_NONE);
    CU_ASSERT_EQUAL(a->base_offset, 0);
    /* Two follower round trips: fetch m1, then the fetch that reports LEO 1. */
    CU_ASSERT_TRUE(a->done_ns >= 100 * H_MS + 4 * H_MS);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).hw, 1);
    for (int32_t b = 1; b <= 3; b++) {
        CU_ASSERT_EQUAL(h_state(&h, b, 0, 0).leo, 1);
    }
    /* Followers learn HW 1 only when their parked fetch returns (500 ms). */
    cf_run_for(&h, 600 * H_MS);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).hw, 1);
    CU_ASSERT_EQUAL(h_state(&h, 3, 0, 0).hw, 1);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).role, KS_ROLE_FOLLOWER);
    /* acks=1 answers after the local append, before replication. */
    struct cf_append *b = h_append(&h, 1, 0, 0, KS_ACKS_LEADER, "m2");
    cf_run_for(&h, 1 * H_MS / 10);
    CU_ASSERT_TRUE(b->done);
    CU_ASSERT_EQUAL(b->base_offset, 1);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).hw, 1);
    /* A non-leader refuses. */
    struct cf_append *c = h_append(&h, 2, 0, 0, KS_ACKS_LEADER, "m3");
    cf_run_for(&h, 10 * H_MS);
    CU_ASSERT_EQUAL(c->error, KS_ERR_NOT_LEADER_OR_FOLLOWER);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).hw, 2);
    cf_free(&h);
}

/* ISR shrink at the first isr-expiration check (every lag/2) after a
 * follower stopped catching up for replica.lag.time.max.ms; expand when it
 * fetches again. Broker 3 is cut off from the leader only, so its
 * heartbeats keep it unfenced. */
static void test_isr_shrink_expand_timing(void)
{
    struct cluster_fixture h;
    cf_init(&h, 3);
    h.cluster_config.replica_lag_ns_max = 10 * (int64_t)H_S;
    cf_topic(&h, "orders", 1, 3, 1, ASSIGN_123);
    cf_start(&h, 2);
    cf_run_until(&h, 1 * H_S);
    ks_node_id a = 1;
    ks_node_id b = 3;
    ks_cut_id cut = ks_world_net_partition(h.env.world, &a, 1, &b, 1);
    /* Traffic keeps the leader's LEO moving. */
    for (int i = 0; i < 20; i++) {
        h_append(&h, 1, 0, 0, KS_ACKS_LEADER, "x");
        cf_run_for(&h, 1 * H_S);
    }
    const struct cf_event *shrink = cf_find(&h, KS_EV_ISR_SHRINK, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(shrink);
    /* Last caught up ~1 s; checks at 5, 10, 15 s: 15 - 1 > 10 first. The
     * AlterPartition takes 1 ms to reach the controller. */
    CU_ASSERT_EQUAL(shrink->at_ns, 15 * H_S + 1 * H_MS);
    int32_t isr[4];
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 2);
    CU_ASSERT_EQUAL(isr[0], 1);
    CU_ASSERT_EQUAL(isr[1], 2);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_ISR_SHRINK), 1);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_BROKER_FENCED), 0);
    ks_world_net_heal(h.env.world, cut);
    ks_time_ns healed = cf_now(&h);
    cf_run_for(&h, 40 * H_S);
    const struct cf_event *expand = cf_find(&h, KS_EV_ISR_EXPAND, healed);
    CU_ASSERT_PTR_NOT_NULL_FATAL(expand);
    /* The lost fetch times out 30 s after it was sent (~1 s), then the
     * follower backs off 1 s, fetches, catches up, and is added back. */
    CU_ASSERT_TRUE(expand->at_ns >= 31 * H_S);
    CU_ASSERT_TRUE(expand->at_ns <= 33 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 3);
    CU_ASSERT_EQUAL(h_state(&h, 3, 0, 0).leo, h_state(&h, 1, 0, 0).leo);
    cf_free(&h);
}

/* min.insync.replicas=2 with both followers fenced: acks=all is refused
 * before appending; acks=1 still works; the HW does not move (3.7 rule). */
static void test_not_enough_replicas(void)
{
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 1, 3, 2, ASSIGN_123);
    cf_start(&h, 3);
    cf_run_until(&h, 500 * H_MS);
    cf_crash(&h, 2, false);
    cf_crash(&h, 3, false);
    cf_run_until(&h, 15 * H_S);
    int32_t isr[4];
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 1);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_BROKER_FENCED), 2);
    int64_t leo = h_state(&h, 1, 0, 0).leo;
    struct cf_append *a = h_append(&h, 1, 0, 0, KS_ACKS_ALL, "refused");
    cf_run_for(&h, 10 * H_MS);
    CU_ASSERT_EQUAL(a->error, KS_ERR_NOT_ENOUGH_REPLICAS);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).leo, leo);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_PRODUCE_REFUSED), 1);
    struct cf_append *b = h_append(&h, 1, 0, 0, KS_ACKS_LEADER, "one");
    cf_run_for(&h, 10 * H_MS);
    CU_ASSERT_EQUAL(b->error, KS_ERR_NONE);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).leo, leo + 1);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).hw, leo);
    /* A follower comes back, catches up, rejoins: the HW moves again. */
    cf_restart(&h, 2);
    cf_run_for(&h, 5 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 2);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).hw, leo + 1);
    struct cf_append *c = h_append(&h, 1, 0, 0, KS_ACKS_ALL, "ok");
    cf_run_for(&h, 100 * H_MS);
    CU_ASSERT_EQUAL(c->error, KS_ERR_NONE);
    cf_free(&h);
}

/* A1 (broker_produce.c): an acks=all append waits until the HW passes it or
 * its timeout ends it, exactly once, and the broker is idle again after
 * each (ks_broker_idle: nothing waiting, nothing being verified). */
static void test_pending_produce_bookkeeping(void)
{
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 1, 3, 2, ASSIGN_123);
    cf_start(&h, 5);
    cf_run_until(&h, 500 * H_MS);
    struct ks_broker *leader = ks_cluster_broker(h.cluster, 1);
    struct cf_append *a = h_append(&h, 1, 0, 0, KS_ACKS_ALL, "replicated");
    CU_ASSERT_FALSE(ks_broker_idle(leader));
    cf_run_for(&h, 100 * H_MS);
    CU_ASSERT_TRUE(a->done);
    CU_ASSERT_EQUAL(a->error, KS_ERR_NONE);
    CU_ASSERT_TRUE(ks_broker_idle(leader));
    /* The followers stop before they fetch it: it waits, then ends once. */
    struct cf_append *b = h_append(&h, 1, 0, 0, KS_ACKS_ALL, "stranded");
    cf_crash(&h, 2, false);
    cf_crash(&h, 3, false);
    cf_run_for(&h, 1 * H_S);
    CU_ASSERT_FALSE(b->done);
    CU_ASSERT_FALSE(ks_broker_idle(leader));
    cf_run_for(&h, 40 * H_S);
    CU_ASSERT_TRUE(b->done);
    CU_ASSERT_NOT_EQUAL(b->error, KS_ERR_NONE);
    CU_ASSERT_TRUE(ks_broker_idle(leader));
    ks_broker_check(leader);
    cf_free(&h);
}

/* cluster.hw_requires_min_isr = false (Kafka before 3.7, no KAFKA-15583):
 * with the ISR under min.insync.replicas, acks=1 writes still advance the
 * HW (and so become visible to consumers); with the 3.7 rule they do not. */
static int64_t hw_under_min_isr(bool rule)
{
    static const int32_t assign[] = { 1, 2, 3 };
    struct cluster_fixture h;
    cf_init(&h, 3);
    h.cluster_config.hw_requires_min_isr = rule;
    cf_topic(&h, "orders", 1, 3, 2, assign);
    cf_start(&h, 8);
    cf_run_until(&h, 500 * H_MS);
    cf_crash(&h, 2, false);
    cf_crash(&h, 3, false);
    cf_run_until(&h, 15 * H_S);
    h_append(&h, 1, 0, 0, KS_ACKS_LEADER, "x");
    h_append(&h, 1, 0, 0, KS_ACKS_LEADER, "y");
    cf_run_for(&h, 10 * H_MS);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).leo, 2);
    int64_t hw = h_state(&h, 1, 0, 0).hw;
    cf_free(&h);
    return hw;
}

static void test_hw_min_isr_rule(void)
{
    CU_ASSERT_EQUAL(hw_under_min_isr(true), 0);
    CU_ASSERT_EQUAL(hw_under_min_isr(false), 2);
}

/* KIP-101 scenario 1: the follower B restarts and, in high-watermark mode,
 * truncates m2 to its stale HW; the leader A then dies and B becomes leader:
 * m2, acknowledged with acks=all, is gone. With leader epochs B keeps m2. */
static void kip101_scenario1(enum ks_truncation_mode mode, bool *m2_kept, bool *acked)
{
    struct cluster_fixture h;
    cf_init(&h, 2);
    h.cluster_config.truncation = mode;
    cf_topic(&h, "t", 1, 2, 1, ASSIGN_12);
    cf_start(&h, 11);
    cf_run_until(&h, 1 * H_S);
    struct cf_append *m1 = h_append(&h, 1, 0, 0, KS_ACKS_ALL, "m1");
    cf_run_until(&h, 6 * H_S); /* HW 1 everywhere, checkpointed at 5 s */
    CU_ASSERT_EQUAL(m1->error, KS_ERR_NONE);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).hw, 1);
    struct cf_append *m2 = h_append(&h, 1, 0, 0, KS_ACKS_ALL, "m2");
    cf_run_for(&h, 20 * H_MS);
    /* A has HW 2 and acked m2; B has m2 but still HW 1 (its fetch is parked). */
    CU_ASSERT_EQUAL(m2->error, KS_ERR_NONE);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).hw, 2);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).leo, 2);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).hw, 1);
    *acked = m2->error == KS_ERR_NONE;
    /* B restarts; A dies right away. */
    cf_crash(&h, 2, false);
    cf_restart(&h, 2);
    cf_crash(&h, 1, false);
    cf_run_for(&h, 15 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).role, KS_ROLE_LEADER);
    *m2_kept = h_state(&h, 2, 0, 0).leo == 2;
    /* A comes back as a follower; the replicas must agree afterwards. */
    cf_restart(&h, 1);
    cf_run_for(&h, 5 * H_S);
    CU_ASSERT_TRUE(h_logs_agree(&h, 1, 2, 0, 0));
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).leo, h_state(&h, 2, 0, 0).leo);
    cf_free(&h);
}

static void test_kip101_scenario1(void)
{
    bool kept = true;
    bool acked = false;
    kip101_scenario1(KS_TRUNCATION_HIGH_WATERMARK, &kept, &acked);
    CU_ASSERT_TRUE(acked);
    CU_ASSERT_FALSE(kept); /* pre-0.11: acknowledged m2 lost */
    kept = false;
    kip101_scenario1(KS_TRUNCATION_LEADER_EPOCH, &kept, &acked);
    CU_ASSERT_TRUE(acked);
    CU_ASSERT_TRUE(kept); /* KIP-101: kept */
}

/* KIP-101 scenario 2: both replicas crash; B loses unflushed m2 (power
 * failure), comes back first, becomes leader and takes m3 at offset 1; A
 * comes back with m2 at offset 1 and HW 2. High-watermark truncation keeps
 * m2 on A: the logs diverge. Leader-epoch truncation removes it. */
static bool kip101_scenario2(enum ks_truncation_mode mode)
{
    struct cluster_fixture h;
    cf_init(&h, 2);
    h.cluster_config.truncation = mode;
    cf_topic(&h, "t", 1, 2, 1, ASSIGN_12);
    cf_start(&h, 12);
    cf_run_until(&h, 1 * H_S);
    h_append(&h, 1, 0, 0, KS_ACKS_ALL, "m1");
    cf_run_until(&h, 2 * H_S);
    /* m1 is on disk on both (as a flush would leave it). */
    ks_log_flush(ks_cluster_replica_log(h.cluster, 1, 0, 0));
    ks_log_flush(ks_cluster_replica_log(h.cluster, 2, 0, 0));
    h_append(&h, 1, 0, 0, KS_ACKS_ALL, "m2");
    cf_run_until(&h, 10500 * H_MS); /* A's HW 2 checkpointed at 10 s */
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).hw, 2);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).leo, 2);
    cf_crash(&h, 1, false); /* A: process crash, page cache survives */
    cf_crash(&h, 2, true);  /* B: power failure, m2 was never fsynced */
    cf_restart(&h, 2);
    /* Sessions of both expire at 19 s. With KRaft rules B may only register
     * its new incarnation then: its refused registrations are retried with
     * a backoff doubling from 100 ms, so the one accepted leaves at about
     * 23.1 s; it is unfenced some milliseconds later and elected. In
     * high-watermark mode (ZooKeeper era) it registered at once. */
    cf_run_for(&h, 13 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).leo, 1);
    struct cf_append *m3 = h_append(&h, 2, 0, 0, KS_ACKS_LEADER, "m3");
    cf_run_for(&h, 100 * H_MS);
    CU_ASSERT_EQUAL(m3->base_offset, 1);
    cf_restart(&h, 1);
    cf_run_for(&h, 5 * H_S);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).role, KS_ROLE_FOLLOWER);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).leo, h_state(&h, 2, 0, 0).leo);
    bool agree = h_logs_agree(&h, 1, 2, 0, 0);
    if (mode == KS_TRUNCATION_LEADER_EPOCH) {
        CU_ASSERT_TRUE(cf_count(&h, KS_EV_TRUNCATION) >= 1);
    }
    cf_free(&h);
    return agree;
}

static void test_kip101_scenario2(void)
{
    CU_ASSERT_FALSE(kip101_scenario2(KS_TRUNCATION_HIGH_WATERMARK));
    CU_ASSERT_TRUE(kip101_scenario2(KS_TRUNCATION_LEADER_EPOCH));
}

/* KIP-279: the follower's latest epoch is unknown to the new leader (two
 * quick leader changes). Broker 1 writes m2 alone (cut off from 2), dies;
 * 2 leads epoch 1 and writes m3, dies; 1 comes back and is elected
 * uncleanly (epoch 2) with m1,m2; then 2 comes back as follower with m3 at
 * offset 1 and HW 2. Epoch-based truncation must go back to the end of the
 * last common epoch (0, offset 1) and refetch m2. */
static bool kip279_scenario(enum ks_truncation_mode mode)
{
    struct cluster_fixture h;
    cf_init(&h, 2);
    h.cluster_config.truncation = mode;
    h.cluster_config.unclean_leader_election_enable = true;
    cf_topic(&h, "t", 1, 2, 1, ASSIGN_12);
    cf_start(&h, 13);
    cf_run_until(&h, 1 * H_S);
    h_append(&h, 1, 0, 0, KS_ACKS_ALL, "m1");
    cf_run_until(&h, 2 * H_S);
    ks_node_id a = 1;
    ks_node_id b = 2;
    ks_cut_id cut = ks_world_net_partition(h.env.world, &a, 1, &b, 1);
    h_append(&h, 1, 0, 0, KS_ACKS_LEADER, "m2");
    cf_run_until(&h, 2500 * H_MS);
    cf_crash(&h, 1, false);
    ks_world_net_heal(h.env.world, cut);
    cf_run_until(&h, 12 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    CU_ASSERT_EQUAL(ks_cluster_leader_epoch(h.cluster, 0, 0), 1);
    h_append(&h, 2, 0, 0, KS_ACKS_LEADER, "m3");
    cf_run_until(&h, 15500 * H_MS); /* 2 alone in the ISR: HW 2, checkpointed at 15 s */
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).hw, 2);
    cf_crash(&h, 2, false);
    cf_run_until(&h, 25 * H_S); /* 2 fenced: no live replica, no leader */
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), -1);
    cf_restart(&h, 1);
    cf_run_until(&h, 28 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 1);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_UNCLEAN_ELECTION), 1);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).leo, 2);
    cf_restart(&h, 2);
    cf_run_until(&h, 33 * H_S);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).role, KS_ROLE_FOLLOWER);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).leo, 2);
    bool agree = h_logs_agree(&h, 1, 2, 0, 0);
    cf_free(&h);
    return agree;
}

static void test_kip279_scenario(void)
{
    CU_ASSERT_FALSE(kip279_scenario(KS_TRUNCATION_HIGH_WATERMARK));
    CU_ASSERT_TRUE(kip279_scenario(KS_TRUNCATION_LEADER_EPOCH));
}

/* A diverging epoch the follower knows nothing as old as: two elections that
 * lose data leave broker 2 with a log that begins in epoch 1, while the
 * leader's log (broker 1, elected uncleanly in epoch 2) has epochs 0 and 2
 * only. The leader answers 2's last fetched epoch 1 with (epoch 0, end 3);
 * 2 has no epoch <= 0, so Kafka truncates to min(leader's end offset, LEO)
 * = 3 (AbstractFetcherThread.getOffsetTruncationState), keeping its epoch-1
 * records at 0..2 (the replicas diverge below 3). A fall-back to its own HW
 * (5, its LEO) would truncate nothing. Kafka's fetcher then sends its latest
 * epoch, still 1, and gets the same answer again: after two unclean
 * elections like these it does not converge, and neither does ksim. */
static void test_diverging_no_common_epoch(void)
{
    struct cluster_fixture h;
    cf_init(&h, 2);
    h.cluster_config.unclean_leader_election_enable = true;
    cf_topic(&h, "t", 1, 2, 1, ASSIGN_12);
    cf_start(&h, 14);
    cf_run_until(&h, 1 * H_S);
    ks_node_id a = 1;
    ks_node_id b = 2;
    ks_cut_id cut = ks_world_net_partition(h.env.world, &a, 1, &b, 1);
    h_append_batch(&h, 1, 0, 0, KS_ACKS_LEADER, h_batch("m", 3, -1, -1, -1)); /* 0..2, epoch 0 */
    cf_run_until(&h, 1500 * H_MS);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).leo, 0);
    cf_crash(&h, 1, false);
    ks_world_net_heal(h.env.world, cut);
    cf_run_until(&h, 12 * H_S); /* 1 fenced; 2 (still in the ISR, empty) leads epoch 1 */
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    CU_ASSERT_EQUAL(ks_cluster_leader_epoch(h.cluster, 0, 0), 1);
    for (int i = 0; i < 5; i++) {
        h_append(&h, 2, 0, 0, KS_ACKS_LEADER, "n"); /* 0..4, epoch 1, a batch each */
    }
    cf_run_until(&h, 16 * H_S); /* HW 5 checkpointed at 15 s */
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).hw, 5);
    uint32_t n2 = h_batch_crc_at(&h, 2, 0, 0, 2);
    CU_ASSERT_NOT_EQUAL(n2, 0);
    cf_crash(&h, 2, false);
    cf_restart(&h, 1);
    cf_run_until(&h, 30 * H_S); /* 2 fenced at about 25 s: 1 elected uncleanly, epoch 2 */
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 1);
    CU_ASSERT_EQUAL(ks_cluster_leader_epoch(h.cluster, 0, 0), 2);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_UNCLEAN_ELECTION), 1);
    h_append(&h, 1, 0, 0, KS_ACKS_LEADER, "p1"); /* offset 3, epoch 2 */
    cf_run_for(&h, 100 * H_MS);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).leo, 4);
    cf_restart(&h, 2);
    cf_run_for(&h, 5 * H_S);
    const struct cf_event *cut_event = cf_find(&h, KS_EV_TRUNCATION, 30 * H_S);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cut_event);
    CU_ASSERT_EQUAL(cut_event->broker, 2);
    CU_ASSERT_EQUAL(cut_event->reason, KS_REASON_TRUNCATE_NO_COMMON_EPOCH);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).role, KS_ROLE_FOLLOWER);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 0).leo, 3);
    CU_ASSERT_EQUAL(h_batch_crc_at(&h, 2, 0, 0, 2), n2); /* epoch-1 records below 3 kept */
    CU_ASSERT_NOT_EQUAL(h_batch_crc_at(&h, 2, 0, 0, 2), h_batch_crc_at(&h, 1, 0, 0, 2));
    cf_free(&h);
}

/* What a leader does with each AlterPartition answer
 * (Partition.handleAlterPartitionError), white-box: a pending shrink is
 * planted in the leader's replica and answered by hand. A stale-state error
 * leaves the change pending and unsent until a push overrides it;
 * INELIGIBLE_REPLICA resets it to the committed ISR at once; any other
 * error is retried. */
static void plant_shrink(struct cluster_fixture *h, struct ks__replica *replica)
{
    if (replica->alter == NULL) { /* allocated at the first ISR change */
        replica->alter = calloc(1, sizeof *replica->alter);
    }
    memset(replica->alter, 0, sizeof *replica->alter);
    replica->alter->broker_id = 1;
    replica->alter->leader_epoch = replica->state.leader_epoch;
    replica->alter->partition_epoch = replica->state.partition_epoch;
    replica->alter->isr_count = 2;
    replica->alter->isr[0] = 1;
    replica->alter->isr[1] = 2;
    replica->alter->broker_epoch = 1;
    replica->alter_state = KS__ALTER_IN_FLIGHT;
    replica->alter_sent_ns = cf_now(h);
}

static void answer(struct ks_broker *broker, int16_t error_code)
{
    struct ks_alter_partition_response response;
    memset(&response, 0, sizeof response);
    response.topic_index = 0;
    response.partition = 0;
    response.error_code = error_code;
    response.leader = -1;
    ks__replica_on_alter_response(broker, &response);
}

static void test_alter_partition_answers(void)
{
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 1, 3, 1, ASSIGN_123);
    cf_start(&h, 15);
    cf_run_until(&h, 1 * H_S);
    struct ks_broker *broker = ks_cluster_broker(h.cluster, 1);
    struct ks__replica *replica = broker->replicas[0][0];
    CU_ASSERT_EQUAL_FATAL(replica->role, KS_ROLE_LEADER);
    /* Stale state: pending, never re-sent by the ISR check (every 15 s). */
    plant_shrink(&h, replica);
    answer(broker, KS_ERR_INVALID_UPDATE_VERSION);
    CU_ASSERT_EQUAL(replica->alter_state, KS__ALTER_REFUSED);
    ks_time_ns sent_ns = replica->alter_sent_ns;
    cf_run_until(&h, 32 * H_S);
    CU_ASSERT_EQUAL(replica->alter_state, KS__ALTER_REFUSED);
    CU_ASSERT_EQUAL(replica->alter_sent_ns, sent_ns);
    /* A push with a newer partition epoch ends it: broker 3 fenced, out of the ISR. */
    cf_crash(&h, 3, false);
    cf_run_until(&h, 45 * H_S);
    CU_ASSERT_EQUAL(replica->alter_state, KS__ALTER_IDLE);
    int32_t isr[4];
    CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, 0, isr, 4), 2);
    /* INELIGIBLE_REPLICA: back to the committed ISR at once. */
    plant_shrink(&h, replica);
    replica->alter->isr_count = 1;
    answer(broker, KS_ERR_INELIGIBLE_REPLICA);
    CU_ASSERT_EQUAL(replica->alter_state, KS__ALTER_IDLE);
    /* Anything else is retried: still in flight, re-sent by the ISR check
     * once KS__ALTER_RETRY_NS has passed (the controller then refuses the
     * planted request as a same-ISR no-op or a stale one, which ends it). */
    plant_shrink(&h, replica);
    answer(broker, KS_ERR_STALE_BROKER_EPOCH);
    CU_ASSERT_EQUAL(replica->alter_state, KS__ALTER_IN_FLIGHT);
    sent_ns = replica->alter_sent_ns;
    cf_run_for(&h, 16 * H_S);
    CU_ASSERT_TRUE(replica->alter_sent_ns > sent_ns);
    CU_ASSERT_EQUAL(replica->alter_state, KS__ALTER_IDLE);
    cf_free(&h);
}

/* A crashed broker restarts: its log comes back through recovery (unclean
 * shutdown), it catches up and rejoins the ISR; a clean shutdown skips
 * recovery. */
static void test_restart_recovery(void)
{
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 2, 3, 2, NULL);
    cf_start(&h, 4);
    cf_run_until(&h, 500 * H_MS);
    for (int i = 0; i < 10; i++) {
        int32_t leader = ks_cluster_leader(h.cluster, 0, i % 2);
        h_append(&h, leader, 0, i % 2, KS_ACKS_ALL, "r");
        cf_run_for(&h, 50 * H_MS);
    }
    for (int i = 0; i < 10; i++) {
        CU_ASSERT_EQUAL(h.appends[i].error, KS_ERR_NONE);
    }
    int32_t victim = ks_cluster_leader(h.cluster, 0, 0);
    cf_crash(&h, victim, false);
    CU_ASSERT_FALSE(ks_cluster_broker_is_up(h.cluster, victim));
    cf_run_for(&h, 12 * H_S);
    CU_ASSERT_NOT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), victim);
    CU_ASSERT_TRUE(cf_count(&h, KS_EV_LEADER_ELECTED) >= 1);
    cf_restart(&h, victim);
    cf_run_for(&h, 10 * H_S);
    CU_ASSERT_TRUE(cf_count(&h, KS_EV_RECOVERY) >= 1);
    CU_ASSERT_TRUE(cf_count(&h, KS_EV_BROKER_UNFENCED) >= 1);
    for (int32_t p = 0; p < 2; p++) {
        int32_t isr[4];
        CU_ASSERT_EQUAL(ks_cluster_isr(h.cluster, 0, p, isr, 4), 3);
        CU_ASSERT_EQUAL(h_state(&h, victim, 0, p).leo, 5);
    }
    /* Clean shutdown: no recovery on the next start. */
    int32_t recoveries = cf_count(&h, KS_EV_RECOVERY);
    ks_broker_shutdown(ks_cluster_broker(h.cluster, victim));
    CU_ASSERT_FALSE(ks_cluster_broker_is_up(h.cluster, victim));
    cf_run_for(&h, 6 * H_S); /* a stopped broker writes no more checkpoints */
    ks_broker_on_restart(ks_cluster_broker(h.cluster, victim));
    /* HW from the checkpoint written at shutdown, before any metadata. */
    CU_ASSERT_EQUAL(h_state(&h, victim, 0, 0).hw, 5);
    CU_ASSERT_EQUAL(h_state(&h, victim, 0, 0).role, KS_ROLE_NONE);
    cf_run_for(&h, 1 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_RECOVERY), recoveries);
    CU_ASSERT_EQUAL(h_state(&h, victim, 0, 0).leo, 5);
    cf_free(&h);
}

/* The recovery line says what a crash cost the log, against the LEO the
 * broker had: after a power loss (no writeback in this world, no fsync)
 * every record of the victim's log is gone, and the event counts them,
 * although the files it recovers are simply empty; after a process crash
 * nothing is lost. */
static void test_recovery_reports_loss(void)
{
    for (int power = 0; power <= 1; power++) {
        struct cluster_fixture h;
        cf_init(&h, 3);
        cf_topic(&h, "orders", 1, 3, 2, NULL);
        cf_start(&h, 4);
        cf_run_until(&h, 500 * H_MS);
        int32_t leader = ks_cluster_leader(h.cluster, 0, 0);
        for (int i = 0; i < 6; i++) {
            h_append(&h, leader, 0, 0, KS_ACKS_ALL, "r");
            cf_run_for(&h, 50 * H_MS);
        }
        int32_t victim = leader % 3 + 1; /* a follower: no election needed */
        int64_t bytes = ks_log_size_bytes(ks_cluster_replica_log(h.cluster, victim, 0, 0));
        CU_ASSERT_EQUAL(h_state(&h, victim, 0, 0).leo, 6);
        cf_crash(&h, victim, power == 1);
        cf_run_for(&h, 1 * H_S);
        cf_restart(&h, victim);
        const struct cf_event *e = cf_find(&h, KS_EV_RECOVERY, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        CU_ASSERT_EQUAL(e->broker, victim);
        CU_ASSERT_EQUAL(e->leo_old, 6);
        if (power == 1) {
            CU_ASSERT_EQUAL(e->offset_old, 0); /* what the files held */
            CU_ASSERT_EQUAL(e->leo_new, 0);
            CU_ASSERT_EQUAL(e->record_count, 6);
            CU_ASSERT_EQUAL(e->batch_count, 6);
            CU_ASSERT_EQUAL(e->byte_count, bytes);
        } else {
            CU_ASSERT_EQUAL(e->leo_new, 6);
            CU_ASSERT_EQUAL(e->record_count, 0);
            CU_ASSERT_EQUAL(e->batch_count, 0);
            CU_ASSERT_EQUAL(e->byte_count, 0);
        }
        cf_free(&h);
    }
}

/* A leader cut off from the controller (a zombie) keeps accepting acks=1
 * writes; the controller fences it and elects another leader; when it
 * reconnects it truncates the writes it accepted alone. It cannot shrink its
 * ISR meanwhile, so acks=all writes on it time out. */
static void test_zombie_leader(void)
{
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 1, 3, 1, ASSIGN_123);
    cf_start(&h, 5);
    cf_run_until(&h, 500 * H_MS);
    ks_node_id zombie = 1;
    ks_node_id others[] = { 2, 3, 4 };
    ks_cut_id cut = ks_world_net_partition(h.env.world, &zombie, 1, others, 3);
    struct cf_append *one = h_append(&h, 1, 0, 0, KS_ACKS_LEADER, "zombie-write");
    struct cf_append *all = h_append(&h, 1, 0, 0, KS_ACKS_ALL, "zombie-all");
    cf_run_for(&h, 40 * H_S);
    CU_ASSERT_EQUAL(one->error, KS_ERR_NONE);
    CU_ASSERT_EQUAL(all->error, KS_ERR_REQUEST_TIMED_OUT);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).role, KS_ROLE_LEADER); /* it does not know */
    ks_world_net_heal(h.env.world, cut);
    /* Its heartbeats have been failing since 2 s, each after a 4.5 s timeout
     * and a growing backoff (BrokerLifecycleManager): the next one leaves at
     * about 46 s, and only then does it learn of the new leader. */
    cf_run_for(&h, 5 * H_S);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).role, KS_ROLE_LEADER);
    cf_run_for(&h, 5 * H_S);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).role, KS_ROLE_FOLLOWER);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).leo, h_state(&h, 2, 0, 0).leo);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).leo, 0);
    CU_ASSERT_TRUE(cf_count(&h, KS_EV_TRUNCATION) >= 1);
    cf_free(&h);
}

/* End to end with the producer module: acks=all, idempotent, min ISR 2,
 * the leader of partition 0 crashes mid-stream. Everything acknowledged is
 * on the new leaders; every record is acknowledged in the end. */
static void test_producer_acks_all_failover(void)
{
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 3, 3, 2, NULL);
    h_add_producer(&h, 2000, 6000);
    cf_start(&h, 41);
    cf_run_until(&h, 1500 * H_MS);
    int32_t victim = ks_cluster_leader(h.cluster, 0, 0);
    cf_crash(&h, victim, false);
    cf_run_until(&h, 60 * H_S);
    int64_t acked = h_outcome_count(&h, KS_OUTCOME_ACKED);
    CU_ASSERT_EQUAL(ks_cluster_producer_sent_count(h.cluster, 0), 6000);
    CU_ASSERT_EQUAL(acked, 6000);
    CU_ASSERT_EQUAL(h_acked_lost(&h), 0);
    CU_ASSERT_NOT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), victim);
    cf_free(&h);
}

/* acks=1: the leader acknowledges before its followers have the records.
 * Its followers stop fetching (cut off, still in the ISR since
 * replica.lag.time.max.ms has not passed); the leader keeps acknowledging,
 * then crashes: a follower from the ISR is elected cleanly and every record
 * acknowledged meanwhile is lost. With acks=all the same story loses none. */
static int64_t producer_cut_then_crash(enum ks_acks acks)
{
    static const int32_t assign[] = { 1, 2, 3 };
    struct cluster_fixture h;
    cf_init(&h, 3);
    cf_topic(&h, "orders", 1, 3, 1, assign);
    struct ks_producer_config *config = h_add_producer(&h, 2000, 4000);
    config->acks = acks;
    config->enable_idempotence = acks == KS_ACKS_ALL;
    cf_start(&h, 42);
    cf_run_until(&h, 1 * H_S);
    ks_node_id leader = 1;
    ks_node_id followers[] = { 2, 3 };
    ks_cut_id cut = ks_world_net_partition(h.env.world, &leader, 1, followers, 2);
    cf_run_until(&h, 1200 * H_MS);
    int64_t leader_leo = h_state(&h, 1, 0, 0).leo;
    int64_t follower_leo = h_state(&h, 2, 0, 0).leo;
    if (acks == KS_ACKS_LEADER) {
        CU_ASSERT_TRUE(leader_leo > follower_leo);
    }
    cf_crash(&h, 1, false);
    ks_world_net_heal(h.env.world, cut);
    cf_run_until(&h, 60 * H_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(h.cluster, 0, 0), 2);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_UNCLEAN_ELECTION), 0);
    int64_t lost = h_acked_lost(&h);
    CU_ASSERT_TRUE(lost <= leader_leo - follower_leo);
    cf_free(&h);
    return lost;
}

static void test_producer_acks1_loss(void)
{
    CU_ASSERT_TRUE(producer_cut_then_crash(KS_ACKS_LEADER) > 0);
    CU_ASSERT_EQUAL(producer_cut_then_crash(KS_ACKS_ALL), 0);
}

/* The client side of the protocol, spoken from the driver's node: Metadata,
 * a consumer Fetch (replica_id -1) served only up to the HW, ListOffsets
 * earliest/latest, and a Fetch to a follower (NOT_LEADER_OR_FOLLOWER). */
static void send_fetch_min(struct cluster_fixture *h, int32_t broker, int64_t offset,
                           int64_t max_wait_ns, int32_t min_bytes)
{
    _Alignas(8) uint8_t
        message[sizeof(struct ks_fetch_request) + sizeof(struct ks_fetch_request_partition)];
    memset(message, 0, sizeof message);
    struct ks_fetch_request *request = (struct ks_fetch_request *)message;
    request->correlation_id = 77;
    request->replica_id = KS_FETCH_CONSUMER_REPLICA_ID;
    request->min_bytes = min_bytes;
    request->max_wait_ns = max_wait_ns;
    request->max_bytes = 1 << 20;
    request->partition_count = 1;
    struct ks_fetch_request_partition *entry =
        (struct ks_fetch_request_partition *)(message + sizeof *request);
    entry->fetch_offset = offset;
    entry->log_start_offset = -1;
    entry->current_leader_epoch = -1;
    entry->last_fetched_epoch = -1;
    entry->partition_max_bytes = 1 << 20;
    ks_world_send(h->env.world, KS_NODE_DRIVER, (ks_node_id)broker, KS_MSG_FETCH_REQUEST, message,
                  sizeof message);
}

static void send_fetch(struct cluster_fixture *h, int32_t broker, int64_t offset,
                       int64_t max_wait_ns)
{
    send_fetch_min(h, broker, offset, max_wait_ns, 1);
}

static void test_client_protocol(void)
{
    struct cluster_fixture h;
    struct h_client_box box;
    h_client_cluster(&h, &box, 6);
    /* Metadata from a follower's cache. */
    struct ks_metadata_request metadata;
    memset(&metadata, 0, sizeof metadata);
    metadata.correlation_id = 5;
    metadata.topic_index = 0;
    ks_world_send(h.env.world, KS_NODE_DRIVER, 3, KS_MSG_METADATA_REQUEST, &metadata,
                  sizeof metadata);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.kind, KS_MSG_METADATA_RESPONSE);
    struct ks_metadata_response mr_decoded;
    size_t mr_head = ks_proto_metadata_decode(box.bytes, box.byte_count, &mr_decoded);
    const struct ks_metadata_response *mr = &mr_decoded;
    CU_ASSERT_EQUAL(mr->correlation_id, 5);
    CU_ASSERT_EQUAL(mr->partition_count, 1);
    CU_ASSERT_EQUAL(mr->broker_alive[0], 1);
    const struct ks_metadata_partition *mp =
        (const struct ks_metadata_partition *)(box.bytes + mr_head);
    CU_ASSERT_EQUAL(mp->leader, 1);
    CU_ASSERT_EQUAL(mp->error_code, KS_ERR_NONE);
    /* Two records committed, a third only on the leader (followers cut off). */
    h_append(&h, 1, 0, 0, KS_ACKS_ALL, "a");
    h_append(&h, 1, 0, 0, KS_ACKS_ALL, "b");
    cf_run_for(&h, 50 * H_MS);
    ks_node_id leader = 1;
    ks_node_id followers[] = { 2, 3 };
    ks_cut_id cut = ks_world_net_partition(h.env.world, &leader, 1, followers, 2);
    h_append(&h, 1, 0, 0, KS_ACKS_LEADER, "c");
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).leo, 3);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).hw, 2);
    send_fetch(&h, 1, 0, 0);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.kind, KS_MSG_FETCH_RESPONSE);
    const struct ks_fetch_response *fr = (const struct ks_fetch_response *)box.bytes;
    CU_ASSERT_EQUAL(fr->correlation_id, 77);
    const struct ks_fetch_response_partition *fp =
        (const struct ks_fetch_response_partition *)(box.bytes + sizeof *fr);
    CU_ASSERT_EQUAL(fp->error_code, KS_ERR_NONE);
    CU_ASSERT_EQUAL(fp->hw, 2);
    /* Exactly the two committed batches, not the third. */
    size_t position = 0;
    int32_t batches = 0;
    const uint8_t *records = box.bytes + sizeof *fr + sizeof *fp;
    while (position < fp->records_bytes) {
        struct ks_batch_view view;
        size_t batch_bytes = 0;
        CU_ASSERT_EQUAL_FATAL(
            ks_batch_parse(records + position, fp->records_bytes - position, &view, &batch_bytes),
            KS_BATCH_OK);
        CU_ASSERT_TRUE(ks_batch_last_offset(&view) < 2);
        position += batch_bytes;
        batches++;
    }
    CU_ASSERT_EQUAL(batches, 2);
    /* At the HW a consumer fetch long-polls and returns empty at max_wait. */
    int32_t before = box.count;
    send_fetch(&h, 1, 2, 100 * (int64_t)H_MS);
    cf_run_for(&h, 50 * H_MS);
    CU_ASSERT_EQUAL(box.count, before);
    cf_run_for(&h, 60 * H_MS);
    CU_ASSERT_EQUAL(box.count, before + 1);
    CU_ASSERT_EQUAL(fp->records_bytes, 0);
    /* ListOffsets: latest is the HW, earliest the log start. */
    struct ks_list_offsets_request list;
    memset(&list, 0, sizeof list);
    list.correlation_id = 9;
    list.timestamp = KS_LIST_OFFSETS_LATEST;
    list.current_leader_epoch = -1;
    ks_world_send(h.env.world, KS_NODE_DRIVER, 1, KS_MSG_LIST_OFFSETS_REQUEST, &list, sizeof list);
    cf_run_for(&h, 5 * H_MS);
    const struct ks_list_offsets_response *lr = (const struct ks_list_offsets_response *)box.bytes;
    CU_ASSERT_EQUAL(box.kind, KS_MSG_LIST_OFFSETS_RESPONSE);
    CU_ASSERT_EQUAL(lr->offset, 2);
    list.timestamp = KS_LIST_OFFSETS_EARLIEST;
    ks_world_send(h.env.world, KS_NODE_DRIVER, 1, KS_MSG_LIST_OFFSETS_REQUEST, &list, sizeof list);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL(lr->offset, 0);
    /* A follower does not serve consumers. */
    send_fetch(&h, 2, 0, 0);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL(box.kind, KS_MSG_FETCH_RESPONSE);
    CU_ASSERT_EQUAL(fp->error_code, KS_ERR_NOT_LEADER_OR_FOLLOWER);
    ks_world_net_heal(h.env.world, cut);
    /* The followers' fetches lost in the cut time out (30 s), then they
     * catch up and the HW reaches 3. */
    cf_run_for(&h, 35 * H_S);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).hw, 3);
    /* fetch.min.bytes: new committed data smaller than min_bytes does not
     * release the long poll; the deadline does. */
    before = box.count;
    ks_time_ns sent = cf_now(&h);
    send_fetch_min(&h, 1, 3, 300 * (int64_t)H_MS, 1 << 20);
    cf_run_for(&h, 20 * H_MS);
    h_append(&h, 1, 0, 0, KS_ACKS_ALL, "d");
    cf_run_for(&h, 200 * H_MS);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).hw, 4);
    CU_ASSERT_EQUAL(box.count, before);
    cf_run_until(&h, sent + 302 * H_MS);
    CU_ASSERT_EQUAL(box.count, before + 1);
    CU_ASSERT_TRUE(fp->records_bytes > 0);
    ks_world_set_receiver(h.env.world, KS_NODE_DRIVER, NULL, NULL);
    cf_free(&h);
}

/* The HW in a fetch response is the one from before that fetch moved it
 * (Partition.fetchRecords: readRecords, then updateFollowerFetchState), and
 * a parked fetch served again reads the HW of then without recording the
 * fetch a second time (ReplicaManager.readFromLog, updateFetchState =
 * !readFromPurgatory). Broker 2's receiver is taken over by the test, which
 * fetches from leader 1 in its name: its own fetcher then waits for its
 * request timeout and stays out of the way. */
struct fetch_box {
    int32_t count;
    struct ks_fetch_response_partition last; /* the first partition of the last answer */
    struct ks_fetch_response header;         /* of the last answer */
    int32_t partitions[4];                   /* the partitions it listed, in order */
};

static void fetch_capture(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                          const void *message, size_t message_bytes, void *context)
{
    (void)world;
    (void)self;
    (void)source;
    struct fetch_box *box = context;
    struct ks_fetch_response header;
    if (kind != KS_MSG_FETCH_RESPONSE || message_bytes < sizeof header) {
        return;
    }
    memcpy(&header, message, sizeof header);
    if (header.correlation_id < 1000) {
        return; /* broker 2's own fetcher's */
    }
    box->header = header;
    size_t position = sizeof header;
    memset(&box->last, 0, sizeof box->last);
    for (int32_t i = 0; i < header.partition_count && i < 4; i++) {
        struct ks_fetch_response_partition part;
        memcpy(&part, (const uint8_t *)message + position, sizeof part);
        if (i == 0) {
            box->last = part;
        }
        box->partitions[i] = part.partition;
        position += sizeof part + part.records_bytes;
    }
    box->count++;
}

/* Sends a fetch from broker 2 to broker 1 for partitions of topic 0 (up to
 * 8, at offsets) that forgets others (up to 4); session_epoch -1:
 * sessionless. */
/* Two brokers and one topic of `partitions` (RF 2, min ISR 1, `assign`),
 * started with `seed` and run to 1.1 s, with broker 2's node capturing the
 * fetch answers in *box (its own fetcher's are ignored there), so that the
 * test fetches as broker 2 by hand. */
/* Topic "orders" of `partitions` partitions, each led by broker 1 and
 * followed by broker 2 (RF 2). */
static void topic_led_by_1(struct cluster_fixture *h, int32_t partitions, int32_t min_isr)
{
    int32_t *assign = g_new(int32_t, 2 * (size_t)partitions);
    for (int32_t i = 0; i < partitions; i++) {
        assign[2 * i] = 1;
        assign[2 * i + 1] = 2;
    }
    cf_topic(h, "orders", partitions, 2, min_isr, assign);
    g_free(assign);
}

static void captured_follower(struct cluster_fixture *h, struct fetch_box *box, int32_t partitions,
                              uint64_t seed)
{
    cf_init(h, 2);
    topic_led_by_1(h, partitions, 1);
    cf_start(h, seed);
    cf_run_until(h, 100 * H_MS);
    memset(box, 0, sizeof *box);
    ks_world_set_receiver(h->env.world, 2, fetch_capture, box);
    cf_run_for(h, 1 * H_S);
}

static void session_fetch_forget(struct cluster_fixture *h, int64_t correlation_id,
                                 int32_t session_id, int32_t session_epoch,
                                 const int32_t *partitions, const int64_t *offsets, int32_t count,
                                 const int32_t *forgotten, int32_t forgotten_count)
{
    struct {
        struct ks_fetch_request request;
        struct ks_fetch_request_partition entries[8];
        struct ks_fetch_forgotten gone[4];
    } message;
    CU_ASSERT_FATAL(count <= 8 && forgotten_count <= 4);
    memset(&message, 0, sizeof message);
    message.request.correlation_id = correlation_id;
    message.request.replica_id = 2;
    message.request.replica_epoch = ks_cluster_broker(h->cluster, 2)->broker_epoch;
    message.request.min_bytes = 1;
    message.request.max_wait_ns = 500 * H_MS;
    message.request.max_bytes = 1 << 20;
    message.request.partition_count = count;
    message.request.forgotten_count = forgotten_count;
    message.request.session = session_epoch >= 0 ? 1 : 0;
    message.request.session_id = session_id;
    message.request.session_epoch = session_epoch >= 0 ? session_epoch : 0;
    for (int32_t i = 0; i < count; i++) {
        message.entries[i].partition = partitions[i];
        message.entries[i].fetch_offset = offsets[i];
        message.entries[i].current_leader_epoch = -1;
        message.entries[i].last_fetched_epoch = -1;
        message.entries[i].partition_max_bytes = 1 << 20;
    }
    /* The forgotten keys follow the listed entries. */
    struct ks_fetch_forgotten *gone = (struct ks_fetch_forgotten *)&message.entries[count];
    for (int32_t i = 0; i < forgotten_count; i++) {
        gone[i].topic_index = 0;
        gone[i].partition = forgotten[i];
    }
    ks_world_send(h->env.world, 2, 1, KS_MSG_FETCH_REQUEST, &message,
                  sizeof message.request +
                      (size_t)count * sizeof(struct ks_fetch_request_partition) +
                      (size_t)forgotten_count * sizeof(struct ks_fetch_forgotten));
}

/* session_fetch_forget, forgetting nothing. */
static void session_fetch(struct cluster_fixture *h, int64_t correlation_id, int32_t session_id,
                          int32_t session_epoch, const int32_t *partitions, const int64_t *offsets,
                          int32_t count)
{
    session_fetch_forget(h, correlation_id, session_id, session_epoch, partitions, offsets, count,
                         NULL, 0);
}

static void fetch_as_follower(struct cluster_fixture *h, int64_t correlation_id,
                              int64_t fetch_offset)
{
    static const int32_t first[] = { 0 };
    session_fetch(h, correlation_id, 0, -1, first, &fetch_offset, 1);
}

static void test_follower_learns_hw_after_its_fetch(void)
{
    struct cluster_fixture h;
    cf_init(&h, 2);
    cf_topic(&h, "orders", 1, 2, 1, ASSIGN_12);
    cf_start(&h, 31);
    cf_run_until(&h, 100 * H_MS);
    struct fetch_box box;
    memset(&box, 0, sizeof box);
    ks_world_set_receiver(h.env.world, 2, fetch_capture, &box);
    cf_run_for(&h, 1 * H_S); /* broker 2's parked fetch is answered, to nobody */
    struct cf_append *a = h_append(&h, 1, 0, 0, KS_ACKS_ALL, "a");
    fetch_as_follower(&h, 1001, 0);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.count, 1);
    CU_ASSERT_TRUE(box.last.records_bytes > 0);
    CU_ASSERT_EQUAL(box.last.hw, 0);
    CU_ASSERT_FALSE(a->done);
    /* Offset 1 is there to read when broker 2 fetches from 1: the response
     * carries it with HW 0, although that very fetch moves the HW to 1 and
     * completes the acks=all append of "a". */
    struct cf_append *b = h_append(&h, 1, 0, 0, KS_ACKS_ALL, "b");
    fetch_as_follower(&h, 1002, 1);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.count, 2);
    CU_ASSERT_TRUE(box.last.records_bytes > 0);
    CU_ASSERT_EQUAL(box.last.hw, 0);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).hw, 1);
    CU_ASSERT_TRUE(a->done);
    CU_ASSERT_FALSE(b->done);
    /* Nothing to read from 2: the fetch moves the HW to 2 and parks; served
     * again at max_wait it carries the HW of then. */
    fetch_as_follower(&h, 1003, 2);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL(box.count, 2);
    CU_ASSERT_TRUE(b->done);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).hw, 2);
    cf_run_for(&h, 600 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.count, 3);
    CU_ASSERT_EQUAL(box.last.records_bytes, 0);
    CU_ASSERT_EQUAL(box.last.hw, 2);
    cf_free(&h);
}

/* KIP-227, leader side (FetchSession.scala): broker 2's receiver is taken
 * over and the test fetches from leader 1 in its name with sessions. */
static void test_fetch_session_leader(void)
{
    static const int32_t all[] = { 0, 1, 2 };
    static const int64_t zeroes[] = { 0, 0, 0 };
    static const int32_t second[] = { 1 };
    static const int64_t one[] = { 1 };
    struct cluster_fixture h;
    struct fetch_box box;
    captured_follower(&h, &box, 3, 32);
    h_append(&h, 1, 0, 1, KS_ACKS_LEADER, "a");
    /* A full request creates a session and is answered for every partition. */
    session_fetch(&h, 1001, 0, 0, all, zeroes, 3);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.count, 1);
    int32_t id = box.header.session_id;
    CU_ASSERT_NOT_EQUAL(id, 0);
    CU_ASSERT_EQUAL(box.header.partition_count, 3);
    /* Epoch 1 with partition 1's new offset: nothing new anywhere (the HW
     * moved on partition 1, which the fetch itself did: it learns that at
     * max_wait), so the request parks and is answered with partition 1 only,
     * its HW being new to the follower. */
    session_fetch(&h, 1002, id, 1, second, one, 1);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL(box.count, 1);
    cf_run_for(&h, 600 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.count, 2);
    CU_ASSERT_EQUAL(box.header.error_code, KS_ERR_NONE);
    CU_ASSERT_EQUAL(box.header.partition_count, 1);
    CU_ASSERT_EQUAL(box.partitions[0], 1);
    CU_ASSERT_EQUAL(box.last.hw, 1);
    /* New data on partition 2 releases an incremental request that lists no
     * partition at all, and only partition 2 is answered. */
    session_fetch(&h, 1003, id, 2, NULL, NULL, 0);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL(box.count, 2);
    h_append(&h, 1, 0, 2, KS_ACKS_LEADER, "b");
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.count, 3);
    CU_ASSERT_EQUAL(box.header.partition_count, 1);
    CU_ASSERT_EQUAL(box.partitions[0], 2);
    CU_ASSERT_TRUE(box.last.records_bytes > 0);
    /* The same epoch again, and an unknown session. */
    static const int32_t third[] = { 2 };
    session_fetch(&h, 1004, id, 3, third, one, 1);
    session_fetch(&h, 1005, id, 3, NULL, NULL, 0);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.count, 4);
    CU_ASSERT_EQUAL(box.header.error_code, KS_ERR_INVALID_FETCH_SESSION_EPOCH);
    session_fetch(&h, 1006, id + 7, 1, NULL, NULL, 0);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.count, 5);
    CU_ASSERT_EQUAL(box.header.error_code, KS_ERR_FETCH_SESSION_ID_NOT_FOUND);
    CU_ASSERT_EQUAL(box.header.partition_count, 0);
    /* A restarted leader has no sessions. */
    cf_crash(&h, 1, false);
    cf_restart(&h, 1);
    cf_run_for(&h, 100 * H_MS);
    session_fetch(&h, 1007, id, 4, NULL, NULL, 0);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.count, 6);
    CU_ASSERT_EQUAL(box.header.error_code, KS_ERR_FETCH_SESSION_ID_NOT_FOUND);
    cf_free(&h);
}

/* Sends the driver's Produce request of one batch per partition to
 * broker 1: a PRODUCE_REQUESTS bundle when there are several (a single
 * PRODUCE_REQUEST is what every other test sends). */
static void produce_bundle(struct cluster_fixture *h, const int32_t *partitions, int32_t count,
                           enum ks_acks acks)
{
    GByteArray *message = g_byte_array_new();
    struct ks_produce_bundle bundle = { .count = (uint32_t)count };
    if (count > 1) {
        g_byte_array_append(message, (const guint8 *)&bundle, sizeof bundle);
    }
    for (int32_t i = 0; i < count; i++) {
        GByteArray *batch = h_batch("bundled", 1, -1, -1, -1);
        struct ks_produce_request request;
        memset(&request, 0, sizeof request);
        request.correlation_id = 500 + i;
        request.timeout_ns = 30 * H_S;
        request.partition = partitions[i];
        request.acks = (int16_t)acks;
        request.batch_bytes = batch->len;
        size_t one = sizeof request + batch->len;
        struct ks_produce_bundle_entry entry = { .bytes = (uint32_t)one };
        if (count > 1) {
            g_byte_array_append(message, (const guint8 *)&entry, sizeof entry);
        }
        g_byte_array_append(message, (const guint8 *)&request, sizeof request);
        g_byte_array_append(message, batch->data, batch->len);
        static const guint8 zeroes[8] = { 0 };
        if (count > 1) {
            g_byte_array_append(message, zeroes,
                                (guint)(ks_proto_bundle_entry_bytes(one) - sizeof entry - one));
        }
        g_byte_array_unref(batch);
    }
    ks_world_send(h->env.world, KS_NODE_DRIVER, 1,
                  count > 1 ? KS_MSG_PRODUCE_REQUESTS : KS_MSG_PRODUCE_REQUEST, message->data,
                  message->len);
    g_byte_array_unref(message);
}

/* A Produce request of several partitions is appended whole before the
 * followers' parked fetches are released (ReplicaManager.appendRecords,
 * then its action queue): the parked session fetch is answered once, with
 * both partitions. Released at the first append, it was answered with the
 * first partition alone. And it is answered once (A5). */
static void test_produce_request_appended_whole(void)
{
    static const int32_t all[] = { 0, 1, 2 };
    static const int64_t zeroes[] = { 0, 0, 0 };
    static const int32_t both[] = { 0, 2 };
    struct cluster_fixture h;
    struct fetch_box box;
    captured_follower(&h, &box, 3, 32);
    h_append(&h, 1, 0, 1, KS_ACKS_LEADER, "a");
    session_fetch(&h, 1001, 0, 0, all, zeroes, 3);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.count, 1);
    int32_t id = box.header.session_id;
    /* Partition 1's news (its HW) is answered at max_wait; then all is quiet. */
    static const int32_t second[] = { 1 };
    static const int64_t one[] = { 1 };
    session_fetch(&h, 1002, id, 1, second, one, 1);
    cf_run_for(&h, 600 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.count, 2);
    session_fetch(&h, 1003, id, 2, NULL, NULL, 0);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL(box.count, 2); /* parked */
    produce_bundle(&h, both, 2, KS_ACKS_NONE);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.count, 3);
    CU_ASSERT_EQUAL(box.header.partition_count, 2);
    CU_ASSERT_EQUAL(box.partitions[0], 0);
    CU_ASSERT_EQUAL(box.partitions[1], 2);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 0).leo, 1);
    CU_ASSERT_EQUAL(h_state(&h, 1, 0, 2).leo, 1);
    /* acks=1: the request is answered once, every batch's answer in request
     * order, the one refused (the topic has no partition 5) among them. */
    struct h_client_box answers;
    memset(&answers, 0, sizeof answers);
    ks_world_set_receiver(h.env.world, KS_NODE_DRIVER, h_client_receive, &answers);
    static const int32_t with_unknown[] = { 0, 5, 2 };
    produce_bundle(&h, with_unknown, 3, KS_ACKS_LEADER);
    cf_run_for(&h, 50 * H_MS);
    CU_ASSERT_EQUAL_FATAL(answers.count, 1);
    CU_ASSERT_EQUAL_FATAL(answers.kind, KS_MSG_PRODUCE_RESPONSES);
    struct ks_produce_bundle bundle;
    memcpy(&bundle, answers.bytes, sizeof bundle);
    CU_ASSERT_EQUAL_FATAL(bundle.count, 3);
    CU_ASSERT_EQUAL(answers.byte_count, sizeof bundle + 3 * sizeof(struct ks_produce_response));
    static const int16_t errors[] = { KS_ERR_NONE, KS_ERR_UNKNOWN_TOPIC_OR_PARTITION, KS_ERR_NONE };
    static const int64_t offsets[] = { 1, -1, 1 };
    for (int32_t i = 0; i < 3; i++) {
        struct ks_produce_response response;
        memcpy(&response, answers.bytes + sizeof bundle + (size_t)i * sizeof response,
               sizeof response);
        CU_ASSERT_EQUAL(response.correlation_id, 500 + i);
        CU_ASSERT_EQUAL(response.partition, with_unknown[i]);
        CU_ASSERT_EQUAL(response.error_code, errors[i]);
        CU_ASSERT_EQUAL(response.base_offset, offsets[i]);
    }
    cf_free(&h);
}

/* KIP-227, follower side (FetchSessionHandler): after the first full fetch
 * broker 2 fetches incrementally in one session; when the leader loses it,
 * the next request is refused, the follower fetches in full again, gets a
 * new session, and replication goes on. */
static const struct ks__fetch_session *find_session(const struct ks_broker *broker, int32_t id)
{
    for (guint i = 0; broker->fetch_sessions != NULL && i < broker->fetch_sessions->len; i++) {
        const struct ks__fetch_session *session = g_ptr_array_index(broker->fetch_sessions, i);
        if (session->id == id) {
            return session;
        }
    }
    return NULL;
}

static void test_fetch_session_follower(void)
{
    static const int32_t assign[] = { 1, 2, 1, 2, 1, 2 };
    struct cluster_fixture h;
    cf_init(&h, 2);
    cf_topic(&h, "orders", 3, 2, 2, assign);
    cf_start(&h, 33);
    cf_run_until(&h, 2 * H_S);
    struct ks_broker *leader = ks_cluster_broker(h.cluster, 1);
    struct ks_broker *follower = ks_cluster_broker(h.cluster, 2);
    const struct ks__fetcher *fetcher = &follower->fetchers[0];
    int32_t id = fetcher->session_id;
    CU_ASSERT_NOT_EQUAL(id, 0);
    CU_ASSERT_TRUE(fetcher->session_epoch >= 2);
    /* A full request abandoned before its answer (the follower restarts its
     * fetch on each new leader epoch) leaves a session behind, as in Kafka,
     * until the cache evicts it. */
    const struct ks__fetch_session *session = find_session(leader, id);
    CU_ASSERT_PTR_NOT_NULL_FATAL(session);
    CU_ASSERT_EQUAL(session->partitions->len, 3);
    /* S7 of broker_serve.c: the serves cached each partition's replica. */
    for (guint i = 0; i < session->partitions->len; i++) {
        const struct ks__session_partition *part =
            &g_array_index(session->partitions, struct ks__session_partition, i);
        CU_ASSERT_PTR_NOT_NULL(part->replica);
        CU_ASSERT_PTR_EQUAL(
            part->replica,
            ks__broker_find_replica(leader, part->request.topic_index, part->request.partition));
    }
    /* Its request is parked there: the leader already counted its epoch. */
    CU_ASSERT_EQUAL(fetcher->state, KS__FETCHER_IN_FLIGHT);
    CU_ASSERT_EQUAL(session->epoch, fetcher->pending_epoch + 1);
    ks__serve_drop_sessions(leader);
    struct cf_append *a = h_append(&h, 1, 0, 0, KS_ACKS_ALL, "a");
    cf_run_for(&h, 50 * H_MS);
    CU_ASSERT_TRUE(a->done);
    CU_ASSERT_EQUAL(a->error, KS_ERR_NONE);
    cf_run_for(&h, 1 * H_S); /* the new session's id comes with the answer to the full fetch */
    CU_ASSERT_NOT_EQUAL(fetcher->session_id, 0);
    CU_ASSERT_NOT_EQUAL(fetcher->session_id, id);
    CU_ASSERT_EQUAL_FATAL(leader->fetch_sessions->len, 1);
    CU_ASSERT_PTR_NOT_NULL(find_session(leader, fetcher->session_id));
    cf_free(&h);
}

/* Every partition led by broker 1 and followed by broker 2. */
/* A controller push that makes a broker follower of many partitions of one
 * leader restarts that fetcher once, after the whole push
 * (ReplicaManager.makeFollowers, then one addFetcherForPartitions): one full
 * request, one session at the leader. Restarting per partition sent a full
 * request per partition, each abandoning the last (40 sessions here). */
static void test_push_restarts_fetcher_once(void)
{
    enum { PARTITIONS = 40 };
    struct cluster_fixture h;
    cf_init(&h, 2);
    topic_led_by_1(&h, PARTITIONS, 2);
    cf_start(&h, 35);
    cf_run_until(&h, 2 * H_S);
    struct ks_broker *leader = ks_cluster_broker(h.cluster, 1);
    struct ks_broker *follower = ks_cluster_broker(h.cluster, 2);
    CU_ASSERT_EQUAL(leader->fetch_session_count, 1);
    CU_ASSERT_EQUAL_FATAL(leader->fetch_sessions->len, 1);
    const struct ks__fetch_session *session =
        find_session(leader, follower->fetchers[0].session_id);
    CU_ASSERT_PTR_NOT_NULL_FATAL(session);
    CU_ASSERT_EQUAL(session->partitions->len, PARTITIONS);
    struct cf_append *a = h_append(&h, 1, 0, PARTITIONS - 1, KS_ACKS_ALL, "a");
    cf_run_for(&h, 50 * H_MS);
    CU_ASSERT_TRUE(a->done);
    CU_ASSERT_EQUAL(a->error, KS_ERR_NONE);
    cf_free(&h);
}

/* S5 of core/broker_serve.c: once a follower is caught up and nothing
 * changes, a serve of its session visits none of its partitions, yet each
 * of its fetches still counts as caught up for every quiet partition (no
 * ISR shrink however long the idle time), a fetch no longer made does not
 * (all of them shrink at the first check replica.lag.time.max.ms after the
 * follower was cut off), and a partition with new data wakes and sleeps
 * again. */
static void test_quiet_partitions(void)
{
    enum { PARTITIONS = 40 };
    struct cluster_fixture h;
    cf_init(&h, 2);
    h.cluster_config.replica_lag_ns_max = 10 * (int64_t)H_S;
    topic_led_by_1(&h, PARTITIONS, 1);
    cf_start(&h, 36);
    cf_run_until(&h, 10 * H_S);
    struct ks_broker *leader = ks_cluster_broker(h.cluster, 1);
    struct ks_broker *follower = ks_cluster_broker(h.cluster, 2);
    const struct ks__fetch_session *session =
        find_session(leader, follower->fetchers[0].session_id);
    CU_ASSERT_PTR_NOT_NULL_FATAL(session);
    CU_ASSERT_EQUAL(session->partitions->len, PARTITIONS);
    CU_ASSERT_EQUAL(session->awake->len, 0);
    for (int32_t p = 0; p < PARTITIONS; p++) {
        CU_ASSERT_TRUE(leader->replicas[0][p]->followers[0].quiet);
    }
    struct cf_append *a = h_append(&h, 1, 0, 7, KS_ACKS_ALL, "a");
    cf_run_for(&h, 50 * H_MS);
    CU_ASSERT_TRUE(a->done);
    CU_ASSERT_EQUAL(a->error, KS_ERR_NONE);
    cf_run_until(&h, 12 * H_S);
    CU_ASSERT_EQUAL(session->awake->len, 0);
    CU_ASSERT_TRUE(leader->replicas[0][7]->followers[0].quiet);
    CU_ASSERT_EQUAL(h_state(&h, 2, 0, 7).leo, 1);
    /* 22 s with the ISR checks every 5 s and no fetch visiting a partition
     * since about 3 s: none shrank. */
    cf_run_until(&h, 22 * H_S);
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_ISR_SHRINK), 0);
    ks_node_id one = 1;
    ks_node_id two = 2;
    ks_world_net_partition(h.env.world, &one, 1, &two, 1);
    /* A follower at the leader's LEO is caught up whenever it last fetched
     * (Replica.isCaughtUp): new data on every partition makes it lag. */
    cf_run_until(&h, 23 * H_S);
    for (int32_t p = 0; p < PARTITIONS; p++) {
        h_append(&h, 1, 0, p, KS_ACKS_LEADER, "b");
    }
    cf_run_until(&h, 40 * H_S);
    /* The last fetch served came at 21.5-22 s: the check at 30 s finds it
     * 8-8.5 s old, the one at 35 s 13-13.5 s; the AlterPartition takes
     * 1 ms to reach the controller. */
    CU_ASSERT_EQUAL(cf_count(&h, KS_EV_ISR_SHRINK), PARTITIONS);
    const struct cf_event *shrink = cf_find(&h, KS_EV_ISR_SHRINK, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(shrink);
    CU_ASSERT_EQUAL(shrink->at_ns, 35 * H_S + 1 * H_MS);
    cf_free(&h);
}

/* The partitions of topic 0 at the session's awake positions (S8 of
 * core/broker_serve.c), in order; returns how many. */
static guint awake_partitions(const struct ks__fetch_session *session, int32_t *out, guint max)
{
    guint count = 0;
    for (guint i = 0; i < session->awake->len && count < max; i++) {
        guint at = g_array_index(session->awake, guint, i);
        CU_ASSERT_TRUE_FATAL(at < session->partitions->len);
        out[count++] =
            g_array_index(session->partitions, struct ks__session_partition, at).request.partition;
    }
    return count;
}

/* S8 of core/broker_serve.c: a session keeps its awake partitions by
 * position, and a partition leaving the session before them or joining it
 * before them moves them along: the next serve visits the same partition
 * (it still has records for the follower, so it answers at once), not its
 * neighbour at the old position. */
static void test_session_awake_positions(void)
{
    enum { PARTITIONS = 8 };
    static const int32_t rest[] = { 1, 2, 3, 4, 5, 6, 7 };
    static const int64_t zeroes[] = { 0, 0, 0, 0, 0, 0, 0 };
    static const int32_t first[] = { 1 };
    static const int32_t zero[] = { 0 };
    struct cluster_fixture h;
    struct fetch_box box;
    captured_follower(&h, &box, PARTITIONS, 37);
    struct ks_broker *leader = ks_cluster_broker(h.cluster, 1);
    /* A session of partitions 1-7 (the full request parks, then answers
     * everything at max_wait), and an incremental fetch that finds them all
     * quiet and parks. */
    session_fetch(&h, 1002, 0, 0, rest, zeroes, 7);
    cf_run_for(&h, 600 * H_MS);
    int32_t count_before = box.count;
    CU_ASSERT_EQUAL_FATAL(box.header.partition_count, 7);
    int32_t id = box.header.session_id;
    CU_ASSERT_NOT_EQUAL_FATAL(id, 0);
    const struct ks__fetch_session *session = find_session(leader, id);
    CU_ASSERT_PTR_NOT_NULL_FATAL(session);
    CU_ASSERT_EQUAL(session->partitions->len, 7);
    session_fetch(&h, 1003, id, 1, NULL, NULL, 0);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL(box.count, count_before); /* parked: all quiet */
    CU_ASSERT_EQUAL(session->awake->len, 0);
    /* New data on partition 5 releases it; partition 5 (position 4) stays
     * awake: the follower has not fetched its records yet. */
    h_append(&h, 1, 0, 5, KS_ACKS_LEADER, "a");
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.count, count_before + 1);
    CU_ASSERT_EQUAL(box.partitions[0], 5);
    int32_t awake[8];
    CU_ASSERT_EQUAL_FATAL(awake_partitions(session, awake, 8), 1);
    CU_ASSERT_EQUAL(awake[0], 5);
    /* Partition 1 (position 0) leaves: partition 5 is at position 3 now,
     * and the next serve answers it at once. */
    session_fetch_forget(&h, 1004, id, 2, NULL, NULL, 0, first, 1);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL(session->partitions->len, 6);
    CU_ASSERT_EQUAL_FATAL(box.count, count_before + 2);
    CU_ASSERT_EQUAL(box.header.partition_count, 1);
    CU_ASSERT_EQUAL(box.partitions[0], 5);
    CU_ASSERT_TRUE(box.last.records_bytes > 0);
    CU_ASSERT_EQUAL_FATAL(awake_partitions(session, awake, 8), 1);
    CU_ASSERT_EQUAL(awake[0], 5);
    /* Partition 0 joins at position 0: partition 5 moves to position 4. */
    session_fetch_forget(&h, 1005, id, 3, zero, zeroes, 1, NULL, 0);
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL(session->partitions->len, 7);
    CU_ASSERT_EQUAL_FATAL(box.count, count_before + 3);
    CU_ASSERT_EQUAL(box.header.partition_count, 2);
    CU_ASSERT_EQUAL(box.partitions[0], 0);
    CU_ASSERT_EQUAL(box.partitions[1], 5);
    CU_ASSERT_EQUAL_FATAL(awake_partitions(session, awake, 8), 1);
    CU_ASSERT_EQUAL(awake[0], 5);
    ks_broker_check(leader);
    cf_free(&h);
}

/* S5 of core/broker_serve.c: a serve's visit list is the ascending union of
 * the awake positions (ascending) and the touched ones (any order, each
 * once), however it is made: kept sorted while short, through a bitmap
 * (on the stack, or on the heap past 16,384 positions) when longer. Checked
 * against a flag per position for sessions of every size around the word
 * and stack edges, with and without overlap between the two lists. */
static void test_session_visit_union(void)
{
    static const guint lengths[] = { 1, 2, 33, 63, 64, 65, 128, 200, 16383, 16384, 16385, 40000 };
    static const guint counts[] = { 0, 1, 5, 16, 17, 32, 33, 100, 1000 };
    uint64_t state = UINT64_C(0x9e3779b97f4a7c15);
    for (size_t l = 0; l < KS_ARRAY_COUNT(lengths); l++) {
        guint length = lengths[l];
        bool *in_awake = g_new0(bool, length);
        bool *in_touched = g_new0(bool, length);
        guint *awake = g_new(guint, length);
        guint *touched = g_new(guint, length);
        guint *out = g_new(guint, 2 * length);
        for (size_t a = 0; a < KS_ARRAY_COUNT(counts); a++) {
            for (size_t t = 0; t < KS_ARRAY_COUNT(counts); t++) {
                memset(in_awake, 0, length * sizeof *in_awake);
                memset(in_touched, 0, length * sizeof *in_touched);
                guint awake_count = 0;
                guint touched_count = 0;
                for (guint i = 0; i < counts[a] && i < length; i++) {
                    state = state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
                    in_awake[(guint)(state >> 33) % length] = true;
                }
                for (guint p = 0; p < length; p++) {
                    if (in_awake[p]) {
                        awake[awake_count++] = p;
                    }
                }
                for (guint i = 0; i < counts[t] && i < length; i++) {
                    state = state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
                    guint p = (guint)(state >> 33) % length;
                    if (!in_touched[p]) { /* touched: each once, in touch order */
                        in_touched[p] = true;
                        touched[touched_count++] = p;
                    }
                }
                guint count =
                    ks__serve_visit_union(awake, awake_count, touched, touched_count, length, out);
                guint expected = 0;
                bool same = true;
                for (guint p = 0; p < length; p++) {
                    if (in_awake[p] || in_touched[p]) {
                        same = same && expected < count && out[expected] == p;
                        expected++;
                    }
                }
                CU_ASSERT_EQUAL(count, expected);
                CU_ASSERT_TRUE(same);
            }
        }
        g_free(out);
        g_free(touched);
        g_free(awake);
        g_free(in_touched);
        g_free(in_awake);
    }
}

/* S9 of core/broker_serve.c: the replica a session holds knows its position
 * there, and a partition joining or leaving the session before it moves it
 * along: a touch (new data) then marks that very partition, and the parked
 * fetch it releases answers its records. -1: the session does not hold it. */
static int64_t session_ref_at(const struct ks_broker *leader, int32_t partition,
                              const struct ks__fetch_session *session)
{
    const struct ks__replica *replica = ks__broker_find_replica(leader, 0, partition);
    int64_t at = -1;
    for (uint32_t i = 0; replica != NULL && i < replica->session_ref_count; i++) {
        if (replica->session_refs[i].session == session) {
            CU_ASSERT_EQUAL(at, -1); /* once */
            at = replica->session_refs[i].at;
        }
    }
    return at;
}

static void test_session_touch_positions(void)
{
    enum { PARTITIONS = 8 };
    static const int32_t rest[] = { 2, 3, 4, 5, 6, 7 };
    static const int64_t zeroes[] = { 0, 0, 0, 0, 0, 0 };
    static const int32_t zero[] = { 0 };
    static const int32_t two[] = { 2 };
    struct cluster_fixture h;
    struct fetch_box box;
    captured_follower(&h, &box, PARTITIONS, 38);
    struct ks_broker *leader = ks_cluster_broker(h.cluster, 1);
    /* A session of partitions 2-7, all quiet after the first serves. */
    session_fetch(&h, 1002, 0, 0, rest, zeroes, 6);
    cf_run_for(&h, 600 * H_MS);
    int32_t id = box.header.session_id;
    CU_ASSERT_NOT_EQUAL_FATAL(id, 0);
    const struct ks__fetch_session *session = find_session(leader, id);
    CU_ASSERT_PTR_NOT_NULL_FATAL(session);
    CU_ASSERT_EQUAL(session_ref_at(leader, 5, session), 3);
    CU_ASSERT_EQUAL(session_ref_at(leader, 0, session), -1);
    /* Partition 0 joins at position 0: partition 5 moves to position 4. */
    session_fetch_forget(&h, 1003, id, 1, zero, zeroes, 1, NULL, 0);
    cf_run_for(&h, 600 * H_MS);
    CU_ASSERT_EQUAL_FATAL(session->partitions->len, 7);
    CU_ASSERT_EQUAL(session_ref_at(leader, 0, session), 0);
    CU_ASSERT_EQUAL(session_ref_at(leader, 5, session), 4);
    CU_ASSERT_EQUAL(session->touched->len, 0);
    session_fetch(&h, 1004, id, 2, NULL, NULL, 0);
    cf_run_for(&h, 5 * H_MS);
    int32_t count_before = box.count;
    CU_ASSERT_EQUAL(session->awake->len, 0); /* parked: all quiet */
    /* New data on partition 5 marks position 4 and releases the fetch. */
    h_append(&h, 1, 0, 5, KS_ACKS_LEADER, "a");
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.count, count_before + 1);
    CU_ASSERT_EQUAL(box.header.partition_count, 1);
    CU_ASSERT_EQUAL(box.partitions[0], 5);
    CU_ASSERT_TRUE(box.last.records_bytes > 0);
    CU_ASSERT_EQUAL(session->touched->len, 0);
    /* Partition 2 (position 1) leaves: partition 5 moves to position 3; the
     * follower takes its record, then parks with everything quiet again. */
    static const int32_t five[] = { 5 };
    static const int64_t one[] = { 1 };
    session_fetch_forget(&h, 1005, id, 3, five, one, 1, two, 1);
    cf_run_for(&h, 600 * H_MS);
    CU_ASSERT_EQUAL_FATAL(session->partitions->len, 6);
    CU_ASSERT_EQUAL(session_ref_at(leader, 2, session), -1);
    CU_ASSERT_EQUAL(session_ref_at(leader, 5, session), 3);
    session_fetch(&h, 1006, id, 4, NULL, NULL, 0);
    cf_run_for(&h, 5 * H_MS);
    count_before = box.count;
    CU_ASSERT_EQUAL(session->awake->len, 0);
    h_append(&h, 1, 0, 5, KS_ACKS_LEADER, "b");
    cf_run_for(&h, 5 * H_MS);
    CU_ASSERT_EQUAL_FATAL(box.count, count_before + 1);
    CU_ASSERT_EQUAL(box.partitions[0], 5);
    CU_ASSERT_TRUE(box.last.records_bytes > 0);
    ks_broker_check(leader);
    cf_free(&h);
}

/* F6 of core/broker_fetcher.c: each entry of the request list the
 * follower's fetcher built last has its replica's position there. */
static void check_fetch_hints(const struct ks_broker *follower, int32_t leader_id,
                              guint length_expected)
{
    const struct ks__fetcher *fetcher = &follower->fetchers[leader_id - 1];
    const GArray *list = fetcher->pending != NULL ? fetcher->pending : fetcher->session;
    CU_ASSERT_PTR_NOT_NULL_FATAL(list);
    CU_ASSERT_EQUAL(list->len, length_expected);
    for (guint i = 0; i < list->len; i++) {
        const struct ks_fetch_request_partition *entry =
            &g_array_index(list, struct ks_fetch_request_partition, i);
        const struct ks__replica *replica =
            ks__broker_find_replica(follower, entry->topic_index, entry->partition);
        CU_ASSERT_PTR_NOT_NULL_FATAL(replica);
        CU_ASSERT_EQUAL(replica->fetch_at, i);
    }
}

/* F6: a partition leaving the follower's request list between whole builds
 * (it backs off) moves the hints of the partitions after it, and one joining
 * it again (its backoff cleared before the fetcher's earliest backoff end,
 * so the build stays incremental) moves them back; an incremental build
 * finds every dirty partition at its hint. */
static void test_fetcher_list_hints(void)
{
    enum { PARTITIONS = 8 };
    struct cluster_fixture h;
    cf_init(&h, 2);
    topic_led_by_1(&h, PARTITIONS, 1);
    cf_start(&h, 39);
    cf_run_until(&h, 2 * H_S);
    struct ks_broker *follower = ks_cluster_broker(h.cluster, 2);
    CU_ASSERT_NOT_EQUAL_FATAL(follower->fetchers[0].session_id, 0);
    check_fetch_hints(follower, 1, PARTITIONS);
    /* Partition 3 backs off: the next request forgets it. */
    struct ks__replica *three = ks__broker_find_replica(follower, 0, 3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(three);
    three->fetch_backoff_until_ns = ks__broker_now_ns(follower) + 10 * H_S;
    ks__fetcher_touch(follower, three);
    h_append(&h, 1, 0, 7, KS_ACKS_LEADER, "a"); /* releases the parked fetch */
    cf_run_for(&h, 100 * H_MS);
    check_fetch_hints(follower, 1, PARTITIONS - 1);
    struct ks__replica *seven = ks__broker_find_replica(follower, 0, 7);
    CU_ASSERT_EQUAL(seven->fetch_at, PARTITIONS - 2);
    CU_ASSERT_EQUAL(ks__leo_of(seven), 1);
    /* Its backoff cleared early: the next incremental request adds it back. */
    three->fetch_backoff_until_ns = 0;
    ks__fetcher_touch(follower, three);
    h_append(&h, 1, 0, 7, KS_ACKS_LEADER, "b");
    cf_run_for(&h, 100 * H_MS);
    check_fetch_hints(follower, 1, PARTITIONS);
    CU_ASSERT_EQUAL(three->fetch_at, 3);
    CU_ASSERT_EQUAL(seven->fetch_at, PARTITIONS - 1);
    CU_ASSERT_EQUAL(ks__leo_of(seven), 2);
    h_append(&h, 1, 0, 3, KS_ACKS_LEADER, "c");
    cf_run_for(&h, 100 * H_MS);
    CU_ASSERT_EQUAL(ks__leo_of(three), 1);
    check_fetch_hints(follower, 1, PARTITIONS);
    ks_broker_check(follower);
    cf_free(&h);
}

void ks_test_register_replication(void)
{
    static const struct ks_test_case cases[] = {
        { "hw_advance", test_hw_advance },
        { "isr_shrink_expand_timing", test_isr_shrink_expand_timing },
        { "not_enough_replicas", test_not_enough_replicas },
        { "hw_min_isr_rule", test_hw_min_isr_rule },
        { "kip101_scenario1", test_kip101_scenario1 },
        { "kip101_scenario2", test_kip101_scenario2 },
        { "kip279_scenario", test_kip279_scenario },
        { "diverging_no_common_epoch", test_diverging_no_common_epoch },
        { "alter_partition_answers", test_alter_partition_answers },
        { "restart_recovery", test_restart_recovery },
        { "recovery_reports_loss", test_recovery_reports_loss },
        { "zombie_leader", test_zombie_leader },
        { "producer_acks_all_failover", test_producer_acks_all_failover },
        { "producer_acks1_loss", test_producer_acks1_loss },
        { "client_protocol", test_client_protocol },
        { "follower_learns_hw_after_its_fetch", test_follower_learns_hw_after_its_fetch },
        { "fetch_session_leader", test_fetch_session_leader },
        { "pending_produce_bookkeeping", test_pending_produce_bookkeeping },
        { "produce_request_appended_whole", test_produce_request_appended_whole },
        { "fetch_session_follower", test_fetch_session_follower },
        { "push_restarts_fetcher_once", test_push_restarts_fetcher_once },
        { "quiet_partitions", test_quiet_partitions },
        { "session_awake_positions", test_session_awake_positions },
        { "session_visit_union", test_session_visit_union },
        { "session_touch_positions", test_session_touch_positions },
        { "fetcher_list_hints", test_fetcher_list_hints },
    };
    KS_TEST_ADD_SUITE("core/replication", cases);
}
