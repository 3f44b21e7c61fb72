/*
** tests/core/test_txn_offsets.c: sendOffsetsToTransaction on the broker side
** (KIP-98, KIP-447). The test is the client: from the driver's node it speaks
** the protocol by hand to a 3-broker cluster whose internal topics have one
** partition each: InitProducerId, AddOffsetsToTxn (the group's
** __consumer_offsets partition joins the transaction) and EndTxn to the
** transaction coordinator, TxnOffsetCommit and OffsetFetch to the group
** coordinator. It checks that a transactional offset is pending
** (OffsetFetch: UNSTABLE_OFFSET_COMMIT for that partition, the others
** answered) until the transaction's marker
** reaches __consumer_offsets, then committed on COMMIT and gone on ABORT;
** that a new coordinator rebuilds both from the log (the committed offset,
** and the pending one of a transaction still open); and that a
** TxnOffsetCommit naming an unknown member is refused (KIP-447 fencing).
*/
#include "repl_harness.h"

#include "../../core/group_proto.h"

#define TOPIC_ORDERS  0
#define TOPIC_OFFSETS 1
#define TOPIC_TXN     2

struct txn_client {
    struct cluster_fixture h;
    struct h_client_box box;
    int32_t next_correlation;
    int64_t producer_id;
    int16_t producer_epoch;
};

/* 3 brokers, orders-0 and orders-1, one partition of each internal topic, a consumer
 * and a transactional producer that never start (they only make the
 * cluster create __consumer_offsets and __transaction_state). */
static void client_init_verification(struct txn_client *t, uint64_t seed, bool verification)
{
    memset(t, 0, sizeof *t);
    struct cluster_fixture *h = &t->h;
    cf_init(h, 3);
    h->cluster_config.txn_partition_verification_enable = verification;
    h->cluster_config.offsets_topic_partition_count = 1;
    h->cluster_config.txn_topic_partition_count = 1;
    static const int32_t assign[] = { 1, 2, 3, 2, 3, 1 };
    cf_topic(h, "orders", 2, 3, 2, assign);
    struct ks_producer_config *p = cf_producer(h, "p1", TOPIC_ORDERS);
    g_strlcpy(p->transactional_id, "idle", sizeof p->transactional_id);
    p->start_ns = 3600 * (int64_t)H_S;
    struct ks_consumer_config *c = cf_consumer(h, "c1", "g1", TOPIC_ORDERS);
    c->start_ns = 3600 * (int64_t)H_S;
    cf_start(h, seed);
    ks_world_set_receiver(h->env.world, KS_NODE_DRIVER, h_client_receive, &t->box);
    cf_run_until(h, 1000 * H_MS);
    t->next_correlation = 1;
}

static void client_init(struct txn_client *t, uint64_t seed)
{
    client_init_verification(t, seed, true);
}

static int32_t leader_of(struct txn_client *t, int32_t topic_index)
{
    return ks_cluster_leader(t->h.cluster, topic_index, 0);
}

static void txn_request_init(struct txn_client *t, struct ks_txn_request *r)
{
    memset(r, 0, sizeof *r);
    r->correlation_id = t->next_correlation++;
    r->producer_id = t->producer_id;
    r->producer_epoch = t->producer_epoch;
    r->timeout_ns = 60 * (int64_t)H_S;
    g_strlcpy(r->transactional_id, "proc", sizeof r->transactional_id);
}

/* Sends a transaction request of `kind` to the coordinator, again after
 * 100 ms while it answers a retriable error, until 5 s pass. Returns the
 * last error. */
