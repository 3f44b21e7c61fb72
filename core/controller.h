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

/* controllers = 3 or 5: controller `index` (0-based) of the KRaft quorum,
 * on node voters[index]; see "the quorum" in core/controller.c. Freed with
 * ks_controller_free. */
struct ks_raft_config;
struct ks_raft;
struct ks_controller *ks_controller_new_voter(ks_world *world, const struct ks_cluster_spec *spec,
                                              const struct ks_topic_config *topics,
                                              int32_t topic_count, int32_t index,
                                              const ks_node_id *voters, int32_t voter_count,
                                              const struct ks_raft_config *raft_config,
                                              const struct ks_cluster_observer *observer);
/* Starts a voter. bootstrap NULL: this one computes the bootstrap state
 * (topics placed from KS_RNG_CLUSTER, as ks_controller_start) and pushes it
 * to the brokers; else it copies bootstrap's (started before). */
void ks_controller_start_voter(struct ks_controller *controller,
                               const struct ks_controller *bootstrap);
/* Whether this controller acts (always with one controller). */
bool ks_controller_is_active(const struct ks_controller *controller);
/* The voter's Raft node, NULL with one controller (borrowed). */
struct ks_raft *ks_controller_raft(const struct ks_controller *controller);
/* KS_DEBUG: after each of its Raft events a voter runs ks_raft_quorum_check
 * over every voter (peers and checker borrowed, owned by the cluster). */
struct ks_raft_quorum_checker;
void ks_controller_set_quorum_check(struct ks_controller *controller, struct ks_raft *const *peers,
                                    int32_t peer_count, struct ks_raft_quorum_checker *checker);
void ks_controller_free(struct ks_controller *controller); /* NULL is a no-op */
/* After the driver restarted the controller's node (its timers were dropped):
 * state is kept (controller = kraft), sessions restart now, timers re-armed. */
void ks_controller_start_after_restart(struct ks_controller *controller);

/* The controller's view (borrowed; valid until the next event). */
const struct ks_partition_state *ks_controller_partition(const struct ks_controller *controller,
                                                         int32_t topic_index, int32_t partition);
bool ks_controller_broker_fenced(const struct ks_controller *controller, int32_t broker_id);

/* KIP-966 state of a partition: the controller's own (PartitionRecord's
 * EligibleLeaderReplicas and LastKnownElr). Brokers are not told: nothing in
 * a broker's part of the model reads it (Kafka's brokers keep it for
 * DescribeTopicPartitions). Both lists stay empty unless
 * eligible.leader.replicas.enable. */
struct ks_partition_elr {
    int32_t elr_count;
    int32_t elr[KS_REPLICATION_FACTOR_MAX];            /* ascending broker ids, none in the ISR */
    int32_t last_known_elr_count;                      /* 0 or 1 */
    int32_t last_known_elr[KS_REPLICATION_FACTOR_MAX]; /* the last known leader */
};
/* Borrowed; valid until the next event. NULL for a partition that does not exist. */
const struct ks_partition_elr *ks_controller_partition_elr(const struct ks_controller *controller,
                                                           int32_t topic_index, int32_t partition);
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

/* Pure helper, exposed for tests: the same election with KIP-966's order
 * (PartitionChangeBuilder.electAnyLeader): the first unfenced replica in
 * assignment order that is in the ISR, or in the ELR when the ISR is empty;
 * else the last known leader if ISR and ELR are empty and it is unfenced;
 * else, with unclean election, the first unfenced replica. *from_out says
 * which (KS_ELECTED_FROM_NONE with -1). With empty ELR lists it is
 * ks_controller_elect. */
int32_t ks_controller_elect_eligible(const struct ks_partition_state *state,
                                     const struct ks_partition_elr *elr, const bool *alive,
                                     bool unclean_enabled, enum ks_elected_from *from_out);
