/*
** sim/disk.c: every node's disk, over real files, with a fault layer and a
** simulated cost.
**
** Real bytes. Every write goes to a real file under the run directory, so
** tools (dump-log, the checker) can read them, and reads see "disk plus page
** cache" exactly as core/ expects. Nothing here ever calls fsync(2): durability
** is modelled, not borrowed from the host.
**   S1  Appends are staged: up to STAGE_BYTES_MAX bytes appended to a file are
**       kept in the process and written to the real file in one pwrite (a
**       host write of a few KiB costs several times more per byte than one
**       of 64 KiB). The staged bytes are written out before anything else
**       touches the real file: a write that is not an append, a truncate,
**       ks_disk_fsync, the last close, a descriptor eviction, power loss,
**       corruption, and ks_world_real_path (so whoever looks at a real file
**       sees every write). Reads serve the staged part from memory. Staging
**       is outside the simulation: the cost model, D1-D3 and every fault see
**       each ks_disk_pwrite call exactly as before, and a process crash
**       loses nothing (staged bytes stand for the page cache, which
**       survives it).
**   S2  A file's staging buffer is allocated at its first staged append,
**       room for four appends of that size (a power of two, at least
**       STAGE_BYTES_MIN, 64 bytes), and doubles when it must (up to
**       STAGE_BYTES_MAX); it is freed when the last handle closes. An offset
**       or time index, appended 8 or 12 bytes at a time, stages 64 bytes, a
**       segment of 1 KiB batches 4 KiB as before: every file staged at least
**       4 KiB, at 12 x 1,200 half of the heap (issue 16). Like S1, it is
**       outside the simulation.
**   S4  The buffers together hold at most about stage_budget_bytes (256 MiB,
**       KS__STAGE_BUDGET_BYTES; the unit tests set less):
**       when a buffer must grow while they hold that much, every buffer is
**       written out and freed, and staging starts again from nothing. A
**       buffer is written out only when it fills, and a file that has no
**       descriptor gets none until then, so many slowly appended files each
**       kept up to 64 KiB: at 12 brokers x 10,000 partitions and 5,000
**       records/s the process grew by 3.5 MB a simulated second (553 MB
**       after 90 s, on its way to 30,000 segments x 64 KiB, about 2 GB).
**       Writing them out costs an open, a write and a close per file, so the
**       budget is a trade: at 64 MiB that run took 30 % more CPU time. Which
**       host write carries which bytes is all that changes.
**   S3  The per-call bookkeeping of every write and read is kept inline
**       (issue 16, 12 x 1,200: 30,000 appends and 19,000 reads a simulated
**       second): the flusher's catch-up tests whether a wake-up is due before
**       calling its loop, and the node's dirty and cache lists are relinked
**       through GQueue's public fields instead of g_queue_unlink and
**       g_queue_push_*_link (the calls cost more than the moves). Same lists,
**       same order, same results: 319.8 M to 317.3 M instructions a simulated
**       second at 12 x 1,200, 675.7 M to 670.8 M at 3 x 3. Then the page-cache
**       touch of every write and read (cache_touch) is written out inline
**       instead of calling cache_set and cache_evict: an accounted record is
**       in its node's cache list exactly when its range is not empty, so a
**       touch only moves it to the front (nothing when it is there), and
**       eviction is entered only when the node is over its bound; and a
**       write to a file that was dirty already updates the dirty totals
**       inline (dirty_update). 305.5 M to 302.0 M at 12 x 1,200, 656.9 M to
**       648.9 M at 3 x 3 (cache_touch was 114 instructions a touch).
**   M1  Reads of a settled file (no write since its last fsync or truncate:
**       a rolled segment, a loaded index) copy from a read-only shared
**       mapping of it, kept while its descriptor is open, instead of one
**       pread per read; files being written use pread and the staged bytes.
**
** Durability model. Each file (keyed by its run-relative path; its record is
** kept while the file exists, open or not) belongs to the node that last
** opened it and tracks:
**   D1  durable_size: the file's size when it was last made durable (by
**       ks_disk_fsync, or by writeback, W1). A file created and never made
**       durable has durable_size 0: after power loss it still exists but is
**       empty (as with a metadata journal that committed the create, but no
**       data block), and no torn write applies to it.
**       A file found on disk without a record (made before the world) is
**       taken as durable as it is.
**   D2  undo: for bytes below durable_size that a pwrite or truncate changes
**       before they are made durable again, their durable content, saved the
**       first time they change. Entries are disjoint and sorted, so undo
**       never holds more than durable_size bytes per file, however often a
**       region is rewritten.
**   D3  the last write not yet durable (position, length), cleared when the
**       file is made durable and by truncate (a truncate after it is the last
**       change); writeback of part of it keeps the rest (W1).
**   D4  dirty bytes = (size - durable_size, if positive) + the bytes in undo:
**       what a power loss would take back. Each node keeps the sum and a list
**       of its dirty files in the order they became dirty (clean -> dirty).
**
** The operating system's writeback (Linux's flusher threads, as
** Documentation/admin-guide/sysctl/vm.rst describes dirty_expire_centisecs,
** dirty_writeback_centisecs, dirty_bytes and dirty_ratio):
**   W1  Writing back a file makes its dirty data durable, as fsync would,
**       without Kafka knowing (its recovery point does not move). Linux ages
**       dirty data per inode (dirtied_when, set when a clean inode is first
**       dirtied), so an expired file is written back whole, everything
**       written to it up to that moment; it becomes dirty again, with a new
**       age, at its next write. The dirty limit writes back only as many
**       bytes as it needs, oldest file first, and of a file that was only
**       appended to since it was last clean, the oldest appended bytes.
**   W2  Each node's flusher wakes every disk_writeback_interval_ns (at a
**       phase drawn per node from the seed: machines booted at different
**       times; or at multiples of the interval when aligned) and writes back
**       every file dirty for at least disk_writeback_expire_ns. It belongs to
**       the node's operating system, not to its Kafka process: a process
**       crash leaves it running (the dirty data of a crashed broker is still
**       written back), a power loss stops it with everything else. It is run
**       lazily: before any disk call, power loss or query of a node, the
**       wake-ups due up to now run in order, each as of its own time. That is
**       exact, because only the node's own calls change its files, and it
**       costs no scheduler event (so no trace entry) when nothing is dirty.
**   W3  A write that leaves the node with more than disk_dirty_limit_bytes of
**       dirty data waits while the oldest dirty data is written back: the
**       excess, and at least 200 ms of disk bandwidth (Linux's MAX_PAUSE in
**       balance_dirty_pages), so a writer faster than its disk is held to the
**       disk's speed. Linux's earlier background writeback above
**       dirty_background_ratio is not modelled: below the limit only age
**       starts writeback.
** Writeback is durable when it is issued; the device's time for it only
** delays later requests (a power loss during those few milliseconds keeps
** what a real disk might not have finished).
**
** Page cache:
**   P1  Each file has one cached byte range: written or read bytes join it
**       (a touch that overlaps or adjoins it extends it; a disjoint touch of
**       a clean file replaces it, of a dirty file extends it over the gap, so
**       dirty bytes are always cached). Bytes at or past durable_size are
**       dirty and always cached. A read costs the device only for bytes
**       outside the range. Files found on disk start uncached; a power loss
**       empties the node's cache; a process crash keeps it.
**   P2  With disk_page_cache_bytes set, when a node's cached ranges add up
**       to more, whole files are evicted in least recently touched order,
**       skipping dirty files (reclaim must write them back first) and the
**       file just touched. Kafka reads what it wrote recently, so old
**       segments go first, as they would from a real page cache.
**   P3  A read inside the cached range leaves the range as it is and only
**       moves the file to the front of the cache order, so a second such read
**       of the same file at the same moment changes nothing. ks_disk_cached
**       tells a caller that a range is such (the log skips header reads that
**       would be, core/log.c), and ks_disk_rewrite_count that bytes it read
**       before are unchanged (it moves with every write below the end,
**       truncate, corruption and power loss, never with an append).
**
** Faults that exist:
**   - process crash (ks_world_node_crash, power_loss false): nothing is lost,
**     the page cache survives the process, and writeback goes on (W2).
**   - power loss (power_loss true): the node's due flusher wake-ups run first
**     (W2); then every file of the node is truncated to its durable size and
**     its undo data is written back, so it holds exactly its durable
**     content. Then the last unsynced write may be torn, as in SQLite's crash
**     tests and LazyFS, if it started at or below the durable size (so that
**     it is contiguous with what survived): with draws from KS_RNG_DISK it
**     is either dropped, kept up to a 512-byte sector boundary (relative to
**     the file) strictly inside it, or kept whole with a garbage tail (1..512
**     random bytes replacing its end). What survives is then durable. Files
**     are processed in strcmp order of their paths. The page cache is empty
**     afterwards and nothing stays queued on the device.
**   - corruption (ks_world_disk_corrupt): flips bytes durably (in the file and
**     in any undo copy of them).
**   - slow disk (ks_world_disk_set_node_delay): extra latency for every
**     device request (fsync, uncached read, writeback pass), never for a
**     page-cache write or a cached read.
** Faults excluded, and why:
**   - lost or reordered metadata (create, rename, delete, mkdir): these are
**     durable at once, as if the folder were fsynced; Kafka's recovery does
**     not depend on folder fsync ordering in the cases ksim models.
**   - a torn write that is not contiguous with the durable content (earlier
**     unsynced writes were lost before it): dropped whole instead of leaving a
**     hole, since a real page cache writes a file's dirty pages back roughly in
**     order and the hole would only add noise to recovery.
**   - I/O errors (KS_IO_ERROR) and a full disk: reserved for a later fault.
**   - misdirected writes, and bit rot outside ks_world_disk_corrupt.
** A failing host call (the real disk is full, a permission error) is not a
** simulated fault: host_fail records "REAL-PATH: CALL failed: why" and
** jumps to the run's escape (world.h), which ends the run with exit 3 and
** that message and records nothing; after it, staged bytes are dropped
** rather than written, so tearing the world down touches the host no more.
**
** Cost model (simulated time only): a page cache in front of a serial device.
**   C1  The device of each node serves one request at a time, in the order
**       they are issued (device_idle_at): an fsync takes the file's dirty
**       bytes / disk_bandwidth + disk_fsync_latency_ns (an fsync of a file
**       with nothing dirty issues no request: a clean inode); an uncached read its
**       missing bytes / disk_bandwidth; a writeback pass (a flusher wake-up
**       that wrote something, or a throttled write, W3) its bytes /
**       disk_bandwidth; each plus the node's slow-disk latency.
**   C2  The node's calls are serial from the caller's view (done_at,
**       ks_disk_idle_at_ns): a page-cache write, a cached read, truncate,
**       open, close, rename, delete, list and mkdir take no time; an fsync, an
**       uncached read and a throttled write wait for their device request. A
**       background fsync (ks_disk_fsync_background) and the flusher occupy
**       the device without the caller waiting.
** So with Kafka's default flush settings a slow disk is invisible to the
** request path until the dirty limit is reached; with flush.messages=1 every
** append waits for it.
**
** Descriptors. Handles (struct ks_file) are cheap; real descriptors are kept
** in an LRU of at most open_file_count_max and reopened transparently. A file
** deleted (or replaced by a rename) while handles are open keeps its
** descriptor, outside the LRU, until its last handle closes (POSIX unlink
** semantics).
**
** Host calls. The model's state and cost never depend on how many host calls
** a disk call makes, so they are kept to what the file's bytes need: a new
** file is one open(O_CREAT | O_EXCL), its folder made only when that open
** finds none; a folder is one mkdir when its parent exists
** (ks_disk_mkdir_new says whether it made it); a truncate to the size the
** file has, and a rename's mkdir of the folder it renames within, make no
** host call. Anything unusual (the name exists, a folder cannot be made)
** falls back to the general calls, so every host error reads as before;
** those failures free the paths they hold before the escape.
** Checkpoints (issue 16): a follower rewrites its leader-epoch-checkpoint
** (tmp, fsync, rename) at its first append of every epoch, 6,089 times in
** the measured second at 12 x 10,000, and that was half of the second's
** 240 M instructions. H1: real_path joins the run folder and the path in
** one allocation instead of g_build_filename. H2: a rename of a file the
** world knows over a name in its folder (rename_known_file) is one
** rename(2), without the two stats, and the moved record takes the
** replaced one's key in the path table. Each rewrite went from about
** 16,000 instructions in the disk calls to 7,700 (ks_disk_rename 8,700 to
** 4,000) and from six host calls to four (open, pwrite, rename, close).
** H4: the path table hashes with path_hash, a word at a time.
** H5: ks_disk_replace does the whole rewrite (open `<path>.tmp`, append,
** fsync, close, rename) in one call with the same model changes in the same
** order and the same host calls, but the new record enters the path table
** only under `path`'s key, in place of the replaced one: no `.tmp` key is
** inserted and stolen per rewrite, so the table keeps no deleted-entry
** markers from them (at 12 x 10,000 with 5,000 records/s: 820 M to 786 M
** instructions in 5 simulated seconds). Fewer host calls would need the
** new bytes written over the old file in place, which gives up the host
** file's atomicity and cannot see a stray `.tmp` on the host (which the
** general calls take as an existing durable file) without a stat.
*/
#include "world_int.h"
#include "../core/array.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECTOR_BYTES      512
#define STAGE_BYTES_MAX   (64 * 1024)
#define STAGE_BYTES_MIN   64 /* S2 */
#define MAP_ROUND_BYTES   (1024 * 1024)
#define THROTTLE_PAUSE_NS (200 * KS_NS_PER_MS) /* W3: Linux's MAX_PAUSE, HZ / 5 */

