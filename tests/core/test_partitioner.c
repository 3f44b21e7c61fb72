/*
** tests/core/test_partitioner.c: Kafka's built-in partitioner.
**
** Goal: keyed records land where the Java producer puts them, and null-key
** records follow KIP-794's uniform sticky rule. Method: murmur2 against every
** vector published in Kafka's UtilsTest (and the ones in the ksim reference),
** the keyed partition of known keys, then the sticky partitioner driven with
** chosen random draws: it keeps its partition until batch.size bytes and a full
** batch (or 2 x batch.size), skips partitions without a leader, and spreads
** picks uniformly.
*/
#include <stdio.h>

#include "../../core/partitioner.h"
#include "../testlib.h"

#include <string.h>

static int32_t murmur_text(const char *text)
{
    return ks_murmur2(text, strlen(text));
}

static void test_murmur2_kafka_vectors(void)
{
    /* clients/src/test/.../utils/UtilsTest.java testMurmur2 */
    CU_ASSERT_EQUAL(murmur_text("21"), -973932308);
    CU_ASSERT_EQUAL(murmur_text("foobar"), -790332482);
    CU_ASSERT_EQUAL(murmur_text("a-little-bit-long-string"), -985981536);
    CU_ASSERT_EQUAL(murmur_text("a-little-bit-longer-string"), -1486304829);
    CU_ASSERT_EQUAL(murmur_text("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"), -58897971);
    CU_ASSERT_EQUAL(ks_murmur2((const char[]){ 'a', 'b', 'c' }, 3), 479470107);
    /* the reference's computed values */
    CU_ASSERT_EQUAL(murmur_text("key0"), 452605474);
    CU_ASSERT_EQUAL(murmur_text("hello"), 2132663229);
    CU_ASSERT_EQUAL(ks_murmur2("", 0), 275646681);
}

static void test_murmur2_every_tail_length(void)
{
    /* Lengths 0..8 cover every tail case twice; a change in one byte of the
     * tail must change the hash (the fall-through is not skipped). */
    const char *text = "abcdefgh";
    for (size_t n = 1; n <= 8; n++) {
        char copy[9];
        memcpy(copy, text, n);
        int32_t before = ks_murmur2(copy, n);
        copy[n - 1] ^= 0x01;
        CU_ASSERT_NOT_EQUAL(ks_murmur2(copy, n), before);
        /* and the length is part of the hash */
        CU_ASSERT_NOT_EQUAL(ks_murmur2(text, n), ks_murmur2(text, n - 1));
    }
}

static void test_key_partition_known_values(void)
{
    CU_ASSERT_EQUAL(ks_partitioner_key_partition("key0", 4, 3), 1);
    CU_ASSERT_EQUAL(ks_partitioner_key_partition("hello", 5, 3), 0);
    CU_ASSERT_EQUAL(ks_partitioner_key_partition("", 0, 3), 0);
    CU_ASSERT_EQUAL(ks_partitioner_key_partition(NULL, 0, 3), 0);
    /* toPositive is a mask, not abs: -973932308 & 0x7fffffff = 1173551340 */
    CU_ASSERT_EQUAL(ks_to_positive(-973932308), 1173551340);
    CU_ASSERT_EQUAL(ks_partitioner_key_partition("21", 2, 7), 1173551340 % 7);
    CU_ASSERT_EQUAL(ks_to_positive(INT32_MIN), 0);
    /* a single partition takes everything */
    CU_ASSERT_EQUAL(ks_partitioner_key_partition("foobar", 6, 1), 0);
}

