/* tests/sim/test_cause.c: which event is named as the cause of a lost record
 * (sim/cause.h).
 *
 * Goal: the earliest qualifying event after the ack wins; a truncation
 * counts only on the acknowledging broker's partition; a power loss only of
 * that broker; a process crash is never a cause; an event just before the
 * ack (the answer was in flight) is used when nothing follows; consumer
 * crashes explain a group's skips. Method: a scenario with named faults, a
 * hand-made event list fed to the index, and outcomes whose answers are
 * known. */
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

static struct ks_record_outcome lost_record(int32_t partition, int32_t broker, ks_time_ns sent_ns,
                                            ks_time_ns acked_ns)
{
    struct ks_record_outcome o = { .producer_index = 0,
                                   .seq = 0,
                                   .topic_index = 0,
                                   .partition = partition,
                                   .offset = 5,
                                   .sent_ns = sent_ns,
                                   .acked_ns = acked_ns,
                                   .outcome = KS_OUTCOME_ACKED,
                                   .acked_broker = broker,
                                   .acked_leader_epoch = 0 };
    return o;
}

#define S (1000000000ULL)

static void test_cause_lost(void)
{
    struct ks_scenario *scenario = NULL;
    GError *error = NULL;
    CU_ASSERT_FATAL(ks_scenario_load_from_data("causes.ini", scenario_text, &scenario, &error));
    CU_ASSERT_EQUAL(ks_cause_fault_index(scenario, "fault kill: crash broker 2 (process crash)"),
                    1);
    CU_ASSERT_EQUAL(ks_cause_fault_index(scenario, "fault kill restart.after: restart"), -1);
    CU_ASSERT_EQUAL(ks_cause_fault_index(scenario, "fault nosuch: crash broker 2"), -1);
    struct ks_cause_index *index = ks_cause_index_new(scenario);
    ks_cause_index_add(index, 0, "topic_created", 0, -1, 0, 0, "orders-0");
    ks_cause_index_add(index, 1, "fault", 10 * S, 1, -1, -1,
                       "fault power: crash broker 1 (power loss)");
    ks_cause_index_add(index, 2, "fault", 12 * S, 2, -1, -1,
                       "fault kill: crash broker 2 (process crash)");
    ks_cause_index_add(index, 3, "truncation", 13 * S, 3, 0, 1, "broker 3 truncates orders-1");
    ks_cause_index_add(index, 4, "fault", 14 * S, -1, -1, -1, "fault stop-c1: crash consumer c1");
    ks_cause_index_add(index, 5, "unclean_election", 15 * S, 2, 0, 0, "orders-0 leader 2");
    ks_cause_index_add(index, 6, "truncation", 16 * S, 2, 0, 1, "broker 2 truncates orders-1");
    ks_cause_index_add(index, 7, "retention", 20 * S, 3, 0, 1, "orders-1 segments deleted");

    /* Broker 1 acked at 9 s: its power loss at 10 s. */
    struct ks_record_outcome o = lost_record(0, 1, 8 * S, 9 * S);
    struct ks_cause c = ks_cause_of_lost(index, &o);
    CU_ASSERT_STRING_EQUAL(c.cause, "power_loss");
    CU_ASSERT_EQUAL(c.event, 1);
    CU_ASSERT_EQUAL(c.at_ns, 10 * S);
    /* Broker 2 acked orders-0 at 11 s: its process crash is no cause; the
     * unclean election of orders-0 at 15 s is. */
    o = lost_record(0, 2, 10 * S, 11 * S);
    c = ks_cause_of_lost(index, &o);
    CU_ASSERT_STRING_EQUAL(c.cause, "unclean_election");
    CU_ASSERT_EQUAL(c.event, 5);
    /* Broker 2 acked orders-1 at 11 s: broker 3's truncation does not count,
     * its own at 16 s does. */
    o = lost_record(1, 2, 10 * S, 11 * S);
    c = ks_cause_of_lost(index, &o);
    CU_ASSERT_STRING_EQUAL(c.cause, "truncation");
    CU_ASSERT_EQUAL(c.event, 6);
    /* Broker 3 acked orders-1 at 17 s: retention at 20 s. */
    o = lost_record(1, 3, 17 * S, 17 * S);
    c = ks_cause_of_lost(index, &o);
    CU_ASSERT_STRING_EQUAL(c.cause, "retention");
    /* Acked at 21 s by broker 1, nothing after: the power loss at 10 s came
     * before the send, so it is not the cause either. */
    o = lost_record(0, 1, 21 * S, 21 * S);
    c = ks_cause_of_lost(index, &o);
    CU_ASSERT_PTR_NULL(c.cause);
    CU_ASSERT_EQUAL(c.event, -1);
    /* Sent at 9.5 s, the ack arrived at 10.5 s, after broker 1's power loss
     * at 10 s; a later event of the partition still comes first. */
    o = lost_record(0, 1, 9 * S + S / 2, 10 * S + S / 2);
    c = ks_cause_of_lost(index, &o);
    CU_ASSERT_STRING_EQUAL(c.cause, "unclean_election");
    /* The group of consumer c1 resumed at 18 s: its crash at 14 s. */
    int32_t consumer_group[1] = { 0 };
    CU_ASSERT_EQUAL(ks_cause_group_crash_before(index, consumer_group, 0, 18 * S), 4);
    CU_ASSERT_EQUAL(ks_cause_group_crash_before(index, consumer_group, 0, 13 * S), -1);
    ks_cause_index_free(index);
    ks_scenario_free(scenario);
}

/* An ack in flight: broker 1 answered, then lost power before the answer
 * arrived, and nothing else happens later. */
static void test_cause_in_flight(void)
{
    struct ks_scenario *scenario = NULL;
    CU_ASSERT_FATAL(ks_scenario_load_from_data("causes.ini", scenario_text, &scenario, NULL));
    struct ks_cause_index *index = ks_cause_index_new(scenario);
    ks_cause_index_add(index, 0, "fault", 10 * S, 1, -1, -1,
                       "fault power: crash broker 1 (power loss)");
    struct ks_record_outcome o = lost_record(0, 1, 9 * S + S / 2, 10 * S + 1000000);
    struct ks_cause c = ks_cause_of_lost(index, &o);
    CU_ASSERT_STRING_EQUAL(c.cause, "power_loss");
    CU_ASSERT_EQUAL(c.event, 0);
    ks_cause_index_free(index);
    ks_scenario_free(scenario);
}

void ks_test_register_cause(void)
{
    static const struct ks_test_case cases[] = {
        { "lost", test_cause_lost },
        { "in_flight", test_cause_in_flight },
    };
    KS_TEST_ADD_SUITE("sim/cause", cases);
}
