/*
** core/log.h: one partition replica's segment log on a node's disk, in Kafka's
** own layout (kafka-reference 1 and 3): segments named by base offset, sparse
** .index and .timeindex, leader-epoch-checkpoint, recovery, retention and
** compaction. The design block with invariants and byte layouts is in core/log.c.
**
** All I/O goes through the world's disk (core/world.h), so power loss, slow
** disks and corruption apply. Every function here is called from the owning
** broker's event handlers only.
*/
#pragma once

#include "batch.h"
#include "config.h"
#include "world.h"

#include <glib.h>

struct ks_log;

/* What recovery found, for the timeline ("broker 2 recovered orders-0: dropped
 * 3 batches, 4120 bytes, offsets 17..21"). */
struct ks_log_recovery_report {
    bool recovered; /* false after a clean shutdown: nothing checked */
    int64_t recovered_from_offset;
    int64_t dropped_bytes;
    int64_t dropped_batch_count;
    int64_t leo_before; /* LEO implied by the files before recovery, if known */
    int64_t leo_after;
    int32_t segments_deleted;
};

/* Opens the log in folder `dir` (e.g. "broker-1/orders-0") on node's disk,
 * creating it if missing. Without clean_shutdown it recovers every segment
 * from the one holding recovery_point (kafka-reference 3.7). report_out may be
 * NULL. Returns the log, owned by the caller (ks_log_close). */
struct ks_log *ks_log_open(ks_world *world, ks_node_id node, const char *dir,
                           const struct ks_log_config *config, int64_t recovery_point,
                           bool clean_shutdown, struct ks_log_recovery_report *report_out);
/* Closes files (the index files always hold exactly their entries, so there
 * is nothing to trim); does not fsync. NULL is a no-op. */
void ks_log_close(struct ks_log *log);

/* R14 (core/log.c): the fields that the getters below read, on every fetch
 * of every partition, are the first member of struct ks_log, so they are
 * read inline through a log pointer instead of by a call each. Only
 * core/log.c writes them. */
struct ks__log_hot {
    int64_t leo;
    int64_t log_start_offset;
    int64_t latest_epoch_start_offset; /* start of the cache's last entry, -1 when none */
    int32_t latest_epoch;              /* the epoch of that entry, -1 when none */
};

static inline const struct ks__log_hot *ks__log_hot(const struct ks_log *log)
{
    return (const struct ks__log_hot *)(const void *)log;
}

/* Next offset to be written. */
static inline int64_t ks_log_leo(const struct ks_log *log)
{
    return ks__log_hot(log)->leo;
}

static inline int64_t ks_log_start_offset(const struct ks_log *log)
{
    return ks__log_hot(log)->log_start_offset;
}

int64_t ks_log_recovery_point(const struct ks_log *log); /* offsets below are fsynced */
int64_t ks_log_size_bytes(const struct ks_log *log);
int32_t ks_log_segment_count(const struct ks_log *log);
const char *ks_log_dir(const struct ks_log *log); /* borrowed */

/* What one segment holds, to compare a log before a crash with what recovery
 * left of it (the recovery line). */
struct ks_log_segment_summary {
    int64_t base_offset;
    int64_t next_offset;
    int64_t size_bytes;
    int64_t batch_count;  /* -1: not known (the segment was loaded from its index) */
    int64_t record_count; /* -1: not known */
};
/* Replaces the contents of `out` (a GArray of struct ks_log_segment_summary)
 * with the log's segments, oldest first. */
void ks_log_summarize(const struct ks_log *log, GArray *out);

enum ks_log_result {
    KS_LOG_OK,
    KS_LOG_CORRUPT, /* bad CRC/length in the input batch */
    KS_LOG_OFFSET_OUT_OF_RANGE,
    KS_LOG_IO_ERROR,
};

/* Leader append: `bytes` holds one or more batches built by a producer
 * (offsets unset). Validates each, assigns offsets from the LEO, stamps
 * leader_epoch, appends, and flushes if flush.messages says so.
 * *base_offset_out gets the first offset, *last_offset_out the last.
 * now_ns drives segment.ms rolling. The buffer is modified in place. */
