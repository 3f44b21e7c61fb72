/*
** tests/core/test_proto.c: the messages with one entry per broker, and a
** cluster above the old 64-broker limit.
**
** Goal: up to 64 brokers the three messages that carry per-broker arrays
** (MetadataResponse, the controller's push, ZooKeeper's answers) are byte
** for byte the fixed 64-entry structs they were, so no trace hash moves;
** above 64 their arrays grow to max(64, brokers) rounded up to 8 and every
** entry survives the trip; and a 100-broker cluster, under both controllers,
** fences a crashed broker whose id is above 64, moves its leadership, and
** takes it back into the ISR when it returns (its fetcher to a leader above
** 64 works). Method: the old structs rebuilt here with [64] arrays and
** compared with memcmp; a round trip at 100 brokers; the cluster driven with
** tests/core/cluster_fixture.h and explicit replica lists.
*/
#include "../../core/proto.h"
#include "../testlib.h"
#include "cluster_fixture.h"

#include <string.h>

/* The layouts before the limit was raised (core/proto.h at 64 brokers). */
struct old_push {
    int64_t broker_epoch;
    int64_t metadata_version;
    int32_t partition_count;
    int32_t broker_count;
    uint8_t broker_alive[64];
    int64_t broker_epochs[64];
};

struct old_metadata {
    int64_t correlation_id;
    int32_t topic_index;
    int16_t error_code;
    int16_t reserved;
    int32_t answering_broker;
    int32_t broker_count;
    uint8_t broker_alive[64];
    int32_t partition_count;
    int32_t reserved2;
};

struct old_zk {
    int32_t op;
    int32_t error;
    int64_t session_id;
    int32_t controller_id;
    int32_t controller_epoch;
    int32_t broker_count;
    int32_t partition_count;
    uint8_t live[64];
    int64_t broker_epochs[64];
    struct ks_partition_state state;
};

static void test_layout_up_to_64_brokers_is_the_old_one(void)
{
    CU_ASSERT_EQUAL(ks_proto_push_bytes(3), sizeof(struct old_push));
    CU_ASSERT_EQUAL(ks_proto_push_bytes(64), sizeof(struct old_push));
    CU_ASSERT_EQUAL(ks_proto_metadata_bytes(3), sizeof(struct old_metadata));
    CU_ASSERT_EQUAL(ks_proto_zk_bytes(0), sizeof(struct old_zk));
    CU_ASSERT_EQUAL(ks_proto_zk_bytes(64), sizeof(struct old_zk));
    for (int32_t brokers = 1; brokers <= 64; brokers += 63) {
        struct ks_partition_state_push push;
        struct old_push old_p;
        memset(&push, 0, sizeof push);
        memset(&old_p, 0, sizeof old_p);
        push.broker_epoch = old_p.broker_epoch = 7;
        push.metadata_version = old_p.metadata_version = 9;
        push.partition_count = old_p.partition_count = 2;
        push.broker_count = old_p.broker_count = brokers;
        for (int32_t i = 0; i < 64; i++) {
            push.broker_alive[i] = old_p.broker_alive[i] = (uint8_t)(i < brokers && i % 3 != 0);
            push.broker_epochs[i] = old_p.broker_epochs[i] = i < brokers ? 100 + i : -1;
        }
        uint8_t *wire = calloc(1, ks_proto_push_bytes(brokers));
        ks_proto_push_encode(&push, wire);
        CU_ASSERT(memcmp(wire, &old_p, sizeof old_p) == 0);
        free(wire);

        struct ks_metadata_response meta;
        struct old_metadata old_m;
        memset(&meta, 0, sizeof meta);
        memset(&old_m, 0, sizeof old_m);
        meta.correlation_id = old_m.correlation_id = 41;
        meta.topic_index = old_m.topic_index = 1;
        meta.answering_broker = old_m.answering_broker = 2;
        meta.broker_count = old_m.broker_count = brokers;
        for (int32_t i = 0; i < brokers; i++) {
            meta.broker_alive[i] = old_m.broker_alive[i] = (uint8_t)(i % 2);
        }
        meta.partition_count = old_m.partition_count = 5;
        wire = calloc(1, ks_proto_metadata_bytes(brokers));
        ks_proto_metadata_encode(&meta, wire);
        CU_ASSERT(memcmp(wire, &old_m, sizeof old_m) == 0);
        free(wire);

        struct ks_zk_response zk;
        struct old_zk old_z;
        memset(&zk, 0, sizeof zk);
        memset(&old_z, 0, sizeof old_z);
        zk.op = old_z.op = KS_ZK_OP_READ_STATE;
        zk.session_id = old_z.session_id = 12;
        zk.broker_count = old_z.broker_count = brokers;
        zk.partition_count = old_z.partition_count = 3;
        for (int32_t i = 0; i < brokers; i++) {
            zk.live[i] = old_z.live[i] = 1;
            zk.broker_epochs[i] = old_z.broker_epochs[i] = 1000 + i;
        }
        zk.state.leader = old_z.state.leader = 4;
        zk.state.isr_count = old_z.state.isr_count = 1;
        zk.state.isr[0] = old_z.state.isr[0] = 4;
        wire = calloc(1, ks_proto_zk_bytes(brokers));
        ks_proto_zk_encode(&zk, wire);
        CU_ASSERT(memcmp(wire, &old_z, sizeof old_z) == 0);
        free(wire);
    }
}

