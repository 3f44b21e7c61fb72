/* core/base.c: the always-on assertion (see base.h). */
#include "base.h"

#include <stdio.h>
#include <stdlib.h>

_Thread_local uint64_t ks__assert_now_ns;
_Thread_local uint64_t ks__assert_seed;

_Noreturn void ks__assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "ksim: assertion failed: %s (%s:%d) at t=%llu ns, seed=%llu\n", expr, file,
            line, (unsigned long long)ks__assert_now_ns, (unsigned long long)ks__assert_seed);
    fflush(stderr);
    abort();
}
