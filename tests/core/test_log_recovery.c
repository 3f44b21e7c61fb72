/*
** tests/core/test_log_recovery.c: the segment log after crashes, power loss
** and damaged files.
**
** Goal: whatever happens to the files, opening the log never crashes, and it
** yields a valid prefix of what was written (every batch CRC-valid, offsets
** increasing, the same bytes that were appended) that holds at least
** everything that was fsynced.
** Method: (1) a crash sweep in the style of SQLite's crash tests: for seeds
** 1..50 and N = 1, 2, ..., a random workload runs until the node's fsync
** count reaches N (checked after each workload step: an append, with its
** flushes and rolls, or an explicit flush; the N that would stop at the same
** step are skipped), the node loses power (unsynced bytes dropped, the last
** write possibly torn), restarts, and the log is recovered and compared with
** what was appended; N grows until the workload ends first. (2) A one-byte
** corruption at many positions of every file, each followed by a recovery
** and by dump-log's parser. (3) Leftovers of an interrupted compaction and
** files with foreign names.
*/
#include "log_fixture.h"

#include "../../sim/dumplog.h"

#define TS0 INT64_C(1767225600000)

struct expected_log {
    GPtrArray *batches; /* GByteArray * as appended (offsets assigned), owned */
};

/* Checks that the log is a valid prefix of `expected`: batch k has the
 * length and the CRC-covered bytes of appended batch k (offsets and epochs
 * are outside the CRC and may be damaged undetectably, as in Kafka).
 * Returns the number of batches in the log. */
static int64_t check_valid_prefix(struct ks_log *log, const struct expected_log *expected,
                                  bool exact_offsets)
{
    int64_t batch_count = 0;
    GByteArray *all = log_fixture_read_all(log, &batch_count);
    size_t position = 0;
    for (int64_t k = 0; k < batch_count; k++) {
        struct ks_batch_view batch;
        size_t batch_bytes = 0;
        CU_ASSERT_EQUAL_FATAL(
            ks_batch_parse(all->data + position, all->len - position, &batch, &batch_bytes),
            KS_BATCH_OK);
        CU_ASSERT_FATAL(k < (int64_t)expected->batches->len);
        const GByteArray *original = g_ptr_array_index(expected->batches, k);
        CU_ASSERT_EQUAL_FATAL(batch_bytes, original->len);
        CU_ASSERT(memcmp(all->data + position + 8, original->data + 8, 4) == 0);
        CU_ASSERT(memcmp(all->data + position + 16, original->data + 16, batch_bytes - 16) == 0);
        if (exact_offsets) {
            CU_ASSERT(memcmp(all->data + position, original->data, batch_bytes) == 0);
        }
        position += batch_bytes;
    }
    g_byte_array_unref(all);
    return batch_count;
}

