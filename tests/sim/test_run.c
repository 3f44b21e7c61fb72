/* tests/sim/test_run.c: whole runs through ks_run_scenario.
 *
 * Goal: a run from scenario text to verdict records what SPEC section 4
 * promises, prints one parseable JSON object, is deterministic, maps failed
 * expectations to exit 1 and bad input to exit 2 with nothing written; and
 * its metrics say what the clients saw: a crashed leader that restarts at
 * once keeps its partition unavailable until its old session expires (the
 * stall computed from the timeline), a slow consumer in a fault-free run
 * loses nothing but leaves records unseen, a group that starts at the end
 * of the log is not charged for what came before, and the database's
 * records and anomalies add up to the summary.
 * Method: small scenarios (three brokers, a few simulated seconds) loaded
 * from text; each test uses its own temporary folder for the run folder and
 * the database, and reads results back with SQL and json-glib. */
#include "../../core/base.h"
#include "../../sim/recorder.h"
#include "../../sim/run.h"
#include "../testlib.h"

#include <json-glib/json-glib.h>
#include <sqlite3.h>
#include <string.h>

static const char base_scenario[] = "[scenario]\n"
                                    "name = small\n"
                                    "seed = 5\n"
                                    "duration = 5s\n"
                                    "final.drain = 20s\n"
                                    "[cluster]\n"
                                    "brokers = 3\n"
                                    "broker.session.timeout.ms = 1500\n"
                                    "broker.heartbeat.interval.ms = 500\n"
                                    "[topic orders]\n"
                                    "partitions = 2\n"
                                    "replication.factor = 3\n"
                                    "min.insync.replicas = 2\n"
                                    "[producer p1]\n"
                                    "topic = orders\n"
                                    "acks = all\n"
                                    "rate = 200/s\n"
                                    "keys = 50\n"
                                    "value.bytes = 20\n"
                                    "[fault kill]\n"
                                    "at = 1s\n"
                                    "action = crash\n"
                                    "target = leader(orders-0)\n"
                                    "restart.after = 2s\n";

struct fixture {
    char *dir;
    char *db_path;
    char *run_dir;
};

static void fixture_init(struct fixture *f)
{
    f->dir = g_dir_make_tmp("ksim-run-XXXXXX", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->dir);
    f->db_path = g_build_filename(f->dir, "runs.db", NULL);
    f->run_dir = g_build_filename(f->dir, "run", NULL);
}

static void fixture_deinit(struct fixture *f)
{
    ks_test_remove_tree(f->dir);
    g_free(f->dir);
    g_free(f->db_path);
    g_free(f->run_dir);
}

static struct ks_scenario *load(const char *extra)
{
    char *text = g_strconcat(base_scenario, extra, NULL);
    struct ks_scenario *scenario = NULL;
    GError *error = NULL;
    bool ok = ks_scenario_load_from_data("small.ini", text, &scenario, &error);
    if (!ok) {
        fprintf(stderr, "scenario: %s\n", error->message);
        g_error_free(error);
    }
    g_free(text);
    return scenario;
}

static struct ks_scenario *load_text(const char *text)
{
    struct ks_scenario *scenario = NULL;
    GError *error = NULL;
    if (!ks_scenario_load_from_data("small.ini", text, &scenario, &error)) {
        fprintf(stderr, "scenario: %s\n", error->message);
        g_error_free(error);
    }
    return scenario;
}

static int64_t query_int(const char *db_path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    int64_t value = -1;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
        value = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return value;
}

