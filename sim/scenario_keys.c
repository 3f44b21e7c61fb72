/*
** sim/scenario_keys.c: the one key table per section of a scenario file,
** value parsing with units, and the generated key reference.
**
** Every key of [scenario], [cluster], [topic], [producer] and [consumer] is a
** row here: name, type (which fixes the unit), range, default as text, the
** destination field, and a line of documentation. The loader applies the
** default text through the same parser as a written value, so the documented
** default and the effective one cannot differ. [fault] keys are rows too
** (durations and integers typed and range-checked here; the others CUSTOM:
** scenario.c parses them, because their meaning depends on the action);
** [expect] keys are the metric names of SPEC section 5.
**
** Units are converted once, here: durations to ns, Kafka's *.ms keys to ns,
** sizes to bytes. Decimal durations and sizes ("1.5s", "0.5KiB") are exact:
** the fraction is reduced by its gcd with the power of ten and must divide the
** unit, so "1.5ns" is an error instead of a rounded value (no floats). Numbers
** are plain decimals: no sign '+', exponent, hex, nan or inf.
**
** Ranges keep the model's arithmetic safe at both ends; the unit suite runs
** every numeric key at its minimum and maximum under UBSan ("extreme values
** run" in tests/sim/test_scenario.c). What each kind of key goes through:
**   - times within a run (duration, client starts, fault at, delay,
**     restart.after, duration) are at most RUN_NS_MAX (720h, 2.6e15 ns); the
**     scheduler adds them to the clock (uint64 ns) and faults add two of
**     them, which stays below 2^53;
**   - latencies (network.latency and .A-B, jitter, fsync, the slow fault's
**     disk.latency and network.latency) are at most 1h: a message adds up to
**     four of them (link, jitter, both ends' slow delay);
**   - Kafka *.ms keys become ms * 10^6 ns; a value above INT64_MAX / 10^6 ms
**     becomes KS_INT64_UNSET ("never"). As a timer delay it is added to the
**     clock in uint64, where now + INT64_MAX still fits (the timer never
**     fires); otherwise the model compares it or divides it back to ms;
**     *.seconds are at most 10^9 s;
**   - sizes are int32 where Kafka's are (file positions in a segment are
**     int32 in Kafka's index, hence position.bytes <= INT32_MAX); int64 sizes
**     (retention.bytes, buffer.memory) are only compared with totals;
**   - rate is at most 10^8/s, so the interval 10^9 / rate ns is >= 10 ns;
**     disk.bandwidth may be anything: transfer times are computed in 128 bits;
**   - batch.size >= 1: the producer needs a positive batch size (Kafka's 0,
**     one record per batch, is what 1 does).
*/
#include "scenario_int.h"

#include "fault_actions.h"

#include "../core/base.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- choices ------------------------------------------------------------ */

static const struct ks__choice acks_choices[] = { { "all", KS_ACKS_ALL },
                                                  { "-1", KS_ACKS_ALL },
                                                  { "0", KS_ACKS_NONE },
                                                  { "1", KS_ACKS_LEADER },
                                                  { NULL, 0 } };
static const struct ks__choice truncation_choices[] = {
    { "leader-epoch", KS_TRUNCATION_LEADER_EPOCH },
    { "high-watermark", KS_TRUNCATION_HIGH_WATERMARK },
    { NULL, 0 }
};
static const struct ks__choice controller_choices[] = { { "kraft", KS_CONTROLLER_MODEL_KRAFT },
                                                        { "zookeeper",
                                                          KS_CONTROLLER_MODEL_ZOOKEEPER },
                                                        { NULL, 0 } };
static const struct ks__choice commit_choices[] = { { "before-process", KS_COMMIT_BEFORE_PROCESS },
                                                    { "after-process", KS_COMMIT_AFTER_PROCESS },
                                                    { "atomic", KS_COMMIT_ATOMIC },
                                                    { NULL, 0 } };
static const struct ks__choice reset_choices[] = { { "earliest", KS_RESET_EARLIEST },
                                                   { "latest", KS_RESET_LATEST },
                                                   { "none", KS_RESET_NONE },
                                                   { NULL, 0 } };
static const struct ks__choice isolation_choices[] = { { "read_uncommitted", KS_READ_UNCOMMITTED },
                                                       { "read_committed", KS_READ_COMMITTED },
                                                       { NULL, 0 } };
static const struct ks__choice task_phase_choices[] = { { "random", KS_TASK_PHASE_RANDOM },
                                                        { "aligned", KS_TASK_PHASE_ALIGNED },
                                                        { NULL, 0 } };
static const struct ks__choice assignor_choices[] = { { "range", KS_ASSIGNOR_RANGE },
                                                      { "roundrobin", KS_ASSIGNOR_ROUNDROBIN },
                                                      { "sticky", KS_ASSIGNOR_STICKY },
                                                      { NULL, 0 } };
/* cleanup.policy: bit 1 delete, bit 2 compact (KS__VALUE_ENUM into a scratch int
 * would lose the pair, so POLICY is stored by scenario.c; see cleanup_store). */
static const struct ks__choice policy_choices[] = {
    { "delete", 1 }, { "compact", 2 }, { "delete,compact", 3 }, { "compact,delete", 3 }, { NULL, 0 }
};

/* compression.type: the producer's codecs (CompressionType) and the topic's
 * and broker's values (BrokerCompressionType), with Kafka's gzip levels
 * (1..9 or -1, the Deflater default; 0 is refused as Kafka refuses it). */
static const struct ks__choice producer_codec_choices[] = {
    { "none", KS_CODEC_NONE }, { "gzip", KS_CODEC_GZIP }, { "snappy", KS_CODEC_SNAPPY },
    { "lz4", KS_CODEC_LZ4 },   { "zstd", KS_CODEC_ZSTD }, { NULL, 0 }
};
static const struct ks__choice topic_codec_choices[] = { { "producer", KS_COMPRESSION_PRODUCER },
                                                         { "uncompressed", KS_CODEC_NONE },
                                                         { "gzip", KS_CODEC_GZIP },
                                                         { "snappy", KS_CODEC_SNAPPY },
                                                         { "lz4", KS_CODEC_LZ4 },
                                                         { "zstd", KS_CODEC_ZSTD },
                                                         { NULL, 0 } };
static const struct ks__choice gzip_level_choices[] = { { "-1", -1 }, { "1", 1 }, { "2", 2 },
                                                        { "3", 3 },   { "4", 4 }, { "5", 5 },
                                                        { "6", 6 },   { "7", 7 }, { "8", 8 },
                                                        { "9", 9 },   { NULL, 0 } };

#define SC(field) offsetof(struct ks_scenario, field)
#define TO(field) offsetof(struct ks_topic_config, field)
#define PR(field) offsetof(struct ks_producer_config, field)
#define CO(field) offsetof(struct ks_consumer_config, field)

#define I32MAX  INT32_MAX
#define I64MAX  INT64_MAX
#define HOUR_NS (3600LL * 1000000000LL)
/* The longest run: duration's maximum. Times within a run (fault times,
 * delays, durations, client starts) are bounded by it, so that every sum
 * of two of them, and the final drain after them, stays far below INT64_MAX. */
#define RUN_NS_MAX (30 * 24 * HOUR_NS)
#define DAY_MS     (86400000LL)

/* ---- [scenario] ---------------------------------------------------------- */

static const struct ks__key_spec scenario_keys[] = {
    { "name", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "Scenario name (the run folder `runs/<name>-s<seed>-<hash>/`, the database). Default: "
      "the file name without folder and `.ini`." },
    { "description", KS__VALUE_STRING, 0, 0, "", NULL, SC(description), 0, NULL,
      "One line saying what the scenario shows." },
    { "seed", KS__VALUE_INT64, 0, I64MAX, "1", NULL, SC(seed), 0, NULL,
      "Default seed; `--seed` overrides it." },
    { "kafka.version", KS__VALUE_CUSTOM, 0, 0, "4.0", NULL, 0, 0, NULL,
      "The Kafka release whose defaults and behaviours the scenario runs with: a line from "
      "0.10 to 4.1 (`3.7`) or a release of it (`3.7.1`, `0.10.2.1`). It changes the defaults "
      "of the keys whose Kafka default changed (acks, enable.idempotence, linger.ms, retries, "
      "session timeouts, replica.lag.time.max.ms, unclean.leader.election.enable, ...) and "
      "ksim's behaviour keys (replication.truncation, hw.requires.min.insync.replicas, "
      "eligible.leader.replicas.enable); keys written in the file or given by `--set` win. "
      "docs/kafka-versions.md lists every line." },
    { "duration", KS__VALUE_DURATION, 1, RUN_NS_MAX, "60s", NULL, SC(duration_ns), 0, NULL,
      "Simulated time of the workload; the final read happens after it." },
    { "final.heal", KS__VALUE_BOOL, 0, 1, "true", NULL, SC(final_heal), 0, NULL,
      "At the end: stop producers, heal the network, restart what crashed, let replicas "
      "converge and groups drain, then read every partition from its leader." },
    { "final.drain", KS__VALUE_DURATION, 0, 24 * HOUR_NS, "60s", NULL, SC(final_drain_ns), 0, NULL,
      "Upper bound of simulated time for the final convergence and drain." },
    { "unavailable.threshold", KS__VALUE_DURATION, 1, HOUR_NS, "1s", NULL,
      SC(unavailable_threshold_ns), 0, NULL,
      "ksim: a partition counts in `produce_unavailable_ms` while some record sent to it has "
      "waited longer than this for its outcome." },
};

/* ---- [cluster] ------------------------------------------------------------ */

