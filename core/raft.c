/*
** core/raft.c: KRaft's replicated log for a static voter set.
**
** Design. One struct ks_raft per voter, following Kafka's raft module
** (org.apache.kafka.raft): QuorumState's states (UnattachedState, voted or
** not; CandidateState; LeaderState; FollowerState; ResignedState), the
** handlers of KafkaRaftClient (handleVoteRequest/Response,
** handleBeginQuorumEpochRequest, handleFetchRequest/Response) and its poll
** functions (pollCandidate, pollFollowerAsVoter, pollLeader), cut to what a
** static voter set needs.
**
**   Epochs. Every message carries the sender's epoch. A node that sees a
**   higher epoch moves to it first: as a follower when the message names the
**   leader of that epoch, else unattached (KafkaRaftClient.maybeTransition).
**   The epoch and the vote are written to `quorum-state` (fsynced, renamed
**   into place as FileQuorumStateStore does) before the node answers.
**
**   Elections. An unattached or resigned node waits a randomized election
**   timeout (election.timeout + a uniform draw below it,
**   KafkaRaftClient.randomElectionTimeoutMs), a follower its fetch timeout
**   since the leader last answered; then it becomes a candidate of epoch + 1,
**   votes for itself and asks every other voter. A voter grants one vote per
**   epoch, and only to a candidate whose log (last epoch, then end offset) is
**   at least as long as its own (QuorumState.canGrantVote, the
**   OffsetAndEpoch comparison in handleVoteRequest); a follower of a known
**   leader of that epoch grants none. A majority of grants makes the leader.
**   A candidate that a majority rejects, or whose election timeout passes,
**   backs off for min(retry.backoff * uniform(2^retries), backoff.max)
**   (binaryExponentialElectionBackoffMs) and runs again in a new epoch. No
**   pre-vote (KIP-996): a node cut off from the quorum keeps raising its
**   epoch, and disturbs the leader when it comes back, as without KIP-996.
**
**   The leader (LeaderState, onBecomeLeader) assigns its epoch at its log end
**   offset in the epoch cache and appends a LeaderChange record, so that it
**   can commit a record of its own epoch; it sends BeginQuorumEpoch to every
**   voter that has not fetched from it yet, again every fetch.timeout / 2.
**   The high watermark is the end offset that a majority of voters has (the
**   leader's own flushed log end counts), and only once it is above the
**   epoch's start offset (LeaderState.maybeUpdateHighWatermark): then every
**   earlier epoch's record below it is safe. Check quorum: if a majority of
**   voters has not fetched within 1.5 * fetch.timeout, the leader resigns
**   (LeaderState.timeUntilCheckQuorumExpires, pollLeader); a resigned node
**   appends nothing and waits an election timeout before running again.
**
**   Fetching. A follower sends Fetch(fetch offset = its log end, last
**   fetched epoch). The leader checks the pair against its epoch cache
**   (ReplicatedLog.validateOffsetAndEpoch): if the follower's log diverges it
**   answers the end offset of the largest epoch <= last fetched epoch, and
**   the follower truncates there and fetches again; else the fetch offset is
**   the follower's end offset (it counts for the high watermark) and the
**   leader answers at once with batches from there, or parks the fetch for
**   up to fetch_wait_ns_max until it appends or the high watermark moves.
**   The follower appends, flushes (Kafka flushes a follower's log before the
**   next fetch reports it), and takes min(leader's high watermark, its end
**   offset) as its own. A node that is not the leader answers a fetch with
**   NOT_LEADER_OR_FOLLOWER and the leader it knows.
**
**   Apply. Every node hands each committed record to on_commit, once, in
**   offset order, as its high watermark passes it (the leader's LeaderChange
**   records are skipped). After a restart, memory is empty and the log on
**   disk is handed over again from offset 0 as the high watermark is learned:
**   the owner rebuilds its state from the log (no snapshots).
**
** Records. One record per batch, key = the record's type name ("LeaderChange"
** or the owner's), value = ksim's own encoding; each batch is a Kafka record
** batch v2 written by core/log.c, so Kafka's tools read the folder.
**
** Left out: snapshots (FETCH_SNAPSHOT), observers, dynamic voters (KIP-853),
** EndQuorumEpoch (a resigned leader does not tell its successors: they find
** out by their fetch timeout), pre-vote (KIP-996), linger (each append is its
** own batch), request retries within an election (one Vote per voter per
** candidacy; a lost one is recovered by the next election).
*/
#include "raft.h"

#include "base.h"
#include "batch.h"
#include "config.h"
#include "log.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FETCH_BYTES_MAX         (1u << 20)
#define CHECK_QUORUM_FACTOR_NUM 3 /* LeaderState.CHECK_QUORUM_TIMEOUT_FACTOR = 1.5 */
#define CHECK_QUORUM_FACTOR_DEN 2
#define LEADER_CHANGE_KEY       "LeaderChange"

void ks_raft_config_from_cluster(const struct ks_cluster_config *cluster,
                                 struct ks_raft_config *out)
{
    memset(out, 0, sizeof(*out));
    out->election_timeout_ns = (ks_time_ns)cluster->quorum_election_timeout_ns;
    out->fetch_timeout_ns = (ks_time_ns)cluster->quorum_fetch_timeout_ns;
    out->election_backoff_ns_max = (ks_time_ns)cluster->quorum_election_backoff_ns_max;
    out->request_timeout_ns = (ks_time_ns)cluster->quorum_request_timeout_ns;
    out->retry_backoff_ns = (ks_time_ns)cluster->quorum_retry_backoff_ns;
    out->fetch_wait_ns_max = 500 * KS_NS_PER_MS; /* KafkaRaftClient's fetchMaxWaitMs */
}

/* Kafka's defaults are core/config.c's (QuorumConfig). */
void ks_raft_config_defaults(struct ks_raft_config *out)
{
    struct ks_cluster_config cluster;
    ks_cluster_config_defaults(&cluster);
    ks_raft_config_from_cluster(&cluster, out);
}

const char *ks_raft_role_name(enum ks_raft_role role)
{
    switch (role) {
    case KS_RAFT_UNATTACHED: return "unattached";
    case KS_RAFT_CANDIDATE: return "candidate";
    case KS_RAFT_LEADER: return "leader";
    case KS_RAFT_FOLLOWER: return "follower";
    case KS_RAFT_RESIGNED: return "resigned";
    }
    return "?";
}

