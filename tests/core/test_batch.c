/*
** tests/core/test_batch.c: the record batch v2 codec.
**
** Goal: every field written by the builder comes back unchanged through the
** parser and the record iterator, CRC-32C matches Kafka's check values, and
** no damaged input can make the decoder read out of bounds.
** Method: known answers (CRC check strings, the varint codes of
** kafka-reference 2.4, the 73-byte worked batch), round trips over edge
** values, a bit-at-a-time reference CRC compared over many lengths, and a
** sweep that flips every byte of an encoded batch (run under ASan too).
** Compressed batches: every codec builds, parses and iterates to the same
** records (the CRC over the compressed bytes), an empty batch stays
** uncompressed, damaged compressed records read as malformed, and the
** broker's recompress-or-keep decision follows LogValidator.
*/
#include <stdio.h>

#include "../../core/base.h"
#include "../../core/batch.h"
#include "../testlib.h"

#include <string.h>

static uint32_t crc32c_bitwise(const uint8_t *bytes, size_t byte_count)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < byte_count; i++) {
        crc ^= bytes[i];
        for (int bit = 0; bit < 8; bit++) {
            crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        }
    }
    return ~crc;
}

static void test_crc_check_values(void)
{
    CU_ASSERT_EQUAL(ks_crc32c(0, "123456789", 9), 0xE3069283u);
    CU_ASSERT_EQUAL(ks_crc32c(0, "Some String", 11), 608512271u);
    CU_ASSERT_EQUAL(ks_crc32c(0, "", 0), 0u);
}

/* Long buffers take the three-stream path: compare with the bit-at-a-time
 * reference around its threshold and at batch sizes. */
static void test_crc_long_buffers(void)
{
    const size_t lengths[] = { 3071, 3072, 3073, 3080, 4096, 5001, 16445, 65536 + 7 };
    uint8_t *bytes = g_malloc(65536 + 16);
    uint64_t state = 12345;
    for (size_t i = 0; i < 65536 + 16; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        bytes[i] = (uint8_t)(state >> 56);
    }
    for (size_t i = 0; i < KS_ARRAY_COUNT(lengths); i++) {
        uint32_t expected = crc32c_bitwise(bytes + 1, lengths[i]);
        CU_ASSERT_EQUAL(ks_crc32c(0, bytes + 1, lengths[i]), expected);
        uint32_t chained = ks_crc32c(ks_crc32c(0, bytes + 1, 100), bytes + 101, lengths[i] - 100);
        CU_ASSERT_EQUAL(chained, expected);
    }
    g_free(bytes);
}

static void test_crc_matches_reference_and_chains(void)
{
    uint8_t bytes[300];
    uint64_t state = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < sizeof(bytes); i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        bytes[i] = (uint8_t)(state >> 56);
    }
    for (size_t length = 0; length <= sizeof(bytes); length++) {
        /* Unaligned starts exercise the 8-byte loop's tail and head. */
        size_t start = length % 7;
        size_t count = length - (length > start ? start : length);
        uint32_t whole = ks_crc32c(0, bytes + start, count);
        CU_ASSERT_EQUAL(whole, crc32c_bitwise(bytes + start, count));
        size_t split = count / 3;
        uint32_t chained =
            ks_crc32c(ks_crc32c(0, bytes + start, split), bytes + start + split, count - split);
        CU_ASSERT_EQUAL(chained, whole);
    }
}

