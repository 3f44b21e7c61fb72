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
