/*
** tests/core/test_array.c: core/array.h's inline GLib array operations
** (suite "core/array").
**
** Goal: the fast paths read GLib's private array header correctly (the
** capacity, element size and flags where core/array.h expects them), and
** every operation leaves the array with the length and elements the GLib
** call gives, terminators included. Method: the header's fields against
** arrays made with known settings, then the same pseudo-random sequence of
** operations on two arrays, one through GLib and one through core/array.h,
** compared after each step; the arrays start small, so both the inline
** paths and the fall-backs into GLib run.
*/
#include "../../core/array.h"
#include "../testlib.h"

#include <string.h>

struct elem {
    uint64_t a;
    uint32_t b;
    uint32_t c;
};

static void test_layout_matches_glib(void)
{
    ks_array_layout_check();
    CU_ASSERT(ks__array_layout_ok == GLIB_CHECK_VERSION(2, 68, 0));
    if (!KS_ARRAY_INLINE) {
        return; /* older GLib: every call goes to GLib */
    }
    GArray *array = g_array_sized_new(FALSE, TRUE, sizeof(struct elem), 10);
    const struct ks__real_array *real = (const struct ks__real_array *)(const void *)array;
    CU_ASSERT_EQUAL(real->elt_size, sizeof(struct elem));
    CU_ASSERT(real->clear);
    CU_ASSERT(!real->zero_terminated);
    CU_ASSERT(ks_array_capacity(array) >= 10);
    CU_ASSERT(ks_array_capacity(array) < 1000); /* elements, not bytes */
    /* Appending up to the capacity does not move the data: it is the capacity. */
    guint capacity = ks_array_capacity(array);
    gchar *data = array->data;
    struct elem e = { 1, 2, 3 };
    for (guint i = 0; i < capacity; i++) {
        g_array_append_val(array, e);
    }
    CU_ASSERT_PTR_EQUAL(array->data, data);
    g_array_append_val(array, e);
    CU_ASSERT(ks_array_capacity(array) > capacity);
    g_array_free(array, TRUE);

    GArray *terminated = g_array_new(TRUE, FALSE, 4);
    real = (const struct ks__real_array *)(const void *)terminated;
    CU_ASSERT(real->zero_terminated);
    CU_ASSERT(!real->clear);
    CU_ASSERT_EQUAL(real->elt_size, 4);
    g_array_free(terminated, TRUE);

    GByteArray *bytes = g_byte_array_sized_new(100);
    CU_ASSERT(ks_array_capacity((GArray *)(void *)bytes) >= 100);
    CU_ASSERT_EQUAL(((const struct ks__real_array *)(const void *)bytes)->elt_size, 1);
    g_byte_array_free(bytes, TRUE);

    GPtrArray *pointers = g_ptr_array_sized_new(5);
    capacity = ks_ptr_array_capacity(pointers);
    CU_ASSERT(capacity >= 5 && capacity < 1000);
    gpointer *pdata = pointers->pdata;
    for (guint i = 0; i < capacity; i++) {
        g_ptr_array_add(pointers, pointers);
    }
    CU_ASSERT_PTR_EQUAL(pointers->pdata, pdata);
    g_ptr_array_free(pointers, TRUE);
}

static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

static void same_array(GArray *expected, GArray *actual, gboolean zero_terminated)
{
    CU_ASSERT_EQUAL_FATAL(actual->len, expected->len);
    guint elt_size = g_array_get_element_size(expected);
    guint compared = expected->len + (zero_terminated ? 1 : 0);
    CU_ASSERT_FATAL(memcmp(actual->data, expected->data, (size_t)compared * elt_size) == 0);
}

/* One sequence of appends, growths and shrinks on a GArray of struct elem
 * made with the given flags. */
