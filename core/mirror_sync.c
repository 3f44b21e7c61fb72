/*
** core/mirror_sync.c: MirrorMaker 2's offset syncs, their store, offset
** translation and checkpoints (KIP-382, KIP-545). Paraphrased from Kafka's
** connect/mirror: OffsetSyncWriter (maybeQueueOffsetSyncs,
** promoteDelayedOffsetSyncs, firePendingOffsetSyncs, PartitionState.update),
** OffsetSyncStore (handleRecord, updateSyncArray, invariantB/C,
** lookupLatestSync, translateDownstream), MirrorCheckpointTask
** (checkpoint, checkpointIsMoreRecent), OffsetSync and Checkpoint (their
** schemas), DefaultReplicationPolicy (the topic names).
**
** The writer. MM2's source task learns the target offset of each mirrored
** record when the target acks it (commitRecord). Per source partition it
** keeps the previous upstream and downstream offsets and the downstream
** offset of its last sync, and writes a new sync when
**     - the task has written none in this lifetime, or
**     - downstream - (last sync's downstream + 1) >= offset.lag.max
**       (a translation from the last sync would be that stale), or
**     - the upstream offsets skipped (a compacted or transactional gap), or
**     - the downstream offset went back (the target was truncated).
** Such a sync is pending (sent at once, at most 10 outstanding); any other
** one is delayed and replaces the partition's earlier delayed sync, until the
** periodic offset commit promotes every delayed sync to pending. Pending and
** delayed syncs are two insertion-ordered maps keyed by partition (Java's
** LinkedHashMap: a put on a present key keeps its place, a remove then put
** moves it to the end); the arrays below keep that order.
**
** The store. The checkpoint task reads the syncs topic and keeps, per source
** partition, 64 syncs spaced about exponentially, newest first:
**   A  syncs[0] is the latest sync read.
**   B  for i < j with syncs[i] != syncs[j]:
**        syncs[i].upstream <= syncs[j].upstream + 2^j - 2^i
**   C  for i < j with syncs[i] != syncs[j]:
**        syncs[i].upstream >= syncs[j].upstream + 2^max(i-2, 0)
** "!=" is Java's object identity: two syncs with equal offsets read at
** different times are different objects. Each kept sync carries the ordinal
** of its read (id) so that identity survives copying. An upstream offset
** below syncs[0]'s (the source was reset) clears the array to the new sync,
** as does every sync read during the initial read when
** initialization_must_read_to_end is set.
**
** Translation. For a group at upstream offset g the closest kept sync s with
** s.upstream <= g gives s.downstream when g == s.upstream, else
** s.downstream + 1: records between s and g may or may not have been
** mirrored, so one past the sync is as far as it is safe to go.
**   T1  the translated offset is at or before the target offset of the
**       group's real position, as long as every record after a sync is
**       written after the sync's downstream offset (MM2 writes in order).
** So a failover re-reads what lies between: at most about offset.lag.max
** records from the latest sync, more for a group far behind the live end
** (the spacing B/C allow there).
*/
#include "mirror_sync.h"

#include "base.h"

#include <glib.h>
#include <string.h>

/* ---- names -------------------------------------------------------------- */

char *ks_mirror_remote_topic(const char *source_alias, const char *topic)
{
    return g_strdup_printf("%s.%s", source_alias, topic);
}

char *ks_mirror_offset_syncs_topic(const char *alias)
{
    return g_strdup_printf("mm2-offset-syncs.%s.internal", alias);
}

char *ks_mirror_checkpoints_topic(const char *source_alias)
{
    return g_strdup_printf("%s.checkpoints.internal", source_alias);
}

/* ---- the writer ------------------------------------------------------- */

struct sync_state {
    /* OffsetSyncWriter.PartitionState */
    int64_t previous_upstream_offset;
    int64_t previous_downstream_offset;
    int64_t last_sync_downstream_offset;
    bool should_sync;
    /* this partition's entries in the two maps */
    bool pending_present;
    bool delayed_present;
    struct ks_offset_sync pending;
    struct ks_offset_sync delayed;
};