static int16_t txn_call(struct txn_client *t, uint32_t kind, const void *request,
                        size_t request_bytes)
{
    int16_t error = KS_ERR_REQUEST_TIMED_OUT;
    for (int attempt = 0; attempt < 50; attempt++) {
        t->box.count = 0;
        int32_t coordinator = leader_of(t, TOPIC_TXN);
        if (coordinator > 0) {
            ks_world_send(t->h.env.world, KS_NODE_DRIVER, (ks_node_id)coordinator, kind, request,
                          request_bytes);
        }
        cf_run_for(&t->h, 100 * H_MS);
        if (t->box.count == 0 || t->box.kind != kind + 1) {
            continue;
        }
        struct ks_txn_response response;
        memcpy(&response, t->box.bytes, sizeof response);
        error = response.error_code;
        if (error == KS_ERR_NONE) {
            /* A transaction.version 2 client goes on with the id and
             * epoch EndTxn returns (the epoch bumped at every end). */
            if (kind == KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST ||
                (kind == KS_MSG_TXN_END_REQUEST &&
                 t->h.cluster_config.transaction_version >= 2)) {
                t->producer_id = response.producer_id;
                t->producer_epoch = response.producer_epoch;
            }
            return error;
        }
        if (error != KS_ERR_CONCURRENT_TRANSACTIONS && error != KS_ERR_NOT_COORDINATOR &&
            error != KS_ERR_COORDINATOR_LOAD_IN_PROGRESS &&
            error != KS_ERR_COORDINATOR_NOT_AVAILABLE) {
            return error;
        }
    }
    return error;
}

static int16_t init_producer(struct txn_client *t)
{
    struct ks_txn_request r;
    txn_request_init(t, &r);
    return txn_call(t, KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST, &r, sizeof r);
}

static int16_t add_offsets(struct txn_client *t)
{
    struct ks_txn_add_offsets_request r;
    memset(&r, 0, sizeof r);
    txn_request_init(t, &r.txn);
    g_strlcpy(r.group_id, "g1", sizeof r.group_id);
    return txn_call(t, KS_MSG_TXN_ADD_OFFSETS_REQUEST, &r, sizeof r);
}

static int16_t end_txn(struct txn_client *t, bool commit)
{
    struct ks_txn_request r;
    txn_request_init(t, &r);
    r.commit = commit ? 1 : 0;
    return txn_call(t, KS_MSG_TXN_END_REQUEST, &r, sizeof r);
}

/* Sends a group request to the group coordinator and runs 100 ms; returns
 * false when no answer of the expected kind came. */
static bool group_call(struct txn_client *t, uint32_t kind, const void *request,
                       size_t request_bytes)
{
    t->box.count = 0;
    int32_t coordinator = leader_of(t, TOPIC_OFFSETS);
    if (coordinator < 1) {
        return false;
    }
    ks_world_send(t->h.env.world, KS_NODE_DRIVER, (ks_node_id)coordinator, kind, request,
                  request_bytes);
    cf_run_for(&t->h, 100 * H_MS);
    return t->box.count > 0 && t->box.kind == kind + 1;
}

/* TxnOffsetCommit of orders-<partition> at `offset`; returns the error
 * code, or INT16_MIN when nothing answered. */
static int16_t txn_offset_commit_at(struct txn_client *t, int32_t partition, int64_t offset,
                                    int32_t generation, const char *member_id)
{
    _Alignas(8) uint8_t message[sizeof(struct ks_group_txn_offset_commit_request) +
                                sizeof(struct ks_group_offset_entry)];
    memset(message, 0, sizeof message);
    struct ks_group_txn_offset_commit_request *r = (void *)message;
    r->correlation_id = t->next_correlation++;
    r->generation = generation;
    r->entry_count = 1;
    r->producer_id = t->producer_id;
    r->producer_epoch = t->producer_epoch;
    g_strlcpy(r->group_id, "g1", sizeof r->group_id);
    g_strlcpy(r->member_id, member_id, sizeof r->member_id);
    g_strlcpy(r->transactional_id, "proc", sizeof r->transactional_id);
    struct ks_group_offset_entry *e = (void *)(message + sizeof *r);
    e->topic_index = TOPIC_ORDERS;
    e->partition = partition;
    e->offset = offset;
    if (!group_call(t, KS_GROUP_TXN_OFFSET_COMMIT_REQUEST, message, sizeof message)) {
        return INT16_MIN;
    }
    struct ks_group_simple_response response;
    memcpy(&response, t->box.bytes, sizeof response);
    return response.error_code;
}

