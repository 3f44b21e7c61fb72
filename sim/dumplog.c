/*
** sim/dumplog.c: `ksim dump-log PATH [--print-data-log] [--deep-iteration]
** [--max-message-size BYTES]`, printing segment files the way Kafka's
** DumpLogSegments does (kafka-reference 8.3), and `ksim dump-log --db DB
** [--run ID] [PATH]`, which finds the run's folder from runs.run_dir:
**
**   .log        "Dumping <path>", "Log starting offset: <base>", then one line
**               per batch (baseOffset .. isvalid), and with --deep-iteration or
**               --print-data-log one "| offset: .." line per record
**               (key and payload only with --print-data-log)
**   .index      "offset: <absolute> position: <bytes>" per entry
**   .timeindex  "timestamp: <ms> offset: <absolute>" per entry
**   .txnindex   "version: 0 producerId: <id> firstOffset: <o> lastOffset: <o>
**               lastStableOffset: <o>" per aborted transaction (34-byte
**               entries; DumpLogSegments.dumpTxnIndex)
**   folder      every segment of the partition, base offset order, each as
**               .log, .index, .timeindex, .txnindex
**
** Bounded memory (R1): files are streamed, never read whole. A .log is read
** one batch at a time: its 12-byte offset/length prefix first, then the
** batch, which may be at most --max-message-size bytes (Kafka's
** DumpLogSegments option, default 5 MiB); a longer batch counts as damage.
** Index files are read in fixed chunks, and their scan stops at the first
** entry after the first whose offset is the segment's base offset, as
** DumpLogSegments.dumpIndex/dumpTimeIndex do ("since it is a sparse file, in
** the event of a crash there may be many zero entries"). Only regular files
** are read: a device, FIFO or socket (a symlink to /dev/zero) is refused.
**
** Damage: the scan stops at the first batch that is torn, too short, too
** long, of another magic or with a bad CRC (what came before is printed),
** prints Kafka's "Found N invalid bytes at the end of <file>" and a ksim
** line on stderr naming the byte position and the reason, and the exit code
** is 1. A missing, unreadable or non-regular path is exit 2. Nothing is ever
** written.
*/
#include "dumplog.h"

#include "../core/batch.h"
#include "commands.h"
#include "recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t get_u32(const uint8_t *bytes)
{
    return (uint32_t)bytes[0] << 24 | (uint32_t)bytes[1] << 16 | (uint32_t)bytes[2] << 8 |
           (uint32_t)bytes[3];
}

static const char *codec_name(int16_t attributes)
{
    switch (attributes & KS_ATTR_CODEC_MASK) {
    case 0: return "none";
    case 1: return "gzip";
    case 2: return "snappy";
    case 3: return "lz4";
    case 4: return "zstd";
    }
    return "unknown";
}

static const char *time_label(int16_t attributes)
{
    return (attributes & KS_ATTR_TIMESTAMP_LOG_APPEND) != 0 ? "LogAppendTime" : "CreateTime";
}

/* Prints bytes as Kafka prints a key or payload: as UTF-8 text (invalid
 * sequences replaced). */
static void print_text(FILE *out, const uint8_t *bytes, int32_t byte_count)
{
    char *text = g_utf8_make_valid((const char *)bytes, byte_count);
    fputs(text, out);
    g_free(text);
}

static int32_t last_sequence(const struct ks_batch_view *batch)
{
    if (batch->base_sequence < 0) {
        return -1;
    }
    int64_t sequence = (int64_t)batch->base_sequence + batch->last_offset_delta;
    return (int32_t)(sequence > INT32_MAX ? sequence - INT32_MAX - 1 : sequence);
}

