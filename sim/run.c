/*
** sim/run.c: one scenario run from frozen scenario to verdict (sim/run.h).
**
** Phases:
**   1. prepare   checks first, writing nothing: the run folder (absent, empty,
**                or a ksim run folder: it holds the marker), the disk space
**                its file system has for the logs (an estimate), the trace
**                file. Then, in an order that lets a failure undo exactly what
**                was made: lock the run folder (flock on the marker, held to
**                the end: a second run of the same settings into it is exit
**                2), open the database (the recorder identifies it before it
**                writes), create or truncate the trace file, empty the
**                folder of an earlier run's logs. Any failure here is bad
**                input: exit 2, and nothing stays written; a file ksim did
**                not create is never removed.
**   2. build     (2-5 run under a host-failure escape: a failing host call
**                under the disk, such as a full disk, ends the run with exit 3
**                and "host I/O error: PATH: ...", and nothing is recorded)
**                world (node count from the cluster spec), link latencies,
**                cluster (observer: run_on_event/record/consumed), faults,
**                the after-event hook (triggers, availability, progress),
**                the partition-state sampler (driver timer on node 0).
**   3. run       to `duration`.
**   4. final     with final.heal: stop producers, heal everything, run until
**                ks_cluster_converged or final.drain passes.
**   5. judge     final read (every partition from its leader up to its HW),
**                replica reads (divergence), checker, expectations.
**   6. record    one recorder transaction; then print text or JSON.
**
** Determinism: the driver only adds timers on node 0 (sampler, faults) and
** trace mixes; wall time is read for wall_ms, record_ms and the progress
** line only, and never reaches the world.
**
** Availability: unavailable_ms and produce_unavailable_ms come from
** sim/availability.c (the cluster's view is tracked during the run: marked
** dirty by the events that can change it and updated after every event; the
** clients' view is computed from the record outcomes after the run). Both
** end at `duration`.
**
** Consumer groups: every consumer's position reports and processed records
** feed a struct ks_group_tracker (sim/checker.h), which gives each group's
** first and final position per partition for consumed_lost and
** consumed_unseen. Causes of lost records come from sim/cause.c.
*/
#include "run.h"

#include "../core/base.h"
#include "../core/batch.h"
#include "../core/cluster.h"
#include "../core/log.h"
#include "../core/mirror.h"
#include "../core/mirror_sync.h"
#include "../core/proto.h"
#include "availability.h"
#include "cause.h"
#include "checker.h"
#include "faults.h"
#include "mirror_check.h"
#include "narrate.h"
#include "recorder.h"
#include "steps.h"
#include "world.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <inttypes.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define SAMPLE_INTERVAL_NS_MIN (100 * KS_NS_PER_MS)
#define SAMPLE_COUNT_TARGET    1000
/* partition_state rows (one per replica per sample) a run keeps at most:
 * 80 bytes of memory each until the run is recorded, and a database row. */
#define SAMPLE_ROW_COUNT_MAX 2000000
#define FINAL_STEP_NS          (10 * KS_NS_PER_MS)
#define REFUSED_QUIET_NS       (1 * KS_NS_PER_S)
#define RUN_MARKER             ".ksim-run"

struct run_event {
    ks_time_ns at_ns;
    const char *kind; /* static */
    int32_t broker;
    int32_t topic_index;
    int32_t partition;
    char *detail;  /* owned */
    char *explain; /* owned, may be NULL */
    char *
        picture; /* owned, may be NULL: --explain's drawing of the logs (a step that changed one) */
    bool timeline;
    int32_t fault_index;                  /* fault reports: the scenario fault, else -1 */
    struct ks_recorder_event_facts facts; /* the typed columns; strings in run->strings */
};

struct run_sample {
    ks_time_ns t_ns;
    int32_t topic_index;
    int32_t partition;
    int32_t broker;
    int32_t replica_index;
    enum ks_role role;
    bool online;
    int64_t leo;
    int64_t hw;
    int32_t leader_epoch;
    int32_t leader;
    const char *isr;            /* in run->strings */
    const char *elr;            /* KIP-966 ELR, "" if none; in run->strings */
    const char *last_known_elr; /* KIP-966 LastKnownElr, "" if none; in run->strings */
};

struct expect_outcome {
    char *expr;
    char *actual;
    bool passed;
};

/* Last shown time of a coalesced kind (refused writes, producer errors). */
struct quiet_slot {
    ks_time_ns shown_ns;
    int64_t suppressed;
    bool used;
};

struct run {
    const struct ks_scenario *scenario;   /* not owned */
    const struct ks_run_options *options; /* not owned */
    struct ks_cluster_spec spec;
    struct ks_cluster_observer observer; /* borrowed by the cluster */
    uint64_t seed;
    ks_world *world;
    struct ks_cluster *cluster;
    struct ks_faults *faults;
    GArray *events;         /* struct run_event */
    struct ks_steps *steps; /* every replica's log at each step (sim/steps.h) */
    GArray *outcomes;       /* struct ks_record_outcome, keys in strings */
    GArray *consumed;       /* struct ks_consumed_record */
    GArray *txns;           /* struct ks_txn_outcome, from KS_EV_TXN_END */
    GArray *samples;        /* struct run_sample */
    GStringChunk *strings;
    int32_t user_topic_count;
    int32_t *tp_base; /* [topic] first slot of the per-partition arrays */
    int32_t tp_count;
    struct ks_availability *availability; /* the cluster's view; NULL before the cluster */
    GArray *produce_intervals;            /* struct ks_unavailable_interval: the clients' view */
    struct ks_group_tracker groups;       /* consumer groups' positions */
    int32_t *consumer_group;              /* [consumer index] -> group number */
    const char **group_names;             /* [group] its group.id (borrowed from the scenario) */
    int32_t group_count;
    bool final_phase;
    struct quiet_slot *quiet; /* [slot * 2 + (refused ? 0 : 1)] */
    int64_t leader_elections;
    int64_t unclean_elections;
    int64_t isr_shrinks;
    int64_t isr_expands;
    ks_time_ns sample_interval_ns;
    int64_t start_us;
    int64_t progress_checked_events;
    bool progress_shown;
    double metrics[KS_METRIC_COUNT];
    struct ks_checker_output check;
    GArray *expectations; /* struct expect_outcome */
    /* Several clusters (scenario->cluster_count > 0; see "several clusters"
     * below): cluster is NULL then, and these hold the clusters. */
    struct run_cluster *clusters; /* owned, [cluster_count] */
    int32_t cluster_count;
    struct run_mirror *mirrors; /* owned, [mirror_count] */
    int32_t mirror_count;
    int32_t *topic_local;    /* owned: [scenario topic] -> index in its cluster's spec */
    int32_t *producer_local; /* owned: [scenario producer] -> index in its cluster's spec */
    int32_t *consumer_local; /* owned */
    bool *remote_topic;      /* owned: [scenario topic] a mirror's remote topic */
    GArray *cuts;            /* struct run_cut: the partitions in force */
    GArray *failovers;       /* struct run_failover: the groups that failed over */
    struct run_fault_fire *fires; /* owned: [fault] the timers' contexts */
    GArray *lag_samples;          /* struct run_lag_sample */
};

/* One mirror's lag at a sample time. */
struct run_lag_sample {
    ks_time_ns t_ns;
    int32_t mirror;
    int64_t lag;
};

/* ---- several clusters ---------------------------------------------------------------------- */

/*
** A scenario with [cluster NAME] sections runs every cluster on a view of
** one world (sim/world.h ks_world_view_new): one clock, one event order,
** one trace. Cluster c's nodes are the world's nodes base_c .. base_c +
** count_c - 2 (node 0, the driver, is shared), its files live under the run
** folder's NAME/ (NAME/broker-1/orders-0/...), and each mirror's node comes
** after every cluster's. Each cluster's model (core/cluster.c) sees its own
** spec: its topics (then the mirrors' internal topics), its producers and
** consumers, with indexes local to it; the observers below translate them to
** the scenario's indexes, so that the checker, the recorder and the outputs
** work on one list of topics and clients as in a one-cluster run. A topic
** name is unique across clusters, so a row's topic names its cluster; a
** broker id is the cluster's own (1..brokers), and timeline lines of a
** cluster start with its name.
**
** Faults name whole clusters (scenario.c cluster_fault_rules): a crash
** stops every broker and controller node of cluster(NAME) (its clients keep
** running and see the errors); a partition cuts every link between the
** nodes of its two sides, a mirror's node counted with its target (MM2 runs
** next to the cluster it writes to: KIP-382 "consume from remote, produce to
** local"). A cluster crashed without restart.after stays down through the
** final phase: the lost data center a mirror exists for. The final phase
** heals the links, drains, and waits for every live cluster to converge and
** every mirror whose clusters are up to catch up.
**
** Not yet with several clusters: triggers, broker-level faults, --explain's
** log pictures and the causes of lost records (sim/steps.h pictures one
** cluster), and replica reads of internal topics.
*/

struct run_cluster {
    struct run *run;
    int32_t index;
    const char *name;            /* borrowed from the scenario */
    ks_world *world;             /* the view */
    struct ks_scenario view;     /* shallow: this cluster's settings, topics, clients (local) */
    struct ks_cluster_spec spec; /* the same for core/ */
    struct ks_cluster *cluster;
    struct ks_cluster_observer observer;
    struct ks_availability *availability;
    struct ks_topic_config *topics; /* owned: the user topics, then internal ones */
    int32_t topic_count;            /* user topics */
    int32_t all_topic_count;        /* with the mirrors' internal topics */
    int32_t *topic_global;          /* owned: [local user topic] -> scenario topic */
    struct ks_producer_config *producers; /* owned, topic_index local */
    int32_t producer_count;
    int32_t *producer_global;
    struct ks_consumer_config *consumers; /* owned, topic_index local */
    int32_t consumer_count;
    int32_t *consumer_global;
    uint32_t node_count; /* the view's, with node 0 */
    bool down;           /* crashed by a fault and not restarted */
    int32_t crash_event; /* down: the index in run->events of its crash's line */
};

struct run_mirror {
    const struct ks_mirror_spec *spec; /* borrowed */
    struct ks_mirror_config config;
    struct ks_mirror_observer observer;
    struct ks_mirror *mirror;
    ks_node_id node; /* the world's */
    const char **group_ids; /* owned array, borrowed strings */
    char *remote_name;      /* owned */
    int64_t *lag_hw;        /* owned, [partition_count]: mirror_lag_now's source HWs */
    int64_t *lag_next;      /* owned, [partition_count]: and what was mirrored */
    int64_t lag_at_end;     /* mirror_lag at `duration` */
    int64_t lag_max;        /* mirror_lag_max: over the samples */
};

/* A cut a multi-cluster partition fault made, until healed. */
struct run_cut {
    int32_t fault_index;
    ks_cut_id cut;
};

struct run_fault_fire {
    struct run *run;
    int32_t fault_index;
};

/* A group that failed over, and when (failover_duplicates). */
struct run_failover {
    int32_t group;
    ks_time_ns at_ns;
};

static bool multi(const struct run *run)
{
    return run->cluster_count > 0;
}

/* The model that holds scenario topic t, and t's index in it. */
static struct ks_cluster *topic_model(const struct run *run, int32_t t, int32_t *local)
{
    if (!multi(run)) {
        *local = t;
        return run->cluster;
    }
    *local = run->topic_local[t];
    return run->clusters[run->scenario->topic_cluster[t]].cluster;
}

static int64_t producer_sent_count(const struct run *run, int32_t p)
{
    if (!multi(run)) {
        return ks_cluster_producer_sent_count(run->cluster, p);
    }
    const struct run_cluster *rc = &run->clusters[run->scenario->producer_cluster[p]];
    return ks_cluster_producer_sent_count(rc->cluster, run->producer_local[p]);
}


/* ---- small helpers ------------------------------------------------------------ */

static int32_t tp_slot(const struct run *run, int32_t topic_index, int32_t partition)
{
    if (topic_index < 0 || topic_index >= run->user_topic_count || partition < 0 ||
        partition >= run->scenario->topics[topic_index].partition_count) {
        return -1;
    }
    return run->tp_base[topic_index] + partition;
}

static const char *topic_name(const struct run *run, int32_t topic_index)
{
    if (topic_index < 0) {
        return NULL;
    }
    if (multi(run)) {
        return (size_t)topic_index < run->scenario->topic_count
                   ? run->scenario->topics[topic_index].name
                   : NULL;
    }
    return ks_cluster_topic_name(run->cluster, topic_index);
}

/* Appends an event; facts may be NULL (none beyond the columns given). */
static void add_event_facts(struct run *run, ks_time_ns at_ns, const char *kind, int32_t broker,
                            int32_t topic_index, int32_t partition, const char *detail,
                            const char *explain, bool timeline,
                            const struct ks_recorder_event_facts *facts)
{
    struct run_event event = {
        .at_ns = at_ns,
        .kind = kind,
        .broker = broker,
        .topic_index = topic_index,
        .partition = partition,
        .detail = g_strdup(detail != NULL ? detail : ""),
        .explain = g_strdup(explain),
        .timeline = timeline,
        .fault_index = -1,
    };
    if (facts != NULL) {
        event.facts = *facts;
    } else {
        ks_recorder_event_facts_init(&event.facts);
    }
    event.facts.explain = event.explain;
    event.facts.timeline = timeline ? 1 : 0;
    g_array_append_val(run->events, event);
}

static void add_event(struct run *run, ks_time_ns at_ns, const char *kind, int32_t broker,
                      int32_t topic_index, int32_t partition, const char *detail,
                      const char *explain, bool timeline)
{
    add_event_facts(run, at_ns, kind, broker, topic_index, partition, detail, explain, timeline,
                    NULL);
}

