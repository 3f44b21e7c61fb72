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
 * eos_missing, eos_duplicates and consumed_duplicates. A [producer NAME] of
 * the processor's name (or --set producer.NAME.KEY) sets its producer's
 * client settings; two processors with one transactional.id are refused; a
 * processor blocked on its producer is woken by it, not by a timer. */
#include "../../core/base.h"
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

static size_t line_count(const char *text)
{
    size_t lines = 0;
    for (const char *c = text; *c != '\0'; c++) {
        lines += *c == '\n';
    }
    return lines;
}

/* text and a second processor of the same group, proc2, with transactional.id
 * `id` on its 7th line. */
static char *with_second_processor(const char *text, const char *id)
{
    return g_strdup_printf("%s[consumer proc2]\ngroup.id = app\ntopic = input\n"
                           "output.topic = output\nenable.auto.commit = false\n"
                           "commit = after-process\ntransactional.id = %s\n",
                           text, id);
}

static void test_processor_errors(void)
{
    /* Line 27 is output.topic in [consumer proc]; 30 is commit. */
    g_autofree char *before = NULL;
    {
        const char *cut = strstr(pipeline, "commit = after-process\n");
        before = g_strdup_printf("%.*scommit = before-process\n%s", (int)(cut - pipeline), pipeline,
                                 cut + strlen("commit = after-process\n"));
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
        missing = g_strdup_printf("%.*soutput.topic = nowhere\n%s", (int)(cut - pipeline), pipeline,
                                  cut + strlen("output.topic = output\n"));
    }
    expect_error(missing, "pipeline.ini:27:", "there is no [topic nowhere]");
    g_autofree char *no_output = NULL;
    {
        const char *cut = strstr(pipeline, "output.topic = output\n");
        no_output = g_strdup_printf("%.*stransactional.id = x\n%s", (int)(cut - pipeline), pipeline,
                                    cut + strlen("output.topic = output\n"));
    }
    expect_error(no_output,
                 "pipeline.ini:27:", "transactional.id on a consumer needs output.topic");
    /* The processor's own producer takes Kafka client settings only. */
    size_t last = line_count(pipeline);
    g_autofree char *topic =
        g_strdup_printf("%s[producer proc]\nlinger.ms = 20\ntopic = input\n", pipeline);
    g_autofree char *topic_line = g_strdup_printf("pipeline.ini:%zu:", last + 3);
    expect_error(topic, topic_line, "the processor writes to its output.topic");
    g_autofree char *rate = g_strdup_printf("%s[producer proc]\nrate = 10/s\n", pipeline);
    g_autofree char *rate_line = g_strdup_printf("pipeline.ini:%zu:", last + 2);
    expect_error(rate, rate_line, "one record per processed input record");
    /* Exactly-once needs an idempotent producer with acks = all. */
    g_autofree char *txn = pipeline_with("transactional.id = app-1\n");
    g_autofree char *acks = g_strdup_printf("%s[producer proc]\nacks = 1\n", txn);
    g_autofree char *acks_line = g_strdup_printf("pipeline.ini:%zu:", line_count(txn) + 2);
    expect_error(acks, acks_line, "processor proc is exactly-once (transactional.id)");
    /* Two processors with one transactional.id would fence each other. */
    g_autofree char *twice = with_second_processor(txn, "app-1");
    g_autofree char *twice_line = g_strdup_printf("pipeline.ini:%zu:", line_count(txn) + 7);
    expect_error(twice, twice_line, "transactional.id = app-1: processor proc has the same one");
    g_autofree char *other = with_second_processor(txn, "app-2");
    GError *error = NULL;
    struct ks_scenario *s = load_text(other, &error);
    CU_ASSERT_PTR_NOT_NULL(s); /* ids of their own: two instances, as eos-zombie-processor */
    ks_scenario_free(s);
    g_clear_error(&error);
    /* --set producer.NAME.KEY of a consumer that is no processor. */
    g_autofree char *plain =
        g_strdup_printf("%s[consumer reader]\ngroup.id = r\ntopic = output\n", pipeline);
    s = load_text(plain, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_TRUE(ks_scenario_apply_set(s, "producer.reader.acks=1", &error));
    CU_ASSERT_FALSE(ks_scenario_finalize(s, &error));
    CU_ASSERT_PTR_NOT_NULL_FATAL(error);
    CU_ASSERT_PTR_NOT_NULL(strstr(error->message, "--set producer.reader.acks=1: consumer reader "
                                                  "has no output.topic"));
    g_clear_error(&error);
    ks_scenario_free(s);
}

/* A processor's producer is configured by a [producer NAME] of the
 * consumer's name, in the file or with --set producer.NAME.KEY (which found
 * no section before): its client settings reach the producer, the
 * processor's own (topic, transactional.id, no workload) stay. */
static void test_processor_producer_settings(void)
{
    g_autofree char *text =
        g_strdup_printf("%s[producer proc]\nlinger.ms = 20\nacks = 1\n", pipeline);
    GError *error = NULL;
    struct ks_scenario *s = load_text(text, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL_FATAL(s->producer_count, 2); /* the section is the processor's, not a third */
    const struct ks_producer_config *out = &s->producers[1];
    CU_ASSERT_STRING_EQUAL(out->name, "proc");
    CU_ASSERT_EQUAL(out->input_consumer_index, 0);
    CU_ASSERT_EQUAL(out->topic_index, 1);
    CU_ASSERT_EQUAL(out->linger_ns, 20 * KS_NS_PER_MS);
    CU_ASSERT_EQUAL(out->acks, KS_ACKS_LEADER);
    CU_ASSERT_FALSE(out->enable_idempotence); /* acks = 1 turns the default off, as Kafka */
    CU_ASSERT_EQUAL(out->rate_per_s, 0);
    ks_scenario_free(s);
    /* The same with --set on the transactional pipeline. */
    g_autofree char *txn = pipeline_with("transactional.id = app-1\n");
    s = load_text(txn, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_TRUE(ks_scenario_apply_set(s, "producer.proc.linger.ms=20", &error));
    CU_ASSERT_TRUE(ks_scenario_apply_set(s, "producer.proc.transaction.timeout.ms=5000", &error));
    CU_ASSERT_TRUE_FATAL(ks_scenario_finalize(s, &error));
    out = &s->producers[1];
    CU_ASSERT_EQUAL(out->linger_ns, 20 * KS_NS_PER_MS);
    CU_ASSERT_EQUAL(out->transaction_timeout_ns, 5000 * KS_NS_PER_MS);
    CU_ASSERT_STRING_EQUAL(out->transactional_id, "app-1");
    CU_ASSERT_EQUAL(out->acks, KS_ACKS_ALL);
    CU_ASSERT_TRUE(out->enable_idempotence);
    ks_scenario_free(s);
    /* A key the processor decides is refused, with its --set. */
    s = load_text(txn, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_TRUE(ks_scenario_apply_set(s, "producer.proc.acks=1", &error));
    CU_ASSERT_FALSE(ks_scenario_finalize(s, &error));
    CU_ASSERT_PTR_NOT_NULL_FATAL(error);
    CU_ASSERT_PTR_NOT_NULL(strstr(error->message, "--set producer.proc.acks=1: processor proc"));
    g_clear_error(&error);
    ks_scenario_free(s);
    /* A refused key or value adds no section: the scenario is as it was
     * (it added an empty [producer proc], whose finalize crashed). */
    const char *refused[] = { "producer.reader.no.such.key=1", "producer.reader.acks=7",
                              "producer.proc.linger.ms=-1" };
    g_autofree char *reader =
        g_strdup_printf("%s[consumer reader]\ngroup.id = r\ntopic = output\n", pipeline);
    for (size_t i = 0; i < G_N_ELEMENTS(refused); i++) {
        s = load_text(i < 2 ? reader : txn, &error);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        size_t producers = s->producer_count;
        CU_ASSERT_FALSE(ks_scenario_apply_set(s, refused[i], &error));
        CU_ASSERT_PTR_NOT_NULL(error);
        g_clear_error(&error);
        CU_ASSERT_TRUE(ks_scenario_finalize(s, &error));
        CU_ASSERT_EQUAL(s->producer_count, producers);
        g_clear_error(&error);
        ks_scenario_free(s);
    }
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

/* A processor blocked on its producer is woken by the producer, not by a
 * timer: the producer is cut off from every broker from 3 s to 8 s, so the
 * transaction it is ending cannot finish and the application waits in
 * commitTransaction(). The trace shows how often the consumer's wake timer
 * (kind 401) fired in that window: polling every 5 ms made it about 1,000
 * times; now the producer's listener wakes it when the transaction ended,
 * after the cut. Still nothing lost or repeated. */
static void test_processor_woken(void)
{
    g_autofree char *txn = pipeline_with("transactional.id = app-1\n");
    const char *fault = strstr(txn, "[fault kill]");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fault);
    g_autofree char *text = g_strdup_printf("%.*s[fault cut]\nat = 3s\naction = partition\n"
                                            "groups = producer(proc) | 1,2,3\nduration = 5s\n",
                                            (int)(fault - txn), txn);
    GError *error = NULL;
    struct ks_scenario *s = load_text(text, &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    char *dir = g_dir_make_tmp("ksim-proc-XXXXXX", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    char *run_dir = g_build_filename(dir, "run", NULL);
    char *trace = g_build_filename(dir, "trace.txt", NULL);
    struct ks_run_options options = { .run_dir = run_dir, .trace_path = trace };
    struct ks_run_result result;
    CU_ASSERT_EQUAL(ks_run_scenario(s, &options, &result, NULL), 0);
    CU_ASSERT_EQUAL(result.metrics[KS_METRIC_EOS_MISSING], 0);
    CU_ASSERT_EQUAL(result.metrics[KS_METRIC_EOS_DUPLICATES], 0);
    CU_ASSERT(result.metrics[KS_METRIC_TXN_COMMITTED] > 0);
    g_autofree char *lines = NULL;
    CU_ASSERT_TRUE_FATAL(g_file_get_contents(trace, &lines, NULL, NULL));
    int64_t wakes = 0;
    g_auto(GStrv) split = g_strsplit(lines, "\n", -1);
    for (char **line = split; *line != NULL; line++) {
        uint64_t at_ns = g_ascii_strtoull(*line, NULL, 10);
        wakes += at_ns >= 3 * KS_NS_PER_S && at_ns < 8 * KS_NS_PER_S &&
                 strstr(*line, " timer kind=401 ") != NULL;
    }
    CU_ASSERT(wakes < 50);
    ks_scenario_free(s);
    ks_test_remove_tree(dir);
    g_free(trace);
    g_free(run_dir);
    g_free(dir);
}

void ks_test_register_processor(void)
{
    static const struct ks_test_case cases[] = {
        { "output.topic makes a processor with its producer", test_processor_loads },
        { "processor settings refused with their line", test_processor_errors },
        { "[producer NAME] and --set producer.NAME.* reach a processor's producer",
          test_processor_producer_settings },
        { "a processor blocked on its producer is woken by it", test_processor_woken },
        { "processor crash: exactly-once vs at-least-once",
          test_crash_exactly_once_vs_at_least_once },
    };
    KS_TEST_ADD_SUITE("sim/processor", cases);
}
