/*
** core/producer_state.c: idempotence bookkeeping on a partition replica.
**
** Rules (kafka-reference 5.3, Kafka's ProducerAppendInfo):
**   - no entry for the producer id: any sequence is accepted;
**   - epoch older than the entry's: INVALID_PRODUCER_EPOCH;
**   - epoch newer: the batch must start at sequence 0, else OUT_OF_ORDER;
**   - same epoch: a batch equal (first and last sequence) to one of the last
**     5 cached batches is a duplicate, answered with its original offsets
**     and not appended; otherwise first sequence must be the last cached
**     last sequence + 1 (INT32_MAX wraps to 0), else OUT_OF_ORDER.
** The table is a GHashTable keyed by producer id: looked up, never iterated,
** so its order cannot reach the simulation.
*/
#include "producer_state.h"
#include "array.h"

#include "base.h"
#include "batch.h"
#include "proto.h"

#include <glib.h>
#include <stdlib.h>
#include <string.h>

struct cached_batch {
    int32_t first_seq;
    int32_t last_seq;
    int64_t base_offset;
    int64_t last_offset;
};

struct producer_entry {
    int64_t producer_id;
    int16_t epoch;
    int32_t batch_count;                                    /* <= 5 */
    struct cached_batch batches[KS_PRODUCER_STATE_BATCHES]; /* oldest first */
};

/* VerificationStateEntry (KIP-890 part 1). */
struct verification_entry {
    int64_t producer_id;
    uint64_t guard; /* non-zero; unique within this state */
    int32_t lowest_sequence;
    int16_t epoch;
    int64_t created_ns; /* VerificationStateEntry.timestamp */
};

/* Every replica has one of these and most never see a producer, or never a
 * verification (issue 16: two empty tables were 320 of a replica's bytes at
 * 12 x 10,000), so each table is made at its first insert: NULL is an empty
 * table, and every lookup goes through table_lookup. */
struct ks_producer_state {
    GHashTable *entries; /* int64 producer id -> struct producer_entry (owned); NULL empty */
    /* int64 producer id -> struct verification_entry (owned); looked up,
     * never iterated; NULL empty. */
    GHashTable *verifications;
    uint64_t next_guard; /* the last guard handed out */
};

static void *table_lookup(GHashTable *table, int64_t key)
{
    return table != NULL ? g_hash_table_lookup(table, &key) : NULL;
}

/* The table at *slot, made if it is not there yet. */
static GHashTable *table_made(GHashTable **slot)
{
    if (*slot == NULL) {
        *slot = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, free);
    }
    return *slot;
}

struct ks_producer_state *ks_producer_state_new(void)
{
    struct ks_producer_state *state = calloc(1, sizeof *state);
    ks_assert(state != NULL);
    return state;
}

void ks_producer_state_free(struct ks_producer_state *state)
{
    if (state == NULL) {
        return;
    }
    if (state->entries != NULL) {
        g_hash_table_destroy(state->entries);
    }
    if (state->verifications != NULL) {
        g_hash_table_destroy(state->verifications);
    }
    free(state);
}

void ks_producer_state_clear(struct ks_producer_state *state)
{
    if (state->entries != NULL) {
        g_hash_table_remove_all(state->entries);
    }
}

int32_t ks_producer_state_producer_count(const struct ks_producer_state *state)
{
    return state->entries != NULL ? (int32_t)g_hash_table_size(state->entries) : 0;
}

static int32_t next_seq(int32_t seq)
{
    return seq == INT32_MAX ? 0 : seq + 1;
}

int16_t ks_producer_state_check(const struct ks_producer_state *state, int64_t producer_id,
                                int16_t producer_epoch, int32_t first_seq, int32_t last_seq,
                                int64_t *dup_base_offset_out, int64_t *dup_last_offset_out)
{
    if (producer_id < 0) {
        return KS_ERR_NONE;
    }
    const struct producer_entry *entry = table_lookup(state->entries, producer_id);
    if (entry == NULL) {
        return KS_ERR_NONE;
    }
    if (producer_epoch < entry->epoch) {
        /* Also for an entry a marker made (no batches yet): checkProducerEpoch. */
        return KS_ERR_INVALID_PRODUCER_EPOCH;
    }
    if (first_seq < 0) {
        /* A batch without a sequence (a TxnOffsetCommit the group coordinator
         * writes, AppendOrigin.COORDINATOR): only its epoch is checked; it is
         * never a duplicate nor out of order. */
        return KS_ERR_NONE;
    }
    if (entry->batch_count == 0) {
        return KS_ERR_NONE;
    }
    if (producer_epoch > entry->epoch) {
        return first_seq == 0 ? KS_ERR_NONE : KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
    }
    for (int32_t i = 0; i < entry->batch_count; i++) {
        const struct cached_batch *cached = &entry->batches[i];
        if (cached->first_seq == first_seq && cached->last_seq == last_seq) {
            if (dup_base_offset_out != NULL) {
                *dup_base_offset_out = cached->base_offset;
            }
            if (dup_last_offset_out != NULL) {
                *dup_last_offset_out = cached->last_offset;
            }
            return KS_ERR_DUPLICATE_SEQUENCE_NUMBER;
        }
    }
    const struct cached_batch *latest = &entry->batches[entry->batch_count - 1];
    if (first_seq != next_seq(latest->last_seq)) {
        return KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
    }
    return KS_ERR_NONE;
}

