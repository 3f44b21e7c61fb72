/*
** sim/kafka_versions.c: the `kafka.version` table ([scenario] kafka.version).
**
** One row per Kafka minor line from 0.10 to 4.1. A row gives, for the keys
** whose Kafka default changed over those releases, the text the key gets when
** a scenario file does not write it, and the behaviours ksim switches by
** version (truncation mode, the 3.7 min-ISR high-watermark rule, Eligible
** Leader Replicas), in the same form: a [cluster] key of ksim's model. So a
** preset is nothing but a different default: the scenario loader asks
** ks_kafka_version_preset() before it falls back to the key table's default
** (sim/scenario.c key_text), which is why a key written in the file or given
** by --set always wins, and why every preset is checked by the same parser
** and ranges as a written value (the sim/kafka_versions suite loads every row).
**
** Invariants (tests/sim/test_kafka_versions.c):
**   V1  Exactly one row is the default, and it is Kafka 4.0; its presets are
**       the key table's defaults, so a scenario without kafka.version loads
**       exactly as before the table existed.
**   V2  Rows are in release order and names are unique.
**   V3  Every preset parses for its key and satisfies the cross-key rules
**       (heartbeat below session timeout, fetch wait below replica lag).
**
** Columns described but not switched: the controller (ZooKeeper before 4.0,
** KRaft from 4.0) and the null-key partitioner. `controller = zookeeper`
** (core/zk.c, core/zk_controller.c) is modelled, but no row presets it: a
** row that did would change the trace of every scenario that names that
** kafka.version (the controller becomes a broker, elections wait for
** ZooKeeper's session expiry), so a scenario asks for it explicitly. Each
** row presets zookeeper.session.timeout.ms (6000 before 2.5, 18000 from
** KIP-537) for that model, and the ZooKeeper rows still give ksim's KRaft-like
** controller ZooKeeper's session timeout (pinged every third of it) as
** broker.session.timeout.ms and broker.heartbeat.interval.ms, as before.
** The quick-restart rule of the ZooKeeper era (a restarted broker keeps its
** ISR memberships) comes with replication.truncation = high-watermark, so
** only the 0.10 row has it (see core/controller.c).
**
** Sources: each row's `sources` (docs/upgrade.html of Kafka's tree, the
** ProducerConfig, ConsumerConfig and KafkaConfig defaults at each release
** tag, KIPs and JIRA issues); docs/kafka-versions.md prints them.
*/
#include "kafka_versions.h"

#include "../core/base.h"

#include <glib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Producer defaults before KIP-679 (3.0): acks=1, no idempotence, no linger. */
#define PRODUCER_BEFORE_3_0 .acks = "1", .enable_idempotence = "false", .linger_ms = "0"
/* KIP-679 (3.0): acks=all and idempotence; linger.ms 0 until KIP-1030 (4.0). */
#define PRODUCER_FROM_3_0 .acks = "all", .enable_idempotence = "true", .linger_ms = "0"
/* ZooKeeper sessions before KIP-537 (2.5): 6 s; the client pings every 2 s. */
#define ZOOKEEPER_6S                                                             \
    .broker_session_timeout_ms = "6000", .broker_heartbeat_interval_ms = "2000", \
    .zookeeper_session_timeout_ms = "6000", .controller = KS_KAFKA_CONTROLLER_ZOOKEEPER
/* ZooKeeper sessions from KIP-537 (2.5): 18 s; pings every 6 s. */
#define ZOOKEEPER_18S                                                             \
    .broker_session_timeout_ms = "18000", .broker_heartbeat_interval_ms = "6000", \
    .zookeeper_session_timeout_ms = "18000", .controller = KS_KAFKA_CONTROLLER_ZOOKEEPER
/* KRaft broker sessions (broker.session.timeout.ms, broker.heartbeat.interval.ms). */
#define KRAFT_SESSIONS                                                           \
    .broker_session_timeout_ms = "9000", .broker_heartbeat_interval_ms = "2000", \
    .zookeeper_session_timeout_ms = "18000", .controller = KS_KAFKA_CONTROLLER_KRAFT
