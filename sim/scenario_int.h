/*
** sim/scenario_int.h: what sim/scenario.c and sim/scenario_keys.c share and
** nobody else uses: the key tables, value parsing and formatting (and the
** duration formats for sim/fault_actions.c, which writes faults back).
*/
#pragma once

#include "scenario.h"

#include <json-glib/json-glib.h>
#include <stddef.h>

enum ks__section_kind {
    KS__SECTION_SCENARIO,
    KS__SECTION_CLUSTER,
    KS__SECTION_TOPIC,
    KS__SECTION_PRODUCER,
    KS__SECTION_CONSUMER,
    KS__SECTION_FAULT,
    KS__SECTION_MIRROR, /* [mirror NAME]: several clusters */
    KS__SECTION_EXPECT,
    KS__SECTION_COUNT
};

/* How a value is written and where it goes. min/max are in the unit the
 * value is written in: ms for MS, seconds for SECONDS, ns for DURATION,
 * bytes for sizes, permille for RATIO. */
enum ks__value_type {
    KS__VALUE_INT32,          /* plain integer -> int32_t */
    KS__VALUE_INT64,          /* plain integer -> int64_t */
    KS__VALUE_BOOL,           /* true | false -> bool */
    KS__VALUE_DURATION,       /* 250ms, 1.5s (unit required) -> int64_t ns */
    KS__VALUE_DURATION_NEVER, /* a duration or `never` -> int64_t ns, KS_INT64_UNSET for never */
    KS__VALUE_MS,             /* Kafka *.ms: 30000 (or 30s) -> int64_t ns; -1 stays -1;
                           values too large for ns become KS_INT64_UNSET (never) */
    KS__VALUE_SECONDS,        /* Kafka *.seconds: 300 -> int64_t ns */
    KS__VALUE_SIZE32,         /* 16384, 16KiB -> int32_t bytes */
    KS__VALUE_SIZE64,         /* 1GiB -> int64_t bytes */
    KS__VALUE_BANDWIDTH,      /* 500MiB or 500MiB/s -> uint64_t bytes per second */
    KS__VALUE_RATE,           /* 2000/s -> uint64_t per second */
    KS__VALUE_ENUM,           /* one of choices -> int (an enum) */
    KS__VALUE_STRING,         /* text -> char[bytes] (bytes > 0) or g_strdup'ed char * (bytes 0) */
    KS__VALUE_RATIO,          /* 0.5 -> int32_t permille */
    KS__VALUE_CUSTOM          /* parsed by scenario.c (targets, lists, references) */
};

struct ks__choice {
    const char *name;
    int value;
};

struct ks__key_spec {
    const char *name;
    enum ks__value_type type;
    int64_t min;
    int64_t max;
    const char *default_text;         /* applied when absent; NULL: required or none (see doc) */
    const char *inherit;              /* topic keys: the [cluster] key that gives the default */
    size_t offset;                    /* destination inside the section's struct; custom: unused */
    size_t bytes;                     /* STRING buffers */
    const struct ks__choice *choices; /* ENUM; NULL-name terminated */
    const char *doc;
};

/* offset of a key that scenario.c stores itself (enable.auto.commit, commit). */
#define KS__NO_FIELD ((size_t)-1)

/* A Kafka setting that ksim knows and does not model (scenario_keys.c). */
struct ks__not_modelled {
    enum ks__section_kind kind;
    const char *key;
    const char *instead; /* the ksim key that says the same, or NULL */
    const char *why;     /* for docs/model.md */
};

/* A Kafka setting that Kafka itself removed (scenario_keys.c). */
struct ks__removed_key {
    enum ks__section_kind kind;
    const char *key;
    const char *removed_in; /* "is read only in ZooKeeper mode (...), which Kafka 4.0 removed" */
    const char *why;        /* what replaced it, for the message and docs/model.md */
};

/* The row for key in a section kind, or NULL. Static storage. */
const struct ks__not_modelled *ks__not_modelled_find(enum ks__section_kind kind, const char *key);
/* "Kafka's KEY is not modelled by ksim (see docs/model.md)[; write KEY]". Owned. */
char *ks__not_modelled_message(const struct ks__not_modelled *row);
/* The row for a key Kafka removed, or NULL. Static storage. */
const struct ks__removed_key *ks__removed_key_find(enum ks__section_kind kind, const char *key);
/* "Kafka's KEY REMOVED_IN: WHY (see docs/model.md)". Owned. */
char *ks__removed_key_message(const struct ks__removed_key *row);

/* The name in names closest to word by edit distance, if close enough to be
 * a typing error (at most a quarter of it changed), else NULL; the first of
 * equally close names. Borrowed from names. */
const char *ks__closest_name(const char *word, const char *const *names, size_t count);
/* What to add to "unknown key 'KEY' in [SECTION]": " (it goes in [producer
 * NAME])" for another section's key, " (did you mean 'brokers'?)" for a near
 * miss, else "". Owned. */
char *ks__unknown_key_hint(enum ks__section_kind kind, const char *key);

/* A parsed value before it is stored. */
struct ks__value {
    int64_t integer;  /* every numeric type, bools (0/1), enums */
    const char *text; /* STRING, CUSTOM: borrowed */
};

/* The table of a section kind. */
const struct ks__key_spec *ks__key_table(enum ks__section_kind kind, size_t *count);
const struct ks__key_spec *ks__key_find(enum ks__section_kind kind, const char *key);
const char *ks__section_kind_name(enum ks__section_kind kind);

/* Parses text by spec's type and range. On failure returns false and sets
 * *message (owned: g_free) to "what is wrong". */
bool ks__value_parse(const struct ks__key_spec *spec, const char *text, struct ks__value *out,
                     char **message);
/* Stores a parsed value at base + spec->offset. */
void ks__value_store(const struct ks__key_spec *spec, void *base, const struct ks__value *value);
/* The stored value as JSON (Kafka's units) / as canonical text. */
JsonNode *ks__value_json(const struct ks__key_spec *spec, const void *base);
/* Adds member `key`: a ksim duration as canonical text ("250ms"); null if ns < 0. */
void ks__json_duration(JsonBuilder *builder, const char *key, int64_t ns);

/* Units. Durations: exact decimals in integer arithmetic. */
bool ks__parse_duration_ns(const char *text, bool unit_required, int64_t *out, char **message);
bool ks__parse_size_bytes(const char *text, int64_t *out, char **message);
bool ks__parse_int64(const char *text, int64_t *out);
/* Shortest exact form: 60000000000 -> "1m", 1500000 -> "1500us", 0 -> "0s". Owned. */
char *ks__format_duration(int64_t ns);

bool ks__topic_name_check(const char *name, char **message);
/* Client, fault and scenario names; kind ("producer", "fault", "scenario")
 * words the message for an empty name. */
bool ks__client_name_check(const char *name, const char *kind, char **message);

/* Section and entry lookups made on this scenario's raw model so far (parse,
 * --set, finalize). Tests check that it grows linearly with the file. */
uint64_t ks__scenario_lookup_count(const struct ks_scenario *scenario);