/* One run recorded: every table gets its rows, in one committed run. */
static void test_run_recorded(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_scenario *scenario = load("[expect]\nacked_lost = 0\nrecords_acked = > 0\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(scenario);
    struct ks_run_options options = { .db_path = f.db_path, .run_dir = f.run_dir };
    struct ks_run_result result;
    GError *error = NULL;
    int code = ks_run_scenario(scenario, &options, &result, &error);
    CU_ASSERT_EQUAL(code, 0);
    CU_ASSERT_PTR_NULL(error);
    g_clear_error(&error);
    CU_ASSERT(result.run_id > 0);
    CU_ASSERT_EQUAL(result.seed, 5);
    CU_ASSERT_EQUAL(result.expect_count, 2);
    CU_ASSERT_STRING_EQUAL(result.verdict, "PASS");
    CU_ASSERT(result.metrics[KS_METRIC_RECORDS_SENT] > 0);
    CU_ASSERT(result.metrics[KS_METRIC_EVENTS] > 0);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT count(*) FROM runs WHERE verdict = 'PASS'"), 1);
    /* Every metric but the six of transactions (no producer is transactional),
     * the two of processors (no consumer has output.topic) and the seven of
     * mirrors (no [mirror NAME]). */
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT count(DISTINCT metric) FROM summary"),
                    KS_METRIC_COUNT - 6 - 2 - 7);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT count(*) FROM records"),
                    (int64_t)result.metrics[KS_METRIC_RECORDS_SENT]);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT count(*) FROM events WHERE kind = 'fault'"), 1);
    CU_ASSERT(query_int(f.db_path, "SELECT count(*) FROM partition_state") > 0);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT count(*) FROM expectations WHERE passed = 1"), 2);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT sim_ms >= 5000 FROM runs"), 1);
    char *broker_dir = g_build_filename(f.run_dir, "broker-1", NULL);
    CU_ASSERT_TRUE(g_file_test(broker_dir, G_FILE_TEST_IS_DIR));
    g_free(broker_dir);
    ks_scenario_free(scenario);
    fixture_deinit(&f);
}

/* Same scenario and seed: same trace hash and metrics; another seed differs. */
static void test_run_deterministic(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_scenario *scenario = load("");
    CU_ASSERT_PTR_NOT_NULL_FATAL(scenario);
    struct ks_run_options options = { .run_dir = f.run_dir };
    struct ks_run_result a;
    struct ks_run_result b;
    struct ks_run_result c;
    CU_ASSERT_EQUAL(ks_run_scenario(scenario, &options, &a, NULL), 0);
    CU_ASSERT_EQUAL(ks_run_scenario(scenario, &options, &b, NULL), 0);
    options.seed = 6;
    options.seed_given = true;
    CU_ASSERT_EQUAL(ks_run_scenario(scenario, &options, &c, NULL), 0);
    CU_ASSERT_EQUAL(a.trace_hash, b.trace_hash);
    CU_ASSERT_EQUAL(memcmp(a.metrics, b.metrics, sizeof a.metrics), 0);
    CU_ASSERT_NOT_EQUAL(a.trace_hash, c.trace_hash);
    CU_ASSERT_EQUAL(c.seed, 6);
    ks_scenario_free(scenario);
    fixture_deinit(&f);
}