static void format_isr(const int32_t *isr, int32_t count, char *buffer, size_t buffer_bytes)
{
    int32_t sorted[KS_REPLICATION_FACTOR_MAX];
    memcpy(sorted, isr, sizeof(int32_t) * (size_t)count);
    for (int32_t i = 1; i < count; i++) { /* insertion sort: at most 16 */
        for (int32_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
            int32_t t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    }
    buffer[0] = '\0';
    size_t used = 0;
    for (int32_t i = 0; i < count && used < buffer_bytes; i++) {
        used += (size_t)g_snprintf(buffer + used, buffer_bytes - used, "%s%d", i > 0 ? "," : "",
                                   sorted[i]);
    }
}

/* "1,2,3" in run->strings (sorted for an ISR, as partition_state stores
 * it; in the given order for an assignment), or NULL for an empty list. */
static const char *list_text(struct run *run, const int32_t *ids, int32_t count, bool sorted)
{
    if (count <= 0) {
        return NULL;
    }
    char text[KS_REPLICATION_FACTOR_MAX * 12 + 1];
    if (sorted) {
        format_isr(ids, count, text, sizeof text);
    } else {
        size_t used = 0;
        text[0] = '\0';
        for (int32_t i = 0; i < count && used < sizeof text; i++) {
            used += (size_t)g_snprintf(text + used, sizeof text - used, "%s%d", i > 0 ? "," : "",
                                       ids[i]);
        }
    }
    return g_string_chunk_insert_const(run->strings, text);
}

/* The events table's typed columns of a model event (docs/database.md). */
static struct ks_recorder_event_facts event_facts(struct run *run,
                                                  const struct ks_cluster_event *event)
{
    struct ks_recorder_event_facts f;
    ks_recorder_event_facts_init(&f);
    const struct ks_scenario *s = run->scenario;
    if (event->reason != KS_REASON_NONE) {
        f.reason = ks_event_reason_name(event->reason);
    }
    f.leader_old = event->leader_old;
    f.leader = event->leader_new;
    f.leader_epoch_old = event->leader_epoch_old;
    f.leader_epoch = event->leader_epoch_new;
    f.replicas = list_text(run, event->replicas, event->replica_count, false);
    f.isr_old = list_text(run, event->isr_old, event->isr_old_count, true);
    f.isr = list_text(run, event->isr_new, event->isr_new_count, true);
    if (event->elr_old_count > 0 || event->elr_new_count > 0 || event->last_known_leader >= 0) {
        /* KIP-966 facts (only with eligible.leader.replicas.enable): "" is an
         * empty ELR, NULL no ELR facts. */
        const char *elr_old = list_text(run, event->elr_old, event->elr_old_count, true);
        const char *elr = list_text(run, event->elr_new, event->elr_new_count, true);
        f.elr_old = elr_old != NULL ? elr_old : "";
        f.elr = elr != NULL ? elr : "";
        f.last_known_leader = event->last_known_leader;
    }
    f.offset = event->offset;
    f.offset_from = event->offset_from;
    f.offset_to = event->offset_to;
    f.leo_old = event->leo_old;
    f.leo = event->leo_new;
    f.hw_old = event->hw_old;
    f.hw = event->hw_new;
    f.log_start_offset = event->log_start_offset;
    if (event->record_count > 0) {
        f.record_count = event->record_count;
    }
    if (event->producer_index >= 0 && (size_t)event->producer_index < s->producer_count) {
        f.producer = s->producers[event->producer_index].name;
    }
    if (event->consumer_index >= 0 && (size_t)event->consumer_index < s->consumer_count) {
        f.consumer = s->consumers[event->consumer_index].name;
    }
    if (event->group_id != NULL) {
        f.group_id = g_string_chunk_insert_const(run->strings, event->group_id);
    }
    f.generation = event->generation;
    if (event->error_code != KS_ERR_NONE) {
        f.error = ks_error_name(event->error_code);
    }
    return f;
}

/* Model events after which every replica's log is pictured (sim/steps.h):
 * the ones that change leadership, the ISR or a log. */
static bool event_is_step(enum ks_cluster_event_kind kind)
{
    switch (kind) {
    case KS_EV_TOPIC_CREATED:
    case KS_EV_LEADER_ELECTED:
    case KS_EV_UNCLEAN_ELECTION:
    case KS_EV_NO_LEADER:
    case KS_EV_ISR_SHRINK:
    case KS_EV_ISR_EXPAND:
    case KS_EV_TRUNCATION:
    case KS_EV_RECOVERY:
    case KS_EV_RETENTION:
    case KS_EV_COMPACTION: return true;
    case KS_EV_ELR_CHANGE:
    case KS_EV_BROKER_FENCED:
    case KS_EV_BROKER_UNFENCED:
    case KS_EV_BROKER_STARTED:
    case KS_EV_BROKER_STOPPED:
    case KS_EV_PRODUCE_REFUSED:
    case KS_EV_PRODUCER_ERROR:
    case KS_EV_REBALANCE:
    case KS_EV_OFFSET_COMMIT:
    case KS_EV_OFFSET_RESET:
    case KS_EV_INFO:
    case KS_EV_ZK_SESSION_EXPIRED:
    case KS_EV_CONTROLLER_ELECTED:
    case KS_EV_CONTROLLER_RESIGNED:
    case KS_EV_STALE_CONTROLLER:
    case KS_EV_TXN_END:
    case KS_EV_TXN_STATE:
    case KS_EV_KIND_COUNT: break;
    }
    return false;
}

/* Pictures the user partitions the latest event concerns: a model event's
 * own partition; for a fault's line (by_broker) every partition with a
 * replica on the broker it names (a crash of leader(orders-0) stops every
 * replica of that broker), else its partition, else every partition. */
static void capture_step(struct run *run, bool by_broker)
{
    if (run->cluster == NULL || run->steps == NULL) {
        return;
    }
    guint index = run->events->len - 1;
    const struct run_event *e = &g_array_index(run->events, struct run_event, index);
    if (e->topic_index >= 0 && !(by_broker && e->broker >= 0)) {
        if (tp_slot(run, e->topic_index, e->partition) >= 0) {
            ks_steps_capture(run->steps, run->cluster, (int32_t)index, e->at_ns, e->topic_index,
                             e->partition);
        }
        return;
    }
    for (int32_t t = 0; t < run->user_topic_count; t++) {
        for (int32_t p = 0; p < run->scenario->topics[t].partition_count; p++) {
            int32_t replicas[KS_REPLICATION_FACTOR_MAX];
            int32_t count =
                ks_cluster_replicas(run->cluster, t, p, replicas, KS_REPLICATION_FACTOR_MAX);
            bool hosted = e->broker < 0;
            for (int32_t r = 0; r < count && !hosted; r++) {
                hosted = replicas[r] == e->broker;
            }
            if (hosted) {
                ks_steps_capture(run->steps, run->cluster, (int32_t)index, e->at_ns, t, p);
            }
        }
    }
}

/* ---- observer --------------------------------------------------------------------- */

static bool event_changes_availability(enum ks_cluster_event_kind kind)
{
    switch (kind) {
    case KS_EV_TOPIC_CREATED:
    case KS_EV_LEADER_ELECTED:
    case KS_EV_UNCLEAN_ELECTION:
    case KS_EV_NO_LEADER:
    case KS_EV_ISR_SHRINK:
    case KS_EV_ISR_EXPAND:
    case KS_EV_BROKER_FENCED:
    case KS_EV_BROKER_UNFENCED:
    case KS_EV_BROKER_STARTED:
    case KS_EV_ZK_SESSION_EXPIRED:
    case KS_EV_CONTROLLER_ELECTED:
    case KS_EV_BROKER_STOPPED: return true;
    case KS_EV_CONTROLLER_RESIGNED:
    case KS_EV_STALE_CONTROLLER:
    case KS_EV_TRUNCATION:
    case KS_EV_RECOVERY:
    case KS_EV_PRODUCE_REFUSED:
    case KS_EV_PRODUCER_ERROR:
    case KS_EV_REBALANCE:
    case KS_EV_OFFSET_COMMIT:
    case KS_EV_OFFSET_RESET:
    case KS_EV_RETENTION:
    case KS_EV_COMPACTION:
    case KS_EV_INFO:
    case KS_EV_ELR_CHANGE:
    case KS_EV_TXN_END:
    case KS_EV_TXN_STATE:
    case KS_EV_KIND_COUNT: break;
    }
    return false;
}

/* __consumer_offsets (50 partitions by default) would flood the timeline
 * with one line per partition at every broker change; its events show only
 * when it is small (a scenario that studies it sets
 * offsets.topic.num.partitions low) or when they lose data. */
static bool internal_event_on_timeline(const struct run *run, const struct ks_cluster_event *event)
{
    if (event->kind == KS_EV_UNCLEAN_ELECTION || event->kind == KS_EV_TRUNCATION) {
        return true;
    }
    return ks_cluster_partition_count(run->cluster, event->topic_index) <= 3;
}

/* Which events the printed timeline shows. Every event goes to the database;
 * the timeline leaves out offset commits and the transaction coordinator's
 * routine state changes (a load, a fence and markers finished by a new
 * coordinator show), and most events of the
 * internal __consumer_offsets partitions, and shows refused writes and producer
 * errors at most once a second per partition (with a count of the rest). */
static bool event_on_timeline(struct run *run, const struct ks_cluster_event *event)
{
    if (event->kind == KS_EV_OFFSET_COMMIT) {
        return false;
    }
    if (event->kind == KS_EV_TXN_STATE && event->reason != KS_REASON_TXN_LOADED &&
        !event->resumed && event->error_code == 0) {
        return false; /* a routine Prepare* or Complete*: the producer's txn_end says it */
    }
    if (event->topic_index >= run->user_topic_count && !internal_event_on_timeline(run, event)) {
        return false;
    }
    if (event->kind != KS_EV_PRODUCE_REFUSED && event->kind != KS_EV_PRODUCER_ERROR) {
        return true;
    }
    int32_t slot = tp_slot(run, event->topic_index, event->partition);
    size_t index =
        (size_t)(slot >= 0 ? slot + 1 : 0) * 2 + (event->kind == KS_EV_PRODUCE_REFUSED ? 0 : 1);
    struct quiet_slot *quiet = &run->quiet[index];
    if (quiet->used && event->at_ns < quiet->shown_ns + REFUSED_QUIET_NS) {
        quiet->suppressed++;
        return false;
    }
    quiet->used = true;
    quiet->shown_ns = event->at_ns;
    return true;
}

/* --explain draws the logs after a step that changed one (sim/narrate.c). */
static void picture_step(struct run *run, const struct ks_cluster_event *event)
{
    guint index = run->events->len - 1;
    const struct ks_step *step =
        ks_steps_find(run->steps, (int32_t)index, event->topic_index, event->partition);
    if (step == NULL) {
        return;
    }
    g_autoptr(GString) picture = g_string_new(NULL);
    ks_narrate_log_picture(&run->spec, run->steps, step, event->broker, event->offset_from,
                           event->offset_to, "            ", picture);
    g_array_index(run->events, struct run_event, index).picture = g_strdup(picture->str);
}

/* A refused write or producer error shown on the timeline says how many
 * like it were left out since the last one shown (event_on_timeline). */
static void note_suppressed(struct run *run, const struct ks_cluster_event *event,
                            GString *detail)
{
    if (event->kind != KS_EV_PRODUCE_REFUSED && event->kind != KS_EV_PRODUCER_ERROR) {
        return;
    }
    int32_t slot = tp_slot(run, event->topic_index, event->partition);
    size_t index =
        (size_t)(slot >= 0 ? slot + 1 : 0) * 2 + (event->kind == KS_EV_PRODUCE_REFUSED ? 0 : 1);
    if (run->quiet[index].suppressed > 0) {
        g_string_append_printf(detail, " (and %" PRId64 " more like it before)",
                               run->quiet[index].suppressed);
        run->quiet[index].suppressed = 0;
    }
}

static void run_on_event(void *context, const struct ks_cluster_event *event)
{
    struct run *run = context;
    bool user = event->topic_index >= 0 && event->topic_index < run->user_topic_count;
    if (user) {
        /* Counted over the whole run, the final phase included (a broker that
         * restarts there and rejoins the ISR is an ISR change too). */
        run->leader_elections +=
            event->kind == KS_EV_LEADER_ELECTED || event->kind == KS_EV_UNCLEAN_ELECTION;
        run->unclean_elections += event->kind == KS_EV_UNCLEAN_ELECTION;
        run->isr_shrinks += event->kind == KS_EV_ISR_SHRINK;
        run->isr_expands += event->kind == KS_EV_ISR_EXPAND;
    }
    if (event_changes_availability(event->kind) && run->availability != NULL) {
        ks_availability_mark_dirty(run->availability);
    }
    if (run->faults != NULL) {
        ks_faults_on_cluster_event(run->faults, event);
    }
    if (event->kind == KS_EV_TXN_END) {
        struct ks_txn_outcome t = { event->producer_index, event->reason == KS_REASON_TXN_COMMITTED,
                                    event->offset_from, event->offset_to };
        g_array_append_val(run->txns, t);
    }
    int32_t words[4] = { (int32_t)event->kind, event->broker, event->topic_index,
                         event->partition };
    ks_world_trace_mix(run->world, 0xD200u + (uint32_t)event->kind, KS_NODE_DRIVER, words,
                       sizeof words);
    /* core/ reports facts; the words are written here (sim/narrate.c). */
    g_autoptr(GString) detail = g_string_new(NULL);
    g_autoptr(GString) explain = g_string_new(NULL);
    ks_narrate_event(&run->spec, event, detail, explain);
    bool timeline = event_on_timeline(run, event);
    if (timeline) {
        note_suppressed(run, event, detail);
    }
    struct ks_recorder_event_facts facts = event_facts(run, event);
    add_event_facts(run, event->at_ns, ks_cluster_event_kind_name(event->kind), event->broker,
                    event->topic_index, event->partition, detail->str,
                    explain->len > 0 ? explain->str : NULL, timeline, &facts);
    if (user && event_is_step(event->kind)) {
        capture_step(run, false);
        if (event->kind == KS_EV_TRUNCATION || event->kind == KS_EV_RECOVERY ||
            event->kind == KS_EV_RETENTION) {
            picture_step(run, event);
        }
    }
}

static void run_on_record(void *context, const struct ks_record_outcome *outcome)
{
    struct run *run = context;
    struct ks_record_outcome copy = *outcome;
    if (copy.key != NULL) {
        copy.key = g_string_chunk_insert_const(run->strings, copy.key);
    }
    g_array_append_val(run->outcomes, copy);
    int64_t words[4] = { outcome->producer_index, outcome->seq, (int64_t)outcome->outcome,
                         outcome->offset };
    ks_world_trace_mix(run->world, 0xD300u, KS_NODE_DRIVER, words, sizeof words);
}

static void run_on_consumed(void *context, const struct ks_consumed_record *consumed)
{
    struct run *run = context;
    g_array_append_val(run->consumed, *consumed);
    if (consumed->consumer_index >= 0 &&
        consumed->consumer_index < (int32_t)run->scenario->consumer_count) {
        ks_group_tracker_processed(&run->groups, run->consumer_group[consumed->consumer_index],
                                   consumed->topic_index, consumed->partition, consumed->offset);
    }
}

/* A consumer took up a position. An offset reset is reported right after
 * its offset_reset event, which explains a skip it causes. */
static void run_on_position(void *context, const struct ks_consumer_position *position)
{
    struct run *run = context;
    if (position->consumer_index < 0 ||
        position->consumer_index >= (int32_t)run->scenario->consumer_count) {
        return;
    }
    int32_t event = -1;
    if (position->kind == KS_POSITION_RESET || position->kind == KS_POSITION_REWIND) {
        guint last = run->events->len;
        const struct run_event *e =
            last > 0 ? &g_array_index(run->events, struct run_event, last - 1) : NULL;
        if (e != NULL && strcmp(e->kind, "offset_reset") == 0 &&
            e->partition == position->partition && e->at_ns == position->at_ns) {
            event = (int32_t)last - 1;
        }
    }
    ks_group_tracker_position(&run->groups, run->consumer_group[position->consumer_index],
                              position->topic_index, position->partition, position->offset,
                              position->kind, position->at_ns, event);
}

static void run_on_fault(void *context, const struct ks_fault_report *report)
{
    struct run *run = context;
    if (run->availability != NULL) {
        ks_availability_mark_dirty(run->availability);
    }
    struct ks_recorder_event_facts facts;
    ks_recorder_event_facts_init(&facts);
    if (report->fault_index >= 0 && (size_t)report->fault_index < run->scenario->fault_count) {
        facts.fault = run->scenario->faults[report->fault_index].name;
    }
    add_event_facts(run, report->at_ns, report->kind, report->broker, report->topic_index,
                    report->partition, report->detail, report->explain, true, &facts);
    g_array_index(run->events, struct run_event, run->events->len - 1).fault_index =
        report->fault_index;
    /* A fault's report comes before it takes effect, a restart's before the
     * node starts: the picture shows the logs just before. */
    if (strcmp(report->kind, "fault") == 0 || strcmp(report->kind, "heal") == 0 ||
        strcmp(report->kind, "restart") == 0 || strcmp(report->kind, "resume") == 0 ||
        strcmp(report->kind, "final") == 0) {
        capture_step(run, true);
    }
}

/* ---- anomalies in the text output ------------------------------------------------------ */

#define ANOMALY_LINES_PER_KIND 5

/* Lists up to ANOMALY_LINES_PER_KIND rows of each kind, in the order kinds
 * first appear (the anomalies table holds every row). */
static void print_anomalies(const struct run *run, FILE *out)
{
    const GArray *all = run->check.anomalies;
    bool seen[KS_ANOMALY_KIND_COUNT] = { false };
    for (guint i = 0; i < all->len; i++) {
        enum ks_anomaly_kind kind = g_array_index(all, struct ks_anomaly, i).kind;
        if (seen[kind]) {
            continue;
        }
        seen[kind] = true;
        int64_t lines = 0;
        int64_t hidden_lines = 0;
        int64_t hidden_records = 0;
        for (guint j = i; j < all->len; j++) {
            const struct ks_anomaly *a = &g_array_index(all, struct ks_anomaly, j);
            if (a->kind != kind) {
                continue;
            }
            if (lines >= ANOMALY_LINES_PER_KIND) {
                hidden_lines++;
                hidden_records += a->record_count;
                continue;
            }
            if (a->topic_index >= 0) {
                fprintf(out, "  %-10s %s-%d: %s\n", a->kind_name, topic_name(run, a->topic_index),
                        a->partition, a->detail);
            } else {
                fprintf(out, "  %-10s %s\n", a->kind_name, a->detail);
            }
            lines++;
        }
        if (hidden_lines > 0) {
            fprintf(out,
                    "  ... and %" PRId64 " more row%s of kind %s (%" PRId64
                    " record%s; table anomalies)\n",
                    hidden_lines, hidden_lines == 1 ? "" : "s", ks_anomaly_kind_name(kind),
                    hidden_records, hidden_records == 1 ? "" : "s");
        }
    }
}

/* ---- sampler, after-event hook, progress ------------------------------------------------ */

static void sample_mirrors(struct run *run);
static uint64_t multi_unavailable_ns(const struct run *run);
static void multi_availability_update(struct run *run, ks_time_ns now_ns);

static void sample_partitions(ks_world *world, void *context)
{
    struct run *run = context;
    ks_time_ns now = ks_world_now_ns(world);
    for (int32_t global = 0; global < run->user_topic_count; global++) {
        int32_t t = global;
        struct ks_cluster *cluster = topic_model(run, global, &t);
        for (int32_t p = 0; p < run->scenario->topics[global].partition_count; p++) {
            int32_t replicas[KS_REPLICATION_FACTOR_MAX];
            int32_t isr[KS_REPLICATION_FACTOR_MAX];
            int32_t replica_count =
                ks_cluster_replicas(cluster, t, p, replicas, KS_REPLICATION_FACTOR_MAX);
            int32_t isr_count = ks_cluster_isr(cluster, t, p, isr, KS_REPLICATION_FACTOR_MAX);
            char isr_text[128];
            format_isr(isr, isr_count, isr_text, sizeof isr_text);
            const char *isr_stored = g_string_chunk_insert_const(run->strings, isr_text);
            int32_t elr[KS_REPLICATION_FACTOR_MAX];
            int32_t elr_count = ks_cluster_elr(cluster, t, p, elr, KS_REPLICATION_FACTOR_MAX);
            format_isr(elr, elr_count, isr_text, sizeof isr_text);
            const char *elr_stored = g_string_chunk_insert_const(run->strings, isr_text);
            elr_count =
                ks_cluster_last_known_elr(cluster, t, p, elr, KS_REPLICATION_FACTOR_MAX);
            format_isr(elr, elr_count, isr_text, sizeof isr_text);
            const char *last_known_stored = g_string_chunk_insert_const(run->strings, isr_text);
            int32_t leader = ks_cluster_leader(cluster, t, p);
            for (int32_t r = 0; r < replica_count; r++) {
                struct ks_replica_state state;
                struct run_sample sample = {
                    .t_ns = now,
                    .topic_index = global,
                    .partition = p,
                    .broker = replicas[r],
                    .replica_index = r,
                    .leader = leader,
                    .isr = isr_stored,
                    .elr = elr_stored,
                    .last_known_elr = last_known_stored,
                };
                sample.online = ks_cluster_replica_state(cluster, replicas[r], t, p, &state);
                if (sample.online) {
                    sample.role = state.role;
                    sample.leo = state.leo;
                    sample.hw = state.hw;
                    sample.leader_epoch = state.leader_epoch;
                }
                g_array_append_val(run->samples, sample);
            }
        }
    }
    if (multi(run)) {
        sample_mirrors(run);
    }
    ks_world_schedule(world, KS_NODE_DRIVER, run->sample_interval_ns, KS_KIND_DRIVER_SAMPLE,
                      sample_partitions, run);
}

static void show_progress(struct run *run)
{
    int64_t now_us = g_get_monotonic_time();
    double elapsed_s = (double)(now_us - run->start_us) / 1e6;
    if (elapsed_s < 2.0) {
        return;
    }
    double done_s = (double)ks_world_now_ns(run->world) / 1e9;
    double total_s = (double)(run->scenario->duration_ns +
                              (run->scenario->final_heal ? run->scenario->final_drain_ns : 0)) /
                     1e9;
    double rate = done_s / elapsed_s;
    double left_s = rate > 0 ? (total_s - done_s) / rate : 0;
    fprintf(stderr,
            "\rksim: %s seed %" PRIu64 ": %.1f/%.0f s simulated, %.1f sim-s/s, ~%.0f s left ",
            run->scenario->name, run->seed, done_s, total_s, rate, left_s > 0 ? left_s : 0);
    fflush(stderr);
    run->progress_shown = true;
}

static void after_event(ks_world *world, void *context)
{
    struct run *run = context;
    /* Triggers first: a fault they fire now changes availability at this
     * same instant. */
    if (run->faults != NULL) {
        ks_faults_after_event(run->faults);
    }
    if (!run->final_phase && multi(run)) {
        multi_availability_update(run, ks_world_now_ns(world));
    } else if (!run->final_phase) {
        ks_availability_update(run->availability, ks_world_now_ns(world));
    }
    if (run->options->progress) {
        int64_t events = (int64_t)ks_world_event_count(world);
        if (events - run->progress_checked_events >= 20000) {
            run->progress_checked_events = events;
            show_progress(run);
        }
    }
}

/* ---- phase 1: the run folder, the trace file ------------------------------------------- */

/* What phase 1 made, so that a failure can undo exactly that and nothing a
 * user made: a file or folder that existed before is never removed. */
struct prepared {
    char *run_dir;    /* owned */
    int lock_fd;      /* the marker file, flock()ed for the whole run; -1 if none */
    char *made_dir;   /* owned: the outermost folder this run created, or NULL */
    bool marker_made; /* the marker was created in a folder that existed */
    FILE *trace;
    bool trace_made; /* the trace file did not exist before */
};

static bool fail_input(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);
static bool fail_input(GError **error, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    char *message = g_strdup_vprintf(format, args);
    va_end(args);
    g_set_error_literal(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, message);
    g_free(message);
    return false;
}

/* The nearest folder of path (itself included) that exists; NULL if an
 * existing component is not a folder. Owned: g_free. */
static char *existing_ancestor(const char *path)
{
    char *at = g_strdup(path);
    while (!g_file_test(at, G_FILE_TEST_EXISTS)) {
        char *parent = g_path_get_dirname(at);
        bool top = strcmp(parent, at) == 0;
        g_free(at);
        at = parent;
        if (top) {
            break;
        }
    }
    if (!g_file_test(at, G_FILE_TEST_IS_DIR)) {
        g_clear_pointer(&at, g_free);
    }
    return at;
}

/* Checks, writing nothing, that path can be this run's folder: absent under
 * a writable folder, an empty folder, or a folder ksim made (it holds the
 * marker file), so `--dir .` never deletes a user's files. */
static bool check_run_dir(const char *path, GError **error)
{
    if (path[0] == '\0') {
        return fail_input(error, "--dir '': an empty folder name");
    }
    if (g_file_test(path, G_FILE_TEST_EXISTS)) {
        if (!g_file_test(path, G_FILE_TEST_IS_DIR)) {
            return fail_input(error, "%s: exists and is not a folder", path);
        }
        char *marker = g_build_filename(path, RUN_MARKER, NULL);
        bool ours = g_file_test(marker, G_FILE_TEST_IS_REGULAR);
        g_free(marker);
        GDir *dir = ours ? NULL : g_dir_open(path, 0, NULL);
        bool empty = dir != NULL && g_dir_read_name(dir) == NULL;
        if (dir != NULL) {
            g_dir_close(dir);
        }
        if (!ours && !empty) {
            g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                        "%s: exists and is not a ksim run folder; not replacing it", path);
            return false;
        }
        if (access(path, W_OK | X_OK) != 0) {
            return fail_input(error, "%s: the run folder is not writable: %s", path,
                              g_strerror(errno));
        }
        return true;
    }
    g_autofree char *ancestor = existing_ancestor(path);
    if (ancestor == NULL || access(ancestor, W_OK | X_OK) != 0) {
        return fail_input(error, "%s: cannot create the run folder: %s", path,
                          ancestor == NULL ? "a part of the path is not a folder"
                                           : g_strerror(errno));
    }
    return true;
}

/* True if path names the database file db_path (which may not exist yet). */
static bool is_database(const char *path, const char *db_path)
{
    if (db_path == NULL) {
        return false;
    }
    GStatBuf info;
    GStatBuf db_info;
    if (g_stat(path, &info) == 0 && g_stat(db_path, &db_info) == 0) {
        return info.st_dev == db_info.st_dev && info.st_ino == db_info.st_ino;
    }
    g_autofree char *a = g_canonicalize_filename(path, NULL);
    g_autofree char *b = g_canonicalize_filename(db_path, NULL);
    return strcmp(a, b) == 0;
}

/* Checks, writing nothing, that --trace FILE can be written: not a folder,
 * not the database, not inside the run folder (phase 1 empties it). */
static bool check_trace(const char *path, const char *db_path, const char *run_dir, GError **error)
{
    if (path[0] == '\0') {
        return fail_input(error, "--trace '': an empty file name");
    }
    GStatBuf info;
    if (is_database(path, db_path)) {
        return fail_input(error, "--trace %s: is the database", path);
    }
    if (g_stat(path, &info) == 0) {
        if (S_ISDIR(info.st_mode)) {
            return fail_input(error, "--trace %s: is a folder", path);
        }
        if (access(path, W_OK) != 0) {
            return fail_input(error, "--trace %s: cannot write: %s", path, g_strerror(errno));
        }
    } else {
        g_autofree char *folder = g_path_get_dirname(path);
        if (!g_file_test(folder, G_FILE_TEST_IS_DIR) || access(folder, W_OK | X_OK) != 0) {
            return fail_input(error, "--trace %s: cannot create: %s", path,
                              g_file_test(folder, G_FILE_TEST_IS_DIR) ? g_strerror(errno)
                                                                      : "no such folder");
        }
    }
    g_autofree char *trace_abs = g_canonicalize_filename(path, NULL);
    g_autofree char *dir_abs = g_canonicalize_filename(run_dir, NULL);
    g_autofree char *dir_prefix = g_strconcat(dir_abs, G_DIR_SEPARATOR_S, NULL);
    if (g_str_has_prefix(trace_abs, dir_prefix)) {
        return fail_input(error, "--trace %s: is inside the run folder %s, which each run empties",
                          path, run_dir);
    }
    return true;
}

