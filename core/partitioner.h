/*
** core/partitioner.h: Kafka's built-in partitioner as the Java producer runs
** it since 3.3 (KafkaProducer.partition, BuiltInPartitioner).
**
**   keyed record    (murmur2(key bytes) & 0x7fffffff) mod partition count,
**                   counting ALL partitions (led or not), as Utils.toPositive;
**   null key        KIP-794 uniform sticky: stay on one partition until at
**                   least batch.size bytes went to it (switching waits until
**                   its batches are full, and is forced at 2 x batch.size),
**                   then pick uniformly among partitions that have a leader.
**
** Simplifications: no adaptive weighting by queue length
** (partitioner.adaptive.partitioning.enable is treated as false), and no
** partitioner.availability.timeout.ms. The sticky choice is lazy: after a
** switch the next partition is drawn when the next null-key record arrives,
** with the availability known then (the Java client draws at once).
** Everything here is pure: randomness comes in as an argument.
*/
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Kafka's Utils.murmur2 over byte_count bytes, read as a signed int32. */
int32_t ks_murmur2(const void *bytes, size_t byte_count);

/* Kafka's Utils.toPositive: clears the sign bit (not an absolute value). */
static inline int32_t ks_to_positive(int32_t value)
{
    return (int32_t)((uint32_t)value & 0x7fffffffu);
}

/* The partition of a non-null key (an empty key counts as a key). */
int32_t ks_partitioner_key_partition(const void *key, size_t key_bytes, int32_t partition_count);

/* The uniform sticky partitioner's state for one topic. */
struct ks_sticky_partitioner {
    int32_t batch_size_bytes; /* batch.size: the sticky amount */
    int32_t partition;        /* current sticky partition, -1 when a pick is due */
    int64_t produced_bytes;   /* bytes appended to `partition` since it was picked */
    int64_t switch_count;     /* picks so far (for tests and the timeline) */
};

void ks_sticky_init(struct ks_sticky_partitioner *sticky, int32_t batch_size_bytes);

/* Returns the partition for the next null-key record, picking a new one if
 * due: uniform among i with available[i] (a known leader), or among all
 * partition_count partitions if none has one. `random` is a fresh draw
 * (KS_RNG_CLIENT); it is only used when a pick happens. */
int32_t ks_sticky_partition(struct ks_sticky_partitioner *sticky, const bool *available,
                            int32_t partition_count, uint64_t random);

/* True when ks_sticky_partition will draw on its next call (so the caller
 * can avoid drawing a random number it will not use). */
bool ks_sticky_pick_due(const struct ks_sticky_partitioner *sticky);

/* After a record of appended_bytes went to `partition`: count it, and switch
 * (BuiltInPartitioner.updatePartitionInfo) when batch.size bytes went there
 * and all_batches_full (the partition's last batch is full, so a new record
 * would start a new batch), or unconditionally at 2 x batch.size. */
void ks_sticky_on_append(struct ks_sticky_partitioner *sticky, int32_t partition,
                         int32_t appended_bytes, bool all_batches_full);
