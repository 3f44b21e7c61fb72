/*
** sim/faults.h: the fault schedule of a run (SPEC section 2, [fault NAME]).
**
** Timed faults become driver events (node 0) at their `at`; triggered faults
** are evaluated after every world event and fire once, the first time their
** condition holds (then after `delay`). Targets are resolved when the fault
** fires. Every action is reported (for the timeline and the events table)
** and folded into the trace hash.
*/
#pragma once

#include "../core/cluster.h"
#include "scenario.h"
#include "world.h"

/* Driver timer kinds (the trace names events by these codes). */
#define KS_KIND_DRIVER_FAULT     0xD001u
#define KS_KIND_DRIVER_UNDO      0xD002u
#define KS_KIND_DRIVER_RESTART   0xD003u
#define KS_KIND_DRIVER_SAMPLE    0xD004u
#define KS_KIND_DRIVER_STOPPED   0xD005u /* a broker's controlled shutdown finished: node down */
#define KS_KIND_DRIVER_ROLL      0xD006u /* a rolling restart's step: restart, check, timeout */
#define KS_KIND_DRIVER_MIX_FAULT 0xD101u

struct ks_fault_report {
    ks_time_ns at_ns;
    const char *kind;    /* "fault", "heal", "restart", "resume", "skipped" (static) */
    int32_t broker;      /* a broker the action names, or -1 */
    int32_t topic_index; /* or -1 */
    int32_t partition;   /* or -1 */
    const char *detail; /* borrowed for the call: "crash broker 2 (leader(orders-0), power loss)" */
    const char *explain; /* borrowed, may be NULL: what it means for Kafka */
    int32_t fault_index; /* the scenario fault this line is about (its firing, trigger,
                          * undo or restart.after), or -1 (the final phase) */
};

typedef void ks_fault_report_fn(void *context, const struct ks_fault_report *report);

struct ks_faults;

/* All arguments are borrowed and must outlive the object. */
struct ks_faults *ks_faults_new(ks_world *world, struct ks_cluster *cluster,
                                const struct ks_scenario *scenario,
                                const struct ks_cluster_spec *spec, ks_fault_report_fn *report,
                                void *report_context);
void ks_faults_free(struct ks_faults *faults); /* NULL is a no-op */

/* Schedules the timed faults. */
void ks_faults_start(struct ks_faults *faults);
/* Call from the world's after-event hook: evaluates pending triggers. */
void ks_faults_after_event(struct ks_faults *faults);
/* Feed every cluster event (counts elections for the elected() trigger). */
void ks_faults_on_cluster_event(struct ks_faults *faults, const struct ks_cluster_event *event);
/* The final phase starts: no fault fires any more (pending ones are dropped). */
void ks_faults_stop(struct ks_faults *faults);
/* The final heal (final.heal): heal every cut, clear loss and slowness,
 * resume paused nodes, restart crashed ones. Reports each step. */
void ks_faults_heal_everything(struct ks_faults *faults);

/* How many `skipped` timeline lines the faults gave so far: a fault, or one
 * node of it, that fired and would have changed nothing (faults_skipped). */
int64_t ks_faults_skipped_count(const struct ks_faults *faults);

/* Names a node for the timeline: "broker 2", "controller", "producer p1". */
void ks_faults_node_name(const struct ks_faults *faults, ks_node_id node, char *buffer,
                         size_t buffer_bytes);
