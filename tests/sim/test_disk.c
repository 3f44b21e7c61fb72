/*
** tests/sim/test_disk.c: the virtual disk and its fault layer (suite "sim/disk").
**
** Goal: files behave like files (bytes really land under the run folder,
** reads see what was written), durability follows the fault model of
** sim/disk.c (power loss keeps exactly the durable content plus at most a torn
** last write; a process crash keeps everything; overwrites below the durable
** size are undone; never-fsynced files come back empty), whole-file
** operations are durable at once, the descriptor LRU really bounds the
** process's descriptors, the cost model charges a page cache in front of a
** serial device, and the operating system's writeback (by age, and by the
** dirty limit) makes data durable without fsync.
** Method: write known pseudo-random content (from a local generator, not the
** world's streams), power-fail, and compare byte by byte; the torn-write
** property is checked over 200 seeds, and the three tear outcomes must all
** occur. Descriptors are counted in /proc/self/fd.
*/
#include "../testlib.h"
#include "../../sim/world_int.h"

#include <dirent.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t local_next(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return *state >> 33;
}

static void fill(uint8_t *bytes, size_t n, uint64_t *state)
{
    for (size_t i = 0; i < n; i++) {
        bytes[i] = (uint8_t)local_next(state);
    }
}

/* The whole file through the world's read path. */
static uint8_t *read_whole(ks_file *file, size_t *size_out)
{
    size_t size = (size_t)ks_disk_size(file);
    uint8_t *bytes = g_malloc(size + 1);
    size_t n = 0;
    CU_ASSERT_EQUAL(ks_disk_read(file, bytes, size, 0, &n), KS_IO_OK);
    CU_ASSERT_EQUAL(n, size);
    *size_out = size;
    return bytes;
}

static void test_basic_io(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    enum ks_io_result result = KS_IO_OK;
    CU_ASSERT_PTR_NULL(ks_disk_open(env.world, 1, "b1/missing.log", 0, &result));
    CU_ASSERT_EQUAL(result, KS_IO_NOT_FOUND);
    ks_file *file = ks_disk_open(env.world, 1, "b1/p-0/0.log", KS_DISK_CREATE, &result);
    CU_ASSERT_PTR_NOT_NULL_FATAL(file);
    CU_ASSERT_EQUAL(result, KS_IO_OK);
    CU_ASSERT_EQUAL(ks_disk_size(file), 0);
    CU_ASSERT_EQUAL(ks_disk_append(file, "hello ", 6), KS_IO_OK);
    CU_ASSERT_EQUAL(ks_disk_append(file, "world", 5), KS_IO_OK);
    CU_ASSERT_EQUAL(ks_disk_pwrite(file, "W", 1, 6), KS_IO_OK);
    CU_ASSERT_EQUAL(ks_disk_size(file), 11);
    char buffer[32] = { 0 };
    size_t n = 0;
    CU_ASSERT_EQUAL(ks_disk_read(file, buffer, sizeof buffer, 0, &n), KS_IO_OK);
    CU_ASSERT_EQUAL(n, 11);
    CU_ASSERT_NSTRING_EQUAL(buffer, "hello World", 11);
    CU_ASSERT_EQUAL(ks_disk_read(file, buffer, 4, 9, &n), KS_IO_OK);
    CU_ASSERT_EQUAL(n, 2); /* short at EOF */
    CU_ASSERT_EQUAL(ks_disk_read(file, buffer, 4, 50, &n), KS_IO_OK);
    CU_ASSERT_EQUAL(n, 0);
    /* The real file holds the bytes now, for tools. */
    char *real = ks_world_real_path(env.world, "b1/p-0/0.log");
    gchar *contents = NULL;
    gsize length = 0;
    CU_ASSERT_TRUE(g_file_get_contents(real, &contents, &length, NULL));
    CU_ASSERT_EQUAL(length, 11);
    CU_ASSERT_NSTRING_EQUAL(contents, "hello World", 11);
    g_free(contents);
    g_free(real);
    CU_ASSERT_EQUAL(ks_disk_truncate(file, 5), KS_IO_OK);
    CU_ASSERT_EQUAL(ks_disk_size(file), 5);
    ks_disk_close(file);
    ks_disk_close(NULL);
    /* Reopen: the size is kept; TRUNCATE empties. */
    file = ks_disk_open(env.world, 1, "b1/p-0/0.log", 0, &result);
    CU_ASSERT_PTR_NOT_NULL_FATAL(file);
    CU_ASSERT_EQUAL(ks_disk_size(file), 5);
    ks_file *again = ks_disk_open(env.world, 1, "b1/p-0/0.log", KS_DISK_TRUNCATE, NULL);
    CU_ASSERT_EQUAL(ks_disk_size(again), 0);
    CU_ASSERT_EQUAL(ks_disk_size(file), 0); /* both handles see one file */
    ks_disk_close(again);
    ks_disk_close(file);
    /* Changed behind the world's back while closed (a test writing the real
     * file): the next open sees the file as it is. */
    real = ks_world_real_path(env.world, "b1/p-0/0.log");
    CU_ASSERT_TRUE(g_file_set_contents(real, "external!", 9, NULL));
    file = ks_disk_open(env.world, 1, "b1/p-0/0.log", 0, &result);
    CU_ASSERT_PTR_NOT_NULL_FATAL(file);
    CU_ASSERT_EQUAL(ks_disk_size(file), 9);
    CU_ASSERT_EQUAL(ks_world_disk_durable_size(env.world, 1, "b1/p-0/0.log"), 9);
    ks_disk_close(file);
    CU_ASSERT_EQUAL(g_unlink(real), 0);
    CU_ASSERT_PTR_NULL(ks_disk_open(env.world, 1, "b1/p-0/0.log", 0, &result));
    CU_ASSERT_EQUAL(result, KS_IO_NOT_FOUND);
    g_free(real);
    ks_test_env_deinit(&env);
}

/* S4: many files appended a little at a time keep their staging buffers
 * under the budget (all written out and freed when a buffer must grow past
 * it), and every byte reaches its file, in order, through reads and on the
 * host. 40 files, more than the descriptor bound (8), so most have none. */
