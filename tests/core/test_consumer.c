/* tests/core/test_consumer.c: the consumer's delivery semantics.
 * Goal: each commit mode gives the guarantee it promises when the consumer
 * crashes in the middle of a batch: before-process (commit, then process)
 * loses records but never repeats one; after-process (process, then commit)
 * repeats records but never loses one; atomic (offset stored with the
 * output) does neither; auto commit repeats at most what was processed in
 * one interval; a paused member that lost its partitions (a zombie) repeats
 * records under after-process and is fenced under atomic. Also:
 * auto.offset.reset = latest, and the scenario action `rewind` (a seek):
 * to earliest every record is processed once more, to an offset only the
 * records from there, and a crashed consumer ignores it.
 * Method: a whole small cluster (group_fixture.h); one consumer with a slow
 * processing.time so that a crash lands inside a batch; the producer's
 * acknowledged offsets against the offsets the group processed, counted
 * after the cluster converged. */
#include "group_fixture.h"

/* Runs one consumer in `mode`, crashes it at 6 s and restarts it at 8 s, then
 * drains. */
static void run_crash(struct cluster_fixture *f, enum ks_commit_mode mode, int64_t *lost,
                      int64_t *duplicates)
{
    gf_init(f, 21, 2, 400, 4000, 1);
    f->consumers[0].commit = mode;
    f->consumers[0].processing_ns = 2 * (int64_t)GF_MS;
    f->consumers[0].max_poll_records = 200;
    f->consumers[0].auto_commit_interval_ns = 1000 * (int64_t)GF_MS;
    gf_start(f);
    ks_node_id c1 = ks_cluster_consumer_node(&f->spec, 0);
    cf_run_until(f, 6 * GF_S + 3 * GF_MS);
    int64_t before = f->consumed_count;
    CU_ASSERT(before > 0);
    cf_crash(f, c1, false);
    cf_run_until(f, 8 * GF_S);
    CU_ASSERT_EQUAL(f->consumed_count, before); /* a crashed consumer processes nothing */
    cf_restart(f, c1);
    cf_run_until(f, 15 * GF_S);
    CU_ASSERT_TRUE(cf_drain(f, 120 * GF_S));
    gf_count(f, lost, duplicates);
    CU_ASSERT_EQUAL(f->acked_count, 4000);
}

static void test_before_process_is_at_most_once(void)
{
    struct cluster_fixture *f = calloc(1, sizeof(*f));
    int64_t lost = 0, duplicates = 0;
    run_crash(f, KS_COMMIT_BEFORE_PROCESS, &lost, &duplicates);
    CU_ASSERT(lost > 0);
    CU_ASSERT(lost <= 200); /* at most the rest of one batch */
    CU_ASSERT_EQUAL(duplicates, 0);
    cf_free(f);
    free(f);
}

static void test_after_process_is_at_least_once(void)
{
    struct cluster_fixture *f = calloc(1, sizeof(*f));
    int64_t lost = 0, duplicates = 0;
    run_crash(f, KS_COMMIT_AFTER_PROCESS, &lost, &duplicates);
    CU_ASSERT_EQUAL(lost, 0);
    CU_ASSERT(duplicates > 0);
    CU_ASSERT(duplicates <= 200); /* at most one batch is processed again */
    cf_free(f);
    free(f);
}

static void test_atomic_is_exactly_once(void)
{
    struct cluster_fixture *f = calloc(1, sizeof(*f));
    int64_t lost = 0, duplicates = 0;
    run_crash(f, KS_COMMIT_ATOMIC, &lost, &duplicates);
    CU_ASSERT_EQUAL(lost, 0);
    CU_ASSERT_EQUAL(duplicates, 0);
    cf_free(f);
    free(f);
}

static void test_auto_commit_repeats_one_interval_at_most(void)
{
    struct cluster_fixture *f = calloc(1, sizeof(*f));
    int64_t lost = 0, duplicates = 0;
    run_crash(f, KS_COMMIT_AUTO, &lost, &duplicates);
    CU_ASSERT_EQUAL(lost, 0);
    CU_ASSERT(duplicates > 0);
    /* 1 s of processing at 2 ms per record, plus the batch in progress. */
    CU_ASSERT(duplicates <= 500 + 200);
    cf_free(f);
    free(f);
}

