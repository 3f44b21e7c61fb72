/*
** core/array.c: the run-time probe behind core/array.h's fast paths.
**
** core/array.h reads the capacity of a GArray, GByteArray or GPtrArray from
** GLib's private header. The layout it expects is that of the GLib headers
** the program was compiled against (2.68 and later); the library it runs
** with may be another release. ks_array_layout_check makes arrays of known
** element size, flags and length in the running GLib, grows them, and turns
** the fast paths on only if every field is where and what it should be. It
** runs once per process (g_once), from ks_world_new; until then, and for
** ever if the probe fails, every operation is GLib's own call. Neither
** choice changes an array's length or elements, so the simulation is the
** same either way.
*/
#include "array.h"

bool ks__array_layout_ok = false;

static bool probe_array(gboolean zero_terminated, gboolean clear, guint elt_size, guint reserve)
{
    GArray *array = g_array_sized_new(zero_terminated, clear, elt_size, reserve);
    const struct ks__real_array *real = (const struct ks__real_array *)(const void *)array;
    bool ok = real->data == (guint8 *)array->data && real->len == array->len &&
              real->elt_size == elt_size && real->zero_terminated == (zero_terminated != 0) &&
              real->clear == (clear != 0) && real->elt_capacity >= reserve &&
              real->elt_capacity <= 4 * reserve + 64; /* elements, not bytes */
    /* Grown past its reserve, the capacity follows. */
    g_array_set_size(array, 3 * reserve);
    ok = ok && real->len == 3 * reserve && real->elt_capacity >= 3 * reserve &&
         real->elt_capacity <= 12 * reserve + 64 && real->data == (guint8 *)array->data;
    g_array_free(array, TRUE);
    return ok;
}

static bool probe_ptr_array(guint reserve)
{
    GPtrArray *array = g_ptr_array_sized_new(reserve);
    const struct ks__real_ptr_array *real = (const struct ks__real_ptr_array *)(const void *)array;
    bool ok = real->pdata == array->pdata && real->len == array->len && real->alloc >= reserve &&
              real->alloc <= 4 * reserve + 64;
    for (guint i = 0; ok && i < 3 * reserve; i++) {
        g_ptr_array_add(array, array);
    }
    ok = ok && real->len == 3 * reserve && real->alloc >= 3 * reserve &&
         real->alloc <= 12 * reserve + 64;
    g_ptr_array_free(array, TRUE);
    return ok;
}

void ks_array_layout_check(void)
{
    static gsize done = 0;
    if (g_once_init_enter(&done)) {
        bool ok = probe_array(FALSE, FALSE, 1, 100) && probe_array(FALSE, TRUE, 24, 37) &&
                  probe_array(TRUE, FALSE, 8, 10) && probe_ptr_array(50);
        ks__array_layout_ok = GLIB_CHECK_VERSION(2, 68, 0) && ok;
        g_once_init_leave(&done, 1);
    }
}
