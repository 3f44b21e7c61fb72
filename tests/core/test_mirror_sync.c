/*
** tests/core/test_mirror_sync.c: MirrorMaker 2's offset syncs, the sync
** store, offset translation and checkpoints (core/mirror_sync.c).
**
** Goal: the same decisions as Kafka's connect/mirror. Method: the writer's
** four reasons to sync (first record, offset.lag.max, an upstream gap, a
** downstream truncation), the delayed/pending order and the 10-sync limit;
** the store against the figures of Kafka's OffsetSyncStoreTest
** (testOffsetTranslation, testPastOffsetTranslation, with and without the
** initial read to the end), its invariants after every sync, and T1 (the
** translation is never past the real target offset) for every upstream
** offset of a mirrored log with gaps; the checkpoint emission rule and
** the target group offset sync; the
** record bytes against hand-encoded Kafka Structs, and their decoders'
** refusals.
*/
#include "../../core/mirror_sync.h"
#include "../testlib.h"

#include <glib.h>
#include <string.h>

static void test_names(void)
{
    g_autofree char *remote = ks_mirror_remote_topic("us-west", "orders");
    g_autofree char *syncs = ks_mirror_offset_syncs_topic("us-east");
    g_autofree char *checkpoints = ks_mirror_checkpoints_topic("us-west");
    CU_ASSERT_STRING_EQUAL(remote, "us-west.orders");
    CU_ASSERT_STRING_EQUAL(syncs, "mm2-offset-syncs.us-east.internal");
    CU_ASSERT_STRING_EQUAL(checkpoints, "us-west.checkpoints.internal");
}

static void test_writer_reasons(void)
{
    struct ks_offset_sync_writer *writer = ks_offset_sync_writer_new(1, 100);
    /* The first record of this lifetime syncs. */
    CU_ASSERT_TRUE(ks_offset_sync_writer_record(writer, 0, 0, 0));
    /* Then nothing until downstream - (last + 1) >= 100: offsets 1..100 wait. */
    for (int64_t offset = 1; offset <= 100; offset++) {
        CU_ASSERT_FALSE(ks_offset_sync_writer_record(writer, 0, offset, offset));
    }
    CU_ASSERT_TRUE(ks_offset_sync_writer_record(writer, 0, 101, 101));
    CU_ASSERT_FALSE(ks_offset_sync_writer_record(writer, 0, 102, 102));
    /* An upstream gap (compaction, transaction markers) syncs. */
    CU_ASSERT_TRUE(ks_offset_sync_writer_record(writer, 0, 110, 103));
    CU_ASSERT_FALSE(ks_offset_sync_writer_record(writer, 0, 111, 104));
    /* A downstream offset going back (the target truncated) syncs. */
    CU_ASSERT_TRUE(ks_offset_sync_writer_record(writer, 0, 112, 50));
    CU_ASSERT_FALSE(ks_offset_sync_writer_record(writer, 0, 113, 51));
    ks_offset_sync_writer_free(writer);

    /* offset.lag.max = 0: every record syncs. */
    writer = ks_offset_sync_writer_new(1, 0);
    for (int64_t offset = 0; offset < 5; offset++) {
        CU_ASSERT_TRUE(ks_offset_sync_writer_record(writer, 0, offset, offset));
    }
    ks_offset_sync_writer_free(writer);
}

