/*
** core/producer.c: the producer client, modelled on Kafka's Java producer
** (KafkaProducer, RecordAccumulator, Sender, NetworkClient, TransactionManager
** for idempotence).
**
** The pieces, as in the Java client:
**   workload     the "application": `rate` send() calls per simulated second,
**                evenly spaced; record n is due at base + n * 1e9 / rate. A
**                send() that finds no metadata yet, or no buffer.memory for a
**                new batch, blocks the application (no further records) for
**                up to max.block.ms, then fails that record.
**   partitioner  core/partitioner.c: murmur2 for keys, uniform sticky for
**                null keys (partitions with a known leader).
**   accumulator  per partition a queue of batches; the tail batch is open for
**                appends until the next record does not fit in batch.size
**                (a lone record larger than batch.size gets its own batch).
**                Each batch reserves max(batch.size, its size) of buffer.memory
**                until it ends.
**   sender       one loop (sender_run) after every event but a send() that
**                only adds to an open batch (see sender_due) and a produce
**                response that leaves it nothing to do (P13): request timeouts,
**                delivery timeouts, idempotence bookkeeping, metadata and
**                InitProducerId, then drain: a queue's head batch is sendable
**                when closed (full, or another batch behind it), lingered
**                linger.ms, the producer is stopping (close() ignores linger),
**                or the application is blocked on memory; and its retry
**                backoff is over; and its leader is known; and, with
**                max.in.flight 1, the partition is not muted (P16); and the
**                connection to the leader has fewer than max.in.flight
**                requests.
**   ready index  what the sender's passes need of the partitions, kept in
**                order instead of recomputed (issue 16; see below, P10, P11).
**   network      one connection per broker; requests carry correlation ids;
**                a response whose id is not in flight (the connection was
**                reset, or an earlier incarnation sent it) is ignored.
**
** Batch life cycle:
**
**   OPEN --(full / next record does not fit)--> CLOSED (queued)
**   OPEN/CLOSED --(drained)--> IN FLIGHT --(NONE / DUPLICATE_SEQUENCE)--> ACKED
**   IN FLIGHT --(retriable error, timeout, disconnect; retries left)--> queued again,
**                 at the front, after retry.backoff (KIP-580 exponential, +-20 %)
**   IN FLIGHT --(non-retriable error, or retries exhausted)--> FAILED or UNKNOWN
**   any --(delivery.timeout.ms since the batch was created)--> FAILED or UNKNOWN
**   any --(producer crash)--> UNKNOWN
**
** A batch that ends without an ack is UNKNOWN when some attempt may have been
** written (a request that timed out or was cut by a disconnect, or a broker
** REQUEST_TIMED_OUT / NOT_ENOUGH_REPLICAS_AFTER_APPEND, which both mean the
** leader appended), and FAILED otherwise (every attempt got a definite
** "nothing written" answer, or it was never sent). The brief's "retries
** exhausted with a definite error" is FAILED only when no earlier attempt was
** in doubt: an earlier timed-out attempt may be in the log.
**
** Invariants (checked by ks_producer_check: after every producer event in
** KS_DEBUG builds (every sender run, the send() that skips it, a crash), and
** by the tests):
**   P1  every record ends exactly once (acked + failed + unknown + pending == sent).
**   P2  a connection never holds more than max.in.flight requests.
**   P3  a batch is in at most one place: a partition queue or one request.
**   P4  buffer.memory reserved == sum of the live batches' reservations <= buffer.memory
**       (a single batch may exceed it when batch.size does, which Kafka's BufferPool
**       refuses; ksim allows it. A record larger than buffer.memory or
**       max.request.size fails at send(), RecordTooLargeException, as in Kafka).
**   P5  with idempotence, a partition's incomplete sequenced batches all carry the
**       partition's (producer id, epoch) and are sorted by base sequence.
**   P6  a partition queue holds requeued batches (retried or split) first, then
**       fresh ones in creation order, so delivery timeouts only need a scan up to
**       the first fresh batch.
**   P7  a partition is in the active set exactly when its queue is not empty, so
**       the scans that need them all (delivery timeouts, a transaction's
**       partitions, the ready index's rebuild) visit only those; and a partition
**       with `unresolved` or `bump_required` set is flagged.
**   P8  requests (Produce, Metadata, InitProducerId) are in flight only on a READY
**       connection; a CONNECTING one has its probe's id.
**   P9  no queued or in-flight batch's delivery deadline is before expire_floor_ns
**       (next_wakeup_ns sets it to the earliest of all, P11; each new batch lowers
**       it), so a sender pass before it skips the scan for expired batches.
**   P10 every active partition that is not dirty is placed as its leader and head
**       batch say, as of the last ready_refresh (ready_as_of_ns): LEADERLESS
**       without a leader; else MUTED when muted (P16); else READY, in its
**       leader's ready set, when its head batch is sendable by then
**       (head_ready_at <= ready_as_of_ns), else BACKOFF (a retry) or LINGERING
**       (a fresh batch) in a heap by that time, a LINGERING one also in its
**       leader's lingering set; an inactive one is in no place.
**   P11 every queued or in-flight batch is in the live list, which is in order
**       of creation time.
**   P12 the sets of brokers hold exactly the brokers whose ready set (ready_bits)
**       or lingering set (linger_bits) is not empty, whose connection is
**       CONNECTING (connecting_bits) or not READY (unready_bits), and whose
**       connections await a reset (reset_bits); the request list holds exactly
**       the requests in flight on every connection, in send order, which is
**       the order of their deadlines (request.timeout.ms is one setting).
**   P13 the sender timer, while set, is no later than the earliest time at
**       which a pass acts without an event (next_wakeup_ns), so a pass before
**       it acts only on what an event changed: a produce response without an
**       error that made no partition ready, woke no blocked send(), touched
**       no transaction, sequence or metadata and left no connection
**       connecting or reset skips its pass (sender_idle; KS_DEBUG builds
**       compute the pass's wake-up and check that it would not have moved
**       the timer).
**   P14 a key number below keys_cached has its text and murmur2 partition in
**       keys[] once used (text_bytes 0: not yet), and record_fixed_bytes /
**       upper_fixed_bytes are the parts of record_size and
**       record_size_upper_bound that no record changes (the value, the
**       identity header's key, the header count, the attributes; for the
**       bound also the batch header and MAX_RECORD_OVERHEAD), so that a
**       send() writes no key text and hashes nothing, and sizes a record
**       from the four varints that vary (KS_DEBUG builds compare
**       record_size with ks_producer_record_size_bytes; batch_encode asserts
**       the batch's size). With ks_decimal_digits and varint_bytes free of
**       divisions, bench_clients' client run (6 simulated seconds, whole
**       process, -O2) went from 1,724 M to 1,591 M instructions and
**       bench_scale 3 3 500 60 consumer's measured span from 630.3 M to
**       617.7 M (issue 16).
**   P15 a broker's led set holds exactly the partitions whose known leader
**       it is, sorted (Cluster.partitionsForNode in ksim's order), and its
**       drain index is not negative.
**   P16 with guarantee_order (max.in.flight 1, acks != 0), a partition is
**       muted exactly while a request in flight holds an unanswered entry
**       of it, and no partition has two; without it none is muted. A muted
**       partition with batches and a leader is placed MUTED (P10): in no
**       ready or lingering set and no heap.
**
** The ready index (P10, P11). RecordAccumulator.ready and drain visit every
** partition's deque at every sender loop (partitionReady, batchReady,
** drainBatchesForOneNode), which Kafka pays once per loop in real time; ksim
** ran a pass after every produce response, and each pass visited every
** partition with a queued batch three times (the ready brokers, the grouping
** by leader for the drain, the next wake-up). Whether a head batch is
** sendable changes with the clock in one way only: from not yet to yes, at
** the end of its retry backoff or of its linger.ms (head_ready_at). So each
** partition is placed when something else changes, and the clock moves it:
** every change to a queue (active_update), an append that fills the head
** batch or closes it, a new leader or leader epoch (metadata, a KIP-951
** hint), and a muting or unmuting (P16) marks the partition dirty;
** ready_refresh, before each use of the index, places the dirty ones
** again, then moves the BACKOFF and LINGERING
** partitions whose time has come to their leader's ready set. The pass
** answers from it: the ready brokers are those with a non-empty ready set, a
** partition without a leader asks for metadata, the drain of a ready broker
** walks its ready and lingering sets merged, from its drain index (a
** partition backing off gives nothing: drainBatchesForOneNode takes every
** other head batch of a ready node, lingered or not), the next wake-up for
** the partitions is the first time of the heaps, and the earliest delivery
** deadline is the first live batch's. The producer-wide readiness (stopping, or blocked on memory:
** every fresh batch is sendable) is asked at each use instead of being part
** of the placement: while it holds, a broker's lingering set counts as
** ready too (merged into the drain's walk) and the linger heap gives no
** wake-up. It flips at every record while memory is short, which placing
** every partition again would have paid each time. A pass costs the
** brokers, the ready partitions and what changed since the last, not the
** queued partitions (while memory is short, the lingering ones too). The
** answers are the ones the full scan gave, in the same order (every
** trace_hash was kept): KS_DEBUG builds compute the full scan at every pass
** and compare (ready_scan).
**
** The brokers (P12). With 100 brokers and a pass every ~0.1 ms, the loops
** over every broker in each pass (request timeouts, connects, the ready
** brokers, the drain, the next wake-up) cost more than the records. So the
** per-broker facts the passes ask for are kept in sets of brokers (bits by
** broker id, visited in id order as those loops were), updated where the
** facts change (ready_put / ready_unplace, conn_set_state, conn_set_reset),
** and the requests in flight in one list in send order: the earliest
** request deadline is its first one's, and no connection needs looking at
** for timeouts while that one is not due. A pass visits the brokers that
** are ready, connecting, reset or due, not all of them.
**
** Connections (NetworkClient, ClusterConnectionStates): one per broker,
**
**   DISCONNECTED --connect (reconnect backoff over)--> CONNECTING
**   CONNECTING --ApiVersions answered--> READY (both backoffs start over)
**   CONNECTING --refused (broker down) / setup timeout--> DISCONNECTED
**   READY --request timeout / reset (the broker's process died)--> DISCONNECTED
**
** A connect sends ApiVersions, whose round trip stands for the TCP handshake
** too; its SYN is resent after 1 s and at doubling intervals (TCP), and it
** fails at socket.connection.setup.timeout.ms (10 s, doubled per consecutive
** failed connect up to .max.ms 30 s, +-20 %). After any disconnect the next
** connect waits reconnect.backoff.ms (50 ms, doubled per failure since the
** last ready connection up to .max.ms 1 s, +-20 %). Requests go only on a
** READY connection (P8): batches for a broker that cannot be reached wait in
** the accumulator rather than being sent into a cut, and Metadata and
** InitProducerId wait for the connection of the broker picked for them. A
** request with no response after request.timeout.ms disconnects its
** connection: every request in flight on it fails with NETWORK_EXCEPTION (its
** fate unknown), which is retriable; every disconnect asks for a metadata
** refresh. A crashed broker's connections are reset (its host's kernel
** answers RST): the driver calls ks_producer_on_broker_down and the next
** pass, at once, closes them, and a connect while it is down is refused; a
** cut-off or paused broker is only noticed through request.timeout.ms and
** the setup timeout. Retried batches go back to the front of their queue:
** without idempotence with addFirst, so several batches failing together are
** resent in reverse order, which is how the Java client reorders records when
** max.in.flight > 1 (and duplicates them when a lost response hid a write).
**
** Idempotence (enable.idempotence=true, acks=all): InitProducerId first; each
** partition numbers records from 0 under (producer id, epoch). The broker
** answers a resend of one of its last 5 batches with the original offset;
** DUPLICATE_SEQUENCE_NUMBER counts as success without an offset. Ordering with
** up to 5 in flight (TransactionManager / RecordAccumulator.drain): a batch that
** already has a sequence (a retry) is only resent when it is the partition's
** lowest incomplete sequence, so retries go out one at a time and in order,
** and a fresh batch waits while its partition's sequence is unresolved (below)
** or its old epoch's batches are unfinished. Such a partition does not just
** give nothing: as RecordAccumulator.drainBatchesForOneNode breaks out of the
** node's walk when shouldStopDrainBatchesForPartition holds, it ends the
** request and keeps the broker's drain index on itself, so every drain of
** that broker stops there and its other partitions wait as well until the
** partition may go.
**
** Muting (max.in.flight.requests.per.connection = 1: KafkaProducer.newSender
** sets Sender.guaranteeMessageOrder from it, idempotent or not). One request
** per connection keeps a partition to one batch in flight only while its
** leader stays; after a leader change its next batch could go to the new
** leader, whose connection is free, while the older one is still in flight
** to the old one, and land first. So Kafka's sender mutes every partition it
** drains (Sender.sendProducerData, RecordAccumulator.mutePartition) and
** unmutes it at the end of Sender.completeBatch, which every end of the
** request's flight reaches: its answer (whatever the error; a retry is
** reenqueued still muted, then unmuted), a disconnect or a request timeout
** (NetworkClient fails the request, handleProduceResponse completes each
** batch). Sender.failBatch, the end of a batch that delivery.timeout.ms
** expires in flight (getExpiredInflightBatches), does not unmute: the
** partition stays muted until the request itself ends. A muted partition is
** neither ready nor drained: RecordAccumulator.batchReady skips it (no ready
** node, no time to check again), though partitionReady still asks metadata
** for it when it has no leader; drainBatchesForOneNode `continue`s past it
** after updateDrainIndex, as past an empty or backing-off partition, so the
** walk's end, and the drain index, are as if it were not there. ksim mutes
** an entry of a request (partition_mute in send_request), unmutes it when
** the entry is answered (on_produce_response) or its request fails
** (conn_disconnect: timeout, reset of a crashed broker), and places a muted
** partition MUTED in the ready index. acks=0 mutes nothing: its request
** completes as it is written (Kafka unmutes at that completion, before the
** next drain).
** OUT_OF_ORDER_SEQUENCE_NUMBER (KIP-360, Java 2.5+ for the idempotent producer):
** if the batch is not the next one expected (base != last acked + 1) an earlier
** batch is still pending: retry it unchanged. If it is the next one, the broker
** really has a gap (it lost state, e.g. after truncation): bump the epoch, renumber
** the partition's incomplete batches from 0 and retry. UNKNOWN_PRODUCER_ID does
** the same. A sequenced batch that ends without an ack leaves its sequence
** "unresolved" if it may have been written (resolved when a later batch of the
** partition is acked, else the epoch is bumped once nothing is in flight), or
** forces the bump if it surely was not. After a bump, other partitions finish
** their in-flight batches under the old epoch and restart at 0 under the new one.
**
** Requests: as RecordAccumulator.drain, a Produce request to a broker takes
** at most one batch of each partition it leads (up to max.request.size,
** 1 MiB, Kafka's default), and max.in.flight counts requests. The walk over
** the broker's partitions starts at its drain index (nodesDrainIndex, per
** node since Kafka 3.3, KAFKA-13834), a position in the partitions it leads
** by the metadata (led_sets, P15), which every partition the walk visits
** takes (updateDrainIndex): a walk that goes round leaves it on the partition
** before its start, so the next request starts one earlier; a walk that
** stops, at a batch past max.request.size or a partition idempotence holds
** back, leaves it on that partition (a muted partition, passed over, never
** stops it). Kafka walks Cluster.partitionsForNode,
** in the order of a HashMap of the metadata; ksim walks the partitions by
** number (a simplification; Kafka before 3.3 had one index for all nodes,
** not modelled). A request is
** one network message (a PRODUCE_REQUESTS bundle of one PRODUCE_REQUEST per
** batch when it has several, core/proto.h), lost or delivered whole, and
** answered once (a PRODUCE_RESPONSES of every batch's answer in request
** order, when its last partition is done, as Kafka answers); its in-flight
** slot frees with that answer.
**
** Record size limits: send() fails a record whose upper-bound size is larger
** than max.request.size or buffer.memory (KafkaProducer.ensureValidRecordSize)
** without sending it; a leader refuses a batch larger than the topic's
** max.message.bytes with MESSAGE_TOO_LARGE, which fails a one-record batch
** (not retriable) and splits a larger one (split_and_reenqueue).
**
** Simplifications: a connect's round trip is the ApiVersions probe (a paused
** broker, whose kernel would complete the handshake, fails it at the setup
** timeout); metadata and InitProducerId requests do not take in-flight slots
** and go to a broker picked at random, preferring one with a ready
** connection (Kafka: the least loaded node), another one after a failure;
** acks != all turns
** idempotence off (the scenario loader rejects an explicit
** enable.idempotence=true with acks != all, retries = 0 or max.in.flight > 5,
** as Kafka does; when not explicit Kafka silently drops it, as here); the epoch
** is bumped locally and never overflows in a run (asserted).
**
** A processor's producer (config input_consumer_index >= 0, made by the
** scenario loader for a consumer with output.topic) has no workload: its
** consumer calls ks_producer_send_output for each record it processes (the
** same send() path, record_due) and, when transactional, ks_producer_end_txn
** with the consumed offsets: the transaction then ends with
** sendOffsetsToTransaction's requests (TransactionManager: AddOffsetsToTxn to
** the transaction coordinator, FindCoordinator(GROUP) and TxnOffsetCommit to
** the group coordinator, on the one transactional request slot) before EndTxn.
** TxnOffsetCommit's UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION (KIP-447's fencing
** of a member that lost its partitions) make the application abort;
** INVALID_PRODUCER_EPOCH fences the producer. ks_producer_stop does not stop
** it: the application stops with its consumer.
**
** Compression (compression.type, KIP-390 levels): as ProducerBatch.close, a
** batch is compressed when it is drained (batch_encode: the whole records
** section through core/compress.c, the CRC over the compressed bytes). While
** it is open, batch.size is filled by MemoryRecordsBuilder's estimate,
** header + uncompressed records * ratio * 1.05, with the ratio taken at the
** batch's creation from CompressionRatioEstimator, which starts at 1 and
** after each compressed batch moves to the observed ratio (batch bytes /
** uncompressed record bytes): at once and by at least 0.05 when worse, by at
** most 0.005 when better. ksim keeps the ratio in integer ppm, per producer
** (Kafka: per topic in the JVM; a ksim producer writes one topic), across
** incarnations (Kafka's static map is lost with the process: a simplification).
*/
#include "producer.h"
#include "array.h"

#include "base.h"
#include "batch.h"
#include "group_proto.h"
#include "partitioner.h"
#include "proto.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum producer_timer_kind {
    TIMER_PRODUCER_START = 300,
    TIMER_PRODUCER_RECORD = 301,
    TIMER_PRODUCER_SENDER = 302,
};

#define IN_FLIGHT_MAX_IDEMPOTENT 5

struct precord {
    int64_t seq;          /* the producer's record number */
    int64_t key_number;   /* the key is "key-<n>"; -1 for a null key */
    ks_time_ns sent_ns;   /* when send() was called */
    int64_t timestamp_ms; /* CreateTime */
    int32_t size_bytes;   /* encoded size inside the batch */
};

struct prequest;
struct pentry;

struct pbatch {
    int32_t partition;
    int32_t record_count;
    int32_t record_capacity;
    struct precord *records;     /* record_count of record_capacity: &first_record, or owned */
    struct precord first_record; /* a batch of one record (most are) allocates no more */
    int64_t size_bytes;          /* encoded batch size so far, uncompressed */
    int64_t ratio_ppm;           /* compression ratio estimate when it was created */
    int64_t reserved_bytes;      /* buffer.memory held */
    ks_time_ns created_ns;
    bool closed;            /* no more appends */
    bool maybe_written;     /* some attempt's fate is unknown */
    int32_t retry_count;    /* reenqueues so far (Java's attempts) */
    bool requeued;          /* back at the front of its queue: retried, or split (P6) */
    ks_time_ns retry_at_ns; /* not before (backoff); 0 = none */
    int16_t last_error;     /* for the failure explanation */
    int64_t producer_id;    /* -1 unless idempotent and drained */
    int16_t producer_epoch;
    int32_t base_sequence; /* -1: none assigned */
    GByteArray *encoded;   /* owned; built at drain, rebuilt if the sequence changes */
    int64_t encoded_producer_id;
    int16_t encoded_epoch;
    int32_t encoded_sequence;
    struct pentry *entry; /* not owned: its place in the request carrying it, or NULL */
    int32_t acked_broker; /* the broker whose answer ended it (acks=0: the one written to); -1 */
    int32_t acked_leader_epoch; /* that broker's leader epoch from its response; -1 unknown */
    int32_t sent_leader_epoch;  /* the partition's leader epoch at its last send; -1 */
    struct pbatch *live_prev;   /* not owned: the live batches in creation order (P11) */
    struct pbatch *live_next;   /* not owned */
    GList queue_link; /* its link in its partition's queue while queued (data: the batch) */
};

/* One partition's batch inside a Produce request. ksim's wire protocol has
 * one batch per message (core/proto.h), so a request of several partitions
 * is several messages with their own correlation ids, sent together and
 * counted as ONE request in flight, as Kafka's one ProduceRequest is. */
struct pentry {
    int64_t correlation_id;
    struct prequest *request; /* not owned: the request it belongs to */
    struct pbatch *batch;     /* not owned; NULL once answered or ended early */
    bool answered;
    int32_t partition;   /* its batch's, kept when the batch ends early (P16) */
    int64_t producer_id; /* as sent */
    int16_t producer_epoch;
    int32_t base_sequence;
};

struct prequest {
    int32_t broker;
    ks_time_ns deadline_ns;
    struct prequest *older; /* not owned: the in-flight requests in send order (P12) */
    struct prequest *newer; /* not owned */
    int32_t entry_count;
    int32_t pending_count;   /* entries not answered yet */
    struct pentry entries[]; /* entry_count, in the request's one allocation */
};

/* Sets of brokers, bit (id - 1) % 64 of word (id - 1) / 64, visited in the
 * order of their ids as the loops over every broker did (P12). */
#define BROKER_WORDS ((KS_BROKER_COUNT_MAX + 63) / 64)

/* Where the sender's ready index holds a partition (P10). */
enum ready_place {
    PLACE_NONE,       /* an empty queue */
    PLACE_LEADERLESS, /* batches, no known leader */
    PLACE_MUTED,      /* batches, a leader, muted (P16): in no set or heap */
    PLACE_BACKOFF,    /* a retry backing off: the backoff heap, by its end */
    PLACE_LINGERING,  /* a fresh batch, not full: the linger heap by its linger end, and
                         its leader's lingering set (sendable at once while the producer
                         is stopping or blocked on memory) */
    PLACE_READY,      /* the head batch is sendable: its leader's ready set */
};

/* Partitions of one broker, sorted, as RecordAccumulator.drain walks them. */
struct part_set {
    int32_t *ids; /* owned, sorted, `count` of `capacity` */
    int32_t count;
    int32_t capacity;
};

/* Partitions by (ready_at_ns, partition), a binary min-heap. */
struct part_heap {
    int32_t *ids; /* owned, partition_count */
    int32_t count;
};

struct ppart {
    GQueue queue;         /* struct pbatch*, owned, head sent first */
    GPtrArray *sequenced; /* incomplete batches with a sequence, not owned (P5) */
    int32_t leader;       /* broker id, -1 unknown */
    int32_t leader_epoch;
    int64_t seq_producer_id; /* the (id, epoch) the sequences below belong to */
    int16_t seq_epoch;
    int32_t next_sequence;
    int32_t last_acked_sequence; /* -1 */
    bool unresolved;
    int32_t unresolved_last_sequence;
    bool bump_required;
    int64_t error_second; /* last second a PRODUCER_ERROR line was emitted */
    int64_t errors_suppressed;
    /* The sender's ready index (P10): where the partition is placed, as of
     * its last placement (ready_place), and when its head batch is sendable. */
    ks_time_ns ready_at_ns; /* BACKOFF, LINGERING, READY: head_ready_at when placed */
    int32_t heap_index;     /* BACKOFF, LINGERING: its position in that heap; else -1 */
    int32_t placed_leader;  /* LINGERING, READY: the broker whose set holds it */
    uint8_t place;          /* enum ready_place */
    bool dirty;             /* in p->dirty_ids: to be placed again before the next use */
    /* Muted (RecordAccumulator.mutePartition, only with guarantee_order):
     * a request carrying a batch of it is in flight, unanswered (P16). */
    bool muted;
};

/* One connection per broker, as ClusterConnectionStates tracks it. */
enum conn_state { CONN_DISCONNECTED, CONN_CONNECTING, CONN_READY };

struct pconn {
    GPtrArray *inflight;  /* struct prequest*, owned, oldest first */
    int64_t event_second; /* last second a disconnect line was emitted */
    enum conn_state state;
    bool attempted;             /* a connect was made in this incarnation */
    ks_time_ns last_attempt_ns; /* lastConnectAttemptMs: the last connect or disconnect */
    ks_time_ns reconnect_backoff_ns;
    ks_time_ns setup_timeout_ns; /* socket.connection.setup.timeout, grown by failures */
    int32_t failed_attempts;     /* disconnects since the last READY */
    int32_t failed_connect_attempts;
    int64_t connect_id; /* the ApiVersions request of a CONNECTING connection */
    int32_t syn_count;  /* times it was sent: TCP retransmits an unanswered SYN */
    bool reset_pending; /* the broker's process died: close at the next sender pass */
};

struct pwaiter { /* the application thread blocked in send() */
    bool active;
    struct precord record;
    int32_t partition;      /* -1 until chosen */
    ks_time_ns deadline_ns; /* max.block.ms */
};

/* TransactionManager's states as ksim's application loop drives them:
 * find the coordinator and InitProducerId, then transactions of
 * transaction.records records each, committed or (transaction.abort.rate)
 * aborted; a fenced producer stops for good. */
enum ptxn_state {
    PTXN_INIT,   /* initTransactions(): FindCoordinator, InitProducerId */
    PTXN_READY,  /* between transactions */
    PTXN_IN_TXN, /* beginTransaction() called, records being sent */
    PTXN_ENDING, /* commitTransaction() / abortTransaction(): flush, then EndTxn */
    PTXN_FENCED, /* ProducerFencedException: the application closed the producer */
};

