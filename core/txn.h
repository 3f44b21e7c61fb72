/*
** core/txn.h: transactions (KIP-98), the parts shared by clients and
** brokers. For now: a read_committed consumer's filter over one fetched
** partition (Kafka's CompletedFetch with IsolationLevel.READ_COMMITTED).
*/
#pragma once

#include "batch.h"
#include "proto.h"

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

struct ks_txn_filter {
    GArray *aborted;      /* struct ks_fetch_aborted by first offset, owned; NULL: none */
    guint next;           /* the first not yet reached */
    GArray *aborted_pids; /* int64_t: producers inside an aborted transaction, owned;
                             NULL when aborted is */
};

/* From a fetch response's aborted transactions (any order), copied. With none
 * (aborted_count 0, aborted may be NULL) it allocates nothing. */
void ks_txn_filter_init(struct ks_txn_filter *filter, const struct ks_fetch_aborted *aborted,
                        int32_t aborted_count);
void ks_txn_filter_deinit(struct ks_txn_filter *filter);
/* Called for every batch of the partition's records, in offset order: true
 * when none of its records reaches the application (a control batch, or a
 * transactional batch of an aborted transaction). */
bool ks_txn_filter_skip(struct ks_txn_filter *filter, const struct ks_batch_view *batch);
