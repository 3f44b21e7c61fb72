/*
** sim/faults_int.h: what sim/faults.c (the schedule: timers, triggers,
** targets, the final phase) and sim/fault_fire.c (what each action does when
** it fires and when it is undone) share, and nobody else uses. The rows of
** sim/fault_actions.c name the fire and undo functions declared here.
*/
#pragma once

#include "fault_actions.h"
#include "faults.h"

#include <glib.h>

#define KS__NO_TP ((struct ks_tp){ -1, -1 })

/* The run-time state of scenario->faults[index]. */
struct ks__fault_state {
    struct ks_faults *owner; /* not owned */
    int32_t index;
    bool fired;     /* F1 */
    bool triggered; /* its `when` has held (it fires then, or after `delay`) */
    bool applied;   /* fire took effect (it did not report itself skipped) */
    bool undone;    /* undone by its timer or a heal: nothing left to undo */
    GArray *nodes;  /* ks_node_id: what the action touched (for undo and restart) */
    GArray *cuts;   /* ks_cut_id of a partition fault */
    /* rolling-restart (sim/fault_fire.c): the step under way (an index into
     * nodes), what it waits for, and its catch-up timer. */
    guint roll_step;
    enum ks__roll_phase {
        KS__ROLL_IDLE,
        KS__ROLL_STOPPING,
        KS__ROLL_DOWN,
        KS__ROLL_CATCHING_UP,
        KS__ROLL_DONE
    } roll_phase;
    ks_time_ns roll_back_ns; /* when the step's broker restarted */
    ks_timer_id roll_timer;  /* the catch-up timeout */
    bool roll_check_pending; /* a zero-delay check of the ISRs is scheduled */
    guint stop_done;         /* stop: how many of nodes have finished shutting down */
};

/* The context of a node's "stopped" driver event (one per node, so that
 * nothing is allocated per event). */
struct ks__stop_context {
    struct ks_faults *owner; /* not owned */
    ks_node_id node;
};

struct ks_faults {
    ks_world *world;                    /* not owned */
    struct ks_cluster *cluster;         /* not owned */
    const struct ks_scenario *scenario; /* not owned */
    const struct ks_cluster_spec *spec; /* not owned */
    ks_fault_report_fn *report;
    void *report_context;
    struct ks__fault_state *states;
    size_t state_count;
    size_t pending_trigger_count;
    bool stopped;
    uint32_t node_count;
    int64_t *crash_count;                   /* [node] */
    int64_t *restart_count;                 /* [node] */
    bool *slowed;                           /* [node]: a slow fault set a delay on it */
    struct ks__fault_state **stopping;      /* [node]: the stop or rolling-restart fault whose
                                          controlled shutdown of it is under way; NULL */
    struct ks__stop_context *stop_contexts; /* [node] */
    int32_t *tp_base;                       /* [topic_index]: first slot in elections */
    int64_t *elections;                     /* [tp_base[topic] + partition] */
    GString *detail;                        /* the line being reported */
    int64_t skipped_count;                  /* `skipped` lines (faults_skipped) */
    int32_t current_fault;  /* the fault being fired or undone (its reports name it), or -1 */
    bool resolving_restart; /* resolve_target for a restart: bare `controller` of a quorum
                               names a controller that is down */
};

/* ---- sim/faults.c ------------------------------------------------------------ */

static inline const struct ks_fault *ks__faults_fault(const struct ks_faults *faults,
                                                      const struct ks__fault_state *state)
{
    return &faults->scenario->faults[state->index];
}

/* Reports faults->detail as a timeline line of `kind`. */
void ks__faults_report(struct ks_faults *faults, const char *kind, int32_t broker, struct ks_tp tp,
                       const char *explain);
/* Reports faults->detail as a "skipped" line: a fault, or one of its nodes,
 * that would change nothing (every skip goes through here). */