struct ptxn {
    bool enabled; /* transactional.id set */
    enum ptxn_state state;
    int32_t coordinator;   /* broker id, -1 unknown */
    int64_t request_id;    /* the request in flight (one at a time), 0 none */
    uint32_t request_kind; /* its kind */
    int32_t request_broker;
    int32_t request_partition; /* AddPartitionsToTxn: the partition asked for */
    ks_time_ns deadline_ns;
    ks_time_ns retry_at_ns;
    int32_t find_broker; /* FindCoordinator target, -1 none chosen */
    bool *added;         /* [partition]: in the open transaction */
    int32_t added_count;
    int64_t first_seq;  /* the open transaction's first record */
    int64_t records;    /* records sent in it */
    bool abort;         /* the application will abort it */
    bool failed;        /* a record of it failed: it must abort */
    bool bump_after;    /* after this abort, InitProducerId again (KIP-360's bump) */
    bool fence_pending; /* a partition leader fenced us: stop at the next pass */
    /* sendOffsetsToTransaction (a processor's producer, see ks_producer_end_txn):
     * AddOffsetsToTxn, FindCoordinator(GROUP), TxnOffsetCommit, then EndTxn. */
    bool offsets_pending;      /* the open transaction carries offsets */
    bool offsets_added;        /* AddOffsetsToTxn answered NONE */
    bool offsets_written;      /* TxnOffsetCommit answered NONE */
    int32_t group_coordinator; /* broker id, -1 unknown */
    char group_id[KS_GROUP_ID_BYTES];
    char member_id[KS_GROUP_MEMBER_ID_BYTES];
    int32_t generation;
    GArray *offsets;     /* struct ks_group_offset_entry, owned */
    int64_t ended_count; /* transactions ended (committed or aborted) */
    bool last_committed;
};

struct ks_producer {
    ks_world *world;                            /* not owned */
    const struct ks_cluster_spec *spec;         /* not owned */
    const struct ks_producer_config *config;    /* not owned */
    const struct ks_cluster_observer *observer; /* not owned */
    int32_t index;
    ks_node_id node;
    int32_t broker_count;
    int32_t partition_count;
    bool idempotent;
    int32_t in_flight_max;
    /* Sender.guaranteeMessageOrder (KafkaProducer: max.in.flight == 1): a
     * drained partition is muted until its request is answered or fails
     * (P16). Off with acks=0, whose requests complete as they are sent. */
    bool guarantee_order;
    uint8_t *value;         /* owned: value.bytes of payload */
    uint8_t *value_scratch; /* owned: one record's value when they differ */
    uint64_t value_seed;    /* their random bytes (value.compressibility < 100) */
    int64_t ratio_ppm;      /* CompressionRatioEstimator, ppm */
    int32_t name_bytes;     /* strlen(config->name) */
    /* The parts of a record's size that are the same for every record (P14):
     * of record_size, the attributes, the value, the header count and the
     * header key with their varints; of record_size_upper_bound, those and
     * the batch header and MAX_RECORD_OVERHEAD. */
    int32_t record_fixed_bytes;
    int64_t upper_fixed_bytes;
    /* Key number -> its text and its partition by murmur2 (P14), filled at
     * the key's first use; NULL when key.count is 0 or above KEYS_CACHED_MAX. */
    struct key_entry *keys;
    int32_t keys_cached; /* key numbers 0 .. keys_cached - 1 */

    bool started;
    bool up;
    bool stopped;
    bool fed;        /* a processor's producer: records come from ks_producer_send_output */
    int64_t fed_key; /* the key number of the record being handed over */
    void (*listener)(void *context); /* told after each event (a processor's consumer) */
    void *listener_context;          /* not owned */

    /* workload */
    int64_t next_seq; /* records created so far, across incarnations */
    ks_time_ns base_ns;
    int64_t base_seq;
    ks_timer_id record_timer;
    ks_timer_id start_timer;
    ks_time_ns start_at_ns; /* start + its start.jitter draw; KS_TIME_NEVER until drawn */
    struct pwaiter waiter;

    /* sender */
    ks_timer_id sender_timer;
    ks_time_ns sender_at_ns;
    /* No batch's delivery deadline is earlier (0: not known): the earliest
     * one the last next_wakeup_ns saw, lowered by every batch made since.
     * Before it expire_batches has nothing to do and skips its pass (P9). */
    ks_time_ns expire_floor_ns;
    int64_t next_correlation_id; /* never reset: ids of earlier incarnations stay unknown */
    struct ppart *parts;         /* partition_count */
    struct pconn *conns;         /* broker_count, index = broker id - 1 */
    struct ks_sticky_partitioner sticky;
    int64_t reserved_bytes;
    /* RecordAccumulator.nodesDrainIndex, per broker (index id - 1): where
     * the next drain of the broker starts, a position in its led set, taken
     * modulo the set's size when read (the set may have changed since). */
    int32_t *drain_index;
    /* The partitions each broker leads as the producer's metadata says,
     * sorted (Cluster.partitionsForNode, which the drain index counts in;
     * P15), index = broker id - 1. */
    struct part_set *led_sets;
    /* The partitions with a non-empty queue (bit i of active_words: parts[i]),
     * so that the sender's passes visit only partitions that hold batches:
     * their cost follows the batches, not the topic's partition count (P7). */
    uint64_t *active_words; /* owned, (partition_count + 63) / 64 */
    int32_t active_count;
    bool sequences_flagged; /* some partition may have `unresolved` or `bump_required` set */
    /* The ready index (P10): every active partition is in one place, by its
     * head batch and leader (enum ready_place). Partitions whose head batch,
     * queue or leader changed are in dirty_ids until ready_refresh places
     * them again, so that a sender pass costs what changed and what is ready,
     * not what is queued (issue 16). */
    int32_t *dirty_ids; /* owned, partition_count; the first dirty_count are dirty */
    int32_t dirty_count;
    struct part_heap backoff_heap;
    struct part_heap linger_heap;
    struct part_set *ready_sets;  /* owned, broker_count, index = broker id - 1 */
    struct part_set *linger_sets; /* owned, broker_count, index = broker id - 1 */
    int32_t *walk_ids;            /* owned, partition_count: a drain's ready and lingering */
    int32_t leaderless_count;     /* active partitions without a known leader */
    ks_time_ns ready_as_of_ns;    /* the time of the last ready_refresh */
    /* The live batches (queued or in flight) in creation order, so that the
     * earliest delivery deadline is the first one's (P11). */
    struct pbatch *live_head; /* not owned */
    struct pbatch *live_tail; /* not owned */
    /* The brokers as the sender's passes ask for them (P12), so that a pass
     * visits the brokers that have something due, not all of them: */
    int32_t broker_words;                   /* (broker_count + 63) / 64 */
    uint64_t ready_bits[BROKER_WORDS];      /* a non-empty ready set */
    uint64_t linger_bits[BROKER_WORDS];     /* a non-empty lingering set */
    uint64_t connecting_bits[BROKER_WORDS]; /* a CONNECTING connection */
    uint64_t unready_bits[BROKER_WORDS];    /* a connection that is not READY */
    uint64_t reset_bits[BROKER_WORDS];      /* reset_pending */
    /* The requests in flight on every connection, in send order, which is
     * the order of their deadlines (P12). */
    struct prequest *request_oldest; /* not owned */
    struct prequest *request_newest; /* not owned */

    /* metadata */
    bool meta_known; /* one good answer seen in this incarnation */
    bool meta_need_update;
    ks_time_ns meta_refreshed_ns;
    ks_time_ns meta_attempt_ns;
    int32_t meta_failures;
    int64_t meta_request_id; /* 0: none in flight */
    int32_t meta_broker;
    ks_time_ns meta_deadline_ns;
    int32_t meta_avoid_broker;
    uint8_t broker_alive[KS_BROKER_COUNT_MAX];
    bool broker_alive_known;

    /* idempotence */
    int64_t producer_id; /* -1 until InitProducerId answers */
    int16_t producer_epoch;
    int64_t pid_request_id;
    int32_t pid_broker;
    ks_time_ns pid_deadline_ns;
    ks_time_ns pid_retry_at_ns;
    int32_t pid_failures;
    int32_t pid_avoid_broker;

    struct ptxn txn;

    /* Timeline lines of errors without a partition: at most one per second. */
    int64_t error_second;
    int64_t errors_suppressed;

    /* counters */
    int64_t acked_count;
    int64_t failed_count;
    int64_t unknown_count;
    int64_t pending_count; /* in the accumulator or in flight (not the waiter) */
    int64_t batches_sent;  /* batches put in Produce requests, retries included */
};

/* ---- small helpers ------------------------------------------------------ */

static ks_time_ns now_ns(const struct ks_producer *p)
{
    return ks_world_now_ns(p->world);
}

static ks_time_ns time_min(ks_time_ns a, ks_time_ns b)
{
    return a < b ? a : b;
}

static ks_time_ns time_add(ks_time_ns a, int64_t delta_ns)
{
    if (delta_ns < 0) {
        return a;
    }
    if (a == KS_TIME_NEVER || (uint64_t)delta_ns >= KS_TIME_NEVER - a) {
        return KS_TIME_NEVER;
    }
    return a + (uint64_t)delta_ns;
}

/* The length of ks_varint_encode's output (zigzag, 7 bits a byte), counted
 * from the highest set bit instead of encoding into a scratch buffer: six of
 * these per record sent were 5 % of the producer's cost (issue 16). */
static size_t varint_bytes(int64_t value)
{
    uint64_t code = ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
    int highest_bit = 63 - __builtin_clzll(code | 1);
    /* highest_bit / 7 without the division: (h * 37) >> 8 equals h / 7 for
     * every h in 0..63 (the only values clz gives here). */
    return (size_t)(((unsigned)highest_bit * 37u >> 8) + 1);
}

size_t ks_producer_record_size_bytes(int32_t offset_delta, int64_t timestamp_delta_ms,
                                     int32_t key_bytes, int32_t value_bytes,
                                     int32_t header_key_bytes, int32_t header_value_bytes)
{
    size_t body = 1; /* attributes */
    body += varint_bytes(timestamp_delta_ms);
    body += varint_bytes(offset_delta);
    body += varint_bytes(key_bytes);
    body += key_bytes > 0 ? (size_t)key_bytes : 0;
    body += varint_bytes(value_bytes);
    body += value_bytes > 0 ? (size_t)value_bytes : 0;
    body += varint_bytes(1); /* header count */
    body += varint_bytes(header_key_bytes) + (size_t)header_key_bytes;
    body += varint_bytes(header_value_bytes) + (size_t)header_value_bytes;
    return varint_bytes((int64_t)body) + body;
}

ks_time_ns ks_producer_retry_backoff_ns(int64_t retry_backoff_ns, int64_t retry_backoff_ns_max,
                                        int32_t retry_count, uint64_t random)
{
    /* KIP-580 (ExponentialBackoff): initial * 2^min(attempts, expMax) times a
     * factor uniform in [0.8, 1.2), capped at the maximum; constant when the
     * maximum does not exceed the initial value. attempts = retry_count - 1,
     * so the first retry waits about retry.backoff.ms. */
    ks_assert(retry_count >= 1);
    if (retry_backoff_ns <= 0) {
        return 0;
    }
    if (retry_backoff_ns_max <= retry_backoff_ns) {
        return (ks_time_ns)retry_backoff_ns;
    }
    uint64_t term = (uint64_t)retry_backoff_ns;
    for (int32_t i = 1; i < retry_count && term < (uint64_t)retry_backoff_ns_max; i++) {
        term *= 2;
    }
    if (term > (uint64_t)retry_backoff_ns_max) {
        term = (uint64_t)retry_backoff_ns_max;
    }
    uint64_t factor_ppm = 800000 + random % 400000;
    uint64_t backoff = (uint64_t)((unsigned __int128)term * factor_ppm / 1000000u);
    return backoff < (uint64_t)retry_backoff_ns_max ? backoff : (uint64_t)retry_backoff_ns_max;
}

/* The identity header's value "<producer name>:<seq>". */
static int32_t header_value_text(const struct ks_producer *p, int64_t seq, char *out,
                                 size_t out_bytes)
{
    ks_assert(seq >= 0);
    ks_assert((size_t)p->name_bytes + 1 + 20 < out_bytes);
    memcpy(out, p->config->name, (size_t)p->name_bytes);
    int32_t n = p->name_bytes;
    out[n++] = ':';
    n += ks_write_decimal(out + n, (uint64_t)seq);
    out[n] = '\0';
    return n;
}

#define KEY_PREFIX     "key-"
#define KEY_TEXT_BYTES 32
/* The largest key.count whose texts and partitions are cached (P14): 1 MiB. */
#define KEYS_CACHED_MAX 65536

/* A key's text ("key-<n>", n < KEYS_CACHED_MAX) and partition (P14). */
struct key_entry {
    int32_t partition;
    int32_t text_bytes; /* 0: not filled yet */
    char text[12];      /* "key-" and at most 5 digits, no terminator */
};

/* Keys are kept as numbers and written out only where the text is needed
 * (partitioning, encoding, reporting): no allocation per record. Returns
 * the text (in out) or NULL for a null key; *bytes_out gets its length or -1. */
static const char *key_text(int64_t key_number, char out[KEY_TEXT_BYTES], int32_t *bytes_out)
{
    if (key_number < 0) {
        *bytes_out = -1;
        return NULL;
    }
    int32_t n = (int32_t)strlen(KEY_PREFIX);
    memcpy(out, KEY_PREFIX, (size_t)n);
    n += ks_write_decimal(out + n, (uint64_t)key_number);
    out[n] = '\0';
    *bytes_out = n;
    return out;
}

/* The cached entry of a key number below keys_cached, filled at its first
 * use (P14: the text and murmur2 were two key_text calls and a hash per
 * record; a text_bytes of 0 marks an entry not filled yet). */
static void __attribute__((noinline))
key_entry_fill(const struct ks_producer *p, struct key_entry *entry, int64_t key_number)
{
    char text[KEY_TEXT_BYTES];
    int32_t text_bytes = 0;
    key_text(key_number, text, &text_bytes);
    ks_assert(text_bytes > 0 && (size_t)text_bytes <= sizeof(entry->text));
    memcpy(entry->text, text, (size_t)text_bytes);
    entry->text_bytes = text_bytes;
    entry->partition = ks_partitioner_key_partition(text, (size_t)text_bytes, p->partition_count);
}

static inline const struct key_entry *key_entry_of(struct ks_producer *p, int64_t key_number)
{
    struct key_entry *entry = &p->keys[key_number];
    if (entry->text_bytes == 0) {
        key_entry_fill(p, entry, key_number);
    }
    return entry;
}

/* key_text, from the cache when the key number is in it (then the text is
 * the entry's, not out, and has no terminator). */
static const char *key_text_cached(struct ks_producer *p, int64_t key_number,
                                   char out[KEY_TEXT_BYTES], int32_t *bytes_out)
{
    if (key_number >= 0 && key_number < p->keys_cached) {
        const struct key_entry *entry = key_entry_of(p, key_number);
        *bytes_out = entry->text_bytes;
        return entry->text;
    }
    return key_text(key_number, out, bytes_out);
}

static int32_t key_bytes_of(int64_t key_number)
{
    if (key_number < 0) {
        return -1;
    }
    return (int32_t)strlen(KEY_PREFIX) + ks_decimal_digits((uint64_t)key_number);
}

/* The length of header_value_text's output, without formatting it. */
static int32_t header_value_bytes_of(const struct ks_producer *p, int64_t seq)
{
    ks_assert(seq >= 0);
    return p->name_bytes + 1 + ks_decimal_digits((uint64_t)seq);
}

/* CompressionRatioEstimator's steps, in ppm of a ratio of 1. */
#define RATIO_PPM_ONE              INT64_C(1000000)
#define RATIO_IMPROVING_STEP_PPM   INT64_C(5000)  /* COMPRESSION_RATIO_IMPROVING_STEP 0.005 */
#define RATIO_DETERIORATE_STEP_PPM INT64_C(50000) /* COMPRESSION_RATIO_DETERIORATE_STEP 0.05 */

static uint64_t splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

void ks_producer_value_fill(uint64_t seed, int64_t seq, int32_t random_percent, uint8_t *value,
                            int32_t value_bytes)
{
    ks_assert(random_percent >= 0 && random_percent <= 100);
    int32_t text_bytes = (int32_t)((int64_t)value_bytes * (100 - random_percent) / 100);
    for (int32_t i = 0; i < text_bytes; i++) {
        value[i] = (uint8_t)('a' + i % 26);
    }
    /* A pure function of (seed, seq): a record re-encoded for a retry gets
     * the same bytes. */
    uint64_t state = seed ^ ((uint64_t)seq * UINT64_C(0xD1B54A32D192ED03));
    for (int32_t i = text_bytes; i < value_bytes; i += 8) {
        uint64_t random = splitmix64_next(&state);
        for (int32_t b = 0; b < 8 && i + b < value_bytes; b++) {
            value[i + b] = (uint8_t)(random >> (8 * b));
        }
    }
}

/* ks_producer_record_size_bytes with the fixed part computed once
 * (record_fixed_bytes, P14): the varints that vary per record only. */
static int32_t record_size(const struct ks_producer *p, const struct precord *record,
                           int32_t offset_delta, int64_t base_timestamp_ms)
{
    int32_t key_bytes = key_bytes_of(record->key_number);
    int32_t header_value_bytes = header_value_bytes_of(p, record->seq);
    int64_t timestamp_delta_ms = record->timestamp_ms - base_timestamp_ms;
    size_t body = (size_t)p->record_fixed_bytes + varint_bytes(timestamp_delta_ms) +
                  varint_bytes(offset_delta) + varint_bytes(key_bytes) +
                  (key_bytes > 0 ? (size_t)key_bytes : 0) + varint_bytes(header_value_bytes) +
                  (size_t)header_value_bytes;
    size_t size = varint_bytes((int64_t)body) + body;
#ifdef KS_DEBUG
    ks_assert(size == ks_producer_record_size_bytes(
                          offset_delta, timestamp_delta_ms, key_bytes, p->config->value_bytes,
                          (int32_t)strlen(KS_IDENTITY_HEADER), header_value_bytes));
#endif
    return (int32_t)size;
}

/* AbstractRecords.estimateSizeInBytesUpperBound for magic v2, the size
 * KafkaProducer.doSend checks against max.request.size and buffer.memory
 * (ensureValidRecordSize): a batch header, DefaultRecord.MAX_RECORD_OVERHEAD
 * (21: the largest varints of length, deltas and attributes) and the key,
 * value and header fields with their length varints. */
#define RECORD_OVERHEAD_BYTES_MAX 21

static int64_t record_upper_fixed_bytes(const struct ks_producer *p)
{
    int32_t value_bytes = p->config->value_bytes;
    int32_t header_key_bytes = (int32_t)strlen(KS_IDENTITY_HEADER);
    int64_t size = KS_BATCH_HEADER_BYTES + RECORD_OVERHEAD_BYTES_MAX;
    size += (int64_t)varint_bytes(value_bytes) + (value_bytes > 0 ? value_bytes : 0);
    size += (int64_t)varint_bytes(1);
    size += (int64_t)varint_bytes(header_key_bytes) + header_key_bytes;
    return size;
}

static int64_t record_size_upper_bound(const struct ks_producer *p, const struct precord *record)
{
    int32_t key_bytes = key_bytes_of(record->key_number);
    int32_t header_value_bytes = header_value_bytes_of(p, record->seq);
    int64_t size = p->upper_fixed_bytes;
    size += (int64_t)varint_bytes(key_bytes) + (key_bytes > 0 ? key_bytes : 0);
    size += (int64_t)varint_bytes(header_value_bytes) + header_value_bytes;
    return size;
}

/* ---- reporting -------------------------------------------------------------- */

/* batch: the batch the record ended in, or NULL (it never got into one). */
static void report_record(struct ks_producer *p, const struct pbatch *batch,
                          const struct precord *record, int32_t partition, int64_t offset,
                          enum ks_record_outcome_kind outcome)
{
    switch (outcome) {
    case KS_OUTCOME_ACKED: p->acked_count++; break;
    case KS_OUTCOME_FAILED: p->failed_count++; break;
    case KS_OUTCOME_UNKNOWN: p->unknown_count++; break;
    }
    if (outcome != KS_OUTCOME_ACKED && p->txn.enabled) {
        /* TransactionManager.handleFailedBatch: an abortable error; the
         * commit fails and the application aborts. */
        p->txn.failed = true;
    }
    if (p->observer == NULL || p->observer->on_record == NULL) {
        return;
    }
    char key[KEY_TEXT_BYTES];
    int32_t key_bytes = 0;
    struct ks_record_outcome out = {
        .producer_index = p->index,
        .seq = record->seq,
        .key = key_text(record->key_number, key, &key_bytes),
        .topic_index = p->config->topic_index,
        .partition = partition,
        .offset = offset,
        .sent_ns = record->sent_ns,
        .acked_ns = now_ns(p),
        .outcome = outcome,
        .acked_broker = batch != NULL && outcome == KS_OUTCOME_ACKED ? batch->acked_broker : -1,
        .acked_leader_epoch =
            batch != NULL && outcome == KS_OUTCOME_ACKED ? batch->acked_leader_epoch : -1,
    };
    p->observer->on_record(p->observer->context, &out);
}

/* At most one timeline line per partition per simulated second; records
 * of lines suppressed in between are counted in the next one. partition may
 * be -1; error is the Kafka error behind `reason`, KS_ERR_NONE if none. */
static void report_error(struct ks_producer *p, int32_t partition, int64_t record_count,
                         enum ks_record_outcome_kind outcome, enum ks_event_reason reason,
                         int16_t error)
{
    int64_t second = (int64_t)(now_ns(p) / KS_NS_PER_S);
    struct ppart *part = partition >= 0 ? &p->parts[partition] : NULL;
    int64_t *error_second = part != NULL ? &part->error_second : &p->error_second;
    int64_t *suppressed = part != NULL ? &part->errors_suppressed : &p->errors_suppressed;
    if (*error_second == second) {
        *suppressed += record_count;
        return;
    }
    *error_second = second;
    if (p->observer == NULL || p->observer->on_event == NULL) {
        return;
    }
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, now_ns(p), KS_EV_PRODUCER_ERROR);
    event.reason = reason;
    event.producer_index = p->index;
    event.topic_index = p->config->topic_index;
    event.partition = partition;
    event.error_code = error;
    event.record_count = record_count;
    event.outcome = outcome;
    event.suppressed_count = *suppressed;
    *suppressed = 0;
    p->observer->on_event(p->observer->context, &event);
}

/* ---- batches ------------------------------------------------------------------ */

/* Keeps p->expire_floor_ns at or before the batch's delivery deadline. */
static void expire_floor_lower(struct ks_producer *p, const struct pbatch *batch)
{
    p->expire_floor_ns =
        time_min(p->expire_floor_ns, time_add(batch->created_ns, p->config->delivery_timeout_ns));
}

/* Links a new batch into the live list (P11) after `after`, or first when
 * `after` is NULL. */
static void live_link(struct ks_producer *p, struct pbatch *batch, struct pbatch *after)
{
    batch->live_prev = after;
    batch->live_next = after != NULL ? after->live_next : p->live_head;
    if (batch->live_next != NULL) {
        batch->live_next->live_prev = batch;
    } else {
        p->live_tail = batch;
    }
    if (after != NULL) {
        after->live_next = batch;
    } else {
        p->live_head = batch;
    }
}

static void live_unlink(struct ks_producer *p, struct pbatch *batch)
{
    if (batch->live_prev != NULL) {
        batch->live_prev->live_next = batch->live_next;
    } else {
        p->live_head = batch->live_next;
    }
    if (batch->live_next != NULL) {
        batch->live_next->live_prev = batch->live_prev;
    } else {
        p->live_tail = batch->live_prev;
    }
    batch->live_prev = NULL;
    batch->live_next = NULL;
}

/* A new batch, created now: last in the live list, whose batches were all
 * created at or before now (P11). */
static struct pbatch *batch_new(struct ks_producer *p, int32_t partition, int64_t reserve_bytes)
{
    struct pbatch *batch = calloc(1, sizeof(*batch));
    ks_assert(batch != NULL);
    batch->partition = partition;
    batch->records = &batch->first_record;
    batch->record_capacity = 1;
    batch->size_bytes = KS_BATCH_HEADER_BYTES;
    batch->ratio_ppm = p->ratio_ppm;
    batch->reserved_bytes = reserve_bytes;
    batch->created_ns = now_ns(p);
    expire_floor_lower(p, batch);
    batch->producer_id = -1;
    batch->producer_epoch = -1;
    batch->base_sequence = -1;
    batch->encoded_sequence = -1;
    batch->acked_broker = -1;
    batch->acked_leader_epoch = -1;
    batch->sent_leader_epoch = -1;
    batch->queue_link.data = batch;
    live_link(p, batch, p->live_tail);
    p->reserved_bytes += reserve_bytes;
    return batch;
}

/* The batch's own link for its partition's queue, which it is not in: a
 * queued batch allocates no link of its own (a GQueue push did, issue 16). */
static GList *batch_link(struct pbatch *batch)
{
    ks_assert(batch->queue_link.prev == NULL && batch->queue_link.next == NULL);
    return &batch->queue_link;
}

/* Frees the batch and its records, and gives back its memory. The
 * records must have been reported (or be reported by the caller first). */
static void batch_free(struct ks_producer *p, struct pbatch *batch)
{
    if (batch == NULL) {
        return;
    }
    if (batch->records != &batch->first_record) {
        free(batch->records);
    }
    if (batch->encoded != NULL) {
        g_byte_array_unref(batch->encoded);
    }
    live_unlink(p, batch);
    ks_assert(batch->queue_link.prev == NULL && batch->queue_link.next == NULL); /* P3 */
    p->reserved_bytes -= batch->reserved_bytes;
    ks_assert(p->reserved_bytes >= 0); /* P4 */
    free(batch);
}

/* Appends a copy of record to the batch's records. */
static void batch_add_record(struct pbatch *batch, const struct precord *record)
{
    if (batch->record_count == batch->record_capacity) {
        int32_t capacity = batch->record_capacity < 8 ? 8 : batch->record_capacity * 2;
        size_t bytes = (size_t)capacity * sizeof(*batch->records);
        struct precord *grown;
        if (batch->records == &batch->first_record) {
            grown = malloc(bytes);
            ks_assert(grown != NULL);
            grown[0] = batch->first_record;
        } else {
            grown = realloc(batch->records, bytes);
            ks_assert(grown != NULL);
        }
        batch->records = grown;
        batch->record_capacity = capacity;
    }
    batch->records[batch->record_count++] = *record;
}

static int32_t batch_last_sequence(const struct pbatch *batch)
{
    return batch->base_sequence + batch->record_count - 1;
}

