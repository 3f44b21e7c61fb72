/*
** tests/core/test_config.c: Kafka's defaults, defined once in core/config.c.
**
** Goal: the defaults that hand-built configs start from (core/cluster.c, the
** test and bench fixtures) are the defaults a user gets. Method: load a
** scenario that sets nothing but the required keys through the scenario
** loader, whose key table is the documented source of every default, and
** compare each config it yields with the core/config.c function, field by
** field (for a readable failure) and then as whole structs (so a field added
** to core/config.h without a default in one of the two places fails here).
** Then the one min-ISR rule.
*/
#include "../../core/config.h"
#include "../../sim/scenario.h"
#include "../testlib.h"

#include <string.h>

static const char *const MINIMAL_SCENARIO = "[topic t]\n"
                                            "[producer p]\n"
                                            "topic = t\n"
                                            "[consumer c]\n"
                                            "topic = t\n"
                                            "group.id = g\n";

static struct ks_scenario *load_minimal(void)
{
    struct ks_scenario *scenario = NULL;
    GError *error = NULL;
    bool ok = ks_scenario_load_from_data("defaults.ini", MINIMAL_SCENARIO, &scenario, &error);
    if (!ok) {
        fprintf(stderr, "defaults.ini: %s\n", error != NULL ? error->message : "?");
        g_clear_error(&error);
    }
    CU_ASSERT_FATAL(ok);
    CU_ASSERT_FATAL(scenario->topic_count == 1);
    CU_ASSERT_FATAL(scenario->producer_count == 1);
    CU_ASSERT_FATAL(scenario->consumer_count == 1);
    return scenario;
}

#define SAME(field) CU_ASSERT_EQUAL(loaded->field, core->field)

static void test_cluster_defaults(void)
{
    struct ks_scenario *scenario = load_minimal();
    struct ks_cluster_config defaults;
    ks_cluster_config_defaults(&defaults);
    const struct ks_cluster_config *loaded = &scenario->cluster;
    const struct ks_cluster_config *core = &defaults;
    SAME(broker_count);
    SAME(controller_count);
    SAME(replica_lag_ns_max);
    SAME(replica_fetch_wait_ns_max);
    SAME(replica_fetch_min_bytes);
    SAME(replica_fetch_max_bytes);
    SAME(replica_fetch_response_max_bytes);
    SAME(replica_fetch_backoff_ns);
    SAME(replica_hw_checkpoint_interval_ns);
    SAME(broker_session_timeout_ns);
    SAME(broker_heartbeat_interval_ns);
    SAME(unclean_leader_election_enable);
    SAME(auto_leader_rebalance_enable);
    SAME(leader_imbalance_check_interval_ns);
    SAME(recovery_point_checkpoint_interval_ns);
    SAME(retention_check_interval_ns);
    SAME(offsets_topic_partition_count);
    SAME(offsets_topic_replication_factor);
    SAME(group_initial_rebalance_delay_ns);
    SAME(group_min_session_timeout_ns);
    SAME(group_max_session_timeout_ns);
    SAME(offsets_commit_timeout_ns);
    SAME(min_insync_replicas);
    SAME(truncation);
    SAME(hw_requires_min_isr);
    CU_ASSERT_EQUAL(memcmp(loaded, core, sizeof *core), 0);
    ks_scenario_free(scenario);
}

static void check_log(const struct ks_log_config *loaded)
{
    struct ks_log_config defaults;
    ks_log_config_defaults(&defaults);
    const struct ks_log_config *core = &defaults;
    SAME(segment_bytes);
    SAME(segment_ns);
    SAME(index_interval_bytes);
    SAME(segment_index_bytes);
    SAME(flush_messages);
    SAME(flush_ns);
    SAME(retention_ns);
    SAME(retention_bytes);
    SAME(cleanup_compact);
    SAME(cleanup_delete);
    SAME(delete_retention_ns);
    SAME(min_compaction_lag_ns);
    SAME(min_cleanable_dirty_ratio_permille);
    SAME(max_message_bytes);
    CU_ASSERT_EQUAL(memcmp(loaded, core, sizeof *core), 0);
}

static void test_log_and_topic_defaults(void)
{
    struct ks_scenario *scenario = load_minimal();
    check_log(&scenario->log_defaults);  /* the broker's log.* */
    check_log(&scenario->topics[0].log); /* what a topic inherits */
    struct ks_topic_config *defaults = g_new0(struct ks_topic_config, 1);
    ks_topic_config_defaults(defaults);
    struct ks_topic_config *loaded = &scenario->topics[0];
    const struct ks_topic_config *core = defaults;
    CU_ASSERT_STRING_EQUAL(loaded->name, "t");
    SAME(partition_count);
    SAME(replication_factor);
    SAME(min_insync_replicas);
    SAME(unclean_leader_election_enable);
    SAME(assignment); /* NULL: no assignment key */
    g_strlcpy(defaults->name, loaded->name, sizeof defaults->name);
    CU_ASSERT_EQUAL(memcmp(loaded, core, sizeof *core), 0);
    g_free(defaults);
    ks_scenario_free(scenario);
}