struct ks_offset_sync_writer {
    int64_t offset_lag_max;
    int32_t partition_count;
    struct sync_state *states; /* owned, partition_count */
    int32_t *pending_order;    /* owned: partitions in the pending map's order */
    int32_t pending_count;
    int32_t *delayed_order; /* owned: the delayed map's order */
    int32_t delayed_count;
    int32_t outstanding_count; /* the semaphore's permits taken */
};

struct ks_offset_sync_writer *ks_offset_sync_writer_new(int32_t partition_count,
                                                        int64_t offset_lag_max)
{
    ks_assert(partition_count > 0);
    ks_assert(offset_lag_max >= 0);
    struct ks_offset_sync_writer *writer = g_new0(struct ks_offset_sync_writer, 1);
    writer->offset_lag_max = offset_lag_max;
    writer->partition_count = partition_count;
    writer->states = g_new0(struct sync_state, (gsize)partition_count);
    writer->pending_order = g_new0(int32_t, (gsize)partition_count);
    writer->delayed_order = g_new0(int32_t, (gsize)partition_count);
    for (int32_t i = 0; i < partition_count; i++) {
        writer->states[i].previous_upstream_offset = -1;
        writer->states[i].previous_downstream_offset = -1;
        writer->states[i].last_sync_downstream_offset = -1;
    }
    return writer;
}

void ks_offset_sync_writer_free(struct ks_offset_sync_writer *writer)
{
    if (writer == NULL) {
        return;
    }
    g_free(writer->states);
    g_free(writer->pending_order);
    g_free(writer->delayed_order);
    g_free(writer);
}

static void order_remove(int32_t *order, int32_t *count, int32_t partition_index)
{
    for (int32_t i = 0; i < *count; i++) {
        if (order[i] == partition_index) {
            memmove(&order[i], &order[i + 1], (size_t)(*count - i - 1) * sizeof(order[0]));
            (*count)--;
            return;
        }
    }
    ks_assert(false); /* the caller's present flag said it was there */
}

/* LinkedHashMap.put into the pending map. */
static void pending_put(struct ks_offset_sync_writer *writer, int32_t partition_index,
                        struct ks_offset_sync sync)
{
    struct sync_state *state = &writer->states[partition_index];
    if (!state->pending_present) {
        ks_assert(writer->pending_count < writer->partition_count);
        writer->pending_order[writer->pending_count++] = partition_index;
        state->pending_present = true;
    }
    state->pending = sync;
}

/* PartitionState.update: whether a sync should be sent now. */
static bool state_update(struct sync_state *state, int64_t offset_lag_max, int64_t upstream_offset,
                         int64_t downstream_offset)
{
    bool no_previous_sync = state->last_sync_downstream_offset == -1;
    bool too_stale = downstream_offset - (state->last_sync_downstream_offset + 1) >= offset_lag_max;
    bool skipped_upstream = upstream_offset - state->previous_upstream_offset != 1;
    bool truncated_downstream = downstream_offset < state->previous_downstream_offset;
    if (no_previous_sync || too_stale || skipped_upstream || truncated_downstream) {
        state->last_sync_downstream_offset = downstream_offset;
        state->should_sync = true;
    }
    state->previous_upstream_offset = upstream_offset;
    state->previous_downstream_offset = downstream_offset;
    return state->should_sync;
}

