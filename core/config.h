/*
** core/config.h: the settings Kafka code runs with, in internal units.
**
** The scenario loader (sim/scenario.c) fills these from Kafka's configuration
** names and defaults and converts units once (STYLE 3.3): `replica.lag.time.max.ms`
** becomes replica_lag_ns_max. After loading they are plain, frozen data.
** Comments give the Kafka name each field comes from.
*/
#pragma once

#include "compress.h"
#include "world.h"

#include <stdbool.h>
#include <stdint.h>

#define KS_BROKER_COUNT_MAX       1024 /* a multiple of 8: core/proto.h's wire slots */
#define KS_TOPIC_NAME_BYTES_MAX   249
#define KS_REPLICATION_FACTOR_MAX 16
/* Partitions per topic and topics per cluster: chosen from what the model
 * reaches (docs/scale-out.md, Limits); sim/scenario.h also bounds the
 * partition replicas of a whole scenario. */
#define KS_PARTITION_COUNT_MAX    50000
#define KS_TOPIC_COUNT_MAX        10000
#define KS_INT64_UNSET            INT64_MAX /* Kafka's Long.MAX_VALUE: "never" */

enum ks_truncation_mode {
    KS_TRUNCATION_LEADER_EPOCH,  /* KIP-101/KIP-279 (Kafka 0.11+) */
    KS_TRUNCATION_HIGH_WATERMARK /* Kafka before 0.11: truncate to the local HW */
};

/* controller = kraft | zookeeper (ksim): which controller model runs. */
enum ks_controller_model {
    KS_CONTROLLER_MODEL_KRAFT,    /* core/controller.c: one KRaft-like controller node */
    KS_CONTROLLER_MODEL_ZOOKEEPER /* core/zk.c + core/zk_controller.c: a broker is controller */
};

enum ks_acks { KS_ACKS_NONE = 0, KS_ACKS_LEADER = 1, KS_ACKS_ALL = -1 };

enum ks_commit_mode {
    KS_COMMIT_BEFORE_PROCESS, /* at-most-once */
    KS_COMMIT_AFTER_PROCESS,  /* at-least-once */
    KS_COMMIT_ATOMIC,         /* offset stored with the output: exactly-once */
    KS_COMMIT_AUTO            /* enable.auto.commit=true: whatever the interval yields */
};

enum ks_assignor { KS_ASSIGNOR_RANGE, KS_ASSIGNOR_ROUNDROBIN, KS_ASSIGNOR_STICKY };

enum ks_offset_reset { KS_RESET_EARLIEST, KS_RESET_LATEST, KS_RESET_NONE };

/* When a broker's periodic tasks first run (ksim's broker.task.phase). */
enum ks_task_phase {
    KS_TASK_PHASE_ALIGNED, /* every broker in step: heartbeat at start, the rest a period later */
    KS_TASK_PHASE_RANDOM   /* each task at a uniform point of its period, drawn per seed */
};

