/*
** sim/kafka_versions.h: the `kafka.version` table. One row per Kafka minor
** line (0.10 .. 4.1) with the defaults that changed between them and the
** behaviours ksim switches by version; the design block and the rows are in
** sim/kafka_versions.c, docs/kafka-versions.md is generated from them.
*/
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Which controller a Kafka line ran (its default deployment). */
enum ks_kafka_controller {
    KS_KAFKA_CONTROLLER_ZOOKEEPER, /* brokers registered in ZooKeeper, one elected controller */
    KS_KAFKA_CONTROLLER_KRAFT      /* the KRaft quorum controller (KIP-500, KIP-833) */
};

/* One row. Every default is the text a scenario file would write for the
 * key (it goes through the key table's parser and range checks like a
 * written value); NULL where the row does not set the key (the key table's
 * default applies). Static storage. */
struct ks_kafka_version {
    const char *name;     /* the minor line, "3.7"; patch forms "3.7.1" map to it */
    const char *released; /* month of its x.y.0 release, "2024-02" */
    bool is_default;      /* the line ksim follows when kafka.version is not given */
    /* [producer] */
    const char *acks;
    const char *enable_idempotence;
    const char *retries;
    const char *linger_ms;
    const char *retry_backoff_max_ms;
    /* [consumer] */
    const char *session_timeout_ms;
    const char *partition_assignment_strategy;
    /* [cluster] */
    const char *replica_lag_time_max_ms;
    const char *unclean_leader_election_enable;
    const char *group_initial_rebalance_delay_ms;
    const char *broker_session_timeout_ms; /* ZooKeeper lines: zookeeper.session.timeout.ms */
    const char *broker_heartbeat_interval_ms;
    const char *zookeeper_session_timeout_ms; /* controller = zookeeper */
    /* behaviours ([cluster] keys of ksim's model) */
    const char *replication_truncation;
    const char *hw_requires_min_isr;
    const char *eligible_leader_replicas_enable;
    const char *client_leader_epochs;              /* KIP-320 clients (2.1) */
    const char *client_leader_discovery;           /* KIP-951 (3.7) */
    const char *txn_partition_verification_enable; /* KIP-890 part 1 (3.6) */
    const char *transaction_version;               /* KIP-890 part 2 (4.0) */
    const char *client_txn_group_metadata;         /* KIP-447 (2.5) */
    /* behaviours described, not switched (yet) */
    enum ks_kafka_controller controller;
    const char *null_key_partitioner;
    const char *notes;   /* what ksim does differently for this line, Markdown */
    const char *sources; /* where the row's values come from, Markdown */
};

/* The rows in release order; *count is set. Static storage. */
const struct ks_kafka_version *ks_kafka_versions(size_t *count);

/* The row ksim follows without kafka.version (Kafka 4.0). */
const struct ks_kafka_version *ks_kafka_version_default(void);

/* The row for a version as a user writes it: a minor line ("3.7", "0.10") or
 * a release of it ("3.7.1", "0.10.2.1", "4.0.0"). NULL for anything else
 * (a line ksim does not know, a malformed text). */
const struct ks_kafka_version *ks_kafka_version_find(const char *text);

/* "0.10, 0.11, 1.0, ..., 4.1": the known lines, for messages. Owned: g_free. */
char *ks_kafka_version_names(void);

/* The default text `version` gives `key` of a section ("cluster",
 * "producer", "consumer"), or NULL when the row leaves it to the key table.
 * Static storage. */
const char *ks_kafka_version_preset(const struct ks_kafka_version *version, const char *section,
                                    const char *key);

/* Writes the Markdown table of every row (docs/kafka-versions.md holds exactly
 * this between its "generated" markers). */
void ks_kafka_versions_write_table(FILE *out);

/* The controller's name as a scenario file writes it: "zookeeper", "kraft". */
const char *ks_kafka_controller_name(enum ks_kafka_controller controller);