static void test_staging_budget(void)
{
    enum { FILES = 40, ROUNDS = 60, BYTES = 37 };
    struct ks_world_config config = { .seed = 1, .node_count = 2, .open_file_count_max = 8 };
    struct ks_test_env env;
    ks_test_env_init_config(&env, &config);
    env.world->stage_budget_bytes = 2048;
    ks_file *files[FILES];
    for (int f = 0; f < FILES; f++) {
        char path[32];
        g_snprintf(path, sizeof path, "b1/p-%d/0.log", f);
        files[f] = ks_disk_open(env.world, 1, path, KS_DISK_CREATE, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(files[f]);
    }
    uint64_t most = 0;
    uint8_t chunk[BYTES];
    for (int r = 0; r < ROUNDS; r++) {
        for (int f = 0; f < FILES; f++) {
            memset(chunk, 'a' + (f + r) % 26, sizeof chunk);
            CU_ASSERT_EQUAL(ks_disk_append(files[f], chunk, sizeof chunk), KS_IO_OK);
            most = MAX(most, env.world->staged_capacity_bytes);
        }
    }
    /* At most the budget, plus the one buffer that grew past it: 4 appends'
     * room doubled up to 37 x 60 bytes, under 4 KiB. */
    CU_ASSERT(most <= 2048 + 4096);
    CU_ASSERT(most >= 2048); /* the budget was reached, so it was used */
    for (int f = 0; f < FILES; f++) {
        uint8_t back[ROUNDS * BYTES];
        size_t n = 0;
        CU_ASSERT_EQUAL(ks_disk_read(files[f], back, sizeof back, 0, &n), KS_IO_OK);
        CU_ASSERT_EQUAL_FATAL(n, sizeof back);
        for (int r = 0; r < ROUNDS; r++) {
            CU_ASSERT_EQUAL(back[r * BYTES], 'a' + (f + r) % 26);
            CU_ASSERT_EQUAL(back[r * BYTES + BYTES - 1], 'a' + (f + r) % 26);
        }
        ks_disk_close(files[f]);
    }
    CU_ASSERT_EQUAL(env.world->staged_capacity_bytes, 0);
    /* The real files hold everything once the handles are closed. */
    char *real = ks_world_real_path(env.world, "b1/p-39/0.log");
    gchar *contents = NULL;
    gsize length = 0;
    CU_ASSERT_TRUE(g_file_get_contents(real, &contents, &length, NULL));
    CU_ASSERT_EQUAL(length, ROUNDS * BYTES);
    CU_ASSERT_EQUAL(contents[(ROUNDS - 1) * BYTES], 'a' + (39 + ROUNDS - 1) % 26);
    g_free(contents);
    g_free(real);
    ks_test_env_deinit(&env);
}

static void test_whole_file_ops(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    CU_ASSERT_PTR_NULL(ks_disk_list(env.world, 1, "b1"));
    CU_ASSERT_EQUAL(ks_disk_mkdir(env.world, 1, "b1/x/y"), KS_IO_OK);
    char **empty = ks_disk_list(env.world, 1, "b1/x/y");
    CU_ASSERT_PTR_NOT_NULL_FATAL(empty);
    CU_ASSERT_PTR_NULL(empty[0]);
    ks_disk_list_free(empty);
    ks_world_node_crash(env.world, 1, true); /* a node without files */
    ks_world_node_restart(env.world, 1);
    CU_ASSERT_TRUE(ks_disk_exists(env.world, 1, "b1/x/y"));
    const char *names[] = { "b1/c", "b1/a", "b1/B", "b1/b" };
    for (int i = 0; i < 4; i++) {
        ks_file *f = ks_disk_open(env.world, 1, names[i], KS_DISK_CREATE, NULL);
        ks_disk_append(f, "z", 1);
        ks_disk_close(f);
    }
    char **list = ks_disk_list(env.world, 1, "b1");
    CU_ASSERT_PTR_NOT_NULL_FATAL(list);
    const char *expected[] = { "B", "a", "b", "c", "x" };
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_PTR_NOT_NULL_FATAL(list[i]);
        CU_ASSERT_STRING_EQUAL(list[i], expected[i]);
    }
    CU_ASSERT_PTR_NULL(list[5]);
    ks_disk_list_free(list);
    /* Rename replaces the target and is durable at once. */
    CU_ASSERT_EQUAL(ks_disk_rename(env.world, 1, "b1/a", "b1/c"), KS_IO_OK);
    CU_ASSERT_FALSE(ks_disk_exists(env.world, 1, "b1/a"));
    CU_ASSERT_EQUAL(ks_disk_rename(env.world, 1, "b1/a", "b1/d"), KS_IO_NOT_FOUND);
    CU_ASSERT_EQUAL(ks_disk_delete(env.world, 1, "b1/b"), KS_IO_OK);
    CU_ASSERT_EQUAL(ks_disk_delete(env.world, 1, "b1/b"), KS_IO_NOT_FOUND);
    ks_world_node_crash(env.world, 1, true);
    ks_world_node_restart(env.world, 1);
    CU_ASSERT_FALSE(ks_disk_exists(env.world, 1, "b1/a"));
    CU_ASSERT_FALSE(ks_disk_exists(env.world, 1, "b1/b"));
    CU_ASSERT_TRUE(ks_disk_exists(env.world, 1, "b1/c"));
    /* Never fsynced: exists but empty after power loss (no torn write either). */
    ks_file *f = ks_disk_open(env.world, 1, "b1/c", 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(ks_disk_size(f), 0);
    ks_disk_close(f);
    /* A folder rename carries its files' durable state. */
    f = ks_disk_open(env.world, 1, "b1/x/y/seg", KS_DISK_CREATE, NULL);
    ks_disk_append(f, "abc", 3);
    ks_disk_fsync(f);
    ks_disk_append(f, "def", 3);
    CU_ASSERT_EQUAL(ks_disk_rename(env.world, 1, "b1/x", "b1/x-delete"), KS_IO_OK);
    CU_ASSERT_EQUAL(ks_world_disk_durable_size(env.world, 1, "b1/x-delete/y/seg"), 3);
    ks_disk_append(f, "g", 1); /* the open handle follows the file */
    CU_ASSERT_EQUAL(ks_disk_size(f), 7);
    ks_disk_close(f);
    CU_ASSERT_EQUAL(ks_disk_delete(env.world, 1, "b1/x-delete"), KS_IO_OK);
    CU_ASSERT_FALSE(ks_disk_exists(env.world, 1, "b1/x-delete"));
    CU_ASSERT_EQUAL(ks_world_disk_durable_size(env.world, 1, "b1/x-delete/y/seg"), -1);
    ks_test_env_deinit(&env);
}

/* Writes `text` to path's ".tmp", fsyncs it when asked, and renames it over
 * path, as core/log.c writes a checkpoint. */
static void replace_file(ks_world *world, const char *path, const char *text, bool sync)
{
    char *tmp = g_strdup_printf("%s.tmp", path);
    ks_file *f = ks_disk_open(world, 1, tmp, KS_DISK_CREATE | KS_DISK_TRUNCATE, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    ks_disk_append(f, text, strlen(text));
    if (sync) {
        ks_disk_fsync(f);
    }
    ks_disk_close(f);
    CU_ASSERT_EQUAL(ks_disk_rename(world, 1, tmp, path), KS_IO_OK);
    CU_ASSERT_FALSE(ks_disk_exists(world, 1, tmp));
    CU_ASSERT_EQUAL(ks_world_disk_durable_size(world, 1, tmp), -1);
    g_free(tmp);
}

/* The whole file at path, through a new handle, as a string. */
static char *read_text_at(ks_world *world, const char *path)
{
    ks_file *f = ks_disk_open(world, 1, path, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    size_t size = 0;
    char *text = (char *)read_whole(f, &size);
    text[size] = '\0';
    ks_disk_close(f);
    return text;
}

/* H2 (sim/disk.c): a file renamed over another in its folder takes over
 * the replaced record's place, so the name finds the moved record and its
 * durable state (not the host file taken as durable), and the replaced
 * file's cached bytes leave the node's totals. */
static void test_rename_replaces_record(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    replace_file(env.world, "b1/p/cp", "old-old", true);
    g_autofree char *first = read_text_at(env.world, "b1/p/cp");
    CU_ASSERT_STRING_EQUAL(first, "old-old");
    struct ks_world_disk_stats stats;
    ks_world_disk_stats(env.world, 1, &stats);
    CU_ASSERT_EQUAL(stats.cached_bytes, 7);
    CU_ASSERT_EQUAL(stats.fsync_count, 1);
    replace_file(env.world, "b1/p/cp", "new", true);
    ks_world_disk_stats(env.world, 1, &stats);
    CU_ASSERT_EQUAL(stats.cached_bytes, 3); /* the replaced file's 7 are gone */
    CU_ASSERT_EQUAL(stats.dirty_bytes, 0);
    CU_ASSERT_EQUAL(ks_world_disk_durable_size(env.world, 1, "b1/p/cp"), 3);
    g_autofree char *second = read_text_at(env.world, "b1/p/cp");
    CU_ASSERT_STRING_EQUAL(second, "new");
    /* Not fsynced: the name must reach the moved record, whose bytes are
     * not durable (a lost record would be found again as durable). */
    replace_file(env.world, "b1/p/cp", "unsynced", false);
    CU_ASSERT_EQUAL(ks_world_disk_durable_size(env.world, 1, "b1/p/cp"), 0);
    ks_world_disk_stats(env.world, 1, &stats);
    CU_ASSERT_EQUAL(stats.dirty_bytes, 8);
    CU_ASSERT_EQUAL(stats.cached_bytes, 8);
    /* A handle open on the replaced file keeps reading it (general path). */
    ks_file *old = ks_disk_open(env.world, 1, "b1/p/cp", 0, NULL);
    replace_file(env.world, "b1/p/cp", "newest", true);
    size_t size = 0;
    g_autofree uint8_t *kept = read_whole(old, &size);
    CU_ASSERT_EQUAL(size, 8);
    CU_ASSERT_NSTRING_EQUAL(kept, "unsynced", 8);
    ks_disk_close(old);
    ks_world_disk_stats(env.world, 1, &stats);
    CU_ASSERT_EQUAL(stats.dirty_bytes, 0);
    ks_world_node_crash(env.world, 1, true);
    ks_world_node_restart(env.world, 1);
    g_autofree char *after = read_text_at(env.world, "b1/p/cp");
    CU_ASSERT_STRING_EQUAL(after, "newest");
    /* A known file removed behind the world's back is not found. */
    ks_file *f = ks_disk_open(env.world, 1, "b1/p/gone.tmp", KS_DISK_CREATE, NULL);
    ks_disk_close(f);
    char *real = ks_world_real_path(env.world, "b1/p/gone.tmp");
    CU_ASSERT_EQUAL(g_unlink(real), 0);
    g_free(real);
    CU_ASSERT_EQUAL(ks_disk_rename(env.world, 1, "b1/p/gone.tmp", "b1/p/gone"), KS_IO_NOT_FOUND);
    CU_ASSERT_FALSE(ks_disk_exists(env.world, 1, "b1/p/gone"));
    ks_test_env_deinit(&env);
}

/* Two worlds alike: ks_disk_replace in one, the calls it stands for in the
 * other (replace_by_calls, core/log.c's old write_text_atomically). */
struct replace_twin {
    struct ks_test_env env[2];
};

static void twin_init(struct replace_twin *twin, uint64_t seed)
{
    for (int w = 0; w < 2; w++) {
        struct ks_world_config config = {
            .seed = seed,
            .node_count = 2,
            .disk_fsync_latency_ns = 1000000,
            .disk_bandwidth_bytes_per_s = 1000000000,
            .open_file_count_max = 3, /* descriptors evicted as it goes */
            .disk_writeback_expire_ns = 3 * 1000000000LL,
            .disk_writeback_interval_ns = 1 * 1000000000LL,
            .disk_dirty_limit_bytes = 9000,
            .disk_page_cache_bytes = 20000,
        };
        ks_test_env_init_config(&twin->env[w], &config);
    }
}

static void twin_replace(struct replace_twin *twin, const char *path, size_t byte_count,
                         uint8_t fill_byte, bool wait)
{
    uint8_t *bytes = g_malloc(byte_count);
    memset(bytes, fill_byte, byte_count);
    CU_ASSERT_EQUAL(ks_disk_replace(twin->env[0].world, 1, path, bytes, byte_count, wait),
                    KS_IO_OK);
    ks_world *world = twin->env[1].world;
    char *tmp = g_strdup_printf("%s.tmp", path);
    ks_file *f = ks_disk_open(world, 1, tmp, KS_DISK_CREATE | KS_DISK_TRUNCATE, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    ks_disk_append(f, bytes, byte_count);
    if (wait) {
        ks_disk_fsync(f);
    } else {
        ks_disk_fsync_background(f);
    }
    ks_disk_close(f);
    CU_ASSERT_EQUAL(ks_disk_rename(world, 1, tmp, path), KS_IO_OK);
    g_free(tmp);
    g_free(bytes);
}

static void twin_append(struct replace_twin *twin, const char *path, size_t byte_count)
{
    uint8_t *bytes = g_malloc0(byte_count);
    for (int w = 0; w < 2; w++) {
        ks_file *f = ks_disk_open(twin->env[w].world, 1, path, KS_DISK_CREATE, NULL);
        ks_disk_append(f, bytes, byte_count);
        ks_disk_close(f);
    }
    g_free(bytes);
}

/* The two worlds' disks agree on everything the model answers. */
static void twin_compare(struct replace_twin *twin, const char *const *paths, size_t path_count)
{
    struct ks_world_disk_stats stats[2];
    for (int w = 0; w < 2; w++) {
        ks_world_disk_stats(twin->env[w].world, 1, &stats[w]);
    }
    CU_ASSERT_EQUAL(stats[0].fsync_count, stats[1].fsync_count);
    CU_ASSERT_EQUAL(stats[0].writeback_pass_count, stats[1].writeback_pass_count);
    CU_ASSERT_EQUAL(stats[0].writeback_bytes, stats[1].writeback_bytes);
    CU_ASSERT_EQUAL(stats[0].throttle_count, stats[1].throttle_count);
    CU_ASSERT_EQUAL(stats[0].read_miss_bytes, stats[1].read_miss_bytes);
    CU_ASSERT_EQUAL(stats[0].dirty_bytes, stats[1].dirty_bytes);
    CU_ASSERT_EQUAL(stats[0].cached_bytes, stats[1].cached_bytes);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(twin->env[0].world, 1),
                    ks_disk_idle_at_ns(twin->env[1].world, 1));
    for (size_t i = 0; i < path_count; i++) {
        char *tmp = g_strdup_printf("%s.tmp", paths[i]);
        CU_ASSERT_EQUAL(ks_world_disk_durable_size(twin->env[0].world, 1, paths[i]),
                        ks_world_disk_durable_size(twin->env[1].world, 1, paths[i]));
        CU_ASSERT_EQUAL(ks_world_disk_durable_size(twin->env[0].world, 1, tmp),
                        ks_world_disk_durable_size(twin->env[1].world, 1, tmp));
        CU_ASSERT_EQUAL(ks_disk_exists(twin->env[0].world, 1, tmp),
                        ks_disk_exists(twin->env[1].world, 1, tmp));
        char *real[2];
        gchar *text[2] = { NULL, NULL };
        gsize size[2] = { 0, 0 };
        for (int w = 0; w < 2; w++) {
            real[w] = ks_world_real_path(twin->env[w].world, paths[i]);
            g_file_get_contents(real[w], &text[w], &size[w], NULL);
        }
        CU_ASSERT_EQUAL(size[0], size[1]);
        CU_ASSERT((text[0] == NULL) == (text[1] == NULL));
        if (text[0] != NULL && text[1] != NULL && size[0] == size[1]) {
            CU_ASSERT_EQUAL(memcmp(text[0], text[1], size[0]), 0);
        }
        for (int w = 0; w < 2; w++) {
            g_free(text[w]);
            g_free(real[w]);
        }
        g_free(tmp);
    }
}

/* H5 (sim/disk.c): ks_disk_replace changes the model as the calls it stands
 * for do: page cache (and its evictions), dirty totals, writeback by age and
 * the dirty limit's throttle, fsync counts and device time, waited for or
 * in the background, staged and unstaged sizes; with the general calls
 * taking over when a handle is open on the file or a `.tmp` is on the host;
 * and a power loss then leaves the same files. It leaves no `.tmp`. */
static void test_replace_matches_calls(void)
{
    static const char *const paths[] = { "b1/seg", "b1/p/cp", "b1/q/cp" };
    for (uint64_t seed = 1; seed <= 4; seed++) {
        struct replace_twin twin;
        twin_init(&twin, seed);
        twin_append(&twin, "b1/seg", 3000);
        twin_replace(&twin, "b1/p/cp", 2500, 'a', false); /* a new file */
        twin_compare(&twin, paths, G_N_ELEMENTS(paths));
        twin_append(&twin, "b1/seg", 2000);
        twin_replace(&twin, "b1/p/cp", 4000, 'b', true); /* over the limit: throttled */
        twin_compare(&twin, paths, G_N_ELEMENTS(paths));
        twin_replace(&twin, "b1/q/cp", 70000, 'c', false); /* past the staging size */
        twin_compare(&twin, paths, G_N_ELEMENTS(paths));
        for (int w = 0; w < 2; w++) {
            ks_world_run_until(twin.env[w].world, 5 * 1000000000LL); /* writeback by age */
        }
        struct ks_world_disk_stats seen;
        ks_world_disk_stats(twin.env[0].world, 1, &seen);
        CU_ASSERT(seen.throttle_count > 0 && seen.writeback_bytes > 0); /* the test's reach */
        twin_append(&twin, "b1/seg", 500);
        twin_replace(&twin, "b1/p/cp", 10, 'd', true);
        twin_compare(&twin, paths, G_N_ELEMENTS(paths));
        /* A handle open on the file: the general rename. */
        ks_file *open_file[2];
        for (int w = 0; w < 2; w++) {
            open_file[w] = ks_disk_open(twin.env[w].world, 1, "b1/p/cp", 0, NULL);
        }
        twin_replace(&twin, "b1/p/cp", 20, 'e', false);
        twin_compare(&twin, paths, G_N_ELEMENTS(paths));
        for (int w = 0; w < 2; w++) {
            ks_disk_close(open_file[w]);
        }
        /* A `.tmp` the world does not know is on the host: the general open. */
        for (int w = 0; w < 2; w++) {
            char *real = ks_world_real_path(twin.env[w].world, "b1/q/cp.tmp");
            CU_ASSERT_TRUE(g_file_set_contents(real, "stale", 5, NULL));
            g_free(real);
        }
        twin_replace(&twin, "b1/q/cp", 30, 'f', true);
        twin_compare(&twin, paths, G_N_ELEMENTS(paths));
        /* Unsynced data in the segment, then a power loss. */
        twin_append(&twin, "b1/seg", 700);
        twin_replace(&twin, "b1/p/cp", 40, 'g', false);
        for (int w = 0; w < 2; w++) {
            ks_world_node_crash(twin.env[w].world, 1, true);
            ks_world_node_restart(twin.env[w].world, 1);
        }
        twin_compare(&twin, paths, G_N_ELEMENTS(paths));
        for (int w = 0; w < 2; w++) {
            CU_ASSERT_FALSE(ks_disk_exists(twin.env[w].world, 1, "b1/p/cp.tmp"));
            ks_test_env_deinit(&twin.env[w]);
        }
    }
}

static void test_delete_while_open(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    ks_file *f = ks_disk_open(env.world, 1, "d/f", KS_DISK_CREATE, NULL);
    ks_disk_append(f, "12345", 5);
    CU_ASSERT_EQUAL(ks_disk_delete(env.world, 1, "d/f"), KS_IO_OK);
    CU_ASSERT_FALSE(ks_disk_exists(env.world, 1, "d/f"));
    char buffer[8];
    size_t n = 0;
    ks_disk_read(f, buffer, 5, 0, &n); /* POSIX: the open file lives on */
    CU_ASSERT_EQUAL(n, 5);
    CU_ASSERT_NSTRING_EQUAL(buffer, "12345", 5);
    /* A new file by the same name is a different file. */
    ks_file *g = ks_disk_open(env.world, 1, "d/f", KS_DISK_CREATE, NULL);
    CU_ASSERT_EQUAL(ks_disk_size(g), 0);
    ks_disk_close(f);
    ks_disk_close(g);
    ks_test_env_deinit(&env);
}

static void test_process_crash_keeps_everything(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    ks_file *f = ks_disk_open(env.world, 1, "n1/log", KS_DISK_CREATE, NULL);
    uint64_t state = 1;
    uint8_t data[3000];
    fill(data, sizeof data, &state);
    ks_disk_append(f, data, 1000);
    ks_disk_fsync(f);
    ks_disk_append(f, data + 1000, 2000);
    ks_disk_pwrite(f, "xyz", 3, 10);
    memcpy(data + 10, "xyz", 3);
    ks_world_node_crash(env.world, 1, false);
    ks_world_node_restart(env.world, 1);
    size_t size = 0;
    uint8_t *back = read_whole(f, &size);
    CU_ASSERT_EQUAL(size, 3000);
    CU_ASSERT_EQUAL(memcmp(back, data, 3000), 0);
    g_free(back);
    CU_ASSERT_EQUAL(ks_world_disk_durable_size(env.world, 1, "n1/log"), 1000);
    ks_disk_close(f);
    ks_test_env_deinit(&env);
}

enum tear_kind { TEAR_NONE, TEAR_PREFIX, TEAR_GARBAGE, TEAR_WHOLE_OR_GARBAGE };

/* Checks file == durable ++ torn(last) and classifies the tail. */
static enum tear_kind check_torn_tail(const uint8_t *file, size_t file_size, const uint8_t *durable,
                                      size_t durable_size, const uint8_t *last, size_t last_size)
{
    CU_ASSERT_FATAL(file_size >= durable_size);
    CU_ASSERT_EQUAL(memcmp(file, durable, durable_size), 0);
    size_t tail = file_size - durable_size;
    if (tail == 0) {
        return TEAR_NONE;
    }
    CU_ASSERT_FATAL(tail <= last_size);
    if (tail < last_size) {
        CU_ASSERT_EQUAL(file_size % 512, 0); /* cut at a sector boundary of the file */
        CU_ASSERT_EQUAL(memcmp(file + durable_size, last, tail), 0);
        return TEAR_PREFIX;
    }
    size_t garbage_max = last_size < 512 ? last_size : 512;
    CU_ASSERT_EQUAL(memcmp(file + durable_size, last, last_size - garbage_max), 0);
    return memcmp(file + durable_size, last, last_size) == 0 ? TEAR_WHOLE_OR_GARBAGE : TEAR_GARBAGE;
}

static void test_power_loss_torn_tail(void)
{
    int seen[4] = { 0 };
    for (uint64_t seed = 1; seed <= 200; seed++) {
        struct ks_test_env env;
        ks_test_env_init(&env, seed, 2);
        uint64_t state = seed * 7919;
        size_t durable_size = 1 + local_next(&state) % 5000;
        size_t last_size = 1 + local_next(&state) % 3000;
        bool several = local_next(&state) % 4 == 0; /* unsynced writes before the last */
        uint8_t *durable = g_malloc(durable_size);
        uint8_t *last = g_malloc(last_size);
        fill(durable, durable_size, &state);
        fill(last, last_size, &state);
        ks_file *f = ks_disk_open(env.world, 1, "b/seg.log", KS_DISK_CREATE, NULL);
        ks_disk_append(f, durable, durable_size / 2);
        ks_disk_fsync(f);
        ks_disk_append(f, durable + durable_size / 2, durable_size - durable_size / 2);
        ks_disk_fsync(f);
        if (several) {
            ks_disk_append(f, "lost", 4);
        }
        ks_disk_append(f, last, last_size);
        uint64_t fsyncs = ks_world_disk_fsync_count(env.world, 1);
        CU_ASSERT_EQUAL(fsyncs, 2);
        CU_ASSERT_EQUAL(ks_world_disk_durable_size(env.world, 1, "b/seg.log"),
                        (int64_t)durable_size);
        ks_world_node_crash(env.world, 1, true);
        size_t size = 0;
        uint8_t *back = read_whole(f, &size);
        if (several) {
            /* The last write is not contiguous with the durable content. */
            CU_ASSERT_EQUAL(size, durable_size);
            CU_ASSERT_EQUAL(memcmp(back, durable, durable_size), 0);
        } else {
            seen[check_torn_tail(back, size, durable, durable_size, last, last_size)]++;
        }
        /* What survived is durable now: a second power loss changes nothing. */
        CU_ASSERT_EQUAL(ks_world_disk_durable_size(env.world, 1, "b/seg.log"), (int64_t)size);
        g_free(back);
        ks_disk_close(f);
        g_free(durable);
        g_free(last);
        ks_test_env_deinit(&env);
    }
    CU_ASSERT(seen[TEAR_NONE] > 10);
    CU_ASSERT(seen[TEAR_PREFIX] > 10);
    CU_ASSERT(seen[TEAR_GARBAGE] > 10);
}

static void test_power_loss_undo(void)
{
    for (uint64_t seed = 1; seed <= 40; seed++) {
        struct ks_test_env env;
        ks_test_env_init(&env, seed, 3);
        uint64_t state = seed;
        uint8_t durable[4096];
        fill(durable, sizeof durable, &state);
        ks_file *f = ks_disk_open(env.world, 2, "idx", KS_DISK_CREATE, NULL);
        ks_disk_append(f, durable, sizeof durable);
        ks_disk_fsync(f);
        /* Rewrites below the durable size, overlapping, several times. */
        for (int i = 0; i < 20; i++) {
            uint8_t junk[300];
            fill(junk, sizeof junk, &state);
            int64_t position = (int64_t)(local_next(&state) % 4200);
            ks_disk_pwrite(f, junk, sizeof junk, position);
        }
        ks_disk_truncate(f, 1000);
        ks_disk_append(f, "after truncate", 14);
        uint8_t junk[700];
        fill(junk, sizeof junk, &state);
        bool end_with_truncate = seed % 2 == 0;
        int64_t last_position = 2000;
        if (end_with_truncate) {
            ks_disk_truncate(f, 1500);
        } else {
            ks_disk_pwrite(f, junk, sizeof junk, last_position);
        }
        ks_world_node_crash(env.world, 2, true);
        size_t size = 0;
        uint8_t *back = read_whole(f, &size);
        CU_ASSERT_EQUAL(size, sizeof durable);
        if (end_with_truncate) {
            CU_ASSERT_EQUAL(memcmp(back, durable, sizeof durable), 0);
        } else {
            /* Outside the last write: exactly durable. Inside: durable, a
             * sector-cut prefix of the write, or the write with garbage. */
            CU_ASSERT_EQUAL(memcmp(back, durable, (size_t)last_position), 0);
            size_t after = (size_t)last_position + sizeof junk;
            CU_ASSERT_EQUAL(memcmp(back + after, durable + after, sizeof durable - after), 0);
            bool is_durable =
                memcmp(back + last_position, durable + last_position, sizeof junk) == 0;
            size_t same = 0;
            while (same < sizeof junk && back[last_position + same] == junk[same]) {
                same++;
            }
            /* A prefix cut at a file sector boundary c, durable after it. */
            bool is_prefix = false;
            for (size_t c = 2048; c < after; c += 512) {
                size_t kept = c - (size_t)last_position;
                if (same >= kept && memcmp(back + c, durable + c, after - c) == 0) {
                    is_prefix = true;
                }
            }
            bool is_garbage_tail = same >= sizeof junk - 512;
            CU_ASSERT(is_durable || is_prefix || is_garbage_tail);
        }
        g_free(back);
        ks_disk_close(f);
        ks_test_env_deinit(&env);
    }
}

static bool arrays_equal(const GByteArray *a, const GByteArray *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

/* The file after power loss must be one of the outcomes the fault model
 * allows for (durable content D, last write W at p). */
static bool allowed_after_power_loss(const GByteArray *file, const GByteArray *durable,
                                     bool last_is_write, bool synced, int64_t p, const uint8_t *w,
                                     int64_t n)
{
    if (arrays_equal(file, durable)) {
        return true; /* dropped (or nothing to tear) */
    }
    if (!last_is_write || !synced || p > (int64_t)durable->len) {
        return false;
    }
    int64_t end = p + n;
    /* Outside [p, end): exactly durable. */
    for (int64_t i = 0; i < (int64_t)file->len; i++) {
        if (i >= p && i < end) {
            continue;
        }
        if (i >= (int64_t)durable->len || file->data[i] != durable->data[i]) {
            return false;
        }
    }
    int64_t same = 0;
    while (same < n && p + same < (int64_t)file->len && file->data[p + same] == w[same]) {
        same++;
    }
    /* Whole with a garbage tail of at most min(n, 512) bytes. */
    if ((int64_t)file->len == MAX((int64_t)durable->len, end) && same >= n - MIN(n, 512)) {
        return true;
    }
    /* Prefix cut at a sector boundary c of the file, durable after it. */
    for (int64_t c = (p / 512 + 1) * 512; c < end; c += 512) {
        if ((int64_t)file->len != MAX((int64_t)durable->len, c) || same < c - p) {
            continue;
        }
        bool rest_durable = true;
        for (int64_t i = c; i < MIN(end, (int64_t)file->len); i++) {
            rest_durable = rest_durable && file->data[i] == durable->data[i];
        }
        if (rest_durable) {
            return true;
        }
    }
    return false;
}

/* A model check: random appends, pwrites (also past the end), truncates
 * (down and up) and fsyncs against an in-memory model of the durable content,
 * then power loss. */
static void test_power_loss_model(void)
{
    int torn_count = 0;
    for (uint64_t seed = 1; seed <= 120; seed++) {
        struct ks_test_env env;
        ks_test_env_init(&env, seed, 2);
        uint64_t state = seed * 104729;
        GByteArray *current = g_byte_array_new();
        GByteArray *durable = g_byte_array_new();
        bool synced = false, last_is_write = false;
        int64_t last_p = 0, last_n = 0;
        uint8_t last_w[1500];
        ks_file *f = ks_disk_open(env.world, 1, "m/file", KS_DISK_CREATE, NULL);
        int ops = 5 + (int)(local_next(&state) % 30);
        for (int op = 0; op < ops; op++) {
            uint64_t kind = local_next(&state) % 10;
            if (kind < 6) {
                int64_t n = 1 + (int64_t)(local_next(&state) % sizeof last_w);
                int64_t p = kind < 3 ? (int64_t)current->len
                                     : (int64_t)(local_next(&state) % (current->len + 600));
                fill(last_w, (size_t)n, &state);
                if (kind < 3) {
                    ks_disk_append(f, last_w, (size_t)n);
                } else {
                    ks_disk_pwrite(f, last_w, (size_t)n, p);
                }
                if ((int64_t)current->len < p + n) {
                    size_t old = current->len;
                    g_byte_array_set_size(current, (guint)(p + n));
                    memset(current->data + old, 0, current->len - old);
                }
                memcpy(current->data + p, last_w, (size_t)n);
                last_is_write = true;
                last_p = p;
                last_n = n;
            } else if (kind < 8) {
                int64_t size = (int64_t)(local_next(&state) % (current->len + 800));
                ks_disk_truncate(f, size);
                size_t old = current->len;
                g_byte_array_set_size(current, (guint)size);
                if (current->len > old) {
                    memset(current->data + old, 0, current->len - old);
                }
                last_is_write = false;
            } else {
                ks_disk_fsync(f);
                g_byte_array_set_size(durable, 0);
                g_byte_array_append(durable, current->data, current->len);
                synced = true;
                last_is_write = false;
            }
            CU_ASSERT_EQUAL_FATAL(ks_disk_size(f), (int64_t)current->len);
        }
        size_t size = 0;
        uint8_t *before = read_whole(f, &size);
        CU_ASSERT_EQUAL(size, current->len);
        CU_ASSERT(size == 0 || memcmp(before, current->data, size) == 0);
        g_free(before);
        ks_world_node_crash(env.world, 1, true);
        uint8_t *after = read_whole(f, &size);
        GByteArray *file = g_byte_array_new();
        g_byte_array_append(file, after, (guint)size);
        CU_ASSERT_TRUE(
            allowed_after_power_loss(file, durable, last_is_write, synced, last_p, last_w, last_n));
        torn_count += !arrays_equal(file, durable);
        g_free(after);
        g_byte_array_unref(file);
        g_byte_array_unref(current);
        g_byte_array_unref(durable);
        ks_disk_close(f);
        ks_test_env_deinit(&env);
    }
    CU_ASSERT(torn_count > 5); /* the model was exercised beyond "drop" */
}

static void test_power_loss_scopes_to_node(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 3);
    ks_file *mine = ks_disk_open(env.world, 1, "n1/f", KS_DISK_CREATE, NULL);
    ks_file *other = ks_disk_open(env.world, 2, "n2/f", KS_DISK_CREATE, NULL);
    ks_disk_append(mine, "aaaa", 4);
    ks_disk_append(other, "bbbb", 4);
    ks_disk_close(mine); /* closed files keep their durable state */
    ks_world_node_crash(env.world, 1, true);
    mine = ks_disk_open(env.world, 1, "n1/f", 0, NULL);
    CU_ASSERT_TRUE(ks_disk_size(mine) <= 4); /* empty, or the torn single write */
    CU_ASSERT_EQUAL(ks_disk_size(other), 4);
    ks_disk_close(mine);
    ks_disk_close(other);
    ks_test_env_deinit(&env);
}

static void test_corrupt(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    ks_file *f = ks_disk_open(env.world, 1, "c", KS_DISK_CREATE, NULL);
    ks_disk_append(f, "abcdefgh", 8);
    ks_disk_fsync(f);
    ks_disk_pwrite(f, "XY", 2, 2); /* unsynced overwrite of durable bytes */
    CU_ASSERT_TRUE(ks_world_disk_corrupt(env.world, 1, "c", 1, 3));
    CU_ASSERT_FALSE(ks_world_disk_corrupt(env.world, 1, "c", 7, 3)); /* past the end */
    CU_ASSERT_FALSE(ks_world_disk_corrupt(env.world, 1, "nope", 0, 1));
    uint8_t buffer[8];
    size_t n = 0;
    ks_disk_read(f, buffer, 8, 0, &n);
    CU_ASSERT_EQUAL(buffer[1], (uint8_t)('b' ^ 0xFF));
    CU_ASSERT_EQUAL(buffer[2], (uint8_t)('X' ^ 0xFF));
    CU_ASSERT_EQUAL(buffer[4], 'e');
    ks_disk_truncate(f, 8); /* so that no torn write is drawn */
    ks_world_node_crash(env.world, 1, true);
    ks_disk_read(f, buffer, 8, 0, &n);
    CU_ASSERT_EQUAL(n, 8);
    CU_ASSERT_EQUAL(buffer[0], 'a');
    CU_ASSERT_EQUAL(buffer[1], (uint8_t)('b' ^ 0xFF)); /* durably flipped */
    CU_ASSERT_EQUAL(buffer[2], (uint8_t)('c' ^ 0xFF)); /* the durable byte, flipped */
    CU_ASSERT_EQUAL(buffer[3], (uint8_t)('d' ^ 0xFF));
    CU_ASSERT_EQUAL(buffer[4], 'e');
    ks_disk_close(f);
    ks_test_env_deinit(&env);
}

static int count_fds(void)
{
    int count = 0;
    DIR *dir = opendir("/proc/self/fd");
    if (dir == NULL) {
        return -1;
    }
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] != '.') {
            count++;
        }
    }
    closedir(dir);
    return count;
}

