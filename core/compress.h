/*
** core/compress.h: Kafka's compression codecs (none, gzip, snappy, lz4,
** zstd) framed exactly as Kafka's Java client frames them, their levels
** (KIP-390), and the broker's recompress-or-keep decision (LogValidator).
** The framing of each codec is described in core/compress.c.
*/
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The codec ids of the batch attributes' bits 0-2 (Kafka's CompressionType.id). */
enum ks_codec {
    KS_CODEC_NONE = 0,
    KS_CODEC_GZIP = 1,
    KS_CODEC_SNAPPY = 2,
    KS_CODEC_LZ4 = 3,
    KS_CODEC_ZSTD = 4,
};
#define KS_CODEC_COUNT 5

/* Levels (CompressionType): gzip 1..9 or -1 (Deflater.DEFAULT_COMPRESSION,
 * zlib's 6); lz4 1..17, 9 (lz4-java's default: the fast compressor, any other
 * level the HC one); zstd -131072..22, 3. Snappy has no level. */
#define KS_GZIP_LEVEL_DEFAULT (-1)
#define KS_GZIP_LEVEL_MIN     1
#define KS_GZIP_LEVEL_MAX     9
#define KS_LZ4_LEVEL_DEFAULT  9
#define KS_LZ4_LEVEL_MIN      1
#define KS_LZ4_LEVEL_MAX      17
#define KS_ZSTD_LEVEL_DEFAULT 3
#define KS_ZSTD_LEVEL_MIN     (-131072)
#define KS_ZSTD_LEVEL_MAX     22

/* A topic's compression.type = producer (Kafka's topic default): keep the
 * codec the producer used (BrokerCompressionType.PRODUCER). */
#define KS_COMPRESSION_PRODUCER (-1)

/* compression.type and the level keys of a producer or a topic, loaded from
 * the scenario (core/config.h embeds it). A topic's `uncompressed` is
 * KS_CODEC_NONE. */
struct ks_compression_config {
    int codec;          /* an enum ks_codec, or KS_COMPRESSION_PRODUCER (topics) */
    int32_t gzip_level; /* compression.gzip.level = -1 */
    int32_t lz4_level;  /* compression.lz4.level = 9 */
    int32_t zstd_level; /* compression.zstd.level = 3 */
};

/* "none", "gzip", "snappy", "lz4", "zstd" (Kafka's lower-case names, as
 * kafka-dump-log prints them since 3.1); "unknown" for ids 5..7. Static. */
const char *ks_codec_name(int codec_id);
/* The level a config gives its codec (0 for none, snappy and producer). */
int32_t ks_compression_level(const struct ks_compression_config *config);
/* The config Kafka uses when none is given: codec none, default levels. */
void ks_compression_config_init(struct ks_compression_config *config);

/* Appends the compressed form of input[0..input_bytes) to out, framed as
 * Kafka's wrapForOutput writes it. level 0 means the codec's default (zstd
 * reads 0 as its default too; Kafka accepts no 0 for gzip or lz4). The codec
 * must not be NONE. Pure: the same input and level give the same bytes with
 * the same library versions. */
void ks_compress(enum ks_codec codec, int32_t level, const uint8_t *input, size_t input_bytes,
                 GByteArray *out);

enum ks_decompress_result {
    KS_DECOMPRESS_OK,
    KS_DECOMPRESS_CORRUPT,       /* not a valid stream of this codec as Kafka reads it */
    KS_DECOMPRESS_TOO_LARGE,     /* would exceed output_bytes_max */
    KS_DECOMPRESS_UNKNOWN_CODEC, /* codec id 0 or 5..7 */
};

/* Appends the decompressed bytes of input to out, reading the framing as
 * Kafka's wrapForInput does; never more than output_bytes_max bytes (the
 * caller bounds memory; a crafted stream cannot make it allocate more).
 * On failure out holds a partial result the caller should drop. */
enum ks_decompress_result ks_decompress(int codec_id, const uint8_t *input, size_t input_bytes,
                                        size_t output_bytes_max, GByteArray *out);
/* "ok", "corrupt", "too large", "unknown codec" (static). */
const char *ks_decompress_result_name(enum ks_decompress_result result);

/* The broker's choice for a produced batch, as Kafka's LogValidator makes it
 * (validateMessagesAndAssignOffsets): the target codec is the topic's
 * compression.type, or the batch's own for `producer`
 * (BrokerCompressionType.targetCompression); the batch is kept as sent when
 * the target codec equals the batch's codec (levels are not compared: Kafka
 * compares CompressionType only), and rebuilt with the target codec and
 * level otherwise. Returns NULL to keep the batch, or the rebuilt batch
 * (owned: g_byte_array_unref) with the same header fields and records; NULL
 * too when the batch cannot be decoded (the caller's own checks reject it).
 * Called from the leader's produce path. */
GByteArray *ks_compress_for_topic(const struct ks_compression_config *topic,
                                  const uint8_t *batch_bytes, size_t byte_count);

/* XXH32 (xxHash, 32-bit), which the LZ4 frame format uses for its header
 * checksum and block checksums; exposed for tests. */
uint32_t ks_xxh32(const void *bytes, size_t byte_count, uint32_t seed);