/* auto.offset.reset = latest: a consumer that starts after the producer
 * finished, with nothing committed, starts at the end and skips the past. */
static void test_offset_reset_latest_skips_the_past(void)
{
    struct cluster_fixture *f = calloc(1, sizeof(*f));
    gf_init(f, 3, 2, 1000, 1000, 1);
    f->consumers[0].auto_offset_reset = KS_RESET_LATEST;
    f->consumers[0].start_ns = 5 * (int64_t)GF_S;
    gf_start(f);
    cf_run_until(f, 4 * GF_S);
    CU_ASSERT_EQUAL(f->acked_count, 1000);
    CU_ASSERT_TRUE(cf_drain(f, 60 * GF_S));
    CU_ASSERT_EQUAL(f->consumed_count, 0);
    CU_ASSERT_EQUAL(f->offset_resets, 2); /* one per partition */
    cf_free(f);
    free(f);
}

/* A member paused longer than its session keeps its batch; when it resumes
 * it processes the rest of it although the other member already took the
 * partitions (a zombie). after-process repeats those records; atomic fences
 * the zombie at its sink, so nothing is processed twice. */
static void run_zombie(struct cluster_fixture *f, enum ks_commit_mode mode, int64_t *lost,
                       int64_t *duplicates)
{
    gf_init(f, 31, 2, 400, 6000, 2);
    for (int i = 0; i < 2; i++) {
        f->consumers[i].commit = mode;
        f->consumers[i].processing_ns = 3 * (int64_t)GF_MS;
        f->consumers[i].max_poll_records = 200;
    }
    f->consumers[1].start_ns = 2 * (int64_t)GF_S; /* c1 starts alone with a backlog */
    gf_start(f);
    ks_node_id c1 = ks_cluster_consumer_node(&f->spec, 0);
    cf_run_until(f, 8 * GF_S + 100 * GF_MS);
    ks_world_node_pause(f->env.world, c1);
    cf_run_until(f, 18 * GF_S);
    ks_world_node_resume(f->env.world, c1);
    CU_ASSERT_TRUE(cf_drain(f, 120 * GF_S));
    gf_count(f, lost, duplicates);
    CU_ASSERT(f->rebalance_count >= 3); /* c1 removed, then back */
}

static void test_zombie_after_process_repeats(void)
{
    struct cluster_fixture *f = calloc(1, sizeof(*f));
    int64_t lost = 0, duplicates = 0;
    run_zombie(f, KS_COMMIT_AFTER_PROCESS, &lost, &duplicates);
    CU_ASSERT_EQUAL(lost, 0);
    CU_ASSERT(duplicates > 0);
    cf_free(f);
    free(f);
}

static void test_zombie_atomic_is_fenced(void)
{
    struct cluster_fixture *f = calloc(1, sizeof(*f));
    int64_t lost = 0, duplicates = 0;
    run_zombie(f, KS_COMMIT_ATOMIC, &lost, &duplicates);
    CU_ASSERT_EQUAL(lost, 0);
    CU_ASSERT_EQUAL(duplicates, 0);
    cf_free(f);
    free(f);
}

/* Runs one consumer (after-process) until the group processed and committed
 * all 2000 records once; then the caller rewinds. */
static void run_until_processed(struct cluster_fixture *f)
{
    gf_init(f, 41, 2, 1000, 2000, 1);
    gf_start(f);
    cf_run_until(f, 5 * GF_S); /* the producer is done after about 2 s */
    CU_ASSERT_TRUE(cf_drain(f, 60 * GF_S));
    CU_ASSERT_EQUAL(f->acked_count, 2000);
    int64_t lost = -1, duplicates = -1;
    gf_count(f, &lost, &duplicates);
    CU_ASSERT_EQUAL(lost, 0);
    CU_ASSERT_EQUAL(duplicates, 0);
    CU_ASSERT_EQUAL(f->consumed_count, 2000);
}

/* seekToBeginning: every acknowledged record is processed exactly once more,
 * and the group converges again (the new position is committed). */
