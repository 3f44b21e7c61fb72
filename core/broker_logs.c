/*
** core/broker_logs.c: the broker's log directory broker-<id>/ (Kafka's
** LogManager): loading every partition folder at start, the three
** checkpoint files, the clean-shutdown marker, and the periodic log tasks
** (flush by log.flush.interval.ms, retention, compaction).
**
**   broker-<id>/<topic>-<partition>/        one ks_log each (core/log.c)
**   broker-<id>/replication-offset-checkpoint     HW per partition, every
**                                                  replica.high.watermark.checkpoint.interval.ms
**   broker-<id>/recovery-point-offset-checkpoint  recovery point per partition, every
**                                                  log.flush.offset.checkpoint.interval.ms
**   broker-<id>/log-start-offset-checkpoint       log start per partition when > 0,
**                                                  written with the recovery points
**   broker-<id>/.kafka_cleanshutdown              written by a clean shutdown, deleted
**                                                  when read at start
**
** Invariants:
**   L1  a log is opened with recovery (from its recovery point) unless the
**       marker said the last shutdown was clean; a crash never writes it.
**   L2  log tasks keep R2 of broker_replica.c: retention deletes only below
**       the HW, and a HW left below the new log start is raised to it.
**
** What Kafka flushes, and how ksim does it (UnifiedLog, LocalLog, LogManager):
**   - an append with flush.messages reached: the request waits for the fsync
**     (UnifiedLog.append calls flush; core/log.c);
**   - flush.ms (LogManager.flushDirtyLogs), the roll of a segment
**     (UnifiedLog.roll schedules flushUptoOffsetExclusive), the offset
**     checkpoints (ReplicaManager's and LogManager's scheduler tasks) and
**     leader-epoch truncations (truncateFromEndAsyncFlush): fsyncs in the
**     background, nobody waits (ks_disk_fsync_background);
**   - a truncation writes the recovery points again at once
**     (LogManager.truncateTo and truncateFullyAndStartAt), so that recovery
**     after a crash starts at or below the truncation;
**   - a clean shutdown flushes every log, writes the checkpoints, then the
**     marker (LogManager.shutdown).
** Everything else reaches the disk by the operating system's writeback
** (sim/disk.c, W1-W3), which Kafka knows nothing of.
**
** The recovery line. A crash remembers each log's LEO and segments
** (ks__logs_remember): after a power loss, the bytes that were only in the
** page cache are not in the files at all, so recovery alone would report a
** clean, shorter log ("dropped 0 batches"). The RECOVERY event compares the
** recovered log with what the broker had, and says separately what recovery
** itself cut (a torn tail). That memory serves the narration only.
**
** Simplifications: the log start checkpoint shares the recovery point's
** interval (Kafka has log.flush.start.offset.checkpoint.interval.ms);
** flushing, retention and compaction run on one timer at the smallest of
** log.retention.check.interval.ms, log.cleaner.backoff.ms (15 s, when a
** topic compacts) and any topic's flush.ms.
*/
#include "broker_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum checkpoint_kind { CHECKPOINT_HW, CHECKPOINT_RECOVERY, CHECKPOINT_LOG_START };

static const char *checkpoint_file(enum checkpoint_kind kind)
{
    switch (kind) {
    case CHECKPOINT_HW: return "replication-offset-checkpoint";
    case CHECKPOINT_RECOVERY: return "recovery-point-offset-checkpoint";
    case CHECKPOINT_LOG_START: return "log-start-offset-checkpoint";
    }
    return "";
}

/* One line per hosted partition, in hosting order (ReplicaManager.checkpointHighWatermarks,
 * LogManager.checkpointLogRecoveryOffsets and checkpointLogStartOffsets; the
 * format is CheckpointFile's, core/log.c). The lines go straight into the
 * file's text: at 12 x 10,000 partitions each broker writes 2,500 lines every
 * 5 s even when idle. */
