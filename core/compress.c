/*
** core/compress.c: the record-batch codecs of Kafka, framed byte for byte as
** Kafka's Java client frames them (clients/.../common/compress/{Gzip,Snappy,Lz4,Zstd}Compression.java,
** wrapForOutput and wrapForInput), and the broker's recompression decision
** (storage/.../log/LogValidator.java).
**
** This file is libc-level code, not part of the simulated world: it calls
** Debian's zlib, snappy (its C API, snappy-c.h), liblz4 and libzstd, and
** nothing here reads a clock, an RNG or a file. The same input and level give
** the same bytes for the same library versions, so a run stays deterministic;
** a different zlib/lz4/zstd/snappy version may choose other (equally valid)
** encodings, which changes the sizes and so the trace hash of runs that
** compress (docs/model.md says so).
**
** Framing of the records section, per codec (attributes bits 0-2):
**
**   1 gzip    GzipCompression: java.util.zip.GZIPOutputStream. A 10-byte
**             header written by the JDK (17+), then raw deflate at the level,
**             then CRC-32 and ISIZE, both little-endian:
**               OFFSET  SIZE  DESCRIPTION
**               0       2     magic 1f 8b
**               2       1     CM 8 (deflate)
**               3       1     FLG 0
**               4       4     MTIME 0
**               8       1     XFL 0
**               9       1     OS 255 (unknown; JDK 16+, 0 before)
**               10      ...   deflate stream (zlib, windowBits 15, memLevel 8)
**               end-8   4     CRC-32 of the uncompressed bytes
**               end-4   4     uncompressed size mod 2^32
**             Reading (GZIPInputStream) accepts any gzip member header and
**             concatenated members.
**   2 snappy  SnappyCompression: xerial snappy-java's SnappyOutputStream,
**             block size 32 KiB:
**               OFFSET  SIZE  DESCRIPTION
**               0       8     magic 82 'S' 'N' 'A' 'P' 'P' 'Y' 00
**               8       4     version 1 (big-endian)
**               12      4     minimum compatible version 1 (big-endian)
**               16      ...   per block of up to 32 KiB input: compressed
**                             length (int32 big-endian), raw snappy block
**             The header is written even for empty input. Reading
**             (SnappyInputStream) also takes a whole raw snappy buffer when
**             the magic is absent, and a second header between blocks
**             (concatenated streams).
**   3 lz4     Lz4Compression: Kafka's own Lz4BlockOutputStream, a subset of
**             the LZ4 frame format v1.5.1 with 64 KiB independent blocks:
**               OFFSET  SIZE  DESCRIPTION
**               0       4     magic 0x184D2204 (little-endian)
**               4       1     FLG 0x60: version 01, block independence 1, no
**                             block or content checksum, no content size
**               5       1     BD 0x40: block maximum size 64 KiB
**               6       1     HC: (XXH32(FLG, BD; seed 0) >> 8) & 0xff, over
**                             the descriptor only (KAFKA-3160; magic v0
**                             messages hashed the magic too, never used here)
**               7       ...   per block of up to 64 KiB input: int32
**                             little-endian size, high bit set when the block
**                             is stored uncompressed (compressed size >= input
**                             size), then the block
**               end-4   4     end mark 0
**             Level 9 (the default) uses lz4's fast compressor, every other
**             level the HC compressor (Lz4BlockOutputStream's constructor).
**             Reading (Lz4BlockInputStream) checks the HC byte, rejects
**             dependent blocks and versions other than 01, verifies block
**             checksums when FLG asks, skips a content size and a content
**             checksum.
**   4 zstd    ZstdCompression: zstd-jni's ZstdOutputStreamNoFinalizer behind
**             a 16 KiB BufferedOutputStream: one zstd frame, streamed (no
**             content size in the frame header), no checksum. Reading takes
**             one or more frames.
**
** Invariants:
**   C1  ks_decompress never writes more than output_bytes_max bytes, whatever
**       its input (tests/fuzz feeds it garbage through the batch iterator).
**   C2  ks_compress output decompresses to its input (tests/core/test_compress.c
**       round-trips every codec; tests/decode_segments.py reads the bytes
**       with Python's zlib, python3-snappy, python3-lz4 and python3-zstandard).
*/
#include "compress.h"

#include "base.h"
#include "batch.h"