struct undo_entry {
    int64_t position_bytes;
    int64_t byte_count;
    uint8_t *bytes; /* owned */
};

/* Fields are ordered so that no padding falls between them (a record per
 * file, four files a replica: issue 16), the flags together after
 * handle_count; staged_bytes and staged_capacity fit 32 bits (S2, at most
 * STAGE_BYTES_MAX). */
struct ks__file_record {
    char *path; /* owned; also the key in world->files */
    ks_node_id node;
    int fd; /* -1 when not open */
    struct ks__file_record *lru_prev, *lru_next;
    int64_t size_bytes;
    int64_t durable_size_bytes; /* D1 */
    GArray *undo;               /* D2: struct undo_entry, sorted by position; NULL when none */
    int64_t undo_bytes;         /* D2: their total length */
    int64_t last_write_position_bytes; /* D3, when has_last_write */
    int64_t last_write_byte_count;
    uint32_t handle_count;
    bool synced;           /* fsynced at least once (or found on disk) */
    bool has_last_write;   /* D3 */
    bool detached;         /* deleted while open: not in world->files, fd pinned */
    bool accounted;        /* counted in its node's totals (D4, P1); false once detached */
    bool in_dirty_list;    /* the node's dirty list */
    bool in_cache_list;    /* the node's cache list (P2) */
    uint32_t staged_bytes; /* S1: they belong at [size_bytes - staged_bytes, size_bytes) */
    uint32_t staged_capacity;
    uint8_t *staged;    /* S1: appended bytes not yet in the real file, owned */
    const uint8_t *map; /* M1: read-only shared mapping while fd is open, or NULL */
    size_t map_bytes;
    int64_t dirty_bytes;      /* D4, as counted in the node's total */
    ks_time_ns dirtied_at_ns; /* W1: when it last became dirty */
    GList dirty_link;         /* in the node's dirty list */
    int64_t cache_lo_bytes;   /* P1: the cached range [lo, hi) */
    int64_t cache_hi_bytes;
    GList cache_link;       /* in the node's cache list */
    uint64_t rewrite_count; /* ks_disk_rewrite_count: bytes it held may have changed */
};

struct ks_file {
    ks_world *world;                /* not owned */
    struct ks__file_record *record; /* not owned */
    struct ks_file *prev, *next;    /* world->handles */
};

/* ---- host helpers -------------------------------------------------------------- */

/* Records the first host failure, "REAL: WHAT failed: why (errno)". */
static void host_note(ks_world *world, const char *what, const char *real)
{
    if (world->host_error == NULL) {
        world->host_error = g_strdup_printf("%s: %s failed: %s", real, what, g_strerror(errno));
    }
}

/* Ends the run after a host failure: to the driver's escape (once), else
 * exit 3 with the message (world.h "host I/O failures"). An event cut short
 * this way may leak a path string or two that its callers held: the run is
 * over. */
_Noreturn static void host_escape(ks_world *world)
{
    jmp_buf *escape = world->host_escape;
    world->host_escape = NULL;
    if (escape != NULL) {
        longjmp(*escape, 1);
    }
    fprintf(stderr, "ksim: host I/O error: %s\n", world->host_error);
    exit(3);
}

/* A host call on the real file `real` failed (errno says why): not a
 * simulated fault, the run stops. */
_Noreturn static void host_fail_real(ks_world *world, const char *what, const char *real)
{
    host_note(world, what, real);
    host_escape(world);
}

/* The same for a run-relative path (the writes and reads of a file). */
_Noreturn static void host_fail(ks_world *world, const char *what, const char *path)
{
    int saved = errno;
    char *real = g_build_filename(world->run_dir, path, NULL);
    errno = saved;
    host_note(world, what, real);
    g_free(real);
    host_escape(world);
}

static void check_path(const char *path, bool allow_root)
{
    ks_assert(path != NULL);
    if (path[0] == '\0') {
        ks_assert(allow_root);
        return;
    }
    ks_assert(path[0] != '/');
    const char *component = path;
    for (;;) {
        const char *end = strchr(component, '/');
        size_t length = end ? (size_t)(end - component) : strlen(component);
        ks_assert(length > 0); /* no empty component, no trailing '/' */
        ks_assert(!(length == 2 && component[0] == '.' && component[1] == '.'));
        if (end == NULL) {
            break;
        }
        component = end + 1;
    }
}

/* The real path of a run-relative one, owned by the caller. H1: for a
 * run folder that ends in no separator this is run_dir "/" path, which is
 * what g_build_filename makes of a checked path (no leading, trailing or
 * doubled '/'), put together in one allocation; g_build_filename's walk of
 * both strings cost 1,300 instructions a call. */
static char *real_path(const ks_world *world, const char *path)
{
    check_path(path, true);
    if (path[0] == '\0') {
        return g_strdup(world->run_dir);
    }
    size_t dir_bytes = strlen(world->run_dir);
    if (dir_bytes == 0 || world->run_dir[dir_bytes - 1] == G_DIR_SEPARATOR) {
        return g_build_filename(world->run_dir, path, NULL);
    }
    size_t path_bytes = strlen(path);
    char *real = g_malloc(dir_bytes + 1 + path_bytes + 1);
    memcpy(real, world->run_dir, dir_bytes);
    real[dir_bytes] = G_DIR_SEPARATOR;
    memcpy(real + dir_bytes + 1, path, path_bytes + 1);
    return real;
}

static void write_all(ks_world *world, int fd, const void *bytes, size_t byte_count,
                      int64_t position_bytes, const char *path)
{
    const uint8_t *p = bytes;
    while (byte_count > 0) {
        ssize_t n = pwrite(fd, p, byte_count, (off_t)position_bytes);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0) {
                errno = ENOSPC; /* a write of nothing: the disk is full */
            }
            host_fail(world, "pwrite", path);
        }
        p += n;
        byte_count -= (size_t)n;
        position_bytes += n;
    }
}

static size_t read_all(ks_world *world, int fd, void *bytes, size_t byte_count,
                       int64_t position_bytes, const char *path)
{
    uint8_t *p = bytes;
    size_t done = 0;
    while (done < byte_count) {
        ssize_t n = pread(fd, p + done, byte_count - done, (off_t)(position_bytes + (int64_t)done));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            host_fail(world, "pread", path);
        }
        if (n == 0) {
            break;
        }
        done += (size_t)n;
    }
    return done;
}

/* ---- the descriptor LRU ------------------------------------------------------------ */

static void lru_unlink(ks_world *world, struct ks__file_record *record)
{
    if (record->lru_prev != NULL) {
        record->lru_prev->lru_next = record->lru_next;
    } else {
        world->lru_head = record->lru_next;
    }
    if (record->lru_next != NULL) {
        record->lru_next->lru_prev = record->lru_prev;
    } else {
        world->lru_tail = record->lru_prev;
    }
    record->lru_prev = record->lru_next = NULL;
}

static void lru_push_front(ks_world *world, struct ks__file_record *record)
{
    record->lru_prev = NULL;
    record->lru_next = world->lru_head;
    if (world->lru_head != NULL) {
        world->lru_head->lru_prev = record;
    } else {
        world->lru_tail = record;
    }
    world->lru_head = record;
}

/* S1: writes the staged appends to the real file through `fd`. After a
 * host failure they are dropped: the run is being torn down. */
static void stage_write_out(ks_world *world, struct ks__file_record *record, int fd)
{
    if (record->staged_bytes == 0) {
        return;
    }
    if (world->host_error != NULL) {
        record->staged_bytes = 0;
        return;
    }
    write_all(world, fd, record->staged, record->staged_bytes,
              record->size_bytes - (int64_t)record->staged_bytes, record->path);
    record->staged_bytes = 0;
}

