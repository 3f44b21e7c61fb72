/* tests/sim/test_processor.c: the consume-transform-produce workload (a
 * consumer with output.topic) from the scenario file to the metrics.
 *
 * Goal: the loader turns `output.topic` (and `transactional.id`) into a
 * processor with a producer of its own and refuses the settings a processor
 * cannot have, with the line; and a crash of the processor in the middle of a
 * batch repeats processing in both modes, while only the transactional one
 * keeps every input's output unique. Method: load small scenario texts and
 * check the frozen configs and the errors; run one pipeline twice, with and
 * without transactional.id, crashing the processor while it lags, and compare
 * eos_missing, eos_duplicates and consumed_duplicates. */
#include "../../sim/run.h"
#include "../testlib.h"

#include <string.h>

static const char pipeline[] = "[scenario]\n"
                               "name = pipeline\n"
                               "seed = 2\n"
                               "duration = 12s\n"
                               "final.heal = true\n"
                               "final.drain = 40s\n"
                               "[cluster]\n"
                               "brokers = 3\n"
                               "group.initial.rebalance.delay.ms = 500\n"
                               "transaction.state.log.num.partitions = 3\n"
                               "offsets.topic.num.partitions = 3\n"
                               "[topic input]\n"
                               "partitions = 1\n"
                               "replication.factor = 3\n"
                               "min.insync.replicas = 2\n"
                               "[topic output]\n"
                               "partitions = 1\n"
                               "replication.factor = 3\n"
                               "min.insync.replicas = 2\n"
                               "[producer p1]\n"
                               "topic = input\n"
                               "rate = 300/s\n"
                               "count = 1200\n"
                               "[consumer proc]\n"
                               "group.id = app\n"
                               "topic = input\n"
                               "output.topic = output\n"
                               "isolation.level = read_committed\n"
                               "enable.auto.commit = false\n"
                               "commit = after-process\n"
                               "processing.time = 5ms\n"
                               "max.poll.records = 50\n"
                               "auto.offset.reset = earliest\n"
                               "session.timeout.ms = 6000\n"
                               "heartbeat.interval.ms = 1000\n"
                               "[fault kill]\n"
                               "at = 3s\n"
                               "action = crash\n"
                               "target = consumer(proc)\n"
                               "restart.after = 1s\n";

static struct ks_scenario *load_text(const char *text, GError **error)
{
    struct ks_scenario *scenario = NULL;
    if (!ks_scenario_load_from_data("pipeline.ini", text, &scenario, error)) {
        return NULL;
    }
    return scenario;
}

/* The pipeline with `extra` lines added to [consumer proc] (after its
 * heartbeat line). */
static char *pipeline_with(const char *extra)
{
    const char *at = strstr(pipeline, "heartbeat.interval.ms = 1000\n");
    g_assert(at != NULL);
    at += strlen("heartbeat.interval.ms = 1000\n");
    return g_strdup_printf("%.*s%s%s", (int)(at - pipeline), pipeline, extra, at);
}

