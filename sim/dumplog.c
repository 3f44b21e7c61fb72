/*
** sim/dumplog.c: `ksim dump-log PATH [--print-data-log] [--deep-iteration]`,
** printing segment files the way Kafka's DumpLogSegments does
** (kafka-reference 8.3):
**
**   .log        "Dumping <path>", "Log starting offset: <base>", then one line
**               per batch (baseOffset .. isvalid), and with --deep-iteration or
**               --print-data-log one "| offset: .." line per record
**               (key and payload only with --print-data-log)
**   .index      "offset: <absolute> position: <bytes>" per entry
**   .timeindex  "timestamp: <ms> offset: <absolute>" per entry
**   folder      every segment of the partition, base offset order, each as
**               .log, .index, .timeindex
**
** Damage: the scan stops at the first batch that is torn, too short, of
** another magic or with a bad CRC (what came before is printed), prints
** Kafka's "Found N invalid bytes at the end of <file>" and a ksim line on
** stderr naming the byte position and the reason, and the exit code is 1.
** A missing or unreadable path is exit 2. Files are read with GLib/stdio
** directly (the run is over); nothing is ever written.
*/
#include "dumplog.h"

#include "../core/batch.h"
#include "commands.h"

#include <glib.h>
#include <inttypes.h>
#include <string.h>

static uint32_t get_u32(const uint8_t *bytes)
{
    return (uint32_t)bytes[0] << 24 | (uint32_t)bytes[1] << 16 | (uint32_t)bytes[2] << 8 |
           (uint32_t)bytes[3];
}

