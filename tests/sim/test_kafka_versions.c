/* tests/sim/test_kafka_versions.c: the kafka.version table (sim/kafka_versions.c).
 *
 * Method: the table's invariants V1..V3 are checked row by row: one default,
 * Kafka 4.0, whose presets are the key table's defaults (so a scenario
 * without kafka.version loads exactly as before, params JSON included);
 * rows in release order; every row's scenario loads, and its defaults reach
 * the configs with the values the row gives. Then the version texts a user
 * writes (lines, patch releases, nonsense), explicit keys and --set winning
 * over a preset, topics inheriting a preset through [cluster], and
 * docs/kafka-versions.md holding exactly the generated table. */
#include "../../sim/kafka_versions.h"
#include "../../sim/scenario.h"
#include "../../sim/scenario_int.h"
#include "../testlib.h"

#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <string.h>

#define MS INT64_C(1000000)

/* Every section whose defaults a row sets, so every column reaches a config. */
#define SECTIONS                                                                               \
    "[topic t]\nreplication.factor = 1\n[producer p]\ntopic = t\n[consumer c]\ngroup.id = g\n" \
    "topic = t\n"

static struct ks_scenario *load_text(const char *text)
{
    struct ks_scenario *s = NULL;
    g_autoptr(GError) error = NULL;
    if (!ks_scenario_load_from_data("v.ini", text, &s, &error)) {
        fprintf(stderr, "\n%s\n", error->message);
        return NULL;
    }
    return s;
}

static struct ks_scenario *load_version(const char *version)
{
    g_autofree char *text = g_strdup_printf("[scenario]\nkafka.version = %s\n" SECTIONS, version);
    return load_text(text);
}

static int64_t ms_text(const char *text)
{
    return g_ascii_strtoll(text, NULL, 10) * MS;
}

static void test_one_default(void)
{
    size_t count = 0;
    const struct ks_kafka_version *rows = ks_kafka_versions(&count);
    int defaults = 0;
    for (size_t i = 0; i < count; i++) {
        defaults += rows[i].is_default;
    }
    CU_ASSERT_EQUAL(defaults, 1); /* V1 */
    CU_ASSERT_STRING_EQUAL(ks_kafka_version_default()->name, "4.0");
    /* The key table documents the same default. */
    const struct ks__key_spec *spec = ks__key_find(KS__SECTION_SCENARIO, "kafka.version");
    CU_ASSERT_PTR_NOT_NULL_FATAL(spec);
    CU_ASSERT_STRING_EQUAL(spec->default_text, ks_kafka_version_default()->name);
}

/* V1: the default row's presets are the key table's defaults. */
static void test_default_row_is_key_table(void)
{
    static const struct {
        enum ks__section_kind kind;
        const char *section;
    } sections[] = { { KS__SECTION_CLUSTER, "cluster" },
                     { KS__SECTION_PRODUCER, "producer" },
                     { KS__SECTION_CONSUMER, "consumer" } };
    const struct ks_kafka_version *v = ks_kafka_version_default();
    int checked = 0;
    for (size_t s = 0; s < G_N_ELEMENTS(sections); s++) {
        size_t count = 0;
        const struct ks__key_spec *table = ks__key_table(sections[s].kind, &count);
        for (size_t i = 0; i < count; i++) {
            const char *preset = ks_kafka_version_preset(v, sections[s].section, table[i].name);
            if (preset == NULL) {
                continue;
            }
            checked++;
            if (strcmp(preset, table[i].default_text) != 0) {
                fprintf(stderr, "\n%s: 4.0 row %s, key table %s\n", table[i].name, preset,
                        table[i].default_text);
            }
            CU_ASSERT_STRING_EQUAL(preset, table[i].default_text);
        }
    }
    CU_ASSERT_EQUAL(checked, 21); /* every column names a key of these tables */
    /* And so a scenario without kafka.version equals one with 4.0, params included. */
    g_autoptr(ks_scenario) plain = load_text(SECTIONS);
    g_autoptr(ks_scenario) four = load_version("4.0");
    CU_ASSERT_PTR_NOT_NULL_FATAL(plain);
    CU_ASSERT_PTR_NOT_NULL_FATAL(four);
    g_autofree char *a = ks_scenario_params_json(plain);
    g_autofree char *b = ks_scenario_params_json(four);
    CU_ASSERT_STRING_EQUAL(a, b);
    CU_ASSERT_PTR_NOT_NULL(strstr(a, "\"kafka.version\":\"4.0\""));
}

