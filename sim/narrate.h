/*
** sim/narrate.h: the prose of the timeline and of --explain, written from the
** structured facts the model reports (struct ks_cluster_event, core/cluster.h).
** core/ writes no narration; this is the one place that turns an event into
** words a student can follow.
*/
#pragma once

#include "../core/cluster.h"

#include <glib.h>

/* Replaces detail with the event's one-line timeline text (the events
 * table's `detail`) and explain with its --explain sentences, left empty
 * when the event has none. Besides the event it reads only the scenario's
 * configs in spec (borrowed): topic names (__consumer_offsets is the topic
 * after the spec's when there are consumers), producers' acks, consumers'
 * names and groups, replication.truncation and the min-ISR rule. Never
 * truncates. */
void ks_narrate_event(const struct ks_cluster_spec *spec, const struct ks_cluster_event *event,
                      GString *detail, GString *explain);