static void test_descriptor_lru(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    int baseline = count_fds();
    enum { FILES = 5000 };
    ks_file **files = g_new(ks_file *, FILES);
    char path[64];
    for (int i = 0; i < FILES; i++) {
        snprintf(path, sizeof path, "many/%02d/f%05d", i % 50, i);
        files[i] = ks_disk_open(env.world, 1, path, KS_DISK_CREATE, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(files[i]);
        ks_disk_append(files[i], &i, sizeof i);
    }
    int peak = count_fds();
    /* Second pass in another order forces reopening. */
    for (int k = 0; k < FILES; k++) {
        int i = (k * 7919) % FILES;
        ks_disk_append(files[i], &i, sizeof i);
    }
    int after = count_fds();
    if (baseline >= 0) {
        CU_ASSERT(peak - baseline <= 512);
        CU_ASSERT(after - baseline <= 512);
    }
    for (int i = 0; i < FILES; i++) {
        int values[2] = { -1, -1 };
        size_t n = 0;
        ks_disk_read(files[i], values, sizeof values, 0, &n);
        CU_ASSERT_EQUAL(n, sizeof values);
        CU_ASSERT_EQUAL(values[0], i);
        CU_ASSERT_EQUAL(values[1], i);
        ks_disk_close(files[i]);
    }
    g_free(files);
    ks_test_env_deinit(&env);
    CU_ASSERT(count_fds() <= baseline);
}

#define MS  1000000ull
#define SEC 1000000000ull

/* C1, C2: a page cache in front of a serial device. Page-cache writes and
 * cached reads are free; an fsync costs its dirty bytes and the latency; a
 * slow disk slows device requests only; a background fsync keeps the caller
 * free but occupies the device. */
static void test_cost_model(void)
{
    struct ks_world_config config = {
        .seed = 1,
        .node_count = 3,
        .disk_fsync_latency_ns = 2000000,
        .disk_bandwidth_bytes_per_s = 1000000000, /* 1 byte per ns */
    };
    struct ks_test_env env;
    ks_test_env_init_config(&env, &config);
    ks_world *world = env.world;
    ks_file *f = ks_disk_open(world, 1, "f", KS_DISK_CREATE, NULL);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 0);
    uint8_t block[4000] = { 0 };
    ks_disk_append(f, block, 4000);
    ks_disk_append(f, block, 1000);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 0); /* the page cache */
    ks_disk_fsync(f);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 5000 + 2000000); /* 5000 dirty bytes */
    size_t n;
    ks_disk_read(f, block, 100, 0, &n); /* page cache: free */
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 2005000);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 2), 0); /* another node's disk */
    ks_world_run_until(world, 3000000);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 3000000); /* >= now */
    /* A slow disk: writes and cached reads still free, an fsync pays. */
    ks_world_disk_set_node_delay(world, 1, 500);
    ks_disk_append(f, block, 100);
    ks_disk_read(f, block, 100, 0, &n);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 3000000);
    ks_disk_fsync(f);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 3000000 + 100 + 2000000 + 500);
    ks_world_disk_set_node_delay(world, 1, 0);
    /* A background fsync: the caller does not wait, a later fsync queues
     * behind it on the device. */
    ks_world_run_until(world, 10000000);
    ks_disk_append(f, block, 1000);
    ks_disk_fsync_background(f);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 10000000);
    ks_disk_append(f, block, 10);
    ks_disk_fsync(f);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 10000000 + 1000 + 2000000 + 10 + 2000000);
    CU_ASSERT_EQUAL(ks_world_disk_fsync_count(world, 1), 4);
    CU_ASSERT_EQUAL(ks_world_disk_fsync_count(world, 2), 0);
    ks_disk_close(f);
    ks_test_env_deinit(&env);
}