static void test_varint_known_codes_and_round_trip(void)
{
    uint8_t out[10];
    CU_ASSERT_EQUAL(ks_varint_encode(-1, out), 1);
    CU_ASSERT_EQUAL(out[0], 0x01);
    CU_ASSERT_EQUAL(ks_varint_encode(0, out), 1);
    CU_ASSERT_EQUAL(out[0], 0x00);
    CU_ASSERT_EQUAL(ks_varint_encode(5, out), 1);
    CU_ASSERT_EQUAL(out[0], 0x0A);
    CU_ASSERT_EQUAL(ks_varint_encode(64, out), 2); /* zigzag 128 */
    CU_ASSERT_EQUAL(out[0], 0x80);
    CU_ASSERT_EQUAL(out[1], 0x01);
    const int64_t values[] = { 0,         1,         -1,           63,
                               -64,       64,        -65,          300,
                               -300,      INT32_MAX, INT32_MIN,    (int64_t)INT32_MAX + 1,
                               INT64_MAX, INT64_MIN, INT64_MIN + 1 };
    for (size_t i = 0; i < KS_ARRAY_COUNT(values); i++) {
        size_t used = ks_varint_encode(values[i], out);
        CU_ASSERT(used >= 1 && used <= 10);
        int64_t back = 12345;
        CU_ASSERT_EQUAL(ks_varint_decode(out, used, &back), used);
        CU_ASSERT_EQUAL(back, values[i]);
        /* One byte short is an error, never a wrong value. */
        CU_ASSERT_EQUAL(ks_varint_decode(out, used - 1, &back), 0);
    }
    uint8_t too_long[11];
    memset(too_long, 0xff, sizeof(too_long));
    int64_t value = 0;
    CU_ASSERT_EQUAL(ks_varint_decode(too_long, sizeof(too_long), &value), 0);
}

static void test_worked_size_hello(void)
{
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, 1000, -1, -1, -1);
    ks_batch_builder_add(&builder, 1000, NULL, -1, "hello", 5, NULL, 0);
    GByteArray *bytes = ks_batch_builder_finish(&builder);
    CU_ASSERT_EQUAL(bytes->len, 73);
    struct ks_batch_view view;
    size_t batch_bytes = 0;
    CU_ASSERT_EQUAL_FATAL(ks_batch_parse(bytes->data, bytes->len, &view, &batch_bytes),
                          KS_BATCH_OK);
    CU_ASSERT_EQUAL(view.batch_length, 61);
    CU_ASSERT_EQUAL(batch_bytes, 73);
    g_byte_array_unref(bytes);
    ks_batch_builder_deinit(&builder);
}

static GByteArray *build_rich_batch(void)
{
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, 1767225600000, 42, 7, 2147483646);
    builder.attributes = KS_ATTR_TRANSACTIONAL;
    struct ks_header_view headers[2] = {
        { (const uint8_t *)"ksim.id", 7, (const uint8_t *)"p1:5", 4 },
        { (const uint8_t *)"empty", 5, NULL, -1 },
    };
    ks_batch_builder_add(&builder, 1767225600000, "k1", 2, "v1", 2, headers, 2);
    ks_batch_builder_add(&builder, 1767225599000, NULL, -1, "v2", 2, NULL, 0); /* earlier */
    ks_batch_builder_add(&builder, 1767225605000, "k3", 2, NULL, -1, NULL, 0); /* tombstone */
    ks_batch_builder_add(&builder, 1767225601000, "", 0, "", 0, headers, 1);
    GByteArray *bytes = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    return bytes;
}

/* ks_batch_check_records as the record iterator answers it. */
static bool check_records_by_iterator(const struct ks_batch_view *batch, bool keys_required)
{
    struct ks_record_iter iter;
    struct ks_record_view record;
    bool malformed = false;
    int32_t expected = 0;
    ks_record_iter_init(&iter, batch);
    while (ks_record_iter_next(&iter, &record, &malformed)) {
        if (record.offset - batch->base_offset != expected ||
            (keys_required && record.key == NULL)) {
            ks_record_iter_deinit(&iter);
            return false;
        }
        expected++;
    }
    return !malformed && expected == batch->record_count;
}

/* The leader's record check walks an uncompressed batch without the
 * iterator: for every byte of the records section changed to a few values,
 * and for a wrong record count, it answers as the iterator does, keys
 * required or not; the unchanged batch passes, and fails only for its
 * null key. */