struct ks_cluster_config {
    int32_t broker_count;     /* brokers = N: ids 1..N */
    int32_t controller_count; /* controllers = 1 (KRaft voters; 1, 3 or 5) */
    /* KRaft quorum timing (QuorumConfig), used with controllers = 3 or 5 */
    int64_t quorum_election_timeout_ns;       /* controller.quorum.election.timeout.ms = 1000 */
    int64_t quorum_fetch_timeout_ns;          /* controller.quorum.fetch.timeout.ms = 2000 */
    int64_t quorum_election_backoff_ns_max;   /* controller.quorum.election.backoff.max.ms = 1000 */
    int64_t quorum_request_timeout_ns;        /* controller.quorum.request.timeout.ms = 2000 */
    int64_t quorum_retry_backoff_ns;          /* controller.quorum.retry.backoff.ms = 20 */
    char racks[KS_BROKER_COUNT_MAX][32];      /* racks = a,b,c; "" when not given */
    int64_t replica_lag_ns_max;               /* replica.lag.time.max.ms = 30000 */
    int64_t replica_fetch_wait_ns_max;        /* replica.fetch.wait.max.ms = 500 */
    int32_t replica_fetch_min_bytes;          /* replica.fetch.min.bytes = 1 */
    int32_t replica_fetch_max_bytes;          /* replica.fetch.max.bytes = 1048576 */
    int32_t replica_fetch_response_max_bytes; /* replica.fetch.response.max.bytes = 10485760 */
    int64_t replica_fetch_backoff_ns;         /* replica.fetch.backoff.ms = 1000 */
    int64_t
        replica_hw_checkpoint_interval_ns; /* replica.high.watermark.checkpoint.interval.ms = 5000 */
    int64_t broker_session_timeout_ns;     /* broker.session.timeout.ms = 9000 */
    int64_t broker_heartbeat_interval_ns;  /* broker.heartbeat.interval.ms = 2000 */
    bool unclean_leader_election_enable;   /* unclean.leader.election.enable = false */
    bool auto_leader_rebalance_enable;     /* auto.leader.rebalance.enable = true */
    int64_t leader_imbalance_check_interval_ns; /* leader.imbalance.check.interval.seconds = 300 */
    int64_t
        recovery_point_checkpoint_interval_ns; /* log.flush.offset.checkpoint.interval.ms = 60000 */
    int64_t retention_check_interval_ns;       /* log.retention.check.interval.ms = 300000 */
    int32_t offsets_topic_partition_count;     /* offsets.topic.num.partitions = 50 */
    int32_t
        offsets_topic_replication_factor; /* offsets.topic.replication.factor = 3 (capped at brokers) */
    int64_t group_initial_rebalance_delay_ns; /* group.initial.rebalance.delay.ms = 3000 */
    int32_t txn_topic_partition_count;        /* transaction.state.log.num.partitions = 50 */
    int32_t
        txn_topic_replication_factor; /* transaction.state.log.replication.factor = 3 (capped) */
    int32_t txn_topic_min_isr;        /* transaction.state.log.min.isr = 2 */
    int64_t
        txn_abort_check_interval_ns; /* transaction.abort.timed.out.transaction.cleanup.interval.ms = 10000 */
    int64_t group_min_session_timeout_ns; /* group.min.session.timeout.ms = 6000 */
    int64_t group_max_session_timeout_ns; /* group.max.session.timeout.ms = 1800000 */
    int64_t offsets_commit_timeout_ns;    /* offsets.commit.timeout.ms = 5000 */
    /* min.insync.replicas = 1: the broker default that topics inherit, and the
     * internal topic's own setting (Kafka creates __consumer_offsets with the
     * broker defaults). */
    int32_t min_insync_replicas;
    enum ks_truncation_mode truncation; /* replication.truncation = leader-epoch */
    bool hw_requires_min_isr;           /* ksim: Kafka 3.7+ (KAFKA-15583) rule; default true */
    /* eligible.leader.replicas.enable = false (KIP-966; on for new Kafka 4.1
     * clusters): the controller keeps ELR and the last known leader. */
    bool eligible_leader_replicas_enable;
    /* Broker defaults of the topics' compression.type (= producer) and
     * compression.{gzip,lz4,zstd}.level; topics inherit them. */
    struct ks_compression_config compression;
    enum ks_task_phase task_phase;             /* ksim: broker.task.phase = random */
    enum ks_controller_model controller_model; /* ksim: controller = kraft */
    int64_t zookeeper_session_timeout_ns;      /* zookeeper.session.timeout.ms = 18000 */
    bool controlled_shutdown_enable;           /* controlled.shutdown.enable = true */
    /* ksim: client-side leader epochs (KIP-320, Kafka 2.1+): clients refuse
     * metadata with an older leader epoch, consumers send current_leader_epoch
     * and validate their position after a leader change. Default true. */
    bool client_leader_epochs;
    /* ksim: leader discovery from error responses (KIP-951, Kafka 3.7+): a
     * NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH answer to a produce or a
     * fetch names the new leader, and the client moves to it. Default true. */
    bool client_leader_discovery;
    /* transaction.partition.verification.enable = true (KIP-890 part 1, Kafka
     * 3.6+): a leader asks the transaction coordinator before appending a
     * transactional batch that would start a transaction on a partition. */
    bool txn_partition_verification_enable;
    /* add.partitions.to.txn.retry.backoff.ms = 20 and
     * add.partitions.to.txn.retry.backoff.max.ms = 100 (KAFKA-18654, Kafka
     * 4.0's AddPartitionsToTxnConfig): a leader's implicit add refused with
     * CONCURRENT_TRANSACTIONS is retried every backoff while max has not
     * passed since the first attempt (transaction.version 2 only). */
    int64_t add_partitions_retry_backoff_ns;
    int64_t add_partitions_retry_backoff_max_ns;
    /* producer.id.expiration.ms = 86400000 and
     * producer.id.expiration.check.interval.ms = 600000 (TransactionLogConfig):
     * a leader's verification entry older than the expiration goes at the
     * next check (ProducerStateManager.removeExpiredProducers). */
    int64_t producer_id_expiration_ns;
    int64_t producer_id_expiration_check_interval_ns;
    /* transaction.version = 2, the finalized feature level (KIP-890; Kafka's
     * TransactionVersion): 0 and 1 run the classic protocol (1 only changes
     * the __transaction_state record format, which ksim does not model); 2
     * bumps the producer epoch at every EndTxn and adds a data partition to
     * the transaction through the partition leader's first transactional
     * Produce (KIP-890 part 2). 4.0's default for a new cluster. */
    int32_t transaction_version;
    /* ksim: a transactional producer's TxnOffsetCommit carries the consumer's
     * member id and generation (KIP-447, Kafka 2.5+), so the group
     * coordinator can fence a zombie member. Default true. */
    bool client_txn_group_metadata;
    /* Broker defaults for topic-level settings (log.*); topics copy them unless set. */
};