/* V2: names unique, in release order. */
static void test_release_order(void)
{
    size_t count = 0;
    const struct ks_kafka_version *rows = ks_kafka_versions(&count);
    CU_ASSERT(count >= 10);
    for (size_t i = 1; i < count; i++) {
        unsigned a_major = 0, a_minor = 0, b_major = 0, b_minor = 0;
        CU_ASSERT_EQUAL(sscanf(rows[i - 1].name, "%u.%u", &a_major, &a_minor), 2);
        CU_ASSERT_EQUAL(sscanf(rows[i].name, "%u.%u", &b_major, &b_minor), 2);
        CU_ASSERT(a_major < b_major || (a_major == b_major && a_minor < b_minor));
        CU_ASSERT(strcmp(rows[i - 1].released, rows[i].released) < 0);
    }
    /* The lines the issue names are all there. */
    static const char *const named[] = { "0.10", "0.11", "1.1", "2.4", "2.5",
                                         "2.8",  "3.0",  "3.7", "4.0", "4.1" };
    for (size_t i = 0; i < G_N_ELEMENTS(named); i++) {
        const struct ks_kafka_version *v = ks_kafka_version_find(named[i]);
        CU_ASSERT_PTR_NOT_NULL(v);
        if (v != NULL) {
            CU_ASSERT_STRING_EQUAL(v->name, named[i]);
        }
    }
}