static void test_check_records_as_the_iterator(void)
{
    GByteArray *bytes = build_rich_batch();
    struct ks_batch_view batch;
    CU_ASSERT_EQUAL_FATAL(ks_batch_parse(bytes->data, bytes->len, &batch, NULL), KS_BATCH_OK);
    CU_ASSERT_TRUE(ks_batch_check_records(&batch, false));
    CU_ASSERT_FALSE(ks_batch_check_records(&batch, true)); /* the second record has no key */
    int differences = 0;
    int passed = 0;
    const uint8_t values[] = { 0x00, 0x01, 0x02, 0x7f, 0x80, 0xfe, 0xff };
    for (size_t i = KS_BATCH_HEADER_BYTES; i < bytes->len; i++) {
        uint8_t saved = bytes->data[i];
        for (size_t v = 0; v < G_N_ELEMENTS(values); v++) {
            bytes->data[i] = values[v];
            CU_ASSERT_EQUAL_FATAL(ks_batch_parse_crc_checked(bytes->data, bytes->len, &batch, NULL),
                                  KS_BATCH_OK);
            for (int keys = 0; keys < 2; keys++) {
                bool walked = ks_batch_check_records(&batch, keys == 1);
                differences += walked != check_records_by_iterator(&batch, keys == 1);
                passed += walked;
            }
        }
        bytes->data[i] = saved;
    }
    CU_ASSERT_EQUAL(differences, 0);
    CU_ASSERT(passed > 0); /* some changes (a value byte) keep the records well formed */
    for (int32_t count = -1; count <= 6; count++) {
        CU_ASSERT_EQUAL_FATAL(ks_batch_parse(bytes->data, bytes->len, &batch, NULL), KS_BATCH_OK);
        batch.record_count = count;
        CU_ASSERT_EQUAL(ks_batch_check_records(&batch, false),
                        check_records_by_iterator(&batch, false));
        CU_ASSERT_EQUAL(ks_batch_check_records(&batch, false), count == 4);
    }
    g_byte_array_unref(bytes);
}

static void test_round_trip_every_field(void)
{
    GByteArray *bytes = build_rich_batch();
    ks_batch_set_offset_and_epoch(bytes->data, 1000, 3);
    struct ks_batch_view view;
    CU_ASSERT_EQUAL_FATAL(ks_batch_parse(bytes->data, bytes->len, &view, NULL), KS_BATCH_OK);
    CU_ASSERT_EQUAL(view.base_offset, 1000);
    CU_ASSERT_EQUAL(view.partition_leader_epoch, 3);
    CU_ASSERT_EQUAL(view.magic, 2);
    CU_ASSERT_EQUAL(view.attributes, KS_ATTR_TRANSACTIONAL);
    CU_ASSERT_EQUAL(view.last_offset_delta, 3);
    CU_ASSERT_EQUAL(ks_batch_last_offset(&view), 1003);
    CU_ASSERT_EQUAL(view.base_timestamp, 1767225600000);
    CU_ASSERT_EQUAL(view.max_timestamp, 1767225605000);
    CU_ASSERT_EQUAL(view.producer_id, 42);
    CU_ASSERT_EQUAL(view.producer_epoch, 7);
    CU_ASSERT_EQUAL(view.base_sequence, 2147483646);
    CU_ASSERT_EQUAL(view.record_count, 4);

    struct ks_record_iter iter;
    struct ks_record_view record;
    bool malformed = true;
    ks_record_iter_init(&iter, &view);
    CU_ASSERT_FATAL(ks_record_iter_next(&iter, &record, &malformed));
    CU_ASSERT_EQUAL(record.offset, 1000);
    CU_ASSERT_EQUAL(record.sequence, 2147483646);
    CU_ASSERT_EQUAL(record.key_bytes, 2);
    CU_ASSERT(memcmp(record.key, "k1", 2) == 0);
    CU_ASSERT_EQUAL(record.value_bytes, 2);
    CU_ASSERT(memcmp(record.value, "v1", 2) == 0);
    CU_ASSERT_EQUAL(record.header_count, 2);
    CU_ASSERT_EQUAL(record.headers[0].key_bytes, 7);
    CU_ASSERT(memcmp(record.headers[0].key, KS_IDENTITY_HEADER, 7) == 0);
    CU_ASSERT(memcmp(record.headers[0].value, "p1:5", 4) == 0);
    CU_ASSERT_EQUAL(record.headers[1].value_bytes, -1);
    CU_ASSERT_PTR_NULL(record.headers[1].value);

    CU_ASSERT_FATAL(ks_record_iter_next(&iter, &record, &malformed));
    CU_ASSERT_EQUAL(record.offset, 1001);
    CU_ASSERT_EQUAL(record.timestamp, 1767225599000); /* negative delta */
    CU_ASSERT_EQUAL(record.sequence, 2147483647);
    CU_ASSERT_EQUAL(record.key_bytes, -1);
    CU_ASSERT_PTR_NULL(record.key);

    CU_ASSERT_FATAL(ks_record_iter_next(&iter, &record, &malformed));
    CU_ASSERT_EQUAL(record.sequence, 0); /* wrapped like Kafka */
    CU_ASSERT_EQUAL(record.value_bytes, -1);
    CU_ASSERT_PTR_NULL(record.value);
    CU_ASSERT_EQUAL(record.header_count, 0);

    CU_ASSERT_FATAL(ks_record_iter_next(&iter, &record, &malformed));
    CU_ASSERT_EQUAL(record.offset, 1003);
    CU_ASSERT_EQUAL(record.key_bytes, 0);
    CU_ASSERT_EQUAL(record.value_bytes, 0);
    CU_ASSERT_EQUAL(record.header_count, 1);

    CU_ASSERT_FALSE(ks_record_iter_next(&iter, &record, &malformed));
    CU_ASSERT_FALSE(malformed);
    g_byte_array_unref(bytes);
}