/* Per-record bytes on disk besides the value: the record's varints, key and
 * ksim's identity header (about 30 bytes); and a v2 batch header. */
#define RECORD_OVERHEAD_BYTES 30
#define BATCH_OVERHEAD_BYTES  KS_BATCH_HEADER_BYTES

/* How many bytes the brokers' logs would hold at the end of the run, low
 * (full batches) and high (one batch per record), from each producer's
 * records (count, or rate times the time it produces) times the topic's
 * replication factor, each topic capped by what its retention keeps
 * (retention.bytes per partition, or the share of the run retention.ms
 * covers, plus one segment per partition, since only rolled segments are
 * deleted). Index files and __consumer_offsets are left out (small). */
static void estimate_log_bytes(const struct ks_scenario *s, double *low, double *high)
{
    *low = 0;
    *high = 0;
    for (size_t t = 0; t < s->topic_count; t++) {
        const struct ks_topic_config *topic = &s->topics[t];
        double topic_low = 0;
        double topic_high = 0;
        double produce_s_max = 0;
        for (size_t p = 0; p < s->producer_count; p++) {
            const struct ks_producer_config *producer = &s->producers[p];
            if (producer->topic_index != (int32_t)t || producer->start_ns >= s->duration_ns) {
                continue;
            }
            double produce_s = (double)(s->duration_ns - producer->start_ns) / 1e9;
            double records = (double)producer->rate_per_s * produce_s;
            if (producer->count >= 0 && (double)producer->count < records) {
                records = (double)producer->count;
            }
            produce_s_max = MAX(produce_s_max, produce_s);
            topic_low += records * (double)(producer->value_bytes + RECORD_OVERHEAD_BYTES);
            topic_high += records * (double)(producer->value_bytes + RECORD_OVERHEAD_BYTES +
                                             BATCH_OVERHEAD_BYTES);
        }
        double segments = (double)topic->partition_count * (double)topic->log.segment_bytes;
        double cap = INFINITY;
        if (topic->log.cleanup_delete && topic->log.retention_bytes >= 0) {
            cap = (double)topic->partition_count * (double)topic->log.retention_bytes + segments;
        }
        if (topic->log.cleanup_delete && topic->log.retention_ns >= 0 && produce_s_max > 0) {
            double share = (double)topic->log.retention_ns / 1e9 / produce_s_max;
            cap = MIN(cap, topic_high * MIN(share, 1.0) + segments);
        }
        *low += MIN(topic_low, cap) * topic->replication_factor;
        *high += MIN(topic_high, cap) * topic->replication_factor;
    }
}

/* Refuses (exit 2) a run whose logs cannot fit in the free space of the run
 * folder's file system even at the low estimate, and warns when the high
 * one does not fit: better than filling the disk an hour into the run. */
static bool check_disk_space(const struct ks_scenario *s, const char *run_dir, GError **error)
{
    g_autofree char *ancestor = existing_ancestor(run_dir);
    struct statvfs info;
    if (ancestor == NULL || statvfs(ancestor, &info) != 0) {
        return true; /* check_run_dir has judged the folder; no figure to compare */
    }
    double free_bytes = (double)info.f_bavail * (double)info.f_frsize;
    double low = 0;
    double high = 0;
    estimate_log_bytes(s, &low, &high);
    g_autofree char *free_text = g_format_size_full((guint64)free_bytes, G_FORMAT_SIZE_IEC_UNITS);
    if (low > free_bytes) {
        g_autofree char *low_text =
            g_format_size_full(low > 1e18 ? (guint64)1e18 : (guint64)low, G_FORMAT_SIZE_IEC_UNITS);
        return fail_input(error,
                          "%s: the run would write at least %s%s of logs (records x (value.bytes "
                          "+ %d) x replication.factor), and its file system has %s free; "
                          "shorten scenario.duration, lower rate or count, or give --dir on a "
                          "larger disk",
                          run_dir, low > 1e18 ? "more than " : "", low_text, RECORD_OVERHEAD_BYTES,
                          free_text);
    }
    if (high > free_bytes) {
        g_autofree char *high_text = g_format_size_full((guint64)high, G_FORMAT_SIZE_IEC_UNITS);
        fprintf(stderr,
                "ksim: warning: %s: the run may write up to %s of logs, and its file "
                "system has %s free\n",
                run_dir, high_text, free_text);
    }
    return true;
}

/* Makes the run folder if needed and locks it: the marker file is flock()ed
 * for the whole run, so a second run of the same settings into the same
 * folder fails at once (exit 2) instead of mixing its logs with this one's.
 * The lock goes with the descriptor, also when ksim is killed. */
static bool lock_run_dir(struct prepared *prepared, GError **error)
{
    const char *path = prepared->run_dir;
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        char *outermost = g_strdup(path);
        for (;;) {
            char *parent = g_path_get_dirname(outermost);
            if (g_file_test(parent, G_FILE_TEST_EXISTS) || strcmp(parent, outermost) == 0) {
                g_free(parent);
                break;
            }
            g_free(outermost);
            outermost = parent;
        }
        if (g_mkdir_with_parents(path, 0755) != 0) {
            int saved = errno;
            g_free(outermost);
            return fail_input(error, "%s: cannot create the run folder: %s", path,
                              g_strerror(saved));
        }
        prepared->made_dir = outermost;
    }
    char *marker = g_build_filename(path, RUN_MARKER, NULL);
    prepared->marker_made = prepared->made_dir == NULL && !g_file_test(marker, G_FILE_TEST_EXISTS);
    prepared->lock_fd = open(marker, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    int saved = errno;
    g_free(marker);
    if (prepared->lock_fd < 0) {
        prepared->marker_made = false;
        return fail_input(error, "%s: cannot create the run folder's marker: %s", path,
                          g_strerror(saved));
    }
    if (flock(prepared->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        char holder[64] = "";
        ssize_t n = pread(prepared->lock_fd, holder, sizeof holder - 1, 0);
        holder[n > 0 ? n : 0] = '\0';
        const char *pid = strstr(holder, "pid ");
        return fail_input(error,
                          "%s: in use by another ksim run of the same scenario, settings and "
                          "seed%s%.*s%s; wait for it to end, or give another --dir",
                          path, pid != NULL ? " (" : "", pid != NULL ? (int)strcspn(pid, "\n") : 0,
                          pid != NULL ? pid : "", pid != NULL ? ")" : "");
    }
    char text[64];
    int length = g_snprintf(text, sizeof text, "pid %d\n", (int)getpid());
    if (ftruncate(prepared->lock_fd, 0) != 0 ||
        pwrite(prepared->lock_fd, text, (size_t)length, 0) != length) {
        return fail_input(error, "%s: cannot write the run folder's marker: %s", path,
                          g_strerror(errno));
    }
    return true;
}

/* Empties the (locked) run folder of an earlier run's files, all but the
 * marker, so the run starts from empty disks. */
static void clear_run_dir(const char *path)
{
    GDir *dir = g_dir_open(path, 0, NULL);
    const char *name;
    while (dir != NULL && (name = g_dir_read_name(dir)) != NULL) {
        if (strcmp(name, RUN_MARKER) != 0) {
            char *child = g_build_filename(path, name, NULL);
            ks_host_remove_tree(child);
            g_free(child);
        }
    }
    if (dir != NULL) {
        g_dir_close(dir);
    }
}

/* Opens --trace FILE, creating it when absent (and remembering so, because
 * only a file ksim created may be removed again). */
static bool open_trace(struct prepared *prepared, const char *path, const char *db_path,
                       GError **error)
{
    if (is_database(path, db_path)) { /* the same file by another name, made meanwhile */
        return fail_input(error, "--trace %s: is the database", path);
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    prepared->trace_made = fd >= 0;
    if (fd < 0 && errno == EEXIST) {
        fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    }
    prepared->trace = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (prepared->trace == NULL) {
        int saved = errno;
        if (fd >= 0) {
            close(fd);
        }
        if (prepared->trace_made) {
            g_unlink(path);
        }
        prepared->trace_made = false;
        return fail_input(error, "--trace %s: cannot write: %s", path, g_strerror(saved));
    }
    return true;
}

/* Closes the trace; false with *error when its writes failed (a full disk). */
static bool close_trace(struct prepared *prepared, const char *path, GError **error)
{
    if (prepared->trace == NULL) {
        return true;
    }
    bool ok = fflush(prepared->trace) == 0 && !ferror(prepared->trace);
    int saved = errno;
    ok = fclose(prepared->trace) == 0 && ok;
    prepared->trace = NULL;
    if (!ok && error != NULL && *error == NULL) {
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved),
                    "--trace %s: writing failed: %s", path, g_strerror(saved));
    }
    return ok;
}

/* Undoes phase 1 after bad input: removes what this run created, nothing
 * else, and unlocks. */
static void undo_prepared(struct prepared *prepared, const char *trace_path)
{
    if (prepared->trace_made) {
        g_unlink(trace_path);
    }
    if (prepared->made_dir != NULL) {
        ks_host_remove_tree(prepared->made_dir);
    } else if (prepared->marker_made) {
        char *marker = g_build_filename(prepared->run_dir, RUN_MARKER, NULL);
        g_unlink(marker);
        g_free(marker);
    }
}

static void release_prepared(struct prepared *prepared)
{
    if (prepared->lock_fd >= 0) {
        close(prepared->lock_fd); /* releases the flock */
    }
    g_free(prepared->made_dir);
    g_free(prepared->run_dir);
}

char *ks_run_dir_name(const struct ks_scenario *scenario, uint64_t seed)
{
    char *params = ks_scenario_params_json(scenario);
    char *digest = g_compute_checksum_for_string(G_CHECKSUM_SHA256, params, -1);
    char *name = g_strdup_printf("%s-s%" PRIu64 "-%.8s", scenario->name, seed, digest);
    g_free(digest);
    g_free(params);
    return name;
}

char *ks_run_default_dir(const struct ks_scenario *scenario, uint64_t seed)
{
    char *name = ks_run_dir_name(scenario, seed);
    char *path = g_build_filename("runs", name, NULL);
    g_free(name);
    return path;
}

/* ---- the final read --------------------------------------------------------------------------- */

/* Parses "<producer name>:<seq>" against the scenario's producers. */
static bool parse_identity(const struct ks_scenario *scenario, const uint8_t *value,
                           int32_t value_bytes, int32_t *producer_out, int64_t *seq_out)
{
    if (value == NULL || value_bytes <= 0 || value_bytes > 200) {
        return false;
    }
    char text[256];
    memcpy(text, value, (size_t)value_bytes);
    text[value_bytes] = '\0';
    char *colon = strrchr(text, ':');
    if (colon == NULL) {
        return false;
    }
    *colon = '\0';
    char *end = NULL;
    int64_t seq = g_ascii_strtoll(colon + 1, &end, 10);
    if (end == colon + 1 || *end != '\0' || seq < 0) {
        return false;
    }
    for (size_t i = 0; i < scenario->producer_count; i++) {
        if (strcmp(scenario->producers[i].name, text) == 0) {
            *producer_out = (int32_t)i;
            *seq_out = seq;
            return true;
        }
    }
    return false;
}

/* A topic some processor (a consumer with output.topic) writes to. */
static bool is_processor_output(const struct ks_scenario *scenario, int32_t topic_index)
{
    for (size_t i = 0; i < scenario->consumer_count; i++) {
        if (scenario->consumers[i].output_topic_index == topic_index) {
            return true;
        }
    }
    return false;
}

/* A processor's output key "key-<(P + 1) * 10^12 + S>" (core/consumer.c)
 * names input record S of producer index P; *producer_out gets P + 1, or
 * stays 0 for any other key. */
static void parse_source(const uint8_t *key, int32_t key_bytes, int32_t *producer_out,
                         int64_t *seq_out)
{
    static const char prefix[] = "key-";
    const int64_t unit = INT64_C(1000000000000);
    if (key == NULL || key_bytes <= (int32_t)strlen(prefix) || key_bytes > 40 ||
        memcmp(key, prefix, strlen(prefix)) != 0) {
        return;
    }
    char text[48];
    memcpy(text, key + strlen(prefix), (size_t)key_bytes - strlen(prefix));
    text[(size_t)key_bytes - strlen(prefix)] = '\0';
    char *end = NULL;
    int64_t number = g_ascii_strtoll(text, &end, 10);
    if (end == text || *end != '\0' || number < unit || number / unit > INT32_MAX) {
        return;
    }
    *producer_out = (int32_t)(number / unit);
    *seq_out = number % unit;
}

struct log_reader {
    GArray *records;      /* struct ks_read_record, or NULL */
    GArray *offsets;      /* int64_t, or NULL */
    GArray *fingerprints; /* uint64_t, or NULL */
    GArray *open;         /* struct open_txn_batch: records still KS_READ_TXN_OPEN, or NULL */
};

/* Records of a transactional batch of `records` whose marker is not read yet. */
struct open_txn_batch {
    int64_t producer_id;
    guint first; /* index in records */
    guint count;
};

/* A marker of producer_id, written at marker_ns, settles its open batches
 * (the final read's transaction status, struct ks_read_record.txn and
 * marker_ns). */
static void settle_txn(struct log_reader *reader, int64_t producer_id, bool commit,
                       ks_time_ns marker_ns)
{
    for (guint i = reader->open->len; i > 0; i--) {
        const struct open_txn_batch *b = &g_array_index(reader->open, struct open_txn_batch, i - 1);
        if (b->producer_id != producer_id) {
            continue;
        }
        for (guint k = 0; k < b->count; k++) {
            struct ks_read_record *r =
                &g_array_index(reader->records, struct ks_read_record, b->first + k);
            r->txn = commit ? KS_READ_TXN_COMMITTED : KS_READ_TXN_ABORTED;
            r->marker_ns = marker_ns;
        }
        g_array_remove_index(reader->open, i - 1);
    }
}

static void read_batch(const struct ks_scenario *scenario, const struct ks_batch_view *batch,
                       int32_t topic_index, int32_t partition, int64_t from, int64_t hw,
                       struct log_reader *reader)
{
    if (batch->attributes & KS_ATTR_CONTROL) {
        if (reader->open != NULL && batch->base_offset < hw) {
            /* The marker's timestamp is the leader's clock when it appended
             * it (ks_broker_append_marker), in ms since KS_EPOCH_BASE_MS. */
            int64_t since_ms = batch->max_timestamp - KS_EPOCH_BASE_MS;
            ks_time_ns marker_ns = since_ms > 0 ? (ks_time_ns)since_ms * KS_NS_PER_MS : 0;
            settle_txn(reader, batch->producer_id,
                       ks_batch_control_type(batch) == KS_CONTROL_COMMIT, marker_ns);
        }
        return;
    }
    bool transactional = (batch->attributes & KS_ATTR_TRANSACTIONAL) != 0;
    guint first = reader->records != NULL ? reader->records->len : 0;
    struct ks_record_iter iter;
    struct ks_record_view record;
    ks_record_iter_init(&iter, batch);
    while (ks_record_iter_next(&iter, &record, NULL)) {
        if (record.offset < from) {
            continue;
        }
        if (record.offset >= hw) {
            break;
        }
        struct ks_read_record r = {
            topic_index, partition, record.offset,
            -1,          0,         transactional ? KS_READ_TXN_OPEN : KS_READ_TXN_NONE,
            0,           0,         0
        };
        if (is_processor_output(scenario, topic_index)) {
            parse_source(record.key, record.key_bytes, &r.source_producer, &r.source_seq);
        }
        for (int32_t h = 0; h < record.header_count; h++) {
            const struct ks_header_view *header = &record.headers[h];
            if (header->key_bytes == (int32_t)strlen(KS_IDENTITY_HEADER) &&
                memcmp(header->key, KS_IDENTITY_HEADER, strlen(KS_IDENTITY_HEADER)) == 0) {
                parse_identity(scenario, header->value, header->value_bytes, &r.producer_index,
                               &r.seq);
            }
        }
        if (reader->records != NULL) {
            g_array_append_val(reader->records, r);
        }
        if (reader->offsets != NULL) {
            uint64_t fp =
                ks_checker_fingerprint(r.producer_index, r.seq, batch->crc, record.offset);
            g_array_append_val(reader->offsets, record.offset);
            g_array_append_val(reader->fingerprints, fp);
        }
    }
    ks_record_iter_deinit(&iter);
    if (transactional && reader->open != NULL && reader->records->len > first) {
        struct open_txn_batch b = { batch->producer_id, first, reader->records->len - first };
        g_array_append_val(reader->open, b);
    }
}

struct log_scan {
    const struct ks_scenario *scenario;
    int32_t topic_index;
    int32_t partition;
    int64_t from; /* the log start: a first batch may begin below it */
    int64_t hw;
    struct log_reader *reader;
};

static bool scan_batch(void *context, const struct ks_batch_view *batch)
{
    struct log_scan *scan = context;
    if (batch->base_offset >= scan->hw) {
        return false;
    }
    read_batch(scan->scenario, batch, scan->topic_index, scan->partition, scan->from, scan->hw,
               scan->reader);
    return true;
}

/* Reads a replica's log from its start up to (not including) hw. */
static void read_log(const struct ks_scenario *scenario, struct ks_log *log, int32_t topic_index,
                     int32_t partition, int64_t hw, struct log_reader *reader)
{
    int64_t from = ks_log_start_offset(log);
    struct log_scan scan = { scenario, topic_index, partition, from, hw, reader };
    ks_log_scan(log, from, ks_log_leo(log), scan_batch, &scan);
}

struct final_read {
    GArray *records;    /* struct ks_read_record of user topics, via leaders */
    GArray *mirror_records; /* the same of mirrors' remote topics (several clusters) */
    GArray *replicas;   /* struct ks_replica_read */
    GArray *partitions; /* struct ks_partition_final of user topics */
    GPtrArray *owned;   /* GArrays the replica reads point into */
};

/* Reads partition p of topic t of a model: from its leader up to its HW
 * when user (into records), and every replica (divergence). global is the
 * scenario's index of the topic (t itself in a one-cluster run). */
static void read_partition(struct run *run, struct ks_cluster *cluster, int32_t t, int32_t global,
                           int32_t p, bool user, GArray *records, struct final_read *out)
{
    int32_t leader = ks_cluster_leader(cluster, t, p);
    struct ks_replica_state state;
    struct ks_log *log = leader >= 0 ? ks_cluster_replica_log(cluster, leader, t, p) : NULL;
    if (user && log != NULL && ks_cluster_replica_state(cluster, leader, t, p, &state)) {
        GArray *open = g_array_new(FALSE, FALSE, sizeof(struct open_txn_batch));
        struct log_reader reader = { records, NULL, NULL, open };
        read_log(run->scenario, log, global, p, state.hw, &reader);
        g_array_free(open, TRUE);
        struct ks_partition_final part = {
            .topic_index = global,
            .partition = p,
            .log_start_offset = state.log_start_offset,
            .compacted = run->scenario->topics[global].log.cleanup_compact,
        };
        if (records == out->records) {
            g_array_append_val(out->partitions, part);
        }
    }
    int32_t replicas[KS_REPLICATION_FACTOR_MAX];
    int32_t count = ks_cluster_replicas(cluster, t, p, replicas, KS_REPLICATION_FACTOR_MAX);
    for (int32_t r = 0; r < count; r++) {
        struct ks_log *replica_log = ks_cluster_replica_log(cluster, replicas[r], t, p);
        if (replica_log == NULL || !ks_cluster_replica_state(cluster, replicas[r], t, p, &state)) {
            continue;
        }
        GArray *offsets = g_array_new(FALSE, FALSE, sizeof(int64_t));
        GArray *fingerprints = g_array_new(FALSE, FALSE, sizeof(uint64_t));
        struct log_reader reader = { NULL, offsets, fingerprints, NULL };
        read_log(run->scenario, replica_log, global, p, state.hw, &reader);
        struct ks_replica_read rr = {
            .topic_index = global,
            .partition = p,
            .broker = replicas[r],
            .hw = state.hw,
            .offsets = (const int64_t *)(void *)offsets->data,
            .fingerprints = (const uint64_t *)(void *)fingerprints->data,
            .count = offsets->len,
        };
        g_array_append_val(out->replicas, rr);
        g_ptr_array_add(out->owned, offsets);
        g_ptr_array_add(out->owned, fingerprints);
    }
}

