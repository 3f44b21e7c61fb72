/* tests/bench/bench_compress.c: what compression does to ksim's workload.
 *
 * Workload: the batches a producer of core/producer.c builds for
 * scenarios/compression-throughput.ini: records of 1000-byte values with
 * value.random.percent = 25 (ks_producer_value_fill), keys key-0..key-999
 * and the identity header, in batches of about 16 KiB uncompressed (the
 * default batch.size before the ratio estimate grows them), 20 MB in all.
 * For each codec at its Kafka default level it prints
 *
 *   BENCH compression_<codec>_ratio <compressed / uncompressed batch bytes> x ratio=<same>
 *   BENCH compression_<codec>_mb_per_s <uncompressed MB built per CPU s> MB/s
 *         ratio=<that / the same batches built uncompressed>
 *
 * The ratio is what the disks write and the network carries per record,
 * relative to compression.type = none. */
#include "../../core/base.h"
#include "../../core/batch.h"
#include "../../core/compress.h"
#include "../../core/producer.h"
#include "bench_time.h"

#include <stdio.h>
#include <string.h>

#define VALUE_BYTES    1000
#define RANDOM_PERCENT 25
#define BATCH_BYTES    16384
#define TOTAL_BYTES    (20 * 1000 * 1000)

/* Builds the workload's batches with `codec`; returns their total bytes and
 * adds their uncompressed size to *plain_bytes. */
static size_t build_all(int codec, size_t *plain_bytes)
{
    uint8_t value[VALUE_BYTES];
    size_t total = 0;
    int64_t seq = 0;
    while (*plain_bytes < TOTAL_BYTES) {
        struct ks_batch_builder builder;
        ks_batch_builder_init(&builder, KS_EPOCH_BASE_MS, 1000000, 0, (int32_t)seq);
        builder.attributes = (int16_t)codec;
        while (ks_batch_builder_size(&builder) + VALUE_BYTES + 40 <= BATCH_BYTES) {
            char key[16];
            char identity[32];
            int key_bytes = snprintf(key, sizeof(key), "key-%d", (int)(seq * 7919 % 1000));
            int identity_bytes = snprintf(identity, sizeof(identity), "p1:%lld", (long long)seq);
            struct ks_header_view header = { (const uint8_t *)KS_IDENTITY_HEADER, 7,
                                             (const uint8_t *)identity, identity_bytes };
            ks_producer_value_fill(12345, seq, RANDOM_PERCENT, value, VALUE_BYTES);
            ks_batch_builder_add(&builder, KS_EPOCH_BASE_MS, key, key_bytes, value, VALUE_BYTES,
                                 &header, 1);
            seq++;
        }
        *plain_bytes += ks_batch_builder_size(&builder);
        GByteArray *bytes = ks_batch_builder_finish(&builder);
        total += bytes->len;
        g_byte_array_unref(bytes);
        ks_batch_builder_deinit(&builder);
    }
    return total;
}

int main(void)
{
    size_t plain_bytes = 0;
    double start = bench_cpu_s();
    size_t none_bytes = build_all(KS_CODEC_NONE, &plain_bytes);
    double none_mb_per_s = (double)plain_bytes / 1e6 / (bench_cpu_s() - start);
    ks_assert(none_bytes == plain_bytes);
    for (int codec = KS_CODEC_GZIP; codec <= KS_CODEC_ZSTD; codec++) {
        size_t codec_plain = 0;
        start = bench_cpu_s();
        size_t bytes = build_all(codec, &codec_plain);
        double elapsed = bench_cpu_s() - start;
        double ratio = (double)bytes / (double)codec_plain;
        double mb_per_s = (double)codec_plain / 1e6 / elapsed;
        printf("BENCH compression_%s_ratio %.3f x ratio=%.3f\n", ks_codec_name(codec), ratio,
               ratio);
        printf("BENCH compression_%s_mb_per_s %.0f MB/s ratio=%.4f\n", ks_codec_name(codec),
               mb_per_s, mb_per_s / none_mb_per_s);
    }
    return 0;
}
