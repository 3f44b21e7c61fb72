/* tests/sim/test_narrate.c: the narration of model events (suite "sim/narrate").
 *
 * Goal: the timeline and --explain texts come from the events' typed fields
 * alone, exactly (the golden timelines check whole runs; this checks single
 * events), and nothing is cut however long the names and lists are.
 * Method: hand-built events against a small hand-built spec; the expected
 * strings are written out in full. Long inputs (a 16-member ISR, long topic
 * and producer names, a rebalance with many causes) must appear whole. */
#include "../../sim/narrate.h"

#include "../testlib.h"

#include <string.h>

struct spec_fixture {
    struct ks_cluster_config cluster;
    struct ks_topic_config topics[1];
    struct ks_producer_config producers[6];
    struct ks_consumer_config consumers[1];
    struct ks_cluster_spec spec;
};

static void fixture_init(struct spec_fixture *f, const char *topic, int32_t producer_count)
{
    memset(f, 0, sizeof *f);
    f->cluster.broker_count = 3;
    f->cluster.truncation = KS_TRUNCATION_LEADER_EPOCH;
    f->cluster.hw_requires_min_isr = true;
    g_strlcpy(f->topics[0].name, topic, sizeof f->topics[0].name);
    f->topics[0].partition_count = 1;
    f->topics[0].replication_factor = 3;
    f->topics[0].min_insync_replicas = 2;
    for (int32_t i = 0; i < producer_count; i++) {
        g_snprintf(f->producers[i].name, sizeof f->producers[i].name,
                   "producer-with-a-rather-long-name-that-fills-its-whole-field-%d", i);
        f->producers[i].topic_index = 0;
        f->producers[i].acks = i % 2 == 0 ? KS_ACKS_LEADER : KS_ACKS_NONE;
    }
    g_strlcpy(f->consumers[0].name, "c1", sizeof f->consumers[0].name);
    g_strlcpy(f->consumers[0].group_id, "g1", sizeof f->consumers[0].group_id);
    f->spec = (struct ks_cluster_spec){
        .cluster = &f->cluster,
        .topics = f->topics,
        .topic_count = 1,
        .producers = f->producers,
        .producer_count = producer_count,
        .consumers = f->consumers,
        .consumer_count = 1,
    };
}

struct texts {
    GString *detail;
    GString *explain;
};

static struct texts narrate(const struct spec_fixture *f, const struct ks_cluster_event *event)
{
    struct texts t = { g_string_new("stale"), g_string_new("stale") };
    ks_narrate_event(&f->spec, event, t.detail, t.explain);
    return t;
}

static void texts_free(struct texts *t)
{
    g_string_free(t->detail, TRUE);
    g_string_free(t->explain, TRUE);
}

/* An event of `kind` by broker `broker` about orders-0. */
static struct ks_cluster_event tp_event(enum ks_cluster_event_kind kind,
                                        enum ks_event_reason reason, int32_t broker)
{
    struct ks_cluster_event e;
    ks_cluster_event_init(&e, 0, kind);
    e.reason = reason;
    e.broker = broker;
    e.topic_index = 0;
    e.partition = 0;
    return e;
}

static void test_reason_names(void)
{
    for (int r = 0; r < KS_REASON_COUNT; r++) {
        const char *name = ks_event_reason_name((enum ks_event_reason)r);
        CU_ASSERT_STRING_NOT_EQUAL(name, "unknown");
        for (int q = 0; q < r; q++) {
            CU_ASSERT_STRING_NOT_EQUAL(name, ks_event_reason_name((enum ks_event_reason)q));
        }
    }
    CU_ASSERT_STRING_EQUAL(ks_event_reason_name(KS_REASON_COUNT), "unknown");
}

