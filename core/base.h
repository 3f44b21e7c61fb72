/*
** core/base.h: the few things every ksim file needs: always-on assertions and
** fixed-width helpers.
**
** ks_assert is on in every build (STYLE 3.7). When it fails it prints the
** expression, file and line, and the simulated time and seed of the world that
** was running, then aborts (exit status of abort; the CLI maps a crash to 3).
** The running world's time and seed are thread-local copies that the
** scheduler sets before it runs an event: they are used only to make the
** message useful and never reach the simulated world.
*/
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

_Noreturn void ks__assert_fail(const char *expr, const char *file, int line);

#define ks_assert(expr) ((expr) ? (void)0 : ks__assert_fail(#expr, __FILE__, __LINE__))

/* The context an assertion message names (base.c); set only through
 * ks_assert_set_context. */
extern _Thread_local uint64_t ks__assert_now_ns;
extern _Thread_local uint64_t ks__assert_seed;

/* Called by the scheduler around event handlers so that assertion messages
 * can name the simulated time and the seed. Both may be 0 outside a run.
 * Inline: it is called once per event (two stores; out of line, a call). */
static inline void ks_assert_set_context(uint64_t now_ns, uint64_t seed)
{
    ks__assert_now_ns = now_ns;
    ks__assert_seed = seed;
}

#define KS_NS_PER_US 1000ULL
#define KS_NS_PER_MS 1000000ULL
#define KS_NS_PER_S  1000000000ULL

#define KS_ARRAY_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- decimal text -------------------------------------------------------------- */

/* The number of decimal digits of value: floor(log10) from the highest set
 * bit (1233 / 4096 ~ log10 2) and one comparison, not a division per digit
 * (the loop was 3 % of bench_clients' client run, issue 16). */
static inline int32_t ks_decimal_digits(uint64_t value)
{
    static const uint64_t powers[20] = {
        UINT64_C(1),
        UINT64_C(10),
        UINT64_C(100),
        UINT64_C(1000),
        UINT64_C(10000),
        UINT64_C(100000),
        UINT64_C(1000000),
        UINT64_C(10000000),
        UINT64_C(100000000),
        UINT64_C(1000000000),
        UINT64_C(10000000000),
        UINT64_C(100000000000),
        UINT64_C(1000000000000),
        UINT64_C(10000000000000),
        UINT64_C(100000000000000),
        UINT64_C(1000000000000000),
        UINT64_C(10000000000000000),
        UINT64_C(100000000000000000),
        UINT64_C(1000000000000000000),
        UINT64_C(10000000000000000000),
    };
    int32_t bits = 64 - __builtin_clzll(value | 1);
    int32_t guess = (bits * 1233) >> 12; /* floor(log10(value)) or one more */
    return guess + (value >= powers[guess] ? 1 : 0) + (value == 0 ? 1 : 0);
}

/* Writes value in decimal at out, without a terminator, two digits at a
 * time (the producer's per-record texts and the log's checkpoints are built
 * by hand: snprintf was a visible share of a run's time). Returns the
 * number of digits. */
static inline int32_t ks_write_decimal(char *out, uint64_t value)
{
    static const char pairs[201] = "00010203040506070809"
                                   "10111213141516171819"
                                   "20212223242526272829"
                                   "30313233343536373839"
                                   "40414243444546474849"
                                   "50515253545556575859"
                                   "60616263646566676869"
                                   "70717273747576777879"
                                   "80818283848586878889"
                                   "90919293949596979899";
    int32_t digits = ks_decimal_digits(value);
    int32_t i = digits;
    while (value >= 100) {
        uint32_t pair = (uint32_t)(value % 100);
        value /= 100;
        i -= 2;
        out[i] = pairs[2 * pair];
        out[i + 1] = pairs[2 * pair + 1];
    }
    if (value >= 10) {
        out[i - 2] = pairs[2 * value];
        out[i - 1] = pairs[2 * value + 1];
    } else {
        out[i - 1] = (char)('0' + value);
    }
    return digits;
}