static void test_writer_queues(void)
{
    struct ks_offset_sync_writer *writer = ks_offset_sync_writer_new(3, 100);
    int32_t partition = -1;
    struct ks_offset_sync sync = { -1, -1 };
    CU_ASSERT_FALSE(ks_offset_sync_writer_next(writer, &partition, &sync));
    /* Partition 2 then 0 sync at once: pending in that order. */
    ks_offset_sync_writer_record(writer, 2, 0, 0);
    ks_offset_sync_writer_record(writer, 0, 0, 0);
    ks_offset_sync_writer_record(writer, 0, 1, 1); /* delayed */
    ks_offset_sync_writer_record(writer, 1, 0, 0);
    ks_offset_sync_writer_record(writer, 1, 1, 1); /* delayed */
    ks_offset_sync_writer_record(writer, 0, 2, 2); /* replaces 0's delayed sync */
    CU_ASSERT_EQUAL(ks_offset_sync_writer_pending_count(writer), 3);
    CU_ASSERT_EQUAL(ks_offset_sync_writer_delayed_count(writer), 2);
    CU_ASSERT_TRUE(ks_offset_sync_writer_next(writer, &partition, &sync));
    CU_ASSERT_EQUAL(partition, 2);
    CU_ASSERT_TRUE(ks_offset_sync_writer_next(writer, &partition, &sync));
    CU_ASSERT_EQUAL(partition, 0);
    CU_ASSERT_EQUAL(sync.upstream_offset, 0);
    CU_ASSERT_TRUE(ks_offset_sync_writer_next(writer, &partition, &sync));
    CU_ASSERT_EQUAL(partition, 1);
    CU_ASSERT_FALSE(ks_offset_sync_writer_next(writer, &partition, &sync));
    /* The commit promotes the delayed ones, in the delayed map's order. */
    ks_offset_sync_writer_promote_delayed(writer);
    CU_ASSERT_EQUAL(ks_offset_sync_writer_delayed_count(writer), 0);
    CU_ASSERT_TRUE(ks_offset_sync_writer_next(writer, &partition, &sync));
    CU_ASSERT_EQUAL(partition, 0);
    CU_ASSERT_EQUAL(sync.upstream_offset, 2);
    CU_ASSERT_EQUAL(sync.downstream_offset, 2);
    CU_ASSERT_TRUE(ks_offset_sync_writer_next(writer, &partition, &sync));
    CU_ASSERT_EQUAL(partition, 1);
    CU_ASSERT_EQUAL(sync.upstream_offset, 1);
    CU_ASSERT_EQUAL(ks_offset_sync_writer_outstanding_count(writer), 5);
    for (int i = 0; i < 5; i++) {
        ks_offset_sync_writer_sent_done(writer);
    }
    ks_offset_sync_writer_free(writer);

    /* At most 10 outstanding; an ack lets the next one go. A sync that
     * becomes pending while 0's is waiting replaces it in place. */
    writer = ks_offset_sync_writer_new(12, 0);
    for (int32_t p = 0; p < 12; p++) {
        ks_offset_sync_writer_record(writer, p, 0, 0);
    }
    for (int i = 0; i < 10; i++) {
        CU_ASSERT_TRUE(ks_offset_sync_writer_next(writer, &partition, &sync));
        CU_ASSERT_EQUAL(partition, i);
    }
    CU_ASSERT_FALSE(ks_offset_sync_writer_next(writer, &partition, &sync));
    ks_offset_sync_writer_record(writer, 10, 1, 1);
    ks_offset_sync_writer_sent_done(writer);
    CU_ASSERT_TRUE(ks_offset_sync_writer_next(writer, &partition, &sync));
    CU_ASSERT_EQUAL(partition, 10);
    CU_ASSERT_EQUAL(sync.upstream_offset, 1);
    CU_ASSERT_FALSE(ks_offset_sync_writer_next(writer, &partition, &sync));
    ks_offset_sync_writer_sent_done(writer);
    CU_ASSERT_TRUE(ks_offset_sync_writer_next(writer, &partition, &sync));
    CU_ASSERT_EQUAL(partition, 11);
    ks_offset_sync_writer_free(writer);
}

static void add_sync(struct ks_offset_sync_store *store, int64_t upstream, int64_t downstream)
{
    struct ks_offset_sync sync = { upstream, downstream };
    ks_offset_sync_store_add(store, 0, sync);
    ks_offset_sync_store_check(store);
}

/* The translation, or -1 for KS_TRANSLATE_TOO_OLD, -2 for anything else. */
static int64_t translate(const struct ks_offset_sync_store *store, int64_t upstream)
{
    int64_t downstream = -3;
    switch (ks_offset_sync_store_translate(store, 0, upstream, &downstream)) {
    case KS_TRANSLATE_OK: return downstream;
    case KS_TRANSLATE_TOO_OLD: return -1;
    case KS_TRANSLATE_NOT_READY:
    case KS_TRANSLATE_NO_SYNC: return -2;
    }
    return -3;
}

static void test_store_translation(void)
{
    struct ks_offset_sync_store *store = ks_offset_sync_store_new(1, true);
    int64_t out = 0;
    CU_ASSERT_EQUAL(ks_offset_sync_store_translate(store, 0, 5, &out), KS_TRANSLATE_NOT_READY);
    ks_offset_sync_store_read_to_end(store);
    CU_ASSERT_EQUAL(ks_offset_sync_store_translate(store, 0, 5, &out), KS_TRANSLATE_NO_SYNC);
    /* OffsetSyncStoreTest.testOffsetTranslation's figures. */
    add_sync(store, 100, 200);
    CU_ASSERT_EQUAL(translate(store, 150), 201); /* one past the sync, no dead reckoning */
    add_sync(store, 150, 251);
    CU_ASSERT_EQUAL(translate(store, 150), 251);
    CU_ASSERT_EQUAL(translate(store, 5), -1);
    add_sync(store, 200, 10); /* the target reset */
    CU_ASSERT_EQUAL(translate(store, 200), 10);
    add_sync(store, 20, 20); /* the source reset: every older sync goes */
    CU_ASSERT_EQUAL(translate(store, 20), 20);
    CU_ASSERT_EQUAL(translate(store, 19), -1);
    ks_offset_sync_store_free(store);
}