#include <lz4.h>
#include <lz4hc.h>
#include <snappy-c.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#define GZIP_HEADER_BYTES       10
#define SNAPPY_HEADER_BYTES     16
#define SNAPPY_BLOCK_BYTES      (32 * 1024)
#define LZ4_MAGIC               0x184D2204u
#define LZ4_BLOCK_BYTES         (64 * 1024)
#define LZ4_INCOMPRESSIBLE_MASK 0x80000000u
#define ZSTD_CHUNK_BYTES        (16 * 1024)

static const uint8_t gzip_header[GZIP_HEADER_BYTES] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff };
static const uint8_t snappy_magic[8] = { 0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0 };

const char *ks_codec_name(int codec_id)
{
    switch (codec_id) {
    case KS_CODEC_NONE: return "none";
    case KS_CODEC_GZIP: return "gzip";
    case KS_CODEC_SNAPPY: return "snappy";
    case KS_CODEC_LZ4: return "lz4";
    case KS_CODEC_ZSTD: return "zstd";
    default: return "unknown"; /* an int from the wire, not only enum values */
    }
}

int32_t ks_compression_level(const struct ks_compression_config *config)
{
    switch (config->codec) {
    case KS_CODEC_GZIP: return config->gzip_level;
    case KS_CODEC_LZ4: return config->lz4_level;
    case KS_CODEC_ZSTD: return config->zstd_level;
    default: return 0; /* none, snappy, producer */
    }
}

void ks_compression_config_init(struct ks_compression_config *config)
{
    memset(config, 0, sizeof(*config));
    config->codec = KS_CODEC_NONE;
    config->gzip_level = KS_GZIP_LEVEL_DEFAULT;
    config->lz4_level = KS_LZ4_LEVEL_DEFAULT;
    config->zstd_level = KS_ZSTD_LEVEL_DEFAULT;
}

const char *ks_decompress_result_name(enum ks_decompress_result result)
{
    switch (result) {
    case KS_DECOMPRESS_OK: return "ok";
    case KS_DECOMPRESS_CORRUPT: return "corrupt";
    case KS_DECOMPRESS_TOO_LARGE: return "too large";
    case KS_DECOMPRESS_UNKNOWN_CODEC: return "unknown codec";
    }
    return "?";
}

/* ---- byte helpers --------------------------------------------------------------- */

static void put_le32(uint8_t *out, uint32_t value)
{
    out[0] = (uint8_t)value;
    out[1] = (uint8_t)(value >> 8);
    out[2] = (uint8_t)(value >> 16);
    out[3] = (uint8_t)(value >> 24);
}