/* A world of 2 nodes whose disk fsyncs in 1 us and moves 1 byte per ns,
 * with a page cache of cache_bytes (0: the default). */
static void init_quick_disk(struct ks_test_env *env, uint64_t cache_bytes)
{
    struct ks_world_config config = {
        .seed = 1,
        .node_count = 2,
        .disk_fsync_latency_ns = 1000,
        .disk_bandwidth_bytes_per_s = 1000000000, /* 1 byte per ns */
        .disk_page_cache_bytes = cache_bytes,
    };
    ks_test_env_init_config(env, &config);
}

/* P1, P2: what a read costs. Bytes written in this world are cached; after a
 * power loss nothing is, and a read pays for the bytes it misses once; a
 * process crash keeps the cache; with a small cache, the least recently
 * touched clean file is evicted and costs again. */
static void test_page_cache(void)
{
    struct ks_test_env env;
    init_quick_disk(&env, 6000);
    ks_world *world = env.world;
    uint8_t block[4000] = { 0 };
    size_t n = 0;
    ks_file *a = ks_disk_open(world, 1, "a", KS_DISK_CREATE, NULL);
    ks_disk_append(a, block, 4000);
    ks_disk_fsync(a);
    ks_time_ns idle = ks_disk_idle_at_ns(world, 1);
    ks_disk_read(a, block, 4000, 0, &n);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), idle); /* written here: cached */
    ks_world_node_crash(world, 1, false);
    ks_world_node_restart(world, 1);
    ks_disk_read(a, block, 4000, 0, &n);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1),
                    ks_world_now_ns(world)); /* process crash: cached */
    ks_world_node_crash(world, 1, true);
    ks_world_node_restart(world, 1);
    ks_world_run_until(world, 1 * SEC);
    ks_disk_read(a, block, 1000, 1000, &n);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 1 * SEC + 1000); /* power loss: cold */
    ks_disk_read(a, block, 2000, 0, &n);                           /* misses [0, 1000) only */
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 1 * SEC + 2000);
    ks_disk_read(a, block, 2000, 0, &n);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 1 * SEC + 2000); /* now cached */
    struct ks_world_disk_stats stats;
    ks_world_disk_stats(world, 1, &stats);
    CU_ASSERT_EQUAL(stats.read_miss_bytes, 2000);
    CU_ASSERT_EQUAL(stats.cached_bytes, 2000);
    /* A second file of 5000 bytes: 7000 > 6000, so `a` (clean, older) goes. */
    ks_file *b = ks_disk_open(world, 1, "b", KS_DISK_CREATE, NULL);
    uint8_t big[5000] = { 0 };
    ks_disk_append(b, big, 5000);
    ks_world_disk_stats(world, 1, &stats);
    CU_ASSERT_EQUAL(stats.cached_bytes, 5000);
    ks_disk_read(a, block, 2000, 0, &n);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 1 * SEC + 4000); /* evicted: costs again */
    /* b is dirty: it stays although a's read took the node over again. */
    ks_world_disk_stats(world, 1, &stats);
    CU_ASSERT_EQUAL(stats.cached_bytes, 7000);
    ks_disk_close(a);
    ks_disk_close(b);
    ks_test_env_deinit(&env);
}