static int16_t txn_offset_commit(struct txn_client *t, int64_t offset, int32_t generation,
                                 const char *member_id)
{
    return txn_offset_commit_at(t, 0, offset, generation, member_id);
}

/* OffsetFetch of orders-0 .. orders-<count - 1> (count <= 2): the request's
 * error code; when it is NONE, each partition's error and offset. */
static int16_t offset_fetch_partitions(struct txn_client *t, int32_t count, int16_t *errors_out,
                                       int64_t *offsets_out)
{
    _Alignas(8) uint8_t message[sizeof(struct ks_group_offset_fetch_request) +
                                2 * sizeof(struct ks_group_topic_partition)];
    ks_assert(count >= 1 && count <= 2);
    memset(message, 0, sizeof message);
    struct ks_group_offset_fetch_request *r = (void *)message;
    r->correlation_id = t->next_correlation++;
    r->entry_count = count;
    g_strlcpy(r->group_id, "g1", sizeof r->group_id);
    for (int32_t p = 0; p < count; p++) {
        struct ks_group_topic_partition *tp =
            (void *)(message + sizeof *r + (size_t)p * sizeof *tp);
        tp->topic_index = TOPIC_ORDERS;
        tp->partition = p;
        errors_out[p] = INT16_MIN;
        offsets_out[p] = INT64_MIN;
    }
    size_t bytes = sizeof *r + (size_t)count * sizeof(struct ks_group_topic_partition);
    if (!group_call(t, KS_GROUP_OFFSET_FETCH_REQUEST, message, bytes)) {
        return INT16_MIN;
    }
    struct ks_group_offset_fetch_response response;
    memcpy(&response, t->box.bytes, sizeof response);
    if (response.error_code == KS_GROUP_ERR_NONE && response.entry_count == count) {
        for (int32_t p = 0; p < count; p++) {
            struct ks_group_offset_fetch_entry e;
            memcpy(&e, t->box.bytes + sizeof response + (size_t)p * sizeof e, sizeof e);
            CU_ASSERT_EQUAL(e.partition, p);
            errors_out[p] = e.error_code;
            offsets_out[p] = e.offset;
        }
    }
    return response.error_code;
}

/* OffsetFetch of orders-0: the request's error code or else the
 * partition's, and the offset when both are NONE. */
static int16_t offset_fetch(struct txn_client *t, int64_t *offset_out)
{
    int16_t error = INT16_MIN;
    int16_t request_error = offset_fetch_partitions(t, 1, &error, offset_out);
    if (request_error != KS_GROUP_ERR_NONE) {
        *offset_out = INT64_MIN;
        return request_error;
    }
    if (error != KS_GROUP_ERR_NONE) {
        CU_ASSERT_EQUAL(*offset_out, -1); /* INVALID_OFFSET beside the error */
        *offset_out = INT64_MIN;
    }
    return error;
}

/* InitProducerId, AddOffsetsToTxn and TxnOffsetCommit(offset): the
 * transaction is open with the offset pending. */
static void open_with_offset(struct txn_client *t, int64_t offset)
{
    CU_ASSERT_EQUAL_FATAL(add_offsets(t), KS_ERR_NONE);
    CU_ASSERT_EQUAL_FATAL(txn_offset_commit(t, offset, -1, ""), KS_GROUP_ERR_NONE);
}

