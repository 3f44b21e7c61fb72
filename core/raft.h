/*
** core/raft.h: KRaft's replicated metadata log (Kafka's raft module) for a
** static set of voters: epochs, votes, one leader per epoch, followers that
** fetch the log from the leader, and a high watermark that a majority of the
** voters has. Each voter keeps the log in `__cluster_metadata-0` in its own
** folder, written through core/log.c, and its epoch and vote in
** `quorum-state` there. The design block is in core/raft.c.
**
** The owner (a controller) routes the KS_MSG_RAFT_* messages its node gets
** to ks_raft_receive, appends records while it is the leader, and applies
** records as the listener hands them over: only committed ones (below the
** high watermark), each exactly once and in offset order, on every voter.
*/
#pragma once

#include "proto.h"
#include "world.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KS_RAFT_VOTERS_MAX 5

/* Kafka's controller.quorum.* keys (QuorumConfig), in internal units. */
struct ks_raft_config {
    ks_time_ns election_timeout_ns;     /* controller.quorum.election.timeout.ms = 1000 */
    ks_time_ns fetch_timeout_ns;        /* controller.quorum.fetch.timeout.ms = 2000 */
    ks_time_ns election_backoff_ns_max; /* controller.quorum.election.backoff.max.ms = 1000 */
    ks_time_ns request_timeout_ns;      /* controller.quorum.request.timeout.ms = 2000 */
    ks_time_ns retry_backoff_ns;        /* controller.quorum.retry.backoff.ms = 20 */
    ks_time_ns fetch_wait_ns_max;       /* KafkaRaftClient's fetchMaxWaitMs = 500 */
};
void ks_raft_config_defaults(struct ks_raft_config *out);
/* The controller.quorum.* keys of a cluster config. */
struct ks_cluster_config;
void ks_raft_config_from_cluster(const struct ks_cluster_config *cluster,
                                 struct ks_raft_config *out);

/* QuorumState's states (ResignedState included; no observers, no pre-vote). */
enum ks_raft_role {
    KS_RAFT_UNATTACHED, /* knows an epoch, no leader; maybe voted in it */
    KS_RAFT_CANDIDATE,
    KS_RAFT_LEADER,
    KS_RAFT_FOLLOWER,
    KS_RAFT_RESIGNED, /* a leader that gave up (check-quorum); waits for the next epoch */
};
const char *ks_raft_role_name(enum ks_raft_role role); /* "leader", ... */

/* What the owner hears. Any callback may be NULL. They run inside raft's own
 * event, so they must not call ks_raft_free. */
struct ks_raft_listener {
    /* The node's (role, epoch, leader) changed; leader -1 if none known. */
    void (*on_state)(void *context, enum ks_raft_role role, int32_t epoch, int32_t leader_id);
    /* One committed data record at `offset` (the leader's own LeaderChange
     * records are not handed over); value borrowed for the call. */
    void (*on_commit)(void *context, int64_t offset, const uint8_t *value, int32_t value_bytes);
    /* The high watermark moved (after the on_commit calls it allowed). */
    void (*on_high_watermark)(void *context, int64_t hw);
    /* After each of raft's own events (a message or a timer): for checks. */
    void (*after_event)(void *context);
    void *context;
};

struct ks_raft;

/* voters: voter_count node ids (the voter with id == self included), copied.
 * log_dir: this voter's folder for the log (e.g.
 * "controller-4/__cluster_metadata-0"), copied. Owned by the caller:
 * ks_raft_free. */
struct ks_raft *ks_raft_new(ks_world *world, ks_node_id self, const ks_node_id *voters,
                            int32_t voter_count, const struct ks_raft_config *config,
                            const char *log_dir, const struct ks_raft_listener *listener);
void ks_raft_free(struct ks_raft *raft); /* NULL is a no-op */
/* Opens (or recovers) the log and quorum-state, becomes unattached (or
 * resigned if it was the leader), arms the election timer. Also after the
 * driver restarted the node (its timers were dropped): the log is reopened
 * from the disk, everything in memory but the configuration is forgotten,
 * and on_commit replays from offset 0 as the high watermark is learned. */
void ks_raft_start(struct ks_raft *raft);
/* Before the node restarts after a crash: closes the log (a new start
 * reopens it). */
void ks_raft_stop(struct ks_raft *raft);

/* Handles a KS_MSG_RAFT_* message; returns false for any other kind. */
bool ks_raft_receive(struct ks_raft *raft, ks_node_id source, uint32_t kind, const void *message,
                     size_t message_bytes);

/* Leader only: appends one record (key and value, borrowed) in a batch of its
 * own, stamped with the current epoch. Returns its offset, or -1 when this
 * node is not the leader. */
int64_t ks_raft_append(struct ks_raft *raft, const char *key, const void *value,
                       int32_t value_bytes);

enum ks_raft_role ks_raft_role(const struct ks_raft *raft);
int32_t ks_raft_epoch(const struct ks_raft *raft);
int32_t ks_raft_leader(const struct ks_raft *raft); /* -1: none known */
int64_t ks_raft_hw(const struct ks_raft *raft);     /* 0 until known */
int64_t ks_raft_leo(const struct ks_raft *raft);
int64_t ks_raft_applied(const struct ks_raft *raft);        /* next offset on_commit hands over */
int32_t ks_raft_election_count(const struct ks_raft *raft); /* times this node became leader */
/* The leader has committed a record of its own epoch, so every record of
 * earlier epochs in its log is committed and applied: Kafka's raft client
 * tells the state machine it leads only then (maybeFireLeaderChange). */
bool ks_raft_leader_ready(const struct ks_raft *raft);

/* Invariants of one node (STYLE 3.7): hw <= leo, applied <= hw, the role's
 * fields. Asserts. */
void ks_raft_check(const struct ks_raft *raft);

/* Cross-voter invariants of RaftEventSimulationTest, for the driver and
 * tests to run after every event: at most one leader per epoch
 * (SingleLeader), every voter's high watermark never goes back
 * (MonotonicHighWatermark), and the committed prefixes of all voters agree
 * (ConsistentCommittedData: the record at each offset below two voters' high
 * watermarks is the same batch on both). State kept between calls. */
struct ks_raft_quorum_checker;
struct ks_raft_quorum_checker *ks_raft_quorum_checker_new(void);
void ks_raft_quorum_checker_free(struct ks_raft_quorum_checker *checker);
void ks_raft_quorum_check(struct ks_raft_quorum_checker *checker, struct ks_raft *const *nodes,
                          int32_t node_count);
