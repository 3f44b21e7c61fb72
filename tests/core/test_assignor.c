/* tests/core/test_assignor.c: the range, round-robin and sticky assignors.
 * Goal: each assignor reproduces Kafka's documented examples (RangeAssignor,
 * RoundRobinAssignor and StickyAssignor javadocs) and keeps its properties on
 * many shapes: every partition gets exactly one subscribed owner, counts are
 * balanced where the assignor promises it, and sticky keeps previous owners.
 * Method: pure calls on small arrays; members are passed out of id order to
 * check that the assignors order them by member id themselves. */
#include <stdio.h>
#include <string.h>

#include "../../core/assignor.h"
#include "../testlib.h"

#define MEMBERS_MAX 16
#define SLOTS_MAX   256

/* Owner name of partition p of topic t, e.g. "C0", or "-" */
static const char *owner_of(const struct ks_assignor_topic *topics,
                            const struct ks_assignor_member *members, const int32_t *owner,
                            int32_t t, int32_t p)
{
    int32_t o = owner[ks_assignor_slot(topics, t, p)];
    return o < 0 ? "-" : members[o].member_id;
}

static int32_t count_of(const int32_t *owner, int32_t slot_count, int32_t member)
{
    int32_t n = 0;
    for (int32_t s = 0; s < slot_count; s++) {
        n += owner[s] == member;
    }
    return n;
}

static void test_range_documented_example(void)
{
    /* RangeAssignor javadoc: C0, C1; t0, t1 with 3 partitions each. */
    struct ks_assignor_topic topics[] = { { "t0", 3 }, { "t1", 3 } };
    int32_t both[] = { 0, 1 };
    /* Passed as C1, C0: the assignor must order them itself. */
    struct ks_assignor_member members[] = {
        { "C1", both, 2, NULL, 0, -1 },
        { "C0", both, 2, NULL, 0, -1 },
    };
    int32_t owner[6];
    ks_assignor_assign(KS_ASSIGNOR_RANGE, topics, 2, members, 2, owner);
    CU_ASSERT_STRING_EQUAL(owner_of(topics, members, owner, 0, 0), "C0");
    CU_ASSERT_STRING_EQUAL(owner_of(topics, members, owner, 0, 1), "C0");
    CU_ASSERT_STRING_EQUAL(owner_of(topics, members, owner, 0, 2), "C1");
    CU_ASSERT_STRING_EQUAL(owner_of(topics, members, owner, 1, 0), "C0");
    CU_ASSERT_STRING_EQUAL(owner_of(topics, members, owner, 1, 1), "C0");
    CU_ASSERT_STRING_EQUAL(owner_of(topics, members, owner, 1, 2), "C1");
}

static void test_range_blocks(void)
{
    /* 10 partitions, 3 members: blocks of 4, 3, 3 starting at 0, 4, 7. */
    struct ks_assignor_topic topics[] = { { "orders", 10 } };
    int32_t t0[] = { 0 };
    struct ks_assignor_member members[] = {
        { "c2-1", t0, 1, NULL, 0, -1 },
        { "c1-1", t0, 1, NULL, 0, -1 },
        { "c3-1", t0, 1, NULL, 0, -1 },
    };
    int32_t owner[10];
    ks_assignor_assign(KS_ASSIGNOR_RANGE, topics, 1, members, 3, owner);
    const char *expected[10] = { "c1-1", "c1-1", "c1-1", "c1-1", "c2-1",
                                 "c2-1", "c2-1", "c3-1", "c3-1", "c3-1" };
    for (int32_t p = 0; p < 10; p++) {
        CU_ASSERT_STRING_EQUAL(owner_of(topics, members, owner, 0, p), expected[p]);
    }
}

static void test_range_unsubscribed_topic(void)
{
    struct ks_assignor_topic topics[] = { { "a", 2 }, { "b", 2 } };
    int32_t ta[] = { 0 };
    struct ks_assignor_member members[] = { { "m", ta, 1, NULL, 0, -1 } };
    int32_t owner[4];
    ks_assignor_assign(KS_ASSIGNOR_RANGE, topics, 2, members, 1, owner);
    CU_ASSERT_EQUAL(owner[0], 0);
    CU_ASSERT_EQUAL(owner[1], 0);
    CU_ASSERT_EQUAL(owner[2], -1);
    CU_ASSERT_EQUAL(owner[3], -1);
}