static uint32_t get_le32(const uint8_t *bytes)
{
    return (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 |
           (uint32_t)bytes[3] << 24;
}

static void put_be32(uint8_t *out, uint32_t value)
{
    out[0] = (uint8_t)(value >> 24);
    out[1] = (uint8_t)(value >> 16);
    out[2] = (uint8_t)(value >> 8);
    out[3] = (uint8_t)value;
}

static uint32_t get_be32(const uint8_t *bytes)
{
    return (uint32_t)bytes[0] << 24 | (uint32_t)bytes[1] << 16 | (uint32_t)bytes[2] << 8 |
           (uint32_t)bytes[3];
}

/* Grows out by extra bytes and returns where they start. */
static uint8_t *grow(GByteArray *out, size_t extra)
{
    ks_assert(extra <= G_MAXUINT - out->len);
    guint start = out->len;
    g_byte_array_set_size(out, start + (guint)extra);
    return out->data + start;
}

static void shrink_to(GByteArray *out, size_t length)
{
    ks_assert(length <= out->len);
    g_byte_array_set_size(out, (guint)length);
}

/* ---- XXH32 ---------------------------------------------------------------------- */

#define XXH_PRIME1 0x9E3779B1u
#define XXH_PRIME2 0x85EBCA77u
#define XXH_PRIME3 0xC2B2AE3Du
#define XXH_PRIME4 0x27D4EB2Fu
#define XXH_PRIME5 0x165667B1u

static uint32_t rotl32(uint32_t value, int bits)
{
    return (value << bits) | (value >> (32 - bits));
}

static uint32_t xxh_round(uint32_t acc, uint32_t input)
{
    acc += input * XXH_PRIME2;
    acc = rotl32(acc, 13);
    return acc * XXH_PRIME1;
}

uint32_t ks_xxh32(const void *bytes, size_t byte_count, uint32_t seed)
{
    const uint8_t *p = bytes;
    const uint8_t *end = p + byte_count;
    uint32_t h32;
    if (byte_count >= 16) {
        uint32_t v1 = seed + XXH_PRIME1 + XXH_PRIME2;
        uint32_t v2 = seed + XXH_PRIME2;
        uint32_t v3 = seed;
        uint32_t v4 = seed - XXH_PRIME1;
        while ((size_t)(end - p) >= 16) {
            v1 = xxh_round(v1, get_le32(p));
            v2 = xxh_round(v2, get_le32(p + 4));
            v3 = xxh_round(v3, get_le32(p + 8));
            v4 = xxh_round(v4, get_le32(p + 12));
            p += 16;
        }
        h32 = rotl32(v1, 1) + rotl32(v2, 7) + rotl32(v3, 12) + rotl32(v4, 18);
    } else {
        h32 = seed + XXH_PRIME5;
    }
    h32 += (uint32_t)byte_count;
    while ((size_t)(end - p) >= 4) {
        h32 += get_le32(p) * XXH_PRIME3;
        h32 = rotl32(h32, 17) * XXH_PRIME4;
        p += 4;
    }
    while (p < end) {
        h32 += (uint32_t)*p * XXH_PRIME5;
        h32 = rotl32(h32, 11) * XXH_PRIME1;
        p++;
    }
    h32 ^= h32 >> 15;
    h32 *= XXH_PRIME2;
    h32 ^= h32 >> 13;
    h32 *= XXH_PRIME3;
    h32 ^= h32 >> 16;
    return h32;
}

/* ---- gzip ------------------------------------------------------------------------- */

static void gzip_compress(int32_t level, const uint8_t *input, size_t input_bytes, GByteArray *out)
{
    memcpy(grow(out, GZIP_HEADER_BYTES), gzip_header, GZIP_HEADER_BYTES);
    z_stream stream;
    memset(&stream, 0, sizeof(stream));
    /* java.util.zip.Deflater(level, nowrap = true): raw deflate, 32 KiB
     * window, memLevel 8; GZIPOutputStream writes header and trailer. */
    int zlevel = level == 0 ? Z_DEFAULT_COMPRESSION : level;
    ks_assert(deflateInit2(&stream, zlevel, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    ks_assert(input_bytes <= UINT32_MAX);
    uLong bound = deflateBound(&stream, (uLong)input_bytes);
    size_t start = out->len;
    uint8_t *target = grow(out, (size_t)bound);
    stream.next_in = (Bytef *)(uintptr_t)input;
    stream.avail_in = (uInt)input_bytes;
    stream.next_out = target;
    stream.avail_out = (uInt)bound;
    ks_assert(deflate(&stream, Z_FINISH) == Z_STREAM_END); /* the bound always suffices */
    size_t written = (size_t)stream.total_out;
    deflateEnd(&stream);
    shrink_to(out, start + written);
    uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), input, (uInt)input_bytes);
    uint8_t *trailer = grow(out, 8);
    put_le32(trailer, crc);
    put_le32(trailer + 4, (uint32_t)input_bytes);
}

/* One gzip member at input; *used_out = its bytes. */
static enum ks_decompress_result gzip_member(const uint8_t *input, size_t input_bytes,
                                             size_t output_bytes_max, size_t output_start,
                                             GByteArray *out, size_t *used_out)
{
    z_stream stream;
    memset(&stream, 0, sizeof(stream));
    /* 16 + window bits: gzip wrapper only, as GZIPInputStream ("Not in GZIP
     * format" for a zlib or raw stream); zlib checks CRC-32 and ISIZE. */
    if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
        return KS_DECOMPRESS_CORRUPT;
    }
    stream.next_in = (Bytef *)(uintptr_t)input;
    stream.avail_in = (uInt)(input_bytes > UINT32_MAX ? UINT32_MAX : input_bytes);
    enum ks_decompress_result result = KS_DECOMPRESS_OK;
    for (;;) {
        size_t produced = out->len - output_start;
        size_t room = output_bytes_max - produced;
        if (room == 0) {
            /* Full: the stream must end here, without more output. */
            uint8_t probe;
            stream.next_out = &probe;
            stream.avail_out = 1;
            int status = inflate(&stream, Z_NO_FLUSH);
            result = status == Z_STREAM_END && stream.avail_out == 1 ? KS_DECOMPRESS_OK
                     : stream.avail_out == 0                         ? KS_DECOMPRESS_TOO_LARGE
                                                                     : KS_DECOMPRESS_CORRUPT;
            break;
        }
        size_t chunk = room < 64 * 1024 ? room : 64 * 1024;
        size_t before = out->len;
        stream.next_out = grow(out, chunk);
        stream.avail_out = (uInt)chunk;
        int status = inflate(&stream, Z_NO_FLUSH);
        shrink_to(out, before + (chunk - stream.avail_out));
        if (status == Z_STREAM_END) {
            break;
        }
        if (status != Z_OK) {
            result = KS_DECOMPRESS_CORRUPT; /* Z_BUF_ERROR here: the input ended early */
            break;
        }
    }
    *used_out = (size_t)(stream.next_in - input);
    inflateEnd(&stream);
    return result;
}