/* Leader-epoch truncation (KIP-101, 0.11), unclean election off, the initial rebalance delay. */
#define EPOCH_ERA                                                                        \
    .replication_truncation = "leader-epoch", .unclean_leader_election_enable = "false", \
    .group_initial_rebalance_delay_ms = "3000"
/* Before KAFKA-15583 (3.7): the HW advances whatever the ISR size; no ELR. */
/* KIP-951 leader discovery came in the same release (3.7). */
#define NO_HW_RULE                                                              \
    .hw_requires_min_isr = "false", .eligible_leader_replicas_enable = "false", \
    .client_leader_discovery = "false"
/* From KAFKA-15583 (3.7): no HW advance while the ISR is below min ISR; ELR off. */
#define HW_RULE                                                                \
    .hw_requires_min_isr = "true", .eligible_leader_replicas_enable = "false", \
    .client_leader_discovery = "true"
/* transaction.partition.verification.enable: KIP-890 part 1 came in 3.6
 * (default true, upgrade.html 3.6.0 notable changes); false on older rows.
 * transaction.version: the feature came with 4.0 (TransactionVersion TV_2,
 * bootstrapped with metadata.version 4.0-IV2), and a new 4.0 or 4.1 cluster
 * finalizes it at 2 (kafka.apache.org/40 operations/transaction-protocol:
 * "automatically enabled on the server since Apache Kafka 4.0"); 0 before.
 * client.txn.group.metadata: KIP-447's TxnOffsetCommit v3 with member id and
 * generation came with 2.5; false on older rows. */
/* Client-side leader epochs (KIP-320, 2.1): position validation, epoch checks. */
#define NO_CLIENT_EPOCHS .client_leader_epochs = "false"
#define CLIENT_EPOCHS    .client_leader_epochs = "true"

#define UPG(anchor) "upgrade.html `#upgrade_" anchor "_notable`"
#define TAGS        "defaults at the release tags (ProducerConfig, ConsumerConfig, KafkaConfig)"

/* Notes shared by rows. */
#define NOTE_ZOOKEEPER                                                                    \
    "ZooKeeper controller: ksim runs its KRaft-like controller with ZooKeeper's session " \
    "timeout; a quick restart is fenced as in KRaft (see the 0.10 row for the old rule)."
#define NOTE_BEFORE_KIP_279                                                                    \
    " Leader-epoch truncation includes KIP-279's fix (2.0): the 0.11-1.1 divergence cases it " \
    "describes do not occur."
#define NOTE_ASSIGNOR_3_0                                                                      \
    " Consumers: Kafka's default [range, cooperative-sticky] behaves as range while a member " \
    "lacks cooperative-sticky; ksim runs range (no cooperative rebalancing)."
#define NOTE_IDEMPOTENCE_BUG                                                                  \
    " In 3.0.0 and 3.1.0 the idempotence default was not applied (KAFKA-13598); the row has " \
    "the fixed releases' behaviour."

