/*
** sim/world.c: building and freeing the world, node faults, and the trace.
**
** The trace hash is a running 64-bit hash with a fixed algorithm, so the same
** run gives the same hash on every machine: every integer is fed as its
** little-endian bytes, and bytes are consumed 8 at a time (little-endian
** words, the last word zero-padded, then the length). Each word w updates
** h = (rotl(h, 23) XOR w) * 0x9E3779B97F4A7C15 (mod 2^64). Every step is a
** bijection of h for a fixed w, so any single changed word changes the final
** hash; the hash is a fingerprint for determinism checks, not a defence
** against crafted collisions, and it costs one multiply per word on the hot
** path. Per processed event it covers: a type tag (1 timer, 2 message),
** at_ns, kind, node, and for messages the source, byte count and bytes.
** ks_world_trace_mix folds in tag 3, kind, node and the given bytes.
*/
#include "world_int.h"
#include "../core/array.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define TRACE_MIX 3 /* TRACE_TIMER 1 and TRACE_MESSAGE 2: world_int.h */

static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t word;
    memcpy(&word, p, sizeof(word)); /* one load; the value is the little-endian word */
    return GUINT64_FROM_LE(word);
}

uint64_t ks__hash_bytes(uint64_t hash, const void *bytes, size_t byte_count)
{
    const uint8_t *p = bytes;
    size_t i = 0;
    /* Four words a turn: the same steps in the same order, with a quarter
     * of the loop's own instructions (a message's bytes are most of the
     * trace's cost). */
    for (; i + 32 <= byte_count; i += 32) {
        hash = ks__hash_u64(hash, load_le64(p + i));
        hash = ks__hash_u64(hash, load_le64(p + i + 8));
        hash = ks__hash_u64(hash, load_le64(p + i + 16));
        hash = ks__hash_u64(hash, load_le64(p + i + 24));
    }
    for (; i + 8 <= byte_count; i += 8) {
        hash = ks__hash_u64(hash, load_le64(p + i));
    }
    if (i < byte_count) {
        /* The 1 to 7 bytes left, zero-padded, read little-endian: the top
         * bytes of the message's last 8 when it has 8 (one load, not a call
         * of memcpy with a length known only here), else one by one. */
        size_t left = byte_count - i;
        uint64_t word = 0;
        if (byte_count >= 8) {
            word = load_le64(p + byte_count - 8) >> (8 * (8 - left));
        } else {
            for (size_t k = 0; k < left; k++) {
                word |= (uint64_t)p[i + k] << (8 * k);
            }
        }
        hash = ks__hash_u64(hash, word);
    }
    return ks__hash_u64(hash, (uint64_t)byte_count);
}

void ks__trace_print(const ks_world *world, const struct ks__event *event)
{
    if (event->type == KS__EVENT_MESSAGE) {
        fprintf(world->trace_out, "%llu msg kind=%u node=%u from=%u bytes=%zu\n",
                (unsigned long long)event->at_ns, event->kind, event->node, event->source,
                event->u.message.byte_count);
    } else {
        fprintf(world->trace_out, "%llu timer kind=%u node=%u\n", (unsigned long long)event->at_ns,
                event->kind, event->node);
    }
}

uint64_t ks_world_trace_hash(const ks_world *world)
{
    return world->trace_hash;
}

void ks_world_set_trace(ks_world *world, FILE *out)
{
    world->trace_out = out;
}

void ks_world_trace_mix(ks_world *world, uint32_t kind, ks_node_id node, const void *bytes,
                        size_t byte_count)
{
    ks_assert(bytes != NULL || byte_count == 0);
    uint64_t h = world->trace_hash;
    h = ks__hash_u64(h, TRACE_MIX);
    h = ks__hash_u64(h, kind);
    h = ks__hash_u64(h, node);
    h = ks__hash_bytes(h, bytes, byte_count);
    world->trace_hash = h;
}

/* ---- life cycle --------------------------------------------------------------- */