static void write_checkpoint(struct ks_broker *broker, enum checkpoint_kind kind)
{
    size_t topic_bytes_max = 1;
    for (int32_t t = 0; t < broker->topic_count; t++) {
        size_t name_bytes = strlen(broker->topics[t].name);
        topic_bytes_max = name_bytes > topic_bytes_max ? name_bytes : topic_bytes_max;
    }
    struct ks_checkpoint_text text;
    ks_checkpoint_text_init(&text, broker->hosted->len, topic_bytes_max);
    int32_t name_topic = -1; /* the topic whose name length name_bytes is */
    size_t name_bytes = 0;
    for (guint i = 0; i < broker->hosted->len; i++) {
        struct ks__replica *replica = ks__hosted(broker, i);
        if (replica->log == NULL) {
            continue;
        }
        int64_t offset = 0;
        switch (kind) {
        case CHECKPOINT_HW: offset = replica->hw; break;
        case CHECKPOINT_RECOVERY: offset = ks_log_recovery_point(replica->log); break;
        case CHECKPOINT_LOG_START: offset = ks_log_start_offset(replica->log); break;
        }
        if (kind == CHECKPOINT_LOG_START && offset == 0) {
            continue;
        }
        const char *name = broker->topics[replica->topic_index].name;
        if (replica->topic_index != name_topic) {
            name_topic = replica->topic_index;
            name_bytes = strlen(name);
        }
        ks_checkpoint_text_add(&text, name, name_bytes, replica->partition, offset);
    }
    char path[64];
    g_snprintf(path, sizeof path, "%s/%s", broker->dir, checkpoint_file(kind));
    ks_checkpoint_text_write(broker->world, (ks_node_id)broker->id, path, &text);
}

static void hw_checkpoint_tick(ks_world *world, void *context)
{
    struct ks_broker *broker = context;
    write_checkpoint(broker, CHECKPOINT_HW);
    broker->hw_checkpoint_timer =
        ks_world_schedule(world, (ks_node_id)broker->id,
                          (ks_time_ns)broker->spec->cluster->replica_hw_checkpoint_interval_ns,
                          KS_TIMER_BROKER_HW_CHECKPOINT, hw_checkpoint_tick, broker);
}

static void recovery_checkpoint_tick(ks_world *world, void *context)
{
    struct ks_broker *broker = context;
    write_checkpoint(broker, CHECKPOINT_RECOVERY);
    write_checkpoint(broker, CHECKPOINT_LOG_START);
    broker->recovery_checkpoint_timer =
        ks_world_schedule(world, (ks_node_id)broker->id,
                          (ks_time_ns)broker->spec->cluster->recovery_point_checkpoint_interval_ns,
                          KS_TIMER_BROKER_RECOVERY_CHECKPOINT, recovery_checkpoint_tick, broker);
}

static ks_time_ns log_task_interval(const struct ks_broker *broker)
{
    ks_time_ns interval = (ks_time_ns)broker->spec->cluster->retention_check_interval_ns;
    for (int32_t t = 0; t < broker->topic_count; t++) {
        const struct ks_log_config *log = &broker->topics[t].log;
        if (log->cleanup_compact && KS__COMPACTION_INTERVAL_NS < interval) {
            interval = KS__COMPACTION_INTERVAL_NS;
        }
        if (log->flush_ns > 0 && log->flush_ns != KS_INT64_UNSET &&
            (ks_time_ns)log->flush_ns < interval) {
            interval = (ks_time_ns)log->flush_ns;
        }
    }
    return interval > 0 ? interval : KS_NS_PER_S;
}

/* A retention or compaction event about the replica. */
static struct ks_cluster_event log_event(const struct ks__replica *replica,
                                         enum ks_cluster_event_kind kind)
{
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, 0, kind);
    event.topic_index = replica->topic_index;
    event.partition = replica->partition;
    return event;
}