/* clang-format off */
static const struct ks_kafka_version versions[] = {
    { .name = "0.10", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "false", .released = "2016-05", NO_CLIENT_EPOCHS, PRODUCER_BEFORE_3_0, .retries = "0",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "10000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "10000",
      .unclean_leader_election_enable = "true", .group_initial_rebalance_delay_ms = "0",
      ZOOKEEPER_6S, .replication_truncation = "high-watermark", .hw_requires_min_isr = "false", .client_leader_discovery = "false",
      .eligible_leader_replicas_enable = "false", .null_key_partitioner = "round-robin",
      .notes = "The 0.10.2 values (0.10.0 had consumer session.timeout.ms 30000). High-watermark "
               "truncation also brings the ZooKeeper-era restart rule: a quickly restarted broker "
               "keeps its ISR memberships. No idempotent producer before 0.11 (KIP-98): an "
               "explicit enable.idempotence = true still runs ksim's. No "
               "group.initial.rebalance.delay.ms before 0.11 (KIP-134): 0.",
      .sources = UPG("1010") " (session.timeout.ms 10 s), " UPG("1100") " (what 0.11 changed); "
                 TAGS " 0.10.2.2" },
    { .name = "0.11", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "false", .released = "2017-06", NO_CLIENT_EPOCHS, PRODUCER_BEFORE_3_0, .retries = "0",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "10000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "10000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_6S, .null_key_partitioner = "round-robin",
      .notes = NOTE_ZOOKEEPER NOTE_BEFORE_KIP_279,
      .sources = UPG("1100") " (unclean.leader.election.enable false, "
                 "group.initial.rebalance.delay.ms); KIP-101 (leader epochs), KIP-98 "
                 "(idempotence); " TAGS " 0.11.0.2" },
    { .name = "1.0", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "false", .released = "2017-11", NO_CLIENT_EPOCHS, PRODUCER_BEFORE_3_0, .retries = "0",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "10000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "10000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_6S, .null_key_partitioner = "round-robin",
      .notes = NOTE_ZOOKEEPER NOTE_BEFORE_KIP_279,
      .sources = "as 0.11; " TAGS " 1.0.2" },
    { .name = "1.1", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "false", .released = "2018-03", NO_CLIENT_EPOCHS, PRODUCER_BEFORE_3_0, .retries = "0",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "10000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "10000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_6S, .null_key_partitioner = "round-robin",
      .notes = NOTE_ZOOKEEPER NOTE_BEFORE_KIP_279,
      .sources = "as 0.11; " TAGS " 1.1.1" },
    { .name = "2.0", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "false", .released = "2018-07", NO_CLIENT_EPOCHS, PRODUCER_BEFORE_3_0, .retries = "0",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "10000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "10000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_6S, .null_key_partitioner = "round-robin", .notes = NOTE_ZOOKEEPER,
      .sources = "KIP-279 (leader-epoch truncation fixed); " TAGS " 2.0.1" },
    { .name = "2.1", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "false", .released = "2018-11", CLIENT_EPOCHS, PRODUCER_BEFORE_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "10000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "10000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_6S, .null_key_partitioner = "round-robin", .notes = NOTE_ZOOKEEPER,
      .sources = UPG("210") " (retries Integer.MAX_VALUE with KIP-91's delivery.timeout.ms); "
                 TAGS " 2.1.1" },
    { .name = "2.2", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "false", .released = "2019-03", CLIENT_EPOCHS, PRODUCER_BEFORE_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "10000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "10000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_6S, .null_key_partitioner = "round-robin", .notes = NOTE_ZOOKEEPER,
      .sources = "as 2.1; " TAGS " 2.2.2" },
    { .name = "2.3", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "false", .released = "2019-06", CLIENT_EPOCHS, PRODUCER_BEFORE_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "10000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "10000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_6S, .null_key_partitioner = "round-robin", .notes = NOTE_ZOOKEEPER,
      .sources = "as 2.1; " TAGS " 2.3.1" },
    { .name = "2.4", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "false", .released = "2019-12", CLIENT_EPOCHS, PRODUCER_BEFORE_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "10000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "10000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_6S, .null_key_partitioner = "sticky (KIP-480)",
      .notes = NOTE_ZOOKEEPER " Null keys: ksim runs KIP-794's uniform sticky partitioner for "
               "every line.",
      .sources = UPG("240") " (KIP-480 sticky partitioner, KIP-429 cooperative-sticky "
                 "assignor); " TAGS " 2.4.1" },
    { .name = "2.5", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "true", .released = "2020-04", CLIENT_EPOCHS, PRODUCER_BEFORE_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "10000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "30000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_18S, .null_key_partitioner = "sticky (KIP-480)", .notes = NOTE_ZOOKEEPER,
      .sources = UPG("250") " (zookeeper.session.timeout.ms 18 s and replica.lag.time.max.ms "
                 "30 s, KIP-537; KIP-447's group metadata in TxnOffsetCommit); " TAGS " 2.5.1" },
    { .name = "2.6", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "true", .released = "2020-07", CLIENT_EPOCHS, PRODUCER_BEFORE_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "10000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "30000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_18S, .null_key_partitioner = "sticky (KIP-480)", .notes = NOTE_ZOOKEEPER,
      .sources = "as 2.5; " TAGS " 2.6.3" },
    { .name = "2.7", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "true", .released = "2020-12", CLIENT_EPOCHS, PRODUCER_BEFORE_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "10000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "30000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_18S, .null_key_partitioner = "sticky (KIP-480)", .notes = NOTE_ZOOKEEPER,
      .sources = "as 2.5 (followers truncate through the fetch path from IBP 2.7, as ksim "
                 "does for every leader-epoch line); " TAGS " 2.7.2" },
    { .name = "2.8", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "true", .released = "2021-04", CLIENT_EPOCHS, PRODUCER_BEFORE_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "10000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "30000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_18S, .null_key_partitioner = "sticky (KIP-480)",
      .notes = NOTE_ZOOKEEPER " KRaft is early access (KIP-500).",
      .sources = UPG("280") "; " TAGS " 2.8.2" },
    { .name = "3.0", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "true", .released = "2021-09", CLIENT_EPOCHS, PRODUCER_FROM_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "45000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "30000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_18S, .null_key_partitioner = "sticky (KIP-480)",
      .notes = NOTE_ZOOKEEPER NOTE_ASSIGNOR_3_0 NOTE_IDEMPOTENCE_BUG,
      .sources = UPG("300") " (KIP-679 acks=all and idempotence, KIP-735 session.timeout.ms "
                 "45 s), " UPG("301") " (KAFKA-13598); " TAGS " 3.0.2" },
    { .name = "3.1", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "true", .released = "2022-01", CLIENT_EPOCHS, PRODUCER_FROM_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "45000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "30000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_18S, .null_key_partitioner = "sticky (KIP-480)",
      .notes = NOTE_ZOOKEEPER NOTE_ASSIGNOR_3_0 NOTE_IDEMPOTENCE_BUG,
      .sources = "as 3.0, " UPG("311") "; " TAGS " 3.1.2" },
    { .name = "3.2", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "true", .released = "2022-05", CLIENT_EPOCHS, PRODUCER_FROM_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "45000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "30000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_18S, .null_key_partitioner = "sticky (KIP-480)",
      .notes = NOTE_ZOOKEEPER NOTE_ASSIGNOR_3_0,
      .sources = "as 3.0; " TAGS " 3.2.3" },
    { .name = "3.3", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "true", .released = "2022-09", CLIENT_EPOCHS, PRODUCER_FROM_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "45000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "30000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_18S, .null_key_partitioner = "uniform sticky (KIP-794)",
      .notes = NOTE_ZOOKEEPER " KRaft is production-ready for new clusters (KIP-833); this row "
               "follows the ZooKeeper deployment." NOTE_ASSIGNOR_3_0,
      .sources = "KIP-794 (uniform sticky partitioner), KIP-833; " TAGS " 3.3.2" },
    { .name = "3.4", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "true", .released = "2023-01", CLIENT_EPOCHS, PRODUCER_FROM_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "45000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "30000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_18S, .null_key_partitioner = "uniform sticky (KIP-794)",
      .notes = NOTE_ZOOKEEPER NOTE_ASSIGNOR_3_0,
      .sources = "as 3.3; " TAGS " 3.4.1" },
    { .name = "3.5", .txn_partition_verification_enable = "false", .transaction_version = "0", .client_txn_group_metadata = "true", .released = "2023-06", CLIENT_EPOCHS, PRODUCER_FROM_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "45000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "30000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_18S, .null_key_partitioner = "uniform sticky (KIP-794)",
      .notes = NOTE_ZOOKEEPER " ZooKeeper mode is deprecated." NOTE_ASSIGNOR_3_0,
      .sources = UPG("350") "; " TAGS " 3.5.2" },
    { .name = "3.6", .txn_partition_verification_enable = "true", .transaction_version = "0", .client_txn_group_metadata = "true", .released = "2023-09", CLIENT_EPOCHS, PRODUCER_FROM_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "100", .session_timeout_ms = "45000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "30000", EPOCH_ERA,
      NO_HW_RULE, ZOOKEEPER_18S, .null_key_partitioner = "uniform sticky (KIP-794)",
      .notes = NOTE_ZOOKEEPER NOTE_ASSIGNOR_3_0,
      .sources = UPG("360") " (KIP-890 transaction.partition.verification.enable, on); "
                 TAGS " 3.6.2" },
    { .name = "3.7", .txn_partition_verification_enable = "true", .transaction_version = "0", .client_txn_group_metadata = "true", .released = "2024-02", CLIENT_EPOCHS, PRODUCER_FROM_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "1000", .session_timeout_ms = "45000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "30000", EPOCH_ERA, HW_RULE, ZOOKEEPER_18S,
      .null_key_partitioner = "uniform sticky (KIP-794)",
      .notes = NOTE_ZOOKEEPER " The ELR code of KIP-966 is in, but cannot be enabled before "
               "metadata version 4.0-IV1." NOTE_ASSIGNOR_3_0,
      .sources = "KAFKA-15583 (no HW advance under min ISR, commit edc7e10a745 in tag 3.7.0), "
                 "KIP-580 (retry.backoff.max.ms, exponential backoff); " TAGS " 3.7.1" },
    { .name = "3.8", .txn_partition_verification_enable = "true", .transaction_version = "0", .client_txn_group_metadata = "true", .released = "2024-07", CLIENT_EPOCHS, PRODUCER_FROM_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "1000", .session_timeout_ms = "45000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "30000", EPOCH_ERA, HW_RULE, ZOOKEEPER_18S,
      .null_key_partitioner = "uniform sticky (KIP-794)",
      .notes = NOTE_ZOOKEEPER NOTE_ASSIGNOR_3_0,
      .sources = "as 3.7; kafka-topics.sh prints Elr and LastKnownElr; " TAGS " 3.8.0" },
    { .name = "3.9", .txn_partition_verification_enable = "true", .transaction_version = "0", .client_txn_group_metadata = "true", .released = "2024-11", CLIENT_EPOCHS, PRODUCER_FROM_3_0, .retries = "2147483647",
      .retry_backoff_max_ms = "1000", .session_timeout_ms = "45000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "30000", EPOCH_ERA, HW_RULE, ZOOKEEPER_18S,
      .null_key_partitioner = "uniform sticky (KIP-794)",
      .notes = NOTE_ZOOKEEPER " The last line with ZooKeeper mode." NOTE_ASSIGNOR_3_0,
      .sources = UPG("390") "; as 3.7" },
    { .name = "4.0", .txn_partition_verification_enable = "true", .transaction_version = "2", .client_txn_group_metadata = "true", .released = "2025-03", CLIENT_EPOCHS, .is_default = true, .acks = "all",
      .enable_idempotence = "true", .linger_ms = "5", .retries = "2147483647",
      .retry_backoff_max_ms = "1000", .session_timeout_ms = "45000",
      .partition_assignment_strategy = "range", .replica_lag_time_max_ms = "30000", EPOCH_ERA, HW_RULE, KRAFT_SESSIONS,
      .null_key_partitioner = "uniform sticky (KIP-794)",
      .notes = "ksim's default. KRaft only (ZooKeeper removed, KIP-833). ELR is available and "
               "off (feature eligible.leader.replicas.version = 0). transaction.version 2, as "
               "for a new cluster (an upgraded one keeps its level until it is raised)."
               NOTE_ASSIGNOR_3_0,
      .sources = UPG("400") ", KIP-1030 (linger.ms 5), KIP-890 part 2 (transaction.version 2, "
                 "kafka.apache.org/40 operations/transaction-protocol), kafka.apache.org/40 "
                 "operations/eligible-leader-replicas" },
    { .name = "4.1", .txn_partition_verification_enable = "true", .transaction_version = "2", .client_txn_group_metadata = "true", .released = "2025-09", CLIENT_EPOCHS, .acks = "all", .enable_idempotence = "true",
      .linger_ms = "5", .retries = "2147483647", .retry_backoff_max_ms = "1000",
      .session_timeout_ms = "45000", .partition_assignment_strategy = "range",
      .replica_lag_time_max_ms = "30000", EPOCH_ERA, .hw_requires_min_isr = "true", .client_leader_discovery = "true",
      .eligible_leader_replicas_enable = "true", KRAFT_SESSIONS,
      .null_key_partitioner = "uniform sticky (KIP-794)",
      .notes = "As 4.0 with Eligible Leader Replicas on, as for a new 4.1 cluster (an upgraded "
               "one keeps the feature off until it is enabled)." NOTE_ASSIGNOR_3_0,
      .sources = "KIP-966, kafka.apache.org/41 operations/eligible-leader-replicas (ELR on by "
                 "default for new clusters)" },
};
/* clang-format on */