static void test_pending_until_commit_marker(void)
{
    struct txn_client t;
    client_init(&t, 3);
    CU_ASSERT_EQUAL_FATAL(init_producer(&t), KS_ERR_NONE);
    int64_t offset = 0;
    CU_ASSERT_EQUAL(offset_fetch(&t, &offset), KS_GROUP_ERR_NONE);
    CU_ASSERT_EQUAL(offset, -1); /* nothing committed yet */
    open_with_offset(&t, 42);
    /* KIP-447: a read_committed consumer must not start from an offset
     * whose transaction may still abort. */
    CU_ASSERT_EQUAL(offset_fetch(&t, &offset), KS_GROUP_ERR_UNSTABLE_OFFSET_COMMIT);
    CU_ASSERT_EQUAL(end_txn(&t, true), KS_ERR_NONE);
    /* EndTxn answers at the commit decision; the marker follows. */
    cf_run_for(&t.h, 500 * H_MS);
    CU_ASSERT_EQUAL(offset_fetch(&t, &offset), KS_GROUP_ERR_NONE);
    CU_ASSERT_EQUAL(offset, 42);
    /* The marker in __consumer_offsets is a real control batch: the LSO of
     * the partition is past it (nothing open), as the HW. */
    int32_t leader = leader_of(&t, TOPIC_OFFSETS);
    CU_ASSERT_EQUAL(ks_broker_leo(ks_cluster_broker(t.h.cluster, leader), TOPIC_OFFSETS, 0), 2);
    cf_free(&t.h);
}

static void test_abort_drops_pending(void)
{
    struct txn_client t;
    client_init(&t, 4);
    CU_ASSERT_EQUAL_FATAL(init_producer(&t), KS_ERR_NONE);
    open_with_offset(&t, 10);
    CU_ASSERT_EQUAL(end_txn(&t, true), KS_ERR_NONE);
    cf_run_for(&t.h, 500 * H_MS);
    open_with_offset(&t, 25);
    int64_t offset = 0;
    CU_ASSERT_EQUAL(offset_fetch(&t, &offset), KS_GROUP_ERR_UNSTABLE_OFFSET_COMMIT);
    CU_ASSERT_EQUAL(end_txn(&t, false), KS_ERR_NONE);
    cf_run_for(&t.h, 500 * H_MS);
    CU_ASSERT_EQUAL(offset_fetch(&t, &offset), KS_GROUP_ERR_NONE);
    CU_ASSERT_EQUAL(offset, 10); /* the aborted 25 vanished; the committed 10 stays */
    cf_free(&t.h);
}

static void test_new_coordinator_loads_pending(void)
{
    struct txn_client t;
    client_init(&t, 5);
    CU_ASSERT_EQUAL_FATAL(init_producer(&t), KS_ERR_NONE);
    open_with_offset(&t, 7);
    CU_ASSERT_EQUAL(end_txn(&t, true), KS_ERR_NONE);
    cf_run_for(&t.h, 500 * H_MS);
    open_with_offset(&t, 9); /* left open */
    int32_t old_leader = leader_of(&t, TOPIC_OFFSETS);
    cf_crash(&t.h, (ks_node_id)old_leader, false);
    int64_t offset = 0;
    int16_t error = INT16_MIN;
    for (int i = 0; i < 200 && (error == INT16_MIN || error == KS_GROUP_ERR_NOT_COORDINATOR ||
                                error == KS_GROUP_ERR_COORDINATOR_LOAD_IN_PROGRESS);
         i++) {
        error = offset_fetch(&t, &offset);
    }
    CU_ASSERT_NOT_EQUAL(leader_of(&t, TOPIC_OFFSETS), old_leader);
    /* The new coordinator read 7's COMMIT marker and 9's open batch. */
    CU_ASSERT_EQUAL(error, KS_GROUP_ERR_UNSTABLE_OFFSET_COMMIT);
    CU_ASSERT_EQUAL(end_txn(&t, true), KS_ERR_NONE);
    cf_run_for(&t.h, 2000 * H_MS);
    CU_ASSERT_EQUAL(offset_fetch(&t, &offset), KS_GROUP_ERR_NONE);
    CU_ASSERT_EQUAL(offset, 9);
    cf_free(&t.h);
}

