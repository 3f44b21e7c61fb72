/*
** core/array.h: GLib array operations without GLib's out-of-line call in the
** common case.
**
** Shrinking. GLib (2.74) shrinks an array through g_array_remove_range,
** about 90 instructions even to empty an empty one; the fetch path and the
** consumer empty their scratch arrays several times per event, which came to
** about 4 % of a small run's instructions. For an array made without a clear
** function and not zero-terminated, shrinking is only its length: that is
** what ks_array_set_size does.
**
** Appending and growing. g_array_append_vals, g_byte_array_append,
** g_byte_array_set_size and g_ptr_array_add cost 40 to 90 instructions a
** call (a call into the library, its checks, g_array_maybe_expand, a memcpy
** call of unknown size), about 15 % of the 12 x 1,200 benchmark's
** instructions together with the growth they do (issue 16). While the new
** length fits the array's capacity, the functions here do the same in a few
** instructions inline (a memcpy of a size known at the call site compiles to
** a move); otherwise they call GLib, which grows the array as before. The
** array's length and elements are what the GLib call would give; only the
** unused room past the length may differ (the fast paths zero one element
** of it).
**
** The capacity is not public: it is read from GLib's own header of the array
** (struct _GRealArray and _GRealPtrArray in glib/garray.c), whose first
** fields have been (data, len, capacity in elements, element size, the
** zero_terminated and clear bits) since GLib 2.68; before, the capacity was
** in bytes, so older GLib takes the GLib call every time. The headers the
** program was built with are not the library it runs with, so the fast
** paths are also off until ks_array_layout_check (core/base.c) has probed
** arrays of the running GLib and found the layout: ks_world_new calls it, so
** a simulation runs with them and nothing else depends on them. A GLib that
** changed the layout costs speed, never memory. tests/core's "core/array"
** suite checks the layout against the GLib the program runs with, and fails
** if a GLib release changes it.
**
** Rules for callers:
**   - ks_array_append's element size must be the array's (asserted in
**     KS_DEBUG builds); use ks_array_append_val for one element;
**   - ks_array_set_size only on arrays made without a clear function
**     (g_array_set_clear_func), which it would not call when shrinking;
**   - the fast paths keep one free element after the new length and zero
**     it, so they serve zero-terminated and null-terminated arrays too.
*/
#ifndef KS_ARRAY_H
#define KS_ARRAY_H

#include "base.h"

#include <glib.h>
#include <string.h>

/* True once ks_array_layout_check found the running GLib's arrays laid out
 * as struct ks__real_array and ks__real_ptr_array say. */
extern bool ks__array_layout_ok;

/* Probes the running GLib's array headers, once; sets ks__array_layout_ok. */
void ks_array_layout_check(void);

#if GLIB_CHECK_VERSION(2, 68, 0)
#define KS_ARRAY_INLINE (ks__array_layout_ok)
#else
#define KS_ARRAY_INLINE 0
#endif

/* GLib's private header of a GArray or GByteArray (the leading fields). */
struct ks__real_array {
    guint8 *data;
    guint len;
    guint elt_capacity;
    guint elt_size;
    guint zero_terminated : 1;
    guint clear : 1;
};

/* GLib's private header of a GPtrArray (the leading fields). */
struct ks__real_ptr_array {
    gpointer *pdata;
    guint len;
    guint alloc;
};

/* The number of elements the array holds without growing (0 without the
 * inline paths). */
static inline guint ks_array_capacity(const GArray *array)
{
    return KS_ARRAY_INLINE ? ((const struct ks__real_array *)(const void *)array)->elt_capacity : 0;
}

static inline guint ks_ptr_array_capacity(const GPtrArray *array)
{
    return KS_ARRAY_INLINE ? ((const struct ks__real_ptr_array *)(const void *)array)->alloc : 0;
}

/* g_array_set_size. Shrinking sets the length (and the terminator);
 * growing within the capacity zeroes the new elements if the array clears,
 * and the terminator, as GLib does; beyond it, GLib grows the array. */
static inline void ks_array_set_size(GArray *array, guint length)
{
    struct ks__real_array *real = (struct ks__real_array *)(void *)array;
    if (length > array->len && !(KS_ARRAY_INLINE && length < real->elt_capacity)) {
        g_array_set_size(array, length);
        return;
    }
    if (KS_ARRAY_INLINE) {
        gsize elt_size = real->elt_size;
        if (length > array->len && real->clear) {
            memset(real->data + (gsize)array->len * elt_size, 0, (length - array->len) * elt_size);
        }
        if (real->zero_terminated) {
            memset(real->data + (gsize)length * elt_size, 0, elt_size);
        }
    }
    array->len = length;
}

/* g_array_append_vals of count elements of elt_size bytes each (the
 * array's element size, a constant at the call site). */
static inline void ks_array_append(GArray *array, const void *data, guint count, gsize elt_size)
{
    struct ks__real_array *real = (struct ks__real_array *)(void *)array;
#ifdef KS_DEBUG
    ks_assert(real->elt_size == elt_size);
#endif
    guint len = array->len;
    if (KS_ARRAY_INLINE && len < real->elt_capacity && count < real->elt_capacity - len) {
        guint8 *end = real->data + (gsize)len * elt_size;
        memcpy(end, data, (gsize)count * elt_size);
        memset(end + (gsize)count * elt_size, 0, elt_size); /* a terminator, or spare room */
        array->len = len + count;
        return;
    }
    g_array_append_vals(array, data, count);
}

#define ks_array_append_val(array, value) ks_array_append((array), &(value), 1, sizeof(value))

/* g_byte_array_append. */
static inline void ks_byte_array_append(GByteArray *array, const guint8 *data, guint byte_count)
{
    ks_array_append((GArray *)(void *)array, data, byte_count, 1);
}

/* g_byte_array_set_size (a GByteArray neither clears nor is terminated). */
static inline void ks_byte_array_set_size(GByteArray *array, guint length)
{
    const struct ks__real_array *real = (const struct ks__real_array *)(const void *)array;
    if (length <= array->len || (KS_ARRAY_INLINE && length < real->elt_capacity)) {
        array->len = length;
        return;
    }
    g_byte_array_set_size(array, length);
}

/* g_ptr_array_add. */
static inline void ks_ptr_array_add(GPtrArray *array, gpointer data)
{
    struct ks__real_ptr_array *real = (struct ks__real_ptr_array *)(void *)array;
    guint len = array->len;
    if (KS_ARRAY_INLINE && len + 1 < real->alloc) {
        array->pdata[len] = data;
        array->pdata[len + 1] = NULL; /* a terminator, or spare room */
        array->len = len + 1;
        return;
    }
    g_ptr_array_add(array, data);
}

#endif /* KS_ARRAY_H */