/* Which row field gives which key. */
#define COL(field) offsetof(struct ks_kafka_version, field)

static const struct {
    const char *section;
    const char *key;
    size_t offset;
} columns[] = {
    { "producer", "acks", COL(acks) },
    { "producer", "enable.idempotence", COL(enable_idempotence) },
    { "producer", "retries", COL(retries) },
    { "producer", "linger.ms", COL(linger_ms) },
    { "producer", "retry.backoff.max.ms", COL(retry_backoff_max_ms) },
    { "consumer", "session.timeout.ms", COL(session_timeout_ms) },
    { "consumer", "partition.assignment.strategy", COL(partition_assignment_strategy) },
    { "cluster", "replica.lag.time.max.ms", COL(replica_lag_time_max_ms) },
    { "cluster", "unclean.leader.election.enable", COL(unclean_leader_election_enable) },
    { "cluster", "group.initial.rebalance.delay.ms", COL(group_initial_rebalance_delay_ms) },
    { "cluster", "broker.session.timeout.ms", COL(broker_session_timeout_ms) },
    { "cluster", "broker.heartbeat.interval.ms", COL(broker_heartbeat_interval_ms) },
    { "cluster", "zookeeper.session.timeout.ms", COL(zookeeper_session_timeout_ms) },
    { "cluster", "replication.truncation", COL(replication_truncation) },
    { "cluster", "hw.requires.min.insync.replicas", COL(hw_requires_min_isr) },
    { "cluster", "eligible.leader.replicas.enable", COL(eligible_leader_replicas_enable) },
    { "cluster", "client.leader.epochs", COL(client_leader_epochs) },
    { "cluster", "client.leader.discovery", COL(client_leader_discovery) },
    { "cluster", "transaction.partition.verification.enable",
      COL(txn_partition_verification_enable) },
    { "cluster", "transaction.version", COL(transaction_version) },
    { "cluster", "client.txn.group.metadata", COL(client_txn_group_metadata) },
};

