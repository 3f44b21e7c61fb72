/*
** core/txn.c: the read_committed filter (Kafka's CompletedFetch.
** nextFetchedRecord, consumeAbortedTransactionsUpTo, isBatchAborted,
** containsAbortMarker).
**
** The broker answers a read_committed fetch up to the last stable offset,
** with the aborted transactions (producer id, first offset) that overlap it.
** Walking the batches in offset order, every aborted transaction whose first
** offset is at or below the batch's last offset marks its producer aborted;
** a transactional batch of an aborted producer is dropped whole; the
** producer's ABORT marker ends its aborted transaction. Control batches
** never reach the application (in either isolation level: the consumer skips
** them itself). The lists are tiny and searched linearly, in a fixed order.
*/
#include "txn.h"

#include "base.h"

#include <stdlib.h>

static int compare_first_offset(const void *a, const void *b)
{
    const struct ks_fetch_aborted *left = a;
    const struct ks_fetch_aborted *right = b;
    if (left->first_offset != right->first_offset) {
        return left->first_offset < right->first_offset ? -1 : 1;
    }
    return left->producer_id < right->producer_id ? -1 : left->producer_id > right->producer_id;
}

void ks_txn_filter_init(struct ks_txn_filter *filter, const struct ks_fetch_aborted *aborted,
                        int32_t aborted_count)
{
    filter->next = 0;
    filter->aborted = NULL;
    filter->aborted_pids = NULL;
    if (aborted_count <= 0) {
        /* Nothing to drop but control batches (every read_uncommitted fetch,
         * and most read_committed ones): no arrays, as this runs for every
         * partition of every fetch response (issue 16). */
        return;
    }
    filter->aborted = g_array_sized_new(FALSE, FALSE, sizeof(struct ks_fetch_aborted),
                                        (guint)aborted_count);
    g_array_append_vals(filter->aborted, aborted, (guint)aborted_count);
    qsort(filter->aborted->data, filter->aborted->len, sizeof(struct ks_fetch_aborted),
          compare_first_offset);
    filter->aborted_pids = g_array_new(FALSE, FALSE, sizeof(int64_t));
}

void ks_txn_filter_deinit(struct ks_txn_filter *filter)
{
    if (filter->aborted != NULL) {
        g_array_free(filter->aborted, TRUE);
        g_array_free(filter->aborted_pids, TRUE);
    }
    filter->aborted = NULL;
    filter->aborted_pids = NULL;
}

static int pid_index(const struct ks_txn_filter *filter, int64_t producer_id)
{
    for (guint i = 0; i < filter->aborted_pids->len; i++) {
        if (g_array_index(filter->aborted_pids, int64_t, i) == producer_id) {
            return (int)i;
        }
    }
    return -1;
}

bool ks_txn_filter_skip(struct ks_txn_filter *filter, const struct ks_batch_view *batch)
{
    bool control = (batch->attributes & KS_ATTR_CONTROL) != 0;
    if (filter->aborted == NULL) {
        return control; /* no aborted transaction: no producer is ever aborted */
    }
    if (batch->producer_id >= 0) {
        int64_t last = ks_batch_last_offset(batch);
        while (filter->next < filter->aborted->len &&
               g_array_index(filter->aborted, struct ks_fetch_aborted, filter->next).first_offset <=
                   last) {
            int64_t pid =
                g_array_index(filter->aborted, struct ks_fetch_aborted, filter->next).producer_id;
            if (pid_index(filter, pid) < 0) {
                g_array_append_val(filter->aborted_pids, pid);
            }
            filter->next++;
        }
        int index = pid_index(filter, batch->producer_id);
        if (control && ks_batch_control_type(batch) == KS_CONTROL_ABORT) {
            if (index >= 0) {
                g_array_remove_index(filter->aborted_pids, (guint)index);
            }
        } else if ((batch->attributes & KS_ATTR_TRANSACTIONAL) != 0 && index >= 0) {
            return true;
        }
    }
    return control;
}
