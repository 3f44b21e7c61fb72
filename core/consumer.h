/*
** core/consumer.h: ksim's consumer client, modelled on Kafka's classic Java
** consumer (KafkaConsumer, ConsumerCoordinator, Fetcher) with the settings of
** core/config.h struct ks_consumer_config.
**
** One consumer is one world node: ks_cluster_consumer_node(spec, index). It
** finds its group's coordinator, joins the group (JoinGroup/SyncGroup with
** generations, eager rebalancing), fetches its assigned partitions from their
** leaders up to the high watermark, processes each record (processing.time),
** and commits offsets according to its commit mode. Every processing of a
** record is reported through observer->on_consumed. The design notes (state
** machine, commit modes, the atomic sink model) live at the top of
** core/consumer.c.
**
** All functions run on the consumer's node (from its own event handlers) or
** from the driver between events.
*/
#pragma once

#include "cluster.h"
#include "config.h"
#include "world.h"

#include <stdbool.h>
#include <stdint.h>

struct ks_consumer;

/* Where a scenario's `action = rewind` moves a consumer's group positions:
 * `to = earliest | latest | <offset> | <time>`. The values equal sim/scenario.h's
 * enum ks_rewind_to, so the driver may pass that value as it is. */
enum ks_consumer_rewind_kind {
    KS_CONSUMER_REWIND_EARLIEST = 0, /* value ignored: the log start offset */
    KS_CONSUMER_REWIND_LATEST = 1,   /* value ignored: the HW */
    KS_CONSUMER_REWIND_OFFSET =
        2, /* value: the offset to resume from, in every assigned partition */
    KS_CONSUMER_REWIND_TIME =
        3, /* value: a simulated time (ns): first offset with timestamp >= it */
};

/* Builds consumer `consumer_index` of spec (config spec->consumers[index]) and
 * registers its receiver on its node. spec and observer are borrowed and must
 * outlive the consumer. Returns an owned object: ks_consumer_free. */
struct ks_consumer *ks_consumer_new(ks_world *world, const struct ks_cluster_spec *spec,
                                    int32_t consumer_index,
                                    const struct ks_cluster_observer *observer);
/* Arms the start timer: at start_ns since the run began plus a start.jitter
 * draw (KS_RNG_PHASE, drawn on the first call only). */
void ks_consumer_start(struct ks_consumer *c);
/* NULL is a no-op. */
void ks_consumer_free(struct ks_consumer *c);
/* The world already dropped the node's timers: forget in-memory state (the
 * group membership, positions, fetched records). The atomic-mode sink
 * survives (it models the consumer's external store). */
void ks_consumer_on_crash(struct ks_consumer *c);
/* A new incarnation: rediscover the coordinator and rejoin with a new member
 * id; resume from committed offsets (or the sink's, in atomic mode). */
void ks_consumer_on_restart(struct ks_consumer *c);
/* True when the consumer is a stable member of its group and has processed up
 * to the HW of every assigned partition and committed that position (in
 * atomic mode: stored it in its sink). A consumer that is down is caught up
 * only if the rest of its group covers its partitions, which the cluster
 * checks by asking every member; a down consumer answers true. */
bool ks_consumer_caught_up(const struct ks_consumer *c);
/* Broker `broker` went down (its process crashed): the kernel resets its
 * connections, so the consumer's requests to it fail at once, in its next
 * event, instead of waiting request.timeout.ms (a network partition gives no
 * such signal: those requests time out). Ignored while crashed. */
void ks_consumer_on_broker_down(struct ks_consumer *c, int32_t broker);
/* Scenario action `rewind`: seeks every assigned partition at the next poll
 * boundary, as KafkaConsumer#seekToBeginning / #seekToEnd / #seek(offset) /
 * #offsetsForTimes + #seek would; the new position is committed like any
 * other. kind is an enum ks_consumer_rewind_kind. Ignored while crashed. */
void ks_consumer_rewind(struct ks_consumer *c, int kind, int64_t value);

/* A processor (output.topic): `output` (borrowed; a node of its own, built
 * with input_consumer_index = this consumer) gets one record per processed
 * record and, with transactional.id, the offsets in its transactions. */
struct ks_producer;
void ks_consumer_set_output(struct ks_consumer *c, struct ks_producer *output);

/* ---- queries (for the driver and tests) --------------------------------- */

/* The generation the consumer last joined, or -1. */
int32_t ks_consumer_generation(const struct ks_consumer *c);
/* Records processed so far, duplicates included. */
int64_t ks_consumer_processed_count(const struct ks_consumer *c);
/* Fills out[] with the assigned partitions of the consumer's topic (up to
 * out_count_max) and returns how many there are. */
int32_t ks_consumer_assignment(const struct ks_consumer *c, int32_t *out, int32_t out_count_max);

/* Whole-consumer check (STYLE 3.7): C1 and C2 of core/consumer.c's design
 * block for every assigned partition and the poll in progress, plus the
 * request channels, the assignment count and the fetched-record buffers.
 * Asserts; returns only when all hold. Runs after every consumer event in
 * KS_DEBUG builds; tests may call it between events. */
void ks_consumer_check(const struct ks_consumer *c);
