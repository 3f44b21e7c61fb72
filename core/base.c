/* core/base.c: the always-on assertion (see base.h). */
#include "base.h"

#include <stdio.h>
#include <stdlib.h>

static _Thread_local uint64_t assert_now_ns;
static _Thread_local uint64_t assert_seed;

void ks_assert_set_context(uint64_t now_ns, uint64_t seed)
{
    assert_now_ns = now_ns;
    assert_seed = seed;
}

_Noreturn void ks__assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "ksim: assertion failed: %s (%s:%d) at t=%llu ns, seed=%llu\n", expr, file,
            line, (unsigned long long)assert_now_ns, (unsigned long long)assert_seed);
    fflush(stderr);
    abort();
}
