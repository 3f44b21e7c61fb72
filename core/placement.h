/*
** core/placement.h: where the replicas of a new topic go (replica placement
** at topic creation). Two placers, one per controller era; the controller
** model picks one (core/controller.c, placer_for):
**
**   ks_placement_striped       KRaft's StripedReplicaPlacer: one replica per
**                              rack while racks remain, leaders striped over
**                              racks and brokers; also without racks (every
**                              broker then sits in one unnamed rack)
**   ks_placement_admin_utils   the ZooKeeper-era AdminUtils.assignReplicasToBrokers:
**                              rack-unaware without racks, rack-aware with them
**
** Both are pure functions of their input and of the random draws they ask
** for (through struct ks_placement's random_below, which the controller backs
** with KS_RNG_CLUSTER), so tests can run them over many seeds without a world.
** The design block is in core/placement.c.
*/
#pragma once

#include "config.h"

#include <stdbool.h>
#include <stdint.h>

/* One topic to place. */
struct ks_placement {
    int32_t broker_count;       /* brokers 1..broker_count */
    const char (*racks)[32];    /* racks[id - 1]; NULL or racks[0][0] == '\0': no racks */
    const bool *fenced;         /* fenced[id - 1]; NULL: none fenced */
    int32_t partition_count;    /* >= 1 */
    int32_t replication_factor; /* 1..broker_count, <= KS_REPLICATION_FACTOR_MAX */
    /* A uniform draw in [0, bound) (bound >= 1), as Java's Random.nextInt(bound). */
    uint64_t (*random_below)(void *context, uint64_t bound);
    void *random_context;
};

/* Fills out[partition][0 .. replication_factor) with broker ids, leader
 * first. At least one broker must be unfenced (asserted). */
typedef void ks_placer_fn(const struct ks_placement *placement,
                          int32_t (*out)[KS_REPLICATION_FACTOR_MAX]);

ks_placer_fn ks_placement_striped;
ks_placer_fn ks_placement_admin_utils;

/* The replicas of each partition of a new topic, leader first: the topic's
 * explicit `assignment` when it has one (no draws), else what placer puts.
 * placement describes the cluster (brokers, racks, fencing, the draws); its
 * partition_count and replication_factor are taken from topic. Returns
 * topic->partition_count rows; the caller frees them. Both controllers create
 * topics through it, each with its era's placer. */
int32_t (*ks_placement_assign_topic(const struct ks_topic_config *topic, ks_placer_fn *placer,
                                    struct ks_placement placement))[KS_REPLICATION_FACTOR_MAX];

/* The deterministic core of ks_placement_admin_utils (kafka-reference 9.12):
 * AdminUtils with fixed startIndex and nextReplicaShift, rack-aware when
 * racks (may be NULL) are given. Exposed for tests. */
void ks_placement_admin_utils_fixed(int32_t broker_count, const char (*racks)[32],
                                    int32_t partition_count, int32_t replication_factor,
                                    int32_t start_index, int32_t shift,
                                    int32_t (*out)[KS_REPLICATION_FACTOR_MAX]);
