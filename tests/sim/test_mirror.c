/* tests/sim/test_mirror.c: one MirrorMaker 2 source task (core/mirror.c)
 * between two clusters on views of one world (sim/world.h).
 *
 * Goal: the remote topic on the target ends as a copy of the source topic,
 * record for record in the same partitions (key, value, timestamp and
 * headers), also across a target leader's crash when the task's producer is
 * idempotent; the offset syncs on the source's offset-syncs topic decode to
 * (topic, partition, upstream, downstream) pairs that name the same record
 * on both sides; a task that crashes resumes from its last committed source
 * offsets and so copies some records twice (at least once, never a gap); a
 * source cluster lost for good loses at most the task's lag at that moment
 * (sim/mirror_check.h mirror_lost); the checkpoints written to the target
 * never point past the group's real position and end at it once the group
 * has read everything; a group that fails over to the target (offsets synced
 * there by the task) skips nothing and processes again at most the records
 * between its synced offsets and its real position; the same seed gives
 * the same trace. Method: east (3 brokers, "orders" with 2
 * partitions, its offset-syncs topic) gets 1000 records from a producer
 * and is read by group g; west (3 brokers, "east.orders" and
 * "east.checkpoints.internal") is written only by the task; the task's
 * invariants are checked after every event; at the end both clusters'
 * leaders' logs are read and compared. */
#include "../../core/mirror.h"
#include "../../core/mirror_sync.h"
#include "../../sim/mirror_check.h"
#include "../core/cluster_fixture.h"
#include "../testlib.h"

struct two {
    struct cluster_fixture east;
    struct cluster_fixture west;
    char *run_dir;
    ks_world *root;
    ks_world *east_view;
    ks_world *west_view;
    struct ks_mirror_config config;
    struct ks_mirror_observer observer;
    struct ks_mirror *mirror;
    int64_t last_downstream[2]; /* per partition, the last acked copy's offset */
    bool downstream_ordered;
};

static void on_mirrored(void *context, int32_t partition, int64_t upstream_offset,
                        int64_t downstream_offset)
{
    struct two *t = context;
    (void)upstream_offset;
    if (downstream_offset <= t->last_downstream[partition]) {
        t->downstream_ordered = false;
    }
    t->last_downstream[partition] = downstream_offset;
}

static void after_event(ks_world *world, void *context)
{
    (void)world;
    struct two *t = context;
    ks_mirror_check(t->mirror);
}

static void cluster_spec(struct cluster_fixture *cf)
{
    cf->check_every_event = false;
    cf->spec = (struct ks_cluster_spec){
        .cluster = &cf->cluster_config,
        .topics = cf->topics,
        .topic_count = cf->topic_count,
        .producers = cf->producer_count > 0 ? &cf->producer : NULL,
        .producer_count = cf->producer_count,
        .consumers = cf->consumer_count > 0 ? cf->consumers : NULL,
        .consumer_count = cf->consumer_count,
    };
}

static const char *const group_ids[] = { "g" };

/* failover: group g also has a consumer on west that starts at 6 s, and the
 * task syncs the group's offsets there (sync.group.offsets.enabled). */