static void print_batch(const struct ks_batch_view *batch, size_t position, size_t batch_bytes,
                        FILE *out)
{
    fprintf(out,
            "baseOffset: %" PRId64 " lastOffset: %" PRId64 " count: %" PRId32
            " baseSequence: %" PRId32 " lastSequence: %" PRId32 " producerId: %" PRId64
            " producerEpoch: %d partitionLeaderEpoch: %" PRId32
            " isTransactional: %s isControl: %s deleteHorizonMs: ",
            batch->base_offset, ks_batch_last_offset(batch), batch->record_count,
            batch->base_sequence, last_sequence(batch), batch->producer_id,
            (int)batch->producer_epoch, batch->partition_leader_epoch,
            (batch->attributes & KS_ATTR_TRANSACTIONAL) != 0 ? "true" : "false",
            (batch->attributes & KS_ATTR_CONTROL) != 0 ? "true" : "false");
    if ((batch->attributes & KS_ATTR_DELETE_HORIZON) != 0) {
        fprintf(out, "OptionalLong[%" PRId64 "]", batch->base_timestamp);
    } else {
        fputs("OptionalLong.empty", out);
    }
    fprintf(out,
            " position: %zu %s: %" PRId64 " size: %zu magic: %d compresscodec: %s crc: %" PRIu32
            " isvalid: true\n",
            position, time_label(batch->attributes), batch->max_timestamp, batch_bytes,
            (int)batch->magic, codec_name(batch->attributes), batch->crc);
}

static void print_record(const struct ks_batch_view *batch, const struct ks_record_view *record,
                         unsigned flags, FILE *out)
{
    fprintf(out,
            "| offset: %" PRId64 " %s: %" PRId64 " keySize: %" PRId32 " valueSize: %" PRId32
            " sequence: %" PRId32 " headerKeys: [",
            record->offset, time_label(batch->attributes), record->timestamp, record->key_bytes,
            record->value_bytes, record->sequence);
    for (int32_t i = 0; i < record->header_count; i++) {
        if (i > 0) {
            fputc(',', out);
        }
        print_text(out, record->headers[i].key, record->headers[i].key_bytes);
    }
    fputc(']', out);
    if ((batch->attributes & KS_ATTR_CONTROL) != 0 && record->key_bytes >= 4) {
        /* Control record: key = version int16, type int16 (0 abort, 1 commit);
         * value = version int16, coordinatorEpoch int32. */
        int type = record->key[2] << 8 | record->key[3];
        int32_t coordinator_epoch =
            record->value_bytes >= 6 ? (int32_t)get_u32(record->value + 2) : -1;
        fprintf(out, " endTxnMarker: %s coordinatorEpoch: %" PRId32,
                type == 1   ? "COMMIT"
                : type == 0 ? "ABORT"
                            : "UNKNOWN",
                coordinator_epoch);
    } else if ((flags & KS_DUMPLOG_PRINT_DATA) != 0) {
        if (record->key != NULL) {
            fputs(" key: ", out);
            print_text(out, record->key, record->key_bytes);
        }
        if (record->value != NULL) {
            fputs(" payload: ", out);
            print_text(out, record->value, record->value_bytes);
        }
    }
    fputc('\n', out);
}

static void report_invalid(const char *name, size_t position, size_t byte_count, const char *reason,
                           FILE *out, FILE *err)
{
    fprintf(out, "Found %zu invalid bytes at the end of %s\n", byte_count - position, name);
    fprintf(err, "ksim: %s: invalid batch at position %zu: %s\n", name, position, reason);
}

/* Where a .log's bytes come from: memory (ks_dumplog_log_bytes) or a file
 * descriptor read a batch at a time (R1). */
struct source {
    const uint8_t *memory; /* not owned; NULL for a file */
    int fd;
    size_t byte_count; /* the file's size */
    uint8_t *buffer;   /* owned, for a file: the batch being looked at */
    size_t buffer_bytes;
};

/* Makes bytes [position, position + count) available (count already capped
 * at the end); NULL with errno set on a read error. Borrowed until the next
 * call. */