static void test_roundrobin_documented_examples(void)
{
    /* RoundRobinAssignor javadoc, first example: C0, C1 subscribed to t0
     * and t1 with 3 partitions each → C0: t0p0, t0p2, t1p1; C1: t0p1, t1p0,
     * t1p2. */
    struct ks_assignor_topic topics[] = { { "t0", 3 }, { "t1", 3 } };
    int32_t both[] = { 0, 1 };
    struct ks_assignor_member members[] = {
        { "C1", both, 2, NULL, 0, -1 },
        { "C0", both, 2, NULL, 0, -1 },
    };
    int32_t owner[6];
    ks_assignor_assign(KS_ASSIGNOR_ROUNDROBIN, topics, 2, members, 2, owner);
    const char *expected[6] = { "C0", "C1", "C0", "C1", "C0", "C1" };
    for (int32_t s = 0; s < 6; s++) {
        CU_ASSERT_STRING_EQUAL(members[owner[s]].member_id, expected[s]);
    }

    /* Second example: t0 (1 partition), t1 (2), t2 (3); C0 subscribes to t0;
     * C1 to t0, t1; C2 to t0, t1, t2 → C0: t0p0; C1: t1p0; C2: t1p1, t2p0,
     * t2p1, t2p2. */
    struct ks_assignor_topic topics2[] = { { "t0", 1 }, { "t1", 2 }, { "t2", 3 } };
    int32_t s0[] = { 0 }, s1[] = { 0, 1 }, s2[] = { 0, 1, 2 };
    struct ks_assignor_member members2[] = {
        { "C2", s2, 3, NULL, 0, -1 },
        { "C0", s0, 1, NULL, 0, -1 },
        { "C1", s1, 2, NULL, 0, -1 },
    };
    int32_t owner2[6];
    ks_assignor_assign(KS_ASSIGNOR_ROUNDROBIN, topics2, 3, members2, 3, owner2);
    const char *expected2[6] = { "C0", "C1", "C2", "C2", "C2", "C2" };
    for (int32_t s = 0; s < 6; s++) {
        CU_ASSERT_STRING_EQUAL(members2[owner2[s]].member_id, expected2[s]);
    }
}

static void test_roundrobin_sorts_topics_by_name(void)
{
    /* Topic index order b, a; names sort a first, so a-0 goes to the first member. */
    struct ks_assignor_topic topics[] = { { "b", 1 }, { "a", 1 } };
    int32_t both[] = { 0, 1 };
    struct ks_assignor_member members[] = {
        { "x", both, 2, NULL, 0, -1 },
        { "y", both, 2, NULL, 0, -1 },
    };
    int32_t owner[2];
    ks_assignor_assign(KS_ASSIGNOR_ROUNDROBIN, topics, 2, members, 2, owner);
    CU_ASSERT_STRING_EQUAL(owner_of(topics, members, owner, 1, 0), "x");
    CU_ASSERT_STRING_EQUAL(owner_of(topics, members, owner, 0, 0), "y");
}

