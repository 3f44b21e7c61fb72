/*
** tests/core/test_compress.c: the codecs of core/compress.c.
**
** Goal: every codec round-trips, ksim reads streams written by other
** implementations, its bytes follow Kafka's framing to the byte where the
** framing is fixed, and no input makes the decoder exceed its output bound.
** Method: round trips over sizes around the codecs' block sizes (32 KiB
** snappy, 64 KiB lz4, 16 KiB zstd chunks) and every level class; test vectors
** made by Python's gzip/zlib, python3-snappy, python3-lz4 and
** python3-zstandard (pasted below as bytes) and by liblz4's own frame API;
** the exact gzip bytes a JDK writes; XXH32 known answers; truncation, byte
** flips and a decompression bomb against the bound.
*/
#include "../../core/base.h"
#include "../../core/compress.h"
#include "../testlib.h"

#include <lz4frame.h>
#include <string.h>

#define VECTOR_INPUT_REPEAT 8
static const char vector_line[] = "ksim test vector: Kafka record batch. ";

static GByteArray *vector_input(void)
{
    GByteArray *input = g_byte_array_new();
    for (int i = 0; i < VECTOR_INPUT_REPEAT; i++) {
        g_byte_array_append(input, (const guint8 *)vector_line, sizeof(vector_line) - 1);
    }
    for (uint8_t b = 0; b < 48; b++) {
        g_byte_array_append(input, &b, 1);
    }
    return input;
}

/* Made by Python 3.11 (Debian 12): gzip.compress(level 6, mtime 0), python3-snappy's
 * snappy.compress framed by hand as xerial's SnappyOutputStream, python3-lz4's
 * lz4.frame.compress (64 KiB independent blocks, block and content checksums, content
 * size), python3-zstandard (level 3, content size and checksum), all of VECTOR_INPUT. */
static const uint8_t vector_gzip[111] = {
    0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xcb, 0x2e, 0xce, 0xcc, 0x55, 0x28,
    0x49, 0x2d, 0x2e, 0x51, 0x28, 0x4b, 0x4d, 0x2e, 0xc9, 0x2f, 0xb2, 0x52, 0xf0, 0x4e, 0x4c, 0xcb,
    0x4e, 0x54, 0x28, 0x4a, 0x4d, 0xce, 0x2f, 0x4a, 0x51, 0x48, 0x4a, 0x2c, 0x49, 0xce, 0xd0, 0x53,
    0xc8, 0x1e, 0x55, 0x05, 0x55, 0xc5, 0xc0, 0xc8, 0xc4, 0xcc, 0xc2, 0xca, 0xc6, 0xce, 0xc1, 0xc9,
    0xc5, 0xcd, 0xc3, 0xcb, 0xc7, 0x2f, 0x20, 0x28, 0x24, 0x2c, 0x22, 0x2a, 0x26, 0x2e, 0x21, 0x29,
    0x25, 0x2d, 0x23, 0x2b, 0x27, 0xaf, 0xa0, 0xa8, 0xa4, 0xac, 0xa2, 0xaa, 0xa6, 0xae, 0xa1, 0xa9,
    0xa5, 0xad, 0xa3, 0xab, 0xa7, 0x0f, 0x00, 0x7b, 0xde, 0x98, 0xba, 0x60, 0x01, 0x00, 0x00,
};

static const uint8_t vector_snappy[125] = {
    0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
    0x00, 0x00, 0x00, 0x69, 0xe0, 0x02, 0x98, 0x6b, 0x73, 0x69, 0x6d, 0x20, 0x74, 0x65, 0x73, 0x74,
    0x20, 0x76, 0x65, 0x63, 0x74, 0x6f, 0x72, 0x3a, 0x20, 0x4b, 0x61, 0x66, 0x6b, 0x61, 0x20, 0x72,
    0x65, 0x63, 0x6f, 0x72, 0x64, 0x20, 0x62, 0x61, 0x74, 0x63, 0x68, 0x2e, 0x20, 0x6b, 0xfe, 0x26,
    0x00, 0xfe, 0x26, 0x00, 0xfe, 0x26, 0x00, 0xfe, 0x26, 0x00, 0x15, 0x26, 0xbc, 0x00, 0x01, 0x02,
    0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12,
    0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x21, 0x22,
    0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f,
};