bool ks_offset_sync_writer_record(struct ks_offset_sync_writer *writer, int32_t partition_index,
                                  int64_t upstream_offset, int64_t downstream_offset)
{
    ks_assert(partition_index >= 0);
    ks_assert(partition_index < writer->partition_count);
    ks_assert(upstream_offset >= 0);
    ks_assert(downstream_offset >= 0);
    struct sync_state *state = &writer->states[partition_index];
    struct ks_offset_sync sync = { upstream_offset, downstream_offset };
    if (state_update(state, writer->offset_lag_max, upstream_offset, downstream_offset)) {
        if (state->delayed_present) {
            order_remove(writer->delayed_order, &writer->delayed_count, partition_index);
            state->delayed_present = false;
        }
        pending_put(writer, partition_index, sync);
        state->should_sync = false; /* PartitionState.reset */
        return true;
    }
    if (!state->delayed_present) {
        ks_assert(writer->delayed_count < writer->partition_count);
        writer->delayed_order[writer->delayed_count++] = partition_index;
        state->delayed_present = true;
    }
    state->delayed = sync;
    return false;
}

void ks_offset_sync_writer_promote_delayed(struct ks_offset_sync_writer *writer)
{
    for (int32_t i = 0; i < writer->delayed_count; i++) {
        int32_t partition_index = writer->delayed_order[i];
        struct sync_state *state = &writer->states[partition_index];
        ks_assert(state->delayed_present);
        pending_put(writer, partition_index, state->delayed);
        state->delayed_present = false;
    }
    writer->delayed_count = 0;
}

bool ks_offset_sync_writer_next(struct ks_offset_sync_writer *writer, int32_t *partition_index_out,
                                struct ks_offset_sync *sync_out)
{
    if (writer->pending_count == 0 ||
        writer->outstanding_count >= KS_MIRROR_OUTSTANDING_SYNCS_MAX) {
        return false;
    }
    int32_t partition_index = writer->pending_order[0];
    struct sync_state *state = &writer->states[partition_index];
    ks_assert(state->pending_present);
    order_remove(writer->pending_order, &writer->pending_count, partition_index);
    state->pending_present = false;
    writer->outstanding_count++;
    *partition_index_out = partition_index;
    *sync_out = state->pending;
    return true;
}

void ks_offset_sync_writer_sent_done(struct ks_offset_sync_writer *writer)
{
    ks_assert(writer->outstanding_count > 0);
    writer->outstanding_count--;
}

int32_t ks_offset_sync_writer_outstanding_count(const struct ks_offset_sync_writer *writer)
{
    return writer->outstanding_count;
}

int32_t ks_offset_sync_writer_pending_count(const struct ks_offset_sync_writer *writer)
{
    return writer->pending_count;
}

int32_t ks_offset_sync_writer_delayed_count(const struct ks_offset_sync_writer *writer)
{
    return writer->delayed_count;
}

/* ---- the store -------------------------------------------------------- */

struct kept_sync {
    struct ks_offset_sync sync;
    uint64_t id; /* the ordinal of its read: Java's object identity */
};

struct store_partition {
    bool present;
    struct kept_sync syncs[KS_MIRROR_SYNCS_PER_PARTITION];
};

struct ks_offset_sync_store {
    int32_t partition_count;
    bool initialization_must_read_to_end;
    bool read_to_end;
    uint64_t id_next;
    struct store_partition *partitions; /* owned, partition_count */
};

struct ks_offset_sync_store *ks_offset_sync_store_new(int32_t partition_count,
                                                      bool initialization_must_read_to_end)
{
    ks_assert(partition_count > 0);
    struct ks_offset_sync_store *store = g_new0(struct ks_offset_sync_store, 1);
    store->partition_count = partition_count;
    store->initialization_must_read_to_end = initialization_must_read_to_end;
    store->id_next = 1;
    store->partitions = g_new0(struct store_partition, (gsize)partition_count);
    return store;
}

void ks_offset_sync_store_free(struct ks_offset_sync_store *store)
{
    if (store == NULL) {
        return;
    }
    g_free(store->partitions);
    g_free(store);
}

/* Java's long arithmetic wraps; C's signed arithmetic must not overflow, so
 * the bounds are computed in uint64_t and read back as two's complement. */
static int64_t wrap_i64(uint64_t value)
{
    return value <= (uint64_t)INT64_MAX ? (int64_t)value : -(int64_t)(~value) - 1;
}

