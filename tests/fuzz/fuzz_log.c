/*
** tests/fuzz/fuzz_log.c: libFuzzer target for the batch decoder, dump-log's
** parser and log recovery.
**
** Every input is (1) walked as a segment file by ks_batch_parse and the
** record iterator, as recovery and consumers do, and (2) dumped by
** ks_dumplog_log_bytes; neither may crash or read out of bounds (the build
** uses ASan and UBSan). (3) One input in 32 (chosen by its CRC, so the choice
** is repeatable) is also written as `00000000000000000000.log` of a log
** folder in a world made once per process and recovered with
** clean_shutdown=false; the log must then be a valid prefix of the input:
** the file is the input cut at a batch boundary, every batch reads back
** valid with increasing offsets, and the LEO follows the last batch. Only a
** fraction runs recovery because each recovery costs real file operations
** (a few ms), which would make the 200000-input run take far too long.
** When the first input byte is odd, the input is split in two segments at
** the position given by bytes 1-2, the second one named by byte 3. When bit 1
** of the first byte is set, the rest of the input is also run with every
** batch's CRC (and magic) made valid, so that mutations reach the record
** iterator and recovery's offset rules instead of stopping at the CRC.
*/
#include <stdio.h>

#include "../../core/base.h"
#include "../../core/log.h"
#include "../../sim/dumplog.h"
#include "../../sim/world.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_NODE ((ks_node_id)1)
#define FUZZ_DIR  "broker-1/fuzz-0"

struct fuzz_state {
    char *run_dir;
    ks_world *world;
    FILE *sink;
};

static struct fuzz_state *fuzz_state_get(void);

static void fuzz_state_free(void)
{
    struct fuzz_state *state = fuzz_state_get();
    ks_world_free(state->world);
    ks_host_remove_tree(state->run_dir);
    g_free(state->run_dir);
    fclose(state->sink);
}

/* The harness's one world, made on first use (libFuzzer has no setup hook
 * that runs before the first input with our arguments). */
static struct fuzz_state *fuzz_state_get(void)
{
    static struct fuzz_state state;
    if (state.world == NULL) {
        state.run_dir = g_dir_make_tmp("ksim-fuzz-XXXXXX", NULL);
        ks_assert(state.run_dir != NULL);
        struct ks_world_config config = { .seed = 1, .run_dir = state.run_dir, .node_count = 2 };
        state.world = ks_world_new(&config, NULL);
        ks_assert(state.world != NULL);
        state.sink = fopen("/dev/null", "w");
        ks_assert(state.sink != NULL);
        atexit(fuzz_state_free);
    }
    return &state;
}

static void walk_batches(const uint8_t *data, size_t size)
{
    size_t position = 0;
    while (position < size) {
        struct ks_batch_view batch;
        size_t batch_bytes = 0;
        if (ks_batch_parse(data + position, size - position, &batch, &batch_bytes) != KS_BATCH_OK) {
            return;
        }
        ks_assert(batch_bytes >= KS_BATCH_HEADER_BYTES && batch_bytes <= size - position);
        struct ks_record_iter iter;
        struct ks_record_view record;
        ks_record_iter_init(&iter, &batch);
        int32_t count = 0;
        while (ks_record_iter_next(&iter, &record, NULL)) {
            /* A compressed batch's records live in the iterator's buffer. */
            const struct ks_batch_view *inner = iter.batch;
            ks_assert(inner->records_bytes <= KS_BATCH_DECOMPRESSED_BYTES_MAX);
            ks_assert(record.key_bytes >= -1 && record.value_bytes >= -1);
            ks_assert(record.header_count <= KS_RECORD_HEADERS_MAX);
            if (record.key != NULL) {
                ks_assert(record.key >= inner->records &&
                          record.key + record.key_bytes <= inner->records + inner->records_bytes);
            }
            if (record.value != NULL) {
                ks_assert(record.value >= inner->records &&
                          record.value + record.value_bytes <=
                              inner->records + inner->records_bytes);
            }
            count++;
        }
        ks_assert(count <= (batch.record_count > 0 ? batch.record_count : 0));
        position += batch_bytes;
    }
}

static void write_segment(ks_world *world, int64_t base, const uint8_t *data, size_t size)
{
    char *path = g_strdup_printf("%s/%020lld.log", FUZZ_DIR, (long long)base);
    enum ks_io_result result;
    ks_file *file =
        ks_disk_open(world, FUZZ_NODE, path, KS_DISK_CREATE | KS_DISK_TRUNCATE, &result);
    ks_assert(file != NULL);
    ks_disk_append(file, data, size);
    ks_disk_fsync(file);
    ks_disk_close(file);
    g_free(path);
}

/* Empties the folder but for leader-epoch-checkpoint, reset to an empty
 * cache: the folder is never listed empty (the world's listing of an empty
 * folder trips UBSan, see the report). */
static void clear_folder(ks_world *world)
{
    const char *epoch_path = FUZZ_DIR "/leader-epoch-checkpoint";
    enum ks_io_result result;
    ks_file *file =
        ks_disk_open(world, FUZZ_NODE, epoch_path, KS_DISK_CREATE | KS_DISK_TRUNCATE, &result);
    ks_assert(file != NULL);
    ks_disk_append(file, "0\n0\n", 4);
    ks_disk_close(file);
    char **names = ks_disk_list(world, FUZZ_NODE, FUZZ_DIR);
    for (char **name = names; names != NULL && *name != NULL; name++) {
        if (strcmp(*name, "leader-epoch-checkpoint") == 0) {
            continue;
        }
        char *path = g_strdup_printf("%s/%s", FUZZ_DIR, *name);
        ks_disk_delete(world, FUZZ_NODE, path);
        g_free(path);
    }
    ks_disk_list_free(names);
}