static const uint8_t vector_lz4[124] = {
    0x04, 0x22, 0x4d, 0x18, 0x7c, 0x40, 0x60, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x9d, 0x5d,
    0x00, 0x00, 0x00, 0xff, 0x17, 0x6b, 0x73, 0x69, 0x6d, 0x20, 0x74, 0x65, 0x73, 0x74, 0x20, 0x76,
    0x65, 0x63, 0x74, 0x6f, 0x72, 0x3a, 0x20, 0x4b, 0x61, 0x66, 0x6b, 0x61, 0x20, 0x72, 0x65, 0x63,
    0x6f, 0x72, 0x64, 0x20, 0x62, 0x61, 0x74, 0x63, 0x68, 0x2e, 0x20, 0x26, 0x00, 0xf7, 0xf0, 0x21,
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
    0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
    0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f,
    0x31, 0x9f, 0x76, 0xd3, 0x00, 0x00, 0x00, 0x00, 0x8c, 0xe5, 0xf9, 0xcb,
};

static const uint8_t vector_zstd[109] = {
    0x28, 0xb5, 0x2f, 0xfd, 0x64, 0x60, 0x00, 0xfd, 0x02, 0x00, 0x64, 0x05, 0x6b, 0x73, 0x69, 0x6d,
    0x20, 0x74, 0x65, 0x73, 0x74, 0x20, 0x76, 0x65, 0x63, 0x74, 0x6f, 0x72, 0x3a, 0x20, 0x4b, 0x61,
    0x66, 0x6b, 0x61, 0x20, 0x72, 0x65, 0x63, 0x6f, 0x72, 0x64, 0x20, 0x62, 0x61, 0x74, 0x63, 0x68,
    0x2e, 0x20, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d,
    0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d,
    0x1e, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d,
    0x2e, 0x2f, 0x01, 0x00, 0x3e, 0x48, 0xaa, 0x7a, 0x02, 0xac, 0x89, 0xc3, 0x88,
};

/* What java.util.zip.GZIPOutputStream (JDK 17) writes for VECTOR_INPUT at the
 * default level: Python's member above with the JDK's header, whose OS byte is
 * 255 (Python's deflate stream is zlib's level 6, raw, window 15, memLevel 8,
 * as java.util.zip.Deflater's; CRC-32 and size are the same). */
static GByteArray *vector_gzip_java(void)
{
    GByteArray *bytes = g_byte_array_new();
    g_byte_array_append(bytes, vector_gzip, sizeof(vector_gzip));
    bytes->data[9] = 0xff;
    return bytes;
}

static void check_decodes_to_input(int codec, const uint8_t *bytes, size_t byte_count)
{
    GByteArray *input = vector_input();
    GByteArray *out = g_byte_array_new();
    CU_ASSERT_EQUAL(ks_decompress(codec, bytes, byte_count, 1 << 20, out), KS_DECOMPRESS_OK);
    CU_ASSERT_EQUAL(out->len, input->len);
    CU_ASSERT(out->len == input->len && memcmp(out->data, input->data, input->len) == 0);
    g_byte_array_unref(out);
    g_byte_array_unref(input);
}

static void test_reads_other_implementations(void)
{
    GByteArray *input = vector_input();
    CU_ASSERT_EQUAL(input->len, 352);
    g_byte_array_unref(input);
    check_decodes_to_input(KS_CODEC_GZIP, vector_gzip, sizeof(vector_gzip));
    GByteArray *java = vector_gzip_java();
    check_decodes_to_input(KS_CODEC_GZIP, java->data, java->len);
    g_byte_array_unref(java);
    check_decodes_to_input(KS_CODEC_SNAPPY, vector_snappy, sizeof(vector_snappy));
    /* SnappyInputStream reads a raw snappy buffer without the xerial header. */
    check_decodes_to_input(KS_CODEC_SNAPPY, vector_snappy + 20, sizeof(vector_snappy) - 20);
    check_decodes_to_input(KS_CODEC_LZ4, vector_lz4, sizeof(vector_lz4));
    check_decodes_to_input(KS_CODEC_ZSTD, vector_zstd, sizeof(vector_zstd));
}

