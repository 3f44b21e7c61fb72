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
**   consumed_lost   per consumer group and partition of its topic: records
**                   of the final read the group never processed, at offsets
**                   from the group's first position up to (not including)
**                   its final position: a gap it moved past (an offset reset,
**                   a commit before processing, a forward rewind). Records
**                   below the first position (auto.offset.reset = latest)
**                   are outside the group's scope: counted in
**                   out_of_scope, not lost.
**   consumed_unseen per group and partition: records of the final read the
**                   group never processed at or after its final position
**                   (or in a partition where it never took a position): lag
**                   when the run ended.
**   consumed_duplicates  per group: processings of a record beyond the first.
**   produce_p50_ms, produce_p99_ms  nearest-rank percentiles of acked
**                   records' send->ack latency.
** Transactions (KIP-98), where a producer sets transactional.id:
**   txn_committed   transactions whose commitTransaction() returned.
**   txn_aborted     transactions that ended otherwise: aborted by the
**                   application, or by the coordinator after the producer was
**                   fenced (a new instance, transaction.timeout.ms) or crashed.
**   aborted_read    processings by a read_committed consumer of a record the
**                   final read shows inside an aborted transaction (the
**                   partition's ABORT marker follows it): Jepsen's aborted read.
**   aborted_seen    the same by read_uncommitted consumers: Kafka's documented
**                   behaviour, not an anomaly.
**   txn_hanging     (partition, producer) pairs whose transaction is still open
**                   (no marker) in the final read: it holds back the last stable
**                   offset, so read_committed consumers stop there (KIP-890).
**   premature_read  processings by a read_committed consumer of a record of a
**                   committed transaction before that transaction's COMMIT
**                   marker was written on the partition: the record was
**                   visible out of transaction order, past the last stable
**                   offset. In Kafka a read_committed fetch returns records
**                   below the LSO only (UnifiedLog.lastStableOffset), and the
**                   LSO passes a transaction's records only once its marker
**                   is appended and below the HW (ProducerStateManager.
**                   firstUnstableOffset), so a processing can never come
**                   before the marker's append. The marker's time is its
**                   batch timestamp (ms, rounded down), so a processing in
**                   the marker's own millisecond is not judged. Records of
**                   aborted transactions are aborted_read's, not counted here.
** Processors (consume-transform-produce), where a consumer sets output.topic:
**   eos_missing     input records a read_committed reader sees in the final
**                   read of a processor's input topic (not in an aborted or
**                   open transaction; each identity once) whose output is
**                   not among the committed records of its output topic
**                   (outside any transaction, or in a committed one).
**   eos_duplicates  extra copies of such an output: committed output records
**                   beyond the first that name the same input record.
**   Their rows: eos_missing, ranges of input records (input topic, offsets,
**   producer and seqs); eos_duplicate, one row per input record with more
**   than one output (output topic, first and last output offset, the input's
**   producer and seq; record_count the extra copies).
**   Processors with the same input and output topics (the members of one
**   group) form one pipeline, counted once.
** A transactional producer's acked record counts for acked_lost only when its
** transaction committed (the records of an aborted transaction are meant to
** vanish for read_committed readers); a read_committed group is not expected to
** process records of aborted transactions (consumed_lost, consumed_unseen).
** Simplification: a producer fenced while its EndTxn(commit) was already
** written counts that transaction as aborted.
** A group's positions come from struct ks_group_tracker, fed with what the
** consumers report (core/cluster.h struct ks_consumer_position) and every
** processed record, in the order they happen.
**
** Records without an identity header (producer_index -1) are ignored by the
** identity-based metrics.
**
** Anomalies are ranges (consecutive records of one kind, producer or group,
** partition and cause form one row), never capped: the printed summary may
** show the first few per kind, the database holds them all.
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
    int32_t txn; /* enum ks_read_txn: what the partition's markers say of its batch */
    /* A processor's output record: the input record its key names
     * (core/consumer.c's output key): its producer index + 1, 0 for none. */
    int32_t source_producer;
    int64_t source_seq;
    /* A transactional record's marker (the COMMIT or ABORT that settles it):
     * when it was written, from the marker's timestamp (ms resolution,
     * rounded down); 0 when no marker follows or its time is unknown. */
    ks_time_ns marker_ns;
};

enum ks_read_txn {
    KS_READ_TXN_NONE,      /* not a transactional batch */
    KS_READ_TXN_COMMITTED, /* a COMMIT marker of its producer follows */
    KS_READ_TXN_ABORTED,   /* an ABORT marker follows */
    KS_READ_TXN_OPEN,      /* no marker follows in the final read */
};

/* One transaction as its producer saw it end (KS_EV_TXN_END): the records
 * [seq_from, seq_to) of producer_index. */
struct ks_txn_outcome {
    int32_t producer_index;
    bool committed;
    int64_t seq_from;
    int64_t seq_to;
};

