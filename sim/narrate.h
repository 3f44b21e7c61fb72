/*
** sim/narrate.h: the prose of the timeline and of --explain, written from the
** structured facts the model reports (struct ks_cluster_event, core/cluster.h).
** core/ writes no narration; this is the one place that turns an event into
** words a student can follow.
*/
#pragma once

#include "../core/cluster.h"
#include "steps.h"

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

/* Appends the --explain picture of a step that changed a log: one line per
 * replica of the step's partition, as KIP-101 draws logs, each offset (or
 * run of offsets) shown by the digit of the leader epoch it was written in
 * (epoch mod 10), '|' at the high watermark, 'x' where this step dropped
 * offsets (the range [dropped_from, dropped_to) of dropped_broker; -1 when
 * none), '.' beyond the log end; a replica whose broker is down shows the
 * last LEO and HW it was seen with; a log that goes on past the picture
 * ends in '>'. Every line starts with indent; lines are at most 96
 * characters with a 12-character indent. The offsets shown are the whole
 * log when it is short, else the stretch around the HW and log end of
 * dropped_broker (of every replica when -1) and the dropped range, named in
 * the first line. */
void ks_narrate_log_picture(const struct ks_cluster_spec *spec, const struct ks_steps *steps,
                            const struct ks_step *step, int32_t dropped_broker,
                            int64_t dropped_from, int64_t dropped_to, const char *indent,
                            GString *out);