static const uint8_t *source_bytes(struct source *source, size_t position, size_t count)
{
    if (source->memory != NULL) {
        return source->memory + position;
    }
    if (count > source->buffer_bytes) {
        source->buffer = g_realloc(source->buffer, count);
        source->buffer_bytes = count;
    }
    size_t done = 0;
    while (done < count) {
        ssize_t n =
            pread(source->fd, source->buffer + done, count - done, (off_t)(position + done));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0) {
                errno = EIO; /* the file shrank while being read */
            }
            return NULL;
        }
        done += (size_t)n;
    }
    return source->buffer;
}

static uint32_t batch_bytes_claimed(const uint8_t *prefix)
{
    int32_t length = (int32_t)get_u32(prefix + 8);
    return length < 0 ? UINT32_MAX : (uint32_t)length + 12u;
}

static int dump_log_source(const char *name, int64_t base_offset, struct source *source,
                           unsigned flags, size_t batch_bytes_max, FILE *out, FILE *err)
{
    fprintf(out, "Dumping %s\n", name);
    fprintf(out, "Log starting offset: %" PRId64 "\n", base_offset);
    size_t byte_count = source->byte_count;
    size_t position = 0;
    int64_t next_offset = base_offset;
    while (position < byte_count) {
        size_t left = byte_count - position;
        /* The offset and length fields first, so that the batch is read only
         * when it is not too long to hold (R1). */
        size_t want = left < KS_BATCH_HEADER_BYTES ? left : KS_BATCH_HEADER_BYTES;
        const uint8_t *bytes = source_bytes(source, position, want);
        if (bytes != NULL && want >= 12) {
            size_t claimed = batch_bytes_claimed(bytes);
            if (claimed > batch_bytes_max && claimed != UINT32_MAX) {
                char reason[96];
                g_snprintf(reason, sizeof reason,
                           "a batch of %zu bytes, over --max-message-size %zu", claimed,
                           batch_bytes_max);
                report_invalid(name, position, byte_count, reason, out, err);
                return 1;
            }
            if (claimed > want && claimed != UINT32_MAX) {
                want = claimed < left ? claimed : left;
                bytes = source_bytes(source, position, want);
            }
        }
        if (bytes == NULL) {
            fprintf(err, "ksim: %s: read failed at position %zu: %s\n", name, position,
                    g_strerror(errno));
            return 2;
        }
        struct ks_batch_view batch;
        size_t batch_bytes = 0;
        enum ks_batch_status status = ks_batch_parse(bytes, want, &batch, &batch_bytes);
        if (status != KS_BATCH_OK) {
            report_invalid(name, position, byte_count, ks_batch_status_name(status), out, err);
            return 1;
        }
        if (batch.base_offset < next_offset || batch.last_offset_delta < 0) {
            report_invalid(name, position, byte_count, "offsets out of order", out, err);
            return 1;
        }
        print_batch(&batch, position, batch_bytes, out);
        if ((flags & (KS_DUMPLOG_DEEP | KS_DUMPLOG_PRINT_DATA)) != 0) {
            struct ks_record_iter iter;
            struct ks_record_view record;
            bool malformed = false;
            ks_record_iter_init(&iter, &batch);
            /* A compressed batch is decompressed by the iterator (deep
             * iteration, as kafka-dump-log does with --deep-iteration). */
            while (ks_record_iter_next(&iter, &record, &malformed)) {
                print_record(&batch, &record, flags, out);
            }
            if (malformed && iter.decompress_result != KS_DECOMPRESS_OK) {
                char *reason = g_strdup_printf("%s records do not decompress (%s)",
                                               ks_codec_name(batch.attributes & KS_ATTR_CODEC_MASK),
                                               ks_decompress_result_name(iter.decompress_result));
                report_invalid(name, position, byte_count, reason, out, err);
                g_free(reason);
                return 1;
            }
            if (malformed) {
                report_invalid(name, position, byte_count, "malformed record", out, err);
                return 1;
            }
        }
        next_offset = ks_batch_last_offset(&batch) + 1;
        position += batch_bytes;
    }
    return 0;
}

