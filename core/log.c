/*
** core/log.c: one partition replica's segment log, in Kafka's on-disk layout
** (kafka-reference 1 and 3). Everything goes through the node's disk
** (core/world.h), so crashes, power loss and corruption reach these files.
**
** A log is a folder ("broker-1/orders-0") holding segments named by their
** base offset, each a `.log` with its sparse `.index` and `.timeindex`, and
** the `leader-epoch-checkpoint`. The segments are kept in a pointer array
** sorted by base offset; an offset lookup is a binary search there (floor),
** then a binary search of the segment's offset index, then a short scan of
** batch headers (kafka-reference 3.3), reading one 61-byte header at a time
** and then the found batches straight into the caller's buffer, so a lookup
** copies only what it needs. Each segment remembers where its last 16
** batches lie (the recent ring, kept while the file is not rewritten below
** its end): when the scan would stop at one of them and every header it
** would read before it is in the page cache, it starts there instead, since
** those reads would change nothing in the disk model that the read of the
** found header does not (segment_recent_skip). When the found batch's own
** header is cached too and the read goes on to copy the batch, that header
** is not read either: the ring gives its last offset and size (the copy
** right after it touches the same file, segment_read_lookup; KS_DEBUG
** builds read that header all the same and compare). A follower
** reading back what its leader appended a moment ago reads no header, not
** the ~4 KiB of headers since the last index entry; and an offset past the
** last index entry takes that entry without a search. Both indexes are kept in memory and
** mirrored to their files entry by entry, so a file always holds exactly the
** entries (Kafka pre-allocates and trims on roll; ksim never pre-allocates).
** A log whose folder ks_log_open makes (ks_disk_mkdir_new) starts empty
** without listing it or looking for checkpoints and `.txnindex` files in it:
** a large cluster's start creates tens of thousands of replicas.
**
** Invariants (log_check asserts R3-R5 after every change, and R1, R11-R13
** in KS_DEBUG builds; R2 and R6 are asserted where segments and index
** entries are added; R7-R10 hold by construction at the single place that
** writes each):
**   R1  There is always at least one segment; the last one is the active
**       segment, the only one that is appended to.
**   R2  Segment base offsets strictly increase, and each segment's data lies
**       in [base_offset, next segment's base_offset).
**   R3  log_start_offset <= leo; the first segment's base <= log_start_offset
**       unless the log is empty at a fresh start.
**   R4  leo == the active segment's next_offset (offset after its last batch,
**       or its base when empty).
**   R5  recovery_point <= leo; every byte below the recovery point was
**       fsynced (flush, or the fsync of a segment when it rolls).
**   R6  Offset-index entries have strictly increasing offsets and positions;
**       each position is the start of a batch whose last offset is the entry's
**       offset; the first batch of a segment never gets an entry.
**   R7  Time-index entries have increasing timestamps and offsets.
**   R8  Epoch-cache entries have strictly increasing epochs and increasing
**       start offsets, all < leo after truncation; the file
**       leader-epoch-checkpoint is rewritten (tmp, fsync, rename) on every
**       change. epoch_persist formats it and both paths in stack buffers
**       (no printf, no GString): a follower rewrites it at its first
**       append of each epoch, 6,089 times a simulated second at
**       12 x 10,000, where formatting cost 4,700 instructions a rewrite.
**   R9  Every batch written passed ks_batch_parse (length, magic, CRC), and
**       recovery checks it again when it reads the batch back. The CRC of
**       an incoming batch is computed once per append: by this file, or by
**       the caller for the prefix it declares checked (the *_checked
**       appends), never twice on the same bytes in memory.
**   R10 An append decodes its first batch's header once: validate_batches
**       keeps it in the plan (the caller's parse of it when given,
**       ks_log_append_as_leader_parsed and ks_log_append_as_follower_parsed),
**       the leader updates the kept copy when it stamps the offsets and
**       epoch, and append_batches takes it from there; KS_DEBUG builds
**       decode the bytes again and compare.
**   R11 log->active is the last of log->segments (the active segment), so
**       an append or a read of the tail reaches it in one load from the log
**       instead of three (the array, its elements, the segment). Every
**       change at the end of the array goes through segments_push and
**       segments_pop; a load or sort of the array calls active_note.
**   R12 log->hot.latest_epoch and latest_epoch_start_offset are the epoch
**       and start offset of the last epoch-cache entry, -1 when the cache
**       is empty: an append whose batch carries the current epoch, a fetch
**       at the current epoch (ks_log_epoch_end_offset) and the last fetched
**       epoch of a log whose last batch has it (ks_log_epoch_at_end) read
**       them instead of the cache. epoch_assign_in_memory sets them with
**       each entry it adds; every other change of the cache calls
**       epochs_note.
**   R13 A segment's offset_entry_count and time_entry_count are the
**       lengths of its offset_index and time_index, so that should_roll
**       reads them from the segment instead of loading the two arrays'
**       headers (two more cache lines) on every append. Every change of
**       the arrays' lengths is followed by index_note.
**   R14 The LEO, the log start offset and the latest epoch (R12) are
**       struct ks__log_hot, declared in log.h and the first member of
**       struct ks_log (asserted at compile time), so ks_log_leo,
**       ks_log_start_offset, ks_log_latest_epoch and the current-epoch case
**       of ks_log_epoch_end_offset are inline reads in their callers.
**       Every fetch of every partition asks for them (at 12 x 1,200, 124,000
**       epoch checks and 470,000 getter calls a simulated second); only this
**       file writes them.
**
** Segment `.log` (kafka-reference 2.1), a sequence of whole batches:
**
**   OFFSET  SIZE          DESCRIPTION
**   0       61 + records  batch 0 (baseOffset >= segment base offset)
**   p1      ...           batch 1 at p1 = size of batch 0; baseOffset > last
**                         offset of batch 0
**   ...                   up to the segment size (segment.bytes roll limit)
**
** Offset index `.index`, 8 bytes per entry, big-endian:
**
**   OFFSET  SIZE  DESCRIPTION
**   0       4     relative offset: last offset of the indexed batch - segment base
**   4       4     position: byte position in `.log` where that batch starts
**   8       ...   next entry
**
** Time index `.timeindex`, 12 bytes per entry, big-endian:
**
**   OFFSET  SIZE  DESCRIPTION
**   0       8     timestamp (ms): the segment's largest timestamp so far
**   8       4     relative offset of the batch that holds that timestamp
**   12      ...   next entry
**
** Checkpoint files (Kafka's CheckpointFile with OffsetCheckpointFile's or
** LeaderEpochCheckpointFile's lines; text, UTF-8, one space between fields,
** '\n' after each line; written to `<path>.tmp`, fsynced, renamed over
** `<path>`; the numbers are formatted without printf, exactly as "%" PRId64
** would print them):
**
**   LINE    DESCRIPTION
**   1       version: "0"
**   2       entry count N
**   3..N+2  "<topic> <partition> <offset>" (recovery-point-offset-checkpoint,
**           replication-offset-checkpoint, log-start-offset-checkpoint), or
**           "<epoch> <startOffset>" ascending (leader-epoch-checkpoint)
**
** Index rule (LogSegment.append, per batch): when more than
** index.interval.bytes were appended since the last entry, an entry is added
** BEFORE this batch's bytes are counted, holding the batch's last offset and
** the position where it starts; then the time index gets (largest timestamp
** so far, its batch's last offset) if that timestamp exceeds the last entry's.
** A segment that stops being active gets one final time-index entry.
** Recovery rebuilds the indexes with the same rule, so rebuilt and
** incrementally built indexes are identical.
**
** Simplifications, each where it happens: no segment.jitter.ms; retention
** and compaction delete files at once (rename to .deleted, then delete:
** file.delete.delay.ms is not modelled because nothing reads a deleted
** segment in ksim); compaction cleans each segment into a segment with the
** same base offset (no merging of small segments) and ignores
** min.cleanable.dirty.ratio (the broker decides when to call it); magic 0/1
** batches are treated as corruption, since ksim never writes them;
** max.message.bytes is not checked here (ks_log_result has no
** RECORD_TOO_LARGE; a broker that wants it checks the request size).
*/
#include "log.h"
#include "array.h"

#include "base.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OFFSET_ENTRY_BYTES    8
#define TIME_ENTRY_BYTES      12
#define SCAN_WINDOW_BYTES     (256 * 1024)
#define LOOKUP_WINDOW_BYTES   KS_BATCH_HEADER_BYTES /* one header per read while seeking */
#define EXTENT_WINDOW_BYTES   (64 * 1024)           /* headers of the batches that follow */
#define EPOCH_CHECKPOINT_NAME "leader-epoch-checkpoint"
#define RECENT_BATCH_COUNT    16 /* batches a segment remembers the place of */

struct offset_entry {
    int32_t relative_offset;
    int32_t position;
};

struct time_entry {
    int64_t timestamp;
    int32_t relative_offset;
};

struct epoch_entry {
    int32_t epoch;
    int64_t start_offset;
};

/* Where one of a segment's last batches lies (struct segment's recent). */
struct recent_batch {
    int64_t last_offset;
    int64_t position;
};

struct segment {
    int64_t base_offset;
    int64_t size_bytes;
    int64_t next_offset;             /* offset after the last batch; base when empty */
    int64_t max_timestamp;           /* largest batch max timestamp; -1 when empty */
    int64_t offset_of_max_timestamp; /* last offset of the batch holding it */
    int64_t first_batch_timestamp;   /* for segment.ms; -1 when empty */
    int64_t bytes_since_index;
    int64_t batch_count;      /* batches in the segment; -1 = not known (loaded from its index) */
    int64_t record_count;     /* records in them; -1 = not known */
    guint offset_entry_count; /* R13: offset_index->len */
    guint time_entry_count;   /* R13: time_index->len */
    GArray *offset_index;     /* struct offset_entry, owned */
    GArray *time_index;       /* struct time_entry, owned */
    ks_file *log_file;        /* owned */
    ks_file *index_file;      /* owned */
    ks_file *time_file;       /* owned */
    ks_file *txn_file;        /* owned; NULL while the segment has no `.txnindex` */
    GArray *aborted;          /* struct ks_aborted_txn of its `.txnindex`, owned */
    bool dirty;               /* written since its last fsync */
    /* The last batches accounted, consecutive and ending at recent_end, in a
     * ring (oldest at (recent_next - recent_count) mod RECENT_BATCH_COUNT);
     * valid while the log file's rewrite count is recent_rewrites and
     * recent_end its size (segment_recent_find). */
    struct recent_batch recent[RECENT_BATCH_COUNT];
    uint32_t recent_count;
    uint32_t recent_next;
    int64_t recent_end;
    uint64_t recent_rewrites;
};

/* A transaction of the log's producer state: ongoing (last_offset -1) or
 * completed by a marker the high watermark has not passed yet (Kafka's
 * ProducerStateManager ongoingTxns and unreplicatedTxns). */
struct txn_entry {
    int64_t producer_id;
    int64_t first_offset;
    int64_t last_offset; /* the marker's offset; -1 while ongoing */
};

struct ks_log {
    /* The fields an append or a fetch of the tail reads first, together
     * (issue 16: a log is touched every ~100 ms, so each line is a miss).
     * R14: hot comes first, so that log.h's inline getters read it. */
    struct ks__log_hot hot; /* leo, log_start_offset, latest_epoch (R12) */
    ks_world *world;        /* not owned */
    struct segment *active; /* R11: the last of segments; not owned (segments owns it) */
    ks_node_id node;
    GPtrArray *segments; /* struct segment *, sorted by base offset, owned */
    GArray *epochs;      /* struct epoch_entry, owned */
    int64_t unflushed_message_count;
    struct ks_log_config config;
    char *dir; /* owned */
    int64_t recovery_point;
    ks_time_ns last_flush_ns;
    GByteArray *window;    /* scratch read buffer, owned */
    GArray *txns;          /* struct txn_entry by first offset, owned; valid when txns_known */
    bool txns_known;       /* false until rebuilt from the log (lazily, see txn_rebuild) */
    bool txn_batches_seen; /* a scan (recovery) met a transactional batch */
};

/* R14: a log pointer is a pointer to its hot fields (log.h reads them so). */
_Static_assert(offsetof(struct ks_log, hot) == 0, "struct ks__log_hot opens struct ks_log");

/* A batch header decoded without checking the CRC (our own files, or a
 * header we only need for offsets). */
struct header {
    int64_t base_offset;
    int64_t last_offset;
    int64_t max_timestamp;
    int64_t base_timestamp;
    int32_t partition_leader_epoch;
    int64_t batch_bytes;
    int32_t record_count;
    int16_t attributes;
    int64_t producer_id;
};

/* ---- small helpers (big-endian fields: core/batch.h) ------------------------------- */

/* Decodes the header fields the log needs; false if there are fewer than 61
 * bytes or the length or offsets are impossible. */
static bool peek_header(const uint8_t *bytes, size_t byte_count, struct header *out)
{
    if (byte_count < KS_BATCH_HEADER_BYTES) {
        return false;
    }
    int32_t batch_length = (int32_t)ks_be_get_u32(bytes + 8);
    if (batch_length < KS_BATCH_HEADER_BYTES - KS_BATCH_LOG_OVERHEAD_BYTES ||
        batch_length > INT32_MAX - KS_BATCH_LOG_OVERHEAD_BYTES) {
        return false;
    }
    int32_t last_offset_delta = (int32_t)ks_be_get_u32(bytes + 23);
    int64_t base_offset = (int64_t)ks_be_get_u64(bytes);
    if (last_offset_delta < 0 || base_offset < 0 || base_offset > INT64_MAX - INT32_MAX) {
        return false;
    }
    out->base_offset = base_offset;
    out->last_offset = base_offset + last_offset_delta;
    out->partition_leader_epoch = (int32_t)ks_be_get_u32(bytes + 12);
    out->base_timestamp = (int64_t)ks_be_get_u64(bytes + 27);
    out->max_timestamp = (int64_t)ks_be_get_u64(bytes + 35);
    out->record_count = (int32_t)ks_be_get_u32(bytes + 57);
    out->attributes = (int16_t)(((uint16_t)bytes[21] << 8) | bytes[22]);
    out->producer_id = (int64_t)ks_be_get_u64(bytes + 43);
    out->batch_bytes = (int64_t)batch_length + KS_BATCH_LOG_OVERHEAD_BYTES;
    return true;
}

static char *segment_path(const struct ks_log *log, int64_t base_offset, const char *suffix)
{
    return g_strdup_printf("%s/%020" PRId64 "%s", log->dir, base_offset, suffix);
}

static int64_t now_ms(ks_time_ns now_ns)
{
    return KS_EPOCH_BASE_MS + (int64_t)(now_ns / KS_NS_PER_MS);
}

static struct segment *segment_at(const struct ks_log *log, guint segment_index)
{
    return g_ptr_array_index(log->segments, segment_index);
}

static struct segment *active_segment(const struct ks_log *log)
{
    ks_assert(log->active != NULL); /* R1 */
#if KS_DEBUG
    ks_assert(log->active == segment_at(log, log->segments->len - 1)); /* R11 */
#endif
    return log->active;
}

/* R11: every change at the end of segments goes through these two (and a
 * sort or a load through active_note). */
static void active_note(struct ks_log *log)
{
    log->active = log->segments->len > 0 ? segment_at(log, log->segments->len - 1) : NULL;
}

static void segments_push(struct ks_log *log, struct segment *segment)
{
    ks_ptr_array_add(log->segments, segment);
    log->active = segment;
}

static struct segment *segments_pop(struct ks_log *log)
{
    struct segment *segment = g_ptr_array_steal_index(log->segments, log->segments->len - 1);
    active_note(log);
    return segment;
}

/* Reads [position, position + byte_count) of a file into log->window, or as
 * much as exists. Returns the bytes read (short at end of file); -1 on an
 * I/O error. */
static int64_t read_into_window(struct ks_log *log, ks_file *file, int64_t position,
                                size_t byte_count)
{
    if (log->window->len < byte_count) {
        ks_byte_array_set_size(log->window, (guint)byte_count);
    }
    size_t read_count = 0;
    if (ks_disk_read(file, log->window->data, byte_count, position, &read_count) != KS_IO_OK) {
        return -1;
    }
    return (int64_t)read_count;
}

/* A forward reader over a segment file that refills a window as needed. */
struct reader {
    struct ks_log *log;
    ks_file *file;
    int64_t file_size;
    int64_t window_start;
    int64_t window_count;
    size_t window_bytes;
    bool io_error;
};

static void reader_init(struct reader *reader, struct ks_log *log, ks_file *file, int64_t file_size,
                        size_t window_bytes)
{
    memset(reader, 0, sizeof(*reader));
    reader->log = log;
    reader->file = file;
    reader->file_size = file_size;
    reader->window_bytes = window_bytes;
}