static const struct ks__key_spec cluster_keys[] = {
    { "brokers", KS__VALUE_INT32, 1, KS_BROKER_COUNT_MAX, "3", NULL, SC(cluster.broker_count), 0,
      NULL, "ksim: number of brokers, ids 1..N." },
    { "racks", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "ksim: one rack name per broker, comma separated (`a,b,c`): Kafka's `broker.rack` of "
      "each. Replica placement puts one replica per rack while racks remain; `rack(NAME)` "
      "targets a rack's brokers. Default: no racks." },
    { "controller", KS__VALUE_ENUM, 0, 0, "kraft", NULL, SC(cluster.controller_model), 0,
      controller_choices,
      "ksim: the controller's model. `kraft`: KRaft's controller (see `controllers`). "
      "`zookeeper`: the ZooKeeper-era controller (a ZooKeeper node with sessions; "
      "one broker is controller, elected through /controller with a controller epoch; "
      "leaders write ISR changes to ZooKeeper)." },
    { "controllers", KS__VALUE_INT32, 1, 5, "1", NULL, SC(cluster.controller_count), 0, NULL,
      "ksim: controller nodes of the KRaft quorum (1, 3 or 5), node ids brokers + 1 .. brokers + "
      "N (`controller(N)`). With 1, a crash of the controller is an outage: no fencing, leader "
      "elections or ISR changes until it returns. With 3 or 5 they run KRaft's protocol "
      "(votes, a leader, the `__cluster_metadata-0` log and its high watermark): the leader is "
      "the active controller and another one takes over when it fails. `controller = kraft` "
      "only." },
    { "controller.quorum.election.timeout.ms", KS__VALUE_MS, 1, I32MAX, "1000", NULL,
      SC(cluster.quorum_election_timeout_ns), 0, NULL,
      "controllers = 3 or 5: a voter without a leader runs for election after this plus a "
      "random part of it." },
    { "controller.quorum.fetch.timeout.ms", KS__VALUE_MS, 1, I32MAX, "2000", NULL,
      SC(cluster.quorum_fetch_timeout_ns), 0, NULL,
      "controllers = 3 or 5: a follower that has not heard from the leader this long runs for "
      "election; a leader that a majority has not fetched from in 1.5 times this resigns." },
    { "controller.quorum.election.backoff.max.ms", KS__VALUE_MS, 1, I32MAX, "1000", NULL,
      SC(cluster.quorum_election_backoff_ns_max), 0, NULL,
      "controllers = 3 or 5: the longest random backoff of a candidate that lost before it "
      "runs again." },
    { "controller.quorum.request.timeout.ms", KS__VALUE_MS, 1, I32MAX, "2000", NULL,
      SC(cluster.quorum_request_timeout_ns), 0, NULL,
      "controllers = 3 or 5: a follower's fetch unanswered this long (after the leader's "
      "long poll) is sent again." },
    { "controller.quorum.retry.backoff.ms", KS__VALUE_MS, 1, I32MAX, "20", NULL,
      SC(cluster.quorum_retry_backoff_ns), 0, NULL,
      "controllers = 3 or 5: the wait before a failed fetch is retried, and the unit of the "
      "election backoff." },
    { "network.latency", KS__VALUE_DURATION, 0, HOUR_NS, "1ms", NULL, SC(network_latency_ns), 0,
      NULL,
      "ksim: one-way latency of every link. Per link: `network.latency.A-B = 20ms` "
      "(brokers A and B, both ways)." },
    { "network.jitter", KS__VALUE_DURATION, 0, HOUR_NS, "100us", NULL, SC(network_jitter_ns), 0,
      NULL,
      "ksim: uniform extra delay in [0, jitter] per message, drawn per seed; never "
      "reorders one connection. `0s` for a scenario that needs an exact window." },
    { "disk.fsync.latency", KS__VALUE_DURATION, 0, HOUR_NS, "2ms", NULL, SC(disk_fsync_latency_ns),
      0, NULL, "ksim: simulated cost of one fsync." },
    { "disk.bandwidth", KS__VALUE_BANDWIDTH, 0, I64MAX, "500MiB", NULL,
      SC(disk_bandwidth_bytes_per_s), 0, NULL,
      "ksim: bytes per simulated second a disk reads or writes (`500MiB` or `500MiB/s`); "
      "0 = free." },
    { "disk.writeback.expire", KS__VALUE_DURATION_NEVER, 0, RUN_NS_MAX, "30s", NULL,
      SC(disk_writeback_expire_ns), 0, NULL,
      "ksim: the operating system writes a file's dirty data back (durable without fsync) "
      "once it has been dirty this long (Linux's vm.dirty_expire_centisecs, 3000); `never`: "
      "power loss drops everything not fsynced." },
    { "disk.writeback.interval", KS__VALUE_DURATION_NEVER, 10 * 1000000LL, RUN_NS_MAX, "5s", NULL,
      SC(disk_writeback_interval_ns), 0, NULL,
      "ksim: how often each broker's flusher looks for expired dirty data (Linux's "
      "vm.dirty_writeback_centisecs, 500); `never` turns writeback by age off." },
    { "disk.dirty.limit", KS__VALUE_SIZE64, 0, I64MAX, "2GiB", NULL, SC(disk_dirty_limit_bytes), 0,
      NULL,
      "ksim: dirty bytes per broker above which writes wait for writeback (Linux's "
      "vm.dirty_ratio, 20% of disk.page.cache); 0 = no limit." },
    { "disk.page.cache", KS__VALUE_SIZE64, 0, I64MAX, "10GiB", NULL, SC(disk_page_cache_bytes), 0,
      NULL,
      "ksim: page cache per broker (a 16 GiB machine less a 6 GiB heap); reads of data "
      "outside it cost the disk; 0 = unlimited." },
    { "replica.lag.time.max.ms", KS__VALUE_MS, 1, I64MAX, "30000", NULL,
      SC(cluster.replica_lag_ns_max), 0, NULL,
      "A follower not caught up for this long leaves the ISR (10000 before Kafka 2.5)." },
    { "replica.fetch.wait.max.ms", KS__VALUE_MS, 0, I32MAX, "500", NULL,
      SC(cluster.replica_fetch_wait_ns_max), 0, NULL,
      "Longest a follower's fetch waits at the leader; must be <= replica.lag.time.max.ms." },
    { "replica.fetch.min.bytes", KS__VALUE_SIZE32, 1, I32MAX, "1", NULL,
      SC(cluster.replica_fetch_min_bytes), 0, NULL, "Bytes a follower's fetch waits for." },
    { "replica.fetch.max.bytes", KS__VALUE_SIZE32, 0, I32MAX, "1048576", NULL,
      SC(cluster.replica_fetch_max_bytes), 0, NULL, "Bytes fetched per partition." },
    { "replica.fetch.response.max.bytes", KS__VALUE_SIZE32, 0, I32MAX, "10485760", NULL,
      SC(cluster.replica_fetch_response_max_bytes), 0, NULL, "Bytes per fetch response." },
    { "replica.fetch.backoff.ms", KS__VALUE_MS, 0, I32MAX, "1000", NULL,
      SC(cluster.replica_fetch_backoff_ns), 0, NULL, "Pause after a failed fetch." },
    { "replica.high.watermark.checkpoint.interval.ms", KS__VALUE_MS, 1, I64MAX, "5000", NULL,
      SC(cluster.replica_hw_checkpoint_interval_ns), 0, NULL,
      "How often the HW is written to replication-offset-checkpoint." },
    { "broker.session.timeout.ms", KS__VALUE_MS, 1, I32MAX, "9000", NULL,
      SC(cluster.broker_session_timeout_ns), 0, NULL,
      "A broker without heartbeat this long is fenced by the controller." },
    { "broker.heartbeat.interval.ms", KS__VALUE_MS, 1, I32MAX, "2000", NULL,
      SC(cluster.broker_heartbeat_interval_ns), 0, NULL,
      "Broker heartbeat period; must be < broker.session.timeout.ms." },
    { "zookeeper.session.timeout.ms", KS__VALUE_MS, 3, I32MAX, "18000", NULL,
      SC(cluster.zookeeper_session_timeout_ns), 0, NULL,
      "controller = zookeeper: a broker whose pings (every third of it) stop reaching "
      "ZooKeeper this long loses its session (6000 before Kafka 2.5, KIP-537)." },
    { "unclean.leader.election.enable", KS__VALUE_BOOL, 0, 1, "false", NULL,
      SC(cluster.unclean_leader_election_enable), 0, NULL,
      "Elect a replica outside the ISR when no ISR member is alive (true before 0.11)." },
    { "auto.leader.rebalance.enable", KS__VALUE_BOOL, 0, 1, "true", NULL,
      SC(cluster.auto_leader_rebalance_enable), 0, NULL,
      "Move leadership back to the preferred replica periodically." },
    { "controlled.shutdown.enable", KS__VALUE_BOOL, 0, 1, "true", NULL,
      SC(cluster.controlled_shutdown_enable), 0, NULL,
      "`action = stop`: the broker first asks the controller to move its leaderships and ISR "
      "memberships away (KRaft: heartbeats with WantShutDown) and stops when it is let go, "
      "or after 5 minutes; `false`: it stops at once, cleanly but with its leaderships." },
    { "leader.imbalance.check.interval.seconds", KS__VALUE_SECONDS, 1, 1000000000, "300", NULL,
      SC(cluster.leader_imbalance_check_interval_ns), 0, NULL,
      "Delay of the preferred-leader check after a leader moves off its preferred replica." },
    { "min.insync.replicas", KS__VALUE_INT32, 1, KS_REPLICATION_FACTOR_MAX, "1", NULL,
      SC(cluster.min_insync_replicas), 0, NULL,
      "Broker default of the topic setting (acks=all only), and the setting of "
      "`__consumer_offsets`: with 2 or more, commits are refused while its ISR is smaller." },
    { "default.replication.factor", KS__VALUE_INT32, 1, KS_REPLICATION_FACTOR_MAX, "1", NULL,
      SC(default_replication_factor), 0, NULL, "Replication factor of topics that set none." },
    { "num.partitions", KS__VALUE_INT32, 1, KS_SCENARIO_PARTITION_COUNT_MAX, "1", NULL,
      SC(num_partitions_default), 0, NULL, "Partition count of topics that set none." },
    { "log.segment.bytes", KS__VALUE_SIZE64, 14, I32MAX, "1073741824", NULL,
      SC(log_defaults.segment_bytes), 0, NULL, "Segment size that triggers a roll." },
    { "log.roll.ms", KS__VALUE_MS, 1, I64MAX, "604800000", NULL, SC(log_defaults.segment_ns), 0,
      NULL, "Segment age that triggers a roll (log.roll.hours = 168)." },
    { "log.index.interval.bytes", KS__VALUE_SIZE32, 0, I32MAX, "4096", NULL,
      SC(log_defaults.index_interval_bytes), 0, NULL, "Bytes between offset index entries." },
    { "log.index.size.max.bytes", KS__VALUE_SIZE32, 4, I32MAX, "10485760", NULL,
      SC(log_defaults.segment_index_bytes), 0, NULL, "Largest offset index; a full one rolls." },
    { "log.flush.interval.messages", KS__VALUE_INT64, 1, I64MAX, "9223372036854775807", NULL,
      SC(log_defaults.flush_messages), 0, NULL,
      "fsync after this many records; the default never does (page cache only)." },
    { "log.flush.interval.ms", KS__VALUE_MS, 0, I64MAX, "9223372036854775807", NULL,
      SC(log_defaults.flush_ns), 0, NULL,
      "fsync after this long; Kafka's unset is shown as Long.MAX_VALUE: never." },
    { "log.retention.ms", KS__VALUE_MS, -1, I64MAX, "604800000", NULL,
      SC(log_defaults.retention_ns), 0, NULL,
      "Delete segments older than this; -1 keeps forever (log.retention.hours = 168)." },
    { "log.retention.bytes", KS__VALUE_SIZE64, -1, I64MAX, "-1", NULL,
      SC(log_defaults.retention_bytes), 0, NULL, "Per-partition size limit; -1 = none." },
    { "log.cleanup.policy", KS__VALUE_ENUM, 0, 0, "delete", NULL, SC(log_defaults), 0,
      policy_choices, "`delete`, `compact` or `delete,compact`." },
    { "log.cleaner.delete.retention.ms", KS__VALUE_MS, 0, I64MAX, "86400000", NULL,
      SC(log_defaults.delete_retention_ns), 0, NULL, "How long compaction keeps tombstones." },
    { "log.cleaner.min.compaction.lag.ms", KS__VALUE_MS, 0, I64MAX, "0", NULL,
      SC(log_defaults.min_compaction_lag_ns), 0, NULL,
      "Records younger than this stay uncompacted." },
    { "log.cleaner.min.cleanable.ratio", KS__VALUE_RATIO, 0, 1000, "0.5", NULL,
      SC(log_defaults.min_cleanable_dirty_ratio_permille), 0, NULL,
      "Dirty share of a log that makes it eligible for compaction." },
    { "message.max.bytes", KS__VALUE_SIZE32, 0, I32MAX, "1048588", NULL,
      SC(log_defaults.max_message_bytes), 0, NULL, "Largest record batch a broker accepts." },
    { "log.retention.check.interval.ms", KS__VALUE_MS, 1, I64MAX, "300000", NULL,
      SC(cluster.retention_check_interval_ns), 0, NULL, "Period of the retention check." },
    { "log.flush.offset.checkpoint.interval.ms", KS__VALUE_MS, 1, I32MAX, "60000", NULL,
      SC(cluster.recovery_point_checkpoint_interval_ns), 0, NULL,
      "How often recovery-point-offset-checkpoint is written." },
    { "offsets.topic.num.partitions", KS__VALUE_INT32, 1, KS_SCENARIO_PARTITION_COUNT_MAX, "50",
      NULL, SC(cluster.offsets_topic_partition_count), 0, NULL,
      "Partitions of `__consumer_offsets`." },
    { "offsets.topic.replication.factor", KS__VALUE_INT32, 1, KS_REPLICATION_FACTOR_MAX, "3", NULL,
      SC(cluster.offsets_topic_replication_factor), 0, NULL,
      "Replication of `__consumer_offsets`; ksim caps it at the broker count." },
    { "transaction.state.log.num.partitions", KS__VALUE_INT32, 1, KS_SCENARIO_PARTITION_COUNT_MAX,
      "50", NULL, SC(cluster.txn_topic_partition_count), 0, NULL,
      "Partitions of `__transaction_state` (created when a producer sets transactional.id)." },
    { "transaction.state.log.replication.factor", KS__VALUE_INT32, 1, KS_REPLICATION_FACTOR_MAX,
      "3", NULL, SC(cluster.txn_topic_replication_factor), 0, NULL,
      "Replication of `__transaction_state`; ksim caps it at the broker count." },
    { "transaction.state.log.min.isr", KS__VALUE_INT32, 1, KS_REPLICATION_FACTOR_MAX, "2", NULL,
      SC(cluster.txn_topic_min_isr), 0, NULL,
      "min.insync.replicas of `__transaction_state` (capped at its replication factor): the "
      "coordinator's writes need this many in-sync replicas." },
    { "transaction.abort.timed.out.transaction.cleanup.interval.ms", KS__VALUE_MS, 1, I32MAX,
      "10000", NULL, SC(cluster.txn_abort_check_interval_ns), 0, NULL,
      "How often the transaction coordinator aborts transactions older than their "
      "transaction.timeout.ms." },
    { "transaction.partition.verification.enable", KS__VALUE_BOOL, 0, 1, "true", NULL,
      SC(cluster.txn_partition_verification_enable), 0, NULL,
      "KIP-890 part 1 (Kafka 3.6+): before appending a transactional batch that would start "
      "a transaction on a partition, the leader asks the transaction coordinator whether the "
      "partition is in the producer's ongoing transaction (AddPartitionsToTxn, verifyOnly) "
      "and refuses the batch with INVALID_TXN_STATE if not, so a late write cannot leave a "
      "transaction hanging. false gives Kafka before 3.6." },
    { "add.partitions.to.txn.retry.backoff.ms", KS__VALUE_MS, 1, I32MAX, "20", NULL,
      SC(cluster.add_partitions_retry_backoff_ns), 0, NULL,
      "KAFKA-18654 (Kafka 4.0, AddPartitionsToTxnConfig): with transaction.version 2, how "
      "long a partition leader waits before retrying its implicit add of a partition that "
      "the transaction coordinator refused with CONCURRENT_TRANSACTIONS (the previous "
      "transaction's markers are still going out)." },
    { "add.partitions.to.txn.retry.backoff.max.ms", KS__VALUE_MS, 1, I32MAX, "100", NULL,
      SC(cluster.add_partitions_retry_backoff_max_ns), 0, NULL,
      "KAFKA-18654 (Kafka 4.0): how long after its first attempt a partition leader keeps "
      "retrying an implicit add refused with CONCURRENT_TRANSACTIONS before it answers the "
      "producer's Produce with that error (as NOT_ENOUGH_REPLICAS, which the producer "
      "retries)." },
    { "producer.id.expiration.ms", KS__VALUE_MS, 1, I32MAX, "86400000", NULL,
      SC(cluster.producer_id_expiration_ns), 0, NULL,
      "KIP-854 (Kafka 3.4+): how long a leader keeps a producer's transaction verification "
      "entry (KIP-890 part 1) after creating it; an entry this old goes at the next "
      "producer.id.expiration.check.interval.ms check, and a batch verified under it is then "
      "refused with INVALID_TXN_STATE. ksim expires only verification entries, never a "
      "producer's idempotence state." },
    { "producer.id.expiration.check.interval.ms", KS__VALUE_MS, 1, I32MAX, "600000", NULL,
      SC(cluster.producer_id_expiration_check_interval_ns), 0, NULL,
      "How often a leader removes expired verification entries "
      "(UnifiedLog.removeExpiredProducers); ksim checks at every multiple of it since the "
      "simulation's start." },
    { "transaction.version", KS__VALUE_INT32, 0, 2, "2", NULL, SC(cluster.transaction_version), 0,
      NULL,
      "The cluster's finalized `transaction.version` feature (KIP-890, Kafka's "
      "TransactionVersion; 2 on a new Kafka 4.0 or 4.1 cluster, 0 on the `kafka.version` rows "
      "before 4.0). 2: every EndTxn bumps the producer epoch (the COMMIT or ABORT markers "
      "carry the bumped epoch and the producer uses it for its next transaction, so a late "
      "batch of an ended transaction is refused by its old epoch), and the producer sends no "
      "AddPartitionsToTxn for its data partitions: the partition leader adds the partition to "
      "the transaction at its first transactional Produce (AddPartitionsToTxn from the broker, "
      "not verifyOnly, whatever `transaction.partition.verification.enable` says). 0 and 1: "
      "the classic protocol (1 only changes the `__transaction_state` record format, which "
      "ksim does not model)." },
    { "offsets.commit.timeout.ms", KS__VALUE_MS, 1, I32MAX, "5000", NULL,
      SC(cluster.offsets_commit_timeout_ns), 0, NULL,
      "How long the group coordinator waits for a commit (or a group record) to reach "
      "every in-sync replica of `__consumer_offsets` before answering with an error." },
    { "group.initial.rebalance.delay.ms", KS__VALUE_MS, 0, I32MAX, "3000", NULL,
      SC(cluster.group_initial_rebalance_delay_ns), 0, NULL,
      "Delay of a new group's first rebalance; a member joining during it adds another "
      "whole delay (Kafka's InitialDelayedJoin), up to the rebalance timeout." },
    { "group.min.session.timeout.ms", KS__VALUE_MS, 0, I32MAX, "6000", NULL,
      SC(cluster.group_min_session_timeout_ns), 0, NULL,
      "The coordinator refuses a JoinGroup whose session.timeout.ms is shorter "
      "(INVALID_SESSION_TIMEOUT); the consumer stops." },
    { "group.max.session.timeout.ms", KS__VALUE_MS, 0, I32MAX, "1800000", NULL,
      SC(cluster.group_max_session_timeout_ns), 0, NULL,
      "The coordinator refuses a JoinGroup whose session.timeout.ms is longer "
      "(INVALID_SESSION_TIMEOUT); the consumer stops." },
    { "replication.truncation", KS__VALUE_ENUM, 0, 0, "leader-epoch", NULL, SC(cluster.truncation),
      0, truncation_choices,
      "ksim: `leader-epoch` (KIP-101/279, Kafka 0.11+) or `high-watermark` (before 0.11: "
      "a new follower truncates to its HW, which can lose data)." },
    { "broker.task.phase", KS__VALUE_ENUM, 0, 0, "random", NULL, SC(cluster.task_phase), 0,
      task_phase_choices,
      "ksim: when each broker's periodic tasks (heartbeat, ISR check, checkpoints, log "
      "retention, compaction and flush) first run: `random`, at a uniform point of their "
      "period drawn per seed (brokers did not start in the same nanosecond); `aligned`, all "
      "brokers in step (heartbeat at 0 s, the others one period in), for exact windows. The "
      "operating system's flusher (disk.writeback.interval) follows the same choice." },
    { "hw.requires.min.insync.replicas", KS__VALUE_BOOL, 0, 1, "true", NULL,
      SC(cluster.hw_requires_min_isr), 0, NULL,
      "ksim: the HW does not advance while the ISR is smaller than min.insync.replicas "
      "(Kafka 3.7+, KAFKA-15583); false gives the older behaviour." },
    { "client.leader.epochs", KS__VALUE_BOOL, 0, 1, "true", NULL, SC(cluster.client_leader_epochs),
      0, NULL,
      "ksim: client-side leader epochs (KIP-320, Kafka 2.1+): producers and consumers keep "
      "metadata whose leader epoch is older than the one they know, consumers send "
      "current_leader_epoch in fetches and, after a leader change, validate their position "
      "with OffsetsForLeaderEpoch, which detects a log truncated below it (an unclean "
      "election). false gives the older clients." },
    { "client.leader.discovery", KS__VALUE_BOOL, 0, 1, "true", NULL,
      SC(cluster.client_leader_discovery), 0, NULL,
      "ksim: leader discovery from error responses (KIP-951, Kafka 3.7+): a "
      "NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH answer to a produce or a fetch names the "
      "partition's new leader and epoch, and the client moves to it without waiting for a "
      "metadata round trip. false gives the older clients and brokers." },
    { "client.txn.group.metadata", KS__VALUE_BOOL, 0, 1, "true", NULL,
      SC(cluster.client_txn_group_metadata), 0, NULL,
      "ksim: a processor's TxnOffsetCommit carries its consumer's member id and generation "
      "(KIP-447, Kafka 2.5+: `sendOffsetsToTransaction` with ConsumerGroupMetadata, "
      "TxnOffsetCommit v3), so the group coordinator refuses the offsets of a member that "
      "lost its partitions (the processor aborts). false gives the clients before 2.5 (the "
      "`kafka.version` rows before it): no member check, and a processor ends its transaction "
      "even after it learned it was removed from its group, so a zombie's transactions commit "
      "(`scenarios/eos-zombie-processor-kafka-2.4.ini`)." },
    { "eligible.leader.replicas.enable", KS__VALUE_BOOL, 0, 1, "false", NULL,
      SC(cluster.eligible_leader_replicas_enable), 0, NULL,
      "Eligible Leader Replicas (KIP-966): the controller keeps replicas that left the ISR "
      "while it was below min.insync.replicas in the partition's ELR and elects from it when "
      "the ISR is empty, then the last known leader. Kafka 4.0 has it off, 4.1 on for new "
      "clusters. Needs replication.truncation = leader-epoch and "
      "hw.requires.min.insync.replicas = true." },
    { "compression.type", KS__VALUE_ENUM, 0, 0, "producer", NULL, SC(cluster.compression.codec), 0,
      topic_codec_choices,
      "Broker default of the topic setting: `producer` keeps the producer's codec, "
      "`uncompressed`, or a codec the leader recompresses to." },
    { "compression.gzip.level", KS__VALUE_ENUM, 0, 0, "-1", NULL,
      SC(cluster.compression.gzip_level), 0, gzip_level_choices,
      "Broker default gzip level when the broker recompresses (KIP-390); -1 = zlib's 6." },
    { "compression.lz4.level", KS__VALUE_INT32, KS_LZ4_LEVEL_MIN, KS_LZ4_LEVEL_MAX, "9", NULL,
      SC(cluster.compression.lz4_level), 0, NULL,
      "Broker default lz4 level when the broker recompresses (KIP-390)." },
    { "compression.zstd.level", KS__VALUE_INT32, KS_ZSTD_LEVEL_MIN, KS_ZSTD_LEVEL_MAX, "3", NULL,
      SC(cluster.compression.zstd_level), 0, NULL,
      "Broker default zstd level when the broker recompresses (KIP-390)." },
};