static enum ks_decompress_result gzip_decompress(const uint8_t *input, size_t input_bytes,
                                                 size_t output_bytes_max, GByteArray *out)
{
    size_t start = out->len;
    size_t position = 0;
    do {
        size_t used = 0;
        enum ks_decompress_result result = gzip_member(input + position, input_bytes - position,
                                                       output_bytes_max, start, out, &used);
        if (result != KS_DECOMPRESS_OK) {
            return result;
        }
        position += used;
        /* GZIPInputStream.readTrailer: more bytes that start a gzip header
         * are another member; anything else ends the stream. */
    } while (input_bytes - position >= GZIP_HEADER_BYTES && input[position] == 0x1f &&
             input[position + 1] == 0x8b);
    return KS_DECOMPRESS_OK;
}

/* ---- snappy (xerial framing) ----------------------------------------------------- */

static void snappy_compress_framed(const uint8_t *input, size_t input_bytes, GByteArray *out)
{
    uint8_t *header = grow(out, SNAPPY_HEADER_BYTES);
    memcpy(header, snappy_magic, sizeof(snappy_magic));
    put_be32(header + 8, 1);  /* SnappyCodec.DEFAULT_VERSION */
    put_be32(header + 12, 1); /* SnappyCodec.MINIMUM_COMPATIBLE_VERSION */
    for (size_t position = 0; position < input_bytes; position += SNAPPY_BLOCK_BYTES) {
        size_t block = input_bytes - position < SNAPPY_BLOCK_BYTES ? input_bytes - position
                                                                   : SNAPPY_BLOCK_BYTES;
        size_t bound = snappy_max_compressed_length(block);
        size_t start = out->len;
        uint8_t *target = grow(out, 4 + bound);
        size_t written = bound;
        ks_assert(snappy_compress((const char *)input + position, block, (char *)target + 4,
                                  &written) == SNAPPY_OK);
        ks_assert(written <= INT32_MAX);
        put_be32(target, (uint32_t)written);
        shrink_to(out, start + 4 + written);
    }
}

/* One raw snappy buffer, appended to out within the bound. */
static enum ks_decompress_result snappy_raw(const uint8_t *input, size_t input_bytes,
                                            size_t output_bytes_max, size_t output_start,
                                            GByteArray *out)
{
    size_t length = 0;
    if (snappy_uncompressed_length((const char *)input, input_bytes, &length) != SNAPPY_OK) {
        return KS_DECOMPRESS_CORRUPT;
    }
    if (length > output_bytes_max - (out->len - output_start)) {
        return KS_DECOMPRESS_TOO_LARGE;
    }
    size_t before = out->len;
    uint8_t *target = grow(out, length);
    size_t written = length;
    if (snappy_uncompress((const char *)input, input_bytes, (char *)target, &written) !=
            SNAPPY_OK ||
        written != length) {
        shrink_to(out, before);
        return KS_DECOMPRESS_CORRUPT;
    }
    return KS_DECOMPRESS_OK;
}