static void record_unmap(struct ks__file_record *record)
{
    if (record->map != NULL) {
        munmap((void *)record->map, record->map_bytes);
        record->map = NULL;
        record->map_bytes = 0;
    }
}

static void record_close_fd(ks_world *world, struct ks__file_record *record)
{
    if (record->fd < 0) {
        return;
    }
    stage_write_out(world, record, record->fd);
    record_unmap(record);
    if (!record->detached) {
        lru_unlink(world, record);
        ks_assert(world->open_fd_count > 0);
        world->open_fd_count--;
    }
    close(record->fd);
    record->fd = -1;
}

/* Makes fd the record's descriptor, most recently used, within the bound. */
static void record_adopt_fd(ks_world *world, struct ks__file_record *record, int fd)
{
    ks_assert(record->fd < 0);
    while (world->open_fd_count >= world->open_file_count_max) {
        ks_assert(world->lru_tail != NULL);
        record_close_fd(world, world->lru_tail);
    }
    record->fd = fd;
    lru_push_front(world, record);
    world->open_fd_count++;
}

/* Returns the record's real descriptor, opening it (and evicting the least
 * recently used one) if needed. */
static int record_fd(ks_world *world, struct ks__file_record *record)
{
    if (record->fd >= 0) {
        if (!record->detached && world->lru_head != record) {
            lru_unlink(world, record);
            lru_push_front(world, record);
        }
        return record->fd;
    }
    ks_assert(!record->detached);
    char *real = real_path(world, record->path);
    int fd = open(real, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        host_fail_real(world, "open", real);
    }
    g_free(real);
    record_adopt_fd(world, record, fd);
    return fd;
}

/* S1: makes the real file hold every byte written so far. */
static void record_flush(ks_world *world, struct ks__file_record *record)
{
    if (record->staged_bytes > 0 && world->host_error != NULL) {
        record->staged_bytes = 0; /* tearing down after a host failure: no host call */
    }
    if (record->staged_bytes > 0) {
        stage_write_out(world, record, record_fd(world, record));
    }
}

static void stage_release(ks_world *world, struct ks__file_record *record)
{
    ks_assert(record->staged_bytes == 0);
    ks_assert(world->staged_capacity_bytes >= record->staged_capacity);
    world->staged_capacity_bytes -= record->staged_capacity;
    g_free(record->staged);
    record->staged = NULL;
    record->staged_capacity = 0;
}

/* S4: writes out and frees every staging buffer (only files with an open
 * handle have one: the last close releases it). */
static void stage_release_all(ks_world *world)
{
    for (ks_file *file = world->handles; file != NULL; file = file->next) {
        struct ks__file_record *record = file->record;
        if (record->staged != NULL) {
            record_flush(world, record);
            stage_release(world, record);
        }
    }
    ks_assert(world->staged_capacity_bytes == 0);
}

/* Flushes every file that has an open handle (only those can hold staged
 * bytes: the last close flushes). */
static void flush_all(ks_world *world)
{
    for (ks_file *file = world->handles; file != NULL; file = file->next) {
        record_flush(world, file->record);
    }
}

char *ks_world_real_path(const ks_world *world, const char *path)
{
    /* Whoever looks at a real file sees every write (S1). Staging is a cache
     * outside the simulation, so flushing leaves the world's state as it was. */
    flush_all((ks_world *)world);
    return real_path(world, path);
}

/* ---- records ---------------------------------------------------------------------------- */

static guint undo_len(const struct ks__file_record *record)
{
    return record->undo != NULL ? record->undo->len : 0;
}

static void undo_clear(struct ks__file_record *record)
{
    for (guint i = 0; i < undo_len(record); i++) {
        g_free(g_array_index(record->undo, struct undo_entry, i).bytes);
    }
    if (record->undo != NULL) {
        g_array_free(record->undo, TRUE);
        record->undo = NULL;
    }
    record->undo_bytes = 0;
}

/* ---- page cache, dirty data and the device ---------------------------------------------------- */

/* The node's dirty and cache lists are GQueues of links held in the
 * records themselves (link->data is the record), so joining and leaving
 * either list is O(1). S3: the links are relinked here, through GQueue's
 * and GList's public fields, as g_queue_unlink and g_queue_push_*_link do;
 * the calls into GLib cost more than the pointer moves (at 12 x 1,200 a
 * page-cache touch moved a file to the front of its node's cache list
 * 35,000 times a simulated second, 2.2 M instructions). */
static inline void file_list_unlink(GQueue *list, GList *link, bool *in_list)
{
    ks_assert(*in_list);
    ks_assert(list->length > 0);
    if (link->prev != NULL) {
        link->prev->next = link->next;
    } else {
        list->head = link->next;
    }
    if (link->next != NULL) {
        link->next->prev = link->prev;
    } else {
        list->tail = link->prev;
    }
    link->prev = link->next = NULL;
    list->length--;
    *in_list = false;
}

static inline void file_list_link(GQueue *list, GList *link, bool *in_list,
                                  struct ks__file_record *record, bool at_head)
{
    ks_assert(!*in_list);
    link->data = record;
    if (at_head) {
        link->prev = NULL;
        link->next = list->head;
        if (list->head != NULL) {
            list->head->prev = link;
        } else {
            list->tail = link;
        }
        list->head = link;
    } else {
        link->next = NULL;
        link->prev = list->tail;
        if (list->tail != NULL) {
            list->tail->next = link;
        } else {
            list->head = link;
        }
        list->tail = link;
    }
    list->length++;
    *in_list = true;
}

static int64_t record_dirty_bytes(const struct ks__file_record *record)
{
    int64_t appended = record->size_bytes - record->durable_size_bytes;
    return (appended > 0 ? appended : 0) + record->undo_bytes; /* D4 */
}

/* D4: brings the node's dirty total and list in line with the record. A
 * record that becomes dirty joins the end of the list with the current time
 * as its age (W1). */
static void dirty_update_list(ks_world *world, struct ks__file_record *record)
{
    struct ks__node *node = ks__node(world, record->node);
    int64_t dirty = record_dirty_bytes(record);
    node->dirty_bytes += dirty - record->dirty_bytes;
    record->dirty_bytes = dirty;
    if (dirty > 0 && !record->in_dirty_list) {
        record->dirtied_at_ns = world->now_ns;
        file_list_link(&node->dirty_files, &record->dirty_link, &record->in_dirty_list, record,
                       false);
    } else if (dirty == 0 && record->in_dirty_list) {
        file_list_unlink(&node->dirty_files, &record->dirty_link, &record->in_dirty_list);
    }
    ks_assert(node->dirty_bytes >= 0);
}

/* D4, inline for the write to a file that was dirty already and stays so
 * (S3), the list change in dirty_update_list. */
static inline void dirty_update(ks_world *world, struct ks__file_record *record)
{
    if (!record->accounted) {
        return;
    }
    int64_t dirty = record_dirty_bytes(record);
    if (dirty > 0 && record->in_dirty_list) {
        struct ks__node *node = ks__node(world, record->node);
        node->dirty_bytes += dirty - record->dirty_bytes;
        record->dirty_bytes = dirty;
        ks_assert(node->dirty_bytes >= 0);
        return;
    }
    dirty_update_list(world, record);
}

/* P1: sets the record's cached range, keeping the node's total and moving
 * the record to the front of the node's cache list (or off it, if empty). */
static void cache_set(ks_world *world, struct ks__file_record *record, int64_t lo, int64_t hi)
{
    ks_assert(lo <= hi);
    if (!record->accounted) {
        record->cache_lo_bytes = lo;
        record->cache_hi_bytes = hi;
        return;
    }
    struct ks__node *node = ks__node(world, record->node);
    node->cached_bytes += (hi - lo) - (record->cache_hi_bytes - record->cache_lo_bytes);
    ks_assert(node->cached_bytes >= 0);
    record->cache_lo_bytes = lo;
    record->cache_hi_bytes = hi;
    if (hi > lo && record->in_cache_list && node->cached_files.head == &record->cache_link) {
        return; /* already the front: most touches are of the file touched last */
    }
    if (record->in_cache_list) {
        file_list_unlink(&node->cached_files, &record->cache_link, &record->in_cache_list);
    }
    if (hi > lo) {
        file_list_link(&node->cached_files, &record->cache_link, &record->in_cache_list, record,
                       true);
    }
}

/* P2: evicts whole clean files, least recently touched first, until the
 * node's cache fits (the file at the front, just touched, stays). */
static void cache_evict(ks_world *world, struct ks__node *node)
{
    int64_t capacity = (int64_t)MIN(world->disk_page_cache_bytes, (uint64_t)INT64_MAX);
    GList *link = node->cached_files.tail;
    while (capacity > 0 && node->cached_bytes > capacity && link != NULL &&
           link != node->cached_files.head) {
        GList *previous = link->prev;
        struct ks__file_record *record = link->data;
        if (record->dirty_bytes == 0) {
            cache_set(world, record, 0, 0);
        }
        link = previous;
    }
}

/* P1: [lo, hi) of the file was written or read, so it is in the page cache.
 * This is cache_set with a range that is not empty, then cache_evict, written
 * out for the one case every write and read has (S3): an accounted record
 * is in the cache list exactly when its range is not empty, so the record
 * only moves to the front, and eviction is looked at only when the node is
 * over its bound. */
__attribute__((always_inline)) static inline void
cache_touch(ks_world *world, struct ks__file_record *record, int64_t lo, int64_t hi)
{
    if (!record->accounted || hi <= lo) {
        return;
    }
    int64_t old_lo = record->cache_lo_bytes;
    int64_t old_hi = record->cache_hi_bytes;
    bool cached = old_hi > old_lo;
    bool joins = lo <= old_hi && hi >= old_lo;
    if (cached && (joins || record->dirty_bytes > 0)) {
        lo = MIN(lo, old_lo);
        hi = MAX(hi, old_hi);
    }
    struct ks__node *node = ks__node(world, record->node);
    node->cached_bytes += (hi - lo) - (old_hi - old_lo);
    ks_assert(node->cached_bytes >= 0);
    record->cache_lo_bytes = lo;
    record->cache_hi_bytes = hi;
    ks_assert(record->in_cache_list == cached);
    if (node->cached_files.head != &record->cache_link) {
        /* Most touches are of the file touched last, already the front. */
        if (cached) {
            file_list_unlink(&node->cached_files, &record->cache_link, &record->in_cache_list);
        }
        file_list_link(&node->cached_files, &record->cache_link, &record->in_cache_list, record,
                       true);
    }
    if (world->disk_page_cache_bytes > 0 &&
        (uint64_t)node->cached_bytes > world->disk_page_cache_bytes) {
        cache_evict(world, node);
    }
}