/* P2 with S3 (the cache list relinked in place): eviction takes the least
 * recently touched clean file, so a read of the oldest file moves it to the
 * front and the next oldest goes instead. Three clean 3000-byte files a, b,
 * c in a 10000-byte cache; a read of a; then a dirty 3000-byte d takes the
 * node over, and b alone is evicted: reading a and c misses nothing, b all. */
static void test_page_cache_evicts_least_recently_touched(void)
{
    struct ks_test_env env;
    init_quick_disk(&env, 10000);
    ks_world *world = env.world;
    uint8_t block[3000] = { 0 };
    size_t n = 0;
    const char *names[] = { "a", "b", "c", "d" };
    ks_file *files[4];
    for (int i = 0; i < 4; i++) {
        files[i] = ks_disk_open(world, 1, names[i], KS_DISK_CREATE, NULL);
    }
    for (int i = 0; i < 3; i++) {
        ks_disk_append(files[i], block, sizeof(block));
        ks_disk_fsync(files[i]);
    }
    ks_disk_read(files[0], block, sizeof(block), 0, &n); /* a to the front */
    struct ks_world_disk_stats stats;
    ks_world_disk_stats(world, 1, &stats);
    CU_ASSERT_EQUAL(stats.read_miss_bytes, 0);
    CU_ASSERT_EQUAL(stats.cached_bytes, 9000);
    ks_disk_append(files[3], block, sizeof(block)); /* 12000: b, the oldest, goes */
    ks_world_disk_stats(world, 1, &stats);
    CU_ASSERT_EQUAL(stats.cached_bytes, 9000);
    ks_disk_read(files[0], block, sizeof(block), 0, &n);
    ks_disk_read(files[2], block, sizeof(block), 0, &n);
    ks_world_disk_stats(world, 1, &stats);
    CU_ASSERT_EQUAL(stats.read_miss_bytes, 0);
    ks_disk_read(files[1], block, sizeof(block), 0, &n);
    ks_world_disk_stats(world, 1, &stats);
    CU_ASSERT_EQUAL(stats.read_miss_bytes, 3000);
    for (int i = 0; i < 4; i++) {
        ks_disk_close(files[i]);
    }
    ks_test_env_deinit(&env);
}