/* ---- [topic NAME] ----------------------------------------------------------- */

static const struct ks__key_spec topic_keys[] = {
    { "partitions", KS__VALUE_INT32, 1, KS_SCENARIO_PARTITION_COUNT_MAX, NULL, "num.partitions",
      TO(partition_count), 0, NULL, "Number of partitions." },
    { "replication.factor", KS__VALUE_INT32, 1, KS_REPLICATION_FACTOR_MAX, NULL,
      "default.replication.factor", TO(replication_factor), 0, NULL,
      "Replicas per partition; at most the broker count." },
    { "min.insync.replicas", KS__VALUE_INT32, 1, KS_REPLICATION_FACTOR_MAX, NULL,
      "min.insync.replicas", TO(min_insync_replicas), 0, NULL,
      "ISR size below which acks=all writes are refused; at most replication.factor." },
    { "unclean.leader.election.enable", KS__VALUE_BOOL, 0, 1, NULL,
      "unclean.leader.election.enable", TO(unclean_leader_election_enable), 0, NULL,
      "Topic override of the cluster setting." },
    { "cleanup.policy", KS__VALUE_ENUM, 0, 0, NULL, "log.cleanup.policy", TO(log), 0,
      policy_choices, "`delete`, `compact` or `delete,compact`." },
    { "retention.ms", KS__VALUE_MS, -1, I64MAX, NULL, "log.retention.ms", TO(log.retention_ns), 0,
      NULL, "-1 keeps forever." },
    { "retention.bytes", KS__VALUE_SIZE64, -1, I64MAX, NULL, "log.retention.bytes",
      TO(log.retention_bytes), 0, NULL, "-1 = no size limit." },
    { "segment.bytes", KS__VALUE_SIZE64, 14, I32MAX, NULL, "log.segment.bytes",
      TO(log.segment_bytes), 0, NULL, "Segment size that triggers a roll." },
    { "segment.ms", KS__VALUE_MS, 1, I64MAX, NULL, "log.roll.ms", TO(log.segment_ns), 0, NULL,
      "Segment age that triggers a roll." },
    { "index.interval.bytes", KS__VALUE_SIZE32, 0, I32MAX, NULL, "log.index.interval.bytes",
      TO(log.index_interval_bytes), 0, NULL, "Bytes between offset index entries." },
    { "segment.index.bytes", KS__VALUE_SIZE32, 4, I32MAX, NULL, "log.index.size.max.bytes",
      TO(log.segment_index_bytes), 0, NULL, "Largest offset index." },
    { "flush.messages", KS__VALUE_INT64, 1, I64MAX, NULL, "log.flush.interval.messages",
      TO(log.flush_messages), 0, NULL, "fsync after this many records." },
    { "flush.ms", KS__VALUE_MS, 0, I64MAX, NULL, "log.flush.interval.ms", TO(log.flush_ns), 0, NULL,
      "fsync after this long." },
    { "delete.retention.ms", KS__VALUE_MS, 0, I64MAX, NULL, "log.cleaner.delete.retention.ms",
      TO(log.delete_retention_ns), 0, NULL, "How long compaction keeps tombstones." },
    { "min.compaction.lag.ms", KS__VALUE_MS, 0, I64MAX, NULL, "log.cleaner.min.compaction.lag.ms",
      TO(log.min_compaction_lag_ns), 0, NULL, "Records younger than this stay uncompacted." },
    { "min.cleanable.dirty.ratio", KS__VALUE_RATIO, 0, 1000, NULL,
      "log.cleaner.min.cleanable.ratio", TO(log.min_cleanable_dirty_ratio_permille), 0, NULL,
      "Dirty share that makes the log eligible for compaction." },
    { "max.message.bytes", KS__VALUE_SIZE32, 0, I32MAX, NULL, "message.max.bytes",
      TO(log.max_message_bytes), 0, NULL, "Largest record batch the topic accepts." },
    { "compression.type", KS__VALUE_ENUM, 0, 0, NULL, "compression.type", TO(compression.codec), 0,
      topic_codec_choices,
      "`producer` (keep the batch as the producer compressed it), `uncompressed`, `gzip`, "
      "`snappy`, `lz4` or `zstd`: a batch in another codec is recompressed by the leader "
      "(LogValidator)." },
    { "compression.gzip.level", KS__VALUE_ENUM, 0, 0, NULL, "compression.gzip.level",
      TO(compression.gzip_level), 0, gzip_level_choices,
      "gzip level of the leader's recompression: 1..9 or -1." },
    { "compression.lz4.level", KS__VALUE_INT32, KS_LZ4_LEVEL_MIN, KS_LZ4_LEVEL_MAX, NULL,
      "compression.lz4.level", TO(compression.lz4_level), 0, NULL,
      "lz4 level of the leader's recompression." },
    { "compression.zstd.level", KS__VALUE_INT32, KS_ZSTD_LEVEL_MIN, KS_ZSTD_LEVEL_MAX, NULL,
      "compression.zstd.level", TO(compression.zstd_level), 0, NULL,
      "zstd level of the leader's recompression." },
    { "assignment", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "Explicit replica lists, leader first, one per partition, `;` between partitions: "
      "`1,2,3 ; 2,3,1 ; 3,1,2`. Default: placed by the KRaft controller's "
      "StripedReplicaPlacer (one replica per rack while racks remain, leaders spread over "
      "racks and brokers; randomised per seed)." },
    { "cluster", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "With several `[cluster NAME]` sections: the cluster the topic lives on (required "
      "there; a topic name is unique across clusters)." },
};

/* ---- [producer NAME] ---------------------------------------------------------- */

static const struct ks__key_spec producer_keys[] = {
    { "topic", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "Required: the topic this producer writes to." },
    { "cluster", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "With several clusters: the cluster the producer connects to; default (and the only "
      "value allowed): its topic's cluster." },
    { "acks", KS__VALUE_ENUM, 0, 0, "all", NULL, PR(acks), 0, acks_choices,
      "`all` (= -1), `1` or `0` (1 before Kafka 3.0)." },
    { "enable.idempotence", KS__VALUE_BOOL, 0, 1, "true", NULL, PR(enable_idempotence), 0, NULL,
      "Producer id and sequence numbers (false before 3.0). Left at its default, it is "
      "turned off when acks is not all, retries is 0 or more than 5 requests are in flight; "
      "set to true explicitly, those are errors (a --set of acks, retries or in-flight "
      "overrides a true written in the file and turns it off)." },
    { "retries", KS__VALUE_INT32, 0, I32MAX, "2147483647", NULL, PR(retries), 0, NULL,
      "Resends of a failed batch (0 before 2.1)." },
    { "max.in.flight.requests.per.connection", KS__VALUE_INT32, 1, I32MAX, "5", NULL,
      PR(max_in_flight), 0, NULL, "Unacknowledged requests per broker." },
    { "linger.ms", KS__VALUE_MS, 0, I32MAX, "5", NULL, PR(linger_ns), 0, NULL,
      "Wait this long to fill a batch (0 before Kafka 4.0)." },
    { "batch.size", KS__VALUE_SIZE32, 1, I32MAX, "16384", NULL, PR(batch_size_bytes), 0, NULL,
      "Bytes per batch per partition. Kafka's 0 (no batching) is written 1 here: a batch is "
      "then full with its first record." },
    { "buffer.memory", KS__VALUE_SIZE64, 0, I64MAX, "33554432", NULL, PR(buffer_memory_bytes), 0,
      NULL, "Bytes of records waiting to be sent; a full buffer blocks send." },
    { "delivery.timeout.ms", KS__VALUE_MS, 1, I32MAX, "120000", NULL, PR(delivery_timeout_ns), 0,
      NULL, "Give up on a record after this long; must be >= linger.ms + request.timeout.ms." },
    { "request.timeout.ms", KS__VALUE_MS, 1, I32MAX, "30000", NULL, PR(request_timeout_ns), 0, NULL,
      "Wait for a response this long." },
    { "retry.backoff.ms", KS__VALUE_MS, 0, I32MAX, "100", NULL, PR(retry_backoff_ns), 0, NULL,
      "First pause before a retry (doubled per attempt, KIP-580)." },
    { "retry.backoff.max.ms", KS__VALUE_MS, 0, I32MAX, "1000", NULL, PR(retry_backoff_ns_max), 0,
      NULL, "Longest pause before a retry." },
    { "metadata.max.age.ms", KS__VALUE_MS, 0, I32MAX, "300000", NULL, PR(metadata_max_age_ns), 0,
      NULL, "Refresh metadata at least this often." },
    { "max.block.ms", KS__VALUE_MS, 0, I32MAX, "60000", NULL, PR(max_block_ns), 0, NULL,
      "Longest a send blocks on a full buffer or missing metadata." },
    { "reconnect.backoff.ms", KS__VALUE_MS, 0, I32MAX, "50", NULL, PR(reconnect_backoff_ns), 0,
      NULL,
      "Pause before connecting again to a broker after a disconnect or a failed connect "
      "(doubled per consecutive failure, +-20 %)." },
    { "reconnect.backoff.max.ms", KS__VALUE_MS, 0, I32MAX, "1000", NULL,
      PR(reconnect_backoff_ns_max), 0, NULL, "Longest pause before connecting again." },
    { "socket.connection.setup.timeout.ms", KS__VALUE_MS, 1, I32MAX, "10000", NULL,
      PR(connection_setup_timeout_ns), 0, NULL,
      "A connection not set up (TCP and ApiVersions) within this long fails (doubled per "
      "consecutive failure, +-20 %): a broker behind a network cut is not sent to." },
    { "socket.connection.setup.timeout.max.ms", KS__VALUE_MS, 1, I32MAX, "30000", NULL,
      PR(connection_setup_timeout_ns_max), 0, NULL, "Longest connection setup timeout." },
    { "max.request.size", KS__VALUE_SIZE32, 1, I32MAX, "1048576", NULL, PR(max_request_size_bytes),
      0, NULL,
      "Largest request; a record larger than this (or than buffer.memory) fails at send() "
      "with MESSAGE_TOO_LARGE (RecordTooLargeException), and a request takes batches while it "
      "fits." },
    { "compression.type", KS__VALUE_ENUM, 0, 0, "none", NULL, PR(compression.codec), 0,
      producer_codec_choices,
      "Codec of every batch: `none`, `gzip`, `snappy`, `lz4` or `zstd`, framed as Kafka's "
      "Java client frames it. The batch is compressed when it is drained; batch.size is "
      "filled by Kafka's estimate of the compressed size (CompressionRatioEstimator)." },
    { "compression.gzip.level", KS__VALUE_ENUM, 0, 0, "-1", NULL, PR(compression.gzip_level), 0,
      gzip_level_choices, "gzip level (KIP-390): 1..9 or -1 (zlib's default, 6)." },
    { "compression.lz4.level", KS__VALUE_INT32, KS_LZ4_LEVEL_MIN, KS_LZ4_LEVEL_MAX, "9", NULL,
      PR(compression.lz4_level), 0, NULL,
      "lz4 level (KIP-390): 9 uses lz4's fast compressor, any other level its HC one." },
    { "compression.zstd.level", KS__VALUE_INT32, KS_ZSTD_LEVEL_MIN, KS_ZSTD_LEVEL_MAX, "3", NULL,
      PR(compression.zstd_level), 0, NULL, "zstd level (KIP-390)." },
    { "rate", KS__VALUE_RATE, 0, 100000000, "1000/s", NULL, PR(rate_per_s), 0, NULL,
      "ksim: records per simulated second (`2000/s`)." },
    { "count", KS__VALUE_INT64, -1, I64MAX, "-1", NULL, PR(count), 0, NULL,
      "ksim: stop after this many records; -1 = until the end of duration." },
    { "keys", KS__VALUE_INT32, 0, I32MAX, "0", NULL, PR(key_count), 0, NULL,
      "ksim: keys drawn uniformly from this many (`key0`, `key1`, ...); 0 = null keys "
      "(sticky partitioner)." },
    { "value.bytes", KS__VALUE_SIZE32, 0, 100 * 1024 * 1024, "100", NULL, PR(value_bytes), 0, NULL,
      "ksim: payload size; an identity header is always embedded." },
    { "value.random.percent", KS__VALUE_INT32, 0, 100, "0", NULL, PR(value_random_percent), 0, NULL,
      "ksim: how compressible values are: this percent of each value is random bytes, "
      "different in every record, that no codec shrinks; the rest is repeated text that "
      "compresses to almost nothing. 0 (the default) is ksim's plain filler; 100 is "
      "incompressible." },
    { "start", KS__VALUE_DURATION, 0, RUN_NS_MAX, "0s", NULL, PR(start_ns), 0, NULL,
      "ksim: the earliest time the producer starts sending (see `start.jitter`)." },
    { "transactional.id", KS__VALUE_STRING, 0, 0, "", NULL, PR(transactional_id), 64, NULL,
      "Makes the producer transactional (KIP-98): initTransactions() with this id, then "
      "transactions of transaction.records records; needs idempotence. Two producers with "
      "the same id are two instances of one application: the later one fences the earlier." },
    { "transaction.timeout.ms", KS__VALUE_MS, 1, 900000, "60000", NULL, PR(transaction_timeout_ns),
      0, NULL, "The coordinator aborts (and fences) a transaction open longer than this." },
    { "transaction.records", KS__VALUE_INT32, 1, I32MAX, "100", NULL, PR(txn_records), 0, NULL,
      "ksim: records per transaction; the application commits after this many (and ends its "
      "last, shorter transaction when the workload ends)." },
    { "transaction.abort.rate", KS__VALUE_RATIO, 0, 1000, "0", NULL, PR(txn_abort_permille), 0,
      NULL,
      "ksim: the share of transactions the application aborts instead of committing (drawn "
      "per transaction), e.g. `0.25`." },
    { "start.jitter", KS__VALUE_DURATION, 0, RUN_NS_MAX, "100ms", NULL, PR(start_jitter_ns), 0,
      NULL,
      "ksim: the producer starts at a uniform time in [start, start + start.jitter], drawn "
      "per seed; `0s` starts it exactly at `start`." },
};