/* P1: bytes of [lo, hi) that a read must get from the device: below the
 * durable size (above it every byte is dirty, so cached) and outside the
 * cached range. */
static int64_t cache_miss_bytes(const struct ks__file_record *record, int64_t lo, int64_t hi)
{
    hi = MIN(hi, record->durable_size_bytes);
    if (hi <= lo) {
        return 0;
    }
    int64_t hit_lo = MAX(lo, record->cache_lo_bytes);
    int64_t hit_hi = MIN(hi, record->cache_hi_bytes);
    return (hi - lo) - (hit_hi > hit_lo ? hit_hi - hit_lo : 0);
}

/* Counts the record in its node's totals (a new record, or one that changed
 * node), or takes it out of them (detached, destroyed, or changing node). */
static void record_account(ks_world *world, struct ks__file_record *record)
{
    ks_assert(!record->accounted);
    record->accounted = true;
    record->dirty_bytes = 0;
    dirty_update(world, record);
    if (record->cache_hi_bytes > record->cache_lo_bytes) {
        int64_t lo = record->cache_lo_bytes;
        int64_t hi = record->cache_hi_bytes;
        record->cache_lo_bytes = record->cache_hi_bytes = 0;
        cache_set(world, record, lo, hi);
    }
}

static void record_unaccount(ks_world *world, struct ks__file_record *record)
{
    if (!record->accounted) {
        return;
    }
    struct ks__node *node = ks__node(world, record->node);
    node->dirty_bytes -= record->dirty_bytes;
    record->dirty_bytes = 0;
    if (record->in_dirty_list) {
        file_list_unlink(&node->dirty_files, &record->dirty_link, &record->in_dirty_list);
    }
    cache_set(world, record, 0, 0);
    record->accounted = false;
}

static ks_time_ns transfer_ns(const ks_world *world, int64_t byte_count)
{
    if (world->disk_bandwidth_bytes_per_s == 0 || byte_count <= 0) {
        return 0;
    }
    unsigned __int128 ns = (unsigned __int128)byte_count * KS_NS_PER_S;
    return (ks_time_ns)(ns / world->disk_bandwidth_bytes_per_s);
}

/* Bytes the device writes in `ns` (0 when bandwidth is free). */
static int64_t bytes_in_ns(const ks_world *world, ks_time_ns ns)
{
    unsigned __int128 bytes = (unsigned __int128)world->disk_bandwidth_bytes_per_s * ns;
    bytes /= KS_NS_PER_S;
    return bytes > (unsigned __int128)INT64_MAX ? INT64_MAX : (int64_t)bytes;
}

/* C1: queues a request on the node's device, startable at from_ns; returns
 * when it is done. */
static ks_time_ns device_request(struct ks__node *node, ks_time_ns from_ns, ks_time_ns cost_ns)
{
    ks_time_ns start_ns = MAX(from_ns, node->device_idle_at_ns);
    node->device_idle_at_ns = start_ns + cost_ns + node->disk_delay_ns;
    return node->device_idle_at_ns;
}

/* C2: when a call the node makes now starts from its own view. */
static ks_time_ns call_start_ns(const ks_world *world, const struct ks__node *node)
{
    return MAX(world->now_ns, node->disk_done_at_ns);
}

static void caller_waits(struct ks__node *node, ks_time_ns until_ns)
{
    node->disk_done_at_ns = MAX(node->disk_done_at_ns, until_ns);
}

/* Makes all of the record's data durable, as fsync does (D1-D3). */
static void record_make_durable(ks_world *world, struct ks__file_record *record)
{
    record->durable_size_bytes = record->size_bytes;
    record->synced = true;
    undo_clear(record);
    record->has_last_write = false;
    dirty_update(world, record);
}

/* W1: writes back up to max_bytes of the record's dirty data: all of it, or
 * when it was only appended to since it was last clean, the oldest appended
 * bytes. Returns the bytes made durable. */
static int64_t writeback_record(ks_world *world, struct ks__file_record *record, int64_t max_bytes)
{
    int64_t dirty = record->dirty_bytes;
    if (dirty == 0 || max_bytes <= 0) {
        return 0;
    }
    if (max_bytes < dirty && undo_len(record) == 0) {
        int64_t durable = record->durable_size_bytes + max_bytes;
        ks_assert(durable < record->size_bytes);
        record->durable_size_bytes = durable;
        record->synced = true;
        if (record->has_last_write) {
            /* D3: what is left of the last write is the part not written back. */
            int64_t end = record->last_write_position_bytes + record->last_write_byte_count;
            if (end <= durable) {
                record->has_last_write = false;
            } else if (record->last_write_position_bytes < durable) {
                record->last_write_position_bytes = durable;
                record->last_write_byte_count = end - durable;
            }
        }
        dirty_update(world, record);
        return max_bytes;
    }
    record_make_durable(world, record);
    return dirty;
}

/* W3: the node's oldest dirty data, want bytes of it, written back. */
static int64_t writeback_oldest(ks_world *world, struct ks__node *node, int64_t want)
{
    int64_t done = 0;
    while (done < want && node->dirty_files.head != NULL) {
        done += writeback_record(world, node->dirty_files.head->data, want - done);
    }
    return done;
}

static void writeback_counted(struct ks__node *node, int64_t byte_count)
{
    node->disk_stats.writeback_pass_count++;
    node->disk_stats.writeback_bytes += (uint64_t)byte_count;
}

/* W2: the first wake-up of the node's flusher at or after t (wake-ups are at
 * phase + k * interval, k >= 1). */
static ks_time_ns flusher_wakeup_at_or_after(const ks_world *world, const struct ks__node *node,
                                             ks_time_ns t)
{
    ks_time_ns interval = world->disk_writeback_interval_ns;
    ks_time_ns first = node->flusher_phase_ns + interval;
    if (t <= first) {
        return first;
    }
    ks_time_ns k = (t - node->flusher_phase_ns + interval - 1) / interval;
    return node->flusher_phase_ns + k * interval;
}

/* W2: runs the node's flusher wake-ups that are due, each as of its time
 * (flusher_catch_up). */
static void flusher_run_due(ks_world *world, struct ks__node *node)
{
    ks_time_ns expire = world->disk_writeback_expire_ns;
    while (node->flusher_next_ns <= world->now_ns) {
        ks_time_ns wakeup = node->flusher_next_ns;
        int64_t written = 0;
        struct ks__file_record *oldest;
        while ((oldest = g_queue_peek_head(&node->dirty_files)) != NULL &&
               oldest->dirtied_at_ns + expire <= wakeup) {
            written += writeback_record(world, oldest, INT64_MAX);
        }
        if (written > 0) {
            device_request(node, wakeup, transfer_ns(world, written));
            writeback_counted(node, written);
        }
        /* The next wake-up that can find something expired. */
        oldest = g_queue_peek_head(&node->dirty_files);
        ks_time_ns due = oldest != NULL ? oldest->dirtied_at_ns + expire : world->now_ns + 1;
        node->flusher_next_ns = flusher_wakeup_at_or_after(world, node, MAX(due, wakeup + 1));
    }
}

/* W2: every disk call, power loss and query of a node calls this first.
 * S3: nearly every call finds no wake-up due, so that test is made here,
 * inline, and the loop only when one is. */
static inline void flusher_catch_up(ks_world *world, ks_node_id node_id)
{
    struct ks__node *node = ks__node(world, node_id);
    if (node->flusher_next_ns <= world->now_ns) {
        flusher_run_due(world, node);
    }
}

/* W3: after a write, the node's dirty data above the limit is written back
 * while the writer waits. */
static void throttle_writer(ks_world *world, struct ks__node *node)
{
    int64_t limit = (int64_t)MIN(world->disk_dirty_limit_bytes, (uint64_t)INT64_MAX);
    if (limit == 0 || node->dirty_bytes <= limit) {
        return;
    }
    int64_t want = MAX(node->dirty_bytes - limit, bytes_in_ns(world, THROTTLE_PAUSE_NS));
    int64_t written = writeback_oldest(world, node, want);
    ks_time_ns done_ns =
        device_request(node, call_start_ns(world, node), transfer_ns(world, written));
    caller_waits(node, done_ns);
    writeback_counted(node, written);
    node->disk_stats.throttle_count++;
}

static void record_destroy(ks_world *world, struct ks__file_record *record)
{
    record_unaccount(world, record);
    record_flush(world, record);
    record_close_fd(world, record);
    stage_release(world, record);
    undo_clear(record);
    g_free(record->path);
    g_free(record);
}

static struct ks__file_record *record_new(const char *path, ks_node_id node, int64_t size_bytes,
                                          int64_t durable_size_bytes)
{
    struct ks__file_record *record = g_new0(struct ks__file_record, 1);
    record->path = g_strdup(path);
    record->node = node;
    record->fd = -1;
    record->size_bytes = size_bytes;
    record->durable_size_bytes = durable_size_bytes;
    return record;
}

/* Takes the record out of the path table (its file is being deleted or
 * replaced). Call before the real unlink/rename, so an open handle can still
 * pin a descriptor to the old file. */
static void record_detach(ks_world *world, struct ks__file_record *record)
{
    record_unaccount(world, record); /* a deleted file's dirty data goes with it */
    g_hash_table_steal(world->files, record->path);
    if (record->handle_count == 0) {
        record_destroy(world, record);
        return;
    }
    record_fd(world, record);
    lru_unlink(world, record);
    world->open_fd_count--;
    record->detached = true;
}

static int undo_compare(const void *a, const void *b)
{
    const struct undo_entry *x = a, *y = b;
    return x->position_bytes < y->position_bytes ? -1 : x->position_bytes > y->position_bytes;
}

static void undo_add(ks_world *world, struct ks__file_record *record, int64_t start, int64_t end)
{
    struct undo_entry entry = { start, end - start, g_malloc((size_t)(end - start)) };
    size_t n = read_all(world, record_fd(world, record), entry.bytes, (size_t)(end - start), start,
                        record->path);
    ks_assert(n == (size_t)(end - start));
    if (record->undo == NULL) {
        record->undo = g_array_new(FALSE, FALSE, sizeof(struct undo_entry));
    }
    ks_array_append_val(record->undo, entry);
    record->undo_bytes += end - start;
}

/* D2: saves the durable content of [start, end) that has not been saved since
 * the last fsync, before it is changed. */
