/*
** tests/core/test_txn_verify.c: KIP-890 part 1, transaction verification.
**
** Goal: a partition leader appends a transactional batch that would start a
** transaction only after the transaction coordinator confirmed that the
** partition is in the producer's ongoing transaction; the coordinator's
** verify answer follows TransactionCoordinator
** .handleVerifyPartitionsInTransaction; and without verification a batch
** that arrives after its transaction's ABORT marker opens a transaction no
** marker will ever close (the hanging transaction, KAFKA-14402).
**
** Method: first the verification entries of core/producer_state.c alone
** (guards, lowest sequence, clearing). Then a real three-broker cluster whose
** __transaction_state has one partition; the test's own node speaks the
** protocol by hand (repl_harness.h's h_client_cluster way): InitProducerId,
** AddPartitionsToTxn and EndTxn to the coordinator, AddPartitionsToTxn with
** verifyOnly (KS_MSG_TXN_VERIFY_REQUEST) to it, and Produce requests with a
** transactional id to the leader of orders-0, whose answers and LEO are
** checked; a control batch sent through Produce is refused (LogValidator);
** the coordinator's state changes are events (KS_EV_TXN_STATE).
** A transactional producer sits in the spec only so that the
** cluster has __transaction_state; it starts after the tests end.
*/
#include "repl_harness.h"

#include "../../core/producer_state.h"
#include "../../core/txn_coord.h"

#define APP_ID "app"

static void test_verification_entries(void)
{
    struct ks_producer_state *state = ks_producer_state_new();
    CU_ASSERT_EQUAL(ks_producer_state_verification_guard(state, 7), 0);
    CU_ASSERT_EQUAL(ks_producer_state_verification_lowest_sequence(state, 7), -1);
    uint64_t guard = ks_producer_state_verification_start(state, 7, 10, 0, 0);
    CU_ASSERT_NOT_EQUAL(guard, 0);
    CU_ASSERT_EQUAL(ks_producer_state_verification_guard(state, 7), guard);
    /* A second batch of the same producer reuses the entry; a lower
     * sequence of the same epoch becomes the lowest, a higher one does not. */
    CU_ASSERT_EQUAL(ks_producer_state_verification_start(state, 7, 12, 0, 0), guard);
    CU_ASSERT_EQUAL(ks_producer_state_verification_lowest_sequence(state, 7), 10);
    CU_ASSERT_EQUAL(ks_producer_state_verification_start(state, 7, 8, 0, 0), guard);
    CU_ASSERT_EQUAL(ks_producer_state_verification_lowest_sequence(state, 7), 8);
    /* A newer epoch starts the sequence again. */
    CU_ASSERT_EQUAL(ks_producer_state_verification_start(state, 7, 3, 1, 0), guard);
    CU_ASSERT_EQUAL(ks_producer_state_verification_lowest_sequence(state, 7), 3);
    /* Another producer has its own entry and guard. */
    uint64_t other = ks_producer_state_verification_start(state, 8, 0, 0, 0);
    CU_ASSERT_NOT_EQUAL(other, guard);
    /* Producer state clears and rebuilds keep the entries. */
    ks_producer_state_clear(state);
    CU_ASSERT_EQUAL(ks_producer_state_verification_guard(state, 7), guard);
    /* Cleared (a transactional append): gone; a new one gets a new guard,
     * so an answer for the old one cannot be used (the ABA case). */
    ks_producer_state_verification_clear(state, 7);
    CU_ASSERT_EQUAL(ks_producer_state_verification_guard(state, 7), 0);
    uint64_t again = ks_producer_state_verification_start(state, 7, 0, 1, 0);
    CU_ASSERT_NOT_EQUAL(again, guard);
    CU_ASSERT_NOT_EQUAL(again, other);
    CU_ASSERT_EQUAL(ks_producer_state_verification_guard(state, 8), other);
    ks_producer_state_free(state);
}

/* ProducerStateManager.removeExpiredProducers: an entry goes at the first
 * periodic check at which it is producer.id.expiration.ms old; a reused entry
 * keeps its creation time; a fresh entry after expiry has a new guard. */
static void test_verification_entries_expire(void)
{
    struct ks_producer_state *state = ks_producer_state_new();
    const int64_t expiration = 100 * (int64_t)H_MS, interval = 30 * (int64_t)H_MS;
    uint64_t guard = ks_producer_state_verification_start(state, 7, 0, 0, 10 * (int64_t)H_MS);
    /* Reused at 50 ms: the entry still dates from 10 ms. */
    CU_ASSERT_EQUAL(ks_producer_state_verification_start(state, 7, 0, 0, 50 * (int64_t)H_MS),
                    guard);
    uint64_t other = ks_producer_state_verification_start(state, 8, 0, 0, 60 * (int64_t)H_MS);
    /* 110 ms: 100 ms old, but the next check is at 120 ms. */
    ks_producer_state_verification_expire(state, 110 * (int64_t)H_MS, expiration, interval);
    CU_ASSERT_EQUAL(ks_producer_state_verification_guard(state, 7), guard);
    ks_producer_state_verification_expire(state, 120 * (int64_t)H_MS, expiration, interval);
    CU_ASSERT_EQUAL(ks_producer_state_verification_guard(state, 7), 0);
    CU_ASSERT_EQUAL(ks_producer_state_verification_lowest_sequence(state, 7), -1);
    /* Producer 8 (60 ms) is due at 160 ms: it goes at the 180 ms check. */
    ks_producer_state_verification_expire(state, 179 * (int64_t)H_MS, expiration, interval);
    CU_ASSERT_EQUAL(ks_producer_state_verification_guard(state, 8), other);
    ks_producer_state_verification_expire(state, 180 * (int64_t)H_MS, expiration, interval);
    CU_ASSERT_EQUAL(ks_producer_state_verification_guard(state, 8), 0);
    uint64_t again = ks_producer_state_verification_start(state, 7, 0, 0, 200 * (int64_t)H_MS);
    CU_ASSERT_NOT_EQUAL(again, 0);
    CU_ASSERT_NOT_EQUAL(again, guard);
    ks_producer_state_free(state);
}

