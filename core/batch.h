/*
** core/batch.h: Kafka record batch v2 (magic 2) encode and decode, and CRC-32C.
** The byte layout table lives in core/batch.c. Every field is encoded and
** decoded one by one, big-endian; no struct is ever written whole.
**
** ksim's producers embed an identity header in every record so the checker can
** recognise it in the real log: header key "ksim.id", value "<producer>:<seq>"
** (ASCII), see KS_IDENTITY_HEADER.
*/
#pragma once

#include "compress.h"

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define KS_BATCH_HEADER_BYTES       61
#define KS_BATCH_LOG_OVERHEAD_BYTES 12 /* baseOffset + batchLength */
#define KS_BATCH_MAGIC              2
#define KS_IDENTITY_HEADER          "ksim.id"
/* Kafka timestamps are ms since the Unix epoch; simulated time 0 maps here
 * (2026-01-01T00:00:00Z) so dumps show plausible CreateTime values. */
#define KS_EPOCH_BASE_MS INT64_C(1767225600000)

/* Attributes bits (kafka-reference 2.2). */
#define KS_ATTR_CODEC_MASK           0x07
#define KS_ATTR_TIMESTAMP_LOG_APPEND 0x08
#define KS_ATTR_TRANSACTIONAL        0x10
#define KS_ATTR_CONTROL              0x20
#define KS_ATTR_DELETE_HORIZON       0x40

/* The most bytes a compressed batch's records section may decompress to.
 * Kafka sets no limit; ksim bounds memory (a crafted batch cannot make a
 * reader allocate more) above anything its workloads build: value.bytes is
 * at most 100 MiB, and a producer batch holds at most batch.size bytes of
 * records unless one record is larger. A batch beyond it reads as malformed. */
#define KS_BATCH_DECOMPRESSED_BYTES_MAX ((size_t)256 * 1024 * 1024)

uint32_t ks_crc32c(uint32_t crc, const void *bytes, size_t byte_count); /* crc = 0 to start */

/* A decoded batch header. `records` points into the buffer given to
 * ks_batch_parse (borrowed). */
struct ks_batch_view {
    int64_t base_offset;
    int32_t batch_length; /* bytes after the length field */
    int32_t partition_leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t record_count;
    const uint8_t *records;
    size_t records_bytes;
};

enum ks_batch_status {
    KS_BATCH_OK,
    KS_BATCH_TRUNCATED,  /* fewer bytes than the batch claims (torn tail) */
    KS_BATCH_BAD_LENGTH, /* size < 61 or absurd */
    KS_BATCH_BAD_MAGIC,
    KS_BATCH_BAD_CRC,
};

/* Parses the batch at bytes[0..]; checks length, magic and CRC. On OK,
 * *batch_bytes_out = batch_length + 12. */
enum ks_batch_status ks_batch_parse(const uint8_t *bytes, size_t byte_count,
                                    struct ks_batch_view *out, size_t *batch_bytes_out);
/* As ks_batch_parse, for bytes whose CRC the caller has already checked with
 * ks_batch_parse (and not changed since, apart from the offset and epoch
 * fields the CRC does not cover): checks length and magic, not the CRC. It
 * exists so that one append checks the CRC of the same bytes only once. */
enum ks_batch_status ks_batch_parse_crc_checked(const uint8_t *bytes, size_t byte_count,
                                                struct ks_batch_view *out, size_t *batch_bytes_out);
/* "ok", "truncated", "bad length", "bad magic", "bad CRC" (static strings). */
const char *ks_batch_status_name(enum ks_batch_status status);
static inline int64_t ks_batch_last_offset(const struct ks_batch_view *batch)
{
    return batch->base_offset + batch->last_offset_delta;
}

struct ks_header_view {
    const uint8_t *key;
    int32_t key_bytes;
    const uint8_t *value;
    int32_t value_bytes; /* -1: null */
};

#define KS_RECORD_HEADERS_MAX 8