static void test_sticky_documented_example(void)
{
    /* StickyAssignor javadoc, example 1: C0, C1, C2; t0..t3 with 2
     * partitions each. Initial assignment as round robin: C0: t0p0, t1p1,
     * t3p0; C1: t0p1, t2p0, t3p1; C2: t1p0, t2p1. */
    struct ks_assignor_topic topics[] = { { "t0", 2 }, { "t1", 2 }, { "t2", 2 }, { "t3", 2 } };
    int32_t all[] = { 0, 1, 2, 3 };
    struct ks_assignor_member members[] = {
        { "C0", all, 4, NULL, 0, -1 },
        { "C1", all, 4, NULL, 0, -1 },
        { "C2", all, 4, NULL, 0, -1 },
    };
    int32_t owner[8];
    ks_assignor_assign(KS_ASSIGNOR_STICKY, topics, 4, members, 3, owner);
    const char *expected[8] = { "C0", "C1", "C2", "C0", "C1", "C2", "C0", "C1" };
    for (int32_t s = 0; s < 8; s++) {
        CU_ASSERT_STRING_EQUAL(members[owner[s]].member_id, expected[s]);
    }

    /* C1 leaves. Sticky keeps all of C0's and C2's partitions and splits C1's
     * three between them so that both hold four (the javadoc's exact split
     * came from the pre-2.8 algorithm; the properties are what it shows). */
    struct ks_group_topic_partition owned0[3], owned2[2];
    int32_t n0 = 0, n2 = 0;
    for (int32_t s = 0; s < 8; s++) {
        struct ks_group_topic_partition tp = { s / 2, s % 2 };
        if (owner[s] == 0) {
            owned0[n0++] = tp;
        } else if (owner[s] == 2) {
            owned2[n2++] = tp;
        }
    }
    CU_ASSERT_EQUAL_FATAL(n0, 3);
    CU_ASSERT_EQUAL_FATAL(n2, 2);
    struct ks_assignor_member after[] = {
        { "C2", all, 4, owned2, n2, 1 },
        { "C0", all, 4, owned0, n0, 1 },
    };
    int32_t owner_after[8];
    ks_assignor_assign(KS_ASSIGNOR_STICKY, topics, 4, after, 2, owner_after);
    CU_ASSERT_EQUAL(count_of(owner_after, 8, 0), 4);
    CU_ASSERT_EQUAL(count_of(owner_after, 8, 1), 4);
    for (int32_t i = 0; i < n0; i++) {
        CU_ASSERT_EQUAL(
            owner_after[ks_assignor_slot(topics, owned0[i].topic_index, owned0[i].partition)], 1);
    }
    for (int32_t i = 0; i < n2; i++) {
        CU_ASSERT_EQUAL(
            owner_after[ks_assignor_slot(topics, owned2[i].topic_index, owned2[i].partition)], 0);
    }
}

/* Property sweep: P partitions, C members, with random previous ownership
 * from a deterministic generator; each assignor covers every partition once;
 * range and sticky and roundrobin balance single-topic groups; sticky keeps
 * min(owned, quota) of each member's valid claims. */
static uint64_t next_random(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return *state >> 33;
}

static void test_properties_single_topic(void)
{
    uint64_t state = 42;
    char names[MEMBERS_MAX][16];
    for (int32_t round = 0; round < 300; round++) {
        int32_t partition_count = 1 + (int32_t)(next_random(&state) % 40);
        int32_t member_count = 1 + (int32_t)(next_random(&state) % MEMBERS_MAX);
        struct ks_assignor_topic topics[] = { { "orders", partition_count } };
        int32_t t0[] = { 0 };
        struct ks_assignor_member members[MEMBERS_MAX];
        struct ks_group_topic_partition owned[MEMBERS_MAX][40];
        int32_t previous[40];
        for (int32_t p = 0; p < partition_count; p++) {
            /* each partition previously owned by a random member id, possibly gone */
            previous[p] = (int32_t)(next_random(&state) % (MEMBERS_MAX + 2)) - 2;
        }
        for (int32_t m = 0; m < member_count; m++) {
            snprintf(names[m], sizeof(names[m]), "c%02d", (int)((m * 7) % MEMBERS_MAX));
            int32_t n = 0;
            for (int32_t p = 0; p < partition_count; p++) {
                if (previous[p] == m) {
                    owned[m][n].topic_index = 0;
                    owned[m][n].partition = p;
                    n++;
                }
            }
            members[m] =
                (struct ks_assignor_member){ names[m], t0, 1, owned[m], n, n > 0 ? 3 : -1 };
        }
        for (int kind = 0; kind < 3; kind++) {
            int32_t owner[40];
            ks_assignor_assign((enum ks_assignor)kind, topics, 1, members, member_count, owner);
            int32_t quota_min = partition_count / member_count;
            int32_t quota_max = (partition_count + member_count - 1) / member_count;
            int32_t total = 0;
            for (int32_t m = 0; m < member_count; m++) {
                int32_t n = count_of(owner, partition_count, m);
                CU_ASSERT(n >= quota_min && n <= quota_max);
                total += n;
                if (kind == KS_ASSIGNOR_STICKY) {
                    int32_t kept = 0;
                    for (int32_t i = 0; i < members[m].owned_count; i++) {
                        kept += owner[members[m].owned[i].partition] == m;
                    }
                    int32_t expected_kept =
                        members[m].owned_count < quota_min ? members[m].owned_count : quota_min;
                    CU_ASSERT(kept >= expected_kept);
                }
            }
            CU_ASSERT_EQUAL(total, partition_count);
        }
    }
}

