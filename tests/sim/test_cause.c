/* tests/sim/test_cause.c: which event is named as the cause of a lost record
 * (sim/cause.h).
 *
 * Goal: a lost record's cause is the event that removed its offset from the
 * replica that would have kept it, found by offsets and epochs, not the
 * nearest event in time: the follower's truncation before it was elected
 * (KIP-101 scenario 1), not the old leader's later one; an unclean election
 * of a replica that never had the record; the power loss whose recovery
 * emptied the replica later elected; an election before the record's epoch
 * began is not blamed; with acks=1 the acknowledging broker's truncation;
 * records without an offset (acks=0) fall back to time. Fault events count
 * by their fault field (a power loss, never a process crash), never by
 * text. Consumer crashes explain a group's skips.
 * Method: a scenario with named faults, hand-made events and log pictures
 * (sim/steps.h) fed to the index, and outcomes whose answers are known. */
#include "../../sim/cause.h"
#include "../testlib.h"

#include <string.h>

static const char scenario_text[] =
    "[scenario]\nname = causes\nduration = 30s\n"
    "[cluster]\nbrokers = 3\n"
    "[topic orders]\npartitions = 2\nreplication.factor = 3\n"
    "[producer p1]\ntopic = orders\n"
    "[consumer c1]\ngroup.id = g1\ntopic = orders\n"
    "[fault power]\nat = 10s\naction = crash\ntarget = 1\nmode = power\n"
    "[fault kill]\nat = 12s\naction = crash\ntarget = 2\n"
    "[fault stop-c1]\nat = 14s\naction = crash\ntarget = consumer(c1)\n";

#define S (1000000000ULL)

enum { FAULT_POWER = 0, FAULT_KILL = 1, FAULT_STOP_C1 = 2 };

static struct ks_record_outcome lost_record(int32_t partition, int64_t offset, int32_t broker,
                                            int32_t epoch, ks_time_ns sent_ns, ks_time_ns acked_ns)
{
    struct ks_record_outcome o = { .producer_index = 0,
                                   .seq = 0,
                                   .topic_index = 0,
                                   .partition = partition,
                                   .offset = offset,
                                   .sent_ns = sent_ns,
                                   .acked_ns = acked_ns,
                                   .outcome = KS_OUTCOME_ACKED,
                                   .acked_broker = broker,
                                   .acked_leader_epoch = epoch };
    return o;
}

/* One run event for the index; unset facts -1. */
static struct ks_cause_event event(int32_t number, const char *kind, ks_time_ns at_ns,
                                   int32_t broker, int32_t partition)
{
    return (struct ks_cause_event){ .event = number,
                                    .kind = kind,
                                    .at_ns = at_ns,
                                    .broker = broker,
                                    .topic_index = partition >= 0 ? 0 : -1,
                                    .partition = partition,
                                    .fault_index = -1,
                                    .leader_new = -1,
                                    .leader_epoch_new = -1,
                                    .offset_from = -1,
                                    .offset_to = -1,
                                    .leo_new = -1 };
}

/* A replica in a picture: broker, LEO (-1: offline) and up to two epoch
 * entries (epoch, start offset); a second epoch of -1 means one entry. */
struct replica {
    int32_t broker;
    int64_t leo;
    int32_t epoch_a;
    int64_t start_a;
    int32_t epoch_b;
    int64_t start_b;
};

/* Pictures orders-<partition> at event `number` with three replicas. */
static void picture(struct ks_steps *steps, int32_t number, ks_time_ns at_ns, int32_t partition,
                    const struct replica replicas[3])
{
    struct ks_step step = { .event = number,
                            .at_ns = at_ns,
                            .topic_index = 0,
                            .partition = partition,
                            .leader = -1,
                            .leader_epoch = -1 };
    ks_steps_begin(steps, &step);
    for (int32_t r = 0; r < 3; r++) {
        const struct replica *x = &replicas[r];
        struct ks_log_view view = { .broker = x->broker,
                                    .replica_index = r,
                                    .online = x->leo >= 0,
                                    .role = KS_ROLE_FOLLOWER,
                                    .leo = x->leo,
                                    .hw = x->leo,
                                    .log_start_offset = x->leo >= 0 ? 0 : -1,
                                    .leader_epoch = -1 };
        struct ks_epoch_entry entries[2] = { { x->epoch_a, x->start_a },
                                             { x->epoch_b, x->start_b } };
        int32_t count = x->leo < 0 ? 0 : (x->epoch_b >= 0 ? 2 : 1);
        ks_steps_add_view(steps, &view, entries, count);
    }
}