static void build_with(struct two *t, bool idempotent, bool failover)
{
    memset(t, 0, sizeof *t);
    t->last_downstream[0] = t->last_downstream[1] = -1;
    t->downstream_ordered = true;
    cf_init(&t->east, 3);
    cf_topic(&t->east, "orders", 2, 3, 2, NULL);
    g_autofree char *syncs = ks_mirror_offset_syncs_topic("west");
    cf_topic(&t->east, syncs, 1, 3, 2, NULL)->log.cleanup_compact = true;
    struct ks_producer_config *producer = cf_producer(&t->east, "p", 0);
    producer->rate_per_s = 200;
    producer->count = 1000;
    producer->key_count = 100;
    producer->value_bytes = 50;
    t->east.cluster_config.offsets_topic_partition_count = 5;
    t->east.cluster_config.group_initial_rebalance_delay_ns = 1000 * (int64_t)CF_MS;
    struct ks_consumer_config *consumer = cf_consumer(&t->east, "c", "g", 0);
    consumer->auto_offset_reset = KS_RESET_EARLIEST;
    consumer->auto_commit_interval_ns = 1 * CF_S;
    cluster_spec(&t->east);
    cf_init(&t->west, 3);
    g_autofree char *remote = ks_mirror_remote_topic("east", "orders");
    cf_topic(&t->west, remote, 2, 3, 2, NULL);
    g_autofree char *checkpoints = ks_mirror_checkpoints_topic("east");
    cf_topic(&t->west, checkpoints, 1, 3, 2, NULL)->log.cleanup_compact = true;
    if (failover) {
        t->west.cluster_config.offsets_topic_partition_count = 5;
        t->west.cluster_config.group_initial_rebalance_delay_ns = 1000 * (int64_t)CF_MS;
        struct ks_consumer_config *standby = cf_consumer(&t->west, "c2", "g", 0);
        standby->auto_offset_reset = KS_RESET_EARLIEST; /* without a synced offset: all again */
        standby->start_ns = 6 * CF_S;
    }
    cluster_spec(&t->west);

    uint32_t east_count = ks_cluster_node_count(&t->east.spec);
    uint32_t west_count = ks_cluster_node_count(&t->west.spec);
    GError *error = NULL;
    t->run_dir = g_dir_make_tmp("ksim-test-XXXXXX", &error);
    ks_assert(t->run_dir != NULL);
    t->east.world_config.seed = 11;
    t->east.world_config.run_dir = t->run_dir;
    /* node 0 the driver of both, then east, west, and the task's node last */
    t->east.world_config.node_count = east_count + west_count;
    t->root = ks_world_new(&t->east.world_config, &error);
    ks_assert(t->root != NULL);
    t->east_view = ks_world_view_new(t->root, 1, east_count, "east");
    t->west_view = ks_world_view_new(t->root, east_count, west_count, "west");
    t->east.cluster = ks_cluster_new(t->east_view, &t->east.spec, &t->east.observer);
    t->west.cluster = ks_cluster_new(t->west_view, &t->west.spec, &t->west.observer);

    ks_mirror_config_defaults(&t->config);
    t->config.node = east_count + west_count - 1;
    t->config.source_broker_node = ks_world_view_node(t->east_view, 1);
    t->config.source_broker_count = 3;
    t->config.target_broker_node = ks_world_view_node(t->west_view, 1);
    t->config.target_broker_count = 3;
    t->config.source_topic_index = 0;
    t->config.source_topic_name = "orders";
    t->config.target_topic_index = 0;
    t->config.offset_syncs_topic_index = 1;
    t->config.partition_count = 2;
    t->config.offset_flush_interval_ns = 1 * CF_S;
    t->config.enable_idempotence = idempotent;
    t->config.checkpoints_topic_index = 1;
    t->config.target_topic_name = "east.orders";
    t->config.group_ids = group_ids;
    t->config.group_count = 1;
    t->config.emit_checkpoints_interval_ns = 1 * CF_S;
    t->config.sync_group_offsets_enabled = failover;
    t->config.sync_group_offsets_interval_ns = 1 * CF_S;
    t->observer = (struct ks_mirror_observer){ .context = t, .on_mirrored = on_mirrored };
    t->mirror = ks_mirror_new(t->root, &t->config, &t->observer);
    ks_world_set_after_event(t->root, after_event, t);
    ks_cluster_start(t->east.cluster);
    ks_cluster_start(t->west.cluster);
    ks_mirror_start(t->mirror);
}

static void build(struct two *t, bool idempotent)
{
    build_with(t, idempotent, false);
}

/* Stops the producer and runs until both clusters converged and the task
 * caught up, at most 120 s more. */
static void finish(struct two *t)
{
    ks_cluster_stop_producers(t->east.cluster);
    ks_time_ns end_ns = ks_world_now_ns(t->root) + 120 * CF_S;
    while (ks_world_now_ns(t->root) < end_ns) {
        ks_world_run_until(t->root, ks_world_now_ns(t->root) + 100 * CF_MS);
        if (ks_cluster_converged(t->east.cluster) && ks_cluster_converged(t->west.cluster) &&
            ks_mirror_caught_up(t->mirror)) {
            return;
        }
    }
    CU_FAIL("the mirror did not catch up");
}

