/*
** sim/fault_actions.h: the fault-action table, one row per value of `action`
** in a [fault NAME] section (SPEC section 2).
**
** A row is everything ksim knows about one action:
**
**   keys         the keys it takes besides action/at/when/delay, in the order
**                its JSON and INI forms list them, and which it needs
**   target       whether it takes a `target` and of which kind
**   rule         its load-time rules beyond those (NULL: none), checked when a
**                scenario is finalized; errors are "FILE:LINE: ..." through
**                struct ks_fault_site
**   schedule_rule  its rules against the other faults (NULL: none), checked
**                once every fault is filled: a fault that the schedule makes
**                a no-op whatever happens (a restart with nothing before it
**                that could stop the node) is refused here rather than
**                reported as skipped when it fires
**   healable     `action = heal` with `fault = NAME` may undo it
**   bare_heal    `action = heal` without `fault` undoes it
**   fire, undo   what it does to the running world and cluster, and how that
**                is undone (by its duration or restart.after timer, or by a
**                heal); both narrate what they do (sim/fault_fire.c)
**
** and ks_fault_json / ks_fault_write_ini write any fault back as the canonical
** JSON of runs.params and as INI text (explore's schedules and reproducers)
** from the row's keys, so that nothing outside this table switches on the
** action.
**
** How a key is written, parsed and stored is a property of the key, not of
** the action (enum ks_fault_key_kind), with two exceptions: `to` is a list of
** targets for partition and a position for rewind, and `target` is one
** target for most actions and a list for rolling-restart, so each has two
** kinds.
**
** Adding an action: a value of enum ks_fault_action (sim/scenario.h), its row
** (sim/fault_actions.c), its fire and undo functions (sim/fault_fire.c,
** declared in sim/faults_int.h). A new key also needs a kind below, its row in
** the [fault] key table (sim/scenario_keys.c), its parser (fault_key in
** sim/scenario.c) and its JSON and INI forms (sim/fault_actions.c).
*/
#pragma once

#include "scenario.h"

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <stdio.h>

/* How a [fault] key is written and where it goes in struct ks_fault. */
enum ks_fault_key_kind {
    KS_FAULT_KEY_TARGET,          /* target: one target -> target */
    KS_FAULT_KEY_MODE,            /* mode: process | power -> mode */
    KS_FAULT_KEY_RESTART_AFTER,   /* restart.after: a duration -> restart_after_ns */
    KS_FAULT_KEY_DURATION,        /* duration: a duration -> duration_ns */
    KS_FAULT_KEY_GROUPS,          /* groups: targets | targets -> side_a, side_b */
    KS_FAULT_KEY_ISOLATE,         /* isolate: one target -> side_a */
    KS_FAULT_KEY_FROM,            /* from: targets -> side_a */
    KS_FAULT_KEY_TO,              /* to: targets -> side_b */
    KS_FAULT_KEY_DISK_LATENCY,    /* disk.latency: a duration -> disk_latency_ns */
    KS_FAULT_KEY_NETWORK_LATENCY, /* network.latency: a duration -> network_latency_ns */
    KS_FAULT_KEY_LOSS,            /* loss: 1% | 0.5% | 10000ppm -> loss_ppm */
    KS_FAULT_KEY_PARTITION,       /* partition: a topic-partition -> corrupt_tp */
    KS_FAULT_KEY_BYTES,           /* bytes: 1..4096 -> corrupt_bytes */
    KS_FAULT_KEY_POSITION_BYTES,  /* position.bytes: >= 0 -> corrupt_position_bytes */
    KS_FAULT_KEY_FAULT,           /* fault: a fault's name -> heal_fault_index */
    KS_FAULT_KEY_REWIND_TO,       /* to: earliest | latest | offset | time -> rewind_* */
    KS_FAULT_KEY_TARGETS,         /* target: a list of targets -> side_a (rolling-restart) */
    KS_FAULT_KEY_DOWNTIME,        /* downtime: a duration -> downtime_ns */
    KS_FAULT_KEY_CATCH_UP_TIMEOUT /* catch.up.timeout: a duration -> catch_up_timeout_ns */
};

struct ks_fault_key {
    const char *name; /* as written in the file */
    enum ks_fault_key_kind kind;
    const char *needs; /* NULL: optional. Else the key is required and this is
                                    the hint of "[fault F] (ACTION) needs 'KEY' (HINT)" */
};

/* What `target` an action takes. Every action that takes one needs one. */
enum ks_fault_target_rule {
    KS_FAULT_TARGET_NONE,    /* takes no target */
    KS_FAULT_TARGET_ANY,     /* any target */
    KS_FAULT_TARGET_BROKER,  /* one that names brokers: not producer(...) or consumer(...) */
    KS_FAULT_TARGET_CONSUMER, /* consumer(NAME) */
    KS_FAULT_TARGET_CLIENT    /* consumer(NAME) or producer(NAME) */
};

/* The loader's view of one [fault NAME] section, for the load-time rules.
 * Its functions are implemented by the loader (sim/scenario.c). */
struct ks_fault_site {
    const struct ks_scenario *scenario; /* being finalized: for `rule`, faults after this
                                           one are not filled yet, except their names;
                                           for `schedule_rule`, every fault is */
    const struct ks_fault *fault;       /* this fault, every key parsed */
    const void *section;                /* not owned: the loader's section */
    GError **error;
};

/* Whether `key` is given (in the file or by --set) in this section. */
bool ks_fault_site_has(const struct ks_fault_site *site, const char *key);
/* The action of scenario->faults[fault_index] as written ("" if none): that
 * fault may come later in the file and not be finalized yet. Borrowed. */