static const char *codec_name(int16_t attributes)
{
    switch (attributes & KS_ATTR_CODEC_MASK) {
    case 0:
        return "none";
    case 1:
        return "gzip";
    case 2:
        return "snappy";
    case 3:
        return "lz4";
    case 4:
        return "zstd";
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
        int32_t coordinator_epoch = record->value_bytes >= 6 ? (int32_t)get_u32(record->value + 2)
                                                             : -1;
        fprintf(out, " endTxnMarker: %s coordinatorEpoch: %" PRId32,
                type == 1 ? "COMMIT" : type == 0 ? "ABORT" : "UNKNOWN", coordinator_epoch);
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

static void report_invalid(const char *name, size_t position, size_t byte_count,
                           const char *reason, FILE *out, FILE *err)
{
    fprintf(out, "Found %zu invalid bytes at the end of %s\n", byte_count - position, name);
    fprintf(err, "ksim: %s: invalid batch at position %zu: %s\n", name, position, reason);
}

int ks_dumplog_log_bytes(const char *name, int64_t base_offset, const uint8_t *bytes,
                         size_t byte_count, unsigned flags, FILE *out, FILE *err)
{
    fprintf(out, "Dumping %s\n", name);
    fprintf(out, "Log starting offset: %" PRId64 "\n", base_offset);
    size_t position = 0;
    int64_t next_offset = base_offset;
    while (position < byte_count) {
        struct ks_batch_view batch;
        size_t batch_bytes = 0;
        enum ks_batch_status status =
            ks_batch_parse(bytes + position, byte_count - position, &batch, &batch_bytes);
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
            while (ks_record_iter_next(&iter, &record, &malformed)) {
                print_record(&batch, &record, flags, out);
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

static int dump_index(const char *path, int64_t base, const uint8_t *bytes, size_t byte_count,
                      bool time_index, FILE *out, FILE *err)
{
    size_t entry_bytes = time_index ? 12 : 8;
    fprintf(out, "Dumping %s\n", path);
    for (size_t position = 0; position + entry_bytes <= byte_count; position += entry_bytes) {
        if (time_index) {
            int64_t timestamp = (int64_t)((uint64_t)get_u32(bytes + position) << 32 |
                                          get_u32(bytes + position + 4));
            int32_t relative = (int32_t)get_u32(bytes + position + 8);
            fprintf(out, "timestamp: %" PRId64 " offset: %" PRId64 "\n", timestamp,
                    base + relative);
        } else {
            int32_t relative = (int32_t)get_u32(bytes + position);
            int32_t file_position = (int32_t)get_u32(bytes + position + 4);
            fprintf(out, "offset: %" PRId64 " position: %" PRId32 "\n", base + relative,
                    file_position);
        }
    }
    if (byte_count % entry_bytes != 0) {
        size_t position = byte_count - byte_count % entry_bytes;
        fprintf(out, "Found %zu invalid bytes at the end of %s\n", byte_count - position, path);
        fprintf(err, "ksim: %s: torn index entry at position %zu\n", path, position);
        return 1;
    }
    return 0;
}

static int dump_file(const char *path, unsigned flags, FILE *out, FILE *err)
{
    bool is_log = g_str_has_suffix(path, ".log");
    bool is_index = g_str_has_suffix(path, ".index");
    bool is_time = g_str_has_suffix(path, ".timeindex");
    if (!is_log && !is_index && !is_time) {
        fprintf(err, "ksim: %s: not a segment file (.log, .index or .timeindex)\n", path);
        return 2;
    }
    int64_t base = 0;
    if (!base_from_name(path, &base) && !is_log) {
        fprintf(err, "ksim: %s: an index file name must be a 20-digit base offset\n", path);
        return 2;
    }
    gchar *contents = NULL;
    gsize length = 0;
    GError *error = NULL;
    if (!g_file_get_contents(path, &contents, &length, &error)) {
        fprintf(err, "ksim: %s\n", error->message);
        g_error_free(error);
        return 2;
    }
    int code = is_log ? ks_dumplog_log_bytes(path, base, (const uint8_t *)contents, length, flags,
                                             out, err)
                      : dump_index(path, base, (const uint8_t *)contents, length, is_time, out,
                                   err);
    g_free(contents);
    return code;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int dump_folder(const char *path, unsigned flags, FILE *out, FILE *err)
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
    qsort(names->pdata, names->len, sizeof(char *), compare_names);
    int code = 0;
    const char *suffixes[3] = {".log", ".index", ".timeindex"};
    for (guint i = 0; i < names->len; i++) {
        for (int s = 0; s < 3; s++) {
            char *file = g_strdup_printf("%s/%s%s", path, (char *)names->pdata[i], suffixes[s]);
            if (s == 0 || g_file_test(file, G_FILE_TEST_EXISTS)) {
                int file_code = dump_file(file, flags, out, err);
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

int ks_dumplog_path(const char *path, unsigned flags, FILE *out, FILE *err)
{
    if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
        return dump_folder(path, flags, out, err);
    }
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        fprintf(err, "ksim: %s: no such file\n", path);
        return 2;
    }
    return dump_file(path, flags, out, err);
}

/* The usage on out; returns code (0 for --help, 2 for a bad command line). */
static int usage(FILE *out, int code)
{
    fprintf(out, "usage: ksim dump-log PATH [--print-data-log] [--deep-iteration]\n"
                 "  PATH: a .log, .index or .timeindex file, or a partition folder\n");
    return code;
}

int ks_dumplog_main(int argc, char **argv)
{
    const char *path = NULL;
    unsigned flags = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            return usage(stdout, 0);
        } else if (strcmp(argv[i], "--print-data-log") == 0) {
            flags |= KS_DUMPLOG_PRINT_DATA;
        } else if (strcmp(argv[i], "--deep-iteration") == 0) {
            flags |= KS_DUMPLOG_DEEP;
        } else if (strcmp(argv[i], "--files") == 0 && i + 1 < argc && path == NULL) {
            path = argv[++i]; /* Kafka's spelling, accepted too */
        } else if (argv[i][0] != '-' && path == NULL) {
            path = argv[i];
        } else {
            path = NULL;
            break;
        }
    }
    if (path == NULL) {
        return usage(stderr, 2);
    }
    int code = ks_dumplog_path(path, flags, stdout, stderr);
    fflush(stdout);
    return code;
}