static void undo_save(ks_world *world, struct ks__file_record *record, int64_t start, int64_t end)
{
    int64_t limit = MIN(record->durable_size_bytes, record->size_bytes);
    end = MIN(end, limit);
    if (start >= end) {
        return;
    }
    guint old_len = undo_len(record);
    int64_t cursor = start;
    for (guint i = 0; i < old_len && cursor < end; i++) {
        struct undo_entry e = g_array_index(record->undo, struct undo_entry, i);
        int64_t e_end = e.position_bytes + e.byte_count;
        if (e_end <= cursor) {
            continue;
        }
        if (e.position_bytes >= end) {
            break;
        }
        if (e.position_bytes > cursor) {
            undo_add(world, record, cursor, e.position_bytes);
        }
        cursor = MAX(cursor, e_end);
    }
    if (cursor < end) {
        undo_add(world, record, cursor, end);
    }
    if (undo_len(record) != old_len) {
        g_array_sort(record->undo, undo_compare);
    }
}

/* H4: world->files' hash of a path, eight bytes at a time (a multiply and
 * a shift a word) instead of g_str_hash's five instructions a byte: a
 * checkpoint rewrite hashes its two ~50-byte paths six times, and
 * g_str_hash was 370 instructions a call at 12 x 10,000. Only the table's
 * layout depends on it: the records it holds are sorted by path wherever
 * their order reaches the model (power loss) or have no order that does. */
static guint path_hash(gconstpointer key)
{
    const char *path = key;
    size_t length = strlen(path);
    uint64_t hash = 0x9e3779b97f4a7c15ULL ^ (uint64_t)length;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, path, 8);
        hash = (hash ^ word) * 0xff51afd7ed558ccdULL;
        hash ^= hash >> 32;
        path += 8;
        length -= 8;
    }
    uint64_t tail = 0;
    memcpy(&tail, path, length);
    hash = (hash ^ tail) * 0xc4ceb9fe1a85ec53ULL;
    hash ^= hash >> 29;
    return (guint)hash;
}

static struct ks__file_record *record_lookup(ks_world *world, const char *path)
{
    return g_hash_table_lookup(world->files, path);
}

ks_time_ns ks_disk_idle_at_ns(const ks_world *world, ks_node_id node)
{
    node = ks__view_global(world, node);
    world = world->root;
    return MAX(world->now_ns, ks__node(world, node)->disk_done_at_ns);
}

/* ---- files ------------------------------------------------------------------------------ */

/* Makes folder `real` and its parents, as g_mkdir_with_parents does; true
 * when this call made `real` itself (so it is empty). The common cases cost
 * one mkdir (only the last component missing) instead of GLib's walk of
 * every component; whatever else happens (the folder exists, or cannot be
 * made) is left to GLib's walk, so its answer and its error are the same as
 * ever. On failure it records the host error (host_note) and returns
 * false; the caller frees what it holds, then escapes (host_escape), so a
 * failed run leaks no path. */
static bool make_dir(ks_world *world, const char *real, bool *made_out)
{
    *made_out = true;
    if (mkdir(real, 0755) == 0) {
        return true;
    }
    if (errno == ENOENT) {
        char *parent = g_path_get_dirname(real);
        bool parent_made = g_mkdir_with_parents(parent, 0755) == 0;
        g_free(parent);
        if (parent_made && mkdir(real, 0755) == 0) {
            return true;
        }
    }
    *made_out = false;
    if (g_mkdir_with_parents(real, 0755) != 0) {
        host_note(world, "mkdir", real);
        return false;
    }
    return true;
}

/* make_dir of real's folder; false (the error recorded) on failure. */
static bool make_parents(ks_world *world, const char *real)
{
    char *parent = g_path_get_dirname(real);
    bool made = false;
    bool ok = make_dir(world, parent, &made);
    g_free(parent);
    return ok;
}

#define CREATE_FAILED (-2) /* create_file: the host error is recorded */

/* Creates the regular file `real`, making its folder first if needed; returns
 * its descriptor, -1 if something already has that name, or CREATE_FAILED.
 * One open for a new file in an existing folder: no stat before it and no
 * mkdir of the folder (O_EXCL tells a new file from an old one). A first
 * open that fails for another reason than EEXIST goes the old way (parents,
 * then the open), so a folder that cannot be made fails with the same
 * "mkdir" error. */
static int create_file(ks_world *world, const char *real)
{
    int fd = open(real, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0 || errno == EEXIST) {
        return fd;
    }
    if (!make_parents(world, real)) {
        return CREATE_FAILED;
    }
    fd = open(real, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) {
        host_note(world, "create", real);
        return CREATE_FAILED;
    }
    return fd;
}

static void record_truncate(ks_world *world, struct ks__file_record *record, int64_t size_bytes)
{
    record_flush(world, record);
    undo_save(world, record, size_bytes, record->size_bytes);
    /* The real file has size_bytes after the flush (unless a host failure
     * dropped staged bytes), so a truncate to its size needs no host call:
     * a new file opened with KS_DISK_TRUNCATE. The model's state changes
     * all the same. */
    bool same_size = size_bytes == record->size_bytes && world->host_error == NULL;
    if (!same_size && ftruncate(record_fd(world, record), (off_t)size_bytes) != 0) {
        host_fail(world, "ftruncate", record->path);
    }
    record->size_bytes = size_bytes;
    record->has_last_write = false;
    record->rewrite_count++;
    cache_set(world, record, MIN(record->cache_lo_bytes, size_bytes),
              MIN(record->cache_hi_bytes, size_bytes));
    dirty_update(world, record);
}

/* A file with no open handle may have been changed behind the world's back
 * (a test or tool writing the real file). If its size or inode changed, the
 * record starts again from the file as found, taken as durable (D1). Returns
 * false if the file is gone. */
static bool record_check_external(ks_world *world, struct ks__file_record *record)
{
    char *real = real_path(world, record->path);
    struct stat st;
    bool exists = stat(real, &st) == 0;
    g_free(real);
    if (!exists) {
        return false;
    }
    bool changed = (int64_t)st.st_size != record->size_bytes;
    struct stat open_st;
    if (!changed && record->fd >= 0 && fstat(record->fd, &open_st) == 0) {
        changed = open_st.st_ino != st.st_ino || open_st.st_dev != st.st_dev;
    }
    if (!changed) {
        return true;
    }
    record_close_fd(world, record);
    undo_clear(record);
    record->size_bytes = (int64_t)st.st_size;
    record->durable_size_bytes = record->size_bytes;
    record->synced = true;
    record->has_last_write = false;
    record->rewrite_count++;
    dirty_update(world, record);
    cache_set(world, record, 0, 0); /* P1: new content, not read yet */
    return true;
}

ks_file *ks_disk_open(ks_world *world, ks_node_id node, const char *path, unsigned flags,
                      enum ks_io_result *result)
{
    g_autofree char *view_path = ks__view_path(world, path);
    path = view_path != NULL ? view_path : path;
    node = ks__view_global(world, node);
    world = world->root;
    check_path(path, false);
    ks_assert(node < world->node_count);
    flusher_catch_up(world, node);
    struct ks__file_record *record = record_lookup(world, path);
    if (record != NULL && record->node != node) {
        flusher_catch_up(world, record->node);
    }
    if (record != NULL && record->handle_count == 0 && !record_check_external(world, record)) {
        record_detach(world, record); /* deleted behind the world's back */
        record = NULL;
    }
    if (record == NULL) {
        char *real = real_path(world, path);
        /* A new file is created by the first host call; an old one is
         * stat'ed and opened when first used (record_fd). */
        int fd = (flags & KS_DISK_CREATE) ? create_file(world, real) : -1;
        if (fd == CREATE_FAILED) {
            g_free(real);
            host_escape(world);
        }
        struct stat st;
        bool existed = fd < 0 && stat(real, &st) == 0;
        if (fd < 0 && !existed) {
            if (flags & KS_DISK_CREATE) {
                host_note(world, "create", real); /* gone again after EEXIST */
                g_free(real);
                host_escape(world);
            }
            g_free(real);
            if (result != NULL) {
                *result = KS_IO_NOT_FOUND;
            }
            return NULL;
        }
        if (existed) {
            ks_assert(S_ISREG(st.st_mode));
        }
        g_free(real);
        int64_t size = existed ? (int64_t)st.st_size : 0;
        record = record_new(path, node, size, size); /* D1 */
        record->synced = existed;
        g_hash_table_insert(world->files, record->path, record);
        record_account(world, record);
        if (fd >= 0) {
            record_adopt_fd(world, record, fd); /* no second open for a new file */
        }
    }
    if (record->node != node) {
        /* Another node opens it: its dirty and cached bytes move along. */
        record_unaccount(world, record);
        record->node = node;
        record_account(world, record);
    }
    if (flags & KS_DISK_TRUNCATE) {
        record_truncate(world, record, 0);
    }
    ks_file *file = g_new0(ks_file, 1);
    file->world = world;
    file->record = record;
    record->handle_count++;
    file->next = world->handles;
    if (world->handles != NULL) {
        world->handles->prev = file;
    }
    world->handles = file;
    if (result != NULL) {
        *result = KS_IO_OK;
    }
    return file;
}

void ks_disk_close(ks_file *file)
{
    if (file == NULL) {
        return;
    }
    ks_world *world = file->world;
    struct ks__file_record *record = file->record;
    if (file->prev != NULL) {
        file->prev->next = file->next;
    } else {
        world->handles = file->next;
    }
    if (file->next != NULL) {
        file->next->prev = file->prev;
    }
    ks_assert(record->handle_count > 0);
    record->handle_count--;
    if (record->handle_count == 0) {
        if (record->detached) {
            record_destroy(world, record);
        } else {
            record_flush(world, record);
            stage_release(world, record);
        }
    }
    g_free(file);
}

int64_t ks_disk_size(const ks_file *file)
{
    return file->record->size_bytes;
}

uint64_t ks_disk_rewrite_count(const ks_file *file)
{
    return file->record->rewrite_count;
}

/* P1: a read of bytes inside the cached range misses nothing and leaves the
 * range as it is (cache_touch), so any such read only moves the file to the
 * front of the node's cache list. The flusher (W2) never changes the range,
 * so this holds before its catch-up as after. */
bool ks_disk_cached(const ks_file *file, int64_t position_bytes, int64_t byte_count)
{
    const struct ks__file_record *record = file->record;
    return record->accounted && byte_count > 0 && record->cache_hi_bytes > record->cache_lo_bytes &&
           position_bytes >= record->cache_lo_bytes &&
           position_bytes + byte_count <= record->cache_hi_bytes;
}