struct ks_log_config {
    int64_t segment_bytes;                      /* segment.bytes / log.segment.bytes = 1073741824 */
    int64_t segment_ns;                         /* segment.ms / log.roll.ms = 7 days */
    int32_t index_interval_bytes;               /* index.interval.bytes = 4096 */
    int32_t segment_index_bytes;                /* segment.index.bytes = 10485760 */
    int64_t flush_messages;                     /* flush.messages = Long.MAX_VALUE (never) */
    int64_t flush_ns;                           /* flush.ms: KS_INT64_UNSET = never */
    int64_t retention_ns;                       /* retention.ms = 7 days; -1 = forever */
    int64_t retention_bytes;                    /* retention.bytes = -1 (off) */
    bool cleanup_compact;                       /* cleanup.policy contains compact */
    bool cleanup_delete;                        /* cleanup.policy contains delete (default) */
    int64_t delete_retention_ns;                /* delete.retention.ms = 86400000 */
    int64_t min_compaction_lag_ns;              /* min.compaction.lag.ms = 0 */
    int32_t min_cleanable_dirty_ratio_permille; /* min.cleanable.dirty.ratio = 0.5 -> 500 */
    int32_t max_message_bytes;                  /* max.message.bytes = 1048588 */
};

struct ks_topic_config {
    char name[KS_TOPIC_NAME_BYTES_MAX + 1];
    int32_t partition_count;             /* partitions */
    int32_t replication_factor;          /* replication.factor */
    int32_t min_insync_replicas;         /* min.insync.replicas = 1 */
    bool unclean_leader_election_enable; /* topic override; copied from cluster if unset */
    struct ks_log_config log;
    /* compression.type = producer (KS_COMPRESSION_PRODUCER), uncompressed
     * (KS_CODEC_NONE) or a codec; the levels the broker recompresses with. */
    struct ks_compression_config compression;
    /* assignment = 1,2,3 ; 2,3,1 : explicit replica lists, leader first, one row
     * per partition ([partition_count]); NULL if not given. Owned: a config that
     * has one is copied with ks_topic_config_copy and released with
     * ks_topic_config_deinit, never by a struct assignment or memcpy. */
    int32_t (*assignment)[KS_REPLICATION_FACTOR_MAX];
};

struct ks_producer_config {
    char name[64];
    int32_t topic_index;                      /* topic = orders, as an index into the topic array */
    enum ks_acks acks;                        /* acks = all */
    bool enable_idempotence;                  /* enable.idempotence = true */
    int32_t retries;                          /* retries = 2147483647 */
    int32_t max_in_flight;                    /* max.in.flight.requests.per.connection = 5 */
    int64_t linger_ns;                        /* linger.ms = 5 (Kafka 4.0 default) */
    int32_t batch_size_bytes;                 /* batch.size = 16384 */
    int64_t buffer_memory_bytes;              /* buffer.memory = 33554432 */
    int64_t delivery_timeout_ns;              /* delivery.timeout.ms = 120000 */
    int64_t request_timeout_ns;               /* request.timeout.ms = 30000 */
    int64_t retry_backoff_ns;                 /* retry.backoff.ms = 100 */
    int64_t retry_backoff_ns_max;             /* retry.backoff.max.ms = 1000 */
    int64_t metadata_max_age_ns;              /* metadata.max.age.ms = 300000 */
    int64_t max_block_ns;                     /* max.block.ms = 60000 */
    int32_t max_request_size_bytes;           /* max.request.size = 1048576 */
    int64_t reconnect_backoff_ns;             /* reconnect.backoff.ms = 50 */
    int64_t reconnect_backoff_ns_max;         /* reconnect.backoff.max.ms = 1000 */
    int64_t connection_setup_timeout_ns;      /* socket.connection.setup.timeout.ms = 10000 */
    int64_t connection_setup_timeout_ns_max;  /* socket.connection.setup.timeout.max.ms = 30000 */
    struct ks_compression_config compression; /* compression.type = none, compression.*.level */
    /* ksim workload */
    uint64_t rate_per_s;            /* rate = 2000/s */
    int64_t count;                  /* count = stop after this many; -1 = until duration */
    int32_t key_count;              /* keys = 1000; 0 = null keys */
    int32_t value_bytes;            /* value.bytes = 100 */
    int32_t value_random_percent;   /* value.random.percent = 0: share of each value that
                                        is random bytes (different in every record, no
                                        codec shrinks them); the rest is repeated text */
    int64_t start_ns;               /* start = 0s */
    int64_t start_jitter_ns;        /* start.jitter = 100ms: starts in [start, start + jitter] */
    char transactional_id[64];      /* transactional.id = null (""): not transactional */
    int64_t transaction_timeout_ns; /* transaction.timeout.ms = 60000 */
    int32_t txn_records;            /* transaction.records = 100: records per transaction */
    int32_t txn_abort_permille;     /* transaction.abort.rate = 0: share the application aborts */
    /* ksim: -1, or the consumer whose output this producer writes (a
     * processor's producer, made by the scenario loader: no workload of its
     * own; the consumer hands it one record per record it processes). */
    int32_t input_consumer_index;
};