void ks__faults_skip(struct ks_faults *faults, int32_t broker, struct ks_tp tp);
/* Appends "broker 2, producer p1" for nodes. */
void ks__faults_append_nodes(const struct ks_faults *faults, GString *out, const GArray *nodes);
/* The broker id if nodes is exactly one broker, else -1. */
int32_t ks__faults_broker_of(const struct ks_faults *faults, const GArray *nodes);
bool ks__faults_is_broker(const struct ks_faults *faults, ks_node_id node);
/* Resolves a list of targets now, appending their nodes; false (with *why)
 * if one names nothing at this moment, or the list names no node. */
bool ks__faults_resolve_list(struct ks_faults *faults, const struct ks_target_list *list,
                             GArray *nodes, GString *why);
/* Folds (fault index, what, its nodes) into the trace hash (F2); what: 0
 * skipped, 1 fired, 2 undone by its timer. */
void ks__faults_mix(struct ks_faults *faults, const struct ks__fault_state *state, uint32_t what);
/* Schedules the row's undo after delay_ns (nothing if delay_ns < 0) as a
 * driver timer of `kind`. */
void ks__faults_schedule_undo(struct ks_faults *faults, struct ks__fault_state *state,
                              int64_t delay_ns, uint32_t kind);
/* Undoes a fault now (F5: one that is not undone yet): row->undo with
 * `label` (NULL: silently). Its timer, if any, then does nothing. */
void ks__faults_undo(struct ks_faults *faults, struct ks__fault_state *state, const char *label);
/* Restarts a node that is down (F3), or reports it skipped; `why` starts
 * the line ("fault back", "final phase"). Returns whether it restarted. */
bool ks__faults_restart_node(struct ks_faults *faults, ks_node_id node, const char *why);
/* The other node of a processor (a consumer with output.topic and its
 * producer: one application, so they crash and restart together), or 0. */
ks_node_id ks__faults_processor_partner(const struct ks_faults *faults, ks_node_id node);
/* Begins the controlled shutdown of broker `node` for `state` (a stop or a
 * rolling-restart step): the cluster is told, and when the broker reports
 * that it stopped, its node goes down and `state`'s row hears of it
 * (ks__fault_stopped). Returns false, changing nothing, if the broker is
 * down or stopping already (the caller reports the skip). */
bool ks__faults_stop_node(struct ks_faults *faults, struct ks__fault_state *state, ks_node_id node);

/* ---- sim/fault_fire.c: one fire (and undo) per action, named by its row ------- */

ks__fault_fire_fn ks__fault_fire_crash;
ks__fault_fire_fn ks__fault_fire_restart;
ks__fault_fire_fn ks__fault_fire_partition;
ks__fault_fire_fn ks__fault_fire_heal;
ks__fault_fire_fn ks__fault_fire_slow;
ks__fault_fire_fn ks__fault_fire_pause;
ks__fault_fire_fn ks__fault_fire_resume;
ks__fault_fire_fn ks__fault_fire_drop;
ks__fault_fire_fn ks__fault_fire_corrupt;
ks__fault_fire_fn ks__fault_fire_rewind;
ks__fault_fire_fn ks__fault_fire_failover;
ks__fault_fire_fn ks__fault_fire_stop;
ks__fault_fire_fn ks__fault_fire_rolling_restart;

ks__fault_undo_fn ks__fault_undo_crash;
ks__fault_undo_fn ks__fault_undo_partition;
ks__fault_undo_fn ks__fault_undo_slow;
ks__fault_undo_fn ks__fault_undo_pause;
ks__fault_undo_fn ks__fault_undo_drop;
ks__fault_undo_fn ks__fault_undo_stop;

/* A broker that `state` stopped has finished its controlled shutdown and its
 * node is down (sim/fault_fire.c: stop schedules its restart.after, a
 * rolling restart its downtime). */
void ks__fault_stopped(struct ks_faults *faults, struct ks__fault_state *state, ks_node_id node);
/* After a cluster event that can end a rolling restart's wait (an ISR
 * expand): schedules the check of every rolling restart that waits. */
void ks__faults_rolling_poke(struct ks_faults *faults);