static void release(struct two *t)
{
    ks_mirror_free(t->mirror);
    ks_cluster_free(t->west.cluster);
    ks_cluster_free(t->east.cluster);
    t->west.cluster = NULL;
    t->east.cluster = NULL;
    ks_world_free(t->root);
    ks_host_remove_tree(t->run_dir);
    g_free(t->run_dir);
    cf_free(&t->west);
    cf_free(&t->east);
}

/* ---- reading the logs ------------------------------------------------------- */

struct record_copy {
    int64_t offset;
    int64_t timestamp;
    uint32_t digest; /* of key, value and headers */
    int64_t seq;     /* from producer p's identity header "p:SEQ"; -1 none */
    char key[512];   /* offset syncs: the key bytes */
    int32_t key_bytes;
    uint8_t value[32];
    int32_t value_bytes;
};

struct scan {
    GArray *out; /* struct record_copy */
    int64_t hw;
};

static uint32_t digest_of(const struct ks_record_view *r)
{
    uint32_t crc = ks_crc32c(0, &r->key_bytes, sizeof r->key_bytes);
    if (r->key_bytes > 0) {
        crc = ks_crc32c(crc, r->key, (size_t)r->key_bytes);
    }
    crc = ks_crc32c(crc, &r->value_bytes, sizeof r->value_bytes);
    if (r->value_bytes > 0) {
        crc = ks_crc32c(crc, r->value, (size_t)r->value_bytes);
    }
    for (int32_t h = 0; h < r->header_count; h++) {
        crc = ks_crc32c(crc, r->headers[h].key, (size_t)r->headers[h].key_bytes);
        if (r->headers[h].value_bytes > 0) {
            crc = ks_crc32c(crc, r->headers[h].value, (size_t)r->headers[h].value_bytes);
        }
    }
    return crc;
}

static bool scan_batch(void *context, const struct ks_batch_view *batch)
{
    struct scan *scan = context;
    if (batch->base_offset >= scan->hw) {
        return false;
    }
    struct ks_record_iter iter;
    struct ks_record_view r;
    ks_record_iter_init(&iter, batch);
    while (ks_record_iter_next(&iter, &r, NULL)) {
        if (r.offset >= scan->hw) {
            continue;
        }
        struct record_copy copy;
        memset(&copy, 0, sizeof copy);
        copy.offset = r.offset;
        copy.timestamp = r.timestamp;
        copy.digest = digest_of(&r);
        copy.seq = -1;
        for (int32_t h = 0; h < r.header_count; h++) {
            const struct ks_header_view *header = &r.headers[h];
            if (header->value_bytes > 2 && header->value_bytes < 24 &&
                memcmp(header->value, "p:", 2) == 0) {
                char text[24];
                memcpy(text, header->value + 2, (size_t)header->value_bytes - 2);
                text[header->value_bytes - 2] = '\0';
                copy.seq = g_ascii_strtoll(text, NULL, 10);
            }
        }
        if (r.key_bytes > 0 && (size_t)r.key_bytes <= sizeof copy.key) {
            memcpy(copy.key, r.key, (size_t)r.key_bytes);
            copy.key_bytes = r.key_bytes;
        }
        if (r.value_bytes > 0 && (size_t)r.value_bytes <= sizeof copy.value) {
            memcpy(copy.value, r.value, (size_t)r.value_bytes);
            copy.value_bytes = r.value_bytes;
        }
        g_array_append_val(scan->out, copy);
    }
    return true;
}

/* The records of a partition up to its HW, from its leader's log. */
static GArray *read_partition(struct ks_cluster *cluster, int32_t topic_index, int32_t partition)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(struct record_copy));
    int32_t leader = ks_cluster_leader(cluster, topic_index, partition);
    CU_ASSERT_TRUE_FATAL(leader >= 1);
    struct ks_replica_state state;
    CU_ASSERT_TRUE_FATAL(ks_cluster_replica_state(cluster, leader, topic_index, partition, &state));
    struct ks_log *log = ks_cluster_replica_log(cluster, leader, topic_index, partition);
    struct scan scan = { out, state.hw };
    ks_log_scan(log, ks_log_start_offset(log), ks_log_leo(log), scan_batch, &scan);
    return out;
}