static void test_explicit_offsets_and_many_headers(void)
{
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, 5, -1, -1, -1);
    struct ks_header_view headers[KS_RECORD_HEADERS_MAX + 3];
    for (size_t i = 0; i < KS_ARRAY_COUNT(headers); i++) {
        headers[i] = (struct ks_header_view){ (const uint8_t *)"h", 1, (const uint8_t *)"x", 1 };
    }
    ks_batch_builder_add_at(&builder, 2, 5, "a", 1, "1", 1, headers,
                            (int32_t)KS_ARRAY_COUNT(headers));
    ks_batch_builder_add_at(&builder, 9, 6, "b", 1, "2", 1, NULL, 0);
    GByteArray *bytes = ks_batch_builder_finish_at(&builder, 100, 4, 12);
    struct ks_batch_view view;
    CU_ASSERT_EQUAL_FATAL(ks_batch_parse(bytes->data, bytes->len, &view, NULL), KS_BATCH_OK);
    CU_ASSERT_EQUAL(ks_batch_last_offset(&view), 112);
    CU_ASSERT_EQUAL(view.partition_leader_epoch, 4);
    struct ks_record_iter iter;
    struct ks_record_view record;
    ks_record_iter_init(&iter, &view);
    CU_ASSERT_FATAL(ks_record_iter_next(&iter, &record, NULL));
    CU_ASSERT_EQUAL(record.offset, 102);
    CU_ASSERT_EQUAL(record.header_count, KS_RECORD_HEADERS_MAX);
    CU_ASSERT_FATAL(ks_record_iter_next(&iter, &record, NULL));
    CU_ASSERT_EQUAL(record.offset, 109);
    CU_ASSERT_FALSE(ks_record_iter_next(&iter, &record, NULL));
    g_byte_array_unref(bytes);
    ks_batch_builder_deinit(&builder);
}