enum ks_log_result ks_log_append_as_leader(struct ks_log *log, uint8_t *bytes, size_t byte_count,
                                           int32_t leader_epoch, ks_time_ns now_ns,
                                           int64_t *base_offset_out, int64_t *last_offset_out);
/* As ks_log_append_as_leader, for a caller that has already checked the
 * first crc_checked_bytes of bytes (whole batches) with ks_batch_parse: their
 * CRC is not computed again (everything else still is); the batches after
 * them are checked in full. Keeps one CRC check per batch per append. */
enum ks_log_result ks_log_append_as_leader_checked(struct ks_log *log, uint8_t *bytes,
                                                   size_t byte_count, size_t crc_checked_bytes,
                                                   int32_t leader_epoch, ks_time_ns now_ns,
                                                   int64_t *base_offset_out,
                                                   int64_t *last_offset_out);
/* As ks_log_append_as_leader_checked, for a caller that has parsed the first
 * batch of bytes with ks_batch_parse (CRC checked) into *first, here or in an
 * identical copy of the bytes (its records pointer is not used): the first
 * batch's header is not decoded again, and its CRC not computed again. */
enum ks_log_result ks_log_append_as_leader_parsed(
    struct ks_log *log, uint8_t *bytes, size_t byte_count, const struct ks_batch_view *first,
    int32_t leader_epoch, ks_time_ns now_ns, int64_t *base_offset_out, int64_t *last_offset_out);
/* Follower append: batches from the leader with offsets set; the first must
 * start at the LEO (or above it, where the leader's cleaner removed whole
 * batches: KS_LOG_OFFSET_OUT_OF_RANGE only below the LEO), and each batch
 * above the previous one. Updates the epoch cache from the batches' leader
 * epochs (KIP-101: a batch with a higher epoch starts an entry). */
enum ks_log_result ks_log_append_as_follower(struct ks_log *log, const uint8_t *bytes,
                                             size_t byte_count, ks_time_ns now_ns);
/* As ks_log_append_as_follower, with the first crc_checked_bytes (whole
 * batches) already checked by the caller with ks_batch_parse, as for
 * ks_log_append_as_leader_checked. */
enum ks_log_result ks_log_append_as_follower_checked(struct ks_log *log, const uint8_t *bytes,
                                                     size_t byte_count, size_t crc_checked_bytes,
                                                     ks_time_ns now_ns);
/* As ks_log_append_as_follower_checked, for a caller that has parsed the
 * first batch of bytes with ks_batch_parse (CRC checked) into *first, as for
 * ks_log_append_as_leader_parsed: its header is not decoded again (R10). */
enum ks_log_result ks_log_append_as_follower_parsed(struct ks_log *log, const uint8_t *bytes,
                                                    size_t byte_count,
                                                    const struct ks_batch_view *first,
                                                    ks_time_ns now_ns);

/* Appends to `out` whole batches starting with the one that holds `offset`,
 * stopping before any batch whose last offset is >= upto_offset (the HW for
 * consumers, the LEO for followers) and after max_bytes (but at least one
 * batch, KIP-74). KS_LOG_OFFSET_OUT_OF_RANGE if offset < log start or > LEO.
 * As in Kafka, one read returns data from one segment only (the next read
 * continues in the next segment). Nothing is appended at the LEO. */
enum ks_log_result ks_log_read(struct ks_log *log, int64_t offset, int64_t upto_offset,
                               size_t max_bytes, GByteArray *out);
/* Calls visit(context, batch) for every batch of the log holding offsets from
 * `from` up to (not past) upto_offset, in offset order, reading in chunks with
 * ks_log_read. Stops at the first read error or unparsable batch, or when
 * visit returns false. The batch is borrowed for the duration of the call. */
typedef bool ks_log_batch_fn(void *context, const struct ks_batch_view *batch);
void ks_log_scan(struct ks_log *log, int64_t from, int64_t upto_offset, ks_log_batch_fn *visit,
                 void *context);