static const char *column_text(const struct ks_kafka_version *version, size_t column)
{
    return *(const char *const *)((const char *)version + columns[column].offset);
}

const struct ks_kafka_version *ks_kafka_versions(size_t *count)
{
    *count = KS_ARRAY_COUNT(versions);
    return versions;
}

const struct ks_kafka_version *ks_kafka_version_default(void)
{
    for (size_t i = 0; i < KS_ARRAY_COUNT(versions); i++) {
        if (versions[i].is_default) {
            return &versions[i];
        }
    }
    ks_assert(!"no default Kafka version"); /* V1 */
    return NULL;
}

/* Splits "3.7.1" into numbers; false unless it is 2 to 4 dot-separated
 * decimal numbers of at most 4 digits each. */
static bool version_numbers(const char *text, uint32_t *numbers, size_t *count)
{
    *count = 0;
    const char *p = text;
    for (;;) {
        size_t digits = strspn(p, "0123456789");
        if (digits == 0 || digits > 4 || *count == 4) {
            return false;
        }
        numbers[(*count)++] = (uint32_t)strtoul(p, NULL, 10);
        p += digits;
        if (*p == '\0') {
            break;
        }
        if (*p != '.') {
            return false;
        }
        p++;
    }
    return *count >= 2;
}

const struct ks_kafka_version *ks_kafka_version_find(const char *text)
{
    uint32_t numbers[4];
    size_t count = 0;
    if (!version_numbers(text, numbers, &count)) {
        return NULL;
    }
    /* Before 1.0 a release was 0.MINOR.PATCH.HOTFIX (0.10.2.1); from 1.0 on
     * MAJOR.MINOR.PATCH. Either way the first two numbers name the line. */
    if (numbers[0] > 0 && count > 3) {
        return NULL;
    }
    char line[32];
    g_snprintf(line, sizeof line, "%u.%u", numbers[0], numbers[1]);
    for (size_t i = 0; i < KS_ARRAY_COUNT(versions); i++) {
        if (strcmp(versions[i].name, line) == 0) {
            return &versions[i];
        }
    }
    return NULL;
}