int ks_dumplog_log_bytes(const char *name, int64_t base_offset, const uint8_t *bytes,
                         size_t byte_count, unsigned flags, FILE *out, FILE *err)
{
    static const uint8_t empty[1];
    struct source source = { .memory = bytes != NULL ? bytes : empty,
                             .fd = -1,
                             .byte_count = byte_count };
    return dump_log_source(name, base_offset, &source, flags, SIZE_MAX, out, err);
}

/* Base offset from a file name "<20 digits>.<suffix>"; false otherwise. */
static bool base_from_name(const char *path, int64_t *base_out)
{
    char *name = g_path_get_basename(path);
    bool ok = strlen(name) > 21 && name[20] == '.';
    int64_t base = 0;
    for (int i = 0; ok && i < 20; i++) {
        ok = name[i] >= '0' && name[i] <= '9' && base <= (INT64_MAX - 9) / 10;
        base = base * 10 + (name[i] - '0');
    }
    g_free(name);
    if (ok) {
        *base_out = base;
    }
    return ok;
}

#define INDEX_CHUNK_BYTES (64 * 1024) /* a multiple of both entry sizes (8, 12) */

static int dump_index(const char *path, int64_t base, int fd, size_t byte_count, bool time_index,
                      FILE *out, FILE *err)
{
    size_t entry_bytes = time_index ? 12 : 8;
    fprintf(out, "Dumping %s\n", path);
    uint8_t *chunk = g_malloc(INDEX_CHUNK_BYTES);
    size_t whole_bytes = byte_count - byte_count % entry_bytes;
    size_t entry_index = 0;
    int code = 0;
    for (size_t at = 0; at < whole_bytes && code == 0;) {
        size_t count = MIN((size_t)INDEX_CHUNK_BYTES, whole_bytes - at);
        ssize_t n = pread(fd, chunk, count, (off_t)at);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0 || (size_t)n % entry_bytes != 0) {
            fprintf(err, "ksim: %s: read failed at position %zu: %s\n", path, at,
                    n < 0 ? g_strerror(errno) : "short read");
            code = 2;
            break;
        }
        for (size_t position = 0; position < (size_t)n; position += entry_bytes, entry_index++) {
            const uint8_t *entry = chunk + position;
            int32_t relative = (int32_t)get_u32(entry + (time_index ? 8 : 0));
            /* DumpLogSegments.dumpIndex: a sparse (preallocated) index ends at
             * the first zero entry after the first one. */
            if (relative == 0 && entry_index > 0) {
                g_free(chunk);
                return 0;
            }
            if (time_index) {
                int64_t timestamp = (int64_t)((uint64_t)get_u32(entry) << 32 | get_u32(entry + 4));
                fprintf(out, "timestamp: %" PRId64 " offset: %" PRId64 "\n", timestamp,
                        base + relative);
            } else {
                int32_t file_position = (int32_t)get_u32(entry + 4);
                fprintf(out, "offset: %" PRId64 " position: %" PRId32 "\n", base + relative,
                        file_position);
            }
        }
        at += (size_t)n;
    }
    g_free(chunk);
    if (code == 0 && byte_count % entry_bytes != 0) {
        fprintf(out, "Found %zu invalid bytes at the end of %s\n", byte_count - whole_bytes, path);
        fprintf(err, "ksim: %s: torn index entry at position %zu\n", path, whole_bytes);
        code = 1;
    }
    return code;
}

#define TXN_ENTRY_BYTES 34
#define TXN_CHUNK_BYTES (TXN_ENTRY_BYTES * 1024)

static int64_t get_u64_be(const uint8_t *bytes)
{
    return (int64_t)((uint64_t)get_u32(bytes) << 32 | get_u32(bytes + 4));
}