/* What a node knows of one record of its log: enough for the cross-voter
 * checks (the same offset holds the same batch). */
struct entry {
    int32_t epoch;
    uint32_t crc;
};

/* The leader's view of one voter (LeaderState.ReplicaState). */
struct voter_state {
    int64_t end_offset;     /* -1 until it fetched in this epoch */
    bool acknowledged;      /* fetched (or answered BeginQuorumEpoch) in this epoch */
    bool fetched_in_period; /* for check quorum */
    /* A parked fetch (the leader's purgatory). */
    bool parked;
    int64_t parked_fetch_id;
    ks_timer_id park_timer;
};

struct ks_raft;
struct park_context {
    struct ks_raft *raft;
    int32_t voter_index;
};

struct ks_raft {
    ks_world *world;
    ks_node_id self;
    ks_node_id voters[KS_RAFT_VOTERS_MAX];
    int32_t voter_count;
    struct ks_raft_config config;
    char *log_dir;
    char *state_path;
    struct ks_raft_listener listener;
    uint64_t rng_state; /* this voter's splitmix64 stream, from the run seed and its id */

    struct ks_log *log; /* NULL while stopped */
    GArray *entries;    /* struct entry per offset of the log */
    enum ks_raft_role role;
    int32_t epoch;
    int32_t leader_id;
    int32_t voted_id;
    int64_t hw;
    int64_t applied;
    int32_t election_count;

    ks_timer_id role_timer;
    ks_timer_id send_timer;
    ks_time_ns election_deadline_ns; /* unattached, candidate: when the election timer ends */

    /* candidate */
    bool granted[KS_RAFT_VOTERS_MAX];
    bool rejected[KS_RAFT_VOTERS_MAX];
    bool backing_off;
    int32_t retries;

    /* follower */
    int64_t fetch_id;
    bool fetch_in_flight;

    /* leader */
    int64_t epoch_start_offset;
    struct voter_state voter_states[KS_RAFT_VOTERS_MAX];
    struct park_context parks[KS_RAFT_VOTERS_MAX]; /* the park timers' contexts */
    int32_t start_count;
};

/* ---- small helpers ---------------------------------------------------------- */

