/*
** sim/describe.c: `ksim describe DB [--run ID] [--at TIME]`, the topic state
** of a recorded run as `kafka-topics.sh --describe` prints it
** (kafka-reference 8.1: TAB separated, partition lines begin with a TAB;
** Elr and LastKnownElr as since Kafka 3.8, empty unless the run had
** eligible.leader.replicas.enable, N/A for a run recorded before ksim kept
** them), plus each partition's LEO and HW (the leader's), after one ksim line that
** names the run, the sample's time and the run folder (runs.run_dir) where
** `ksim dump-log` finds its logs.
**
** The state comes from partition_state at the last sample at or before TIME
** (default: the run's last sample); the run is the latest unless --run.
** With --at a second line names that sample and the next one ("Sample:
** 5.000s answers --at 5.050s ..."). A partition line ends with "Offline:
** 1,2" (a ksim field) when those replicas' brokers were down then.
** TopicId is left out: ksim has no topic ids ("omitted when unknown").
**
** Then the availability lines (from the unavailability table; left out for
** a database made before it existed): both views summed up to the described
** time, and per partition each view's milliseconds and whether it was
** unavailable at that time, and why (sim/availability.h):
**
**   Availability up to 30.510s: unavailable_ms 7002 (the cluster's view), ...
**   <TAB>Partition: orders-0<TAB>UnavailableMs: 7002<TAB>ProduceUnavailableMs: 7596<TAB>At: available
**
** TIME is a duration as scenario files write it (the same strict parser:
** exact decimals, a unit, no sign, hex, nan, inf or overflow); a bare
** number means seconds.
*/
#include "commands.h"
#include "recorder.h"
#include "scenario_int.h" /* ks__parse_duration_ns: one duration syntax everywhere */

#include <glib.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

/* "12s", "1500ms", "2m", "250us", "10ns", or a bare number of seconds;
 * false with *message (owned) otherwise. */
static bool parse_time_ns(const char *text, int64_t *out, char **message)
{
    bool bare = text[0] != '\0' && strspn(text, "0123456789.") == strlen(text);
    g_autofree char *with_unit = bare ? g_strconcat(text, "s", NULL) : g_strdup(text);
    return ks__parse_duration_ns(with_unit, true, out, message);
}

static int64_t single_int(sqlite3 *db, const char *sql, int64_t a, int64_t b, bool *found)
{
    sqlite3_stmt *stmt = NULL;
    int64_t value = -1;
    *found = false;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK) {
        int count = sqlite3_bind_parameter_count(stmt);
        if (count >= 1) {
            sqlite3_bind_int64(stmt, 1, a);
        }
        if (count >= 2) {
            sqlite3_bind_int64(stmt, 2, b);
        }
        if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_type(stmt, 0) != SQLITE_NULL) {
            value = sqlite3_column_int64(stmt, 0);
            *found = true;
        }
    }
    sqlite3_finalize(stmt);
    return value;
}

/* The text of a column that may be NULL (a database from before the column,
 * or a value not recorded): Kafka's "N/A" for a field a broker did not report. */
static char *column_text_or_na(sqlite3_stmt *stmt, int column)
{
    const unsigned char *text = sqlite3_column_text(stmt, column);
    return g_strdup(text != NULL ? (const char *)text : "N/A");
}