static void test_parse_errors(void)
{
    GByteArray *bytes = build_rich_batch();
    struct ks_batch_view view;
    CU_ASSERT_EQUAL(ks_batch_parse(bytes->data, 11, &view, NULL), KS_BATCH_TRUNCATED);
    CU_ASSERT_EQUAL(ks_batch_parse(bytes->data, bytes->len - 1, &view, NULL), KS_BATCH_TRUNCATED);
    GByteArray *copy = g_byte_array_new();
    g_byte_array_append(copy, bytes->data, bytes->len);
    copy->data[16] = 1;
    CU_ASSERT_EQUAL(ks_batch_parse(copy->data, copy->len, &view, NULL), KS_BATCH_BAD_MAGIC);
    copy->data[16] = 2;
    copy->data[copy->len - 1] ^= 0x40;
    CU_ASSERT_EQUAL(ks_batch_parse(copy->data, copy->len, &view, NULL), KS_BATCH_BAD_CRC);
    copy->data[copy->len - 1] ^= 0x40;
    copy->data[8] = 0;
    copy->data[9] = 0;
    copy->data[10] = 0;
    copy->data[11] = 48; /* one short of a header */
    CU_ASSERT_EQUAL(ks_batch_parse(copy->data, copy->len, &view, NULL), KS_BATCH_BAD_LENGTH);
    copy->data[8] = 0x80; /* negative */
    CU_ASSERT_EQUAL(ks_batch_parse(copy->data, copy->len, &view, NULL), KS_BATCH_BAD_LENGTH);
    CU_ASSERT_STRING_EQUAL(ks_batch_status_name(KS_BATCH_BAD_CRC), "bad CRC");
    g_byte_array_unref(copy);
    g_byte_array_unref(bytes);
}

/* Flipping any byte: the parse either fails, or succeeds only when the byte is
 * outside what is checked (offset, epoch), and iterating never reads out of bounds. */
static void test_every_byte_flip_is_detected_or_harmless(void)
{
    GByteArray *bytes = build_rich_batch();
    for (guint position = 0; position < bytes->len; position++) {
        for (int pattern = 0; pattern < 3; pattern++) {
            uint8_t *copy = g_memdup2(bytes->data, bytes->len);
            copy[position] ^= (uint8_t)(pattern == 0 ? 0xff : pattern == 1 ? 0x01 : 0x80);
            struct ks_batch_view view;
            enum ks_batch_status status = ks_batch_parse(copy, bytes->len, &view, NULL);
            if (position >= 16 || (position >= 8 && position < 12)) {
                CU_ASSERT_NOT_EQUAL(status, KS_BATCH_OK);
            } else {
                CU_ASSERT_EQUAL(status, KS_BATCH_OK);
            }
            /* Iterate even the CRC-failed bytes as if they were trusted. */
            view.records = copy + KS_BATCH_HEADER_BYTES;
            view.records_bytes = bytes->len - KS_BATCH_HEADER_BYTES;
            view.record_count = position == 60 ? 1000 : 4;
            struct ks_record_iter iter;
            struct ks_record_view record;
            bool malformed = false;
            int count = 0;
            ks_record_iter_init(&iter, &view);
            while (ks_record_iter_next(&iter, &record, &malformed)) {
                CU_ASSERT(record.key_bytes >= -1);
                CU_ASSERT(record.header_count <= KS_RECORD_HEADERS_MAX);
                count++;
            }
            CU_ASSERT(count <= 4);
            g_free(copy);
        }
    }
    g_byte_array_unref(bytes);
}

/* Builds the same records as a batch with `codec` at its default level. */
static GByteArray *build_codec_batch(int codec, int32_t record_count)
{
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, 1767225600000, 42, 7, 10);
    builder.attributes = (int16_t)codec;
    for (int32_t i = 0; i < record_count; i++) {
        char key[16];
        char value[64];
        int key_bytes = snprintf(key, sizeof(key), "key%d", (int)(i % 7));
        int value_bytes =
            snprintf(value, sizeof(value), "value %d of a compressible batch", (int)i);
        struct ks_header_view header = { (const uint8_t *)KS_IDENTITY_HEADER, 7,
                                         (const uint8_t *)"p1:5", 4 };
        ks_batch_builder_add(&builder, 1767225600000 + i, key, key_bytes, value, value_bytes,
                             &header, 1);
    }
    GByteArray *bytes = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    return bytes;
}