/* ---- [consumer NAME] ---------------------------------------------------------- */

static const struct ks__key_spec consumer_keys[] = {
    { "group.id", KS__VALUE_STRING, 0, 0, NULL, NULL, CO(group_id), 256, NULL,
      "Required: the consumer group (Kafka's default null means no group; ksim models group "
      "members only)." },
    { "topic", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "Required: the topic this consumer subscribes to." },
    { "cluster", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "With several clusters: the cluster the consumer connects to; default (and the only "
      "value allowed): its topic's cluster (on a target, the remote topic `east.orders`)." },
    { "enable.auto.commit", KS__VALUE_BOOL, 0, 1, "true", NULL, KS__NO_FIELD, 0, NULL,
      "Commit in the background every auto.commit.interval.ms. Giving `commit` turns it off; "
      "`enable.auto.commit = true` together with `commit` is an error." },
    { "auto.commit.interval.ms", KS__VALUE_MS, 0, I32MAX, "5000", NULL, CO(auto_commit_interval_ns),
      0, NULL, "Auto-commit period." },
    { "commit", KS__VALUE_ENUM, 0, 0, NULL, NULL, KS__NO_FIELD, 0, commit_choices,
      "ksim: `before-process` (at-most-once), `after-process` (at-least-once) or `atomic` "
      "(offset stored with the output: exactly-once). Default: auto commit, or "
      "`after-process` when enable.auto.commit = false." },
    { "processing.time", KS__VALUE_DURATION, 0, HOUR_NS, "1ms", NULL, CO(processing_ns), 0, NULL,
      "ksim: simulated processing time per record." },
    { "auto.offset.reset", KS__VALUE_ENUM, 0, 0, "latest", NULL, CO(auto_offset_reset), 0,
      reset_choices, "Where to start without a committed offset." },
    { "isolation.level", KS__VALUE_ENUM, 0, 0, "read_uncommitted", NULL, CO(isolation_level), 0,
      isolation_choices,
      "`read_committed` fetches only up to the last stable offset and drops the records of "
      "aborted transactions (KIP-98); `read_uncommitted` reads up to the high watermark. "
      "Transaction markers never reach the application in either." },
    { "session.timeout.ms", KS__VALUE_MS, 1, I32MAX, "45000", NULL, CO(session_timeout_ns), 0, NULL,
      "A member without heartbeat this long is removed (10000 from 0.10.1 to 2.8)." },
    { "heartbeat.interval.ms", KS__VALUE_MS, 1, I32MAX, "3000", NULL, CO(heartbeat_interval_ns), 0,
      NULL, "Heartbeat period; must be < session.timeout.ms." },
    { "max.poll.interval.ms", KS__VALUE_MS, 1, I32MAX, "300000", NULL, CO(max_poll_interval_ns), 0,
      NULL, "A member that does not poll this long leaves the group." },
    { "max.poll.records", KS__VALUE_INT32, 1, I32MAX, "500", NULL, CO(max_poll_records), 0, NULL,
      "Records per poll." },
    { "fetch.min.bytes", KS__VALUE_SIZE32, 0, I32MAX, "1", NULL, CO(fetch_min_bytes), 0, NULL,
      "Bytes a fetch waits for." },
    { "fetch.max.wait.ms", KS__VALUE_MS, 0, I32MAX, "500", NULL, CO(fetch_max_wait_ns), 0, NULL,
      "Longest a fetch waits at the broker." },
    { "max.partition.fetch.bytes", KS__VALUE_SIZE32, 0, I32MAX, "1048576", NULL,
      CO(max_partition_fetch_bytes), 0, NULL, "Bytes per partition per fetch." },
    { "request.timeout.ms", KS__VALUE_MS, 1, I32MAX, "30000", NULL, CO(request_timeout_ns), 0, NULL,
      "Wait this long for any answer (a fetch: beyond fetch.max.wait.ms); a broker whose process "
      "died fails its requests at once (its connections are reset)." },
    { "partition.assignment.strategy", KS__VALUE_ENUM, 0, 0, "range", NULL, CO(assignor), 0,
      assignor_choices,
      "`range`, `roundrobin` or `sticky`. Kafka 3.0+ defaults to [range, cooperative-sticky] "
      "and uses range while any member lacks cooperative-sticky; ksim does not model "
      "cooperative rebalancing." },
    { "start", KS__VALUE_DURATION, 0, RUN_NS_MAX, "0s", NULL, CO(start_ns), 0, NULL,
      "ksim: the earliest time the consumer joins its group (see `start.jitter`)." },
    { "start.jitter", KS__VALUE_DURATION, 0, RUN_NS_MAX, "100ms", NULL, CO(start_jitter_ns), 0,
      NULL,
      "ksim: the consumer joins at a uniform time in [start, start + start.jitter], drawn "
      "per seed; `0s` joins exactly at `start`." },
    { "output.topic", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "ksim: makes the consumer a processor (consume-transform-produce, as a Kafka Streams "
      "application): for each record it processes it writes one record to this topic, keyed "
      "`key-<(P + 1) * 10^12 + S>` for the input record's producer index P and record number "
      "S, through a producer of its own named after the consumer (acks = all, idempotent; a "
      "`[producer NAME]` of the consumer's name sets its client keys). Needs "
      "`commit = after-process`." },
    { "transactional.id", KS__VALUE_STRING, 0, 0, "", NULL, CO(transactional_id), 64, NULL,
      "With output.topic: exactly-once (Kafka Streams' processing.guarantee = exactly_once_v2): "
      "the processor's producer uses this transactional.id, and after each poll's records "
      "sends the consumed offsets into the transaction (sendOffsetsToTransaction, with the "
      "consumer's group metadata, KIP-447) and commits it. Without it the processor is "
      "at-least-once: flush(), then commitSync()." },
};

/* ---- [mirror NAME] -------------------------------------------------------------- */

#define MI(field) offsetof(struct ks_mirror_spec, field)

/* MirrorMaker 2's own names (MirrorSourceConfig, MirrorCheckpointConfig,
 * DefaultReplicationPolicy, WorkerConfig; the producer's under the
 * "producer." prefix of MirrorClientConfig). */
static const struct ks__key_spec mirror_keys[] = {
    { "source", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "Required: the `[cluster NAME]` the mirror reads (MM2's `source->target` flow)." },
    { "target", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "Required: the cluster it writes to; the mirror's node sits with it (a network fault "
      "on the link between the clusters cuts the mirror off its source; a crash of the "
      "target takes the mirror down until the target restarts)." },
    { "topics", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "Required: the source topic to copy (ksim: one topic per mirror; MM2 takes a list of "
      "regular expressions). Its copy on the target is `<source><separator><topic>` "
      "(DefaultReplicationPolicy.formatRemoteTopic), made with the source's partition count "
      "when no `[topic]` of that name is given on the target." },
    { "replication.policy.separator", KS__VALUE_STRING, 0, 0, ".", NULL, MI(separator), 8, NULL,
      "Between the source cluster's name and the topic in the remote topic's name." },
    { "replication.factor", KS__VALUE_INT32, 1, KS_REPLICATION_FACTOR_MAX, "2", NULL,
      MI(replication_factor), 0, NULL,
      "Replication factor of the remote topic when ksim makes it (MirrorSourceConfig's "
      "default 2); at most the target's brokers. Its other settings are the target's "
      "defaults (MM2's config sync leaves min.insync.replicas out)." },
    { "offset.lag.max", KS__VALUE_INT64, 0, I64MAX, "100", NULL, MI(offset_lag_max), 0, NULL,
      "How far a partition's copy may run past the last offset sync before another is "
      "written." },
    { "emit.checkpoints.enabled", KS__VALUE_BOOL, 0, 1, "true", NULL, MI(emit_checkpoints), 0,
      NULL, "Write the groups' translated offsets to `<source>.checkpoints.internal`." },
    { "emit.checkpoints.interval.seconds", KS__VALUE_SECONDS, 1, 1000000000, "60", NULL,
      MI(emit_checkpoints_interval_ns), 0, NULL, "Period of the checkpoints." },
    { "sync.group.offsets.enabled", KS__VALUE_BOOL, 0, 1, "false", NULL,
      MI(sync_group_offsets_enabled), 0, NULL,
      "Also commit the checkpoints as the group's offsets on the target, while the group has "
      "no member there (KIP-545)." },
    { "sync.group.offsets.interval.seconds", KS__VALUE_SECONDS, 1, 1000000000, "60", NULL,
      MI(sync_group_offsets_interval_ns), 0, NULL, "Period of the group offset sync." },
    { "offset.flush.interval.ms", KS__VALUE_MS, 1, I32MAX, "60000", NULL,
      MI(offset_flush_interval_ns), 0, NULL,
      "The Connect worker's commit period: a restarted task resumes from the source offsets "
      "committed last; delayed offset syncs are written then." },
    { "producer.acks", KS__VALUE_ENUM, 0, 0, "all", NULL, MI(acks), 0, acks_choices,
      "The mirror producer's acks (Connect's default: all)." },
    { "producer.enable.idempotence", KS__VALUE_BOOL, 0, 1, "true", NULL,
      MI(enable_idempotence), 0, NULL, "The mirror producer's idempotence." },
    { "start", KS__VALUE_DURATION, 0, RUN_NS_MAX, "0s", NULL, MI(start_ns), 0, NULL,
      "ksim: when the mirror's tasks start." },
};

/* ---- [fault NAME] --------------------------------------------------------------- */

static const struct ks__key_spec fault_keys[] = {
    { "action", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "Required: what the fault does, one of the actions in the table below." },
    { "at", KS__VALUE_DURATION, 0, RUN_NS_MAX, NULL, NULL, KS__NO_FIELD, 0, NULL,
      "When the fault fires (a duration since start). Exactly one of `at` and `when`." },
    { "when", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "A trigger: fires the first time it holds (see Triggers)." },
    { "delay", KS__VALUE_DURATION, 0, RUN_NS_MAX, "0s", NULL, KS__NO_FIELD, 0, NULL,
      "With `when`: act this long after the trigger holds." },
    { "target", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "Who: a broker id, `leader(TP)`, `follower(TP)`, `followers(TP)`, `rack(NAME)` (every "
      "broker of that rack of [cluster] `racks`), `all` (every broker), `controller` (the "
      "active one when the fault fires), `controller(N)` (the N-th controller node, node id "
      "brokers + N), `zookeeper` (the ZooKeeper node under controller = zookeeper), "
      "`random`, `producer(NAME)`, `consumer(NAME)`; with several clusters `cluster(NAME)` "
      "(every node of it) and `NAME:ID` (broker ID of cluster NAME). Required by the actions "
      "that take it "
      "(table below). The same names go in `groups`, `isolate`, `from` and `to`. "
      "rolling-restart takes `all` or a comma list of brokers (`1,3,2`), restarted in that "
      "order." },
    { "mode", KS__VALUE_CUSTOM, 0, 0, "process", NULL, 0, 0, NULL,
      "crash: `process` (the page cache survives) or `power` (bytes not fsynced are lost, the "
      "last write may tear)." },
    { "restart.after", KS__VALUE_DURATION, 0, RUN_NS_MAX, NULL, NULL, KS__NO_FIELD, 0, NULL,
      "crash: restart the target this long after; stop: this long after it has shut down. "
      "Default: stays down (until a restart fault or the final heal)." },
    { "duration", KS__VALUE_DURATION, 0, RUN_NS_MAX, NULL, NULL, KS__NO_FIELD, 0, NULL,
      "Undo after this long, for the actions that take it (table below). Default: until a "
      "heal/resume fault or the end." },
    { "groups", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "partition: two groups of targets, `1 | 2,3`; every link between them is cut both "
      "ways." },
    { "isolate", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "partition: cut one target from every other node." },
    { "from", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "partition: with `to`, cut messages from these targets to those only (one way)." },
    { "to", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "partition: targets for `from`. rewind: `earliest`, `latest`, an offset, or a time "
      "(`5s`: the first record with a timestamp at or after it)." },
    { "disk.latency", KS__VALUE_DURATION, 0, HOUR_NS, NULL, NULL, KS__NO_FIELD, 0, NULL,
      "slow: extra latency of every request to the target's disk device (fsync, reads of "
      "data outside the page cache, writeback); writes to the page cache stay free until "
      "disk.dirty.limit." },
    { "network.latency", KS__VALUE_DURATION, 0, HOUR_NS, NULL, NULL, KS__NO_FIELD, 0, NULL,
      "slow: extra latency of every message to or from the target." },
    { "loss", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "drop: share of messages dropped on every link, `1%`, `0.5%` or `10000ppm`." },
    { "partition", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "corrupt: the topic-partition whose log is damaged on the target broker (`orders-0`)." },
    { "bytes", KS__VALUE_INT32, 1, 4096, "1", NULL, KS__NO_FIELD, 0, NULL,
      "corrupt: how many bytes are flipped." },
    { "position.bytes", KS__VALUE_INT32, 0, I32MAX, NULL, NULL, KS__NO_FIELD, 0, NULL,
      "corrupt: file position in the active segment (Kafka's segment positions are int32). "
      "Default: inside its last batch, drawn from the fault RNG." },
    { "fault", KS__VALUE_CUSTOM, 0, 0, NULL, NULL, 0, 0, NULL,
      "heal: the fault to undo (which ones a heal can undo: below the table). Default: "
      "every network fault in effect." },
    { "downtime", KS__VALUE_DURATION, 0, RUN_NS_MAX, NULL, NULL, KS__NO_FIELD, 0, NULL,
      "rolling-restart: how long each broker stays down between its controlled shutdown and "
      "its restart." },
    { "catch.up.timeout", KS__VALUE_DURATION, 1, RUN_NS_MAX, "5m", NULL, KS__NO_FIELD, 0, NULL,
      "rolling-restart: the longest a step waits, after its broker restarted, for zero "
      "under-replicated partitions before the next broker goes; when it passes, a timeline "
      "line says so and the rolling restart ends there (the brokers after it are not "
      "touched)." },
};

