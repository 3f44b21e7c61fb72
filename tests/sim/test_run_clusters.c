/* tests/sim/test_run_clusters.c: runs of scenarios with several clusters
 * ([cluster NAME], [mirror NAME]) through ks_run_scenario.
 *
 * Goal: two clusters run in one world, each cluster's brokers under a
 * folder of its own name; a mirror copies every acknowledged record to the
 * target (mirrored = records_acked, no copy twice), a consumer on the
 * target resolves the copies' identities to the source's producer (it is
 * charged with nothing lost nor unseen once it read everything, and with
 * what it did not reach when it is slow); a source cluster lost for good
 * loses at most the largest lag sampled and every one of its acknowledged
 * records counts as missing from the final read; a link cut that heals
 * loses nothing; a group that fails over from offsets MM2 synced skips
 * nothing and repeats at most a sync interval's records plus one
 * offset.lag.max per partition, far fewer than without the sync; the same
 * seed gives the same trace.
 * Method: east (3 brokers, orders with 2 partitions, 200 records/s) and
 * west (3 brokers) over a 40 ms link, a few simulated seconds; each test
 * uses its own temporary folder. */
#include "../../sim/run.h"
#include "../testlib.h"

#include <string.h>

static const char two_clusters[] = /* a format: %s is [mirror m]'s further keys */ "[scenario]\n"
                                   "name = two\n"
                                   "seed = 3\n"
                                   "duration = 8s\n"
                                   "network.latency.east-west = 40ms\n"
                                   "[cluster east]\n"
                                   "brokers = 3\n"
                                   "[cluster west]\n"
                                   "brokers = 3\n"
                                   "[topic orders]\n"
                                   "cluster = east\n"
                                   "partitions = 2\n"
                                   "replication.factor = 3\n"
                                   "[mirror m]\n"
                                   "source = east\n"
                                   "target = west\n"
                                   "topics = orders\n"
                                   "%s"
                                   "[producer p]\n"
                                   "topic = orders\n"
                                   "rate = 200/s\n"
                                   "keys = 20\n";

struct outcome {
    int code;
    struct ks_run_result result;
    bool east_folder;
    bool flat_folder;
};

/* The scenario two_clusters with mirror_keys in its [mirror m] and extra
 * sections after it. */
static struct outcome run_mirror_text(const char *mirror_keys, const char *extra)
{
    struct outcome out;
    memset(&out, 0, sizeof out);
    g_autofree char *dir = g_dir_make_tmp("ksim-clusters-XXXXXX", NULL);
    g_autofree char *run_dir = g_build_filename(dir, "run", NULL);
    g_autofree char *base = g_strdup_printf(two_clusters, mirror_keys);
    g_autofree char *text = g_strconcat(base, extra, NULL);
    struct ks_scenario *scenario = NULL;
    GError *error = NULL;
    if (!ks_scenario_load_from_data("two.ini", text, &scenario, &error)) {
        fprintf(stderr, "scenario: %s\n", error->message);
        g_error_free(error);
        out.code = -1;
        return out;
    }
    struct ks_run_options options = { .run_dir = run_dir };
    out.code = ks_run_scenario(scenario, &options, &out.result, NULL);
    g_autofree char *east = g_build_filename(run_dir, "east", "broker-1", NULL);
    g_autofree char *flat = g_build_filename(run_dir, "broker-1", NULL);
    out.east_folder = g_file_test(east, G_FILE_TEST_IS_DIR);
    out.flat_folder = g_file_test(flat, G_FILE_TEST_EXISTS);
    ks_scenario_free(scenario);
    ks_test_remove_tree(dir);
    return out;
}

static struct outcome run_text(const char *extra)
{
    return run_mirror_text("", extra);
}

static double metric(const struct outcome *o, enum ks_metric m)
{
    return o->result.metrics[m];
}

