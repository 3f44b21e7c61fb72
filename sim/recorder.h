/*
** sim/recorder.h: the SQLite database of runs (SPEC section 4).
**
** One database holds many runs. Every run is written in ONE transaction
** (begin_run .. finish_run), so a killed run leaves no half run behind. The
** runner keeps a run's rows in memory and writes them all at the end, so the
** write lock is held for milliseconds, not for the whole simulated run, and
** parallel jobs can share one file (WAL mode, a busy timeout).
**
** A database is "ours" when it is empty, carries ksim's application_id, or
** (made by an earlier ksim, which set none) has every table and column of
** SPEC 4 and a schema_version we know. Anything else (another program's
** tables, a newer ksim, not SQLite at all) is refused with
** KS_RECORDER_ERROR_FOREIGN and left untouched: the CLI maps that to exit 2.
*/
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* 3: the typed columns of events, table replica_logs, partition_state's
 * ELR lists; 2: runs.run_dir and PRAGMA application_id (1: ksim before them). */
#define KS_RECORDER_SCHEMA_VERSION 4
#define KS_RECORDER_APPLICATION_ID 0x6B73696D /* "ksim" */

#define KS_RECORDER_ERROR (ks_recorder_error_quark())
GQuark ks_recorder_error_quark(void);

enum ks_recorder_error {
    KS_RECORDER_ERROR_OPEN,    /* cannot open or create the file (bad input: exit 2) */
    KS_RECORDER_ERROR_FOREIGN, /* not a ksim database, or a newer schema (exit 2) */
    KS_RECORDER_ERROR_WRITE    /* a write failed during a run (exit 3) */
};

struct ks_recorder;

/* Opens (creating if needed) the database at path for writing: checks that it
 * can be written and is ours, then creates or migrates the schema and turns
 * on WAL. Returns NULL with *error set otherwise (an empty path, a read-only
 * file, another program's file: KS_RECORDER_ERROR_OPEN or _FOREIGN, exit 2);
 * then nothing was written. Owned: ks_recorder_close. */
struct ks_recorder *ks_recorder_open(const char *path, GError **error);
/* Opens an existing database read-only (describe, plot); same ownership
 * check; never writes, and leaves no -wal or -shm file behind. */
struct ks_recorder *ks_recorder_open_readonly(const char *path, GError **error);
void ks_recorder_close(struct ks_recorder *recorder); /* NULL is a no-op; rolls back an open run */

/* The run folder of run run_id (0: the latest run) as runs.run_dir recorded
 * it: sets *run_id_out and *run_dir_out (owned: g_free; NULL when the run
 * kept none, or the database predates the column) and returns true; false
 * with *error when there is no such run. */
bool ks_recorder_run_dir(struct ks_recorder *recorder, int64_t run_id, int64_t *run_id_out,
                         char **run_dir_out, GError **error);

/* The underlying handle, for read queries (describe). Borrowed. */
struct sqlite3 *ks_recorder_db(struct ks_recorder *recorder);

/* Starts the run's transaction and inserts its runs row. started_at is the
 * wall-clock start as ISO 8601 text (it never reaches the simulated world);
 * run_dir the run folder kept for dump-log (NULL: none kept). Returns the
 * new run_id, or 0 with *error set. */
int64_t ks_recorder_begin_run(struct ks_recorder *recorder, const char *scenario, uint64_t seed,
                              const char *params_json, const char *started_at, const char *run_dir,
                              GError **error);

/* runs.overrides of the open run: the --set assignments as given, a JSON
 * array of "KEY=VALUE" texts (NULL: none). */
void ks_recorder_set_run_overrides(struct ks_recorder *recorder, const char *overrides_json);

/* Rows of the open run. Text arguments are copied; NULL text and negative
 * ids (-1) are stored as SQL NULL. The first failure is remembered and
 * reported by finish_run; later calls do nothing.
 * Events are numbered in the order they are added: events.event_id is 1 for
 * the run's first event, 2 for the next, ... (anomalies.cause_event_id
 * refers to it). */
