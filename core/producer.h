/*
** core/producer.h: ksim's producer client, modelled on Kafka's Java producer
** (KafkaProducer, RecordAccumulator, Sender, NetworkClient) with the same
** settings (core/config.h struct ks_producer_config).
**
** One producer is one world node: ks_cluster_producer_node(spec, index). It
** generates its own workload (rate, count, keys, value.bytes), partitions,
** batches and sends records to partition leaders, and reports the fate of
** every record exactly once through observer->on_record: acked, failed or
** unknown. The design notes live at the top of core/producer.c.
**
** All functions run on the producer's node (from its own event handlers) or
** from the driver between events.
*/
#pragma once

#include "cluster.h"
#include "config.h"
#include "world.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ks_producer;

/* Builds producer `producer_index` of spec (config spec->producers[index])
 * and registers its receiver on its node. spec and observer are borrowed and
 * must outlive the producer. Returns an owned object: ks_producer_free. */
struct ks_producer *ks_producer_new(ks_world *world, const struct ks_cluster_spec *spec,
                                    int32_t producer_index,
                                    const struct ks_cluster_observer *observer);
/* Arms the start timer: at start_ns since the run began plus a start.jitter
 * draw (KS_RNG_PHASE, drawn on the first call only). */
void ks_producer_start(struct ks_producer *p);
/* NULL is a no-op. Records still pending are not reported. */
void ks_producer_free(struct ks_producer *p);
/* The world already dropped the node's timers: forget in-memory state;
 * records in flight (or queued) end as "unknown". */
void ks_producer_on_crash(struct ks_producer *p);
/* A new incarnation: new producer id, continue the workload (record numbers
 * continue where the previous incarnation stopped). */
void ks_producer_on_restart(struct ks_producer *p);
/* Broker `broker` went down (its process crashed): its connections were
 * reset, so the requests in flight to it fail at the next sender pass, which
 * runs at once. Ignored while the producer is down or not started. */
void ks_producer_on_broker_down(struct ks_producer *p, int32_t broker);
/* Stop generating new records; queued and in-flight ones finish or time out. */
void ks_producer_stop(struct ks_producer *p);
/* Records that ended acked so far. */
int64_t ks_producer_acked_count(const struct ks_producer *p);
/* Records handed to the producer by its workload so far (send() calls). */
int64_t ks_producer_sent_count(const struct ks_producer *p);
/* Batches put in Produce requests so far, each retry counted again. */
int64_t ks_producer_batches_sent_count(const struct ks_producer *p);
/* True when nothing is queued or in flight. */
bool ks_producer_idle(const struct ks_producer *p);

/* ---- a processor's producer (consume-transform-produce) ----------------------
 * A producer whose config has input_consumer_index >= 0 has no workload of
 * its own: its consumer (on its own node; the two share one fate, see
 * sim/fault_fire.c) hands it one output record per processed input record,
 * and with a transactional.id ends each transaction together with the
 * consumed offsets, as Kafka Streams' exactly-once does
 * (KafkaProducer.sendOffsetsToTransaction, then commitTransaction). Its
 * ks_producer_stop is ignored: the application stops with its consumer. */
struct ks_group_offset_entry;
/* True when send() would take a record now: up, started, not blocked, and
 * (transactional) initialised and not ending a transaction. */
bool ks_producer_can_send(const struct ks_producer *p);
/* send() of one record with key "key-<key_number>" (-1: null key); needs
 * ks_producer_can_send. Begins a transaction if none is open. */
void ks_producer_send_output(struct ks_producer *p, int64_t key_number);
/* sendOffsetsToTransaction(offsets, group metadata) then commitTransaction():
 * AddOffsetsToTxn, FindCoordinator(GROUP), TxnOffsetCommit, flush, EndTxn.
 * Borrowed arguments, copied. False when no transaction is open. */
bool ks_producer_end_txn(struct ks_producer *p, const char *group_id, const char *member_id,
                         int32_t generation, const struct ks_group_offset_entry *offsets,
                         int32_t offset_count);
/* Transactions ended so far, and whether the last one committed. */
int64_t ks_producer_txn_ended_count(const struct ks_producer *p, bool *last_committed_out);
/* ProducerFencedException reached the application. */
bool ks_producer_fenced(const struct ks_producer *p);
/* The application blocked on its producer (send(), flush(),
 * commitTransaction()) returns when the producer's state changes: `fn` is
 * called with `context` at the end of each event of the producer's node (a
 * response, a sender pass, the start), so that the caller can look at
 * ks_producer_can_send, ks_producer_idle, ks_producer_txn_ended_count and
 * ks_producer_fenced again. fn may schedule events; it must not call back
 * into the producer. */
void ks_producer_set_listener(struct ks_producer *p, void (*fn)(void *context), void *context);

/* ---- for tests and the driver -------------------------------------------- */

/* Asserts the invariants P1..P8 of core/producer.c (whole-object check;
 * O(batches)). Runs after every sender pass in DEBUG=1 builds. */
void ks_producer_check(const struct ks_producer *p);

int64_t ks_producer_failed_count(const struct ks_producer *p);
int64_t ks_producer_unknown_count(const struct ks_producer *p);
/* The current producer id (-1 before InitProducerId answered, or without
 * idempotence) and epoch. */
int64_t ks_producer_id(const struct ks_producer *p);
int16_t ks_producer_epoch(const struct ks_producer *p);

/* One record's value for value.random.percent = random_percent: the last
 * random_percent of value_bytes are random bytes from seed and seq (ksim's
 * own splitmix64, a pure function, so retries and benchmarks rebuild the
 * same bytes), the rest repeated text ('a'..'z', the plain filler). */
void ks_producer_value_fill(uint64_t seed, int64_t seq, int32_t random_percent, uint8_t *value,
                            int32_t value_bytes);
/* Encoded size of one record v2 inside a batch whose only header is the
 * identity header (key_bytes/value_bytes -1 for null). */
size_t ks_producer_record_size_bytes(int32_t offset_delta, int64_t timestamp_delta_ms,
                                     int32_t key_bytes, int32_t value_bytes,
                                     int32_t header_key_bytes, int32_t header_value_bytes);
/* KIP-580 retry backoff before retry number retry_count (from 1): about
 * retry.backoff.ms * 2^(retry_count-1), times a factor in [0.8, 1.2) drawn
 * from `random`, capped at retry.backoff.max.ms. */
ks_time_ns ks_producer_retry_backoff_ns(int64_t retry_backoff_ns, int64_t retry_backoff_ns_max,
                                        int32_t retry_count, uint64_t random);