static uint64_t mix(uint64_t *state)
{
    *state += 0x9E3779B97F4A7C15ull;
    uint64_t z = *state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

struct crash_outcome {
    bool crashed;
    uint64_t fsync_count_at_crash;
};

#define CRASH_STEPS 14

/* Every recovered batch must be, byte for byte, a batch that was appended at
 * that offset at some point (used when truncations make "the" prefix
 * ambiguous: a truncation that was not fsynced is undone by power loss, as
 * on a real disk, and the truncated batches come back). */
static void check_batches_were_written(struct ks_log *log, const GPtrArray *ever)
{
    int64_t batch_count = 0;
    GByteArray *all = log_fixture_read_all(log, &batch_count);
    size_t position = 0;
    int64_t end = ks_log_start_offset(log);
    for (int64_t k = 0; k < batch_count; k++) {
        struct ks_batch_view batch;
        size_t batch_bytes = 0;
        CU_ASSERT_EQUAL_FATAL(
            ks_batch_parse(all->data + position, all->len - position, &batch, &batch_bytes),
            KS_BATCH_OK);
        bool found = false;
        for (guint i = 0; i < ever->len && !found; i++) {
            const GByteArray *written = g_ptr_array_index(ever, i);
            found = written->len == batch_bytes &&
                    memcmp(written->data, all->data + position, batch_bytes) == 0;
        }
        CU_ASSERT(found);
        end = ks_batch_last_offset(&batch) + 1;
        position += batch_bytes;
    }
    CU_ASSERT_EQUAL(ks_log_leo(log), end);
    g_byte_array_unref(all);
}

/* Runs the workload of `seed`, power-failing the node once its fsync count
 * reaches crash_at_fsync, then recovers and checks. One seed in three also
 * truncates the log now and then (a follower's truncation). */
static struct crash_outcome run_crash_case(uint64_t seed, uint64_t crash_at_fsync)
{
    struct crash_outcome outcome = { false, 0 };
    struct ks_test_env env;
    ks_test_env_init(&env, seed, 2);
    struct ks_log_config config = log_fixture_config();
    config.segment_bytes = 900;
    config.index_interval_bytes = 150;
    config.flush_messages = 2 + (int64_t)(seed % 4);
    bool truncating = seed % 3 == 0;
    struct expected_log expected = { g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_byte_array_unref) };
    GPtrArray *ever = g_ptr_array_new_with_free_func((GDestroyNotify)g_byte_array_unref);
    struct ks_log *log = ks_log_open(env.world, LOG_NODE, LOG_DIR, &config, 0, true, NULL);
    uint64_t state = seed;
    int64_t leo_max = 0;
    int32_t epoch = 0;
    for (int step = 0; step < CRASH_STEPS; step++) {
        uint64_t draw = mix(&state);
        if (step % 10 == 0) {
            epoch++;
            ks_log_epoch_assign(log, epoch, ks_log_leo(log));
        }
        if (draw % 11 == 0) {
            ks_log_flush(log);
        } else if (truncating && draw % 5 == 0 && expected.batches->len > 0) {
            guint keep = (guint)((draw >> 8) % expected.batches->len);
            struct ks_batch_view batch;
            const GByteArray *first_cut = g_ptr_array_index(expected.batches, keep);
            ks_batch_parse(first_cut->data, first_cut->len, &batch, NULL);
            ks_log_truncate_to(log, batch.base_offset);
            g_ptr_array_set_size(expected.batches, keep);
            CU_ASSERT_EQUAL(ks_log_leo(log), batch.base_offset);
        } else {
            log_fixture_append(log, 1 + (int32_t)(draw % 4), step, 5 + (int32_t)(draw % 120),
                               TS0 + step, epoch, expected.batches);
            g_ptr_array_add(ever, g_byte_array_ref(g_ptr_array_index(expected.batches,
                                                                     expected.batches->len - 1)));
        }
        leo_max = ks_log_leo(log) > leo_max ? ks_log_leo(log) : leo_max;
        if (ks_world_disk_fsync_count(env.world, LOG_NODE) >= crash_at_fsync) {
            outcome.crashed = true;
            outcome.fsync_count_at_crash = ks_world_disk_fsync_count(env.world, LOG_NODE);
            break;
        }
    }
    int64_t durable_offset = ks_log_recovery_point(log);
    if (outcome.crashed) {
        ks_log_close(log);
        ks_world_node_crash(env.world, LOG_NODE, true);
        ks_world_node_restart(env.world, LOG_NODE);
        /* Half the seeds recover from the recovery point, half from 0. */
        int64_t recovery_point = seed % 2 == 0 ? durable_offset : 0;
        struct ks_log_recovery_report report;
        log = ks_log_open(env.world, LOG_NODE, LOG_DIR, &config, recovery_point, false, &report);
        CU_ASSERT(report.recovered);
        CU_ASSERT(ks_log_leo(log) >= durable_offset);
        CU_ASSERT(ks_log_leo(log) <= leo_max);
        CU_ASSERT_EQUAL(report.leo_after, ks_log_leo(log));
        CU_ASSERT(ks_log_recovery_point(log) <= ks_log_leo(log));
        if (truncating) {
            check_batches_were_written(log, ever);
        } else {
            int64_t count = check_valid_prefix(log, &expected, true);
            /* The LEO is the end of the last recovered batch. */
            int64_t end = 0;
            for (int64_t k = 0; k < count; k++) {
                struct ks_batch_view batch;
                const GByteArray *original = g_ptr_array_index(expected.batches, k);
                ks_batch_parse(original->data, original->len, &batch, NULL);
                end = ks_batch_last_offset(&batch) + 1;
            }
            CU_ASSERT_EQUAL(ks_log_leo(log), end);
        }
        /* The epoch cache names no offset beyond the log. */
        int32_t epoch_found = 0;
        int64_t end_offset = 0;
        if (ks_log_epoch_end_offset(log, INT32_MAX, &epoch_found, &end_offset)) {
            CU_ASSERT_EQUAL(end_offset, ks_log_leo(log));
        }
        /* The log goes on working. */
        int64_t leo = ks_log_leo(log);
        CU_ASSERT_EQUAL(log_fixture_append(log, 2, 0, 10, TS0, epoch + 1, NULL), leo);
        CU_ASSERT_EQUAL(ks_log_latest_epoch(log), epoch + 1);
    }
    ks_log_close(log);
    g_ptr_array_unref(expected.batches);
    g_ptr_array_unref(ever);
    ks_test_env_deinit(&env);
    return outcome;
}