static enum ks_decompress_result snappy_decompress(const uint8_t *input, size_t input_bytes,
                                                   size_t output_bytes_max, GByteArray *out)
{
    size_t start = out->len;
    if (input_bytes == 0) {
        return KS_DECOMPRESS_CORRUPT; /* "Cannot decompress empty stream" */
    }
    if (input_bytes < SNAPPY_HEADER_BYTES ||
        memcmp(input, snappy_magic, sizeof(snappy_magic)) != 0) {
        /* SnappyInputStream.readHeader: no magic, so the whole input is one
         * buffer from Snappy.compress(byte[]). */
        return snappy_raw(input, input_bytes, output_bytes_max, start, out);
    }
    size_t position = SNAPPY_HEADER_BYTES;
    while (input_bytes - position >= 4) {
        uint32_t chunk = get_be32(input + position);
        if (chunk == get_be32(snappy_magic)) {
            /* A concatenated stream: its header, then more chunks. */
            if (input_bytes - position < SNAPPY_HEADER_BYTES ||
                memcmp(input + position, snappy_magic, sizeof(snappy_magic)) != 0) {
                return KS_DECOMPRESS_CORRUPT;
            }
            position += SNAPPY_HEADER_BYTES;
            continue;
        }
        position += 4;
        if (chunk > INT32_MAX || chunk > input_bytes - position) {
            return KS_DECOMPRESS_CORRUPT; /* negative size, or the chunk is cut short */
        }
        enum ks_decompress_result result =
            snappy_raw(input + position, chunk, output_bytes_max, start, out);
        if (result != KS_DECOMPRESS_OK) {
            return result;
        }
        position += chunk;
    }
    /* Fewer than 4 bytes left: SnappyInputStream.hasNextChunk stops there. */
    return KS_DECOMPRESS_OK;
}

/* ---- lz4 (Kafka's Lz4BlockOutputStream framing) ------------------------------------ */

static void lz4_compress_framed(int32_t level, const uint8_t *input, size_t input_bytes,
                                GByteArray *out)
{
    uint8_t *header = grow(out, 7);
    put_le32(header, LZ4_MAGIC);
    header[4] = 0x60; /* FLG: version 01, block independence */
    header[5] = 0x40; /* BD: 64 KiB blocks */
    header[6] = (uint8_t)((ks_xxh32(header + 4, 2, 0) >> 8) & 0xff);
    int32_t effective = level == 0 ? KS_LZ4_LEVEL_DEFAULT : level;
    int bound = LZ4_compressBound(LZ4_BLOCK_BYTES);
    for (size_t position = 0; position < input_bytes; position += LZ4_BLOCK_BYTES) {
        size_t block =
            input_bytes - position < LZ4_BLOCK_BYTES ? input_bytes - position : LZ4_BLOCK_BYTES;
        size_t start = out->len;
        uint8_t *target = grow(out, 4 + (size_t)bound);
        const char *source = (const char *)input + position;
        int written =
            effective == KS_LZ4_LEVEL_DEFAULT
                ? LZ4_compress_default(source, (char *)target + 4, (int)block, bound)
                : LZ4_compress_HC(source, (char *)target + 4, (int)block, bound, effective);
        ks_assert(written > 0);
        if ((size_t)written >= block) {
            /* Incompressible: stored as is, high bit set on the size. */
            memcpy(target + 4, source, block);
            put_le32(target, (uint32_t)block | LZ4_INCOMPRESSIBLE_MASK);
            shrink_to(out, start + 4 + block);
        } else {
            put_le32(target, (uint32_t)written);
            shrink_to(out, start + 4 + (size_t)written);
        }
    }
    put_le32(grow(out, 4), 0); /* end mark; no content checksum */
}