char *ks_kafka_version_names(void)
{
    GString *text = g_string_new(NULL);
    for (size_t i = 0; i < KS_ARRAY_COUNT(versions); i++) {
        g_string_append_printf(text, "%s%s", i > 0 ? ", " : "", versions[i].name);
    }
    return g_string_free(text, FALSE);
}

const char *ks_kafka_version_preset(const struct ks_kafka_version *version, const char *section,
                                    const char *key)
{
    for (size_t c = 0; c < KS_ARRAY_COUNT(columns); c++) {
        if (strcmp(columns[c].section, section) == 0 && strcmp(columns[c].key, key) == 0) {
            return column_text(version, c);
        }
    }
    return NULL;
}

const char *ks_kafka_controller_name(enum ks_kafka_controller controller)
{
    switch (controller) {
    case KS_KAFKA_CONTROLLER_ZOOKEEPER: return "zookeeper";
    case KS_KAFKA_CONTROLLER_KRAFT: return "kraft";
    }
    return "?";
}

/* A Markdown cell: '|' escaped. */
static void cell(FILE *out, const char *text)
{
    fputs(" ", out);
    for (const char *p = text != NULL ? text : "-"; *p != '\0'; p++) {
        if (*p == '|') {
            fputs("\\|", out);
        } else {
            fputc(*p, out);
        }
    }
    fputs(" |", out);
}