static uint64_t next_random(struct ks_raft *raft)
{
    uint64_t z = (raft->rng_state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint64_t random_below(struct ks_raft *raft, uint64_t bound)
{
    return bound == 0 ? 0 : next_random(raft) % bound;
}

static int32_t majority(const struct ks_raft *raft)
{
    return raft->voter_count / 2 + 1;
}

static int32_t voter_index(const struct ks_raft *raft, int32_t id)
{
    for (int32_t i = 0; i < raft->voter_count; i++) {
        if ((int32_t)raft->voters[i] == id) {
            return i;
        }
    }
    return -1;
}

static int64_t leo(const struct ks_raft *raft)
{
    return (int64_t)raft->entries->len;
}

static int32_t last_epoch(const struct ks_raft *raft)
{
    if (raft->entries->len == 0) {
        return -1;
    }
    return g_array_index(raft->entries, struct entry, raft->entries->len - 1).epoch;
}

static void notify_state(struct ks_raft *raft)
{
    if (raft->listener.on_state != NULL) {
        raft->listener.on_state(raft->listener.context, raft->role, raft->epoch, raft->leader_id);
    }
}

static void cancel_timers(struct ks_raft *raft)
{
    ks_world_cancel(raft->world, raft->role_timer);
    ks_world_cancel(raft->world, raft->send_timer);
    raft->role_timer = 0;
    raft->send_timer = 0;
    for (int32_t i = 0; i < raft->voter_count; i++) {
        ks_world_cancel(raft->world, raft->voter_states[i].park_timer);
        raft->voter_states[i].park_timer = 0;
        raft->voter_states[i].parked = false;
    }
}

/* ---- quorum-state (FileQuorumStateStore) -------------------------------------- */

static void write_quorum_state(struct ks_raft *raft)
{
    char text[256];
    int text_bytes = snprintf(text, sizeof(text),
                              "{\"leaderId\":%d,\"leaderEpoch\":%d,\"votedId\":%d,"
                              "\"appliedOffset\":0,\"currentVoters\":[],\"data_version\":0}\n",
                              raft->leader_id, raft->epoch, raft->voted_id);
    ks_assert(text_bytes > 0 && (size_t)text_bytes < sizeof(text));
    char *tmp_path = g_strdup_printf("%s.tmp", raft->state_path);
    enum ks_io_result result;
    ks_file *file =
        ks_disk_open(raft->world, raft->self, tmp_path, KS_DISK_CREATE | KS_DISK_TRUNCATE, &result);
    ks_assert(file != NULL);
    (void)ks_disk_append(file, text, (size_t)text_bytes);
    (void)ks_disk_fsync(file);
    ks_disk_close(file);
    (void)ks_disk_rename(raft->world, raft->self, tmp_path, raft->state_path);
    g_free(tmp_path);
}

static int32_t json_int(const char *text, const char *name, int32_t missing)
{
    char pattern[64];
    snprintf(pattern, sizeof(pattern), "\"%s\":", name);
    const char *at = strstr(text, pattern);
    if (at == NULL) {
        return missing;
    }
    return (int32_t)strtol(at + strlen(pattern), NULL, 10);
}

static void read_quorum_state(struct ks_raft *raft)
{
    raft->epoch = 0;
    raft->leader_id = -1;
    raft->voted_id = -1;
    enum ks_io_result result;
    ks_file *file = ks_disk_open(raft->world, raft->self, raft->state_path, 0, &result);
    if (file == NULL) {
        return;
    }
    char text[256];
    size_t read_count = 0;
    memset(text, 0, sizeof(text));
    (void)ks_disk_read(file, text, sizeof(text) - 1, 0, &read_count);
    ks_disk_close(file);
    raft->epoch = json_int(text, "leaderEpoch", 0);
    raft->leader_id = json_int(text, "leaderId", -1);
    raft->voted_id = json_int(text, "votedId", -1);
}

/* ---- the log ------------------------------------------------------------------- */

static bool scan_entry(void *context, const struct ks_batch_view *batch)
{
    struct ks_raft *raft = context;
    for (int64_t offset = batch->base_offset; offset <= ks_batch_last_offset(batch); offset++) {
        ks_assert(offset == leo(raft));
        struct entry entry = { .epoch = batch->partition_leader_epoch, .crc = batch->crc };
        g_array_append_val(raft->entries, entry);
    }
    return true;
}

static void rebuild_entries(struct ks_raft *raft, int64_t from)
{
    g_array_set_size(raft->entries, (guint)from);
    ks_log_scan(raft->log, from, INT64_MAX, scan_entry, raft);
    ks_assert(leo(raft) == ks_log_leo(raft->log));
}

static void truncate_to(struct ks_raft *raft, int64_t offset)
{
    /* Raft's safety: nothing committed is ever truncated. */
    ks_assert(offset >= raft->hw);
    if (offset < leo(raft)) {
        ks_log_truncate_to(raft->log, offset);
        ks_log_flush(raft->log);
        g_array_set_size(raft->entries, (guint)offset);
    }
}

struct apply_context {
    struct ks_raft *raft;
    int64_t upto;
};

static bool apply_batch(void *context, const struct ks_batch_view *batch)
{
    struct apply_context *apply = context;
    struct ks_raft *raft = apply->raft;
    struct ks_record_iter iter;
    struct ks_record_view record;
    ks_record_iter_init(&iter, batch);
    while (ks_record_iter_next(&iter, &record, NULL)) {
        if (record.offset < raft->applied) {
            continue;
        }
        if (record.offset >= apply->upto) {
            ks_record_iter_deinit(&iter);
            return false;
        }
        bool leader_change = record.key_bytes == (int32_t)strlen(LEADER_CHANGE_KEY) &&
                             memcmp(record.key, LEADER_CHANGE_KEY, strlen(LEADER_CHANGE_KEY)) == 0;
        raft->applied = record.offset + 1;
        if (!leader_change && raft->listener.on_commit != NULL) {
            raft->listener.on_commit(raft->listener.context, record.offset, record.value,
                                     record.value_bytes);
        }
    }
    return raft->applied < apply->upto;
}

/* Hands the records below the high watermark to the owner. */
static void apply_committed(struct ks_raft *raft)
{
    if (raft->applied >= raft->hw) {
        return;
    }
    struct apply_context apply = { .raft = raft, .upto = raft->hw };
    ks_log_scan(raft->log, raft->applied, raft->hw, apply_batch, &apply);
    ks_assert(raft->applied == raft->hw);
}

static void set_hw(struct ks_raft *raft, int64_t hw)
{
    if (hw > raft->hw) {
        ks_assert(hw <= leo(raft));
        raft->hw = hw;
        apply_committed(raft);
        if (raft->listener.on_high_watermark != NULL) {
            raft->listener.on_high_watermark(raft->listener.context, hw);
        }
    }
}

/* Appends one record as the leader; flushes (the leader's end offset counts
 * for the high watermark only once it is on disk). */
static int64_t append_record(struct ks_raft *raft, const char *key, const void *value,
                             int32_t value_bytes)
{
    int64_t now_ms = (int64_t)(ks_world_now_ns(raft->world) / KS_NS_PER_MS);
    struct ks_batch_builder builder;
    ks_batch_builder_init(&builder, now_ms, -1, -1, -1);
    ks_batch_builder_add(&builder, now_ms, key, (int32_t)strlen(key), value, value_bytes, NULL, 0);
    GByteArray *bytes = ks_batch_builder_finish(&builder);
    ks_batch_builder_deinit(&builder);
    int64_t base = -1;
    int64_t last = -1;
    enum ks_log_result result =
        ks_log_append_as_leader(raft->log, bytes->data, bytes->len, raft->epoch,
                                ks_world_now_ns(raft->world), &base, &last);
    ks_assert(result == KS_LOG_OK && base == leo(raft) && last == base);
    struct ks_batch_view batch;
    size_t batch_bytes = 0;
    ks_assert(ks_batch_parse(bytes->data, bytes->len, &batch, &batch_bytes) == KS_BATCH_OK);
    struct entry entry = { .epoch = raft->epoch, .crc = batch.crc };
    g_array_append_val(raft->entries, entry);
    g_byte_array_unref(bytes);
    ks_log_flush(raft->log);
    return base;
}

/* ---- transitions ------------------------------------------------------------- */

static void role_timeout(ks_world *world, void *context);
static void send_timeout(ks_world *world, void *context);
static void send_fetch(struct ks_raft *raft);
static void answer_parked(struct ks_raft *raft);

static void arm_role_timer(struct ks_raft *raft, ks_time_ns delay_ns)
{
    ks_world_cancel(raft->world, raft->role_timer);
    raft->role_timer = ks_world_schedule(raft->world, raft->self, delay_ns, KS_TIMER_RAFT_ROLE,
                                         role_timeout, raft);
}

static void arm_send_timer(struct ks_raft *raft, ks_time_ns delay_ns)
{
    ks_world_cancel(raft->world, raft->send_timer);
    raft->send_timer = ks_world_schedule(raft->world, raft->self, delay_ns, KS_TIMER_RAFT_SEND,
                                         send_timeout, raft);
}

static ks_time_ns random_election_timeout(struct ks_raft *raft)
{
    return raft->config.election_timeout_ns +
           random_below(raft, raft->config.election_timeout_ns + 1) / KS_NS_PER_MS * KS_NS_PER_MS;
}

static ks_time_ns check_quorum_timeout(const struct ks_raft *raft)
{
    return raft->config.fetch_timeout_ns * CHECK_QUORUM_FACTOR_NUM / CHECK_QUORUM_FACTOR_DEN;
}

static void leave_role(struct ks_raft *raft)
{
    cancel_timers(raft);
    raft->fetch_in_flight = false;
    raft->backing_off = false;
}

/* QuorumState.transitionToUnattached: a candidate or unattached node keeps
 * what is left of its election timer (so that a candidate that keeps losing
 * cannot hold the others' timers back forever); others draw a new one. */
static void become_unattached(struct ks_raft *raft, int32_t epoch)
{
    ks_assert(epoch >= raft->epoch);
    ks_time_ns now_ns = ks_world_now_ns(raft->world);
    ks_time_ns delay_ns = random_election_timeout(raft);
    if (raft->role == KS_RAFT_CANDIDATE || raft->role == KS_RAFT_UNATTACHED) {
        delay_ns = raft->election_deadline_ns > now_ns ? raft->election_deadline_ns - now_ns : 0;
    }
    leave_role(raft);
    raft->role = KS_RAFT_UNATTACHED;
    raft->epoch = epoch;
    raft->leader_id = -1;
    raft->voted_id = -1;
    raft->retries = 0;
    write_quorum_state(raft);
    raft->election_deadline_ns = now_ns + delay_ns;
    arm_role_timer(raft, delay_ns);
    notify_state(raft);
}

static void become_follower(struct ks_raft *raft, int32_t epoch, int32_t leader_id)
{
    ks_assert(epoch >= raft->epoch && leader_id != (int32_t)raft->self);
    leave_role(raft);
    raft->role = KS_RAFT_FOLLOWER;
    if (epoch > raft->epoch) {
        raft->voted_id = -1;
    }
    raft->epoch = epoch;
    raft->leader_id = leader_id;
    raft->retries = 0;
    write_quorum_state(raft);
    arm_role_timer(raft, raft->config.fetch_timeout_ns);
    notify_state(raft);
    send_fetch(raft);
}

static void send_begin_epoch(struct ks_raft *raft)
{
    struct ks_raft_begin_epoch message;
    memset(&message, 0, sizeof(message));
    message.leader_epoch = raft->epoch;
    message.leader_id = (int32_t)raft->self;
    for (int32_t i = 0; i < raft->voter_count; i++) {
        if (raft->voters[i] != raft->self && !raft->voter_states[i].acknowledged) {
            ks_world_send(raft->world, raft->self, raft->voters[i], KS_MSG_RAFT_BEGIN_EPOCH,
                          &message, sizeof(message));
        }
    }
    arm_send_timer(raft, raft->config.fetch_timeout_ns / 2);
}

static void maybe_update_leader_hw(struct ks_raft *raft)
{
    int64_t offsets[KS_RAFT_VOTERS_MAX];
    for (int32_t i = 0; i < raft->voter_count; i++) {
        offsets[i] = raft->voters[i] == raft->self ? leo(raft) : raft->voter_states[i].end_offset;
    }
    /* Descending; the majority-th largest is on a majority. */
    for (int32_t i = 0; i < raft->voter_count; i++) {
        for (int32_t j = i + 1; j < raft->voter_count; j++) {
            if (offsets[j] > offsets[i]) {
                int64_t swap = offsets[i];
                offsets[i] = offsets[j];
                offsets[j] = swap;
            }
        }
    }
    int64_t candidate_hw = offsets[raft->voter_count / 2];
    if (candidate_hw > raft->epoch_start_offset && candidate_hw > raft->hw) {
        set_hw(raft, candidate_hw);
        answer_parked(raft);
    }
}

static void become_leader(struct ks_raft *raft)
{
    leave_role(raft);
    raft->role = KS_RAFT_LEADER;
    raft->leader_id = (int32_t)raft->self;
    raft->election_count++;
    for (int32_t i = 0; i < raft->voter_count; i++) {
        raft->voter_states[i] = (struct voter_state){ .end_offset = -1 };
    }
    write_quorum_state(raft);
    raft->epoch_start_offset = leo(raft);
    ks_log_epoch_assign(raft->log, raft->epoch, raft->epoch_start_offset);
    uint8_t value[8];
    memset(value, 0, sizeof(value));
    memcpy(value, &raft->self, sizeof(raft->self));
    (void)append_record(raft, LEADER_CHANGE_KEY, value, (int32_t)sizeof(value));
    if (raft->voter_count > 1) {
        arm_role_timer(raft, check_quorum_timeout(raft));
    }
    notify_state(raft);
    send_begin_epoch(raft);
    maybe_update_leader_hw(raft);
}

static void become_resigned(struct ks_raft *raft)
{
    leave_role(raft);
    raft->role = KS_RAFT_RESIGNED;
    arm_role_timer(raft, random_election_timeout(raft));
    notify_state(raft);
}

static void become_candidate(struct ks_raft *raft)
{
    leave_role(raft);
    raft->role = KS_RAFT_CANDIDATE;
    raft->epoch++;
    raft->leader_id = -1;
    raft->voted_id = (int32_t)raft->self;
    raft->retries++;
    memset(raft->granted, 0, sizeof(raft->granted));
    memset(raft->rejected, 0, sizeof(raft->rejected));
    raft->granted[voter_index(raft, (int32_t)raft->self)] = true;
    write_quorum_state(raft);
    notify_state(raft);
    if (majority(raft) == 1) {
        become_leader(raft);
        return;
    }
    ks_time_ns timeout_ns = random_election_timeout(raft);
    raft->election_deadline_ns = ks_world_now_ns(raft->world) + timeout_ns;
    arm_role_timer(raft, timeout_ns);
    struct ks_raft_vote_request request;
    memset(&request, 0, sizeof(request));
    request.candidate_epoch = raft->epoch;
    request.candidate_id = (int32_t)raft->self;
    request.last_offset_epoch = last_epoch(raft);
    request.last_offset = leo(raft);
    for (int32_t i = 0; i < raft->voter_count; i++) {
        if (raft->voters[i] != raft->self) {
            ks_world_send(raft->world, raft->self, raft->voters[i], KS_MSG_RAFT_VOTE_REQUEST,
                          &request, sizeof(request));
        }
    }
}

/* binaryExponentialElectionBackoffMs: retry.backoff * uniform[0, 2^retries). */
static void start_backoff(struct ks_raft *raft)
{
    int32_t shift = raft->retries - 1 < 20 ? raft->retries - 1 : 20;
    uint64_t factor = random_below(raft, UINT64_C(2) << shift);
    ks_time_ns backoff_ns = raft->config.retry_backoff_ns * factor;
    if (backoff_ns > raft->config.election_backoff_ns_max) {
        backoff_ns = raft->config.election_backoff_ns_max;
    }
    raft->backing_off = true;
    arm_role_timer(raft, backoff_ns);
}

/* A message of a higher epoch: move to it (KafkaRaftClient.maybeTransition). */
static void observe_epoch(struct ks_raft *raft, int32_t epoch, int32_t leader_id)
{
    if (epoch > raft->epoch) {
        if (leader_id >= 0 && leader_id != (int32_t)raft->self) {
            become_follower(raft, epoch, leader_id);
        } else {
            become_unattached(raft, epoch);
        }
    } else if (epoch == raft->epoch && leader_id >= 0 && leader_id != (int32_t)raft->self &&
               raft->role != KS_RAFT_FOLLOWER && raft->role != KS_RAFT_LEADER) {
        become_follower(raft, epoch, leader_id);
    }
}

static void after_event(struct ks_raft *raft)
{
    if (raft->listener.after_event != NULL) {
        raft->listener.after_event(raft->listener.context);
    }
}

static void role_timeout(ks_world *world, void *context)
{
    (void)world;
    struct ks_raft *raft = context;
    raft->role_timer = 0;
    switch (raft->role) {
    case KS_RAFT_UNATTACHED:
    case KS_RAFT_RESIGNED:
    case KS_RAFT_FOLLOWER: /* fetch timeout: the leader is gone */ become_candidate(raft); break;
    case KS_RAFT_CANDIDATE:
        if (raft->backing_off) {
            become_candidate(raft);
        } else {
            start_backoff(raft);
        }
        break;
    case KS_RAFT_LEADER: /* check quorum: a majority did not fetch in time */
        become_resigned(raft);
        break;
    }
    after_event(raft);
}

static void send_timeout(ks_world *world, void *context)
{
    (void)world;
    struct ks_raft *raft = context;
    raft->send_timer = 0;
    if (raft->role == KS_RAFT_LEADER) {
        send_begin_epoch(raft);
    } else if (raft->role == KS_RAFT_FOLLOWER) {
        raft->fetch_in_flight = false; /* request timeout, or the backoff after an error */
        send_fetch(raft);
    }
    after_event(raft);
}

/* ---- Vote -------------------------------------------------------------------- */

static void on_vote_request(struct ks_raft *raft, ks_node_id source,
                            const struct ks_raft_vote_request *request)
{
    struct ks_raft_vote_response response;
    memset(&response, 0, sizeof(response));
    if (request->candidate_epoch > raft->epoch) {
        become_unattached(raft, request->candidate_epoch);
    }
    if (request->candidate_epoch < raft->epoch) {
        response.error_code = KS_ERR_FENCED_LEADER_EPOCH;
    } else {
        bool log_ok =
            request->last_offset_epoch > last_epoch(raft) ||
            (request->last_offset_epoch == last_epoch(raft) && request->last_offset >= leo(raft));
        bool granted = false;
        if (raft->role == KS_RAFT_UNATTACHED) {
            granted = raft->voted_id == request->candidate_id || (raft->voted_id == -1 && log_ok);
        }
        if (granted && raft->voted_id == -1) {
            raft->voted_id = request->candidate_id;
            write_quorum_state(raft);
        }
        response.vote_granted = granted ? 1 : 0;
    }
    response.leader_epoch = raft->epoch;
    response.leader_id = raft->leader_id;
    ks_world_send(raft->world, raft->self, source, KS_MSG_RAFT_VOTE_RESPONSE, &response,
                  sizeof(response));
}

static void on_vote_response(struct ks_raft *raft, ks_node_id source,
                             const struct ks_raft_vote_response *response)
{
    observe_epoch(raft, response->leader_epoch, response->leader_id);
    if (raft->role != KS_RAFT_CANDIDATE || response->leader_epoch != raft->epoch ||
        response->error_code != KS_ERR_NONE) {
        return;
    }
    int32_t index = voter_index(raft, (int32_t)source);
    if (index < 0) {
        return;
    }
    if (response->vote_granted) {
        raft->granted[index] = true;
    } else {
        raft->rejected[index] = true;
    }
    int32_t granted_count = 0;
    int32_t rejected_count = 0;
    for (int32_t i = 0; i < raft->voter_count; i++) {
        granted_count += raft->granted[i] ? 1 : 0;
        rejected_count += raft->rejected[i] ? 1 : 0;
    }
    if (granted_count >= majority(raft)) {
        become_leader(raft);
    } else if (rejected_count > raft->voter_count - majority(raft) && !raft->backing_off) {
        start_backoff(raft); /* CandidateState.isVoteRejected: no majority left */
    }
}

/* ---- BeginQuorumEpoch ---------------------------------------------------------- */

static void on_begin_epoch(struct ks_raft *raft, ks_node_id source,
                           const struct ks_raft_begin_epoch *request)
{
    struct ks_raft_begin_epoch response;
    memset(&response, 0, sizeof(response));
    if (request->leader_epoch < raft->epoch) {
        response.error_code = KS_ERR_FENCED_LEADER_EPOCH;
    } else {
        observe_epoch(raft, request->leader_epoch, request->leader_id);
        if (raft->role == KS_RAFT_FOLLOWER && raft->leader_id == request->leader_id) {
            arm_role_timer(raft, raft->config.fetch_timeout_ns);
        }
    }
    response.leader_epoch = raft->epoch;
    response.leader_id = raft->leader_id;
    ks_world_send(raft->world, raft->self, source, KS_MSG_RAFT_BEGIN_EPOCH_RESPONSE, &response,
                  sizeof(response));
}

static void on_begin_epoch_response(struct ks_raft *raft, ks_node_id source,
                                    const struct ks_raft_begin_epoch *response)
{
    observe_epoch(raft, response->leader_epoch, response->leader_id);
    int32_t index = voter_index(raft, (int32_t)source);
    if (raft->role == KS_RAFT_LEADER && response->leader_epoch == raft->epoch &&
        response->error_code == KS_ERR_NONE && index >= 0) {
        raft->voter_states[index].acknowledged = true;
    }
}

/* ---- Fetch ------------------------------------------------------------------- */

static void send_fetch(struct ks_raft *raft)
{
    if (raft->role != KS_RAFT_FOLLOWER || raft->fetch_in_flight) {
        return;
    }
    struct ks_raft_fetch_request request;
    memset(&request, 0, sizeof(request));
    request.fetch_id = ++raft->fetch_id;
    request.fetch_offset = leo(raft);
    request.current_leader_epoch = raft->epoch;
    request.last_fetched_epoch = last_epoch(raft);
    request.replica_id = (int32_t)raft->self;
    raft->fetch_in_flight = true;
    ks_world_send(raft->world, raft->self, (ks_node_id)raft->leader_id, KS_MSG_RAFT_FETCH_REQUEST,
                  &request, sizeof(request));
    /* The long poll plus the request timeout. */
    arm_send_timer(raft, raft->config.fetch_wait_ns_max + raft->config.request_timeout_ns);
}

static void send_fetch_response(struct ks_raft *raft, ks_node_id target, int64_t fetch_id,
                                int16_t error_code, int64_t fetch_offset, int32_t diverging_epoch,
                                int64_t diverging_end_offset)
{
    GByteArray *data = g_byte_array_new();
    if (error_code == KS_ERR_NONE && diverging_epoch < 0 && fetch_offset < leo(raft)) {
        enum ks_log_result result =
            ks_log_read(raft->log, fetch_offset, INT64_MAX, FETCH_BYTES_MAX, data);
        ks_assert(result == KS_LOG_OK);
    }
    size_t total = sizeof(struct ks_raft_fetch_response) + data->len;
    uint8_t *bytes = g_malloc0(total);
    struct ks_raft_fetch_response response;
    memset(&response, 0, sizeof(response));
    response.fetch_id = fetch_id;
    response.high_watermark = raft->role == KS_RAFT_LEADER ? raft->hw : -1;
    response.diverging_epoch = diverging_epoch;
    response.diverging_end_offset = diverging_end_offset;
    response.leader_epoch = raft->epoch;
    response.leader_id = raft->leader_id;
    response.error_code = error_code;
    response.batch_bytes = data->len;
    memcpy(bytes, &response, sizeof(response));
    if (data->len > 0) {
        memcpy(bytes + sizeof(response), data->data, data->len);
    }
    ks_world_send(raft->world, raft->self, target, KS_MSG_RAFT_FETCH_RESPONSE, bytes, total);
    g_free(bytes);
    g_byte_array_unref(data);
}

static void park_expired(ks_world *world, void *context)
{
    (void)world;
    struct park_context *park = context;
    struct ks_raft *raft = park->raft;
    struct voter_state *state = &raft->voter_states[park->voter_index];
    state->park_timer = 0;
    if (state->parked && raft->role == KS_RAFT_LEADER) {
        state->parked = false;
        send_fetch_response(raft, raft->voters[park->voter_index], state->parked_fetch_id,
                            KS_ERR_NONE, state->end_offset, -1, -1);
    }
    after_event(raft);
}

static void answer_parked(struct ks_raft *raft)
{
    for (int32_t i = 0; i < raft->voter_count; i++) {
        struct voter_state *state = &raft->voter_states[i];
        if (state->parked) {
            state->parked = false;
            ks_world_cancel(raft->world, state->park_timer);
            state->park_timer = 0;
            send_fetch_response(raft, raft->voters[i], state->parked_fetch_id, KS_ERR_NONE,
                                state->end_offset, -1, -1);
        }
    }
}

static void on_fetch_request(struct ks_raft *raft, ks_node_id source,
                             const struct ks_raft_fetch_request *request)
{
    int32_t index = voter_index(raft, request->replica_id);
    if (index < 0 || request->replica_id != (int32_t)source) {
        return; /* not a voter: no observers in this model */
    }
    if (request->current_leader_epoch < raft->epoch) {
        send_fetch_response(raft, source, request->fetch_id, KS_ERR_FENCED_LEADER_EPOCH, 0, -1, -1);
        return;
    }
    if (request->current_leader_epoch > raft->epoch) {
        /* The follower knows a newer epoch than this node (validateLeaderOnlyRequest). */
        send_fetch_response(raft, source, request->fetch_id, KS_ERR_UNKNOWN_LEADER_EPOCH, 0, -1,
                            -1);
        return;
    }
    if (raft->role != KS_RAFT_LEADER) {
        send_fetch_response(raft, source, request->fetch_id, KS_ERR_NOT_LEADER_OR_FOLLOWER, 0, -1,
                            -1);
        return;
    }
    /* ReplicatedLog.validateOffsetAndEpoch. */
    if (request->fetch_offset > 0 || request->last_fetched_epoch >= 0) {
        int32_t epoch = -1;
        int64_t end_offset = -1;
        bool found =
            ks_log_epoch_end_offset(raft->log, request->last_fetched_epoch, &epoch, &end_offset);
        if (!found) {
            epoch = -1;
            end_offset = 0;
        }
        if (epoch != request->last_fetched_epoch || end_offset < request->fetch_offset) {
            send_fetch_response(raft, source, request->fetch_id, KS_ERR_NONE, 0, epoch, end_offset);
            return;
        }
    }
    struct voter_state *state = &raft->voter_states[index];
    state->acknowledged = true;
    state->end_offset = request->fetch_offset;
    /* LeaderState.updateCheckQuorumForFollowingVoter */
    state->fetched_in_period = true;
    int32_t fetched = 1;
    for (int32_t i = 0; i < raft->voter_count; i++) {
        fetched += raft->voters[i] != raft->self && raft->voter_states[i].fetched_in_period ? 1 : 0;
    }
    if (fetched >= majority(raft)) {
        for (int32_t i = 0; i < raft->voter_count; i++) {
            raft->voter_states[i].fetched_in_period = false;
        }
        arm_role_timer(raft, check_quorum_timeout(raft));
    }
    int64_t hw_before = raft->hw;
    maybe_update_leader_hw(raft); /* may answer parked fetches, not this one */
    if (state->parked) {
        /* A newer fetch replaces the parked one. */
        state->parked = false;
        ks_world_cancel(raft->world, state->park_timer);
        state->park_timer = 0;
    }
    if (request->fetch_offset < leo(raft) || raft->hw != hw_before ||
        raft->config.fetch_wait_ns_max == 0) {
        send_fetch_response(raft, source, request->fetch_id, KS_ERR_NONE, request->fetch_offset, -1,
                            -1);
        return;
    }
    state->parked = true;
    state->parked_fetch_id = request->fetch_id;
    state->park_timer =
        ks_world_schedule(raft->world, raft->self, raft->config.fetch_wait_ns_max,
                          KS_TIMER_RAFT_FETCH_WAIT, park_expired, &raft->parks[index]);
}

static void on_fetch_response(struct ks_raft *raft, ks_node_id source,
                              const struct ks_raft_fetch_response *response, const uint8_t *data)
{
    observe_epoch(raft, response->leader_epoch, response->leader_id);
    if (raft->role != KS_RAFT_FOLLOWER || (int32_t)source != raft->leader_id ||
        response->fetch_id != raft->fetch_id || !raft->fetch_in_flight) {
        return;
    }
    raft->fetch_in_flight = false;
    ks_world_cancel(raft->world, raft->send_timer);
    raft->send_timer = 0;
    if (response->error_code != KS_ERR_NONE || response->leader_epoch != raft->epoch) {
        arm_send_timer(raft, raft->config.retry_backoff_ns);
        return;
    }
    /* The leader answered: FollowerState.resetFetchTimeout. */
    arm_role_timer(raft, raft->config.fetch_timeout_ns);
    if (response->diverging_end_offset >= 0) {
        /* KafkaMetadataLog.truncateToEndOffset: the follower's own end of the
         * diverging epoch, and no further than the leader's end of it. */
        int32_t epoch = -1;
        int64_t end_offset = 0;
        if (!ks_log_epoch_end_offset(raft->log, response->diverging_epoch, &epoch, &end_offset)) {
            end_offset = 0;
        }
        int64_t truncate_at = end_offset;
        if (epoch == response->diverging_epoch && response->diverging_end_offset < truncate_at) {
            truncate_at = response->diverging_end_offset;
        }
        ks_assert(truncate_at < leo(raft)); /* else the leader would not call it diverging */
        truncate_to(raft, truncate_at);
        send_fetch(raft);
        return;
    }
    if (response->batch_bytes > 0) {
        enum ks_log_result result = ks_log_append_as_follower(
            raft->log, data, response->batch_bytes, ks_world_now_ns(raft->world));
        ks_assert(result == KS_LOG_OK);
        ks_log_flush(raft->log);
        rebuild_entries(raft, leo(raft));
    }
    if (response->high_watermark >= 0) {
        int64_t hw = response->high_watermark < leo(raft) ? response->high_watermark : leo(raft);
        set_hw(raft, hw);
    }
    send_fetch(raft);
}

/* ---- the owner's calls -------------------------------------------------------- */

struct ks_raft *ks_raft_new(ks_world *world, ks_node_id self, const ks_node_id *voters,
                            int32_t voter_count, const struct ks_raft_config *config,
                            const char *log_dir, const struct ks_raft_listener *listener)
{
    ks_assert(voter_count >= 1 && voter_count <= KS_RAFT_VOTERS_MAX);
    struct ks_raft *raft = g_new0(struct ks_raft, 1);
    raft->world = world;
    raft->self = self;
    memcpy(raft->voters, voters, sizeof(voters[0]) * (size_t)voter_count);
    raft->voter_count = voter_count;
    raft->config = *config;
    raft->log_dir = g_strdup(log_dir);
    raft->state_path = g_strdup_printf("%s/quorum-state", log_dir);
    if (listener != NULL) {
        raft->listener = *listener;
    }
    raft->rng_state = ks_world_seed(world) ^ (UINT64_C(0x6A09E667F3BCC909) * ((uint64_t)self + 1));
    raft->entries = g_array_new(false, true, sizeof(struct entry));
    raft->leader_id = -1;
    raft->voted_id = -1;
    ks_assert(voter_index(raft, (int32_t)self) >= 0);
    for (int32_t i = 0; i < voter_count; i++) {
        raft->parks[i] = (struct park_context){ .raft = raft, .voter_index = i };
    }
    return raft;
}

void ks_raft_free(struct ks_raft *raft)
{
    if (raft == NULL) {
        return;
    }
    ks_raft_stop(raft);
    g_array_free(raft->entries, true);
    g_free(raft->log_dir);
    g_free(raft->state_path);
    g_free(raft);
}

void ks_raft_stop(struct ks_raft *raft)
{
    cancel_timers(raft);
    ks_log_close(raft->log);
    raft->log = NULL;
}

void ks_raft_start(struct ks_raft *raft)
{
    if (raft->log != NULL) {
        ks_raft_stop(raft);
    }
    struct ks_log_config log_config;
    ks_log_config_defaults(&log_config);
    raft->log = ks_log_open(raft->world, raft->self, raft->log_dir, &log_config, 0, false, NULL);
    raft->start_count++;
    rebuild_entries(raft, 0);
    raft->hw = 0;
    raft->applied = 0;
    raft->fetch_in_flight = false;
    raft->backing_off = false;
    raft->retries = 0;
    read_quorum_state(raft);
    raft->role = raft->leader_id == (int32_t)raft->self ? KS_RAFT_RESIGNED : KS_RAFT_UNATTACHED;
    if (raft->role == KS_RAFT_UNATTACHED) {
        raft->leader_id = -1; /* QuorumState.initialize: a known leader is found again */
    }
    ks_time_ns timeout_ns = random_election_timeout(raft);
    raft->election_deadline_ns = ks_world_now_ns(raft->world) + timeout_ns;
    arm_role_timer(raft, timeout_ns);
    notify_state(raft);
}

static bool receive(struct ks_raft *raft, ks_node_id source, uint32_t kind, const void *message,
                    size_t message_bytes);

bool ks_raft_receive(struct ks_raft *raft, ks_node_id source, uint32_t kind, const void *message,
                     size_t message_bytes)
{
    bool handled = receive(raft, source, kind, message, message_bytes);
    if (handled && raft->log != NULL) {
        after_event(raft);
    }
    return handled;
}

static bool receive(struct ks_raft *raft, ks_node_id source, uint32_t kind, const void *message,
                    size_t message_bytes)
{
    if (raft->log == NULL) {
        return kind >= KS_MSG_RAFT_VOTE_REQUEST && kind <= KS_MSG_RAFT_FETCH_RESPONSE;
    }
    switch (kind) {
    case KS_MSG_RAFT_VOTE_REQUEST: {
        struct ks_raft_vote_request request;
        ks_assert(message_bytes == sizeof(request));
        memcpy(&request, message, sizeof(request));
        on_vote_request(raft, source, &request);
        return true;
    }
    case KS_MSG_RAFT_VOTE_RESPONSE: {
        struct ks_raft_vote_response response;
        ks_assert(message_bytes == sizeof(response));
        memcpy(&response, message, sizeof(response));
        on_vote_response(raft, source, &response);
        return true;
    }
    case KS_MSG_RAFT_BEGIN_EPOCH:
    case KS_MSG_RAFT_BEGIN_EPOCH_RESPONSE: {
        struct ks_raft_begin_epoch begin;
        ks_assert(message_bytes == sizeof(begin));
        memcpy(&begin, message, sizeof(begin));
        if (kind == KS_MSG_RAFT_BEGIN_EPOCH) {
            on_begin_epoch(raft, source, &begin);
        } else {
            on_begin_epoch_response(raft, source, &begin);
        }
        return true;
    }
    case KS_MSG_RAFT_FETCH_REQUEST: {
        struct ks_raft_fetch_request request;
        ks_assert(message_bytes == sizeof(request));
        memcpy(&request, message, sizeof(request));
        on_fetch_request(raft, source, &request);
        return true;
    }
    case KS_MSG_RAFT_FETCH_RESPONSE: {
        struct ks_raft_fetch_response response;
        ks_assert(message_bytes >= sizeof(response));
        memcpy(&response, message, sizeof(response));
        ks_assert(message_bytes == sizeof(response) + response.batch_bytes);
        on_fetch_response(raft, source, &response, (const uint8_t *)message + sizeof(response));
        return true;
    }
    default: return false;
    }
}

int64_t ks_raft_append(struct ks_raft *raft, const char *key, const void *value,
                       int32_t value_bytes)
{
    if (raft->role != KS_RAFT_LEADER || raft->log == NULL) {
        return -1;
    }
    int64_t offset = append_record(raft, key, value, value_bytes);
    maybe_update_leader_hw(raft);
    answer_parked(raft);
    return offset;
}

enum ks_raft_role ks_raft_role(const struct ks_raft *raft)
{
    return raft->role;
}

int32_t ks_raft_epoch(const struct ks_raft *raft)
{
    return raft->epoch;
}

int32_t ks_raft_leader(const struct ks_raft *raft)
{
    return raft->leader_id;
}

int64_t ks_raft_hw(const struct ks_raft *raft)
{
    return raft->hw;
}

int64_t ks_raft_leo(const struct ks_raft *raft)
{
    return leo(raft);
}

int64_t ks_raft_applied(const struct ks_raft *raft)
{
    return raft->applied;
}

int32_t ks_raft_election_count(const struct ks_raft *raft)
{
    return raft->election_count;
}

bool ks_raft_leader_ready(const struct ks_raft *raft)
{
    return raft->role == KS_RAFT_LEADER && raft->hw > raft->epoch_start_offset;
}

void ks_raft_check(const struct ks_raft *raft)
{
    ks_assert(raft->applied <= raft->hw);
    ks_assert(raft->hw <= leo(raft));
    if (raft->log != NULL) {
        ks_assert(leo(raft) == ks_log_leo(raft->log));
    }
    switch (raft->role) {
    case KS_RAFT_LEADER:
        ks_assert(raft->leader_id == (int32_t)raft->self);
        ks_assert(raft->voted_id == -1 || raft->voted_id == (int32_t)raft->self);
        break;
    case KS_RAFT_FOLLOWER:
        ks_assert(raft->leader_id >= 0 && raft->leader_id != (int32_t)raft->self);
        break;
    case KS_RAFT_CANDIDATE: ks_assert(raft->voted_id == (int32_t)raft->self); break;
    case KS_RAFT_UNATTACHED: ks_assert(raft->leader_id == -1); break;
    case KS_RAFT_RESIGNED: ks_assert(raft->leader_id == (int32_t)raft->self); break;
    }
    for (int64_t i = 1; i < leo(raft); i++) {
        ks_assert(g_array_index(raft->entries, struct entry, i).epoch >=
                  g_array_index(raft->entries, struct entry, i - 1).epoch);
    }
}

/* ---- cross-voter checks (RaftEventSimulationTest's invariants) ------------------ */

struct ks_raft_quorum_checker {
    GHashTable *leader_by_epoch; /* epoch -> leader id + 1 (lookups only, never iterated) */
    GArray *committed;           /* struct entry per offset committed on some voter */
    int64_t hw_seen[KS_RAFT_VOTERS_MAX];
    int32_t start_seen[KS_RAFT_VOTERS_MAX];
};

struct ks_raft_quorum_checker *ks_raft_quorum_checker_new(void)
{
    struct ks_raft_quorum_checker *checker = g_new0(struct ks_raft_quorum_checker, 1);
    checker->leader_by_epoch = g_hash_table_new(g_direct_hash, g_direct_equal);
    checker->committed = g_array_new(false, true, sizeof(struct entry));
    return checker;
}

void ks_raft_quorum_checker_free(struct ks_raft_quorum_checker *checker)
{
    if (checker == NULL) {
        return;
    }
    g_hash_table_destroy(checker->leader_by_epoch);
    g_array_free(checker->committed, true);
    g_free(checker);
}

void ks_raft_quorum_check(struct ks_raft_quorum_checker *checker, struct ks_raft *const *nodes,
                          int32_t node_count)
{
    ks_assert(node_count <= KS_RAFT_VOTERS_MAX);
    for (int32_t n = 0; n < node_count; n++) {
        const struct ks_raft *raft = nodes[n];
        ks_raft_check(raft);
        /* SingleLeader */
        if (raft->role == KS_RAFT_LEADER) {
            gpointer key = GINT_TO_POINTER(raft->epoch);
            gpointer known = g_hash_table_lookup(checker->leader_by_epoch, key);
            if (known == NULL) {
                g_hash_table_insert(checker->leader_by_epoch, key,
                                    GINT_TO_POINTER((int32_t)raft->self + 1));
            } else {
                ks_assert(GPOINTER_TO_INT(known) == (int32_t)raft->self + 1);
            }
        }
        /* MonotonicHighWatermark, per incarnation of the node (a restart starts
         * from 0 and learns it again from the leader). */
        if (checker->start_seen[n] == raft->start_count) {
            ks_assert(raft->hw >= checker->hw_seen[n]);
        }
        checker->start_seen[n] = raft->start_count;
        checker->hw_seen[n] = raft->hw;
        /* ConsistentCommittedData: what a node has below its high watermark is
         * what every other node had there. */
        for (int64_t offset = 0; offset < raft->hw; offset++) {
            struct entry mine = g_array_index(raft->entries, struct entry, offset);
            if (offset < (int64_t)checker->committed->len) {
                struct entry known = g_array_index(checker->committed, struct entry, offset);
                ks_assert(known.epoch == mine.epoch && known.crc == mine.crc);
            } else {
                g_array_append_val(checker->committed, mine);
            }
        }
    }
    /* Committed data is never lost: a majority of the voters' logs (on disk,
     * up or down) hold every committed record. */
    int32_t holding = 0;
    for (int32_t n = 0; n < node_count; n++) {
        const struct ks_raft *raft = nodes[n];
        bool holds = leo(raft) >= (int64_t)checker->committed->len;
        for (int64_t offset = 0; holds && offset < (int64_t)checker->committed->len; offset++) {
            struct entry mine = g_array_index(raft->entries, struct entry, offset);
            struct entry known = g_array_index(checker->committed, struct entry, offset);
            holds = known.epoch == mine.epoch && known.crc == mine.crc;
        }
        holding += holds ? 1 : 0;
    }
    ks_assert(checker->committed->len == 0 || holding >= node_count / 2 + 1);
}