/* An expectation that cannot hold makes the run exit 1 and names it. */
static void test_run_failed_expectation(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_scenario *scenario = load("[expect]\nduplicates = 0\nrecords_acked = 0\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(scenario);
    struct ks_run_options options = { .run_dir = f.run_dir };
    struct ks_run_result result;
    CU_ASSERT_EQUAL(ks_run_scenario(scenario, &options, &result, NULL), 1);
    CU_ASSERT_EQUAL(result.expect_count, 2);
    CU_ASSERT_EQUAL(result.expect_failed, 1);
    CU_ASSERT_STRING_EQUAL(result.verdict, "FAIL");
    CU_ASSERT_PTR_NOT_NULL(strstr(result.first_failure, "records_acked"));
    ks_scenario_free(scenario);
    fixture_deinit(&f);
}

/* A database that is not ours: exit 2, and no run folder is left behind. */
static void test_run_bad_database(void)
{
    struct fixture f;
    fixture_init(&f);
    sqlite3 *db = NULL;
    CU_ASSERT_FATAL(sqlite3_open(f.db_path, &db) == SQLITE_OK);
    sqlite3_exec(db, "CREATE TABLE invoices(id INTEGER)", NULL, NULL, NULL);
    sqlite3_close(db);
    struct ks_scenario *scenario = load("");
    CU_ASSERT_PTR_NOT_NULL_FATAL(scenario);
    struct ks_run_options options = { .db_path = f.db_path, .run_dir = f.run_dir };
    struct ks_run_result result;
    GError *error = NULL;
    CU_ASSERT_EQUAL(ks_run_scenario(scenario, &options, &result, &error), 2);
    CU_ASSERT_PTR_NOT_NULL(error);
    g_clear_error(&error);
    CU_ASSERT_FALSE(g_file_test(f.run_dir, G_FILE_TEST_EXISTS));
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT count(*) FROM sqlite_master"), 1);
    ks_scenario_free(scenario);
    fixture_deinit(&f);
}

/* --json prints one object that json-glib parses, with every metric. */
static void test_run_json(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_scenario *scenario = load("[expect]\nacked_lost = 0\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(scenario);
    char *text = NULL;
    size_t text_bytes = 0;
    FILE *out = open_memstream(&text, &text_bytes);
    struct ks_run_options options = { .run_dir = f.run_dir, .out = out, .json = true };
    struct ks_run_result result;
    CU_ASSERT_EQUAL(ks_run_scenario(scenario, &options, &result, NULL), 0);
    fclose(out);
    JsonParser *parser = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_data(parser, text, (gssize)text_bytes, NULL));
    JsonNode *root = json_parser_get_root(parser);
    CU_ASSERT_TRUE_FATAL(JSON_NODE_HOLDS_OBJECT(root));
    JsonObject *object = json_node_get_object(root);
    size_t count = 0;
    const char *const *names = ks_scenario_metric_names(&count);
    for (size_t i = 0; i < count; i++) {
        bool txn = i >= KS_METRIC_TXN_COMMITTED && i <= KS_METRIC_PREMATURE_READ;
        bool mirror = i >= KS_METRIC_MIRRORED && i <= KS_METRIC_FAILOVER_DUPLICATES;
        bool eos = i == KS_METRIC_EOS_MISSING || i == KS_METRIC_EOS_DUPLICATES;
        CU_ASSERT_EQUAL(json_object_has_member(object, names[i]), !txn && !mirror && !eos);
    }
    const char *hash = json_object_get_string_member(object, "trace_hash");
    CU_ASSERT_EQUAL(strlen(hash), 16);
    char expected[17];
    g_snprintf(expected, sizeof expected, "%016" G_GINT64_MODIFIER "x", result.trace_hash);
    CU_ASSERT_STRING_EQUAL(hash, expected);
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(object, "scenario"), "small");
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(object, "verdict"), "PASS");
    CU_ASSERT_EQUAL(json_array_get_length(json_object_get_array_member(object, "expectations")), 1);
    CU_ASSERT_EQUAL(json_object_get_int_member(object, "records_sent"),
                    (gint64)result.metrics[KS_METRIC_RECORDS_SENT]);
    g_object_unref(parser);
    free(text);
    ks_scenario_free(scenario);
    fixture_deinit(&f);
}

/* A trigger fires once, when its condition first holds, and its crash shows
 * on the timeline after the trigger line. */