static void test_round_trip_at_100_brokers(void)
{
    CU_ASSERT_EQUAL(ks_proto_broker_slots(64), 64);
    CU_ASSERT_EQUAL(ks_proto_broker_slots(65), 72);
    CU_ASSERT_EQUAL(ks_proto_broker_slots(100), 104);
    CU_ASSERT_EQUAL(ks_proto_broker_slots(KS_BROKER_COUNT_MAX), KS_BROKER_COUNT_MAX);
    CU_ASSERT_EQUAL(ks_proto_push_bytes(100), 24 + 104 + 104 * 8);
    CU_ASSERT_EQUAL(ks_proto_metadata_bytes(100), 24 + 104 + 8);

    struct ks_partition_state_push push, push_back;
    memset(&push, 0, sizeof push);
    push.broker_count = 100;
    push.partition_count = 1;
    for (int32_t i = 0; i < 104; i++) {
        push.broker_alive[i] = (uint8_t)(i < 100 && i % 7 != 0);
        push.broker_epochs[i] = i < 100 ? 5000 + i : -1;
    }
    size_t bytes = ks_proto_push_bytes(100) + sizeof(struct ks_partition_state);
    uint8_t *wire = calloc(1, bytes);
    ks_proto_push_encode(&push, wire);
    CU_ASSERT_EQUAL(ks_proto_push_decode(wire, bytes, &push_back), ks_proto_push_bytes(100));
    CU_ASSERT(memcmp(&push, &push_back, sizeof push) == 0);
    CU_ASSERT_EQUAL(push_back.broker_epochs[99], 5099);
    CU_ASSERT_EQUAL(push_back.broker_alive[97], 1);
    CU_ASSERT_EQUAL(push_back.broker_alive[98], 0); /* 98 = 14 x 7 */
    free(wire);

    struct ks_zk_response zk, zk_back;
    memset(&zk, 0, sizeof zk);
    zk.op = KS_ZK_WATCH_BROKERS;
    zk.broker_count = 100;
    zk.live[99] = 1;
    zk.broker_epochs[99] = 77;
    zk.state.leader = 100;
    bytes = ks_proto_zk_bytes(100);
    wire = calloc(1, bytes);
    ks_proto_zk_encode(&zk, wire);
    CU_ASSERT_EQUAL(ks_proto_zk_decode(wire, bytes, &zk_back), bytes);
    CU_ASSERT(memcmp(&zk, &zk_back, sizeof zk) == 0);
    free(wire);

    struct ks_metadata_response meta, meta_back;
    memset(&meta, 0, sizeof meta);
    meta.broker_count = 100;
    meta.broker_alive[99] = 1;
    meta.partition_count = 3;
    bytes = ks_proto_metadata_bytes(100);
    wire = calloc(1, bytes);
    ks_proto_metadata_encode(&meta, wire);
    CU_ASSERT_EQUAL(ks_proto_metadata_decode(wire, bytes, &meta_back), bytes);
    CU_ASSERT(memcmp(&meta, &meta_back, sizeof meta) == 0);
    free(wire);
}