/* ---- the cluster ------------------------------------------------------------------ */

struct txn_cluster {
    struct cluster_fixture h;
    struct h_client_box box;
    int32_t txn_topic;
    int32_t coordinator; /* broker id */
    int64_t producer_id;
    int16_t epoch;
    int64_t correlation_id;
};

/* Three brokers, one __transaction_state partition, transaction.version
 * `tv`: the cluster's config, which a test may change before
 * txn_cluster_run. */
static void txn_cluster_init(struct txn_cluster *c, bool verification, int32_t tv)
{
    memset(c, 0, sizeof *c);
    cf_init(&c->h, 3);
    c->h.cluster_config.txn_topic_partition_count = 1;
    c->h.cluster_config.txn_partition_verification_enable = verification;
    c->h.cluster_config.transaction_version = tv;
}

/* orders with 2 partitions on 1,2,3 (min ISR 2); run to 500 ms. */
static void txn_cluster_run(struct txn_cluster *c)
{
    static const int32_t assign[] = { 1, 2, 3, 1, 2, 3 };
    cf_topic(&c->h, "orders", 2, 3, 2, assign);
    struct ks_producer_config *p = cf_producer(&c->h, "idle", 0);
    g_strlcpy(p->transactional_id, "idle", sizeof p->transactional_id);
    p->start_ns = 3600 * H_S; /* after every test: it only makes __transaction_state exist */
    cf_start(&c->h, 11);
    ks_world_set_receiver(c->h.env.world, KS_NODE_DRIVER, h_client_receive, &c->box);
    cf_run_until(&c->h, 500 * H_MS);
    c->txn_topic = ks_cluster_topic_index(c->h.cluster, KS_TXN_TOPIC_NAME);
    CU_ASSERT_FATAL(c->txn_topic >= 0);
    for (int32_t b = 1; b <= 3; b++) {
        if (h_state(&c->h, b, c->txn_topic, 0).role == KS_ROLE_LEADER) {
            c->coordinator = b;
        }
    }
    CU_ASSERT_FATAL(c->coordinator >= 1);
}

static void txn_cluster_start_tv(struct txn_cluster *c, bool verification, int32_t tv)
{
    txn_cluster_init(c, verification, tv);
    txn_cluster_run(c);
}

/* Sends a transaction request of `kind` to broker `to` and returns the
 * answer's error code (the box holds the answer). */
static int16_t txn_call(struct txn_cluster *c, int32_t to, uint32_t kind, int32_t partition,
                        int64_t producer_id, int16_t epoch, bool commit)
{
    struct ks_txn_request r;
    memset(&r, 0, sizeof r);
    r.correlation_id = ++c->correlation_id;
    r.producer_id = producer_id;
    r.producer_epoch = epoch;
    r.timeout_ns = 60 * (int64_t)H_S;
    r.commit = commit ? 1 : 0;
    r.topic_index = 0;
    r.partition = partition;
    g_strlcpy(r.transactional_id, APP_ID, sizeof r.transactional_id);
    int32_t before = c->box.count;
    ks_world_send(c->h.env.world, KS_NODE_DRIVER, (ks_node_id)to, kind, &r, sizeof r);
    cf_run_for(&c->h, 100 * H_MS);
    CU_ASSERT_EQUAL_FATAL(c->box.count, before + 1);
    CU_ASSERT_EQUAL_FATAL(c->box.kind, kind + 1);
    struct ks_txn_response response;
    memcpy(&response, c->box.bytes, sizeof response);
    CU_ASSERT_EQUAL(response.correlation_id, r.correlation_id);
    if (kind == KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST && response.error_code == KS_ERR_NONE) {
        c->producer_id = response.producer_id;
        c->epoch = response.producer_epoch;
    }
    return response.error_code;
}

/* KIP-890 part 1 as Kafka 3.6 to 3.9 run it: transaction.version 0. */
static void txn_cluster_start(struct txn_cluster *c, bool verification)
{
    txn_cluster_start_tv(c, verification, 0);
}

static int16_t verify(struct txn_cluster *c, int32_t to, int32_t partition, int64_t producer_id,
                      int16_t epoch)
{
    return txn_call(c, to, KS_MSG_TXN_VERIFY_REQUEST, partition, producer_id, epoch, false);
}

/* Produces a transactional batch of one record (sequence `sequence`) to the
 * leader of orders-`partition` (broker 1) with the transactional id, as a
 * transactional producer does; returns the answer's error code. */
static int64_t produce_send(struct txn_cluster *c, int32_t partition, int32_t sequence);
static int16_t produce_answer(struct txn_cluster *c, int64_t correlation_id, int32_t before);

