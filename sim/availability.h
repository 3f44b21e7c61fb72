/*
** sim/availability.h: the two views of unavailability of SPEC section 5.
**
**   unavailable_ms          the cluster's view. A user partition is
**                           unavailable while its elected leader cannot
**                           serve: the controller knows no leader
**                           (Kafka's OfflinePartitionsCount:
**                           ControllerMetricsChanges counts a partition
**                           without a leader), the leader's broker is down
**                           or paused, the leader does not (yet) act as
**                           leader in the controller's leader epoch (a
**                           restarted broker that is not registered and
**                           unfenced again, or one the election has not
**                           reached), or, for a topic that an acks=all
**                           producer writes to, the ISR is smaller than
**                           min(min.insync.replicas, replication factor),
**                           so that acks=all appends are refused
**                           (Partition.appendRecordsToLeader throws
**                           NotEnoughReplicasException only when
**                           requiredAcks == -1; effectiveMinIsr caps the
**                           minimum at the replica count).
**   produce_unavailable_ms  the clients' view. A user partition is
**                           unavailable while some record sent to it has
**                           waited longer than unavailable.threshold for its
**                           outcome (acked, failed or unknown): from
**                           sent + threshold until the outcome.
**
** Both are measured up to the end of `duration` and summed over partitions
** (two partitions down for one second count two seconds). Each view is also
** kept as intervals (partition, reason, start, end), which the recorder
** writes to the `unavailability` table and the plots and `describe` read.
**
** The cluster view is a tracker driven by the run: mark it dirty when an
** event may make a partition unavailable (faults, elections, ISR changes,
** fencing, broker starts) and call ks_availability_update after every event;
** while any partition is unavailable it re-evaluates after every event, so
** the moment a leader learns of its election (a message, not a cluster
** event) ends the interval exactly. The clients' view is a pure function of
** the record outcomes.
*/
#pragma once

#include "../core/cluster.h"
#include "scenario.h"

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

enum ks_unavailable_reason {
    KS_UNAVAILABLE_NONE,
    KS_UNAVAILABLE_NO_LEADER,          /* the controller knows no leader */
    KS_UNAVAILABLE_LEADER_DOWN,        /* the leader's broker is down */
    KS_UNAVAILABLE_LEADER_PAUSED,      /* ... or paused */
    KS_UNAVAILABLE_LEADER_NOT_SERVING, /* it does not act as leader in the current epoch */
    KS_UNAVAILABLE_ISR_BELOW_MIN,      /* acks=all writes refused: NOT_ENOUGH_REPLICAS */
    KS_UNAVAILABLE_RECORDS_WAITING,    /* clients' view: a record waited over the threshold */
    KS_UNAVAILABLE_REASON_COUNT
};

/* "no_leader", "leader_down", ... (the unavailability.reason column). */
const char *ks_unavailable_reason_name(enum ks_unavailable_reason reason);

struct ks_unavailable_interval {
    int32_t topic_index;
    int32_t partition;
    bool produce_view; /* false: the cluster's view, true: the clients' */
    enum ks_unavailable_reason reason;
    ks_time_ns start_ns;
    ks_time_ns end_ns; /* > start_ns */
};

/* ---- the cluster's view ------------------------------------------------- */

struct ks_availability;

/* Tracks the scenario's user topics on `cluster` (both borrowed; they must
 * outlive the tracker). Owned: ks_availability_free. */
struct ks_availability *ks_availability_new(const struct ks_scenario *scenario,
                                            const struct ks_cluster *cluster,
                                            const ks_world *world);
void ks_availability_free(struct ks_availability *availability); /* NULL is a no-op */

/* Something happened that may change a partition's availability. */
void ks_availability_mark_dirty(struct ks_availability *availability);
/* After every event: re-evaluates when dirty or while a partition is
 * unavailable. Read-only on the cluster and the world. */
void ks_availability_update(struct ks_availability *availability, ks_time_ns now_ns);
/* Evaluates once more at end_ns and closes every open interval there; later
 * updates do nothing. */
void ks_availability_close(struct ks_availability *availability, ks_time_ns end_ns);

/* Total unavailable time, summed over partitions (closed intervals only). */
uint64_t ks_availability_total_ns(const struct ks_availability *availability);
/* The closed intervals (struct ks_unavailable_interval), in the order they
 * ended. Borrowed. */
const GArray *ks_availability_intervals(const struct ks_availability *availability);

/* Pure: the reason partition (topic_index, partition) is unavailable now, or
 * KS_UNAVAILABLE_NONE. acks_all: some acks=all producer writes to the topic. */
enum ks_unavailable_reason ks_availability_reason(const struct ks_cluster *cluster,
                                                  const ks_world *world,
                                                  const struct ks_topic_config *topic,
                                                  int32_t topic_index, int32_t partition,
                                                  bool acks_all);

/* ---- the clients' view ---------------------------------------------------- */

/* Appends to intervals_out (may be NULL) the merged intervals, per user
 * partition in (topic, partition) order, during which some record among
 * outcomes had waited longer than threshold_ns for its outcome, cut at
 * end_ns; returns their total length. Outcomes without a partition (-1) or
 * of a topic index >= topic_count are left out. */
uint64_t ks_availability_produce(const struct ks_record_outcome *outcomes, size_t outcome_count,
                                 int32_t topic_count, ks_time_ns threshold_ns, ks_time_ns end_ns,
                                 GArray *intervals_out);