static bool same_sync(const struct kept_sync *a, const struct kept_sync *b)
{
    return a->id == b->id;
}

/* invariantB: i_sync may sit at slot i before j_sync at slot j. */
static bool invariant_b(const struct kept_sync *i_sync, const struct kept_sync *j_sync, int i,
                        int j)
{
    int64_t bound = wrap_i64((uint64_t)j_sync->sync.upstream_offset + (1ULL << j) - (1ULL << i));
    return same_sync(i_sync, j_sync) || bound < 0 || i_sync->sync.upstream_offset <= bound;
}

/* invariantC: slot i's sync is far enough ahead of j_sync. */
static bool invariant_c(const struct kept_sync *i_sync, const struct kept_sync *j_sync, int i)
{
    int shift = i - 2 > 0 ? i - 2 : 0;
    int64_t bound = wrap_i64((uint64_t)j_sync->sync.upstream_offset + (1ULL << shift));
    return same_sync(i_sync, j_sync) || (bound >= 0 && i_sync->sync.upstream_offset >= bound);
}

static void clear_syncs(struct kept_sync *syncs, struct kept_sync sync)
{
    for (int i = 0; i < KS_MIRROR_SYNCS_PER_PARTITION; i++) {
        syncs[i] = sync;
    }
}

/* updateSyncArray: syncs is the copy being repaired, original the array
 * before this sync. */
static void update_syncs(const struct ks_offset_sync_store *store, struct kept_sync *syncs,
                         const struct kept_sync *original, struct kept_sync sync)
{
    bool only_load_last = !store->read_to_end && store->initialization_must_read_to_end;
    bool upstream_rewind = sync.sync.upstream_offset < syncs[0].sync.upstream_offset;
    if (only_load_last || upstream_rewind) {
        clear_syncs(syncs, sync);
        return;
    }
    struct kept_sync replacement = sync;
    int replacement_index = 0;
    syncs[0] = replacement; /* A */
    for (int current = 1; current < KS_MIRROR_SYNCS_PER_PARTITION; current++) {
        int previous = current - 1;
        bool skip_old;
        /* Prefer a value of the old array as the replacement: more distinct
         * syncs stay. */
        do {
            const struct kept_sync *old = &original[replacement_index];
            bool recent = invariant_b(&syncs[previous], old, previous, current);
            bool separated_from_previous = invariant_c(&syncs[previous], old, previous);
            int next = current + 1;
            bool separated_from_next =
                next >= KS_MIRROR_SYNCS_PER_PARTITION || invariant_c(old, &syncs[next], current);
            int next_replacement = replacement_index + 1;
            bool duplicate = next_replacement < KS_MIRROR_SYNCS_PER_PARTITION &&
                             same_sync(old, &original[next_replacement]);
            bool promote = recent && separated_from_previous && separated_from_next;
            if (promote) {
                replacement = *old;
            }
            skip_old = duplicate || !separated_from_previous;
            if (promote || skip_old) {
                replacement_index++;
            }
        } while (replacement_index < current && skip_old);
        ks_assert(invariant_b(&syncs[previous], &replacement, previous, current));
        ks_assert(invariant_c(&syncs[previous], &replacement, previous));
        if (invariant_b(&syncs[previous], &syncs[current], previous, current)) {
            break; /* B holds here, so it holds for every later slot */
        }
        syncs[current] = replacement;
        ks_assert(invariant_b(&syncs[previous], &syncs[current], previous, current));
        ks_assert(invariant_c(&syncs[previous], &syncs[current], previous));
    }
}

void ks_offset_sync_store_add(struct ks_offset_sync_store *store, int32_t partition_index,
                              struct ks_offset_sync sync)
{
    ks_assert(partition_index >= 0);
    ks_assert(partition_index < store->partition_count);
    struct store_partition *part = &store->partitions[partition_index];
    struct kept_sync kept = { sync, store->id_next++ };
    if (!part->present) {
        clear_syncs(part->syncs, kept);
        part->present = true;
        return;
    }
    struct kept_sync original[KS_MIRROR_SYNCS_PER_PARTITION];
    memcpy(original, part->syncs, sizeof(original));
    update_syncs(store, part->syncs, original, kept);
}