struct fixture {
    struct ks_scenario *scenario;
    struct ks_steps *steps;
    struct ks_cause_index *index;
};

static void fixture_init(struct fixture *f)
{
    f->scenario = NULL;
    CU_ASSERT_FATAL(ks_scenario_load_from_data("causes.ini", scenario_text, &f->scenario, NULL));
    f->steps = ks_steps_new();
    f->index = ks_cause_index_new(f->scenario, f->steps);
}

static void fixture_deinit(struct fixture *f)
{
    ks_cause_index_free(f->index);
    ks_steps_free(f->steps);
    ks_scenario_free(f->scenario);
}

static void expect_cause(const struct ks_cause *c, const char *cause, int32_t number)
{
    if (cause == NULL) {
        CU_ASSERT_PTR_NULL(c->cause);
    } else {
        CU_ASSERT_PTR_NOT_NULL_FATAL(c->cause);
        CU_ASSERT_STRING_EQUAL(c->cause, cause);
    }
    CU_ASSERT_EQUAL(c->event, number);
}

/* KIP-101 scenario 1 under high-watermark truncation: follower 2 truncates
 * to its HW 1168 after a restart, leader 1 dies, 2 is elected without
 * 1168..1499; broker 1 later truncates twice to follow it. The root cause
 * is broker 2's truncation, not broker 1's later ones. */
static void test_cause_follower_truncation_before_election(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_cause_event e = event(0, "truncation", 7 * S, 2, 0);
    e.offset_from = 1168;
    e.offset_to = 1500;
    picture(f.steps, 0, 7 * S, 0,
            (struct replica[3]){
                { 1, 1502, 0, 0, -1, 0 }, { 2, 1168, 0, 0, -1, 0 }, { 3, -1, 0, 0, -1, 0 } });
    ks_cause_index_add(f.index, &e);
    e = event(1, "leader_elected", 16 * S, 2, 0);
    e.leader_new = 2;
    e.leader_epoch_new = 1;
    picture(f.steps, 1, 16 * S, 0,
            (struct replica[3]){
                { 1, -1, 0, 0, -1, 0 }, { 2, 1168, 0, 0, -1, 0 }, { 3, -1, 0, 0, -1, 0 } });
    ks_cause_index_add(f.index, &e);
    e = event(2, "truncation", 22 * S, 1, 0);
    e.offset_from = 1292;
    e.offset_to = 1502;
    picture(f.steps, 2, 22 * S, 0,
            (struct replica[3]){
                { 1, 1292, 0, 0, -1, 0 }, { 2, 5000, 0, 0, 1, 1168 }, { 3, -1, 0, 0, -1, 0 } });
    ks_cause_index_add(f.index, &e);
    e = event(3, "truncation", 22 * S + 1, 1, 0);
    e.offset_from = 1172;
    e.offset_to = 1292;
    ks_cause_index_add(f.index, &e);

    struct ks_record_outcome o = lost_record(0, 1400, 1, 0, 5 * S, 5 * S + 10);
    struct ks_cause c = ks_cause_of_lost(f.index, &o);
    expect_cause(&c, "truncation", 0);
    CU_ASSERT_EQUAL(c.at_ns, 7 * S);
    o = lost_record(0, 1180, 1, 0, 5 * S, 5 * S + 10);
    c = ks_cause_of_lost(f.index, &o);
    expect_cause(&c, "truncation", 0);
    /* Below the truncation point: broker 2 kept it, the election lost
     * nothing; nothing removed it from broker 1 either. */
    o = lost_record(0, 1000, 1, 0, 5 * S, 5 * S + 10);
    c = ks_cause_of_lost(f.index, &o);
    expect_cause(&c, NULL, -1);
    fixture_deinit(&f);
}

/* An unclean election of broker 2, whose log ends at 100: records from 100
 * on are lost by it, even though broker 1 truncates them later. Records
 * below 100 broker 2 held: not blamed on the election. */
static void test_cause_unclean_election(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_cause_event e = event(0, "unclean_election", 20 * S, 2, 0);
    e.leader_new = 2;
    e.leader_epoch_new = 1;
    picture(f.steps, 0, 20 * S, 0,
            (struct replica[3]){
                { 1, -1, 0, 0, -1, 0 }, { 2, 100, 0, 0, -1, 0 }, { 3, -1, 0, 0, -1, 0 } });
    ks_cause_index_add(f.index, &e);
    e = event(1, "truncation", 25 * S, 1, 0);
    e.offset_from = 100;
    e.offset_to = 300;
    ks_cause_index_add(f.index, &e);
    struct ks_record_outcome o = lost_record(0, 150, 1, 0, 5 * S, 5 * S);
    struct ks_cause c = ks_cause_of_lost(f.index, &o);
    expect_cause(&c, "unclean_election", 0);
    o = lost_record(0, 50, 1, 0, 5 * S, 5 * S);
    c = ks_cause_of_lost(f.index, &o);
    expect_cause(&c, NULL, -1);
    fixture_deinit(&f);
}

