/* tests/sim/test_host_failure.c: a failing host call under the disk.
 *
 * Goal: when the real disk refuses a write (full, or over a file size
 * limit), the world records a message naming the real file and the cause
 * and jumps to the escape its driver set, once; tearing the world down
 * afterwards writes nothing more and does not crash. Method: a file size
 * limit (RLIMIT_FSIZE, with SIGXFSZ ignored so that the write fails with
 * EFBIG) set around appends through the disk seam, restored afterwards. */
#include "../../sim/world.h"
#include "../testlib.h"

#include <glib/gstdio.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

static void test_host_failure_escapes(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 3, 2);
    enum ks_io_result result;
    ks_file *file = ks_disk_open(env.world, 1, "b1/p-0/0.log", KS_DISK_CREATE, &result);
    CU_ASSERT_PTR_NOT_NULL_FATAL(file);
    static uint8_t chunk[16384];
    memset(chunk, 0x5a, sizeof chunk);

    struct rlimit saved_limit;
    CU_ASSERT_FATAL(getrlimit(RLIMIT_FSIZE, &saved_limit) == 0);
    void (*saved_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = { 32768, saved_limit.rlim_max };
    CU_ASSERT_FATAL(setrlimit(RLIMIT_FSIZE, &limit) == 0);

    jmp_buf escape;
    volatile int appended = 0;
    volatile bool escaped = false;
    if (setjmp(escape) == 0) {
        ks_world_set_host_escape(env.world, &escape);
        for (; appended < 16; appended++) { /* 256 KiB, staged and written out */
            ks_disk_append(file, chunk, sizeof chunk);
        }
        ks_disk_fsync(file);
    } else {
        escaped = true;
    }
    setrlimit(RLIMIT_FSIZE, &saved_limit);
    signal(SIGXFSZ, saved_handler);

    CU_ASSERT_TRUE(escaped);
    CU_ASSERT_TRUE(appended < 16);
    const char *message = ks_world_host_error(env.world);
    CU_ASSERT_PTR_NOT_NULL_FATAL(message);
    g_autofree char *real = g_build_filename(env.run_dir, "b1/p-0/0.log", NULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(message, real));
    CU_ASSERT_PTR_NOT_NULL(strstr(message, "pwrite failed: File too large"));
    /* Teardown drops what was not written: the file keeps what fit. */
    GStatBuf before;
    CU_ASSERT(g_stat(real, &before) == 0);
    ks_disk_close(file);
    GStatBuf after;
    CU_ASSERT(g_stat(real, &after) == 0);
    CU_ASSERT_EQUAL(before.st_size, after.st_size);
    CU_ASSERT(after.st_size <= 32768);
    ks_test_env_deinit(&env);
}

/* Runs ks_disk_open(path, KS_DISK_CREATE) (mkdir false) or ks_disk_mkdir(path)
 * (mkdir true) and returns the host error it escaped with, or NULL. */
static char *escape_message(ks_world *world, const char *path, bool mkdir)
{
    jmp_buf escape;
    volatile bool escaped = false;
    if (setjmp(escape) == 0) {
        ks_world_set_host_escape(world, &escape);
        if (mkdir) {
            ks_disk_mkdir(world, 1, path);
        } else {
            enum ks_io_result result;
            ks_disk_close(ks_disk_open(world, 1, path, KS_DISK_CREATE, &result));
        }
    } else {
        escaped = true;
    }
    ks_world_set_host_escape(world, NULL);
    return escaped ? g_strdup(ks_world_host_error(world)) : NULL;
}

/* A folder that cannot be made (a file has its parent's name) fails with
 * the mkdir error naming the folder, whether a new file needs it or a mkdir
 * asks for it; and a new file in an existing folder, or a new folder, is
 * told from an old one. */
static void test_host_failure_folder(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 3, 2);
    enum ks_io_result result;
    ks_file *file = ks_disk_open(env.world, 1, "b1/f", KS_DISK_CREATE, &result);
    CU_ASSERT_PTR_NOT_NULL_FATAL(file);
    ks_disk_close(file);
    CU_ASSERT_TRUE(ks_disk_mkdir_new(env.world, 1, "b1/d/e"));
    CU_ASSERT_FALSE(ks_disk_mkdir_new(env.world, 1, "b1/d/e"));
    CU_ASSERT_FALSE(ks_disk_mkdir_new(env.world, 1, "b1/d"));
    CU_ASSERT_TRUE(ks_disk_mkdir_new(env.world, 1, "b1/d/g"));
    CU_ASSERT_PTR_NULL(escape_message(env.world, "b1/d/g/new", false));
    CU_ASSERT_TRUE(ks_disk_exists(env.world, 1, "b1/d/g/new"));

    g_autofree char *folder = g_build_filename(env.run_dir, "b1/f/x", NULL);
    g_autofree char *expected = g_strdup_printf("%s: mkdir failed: Not a directory", folder);
    g_autofree char *create = escape_message(env.world, "b1/f/x/0.log", false);
    CU_ASSERT_PTR_NOT_NULL_FATAL(create);
    CU_ASSERT_STRING_EQUAL(create, expected);
    ks_test_env_deinit(&env);

    ks_test_env_init(&env, 3, 2); /* the first host error is the one kept */
    file = ks_disk_open(env.world, 1, "b1/f", KS_DISK_CREATE, &result);
    ks_disk_close(file);
    g_free(folder);
    folder = g_build_filename(env.run_dir, "b1/f/x", NULL);
    g_free(expected);
    expected = g_strdup_printf("%s: mkdir failed: Not a directory", folder);
    g_autofree char *made = escape_message(env.world, "b1/f/x", true);
    CU_ASSERT_PTR_NOT_NULL_FATAL(made);
    CU_ASSERT_STRING_EQUAL(made, expected);
    ks_test_env_deinit(&env);
}

void ks_test_register_host_failure(void)
{
    static const struct ks_test_case cases[] = {
        { "escapes", test_host_failure_escapes },
        { "folder", test_host_failure_folder },
    };
    KS_TEST_ADD_SUITE("sim/host-failure", cases);
}