static void test_run_trigger(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_scenario *scenario = load("[fault when-acked]\nwhen = acked(p1) >= 100\n"
                                        "action = crash\ntarget = follower(orders-1)\n"
                                        "restart.after = 1s\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(scenario);
    char *text = NULL;
    size_t text_bytes = 0;
    FILE *out = open_memstream(&text, &text_bytes);
    struct ks_run_options options = { .run_dir = f.run_dir, .out = out, .explain = true };
    struct ks_run_result result;
    CU_ASSERT_EQUAL(ks_run_scenario(scenario, &options, &result, NULL), 0);
    fclose(out);
    const char *trigger = strstr(text, "trigger of fault when-acked holds");
    CU_ASSERT_PTR_NOT_NULL(trigger);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "fault when-acked: crash broker"));
    if (trigger != NULL) {
        CU_ASSERT_PTR_NULL(strstr(trigger + 1, "trigger of fault when-acked holds"));
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "reproduce: ksim run small.ini --seed 5"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "verdict: PASS"));
    free(text);
    ks_scenario_free(scenario);
    fixture_deinit(&f);
}

/* Every kind of fault fires at its time, is undone after its duration, and
 * shows in the events table; a heal ends a partition that has no duration.
 * Targets that name nothing (a crashed broker crashed again) are skipped,
 * not applied twice. */
static void test_run_fault_kinds(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_scenario *scenario =
        load("[fault split]\nat = 500ms\naction = partition\ngroups = 1 | 2,3\n"
             "[fault mend]\nat = 800ms\naction = heal\nfault = split\n"
             "[fault slowf]\nat = 3500ms\naction = slow\ntarget = follower(orders-1)\n"
             "disk.latency = 50ms\nduration = 300ms\n"
             "[fault nap]\nat = 4s\naction = pause\ntarget = controller\nduration = 200ms\n"
             "[fault lossy]\nat = 4200ms\naction = drop\nloss = 1%\nduration = 100ms\n"
             "[fault again]\nat = 1500ms\naction = crash\ntarget = 1\nmode = power\n"
             "[fault again2]\nat = 1600ms\naction = crash\ntarget = 1\n"
             "[fault back]\nat = 2500ms\naction = restart\ntarget = 1\n"
             "[fault rot]\nat = 4500ms\naction = corrupt\ntarget = 3\npartition = orders-1\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(scenario);
    struct ks_run_options options = { .db_path = f.db_path, .run_dir = f.run_dir };
    struct ks_run_result result;
    int code = ks_run_scenario(scenario, &options, &result, NULL);
    CU_ASSERT(code == 0 || code == 1);
    /* kill (the base fault), split, slowf, nap, lossy, again, rot: applied. */
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT count(*) FROM events WHERE kind = 'fault' "
                                         "AND detail LIKE 'fault %'"),
                    7);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT count(*) FROM events WHERE kind = 'skipped' "
                                         "AND detail LIKE 'fault again2%'"),
                    1);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT t_ns FROM events WHERE kind = 'heal' "
                                         "AND detail LIKE 'fault mend%'"),
                    800000000);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT t_ns FROM events WHERE kind = 'heal' "
                                         "AND detail LIKE 'fault slowf ends%'"),
                    3800000000);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT t_ns FROM events WHERE kind = 'resume' "
                                         "AND detail LIKE 'fault nap ends%'"),
                    4200000000);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT count(*) FROM events WHERE kind = 'restart' "
                                         "AND detail LIKE 'fault back%'"),
                    1);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT count(*) FROM events WHERE detail LIKE "
                                         "'fault rot: corrupt 1 byte(s) of broker-3/orders-1/%'"),
                    1);
    ks_scenario_free(scenario);
    fixture_deinit(&f);
}

/* The leader of orders-0 crashes at 1 s and restarts 200 ms later. The
 * controller refuses its new registration while the old session is valid
 * (KRaft), so the partition has no leader able to serve from the crash
 * until the session expires, the controller elects another replica and
 * that replica learns of it one network latency (1 ms) later. Computed
 * from the timeline: unavailable_ms = fenced - crash + 1 ms. The restart
 * does not make the partition available (the 200 ms of leader_down are
 * followed by leader_not_serving). Clients see it too: produce_unavailable_ms
 * counts the time records to orders-0 waited over 1 s. */