/* Whether every record of source is in target (by digest and timestamp),
 * in order; *extra_out: target records beyond those (copies made twice). */
static bool contains_in_order(const GArray *source, const GArray *target, int64_t *extra_out)
{
    guint j = 0;
    for (guint i = 0; i < source->len; i++) {
        const struct record_copy *s = &g_array_index(source, struct record_copy, i);
        bool found = false;
        while (j < target->len && !found) {
            const struct record_copy *c = &g_array_index(target, struct record_copy, j++);
            found = c->digest == s->digest && c->timestamp == s->timestamp;
        }
        if (!found) {
            return false;
        }
    }
    *extra_out = (int64_t)target->len - (int64_t)source->len;
    return true;
}

/* ---- tests ------------------------------------------------------------------------ */

/* The two partitions' copies; returns the records copied more than once. */
static int64_t compare_topics(struct two *t, bool exact)
{
    int64_t extra_total = 0;
    int64_t source_total = 0;
    for (int32_t p = 0; p < 2; p++) {
        GArray *source = read_partition(t->east.cluster, 0, p);
        GArray *target = read_partition(t->west.cluster, 0, p);
        int64_t extra = -1;
        CU_ASSERT_TRUE(contains_in_order(source, target, &extra));
        if (exact) {
            CU_ASSERT_EQUAL(target->len, source->len);
            for (guint i = 0; i < source->len && i < target->len; i++) {
                /* nothing else writes the remote topic: same offsets too */
                CU_ASSERT_EQUAL(g_array_index(target, struct record_copy, i).offset,
                                g_array_index(source, struct record_copy, i).offset);
            }
        }
        extra_total += extra;
        source_total += source->len;
        g_array_free(source, TRUE);
        g_array_free(target, TRUE);
    }
    CU_ASSERT_EQUAL(source_total, 1000);
    return extra_total;
}

/* Every offset sync decodes, names "orders" and a partition, and its two
 * offsets name the same record on both sides (identical logs: equal). */
static int64_t check_syncs(struct two *t)
{
    GArray *syncs = read_partition(t->east.cluster, 1, 0);
    for (guint i = 0; i < syncs->len; i++) {
        const struct record_copy *r = &g_array_index(syncs, struct record_copy, i);
        char topic[64];
        int32_t partition = -1;
        CU_ASSERT_TRUE(ks_offset_sync_key_decode((const uint8_t *)r->key, (size_t)r->key_bytes,
                                                 topic, sizeof topic, &partition));
        CU_ASSERT_STRING_EQUAL(topic, "orders");
        CU_ASSERT_TRUE(partition == 0 || partition == 1);
        struct ks_offset_sync sync;
        CU_ASSERT_TRUE(ks_offset_sync_value_decode(r->value, (size_t)r->value_bytes, &sync));
        CU_ASSERT_EQUAL(sync.upstream_offset, sync.downstream_offset);
    }
    int64_t count = syncs->len;
    g_array_free(syncs, TRUE);
    return count;
}

static uint64_t steady(bool idempotent)
{
    struct two t;
    build(&t, idempotent);
    ks_world_run_until(t.root, 8 * CF_S);
    finish(&t);
    CU_ASSERT_EQUAL(compare_topics(&t, true), 0);
    CU_ASSERT_EQUAL(ks_mirror_record_count(t.mirror), 1000);
    CU_ASSERT_TRUE(t.downstream_ordered);
    int64_t syncs = check_syncs(&t);
    /* offset.lag.max = 100: a sync at the first record of each partition,
     * then one per 100 records or so, and the delayed ones at each flush */
    CU_ASSERT_TRUE(syncs >= 2 + 1000 / 100 - 2);
    CU_ASSERT_EQUAL(syncs, ks_mirror_sync_count(t.mirror));
    for (int32_t p = 0; p < 2; p++) {
        CU_ASSERT_EQUAL(ks_mirror_mirrored_next(t.mirror, p), ks_mirror_source_hw(t.mirror, p));
    }
    uint64_t hash = ks_world_trace_hash(t.root);
    release(&t);
    return hash;
}