static void sparse(const struct ks_offset_sync_store *store, int64_t sync_offset,
                   int64_t previous_offset)
{
    CU_ASSERT_EQUAL(translate(store, sync_offset - 1),
                    previous_offset == -1 ? -1 : previous_offset + 1);
    CU_ASSERT_EQUAL(translate(store, sync_offset), sync_offset);
    CU_ASSERT_EQUAL(translate(store, sync_offset + 1), sync_offset + 1);
    CU_ASSERT_EQUAL(translate(store, sync_offset + 2), sync_offset + 1);
}

static void test_store_past_offsets(void)
{
    /* OffsetSyncStoreTest.testPastOffsetTranslation: syncs every 10 offsets,
     * 0..1000 during the initial read, then 1010..10000. */
    struct ks_offset_sync_store *store = ks_offset_sync_store_new(1, true);
    for (int64_t offset = 0; offset <= 1000; offset += 10) {
        add_sync(store, offset, offset);
    }
    ks_offset_sync_store_read_to_end(store);
    sparse(store, 1000, -1); /* only the last sync of the initial read */
    for (int64_t offset = 1010; offset <= 10000; offset += 10) {
        add_sync(store, offset, offset);
    }
    sparse(store, 1000, -1);
    sparse(store, 4840, 1000);
    sparse(store, 6760, 4840);
    sparse(store, 8680, 6760);
    sparse(store, 9160, 8680);
    sparse(store, 9640, 9160);
    sparse(store, 9880, 9640);
    sparse(store, 9940, 9880);
    sparse(store, 9970, 9940);
    sparse(store, 9990, 9970);
    sparse(store, 10000, 9990);
    add_sync(store, 1500, 11000); /* an upstream rewind clears the history */
    CU_ASSERT_EQUAL(translate(store, 1499), -1);
    CU_ASSERT_EQUAL(translate(store, 1500), 11000);
    CU_ASSERT_EQUAL(translate(store, 2000), 11001);
    ks_offset_sync_store_free(store);

    /* ...WithoutInitializationReadToEnd: the initial syncs are all kept. */
    store = ks_offset_sync_store_new(1, false);
    for (int64_t offset = 0; offset <= 1000; offset += 10) {
        add_sync(store, offset, offset);
    }
    ks_offset_sync_store_read_to_end(store);
    sparse(store, 480, 0);
    sparse(store, 720, 480);
    sparse(store, 1000, 990);
    ks_offset_sync_store_free(store);
}

/* T1 on a mirrored log: upstream offset u is written downstream at
 * 3 * u + (u / 7) (other writers interleave), and upstream offsets that are
 * multiples of 5 never exist (compacted away). The writer decides the syncs,
 * the store keeps them; every upstream position translates to at or before
 * its real downstream offset, and never more than 2 * offset.lag.max
 * downstream records before it for a group near the live end. */
static int64_t downstream_of(int64_t upstream)
{
    return 3 * upstream + upstream / 7;
}

static void test_translation_never_skips(void)
{
    const int64_t lag_max = 100;
    const int64_t upstream_end = 20000;
    struct ks_offset_sync_writer *writer = ks_offset_sync_writer_new(1, lag_max);
    struct ks_offset_sync_store *store = ks_offset_sync_store_new(1, true);
    ks_offset_sync_store_read_to_end(store);
    int64_t sync_count = 0;
    for (int64_t upstream = 1; upstream < upstream_end; upstream++) {
        if (upstream % 5 == 0) {
            continue;
        }
        ks_offset_sync_writer_record(writer, 0, upstream, downstream_of(upstream));
        if (upstream % 1000 == 999) {
            ks_offset_sync_writer_promote_delayed(writer); /* an offset commit */
        }
        int32_t partition = -1;
        struct ks_offset_sync sync;
        while (ks_offset_sync_writer_next(writer, &partition, &sync)) {
            ks_offset_sync_store_add(store, partition, sync);
            ks_offset_sync_writer_sent_done(writer);
            sync_count++;
        }
    }
    ks_offset_sync_store_check(store);
    CU_ASSERT_TRUE(sync_count > upstream_end / 5); /* the gaps force many syncs */
    int64_t checked = 0;
    for (int64_t group = 1; group < upstream_end; group++) {
        int64_t out = -1;
        enum ks_translate_result result = ks_offset_sync_store_translate(store, 0, group, &out);
        if (result != KS_TRANSLATE_OK) {
            continue;
        }
        /* The group's position is the next record that exists. */
        int64_t real = group % 5 == 0 ? downstream_of(group + 1) : downstream_of(group);
        CU_ASSERT_TRUE(out <= real);
        if (group > upstream_end - 50) {
            CU_ASSERT_TRUE(real - out <= 2 * lag_max);
        }
        checked++;
    }
    CU_ASSERT_TRUE(checked > upstream_end / 2);
    ks_offset_sync_writer_free(writer);
    ks_offset_sync_store_free(store);
}