static void print_partition(sqlite3 *db, int64_t run_id, int64_t t_ns, const char *topic,
                            int32_t partition)
{
    sqlite3_stmt *stmt = NULL;
    /* elr and last_known_elr came with schema version 3: a database migrated
     * from an older one has them NULL in its old rows, and one that was not
     * migrated (describe only reads) has no such columns. */
    static const char *const queries[] = {
        "SELECT broker, role, leo, hw, isr, leader, elr, last_known_elr FROM partition_state "
        "WHERE run_id = ? AND t_ns = ? AND topic = ? AND \"partition\" = ? ORDER BY replica_index",
        "SELECT broker, role, leo, hw, isr, leader, NULL, NULL FROM partition_state "
        "WHERE run_id = ? AND t_ns = ? AND topic = ? AND \"partition\" = ? ORDER BY replica_index",
    };
    for (size_t q = 0; q < G_N_ELEMENTS(queries) && stmt == NULL; q++) {
        if (sqlite3_prepare_v2(db, queries[q], -1, &stmt, NULL) != SQLITE_OK) {
            sqlite3_finalize(stmt);
            stmt = NULL;
        }
    }
    sqlite3_bind_int64(stmt, 1, run_id);
    sqlite3_bind_int64(stmt, 2, t_ns);
    sqlite3_bind_text(stmt, 3, topic, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(stmt, 4, partition);
    GString *replicas = g_string_new(NULL);
    GString *offline = g_string_new(NULL);
    char *isr = NULL;
    char *elr = NULL;
    char *last_known_elr = NULL;
    int64_t leader = -1;
    char leo[32] = "-";
    char hw[32] = "-";
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        int64_t broker = sqlite3_column_int64(stmt, 0);
        g_string_append_printf(replicas, "%s%" PRId64, replicas->len ? "," : "", broker);
        const unsigned char *role = sqlite3_column_text(stmt, 1);
        if (role != NULL && strcmp((const char *)role, "offline") == 0) {
            g_string_append_printf(offline, "%s%" PRId64, offline->len ? "," : "", broker);
        }
        if (isr == NULL) {
            const unsigned char *text = sqlite3_column_text(stmt, 4);
            isr = g_strdup(text != NULL ? (const char *)text : "");
            leader =
                sqlite3_column_type(stmt, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64(stmt, 5);
            elr = column_text_or_na(stmt, 6);
            last_known_elr = column_text_or_na(stmt, 7);
        }
        if (broker == leader && sqlite3_column_type(stmt, 2) != SQLITE_NULL) {
            g_snprintf(leo, sizeof leo, "%" PRId64, (int64_t)sqlite3_column_int64(stmt, 2));
            g_snprintf(hw, sizeof hw, "%" PRId64, (int64_t)sqlite3_column_int64(stmt, 3));
        }
    }
    sqlite3_finalize(stmt);
    char leader_text[32] = "none";
    if (leader >= 0) {
        g_snprintf(leader_text, sizeof leader_text, "%" PRId64, leader);
    }
    /* kafka-topics.sh since 3.8 (kafka-reference 8.1): Elr and LastKnownElr
     * after Isr; then ksim's LEO and HW of the leader and Offline: replicas
     * whose broker was down at the sample (the controller may still name a
     * down leader until its session expires, and then LEO and HW are "-"). */
    printf("\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s\tElr: %s\t"
           "LastKnownElr: %s\tLEO: %s\tHW: %s%s%s\n",
           topic, partition, leader_text, replicas->str, isr != NULL ? isr : "",
           elr != NULL ? elr : "N/A", last_known_elr != NULL ? last_known_elr : "N/A", leo, hw,
           offline->len > 0 ? "\tOffline: " : "", offline->str);
    g_free(isr);
    g_free(elr);
    g_free(last_known_elr);
    g_string_free(replicas, TRUE);
    g_string_free(offline, TRUE);
}

/* Milliseconds of view in [0, t_ns] for one partition, or summed over every
 * partition when topic is NULL; *reason_out (may be NULL) gets the reason of
 * an interval that covers t_ns (owned), or NULL. */
static int64_t unavailable_ms(sqlite3 *db, int64_t run_id, const char *topic, int32_t partition,
                              const char *view, int64_t t_ns, char **reason_out)
{
    sqlite3_stmt *stmt = NULL;
    int64_t total_ns = 0;
    if (reason_out != NULL) {
        *reason_out = NULL;
    }
    if (sqlite3_prepare_v2(db,
                           "SELECT start_ns, end_ns, reason FROM unavailability WHERE run_id = ? "
                           "AND view = ? AND (?3 IS NULL OR (topic = ?3 AND \"partition\" = ?4)) "
                           "ORDER BY start_ns",
                           -1, &stmt, NULL) != SQLITE_OK) {
        return 0;
    }
    sqlite3_bind_int64(stmt, 1, run_id);
    sqlite3_bind_text(stmt, 2, view, -1, SQLITE_STATIC);
    if (topic != NULL) {
        sqlite3_bind_text(stmt, 3, topic, -1, SQLITE_TRANSIENT);
    } else {
        sqlite3_bind_null(stmt, 3);
    }
    sqlite3_bind_int(stmt, 4, partition);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        int64_t start = sqlite3_column_int64(stmt, 0);
        int64_t end = sqlite3_column_int64(stmt, 1);
        if (start < t_ns) {
            total_ns += (end < t_ns ? end : t_ns) - start;
        }
        if (reason_out != NULL && *reason_out == NULL && start <= t_ns && t_ns < end) {
            const unsigned char *reason = sqlite3_column_text(stmt, 2);
            *reason_out = g_strdup(reason != NULL ? (const char *)reason : "unknown");
        }
    }
    sqlite3_finalize(stmt);
    return total_ns / 1000000;
}