static void test_run_restart_stall(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_scenario *scenario = load_text(
        "[scenario]\nname = stall\nseed = 5\nduration = 6s\nfinal.drain = 20s\n"
        "[cluster]\nbrokers = 3\nbroker.session.timeout.ms = 2000\n"
        "broker.heartbeat.interval.ms = 500\n"
        "[topic orders]\npartitions = 1\nreplication.factor = 3\nmin.insync.replicas = 2\n"
        "[producer p1]\ntopic = orders\nacks = all\nrate = 200/s\nkeys = 50\n"
        "[fault kill]\nat = 1s\naction = crash\ntarget = leader(orders-0)\n"
        "restart.after = 200ms\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(scenario);
    struct ks_run_options options = { .db_path = f.db_path, .run_dir = f.run_dir };
    struct ks_run_result result;
    CU_ASSERT_EQUAL(ks_run_scenario(scenario, &options, &result, NULL), 0);
    int64_t crash_ns = query_int(f.db_path, "SELECT t_ns FROM events WHERE kind = 'fault'");
    int64_t fenced_ns = query_int(f.db_path, "SELECT min(t_ns) FROM events "
                                             "WHERE kind = 'broker_fenced'");
    CU_ASSERT_EQUAL(crash_ns, 1000000000);
    CU_ASSERT(fenced_ns > crash_ns + 1000000000); /* well after the restart at 1.2 s */
    int64_t expected_ms = (fenced_ns - crash_ns) / 1000000 + 1;
    CU_ASSERT_EQUAL((int64_t)result.metrics[KS_METRIC_UNAVAILABLE_MS], expected_ms);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT count(*) FROM unavailability "
                                         "WHERE view = 'cluster' AND reason = 'leader_down' "
                                         "AND end_ns - start_ns = 200000000"),
                    1);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT count(*) FROM unavailability "
                                         "WHERE view = 'cluster' AND reason = 'leader_not_serving' "
                                         "AND start_ns = 1200000000"),
                    1);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT sum(end_ns - start_ns) / 1000000 FROM "
                                         "unavailability WHERE view = 'cluster'"),
                    expected_ms);
    /* Records sent at the crash waited until the new leader took them: at
     * least the stall minus the 1 s threshold. */
    CU_ASSERT(result.metrics[KS_METRIC_PRODUCE_UNAVAILABLE_MS] >= (double)(expected_ms - 1000));
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT sum(end_ns - start_ns) / 1000000 FROM "
                                         "unavailability WHERE view = 'produce'"),
                    (int64_t)result.metrics[KS_METRIC_PRODUCE_UNAVAILABLE_MS]);
    ks_scenario_free(scenario);
    fixture_deinit(&f);
}

/* A fault-free run whose consumer processes 100 records/s of 200 sent per
 * second and gets 1 s to drain: it loses nothing and leaves about half the
 * records unseen; the anomalies table says which, by group.id. */