static void sequenced_remove(struct ppart *part, struct pbatch *batch)
{
    if (batch->base_sequence >= 0) {
        g_ptr_array_remove(part->sequenced, batch);
    }
}

/* Reports every record of a batch that ends and frees it. The batch must
 * not be in a queue any more; a request that still names it is detached. */
static void batch_end(struct ks_producer *p, struct pbatch *batch,
                      enum ks_record_outcome_kind outcome, int64_t base_offset)
{
    struct ppart *part = &p->parts[batch->partition];
    if (batch->entry != NULL) {
        batch->entry->batch = NULL; /* the request keeps its slot until answered */
        batch->entry = NULL;
    }
    if (outcome != KS_OUTCOME_ACKED && batch->base_sequence >= 0 &&
        batch->producer_id == p->producer_id && batch->producer_epoch == p->producer_epoch) {
        /* The sequence range is now a hole or in doubt (TransactionManager
         * handleFailedBatch / markSequenceUnresolved). */
        if (batch->maybe_written) {
            int32_t last = batch_last_sequence(batch);
            if (!part->unresolved || last > part->unresolved_last_sequence) {
                part->unresolved_last_sequence = last;
            }
            part->unresolved = true;
            p->sequences_flagged = true;
        } else {
            part->bump_required = true;
            p->sequences_flagged = true;
        }
    }
    sequenced_remove(part, batch);
    for (int32_t i = 0; i < batch->record_count; i++) {
        const struct precord *record = &batch->records[i];
        int64_t offset = base_offset >= 0 ? base_offset + (int64_t)i : -1;
        report_record(p, batch, record, batch->partition, offset, outcome);
    }
    p->pending_count -= (int64_t)batch->record_count;
    ks_assert(p->pending_count >= 0); /* P1 */
    batch_free(p, batch);
}

static enum ks_record_outcome_kind unacked_outcome(const struct pbatch *batch)
{
    return batch->maybe_written ? KS_OUTCOME_UNKNOWN : KS_OUTCOME_FAILED;
}

/* ---- the active partitions (P7) ------------------------------------------------------ */

/* Marks a partition for the sender's ready index (P10): its queue, its
 * head batch or its leader changed, so ready_refresh places it again. */
static void ready_mark(struct ks_producer *p, int32_t partition)
{
    struct ppart *part = &p->parts[partition];
    if (!part->dirty) {
        part->dirty = true;
        p->dirty_ids[p->dirty_count++] = partition;
    }
}

/* Sender.sendProducerData with guaranteeMessageOrder mutes every
 * partition it drained (RecordAccumulator.mutePartition): until the
 * request's answer, it is neither ready nor drained (P16). */
static void partition_mute(struct ks_producer *p, int32_t partition)
{
    struct ppart *part = &p->parts[partition];
    ks_assert(p->guarantee_order);
    ks_assert(!part->muted); /* P16: a muted partition is never drained */
    part->muted = true;
    ready_mark(p, partition);
}

/* Sender.completeBatch's last step (unmutePartition), for the partition's
 * entry of a request that got its answer or failed (a timeout or a
 * disconnect), whether its batch is still there or not: a batch that
 * delivery.timeout.ms ended in flight (Sender.failBatch) leaves its
 * partition muted until then, as in Kafka. */
static void partition_unmute(struct ks_producer *p, int32_t partition)
{
    struct ppart *part = &p->parts[partition];
    if (part->muted) {
        part->muted = false;
        ready_mark(p, partition);
    }
}

static void set_insert(struct part_set *set, int32_t partition);
static void set_remove(struct part_set *set, int32_t partition);

/* Sets what the producer knows of a partition's leader (-1: none) and
 * leader epoch, keeping the brokers' led sets (P15), and marks it for the
 * ready index when either changed. */
static void set_leader(struct ks_producer *p, int32_t partition, int32_t leader,
                       int32_t leader_epoch)
{
    struct ppart *part = &p->parts[partition];
    ks_assert(leader == -1 || (leader >= 1 && leader <= p->broker_count));
    if (leader == part->leader && leader_epoch == part->leader_epoch) {
        return;
    }
    if (leader != part->leader) {
        if (part->leader >= 1) {
            set_remove(&p->led_sets[part->leader - 1], partition);
        }
        if (leader >= 1) {
            set_insert(&p->led_sets[leader - 1], partition);
        }
    }
    part->leader = leader;
    part->leader_epoch = leader_epoch;
    ready_mark(p, partition); /* another leader, or a new epoch that ends a KIP-951 backoff */
}

/* Call after every change to parts[partition].queue. */
static void active_update(struct ks_producer *p, int32_t partition)
{
    uint64_t *word = &p->active_words[partition / 64];
    uint64_t bit = UINT64_C(1) << (partition % 64);
    bool active = !g_queue_is_empty(&p->parts[partition].queue);
    if (active != ((*word & bit) != 0)) {
        *word ^= bit;
        p->active_count += active ? 1 : -1;
    }
    ready_mark(p, partition); /* the head or the queue's length may have changed */
}

/* The first index >= from, below count, whose bit is set in words (bit
 * i % 64 of word i / 64), or -1: the walk of the active partitions and of
 * the sets of brokers. */
static int32_t bits_first(const uint64_t *words, int32_t count, int32_t from)
{
    if (from >= count) {
        return -1;
    }
    int32_t index = from / 64;
    uint64_t word = words[index] & (~UINT64_C(0) << (from % 64));
    int32_t word_count = (count + 63) / 64;
    while (word == 0) {
        if (++index >= word_count) {
            return -1;
        }
        word = words[index];
    }
    int32_t found = index * 64 + __builtin_ctzll(word);
    return found < count ? found : -1;
}

/* The first active partition >= from, or -1. */
static int32_t active_next(const struct ks_producer *p, int32_t from)
{
    return p->active_count == 0 ? -1 : bits_first(p->active_words, p->partition_count, from);
}

/* ---- sets of brokers (P12) ---------------------------------------------------------- */

static void bits_put(uint64_t *words, int32_t broker, bool on)
{
    uint64_t bit = UINT64_C(1) << ((broker - 1) % 64);
    if (on) {
        words[(broker - 1) / 64] |= bit;
    } else {
        words[(broker - 1) / 64] &= ~bit;
    }
}

static bool bits_has(const uint64_t *words, int32_t broker)
{
    return (words[(broker - 1) / 64] >> ((broker - 1) % 64)) & 1;
}

/* The first broker >= from in the set, or -1. */
static int32_t bits_next(const struct ks_producer *p, const uint64_t *words, int32_t from)
{
    int32_t index = bits_first(words, p->broker_count, from - 1);
    return index < 0 ? -1 : index + 1;
}

/* ---- connections ------------------------------------------------------------------- */

/* Every change of a connection's state goes through here (P12). */
static void conn_set_state(struct ks_producer *p, int32_t broker, enum conn_state state)
{
    p->conns[broker - 1].state = state;
    bits_put(p->connecting_bits, broker, state == CONN_CONNECTING);
    bits_put(p->unready_bits, broker, state != CONN_READY);
}

static void conn_set_reset(struct ks_producer *p, int32_t broker, bool pending)
{
    p->conns[broker - 1].reset_pending = pending;
    bits_put(p->reset_bits, broker, pending);
}

/* Whether the broker's process is up: a connect to a crashed broker is
 * refused at once. A cut-off or paused broker looks up; a connect to it gets
 * no answer and fails at the setup timeout, as over a real network. */
static bool broker_up(const struct ks_producer *p, int32_t broker)
{
    return ks_world_node_is_up(p->world, (ks_node_id)broker);
}

/* ExponentialBackoff(initial, 2, max, 0.2).backoff(attempts), one draw from
 * the client stream (ks_producer_retry_backoff_ns computes the same series,
 * from its first retry). */
static ks_time_ns conn_backoff_ns(struct ks_producer *p, int64_t initial_ns, int64_t max_ns,
                                  int32_t attempts)
{
    uint64_t draw = ks_world_random_u64(p->world, KS_RNG_CLIENT);
    return ks_producer_retry_backoff_ns(initial_ns, max_ns, attempts + 1, draw);
}

static ks_time_ns reconnect_backoff(struct ks_producer *p, int32_t attempts)
{
    return conn_backoff_ns(p, p->config->reconnect_backoff_ns, p->config->reconnect_backoff_ns_max,
                           attempts);
}

static ks_time_ns setup_timeout(struct ks_producer *p, int32_t attempts)
{
    return conn_backoff_ns(p, p->config->connection_setup_timeout_ns,
                           p->config->connection_setup_timeout_ns_max, attempts);
}

/* ClusterConnectionStates.canConnect: disconnected, and the reconnect
 * backoff since the last attempt is over (a node never tried can connect). */
static bool conn_can_connect(const struct pconn *conn, ks_time_ns now)
{
    return conn->state == CONN_DISCONNECTED &&
           (!conn->attempted ||
            now >= time_add(conn->last_attempt_ns, (int64_t)conn->reconnect_backoff_ns));
}

/* TCP resends an unanswered SYN after 1 s, then at doubling intervals
 * (Linux: initial RTO 1 s, tcp_syn_retries), so a connect into a cut that
 * heals completes at the next retransmission, while the setup timeout is not
 * over. The time of the connect's next send, n sends in. */
static ks_time_ns syn_retransmit_ns(const struct pconn *conn)
{
    int32_t sends = conn->syn_count < 30 ? conn->syn_count : 30;
    int64_t after_ns = ((INT64_C(1) << sends) - 1) * (int64_t)KS_NS_PER_S;
    return time_add(conn->last_attempt_ns, after_ns);
}

static ks_time_ns setup_deadline_ns(const struct pconn *conn)
{
    return time_add(conn->last_attempt_ns, (int64_t)conn->setup_timeout_ns + 1);
}

/* When the connection can next change by itself: a SYN retransmission, the
 * end of its setup timeout (isConnectionSetupTimeout is strictly later) or of
 * its reconnect backoff; KS_TIME_NEVER when ready. */
static ks_time_ns conn_wakeup_ns(const struct pconn *conn, ks_time_ns now)
{
    switch (conn->state) {
    case CONN_READY: return KS_TIME_NEVER;
    case CONN_CONNECTING: return time_min(syn_retransmit_ns(conn), setup_deadline_ns(conn));
    case CONN_DISCONNECTED:
        return conn->attempted
                   ? time_add(conn->last_attempt_ns, (int64_t)conn->reconnect_backoff_ns)
                   : now;
    }
    return KS_TIME_NEVER;
}

static void conn_disconnect(struct ks_producer *p, int32_t broker, ks_time_ns now,
                            enum ks_event_reason reason);

/* One send of a connect's probe (the same id each time: the first answer
 * makes the connection ready, later ones are ignored). */
static void conn_send_syn(struct ks_producer *p, int32_t broker)
{
    struct pconn *conn = &p->conns[broker - 1];
    ks_assert(conn->state == CONN_CONNECTING);
    struct ks_api_versions_request request;
    memset(&request, 0, sizeof(request));
    request.correlation_id = conn->connect_id;
    conn->syn_count++;
    ks_world_send(p->world, p->node, (ks_node_id)broker, KS_MSG_API_VERSIONS_REQUEST, &request,
                  sizeof(request));
}

/* NetworkClient.initiateConnect: TCP connect, then ApiVersions; ksim sends
 * the ApiVersions request at once and lets its round trip stand for the
 * handshake too. A broker whose process is down refuses the connect: a
 * failed attempt at once. */
static void conn_connect(struct ks_producer *p, int32_t broker, ks_time_ns now)
{
    struct pconn *conn = &p->conns[broker - 1];
    ks_assert(conn->state == CONN_DISCONNECTED);
    if (!conn->attempted) {
        /* ClusterConnectionStates.connecting creates the node's state. */
        conn->attempted = true;
        conn->reconnect_backoff_ns = reconnect_backoff(p, 0);
        conn->setup_timeout_ns = setup_timeout(p, 0);
    }
    conn_set_state(p, broker, CONN_CONNECTING);
    conn->last_attempt_ns = now;
    if (!broker_up(p, broker)) {
        conn_disconnect(p, broker, now, KS_REASON_CONNECTION_REFUSED);
        return;
    }
    conn->connect_id = ++p->next_correlation_id;
    conn->syn_count = 0;
    conn_send_syn(p, broker);
}

/* NetworkClient.ready: true when the connection can take a request; starts
 * a connect when it may (the caller has something to send there). */
static bool conn_ready(struct ks_producer *p, int32_t broker, ks_time_ns now)
{
    struct pconn *conn = &p->conns[broker - 1];
    if (conn->state == CONN_READY) {
        return true;
    }
    if (conn_can_connect(conn, now)) {
        conn_connect(p, broker, now);
    }
    return conn->state == CONN_READY;
}

static void on_api_versions_response(struct ks_producer *p, ks_node_id source, const void *message,
                                     size_t bytes)
{
    ks_assert(bytes == sizeof(struct ks_api_versions_response)); /* see producer_receive */
    ks_assert(source >= 1 && source <= (ks_node_id)p->broker_count);
    const struct ks_api_versions_response *response = message;
    struct pconn *conn = &p->conns[source - 1];
    if (conn->state != CONN_CONNECTING || response->correlation_id != conn->connect_id) {
        return; /* an answer to an attempt that already failed */
    }
    /* ClusterConnectionStates.ready: both backoffs start over. */
    conn_set_state(p, (int32_t)source, CONN_READY);
    conn->connect_id = 0;
    conn->failed_attempts = 0;
    conn->reconnect_backoff_ns = reconnect_backoff(p, 0);
    conn->failed_connect_attempts = 0;
    conn->setup_timeout_ns = setup_timeout(p, 0);
}

/* ---- metadata and broker choice -------------------------------------------------- */

/* A broker for Metadata or InitProducerId (Kafka: leastLoadedNode, which
 * prefers a ready connection and skips nodes it cannot connect to): uniform
 * among the brokers that are up, that the last metadata called alive and
 * whose connection is ready, then among those up, alive and not in reconnect
 * backoff, then among those up, then among all; never `avoid` (the one that
 * just failed) when there is a choice. */
static int32_t pick_broker(struct ks_producer *p, int32_t avoid)
{
    int32_t *candidates = g_newa(int32_t, (gsize)p->broker_count);
    int32_t count = 0;
    ks_time_ns now = now_ns(p);
    for (int32_t pass = 0; pass < 4 && count == 0; pass++) {
        for (int32_t id = 1; id <= p->broker_count; id++) {
            const struct pconn *conn = &p->conns[id - 1];
            if (id == avoid && p->broker_count > 1) {
                continue;
            }
            if (pass <= 1 && p->broker_alive_known && !p->broker_alive[id - 1]) {
                continue;
            }
            if (pass == 0 && conn->state != CONN_READY) {
                continue;
            }
            if (pass == 1 && conn->state == CONN_DISCONNECTED && !conn_can_connect(conn, now)) {
                continue;
            }
            if (pass <= 2 && !broker_up(p, id)) {
                continue;
            }
            candidates[count++] = id;
        }
    }
    ks_assert(count > 0);
    uint64_t draw = ks_world_random_below(p->world, KS_RNG_CLIENT, (uint64_t)count);
    return candidates[draw];
}

static void request_metadata_update(struct ks_producer *p)
{
    p->meta_need_update = true;
}

static ks_time_ns metadata_backoff_ns(const struct ks_producer *p)
{
    /* Metadata refresh backoff: retry.backoff.ms, doubled per consecutive
     * failure up to retry.backoff.max.ms (without jitter, a simplification). */
    int64_t backoff = p->config->retry_backoff_ns;
    for (int32_t i = 0; i < p->meta_failures && backoff < p->config->retry_backoff_ns_max; i++) {
        backoff *= 2;
    }
    if (backoff > p->config->retry_backoff_ns_max && p->config->retry_backoff_ns_max > 0) {
        backoff = p->config->retry_backoff_ns_max;
    }
    return backoff > 0 ? (ks_time_ns)backoff : 0;
}

static ks_time_ns metadata_due_ns(const struct ks_producer *p)
{
    if (p->meta_request_id != 0) {
        return KS_TIME_NEVER;
    }
    if (!p->meta_known || p->meta_need_update) {
        if (p->meta_attempt_ns == KS_TIME_NEVER) {
            return 0;
        }
        return time_add(p->meta_attempt_ns, (int64_t)metadata_backoff_ns(p));
    }
    return time_add(p->meta_refreshed_ns, p->config->metadata_max_age_ns);
}

/* A metadata update that is due goes to a broker picked once per attempt
 * (meta_broker) and waits for that broker's connection. */
static void maybe_send_metadata(struct ks_producer *p, ks_time_ns now)
{
    if (metadata_due_ns(p) > now) {
        return;
    }
    if (p->meta_broker < 0) {
        p->meta_broker = pick_broker(p, p->meta_avoid_broker);
    }
    int32_t broker = p->meta_broker;
    if (!conn_ready(p, broker, now)) {
        return; /* connecting (or refused: conn_disconnect dropped the target) */
    }
    struct ks_metadata_request request;
    memset(&request, 0, sizeof(request));
    request.correlation_id = ++p->next_correlation_id;
    request.topic_index = p->config->topic_index;
    p->meta_request_id = request.correlation_id;
    p->meta_attempt_ns = now;
    p->meta_deadline_ns = time_add(now, p->config->request_timeout_ns);
    ks_world_send(p->world, p->node, (ks_node_id)broker, KS_MSG_METADATA_REQUEST, &request,
                  sizeof(request));
}

/* The end of a metadata attempt that got no good answer: back off, and pick
 * another broker next time. */
static void metadata_failed(struct ks_producer *p, ks_time_ns now)
{
    p->meta_request_id = 0;
    p->meta_failures++;
    p->meta_attempt_ns = now;
    p->meta_avoid_broker = p->meta_broker;
    p->meta_broker = -1;
}

static void on_metadata_response(struct ks_producer *p, const void *message, size_t bytes)
{
    struct ks_metadata_response decoded;
    const struct ks_metadata_response *response = &decoded;
    size_t head = ks_proto_metadata_decode(message, bytes, &decoded); /* see producer_receive */
    ks_assert(response->partition_count >= 0);
    ks_assert(bytes ==
              head + (size_t)response->partition_count * sizeof(struct ks_metadata_partition));
    if (response->correlation_id != p->meta_request_id || p->meta_request_id == 0) {
        return; /* a late answer to a request that already timed out */
    }
    if (response->error_code != KS_ERR_NONE) {
        metadata_failed(p, now_ns(p));
        return;
    }
    p->meta_request_id = 0;
    p->meta_broker = -1;
    const struct ks_metadata_partition *entries =
        (const struct ks_metadata_partition *)((const uint8_t *)message + head);
    bool missing_leader = false;
    for (int32_t i = 0; i < response->partition_count; i++) {
        int32_t partition = entries[i].partition;
        ks_assert(partition >= 0 && partition < p->partition_count); /* of our topic */
        struct ppart *part = &p->parts[partition];
        if (p->spec->cluster->client_leader_epochs && part->leader_epoch >= 0 &&
            entries[i].leader_epoch < part->leader_epoch) {
            /* KIP-320: Metadata.updateLatestMetadata keeps what it has when
             * a broker with stale metadata answers with an older epoch. */
            missing_leader |= part->leader < 0;
            continue;
        }
        int32_t leader =
            entries[i].leader >= 1 && entries[i].leader <= p->broker_count ? entries[i].leader : -1;
        set_leader(p, partition, leader, entries[i].leader_epoch);
        missing_leader |= part->leader < 0;
    }
    if (response->broker_count > 0) {
        int32_t count = response->broker_count < KS_BROKER_COUNT_MAX ? response->broker_count
                                                                     : KS_BROKER_COUNT_MAX;
        memset(p->broker_alive, 0, sizeof(p->broker_alive));
        memcpy(p->broker_alive, response->broker_alive, (size_t)count);
        p->broker_alive_known = true;
    }
    p->meta_known = true;
    p->meta_failures = 0;
    p->meta_refreshed_ns = now_ns(p);
    p->meta_avoid_broker = -1;
    /* Kafka keeps asking while a partition it has data for has no leader;
     * asking whenever any has none is close enough (bounded by the backoff). */
    p->meta_need_update = missing_leader;
}

/* ---- idempotence -------------------------------------------------------------------- */

/* InitProducerId goes to a broker picked once per attempt (pid_broker) and
 * waits for its connection, as metadata does. */
static void maybe_send_init_producer_id(struct ks_producer *p, ks_time_ns now)
{
    if (!p->idempotent || p->txn.enabled || p->producer_id >= 0 || p->pid_request_id != 0 ||
        now < p->pid_retry_at_ns) {
        return; /* a transactional producer asks its coordinator (txn_step) */
    }
    if (p->pid_broker < 0) {
        p->pid_broker = pick_broker(p, p->pid_avoid_broker);
    }
    int32_t broker = p->pid_broker;
    if (!conn_ready(p, broker, now)) {
        return;
    }
    struct ks_init_producer_id_request request;
    memset(&request, 0, sizeof(request));
    request.correlation_id = ++p->next_correlation_id;
    p->pid_request_id = request.correlation_id;
    p->pid_deadline_ns = time_add(now, p->config->request_timeout_ns);
    ks_world_send(p->world, p->node, (ks_node_id)broker, KS_MSG_INIT_PRODUCER_ID_REQUEST, &request,
                  sizeof(request));
}

static void init_producer_id_failed(struct ks_producer *p)
{
    p->pid_request_id = 0;
    p->pid_failures++;
    p->pid_avoid_broker = p->pid_broker;
    p->pid_broker = -1;
    uint64_t draw = ks_world_random_u64(p->world, KS_RNG_CLIENT);
    p->pid_retry_at_ns =
        time_add(now_ns(p), (int64_t)ks_producer_retry_backoff_ns(p->config->retry_backoff_ns,
                                                                  p->config->retry_backoff_ns_max,
                                                                  p->pid_failures, draw));
}

static void on_init_producer_id_response(struct ks_producer *p, const void *message, size_t bytes)
{
    ks_assert(bytes == sizeof(struct ks_init_producer_id_response)); /* see producer_receive */
    const struct ks_init_producer_id_response *response = message;
    if (p->pid_request_id == 0 || response->correlation_id != p->pid_request_id) {
        return;
    }
    if (response->error_code != KS_ERR_NONE) {
        init_producer_id_failed(p);
        return;
    }
    p->pid_request_id = 0;
    p->pid_broker = -1;
    p->pid_failures = 0;
    p->producer_id = response->producer_id;
    p->producer_epoch = response->producer_epoch;
}

/* ---- transactions (TransactionManager, KIP-98) ------------------------------------ */

/* The transaction manager runs one coordinator request at a time, as
 * TransactionManager's pendingRequests queue does: FindCoordinator(TRANSACTION)
 * to any broker, InitProducerId (initTransactions), AddPartitionsToTxn before
 * the first batch of a partition in a transaction (RecordAccumulator holds
 * that partition's batches until it is added: isSendToPartitionAllowed), and
 * EndTxn once commitTransaction()/abortTransaction() has flushed every record
 * of the transaction. Retriable coordinator errors (NOT_COORDINATOR,
 * COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
 * CONCURRENT_TRANSACTIONS) retry after retry.backoff.ms (NOT_COORDINATOR and
 * COORDINATOR_NOT_AVAILABLE look the coordinator up again); PRODUCER_FENCED,
 * INVALID_PRODUCER_EPOCH and INVALID_TXN_STATE are fatal
 * (ProducerFencedException): the application closes the producer. ksim's
 * application loop: beginTransaction() before the first record of a
 * transaction, commitTransaction() after transaction.records records (or
 * abortTransaction() when its draw against transaction.abort.rate says so, or
 * when a record of it failed); it also ends the transaction it is in when the
 * workload ends, before close(). Simplifications: abortTransaction() also
 * waits for the records already sent (Kafka aborts queued batches at once);
 * one partition per AddPartitionsToTxn (Kafka batches the new partitions). */

static bool workload_done(const struct ks_producer *p);
static void schedule_next_record(struct ks_producer *p);
static void drop_all(struct ks_producer *p, bool report);

/* transaction.version 2 (KIP-890 part 2; TransactionManager
 * .isTransactionV2Enabled, from the brokers' finalized features): implicit
 * partition adds, and the epoch EndTxn returns used for the next
 * transaction. */
static bool txn_v2(const struct ks_producer *p)
{
    return p->spec->cluster->transaction_version >= 2;
}

static bool txn_accepts_records(const struct ks_producer *p)
{
    return !p->txn.enabled || p->txn.state == PTXN_READY ||
           (p->txn.state == PTXN_IN_TXN && p->txn.records < p->config->txn_records);
}

static void txn_emit_end(struct ks_producer *p, enum ks_event_reason reason, int16_t error)
{
    if (p->observer == NULL || p->observer->on_event == NULL) {
        return;
    }
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, now_ns(p), KS_EV_TXN_END);
    event.reason = reason;
    event.producer_index = p->index;
    event.topic_index = p->config->topic_index;
    event.offset_from = p->txn.first_seq;
    event.offset_to = p->txn.first_seq + p->txn.records;
    event.record_count = p->txn.records;
    event.partition_count = p->txn.added_count;
    event.error_code = error;
    p->observer->on_event(p->observer->context, &event);
}

static void txn_clear(struct ks_producer *p)
{
    memset(p->txn.added, 0, (size_t)p->partition_count * sizeof *p->txn.added);
    p->txn.added_count = 0;
    p->txn.records = 0;
    p->txn.abort = false;
    p->txn.failed = false;
    p->txn.offsets_pending = false;
    p->txn.offsets_added = false;
    p->txn.offsets_written = false;
    if (p->txn.offsets != NULL) {
        ks_array_set_size(p->txn.offsets, 0);
    }
}

/* A record is about to be sent: beginTransaction() if none is open. */
static void txn_on_record(struct ks_producer *p, int64_t seq)
{
    if (!p->txn.enabled) {
        return;
    }
    ks_assert(txn_accepts_records(p));
    if (p->txn.state == PTXN_READY) {
        txn_clear(p);
        p->txn.state = PTXN_IN_TXN;
        p->txn.first_seq = seq;
        if (p->config->txn_abort_permille > 0) {
            p->txn.abort = ks_world_random_below(p->world, KS_RNG_WORKLOAD, 1000) <
                           (uint64_t)p->config->txn_abort_permille;
        }
    }
    p->txn.records++;
    if (p->txn.records >= p->config->txn_records) {
        p->txn.state = PTXN_ENDING;
    }
}