int16_t ks_producer_state_check_epoch(const struct ks_producer_state *state, int64_t producer_id,
                                      int16_t producer_epoch)
{
    const struct producer_entry *entry =
        producer_id < 0 ? NULL : table_lookup(state->entries, producer_id);
    return entry != NULL && producer_epoch < entry->epoch ? KS_ERR_INVALID_PRODUCER_EPOCH
                                                          : KS_ERR_NONE;
}

int16_t ks_producer_state_epoch(const struct ks_producer_state *state, int64_t producer_id)
{
    const struct producer_entry *entry =
        producer_id < 0 ? NULL : table_lookup(state->entries, producer_id);
    return entry != NULL ? entry->epoch : -1;
}

/* The producer's entry (made if new) at producer_epoch: a new epoch starts a
 * new sequence space, so the old batches are forgotten. */
static struct producer_entry *entry_at_epoch(struct ks_producer_state *state, int64_t producer_id,
                                             int16_t producer_epoch)
{
    struct producer_entry *entry = table_lookup(state->entries, producer_id);
    if (entry == NULL) {
        entry = calloc(1, sizeof *entry);
        ks_assert(entry != NULL);
        entry->producer_id = producer_id;
        entry->epoch = producer_epoch;
        g_hash_table_insert(table_made(&state->entries), &entry->producer_id, entry);
    }
    if (producer_epoch != entry->epoch) {
        entry->epoch = producer_epoch;
        entry->batch_count = 0;
    }
    return entry;
}

void ks_producer_state_update(struct ks_producer_state *state, int64_t producer_id,
                              int16_t producer_epoch, int32_t first_seq, int32_t last_seq,
                              int64_t base_offset, int64_t last_offset)
{
    if (producer_id < 0) {
        return;
    }
    struct producer_entry *entry = entry_at_epoch(state, producer_id, producer_epoch);
    if (first_seq < 0) {
        return; /* no sequence to remember (ks_producer_state_check) */
    }
    if (entry->batch_count == KS_PRODUCER_STATE_BATCHES) {
        memmove(&entry->batches[0], &entry->batches[1],
                sizeof(entry->batches[0]) * (KS_PRODUCER_STATE_BATCHES - 1));
        entry->batch_count--;
    }
    struct cached_batch *cached = &entry->batches[entry->batch_count++];
    cached->first_seq = first_seq;
    cached->last_seq = last_seq;
    cached->base_offset = base_offset;
    cached->last_offset = last_offset;
}

void ks_producer_state_update_marker(struct ks_producer_state *state, int64_t producer_id,
                                     int16_t producer_epoch)
{
    /* ProducerAppendInfo.appendEndTxnMarker: the entry takes the marker's
     * epoch (maybeUpdateProducerEpoch, which forgets the batches of an older
     * epoch); the sequence of the same epoch continues. */
    if (producer_id >= 0) {
        (void)entry_at_epoch(state, producer_id, producer_epoch);
    }
}

static int64_t read_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v = (v << 8) | p[i];
    }
    return (int64_t)v;
}

static int32_t read_be32(const uint8_t *p)
{
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) |
                     (uint32_t)p[3]);
}

static int16_t read_be16(const uint8_t *p)
{
    return (int16_t)(((uint16_t)p[0] << 8) | (uint16_t)p[1]);
}

void ks_producer_state_update_from_batches(struct ks_producer_state *state, const uint8_t *bytes,
                                           size_t byte_count)
{
    size_t position = 0;
    /* Header fields at their v2 positions (kafka-reference 2.1); the CRC was
     * checked by whoever produced these bytes (the log or the fetch path). */
    while (byte_count - position >= KS_BATCH_HEADER_BYTES) {
        const uint8_t *p = bytes + position;
        int32_t batch_length = read_be32(p + 8);
        if (batch_length < KS_BATCH_HEADER_BYTES - KS_BATCH_LOG_OVERHEAD_BYTES) {
            return;
        }
        size_t batch_bytes = (size_t)batch_length + KS_BATCH_LOG_OVERHEAD_BYTES;
        if (batch_bytes > byte_count - position) {
            return;
        }
        int64_t base_offset = read_be64(p);
        int32_t last_offset_delta = read_be32(p + 23);
        int64_t producer_id = read_be64(p + 43);
        int16_t producer_epoch = read_be16(p + 51);
        int32_t base_sequence = read_be32(p + 53);
        int16_t attributes = read_be16(p + 21);
        if (producer_id >= 0 && base_sequence >= 0 && (attributes & KS_ATTR_CONTROL) == 0) {
            int32_t last_seq =
                (int32_t)(((int64_t)base_sequence + last_offset_delta) % ((int64_t)INT32_MAX + 1));
            ks_producer_state_update(state, producer_id, producer_epoch, base_sequence, last_seq,
                                     base_offset, base_offset + last_offset_delta);
        } else if (producer_id >= 0 && (attributes & KS_ATTR_CONTROL) != 0) {
            ks_producer_state_update_marker(state, producer_id, producer_epoch);
        }
        position += batch_bytes;
    }
}