static void test_run_slow_consumer(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_scenario *scenario =
        load_text("[scenario]\nname = slow\nseed = 3\nduration = 4s\nfinal.drain = 1s\n"
                  "[cluster]\nbrokers = 3\n"
                  "[topic orders]\npartitions = 2\nreplication.factor = 3\n"
                  "[producer p1]\ntopic = orders\nacks = all\nrate = 200/s\nkeys = 50\n"
                  "[consumer c1]\ngroup.id = slowpokes\ntopic = orders\nprocessing.time = 10ms\n"
                  "auto.offset.reset = earliest\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(scenario);
    struct ks_run_options options = { .db_path = f.db_path, .run_dir = f.run_dir };
    struct ks_run_result result;
    CU_ASSERT_EQUAL(ks_run_scenario(scenario, &options, &result, NULL), 0);
    CU_ASSERT_EQUAL(result.metrics[KS_METRIC_CONSUMED_LOST], 0);
    CU_ASSERT(result.metrics[KS_METRIC_CONSUMED_UNSEEN] > 100);
    CU_ASSERT_EQUAL(result.metrics[KS_METRIC_ACKED_LOST], 0);
    CU_ASSERT_EQUAL(query_int(f.db_path,
                              "SELECT sum(record_count) FROM anomalies "
                              "WHERE kind = 'consumed_unseen' AND group_id = 'slowpokes'"),
                    (int64_t)result.metrics[KS_METRIC_CONSUMED_UNSEEN]);
    ks_scenario_free(scenario);
    fixture_deinit(&f);
}

/* A group with auto.offset.reset = latest that starts 2 s into the run
 * never sees the records written before it: they are out of its scope, the
 * timeline says how many, and none is lost. */
static void test_run_latest_group_scope(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_scenario *scenario =
        load_text("[scenario]\nname = latest\nseed = 3\nduration = 5s\n"
                  "[cluster]\nbrokers = 3\n"
                  "[topic orders]\npartitions = 1\nreplication.factor = 3\n"
                  "[producer p1]\ntopic = orders\nacks = all\nrate = 200/s\nkeys = 50\n"
                  "[consumer c1]\ngroup.id = late\ntopic = orders\nauto.offset.reset = latest\n"
                  "start = 2s\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(scenario);
    char *text = NULL;
    size_t text_bytes = 0;
    FILE *out = open_memstream(&text, &text_bytes);
    struct ks_run_options options = { .db_path = f.db_path, .run_dir = f.run_dir, .out = out };
    struct ks_run_result result;
    CU_ASSERT_EQUAL(ks_run_scenario(scenario, &options, &result, NULL), 0);
    fclose(out);
    CU_ASSERT_EQUAL(result.metrics[KS_METRIC_CONSUMED_LOST], 0);
    CU_ASSERT_EQUAL(result.metrics[KS_METRIC_CONSUMED_UNSEEN], 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "final read: group late started orders-0 at offset "));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "are outside its scope, not counted in consumed_lost"));
    /* Its first position was about 2.x s * 200/s: hundreds of records before it. */
    CU_ASSERT(query_int(f.db_path, "SELECT count(*) FROM events WHERE kind = 'final' AND "
                                   "detail LIKE '%outside its scope%'") == 1);
    free(text);
    ks_scenario_free(scenario);
    fixture_deinit(&f);
}

/* acks=1 and a leader crash lose acknowledged records: the records table
 * says which (final = 'missing'), the anomalies add up to acked_lost and
 * each names the event that removed the records, with the acking broker and
 * epoch; --json counts the anomalies per kind. */