/* ProducerFencedException: fatal; whatever is queued or in flight ends with
 * an unknown fate (the coordinator aborts the transaction), and the
 * producer sends nothing more. */
static void txn_fence(struct ks_producer *p, int16_t error)
{
    if (p->txn.state == PTXN_FENCED) {
        return;
    }
    if (p->txn.state == PTXN_IN_TXN || p->txn.state == PTXN_ENDING) {
        txn_emit_end(p, KS_REASON_TXN_FENCED, error);
    }
    p->txn.state = PTXN_FENCED;
    p->txn.request_id = 0;
    p->stopped = true;
    if (p->record_timer != 0) {
        ks_world_cancel(p->world, p->record_timer);
        p->record_timer = 0;
    }
    int64_t lost = p->pending_count + (p->waiter.active ? 1 : 0);
    drop_all(p, true);
    report_error(p, -1, lost, KS_OUTCOME_UNKNOWN, KS_REASON_ERROR_NOT_RETRIABLE, error);
}

/* TransactionManager's retries do not grow: Sender.maybeSendAndPollTransactionalRequest
 * sleeps the handler's retryBackoffMs(), which is retry.backoff.ms, lowered to
 * ADD_PARTITIONS_RETRY_BACKOFF_MS (20 ms) for the first AddPartitionsToTxn of a
 * transaction that meets CONCURRENT_TRANSACTIONS, the previous transaction still
 * completing (AddPartitionsToTxnHandler.maybeOverrideRetryBackoffMs, KAFKA-5482). */
#define TXN_ADD_PARTITIONS_RETRY_BACKOFF_NS ((int64_t)20 * (int64_t)KS_NS_PER_MS)

static void txn_retry_later(struct ks_producer *p, bool rediscover, int16_t error)
{
    int64_t backoff = p->config->retry_backoff_ns;
    if (error == KS_ERR_CONCURRENT_TRANSACTIONS &&
        p->txn.request_kind == KS_MSG_TXN_ADD_PARTITIONS_REQUEST && p->txn.added_count == 0 &&
        backoff > TXN_ADD_PARTITIONS_RETRY_BACKOFF_NS) {
        backoff = TXN_ADD_PARTITIONS_RETRY_BACKOFF_NS;
    }
    p->txn.request_id = 0;
    if (rediscover) {
        p->txn.coordinator = -1;
        p->txn.find_broker = -1;
    }
    p->txn.retry_at_ns = time_add(now_ns(p), backoff);
}

static void send_add_offsets(struct ks_producer *p, int32_t broker, ks_time_ns now);
static void offsets_step(struct ks_producer *p, ks_time_ns now);

static void txn_send(struct ks_producer *p, int32_t broker, uint32_t kind, int32_t partition,
                     bool commit, ks_time_ns now)
{
    if (kind == KS_MSG_TXN_ADD_OFFSETS_REQUEST) {
        send_add_offsets(p, broker, now);
        return;
    }
    struct ks_txn_request request;
    memset(&request, 0, sizeof request);
    request.correlation_id = ++p->next_correlation_id;
    request.producer_id = p->producer_id;
    request.producer_epoch = p->producer_epoch;
    request.timeout_ns = p->config->transaction_timeout_ns;
    request.commit = commit ? 1 : 0;
    request.topic_index = p->config->topic_index;
    request.partition = partition;
    g_strlcpy(request.transactional_id, p->config->transactional_id,
              sizeof request.transactional_id);
    p->txn.request_id = request.correlation_id;
    p->txn.request_kind = kind;
    p->txn.request_partition = partition;
    p->txn.request_broker = broker;
    p->txn.deadline_ns = time_add(now, p->config->request_timeout_ns);
    ks_world_send(p->world, p->node, (ks_node_id)broker, kind, &request, sizeof request);
}

/* AddOffsetsToTxn: the group's __consumer_offsets partition joins the
 * transaction (TransactionManager.sendOffsetsToTransaction's first step). */
static void send_add_offsets(struct ks_producer *p, int32_t broker, ks_time_ns now)
{
    struct ks_txn_add_offsets_request request;
    memset(&request, 0, sizeof request);
    request.txn.correlation_id = ++p->next_correlation_id;
    request.txn.producer_id = p->producer_id;
    request.txn.producer_epoch = p->producer_epoch;
    request.txn.timeout_ns = p->config->transaction_timeout_ns;
    request.txn.topic_index = -1;
    request.txn.partition = -1;
    g_strlcpy(request.txn.transactional_id, p->config->transactional_id,
              sizeof request.txn.transactional_id);
    g_strlcpy(request.group_id, p->txn.group_id, sizeof request.group_id);
    p->txn.request_id = request.txn.correlation_id;
    p->txn.request_kind = KS_MSG_TXN_ADD_OFFSETS_REQUEST;
    p->txn.request_partition = -1;
    p->txn.request_broker = broker;
    p->txn.deadline_ns = time_add(now, p->config->request_timeout_ns);
    ks_world_send(p->world, p->node, (ks_node_id)broker, KS_MSG_TXN_ADD_OFFSETS_REQUEST, &request,
                  sizeof request);
}

/* A group request on the transaction's one request slot (correlation ids of
 * the group protocol are 32 bits). */
static void send_group_request(struct ks_producer *p, int32_t broker, uint32_t kind,
                               uint8_t *message, size_t bytes, ks_time_ns now)
{
    int32_t correlation_id = (int32_t)(++p->next_correlation_id & INT32_MAX);
    memcpy(message, &correlation_id, sizeof correlation_id); /* every request starts with it */
    p->txn.request_id = correlation_id;
    p->txn.request_kind = kind;
    p->txn.request_partition = -1;
    p->txn.request_broker = broker;
    p->txn.deadline_ns = time_add(now, p->config->request_timeout_ns);
    ks_world_send(p->world, p->node, (ks_node_id)broker, kind, message, bytes);
}

/* FindCoordinator(GROUP), then TxnOffsetCommit with the consumer's group
 * metadata (KIP-447: member id and generation, so that the group
 * coordinator fences a member that lost its partitions). */
static void offsets_step(struct ks_producer *p, ks_time_ns now)
{
    struct ptxn *t = &p->txn;
    if (t->group_coordinator < 0) {
        int32_t broker = pick_broker(p, -1);
        if (!conn_ready(p, broker, now)) {
            return;
        }
        struct ks_group_find_coordinator_request request;
        memset(&request, 0, sizeof request);
        g_strlcpy(request.group_id, t->group_id, sizeof request.group_id);
        send_group_request(p, broker, KS_GROUP_FIND_COORDINATOR_REQUEST, (uint8_t *)&request,
                           sizeof request, now);
        return;
    }
    if (!conn_ready(p, t->group_coordinator, now)) {
        if (p->conns[t->group_coordinator - 1].state == CONN_DISCONNECTED) {
            t->group_coordinator = -1;
            txn_retry_later(p, false, KS_ERR_NETWORK_EXCEPTION);
        }
        return;
    }
    size_t bytes = sizeof(struct ks_group_txn_offset_commit_request) +
                   t->offsets->len * sizeof(struct ks_group_offset_entry);
    uint8_t *message = g_malloc0(bytes);
    struct ks_group_txn_offset_commit_request request;
    memset(&request, 0, sizeof request);
    request.entry_count = (int32_t)t->offsets->len;
    request.producer_id = p->producer_id;
    request.producer_epoch = p->producer_epoch;
    g_strlcpy(request.group_id, t->group_id, sizeof request.group_id);
    if (p->spec->cluster->client_txn_group_metadata) {
        request.generation = t->generation;
        g_strlcpy(request.member_id, t->member_id, sizeof request.member_id);
    } else {
        /* Before KIP-447 (Kafka 2.5) sendOffsetsToTransaction took only the
         * group id, and TxnOffsetCommit v0-v2 has no member id nor
         * generation: the request goes with generation -1 and no member
         * (TxnOffsetCommitRequest's defaults), and
         * GroupCoordinator.handleTxnCommitOffsets cannot tell a zombie. */
        request.generation = -1;
    }
    g_strlcpy(request.transactional_id, p->config->transactional_id,
              sizeof request.transactional_id);
    memcpy(message, &request, sizeof request);
    if (t->offsets->len > 0) {
        memcpy(message + sizeof request, t->offsets->data,
               t->offsets->len * sizeof(struct ks_group_offset_entry));
    }
    send_group_request(p, t->group_coordinator, KS_GROUP_TXN_OFFSET_COMMIT_REQUEST, message, bytes,
                       now);
    g_free(message);
}

/* FindCoordinator(GROUP) and TxnOffsetCommit answers (TxnOffsetCommitHandler's
 * error handling). */
static void on_group_response(struct ks_producer *p, uint32_t kind, const void *message,
                              size_t bytes)
{
    struct ptxn *t = &p->txn;
    int32_t correlation_id;
    ks_assert(bytes >= sizeof correlation_id);
    memcpy(&correlation_id, message, sizeof correlation_id);
    if (!t->enabled || t->request_id == 0 || correlation_id != t->request_id ||
        kind != t->request_kind + 1) {
        return;
    }
    if (kind == KS_GROUP_FIND_COORDINATOR_RESPONSE) {
        struct ks_group_find_coordinator_response r;
        ks_assert(bytes == sizeof r);
        memcpy(&r, message, sizeof r);
        if (r.error_code != KS_GROUP_ERR_NONE || r.coordinator_id < 1 ||
            r.coordinator_id > p->broker_count) {
            txn_retry_later(p, false, KS_ERR_COORDINATOR_NOT_AVAILABLE);
            return;
        }
        t->request_id = 0;
        t->group_coordinator = r.coordinator_id;
        return;
    }
    struct ks_group_simple_response r;
    ks_assert(bytes == sizeof r);
    memcpy(&r, message, sizeof r);
    switch (r.error_code) {
    case KS_GROUP_ERR_NONE:
        t->request_id = 0;
        t->offsets_written = true;
        return;
    case KS_GROUP_ERR_NOT_COORDINATOR:
    case KS_GROUP_ERR_COORDINATOR_NOT_AVAILABLE:
    case KS_GROUP_ERR_REQUEST_TIMED_OUT:
        t->group_coordinator = -1;
        txn_retry_later(p, false, KS_ERR_NOT_COORDINATOR);
        return;
    case KS_GROUP_ERR_INVALID_PRODUCER_EPOCH:
        t->request_id = 0;
        txn_fence(p, KS_ERR_INVALID_PRODUCER_EPOCH);
        return;
    case KS_GROUP_ERR_INVALID_TXN_STATE:
        /* The group coordinator's verification (KIP-890) found the
         * __consumer_offsets partition outside the transaction:
         * TxnOffsetCommitHandler's "Unexpected error", fatal. */
        t->request_id = 0;
        txn_fence(p, KS_ERR_INVALID_TXN_STATE);
        return;
    case KS_GROUP_ERR_CONCURRENT_TRANSACTIONS:
    case KS_GROUP_ERR_COORDINATOR_LOAD_IN_PROGRESS:
        /* RetriableException: again to the same coordinator. */
        txn_retry_later(p, false,
                        r.error_code == KS_GROUP_ERR_CONCURRENT_TRANSACTIONS
                            ? KS_ERR_CONCURRENT_TRANSACTIONS
                            : KS_ERR_COORDINATOR_LOAD_IN_PROGRESS);
        return;
    case KS_GROUP_ERR_UNKNOWN_MEMBER_ID:
    case KS_GROUP_ERR_ILLEGAL_GENERATION:
        /* CommitFailedException: an abortable error; the application
         * aborts the transaction (and its consumer rejoins). */
        t->request_id = 0;
        t->abort = true;
        return;
    default: txn_retry_later(p, false, KS_ERR_UNKNOWN_SERVER_ERROR); return;
    }
}

#define TXN_END_LOCALLY UINT32_MAX /* txn_due_kind: end the transaction without EndTxn */
/* txn_due_kind: FindCoordinator(GROUP) or TxnOffsetCommit (offsets_step) */
#define TXN_COMMIT_OFFSETS (UINT32_MAX - 1)

/* The coordinator request the transaction needs next (its partition in
 * *partition_out for AddPartitionsToTxn), TXN_COMMIT_OFFSETS, TXN_END_LOCALLY,
 * or 0 for none. */
static uint32_t txn_due_kind(struct ks_producer *p, int32_t *partition_out)
{
    const struct ptxn *t = &p->txn;
    if (t->state == PTXN_INIT) {
        return KS_MSG_TXN_INIT_PRODUCER_ID_REQUEST;
    }
    if (t->state != PTXN_IN_TXN && t->state != PTXN_ENDING) {
        return 0;
    }
    for (int32_t i = active_next(p, 0); i >= 0 && !txn_v2(p); i = active_next(p, i + 1)) {
        if (!t->added[i]) {
            *partition_out = i;
            return KS_MSG_TXN_ADD_PARTITIONS_REQUEST;
        }
    }
    if (t->state == PTXN_ENDING && t->offsets_pending && !t->offsets_written &&
        !(t->abort || t->failed)) {
        /* TransactionManager.sendOffsetsToTransaction: AddOffsetsToTxn to
         * the transaction coordinator, then TxnOffsetCommit to the
         * group's (TxnOffsetCommitHandler), before EndTxn. */
        return t->offsets_added ? TXN_COMMIT_OFFSETS : KS_MSG_TXN_ADD_OFFSETS_REQUEST;
    }
    if (t->state == PTXN_ENDING && p->pending_count == 0 && !p->waiter.active) {
        return t->added_count == 0 ? TXN_END_LOCALLY : KS_MSG_TXN_END_REQUEST;
    }
    return 0;
}

/* The next coordinator request, if one is due (called from sender_run). */
static void txn_step(struct ks_producer *p, ks_time_ns now)
{
    struct ptxn *t = &p->txn;
    if (!t->enabled) {
        return;
    }
    if (t->fence_pending) {
        t->fence_pending = false;
        txn_fence(p, KS_ERR_INVALID_PRODUCER_EPOCH);
    }
    if (t->state == PTXN_FENCED) {
        return;
    }
    if (t->request_id != 0 && now >= t->deadline_ns) {
        /* request.timeout.ms: ask again, maybe elsewhere */
        txn_retry_later(p, true, KS_ERR_REQUEST_TIMED_OUT);
    }
    if (t->state == PTXN_IN_TXN && workload_done(p)) {
        t->state = PTXN_ENDING; /* the application's last transaction, before close() */
    }
    if (t->request_id != 0 || now < t->retry_at_ns) {
        return;
    }
    int32_t partition = -1;
    uint32_t kind = txn_due_kind(p, &partition);
    if (kind == TXN_COMMIT_OFFSETS) {
        offsets_step(p, now);
        return;
    }
    if (kind == TXN_END_LOCALLY) {
        /* Nothing reached a partition: TransactionManager completes it
         * locally, without EndTxn. */
        txn_emit_end(p, t->abort || t->failed ? KS_REASON_TXN_ABORTED : KS_REASON_TXN_COMMITTED,
                     KS_ERR_NONE);
        t->state = PTXN_READY;
        txn_clear(p);
        schedule_next_record(p);
        return;
    }
    if (kind == 0) {
        return;
    }
    if (t->coordinator < 0) {
        if (t->find_broker < 0) {
            t->find_broker = pick_broker(p, -1);
        }
        if (conn_ready(p, t->find_broker, now)) {
            txn_send(p, t->find_broker, KS_MSG_TXN_FIND_COORDINATOR_REQUEST, -1, false, now);
        } else if (p->conns[t->find_broker - 1].state == CONN_DISCONNECTED) {
            txn_retry_later(p, true, KS_ERR_NETWORK_EXCEPTION); /* another broker next time */
        }
        return;
    }
    if (conn_ready(p, t->coordinator, now)) {
        txn_send(p, t->coordinator, kind, partition, !(t->abort || t->failed), now);
    } else if (p->conns[t->coordinator - 1].state == CONN_DISCONNECTED) {
        /* Sender.maybeSendAndPollTransactionalRequest: the coordinator is not
         * reachable (the connect failed): look it up again after a backoff. */
        txn_retry_later(p, true, KS_ERR_NETWORK_EXCEPTION);
    }
}

static ks_time_ns txn_wakeup_ns(struct ks_producer *p, ks_time_ns now)
{
    const struct ptxn *t = &p->txn;
    if (!t->enabled || t->state == PTXN_FENCED) {
        return KS_TIME_NEVER;
    }
    if (t->request_id != 0) {
        return t->deadline_ns;
    }
    if (t->state == PTXN_READY) {
        return KS_TIME_NEVER;
    }
    if (t->retry_at_ns > now) {
        return t->retry_at_ns;
    }
    /* Only a request that is due waits for a connection: with none (an
     * ENDING transaction whose records are still pending) a disconnected
     * coordinator whose backoff is over would wake the sender at once,
     * again and again, without anything to send. */
    int32_t partition = -1;
    if (txn_due_kind(p, &partition) == 0) {
        return KS_TIME_NEVER;
    }
    int32_t broker = t->coordinator >= 0 ? t->coordinator : t->find_broker;
    return broker >= 0 ? conn_wakeup_ns(&p->conns[broker - 1], now) : KS_TIME_NEVER;
}

static void txn_end_done(struct ks_producer *p)
{
    struct ptxn *t = &p->txn;
    bool aborted = t->abort || t->failed;
    txn_emit_end(p, aborted ? KS_REASON_TXN_ABORTED : KS_REASON_TXN_COMMITTED, KS_ERR_NONE);
    /* KIP-360: after an abort caused by failed records, InitProducerId bumps
     * the epoch so that the partitions' sequences start again. Under
     * transaction V2 the EndTxn has bumped it already (on_txn_response). */
    bool bump = t->failed && !txn_v2(p);
    t->ended_count++;
    t->last_committed = !aborted;
    txn_clear(p);
    t->state = bump ? PTXN_INIT : PTXN_READY;
    schedule_next_record(p);
}

static void on_txn_response(struct ks_producer *p, uint32_t kind, const void *message, size_t bytes)
{
    ks_assert(bytes == sizeof(struct ks_txn_response)); /* see producer_receive */
    struct ks_txn_response response;
    memcpy(&response, message, sizeof response);
    struct ptxn *t = &p->txn;
    if (!t->enabled || t->request_id == 0 || response.correlation_id != t->request_id ||
        kind != t->request_kind + 1) {
        return;
    }
    int16_t error = response.error_code;
    if (kind == KS_MSG_TXN_FIND_COORDINATOR_RESPONSE) {
        if (error != KS_ERR_NONE || response.coordinator_id < 1 ||
            response.coordinator_id > p->broker_count) {
            txn_retry_later(p, true, error);
            return;
        }
        t->request_id = 0;
        t->coordinator = response.coordinator_id;
        return;
    }
    switch (error) {
    case KS_ERR_NONE: break;
    case KS_ERR_NOT_COORDINATOR:
    case KS_ERR_COORDINATOR_NOT_AVAILABLE: txn_retry_later(p, true, error); return;
    case KS_ERR_COORDINATOR_LOAD_IN_PROGRESS:
    case KS_ERR_CONCURRENT_TRANSACTIONS: txn_retry_later(p, false, error); return;
    case KS_ERR_PRODUCER_FENCED:
    case KS_ERR_INVALID_PRODUCER_EPOCH:
    case KS_ERR_INVALID_TXN_STATE:
        t->request_id = 0;
        txn_fence(p, error);
        return;
    default: txn_retry_later(p, false, error); return;
    }
    t->request_id = 0;
    switch (kind) {
    case KS_MSG_TXN_INIT_PRODUCER_ID_RESPONSE:
        p->producer_id = response.producer_id;
        p->producer_epoch = response.producer_epoch;
        t->state = PTXN_READY;
        schedule_next_record(p);
        break;
    case KS_MSG_TXN_ADD_PARTITIONS_RESPONSE:
        if (!t->added[t->request_partition]) {
            t->added[t->request_partition] = true;
            t->added_count++;
        }
        break;
    case KS_MSG_TXN_END_RESPONSE:
        if (txn_v2(p)) {
            /* EndTxnHandler with transaction V2: the next transaction runs
             * with the id and epoch the coordinator returned (the epoch one
             * higher, or a new id at epoch 0 after an overflow); every
             * partition's sequences start again at 0 under it. */
            ks_assert(response.producer_id >= 0);
            p->producer_id = response.producer_id;
            p->producer_epoch = response.producer_epoch;
        }
        txn_end_done(p);
        break;
    case KS_MSG_TXN_ADD_OFFSETS_RESPONSE: t->offsets_added = true; break;
    default: ks_assert(!"unexpected transaction response kind");
    }
}

/* Renumbers a partition's incomplete batches from 0 under the current
 * (id, epoch): TxnPartitionMap.startSequencesAtBeginning. */
static void restart_sequences(struct ks_producer *p, struct ppart *part)
{
    int32_t sequence = 0;
    for (guint i = 0; i < part->sequenced->len; i++) {
        struct pbatch *batch = g_ptr_array_index(part->sequenced, i);
        batch->producer_id = p->producer_id;
        batch->producer_epoch = p->producer_epoch;
        batch->base_sequence = sequence;
        sequence += batch->record_count;
    }
    part->seq_producer_id = p->producer_id;
    part->seq_epoch = p->producer_epoch;
    part->next_sequence = sequence;
    part->last_acked_sequence = -1;
    part->unresolved = false;
    part->bump_required = false;
}

/* TransactionManager.maybeResolveSequences and bumpIdempotentProducerEpoch.
 * Only a partition with `unresolved` or `bump_required` set can change here,
 * so the scan runs only while some flag may be set (sequences_flagged). */
static void resolve_sequences(struct ks_producer *p)
{
    if (!p->idempotent || p->producer_id < 0 || !p->sequences_flagged || p->txn.enabled) {
        /* A transactional producer does not bump its epoch itself: the
         * failed records abort the transaction and InitProducerId bumps it
         * (KIP-360; txn_end_done). */
        return;
    }
    bool bump = false;
    bool still_unresolved = false;
    for (int32_t i = 0; i < p->partition_count; i++) {
        struct ppart *part = &p->parts[i];
        if (part->unresolved && part->sequenced->len == 0) {
            /* Nothing in flight: resolved if every sequence handed out was
             * acked (isNextSequence: a later batch succeeded, so the broker
             * had the doubtful one), else bump the epoch. */
            if (part->next_sequence == part->last_acked_sequence + 1 &&
                part->seq_epoch == p->producer_epoch) {
                part->unresolved = false;
            } else {
                part->unresolved = false;
                part->bump_required = true;
            }
        }
        bump |= part->bump_required;
        still_unresolved |= part->unresolved;
    }
    /* Every bump_required is cleared below (restart_sequences); what stays
     * flagged is an unresolved partition with batches still in flight. */
    p->sequences_flagged = still_unresolved;
    if (!bump) {
        return;
    }
    ks_assert(p->producer_epoch < INT16_MAX);
    p->producer_epoch++;
    for (int32_t i = 0; i < p->partition_count; i++) {
        if (p->parts[i].bump_required) {
            restart_sequences(p, &p->parts[i]);
        }
    }
}

/* ---- accumulator ----------------------------------------------------------------------- */

static bool partition_available(const struct ks_producer *p, int32_t partition)
{
    return p->parts[partition].leader >= 0;
}

static int32_t choose_partition(struct ks_producer *p, const struct precord *record)
{
    if (record->key_number >= 0 && record->key_number < p->keys_cached) {
        return key_entry_of(p, record->key_number)->partition;
    }
    if (record->key_number >= 0) {
        char key[KEY_TEXT_BYTES];
        int32_t key_bytes = 0;
        key_text(record->key_number, key, &key_bytes);
        return ks_partitioner_key_partition(key, (size_t)key_bytes, p->partition_count);
    }
    if (!ks_sticky_pick_due(&p->sticky)) {
        return ks_sticky_partition(&p->sticky, NULL, p->partition_count, 0);
    }
    /* A pick: which partitions have a leader (only now, not per record). */
    bool *available = g_newa(bool, (gsize)p->partition_count);
    for (int32_t i = 0; i < p->partition_count; i++) {
        available[i] = partition_available(p, i);
    }
    uint64_t draw = ks_world_random_u64(p->world, KS_RNG_CLIENT);
    return ks_sticky_partition(&p->sticky, available, p->partition_count, draw);
}

/* MemoryRecordsBuilder.estimatedSizeInBytes: the built size once encoded,
 * else header + uncompressed records, times the batch's ratio estimate and
 * COMPRESSION_RATE_ESTIMATION_FACTOR 1.05 when a codec is set. */
static int64_t batch_estimated_bytes(const struct ks_producer *p, const struct pbatch *batch)
{
    if (batch->encoded != NULL) {
        return (int64_t)batch->encoded->len;
    }
    if (p->config->compression.codec == KS_CODEC_NONE) {
        return batch->size_bytes;
    }
    int64_t records = batch->size_bytes - KS_BATCH_HEADER_BYTES;
    return KS_BATCH_HEADER_BYTES + records * batch->ratio_ppm * 105 / (100 * RATIO_PPM_ONE);
}

/* CompressionRatioEstimator.updateEstimation after a batch is closed. */
static void ratio_update(struct ks_producer *p, int64_t batch_bytes, int64_t records_bytes)
{
    if (records_bytes <= 0) {
        return;
    }
    int64_t observed = batch_bytes * RATIO_PPM_ONE / records_bytes;
    if (observed > p->ratio_ppm) {
        int64_t stepped = p->ratio_ppm + RATIO_DETERIORATE_STEP_PPM;
        p->ratio_ppm = stepped > observed ? stepped : observed;
    } else if (observed < p->ratio_ppm) {
        int64_t stepped = p->ratio_ppm - RATIO_IMPROVING_STEP_PPM;
        p->ratio_ppm = stepped > observed ? stepped : observed;
    }
}

/* What an append did (RecordAppendResult): the sender needs a pass only
 * when a batch was created (its linger deadline and delivery timeout must be
 * armed) or became full (it can go now), as KafkaProducer.doSend wakes the
 * sender only when batchIsFull || newBatchCreated. */
enum append_result {
    APPEND_NO_MEMORY, /* nothing appended (a batch may have been closed) */
    APPEND_QUIET,     /* added to an open batch that is still not full */
    APPEND_LONE,      /* a new batch, not full, the only one of its partition */
    APPEND_READY,     /* a batch was created or became full */
};

/* Appends to the partition's open batch, or opens a new one if memory
 * allows. Returns APPEND_NO_MEMORY (nothing appended) when buffer.memory is
 * exhausted. */