static void test_sticky_stays_until_batch_size_and_full(void)
{
    struct ks_sticky_partitioner sticky;
    ks_sticky_init(&sticky, 1000);
    bool available[4] = { true, true, true, true };
    CU_ASSERT_TRUE(ks_sticky_pick_due(&sticky));
    int32_t first = ks_sticky_partition(&sticky, available, 4, 2);
    CU_ASSERT_EQUAL(first, 2);
    CU_ASSERT_FALSE(ks_sticky_pick_due(&sticky));
    /* 900 bytes: below batch.size, no switch even if the batch is full */
    for (int i = 0; i < 9; i++) {
        ks_sticky_on_append(&sticky, first, 100, true);
        CU_ASSERT_EQUAL(ks_sticky_partition(&sticky, available, 4, 3), first);
    }
    /* past batch.size but the batch is not full yet: stay */
    ks_sticky_on_append(&sticky, first, 200, false);
    CU_ASSERT_FALSE(ks_sticky_pick_due(&sticky));
    /* the batch is full now: switch */
    ks_sticky_on_append(&sticky, first, 100, true);
    CU_ASSERT_TRUE(ks_sticky_pick_due(&sticky));
    CU_ASSERT_EQUAL(ks_sticky_partition(&sticky, available, 4, 1), 1);
    CU_ASSERT_EQUAL(sticky.switch_count, 2);
}

static void test_sticky_forced_at_twice_batch_size(void)
{
    struct ks_sticky_partitioner sticky;
    ks_sticky_init(&sticky, 1000);
    bool available[2] = { true, true };
    int32_t p = ks_sticky_partition(&sticky, available, 2, 0);
    ks_sticky_on_append(&sticky, p, 1999, false);
    CU_ASSERT_FALSE(ks_sticky_pick_due(&sticky));
    ks_sticky_on_append(&sticky, p, 1, false);
    CU_ASSERT_TRUE(ks_sticky_pick_due(&sticky));
    /* appends to another partition (keyed records) do not count */
    p = ks_sticky_partition(&sticky, available, 2, 1);
    CU_ASSERT_EQUAL(p, 1);
    ks_sticky_on_append(&sticky, 0, 5000, true);
    CU_ASSERT_FALSE(ks_sticky_pick_due(&sticky));
}

static void test_sticky_skips_partitions_without_leader(void)
{
    struct ks_sticky_partitioner sticky;
    ks_sticky_init(&sticky, 10);
    bool available[5] = { false, true, false, false, true };
    int32_t counts[5] = { 0 };
    for (uint64_t draw = 0; draw < 100; draw++) {
        int32_t p = ks_sticky_partition(&sticky, available, 5, draw);
        counts[p]++;
        ks_sticky_on_append(&sticky, p, 20, true);
    }
    CU_ASSERT_EQUAL(counts[0] + counts[2] + counts[3], 0);
    CU_ASSERT_EQUAL(counts[1], 50);
    CU_ASSERT_EQUAL(counts[4], 50);
    /* no partition has a leader: pick among all */
    bool none[3] = { false, false, false };
    int32_t p = ks_sticky_partition(&sticky, none, 3, 7);
    CU_ASSERT_EQUAL(p, 1);
}

static void test_sticky_uniform_spread(void)
{
    /* With a well-mixed draw sequence every partition gets about 1/n. */
    struct ks_sticky_partitioner sticky;
    ks_sticky_init(&sticky, 16384);
    bool available[6] = { true, true, true, true, true, true };
    int32_t counts[6] = { 0 };
    uint64_t x = 0x1234567u;
    for (int i = 0; i < 6000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int32_t p = ks_sticky_partition(&sticky, available, 6, x);
        counts[p]++;
        ks_sticky_on_append(&sticky, p, 20000, true);
    }
    for (int i = 0; i < 6; i++) {
        CU_ASSERT(counts[i] > 850 && counts[i] < 1150);
    }
}

void ks_test_register_partitioner(void)
{
    static const struct ks_test_case cases[] = {
        { "murmur2 matches Kafka's vectors", test_murmur2_kafka_vectors },
        { "murmur2 uses every tail byte and the length", test_murmur2_every_tail_length },
        { "keyed partition is toPositive(murmur2) mod all", test_key_partition_known_values },
        { "sticky stays until batch.size and a full batch",
          test_sticky_stays_until_batch_size_and_full },
        { "sticky switch is forced at 2 x batch.size", test_sticky_forced_at_twice_batch_size },
        { "sticky skips partitions without a leader", test_sticky_skips_partitions_without_leader },
        { "sticky picks are uniform", test_sticky_uniform_spread },
    };
    KS_TEST_ADD_SUITE("core/partitioner", cases);
}