/* ListOffsets by timestamp: the offset of the first record with timestamp >=
 * timestamp_ms, found as Kafka does (first segment whose largest timestamp
 * reaches it, time index, offset index, scan to the first batch whose max
 * timestamp reaches it, then its first such record); never below the log
 * start offset; the LEO if no record is that recent. */
int64_t ks_log_offset_for_timestamp(struct ks_log *log, int64_t timestamp_ms);

/* Removes every record at or above offset (follower truncation). Keeps the
 * indexes and the epoch cache consistent. A no-op if offset >= LEO. */
void ks_log_truncate_to(struct ks_log *log, int64_t offset);
/* Deletes everything and restarts the log empty at offset. */
void ks_log_truncate_fully_and_start_at(struct ks_log *log, int64_t offset);

/* fsyncs every segment and index up to the LEO; advances the recovery point.
 * (A roll also fsyncs the segment it closes, as Kafka's asynchronous flush
 * after a roll does, and advances the recovery point to the new base.) */
void ks_log_flush(struct ks_log *log);
/* Called periodically: flushes when flush.ms has passed since the last flush. */
void ks_log_maybe_flush(struct ks_log *log, ks_time_ns now_ns);

/* Retention (kafka-reference 3.5): deletes whole old segments by retention.ms
 * and retention.bytes, only below hw, never the active segment. Returns the
 * number of segments deleted; the log start offset moves. */
int32_t ks_log_apply_retention(struct ks_log *log, ks_time_ns now_ns, int64_t hw);
/* Raises the log start offset (DeleteRecords, or a leader's start offset seen
 * by a follower); deletes segments wholly below it. */
void ks_log_advance_start_offset(struct ks_log *log, int64_t offset);
/* Compaction for cleanup.policy=compact, below hw and never the active segment.
 * Returns records removed. Swaps with .cleaned/.swap renames. */
int64_t ks_log_compact(struct ks_log *log, ks_time_ns now_ns, int64_t hw);

/* ---- transactions (KIP-98): producer state and the `.txnindex` ---- */

/* One aborted transaction of a segment's `.txnindex` (Kafka's AbortedTxn),
 * and of a fetch response's abortedTransactions (producerId, firstOffset). */
struct ks_aborted_txn {
    int64_t producer_id;
    int64_t first_offset;
    int64_t last_offset;        /* the ABORT marker's offset */
    int64_t last_stable_offset; /* the LSO once the marker was appended */
};
/* ProducerStateManager.firstUnstableOffset: the first offset of the oldest
 * transaction still open, or completed by a marker at or above hw; -1 if
 * none. Rebuilds the producer state from the log when it is not known (after
 * an open or a truncation). */
int64_t ks_log_first_unstable_offset(struct ks_log *log, int64_t hw);
/* ProducerStateManager.onHighWatermarkUpdated / onLogStartOffsetIncremented:
 * completed transactions whose marker is below `offset` are forgotten (open
 * ones stay). A no-op while the list is not known. */
void ks_log_on_stable_below(struct ks_log *log, int64_t offset);
/* UnifiedLog.lastStableOffset: min(first unstable offset, hw). */
int64_t ks_log_last_stable_offset(struct ks_log *log, int64_t hw);
/* Transactions open (no marker yet) in the log. */
int32_t ks_log_open_txn_count(struct ks_log *log);
/* UnifiedLog.hasOngoingTransaction: whether the producer has a transaction
 * open (a transactional batch and no marker after it) in the log. */
bool ks_log_has_ongoing_txn(struct ks_log *log, int64_t producer_id);
/* UnifiedLog.collectAbortedTransactions: replaces out's contents (struct
 * ks_aborted_txn) with the aborted transactions, oldest marker first, whose
 * marker is at or above `from` and whose first offset is below `upto`. */
void ks_log_collect_aborted(const struct ks_log *log, int64_t from, int64_t upto, GArray *out);