void ks_offset_sync_store_read_to_end(struct ks_offset_sync_store *store)
{
    store->read_to_end = true;
}

enum ks_translate_result ks_offset_sync_store_translate(const struct ks_offset_sync_store *store,
                                                        int32_t partition_index,
                                                        int64_t upstream_offset,
                                                        int64_t *downstream_offset_out)
{
    ks_assert(partition_index >= 0);
    ks_assert(partition_index < store->partition_count);
    if (!store->read_to_end) {
        return KS_TRANSLATE_NOT_READY;
    }
    const struct store_partition *part = &store->partitions[partition_index];
    if (!part->present) {
        return KS_TRANSLATE_NO_SYNC;
    }
    /* lookupLatestSync: newest first, the first at or before the group */
    const struct ks_offset_sync *sync = &part->syncs[KS_MIRROR_SYNCS_PER_PARTITION - 1].sync;
    for (int i = 0; i < KS_MIRROR_SYNCS_PER_PARTITION; i++) {
        if (part->syncs[i].sync.upstream_offset <= upstream_offset) {
            sync = &part->syncs[i].sync;
            break;
        }
    }
    if (sync->upstream_offset > upstream_offset) {
        return KS_TRANSLATE_TOO_OLD;
    }
    int64_t step = upstream_offset == sync->upstream_offset ? 0 : 1;
    *downstream_offset_out = sync->downstream_offset + step;
    return KS_TRANSLATE_OK;
}

bool ks_offset_sync_store_slot(const struct ks_offset_sync_store *store, int32_t partition_index,
                               int32_t slot, struct ks_offset_sync *sync_out)
{
    ks_assert(partition_index >= 0);
    ks_assert(partition_index < store->partition_count);
    ks_assert(slot >= 0);
    ks_assert(slot < KS_MIRROR_SYNCS_PER_PARTITION);
    const struct store_partition *part = &store->partitions[partition_index];
    if (!part->present) {
        return false;
    }
    *sync_out = part->syncs[slot].sync;
    return true;
}

void ks_offset_sync_store_check(const struct ks_offset_sync_store *store)
{
    for (int32_t p = 0; p < store->partition_count; p++) {
        const struct store_partition *part = &store->partitions[p];
        if (!part->present) {
            continue;
        }
        for (int i = 0; i < KS_MIRROR_SYNCS_PER_PARTITION; i++) {
            ks_assert(part->syncs[i].id < store->id_next);
            ks_assert(part->syncs[i].id <= part->syncs[0].id); /* A: 0 is the latest */
            for (int j = i + 1; j < KS_MIRROR_SYNCS_PER_PARTITION; j++) {
                ks_assert(invariant_b(&part->syncs[i], &part->syncs[j], i, j)); /* B */
                if (!same_sync(&part->syncs[i], &part->syncs[j])) {
                    /* C, for distinct syncs (Kafka states it for pairs i < j) */
                    ks_assert(invariant_c(&part->syncs[i], &part->syncs[j], i));
                }
            }
        }
    }
}

/* ---- checkpoints -------------------------------------------------------- */

bool ks_checkpoint_is_more_recent(const struct ks_offset_sync *last,
                                  const struct ks_offset_sync *checkpoint)
{
    if (last == NULL) {
        return true;
    }
    if (checkpoint->upstream_offset < last->upstream_offset) {
        return true; /* the group rewound upstream */
    }
    return checkpoint->downstream_offset > last->downstream_offset;
}