static int16_t produce(struct txn_cluster *c, int32_t partition, int32_t sequence)
{
    int32_t before = c->box.count;
    int64_t correlation_id = produce_send(c, partition, sequence);
    cf_run_for(&c->h, 100 * H_MS);
    return produce_answer(c, correlation_id, before);
}

static int64_t produce_send_batch(struct txn_cluster *c, int32_t partition, GByteArray *batch);

/* Sends the Produce request; returns its correlation id. */
static int64_t produce_send(struct txn_cluster *c, int32_t partition, int32_t sequence)
{
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, KS_EPOCH_BASE_MS, c->producer_id, c->epoch, sequence);
    builder.attributes = KS_ATTR_TRANSACTIONAL;
    ks_batch_builder_add(&builder, KS_EPOCH_BASE_MS, "k", 1, "v", 1, NULL, 0);
    GByteArray *batch = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    return produce_send_batch(c, partition, batch);
}

/* Sends batch (consumed) in a Produce request with the transactional id. */
static int64_t produce_send_batch(struct txn_cluster *c, int32_t partition, GByteArray *batch)
{
    size_t bytes = sizeof(struct ks_produce_request) + batch->len + KS_TRANSACTIONAL_ID_BYTES;
    uint8_t *message = calloc(1, bytes);
    CU_ASSERT_FATAL(message != NULL);
    struct ks_produce_request request;
    memset(&request, 0, sizeof request);
    request.correlation_id = ++c->correlation_id;
    request.timeout_ns = 30 * (int64_t)H_S;
    request.topic_index = 0;
    request.partition = partition;
    request.acks = KS_ACKS_ALL;
    request.flags = KS_PRODUCE_FLAG_TRANSACTIONAL_ID;
    request.batch_bytes = batch->len;
    memcpy(message, &request, sizeof request);
    memcpy(message + sizeof request, batch->data, batch->len);
    g_strlcpy((char *)message + sizeof request + batch->len, APP_ID, KS_TRANSACTIONAL_ID_BYTES);
    g_byte_array_unref(batch);
    ks_world_send(c->h.env.world, KS_NODE_DRIVER, 1, KS_MSG_PRODUCE_REQUEST, message, bytes);
    free(message);
    return request.correlation_id;
}

/* The answer to the Produce request (the one message since `before`). */
static int16_t produce_answer(struct txn_cluster *c, int64_t correlation_id, int32_t before)
{
    CU_ASSERT_EQUAL_FATAL(c->box.count, before + 1);
    CU_ASSERT_EQUAL_FATAL(c->box.kind, KS_MSG_PRODUCE_RESPONSE);
    struct ks_produce_response response;
    memcpy(&response, c->box.bytes, sizeof response);
    CU_ASSERT_EQUAL(response.correlation_id, correlation_id);
    return response.error_code;
}

static int64_t leo(struct txn_cluster *c, int32_t partition)
{
    return h_state(&c->h, 1, 0, partition).leo;
}

static int32_t open_txns(struct txn_cluster *c, int32_t partition)
{
    struct ks_log *log = ks_cluster_replica_log(c->h.cluster, 1, 0, partition);
    CU_ASSERT_FATAL(log != NULL);
    return ks_log_open_txn_count(log);
}

/* TransactionCoordinator.handleVerifyPartitionsInTransaction, answer by answer. */
static void test_coordinator_verify_answer(void)
{
    struct txn_cluster c;
    txn_cluster_start(&c, true);
    int32_t other = c.coordinator % 3 + 1;
    /* Unknown id; then not this broker's partition. */
    CU_ASSERT_EQUAL(verify(&c, c.coordinator, 0, 5, 0), KS_ERR_INVALID_TXN_STATE);
    CU_ASSERT_EQUAL(verify(&c, other, 0, 5, 0), KS_ERR_NOT_COORDINATOR);
    CU_ASSERT_EQUAL(
        txn_call(&c, c.coordinator, KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST, -1, -1, -1, false),
        KS_ERR_NONE);
    CU_ASSERT(c.producer_id >= 0);
    /* Empty: no partition is in a transaction. */
    CU_ASSERT_EQUAL(verify(&c, c.coordinator, 0, c.producer_id, c.epoch), KS_ERR_INVALID_TXN_STATE);
    CU_ASSERT_EQUAL(txn_call(&c, c.coordinator, KS_MSG_TXN_ADD_PARTITIONS_REQUEST, 0, c.producer_id,
                             c.epoch, false),
                    KS_ERR_NONE);
    CU_ASSERT_EQUAL(verify(&c, c.coordinator, 0, c.producer_id, c.epoch), KS_ERR_NONE);
    CU_ASSERT_EQUAL(verify(&c, c.coordinator, 1, c.producer_id, c.epoch),
                    KS_ERR_INVALID_TXN_STATE); /* not added */
    CU_ASSERT_EQUAL(verify(&c, c.coordinator, 0, c.producer_id + 1, c.epoch),
                    KS_ERR_INVALID_TXN_STATE); /* Kafka: INVALID_PRODUCER_ID_MAPPING */
    CU_ASSERT_EQUAL(verify(&c, c.coordinator, 0, c.producer_id, (int16_t)(c.epoch + 1)),
                    KS_ERR_PRODUCER_FENCED);
    /* Abort it: once CompleteAbort is written the partition is no longer in
     * a transaction. */
    CU_ASSERT_EQUAL(
        txn_call(&c, c.coordinator, KS_MSG_TXN_END_REQUEST, -1, c.producer_id, c.epoch, false),
        KS_ERR_NONE);
    cf_run_for(&c.h, 500 * H_MS);
    CU_ASSERT_EQUAL(verify(&c, c.coordinator, 0, c.producer_id, c.epoch), KS_ERR_INVALID_TXN_STATE);
    cf_free(&c.h);
}