struct ks_record_view {
    int64_t offset;
    int64_t timestamp;
    int32_t sequence;   /* base_sequence + offset delta, or -1 */
    const uint8_t *key; /* NULL when key_bytes == -1 */
    int32_t key_bytes;
    const uint8_t *value;
    int32_t value_bytes; /* -1: null (tombstone) */
    int32_t header_count;
    struct ks_header_view headers[KS_RECORD_HEADERS_MAX];
};

/* Iterates the records of a parsed batch. A compressed batch (attributes
 * bits 0-2 not 0) is decompressed as a whole by init, as Kafka's
 * DefaultRecordBatch.compressedIterator reads it; a batch that does not
 * decompress (or exceeds KS_BATCH_DECOMPRESSED_BYTES_MAX) yields no record
 * and reports malformed. */
struct ks_record_iter {
    const struct ks_batch_view *batch; /* the caller's view, or &inner; not owned */
    size_t position_bytes;
    int32_t record_index;
    struct ks_batch_view inner; /* compressed batch: records point into decompressed */
    GByteArray *decompressed;   /* owned; NULL for an uncompressed batch */
    enum ks_decompress_result decompress_result;
};
void ks_record_iter_init(struct ks_record_iter *iter, const struct ks_batch_view *batch);
/* Returns true and fills *out with the next record; false at the end or if
 * the record bytes are malformed (*malformed_out set when not NULL). The
 * record's key, value and headers point into the batch (or its decompressed
 * records) and are valid until the next call; returning false at the end
 * frees the decompressed records. The iterator must not be copied. */
bool ks_record_iter_next(struct ks_record_iter *iter, struct ks_record_view *out,
                         bool *malformed_out);
/* Frees the decompressed records of an iteration left before its end (a
 * no-op after next returned false, and for uncompressed batches). */
void ks_record_iter_deinit(struct ks_record_iter *iter);
/* True when the iterator would yield exactly record_count well-formed
 * records, numbered 0, 1, ... from the base offset, each with a key when
 * keys_required (Kafka's LogValidator on a leader's append). An uncompressed
 * batch is checked without building the records' views. */
bool ks_batch_check_records(const struct ks_batch_view *batch, bool keys_required);

/* Builds one batch in memory. */
struct ks_batch_builder {
    GByteArray *bytes; /* owned; NULL until the first reserve or add (B5 of batch.c) */
    int64_t base_timestamp;
    int64_t max_timestamp;
    int32_t record_count;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int16_t attributes;        /* bits 0-2 choose the codec finish compresses with */
    int32_t compression_level; /* that codec's level; 0 = its Kafka default */
};
void ks_batch_builder_init(struct ks_batch_builder *builder, int64_t base_timestamp,
                           int64_t producer_id, int16_t producer_epoch, int32_t base_sequence);
void ks_batch_builder_deinit(struct ks_batch_builder *builder);
/* Makes room for a batch of about `bytes` (header and records) at once, for
 * a caller that knows the size: the bytes grow without copies. */
void ks_batch_builder_reserve(struct ks_batch_builder *builder, size_t bytes);
/* key/value NULL with bytes -1 mean null. */
void ks_batch_builder_add(struct ks_batch_builder *builder, int64_t timestamp, const void *key,
                          int32_t key_bytes, const void *value, int32_t value_bytes,
                          const struct ks_header_view *headers, int32_t header_count);
/* The same with an explicit offset delta (>= 0, increasing; the cleaner keeps
 * the original offsets of the records it retains). */
void ks_batch_builder_add_at(struct ks_batch_builder *builder, int32_t offset_delta,
                             int64_t timestamp, const void *key, int32_t key_bytes,
                             const void *value, int32_t value_bytes,
                             const struct ks_header_view *headers, int32_t header_count);