/* Returns a pointer to the bytes at position and sets *available_out to how
 * many of the wanted `need` bytes exist (fewer at end of file). */
static const uint8_t *reader_get(struct reader *reader, int64_t position, size_t need,
                                 size_t *available_out)
{
    int64_t end = position + (int64_t)need;
    if (end > reader->file_size) {
        end = reader->file_size;
    }
    if (end <= position) {
        *available_out = 0;
        return NULL;
    }
    if (position < reader->window_start || end > reader->window_start + reader->window_count) {
        size_t want = need > reader->window_bytes ? need : reader->window_bytes;
        if ((int64_t)want > reader->file_size - position) {
            want = (size_t)(reader->file_size - position);
        }
        int64_t got = read_into_window(reader->log, reader->file, position, want);
        if (got < 0) {
            reader->io_error = true;
            *available_out = 0;
            return NULL;
        }
        reader->window_start = position;
        reader->window_count = got;
        if (end > position + got) {
            end = position + got;
        }
    }
    *available_out = (size_t)(end - position);
    return reader->log->window->data + (position - reader->window_start);
}

/* ---- text files (checkpoints) ------------------------------------------------------ */

/* Who waits for an fsync (core/world.h): the calling thread (WAIT), or
 * nobody, as when one of Kafka's scheduler threads does it (BACKGROUND). */
enum sync_mode { SYNC_WAIT, SYNC_BACKGROUND };

static enum ks_io_result file_sync(ks_file *file, enum sync_mode mode)
{
    switch (mode) {
    case SYNC_WAIT: return ks_disk_fsync(file);
    case SYNC_BACKGROUND: return ks_disk_fsync_background(file);
    }
    return KS_IO_ERROR;
}

/* Writes bytes to `<path>.tmp`, fsyncs it and renames it over path (the
 * checkpoint format above; CheckpointFile.write), in one disk call
 * (ks_disk_replace). A simulated I/O error leaves the old checkpoint in
 * place, as a failed write in Kafka does (the next write retries). */
static void write_text_atomically(ks_world *world, ks_node_id node, const char *path,
                                  const char *text, size_t text_bytes, enum sync_mode mode)
{
    (void)ks_disk_replace(world, node, path, text, text_bytes, mode == SYNC_WAIT);
}

static char *read_text(ks_world *world, ks_node_id node, const char *path)
{
    enum ks_io_result result = KS_IO_OK;
    ks_file *file = ks_disk_open(world, node, path, 0, &result);
    if (file == NULL) {
        return NULL;
    }
    int64_t size = ks_disk_size(file);
    if (size > 64 * 1024 * 1024) {
        ks_disk_close(file);
        return NULL;
    }
    char *text = g_malloc((size_t)size + 1);
    size_t read_count = 0;
    if (ks_disk_read(file, text, (size_t)size, 0, &read_count) != KS_IO_OK) {
        read_count = 0;
    }
    text[read_count] = '\0';
    ks_disk_close(file);
    return text;
}

/* Parses a decimal integer field; false unless the whole token is one. */
static bool parse_int64(const char *token, int64_t min, int64_t max, int64_t *out)
{
    if (token == NULL || *token == '\0') {
        return false;
    }
    gint64 value = 0;
    if (!g_ascii_string_to_signed(token, 10, min, max, &value, NULL)) {
        return false;
    }
    *out = value;
    return true;
}

/* Splits a checkpoint into whitespace-separated tokens after checking version
 * 0 and the count; returns the tokens of the entries (each `fields` long) or
 * NULL when malformed. Owned by the caller (g_strfreev). */
static char **checkpoint_tokens(const char *text, int fields, int64_t *count_out)
{
    char **raw = g_strsplit_set(text, " \t\r\n", -1);
    GPtrArray *tokens = g_ptr_array_new();
    for (char **t = raw; *t != NULL; t++) {
        if (**t != '\0') {
            ks_ptr_array_add(tokens, g_strdup(*t));
        }
    }
    g_strfreev(raw);
    ks_ptr_array_add(tokens, NULL);
    char **list = (char **)g_ptr_array_free(tokens, FALSE);
    int64_t version = -1;
    int64_t count = -1;
    guint length = g_strv_length(list);
    if (length < 2 || !parse_int64(list[0], 0, 0, &version) ||
        !parse_int64(list[1], 0, INT32_MAX, &count) || (int64_t)length != 2 + count * fields) {
        g_strfreev(list);
        return NULL;
    }
    *count_out = count;
    return list;
}

/* Writes value in decimal at out; returns the characters written (at most
 * 20). As "%" PRId64 prints it, without printf's parsing of the format.
 * Inlined: twice per checkpoint line. */
static inline __attribute__((always_inline)) size_t format_int64(char *out, int64_t value)
{
    size_t sign = value < 0 ? 1 : 0;
    if (sign) {
        out[0] = '-';
    }
    uint64_t magnitude = value < 0 ? 0 - (uint64_t)value : (uint64_t)value;
    return sign + (size_t)ks_write_decimal(out + sign, magnitude);
}

/* "0\n<count>\n": the version, and a count of at most 20 digits. */
#define CHECKPOINT_HEADER_BYTES_MAX (2 + 20 + 1)
/* " <int32> <int64>\n" after the topic. */
#define CHECKPOINT_LINE_EXTRA_BYTES (1 + 11 + 1 + 20 + 1)

void ks_checkpoint_text_init(struct ks_checkpoint_text *text, size_t entry_count_max,
                             size_t topic_bytes_max)
{
    text->capacity = CHECKPOINT_HEADER_BYTES_MAX +
                     entry_count_max * (topic_bytes_max + CHECKPOINT_LINE_EXTRA_BYTES);
    text->data = g_malloc(text->capacity);
    text->bytes = CHECKPOINT_HEADER_BYTES_MAX; /* the header goes in front at the end */
    text->count = 0;
    text->topic_bytes_max = topic_bytes_max;
    text->checked_topic = NULL;
    text->checked_topic_bytes = 0;
}

void ks_checkpoint_text_add(struct ks_checkpoint_text *text, const char *topic, size_t topic_bytes,
                            int32_t partition, int64_t offset)
{
    /* The line would not parse back with an empty name or a space in it;
     * a name is checked when it changes (the broker passes each topic's
     * name with the same pointer, line after line). */
    if (topic != text->checked_topic) {
        ks_assert(topic_bytes > 0 && topic_bytes <= text->topic_bytes_max);
        ks_assert(memchr(topic, ' ', topic_bytes) == NULL);
        text->checked_topic = topic;
        text->checked_topic_bytes = topic_bytes;
    }
    ks_assert(topic_bytes == text->checked_topic_bytes);
    ks_assert(text->bytes + topic_bytes + CHECKPOINT_LINE_EXTRA_BYTES <= text->capacity);
    char *out = text->data + text->bytes;
    memcpy(out, topic, topic_bytes);
    size_t at = topic_bytes;
    out[at++] = ' ';
    at += format_int64(out + at, partition);
    out[at++] = ' ';
    at += format_int64(out + at, offset);
    out[at++] = '\n';
    text->bytes += at;
    text->count++;
}

void ks_checkpoint_text_write(ks_world *world, ks_node_id node, const char *path,
                              struct ks_checkpoint_text *text)
{
    /* The header, right-aligned in the room kept before the lines. */
    char header[CHECKPOINT_HEADER_BYTES_MAX];
    size_t header_bytes = 0;
    header[header_bytes++] = '0';
    header[header_bytes++] = '\n';
    header_bytes += (size_t)ks_write_decimal(header + header_bytes, text->count);
    header[header_bytes++] = '\n';
    char *start = text->data + CHECKPOINT_HEADER_BYTES_MAX - header_bytes;
    memcpy(start, header, header_bytes);
    /* Kafka writes its offset checkpoints from scheduler threads
     * (ReplicaManager.checkpointHighWatermarks from the
     * highwatermark-checkpoint task, LogManager.checkpointLogRecoveryOffsets
     * and checkpointLogStartOffsets from kafka-recovery-point-checkpoint and
     * kafka-log-start-offset-checkpoint), so no request waits for them. */
    write_text_atomically(world, node, path, start,
                          text->bytes - (CHECKPOINT_HEADER_BYTES_MAX - header_bytes),
                          SYNC_BACKGROUND);
    g_free(text->data);
    text->data = NULL;
}

void ks_checkpoint_write(ks_world *world, ks_node_id node, const char *path,
                         const struct ks_checkpoint_entry *entries, size_t entry_count)
{
    struct ks_checkpoint_text text;
    ks_checkpoint_text_init(&text, entry_count, KS_TOPIC_NAME_BYTES_MAX);
    for (size_t i = 0; i < entry_count; i++) {
        ks_checkpoint_text_add(&text, entries[i].topic, strlen(entries[i].topic),
                               entries[i].partition, entries[i].offset);
    }
    ks_checkpoint_text_write(world, node, path, &text);
}

GArray *ks_checkpoint_read(ks_world *world, ks_node_id node, const char *path)
{
    char *text = read_text(world, node, path);
    if (text == NULL) {
        return NULL;
    }
    int64_t count = 0;
    char **tokens = checkpoint_tokens(text, 3, &count);
    g_free(text);
    if (tokens == NULL) {
        return NULL;
    }
    GArray *entries = g_array_new(FALSE, TRUE, sizeof(struct ks_checkpoint_entry));
    for (int64_t i = 0; i < count; i++) {
        struct ks_checkpoint_entry entry;
        memset(&entry, 0, sizeof(entry));
        const char *topic = tokens[2 + i * 3];
        int64_t partition = 0;
        if (strlen(topic) > KS_TOPIC_NAME_BYTES_MAX ||
            !parse_int64(tokens[3 + i * 3], 0, INT32_MAX, &partition) ||
            !parse_int64(tokens[4 + i * 3], INT64_MIN, INT64_MAX, &entry.offset)) {
            g_array_free(entries, TRUE);
            g_strfreev(tokens);
            return NULL;
        }
        memcpy(entry.topic, topic, strlen(topic));
        entry.partition = (int32_t)partition;
        ks_array_append_val(entries, entry);
    }
    g_strfreev(tokens);
    return entries;
}

/* ---- leader epoch cache ------------------------------------------------------------- */

#define EPOCH_LINE_BYTES_MAX   33 /* "<int32> <int64>\n" */
#define EPOCH_TEXT_STACK_BYTES 512
#define EPOCH_PATH_STACK_BYTES 512

/* Rewrites leader-epoch-checkpoint. LeaderEpochFileCache.assign flushes it
 * before returning (WAIT); truncateFromEndAsyncFlush and
 * truncateFromStartAsyncFlush leave the flush to the scheduler (BACKGROUND).
 * The text and the path are put together in stack buffers (the heap
 * only for a cache of more than 15 entries or a folder name of hundreds of
 * bytes), the numbers by format_int64: a follower persists its cache at its
 * first append of every epoch, so at 12 x 10,000 this ran 6,089 times in
 * the measured second, and g_string_append_printf, g_strdup_printf and
 * GString's allocations were 4,700 instructions of each call's 21,000. */
static void epoch_persist(struct ks_log *log, enum sync_mode mode)
{
    guint entry_count = log->epochs->len;
    size_t text_capacity = 2 + 11 + (size_t)entry_count * EPOCH_LINE_BYTES_MAX;
    char text_stack[EPOCH_TEXT_STACK_BYTES];
    char *text = text_capacity <= sizeof(text_stack) ? text_stack : g_malloc(text_capacity);
    size_t text_bytes = 0;
    text[text_bytes++] = '0';
    text[text_bytes++] = '\n';
    text_bytes += format_int64(text + text_bytes, entry_count);
    text[text_bytes++] = '\n';
    for (guint i = 0; i < entry_count; i++) {
        const struct epoch_entry *entry = &g_array_index(log->epochs, struct epoch_entry, i);
        text_bytes += format_int64(text + text_bytes, entry->epoch);
        text[text_bytes++] = ' ';
        text_bytes += format_int64(text + text_bytes, entry->start_offset);
        text[text_bytes++] = '\n';
    }
    ks_assert(text_bytes <= text_capacity);
    /* "<dir>/leader-epoch-checkpoint" (ks_disk_replace adds ".tmp"). */
    size_t dir_bytes = strlen(log->dir);
    size_t name_bytes = sizeof(EPOCH_CHECKPOINT_NAME) - 1;
    size_t paths_capacity = dir_bytes + 1 + name_bytes + 1;
    char paths_stack[EPOCH_PATH_STACK_BYTES];
    char *path = paths_capacity <= sizeof(paths_stack) ? paths_stack : g_malloc(paths_capacity);
    memcpy(path, log->dir, dir_bytes);
    path[dir_bytes] = '/';
    memcpy(path + dir_bytes + 1, EPOCH_CHECKPOINT_NAME, name_bytes + 1);
    write_text_atomically(log->world, log->node, path, text, text_bytes, mode);
    if (path != paths_stack) {
        g_free(path);
    }
    if (text != text_stack) {
        g_free(text);
    }
}

/* R12: after any change of the epoch cache but an assign's append. */
static void epochs_note(struct ks_log *log)
{
    const struct epoch_entry *last =
        log->epochs->len > 0 ? &g_array_index(log->epochs, struct epoch_entry, log->epochs->len - 1)
                             : NULL;
    log->hot.latest_epoch = last != NULL ? last->epoch : -1;
    log->hot.latest_epoch_start_offset = last != NULL ? last->start_offset : -1;
}

static void epoch_load(struct ks_log *log)
{
    char *path = g_strdup_printf("%s/%s", log->dir, EPOCH_CHECKPOINT_NAME);
    char *text = read_text(log->world, log->node, path);
    g_free(path);
    if (text == NULL) {
        return;
    }
    int64_t count = 0;
    char **tokens = checkpoint_tokens(text, 2, &count);
    g_free(text);
    if (tokens == NULL) {
        return; /* a damaged cache is rebuilt from the batches during recovery */
    }
    for (int64_t i = 0; i < count; i++) {
        int64_t epoch = 0;
        int64_t start_offset = 0;
        if (!parse_int64(tokens[2 + i * 2], 0, INT32_MAX, &epoch) ||
            !parse_int64(tokens[3 + i * 2], 0, INT64_MAX, &start_offset)) {
            break;
        }
        /* Keep only entries that respect R8; drop the rest. */
        if (log->epochs->len > 0) {
            const struct epoch_entry *last =
                &g_array_index(log->epochs, struct epoch_entry, log->epochs->len - 1);
            if (epoch <= last->epoch || start_offset < last->start_offset) {
                continue;
            }
        }
        struct epoch_entry entry = { (int32_t)epoch, start_offset };
        ks_array_append_val(log->epochs, entry);
    }
    epochs_note(log);
    g_strfreev(tokens);
}

/* Adds (epoch, start_offset) if epoch is above the latest, first removing
 * entries that start at or after start_offset (LeaderEpochFileCache.assign).
 * Returns true if the cache changed (the caller persists it). */
static bool epoch_assign_in_memory(struct ks_log *log, int32_t epoch, int64_t start_offset)
{
    /* Nearly every append: the epoch did not change (R12, without a load
     * of the cache). */
    if (epoch < 0 || log->hot.latest_epoch >= epoch) {
        return false;
    }
    while (log->epochs->len > 0 &&
           g_array_index(log->epochs, struct epoch_entry, log->epochs->len - 1).start_offset >=
               start_offset) {
        ks_array_set_size(log->epochs, log->epochs->len - 1);
    }
    struct epoch_entry entry = { epoch, start_offset };
    ks_array_append_val(log->epochs, entry);
    log->hot.latest_epoch = epoch;
    log->hot.latest_epoch_start_offset = start_offset;
    return true;
}

/* Removes entries starting at or after offset (truncateFromEnd). */
static bool epoch_truncate_from_end(struct ks_log *log, int64_t offset)
{
    bool changed = false;
    while (log->epochs->len > 0 &&
           g_array_index(log->epochs, struct epoch_entry, log->epochs->len - 1).start_offset >=
               offset) {
        ks_array_set_size(log->epochs, log->epochs->len - 1);
        changed = true;
    }
    epochs_note(log);
    return changed;
}

/* Drops entries wholly below offset; the latest one below it now starts at
 * offset (truncateFromStart). */
static bool epoch_truncate_from_start(struct ks_log *log, int64_t offset)
{
    guint below = 0;
    while (below < log->epochs->len &&
           g_array_index(log->epochs, struct epoch_entry, below).start_offset < offset) {
        below++;
    }
    if (below == 0) {
        return false;
    }
    g_array_remove_range(log->epochs, 0, below - 1);
    g_array_index(log->epochs, struct epoch_entry, 0).start_offset = offset;
    epochs_note(log);
    return true;
}