/* Flush, retention and compaction of one replica. */
static void replica_log_tasks(struct ks_broker *broker, struct ks__replica *replica, ks_time_ns now)
{
    ks_log_maybe_flush(replica->log, now);
    const struct ks_log_config *config = &broker->topics[replica->topic_index].log;
    if (config->cleanup_delete) {
        int64_t start_before = ks_log_start_offset(replica->log);
        int32_t deleted = ks_log_apply_retention(replica->log, now, replica->hw);
        if (ks_log_start_offset(replica->log) != start_before) {
            ks__serve_touch(broker, replica); /* the log start (S5 of broker_serve.c) */
        }
        if (deleted > 0) {
            struct ks_cluster_event event = log_event(replica, KS_EV_RETENTION);
            event.segment_count = deleted;
            event.log_start_offset = ks_log_start_offset(replica->log);
            event.offset_from = start_before;
            event.offset_to = event.log_start_offset;
            ks_broker_emit(broker, &event);
        }
    }
    if (config->cleanup_compact) {
        int64_t removed = ks_log_compact(replica->log, now, replica->hw);
        if (removed > 0) {
            struct ks_cluster_event event = log_event(replica, KS_EV_COMPACTION);
            event.record_count = removed;
            ks_broker_emit(broker, &event);
        }
    }
    if (replica->hw < ks_log_start_offset(replica->log)) {
        replica->hw = ks_log_start_offset(replica->log); /* L2 */
        ks__serve_touch(broker, replica);
    }
}

static void log_tasks_tick(ks_world *world, void *context)
{
    struct ks_broker *broker = context;
    ks_time_ns now = ks__broker_now_ns(broker);
    for (guint i = 0; i < broker->hosted->len; i++) {
        struct ks__replica *replica = ks__hosted(broker, i);
        if (replica->log != NULL) {
            replica_log_tasks(broker, replica, now);
        }
    }
    broker->log_tasks_timer =
        ks_world_schedule(world, (ks_node_id)broker->id, log_task_interval(broker),
                          KS_TIMER_BROKER_LOG_TASKS, log_tasks_tick, broker);
}

void ks__logs_start_tasks(struct ks_broker *broker)
{
    const struct ks_cluster_config *cluster = broker->spec->cluster;
    ks_time_ns hw_ns = (ks_time_ns)cluster->replica_hw_checkpoint_interval_ns;
    broker->hw_checkpoint_timer = ks_world_schedule(
        broker->world, (ks_node_id)broker->id, ks__broker_first_run_ns(broker, hw_ns, hw_ns),
        KS_TIMER_BROKER_HW_CHECKPOINT, hw_checkpoint_tick, broker);
    ks_time_ns recovery_ns = (ks_time_ns)cluster->recovery_point_checkpoint_interval_ns;
    broker->recovery_checkpoint_timer =
        ks_world_schedule(broker->world, (ks_node_id)broker->id,
                          ks__broker_first_run_ns(broker, recovery_ns, recovery_ns),
                          KS_TIMER_BROKER_RECOVERY_CHECKPOINT, recovery_checkpoint_tick, broker);
    ks_time_ns log_ns = log_task_interval(broker);
    broker->log_tasks_timer = ks_world_schedule(broker->world, (ks_node_id)broker->id,
                                                ks__broker_first_run_ns(broker, log_ns, log_ns),
                                                KS_TIMER_BROKER_LOG_TASKS, log_tasks_tick, broker);
}

/* ---- loading ------------------------------------------------------------------------ */

/* Finds a checkpoint entry's offset, or -1. */
static int64_t checkpoint_lookup(GArray *entries, const char *topic, int32_t partition)
{
    if (entries == NULL) {
        return -1;
    }
    for (guint i = 0; i < entries->len; i++) {
        const struct ks_checkpoint_entry *entry =
            &g_array_index(entries, struct ks_checkpoint_entry, i);
        if (entry->partition == partition && strcmp(entry->topic, topic) == 0) {
            return entry->offset;
        }
    }
    return -1;
}

static GArray *read_checkpoint(struct ks_broker *broker, enum checkpoint_kind kind)
{
    char path[96];
    g_snprintf(path, sizeof path, "%s/%s", broker->dir, checkpoint_file(kind));
    return ks_checkpoint_read(broker->world, (ks_node_id)broker->id, path);
}

/* Splits a folder name "<topic>-<partition>" into topic (room for
 * KS_TOPIC_NAME_BYTES_MAX + 1) and partition; false if it is not one. */
static bool parse_partition_dir(const char *name, char *topic, long *partition)
{
    const char *dash = strrchr(name, '-');
    if (dash == NULL || dash == name || dash[1] == '\0') {
        return false;
    }
    char *end = NULL;
    *partition = strtol(dash + 1, &end, 10);
    if (*end != '\0' || *partition < 0) {
        return false;
    }
    size_t length = (size_t)(dash - name);
    if (length > KS_TOPIC_NAME_BYTES_MAX) {
        return false;
    }
    memcpy(topic, name, length);
    topic[length] = '\0';
    return true;
}