/* Power loss of broker 1 (field fault_index, whatever a text would say):
 * its recovery finds an empty log (the files went back to what was
 * fsynced: no range known), and it is elected again. The cause is the
 * power loss, named by its fault event; a process crash of broker 2 at the
 * same time is no cause. */
static void test_cause_power_loss_by_fault_field(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_cause_event e = event(0, "fault", 10 * S, 1, -1);
    e.fault_index = FAULT_POWER;
    picture(f.steps, 0, 10 * S, 0,
            (struct replica[3]){
                { 1, 4978, 0, 0, -1, 0 }, { 2, 4978, 0, 0, -1, 0 }, { 3, 4978, 0, 0, -1, 0 } });
    ks_cause_index_add(f.index, &e);
    e = event(1, "fault", 10 * S, 2, -1);
    e.fault_index = FAULT_KILL;
    ks_cause_index_add(f.index, &e);
    e = event(2, "recovery", 15 * S, 1, 0);
    e.leo_new = 0;
    picture(f.steps, 2, 15 * S, 0,
            (struct replica[3]){
                { 1, 0, 0, 0, -1, 0 }, { 2, -1, 0, 0, -1, 0 }, { 3, -1, 0, 0, -1, 0 } });
    ks_cause_index_add(f.index, &e);
    e = event(3, "leader_elected", 21 * S, 1, 0);
    e.leader_new = 1;
    e.leader_epoch_new = 2;
    picture(f.steps, 3, 21 * S, 0,
            (struct replica[3]){
                { 1, 0, 0, 0, -1, 0 }, { 2, -1, 0, 0, -1, 0 }, { 3, -1, 0, 0, -1, 0 } });
    ks_cause_index_add(f.index, &e);
    struct ks_record_outcome o = lost_record(0, 4000, 1, 0, 8 * S, 8 * S);
    struct ks_cause c = ks_cause_of_lost(f.index, &o);
    expect_cause(&c, "power_loss", 0);
    CU_ASSERT_EQUAL(c.at_ns, 10 * S);
    /* acks=0: no offset, matched by time: the power loss of broker 1 after
     * the ack, never broker 2's process crash. */
    o = lost_record(0, -1, 1, -1, 8 * S, 8 * S);
    c = ks_cause_of_lost(f.index, &o);
    expect_cause(&c, "power_loss", 0);
    o = lost_record(0, -1, 2, -1, 8 * S, 8 * S);
    c = ks_cause_of_lost(f.index, &o);
    expect_cause(&c, NULL, -1);
    fixture_deinit(&f);
}

/* KIP-279's second range: broker 2 was elected into epoch 1 before it wrote
 * records of epoch 1 (that election lost nothing of them); then broker 1,
 * whose earlier truncation removed epoch-0 records at the same offsets, is
 * elected uncleanly without them. The unclean election is the cause, not
 * broker 1's truncation of other records at those offsets. */
static void test_cause_epochs_tell_records_apart(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_cause_event e = event(0, "leader_elected", 7 * S, 2, 0);
    e.leader_new = 2;
    e.leader_epoch_new = 1;
    picture(f.steps, 0, 7 * S, 0,
            (struct replica[3]){
                { 1, -1, 0, 0, -1, 0 }, { 2, 2285, 0, 0, -1, 0 }, { 3, -1, 0, 0, -1, 0 } });
    ks_cause_index_add(f.index, &e);
    e = event(1, "recovery", 8 * S, 1, 0);
    e.leo_new = 2395;
    picture(f.steps, 1, 8 * S, 0,
            (struct replica[3]){
                { 1, 2395, 0, 0, -1, 0 }, { 2, 3000, 0, 0, 1, 2285 }, { 3, -1, 0, 0, -1, 0 } });
    ks_cause_index_add(f.index, &e);
    e = event(2, "truncation", 8 * S + 3, 1, 0);
    e.offset_from = 730;
    e.offset_to = 2395;
    picture(f.steps, 2, 8 * S + 3, 0,
            (struct replica[3]){
                { 1, 730, 0, 0, -1, 0 }, { 2, 3000, 0, 0, 1, 2285 }, { 3, -1, 0, 0, -1, 0 } });
    ks_cause_index_add(f.index, &e);
    e = event(3, "unclean_election", 10 * S, 1, 0);
    e.leader_new = 1;
    e.leader_epoch_new = 2;
    picture(f.steps, 3, 10 * S, 0,
            (struct replica[3]){
                { 1, 730, 0, 0, -1, 0 }, { 2, -1, 0, 0, -1, 0 }, { 3, -1, 0, 0, -1, 0 } });
    ks_cause_index_add(f.index, &e);
    /* Epoch 1 at offset 2300, sent before broker 2's election. */
    struct ks_record_outcome o = lost_record(0, 2300, 2, 1, 6 * S, 7 * S + 100);
    struct ks_cause c = ks_cause_of_lost(f.index, &o);
    expect_cause(&c, "unclean_election", 3);
    /* Epoch 0 at offset 1000, which broker 1 held and truncated. */
    o = lost_record(0, 1000, 1, 0, 3 * S, 3 * S);
    c = ks_cause_of_lost(f.index, &o);
    expect_cause(&c, "truncation", 2);
    fixture_deinit(&f);
}

