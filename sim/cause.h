/*
** sim/cause.h: why an acknowledged record is missing, or why a consumer
** group moved past records: the one place that links anomalies to the
** events table.
**
** What it uses: each event's typed facts (kind, broker, partition, time, the
** offsets a truncation, recovery or retention removed, an election's new
** leader, the scenario fault a fault event applied) and the pictures of
** every replica's log at each step (sim/steps.h): which offsets, in which
** leader epochs, a broker held when an election chose it, and before its
** recovery. It never reads event text.
**
** A lost record was acknowledged by broker B in leader epoch E at offset O
** of partition P, sent at time S. A replica "holds" it when O is in its log
** and was written in epoch E (any epoch when E is unknown). The cause is the
** event that removed O from the replica that would have kept it:
**
**   1. The losing election L: the first election of P after S and into an
**      epoch above E (an earlier one came before the record was written),
**      clean or unclean, whose new leader X did not hold the record. From
**      then on every replica follows a log without it.
**   2. If X had held it, the latest event in (S, L] that removed O from X
**      (an event removed the record, not just its offset, if X's last
**      picture before it held the record, or ended before O in an epoch
**      not above E: X may have fetched it since):
**        truncation        X truncated a range covering O (a high-watermark
**                          truncation, or one to a diverging epoch);
**        power_loss        X's log recovery dropped O (a range covering O,
**                          or a recovered log ending at or before O where
**                          X's last picture before held the record), named
**                          by the power-loss crash of X before it (cause
**                          `recovery`, the recovery event, when there was no
**                          power loss: corruption);
**        retention         retention moved P's log start past O.
**   3. Else, if L was unclean: unclean_election, L itself (its leader never
**      had the record).
**   4. Else (no such election, or a clean one of a replica that never had
**      it: acks=1, a zombie leader): the earliest event after S that removed
**      O from B, by the same rules as in 2 (with B unknown: from any
**      broker). Nothing found: the cause is unknown (NULL), never a guess.
**
** Records with no offset (acks=0: the producer is never told one) are
** matched by time, as the only clue: the earliest truncation by B, power
** loss of B, unclean election or retention of P after the ack; if none,
** the latest such event between the send and the ack (the broker failed
** while its answer was on its way).
**
** Consumer groups' skips are explained where they happen (sim/checker.h
** struct ks_group_skip): an offset reset by its offset_reset event, a
** resume from a committed offset beyond the processed records by the
** latest crash of a consumer of the group (ks_cause_group_crash_before).
*/
#pragma once

#include "checker.h"
#include "scenario.h"
#include "steps.h"

#include <stdint.h>

struct ks_cause_index;

/* The facts of one run event the index looks at (unset fields -1). */
struct ks_cause_event {
    int32_t event;    /* index in the run's events, in time order */
    const char *kind; /* the events.kind text */
    ks_time_ns at_ns;
    int32_t broker;
    int32_t topic_index;
    int32_t partition;
    int32_t fault_index; /* fault events: the scenario fault applied */
    int32_t leader_new;  /* elections */
    int32_t leader_epoch_new;
    int64_t offset_from; /* truncation, recovery, retention: [from, to) removed */
    int64_t offset_to;
    int64_t leo_new; /* recovery: the log end it recovered to */
};

/* scenario and steps (may be NULL: then every record is matched by time)
 * are borrowed and must outlive the index. Owned: ks_cause_index_free. */
struct ks_cause_index *ks_cause_index_new(const struct ks_scenario *scenario,
                                          const struct ks_steps *steps);
void ks_cause_index_free(struct ks_cause_index *index); /* NULL is a no-op */

/* Offers one run event to the index, in event order. */
void ks_cause_index_add(struct ks_cause_index *index, const struct ks_cause_event *event);

/* A ks_checker_cause_fn: context is a struct ks_cause_index. */
struct ks_cause ks_cause_of_lost(void *context, const struct ks_record_outcome *outcome);

/* The latest event at or before at_ns that crashed a consumer of `group`
 * (a crash fault targeting consumer(NAME); consumer_group[consumer index]
 * is its group number), or -1. */
int32_t ks_cause_group_crash_before(const struct ks_cause_index *index,
                                    const int32_t *consumer_group, int32_t group, ks_time_ns at_ns);