static void test_truncation_texts(void)
{
    struct spec_fixture f;
    fixture_init(&f, "orders", 0);
    struct ks_cluster_event e = tp_event(KS_EV_TRUNCATION, KS_REASON_TRUNCATE_TO_HIGH_WATERMARK, 2);
    e.offset = 5;
    e.leo_old = 8;
    e.leo_new = 5;
    e.hw_old = 5;
    struct texts t = narrate(&f, &e);
    CU_ASSERT_STRING_EQUAL(t.detail->str, "broker 2 truncates orders-0 to 5 (its high watermark), "
                                          "dropping offsets 5..7");
    CU_ASSERT(g_str_has_prefix(t.explain->str, "Broker 2 truncates orders-0 to offset 5, "
                                               "dropping 3 record(s) from its log. "
                                               "replication.truncation = high-watermark"));
    CU_ASSERT_PTR_NOT_NULL(strstr(t.explain->str, "its own high watermark, 5."));
    texts_free(&t);
    /* One offset: the singular form. */
    e.leo_old = 6;
    t = narrate(&f, &e);
    CU_ASSERT(g_str_has_suffix(t.detail->str, "dropping offset 5"));
    texts_free(&t);
}

/* Diverging epoch with committed records dropped, a topic name of the
 * longest kind and six acks<all producers with long names: four are named,
 * the rest counted, and nothing is cut. */