/* isolation.level (KIP-98). */
enum ks_isolation_level { KS_READ_UNCOMMITTED, KS_READ_COMMITTED };

struct ks_consumer_config {
    char name[64];
    char group_id[256];              /* group.id */
    int32_t topic_index;             /* topic */
    enum ks_commit_mode commit;      /* commit = after-process (enable.auto.commit=true -> AUTO) */
    int64_t auto_commit_interval_ns; /* auto.commit.interval.ms = 5000 */
    int64_t processing_ns;           /* processing.time = 1ms per record */
    enum ks_offset_reset auto_offset_reset; /* auto.offset.reset = latest */
    int64_t session_timeout_ns;             /* session.timeout.ms = 45000 */
    int64_t heartbeat_interval_ns;          /* heartbeat.interval.ms = 3000 */
    int64_t max_poll_interval_ns;           /* max.poll.interval.ms = 300000 */
    int32_t max_poll_records;               /* max.poll.records = 500 */
    int32_t fetch_min_bytes;                /* fetch.min.bytes = 1 */
    int64_t fetch_max_wait_ns;              /* fetch.max.wait.ms = 500 */
    int32_t max_partition_fetch_bytes;      /* max.partition.fetch.bytes = 1048576 */
    int64_t request_timeout_ns;             /* request.timeout.ms = 30000 */
    enum ks_assignor assignor;              /* partition.assignment.strategy = range */
    int64_t start_ns;                       /* start = 0s */
    int64_t start_jitter_ns; /* start.jitter = 100ms: joins in [start, start + jitter] */
    enum ks_isolation_level isolation_level; /* isolation.level = read_uncommitted */
    /* ksim processor (consume-transform-produce): output.topic, -1 none. */
    int32_t output_topic_index;
    char transactional_id[64];     /* transactional.id = "": at-least-once output */
    int32_t output_producer_index; /* the producer writing the output, -1 none */
};

/* ---- Kafka's defaults (core/config.c) -------------------------------------- */

/* Each fills every field of *out with its default: Kafka's, as in the field
 * comments above, and for ksim's own settings the scenario loader's. Code
 * that builds a config by hand starts from these and changes what it means to
 * change; tests/core/test_config.c checks that a scenario file setting
 * nothing loads to exactly these values. */
void ks_cluster_config_defaults(struct ks_cluster_config *out);
void ks_log_config_defaults(struct ks_log_config *out);
/* No name; 1 partition, replication factor 1, min ISR 1, the log defaults. */
void ks_topic_config_defaults(struct ks_topic_config *out);
/* Gives topic an explicit assignment of partition_count zeroed rows, for the
 * caller to fill; topic has none before. */
void ks_topic_config_assignment_new(struct ks_topic_config *topic);
/* Copies source into target, with an assignment of target's own (NULL when
 * source has none). target owns nothing before (its old contents are
 * overwritten, not released). */
void ks_topic_config_copy(struct ks_topic_config *target, const struct ks_topic_config *source);
/* Releases what topic owns (its assignment) and leaves it without one.
 * A NULL topic or one without an assignment is a no-op. */
void ks_topic_config_deinit(struct ks_topic_config *topic);
/* No name; topic index 0. */
void ks_producer_config_defaults(struct ks_producer_config *out);
/* No name and no group id; topic index 0; enable.auto.commit (KS_COMMIT_AUTO). */
void ks_consumer_config_defaults(struct ks_consumer_config *out);

/* ---- derived settings ---------------------------------------------------------- */

/* The ISR size an acks=all write needs and below which the HW may stop
 * (KAFKA-15583): min.insync.replicas, never more than the replication factor
 * (the scenario loader rejects a larger one; __consumer_offsets takes the
 * broker's min.insync.replicas and may have fewer replicas than that). */
static inline int32_t ks_topic_min_isr(const struct ks_topic_config *topic)
{
    return topic->min_insync_replicas < topic->replication_factor ? topic->min_insync_replicas
                                                                  : topic->replication_factor;
}
