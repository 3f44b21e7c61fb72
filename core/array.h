/*
** core/array.h: g_array_set_size without its cost when an array shrinks.
**
** GLib (2.74) shrinks an array through g_array_remove_range, about 90
** instructions even to empty an empty one; the fetch path and the consumer
** empty their scratch arrays several times per event, which came to about
** 4 % of a small run's instructions. For an array made without a clear
** function and not zero-terminated, shrinking is only its length: that is
** what ks_array_set_size does, and it grows through GLib as before (which
** zeroes the new elements of an array made with clear_ = TRUE, as
** g_array_set_size does). Use it only on such arrays.
*/
#ifndef KS_ARRAY_H
#define KS_ARRAY_H

#include <glib.h>

static inline void ks_array_set_size(GArray *array, guint length)
{
    if (length <= array->len) {
        array->len = length;
    } else {
        g_array_set_size(array, length);
    }
}

#endif /* KS_ARRAY_H */