/* The leader refuses a transactional batch for a partition the coordinator
 * does not know of, appends it once the partition is added, and refuses a
 * batch that arrives after the transaction's ABORT marker. */
static void test_leader_verifies_before_append(void)
{
    struct txn_cluster c;
    txn_cluster_start(&c, true);
    CU_ASSERT_EQUAL(
        txn_call(&c, c.coordinator, KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST, -1, -1, -1, false),
        KS_ERR_NONE);
    int64_t start = leo(&c, 0);
    CU_ASSERT_EQUAL(produce(&c, 0, 0), KS_ERR_INVALID_TXN_STATE);
    CU_ASSERT_EQUAL(leo(&c, 0), start);
    CU_ASSERT_EQUAL(txn_call(&c, c.coordinator, KS_MSG_TXN_ADD_PARTITIONS_REQUEST, 0, c.producer_id,
                             c.epoch, false),
                    KS_ERR_NONE);
    CU_ASSERT_EQUAL(produce(&c, 0, 0), KS_ERR_NONE);
    CU_ASSERT_EQUAL(leo(&c, 0), start + 1);
    /* The transaction is open now: the next batch needs no verification. */
    CU_ASSERT_EQUAL(produce(&c, 0, 1), KS_ERR_NONE);
    CU_ASSERT_EQUAL(open_txns(&c, 0), 1);
    /* orders-1 was never added. */
    CU_ASSERT_EQUAL(produce(&c, 1, 0), KS_ERR_INVALID_TXN_STATE);
    CU_ASSERT_EQUAL(leo(&c, 1), 0);
    /* Abort; the marker closes the transaction. A late batch with the same
     * epoch and the next sequence is refused and nothing is opened. */
    CU_ASSERT_EQUAL(
        txn_call(&c, c.coordinator, KS_MSG_TXN_END_REQUEST, -1, c.producer_id, c.epoch, false),
        KS_ERR_NONE);
    cf_run_for(&c.h, 500 * H_MS);
    CU_ASSERT_EQUAL(leo(&c, 0), start + 3); /* two records and the ABORT marker */
    CU_ASSERT_EQUAL(open_txns(&c, 0), 0);
    CU_ASSERT_EQUAL(produce(&c, 0, 2), KS_ERR_INVALID_TXN_STATE);
    CU_ASSERT_EQUAL(leo(&c, 0), start + 3);
    CU_ASSERT_EQUAL(open_txns(&c, 0), 0);
    /* After an epoch bump the old epoch is fenced at the coordinator:
     * the leader answers INVALID_PRODUCER_EPOCH (AddPartitionsToTxnManager). */
    int16_t old_epoch = c.epoch;
    CU_ASSERT_EQUAL(
        txn_call(&c, c.coordinator, KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST, -1, -1, -1, false),
        KS_ERR_NONE);
    CU_ASSERT_EQUAL(c.epoch, old_epoch + 1);
    c.epoch = old_epoch;
    CU_ASSERT_EQUAL(produce(&c, 0, 2), KS_ERR_INVALID_PRODUCER_EPOCH);
    CU_ASSERT_EQUAL(leo(&c, 0), start + 3);
    cf_free(&c.h);
}

/* transaction.partition.verification.enable = false (Kafka before 3.6): the
 * same late batch is appended after the ABORT marker and opens a
 * transaction that stays open: the hanging transaction. */
static void test_late_batch_hangs_without_verification(void)
{
    struct txn_cluster c;
    txn_cluster_start(&c, false);
    CU_ASSERT_EQUAL(
        txn_call(&c, c.coordinator, KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST, -1, -1, -1, false),
        KS_ERR_NONE);
    /* Without AddPartitionsToTxn the leader appends anyway. */
    CU_ASSERT_EQUAL(produce(&c, 1, 0), KS_ERR_NONE);
    CU_ASSERT_EQUAL(open_txns(&c, 1), 1);
    int64_t start = leo(&c, 0);
    CU_ASSERT_EQUAL(txn_call(&c, c.coordinator, KS_MSG_TXN_ADD_PARTITIONS_REQUEST, 0, c.producer_id,
                             c.epoch, false),
                    KS_ERR_NONE);
    CU_ASSERT_EQUAL(produce(&c, 0, 0), KS_ERR_NONE);
    CU_ASSERT_EQUAL(
        txn_call(&c, c.coordinator, KS_MSG_TXN_END_REQUEST, -1, c.producer_id, c.epoch, false),
        KS_ERR_NONE);
    cf_run_for(&c.h, 500 * H_MS);
    CU_ASSERT_EQUAL(open_txns(&c, 0), 0);
    CU_ASSERT_EQUAL(produce(&c, 0, 1), KS_ERR_NONE);
    CU_ASSERT_EQUAL(leo(&c, 0), start + 3);
    CU_ASSERT_EQUAL(open_txns(&c, 0), 1);
    /* Nothing will close it: the last stable offset stays at the late batch. */
    cf_run_for(&c.h, 2 * H_S);
    struct ks_log *log = ks_cluster_replica_log(c.h.cluster, 1, 0, 0);
    struct ks_replica_state state = h_state(&c.h, 1, 0, 0);
    CU_ASSERT_EQUAL(state.hw, start + 3);
    CU_ASSERT_EQUAL(ks_log_last_stable_offset(log, state.hw), start + 2);
    cf_free(&c.h);
}

