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
 * relative to compression.type = none. Times are CPU time (bench_time.h),
 * the cheapest of three rounds that take every codec in turn. */
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

/* CPU seconds to build the workload with `codec`; *bytes and *plain get its
 * compressed and uncompressed totals. */
static double build_timed(int codec, size_t *bytes, size_t *plain)
{
    *plain = 0;
    double start = bench_cpu_s();
    *bytes = build_all(codec, plain);
    return bench_cpu_s() - start;
}

/* Every codec and the uncompressed baseline in turn, three rounds; the
 * cheapest round of each counts (a codec's round takes 0.05-0.4 s, short
 * enough that another process on the machine moved single rounds by up to
 * a factor of 2). */
int main(void)
{
    enum { CODECS = KS_CODEC_ZSTD + 1, ROUNDS = 3 };
    double best[CODECS];
    size_t bytes[CODECS];
    size_t plain[CODECS];
    for (int codec = 0; codec < CODECS; codec++) {
        best[codec] = 0;
    }
    for (int round = 0; round < ROUNDS; round++) {
        for (int codec = KS_CODEC_NONE; codec <= KS_CODEC_ZSTD; codec++) {
            /* The uncompressed build takes a few hundredths of a second:
             * ten tries a round, or a single slow one skews every ratio. */
            for (int try = 0; try < (codec == KS_CODEC_NONE ? 10 : 1); try++) {
                double elapsed = build_timed(codec, &bytes[codec], &plain[codec]);
                if ((round == 0 && try == 0) || elapsed < best[codec]) {
                    best[codec] = elapsed;
                }
            }
        }
    }
    ks_assert(bytes[KS_CODEC_NONE] == plain[KS_CODEC_NONE]);
    double none_mb_per_s = (double)plain[KS_CODEC_NONE] / 1e6 / best[KS_CODEC_NONE];
    for (int codec = KS_CODEC_GZIP; codec <= KS_CODEC_ZSTD; codec++) {
        double ratio = (double)bytes[codec] / (double)plain[codec];
        double mb_per_s = (double)plain[codec] / 1e6 / best[codec];
        printf("BENCH compression_%s_ratio %.3f x ratio=%.3f\n", ks_codec_name(codec), ratio,
               ratio);
        printf("BENCH compression_%s_mb_per_s %.0f MB/s ratio=%.4f\n", ks_codec_name(codec),
               mb_per_s, mb_per_s / none_mb_per_s);
    }
    return 0;
}
