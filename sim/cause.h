/*
** sim/cause.h: why an acknowledged record is missing, or why a consumer
** group moved past records: the one place that links anomalies to the
** events table.
**
** What it uses, today: each event's kind, broker, partition and time, and
** the fault schedule (which fault a `fault` event applied: crash with
** mode=power, or a crash of a consumer). The fault is found by the name that
** sim/faults.c puts first in every fault event's detail ("fault NAME: ...");
** ks_cause_fault_index is the only function that reads event text, and it
** goes when events carry the fault name as a typed field. It does not read
** offsets or epochs out of events (they are not typed yet either), so a
** candidate event is matched by partition, broker and time only:
**
**   For a lost record acknowledged by broker B (in leader epoch E) at time
**   T on partition P, the cause is the earliest of these after T:
**     power_loss        a crash of B with mode = power (its unsynced bytes
**                       were lost; recovery cut the log);
**     unclean_election  an unclean election on P (a replica outside the ISR
**                       became leader, and the others truncate to it);
**     truncation        B truncating P (it became a follower of a leader
**                       whose log diverged: a clean election of a replica
**                       that lacked the record, a zombie leader's epoch
**                       ending, a high-watermark truncation);
**     retention         segments of P deleted by retention;
**   if none follows T, the latest such event between the send and T (the
**   ack may arrive after the broker that gave it already failed). With B
**   unknown (-1), truncations by any broker and no power loss qualify.
**   When events carry offsets, a candidate must also cover the record's
**   offset; the lookup is ks_cause_of_lost, so only this file changes.
**
** Consumer groups' skips are explained where they happen (sim/checker.h
** struct ks_group_skip): an offset reset by its offset_reset event, a
** resume from a committed offset beyond the processed records by the
** latest crash of a consumer of the group (ks_cause_group_crash_before).
*/
#pragma once

#include "checker.h"
#include "scenario.h"

#include <stdint.h>

struct ks_cause_index;

/* scenario is borrowed and must outlive the index. Owned: ks_cause_index_free. */
struct ks_cause_index *ks_cause_index_new(const struct ks_scenario *scenario);
void ks_cause_index_free(struct ks_cause_index *index); /* NULL is a no-op */

/* Offers the run's event number event (index in the events array, in time
 * order) to the index; kind is the events.kind text, detail its detail. */
void ks_cause_index_add(struct ks_cause_index *index, int32_t event, const char *kind,
                        ks_time_ns at_ns, int32_t broker, int32_t topic_index, int32_t partition,
                        const char *detail);

/* A ks_checker_cause_fn: context is a struct ks_cause_index. */
struct ks_cause ks_cause_of_lost(void *context, const struct ks_record_outcome *outcome);

/* The latest event at or before at_ns that crashed a consumer of `group`
 * (a crash fault targeting consumer(NAME); consumer_group[consumer index]
 * is its group number), or -1. */
int32_t ks_cause_group_crash_before(const struct ks_cause_index *index,
                                    const int32_t *consumer_group, int32_t group, ks_time_ns at_ns);

/* The scenario fault a `fault` event's detail names ("fault NAME: ..."), or -1. */
int32_t ks_cause_fault_index(const struct ks_scenario *scenario, const char *detail);