static void do_final_read(struct run *run, struct final_read *out)
{
    out->records = g_array_new(FALSE, FALSE, sizeof(struct ks_read_record));
    out->mirror_records = g_array_new(FALSE, FALSE, sizeof(struct ks_read_record));
    out->replicas = g_array_new(FALSE, FALSE, sizeof(struct ks_replica_read));
    out->partitions = g_array_new(FALSE, FALSE, sizeof(struct ks_partition_final));
    out->owned = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    if (multi(run)) {
        /* user topics only; a remote topic's records are the mirrors' (a
         * copy of a record is no duplicate of it in acked_lost's sense),
         * except those a producer that failed over wrote there itself: they
         * are judged like any record, on the cluster they were written to */
        GArray *remote = g_array_new(FALSE, FALSE, sizeof(struct ks_read_record));
        for (int32_t global = 0; global < run->user_topic_count; global++) {
            int32_t t = global;
            struct ks_cluster *cluster = topic_model(run, global, &t);
            GArray *records = run->remote_topic[global] ? remote : out->records;
            for (int32_t p = 0; p < run->scenario->topics[global].partition_count; p++) {
                read_partition(run, cluster, t, global, p, true, records, out);
            }
            for (guint i = 0; i < remote->len; i++) {
                const struct ks_read_record *r = &g_array_index(remote, struct ks_read_record, i);
                bool own = r->producer_index >= 0 &&
                           run->scenario->producers[r->producer_index].topic_index == global;
                g_array_append_val(own ? out->records : out->mirror_records, *r);
            }
            g_array_set_size(remote, 0);
        }
        g_array_free(remote, TRUE);
        return;
    }
    int32_t topic_count = ks_cluster_topic_count(run->cluster);
    for (int32_t t = 0; t < topic_count; t++) {
        int32_t partitions = ks_cluster_partition_count(run->cluster, t);
        for (int32_t p = 0; p < partitions; p++) {
            read_partition(run, run->cluster, t, t, p, t < run->user_topic_count, out->records,
                           out);
        }
    }
}

static void final_read_clear(struct final_read *read)
{
    g_array_free(read->records, TRUE);
    g_array_free(read->mirror_records, TRUE);
    g_array_free(read->replicas, TRUE);
    g_array_free(read->partitions, TRUE);
    g_ptr_array_free(read->owned, TRUE);
}

/* ---- judging ------------------------------------------------------------------------------------- */

/* The cause index over the run's events; owned by the caller. Skips of a
 * group that resumed from a committed offset get the latest crash of one of
 * its consumers as their event. */
static struct ks_cause_index *index_causes(struct run *run)
{
    struct ks_cause_index *causes = ks_cause_index_new(run->scenario, run->steps);
    for (guint i = 0; i < run->events->len; i++) {
        const struct run_event *e = &g_array_index(run->events, struct run_event, i);
        struct ks_cause_event ce = {
            .event = (int32_t)i,
            .kind = e->kind,
            .at_ns = e->at_ns,
            .broker = e->broker,
            .topic_index = e->topic_index,
            .partition = e->partition,
            .fault_index = e->fault_index,
            .leader_new = e->facts.leader,
            .leader_epoch_new = e->facts.leader_epoch,
            .offset_from = e->facts.offset_from,
            .offset_to = e->facts.offset_to,
            .leo_new = e->facts.leo,
        };
        ks_cause_index_add(causes, &ce);
    }
    for (guint i = 0; i < run->groups.skips->len; i++) {
        struct ks_group_skip *skip = &g_array_index(run->groups.skips, struct ks_group_skip, i);
        if (skip->kind == KS_POSITION_ASSIGNED && skip->event < 0) {
            skip->event =
                ks_cause_group_crash_before(causes, run->consumer_group, skip->group, skip->at_ns);
            if (skip->event >= 0) {
                skip->event_ns =
                    g_array_index(run->events, struct run_event, (guint)skip->event).at_ns;
            }
        }
    }
    return causes;
}

/* Several clusters: the groups that read a mirror's remote topic, checked
 * against its final read (consumed_lost, consumed_unseen) in a second pass
 * of the checker that sees no producer outcomes, so that a copy of a record
 * is never a duplicate of it in acked_lost's sense. The group's extra
 * processings are the first pass's (consumed_duplicates: per group, across
 * topics, so a group that failed over counts what it processed twice). */
static void check_remote_topics(struct run *run, const struct ks_checker_input *first,
                                const struct final_read *read)
{
    GArray *partitions = g_array_new(FALSE, FALSE, sizeof(struct ks_partition_final));
    const struct ks_read_record *records =
        (const struct ks_read_record *)(void *)read->mirror_records->data;
    for (guint i = 0; i < read->mirror_records->len; i++) {
        if (i == 0 || records[i].topic_index != records[i - 1].topic_index ||
            records[i].partition != records[i - 1].partition) {
            struct ks_partition_final part = { .topic_index = records[i].topic_index,
                                               .partition = records[i].partition,
                                               .log_start_offset = 0 };
            g_array_append_val(partitions, part);
        }
    }
    struct ks_checker_input input = *first;
    input.outcomes = NULL;
    input.outcome_count = 0;
    input.final_read = records;
    input.final_read_count = read->mirror_records->len;
    input.partitions = (const struct ks_partition_final *)(void *)partitions->data;
    input.partition_count = partitions->len;
    input.replicas = NULL;
    input.replica_count = 0;
    input.txns = NULL;
    input.txn_count = 0;
    struct ks_checker_output second;
    ks_checker_run(&input, &second);
    run->check.consumed_lost += second.consumed_lost;
    run->check.consumed_unseen += second.consumed_unseen;
    for (guint i = 0; i < second.anomalies->len; i++) {
        const struct ks_anomaly *a = &g_array_index(second.anomalies, struct ks_anomaly, i);
        if (a->kind == KS_ANOMALY_CONSUMED_LOST || a->kind == KS_ANOMALY_CONSUMED_UNSEEN) {
            struct ks_anomaly copy = *a;
            g_array_append_val(run->check.anomalies, copy);
            run->check.kind_counts[a->kind] += a->record_count;
        }
    }
    ks_checker_output_clear(&second);
    g_array_free(partitions, TRUE);
}

/* Several clusters: a record of a cluster lost for good was lost with it
 * (cluster_lost, its crash's line); else sim/cause.c's answer. */
struct cluster_causes {
    struct run *run;
    struct ks_cause_index *causes;
};

static struct ks_cause cluster_cause_of_lost(void *context, const struct ks_record_outcome *o)
{
    struct cluster_causes *cc = context;
    const struct run *run = cc->run;
    if (o->topic_index >= 0 && (size_t)o->topic_index < run->scenario->topic_count) {
        const struct run_cluster *rc = &run->clusters[run->scenario->topic_cluster[o->topic_index]];
        if (rc->down && rc->crash_event >= 0) {
            const struct run_event *e =
                &g_array_index(run->events, struct run_event, (guint)rc->crash_event);
            return (struct ks_cause){ "cluster_lost", rc->crash_event, e->at_ns };
        }
    }
    return ks_cause_of_lost(cc->causes, o);
}

static void run_checker(struct run *run, const struct final_read *read)
{
    const struct ks_scenario *s = run->scenario;
    size_t producer_count = s->producer_count;
    bool *acks_none = g_new0(bool, producer_count + 1);
    const char **producer_names = g_new0(const char *, producer_count + 1);
    for (size_t i = 0; i < producer_count; i++) {
        acks_none[i] = s->producers[i].acks == KS_ACKS_NONE;
        producer_names[i] = s->producers[i].name;
    }
    bool *transactional = g_new0(bool, producer_count + 1);
    for (size_t i = 0; i < producer_count; i++) {
        transactional[i] = s->producers[i].transactional_id[0] != 0;
    }
    size_t consumer_count = s->consumer_count;
    int32_t *topic = g_new0(int32_t, consumer_count + 1);
    bool *read_committed = g_new0(bool, consumer_count + 1);
    for (size_t c = 0; c < consumer_count; c++) {
        topic[c] = s->consumers[c].topic_index;
        read_committed[c] = s->consumers[c].isolation_level == KS_READ_COMMITTED;
    }
    struct ks_checker_processor *processors =
        g_new0(struct ks_checker_processor, consumer_count + 1);
    size_t processor_count = 0;
    for (size_t c = 0; c < consumer_count; c++) {
        if (s->consumers[c].output_topic_index >= 0) {
            processors[processor_count].input_topic = s->consumers[c].topic_index;
            processors[processor_count].output_topic = s->consumers[c].output_topic_index;
            processor_count++;
        }
    }
    const char **topic_names = g_new0(const char *, s->topic_count + 1);
    for (size_t t = 0; t < s->topic_count; t++) {
        topic_names[t] = s->topics[t].name;
    }
    struct ks_cause_index *causes = index_causes(run);
    struct cluster_causes cluster_causes = { run, causes };
    struct ks_checker_input input = {
        .outcomes = (const struct ks_record_outcome *)(void *)run->outcomes->data,
        .outcome_count = run->outcomes->len,
        .producer_acks_none = acks_none,
        .producer_names = producer_names,
        .producer_count = (int32_t)producer_count,
        .topic_names = topic_names,
        .final_read = (const struct ks_read_record *)(void *)read->records->data,
        .final_read_count = read->records->len,
        .partitions = (const struct ks_partition_final *)(void *)read->partitions->data,
        .partition_count = read->partitions->len,
        .replicas = (const struct ks_replica_read *)(void *)read->replicas->data,
        .replica_count = read->replicas->len,
        .consumed = (const struct ks_consumed_record *)(void *)run->consumed->data,
        .consumed_count = run->consumed->len,
        .consumer_group = run->consumer_group,
        .consumer_topic = topic,
        .consumer_count = (int32_t)consumer_count,
        .group_count = run->group_count,
        .group_names = run->group_names,
        .cursors = (const struct ks_group_cursor *)(void *)run->groups.cursors->data,
        .cursor_count = run->groups.cursors->len,
        .skips = (const struct ks_group_skip *)(void *)run->groups.skips->data,
        .skip_count = run->groups.skips->len,
        .cause_of_lost = multi(run) ? cluster_cause_of_lost : ks_cause_of_lost,
        .cause_context = multi(run) ? (void *)&cluster_causes : (void *)causes,
        .producer_transactional = transactional,
        .txns = (const struct ks_txn_outcome *)(void *)run->txns->data,
        .txn_count = run->txns->len,
        .consumer_read_committed = read_committed,
        .processors = processors,
        .processor_count = processor_count,
    };
    ks_checker_run(&input, &run->check);
    if (read->mirror_records->len > 0) {
        check_remote_topics(run, &input, read);
    }
    g_free(processors);
    ks_cause_index_free(causes);
    g_free(acks_none);
    g_free(producer_names);
    g_free(topic_names);
    g_free(topic);
    g_free(transactional);
    g_free(read_committed);
}

/* One timeline line per group and partition whose first position left
 * records of the final read before it: they are outside the group's scope
 * (not lost), and the line says how many and why. */
static void note_out_of_scope(struct run *run)
{
    for (guint i = 0; i < run->groups.cursors->len; i++) {
        const struct ks_group_cursor *c =
            &g_array_index(run->groups.cursors, struct ks_group_cursor, i);
        int64_t count = run->check.cursor_out_of_scope[i];
        if (count == 0) {
            continue;
        }
        char detail[320];
        g_snprintf(detail, sizeof detail,
                   "final read: group %s started %s-%d at offset %" PRId64
                   " (t=%.3fs%s): the %" PRId64
                   " record(s) before it are outside its scope, not counted in "
                   "consumed_lost",
                   run->group_names[c->group], topic_name(run, c->topic_index), c->partition,
                   c->first_position, (double)c->first_ns / 1e9,
                   c->first_event >= 0 ? ", auto.offset.reset" : "", count);
        add_event(run, ks_world_now_ns(run->world), "final", -1, c->topic_index, c->partition,
                  detail,
                  "A group's scope starts where it first took up a position. With "
                  "auto.offset.reset=latest (Kafka's default) a new group starts at the end of "
                  "the log, so records written before it joined were never meant for it.",
                  true);
    }
}

static void compute_metrics(struct run *run)
{
    const struct ks_scenario *s = run->scenario;
    double *m = run->metrics;
    int64_t sent = 0;
    for (size_t i = 0; i < s->producer_count; i++) {
        sent += producer_sent_count(run, (int32_t)i);
    }
    int64_t reported = (int64_t)run->outcomes->len;
    if (sent < reported) {
        sent = reported;
    }
    m[KS_METRIC_RECORDS_SENT] = (double)sent;
    m[KS_METRIC_RECORDS_ACKED] = (double)run->check.records_acked;
    m[KS_METRIC_RECORDS_FAILED] = (double)run->check.records_failed;
    /* A record the producer took but never reported is one whose fate it never learned. */
    m[KS_METRIC_RECORDS_UNKNOWN] = (double)(run->check.records_unknown + (sent - reported));
    m[KS_METRIC_ACKED_LOST] = (double)run->check.acked_lost;
    m[KS_METRIC_DUPLICATES] = (double)run->check.duplicates;
    m[KS_METRIC_REORDERED] = (double)run->check.reordered;
    m[KS_METRIC_DIVERGENT_PARTITIONS] = (double)run->check.divergent_partitions;
    m[KS_METRIC_CONSUMED_LOST] = (double)run->check.consumed_lost;
    m[KS_METRIC_CONSUMED_UNSEEN] = (double)run->check.consumed_unseen;
    m[KS_METRIC_CONSUMED_DUPLICATES] = (double)run->check.consumed_duplicates;
    m[KS_METRIC_TXN_COMMITTED] = (double)run->check.txn_committed;
    m[KS_METRIC_TXN_ABORTED] = (double)run->check.txn_aborted;
    m[KS_METRIC_ABORTED_READ] = (double)run->check.aborted_read;
    m[KS_METRIC_ABORTED_SEEN] = (double)run->check.aborted_seen;
    m[KS_METRIC_TXN_HANGING] = (double)run->check.txn_hanging;
    m[KS_METRIC_PREMATURE_READ] = (double)run->check.premature_read;
    m[KS_METRIC_EOS_MISSING] = (double)run->check.eos_missing;
    m[KS_METRIC_EOS_DUPLICATES] = (double)run->check.eos_duplicates;
    m[KS_METRIC_LEADER_ELECTIONS] = (double)run->leader_elections;
    m[KS_METRIC_UNCLEAN_ELECTIONS] = (double)run->unclean_elections;
    m[KS_METRIC_ISR_SHRINKS] = (double)run->isr_shrinks;
    m[KS_METRIC_ISR_EXPANDS] = (double)run->isr_expands;
    m[KS_METRIC_UNAVAILABLE_MS] =
        (double)((multi(run) ? multi_unavailable_ns(run)
                             : ks_availability_total_ns(run->availability)) /
                 KS_NS_PER_MS);
    uint64_t produce_ns = ks_availability_produce(
        (const struct ks_record_outcome *)(void *)run->outcomes->data, run->outcomes->len,
        run->user_topic_count, (ks_time_ns)s->unavailable_threshold_ns, (ks_time_ns)s->duration_ns,
        run->produce_intervals);
    m[KS_METRIC_PRODUCE_UNAVAILABLE_MS] = (double)(produce_ns / KS_NS_PER_MS);
    m[KS_METRIC_PRODUCE_P50_MS] = run->check.produce_p50_ms;
    m[KS_METRIC_PRODUCE_P99_MS] = run->check.produce_p99_ms;
    /* Acked records per simulated second of `duration` (the final phase sends nothing new). */
    double duration_s = (double)s->duration_ns / 1e9;
    m[KS_METRIC_THROUGHPUT_RPS] =
        duration_s > 0
            ? floor((double)run->check.records_acked / duration_s * 1000.0 + 0.5) / 1000.0
            : 0;
    m[KS_METRIC_FAULTS_SKIPPED] =
        run->faults != NULL ? (double)ks_faults_skipped_count(run->faults) : 0;
    m[KS_METRIC_EVENTS] = (double)ks_world_event_count(run->world);
    m[KS_METRIC_TRACE_HASH] = (double)(ks_world_trace_hash(run->world) & ((UINT64_C(1) << 53) - 1));
}

bool ks_run_metric_shown(const struct ks_run_result *result, enum ks_metric metric)
{
    switch (metric) {
    case KS_METRIC_TXN_COMMITTED:
    case KS_METRIC_TXN_ABORTED:
    case KS_METRIC_ABORTED_READ:
    case KS_METRIC_ABORTED_SEEN:
    case KS_METRIC_TXN_HANGING:
    case KS_METRIC_PREMATURE_READ: return result->txn_metrics;
    case KS_METRIC_MIRRORED:
    case KS_METRIC_MIRROR_LOST:
    case KS_METRIC_MIRROR_UNMIRRORED:
    case KS_METRIC_MIRROR_DUPLICATES:
    case KS_METRIC_MIRROR_LAG:
    case KS_METRIC_MIRROR_LAG_MAX:
    case KS_METRIC_FAILOVER_DUPLICATES: return result->mirror_metrics;
    case KS_METRIC_EOS_MISSING:
    case KS_METRIC_EOS_DUPLICATES: return result->eos_metrics;
    default: return true;
    }
}

static char *format_number(double value)
{
    if (value == floor(value) && fabs(value) < 9.0e15) {
        return g_strdup_printf("%" PRId64, (int64_t)value);
    }
    return g_strdup_printf("%.3f", value);
}

static bool isr_matches(const struct ks_expectation *e, const int32_t *isr, int32_t count,
                        enum ks_compare_op op)
{
    bool equal = (uint32_t)count == e->value_count;
    for (int32_t i = 0; equal && i < count; i++) {
        bool found = false;
        for (uint32_t j = 0; j < e->value_count && !found; j++) {
            found = (double)isr[i] == e->values[j];
        }
        equal = found;
    }
    return op == KS_OP_NE ? !equal : equal;
}

/* Evaluates one [expect] line against the final state and the metrics. */
static struct expect_outcome evaluate(struct run *run, const struct ks_expectation *e,
                                      uint64_t trace_hash)
{
    struct expect_outcome out = { 0 };
    const char *op = e->op == KS_OP_EQ ? "=" : ks_compare_op_name(e->op);
    out.expr = g_strdup_printf("%s %s %s", e->key, op, e->value_text);
    int32_t t = e->tp.topic_index;
    int32_t p = e->tp.partition;
    struct ks_cluster *model = t >= 0 ? topic_model(run, t, &t) : run->cluster;
    switch (e->kind) {
    case KS_EXPECT_METRIC:
        if (e->metric == KS_METRIC_TRACE_HASH) {
            out.actual = g_strdup_printf("%016" PRIx64, trace_hash);
            bool same = g_ascii_strcasecmp(out.actual, e->value_text) == 0;
            out.passed = e->op == KS_OP_NE ? !same : same;
        } else {
            double actual = run->metrics[e->metric];
            out.actual = format_number(actual);
            out.passed = ks_compare(e->op, actual, e->values[0]);
        }
        break;
    case KS_EXPECT_PARTITION_LEADER: {
        int32_t leader = ks_cluster_leader(model, t, p);
        out.actual = g_strdup_printf("%d", leader);
        out.passed = ks_compare(e->op, leader, e->values[0]);
        break;
    }
    case KS_EXPECT_PARTITION_ISR: {
        int32_t isr[KS_REPLICATION_FACTOR_MAX];
        int32_t count = ks_cluster_isr(model, t, p, isr, KS_REPLICATION_FACTOR_MAX);
        char text[128];
        format_isr(isr, count, text, sizeof text);
        out.actual = g_strdup(text);
        if (e->op == KS_OP_EQ || e->op == KS_OP_NE) {
            out.passed = isr_matches(e, isr, count, e->op);
        } else {
            /* An ordering on a single number compares the ISR's size. */
            out.passed = ks_compare(e->op, count, e->values[0]);
        }
        break;
    }
    case KS_EXPECT_PARTITION_LEADER_EPOCH: {
        int32_t epoch = ks_cluster_leader_epoch(model, t, p);
        out.actual = g_strdup_printf("%d", epoch);
        out.passed = ks_compare(e->op, epoch, e->values[0]);
        break;
    }
    case KS_EXPECT_PARTITION_HW: {
        int32_t leader = ks_cluster_leader(model, t, p);
        struct ks_replica_state state;
        int64_t hw = -1;
        if (leader >= 0 && ks_cluster_replica_state(model, leader, t, p, &state)) {
            hw = state.hw;
        }
        out.actual = g_strdup_printf("%" PRId64, hw);
        out.passed = ks_compare(e->op, (double)hw, e->values[0]);
        break;
    }
    }
    return out;
}

static void evaluate_expectations(struct run *run, struct ks_run_result *result)
{
    uint64_t trace_hash = ks_world_trace_hash(run->world);
    for (size_t i = 0; i < run->scenario->expectation_count; i++) {
        struct expect_outcome o = evaluate(run, &run->scenario->expectations[i], trace_hash);
        g_array_append_val(run->expectations, o);
        result->expect_count++;
        if (!o.passed) {
            if (result->expect_failed == 0) {
                g_snprintf(result->first_failure, sizeof result->first_failure, "%s (actual %s)",
                           o.expr, o.actual);
            }
            result->expect_failed++;
        }
    }
    g_strlcpy(result->verdict, result->expect_failed > 0 ? "FAIL" : "PASS", sizeof result->verdict);
}

