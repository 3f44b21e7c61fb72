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

void ks_test_register_host_failure(void)
{
    static const struct ks_test_case cases[] = {
        { "escapes", test_host_failure_escapes },
    };
    KS_TEST_ADD_SUITE("sim/host-failure", cases);
}