void ks_log_epoch_assign(struct ks_log *log, int32_t epoch, int64_t start_offset)
{
    if (epoch_assign_in_memory(log, epoch, start_offset)) {
        epoch_persist(log, SYNC_WAIT);
    }
}

/* ks_log_epoch_end_offset (log.h) when the requested epoch is below the
 * latest, or there is none: the inline part answers the current epoch (R12,
 * R14). */
bool ks__log_epoch_end_offset_scan(const struct ks_log *log, int32_t requested_epoch,
                                   int32_t *epoch_out, int64_t *end_offset_out)
{
    *epoch_out = -1;
    *end_offset_out = -1;
    /* Largest known epoch <= requested: a linear scan from the end, because
     * the cache holds one entry per leader change (a handful). */
    for (guint i = log->epochs->len; i > 0; i--) {
        const struct epoch_entry *entry = &g_array_index(log->epochs, struct epoch_entry, i - 1);
        if (entry->epoch <= requested_epoch) {
            *epoch_out = entry->epoch;
            if (i == log->epochs->len) {
                *end_offset_out = log->hot.leo;
            } else {
                *end_offset_out = g_array_index(log->epochs, struct epoch_entry, i).start_offset;
            }
            return true;
        }
    }
    return false;
}

int32_t ks_log_epoch_at_end(const struct ks_log *log)
{
    if (log->hot.leo == 0) {
        return -1;
    }
    int64_t last = log->hot.leo - 1;
    if (log->hot.latest_epoch >= 0 && log->hot.latest_epoch_start_offset <= last) {
        return log->hot.latest_epoch; /* R12: nearly always, without a load of the cache */
    }
    for (guint i = log->epochs->len; i > 0; i--) {
        const struct epoch_entry *entry = &g_array_index(log->epochs, struct epoch_entry, i - 1);
        if (entry->start_offset <= last) {
            return entry->epoch;
        }
    }
    return -1;
}

int32_t ks_log_epoch_count(const struct ks_log *log)
{
    return (int32_t)log->epochs->len;
}

void ks_log_epoch_entry(const struct ks_log *log, int32_t index, int32_t *epoch_out,
                        int64_t *start_offset_out)
{
    ks_assert(index >= 0 && (guint)index < log->epochs->len);
    const struct epoch_entry *entry = &g_array_index(log->epochs, struct epoch_entry, (guint)index);
    *epoch_out = entry->epoch;
    *start_offset_out = entry->start_offset;
}

/* ---- segments: files ------------------------------------------------------------------ */

static void segment_close_files(struct segment *segment)
{
    segment->recent_count = 0;
    ks_disk_close(segment->log_file);
    ks_disk_close(segment->index_file);
    ks_disk_close(segment->time_file);
    ks_disk_close(segment->txn_file);
    segment->log_file = NULL;
    segment->index_file = NULL;
    segment->time_file = NULL;
    segment->txn_file = NULL;
}

static void segment_open_files(struct ks_log *log, struct segment *segment, unsigned flags)
{
    segment->recent_count = 0;
    const char *suffixes[3] = { ".log", ".index", ".timeindex" };
    ks_file **files[3] = { &segment->log_file, &segment->index_file, &segment->time_file };
    for (int i = 0; i < 3; i++) {
        if (*files[i] != NULL) {
            continue;
        }
        char *path = segment_path(log, segment->base_offset, suffixes[i]);
        enum ks_io_result result = KS_IO_OK;
        *files[i] = ks_disk_open(log->world, log->node, path, flags | KS_DISK_CREATE, &result);
        ks_assert(*files[i] != NULL);
        g_free(path);
    }
}

/* R13: after any change of the length of a segment's offset or time index. */
static void index_note(struct segment *segment)
{
    segment->offset_entry_count = segment->offset_index->len;
    segment->time_entry_count = segment->time_index->len;
}

static struct segment *segment_new(int64_t base_offset)
{
    struct segment *segment = g_new0(struct segment, 1);
    segment->base_offset = base_offset;
    segment->next_offset = base_offset;
    segment->max_timestamp = -1;
    segment->offset_of_max_timestamp = base_offset;
    segment->first_batch_timestamp = -1;
    segment->offset_index = g_array_new(FALSE, FALSE, sizeof(struct offset_entry));
    segment->time_index = g_array_new(FALSE, FALSE, sizeof(struct time_entry));
    segment->aborted = g_array_new(FALSE, FALSE, sizeof(struct ks_aborted_txn));
    return segment;
}

static void segment_free(struct segment *segment)
{
    if (segment == NULL) {
        return;
    }
    segment_close_files(segment);
    g_array_free(segment->offset_index, TRUE);
    g_array_free(segment->time_index, TRUE);
    g_array_free(segment->aborted, TRUE);
    g_free(segment);
}

static void segment_reset_state(struct segment *segment)
{
    segment->size_bytes = 0;
    segment->next_offset = segment->base_offset;
    segment->max_timestamp = -1;
    segment->offset_of_max_timestamp = segment->base_offset;
    segment->first_batch_timestamp = -1;
    segment->bytes_since_index = 0;
    segment->batch_count = 0;
    segment->record_count = 0;
    ks_array_set_size(segment->offset_index, 0);
    ks_array_set_size(segment->time_index, 0);
    index_note(segment);
}

/* Renames each file to `.deleted` then deletes it (simulated immediate
 * deletion: file.delete.delay.ms is not modelled), and frees the segment. */
static void segment_delete(struct ks_log *log, struct segment *segment)
{
    bool has_txn_index = segment->txn_file != NULL;
    segment_close_files(segment);
    const char *suffixes[4] = { ".log", ".index", ".timeindex", ".txnindex" };
    for (int i = 0; i < (has_txn_index ? 4 : 3); i++) {
        char *path = segment_path(log, segment->base_offset, suffixes[i]);
        char *deleted = g_strdup_printf("%s.deleted", path);
        if (ks_disk_rename(log->world, log->node, path, deleted) == KS_IO_OK) {
            ks_disk_delete(log->world, log->node, deleted);
        }
        g_free(deleted);
        g_free(path);
    }
    segment_free(segment);
}

/* Rewrites both index files from the in-memory entries. */
static void segment_write_indexes(struct ks_log *log, struct segment *segment)
{
    segment_open_files(log, segment, 0);
    guint count = segment->offset_index->len;
    uint8_t *bytes = g_malloc((size_t)count * OFFSET_ENTRY_BYTES + 1);
    for (guint i = 0; i < count; i++) {
        const struct offset_entry *entry =
            &g_array_index(segment->offset_index, struct offset_entry, i);
        ks_be_put_u32(bytes + i * OFFSET_ENTRY_BYTES, (uint32_t)entry->relative_offset);
        ks_be_put_u32(bytes + i * OFFSET_ENTRY_BYTES + 4, (uint32_t)entry->position);
    }
    ks_disk_truncate(segment->index_file, 0);
    ks_disk_append(segment->index_file, bytes, (size_t)count * OFFSET_ENTRY_BYTES);
    g_free(bytes);
    count = segment->time_index->len;
    bytes = g_malloc((size_t)count * TIME_ENTRY_BYTES + 1);
    for (guint i = 0; i < count; i++) {
        const struct time_entry *entry = &g_array_index(segment->time_index, struct time_entry, i);
        ks_be_put_u64(bytes + i * TIME_ENTRY_BYTES, (uint64_t)entry->timestamp);
        ks_be_put_u32(bytes + i * TIME_ENTRY_BYTES + 8, (uint32_t)entry->relative_offset);
    }
    ks_disk_truncate(segment->time_file, 0);
    ks_disk_append(segment->time_file, bytes, (size_t)count * TIME_ENTRY_BYTES);
    g_free(bytes);
    segment->dirty = true;
}

/* ---- segments: index rule -------------------------------------------------------------- */

/* Appends a time-index entry if its timestamp exceeds the last one (R7). */
static void time_index_maybe_append(struct segment *segment, int64_t timestamp, int64_t offset,
                                    bool write_file)
{
    if (timestamp < 0) {
        return;
    }
    guint count = segment->time_index->len;
    if (count > 0) {
        const struct time_entry *last =
            &g_array_index(segment->time_index, struct time_entry, count - 1);
        if (timestamp <= last->timestamp) {
            return;
        }
        if (offset - segment->base_offset < last->relative_offset) {
            return;
        }
    }
    struct time_entry entry = { timestamp, (int32_t)(offset - segment->base_offset) };
    ks_array_append_val(segment->time_index, entry);
    index_note(segment);
    if (write_file) {
        uint8_t bytes[TIME_ENTRY_BYTES];
        ks_be_put_u64(bytes, (uint64_t)entry.timestamp);
        ks_be_put_u32(bytes + 8, (uint32_t)entry.relative_offset);
        ks_disk_append(segment->time_file, bytes, sizeof(bytes));
    }
}

/* Remembers where the batch just accounted lies; the ring starts again when
 * it does not follow the last one (the segment was truncated) or the file
 * was rewritten since. */
static void segment_recent_add(struct segment *segment, const struct header *batch,
                               int64_t position)
{
    uint64_t rewrites = segment->log_file != NULL ? ks_disk_rewrite_count(segment->log_file) : 0;
    if (segment->recent_count > 0 &&
        (segment->recent_end != position || segment->recent_rewrites != rewrites)) {
        segment->recent_count = 0;
    }
    segment->recent_rewrites = rewrites;
    segment->recent[segment->recent_next] =
        (struct recent_batch){ .last_offset = batch->last_offset, .position = position };
    segment->recent_next = (segment->recent_next + 1) % RECENT_BATCH_COUNT;
    if (segment->recent_count < RECENT_BATCH_COUNT) {
        segment->recent_count++;
    }
    segment->recent_end = position + batch->batch_bytes;
}

/* Applies one batch at `position` to the segment's state and indexes, as
 * LogSegment.append does per batch (the index rule in the design block). */
static void segment_account_batch(struct ks_log *log, struct segment *segment,
                                  const struct header *batch, int64_t position, bool write_file)
{
    if (segment->first_batch_timestamp < 0 && position == 0) {
        segment->first_batch_timestamp = batch->max_timestamp >= 0 ? batch->max_timestamp : 0;
    }
    if (batch->max_timestamp > segment->max_timestamp) {
        segment->max_timestamp = batch->max_timestamp;
        segment->offset_of_max_timestamp = batch->last_offset;
    }
    if (segment->bytes_since_index > log->config.index_interval_bytes) {
        struct offset_entry entry = { (int32_t)(batch->last_offset - segment->base_offset),
                                      (int32_t)position };
        if (segment->offset_index->len > 0) {
            const struct offset_entry *last = &g_array_index(
                segment->offset_index, struct offset_entry, segment->offset_index->len - 1);
            ks_assert(entry.relative_offset > last->relative_offset); /* R6 */
            ks_assert(entry.position > last->position);               /* R6 */
        }
        ks_array_append_val(segment->offset_index, entry);
        index_note(segment);
        if (write_file) {
            uint8_t bytes[OFFSET_ENTRY_BYTES];
            ks_be_put_u32(bytes, (uint32_t)entry.relative_offset);
            ks_be_put_u32(bytes + 4, (uint32_t)entry.position);
            ks_disk_append(segment->index_file, bytes, sizeof(bytes));
        }
        time_index_maybe_append(segment, segment->max_timestamp, segment->offset_of_max_timestamp,
                                write_file);
        segment->bytes_since_index = 0;
    }
    segment->bytes_since_index += batch->batch_bytes;
    segment->next_offset = batch->last_offset + 1;
    segment->size_bytes = position + batch->batch_bytes;
    segment_recent_add(segment, batch, position);
    if (segment->batch_count >= 0) {
        segment->batch_count++;
        segment->record_count += batch->record_count > 0 ? batch->record_count : 0;
    }
}