static void test_rewind_earliest_reprocesses_everything(void)
{
    struct cluster_fixture *f = calloc(1, sizeof(*f));
    run_until_processed(f);
    int32_t resets_before = f->offset_resets;
    ks_cluster_consumer_rewind(f->cluster, 0, KS_CONSUMER_REWIND_EARLIEST, 0);
    CU_ASSERT_FALSE(ks_cluster_converged(f->cluster)); /* the seek is pending */
    CU_ASSERT_TRUE(cf_drain(f, 60 * GF_S));
    CU_ASSERT_EQUAL(f->offset_resets, resets_before + 2); /* one per assigned partition */
    int64_t lost = -1, duplicates = -1;
    gf_count(f, &lost, &duplicates);
    CU_ASSERT_EQUAL(lost, 0);
    CU_ASSERT_EQUAL(duplicates, 2000);
    CU_ASSERT_EQUAL(f->consumed_count, 4000);
    int64_t twice = 0;
    for (int32_t p = 0; p < CF_PARTITIONS_MAX; p++) {
        for (int32_t o = 0; o < CF_OFFSETS_MAX; o++) {
            twice += f->acked[p][o] && f->processed[p][o] == 2;
        }
    }
    CU_ASSERT_EQUAL(twice, 2000);
    cf_free(f);
    free(f);
}

/* seek(offset): in every assigned partition the records from that offset on
 * are processed again, those below it are not. */
static void test_rewind_to_offset_repeats_from_there(void)
{
    struct cluster_fixture *f = calloc(1, sizeof(*f));
    run_until_processed(f);
    const int32_t from = 300;
    ks_cluster_consumer_rewind(f->cluster, 0, KS_CONSUMER_REWIND_OFFSET, from);
    CU_ASSERT_TRUE(cf_drain(f, 60 * GF_S));
    int64_t expected = 0, wrong = 0;
    for (int32_t p = 0; p < CF_PARTITIONS_MAX; p++) {
        for (int32_t o = 0; o < CF_OFFSETS_MAX; o++) {
            if (!f->acked[p][o]) {
                continue;
            }
            int32_t want = o >= from ? 2 : 1;
            expected += want - 1;
            wrong += f->processed[p][o] != want;
        }
    }
    CU_ASSERT(expected > 0);
    CU_ASSERT(expected < 2000);
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT_EQUAL(f->consumed_count, 2000 + expected);
    cf_free(f);
    free(f);
}

/* A crashed consumer ignores a rewind: after its restart it resumes from the
 * committed offsets and processes nothing again. */
/* KIP-320: the partition's followers crash, the leader alone acknowledges
 * records the consumer reads, the consumer pauses, the leader crashes and an
 * unclean election makes a follower leader with a shorter log, where new
 * records take the truncated offsets. When the consumer resumes, the new log
 * is longer than its position again. Returns the truncation event count and
 * the offsets processed twice (an old record and the new one there). */
static int32_t run_truncation(struct cluster_fixture *f, bool epochs, int64_t *twice)
{
    gf_init(f, 41, 1, 500, 20000, 1);
    f->topics[0].min_insync_replicas = 1;
    f->cluster_config.unclean_leader_election_enable = true;
    f->cluster_config.client_leader_epochs = epochs;
    f->consumers[0].processing_ns = 1 * (int64_t)GF_MS;
    f->consumers[0].session_timeout_ns = 30 * (int64_t)GF_S;
    f->consumers[0].heartbeat_interval_ns = 3 * (int64_t)GF_S;
    gf_start(f);
    ks_node_id c1 = ks_cluster_consumer_node(&f->spec, 0);
    cf_run_until(f, 2 * GF_S);
    int32_t leader = ks_cluster_leader(f->cluster, 0, 0);
    CU_ASSERT_FATAL(leader >= 1);
    ks_node_id followers[2];
    int32_t n = 0;
    for (int32_t b = 1; b <= 3; b++) {
        if (b != leader) {
            followers[n++] = (ks_node_id)b;
        }
    }
    cf_crash(f, followers[0], false);
    cf_crash(f, followers[1], false);
    cf_run_until(f, 14 * GF_S);
    ks_world_node_pause(f->env.world, c1); /* within its session: it stays in the group */
    cf_run_until(f, 15 * GF_S);
    cf_crash(f, (ks_node_id)leader, false);
    cf_run_until(f, 16 * GF_S);
    cf_restart(f, followers[0]);
    cf_restart(f, followers[1]);
    cf_run_until(f, 32 * GF_S);
    ks_world_node_resume(f->env.world, c1);
    cf_run_until(f, 40 * GF_S);
    cf_restart(f, (ks_node_id)leader);
    CU_ASSERT_TRUE(cf_drain(f, 120 * GF_S));
    CU_ASSERT(f->unclean_elections >= 1);
    int32_t truncations = 0;
    for (guint i = 0; i < f->events->len; i++) {
        const struct cf_event *e = &g_array_index(f->events, struct cf_event, i);
        truncations += e->kind == KS_EV_OFFSET_RESET && e->reason == KS_REASON_LOG_TRUNCATION;
    }
    int64_t lost = 0;
    gf_count(f, &lost, twice);
    return truncations;
}

