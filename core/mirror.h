/*
** core/mirror.h: one MirrorMaker 2 source task (KIP-382) as a world node: it
** reads a topic of a source cluster and writes each record to the remote
** topic of a target cluster ("east.orders", DefaultReplicationPolicy), in the
** same partition, with its key, value, timestamp and headers; it writes
** offset syncs (core/mirror_sync.h) to the offset-syncs topic on the source
** cluster (offset-syncs.topic.location = source, the default). With
** checkpoints configured it is also the checkpoint task: it translates the
** groups' committed offsets into checkpoints on the target.
**
** The node is a client of two clusters: it lives outside both clusters'
** views (sim/world.h ks_world_view_new) and is given the world's node id of
** each cluster's broker 1, so broker b of a cluster is node base + b - 1.
** Topics are addressed by index in each cluster's spec; the remote topic and
** the offset-syncs topic exist on their clusters from the start (MM2 creates
** them, MirrorSourceConnector.createNewTopics and
** MirrorUtils.createSinglePartitionCompactedTopic; ksim's specs list them).
**
** Timer kinds 500 .. 509 (core/proto.h's list of ranges).
** The design notes live at the top of core/mirror.c.
*/
#pragma once

#include "config.h"
#include "world.h"

#include <stdbool.h>
#include <stdint.h>

struct ks_mirror;

struct ks_mirror_config {
    ks_node_id node;               /* the task's node in the world it is given */
    ks_node_id source_broker_node; /* the world's node id of the source's broker 1 */
    int32_t source_broker_count;   /* brokers 1..count */
    ks_node_id target_broker_node; /* the world's node id of the target's broker 1 */
    int32_t target_broker_count;
    int32_t source_topic_index;       /* in the source cluster's spec */
    const char *source_topic_name;    /* borrowed: offset-sync keys name it */
    int32_t target_topic_index;       /* the remote topic, in the target's spec */
    int32_t offset_syncs_topic_index; /* in the source's spec; -1: emit.offset-syncs.enabled
                                         = false */
    int32_t partition_count;          /* of the source topic; the remote topic has as many */
    int64_t offset_lag_max;           /* offset.lag.max = 100 */
    /* The Connect worker's producer (Worker.baseProducerConfigs: acks = all,
     * max.in.flight.requests.per.connection = 1, delivery.timeout.ms = MAX:
     * a batch is retried until it is acked). */
    enum ks_acks acks;
    bool enable_idempotence;    /* the client's default, true since Kafka 3.0 */
    int64_t request_timeout_ns; /* request.timeout.ms = 30000 */
    int64_t retry_backoff_ns;   /* retry.backoff.ms = 100 */
    /* The source consumer (MirrorSourceConfig's consumer: assign, no group). */
    int64_t fetch_max_wait_ns;         /* fetch.max.wait.ms = 500 */
    int32_t max_poll_records;          /* max.poll.records = 500 */
    int32_t max_partition_fetch_bytes; /* max.partition.fetch.bytes = 1048576 */
    /* offset.flush.interval.ms = 60000 (WorkerConfig): the task's commit():
     * delayed offset syncs become pending, and the source offsets the task
     * would resume from after a restart are committed. */
    int64_t offset_flush_interval_ns;
    int64_t start_ns; /* the task starts this long after the world's time 0 */
    /* The checkpoint side (MirrorCheckpointTask), on the same node: reads
     * the offset-syncs topic, and every emit.checkpoints.interval.seconds
     * fetches each group's committed offsets on the source and writes the
     * translated ones to the checkpoints topic on the target. */
    int32_t checkpoints_topic_index; /* "<source>.checkpoints.internal" in the target's spec;
                                        -1: emit.checkpoints.enabled = false */
    const char *target_topic_name;   /* borrowed: checkpoint keys name the remote topic */
    const char *const *group_ids;    /* borrowed: the groups to checkpoint (MM2's groups) */
    int32_t group_count;
    int64_t emit_checkpoints_interval_ns; /* emit.checkpoints.interval.seconds = 60 */
    /* sync.group.offsets.enabled = false: also move each group's offsets on
     * the target to its last checkpoint (only forward, only while the group
     * is empty there), every sync.group.offsets.interval.seconds = 60. */
    bool sync_group_offsets_enabled;
    int64_t sync_group_offsets_interval_ns;
};

/* Kafka's defaults for every field above but the node ids, counts and topic
 * indexes (set them after). */
void ks_mirror_config_defaults(struct ks_mirror_config *out);

/* What the driver learns: the target acked the copy of the source record at
 * upstream_offset at downstream_offset (MirrorSourceTask.commitRecord). */
struct ks_mirror_observer {
    void *context;
    void (*on_mirrored)(void *context, int32_t partition, int64_t upstream_offset,
                        int64_t downstream_offset);
    /* A checkpoint of group group_ids[group_index] was acked on the
     * checkpoints topic; may be NULL. */
    void (*on_checkpoint)(void *context, int32_t group_index, int32_t partition,
                          int64_t upstream_offset, int64_t downstream_offset);
};

/* Builds the task on world (config and observer borrowed, they must outlive
 * it) and registers its receiver on config->node. Owned: ks_mirror_free. */
struct ks_mirror *ks_mirror_new(ks_world *world, const struct ks_mirror_config *config,
                                const struct ks_mirror_observer *observer);
void ks_mirror_start(struct ks_mirror *mirror);
void ks_mirror_free(struct ks_mirror *mirror); /* NULL is a no-op */
/* The world already dropped the node's timers: forget in-memory state. */
void ks_mirror_on_crash(struct ks_mirror *mirror);
/* A new incarnation resumes from the source offsets committed at the last
 * flush (Connect's offsets topic), so it copies again what it copied after
 * that flush: MM2 is at least once across a restart. */
void ks_mirror_on_restart(struct ks_mirror *mirror);
/* A broker of the source (target false) or the target cluster went down:
 * its connections were reset, requests in flight to it fail at once. */
void ks_mirror_on_broker_down(struct ks_mirror *mirror, bool target, int32_t broker);

/* The next source offset of partition whose copy the target has not acked
 * (mirror_lag's mirrored_next, sim/mirror_check.h). */
int64_t ks_mirror_mirrored_next(const struct ks_mirror *mirror, int32_t partition);
/* The source partition's high watermark as the last fetch answer gave it. */
int64_t ks_mirror_source_hw(const struct ks_mirror *mirror, int32_t partition);
/* Records acked on the target so far (a record copied twice counts twice). */
int64_t ks_mirror_record_count(const struct ks_mirror *mirror);
/* Offset syncs acked on the offset-syncs topic so far. */
int64_t ks_mirror_sync_count(const struct ks_mirror *mirror);
/* Checkpoints acked on the checkpoints topic so far. */
int64_t ks_mirror_checkpoint_count(const struct ks_mirror *mirror);
/* Target group commits of sync.group.offsets the coordinator accepted. */
int64_t ks_mirror_group_sync_count(const struct ks_mirror *mirror);
/* The last checkpoint of a group's partition acked on the target (what a
 * failover would start from: RemoteClusterUtils.translateOffsets reads it
 * back), false when none. */
struct ks_offset_sync;
bool ks_mirror_checkpoint(const struct ks_mirror *mirror, int32_t group_index, int32_t partition,
                          struct ks_offset_sync *checkpoint_out);
/* True when every partition is copied up to the source HW it last saw and
 * nothing is in flight. */
bool ks_mirror_caught_up(const struct ks_mirror *mirror);
/* Whole-object check (STYLE 3.7): invariants M1..M4 of core/mirror.c. */
void ks_mirror_check(const struct ks_mirror *mirror);