/* The fixed parts of the framing, byte for byte. */
static void test_writes_kafka_framing(void)
{
    GByteArray *input = vector_input();
    GByteArray *out = g_byte_array_new();
    ks_compress(KS_CODEC_GZIP, KS_GZIP_LEVEL_DEFAULT, input->data, input->len, out);
    GByteArray *java = vector_gzip_java();
    CU_ASSERT_EQUAL(out->len, java->len);
    CU_ASSERT(out->len == java->len && memcmp(out->data, java->data, out->len) == 0);
    g_byte_array_unref(java);
    g_byte_array_set_size(out, 0);
    ks_compress(KS_CODEC_SNAPPY, 0, input->data, input->len, out);
    static const uint8_t snappy_header[16] = { 0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0,
                                               0,    0,   0,   1,   0,   0,   0,   1 };
    CU_ASSERT(memcmp(out->data, snappy_header, 16) == 0);
    CU_ASSERT_EQUAL(out->len, sizeof(vector_snappy)); /* same raw block as python3-snappy */
    CU_ASSERT(out->len == sizeof(vector_snappy) && memcmp(out->data, vector_snappy, out->len) == 0);
    g_byte_array_set_size(out, 0);
    ks_compress(KS_CODEC_LZ4, KS_LZ4_LEVEL_DEFAULT, input->data, input->len, out);
    /* Magic, FLG 0x60, BD 0x40 and the descriptor checksum 0x82 of every
     * Kafka lz4 batch; the end mark closes it. */
    static const uint8_t lz4_header[7] = { 0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82 };
    CU_ASSERT(memcmp(out->data, lz4_header, 7) == 0);
    CU_ASSERT(out->len > 11 && memcmp(out->data + out->len - 4, "\0\0\0\0", 4) == 0);
    g_byte_array_set_size(out, 0);
    ks_compress(KS_CODEC_ZSTD, KS_ZSTD_LEVEL_DEFAULT, input->data, input->len, out);
    static const uint8_t zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
    CU_ASSERT(memcmp(out->data, zstd_magic, 4) == 0);
    CU_ASSERT_EQUAL(out->data[4] & 0xc4, 0); /* no content size, no checksum */
    g_byte_array_unref(out);
    g_byte_array_unref(input);
}

static void test_xxh32_known_answers(void)
{
    CU_ASSERT_EQUAL(ks_xxh32("", 0, 0), 0x02CC5D05u);
    CU_ASSERT_EQUAL(ks_xxh32("a", 1, 0), 0x550D7456u);
    CU_ASSERT_EQUAL(ks_xxh32("abc", 3, 0), 0x32D153FFu);
    const uint8_t descriptor[2] = { 0x60, 0x40 };
    CU_ASSERT_EQUAL((ks_xxh32(descriptor, 2, 0) >> 8) & 0xff, 0x82u);
}

/* Data with long runs and random stretches, so each codec has work. */
static GByteArray *mixed_input(size_t bytes, uint64_t seed)
{
    GByteArray *input = g_byte_array_sized_new((guint)bytes);
    g_byte_array_set_size(input, (guint)bytes);
    uint64_t state = seed;
    for (size_t i = 0; i < bytes; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        input->data[i] = (i / 256) % 2 == 0 ? (uint8_t)('a' + i % 26) : (uint8_t)(state >> 56);
    }
    return input;
}

static void round_trip(enum ks_codec codec, int32_t level, size_t bytes)
{
    GByteArray *input = mixed_input(bytes, bytes + (size_t)level);
    GByteArray *packed = g_byte_array_new();
    ks_compress(codec, level, input->data, input->len, packed);
    GByteArray *out = g_byte_array_new();
    enum ks_decompress_result result = ks_decompress(codec, packed->data, packed->len, bytes, out);
    CU_ASSERT_EQUAL(result, KS_DECOMPRESS_OK);
    CU_ASSERT(out->len == input->len &&
              (input->len == 0 || memcmp(out->data, input->data, input->len) == 0));
    if (bytes > 0) {
        /* One byte less room than needed is refused, never overrun. */
        g_byte_array_set_size(out, 0);
        CU_ASSERT_EQUAL(ks_decompress(codec, packed->data, packed->len, bytes - 1, out),
                        KS_DECOMPRESS_TOO_LARGE);
        CU_ASSERT(out->len <= bytes - 1);
    }
    g_byte_array_unref(out);
    g_byte_array_unref(packed);
    g_byte_array_unref(input);
}

