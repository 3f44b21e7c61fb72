/*
** core/zk_controller.h: the ZooKeeper-era controller (`controller = zookeeper`),
** hosted by the broker that won /controller (core/broker_zk.c creates and
** feeds it). The design block is in core/zk_controller.c.
*/
#pragma once

#include "cluster.h"
#include "proto.h"
#include "world.h"

struct ks_zk_controller;

/* A broker that won /controller with `epoch` on `session_id` starts its
 * controller: it reads the cluster state from ZooKeeper (zk_node). */
struct ks_zk_controller *ks_zk_controller_new(ks_world *world, const struct ks_cluster_spec *spec,
                                              const struct ks_topic_config *topics,
                                              int32_t topic_count, int32_t broker_id,
                                              ks_node_id zk_node, int64_t session_id, int32_t epoch,
                                              const struct ks_cluster_observer *observer);
void ks_zk_controller_free(struct ks_zk_controller *controller); /* NULL is a no-op */
/* A ZooKeeper answer to the controller's READ_STATE or WRITE_PARTITION (not
 * SESSION_EXPIRED: the host resigns instead); bytes/byte_count is the whole
 * message (READ_STATE carries entries). */
void ks_zk_controller_on_response(struct ks_zk_controller *controller,
                                  const struct ks_zk_response *response, const uint8_t *bytes,
                                  size_t byte_count);
/* A BROKERS or ISR watch notification. */
void ks_zk_controller_on_watch(struct ks_zk_controller *controller,
                               const struct ks_zk_response *watch);
int32_t ks_zk_controller_epoch(const struct ks_zk_controller *controller);
/* A ControlledShutdown from the broker at `source`
 * (KafkaController.doControlledShutdown): the broker becomes shutting down,
 * its leaderships move, it leaves the ISRs it follows; the answer goes back
 * once the writes this caused are answered. */
void ks_zk_controller_on_controlled_shutdown(struct ks_zk_controller *controller, ks_node_id source,
                                             const struct ks_controlled_shutdown_request *request);

/* Pure helper, exposed for tests: what the controller writes for a partition
 * when `live` (live[id-1]) are the registered brokers, as Kafka 2.x's
 * PartitionStateMachine (OfflinePartitionLeaderElectionStrategy) and
 * ReplicaStateMachine (OfflineReplica) would. Returns false when the state
 * stays; else fills *out and *from_out (KS_ELECTED_FROM_NONE when the leader
 * is unchanged or none could be elected). */
bool ks_zk_controller_decide(const struct ks_partition_state *state, const bool *live,
                             bool unclean_enabled, struct ks_partition_state *out,
                             enum ks_elected_from *from_out);
/* Pure helper, exposed for tests: a partition whose live leader is shutting
 * down (ControlledShutdownPartitionLeaderElectionStrategy): the first replica
 * in assignment order that is live, in the ISR and not shutting down leads,
 * and the shutting-down brokers leave the ISR. False (no change) for a single
 * replica or when no replica qualifies: the leader stays. */
bool ks_zk_controller_decide_shutdown(const struct ks_partition_state *state, const bool *live,
                                      const bool *shutting_down, struct ks_partition_state *out,
                                      enum ks_elected_from *from_out);