/* The guard (UnifiedLog's VerificationGuard): the coordinator confirms the
 * partition, but the transaction's ABORT marker reaches the leader before
 * that answer does. The marker clears the producer's verification entry, so
 * the answer's guard no longer matches and the batch is refused instead of
 * opening a transaction after the marker. */
static void test_stale_verification_refused(void)
{
    struct txn_cluster c;
    txn_cluster_start(&c, true);
    /* The race needs a remote coordinator (placement by seed 11). */
    CU_ASSERT_NOT_EQUAL_FATAL(c.coordinator, 1);
    CU_ASSERT_EQUAL(
        txn_call(&c, c.coordinator, KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST, -1, -1, -1, false),
        KS_ERR_NONE);
    CU_ASSERT_EQUAL(txn_call(&c, c.coordinator, KS_MSG_TXN_ADD_PARTITIONS_REQUEST, 0, c.producer_id,
                             c.epoch, false),
                    KS_ERR_NONE);
    int64_t start = leo(&c, 0);
    /* The verification takes 2 x 50 ms; the marker is appended at 10 ms. */
    ks_world_net_set_link_latency(c.h.env.world, 1, (ks_node_id)c.coordinator, 50 * H_MS);
    int32_t before = c.box.count;
    int64_t correlation_id = produce_send(&c, 0, 0);
    cf_run_for(&c.h, 10 * H_MS);
    CU_ASSERT_EQUAL(c.box.count, before); /* still verifying */
    struct cf_append *marker = h_append_batch(
        &c.h, 1, 0, 0, KS_ACKS_LEADER,
        ks_batch_build_end_txn_marker(KS_EPOCH_BASE_MS, c.producer_id, c.epoch, false, 0));
    cf_run_for(&c.h, 200 * H_MS);
    CU_ASSERT_EQUAL(marker->error, KS_ERR_NONE);
    CU_ASSERT_EQUAL(produce_answer(&c, correlation_id, before), KS_ERR_INVALID_TXN_STATE);
    CU_ASSERT_EQUAL(leo(&c, 0), start + 1); /* the marker only */
    CU_ASSERT_EQUAL(open_txns(&c, 0), 0);
    cf_free(&c.h);
}

/* A verification entry that expires (producer.id.expiration.ms, checked
 * every producer.id.expiration.check.interval.ms) while its verification is
 * in flight takes its guard with it: the coordinator's yes comes back to a
 * leader that no longer holds the guard, and the batch is refused with
 * INVALID_TXN_STATE. With Kafka's defaults (a day, ten minutes) the same
 * batch is appended. */
static void test_verification_entry_expires_in_flight(void)
{
    for (int expire = 0; expire <= 1; expire++) {
        struct txn_cluster c;
        txn_cluster_init(&c, true, 0);
        if (expire) {
            c.h.cluster_config.producer_id_expiration_ns = 50 * (int64_t)H_MS;
            c.h.cluster_config.producer_id_expiration_check_interval_ns = 10 * (int64_t)H_MS;
        }
        txn_cluster_run(&c);
        CU_ASSERT_NOT_EQUAL_FATAL(c.coordinator, 1); /* a remote coordinator (seed 11) */
        CU_ASSERT_EQUAL(
            txn_call(&c, c.coordinator, KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST, -1, -1, -1, false),
            KS_ERR_NONE);
        CU_ASSERT_EQUAL(txn_call(&c, c.coordinator, KS_MSG_TXN_ADD_PARTITIONS_REQUEST, 0,
                                 c.producer_id, c.epoch, false),
                        KS_ERR_NONE);
        int64_t start = leo(&c, 0);
        /* The verification takes 2 x 50 ms: the entry is 50 ms old halfway. */
        ks_world_net_set_link_latency(c.h.env.world, 1, (ks_node_id)c.coordinator, 50 * H_MS);
        int32_t before = c.box.count;
        int64_t correlation_id = produce_send(&c, 0, 0);
        cf_run_for(&c.h, 300 * H_MS);
        CU_ASSERT_EQUAL(produce_answer(&c, correlation_id, before),
                        expire ? KS_ERR_INVALID_TXN_STATE : KS_ERR_NONE);
        CU_ASSERT_EQUAL(leo(&c, 0), expire ? start : start + 1);
        CU_ASSERT_EQUAL(open_txns(&c, 0), expire ? 0 : 1);
        cf_free(&c.h);
    }
}

static struct ks_txn_response last_txn_response(const struct txn_cluster *c);

/* KAFKA-18654 under transaction.version 2: the next transaction's first
 * batch for a partition the previous one did not touch arrives while the
 * coordinator is still writing that transaction's markers (PrepareAbort), so
 * the leader's add is refused with CONCURRENT_TRANSACTIONS. The leader
 * retries it every add.partitions.to.txn.retry.backoff.ms until
 * add.partitions.to.txn.retry.backoff.max.ms has passed: with the default
 * 100 ms the markers (slowed by a 60 ms link) outlast the retries and the
 * producer gets the error (as NOT_ENOUGH_REPLICAS); with 1000 ms a retry
 * finds CompleteAbort and the batch is appended. */