void ks_kafka_versions_write_table(FILE *out)
{
    /* The defaults, one column per key. */
    fputs("| kafka.version | released |", out);
    for (size_t c = 0; c < KS_ARRAY_COUNT(columns); c++) {
        fprintf(out, " [%s] `%s` |", columns[c].section, columns[c].key);
    }
    fputs(" Kafka's controller | null-key partitioner |\n|", out);
    for (size_t c = 0; c < KS_ARRAY_COUNT(columns) + 4; c++) {
        fputs(" --- |", out);
    }
    fputc('\n', out);
    for (size_t i = 0; i < KS_ARRAY_COUNT(versions); i++) {
        const struct ks_kafka_version *v = &versions[i];
        fprintf(out, "| `%s`%s |", v->name, v->is_default ? " (default)" : "");
        cell(out, v->released);
        for (size_t c = 0; c < KS_ARRAY_COUNT(columns); c++) {
            cell(out, column_text(v, c));
        }
        cell(out, ks_kafka_controller_name(v->controller));
        cell(out, v->null_key_partitioner);
        fputc('\n', out);
    }
    /* What each row stands for, and where its values come from. */
    fputs("\n| kafka.version | what ksim does for it | sources |\n| --- | --- | --- |\n", out);
    for (size_t i = 0; i < KS_ARRAY_COUNT(versions); i++) {
        const struct ks_kafka_version *v = &versions[i];
        fprintf(out, "| `%s` |", v->name);
        cell(out, v->notes);
        cell(out, v->sources);
        fputc('\n', out);
    }
}