static void test_checkpoint_rule(void)
{
    struct ks_offset_sync last = { 100, 200 };
    struct ks_offset_sync ahead = { 150, 201 };
    struct ks_offset_sync same = { 150, 200 };
    struct ks_offset_sync behind = { 150, 150 };
    struct ks_offset_sync rewound = { 50, 100 };
    CU_ASSERT_TRUE(ks_checkpoint_is_more_recent(NULL, &same));
    CU_ASSERT_TRUE(ks_checkpoint_is_more_recent(&last, &ahead));
    CU_ASSERT_FALSE(ks_checkpoint_is_more_recent(&last, &same));   /* repeated */
    CU_ASSERT_FALSE(ks_checkpoint_is_more_recent(&last, &behind)); /* no downstream rewind */
    CU_ASSERT_TRUE(ks_checkpoint_is_more_recent(&last, &rewound)); /* upstream rewind */
}

static void test_checkpoint_next(void)
{
    struct ks_offset_sync_store *store = ks_offset_sync_store_new(2, true);
    ks_offset_sync_store_read_to_end(store);
    struct ks_offset_sync checkpoint = { -1, -1 };
    /* No sync for partition 1: nothing to emit. */
    CU_ASSERT_FALSE(ks_checkpoint_next(store, 1, 10, NULL, &checkpoint));
    struct ks_offset_sync sync = { 100, 1000 };
    ks_offset_sync_store_add(store, 0, sync);
    /* Before the first sync: too old to translate. */
    CU_ASSERT_FALSE(ks_checkpoint_next(store, 0, 99, NULL, &checkpoint));
    CU_ASSERT_TRUE(ks_checkpoint_next(store, 0, 100, NULL, &checkpoint));
    CU_ASSERT_EQUAL(checkpoint.upstream_offset, 100);
    CU_ASSERT_EQUAL(checkpoint.downstream_offset, 1000);
    struct ks_offset_sync last = checkpoint;
    /* The group moved on, the syncs did not: 1001, once, then repeats. */
    CU_ASSERT_TRUE(ks_checkpoint_next(store, 0, 150, &last, &checkpoint));
    CU_ASSERT_EQUAL(checkpoint.downstream_offset, 1001);
    last = checkpoint;
    CU_ASSERT_FALSE(ks_checkpoint_next(store, 0, 180, &last, &checkpoint));
    ks_offset_sync_store_free(store);

    CU_ASSERT_TRUE(ks_checkpoint_sync_target(false, 0, 5));
    CU_ASSERT_TRUE(ks_checkpoint_sync_target(true, 4, 5));
    CU_ASSERT_FALSE(ks_checkpoint_sync_target(true, 5, 5));
    CU_ASSERT_FALSE(ks_checkpoint_sync_target(true, 9, 5));
}