/* With client-side leader epochs the consumer validates its position with
 * the new leader, detects the truncation and reads the new records at the
 * truncated offsets; without, it skips them: no offset is processed twice. */
static void test_truncation_detected_with_leader_epochs(void)
{
    struct cluster_fixture *f = calloc(1, sizeof(*f));
    int64_t twice = 0;
    CU_ASSERT_EQUAL(run_truncation(f, true, &twice), 1);
    CU_ASSERT(twice > 1000); /* about 1 s of records at 500/s, read again at the new leader */
    cf_free(f);
    free(f);
}

static void test_truncation_skipped_without_leader_epochs(void)
{
    struct cluster_fixture *f = calloc(1, sizeof(*f));
    int64_t twice = 0;
    CU_ASSERT_EQUAL(run_truncation(f, false, &twice), 0);
    CU_ASSERT_EQUAL(twice, 0);
    cf_free(f);
    free(f);
}

/* KIP-951: the longest pause between two records a consumer reading the
 * tail processed while a controlled stop moves the leadership away from the
 * broker it fetches from (which still runs and refuses with
 * NOT_LEADER_OR_FOLLOWER). The key switches both clients: the consumer
 * reaches the new leader a metadata round trip earlier, and the producer
 * (whose records the consumer waits for) skips its retry backoff. */
struct consumed_gap {
    ks_time_ns from_ns;
    ks_time_ns last_ns;
    ks_time_ns longest_ns;
};

static struct consumed_gap gap;

static void gap_on_consumed(void *context, const struct ks_consumed_record *consumed)
{
    cf_on_consumed(context, consumed);
    if (consumed->at_ns < gap.from_ns) {
        return;
    }
    if (gap.last_ns != KS_TIME_NEVER && consumed->at_ns - gap.last_ns > gap.longest_ns) {
        gap.longest_ns = consumed->at_ns - gap.last_ns;
    }
    gap.last_ns = consumed->at_ns;
}

static ks_time_ns run_leader_move(struct cluster_fixture *f, bool discovery)
{
    gf_init(f, 51, 1, 1000, 20000, 1);
    f->cluster_config.client_leader_discovery = discovery;
    f->consumers[0].processing_ns = 100 * (int64_t)GF_MS / 1000; /* 100 us: it reads the tail */
    f->observer.on_consumed = gap_on_consumed;
    gap = (struct consumed_gap){ .from_ns = 9 * GF_S, .last_ns = KS_TIME_NEVER };
    gf_start(f);
    cf_run_until(f, 10 * GF_S);
    int32_t leader = ks_cluster_leader(f->cluster, 0, 0);
    CU_ASSERT_FATAL(leader >= 1);
    CU_ASSERT_TRUE(ks_cluster_stop_broker(f->cluster, leader));
    cf_run_until(f, 13 * GF_S);
    CU_ASSERT_NOT_EQUAL(ks_cluster_leader(f->cluster, 0, 0), leader);
    return gap.longest_ns;
}

static void test_fetch_error_names_the_new_leader(void)
{
    struct cluster_fixture *f = calloc(1, sizeof(*f));
    ks_time_ns with = run_leader_move(f, true);
    cf_free(f);
    memset(f, 0, sizeof(*f));
    ks_time_ns without = run_leader_move(f, false);
    cf_free(f);
    free(f);
    if (getenv("KS_TEST_VERBOSE") != NULL) {
        fprintf(stderr, "\nlongest pause: %.3f ms with KIP-951, %.3f ms without\n",
                (double)with / 1e6, (double)without / 1e6);
    }
    CU_ASSERT(with < without);
}

