/*
** sim/mirror_check.h: the metrics of a mirror between two clusters
** (MirrorMaker 2, issue 20), computed from plain arrays like sim/checker.h so
** that tests can hand-build every input. Not yet driven by a run: the
** scenario side (several clusters, a mirror node) is to come.
**
** MirrorMaker 2 copies each record of a source topic to its remote topic on
** the target cluster ("east.orders" under DefaultReplicationPolicy) with its
** key, value and headers (MirrorSourceTask.convertRecord), so a mirrored copy
** carries the identity header of the record it copies: the same (producer,
** seq) names a record on both clusters.
**
** Definitions (one source topic and its remote topic):
**   records_acked      records the source's producers saw acknowledged on the
**                      source topic (for an acks=0 producer: every record it
**                      sent), as acked_lost counts them (sim/checker.h).
**   mirrored           of those, records whose identity is in the target's
**                      final read of the remote topic.
**   mirror_lost        when the source cluster was lost (the disaster a
**                      mirror is for: it never comes back): acked records
**                      that are not on the target. What a failover to the
**                      target loses. 0 while the source survives, because
**                      the mirror may still copy what it holds.
**   mirror_unmirrored  when the source survives: acked records that the
**                      source's final read still holds and the target's does
**                      not (the mirror's lag when the run ended). A record
**                      the source itself lost and the mirror never copied is
**                      neither: the source's acked_lost counts it.
**   mirror_duplicates  copies in the target's final read beyond the first per
**                      identity (MirrorSourceTask is at least once: a
**                      producer retry without idempotence, or a task that
**                      re-reads from its last committed source offset).
**   mirror_lag         at one instant, summed over the source partitions:
**                      the source's high watermark minus the next source
**                      offset the mirror has not yet had acknowledged on the
**                      target (never below 0). A lost source loses at most
**                      the lag at the moment it is lost.
**   failover_duplicates  a consumer group that moves from the source to the
**                      target at failover_ns resumes from a translated offset
**                      at or before its real position (core/mirror_sync.c,
**                      T1): processings at or after failover_ns of records
**                      the group had already processed before it, one per
**                      extra processing.
**
** Records without an identity header (producer_index -1) are ignored.
*/
#pragma once

#include "../core/cluster.h"
#include "checker.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ks_mirror_check_input {
    const struct ks_record_outcome *outcomes; /* every record the producers reported */
    size_t outcome_count;
    const bool *producer_acks_none; /* [producer_index]: acks=0; may be NULL */
    int32_t producer_count;
    int32_t source_topic_index; /* outcomes of other topics are ignored */
    bool source_lost;           /* the source cluster is gone for good */
    /* The source topic's final read (ignored when source_lost) and the
     * remote topic's on the target, any order; topic_index is not read. */
    const struct ks_read_record *source_read;
    size_t source_read_count;
    const struct ks_read_record *target_read;
    size_t target_read_count;
};

struct ks_mirror_check_output {
    int64_t records_acked;
    int64_t mirrored;
    int64_t mirror_lost;
    int64_t mirror_unmirrored;
    int64_t mirror_duplicates;
};

/* Computes every count above; *out is overwritten. */
void ks_mirror_check_run(const struct ks_mirror_check_input *input,
                         struct ks_mirror_check_output *out);

/* mirror_lag at one instant: source_hw[p] is the source partition's high
 * watermark, mirrored_next[p] the next source offset of it not yet acked on
 * the target (0 when nothing was mirrored). */
int64_t ks_mirror_lag(const int64_t *source_hw, const int64_t *mirrored_next,
                      int32_t partition_count);

/* failover_duplicates of one group: consumed holds its processings (any
 * consumer and topic of the group, on either cluster) in the order they
 * happened. */
int64_t ks_mirror_failover_duplicates(const struct ks_consumed_record *consumed,
                                      size_t consumed_count, ks_time_ns failover_ns);
