/* tests/sim/test_dumplog.c: `ksim dump-log` reads with bounded memory.
 *
 * Goal: dump-log streams a segment a batch at a time and an index a chunk at
 * a time, refuses what is not a regular file, treats a batch longer than
 * --max-message-size as damage, stops an index at Kafka's sparse-file zero
 * entry, and copes with an empty folder. Method: files written by hand into a
 * temporary folder (a real batch, a sparse 64 MiB log, a preallocated index),
 * dumped into memory streams; the output is compared with what Kafka's
 * DumpLogSegments prints for the same files. The 8 GB case runs in
 * tests/cli.sh under a memory limit. */
#include "../../core/batch.h"
#include "../../sim/dumplog.h"
#include "../testlib.h"

#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct dump {
    char *out;
    char *err;
    int code;
};

static struct dump dump_path(const char *path)
{
    struct dump d = { 0 };
    size_t out_size = 0;
    size_t err_size = 0;
    FILE *out = open_memstream(&d.out, &out_size);
    FILE *err = open_memstream(&d.err, &err_size);
    d.code = ks_dumplog_path(path, 0, out, err);
    fclose(out);
    fclose(err);
    return d;
}

static void dump_clear(struct dump *d)
{
    free(d->out);
    free(d->err);
}

static GByteArray *one_batch(int records)
{
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, 1700000000000, 0, 0, 0);
    for (int i = 0; i < records; i++) {
        ks_batch_builder_add(&builder, 1700000000000, "k", 1, "value", 5, NULL, 0);
    }
    GByteArray *bytes = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    return bytes;
}

/* A sparse 64 MiB segment of zeros (a preallocated file): one read of the
 * first header finds the damage; the count of invalid bytes is the file's. */
static void test_dumplog_sparse_log(void)
{
    g_autofree char *dir = g_dir_make_tmp("ksim-dumplog-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "00000000000000000000.log", NULL);
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT(ftruncate(fd, 64 << 20) == 0);
    close(fd);
    struct dump d = dump_path(path);
    CU_ASSERT_EQUAL(d.code, 1);
    g_autofree char *found =
        g_strdup_printf("Found 67108864 invalid bytes at the end of %s\n", path);
    CU_ASSERT_PTR_NOT_NULL(strstr(d.out, found));
    dump_clear(&d);
    ks_test_remove_tree(dir);
}

/* A device (a symlink to /dev/zero would be read forever), a FIFO (opening
 * it would block) and an empty folder are refused with exit 2. */
static void test_dumplog_refuses_non_regular(void)
{
    g_autofree char *dir = g_dir_make_tmp("ksim-dumplog-XXXXXX", NULL);
    g_autofree char *link = g_build_filename(dir, "00000000000000000000.log", NULL);
    CU_ASSERT_FATAL(symlink("/dev/zero", link) == 0);
    struct dump d = dump_path(link);
    CU_ASSERT_EQUAL(d.code, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(d.err, "not a regular file"));
    dump_clear(&d);
    g_autofree char *fifo = g_build_filename(dir, "00000000000000000001.index", NULL);
    CU_ASSERT_FATAL(mkfifo(fifo, 0644) == 0);
    d = dump_path(fifo);
    CU_ASSERT_EQUAL(d.code, 2);
    dump_clear(&d);
    g_autofree char *empty = g_build_filename(dir, "empty", NULL);
    CU_ASSERT_FATAL(g_mkdir(empty, 0755) == 0);
    d = dump_path(empty); /* no segment: the name list is empty (qsort of NULL before) */
    CU_ASSERT_EQUAL(d.code, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(d.err, "no segment files"));
    dump_clear(&d);
    ks_test_remove_tree(dir);
}

/* A batch whose length field claims more than --max-message-size is damage,
 * found without reading it; a real batch under the limit reads as before. */
static void test_dumplog_batch_limit(void)
{
    g_autofree char *dir = g_dir_make_tmp("ksim-dumplog-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "00000000000000000000.log", NULL);
    GByteArray *bytes = one_batch(3);
    size_t good_bytes = bytes->len;
    /* A second batch header claiming 1 GiB follows the good one. */
    uint8_t header[KS_BATCH_HEADER_BYTES] = { 0 };
    header[7] = 3;    /* baseOffset 3 */
    header[8] = 0x40; /* batchLength 0x40000000 */
    g_byte_array_append(bytes, header, sizeof header);
    CU_ASSERT_FATAL(g_file_set_contents(path, (const char *)bytes->data, bytes->len, NULL));
    struct dump d = dump_path(path);
    CU_ASSERT_EQUAL(d.code, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(d.out, "baseOffset: 0 lastOffset: 2 count: 3"));
    g_autofree char *reason = g_strdup_printf(
        "invalid batch at position %zu: a batch of %zu bytes, over --max-message-size %d",
        good_bytes, (size_t)0x40000000 + 12, KS_DUMPLOG_BATCH_BYTES_MAX);
    CU_ASSERT_PTR_NOT_NULL(strstr(d.err, reason));
    g_autofree char *found = g_strdup_printf("Found %u invalid bytes", KS_BATCH_HEADER_BYTES);
    CU_ASSERT_PTR_NOT_NULL(strstr(d.out, found));
    dump_clear(&d);
    g_byte_array_unref(bytes);
    ks_test_remove_tree(dir);
}

/* A preallocated index (entries, then zeros) ends at the first zero entry
 * after the first, as DumpLogSegments.dumpIndex stops; an index whose first
 * entry is offset 0 still prints it. */
static void test_dumplog_sparse_index(void)
{
    g_autofree char *dir = g_dir_make_tmp("ksim-dumplog-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "00000000000000000100.index", NULL);
    uint8_t entries[8 * 3] = {
        0, 0, 0, 0, 0, 0, 0,    0, /* offset 100 at position 0 */
        0, 0, 0, 7, 0, 0, 0x10, 0, /* offset 107 at position 4096 */
    };
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT(write(fd, entries, sizeof entries) == (ssize_t)sizeof entries);
    CU_ASSERT(ftruncate(fd, 10 << 20) == 0); /* Kafka preallocates 10 MiB */
    close(fd);
    struct dump d = dump_path(path);
    CU_ASSERT_EQUAL(d.code, 0);
    g_autofree char *expected =
        g_strdup_printf("Dumping %s\noffset: 100 position: 0\noffset: 107 position: 4096\n", path);
    CU_ASSERT_STRING_EQUAL(d.out, expected);
    dump_clear(&d);
    ks_test_remove_tree(dir);
}

void ks_test_register_dumplog(void)
{
    static const struct ks_test_case cases[] = {
        { "sparse_log", test_dumplog_sparse_log },
        { "refuses_non_regular", test_dumplog_refuses_non_regular },
        { "batch_limit", test_dumplog_batch_limit },
        { "sparse_index", test_dumplog_sparse_index },
    };
    KS_TEST_ADD_SUITE("sim/dumplog", cases);
}
