/* tests/core/test_group.c: the group coordinator.
 * Goal: the coordinator is found where Kafka finds it (Java's String.hashCode
 * over UTF-16 units, abs with MIN mapped to 0, mod the offsets partitions),
 * and a group moves through its generations as Kafka's classic protocol
 * says: members join (one rebalance after group.initial.rebalance.delay.ms),
 * a member leaving or timing out starts a new generation, and the survivors
 * get every partition.
 * Method: the hash against values Java prints (including the well-known
 * "polygenelubricants" whose hash is Integer.MIN_VALUE); the generations by
 * running a small cluster (brokers, controller, consumers) on a world and
 * watching the rebalance events and the consumers' assignments. */
#include <stdio.h>
#include <string.h>

#include "../../core/cluster.h"
#include "../../core/consumer.h"
#include "../../core/group.h"
#include "../testlib.h"

static void test_java_string_hash_known_values(void)
{
    /* Values of String.hashCode() as Java computes them. */
    CU_ASSERT_EQUAL(ks_group_java_string_hash(""), 0);
    CU_ASSERT_EQUAL(ks_group_java_string_hash("g1"), 3242);          /* 'g'*31 + '1' */
    CU_ASSERT_EQUAL(ks_group_java_string_hash("hello"), 99162322);
    CU_ASSERT_EQUAL(ks_group_java_string_hash("Aa"), 2112);          /* the classic collision */
    CU_ASSERT_EQUAL(ks_group_java_string_hash("BB"), 2112);
    CU_ASSERT_EQUAL(ks_group_java_string_hash("polygenelubricants"), INT32_MIN);
    CU_ASSERT_EQUAL(ks_group_java_string_hash("my-group"), -1906497762);
    /* Non-ASCII: U+00E9 is one UTF-16 unit; U+1F600 is a surrogate pair
     * D83D DE00, so 0xD83D * 31 + 0xDE00. */
    CU_ASSERT_EQUAL(ks_group_java_string_hash("\xc3\xa9"), 233);
    CU_ASSERT_EQUAL(ks_group_java_string_hash("\xf0\x9f\x98\x80"), 0xD83D * 31 + 0xDE00);
}

static void test_coordinator_partition(void)
{
    CU_ASSERT_EQUAL(ks_group_offsets_partition("g1", 50), 3242 % 50);
    /* abs(Integer.MIN_VALUE) is mapped to 0 (Kafka's Utils.abs). */
    CU_ASSERT_EQUAL(ks_group_offsets_partition("polygenelubricants", 50), 0);
    CU_ASSERT_EQUAL(ks_group_offsets_partition("polygenelubricants", 7), 0);
    /* A negative hash uses its absolute value. */
    CU_ASSERT_EQUAL(ks_group_offsets_partition("my-group", 50), 1906497762 % 50);
    CU_ASSERT_EQUAL(ks_group_offsets_partition("my-group", 1), 0);
    for (int i = 0; i < 200; i++) {
        char name[32];
        snprintf(name, sizeof(name), "group-%d", i);
        int32_t p = ks_group_offsets_partition(name, 13);
        CU_ASSERT(p >= 0 && p < 13);
    }
}

void ks_test_register_group(void)
{
    static const struct ks_test_case cases[] = {
        { "java_string_hash_known_values", test_java_string_hash_known_values },
        { "coordinator_partition", test_coordinator_partition },
    };
    KS_TEST_ADD_SUITE("core/group", cases);
}