static enum append_result accumulator_append(struct ks_producer *p, const struct precord *record,
                                             int32_t partition)
{
    struct ppart *part = &p->parts[partition];
    struct pbatch *last = g_queue_peek_tail(&part->queue);
    int32_t batch_size = p->config->batch_size_bytes;
    if (last != NULL && !last->closed && last->entry == NULL) {
        const struct precord *first = &last->records[0];
        int32_t size = record_size(p, record, last->record_count, first->timestamp_ms);
        int64_t before = batch_estimated_bytes(p, last);
        /* hasRoomFor: the new record counts uncompressed (Kafka is conservative). */
        if (before + size <= batch_size) {
            struct precord copy = *record;
            copy.size_bytes = size;
            batch_add_record(last, &copy);
            last->size_bytes += size;
            p->pending_count++;
            int64_t after = batch_estimated_bytes(p, last);
            bool full = after >= batch_size;
            if (full) {
                ready_mark(p, partition); /* a full head batch goes without lingering */
            }
            ks_sticky_on_append(&p->sticky, partition, (int32_t)(after - before), full);
            return full ? APPEND_READY : APPEND_QUIET;
        }
        last->closed = true; /* closeForRecordAppends */
        /* Closed, it no longer lingers (P10). A new batch behind it marks
         * the partition again; without memory for one, the application
         * blocks, which makes every batch sendable anyway. */
        ready_mark(p, partition);
    }
    int32_t size = record_size(p, record, 0, record->timestamp_ms);
    int64_t batch_bytes = KS_BATCH_HEADER_BYTES + (int64_t)size;
    int64_t reserve = batch_bytes > batch_size ? batch_bytes : batch_size;
    if (p->reserved_bytes + reserve > p->config->buffer_memory_bytes && p->reserved_bytes > 0) {
        return APPEND_NO_MEMORY;
    }
    struct pbatch *batch = batch_new(p, partition, reserve);
    struct precord copy = *record;
    copy.size_bytes = size;
    batch_add_record(batch, &copy);
    batch->size_bytes += size;
    g_queue_push_tail_link(&part->queue, batch_link(batch));
    active_update(p, partition);
    p->pending_count++;
    int64_t estimated = batch_estimated_bytes(p, batch);
    ks_sticky_on_append(&p->sticky, partition, (int32_t)estimated, estimated >= batch_size);
    return estimated < batch_size && g_queue_get_length(&part->queue) == 1 ? APPEND_LONE
                                                                           : APPEND_READY;
}

/* The waiting send() call tries again: needs metadata (waitOnMetadata), a
 * partition and room. On success the record is in the accumulator and the
 * application goes on. */
static enum append_result waiter_try(struct ks_producer *p)
{
    struct pwaiter *waiter = &p->waiter;
    ks_assert(waiter->active);
    if (!p->meta_known) {
        return APPEND_NO_MEMORY;
    }
    if (waiter->partition < 0) {
        waiter->partition = choose_partition(p, &waiter->record);
    }
    enum append_result result = accumulator_append(p, &waiter->record, waiter->partition);
    if (result != APPEND_NO_MEMORY) {
        waiter->active = false;
    }
    return result;
}

static void schedule_next_record(struct ks_producer *p);

static void waiter_check(struct ks_producer *p, ks_time_ns now)
{
    if (!p->waiter.active) {
        return;
    }
    if (waiter_try(p) != APPEND_NO_MEMORY) {
        schedule_next_record(p);
        return;
    }
    if (now < p->waiter.deadline_ns) {
        return;
    }
    /* max.block.ms passed: send() throws a TimeoutException; nothing was sent. */
    struct precord record = p->waiter.record;
    p->waiter.active = false;
    report_record(p, NULL, &record, p->waiter.partition, -1, KS_OUTCOME_FAILED);
    report_error(p, p->waiter.partition, 1, KS_OUTCOME_FAILED,
                 p->meta_known ? KS_REASON_BUFFER_FULL_MAX_BLOCK : KS_REASON_NO_METADATA_MAX_BLOCK,
                 KS_ERR_NONE);
    schedule_next_record(p);
}

/* ---- sending --------------------------------------------------------------------------- */

static void batch_encode(struct ks_producer *p, struct pbatch *batch)
{
    if (batch->encoded != NULL && batch->encoded_producer_id == batch->producer_id &&
        batch->encoded_epoch == batch->producer_epoch &&
        batch->encoded_sequence == batch->base_sequence) {
        return;
    }
    if (batch->encoded != NULL) {
        g_byte_array_unref(batch->encoded);
    }
    const struct precord *first = &batch->records[0];
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, first->timestamp_ms, batch->producer_id, batch->producer_epoch,
                          batch->base_sequence);
    builder.attributes =
        (int16_t)(p->config->compression.codec | (p->txn.enabled ? KS_ATTR_TRANSACTIONAL : 0));
    builder.compression_level = ks_compression_level(&p->config->compression);
    /* The size is known (asserted below); each record's add needs room for
     * its upper bound for a moment (the value, the key and header texts and
     * their varints). Growing from 256 bytes by doubling copied about two
     * batches' bytes per batch (issue 16). */
    ks_batch_builder_reserve(&builder,
                             (size_t)batch->size_bytes + (size_t)p->config->value_bytes + 256);
    for (int32_t i = 0; i < batch->record_count; i++) {
        const struct precord *record = &batch->records[i];
        char header_value[96];
        int32_t header_bytes =
            header_value_text(p, record->seq, header_value, sizeof(header_value));
        struct ks_header_view header = {
            .key = (const uint8_t *)KS_IDENTITY_HEADER,
            .key_bytes = (int32_t)strlen(KS_IDENTITY_HEADER),
            .value = (const uint8_t *)header_value,
            .value_bytes = header_bytes,
        };
        char key[KEY_TEXT_BYTES];
        int32_t key_bytes = 0;
        const char *key_data = key_text_cached(p, record->key_number, key, &key_bytes);
        const uint8_t *value = p->value;
        if (p->value_scratch != NULL) {
            ks_producer_value_fill(p->value_seed, record->seq, p->config->value_random_percent,
                                   p->value_scratch, p->config->value_bytes);
            value = p->value_scratch;
        }
        ks_batch_builder_add(&builder, record->timestamp_ms, key_data, key_bytes, value,
                             p->config->value_bytes, &header, 1);
    }
    ks_assert(ks_batch_builder_size(&builder) == (size_t)batch->size_bytes);
    batch->encoded = ks_batch_builder_finish(&builder); /* compresses (ProducerBatch.close) */
    ks_batch_builder_deinit(&builder);
    if (p->config->compression.codec != KS_CODEC_NONE) {
        ratio_update(p, (int64_t)batch->encoded->len, batch->size_bytes - KS_BATCH_HEADER_BYTES);
    }
    batch->encoded_producer_id = batch->producer_id;
    batch->encoded_epoch = batch->producer_epoch;
    batch->encoded_sequence = batch->base_sequence;
}

/* The bytes of batch's PRODUCE_REQUEST message, once batch_encode ran:
 * the header, the batch, and ProduceRequest.transactionalId only for a
 * transactional producer (the leader verifies with it, KIP-890). */
static size_t produce_message_bytes(const struct ks_producer *p, const struct pbatch *batch)
{
    size_t id_bytes = p->txn.enabled ? KS_TRANSACTIONAL_ID_BYTES : 0;
    return sizeof(struct ks_produce_request) + batch->encoded->len + id_bytes;
}

/* Writes batch's PRODUCE_REQUEST message into message (produce_message_bytes
 * of it, every byte written: the bytes go into the trace hash, the header's
 * padding and the id's tail included); returns its correlation id. */
static int64_t write_produce_message(struct ks_producer *p, struct pbatch *batch, uint8_t *message)
{
    memset(message, 0, sizeof(struct ks_produce_request));
    struct ks_produce_request *request = (struct ks_produce_request *)message;
    request->correlation_id = ++p->next_correlation_id;
    request->timeout_ns = p->config->request_timeout_ns;
    request->topic_index = p->config->topic_index;
    request->partition = batch->partition;
    request->acks = (int16_t)p->config->acks;
    request->batch_bytes = batch->encoded->len;
    memcpy(message + sizeof(*request), batch->encoded->data, batch->encoded->len);
    if (p->txn.enabled) {
        request->flags = KS_PRODUCE_FLAG_TRANSACTIONAL_ID;
        char *id = (char *)message + sizeof(*request) + batch->encoded->len;
        memset(id, 0, KS_TRANSACTIONAL_ID_BYTES);
        g_strlcpy(id, p->config->transactional_id, KS_TRANSACTIONAL_ID_BYTES);
    }
    batch->closed = true;
    return request->correlation_id;
}

/* Sends the batches of one Produce request to broker as one network
 * message, and puts each batch's correlation id in request's entries (none
 * with acks=0, which has no request in flight): a
 * PRODUCE_REQUEST for one batch, a PRODUCE_REQUESTS bundle for several
 * (core/proto.h), so that the leader gets them at one instant, appends them
 * all, and only then releases its followers' parked fetches, which then
 * carry every partition of the request (ReplicaManager.appendRecords runs
 * its delayed-operation completions after the whole request). The
 * message is handed to the world, not copied. */
static void send_produce(struct ks_producer *p, int32_t broker, struct pbatch **batches,
                         int32_t count, struct prequest *request)
{
    size_t bytes = count > 1 ? sizeof(struct ks_produce_bundle) : 0;
    p->batches_sent += count;
    for (int32_t i = 0; i < count; i++) {
        batch_encode(p, batches[i]);
        size_t one = produce_message_bytes(p, batches[i]);
        bytes += count > 1 ? ks_proto_bundle_entry_bytes(one) : one;
    }
    uint8_t *message = g_malloc(bytes);
    if (count == 1) {
        int64_t id = write_produce_message(p, batches[0], message);
        if (request != NULL) {
            request->entries[0].correlation_id = id;
        }
        ks_world_send_owned(p->world, p->node, (ks_node_id)broker, KS_MSG_PRODUCE_REQUEST, message,
                            bytes);
        return;
    }
    struct ks_produce_bundle bundle = { .count = (uint32_t)count };
    memcpy(message, &bundle, sizeof bundle);
    size_t at = sizeof bundle;
    for (int32_t i = 0; i < count; i++) {
        size_t one = produce_message_bytes(p, batches[i]);
        size_t taken = ks_proto_bundle_entry_bytes(one);
        struct ks_produce_bundle_entry entry = { .bytes = (uint32_t)one };
        memcpy(message + at, &entry, sizeof entry);
        int64_t id = write_produce_message(p, batches[i], message + at + sizeof entry);
        if (request != NULL) {
            request->entries[i].correlation_id = id;
        }
        memset(message + at + sizeof entry + one, 0, taken - sizeof entry - one); /* padding */
        at += taken;
    }
    ks_assert(at == bytes);
    ks_world_send_owned(p->world, p->node, (ks_node_id)broker, KS_MSG_PRODUCE_REQUESTS, message,
                        bytes);
}

/* Sends a Produce request of `count` batches (at most one per partition)
 * to broker and, unless acks=0, puts it in flight on its connection. */
static void send_request(struct ks_producer *p, int32_t broker, struct pbatch **batches,
                         int32_t count, ks_time_ns now)
{
    ks_assert(count > 0);
    if (p->config->acks == KS_ACKS_NONE) {
        /* acks=0: the request completes when it is written to the socket,
         * with no offset (SPEC 5 counts these records as acked). */
        send_produce(p, broker, batches, count, NULL);
        for (int32_t i = 0; i < count; i++) {
            batches[i]->acked_broker = broker; /* no answer: its epoch stays unknown */
            batch_end(p, batches[i], KS_OUTCOME_ACKED, -1);
        }
        return;
    }
    struct prequest *request =
        calloc(1, sizeof(*request) + (size_t)count * sizeof(request->entries[0]));
    ks_assert(request != NULL);
    send_produce(p, broker, batches, count, request); /* sets each entry's correlation id */
    request->broker = broker;
    request->deadline_ns = time_add(now, p->config->request_timeout_ns);
    request->entry_count = count;
    request->pending_count = count;
    for (int32_t i = 0; i < count; i++) {
        struct pbatch *batch = batches[i];
        struct pentry *entry = &request->entries[i];
        entry->request = request;
        entry->partition = batch->partition;
        entry->batch = batch;
        entry->producer_id = batch->producer_id;
        entry->producer_epoch = batch->producer_epoch;
        entry->base_sequence = batch->base_sequence;
        batch->entry = entry;
        batch->sent_leader_epoch = p->parts[batch->partition].leader_epoch;
        if (p->guarantee_order) {
            partition_mute(p, batch->partition);
        }
    }
    struct pconn *conn = &p->conns[broker - 1];
    ks_ptr_array_add(conn->inflight, request);
    ks_assert((int32_t)conn->inflight->len <= p->in_flight_max); /* P2 */
    /* Last in send order, which is deadline order: the timeout is the same
     * for every request and the clock does not go back (P12). */
    request->older = p->request_newest;
    if (request->older != NULL) {
        ks_assert(request->older->deadline_ns <= request->deadline_ns);
        request->older->newer = request;
    } else {
        p->request_oldest = request;
    }
    p->request_newest = request;
}

/* Frees a request taken off its connection's in-flight list. */
static void request_free(struct ks_producer *p, struct prequest *request)
{
    if (request->older != NULL) {
        request->older->newer = request->newer;
    } else {
        p->request_oldest = request->newer;
    }
    if (request->newer != NULL) {
        request->newer->older = request->older;
    } else {
        p->request_newest = request->older;
    }
    free(request);
}

/* The end of a retry's backoff. KIP-951: a retry whose partition has a newer
 * leader epoch than at its last send skips the backoff (ProducerBatch.
 * hasLeaderChangedForTheOngoingRetry, RecordAccumulator.shouldBackoff). */
static ks_time_ns batch_backoff_until(const struct ks_producer *p, const struct ppart *part,
                                      const struct pbatch *batch)
{
    if (p->spec->cluster->client_leader_discovery && batch->retry_count > 0 &&
        part->leader_epoch > batch->sent_leader_epoch) {
        return 0;
    }
    return batch->retry_at_ns;
}

static bool batch_sendable(const struct ks_producer *p, const struct ppart *part,
                           const struct pbatch *batch, ks_time_ns now)
{
    if (batch_backoff_until(p, part, batch) > now) {
        return false;
    }
    if (batch->retry_count > 0) {
        return true; /* a retry goes as soon as its backoff is over */
    }
    /* RecordAccumulator.ready: full = deque.size() > 1 || batch.isFull(), and
     * MemoryRecordsBuilder.isFull compares batch.size with the estimated
     * bytes written (the compression ratio estimate), as the append does. */
    /* The cheap conditions first: a sender pass asks this of every active
     * partition's head, usually a lone batch still lingering. */
    bool exhausted = p->waiter.active && p->meta_known; /* blocked on memory */
    if (p->stopped || exhausted || now >= time_add(batch->created_ns, p->config->linger_ns)) {
        return true; /* stopping, blocked on memory, or lingered */
    }
    return batch->closed || part->queue.length > 1 ||
           batch_estimated_bytes(p, batch) >= p->config->batch_size_bytes; /* full */
}

/* RecordAccumulator.shouldStopDrainBatchesForPartition: whether the
 * partition's head batch may not be drained yet, which stops the whole
 * request (drain_one_request). Resets the partition's sequences when its
 * old epoch's batches are all done (TransactionManager.
 * maybeUpdateProducerIdAndEpoch, which Kafka calls right after). */
static bool idempotence_blocks(struct ks_producer *p, struct ppart *part,
                               const struct pbatch *batch)
{
    if (!p->idempotent) {
        return false;
    }
    if (p->producer_id < 0) {
        return true;
    }
    if (p->txn.enabled && (p->txn.state == PTXN_IN_TXN || p->txn.state == PTXN_ENDING) &&
        !p->txn.added[batch->partition] && txn_v2(p)) {
        /* KIP-890 part 2 (TransactionManager.maybeAddPartition with
         * transaction V2): the partition is in the transaction as soon as it
         * gets a record; its leader adds it at the coordinator when the
         * first batch arrives. No AddPartitionsToTxn from the producer. */
        p->txn.added[batch->partition] = true;
        p->txn.added_count++;
    }
    if (p->txn.enabled && (p->txn.state == PTXN_INIT || !p->txn.added[batch->partition])) {
        return true; /* TransactionManager.isSendToPartitionAllowed */
    }
    if (batch->base_sequence >= 0) {
        /* a retry: only the lowest incomplete sequence goes out */
        ks_assert(part->sequenced->len > 0);
        return g_ptr_array_index(part->sequenced, 0) != batch;
    }
    if (part->seq_producer_id != p->producer_id || part->seq_epoch != p->producer_epoch) {
        if (part->sequenced->len > 0) {
            return true; /* finish the old epoch's batches first */
        }
        part->seq_producer_id = p->producer_id;
        part->seq_epoch = p->producer_epoch;
        part->next_sequence = 0;
        part->last_acked_sequence = -1;
        part->unresolved = false;
    }
    if (part->unresolved && !p->txn.enabled) {
        /* TransactionManager.hasUnresolvedSequence: a batch that may have
         * been written ended without an answer, and until the partition's
         * in-flight batches are done (resolve_sequences) nobody knows what
         * sequence the broker expects, so no new batch gets one. Not for a
         * transactional producer: ksim has no abortUndrainedBatches, its
         * abort waits for every queued batch, and its epoch bump, not
         * resolve_sequences, ends the doubt (a simplification). */
        return true;
    }
    return false;
}

static void assign_sequence(struct ks_producer *p, struct ppart *part, struct pbatch *batch)
{
    if (!p->idempotent || batch->base_sequence >= 0) {
        return;
    }
    batch->producer_id = p->producer_id;
    batch->producer_epoch = p->producer_epoch;
    batch->base_sequence = part->next_sequence;
    part->next_sequence += batch->record_count;
    ks_ptr_array_add(part->sequenced, batch);
}

/* ---- the sender's ready index (P10) ------------------------------------------------------ */

/* Whether every fresh batch is sendable regardless of linger.ms and of
 * being full: the producer is stopping (close() ignores linger), or the
 * application is blocked on memory (RecordAccumulator.ready's `exhausted`).
 * Asked at each use of the index, as batch_sendable asks it; the placements
 * do not depend on it (LINGERING partitions count as ready while it holds),
 * so that its flips, one per record while memory is short, cost nothing. */
static bool ready_global_now(const struct ks_producer *p)
{
    return p->stopped || (p->waiter.active && p->meta_known);
}

/* The time from which batch_sendable(p, part, batch, now) holds, for the
 * head batch of a partition while nothing but the clock moves and the
 * producer is neither stopping nor blocked on memory: the end of its retry
 * backoff, and for a fresh batch that is not full the end of its
 * linger.ms. RecordAccumulator.batchReady decides the same from the
 * batch's waited time at every sender loop: sendable once not backing off
 * and full, lingered, exhausted or closed. */
static ks_time_ns head_ready_at(const struct ks_producer *p, const struct ppart *part,
                                const struct pbatch *batch)
{
    ks_time_ns backoff = batch_backoff_until(p, part, batch);
    if (batch->retry_count > 0) {
        return backoff;
    }
    /* A fresh batch (new, or a piece of a split one) has no backoff: so a
     * batch that is not sendable yet waits for its linger end alone, which
     * next_wakeup_ns takes as the time to look again. */
    ks_assert(backoff == 0);
    if (batch->closed || part->queue.length > 1 ||
        batch_estimated_bytes(p, batch) >= p->config->batch_size_bytes) {
        return 0;
    }
    return time_add(batch->created_ns, p->config->linger_ns);
}

/* The heaps: partitions ordered by (ready_at_ns, partition). */
static bool heap_before(const struct ks_producer *p, int32_t a, int32_t b)
{
    ks_time_ns at_a = p->parts[a].ready_at_ns;
    ks_time_ns at_b = p->parts[b].ready_at_ns;
    return at_a != at_b ? at_a < at_b : a < b;
}

static void heap_put(struct ks_producer *p, struct part_heap *heap, int32_t position,
                     int32_t partition)
{
    heap->ids[position] = partition;
    p->parts[partition].heap_index = position;
}

static void heap_sift_up(struct ks_producer *p, struct part_heap *heap, int32_t position)
{
    int32_t partition = heap->ids[position];
    while (position > 0) {
        int32_t parent = (position - 1) / 2;
        if (!heap_before(p, partition, heap->ids[parent])) {
            break;
        }
        heap_put(p, heap, position, heap->ids[parent]);
        position = parent;
    }
    heap_put(p, heap, position, partition);
}

static void heap_sift_down(struct ks_producer *p, struct part_heap *heap, int32_t position)
{
    int32_t partition = heap->ids[position];
    for (;;) {
        int32_t child = 2 * position + 1;
        if (child >= heap->count) {
            break;
        }
        if (child + 1 < heap->count && heap_before(p, heap->ids[child + 1], heap->ids[child])) {
            child++;
        }
        if (!heap_before(p, heap->ids[child], partition)) {
            break;
        }
        heap_put(p, heap, position, heap->ids[child]);
        position = child;
    }
    heap_put(p, heap, position, partition);
}

static void heap_push(struct ks_producer *p, struct part_heap *heap, int32_t partition)
{
    heap_put(p, heap, heap->count++, partition);
    heap_sift_up(p, heap, heap->count - 1);
}

static void heap_remove(struct ks_producer *p, struct part_heap *heap, int32_t partition)
{
    int32_t position = p->parts[partition].heap_index;
    ks_assert(position >= 0 && position < heap->count);
    ks_assert(heap->ids[position] == partition);
    p->parts[partition].heap_index = -1;
    int32_t last = heap->ids[--heap->count];
    if (last == partition) {
        return;
    }
    heap_put(p, heap, position, last);
    heap_sift_up(p, heap, position);
    heap_sift_down(p, heap, p->parts[last].heap_index);
}

/* The earliest ready_at_ns of the heap, or KS_TIME_NEVER. */
static ks_time_ns heap_first_ns(const struct ks_producer *p, const struct part_heap *heap)
{
    return heap->count > 0 ? p->parts[heap->ids[0]].ready_at_ns : KS_TIME_NEVER;
}