/* ---- Kafka settings that ksim does not model -------------------------------------- */

#define CL KS__SECTION_CLUSTER
#define TP KS__SECTION_TOPIC
#define PD KS__SECTION_PRODUCER
#define CN KS__SECTION_CONSUMER

/* A Kafka user will type these; each gets "Kafka's KEY is not modelled by
 * ksim (see docs/model.md)" instead of "unknown key", and docs/model.md
 * lists them from this table (ks_scenario_write_not_modelled). A later
 * change that models one removes its row and adds a key row above. */
static const struct ks__not_modelled not_modelled_keys[] = {
    /* section, key, ksim key to write instead (or NULL), why */
    { CL, "log.retention.hours", "log.retention.ms",
      "only the `.ms` form of Kafka's time "
      "settings" },
    { CL, "log.retention.minutes", "log.retention.ms", "only the `.ms` form" },
    { CL, "log.roll.hours", "log.roll.ms", "only the `.ms` form" },
    { CL, "log.roll.jitter.ms", NULL, "no segment roll jitter" },
    { CL, "log.roll.jitter.hours", NULL, "no segment roll jitter" },
    { CL, "log.segment.delete.delay.ms", NULL, "deleted segments go at once" },
    { CL, "log.message.timestamp.type", NULL, "CreateTime only" },
    { CL, "log.cleaner.max.compaction.lag.ms", NULL, "compaction is not forced by age" },
    { CL, "log.cleaner.enable", NULL, "the cleaner always runs for compacted topics" },
    { CL, "log.cleaner.threads", NULL, "no cleaner threads or buffers" },
    { CL, "log.cleaner.dedupe.buffer.size", NULL, "no cleaner threads or buffers" },
    { CL, "log.cleaner.backoff.ms", NULL, "fixed at Kafka's default, 15000" },
    { CL, "log.flush.start.offset.checkpoint.interval.ms",
      "log.flush.offset.checkpoint.interval.ms",
      "log-start-offset-checkpoint is written with the recovery points" },
    { CL, "log.dirs", NULL, "one log folder per broker, under the run folder" },
    { CL, "log.dir", NULL, "one log folder per broker, under the run folder" },
    { CL, "num.replica.fetchers", NULL, "one fetcher per follower and leader" },
    { CL, "num.io.threads", NULL, "no thread pools: a broker handles one event at a time" },
    { CL, "num.network.threads", NULL, "no thread pools: a broker handles one event at a time" },
    { CL, "num.recovery.threads.per.data.dir", NULL, "no thread pools" },
    { CL, "auto.create.topics.enable", NULL, "the topics are the [topic] sections" },
    { CL, "leader.imbalance.per.broker.percentage", NULL,
      "the preferred-leader check moves every imbalanced partition (as KRaft does)" },
    { CL, "offsets.retention.minutes", NULL, "committed offsets do not expire" },
    { CL, "transaction.max.timeout.ms", NULL,
      "transaction.timeout.ms is capped by its range (900000, Kafka's default maximum)" },
    { CL, "transactional.id.expiration.ms", NULL, "transactional ids do not expire" },
    { CL, "producer.id.expiration.ms", NULL, "producer ids do not expire" },
    { CL, "eligible.leader.replicas.version", "eligible.leader.replicas.enable",
      "ELR is switched by ksim's key, not by Kafka's feature level" },
    { CL, "unclean.recovery.strategy", NULL,
      "KIP-966's unclean recovery manager is not in Kafka's code; ksim follows the code: ELR, "
      "the last known leader, then unclean.leader.election.enable" },
    { CL, "unclean.recovery.manager.enabled", NULL,
      "KIP-966's unclean recovery manager is not in Kafka's code" },
    { CL, "replica.lag.max.messages", NULL,
      "the ISR follows replica.lag.time.max.ms only (Kafka 0.9 removed this key)" },
    { CL, "broker.id", NULL, "brokers are numbered 1..brokers" },
    { CL, "node.id", NULL, "brokers are numbered 1..brokers" },
    { CL, "process.roles", NULL, "brokers are brokers; the controller is a node of its own" },
    { CL, "controller.quorum.voters", NULL,
      "the voters are the controller nodes that `controllers` makes" },
    { CL, "listeners", NULL, "nodes talk over ksim's simulated network" },
    { CL, "connections.max.idle.ms", NULL, "idle connections are never closed" },
    { TP, "message.timestamp.type", NULL, "CreateTime only" },
    { TP, "segment.jitter.ms", NULL, "no segment roll jitter" },
    { TP, "file.delete.delay.ms", NULL, "deleted segments go at once" },
    { TP, "max.compaction.lag.ms", NULL, "compaction is not forced by age" },
    { TP, "preallocate", NULL, "segment files are not preallocated" },
    { TP, "remote.storage.enable", NULL, "no tiered storage" },
    { TP, "local.retention.ms", NULL, "no tiered storage" },
    { TP, "local.retention.bytes", NULL, "no tiered storage" },
    { TP, "leader.replication.throttled.replicas", NULL, "no replication quotas" },
    { TP, "follower.replication.throttled.replicas", NULL, "no replication quotas" },
    { PD, "partitioner.class", NULL, "the built-in partitioner only (murmur2, sticky)" },
    { PD, "partitioner.ignore.keys", NULL, "keyed records always go by murmur2" },
    { PD, "partitioner.adaptive.partitioning.enable", NULL, "no adaptive partitioning" },
    { PD, "partitioner.availability.timeout.ms", NULL, "no adaptive partitioning" },
    { PD, "bootstrap.servers", NULL, "clients know the simulated cluster" },
    { PD, "client.id", NULL, "clients are named by their section" },
    { PD, "key.serializer", NULL, "keys and values are ksim's own bytes" },
    { PD, "value.serializer", NULL, "keys and values are ksim's own bytes" },
    { PD, "connections.max.idle.ms", NULL, "idle connections are never closed" },
    { CN, "group.instance.id", NULL, "no static membership (KIP-345)" },
    { CN, "group.protocol", NULL, "the classic group protocol only, not KIP-848's" },
    { CN, "group.remote.assignor", NULL, "the classic group protocol only, not KIP-848's" },
    { CN, "client.rack", NULL, "consumers fetch from leaders only (no KIP-392)" },
    { CN, "fetch.max.bytes", NULL, "fixed at Kafka's default, 52428800" },
    { CN, "retry.backoff.ms", NULL, "fixed at Kafka's default, 100" },
    { CN, "bootstrap.servers", NULL, "clients know the simulated cluster" },
    { CN, "client.id", NULL, "clients are named by their section" },
    { CN, "key.deserializer", NULL, "keys and values are ksim's own bytes" },
    { CN, "value.deserializer", NULL, "keys and values are ksim's own bytes" },
    { CN, "connections.max.idle.ms", NULL, "idle connections are never closed" },
};

#undef CL
#undef TP
#undef PD
#undef CN

const struct ks__not_modelled *ks__not_modelled_find(enum ks__section_kind kind, const char *key)
{
    for (size_t i = 0; i < KS_ARRAY_COUNT(not_modelled_keys); i++) {
        if (not_modelled_keys[i].kind == kind && strcmp(not_modelled_keys[i].key, key) == 0) {
            return &not_modelled_keys[i];
        }
    }
    return NULL;
}

/* Settings of ZooKeeper mode only, which a user of an older Kafka may still write:
 * "Kafka's KEY is read only in ZooKeeper mode: WHY" instead of "unknown key". */
static const struct ks__removed_key removed_keys[] = {
    { KS__SECTION_CLUSTER, "controlled.shutdown.max.retries",
      "is read only in ZooKeeper mode (KafkaServer.doControlledShutdown), which Kafka 4.0 removed",
      "a KRaft broker repeats its shutdown request in every heartbeat until the controller "
      "lets it go (BrokerLifecycleManager), so there is no retry count; under controller = "
      "zookeeper ksim uses Kafka's default, 3 attempts" },
    { KS__SECTION_CLUSTER, "controlled.shutdown.retry.backoff.ms",
      "is read only in ZooKeeper mode (KafkaServer.doControlledShutdown), which Kafka 4.0 removed",
      "a KRaft broker repeats its shutdown request in every heartbeat until the controller "
      "lets it go (BrokerLifecycleManager), so there is no retry backoff; under controller = "
      "zookeeper ksim uses Kafka's default, 5000" },
};

const struct ks__removed_key *ks__removed_key_find(enum ks__section_kind kind, const char *key)
{
    for (size_t i = 0; i < KS_ARRAY_COUNT(removed_keys); i++) {
        if (removed_keys[i].kind == kind && strcmp(removed_keys[i].key, key) == 0) {
            return &removed_keys[i];
        }
    }
    return NULL;
}

char *ks__removed_key_message(const struct ks__removed_key *row)
{
    return g_strdup_printf("Kafka's %s %s: %s (see docs/model.md)", row->key, row->removed_in,
                           row->why);
}

char *ks__not_modelled_message(const struct ks__not_modelled *row)
{
    if (row->instead != NULL) {
        return g_strdup_printf("Kafka's %s is not modelled by ksim (see docs/model.md); write %s",
                               row->key, row->instead);
    }
    return g_strdup_printf("Kafka's %s is not modelled by ksim (see docs/model.md)", row->key);
}

void ks_scenario_write_not_modelled(FILE *out)
{
    static const enum ks__section_kind kinds[] = { KS__SECTION_CLUSTER, KS__SECTION_TOPIC,
                                                   KS__SECTION_PRODUCER, KS__SECTION_CONSUMER };
    for (size_t k = 0; k < KS_ARRAY_COUNT(kinds); k++) {
        fprintf(out, "%s[%s%s]:\n\n", k == 0 ? "" : "\n", ks__section_kind_name(kinds[k]),
                kinds[k] == KS__SECTION_CLUSTER ? "" : " NAME");
        for (size_t i = 0; i < KS_ARRAY_COUNT(not_modelled_keys); i++) {
            const struct ks__not_modelled *row = &not_modelled_keys[i];
            if (row->kind != kinds[k]) {
                continue;
            }
            fprintf(out, "- `%s`: %s", row->key, row->why);
            if (row->instead != NULL) {
                fprintf(out, "; write `%s`", row->instead);
            }
            fputs(".\n", out);
        }
        for (size_t i = 0; i < KS_ARRAY_COUNT(removed_keys); i++) {
            const struct ks__removed_key *row = &removed_keys[i];
            if (row->kind == kinds[k]) {
                fprintf(out, "- `%s` %s; %s.\n", row->key, row->removed_in, row->why);
            }
        }
    }
}

/* ---- did you mean ------------------------------------------------------------------ */

/* Levenshtein distance, or SIZE_MAX when either text is longer than 80. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a);
    size_t m = strlen(b);
    if (n > 80 || m > 80) {
        return SIZE_MAX;
    }
    size_t row[81];
    for (size_t j = 0; j <= m; j++) {
        row[j] = j;
    }
    for (size_t i = 1; i <= n; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t above = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            row[j] = MIN(MIN(row[j] + 1, row[j - 1] + 1), diagonal + cost);
            diagonal = above;
        }
    }
    return row[m];
}

const char *ks__closest_name(const char *word, const char *const *names, size_t count)
{
    const char *best = NULL;
    size_t best_distance = SIZE_MAX;
    for (size_t i = 0; i < count; i++) {
        size_t distance = edit_distance(word, names[i]);
        /* Close: at most a quarter of the longer name changed. The first of
         * equally close names wins, so the suggestion is deterministic. */
        size_t longer = MAX(strlen(word), strlen(names[i]));
        if (distance < best_distance && distance * 4 <= longer) {
            best = names[i];
            best_distance = distance;
        }
    }
    return best;
}

char *ks__unknown_key_hint(enum ks__section_kind kind, const char *key)
{
    /* A key of another section, written in the wrong one. */
    static const enum ks__section_kind others[] = { KS__SECTION_SCENARIO, KS__SECTION_CLUSTER,
                                                    KS__SECTION_TOPIC,    KS__SECTION_PRODUCER,
                                                    KS__SECTION_CONSUMER, KS__SECTION_FAULT };
    for (size_t k = 0; k < KS_ARRAY_COUNT(others); k++) {
        if (others[k] != kind && ks__key_find(others[k], key) != NULL) {
            bool named = others[k] != KS__SECTION_SCENARIO && others[k] != KS__SECTION_CLUSTER;
            return g_strdup_printf(" (it goes in [%s%s])", ks__section_kind_name(others[k]),
                                   named ? " NAME" : "");
        }
    }
    size_t count = 0;
    const struct ks__key_spec *table = ks__key_table(kind, &count);
    const char *names[256]; /* [cluster] has the most keys, about 70 */
    ks_assert(count <= KS_ARRAY_COUNT(names));
    for (size_t i = 0; i < count; i++) {
        names[i] = table[i].name;
    }
    const char *best = ks__closest_name(key, names, count);
    return best != NULL ? g_strdup_printf(" (did you mean '%s'?)", best) : g_strdup("");
}

/* ---- tables ------------------------------------------------------------------- */

const struct ks__key_spec *ks__key_table(enum ks__section_kind kind, size_t *count)
{
    switch (kind) {
    case KS__SECTION_SCENARIO: *count = KS_ARRAY_COUNT(scenario_keys); return scenario_keys;
    case KS__SECTION_CLUSTER: *count = KS_ARRAY_COUNT(cluster_keys); return cluster_keys;
    case KS__SECTION_TOPIC: *count = KS_ARRAY_COUNT(topic_keys); return topic_keys;
    case KS__SECTION_PRODUCER: *count = KS_ARRAY_COUNT(producer_keys); return producer_keys;
    case KS__SECTION_CONSUMER: *count = KS_ARRAY_COUNT(consumer_keys); return consumer_keys;
    case KS__SECTION_FAULT: *count = KS_ARRAY_COUNT(fault_keys); return fault_keys;
    case KS__SECTION_MIRROR: *count = KS_ARRAY_COUNT(mirror_keys); return mirror_keys;
    case KS__SECTION_EXPECT:
    case KS__SECTION_COUNT: break;
    }
    *count = 0;
    return NULL;
}