ks_world *ks_world_new(const struct ks_world_config *config, GError **error)
{
    ks_assert(config != NULL);
    ks_assert(config->run_dir != NULL);
    ks_assert(config->node_count >= 1);
    ks_array_layout_check(); /* core/array.h's fast paths, once per process */
    ks_world *world = g_new0(ks_world, 1);
    world->root = world;
    world->seed = config->seed;
    world->run_dir = g_strdup(config->run_dir);
    world->node_count = config->node_count;
    world->network_latency_ns = config->network_latency_ns;
    world->network_jitter_ns = config->network_jitter_ns;
    world->disk_fsync_latency_ns = config->disk_fsync_latency_ns;
    world->disk_bandwidth_bytes_per_s = config->disk_bandwidth_bytes_per_s;
    world->open_file_count_max = config->open_file_count_max ? config->open_file_count_max : 512;
    world->stage_budget_bytes = KS__STAGE_BUDGET_BYTES;
    world->disk_writeback_expire_ns = config->disk_writeback_expire_ns;
    world->disk_writeback_interval_ns = config->disk_writeback_interval_ns;
    world->disk_writeback_aligned = config->disk_writeback_aligned;
    world->disk_dirty_limit_bytes = config->disk_dirty_limit_bytes;
    world->disk_page_cache_bytes = config->disk_page_cache_bytes;
    world->trace_hash = UINT64_C(0x6b73696d74726163); /* "ksimtrac" */
    world->nodes = g_new0(struct ks__node, world->node_count);
    for (uint32_t i = 0; i < world->node_count; i++) {
        world->nodes[i].up = true;
        world->nodes[i].deferred_head = KS__NONE;
        world->nodes[i].deferred_tail = KS__NONE;
    }
    ks__rng_init(world, config->seed);
    ks__sched_init(world);
    ks__net_init(world);
    if (!ks__disk_init(world, error)) {
        ks_world_free(world);
        return NULL;
    }
    return world;
}

void ks_world_free(ks_world *world)
{
    if (world == NULL) {
        return;
    }
    ks_assert(world->root == world); /* views go with their root */
    if (world->views != NULL) {
        g_ptr_array_free(world->views, TRUE);
    }
    ks__disk_deinit(world);
    ks__net_deinit(world);
    ks__sched_deinit(world);
    g_free(world->nodes);
    g_free(world->run_dir);
    g_free(world->host_error);
    g_free(world);
}

static void view_free(void *data)
{
    ks_world *view = data;
    g_free(view->view_path_prefix);
    g_free(view);
}

ks_world *ks_world_view_new(ks_world *world, uint32_t node_base, uint32_t node_count,
                            const char *path_prefix)
{
    ks_assert(world->root == world); /* no view of a view */
    ks_assert(node_base >= 1);
    ks_assert(node_count >= 1);
    ks_assert((uint64_t)node_base + node_count - 1 <= world->node_count);
    ks_assert(path_prefix != NULL);
    ks_assert(path_prefix[0] != '\0');
    ks_assert(strchr(path_prefix, '/') == NULL);
    ks_assert(strcmp(path_prefix, "..") != 0);
    ks_assert(strcmp(path_prefix, ".") != 0);
    ks_world *view = g_new0(ks_world, 1);
    view->root = world;
    view->view_node_base = node_base;
    view->view_path_prefix = g_strdup(path_prefix);
    view->node_count = node_count;
    if (world->views == NULL) {
        world->views = g_ptr_array_new_with_free_func(view_free);
    }
    g_ptr_array_add(world->views, view);
    return view;
}

ks_node_id ks_world_view_node(const ks_world *view, ks_node_id node)
{
    ks_assert(node < view->node_count);
    return ks__view_global(view, node);
}

char *ks__view_path(const ks_world *view, const char *path)
{
    if (view->root == view) {
        return NULL;
    }
    return path[0] == '\0' ? g_strdup(view->view_path_prefix)
                           : g_strdup_printf("%s/%s", view->view_path_prefix, path);
}

void ks_world_set_host_escape(ks_world *world, jmp_buf *escape)
{
    world->host_escape = escape;
}

const char *ks_world_host_error(const ks_world *world)
{
    return world->host_error;
}

/* ---- node faults ------------------------------------------------------------------ */

void ks_world_node_crash(ks_world *world, ks_node_id node_id, bool power_loss)
{
    ks_assert(node_id != KS_NODE_DRIVER);
    struct ks__node *node = ks__node(world, node_id);
    if (node->up) {
        node->up = false;
        node->incarnation++; /* pending timers and messages in flight become stale */
        node->paused = false;
        ks__sched_drop_deferred(world, node_id);
    }
    ks__disk_crash(world, node_id, power_loss);
}