/* The aborted transactions of a `.txnindex` (core/log.c has its layout). */
static int dump_txn_index(const char *path, int fd, size_t byte_count, FILE *out, FILE *err)
{
    fprintf(out, "Dumping %s\n", path);
    uint8_t *chunk = g_malloc(TXN_CHUNK_BYTES);
    size_t whole_bytes = byte_count - byte_count % TXN_ENTRY_BYTES;
    int code = 0;
    for (size_t at = 0; at < whole_bytes;) {
        size_t count = MIN((size_t)TXN_CHUNK_BYTES, whole_bytes - at);
        ssize_t n = pread(fd, chunk, count, (off_t)at);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0 || (size_t)n % TXN_ENTRY_BYTES != 0) {
            fprintf(err, "ksim: %s: read failed at position %zu: %s\n", path, at,
                    n < 0 ? g_strerror(errno) : "short read");
            code = 2;
            break;
        }
        for (size_t position = 0; position < (size_t)n; position += TXN_ENTRY_BYTES) {
            const uint8_t *entry = chunk + position;
            fprintf(out,
                    "version: %d producerId: %" PRId64 " firstOffset: %" PRId64
                    " lastOffset: %" PRId64 " lastStableOffset: %" PRId64 "\n",
                    (int)(int16_t)(entry[0] << 8 | entry[1]), get_u64_be(entry + 2),
                    get_u64_be(entry + 10), get_u64_be(entry + 18), get_u64_be(entry + 26));
        }
        at += (size_t)n;
    }
    g_free(chunk);
    if (code == 0 && byte_count % TXN_ENTRY_BYTES != 0) {
        fprintf(out, "Found %zu invalid bytes at the end of %s\n", byte_count - whole_bytes, path);
        fprintf(err, "ksim: %s: torn index entry at position %zu\n", path, whole_bytes);
        code = 1;
    }
    return code;
}

/* Opens path for reading if it is a regular file (R1); else prints why and
 * returns -1. O_NONBLOCK keeps a FIFO from blocking the open. */
static int open_regular(const char *path, size_t *size_out, FILE *err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        fprintf(err, "ksim: %s: %s\n", path, g_strerror(errno));
        return -1;
    }
    struct stat info;
    if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        fprintf(err,
                "ksim: %s: not a regular file (a device, FIFO or socket); dump-log reads "
                "segment files\n",
                path);
        close(fd);
        return -1;
    }
    *size_out = (size_t)info.st_size;
    return fd;
}

static int dump_file(const char *path, unsigned flags, size_t batch_bytes_max, FILE *out, FILE *err)
{
    bool is_log = g_str_has_suffix(path, ".log");
    bool is_index = g_str_has_suffix(path, ".index");
    bool is_time = g_str_has_suffix(path, ".timeindex");
    bool is_txn = g_str_has_suffix(path, ".txnindex");
    if (!is_log && !is_index && !is_time && !is_txn) {
        fprintf(err, "ksim: %s: not a segment file (.log, .index, .timeindex or .txnindex)\n",
                path);
        return 2;
    }
    int64_t base = 0;
    if (!base_from_name(path, &base) && !is_log) {
        fprintf(err, "ksim: %s: an index file name must be a 20-digit base offset\n", path);
        return 2;
    }
    size_t byte_count = 0;
    int fd = open_regular(path, &byte_count, err);
    if (fd < 0) {
        return 2;
    }
    int code;
    if (is_log) {
        struct source source = { .fd = fd, .byte_count = byte_count };
        code = dump_log_source(path, base, &source, flags, batch_bytes_max, out, err);
        g_free(source.buffer);
    } else if (is_txn) {
        code = dump_txn_index(path, fd, byte_count, out, err);
    } else {
        code = dump_index(path, base, fd, byte_count, is_time, out, err);
    }
    close(fd);
    return code;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int dump_folder(const char *path, unsigned flags, size_t batch_bytes_max, FILE *out,
                       FILE *err)
{
    GError *error = NULL;
    GDir *dir = g_dir_open(path, 0, &error);
    if (dir == NULL) {
        fprintf(err, "ksim: %s\n", error->message);
        g_error_free(error);
        return 2;
    }
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    const char *name;
    while ((name = g_dir_read_name(dir)) != NULL) {
        int64_t base = 0;
        if (g_str_has_suffix(name, ".log") && base_from_name(name, &base)) {
            g_ptr_array_add(names, g_strndup(name, 20));
        }
    }
    g_dir_close(dir);
    if (names->len > 1) { /* pdata is NULL while the array is empty */
        qsort(names->pdata, names->len, sizeof(char *), compare_names);
    }
    int code = 0;
    const char *suffixes[4] = { ".log", ".index", ".timeindex", ".txnindex" };
    for (guint i = 0; i < names->len; i++) {
        for (int s = 0; s < 4; s++) {
            char *file = g_strdup_printf("%s/%s%s", path, (char *)names->pdata[i], suffixes[s]);
            if (s == 0 || g_file_test(file, G_FILE_TEST_EXISTS)) {
                int file_code = dump_file(file, flags, batch_bytes_max, out, err);
                code = file_code > code ? file_code : code;
            }
            g_free(file);
        }
    }
    if (names->len == 0) {
        fprintf(err, "ksim: %s: no segment files\n", path);
        code = 2;
    }
    g_ptr_array_free(names, TRUE);
    return code;
}

static int dump_path(const char *path, unsigned flags, size_t batch_bytes_max, FILE *out, FILE *err)
{
    if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
        return dump_folder(path, flags, batch_bytes_max, out, err);
    }
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        fprintf(err, "ksim: %s: no such file\n", path);
        return 2;
    }
    return dump_file(path, flags, batch_bytes_max, out, err);
}