char *ks_run_format_metric(const struct ks_run_result *result, enum ks_metric metric, char *buffer,
                           size_t buffer_bytes)
{
    double value = result->metrics[metric];
    switch (metric) {
    case KS_METRIC_TRACE_HASH:
        g_snprintf(buffer, buffer_bytes, "%016" PRIx64, result->trace_hash);
        break;
    case KS_METRIC_PRODUCE_P50_MS:
    case KS_METRIC_PRODUCE_P99_MS:
    case KS_METRIC_THROUGHPUT_RPS: g_snprintf(buffer, buffer_bytes, "%.3f", value); break;
    case KS_METRIC_RECORDS_SENT:
    case KS_METRIC_RECORDS_ACKED:
    case KS_METRIC_RECORDS_FAILED:
    case KS_METRIC_RECORDS_UNKNOWN:
    case KS_METRIC_ACKED_LOST:
    case KS_METRIC_DUPLICATES:
    case KS_METRIC_REORDERED:
    case KS_METRIC_DIVERGENT_PARTITIONS:
    case KS_METRIC_CONSUMED_LOST:
    case KS_METRIC_CONSUMED_UNSEEN:
    case KS_METRIC_CONSUMED_DUPLICATES:
    case KS_METRIC_TXN_COMMITTED:
    case KS_METRIC_TXN_ABORTED:
    case KS_METRIC_ABORTED_READ:
    case KS_METRIC_ABORTED_SEEN:
    case KS_METRIC_TXN_HANGING:
    case KS_METRIC_PREMATURE_READ:
    case KS_METRIC_MIRRORED:
    case KS_METRIC_MIRROR_LOST:
    case KS_METRIC_MIRROR_UNMIRRORED:
    case KS_METRIC_MIRROR_DUPLICATES:
    case KS_METRIC_MIRROR_LAG:
    case KS_METRIC_MIRROR_LAG_MAX:
    case KS_METRIC_FAILOVER_DUPLICATES:
    case KS_METRIC_EOS_MISSING:
    case KS_METRIC_EOS_DUPLICATES:
    case KS_METRIC_LEADER_ELECTIONS:
    case KS_METRIC_UNCLEAN_ELECTIONS:
    case KS_METRIC_ISR_SHRINKS:
    case KS_METRIC_ISR_EXPANDS:
    case KS_METRIC_UNAVAILABLE_MS:
    case KS_METRIC_PRODUCE_UNAVAILABLE_MS:
    case KS_METRIC_FAULTS_SKIPPED:
    case KS_METRIC_EVENTS:
    case KS_METRIC_COUNT: g_snprintf(buffer, buffer_bytes, "%" PRId64, (int64_t)value); break;
    }
    return buffer;
}

/* ---- recording ------------------------------------------------------------------------------------ */

static const char *role_name(const struct run_sample *sample)
{
    if (!sample->online) {
        return "offline";
    }
    switch (sample->role) {
    case KS_ROLE_LEADER: return "leader";
    case KS_ROLE_FOLLOWER: return "follower";
    case KS_ROLE_NONE: break;
    }
    return "none";
}

static const char *outcome_name(enum ks_record_outcome_kind kind)
{
    switch (kind) {
    case KS_OUTCOME_ACKED: return "acked";
    case KS_OUTCOME_FAILED: return "failed";
    case KS_OUTCOME_UNKNOWN: break;
    }
    return "unknown";
}

static char *topic_configs(const struct ks_topic_config *topic)
{
    GString *text = g_string_new(NULL);
    if (topic->min_insync_replicas != 1) {
        g_string_append_printf(text, "min.insync.replicas=%d", topic->min_insync_replicas);
    }
    if (topic->unclean_leader_election_enable) {
        g_string_append_printf(text, "%sunclean.leader.election.enable=true", text->len ? "," : "");
    }
    if (topic->log.cleanup_compact) {
        g_string_append_printf(text, "%scleanup.policy=%s", text->len ? "," : "",
                               topic->log.cleanup_delete ? "compact,delete" : "compact");
    }
    if (topic->log.segment_bytes != INT64_C(1073741824)) {
        g_string_append_printf(text, "%ssegment.bytes=%" PRId64, text->len ? "," : "",
                               topic->log.segment_bytes);
    }
    if (topic->log.retention_ns != INT64_C(604800000) * (int64_t)KS_NS_PER_MS) {
        g_string_append_printf(
            text, "%sretention.ms=%" PRId64, text->len ? "," : "",
            topic->log.retention_ns < 0 ? -1 : topic->log.retention_ns / (int64_t)KS_NS_PER_MS);
    }
    return g_string_free(text, FALSE);
}

/* records has one row per record sent: a record the producer took but never
 * reported (still queued or in flight when the run ended) gets a row with
 * outcome 'unknown' and no partition, offset or send time. Its seq is the
 * gap in the producer's reported seqs 0..sent-1. */
static void record_unreported(struct run *run, struct ks_recorder *rec)
{
    const struct ks_scenario *s = run->scenario;
    for (size_t p = 0; p < s->producer_count; p++) {
        int64_t sent = producer_sent_count(run, (int32_t)p);
        if (sent <= 0) {
            continue;
        }
        bool *reported = g_new0(bool, (size_t)sent);
        for (guint i = 0; i < run->outcomes->len; i++) {
            const struct ks_record_outcome *o =
                &g_array_index(run->outcomes, struct ks_record_outcome, i);
            if (o->producer_index == (int32_t)p && o->seq >= 0 && o->seq < sent) {
                reported[o->seq] = true;
            }
        }
        for (int64_t seq = 0; seq < sent; seq++) {
            if (reported[seq]) {
                continue;
            }
            int64_t final_offset = -1;
            enum ks_final final = ks_checker_final_of(&run->check, (int32_t)p, seq, &final_offset);
            struct ks_recorder_record_row row = {
                .producer = s->producers[p].name,
                .seq = seq,
                .key = NULL,
                .topic = topic_name(run, s->producers[p].topic_index),
                .partition = -1,
                .offset = -1,
                .sent_ns = -1,
                .acked_ns = -1,
                .outcome = "unknown",
                .final = ks_final_name(final),
                .final_offset = final_offset,
                .acked_broker = -1,
                .acked_leader_epoch = -1,
            };
            ks_recorder_add_record(rec, &row);
        }
        g_free(reported);
    }
}

/* replica_logs keeps at most this many steps per partition: the first
 * ones and the run's last (docs/database.md). */
#define REPLICA_LOG_STEPS_MAX 500

static const char *view_state(const struct ks_log_view *view)
{
    if (!view->online) {
        return view->broker_up ? "none" : "offline";
    }
    switch (view->role) {
    case KS_ROLE_LEADER: return "leader";
    case KS_ROLE_FOLLOWER: return "follower";
    case KS_ROLE_NONE: break;
    }
    return "none";
}

static void record_step(struct run *run, struct ks_recorder *rec, const struct ks_step *step)
{
    char isr[KS_REPLICATION_FACTOR_MAX * 12 + 1];
    format_isr(step->isr, step->isr_count, isr, sizeof isr);
    g_autoptr(GString) epochs = g_string_new(NULL);
    for (int32_t r = 0; r < step->view_count; r++) {
        const struct ks_log_view *view = ks_steps_view(run->steps, step, r);
        const struct ks_epoch_entry *entries = ks_steps_epochs(run->steps, view);
        g_string_assign(epochs, "[");
        for (int32_t i = 0; i < view->epoch_count; i++) {
            g_string_append_printf(epochs, "%s[%d,%" PRId64 "]", i > 0 ? "," : "", entries[i].epoch,
                                   entries[i].start_offset);
        }
        g_string_append_c(epochs, ']');
        struct ks_recorder_replica_log_row row = {
            .event_id = step->event + 1,
            .t_ns = step->at_ns,
            .topic = topic_name(run, step->topic_index),
            .partition = step->partition,
            .broker = view->broker,
            .replica_index = view->replica_index,
            .state = view_state(view),
            .leo = view->leo,
            .hw = view->hw,
            .log_start_offset = view->log_start_offset,
            .leader_epoch = view->leader_epoch,
            .epochs = view->online ? epochs->str : NULL,
            .leader = step->leader,
            .isr = isr,
        };
        ks_recorder_add_replica_log(rec, &row);
    }
}

/* Every step's pictures, at most REPLICA_LOG_STEPS_MAX per partition (the
 * first ones, then the partition's last step). */
static void record_steps(struct run *run, struct ks_recorder *rec)
{
    guint count = ks_steps_count(run->steps);
    int32_t *taken = g_new0(int32_t, (size_t)run->tp_count + 1);
    guint *last = g_new0(guint, (size_t)run->tp_count + 1);
    for (guint i = 0; i < count; i++) {
        const struct ks_step *step = ks_steps_get(run->steps, i);
        last[tp_slot(run, step->topic_index, step->partition)] = i;
    }
    for (guint i = 0; i < count; i++) {
        const struct ks_step *step = ks_steps_get(run->steps, i);
        int32_t slot = tp_slot(run, step->topic_index, step->partition);
        if (taken[slot] < REPLICA_LOG_STEPS_MAX - 1 || last[slot] == i) {
            taken[slot]++;
            record_step(run, rec, step);
        }
    }
    g_free(taken);
    g_free(last);
}

/* The unavailability intervals: the cluster's view (each cluster's, with
 * several), then the clients'. */
static void record_unavailability(struct run *run, struct ks_recorder *rec)
{
    int32_t count = multi(run) ? run->cluster_count : 1;
    for (int32_t v = 0; v <= count; v++) {
        const GArray *intervals =
            v == count ? run->produce_intervals
            : multi(run) ? ks_availability_intervals(run->clusters[v].availability)
                         : ks_availability_intervals(run->availability);
        for (guint i = 0; i < intervals->len; i++) {
            const struct ks_unavailable_interval *u =
                &g_array_index(intervals, struct ks_unavailable_interval, i);
            int32_t topic = u->topic_index;
            if (multi(run) && v < count) {
                topic = u->topic_index < run->clusters[v].topic_count
                            ? run->clusters[v].topic_global[u->topic_index]
                            : -1;
            }
            ks_recorder_add_unavailability(rec, topic_name(run, topic), u->partition,
                                           u->produce_view ? "produce" : "cluster",
                                           ks_unavailable_reason_name(u->reason), u->start_ns,
                                           u->end_ns);
        }
    }
}

static void record_rows(struct run *run, struct ks_recorder *rec)
{
    record_steps(run, rec);
    for (guint i = 0; i < run->events->len; i++) {
        const struct run_event *e = &g_array_index(run->events, struct run_event, i);
        ks_recorder_add_event(rec, e->at_ns, e->kind, e->broker, topic_name(run, e->topic_index),
                              e->partition, e->detail, &e->facts);
    }
    for (guint i = 0; i < run->outcomes->len; i++) {
        const struct ks_record_outcome *o =
            &g_array_index(run->outcomes, struct ks_record_outcome, i);
        struct ks_recorder_record_row row = {
            .producer = run->scenario->producers[o->producer_index].name,
            .seq = o->seq,
            .key = o->key,
            .topic = topic_name(run, o->topic_index),
            .partition = o->partition,
            .offset = o->offset,
            .sent_ns = (int64_t)o->sent_ns,
            .acked_ns = o->outcome == KS_OUTCOME_UNKNOWN ? -1 : (int64_t)o->acked_ns,
            .outcome = outcome_name(o->outcome),
            .final = ks_final_name((enum ks_final)run->check.finals[i]),
            .final_offset = run->check.final_offsets[i],
            .acked_broker = o->acked_broker,
            .acked_leader_epoch = o->acked_leader_epoch,
        };
        ks_recorder_add_record(rec, &row);
    }
    record_unreported(run, rec);
    for (guint i = 0; i < run->samples->len; i++) {
        const struct run_sample *s = &g_array_index(run->samples, struct run_sample, i);
        struct ks_recorder_state_row row = {
            .t_ns = s->t_ns,
            .topic = topic_name(run, s->topic_index),
            .partition = s->partition,
            .broker = s->broker,
            .replica_index = s->replica_index,
            .role = role_name(s),
            .leo = s->online ? s->leo : -1,
            .hw = s->online ? s->hw : -1,
            .leader_epoch = s->online ? s->leader_epoch : -1,
            .isr = s->isr,
            .leader = s->leader,
            .elr = s->elr,
            .last_known_elr = s->last_known_elr,
        };
        ks_recorder_add_partition_state(rec, &row);
    }
    for (guint i = 0; i < run->check.anomalies->len; i++) {
        const struct ks_anomaly *a = &g_array_index(run->check.anomalies, struct ks_anomaly, i);
        struct ks_recorder_anomaly_row row = {
            .kind = a->kind_name,
            .topic = topic_name(run, a->topic_index),
            .partition = a->partition,
            .detail = a->detail,
            .producer =
                a->producer_index >= 0 ? run->scenario->producers[a->producer_index].name : NULL,
            .group_id = a->group >= 0 ? run->group_names[a->group] : NULL,
            .first_seq = a->first_seq,
            .last_seq = a->last_seq,
            .first_offset = a->first_offset,
            .last_offset = a->last_offset,
            .record_count = a->record_count,
            .acked_broker = a->acked_broker,
            .acked_leader_epoch = a->acked_leader_epoch,
            .cause = a->cause,
            .cause_event_id = a->cause_event >= 0 ? a->cause_event + 1 : -1,
        };
        ks_recorder_add_anomaly_row(rec, &row);
    }
    record_unavailability(run, rec);
    for (guint i = 0; i < run->lag_samples->len; i++) {
        const struct run_lag_sample *l = &g_array_index(run->lag_samples, struct run_lag_sample, i);
        ks_recorder_add_mirror_lag(rec, (uint64_t)l->t_ns, run->scenario->mirrors[l->mirror].name,
                                   l->lag);
    }
    for (guint i = 0; i < run->expectations->len; i++) {
        const struct expect_outcome *o =
            &g_array_index(run->expectations, struct expect_outcome, i);
        ks_recorder_add_expectation(rec, o->expr, o->actual, o->passed);
    }
    for (size_t t = 0; t < run->scenario->topic_count; t++) {
        const struct ks_topic_config *topic = &run->scenario->topics[t];
        char *configs = topic_configs(topic);
        ks_recorder_add_topic(rec, topic->name, topic->partition_count, topic->replication_factor,
                              configs);
        g_free(configs);
    }
}

static void record_summary(struct ks_recorder *rec, const struct ks_run_result *result)
{
    size_t name_count = 0;
    const char *const *names = ks_scenario_metric_names(&name_count);
    for (size_t i = 0; i < KS_METRIC_COUNT && i < name_count; i++) {
        char hash[17];
        const char *text = NULL;
        if (!ks_run_metric_shown(result, (enum ks_metric)i)) {
            continue;
        }
        if (i == KS_METRIC_TRACE_HASH) {
            text = ks_run_format_metric(result, KS_METRIC_TRACE_HASH, hash, sizeof hash);
        }
        ks_recorder_add_summary(rec, names[i], result->metrics[i], text);
    }
}

/* ---- printing ---------------------------------------------------------------------------------------- */

static void print_wrapped(FILE *out, const char *text, const char *indent, size_t width)
{
    char **words = g_strsplit_set(text, " \n", -1);
    size_t column = 0;
    for (size_t i = 0; words[i] != NULL; i++) {
        size_t length = strlen(words[i]);
        if (length == 0) {
            continue;
        }
        if (column == 0) {
            fputs(indent, out);
            column = strlen(indent);
        } else if (column + 1 + length > width) {
            fputc('\n', out);
            fputs(indent, out);
            column = strlen(indent);
        } else {
            fputc(' ', out);
            column++;
        }
        fputs(words[i], out);
        column += length;
    }
    if (column > 0) {
        fputc('\n', out);
    }
    g_strfreev(words);
}

/* Shell-quotes text only when it needs it, so the usual line reads plainly. */
static char *quote_if_needed(const char *text)
{
    bool plain = text[0] != '\0';
    for (const char *c = text; *c != '\0' && plain; c++) {
        plain = g_ascii_isalnum(*c) || strchr("/._-=,:+@%", *c) != NULL;
    }
    return plain ? g_strdup(text) : g_shell_quote(text);
}

static void print_reproduce(FILE *out, const struct run *run)
{
    char *path = quote_if_needed(run->scenario->path);
    fprintf(out, "reproduce: ksim run %s --seed %" PRIu64, path, run->seed);
    g_free(path);
    for (size_t i = 0; i < run->options->set_count; i++) {
        char *quoted = quote_if_needed(run->options->set_assignments[i]);
        fprintf(out, " --set %s", quoted);
        g_free(quoted);
    }
    fputc('\n', out);
}

static void print_timeline(FILE *out, const struct run *run, bool explain)
{
    fprintf(out, "\ntimeline:\n");
    for (guint i = 0; i < run->events->len; i++) {
        const struct run_event *e = &g_array_index(run->events, struct run_event, i);
        if (!e->timeline) {
            continue;
        }
        /* The model's details usually name their partition or broker already;
         * add it only when they do not. */
        char where[300] = "";
        char tp[300] = "";
        char broker[32] = "";
        if (e->topic_index >= 0 && e->partition >= 0) {
            g_snprintf(tp, sizeof tp, "%s-%d", topic_name(run, e->topic_index), e->partition);
        }
        if (e->broker >= 0) {
            g_snprintf(broker, sizeof broker, "broker %d", e->broker);
        }
        if (tp[0] != '\0' && strstr(e->detail, tp) == NULL) {
            g_snprintf(where, sizeof where, " %s", tp);
        } else if (tp[0] == '\0' && broker[0] != '\0' && strstr(e->detail, broker) == NULL) {
            g_snprintf(where, sizeof where, " %s", broker);
        }
        bool own = strcmp(e->kind, "fault") == 0 || strcmp(e->kind, "heal") == 0 ||
                   strcmp(e->kind, "restart") == 0 || strcmp(e->kind, "resume") == 0 ||
                   strcmp(e->kind, "skipped") == 0 || strcmp(e->kind, "trigger") == 0 ||
                   strcmp(e->kind, "final") == 0;
        if (own) {
            fprintf(out, "[%8.3fs] %s\n", (double)e->at_ns / 1e9, e->detail);
        } else {
            fprintf(out, "[%8.3fs] %s%s: %s\n", (double)e->at_ns / 1e9, e->kind, where, e->detail);
        }
        if (explain && e->explain != NULL && e->explain[0] != '\0') {
            print_wrapped(out, e->explain, "            ", 96);
        }
        if (explain && e->picture != NULL) {
            fputs(e->picture, out);
        }
    }
}

static void print_text(FILE *out, const struct run *run, const struct ks_run_result *result)
{
    const struct ks_run_options *o = run->options;
    if (!o->quiet) {
        fprintf(out, "ksim run: scenario %s, seed %" PRIu64 "\n", run->scenario->name, run->seed);
        if (run->scenario->description != NULL && run->scenario->description[0] != '\0') {
            fprintf(out, "description: %s\n", run->scenario->description);
        }
        /* The Kafka release whose defaults the run took (sim/kafka_versions.c). */
        fprintf(out, "kafka.version: %s%s\n", run->scenario->kafka_version->name,
                ks_scenario_key_line(run->scenario, "scenario", "kafka.version") > 0 ||
                        run->scenario->kafka_version != ks_kafka_version_default()
                    ? ""
                    : " (the default)");
        print_reproduce(out, run);
        print_timeline(out, run, o->explain);
        fprintf(out, "\nsummary:\n");
        size_t name_count = 0;
        const char *const *names = ks_scenario_metric_names(&name_count);
        for (size_t i = 0; i < KS_METRIC_COUNT && i < name_count; i++) {
            char value[64];
            if (!ks_run_metric_shown(result, (enum ks_metric)i)) {
                continue;
            }
            fprintf(out, "  %-22s %s\n", names[i],
                    ks_run_format_metric(result, (enum ks_metric)i, value, sizeof value));
        }
        if (run->check.anomalies->len > 0) {
            fprintf(out, "\nanomalies:\n");
            print_anomalies(run, out);
        }
        if (run->expectations->len > 0) {
            fprintf(out, "\nexpectations:\n");
        }
        for (guint i = 0; i < run->expectations->len; i++) {
            const struct expect_outcome *e =
                &g_array_index(run->expectations, struct expect_outcome, i);
            fprintf(out, "%s %s (actual %s)\n", e->passed ? "PASS" : "FAIL", e->expr, e->actual);
        }
        fputc('\n', out);
    }
    if (result->expect_count == 0) {
        fprintf(out, "verdict: PASS (no expectations)\n");
    } else if (result->expect_failed == 0) {
        fprintf(out, "verdict: PASS (%d of %d expectations held)\n", result->expect_count,
                result->expect_count);
    } else {
        fprintf(out, "verdict: FAIL (%d of %d expectations failed: %s)\n", result->expect_failed,
                result->expect_count, result->first_failure);
    }
}

