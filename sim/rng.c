/*
** sim/rng.c: the world's random streams.
**
** One xoshiro256** generator per enum ks_rng_stream (Blackman and Vigna), so
** that more draws in one subsystem never shift another's sequence (the
** TigerBeetle rule). Stream i is seeded from (seed, i) with splitmix64:
**
**   x = seed XOR (0xD1B54A32D192ED03 * (i + 1))      (mod 2^64)
**   s[0..3] = four successive splitmix64 outputs starting from x
**
** where a splitmix64 step is: x += 0x9E3779B97F4A7C15; z = x;
** z = (z ^ z>>30) * 0xBF58476D1CE4E5B9; z = (z ^ z>>27) * 0x94D049BB133111EB;
** output z ^ z>>31. The algorithms are fixed here (no library PRNG), so the
** same seed gives the same numbers on every machine; tests/sim/test_rng.c pins
** the first outputs.
**
** ks_world_random_below uses Lemire's multiply-and-reject method, which is
** exactly uniform (no modulo bias). Network jitter is the exception to one
** stream per subsystem: every connection (source, target) draws its jitter
** from its own splitmix64 stream started at ks__rng_link_seed(seed, pair), so
** the traffic of one connection never shifts another's delays (sim/net.c).
** ks_world_random_scaled is the same
** product without the rejection loop: always one draw, for draws whose count
** must not depend on their bound (start offsets that a setting can turn off).
*/
#include "world_int.h"

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void ks__rng_init(ks_world *world, uint64_t seed)
{
    for (unsigned stream = 0; stream < KS_RNG_COUNT; stream++) {
        uint64_t x = seed ^ (UINT64_C(0xD1B54A32D192ED03) * (uint64_t)(stream + 1));
        uint64_t *s = world->rng[stream];
        for (int i = 0; i < 4; i++) {
            s[i] = ks__rng_splitmix64(&x);
        }
        /* xoshiro must not start from all zeros; splitmix64 is a bijection of a
         * counter, so four zero outputs in a row cannot happen. */
        ks_assert((s[0] | s[1] | s[2] | s[3]) != 0);
    }
}

uint64_t ks__rng_link_seed(uint64_t seed, uint64_t pair)
{
    /* Indexes KS_RNG_COUNT + 1 + pair never meet a world stream's i + 1, and
     * multiplying by an odd constant is a bijection, so no two streams start
     * alike. */
    return seed ^ (UINT64_C(0xD1B54A32D192ED03) * ((uint64_t)KS_RNG_COUNT + 1 + pair));
}

uint64_t ks_world_random_u64(ks_world *world, enum ks_rng_stream stream)
{
    ks_assert((unsigned)stream < KS_RNG_COUNT);
    uint64_t *s = world->root->rng[stream];
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t ks_world_random_below(ks_world *world, enum ks_rng_stream stream, uint64_t bound)
{
    ks_assert(bound > 0);
    uint64_t x = ks_world_random_u64(world, stream);
    unsigned __int128 m = (unsigned __int128)x * bound;
    uint64_t low = (uint64_t)m;
    if (low < bound) {
        /* Reject the few low products that would make some results more
         * likely: threshold = 2^64 mod bound. */
        uint64_t threshold = (0 - bound) % bound;
        while (low < threshold) {
            x = ks_world_random_u64(world, stream);
            m = (unsigned __int128)x * bound;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

uint64_t ks_world_random_scaled(ks_world *world, enum ks_rng_stream stream, uint64_t bound)
{
    uint64_t x = ks_world_random_u64(world, stream);
    return (uint64_t)(((unsigned __int128)x * bound) >> 64);
}

uint64_t ks_world_seed(const ks_world *world)
{
    return world->root->seed;
}
