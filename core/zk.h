/*
** core/zk.h: the ZooKeeper service of `controller = zookeeper`, one node
** (ks_cluster_controller_node: B+1). It keeps sessions and the znodes Kafka
** uses, answers KS_MSG_ZK_REQUEST and the leaders' ISR writes
** (KS_MSG_ALTER_PARTITION_REQUEST, a conditional setData), and fires
** watches as KS_MSG_ZK_WATCH. The design block is in core/zk.c.
*/
#pragma once

#include "cluster.h"
#include "proto.h"
#include "world.h"

struct ks_zk;

/* topics: topic_count topics (the spec's plus __consumer_offsets), borrowed. */
struct ks_zk *ks_zk_new(ks_world *world, const struct ks_cluster_spec *spec,
                        const struct ks_topic_config *topics, int32_t topic_count, ks_node_id node,
                        const struct ks_cluster_observer *observer);
/* Registers the receiver, creates the topics' state znodes (assignment as
 * the KRaft controller makes it, from KS_RNG_CLUSTER unless explicit) and
 * starts the session tracker. */
void ks_zk_start(struct ks_zk *zk);
void ks_zk_free(struct ks_zk *zk); /* NULL is a no-op */
/* After its node restarted: the znodes and sessions were on disk (ZooKeeper
 * logs every transaction before it answers); every session's timeout starts
 * again now, as a restarted ZooKeeper server gives restored sessions. */
void ks_zk_on_restart(struct ks_zk *zk);

/* The partition's state znode (borrowed; valid until the next event);
 * partition_epoch is its zkVersion. NULL for a partition that does not exist. */
const struct ks_partition_state *ks_zk_partition(const struct ks_zk *zk, int32_t topic_index,
                                                 int32_t partition);
/* /controller's broker id (-1 if none) and /controller_epoch. */
int32_t ks_zk_current_controller(const struct ks_zk *zk);
int32_t ks_zk_current_epoch(const struct ks_zk *zk);
/* True while /brokers/ids/N exists. */
bool ks_zk_broker_registered(const struct ks_zk *zk, int32_t broker_id);

/* Whole-object check (STYLE 3.7): Z1..Z4 of core/zk.c. Asserts. */
void ks_zk_check(const struct ks_zk *zk);