static void check_codec_batch_records(const struct ks_batch_view *view, int32_t record_count)
{
    struct ks_record_iter iter;
    struct ks_record_view record;
    bool malformed = true;
    int32_t seen = 0;
    ks_record_iter_init(&iter, view);
    while (ks_record_iter_next(&iter, &record, &malformed)) {
        char value[64];
        int value_bytes =
            snprintf(value, sizeof(value), "value %d of a compressible batch", (int)seen);
        CU_ASSERT_EQUAL(record.offset, view->base_offset + seen);
        CU_ASSERT_EQUAL(record.timestamp, 1767225600000 + seen);
        CU_ASSERT_EQUAL(record.sequence, 10 + seen);
        CU_ASSERT_EQUAL(record.value_bytes, value_bytes);
        CU_ASSERT(record.value_bytes == value_bytes &&
                  memcmp(record.value, value, (size_t)value_bytes) == 0);
        CU_ASSERT_EQUAL(record.header_count, 1);
        CU_ASSERT(memcmp(record.headers[0].value, "p1:5", 4) == 0);
        seen++;
    }
    CU_ASSERT_FALSE(malformed);
    CU_ASSERT_EQUAL(seen, record_count);
    CU_ASSERT_PTR_NULL(iter.decompressed); /* freed at the end (B4) */
}

static void test_compressed_batches_round_trip(void)
{
    GByteArray *plain = build_codec_batch(KS_CODEC_NONE, 200);
    for (int codec = KS_CODEC_GZIP; codec <= KS_CODEC_ZSTD; codec++) {
        GByteArray *bytes = build_codec_batch(codec, 200);
        ks_batch_set_offset_and_epoch(bytes->data, 500, 2);
        struct ks_batch_view view;
        CU_ASSERT_EQUAL_FATAL(ks_batch_parse(bytes->data, bytes->len, &view, NULL), KS_BATCH_OK);
        CU_ASSERT_EQUAL(view.attributes & KS_ATTR_CODEC_MASK, codec);
        CU_ASSERT_EQUAL(view.record_count, 200);
        CU_ASSERT_EQUAL(view.last_offset_delta, 199);
        CU_ASSERT_EQUAL(view.max_timestamp, 1767225600000 + 199);
        /* The CRC covers the compressed bytes (attributes .. end). */
        CU_ASSERT_EQUAL(view.crc, ks_crc32c(0, bytes->data + 21, bytes->len - 21));
        CU_ASSERT(bytes->len < plain->len / 2); /* these records compress well */
        check_codec_batch_records(&view, 200);
        g_byte_array_unref(bytes);
    }
    g_byte_array_unref(plain);
}

static void test_compressed_empty_batch_is_uncompressed(void)
{
    GByteArray *bytes = build_codec_batch(KS_CODEC_ZSTD, 0);
    struct ks_batch_view view;
    CU_ASSERT_EQUAL_FATAL(ks_batch_parse(bytes->data, bytes->len, &view, NULL), KS_BATCH_OK);
    CU_ASSERT_EQUAL(view.attributes & KS_ATTR_CODEC_MASK, KS_CODEC_NONE);
    CU_ASSERT_EQUAL(bytes->len, KS_BATCH_HEADER_BYTES);
    g_byte_array_unref(bytes);
}

/* A compressed section that does not decompress yields no record and says
 * malformed; an iteration left early is freed by deinit (ASan's leak check). */