static void print_availability(sqlite3 *db, int64_t run_id, int64_t t_ns)
{
    sqlite3_stmt *probe = NULL;
    bool present = sqlite3_prepare_v2(db, "SELECT 1 FROM unavailability LIMIT 0", -1, &probe,
                                      NULL) == SQLITE_OK;
    sqlite3_finalize(probe);
    if (!present) {
        return; /* recorded before ksim kept the intervals */
    }
    printf("Availability up to %.3fs: unavailable_ms %" PRId64 " (the cluster's view: no leader "
           "able to serve, or acks=all writes refused), produce_unavailable_ms %" PRId64
           " (the clients' view: a record waited over unavailable.threshold)\n",
           (double)t_ns / 1e9, unavailable_ms(db, run_id, NULL, 0, "cluster", t_ns, NULL),
           unavailable_ms(db, run_id, NULL, 0, "produce", t_ns, NULL));
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT topic, partitions FROM topics WHERE run_id = ? "
                           "ORDER BY rowid",
                           -1, &stmt, NULL) != SQLITE_OK) {
        return;
    }
    sqlite3_bind_int64(stmt, 1, run_id);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        g_autofree char *topic = g_strdup((const char *)sqlite3_column_text(stmt, 0));
        int32_t partitions = sqlite3_column_int(stmt, 1);
        for (int32_t p = 0; p < partitions; p++) {
            g_autofree char *cluster_reason = NULL;
            g_autofree char *produce_reason = NULL;
            int64_t cluster_ms =
                unavailable_ms(db, run_id, topic, p, "cluster", t_ns, &cluster_reason);
            int64_t produce_ms =
                unavailable_ms(db, run_id, topic, p, "produce", t_ns, &produce_reason);
            GString *at = g_string_new(NULL);
            if (cluster_reason != NULL) {
                g_string_append_printf(at, "unavailable (%s)", cluster_reason);
            }
            if (produce_reason != NULL) {
                g_string_append_printf(at, "%srecords waiting", at->len ? ", " : "");
            }
            printf("\tPartition: %s-%d\tUnavailableMs: %" PRId64 "\tProduceUnavailableMs: %" PRId64
                   "\tAt: %s\n",
                   topic, p, cluster_ms, produce_ms, at->len ? at->str : "available");
            g_string_free(at, TRUE);
        }
    }
    sqlite3_finalize(stmt);
}

/* "Run: 3	Scenario: quickstart	Seed: 1	Time: 60.000s	RunDir: ...": which run,
 * which sample, and where its logs are (or "-" when it kept no folder). */
static void print_run_line(struct ks_recorder *recorder, int64_t run_id, int64_t t_ns)
{
    sqlite3_stmt *stmt = NULL;
    char *scenario = NULL;
    int64_t seed = 0;
    if (sqlite3_prepare_v2(ks_recorder_db(recorder),
                           "SELECT scenario, seed FROM runs WHERE run_id = ?", -1, &stmt,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_int64(stmt, 1, run_id);
        if (sqlite3_step(stmt) == SQLITE_ROW) {
            const unsigned char *text = sqlite3_column_text(stmt, 0);
            scenario = g_strdup(text != NULL ? (const char *)text : "?");
            seed = sqlite3_column_int64(stmt, 1);
        }
    }
    sqlite3_finalize(stmt);
    int64_t found_id = 0;
    char *run_dir = NULL;
    ks_recorder_run_dir(recorder, run_id, &found_id, &run_dir, NULL);
    printf("Run: %" PRId64 "\tScenario: %s\tSeed: %" PRId64 "\tTime: %" PRId64 ".%03" PRId64
           "s\tRunDir: %s\n",
           run_id, scenario != NULL ? scenario : "?", seed, t_ns / 1000000000,
           t_ns / 1000000 % 1000, run_dir != NULL ? run_dir : "-");
    g_free(run_dir);
    g_free(scenario);
}

/* With --at: which sample answers (the last at or before the time asked;
 * the state is sampled, not continuous), and when the next one is. */
static void print_sample_line(sqlite3 *db, int64_t run_id, int64_t at_ns, int64_t t_ns)
{
    bool found = false;
    int64_t next_ns = single_int(db,
                                 "SELECT min(t_ns) FROM partition_state WHERE run_id = ? AND "
                                 "t_ns > ?",
                                 run_id, t_ns, &found);
    printf("Sample: %" PRId64 ".%03" PRId64 "s answers --at %" PRId64 ".%03" PRId64
           "s (the last sample at or before it",
           t_ns / 1000000000, t_ns / 1000000 % 1000, at_ns / 1000000000, at_ns / 1000000 % 1000);
    if (found) {
        printf("; the next is at %" PRId64 ".%03" PRId64 "s", next_ns / 1000000000,
               next_ns / 1000000 % 1000);
    }
    printf(")\n");
}

static int describe(struct ks_recorder *recorder, const char *db_path, int64_t run_id,
                    bool run_given, int64_t at_ns, bool at_given)
{
    sqlite3 *db = ks_recorder_db(recorder);
    bool found = false;
    if (!run_given) {
        run_id = single_int(db, "SELECT max(run_id) FROM runs", 0, 0, &found);
        if (!found) {
            fprintf(stderr, "%s:1: holds no runs\n", db_path);
            return 2;
        }
    } else {
        single_int(db, "SELECT run_id FROM runs WHERE run_id = ?", run_id, 0, &found);
        if (!found) {
            fprintf(stderr, "%s:1: no run with id %" PRId64 "\n", db_path, run_id);
            return 2;
        }
    }
    int64_t t_ns = at_given
                       ? single_int(db,
                                    "SELECT max(t_ns) FROM partition_state "
                                    "WHERE run_id = ? AND t_ns <= ?",
                                    run_id, at_ns, &found)
                       : single_int(db, "SELECT max(t_ns) FROM partition_state WHERE run_id = ?",
                                    run_id, 0, &found);
    if (!found) {
        fprintf(stderr, "%s:1: run %" PRId64 " has no partition state%s\n", db_path, run_id,
                at_given ? " at or before that time" : "");
        return 2;
    }
    print_run_line(recorder, run_id, t_ns);
    if (at_given) {
        print_sample_line(db, run_id, at_ns, t_ns);
    }
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT topic, partitions, replication_factor, configs FROM topics "
                           "WHERE run_id = ? ORDER BY rowid",
                           -1, &stmt, NULL) != SQLITE_OK) {
        fprintf(stderr, "%s:1: %s\n", db_path, sqlite3_errmsg(db));
        return 2;
    }
    sqlite3_bind_int64(stmt, 1, run_id);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        char *topic = g_strdup((const char *)sqlite3_column_text(stmt, 0));
        int32_t partitions = sqlite3_column_int(stmt, 1);
        const unsigned char *configs = sqlite3_column_text(stmt, 3);
        printf("Topic: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n", topic,
               partitions, sqlite3_column_int(stmt, 2),
               configs != NULL ? (const char *)configs : "");
        for (int32_t p = 0; p < partitions; p++) {
            print_partition(db, run_id, t_ns, topic, p);
        }
        g_free(topic);
    }
    sqlite3_finalize(stmt);
    print_availability(db, run_id, t_ns);
    return 0;
}