int ks_dumplog_path(const char *path, unsigned flags, FILE *out, FILE *err)
{
    return dump_path(path, flags, KS_DUMPLOG_BATCH_BYTES_MAX, out, err);
}

/* ---- the run folder from the database ---------------------------------------------- */

/* The folder of run run_id (the latest when 0) from runs.run_dir; NULL after
 * printing why (exit 2). Owned: g_free. */
static char *run_folder(const char *db_path, int64_t run_id)
{
    GError *error = NULL;
    struct ks_recorder *recorder = ks_recorder_open_readonly(db_path, &error);
    if (recorder == NULL) {
        fprintf(stderr, "%s\n", error->message);
        g_error_free(error);
        return NULL;
    }
    char *folder = NULL;
    int64_t found_id = 0;
    if (ks_recorder_run_dir(recorder, run_id, &found_id, &folder, &error) && folder == NULL) {
        g_set_error(&error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN,
                    "%s:1: run %" PRId64 " kept no run folder (ksim check, sweep and explore "
                    "remove theirs; an earlier ksim recorded none)",
                    db_path, found_id);
    }
    if (folder != NULL && !g_file_test(folder, G_FILE_TEST_IS_DIR)) {
        g_set_error(&error, KS_RECORDER_ERROR, KS_RECORDER_ERROR_OPEN,
                    "%s:1: run %" PRId64 "'s folder %s is gone (a later run of the same "
                    "settings replaces it; ksim run again to remake it)",
                    db_path, found_id, folder);
        g_clear_pointer(&folder, g_free);
    }
    if (error != NULL) {
        fprintf(stderr, "%s\n", error->message);
        g_error_free(error);
    }
    ks_recorder_close(recorder);
    return folder;
}

/* Lists the partition folders of a run folder, "broker-N/TOPIC-P", one a line. */
static int list_partitions(const char *folder, FILE *out)
{
    fprintf(out, "%s\n", folder);
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    GDir *brokers = g_dir_open(folder, 0, NULL);
    const char *broker;
    while (brokers != NULL && (broker = g_dir_read_name(brokers)) != NULL) {
        g_autofree char *broker_path = g_build_filename(folder, broker, NULL);
        GDir *parts = g_str_has_prefix(broker, "broker-") ? g_dir_open(broker_path, 0, NULL) : NULL;
        const char *part;
        while (parts != NULL && (part = g_dir_read_name(parts)) != NULL) {
            g_autofree char *part_path = g_build_filename(broker_path, part, NULL);
            if (g_file_test(part_path, G_FILE_TEST_IS_DIR)) {
                g_ptr_array_add(names, g_strdup_printf("%s/%s", broker, part));
            }
        }
        if (parts != NULL) {
            g_dir_close(parts);
        }
    }
    if (brokers != NULL) {
        g_dir_close(brokers);
    }
    if (names->len > 1) {
        qsort(names->pdata, names->len, sizeof(char *), compare_names);
    }
    for (guint i = 0; i < names->len; i++) {
        fprintf(out, "  %s\n", (const char *)names->pdata[i]);
    }
    g_ptr_array_free(names, TRUE);
    return 0;
}