static bool in_isr(struct cluster_fixture *cf, int32_t partition, int32_t broker)
{
    int32_t isr[KS_REPLICATION_FACTOR_MAX];
    int32_t n = ks_cluster_isr(cf->cluster, 0, partition, isr, KS_REPLICATION_FACTOR_MAX);
    for (int32_t i = 0; i < n; i++) {
        if (isr[i] == broker) {
            return true;
        }
    }
    return false;
}

/* 100 brokers; broker 100 leads p0 (then 99, 98) and follows p1 and p3. */
static void run_100_brokers(enum ks_controller_model model)
{
    static const int32_t replicas[] = { 100, 99, 98, 70, 100, 1, 1, 2, 3, 65, 66, 100 };
    struct cluster_fixture *cf = calloc(1, sizeof *cf);
    cf_init(cf, 100);
    cf->cluster_config.controller_model = model;
    cf_topic(cf, "wide", 4, 3, 2, replicas);
    struct ks_producer_config *producer = cf_producer(cf, "p1", 0);
    producer->rate_per_s = 200;
    producer->count = -1;
    cf_start(cf, 1);
    cf_run_until(cf, 5 * CF_S);
    CU_ASSERT_EQUAL(ks_cluster_leader(cf->cluster, 0, 0), 100);
    CU_ASSERT(in_isr(cf, 3, 100));
    int64_t acked_before = cf->acked_count;
    CU_ASSERT(acked_before > 0);

    cf_crash(cf, 100, false);
    cf_run_for(cf, 30 * CF_S);
    int32_t leader = ks_cluster_leader(cf->cluster, 0, 0);
    CU_ASSERT(leader == 99 || leader == 98);
    CU_ASSERT(!in_isr(cf, 1, 100));
    CU_ASSERT(!in_isr(cf, 3, 100));
    CU_ASSERT(cf->acked_count > acked_before + 1000);

    cf_restart(cf, 100);
    cf_run_for(cf, 30 * CF_S);
    /* Back in every ISR: its fetchers to leaders 99 (or 98), 70 and 65 caught up. */
    CU_ASSERT(in_isr(cf, 0, 100));
    CU_ASSERT(in_isr(cf, 1, 100));
    CU_ASSERT(in_isr(cf, 3, 100));
    CU_ASSERT(cf_count(cf, KS_EV_ISR_EXPAND) >= 3);
    cf_free(cf);
    free(cf);
}

static void test_100_brokers_kraft(void)
{
    run_100_brokers(KS_CONTROLLER_MODEL_KRAFT);
}

static void test_100_brokers_zookeeper(void)
{
    run_100_brokers(KS_CONTROLLER_MODEL_ZOOKEEPER);
}

void ks_test_register_proto(void)
{
    static const struct ks_test_case cases[] = {
        { "up to 64 brokers the wire bytes are the fixed 64-entry structs'",
          test_layout_up_to_64_brokers_is_the_old_one },
        { "100 brokers: 104 entries per array, every one survives",
          test_round_trip_at_100_brokers },
        { "100 brokers (KRaft): broker 100 fenced, replaced, back in the ISR",
          test_100_brokers_kraft },
        { "100 brokers (ZooKeeper): broker 100 fenced, replaced, back in the ISR",
          test_100_brokers_zookeeper },
    };
    KS_TEST_ADD_SUITE("core/proto", cases);
}