static void test_run_lost_queryable(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_scenario *scenario = load_text(
        "[scenario]\nname = lossy\nseed = 5\nduration = 5s\nfinal.drain = 20s\n"
        "[cluster]\nbrokers = 3\nbroker.session.timeout.ms = 1500\n"
        "broker.heartbeat.interval.ms = 500\n"
        "[topic orders]\npartitions = 1\nreplication.factor = 3\n"
        "[producer p1]\ntopic = orders\nacks = 1\nenable.idempotence = false\nrate = 500/s\n"
        "keys = 50\n"
        "[fault slow]\nat = 500ms\naction = slow\ntarget = followers(orders-0)\n"
        "network.latency = 200ms\nduration = 2s\n"
        "[fault kill]\nat = 1s\naction = crash\ntarget = leader(orders-0)\n"
        "restart.after = 1s\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(scenario);
    char *text = NULL;
    size_t text_bytes = 0;
    FILE *out = open_memstream(&text, &text_bytes);
    struct ks_run_options options = {
        .db_path = f.db_path, .run_dir = f.run_dir, .out = out, .json = true
    };
    struct ks_run_result result;
    int code = ks_run_scenario(scenario, &options, &result, NULL);
    fclose(out);
    CU_ASSERT_EQUAL(code, 0);
    int64_t lost = (int64_t)result.metrics[KS_METRIC_ACKED_LOST];
    CU_ASSERT(lost > 0);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT count(*) FROM records WHERE outcome = 'acked' "
                                         "AND final = 'missing'"),
                    lost);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT count(*) FROM records WHERE final IS NULL"), 0);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT sum(record_count) FROM anomalies "
                                         "WHERE kind = 'lost'"),
                    lost);
    CU_ASSERT_EQUAL(query_int(f.db_path, "SELECT count(*) FROM anomalies a JOIN events e ON "
                                         "e.run_id = a.run_id AND e.event_id = a.cause_event_id "
                                         "WHERE a.kind = 'lost' AND a.cause = e.kind"),
                    query_int(f.db_path, "SELECT count(*) FROM anomalies WHERE kind = 'lost'"));
    CU_ASSERT_EQUAL(query_int(f.db_path,
                              "SELECT count(*) FROM anomalies WHERE kind = 'lost' "
                              "AND (acked_broker IS NULL OR acked_leader_epoch IS NULL)"),
                    0);
    JsonParser *parser = json_parser_new();
    CU_ASSERT_TRUE_FATAL(json_parser_load_from_data(parser, text, (gssize)text_bytes, NULL));
    JsonObject *object = json_node_get_object(json_parser_get_root(parser));
    JsonObject *counts = json_object_get_object_member(object, "anomalies");
    CU_ASSERT_PTR_NOT_NULL_FATAL(counts);
    CU_ASSERT_EQUAL(json_object_get_int_member(counts, "lost"), lost);
    CU_ASSERT_EQUAL(json_object_get_int_member(counts, "duplicate"),
                    (gint64)result.metrics[KS_METRIC_DUPLICATES]);
    CU_ASSERT_TRUE(json_object_has_member(counts, "consumed_unseen"));
    g_object_unref(parser);
    free(text);
    ks_scenario_free(scenario);
    fixture_deinit(&f);
}

/* A transactional producer keeps its rate when nothing fails: each commit's
 * markers and CompleteCommit follow as soon as they are answered, and the
 * next transaction's first AddPartitionsToTxn, refused with
 * CONCURRENT_TRANSACTIONS while the last one completes, retries after
 * 20 ms, not after a growing backoff (TransactionManager
 * .maybeOverrideRetryBackoffMs). 1,000 records at 500/s in transactions of
 * 50 are all acked within about 2 s; at one retry.backoff.ms or more per
 * commit they took 4 s. */