/* ---- the command -------------------------------------------------------------------- */

/* The usage on out; returns code (0 for --help, 2 for a bad command line). */
static int usage(FILE *out, int code)
{
    fprintf(out,
            "usage: ksim dump-log PATH [--print-data-log] [--deep-iteration]\n"
            "                     [--max-message-size BYTES]\n"
            "       ksim dump-log --db DB [--run ID] [PATH] [--print-data-log] ...\n"
            "  PATH: a .log, .index, .timeindex or .txnindex file, or a partition folder.\n"
            "  With --db, PATH is inside the folder of run ID (default: the latest run),\n"
            "  as runs.run_dir records it, e.g. broker-1/orders-0; without PATH, that\n"
            "  folder's partition folders are listed.\n"
            "  --max-message-size: the longest batch read (default 5242880, as Kafka's);\n"
            "  a longer one counts as damage. Exit 0: valid; 1: damage found; 2: bad input.\n");
    return code;
}

int ks_dumplog_main(int argc, char **argv)
{
    const char *path = NULL;
    const char *db_path = NULL;
    int64_t run_id = 0;
    size_t batch_bytes_max = KS_DUMPLOG_BATCH_BYTES_MAX;
    unsigned flags = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool has_value = i + 1 < argc;
        guint64 number = 0;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            return usage(stdout, 0);
        } else if (strcmp(arg, "--print-data-log") == 0) {
            flags |= KS_DUMPLOG_PRINT_DATA;
        } else if (strcmp(arg, "--deep-iteration") == 0) {
            flags |= KS_DUMPLOG_DEEP;
        } else if (strcmp(arg, "--db") == 0 && has_value) {
            db_path = argv[++i];
        } else if (strcmp(arg, "--run") == 0 && has_value) {
            if (!g_ascii_string_to_unsigned(argv[++i], 10, 1, G_MAXINT64, &number, NULL)) {
                fprintf(stderr, "ksim dump-log: --run %s: not a run id\n", argv[i]);
                return 2;
            }
            run_id = (int64_t)number;
        } else if (strcmp(arg, "--max-message-size") == 0 && has_value) {
            if (!g_ascii_string_to_unsigned(argv[++i], 10, 1, INT32_MAX, &number, NULL)) {
                fprintf(stderr, "ksim dump-log: --max-message-size %s: expected 1 to %d bytes\n",
                        argv[i], INT32_MAX);
                return 2;
            }
            batch_bytes_max = (size_t)number;
        } else if (strcmp(arg, "--files") == 0 && has_value && path == NULL) {
            path = argv[++i]; /* Kafka's spelling, accepted too */
        } else if (arg[0] != '-' && path == NULL) {
            path = arg;
        } else {
            fprintf(stderr, "ksim dump-log: %s: unknown option, missing value or second PATH\n",
                    arg);
            return usage(stderr, 2);
        }
    }
    if ((path == NULL && db_path == NULL) || (run_id != 0 && db_path == NULL)) {
        return usage(stderr, 2);
    }
    g_autofree char *folder = db_path != NULL ? run_folder(db_path, run_id) : NULL;
    if (db_path != NULL && folder == NULL) {
        return 2;
    }
    int code;
    if (folder != NULL && path == NULL) {
        code = list_partitions(folder, stdout);
    } else {
        g_autofree char *full =
            folder != NULL ? g_build_filename(folder, path, NULL) : g_strdup(path);
        code = dump_path(full, flags, batch_bytes_max, stdout, stderr);
    }
    fflush(stdout);
    return code;
}
