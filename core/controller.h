/*
** core/controller.h: the KRaft-like controller node (ks_cluster_controller_node).
** It owns the partition metadata (replicas, leader, leader epoch, partition
** epoch, ISR), watches broker sessions, elects leaders and pushes changes to
** brokers over the network. The design block is in core/controller.c.
*/
#pragma once

#include "cluster.h"
#include "proto.h"
#include "world.h"

struct ks_controller;

/* topics: topic_count topics (the spec's plus __consumer_offsets last when
 * consumers exist), borrowed. Owned by the caller: ks_controller_free. */
struct ks_controller *ks_controller_new(ks_world *world, const struct ks_cluster_spec *spec,
                                        const struct ks_topic_config *topics, int32_t topic_count,
                                        ks_node_id node,
                                        const struct ks_cluster_observer *observer);
/* Registers the receiver, creates the topics (initial elections; replicas
 * placed by core/placement.h's placer for this controller, drawing from
 * KS_RNG_CLUSTER, unless the topic has an explicit assignment), pushes them
 * to brokers, arms timers. */
void ks_controller_start(struct ks_controller *controller);
void ks_controller_free(struct ks_controller *controller); /* NULL is a no-op */
/* After the driver restarted the controller's node (its timers were dropped):
 * state is kept (controller = kraft), sessions restart now, timers re-armed. */
void ks_controller_start_after_restart(struct ks_controller *controller);

/* The controller's view (borrowed; valid until the next event). */
const struct ks_partition_state *ks_controller_partition(const struct ks_controller *controller,
                                                         int32_t topic_index, int32_t partition);
bool ks_controller_broker_fenced(const struct ks_controller *controller, int32_t broker_id);
int64_t ks_controller_metadata_version(const struct ks_controller *controller);

/* Whole-controller check (STYLE 3.7): every partition against C1..C3 of
 * core/controller.c's design block, the replica and ISR lists, the broker
 * registrations' versions and the session timer. Asserts; returns only when
 * all hold. Runs after every controller event in KS_DEBUG builds; tests may
 * call it between events. */
void ks_controller_check(const struct ks_controller *controller);

/* Pure helper, exposed for tests: KRaft election (kafka-reference 9.8).
 * alive[id-1] says whether broker id is unfenced. Returns the new leader or
 * -1; *unclean_out tells whether it came from outside the ISR (then the ISR
 * must become just the leader). */
int32_t ks_controller_elect(const struct ks_partition_state *state, const bool *alive,
                            bool unclean_enabled, bool *unclean_out);