/* The batch's size so far, uncompressed (header + records). */
size_t ks_batch_builder_size(const struct ks_batch_builder *builder);
/* Finishes the batch (base offset 0, leader epoch -1, CRC set) and returns
 * its bytes, owned by the caller (g_byte_array_unref); the builder is reset.
 * With a codec in attributes, the records section is compressed as a whole
 * (core/compress.c) and the CRC covers the compressed bytes, as Kafka's
 * MemoryRecordsBuilder writes it; a batch without records is written
 * uncompressed with codec bits 0, as DefaultRecordBatch.writeEmptyHeader. */
GByteArray *ks_batch_builder_finish(struct ks_batch_builder *builder);
/* The same with the header's baseOffset, partitionLeaderEpoch and
 * lastOffsetDelta given (a cleaned batch keeps its original last offset). */
GByteArray *ks_batch_builder_finish_at(struct ks_batch_builder *builder, int64_t base_offset,
                                       int32_t partition_leader_epoch, int32_t last_offset_delta);

/* Rewrites the baseOffset and partitionLeaderEpoch of an encoded batch in
 * place; the CRC does not cover them, so it stays valid. */
void ks_batch_set_offset_and_epoch(uint8_t *batch_bytes, int64_t base_offset,
                                   int32_t partition_leader_epoch);

/* ---- transaction markers (control batches) ---- */

/* ControlRecordType's key: version int16 0, type int16. */
#define KS_CONTROL_KEY_BYTES 4
#define KS_CONTROL_ABORT     0
#define KS_CONTROL_COMMIT    1
/* EndTransactionMarker's value, version 0: version int16, coordinatorEpoch int32. */
#define KS_END_TXN_VALUE_BYTES 6

/* Builds the commit (or abort) marker the transaction coordinator's
 * WriteTxnMarkers asks a partition leader to append: one control record,
 * attributes transactional | control, baseSequence -1. Offsets unset (0) and
 * leader epoch -1, as any producer batch; owned by the caller. */
GByteArray *ks_batch_build_end_txn_marker(int64_t timestamp_ms, int64_t producer_id,
                                          int16_t producer_epoch, bool commit,
                                          int32_t coordinator_epoch);
/* The control type of a parsed control batch (KS_CONTROL_ABORT or
 * KS_CONTROL_COMMIT, or another value Kafka may define), -1 for a data batch
 * or a control batch without a readable key. */
int ks_batch_control_type(const struct ks_batch_view *batch);

/* Varints (Protobuf ZigZag), exposed for tests. Return bytes used, 0 on error. */
size_t ks_varint_encode(int64_t value, uint8_t *out); /* out needs 10 bytes */
size_t ks_varint_decode(const uint8_t *bytes, size_t byte_count, int64_t *value_out);

/* ---- big-endian fields (the batch header's, shared with core/log.c) ----------------- */

/* Stores as one byte swap and one store each (byte loops were compiled as
 * loops, issue 16); a 64-bit load is one load and a byte swap. */
static inline void ks_be_put_u16(uint8_t *out, uint16_t value)
{
    uint16_t big = GUINT16_TO_BE(value);
    memcpy(out, &big, sizeof(big));
}

static inline void ks_be_put_u32(uint8_t *out, uint32_t value)
{
    uint32_t big = GUINT32_TO_BE(value);
    memcpy(out, &big, sizeof(big));
}

static inline void ks_be_put_u64(uint8_t *out, uint64_t value)
{
    uint64_t big = GUINT64_TO_BE(value);
    memcpy(out, &big, sizeof(big));
}

static inline uint16_t ks_be_get_u16(const uint8_t *bytes)
{
    return (uint16_t)((uint16_t)bytes[0] << 8 | bytes[1]);
}

static inline uint32_t ks_be_get_u32(const uint8_t *bytes)
{
    return (uint32_t)bytes[0] << 24 | (uint32_t)bytes[1] << 16 | (uint32_t)bytes[2] << 8 |
           (uint32_t)bytes[3];
}

static inline uint64_t ks_be_get_u64(const uint8_t *bytes)
{
    uint64_t value;
    memcpy(&value, bytes, sizeof(value));
    return GUINT64_FROM_BE(value);
}