static void test_compressed_damage_and_early_exit(void)
{
    for (int codec = KS_CODEC_GZIP; codec <= KS_CODEC_ZSTD; codec++) {
        GByteArray *bytes = build_codec_batch(codec, 50);
        struct ks_batch_view view;
        CU_ASSERT_EQUAL_FATAL(ks_batch_parse(bytes->data, bytes->len, &view, NULL), KS_BATCH_OK);
        struct ks_record_iter iter;
        struct ks_record_view record;
        ks_record_iter_init(&iter, &view);
        CU_ASSERT(ks_record_iter_next(&iter, &record, NULL));
        ks_record_iter_deinit(&iter);
        ks_record_iter_deinit(&iter); /* twice is harmless */
        /* Cut the compressed stream short (the view only; the CRC was checked). */
        view.records_bytes = view.records_bytes / 2;
        bool malformed = false;
        ks_record_iter_init(&iter, &view);
        int32_t seen = 0;
        while (ks_record_iter_next(&iter, &record, &malformed)) {
            seen++;
        }
        CU_ASSERT(malformed);
        /* Snappy decodes whole 32 KiB chunks: a cut stream gives no record. */
        CU_ASSERT_EQUAL(seen, 0);
        g_byte_array_unref(bytes);
    }
    struct ks_batch_view view;
    GByteArray *bytes = build_codec_batch(KS_CODEC_NONE, 3);
    CU_ASSERT_EQUAL_FATAL(ks_batch_parse(bytes->data, bytes->len, &view, NULL), KS_BATCH_OK);
    view.attributes = 5; /* codec ids 5..7 do not exist */
    struct ks_record_iter iter;
    struct ks_record_view record;
    bool malformed = false;
    ks_record_iter_init(&iter, &view);
    CU_ASSERT_FALSE(ks_record_iter_next(&iter, &record, &malformed));
    CU_ASSERT(malformed);
    g_byte_array_unref(bytes);
}

/* LogValidator: keep when the target codec equals the batch's (or the topic
 * says producer), rebuild with the target codec otherwise. */
static void test_broker_recompression_decision(void)
{
    struct ks_compression_config topic;
    ks_compression_config_init(&topic);
    GByteArray *lz4 = build_codec_batch(KS_CODEC_LZ4, 120);
    ks_batch_set_offset_and_epoch(lz4->data, 0, 4);
    topic.codec = KS_COMPRESSION_PRODUCER;
    CU_ASSERT_PTR_NULL(ks_compress_for_topic(&topic, lz4->data, lz4->len));
    topic.codec = KS_CODEC_LZ4;
    topic.lz4_level = 12; /* only the type is compared, as Kafka does */
    CU_ASSERT_PTR_NULL(ks_compress_for_topic(&topic, lz4->data, lz4->len));
    const int targets[] = { KS_CODEC_NONE, KS_CODEC_GZIP, KS_CODEC_SNAPPY, KS_CODEC_ZSTD };
    for (size_t i = 0; i < KS_ARRAY_COUNT(targets); i++) {
        topic.codec = targets[i];
        GByteArray *rebuilt = ks_compress_for_topic(&topic, lz4->data, lz4->len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rebuilt);
        struct ks_batch_view view;
        CU_ASSERT_EQUAL_FATAL(ks_batch_parse(rebuilt->data, rebuilt->len, &view, NULL),
                              KS_BATCH_OK);
        CU_ASSERT_EQUAL(view.attributes & KS_ATTR_CODEC_MASK, targets[i]);
        CU_ASSERT_EQUAL(view.producer_id, 42);
        CU_ASSERT_EQUAL(view.producer_epoch, 7);
        CU_ASSERT_EQUAL(view.base_sequence, 10);
        CU_ASSERT_EQUAL(view.partition_leader_epoch, 4);
        CU_ASSERT_EQUAL(view.base_timestamp, 1767225600000);
        check_codec_batch_records(&view, 120);
        g_byte_array_unref(rebuilt);
    }
    /* An uncompressed batch to an `uncompressed` topic stays as it is. */
    GByteArray *plain = build_codec_batch(KS_CODEC_NONE, 5);
    topic.codec = KS_CODEC_NONE;
    CU_ASSERT_PTR_NULL(ks_compress_for_topic(&topic, plain->data, plain->len));
    topic.codec = KS_CODEC_GZIP;
    GByteArray *gzip = ks_compress_for_topic(&topic, plain->data, plain->len);
    CU_ASSERT_PTR_NOT_NULL(gzip);
    if (gzip != NULL) {
        CU_ASSERT_EQUAL(gzip->data[22] & KS_ATTR_CODEC_MASK, KS_CODEC_GZIP);
        g_byte_array_unref(gzip);
    }
    g_byte_array_unref(plain);
    g_byte_array_unref(lz4);
}