/* The typed columns of an events row, where the event's kind has them
 * (docs/database.md says which kind fills which). NULL text and -1 numbers
 * are stored as SQL NULL. Text is borrowed for the call. */
struct ks_recorder_event_facts {
    const char *reason; /* "session_expired", ... (enum ks_event_reason) */
    const char *fault;  /* the scenario fault the line is about */
    int32_t leader_old;
    int32_t leader; /* the new leader (elections), the leader followed (truncation) */
    int32_t leader_epoch_old;
    int32_t leader_epoch;
    const char *replicas; /* "1,2,3", assignment order */
    const char *isr_old;  /* "1,2,3", sorted */
    const char *isr;      /* the new ISR, sorted */
    const char *elr_old;  /* KIP-966: the ELR before and after, sorted ("" empty) */
    const char *elr;
    int32_t last_known_leader; /* KIP-966: LastKnownElr after the change */
    int64_t offset;            /* the offset asked for / the new position */
    int64_t offset_from;       /* [offset_from, offset_to): offsets removed */
    int64_t offset_to;
    int64_t leo_old;
    int64_t leo;
    int64_t hw_old;
    int64_t hw;
    int64_t log_start_offset;
    int64_t record_count;
    const char *producer; /* names in the scenario */
    const char *consumer;
    const char *group_id;
    int32_t generation;
    const char *error;   /* the Kafka error name */
    const char *explain; /* the --explain sentences, NULL if none */
    int32_t timeline;    /* 1: on the printed timeline, 0: not; -1: NULL */
};

static inline void ks_recorder_event_facts_init(struct ks_recorder_event_facts *facts)
{
    *facts = (struct ks_recorder_event_facts){
        .leader_old = -1,
        .leader = -1,
        .leader_epoch_old = -1,
        .leader_epoch = -1,
        .last_known_leader = -1,
        .offset = -1,
        .offset_from = -1,
        .offset_to = -1,
        .leo_old = -1,
        .leo = -1,
        .hw_old = -1,
        .hw = -1,
        .log_start_offset = -1,
        .record_count = -1,
        .generation = -1,
        .timeline = -1,
    };
}

/* facts may be NULL (every typed column NULL). */
void ks_recorder_add_event(struct ks_recorder *recorder, uint64_t t_ns, const char *kind,
                           int32_t broker, const char *topic, int32_t partition, const char *detail,
                           const struct ks_recorder_event_facts *facts);

struct ks_recorder_record_row {
    const char *producer;
    int64_t seq;
    const char *key; /* NULL: null key */
    const char *topic;
    int32_t partition;    /* -1: NULL */
    int64_t offset;       /* -1: NULL */
    int64_t sent_ns;      /* -1: NULL (a record the producer never reported) */
    int64_t acked_ns;     /* -1: NULL */
    const char *outcome;  /* "acked" | "failed" | "unknown" */
    const char *final;    /* "present" | "missing" | "duplicated" | "cleaned_up"; NULL: NULL */
    int64_t final_offset; /* -1: NULL */
    int32_t acked_broker; /* -1: NULL */
    int32_t acked_leader_epoch; /* -1: NULL */
};
void ks_recorder_add_record(struct ks_recorder *recorder, const struct ks_recorder_record_row *row);

struct ks_recorder_state_row {
    uint64_t t_ns;
    const char *topic;
    int32_t partition;
    int32_t broker;
    int32_t replica_index;      /* position in the assignment (describe prints Replicas in order) */
    const char *role;           /* "leader" | "follower" | "offline" | "none" */
    int64_t leo;                /* -1: NULL (broker down) */
    int64_t hw;                 /* -1: NULL */
    int32_t leader_epoch;       /* -1: NULL */
    const char *isr;            /* "2,3", the controller's view */
    int32_t leader;             /* the controller's leader; -1: none */
    const char *elr;            /* KIP-966 eligible leader replicas, "2,3" or "" */
    const char *last_known_elr; /* KIP-966 LastKnownElr, "3" or "" */
};
void ks_recorder_add_partition_state(struct ks_recorder *recorder,
                                     const struct ks_recorder_state_row *row);

