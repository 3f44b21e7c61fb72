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
#include <stdint.h>

struct ks_producer;

/* Builds producer `producer_index` of spec (config spec->producers[index])
 * and registers its receiver on its node. spec and observer are borrowed and
 * must outlive the producer. Returns an owned object: ks_producer_free. */
struct ks_producer *ks_producer_new(ks_world *world, const struct ks_cluster_spec *spec,
                                    int32_t producer_index,
                                    const struct ks_cluster_observer *observer);
/* Arms the start timer (config start_ns from now). */
void ks_producer_start(struct ks_producer *p);
/* NULL is a no-op. Records still pending are not reported. */
void ks_producer_free(struct ks_producer *p);
/* The world already dropped the node's timers: forget in-memory state;
 * records in flight (or queued) end as "unknown". */
void ks_producer_on_crash(struct ks_producer *p);
/* A new incarnation: new producer id, continue the workload (record numbers
 * continue where the previous incarnation stopped). */
void ks_producer_on_restart(struct ks_producer *p);
/* Stop generating new records; queued and in-flight ones finish or time out. */
void ks_producer_stop(struct ks_producer *p);
/* Records that ended acked so far. */
int64_t ks_producer_acked_count(const struct ks_producer *p);
/* Records handed to the producer by its workload so far (send() calls). */
int64_t ks_producer_sent_count(const struct ks_producer *p);
/* True when nothing is queued or in flight. */
bool ks_producer_idle(const struct ks_producer *p);