static void test_record_bytes(void)
{
    uint8_t buffer[64];
    static const uint8_t sync_key[] = { 0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0, 0, 0, 3 };
    CU_ASSERT_EQUAL(ks_offset_sync_key_encode("orders", 3, buffer, 4), sizeof(sync_key));
    CU_ASSERT_EQUAL(ks_offset_sync_key_encode("orders", 3, buffer, sizeof(buffer)),
                    sizeof(sync_key));
    CU_ASSERT_EQUAL(memcmp(buffer, sync_key, sizeof(sync_key)), 0);
    char topic[16];
    char group[16];
    int32_t partition = -1;
    CU_ASSERT_TRUE(
        ks_offset_sync_key_decode(sync_key, sizeof(sync_key), topic, sizeof(topic), &partition));
    CU_ASSERT_STRING_EQUAL(topic, "orders");
    CU_ASSERT_EQUAL(partition, 3);
    CU_ASSERT_FALSE(ks_offset_sync_key_decode(sync_key, sizeof(sync_key) - 1, topic, sizeof(topic),
                                              &partition));
    CU_ASSERT_FALSE(ks_offset_sync_key_decode(sync_key, sizeof(sync_key), topic, 6, &partition));

    uint8_t value[KS_OFFSET_SYNC_VALUE_BYTES];
    struct ks_offset_sync sync = { 0x0102030405060708LL, 300 };
    ks_offset_sync_value_encode(sync, value);
    static const uint8_t sync_value[] = { 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 1, 44 };
    CU_ASSERT_EQUAL(memcmp(value, sync_value, sizeof(sync_value)), 0);
    struct ks_offset_sync decoded = { -1, -1 };
    CU_ASSERT_TRUE(ks_offset_sync_value_decode(value, sizeof(value), &decoded));
    CU_ASSERT_EQUAL(decoded.upstream_offset, sync.upstream_offset);
    CU_ASSERT_EQUAL(decoded.downstream_offset, 300);

    static const uint8_t checkpoint_key[] = { 0, 1, 'g', 0, 1, 't', 0xff, 0xff, 0xff, 0xfe };
    CU_ASSERT_EQUAL(ks_checkpoint_key_encode("g", "t", -2, buffer, sizeof(buffer)),
                    sizeof(checkpoint_key));
    CU_ASSERT_EQUAL(memcmp(buffer, checkpoint_key, sizeof(checkpoint_key)), 0);
    CU_ASSERT_TRUE(ks_checkpoint_key_decode(checkpoint_key, sizeof(checkpoint_key), group,
                                            sizeof(group), topic, sizeof(topic), &partition));
    CU_ASSERT_STRING_EQUAL(group, "g");
    CU_ASSERT_STRING_EQUAL(topic, "t");
    CU_ASSERT_EQUAL(partition, -2);

    struct ks_offset_sync checkpoint = { 7, 9 };
    static const uint8_t checkpoint_value[] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 7,   0,
                                                0, 0, 0, 0, 0, 0, 9, 0, 2, 'm', 'd' };
    CU_ASSERT_EQUAL(ks_checkpoint_value_encode(checkpoint, "md", buffer, sizeof(buffer)),
                    sizeof(checkpoint_value));
    CU_ASSERT_EQUAL(memcmp(buffer, checkpoint_value, sizeof(checkpoint_value)), 0);
    char metadata[8];
    CU_ASSERT_TRUE(ks_checkpoint_value_decode(checkpoint_value, sizeof(checkpoint_value), &decoded,
                                              metadata, sizeof(metadata)));
    CU_ASSERT_EQUAL(decoded.upstream_offset, 7);
    CU_ASSERT_EQUAL(decoded.downstream_offset, 9);
    CU_ASSERT_STRING_EQUAL(metadata, "md");
    /* A version other than 0, a trailing byte, a negative string length. */
    uint8_t bad[sizeof(checkpoint_value) + 1];
    memcpy(bad, checkpoint_value, sizeof(checkpoint_value));
    bad[1] = 1;
    CU_ASSERT_FALSE(ks_checkpoint_value_decode(bad, sizeof(checkpoint_value), &decoded, metadata,
                                               sizeof(metadata)));
    memcpy(bad, checkpoint_value, sizeof(checkpoint_value));
    bad[sizeof(checkpoint_value)] = 0;
    CU_ASSERT_FALSE(
        ks_checkpoint_value_decode(bad, sizeof(bad), &decoded, metadata, sizeof(metadata)));
    static const uint8_t negative[] = { 0x80, 0, 0, 0, 0, 0 };
    CU_ASSERT_FALSE(
        ks_offset_sync_key_decode(negative, sizeof(negative), topic, sizeof(topic), &partition));
}

void ks_test_register_mirror_sync(void)
{
    static const struct ks_test_case cases[] = {
        { "names", test_names },
        { "writer_reasons", test_writer_reasons },
        { "writer_queues", test_writer_queues },
        { "store_translation", test_store_translation },
        { "store_past_offsets", test_store_past_offsets },
        { "translation_never_skips", test_translation_never_skips },
        { "checkpoint_rule", test_checkpoint_rule },
        { "checkpoint_next", test_checkpoint_next },
        { "record_bytes", test_record_bytes },
    };
    KS_TEST_ADD_SUITE("core/mirror_sync", cases);
}