/* ---- the recovery line ------------------------------------------------------------ */

/* What a log held when its broker crashed (ks__logs_remember). */
struct ks__log_memory {
    bool known;
    int64_t leo;
    GArray *segments; /* struct ks_log_segment_summary, owned */
};

void ks__logs_remember(struct ks_broker *broker)
{
    if (broker->log_memory == NULL) {
        broker->log_memory = calloc((size_t)broker->topic_count, sizeof *broker->log_memory);
        ks_assert(broker->log_memory != NULL);
        for (int32_t t = 0; t < broker->topic_count; t++) {
            broker->log_memory[t] =
                calloc((size_t)broker->topics[t].partition_count, sizeof **broker->log_memory);
            ks_assert(broker->log_memory[t] != NULL);
        }
    }
    for (int32_t t = 0; t < broker->topic_count; t++) {
        for (int32_t p = 0; p < broker->topics[t].partition_count; p++) {
            struct ks__log_memory *memory = &broker->log_memory[t][p];
            const struct ks__replica *replica = broker->replicas[t][p];
            memory->known = replica != NULL && replica->log != NULL;
            if (!memory->known) {
                continue;
            }
            if (memory->segments == NULL) {
                memory->segments = g_array_new(FALSE, FALSE, sizeof(struct ks_log_segment_summary));
            }
            memory->leo = ks_log_leo(replica->log);
            ks_log_summarize(replica->log, memory->segments);
        }
    }
}

void ks__logs_forget(struct ks_broker *broker)
{
    if (broker->log_memory == NULL) {
        return;
    }
    for (int32_t t = 0; t < broker->topic_count; t++) {
        for (int32_t p = 0; p < broker->topics[t].partition_count; p++) {
            if (broker->log_memory[t][p].segments != NULL) {
                g_array_free(broker->log_memory[t][p].segments, TRUE);
            }
        }
        free(broker->log_memory[t]);
    }
    free(broker->log_memory);
    broker->log_memory = NULL;
}

/* Sums of the segments at or above base_offset (bytes: of all of them);
 * counts -1 when a segment's are not known. */
struct log_sums {
    int64_t bytes;
    int64_t batches;
    int64_t records;
};

static struct log_sums log_sums(const GArray *segments, int64_t base_offset)
{
    struct log_sums sums = { 0, 0, 0 };
    for (guint i = 0; i < segments->len; i++) {
        const struct ks_log_segment_summary *segment =
            &g_array_index(segments, struct ks_log_segment_summary, i);
        sums.bytes += segment->size_bytes;
        if (segment->base_offset < base_offset) {
            continue; /* below the recovery: the same before and after */
        }
        if (segment->batch_count < 0 || sums.batches < 0) {
            sums.batches = sums.records = -1;
            continue;
        }
        sums.batches += segment->batch_count;
        sums.records += segment->record_count;
    }
    return sums;
}

static int64_t lost(int64_t before, int64_t after)
{
    if (before < 0 || after < 0) {
        return -1;
    }
    return before > after ? before - after : 0;
}

/* The RECOVERY event of a log just opened: what recovery cut, and what the
 * log lost against the broker's memory of it (see the header). */
static void recovery_event(struct ks_broker *broker, const struct ks__replica *replica,
                           const struct ks_log_recovery_report *report)
{
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, 0, KS_EV_RECOVERY);
    event.topic_index = replica->topic_index;
    event.partition = replica->partition;
    event.offset = report->recovered_from_offset;
    event.offset_old = report->leo_before;
    event.leo_new = report->leo_after;
    event.cut_batch_count = report->dropped_batch_count;
    event.cut_byte_count = report->dropped_bytes;
    event.segment_count = report->segments_deleted;
    event.hw_new = replica->hw;
    struct ks__log_memory *memory =
        broker->log_memory != NULL ? &broker->log_memory[replica->topic_index][replica->partition]
                                   : NULL;
    if (memory != NULL && memory->known) {
        GArray *after = g_array_new(FALSE, FALSE, sizeof(struct ks_log_segment_summary));
        ks_log_summarize(replica->log, after);
        struct log_sums then = log_sums(memory->segments, report->recovered_from_offset);
        struct log_sums now = log_sums(after, report->recovered_from_offset);
        g_array_free(after, TRUE);
        event.leo_old = memory->leo;
        event.byte_count = lost(then.bytes, now.bytes);
        event.batch_count = lost(then.batches, now.batches);
        event.record_count = lost(then.records, now.records);
        memory->known = false; /* used once: the next crash remembers again */
    } else {
        event.byte_count = report->dropped_bytes;
        event.batch_count = report->dropped_batch_count;
        event.record_count = lost(report->leo_before, report->leo_after);
    }
    int64_t before = event.leo_old >= 0 ? event.leo_old : event.offset_old;
    if (before > event.leo_new) {
        event.offset_from = event.leo_new;
        event.offset_to = before;
    }
    ks_broker_emit(broker, &event);
}