/* ks_disk_cached is true exactly for ranges inside the file's cached range
 * (P1); ks_disk_rewrite_count moves with every change below the end (a
 * write inside the file, a truncate, corruption, a power loss) and never
 * with an append. */
static void test_cached_range_and_rewrites(void)
{
    struct ks_test_env env;
    init_quick_disk(&env, 0);
    ks_world *world = env.world;
    uint8_t block[4000] = { 0 };
    size_t n = 0;
    ks_file *a = ks_disk_open(world, 1, "a", KS_DISK_CREATE, NULL);
    uint64_t rewrites = ks_disk_rewrite_count(a);
    ks_disk_append(a, block, 4000);
    ks_disk_append(a, block, 1000);
    CU_ASSERT_EQUAL(ks_disk_rewrite_count(a), rewrites); /* appends */
    CU_ASSERT(ks_disk_cached(a, 0, 5000));
    CU_ASSERT(ks_disk_cached(a, 4500, 500));
    CU_ASSERT_FALSE(ks_disk_cached(a, 4500, 501)); /* past the end */
    CU_ASSERT_FALSE(ks_disk_cached(a, 100, 0));
    ks_disk_fsync(a);
    ks_world_node_crash(world, 1, true);
    ks_world_node_restart(world, 1);
    CU_ASSERT(ks_disk_rewrite_count(a) > rewrites); /* power loss */
    rewrites = ks_disk_rewrite_count(a);
    CU_ASSERT_FALSE(ks_disk_cached(a, 0, 1));
    ks_disk_read(a, block, 1000, 1000, &n);
    CU_ASSERT(ks_disk_cached(a, 1000, 1000));
    CU_ASSERT_FALSE(ks_disk_cached(a, 999, 2));
    CU_ASSERT_FALSE(ks_disk_cached(a, 1999, 2));
    CU_ASSERT_EQUAL(ks_disk_rewrite_count(a), rewrites); /* reads */
    ks_disk_pwrite(a, block, 10, 100);
    CU_ASSERT(ks_disk_rewrite_count(a) > rewrites);
    rewrites = ks_disk_rewrite_count(a);
    ks_disk_truncate(a, 4000);
    CU_ASSERT(ks_disk_rewrite_count(a) > rewrites);
    rewrites = ks_disk_rewrite_count(a);
    CU_ASSERT(ks_world_disk_corrupt(world, 1, "a", 10, 1));
    CU_ASSERT(ks_disk_rewrite_count(a) > rewrites);
    ks_disk_close(a);
    ks_test_env_deinit(&env);
}