void ks_producer_state_rebuild(struct ks_producer_state *state, struct ks_log *log)
{
    ks_producer_state_clear(state);
    int64_t offset = ks_log_start_offset(log);
    int64_t leo = ks_log_leo(log);
    GByteArray *chunk = g_byte_array_new();
    while (offset < leo) {
        ks_byte_array_set_size(chunk, 0);
        enum ks_log_result result = ks_log_read(log, offset, leo, 1u << 20, chunk);
        if (result != KS_LOG_OK || chunk->len < KS_BATCH_HEADER_BYTES) {
            break;
        }
        ks_producer_state_update_from_batches(state, chunk->data, chunk->len);
        /* Continue after the last whole batch read. */
        size_t position = 0;
        int64_t next = offset;
        while (chunk->len - position >= KS_BATCH_HEADER_BYTES) {
            const uint8_t *p = chunk->data + position;
            size_t batch_bytes = (size_t)read_be32(p + 8) + KS_BATCH_LOG_OVERHEAD_BYTES;
            if (batch_bytes > chunk->len - position) {
                break;
            }
            next = read_be64(p) + read_be32(p + 23) + 1;
            position += batch_bytes;
        }
        if (next <= offset) {
            break;
        }
        offset = next;
    }
    g_byte_array_unref(chunk);
}

/* ---- KIP-890 part 1: verification entries ------------------------------------------ */

uint64_t ks_producer_state_verification_start(struct ks_producer_state *state, int64_t producer_id,
                                              int32_t sequence, int16_t producer_epoch,
                                              int64_t now_ns)
{
    struct verification_entry *entry = table_lookup(state->verifications, producer_id);
    if (entry == NULL) {
        entry = calloc(1, sizeof *entry);
        ks_assert(entry != NULL);
        entry->producer_id = producer_id;
        entry->guard = ++state->next_guard; /* a new VerificationGuard() */
        entry->lowest_sequence = sequence;
        entry->epoch = producer_epoch;
        entry->created_ns = now_ns;
        g_hash_table_insert(table_made(&state->verifications), &entry->producer_id, entry);
    }
    /* maybeUpdateLowestSequenceAndEpoch: a lower sequence of the same epoch,
     * or any sequence of a newer epoch, becomes the lowest. */
    if (producer_epoch == entry->epoch && sequence < entry->lowest_sequence) {
        entry->lowest_sequence = sequence;
    }
    if (producer_epoch > entry->epoch) {
        entry->epoch = producer_epoch;
        entry->lowest_sequence = sequence;
    }
    return entry->guard;
}

uint64_t ks_producer_state_verification_guard(const struct ks_producer_state *state,
                                              int64_t producer_id)
{
    const struct verification_entry *entry = table_lookup(state->verifications, producer_id);
    return entry != NULL ? entry->guard : 0;
}

int32_t ks_producer_state_verification_lowest_sequence(const struct ks_producer_state *state,
                                                       int64_t producer_id)
{
    const struct verification_entry *entry = table_lookup(state->verifications, producer_id);
    return entry != NULL ? entry->lowest_sequence : -1;
}

void ks_producer_state_verification_clear(struct ks_producer_state *state, int64_t producer_id)
{
    if (state->verifications != NULL) {
        g_hash_table_remove(state->verifications, &producer_id);
    }
}

struct expiry {
    int64_t now_ns, expiration_ns, interval_ns;
};

/* Whether a check at a multiple of interval_ns, no later than now_ns, found
 * the entry expiration_ns old ((currentTimeMs - timestamp) >= expiration). */
static gboolean verification_expired(gpointer key, gpointer value, gpointer context)
{
    (void)key;
    const struct verification_entry *entry = value;
    const struct expiry *e = context;
    int64_t due = entry->created_ns + e->expiration_ns;
    int64_t checks = due <= e->interval_ns ? 1 : (due + e->interval_ns - 1) / e->interval_ns;
    return checks * e->interval_ns <= e->now_ns;
}

void ks_producer_state_verification_expire(struct ks_producer_state *state, int64_t now_ns,
                                           int64_t expiration_ns, int64_t interval_ns)
{
    ks_assert(expiration_ns > 0 && interval_ns > 0);
    struct expiry e = { now_ns, expiration_ns, interval_ns };
    /* Removal by a predicate: the result does not depend on the table's order. */
    if (state->verifications != NULL) {
        g_hash_table_foreach_remove(state->verifications, verification_expired, &e);
    }
}