const struct ks__key_spec *ks__key_find(enum ks__section_kind kind, const char *key)
{
    size_t count = 0;
    const struct ks__key_spec *table = ks__key_table(kind, &count);
    for (size_t i = 0; i < count; i++) {
        if (strcmp(table[i].name, key) == 0) {
            return &table[i];
        }
    }
    return NULL;
}

const char *ks__section_kind_name(enum ks__section_kind kind)
{
    switch (kind) {
    case KS__SECTION_SCENARIO: return "scenario";
    case KS__SECTION_CLUSTER: return "cluster";
    case KS__SECTION_TOPIC: return "topic";
    case KS__SECTION_PRODUCER: return "producer";
    case KS__SECTION_CONSUMER: return "consumer";
    case KS__SECTION_FAULT: return "fault";
    case KS__SECTION_MIRROR: return "mirror";
    case KS__SECTION_EXPECT: return "expect";
    case KS__SECTION_COUNT: break;
    }
    return "?";
}

/* ---- metrics -------------------------------------------------------------------- */

static const char *const metric_names[KS_METRIC_COUNT] = {
    "records_sent",
    "records_acked",
    "records_failed",
    "records_unknown",
    "acked_lost",
    "duplicates",
    "reordered",
    "divergent_partitions",
    "consumed_lost",
    "consumed_unseen",
    "consumed_duplicates",
    "txn_committed",
    "txn_aborted",
    "aborted_read",
    "aborted_seen",
    "txn_hanging",
    "premature_read",
    "mirrored",
    "mirror_lost",
    "mirror_unmirrored",
    "mirror_duplicates",
    "mirror_lag",
    "mirror_lag_max",
    "failover_duplicates",
    "eos_missing",
    "eos_duplicates",
    "leader_elections",
    "unclean_elections",
    "isr_shrinks",
    "isr_expands",
    "unavailable_ms",
    "produce_unavailable_ms",
    "produce_p50_ms",
    "produce_p99_ms",
    "throughput_rps",
    "faults_skipped",
    "events",
    "trace_hash",
};

const char *const *ks_scenario_metric_names(size_t *count)
{
    if (count != NULL) {
        *count = KS_METRIC_COUNT;
    }
    return metric_names;
}

/* ---- numbers and units ----------------------------------------------------------- */

bool ks__parse_int64(const char *text, int64_t *out)
{
    const char *p = text;
    bool negative = false;
    if (*p == '-') {
        negative = true;
        p++;
    }
    if (*p < '0' || *p > '9') {
        return false;
    }
    uint64_t magnitude = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        uint64_t digit = (uint64_t)(*p - '0');
        if (magnitude > (UINT64_MAX - digit) / 10) {
            return false;
        }
        magnitude = magnitude * 10 + digit;
    }
    if (*p != '\0') {
        return false;
    }
    uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    if (magnitude > limit) {
        return false;
    }
    *out = negative ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
    return true;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Splits "12.345UNIT" into whole 12, fraction 345 over 10^3 and the unit text.
 * Returns false if there are no digits or too many of them. */
static bool split_decimal(const char *text, uint64_t *whole, uint64_t *fraction,
                          uint64_t *fraction_scale, const char **unit)
{
    const char *p = text;
    *whole = 0;
    *fraction = 0;
    *fraction_scale = 1;
    if (*p < '0' || *p > '9') {
        return false;
    }
    for (; *p >= '0' && *p <= '9'; p++) {
        uint64_t digit = (uint64_t)(*p - '0');
        if (*whole > (UINT64_MAX - digit) / 10) {
            return false;
        }
        *whole = *whole * 10 + digit;
    }
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9') {
            return false;
        }
        for (; *p >= '0' && *p <= '9'; p++) {
            if (*fraction_scale >= 1000000000000000000ULL) {
                return false; /* more than 18 decimals */
            }
            *fraction = *fraction * 10 + (uint64_t)(*p - '0');
            *fraction_scale *= 10;
        }
    }
    *unit = p;
    return true;
}

/* whole.fraction * unit exactly, or false (inexact or overflow). */
static bool scale_exact(uint64_t whole, uint64_t fraction, uint64_t fraction_scale, uint64_t unit,
                        int64_t *out)
{
    if (unit != 0 && whole > (uint64_t)INT64_MAX / unit) {
        return false;
    }
    uint64_t total = whole * unit;
    if (fraction != 0) {
        uint64_t g = gcd_u64(fraction, fraction_scale);
        uint64_t numerator = fraction / g;
        uint64_t denominator = fraction_scale / g;
        if (unit % denominator != 0) {
            return false;
        }
        /* numerator < denominator, so this product is below unit: no overflow. */
        uint64_t part = numerator * (unit / denominator);
        if (total > (uint64_t)INT64_MAX - part) {
            return false;
        }
        total += part;
    }
    *out = (int64_t)total;
    return true;
}

static const struct {
    const char *name;
    uint64_t ns;
} duration_units[] = {
    { "ns", 1ULL },         { "us", 1000ULL },       { "ms", 1000000ULL },
    { "s", 1000000000ULL }, { "m", 60000000000ULL }, { "h", 3600000000000ULL },
};

bool ks__parse_duration_ns(const char *text, bool unit_required, int64_t *out, char **message)
{
    uint64_t whole = 0;
    uint64_t fraction = 0;
    uint64_t scale = 1;
    const char *unit = NULL;
    if (!split_decimal(text, &whole, &fraction, &scale, &unit)) {
        *message = g_strdup_printf("'%s' is not a duration (a number and a unit: ns us ms s m h, "
                                   "e.g. 250ms or 1.5s)",
                                   text);
        return false;
    }
    if (*unit == '\0') {
        if (unit_required) {
            *message = g_strdup_printf("'%s' needs a unit: ns us ms s m h (e.g. %sms)", text, text);
            return false;
        }
        if (fraction != 0 || scale != 1) {
            *message = g_strdup_printf("'%s' is not a whole number", text);
            return false;
        }
        if (whole > (uint64_t)INT64_MAX) {
            *message = g_strdup_printf("'%s' is too large", text);
            return false;
        }
        *out = (int64_t)whole;
        return true;
    }
    for (size_t i = 0; i < KS_ARRAY_COUNT(duration_units); i++) {
        if (strcmp(unit, duration_units[i].name) == 0) {
            if (!scale_exact(whole, fraction, scale, duration_units[i].ns, out)) {
                *message = g_strdup_printf("'%s' is too large or finer than 1ns", text);
                return false;
            }
            return true;
        }
    }
    *message = g_strdup_printf("'%s' has an unknown unit '%s' (use ns us ms s m h)", text, unit);
    return false;
}

static const struct {
    const char *name;
    uint64_t bytes;
} size_units[] = {
    { "B", 1ULL },
    { "KiB", 1024ULL },
    { "MiB", 1048576ULL },
    { "GiB", 1073741824ULL },
    { "TiB", 1099511627776ULL },
};

bool ks__parse_size_bytes(const char *text, int64_t *out, char **message)
{
    if (text[0] == '-') {
        if (ks__parse_int64(text, out)) {
            return true; /* -1 sentinels; the range check decides */
        }
    }
    uint64_t whole = 0;
    uint64_t fraction = 0;
    uint64_t scale = 1;
    const char *unit = NULL;
    if (!split_decimal(text, &whole, &fraction, &scale, &unit)) {
        *message =
            g_strdup_printf("'%s' is not a size (bytes, or a number and B KiB MiB GiB)", text);
        return false;
    }
    if (*unit == '\0') {
        if (scale != 1) {
            *message = g_strdup_printf("'%s' needs a unit: B KiB MiB GiB", text);
            return false;
        }
        unit = "B";
    }
    for (size_t i = 0; i < KS_ARRAY_COUNT(size_units); i++) {
        if (strcmp(unit, size_units[i].name) == 0) {
            if (!scale_exact(whole, fraction, scale, size_units[i].bytes, out)) {
                *message =
                    g_strdup_printf("'%s' is too large or not a whole number of bytes", text);
                return false;
            }
            return true;
        }
    }
    *message = g_strdup_printf("'%s' has an unknown unit '%s' (use B KiB MiB GiB)", text, unit);
    return false;
}

char *ks__format_duration(int64_t ns)
{
    if (ns == 0) {
        return g_strdup("0s");
    }
    if (ns < 0) {
        return g_strdup_printf("%" PRId64 "ns", ns);
    }
    for (size_t i = KS_ARRAY_COUNT(duration_units); i-- > 0;) {
        if ((uint64_t)ns % duration_units[i].ns == 0) {
            return g_strdup_printf("%" PRIu64 "%s", (uint64_t)ns / duration_units[i].ns,
                                   duration_units[i].name);
        }
    }
    return g_strdup_printf("%" PRId64 "ns", ns);
}

/* ---- names ------------------------------------------------------------------------- */

static bool legal_name_chars(const char *name)
{
    for (const char *p = name; *p != '\0'; p++) {
        bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-';
        if (!ok) {
            return false;
        }
    }
    return true;
}

bool ks__topic_name_check(const char *name, char **message)
{
    size_t length = strlen(name);
    if (length == 0) {
        *message = g_strdup("a topic needs a name: [topic NAME]");
        return false;
    }
    if (length > KS_TOPIC_NAME_BYTES_MAX) {
        *message = g_strdup_printf("topic name '%.20s...' is longer than %d characters", name,
                                   KS_TOPIC_NAME_BYTES_MAX);
        return false;
    }
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        *message = g_strdup_printf("topic name '%s' is not allowed", name);
        return false;
    }
    if (!legal_name_chars(name)) {
        *message = g_strdup_printf("topic name '%s' has a character Kafka rejects "
                                   "(allowed: a-z A-Z 0-9 . _ -)",
                                   name);
        return false;
    }
    if (strcmp(name, "__consumer_offsets") == 0 || strcmp(name, "__transaction_state") == 0) {
        *message = g_strdup_printf("topic name '%s' is Kafka's internal topic", name);
        return false;
    }
    return true;
}

bool ks__client_name_check(const char *name, const char *kind, char **message)
{
    size_t length = strlen(name);
    if (length == 0 && strcmp(kind, "scenario") == 0) {
        /* The caller puts "scenario " before it. */
        *message = g_strdup("name is empty: give 1 to 63 characters of a-z A-Z 0-9 . _ - (or "
                            "leave the key out: the file name is the default)");
        return false;
    }
    if (length == 0) {
        *message = g_strdup_printf("a %s needs a name: [%s NAME]", kind, kind);
        return false;
    }
    if (length > KS_SCENARIO_NAME_BYTES_MAX) {
        *message = g_strdup_printf("name '%.20s...' is longer than %d characters", name,
                                   KS_SCENARIO_NAME_BYTES_MAX);
        return false;
    }
    if (!legal_name_chars(name)) {
        *message = g_strdup_printf("name '%s' has a character outside a-z A-Z 0-9 . _ -", name);
        return false;
    }
    return true;
}

/* ---- values -------------------------------------------------------------------------- */

static char *choice_list(const struct ks__choice *choices)
{
    GString *text = g_string_new(NULL);
    for (const struct ks__choice *c = choices; c->name != NULL; c++) {
        g_string_append_printf(text, "%s%s", c == choices ? "" : ", ", c->name);
    }
    return g_string_free(text, FALSE);
}

/* "KEY = TEXT is out of range [MIN, MAX]" in the key's unit. Owned. */
static char *range_message(const struct ks__key_spec *spec, const char *text)
{
    if (spec->type == KS__VALUE_RATIO) {
        return g_strdup_printf("%s = %s is out of range [0, 1]", spec->name, text);
    }
    if (spec->type == KS__VALUE_DURATION || spec->type == KS__VALUE_DURATION_NEVER) {
        g_autofree char *low = ks__format_duration(spec->min);
        g_autofree char *high = ks__format_duration(spec->max);
        return g_strdup_printf("%s = %s is out of range [%s, %s]", spec->name, text, low, high);
    }
    return g_strdup_printf("%s = %s is out of range [%" PRId64 ", %" PRId64 "]%s", spec->name, text,
                           spec->min, spec->max,
                           spec->type == KS__VALUE_MS        ? " ms"
                           : spec->type == KS__VALUE_SECONDS ? " s"
                                                             : "");
}

static bool range_check(const struct ks__key_spec *spec, int64_t value, const char *text,
                        char **message)
{
    if (value >= spec->min && value <= spec->max) {
        return true;
    }
    *message = range_message(spec, text);
    return false;
}

/* An optional '-' and digits only: an integer, maybe too large for int64. */
static bool decimal_digits(const char *text)
{
    const char *p = text + (text[0] == '-');
    return p[0] != '\0' && strspn(p, "0123456789") == strlen(p);
}

static bool parse_ms(const struct ks__key_spec *spec, const char *text, int64_t *out_ns,
                     char **message)
{
    int64_t ms = 0;
    if (ks__parse_int64(text, &ms)) {
        if (!range_check(spec, ms, text, message)) {
            return false;
        }
        if (ms < 0) {
            *out_ns = ms; /* -1: forever / off, as Kafka */
        } else if (ms > INT64_MAX / 1000000) {
            *out_ns = KS_INT64_UNSET; /* beyond any run: never */
        } else {
            *out_ns = ms * 1000000;
        }
        return true;
    }
    if (decimal_digits(text)) {
        *message = range_message(spec, text); /* too many digits for an int64 */
        return false;
    }
    /* A unit is accepted too ("30s"); the range is checked in whole ms. */
    int64_t ns = 0;
    char *inner = NULL;
    if (!ks__parse_duration_ns(text, true, &ns, &inner)) {
        *message =
            g_strdup_printf("%s = %s: milliseconds expected (e.g. 30000 or 30s)", spec->name, text);
        g_free(inner);
        return false;
    }
    if (!range_check(spec, ns / 1000000, text, message)) {
        return false;
    }
    *out_ns = ns;
    return true;
}