void ks_world_node_restart(ks_world *world, ks_node_id node_id)
{
    ks_assert(node_id != KS_NODE_DRIVER);
    struct ks__node *node = ks__node(world, node_id);
    if (node->up) {
        return; /* restarting a running node changes nothing */
    }
    node->up = true;
    /* Anything scheduled for the node while it was down belongs to no
     * incarnation that runs. */
    node->incarnation++;
}

void ks_world_node_pause(ks_world *world, ks_node_id node_id)
{
    ks_assert(node_id != KS_NODE_DRIVER);
    struct ks__node *node = ks__node(world, node_id);
    if (node->up) {
        node->paused = true;
    }
}

void ks_world_node_resume(ks_world *world, ks_node_id node_id)
{
    ks_assert(node_id != KS_NODE_DRIVER);
    struct ks__node *node = ks__node(world, node_id);
    if (!node->paused) {
        return;
    }
    node->paused = false;
    ks__sched_replay_deferred(world, node_id);
}

bool ks_world_node_is_paused(const ks_world *world, ks_node_id node)
{
    /* a view's node: the root's (as ks_world_node_is_up) */
    return ks__node(world->root, ks__view_global(world, node))->paused;
}

void ks_host_remove_tree(const char *path)
{
    if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
        GDir *dir = g_dir_open(path, 0, NULL);
        const char *name;
        while (dir != NULL && (name = g_dir_read_name(dir)) != NULL) {
            char *child = g_build_filename(path, name, NULL);
            ks_host_remove_tree(child);
            g_free(child);
        }
        if (dir != NULL) {
            g_dir_close(dir);
        }
        g_rmdir(path);
    } else {
        g_unlink(path);
    }
}

/* ---- host temporary folders ------------------------------------------------------- */

#define TEMP_LOCK_NAME ".ksim-temp"

/* Removes base/<prefix>* folders of this user whose lock file is not held:
 * their ksim died without cleaning up. A folder without the lock file is
 * another program's (or one being made: the lock file appears only once it
 * is locked), and is left alone. */
static void reap_stale_temp_dirs(const char *base, const char *prefix)
{
    GDir *dir = g_dir_open(base, 0, NULL);
    const char *name;
    while (dir != NULL && (name = g_dir_read_name(dir)) != NULL) {
        if (!g_str_has_prefix(name, prefix)) {
            continue;
        }
        char *path = g_build_filename(base, name, NULL);
        char *lock = g_build_filename(path, TEMP_LOCK_NAME, NULL);
        GStatBuf info;
        if (g_lstat(path, &info) == 0 && S_ISDIR(info.st_mode) && info.st_uid == getuid()) {
            int fd = open(lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
            if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
                ks_host_remove_tree(path);
            }
            if (fd >= 0) {
                close(fd);
            }
        }
        g_free(lock);
        g_free(path);
    }
    if (dir != NULL) {
        g_dir_close(dir);
    }
}

char *ks_host_temp_dir_new(const char *base, const char *prefix, int *lock_fd, GError **error)
{
    if (base == NULL) {
        base = g_get_tmp_dir();
    }
    reap_stale_temp_dirs(base, prefix);
    char *template = g_strdup_printf("%s/%sXXXXXX", base, prefix);
    if (g_mkdtemp(template) == NULL) {
        int saved = errno;
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved),
                    "%s: cannot make a temporary folder: %s", base, g_strerror(saved));
        g_free(template);
        return NULL;
    }
    /* Locked under another name first, then renamed: a reaper never sees
     * the lock file unlocked (rename keeps the open file and its lock). */
    char *staging = g_build_filename(template, ".ksim-temp-new", NULL);
    char *lock = g_build_filename(template, TEMP_LOCK_NAME, NULL);
    int fd = open(staging, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && flock(fd, LOCK_EX) == 0 && g_rename(staging, lock) == 0;
    int saved = errno;
    g_free(staging);
    g_free(lock);
    if (!ok) {
        if (fd >= 0) {
            close(fd);
        }
        ks_host_remove_tree(template);
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved),
                    "%s: cannot lock a temporary folder: %s", template, g_strerror(saved));
        g_free(template);
        return NULL;
    }
    *lock_fd = fd;
    return template;
}

void ks_host_temp_dir_free(char *path, int lock_fd)
{
    if (path != NULL) {
        ks_host_remove_tree(path);
        g_free(path);
    }
    if (lock_fd >= 0) {
        close(lock_fd);
    }
}