/* One live replica's committed prefix, for divergence. fingerprints[i] is the
 * record at offsets[i] (sorted ascending), a hash of its identity or bytes. */
struct ks_replica_read {
    int32_t topic_index;
    int32_t partition;
    int32_t broker;
    int64_t hw;
    const int64_t *offsets;       /* borrowed */
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

/* ---- consumer groups' positions ------------------------------------------- */

/* Where one group stands in one partition. */
struct ks_group_cursor {
    int32_t group;
    int32_t topic_index;
    int32_t partition;
    int64_t first_position; /* where the group first took up a position */
    ks_time_ns first_ns;
    int32_t first_event; /* the event that reported it (an offset reset), or -1 */
    int64_t position;    /* now: the next offset the group would process */
};

/* A forward jump of a group's position over offsets it had not processed. */
struct ks_group_skip {
    int32_t group;
    int32_t topic_index;
    int32_t partition;
    int64_t from_offset; /* skipped: [from_offset, to_offset) */
    int64_t to_offset;
    ks_time_ns at_ns;
    enum ks_position_kind kind; /* RESET, ASSIGNED (committed ahead of processing), REWIND */
    int32_t event;              /* the event that explains it, or -1 */
    ks_time_ns event_ns;        /* its time (at_ns until an event is known) */
};

/* Follows every group's position: a reported position sets it (a jump
 * forward is a skip), a processed record at offset o moves it to at least
 * o + 1. Deterministic: cursors and skips are kept in the order they first
 * happen. The hash table is for look-ups only. */
struct ks_group_tracker {
    GArray *cursors;   /* struct ks_group_cursor */
    GArray *skips;     /* struct ks_group_skip */
    GHashTable *index; /* (group, topic, partition) -> cursor index + 1 */
};

void ks_group_tracker_init(struct ks_group_tracker *tracker);
void ks_group_tracker_deinit(struct ks_group_tracker *tracker);
/* A member of `group` took up position `offset` (kind ASSIGNED, RESET or
 * REWIND; COMMITTED reports are ignored), at at_ns, explained by event
 * (-1: none). */
void ks_group_tracker_position(struct ks_group_tracker *tracker, int32_t group, int32_t topic_index,
                               int32_t partition, int64_t offset, enum ks_position_kind kind,
                               ks_time_ns at_ns, int32_t event);
/* A member of `group` processed the record at offset. */
void ks_group_tracker_processed(struct ks_group_tracker *tracker, int32_t group,
                                int32_t topic_index, int32_t partition, int64_t offset);

/* ---- causes ------------------------------------------------------------------ */

/* Why an acknowledged record is missing, when known: filled by the caller's
 * cause function (sim/cause.h in a run). cause is static text such as
 * "truncation"; NULL: unknown. */
struct ks_cause {
    const char *cause;
    int32_t event; /* the event that removed it, or -1 */
    ks_time_ns at_ns;
};
typedef struct ks_cause ks_checker_cause_fn(void *context, const struct ks_record_outcome *outcome);

/* A processor (a consumer with output.topic): what it reads and writes. */
struct ks_checker_processor {
    int32_t input_topic;
    int32_t output_topic;
};

struct ks_checker_input {
    const struct ks_record_outcome *outcomes; /* every record the producers reported */
    size_t outcome_count;
    const bool *producer_acks_none;    /* [producer_index]: acks=0 */
    const char *const *producer_names; /* [producer_index] */
    int32_t producer_count;
    const char *const *topic_names;          /* [topic_index] */
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
    const char *const *group_names;        /* [group] its group.id; may be NULL */
    const struct ks_group_cursor *cursors; /* may be NULL: no group took a position */
    size_t cursor_count;
    const struct ks_group_skip *skips;
    size_t skip_count;
    ks_checker_cause_fn *cause_of_lost; /* may be NULL: causes unknown */
    void *cause_context;
    const bool *producer_transactional; /* [producer_index]; may be NULL: none */
    const struct ks_txn_outcome *txns;  /* in the order they ended */
    size_t txn_count;
    const bool *consumer_read_committed;           /* [consumer_index]; may be NULL: none */
    const struct ks_checker_processor *processors; /* may be NULL: none */
    size_t processor_count;
};

enum ks_anomaly_kind {
    KS_ANOMALY_LOST,
    KS_ANOMALY_DUPLICATE,
    KS_ANOMALY_REORDERED,
    KS_ANOMALY_DIVERGENT,
    KS_ANOMALY_CONSUMED_LOST,
    KS_ANOMALY_CONSUMED_UNSEEN,
    KS_ANOMALY_CONSUMED_DUPLICATE,
    KS_ANOMALY_ABORTED_READ, /* transactions: shown only where the txn_* metrics are */
    KS_ANOMALY_TXN_HANGING,
    KS_ANOMALY_PREMATURE_READ,
    KS_ANOMALY_EOS_MISSING, /* processors: shown only where the eos_* metrics are */
    KS_ANOMALY_EOS_DUPLICATE,
    KS_ANOMALY_KIND_COUNT
};

/* "lost", "duplicate", "reordered", "divergent", "consumed_lost",
 * "consumed_unseen", "consumed_duplicate", "aborted_read", "txn_hanging",
 * "premature_read", "eos_missing", "eos_duplicate": the anomalies.kind
 * column. */
const char *ks_anomaly_kind_name(enum ks_anomaly_kind kind);
/* Whether a kind belongs to transactions (shown where the txn_* metrics are)
 * or to processors (where the eos_* metrics are); the other kinds are always
 * shown. */
bool ks_anomaly_kind_is_txn(enum ks_anomaly_kind kind);
bool ks_anomaly_kind_is_eos(enum ks_anomaly_kind kind);

/* One row of the anomalies table: a range of records. Fields that do not
 * apply are -1 (NULL in the table). */
struct ks_anomaly {
    enum ks_anomaly_kind kind;
    const char *kind_name; /* static: ks_anomaly_kind_name(kind) */
    int32_t topic_index;   /* -1: none */
    int32_t partition;
    int32_t producer_index; /* lost, duplicate, reordered */
    int32_t group;          /* consumed_*: the group number (group_names names it) */
    int64_t first_seq;
    int64_t last_seq;
    int64_t first_offset; /* lost: the acked offsets; others: final-read offsets */
    int64_t last_offset;
    int64_t record_count; /* records (consumed_duplicate: extra processings) */
    ks_time_ns first_ns;  /* lost: acked times; -1 when not timed */
    ks_time_ns last_ns;
    int32_t acked_broker; /* lost: who acknowledged them, and in which epoch */
    int32_t acked_leader_epoch;
    int32_t broker; /* divergent: the two brokers */
    int32_t other_broker;
    const char *cause;   /* static, NULL when unknown */
    int32_t cause_event; /* index of the event that caused it, -1 */
    ks_time_ns cause_ns;
    char detail[320]; /* one line for people */
};

/* What the final read found for one record (records.final). */
enum ks_final { KS_FINAL_MISSING, KS_FINAL_PRESENT, KS_FINAL_DUPLICATED, KS_FINAL_CLEANED_UP };
const char *ks_final_name(enum ks_final final); /* "missing", "present", ... */

/* An identity's copies in the final read. */
struct ks_checker_copies {
    uint64_t key; /* identity */
    int64_t first_offset;
    int32_t count;
};

struct ks_checker_output {
    int64_t records_acked; /* outcome acked */
    int64_t records_failed;
    int64_t records_unknown;
    int64_t acked_lost;
    int64_t records_cleaned_up; /* acked, missing, removed by retention or compaction */
    int64_t duplicates;
    int64_t reordered;
    int64_t divergent_partitions;
    int64_t consumed_lost;
    int64_t consumed_unseen;
    int64_t consumed_duplicates;
    int64_t out_of_scope; /* records before groups' first positions, summed */
    int64_t txn_committed;
    int64_t txn_aborted;
    int64_t aborted_read;
    int64_t aborted_seen;
    int64_t txn_hanging;
    int64_t premature_read;
    int64_t eos_missing;
    int64_t eos_duplicates;
    double produce_p50_ms; /* 0 when nothing was acked */
    double produce_p99_ms;
    GArray *anomalies; /* of struct ks_anomaly; owned (ks_checker_output_clear) */
    /* records per kind (divergent: partitions; txn_hanging: transactions;
     * eos_duplicate: extra outputs) */
    int64_t kind_counts[KS_ANOMALY_KIND_COUNT];
    uint8_t *finals;              /* [outcome index] enum ks_final; owned */
    int64_t *final_offsets;       /* [outcome index] first copy's offset, -1; owned */
    int64_t *cursor_out_of_scope; /* [cursor index] records before its first position; owned */
    GArray *copies;               /* struct ks_checker_copies sorted by key; owned */
};

/* Computes every metric above. *out is overwritten (call clear afterwards). */
void ks_checker_run(const struct ks_checker_input *input, struct ks_checker_output *out);
void ks_checker_output_clear(struct ks_checker_output *out);

/* What the final read holds of identity (producer_index, seq): returns
 * PRESENT or DUPLICATED with *offset_out its first copy's offset, or MISSING
 * (*offset_out -1). For records the producers never reported. */
enum ks_final ks_checker_final_of(const struct ks_checker_output *out, int32_t producer_index,
                                  int64_t seq, int64_t *offset_out);

/* A fingerprint of a record for divergence: identity when present, else the
 * batch CRC and offset delta. */
uint64_t ks_checker_fingerprint(int32_t producer_index, int64_t seq, uint32_t batch_crc,
                                int64_t offset);

/* Nearest-rank percentile (0 < pct <= 100) of values (sorted in place). 0 if empty. */
int64_t ks_checker_percentile(int64_t *values, size_t count, int pct);