static void test_processor_loads(void)
{
    g_autofree char *text = pipeline_with("transactional.id = app-1\n");
    GError *error = NULL;
    struct ks_scenario *s = load_text(text, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL_FATAL(s->producer_count, 2); /* p1, then the processor's */
    CU_ASSERT_EQUAL(s->producers[0].input_consumer_index, -1);
    const struct ks_producer_config *out = &s->producers[1];
    CU_ASSERT_STRING_EQUAL(out->name, "proc");
    CU_ASSERT_EQUAL(out->input_consumer_index, 0);
    CU_ASSERT_EQUAL(out->topic_index, 1);
    CU_ASSERT_STRING_EQUAL(out->transactional_id, "app-1");
    CU_ASSERT_TRUE(out->enable_idempotence);
    CU_ASSERT_EQUAL(out->acks, KS_ACKS_ALL);
    CU_ASSERT_EQUAL(s->consumers[0].output_topic_index, 1);
    CU_ASSERT_EQUAL(s->consumers[0].output_producer_index, 1);
    ks_scenario_free(s);
}

/* Each text fails to load with a message naming `line`. */
static void expect_error(const char *text, const char *line, const char *words)
{
    GError *error = NULL;
    struct ks_scenario *s = load_text(text, &error);
    CU_ASSERT_PTR_NULL(s);
    CU_ASSERT_PTR_NOT_NULL_FATAL(error);
    if (strstr(error->message, line) == NULL || strstr(error->message, words) == NULL) {
        fprintf(stderr, "unexpected message: %s\n", error->message);
        CU_FAIL("message");
    }
    g_error_free(error);
    ks_scenario_free(s);
}

static void test_processor_errors(void)
{
    /* Line 27 is output.topic in [consumer proc]; 30 is commit. */
    g_autofree char *before = NULL;
    {
        const char *cut = strstr(pipeline, "commit = after-process\n");
        before = g_strdup_printf("%.*scommit = before-process\n%s", (int)(cut - pipeline),
                                 pipeline, cut + strlen("commit = after-process\n"));
    }
    expect_error(before, "pipeline.ini:30:", "output.topic needs commit = after-process");
    g_autofree char *same = NULL;
    {
        const char *cut = strstr(pipeline, "output.topic = output\n");
        same = g_strdup_printf("%.*soutput.topic = input\n%s", (int)(cut - pipeline), pipeline,
                               cut + strlen("output.topic = output\n"));
    }
    expect_error(same, "pipeline.ini:27:", "another topic than it reads");
    g_autofree char *missing = NULL;
    {
        const char *cut = strstr(pipeline, "output.topic = output\n");
        missing = g_strdup_printf("%.*soutput.topic = nowhere\n%s", (int)(cut - pipeline),
                                  pipeline, cut + strlen("output.topic = output\n"));
    }
    expect_error(missing, "pipeline.ini:27:", "there is no [topic nowhere]");
    g_autofree char *no_output = NULL;
    {
        const char *cut = strstr(pipeline, "output.topic = output\n");
        no_output = g_strdup_printf("%.*stransactional.id = x\n%s", (int)(cut - pipeline),
                                    pipeline, cut + strlen("output.topic = output\n"));
    }
    expect_error(no_output, "pipeline.ini:27:", "transactional.id on a consumer needs output.topic");
}

struct outcome {
    double missing;
    double duplicates;
    double consumed_duplicates;
    double txn_aborted;
    bool eos_shown;
};

static struct outcome run_pipeline(const char *extra)
{
    g_autofree char *text = pipeline_with(extra);
    GError *error = NULL;
    struct ks_scenario *s = load_text(text, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    char *dir = g_dir_make_tmp("ksim-proc-XXXXXX", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    char *run_dir = g_build_filename(dir, "run", NULL);
    struct ks_run_options options = { .run_dir = run_dir };
    struct ks_run_result result;
    CU_ASSERT_EQUAL(ks_run_scenario(s, &options, &result, NULL), 0);
    struct outcome o = {
        .missing = result.metrics[KS_METRIC_EOS_MISSING],
        .duplicates = result.metrics[KS_METRIC_EOS_DUPLICATES],
        .consumed_duplicates = result.metrics[KS_METRIC_CONSUMED_DUPLICATES],
        .txn_aborted = result.metrics[KS_METRIC_TXN_ABORTED],
        .eos_shown = ks_run_metric_shown(&result, KS_METRIC_EOS_MISSING),
    };
    ks_scenario_free(s);
    ks_test_remove_tree(dir);
    g_free(run_dir);
    g_free(dir);
    return o;
}

static void test_crash_exactly_once_vs_at_least_once(void)
{
    struct outcome eos = run_pipeline("transactional.id = app-1\n");
    CU_ASSERT_TRUE(eos.eos_shown);
    CU_ASSERT(eos.consumed_duplicates > 0); /* the crash repeated processing */
    CU_ASSERT_EQUAL(eos.missing, 0);
    CU_ASSERT_EQUAL(eos.duplicates, 0);
    CU_ASSERT(eos.txn_aborted >= 1); /* the open transaction, aborted by the restart */
    struct outcome alo = run_pipeline("");
    CU_ASSERT_TRUE(alo.eos_shown);
    CU_ASSERT(alo.consumed_duplicates > 0);
    CU_ASSERT_EQUAL(alo.missing, 0);
    /* Repeated processings whose first output was written show twice; at
     * most one per repeated processing. */
    CU_ASSERT(alo.duplicates > 0);
    CU_ASSERT(alo.duplicates <= alo.consumed_duplicates);
}

void ks_test_register_processor(void)
{
    static const struct ks_test_case cases[] = {
        { "output.topic makes a processor with its producer", test_processor_loads },
        { "processor settings refused with their line", test_processor_errors },
        { "processor crash: exactly-once vs at-least-once",
          test_crash_exactly_once_vs_at_least_once },
    };
    KS_TEST_ADD_SUITE("sim/processor", cases);
}