/* KIP-447 answers per partition (GroupMetadataManager.getOffsets,
 * OffsetMetadataManager.fetchOffsets): with orders-1's offset 7 committed
 * and orders-0's offset 42 pending, one OffsetFetch of both gets
 * UNSTABLE_OFFSET_COMMIT for orders-0 alone and 7 for orders-1, the request
 * itself without error. */
static void test_unstable_per_partition(void)
{
    struct txn_client t;
    client_init(&t, 7);
    CU_ASSERT_EQUAL_FATAL(init_producer(&t), KS_ERR_NONE);
    CU_ASSERT_EQUAL_FATAL(add_offsets(&t), KS_ERR_NONE);
    CU_ASSERT_EQUAL_FATAL(txn_offset_commit_at(&t, 1, 7, -1, ""), KS_GROUP_ERR_NONE);
    CU_ASSERT_EQUAL_FATAL(end_txn(&t, true), KS_ERR_NONE);
    cf_run_for(&t.h, 500 * H_MS);
    open_with_offset(&t, 42);
    int16_t errors[2];
    int64_t offsets[2];
    CU_ASSERT_EQUAL(offset_fetch_partitions(&t, 2, errors, offsets), KS_GROUP_ERR_NONE);
    CU_ASSERT_EQUAL(errors[0], KS_GROUP_ERR_UNSTABLE_OFFSET_COMMIT);
    CU_ASSERT_EQUAL(offsets[0], -1);
    CU_ASSERT_EQUAL(errors[1], KS_GROUP_ERR_NONE);
    CU_ASSERT_EQUAL(offsets[1], 7);
    /* Once the COMMIT marker is written, both are stable. */
    CU_ASSERT_EQUAL(end_txn(&t, true), KS_ERR_NONE);
    cf_run_for(&t.h, 500 * H_MS);
    CU_ASSERT_EQUAL(offset_fetch_partitions(&t, 2, errors, offsets), KS_GROUP_ERR_NONE);
    CU_ASSERT_EQUAL(errors[0], KS_GROUP_ERR_NONE);
    CU_ASSERT_EQUAL(offsets[0], 42);
    CU_ASSERT_EQUAL(errors[1], KS_GROUP_ERR_NONE);
    CU_ASSERT_EQUAL(offsets[1], 7);
    cf_free(&t.h);
}

static void test_unknown_member_fenced(void)
{
    struct txn_client t;
    client_init(&t, 6);
    CU_ASSERT_EQUAL_FATAL(init_producer(&t), KS_ERR_NONE);
    CU_ASSERT_EQUAL_FATAL(add_offsets(&t), KS_ERR_NONE);
    /* KIP-447: group metadata of a member the coordinator does not know. */
    CU_ASSERT_EQUAL(txn_offset_commit(&t, 5, 3, "ghost-1"), KS_GROUP_ERR_UNKNOWN_MEMBER_ID);
    int64_t offset = 0;
    CU_ASSERT_EQUAL(offset_fetch(&t, &offset), KS_GROUP_ERR_NONE); /* nothing pending */
    CU_ASSERT_EQUAL(offset, -1);
    cf_free(&t.h);
}

/* Transactions open on __consumer_offsets-0 at its leader. */
static int32_t offsets_open_txns(struct txn_client *t)
{
    struct ks_log *log =
        ks_cluster_replica_log(t->h.cluster, leader_of(t, TOPIC_OFFSETS), TOPIC_OFFSETS, 0);
    CU_ASSERT_FATAL(log != NULL);
    return ks_log_open_txn_count(log);
}

/* KIP-890 part 1 for offsets (KAFKA-15449; GroupCoordinator
 * .handleTxnCommitOffsets, GroupCoordinatorService.commitTransactionalOffsets):
 * a TxnOffsetCommit whose __consumer_offsets partition is not in the
 * producer's transaction (no AddOffsetsToTxn) is verified with the
 * transaction coordinator first and refused with INVALID_TXN_STATE: nothing
 * pending, no transaction opened on __consumer_offsets. With
 * transaction.partition.verification.enable = false (Kafka before 3.6) it is
 * appended and opens a transaction there that no marker will close (the
 * coordinator does not know the partition), which holds the offset
 * UNSTABLE for good. Once the partition is added, the verification passes;
 * a fenced epoch is refused with INVALID_PRODUCER_EPOCH. */