bool ks_checkpoint_next(const struct ks_offset_sync_store *store, int32_t partition_index,
                        int64_t upstream_offset, const struct ks_offset_sync *last,
                        struct ks_offset_sync *checkpoint_out)
{
    int64_t downstream = -1;
    if (ks_offset_sync_store_translate(store, partition_index, upstream_offset, &downstream) !=
        KS_TRANSLATE_OK) {
        return false; /* no sync yet, or too old to translate accurately */
    }
    ks_assert(downstream >= 0);
    struct ks_offset_sync checkpoint = { upstream_offset, downstream };
    if (!ks_checkpoint_is_more_recent(last, &checkpoint)) {
        return false;
    }
    *checkpoint_out = checkpoint;
    return true;
}

bool ks_checkpoint_sync_target(bool has_target_offset, int64_t target_offset,
                               int64_t checkpoint_downstream_offset)
{
    return !has_target_offset || target_offset < checkpoint_downstream_offset;
}

/* ---- record bytes --------------------------------------------------------
**
** Kafka's protocol Struct encoding, big-endian, fields in schema order:
**   OffsetSync key     topic STRING, partition INT32
**   OffsetSync value   upstreamOffset INT64, offset INT64
**   Checkpoint key     group STRING, topic STRING, partition INT32
**   Checkpoint value   version INT16 (0; the header schema), upstreamOffset
**                      INT64, offset INT64, metadata STRING
** STRING is an INT16 length then that many UTF-8 bytes.
*/

struct out_buffer {
    uint8_t *bytes;
    size_t capacity;
    size_t length; /* needed so far; bytes past capacity are not written */
};

static void put_bytes(struct out_buffer *out, const void *bytes, size_t byte_count)
{
    if (out->length + byte_count <= out->capacity) {
        memcpy(out->bytes + out->length, bytes, byte_count);
    }
    out->length += byte_count;
}

static void put_u64(struct out_buffer *out, uint64_t value, size_t byte_count)
{
    uint8_t bytes[8];
    for (size_t i = 0; i < byte_count; i++) {
        bytes[i] = (uint8_t)(value >> (8 * (byte_count - 1 - i)));
    }
    put_bytes(out, bytes, byte_count);
}

static void put_string(struct out_buffer *out, const char *text)
{
    size_t length = strlen(text);
    ks_assert(length <= (size_t)INT16_MAX);
    put_u64(out, (uint64_t)length, 2);
    put_bytes(out, text, length);
}

size_t ks_offset_sync_key_encode(const char *topic, int32_t partition, uint8_t *out,
                                 size_t out_capacity)
{
    struct out_buffer buffer = { out, out_capacity, 0 };
    put_string(&buffer, topic);
    put_u64(&buffer, (uint64_t)(uint32_t)partition, 4);
    return buffer.length;
}

void ks_offset_sync_value_encode(struct ks_offset_sync sync,
                                 uint8_t out[KS_OFFSET_SYNC_VALUE_BYTES])
{
    struct out_buffer buffer = { out, KS_OFFSET_SYNC_VALUE_BYTES, 0 };
    put_u64(&buffer, (uint64_t)sync.upstream_offset, 8);
    put_u64(&buffer, (uint64_t)sync.downstream_offset, 8);
    ks_assert(buffer.length == KS_OFFSET_SYNC_VALUE_BYTES);
}

size_t ks_checkpoint_key_encode(const char *group, const char *topic, int32_t partition,
                                uint8_t *out, size_t out_capacity)
{
    struct out_buffer buffer = { out, out_capacity, 0 };
    put_string(&buffer, group);
    put_string(&buffer, topic);
    put_u64(&buffer, (uint64_t)(uint32_t)partition, 4);
    return buffer.length;
}

size_t ks_checkpoint_value_encode(struct ks_offset_sync checkpoint, const char *metadata,
                                  uint8_t *out, size_t out_capacity)
{
    struct out_buffer buffer = { out, out_capacity, 0 };
    put_u64(&buffer, 0, 2); /* Checkpoint.VERSION */
    put_u64(&buffer, (uint64_t)checkpoint.upstream_offset, 8);
    put_u64(&buffer, (uint64_t)checkpoint.downstream_offset, 8);
    put_string(&buffer, metadata);
    return buffer.length;
}