enum ks_io_result ks_disk_pwrite(ks_file *file, const void *bytes, size_t byte_count,
                                 int64_t position_bytes)
{
    ks_world *world = file->world;
    struct ks__file_record *record = file->record;
    ks_assert(position_bytes >= 0);
    ks_assert(bytes != NULL || byte_count == 0);
    flusher_catch_up(world, record->node);
    int64_t end = position_bytes + (int64_t)byte_count;
    if (position_bytes == record->size_bytes && byte_count > 0 && byte_count < STAGE_BYTES_MAX) {
        /* An append: staged (S1). Nothing below the durable size changes, so
         * there is nothing to save for undo. */
        if (record->staged_bytes + byte_count > STAGE_BYTES_MAX) {
            record_flush(world, record);
        }
        size_t need = record->staged_bytes + byte_count;
        if (need > record->staged_capacity &&
            world->staged_capacity_bytes >= world->stage_budget_bytes) {
            stage_release_all(world); /* S4: this file's buffer too */
            need = byte_count;
        }
        if (need > record->staged_capacity) {
            /* S2: sized by what the file is given, not to a fixed page. */
            size_t capacity = record->staged_capacity;
            size_t room = need;
            if (capacity == 0) {
                capacity = STAGE_BYTES_MIN;
                room = MAX(need, 4 * byte_count);
            }
            while (capacity < room) {
                capacity *= 2;
            }
            record->staged = g_realloc(record->staged, capacity);
            world->staged_capacity_bytes += capacity - record->staged_capacity;
            record->staged_capacity = (uint32_t)capacity;
        }
        memcpy(record->staged + record->staged_bytes, bytes, byte_count);
        record->staged_bytes = (uint32_t)need;
    } else {
        if (position_bytes < record->size_bytes) {
            record->rewrite_count++;
        }
        record_flush(world, record);
        undo_save(world, record, position_bytes, end);
        write_all(world, record_fd(world, record), bytes, byte_count, position_bytes, record->path);
    }
    if (end > record->size_bytes) {
        record->size_bytes = end;
    }
    if (byte_count > 0) {
        record->has_last_write = true;
        record->last_write_position_bytes = position_bytes;
        record->last_write_byte_count = (int64_t)byte_count;
    }
    /* C2: into the page cache, free unless the dirty limit holds it (W3). */
    cache_touch(world, record, position_bytes, end);
    dirty_update(world, record);
    throttle_writer(world, ks__node(world, record->node));
    return KS_IO_OK;
}

enum ks_io_result ks_disk_append(ks_file *file, const void *bytes, size_t byte_count)
{
    return ks_disk_pwrite(file, bytes, byte_count, file->record->size_bytes);
}

/* M1: a pointer to [position, position + byte_count) of the real file through
 * the record's mapping, or NULL when the read should use pread. Only settled
 * files map (no write since their last fsync or truncate: a rolled segment,
 * an index); a file being appended to (an active segment) is read with pread
 * or from its staged bytes, so a run that mostly reads fresh data does not
 * grow its resident set by the whole log. The caller keeps the range below
 * the real file's size, so no page past its end is touched. */
static const uint8_t *map_range(ks_world *world, struct ks__file_record *record,
                                int64_t position_bytes, size_t byte_count)
{
    if (record->has_last_write || record->staged_bytes > 0) {
        return NULL;
    }
    int64_t real_size = record->size_bytes;
    int64_t end = position_bytes + (int64_t)byte_count;
    if (record->map == NULL || (int64_t)record->map_bytes < end) {
        int fd = record_fd(world, record);
        record_unmap(record);
        size_t length =
            ((size_t)real_size + MAP_ROUND_BYTES - 1) / MAP_ROUND_BYTES * MAP_ROUND_BYTES;
        void *map = mmap(NULL, length, PROT_READ, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) {
            return NULL; /* pread still works */
        }
        record->map = map;
        record->map_bytes = length;
    }
    return record->map + position_bytes;
}

enum ks_io_result ks_disk_read(ks_file *file, void *bytes, size_t byte_count,
                               int64_t position_bytes, size_t *read_count_out)
{
    ks_world *world = file->world;
    struct ks__file_record *record = file->record;
    ks_assert(position_bytes >= 0);
    ks_assert(bytes != NULL || byte_count == 0);
    flusher_catch_up(world, record->node);
    size_t n = 0;
    if (position_bytes < record->size_bytes) {
        size_t available = (size_t)(record->size_bytes - position_bytes);
        size_t want = MIN(byte_count, available);
        int64_t real_size = record->size_bytes - (int64_t)record->staged_bytes;
        if (position_bytes < real_size) {
            size_t from_file = MIN(want, (size_t)(real_size - position_bytes));
            const uint8_t *mapped = map_range(world, record, position_bytes, from_file);
            if (mapped != NULL) {
                memcpy(bytes, mapped, from_file);
                n = from_file;
            } else {
                n = read_all(world, record_fd(world, record), bytes, from_file, position_bytes,
                             record->path);
            }
            ks_assert(n == from_file);
        }
        if (n < want) {
            /* The rest is staged (S1). */
            size_t staged_at = (size_t)(position_bytes + (int64_t)n - real_size);
            memcpy((uint8_t *)bytes + n, record->staged + staged_at, want - n);
            n = want;
        }
    }
    if (read_count_out != NULL) {
        *read_count_out = n;
    }
    if (n > 0) {
        /* C1, C2: bytes outside the page cache come from the device (P1). */
        struct ks__node *node = ks__node(world, record->node);
        int64_t end = position_bytes + (int64_t)n;
        int64_t missing = cache_miss_bytes(record, position_bytes, end);
        if (missing > 0) {
            caller_waits(node, device_request(node, call_start_ns(world, node),
                                              transfer_ns(world, missing)));
            node->disk_stats.read_miss_bytes += (uint64_t)missing;
        }
        cache_touch(world, record, position_bytes, end);
    }
    return KS_IO_OK;
}

/* ks_disk_fsync (wait) and ks_disk_fsync_background (!wait). */
static enum ks_io_result fsync_file(ks_file *file, bool wait)
{
    ks_world *world = file->world;
    struct ks__file_record *record = file->record;
    flusher_catch_up(world, record->node);
    record_flush(world, record); /* so a synced file is whole on the host too */
    int64_t dirty = record->dirty_bytes;
    record_make_durable(world, record);
    struct ks__node *node = ks__node(world, record->node);
    node->disk_stats.fsync_count++;
    if (dirty == 0) {
        return KS_IO_OK; /* C1: nothing to write, so no device request (a clean inode) */
    }
    /* C1: the dirty bytes go to the device, then its cache flush. */
    ks_time_ns cost_ns = transfer_ns(world, dirty) + world->disk_fsync_latency_ns;
    ks_time_ns done_ns =
        device_request(node, wait ? call_start_ns(world, node) : world->now_ns, cost_ns);
    if (wait) {
        caller_waits(node, done_ns);
    }
    return KS_IO_OK;
}

enum ks_io_result ks_disk_fsync(ks_file *file)
{
    return fsync_file(file, true);
}

enum ks_io_result ks_disk_fsync_background(ks_file *file)
{
    return fsync_file(file, false);
}

enum ks_io_result ks_disk_truncate(ks_file *file, int64_t size_bytes)
{
    ks_assert(size_bytes >= 0);
    flusher_catch_up(file->world, file->record->node);
    record_truncate(file->world, file->record, size_bytes);
    return KS_IO_OK;
}

/* ---- whole-file operations -------------------------------------------------------------- */