bool ks__value_parse(const struct ks__key_spec *spec, const char *text, struct ks__value *out,
                     char **message)
{
    out->integer = 0;
    out->text = text;
    char *inner = NULL;
    switch (spec->type) {
    case KS__VALUE_INT32:
    case KS__VALUE_INT64:
        if (!ks__parse_int64(text, &out->integer)) {
            *message = decimal_digits(text)
                           ? range_message(spec, text)
                           : g_strdup_printf("%s = %s: an integer expected", spec->name, text);
            return false;
        }
        return range_check(spec, out->integer, text, message);
    case KS__VALUE_BOOL:
        if (g_ascii_strcasecmp(text, "true") == 0) {
            out->integer = 1;
            return true;
        }
        if (g_ascii_strcasecmp(text, "false") == 0) {
            out->integer = 0;
            return true;
        }
        *message = g_strdup_printf("%s = %s: true or false expected", spec->name, text);
        return false;
    case KS__VALUE_DURATION:
    case KS__VALUE_DURATION_NEVER:
        if (spec->type == KS__VALUE_DURATION_NEVER && strcmp(text, "never") == 0) {
            out->integer = KS_INT64_UNSET;
            return true;
        }
        if (!ks__parse_duration_ns(text, true, &out->integer, &inner)) {
            *message = g_strdup_printf("%s: %s%s", spec->name, inner,
                                       spec->type == KS__VALUE_DURATION_NEVER ? " (or never)" : "");
            g_free(inner);
            return false;
        }
        return range_check(spec, out->integer, text, message);
    case KS__VALUE_MS: return parse_ms(spec, text, &out->integer, message);
    case KS__VALUE_SECONDS:
        if (!ks__parse_int64(text, &out->integer)) {
            *message = decimal_digits(text)
                           ? range_message(spec, text)
                           : g_strdup_printf("%s = %s: whole seconds expected", spec->name, text);
            return false;
        }
        if (!range_check(spec, out->integer, text, message)) {
            return false;
        }
        out->integer *= 1000000000;
        return true;
    case KS__VALUE_SIZE32:
    case KS__VALUE_SIZE64:
    case KS__VALUE_BANDWIDTH: {
        g_autofree char *copy = g_strdup(text);
        if (spec->type == KS__VALUE_BANDWIDTH && g_str_has_suffix(copy, "/s")) {
            copy[strlen(copy) - 2] = '\0';
        }
        if (!ks__parse_size_bytes(copy, &out->integer, &inner)) {
            *message = g_strdup_printf("%s: %s", spec->name, inner);
            g_free(inner);
            return false;
        }
        return range_check(spec, out->integer, text, message);
    }
    case KS__VALUE_RATE: {
        g_autofree char *copy = g_strdup(text);
        if (g_str_has_suffix(copy, "/s")) {
            copy[strlen(copy) - 2] = '\0';
        }
        if (!ks__parse_int64(copy, &out->integer) || out->integer < 0) {
            *message = g_strdup_printf("%s = %s: a rate per second expected (e.g. 2000/s)",
                                       spec->name, text);
            return false;
        }
        return range_check(spec, out->integer, text, message);
    }
    case KS__VALUE_ENUM:
        for (const struct ks__choice *c = spec->choices; c->name != NULL; c++) {
            if (strcmp(c->name, text) == 0) {
                out->integer = c->value;
                return true;
            }
        }
        {
            g_autofree char *list = choice_list(spec->choices);
            const char *hint = strcmp(text, "cooperative-sticky") == 0
                                   ? " (ksim does not model cooperative rebalancing)"
                                   : "";
            *message =
                g_strdup_printf("%s = %s: expected one of %s%s", spec->name, text, list, hint);
        }
        return false;
    case KS__VALUE_STRING:
        /* An empty default ("") means "not set" (transactional.id); a given
         * value is never empty. */
        if (spec->bytes > 0 && text == spec->default_text && text[0] == '\0') {
            return true;
        }
        if (spec->bytes > 0 && (text[0] == '\0' || strlen(text) >= spec->bytes)) {
            *message = g_strdup_printf("%s: a text of 1 to %zu characters expected", spec->name,
                                       spec->bytes - 1);
            return false;
        }
        return true;
    case KS__VALUE_RATIO: {
        uint64_t whole = 0;
        uint64_t fraction = 0;
        uint64_t scale = 1;
        const char *rest = NULL;
        if (!split_decimal(text, &whole, &fraction, &scale, &rest) || *rest != '\0' ||
            !scale_exact(whole, fraction, scale, 1000, &out->integer)) {
            *message = g_strdup_printf("%s = %s: a ratio between 0 and 1 with at most 3 "
                                       "decimals expected",
                                       spec->name, text);
            return false;
        }
        return range_check(spec, out->integer, text, message);
    }
    case KS__VALUE_CUSTOM: return true;
    }
    ks_assert(false);
    return false;
}

void ks__value_store(const struct ks__key_spec *spec, void *base, const struct ks__value *value)
{
    char *field = (char *)base + spec->offset;
    switch (spec->type) {
    case KS__VALUE_INT32:
    case KS__VALUE_SIZE32:
    case KS__VALUE_RATIO: {
        ks_assert(value->integer >= INT32_MIN && value->integer <= INT32_MAX);
        int32_t v = (int32_t)value->integer;
        memcpy(field, &v, sizeof v);
        return;
    }
    case KS__VALUE_INT64:
    case KS__VALUE_DURATION:
    case KS__VALUE_DURATION_NEVER:
    case KS__VALUE_MS:
    case KS__VALUE_SECONDS:
    case KS__VALUE_SIZE64:
    case KS__VALUE_BANDWIDTH:
    case KS__VALUE_RATE: memcpy(field, &value->integer, sizeof value->integer); return;
    case KS__VALUE_BOOL: {
        bool v = value->integer != 0;
        memcpy(field, &v, sizeof v);
        return;
    }
    case KS__VALUE_ENUM:
        if (spec->choices == policy_choices) {
            struct ks_log_config *log = (struct ks_log_config *)(void *)field;
            log->cleanup_delete = (value->integer & 1) != 0;
            log->cleanup_compact = (value->integer & 2) != 0;
        } else {
            int v = (int)value->integer;
            memcpy(field, &v, sizeof v);
        }
        return;
    case KS__VALUE_STRING:
        if (spec->bytes > 0) {
            g_strlcpy(field, value->text, spec->bytes);
        } else {
            char *copy = g_strdup(value->text);
            char *old = NULL;
            memcpy(&old, field, sizeof old);
            g_free(old);
            memcpy(field, &copy, sizeof copy);
        }
        return;
    case KS__VALUE_CUSTOM: return;
    }
    ks_assert(false);
}

static JsonNode *ms_json(int64_t ns)
{
    JsonNode *node = json_node_new(JSON_NODE_VALUE);
    if (ns < 0) {
        json_node_set_int(node, ns);
    } else if (ns == KS_INT64_UNSET) {
        json_node_set_int(node, INT64_MAX); /* Long.MAX_VALUE as Kafka shows it */
    } else if (ns % 1000000 == 0) {
        json_node_set_int(node, ns / 1000000);
    } else {
        g_autofree char *text = ks__format_duration(ns);
        json_node_set_string(node, text);
    }
    return node;
}

JsonNode *ks__value_json(const struct ks__key_spec *spec, const void *base)
{
    const char *field = (const char *)base + spec->offset;
    JsonNode *node = json_node_new(JSON_NODE_VALUE);
    int32_t i32 = 0;
    int64_t i64 = 0;
    bool flag = false;
    int e = 0;
    switch (spec->type) {
    case KS__VALUE_INT32:
    case KS__VALUE_SIZE32:
        memcpy(&i32, field, sizeof i32);
        json_node_set_int(node, i32);
        return node;
    case KS__VALUE_RATIO:
        memcpy(&i32, field, sizeof i32);
        {
            /* Exact text: permille as a decimal, trailing zeros removed. */
            char text[16];
            if (i32 == 1000) {
                g_strlcpy(text, "1", sizeof text);
            } else {
                g_snprintf(text, sizeof text, "0.%03d", i32);
                size_t n = strlen(text);
                while (n > 3 && text[n - 1] == '0') {
                    text[--n] = '\0';
                }
                if (i32 == 0) {
                    g_strlcpy(text, "0", sizeof text);
                }
            }
            json_node_set_string(node, text);
        }
        return node;
    case KS__VALUE_INT64:
    case KS__VALUE_SIZE64:
    case KS__VALUE_BANDWIDTH:
    case KS__VALUE_RATE:
        memcpy(&i64, field, sizeof i64);
        json_node_set_int(node, i64);
        return node;
    case KS__VALUE_DURATION:
    case KS__VALUE_DURATION_NEVER: {
        memcpy(&i64, field, sizeof i64);
        if (i64 == KS_INT64_UNSET && spec->type == KS__VALUE_DURATION_NEVER) {
            json_node_set_string(node, "never");
            return node;
        }
        g_autofree char *text = ks__format_duration(i64);
        json_node_set_string(node, text);
        return node;
    }
    case KS__VALUE_MS:
        memcpy(&i64, field, sizeof i64);
        json_node_unref(node);
        return ms_json(i64);
    case KS__VALUE_SECONDS:
        memcpy(&i64, field, sizeof i64);
        json_node_set_int(node, i64 / 1000000000);
        return node;
    case KS__VALUE_BOOL:
        memcpy(&flag, field, sizeof flag);
        json_node_set_boolean(node, flag);
        return node;
    case KS__VALUE_ENUM:
        if (spec->choices == policy_choices) {
            const struct ks_log_config *log = (const void *)field;
            json_node_set_string(node, log->cleanup_delete && log->cleanup_compact
                                           ? "delete,compact"
                                       : log->cleanup_compact ? "compact"
                                                              : "delete");
            return node;
        }
        memcpy(&e, field, sizeof e);
        for (const struct ks__choice *c = spec->choices; c->name != NULL; c++) {
            if (c->value == e) {
                json_node_set_string(node, c->name);
                return node;
            }
        }
        ks_assert(false);
        return node;
    case KS__VALUE_STRING:
        if (spec->bytes > 0) {
            json_node_set_string(node, field);
        } else {
            const char *text = NULL;
            memcpy(&text, field, sizeof text);
            json_node_set_string(node, text != NULL ? text : "");
        }
        return node;
    case KS__VALUE_CUSTOM: break;
    }
    ks_assert(false);
    return node;
}

/* ---- the key reference (docs/scenario-format.md) ------------------------------------------- */

/* Writes a table cell: '|' escaped so that GitHub tables stay intact. */
static void cell(FILE *out, const char *text)
{
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '|') {
            fputs("\\|", out);
        } else {
            fputc(*p, out);
        }
    }
}

/* The value column of keys that scenario.c parses itself. */
static const struct {
    const char *name;
    const char *text;
} custom_values[] = {
    { "name", "text" },
    { "kafka.version", "Kafka version" },
    { "racks", "comma list" },
    { "assignment", "lists of broker ids" },
    { "topic", "topic name" },
    { "output.topic", "topic name" },
    { "action", "action" },
    { "when", "trigger" },
    { "target", "target (rolling-restart: targets)" },
    { "mode", "process, power" },
    { "groups", "targets | targets" },
    { "isolate", "target" },
    { "from", "targets" },
    { "to", "targets, or rewind position" },
    { "loss", "percent or ppm" },
    { "partition", "topic-partition" },
    { "fault", "fault name" },
    { "cluster", "cluster name" },
    { "source", "cluster name" },
    { "topics", "topic name" },
};

static char *type_text(enum ks__section_kind kind, const struct ks__key_spec *spec)
{
    if (kind == KS__SECTION_MIRROR && strcmp(spec->name, "target") == 0) {
        return g_strdup("cluster name");
    }
    switch (spec->type) {
    case KS__VALUE_INT32:
    case KS__VALUE_INT64:
        return g_strdup_printf("integer %" PRId64 "..%" PRId64, spec->min, spec->max);
    case KS__VALUE_BOOL: return g_strdup("true, false");
    case KS__VALUE_DURATION:
    case KS__VALUE_DURATION_NEVER: {
        g_autofree char *low = ks__format_duration(spec->min);
        g_autofree char *high = ks__format_duration(spec->max);
        return g_strdup_printf("duration %s..%s%s", low, high,
                               spec->type == KS__VALUE_DURATION_NEVER ? ", or never" : "");
    }
    case KS__VALUE_MS: return g_strdup_printf("ms %" PRId64 "..%" PRId64, spec->min, spec->max);
    case KS__VALUE_SECONDS:
        return g_strdup_printf("seconds %" PRId64 "..%" PRId64, spec->min, spec->max);
    case KS__VALUE_SIZE32:
    case KS__VALUE_SIZE64:
        return g_strdup_printf("bytes %" PRId64 "..%" PRId64, spec->min, spec->max);
    case KS__VALUE_BANDWIDTH: return g_strdup("bytes per second");
    case KS__VALUE_RATE: return g_strdup_printf("records/s 0..%" PRId64, spec->max);
    case KS__VALUE_ENUM: {
        g_autofree char *list = choice_list(spec->choices);
        return g_strdup_printf("one of: %s", list);
    }
    case KS__VALUE_STRING: return g_strdup("text");
    case KS__VALUE_RATIO: return g_strdup("ratio 0..1 (3 decimals)");
    case KS__VALUE_CUSTOM:
        for (size_t i = 0; i < KS_ARRAY_COUNT(custom_values); i++) {
            if (strcmp(custom_values[i].name, spec->name) == 0) {
                return g_strdup(custom_values[i].text);
            }
        }
        ks_assert(false); /* every custom key has a value text */
        return NULL;
    }
    ks_assert(false);
    return NULL;
}

static void write_table(FILE *out, enum ks__section_kind kind)
{
    size_t count = 0;
    const struct ks__key_spec *table = ks__key_table(kind, &count);
    fputs("| key | value | default | meaning |\n| --- | --- | --- | --- |\n", out);
    for (size_t i = 0; i < count; i++) {
        const struct ks__key_spec *spec = &table[i];
        g_autofree char *type = type_text(kind, spec);
        fprintf(out, "| `%s` | ", spec->name);
        cell(out, type);
        fputs(" | ", out);
        if (spec->default_text != NULL) {
            fprintf(out, "`%s`", spec->default_text[0] != '\0' ? spec->default_text : "\"\"");
        } else if (spec->inherit != NULL) {
            fprintf(out, "cluster's `%s`", spec->inherit);
        } else if (g_str_has_prefix(spec->doc, "Required")) {
            fputs("required", out);
        } else {
            fputs("-", out);
        }
        fputs(" | ", out);
        cell(out, spec->doc);
        fputs(" |\n", out);
    }
    fputs("\n", out);
}