void ks__logs_after_truncation(struct ks_broker *broker)
{
    write_checkpoint(broker, CHECKPOINT_RECOVERY);
}

void ks__logs_load(struct ks_broker *broker)
{
    char path[96];
    g_snprintf(path, sizeof path, "%s/.kafka_cleanshutdown", broker->dir);
    bool clean = ks_disk_exists(broker->world, (ks_node_id)broker->id, path);
    if (clean) {
        ks_disk_delete(broker->world, (ks_node_id)broker->id, path); /* L1 */
    }
    char **names = ks_disk_list(broker->world, (ks_node_id)broker->id, broker->dir);
    if (names == NULL) {
        return;
    }
    GArray *recovery = read_checkpoint(broker, CHECKPOINT_RECOVERY);
    GArray *hws = read_checkpoint(broker, CHECKPOINT_HW);
    GArray *starts = read_checkpoint(broker, CHECKPOINT_LOG_START);
    for (char **name = names; *name != NULL; name++) {
        char topic[KS_TOPIC_NAME_BYTES_MAX + 1];
        long partition = -1;
        if (!parse_partition_dir(*name, topic, &partition)) {
            continue;
        }
        int32_t t = ks_broker_topic_index(broker, topic);
        if (t < 0 || partition >= broker->topics[t].partition_count ||
            broker->replicas[t][partition] != NULL) {
            continue;
        }
        int64_t recovery_point = checkpoint_lookup(recovery, topic, (int32_t)partition);
        struct ks_log_recovery_report report;
        struct ks__replica *replica =
            ks__replica_open(broker, t, (int32_t)partition, recovery_point < 0 ? 0 : recovery_point,
                             clean, checkpoint_lookup(hws, topic, (int32_t)partition),
                             checkpoint_lookup(starts, topic, (int32_t)partition), &report);
        if (report.recovered) {
            recovery_event(broker, replica, &report);
        }
    }
    if (recovery != NULL) {
        g_array_free(recovery, TRUE);
    }
    if (hws != NULL) {
        g_array_free(hws, TRUE);
    }
    if (starts != NULL) {
        g_array_free(starts, TRUE);
    }
    ks_disk_list_free(names);
}

void ks__logs_shutdown(struct ks_broker *broker)
{
    for (int32_t t = 0; t < broker->topic_count; t++) {
        for (int32_t p = 0; p < broker->topics[t].partition_count; p++) {
            if (broker->replicas[t][p] != NULL) {
                ks_log_flush(broker->replicas[t][p]->log);
            }
        }
    }
    write_checkpoint(broker, CHECKPOINT_HW);
    write_checkpoint(broker, CHECKPOINT_RECOVERY);
    write_checkpoint(broker, CHECKPOINT_LOG_START);
    char path[96];
    g_snprintf(path, sizeof path, "%s/.kafka_cleanshutdown", broker->dir);
    ks_file *file = ks_disk_open(broker->world, (ks_node_id)broker->id, path,
                                 KS_DISK_CREATE | KS_DISK_TRUNCATE, NULL);
    if (file != NULL) {
        char text[64];
        int length = g_snprintf(text, sizeof text, "{\"version\":0,\"brokerEpoch\":%" PRId64 "}",
                                broker->broker_epoch);
        ks_disk_append(file, text, (size_t)length);
        ks_disk_fsync(file);
        ks_disk_close(file);
    }
}