static void check_array_ops(gboolean zero_terminated, gboolean clear)
{
    GArray *expected = g_array_new(zero_terminated, clear, sizeof(struct elem));
    GArray *actual = g_array_new(zero_terminated, clear, sizeof(struct elem));
    uint64_t state = 0x9E3779B97F4A7C15u;
    for (int step = 0; step < 4000; step++) {
        uint64_t r = next_random(&state);
        switch (r % 4) {
        case 0:
        case 1: {
            struct elem items[3];
            guint count = (guint)(r >> 8) % 4;
            for (guint i = 0; i < count; i++) {
                items[i] = (struct elem){ r, (uint32_t)step, i };
            }
            g_array_append_vals(expected, items, count);
            ks_array_append(actual, items, count, sizeof(struct elem));
            break;
        }
        case 2: {
            guint length = expected->len + (guint)(r >> 8) % 9;
            if (!clear) {
                /* new elements of a non-clearing array are unspecified:
                 * give both the same contents first */
                g_array_set_size(expected, length);
                memset(expected->data, 0x5a, (size_t)length * sizeof(struct elem));
                ks_array_set_size(actual, length);
                memset(actual->data, 0x5a, (size_t)length * sizeof(struct elem));
            } else {
                g_array_set_size(expected, length);
                ks_array_set_size(actual, length);
            }
            break;
        }
        case 3: {
            guint length = expected->len == 0 ? 0 : (guint)(r >> 8) % (expected->len + 1);
            g_array_set_size(expected, length);
            ks_array_set_size(actual, length);
            break;
        }
        }
        same_array(expected, actual, zero_terminated);
        if (expected->len > 2000) {
            g_array_set_size(expected, 0);
            ks_array_set_size(actual, 0);
        }
    }
    g_array_free(expected, TRUE);
    g_array_free(actual, TRUE);
}

static void test_array_ops_match_glib(void)
{
    ks_array_layout_check(); /* the fast paths on, as in a run */
    check_array_ops(FALSE, FALSE);
    check_array_ops(FALSE, TRUE);
    check_array_ops(TRUE, FALSE);
    check_array_ops(TRUE, TRUE);
}

static void test_byte_array_ops_match_glib(void)
{
    ks_array_layout_check(); /* the fast paths on, as in a run */
    GByteArray *expected = g_byte_array_new();
    GByteArray *actual = g_byte_array_new();
    uint64_t state = 88172645463325252u;
    guint8 chunk[300];
    for (int step = 0; step < 4000; step++) {
        uint64_t r = next_random(&state);
        if (r % 3 != 2) {
            guint count = (guint)(r >> 8) % sizeof chunk;
            memset(chunk, (int)step, count);
            g_byte_array_append(expected, chunk, count);
            ks_byte_array_append(actual, chunk, count);
        } else {
            guint length = (guint)(r >> 8) % (expected->len + 200);
            guint old = expected->len;
            g_byte_array_set_size(expected, length);
            ks_byte_array_set_size(actual, length);
            if (length > old) {
                memset(expected->data + old, 7, length - old);
                memset(actual->data + old, 7, length - old);
            }
        }
        CU_ASSERT_EQUAL_FATAL(actual->len, expected->len);
        CU_ASSERT_FATAL(memcmp(actual->data, expected->data, expected->len) == 0);
        if (expected->len > 100000) {
            g_byte_array_set_size(expected, 0);
            ks_byte_array_set_size(actual, 0);
        }
    }
    g_byte_array_free(expected, TRUE);
    g_byte_array_free(actual, TRUE);
}

static void test_ptr_array_add_matches_glib(void)
{
    ks_array_layout_check(); /* the fast paths on, as in a run */
    GPtrArray *expected = g_ptr_array_new();
    GPtrArray *actual = g_ptr_array_new();
#if GLIB_CHECK_VERSION(2, 74, 0)
    GPtrArray *terminated = g_ptr_array_new_null_terminated(0, NULL, TRUE);
#else
    GPtrArray *terminated = g_ptr_array_new(); /* no null-terminated arrays before 2.74 */
#endif
    for (guintptr i = 1; i <= 1000; i++) {
        g_ptr_array_add(expected, (gpointer)i);
        ks_ptr_array_add(actual, (gpointer)i);
        ks_ptr_array_add(terminated, (gpointer)i);
        CU_ASSERT_EQUAL_FATAL(actual->len, expected->len);
        CU_ASSERT_FATAL(memcmp(actual->pdata, expected->pdata, sizeof(gpointer) * i) == 0);
        CU_ASSERT_EQUAL_FATAL(terminated->len, i);
#if GLIB_CHECK_VERSION(2, 74, 0)
        CU_ASSERT_PTR_NULL_FATAL(terminated->pdata[i]);
#endif
    }
    g_ptr_array_free(expected, TRUE);
    g_ptr_array_free(actual, TRUE);
    g_ptr_array_free(terminated, TRUE);
}

void ks_test_register_array(void)
{
    static const struct ks_test_case cases[] = {
        { "the private header is where core/array.h reads it", test_layout_matches_glib },
        { "GArray append and set_size match GLib", test_array_ops_match_glib },
        { "GByteArray append and set_size match GLib", test_byte_array_ops_match_glib },
        { "GPtrArray add matches GLib, null-terminated too", test_ptr_array_add_matches_glib },
    };
    KS_TEST_ADD_SUITE("core/array", cases);
}