void ks_scenario_write_key_reference(FILE *out)
{
    fprintf(
        out,
        "# Scenario file format\n"
        "\n"
        "<!-- Generated from the key tables in sim/scenario_keys.c; the sim/scenario test suite\n"
        "     fails when this file differs and writes the current text to\n"
        "     build/scenario-format.md. Do not edit by hand. -->\n"
        "\n"
        "A scenario is a GLib-style key file (INI): `[section]` headers and `key = value` lines.\n"
        "\n"
        "- The file is UTF-8 text of at most %d MiB, and a regular file (not a folder, device or\n"
        "  pipe). A NUL byte, invalid UTF-8 or a control character other than a tab is an error\n"
        "  with its line. Lines may end in `\\r\\n`, and a UTF-8 byte order mark at the very\n"
        "  start is skipped, as editors on Windows write both.\n"
        "- `#` starts a comment at the start of a line or after a value when a space or tab\n"
        "  comes before it (`acks = all   # the default`). A `#` inside a word stays.\n"
        "- A section or a key given twice is an error that names both lines.\n"
        "- An unknown section or key, a bad value, a value out of range, a reference to a\n"
        "  missing topic, client, fault or broker, and keys that contradict each other are\n"
        "  errors of the form `FILE:LINE: what is wrong` (exit status 2). Nothing is ignored.\n"
        "  An unknown key close to a known one gets a suggestion (`did you mean 'brokers'?`),\n"
        "  a key of another section says where it goes, and a Kafka setting that ksim does not\n"
        "  model says so (docs/model.md lists them).\n"
        "- Sections: `[scenario]`, `[cluster]`, `[topic NAME]`, `[producer NAME]`,\n"
        "  `[consumer NAME]`, `[fault NAME]`, `[expect]`, kind and name separated by spaces (a\n"
        "  tab inside the brackets is an error). At most %d topics, %d producers, %d\n"
        "  consumers and %d faults. Summed over every topic, at most %d partition\n"
        "  replicas (`partitions` x `replication.factor`) and %d partitions x brokers\n"
        "  (of the topic's cluster): what the model's memory and start-up grow with\n"
        "  (docs/scale-out.md, Limits). `__consumer_offsets` (in a cluster with a consumer)\n"
        "  and `__transaction_state` (with a transactional producer) count too.\n"
        "  Topic names follow Kafka's rule\n"
        "  (`a-z A-Z 0-9 . _ -`, at most %d characters, not `.` or `..`); other names use\n"
        "  the same characters, at most %d.\n"
        "- Keys in `[cluster]`, `[topic]`, `[producer]` and `[consumer]` are Kafka's own\n"
        "  configuration names with Kafka's current (4.0) defaults; ksim's own keys are marked\n"
        "  `ksim:`. `kafka.version` in `[scenario]` gives the defaults of another Kafka release\n"
        "  instead (the tables show 4.0's; docs/kafka-versions.md lists what each release\n"
        "  changes); a key written in the file or given by `--set` always wins.\n"
        "\n"
        "## Values and units\n"
        "\n"
        "- **duration**: a number and a unit, `ns us ms s m h`: `250ms`, `1.5s`, `2m`. Decimals\n"
        "  are exact; a value finer than 1ns (`1.5ns`) is an error, never rounded.\n"
        "- **ms** (Kafka's `*.ms` keys): a plain integer of milliseconds as in Kafka\n"
        "  (`30000`); a duration with a unit is accepted too (`30s`). `-1` keeps Kafka's\n"
        "  meaning where the key allows it, and 9223372036854775807 (Long.MAX_VALUE) means never.\n"
        "- **seconds** (`*.seconds`): a plain integer of seconds.\n"
        "- **bytes**: a plain integer (`16384`) or a number and `B KiB MiB GiB TiB`\n"
        "  (`1GiB`, `1.5KiB`); the result must be a whole number of bytes.\n"
        "- **bytes per second**: a size, optionally followed by `/s` (`500MiB/s`).\n"
        "- **records/s**: an integer, optionally followed by `/s` (`2000/s`).\n"
        "- Numbers are plain decimals: no `+`, exponent, hex, `nan` or `inf`. An integer too\n"
        "  large for its key is out of range; an `[expect]` value is below 2^53 in size.\n"
        "- **true, false**: as Kafka, case does not matter.\n"
        "\n"
        "## [scenario]\n\n",
        KS_SCENARIO_FILE_BYTES_MAX >> 20, KS_SCENARIO_TOPIC_COUNT_MAX, KS_SCENARIO_CLIENT_COUNT_MAX,
        KS_SCENARIO_CLIENT_COUNT_MAX, KS_SCENARIO_FAULT_COUNT_MAX, KS_SCENARIO_REPLICA_COUNT_MAX,
        KS_SCENARIO_METADATA_COUNT_MAX,
        KS_TOPIC_NAME_BYTES_MAX,
        KS_SCENARIO_NAME_BYTES_MAX);
    write_table(out, KS__SECTION_SCENARIO);
    fputs("## [cluster]\n\n"
          "Brokers have ids 1..`brokers`. Topic settings that a `[topic]` leaves out come from\n"
          "the broker defaults here (`log.segment.bytes` -> `segment.bytes`, and so on).\n\n",
          out);
    write_table(out, KS__SECTION_CLUSTER);
    fputs("`network.latency.A-B = DURATION` (for example `network.latency.1-2 = 20ms`) sets the\n"
          "one-way latency between brokers A and B in both directions; each pair once.\n\n"
          "Timing noise: `network.jitter`, `broker.task.phase` and the clients' `start.jitter`\n"
          "are drawn per seed, so runs of one scenario with different seeds differ as runs of\n"
          "a real cluster do (docs/model.md). A scenario that needs an exact window writes\n"
          "`network.jitter = 0s`, `broker.task.phase = aligned` and `start.jitter = 0s` (the\n"
          "ones it needs) and says why in a comment.\n\n"
          "## [topic NAME]\n\n",
          out);
    write_table(out, KS__SECTION_TOPIC);
    fputs("Rules: `replication.factor` <= `brokers`; `min.insync.replicas` <=\n"
          "`replication.factor`; an `assignment` has one list per partition, each of\n"
          "`replication.factor` distinct broker ids.\n\n"
          "## [producer NAME]\n\n",
          out);
    write_table(out, KS__SECTION_PRODUCER);
    fputs("Rules: `delivery.timeout.ms` >= `linger.ms` + `request.timeout.ms` (an explicit\n"
          "smaller value is an error; the default is raised to the sum, as Kafka does).\n\n"
          "## [consumer NAME]\n\n",
          out);
    write_table(out, KS__SECTION_CONSUMER);
    fputs("Rules: `heartbeat.interval.ms` < `session.timeout.ms`.\n\n"
          "## Several clusters: [cluster NAME] and [mirror NAME]\n\n"
          "A scenario with `[cluster NAME]` sections (at most 4) runs several clusters in one\n"
          "simulated world: one clock, one event order, one trace. Each takes every `[cluster]`\n"
          "key and has its own broker ids 1..`brokers`; the unnamed `[cluster]` is the\n"
          "one-cluster form and cannot be mixed with named ones. The keys of the one world\n"
          "(`network.jitter`, `disk.*`) are given in the first cluster only. Every `[topic]`\n"
          "names its cluster (`cluster = east`; a topic name is unique across clusters); a\n"
          "producer or consumer connects to the cluster of its topic. `network.latency.A-B`\n"
          "in `[scenario]`, with two cluster names (`network.latency.east-west = 40ms`), is\n"
          "the one-way latency of every link between the two clusters' nodes (default: the\n"
          "larger of their `network.latency`). The run folder holds each cluster's brokers\n"
          "under a folder of its name: `east/broker-1/orders-0/...`; a one-cluster run keeps\n"
          "`broker-1/...`. Timeline lines of a cluster start with its name; the events and\n"
          "partition_state tables give each cluster's own broker ids (a topic names its\n"
          "cluster).\n\n"
          "Faults name whole clusters: `action = crash` or `restart` with `target =\n"
          "cluster(NAME)` (every broker and controller of it; `mode = power` loses what they\n"
          "did not fsync; without `restart.after` the cluster is lost for good and stays down\n"
          "through the final phase), `action = partition` with `groups = cluster(A) |\n"
          "cluster(B)` (every link between the two sides; a mirror's node counts with its\n"
          "target), and `heal`. `crash` and `restart` also take one broker of a cluster as\n"
          "`target = NAME:ID` (`target = east:2`: broker 2 of east; `mode`, `restart.after`\n"
          "as for a whole cluster). A crash of a mirror's target cluster takes the mirror\n"
          "down until the target restarts. Faults fire `at` a time; triggers, other targets\n"
          "and the other actions are not modelled with several clusters yet.\n\n"
          "`action = failover` moves a client to the mirror's target (a disaster-recovery\n"
          "failover, KIP-382). `target = consumer(NAME)`: every consumer of its group on its\n"
          "cluster stops, and a standby of each (`NAME.TARGET`) joins the group on the target\n"
          "and reads the remote topic from the group's offsets there. `target =\n"
          "producer(NAME)`: the producer stops (what its cluster had not acknowledged is not\n"
          "resent), and a standby (`NAME.TARGET`, same settings, its `count` counted afresh)\n"
          "writes from then on to the remote topic `<source>.<topic>` on the target: the\n"
          "application points `bootstrap.servers` at the target and keeps writing the topic\n"
          "it knows by name, which there is MM2's copy (as with IdentityReplicationPolicy,\n"
          "KIP-690; ksim's topic names are unique across clusters, so the remote topic\n"
          "stands for it). Each producer's records are judged on the cluster it wrote them\n"
          "to: the standby's in the target's final read (`acked_lost`, `duplicates`), the\n"
          "original's on the source; the standby's records in the remote topic are not\n"
          "copies (`mirrored`, `mirror_duplicates` leave them out).\n\n"
          "`[mirror NAME]` is one MirrorMaker 2 flow `source->target` (KIP-382): a source\n"
          "task that copies the topic to its remote topic `<source>.<topic>` on the target\n"
          "(same partition, key, value, timestamp and headers), writes offset syncs to\n"
          "`mm2-offset-syncs.<target>.internal` on the source, and a checkpoint task that\n"
          "writes the source groups' translated offsets to `<source>.checkpoints.internal` on\n"
          "the target (and with `sync.group.offsets.enabled`, KIP-545, commits them to the\n"
          "group there). It checkpoints every group with a consumer of the source topic. A\n"
          "consumer on the target may read the remote topic; the records keep their\n"
          "producer's identity header, so the checker knows them.\n\n",
          out);
    write_table(out, KS__SECTION_MIRROR);
    fputs("Rules: `source` and `target` are different clusters; the source topic lives on\n"
          "the source; a `[topic]` of the remote topic's name, if given, lives on the target\n"
          "with the source topic's partition count.\n\n"
          "A consumer with `output.topic` is a **processor** (consume-transform-produce, as a\n"
          "Kafka Streams application): for each record it processes it sends one record to\n"
          "`output.topic` through a producer of its own, named after the consumer (it appears\n"
          "among the producers in the records table and in `--json` params; `acks = all`,\n"
          "idempotent, no workload keys). A `[producer NAME]` of the consumer's name, or\n"
          "`--set producer.NAME.KEY`, sets that producer's client keys (`acks`, `linger.ms`,\n"
          "`batch.size`, `compression.type`, `delivery.timeout.ms`, `transaction.timeout.ms`,\n"
          "...); `topic`, `cluster`, `transactional.id` (the consumer's), the workload keys\n"
          "(`rate`, `count`, `keys`, `value.*`, `start`, `start.jitter`) and `transaction.records`\n"
          "and `transaction.abort.rate` are the processor's and refused there; an exactly-once\n"
          "processor's producer keeps `enable.idempotence = true` and `acks = all`. The two are\n"
          "one application: a fault that crashes,\n"
          "restarts or pauses either takes the other along (network faults name both). With\n"
          "`transactional.id` it is exactly-once (`processing.guarantee = exactly_once_v2`):\n"
          "after each poll's records the consumed offsets go into the producer's transaction\n"
          "(`sendOffsetsToTransaction` with the consumer's group metadata, KIP-447) and the\n"
          "transaction commits; an aborted transaction makes the consumer rejoin and resume\n"
          "from the committed offsets. Without it, at-least-once: `flush()`, then\n"
          "`commitSync()`. Rules: `commit = after-process`; `output.topic` another topic\n"
          "than `topic`; `transactional.id` only with `output.topic`, and no two processors\n"
          "with the same one (a Kafka Streams thread's producer has its own, KIP-447's\n"
          "exactly_once_v2, and two live producers sharing one fence each other; a zombie is\n"
          "one processor paused or crashed, as in `scenarios/eos-zombie-processor.ini`; two\n"
          "`[producer]` sections may share one, a later instance fencing an earlier). Metrics\n"
          "`eos_missing` and `eos_duplicates` (docs/metrics.md)\n"
          "appear when a scenario has a processor.\n\n"
          "## [fault NAME]\n\n"
          "A fault fires once, `at` a simulated time (before the end of `duration`) or `when`\n"
          "a trigger first holds. Keys that do not apply to the action are errors.\n\n",
          out);
    write_table(out, KS__SECTION_FAULT);
    ks_fault_actions_write_reference(out);
    fputs("\n"
          "### Targets\n"
          "\n"
          "Resolved when the fault fires: a broker id; `leader(TP)`; `follower(TP)`, the first\n"
          "replica in assignment order that is not the leader; `followers(TP)`, all of them;\n"
          "`controller`; `random`, a live broker drawn from the fault random stream;\n"
          "`producer(NAME)`, `consumer(NAME)`. TP is `topic-partition` as Kafka writes it\n"
          "(`orders-0`). Network faults take comma lists of the same names, clients\n"
          "included; a node a partition does not name keeps its links, and a link is down\n"
          "while any active fault cuts it.\n"
          "\n"
          "### Triggers\n"
          "\n"
          "`when = FUNCTION(ARGS) OP INTEGER`, with OP one of `== = != < <= > >=`:\n"
          "\n"
          "| function | value |\n"
          "| --- | --- |\n"
          "| `hw(B, TP)` | high watermark of broker B's replica of TP (-1 if it has none) |\n"
          "| `leo(B, TP)` | log end offset of broker B's replica of TP (-1 if it has none) |\n"
          "| `isr_size(TP)` | size of TP's ISR as the controller knows it |\n"
          "| `crashed(B)` | how many times broker B has crashed; bare `crashed(1)` means >= 1 |\n"
          "| `restarted(B)` | how many times broker B has restarted; bare means >= 1 |\n"
          "| `elected(TP)` | leader changes of TP after its first election; bare means >= 1 |\n"
          "| `acked(P)` | records producer P saw acknowledged |\n"
          "\n"
          "A trigger is checked after every event and fires once, the first time it holds;\n"
          "`delay` postpones the action.\n"
          "\n"
          "## [expect]\n"
          "\n"
          "Each key is a run metric or `partition.TP.leader`, `partition.TP.isr`,\n"
          "`partition.TP.leader_epoch`, `partition.TP.hw` (the final state). Each value is a\n"
          "number, or for `isr` a comma list compared as a set, optionally after an operator\n"
          "`= != < <= > >=` (a bare value means `=`): `acked_lost = 0`, `acked_lost = > 0`,\n"
          "`unavailable_ms = >= 1000`, `partition.orders-0.isr = 2,3`. `isr` with `< <= > >=`\n"
          "compares the ISR's size (`partition.orders-0.isr = >= 2`). `trace_hash` compares\n"
          "with `=` or `!=` against its 16 hex digits.\n"
          "\n"
          "Metrics:",
          out);
    for (int m = 0; m < KS_METRIC_COUNT; m++) {
        fprintf(out, "%s `%s`", m == 0 ? "" : ",", metric_names[m]);
    }
    fputs(".\n"
          "\n"
          "## --set\n"
          "\n"
          "`ksim run FILE --set SECTION.KEY=VALUE` overrides or adds one key, checked exactly\n"
          "as in a file: `scenario.duration=30s`, `cluster.unclean.leader.election.enable=true`,\n"
          "`cluster.network.latency.1-2=20ms`, `topic.orders.min.insync.replicas=2`,\n"
          "`producer.p1.acks=1`, `consumer.c1.commit=atomic`, `fault.kill-leader.at=5s`,\n"
          "`expect.acked_lost=>0`. The named topic, client or fault must exist (the longest\n"
          "matching topic name wins when names contain dots). All `--set` values are applied\n"
          "before the rules between keys are checked; an error reads\n"
          "`--set KEY=VALUE: what is wrong`. A value must be one a file can hold: one line,\n"
          "no control characters, and no `#` at its start or after a space.\n"
          "\n"
          "## Recorded parameters\n"
          "\n"
          "`runs.params` holds every effective setting as JSON, defaults filled in, in\n"
          "Kafka's names and units (ms as integers, sizes in bytes, ksim durations as text\n"
          "such as `\"250ms\"`), keys in a fixed order: sections `scenario`, `cluster`,\n"
          "`topics`, `producers`, `consumers`, `faults`, `expect`. The seed is not part of it\n"
          "(it has its own column), so runs that differ only by seed have equal params.\n",
          out);
}