static ks_world *writeback_world(struct ks_test_env *env, uint64_t seed, bool aligned,
                                 uint64_t dirty_limit_bytes)
{
    struct ks_world_config config = {
        .seed = seed,
        .node_count = 3,
        .disk_fsync_latency_ns = 2 * MS,
        .disk_bandwidth_bytes_per_s = 1000000000, /* 1 byte per ns */
        .disk_writeback_expire_ns = 30 * SEC,
        .disk_writeback_interval_ns = 5 * SEC,
        .disk_writeback_aligned = aligned,
        .disk_dirty_limit_bytes = dirty_limit_bytes,
    };
    ks_test_env_init_config(env, &config);
    return env->world;
}

/* W1, W2: a file dirty since 1 s is written back, whole, at the first
 * flusher wake-up at or after 31 s (35 s, wake-ups every 5 s from 0); a
 * write after that makes it dirty again with a new age. A power loss keeps
 * what was written back. The flusher is the machine's: it goes on through a
 * process crash. */
static void test_writeback_by_age(void)
{
    struct ks_test_env env;
    ks_world *world = writeback_world(&env, 1, true, 0);
    uint8_t block[1000];
    uint64_t state = 3;
    fill(block, sizeof block, &state);
    ks_world_run_until(world, 1 * SEC);
    ks_file *f = ks_disk_open(world, 1, "n1/log", KS_DISK_CREATE, NULL);
    ks_disk_append(f, block, 100);
    ks_world_run_until(world, 20 * SEC);
    ks_disk_append(f, block + 100, 100); /* the same dirty period: no new age */
    ks_world_run_until(world, 35 * SEC - 1);
    CU_ASSERT_EQUAL(ks_world_disk_durable_size(world, 1, "n1/log"), 0);
    ks_world_run_until(world, 35 * SEC);
    CU_ASSERT_EQUAL(ks_world_disk_durable_size(world, 1, "n1/log"), 200);
    struct ks_world_disk_stats stats;
    ks_world_disk_stats(world, 1, &stats);
    CU_ASSERT_EQUAL(stats.writeback_bytes, 200);
    CU_ASSERT_EQUAL(stats.writeback_pass_count, 1);
    CU_ASSERT_EQUAL(stats.dirty_bytes, 0);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 35 * SEC); /* nobody waited for it */
    /* Dirty again at 36 s: written back at 70 s (66 s rounded up). */
    ks_world_run_until(world, 36 * SEC);
    ks_disk_append(f, block + 200, 300);
    ks_world_node_crash(world, 1, false); /* the process dies, the OS does not */
    ks_world_run_until(world, 70 * SEC - 1);
    CU_ASSERT_EQUAL(ks_world_disk_durable_size(world, 1, "n1/log"), 200);
    ks_world_run_until(world, 70 * SEC);
    CU_ASSERT_EQUAL(ks_world_disk_durable_size(world, 1, "n1/log"), 500);
    ks_world_node_restart(world, 1);
    ks_world_run_until(world, 71 * SEC);
    ks_disk_append(f, block + 500, 500);
    ks_world_run_until(world, 80 * SEC);
    ks_world_node_crash(world, 1, true);
    ks_world_node_restart(world, 1);
    size_t size = 0;
    uint8_t *back = read_whole(f, &size);
    /* The write after the last writeback may survive in part (a torn tail). */
    CU_ASSERT(size >= 500 && size <= 1000);
    CU_ASSERT_EQUAL(memcmp(back, block, 500), 0);
    g_free(back);
    ks_disk_close(f);
    ks_test_env_deinit(&env);
}