static void print_json(FILE *out, const struct run *run, const struct ks_run_result *result)
{
    JsonBuilder *b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "scenario");
    json_builder_add_string_value(b, run->scenario->name);
    json_builder_set_member_name(b, "seed");
    json_builder_add_int_value(b, (gint64)run->seed);
    json_builder_set_member_name(b, "run_id");
    if (result->run_id > 0) {
        json_builder_add_int_value(b, result->run_id);
    } else {
        json_builder_add_null_value(b);
    }
    size_t name_count = 0;
    const char *const *names = ks_scenario_metric_names(&name_count);
    for (size_t i = 0; i < KS_METRIC_COUNT && i < name_count; i++) {
        if (!ks_run_metric_shown(result, (enum ks_metric)i)) {
            continue;
        }
        json_builder_set_member_name(b, names[i]);
        if (i == KS_METRIC_TRACE_HASH) {
            char hash[17];
            json_builder_add_string_value(
                b, ks_run_format_metric(result, KS_METRIC_TRACE_HASH, hash, sizeof hash));
        } else if (i == KS_METRIC_PRODUCE_P50_MS || i == KS_METRIC_PRODUCE_P99_MS ||
                   i == KS_METRIC_THROUGHPUT_RPS) {
            json_builder_add_double_value(b, result->metrics[i]);
        } else {
            json_builder_add_int_value(b, (gint64)result->metrics[i]);
        }
    }
    /* Anomalous records per kind (divergent: partitions; txn_hanging:
     * transactions), every kind listed; the transactions' kinds only where
     * their metrics are, and the processors' likewise, so that a run without
     * transactions or processors keeps its keys. */
    json_builder_set_member_name(b, "anomalies");
    json_builder_begin_object(b);
    for (int k = 0; k < KS_ANOMALY_KIND_COUNT; k++) {
        if ((ks_anomaly_kind_is_txn((enum ks_anomaly_kind)k) && !result->txn_metrics) ||
            (ks_anomaly_kind_is_eos((enum ks_anomaly_kind)k) && !result->eos_metrics)) {
            continue;
        }
        json_builder_set_member_name(b, ks_anomaly_kind_name((enum ks_anomaly_kind)k));
        json_builder_add_int_value(b, run->check.kind_counts[k]);
    }
    json_builder_end_object(b);
    json_builder_set_member_name(b, "verdict");
    json_builder_add_string_value(b, result->verdict);
    json_builder_set_member_name(b, "expectations");
    json_builder_begin_array(b);
    for (guint i = 0; i < run->expectations->len; i++) {
        const struct expect_outcome *e =
            &g_array_index(run->expectations, struct expect_outcome, i);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "expr");
        json_builder_add_string_value(b, e->expr);
        json_builder_set_member_name(b, "actual");
        json_builder_add_string_value(b, e->actual);
        json_builder_set_member_name(b, "passed");
        json_builder_add_boolean_value(b, e->passed);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    JsonNode *root = json_builder_get_root(b);
    JsonGenerator *generator = json_generator_new();
    json_generator_set_pretty(generator, TRUE);
    json_generator_set_root(generator, root);
    char *text = json_generator_to_data(generator, NULL);
    fprintf(out, "%s\n", text);
    g_free(text);
    g_object_unref(generator);
    json_node_unref(root);
    g_object_unref(b);
}

/* An internal topic of MM2 on cluster rc: one partition, compacted
 * (MirrorUtils.createSinglePartitionCompactedTopic), replication factor 3
 * (offset-syncs.topic.replication.factor, checkpoints.topic.replication.
 * factor; ksim caps it at the cluster's brokers, where MM2 would fail). */
static int32_t add_internal_topic(struct run_cluster *rc, const char *name)
{
    int32_t index = rc->all_topic_count++;
    struct ks_topic_config *topic = &rc->topics[index];
    /* The cluster's log defaults, as a user topic took them; not its
     * explicit assignment (the struct copy would share it): the controller
     * places an internal topic. */
    *topic = rc->topics[0];
    topic->assignment = NULL;
    g_strlcpy(topic->name, name, sizeof topic->name);
    topic->partition_count = 1;
    topic->replication_factor = MIN(3, rc->view.cluster.broker_count);
    topic->min_insync_replicas = 1;
    topic->log.cleanup_compact = true;
    topic->log.cleanup_delete = false;
    return index;
}

/* The cluster's topics and clients with local indexes, its spec and its
 * one-cluster view of the scenario. */
static void cluster_init(struct run *run, int32_t c)
{
    const struct ks_scenario *s = run->scenario;
    struct run_cluster *rc = &run->clusters[c];
    rc->run = run;
    rc->index = c;
    rc->crash_event = -1;
    rc->name = s->clusters[c].name;
    size_t slots = s->topic_count + 2 * s->mirror_count + 1;
    rc->topics = g_new0(struct ks_topic_config, slots);
    rc->topic_global = g_new0(int32_t, slots);
    for (size_t t = 0; t < s->topic_count; t++) {
        if (s->topic_cluster[t] == c) {
            run->topic_local[t] = rc->topic_count;
            rc->topic_global[rc->topic_count] = (int32_t)t;
            ks_topic_config_copy(&rc->topics[rc->topic_count++], &s->topics[t]);
        }
    }
    rc->all_topic_count = rc->topic_count;
    rc->producers = g_new0(struct ks_producer_config, s->producer_count + 1);
    rc->producer_global = g_new0(int32_t, s->producer_count + 1);
    for (size_t p = 0; p < s->producer_count; p++) {
        if (s->producer_cluster[p] == c) {
            run->producer_local[p] = rc->producer_count;
            rc->producer_global[rc->producer_count] = (int32_t)p;
            rc->producers[rc->producer_count] = s->producers[p];
            rc->producers[rc->producer_count++].topic_index = run->topic_local[s->producers[p].topic_index];
        }
    }
    rc->consumers = g_new0(struct ks_consumer_config, s->consumer_count + 1);
    rc->consumer_global = g_new0(int32_t, s->consumer_count + 1);
    for (size_t k = 0; k < s->consumer_count; k++) {
        if (s->consumer_cluster[k] == c) {
            run->consumer_local[k] = rc->consumer_count;
            rc->consumer_global[rc->consumer_count] = (int32_t)k;
            rc->consumers[rc->consumer_count] = s->consumers[k];
            rc->consumers[rc->consumer_count++].topic_index = run->topic_local[s->consumers[k].topic_index];
        }
    }
    ks_scenario_cluster_view(s, c, &rc->view);
    rc->view.topics = rc->topics;
    rc->view.topic_count = (size_t)rc->topic_count;
    rc->view.producers = rc->producers;
    rc->view.producer_count = (size_t)rc->producer_count;
    rc->view.consumers = rc->consumers;
    rc->view.consumer_count = (size_t)rc->consumer_count;
}

/* The groups MM2 checkpoints (groups = .*, MirrorCheckpointConfig): every
 * group with a consumer of the source topic, in order of first appearance. */
static void mirror_groups(struct run *run, struct run_mirror *rm)
{
    const struct ks_scenario *s = run->scenario;
    rm->group_ids = g_new0(const char *, s->consumer_count + 1);
    int32_t count = 0;
    for (size_t k = 0; k < s->consumer_count; k++) {
        if (s->consumers[k].topic_index != rm->spec->topic_index) {
            continue;
        }
        bool seen = false;
        for (int32_t g = 0; g < count && !seen; g++) {
            seen = strcmp(rm->group_ids[g], s->consumers[k].group_id) == 0;
        }
        if (!seen) {
            rm->group_ids[count++] = s->consumers[k].group_id;
        }
    }
    rm->config.group_ids = rm->group_ids;
    rm->config.group_count = count;
}

static void mirror_init(struct run *run, int32_t m)
{
    const struct ks_scenario *s = run->scenario;
    struct run_mirror *rm = &run->mirrors[m];
    rm->spec = &s->mirrors[m];
    const struct ks_mirror_spec *ms = rm->spec;
    struct run_cluster *source = &run->clusters[ms->source_cluster];
    struct run_cluster *target = &run->clusters[ms->target_cluster];
    struct ks_mirror_config *config = &rm->config;
    ks_mirror_config_defaults(config);
    config->source_broker_count = source->view.cluster.broker_count;
    config->target_broker_count = target->view.cluster.broker_count;
    config->source_topic_index = run->topic_local[ms->topic_index];
    config->source_topic_name = s->topics[ms->topic_index].name;
    config->target_topic_index = run->topic_local[ms->remote_topic_index];
    config->target_topic_name = s->topics[ms->remote_topic_index].name;
    config->partition_count = s->topics[ms->topic_index].partition_count;
    rm->lag_hw = g_new0(int64_t, (gsize)config->partition_count);
    rm->lag_next = g_new0(int64_t, (gsize)config->partition_count);
    g_autofree char *syncs = ks_mirror_offset_syncs_topic(target->name);
    config->offset_syncs_topic_index = add_internal_topic(source, syncs);
    config->checkpoints_topic_index = -1;
    if (ms->emit_checkpoints) {
        g_autofree char *checkpoints = ks_mirror_checkpoints_topic(source->name);
        config->checkpoints_topic_index = add_internal_topic(target, checkpoints);
    }
    config->offset_lag_max = ms->offset_lag_max;
    config->acks = ms->acks;
    config->enable_idempotence = ms->enable_idempotence;
    config->offset_flush_interval_ns = ms->offset_flush_interval_ns;
    config->start_ns = ms->start_ns;
    config->emit_checkpoints_interval_ns = ms->emit_checkpoints_interval_ns;
    config->sync_group_offsets_enabled = ms->sync_group_offsets_enabled;
    config->sync_group_offsets_interval_ns = ms->sync_group_offsets_interval_ns;
    mirror_groups(run, rm);
}

static void multi_init(struct run *run)
{
    const struct ks_scenario *s = run->scenario;
    run->cluster_count = (int32_t)s->cluster_count;
    run->clusters = g_new0(struct run_cluster, s->cluster_count);
    run->topic_local = g_new0(int32_t, s->topic_count + 1);
    run->producer_local = g_new0(int32_t, s->producer_count + 1);
    run->consumer_local = g_new0(int32_t, s->consumer_count + 1);
    for (int32_t c = 0; c < run->cluster_count; c++) {
        cluster_init(run, c);
    }
    run->mirror_count = (int32_t)s->mirror_count;
    run->mirrors = g_new0(struct run_mirror, s->mirror_count + 1);
    for (int32_t m = 0; m < run->mirror_count; m++) {
        mirror_init(run, m);
    }
    for (int32_t c = 0; c < run->cluster_count; c++) {
        struct run_cluster *rc = &run->clusters[c];
        rc->spec = (struct ks_cluster_spec){
            .cluster = &s->clusters[c].cluster,
            .topics = rc->topics,
            .topic_count = rc->all_topic_count,
            .producers = rc->producers,
            .producer_count = rc->producer_count,
            .consumers = rc->consumers,
            .consumer_count = rc->consumer_count,
            .identity_producers = s->producers,
            .identity_producer_count = (int32_t)s->producer_count,
        };
        rc->node_count = ks_cluster_node_count(&rc->spec);
    }
    run->cuts = g_array_new(FALSE, FALSE, sizeof(struct run_cut));
    run->failovers = g_array_new(FALSE, FALSE, sizeof(struct run_failover));
    run->fires = g_new0(struct run_fault_fire, s->fault_count + 1);
}

static uint32_t multi_node_count(const struct run *run)
{
    uint32_t count = 1; /* the driver */
    for (int32_t c = 0; c < run->cluster_count; c++) {
        count += run->clusters[c].node_count - 1;
    }
    return count + (uint32_t)run->mirror_count;
}

static void multi_deinit(struct run *run)
{
    for (int32_t m = 0; m < run->mirror_count; m++) {
        struct run_mirror *rm = &run->mirrors[m];
        ks_mirror_free(g_steal_pointer(&rm->mirror));
        g_free(rm->group_ids);
        g_free(rm->lag_hw);
        g_free(rm->lag_next);
    }
    for (int32_t c = 0; c < run->cluster_count; c++) {
        struct run_cluster *rc = &run->clusters[c];
        ks_availability_free(rc->availability);
        ks_cluster_free(g_steal_pointer(&rc->cluster));
        for (int32_t t = 0; t < rc->all_topic_count; t++) {
            ks_topic_config_deinit(&rc->topics[t]);
        }
        g_free(rc->topics);
        g_free(rc->topic_global);
        g_free(rc->producers);
        g_free(rc->producer_global);
        g_free(rc->consumers);
        g_free(rc->consumer_global);
    }
    g_free(run->clusters);
    g_free(run->mirrors);
    g_free(run->topic_local);
    g_free(run->producer_local);
    g_free(run->consumer_local);
    if (run->cuts != NULL) {
        g_array_free(run->cuts, TRUE);
        g_array_free(run->failovers, TRUE);
    }
    g_free(run->fires);
}

/* The world's id of node n (>= 1) of cluster c. */
static ks_node_id cluster_node(const struct run *run, int32_t c, uint32_t n)
{
    return ks_world_view_node(run->clusters[c].world, n);
}

/* Sets one latency on every link between two node sets of the world. */
static void set_latency(ks_world *world, const ks_node_id *a, size_t a_count, const ks_node_id *b,
                        size_t b_count, ks_time_ns latency_ns)
{
    for (size_t i = 0; i < a_count; i++) {
        for (size_t j = 0; j < b_count; j++) {
            if (a[i] != b[j]) {
                ks_world_net_set_link_latency(world, a[i], b[j], latency_ns);
            }
        }
    }
}

/* The world's nodes of cluster c, its mirrors' nodes with it when
 * with_mirrors (a mirror sits with its target). Owned: g_array_free. */
static GArray *cluster_nodes(const struct run *run, int32_t c, bool with_mirrors)
{
    GArray *nodes = g_array_new(FALSE, FALSE, sizeof(ks_node_id));
    for (uint32_t n = 1; n < run->clusters[c].node_count; n++) {
        ks_node_id id = cluster_node(run, c, n);
        g_array_append_val(nodes, id);
    }
    for (int32_t m = 0; with_mirrors && m < run->mirror_count; m++) {
        if (run->mirrors[m].spec->target_cluster == c) {
            g_array_append_val(nodes, run->mirrors[m].node);
        }
    }
    return nodes;
}

/* The views, link latencies (inside each cluster, and between clusters). */
static void multi_build(struct run *run)
{
    const struct ks_scenario *s = run->scenario;
    uint32_t base = 1;
    for (int32_t c = 0; c < run->cluster_count; c++) {
        struct run_cluster *rc = &run->clusters[c];
        rc->world = ks_world_view_new(run->world, base, rc->node_count, rc->name);
        base += rc->node_count - 1;
    }
    for (int32_t m = 0; m < run->mirror_count; m++) {
        struct run_mirror *rm = &run->mirrors[m];
        rm->node = base++;
        rm->config.node = rm->node;
        rm->config.source_broker_node = cluster_node(run, rm->spec->source_cluster, 1);
        rm->config.target_broker_node = cluster_node(run, rm->spec->target_cluster, 1);
    }
    for (int32_t c = 0; c < run->cluster_count; c++) {
        const struct ks_scenario_cluster *sc = &s->clusters[c];
        g_autoptr(GArray) nodes = cluster_nodes(run, c, true);
        if (sc->network_latency_ns != s->network_latency_ns) {
            set_latency(run->world, (const ks_node_id *)(void *)nodes->data, nodes->len,
                        (const ks_node_id *)(void *)nodes->data, nodes->len,
                        (ks_time_ns)sc->network_latency_ns);
        }
        for (size_t i = 0; i < sc->link_latency_count; i++) {
            const struct ks_link_latency *link = &sc->link_latencies[i];
            ks_world_net_set_link_latency(run->world, cluster_node(run, c, (uint32_t)link->broker_a),
                                          cluster_node(run, c, (uint32_t)link->broker_b),
                                          (ks_time_ns)link->latency_ns);
        }
    }
    for (int32_t a = 0; a < run->cluster_count; a++) {
        for (int32_t b = a + 1; b < run->cluster_count; b++) {
            g_autoptr(GArray) nodes_a = cluster_nodes(run, a, true);
            g_autoptr(GArray) nodes_b = cluster_nodes(run, b, true);
            set_latency(run->world, (const ks_node_id *)(void *)nodes_a->data, nodes_a->len,
                        (const ks_node_id *)(void *)nodes_b->data, nodes_b->len,
                        (ks_time_ns)ks_scenario_cluster_link_latency(s, a, b));
        }
    }
}

/* ---- several clusters: the observers translate local indexes ---- */

static int32_t local_to_global(const int32_t *map, int32_t count, int32_t index)
{
    return index >= 0 && index < count ? map[index] : -1;
}

static void cluster_on_event(void *context, const struct ks_cluster_event *local)
{
    struct run_cluster *rc = context;
    struct run *run = rc->run;
    struct ks_cluster_event event = *local;
    bool user = local->topic_index >= 0 && local->topic_index < rc->topic_count;
    event.topic_index = local_to_global(rc->topic_global, rc->topic_count, local->topic_index);
    event.producer_index =
        local_to_global(rc->producer_global, rc->producer_count, local->producer_index);
    event.consumer_index =
        local_to_global(rc->consumer_global, rc->consumer_count, local->consumer_index);
    if (user) {
        run->leader_elections +=
            event.kind == KS_EV_LEADER_ELECTED || event.kind == KS_EV_UNCLEAN_ELECTION;
        run->unclean_elections += event.kind == KS_EV_UNCLEAN_ELECTION;
        run->isr_shrinks += event.kind == KS_EV_ISR_SHRINK;
        run->isr_expands += event.kind == KS_EV_ISR_EXPAND;
    }
    if (event_changes_availability(event.kind) && rc->availability != NULL) {
        ks_availability_mark_dirty(rc->availability);
    }
    if (event.kind == KS_EV_TXN_END) {
        struct ks_txn_outcome t = { event.producer_index, event.reason == KS_REASON_TXN_COMMITTED,
                                    event.offset_from, event.offset_to };
        g_array_append_val(run->txns, t);
    }
    int32_t words[5] = { (int32_t)event.kind, rc->index, event.broker, event.topic_index,
                         event.partition };
    ks_world_trace_mix(run->world, 0xD200u + (uint32_t)event.kind, KS_NODE_DRIVER, words,
                       sizeof words);
    g_autoptr(GString) detail = g_string_new(NULL);
    g_autoptr(GString) explain = g_string_new(NULL);
    ks_narrate_event(&rc->spec, local, detail, explain);
    g_string_prepend(detail, ": ");
    g_string_prepend(detail, rc->name);
    bool timeline = user ? event_on_timeline(run, &event)
                         : event.kind != KS_EV_OFFSET_COMMIT &&
                               (event.kind == KS_EV_UNCLEAN_ELECTION ||
                                event.kind == KS_EV_TRUNCATION || local->topic_index < 0 ||
                                ks_cluster_partition_count(rc->cluster, local->topic_index) <= 3);
    if (timeline) {
        note_suppressed(run, &event, detail);
    }
    struct ks_recorder_event_facts facts = event_facts(run, &event);
    add_event_facts(run, event.at_ns, ks_cluster_event_kind_name(event.kind), event.broker,
                    event.topic_index, event.partition, detail->str,
                    explain->len > 0 ? explain->str : NULL, timeline, &facts);
}

static void cluster_on_record(void *context, const struct ks_record_outcome *outcome)
{
    struct run_cluster *rc = context;
    struct ks_record_outcome copy = *outcome;
    copy.producer_index =
        local_to_global(rc->producer_global, rc->producer_count, outcome->producer_index);
    copy.topic_index = local_to_global(rc->topic_global, rc->topic_count, outcome->topic_index);
    run_on_record(rc->run, &copy);
}

/* producer_index is the run's already (identity_producers). */
static void cluster_on_consumed(void *context, const struct ks_consumed_record *consumed)
{
    struct run_cluster *rc = context;
    struct ks_consumed_record copy = *consumed;
    copy.consumer_index =
        local_to_global(rc->consumer_global, rc->consumer_count, consumed->consumer_index);
    copy.topic_index = local_to_global(rc->topic_global, rc->topic_count, consumed->topic_index);
    run_on_consumed(rc->run, &copy);
}

static void cluster_on_position(void *context, const struct ks_consumer_position *position)
{
    struct run_cluster *rc = context;
    struct ks_consumer_position copy = *position;
    copy.consumer_index =
        local_to_global(rc->consumer_global, rc->consumer_count, position->consumer_index);
    copy.topic_index = local_to_global(rc->topic_global, rc->topic_count, position->topic_index);
    run_on_position(rc->run, &copy);
}

/* ---- several clusters: faults ---- */

/* The broker and controller nodes of a cluster (view ids), ascending. */
static int32_t server_nodes(const struct run_cluster *rc, ks_node_id *out, int32_t max)
{
    int32_t count = 0;
    for (int32_t b = 1; b <= rc->view.cluster.broker_count && count < max; b++) {
        out[count++] = (ks_node_id)b;
    }
    const struct ks_cluster_config *config = &rc->view.cluster;
    if (config->controller_model == KS_CONTROLLER_MODEL_KRAFT && config->controller_count > 1) {
        for (int32_t i = 0; i < config->controller_count && count < max; i++) {
            out[count++] = ks_cluster_controller_voter_node(&rc->spec, i);
        }
    } else if (count < max) {
        out[count++] = ks_cluster_controller_node(&rc->spec);
    }
    return count;
}

static void report_fault(struct run *run, int32_t fault_index, const char *kind,
                         const char *detail, const char *explain)
{
    struct ks_fault_report report = {
        .at_ns = ks_world_now_ns(run->world),
        .kind = kind,
        .broker = -1,
        .topic_index = -1,
        .partition = -1,
        .detail = detail,
        .explain = explain,
        .fault_index = fault_index,
    };
    uint32_t words[2] = { (uint32_t)fault_index, (uint32_t)strlen(kind) };
    ks_world_trace_mix(run->world, KS_KIND_DRIVER_MIX_FAULT, KS_NODE_DRIVER, words, sizeof words);
    run_on_fault(run, &report);
}