static void test_producer_defaults(void)
{
    struct ks_scenario *scenario = load_minimal();
    struct ks_producer_config defaults;
    ks_producer_config_defaults(&defaults);
    const struct ks_producer_config *loaded = &scenario->producers[0];
    const struct ks_producer_config *core = &defaults;
    CU_ASSERT_STRING_EQUAL(loaded->name, "p");
    SAME(topic_index);
    SAME(acks);
    SAME(enable_idempotence);
    SAME(retries);
    SAME(max_in_flight);
    SAME(linger_ns);
    SAME(batch_size_bytes);
    SAME(buffer_memory_bytes);
    SAME(delivery_timeout_ns);
    SAME(request_timeout_ns);
    SAME(retry_backoff_ns);
    SAME(retry_backoff_ns_max);
    SAME(metadata_max_age_ns);
    SAME(max_block_ns);
    SAME(rate_per_s);
    SAME(count);
    SAME(key_count);
    SAME(value_bytes);
    SAME(start_ns);
    g_strlcpy(defaults.name, loaded->name, sizeof defaults.name);
    CU_ASSERT_EQUAL(memcmp(loaded, core, sizeof *core), 0);
    ks_scenario_free(scenario);
}

static void test_consumer_defaults(void)
{
    struct ks_scenario *scenario = load_minimal();
    struct ks_consumer_config defaults;
    ks_consumer_config_defaults(&defaults);
    const struct ks_consumer_config *loaded = &scenario->consumers[0];
    const struct ks_consumer_config *core = &defaults;
    CU_ASSERT_STRING_EQUAL(loaded->name, "c");
    CU_ASSERT_STRING_EQUAL(loaded->group_id, "g");
    SAME(topic_index);
    SAME(commit);
    SAME(auto_commit_interval_ns);
    SAME(processing_ns);
    SAME(auto_offset_reset);
    SAME(session_timeout_ns);
    SAME(heartbeat_interval_ns);
    SAME(max_poll_interval_ns);
    SAME(max_poll_records);
    SAME(fetch_min_bytes);
    SAME(fetch_max_wait_ns);
    SAME(max_partition_fetch_bytes);
    SAME(assignor);
    SAME(start_ns);
    g_strlcpy(defaults.name, loaded->name, sizeof defaults.name);
    g_strlcpy(defaults.group_id, loaded->group_id, sizeof defaults.group_id);
    CU_ASSERT_EQUAL(memcmp(loaded, core, sizeof *core), 0);
    ks_scenario_free(scenario);
}

/* min.insync.replicas as the broker, the controller and the driver apply it:
 * at most the replication factor. */
static void test_min_isr(void)
{
    struct ks_topic_config *topic = g_new0(struct ks_topic_config, 1);
    ks_topic_config_defaults(topic);
    CU_ASSERT_EQUAL(ks_topic_min_isr(topic), 1);
    topic->replication_factor = 3;
    topic->min_insync_replicas = 2;
    CU_ASSERT_EQUAL(ks_topic_min_isr(topic), 2);
    topic->min_insync_replicas = 3;
    CU_ASSERT_EQUAL(ks_topic_min_isr(topic), 3);
    topic->replication_factor = 2; /* the loader refuses this; the rule still caps it */
    CU_ASSERT_EQUAL(ks_topic_min_isr(topic), 2);
    g_free(topic);
}

/* An explicit assignment is as large as its topic and owned by its config:
 * a copy has rows of its own (changing the source leaves it as it was), a
 * config without one copies as NULL, and deinit releases it (ASan's leak
 * check fails otherwise) and may run twice. */
static void test_assignment_copy(void)
{
    struct ks_topic_config *source = g_new0(struct ks_topic_config, 1);
    struct ks_topic_config *copy = g_new0(struct ks_topic_config, 1);
    ks_topic_config_defaults(source);
    source->partition_count = 3;
    source->replication_factor = 2;
    ks_topic_config_assignment_new(source);
    CU_ASSERT_PTR_NOT_NULL_FATAL(source->assignment);
    CU_ASSERT_EQUAL(source->assignment[2][1], 0); /* zeroed for the caller to fill */
    for (int32_t p = 0; p < 3; p++) {
        source->assignment[p][0] = p + 1;
        source->assignment[p][1] = (p + 1) % 3 + 1;
    }
    ks_topic_config_copy(copy, source);
    CU_ASSERT_PTR_NOT_NULL_FATAL(copy->assignment);
    CU_ASSERT_PTR_NOT_EQUAL(copy->assignment, source->assignment);
    source->assignment[2][0] = 9;
    CU_ASSERT_EQUAL(copy->assignment[2][0], 3);
    CU_ASSERT_EQUAL(copy->assignment[2][1], 1);
    CU_ASSERT_EQUAL(copy->partition_count, 3);
    ks_topic_config_deinit(source);
    CU_ASSERT_PTR_NULL(source->assignment);
    ks_topic_config_deinit(source);
    ks_topic_config_deinit(copy);
    ks_topic_config_copy(copy, source); /* none: none */
    CU_ASSERT_PTR_NULL(copy->assignment);
    ks_topic_config_deinit(NULL);
    g_free(source);
    g_free(copy);
}

void ks_test_register_config(void)
{
    static const struct ks_test_case cases[] = {
        { "cluster defaults equal the loader's", test_cluster_defaults },
        { "log and topic defaults equal the loader's", test_log_and_topic_defaults },
        { "producer defaults equal the loader's", test_producer_defaults },
        { "consumer defaults equal the loader's", test_consumer_defaults },
        { "min ISR is min.insync.replicas capped at RF", test_min_isr },
        { "an explicit assignment is copied and freed with its topic", test_assignment_copy },
    };
    KS_TEST_ADD_SUITE("core/config", cases);
}