static void test_crash_sweep_power_loss_at_every_fsync(void)
{
    int cases = 0;
    for (uint64_t seed = 1; seed <= 50; seed++) {
        uint64_t n = 1;
        for (;;) {
            struct crash_outcome outcome = run_crash_case(seed, n);
            cases++;
            if (!outcome.crashed) {
                break;
            }
            /* Crashes are checked after each step: skip the N that would
             * crash at the same point. */
            n = outcome.fsync_count_at_crash + 1;
        }
    }
    CU_ASSERT(cases > 300);
}

/* Builds the reference log used by the corruption sweep: ~3 segments. */
static struct ks_log *build_small_log(struct ks_test_env *env, const struct ks_log_config *config,
                                      struct expected_log *expected)
{
    struct ks_log *log = ks_log_open(env->world, LOG_NODE, LOG_DIR, config, 0, true, NULL);
    for (int i = 0; i < 18; i++) {
        log_fixture_append(log, 1 + i % 3, i, 10 + (i * 17) % 60, TS0 + i, 1 + i / 6,
                           expected->batches);
    }
    ks_log_flush(log);
    return log;
}

/* Reads a log that may hold undetected damage (after a clean open): every
 * read must succeed or fail cleanly, whatever the bytes say. */
static void read_tolerantly(struct ks_log *log)
{
    int64_t offset = ks_log_start_offset(log);
    for (int reads = 0; reads < 1000 && offset < ks_log_leo(log); reads++) {
        GByteArray *out = g_byte_array_new();
        enum ks_log_result result = ks_log_read(log, offset, INT64_MAX, 1 << 20, out);
        CU_ASSERT(result == KS_LOG_OK || result == KS_LOG_IO_ERROR);
        int64_t next = offset + 1;
        size_t position = 0;
        while (position < out->len) {
            struct ks_batch_view batch;
            size_t batch_bytes = 0;
            if (ks_batch_parse(out->data + position, out->len - position, &batch, &batch_bytes) !=
                KS_BATCH_OK) {
                break;
            }
            if (ks_batch_last_offset(&batch) + 1 > next) {
                next = ks_batch_last_offset(&batch) + 1;
            }
            position += batch_bytes;
        }
        g_byte_array_unref(out);
        offset = next;
    }
}