static void test_steady_mirror(void)
{
    struct outcome o = run_text("[consumer c]\ntopic = east.orders\ngroup.id = g\n"
                                "auto.offset.reset = earliest\n");
    CU_ASSERT_EQUAL_FATAL(o.code, 0);
    CU_ASSERT_TRUE(o.east_folder);
    CU_ASSERT_FALSE(o.flat_folder);
    CU_ASSERT_TRUE(o.result.mirror_metrics);
    CU_ASSERT_TRUE(metric(&o, KS_METRIC_RECORDS_ACKED) > 1000);
    CU_ASSERT_EQUAL(metric(&o, KS_METRIC_MIRRORED), metric(&o, KS_METRIC_RECORDS_ACKED));
    CU_ASSERT_EQUAL(metric(&o, KS_METRIC_MIRROR_DUPLICATES), 0);
    CU_ASSERT_EQUAL(metric(&o, KS_METRIC_MIRROR_LOST), 0);
    CU_ASSERT_EQUAL(metric(&o, KS_METRIC_ACKED_LOST), 0);
    /* a copy is no duplicate of its record */
    CU_ASSERT_EQUAL(metric(&o, KS_METRIC_DUPLICATES), 0);
    /* the group on west knew every copy's producer: nothing lost, nothing
     * left once it drained */
    CU_ASSERT_EQUAL(metric(&o, KS_METRIC_CONSUMED_LOST), 0);
    CU_ASSERT_EQUAL(metric(&o, KS_METRIC_CONSUMED_UNSEEN), 0);
    /* 40 ms away, 200 records/s: some records are always on their way */
    CU_ASSERT_TRUE(metric(&o, KS_METRIC_MIRROR_LAG_MAX) >= 8);
    struct outcome again = run_text("[consumer c]\ntopic = east.orders\ngroup.id = g\n"
                                    "auto.offset.reset = earliest\n");
    CU_ASSERT_EQUAL(again.result.trace_hash, o.result.trace_hash);
}

/* A consumer on west that processes 20 records/s of 1600 records cannot
 * reach the end, not even in the final drain of 60 s: what it did not
 * reach is unseen, so the copies were checked. */
static void test_slow_reader_on_target(void)
{
    struct outcome o = run_text("[consumer c]\ntopic = east.orders\ngroup.id = g\n"
                 "auto.offset.reset = earliest\nprocessing.time = 50ms\n");
    CU_ASSERT_EQUAL_FATAL(o.code, 0);
    CU_ASSERT_TRUE(metric(&o, KS_METRIC_CONSUMED_UNSEEN) > 100);
    CU_ASSERT_EQUAL(metric(&o, KS_METRIC_CONSUMED_LOST), 0);
}

static void test_source_lost(void)
{
    struct outcome o = run_text("[fault dc]\nat = 4s\naction = crash\ntarget = cluster(east)\n"
                                "mode = power\n");
    CU_ASSERT_EQUAL_FATAL(o.code, 0);
    double lost = metric(&o, KS_METRIC_MIRROR_LOST);
    CU_ASSERT_TRUE(lost > 0);
    CU_ASSERT_TRUE(lost <= metric(&o, KS_METRIC_MIRROR_LAG_MAX));
    CU_ASSERT_EQUAL(metric(&o, KS_METRIC_MIRRORED) + lost, metric(&o, KS_METRIC_RECORDS_ACKED));
    /* east never came back: none of its records is in the final read */
    CU_ASSERT_EQUAL(metric(&o, KS_METRIC_ACKED_LOST), metric(&o, KS_METRIC_RECORDS_ACKED));
}

static void test_link_cut_heals(void)
{
    struct outcome o = run_text("[fault cut]\nat = 2s\naction = partition\n"
                                "groups = cluster(east) | cluster(west)\nduration = 3s\n");
    CU_ASSERT_EQUAL_FATAL(o.code, 0);
    CU_ASSERT_EQUAL(metric(&o, KS_METRIC_MIRROR_LOST), 0);
    CU_ASSERT_EQUAL(metric(&o, KS_METRIC_MIRROR_UNMIRRORED), 0);
    CU_ASSERT_EQUAL(metric(&o, KS_METRIC_MIRRORED), metric(&o, KS_METRIC_RECORDS_ACKED));
    /* The fetch the cut swallowed is retried after request.timeout.ms (30 s,
     * NetworkClient): the lag grows to everything sent after 2 s until the
     * final phase, where the mirror catches up. */
    CU_ASSERT_TRUE(metric(&o, KS_METRIC_MIRROR_LAG_MAX) >= 1000);
    CU_ASSERT_TRUE(metric(&o, KS_METRIC_MIRROR_LAG) >= 1000);
}