/* One server node (view id) of cluster c goes down; the mirrors that talk
 * to a broker of it see their connections reset. */
static void server_crash(struct run *run, int32_t c, ks_node_id node, bool power)
{
    struct run_cluster *rc = &run->clusters[c];
    ks_world_node_crash(run->world, cluster_node(run, c, node), power);
    ks_cluster_on_node_crashed(rc->cluster, node);
    for (int32_t m = 0; m < run->mirror_count; m++) {
        const struct ks_mirror_spec *ms = run->mirrors[m].spec;
        if (node <= (ks_node_id)rc->view.cluster.broker_count &&
            (ms->source_cluster == c || ms->target_cluster == c)) {
            ks_mirror_on_broker_down(run->mirrors[m].mirror, ms->target_cluster == c,
                                     (int32_t)node);
        }
    }
}

static void server_restart(struct run *run, int32_t c, ks_node_id node)
{
    ks_node_id id = cluster_node(run, c, node);
    if (!ks_world_node_is_up(run->world, id)) {
        ks_world_node_restart(run->world, id);
        ks_cluster_on_node_restarted(run->clusters[c].cluster, node);
    }
}

static void cluster_crash(struct run *run, int32_t c, bool power)
{
    struct run_cluster *rc = &run->clusters[c];
    ks_node_id nodes[KS_BROKER_COUNT_MAX + 8];
    int32_t count = server_nodes(rc, nodes, (int32_t)G_N_ELEMENTS(nodes));
    for (int32_t i = 0; i < count; i++) {
        server_crash(run, c, nodes[i], power);
    }
    /* MM2 runs as a Connect worker on the target's side (a mirror's node
     * counts with its target; MirrorMakerConfig.workerConfig builds the
     * worker of a source->target flow from the target cluster's settings,
     * its offsets topic lives there): a crash of its target takes its tasks down,
     * and they resume from their last committed offsets when it comes back
     * (ks_mirror_on_crash, ks_mirror_on_restart). */
    for (int32_t m = 0; m < run->mirror_count; m++) {
        struct run_mirror *rm = &run->mirrors[m];
        if (rm->spec->target_cluster == c && ks_world_node_is_up(run->world, rm->node)) {
            ks_world_node_crash(run->world, rm->node, false);
            ks_mirror_on_crash(rm->mirror);
        }
    }
    rc->down = true;
    if (rc->availability != NULL) {
        ks_availability_mark_dirty(rc->availability);
    }
}

static void cluster_restart(struct run *run, int32_t c)
{
    struct run_cluster *rc = &run->clusters[c];
    ks_node_id nodes[KS_BROKER_COUNT_MAX + 8];
    int32_t count = server_nodes(rc, nodes, (int32_t)G_N_ELEMENTS(nodes));
    for (int32_t i = 0; i < count; i++) {
        server_restart(run, c, nodes[i]);
    }
    for (int32_t m = 0; m < run->mirror_count; m++) {
        struct run_mirror *rm = &run->mirrors[m];
        if (rm->spec->target_cluster == c && !ks_world_node_is_up(run->world, rm->node)) {
            ks_world_node_restart(run->world, rm->node);
            ks_mirror_on_restart(rm->mirror);
        }
    }
    rc->down = false;
    if (rc->availability != NULL) {
        ks_availability_mark_dirty(rc->availability);
    }
}

static void fire_restart(ks_world *world, void *context)
{
    (void)world;
    struct run_fault_fire *fire = context;
    struct run *run = fire->run;
    const struct ks_fault *f = &run->scenario->faults[fire->fault_index];
    if (run->final_phase) {
        return;
    }
    int32_t c = f->target.cluster_index;
    char detail[160];
    if (f->target.kind == KS_TARGET_BROKER) {
        g_snprintf(detail, sizeof detail, "fault %s: restart broker %d of cluster %s "
                   "(restart.after)", f->name, f->target.broker_id, run->clusters[c].name);
        report_fault(run, fire->fault_index, "restart", detail, NULL);
        server_restart(run, c, (ks_node_id)f->target.broker_id);
        return;
    }
    g_snprintf(detail, sizeof detail, "fault %s: restart cluster %s (restart.after)", f->name,
               run->clusters[c].name);
    report_fault(run, fire->fault_index, "restart", detail, NULL);
    cluster_restart(run, c);
}

static void heal_cut(struct run *run, guint index)
{
    struct run_cut cut = g_array_index(run->cuts, struct run_cut, index);
    ks_world_net_heal(run->world, cut.cut);
    g_array_remove_index(run->cuts, index);
}

static void fire_heal(ks_world *world, void *context)
{
    (void)world;
    struct run_fault_fire *fire = context;
    struct run *run = fire->run;
    for (guint i = 0; i < run->cuts->len && !run->final_phase; i++) {
        if (g_array_index(run->cuts, struct run_cut, i).fault_index == fire->fault_index) {
            char detail[160];
            g_snprintf(detail, sizeof detail, "fault %s: heal its cut (its duration passed)",
                       run->scenario->faults[fire->fault_index].name);
            report_fault(run, fire->fault_index, "heal", detail, NULL);
            heal_cut(run, i);
            return;
        }
    }
}

/* A failover (KIP-382 "failover and failback"): every consumer of the
 * group on its cluster stops (its application moves), and the standby
 * copies that scenario.c made join the group on the mirror's target at
 * this time, where they resume from the group's offsets there: the ones
 * MM2 synced (sync.group.offsets.enabled, KIP-545), else auto.offset.reset. */
/* A client that fails over leaves its cluster: its node (view id) of
 * cluster c goes down, if it is up. */
static void client_stop(struct run *run, int32_t c, ks_node_id node)
{
    if (ks_world_node_is_up(run->world, cluster_node(run, c, node))) {
        ks_world_node_crash(run->world, cluster_node(run, c, node), false);
        ks_cluster_on_node_crashed(run->clusters[c].cluster, node);
    }
}

/* A producer's failover (sim/scenario.c failover_producer): the
 * application stops producing to its cluster (its node goes down, so what
 * it had not sent is never sent), and its standby, which sim/scenario.c
 * starts at this time, writes to the remote topic on the target. Each
 * one's records are judged on the cluster it wrote them to. */
static void fire_failover_producer(struct run *run, int32_t fault_index)
{
    const struct ks_scenario *s = run->scenario;
    const struct ks_fault *f = &s->faults[fault_index];
    int32_t p = f->target.client_index;
    int32_t from = s->producer_cluster[p];
    const struct ks_mirror_spec *mirror = &s->mirrors[f->failover_mirror];
    struct run_cluster *rc = &run->clusters[from];
    client_stop(run, from, ks_cluster_producer_node(&rc->spec, run->producer_local[p]));
    char detail[400];
    g_snprintf(detail, sizeof detail,
               "fault %s: failover: producer %s moves from cluster %s to %s (it stops; its "
               "standby %s.%s writes to %s there)",
               f->name, s->producers[p].name, rc->name, s->clusters[mirror->target_cluster].name,
               s->producers[p].name, s->clusters[mirror->target_cluster].name,
               s->topics[mirror->remote_topic_index].name);
    report_fault(run, fault_index, "fault", detail,
                 "A producer that fails over points bootstrap.servers at the other cluster and "
                 "keeps producing. What its old cluster acknowledged stays judged there; what "
                 "it had not sent or not had acknowledged is not resent by the new one.");
}

static void fire_failover(struct run *run, int32_t fault_index)
{
    const struct ks_scenario *s = run->scenario;
    const struct ks_fault *f = &s->faults[fault_index];
    if (f->target.kind == KS_TARGET_PRODUCER) {
        fire_failover_producer(run, fault_index);
        return;
    }
    int32_t k = f->target.client_index;
    const struct ks_consumer_config *moved = &s->consumers[k];
    int32_t from = s->consumer_cluster[k];
    const struct ks_mirror_spec *mirror = &s->mirrors[f->failover_mirror];
    struct run_cluster *rc = &run->clusters[from];
    g_autoptr(GString) stopped = g_string_new(NULL);
    for (size_t j = 0; j < s->consumer_count; j++) {
        if (s->consumer_cluster[j] != from || s->consumers[j].topic_index != moved->topic_index ||
            strcmp(s->consumers[j].group_id, moved->group_id) != 0) {
            continue;
        }
        g_string_append_printf(stopped, "%s%s", stopped->len > 0 ? ", " : "", s->consumers[j].name);
        client_stop(run, from, ks_cluster_consumer_node(&rc->spec, run->consumer_local[j]));
    }
    char detail[400];
    g_snprintf(detail, sizeof detail,
               "fault %s: failover: group %s moves from cluster %s to %s (%s stop; their "
               "standbys read %s there from the group's offsets on %s%s)",
               f->name, moved->group_id, rc->name, s->clusters[mirror->target_cluster].name, stopped->str,
               s->topics[mirror->remote_topic_index].name,
               s->clusters[mirror->target_cluster].name,
               mirror->sync_group_offsets_enabled
                   ? ", synced by MM2"
                   : "; sync.group.offsets.enabled is false: none, so auto.offset.reset");
    report_fault(run, fault_index, "fault", detail,
                 "MirrorMaker 2 translates a group's committed offsets into checkpoints on the "
                 "target and, with sync.group.offsets.enabled, commits them to the group there, "
                 "conservatively: at or behind its real position. A group that fails over "
                 "resumes there and processes again what it had processed after them.");
    struct run_failover failover = { run->consumer_group[k], ks_world_now_ns(run->world) };
    g_array_append_val(run->failovers, failover);
}

/* The world's nodes of a partition side: its clusters', mirrors with targets. */
static GArray *side_nodes(const struct run *run, const struct ks_target_list *side,
                          GString *names)
{
    GArray *nodes = g_array_new(FALSE, FALSE, sizeof(ks_node_id));
    for (uint32_t i = 0; i < side->count; i++) {
        int32_t c = side->items[i].cluster_index;
        g_autoptr(GArray) one = cluster_nodes(run, c, true);
        g_array_append_vals(nodes, one->data, one->len);
        g_string_append_printf(names, "%s%s", i > 0 ? "," : "", run->clusters[c].name);
    }
    return nodes;
}

static void fire_fault(ks_world *world, void *context)
{
    (void)world;
    struct run_fault_fire *fire = context;
    struct run *run = fire->run;
    if (run->final_phase) {
        return;
    }
    const struct ks_fault *f = &run->scenario->faults[fire->fault_index];
    char detail[256];
    switch (f->action) {
    case KS_FAULT_CRASH: {
        int32_t c = f->target.cluster_index;
        bool power = f->mode == KS_CRASH_POWER;
        if (f->target.kind == KS_TARGET_BROKER) {
            /* one broker of a cluster (target = NAME:ID) */
            g_snprintf(detail, sizeof detail, "fault %s: crash broker %d of cluster %s%s",
                       f->name, f->target.broker_id, run->clusters[c].name,
                       power ? " (power loss)" : "");
            report_fault(run, fire->fault_index, "fault", detail, NULL);
            if (ks_world_node_is_up(run->world,
                                    cluster_node(run, c, (ks_node_id)f->target.broker_id))) {
                server_crash(run, c, (ks_node_id)f->target.broker_id, power);
            }
            if (run->clusters[c].availability != NULL) {
                ks_availability_mark_dirty(run->clusters[c].availability);
            }
            if (f->restart_after_ns >= 0) {
                ks_world_schedule(run->world, KS_NODE_DRIVER, (ks_time_ns)f->restart_after_ns,
                                  KS_KIND_DRIVER_RESTART, fire_restart, fire);
            }
            break;
        }
        g_snprintf(detail, sizeof detail, "fault %s: crash cluster %s (every broker and "
                   "controller%s)%s",
                   f->name, run->clusters[c].name, power ? ", power loss" : "",
                   f->restart_after_ns < 0 ? ": lost for good" : "");
        report_fault(run, fire->fault_index, "fault", detail,
                     power ? "A power loss of the whole cluster: what no broker fsynced is gone, "
                             "and no replica elsewhere in the cluster holds it."
                           : NULL);
        run->clusters[c].crash_event = (int32_t)run->events->len - 1; /* the line above */
        cluster_crash(run, c, power);
        if (f->restart_after_ns >= 0) {
            ks_world_schedule(run->world, KS_NODE_DRIVER, (ks_time_ns)f->restart_after_ns,
                              KS_KIND_DRIVER_RESTART, fire_restart, fire);
        }
        break;
    }
    case KS_FAULT_RESTART: {
        int32_t c = f->target.cluster_index;
        if (f->target.kind == KS_TARGET_BROKER) {
            g_snprintf(detail, sizeof detail, "fault %s: restart broker %d of cluster %s",
                       f->name, f->target.broker_id, run->clusters[c].name);
            report_fault(run, fire->fault_index, "restart", detail, NULL);
            server_restart(run, c, (ks_node_id)f->target.broker_id);
            if (run->clusters[c].availability != NULL) {
                ks_availability_mark_dirty(run->clusters[c].availability);
            }
            break;
        }
        g_snprintf(detail, sizeof detail, "fault %s: restart cluster %s", f->name,
                   run->clusters[c].name);
        report_fault(run, fire->fault_index, "restart", detail, NULL);
        cluster_restart(run, c);
        break;
    }
    case KS_FAULT_PARTITION: {
        g_autoptr(GString) left = g_string_new(NULL);
        g_autoptr(GString) right = g_string_new(NULL);
        g_autoptr(GArray) a = side_nodes(run, &f->side_a, left);
        g_autoptr(GArray) b = side_nodes(run, &f->side_b, right);
        g_snprintf(detail, sizeof detail,
                   "fault %s: partition clusters %s | %s (every link between them)", f->name,
                   left->str, right->str);
        report_fault(run, fire->fault_index, "fault", detail, NULL);
        struct run_cut cut = {
            fire->fault_index,
            ks_world_net_partition(run->world, (const ks_node_id *)(void *)a->data, a->len,
                                   (const ks_node_id *)(void *)b->data, b->len),
        };
        g_array_append_val(run->cuts, cut);
        if (f->duration_ns >= 0) {
            ks_world_schedule(run->world, KS_NODE_DRIVER, (ks_time_ns)f->duration_ns,
                              KS_KIND_DRIVER_UNDO, fire_heal, fire);
        }
        break;
    }
    case KS_FAULT_HEAL:
        for (guint i = run->cuts->len; i > 0; i--) {
            int32_t index = g_array_index(run->cuts, struct run_cut, i - 1).fault_index;
            if (f->heal_fault_index < 0 || f->heal_fault_index == index) {
                g_snprintf(detail, sizeof detail, "fault %s: heal %s", f->name,
                           run->scenario->faults[index].name);
                report_fault(run, fire->fault_index, "heal", detail, NULL);
                heal_cut(run, i - 1);
            }
        }
        break;
    case KS_FAULT_FAILOVER: fire_failover(run, fire->fault_index); break;
    default: ks_assert(false); /* scenario.c cluster_fault_rules */
    }
}

static void multi_faults_start(struct run *run)
{
    for (size_t i = 0; i < run->scenario->fault_count; i++) {
        run->fires[i] = (struct run_fault_fire){ run, (int32_t)i };
        ks_world_schedule(run->world, KS_NODE_DRIVER, (ks_time_ns)run->scenario->faults[i].at_ns,
                          KS_KIND_DRIVER_FAULT, fire_fault, &run->fires[i]);
    }
}

/* ---- several clusters: the mirrors' lag ---- */

/* mirror_lag now (sim/mirror_check.h): the source leaders' HW (the
 * mirror's last view of it when the source has no leader up) against what
 * the target acked. */
static int64_t mirror_lag_now(const struct run *run, const struct run_mirror *rm)
{
    const struct run_cluster *source = &run->clusters[rm->spec->source_cluster];
    int32_t t = rm->config.source_topic_index;
    int32_t count = rm->config.partition_count;
    int64_t *hw = rm->lag_hw;
    int64_t *next = rm->lag_next;
    for (int32_t p = 0; p < count; p++) {
        int32_t leader = ks_cluster_leader(source->cluster, t, p);
        struct ks_replica_state state;
        hw[p] = leader >= 1 && ks_cluster_replica_state(source->cluster, leader, t, p, &state)
                    ? state.hw
                    : ks_mirror_source_hw(rm->mirror, p);
        next[p] = ks_mirror_mirrored_next(rm->mirror, p);
    }
    return ks_mirror_lag(hw, next, count);
}

static void sample_mirrors(struct run *run)
{
    for (int32_t m = 0; m < run->mirror_count; m++) {
        struct run_mirror *rm = &run->mirrors[m];
        int64_t lag = mirror_lag_now(run, rm);
        rm->lag_max = MAX(rm->lag_max, lag);
        struct run_lag_sample sample = { ks_world_now_ns(run->world), m, lag };
        g_array_append_val(run->lag_samples, sample);
    }
}

/* ---- several clusters: the run ---- */

static void multi_start(struct run *run)
{
    for (int32_t c = 0; c < run->cluster_count; c++) {
        struct run_cluster *rc = &run->clusters[c];
        rc->observer = (struct ks_cluster_observer){
            .context = rc,
            .on_event = cluster_on_event,
            .on_record = cluster_on_record,
            .on_consumed = cluster_on_consumed,
            .on_position = cluster_on_position,
        };
        rc->cluster = ks_cluster_new(rc->world, &rc->spec, &rc->observer);
        rc->availability = ks_availability_new(&rc->view, rc->cluster, rc->world);
    }
    for (int32_t m = 0; m < run->mirror_count; m++) {
        struct run_mirror *rm = &run->mirrors[m];
        rm->mirror = ks_mirror_new(run->world, &rm->config, &rm->observer);
    }
    for (int32_t c = 0; c < run->cluster_count; c++) {
        ks_cluster_start(run->clusters[c].cluster);
    }
    for (int32_t m = 0; m < run->mirror_count; m++) {
        ks_mirror_start(run->mirrors[m].mirror);
    }
    multi_faults_start(run);
}

static void multi_availability_update(struct run *run, ks_time_ns now_ns)
{
    for (int32_t c = 0; c < run->cluster_count; c++) {
        ks_availability_update(run->clusters[c].availability, now_ns);
    }
}

static bool multi_converged(const struct run *run)
{
    for (int32_t c = 0; c < run->cluster_count; c++) {
        if (!run->clusters[c].down && !ks_cluster_converged(run->clusters[c].cluster)) {
            return false;
        }
    }
    for (int32_t m = 0; m < run->mirror_count; m++) {
        const struct run_mirror *rm = &run->mirrors[m];
        if (!run->clusters[rm->spec->source_cluster].down &&
            !run->clusters[rm->spec->target_cluster].down &&
            (!ks_mirror_caught_up(rm->mirror) || mirror_lag_now(run, rm) > 0)) {
            return false;
        }
    }
    return true;
}

/* `duration` ended: the lag then, the clusters' availability closed. */
static void multi_duration_end(struct run *run, ks_time_ns duration)
{
    for (int32_t c = 0; c < run->cluster_count; c++) {
        ks_availability_close(run->clusters[c].availability, duration);
    }
    for (int32_t m = 0; m < run->mirror_count; m++) {
        run->mirrors[m].lag_at_end = mirror_lag_now(run, &run->mirrors[m]);
    }
}

/* The final phase: stop producers, heal every link; a lost cluster stays down. */
static void multi_final(struct run *run, ks_time_ns deadline)
{
    for (int32_t c = 0; c < run->cluster_count; c++) {
        ks_cluster_stop_producers(run->clusters[c].cluster);
    }
    while (run->cuts->len > 0) {
        heal_cut(run, run->cuts->len - 1);
    }
    while (!multi_converged(run) && ks_world_now_ns(run->world) < deadline) {
        ks_time_ns next = ks_world_now_ns(run->world) + FINAL_STEP_NS;
        ks_world_run_until(run->world, next < deadline ? next : deadline);
    }
    char detail[200];
    g_snprintf(detail, sizeof detail,
               multi_converged(run)
                   ? "final phase: live clusters converged, mirrors caught up; final read"
                   : "final phase: not converged after final.drain; final read anyway");
    add_event(run, ks_world_now_ns(run->world), "final", -1, -1, -1, detail, NULL, true);
}

static uint64_t multi_unavailable_ns(const struct run *run)
{
    uint64_t total = 0;
    for (int32_t c = 0; c < run->cluster_count; c++) {
        total += ks_availability_total_ns(run->clusters[c].availability);
    }
    return total;
}

