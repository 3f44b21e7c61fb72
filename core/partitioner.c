/*
** core/partitioner.c: murmur2 and the uniform sticky partitioner.
** See core/partitioner.h for what the Java client does and what is simplified.
*/
#include "partitioner.h"

#include "base.h"

/* Kafka's Utils.murmur2: 32-bit arithmetic that wraps, logical shifts,
 * little-endian 4-byte groups, and a tail that falls through 3 -> 2 -> 1. */
int32_t ks_murmur2(const void *bytes, size_t byte_count)
{
    const uint8_t *data = bytes;
    const uint32_t seed = 0x9747b28cu;
    const uint32_t m = 0x5bd1e995u;
    const int r = 24;
    ks_assert(byte_count <= INT32_MAX);
    uint32_t h = seed ^ (uint32_t)byte_count;
    size_t group_count = byte_count / 4;
    for (size_t i = 0; i < group_count; i++) {
        const uint8_t *g = data + 4 * i;
        uint32_t k = (uint32_t)g[0] | ((uint32_t)g[1] << 8) | ((uint32_t)g[2] << 16) |
                     ((uint32_t)g[3] << 24);
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }
    const uint8_t *tail = data + 4 * group_count;
    switch (byte_count % 4) {
    case 3:
        h ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        h ^= (uint32_t)tail[0];
        h *= m;
        break;
    case 0: break;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (int32_t)h;
}

int32_t ks_partitioner_key_partition(const void *key, size_t key_bytes, int32_t partition_count)
{
    ks_assert(partition_count > 0);
    ks_assert(key != NULL || key_bytes == 0);
    static const uint8_t empty[1] = { 0 };
    return ks_to_positive(ks_murmur2(key != NULL ? key : empty, key_bytes)) % partition_count;
}

void ks_sticky_init(struct ks_sticky_partitioner *sticky, int32_t batch_size_bytes)
{
    ks_assert(batch_size_bytes > 0);
    sticky->batch_size_bytes = batch_size_bytes;
    sticky->partition = -1;
    sticky->produced_bytes = 0;
    sticky->switch_count = 0;
}

bool ks_sticky_pick_due(const struct ks_sticky_partitioner *sticky)
{
    return sticky->partition < 0;
}

int32_t ks_sticky_partition(struct ks_sticky_partitioner *sticky, const bool *available,
                            int32_t partition_count, uint64_t random)
{
    ks_assert(partition_count > 0);
    if (sticky->partition >= 0 && sticky->partition < partition_count) {
        return sticky->partition;
    }
    /* BuiltInPartitioner.nextPartition without load stats: uniform over the
     * partitions with a leader, else over all of them. */
    int32_t available_count = 0;
    for (int32_t i = 0; i < partition_count; i++) {
        available_count += available[i] ? 1 : 0;
    }
    int32_t chosen = -1;
    if (available_count == 0) {
        chosen = (int32_t)(random % (uint64_t)partition_count);
    } else {
        int32_t rank = (int32_t)(random % (uint64_t)available_count);
        for (int32_t i = 0; i < partition_count; i++) {
            if (available[i] && rank-- == 0) {
                chosen = i;
                break;
            }
        }
    }
    ks_assert(chosen >= 0 && chosen < partition_count);
    sticky->partition = chosen;
    sticky->produced_bytes = 0;
    sticky->switch_count++;
    return chosen;
}

void ks_sticky_on_append(struct ks_sticky_partitioner *sticky, int32_t partition,
                         int32_t appended_bytes, bool all_batches_full)
{
    ks_assert(appended_bytes >= 0);
    if (partition != sticky->partition) {
        return; /* a keyed record, or the sticky partition already moved on */
    }
    sticky->produced_bytes += appended_bytes;
    int64_t limit = sticky->batch_size_bytes;
    if ((sticky->produced_bytes >= limit && all_batches_full) ||
        sticky->produced_bytes >= 2 * limit) {
        sticky->partition = -1;
        sticky->produced_bytes = 0;
    }
}