static void test_run_txn_keeps_rate(void)
{
    struct fixture f;
    fixture_init(&f);
    struct ks_scenario *scenario = load_text("[scenario]\n"
                                             "name = txn-rate\n"
                                             "seed = 3\n"
                                             "duration = 6s\n"
                                             "[cluster]\n"
                                             "brokers = 3\n"
                                             "transaction.state.log.num.partitions = 3\n"
                                             "[topic orders]\n"
                                             "partitions = 2\n"
                                             "replication.factor = 3\n"
                                             "min.insync.replicas = 2\n"
                                             "[producer p1]\n"
                                             "topic = orders\n"
                                             "transactional.id = app\n"
                                             "transaction.records = 50\n"
                                             "rate = 500/s\n"
                                             "count = 1000\n"
                                             "keys = 20\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(scenario);
    struct ks_run_options options = { .db_path = f.db_path, .run_dir = f.run_dir };
    struct ks_run_result result;
    GError *error = NULL;
    CU_ASSERT_EQUAL(ks_run_scenario(scenario, &options, &result, &error), 0);
    g_clear_error(&error);
    CU_ASSERT_EQUAL(result.metrics[KS_METRIC_RECORDS_ACKED], 1000);
    CU_ASSERT_EQUAL(result.metrics[KS_METRIC_TXN_COMMITTED], 20);
    int64_t last_ack = query_int(f.db_path, "SELECT max(acked_ns) FROM records");
    CU_ASSERT(last_ack > (int64_t)(19 * KS_NS_PER_S / 10));
    CU_ASSERT(last_ack < (int64_t)(23 * KS_NS_PER_S / 10));
    /* No commit waits for a retry timer: consecutive transactions end at most
     * 150 ms apart (50 records at 500/s take 100 ms to produce). */
    CU_ASSERT(query_int(f.db_path, "SELECT max(b.t_ns - a.t_ns) FROM events a JOIN events b"
                                   " ON b.event_id = (SELECT min(event_id) FROM events"
                                   " WHERE kind = 'txn_end' AND event_id > a.event_id)"
                                   " WHERE a.kind = 'txn_end'") < (int64_t)(150 * KS_NS_PER_MS));
    ks_scenario_free(scenario);
    fixture_deinit(&f);
}

/* text with its first `from` replaced by `to` (owned; NULL without one). */
static char *replace_once(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (at == NULL) {
        return NULL;
    }
    g_autofree char *head = g_strndup(text, (gsize)(at - text));
    return g_strconcat(head, to, at + strlen(from), NULL);
}

/* KIP-447 by client version: eos-zombie-processor.ini's zombie (a processor
 * paused past its session timeout while another member takes its partition)
 * is fenced by the group metadata its TxnOffsetCommit carries, and aborts:
 * no output twice. The same run with client.txn.group.metadata = false (the
 * kafka.version rows before 2.5) lets every transaction of the zombie
 * commit, and the output of the records both processed is there twice. */
static void test_run_zombie_processor_by_version(void)
{
    g_autofree char *text = NULL;
    CU_ASSERT_FATAL(g_file_get_contents("scenarios/eos-zombie-processor.ini", &text, NULL, NULL));
    for (int metadata = 1; metadata >= 0; metadata--) {
        struct fixture f;
        fixture_init(&f);
        g_autofree char *variant =
            metadata ? g_strdup(text)
                     : replace_once(text, "[cluster]\n",
                                    "[cluster]\nclient.txn.group.metadata = false\n");
        CU_ASSERT_PTR_NOT_NULL_FATAL(variant);
        struct ks_scenario *scenario = load_text(variant);
        CU_ASSERT_PTR_NOT_NULL_FATAL(scenario);
        struct ks_run_options options = { .db_path = f.db_path, .run_dir = f.run_dir };
        struct ks_run_result result;
        GError *error = NULL;
        ks_run_scenario(scenario, &options, &result, &error);
        g_clear_error(&error);
        CU_ASSERT_EQUAL(result.metrics[KS_METRIC_EOS_MISSING], 0);
        if (metadata) {
            CU_ASSERT_EQUAL(result.metrics[KS_METRIC_EOS_DUPLICATES], 0);
            CU_ASSERT_EQUAL(result.metrics[KS_METRIC_TXN_ABORTED], 1);
        } else {
            CU_ASSERT(result.metrics[KS_METRIC_EOS_DUPLICATES] > 0);
            CU_ASSERT_EQUAL(result.metrics[KS_METRIC_TXN_ABORTED], 0);
        }
        ks_scenario_free(scenario);
        fixture_deinit(&f);
    }
}

void ks_test_register_run(void)
{
    static const struct ks_test_case cases[] = {
        { "recorded", test_run_recorded },
        { "deterministic", test_run_deterministic },
        { "failed_expectation", test_run_failed_expectation },
        { "bad_database", test_run_bad_database },
        { "json", test_run_json },
        { "trigger", test_run_trigger },
        { "fault_kinds", test_run_fault_kinds },
        { "restart_stall", test_run_restart_stall },
        { "slow_consumer", test_run_slow_consumer },
        { "latest_group_scope", test_run_latest_group_scope },
        { "lost_queryable", test_run_lost_queryable },
        { "txn_keeps_rate", test_run_txn_keeps_rate },
        { "zombie_processor_by_version", test_run_zombie_processor_by_version },
    };
    KS_TEST_ADD_SUITE("sim/run", cases);
}