/* Group g reads orders on east; MM2 checkpoints its offsets every 2 s and
 * syncs them to west every 2 s; east is lost at 5 s and the group fails
 * over at 6 s: its standby on west resumes from the synced offsets, skips
 * nothing, and repeats at most what it processed after the last sync
 * (<= 3 s x 200 records/s) plus one offset.lag.max (100) per partition.
 * Without the sync it starts over (auto.offset.reset = earliest) and
 * repeats every record it had processed. */
static const char failover[] = "[consumer c]\ntopic = orders\ngroup.id = g\n"
                               "auto.offset.reset = earliest\nauto.commit.interval.ms = 500\n"
                               "[fault dc]\nat = 5s\naction = crash\ntarget = cluster(east)\n"
                               "[fault move]\nat = 6s\naction = failover\n"
                               "target = consumer(c)\n";

static void test_failover(void)
{
    struct outcome synced = run_mirror_text("emit.checkpoints.interval.seconds = 2\n"
                                            "sync.group.offsets.enabled = true\n"
                                            "sync.group.offsets.interval.seconds = 2\n",
                                            failover);
    CU_ASSERT_EQUAL_FATAL(synced.code, 0);
    double repeated = metric(&synced, KS_METRIC_FAILOVER_DUPLICATES);
    CU_ASSERT_TRUE(repeated > 0);
    CU_ASSERT_TRUE(repeated <= 3 * 200 + 2 * 100);
    CU_ASSERT_EQUAL(metric(&synced, KS_METRIC_CONSUMED_LOST), 0);
    CU_ASSERT_EQUAL(metric(&synced, KS_METRIC_CONSUMED_DUPLICATES), repeated);
    struct outcome unsynced = run_mirror_text("", failover);
    CU_ASSERT_EQUAL_FATAL(unsynced.code, 0);
    /* from offset 0 again: everything it processed in 5 s, far more */
    CU_ASSERT_TRUE(metric(&unsynced, KS_METRIC_FAILOVER_DUPLICATES) > 2 * repeated);
    CU_ASSERT_EQUAL(metric(&unsynced, KS_METRIC_CONSUMED_LOST), 0);
}

/* East is lost at 5 s; at 6 s producer p fails over: it stops, and its
 * standby p.west writes to east.orders on west for the last 2 s. East's
 * records are judged on east exactly as in the same run without the
 * producer's failover (all of them lost with it), and every record west
 * acknowledged is in west's final read: acked_lost does not grow, while
 * records_acked grows by p.west's (about 2 s x 200 records/s). */
static const char east_lost[] = "[fault dc]\nat = 5s\naction = crash\ntarget = cluster(east)\n";

static void test_failover_producer(void)
{
    struct outcome stays = run_text(east_lost);
    g_autofree char *text =
        g_strconcat(east_lost, "[fault move]\nat = 6s\naction = failover\ntarget = producer(p)\n",
                    NULL);
    struct outcome moved = run_text(text);
    CU_ASSERT_EQUAL_FATAL(stays.code, 0);
    CU_ASSERT_EQUAL_FATAL(moved.code, 0);
    CU_ASSERT_EQUAL(metric(&stays, KS_METRIC_ACKED_LOST), metric(&stays, KS_METRIC_RECORDS_ACKED));
    CU_ASSERT_EQUAL(metric(&moved, KS_METRIC_ACKED_LOST), metric(&stays, KS_METRIC_ACKED_LOST));
    double west_acked =
        metric(&moved, KS_METRIC_RECORDS_ACKED) - metric(&stays, KS_METRIC_RECORDS_ACKED);
    CU_ASSERT_TRUE(west_acked > 300);
    CU_ASSERT_TRUE(west_acked <= 2 * 200 + 1);
    CU_ASSERT_EQUAL(metric(&moved, KS_METRIC_DUPLICATES), 0);
    /* the mirror's share is east's, unchanged */
    CU_ASSERT_EQUAL(metric(&moved, KS_METRIC_MIRROR_LOST), metric(&stays, KS_METRIC_MIRROR_LOST));
    CU_ASSERT_TRUE(metric(&moved, KS_METRIC_MIRROR_LOST) > 0);
    /* p stopped: east's dead leaders no longer collect its unanswered sends */
    CU_ASSERT_TRUE(metric(&moved, KS_METRIC_RECORDS_UNKNOWN) <
                   metric(&stays, KS_METRIC_RECORDS_UNKNOWN));
}