/* The mirror metrics, summed over the mirrors (sim/mirror_check.h). */
static void mirror_metrics(struct run *run, const struct final_read *read)
{
    const struct ks_scenario *s = run->scenario;
    double *m = run->metrics;
    bool *acks_none = g_new0(bool, s->producer_count + 1);
    for (size_t i = 0; i < s->producer_count; i++) {
        acks_none[i] = s->producers[i].acks == KS_ACKS_NONE;
    }
    const struct ks_read_record *all = (const struct ks_read_record *)(void *)read->records->data;
    const struct ks_read_record *copies =
        (const struct ks_read_record *)(void *)read->mirror_records->data;
    for (int32_t k = 0; k < run->mirror_count; k++) {
        const struct run_mirror *rm = &run->mirrors[k];
        GArray *source = g_array_new(FALSE, FALSE, sizeof(struct ks_read_record));
        GArray *target = g_array_new(FALSE, FALSE, sizeof(struct ks_read_record));
        for (guint i = 0; i < read->records->len; i++) {
            if (all[i].topic_index == rm->spec->topic_index) {
                g_array_append_val(source, all[i]);
            }
        }
        for (guint i = 0; i < read->mirror_records->len; i++) {
            if (copies[i].topic_index == rm->spec->remote_topic_index) {
                g_array_append_val(target, copies[i]);
            }
        }
        struct ks_mirror_check_input in = {
            .outcomes = (const struct ks_record_outcome *)(void *)run->outcomes->data,
            .outcome_count = run->outcomes->len,
            .producer_acks_none = acks_none,
            .producer_count = (int32_t)s->producer_count,
            .source_topic_index = rm->spec->topic_index,
            .source_lost = run->clusters[rm->spec->source_cluster].down,
            .source_read = (const struct ks_read_record *)(void *)source->data,
            .source_read_count = source->len,
            .target_read = (const struct ks_read_record *)(void *)target->data,
            .target_read_count = target->len,
        };
        struct ks_mirror_check_output out;
        ks_mirror_check_run(&in, &out);
        m[KS_METRIC_MIRRORED] += (double)out.mirrored;
        m[KS_METRIC_MIRROR_LOST] += (double)out.mirror_lost;
        m[KS_METRIC_MIRROR_UNMIRRORED] += (double)out.mirror_unmirrored;
        m[KS_METRIC_MIRROR_DUPLICATES] += (double)out.mirror_duplicates;
        m[KS_METRIC_MIRROR_LAG] += (double)rm->lag_at_end;
        m[KS_METRIC_MIRROR_LAG_MAX] = MAX(m[KS_METRIC_MIRROR_LAG_MAX], (double)rm->lag_max);
        g_array_free(source, TRUE);
        g_array_free(target, TRUE);
    }
    g_free(acks_none);
    /* failover_duplicates: per failover, its group's processings after it
     * of records the group had processed before it */
    GArray *mine = g_array_new(FALSE, FALSE, sizeof(struct ks_consumed_record));
    for (guint i = 0; i < run->failovers->len; i++) {
        const struct run_failover *f = &g_array_index(run->failovers, struct run_failover, i);
        g_array_set_size(mine, 0);
        for (guint j = 0; j < run->consumed->len; j++) {
            const struct ks_consumed_record *c =
                &g_array_index(run->consumed, struct ks_consumed_record, j);
            if (c->consumer_index >= 0 && run->consumer_group[c->consumer_index] == f->group) {
                g_array_append_val(mine, *c);
            }
        }
        m[KS_METRIC_FAILOVER_DUPLICATES] += (double)ks_mirror_failover_duplicates(
            (const struct ks_consumed_record *)(void *)mine->data, mine->len, f->at_ns);
    }
    g_array_free(mine, TRUE);
}

/* ---- the run ------------------------------------------------------------------------------------------- */

static void run_init(struct run *run, const struct ks_scenario *scenario,
                     const struct ks_run_options *options)
{
    memset(run, 0, sizeof *run);
    run->scenario = scenario;
    run->options = options;
    run->seed = options->seed_given ? options->seed : scenario->seed;
    run->spec = (struct ks_cluster_spec){
        .cluster = &scenario->cluster,
        .topics = scenario->topics,
        .topic_count = (int32_t)scenario->topic_count,
        .producers = scenario->producers,
        .producer_count = (int32_t)scenario->producer_count,
        .consumers = scenario->consumers,
        .consumer_count = (int32_t)scenario->consumer_count,
    };
    run->events = g_array_new(FALSE, TRUE, sizeof(struct run_event));
    run->steps = ks_steps_new();
    run->outcomes = g_array_new(FALSE, TRUE, sizeof(struct ks_record_outcome));
    run->consumed = g_array_new(FALSE, TRUE, sizeof(struct ks_consumed_record));
    run->txns = g_array_new(FALSE, TRUE, sizeof(struct ks_txn_outcome));
    run->samples = g_array_new(FALSE, TRUE, sizeof(struct run_sample));
    run->expectations = g_array_new(FALSE, TRUE, sizeof(struct expect_outcome));
    run->strings = g_string_chunk_new(4096);
    run->user_topic_count = (int32_t)scenario->topic_count;
    run->tp_base = g_new0(int32_t, scenario->topic_count + 1);
    for (size_t t = 0; t < scenario->topic_count; t++) {
        run->tp_base[t] = run->tp_count;
        run->tp_count += scenario->topics[t].partition_count;
    }
    run->produce_intervals = g_array_new(FALSE, FALSE, sizeof(struct ks_unavailable_interval));
    ks_group_tracker_init(&run->groups);
    /* Consumers with the same group.id form one group (numbered by first appearance). */
    run->consumer_group = g_new0(int32_t, scenario->consumer_count + 1);
    run->group_names = g_new0(const char *, scenario->consumer_count + 1);
    for (size_t c = 0; c < scenario->consumer_count; c++) {
        run->consumer_group[c] = -1;
        for (size_t d = 0; d < c; d++) {
            if (strcmp(scenario->consumers[d].group_id, scenario->consumers[c].group_id) == 0) {
                run->consumer_group[c] = run->consumer_group[d];
                break;
            }
        }
        if (run->consumer_group[c] < 0) {
            run->group_names[run->group_count] = scenario->consumers[c].group_id;
            run->consumer_group[c] = run->group_count++;
        }
    }
    run->quiet = g_new0(struct quiet_slot, ((size_t)run->tp_count + 1) * 2);
    run->remote_topic = g_new0(bool, scenario->topic_count + 1);
    run->lag_samples = g_array_new(FALSE, FALSE, sizeof(struct run_lag_sample));
    if (scenario->cluster_count > 0) {
        for (size_t m = 0; m < scenario->mirror_count; m++) {
            run->remote_topic[scenario->mirrors[m].remote_topic_index] = true;
        }
        multi_init(run);
    }
    ks_time_ns total = (ks_time_ns)scenario->duration_ns +
                       (scenario->final_heal ? (ks_time_ns)scenario->final_drain_ns : 0);
    run->sample_interval_ns = MAX(SAMPLE_INTERVAL_NS_MIN, total / SAMPLE_COUNT_TARGET);
    /* A large cluster is sampled less often, so that the samples stay under
     * SAMPLE_ROW_COUNT_MAX rows: at 10,000 partitions of RF 3 the interval
     * above made 3 million rows in a 10 s run, most of its memory and most of
     * its CPU time (the recorder's inserts). Up to 2,000 replicas nothing
     * changes. */
    uint64_t replica_count = 0;
    for (size_t t = 0; t < scenario->topic_count; t++) {
        replica_count += (uint64_t)scenario->topics[t].partition_count *
                         (uint64_t)scenario->topics[t].replication_factor;
    }
    uint64_t sample_count_max = MAX(1, SAMPLE_ROW_COUNT_MAX / MAX(1, replica_count));
    run->sample_interval_ns = MAX(run->sample_interval_ns, total / sample_count_max);
}

static void run_deinit(struct run *run)
{
    /* Torn down in reverse order of building; the pointers are cleared first
     * in case freeing the cluster reports anything to the observer. */
    struct ks_faults *faults = g_steal_pointer(&run->faults);
    ks_faults_free(faults);
    struct ks_cluster *cluster = g_steal_pointer(&run->cluster);
    ks_cluster_free(cluster);
    multi_deinit(run);
    ks_world_free(g_steal_pointer(&run->world));
    g_free(run->remote_topic);
    g_array_free(run->lag_samples, TRUE);
    for (guint i = 0; i < run->events->len; i++) {
        struct run_event *e = &g_array_index(run->events, struct run_event, i);
        g_free(e->detail);
        g_free(e->explain);
        g_free(e->picture);
    }
    g_array_free(run->events, TRUE);
    ks_steps_free(g_steal_pointer(&run->steps));
    g_array_free(run->outcomes, TRUE);
    g_array_free(run->consumed, TRUE);
    g_array_free(run->txns, TRUE);
    g_array_free(run->samples, TRUE);
    for (guint i = 0; i < run->expectations->len; i++) {
        struct expect_outcome *o = &g_array_index(run->expectations, struct expect_outcome, i);
        g_free(o->expr);
        g_free(o->actual);
    }
    g_array_free(run->expectations, TRUE);
    g_string_chunk_free(run->strings);
    g_free(run->tp_base);
    ks_availability_free(run->availability);
    g_array_free(run->produce_intervals, TRUE);
    ks_group_tracker_deinit(&run->groups);
    g_free(run->consumer_group);
    g_free(run->group_names);
    g_free(run->quiet);
    ks_checker_output_clear(&run->check);
}

static bool build(struct run *run, const char *run_dir, FILE *trace, GError **error)
{
    const struct ks_scenario *s = run->scenario;
    struct ks_world_config config = {
        .seed = run->seed,
        .run_dir = run_dir,
        .node_count = multi(run) ? multi_node_count(run) : ks_cluster_node_count(&run->spec),
        .network_latency_ns = (ks_time_ns)s->network_latency_ns,
        .network_jitter_ns = (ks_time_ns)s->network_jitter_ns,
        .disk_fsync_latency_ns = (ks_time_ns)s->disk_fsync_latency_ns,
        .disk_bandwidth_bytes_per_s = s->disk_bandwidth_bytes_per_s,
        .disk_writeback_expire_ns = s->disk_writeback_expire_ns == KS_INT64_UNSET
                                        ? KS_TIME_NEVER
                                        : (ks_time_ns)s->disk_writeback_expire_ns,
        .disk_writeback_interval_ns = s->disk_writeback_interval_ns == KS_INT64_UNSET
                                          ? 0
                                          : (ks_time_ns)s->disk_writeback_interval_ns,
        .disk_writeback_aligned = s->cluster.task_phase == KS_TASK_PHASE_ALIGNED,
        .disk_dirty_limit_bytes = (uint64_t)s->disk_dirty_limit_bytes,
        .disk_page_cache_bytes = (uint64_t)s->disk_page_cache_bytes,
    };
    run->world = ks_world_new(&config, error);
    if (run->world == NULL) {
        return false;
    }
    for (size_t i = 0; i < s->link_latency_count; i++) {
        const struct ks_link_latency *link = &s->link_latencies[i];
        ks_world_net_set_link_latency(run->world, (ks_node_id)link->broker_a,
                                      (ks_node_id)link->broker_b, (ks_time_ns)link->latency_ns);
    }
    if (multi(run)) {
        multi_build(run);
    }
    if (trace != NULL) {
        ks_world_set_trace(run->world, trace);
    }
    return true;
}

/* simulate() for several clusters. */
static void simulate_clusters(struct run *run)
{
    const struct ks_scenario *s = run->scenario;
    multi_start(run);
    ks_world_set_after_event(run->world, after_event, run);
    ks_world_schedule(run->world, KS_NODE_DRIVER, 0, KS_KIND_DRIVER_SAMPLE, sample_partitions, run);
    ks_time_ns duration = (ks_time_ns)s->duration_ns;
    ks_world_run_until(run->world, duration);
    multi_duration_end(run, duration);
    run->final_phase = true;
    if (s->final_heal) {
        multi_final(run, duration + (ks_time_ns)s->final_drain_ns);
    }
}

static void simulate(struct run *run)
{
    const struct ks_scenario *s = run->scenario;
    if (multi(run)) {
        simulate_clusters(run);
        return;
    }
    run->observer = (struct ks_cluster_observer){
        .context = run,
        .on_event = run_on_event,
        .on_record = run_on_record,
        .on_consumed = run_on_consumed,
        .on_position = run_on_position,
    };
    run->cluster = ks_cluster_new(run->world, &run->spec, &run->observer);
    run->availability = ks_availability_new(s, run->cluster, run->world);
    run->faults = ks_faults_new(run->world, run->cluster, s, &run->spec, run_on_fault, run);
    ks_world_set_after_event(run->world, after_event, run);
    ks_cluster_start(run->cluster);
    ks_faults_start(run->faults);
    ks_world_schedule(run->world, KS_NODE_DRIVER, 0, KS_KIND_DRIVER_SAMPLE, sample_partitions, run);
    ks_time_ns duration = (ks_time_ns)s->duration_ns;
    ks_world_run_until(run->world, duration);
    ks_availability_close(run->availability, duration);
    run->final_phase = true;
    ks_faults_stop(run->faults);
    if (s->final_heal) {
        ks_cluster_stop_producers(run->cluster);
        ks_faults_heal_everything(run->faults);
        ks_time_ns deadline = duration + (ks_time_ns)s->final_drain_ns;
        while (!ks_cluster_converged(run->cluster) && ks_world_now_ns(run->world) < deadline) {
            ks_time_ns next = ks_world_now_ns(run->world) + FINAL_STEP_NS;
            ks_world_run_until(run->world, next < deadline ? next : deadline);
        }
        char detail[160];
        bool converged = ks_cluster_converged(run->cluster);
        g_snprintf(detail, sizeof detail,
                   converged ? "final phase: replicas converged; final read"
                             : "final phase: not converged after final.drain; final read anyway");
        add_event(run, ks_world_now_ns(run->world), "final", -1, -1, -1, detail, NULL, true);
        capture_step(run, false);
    }
}

/* Phases 2-5. A world that cannot be built is a host failure, and so is a
 * host I/O failure under the disk while the model runs or is read (the real
 * disk is full): host_fail (sim/disk.c) jumps back here, and the run ends
 * with exit 3, its message, and nothing recorded. Only pointers the caller
 * owns cross the setjmp, so nothing here is indeterminate after the jump. */
static bool simulate_and_judge(struct run *run, const char *run_dir, FILE *trace,
                               struct ks_run_result *result, GError **error)
{
    jmp_buf escape;
    if (setjmp(escape) != 0) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_IO,
                    "host I/O error: %s; the run stopped at %.3f s simulated, and nothing was "
                    "recorded",
                    ks_world_host_error(run->world), (double)ks_world_now_ns(run->world) / 1e9);
        return false;
    }
    if (!build(run, run_dir, trace, error)) {
        return false;
    }
    ks_world_set_host_escape(run->world, &escape);
    simulate(run);
    struct final_read read;
    do_final_read(run, &read);
    run_checker(run, &read);
    if (multi(run)) {
        mirror_metrics(run, &read);
    }
    final_read_clear(&read);
    note_out_of_scope(run);
    compute_metrics(run);
    memcpy(result->metrics, run->metrics, sizeof result->metrics);
    result->txn_metrics = ks_cluster_spec_has_txn(&run->spec);
    result->mirror_metrics = run->mirror_count > 0;
    result->eos_metrics = false;
    for (size_t i = 0; i < run->scenario->consumer_count; i++) {
        result->eos_metrics |= run->scenario->consumers[i].output_topic_index >= 0;
    }
    result->trace_hash = ks_world_trace_hash(run->world);
    evaluate_expectations(run, result);
    ks_world_set_host_escape(run->world, NULL);
    return true;
}

static char *wall_clock_text(void)
{
    GDateTime *now = g_date_time_new_now_utc();
    char *text = g_date_time_format(now, "%Y-%m-%dT%H:%M:%SZ");
    g_date_time_unref(now);
    return text;
}

/* Records the run; returns false with *error on a write failure (exit 3). */
static bool record(struct run *run, struct ks_recorder *rec, struct ks_run_result *result,
                   const char *started_at, const char *run_dir, GError **error)
{
    int64_t busy_before = ks_recorder_busy_us(rec);
    char *params = ks_scenario_params_json(run->scenario);
    /* Absolute, so that dump-log and describe find it from any folder. */
    char *kept_dir =
        run->options->run_dir_discarded ? NULL : g_canonicalize_filename(run_dir, NULL);
    result->run_id = ks_recorder_begin_run(rec, run->scenario->name, run->seed, params, started_at,
                                           kept_dir, error);
    g_free(kept_dir);
    g_free(params);
    if (result->run_id == 0) {
        return false;
    }
    if (run->options->set_count > 0) {
        g_autoptr(JsonBuilder) builder = json_builder_new();
        json_builder_begin_array(builder);
        for (size_t i = 0; i < run->options->set_count; i++) {
            json_builder_add_string_value(builder, run->options->set_assignments[i]);
        }
        json_builder_end_array(builder);
        g_autoptr(JsonNode) root = json_builder_get_root(builder);
        g_autofree char *overrides = json_to_string(root, FALSE);
        ks_recorder_set_run_overrides(rec, overrides);
    }
    record_rows(run, rec);
    record_summary(rec, result);
    int64_t wall_ms = (g_get_monotonic_time() - run->start_us) / 1000;
    int64_t record_ms = (ks_recorder_busy_us(rec) - busy_before) / 1000;
    bool ok = ks_recorder_finish_run(rec, wall_ms, record_ms, ks_world_now_ns(run->world),
                                     ks_world_event_count(run->world), result->trace_hash,
                                     result->verdict, error);
    result->record_ms = (ks_recorder_busy_us(rec) - busy_before) / 1000;
    if (!ok) {
        result->run_id = 0;
    }
    return ok;
}

int ks_run_scenario(const struct ks_scenario *scenario, const struct ks_run_options *options,
                    struct ks_run_result *result, GError **error)
{
    g_return_val_if_fail(scenario != NULL && scenario->finalized, 3);
    memset(result, 0, sizeof *result);
    struct run run;
    run_init(&run, scenario, options);
    run.start_us = g_get_monotonic_time();
    result->seed = run.seed;
    char *started_at = wall_clock_text();
    struct prepared prepared = {
        .run_dir = options->run_dir != NULL ? g_strdup(options->run_dir)
                                            : ks_run_default_dir(scenario, run.seed),
        .lock_fd = -1,
    };
    const char *run_dir = prepared.run_dir;
    struct ks_recorder *own_recorder = NULL;
    struct ks_recorder *rec = options->recorder;
    int code = 2;

    /* 1. prepare. Every input is checked before anything is written (the
     * folder, the trace file, the database, each by a check that writes
     * nothing, the database by the recorder's own); then the outputs are
     * made in an order where a later failure can undo the earlier ones
     * exactly; a file that existed before is never removed. */
    if (!check_run_dir(run_dir, error) || !check_disk_space(scenario, run_dir, error) ||
        (options->trace_path != NULL &&
         !check_trace(options->trace_path, rec == NULL ? options->db_path : NULL, run_dir,
                      error)) ||
        !lock_run_dir(&prepared, error)) {
        goto done;
    }
    if (rec == NULL && options->db_path != NULL) {
        own_recorder = ks_recorder_open(options->db_path, error);
        if (own_recorder == NULL) {
            goto done;
        }
        rec = own_recorder;
    }
    if (options->trace_path != NULL &&
        !open_trace(&prepared, options->trace_path, own_recorder != NULL ? options->db_path : NULL,
                    error)) {
        goto done;
    }
    clear_run_dir(run_dir);

    /* 2-5. build, run, judge; a host failure is exit 3 with its message. */
    code = 3;
    if (!simulate_and_judge(&run, run_dir, prepared.trace, result, error)) {
        goto done;
    }

    /* 6. record and print. */
    if (run.progress_shown) {
        fprintf(stderr, "\n");
    }
    ks_world_set_trace(run.world, NULL);
    if (!close_trace(&prepared, options->trace_path, error)) {
        goto done;
    }
    if (rec != NULL && !record(&run, rec, result, started_at, run_dir, error)) {
        goto done;
    }
    result->wall_ms = (g_get_monotonic_time() - run.start_us) / 1000;
    if (options->out != NULL) {
        if (options->json) {
            print_json(options->out, &run, result);
        } else {
            print_text(options->out, &run, result);
        }
        fflush(options->out);
    }
    if (options->progress && rec != NULL) {
        /* Wall-clock figures go to a terminal's stderr only: stdout stays
         * byte-identical between runs (golden timelines). */
        fprintf(stderr,
                "ksim: run %" PRId64 " recorded in %s; %" PRId64 " ms wall, %" PRId64
                " ms (%.0f%%) of it recording; logs in %s\n",
                result->run_id, options->db_path != NULL ? options->db_path : "the database",
                result->wall_ms, result->record_ms,
                result->wall_ms > 0 ? 100.0 * (double)result->record_ms / (double)result->wall_ms
                                    : 0.0,
                run_dir);
    }
    code = result->expect_failed > 0 ? 1 : 0;

done:
    if (run.world != NULL) {
        ks_world_set_trace(run.world, NULL);
    }
    close_trace(&prepared, options->trace_path, NULL);
    if (code == 2) {
        undo_prepared(&prepared, options->trace_path); /* bad input: leave nothing behind */
    }
    ks_recorder_close(own_recorder);
    run_deinit(&run);
    release_prepared(&prepared);
    g_free(started_at);
    return code;
}
