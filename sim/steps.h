/*
** sim/steps.h: every replica's log at each step that matters.
**
** A step is one event of the run (an election, an ISR change, a truncation,
** a recovery, retention, a fault, the final read) and one user partition it
** concerns. At a step the driver takes a picture of each replica of the
** partition as its broker holds it at that instant: online or not, role, LEO,
** HW, log start offset, the broker's leader epoch, and the leader-epoch cache
** (the epoch of every offset: offsets [start_k, start_k+1) were written in
** epoch_k, the last entry runs to the LEO). It also keeps the controller's
** leader, epoch and ISR. Pictures are taken when the event is reported, so a
** step shows the state right after a model event (a truncation is done, an
** election decided) and right before a fault takes effect (a crash report
** comes before the crash).
**
** Three readers: sim/cause.c (did the new leader hold a record? what did a
** replica hold before its recovery?), sim/narrate.c (the --explain
** pictures) and the recorder (table replica_logs, for ksim report).
**
** Pictures are read-only copies: taking one never touches the world, so it
** cannot change a run. Storage is three flat arrays (steps, views, epoch
** entries); pointers returned are borrowed and valid until the next add.
*/
#pragma once

#include "../core/cluster.h"

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

struct ks_epoch_entry {
    int32_t epoch;
    int64_t start_offset;
};

struct ks_log_view {
    int32_t broker;
    int32_t replica_index; /* place in the assignment */
    bool online;           /* false: no replica in memory (the fields below are -1) */
    bool broker_up;        /* false: the broker is down; true with !online: the replica
                            * is not created yet (topic creation reaches it later) */
    enum ks_role role;
    int64_t leo;
    int64_t hw;
    int64_t log_start_offset;
    int32_t leader_epoch; /* the broker's own view */
    guint epoch_first;    /* into the steps' epoch entries */
    int32_t epoch_count;
};

struct ks_step {
    int32_t event; /* index in the run's events (events.event_id - 1) */
    ks_time_ns at_ns;
    int32_t topic_index;
    int32_t partition;
    int32_t leader;       /* the controller's leader, -1 none */
    int32_t leader_epoch; /* the controller's */
    int32_t isr_count;
    int32_t isr[KS_REPLICATION_FACTOR_MAX]; /* the controller's ISR, as stored */
    guint view_first;
    int32_t view_count;
};

struct ks_steps;

struct ks_steps *ks_steps_new(void);        /* owned: ks_steps_free */
void ks_steps_free(struct ks_steps *steps); /* NULL is a no-op */

/* Takes the picture of (topic_index, partition) now, as step `event`.
 * Events are added in order (event never decreases). */
void ks_steps_capture(struct ks_steps *steps, struct ks_cluster *cluster, int32_t event,
                      ks_time_ns at_ns, int32_t topic_index, int32_t partition);

/* Building a step by hand (tests; capture uses them): begin copies the
 * step's header (its view fields are set here), add_view appends one
 * replica with its epoch entries (copied). */
void ks_steps_begin(struct ks_steps *steps, const struct ks_step *step);
void ks_steps_add_view(struct ks_steps *steps, const struct ks_log_view *view,
                       const struct ks_epoch_entry *entries, int32_t entry_count);

guint ks_steps_count(const struct ks_steps *steps);
const struct ks_step *ks_steps_get(const struct ks_steps *steps, guint index);
const struct ks_log_view *ks_steps_view(const struct ks_steps *steps, const struct ks_step *step,
                                        int32_t view_index);
const struct ks_epoch_entry *ks_steps_epochs(const struct ks_steps *steps,
                                             const struct ks_log_view *view);

/* The step of `event` for (topic_index, partition), or NULL. */
const struct ks_step *ks_steps_find(const struct ks_steps *steps, int32_t event,
                                    int32_t topic_index, int32_t partition);
/* broker's view in step, or NULL if it holds no replica there. */
const struct ks_log_view *ks_steps_view_of(const struct ks_steps *steps, const struct ks_step *step,
                                           int32_t broker);
/* broker's latest online view of (topic_index, partition) in a step before
 * event `before_event`, or NULL. */
const struct ks_log_view *ks_steps_last_online(const struct ks_steps *steps, int32_t before_event,
                                               int32_t topic_index, int32_t partition,
                                               int32_t broker);

/* The epoch the view's offset was written in, or -1 (not in the log, or
 * the cache does not cover it). */
int32_t ks_log_view_epoch_at(const struct ks_steps *steps, const struct ks_log_view *view,
                             int64_t offset);
/* Does the view hold the record written at offset in leader epoch epoch
 * (-1: any epoch)? Offline views hold nothing. */
bool ks_log_view_holds(const struct ks_steps *steps, const struct ks_log_view *view, int64_t offset,
                       int32_t epoch);