const char *ks_fault_site_written_action(const struct ks_fault_site *site, int32_t fault_index);
/* Sets *site->error to "FILE:LINE: MESSAGE", citing `key`'s line (NULL: the
 * section header's). Returns false. */
bool ks_fault_site_fail(const struct ks_fault_site *site, enum ks_scenario_error code,
                        const char *key, const char *format, ...) G_GNUC_PRINTF(4, 5);

typedef bool ks_fault_rule_fn(const struct ks_fault_site *site);

/* Run-time hooks (sim/faults_int.h has the state they work on). `fire`
 * runs after the generic part resolved `target` (for actions that take one)
 * into state->nodes and mixed the fault into the trace hash; it returns
 * whether the action took effect (false: it reported itself skipped).
 * `undo` reverses what fire did to the world; `label` starts its timeline line
 * ("fault split ends", "fault mend heals split"); NULL: undo silently. */
struct ks_faults;
struct ks__fault_state;
typedef bool ks__fault_fire_fn(struct ks_faults *faults, struct ks__fault_state *state);
typedef void ks__fault_undo_fn(struct ks_faults *faults, struct ks__fault_state *state,
                               const char *label);

#define KS_FAULT_ACTION_KEY_COUNT_MAX 8

/* catch.up.timeout's default: 5 minutes. */
#define KS_FAULT_CATCH_UP_TIMEOUT_NS_DEFAULT ((int64_t)300 * 1000000000)

struct ks_fault_action_row {
    const char *name;                                        /* action = NAME */
    enum ks_fault_action action;                             /* the row's index in the table */
    struct ks_fault_key keys[KS_FAULT_ACTION_KEY_COUNT_MAX]; /* ends at name == NULL */
    enum ks_fault_target_rule target;
    const char *target_wrong;        /* BROKER, CONSUMER: the error for a target of another kind */
    ks_fault_rule_fn *rule;          /* NULL: no rule beyond keys and target */
    ks_fault_rule_fn *schedule_rule; /* NULL: none; see the file comment */
    const char *keys_doc;            /* docs/scenario-format.md: what it takes, in words */
    bool healable;                   /* heal with fault = NAME undoes it */
    bool bare_heal;                  /* heal without fault undoes it */
    ks__fault_fire_fn *fire;
    ks__fault_undo_fn *undo; /* NULL: nothing to undo */
    const char *undo_label;  /* its timer's words: "fault NAME <undo_label>: ..." */
};

/* The row of an action. Static storage. */
const struct ks_fault_action_row *ks_fault_action_row(enum ks_fault_action action);
/* The row named `name`, or NULL. Static storage. */
const struct ks_fault_action_row *ks_fault_action_find(const char *name);
/* The key `key` of an action, or NULL if the action does not take it. */
const struct ks_fault_key *ks_fault_action_key(const struct ks_fault_action_row *row,
                                               const char *key);
/* The row's key names separated by spaces ("target mode restart.after").
 * Owned: g_free. */
char *ks_fault_action_keys_text(const struct ks_fault_action_row *row);
/* Which actions ks_fault_action_list names. */
enum ks_fault_action_set {
    KS_FAULT_ACTIONS_ALL,
    KS_FAULT_ACTIONS_HEALABLE, /* those a heal may name */
    KS_FAULT_ACTIONS_BARE_HEAL /* those a heal without `fault` undoes */
};
/* The names of a set of actions, in table order, as a sentence with
 * `conjunction` before the last: "crash, restart, ... corrupt or rewind".
 * Owned: g_free. */
char *ks_fault_action_list(enum ks_fault_action_set set, const char *conjunction);

/* Sets every field of *fault to its default (the keys' defaults), with the
 * given name, header line and action. */
void ks_fault_init(struct ks_fault *fault, const char *name, uint32_t line,
                   enum ks_fault_action action);
/* The action's rules for a fault whose keys all parsed: its target, the keys
 * it needs, its own rule. Sets *site->error and returns false on the first
 * that fails. */
bool ks_fault_check(const struct ks_fault_site *site);

/* The action's rules against the rest of the schedule (its schedule_rule),
 * once every fault of site->scenario is filled. Sets *site->error and
 * returns false if it fails. */
bool ks_fault_check_schedule(const struct ks_fault_site *site);

/* The partition a fault is about, for the events table: its target's
 * (leader(TP), follower(TP), followers(TP)) or else its `partition` key's;
 * {-1, -1} if none. */
struct ks_tp ks_fault_tp(const struct ks_fault *fault);

/* One fault as an object of runs.params' "faults" array: name, action, at or
 * when and delay, then the row's keys in row order, every key with its
 * effective value (defaults filled). */
void ks_fault_json(JsonBuilder *builder, const struct ks_scenario *scenario,
                   const struct ks_fault *fault);
/* One fault as the body of a [fault NAME] section (without the header): at
 * (or when, and delay if any), action, then the row's keys that differ from
 * their defaults (mode, loss, partition, bytes and rewind's to always), one
 * "key = value" line each. Durations are written in whole milliseconds where
 * that is exact ("1500ms"), else in their shortest exact form. Loading the
 * text gives the same fault. `scenario` is the one the fault belongs to
 * (topic, client and fault names). */
void ks_fault_write_ini(GString *out, const struct ks_scenario *scenario,
                        const struct ks_fault *fault);

/* The [fault] part of docs/scenario-format.md that the table gives: the
 * action table and what a heal undoes. */
void ks_fault_actions_write_reference(FILE *out);