static void test_sticky_tied_claims_are_dropped(void)
{
    /* Two members claim partition 0 in the same generation: neither keeps
     * it by right; the newer generation wins partition 1. */
    struct ks_assignor_topic topics[] = { { "t", 4 } };
    int32_t t0[] = { 0 };
    struct ks_group_topic_partition a_owned[] = { { 0, 0 }, { 0, 1 } };
    struct ks_group_topic_partition b_owned[] = { { 0, 0 }, { 0, 1 }, { 0, 2 } };
    struct ks_assignor_member members[] = {
        { "a", t0, 1, a_owned, 2, 5 },
        { "b", t0, 1, b_owned, 3, 5 },
    };
    int32_t owner[4];
    ks_assignor_assign(KS_ASSIGNOR_STICKY, topics, 1, members, 2, owner);
    CU_ASSERT_EQUAL(count_of(owner, 4, 0), 2);
    CU_ASSERT_EQUAL(count_of(owner, 4, 1), 2);
    CU_ASSERT_EQUAL(owner[2], 1); /* b's only uncontested claim */
    members[1].owned_generation = 6;
    ks_assignor_assign(KS_ASSIGNOR_STICKY, topics, 1, members, 2, owner);
    CU_ASSERT_EQUAL(owner[0], 1); /* b's newer claims win, up to its quota */
    CU_ASSERT_EQUAL(owner[1], 1);
    CU_ASSERT_EQUAL(count_of(owner, 4, 0), 2);
}

static void test_sticky_general_different_subscriptions(void)
{
    struct ks_assignor_topic topics[] = { { "a", 4 }, { "b", 4 } };
    int32_t sa[] = { 0 }, sab[] = { 0, 1 };
    struct ks_assignor_member members[] = {
        { "m1", sa, 1, NULL, 0, -1 },
        { "m2", sab, 2, NULL, 0, -1 },
    };
    int32_t owner[8];
    ks_assignor_assign(KS_ASSIGNOR_STICKY, topics, 2, members, 2, owner);
    for (int32_t p = 0; p < 4; p++) {
        CU_ASSERT_EQUAL(owner[ks_assignor_slot(topics, 1, p)], 1); /* only m2 reads b */
    }
    CU_ASSERT_EQUAL(count_of(owner, 8, 0), 4); /* balance pushes a to m1 */
    CU_ASSERT_STRING_EQUAL(ks_assignor_name(KS_ASSIGNOR_STICKY), "sticky");
}

void ks_test_register_assignor(void)
{
    static const struct ks_test_case cases[] = {
        { "range_documented_example", test_range_documented_example },
        { "range_blocks", test_range_blocks },
        { "range_unsubscribed_topic", test_range_unsubscribed_topic },
        { "roundrobin_documented_examples", test_roundrobin_documented_examples },
        { "roundrobin_sorts_topics_by_name", test_roundrobin_sorts_topics_by_name },
        { "sticky_documented_example", test_sticky_documented_example },
        { "properties_single_topic", test_properties_single_topic },
        { "sticky_tied_claims_are_dropped", test_sticky_tied_claims_are_dropped },
        { "sticky_general_different_subscriptions", test_sticky_general_different_subscriptions },
    };
    KS_TEST_ADD_SUITE("core/assignor", cases);
}