/* V3: every row loads, and its defaults are what the configs get. */
static void test_every_row_loads(void)
{
    size_t count = 0;
    const struct ks_kafka_version *rows = ks_kafka_versions(&count);
    for (size_t i = 0; i < count; i++) {
        const struct ks_kafka_version *v = &rows[i];
        g_autoptr(ks_scenario) s = load_version(v->name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        CU_ASSERT_PTR_EQUAL(s->kafka_version, v);
        const struct ks_producer_config *p = &s->producers[0];
        const struct ks_consumer_config *c = &s->consumers[0];
        const struct ks_cluster_config *k = &s->cluster;
        CU_ASSERT_EQUAL(p->acks, strcmp(v->acks, "all") == 0 ? KS_ACKS_ALL : KS_ACKS_LEADER);
        CU_ASSERT_EQUAL(p->enable_idempotence, strcmp(v->enable_idempotence, "true") == 0);
        CU_ASSERT_EQUAL(p->retries, (int32_t)g_ascii_strtoll(v->retries, NULL, 10));
        CU_ASSERT_EQUAL(p->linger_ns, ms_text(v->linger_ms));
        CU_ASSERT_EQUAL(p->retry_backoff_ns_max, ms_text(v->retry_backoff_max_ms));
        CU_ASSERT_EQUAL(c->session_timeout_ns, ms_text(v->session_timeout_ms));
        CU_ASSERT_EQUAL(c->assignor, KS_ASSIGNOR_RANGE);
        CU_ASSERT_EQUAL(k->replica_lag_ns_max, ms_text(v->replica_lag_time_max_ms));
        CU_ASSERT_EQUAL(k->unclean_leader_election_enable,
                        strcmp(v->unclean_leader_election_enable, "true") == 0);
        CU_ASSERT_EQUAL(k->group_initial_rebalance_delay_ns,
                        ms_text(v->group_initial_rebalance_delay_ms));
        CU_ASSERT_EQUAL(k->broker_session_timeout_ns, ms_text(v->broker_session_timeout_ms));
        CU_ASSERT_EQUAL(k->broker_heartbeat_interval_ns, ms_text(v->broker_heartbeat_interval_ms));
        CU_ASSERT_EQUAL(k->truncation, strcmp(v->replication_truncation, "high-watermark") == 0
                                           ? KS_TRUNCATION_HIGH_WATERMARK
                                           : KS_TRUNCATION_LEADER_EPOCH);
        CU_ASSERT_EQUAL(k->hw_requires_min_isr, strcmp(v->hw_requires_min_isr, "true") == 0);
        CU_ASSERT_EQUAL(k->eligible_leader_replicas_enable,
                        strcmp(v->eligible_leader_replicas_enable, "true") == 0);
        /* The topic inherits the cluster's unclean setting, preset included. */
        CU_ASSERT_EQUAL(s->topics[0].unclean_leader_election_enable,
                        k->unclean_leader_election_enable);
        CU_ASSERT_PTR_NOT_NULL(v->notes);
        CU_ASSERT_PTR_NOT_NULL(v->sources);
        CU_ASSERT_PTR_NOT_NULL(v->null_key_partitioner);
    }
    /* A few facts spelled out (docs/upgrade.html). */
    const struct ks_kafka_version *old = ks_kafka_version_find("0.10");
    CU_ASSERT_STRING_EQUAL(old->replication_truncation, "high-watermark");
    CU_ASSERT_STRING_EQUAL(old->unclean_leader_election_enable, "true");
    CU_ASSERT_STRING_EQUAL(ks_kafka_version_find("2.4")->replica_lag_time_max_ms, "10000");
    CU_ASSERT_STRING_EQUAL(ks_kafka_version_find("2.5")->replica_lag_time_max_ms, "30000");
    CU_ASSERT_STRING_EQUAL(ks_kafka_version_find("2.8")->acks, "1");
    CU_ASSERT_STRING_EQUAL(ks_kafka_version_find("3.0")->acks, "all");
    CU_ASSERT_STRING_EQUAL(ks_kafka_version_find("3.6")->hw_requires_min_isr, "false");
    CU_ASSERT_STRING_EQUAL(ks_kafka_version_find("3.7")->hw_requires_min_isr, "true");
    CU_ASSERT_STRING_EQUAL(ks_kafka_version_find("4.0")->eligible_leader_replicas_enable, "false");
    CU_ASSERT_STRING_EQUAL(ks_kafka_version_find("4.1")->eligible_leader_replicas_enable, "true");
    CU_ASSERT_EQUAL(ks_kafka_version_find("3.9")->controller, KS_KAFKA_CONTROLLER_ZOOKEEPER);
    CU_ASSERT_EQUAL(ks_kafka_version_find("4.0")->controller, KS_KAFKA_CONTROLLER_KRAFT);
}

static void test_version_texts(void)
{
    static const struct {
        const char *text;
        const char *line; /* NULL: refused */
    } cases[] = {
        { "3.7", "3.7" },       { "3.7.1", "3.7" },   { "4.0.0", "4.0" },     { "0.10", "0.10" },
        { "0.10.2.1", "0.10" }, { "0.10.0", "0.10" }, { "0.11.0.3", "0.11" }, { "3.10", NULL },
        { "5.0", NULL },        { "3", NULL },        { "3.7.1.2", NULL },    { "3..7", NULL },
        { "3.7.", NULL },       { ".3.7", NULL },     { "3.7a", NULL },       { "", NULL },
        { "latest", NULL },     { "-3.7", NULL },     { "0.9", NULL },        { "12345.1", NULL },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        const struct ks_kafka_version *v = ks_kafka_version_find(cases[i].text);
        if (cases[i].line == NULL) {
            if (v != NULL) {
                fprintf(stderr, "\n'%s' found as %s\n", cases[i].text, v->name);
            }
            CU_ASSERT_PTR_NULL(v);
        } else {
            CU_ASSERT_PTR_NOT_NULL_FATAL(v);
            CU_ASSERT_STRING_EQUAL(v->name, cases[i].line);
        }
    }
    /* The params record the line, not the text. */
    g_autoptr(ks_scenario) s = load_version("3.7.1");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    g_autofree char *json = ks_scenario_params_json(s);
    CU_ASSERT_PTR_NOT_NULL(strstr(json, "\"kafka.version\":\"3.7\""));
    /* The message names every line. */
    g_autofree char *names = ks_kafka_version_names();
    CU_ASSERT(g_str_has_prefix(names, "0.10, 0.11, "));
    CU_ASSERT(g_str_has_suffix(names, ", 4.0, 4.1"));
}

/* The transaction protocol by line: KIP-447's group metadata in
 * TxnOffsetCommit from 2.5, transaction.version 2 (KIP-890 part 2) for the
 * 4.0 and 4.1 rows, 0 before; a written key wins. */
static void test_transaction_lines(void)
{
    static const struct {
        const char *version;
        bool group_metadata;
        int32_t transaction_version;
    } cases[] = {
        { "0.11", false, 0 }, { "2.4", false, 0 }, { "2.5", true, 0 },
        { "3.6", true, 0 },   { "3.9", true, 0 },  { "4.0", true, 2 },
        { "4.1", true, 2 },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(ks_scenario) s = load_version(cases[i].version);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        CU_ASSERT_EQUAL(s->cluster.client_txn_group_metadata, cases[i].group_metadata);
        CU_ASSERT_EQUAL(s->cluster.transaction_version, cases[i].transaction_version);
    }
    g_autoptr(ks_scenario) upgraded = load_text("[scenario]\nkafka.version = 4.0\n"
                                                "[cluster]\ntransaction.version = 0\n" SECTIONS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(upgraded);
    CU_ASSERT_EQUAL(upgraded->cluster.transaction_version, 0);
}

/* Explicit keys win over the preset, in the file and by --set; a preset
 * that the file does not override reaches the config. */
static void test_explicit_keys_win(void)
{
    g_autoptr(ks_scenario) s = load_text("[scenario]\nkafka.version = 2.8\n[cluster]\n"
                                         "replica.lag.time.max.ms = 12000\n" SECTIONS
                                         "[producer q]\ntopic = t\nacks = all\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(s->cluster.replica_lag_ns_max, 12000 * MS);        /* written */
    CU_ASSERT_EQUAL(s->cluster.broker_session_timeout_ns, 18000 * MS); /* 2.8's ZooKeeper */
    CU_ASSERT_EQUAL(s->producers[0].acks, KS_ACKS_LEADER);             /* 2.8 default */
    CU_ASSERT_EQUAL(s->producers[1].acks, KS_ACKS_ALL);                /* written */
    CU_ASSERT_FALSE(s->producers[1].enable_idempotence);               /* 2.8 default */
    CU_ASSERT_EQUAL(s->producers[1].linger_ns, 0);
    /* --set of a preset key and of the version itself. */
    g_autoptr(GError) error = NULL;
    CU_ASSERT_TRUE(ks_scenario_apply_set(s, "producer.p.linger.ms=7", &error));
    CU_ASSERT_TRUE(ks_scenario_finalize(s, &error));
    CU_ASSERT_EQUAL(s->producers[0].linger_ns, 7 * MS);
    CU_ASSERT_TRUE(ks_scenario_apply_set(s, "scenario.kafka.version=0.10", &error));
    CU_ASSERT_TRUE(ks_scenario_finalize(s, &error));
    CU_ASSERT_EQUAL(s->cluster.truncation, KS_TRUNCATION_HIGH_WATERMARK);
    CU_ASSERT_TRUE(s->topics[0].unclean_leader_election_enable);
    CU_ASSERT_EQUAL(s->cluster.replica_lag_ns_max, 12000 * MS); /* still written */
    CU_ASSERT_EQUAL(s->producers[0].linger_ns, 7 * MS);         /* still set */
    CU_ASSERT_EQUAL(s->producers[0].retries, 0);
    /* The written file round-trips with its version. */
    char *text = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&text, &length);
    ks_scenario_write_ini(out, s);
    fclose(out);
    g_autoptr(ks_scenario) again = load_text(text);
    free(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(again);
    g_autofree char *a = ks_scenario_params_json(s);
    g_autofree char *b = ks_scenario_params_json(again);
    CU_ASSERT_STRING_EQUAL(a, b);
    /* 4.1 turns ELR on; an explicit false wins. */
    g_autoptr(ks_scenario) elr = load_version("4.1");
    CU_ASSERT_PTR_NOT_NULL_FATAL(elr);
    CU_ASSERT_TRUE(elr->cluster.eligible_leader_replicas_enable);
    g_autoptr(ks_scenario) off = load_text("[scenario]\nkafka.version = 4.1\n[cluster]\n"
                                           "eligible.leader.replicas.enable = false\n" SECTIONS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(off);
    CU_ASSERT_FALSE(off->cluster.eligible_leader_replicas_enable);
}

#define TABLE_BEGIN "<!-- kafka versions: generated from sim/kafka_versions.c -->\n"
#define TABLE_END   "<!-- end of the kafka versions -->\n"

/* docs/kafka-versions.md holds the generated table between two markers;
 * when it differs the test writes the file as it should be to
 * build/kafka-versions.md. */
static void test_versions_doc(void)
{
    char *generated = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&generated, &length);
    ks_kafka_versions_write_table(out);
    fclose(out);
    g_autofree char *committed = NULL;
    CU_ASSERT_FATAL(g_file_get_contents("docs/kafka-versions.md", &committed, NULL, NULL));
    const char *begin = strstr(committed, TABLE_BEGIN);
    const char *end = begin != NULL ? strstr(begin, TABLE_END) : NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(end);
    const char *inner = begin + strlen(TABLE_BEGIN);
    bool same = (size_t)(end - inner) == length && memcmp(inner, generated, length) == 0;
    if (!same) {
        g_autofree char *head = g_strndup(committed, (size_t)(inner - committed));
        g_autofree char *fixed = g_strconcat(head, generated, end, NULL);
        g_mkdir_with_parents("build", 0755);
        g_file_set_contents("build/kafka-versions.md", fixed, -1, NULL);
        fprintf(stderr, "\ndocs/kafka-versions.md is stale: cp build/kafka-versions.md docs/\n");
    }
    CU_ASSERT_TRUE(same);
    /* Every row is a line of the table. */
    size_t count = 0;
    const struct ks_kafka_version *rows = ks_kafka_versions(&count);
    for (size_t i = 0; i < count; i++) {
        g_autofree char *row = g_strdup_printf("\n| `%s`", rows[i].name);
        CU_ASSERT_PTR_NOT_NULL(strstr(generated, row));
    }
    free(generated);
}

void ks_test_register_kafka_versions(void)
{
    static const struct ks_test_case cases[] = {
        { "one_default", test_one_default },
        { "default_row_is_key_table", test_default_row_is_key_table },
        { "release_order", test_release_order },
        { "every_row_loads", test_every_row_loads },
        { "version_texts", test_version_texts },
        { "explicit_keys_win", test_explicit_keys_win },
        { "versions_doc", test_versions_doc },
        { "transaction_lines", test_transaction_lines },
    };
    KS_TEST_ADD_SUITE("sim/kafka_versions", cases);
}