static void test_one_corrupt_byte_anywhere(void)
{
    struct ks_log_config config = log_fixture_config();
    config.segment_bytes = 600;
    config.index_interval_bytes = 100;
    /* The file list and sizes of the reference log. */
    struct ks_test_env env;
    ks_test_env_init(&env, 100, 2);
    struct expected_log expected = { g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_byte_array_unref) };
    struct ks_log *log = build_small_log(&env, &config, &expected);
    int64_t leo = ks_log_leo(log);
    ks_log_close(log);
    char **names = ks_disk_list(env.world, LOG_NODE, LOG_DIR);
    GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
    GArray *sizes = g_array_new(FALSE, FALSE, sizeof(int64_t));
    for (char **name = names; *name != NULL; name++) {
        char *relative = g_strdup_printf("%s/%s", LOG_DIR, *name);
        GByteArray *bytes = log_fixture_real_bytes(&env, relative);
        int64_t size = bytes != NULL ? bytes->len : 0;
        g_byte_array_unref(bytes);
        g_ptr_array_add(files, relative);
        g_array_append_val(sizes, size);
    }
    ks_disk_list_free(names);
    ks_test_env_deinit(&env);
    CU_ASSERT(files->len >= 9);

    int runs = 0;
    for (guint f = 0; f < files->len; f++) {
        const char *file = g_ptr_array_index(files, f);
        int64_t size = g_array_index(sizes, int64_t, f);
        bool is_log = g_str_has_suffix(file, ".log");
        int64_t step = is_log ? 19 : 23;
        for (int64_t position = 0; position < size; position += step) {
            ks_test_env_init(&env, 100, 2);
            struct expected_log again = { g_ptr_array_new_with_free_func(
                (GDestroyNotify)g_byte_array_unref) };
            log = build_small_log(&env, &config, &again);
            ks_log_close(log);
            CU_ASSERT_FATAL(ks_world_disk_corrupt(env.world, LOG_NODE, file, position, 1));
            /* dump-log's parser on the damaged segment: never crashes, and
             * reports damage to any checked byte. */
            bool offset_field = false; /* not covered by the CRC: undetectable */
            if (is_log) {
                GByteArray *bytes = log_fixture_real_bytes(&env, file);
                FILE *sink = fopen("/dev/null", "w");
                int code = ks_dumplog_log_bytes(file, 0, bytes->data, bytes->len,
                                                KS_DUMPLOG_PRINT_DATA, sink, sink);
                fclose(sink);
                int64_t in_batch = position; /* position within its batch */
                size_t at = 0;
                while (at < bytes->len) {
                    struct ks_batch_view view;
                    size_t batch_bytes = 0;
                    if (ks_batch_parse(bytes->data + at, bytes->len - at, &view, &batch_bytes) !=
                        KS_BATCH_OK) {
                        break;
                    }
                    if ((int64_t)(at + batch_bytes) > position) {
                        break;
                    }
                    at += batch_bytes;
                }
                in_batch = position - (int64_t)at;
                offset_field = in_batch < 8;
                if (in_batch >= 16 || (in_batch >= 8 && in_batch < 12)) {
                    CU_ASSERT_EQUAL(code, 1);
                }
                CU_ASSERT(code == 0 || code == 1);
                g_byte_array_unref(bytes);
            }
            /* A clean open must survive it too (Kafka does not validate
             * then, so only "no crash" and a consistent LEO are required). */
            log = ks_log_open(env.world, LOG_NODE, LOG_DIR, &config, leo, true, NULL);
            if (!offset_field) {
                CU_ASSERT(ks_log_leo(log) <= leo);
            }
            read_tolerantly(log);
            ks_log_close(log);
            /* Recovery from 0 validates everything. */
            struct ks_log_recovery_report report;
            log = ks_log_open(env.world, LOG_NODE, LOG_DIR, &config, 0, false, &report);
            if (!offset_field) {
                CU_ASSERT(ks_log_leo(log) <= leo);
            }
            check_valid_prefix(log, &again, false);
            if (!is_log) {
                CU_ASSERT_EQUAL(ks_log_leo(log), leo); /* indexes are rebuilt */
            }
            ks_log_close(log);
            g_ptr_array_unref(again.batches);
            ks_test_env_deinit(&env);
            runs++;
        }
    }
    CU_ASSERT(runs > 60);
    g_ptr_array_unref(expected.batches);
    g_ptr_array_unref(files);
    g_array_free(sizes, TRUE);
}

static void write_file(struct ks_test_env *env, const char *relative, const void *bytes,
                       size_t byte_count)
{
    enum ks_io_result result;
    ks_file *file =
        ks_disk_open(env->world, LOG_NODE, relative, KS_DISK_CREATE | KS_DISK_TRUNCATE, &result);
    CU_ASSERT_PTR_NOT_NULL_FATAL(file);
    ks_disk_append(file, bytes, byte_count);
    ks_disk_fsync(file);
    ks_disk_close(file);
}