static void test_offsets_verified(void)
{
    for (int verification = 0; verification <= 1; verification++) {
        struct txn_client t;
        client_init_verification(&t, 6, verification != 0);
        CU_ASSERT_EQUAL_FATAL(init_producer(&t), KS_ERR_NONE);
        int64_t offset = 0;
        int16_t answer = txn_offset_commit(&t, 5, -1, "");
        if (verification) {
            CU_ASSERT_EQUAL(answer, KS_GROUP_ERR_INVALID_TXN_STATE);
            CU_ASSERT_EQUAL(offsets_open_txns(&t), 0);
            CU_ASSERT_EQUAL(offset_fetch(&t, &offset), KS_GROUP_ERR_NONE);
            CU_ASSERT_EQUAL(offset, -1);
            /* Added: verified, pending, then committed. */
            CU_ASSERT_EQUAL_FATAL(add_offsets(&t), KS_ERR_NONE);
            CU_ASSERT_EQUAL(txn_offset_commit(&t, 6, -1, ""), KS_GROUP_ERR_NONE);
            CU_ASSERT_EQUAL(offsets_open_txns(&t), 1);
            /* The transaction is open there now: no second verification. */
            CU_ASSERT_EQUAL(txn_offset_commit(&t, 7, -1, ""), KS_GROUP_ERR_NONE);
            CU_ASSERT_EQUAL(end_txn(&t, true), KS_ERR_NONE);
            cf_run_for(&t.h, 500 * H_MS);
            CU_ASSERT_EQUAL(offsets_open_txns(&t), 0);
            CU_ASSERT_EQUAL(offset_fetch(&t, &offset), KS_GROUP_ERR_NONE);
            CU_ASSERT_EQUAL(offset, 7);
            /* A newer instance fences this epoch: refused at the verification. */
            int16_t old_epoch = t.producer_epoch;
            CU_ASSERT_EQUAL_FATAL(init_producer(&t), KS_ERR_NONE);
            CU_ASSERT(t.producer_epoch > old_epoch);
            t.producer_epoch = old_epoch;
            CU_ASSERT_EQUAL(txn_offset_commit(&t, 9, -1, ""), KS_GROUP_ERR_INVALID_PRODUCER_EPOCH);
            CU_ASSERT_EQUAL(offsets_open_txns(&t), 0);
            CU_ASSERT_EQUAL(offset_fetch(&t, &offset), KS_GROUP_ERR_NONE);
            CU_ASSERT_EQUAL(offset, 7);
        } else {
            CU_ASSERT_EQUAL(answer, KS_GROUP_ERR_NONE);
            CU_ASSERT_EQUAL(offsets_open_txns(&t), 1);
            cf_run_for(&t.h, 2 * H_S);
            CU_ASSERT_EQUAL(offsets_open_txns(&t), 1);
            CU_ASSERT_EQUAL(offset_fetch(&t, &offset), KS_GROUP_ERR_UNSTABLE_OFFSET_COMMIT);
        }
        cf_free(&t.h);
    }
}

void ks_test_register_txn_offsets(void)
{
    static const struct ks_test_case cases[] = {
        { "transactional offset pending until the COMMIT marker",
          test_pending_until_commit_marker },
        { "ABORT drops the pending offset", test_abort_drops_pending },
        { "a new coordinator loads committed and pending offsets",
          test_new_coordinator_loads_pending },
        { "TxnOffsetCommit of an unknown member is fenced", test_unknown_member_fenced },
        { "OffsetFetch answers UNSTABLE_OFFSET_COMMIT per partition", test_unstable_per_partition },
        { "TxnOffsetCommit verified with the transaction coordinator", test_offsets_verified },
    };
    KS_TEST_ADD_SUITE("core/txn_offsets", cases);
}