static enum ks_decompress_result lz4_decompress(const uint8_t *input, size_t input_bytes,
                                                size_t output_bytes_max, GByteArray *out)
{
    size_t start = out->len;
    if (input_bytes < 6 || get_le32(input) != LZ4_MAGIC) {
        return KS_DECOMPRESS_CORRUPT;
    }
    uint8_t flg = input[4];
    uint8_t bd = input[5];
    bool block_checksum = (flg >> 4) & 1;
    bool content_size = (flg >> 3) & 1;
    bool content_checksum = (flg >> 2) & 1;
    /* Lz4BlockOutputStream.FLG/BD.validate. */
    if ((flg & 3) != 0 || ((flg >> 5) & 1) != 1 || ((flg >> 6) & 3) != 1) {
        return KS_DECOMPRESS_CORRUPT;
    }
    int block_code = (bd >> 4) & 7;
    if ((bd & 15) != 0 || (bd >> 7) != 0 || block_code < 4) {
        return KS_DECOMPRESS_CORRUPT;
    }
    size_t block_max = (size_t)1 << (2 * block_code + 8);
    size_t position = 6;
    if (content_size) {
        if (input_bytes - position < 8) {
            return KS_DECOMPRESS_CORRUPT;
        }
        position += 8;
    }
    if (input_bytes - position < 1 ||
        input[position] != (uint8_t)((ks_xxh32(input + 4, position - 4, 0) >> 8) & 0xff)) {
        return KS_DECOMPRESS_CORRUPT; /* DESCRIPTOR_HASH_MISMATCH */
    }
    position++;
    for (;;) {
        if (input_bytes - position < 4) {
            return KS_DECOMPRESS_CORRUPT; /* PREMATURE_EOS: no end mark */
        }
        uint32_t size = get_le32(input + position);
        position += 4;
        bool compressed = (size & LZ4_INCOMPRESSIBLE_MASK) == 0;
        size &= ~LZ4_INCOMPRESSIBLE_MASK;
        if (size == 0) {
            if (content_checksum && input_bytes - position < 4) {
                return KS_DECOMPRESS_CORRUPT; /* Kafka reads it (and does not verify it) */
            }
            return KS_DECOMPRESS_OK;
        }
        if (size > block_max || size > input_bytes - position) {
            return KS_DECOMPRESS_CORRUPT;
        }
        const uint8_t *block = input + position;
        size_t room = output_bytes_max - (out->len - start);
        size_t before = out->len;
        if (compressed) {
            size_t capacity = block_max < room ? block_max : room;
            uint8_t *target = grow(out, capacity);
            int written =
                LZ4_decompress_safe((const char *)block, (char *)target, (int)size, (int)capacity);
            if (written < 0) {
                shrink_to(out, before);
                /* A block that fits block_max but not the room left is too large. */
                return capacity < block_max ? KS_DECOMPRESS_TOO_LARGE : KS_DECOMPRESS_CORRUPT;
            }
            shrink_to(out, before + (size_t)written);
        } else {
            if (size > room) {
                return KS_DECOMPRESS_TOO_LARGE;
            }
            memcpy(grow(out, size), block, size);
        }
        position += size;
        if (block_checksum) {
            if (input_bytes - position < 4 ||
                get_le32(input + position) != ks_xxh32(block, size, 0)) {
                return KS_DECOMPRESS_CORRUPT; /* BLOCK_HASH_MISMATCH */
            }
            position += 4;
        }
    }
}

/* ---- zstd ------------------------------------------------------------------------- */

static void zstd_compress(int32_t level, const uint8_t *input, size_t input_bytes, GByteArray *out)
{
    ZSTD_CCtx *context = ZSTD_createCCtx();
    ks_assert(context != NULL);
    ks_assert(!ZSTD_isError(ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level)));
    ks_assert(!ZSTD_isError(ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 0)));
    /* The BufferedOutputStream hands zstd-jni 16 KiB at a time with
     * ZSTD_e_continue and close() ends the frame, so the frame never states
     * its content size. */
    size_t position = 0;
    ZSTD_EndDirective mode = ZSTD_e_continue;
    for (;;) {
        size_t chunk =
            input_bytes - position < ZSTD_CHUNK_BYTES ? input_bytes - position : ZSTD_CHUNK_BYTES;
        if (chunk == 0) {
            mode = ZSTD_e_end;
        }
        ZSTD_inBuffer in = { input + position, chunk, 0 };
        size_t remaining = 1;
        while (in.pos < in.size || (mode == ZSTD_e_end && remaining != 0)) {
            size_t room = ZSTD_CStreamOutSize();
            size_t before = out->len;
            ZSTD_outBuffer target = { grow(out, room), room, 0 };
            remaining = ZSTD_compressStream2(context, &target, &in, mode);
            ks_assert(!ZSTD_isError(remaining));
            shrink_to(out, before + target.pos);
        }
        position += chunk;
        if (mode == ZSTD_e_end) {
            break;
        }
    }
    ZSTD_freeCCtx(context);
}