static void test_interrupted_compaction_leftovers(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 200, 2);
    struct ks_log_config config = log_fixture_config();
    config.segment_bytes = 600;
    config.index_interval_bytes = 100;
    struct expected_log expected = { g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_byte_array_unref) };
    struct ks_log *log = build_small_log(&env, &config, &expected);
    int64_t leo = ks_log_leo(log);
    ks_log_close(log);
    /* A crash before the .swap rename leaves a .cleaned file: discarded. */
    write_file(&env, LOG_DIR "/00000000000000000000.log.cleaned", "garbage", 7);
    log = ks_log_open(env.world, LOG_NODE, LOG_DIR, &config, leo, true, NULL);
    CU_ASSERT_EQUAL(ks_log_leo(log), leo);
    CU_ASSERT_FALSE(
        ks_disk_exists(env.world, LOG_NODE, LOG_DIR "/00000000000000000000.log.cleaned"));
    check_valid_prefix(log, &expected, true);
    ks_log_close(log);
    /* A crash after it leaves a .swap and no indexes: the swap completes. The
     * cleaned segment here is the first two batches of the original. */
    GByteArray *first = g_ptr_array_index(expected.batches, 0);
    GByteArray *second = g_ptr_array_index(expected.batches, 1);
    GByteArray *cleaned = g_byte_array_new();
    g_byte_array_append(cleaned, first->data, first->len);
    g_byte_array_append(cleaned, second->data, second->len);
    write_file(&env, LOG_DIR "/00000000000000000000.log.swap", cleaned->data, cleaned->len);
    ks_disk_delete(env.world, LOG_NODE, LOG_DIR "/00000000000000000000.index");
    ks_disk_delete(env.world, LOG_NODE, LOG_DIR "/00000000000000000000.timeindex");
    log = ks_log_open(env.world, LOG_NODE, LOG_DIR, &config, leo, true, NULL);
    CU_ASSERT_EQUAL(ks_log_leo(log), leo);
    CU_ASSERT_FALSE(ks_disk_exists(env.world, LOG_NODE, LOG_DIR "/00000000000000000000.log.swap"));
    CU_ASSERT(ks_disk_exists(env.world, LOG_NODE, LOG_DIR "/00000000000000000000.index"));
    GByteArray *segment = log_fixture_real_bytes(&env, LOG_DIR "/00000000000000000000.log");
    CU_ASSERT_EQUAL(segment->len, cleaned->len);
    g_byte_array_unref(segment);
    /* The offsets of the removed batches now read from the next segment. */
    GByteArray *out = g_byte_array_new();
    CU_ASSERT_EQUAL(ks_log_read(log, 0, INT64_MAX, 1 << 20, out), KS_LOG_OK);
    CU_ASSERT_EQUAL(out->len, cleaned->len);
    g_byte_array_unref(out);
    ks_log_close(log);
    g_byte_array_unref(cleaned);
    g_ptr_array_unref(expected.batches);
    ks_test_env_deinit(&env);
}

static void test_foreign_and_misplaced_files(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 300, 2);
    struct ks_log_config config = log_fixture_config();
    config.segment_bytes = 600;
    struct expected_log expected = { g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_byte_array_unref) };
    struct ks_log *log = build_small_log(&env, &config, &expected);
    int64_t leo = ks_log_leo(log);
    ks_log_close(log);
    const char *junk[] = { "foo.log",
                           "123.log",
                           "0000000000000000000a.log",
                           "99999999999999999999.log",
                           "00000000000000000000.index.bak",
                           "leader-epoch-checkpoint" };
    for (size_t i = 0; i < KS_ARRAY_COUNT(junk); i++) {
        char *relative = g_strdup_printf("%s/%s", LOG_DIR, junk[i]);
        write_file(&env, relative, "\x00\x01zz", 4);
        g_free(relative);
    }
    for (int clean = 0; clean < 2; clean++) {
        log = ks_log_open(env.world, LOG_NODE, LOG_DIR, &config, 0, clean == 1, NULL);
        CU_ASSERT_EQUAL(ks_log_leo(log), leo);
        check_valid_prefix(log, &expected, true);
        ks_log_close(log);
    }
    CU_ASSERT(ks_disk_exists(env.world, LOG_NODE, LOG_DIR "/foo.log"));
    /* A segment copied under the wrong base offset: its batches sit below
     * the name's offset, so recovery drops them instead of serving them. */
    GByteArray *first = log_fixture_real_bytes(&env, LOG_DIR "/00000000000000000000.log");
    write_file(&env, LOG_DIR "/00000000000000100000.log", first->data, first->len);
    struct ks_log_recovery_report report;
    log = ks_log_open(env.world, LOG_NODE, LOG_DIR, &config, 0, false, &report);
    CU_ASSERT_EQUAL(ks_log_leo(log), 100000);
    CU_ASSERT_EQUAL(report.dropped_bytes, (int64_t)first->len);
    CU_ASSERT(report.dropped_batch_count > 0);
    ks_log_close(log);
    g_byte_array_unref(first);
    g_ptr_array_unref(expected.batches);
    ks_test_env_deinit(&env);
}