static void test_mirror_steady(void)
{
    uint64_t hash = steady(true);
    CU_ASSERT_EQUAL(steady(true), hash);
    CU_ASSERT_NOT_EQUAL(steady(false), hash); /* no InitProducerId: other messages */
}

static void test_mirror_target_leader_crash(void)
{
    struct two t;
    build(&t, true);
    ks_world_run_until(t.root, 3 * CF_S);
    int32_t leader = ks_cluster_leader(t.west.cluster, 0, 0);
    CU_ASSERT_TRUE_FATAL(leader >= 1);
    ks_world_node_crash(t.root, ks_world_view_node(t.west_view, (ks_node_id)leader), false);
    ks_cluster_on_node_crashed(t.west.cluster, (ks_node_id)leader);
    ks_mirror_on_broker_down(t.mirror, true, leader);
    ks_world_run_until(t.root, 5 * CF_S);
    ks_world_node_restart(t.root, ks_world_view_node(t.west_view, (ks_node_id)leader));
    ks_cluster_on_node_restarted(t.west.cluster, (ks_node_id)leader);
    ks_world_run_until(t.root, 8 * CF_S);
    finish(&t);
    /* acks = all and idempotence: every record once, none lost */
    int64_t extra = compare_topics(&t, false);
    CU_ASSERT_EQUAL(extra, 0);
    check_syncs(&t);
    release(&t);
}

static void test_mirror_task_restart(void)
{
    struct two t;
    build(&t, true);
    ks_world_run_until(t.root, 4500 * CF_MS);
    ks_world_node_crash(t.root, t.config.node, false);
    ks_mirror_on_crash(t.mirror);
    ks_world_run_until(t.root, 5 * CF_S);
    ks_world_node_restart(t.root, t.config.node);
    ks_mirror_on_restart(t.mirror);
    ks_world_run_until(t.root, 8 * CF_S);
    finish(&t);
    /* at least once: no gap, and what was copied after the last commit
     * (at 4 s, half a second of records) is copied again under a new
     * producer id, which the target cannot deduplicate */
    int64_t extra = compare_topics(&t, false);
    CU_ASSERT_TRUE(extra > 0);
    CU_ASSERT_TRUE(extra <= 200 + 10); /* 1 s of records at most */
    /* a batch appended just before the crash was never acked to the task */
    CU_ASSERT_TRUE(ks_mirror_record_count(t.mirror) >= 1000);
    CU_ASSERT_TRUE(ks_mirror_record_count(t.mirror) <= 1000 + extra);
    release(&t);
}

/* The source cluster is lost for good while the task lags: what the target
 * lacks of the records the source acknowledged (mirror_lost) is at most the
 * lag when it was lost, the source's HW minus the next offset the task had
 * not copied, because an acks=all record is acked only below the HW and
 * everything below mirrored_next is on the target. */