static void test_tv2_add_retry_window(void)
{
    for (int longer = 0; longer <= 1; longer++) {
        struct txn_cluster c;
        txn_cluster_init(&c, true, 2);
        if (longer) {
            c.h.cluster_config.add_partitions_retry_backoff_max_ns = 1000 * (int64_t)H_MS;
        }
        txn_cluster_run(&c);
        CU_ASSERT_NOT_EQUAL_FATAL(c.coordinator, 1);
        CU_ASSERT_EQUAL(
            txn_call(&c, c.coordinator, KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST, -1, -1, -1, false),
            KS_ERR_NONE);
        CU_ASSERT_EQUAL(produce(&c, 0, 0), KS_ERR_NONE);
        int64_t start = leo(&c, 1);
        ks_world_net_set_link_latency(c.h.env.world, 1, (ks_node_id)c.coordinator, 60 * H_MS);
        struct ks_txn_request r;
        memset(&r, 0, sizeof r);
        r.correlation_id = ++c.correlation_id;
        r.producer_id = c.producer_id;
        r.producer_epoch = c.epoch;
        r.timeout_ns = 60 * (int64_t)H_S;
        r.partition = -1;
        g_strlcpy(r.transactional_id, APP_ID, sizeof r.transactional_id);
        int32_t before = c.box.count;
        ks_world_send(c.h.env.world, KS_NODE_DRIVER, (ks_node_id)c.coordinator,
                      KS_MSG_TXN_END_REQUEST, &r, sizeof r);
        /* The producer learns the bumped epoch from EndTxn's answer, which
         * leaves once PrepareAbort is written, before the markers. */
        for (int ms = 0; ms < 2000 && c.box.count == before; ms++) {
            cf_run_for(&c.h, H_MS);
        }
        CU_ASSERT_EQUAL_FATAL(c.box.count, before + 1);
        CU_ASSERT_EQUAL(last_txn_response(&c).error_code, KS_ERR_NONE);
        c.epoch = last_txn_response(&c).producer_epoch;
        int64_t correlation_id = produce_send(&c, 1, 0);
        cf_run_for(&c.h, 2 * H_S);
        CU_ASSERT_EQUAL_FATAL(c.box.count, before + 2); /* EndTxn's answer, then the Produce's */
        CU_ASSERT_EQUAL(produce_answer(&c, correlation_id, before + 1),
                        longer ? KS_ERR_NONE : KS_ERR_NOT_ENOUGH_REPLICAS);
        CU_ASSERT_EQUAL(leo(&c, 1), longer ? start + 1 : start);
        cf_free(&c.h);
    }
}

/* LogValidator.validateBatch: a client may not write a control batch; a
 * COMMIT marker sent through Produce is refused with INVALID_RECORD, with or
 * without verification, and nothing is appended. */
static void test_client_control_batch_refused(void)
{
    for (int verification = 0; verification <= 1; verification++) {
        struct txn_cluster c;
        txn_cluster_start(&c, verification != 0);
        CU_ASSERT_EQUAL(
            txn_call(&c, c.coordinator, KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST, -1, -1, -1, false),
            KS_ERR_NONE);
        CU_ASSERT_EQUAL(produce(&c, 0, 0), verification ? KS_ERR_INVALID_TXN_STATE : KS_ERR_NONE);
        int64_t start = leo(&c, 0);
        int32_t before = c.box.count;
        int64_t id = produce_send_batch(
            &c, 0,
            ks_batch_build_end_txn_marker(KS_EPOCH_BASE_MS, c.producer_id, c.epoch, true, 0));
        cf_run_for(&c.h, 100 * H_MS);
        CU_ASSERT_EQUAL(produce_answer(&c, id, before), KS_ERR_INVALID_RECORD);
        CU_ASSERT_EQUAL(leo(&c, 0), start);
        CU_ASSERT_EQUAL(open_txns(&c, 0), verification ? 0 : 1); /* the marker closed nothing */
        cf_free(&c.h);
    }
}

/* The coordinator's own steps are events (KS_EV_TXN_STATE): the load of its
 * partition at start, then for a committed transaction PrepareCommit (the
 * decision) before CompleteCommit (every marker written), on the
 * coordinator's broker and its __transaction_state partition. */
