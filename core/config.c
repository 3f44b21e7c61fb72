/*
** core/config.c: Kafka's defaults for the settings of core/config.h, in
** internal units, defined once.
**
** The scenario loader applies the defaults of its key table (sim/scenario_keys.c,
** text parsed like a written value); everything else that builds a config by
** hand starts here: core/cluster.c for __consumer_offsets when it has no user
** topic to copy log settings from, and the test and bench fixtures. Each
** value is the one in the field's comment in core/config.h (kafka-reference 4);
** ksim's own settings (broker count, workload) take the key table's defaults.
** tests/core/test_config.c checks that a scenario that sets nothing loads to
** exactly these, so the two definitions cannot drift apart.
*/
#include "config.h"

#include "base.h"
#include "compress.h"

#include <stdlib.h>
#include <string.h>

#define MS        ((int64_t)KS_NS_PER_MS)
#define DAYS_7_NS (INT64_C(7) * 24 * 3600 * (int64_t)KS_NS_PER_S)

void ks_cluster_config_defaults(struct ks_cluster_config *out)
{
    memset(out, 0, sizeof *out);
    out->broker_count = 3;     /* ksim: brokers = 3; no racks */
    out->controller_count = 1; /* ksim: controllers = 1, one KRaft voter */
    out->quorum_election_timeout_ns = 1000 * MS;
    out->quorum_fetch_timeout_ns = 2000 * MS;
    out->quorum_election_backoff_ns_max = 1000 * MS;
    out->quorum_request_timeout_ns = 2000 * MS;
    out->quorum_retry_backoff_ns = 20 * MS;
    out->replica_lag_ns_max = 30000 * MS;
    out->replica_fetch_wait_ns_max = 500 * MS;
    out->replica_fetch_min_bytes = 1;
    out->replica_fetch_max_bytes = 1048576;
    out->replica_fetch_response_max_bytes = 10485760;
    out->replica_fetch_backoff_ns = 1000 * MS;
    out->replica_hw_checkpoint_interval_ns = 5000 * MS;
    out->broker_session_timeout_ns = 9000 * MS;
    out->broker_heartbeat_interval_ns = 2000 * MS;
    out->unclean_leader_election_enable = false;
    out->auto_leader_rebalance_enable = true;
    out->leader_imbalance_check_interval_ns = 300 * (int64_t)KS_NS_PER_S;
    out->recovery_point_checkpoint_interval_ns = 60000 * MS;
    out->retention_check_interval_ns = 300000 * MS;
    out->offsets_topic_partition_count = 50;
    out->offsets_topic_replication_factor = 3;
    out->txn_topic_partition_count = 50;
    out->txn_topic_replication_factor = 3;
    out->txn_topic_min_isr = 2;
    out->txn_abort_check_interval_ns = 10000 * MS;
    out->txn_partition_verification_enable = true; /* KIP-890 part 1 (3.6+) */
    out->add_partitions_retry_backoff_ns = 20 * MS;      /* KAFKA-18654 (4.0) */
    out->add_partitions_retry_backoff_max_ns = 100 * MS; /* KAFKA-18654 (4.0) */
    out->producer_id_expiration_ns = 86400000 * MS;
    out->producer_id_expiration_check_interval_ns = 600000 * MS;
    out->transaction_version = 2;                   /* KIP-890 part 2 (4.0+) */
    out->client_txn_group_metadata = true;          /* KIP-447 (2.5+) */
    out->group_initial_rebalance_delay_ns = 3000 * MS;
    out->group_min_session_timeout_ns = 6000 * MS;
    out->group_max_session_timeout_ns = 1800000 * MS;
    out->offsets_commit_timeout_ns = 5000 * MS;
    out->min_insync_replicas = 1;
    out->truncation = KS_TRUNCATION_LEADER_EPOCH;
    out->hw_requires_min_isr = true;
    out->eligible_leader_replicas_enable = false;
    ks_compression_config_init(&out->compression);
    out->compression.codec = KS_COMPRESSION_PRODUCER;  /* compression.type = producer */
    out->task_phase = KS_TASK_PHASE_RANDOM;            /* ksim: broker.task.phase = random */
    out->controller_model = KS_CONTROLLER_MODEL_KRAFT; /* ksim: controller = kraft */
    out->zookeeper_session_timeout_ns = 18000 * MS;    /* zookeeper.session.timeout.ms */
    out->controlled_shutdown_enable = true;            /* controlled.shutdown.enable */
    out->client_leader_epochs = true;                  /* ksim: KIP-320 clients */
    out->client_leader_discovery = true;               /* ksim: KIP-951 clients */
}