static void test_mirror_source_lost(void)
{
    struct two t;
    build(&t, true);
    /* the link between the datacenters: 40 ms one way between the task
     * (next to the target) and every node of the source */
    uint32_t east_count = ks_cluster_node_count(&t.east.spec);
    for (ks_node_id node = 1; node < east_count; node++) {
        ks_world_net_set_link_latency(t.root, t.config.node, ks_world_view_node(t.east_view, node),
                                      40 * CF_MS);
    }
    ks_world_run_until(t.root, 4 * CF_S + 3 * CF_MS);
    int64_t hw[2];
    int64_t next[2];
    for (int32_t p = 0; p < 2; p++) {
        int32_t leader = ks_cluster_leader(t.east.cluster, 0, p);
        struct ks_replica_state state;
        CU_ASSERT_TRUE_FATAL(ks_cluster_replica_state(t.east.cluster, leader, 0, p, &state));
        hw[p] = state.hw;
        next[p] = ks_mirror_mirrored_next(t.mirror, p);
    }
    int64_t lag = ks_mirror_lag(hw, next, 2);
    for (ks_node_id node = 1; node < east_count; node++) {
        ks_world_node_crash(t.root, ks_world_view_node(t.east_view, node), true);
        ks_cluster_on_node_crashed(t.east.cluster, node);
    }
    ks_world_run_until(t.root, 20 * CF_S);
    CU_ASSERT_TRUE(ks_cluster_converged(t.west.cluster));
    GArray *target = g_array_new(FALSE, FALSE, sizeof(struct ks_read_record));
    for (int32_t p = 0; p < 2; p++) {
        GArray *copies = read_partition(t.west.cluster, 0, p);
        for (guint i = 0; i < copies->len; i++) {
            const struct record_copy *c = &g_array_index(copies, struct record_copy, i);
            struct ks_read_record r = { 0,         p,
                                        c->offset, c->seq >= 0 ? 0 : -1,
                                        c->seq,    KS_READ_TXN_NONE,
                                        0,         0,
                                        0 };
            g_array_append_val(target, r);
        }
        g_array_free(copies, TRUE);
    }
    struct ks_mirror_check_input in = {
        .outcomes = (const struct ks_record_outcome *)(void *)t.east.outcomes->data,
        .outcome_count = t.east.outcomes->len,
        .producer_count = 1,
        .source_topic_index = 0,
        .source_lost = true,
        .target_read = (const struct ks_read_record *)(void *)target->data,
        .target_read_count = target->len,
    };
    struct ks_mirror_check_output out;
    ks_mirror_check_run(&in, &out);
    CU_ASSERT_TRUE(out.records_acked > 0 && out.records_acked < 1000);
    CU_ASSERT_TRUE(out.mirror_lost > 0); /* a round trip over the link of records */
    CU_ASSERT_TRUE(out.mirror_lost <= lag);
    CU_ASSERT_EQUAL(out.mirrored + out.mirror_lost, out.records_acked);
    CU_ASSERT_EQUAL(out.mirror_duplicates, 0);
    if (getenv("KS_TEST_VERBOSE") != NULL) {
        printf("\nacked %lld, mirrored %lld, lost %lld, lag at the loss %lld\n",
               (long long)out.records_acked, (long long)out.mirrored, (long long)out.mirror_lost,
               (long long)lag);
    }
    g_array_free(target, TRUE);
    release(&t);
}

/* The checkpoint side: every checkpoint on the target decodes, names group
 * g, the remote topic and a partition, and never points past the group's
 * real position (T1: identical logs, so downstream <= upstream); once the
 * group has read everything and the last syncs are flushed, the last
 * checkpoint of each partition is the group's position exactly. */
static void test_mirror_checkpoints(void)
{
    struct two t;
    build(&t, true);
    ks_world_run_until(t.root, 8 * CF_S);
    finish(&t);
    ks_world_run_until(t.root, ks_world_now_ns(t.root) + 3 * CF_S);
    GArray *records = read_partition(t.west.cluster, 1, 0);
    CU_ASSERT_TRUE(records->len >= 2);
    CU_ASSERT_EQUAL((int64_t)records->len, ks_mirror_checkpoint_count(t.mirror));
    for (guint i = 0; i < records->len; i++) {
        const struct record_copy *r = &g_array_index(records, struct record_copy, i);
        char group[64];
        char topic[64];
        int32_t partition = -1;
        CU_ASSERT_TRUE(ks_checkpoint_key_decode((const uint8_t *)r->key, (size_t)r->key_bytes,
                                                group, sizeof group, topic, sizeof topic,
                                                &partition));
        CU_ASSERT_STRING_EQUAL(group, "g");
        CU_ASSERT_STRING_EQUAL(topic, "east.orders");
        CU_ASSERT_TRUE(partition == 0 || partition == 1);
        struct ks_offset_sync checkpoint;
        char metadata[16];
        CU_ASSERT_TRUE(ks_checkpoint_value_decode(r->value, (size_t)r->value_bytes, &checkpoint,
                                                  metadata, sizeof metadata));
        CU_ASSERT_TRUE(checkpoint.downstream_offset >= 0);
        CU_ASSERT_TRUE(checkpoint.downstream_offset <= checkpoint.upstream_offset);
        if (getenv("KS_TEST_VERBOSE") != NULL) {
            printf("\ncheckpoint %s %s-%d upstream %lld downstream %lld", group, topic, partition,
                   (long long)checkpoint.upstream_offset, (long long)checkpoint.downstream_offset);
        }
    }
    for (int32_t p = 0; p < 2; p++) {
        struct ks_offset_sync last;
        CU_ASSERT_TRUE_FATAL(ks_mirror_checkpoint(t.mirror, 0, p, &last));
        CU_ASSERT_EQUAL(last.upstream_offset, ks_mirror_source_hw(t.mirror, p));
        CU_ASSERT_EQUAL(last.downstream_offset, last.upstream_offset);
    }
    g_array_free(records, TRUE);
    release(&t);
}