static bool is_dir(const char *real)
{
    struct stat st;
    return stat(real, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Records whose path is `prefix` or lies under folder `prefix`, sorted by path.
 * folder false: `prefix` names no folder on the host, so only the record of
 * that exact path can match, found without a scan of every record (a rename
 * of a checkpoint file scanned them all: O(files) per checkpoint write). */
static GPtrArray *records_under(ks_world *world, const char *prefix, bool folder)
{
    GPtrArray *found = g_ptr_array_new();
    if (!folder) {
        gpointer record = g_hash_table_lookup(world->files, prefix);
        if (record != NULL) {
            ks_ptr_array_add(found, record);
        }
        return found;
    }
    size_t length = strlen(prefix);
    GHashTableIter iter;
    gpointer key, value;
    g_hash_table_iter_init(&iter, world->files);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        const char *path = key;
        if (strncmp(path, prefix, length) == 0 && (path[length] == '/' || path[length] == 0)) {
            ks_ptr_array_add(found, value);
        }
    }
    return found;
}

static void remove_tree(ks_world *world, const char *real)
{
    if (is_dir(real)) {
        GDir *dir = g_dir_open(real, 0, NULL);
        if (dir != NULL) {
            const char *name;
            while ((name = g_dir_read_name(dir)) != NULL) {
                char *child = g_build_filename(real, name, NULL);
                remove_tree(world, child);
                g_free(child);
            }
            g_dir_close(dir);
        }
        if (g_rmdir(real) != 0) {
            host_fail_real(world, "rmdir", real);
        }
    } else if (g_unlink(real) != 0) {
        host_fail_real(world, "unlink", real);
    }
}

/* Whether two run-relative paths name entries of the same folder. */
static bool same_folder(const char *a, const char *b)
{
    const char *a_slash = strrchr(a, '/');
    const char *b_slash = strrchr(b, '/');
    size_t a_length = a_slash != NULL ? (size_t)(a_slash - a) : 0;
    size_t b_length = b_slash != NULL ? (size_t)(b_slash - b) : 0;
    return a_length == b_length && memcmp(a, b, a_length) == 0;
}

/* H2: ks_disk_rename of a file the world has a record of over a name in
 * its folder that is no file with an open handle: a checkpoint's
 * `<path>.tmp` over `<path>` (core/log.c), 6,089 times in the measured
 * second at 12 x 10,000. A record is only ever made for a regular file, so
 * `from` is no folder and what `to` names is at most that one record's file
 * (or a file or folder the world does not know, which rename(2) replaces or
 * refuses as before): the general path's stat of both names and its two
 * records_under look-ups are not needed. The rename is made first, and the
 * replaced record leaves the table after it, as its last handle is closed
 * (so nothing needs to pin its descriptor). The moved record takes the
 * replaced one's path string, which is the table's key for `to` already,
 * so the table only changes the value there and drops `from`: every
 * rewrite of a checkpoint used to steal two keys and insert two, and the
 * tombstones made GHashTable rehash its 150,000 entries every few thousand
 * writes (2,400 instructions an insert on average). Same records, same
 * order of model changes, same host result: the one difference is that
 * `from` missing on the host (removed behind the world's back) is found by
 * rename(2) failing with ENOENT, and then the general path answers.
 * Returns false when the general path must do the rename. */
static bool rename_known_file(ks_world *world, const char *from, const char *to,
                              const char *real_from, const char *real_to)
{
    if (strcmp(from, to) == 0 || !same_folder(from, to)) {
        return false;
    }
    struct ks__file_record *moved = record_lookup(world, from);
    if (moved == NULL) {
        return false;
    }
    struct ks__file_record *replaced = record_lookup(world, to);
    if (replaced != NULL && replaced->handle_count > 0) {
        return false; /* record_detach pins its descriptor before the rename */
    }
    if (rename(real_from, real_to) != 0) {
        if (errno == ENOENT) {
            return false;
        }
        host_fail_real(world, "rename", real_from);
    }
    g_hash_table_steal(world->files, moved->path);
    if (replaced != NULL) {
        char *key = replaced->path;
        replaced->path = moved->path;
        moved->path = key;
        g_hash_table_insert(world->files, moved->path, moved); /* the same key: a new value */
        record_unaccount(world, replaced); /* record_detach, as the general path */
        record_destroy(world, replaced);
    } else {
        g_free(moved->path);
        moved->path = g_strdup(to);
        g_hash_table_insert(world->files, moved->path, moved);
    }
    return true;
}

enum ks_io_result ks_disk_rename(ks_world *world, ks_node_id node, const char *from, const char *to)
{
    g_autofree char *view_from = ks__view_path(world, from);
    g_autofree char *view_to = ks__view_path(world, to);
    from = view_from != NULL ? view_from : from;
    to = view_to != NULL ? view_to : to;
    node = ks__view_global(world, node);
    world = world->root;
    check_path(from, false);
    check_path(to, false);
    ks_assert(node < world->node_count);
    flusher_catch_up(world, node);
    char *real_from = real_path(world, from);
    char *real_to = real_path(world, to);
    if (rename_known_file(world, from, to, real_from, real_to)) {
        g_free(real_from);
        g_free(real_to);
        return KS_IO_OK;
    }
    struct stat st;
    if (stat(real_from, &st) != 0) {
        g_free(real_from);
        g_free(real_to);
        return KS_IO_NOT_FOUND;
    }
    if (strcmp(from, to) != 0) {
        /* Whatever `to` names is replaced. */
        GPtrArray *replaced = records_under(world, to, is_dir(real_to));
        for (guint i = 0; i < replaced->len; i++) {
            record_detach(world, replaced->pdata[i]);
        }
        g_ptr_array_free(replaced, TRUE);
        if (!same_folder(from, to)) {
            /* `from`'s folder exists: it was just stat'ed. */
            if (!make_parents(world, real_to)) {
                g_free(real_from);
                g_free(real_to);
                host_escape(world);
            }
        }
        if (S_ISDIR(st.st_mode) && is_dir(real_to)) {
            remove_tree(world, real_to);
        }
        if (rename(real_from, real_to) != 0) {
            host_fail_real(world, "rename", real_from);
        }
        /* The records (and their durable state) follow the files. */
        GPtrArray *moved = records_under(world, from, S_ISDIR(st.st_mode));
        size_t from_length = strlen(from);
        for (guint i = 0; i < moved->len; i++) {
            struct ks__file_record *record = moved->pdata[i];
            g_hash_table_steal(world->files, record->path);
            char *path = g_strconcat(to, record->path + from_length, NULL);
            g_free(record->path);
            record->path = path;
            g_hash_table_insert(world->files, record->path, record);
        }
        g_ptr_array_free(moved, TRUE);
    }
    g_free(real_from);
    g_free(real_to);
    return KS_IO_OK;
}

/* The general ks_disk_replace: the calls it stands for, one by one. */
static enum ks_io_result replace_by_calls(ks_world *world, ks_node_id node, const char *path,
                                          const char *tmp_path, const void *bytes,
                                          size_t byte_count, bool wait)
{
    enum ks_io_result result = KS_IO_OK;
    ks_file *file = ks_disk_open(world, node, tmp_path, KS_DISK_CREATE | KS_DISK_TRUNCATE, &result);
    ks_assert(file != NULL);
    result = ks_disk_append(file, bytes, byte_count);
    if (result == KS_IO_OK) {
        result = fsync_file(file, wait);
    }
    ks_disk_close(file);
    if (result == KS_IO_OK) {
        result = ks_disk_rename(world, node, tmp_path, path);
    }
    return result;
}

/* H5: ks_disk_replace when `<path>.tmp` is unknown to the world and absent
 * on the host, and no handle is open on `path` (every checkpoint rewrite):
 * the same model changes as ks_disk_open (create, truncate), ks_disk_append,
 * the fsync, ks_disk_close and rename_known_file, in that order, and the
 * same host calls (open, pwrite, rename, and the replaced file's close),
 * but the new record never enters the path table under the `.tmp` name: it
 * takes `path`'s key at the end, as a rename does. At 12 x 10,000 with
 * 5,000 records/s the 12,000 leader-epoch rewrites of 5 s inserted and
 * stole a `.tmp` key each, and the deleted-entry markers made GHashTable
 * rebuild its 150,000 entries again and again (10.9 M instructions).
 * Returns false, having changed nothing, when replace_by_calls must do it. */
static bool replace_fast(ks_world *world, ks_node_id node, const char *path, const char *tmp_path,
                         const void *bytes, size_t byte_count, bool wait,
                         enum ks_io_result *result_out)
{
    if (record_lookup(world, tmp_path) != NULL) {
        return false;
    }
    struct ks__file_record *replaced = record_lookup(world, path);
    if (replaced != NULL && replaced->handle_count > 0) {
        return false; /* the general rename pins its descriptor */
    }
    flusher_catch_up(world, node);
    char *real_tmp = real_path(world, tmp_path);
    int fd = create_file(world, real_tmp);
    if (fd == CREATE_FAILED) {
        g_free(real_tmp);
        host_escape(world);
    }
    if (fd < 0) {
        g_free(real_tmp);
        return false; /* the host has a `.tmp` the world does not know */
    }
    /* ks_disk_open(tmp_path, KS_DISK_CREATE | KS_DISK_TRUNCATE) of a new
     * file, outside the path table. */
    struct ks__file_record *record = record_new(tmp_path, node, 0, 0);
    record_account(world, record);
    record_adopt_fd(world, record, fd);
    record_truncate(world, record, 0);
    record->handle_count++;
    ks_file file = { .world = world, .record = record, .prev = NULL, .next = NULL };
    enum ks_io_result result = ks_disk_append(&file, bytes, byte_count);
    if (result == KS_IO_OK) {
        result = fsync_file(&file, wait);
    }
    /* ks_disk_close */
    record->handle_count--;
    record_flush(world, record);
    stage_release(world, record);
    /* ks_disk_rename(tmp_path, path): rename_known_file; on a failed write
     * the `.tmp` stays, as a file the world knows. */
    flusher_catch_up(world, node);
    if (result != KS_IO_OK) {
        g_hash_table_insert(world->files, record->path, record);
        g_free(real_tmp);
        *result_out = result;
        return true;
    }
    char *real_to = real_path(world, path);
    if (rename(real_tmp, real_to) != 0) {
        if (errno != ENOENT) {
            host_fail_real(world, "rename", real_tmp);
        }
        /* Removed behind the world's back: ks_disk_rename's general path
         * answers so, the record staying under its `.tmp` name. */
        g_hash_table_insert(world->files, record->path, record);
        g_free(real_to);
        g_free(real_tmp);
        *result_out = KS_IO_NOT_FOUND;
        return true;
    }
    g_free(real_to);
    g_free(real_tmp);
    g_free(record->path);
    if (replaced != NULL) {
        record->path = replaced->path; /* the table's key for path: a new value there */
        replaced->path = g_strdup(tmp_path);
        g_hash_table_insert(world->files, record->path, record);
        record_unaccount(world, replaced);
        record_destroy(world, replaced);
    } else {
        record->path = g_strdup(path);
        g_hash_table_insert(world->files, record->path, record);
    }
    *result_out = KS_IO_OK;
    return true;
}

enum ks_io_result ks_disk_replace(ks_world *world, ks_node_id node, const char *path,
                                  const void *bytes, size_t byte_count, bool wait)
{
    g_autofree char *view_path = ks__view_path(world, path);
    path = view_path != NULL ? view_path : path;
    node = ks__view_global(world, node);
    world = world->root;
    check_path(path, false);
    ks_assert(node < world->node_count);
    size_t path_bytes = strlen(path);
    char tmp_stack[256];
    char *tmp_path = path_bytes + 5 <= sizeof tmp_stack ? tmp_stack : g_malloc(path_bytes + 5);
    memcpy(tmp_path, path, path_bytes);
    memcpy(tmp_path + path_bytes, ".tmp", 5);
    enum ks_io_result result = KS_IO_OK;
    bool done = replace_fast(world, node, path, tmp_path, bytes, byte_count, wait, &result);
    if (!done) {
        result = replace_by_calls(world, node, path, tmp_path, bytes, byte_count, wait);
    }
    if (tmp_path != tmp_stack) {
        g_free(tmp_path);
    }
    return result;
}

enum ks_io_result ks_disk_delete(ks_world *world, ks_node_id node, const char *path)
{
    g_autofree char *view_path = ks__view_path(world, path);
    path = view_path != NULL ? view_path : path;
    node = ks__view_global(world, node);
    world = world->root;
    check_path(path, false);
    ks_assert(node < world->node_count);
    flusher_catch_up(world, node);
    char *real = real_path(world, path);
    struct stat st;
    if (stat(real, &st) != 0) {
        g_free(real);
        return KS_IO_NOT_FOUND;
    }
    GPtrArray *gone = records_under(world, path, S_ISDIR(st.st_mode));
    for (guint i = 0; i < gone->len; i++) {
        record_detach(world, gone->pdata[i]);
    }
    g_ptr_array_free(gone, TRUE);
    remove_tree(world, real);
    g_free(real);
    return KS_IO_OK;
}

bool ks_disk_exists(ks_world *world, ks_node_id node, const char *path)
{
    g_autofree char *view_path = ks__view_path(world, path);
    path = view_path != NULL ? view_path : path;
    node = ks__view_global(world, node);
    world = world->root;
    check_path(path, false);
    ks_assert(node < world->node_count);
    char *real = real_path(world, path);
    struct stat st;
    bool exists = stat(real, &st) == 0;
    g_free(real);
    return exists;
}

bool ks_disk_mkdir_new(ks_world *world, ks_node_id node, const char *path)
{
    g_autofree char *view_path = ks__view_path(world, path);
    path = view_path != NULL ? view_path : path;
    node = ks__view_global(world, node);
    world = world->root;
    check_path(path, false);
    ks_assert(node < world->node_count);
    char *real = real_path(world, path);
    bool made = false;
    bool ok = make_dir(world, real, &made);
    g_free(real);
    if (!ok) {
        host_escape(world);
    }
    return made;
}

enum ks_io_result ks_disk_mkdir(ks_world *world, ks_node_id node, const char *path)
{
    ks_disk_mkdir_new(world, node, path);
    return KS_IO_OK;
}

static int name_compare(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **ks_disk_list(ks_world *world, ks_node_id node, const char *path)
{
    g_autofree char *view_path = ks__view_path(world, path);
    path = view_path != NULL ? view_path : path;
    node = ks__view_global(world, node);
    world = world->root;
    check_path(path, true);
    ks_assert(node < world->node_count);
    char *real = real_path(world, path);
    GDir *dir = g_dir_open(real, 0, NULL);
    g_free(real);
    if (dir == NULL) {
        return NULL;
    }
    GPtrArray *names = g_ptr_array_new();
    const char *name;
    while ((name = g_dir_read_name(dir)) != NULL) {
        ks_ptr_array_add(names, g_strdup(name));
    }
    g_dir_close(dir);
    if (names->len > 1) {
        qsort(names->pdata, names->len, sizeof(char *), name_compare);
    }
    ks_ptr_array_add(names, NULL);
    return (char **)g_ptr_array_free(names, FALSE);
}

void ks_disk_list_free(char **names)
{
    g_strfreev(names);
}

/* ---- faults ----------------------------------------------------------------------------- */

static int record_path_compare(const void *a, const void *b)
{
    const struct ks__file_record *x = *(const struct ks__file_record *const *)a;
    const struct ks__file_record *y = *(const struct ks__file_record *const *)b;
    return strcmp(x->path, y->path);
}

/* Writes back the durable content (D1, D2). */
static void restore_durable(ks_world *world, struct ks__file_record *record)
{
    int fd = record_fd(world, record);
    if (ftruncate(fd, (off_t)record->durable_size_bytes) != 0) {
        host_fail(world, "ftruncate", record->path);
    }
    for (guint i = 0; i < undo_len(record); i++) {
        struct undo_entry *e = &g_array_index(record->undo, struct undo_entry, i);
        write_all(world, fd, e->bytes, (size_t)e->byte_count, e->position_bytes, record->path);
    }
    undo_clear(record);
    record->size_bytes = record->durable_size_bytes;
}

/* D3: what survives of the last unsynced write (see the header). `bytes` holds
 * the write as it was; returns the number of its bytes kept (0 = dropped),
 * possibly with garbage written over the end of `bytes`. */
static int64_t tear(ks_world *world, int64_t position_bytes, uint8_t *bytes, int64_t byte_count)
{
    uint64_t outcome = ks_world_random_below(world, KS_RNG_DISK, 3);
    if (outcome == 0) {
        return 0;
    }
    if (outcome == 1) {
        int64_t first = (position_bytes / SECTOR_BYTES + 1) * SECTOR_BYTES;
        int64_t end = position_bytes + byte_count;
        if (first >= end) {
            return 0; /* no sector boundary strictly inside: all or nothing, so nothing */
        }
        uint64_t boundaries = (uint64_t)((end - 1 - first) / SECTOR_BYTES + 1);
        int64_t cut =
            first + (int64_t)ks_world_random_below(world, KS_RNG_DISK, boundaries) * SECTOR_BYTES;
        return cut - position_bytes;
    }
    uint64_t garbage =
        1 + ks_world_random_below(world, KS_RNG_DISK, (uint64_t)MIN(byte_count, SECTOR_BYTES));
    for (uint64_t i = 0; i < garbage; i++) {
        bytes[byte_count - 1 - (int64_t)i] = (uint8_t)ks_world_random_u64(world, KS_RNG_DISK);
    }
    return byte_count;
}

static void power_loss_file(ks_world *world, struct ks__file_record *record)
{
    uint8_t *torn = NULL;
    int64_t position = 0, length = 0;
    if (record->synced && record->has_last_write &&
        record->last_write_position_bytes <= record->durable_size_bytes) {
        position = record->last_write_position_bytes;
        length = record->last_write_byte_count;
        torn = g_malloc((size_t)length);
        size_t n =
            read_all(world, record_fd(world, record), torn, (size_t)length, position, record->path);
        ks_assert(n == (size_t)length);
    }
    restore_durable(world, record);
    if (torn != NULL) {
        int64_t kept = tear(world, position, torn, length);
        if (kept > 0) {
            write_all(world, record_fd(world, record), torn, (size_t)kept, position, record->path);
            record->size_bytes = MAX(record->size_bytes, position + kept);
        }
        g_free(torn);
    }
    record->has_last_write = false;
    record->rewrite_count++;
    record->durable_size_bytes = record->size_bytes; /* what reached the platter is durable */
    record->synced = true;
    dirty_update(world, record);
    cache_set(world, record, 0, 0); /* the page cache was memory */
}

static void power_loss_node(ks_world *world, ks_node_id node)
{
    GPtrArray *mine = g_ptr_array_new();
    GHashTableIter iter;
    gpointer key, value;
    g_hash_table_iter_init(&iter, world->files);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        struct ks__file_record *record = value;
        if (record->node == node) {
            ks_ptr_array_add(mine, record);
        }
    }
    /* Sorted, so the KS_RNG_DISK draws do not depend on hash-table order. */
    if (mine->len > 1) {
        qsort(mine->pdata, mine->len, sizeof(void *), record_path_compare);
    }
    for (guint i = 0; i < mine->len; i++) {
        record_flush(world, mine->pdata[i]);
    }
    for (guint i = 0; i < mine->len; i++) {
        power_loss_file(world, mine->pdata[i]);
    }
    g_ptr_array_free(mine, TRUE);
}

void ks__disk_crash(ks_world *world, ks_node_id node_id, bool power_loss)
{
    struct ks__node *node = ks__node(world, node_id);
    if (!power_loss) {
        /* The process's waits end with it; the device and the flusher go on (W2). */
        node->disk_done_at_ns = world->now_ns;
        return;
    }
    flusher_catch_up(world, node_id); /* W2: what was written back before the power went */
    power_loss_node(world, node_id);
    /* Nothing stays queued on a device without power. */
    node->disk_done_at_ns = world->now_ns;
    node->device_idle_at_ns = world->now_ns;
    ks_assert(node->dirty_bytes == 0);
}

bool ks_world_disk_corrupt(ks_world *world, ks_node_id node, const char *path,
                           int64_t position_bytes, size_t byte_count)
{
    check_path(path, false);
    ks_assert(node < world->node_count);
    ks_assert(position_bytes >= 0);
    flusher_catch_up(world, node);
    struct ks__file_record *record = record_lookup(world, path);
    if (record == NULL) {
        /* Not opened yet in this world: take it as it is on disk. */
        enum ks_io_result result;
        ks_file *file = ks_disk_open(world, node, path, 0, &result);
        if (file == NULL) {
            return false;
        }
        ks_disk_close(file);
        record = record_lookup(world, path);
    }
    int64_t end = position_bytes + (int64_t)byte_count;
    if (end > record->size_bytes) {
        return false;
    }
    record_flush(world, record);
    record->rewrite_count++;
    uint8_t *bytes = g_malloc(byte_count > 0 ? byte_count : 1);
    int fd = record_fd(world, record);
    read_all(world, fd, bytes, byte_count, position_bytes, record->path);
    for (size_t i = 0; i < byte_count; i++) {
        bytes[i] ^= 0xFF;
    }
    write_all(world, fd, bytes, byte_count, position_bytes, record->path);
    g_free(bytes);
    /* Durably: the saved durable copy of these bytes flips too. */
    for (guint i = 0; i < undo_len(record); i++) {
        struct undo_entry *e = &g_array_index(record->undo, struct undo_entry, i);
        int64_t lo = MAX(e->position_bytes, position_bytes);
        int64_t hi = MIN(e->position_bytes + e->byte_count, end);
        for (int64_t p = lo; p < hi; p++) {
            e->bytes[p - e->position_bytes] ^= 0xFF;
        }
    }
    return true;
}

int64_t ks_world_disk_durable_size(ks_world *world, ks_node_id node, const char *path)
{
    check_path(path, false);
    ks_assert(node < world->node_count);
    struct ks__file_record *record = record_lookup(world, path);
    if (record != NULL) {
        flusher_catch_up(world, record->node);
        return record->durable_size_bytes;
    }
    char *real = real_path(world, path);
    struct stat st;
    int64_t size = stat(real, &st) == 0 ? (int64_t)st.st_size : -1; /* D1; -1: no such file */
    g_free(real);
    return size;
}

uint64_t ks_world_disk_fsync_count(const ks_world *world, ks_node_id node)
{
    return ks__node(world, node)->disk_stats.fsync_count;
}

void ks_world_disk_stats(ks_world *world, ks_node_id node_id, struct ks_world_disk_stats *out)
{
    flusher_catch_up(world, node_id);
    struct ks__node *node = ks__node(world, node_id);
    *out = node->disk_stats;
    out->dirty_bytes = node->dirty_bytes;
    out->cached_bytes = node->cached_bytes;
}

void ks_world_disk_set_node_delay(ks_world *world, ks_node_id node, ks_time_ns extra_ns)
{
    flusher_catch_up(world, node); /* wake-ups due before now ran at the old latency */
    ks__node(world, node)->disk_delay_ns = extra_ns;
}

/* ---- set-up ------------------------------------------------------------------------------ */

bool ks__disk_init(ks_world *world, GError **error)
{
    world->files = g_hash_table_new(path_hash, g_str_equal);
    bool writeback =
        world->disk_writeback_interval_ns > 0 && world->disk_writeback_expire_ns != KS_TIME_NEVER;
    for (ks_node_id id = 0; id < world->node_count; id++) {
        struct ks__node *node = ks__node(world, id);
        node->flusher_next_ns = KS_TIME_NEVER;
        if (!writeback) {
            continue;
        }
        /* W2: the phase comes from the seed, from a splitmix64 stream of
         * its own (a pair no connection uses), so it moves no other draw. */
        if (!world->disk_writeback_aligned) {
            uint64_t state = ks__rng_link_seed(world->seed, ks__pair(UINT32_MAX, id));
            node->flusher_phase_ns = ks__rng_splitmix64(&state) % world->disk_writeback_interval_ns;
        }
        node->flusher_next_ns = flusher_wakeup_at_or_after(world, node, 0);
    }
    if (g_mkdir_with_parents(world->run_dir, 0755) != 0) {
        int saved = errno;
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved),
                    "cannot make run folder %s: %s", world->run_dir, g_strerror(saved));
        return false;
    }
    return true;
}

void ks__disk_deinit(ks_world *world)
{
    /* Handles still open are closed here; they must not be used afterwards. */
    while (world->handles != NULL) {
        ks_disk_close(world->handles);
    }
    if (world->files != NULL) {
        GHashTableIter iter;
        gpointer key, value;
        g_hash_table_iter_init(&iter, world->files);
        while (g_hash_table_iter_next(&iter, &key, &value)) {
            g_hash_table_iter_steal(&iter);
            record_destroy(world, value);
        }
        g_hash_table_destroy(world->files);
        world->files = NULL;
    }
}
