/*
** tests/core/group_fixture.h: the group and consumer suites' preset of
** cluster_fixture.h: 3 brokers, topic orders, one producer p1 and consumers
** c1.. in group g1, with a few settings shortened so that groups form and
** fail over within seconds. Header-only (static functions) so that each suite
** gets its own copy.
*/
#pragma once

#include "cluster_fixture.h"
#include "../../core/consumer.h"
#include "../testlib.h"

#define GF_MS CF_MS
#define GF_S  CF_S

/* consumer_count consumers c1.. in g1 on topic 0, committing after processing
 * and starting from the earliest offset, with a 6 s session and 1 s heartbeats. */
static inline void gf_add_consumers(struct cluster_fixture *f, int32_t consumer_count)
{
    for (int32_t i = 0; i < consumer_count; i++) {
        char name[16];
        snprintf(name, sizeof(name), "c%d", i + 1);
        struct ks_consumer_config *c = cf_consumer(f, name, "g1", 0);
        c->commit = KS_COMMIT_AFTER_PROCESS;
        c->auto_offset_reset = KS_RESET_EARLIEST;
        c->session_timeout_ns = 6000 * (int64_t)GF_MS;
        c->heartbeat_interval_ns = 1000 * (int64_t)GF_MS;
    }
}

/* 3 brokers (5 partitions of __consumer_offsets, 1 s initial rebalance delay),
 * topic orders (partition_count partitions, RF 3, min ISR 2), producer p1 at
 * `rate` records/s for `count` records (100 keys, 50-byte values), and
 * consumer_count consumers (gf_add_consumers). gf_start builds it with `seed`. */
static inline void gf_init(struct cluster_fixture *f, uint64_t seed, int32_t partition_count,
                           uint64_t rate, int64_t count, int32_t consumer_count)
{
    cf_init(f, 3);
    f->world_config.seed = seed;
    f->cluster_config.offsets_topic_partition_count = 5;
    f->cluster_config.group_initial_rebalance_delay_ns = 1000 * (int64_t)GF_MS;
    cf_topic(f, "orders", partition_count, 3, 2, NULL);
    struct ks_producer_config *p = cf_producer(f, "p1", 0);
    p->rate_per_s = rate;
    p->count = count;
    p->key_count = 100;
    p->value_bytes = 50;
    gf_add_consumers(f, consumer_count);
}

/* After adjusting the configs: build and start the cluster with gf_init's seed. */
static inline void gf_start(struct cluster_fixture *f)
{
    cf_start(f, f->world_config.seed);
}

/* Acknowledged offsets never processed, and extra processings. */
static inline void gf_count(const struct cluster_fixture *f, int64_t *lost_out,
                            int64_t *duplicates_out)
{
    int64_t lost = 0;
    int64_t duplicates = 0;
    for (int32_t p = 0; p < CF_PARTITIONS_MAX; p++) {
        for (int32_t o = 0; o < CF_OFFSETS_MAX; o++) {
            if (f->acked[p][o] && f->processed[p][o] == 0) {
                lost++;
            }
            if (f->processed[p][o] > 1) {
                duplicates += f->processed[p][o] - 1;
            }
        }
    }
    *lost_out = lost;
    *duplicates_out = duplicates;
}
