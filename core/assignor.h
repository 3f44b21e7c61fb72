/*
** core/assignor.h: the partition assignors a group leader runs (Kafka's
** RangeAssignor, RoundRobinAssignor and eager StickyAssignor; kafka-reference
** 6.2-6.5). Pure functions: no world, no allocation visible to the caller.
**
** The result is one owner (member index into the caller's array, or -1 when
** no member subscribes to the topic) per partition, laid out topic by topic:
** owner_out[ks_assignor_slot(topics, t, p)] for partition p of topic t.
*/
#pragma once

#include "config.h"
#include "group_proto.h"

#include <stdint.h>

struct ks_assignor_topic {
    const char *name; /* borrowed; round robin sorts by it */
    int32_t partition_count;
};

struct ks_assignor_member {
    const char *member_id; /* borrowed; members are ordered by it (6.2) */
    const int32_t *topics; /* subscribed topic indexes, borrowed */
    int32_t topic_count;
    /* sticky only: what the member owned in owned_generation (-1: nothing) */
    const struct ks_group_topic_partition *owned; /* borrowed */
    int32_t owned_count;
    int32_t owned_generation;
};

/* Slot of partition p of topic t in owner_out: the partitions of the topics
 * before t, plus p. */
int32_t ks_assignor_slot(const struct ks_assignor_topic *topics, int32_t topic_index,
                         int32_t partition);
int32_t ks_assignor_slot_count(const struct ks_assignor_topic *topics, int32_t topic_count);

/* Computes the assignment. owner_out has ks_assignor_slot_count entries. */
void ks_assignor_assign(enum ks_assignor assignor, const struct ks_assignor_topic *topics,
                        int32_t topic_count, const struct ks_assignor_member *members,
                        int32_t member_count, int32_t *owner_out);

/* "range", "roundrobin", "sticky". */
const char *ks_assignor_name(enum ks_assignor assignor);