static void test_diverging_truncation_is_not_cut(void)
{
    struct spec_fixture f;
    char topic[KS_TOPIC_NAME_BYTES_MAX + 1];
    memset(topic, 't', KS_TOPIC_NAME_BYTES_MAX);
    topic[KS_TOPIC_NAME_BYTES_MAX] = '\0';
    fixture_init(&f, topic, 6);
    struct ks_cluster_event e = tp_event(KS_EV_TRUNCATION, KS_REASON_TRUNCATE_DIVERGING_EPOCH, 1);
    e.leader_new = 3;
    e.diverging_epoch = 4;
    e.diverging_end_offset = 10;
    e.offset = 10;
    e.leo_old = 20;
    e.leo_new = 10;
    e.hw_old = 15;
    struct texts t = narrate(&f, &e);
    g_autofree char *expected = g_strdup_printf("broker 1 truncates %s-0 to 10 (leader 3 epoch 4 "
                                                "ends at 10), dropping offsets 10..19",
                                                topic);
    CU_ASSERT_STRING_EQUAL(t.detail->str, expected); /* longer than the old 256-byte line */
    CU_ASSERT_PTR_NOT_NULL(strstr(t.explain->str, "Offsets 10..14 were below this replica's high "
                                                  "watermark (15)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(t.explain->str, " It has no sign that 15..19 were committed."));
    CU_ASSERT_PTR_NOT_NULL(strstr(t.explain->str,
                                  "producer-with-a-rather-long-name-that-fills-its-whole-field-0 "
                                  "(acks=1), "
                                  "producer-with-a-rather-long-name-that-fills-its-whole-field-1 "
                                  "(acks=0), "
                                  "producer-with-a-rather-long-name-that-fills-its-whole-field-2 "
                                  "(acks=1), "
                                  "producer-with-a-rather-long-name-that-fills-its-whole-field-3 "
                                  "(acks=0) and more do not"));
    CU_ASSERT(g_str_has_suffix(t.explain->str, "are lost all the same."));
    CU_ASSERT(t.explain->len > 1400); /* the old fixed 1400-byte buffer would have cut it */
    texts_free(&t);
}

static void test_election_lists_are_whole(void)
{
    struct spec_fixture f;
    fixture_init(&f, "orders", 0);
    struct ks_cluster_event e = tp_event(KS_EV_UNCLEAN_ELECTION, KS_REASON_SESSION_EXPIRED, 99);
    e.leader_new = 99;
    e.leader_epoch_new = 12;
    for (int32_t i = 0; i < KS_REPLICATION_FACTOR_MAX; i++) {
        e.isr_old[i] = 1000 + i;
    }
    e.isr_old_count = KS_REPLICATION_FACTOR_MAX;
    e.isr_new[0] = 99;
    e.isr_new_count = 1;
    struct texts t = narrate(&f, &e);
    CU_ASSERT_STRING_EQUAL(t.detail->str,
                           "orders-0 unclean leader 99 epoch 12 isr 99 (old isr "
                           "1000,1001,1002,1003,1004,1005,1006,1007,1008,1009,1010,1011,1012,"
                           "1013,1014,1015; no heartbeat within broker.session.timeout.ms)");
    texts_free(&t);
    e.kind = KS_EV_NO_LEADER;
    e.isr_new_count = 0;
    t = narrate(&f, &e);
    CU_ASSERT_STRING_EQUAL(t.detail->str, "orders-0 no leader (isr (none); no heartbeat within "
                                          "broker.session.timeout.ms)");
    texts_free(&t);
}

static void test_isr_shrink_consequence(void)
{
    static const int32_t before[] = { 1, 2, 3 };
    static const int32_t after[] = { 1 };
    struct spec_fixture f;
    fixture_init(&f, "orders", 0);
    struct ks_cluster_event e = tp_event(KS_EV_ISR_SHRINK, KS_REASON_FOLLOWER_LAGGING, 1);
    e.leader_new = 1;
    e.isr_old_count = ks_cluster_event_set_list(e.isr_old, before, 3);
    e.isr_new_count = ks_cluster_event_set_list(e.isr_new, after, 1);
    e.isr_count_min = 2;
    struct texts t = narrate(&f, &e);
    CU_ASSERT_STRING_EQUAL(t.detail->str, "orders-0 isr 1,2,3 -> 1 (leader 1)");
    CU_ASSERT_STRING_EQUAL(t.explain->str,
                           "Leader 1 of orders-0 found followers that have not caught up for "
                           "replica.lag.time.max.ms and asks the controller to drop them: the "
                           "ISR becomes 1. The high watermark no longer waits for them. The ISR "
                           "is now smaller than min.insync.replicas (2), so acks=all writes are "
                           "refused until it grows back, and the high watermark stops advancing "
                           "(Kafka 3.7+, KAFKA-15583).");
    texts_free(&t);
}

/* Ten causes: the old 192-byte reason buffer kept about five. */
static void test_rebalance_causes_are_whole(void)
{
    struct spec_fixture f;
    fixture_init(&f, "orders", 0);
    static const struct ks_event_tp assignment[] = { { 0, 0 } };
    char ids[10][16];
    struct ks_event_cause causes[10];
    for (int i = 0; i < 10; i++) {
        g_snprintf(ids[i], sizeof ids[i], "c%d-1", i);
        causes[i].member_id = ids[i];
        causes[i].reason = i % 2 == 0 ? KS_REASON_MEMBER_JOINED : KS_REASON_MEMBER_LEFT;
    }
    struct ks_event_member members[] = { { "c0-1", assignment, 1 }, { "c2-1", NULL, 0 } };
    struct ks_cluster_event e;
    ks_cluster_event_init(&e, 0, KS_EV_REBALANCE);
    e.broker = 2;
    e.group_id = "g1";
    e.generation = 7;
    e.assignor = KS_ASSIGNOR_RANGE;
    e.group_leader_id = "c0-1";
    e.offsets_partition = 41;
    e.members = members;
    e.member_count = 2;
    e.causes = causes;
    e.cause_count = 10;
    e.suppressed_count = 3;
    struct texts t = narrate(&f, &e);
    CU_ASSERT_STRING_EQUAL(t.detail->str, "group g1 generation 7 range: c0-1=orders-0 c2-1=none");
    CU_ASSERT_PTR_NOT_NULL(strstr(t.explain->str,
                                  "(it leads __consumer_offsets-41), completed a rebalance "
                                  "because member c0-1 joined; then member c1-1 left; then "
                                  "member c2-1 joined; then member c3-1 left; then member c4-1 "
                                  "joined; then member c5-1 left; then member c6-1 joined; then "
                                  "member c7-1 left; then member c8-1 joined; then member c9-1 "
                                  "left; then 3 more: generation 7 has 2 member(s); the leader "
                                  "c0-1 assigned the partitions with the range assignor."));
    texts_free(&t);
}

/* KIP-966: the ELR facts reach the timeline line and --explain; without them
 * (ELR off) the texts carry no ELR words at all. */
static void test_elr_texts(void)
{
    struct spec_fixture f;
    fixture_init(&f, "orders", 0);
    f.cluster.eligible_leader_replicas_enable = true;
    /* Fencing takes the ISR below min ISR: the fenced broker becomes eligible. */
    struct ks_cluster_event e = tp_event(KS_EV_ISR_SHRINK, KS_REASON_BROKER_FENCED, 2);
    e.leader_new = 3;
    e.isr_old_count = 2;
    e.isr_old[0] = 3;
    e.isr_old[1] = 2;
    e.isr_new_count = 1;
    e.isr_new[0] = 3;
    e.isr_count_min = 2;
    e.elr_new_count = 1;
    e.elr_new[0] = 2;
    struct texts t = narrate(&f, &e);
    CU_ASSERT_STRING_EQUAL(t.detail->str,
                           "orders-0 isr 3,2 -> 3 (broker 2 fenced) elr (none) -> 2");
    CU_ASSERT_PTR_NOT_NULL(strstr(t.explain->str, "Broker 2 leaves the ISR while it is below "
                                                  "min.insync.replicas (2)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(t.explain->str, "keeps it as an eligible leader replica (ELR now "
                                                  "2; KIP-966)."));
    CU_ASSERT_PTR_NULL(strstr(t.explain->str, "LastKnownElr"));
    texts_free(&t);
    /* The last member goes: the ISR empties and the leader is remembered. */
    e.broker = 3;
    e.isr_old_count = 1;
    e.isr_old[0] = 3;
    e.isr_new_count = 0;
    e.elr_old_count = 1;
    e.elr_old[0] = 2;
    e.elr_new_count = 2;
    e.elr_new[1] = 3;
    e.last_known_leader = 3;
    t = narrate(&f, &e);
    CU_ASSERT_STRING_EQUAL(t.detail->str, "orders-0 isr 3 -> (none) (broker 3 fenced) elr 2 -> "
                                          "2,3 last known leader 3");
    CU_ASSERT_PTR_NOT_NULL(strstr(t.explain->str, "which becomes empty."));
    CU_ASSERT_PTR_NOT_NULL(strstr(t.explain->str, "remembers broker 3, the leader when it "
                                                  "emptied, as LastKnownElr"));
    texts_free(&t);
    /* An election from the ELR. */
    struct ks_cluster_event won = tp_event(KS_EV_LEADER_ELECTED, KS_REASON_REPLICA_BACK, 2);
    won.leader_new = 2;
    won.leader_epoch_new = 3;
    won.isr_new_count = 1;
    won.isr_new[0] = 2;
    won.elr_old_count = 1;
    won.elr_old[0] = 2;
    won.elected_from = KS_ELECTED_FROM_ELR;
    t = narrate(&f, &won);
    CU_ASSERT_STRING_EQUAL(t.detail->str, "orders-0 leader 2 epoch 3 isr 2 (a replica came back; "
                                          "from the ELR) elr 2 -> (none)");
    CU_ASSERT(g_str_has_prefix(t.explain->str, "The ISR of orders-0 is empty, so the controller "
                                               "elects from its eligible leader replicas"));
    CU_ASSERT_PTR_NOT_NULL(strstr(t.explain->str, "(ELR: now empty)"));
    texts_free(&t);
    /* The last known leader: an unclean election. */
    struct ks_cluster_event lkl = tp_event(KS_EV_UNCLEAN_ELECTION, KS_REASON_REPLICA_BACK, 3);
    lkl.leader_new = 3;
    lkl.leader_epoch_new = 4;
    lkl.isr_new_count = 1;
    lkl.isr_new[0] = 3;
    lkl.elected_from = KS_ELECTED_FROM_LAST_KNOWN_LEADER;
    t = narrate(&f, &lkl);
    CU_ASSERT_STRING_EQUAL(t.detail->str, "orders-0 unclean leader 3 epoch 4 isr 3 (old isr "
                                          "(none); a replica came back; last known leader)");
    CU_ASSERT_PTR_NOT_NULL(strstr(t.explain->str, "elects broker 3, the last known leader"));
    texts_free(&t);
    /* A restarted broker leaves the ELR alone. */
    struct ks_cluster_event left = tp_event(KS_EV_ELR_CHANGE, KS_REASON_UNCLEAN_SHUTDOWN, 3);
    left.elr_old_count = 2;
    left.elr_old[0] = 2;
    left.elr_old[1] = 3;
    left.elr_new_count = 1;
    left.elr_new[0] = 2;
    t = narrate(&f, &left);
    CU_ASSERT_STRING_EQUAL(t.detail->str, "orders-0 elr 2,3 -> 2 (restarted: a new incarnation "
                                          "leaves the ISR and ELR)");
    CU_ASSERT(g_str_has_prefix(t.explain->str, "Broker 3 registered a new incarnation, which the "
                                               "controller takes as an unclean shutdown"));
    texts_free(&t);
    /* Without ELR facts nothing about them is said. */
    f.cluster.eligible_leader_replicas_enable = false;
    struct ks_cluster_event plain = tp_event(KS_EV_ISR_SHRINK, KS_REASON_BROKER_FENCED, 2);
    plain.leader_new = 3;
    plain.isr_old_count = 2;
    plain.isr_old[0] = 3;
    plain.isr_old[1] = 2;
    plain.isr_new_count = 1;
    plain.isr_new[0] = 3;
    plain.isr_count_min = 2;
    t = narrate(&f, &plain);
    CU_ASSERT_STRING_EQUAL(t.detail->str, "orders-0 isr 3,2 -> 3 (broker 2 fenced)");
    CU_ASSERT_PTR_NULL(strstr(t.explain->str, "ELR"));
    CU_ASSERT_PTR_NULL(strstr(t.explain->str, "eligible"));
    texts_free(&t);
}

/* A controller crash is an outage and its return restarts broker sessions
 * (ClusterControlManager.activate): the texts say so, not "ignored". */
static void test_controller_outage_texts(void)
{
    struct spec_fixture f;
    fixture_init(&f, "orders", 0);
    struct ks_cluster_event e;
    ks_cluster_event_init(&e, 10, KS_EV_INFO);
    e.reason = KS_REASON_CONTROLLER_DOWN;
    struct texts t = narrate(&f, &e);
    CU_ASSERT_STRING_EQUAL(t.detail->str, "controller down: no active controller");
    CU_ASSERT_PTR_NOT_NULL(strstr(t.explain->str, "no other to take over"));
    CU_ASSERT_PTR_NULL(strstr(t.explain->str, "ignored"));
    texts_free(&t);
    e.reason = KS_REASON_CONTROLLER_BACK;
    t = narrate(&f, &e);
    CU_ASSERT_STRING_EQUAL(t.detail->str, "controller back: active again, broker sessions restart");
    CU_ASSERT_PTR_NOT_NULL(strstr(t.explain->str, "ClusterControlManager.activate"));
    texts_free(&t);
}

static void test_every_kind_has_a_line(void)
{
    struct spec_fixture f;
    fixture_init(&f, "orders", 1);
    for (int k = 0; k < KS_EV_KIND_COUNT; k++) {
        struct ks_cluster_event e =
            tp_event((enum ks_cluster_event_kind)k, KS_REASON_SESSION_EXPIRED, 1);
        e.producer_index = 0;
        e.consumer_index = 0;
        e.group_id = "g1";
        e.group_leader_id = "c1-1";
        if (k == KS_EV_PRODUCER_ERROR) {
            e.reason = KS_REASON_DELIVERY_TIMEOUT;
        } else if (k == KS_EV_OFFSET_RESET) {
            e.reason = KS_REASON_NO_COMMITTED_OFFSET;
        } else if (k == KS_EV_INFO) {
            e.reason = KS_REASON_CONTROLLER_DOWN;
        }
        struct texts t = narrate(&f, &e);
        CU_ASSERT(t.detail->len > 0);
        CU_ASSERT_PTR_NULL(strstr(t.detail->str, "stale"));
        if (k != KS_EV_BROKER_STARTED) {
            CU_ASSERT(t.explain->len > 0);
        } else {
            CU_ASSERT_EQUAL(t.explain->len, 0); /* a start needs no explanation */
        }
        texts_free(&t);
    }
}

/* KIP-101 scenario 1 at offset scale: leader 1 (epoch 0) holds m0, m1 with
 * HW 2; follower 2 restarted and truncated m1 to its HW 1. Short logs get
 * two columns per offset with the HW in the gap before its offset; the
 * dropped offset shows as 'x'; a down broker shows the last log it was seen
 * with. */
static void test_log_picture(void)
{
    struct spec_fixture f;
    fixture_init(&f, "t", 1);
    struct ks_steps *steps = ks_steps_new();
    struct ks_epoch_entry epoch0[1] = { { 0, 0 } };
    struct ks_step step = { .event = 3, .topic_index = 0, .partition = 0, .leader = 1 };
    ks_steps_begin(steps, &step);
    struct ks_log_view leader = { .broker = 1,
                                  .replica_index = 0,
                                  .online = true,
                                  .broker_up = true,
                                  .role = KS_ROLE_LEADER,
                                  .leo = 2,
                                  .hw = 2,
                                  .log_start_offset = 0,
                                  .leader_epoch = 0 };
    struct ks_log_view follower = { .broker = 2,
                                    .replica_index = 1,
                                    .online = true,
                                    .broker_up = true,
                                    .role = KS_ROLE_FOLLOWER,
                                    .leo = 1,
                                    .hw = 1,
                                    .log_start_offset = 0,
                                    .leader_epoch = 0 };
    struct ks_log_view third = { .broker = 3,
                                 .replica_index = 2,
                                 .online = false,
                                 .broker_up = false,
                                 .leo = -1,
                                 .hw = -1,
                                 .log_start_offset = -1,
                                 .leader_epoch = -1 };
    ks_steps_add_view(steps, &leader, epoch0, 1);
    ks_steps_add_view(steps, &follower, epoch0, 1);
    ks_steps_add_view(steps, &third, NULL, 0);
    GString *out = g_string_new(NULL);
    ks_narrate_log_picture(&f.spec, steps, ks_steps_get(steps, 0), 2, 1, 2, "    ", out);
    CU_ASSERT_STRING_EQUAL(out->str,
                           "    t-0, offsets 0..2 (digit: the leader epoch of each offset; |: HW; "
                           "x: dropped now):\n"
                           "      broker 1   leader     0 0|.   HW 2 LEO 2\n"
                           "      broker 2   follower   0|x .   HW 1 LEO 1\n"
                           "      broker 3   down      -\n");
    /* A later step: broker 2 leads in epoch 1 with m2 at offset 1; broker 1
     * is down and is drawn from its last picture. */
    struct ks_step later = { .event = 7, .topic_index = 0, .partition = 0, .leader = 2 };
    ks_steps_begin(steps, &later);
    struct ks_epoch_entry epochs[2] = { { 0, 0 }, { 1, 1 } };
    leader.online = false;
    leader.broker_up = false;
    follower.role = KS_ROLE_LEADER;
    follower.leo = 2;
    follower.hw = 2;
    ks_steps_add_view(steps, &leader, NULL, 0);
    ks_steps_add_view(steps, &follower, epochs, 2);
    ks_steps_add_view(steps, &third, NULL, 0);
    g_string_truncate(out, 0);
    ks_narrate_log_picture(&f.spec, steps, ks_steps_get(steps, 1), -1, -1, -1, "", out);
    CU_ASSERT_STRING_EQUAL(out->str,
                           "t-0, offsets 0..2 (digit: the leader epoch of each offset; |: HW; x: "
                           "dropped now):\n"
                           "  broker 1   down      last seen with HW 2, LEO 2\n"
                           "  broker 2   leader     0 1|.   HW 2 LEO 2\n"
                           "  broker 3   down      -\n");
    g_string_free(out, TRUE);
    ks_steps_free(steps);
}

void ks_test_register_narrate(void)
{
    static const struct ks_test_case cases[] = {
        { "reason_names", test_reason_names },
        { "truncation_texts", test_truncation_texts },
        { "diverging_truncation_is_not_cut", test_diverging_truncation_is_not_cut },
        { "election_lists_are_whole", test_election_lists_are_whole },
        { "isr_shrink_consequence", test_isr_shrink_consequence },
        { "rebalance_causes_are_whole", test_rebalance_causes_are_whole },
        { "elr_texts", test_elr_texts },
        { "controller_outage_texts", test_controller_outage_texts },
        { "every_kind_has_a_line", test_every_kind_has_a_line },
        { "log_picture", test_log_picture },
    };
    KS_TEST_ADD_SUITE("sim/narrate", cases);
}