/* Position of the largest offset-index entry <= offset (0 if none). */
static int64_t index_floor_position(const struct segment *segment, int64_t offset)
{
    int64_t relative = offset - segment->base_offset;
    guint low = 0;
    guint high = segment->offset_index->len;
    if (high > 0) {
        /* Most reads are of the tail, past the last entry: no search. */
        const struct offset_entry *last =
            &g_array_index(segment->offset_index, struct offset_entry, high - 1);
        if (last->relative_offset <= relative) {
            return last->position;
        }
    }
    while (low < high) {
        guint middle = low + (high - low) / 2;
        if (g_array_index(segment->offset_index, struct offset_entry, middle).relative_offset <=
            relative) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    return low == 0 ? 0
                    : g_array_index(segment->offset_index, struct offset_entry, low - 1).position;
}

/* Offset of the largest time-index entry with timestamp < target
 * (segment base if none). Every record with timestamp >= target is at or
 * after it. */
static int64_t time_index_floor_offset(const struct segment *segment, int64_t timestamp)
{
    guint low = 0;
    guint high = segment->time_index->len;
    while (low < high) {
        guint middle = low + (high - low) / 2;
        if (g_array_index(segment->time_index, struct time_entry, middle).timestamp < timestamp) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    if (low == 0) {
        return segment->base_offset;
    }
    return segment->base_offset +
           g_array_index(segment->time_index, struct time_entry, low - 1).relative_offset;
}

/* Where the header scan for offset from `floor` (an index entry's position)
 * may start instead: at the batch it would stop at, when the segment's
 * recent batches know it and the previous one (so every batch between floor
 * and it ends below offset) and every header the scan would read before it
 * is in the page cache. Those reads would find what was appended (the file
 * was not rewritten) and change nothing the read of the found header does
 * not (ks_disk_cached), so skipping them leaves the same disk state, costs
 * and result. Otherwise floor. */
static int64_t segment_recent_skip(const struct segment *segment, int64_t offset, int64_t floor,
                                   int *found_out)
{
    *found_out = -1;
    if (segment->recent_count < 2 || segment->recent_end != segment->size_bytes ||
        segment->log_file == NULL ||
        segment->recent_rewrites != ks_disk_rewrite_count(segment->log_file)) {
        return floor;
    }
    uint32_t newest = (segment->recent_next + RECENT_BATCH_COUNT - 1) % RECENT_BATCH_COUNT;
    if (segment->recent[newest].last_offset < offset) {
        return floor;
    }
    /* The first remembered batch ending at or past offset, after one that
     * ends before it. */
    uint32_t at = newest;
    for (uint32_t k = 1; k < segment->recent_count; k++) {
        uint32_t before = (at + RECENT_BATCH_COUNT - 1) % RECENT_BATCH_COUNT;
        if (segment->recent[before].last_offset < offset) {
            int64_t position = segment->recent[at].position;
            ks_assert(position >= floor); /* the index floor ends at or below offset */
            if (position > floor && !ks_disk_cached(segment->log_file, floor, position - floor)) {
                return floor;
            }
            *found_out = (int)at;
            return position;
        }
        at = before;
    }
    return floor;
}

static int64_t segment_scan_from(struct reader *reader, struct segment *segment, int64_t offset,
                                 int64_t position, struct header *batch_out);

/* Finds the first batch of the segment whose last offset >= offset, scanning
 * headers from the index floor with `reader` (which keeps its window for the
 * caller). Returns its position, or -1 if none (or on an unreadable
 * header); fills *batch_out. */
static int64_t segment_translate_with(struct reader *reader, struct segment *segment,
                                      int64_t offset, struct header *batch_out)
{
    int found = -1;
    int64_t position =
        segment_recent_skip(segment, offset, index_floor_position(segment, offset), &found);
    return segment_scan_from(reader, segment, offset, position, batch_out);
}

/* segment_translate_with's scan of headers from `position`. */
static int64_t segment_scan_from(struct reader *reader, struct segment *segment, int64_t offset,
                                 int64_t position, struct header *batch_out)
{
    while (position < segment->size_bytes) {
        size_t available = 0;
        const uint8_t *bytes = reader_get(reader, position, KS_BATCH_HEADER_BYTES, &available);
        if (bytes == NULL || !peek_header(bytes, available, batch_out) ||
            position + batch_out->batch_bytes > segment->size_bytes) {
            return -1;
        }
        if (batch_out->last_offset >= offset) {
            return position;
        }
        position += batch_out->batch_bytes;
    }
    return -1;
}

static int64_t segment_translate(struct ks_log *log, struct segment *segment, int64_t offset,
                                 struct header *batch_out)
{
    struct reader reader;
    reader_init(&reader, log, segment->log_file, segment->size_bytes, LOOKUP_WINDOW_BYTES);
    return segment_translate_with(&reader, segment, offset, batch_out);
}

/* ---- segments: scanning and recovery ----------------------------------------------------- */

struct scan_result {
    int64_t valid_bytes;
    int64_t batch_count;
    const char *stop_reason; /* NULL when the whole file was valid */
};

/* Rebuilds the segment's state and in-memory indexes from its `.log`,
 * reading every batch from position 0. With `validate`, each batch must
 * parse (length, magic, CRC); always, offsets must increase, stay >= the
 * segment base, and fit 32 bits relative to it. Stops at the first bad or
 * torn batch. When epochs is true, batches with a higher leader epoch add
 * epoch-cache entries (recovery). Does not change the files. */
static struct scan_result segment_scan(struct ks_log *log, struct segment *segment, bool validate,
                                       bool epochs)
{
    struct scan_result result = { 0, 0, NULL };
    int64_t file_size = ks_disk_size(segment->log_file);
    segment_reset_state(segment);
    struct reader reader;
    reader_init(&reader, log, segment->log_file, file_size, SCAN_WINDOW_BYTES);
    int64_t position = 0;
    int64_t expected_min = segment->base_offset;
    while (position < file_size) {
        size_t available = 0;
        const uint8_t *bytes = reader_get(&reader, position, KS_BATCH_HEADER_BYTES, &available);
        struct header batch;
        if (bytes == NULL || available < KS_BATCH_LOG_OVERHEAD_BYTES) {
            result.stop_reason = "torn batch header";
            break;
        }
        if (!peek_header(bytes, available, &batch)) {
            result.stop_reason =
                available < KS_BATCH_HEADER_BYTES ? "torn batch header" : "bad batch header";
            break;
        }
        if (position + batch.batch_bytes > file_size) {
            result.stop_reason = "torn batch";
            break;
        }
        if (validate) {
            bytes = reader_get(&reader, position, (size_t)batch.batch_bytes, &available);
            struct ks_batch_view view;
            enum ks_batch_status status =
                bytes == NULL ? KS_BATCH_TRUNCATED : ks_batch_parse(bytes, available, &view, NULL);
            if (status != KS_BATCH_OK) {
                result.stop_reason = ks_batch_status_name(status);
                break;
            }
        }
        if (batch.base_offset < expected_min ||
            batch.last_offset - segment->base_offset > INT32_MAX) {
            result.stop_reason = "offsets out of order";
            break;
        }
        if (position + batch.batch_bytes > INT32_MAX) {
            result.stop_reason = "segment larger than 2 GiB";
            break;
        }
        segment_account_batch(log, segment, &batch, position, false);
        if ((batch.attributes & KS_ATTR_TRANSACTIONAL) != 0) {
            log->txn_batches_seen = true;
        }
        if (epochs) {
            epoch_assign_in_memory(log, batch.partition_leader_epoch, batch.base_offset);
        }
        expected_min = batch.last_offset + 1;
        position += batch.batch_bytes;
        result.batch_count++;
    }
    if (reader.io_error && result.stop_reason == NULL) {
        result.stop_reason = "I/O error";
    }
    result.valid_bytes = position;
    return result;
}

/* Counts the batches (by header) in [position, end) of a file, for the
 * recovery report; stops at the first unreadable header. */
static int64_t count_batches(struct ks_log *log, ks_file *file, int64_t position, int64_t end)
{
    struct reader reader;
    reader_init(&reader, log, file, end, SCAN_WINDOW_BYTES);
    int64_t count = 0;
    while (position < end) {
        size_t available = 0;
        const uint8_t *bytes = reader_get(&reader, position, KS_BATCH_HEADER_BYTES, &available);
        struct header batch;
        if (bytes == NULL || !peek_header(bytes, available, &batch)) {
            break;
        }
        count++;
        position += batch.batch_bytes;
    }
    return count;
}

/* Reads the index files into memory; false if one is missing, torn or
 * inconsistent with the `.log` size (then the caller rebuilds). */
static bool segment_load_index_arrays(struct ks_log *log, struct segment *segment)
{
    int64_t log_size = ks_disk_size(segment->log_file);
    int64_t index_size = ks_disk_size(segment->index_file);
    int64_t time_size = ks_disk_size(segment->time_file);
    if (index_size % OFFSET_ENTRY_BYTES != 0 || time_size % TIME_ENTRY_BYTES != 0 ||
        index_size > 64 * 1024 * 1024 || time_size > 64 * 1024 * 1024) {
        return false;
    }
    ks_array_set_size(segment->offset_index, 0);
    ks_array_set_size(segment->time_index, 0);
    if (index_size > 0 &&
        read_into_window(log, segment->index_file, 0, (size_t)index_size) != index_size) {
        return false;
    }
    for (int64_t i = 0; i < index_size / OFFSET_ENTRY_BYTES; i++) {
        const uint8_t *bytes = log->window->data + i * OFFSET_ENTRY_BYTES;
        struct offset_entry entry = { (int32_t)ks_be_get_u32(bytes),
                                      (int32_t)ks_be_get_u32(bytes + 4) };
        if (entry.relative_offset < 0 || entry.position <= 0 || entry.position >= log_size) {
            return false;
        }
        if (i > 0) {
            const struct offset_entry *last =
                &g_array_index(segment->offset_index, struct offset_entry, i - 1);
            if (entry.relative_offset <= last->relative_offset ||
                entry.position <= last->position) {
                return false;
            }
        }
        ks_array_append_val(segment->offset_index, entry);
    }
    if (time_size > 0 &&
        read_into_window(log, segment->time_file, 0, (size_t)time_size) != time_size) {
        return false;
    }
    for (int64_t i = 0; i < time_size / TIME_ENTRY_BYTES; i++) {
        const uint8_t *bytes = log->window->data + i * TIME_ENTRY_BYTES;
        struct time_entry entry = { (int64_t)ks_be_get_u64(bytes),
                                    (int32_t)ks_be_get_u32(bytes + 8) };
        if (entry.relative_offset < 0 || entry.timestamp < 0) {
            return false;
        }
        if (i > 0) {
            const struct time_entry *last =
                &g_array_index(segment->time_index, struct time_entry, i - 1);
            if (entry.timestamp <= last->timestamp ||
                entry.relative_offset < last->relative_offset) {
                return false;
            }
        }
        ks_array_append_val(segment->time_index, entry);
    }
    return true;
}

/* Loads a segment's offset and time indexes from their files (false when
 * they are unusable: the caller rebuilds them). */
static bool segment_load_indexes(struct ks_log *log, struct segment *segment)
{
    bool loaded = segment_load_index_arrays(log, segment);
    index_note(segment);
    return loaded;
}

/* Completes a segment's state from its loaded indexes: reads the first
 * header (first timestamp) and scans headers from the last offset-index
 * entry to the end (next offset, largest timestamp, bytes since the last
 * entry). False if a header there is unreadable or the time index points
 * past the data. */
static bool segment_finish_from_index(struct ks_log *log, struct segment *segment)
{
    int64_t file_size = ks_disk_size(segment->log_file);
    segment->size_bytes = file_size;
    segment->next_offset = segment->base_offset;
    segment->max_timestamp = -1;
    segment->offset_of_max_timestamp = segment->base_offset;
    segment->first_batch_timestamp = -1;
    segment->bytes_since_index = 0;
    /* Only the batches after the last index entry are read: the counts stay
     * unknown (they only serve the recovery line, ks_log_summarize). */
    segment->batch_count = file_size == 0 ? 0 : -1;
    segment->record_count = file_size == 0 ? 0 : -1;
    if (file_size == 0) {
        return segment->offset_index->len == 0 && segment->time_index->len == 0;
    }
    struct reader reader;
    reader_init(&reader, log, segment->log_file, file_size, SCAN_WINDOW_BYTES);
    size_t available = 0;
    struct header batch;
    const uint8_t *bytes = reader_get(&reader, 0, KS_BATCH_HEADER_BYTES, &available);
    if (bytes == NULL || !peek_header(bytes, available, &batch)) {
        return false;
    }
    segment->first_batch_timestamp = batch.max_timestamp >= 0 ? batch.max_timestamp : 0;
    int64_t position = 0;
    int64_t expected_min = segment->base_offset;
    guint entry_count = segment->offset_index->len;
    if (entry_count > 0) {
        const struct offset_entry *last =
            &g_array_index(segment->offset_index, struct offset_entry, entry_count - 1);
        position = last->position;
        expected_min = segment->base_offset + 1;
    }
    if (segment->time_index->len > 0) {
        const struct time_entry *last =
            &g_array_index(segment->time_index, struct time_entry, segment->time_index->len - 1);
        segment->max_timestamp = last->timestamp;
        segment->offset_of_max_timestamp = segment->base_offset + last->relative_offset;
    }
    bool first = true;
    while (position < file_size) {
        bytes = reader_get(&reader, position, KS_BATCH_HEADER_BYTES, &available);
        if (bytes == NULL || !peek_header(bytes, available, &batch) ||
            position + batch.batch_bytes > file_size || batch.base_offset < expected_min ||
            batch.last_offset - segment->base_offset > INT32_MAX) {
            return false;
        }
        if (first && entry_count > 0) {
            const struct offset_entry *last =
                &g_array_index(segment->offset_index, struct offset_entry, entry_count - 1);
            if (batch.last_offset - segment->base_offset != last->relative_offset) {
                return false; /* R6: the entry names this batch's last offset */
            }
        }
        first = false;
        if (batch.max_timestamp > segment->max_timestamp) {
            segment->max_timestamp = batch.max_timestamp;
            segment->offset_of_max_timestamp = batch.last_offset;
        }
        segment->bytes_since_index += batch.batch_bytes;
        segment->next_offset = batch.last_offset + 1;
        expected_min = batch.last_offset + 1;
        position += batch.batch_bytes;
    }
    if (segment->time_index->len > 0 &&
        segment->base_offset +
                g_array_index(segment->time_index, struct time_entry, segment->time_index->len - 1)
                    .relative_offset >=
            segment->next_offset) {
        return false;
    }
    return true;
}

/* Recovers one segment: rebuilds it from its batches (validating each),
 * truncates the `.log` at the first bad batch and rewrites both indexes.
 * Returns what was cut. */
static struct scan_result segment_recover(struct ks_log *log, struct segment *segment,
                                          struct ks_log_recovery_report *report)
{
    int64_t file_size = ks_disk_size(segment->log_file);
    struct scan_result result = segment_scan(log, segment, true, true);
    if (result.valid_bytes < file_size) {
        report->dropped_bytes += file_size - result.valid_bytes;
        int64_t dropped = count_batches(log, segment->log_file, result.valid_bytes, file_size);
        report->dropped_batch_count += dropped > 0 ? dropped : 1;
        ks_disk_truncate(segment->log_file, result.valid_bytes);
        segment->dirty = true;
    }
    segment_write_indexes(log, segment);
    return result;
}

/* ---- transactions: producer state, `.txnindex` ------------------------------------------ */

/* Transaction index `.txnindex` (Kafka's TransactionIndex and AbortedTxn),
 * 34 bytes per aborted transaction, big-endian, in the segment that holds
 * the transaction's abort marker, in marker order:
 *
 *   OFFSET  SIZE  DESCRIPTION
 *   0       2     version: 0
 *   2       8     producerId
 *   10      8     firstOffset: the transaction's first offset in this partition
 *   18      8     lastOffset: the offset of its ABORT marker
 *   26      8     lastStableOffset: the LSO once the marker was appended (the
 *                 first offset of the next still open transaction, else
 *                 lastOffset + 1; ProducerStateManager.lastStableOffset)
 *
 * The file exists only once a segment has an entry (Kafka creates it lazily
 * too), so a log without transactions is unchanged on disk.
 *
 * The open transactions (ProducerStateManager's ongoingTxns and
 * unreplicatedTxns) are kept in log->txns, in first-offset order. They are
 * rebuilt from the log's batch headers (and the markers' keys) the first
 * time they are needed after an open or a truncation (txn_rebuild): when a
 * transactional batch is appended or the first unstable offset is asked
 * for. A log without transactional batches is therefore never scanned for
 * them. Kafka reads a producer snapshot and the segments after it instead;
 * ksim writes no `.snapshot` files (docs/model.md). */
#define TXN_ENTRY_BYTES 34

static int segment_floor_index(const struct ks_log *log, int64_t offset);

static void txn_entry_encode(const struct ks_aborted_txn *entry, uint8_t out[TXN_ENTRY_BYTES])
{
    out[0] = 0;
    out[1] = 0; /* AbortedTxn.CURRENT_VERSION */
    ks_be_put_u64(out + 2, (uint64_t)entry->producer_id);
    ks_be_put_u64(out + 10, (uint64_t)entry->first_offset);
    ks_be_put_u64(out + 18, (uint64_t)entry->last_offset);
    ks_be_put_u64(out + 26, (uint64_t)entry->last_stable_offset);
}

static void segment_txn_open(struct ks_log *log, struct segment *segment, unsigned flags)
{
    if (segment->txn_file != NULL) {
        return;
    }
    char *path = segment_path(log, segment->base_offset, ".txnindex");
    enum ks_io_result result = KS_IO_OK;
    segment->txn_file = ks_disk_open(log->world, log->node, path, flags, &result);
    g_free(path);
}

/* Rewrites the segment's `.txnindex` from its entries (recovery). */
static void segment_txn_rewrite(struct ks_log *log, struct segment *segment)
{
    if (segment->txn_file == NULL && segment->aborted->len == 0) {
        return;
    }
    segment_txn_open(log, segment, KS_DISK_CREATE);
    ks_assert(segment->txn_file != NULL);
    ks_disk_truncate(segment->txn_file, 0);
    for (guint i = 0; i < segment->aborted->len; i++) {
        uint8_t bytes[TXN_ENTRY_BYTES];
        txn_entry_encode(&g_array_index(segment->aborted, struct ks_aborted_txn, i), bytes);
        ks_disk_append(segment->txn_file, bytes, sizeof bytes);
    }
    segment->dirty = true;
}

/* TransactionIndex.truncateTo: drops the entries whose marker is at or
 * above offset (they are a suffix: entries are in marker order). */
static void segment_txn_truncate(struct segment *segment, int64_t offset)
{
    guint keep = 0;
    while (keep < segment->aborted->len &&
           g_array_index(segment->aborted, struct ks_aborted_txn, keep).last_offset < offset) {
        keep++;
    }
    if (keep == segment->aborted->len) {
        return;
    }
    ks_array_set_size(segment->aborted, keep);
    if (segment->txn_file != NULL) {
        ks_disk_truncate(segment->txn_file, (int64_t)keep * TXN_ENTRY_BYTES);
        segment->dirty = true;
    }
}

/* Reads every segment's `.txnindex` that exists; whole entries whose marker
 * lies in the segment are kept (a torn or stale tail is cut). Returns whether
 * any file exists. */
static bool txn_index_load_all(struct ks_log *log)
{
    bool any = false;
    for (guint i = 0; i < log->segments->len; i++) {
        struct segment *segment = segment_at(log, i);
        ks_array_set_size(segment->aborted, 0);
        segment_txn_open(log, segment, 0);
        if (segment->txn_file == NULL) {
            continue;
        }
        any = true;
        int64_t size = ks_disk_size(segment->txn_file);
        int64_t position = 0;
        uint8_t bytes[TXN_ENTRY_BYTES];
        while (position + TXN_ENTRY_BYTES <= size) {
            size_t read = 0;
            if (ks_disk_read(segment->txn_file, bytes, sizeof bytes, position, &read) != KS_IO_OK ||
                read != sizeof bytes) {
                break;
            }
            struct ks_aborted_txn entry = {
                (int64_t)ks_be_get_u64(bytes + 2),
                (int64_t)ks_be_get_u64(bytes + 10),
                (int64_t)ks_be_get_u64(bytes + 18),
                (int64_t)ks_be_get_u64(bytes + 26),
            };
            if (bytes[0] != 0 || bytes[1] != 0 || entry.last_offset < segment->base_offset ||
                entry.last_offset >= segment->next_offset ||
                entry.first_offset > entry.last_offset) {
                break;
            }
            ks_array_append_val(segment->aborted, entry);
            position += TXN_ENTRY_BYTES;
        }
        if (position < size) {
            ks_disk_truncate(segment->txn_file, position);
            segment->dirty = true;
        }
    }
    return any;
}

static struct txn_entry *txn_find_ongoing(struct ks_log *log, int64_t producer_id)
{
    for (guint i = 0; i < log->txns->len; i++) {
        struct txn_entry *entry = &g_array_index(log->txns, struct txn_entry, i);
        if (entry->producer_id == producer_id && entry->last_offset < 0) {
            return entry;
        }
    }
    return NULL;
}

/* ProducerAppendInfo.append for one transactional batch at base_offset:
 * a data batch opens the producer's transaction if none is open; a marker
 * (control_type >= 0) completes it (firstOffset: the open transaction's, or
 * the marker's own when none is open, as appendEndTxnMarker does). An ABORT
 * marker at or above index_from adds its entry to the segment that holds it,
 * written to the file when write_file. */
static void txn_apply(struct ks_log *log, int64_t producer_id, int64_t base_offset,
                      int control_type, int64_t index_from, bool write_file)
{
    struct txn_entry *open = txn_find_ongoing(log, producer_id);
    if (control_type < 0) {
        if (open == NULL) {
            struct txn_entry entry = { producer_id, base_offset, -1 };
            ks_array_append_val(log->txns, entry);
        }
        return;
    }
    int64_t first_offset = open != NULL ? open->first_offset : base_offset;
    if (open != NULL) {
        open->last_offset = base_offset; /* unreplicated until the HW passes it */
    } else {
        struct txn_entry entry = { producer_id, base_offset, base_offset };
        ks_array_append_val(log->txns, entry);
    }
    if (control_type != KS_CONTROL_ABORT || base_offset < index_from) {
        return;
    }
    /* ProducerStateManager.lastStableOffset(completedTxn): the first offset
     * of the next transaction still undecided, else the marker's offset + 1. */
    int64_t last_stable_offset = base_offset + 1;
    for (guint i = 0; i < log->txns->len; i++) {
        const struct txn_entry *other = &g_array_index(log->txns, struct txn_entry, i);
        if (other->last_offset < 0 && other->producer_id != producer_id) {
            last_stable_offset = other->first_offset;
            break;
        }
    }
    int index = segment_floor_index(log, base_offset);
    ks_assert(index >= 0);
    struct segment *segment = segment_at(log, (guint)index);
    struct ks_aborted_txn entry = { producer_id, first_offset, base_offset, last_stable_offset };
    ks_array_append_val(segment->aborted, entry);
    if (write_file) {
        uint8_t bytes[TXN_ENTRY_BYTES];
        txn_entry_encode(&entry, bytes);
        segment_txn_open(log, segment, KS_DISK_CREATE);
        ks_assert(segment->txn_file != NULL);
        ks_disk_append(segment->txn_file, bytes, sizeof bytes);
        segment->dirty = true;
    }
}

struct txn_rebuild_context {
    struct ks_log *log;
    int64_t index_from;
};

static bool txn_rebuild_visit(void *context, const struct ks_batch_view *batch)
{
    struct txn_rebuild_context *rebuild = context;
    if ((batch->attributes & KS_ATTR_TRANSACTIONAL) == 0 || batch->producer_id < 0) {
        return true;
    }
    int control_type = -1;
    if ((batch->attributes & KS_ATTR_CONTROL) != 0) {
        control_type = ks_batch_control_type(batch);
        if (control_type != KS_CONTROL_ABORT && control_type != KS_CONTROL_COMMIT) {
            return true; /* not a transaction marker */
        }
    }
    txn_apply(rebuild->log, batch->producer_id, batch->base_offset, control_type,
              rebuild->index_from, false);
    return true;
}

/* Rebuilds log->txns from the whole log (Kafka's LogLoader and
 * UnifiedLog.rebuildProducerState read the batches after the last snapshot;
 * ksim has none). With index_from >= 0 (recovery), the `.txnindex` entries of
 * markers from index_from on are rebuilt too and their files rewritten. */
static void txn_rebuild(struct ks_log *log, int64_t index_from)
{
    ks_array_set_size(log->txns, 0);
    if (index_from >= 0) {
        for (guint i = 0; i < log->segments->len; i++) {
            segment_txn_truncate(segment_at(log, i), index_from);
        }
    }
    struct txn_rebuild_context context = { log, index_from >= 0 ? index_from : INT64_MAX };
    log->txns_known = true; /* ks_log_scan reads the log; nothing in it needs txns */
    ks_log_scan(log, log->hot.log_start_offset, log->hot.leo, txn_rebuild_visit, &context);
    if (index_from >= 0) {
        for (guint i = 0; i < log->segments->len; i++) {
            struct segment *segment = segment_at(log, i);
            if (segment->next_offset > index_from) {
                segment_txn_rewrite(log, segment);
            }
        }
    }
}

/* ProducerStateManager.removeUnreplicatedTransactions: a completed
 * transaction whose marker is below `offset` is stable and leaves the list;
 * open ones stay. */
static void txn_drop_completed(struct ks_log *log, int64_t offset)
{
    guint kept = 0;
    for (guint i = 0; i < log->txns->len; i++) {
        struct txn_entry entry = g_array_index(log->txns, struct txn_entry, i);
        if (entry.last_offset >= 0 && entry.last_offset < offset) {
            continue;
        }
        g_array_index(log->txns, struct txn_entry, kept++) = entry;
    }
    ks_array_set_size(log->txns, kept);
}

void ks_log_on_stable_below(struct ks_log *log, int64_t offset)
{
    if (log->txns_known && log->txns->len > 0) {
        txn_drop_completed(log, offset);
    }
}

int64_t ks_log_first_unstable_offset(struct ks_log *log, int64_t hw)
{
    if (!log->txns_known) {
        txn_rebuild(log, -1);
    }
    txn_drop_completed(log, hw); /* onHighWatermarkUpdated */
    guint kept = log->txns->len;
    return kept > 0 ? g_array_index(log->txns, struct txn_entry, 0).first_offset : -1;
}

int64_t ks_log_last_stable_offset(struct ks_log *log, int64_t hw)
{
    int64_t first_unstable = ks_log_first_unstable_offset(log, hw);
    return first_unstable >= 0 && first_unstable < hw ? first_unstable : hw;
}

bool ks_log_has_ongoing_txn(struct ks_log *log, int64_t producer_id)
{
    if (!log->txns_known) {
        txn_rebuild(log, -1);
    }
    return txn_find_ongoing(log, producer_id) != NULL;
}

int32_t ks_log_open_txn_count(struct ks_log *log)
{
    if (!log->txns_known) {
        txn_rebuild(log, -1);
    }
    int32_t count = 0;
    for (guint i = 0; i < log->txns->len; i++) {
        count += g_array_index(log->txns, struct txn_entry, i).last_offset < 0;
    }
    return count;
}

void ks_log_collect_aborted(const struct ks_log *log, int64_t from, int64_t upto, GArray *out)
{
    ks_array_set_size(out, 0);
    int first = segment_floor_index(log, from);
    for (guint i = first > 0 ? (guint)first : 0; i < log->segments->len; i++) {
        const struct segment *segment = segment_at(log, i);
        for (guint j = 0; j < segment->aborted->len; j++) {
            const struct ks_aborted_txn *entry =
                &g_array_index(segment->aborted, struct ks_aborted_txn, j);
            if (entry->last_offset >= from && entry->first_offset < upto) {
                ks_array_append_val(out, *entry);
            }
        }
    }
}

/* ---- open and close --------------------------------------------------------------------- */

/* Parses "<20 digits><suffix>"; false for any other name. */
static bool parse_segment_name(const char *name, const char *suffix, int64_t *base_out)
{
    size_t length = strlen(name);
    size_t suffix_length = strlen(suffix);
    if (length != 20 + suffix_length || strcmp(name + 20, suffix) != 0) {
        return false;
    }
    int64_t base = 0;
    for (int i = 0; i < 20; i++) {
        if (name[i] < '0' || name[i] > '9') {
            return false;
        }
        int digit = name[i] - '0';
        if (base > (INT64_MAX - digit) / 10) {
            return false;
        }
        base = base * 10 + digit;
    }
    *base_out = base;
    return true;
}

static bool ends_with(const char *name, const char *suffix)
{
    size_t length = strlen(name);
    size_t suffix_length = strlen(suffix);
    return length >= suffix_length && strcmp(name + length - suffix_length, suffix) == 0;
}

/* Kafka's first loading step (LogLoader.removeTempFilesAndCollectSwapFiles):
 * delete `.deleted` and `.cleaned` leftovers and `.tmp` files, and finish
 * `.swap` renames (the cleaned segment was complete when it was renamed to
 * .swap). Index files are deleted with a swap so they get rebuilt. */
static void finish_interrupted_operations(struct ks_log *log)
{
    char **names = ks_disk_list(log->world, log->node, log->dir);
    if (names == NULL) {
        return;
    }
    for (char **name = names; *name != NULL; name++) {
        char *path = g_strdup_printf("%s/%s", log->dir, *name);
        if (ends_with(*name, ".deleted") || ends_with(*name, ".cleaned") ||
            ends_with(*name, ".tmp")) {
            ks_disk_delete(log->world, log->node, path);
        } else if (ends_with(*name, ".log.swap")) {
            int64_t base = 0;
            char *target = g_strndup(path, strlen(path) - strlen(".swap"));
            char *target_name = g_strndup(*name, strlen(*name) - strlen(".swap"));
            if (parse_segment_name(target_name, ".log", &base)) {
                char *index = segment_path(log, base, ".index");
                char *time = segment_path(log, base, ".timeindex");
                ks_disk_delete(log->world, log->node, index);
                ks_disk_delete(log->world, log->node, time);
                ks_disk_rename(log->world, log->node, path, target);
                g_free(index);
                g_free(time);
            }
            g_free(target_name);
            g_free(target);
        }
        g_free(path);
    }
    ks_disk_list_free(names);
}

static int compare_segments(gconstpointer a, gconstpointer b)
{
    const struct segment *left = *(struct segment *const *)a;
    const struct segment *right = *(struct segment *const *)b;
    return left->base_offset < right->base_offset ? -1 : left->base_offset > right->base_offset;
}

/* Finds the `.log` segments of the folder, sorted by base offset. Files
 * whose names are not Kafka segment names are ignored; index files without
 * a `.log` are deleted, as Kafka does. */
static void collect_segments(struct ks_log *log)
{
    char **names = ks_disk_list(log->world, log->node, log->dir);
    if (names == NULL) {
        return;
    }
    for (char **name = names; *name != NULL; name++) {
        int64_t base = 0;
        if (parse_segment_name(*name, ".log", &base)) {
            ks_ptr_array_add(log->segments, segment_new(base)); /* sorted below */
        } else if (parse_segment_name(*name, ".index", &base) ||
                   parse_segment_name(*name, ".timeindex", &base) ||
                   parse_segment_name(*name, ".txnindex", &base)) {
            char *log_path = segment_path(log, base, ".log");
            if (!ks_disk_exists(log->world, log->node, log_path)) {
                char *path = g_strdup_printf("%s/%s", log->dir, *name);
                ks_disk_delete(log->world, log->node, path);
                g_free(path);
            }
            g_free(log_path);
        }
    }
    ks_disk_list_free(names);
    g_ptr_array_sort(log->segments, compare_segments);
    active_note(log);
}

static void delete_segments_from(struct ks_log *log, guint first_index,
                                 struct ks_log_recovery_report *report)
{
    while (log->segments->len > first_index) {
        struct segment *segment = segments_pop(log);
        if (report != NULL) {
            int64_t size = ks_disk_size(segment->log_file);
            report->dropped_bytes += size;
            report->dropped_batch_count += count_batches(log, segment->log_file, 0, size);
            report->segments_deleted++;
        }
        segment_delete(log, segment);
    }
}

/* Loads every segment; from the one holding the recovery point (all of them
 * when !clean_shutdown) each is recovered batch by batch, and the first bad
 * batch ends the log: everything after it is deleted (kafka-reference 3.7). */
static void load_segments(struct ks_log *log, int64_t recovery_point, bool clean_shutdown,
                          struct ks_log_recovery_report *report)
{
    /* LEO implied by the files before recovery: the last segment's end by
     * its headers (only known when the last segment can be read). */
    report->leo_before = -1;
    bool recovering = false;
    for (guint i = 0; i < log->segments->len; i++) {
        struct segment *segment = segment_at(log, i);
        segment_open_files(log, segment, 0);
        if (i > 0) {
            struct segment *previous = segment_at(log, i - 1);
            if (segment->base_offset < previous->next_offset) {
                /* R2 broken by the files themselves: drop the overlap. */
                delete_segments_from(log, i, report);
                break;
            }
        }
        bool holds_recovery_point =
            i + 1 == log->segments->len || segment_at(log, i + 1)->base_offset > recovery_point;
        if (!clean_shutdown && holds_recovery_point && !recovering) {
            recovering = true;
            report->recovered = true;
            report->recovered_from_offset = segment->base_offset;
        }
        if (!recovering) {
            if (segment_load_indexes(log, segment) && segment_finish_from_index(log, segment)) {
                continue;
            }
            /* A missing or damaged index, or a damaged tail: recover the
             * segment. Unlike Kafka (which keeps later segments then), a
             * bad batch ends the log here, so that what remains is always a
             * prefix without a gap. */
            struct scan_result result = segment_recover(log, segment, report);
            if (result.stop_reason != NULL) {
                delete_segments_from(log, i + 1, report);
                break;
            }
            continue;
        }
        struct scan_result result = segment_recover(log, segment, report);
        if (result.stop_reason != NULL) {
            delete_segments_from(log, i + 1, report);
            break;
        }
    }
}

/* What the headers of the last segment's file say before recovery. */
struct tail_estimate {
    int64_t valid_bytes; /* up to the first unreadable or torn header */
    int64_t batch_count;
    int64_t record_count;
};

static struct tail_estimate log_estimate_leo_before(struct ks_log *log,
                                                    struct ks_log_recovery_report *report)
{
    /* Before recovery, the LEO the files imply is the last segment's end as
     * read from its headers (Kafka logs "recovering from offset X"). */
    struct tail_estimate tail = { 0, 0, 0 };
    if (log->segments->len == 0) {
        report->leo_before = 0;
        return tail;
    }
    struct segment *last = segment_at(log, log->segments->len - 1);
    int64_t size = ks_disk_size(last->log_file);
    struct reader reader;
    reader_init(&reader, log, last->log_file, size, SCAN_WINDOW_BYTES);
    int64_t position = 0;
    int64_t leo = last->base_offset;
    while (position < size) {
        size_t available = 0;
        const uint8_t *bytes = reader_get(&reader, position, KS_BATCH_HEADER_BYTES, &available);
        struct header batch;
        if (bytes == NULL || !peek_header(bytes, available, &batch) ||
            position + batch.batch_bytes > size) {
            break;
        }
        if (batch.last_offset + 1 > leo) {
            leo = batch.last_offset + 1;
        }
        position += batch.batch_bytes;
        tail.batch_count++;
        tail.record_count += batch.record_count > 0 ? batch.record_count : 0;
    }
    report->leo_before = leo;
    tail.valid_bytes = position;
    return tail;
}

static void log_check(const struct ks_log *log)
{
#if KS_DEBUG
    /* R1, R11 and R12 load the arrays an append otherwise need not touch. */
    ks_assert(log->segments->len > 0);                                 /* R1 */
    ks_assert(log->active == segment_at(log, log->segments->len - 1)); /* R11 */
    ks_assert(log->hot.latest_epoch ==
              (log->epochs->len > 0
                   ? g_array_index(log->epochs, struct epoch_entry, log->epochs->len - 1).epoch
                   : -1)); /* R12 */
    ks_assert(
        log->hot.latest_epoch_start_offset ==
        (log->epochs->len > 0
             ? g_array_index(log->epochs, struct epoch_entry, log->epochs->len - 1).start_offset
             : -1)); /* R12 */
    for (guint i = 0; i < log->segments->len; i++) {
        const struct segment *segment = segment_at(log, i);
        ks_assert(segment->offset_entry_count == segment->offset_index->len); /* R13 */
        ks_assert(segment->time_entry_count == segment->time_index->len);     /* R13 */
    }
#endif
    ks_assert(log->hot.leo == active_segment(log)->next_offset); /* R4 */
    ks_assert(log->hot.log_start_offset <= log->hot.leo);        /* R3 */
    ks_assert(log->recovery_point <= log->hot.leo);              /* R5 */
}

struct ks_log *ks_log_open(ks_world *world, ks_node_id node, const char *dir,
                           const struct ks_log_config *config, int64_t recovery_point,
                           bool clean_shutdown, struct ks_log_recovery_report *report_out)
{
    ks_assert(config->index_interval_bytes >= 0);
    struct ks_log *log = g_new0(struct ks_log, 1);
    log->world = world;
    log->node = node;
    log->dir = g_strdup(dir);
    log->config = *config;
    log->segments = g_ptr_array_new();
    log->epochs = g_array_new(FALSE, FALSE, sizeof(struct epoch_entry));
    log->hot.latest_epoch = -1; /* R12 */
    log->hot.latest_epoch_start_offset = -1;
    log->window = g_byte_array_new();
    log->txns = g_array_new(FALSE, FALSE, sizeof(struct txn_entry));
    log->last_flush_ns = ks_world_now_ns(world);
    struct ks_log_recovery_report report;
    memset(&report, 0, sizeof(report));

    /* A folder this call makes is empty: nothing to finish, list or load,
     * no epoch cache and no `.txnindex` (each a host call or five per new
     * replica, thousands at a large cluster's start). */
    bool fresh = ks_disk_mkdir_new(world, node, dir);
    /* Kafka creates the leader-epoch-checkpoint with the log as an empty
     * file (CheckpointFile's constructor: Files.createFile, no write, no
     * fsync; LeaderEpochFileCache reads an empty file as no entries) and
     * writes it only when the cache changes. Doing it first also means the
     * folder is never listed empty. Writing "0\n0\n" here through a
     * temporary file with a background fsync, as ksim did, cost each replica
     * a device request at start: 10,000 replicas on a broker kept its disk
     * busy for 20 simulated seconds (at disk.fsync.latency = 2ms) before it
     * answered a fetch. */
    char *epoch_path = g_strdup_printf("%s/%s", dir, EPOCH_CHECKPOINT_NAME);
    if (fresh || !ks_disk_exists(world, node, epoch_path)) {
        enum ks_io_result created = KS_IO_OK;
        ks_file *epoch_file = ks_disk_open(world, node, epoch_path, KS_DISK_CREATE, &created);
        if (epoch_file != NULL) {
            ks_disk_close(epoch_file);
        }
    }
    g_free(epoch_path);
    if (!fresh) {
        finish_interrupted_operations(log);
        collect_segments(log);
        epoch_load(log);
    }
    for (guint i = 0; i < log->segments->len; i++) {
        segment_open_files(log, segment_at(log, i), 0);
    }
    struct tail_estimate tail = log_estimate_leo_before(log, &report);
    GArray *epochs_before = g_array_copy(log->epochs);
    load_segments(log, recovery_point, clean_shutdown, &report);
    if (log->segments->len == 0) {
        struct segment *segment = segment_new(0);
        segment_open_files(log, segment, KS_DISK_TRUNCATE);
        segments_push(log, segment);
    }
    struct segment *last = active_segment(log);
    if (last->batch_count < 0 && last->size_bytes == tail.valid_bytes) {
        /* Loaded from its index, but the headers were read just above: the
         * active segment's counts are known after all. */
        last->batch_count = tail.batch_count;
        last->record_count = tail.record_count;
    }
    log->hot.leo = active_segment(log)->next_offset;
    log->hot.log_start_offset = segment_at(log, 0)->base_offset;
    log->recovery_point = recovery_point < log->hot.leo ? recovery_point : log->hot.leo;
    if (log->recovery_point < 0) {
        log->recovery_point = 0;
    }
    /* The cache must not name offsets the log no longer has (R8). */
    bool changed = epoch_truncate_from_end(log, log->hot.leo);
    changed = epoch_truncate_from_start(log, log->hot.log_start_offset) || changed;
    /* Recovery may also have added entries from the batches' epochs. */
    changed = changed || epochs_before->len != log->epochs->len ||
              (log->epochs->len > 0 &&
               memcmp(epochs_before->data, log->epochs->data,
                      (size_t)log->epochs->len * sizeof(struct epoch_entry)) != 0);
    g_array_free(epochs_before, TRUE);
    if (changed) {
        epoch_persist(log, SYNC_BACKGROUND); /* LogLoader: truncateFromEndAsyncFlush */
    }
    bool has_txn_index = !fresh && txn_index_load_all(log);
    if (report.recovered && (has_txn_index || log->txn_batches_seen)) {
        /* LogSegment.recover rebuilds the transaction index of every
         * recovered segment from its batches and the producer state. */
        txn_rebuild(log, report.recovered_from_offset);
    }
    report.leo_after = log->hot.leo;
    if (report.leo_before < 0) {
        report.leo_before = log->hot.leo;
    }
    if (report_out != NULL) {
        *report_out = report;
    }
    log_check(log);
    return log;
}

void ks_log_close(struct ks_log *log)
{
    if (log == NULL) {
        return;
    }
    for (guint i = 0; i < log->segments->len; i++) {
        segment_free(segment_at(log, i));
    }
    g_ptr_array_free(log->segments, TRUE);
    g_array_free(log->epochs, TRUE);
    g_byte_array_unref(log->window);
    g_array_free(log->txns, TRUE);
    g_free(log->dir);
    g_free(log);
}

int64_t ks_log_recovery_point(const struct ks_log *log)
{
    return log->recovery_point;
}

int64_t ks_log_size_bytes(const struct ks_log *log)
{
    int64_t total = 0;
    for (guint i = 0; i < log->segments->len; i++) {
        total += segment_at(log, i)->size_bytes;
    }
    return total;
}

int32_t ks_log_segment_count(const struct ks_log *log)
{
    return (int32_t)log->segments->len;
}

const char *ks_log_dir(const struct ks_log *log)
{
    return log->dir;
}

void ks_log_summarize(const struct ks_log *log, GArray *out)
{
    ks_array_set_size(out, 0);
    for (guint i = 0; i < log->segments->len; i++) {
        const struct segment *segment = segment_at(log, i);
        struct ks_log_segment_summary summary = {
            .base_offset = segment->base_offset,
            .next_offset = segment->next_offset,
            .size_bytes = segment->size_bytes,
            .batch_count = segment->batch_count,
            .record_count = segment->record_count,
        };
        ks_array_append_val(out, summary);
    }
}

/* ---- flush and roll ----------------------------------------------------------------------- */

static enum ks_io_result segment_fsync(struct segment *segment, enum sync_mode mode)
{
    if (!segment->dirty) {
        return KS_IO_OK;
    }
    enum ks_io_result result = file_sync(segment->log_file, mode);
    if (result == KS_IO_OK) {
        result = file_sync(segment->index_file, mode);
    }
    if (result == KS_IO_OK) {
        result = file_sync(segment->time_file, mode);
    }
    if (result == KS_IO_OK && segment->txn_file != NULL) {
        result = file_sync(segment->txn_file, mode);
    }
    if (result == KS_IO_OK) {
        segment->dirty = false;
    }
    return result;
}

/* UnifiedLog.flush: every segment up to the LEO, then the recovery point. */
static void log_flush(struct ks_log *log, enum sync_mode mode)
{
    for (guint i = 0; i < log->segments->len; i++) {
        if (segment_fsync(segment_at(log, i), mode) != KS_IO_OK) {
            return; /* the recovery point stays where the data is known durable */
        }
    }
    log->recovery_point = log->hot.leo;
    log->unflushed_message_count = 0;
    log->last_flush_ns = ks_world_now_ns(log->world);
}

void ks_log_flush(struct ks_log *log)
{
    log_flush(log, SYNC_WAIT);
}

void ks_log_maybe_flush(struct ks_log *log, ks_time_ns now_ns)
{
    if (log->config.flush_ns == KS_INT64_UNSET || log->config.flush_ns < 0) {
        return;
    }
    if (now_ns >= log->last_flush_ns &&
        now_ns - log->last_flush_ns >= (ks_time_ns)log->config.flush_ns) {
        /* LogManager.flushDirtyLogs runs on the kafka-log-flusher scheduler
         * thread: no request waits for it. */
        log_flush(log, SYNC_BACKGROUND);
        log->last_flush_ns = now_ns;
    }
}

/* Starts a new active segment at new_base. The old one gets its final
 * time-index entry and is fsynced in the background, which advances the
 * recovery point to new_base: UnifiedLog.roll schedules
 * flushUptoOffsetExclusive(newSegment.baseOffset) on the scheduler ("to avoid
 * a potentially costly fsync under the log's lock"), so the append that
 * rolled does not wait for it. ksim makes it durable at once, where Kafka's
 * runs a moment later. */
static void log_roll(struct ks_log *log, int64_t new_base)
{
    struct segment *old = active_segment(log);
    ks_assert(new_base >= old->next_offset);
    time_index_maybe_append(old, old->max_timestamp, old->offset_of_max_timestamp, true);
    if (old->size_bytes == 0 && old->base_offset != new_base) {
        /* An empty active segment is simply renamed by dropping it. */
        segment_delete(log, segments_pop(log));
    } else if (old->size_bytes == 0) {
        return;
    } else {
        old->dirty = true;
        if (segment_fsync(old, SYNC_BACKGROUND) == KS_IO_OK) {
            bool earlier_clean = true;
            for (guint i = 0; i + 1 < log->segments->len; i++) {
                earlier_clean = earlier_clean && !segment_at(log, i)->dirty;
            }
            if (earlier_clean) {
                log->recovery_point = new_base;
            }
        }
    }
    struct segment *segment = segment_new(new_base);
    segment_open_files(log, segment, KS_DISK_TRUNCATE);
    segments_push(log, segment);
    if (log->hot.log_start_offset < segment_at(log, 0)->base_offset) {
        log->hot.log_start_offset = segment_at(log, 0)->base_offset;
    }
}

/* kafka-reference 3.4 (LogSegment.shouldRoll), without segment.jitter.ms. */
static bool should_roll(const struct ks_log *log, int64_t incoming_bytes,
                        int64_t incoming_max_timestamp, int64_t incoming_last_offset,
                        int64_t incoming_batch_count)
{
    const struct segment *segment = active_segment(log);
    if (segment->size_bytes == 0) {
        return false;
    }
    if (segment->size_bytes > log->config.segment_bytes - incoming_bytes) {
        return true;
    }
    if (segment->first_batch_timestamp >= 0 && incoming_max_timestamp >= 0 &&
        log->config.segment_ns > 0 &&
        incoming_max_timestamp - segment->first_batch_timestamp >
            log->config.segment_ns / (int64_t)KS_NS_PER_MS) {
        return true;
    }
    int64_t index_entries_max = log->config.segment_index_bytes / OFFSET_ENTRY_BYTES;
    int64_t time_entries_max = log->config.segment_index_bytes / TIME_ENTRY_BYTES;
    if ((int64_t)segment->offset_entry_count + incoming_batch_count > index_entries_max ||
        (int64_t)segment->time_entry_count + incoming_batch_count > time_entries_max) { /* R13 */
        return true;
    }
    if (incoming_last_offset - segment->base_offset > INT32_MAX) {
        return true;
    }
    if (segment->size_bytes + incoming_bytes > INT32_MAX) {
        return true;
    }
    return false;
}

/* ---- append ---------------------------------------------------------------------------------- */

struct append_plan {
    int64_t first_base_offset;
    int64_t last_offset;
    int64_t max_timestamp;
    int64_t batch_count;
    int64_t record_count;
    int64_t transactional_count; /* batches with the transactional bit */
    /* R10: the first batch's header as validate_batches parsed it (with the
     * leader's offsets and epoch once it stamps them), so that no later step
     * decodes it again; first_header_ok false where peek_header would refuse it. */
    struct header first_header;
    bool first_header_ok;
};

/* peek_header's fields from a parsed batch; false where peek_header would
 * return false for the same bytes. */
static bool header_from_view(const struct ks_batch_view *batch, struct header *out)
{
    if (batch->last_offset_delta < 0 || batch->base_offset < 0 ||
        batch->base_offset > INT64_MAX - INT32_MAX) {
        return false;
    }
    out->base_offset = batch->base_offset;
    out->last_offset = batch->base_offset + batch->last_offset_delta;
    out->partition_leader_epoch = batch->partition_leader_epoch;
    out->base_timestamp = batch->base_timestamp;
    out->max_timestamp = batch->max_timestamp;
    out->record_count = batch->record_count;
    out->attributes = batch->attributes;
    out->producer_id = batch->producer_id;
    out->batch_bytes = (int64_t)batch->batch_length + KS_BATCH_LOG_OVERHEAD_BYTES;
    return true;
}

#if KS_DEBUG
/* R10: a header kept in the plan is what peek_header reads from the bytes. */
static void header_check(const uint8_t *bytes, size_t byte_count, const struct header *kept)
{
    struct header read;
    ks_assert(peek_header(bytes, byte_count, &read));
    ks_assert(read.base_offset == kept->base_offset && read.last_offset == kept->last_offset);
    ks_assert(read.partition_leader_epoch == kept->partition_leader_epoch);
    ks_assert(read.base_timestamp == kept->base_timestamp &&
              read.max_timestamp == kept->max_timestamp);
    ks_assert(read.record_count == kept->record_count && read.attributes == kept->attributes);
    ks_assert(read.producer_id == kept->producer_id && read.batch_bytes == kept->batch_bytes);
}
#endif

/* Checks that every batch in bytes parses; with `leader`, also that its
 * records are well formed and numbered 0..n-1, and keyed when the topic is
 * compacted (Kafka's LogValidator). */
static bool validate_batches(const struct ks_log *log, const uint8_t *bytes, size_t byte_count,
                             size_t crc_checked_bytes, const struct ks_batch_view *first,
                             bool leader, struct append_plan *plan)
{
    /* Every field is set here or by the first batch (first_header with
     * first_header_ok): no memset of the whole plan, whose kept header is
     * most of it. */
    plan->first_base_offset = 0;
    plan->last_offset = 0;
    plan->max_timestamp = -1;
    plan->batch_count = 0;
    plan->record_count = 0;
    plan->transactional_count = 0;
    plan->first_header_ok = false;
    size_t position = 0;
    int64_t previous_last = -1;
    while (position < byte_count) {
        struct ks_batch_view batch;
        size_t batch_bytes = 0;
        /* The caller checked the CRC of the first crc_checked_bytes (whole
         * batches); a batch reaching past them gets the full check here. */
        enum ks_batch_status status = KS_BATCH_BAD_CRC;
        if (position == 0 && first != NULL) {
            /* The caller's parse of these bytes (or of the same bytes
             * elsewhere: the records are taken from here). */
            batch = *first;
            batch.records = bytes + KS_BATCH_HEADER_BYTES;
            batch_bytes = (size_t)first->batch_length + KS_BATCH_LOG_OVERHEAD_BYTES;
            ks_assert(batch_bytes <= byte_count && batch_bytes <= crc_checked_bytes);
#if KS_DEBUG
            struct ks_batch_view again;
            ks_assert(ks_batch_parse_crc_checked(bytes, byte_count, &again, NULL) == KS_BATCH_OK);
            ks_assert(again.base_offset == batch.base_offset &&
                      again.batch_length == batch.batch_length &&
                      again.last_offset_delta == batch.last_offset_delta &&
                      again.record_count == batch.record_count &&
                      again.attributes == batch.attributes &&
                      again.max_timestamp == batch.max_timestamp &&
                      again.records_bytes == batch.records_bytes);
#endif
            status = KS_BATCH_OK;
        } else if (position < crc_checked_bytes) {
            status = ks_batch_parse_crc_checked(bytes + position, byte_count - position, &batch,
                                                &batch_bytes);
            if (status == KS_BATCH_OK && position + batch_bytes > crc_checked_bytes) {
                status = KS_BATCH_BAD_CRC;
            }
        }
        if (status != KS_BATCH_OK && ks_batch_parse(bytes + position, byte_count - position, &batch,
                                                    &batch_bytes) != KS_BATCH_OK) {
            return false;
        }
        if (batch.last_offset_delta < 0 || batch.record_count < 0) {
            return false;
        }
        if (leader) {
            if (batch.record_count == 0 || batch.last_offset_delta != batch.record_count - 1) {
                return false;
            }
            /* "Compacted topic cannot accept message without key" */
            bool keys_required =
                log->config.cleanup_compact && (batch.attributes & KS_ATTR_CONTROL) == 0;
            if (!ks_batch_check_records(&batch, keys_required)) {
                return false;
            }
        } else {
            if (batch.base_offset < 0 || batch.base_offset <= previous_last) {
                return false;
            }
            previous_last = ks_batch_last_offset(&batch);
        }
        if (plan->batch_count == 0) {
            plan->first_base_offset = batch.base_offset;
            plan->first_header_ok = header_from_view(&batch, &plan->first_header);
        }
        plan->last_offset = ks_batch_last_offset(&batch);
        if (batch.max_timestamp > plan->max_timestamp) {
            plan->max_timestamp = batch.max_timestamp;
        }
        plan->batch_count++;
        plan->record_count += batch.record_count;
        plan->transactional_count += (batch.attributes & KS_ATTR_TRANSACTIONAL) != 0;
        position += batch_bytes;
    }
    return plan->batch_count > 0;
}

/* Writes validated batches (offsets already final) to the active segment,
 * rolling first if needed, then applies the index rule batch by batch. */
static enum ks_log_result append_batches(struct ks_log *log, const uint8_t *bytes,
                                         size_t byte_count, const struct append_plan *plan)
{
    if (should_roll(log, (int64_t)byte_count, plan->max_timestamp, plan->last_offset,
                    plan->batch_count)) {
        log_roll(log, plan->first_base_offset);
    } else if (active_segment(log)->size_bytes == 0 &&
               active_segment(log)->base_offset != plan->first_base_offset) {
        /* A follower starting past the empty active segment's base (the
         * leader's batches were compacted away): re-base it. */
        log_roll(log, plan->first_base_offset);
    }
    if (plan->transactional_count > 0 && !log->txns_known) {
        txn_rebuild(log, -1); /* the producer state before these batches */
    }
    struct segment *segment = active_segment(log);
    ks_assert(plan->first_base_offset >= segment->next_offset); /* R2 */
    int64_t position = segment->size_bytes;
    if (ks_disk_append(segment->log_file, bytes, byte_count) != KS_IO_OK) {
        /* Keep R4: drop whatever part of the write landed. */
        ks_disk_truncate(segment->log_file, position);
        return KS_LOG_IO_ERROR;
    }
    segment->dirty = true;
    size_t offset_in_bytes = 0;
    while (offset_in_bytes < byte_count) {
        struct header batch;
        if (offset_in_bytes == 0 && plan->first_header_ok) {
            batch = plan->first_header; /* R10 */
#if KS_DEBUG
            header_check(bytes, byte_count, &batch);
#endif
        } else {
            bool ok = peek_header(bytes + offset_in_bytes, byte_count - offset_in_bytes, &batch);
            ks_assert(ok);
        }
        segment_account_batch(log, segment, &batch, position + (int64_t)offset_in_bytes, true);
        if (epoch_assign_in_memory(log, batch.partition_leader_epoch, batch.base_offset)) {
            epoch_persist(log, SYNC_WAIT);
        }
        if ((batch.attributes & KS_ATTR_TRANSACTIONAL) != 0 && batch.producer_id >= 0) {
            /* UnifiedLog.append: the producer state, then the segment's
             * transaction index for an abort (LogSegment.updateTxnIndex). */
            int control_type = -1;
            if ((batch.attributes & KS_ATTR_CONTROL) != 0) {
                struct ks_batch_view view;
                bool parsed = ks_batch_parse_crc_checked(bytes + offset_in_bytes,
                                                         byte_count - offset_in_bytes, &view,
                                                         NULL) == KS_BATCH_OK;
                ks_assert(parsed);
                control_type = ks_batch_control_type(&view);
            }
            if (control_type < 0 || control_type == KS_CONTROL_ABORT ||
                control_type == KS_CONTROL_COMMIT) {
                txn_apply(log, batch.producer_id, batch.base_offset, control_type, 0, true);
            }
        }
        offset_in_bytes += (size_t)batch.batch_bytes;
    }
    log->hot.leo = segment->next_offset;
    log->unflushed_message_count += plan->record_count;
    if (log->unflushed_message_count >= log->config.flush_messages) {
        ks_log_flush(log);
    }
    log_check(log);
    return KS_LOG_OK;
}

static enum ks_log_result leader_append(struct ks_log *log, uint8_t *bytes, size_t byte_count,
                                        size_t crc_checked_bytes, const struct ks_batch_view *first,
                                        int32_t leader_epoch, ks_time_ns now_ns,
                                        int64_t *base_offset_out, int64_t *last_offset_out)
{
    (void)now_ns; /* segment.ms compares record timestamps, as Kafka does */
    struct append_plan plan;
    if (!validate_batches(log, bytes, byte_count, crc_checked_bytes, first, true, &plan)) {
        return KS_LOG_CORRUPT;
    }
    /* Assign offsets from the LEO and stamp the epoch; the CRC stays valid (B2). */
    int64_t next = log->hot.leo;
    size_t position = 0;
    while (position < byte_count) {
        struct header batch;
        if (position == 0) {
            ks_assert(plan.first_header_ok);
            batch = plan.first_header;
        } else {
            bool ok = peek_header(bytes + position, byte_count - position, &batch);
            ks_assert(ok);
        }
        ks_batch_set_offset_and_epoch(bytes + position, next, leader_epoch);
        if (position == 0) {
            /* R10: the kept header follows the bytes. */
            plan.first_header.base_offset = next;
            plan.first_header.last_offset = next + batch.last_offset - batch.base_offset;
            plan.first_header.partition_leader_epoch = leader_epoch;
        }
        next += batch.last_offset - batch.base_offset + 1;
        position += (size_t)batch.batch_bytes;
    }
    plan.first_base_offset = log->hot.leo;
    plan.last_offset = next - 1;
    enum ks_log_result result = append_batches(log, bytes, byte_count, &plan);
    if (result == KS_LOG_OK) {
        *base_offset_out = plan.first_base_offset;
        *last_offset_out = plan.last_offset;
    }
    return result;
}

enum ks_log_result ks_log_append_as_leader(struct ks_log *log, uint8_t *bytes, size_t byte_count,
                                           int32_t leader_epoch, ks_time_ns now_ns,
                                           int64_t *base_offset_out, int64_t *last_offset_out)
{
    return ks_log_append_as_leader_checked(log, bytes, byte_count, 0, leader_epoch, now_ns,
                                           base_offset_out, last_offset_out);
}

enum ks_log_result ks_log_append_as_leader_checked(struct ks_log *log, uint8_t *bytes,
                                                   size_t byte_count, size_t crc_checked_bytes,
                                                   int32_t leader_epoch, ks_time_ns now_ns,
                                                   int64_t *base_offset_out,
                                                   int64_t *last_offset_out)
{
    return leader_append(log, bytes, byte_count, crc_checked_bytes, NULL, leader_epoch, now_ns,
                         base_offset_out, last_offset_out);
}

enum ks_log_result ks_log_append_as_leader_parsed(
    struct ks_log *log, uint8_t *bytes, size_t byte_count, const struct ks_batch_view *first,
    int32_t leader_epoch, ks_time_ns now_ns, int64_t *base_offset_out, int64_t *last_offset_out)
{
    size_t first_bytes = (size_t)first->batch_length + KS_BATCH_LOG_OVERHEAD_BYTES;
    return leader_append(log, bytes, byte_count, first_bytes, first, leader_epoch, now_ns,
                         base_offset_out, last_offset_out);
}

enum ks_log_result ks_log_append_as_follower(struct ks_log *log, const uint8_t *bytes,
                                             size_t byte_count, ks_time_ns now_ns)
{
    return ks_log_append_as_follower_checked(log, bytes, byte_count, 0, now_ns);
}

static enum ks_log_result follower_append(struct ks_log *log, const uint8_t *bytes,
                                          size_t byte_count, size_t crc_checked_bytes,
                                          const struct ks_batch_view *first)
{
    struct append_plan plan;
    if (!validate_batches(log, bytes, byte_count, crc_checked_bytes, first, false, &plan)) {
        return KS_LOG_CORRUPT;
    }
    /* Offsets come from the leader. They must continue the log: a gap is
     * allowed only where the leader's cleaner removed whole batches. */
    if (plan.first_base_offset < log->hot.leo) {
        return KS_LOG_OFFSET_OUT_OF_RANGE;
    }
    return append_batches(log, bytes, byte_count, &plan);
}

enum ks_log_result ks_log_append_as_follower_checked(struct ks_log *log, const uint8_t *bytes,
                                                     size_t byte_count, size_t crc_checked_bytes,
                                                     ks_time_ns now_ns)
{
    (void)now_ns;
    return follower_append(log, bytes, byte_count, crc_checked_bytes, NULL);
}

enum ks_log_result ks_log_append_as_follower_parsed(struct ks_log *log, const uint8_t *bytes,
                                                    size_t byte_count,
                                                    const struct ks_batch_view *first,
                                                    ks_time_ns now_ns)
{
    (void)now_ns;
    size_t first_bytes = (size_t)first->batch_length + KS_BATCH_LOG_OVERHEAD_BYTES;
    return follower_append(log, bytes, byte_count, first_bytes, first);
}

/* ---- read ---------------------------------------------------------------------------------- */

/* Index of the segment with the largest base offset <= offset, or -1. */
static int segment_floor_index(const struct ks_log *log, int64_t offset)
{
    guint low = 0;
    guint high = log->segments->len;
    while (low < high) {
        guint middle = low + (high - low) / 2;
        if (segment_at(log, middle)->base_offset <= offset) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    return (int)low - 1;
}

/* Appends whole batches of one segment from `position` (where `first`, the
 * batch the lookup found, starts) to out, as ks_log_read describes. The
 * lookup read only batch headers; when the first batch alone reaches
 * max_bytes no further header is needed (KIP-74 would stop there anyway),
 * else the following headers are read in larger windows. The batches are
 * then copied in one read straight into out. Returns bytes added, or -1 on
 * an I/O error. */
static int64_t read_segment_from(struct reader *reader, struct segment *segment, int64_t position,
                                 const struct header *first, int64_t upto_offset, size_t max_bytes,
                                 GByteArray *out)
{
    if (first->last_offset >= upto_offset) {
        return 0;
    }
    /* Collect the extent of whole batches first, then copy them in one go. */
    int64_t end = position + first->batch_bytes;
    if ((size_t)first->batch_bytes < max_bytes) {
        size_t wanted = max_bytes - (size_t)first->batch_bytes + KS_BATCH_HEADER_BYTES;
        reader->window_bytes = MIN(wanted, (size_t)EXTENT_WINDOW_BYTES);
    }
    while ((size_t)(end - position) < max_bytes && end < segment->size_bytes) {
        size_t available = 0;
        struct header batch;
        const uint8_t *bytes = reader_get(reader, end, KS_BATCH_HEADER_BYTES, &available);
        if (bytes == NULL || !peek_header(bytes, available, &batch) ||
            end + batch.batch_bytes > segment->size_bytes) {
            break;
        }
        if (batch.last_offset >= upto_offset) {
            break;
        }
        int64_t taken = end - position;
        if (taken > 0 && (size_t)(taken + batch.batch_bytes) > max_bytes) {
            break; /* KIP-74: only the first batch may exceed max_bytes */
        }
        end += batch.batch_bytes;
    }
    int64_t count = end - position;
    if (count == 0) {
        return 0;
    }
    guint start = out->len;
    ks_byte_array_set_size(out, start + (guint)count);
    if (position >= reader->window_start && end <= reader->window_start + reader->window_count) {
        memcpy(out->data + start, reader->log->window->data + (position - reader->window_start),
               (size_t)count);
        return count;
    }
    size_t read_count = 0;
    if (ks_disk_read(segment->log_file, out->data + start, (size_t)count, position, &read_count) !=
            KS_IO_OK ||
        read_count != (size_t)count) {
        ks_byte_array_set_size(out, start);
        return -1;
    }
    return count;
}

/* segment_translate_with for ks_log_read. When the batch found is one of the
 * segment's recent batches, its header is in the page cache too, and the
 * read goes on to copy it (it ends below upto_offset), the header's own read
 * is skipped as well: the ring knows its last offset and size (its bytes are
 * as appended), and that cached read would only have moved the file to the
 * front of the cache order, which the copy of the batch right after it does
 * (P3 in sim/disk.c). Only last_offset and batch_bytes of *batch_out are
 * filled then, all read_segment_from uses. */
static int64_t segment_read_lookup(struct reader *reader, struct segment *segment, int64_t offset,
                                   int64_t upto_offset, struct header *batch_out)
{
    int found = -1;
    int64_t position =
        segment_recent_skip(segment, offset, index_floor_position(segment, offset), &found);
    if (found >= 0) {
        const struct recent_batch *recent = &segment->recent[found];
        uint32_t newest = (segment->recent_next + RECENT_BATCH_COUNT - 1) % RECENT_BATCH_COUNT;
        int64_t end = (uint32_t)found == newest
                          ? segment->recent_end
                          : segment->recent[((uint32_t)found + 1) % RECENT_BATCH_COUNT].position;
        if (recent->last_offset < upto_offset &&
            ks_disk_cached(segment->log_file, position, KS_BATCH_HEADER_BYTES)) {
            memset(batch_out, 0, sizeof(*batch_out));
            batch_out->last_offset = recent->last_offset;
            batch_out->batch_bytes = end - position;
#if KS_DEBUG
            /* The ring says what the header says. Reading it here changes
             * nothing the copy that follows does not (the same argument). */
            struct header real;
            int64_t got =
                read_into_window(reader->log, segment->log_file, position, KS_BATCH_HEADER_BYTES);
            ks_assert(got == KS_BATCH_HEADER_BYTES);
            ks_assert(peek_header(reader->log->window->data, KS_BATCH_HEADER_BYTES, &real));
            ks_assert(real.last_offset == batch_out->last_offset);
            ks_assert(real.batch_bytes == batch_out->batch_bytes);
#endif
            return position;
        }
    }
    return segment_scan_from(reader, segment, offset, position, batch_out);
}

/* One segment's part of ks_log_read: 1 when it appended the batches from
 * offset on (or found them beyond upto_offset), 0 when the segment holds
 * nothing at or after offset, -1 on an I/O error. */
static int read_segment(struct ks_log *log, struct segment *segment, int64_t offset,
                        int64_t upto_offset, size_t max_bytes, GByteArray *out)
{
    struct header batch;
    struct reader reader;
    reader_init(&reader, log, segment->log_file, segment->size_bytes, LOOKUP_WINDOW_BYTES);
    int64_t position = segment_read_lookup(&reader, segment, offset, upto_offset, &batch);
    if (position < 0) {
        return 0;
    }
    return read_segment_from(&reader, segment, position, &batch, upto_offset, max_bytes, out) < 0
               ? -1
               : 1;
}

enum ks_log_result ks_log_read(struct ks_log *log, int64_t offset, int64_t upto_offset,
                               size_t max_bytes, GByteArray *out)
{
    if (offset < log->hot.log_start_offset || offset > log->hot.leo) {
        return KS_LOG_OFFSET_OUT_OF_RANGE;
    }
    if (offset == log->hot.leo || offset >= upto_offset) {
        return KS_LOG_OK;
    }
    if (offset >= log->active->base_offset) {
        /* The tail, as nearly every fetch reads it: the active segment
         * (R11) is the floor and the last, with no search. */
        return read_segment(log, active_segment(log), offset, upto_offset, max_bytes, out) < 0
                   ? KS_LOG_IO_ERROR
                   : KS_LOG_OK;
    }
    int segment_index = segment_floor_index(log, offset);
    if (segment_index < 0) {
        segment_index = 0;
    }
    /* Kafka returns data from one segment per read; a segment with nothing
     * at or after the offset (its tail was compacted away) passes to the next. */
    for (guint i = (guint)segment_index; i < log->segments->len; i++) {
        int read = read_segment(log, segment_at(log, i), offset, upto_offset, max_bytes, out);
        if (read != 0) {
            return read < 0 ? KS_LOG_IO_ERROR : KS_LOG_OK;
        }
    }
    return KS_LOG_OK;
}

void ks_log_scan(struct ks_log *log, int64_t from, int64_t upto_offset, ks_log_batch_fn *visit,
                 void *context)
{
    int64_t offset = from;
    GByteArray *buffer = g_byte_array_new();
    while (offset < upto_offset) {
        ks_byte_array_set_size(buffer, 0);
        if (ks_log_read(log, offset, upto_offset, 1u << 20, buffer) != KS_LOG_OK ||
            buffer->len == 0) {
            break;
        }
        size_t position = 0;
        int64_t next = offset;
        bool more = true;
        while (more && position < buffer->len) {
            struct ks_batch_view batch;
            size_t batch_bytes = 0;
            if (ks_batch_parse(buffer->data + position, buffer->len - position, &batch,
                               &batch_bytes) != KS_BATCH_OK) {
                break;
            }
            more = visit(context, &batch);
            next = ks_batch_last_offset(&batch) + 1;
            position += batch_bytes;
        }
        if (!more || next <= offset) {
            break;
        }
        offset = next;
    }
    g_byte_array_unref(buffer);
}

int64_t ks_log_offset_for_timestamp(struct ks_log *log, int64_t timestamp_ms)
{
    for (guint i = 0; i < log->segments->len; i++) {
        struct segment *segment = segment_at(log, i);
        if (segment->max_timestamp < timestamp_ms) {
            continue;
        }
        int64_t floor_offset = time_index_floor_offset(segment, timestamp_ms);
        struct reader reader;
        reader_init(&reader, log, segment->log_file, segment->size_bytes, LOOKUP_WINDOW_BYTES);
        int64_t position = index_floor_position(segment, floor_offset);
        while (position < segment->size_bytes) {
            size_t available = 0;
            struct header batch;
            const uint8_t *bytes = reader_get(&reader, position, KS_BATCH_HEADER_BYTES, &available);
            if (bytes == NULL || !peek_header(bytes, available, &batch)) {
                break;
            }
            if (batch.max_timestamp >= timestamp_ms) {
                /* Kafka answers with the first record of the batch whose
                 * timestamp reaches the target (LogSegment.findOffsetByTimestamp). */
                int64_t found = batch.base_offset;
                bytes = reader_get(&reader, position, (size_t)batch.batch_bytes, &available);
                struct ks_batch_view view;
                if (bytes != NULL && ks_batch_parse(bytes, available, &view, NULL) == KS_BATCH_OK) {
                    struct ks_record_iter iter;
                    struct ks_record_view record;
                    ks_record_iter_init(&iter, &view);
                    while (ks_record_iter_next(&iter, &record, NULL)) {
                        if (record.timestamp >= timestamp_ms) {
                            found = record.offset;
                            break;
                        }
                    }
                    ks_record_iter_deinit(&iter);
                }
                return found > log->hot.log_start_offset ? found : log->hot.log_start_offset;
            }
            position += batch.batch_bytes;
        }
    }
    return log->hot.leo;
}

/* ---- truncation ------------------------------------------------------------------------------ */

static void log_reset_to_empty_segment(struct ks_log *log, int64_t offset)
{
    while (log->segments->len > 0) {
        struct segment *segment = segments_pop(log);
        segment_delete(log, segment);
    }
    struct segment *segment = segment_new(offset);
    segment_open_files(log, segment, KS_DISK_TRUNCATE);
    segments_push(log, segment);
    log->hot.leo = offset;
    log->hot.log_start_offset = offset;
    log->recovery_point = offset;
    log->unflushed_message_count = 0;
}

void ks_log_truncate_fully_and_start_at(struct ks_log *log, int64_t offset)
{
    ks_assert(offset >= 0);
    log_reset_to_empty_segment(log, offset);
    ks_array_set_size(log->txns, 0);
    log->txns_known = true; /* an empty log has no transactions */
    ks_array_set_size(log->epochs, 0);
    epochs_note(log);
    epoch_persist(log, SYNC_WAIT); /* clearAndFlush */
    log_check(log);
}

void ks_log_truncate_to(struct ks_log *log, int64_t offset)
{
    if (offset >= log->hot.leo) {
        return;
    }
    if (offset < segment_at(log, 0)->base_offset) {
        ks_log_truncate_fully_and_start_at(log, offset);
        return;
    }
    /* Segments starting above the point go whole (LocalLog.truncateTo). */
    while (log->segments->len > 1 && active_segment(log)->base_offset > offset) {
        struct segment *segment = segments_pop(log);
        segment_delete(log, segment);
    }
    struct segment *segment = active_segment(log);
    /* LogSegment.truncateTo cuts the transaction index too; the producer
     * state is reloaded (truncateAndReload) when next needed. */
    segment_txn_truncate(segment, offset);
    ks_array_set_size(log->txns, 0);
    log->txns_known = false;
    struct header batch;
    int64_t cut = segment_translate(log, segment, offset, &batch);
    if (cut >= 0) {
        ks_disk_truncate(segment->log_file, cut);
        segment->dirty = true;
        /* Rebuild the segment's state and indexes from what is left: the
         * same rule as appends, so the result is the incremental index. */
        struct scan_result result = segment_scan(log, segment, false, false);
        ks_assert(result.valid_bytes == cut);
        segment_write_indexes(log, segment);
    }
    log->hot.leo = segment->next_offset;
    if (log->recovery_point > log->hot.leo) {
        log->recovery_point = log->hot.leo;
    }
    if (log->hot.log_start_offset > log->hot.leo) {
        log->hot.log_start_offset = log->hot.leo;
    }
    if (epoch_truncate_from_end(log, log->hot.leo)) {
        epoch_persist(log, SYNC_BACKGROUND);
    }
    log_check(log);
}

/* ---- retention ------------------------------------------------------------------------------- */

/* Deletes the oldest segment (never the active one, R1). */
static void delete_oldest_segment(struct ks_log *log)
{
    ks_assert(log->segments->len > 1);
    struct segment *segment = g_ptr_array_steal_index(log->segments, 0); /* not the active one */
    segment_delete(log, segment);
    int64_t first_base = segment_at(log, 0)->base_offset;
    if (log->hot.log_start_offset < first_base) {
        log->hot.log_start_offset = first_base;
    }
    /* onLogStartOffsetIncremented drops completed transactions below the
     * new start; open ones stay, as Kafka's do (a hanging one keeps
     * blocking the LSO: KIP-890's motivation). */
    ks_log_on_stable_below(log, log->hot.log_start_offset);
}

int32_t ks_log_apply_retention(struct ks_log *log, ks_time_ns now_ns, int64_t hw)
{
    int32_t deleted = 0;
    int64_t now = now_ms(now_ns);
    int64_t total_bytes = ks_log_size_bytes(log);
    while (log->segments->len > 1) {
        const struct segment *segment = segment_at(log, 0);
        const struct segment *next = segment_at(log, 1);
        if (next->base_offset > hw) {
            break; /* only data below the high watermark may go */
        }
        bool below_start = next->base_offset <= log->hot.log_start_offset;
        bool too_old = false;
        bool too_big = false;
        if (log->config.cleanup_delete) {
            too_old =
                log->config.retention_ns >= 0 &&
                now - segment->max_timestamp > log->config.retention_ns / (int64_t)KS_NS_PER_MS;
            too_big = log->config.retention_bytes >= 0 &&
                      total_bytes - segment->size_bytes >= log->config.retention_bytes;
        }
        if (!below_start && !too_old && !too_big) {
            break;
        }
        total_bytes -= segment->size_bytes;
        delete_oldest_segment(log);
        deleted++;
    }
    if (deleted > 0 && epoch_truncate_from_start(log, log->hot.log_start_offset)) {
        epoch_persist(log, SYNC_BACKGROUND);
    }
    log_check(log);
    return deleted;
}

void ks_log_advance_start_offset(struct ks_log *log, int64_t offset)
{
    if (offset <= log->hot.log_start_offset) {
        return;
    }
    log->hot.log_start_offset = offset < log->hot.leo ? offset : log->hot.leo;
    while (log->segments->len > 1 && segment_at(log, 1)->base_offset <= log->hot.log_start_offset) {
        delete_oldest_segment(log);
    }
    if (epoch_truncate_from_start(log, log->hot.log_start_offset)) {
        epoch_persist(log, SYNC_BACKGROUND);
    }
    log_check(log);
}

/* ---- compaction -------------------------------------------------------------------------------- */

/* What the first pass of the cleaner learns: the last offset of each key and
 * the base offset of each producer's last batch (hash tables used only for
 * lookups, never iterated). */
struct offset_map {
    GHashTable *last_offset_by_key;     /* GBytes * -> int64_t *, owned */
    GHashTable *last_batch_by_producer; /* int64_t * -> int64_t *, owned */
};

static void offset_map_put_key(struct offset_map *map, const uint8_t *key, int32_t key_bytes,
                               int64_t offset)
{
    GBytes *bytes = g_bytes_new(key, (gsize)key_bytes);
    int64_t *value = g_new(int64_t, 1);
    *value = offset;
    g_hash_table_replace(map->last_offset_by_key, bytes, value);
}

static int64_t offset_map_get_key(const struct offset_map *map, const uint8_t *key,
                                  int32_t key_bytes)
{
    GBytes *bytes = g_bytes_new_static(key, (gsize)key_bytes);
    const int64_t *value = g_hash_table_lookup(map->last_offset_by_key, bytes);
    g_bytes_unref(bytes);
    return value != NULL ? *value : -1;
}

/* Calls fn for every CRC-valid batch of a segment, in order; stops at the
 * first invalid one (compaction leaves damaged data alone). */
typedef void batch_fn(const struct ks_batch_view *batch, const uint8_t *bytes, size_t batch_bytes,
                      void *context);

static bool for_each_batch(struct ks_log *log, struct segment *segment, batch_fn *fn, void *context)
{
    struct reader reader;
    reader_init(&reader, log, segment->log_file, segment->size_bytes, SCAN_WINDOW_BYTES);
    int64_t position = 0;
    while (position < segment->size_bytes) {
        size_t available = 0;
        struct header header;
        const uint8_t *bytes = reader_get(&reader, position, KS_BATCH_HEADER_BYTES, &available);
        if (bytes == NULL || !peek_header(bytes, available, &header)) {
            return false;
        }
        bytes = reader_get(&reader, position, (size_t)header.batch_bytes, &available);
        struct ks_batch_view batch;
        size_t batch_bytes = 0;
        if (bytes == NULL ||
            ks_batch_parse(bytes, available, &batch, &batch_bytes) != KS_BATCH_OK) {
            return false;
        }
        fn(&batch, bytes, batch_bytes, context);
        position += (int64_t)batch_bytes;
    }
    return true;
}

static void map_batch(const struct ks_batch_view *batch, const uint8_t *bytes, size_t batch_bytes,
                      void *context)
{
    (void)bytes;
    (void)batch_bytes;
    struct offset_map *map = context;
    if (batch->producer_id >= 0) {
        int64_t *producer = g_new(int64_t, 1);
        int64_t *base = g_new(int64_t, 1);
        *producer = batch->producer_id;
        *base = batch->base_offset;
        g_hash_table_replace(map->last_batch_by_producer, producer, base);
    }
    if ((batch->attributes & KS_ATTR_CONTROL) != 0) {
        return;
    }
    struct ks_record_iter iter;
    struct ks_record_view record;
    ks_record_iter_init(&iter, batch);
    while (ks_record_iter_next(&iter, &record, NULL)) {
        if (record.key != NULL) {
            offset_map_put_key(map, record.key, record.key_bytes, record.offset);
        }
    }
}

struct clean_context {
    const struct offset_map *map;
    int64_t now_ms;
    int64_t delete_retention_ms;
    GByteArray *out; /* the cleaned segment, not owned */
    int64_t removed_count;
};

/* Keeps the last record of each key (offsets unchanged), drops tombstones
 * older than delete.retention.ms (by their batch's largest timestamp: the
 * delete horizon of KIP-534 is not stamped), and keeps an emptied batch's
 * header only when it is its producer's last batch, so that producer
 * sequence state survives (kafka-reference 2.5). */
static void clean_batch(const struct ks_batch_view *batch, const uint8_t *bytes, size_t batch_bytes,
                        void *context)
{
    struct clean_context *clean = context;
    if ((batch->attributes & KS_ATTR_CONTROL) != 0) {
        ks_byte_array_append(clean->out, bytes, (guint)batch_bytes);
        return;
    }
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, batch->base_timestamp, batch->producer_id,
                          batch->producer_epoch, batch->base_sequence);
    builder.attributes = batch->attributes;
    struct ks_record_iter iter;
    struct ks_record_view record;
    int32_t kept = 0;
    int32_t seen = 0;
    ks_record_iter_init(&iter, batch);
    while (ks_record_iter_next(&iter, &record, NULL)) {
        seen++;
        bool keep = true;
        if (record.key != NULL) {
            keep = offset_map_get_key(clean->map, record.key, record.key_bytes) == record.offset;
            if (keep && record.value == NULL &&
                clean->now_ms - batch->max_timestamp > clean->delete_retention_ms) {
                keep = false;
            }
        }
        if (!keep) {
            continue;
        }
        kept++;
        ks_batch_builder_add_at(&builder, (int32_t)(record.offset - batch->base_offset),
                                record.timestamp, record.key, record.key_bytes, record.value,
                                record.value_bytes, record.headers, record.header_count);
    }
    clean->removed_count += seen - kept;
    if (kept == seen && seen == batch->record_count) {
        ks_byte_array_append(clean->out, bytes, (guint)batch_bytes);
    } else {
        bool last_of_producer = false;
        if (batch->producer_id >= 0) {
            const int64_t *base =
                g_hash_table_lookup(clean->map->last_batch_by_producer, &batch->producer_id);
            last_of_producer = base != NULL && *base == batch->base_offset;
        }
        if (kept > 0 || last_of_producer) {
            GByteArray *cleaned =
                ks_batch_builder_finish_at(&builder, batch->base_offset,
                                           batch->partition_leader_epoch, batch->last_offset_delta);
            ks_byte_array_append(clean->out, cleaned->data, cleaned->len);
            g_byte_array_unref(cleaned);
        }
    }
    ks_batch_builder_deinit(&builder);
}

/* Replaces a segment's `.log` with `bytes` through Kafka's rename protocol:
 * write `.log.cleaned` and fsync it; delete the indexes; rename to
 * `.log.swap`, then over `.log`; rebuild and fsync the indexes. A crash
 * before the .swap rename leaves the original (the .cleaned file is deleted
 * on open); after it, open finishes the rename; missing indexes are rebuilt. */
static void segment_replace(struct ks_log *log, struct segment *segment, const GByteArray *bytes)
{
    char *log_path = segment_path(log, segment->base_offset, ".log");
    char *cleaned_path = segment_path(log, segment->base_offset, ".log.cleaned");
    char *swap_path = segment_path(log, segment->base_offset, ".log.swap");
    char *index_path = segment_path(log, segment->base_offset, ".index");
    char *time_path = segment_path(log, segment->base_offset, ".timeindex");
    enum ks_io_result result = KS_IO_OK;
    ks_file *file = ks_disk_open(log->world, log->node, cleaned_path,
                                 KS_DISK_CREATE | KS_DISK_TRUNCATE, &result);
    ks_assert(file != NULL);
    /* The cleaner thread's writes: no request waits for them. */
    bool written = ks_disk_append(file, bytes->data, bytes->len) == KS_IO_OK &&
                   ks_disk_fsync_background(file) == KS_IO_OK;
    ks_disk_close(file);
    if (written) {
        bool has_txn_index = segment->txn_file != NULL;
        segment_close_files(segment);
        ks_disk_delete(log->world, log->node, index_path);
        ks_disk_delete(log->world, log->node, time_path);
        ks_disk_rename(log->world, log->node, cleaned_path, swap_path);
        ks_disk_rename(log->world, log->node, swap_path, log_path);
        segment_open_files(log, segment, 0);
        if (has_txn_index) {
            /* The cleaner keeps the markers and their offsets, so the
             * aborted-transaction entries stay valid (docs/model.md). */
            segment_txn_open(log, segment, 0);
        }
        struct scan_result scan = segment_scan(log, segment, false, false);
        ks_assert(scan.valid_bytes == (int64_t)bytes->len);
        segment_write_indexes(log, segment);
        segment_fsync(segment, SYNC_BACKGROUND);
    } else {
        ks_disk_delete(log->world, log->node, cleaned_path);
    }
    g_free(log_path);
    g_free(cleaned_path);
    g_free(swap_path);
    g_free(index_path);
    g_free(time_path);
}

int64_t ks_log_compact(struct ks_log *log, ks_time_ns now_ns, int64_t hw)
{
    if (!log->config.cleanup_compact) {
        return 0;
    }
    int64_t now = now_ms(now_ns);
    int64_t lag_ms = log->config.min_compaction_lag_ns / (int64_t)KS_NS_PER_MS;
    /* Cleanable: closed segments wholly below the HW whose newest record is
     * older than min.compaction.lag.ms. */
    guint cleanable = 0;
    while (cleanable + 1 < log->segments->len &&
           segment_at(log, cleanable + 1)->base_offset <= hw &&
           now - segment_at(log, cleanable)->max_timestamp >= lag_ms) {
        cleanable++;
    }
    if (cleanable == 0) {
        return 0;
    }
    struct offset_map map = {
        g_hash_table_new_full(g_bytes_hash, g_bytes_equal, (GDestroyNotify)g_bytes_unref, g_free),
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free),
    };
    guint mapped = 0;
    while (mapped < cleanable && for_each_batch(log, segment_at(log, mapped), map_batch, &map)) {
        mapped++;
    }
    int64_t removed = 0;
    GByteArray *out = g_byte_array_new();
    for (guint i = 0; i < mapped; i++) {
        struct segment *segment = segment_at(log, i);
        struct clean_context clean = { &map, now,
                                       log->config.delete_retention_ns / (int64_t)KS_NS_PER_MS, out,
                                       0 };
        ks_byte_array_set_size(out, 0);
        if (!for_each_batch(log, segment, clean_batch, &clean)) {
            continue;
        }
        if ((int64_t)out->len == segment->size_bytes && clean.removed_count == 0) {
            continue;
        }
        segment_replace(log, segment, out);
        removed += clean.removed_count;
    }
    g_byte_array_unref(out);
    g_hash_table_destroy(map.last_offset_by_key);
    g_hash_table_destroy(map.last_batch_by_producer);
    log_check(log);
    return removed;
}