int ks_describe_main(int argc, char **argv)
{
    char *run_text = NULL;
    char *at_text = NULL;
    GOptionEntry entries[] = {
        { "run", 0, 0, G_OPTION_ARG_STRING, &run_text, "Run id (default: the latest run)", "ID" },
        { "at", 0, 0, G_OPTION_ARG_STRING, &at_text,
          "Simulated time, e.g. 12s or 1500ms (default: the end)", "TIME" },
        { NULL, 0, 0, 0, NULL, NULL, NULL },
    };
    GOptionContext *context = g_option_context_new("DB - topic state of a recorded run");
    g_option_context_add_main_entries(context, entries, NULL);
    g_option_context_set_description(
        context, "Prints each topic as kafka-topics.sh --describe does (TAB separated), with each\n"
                 "partition's leader LEO and HW, from the sampled partition state; then the\n"
                 "availability up to that time: unavailable_ms (the cluster's view) and\n"
                 "produce_unavailable_ms (the clients' view), in total and per partition, and\n"
                 "whether each partition was unavailable at that time, and why.\n"
                 "\n"
                 "Examples:\n"
                 "  ksim describe ksim.db\n"
                 "  ksim describe ksim.db --run 3 --at 12.5s\n");
    int code = 2;
    struct ks_recorder *recorder = NULL;
    GError *error = NULL;
    if (!g_option_context_parse(context, &argc, &argv, &error)) {
        fprintf(stderr, "ksim describe: %s (see --help)\n", error->message);
        g_error_free(error);
        goto out;
    }
    if (argc != 2) {
        fprintf(stderr, "ksim describe: expected one DB file (see --help)\n");
        goto out;
    }
    guint64 run_id = 0;
    if (run_text != NULL &&
        !g_ascii_string_to_unsigned(run_text, 10, 1, G_MAXINT64, &run_id, NULL)) {
        fprintf(stderr, "ksim describe: --run %s: not a run id\n", run_text);
        goto out;
    }
    int64_t at_ns = 0;
    char *message = NULL;
    if (at_text != NULL && !parse_time_ns(at_text, &at_ns, &message)) {
        fprintf(stderr, "ksim describe: --at %s: %s\n", at_text, message);
        g_free(message);
        goto out;
    }
    recorder = ks_recorder_open_readonly(argv[1], &error);
    if (recorder == NULL) {
        fprintf(stderr, "%s\n", error->message);
        g_error_free(error);
        goto out;
    }
    code = describe(recorder, argv[1], (int64_t)run_id, run_text != NULL, at_ns, at_text != NULL);
out:
    ks_recorder_close(recorder);
    g_option_context_free(context);
    g_free(run_text);
    g_free(at_text);
    return code;
}