void ks_log_config_defaults(struct ks_log_config *out)
{
    memset(out, 0, sizeof *out);
    out->segment_bytes = 1073741824;
    out->segment_ns = DAYS_7_NS;
    out->index_interval_bytes = 4096;
    out->segment_index_bytes = 10485760;
    out->flush_messages = KS_INT64_UNSET;
    out->flush_ns = KS_INT64_UNSET;
    out->retention_ns = DAYS_7_NS;
    out->retention_bytes = -1;
    out->cleanup_compact = false;
    out->cleanup_delete = true;
    out->delete_retention_ns = 86400000 * MS;
    out->min_compaction_lag_ns = 0;
    out->min_cleanable_dirty_ratio_permille = 500;
    out->max_message_bytes = 1048588;
}

void ks_topic_config_defaults(struct ks_topic_config *out)
{
    memset(out, 0, sizeof *out);
    out->partition_count = 1;     /* num.partitions = 1 */
    out->replication_factor = 1;  /* default.replication.factor = 1 */
    out->min_insync_replicas = 1; /* min.insync.replicas = 1 */
    out->unclean_leader_election_enable = false;
    ks_log_config_defaults(&out->log);
    out->assignment = NULL;
    ks_compression_config_init(&out->compression);
    out->compression.codec = KS_COMPRESSION_PRODUCER; /* compression.type = producer */
}

void ks_topic_config_assignment_new(struct ks_topic_config *topic)
{
    ks_assert(topic->assignment == NULL);
    ks_assert(topic->partition_count >= 1);
    topic->assignment = calloc((size_t)topic->partition_count, sizeof *topic->assignment);
    ks_assert(topic->assignment != NULL);
}

void ks_topic_config_copy(struct ks_topic_config *target, const struct ks_topic_config *source)
{
    ks_assert(target != source);
    *target = *source;
    target->assignment = NULL;
    if (source->assignment != NULL) {
        ks_topic_config_assignment_new(target);
        memcpy(target->assignment, source->assignment,
               (size_t)source->partition_count * sizeof *source->assignment);
    }
}

void ks_topic_config_deinit(struct ks_topic_config *topic)
{
    if (topic == NULL) {
        return;
    }
    free(topic->assignment);
    topic->assignment = NULL;
}

void ks_producer_config_defaults(struct ks_producer_config *out)
{
    memset(out, 0, sizeof *out);
    out->topic_index = 0;
    out->acks = KS_ACKS_ALL;
    out->enable_idempotence = true;
    out->retries = INT32_MAX;
    out->max_in_flight = 5;
    out->linger_ns = 5 * MS;
    out->batch_size_bytes = 16384;
    out->buffer_memory_bytes = 33554432;
    out->delivery_timeout_ns = 120000 * MS;
    out->request_timeout_ns = 30000 * MS;
    out->retry_backoff_ns = 100 * MS;
    out->retry_backoff_ns_max = 1000 * MS;
    out->metadata_max_age_ns = 300000 * MS;
    out->max_block_ns = 60000 * MS;
    out->max_request_size_bytes = 1048576;
    out->reconnect_backoff_ns = 50 * MS;
    out->reconnect_backoff_ns_max = 1000 * MS;
    out->connection_setup_timeout_ns = 10000 * MS;
    out->connection_setup_timeout_ns_max = 30000 * MS;
    out->rate_per_s = 1000; /* ksim workload: rate = 1000/s, until the end, null keys */
    out->count = -1;
    out->key_count = 0;
    out->value_bytes = 100;
    out->value_random_percent = 0;
    ks_compression_config_init(&out->compression); /* compression.type = none */
    out->start_ns = 0;
    out->start_jitter_ns = 100 * MS;          /* ksim: start.jitter = 100ms */
    out->transaction_timeout_ns = 60000 * MS; /* transaction.timeout.ms */
    out->txn_records = 100;                   /* ksim: transaction.records */
    out->input_consumer_index = -1;
}

void ks_consumer_config_defaults(struct ks_consumer_config *out)
{
    memset(out, 0, sizeof *out);
    out->topic_index = 0;
    out->commit = KS_COMMIT_AUTO; /* enable.auto.commit = true */
    out->auto_commit_interval_ns = 5000 * MS;
    out->processing_ns = 1 * MS; /* ksim: processing.time = 1ms */
    out->auto_offset_reset = KS_RESET_LATEST;
    out->session_timeout_ns = 45000 * MS;
    out->heartbeat_interval_ns = 3000 * MS;
    out->max_poll_interval_ns = 300000 * MS;
    out->max_poll_records = 500;
    out->fetch_min_bytes = 1;
    out->fetch_max_wait_ns = 500 * MS;
    out->max_partition_fetch_bytes = 1048576;
    out->request_timeout_ns = 30000 * MS;
    out->assignor = KS_ASSIGNOR_RANGE;
    out->isolation_level = KS_READ_UNCOMMITTED;
    out->start_ns = 0;
    out->start_jitter_ns = 100 * MS; /* ksim: start.jitter = 100ms */
    out->output_topic_index = -1;
    out->output_producer_index = -1;
}
