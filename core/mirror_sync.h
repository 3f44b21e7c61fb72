/*
** core/mirror_sync.h: MirrorMaker 2's offset bookkeeping (KIP-382, KIP-545),
** the part of a mirror that decides what a disaster-recovery failover
** re-reads: which offset syncs the source task writes, how the checkpoint
** task translates a consumer group's committed offset on the source cluster
** into an offset on the target cluster, which checkpoints it emits, and the
** bytes of the records MM2 writes for them.
**
** Pure logic on integers and byte buffers: no world, no clock. A mirror node
** (to come: a consumer on the source, a producer to the target) drives it.
** The translated offset is always at or before the target offset of the
** group's real position (T1 in core/mirror_sync.c), so a group that fails
** over re-reads records, never skips them.
*/
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* MirrorSourceConfig.OFFSET_LAG_MAX_DEFAULT (offset.lag.max). */
#define KS_MIRROR_OFFSET_LAG_MAX_DEFAULT 100
/* OffsetSyncWriter.MAX_OUTSTANDING_OFFSET_SYNCS: syncs sent and not yet acked. */
#define KS_MIRROR_OUTSTANDING_SYNCS_MAX 10
/* OffsetSyncStore.SYNCS_PER_PARTITION: one sync per bit of an offset. */
#define KS_MIRROR_SYNCS_PER_PARTITION 64
/* MirrorCheckpointConfig.EMIT_CHECKPOINTS_INTERVAL_SECONDS_DEFAULT, in ns. */
#define KS_MIRROR_EMIT_CHECKPOINTS_INTERVAL_NS_DEFAULT (60ULL * 1000000000ULL)

/* One offset sync: record upstream_offset of a source partition was written
 * at downstream_offset of its target partition. */
struct ks_offset_sync {
    int64_t upstream_offset;
    int64_t downstream_offset;
};

/* ---- names (DefaultReplicationPolicy) ----------------------------------- */

/* Owned by the caller (g_free). "us-west" + "orders" -> "us-west.orders"
 * (formatRemoteTopic). */
char *ks_mirror_remote_topic(const char *source_alias, const char *topic);
/* "mm2-offset-syncs.<alias>.internal" (offsetSyncsTopic); with the default
 * offset-syncs.topic.location = source the topic lives on the source cluster
 * and alias is the target's. Owned by the caller (g_free). */
char *ks_mirror_offset_syncs_topic(const char *alias);
/* "<source alias>.checkpoints.internal" (checkpointsTopic), on the target
 * cluster. Owned by the caller (g_free). */
char *ks_mirror_checkpoints_topic(const char *source_alias);

/* ---- the source task's side: OffsetSyncWriter --------------------------- */

struct ks_offset_sync_writer;

/* Source partitions are addressed by an index in [0, partition_count) that
 * the caller assigns. Owned by the caller: ks_offset_sync_writer_free. */
struct ks_offset_sync_writer *ks_offset_sync_writer_new(int32_t partition_count,
                                                        int64_t offset_lag_max);
void ks_offset_sync_writer_free(struct ks_offset_sync_writer *writer); /* NULL is a no-op */
/* The target acked the mirrored copy of record upstream_offset at
 * downstream_offset (MirrorSourceTask.commitRecord): queue a sync now when
 * the last one is stale, else keep it delayed until the next commit.
 * Returns whether it was queued for an immediate send. */
bool ks_offset_sync_writer_record(struct ks_offset_sync_writer *writer, int32_t partition_index,
                                  int64_t upstream_offset, int64_t downstream_offset);
/* The periodic offset commit (MirrorSourceTask.commit): every delayed sync
 * becomes pending. */
void ks_offset_sync_writer_promote_delayed(struct ks_offset_sync_writer *writer);
/* Takes the next pending sync to send (firePendingOffsetSyncs, one step):
 * false when none is pending or KS_MIRROR_OUTSTANDING_SYNCS_MAX are
 * outstanding. The caller sends it to partition 0 of the offset-syncs topic
 * and calls ks_offset_sync_writer_sent_done when the send completes. */
bool ks_offset_sync_writer_next(struct ks_offset_sync_writer *writer, int32_t *partition_index_out,
                                struct ks_offset_sync *sync_out);
/* A send finished, acked or failed (the producer callback's release). */
void ks_offset_sync_writer_sent_done(struct ks_offset_sync_writer *writer);
int32_t ks_offset_sync_writer_outstanding_count(const struct ks_offset_sync_writer *writer);
int32_t ks_offset_sync_writer_pending_count(const struct ks_offset_sync_writer *writer);
int32_t ks_offset_sync_writer_delayed_count(const struct ks_offset_sync_writer *writer);

/* ---- the checkpoint task's side: OffsetSyncStore ------------------------ */

struct ks_offset_sync_store;

/* initialization_must_read_to_end: while the initial read of the syncs topic
 * runs, keep only the latest sync per partition (OffsetSyncStore.start).
 * Owned by the caller: ks_offset_sync_store_free. */