/* A process crash (no power loss) keeps the page cache: nothing is lost. */
static void test_process_crash_keeps_everything(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 400, 2);
    struct ks_log_config config = log_fixture_config();
    config.segment_bytes = 700;
    struct expected_log expected = { g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_byte_array_unref) };
    struct ks_log *log = build_small_log(&env, &config, &expected);
    log_fixture_append(log, 3, 0, 50, TS0, 9, expected.batches);
    int64_t leo = ks_log_leo(log);
    ks_log_close(log);
    ks_world_node_crash(env.world, LOG_NODE, false);
    ks_world_node_restart(env.world, LOG_NODE);
    struct ks_log_recovery_report report;
    log = ks_log_open(env.world, LOG_NODE, LOG_DIR, &config, 0, false, &report);
    CU_ASSERT(report.recovered);
    CU_ASSERT_EQUAL(report.recovered_from_offset, 0);
    CU_ASSERT_EQUAL(report.dropped_bytes, 0);
    CU_ASSERT_EQUAL(report.leo_before, leo);
    CU_ASSERT_EQUAL(ks_log_leo(log), leo);
    CU_ASSERT_EQUAL(ks_log_latest_epoch(log), 9);
    CU_ASSERT_EQUAL(check_valid_prefix(log, &expected, true), (int64_t)expected.batches->len);
    ks_log_close(log);
    g_ptr_array_unref(expected.batches);
    ks_test_env_deinit(&env);
}

/* A torn tail reports what was dropped. */
static void test_torn_tail_report(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 500, 2);
    struct ks_log_config config = log_fixture_config();
    struct expected_log expected = { g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_byte_array_unref) };
    struct ks_log *log = ks_log_open(env.world, LOG_NODE, LOG_DIR, &config, 0, true, NULL);
    for (int i = 0; i < 5; i++) {
        log_fixture_append(log, 2, i, 30, TS0, 0, expected.batches);
    }
    ks_log_close(log);
    GByteArray *bytes = log_fixture_real_bytes(&env, LOG_DIR "/00000000000000000000.log");
    GByteArray *last = g_ptr_array_index(expected.batches, 4);
    /* Cut the last batch in half by rewriting the file shorter. */
    guint keep = bytes->len - last->len / 2;
    write_file(&env, LOG_DIR "/00000000000000000000.log", bytes->data, keep);
    struct ks_log_recovery_report report;
    log = ks_log_open(env.world, LOG_NODE, LOG_DIR, &config, 0, false, &report);
    CU_ASSERT_EQUAL(ks_log_leo(log), 8);
    CU_ASSERT_EQUAL(report.dropped_bytes, (int64_t)(keep - (bytes->len - last->len)));
    CU_ASSERT_EQUAL(report.dropped_batch_count, 1);
    CU_ASSERT_EQUAL(report.leo_after, 8);
    ks_log_close(log);
    g_byte_array_unref(bytes);
    g_ptr_array_unref(expected.batches);
    ks_test_env_deinit(&env);
}

void ks_test_register_log_recovery(void)
{
    static const struct ks_test_case cases[] = {
        { "crash sweep: power loss at every fsync", test_crash_sweep_power_loss_at_every_fsync },
        { "one corrupt byte anywhere", test_one_corrupt_byte_anywhere },
        { "interrupted compaction leftovers", test_interrupted_compaction_leftovers },
        { "foreign and misplaced files", test_foreign_and_misplaced_files },
        { "process crash keeps everything", test_process_crash_keeps_everything },
        { "torn tail report", test_torn_tail_report },
    };
    KS_TEST_ADD_SUITE("core/log_recovery", cases);
}
