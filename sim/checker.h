/*
** sim/checker.h: the record-level metrics of SPEC section 5, computed from
** plain arrays so that tests can hand-build every input.
**
** Definitions (Jepsen-minded: judge what clients were told against what the
** cluster finally holds):
**   acked_lost      a record the producer saw acknowledged (for an acks=0
**                   producer: every record it sent) whose identity
**                   (producer, seq) is not in the final read, unless the
**                   topic's own cleanup removed it: its acked offset is below
**                   the partition's final log start offset (retention), or
**                   the topic is compacted and the final read holds a record
**                   with the same key at a higher offset (superseded). Those
**                   are deletions Kafka promises, not losses; they are
**                   counted in records_cleaned_up instead.
**   duplicates      for each identity, copies in the final read beyond the first.
**   reordered       within one partition, in offset order, taking each
**                   identity's first copy: a record that appears before a
**                   record the same producer sent earlier (smaller seq).
**   divergent_partitions  partitions where two live replicas hold different
**                   records (or one holds an offset the other lacks) below
**                   the smallest HW of the live replicas.
**   consumed_lost   per consumer group: records of the group's topics in the
**                   final read that no member of the group processed.
**   consumed_duplicates  per group: processings of a record beyond the first.
**   produce_p50_ms, produce_p99_ms  nearest-rank percentiles of acked
**                   records' send->ack latency.
** Records without an identity header (producer_index -1) are ignored by the
** identity-based metrics.
*/
#pragma once

#include "../core/cluster.h"

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* One record of the final read (or of a replica's log). */
struct ks_read_record {
    int32_t topic_index;
    int32_t partition;
    int64_t offset;
    int32_t producer_index; /* -1: no identity header */
    int64_t seq;
};

/* One live replica's committed prefix, for divergence. fingerprints[i] is the
 * record at offsets[i] (sorted ascending), a hash of its identity or bytes. */
struct ks_replica_read {
    int32_t topic_index;
    int32_t partition;
    int32_t broker;
    int64_t hw;
    const int64_t *offsets;     /* borrowed */
    const uint64_t *fingerprints; /* borrowed */
    size_t count;
};

/* What the topic's own cleanup may have removed from one partition. */
struct ks_partition_final {
    int32_t topic_index;
    int32_t partition;
    int64_t log_start_offset; /* the leader's, at the final read */
    bool compacted;           /* cleanup.policy contains compact */
};

struct ks_checker_input {
    const struct ks_record_outcome *outcomes; /* every record the producers reported */
    size_t outcome_count;
    const bool *producer_acks_none;  /* [producer_index]: acks=0 */
    const char *const *producer_names; /* [producer_index] */
    int32_t producer_count;
    const char *const *topic_names;  /* [topic_index] */
    const struct ks_read_record *final_read; /* in (topic, partition, offset) order */
    size_t final_read_count;
    const struct ks_partition_final *partitions; /* may be NULL: no cleanup excuses */
    size_t partition_count;
    const struct ks_replica_read *replicas; /* grouped by (topic, partition) */
    size_t replica_count;
    const struct ks_consumed_record *consumed;
    size_t consumed_count;
    const int32_t *consumer_group; /* [consumer_index] -> group number (0..group_count-1) */
    const int32_t *consumer_topic; /* [consumer_index] -> topic index it reads */
    int32_t consumer_count;
    int32_t group_count;
};

/* Anomaly rows kept at most per kind, so one kind cannot hide another (the
 * counts stay exact). */
#define KS_CHECKER_ANOMALY_COUNT_MAX 10000
#define KS_CHECKER_KIND_COUNT 6

struct ks_anomaly {
    const char *kind;        /* static: "lost", "duplicate", "reordered", "divergent",
                                "consumed_lost", "consumed_duplicate" */
    int32_t topic_index;     /* -1: none */
    int32_t partition;
    char detail[160];        /* "p1:42 acked at offset 17" */
};

struct ks_checker_output {
    int64_t records_acked;   /* outcome acked */
    int64_t records_failed;
    int64_t records_unknown;
    int64_t acked_lost;
    int64_t records_cleaned_up; /* acked, missing, removed by retention or compaction */
    int64_t duplicates;
    int64_t reordered;
    int64_t divergent_partitions;
    int64_t consumed_lost;
    int64_t consumed_duplicates;
    double produce_p50_ms;   /* 0 when nothing was acked */
    double produce_p99_ms;
    GArray *anomalies;       /* of struct ks_anomaly; owned (ks_checker_output_clear) */
    uint32_t kind_row_counts[KS_CHECKER_KIND_COUNT]; /* rows kept per kind, in anomaly_kinds order (checker.c) */
};

/* Computes every metric above. *out is overwritten (call clear afterwards). */
void ks_checker_run(const struct ks_checker_input *input, struct ks_checker_output *out);
void ks_checker_output_clear(struct ks_checker_output *out);

/* A fingerprint of a record for divergence: identity when present, else the
 * batch CRC and offset delta. */
uint64_t ks_checker_fingerprint(int32_t producer_index, int64_t seq, uint32_t batch_crc,
                                int64_t offset);

/* Nearest-rank percentile (0 < pct <= 100) of values (sorted in place). 0 if empty. */
int64_t ks_checker_percentile(int64_t *values, size_t count, int pct);
