/*
** core/proto.c: the wire form of the three messages with one entry per broker
** (core/proto.h, "the per-broker arrays on the wire").
**
** Up to 64 brokers a message's bytes are exactly those of the fixed 64-entry
** structs these messages were before: the fields before the arrays, the
** arrays with 64 entries, the fields after them, the struct's tail padding.
** Above 64 brokers the arrays grow in steps of 8, so a 100-broker cluster
** sends 104 entries, not KS_BROKER_COUNT_MAX.
*/
#include "proto.h"

#include "base.h"

#include <string.h>

#define ALIGN8(n) (((n) + 7u) / 8u * 8u)

static size_t slots_of(int32_t broker_count)
{
    ks_assert(broker_count >= 0 && broker_count <= KS_BROKER_COUNT_MAX); /* B3 */
    return (size_t)ks_proto_broker_slots(broker_count);
}

/* ---- ks_partition_state_push: head, alive[S], epochs[S] ---- */

#define PUSH_HEAD offsetof(struct ks_partition_state_push, broker_alive)

size_t ks_proto_push_bytes(int32_t broker_count)
{
    size_t s = slots_of(broker_count);
    return ALIGN8(PUSH_HEAD + s + s * sizeof(int64_t));
}

void ks_proto_push_encode(const struct ks_partition_state_push *in, uint8_t *out)
{
    size_t s = slots_of(in->broker_count);
    memcpy(out, in, PUSH_HEAD);
    memcpy(out + PUSH_HEAD, in->broker_alive, s);
    memcpy(out + PUSH_HEAD + s, in->broker_epochs, s * sizeof(int64_t));
}

size_t ks_proto_push_decode(const uint8_t *message, size_t bytes,
                            struct ks_partition_state_push *out)
{
    memset(out, 0, sizeof *out);
    ks_assert(bytes >= PUSH_HEAD); /* B3 */
    memcpy(out, message, PUSH_HEAD);
    size_t wire = ks_proto_push_bytes(out->broker_count);
    ks_assert(bytes >= wire); /* B3 */
    size_t s = slots_of(out->broker_count);
    memcpy(out->broker_alive, message + PUSH_HEAD, s);
    memcpy(out->broker_epochs, message + PUSH_HEAD + s, s * sizeof(int64_t));
    return wire;
}

/* ---- ks_metadata_response: head, alive[S], partition_count, reserved2 ---- */

#define META_HEAD offsetof(struct ks_metadata_response, broker_alive)
#define META_TAIL \
    (sizeof(struct ks_metadata_response) - offsetof(struct ks_metadata_response, partition_count))

size_t ks_proto_metadata_bytes(int32_t broker_count)
{
    return ALIGN8(META_HEAD + slots_of(broker_count) + META_TAIL);
}

void ks_proto_metadata_encode(const struct ks_metadata_response *in, uint8_t *out)
{
    size_t s = slots_of(in->broker_count);
    memcpy(out, in, META_HEAD);
    memcpy(out + META_HEAD, in->broker_alive, s);
    memcpy(out + META_HEAD + s, &in->partition_count, META_TAIL);
}

size_t ks_proto_metadata_decode(const uint8_t *message, size_t bytes,
                                struct ks_metadata_response *out)
{
    memset(out, 0, sizeof *out);
    ks_assert(bytes >= META_HEAD); /* B3 */
    memcpy(out, message, META_HEAD);
    size_t wire = ks_proto_metadata_bytes(out->broker_count);
    ks_assert(bytes >= wire); /* B3 */
    size_t s = slots_of(out->broker_count);
    memcpy(out->broker_alive, message + META_HEAD, s);
    memcpy(&out->partition_count, message + META_HEAD + s, META_TAIL);
    return wire;
}

/* ---- ks_zk_response: head, live[S], epochs[S], state, padding ---- */

#define ZK_HEAD offsetof(struct ks_zk_response, live)

size_t ks_proto_zk_bytes(int32_t broker_count)
{
    size_t s = slots_of(broker_count);
    return ALIGN8(ZK_HEAD + s + s * sizeof(int64_t) + sizeof(struct ks_partition_state));
}

void ks_proto_zk_encode(const struct ks_zk_response *in, uint8_t *out)
{
    size_t s = slots_of(in->broker_count);
    memcpy(out, in, ZK_HEAD);
    memcpy(out + ZK_HEAD, in->live, s);
    memcpy(out + ZK_HEAD + s, in->broker_epochs, s * sizeof(int64_t));
    memcpy(out + ZK_HEAD + s + s * sizeof(int64_t), &in->state, sizeof in->state);
}

size_t ks_proto_zk_decode(const uint8_t *message, size_t bytes, struct ks_zk_response *out)
{
    memset(out, 0, sizeof *out);
    ks_assert(bytes >= ZK_HEAD); /* B3 */
    memcpy(out, message, ZK_HEAD);
    size_t wire = ks_proto_zk_bytes(out->broker_count);
    ks_assert(bytes >= wire); /* B3 */
    size_t s = slots_of(out->broker_count);
    memcpy(out->live, message + ZK_HEAD, s);
    memcpy(out->broker_epochs, message + ZK_HEAD + s, s * sizeof(int64_t));
    memcpy(&out->state, message + ZK_HEAD + s + s * sizeof(int64_t), sizeof out->state);
    return wire;
}

bool ks_proto_bundle_next(const uint8_t *message, size_t message_bytes, size_t *at,
                          const uint8_t **entry, size_t *entry_bytes)
{
    if (*at == 0) {
        struct ks_produce_bundle bundle;
        ks_assert(message_bytes >= sizeof bundle);
        memcpy(&bundle, message, sizeof bundle);
        ks_assert(bundle.count >= 2);
        *at = sizeof bundle;
    }
    if (*at == message_bytes) {
        return false;
    }
    struct ks_produce_bundle_entry header;
    ks_assert(message_bytes - *at >= sizeof header);
    memcpy(&header, message + *at, sizeof header);
    size_t taken = ks_proto_bundle_entry_bytes(header.bytes);
    ks_assert(message_bytes - *at >= taken && header.bytes >= sizeof(struct ks_produce_request));
    *entry = message + *at + sizeof header;
    *entry_bytes = header.bytes;
    *at += taken;
    return true;
}