/* ks_batch_builder_reserve only makes room: a batch built after a reserve
 * (too small, exact, larger, and smaller than what is already built) has the
 * same bytes as one built without, and the room is really there (the bytes
 * do not move while the batch grows into it). */
static GByteArray *build_sized(size_t reserve_first, size_t reserve_later)
{
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, 1767225600000, 9, 2, 100);
    if (reserve_first > 0) {
        ks_batch_builder_reserve(&builder, reserve_first);
    }
    /* B5: init allocates nothing; a reserve allocates the room at once. */
    CU_ASSERT_EQUAL(builder.bytes != NULL, reserve_first > 0);
    const uint8_t *data = builder.bytes != NULL ? builder.bytes->data : NULL;
    bool moved = false;
    char value[300];
    memset(value, 'x', sizeof value);
    for (int32_t i = 0; i < 40; i++) {
        char key[16];
        int key_bytes = g_snprintf(key, sizeof key, "key-%d", i);
        ks_batch_builder_add(&builder, 1767225600000 + i, key, key_bytes, value,
                             (int32_t)(i * 7 % 300), NULL, 0);
        moved = moved || (data != NULL && builder.bytes->data != data);
        if (i == 20 && reserve_later > 0) {
            ks_batch_builder_reserve(&builder, reserve_later);
        }
    }
    if (reserve_first >= 20000) {
        CU_ASSERT_FALSE(moved);
    }
    GByteArray *bytes = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    return bytes;
}

static void test_reserve_keeps_bytes(void)
{
    GByteArray *plain = build_sized(0, 0);
    CU_ASSERT(plain->len > 5000 && plain->len < 20000);
    const size_t reserves[][2] = {
        { 10, 0 }, { plain->len, 0 }, { 20000, 0 }, { 0, 100 }, { 0, 30000 }
    };
    for (size_t k = 0; k < G_N_ELEMENTS(reserves); k++) {
        GByteArray *sized = build_sized(reserves[k][0], reserves[k][1]);
        CU_ASSERT_EQUAL_FATAL(sized->len, plain->len);
        CU_ASSERT(memcmp(sized->data, plain->data, plain->len) == 0);
        g_byte_array_unref(sized);
    }
    g_byte_array_unref(plain);
}

void ks_test_register_batch(void)
{
    static const struct ks_test_case cases[] = {
        { "crc check values", test_crc_check_values },
        { "check records as the iterator", test_check_records_as_the_iterator },
        { "crc matches reference and chains", test_crc_matches_reference_and_chains },
        { "crc long buffers", test_crc_long_buffers },
        { "varint known codes and round trip", test_varint_known_codes_and_round_trip },
        { "worked size hello", test_worked_size_hello },
        { "round trip every field", test_round_trip_every_field },
        { "explicit offsets and many headers", test_explicit_offsets_and_many_headers },
        { "parse errors", test_parse_errors },
        { "every byte flip detected or harmless", test_every_byte_flip_is_detected_or_harmless },
        { "compressed batches round trip", test_compressed_batches_round_trip },
        { "compressed empty batch is uncompressed", test_compressed_empty_batch_is_uncompressed },
        { "compressed damage and early exit", test_compressed_damage_and_early_exit },
        { "broker recompression decision", test_broker_recompression_decision },
        { "reserve keeps bytes", test_reserve_keeps_bytes },
    };
    KS_TEST_ADD_SUITE("core/batch", cases);
}