struct ks_offset_sync_store *ks_offset_sync_store_new(int32_t partition_count,
                                                      bool initialization_must_read_to_end);
void ks_offset_sync_store_free(struct ks_offset_sync_store *store); /* NULL is a no-op */
/* One sync read from the syncs topic, in topic order (handleRecord). */
void ks_offset_sync_store_add(struct ks_offset_sync_store *store, int32_t partition_index,
                              struct ks_offset_sync sync);
/* The initial read reached the end of the syncs topic: translation starts. */
void ks_offset_sync_store_read_to_end(struct ks_offset_sync_store *store);

enum ks_translate_result {
    KS_TRANSLATE_OK,        /* *downstream_offset_out holds the target offset */
    KS_TRANSLATE_NOT_READY, /* before the initial read to the end */
    KS_TRANSLATE_NO_SYNC,   /* no sync for the partition */
    KS_TRANSLATE_TOO_OLD,   /* the group is before every sync kept (Kafka's -1) */
};
/* translateDownstream: the target offset a group committed at
 * upstream_offset on the source may resume from. At or before the real one
 * (T1); one past the closest sync when the group is ahead of it. */
enum ks_translate_result ks_offset_sync_store_translate(const struct ks_offset_sync_store *store,
                                                        int32_t partition_index,
                                                        int64_t upstream_offset,
                                                        int64_t *downstream_offset_out);
/* The sync kept at slot (0 = the latest); false when the partition has none. */
bool ks_offset_sync_store_slot(const struct ks_offset_sync_store *store, int32_t partition_index,
                               int32_t slot, struct ks_offset_sync *sync_out);
/* Whole-object check (STYLE 3.7): invariants A..C of every partition; asserts. */
void ks_offset_sync_store_check(const struct ks_offset_sync_store *store);

/* MirrorCheckpointTask.checkpointIsMoreRecent: whether a new checkpoint of a
 * group's partition is emitted, given the last one emitted (NULL: none). It
 * is after an upstream rewind of the group, or when it moves the target
 * offset forward; never a target rewind otherwise. */
bool ks_checkpoint_is_more_recent(const struct ks_offset_sync *last,
                                  const struct ks_offset_sync *checkpoint);

/* MirrorCheckpointTask.checkpoint and checkpointsForGroup's filters: the
 * checkpoint of a group committed at upstream_offset of a source partition,
 * given the last one emitted for it (NULL: none). Returns true and fills
 * *checkpoint_out when one is emitted: the offset translates (not too old)
 * and the checkpoint is more recent. */
bool ks_checkpoint_next(const struct ks_offset_sync_store *store, int32_t partition_index,
                        int64_t upstream_offset, const struct ks_offset_sync *last,
                        struct ks_offset_sync *checkpoint_out);
/* MirrorCheckpointTask.syncGroupOffset (sync.group.offsets.enabled), for a
 * group that is empty on the target: whether the target group's offset is set
 * to the checkpoint's downstream offset. Always for a partition the target
 * group has no offset for (has_target_offset false), else only forward. */
bool ks_checkpoint_sync_target(bool has_target_offset, int64_t target_offset,
                               int64_t checkpoint_downstream_offset);

/* ---- record bytes (OffsetSync, Checkpoint: Kafka protocol Structs) ------ */

/* Each encoder writes at most out_capacity bytes and returns the size the
 * encoding needs (write again with a bigger buffer when it is larger). A
 * string is at most INT16_MAX bytes (asserted). */
size_t ks_offset_sync_key_encode(const char *topic, int32_t partition, uint8_t *out,
                                 size_t out_capacity);
#define KS_OFFSET_SYNC_VALUE_BYTES 16
void ks_offset_sync_value_encode(struct ks_offset_sync sync,
                                 uint8_t out[KS_OFFSET_SYNC_VALUE_BYTES]);
size_t ks_checkpoint_key_encode(const char *group, const char *topic, int32_t partition,
                                uint8_t *out, size_t out_capacity);
size_t ks_checkpoint_value_encode(struct ks_offset_sync checkpoint, const char *metadata,
                                  uint8_t *out, size_t out_capacity);

/* Decoders: false on a short, long or malformed buffer. Strings are copied
 * into the caller's buffers (NUL-terminated, truncation is a failure). */
bool ks_offset_sync_key_decode(const uint8_t *bytes, size_t byte_count, char *topic_out,
                               size_t topic_capacity, int32_t *partition_out);
bool ks_offset_sync_value_decode(const uint8_t *bytes, size_t byte_count,
                                 struct ks_offset_sync *sync_out);
bool ks_checkpoint_key_decode(const uint8_t *bytes, size_t byte_count, char *group_out,
                              size_t group_capacity, char *topic_out, size_t topic_capacity,
                              int32_t *partition_out);
bool ks_checkpoint_value_decode(const uint8_t *bytes, size_t byte_count,
                                struct ks_offset_sync *checkpoint_out, char *metadata_out,
                                size_t metadata_capacity);