static void test_round_trips(void)
{
    const size_t sizes[] = { 0,     1,     100,   16383, 16384, 16385, 32767,
                             32768, 32769, 65535, 65536, 65537, 200000 };
    for (size_t i = 0; i < KS_ARRAY_COUNT(sizes); i++) {
        round_trip(KS_CODEC_GZIP, KS_GZIP_LEVEL_DEFAULT, sizes[i]);
        round_trip(KS_CODEC_SNAPPY, 0, sizes[i]);
        round_trip(KS_CODEC_LZ4, KS_LZ4_LEVEL_DEFAULT, sizes[i]);
        round_trip(KS_CODEC_ZSTD, KS_ZSTD_LEVEL_DEFAULT, sizes[i]);
    }
    /* The other level classes: gzip 1 and 9, lz4 HC, zstd negative and max. */
    round_trip(KS_CODEC_GZIP, 1, 70000);
    round_trip(KS_CODEC_GZIP, 9, 70000);
    round_trip(KS_CODEC_LZ4, 1, 70000);
    round_trip(KS_CODEC_LZ4, 17, 70000);
    round_trip(KS_CODEC_ZSTD, -5, 70000);
    round_trip(KS_CODEC_ZSTD, 19, 70000);
}

/* Higher levels compress this input at least as well (it is what levels are for). */
static void test_levels_matter(void)
{
    GByteArray *input = mixed_input(100000, 3);
    GByteArray *fast = g_byte_array_new();
    GByteArray *best = g_byte_array_new();
    ks_compress(KS_CODEC_LZ4, KS_LZ4_LEVEL_DEFAULT, input->data, input->len, fast);
    ks_compress(KS_CODEC_LZ4, 12, input->data, input->len, best);
    CU_ASSERT(best->len <= fast->len);
    CU_ASSERT(fast->len < input->len);
    g_byte_array_unref(fast);
    g_byte_array_unref(best);
    g_byte_array_unref(input);
}

/* liblz4's reference frame writer: independent blocks are read, linked
 * ones refused as Kafka's Lz4BlockInputStream refuses them. */
static void test_lz4_reference_frames(void)
{
    GByteArray *input = mixed_input(150000, 9);
    for (int linked = 0; linked <= 1; linked++) {
        LZ4F_preferences_t prefs;
        memset(&prefs, 0, sizeof(prefs));
        prefs.frameInfo.blockSizeID = LZ4F_max64KB;
        prefs.frameInfo.blockMode = linked ? LZ4F_blockLinked : LZ4F_blockIndependent;
        prefs.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled;
        prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
        size_t bound = LZ4F_compressFrameBound(input->len, &prefs);
        uint8_t *frame = g_malloc(bound);
        size_t frame_bytes = LZ4F_compressFrame(frame, bound, input->data, input->len, &prefs);
        CU_ASSERT_FATAL(!LZ4F_isError(frame_bytes));
        GByteArray *out = g_byte_array_new();
        enum ks_decompress_result result =
            ks_decompress(KS_CODEC_LZ4, frame, frame_bytes, 1 << 20, out);
        if (linked) {
            CU_ASSERT_EQUAL(result, KS_DECOMPRESS_CORRUPT);
        } else {
            CU_ASSERT_EQUAL(result, KS_DECOMPRESS_OK);
            CU_ASSERT(out->len == input->len && memcmp(out->data, input->data, input->len) == 0);
            /* A flipped block byte fails the block checksum (or the block). */
            frame[frame_bytes / 2] ^= 0x10;
            g_byte_array_set_size(out, 0);
            CU_ASSERT_EQUAL(ks_decompress(KS_CODEC_LZ4, frame, frame_bytes, 1 << 20, out),
                            KS_DECOMPRESS_CORRUPT);
        }
        g_byte_array_unref(out);
        g_free(frame);
    }
    g_byte_array_unref(input);
}

/* Every truncation and every single-byte change of each codec's stream is
 * either refused or decodes within the bound (ASan checks the reads). */