/* `never`: nothing is written back; a power loss at 10 minutes keeps only
 * what was fsynced. The flusher's wake-ups are lazy: a node with nothing
 * dirty costs nothing, and an idle hour runs through in one step. */
static void test_writeback_never(void)
{
    struct ks_world_config config = {
        .seed = 1,
        .node_count = 2,
        .disk_writeback_expire_ns = KS_TIME_NEVER,
        .disk_writeback_interval_ns = 5 * SEC,
    };
    struct ks_test_env env;
    ks_test_env_init_config(&env, &config);
    ks_file *f = ks_disk_open(env.world, 1, "log", KS_DISK_CREATE, NULL);
    ks_disk_append(f, "abc", 3);
    ks_disk_fsync(f);
    ks_disk_append(f, "defgh", 5);
    ks_world_run_until(env.world, 600 * SEC);
    CU_ASSERT_EQUAL(ks_world_disk_durable_size(env.world, 1, "log"), 3);
    struct ks_world_disk_stats stats;
    ks_world_disk_stats(env.world, 1, &stats);
    CU_ASSERT_EQUAL(stats.writeback_bytes, 0);
    CU_ASSERT_EQUAL(stats.dirty_bytes, 5);
    ks_disk_close(f);
    ks_test_env_deinit(&env);
}

/* W2: with random phases, each node's flusher wakes at its own point of the
 * interval, the same for the same seed and different for another. */
static void test_writeback_phase(void)
{
    ks_time_ns durable_at[2][3] = { { 0 } };
    for (int round = 0; round < 2; round++) {
        struct ks_test_env env;
        ks_world *world = writeback_world(&env, round == 0 ? 7 : 8, false, 0);
        ks_file *files[3] = { NULL };
        for (ks_node_id node = 1; node <= 2; node++) {
            char path[16];
            g_snprintf(path, sizeof path, "n%u", node);
            files[node] = ks_disk_open(world, node, path, KS_DISK_CREATE, NULL);
            ks_disk_append(files[node], "x", 1);
        }
        for (ks_time_ns t = 30 * SEC; t <= 36 * SEC; t += 10 * MS) {
            ks_world_run_until(world, t);
            for (ks_node_id node = 1; node <= 2; node++) {
                char path[16];
                g_snprintf(path, sizeof path, "n%u", node);
                if (durable_at[round][node] == 0 &&
                    ks_world_disk_durable_size(world, node, path) == 1) {
                    durable_at[round][node] = t;
                }
            }
        }
        for (ks_node_id node = 1; node <= 2; node++) {
            CU_ASSERT(durable_at[round][node] >= 30 * SEC);
            CU_ASSERT(durable_at[round][node] < 35 * SEC + 10 * MS);
            ks_disk_close(files[node]);
        }
        ks_test_env_deinit(&env);
    }
    CU_ASSERT(durable_at[0][1] != durable_at[0][2] || durable_at[1][1] != durable_at[1][2]);
    CU_ASSERT(durable_at[0][1] != durable_at[1][1] || durable_at[0][2] != durable_at[1][2]);
}

/* W3: above the dirty limit a writer waits while the oldest dirty data is
 * written back (at least 200 ms of bandwidth); below it writes are free. */
static void test_dirty_limit(void)
{
    struct ks_test_env env;
    ks_world *world = writeback_world(&env, 1, true, 1000000);
    static uint8_t block[600000];
    ks_file *old = ks_disk_open(world, 1, "old", KS_DISK_CREATE, NULL);
    ks_file *young = ks_disk_open(world, 1, "young", KS_DISK_CREATE, NULL);
    ks_disk_append(old, block, 600000);
    ks_world_run_until(world, 1 * SEC);
    ks_disk_append(young, block, 300000);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 1 * SEC); /* 900 kB dirty: free */
    ks_disk_append(young, block, 300000);                   /* 1.2 MB: over */
    struct ks_world_disk_stats stats;
    ks_world_disk_stats(world, 1, &stats);
    CU_ASSERT_EQUAL(stats.throttle_count, 1);
    /* 200 ms of 1 GB/s is 200 MB: more than everything, so all of it goes,
     * oldest file first. */
    CU_ASSERT_EQUAL(stats.writeback_bytes, 1200000);
    CU_ASSERT_EQUAL(stats.dirty_bytes, 0);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 1 * SEC + 1200000);
    CU_ASSERT_EQUAL(ks_world_disk_durable_size(world, 1, "old"), 600000);
    CU_ASSERT_EQUAL(ks_world_disk_durable_size(world, 1, "young"), 600000);
    ks_disk_close(old);
    ks_disk_close(young);
    ks_test_env_deinit(&env);
}

/* W1, W3 with a slow disk of 1 MB/s: a throttled writer writes back only the
 * excess or 200 ms of bandwidth, the oldest appended bytes of the oldest
 * file; the rest of that file stays dirty, and a power loss keeps exactly
 * the written-back prefix (and maybe part of the next write). */
static void test_dirty_limit_partial(void)
{
    struct ks_world_config config = {
        .seed = 1,
        .node_count = 2,
        .disk_bandwidth_bytes_per_s = 1000000, /* 1 byte per us */
        .disk_dirty_limit_bytes = 500000,
    };
    struct ks_test_env env;
    ks_test_env_init_config(&env, &config);
    ks_world *world = env.world;
    static uint8_t block[100000];
    uint64_t state = 9;
    fill(block, sizeof block, &state);
    ks_file *f = ks_disk_open(world, 1, "log", KS_DISK_CREATE, NULL);
    for (int i = 0; i < 6; i++) {
        ks_disk_append(f, block, sizeof block);
    }
    /* 600 kB dirty > 500 kB: 200 ms at 1 MB/s = 200 kB written back. */
    CU_ASSERT_EQUAL(ks_world_disk_durable_size(world, 1, "log"), 200000);
    CU_ASSERT_EQUAL(ks_disk_idle_at_ns(world, 1), 200 * MS);
    ks_world_node_crash(world, 1, true);
    ks_world_node_restart(world, 1);
    CU_ASSERT(ks_disk_size(f) >= 200000 && ks_disk_size(f) <= 300000);
    ks_disk_close(f);
    ks_test_env_deinit(&env);
}

void ks_test_register_disk(void)
{
    static const struct ks_test_case cases[] = {
        { "basic_io", test_basic_io },
        { "S4: the staging buffers stay within their budget", test_staging_budget },
        { "whole_file_ops", test_whole_file_ops },
        { "delete_while_open", test_delete_while_open },
        { "rename_replaces_record", test_rename_replaces_record },
        { "replace_matches_calls", test_replace_matches_calls },
        { "process_crash_keeps_everything", test_process_crash_keeps_everything },
        { "power_loss_torn_tail", test_power_loss_torn_tail },
        { "power_loss_undo", test_power_loss_undo },
        { "power_loss_model", test_power_loss_model },
        { "power_loss_scopes_to_node", test_power_loss_scopes_to_node },
        { "corrupt", test_corrupt },
        { "descriptor_lru", test_descriptor_lru },
        { "cost_model", test_cost_model },
        { "page_cache", test_page_cache },
        { "page_cache_lru_order", test_page_cache_evicts_least_recently_touched },
        { "cached_range_and_rewrites", test_cached_range_and_rewrites },
        { "writeback_by_age", test_writeback_by_age },
        { "writeback_never", test_writeback_never },
        { "writeback_phase", test_writeback_phase },
        { "dirty_limit", test_dirty_limit },
        { "dirty_limit_partial", test_dirty_limit_partial },
    };
    KS_TEST_ADD_SUITE("sim/disk", cases);
}
