/*
** core/producer_state.h: idempotent-producer state of one partition replica
** (Kafka's ProducerStateManager / ProducerStateEntry, kafka-reference 5.3).
**
** Per producer id: the latest epoch and the last 5 appended batches
** (first/last sequence, first/last offset). A leader checks each incoming
** batch against it; followers keep it up to date as they append, and it is
** rebuilt from the log's batch headers when it is unknown (after a restart or
** a truncation), so it survives leader changes.
*/
#pragma once

#include "log.h"

#include <stdbool.h>
#include <stdint.h>

#define KS_PRODUCER_STATE_BATCHES 5

struct ks_producer_state;

/* Owned by the caller: ks_producer_state_free. */
struct ks_producer_state *ks_producer_state_new(void);
void ks_producer_state_free(struct ks_producer_state *state); /* NULL is a no-op */
void ks_producer_state_clear(struct ks_producer_state *state);
int32_t ks_producer_state_producer_count(const struct ks_producer_state *state);

/* Checks a batch the leader is about to append. Returns KS_ERR_NONE (append
 * it), KS_ERR_DUPLICATE_SEQUENCE_NUMBER (one of the cached batches: do not
 * append; *dup_base_offset_out / *dup_last_offset_out get its offsets),
 * KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER (a gap, or a new epoch not starting at
 * 0) or KS_ERR_INVALID_PRODUCER_EPOCH (an older epoch). producer_id < 0
 * (not idempotent) is always accepted. */
int16_t ks_producer_state_check(const struct ks_producer_state *state, int64_t producer_id,
                                int16_t producer_epoch, int32_t first_seq, int32_t last_seq,
                                int64_t *dup_base_offset_out, int64_t *dup_last_offset_out);
/* The check of a transaction marker (no sequence): KS_ERR_INVALID_PRODUCER_EPOCH
 * when its epoch is older than the producer's, else KS_ERR_NONE. */
int16_t ks_producer_state_check_epoch(const struct ks_producer_state *state, int64_t producer_id,
                                      int16_t producer_epoch);
/* The producer's current epoch on this partition, -1 without an entry. */
int16_t ks_producer_state_epoch(const struct ks_producer_state *state, int64_t producer_id);
/* Records an appended batch. */
void ks_producer_state_update(struct ks_producer_state *state, int64_t producer_id,
                              int16_t producer_epoch, int32_t first_seq, int32_t last_seq,
                              int64_t base_offset, int64_t last_offset);
/* Records an appended transaction marker: the producer's epoch becomes the
 * marker's (older batches are fenced from then on). */
void ks_producer_state_update_marker(struct ks_producer_state *state, int64_t producer_id,
                                     int16_t producer_epoch);
/* Records every batch in `bytes` (whole batches with offsets set, as fetched
 * or read from a log); reads only the headers. */
void ks_producer_state_update_from_batches(struct ks_producer_state *state, const uint8_t *bytes,
                                           size_t byte_count);
/* Clears and rebuilds from the log, from its start offset to its LEO. */
void ks_producer_state_rebuild(struct ks_producer_state *state, struct ks_log *log);

/* ---- KIP-890 part 1: transaction verification on the leader ---- */

/* ProducerStateManager.maybeCreateVerificationStateEntry: the producer's
 * verification entry (made if absent, its guard a fresh non-zero number),
 * its lowest sequence and epoch updated as VerificationStateEntry
 * .maybeUpdateLowestSequenceAndEpoch does. Returns its guard. Verification
 * entries are not producer state: ks_producer_state_clear and _rebuild keep
 * them (Kafka keeps verificationStates apart from the producers too). */
uint64_t ks_producer_state_verification_start(struct ks_producer_state *state, int64_t producer_id,
                                              int32_t sequence, int16_t producer_epoch,
                                              int64_t now_ns);
/* The producer's verification guard, 0 when it has no entry (Kafka's
 * VerificationGuard.SENTINEL, which verifies nothing). */
uint64_t ks_producer_state_verification_guard(const struct ks_producer_state *state,
                                              int64_t producer_id);
/* The lowest sequence of the producer's verification entry, or -1 without
 * one (ProducerAppendInfo.checkSequence refuses a batch above it). */
int32_t ks_producer_state_verification_lowest_sequence(const struct ks_producer_state *state,
                                                       int64_t producer_id);
/* UnifiedLog.updateProducers: a transactional batch or a marker of the
 * producer was appended, so its entry (if any) goes. */
void ks_producer_state_verification_clear(struct ks_producer_state *state, int64_t producer_id);
/* ProducerStateManager.removeExpiredProducers, its verification half, as the
 * periodic check (UnifiedLog's PeriodicProducerExpirationCheck, every
 * producer.id.expiration.check.interval.ms = interval_ns) would have left the
 * entries by now_ns: an entry goes at the first check (a multiple of
 * interval_ns since time 0) at which it is expiration_ns
 * (producer.id.expiration.ms) old, its age counted from its creation (a
 * reused entry keeps its time). Lazily, so that no event is scheduled. */
void ks_producer_state_verification_expire(struct ks_producer_state *state, int64_t now_ns,
                                           int64_t expiration_ns, int64_t interval_ns);