static enum ks_decompress_result zstd_decompress(const uint8_t *input, size_t input_bytes,
                                                 size_t output_bytes_max, GByteArray *out)
{
    size_t start = out->len;
    ZSTD_DCtx *context = ZSTD_createDCtx();
    ks_assert(context != NULL);
    ZSTD_inBuffer in = { input, input_bytes, 0 };
    enum ks_decompress_result result = KS_DECOMPRESS_OK;
    size_t status = 0;
    bool progress = true;
    while (progress && (in.pos < in.size || status != 0)) {
        size_t room = output_bytes_max - (out->len - start);
        size_t chunk = ZSTD_DStreamOutSize();
        /* One byte more than the room, to tell "full" from "too large". */
        size_t capacity = chunk < room + 1 ? chunk : room + 1;
        size_t before = out->len;
        ZSTD_outBuffer target = { grow(out, capacity), capacity, 0 };
        size_t in_before = in.pos;
        status = ZSTD_decompressStream(context, &target, &in);
        shrink_to(out, before + target.pos);
        if (ZSTD_isError(status)) {
            result = KS_DECOMPRESS_CORRUPT;
            break;
        }
        if (out->len - start > output_bytes_max) {
            shrink_to(out, start + output_bytes_max);
            result = KS_DECOMPRESS_TOO_LARGE;
            break;
        }
        progress = target.pos > 0 || in.pos > in_before;
    }
    if (result == KS_DECOMPRESS_OK && (status != 0 || input_bytes == 0)) {
        result = KS_DECOMPRESS_CORRUPT; /* the last frame is cut short */
    }
    ZSTD_freeDCtx(context);
    return result;
}

/* ---- dispatch ---------------------------------------------------------------------- */

void ks_compress(enum ks_codec codec, int32_t level, const uint8_t *input, size_t input_bytes,
                 GByteArray *out)
{
    switch (codec) {
    case KS_CODEC_GZIP: gzip_compress(level, input, input_bytes, out); return;
    case KS_CODEC_SNAPPY: snappy_compress_framed(input, input_bytes, out); return;
    case KS_CODEC_LZ4: lz4_compress_framed(level, input, input_bytes, out); return;
    case KS_CODEC_ZSTD: zstd_compress(level, input, input_bytes, out); return;
    case KS_CODEC_NONE: break;
    }
    ks_assert(!"ks_compress: codec none");
}

enum ks_decompress_result ks_decompress(int codec_id, const uint8_t *input, size_t input_bytes,
                                        size_t output_bytes_max, GByteArray *out)
{
    switch (codec_id) {
    case KS_CODEC_GZIP: return gzip_decompress(input, input_bytes, output_bytes_max, out);
    case KS_CODEC_SNAPPY: return snappy_decompress(input, input_bytes, output_bytes_max, out);
    case KS_CODEC_LZ4: return lz4_decompress(input, input_bytes, output_bytes_max, out);
    case KS_CODEC_ZSTD: return zstd_decompress(input, input_bytes, output_bytes_max, out);
    default: return KS_DECOMPRESS_UNKNOWN_CODEC;
    }
}

/* ---- the broker's decision (LogValidator) --------------------------------------------- */

GByteArray *ks_compress_for_topic(const struct ks_compression_config *topic,
                                  const uint8_t *batch_bytes, size_t byte_count)
{
    struct ks_batch_view view;
    if (ks_batch_parse_crc_checked(batch_bytes, byte_count, &view, NULL) != KS_BATCH_OK) {
        return NULL;
    }
    int source = view.attributes & KS_ATTR_CODEC_MASK;
    /* BrokerCompressionType.targetCompression: `producer` keeps the batch's
     * codec; validateMessagesAndAssignOffsetsCompressed keeps the bytes
     * (in-place assignment) when source and target types are equal. Control
     * batches are never written by ksim's producers. */
    int target = topic->codec == KS_COMPRESSION_PRODUCER ? source : topic->codec;
    if (target == source || (view.attributes & KS_ATTR_CONTROL) != 0) {
        return NULL;
    }
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, view.base_timestamp, view.producer_id, view.producer_epoch,
                          view.base_sequence);
    builder.attributes = (int16_t)((view.attributes & ~KS_ATTR_CODEC_MASK) | target);
    builder.compression_level = ks_compression_level(topic);
    struct ks_record_iter iter;
    struct ks_record_view record;
    bool malformed = false;
    ks_record_iter_init(&iter, &view);
    while (ks_record_iter_next(&iter, &record, &malformed)) {
        ks_batch_builder_add_at(&builder, (int32_t)(record.offset - view.base_offset),
                                record.timestamp, record.key, record.key_bytes, record.value,
                                record.value_bytes, record.headers, record.header_count);
    }
    ks_record_iter_deinit(&iter);
    if (malformed || builder.record_count != view.record_count) {
        ks_batch_builder_deinit(&builder);
        return NULL;
    }
    GByteArray *rebuilt = ks_batch_builder_finish_at(
        &builder, view.base_offset, view.partition_leader_epoch, view.last_offset_delta);
    ks_batch_builder_deinit(&builder);
    return rebuilt;
}