/* One replica's log at one step (sim/steps.h): replica_logs(run_id,
 * event_id, t_ns, topic, partition, broker, replica_index, state, leo, hw,
 * log_start_offset, leader_epoch, epochs, leader, isr). */
struct ks_recorder_replica_log_row {
    int64_t event_id; /* events.event_id of the step's event */
    uint64_t t_ns;
    const char *topic;
    int32_t partition;
    int32_t broker;
    int32_t replica_index;
    const char *state;        /* "leader" | "follower" | "none" | "offline" */
    int64_t leo;              /* -1: NULL (offline) */
    int64_t hw;               /* -1: NULL */
    int64_t log_start_offset; /* -1: NULL */
    int32_t leader_epoch;     /* the broker's view; -1: NULL */
    const char *epochs;       /* JSON [[epoch, start_offset], ...]; NULL offline */
    int32_t leader;           /* the controller's leader; -1: none */
    const char *isr;          /* the controller's ISR, sorted "1,2" */
};
void ks_recorder_add_replica_log(struct ks_recorder *recorder,
                                 const struct ks_recorder_replica_log_row *row);

/* value_text non-NULL stores text (trace_hash), else value as a number
 * (an integer when it has no fraction). */
void ks_recorder_add_summary(struct ks_recorder *recorder, const char *metric, double value,
                             const char *value_text);
/* One anomalies row: a range of records of one kind. -1 and NULL fields are
 * stored as SQL NULL. */
struct ks_recorder_anomaly_row {
    const char *kind;
    const char *topic;
    int32_t partition;
    const char *detail;
    const char *producer; /* lost, duplicate, reordered */
    const char *group_id; /* consumed_* */
    int64_t first_seq;
    int64_t last_seq;
    int64_t first_offset;
    int64_t last_offset;
    int64_t record_count;
    int32_t acked_broker;
    int32_t acked_leader_epoch;
    const char *cause;      /* "truncation", ...; NULL: unknown or not applicable */
    int64_t cause_event_id; /* events.event_id of the same run; -1: NULL */
};
void ks_recorder_add_anomaly_row(struct ks_recorder *recorder,
                                 const struct ks_recorder_anomaly_row *row);
/* A row with only kind, topic, partition and detail. */
void ks_recorder_add_anomaly(struct ks_recorder *recorder, const char *kind, const char *topic,
                             int32_t partition, const char *detail);
/* unavailability(run_id, topic, partition, view, reason, start_ns, end_ns):
 * view is "cluster" (unavailable_ms) or "produce" (produce_unavailable_ms). */
void ks_recorder_add_unavailability(struct ks_recorder *recorder, const char *topic,
                                    int32_t partition, const char *view, const char *reason,
                                    uint64_t start_ns, uint64_t end_ns);
/* mirror_lag(run_id, t_ns, mirror, lag): a [mirror NAME]'s mirror_lag at
 * one sample time (schema version 4). */
void ks_recorder_add_mirror_lag(struct ks_recorder *recorder, uint64_t t_ns, const char *mirror,
                                int64_t lag);
void ks_recorder_add_expectation(struct ks_recorder *recorder, const char *expr, const char *actual,
                                 bool passed);
/* topics(run_id, topic, partitions, replication_factor, configs): for describe. */
void ks_recorder_add_topic(struct ks_recorder *recorder, const char *topic, int32_t partitions,
                           int32_t replication_factor, const char *configs);

/* Completes the runs row and commits. On failure rolls back (nothing of the
 * run stays) and returns false with *error set (KS_RECORDER_ERROR_WRITE). */
bool ks_recorder_finish_run(struct ks_recorder *recorder, int64_t wall_ms, int64_t record_ms,
                            uint64_t sim_ns, uint64_t events, uint64_t trace_hash,
                            const char *verdict, GError **error);
/* Rolls back the open run, if any. */
void ks_recorder_abort_run(struct ks_recorder *recorder);

/* Wall time spent inside the recorder since open, in microseconds. */
int64_t ks_recorder_busy_us(const struct ks_recorder *recorder);