static void test_rewind_of_crashed_consumer_is_ignored(void)
{
    struct cluster_fixture *f = calloc(1, sizeof(*f));
    run_until_processed(f);
    ks_node_id c1 = ks_cluster_consumer_node(&f->spec, 0);
    cf_crash(f, c1, false);
    ks_cluster_consumer_rewind(f->cluster, 0, KS_CONSUMER_REWIND_EARLIEST, 0);
    cf_run_until(f, ks_world_now_ns(f->env.world) + 2 * GF_S);
    cf_restart(f, c1);
    CU_ASSERT_TRUE(cf_drain(f, 60 * GF_S));
    int64_t lost = -1, duplicates = -1;
    gf_count(f, &lost, &duplicates);
    CU_ASSERT_EQUAL(lost, 0);
    CU_ASSERT_EQUAL(duplicates, 0);
    CU_ASSERT_EQUAL(f->consumed_count, 2000);
    cf_free(f);
    free(f);
}

/* The identity header's producer is the first one of that name in the
 * names it resolves against (parse_identity_digits): names that share a
 * prefix with p1's ("p", "p10") do not match it, and of two "p1" the first
 * counts. */
static int64_t identity_seen[4];
static int64_t identity_other;

static void count_identity(void *context, const struct ks_consumed_record *consumed)
{
    cf_on_consumed(context, consumed);
    if (consumed->producer_index >= 0 && consumed->producer_index < 4 && consumed->seq >= 0 &&
        consumed->seq < 600) {
        identity_seen[consumed->producer_index]++;
    } else {
        identity_other++;
    }
}

static void test_identity_names_first_producer_of_its_name(void)
{
    struct cluster_fixture *f = calloc(1, sizeof(*f));
    memset(identity_seen, 0, sizeof identity_seen);
    identity_other = 0;
    gf_init(f, 43, 2, 1000, 600, 1);
    f->observer.on_consumed = count_identity;
    cf_build(f, f->world_config.seed);
    static struct ks_producer_config names[4];
    static const char *const texts[4] = { "p", "p10", "p1", "p1" };
    for (int32_t i = 0; i < 4; i++) {
        names[i] = f->producer;
        g_strlcpy(names[i].name, texts[i], sizeof names[i].name);
    }
    f->spec.identity_producers = names; /* read by the consumer at each record */
    f->spec.identity_producer_count = 4;
    ks_cluster_start(f->cluster);
    cf_run_until(f, 3 * GF_S);
    CU_ASSERT_TRUE(cf_drain(f, 60 * GF_S));
    CU_ASSERT_EQUAL(f->acked_count, 600);
    CU_ASSERT_EQUAL(identity_seen[2], 600);
    CU_ASSERT_EQUAL(identity_seen[0] + identity_seen[1] + identity_seen[3] + identity_other, 0);
    cf_free(f);
    free(f);
}

void ks_test_register_consumer(void)
{
    static const struct ks_test_case cases[] = {
        { "before_process_is_at_most_once", test_before_process_is_at_most_once },
        { "after_process_is_at_least_once", test_after_process_is_at_least_once },
        { "atomic_is_exactly_once", test_atomic_is_exactly_once },
        { "auto_commit_repeats_one_interval_at_most",
          test_auto_commit_repeats_one_interval_at_most },
        { "offset_reset_latest_skips_the_past", test_offset_reset_latest_skips_the_past },
        { "zombie_after_process_repeats", test_zombie_after_process_repeats },
        { "zombie_atomic_is_fenced", test_zombie_atomic_is_fenced },
        { "rewind_earliest_reprocesses_everything", test_rewind_earliest_reprocesses_everything },
        { "rewind_to_offset_repeats_from_there", test_rewind_to_offset_repeats_from_there },
        { "rewind_of_crashed_consumer_is_ignored", test_rewind_of_crashed_consumer_is_ignored },
        { "truncation_detected_with_leader_epochs", test_truncation_detected_with_leader_epochs },
        { "fetch_error_names_the_new_leader", test_fetch_error_names_the_new_leader },
        { "truncation_skipped_without_leader_epochs",
          test_truncation_skipped_without_leader_epochs },
        { "identity_names_first_producer_of_its_name",
          test_identity_names_first_producer_of_its_name },
    };
    KS_TEST_ADD_SUITE("core/consumer", cases);
}