/* Failover of group g from east to west at 6 s (its consumer on east
 * crashes, one on west starts): the west consumer resumes from the offsets
 * the task synced to west's group (the last checkpoints, translated from the
 * group's commits on east), so no record goes unprocessed, and the records it
 * processes again (failover_duplicates) are at most those between the synced
 * offsets and where the group really was. */
static void test_mirror_failover(void)
{
    struct two t;
    build_with(&t, true, true);
    ks_time_ns failover_ns = 6 * CF_S;
    ks_world_run_until(t.root, failover_ns);
    ks_node_id consumer = ks_cluster_consumer_node(&t.east.spec, 0);
    ks_world_node_crash(t.root, ks_world_view_node(t.east_view, consumer), false);
    ks_cluster_on_node_crashed(t.east.cluster, consumer);
    int64_t bound = 0;
    for (int32_t p = 0; p < 2; p++) {
        struct ks_offset_sync checkpoint;
        CU_ASSERT_TRUE_FATAL(ks_mirror_checkpoint(t.mirror, 0, p, &checkpoint));
        int64_t position = 0; /* one past the last offset processed on east */
        for (int64_t o = 0; o < CF_OFFSETS_MAX; o++) {
            if (t.east.processed[p][o] > 0) {
                position = o + 1;
            }
        }
        CU_ASSERT_TRUE(checkpoint.downstream_offset <= position);
        bound += position - checkpoint.downstream_offset;
    }
    CU_ASSERT_TRUE(ks_mirror_group_sync_count(t.mirror) >= 1);
    ks_world_run_until(t.root, 8 * CF_S);
    finish(&t);
    /* identical logs: (partition, offset) names a record on both clusters */
    GArray *consumed = g_array_new(FALSE, FALSE, sizeof(struct ks_consumed_record));
    int64_t unprocessed = 0;
    int64_t total = 0;
    for (int32_t p = 0; p < 2; p++) {
        GArray *source = read_partition(t.east.cluster, 0, p);
        total += source->len;
        for (guint o = 0; o < source->len; o++) {
            struct ks_consumed_record c = {
                .partition = p, .offset = o, .producer_index = p, .seq = o
            };
            for (int32_t k = 0; k < t.east.processed[p][o]; k++) {
                c.at_ns = 0;
                g_array_append_val(consumed, c);
            }
            for (int32_t k = 0; k < t.west.processed[p][o]; k++) {
                c.at_ns = failover_ns;
                g_array_append_val(consumed, c);
            }
            unprocessed += t.east.processed[p][o] == 0 && t.west.processed[p][o] == 0;
        }
        g_array_free(source, TRUE);
    }
    int64_t duplicates = ks_mirror_failover_duplicates(
        (const struct ks_consumed_record *)(void *)consumed->data, consumed->len, failover_ns);
    CU_ASSERT_EQUAL(total, 1000);
    CU_ASSERT_EQUAL(unprocessed, 0);
    CU_ASSERT_TRUE(duplicates > 0);
    CU_ASSERT_TRUE(duplicates <= bound);
    if (getenv("KS_TEST_VERBOSE") != NULL) {
        printf("\nfailover_duplicates %lld, bound %lld, group syncs %lld\n", (long long)duplicates,
               (long long)bound, (long long)ks_mirror_group_sync_count(t.mirror));
    }
    g_array_free(consumed, TRUE);
    release(&t);
}

void ks_test_register_mirror(void)
{
    static const struct ks_test_case cases[] = {
        { "steady", test_mirror_steady },
        { "target leader crash", test_mirror_target_leader_crash },
        { "task restart", test_mirror_task_restart },
        { "source lost", test_mirror_source_lost },
        { "checkpoints", test_mirror_checkpoints },
        { "failover", test_mirror_failover },
    };
    KS_TEST_ADD_SUITE("core/mirror", cases);
}