static void test_damage_is_refused_or_harmless(void)
{
    GByteArray *input = mixed_input(3000, 5);
    for (int codec = KS_CODEC_GZIP; codec <= KS_CODEC_ZSTD; codec++) {
        GByteArray *packed = g_byte_array_new();
        ks_compress((enum ks_codec)codec, 0, input->data, input->len, packed);
        GByteArray *out = g_byte_array_new();
        int refused = 0;
        for (size_t cut = 0; cut < packed->len; cut++) {
            g_byte_array_set_size(out, 0);
            if (ks_decompress(codec, packed->data, cut, 4096, out) != KS_DECOMPRESS_OK) {
                refused++;
            }
            CU_ASSERT(out->len <= 4096);
        }
        /* gzip, lz4 and zstd end with a trailer, mark or frame end: every cut fails.
         * Snappy's framing has no end mark: a cut right after the 16-byte header
         * is an empty stream, and SnappyInputStream ignores 1-3 bytes of a
         * chunk length at the end, so those four cuts are accepted. */
        if (codec == KS_CODEC_SNAPPY) {
            CU_ASSERT_EQUAL(refused, (int)packed->len - 4);
        } else {
            CU_ASSERT_EQUAL(refused, (int)packed->len);
        }
        uint8_t *copy = g_memdup2(packed->data, packed->len);
        for (size_t i = 0; i < packed->len; i++) {
            copy[i] ^= 0x41;
            g_byte_array_set_size(out, 0);
            (void)ks_decompress(codec, copy, packed->len, 4096, out);
            CU_ASSERT(out->len <= 4096);
            copy[i] ^= 0x41;
        }
        g_free(copy);
        g_byte_array_unref(out);
        g_byte_array_unref(packed);
    }
    g_byte_array_unref(input);
}

/* 64 MiB of zeros compress to almost nothing; a small bound stops them. */
static void test_bomb_is_bounded(void)
{
    size_t bytes = (size_t)64 << 20;
    uint8_t *zeros = g_malloc0(bytes);
    for (int codec = KS_CODEC_GZIP; codec <= KS_CODEC_ZSTD; codec++) {
        GByteArray *packed = g_byte_array_new();
        ks_compress((enum ks_codec)codec, 0, zeros, bytes, packed);
        CU_ASSERT(packed->len < bytes / 20);
        GByteArray *out = g_byte_array_new();
        CU_ASSERT_EQUAL(ks_decompress(codec, packed->data, packed->len, 1 << 20, out),
                        KS_DECOMPRESS_TOO_LARGE);
        CU_ASSERT(out->len <= 1 << 20);
        g_byte_array_unref(out);
        g_byte_array_unref(packed);
    }
    g_free(zeros);
}

static void test_names_and_unknown_codecs(void)
{
    CU_ASSERT_STRING_EQUAL(ks_codec_name(KS_CODEC_NONE), "none");
    CU_ASSERT_STRING_EQUAL(ks_codec_name(KS_CODEC_GZIP), "gzip");
    CU_ASSERT_STRING_EQUAL(ks_codec_name(KS_CODEC_SNAPPY), "snappy");
    CU_ASSERT_STRING_EQUAL(ks_codec_name(KS_CODEC_LZ4), "lz4");
    CU_ASSERT_STRING_EQUAL(ks_codec_name(KS_CODEC_ZSTD), "zstd");
    CU_ASSERT_STRING_EQUAL(ks_codec_name(5), "unknown");
    GByteArray *out = g_byte_array_new();
    CU_ASSERT_EQUAL(ks_decompress(5, vector_zstd, sizeof(vector_zstd), 100, out),
                    KS_DECOMPRESS_UNKNOWN_CODEC);
    CU_ASSERT_EQUAL(ks_decompress(KS_CODEC_NONE, vector_zstd, sizeof(vector_zstd), 100, out),
                    KS_DECOMPRESS_UNKNOWN_CODEC);
    g_byte_array_unref(out);
    struct ks_compression_config config;
    ks_compression_config_init(&config);
    CU_ASSERT_EQUAL(config.codec, KS_CODEC_NONE);
    CU_ASSERT_EQUAL(ks_compression_level(&config), 0);
    config.codec = KS_CODEC_ZSTD;
    CU_ASSERT_EQUAL(ks_compression_level(&config), 3);
    config.codec = KS_CODEC_LZ4;
    CU_ASSERT_EQUAL(ks_compression_level(&config), 9);
    config.codec = KS_CODEC_GZIP;
    CU_ASSERT_EQUAL(ks_compression_level(&config), -1);
}

void ks_test_register_compress(void)
{
    static const struct ks_test_case cases[] = {
        { "reads other implementations", test_reads_other_implementations },
        { "writes kafka framing", test_writes_kafka_framing },
        { "xxh32 known answers", test_xxh32_known_answers },
        { "round trips", test_round_trips },
        { "levels matter", test_levels_matter },
        { "lz4 reference frames", test_lz4_reference_frames },
        { "damage is refused or harmless", test_damage_is_refused_or_harmless },
        { "bomb is bounded", test_bomb_is_bounded },
        { "names and unknown codecs", test_names_and_unknown_codecs },
    };
    KS_TEST_ADD_SUITE("core/compress", cases);
}