/* The first position in the set whose partition is >= partition. */
static int32_t set_lower_bound(const struct part_set *set, int32_t partition)
{
    int32_t low = 0;
    int32_t high = set->count;
    while (low < high) {
        int32_t middle = low + (high - low) / 2;
        if (set->ids[middle] < partition) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    return low;
}

static void set_insert(struct part_set *set, int32_t partition)
{
    if (set->count == set->capacity) {
        set->capacity = set->capacity > 0 ? set->capacity * 2 : 8;
        set->ids = realloc(set->ids, (size_t)set->capacity * sizeof(*set->ids));
        ks_assert(set->ids != NULL);
    }
    int32_t at = set_lower_bound(set, partition);
    ks_assert(at == set->count || set->ids[at] != partition);
    memmove(set->ids + at + 1, set->ids + at, (size_t)(set->count - at) * sizeof(*set->ids));
    set->ids[at] = partition;
    set->count++;
}

static void set_remove(struct part_set *set, int32_t partition)
{
    int32_t at = set_lower_bound(set, partition);
    ks_assert(at < set->count && set->ids[at] == partition);
    set->count--;
    memmove(set->ids + at, set->ids + at + 1, (size_t)(set->count - at) * sizeof(*set->ids));
}

/* Takes the partition out of whichever place holds it. */
static void ready_unplace(struct ks_producer *p, int32_t partition)
{
    struct ppart *part = &p->parts[partition];
    switch ((enum ready_place)part->place) {
    case PLACE_NONE: break;
    case PLACE_LEADERLESS: p->leaderless_count--; break;
    case PLACE_MUTED: break;
    case PLACE_BACKOFF: heap_remove(p, &p->backoff_heap, partition); break;
    case PLACE_LINGERING:
        heap_remove(p, &p->linger_heap, partition);
        set_remove(&p->linger_sets[part->placed_leader - 1], partition);
        bits_put(p->linger_bits, part->placed_leader,
                 p->linger_sets[part->placed_leader - 1].count > 0);
        break;
    case PLACE_READY:
        set_remove(&p->ready_sets[part->placed_leader - 1], partition);
        bits_put(p->ready_bits, part->placed_leader,
                 p->ready_sets[part->placed_leader - 1].count > 0);
        break;
    }
    part->place = PLACE_NONE;
}

/* Puts an unplaced partition with a leader in `place`, at `at`. */
static void ready_put(struct ks_producer *p, int32_t partition, enum ready_place place,
                      ks_time_ns at)
{
    struct ppart *part = &p->parts[partition];
    ks_assert(part->place == PLACE_NONE);
    part->place = (uint8_t)place;
    part->ready_at_ns = at;
    part->placed_leader = part->leader;
    switch (place) {
    case PLACE_NONE:
    case PLACE_LEADERLESS:
    case PLACE_MUTED: ks_assert(!"ready_put: a place in a set or heap"); break;
    case PLACE_BACKOFF: heap_push(p, &p->backoff_heap, partition); break;
    case PLACE_LINGERING:
        heap_push(p, &p->linger_heap, partition);
        set_insert(&p->linger_sets[part->leader - 1], partition);
        bits_put(p->linger_bits, part->leader, true);
        break;
    case PLACE_READY:
        set_insert(&p->ready_sets[part->leader - 1], partition);
        bits_put(p->ready_bits, part->leader, true);
        break;
    }
}

/* Places a partition by its queue, leader and head batch as they are now. */
static void ready_place(struct ks_producer *p, int32_t partition, ks_time_ns now)
{
    struct ppart *part = &p->parts[partition];
    const struct pbatch *head = g_queue_peek_head(&part->queue);
    if (head == NULL) {
        ready_unplace(p, partition);
        return;
    }
    if (part->leader < 1) {
        ks_assert(part->leader == -1);
        if (part->place != PLACE_LEADERLESS) {
            ready_unplace(p, partition);
            part->place = PLACE_LEADERLESS;
            p->leaderless_count++;
        }
        return;
    }
    if (part->muted) {
        /* RecordAccumulator.batchReady skips a muted partition: it makes no
         * node ready and gives no time to check again. (Without a leader it
         * still asks for metadata, above, as partitionReady does first.) */
        if (part->place != PLACE_MUTED) {
            ready_unplace(p, partition);
            part->place = PLACE_MUTED;
        }
        return;
    }
    ks_time_ns at = head_ready_at(p, part, head);
    enum ready_place place = at <= now               ? PLACE_READY
                             : head->retry_count > 0 ? PLACE_BACKOFF
                                                     : PLACE_LINGERING;
    if (part->place == place && part->placed_leader == part->leader) {
        if (place == PLACE_READY || part->ready_at_ns == at) {
            part->ready_at_ns = at;
            return; /* where it was (a READY one stays ready as the clock moves) */
        }
    }
    ready_unplace(p, partition);
    ready_put(p, partition, place, at);
}

/* Moves the heap's partitions whose time has come (ready_at_ns <= now) to
 * their leader's ready set. */
static void ready_promote(struct ks_producer *p, struct part_heap *heap, ks_time_ns now)
{
    while (heap_first_ns(p, heap) <= now) {
        int32_t partition = heap->ids[0];
        ks_time_ns at = p->parts[partition].ready_at_ns;
        ready_unplace(p, partition);
        ready_put(p, partition, PLACE_READY, at);
    }
}

/* Brings the ready index up to date at `now` (P10): the dirty partitions
 * placed again, then the backing-off and lingering partitions whose time
 * has come moved to their leader's ready set. Call before every use of the
 * index; a pass at one `now` may call it many times, at a cost of what
 * changed since. */
static void ready_refresh(struct ks_producer *p, ks_time_ns now)
{
    for (int32_t k = 0; k < p->dirty_count; k++) {
        int32_t partition = p->dirty_ids[k];
        p->parts[partition].dirty = false;
        ready_place(p, partition, now);
    }
    p->dirty_count = 0;
    ready_promote(p, &p->backoff_heap, now);
    ready_promote(p, &p->linger_heap, now);
    ks_assert(now >= p->ready_as_of_ns);
    p->ready_as_of_ns = now;
}

#if KS_DEBUG
/* P10 the long way, as the sender passes computed it before the index: a
 * visit of every active partition for the brokers with a sendable head
 * batch (ready[], broker_count), whether some partition has no leader, and
 * the earliest time after now at which a head batch becomes sendable. */
static ks_time_ns ready_scan(const struct ks_producer *p, ks_time_ns now, bool *ready,
                             bool *leaderless_out)
{
    ks_time_ns next = KS_TIME_NEVER;
    for (int32_t b = 0; b < p->broker_count; b++) {
        ready[b] = false;
    }
    *leaderless_out = false;
    for (int32_t i = active_next(p, 0); i >= 0; i = active_next(p, i + 1)) {
        const struct ppart *part = &p->parts[i];
        const struct pbatch *batch = part->queue.head->data;
        if (part->leader < 0) {
            *leaderless_out = true;
            continue;
        }
        if (part->muted) {
            continue; /* neither ready nor a time to look again (P16) */
        }
        bool sendable = batch_sendable(p, part, batch, now);
        ready[part->leader - 1] |= sendable;
        ks_time_ns until = batch_backoff_until(p, part, batch);
        if (batch->retry_count == 0 && !sendable) {
            until = time_add(batch->created_ns, p->config->linger_ns);
        }
        if (until > now) {
            next = time_min(next, until);
        }
    }
    return next;
}
#endif

/* The brokers that lead a partition whose head batch can go now
 * (RecordAccumulator.ready's ready nodes), in the set ready (BROKER_WORDS),
 * from the ready index and its sets of brokers (P12); a partition with data and no known leader asks for new
 * metadata (its unknownLeaderTopics). Returns the earliest time after now
 * at which a head batch becomes sendable (nextReadyCheckDelayMs): a retry's
 * backoff end, or a linger end unless every fresh batch is sendable now. */
static ks_time_ns ready_brokers(struct ks_producer *p, ks_time_ns now, uint64_t *ready)
{
    ready_refresh(p, now);
    if (p->leaderless_count > 0) {
        request_metadata_update(p);
    }
    bool global = ready_global_now(p);
    uint64_t linger_mask = global ? ~UINT64_C(0) : 0;
    for (int32_t w = 0; w < p->broker_words; w++) {
        ready[w] = p->ready_bits[w] | (p->linger_bits[w] & linger_mask);
    }
    ks_time_ns next = heap_first_ns(p, &p->backoff_heap);
    if (!global) {
        next = time_min(next, heap_first_ns(p, &p->linger_heap));
    }
#if KS_DEBUG
    bool *scanned = g_newa(bool, (gsize)p->broker_count);
    bool leaderless = false;
    ks_assert(ready_scan(p, now, scanned, &leaderless) == next); /* P10 */
    ks_assert(leaderless == (p->leaderless_count > 0));          /* P10 */
    for (int32_t b = 1; b <= p->broker_count; b++) {
        ks_assert(scanned[b - 1] == bits_has(ready, b)); /* P10, P12 */
    }
#endif
    return next;
}

/* The partitions a request to broker may drain, sorted: none unless the
 * broker is ready (a head batch of its is sendable, or every fresh batch is:
 * ready_global_now), and then its ready set with its lingering set merged
 * in. RecordAccumulator.drainBatchesForOneNode takes the first batch of
 * every partition of a ready node that is not muted or backing off, full or
 * not, lingered or not: one batch whose linger.ms ended carries the
 * node's other partitions' young batches with it. Each request asks again
 * (the Java sender loops, calling ready() before every drain): once the
 * ready partitions are drained, a lone young batch left waits for its own
 * linger.ms. Borrowed: valid until the next ready_refresh. */
static const int32_t *drain_candidates(struct ks_producer *p, int32_t broker, int32_t *count_out)
{
    const struct part_set *ready = &p->ready_sets[broker - 1];
    const struct part_set *lingering = &p->linger_sets[broker - 1];
    if (ready->count == 0 && !ready_global_now(p)) {
        *count_out = 0;
        return ready->ids;
    }
    if (lingering->count == 0) {
        *count_out = ready->count;
        return ready->ids;
    }
    int32_t r = 0;
    int32_t l = 0;
    int32_t n = 0;
    while (r < ready->count || l < lingering->count) {
        bool take_ready =
            l == lingering->count || (r < ready->count && ready->ids[r] < lingering->ids[l]);
        p->walk_ids[n++] = take_ready ? ready->ids[r++] : lingering->ids[l++];
    }
    *count_out = n;
    return p->walk_ids;
}

/* RecordAccumulator.drainBatchesForOneNode: one request for broker with at
 * most one batch per partition it leads. Returns the number of batches put
 * in out[] (0 when the walk stopped at once).
 *
 * The walk starts at the broker's drain index (getDrainIndex, modulo the
 * number of partitions it leads) and visits the broker's partitions in
 * cyclic order, each taking the drain index as it is visited
 * (updateDrainIndex), until it has been round once or stops: at a batch that
 * would take the request past max.request.size, or at a partition that
 * shouldStopDrainBatchesForPartition holds back (idempotence_blocks). A stop
 * ends the whole request, not just that partition, and leaves the drain
 * index at the partition it stopped at, so the next request starts there; a
 * walk that went round leaves it at the partition before its start, so the
 * next one starts one partition earlier. Only the partitions whose head
 * batch is sendable can give a batch (P10), so only those are visited here:
 * the others, empty or backing off, are passed over by Kafka's walk, which
 * moves the drain index through them to the same end. The sets do not change
 * during the walk: what a drain changes waits in dirty_ids for the next
 * ready_refresh. */
static int32_t drain_one_request(struct ks_producer *p, int32_t broker, struct pbatch **out,
                                 ks_time_ns now)
{
    int32_t n = 0;
    const int32_t *ids = drain_candidates(p, broker, &n);
    if (n == 0) {
        return 0; /* not a ready node: Kafka does not drain it */
    }
    const struct part_set *led = &p->led_sets[broker - 1];
    ks_assert(led->count >= n); /* every candidate is led by broker (P10, P15) */
    int32_t *index = &p->drain_index[broker - 1];
    int32_t start = *index % led->count;
    struct part_set view = { (int32_t *)ids, n, n };
    int32_t from = set_lower_bound(&view, led->ids[start]);
    int32_t count = 0;
    int64_t bytes = 0;
    int32_t stopped_at = -1;
    for (int32_t k = 0; k < n; k++) {
        int32_t partition = ids[(from + k) % n];
        struct ppart *part = &p->parts[partition];
        ks_assert(part->leader == broker);
        ks_assert(!part->muted); /* P16: in no set */
        struct pbatch *batch = g_queue_peek_head(&part->queue);
        ks_assert(batch != NULL);
        ks_assert(batch_backoff_until(p, part, batch) <= now); /* P10 */
        /* A request takes batches while it stays within max.request.size
         * (its first batch always); a partition whose next batch may not go
         * yet stops the request too. */
        if ((count > 0 &&
             bytes + batch_estimated_bytes(p, batch) > p->config->max_request_size_bytes) ||
            idempotence_blocks(p, part, batch)) {
            stopped_at = partition;
            break;
        }
        g_queue_pop_head_link(&part->queue);
        active_update(p, partition);
        assign_sequence(p, part, batch);
        out[count++] = batch;
        bytes += batch_estimated_bytes(p, batch);
    }
    if (stopped_at >= 0) {
        int32_t position = set_lower_bound(led, stopped_at);
        ks_assert(position < led->count && led->ids[position] == stopped_at);
        *index = position;
    } else {
        *index = (start + led->count - 1) % led->count;
    }
    return count;
}

/* Sender.sendProducerData: each ready broker whose connection is ready gets
 * requests while it has in-flight room; for the others NetworkClient.ready
 * starts a connect (or waits out the reconnect backoff), and their batches
 * wait in the accumulator. */
static void drain(struct ks_producer *p, ks_time_ns now)
{
    uint64_t ready[BROKER_WORDS] = { 0 };
    ready_brokers(p, now, ready);
    struct pbatch **batches = NULL;
    for (int32_t broker = bits_next(p, ready, 1); broker > 0;
         broker = bits_next(p, ready, broker + 1)) {
        if (!conn_ready(p, broker, now)) {
            continue;
        }
        if (batches == NULL) {
            batches = g_newa(struct pbatch *, (gsize)p->partition_count);
        }
        struct pconn *conn = &p->conns[broker - 1];
        while (p->config->acks == KS_ACKS_NONE || (int32_t)conn->inflight->len < p->in_flight_max) {
            ready_refresh(p, now); /* the partitions the last request drained */
            int32_t count = drain_one_request(p, broker, batches, now);
            if (count == 0) {
                break;
            }
            send_request(p, broker, batches, count, now);
        }
    }
}

/* Puts a batch back for a retry (RecordAccumulator.reenqueue): without
 * idempotence at the front (addFirst), with it in sequence order among the
 * queued retries at the front. */
static void reenqueue(struct ks_producer *p, struct pbatch *batch, ks_time_ns now)
{
    struct ppart *part = &p->parts[batch->partition];
    batch->retry_count++;
    batch->requeued = true;
    batch->closed = true;
    uint64_t draw = ks_world_random_u64(p->world, KS_RNG_CLIENT);
    batch->retry_at_ns =
        time_add(now, (int64_t)ks_producer_retry_backoff_ns(p->config->retry_backoff_ns,
                                                            p->config->retry_backoff_ns_max,
                                                            batch->retry_count, draw));
    if (batch->base_sequence < 0) {
        g_queue_push_head_link(&part->queue, batch_link(batch));
        active_update(p, batch->partition);
        return;
    }
    GList *link = part->queue.head;
    guint position = 0;
    for (; link != NULL; link = link->next, position++) {
        const struct pbatch *queued = link->data;
        if (queued->base_sequence < 0 || queued->base_sequence > batch->base_sequence) {
            break;
        }
    }
    g_queue_push_nth_link(&part->queue, (gint)position, batch_link(batch));
    active_update(p, batch->partition);
}

static bool error_is_metadata(int16_t error)
{
    /* InvalidMetadataException and its subclasses (NetworkException and
     * KafkaStorageException are among them). */
    switch (error) {
    case KS_ERR_UNKNOWN_TOPIC_OR_PARTITION:
    case KS_ERR_LEADER_NOT_AVAILABLE:
    case KS_ERR_NOT_LEADER_OR_FOLLOWER:
    case KS_ERR_NETWORK_EXCEPTION:
    case KS_ERR_KAFKA_STORAGE_ERROR:
    case KS_ERR_FENCED_LEADER_EPOCH:
    case KS_ERR_UNKNOWN_LEADER_EPOCH: return true;
    }
    return false;
}

static bool error_means_appended(int16_t error)
{
    /* The leader wrote the batch but could not confirm the replication. */
    return error == KS_ERR_REQUEST_TIMED_OUT || error == KS_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND;
}

/* TransactionManager.canRetry for the idempotent producer (KIP-360). Sets
 * the partition's bump flag when the broker really has a gap. */
static bool idempotent_can_retry(struct ks_producer *p, struct pbatch *batch, int16_t error)
{
    struct ppart *part = &p->parts[batch->partition];
    if (error == KS_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER) {
        if (!part->unresolved && batch->base_sequence != part->last_acked_sequence + 1) {
            return true; /* an earlier batch is still pending: wait for it */
        }
        part->bump_required = true;
        p->sequences_flagged = true;
        return true;
    }
    if (error == KS_ERR_UNKNOWN_PRODUCER_ID) {
        part->bump_required = true;
        p->sequences_flagged = true;
        return true;
    }
    return ks_error_is_retriable(error);
}

/* Sender.completeBatch on MESSAGE_TOO_LARGE for a batch of several records:
 * RecordAccumulator.splitAndReenqueue. The compression ratio estimate is
 * reset to max(1, the big batch's ratio); ProducerBatch.split refills new
 * batches of at most batch.size by the same room rule as an append, keeping
 * the records' order, the batch's creation time and, with idempotence, its
 * sequence range (the new batches take consecutive base sequences); they are
 * treated as never tried (no backoff, retries not counted) and go back to the
 * front of the queue in order. Their buffers are allocated off the
 * accumulator (createBatchOffAccumulatorForRecord), so they reserve none of
 * buffer.memory. With batch.size above the topic's max.message.bytes an
 * uncompressed batch splits into itself and is refused again, until
 * delivery.timeout.ms ends it, as in the Java client. */
static void split_and_reenqueue(struct ks_producer *p, struct pbatch *big)
{
    int32_t partition = big->partition;
    struct ppart *part = &p->parts[partition];
    if (big->encoded != NULL && p->config->compression.codec != KS_CODEC_NONE) {
        int64_t records_bytes = big->size_bytes - KS_BATCH_HEADER_BYTES;
        int64_t observed =
            records_bytes > 0 ? (int64_t)big->encoded->len * RATIO_PPM_ONE / records_bytes : 0;
        p->ratio_ppm = observed > RATIO_PPM_ONE ? observed : RATIO_PPM_ONE;
    }
    int32_t batch_size = p->config->batch_size_bytes;
    GPtrArray *pieces = g_ptr_array_new();
    struct pbatch *piece = NULL;
    for (int32_t i = 0; i < big->record_count; i++) {
        struct precord record = big->records[i];
        if (piece != NULL) {
            const struct precord *first = &piece->records[0];
            int32_t size = record_size(p, &record, piece->record_count, first->timestamp_ms);
            if (batch_estimated_bytes(p, piece) + size <= batch_size) {
                record.size_bytes = size;
                batch_add_record(piece, &record);
                piece->size_bytes += size;
                continue;
            }
        }
        piece = batch_new(p, partition, 0);
        piece->created_ns = big->created_ns;
        /* In the live list with the big batch's age: just before it, after
         * the pieces made before this one (P11). */
        live_unlink(p, piece);
        live_link(p, piece, big->live_prev);
        expire_floor_lower(p, piece);
        piece->closed = true;
        piece->requeued = true;
        piece->maybe_written = big->maybe_written;
        piece->producer_id = big->producer_id;
        piece->producer_epoch = big->producer_epoch;
        record.size_bytes = record_size(p, &record, 0, record.timestamp_ms);
        batch_add_record(piece, &record);
        piece->size_bytes += record.size_bytes;
        ks_ptr_array_add(pieces, piece);
    }
    /* The sequences of the big batch, in order (ProducerBatch.split). */
    if (big->base_sequence >= 0) {
        int32_t sequence = big->base_sequence;
        guint position = 0;
        while (position < part->sequenced->len &&
               g_ptr_array_index(part->sequenced, position) != big) {
            position++;
        }
        ks_assert(position < part->sequenced->len); /* P5: it was incomplete */
        g_ptr_array_remove_index(part->sequenced, position);
        for (guint k = 0; k < pieces->len; k++) {
            struct pbatch *each = g_ptr_array_index(pieces, k);
            each->base_sequence = sequence;
            sequence += each->record_count;
            g_ptr_array_insert(part->sequenced, (gint)(position + k), each);
        }
    }
    /* The big batch's records now live in the pieces: free it unreported. */
    big->record_count = 0;
    batch_free(p, big);
    /* Back to the front, last piece first, so they go out in order. */
    for (guint k = pieces->len; k > 0; k--) {
        struct pbatch *each = g_ptr_array_index(pieces, k - 1);
        if (each->base_sequence < 0) {
            g_queue_push_head_link(&part->queue, batch_link(each));
        } else {
            GList *link = part->queue.head;
            guint at = 0;
            for (; link != NULL; link = link->next, at++) {
                const struct pbatch *queued = link->data;
                if (queued->base_sequence < 0 || queued->base_sequence > each->base_sequence) {
                    break;
                }
            }
            g_queue_push_nth_link(&part->queue, (gint)at, batch_link(each));
        }
    }
    active_update(p, partition);
    g_ptr_array_free(pieces, TRUE);
}

/* Completes one attempt of a batch with `error` (Sender.completeBatch). */
static void complete_attempt(struct ks_producer *p, struct pbatch *batch, int16_t error,
                             int64_t base_offset, bool stale, ks_time_ns now)
{
    struct ppart *part = &p->parts[batch->partition];
    if (error == KS_ERR_NONE || (p->idempotent && error == KS_ERR_DUPLICATE_SEQUENCE_NUMBER)) {
        if (p->idempotent && !stale && batch->base_sequence >= 0) {
            int32_t last = batch_last_sequence(batch);
            if (last > part->last_acked_sequence) {
                part->last_acked_sequence = last;
            }
        } else if (p->idempotent && stale) {
            /* Written under numbers it no longer has: renumber the rest so
             * that no hole is left where it was. */
            part->bump_required = true;
            p->sequences_flagged = true;
        }
        batch_end(p, batch, KS_OUTCOME_ACKED, error == KS_ERR_NONE ? base_offset : -1);
        return;
    }
    if (error == KS_ERR_MESSAGE_TOO_LARGE && batch->record_count > 1 && !stale) {
        split_and_reenqueue(p, batch);
        return;
    }
    batch->last_error = error;
    if (p->txn.enabled && !stale &&
        (error == KS_ERR_INVALID_PRODUCER_EPOCH || error == KS_ERR_PRODUCER_FENCED)) {
        /* A partition leader has seen a newer epoch of our transactional.id
         * (the coordinator's markers): fatal; txn_step stops the producer. */
        p->txn.fence_pending = true;
    }
    if (error_means_appended(error) || error == KS_ERR_NETWORK_EXCEPTION) {
        batch->maybe_written = true;
    }
    if (error_is_metadata(error)) {
        request_metadata_update(p);
    }
    bool retriable;
    if (stale) {
        retriable = true; /* renumbered since it was sent: the error is about the old numbers */
    } else if (p->idempotent) {
        retriable = idempotent_can_retry(p, batch, error);
    } else {
        retriable = ks_error_is_retriable(error);
    }
    bool in_time = now < time_add(batch->created_ns, p->config->delivery_timeout_ns);
    if (retriable && in_time && batch->retry_count < p->config->retries) {
        reenqueue(p, batch, now);
        return;
    }
    enum ks_record_outcome_kind outcome = unacked_outcome(batch);
    enum ks_event_reason why = !retriable ? KS_REASON_ERROR_NOT_RETRIABLE
                               : in_time  ? KS_REASON_RETRIES_EXHAUSTED
                                          : KS_REASON_ERROR_AFTER_DELIVERY_TIMEOUT;
    int64_t count = (int64_t)batch->record_count;
    int32_t partition = batch->partition;
    batch_end(p, batch, outcome, -1);
    report_error(p, partition, count, outcome, why, error);
}

/* The entry of a request in flight on conn with this correlation id, or NULL. */
static struct pentry *conn_find(struct pconn *conn, int64_t correlation_id, guint *index_out)
{
    for (guint i = 0; i < conn->inflight->len; i++) {
        struct prequest *request = g_ptr_array_index(conn->inflight, i);
        for (int32_t e = 0; e < request->entry_count; e++) {
            if (request->entries[e].correlation_id == correlation_id) {
                *index_out = i;
                return &request->entries[e];
            }
        }
    }
    return NULL;
}

static bool entry_stale(const struct pentry *entry, const struct pbatch *batch)
{
    return entry->producer_id != batch->producer_id ||
           entry->producer_epoch != batch->producer_epoch ||
           entry->base_sequence != batch->base_sequence;
}

/* KIP-951: Sender.handleProduceResponse collects the CurrentLeader of
 * NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH answers and hands them to
 * Metadata.updatePartitionLeadership, which takes a leader only with a newer
 * epoch than the one it knows. The metadata refresh is still requested
 * (complete_attempt), but the retry need not wait for it. */
static void update_leadership(struct ks_producer *p, int32_t partition,
                              const struct ks_produce_response *response)
{
    if (!p->spec->cluster->client_leader_discovery ||
        (response->error_code != KS_ERR_NOT_LEADER_OR_FOLLOWER &&
         response->error_code != KS_ERR_FENCED_LEADER_EPOCH)) {
        return;
    }
    if (response->current_leader_id < 1 || response->current_leader_id > p->broker_count ||
        response->current_leader_epoch < 0 || !p->meta_known) {
        return;
    }
    struct ppart *part = &p->parts[partition];
    if (part->leader_epoch >= 0 && response->current_leader_epoch <= part->leader_epoch) {
        return;
    }
    set_leader(p, partition, response->current_leader_id, response->current_leader_epoch);
}

/* Returns whether the response was an answer without an error, or ignored:
 * what a sender pass may then skip (sender_idle). */
static bool on_produce_response(struct ks_producer *p, ks_node_id source, const void *message,
                                size_t bytes)
{
    ks_assert(bytes == sizeof(struct ks_produce_response)); /* see producer_receive */
    ks_assert(source >= 1 && source <= (ks_node_id)p->broker_count);
    const struct ks_produce_response *response = message;
    struct pconn *conn = &p->conns[source - 1];
    guint index = 0;
    struct pentry *entry = conn_find(conn, response->correlation_id, &index);
    if (entry == NULL || entry->answered) {
        return true; /* its connection was reset, or an earlier incarnation sent it */
    }
    struct prequest *request = entry->request;
    entry->answered = true;
    request->pending_count--;
    partition_unmute(p, entry->partition); /* Sender.completeBatch, at its end */
    struct pbatch *batch = entry->batch;
    entry->batch = NULL;
    if (request->pending_count == 0) {
        /* the whole request is answered: its in-flight slot frees */
        g_ptr_array_remove_index(conn->inflight, index);
    }
    if (batch != NULL) {
        batch->entry = NULL;
        /* Who answered, and in which leader epoch: kept for the records'
         * outcome (ksim's response carries the epoch, as Kafka's
         * ProduceResponse CurrentLeader field does since KIP-951). */
        batch->acked_broker = (int32_t)source;
        batch->acked_leader_epoch = response->leader_epoch;
        int32_t partition = batch->partition;
        complete_attempt(p, batch, response->error_code, response->base_offset,
                         entry_stale(entry, batch), now_ns(p));
        update_leadership(p, partition, response);
    }
    if (request->pending_count == 0) {
        request_free(p, request);
    }
    return response->error_code == KS_ERR_NONE;
}

/* A timeline line for a closed connection, at most one per broker per
 * second: which batches go back to be resent, and why. */
static void report_disconnect(struct ks_producer *p, int32_t broker, const GPtrArray *failed,
                              ks_time_ns now, enum ks_event_reason reason)
{
    struct pconn *conn = &p->conns[broker - 1];
    int64_t second = (int64_t)(now / KS_NS_PER_S);
    if (conn->event_second == second || p->observer == NULL || p->observer->on_event == NULL) {
        return;
    }
    conn->event_second = second;
    int64_t batch_count = 0;
    int64_t record_count = 0;
    for (guint i = 0; i < failed->len; i++) {
        const struct prequest *request = g_ptr_array_index(failed, i);
        for (int32_t e = 0; e < request->entry_count; e++) {
            const struct pbatch *batch = request->entries[e].batch;
            if (batch != NULL) {
                batch_count++;
                record_count += (int64_t)batch->record_count;
            }
        }
    }
    struct ks_cluster_event event;
    ks_cluster_event_init(&event, now, KS_EV_PRODUCER_ERROR);
    event.reason = reason;
    event.producer_index = p->index;
    event.broker = broker;
    event.topic_index = p->config->topic_index;
    event.batch_count = batch_count;
    event.record_count = record_count;
    event.idempotent = p->idempotent;
    p->observer->on_event(p->observer->context, &event);
}

/* ClusterConnectionStates.disconnected and NetworkClient.processDisconnection:
 * every request in flight on the connection fails as disconnected
 * (NETWORK_EXCEPTION, its fate unknown), a Metadata or InitProducerId
 * attempt on it fails, the reconnect backoff grows with the failures since
 * the last ready connection, a failed connect also grows the setup timeout
 * (any other disconnect resets it), and new metadata is requested
 * (DefaultMetadataUpdater.handleServerDisconnect). */
static void conn_disconnect(struct ks_producer *p, int32_t broker, ks_time_ns now,
                            enum ks_event_reason reason)
{
    struct pconn *conn = &p->conns[broker - 1];
    bool was_connecting = conn->state == CONN_CONNECTING;
    if (p->txn.request_id != 0 && p->txn.request_broker == broker) {
        /* NetworkClient fails the requests of a closed connection; the
         * TransactionManager looks its coordinator up again. */
        txn_retry_later(p, true, KS_ERR_NETWORK_EXCEPTION);
    }
    conn_set_reset(p, broker, false);
    conn_set_state(p, broker, CONN_DISCONNECTED);
    conn->connect_id = 0;
    conn->last_attempt_ns = now;
    conn->reconnect_backoff_ns = reconnect_backoff(p, conn->failed_attempts);
    conn->failed_attempts++;
    if (was_connecting) {
        conn->failed_connect_attempts++;
        conn->setup_timeout_ns = setup_timeout(p, conn->failed_connect_attempts);
    } else {
        conn->failed_connect_attempts = 0;
        conn->setup_timeout_ns = setup_timeout(p, 0);
    }
    /* Oldest first, as NetworkClient's clearAll iterates; each retry goes to
     * the front of its queue, so their order flips. */
    GPtrArray *failed = conn->inflight;
    conn->inflight = g_ptr_array_new();
    if (failed->len > 0 || reason == KS_REASON_CONNECTION_SETUP_TIMEOUT) {
        report_disconnect(p, broker, failed, now, reason);
    }
    for (guint i = 0; i < failed->len; i++) {
        struct prequest *request = g_ptr_array_index(failed, i);
        for (int32_t e = 0; e < request->entry_count; e++) {
            struct pentry *entry = &request->entries[e];
            struct pbatch *batch = entry->batch;
            entry->batch = NULL;
            if (!entry->answered) {
                partition_unmute(p, entry->partition); /* completeBatch of the disconnect */
            }
            if (batch != NULL) {
                batch->entry = NULL;
                complete_attempt(p, batch, KS_ERR_NETWORK_EXCEPTION, -1, entry_stale(entry, batch),
                                 now);
            }
        }
        request_free(p, request);
    }
    g_ptr_array_free(failed, TRUE);
    if (p->meta_broker == broker) {
        metadata_failed(p, now);
    }
    if (p->pid_broker == broker) {
        init_producer_id_failed(p);
    }
    request_metadata_update(p);
}

/* Connections that must close now: the broker's process died (its
 * connections were reset), a request on it passed request.timeout.ms
 * (NetworkClient.handleTimedOutRequests), or a connect passed its setup
 * timeout (handleTimedOutConnections). */
static void expire_requests(struct ks_producer *p, ks_time_ns now)
{
    /* P12: only these brokers can have something to close or resend. A
     * request past its deadline (the oldest one is, when any is) makes it
     * every broker, as rare as a timeout is. What one broker's disconnect
     * changes (its own connection, the metadata and InitProducerId attempts
     * on it) adds no other broker. */
    uint64_t due[BROKER_WORDS] = { 0 };
    bool timeouts = p->request_oldest != NULL && p->request_oldest->deadline_ns <= now;
    for (int32_t w = 0; w < p->broker_words; w++) {
        due[w] = timeouts ? ~UINT64_C(0) : p->reset_bits[w] | p->connecting_bits[w];
    }
    if (p->meta_request_id != 0) {
        bits_put(due, p->meta_broker, true);
    }
    if (p->pid_request_id != 0) {
        bits_put(due, p->pid_broker, true);
    }
    for (int32_t broker = bits_next(p, due, 1); broker > 0;
         broker = bits_next(p, due, broker + 1)) {
        int32_t b = broker - 1;
        struct pconn *conn = &p->conns[b];
        if (conn->reset_pending) {
            conn_set_reset(p, broker, false);
            if (conn->state != CONN_DISCONNECTED) {
                conn_disconnect(p, b + 1, now, KS_REASON_CONNECTION_BROKER_DOWN);
            }
            continue;
        }
        bool timed_out = false;
        for (guint i = 0; i < conn->inflight->len && !timed_out; i++) {
            const struct prequest *request = g_ptr_array_index(conn->inflight, i);
            timed_out = request->deadline_ns <= now;
        }
        timed_out |=
            p->meta_request_id != 0 && p->meta_broker == b + 1 && p->meta_deadline_ns <= now;
        timed_out |= p->pid_request_id != 0 && p->pid_broker == b + 1 && p->pid_deadline_ns <= now;
        if (timed_out) {
            conn_disconnect(p, b + 1, now, KS_REASON_CONNECTION_TIMEOUT);
        } else if (conn->state == CONN_CONNECTING && now >= setup_deadline_ns(conn)) {
            conn_disconnect(p, b + 1, now, KS_REASON_CONNECTION_SETUP_TIMEOUT);
        } else if (conn->state == CONN_CONNECTING && now >= syn_retransmit_ns(conn)) {
            conn_send_syn(p, b + 1);
        }
    }
}

/* delivery.timeout.ms (Sender.sendProducerData: expired batches in the
 * accumulator, and getExpiredInflightBatches for those in flight). */
static void expire_batches(struct ks_producer *p, ks_time_ns now)
{
    if (now < p->expire_floor_ns) {
        return; /* no batch is due yet */
    }
    for (int32_t i = active_next(p, 0); i >= 0; i = active_next(p, i + 1)) {
        struct ppart *part = &p->parts[i];
        GList *link = part->queue.head;
        while (link != NULL) {
            GList *next = link->next;
            struct pbatch *batch = link->data;
            bool expired = now >= time_add(batch->created_ns, p->config->delivery_timeout_ns);
            if (!expired && !batch->requeued) {
                break; /* fresh batches behind it are younger (queue order, P6) */
            }
            if (expired) {
                g_queue_unlink(&part->queue, link);
                active_update(p, i);
                enum ks_record_outcome_kind outcome = unacked_outcome(batch);
                int64_t count = (int64_t)batch->record_count;
                batch_end(p, batch, outcome, -1);
                report_error(p, i, count, outcome, KS_REASON_DELIVERY_TIMEOUT, KS_ERR_NONE);
            }
            link = next;
        }
    }
    for (int32_t b = 0; b < p->broker_count; b++) {
        struct pconn *conn = &p->conns[b];
        for (guint i = 0; i < conn->inflight->len; i++) {
            struct prequest *request = g_ptr_array_index(conn->inflight, i);
            for (int32_t e = 0; e < request->entry_count; e++) {
                struct pbatch *batch = request->entries[e].batch;
                if (batch == NULL ||
                    now < time_add(batch->created_ns, p->config->delivery_timeout_ns)) {
                    continue;
                }
                /* In flight: its fate is not known. The request keeps its
                 * slot until it is answered or times out. */
                batch->maybe_written = true;
                int32_t partition = batch->partition;
                int64_t count = (int64_t)batch->record_count;
                batch_end(p, batch, KS_OUTCOME_UNKNOWN, -1);
                report_error(p, partition, count, KS_OUTCOME_UNKNOWN,
                             KS_REASON_DELIVERY_TIMEOUT_IN_FLIGHT, KS_ERR_NONE);
            }
        }
    }
}

/* ---- invariants --------------------------------------------------------------------------- */

static int64_t check_batch(const struct ks_producer *p, const struct pbatch *batch,
                           int32_t partition, int64_t *reserved)
{
    ks_assert(batch->partition == partition);
    ks_assert(batch->record_count > 0 && batch->record_count <= batch->record_capacity);
    ks_assert((batch->records == &batch->first_record) == (batch->record_capacity == 1));
    ks_assert(time_add(batch->created_ns, p->config->delivery_timeout_ns) >=
              p->expire_floor_ns); /* P9 */
    /* P11: in the live list */
    ks_assert(batch->live_prev != NULL || p->live_head == batch);
    *reserved += batch->reserved_bytes;
    if (p->idempotent && batch->base_sequence >= 0) {
        ks_assert(batch->producer_id == p->parts[partition].seq_producer_id);
        ks_assert(batch->producer_epoch == p->parts[partition].seq_epoch); /* P5 */
    }
    return (int64_t)batch->record_count;
}

/* P10: a heap's order, and each partition in it placed there. */
static int32_t check_heap(const struct ks_producer *p, const struct part_heap *heap,
                          enum ready_place place)
{
    for (int32_t k = 0; k < heap->count; k++) {
        const struct ppart *part = &p->parts[heap->ids[k]];
        ks_assert(part->place == place);
        ks_assert(part->heap_index == k);
        ks_assert(part->ready_at_ns > p->ready_as_of_ns);
        if (k > 0) {
            ks_assert(!heap_before(p, heap->ids[k], heap->ids[(k - 1) / 2]));
        }
    }
    return heap->count;
}

/* P10: a set's order, and each partition in it placed there for broker. */
static int32_t check_set(const struct ks_producer *p, const struct part_set *set,
                         enum ready_place place, int32_t broker)
{
    for (int32_t k = 0; k < set->count; k++) {
        const struct ppart *part = &p->parts[set->ids[k]];
        ks_assert(part->place == place);
        ks_assert(part->placed_leader == broker);
        if (k > 0) {
            ks_assert(set->ids[k - 1] < set->ids[k]);
        }
    }
    return set->count;
}

/* P10: every partition that is not dirty is placed as its queue, leader
 * and head batch say, as of the last ready_refresh; the heaps and sets
 * hold exactly the partitions placed in them. */
static void check_ready_index(const struct ks_producer *p)
{
    int32_t dirty = 0;
    int32_t count[PLACE_READY + 1] = { 0 };
    for (int32_t k = 0; k < p->dirty_count; k++) {
        ks_assert(p->parts[p->dirty_ids[k]].dirty);
    }
    for (int32_t i = 0; i < p->partition_count; i++) {
        const struct ppart *part = &p->parts[i];
        enum ready_place place = (enum ready_place)part->place;
        count[place]++;
        if (place != PLACE_BACKOFF && place != PLACE_LINGERING) {
            ks_assert(part->heap_index == -1);
        }
        if (place == PLACE_READY) {
            ks_assert(part->ready_at_ns <= p->ready_as_of_ns);
        }
        if (part->dirty) {
            dirty++;
            continue; /* placed again at the next ready_refresh */
        }
        const struct pbatch *head = g_queue_peek_head((GQueue *)&part->queue);
        if (head == NULL) {
            ks_assert(place == PLACE_NONE);
        } else if (part->leader < 1) {
            ks_assert(place == PLACE_LEADERLESS);
        } else if (part->muted) {
            ks_assert(place == PLACE_MUTED); /* P16 */
        } else {
            ks_time_ns at = head_ready_at(p, part, head);
            ks_assert(part->ready_at_ns == at);
            ks_assert(part->placed_leader == part->leader);
            if (at <= p->ready_as_of_ns) {
                ks_assert(place == PLACE_READY);
            } else {
                ks_assert(place == (head->retry_count > 0 ? PLACE_BACKOFF : PLACE_LINGERING));
            }
        }
    }
    ks_assert(dirty == p->dirty_count);
    ks_assert(count[PLACE_LEADERLESS] == p->leaderless_count);
    ks_assert(count[PLACE_BACKOFF] == check_heap(p, &p->backoff_heap, PLACE_BACKOFF));
    ks_assert(count[PLACE_LINGERING] == check_heap(p, &p->linger_heap, PLACE_LINGERING));
    int32_t ready = 0;
    int32_t lingering = 0;
    for (int32_t b = 1; b <= p->broker_count; b++) {
        ready += check_set(p, &p->ready_sets[b - 1], PLACE_READY, b);
        lingering += check_set(p, &p->linger_sets[b - 1], PLACE_LINGERING, b);
    }
    ks_assert(ready == count[PLACE_READY]);
    ks_assert(lingering == count[PLACE_LINGERING]);
}

/* P15: the led sets hold each partition with a known leader once, in its
 * leader's set, sorted. */
static void check_led_sets(const struct ks_producer *p)
{
    int32_t led = 0;
    for (int32_t i = 0; i < p->partition_count; i++) {
        led += p->parts[i].leader >= 1 ? 1 : 0;
    }
    int32_t total = 0;
    for (int32_t b = 1; b <= p->broker_count; b++) {
        const struct part_set *set = &p->led_sets[b - 1];
        ks_assert(p->drain_index[b - 1] >= 0);
        for (int32_t k = 0; k < set->count; k++) {
            ks_assert(p->parts[set->ids[k]].leader == b);
            if (k > 0) {
                ks_assert(set->ids[k - 1] < set->ids[k]);
            }
        }
        total += set->count;
    }
    ks_assert(total == led);
}

/* P11: the live list is in creation order, with `batch_count` batches. */
static void check_live_list(const struct ks_producer *p, int64_t batch_count)
{
    int64_t count = 0;
    const struct pbatch *before = NULL;
    for (const struct pbatch *batch = p->live_head; batch != NULL; batch = batch->live_next) {
        ks_assert(batch->live_prev == before);
        if (before != NULL) {
            ks_assert(before->created_ns <= batch->created_ns);
        }
        before = batch;
        count++;
    }
    ks_assert(p->live_tail == before);
    ks_assert(count == batch_count);
}

/* P12: the sets of brokers say what the sets of partitions and the
 * connections say, and the list of requests in flight holds exactly those
 * of the connections, in send order and so in deadline order. */
static void check_brokers(const struct ks_producer *p)
{
    int64_t listed = 0;
    const struct prequest *before = NULL;
    for (const struct prequest *request = p->request_oldest; request != NULL;
         request = request->newer) {
        ks_assert(request->older == before);
        if (before != NULL) {
            ks_assert(before->deadline_ns <= request->deadline_ns);
        }
        ks_assert(request->broker >= 1 && request->broker <= p->broker_count);
        const GPtrArray *inflight = p->conns[request->broker - 1].inflight;
        bool found = false;
        for (guint k = 0; k < inflight->len && !found; k++) {
            found = g_ptr_array_index(inflight, k) == request;
        }
        ks_assert(found);
        before = request;
        listed++;
    }
    ks_assert(p->request_newest == before);
    int64_t inflight_count = 0;
    for (int32_t b = 1; b <= p->broker_count; b++) {
        const struct pconn *conn = &p->conns[b - 1];
        inflight_count += (int64_t)conn->inflight->len;
        ks_assert(bits_has(p->ready_bits, b) == (p->ready_sets[b - 1].count > 0));
        ks_assert(bits_has(p->linger_bits, b) == (p->linger_sets[b - 1].count > 0));
        ks_assert(bits_has(p->connecting_bits, b) == (conn->state == CONN_CONNECTING));
        ks_assert(bits_has(p->unready_bits, b) == (conn->state != CONN_READY));
        ks_assert(bits_has(p->reset_bits, b) == conn->reset_pending);
    }
    ks_assert(listed == inflight_count);
    for (int32_t w = 0; w < p->broker_words; w++) {
        uint64_t outside = w == p->broker_words - 1 && p->broker_count % 64 != 0
                               ? ~UINT64_C(0) << (p->broker_count % 64)
                               : 0;
        ks_assert(((p->ready_bits[w] | p->linger_bits[w] | p->connecting_bits[w] |
                    p->unready_bits[w] | p->reset_bits[w]) &
                   outside) == 0);
    }
}

void ks_producer_check(const struct ks_producer *p)
{
    int64_t records = 0;
    int64_t reserved = 0;
    int64_t batch_count = 0;
    int32_t active_count = 0;
    int32_t *unanswered = calloc((size_t)p->partition_count, sizeof(*unanswered)); /* P16 */
    ks_assert(unanswered != NULL);
    for (int32_t i = 0; i < p->partition_count; i++) {
        const struct ppart *part = &p->parts[i];
        bool active = (p->active_words[i / 64] >> (i % 64)) & 1;
        ks_assert(active == !g_queue_is_empty((GQueue *)&part->queue)); /* P7 */
        active_count += active ? 1 : 0;
        if (part->unresolved || part->bump_required) {
            ks_assert(p->sequences_flagged);
        }
        bool fresh_seen = false;
        for (const GList *link = part->queue.head; link != NULL; link = link->next) {
            const struct pbatch *batch = link->data;
            ks_assert(link == &batch->queue_link); /* its own link (P3) */
            ks_assert(batch->entry == NULL);       /* P3: queued, so not in a request */
            if (!batch->requeued) {
                fresh_seen = true;
            } else {
                ks_assert(!fresh_seen); /* P6 */
            }
            records += check_batch(p, batch, i, &reserved);
            batch_count++;
        }
        for (guint k = 0; k < part->sequenced->len; k++) {
            const struct pbatch *batch = g_ptr_array_index(part->sequenced, k);
            ks_assert(batch->base_sequence >= 0);
            if (k > 0) {
                const struct pbatch *before = g_ptr_array_index(part->sequenced, k - 1);
                ks_assert(before->base_sequence < batch->base_sequence); /* P5 */
            }
        }
    }
    for (int32_t b = 0; b < p->broker_count; b++) {
        const struct pconn *conn = &p->conns[b];
        ks_assert((int32_t)conn->inflight->len <= p->in_flight_max); /* P2 */
        if (conn->inflight->len > 0) {
            ks_assert(conn->state == CONN_READY); /* P8 */
        }
        ks_assert((conn->state == CONN_CONNECTING) == (conn->connect_id != 0)); /* P8 */
        if (conn->state != CONN_DISCONNECTED) {
            ks_assert(conn->attempted);
        }
        for (guint k = 0; k < conn->inflight->len; k++) {
            const struct prequest *request = g_ptr_array_index(conn->inflight, k);
            int32_t pending = 0;
            for (int32_t e = 0; e < request->entry_count; e++) {
                const struct pentry *entry = &request->entries[e];
                ks_assert(entry->request == request);
                pending += entry->answered ? 0 : 1;
                ks_assert(entry->partition >= 0 && entry->partition < p->partition_count);
                unanswered[entry->partition] += entry->answered ? 0 : 1;
                if (entry->batch != NULL) {
                    ks_assert(entry->batch->partition == entry->partition);
                    ks_assert(!entry->answered);
                    ks_assert(entry->batch->entry == entry); /* P3 */
                    records += check_batch(p, entry->batch, entry->batch->partition, &reserved);
                    batch_count++;
                }
            }
            ks_assert(pending == request->pending_count);
            ks_assert(pending > 0);
        }
    }
    ks_assert(active_count == p->active_count); /* P7 */
    for (int32_t i = 0; i < p->partition_count; i++) {
        /* P16: muted exactly while a request carries it, and then only one */
        ks_assert(p->parts[i].muted == (p->guarantee_order && unanswered[i] > 0));
        if (p->guarantee_order) {
            ks_assert(unanswered[i] <= 1);
        }
    }
    free(unanswered);
    if (p->meta_request_id != 0) {
        ks_assert(p->meta_broker >= 1 && p->conns[p->meta_broker - 1].state == CONN_READY); /* P8 */
    }
    if (p->pid_request_id != 0) {
        ks_assert(p->pid_broker >= 1 && p->conns[p->pid_broker - 1].state == CONN_READY); /* P8 */
    }
    ks_assert(records == p->pending_count); /* P1 */
    ks_assert(p->acked_count + p->failed_count + p->unknown_count + p->pending_count +
                  (p->waiter.active ? 1 : 0) ==
              p->next_seq);                   /* P1 */
    ks_assert(reserved == p->reserved_bytes); /* P4 */
    check_ready_index(p);                     /* P10 */
    check_live_list(p, batch_count);          /* P11 */
    check_brokers(p);                         /* P12 */
    check_led_sets(p);                        /* P15 */
    /* P4: a new batch is admitted only within buffer.memory or when nothing
     * else is reserved, so only a lone batch may take the total past it. */
    if (p->reserved_bytes > p->config->buffer_memory_bytes) {
        ks_assert(batch_count == 1);
    }
}

/* ---- the sender loop ---------------------------------------------------------------------- */

static void sender_wakeup(ks_world *world, void *context);

static ks_time_ns next_wakeup_ns(struct ks_producer *p, ks_time_ns now)
{
    /* The brokers with a sendable head batch and the earliest time a
     * waiting one becomes sendable, from the ready index (P10). */
    uint64_t ready[BROKER_WORDS] = { 0 };
    ks_time_ns next = ready_brokers(p, now, ready);
    /* The requests in flight are in deadline order (P12). */
    if (p->request_oldest != NULL) {
        next = time_min(next, p->request_oldest->deadline_ns);
    }
    /* Every batch, queued or in flight, is in the live list, oldest first
     * (P11), so no batch is due before the first one's delivery deadline. */
    ks_time_ns delivery = p->live_head != NULL
                              ? time_add(p->live_head->created_ns, p->config->delivery_timeout_ns)
                              : KS_TIME_NEVER;
    p->expire_floor_ns = delivery;
    next = time_min(next, delivery);
    /* Connections: setup timeouts, and the end of the reconnect backoff of
     * a broker that has something to send (P12: the connecting ones, and the
     * ready brokers whose connection is not). */
    uint64_t waking[BROKER_WORDS] = { 0 };
    for (int32_t w = 0; w < p->broker_words; w++) {
        waking[w] = p->connecting_bits[w] | (ready[w] & p->unready_bits[w]);
    }
    for (int32_t b = bits_next(p, waking, 1); b > 0; b = bits_next(p, waking, b + 1)) {
        next = time_min(next, conn_wakeup_ns(&p->conns[b - 1], now));
    }
    if (p->meta_request_id != 0) {
        next = time_min(next, p->meta_deadline_ns);
    } else {
        ks_time_ns due = metadata_due_ns(p);
        if (due <= now && p->meta_broker >= 0) {
            /* Due, and waiting for its broker's connection. */
            due = conn_wakeup_ns(&p->conns[p->meta_broker - 1], now);
        }
        next = time_min(next, due);
    }
    if (p->idempotent && !p->txn.enabled && p->producer_id < 0) {
        ks_time_ns due = p->pid_request_id != 0 ? p->pid_deadline_ns : p->pid_retry_at_ns;
        if (p->pid_request_id == 0 && due <= now && p->pid_broker >= 0) {
            due = conn_wakeup_ns(&p->conns[p->pid_broker - 1], now);
        }
        next = time_min(next, due);
    }
    if (p->waiter.active) {
        next = time_min(next, p->waiter.deadline_ns);
    }
    next = time_min(next, txn_wakeup_ns(p, now));
    return next;
}

static void schedule_sender(struct ks_producer *p, ks_time_ns at_ns)
{
    ks_time_ns now = now_ns(p);
    if (at_ns == KS_TIME_NEVER) {
        return;
    }
    if (at_ns < now) {
        at_ns = now;
    }
    if (p->sender_timer != 0 && p->sender_at_ns <= at_ns) {
        return;
    }
    ks_world_cancel(p->world, p->sender_timer);
    p->sender_at_ns = at_ns;
    p->sender_timer =
        ks_world_schedule(p->world, p->node, at_ns - now, TIMER_PRODUCER_SENDER, sender_wakeup, p);
}

/* Whether a sender pass at `now` could do anything, for a record appended
 * to an open batch that is still not full (that append makes nothing
 * sendable and moves no deadline). A pass acts on deadlines, which
 * next_wakeup_ns covers and the sender timer holds (its time is never later
 * than the earliest of them), and on events (responses, appends that make a
 * batch ready, a broker's connections reset by its crash, which
 * ks_producer_on_broker_down turns into a pass), after which it runs anyway.
 * So only a due sender timer makes the pass worth running. */
static bool sender_due(struct ks_producer *p, ks_time_ns now)
{
    return p->sender_timer != 0 && p->sender_at_ns <= now;
}

/* For a record that opened a new batch alone in its partition's queue (so
 * it closed no other batch): whether a sender pass now would do nothing but
 * move the sender timer to the batch's linger end (or delivery deadline),
 * which this does instead. So it is when the batch cannot go yet (linger.ms
 * not over, no retry, no waiter, not stopping), its partition has a leader
 * (a pass would ask for metadata) and no transaction needs the partition
 * added. A pass at every new batch was one full visit of the active
 * partitions per record at a few records per partition per linger (issue
 * 16). */
static bool lone_batch_waits(struct ks_producer *p, ks_time_ns now)
{
    struct ppart *part = &p->parts[p->waiter.partition];
    const struct pbatch *batch = g_queue_peek_head(&part->queue);
    if (batch == NULL || g_queue_get_length(&part->queue) != 1 || part->leader < 1 ||
        p->txn.enabled) {
        return false;
    }
    if (part->muted) {
        /* A pass would not look at it and set no timer for it (P16:
         * batchReady gives a muted partition no delay). Its unmuting (an
         * answer, or a disconnect inside a pass) places it again before
         * the next pass or sender_idle looks. The sender timer is set, to
         * the muting request's deadline at the latest. */
        ks_assert(p->sender_timer != 0);
        return true;
    }
    if (batch_sendable(p, part, batch, now)) {
        return false;
    }
    ks_time_ns linger_end = time_add(batch->created_ns, p->config->linger_ns);
    if (linger_end <= now) {
        return false;
    }
    schedule_sender(
        p, time_min(linger_end, time_add(batch->created_ns, p->config->delivery_timeout_ns)));
    return true;
}

/* Whether a sender pass now, after a produce response answered without an
 * error (or ignored), would do nothing at all (P13): no request, no connect,
 * no timer moved, no record reported. Such a response changes what a pass
 * does only through what it freed: an in-flight slot matters to a broker
 * with a ready partition (while every such broker's connection stays full,
 * as it does under load, the drain sends nothing), memory to a blocked
 * send(), an ack to a transaction or to an unresolved sequence. (An error may requeue a batch
 * with a backoff, move a leader or ask for metadata: its pass runs.)
 * Everything else a pass acts on is a deadline: the sender timer is set to
 * the earliest at each pass, and the deadlines an event adds without a pass
 * (a lingering new batch) are checked here against it. While it is not
 * due, none is. A pass after every response was half of the sender's
 * passes (issue 16). */
static bool sender_idle(struct ks_producer *p, ks_time_ns now)
{
    if (!p->up || !p->started || p->sender_timer == 0 || p->sender_at_ns <= now ||
        p->waiter.active || p->stopped || p->txn.enabled || now >= p->expire_floor_ns ||
        p->config->acks == KS_ACKS_NONE) {
        return false;
    }
    if (p->idempotent && (p->producer_id < 0 || p->sequences_flagged)) {
        return false; /* InitProducerId, or sequences to resolve */
    }
    if (metadata_due_ns(p) <= now) {
        return false;
    }
    for (int32_t w = 0; w < p->broker_words; w++) {
        if ((p->reset_bits[w] | p->connecting_bits[w]) != 0) {
            return false;
        }
    }
    ready_refresh(p, now); /* what the pass's drain would do first */
    if (p->leaderless_count > 0) {
        return false;
    }
    /* A broker with a ready partition gets nothing in this pass only while
     * its connection is ready and full (max.in.flight requests): a freed
     * slot, or a connect to start, is the pass's work. */
    for (int32_t broker = bits_next(p, p->ready_bits, 1); broker > 0;
         broker = bits_next(p, p->ready_bits, broker + 1)) {
        const struct pconn *conn = &p->conns[broker - 1];
        if (conn->state != CONN_READY || (int32_t)conn->inflight->len < p->in_flight_max) {
            return false;
        }
    }
    /* The deadlines a pass would wake for, where an event may have put one
     * without a pass: the heaps (appends), the oldest batch and request. */
    ks_time_ns at_ns = p->sender_at_ns;
    if (heap_first_ns(p, &p->backoff_heap) < at_ns || heap_first_ns(p, &p->linger_heap) < at_ns ||
        (p->request_oldest != NULL && p->request_oldest->deadline_ns < at_ns) ||
        (p->live_head != NULL &&
         time_add(p->live_head->created_ns, p->config->delivery_timeout_ns) < at_ns)) {
        return false;
    }
#if KS_DEBUG
    /* P13: the pass would leave the sender timer where it is. */
    ks_time_ns floor_ns = p->expire_floor_ns; /* as a skipped pass leaves it */
    ks_assert(next_wakeup_ns(p, now) >= at_ns);
    p->expire_floor_ns = floor_ns;
    ks_producer_check(p);
#endif
    return true;
}

static void sender_run(struct ks_producer *p)
{
    if (!p->up || !p->started) {
        return;
    }
    ks_time_ns now = now_ns(p);
    expire_requests(p, now);
    expire_batches(p, now);
    resolve_sequences(p);
    maybe_send_metadata(p, now);
    maybe_send_init_producer_id(p, now);
    txn_step(p, now);
    waiter_check(p, now);
    drain(p, now);
    maybe_send_metadata(p, now); /* drain may have found a partition without a leader */
    schedule_sender(p, next_wakeup_ns(p, now));
#ifdef KS_DEBUG
    ks_producer_check(p);
#endif
}

/* The end of an event of the producer's node: its listener may look again. */
static void notify_listener(struct ks_producer *p)
{
    if (p->listener != NULL) {
        p->listener(p->listener_context);
    }
}

static void sender_wakeup(ks_world *world, void *context)
{
    (void)world;
    struct ks_producer *p = context;
    p->sender_timer = 0;
    p->sender_at_ns = KS_TIME_NEVER;
    sender_run(p);
    notify_listener(p);
}

/* ---- workload ------------------------------------------------------------------------------ */

static bool workload_done(const struct ks_producer *p)
{
    if (p->fed) {
        return p->stopped; /* its consumer decides when records come */
    }
    return p->stopped || p->config->rate_per_s == 0 ||
           (p->config->count >= 0 && p->next_seq >= p->config->count);
}

static void record_due(ks_world *world, void *context);

static void schedule_next_record(struct ks_producer *p)
{
    if (workload_done(p) || p->waiter.active || p->record_timer != 0 || !p->up ||
        !txn_accepts_records(p) || p->fed) {
        return;
    }
    uint64_t k = (uint64_t)(p->next_seq - p->base_seq);
    ks_time_ns due =
        p->base_ns + (ks_time_ns)((unsigned __int128)k * KS_NS_PER_S / p->config->rate_per_s);
    ks_time_ns now = now_ns(p);
    ks_time_ns delay = due > now ? due - now : 0;
    p->record_timer =
        ks_world_schedule(p->world, p->node, delay, TIMER_PRODUCER_RECORD, record_due, p);
}

/* The key number n of the key text "key-<n>", n uniform in [0, keys); -1
 * for null keys. */
static int64_t make_key(struct ks_producer *p)
{
    if (p->fed) {
        return p->fed_key;
    }
    if (p->config->key_count <= 0) {
        return -1;
    }
    uint64_t n = ks_world_random_below(p->world, KS_RNG_WORKLOAD, (uint64_t)p->config->key_count);
    ks_assert(n <= INT64_MAX);
    return (int64_t)n;
}

/* One send() call of the application. */
static void record_due(ks_world *world, void *context)
{
    (void)world;
    struct ks_producer *p = context;
    p->record_timer = 0;
    if (workload_done(p) || !p->up) {
        return;
    }
    ks_assert(!p->waiter.active);
    ks_time_ns now = now_ns(p);
    struct pwaiter *waiter = &p->waiter;
    memset(waiter, 0, sizeof(*waiter));
    waiter->active = true;
    waiter->partition = -1;
    waiter->deadline_ns = time_add(now, p->config->max_block_ns);
    waiter->record.key_number = make_key(p);
    waiter->record.seq = p->next_seq++;
    txn_on_record(p, waiter->record.seq);
    waiter->record.sent_ns = now;
    waiter->record.timestamp_ms = KS_EPOCH_BASE_MS + (int64_t)(now / KS_NS_PER_MS);
    int64_t size = record_size_upper_bound(p, &waiter->record);
    if (size > p->config->max_request_size_bytes || size > p->config->buffer_memory_bytes) {
        /* KafkaProducer.ensureValidRecordSize: RecordTooLargeException, the
         * send fails at once and nothing is sent. */
        struct precord record = waiter->record;
        waiter->active = false;
        report_record(p, NULL, &record, -1, -1, KS_OUTCOME_FAILED);
        report_error(p, -1, 1, KS_OUTCOME_FAILED, KS_REASON_RECORD_TOO_LARGE,
                     KS_ERR_MESSAGE_TOO_LARGE);
        schedule_next_record(p);
#ifdef KS_DEBUG
        ks_producer_check(p);
#endif
        return;
    }
    enum append_result result = waiter_try(p);
    if (result != APPEND_NO_MEMORY) {
        schedule_next_record(p);
    }
    if (!sender_due(p, now) &&
        (result == APPEND_QUIET || (result == APPEND_LONE && lone_batch_waits(p, now)))) {
#ifdef KS_DEBUG
        ks_producer_check(p); /* the one event that skips sender_run */
#endif
        return; /* a pass now would find nothing to do */
    }
    sender_run(p);
}

static void producer_start(ks_world *world, void *context)
{
    (void)world;
    struct ks_producer *p = context;
    p->start_timer = 0;
    p->started = true;
    p->base_ns = now_ns(p);
    p->base_seq = p->next_seq;
    schedule_next_record(p);
    sender_run(p);
    notify_listener(p);
}

/* ---- receiving ------------------------------------------------------------------------------ */

/* Only brokers answer a producer, and only these three responses, each sent
 * whole by core/broker.c (the network delays and drops messages, it does not
 * corrupt them). A wrong size, a sender that is not a broker, a partition
 * outside the producer's topic or another kind is a bug in ksim, so the
 * handlers assert instead of dropping it. */
static void producer_receive(ks_world *world, ks_node_id self, ks_node_id source, uint32_t kind,
                             const void *message, size_t message_bytes, void *context)
{
    (void)world;
    struct ks_producer *p = context;
    ks_assert(self == p->node);
    if (!p->up || !p->started) {
        return;
    }
    bool quiet = false; /* a produce response that may leave the pass nothing to do */
    switch (kind) {
    case KS_MSG_METADATA_RESPONSE: on_metadata_response(p, message, message_bytes); break;
    case KS_MSG_INIT_PRODUCER_ID_RESPONSE:
        on_init_producer_id_response(p, message, message_bytes);
        break;
    case KS_MSG_PRODUCE_RESPONSE:
        quiet = on_produce_response(p, source, message, message_bytes);
        break;
    case KS_MSG_PRODUCE_RESPONSES: { /* a request of several batches: their answers in order */
        struct ks_produce_bundle bundle;
        ks_assert(message_bytes >= sizeof bundle);
        memcpy(&bundle, message, sizeof bundle);
        ks_assert(message_bytes ==
                  sizeof bundle + bundle.count * sizeof(struct ks_produce_response));
        quiet = true;
        for (uint32_t i = 0; i < bundle.count; i++) {
            struct ks_produce_response response;
            memcpy(&response, (const uint8_t *)message + sizeof bundle + i * sizeof response,
                   sizeof response);
            quiet &= on_produce_response(p, source, &response, sizeof response);
        }
        break;
    }
    case KS_MSG_API_VERSIONS_RESPONSE:
        on_api_versions_response(p, source, message, message_bytes);
        break;
    case KS_MSG_TXN_FIND_COORDINATOR_RESPONSE:
    case KS_MSG_TXN_INIT_PRODUCER_ID_RESPONSE:
    case KS_MSG_TXN_ADD_PARTITIONS_RESPONSE:
    case KS_MSG_TXN_ADD_OFFSETS_RESPONSE:
    case KS_MSG_TXN_END_RESPONSE: on_txn_response(p, kind, message, message_bytes); break;
    case KS_GROUP_FIND_COORDINATOR_RESPONSE:
    case KS_GROUP_TXN_OFFSET_COMMIT_RESPONSE:
        on_group_response(p, kind, message, message_bytes);
        break;
    default: ks_assert(!"unexpected message kind at a producer");
    }
    if (!quiet || !sender_idle(p, now_ns(p))) {
        sender_run(p);
    }
    notify_listener(p);
}

/* ---- life cycle ----------------------------------------------------------------------------- */

static void reset_client_state(struct ks_producer *p)
{
    for (int32_t i = 0; i < p->partition_count; i++) {
        struct ppart *part = &p->parts[i];
        part->leader = -1;
        part->leader_epoch = -1;
        part->seq_producer_id = -1;
        part->seq_epoch = -1;
        part->next_sequence = 0;
        part->last_acked_sequence = -1;
        part->unresolved = false;
        part->bump_required = false;
        part->error_second = -1;
        part->errors_suppressed = 0;
        ks_assert(!part->muted); /* P16: drop_all ended its requests */
    }
    p->sequences_flagged = false;
    ks_sticky_init(&p->sticky, p->config->batch_size_bytes);
    p->meta_known = false;
    p->meta_need_update = true;
    p->meta_refreshed_ns = 0;
    p->meta_attempt_ns = KS_TIME_NEVER;
    p->meta_failures = 0;
    p->meta_request_id = 0;
    p->meta_avoid_broker = -1;
    p->broker_alive_known = false;
    p->producer_id = -1;
    p->producer_epoch = -1;
    p->pid_request_id = 0;
    p->pid_retry_at_ns = 0;
    p->pid_failures = 0;
    p->pid_avoid_broker = -1;
    p->sender_timer = 0;
    p->sender_at_ns = KS_TIME_NEVER;
    p->expire_floor_ns = 0;
    p->record_timer = 0;
    for (int32_t b = 0; b < p->broker_count; b++) {
        p->drain_index[b] = 0;    /* the Java producer's accumulator is new */
        p->led_sets[b].count = 0; /* every leader is unknown again (above) */
        struct pconn *conn = &p->conns[b];
        ks_assert(conn->inflight->len == 0);
        conn_set_state(p, b + 1, CONN_DISCONNECTED);
        conn->attempted = false;
        conn->last_attempt_ns = 0;
        conn->reconnect_backoff_ns = 0;
        conn->setup_timeout_ns = 0;
        conn->failed_attempts = 0;
        conn->failed_connect_attempts = 0;
        conn->connect_id = 0;
        conn->syn_count = 0;
        conn_set_reset(p, b + 1, false);
    }
    p->meta_broker = -1;
    p->pid_broker = -1;
    if (p->txn.state != PTXN_FENCED) {
        p->txn.state = PTXN_INIT;
    }
    p->txn.coordinator = -1;
    p->txn.find_broker = -1;
    p->txn.request_id = 0;
    p->txn.retry_at_ns = 0;
    p->txn.fence_pending = false;
    p->txn.group_coordinator = -1;
    if (p->txn.added != NULL) {
        txn_clear(p);
    }
}

struct ks_producer *ks_producer_new(ks_world *world, const struct ks_cluster_spec *spec,
                                    int32_t producer_index,
                                    const struct ks_cluster_observer *observer)
{
    ks_assert(producer_index >= 0 && producer_index < spec->producer_count);
    const struct ks_producer_config *config = &spec->producers[producer_index];
    ks_assert(config->topic_index >= 0 && config->topic_index < spec->topic_count);
    ks_assert(config->batch_size_bytes > 0);
    ks_assert(config->value_bytes >= 0);
    ks_assert(spec->cluster->broker_count >= 1 &&
              spec->cluster->broker_count <= KS_BROKER_COUNT_MAX);
    struct ks_producer *p = calloc(1, sizeof(*p));
    ks_assert(p != NULL);
    p->world = world;
    p->spec = spec;
    p->config = config;
    p->observer = observer;
    p->index = producer_index;
    /* ks_cluster_producer_node(spec, index), computed here from the layout in
     * core/cluster.h so that this file links without core/cluster.c (which
     * in turn calls ks_producer_new). */
    int32_t controller_nodes = spec->cluster->controller_model == KS_CONTROLLER_MODEL_ZOOKEEPER ||
                                       spec->cluster->controller_count < 1
                                   ? 1
                                   : spec->cluster->controller_count;
    p->node = (ks_node_id)(spec->cluster->broker_count + 1 + controller_nodes + producer_index);
    p->broker_count = spec->cluster->broker_count;
    p->broker_words = (p->broker_count + 63) / 64;
    p->partition_count = spec->topics[config->topic_index].partition_count;
    ks_assert(p->partition_count > 0);
    /* Idempotence needs acks=all, retries > 0 and at most 5 in flight
     * (kafka-reference 5.1); otherwise it is off, as Kafka does when the
     * setting was not given explicitly (the loader rejects explicit ones). */
    p->idempotent = config->enable_idempotence && config->acks == KS_ACKS_ALL &&
                    config->retries > 0 && config->max_in_flight <= IN_FLIGHT_MAX_IDEMPOTENT;
    p->in_flight_max = config->max_in_flight > 0 ? config->max_in_flight : 1;
    p->guarantee_order = p->in_flight_max == 1 && config->acks != KS_ACKS_NONE;
    p->name_bytes = (int32_t)strlen(config->name);
    p->record_fixed_bytes =
        (int32_t)(1 + varint_bytes(config->value_bytes) + (size_t)config->value_bytes +
                  varint_bytes(1) + varint_bytes((int64_t)strlen(KS_IDENTITY_HEADER)) +
                  strlen(KS_IDENTITY_HEADER));
    p->upper_fixed_bytes = record_upper_fixed_bytes(p);
    if (config->key_count > 0 && config->key_count <= KEYS_CACHED_MAX) {
        p->keys_cached = (int32_t)config->key_count;
        p->keys = calloc((size_t)p->keys_cached, sizeof(*p->keys));
        ks_assert(p->keys != NULL);
    }
    p->value = malloc(config->value_bytes > 0 ? (size_t)config->value_bytes : 1);
    ks_assert(p->value != NULL);
    for (int32_t i = 0; i < config->value_bytes; i++) {
        p->value[i] = (uint8_t)('a' + i % 26);
    }
    p->ratio_ppm = RATIO_PPM_ONE; /* CompressionType.rate = 1.0 */
    if (config->value_random_percent > 0 && config->value_bytes > 0) {
        /* value.random.percent: values differ per record; one seed from the
         * workload stream, drawn only here so other scenarios keep their draws. */
        p->value_seed = ks_world_random_u64(world, KS_RNG_WORKLOAD);
        p->value_scratch = malloc((size_t)config->value_bytes);
        ks_assert(p->value_scratch != NULL);
    }
    p->parts = calloc((size_t)p->partition_count, sizeof(*p->parts));
    p->conns = calloc((size_t)p->broker_count, sizeof(*p->conns));
    p->drain_index = calloc((size_t)p->broker_count, sizeof(*p->drain_index));
    p->led_sets = calloc((size_t)p->broker_count, sizeof(*p->led_sets));
    ks_assert(p->drain_index != NULL && p->led_sets != NULL);
    p->active_words = calloc((size_t)(p->partition_count + 63) / 64, sizeof(*p->active_words));
    ks_assert(p->active_words != NULL);
    p->dirty_ids = calloc((size_t)p->partition_count, sizeof(*p->dirty_ids));
    p->backoff_heap.ids = calloc((size_t)p->partition_count, sizeof(int32_t));
    p->linger_heap.ids = calloc((size_t)p->partition_count, sizeof(int32_t));
    p->walk_ids = calloc((size_t)p->partition_count, sizeof(*p->walk_ids));
    p->ready_sets = calloc((size_t)p->broker_count, sizeof(*p->ready_sets));
    p->linger_sets = calloc((size_t)p->broker_count, sizeof(*p->linger_sets));
    ks_assert(p->dirty_ids != NULL && p->backoff_heap.ids != NULL && p->linger_heap.ids != NULL);
    ks_assert(p->walk_ids != NULL && p->ready_sets != NULL && p->linger_sets != NULL);
    ks_assert(p->parts != NULL && p->conns != NULL);
    for (int32_t i = 0; i < p->partition_count; i++) {
        g_queue_init(&p->parts[i].queue);
        p->parts[i].sequenced = g_ptr_array_new();
        p->parts[i].heap_index = -1;
    }
    for (int32_t b = 0; b < p->broker_count; b++) {
        p->conns[b].inflight = g_ptr_array_new();
        p->conns[b].event_second = -1;
    }
    p->start_at_ns = KS_TIME_NEVER;
    p->error_second = -1;
    p->up = true;
    p->txn.enabled = config->transactional_id[0] != 0;
    if (p->txn.enabled) {
        /* The loader requires idempotence for transactional.id (Kafka's
         * ProducerConfig refuses enable.idempotence=false with it). */
        ks_assert(p->idempotent);
        p->txn.added = calloc((size_t)p->partition_count, sizeof *p->txn.added);
        ks_assert(p->txn.added != NULL);
        p->txn.offsets = g_array_new(FALSE, TRUE, sizeof(struct ks_group_offset_entry));
    }
    p->fed = config->input_consumer_index >= 0;
    reset_client_state(p);
    ks_world_set_receiver(world, p->node, producer_receive, p);
    return p;
}

void ks_producer_start(struct ks_producer *p)
{
    ks_time_ns now = now_ns(p);
    if (p->start_at_ns == KS_TIME_NEVER) {
        /* Real applications do not start in the same nanosecond: the planned
         * start is drawn once in [start, start + start.jitter] from the phase
         * stream (one draw even when the jitter is 0, so that turning it off
         * leaves the other clients' draws in place). A restart before that
         * time keeps the plan. */
        ks_time_ns jitter = (ks_time_ns)p->config->start_jitter_ns;
        p->start_at_ns = (ks_time_ns)p->config->start_ns +
                         ks_world_random_scaled(p->world, KS_RNG_PHASE, jitter + 1);
    }
    ks_time_ns start = p->start_at_ns;
    ks_world_cancel(p->world, p->start_timer);
    p->start_timer = ks_world_schedule(p->world, p->node, start > now ? start - now : 0,
                                       TIMER_PRODUCER_START, producer_start, p);
}

/* Drops every batch and request; records still pending end as `outcome`
 * (reported) unless outcome is negative (free without reporting). */
static void drop_all(struct ks_producer *p, bool report)
{
    for (int32_t b = 0; b < p->broker_count; b++) {
        struct pconn *conn = &p->conns[b];
        for (guint i = 0; i < conn->inflight->len; i++) {
            struct prequest *request = g_ptr_array_index(conn->inflight, i);
            for (int32_t e = 0; e < request->entry_count; e++) {
                struct pbatch *batch = request->entries[e].batch;
                request->entries[e].batch = NULL;
                if (!request->entries[e].answered) {
                    partition_unmute(p, request->entries[e].partition); /* P16 */
                }
                if (batch == NULL) {
                    continue;
                }
                batch->entry = NULL;
                batch->maybe_written = true;
                if (report) {
                    batch_end(p, batch, KS_OUTCOME_UNKNOWN, -1);
                } else {
                    sequenced_remove(&p->parts[batch->partition], batch);
                    p->pending_count -= (int64_t)batch->record_count;
                    batch_free(p, batch);
                }
            }
            request_free(p, request);
        }
        g_ptr_array_set_size(conn->inflight, 0);
    }
    for (int32_t i = 0; i < p->partition_count; i++) {
        struct ppart *part = &p->parts[i];
        GList *link;
        while ((link = g_queue_pop_head_link(&part->queue)) != NULL) {
            struct pbatch *batch = link->data;
            active_update(p, i);
            if (report) {
                batch_end(p, batch, KS_OUTCOME_UNKNOWN, -1);
            } else {
                sequenced_remove(part, batch);
                p->pending_count -= (int64_t)batch->record_count;
                batch_free(p, batch);
            }
        }
        ks_assert(part->sequenced->len == 0);
    }
    if (p->waiter.active) {
        p->waiter.active = false;
        if (report) {
            report_record(p, NULL, &p->waiter.record, p->waiter.partition, -1, KS_OUTCOME_UNKNOWN);
        }
    }
    ks_assert(p->reserved_bytes == 0); /* P4 */
}

void ks_producer_free(struct ks_producer *p)
{
    if (p == NULL) {
        return;
    }
    drop_all(p, false);
    for (int32_t i = 0; i < p->partition_count; i++) {
        g_ptr_array_free(p->parts[i].sequenced, TRUE);
    }
    for (int32_t b = 0; b < p->broker_count; b++) {
        g_ptr_array_free(p->conns[b].inflight, TRUE);
    }
    free(p->parts);
    free(p->conns);
    free(p->drain_index);
    free(p->active_words);
    free(p->dirty_ids);
    free(p->backoff_heap.ids);
    free(p->linger_heap.ids);
    free(p->walk_ids);
    for (int32_t b = 0; b < p->broker_count; b++) {
        free(p->ready_sets[b].ids);
        free(p->linger_sets[b].ids);
        free(p->led_sets[b].ids);
    }
    free(p->led_sets);
    free(p->ready_sets);
    free(p->linger_sets);
    free(p->value);
    free(p->value_scratch);
    free(p->keys);
    free(p->txn.added);
    if (p->txn.offsets != NULL) {
        g_array_free(p->txn.offsets, TRUE);
    }
    free(p);
}

void ks_producer_on_crash(struct ks_producer *p)
{
    if (!p->up) {
        return;
    }
    /* The world dropped our timers; whatever was queued or in flight is lost
     * with the process, and its fate is unknown to anyone who asked. */
    int64_t lost = p->pending_count + (p->waiter.active ? 1 : 0);
    drop_all(p, true);
    if (lost > 0) {
        report_error(p, -1, lost, KS_OUTCOME_UNKNOWN, KS_REASON_PRODUCER_CRASHED, KS_ERR_NONE);
    }
    if (p->txn.enabled && (p->txn.state == PTXN_IN_TXN || p->txn.state == PTXN_ENDING)) {
        txn_emit_end(p, KS_REASON_TXN_ABANDONED, KS_ERR_NONE);
    }
    p->up = false;
    p->start_timer = 0;
    reset_client_state(p);
#ifdef KS_DEBUG
    ks_producer_check(p);
#endif
}

void ks_producer_on_restart(struct ks_producer *p)
{
    if (p->up) {
        return;
    }
    p->up = true;
    reset_client_state(p);
    if (!p->started) {
        ks_producer_start(p); /* crashed before its start time: start as planned */
        return;
    }
    p->base_ns = now_ns(p);
    p->base_seq = p->next_seq;
    schedule_next_record(p);
    sender_run(p);
}

void ks_producer_on_broker_down(struct ks_producer *p, int32_t broker)
{
    ks_assert(broker >= 1 && broker <= p->broker_count);
    if (!p->up || !p->started) {
        return; /* no connections */
    }
    conn_set_reset(p, broker, true);
    schedule_sender(p, now_ns(p));
}

void ks_producer_stop(struct ks_producer *p)
{
    if (p->fed) {
        /* A processor's producer is part of its consumer's application,
         * which keeps processing (the final drain) and ends its own
         * transactions. */
        return;
    }
    p->stopped = true;
    if (p->record_timer != 0) {
        ks_world_cancel(p->world, p->record_timer);
        p->record_timer = 0;
    }
    if (!p->started && p->start_timer != 0) {
        ks_world_cancel(p->world, p->start_timer);
        p->start_timer = 0;
    }
    /* close(): linger no longer applies; flush what is queued. */
    sender_run(p);
}

int64_t ks_producer_acked_count(const struct ks_producer *p)
{
    return p->acked_count;
}

int64_t ks_producer_sent_count(const struct ks_producer *p)
{
    return p->next_seq;
}

int64_t ks_producer_batches_sent_count(const struct ks_producer *p)
{
    return p->batches_sent;
}

bool ks_producer_idle(const struct ks_producer *p)
{
    bool txn_open =
        p->txn.enabled && p->up && (p->txn.state == PTXN_IN_TXN || p->txn.state == PTXN_ENDING);
    return p->pending_count == 0 && !p->waiter.active && !txn_open;
}

int64_t ks_producer_failed_count(const struct ks_producer *p)
{
    return p->failed_count;
}

int64_t ks_producer_unknown_count(const struct ks_producer *p)
{
    return p->unknown_count;
}

int64_t ks_producer_id(const struct ks_producer *p)
{
    return p->producer_id;
}

int16_t ks_producer_epoch(const struct ks_producer *p)
{
    return p->producer_epoch;
}

/* ---- a processor's producer (config input_consumer_index >= 0) ---------------------------- */

bool ks_producer_can_send(const struct ks_producer *p)
{
    ks_assert(p->fed);
    if (!p->up || !p->started || p->waiter.active || p->stopped) {
        return false;
    }
    return !p->txn.enabled || p->txn.state == PTXN_READY || p->txn.state == PTXN_IN_TXN;
}

void ks_producer_send_output(struct ks_producer *p, int64_t key_number)
{
    ks_assert(ks_producer_can_send(p));
    p->fed_key = key_number;
    record_due(p->world, p); /* send(): the same path as the workload's records */
}

void ks_producer_set_listener(struct ks_producer *p, void (*fn)(void *context), void *context)
{
    p->listener = fn;
    p->listener_context = context;
}

bool ks_producer_fenced(const struct ks_producer *p)
{
    return p->txn.enabled && p->txn.state == PTXN_FENCED;
}

int64_t ks_producer_txn_ended_count(const struct ks_producer *p, bool *last_committed_out)
{
    if (last_committed_out != NULL) {
        *last_committed_out = p->txn.last_committed;
    }
    return p->txn.ended_count;
}

bool ks_producer_end_txn(struct ks_producer *p, const char *group_id, const char *member_id,
                         int32_t generation, const struct ks_group_offset_entry *offsets,
                         int32_t offset_count)
{
    ks_assert(p->fed && p->txn.enabled);
    struct ptxn *t = &p->txn;
    if (!p->up || t->state != PTXN_IN_TXN) {
        return false; /* nothing open (the records went nowhere), or fenced */
    }
    g_strlcpy(t->group_id, group_id, sizeof t->group_id);
    g_strlcpy(t->member_id, member_id, sizeof t->member_id);
    t->generation = generation;
    ks_array_set_size(t->offsets, 0);
    g_array_append_vals(t->offsets, offsets, (guint)offset_count);
    t->offsets_pending = offset_count > 0;
    t->offsets_added = false;
    t->offsets_written = false;
    t->state = PTXN_ENDING;
    sender_run(p);
    return true;
}
