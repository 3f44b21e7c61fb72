/*
** sim/dumplog.h: `ksim dump-log`, the kafka-dump-log.sh of ksim
** (kafka-reference 8.3). Streams segment files after a run, one batch or
** index chunk at a time (never a whole file); never writes.
*/
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The longest batch read: Kafka's DumpLogSegments --max-message-size default. */
#define KS_DUMPLOG_BATCH_BYTES_MAX (5 * 1024 * 1024)

enum ks_dumplog_flags {
    KS_DUMPLOG_DEEP = 1u << 0,       /* --deep-iteration: one line per record */
    KS_DUMPLOG_PRINT_DATA = 1u << 1, /* --print-data-log: records with key and payload */
};

/* Dumps one file (.log, .index, .timeindex) or a partition folder (every
 * segment in base-offset order) to out; problems go to err. Returns the exit
 * code: 0 all valid, 1 something invalid was found (what was valid is
 * printed first; a batch over KS_DUMPLOG_BATCH_BYTES_MAX counts), 2 missing,
 * unreadable, not a regular file or not a segment file. */
int ks_dumplog_path(const char *path, unsigned flags, FILE *out, FILE *err);

/* Dumps the bytes of a `.log` segment held in memory (the parsing core of
 * ks_dumplog_path, exposed for the corruption tests): name is printed as the
 * file name and base_offset as its starting offset. Returns 0 or 1. */
int ks_dumplog_log_bytes(const char *name, int64_t base_offset, const uint8_t *bytes,
                         size_t byte_count, unsigned flags, FILE *out, FILE *err);