static void recover_and_check(const uint8_t *data, size_t size)
{
    struct fuzz_state *state = fuzz_state_get();
    ks_world *world = state->world;
    ks_disk_mkdir(world, FUZZ_NODE, FUZZ_DIR);
    clear_folder(world);
    size_t first_size = size;
    int64_t second_base = -1;
    if (size >= 4 && (data[0] & 1) != 0) {
        size_t split = (size_t)(data[1] << 8 | data[2]);
        /* Never 0: a second segment named like the first would overwrite
         * it, and the first would no longer be a prefix of the input. */
        second_base = 1 + (int64_t)data[3];
        first_size = split < size ? split : size;
    }
    write_segment(world, 0, data, first_size);
    if (second_base >= 0) {
        write_segment(world, second_base, data + first_size, size - first_size);
    }
    struct ks_log_config config = {
        .segment_bytes = 1 << 20,
        .segment_ns = INT64_MAX,
        .index_interval_bytes = 64,
        .segment_index_bytes = 1 << 20,
        .flush_messages = KS_INT64_UNSET,
        .flush_ns = KS_INT64_UNSET,
        .retention_ns = -1,
        .retention_bytes = -1,
        .cleanup_delete = true,
        .max_message_bytes = 1 << 20,
    };
    struct ks_log_recovery_report report;
    struct ks_log *log = ks_log_open(world, FUZZ_NODE, FUZZ_DIR, &config, 0, false, &report);
    ks_assert(report.recovered);
    ks_assert(report.leo_after == ks_log_leo(log));
    ks_assert(ks_log_size_bytes(log) <= (int64_t)size);
    /* The first segment is a prefix of what was written. */
    if (ks_disk_exists(world, FUZZ_NODE, FUZZ_DIR "/00000000000000000000.log")) {
        enum ks_io_result result;
        ks_file *file =
            ks_disk_open(world, FUZZ_NODE, FUZZ_DIR "/00000000000000000000.log", 0, &result);
        int64_t kept = ks_disk_size(file);
        ks_assert(kept <= (int64_t)first_size);
        uint8_t *bytes = g_malloc((size_t)kept + 1);
        size_t read_count = 0;
        ks_disk_read(file, bytes, (size_t)kept, 0, &read_count);
        ks_assert(read_count == (size_t)kept);
        ks_assert(memcmp(bytes, data, (size_t)kept) == 0);
        g_free(bytes);
        ks_disk_close(file);
    }
    /* Every batch reads back valid, offsets increasing, up to the LEO. */
    int64_t offset = ks_log_start_offset(log);
    int64_t last_seen = -1;
    while (offset < ks_log_leo(log)) {
        GByteArray *out = g_byte_array_new();
        ks_assert(ks_log_read(log, offset, INT64_MAX, 1 << 16, out) == KS_LOG_OK);
        if (out->len == 0) {
            g_byte_array_unref(out);
            break;
        }
        size_t position = 0;
        while (position < out->len) {
            struct ks_batch_view batch;
            size_t batch_bytes = 0;
            ks_assert(ks_batch_parse(out->data + position, out->len - position, &batch,
                                     &batch_bytes) == KS_BATCH_OK);
            ks_assert(batch.base_offset > last_seen);
            last_seen = ks_batch_last_offset(&batch);
            position += batch_bytes;
        }
        offset = last_seen + 1;
        g_byte_array_unref(out);
    }
    ks_assert(last_seen < ks_log_leo(log));
    ks_log_close(log);
}

/* Rewrites the CRC of every batch whose length field fits, so that mutated
 * inputs get past the CRC check and reach the record iterator and the
 * offset rules of recovery. */
static void fix_crcs(uint8_t *bytes, size_t size)
{
    size_t position = 0;
    while (position + KS_BATCH_HEADER_BYTES <= size) {
        uint32_t length = (uint32_t)bytes[position + 8] << 24 |
                          (uint32_t)bytes[position + 9] << 16 |
                          (uint32_t)bytes[position + 10] << 8 | bytes[position + 11];
        if (length < KS_BATCH_HEADER_BYTES - KS_BATCH_LOG_OVERHEAD_BYTES ||
            length > size - position - KS_BATCH_LOG_OVERHEAD_BYTES) {
            return;
        }
        size_t batch_bytes = (size_t)length + KS_BATCH_LOG_OVERHEAD_BYTES;
        bytes[position + 16] = KS_BATCH_MAGIC;
        uint32_t crc = ks_crc32c(0, bytes + position + 21, batch_bytes - 21);
        for (int i = 0; i < 4; i++) {
            bytes[position + 17 + i] = (uint8_t)(crc >> (24 - 8 * i));
        }
        position += batch_bytes;
    }
}

static void run_one(const uint8_t *data, size_t size)
{
    walk_batches(data, size);
    struct fuzz_state *state = fuzz_state_get();
    ks_dumplog_log_bytes("fuzz.log", 0, data, size, KS_DUMPLOG_PRINT_DATA, state->sink,
                         state->sink);
    if (ks_crc32c(0, data, size) % 32 == 0) {
        recover_and_check(data, size);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Byte 0 bit 1 set: the rest of the input gets valid CRCs first. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    run_one(data, size);
    if (size > 1 && (data[0] & 2) != 0) {
        uint8_t *fixed = g_memdup2(data + 1, size - 1);
        fix_crcs(fixed, size - 1);
        run_one(fixed, size - 1);
        g_free(fixed);
    }
    return 0;
}