/* acks=1: broker 1 acknowledged, broker 2 (in the ISR, without the record)
 * was elected cleanly; the record was only ever on broker 1, whose
 * truncation removed it. Another broker's truncation does not count. */
static void test_cause_acks1_acknowledging_broker(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_cause_event e = event(0, "leader_elected", 10 * S, 2, 0);
    e.leader_new = 2;
    e.leader_epoch_new = 1;
    picture(f.steps, 0, 10 * S, 0,
            (struct replica[3]){
                { 1, -1, 0, 0, -1, 0 }, { 2, 500, 0, 0, -1, 0 }, { 3, 500, 0, 0, -1, 0 } });
    ks_cause_index_add(f.index, &e);
    e = event(1, "truncation", 19 * S, 3, 0);
    e.offset_from = 450;
    e.offset_to = 500;
    ks_cause_index_add(f.index, &e);
    e = event(2, "truncation", 20 * S, 1, 0);
    e.offset_from = 500;
    e.offset_to = 600;
    ks_cause_index_add(f.index, &e);
    struct ks_record_outcome o = lost_record(0, 550, 1, 0, 9 * S, 9 * S);
    struct ks_cause c = ks_cause_of_lost(f.index, &o);
    expect_cause(&c, "truncation", 2);
    fixture_deinit(&f);
}

/* The group of consumer c1 resumed at 18 s: its crash at 14 s, found by
 * the fault field. */
static void test_cause_group_crash(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_cause_event e = event(0, "fault", 14 * S, -1, -1);
    e.fault_index = FAULT_STOP_C1;
    ks_cause_index_add(f.index, &e);
    e = event(1, "fault", 15 * S, -1, -1); /* no fault field: not a fault of the scenario */
    ks_cause_index_add(f.index, &e);
    int32_t consumer_group[1] = { 0 };
    CU_ASSERT_EQUAL(ks_cause_group_crash_before(f.index, consumer_group, 0, 18 * S), 0);
    CU_ASSERT_EQUAL(ks_cause_group_crash_before(f.index, consumer_group, 0, 13 * S), -1);
    fixture_deinit(&f);
}

/* An ack in flight, no offset known: broker 1 answered, then lost power
 * before the answer arrived, and nothing else happens later. */
static void test_cause_in_flight(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_cause_event e = event(0, "fault", 10 * S, 1, -1);
    e.fault_index = FAULT_POWER;
    ks_cause_index_add(f.index, &e);
    struct ks_record_outcome o = lost_record(0, -1, 1, -1, 9 * S + S / 2, 10 * S + 1000000);
    struct ks_cause c = ks_cause_of_lost(f.index, &o);
    expect_cause(&c, "power_loss", 0);
    fixture_deinit(&f);
}

void ks_test_register_cause(void)
{
    static const struct ks_test_case cases[] = {
        { "follower_truncation_before_election", test_cause_follower_truncation_before_election },
        { "unclean_election", test_cause_unclean_election },
        { "power_loss_by_fault_field", test_cause_power_loss_by_fault_field },
        { "epochs_tell_records_apart", test_cause_epochs_tell_records_apart },
        { "acks1_acknowledging_broker", test_cause_acks1_acknowledging_broker },
        { "group_crash", test_cause_group_crash },
        { "in_flight", test_cause_in_flight },
    };
    KS_TEST_ADD_SUITE("sim/cause", cases);
}