/* ---- leader epoch cache (KIP-101), persisted in leader-epoch-checkpoint ---- */

/* Records that `epoch` starts at start_offset (a new leader: its LEO). Ignored
 * if epoch is not above the latest. Persists the file. */
void ks_log_epoch_assign(struct ks_log *log, int32_t epoch, int64_t start_offset);
/* -1 if none. */
static inline int32_t ks_log_latest_epoch(const struct ks_log *log)
{
    return ks__log_hot(log)->latest_epoch;
}

bool ks__log_epoch_end_offset_scan(const struct ks_log *log, int32_t requested_epoch,
                                   int32_t *epoch_out, int64_t *end_offset_out);
/* KIP-101/279 lookup: the largest known epoch <= requested and its end offset
 * (start of the next higher epoch, or the LEO for the latest). Returns false
 * (and epoch -1, offset -1) when no such epoch is known. A follower or
 * consumer of the current epoch, nearly every fetch, is answered here from
 * the latest epoch and the LEO, without a call. */
static inline bool ks_log_epoch_end_offset(const struct ks_log *log, int32_t requested_epoch,
                                           int32_t *epoch_out, int64_t *end_offset_out)
{
    const struct ks__log_hot *hot = ks__log_hot(log);
    if (hot->latest_epoch >= 0 && hot->latest_epoch <= requested_epoch) {
        *epoch_out = hot->latest_epoch;
        *end_offset_out = hot->leo;
        return true;
    }
    return ks__log_epoch_end_offset_scan(log, requested_epoch, epoch_out, end_offset_out);
}
/* Epoch of the batch holding offset LEO - 1, i.e. the last fetched epoch; -1
 * if none. */
int32_t ks_log_epoch_at_end(const struct ks_log *log);
/* The cache's entries, oldest first, for observers (the driver draws logs
 * with them): the count, and entry index's epoch and start offset. */
int32_t ks_log_epoch_count(const struct ks_log *log);
void ks_log_epoch_entry(const struct ks_log *log, int32_t index, int32_t *epoch_out,
                        int64_t *start_offset_out);

/* ---- checkpoint files (kafka-reference 1.4) ---- */

struct ks_checkpoint_entry {
    char topic[KS_TOPIC_NAME_BYTES_MAX + 1];
    int32_t partition;
    int64_t offset;
};
/* Writes `<name>.tmp`, fsyncs, renames over `path`. */
void ks_checkpoint_write(ks_world *world, ks_node_id node, const char *path,
                         const struct ks_checkpoint_entry *entries, size_t entry_count);

/* The same file put together line by line, for a writer with the entries
 * elsewhere (the broker's partitions): one buffer sized up front by
 * ks_checkpoint_text_init for at most entry_count_max lines with names of at
 * most topic_bytes_max bytes, numbers written without printf. The broker
 * writes one line per hosted partition every 5 s (replication offsets) and
 * every 60 s (recovery points, log starts), so the lines must be cheap.
 * ks_checkpoint_text_write writes the file as ks_checkpoint_write does, byte
 * for byte, and releases the buffer. */
struct ks_checkpoint_text {
    char *data;   /* header room, then the lines */
    size_t bytes; /* used, header room included */
    size_t capacity;
    size_t count; /* lines */
    size_t topic_bytes_max;
    const char *checked_topic; /* the last name checked, and its length */
    size_t checked_topic_bytes;
};
void ks_checkpoint_text_init(struct ks_checkpoint_text *text, size_t entry_count_max,
                             size_t topic_bytes_max);
void ks_checkpoint_text_add(struct ks_checkpoint_text *text, const char *topic, size_t topic_bytes,
                            int32_t partition, int64_t offset);
void ks_checkpoint_text_write(ks_world *world, ks_node_id node, const char *path,
                              struct ks_checkpoint_text *text);
/* Reads a checkpoint file; returns a GArray of ks_checkpoint_entry owned by the
 * caller, or NULL if the file is missing or malformed. */
GArray *ks_checkpoint_read(ks_world *world, ks_node_id node, const char *path);