struct in_buffer {
    const uint8_t *bytes;
    size_t byte_count;
    size_t position;
    bool ok;
};

static uint64_t get_u64(struct in_buffer *in, size_t byte_count)
{
    if (!in->ok || in->byte_count - in->position < byte_count) {
        in->ok = false;
        return 0;
    }
    uint64_t value = 0;
    for (size_t i = 0; i < byte_count; i++) {
        value = (value << 8) | in->bytes[in->position + i];
    }
    in->position += byte_count;
    return value;
}

static void get_string(struct in_buffer *in, char *out, size_t out_capacity)
{
    uint64_t length = get_u64(in, 2);
    if (!in->ok || length > (uint64_t)INT16_MAX || in->byte_count - in->position < length ||
        length >= out_capacity) {
        in->ok = false; /* negative, short, or too long for the caller's buffer */
        return;
    }
    memcpy(out, in->bytes + in->position, (size_t)length);
    out[length] = '\0';
    in->position += (size_t)length;
}

/* Whole buffer read: ksim writes these records itself, so a trailing byte is
 * a bug it wants to see (Kafka's Schema.read would ignore it). */
static bool in_done(const struct in_buffer *in)
{
    return in->ok && in->position == in->byte_count;
}

static int64_t as_i64(uint64_t value)
{
    return wrap_i64(value);
}

static int32_t as_i32(uint64_t value)
{
    ks_assert(value <= UINT32_MAX);
    return value <= (uint64_t)INT32_MAX ? (int32_t)value : (int32_t)((int64_t)value - 4294967296LL);
}

bool ks_offset_sync_key_decode(const uint8_t *bytes, size_t byte_count, char *topic_out,
                               size_t topic_capacity, int32_t *partition_out)
{
    struct in_buffer in = { bytes, byte_count, 0, true };
    get_string(&in, topic_out, topic_capacity);
    uint64_t partition = get_u64(&in, 4);
    if (!in_done(&in)) {
        return false;
    }
    *partition_out = as_i32(partition);
    return true;
}

bool ks_offset_sync_value_decode(const uint8_t *bytes, size_t byte_count,
                                 struct ks_offset_sync *sync_out)
{
    struct in_buffer in = { bytes, byte_count, 0, true };
    uint64_t upstream = get_u64(&in, 8);
    uint64_t downstream = get_u64(&in, 8);
    if (!in_done(&in)) {
        return false;
    }
    sync_out->upstream_offset = as_i64(upstream);
    sync_out->downstream_offset = as_i64(downstream);
    return true;
}

bool ks_checkpoint_key_decode(const uint8_t *bytes, size_t byte_count, char *group_out,
                              size_t group_capacity, char *topic_out, size_t topic_capacity,
                              int32_t *partition_out)
{
    struct in_buffer in = { bytes, byte_count, 0, true };
    get_string(&in, group_out, group_capacity);
    get_string(&in, topic_out, topic_capacity);
    uint64_t partition = get_u64(&in, 4);
    if (!in_done(&in)) {
        return false;
    }
    *partition_out = as_i32(partition);
    return true;
}

bool ks_checkpoint_value_decode(const uint8_t *bytes, size_t byte_count,
                                struct ks_offset_sync *checkpoint_out, char *metadata_out,
                                size_t metadata_capacity)
{
    struct in_buffer in = { bytes, byte_count, 0, true };
    uint64_t version = get_u64(&in, 2);
    if (in.ok && version != 0) {
        return false; /* only VALUE_SCHEMA_V0 exists */
    }
    uint64_t upstream = get_u64(&in, 8);
    uint64_t downstream = get_u64(&in, 8);
    get_string(&in, metadata_out, metadata_capacity);
    if (!in_done(&in)) {
        return false;
    }
    checkpoint_out->upstream_offset = as_i64(upstream);
    checkpoint_out->downstream_offset = as_i64(downstream);
    return true;
}