static void test_coordinator_state_events(void)
{
    struct txn_cluster c;
    txn_cluster_start(&c, true);
    const struct cf_event *loaded = cf_find(&c.h, KS_EV_TXN_STATE, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(loaded);
    CU_ASSERT_EQUAL(loaded->reason, KS_REASON_TXN_LOADED);
    CU_ASSERT_EQUAL(loaded->broker, c.coordinator);
    CU_ASSERT_EQUAL(loaded->record_count, 0); /* nothing to load yet */
    CU_ASSERT_EQUAL(cf_count(&c.h, KS_EV_TXN_STATE), 1);
    CU_ASSERT_EQUAL(
        txn_call(&c, c.coordinator, KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST, -1, -1, -1, false),
        KS_ERR_NONE);
    CU_ASSERT_EQUAL(txn_call(&c, c.coordinator, KS_MSG_TXN_ADD_PARTITIONS_REQUEST, 0, c.producer_id,
                             c.epoch, false),
                    KS_ERR_NONE);
    CU_ASSERT_EQUAL(cf_count(&c.h, KS_EV_TXN_STATE), 1); /* Empty and Ongoing are routine */
    CU_ASSERT_EQUAL(produce(&c, 0, 0), KS_ERR_NONE);
    ks_time_ns end_ns = cf_now(&c.h);
    CU_ASSERT_EQUAL(
        txn_call(&c, c.coordinator, KS_MSG_TXN_END_REQUEST, -1, c.producer_id, c.epoch, true),
        KS_ERR_NONE);
    cf_run_for(&c.h, 500 * H_MS);
    CU_ASSERT_EQUAL(cf_count(&c.h, KS_EV_TXN_STATE), 3);
    const struct cf_event *prepare = cf_find(&c.h, KS_EV_TXN_STATE, end_ns);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prepare);
    CU_ASSERT_EQUAL(prepare->reason, KS_REASON_TXN_PREPARE_COMMIT);
    CU_ASSERT_EQUAL(prepare->broker, c.coordinator);
    CU_ASSERT_EQUAL(prepare->topic_index, c.txn_topic);
    CU_ASSERT_EQUAL(prepare->partition, 0);
    const struct cf_event *complete = cf_find(&c.h, KS_EV_TXN_STATE, prepare->at_ns + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(complete);
    CU_ASSERT_EQUAL(complete->reason, KS_REASON_TXN_COMPLETE_COMMIT);
    /* The COMMIT marker is in orders-0 before CompleteCommit is written. */
    CU_ASSERT_EQUAL(open_txns(&c, 0), 0);
    cf_free(&c.h);
}

/* ---- transaction.version 2 (KIP-890 part 2) ------------------------------------- */

/* The producer id and epoch of the last transaction answer in the box. */
static struct ks_txn_response last_txn_response(const struct txn_cluster *c)
{
    struct ks_txn_response response;
    memcpy(&response, c->box.bytes, sizeof response);
    return response;
}

/* TV_2 (TransactionMetadata.prepareAbortOrCommit, endTransaction's
 * isValidEpoch): EndTxn answers with the epoch bumped by one; the COMMIT
 * marker carries it, so a late batch with the old epoch is refused and the
 * next transaction's first batch, with the new epoch and sequence 0, is
 * appended. A retried EndTxn with the old epoch is answered NONE with the new
 * one; an EndTxn with the new epoch and nothing open is fenced. */
static void test_tv2_epoch_bump_per_end(void)
{
    struct txn_cluster c;
    txn_cluster_start_tv(&c, true, 2);
    CU_ASSERT_EQUAL(
        txn_call(&c, c.coordinator, KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST, -1, -1, -1, false),
        KS_ERR_NONE);
    int16_t first = c.epoch;
    int64_t start = leo(&c, 0);
    CU_ASSERT_EQUAL(produce(&c, 0, 0), KS_ERR_NONE);
    CU_ASSERT_EQUAL(
        txn_call(&c, c.coordinator, KS_MSG_TXN_END_REQUEST, -1, c.producer_id, first, true),
        KS_ERR_NONE);
    CU_ASSERT_EQUAL(last_txn_response(&c).producer_id, c.producer_id);
    CU_ASSERT_EQUAL(last_txn_response(&c).producer_epoch, first + 1);
    cf_run_for(&c.h, 500 * H_MS);
    CU_ASSERT_EQUAL(leo(&c, 0), start + 2); /* the record and the COMMIT marker */
    CU_ASSERT_EQUAL(open_txns(&c, 0), 0);
    /* The retry of that EndTxn (its answer lost): NONE, with the new epoch. */
    CU_ASSERT_EQUAL(
        txn_call(&c, c.coordinator, KS_MSG_TXN_END_REQUEST, -1, c.producer_id, first, true),
        KS_ERR_NONE);
    CU_ASSERT_EQUAL(last_txn_response(&c).producer_epoch, first + 1);
    CU_ASSERT_EQUAL(txn_call(&c, c.coordinator, KS_MSG_TXN_END_REQUEST, -1, c.producer_id,
                             (int16_t)(first + 1), true),
                    KS_ERR_PRODUCER_FENCED);
    /* A late batch of the committed transaction (old epoch, next sequence). */
    CU_ASSERT_EQUAL(produce(&c, 0, 1), KS_ERR_INVALID_PRODUCER_EPOCH);
    CU_ASSERT_EQUAL(leo(&c, 0), start + 2);
    CU_ASSERT_EQUAL(open_txns(&c, 0), 0);
    /* The next transaction under the new epoch starts at sequence 0. */
    c.epoch = (int16_t)(first + 1);
    CU_ASSERT_EQUAL(produce(&c, 0, 0), KS_ERR_NONE);
    CU_ASSERT_EQUAL(leo(&c, 0), start + 3);
    CU_ASSERT_EQUAL(open_txns(&c, 0), 1);
    cf_free(&c.h);
}

/* TV_2's implicit add: the producer sends no AddPartitionsToTxn; the leader
 * of each partition adds it at the coordinator (AddPartitionsToTxn from the
 * broker, not verifyOnly) before appending the transaction's first batch, so
 * the coordinator's markers reach every partition written. With
 * transaction.partition.verification.enable false too: a TV_2 producer
 * relies on the add. */
static void test_tv2_implicit_add(void)
{
    for (int verification = 0; verification <= 1; verification++) {
        struct txn_cluster c;
        txn_cluster_start_tv(&c, verification != 0, 2);
        CU_ASSERT_EQUAL(
            txn_call(&c, c.coordinator, KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST, -1, -1, -1, false),
            KS_ERR_NONE);
        int64_t start = leo(&c, 0);
        CU_ASSERT_EQUAL(produce(&c, 0, 0), KS_ERR_NONE);
        CU_ASSERT_EQUAL(leo(&c, 0), start + 1);
        CU_ASSERT_EQUAL(verify(&c, c.coordinator, 0, c.producer_id, c.epoch), KS_ERR_NONE);
        CU_ASSERT_EQUAL(verify(&c, c.coordinator, 1, c.producer_id, c.epoch),
                        KS_ERR_INVALID_TXN_STATE);
        CU_ASSERT_EQUAL(produce(&c, 1, 0), KS_ERR_NONE);
        CU_ASSERT_EQUAL(verify(&c, c.coordinator, 1, c.producer_id, c.epoch), KS_ERR_NONE);
        CU_ASSERT_EQUAL(open_txns(&c, 0), 1);
        CU_ASSERT_EQUAL(open_txns(&c, 1), 1);
        /* The abort's markers close both partitions' transactions. */
        CU_ASSERT_EQUAL(
            txn_call(&c, c.coordinator, KS_MSG_TXN_END_REQUEST, -1, c.producer_id, c.epoch, false),
            KS_ERR_NONE);
        cf_run_for(&c.h, 500 * H_MS);
        CU_ASSERT_EQUAL(open_txns(&c, 0), 0);
        CU_ASSERT_EQUAL(open_txns(&c, 1), 0);
        CU_ASSERT_EQUAL(leo(&c, 1), 2);
        /* The old epoch's late batch opens nothing (compare
         * test_late_batch_hangs_without_verification). */
        CU_ASSERT_EQUAL(produce(&c, 0, 1), KS_ERR_INVALID_PRODUCER_EPOCH);
        CU_ASSERT_EQUAL(open_txns(&c, 0), 0);
        cf_free(&c.h);
    }
}

/* A fence under TV_2 (transaction.timeout.ms here) bumps the epoch twice,
 * prepareFenceProducerEpoch then prepareAbortOrCommit, so the fenced
 * producer's EndTxn with its epoch is not taken for a retry. */
static void test_tv2_timeout_fence(void)
{
    struct txn_cluster c;
    txn_cluster_start_tv(&c, true, 2);
    CU_ASSERT_EQUAL(
        txn_call(&c, c.coordinator, KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST, -1, -1, -1, false),
        KS_ERR_NONE);
    CU_ASSERT_EQUAL(produce(&c, 0, 0), KS_ERR_NONE);
    /* txn_call's transaction.timeout.ms is 60 s; the check runs every 10 s. */
    cf_run_for(&c.h, 75 * H_S);
    CU_ASSERT_EQUAL(open_txns(&c, 0), 0);
    CU_ASSERT_EQUAL(
        txn_call(&c, c.coordinator, KS_MSG_TXN_END_REQUEST, -1, c.producer_id, c.epoch, false),
        KS_ERR_PRODUCER_FENCED);
    CU_ASSERT_EQUAL(verify(&c, c.coordinator, 0, c.producer_id, (int16_t)(c.epoch + 2)),
                    KS_ERR_INVALID_TXN_STATE); /* the epoch is +2; nothing is open */
    CU_ASSERT_EQUAL(verify(&c, c.coordinator, 0, c.producer_id, (int16_t)(c.epoch + 1)),
                    KS_ERR_PRODUCER_FENCED);
    cf_free(&c.h);
}

/* KAFKA-18575 (Kafka 4.0): the next transaction's first batch (the bumped
 * epoch) reaches a partition where the previous transaction is still open
 * (its marker on the way): the leader answers CONCURRENT_TRANSACTIONS, which
 * the producer retries, and appends nothing; it would otherwise join the
 * previous transaction and be committed or aborted by its marker. */
static void test_tv2_next_epoch_waits_for_marker(void)
{
    struct txn_cluster c;
    txn_cluster_start_tv(&c, true, 2);
    CU_ASSERT_EQUAL(
        txn_call(&c, c.coordinator, KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST, -1, -1, -1, false),
        KS_ERR_NONE);
    int64_t start = leo(&c, 0);
    CU_ASSERT_EQUAL(produce(&c, 0, 0), KS_ERR_NONE);
    c.epoch++;
    CU_ASSERT_EQUAL(produce(&c, 0, 0), KS_ERR_CONCURRENT_TRANSACTIONS);
    CU_ASSERT_EQUAL(leo(&c, 0), start + 1);
    CU_ASSERT_EQUAL(open_txns(&c, 0), 1);
    cf_free(&c.h);
}

void ks_test_register_txn_verify(void)
{
    static const struct ks_test_case cases[] = {
        { "verification entries", test_verification_entries },
        { "verification entries expire", test_verification_entries_expire },
        { "verification entry expires in flight", test_verification_entry_expires_in_flight },
        { "tv2 add retry window", test_tv2_add_retry_window },
        { "coordinator's verify answer", test_coordinator_verify_answer },
        { "leader verifies before append", test_leader_verifies_before_append },
        { "late batch hangs without verification", test_late_batch_hangs_without_verification },
        { "stale verification refused", test_stale_verification_refused },
        { "client control batch refused", test_client_control_batch_refused },
        { "coordinator state events", test_coordinator_state_events },
        { "tv2 epoch bump per end", test_tv2_epoch_bump_per_end },
        { "tv2 implicit add", test_tv2_implicit_add },
        { "tv2 timeout fence", test_tv2_timeout_fence },
        { "tv2 next epoch waits for the marker", test_tv2_next_epoch_waits_for_marker },
    };
    KS_TEST_ADD_SUITE("core/txn_verify", cases);
}