/* West, the mirror's target, crashes at 4 s and restarts at 6 s. MM2's
 * worker runs on the target's side, so its tasks go down with west and
 * resume from the source offsets committed at their last flush: with
 * offset.flush.interval.ms at 60 s none was committed, so every record
 * copied before the crash (at most 4 s x 200) is copied again; with a
 * flush every 500 ms, at most what the last 500 ms copied (plus what the
 * brokers' restart leaves unanswered). Nothing is lost either way. */
static const char west_restart[] = "[fault west-down]\nat = 4s\naction = crash\n"
                                   "target = cluster(west)\nrestart.after = 2s\n";

static void test_target_crash_takes_mirror(void)
{
    struct outcome slow = run_text(west_restart);
    CU_ASSERT_EQUAL_FATAL(slow.code, 0);
    CU_ASSERT_EQUAL(metric(&slow, KS_METRIC_MIRRORED), metric(&slow, KS_METRIC_RECORDS_ACKED));
    CU_ASSERT_EQUAL(metric(&slow, KS_METRIC_MIRROR_LOST), 0);
    double again = metric(&slow, KS_METRIC_MIRROR_DUPLICATES);
    CU_ASSERT_TRUE(again > 400);
    CU_ASSERT_TRUE(again <= 4 * 200);
    struct outcome often = run_mirror_text("offset.flush.interval.ms = 500\n", west_restart);
    CU_ASSERT_EQUAL_FATAL(often.code, 0);
    CU_ASSERT_EQUAL(metric(&often, KS_METRIC_MIRRORED), metric(&often, KS_METRIC_RECORDS_ACKED));
    CU_ASSERT_TRUE(metric(&often, KS_METRIC_MIRROR_DUPLICATES) < again / 2);
}

/* target = east:2 crashes broker 2 of east only and restarts it 3 s
 * later: east keeps serving (acks = all, min.insync.replicas 2, three
 * replicas), nothing acknowledged is lost, the mirror copies every record,
 * and west is untouched. Against the same run without the fault, the
 * broker's crash changes the run (its followers leave the ISR). */
static void test_one_broker_of_a_cluster(void)
{
    const char *fault = "[fault kill]\nat = 2s\naction = crash\ntarget = east:2\n"
                        "restart.after = 3s\n";
    struct outcome o = run_mirror_text("", fault);
    CU_ASSERT_EQUAL_FATAL(o.code, 0);
    CU_ASSERT_TRUE(metric(&o, KS_METRIC_RECORDS_ACKED) > 1000);
    CU_ASSERT_EQUAL(metric(&o, KS_METRIC_ACKED_LOST), 0);
    CU_ASSERT_EQUAL(metric(&o, KS_METRIC_MIRRORED), metric(&o, KS_METRIC_RECORDS_ACKED));
    CU_ASSERT_EQUAL(metric(&o, KS_METRIC_MIRROR_LOST), 0);
    CU_ASSERT_TRUE(metric(&o, KS_METRIC_ISR_SHRINKS) >= 1);
    struct outcome none = run_text("");
    CU_ASSERT_EQUAL(metric(&none, KS_METRIC_ISR_SHRINKS), 0);
    CU_ASSERT_NOT_EQUAL(none.result.trace_hash, o.result.trace_hash);
}

void ks_test_register_run_clusters(void)
{
    static const struct ks_test_case cases[] = {
        { "steady mirror", test_steady_mirror },
        { "slow reader on the target", test_slow_reader_on_target },
        { "source cluster lost", test_source_lost },
        { "link cut heals", test_link_cut_heals },
        { "failover of a group", test_failover },
        { "failover of a producer", test_failover_producer },
        { "a target's crash takes the mirror down", test_target_crash_takes_mirror },
        { "one broker of a cluster", test_one_broker_of_a_cluster },
    };
    KS_TEST_ADD_SUITE("sim/run_clusters", cases);
}
