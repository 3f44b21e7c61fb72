/*
** sim/scenario.c: reading scenario files (SPEC section 2, STYLE 3.11).
**
** Three stages, so that --set overrides are applied before cross-field rules:
**
**   1. Scan (scan_text): our own line scanner, not GKeyFile, because GKeyFile
**      keeps a trailing "# ..." in the value, merges a repeated key or section
**      silently, and gives no line numbers. The input is bytes with a length
**      (a file is read whole, only if it is a regular file of at most 16 MiB):
**      each line must be UTF-8 without NUL or control characters but tabs, so
**      nothing can cut the text short or reach the outputs unseen; a BOM at the
**      very start is skipped. Each line is a comment, a [section NAME] header
**      or `key = value`; a '#' at the start of a line or after whitespace in a
**      value starts a comment. The result is the raw model: sections in file
**      order, each with its assignments and lines. Section limits are checked
**      as each header arrives; every key is checked against its section's key
**      table (a Kafka key ksim does not model, or a near miss, gets its own
**      message) and every typed value parsed once, so a bad value fails at load
**      with its line. Scanning is linear in the input (R4).
**   2. --set (ks_scenario_apply_set): replaces or adds one assignment, checked
**      by the same table; its location in messages is "--set ASSIGNMENT".
**   3. Finalize: rebuilds every field of struct ks_scenario from the raw
**      model: table defaults (topics inherit the cluster's log.* values),
**      names resolved to indexes (topics, clients, faults, brokers), faults,
**      triggers and expectations parsed, cross-field rules checked.
**
** Invariants:
**   R1  A raw section is unique by (kind, name); a raw entry by key in its section.
**   R2  Every raw entry's key is known to its section (table, link pattern, or
**       a metric / partition expectation), and every typed value parses.
**   R3  After a successful finalize every index in the struct is in range:
**       topic_index < topic_count, partition < partition_count, client
**       indexes < their counts, broker ids in 1..broker_count.
**   R4  The hash indexes (sections by kind and name, entries by key) hold
**       exactly the sections and entries of the arrays, and kind_counts
**       counts them; lookups never iterate.
*/
#include "scenario.h"

#include "../core/base.h"
#include "fault_actions.h"
#include "scenario_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

G_DEFINE_QUARK(ks - scenario - error - quark, ks_scenario_error)

/* ---- raw model ------------------------------------------------------------- */

struct raw_entry {
    char *key;
    char *value;
    uint32_t line;  /* 0 when from --set */
    char *set_text; /* the whole --set assignment, or NULL */
};

struct raw_section {
    enum ks__section_kind kind;
    char *name;                  /* "" for unnamed sections */
    uint32_t line;               /* header line; 0 if created by --set */
    char *origin;                /* FILE for messages */
    GPtrArray *entries;          /* of struct raw_entry, owned, file order */
    GHashTable *entry_index;     /* key -> struct raw_entry in entries (not owned); lookups only */
    struct ks_scenario_raw *raw; /* not owned: the model this section belongs to */
};

/* R4: sections_by_key and entry_index hold exactly the sections and entries
 * of the arrays, so every lookup is one hash probe and scanning a file is
 * linear in its size (the old linear search made 200,000 sections take
 * minutes). Neither table is ever iterated (STYLE 3.6: only lookups, so hash
 * order cannot reach anything). */
struct ks_scenario_raw {
    char *file;
    GPtrArray *sections;                   /* of struct raw_section, owned, file order */
    GHashTable *sections_by_key;           /* section_key() -> struct raw_section (not owned) */
    size_t kind_counts[KS__SECTION_COUNT]; /* sections of each kind */
    uint64_t lookup_count; /* section and entry lookups so far (tests check it is linear) */
};

static void raw_entry_free(void *data)
{
    struct raw_entry *entry = data;
    g_free(entry->key);
    g_free(entry->value);
    g_free(entry->set_text);
    g_free(entry);
}

static void raw_section_free(void *data)
{
    struct raw_section *section = data;
    g_free(section->name);
    g_free(section->origin);
    g_hash_table_destroy(section->entry_index);
    g_ptr_array_unref(section->entries);
    g_free(section);
}

/* "KIND NAME" (or "KIND" for unnamed sections): the index key of a section. Owned. */
static char *section_key(enum ks__section_kind kind, const char *name)
{
    return g_strdup_printf("%d %s", (int)kind, name);
}

static struct ks_scenario_raw *raw_new(const char *file)
{
    struct ks_scenario_raw *raw = g_new0(struct ks_scenario_raw, 1);
    raw->file = g_strdup(file);
    raw->sections = g_ptr_array_new_with_free_func(raw_section_free);
    raw->sections_by_key = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    return raw;
}

static void raw_free(struct ks_scenario_raw *raw)
{
    if (raw == NULL) {
        return;
    }
    g_free(raw->file);
    g_hash_table_destroy(raw->sections_by_key);
    g_ptr_array_unref(raw->sections);
    g_free(raw);
}

static struct raw_section *section_find(struct ks_scenario_raw *raw, enum ks__section_kind kind,
                                        const char *name)
{
    g_autofree char *key = section_key(kind, name);
    raw->lookup_count++;
    return g_hash_table_lookup(raw->sections_by_key, key);
}

static struct raw_section *section_add(struct ks_scenario_raw *raw, enum ks__section_kind kind,
                                       const char *name, uint32_t line, const char *origin)
{
    struct raw_section *section = g_new0(struct raw_section, 1);
    section->kind = kind;
    section->name = g_strdup(name);
    section->line = line;
    section->origin = g_strdup(origin);
    section->entries = g_ptr_array_new_with_free_func(raw_entry_free);
    section->entry_index = g_hash_table_new(g_str_hash, g_str_equal);
    section->raw = raw;
    g_ptr_array_add(raw->sections, section);
    g_hash_table_insert(raw->sections_by_key, section_key(kind, name), section);
    raw->kind_counts[kind]++;
    return section;
}

/* Removes sections[index] from the raw model, its index and its count (R4). */
static void section_remove(struct ks_scenario_raw *raw, guint index)
{
    struct raw_section *section = g_ptr_array_index(raw->sections, index);
    g_autofree char *key = section_key(section->kind, section->name);
    bool removed = g_hash_table_remove(raw->sections_by_key, key);
    ks_assert(removed); /* R4 */
    ks_assert(raw->kind_counts[section->kind] > 0);
    raw->kind_counts[section->kind]--;
    g_ptr_array_remove_index(raw->sections, index);
}

static struct raw_entry *entry_find(const struct raw_section *section, const char *key)
{
    if (section == NULL) {
        return NULL;
    }
    section->raw->lookup_count++;
    return g_hash_table_lookup(section->entry_index, key);
}

static struct raw_entry *entry_add(struct raw_section *section, const char *key)
{
    struct raw_entry *entry = g_new0(struct raw_entry, 1);
    entry->key = g_strdup(key);
    g_ptr_array_add(section->entries, entry);
    g_hash_table_insert(section->entry_index, entry->key, entry);
    return entry;
}

static struct ks_scenario_raw *raw_copy(const struct ks_scenario_raw *raw)
{
    struct ks_scenario_raw *copy = raw_new(raw->file);
    for (guint i = 0; i < raw->sections->len; i++) {
        const struct raw_section *section = g_ptr_array_index(raw->sections, i);
        struct raw_section *target =
            section_add(copy, section->kind, section->name, section->line, section->origin);
        for (guint j = 0; j < section->entries->len; j++) {
            const struct raw_entry *entry = g_ptr_array_index(section->entries, j);
            struct raw_entry *e = entry_add(target, entry->key);
            e->value = g_strdup(entry->value);
            e->line = entry->line;
            e->set_text = g_strdup(entry->set_text);
        }
    }
    return copy;
}

/* ---- errors ------------------------------------------------------------------ */

/* "FILE:LINE" or "--set ASSIGNMENT" for an entry (or the section header). */
static char *where(const struct raw_section *section, const struct raw_entry *entry)
{
    if (entry != NULL && entry->set_text != NULL) {
        return g_strdup_printf("--set %s", entry->set_text);
    }
    uint32_t line = entry != NULL ? entry->line : section->line;
    return g_strdup_printf("%s:%u", section->origin, line);
}

static bool fail_at(GError **error, enum ks_scenario_error code, const struct raw_section *section,
                    const struct raw_entry *entry, const char *format, ...) G_GNUC_PRINTF(5, 6);

static bool fail_at(GError **error, enum ks_scenario_error code, const struct raw_section *section,
                    const struct raw_entry *entry, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    g_autofree char *message = g_strdup_vprintf(format, args);
    va_end(args);
    g_autofree char *location = where(section, entry);
    g_set_error(error, KS_SCENARIO_ERROR, (int)code, "%s: %s", location, message);
    return false;
}

static char *section_label(const struct raw_section *section)
{
    if (section->name[0] == '\0') {
        return g_strdup_printf("[%s]", ks__section_kind_name(section->kind));
    }
    return g_strdup_printf("[%s %s]", ks__section_kind_name(section->kind), section->name);
}

/* ---- key checks ----------------------------------------------------------------- */

static bool section_kind_parse(const char *word, enum ks__section_kind *out)
{
    for (int k = 0; k < KS__SECTION_COUNT; k++) {
        if (strcmp(word, ks__section_kind_name((enum ks__section_kind)k)) == 0) {
            *out = (enum ks__section_kind)k;
            return true;
        }
    }
    return false;
}

static bool section_is_named(enum ks__section_kind kind)
{
    return kind == KS__SECTION_TOPIC || kind == KS__SECTION_PRODUCER ||
           kind == KS__SECTION_CONSUMER || kind == KS__SECTION_FAULT ||
           kind == KS__SECTION_MIRROR;
}

/* [scenario] network.latency.east-west: the two cluster names, owned (g_free). */
static bool cluster_link_key_parse(const char *key, char **a, char **b)
{
    const char *prefix = "network.latency.";
    if (!g_str_has_prefix(key, prefix)) {
        return false;
    }
    const char *rest = key + strlen(prefix);
    const char *dash = strchr(rest, '-');
    if (dash == NULL || dash == rest || dash[1] == '\0' || strchr(dash + 1, '-') != NULL) {
        return false;
    }
    *a = g_strndup(rest, (size_t)(dash - rest));
    *b = g_strdup(dash + 1);
    return true;
}

/* network.latency.A-B: returns true and the ids if key has that shape. */
static bool link_key_parse(const char *key, int64_t *a, int64_t *b)
{
    const char *prefix = "network.latency.";
    if (!g_str_has_prefix(key, prefix)) {
        return false;
    }
    g_autofree char *rest = g_strdup(key + strlen(prefix));
    char *dash = strchr(rest, '-');
    if (dash == NULL) {
        return false;
    }
    *dash = '\0';
    return ks__parse_int64(rest, a) && ks__parse_int64(dash + 1, b);
}

static const char *const expect_fields[] = { "leader", "isr", "leader_epoch", "hw" };

static bool metric_find(const char *name, enum ks_metric *out)
{
    for (int m = 0; m < KS_METRIC_COUNT; m++) {
        if (strcmp(ks_scenario_metric_names(NULL)[m], name) == 0) {
            *out = (enum ks_metric)m;
            return true;
        }
    }
    return false;
}

/* partition.TP.FIELD: splits into TP text and field index. */
static bool expect_partition_key(const char *key, char **tp_text, int *field)
{
    if (!g_str_has_prefix(key, "partition.")) {
        return false;
    }
    const char *rest = key + strlen("partition.");
    const char *dot = strrchr(rest, '.');
    if (dot == NULL || dot == rest) {
        return false;
    }
    for (size_t f = 0; f < KS_ARRAY_COUNT(expect_fields); f++) {
        if (strcmp(dot + 1, expect_fields[f]) == 0) {
            *tp_text = g_strndup(rest, (size_t)(dot - rest));
            *field = (int)f;
            return true;
        }
    }
    return false;
}

/* Checks a key (and its value when the key is typed). Message owned by caller. */
static bool key_check(enum ks__section_kind kind, const char *key, const char *value,
                      enum ks_scenario_error *code, char **message)
{
    if (kind == KS__SECTION_EXPECT) {
        enum ks_metric metric;
        g_autofree char *tp = NULL;
        int field = 0;
        if (metric_find(key, &metric) || expect_partition_key(key, &tp, &field)) {
            return true;
        }
        size_t metric_count = 0;
        const char *const *metrics = ks_scenario_metric_names(&metric_count);
        const char *best = ks__closest_name(key, metrics, metric_count);
        g_autofree char *hint =
            best != NULL ? g_strdup_printf(" (did you mean '%s'?)", best) : g_strdup("");
        *code = KS_SCENARIO_ERROR_UNKNOWN_KEY;
        *message = g_strdup_printf("'%s' is not a metric (see SPEC section 5) nor "
                                   "partition.TOPIC-N.leader|isr|leader_epoch|hw%s",
                                   key, hint);
        return false;
    }
    const struct ks__key_spec *spec = ks__key_find(kind, key);
    if (spec == NULL) {
        int64_t a = 0;
        int64_t b = 0;
        g_autofree char *name_a = NULL;
        g_autofree char *name_b = NULL;
        if ((kind == KS__SECTION_CLUSTER && link_key_parse(key, &a, &b)) ||
            (kind == KS__SECTION_SCENARIO && cluster_link_key_parse(key, &name_a, &name_b))) {
            /* A link's latency has the range of network.latency. */
            struct ks__key_spec link = *ks__key_find(KS__SECTION_CLUSTER, "network.latency");
            link.name = key;
            struct ks__value parsed;
            if (!ks__value_parse(&link, value, &parsed, message)) {
                *code = KS_SCENARIO_ERROR_VALUE;
                return false;
            }
            return true;
        }
        const struct ks__not_modelled *row = ks__not_modelled_find(kind, key);
        if (row != NULL) {
            *code = KS_SCENARIO_ERROR_NOT_MODELLED;
            *message = ks__not_modelled_message(row);
            return false;
        }
        const struct ks__removed_key *gone = ks__removed_key_find(kind, key);
        if (gone != NULL) {
            *code = KS_SCENARIO_ERROR_NOT_MODELLED;
            *message = ks__removed_key_message(gone);
            return false;
        }
        g_autofree char *hint = ks__unknown_key_hint(kind, key);
        *code = KS_SCENARIO_ERROR_UNKNOWN_KEY;
        *message =
            g_strdup_printf("unknown key '%s' in [%s]%s", key, ks__section_kind_name(kind), hint);
        return false;
    }
    if (kind == KS__SECTION_SCENARIO && strcmp(key, "kafka.version") == 0 &&
        ks_kafka_version_find(value) == NULL) {
        g_autofree char *names = ks_kafka_version_names();
        *code = KS_SCENARIO_ERROR_VALUE;
        *message = g_strdup_printf("kafka.version = %s: not a Kafka version ksim knows; give one "
                                   "of %s, or a release of one (3.7.1, 0.10.2.1)",
                                   value, names);
        return false;
    }
    struct ks__value parsed;
    if (!ks__value_parse(spec, value, &parsed, message)) {
        *code = KS_SCENARIO_ERROR_VALUE;
        return false;
    }
    if (kind == KS__SECTION_CLUSTER && strcmp(key, "controllers") == 0) {
        /* A KRaft quorum has an odd number of voters in practice; ksim takes
         * 1, 3 or 5 (SPEC 2). */
        if (parsed.integer != 1 && parsed.integer != 3 && parsed.integer != 5) {
            *code = KS_SCENARIO_ERROR_VALUE;
            *message = g_strdup_printf("controllers = %s: must be 1, 3 or 5", value);
            return false;
        }
    }
    return true;
}

/* ---- scanner ---------------------------------------------------------------------- */

static bool key_chars_ok(const char *key)
{
    if (key[0] == '\0') {
        return false;
    }
    for (const char *p = key; *p != '\0'; p++) {
        bool ok = g_ascii_isalnum(*p) || *p == '.' || *p == '_' || *p == '-';
        if (!ok) {
            return false;
        }
    }
    return true;
}

/* Cuts a trailing comment: '#' at the start or after a space or tab. */
static void strip_comment(char *text)
{
    for (char *p = text; *p != '\0'; p++) {
        if (*p == '#' && (p == text || p[-1] == ' ' || p[-1] == '\t')) {
            *p = '\0';
            break;
        }
    }
    g_strstrip(text);
}

/* Sections of one kind a scenario may have: checked as each one arrives, so
 * that a file of many sections fails at the first one too many. */
static size_t section_count_max(enum ks__section_kind kind)
{
    switch (kind) {
    case KS__SECTION_TOPIC: return KS_SCENARIO_TOPIC_COUNT_MAX;
    case KS__SECTION_PRODUCER:
    case KS__SECTION_CONSUMER: return KS_SCENARIO_CLIENT_COUNT_MAX;
    case KS__SECTION_FAULT: return KS_SCENARIO_FAULT_COUNT_MAX;
    case KS__SECTION_CLUSTER: return KS_SCENARIO_CLUSTER_COUNT_MAX;
    case KS__SECTION_MIRROR: return KS_SCENARIO_MIRROR_COUNT_MAX;
    case KS__SECTION_SCENARIO:
    case KS__SECTION_EXPECT: return 1;
    case KS__SECTION_COUNT: break;
    }
    ks_assert(false);
    return 0;
}

static bool scan_header(struct ks_scenario_raw *raw, const char *origin, char *text, uint32_t line,
                        struct raw_section **current, GError **error)
{
    struct raw_section here = { .origin = (char *)origin, .line = line, .name = "" };
    strip_comment(text);
    size_t length = strlen(text);
    if (length < 2 || text[length - 1] != ']') {
        return fail_at(error, KS_SCENARIO_ERROR_SYNTAX, &here, NULL,
                       "a section header must look like [kind NAME]: '%s'", text);
    }
    text[length - 1] = '\0';
    if (strchr(text, '\t') != NULL) {
        /* A tab would be read as a separator here, but not by tools that look
         * for "[fault " (explore's reproducer), so the file means two things. */
        return fail_at(error, KS_SCENARIO_ERROR_SYNTAX, &here, NULL,
                       "a tab in a section header: separate kind and name by a space, as in "
                       "[fault NAME]");
    }
    char *inner = g_strstrip(text + 1);
    char *space = inner + strcspn(inner, " \t");
    char *name = space;
    if (*space != '\0') {
        *space = '\0';
        name = g_strstrip(space + 1);
    }
    enum ks__section_kind kind;
    if (!section_kind_parse(inner, &kind)) {
        const char *kinds[KS__SECTION_COUNT];
        for (int k = 0; k < KS__SECTION_COUNT; k++) {
            kinds[k] = ks__section_kind_name((enum ks__section_kind)k);
        }
        const char *best = ks__closest_name(inner, kinds, KS__SECTION_COUNT);
        g_autofree char *hint = best != NULL ? g_strdup_printf("did you mean [%s%s]? ", best,
                                                               name[0] != '\0' ? " NAME" : "")
                                             : g_strdup("");
        return fail_at(error, KS_SCENARIO_ERROR_UNKNOWN_KEY, &here, NULL,
                       "unknown section [%s] (%sknown: scenario, cluster, topic NAME, producer "
                       "NAME, consumer NAME, fault NAME, expect; cluster NAME, mirror NAME)",
                       inner, hint);
    }
    g_autofree char *message = NULL;
    if (section_is_named(kind)) {
        bool ok = kind == KS__SECTION_TOPIC
                      ? ks__topic_name_check(name, &message)
                      : ks__client_name_check(name, ks__section_kind_name(kind), &message);
        if (!ok) {
            return fail_at(error, KS_SCENARIO_ERROR_VALUE, &here, NULL, "%s", message);
        }
    } else if (kind == KS__SECTION_CLUSTER && name[0] != '\0') {
        /* [cluster NAME]: one of several clusters; [cluster] is the one-cluster form */
        if (!ks__client_name_check(name, "cluster", &message)) {
            return fail_at(error, KS_SCENARIO_ERROR_VALUE, &here, NULL, "%s", message);
        }
        struct raw_section *other = section_find(raw, kind, "");
        if (other != NULL) {
            return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, &here, NULL,
                           "[cluster %s] next to the unnamed [cluster] (line %u): with several "
                           "clusters every one is [cluster NAME]",
                           name, other->line);
        }
    } else if (name[0] != '\0') {
        return fail_at(error, KS_SCENARIO_ERROR_SYNTAX, &here, NULL,
                       "[%s] takes no name (found '%s')", inner, name);
    } else if (kind == KS__SECTION_CLUSTER && raw->kind_counts[kind] > 0) {
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, &here, NULL,
                       "[cluster] after [cluster NAME] sections: with several clusters every one "
                       "is [cluster NAME]");
    }
    struct raw_section *first = section_find(raw, kind, name);
    if (first != NULL) {
        g_autofree char *label = section_label(first);
        return fail_at(error, KS_SCENARIO_ERROR_DUPLICATE, &here, NULL,
                       "section %s is given twice (first at line %u)", label, first->line);
    }
    size_t max = section_count_max(kind);
    if (raw->kind_counts[kind] >= max) {
        return fail_at(error, KS_SCENARIO_ERROR_VALUE, &here, NULL, "more than %zu [%s] sections",
                       max, ks__section_kind_name(kind));
    }
    *current = section_add(raw, kind, name, line, origin);
    return true;
}

static bool scan_assignment(struct raw_section *section, const char *origin, char *text,
                            uint32_t line, GError **error)
{
    struct raw_section here = { .origin = (char *)origin, .line = line, .name = "" };
    char *equals = strchr(text, '=');
    if (equals == NULL) {
        return fail_at(error, KS_SCENARIO_ERROR_SYNTAX, &here, NULL,
                       "expected 'key = value', '[section]' or a '#' comment: '%s'", text);
    }
    *equals = '\0';
    char *key = g_strstrip(text);
    char *value = equals + 1;
    strip_comment(value);
    if (section == NULL) {
        return fail_at(error, KS_SCENARIO_ERROR_SYNTAX, &here, NULL,
                       "key '%s' comes before any [section]", key);
    }
    if (!key_chars_ok(key)) {
        return fail_at(error, KS_SCENARIO_ERROR_SYNTAX, &here, NULL,
                       "'%s' is not a key (letters, digits, '.', '_', '-'; an operator goes "
                       "after '=', as in 'acked_lost = > 0')",
                       key);
    }
    struct raw_entry *first = entry_find(section, key);
    if (first != NULL) {
        g_autofree char *label = section_label(section);
        return fail_at(error, KS_SCENARIO_ERROR_DUPLICATE, &here, NULL,
                       "key '%s' is given twice in %s (first at line %u)", key, label, first->line);
    }
    enum ks_scenario_error code = KS_SCENARIO_ERROR_VALUE;
    g_autofree char *message = NULL;
    if (!key_check(section->kind, key, value, &code, &message)) {
        return fail_at(error, code, &here, NULL, "%s", message);
    }
    struct raw_entry *entry = entry_add(section, key);
    entry->value = g_strdup(value);
    entry->line = line;
    return true;
}

/* Checks the bytes of one line (without its '\n'): no NUL, valid UTF-8, no
 * control character but a tab (a '\r' before the newline is the line end of
 * a Windows file). A NUL would end the C string the rest of the scanner
 * works on and silently cut the file; other control characters would reach
 * the timeline, the database and explore's reproducers. */
static bool line_bytes_check(const char *origin, const char *line, size_t length, uint32_t number,
                             GError **error)
{
    struct raw_section here = { .origin = (char *)origin, .line = number, .name = "" };
    if (length > 0 && line[length - 1] == '\r') {
        length--;
    }
    const char *nul = memchr(line, '\0', length);
    if (nul != NULL) {
        return fail_at(error, KS_SCENARIO_ERROR_SYNTAX, &here, NULL,
                       "a NUL byte at byte %zu of the line: a scenario is a text file (is this "
                       "file damaged?)",
                       (size_t)(nul - line) + 1);
    }
    const char *end = NULL;
    if (!g_utf8_validate_len(line, length, &end)) {
        return fail_at(error, KS_SCENARIO_ERROR_SYNTAX, &here, NULL,
                       "invalid UTF-8 at byte %zu of the line (save the file as UTF-8)",
                       (size_t)(end - line) + 1);
    }
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)line[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            return fail_at(error, KS_SCENARIO_ERROR_SYNTAX, &here, NULL,
                           "a control character (0x%02X) at byte %zu of the line", c, i + 1);
        }
    }
    return true;
}

/* Scans `size` bytes of text into raw, line by line. `section` is where keys
 * before any header go (NULL: an error); it is add_section's fixed section. */
static bool scan_text(struct ks_scenario_raw *raw, const char *origin, const char *text,
                      size_t size, struct raw_section *section, GError **error)
{
    struct raw_section *current = section;
    size_t position = 0;
    for (uint32_t line = 1; position < size || (position == size && line == 1); line++) {
        const char *start = text + position;
        const char *newline = memchr(start, '\n', size - position);
        size_t length = newline != NULL ? (size_t)(newline - start) : size - position;
        position += length + 1;
        if (!line_bytes_check(origin, start, length, line, error)) {
            return false;
        }
        g_autofree char *copy = g_strndup(start, length);
        char *s = g_strstrip(copy); /* also drops a '\r' */
        if (s[0] == '\0' || s[0] == '#') {
            continue;
        }
        if (s[0] == '[') {
            if (section != NULL) {
                struct raw_section here = { .origin = (char *)origin, .line = line, .name = "" };
                return fail_at(error, KS_SCENARIO_ERROR_SYNTAX, &here, NULL,
                               "a section header is not allowed here");
            }
            if (!scan_header(raw, origin, s, line, &current, error)) {
                return false;
            }
            continue;
        }
        if (!scan_assignment(current, origin, s, line, error)) {
            return false;
        }
    }
    return true;
}

/* ---- the struct ---------------------------------------------------------------------- */

static void fields_clear(struct ks_scenario *scenario)
{
    g_free(scenario->name);
    g_free(scenario->description);
    g_free(scenario->link_latencies);
    for (size_t t = 0; t < scenario->topic_count; t++) {
        ks_topic_config_deinit(&scenario->topics[t]);
    }
    g_free(scenario->topics);
    g_free(scenario->producers);
    g_free(scenario->consumers);
    g_free(scenario->faults);
    g_free(scenario->expectations);
    for (size_t i = 1; i < scenario->cluster_count; i++) {
        g_free(scenario->clusters[i].link_latencies); /* [0]'s is link_latencies above */
    }
    g_free(scenario->clusters);
    g_free(scenario->cluster_links);
    g_free(scenario->topic_cluster);
    g_free(scenario->producer_cluster);
    g_free(scenario->consumer_cluster);
    g_free(scenario->mirrors);
    char *path = scenario->path;
    struct ks_scenario_raw *raw = scenario->raw;
    memset(scenario, 0, sizeof *scenario);
    scenario->path = path;
    scenario->raw = raw;
}

void ks_scenario_free(struct ks_scenario *scenario)
{
    if (scenario == NULL) {
        return;
    }
    fields_clear(scenario);
    g_free(scenario->path);
    raw_free(scenario->raw);
    g_free(scenario);
}

/* A UTF-8 byte order mark, which editors on Windows put at the start of a file. */
#define UTF8_BOM "\xEF\xBB\xBF"

static bool parse_into(const char *name, const char *data, size_t size, struct ks_scenario **out,
                       GError **error)
{
    if (size > KS_SCENARIO_FILE_BYTES_MAX) {
        g_set_error(error, KS_SCENARIO_ERROR, KS_SCENARIO_ERROR_IO,
                    "%s:0: %zu bytes: a scenario file is at most %d MiB", name, size,
                    KS_SCENARIO_FILE_BYTES_MAX >> 20);
        return false;
    }
    /* A BOM at the very start is skipped (docs/scenario-format.md); anywhere
     * else it is an ordinary character, and a key cannot contain it. */
    if (size >= 3 && memcmp(data, UTF8_BOM, 3) == 0) {
        data += 3;
        size -= 3;
    }
    struct ks_scenario *scenario = g_new0(struct ks_scenario, 1);
    scenario->path = g_strdup(name);
    scenario->raw = raw_new(name);
    if (!scan_text(scenario->raw, name, data, size, NULL, error)) {
        ks_scenario_free(scenario);
        return false;
    }
    *out = scenario;
    return true;
}

bool ks_scenario_parse_from_data(const char *name, const char *text, struct ks_scenario **out,
                                 GError **error)
{
    return parse_into(name, text, strlen(text), out, error);
}

bool ks_scenario_parse_from_bytes(const char *name, const void *data, size_t size,
                                  struct ks_scenario **out, GError **error)
{
    return parse_into(name, data, size, out, error);
}

/* Reads a whole scenario file, refusing what is not a regular file (a
 * folder, a device such as /dev/zero, a pipe) and anything larger than
 * KS_SCENARIO_FILE_BYTES_MAX, so that a wrong path can neither hang ksim nor
 * take all memory. The file is opened non-blocking so that opening a FIFO
 * does not wait for a writer; it is then refused by its type. */
static bool file_read_capped(const char *path, char **data, size_t *size, GError **error)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        g_set_error(error, KS_SCENARIO_ERROR, KS_SCENARIO_ERROR_IO, "%s:0: cannot read: %s", path,
                    g_strerror(errno));
        return false;
    }
    struct stat st;
    const char *refusal = NULL;
    if (fstat(fd, &st) != 0) {
        refusal = g_strerror(errno);
    } else if (S_ISDIR(st.st_mode)) {
        refusal = "it is a folder (ksim check takes folders)";
    } else if (!S_ISREG(st.st_mode)) {
        refusal = "not a regular file (a device, pipe or socket); a scenario is a text file";
    }
    if (refusal == NULL && st.st_size > KS_SCENARIO_FILE_BYTES_MAX) {
        g_set_error(error, KS_SCENARIO_ERROR, KS_SCENARIO_ERROR_IO,
                    "%s:0: %jd bytes: a scenario file is at most %d MiB", path,
                    (intmax_t)st.st_size, KS_SCENARIO_FILE_BYTES_MAX >> 20);
        close(fd);
        return false;
    }
    if (refusal != NULL) {
        g_set_error(error, KS_SCENARIO_ERROR, KS_SCENARIO_ERROR_IO, "%s:0: cannot read: %s", path,
                    refusal);
        close(fd);
        return false;
    }
    /* Read until end of file, at most one byte past the cap: the file may
     * have grown since fstat. */
    size_t capacity = (size_t)st.st_size + 1;
    char *buffer = g_malloc(capacity + 1);
    size_t used = 0;
    while (used <= (size_t)KS_SCENARIO_FILE_BYTES_MAX) {
        if (used == capacity) {
            capacity = MIN(capacity * 2, (size_t)KS_SCENARIO_FILE_BYTES_MAX + 1);
            buffer = g_realloc(buffer, capacity + 1);
        }
        ssize_t got = read(fd, buffer + used, capacity - used);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            g_set_error(error, KS_SCENARIO_ERROR, KS_SCENARIO_ERROR_IO, "%s:0: cannot read: %s",
                        path, g_strerror(errno));
            g_free(buffer);
            close(fd);
            return false;
        }
        if (got == 0) {
            break;
        }
        used += (size_t)got;
    }
    close(fd);
    buffer[used] = '\0';
    *data = buffer;
    *size = used;
    return true;
}

bool ks_scenario_parse(const char *path, struct ks_scenario **out, GError **error)
{
    g_autofree char *data = NULL;
    size_t size = 0;
    if (!file_read_capped(path, &data, &size, error)) {
        return false;
    }
    return parse_into(path, data, size, out, error);
}

/* Finalizes a parsed scenario into *out, or frees it. */
static bool finalize_into(struct ks_scenario *scenario, struct ks_scenario **out, GError **error)
{
    if (!ks_scenario_finalize(scenario, error)) {
        ks_scenario_free(scenario);
        return false;
    }
    *out = scenario;
    return true;
}

bool ks_scenario_load_from_data(const char *name, const char *text, struct ks_scenario **out,
                                GError **error)
{
    return ks_scenario_load_from_bytes(name, text, strlen(text), out, error);
}

bool ks_scenario_load_from_bytes(const char *name, const void *data, size_t size,
                                 struct ks_scenario **out, GError **error)
{
    struct ks_scenario *scenario = NULL;
    return parse_into(name, data, size, &scenario, error) && finalize_into(scenario, out, error);
}

bool ks_scenario_load(const char *path, struct ks_scenario **out, GError **error)
{
    struct ks_scenario *scenario = NULL;
    return ks_scenario_parse(path, &scenario, error) && finalize_into(scenario, out, error);
}

/* ---- --set and added sections ------------------------------------------------------------ */

/* A --set value must be one a scenario file can hold, so that write_ini
 * gives a file that loads back to the same settings: one line of UTF-8 text
 * without control characters, and no '#' where a file would start a comment. */
static bool set_text_check(const char *assignment, const char *value, GError **error)
{
    size_t length = strlen(assignment);
    g_autoptr(GError) local = NULL;
    if (!line_bytes_check("--set", assignment, length, 1, &local) ||
        (length > 0 && assignment[length - 1] == '\r')) {
        g_autofree char *escaped = g_strescape(assignment, NULL);
        g_set_error(error, KS_SCENARIO_ERROR, KS_SCENARIO_ERROR_SYNTAX,
                    "--set %s: one line of UTF-8 text without control characters expected",
                    escaped);
        return false;
    }
    for (const char *p = value; *p != '\0'; p++) {
        if (*p == '#' && (p == value || p[-1] == ' ' || p[-1] == '\t')) {
            g_set_error(error, KS_SCENARIO_ERROR, KS_SCENARIO_ERROR_SYNTAX,
                        "--set %s: a '#' here would start a comment in a scenario file",
                        assignment);
            return false;
        }
    }
    return true;
}

bool ks_scenario_apply_set(struct ks_scenario *scenario, const char *assignment, GError **error)
{
    struct ks_scenario_raw *raw = scenario->raw;
    const char *equals = strchr(assignment, '=');
    if (equals == NULL) {
        g_set_error(error, KS_SCENARIO_ERROR, KS_SCENARIO_ERROR_SYNTAX,
                    "--set %s: expected SECTION.KEY=VALUE", assignment);
        return false;
    }
    g_autofree char *path = g_strstrip(g_strndup(assignment, (size_t)(equals - assignment)));
    g_autofree char *value = g_strstrip(g_strdup(equals + 1));
    if (!set_text_check(assignment, value, error)) {
        return false;
    }
    char *dot = strchr(path, '.');
    enum ks__section_kind kind;
    if (dot != NULL) {
        *dot = '\0';
    }
    if (dot == NULL || !section_kind_parse(path, &kind)) {
        g_set_error(error, KS_SCENARIO_ERROR, KS_SCENARIO_ERROR_UNKNOWN_KEY,
                    "--set %s: the key must start with scenario., cluster., topic.NAME., "
                    "producer.NAME., consumer.NAME., fault.NAME. or expect.",
                    assignment);
        return false;
    }
    const char *rest = dot + 1;
    struct raw_section *section = NULL;
    const struct raw_section *processor = NULL; /* a processor consumer's own producer */
    const char *key = rest;
    if (section_is_named(kind)) {
        size_t best = 0;
        for (guint i = 0; i < raw->sections->len; i++) {
            struct raw_section *s = g_ptr_array_index(raw->sections, i);
            size_t n = strlen(s->name);
            if (s->kind == kind && n > best && strncmp(rest, s->name, n) == 0 && rest[n] == '.') {
                section = s;
                best = n;
            }
        }
        if (section == NULL && kind == KS__SECTION_PRODUCER) {
            /* producer.NAME.KEY of a processor [consumer NAME]: its own
             * producer, which has no section until a key is set for it. */
            for (guint i = 0; i < raw->sections->len; i++) {
                struct raw_section *s = g_ptr_array_index(raw->sections, i);
                size_t n = strlen(s->name);
                if (s->kind == KS__SECTION_CONSUMER && n > best && strncmp(rest, s->name, n) == 0 &&
                    rest[n] == '.') {
                    section = s;
                    best = n;
                }
            }
            /* Added below, once the key and value pass: a rejected
             * --set leaves the scenario as it was. */
            processor = section;
        }
        if (section == NULL) {
            g_set_error(error, KS_SCENARIO_ERROR, KS_SCENARIO_ERROR_REFERENCE,
                        "--set %s: no [%s NAME] section matches '%s'", assignment, path, rest);
            return false;
        }
        key = rest + best + 1;
    } else if (kind == KS__SECTION_CLUSTER && section_find(raw, kind, "") == NULL) {
        /* cluster.east.brokers=5 names a [cluster NAME] when there are some */
        for (guint i = 0; i < raw->sections->len; i++) {
            struct raw_section *s = g_ptr_array_index(raw->sections, i);
            size_t n = strlen(s->name);
            if (s->kind == kind && n > 0 && strncmp(rest, s->name, n) == 0 && rest[n] == '.') {
                section = s;
                key = rest + n + 1;
            }
        }
        g_autoptr(GString) names = g_string_new(NULL);
        for (guint i = 0; section == NULL && i < raw->sections->len; i++) {
            struct raw_section *s = g_ptr_array_index(raw->sections, i);
            if (s->kind == kind && s->name[0] != '\0') {
                g_string_append_printf(names, "%s%s", names->len > 0 ? ", " : "", s->name);
            }
        }
        if (section == NULL && names->len > 0) {
            /* With named clusters every cluster key names one: a key
             * that names none is a cluster the file does not have. */
            g_set_error(error, KS_SCENARIO_ERROR, KS_SCENARIO_ERROR_REFERENCE,
                        "--set %s: no [cluster NAME] section matches '%s' (the clusters: %s)",
                        assignment, rest, names->str);
            return false;
        }
    } else {
        section = section_find(raw, kind, "");
    }
    if (!key_chars_ok(key)) {
        g_set_error(error, KS_SCENARIO_ERROR, KS_SCENARIO_ERROR_SYNTAX,
                    "--set %s: '%s' is not a key (letters, digits, '.', '_', '-')", assignment,
                    key);
        return false;
    }
    enum ks_scenario_error code = KS_SCENARIO_ERROR_VALUE;
    g_autofree char *message = NULL;
    if (!key_check(kind, key, value, &code, &message)) {
        g_set_error(error, KS_SCENARIO_ERROR, (int)code, "--set %s: %s", assignment, message);
        return false;
    }
    if (processor != NULL) {
        section = section_add(raw, KS__SECTION_PRODUCER, processor->name, 0, "--set");
    } else if (section == NULL) {
        section = section_add(raw, kind, "", 0, "--set");
    }
    struct raw_entry *entry = entry_find(section, key);
    if (entry == NULL) {
        entry = entry_add(section, key);
    }
    g_free(entry->value);
    g_free(entry->set_text);
    entry->value = g_strdup(value);
    entry->set_text = g_strdup(assignment);
    entry->line = 0;
    scenario->finalized = false;
    return true;
}

bool ks_scenario_add_section(struct ks_scenario *scenario, const char *header, const char *body,
                             const char *origin, GError **error)
{
    g_autofree char *text = g_strdup_printf("[%s]", header);
    g_autoptr(GError) local = NULL;
    struct ks_scenario_raw *raw = scenario->raw;
    guint before = raw->sections->len;
    struct raw_section *section = NULL;
    if (!scan_header(raw, origin, text, 0, &section, &local)) {
        g_propagate_error(error, g_steal_pointer(&local));
        return false;
    }
    if (!scan_text(raw, origin, body, strlen(body), section, error)) {
        while (raw->sections->len > before) {
            section_remove(raw, raw->sections->len - 1);
        }
        return false;
    }
    scenario->finalized = false;
    return true;
}

void ks_scenario_remove_faults(struct ks_scenario *scenario)
{
    struct ks_scenario_raw *raw = scenario->raw;
    for (guint i = raw->sections->len; i-- > 0;) {
        const struct raw_section *section = g_ptr_array_index(raw->sections, i);
        if (section->kind == KS__SECTION_FAULT) {
            section_remove(raw, i);
        }
    }
    scenario->finalized = false;
}

struct ks_scenario *ks_scenario_copy(const struct ks_scenario *scenario)
{
    struct ks_scenario *copy = g_new0(struct ks_scenario, 1);
    copy->path = g_strdup(scenario->path);
    copy->raw = raw_copy(scenario->raw);
    if (scenario->finalized) {
        g_autoptr(GError) error = NULL;
        bool ok = ks_scenario_finalize(copy, &error);
        ks_assert(ok); /* the same assignments finalized before */
    }
    return copy;
}

/* ---- finalize: tables ------------------------------------------------------------------- */

/* The default of a key: the kafka.version row's preset for it, else the key
 * table's (sim/kafka_versions.c: a preset is only another default, so a
 * written or --set key always wins). */
static const char *default_text(const struct ks_kafka_version *version, enum ks__section_kind kind,
                                const struct ks__key_spec *spec)
{
    const char *preset =
        version != NULL ? ks_kafka_version_preset(version, ks__section_kind_name(kind), spec->name)
                        : NULL;
    return preset != NULL ? preset : spec->default_text;
}

/* The text a key gets: written, inherited from [cluster], or the default.
 * *source is the entry it came from (NULL for a default). */
static const char *key_text(const struct ks_kafka_version *version, enum ks__section_kind kind,
                            const struct ks__key_spec *spec, const struct raw_section *section,
                            const struct raw_section *cluster, const struct raw_entry **source)
{
    const struct raw_entry *entry = entry_find(section, spec->name);
    *source = entry;
    if (entry != NULL) {
        return entry->value;
    }
    if (spec->inherit != NULL) {
        const struct raw_entry *inherited = entry_find(cluster, spec->inherit);
        *source = inherited;
        if (inherited != NULL) {
            return inherited->value;
        }
        const struct ks__key_spec *cluster_spec = ks__key_find(KS__SECTION_CLUSTER, spec->inherit);
        ks_assert(cluster_spec != NULL);
        return default_text(version, KS__SECTION_CLUSTER, cluster_spec);
    }
    return default_text(version, kind, spec);
}

/* Applies every typed key of a section kind to base, defaults from the
 * scenario's kafka.version row (NULL: the key table's). `section` may be
 * NULL (all defaults). */
static bool apply_table(const struct ks_kafka_version *version, enum ks__section_kind kind,
                        void *base, const struct raw_section *section,
                        const struct raw_section *cluster, GError **error)
{
    size_t count = 0;
    const struct ks__key_spec *table = ks__key_table(kind, &count);
    for (size_t i = 0; i < count; i++) {
        const struct ks__key_spec *spec = &table[i];
        if (spec->type == KS__VALUE_CUSTOM || spec->offset == KS__NO_FIELD) {
            continue;
        }
        const struct raw_entry *source = NULL;
        const char *text = key_text(version, kind, spec, section, cluster, &source);
        if (text == NULL) {
            ks_assert(section != NULL); /* only named sections have required keys */
            g_autofree char *label = section_label(section);
            return fail_at(error, KS_SCENARIO_ERROR_MISSING, section, NULL, "%s needs the key '%s'",
                           label, spec->name);
        }
        struct ks__value value;
        g_autofree char *message = NULL;
        if (!ks__value_parse(spec, text, &value, &message)) {
            ks_assert(source != NULL); /* defaults always parse */
            return fail_at(error, KS_SCENARIO_ERROR_VALUE, section, source, "%s", message);
        }
        ks__value_store(spec, base, &value);
    }
    return true;
}

static bool entry_bool(const struct raw_section *section, const char *key, bool *out)
{
    const struct raw_entry *entry = entry_find(section, key);
    if (entry == NULL) {
        return false;
    }
    *out = g_ascii_strcasecmp(entry->value, "true") == 0;
    return true;
}

static bool entry_duration(const struct raw_section *section, const struct raw_entry *entry,
                           int64_t *out, GError **error)
{
    g_autofree char *message = NULL;
    if (!ks__parse_duration_ns(entry->value, true, out, &message)) {
        return fail_at(error, KS_SCENARIO_ERROR_VALUE, section, entry, "%s: %s", entry->key,
                       message);
    }
    return true;
}

/* ---- finalize: [scenario] and [cluster] ------------------------------------------------- */

/* The default name (the file name) goes into run folders, the database and
 * JSON: it must be UTF-8 without control characters. Other characters, a
 * space included, stay allowed there, as before names were checked. */
static bool default_name_ok(const char *name)
{
    if (!g_utf8_validate(name, -1, NULL)) {
        return false;
    }
    for (const char *p = name; *p != '\0'; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            return false;
        }
    }
    return true;
}

static bool finalize_scenario(struct ks_scenario *scenario, const struct raw_section *section,
                              GError **error)
{
    /* kafka.version first: the other sections take their defaults from it. */
    const struct raw_entry *version = entry_find(section, "kafka.version");
    scenario->kafka_version =
        version != NULL ? ks_kafka_version_find(version->value) : ks_kafka_version_default();
    ks_assert(scenario->kafka_version != NULL); /* checked when read (key_check) */
    if (!apply_table(NULL, KS__SECTION_SCENARIO, scenario, section, NULL, error)) {
        return false;
    }
    const struct raw_entry *name = entry_find(section, "name");
    if (name != NULL) {
        g_autofree char *message = NULL;
        if (!ks__client_name_check(name->value, "scenario", &message)) {
            return fail_at(error, KS_SCENARIO_ERROR_VALUE, section, name, "scenario %s", message);
        }
        scenario->name = g_strdup(name->value);
    } else {
        g_autofree char *base = g_path_get_basename(scenario->path);
        if (g_str_has_suffix(base, ".ini")) {
            base[strlen(base) - 4] = '\0';
        }
        if (!default_name_ok(base)) {
            return fail_at(error, KS_SCENARIO_ERROR_VALUE, section, NULL,
                           "the scenario's name comes from the file name, which is not UTF-8 "
                           "text or has a control character: give one with name = ... in "
                           "[scenario]");
        }
        scenario->name = g_strdup(base);
    }
    if (scenario->description == NULL) {
        scenario->description = g_strdup("");
    }
    return true;
}

static bool broker_check(const struct ks_scenario *scenario, int64_t id,
                         const struct raw_section *section, const struct raw_entry *entry,
                         GError **error)
{
    if (id < 1 || id > scenario->cluster.broker_count) {
        return fail_at(error, KS_SCENARIO_ERROR_REFERENCE, section, entry,
                       "%s: broker %" PRId64 " does not exist (brokers = %d: ids 1..%d)",
                       entry->key, id, scenario->cluster.broker_count,
                       scenario->cluster.broker_count);
    }
    return true;
}

static int link_compare(const void *a, const void *b)
{
    const struct ks_link_latency *x = a;
    const struct ks_link_latency *y = b;
    if (x->broker_a != y->broker_a) {
        return x->broker_a < y->broker_a ? -1 : 1;
    }
    return (x->broker_b > y->broker_b) - (x->broker_b < y->broker_b);
}

static bool finalize_links(struct ks_scenario *scenario, const struct raw_section *section,
                           GError **error)
{
    size_t count = section != NULL ? section->entries->len : 0;
    scenario->link_latencies = g_new0(struct ks_link_latency, count + 1);
    for (size_t i = 0; i < count; i++) {
        const struct raw_entry *entry = g_ptr_array_index(section->entries, i);
        int64_t a = 0;
        int64_t b = 0;
        if (ks__key_find(KS__SECTION_CLUSTER, entry->key) != NULL ||
            !link_key_parse(entry->key, &a, &b)) {
            continue;
        }
        if (!broker_check(scenario, a, section, entry, error) ||
            !broker_check(scenario, b, section, entry, error)) {
            return false;
        }
        if (a == b) {
            return fail_at(error, KS_SCENARIO_ERROR_VALUE, section, entry,
                           "%s: a link joins two different brokers", entry->key);
        }
        struct ks_link_latency link = { .broker_a = (int32_t)MIN(a, b),
                                        .broker_b = (int32_t)MAX(a, b),
                                        .line = entry->line };
        if (!entry_duration(section, entry, &link.latency_ns, error)) {
            return false;
        }
        for (size_t j = 0; j < scenario->link_latency_count; j++) {
            const struct ks_link_latency *other = &scenario->link_latencies[j];
            if (other->broker_a == link.broker_a && other->broker_b == link.broker_b) {
                return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                               "%s: the link %d-%d already has a latency (line %u)", entry->key,
                               link.broker_a, link.broker_b, other->line);
            }
        }
        scenario->link_latencies[scenario->link_latency_count++] = link;
    }
    qsort(scenario->link_latencies, scenario->link_latency_count, sizeof(struct ks_link_latency),
          link_compare);
    return true;
}

static bool finalize_racks(struct ks_scenario *scenario, const struct raw_section *section,
                           GError **error)
{
    const struct raw_entry *entry = entry_find(section, "racks");
    if (entry == NULL) {
        return true;
    }
    g_auto(GStrv) racks = g_strsplit(entry->value, ",", -1);
    guint count = g_strv_length(racks);
    if (count != (guint)scenario->cluster.broker_count) {
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                       "racks: %u racks given for %d brokers (one per broker)", count,
                       scenario->cluster.broker_count);
    }
    for (guint i = 0; i < count; i++) {
        char *rack = g_strstrip(racks[i]);
        if (rack[0] == '\0' || strlen(rack) >= sizeof scenario->cluster.racks[0]) {
            return fail_at(error, KS_SCENARIO_ERROR_VALUE, section, entry,
                           "racks: rack %u must be 1 to %zu characters", i + 1,
                           sizeof scenario->cluster.racks[0] - 1);
        }
        g_strlcpy(scenario->cluster.racks[i], rack, sizeof scenario->cluster.racks[0]);
    }
    return true;
}

static bool finalize_cluster(struct ks_scenario *scenario, const struct raw_section *section,
                             GError **error)
{
    if (!apply_table(scenario->kafka_version, KS__SECTION_CLUSTER, scenario, section, NULL,
                     error) ||
        !finalize_racks(scenario, section, error) || !finalize_links(scenario, section, error)) {
        return false;
    }
    struct ks_cluster_config *cluster = &scenario->cluster;
    if (cluster->replica_fetch_wait_ns_max > cluster->replica_lag_ns_max) {
        const struct raw_entry *entry = entry_find(section, "replica.fetch.wait.max.ms");
        if (entry == NULL) {
            entry = entry_find(section, "replica.lag.time.max.ms");
        }
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                       "replica.fetch.wait.max.ms must not exceed replica.lag.time.max.ms "
                       "(Kafka rejects it)");
    }
    if (cluster->broker_heartbeat_interval_ns >= cluster->broker_session_timeout_ns) {
        const struct raw_entry *entry = entry_find(section, "broker.heartbeat.interval.ms");
        if (entry == NULL) {
            entry = entry_find(section, "broker.session.timeout.ms");
        }
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                       "broker.heartbeat.interval.ms must be below broker.session.timeout.ms");
    }
    if (cluster->controller_count > 1 && cluster->controller_model != KS_CONTROLLER_MODEL_KRAFT) {
        const struct raw_entry *entry = entry_find(section, "controllers");
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                       "controllers = %d needs controller = kraft (a KRaft quorum; under "
                       "controller = zookeeper one broker is the controller)",
                       cluster->controller_count);
    }
    if (cluster->eligible_leader_replicas_enable) {
        /* KIP-966 rests on KAFKA-15583: a replica that leaves an ISR below min
         * ISR holds every committed record only because the HW stops there;
         * and ELR is a KRaft controller's, not the pre-0.11 ZooKeeper era's. */
        const char *needs =
            cluster->truncation != KS_TRUNCATION_LEADER_EPOCH
                ? "replication.truncation = leader-epoch"
            : !cluster->hw_requires_min_isr ? "hw.requires.min.insync.replicas = true"
            : cluster->controller_model != KS_CONTROLLER_MODEL_KRAFT ? "controller = kraft"
                                                                     : NULL;
        if (needs != NULL) {
            const struct raw_entry *entry = entry_find(section, "eligible.leader.replicas.enable");
            return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                           "eligible.leader.replicas.enable = true needs %s (KIP-966 builds on "
                           "the HW rule of Kafka 3.7 and the KRaft controller; kafka.version is "
                           "%s)",
                           needs, scenario->kafka_version->name);
        }
    }
    /* Kafka refuses to auto-create __consumer_offsets with fewer live brokers than
     * its replication factor; ksim caps it instead so small clusters work. */
    if (cluster->offsets_topic_replication_factor > cluster->broker_count) {
        cluster->offsets_topic_replication_factor = cluster->broker_count;
    }
    return true;
}

/* ---- finalize: topics -------------------------------------------------------------------- */

/* assignment = 1,2,3 ; 2,3,1 : one replica list per partition, leader first. */
static bool finalize_assignment(const struct ks_scenario *scenario, struct ks_topic_config *topic,
                                const struct raw_section *section, GError **error)
{
    const struct raw_entry *entry = entry_find(section, "assignment");
    if (entry == NULL) {
        return true;
    }
    g_auto(GStrv) lists = g_strsplit(entry->value, ";", -1);
    guint count = g_strv_length(lists);
    if (count != (guint)topic->partition_count) {
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                       "assignment: %u replica lists for %d partitions (one per partition, "
                       "separated by ';')",
                       count, topic->partition_count);
    }
    /* As large as the topic; the topic owns it from here, so a later error
     * leaves it to fields_clear. */
    ks_topic_config_assignment_new(topic);
    for (guint p = 0; p < count; p++) {
        g_auto(GStrv) ids = g_strsplit(lists[p], ",", -1);
        guint rf = g_strv_length(ids);
        if (rf != (guint)topic->replication_factor) {
            return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                           "assignment: partition %u lists %u replicas, replication.factor is %d",
                           p, rf, topic->replication_factor);
        }
        for (guint r = 0; r < rf; r++) {
            int64_t id = 0;
            if (!ks__parse_int64(g_strstrip(ids[r]), &id)) {
                return fail_at(error, KS_SCENARIO_ERROR_VALUE, section, entry,
                               "assignment: '%s' in partition %u is not a broker id", ids[r], p);
            }
            if (!broker_check(scenario, id, section, entry, error)) {
                return false;
            }
            for (guint q = 0; q < r; q++) {
                if (topic->assignment[p][q] == id) {
                    return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                                   "assignment: broker %" PRId64 " appears twice in partition %u",
                                   id, p);
                }
            }
            topic->assignment[p][r] = (int32_t)id;
        }
    }
    return true;
}

/* The entry that set a topic key, directly or by inheritance, for messages. */
static const struct raw_entry *topic_key_entry(const struct raw_section *section,
                                               const struct raw_section *cluster, const char *key)
{
    const struct raw_entry *entry = entry_find(section, key);
    if (entry == NULL) {
        const struct ks__key_spec *spec = ks__key_find(KS__SECTION_TOPIC, key);
        entry = entry_find(cluster, spec->inherit);
    }
    return entry;
}

static bool finalize_topic(const struct ks_scenario *scenario, struct ks_topic_config *topic,
                           const struct raw_section *section, const struct raw_section *cluster,
                           GError **error)
{
    g_strlcpy(topic->name, section->name, sizeof topic->name);
    if (!apply_table(scenario->kafka_version, KS__SECTION_TOPIC, topic, section, cluster, error)) {
        return false;
    }
    if (topic->replication_factor > scenario->cluster.broker_count) {
        const struct raw_entry *entry = topic_key_entry(section, cluster, "replication.factor");
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                       "topic %s: replication.factor %d is more than the %d brokers", topic->name,
                       topic->replication_factor, scenario->cluster.broker_count);
    }
    if (topic->min_insync_replicas > topic->replication_factor) {
        const struct raw_entry *entry = topic_key_entry(section, cluster, "min.insync.replicas");
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                       "topic %s: min.insync.replicas %d is more than replication.factor %d "
                       "(acks=all could never succeed)",
                       topic->name, topic->min_insync_replicas, topic->replication_factor);
    }
    return finalize_assignment(scenario, topic, section, error);
}

/* ---- finalize: clients --------------------------------------------------------------------- */

static bool topic_reference(const struct ks_scenario *scenario, const struct raw_section *section,
                            int32_t *out, GError **error)
{
    const struct raw_entry *entry = entry_find(section, "topic");
    if (entry == NULL) {
        g_autofree char *label = section_label(section);
        return fail_at(error, KS_SCENARIO_ERROR_MISSING, section, NULL, "%s needs the key 'topic'",
                       label);
    }
    if (strchr(entry->value, ',') != NULL) {
        /* Kafka's clients take several topics (a subscription, records to
         * any topic); a ksim client has one, and a comma is never in a
         * topic name. */
        return fail_at(error, KS_SCENARIO_ERROR_NOT_MODELLED, section, entry,
                       "topic = %s: Kafka's %s is not modelled by ksim (see docs/model.md): "
                       "one topic per client",
                       entry->value,
                       section->kind == KS__SECTION_CONSUMER ? "subscription to several topics"
                                                             : "producing to several topics");
    }
    *out = ks_scenario_topic_index(scenario, entry->value);
    if (*out < 0) {
        return fail_at(error, KS_SCENARIO_ERROR_REFERENCE, section, entry,
                       "topic = %s: there is no [topic %s]", entry->value, entry->value);
    }
    return true;
}

static bool producer_rules(const struct ks_scenario *scenario, struct ks_producer_config *producer,
                           const struct raw_section *section, GError **error);

static bool finalize_producer(const struct ks_scenario *scenario,
                              struct ks_producer_config *producer,
                              const struct raw_section *section, GError **error)
{
    g_strlcpy(producer->name, section->name, sizeof producer->name);
    producer->input_consumer_index = -1; /* a workload of its own (processors' come later) */
    return apply_table(scenario->kafka_version, KS__SECTION_PRODUCER, producer, section, NULL,
                       error) &&
           topic_reference(scenario, section, &producer->topic_index, error) &&
           producer_rules(scenario, producer, section, error);
}

/* Kafka's ProducerConfig rules between a producer's settings; `section` gave
 * them (its entries are cited). */
static bool producer_rules(const struct ks_scenario *scenario, struct ks_producer_config *producer,
                           const struct raw_section *section, GError **error)
{
    /* Kafka's ProducerConfig: idempotence needs acks=all, retries > 0 and at most
     * 5 requests in flight. Set explicitly, a conflict is an error; left at its
     * default, idempotence is quietly turned off. */
    const char *conflict = producer->acks != KS_ACKS_ALL ? "acks"
                           : producer->retries == 0      ? "retries"
                           : producer->max_in_flight > 5 ? "max.in.flight.requests.per.connection"
                                                         : NULL;
    if (conflict != NULL && producer->enable_idempotence) {
        /* A --set of the conflicting key overrides an enable.idempotence = true
         * written in the file (the later setting wins), so that
         * `--set producer.p1.acks=1` works on any file. */
        const struct raw_entry *idempotence = entry_find(section, "enable.idempotence");
        const struct raw_entry *entry = entry_find(section, conflict);
        bool overridden = entry != NULL && entry->set_text != NULL && idempotence != NULL &&
                          idempotence->set_text == NULL;
        if (idempotence != NULL && !overridden) {
            /* A conflicting default comes from kafka.version (acks = 1, retries
             * = 0 before Kafka 3.0 and 2.1), as Kafka's own ConfigException. */
            g_autofree char *origin = entry == NULL
                                          ? g_strdup_printf(", the default of kafka.version = %s",
                                                            scenario->kafka_version->name)
                                          : g_strdup("");
            return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section,
                           entry != NULL ? entry : idempotence,
                           "enable.idempotence = true needs acks = all, retries > 0 and "
                           "max.in.flight.requests.per.connection <= 5 (%s%s)",
                           conflict, origin);
        }
        producer->enable_idempotence = false;
    }
    /* Kafka's ProducerConfig: a transactional.id needs idempotence. */
    if (producer->transactional_id[0] != 0 && !producer->enable_idempotence) {
        const struct raw_entry *entry = entry_find(section, "transactional.id");
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                       "transactional.id needs enable.idempotence = true (acks = all, "
                       "retries > 0, max.in.flight.requests.per.connection <= 5)");
    }
    /* Kafka: delivery.timeout.ms >= linger.ms + request.timeout.ms; an explicit
     * smaller value is an error, the default is raised to the sum. */
    int64_t needed_ns = producer->linger_ns + producer->request_timeout_ns;
    if (producer->delivery_timeout_ns < needed_ns) {
        const struct raw_entry *entry = entry_find(section, "delivery.timeout.ms");
        if (entry != NULL) {
            return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                           "delivery.timeout.ms must be at least linger.ms + request.timeout.ms "
                           "(%" PRId64 ")",
                           needed_ns / 1000000);
        }
        producer->delivery_timeout_ns = needed_ns;
    }
    return true;
}

/* output.topic and transactional.id of a [consumer] (a processor). */
static bool finalize_processor(const struct ks_scenario *scenario,
                               struct ks_consumer_config *consumer,
                               const struct raw_section *section, GError **error)
{
    consumer->output_topic_index = -1;
    consumer->output_producer_index = -1;
    const struct raw_entry *output = entry_find(section, "output.topic");
    if (output == NULL) {
        const struct raw_entry *id = entry_find(section, "transactional.id");
        if (id != NULL && consumer->transactional_id[0] != 0) {
            return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, id,
                           "transactional.id on a consumer needs output.topic (a processor)");
        }
        return true;
    }
    consumer->output_topic_index = ks_scenario_topic_index(scenario, output->value);
    if (consumer->output_topic_index < 0) {
        return fail_at(error, KS_SCENARIO_ERROR_REFERENCE, section, output,
                       "output.topic = %s: there is no [topic %s]", output->value, output->value);
    }
    if (consumer->output_topic_index == consumer->topic_index) {
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, output,
                       "output.topic = %s: a processor writes to another topic than it reads",
                       output->value);
    }
    if (consumer->commit != KS_COMMIT_AFTER_PROCESS) {
        const struct raw_entry *commit = entry_find(section, "commit");
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section,
                       commit != NULL ? commit : output,
                       "output.topic needs commit = after-process (and enable.auto.commit = "
                       "false): a processor commits after its output is written");
    }
    /* Kafka Streams gives each stream thread's producer a transactional.id of
     * its own (exactly_once_v2: application.id-processId-threadIdx, KIP-447),
     * and two live producers with one id fence each other over and over
     * (TransactionCoordinator.handleInitProducerId bumps the epoch). A
     * processor's restart is one instance replacing itself, which a single
     * [consumer] models; two processors sharing an id are a mistake. */
    const struct raw_entry *id = entry_find(section, "transactional.id");
    for (const struct ks_consumer_config *other = scenario->consumers;
         consumer->transactional_id[0] != 0 && other < consumer; other++) {
        if (other->output_topic_index >= 0 &&
            strcmp(other->transactional_id, consumer->transactional_id) == 0) {
            return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, id,
                           "transactional.id = %s: processor %s has the same one; each "
                           "processor's producer needs its own (two live producers with one id "
                           "fence each other); a zombie is one processor paused or crashed",
                           consumer->transactional_id, other->name);
        }
    }
    return true;
}

/* A processor's own producer is set in a [producer NAME] of the consumer's
 * name: Kafka client settings only, since the processor decides what it
 * writes, where and when. The key and why it is not the section's. */
static const char *processor_producer_refuses(const char *key)
{
    static const char *const keys[][2] = {
        { "topic", "the processor writes to its output.topic" },
        { "cluster", "the processor's producer writes to its consumer's cluster" },
        { "transactional.id", "it is the [consumer]'s transactional.id" },
        { "rate", "the processor sends one record per processed input record" },
        { "count", "the processor sends one record per processed input record" },
        { "keys", "the output key names the input record" },
        { "value.bytes", "the processor's output records are its own" },
        { "value.random.percent", "the processor's output records are its own" },
        { "start", "the producer starts with its consumer" },
        { "start.jitter", "the producer starts with its consumer" },
        { "transaction.records", "the processor ends a transaction after each poll's records" },
        { "transaction.abort.rate", "the processor ends a transaction after each poll's records" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
        if (strcmp(key, keys[i][0]) == 0) {
            return keys[i][1];
        }
    }
    return NULL;
}

/* The [producer NAME] of processor NAME, or NULL (none, or NAME is no
 * processor: no [consumer NAME] with output.topic). */
static const struct raw_section *processor_producer_section(struct ks_scenario_raw *raw,
                                                            const struct raw_section *producer)
{
    const struct raw_section *consumer = section_find(raw, KS__SECTION_CONSUMER, producer->name);
    return consumer != NULL && entry_find(consumer, "output.topic") != NULL ? producer : NULL;
}

/* Applies the keys [producer NAME] gives a processor's producer. */
static bool apply_processor_producer(const struct ks_scenario *scenario,
                                     struct ks_producer_config *producer,
                                     const struct raw_section *section, GError **error)
{
    for (guint i = 0; i < section->entries->len; i++) {
        const struct raw_entry *entry = g_ptr_array_index(section->entries, i);
        const char *why = processor_producer_refuses(entry->key);
        if (why != NULL) {
            return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                           "%s of processor %s's own producer: %s", entry->key, section->name, why);
        }
        const struct ks__key_spec *spec = ks__key_find(KS__SECTION_PRODUCER, entry->key);
        ks_assert(spec != NULL); /* checked when read */
        struct ks__value value;
        g_autofree char *message = NULL;
        if (!ks__value_parse(spec, entry->value, &value, &message)) {
            return fail_at(error, KS_SCENARIO_ERROR_VALUE, section, entry, "%s", message);
        }
        ks__value_store(spec, producer, &value);
    }
    if (producer->transactional_id[0] != 0 &&
        (!producer->enable_idempotence || producer->acks != KS_ACKS_ALL || producer->retries == 0 ||
         producer->max_in_flight > 5)) {
        const struct raw_entry *entry = entry_find(section, "enable.idempotence");
        static const char *const causes[] = { "acks", "retries",
                                              "max.in.flight.requests.per.connection" };
        for (size_t i = 0; entry == NULL && i < G_N_ELEMENTS(causes); i++) {
            entry = entry_find(section, causes[i]);
        }
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                       "processor %s is exactly-once (transactional.id): its producer needs "
                       "enable.idempotence = true, acks = all, retries > 0 and "
                       "max.in.flight.requests.per.connection <= 5",
                       section->name);
    }
    return producer_rules(scenario, producer, section, error);
}

/* Appends the producer of every processor (after the scenario's own, so
 * their indexes, nodes and identities stay as they were), with the settings
 * of a [producer NAME] of the consumer's name if there is one. */
static bool finalize_processor_producers(struct ks_scenario *scenario, GError **error)
{
    size_t extra = 0;
    for (size_t i = 0; i < scenario->consumer_count; i++) {
        extra += scenario->consumers[i].output_topic_index >= 0;
    }
    if (extra == 0) {
        return true;
    }
    scenario->producers = g_renew(struct ks_producer_config, scenario->producers,
                                  scenario->producer_count + extra + 1);
    scenario->producer_cluster =
        g_renew(int32_t, scenario->producer_cluster, scenario->producer_count + extra + 1);
    for (size_t i = 0; i < scenario->consumer_count; i++) {
        struct ks_consumer_config *consumer = &scenario->consumers[i];
        if (consumer->output_topic_index < 0) {
            continue;
        }
        struct ks_producer_config *producer = &scenario->producers[scenario->producer_count];
        ks_producer_config_defaults(producer);
        g_strlcpy(producer->name, consumer->name, sizeof producer->name);
        producer->topic_index = consumer->output_topic_index;
        producer->acks = KS_ACKS_ALL; /* Kafka Streams' producer: acks = all, idempotent */
        producer->enable_idempotence = true;
        g_strlcpy(producer->transactional_id, consumer->transactional_id,
                  sizeof producer->transactional_id);
        producer->txn_records = INT32_MAX; /* the consumer ends each transaction */
        producer->rate_per_s = 0;
        producer->count = 0;
        producer->start_ns = consumer->start_ns;
        producer->start_jitter_ns = 0;
        producer->input_consumer_index = (int32_t)i;
        consumer->output_producer_index = (int32_t)scenario->producer_count;
        /* the application's producer writes to its consumer's cluster */
        scenario->producer_cluster[scenario->producer_count] = scenario->consumer_cluster[i];
        scenario->producer_count++;
        const struct raw_section *section =
            section_find(scenario->raw, KS__SECTION_PRODUCER, consumer->name);
        if (section != NULL && !apply_processor_producer(scenario, producer, section, error)) {
            return false;
        }
    }
    return true;
}

static bool finalize_consumer(const struct ks_scenario *scenario,
                              struct ks_consumer_config *consumer,
                              const struct raw_section *section, GError **error)
{
    g_strlcpy(consumer->name, section->name, sizeof consumer->name);
    if (!apply_table(scenario->kafka_version, KS__SECTION_CONSUMER, consumer, section, NULL,
                     error) ||
        !topic_reference(scenario, section, &consumer->topic_index, error)) {
        return false;
    }
    /* commit given: manual commits in that mode; enable.auto.commit = true with it
     * is a contradiction. Else enable.auto.commit (default true) decides. */
    const struct raw_entry *commit = entry_find(section, "commit");
    bool auto_commit = true;
    bool auto_given = entry_bool(section, "enable.auto.commit", &auto_commit);
    if (commit != NULL) {
        if (auto_given && auto_commit) {
            return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, commit,
                           "commit = %s needs enable.auto.commit = false", commit->value);
        }
        const struct ks__key_spec *spec = ks__key_find(KS__SECTION_CONSUMER, "commit");
        struct ks__value value;
        g_autofree char *message = NULL;
        bool ok = ks__value_parse(spec, commit->value, &value, &message);
        ks_assert(ok); /* checked when read */
        consumer->commit = (enum ks_commit_mode)value.integer;
    } else {
        consumer->commit = auto_commit ? KS_COMMIT_AUTO : KS_COMMIT_AFTER_PROCESS;
    }
    if (!finalize_processor(scenario, consumer, section, error)) {
        return false;
    }
    if (consumer->heartbeat_interval_ns >= consumer->session_timeout_ns) {
        const struct raw_entry *entry = entry_find(section, "heartbeat.interval.ms");
        if (entry == NULL) {
            entry = entry_find(section, "session.timeout.ms");
        }
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                       "heartbeat.interval.ms must be below session.timeout.ms");
    }
    return true;
}

/* ---- finalize: targets and triggers ------------------------------------------------------------ */

/* A parse context for one value: where it is, for messages. */
struct value_site {
    const struct ks_scenario *scenario;
    const struct raw_section *section;
    const struct raw_entry *entry;
    GError **error;
};

static bool site_fail(const struct value_site *site, enum ks_scenario_error code,
                      const char *format, ...) G_GNUC_PRINTF(3, 4);

static bool site_fail(const struct value_site *site, enum ks_scenario_error code,
                      const char *format, ...)
{
    va_list args;
    va_start(args, format);
    g_autofree char *message = g_strdup_vprintf(format, args);
    va_end(args);
    return fail_at(site->error, code, site->section, site->entry, "%s = %s: %s", site->entry->key,
                   site->entry->value, message);
}

static bool tp_parse(const struct value_site *site, const char *text, struct ks_tp *out)
{
    g_autofree char *copy = g_strstrip(g_strdup(text));
    char *dash = strrchr(copy, '-');
    int64_t partition = 0;
    if (dash == NULL || dash == copy || !ks__parse_int64(dash + 1, &partition)) {
        return site_fail(site, KS_SCENARIO_ERROR_VALUE,
                         "'%s' is not a topic-partition such as orders-0", copy);
    }
    *dash = '\0';
    int32_t topic = ks_scenario_topic_index(site->scenario, copy);
    if (topic < 0) {
        return site_fail(site, KS_SCENARIO_ERROR_REFERENCE, "there is no [topic %s]", copy);
    }
    int32_t count = site->scenario->topics[topic].partition_count;
    if (partition < 0 || partition >= count) {
        return site_fail(site, KS_SCENARIO_ERROR_REFERENCE,
                         "topic %s has partitions 0..%d, not %" PRId64, copy, count - 1, partition);
    }
    out->topic_index = topic;
    out->partition = (int32_t)partition;
    return true;
}

/* "fn(arg)" -> fn and arg (both stripped, owned); false if not that shape. */
static bool call_split(const char *text, char **fn, char **arg)
{
    const char *open = strchr(text, '(');
    size_t length = strlen(text);
    if (open == NULL || length == 0 || text[length - 1] != ')') {
        return false;
    }
    *fn = g_strstrip(g_strndup(text, (size_t)(open - text)));
    *arg = g_strstrip(g_strndup(open + 1, (size_t)(text + length - 1 - (open + 1))));
    return true;
}

static bool broker_id_parse(const struct value_site *site, const char *text, int32_t *out)
{
    int64_t id = 0;
    if (!ks__parse_int64(text, &id)) {
        return site_fail(site, KS_SCENARIO_ERROR_VALUE, "'%s' is not a broker id", text);
    }
    if (id < 1 || id > site->scenario->cluster.broker_count) {
        return site_fail(site, KS_SCENARIO_ERROR_REFERENCE,
                         "broker %" PRId64 " does not exist (brokers = %d: ids 1..%d)", id,
                         site->scenario->cluster.broker_count,
                         site->scenario->cluster.broker_count);
    }
    *out = (int32_t)id;
    return true;
}

/* rack(NAME): *out becomes the lowest broker id of that rack. */
static bool rack_parse(const struct value_site *site, const char *name, int32_t *out)
{
    const struct ks_cluster_config *cluster = &site->scenario->cluster;
    if (cluster->racks[0][0] == '\0') {
        return site_fail(site, KS_SCENARIO_ERROR_REFERENCE,
                         "rack(%s): the cluster has no racks (give [cluster] racks = ...)", name);
    }
    GString *known = g_string_new(NULL);
    for (int32_t b = 0; b < cluster->broker_count; b++) {
        if (strcmp(cluster->racks[b], name) == 0) {
            g_string_free(known, TRUE);
            *out = b + 1;
            return true;
        }
        bool listed = false;
        for (int32_t e = 0; e < b && !listed; e++) {
            listed = strcmp(cluster->racks[e], cluster->racks[b]) == 0;
        }
        if (!listed) {
            g_string_append_printf(known, "%s%s", known->len > 0 ? ", " : "", cluster->racks[b]);
        }
    }
    site_fail(site, KS_SCENARIO_ERROR_REFERENCE, "there is no rack '%s' (racks: %s)", name,
              known->str);
    g_string_free(known, TRUE);
    return false;
}

static bool target_parse(const struct value_site *site, const char *raw_text, struct ks_target *out)
{
    g_autofree char *text = g_strstrip(g_strdup(raw_text));
    memset(out, 0, sizeof *out);
    out->tp.topic_index = -1;
    out->tp.partition = -1;
    out->client_index = -1;
    if (strcmp(text, "zookeeper") == 0) {
        if (site->scenario->cluster.controller_model != KS_CONTROLLER_MODEL_ZOOKEEPER) {
            return site_fail(site, KS_SCENARIO_ERROR_REFERENCE,
                             "there is no ZooKeeper node under controller = kraft (the "
                             "ZooKeeper era is [cluster] controller = zookeeper)");
        }
        out->kind = KS_TARGET_ZOOKEEPER;
        return true;
    }
    if (strcmp(text, "controller") == 0) {
        out->kind = KS_TARGET_CONTROLLER;
        return true;
    }
    if (strcmp(text, "random") == 0) {
        out->kind = KS_TARGET_RANDOM;
        return true;
    }
    if (strcmp(text, "all") == 0) {
        out->kind = KS_TARGET_ALL;
        return true;
    }
    const char *colon = strchr(text, ':');
    if (colon != NULL && site->scenario->cluster_count > 0) {
        /* NAME:ID, one broker of a cluster (several clusters) */
        g_autofree char *name = g_strndup(text, (gsize)(colon - text));
        out->kind = KS_TARGET_BROKER;
        out->in_cluster = true;
        out->cluster_index = ks_scenario_cluster_index(site->scenario, name);
        if (out->cluster_index < 0) {
            return site_fail(site, KS_SCENARIO_ERROR_REFERENCE, "there is no [cluster %s]", name);
        }
        int32_t brokers = site->scenario->clusters[out->cluster_index].cluster.broker_count;
        int64_t id = 0;
        if (!ks__parse_int64(colon + 1, &id)) {
            return site_fail(site, KS_SCENARIO_ERROR_VALUE, "'%s' is not a broker id", colon + 1);
        }
        if (id < 1 || id > brokers) {
            return site_fail(site, KS_SCENARIO_ERROR_REFERENCE,
                             "cluster %s has no broker %" PRId64 " (brokers = %d: ids 1..%d)",
                             name, id, brokers, brokers);
        }
        out->broker_id = (int32_t)id;
        return true;
    }
    if (g_ascii_isdigit(text[0]) || text[0] == '-') {
        out->kind = KS_TARGET_BROKER;
        return broker_id_parse(site, text, &out->broker_id);
    }
    g_autofree char *fn = NULL;
    g_autofree char *arg = NULL;
    if (!call_split(text, &fn, &arg)) {
        return site_fail(site, KS_SCENARIO_ERROR_VALUE,
                         "'%s' is not a target (a broker id, leader(TP), follower(TP), "
                         "followers(TP), rack(NAME), all, controller, controller(N), zookeeper, "
                         "random, producer(NAME), "
                         "consumer(NAME))",
                         text);
    }
    if (strcmp(fn, "leader") == 0 || strcmp(fn, "follower") == 0 || strcmp(fn, "followers") == 0) {
        out->kind = strcmp(fn, "leader") == 0     ? KS_TARGET_LEADER
                    : strcmp(fn, "follower") == 0 ? KS_TARGET_FOLLOWER
                                                  : KS_TARGET_FOLLOWERS;
        return tp_parse(site, arg, &out->tp);
    }
    if (strcmp(fn, "controller") == 0) {
        int32_t count = site->scenario->cluster.controller_count;
        char *end = NULL;
        int64_t number = g_ascii_strtoll(arg, &end, 10);
        if (arg[0] == '\0' || !g_ascii_isdigit(arg[0]) || *end != '\0' || number < 1 ||
            number > count) {
            return site_fail(site, KS_SCENARIO_ERROR_REFERENCE,
                             "controllers are numbered 1..%d (controllers = %d), not %s", count,
                             count, arg);
        }
        out->kind = KS_TARGET_CONTROLLER;
        out->controller_number = (int32_t)number;
        return true;
    }
    if (strcmp(fn, "cluster") == 0) {
        out->kind = KS_TARGET_CLUSTER;
        out->cluster_index = ks_scenario_cluster_index(site->scenario, arg);
        if (out->cluster_index < 0) {
            return site_fail(site, KS_SCENARIO_ERROR_REFERENCE, "there is no [cluster %s]", arg);
        }
        return true;
    }
    if (strcmp(fn, "rack") == 0) {
        out->kind = KS_TARGET_RACK;
        return rack_parse(site, arg, &out->broker_id);
    }
    if (strcmp(fn, "producer") == 0) {
        out->kind = KS_TARGET_PRODUCER;
        out->client_index = ks_scenario_producer_index(site->scenario, arg);
        if (out->client_index < 0) {
            return site_fail(site, KS_SCENARIO_ERROR_REFERENCE, "there is no [producer %s]", arg);
        }
        return true;
    }
    if (strcmp(fn, "consumer") == 0) {
        out->kind = KS_TARGET_CONSUMER;
        out->client_index = ks_scenario_consumer_index(site->scenario, arg);
        if (out->client_index < 0) {
            return site_fail(site, KS_SCENARIO_ERROR_REFERENCE, "there is no [consumer %s]", arg);
        }
        return true;
    }
    return site_fail(site, KS_SCENARIO_ERROR_VALUE,
                     "unknown target '%s(...)' (leader, follower, followers, rack, producer, "
                     "consumer)",
                     fn);
}

static bool target_list_parse(const struct value_site *site, const char *text,
                              struct ks_target_list *out)
{
    out->count = 0;
    /* Split at commas outside parentheses: "leader(a-0), 3". */
    g_autofree char *copy = g_strdup(text);
    int depth = 0;
    char *start = copy;
    for (char *p = copy;; p++) {
        if (*p == '(') {
            depth++;
        } else if (*p == ')') {
            depth--;
        }
        if (*p == '\0' || (*p == ',' && depth == 0)) {
            bool end = *p == '\0';
            *p = '\0';
            if (g_strstrip(start)[0] == '\0') {
                return site_fail(site, KS_SCENARIO_ERROR_VALUE, "an empty name in the list");
            }
            if (out->count == KS_FAULT_TARGET_COUNT_MAX) {
                return site_fail(site, KS_SCENARIO_ERROR_VALUE, "more than %d names",
                                 KS_FAULT_TARGET_COUNT_MAX);
            }
            if (!target_parse(site, start, &out->items[out->count])) {
                return false;
            }
            out->count++;
            if (end) {
                break;
            }
            start = p + 1;
        }
    }
    return true;
}

static bool target_equal(const struct ks_target *a, const struct ks_target *b)
{
    return a->kind == b->kind && a->broker_id == b->broker_id &&
           a->tp.topic_index == b->tp.topic_index && a->tp.partition == b->tp.partition &&
           a->client_index == b->client_index && a->cluster_index == b->cluster_index;
}

/* The two sides of a network fault (groups, from/to) name different nodes,
 * each once: `groups = 1 | 1` cuts nothing and is a typing error. Targets
 * are compared as written; two names of one broker (leader(orders-0) and 2)
 * can only be told apart when the fault fires. */
static bool target_lists_disjoint(const struct value_site *site, const struct ks_target_list *a,
                                  const struct ks_target_list *b)
{
    const struct ks_target_list *sides[] = { a, b };
    for (size_t s = 0; s < 2; s++) {
        for (uint32_t i = 0; i < sides[s]->count; i++) {
            for (uint32_t j = 0; j < i; j++) {
                if (target_equal(&sides[s]->items[i], &sides[s]->items[j])) {
                    g_autofree char *name =
                        ks_scenario_format_target(site->scenario, &sides[s]->items[i]);
                    return site_fail(site, KS_SCENARIO_ERROR_VALUE, "'%s' is named twice", name);
                }
            }
        }
    }
    for (uint32_t i = 0; i < a->count; i++) {
        for (uint32_t j = 0; j < b->count; j++) {
            if (target_equal(&a->items[i], &b->items[j])) {
                g_autofree char *name = ks_scenario_format_target(site->scenario, &a->items[i]);
                return site_fail(site, KS_SCENARIO_ERROR_VALUE,
                                 "'%s' is on both sides: a node cannot be cut from itself", name);
            }
            /* Brokers, racks and all name fixed brokers: compare those. */
            bool in_a[KS_BROKER_COUNT_MAX] = { false };
            bool in_b[KS_BROKER_COUNT_MAX] = { false };
            if (!ks_scenario_target_brokers(site->scenario, &a->items[i], in_a) ||
                !ks_scenario_target_brokers(site->scenario, &b->items[j], in_b)) {
                continue;
            }
            for (int32_t id = 1; id <= site->scenario->cluster.broker_count; id++) {
                if (in_a[id - 1] && in_b[id - 1]) {
                    g_autofree char *x = ks_scenario_format_target(site->scenario, &a->items[i]);
                    g_autofree char *y = ks_scenario_format_target(site->scenario, &b->items[j]);
                    return site_fail(site, KS_SCENARIO_ERROR_VALUE,
                                     "'%s' and '%s' both name broker %d: a node cannot be cut "
                                     "from itself",
                                     x, y, id);
                }
            }
        }
    }
    return true;
}

static const struct {
    const char *text;
    enum ks_compare_op op;
} compare_ops[] = {
    /* Two-character operators first, so that "<=" is not read as "<". */
    { "==", KS_OP_EQ }, { "!=", KS_OP_NE }, { "<=", KS_OP_LE }, { ">=", KS_OP_GE },
    { "=", KS_OP_EQ },  { "<", KS_OP_LT },  { ">", KS_OP_GT },
};

/* Reads an operator at the start of text; returns its length (0: none). */
static size_t compare_op_read(const char *text, enum ks_compare_op *op)
{
    for (size_t i = 0; i < KS_ARRAY_COUNT(compare_ops); i++) {
        size_t n = strlen(compare_ops[i].text);
        if (strncmp(text, compare_ops[i].text, n) == 0) {
            *op = compare_ops[i].op;
            return n;
        }
    }
    return 0;
}

static const struct {
    const char *name;
    enum ks_trigger_fn fn;
    const char *args; /* "B,TP", "TP", "B", "P" */
    bool bare_ok;     /* a bare call means >= 1 */
} trigger_fns[] = {
    { "hw", KS_TRIGGER_HW, "B,TP", false },           { "leo", KS_TRIGGER_LEO, "B,TP", false },
    { "isr_size", KS_TRIGGER_ISR_SIZE, "TP", false }, { "crashed", KS_TRIGGER_CRASHED, "B", true },
    { "restarted", KS_TRIGGER_RESTARTED, "B", true }, { "elected", KS_TRIGGER_ELECTED, "TP", true },
    { "acked", KS_TRIGGER_ACKED, "P", false },
};

static bool trigger_args(const struct value_site *site, const char *args_kind, const char *name,
                         const char *args, struct ks_trigger *out)
{
    g_auto(GStrv) parts = g_strsplit(args, ",", -1);
    guint count = g_strv_length(parts);
    guint wanted = strchr(args_kind, ',') != NULL ? 2 : 1;
    if (count != wanted || g_strstrip(parts[0])[0] == '\0') {
        const char *shape = strcmp(args_kind, "B,TP") == 0 ? "(broker, topic-partition)"
                            : strcmp(args_kind, "TP") == 0 ? "(topic-partition)"
                            : strcmp(args_kind, "B") == 0  ? "(broker)"
                                                           : "(producer)";
        return site_fail(site, KS_SCENARIO_ERROR_VALUE, "%s takes %s", name, shape);
    }
    if (strcmp(args_kind, "B,TP") == 0) {
        return broker_id_parse(site, g_strstrip(parts[0]), &out->broker_id) &&
               tp_parse(site, parts[1], &out->tp);
    }
    if (strcmp(args_kind, "TP") == 0) {
        return tp_parse(site, parts[0], &out->tp);
    }
    if (strcmp(args_kind, "B") == 0) {
        return broker_id_parse(site, g_strstrip(parts[0]), &out->broker_id);
    }
    out->producer_index = ks_scenario_producer_index(site->scenario, g_strstrip(parts[0]));
    if (out->producer_index < 0) {
        return site_fail(site, KS_SCENARIO_ERROR_REFERENCE, "there is no [producer %s]", parts[0]);
    }
    return true;
}

static bool trigger_parse(const struct value_site *site, const char *text, struct ks_trigger *out)
{
    memset(out, 0, sizeof *out);
    out->tp.topic_index = -1;
    out->tp.partition = -1;
    out->producer_index = -1;
    const char *close = strchr(text, ')');
    const char *open = strchr(text, '(');
    if (open == NULL || close == NULL || close < open) {
        return site_fail(site, KS_SCENARIO_ERROR_VALUE,
                         "a trigger looks like hw(2, orders-0) >= 2 or crashed(1)");
    }
    g_autofree char *name = g_strstrip(g_strndup(text, (size_t)(open - text)));
    g_autofree char *args = g_strndup(open + 1, (size_t)(close - open - 1));
    size_t fn_index = KS_ARRAY_COUNT(trigger_fns);
    for (size_t i = 0; i < KS_ARRAY_COUNT(trigger_fns); i++) {
        if (strcmp(trigger_fns[i].name, name) == 0) {
            fn_index = i;
        }
    }
    if (fn_index == KS_ARRAY_COUNT(trigger_fns)) {
        return site_fail(site, KS_SCENARIO_ERROR_VALUE,
                         "unknown trigger '%s' (hw, leo, isr_size, crashed, restarted, elected, "
                         "acked)",
                         name);
    }
    out->fn = trigger_fns[fn_index].fn;
    if (!trigger_args(site, trigger_fns[fn_index].args, name, args, out)) {
        return false;
    }
    const char *rest = close + 1;
    while (*rest == ' ' || *rest == '\t') {
        rest++;
    }
    if (*rest == '\0') {
        if (!trigger_fns[fn_index].bare_ok) {
            return site_fail(site, KS_SCENARIO_ERROR_VALUE,
                             "%s(...) needs a comparison, e.g. %s(...) >= 10", name, name);
        }
        out->op = KS_OP_GE;
        out->value = 1;
        return true;
    }
    size_t n = compare_op_read(rest, &out->op);
    g_autofree char *number = g_strstrip(g_strdup(rest + n));
    if (n == 0 || !ks__parse_int64(number, &out->value)) {
        return site_fail(site, KS_SCENARIO_ERROR_VALUE,
                         "after %s(...) expected an operator (== != < <= > >=) and an integer",
                         name);
    }
    return true;
}

/* ---- finalize: faults --------------------------------------------------------------------- */

/* loss = 1% | 0.5% | 10000ppm -> parts per million. A percentage may have
 * up to 4 decimals, which is exactly a whole number of ppm. */
static bool loss_parse(const struct value_site *site, const char *text, uint32_t *out)
{
    g_autofree char *copy = g_strdup(text);
    size_t length = strlen(copy);
    int64_t ppm = -1;
    if (g_str_has_suffix(copy, "ppm")) {
        copy[length - 3] = '\0';
        if (!ks__parse_int64(copy, &ppm)) {
            ppm = -1;
        }
    } else if (length > 1 && copy[length - 1] == '%') {
        copy[length - 1] = '\0';
        char *dot = strchr(copy, '.');
        const char *fraction = "";
        if (dot != NULL) {
            *dot = '\0';
            fraction = dot + 1;
        }
        size_t decimals = strlen(fraction);
        int64_t whole = 0;
        int64_t part = 0;
        bool ok = ks__parse_int64(copy, &whole) && whole >= 0 && whole <= 100 && decimals <= 4 &&
                  (dot == NULL || (decimals > 0 && ks__parse_int64(fraction, &part) && part >= 0));
        if (ok) {
            for (size_t d = decimals; d < 4; d++) {
                part *= 10;
            }
            ppm = whole * 10000 + part;
        }
    }
    if (ppm < 0 || ppm > 1000000) {
        return site_fail(site, KS_SCENARIO_ERROR_VALUE,
                         "a loss between 0%% and 100%% expected (e.g. 1%%, 0.5%% or 10000ppm)");
    }
    *out = (uint32_t)ppm;
    return true;
}

static bool rewind_parse(const struct value_site *site, const char *text, struct ks_fault *fault)
{
    if (strcmp(text, "earliest") == 0) {
        fault->rewind_to = KS_REWIND_EARLIEST;
        return true;
    }
    if (strcmp(text, "latest") == 0) {
        fault->rewind_to = KS_REWIND_LATEST;
        return true;
    }
    if (ks__parse_int64(text, &fault->rewind_offset)) {
        if (fault->rewind_offset < 0) {
            return site_fail(site, KS_SCENARIO_ERROR_VALUE, "an offset is >= 0");
        }
        fault->rewind_to = KS_REWIND_OFFSET;
        return true;
    }
    g_autofree char *message = NULL;
    if (ks__parse_duration_ns(text, true, &fault->rewind_time_ns, &message)) {
        fault->rewind_to = KS_REWIND_TIME;
        return true;
    }
    return site_fail(site, KS_SCENARIO_ERROR_VALUE,
                     "expected earliest, latest, an offset or a time such as 5s");
}

/* A fault key of a plain type (duration, integer): parsed and range-checked
 * by its row in the fault key table, as the scanner already did. */
static bool site_value(const struct value_site *site, int64_t *out)
{
    const struct ks__key_spec *spec = ks__key_find(KS__SECTION_FAULT, site->entry->key);
    ks_assert(spec != NULL && spec->type != KS__VALUE_CUSTOM);
    struct ks__value value;
    g_autofree char *message = NULL;
    if (!ks__value_parse(spec, site->entry->value, &value, &message)) {
        return fail_at(site->error, KS_SCENARIO_ERROR_VALUE, site->section, site->entry, "%s",
                       message);
    }
    *out = value.integer;
    return true;
}

/* Parses one fault key into fault by the key's kind (the action's row says
 * which kind `key` is for this action). */
static bool fault_key(const struct value_site *site, const struct ks_fault_key *key,
                      struct ks_fault *fault)
{
    const char *value = site->entry->value;
    int64_t number = 0;
    switch (key->kind) {
    case KS_FAULT_KEY_TARGET: return target_parse(site, value, &fault->target);
    case KS_FAULT_KEY_MODE:
        if (strcmp(value, "process") == 0 || strcmp(value, "power") == 0) {
            fault->mode = value[1] == 'r' ? KS_CRASH_PROCESS : KS_CRASH_POWER;
            return true;
        }
        return site_fail(site, KS_SCENARIO_ERROR_VALUE, "expected process or power");
    case KS_FAULT_KEY_RESTART_AFTER: return site_value(site, &fault->restart_after_ns);
    case KS_FAULT_KEY_DURATION: return site_value(site, &fault->duration_ns);
    case KS_FAULT_KEY_GROUPS: {
        g_auto(GStrv) sides = g_strsplit(value, "|", -1);
        if (g_strv_length(sides) != 2) {
            return site_fail(site, KS_SCENARIO_ERROR_VALUE,
                             "two groups separated by '|' expected, e.g. 1 | 2,3");
        }
        fault->net_shape = KS_NET_GROUPS;
        return target_list_parse(site, sides[0], &fault->side_a) &&
               target_list_parse(site, sides[1], &fault->side_b) &&
               target_lists_disjoint(site, &fault->side_a, &fault->side_b);
    }
    case KS_FAULT_KEY_ISOLATE:
        fault->net_shape = KS_NET_ISOLATE;
        fault->side_a.count = 1;
        return target_parse(site, value, &fault->side_a.items[0]);
    case KS_FAULT_KEY_FROM:
        fault->net_shape = KS_NET_ONE_WAY;
        return target_list_parse(site, value, &fault->side_a);
    case KS_FAULT_KEY_TO: return target_list_parse(site, value, &fault->side_b);
    case KS_FAULT_KEY_DISK_LATENCY: return site_value(site, &fault->disk_latency_ns);
    case KS_FAULT_KEY_NETWORK_LATENCY: return site_value(site, &fault->network_latency_ns);
    case KS_FAULT_KEY_LOSS: return loss_parse(site, value, &fault->loss_ppm);
    case KS_FAULT_KEY_PARTITION: return tp_parse(site, value, &fault->corrupt_tp);
    case KS_FAULT_KEY_BYTES: {
        bool ok = site_value(site, &number);
        fault->corrupt_bytes = (int32_t)number;
        return ok;
    }
    case KS_FAULT_KEY_POSITION_BYTES: {
        bool ok = site_value(site, &number);
        fault->corrupt_position_bytes = number;
        return ok;
    }
    case KS_FAULT_KEY_FAULT:
        fault->heal_fault_index = ks_scenario_fault_index(site->scenario, value);
        if (fault->heal_fault_index < 0) {
            return site_fail(site, KS_SCENARIO_ERROR_REFERENCE, "there is no [fault %s]", value);
        }
        return true;
    case KS_FAULT_KEY_REWIND_TO: return rewind_parse(site, value, fault);
    case KS_FAULT_KEY_TARGETS: {
        if (!target_list_parse(site, value, &fault->side_a)) {
            return false;
        }
        struct ks_target_list none = { .count = 0 };
        return target_lists_disjoint(site, &fault->side_a, &none);
    }
    case KS_FAULT_KEY_DOWNTIME: return site_value(site, &fault->downtime_ns);
    case KS_FAULT_KEY_CATCH_UP_TIMEOUT: return site_value(site, &fault->catch_up_timeout_ns);
    }
    ks_assert(false);
    return false;
}

/* ---- the loader's side of struct ks_fault_site (sim/fault_actions.h) ---------------------- */

bool ks_fault_site_has(const struct ks_fault_site *site, const char *key)
{
    return entry_find(site->section, key) != NULL;
}

const char *ks_fault_site_written_action(const struct ks_fault_site *site, int32_t fault_index)
{
    const struct raw_section *other = section_find(site->scenario->raw, KS__SECTION_FAULT,
                                                   site->scenario->faults[fault_index].name);
    const struct raw_entry *action = entry_find(other, "action");
    return action != NULL ? action->value : "";
}

bool ks_fault_site_fail(const struct ks_fault_site *site, enum ks_scenario_error code,
                        const char *key, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    g_autofree char *message = g_strdup_vprintf(format, args);
    va_end(args);
    const struct raw_entry *entry = key != NULL ? entry_find(site->section, key) : NULL;
    return fail_at(site->error, code, site->section, entry, "%s", message);
}

/* Rules between keys of one fault, after each key parsed: when it fires,
 * then the action's own (sim/fault_actions.c). */
/* With several clusters a fault names whole clusters (sim/clusters.c fires
 * it): crash or restart cluster(NAME), a partition whose sides are lists of
 * cluster(NAME), a heal; at a time. */
static bool cluster_fault_rules(const struct raw_section *section, const struct ks_fault *fault,
                                GError **error)
{
    const struct raw_entry *when = entry_find(section, "when");
    if (when != NULL) {
        return fail_at(error, KS_SCENARIO_ERROR_NOT_MODELLED, section, when,
                       "with several clusters a fault fires at a time ('at'); triggers are "
                       "not modelled there yet");
    }
    const struct raw_entry *target = entry_find(section, "target");
    switch (fault->action) {
    case KS_FAULT_CRASH:
    case KS_FAULT_RESTART:
        if (target == NULL || (fault->target.kind != KS_TARGET_CLUSTER &&
                               !(fault->target.kind == KS_TARGET_BROKER &&
                                 fault->target.in_cluster))) {
            return fail_at(error, KS_SCENARIO_ERROR_NOT_MODELLED, section, target,
                           "with several clusters, %s takes target = cluster(NAME) (a whole "
                           "cluster) or NAME:ID (broker ID of cluster NAME)",
                           ks_fault_action_name(fault->action));
        }
        return true;
    case KS_FAULT_PARTITION: {
        const struct raw_entry *groups = entry_find(section, "groups");
        bool ok = fault->net_shape == KS_NET_GROUPS && groups != NULL;
        for (uint32_t i = 0; ok && i < fault->side_a.count; i++) {
            ok = fault->side_a.items[i].kind == KS_TARGET_CLUSTER;
        }
        for (uint32_t i = 0; ok && i < fault->side_b.count; i++) {
            ok = fault->side_b.items[i].kind == KS_TARGET_CLUSTER;
        }
        if (!ok) {
            return fail_at(error, KS_SCENARIO_ERROR_NOT_MODELLED, section, groups,
                           "with several clusters, a partition cuts the link between "
                           "clusters: groups = cluster(A) | cluster(B)");
        }
        return true;
    }
    case KS_FAULT_HEAL: return true;
    case KS_FAULT_FAILOVER:
        if (target == NULL || (fault->target.kind != KS_TARGET_CONSUMER &&
                               fault->target.kind != KS_TARGET_PRODUCER)) {
            return fail_at(error, KS_SCENARIO_ERROR_VALUE, section, target,
                           "failover moves a consumer group or a producer: target = "
                           "consumer(NAME) or producer(NAME)");
        }
        return true;
    case KS_FAULT_SLOW:
    case KS_FAULT_PAUSE:
    case KS_FAULT_RESUME:
    case KS_FAULT_DROP:
    case KS_FAULT_CORRUPT:
    case KS_FAULT_REWIND:
    case KS_FAULT_STOP:
    case KS_FAULT_ROLLING_RESTART:
    case KS_FAULT_ACTION_COUNT: break;
    }
    return fail_at(error, KS_SCENARIO_ERROR_NOT_MODELLED, section, entry_find(section, "action"),
                   "action = %s is not modelled with several clusters yet (crash, restart, "
                   "partition, heal and failover are)",
                   ks_fault_action_name(fault->action));
}

static bool fault_rules(const struct ks_scenario *scenario, const struct raw_section *section,
                        struct ks_fault *fault, GError **error)
{
    const struct raw_entry *at = entry_find(section, "at");
    const struct raw_entry *when = entry_find(section, "when");
    if (at == NULL && when == NULL) {
        return fail_at(error, KS_SCENARIO_ERROR_MISSING, section, NULL,
                       "[fault %s] needs 'at' (a time) or 'when' (a trigger)", section->name);
    }
    if (at != NULL && when != NULL) {
        /* Cite the one that came last: a --set, else the later line. */
        const struct raw_entry *later = at->set_text != NULL     ? at
                                        : when->set_text != NULL ? when
                                        : at->line > when->line  ? at
                                                                 : when;
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, later,
                       "[fault %s] has both 'at' and 'when'; give one", section->name);
    }
    if (at != NULL && fault->at_ns >= scenario->duration_ns) {
        g_autofree char *end = ks__format_duration(scenario->duration_ns);
        return fail_at(error, KS_SCENARIO_ERROR_VALUE, section, at,
                       "at = %s is not before the end of the run (duration = %s): the fault "
                       "would never fire",
                       at->value, end);
    }
    const struct raw_entry *delay = entry_find(section, "delay");
    if (delay != NULL && when == NULL) {
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, delay,
                       "delay applies to a 'when' trigger; with 'at' change the time");
    }
    if (scenario->cluster_count > 0) {
        return cluster_fault_rules(section, fault, error);
    }
    struct ks_fault_site site = { scenario, fault, section, error };
    if (!ks_fault_check(&site)) {
        return false;
    }
    /* A one-way cut names different nodes on its two sides (groups are
     * checked as they are parsed). */
    const struct raw_entry *to = entry_find(section, "to");
    if (fault->net_shape == KS_NET_ONE_WAY && to != NULL) {
        struct value_site to_site = { scenario, section, to, error };
        return target_lists_disjoint(&to_site, &fault->side_a, &fault->side_b);
    }
    return true;
}

/* The action of a fault section, or an error. */
static const struct ks_fault_action_row *fault_action_find(const struct raw_section *section,
                                                           GError **error)
{
    const struct raw_entry *action = entry_find(section, "action");
    if (action == NULL) {
        fail_at(error, KS_SCENARIO_ERROR_MISSING, section, NULL, "[fault %s] needs an 'action'",
                section->name);
        return NULL;
    }
    const struct ks_fault_action_row *row = ks_fault_action_find(action->value);
    if (row == NULL) {
        g_autofree char *list = ks_fault_action_list(KS_FAULT_ACTIONS_ALL, "or");
        fail_at(error, KS_SCENARIO_ERROR_VALUE, section, action, "action = %s: expected %s",
                action->value, list);
    }
    return row;
}

static bool finalize_fault(struct ks_scenario *scenario, struct ks_fault *fault,
                           const struct raw_section *section, GError **error)
{
    const struct ks_fault_action_row *row = fault_action_find(section, error);
    if (row == NULL) {
        return false;
    }
    ks_fault_init(fault, section->name, section->line, row->action);
    for (guint i = 0; i < section->entries->len; i++) {
        const struct raw_entry *entry = g_ptr_array_index(section->entries, i);
        struct value_site site = { scenario, section, entry, error };
        if (strcmp(entry->key, "action") == 0) {
            continue;
        }
        if (strcmp(entry->key, "at") == 0) {
            fault->has_at = true;
            if (!site_value(&site, &fault->at_ns)) {
                return false;
            }
            continue;
        }
        if (strcmp(entry->key, "when") == 0) {
            fault->has_when = true;
            if (!trigger_parse(&site, entry->value, &fault->when)) {
                return false;
            }
            continue;
        }
        if (strcmp(entry->key, "delay") == 0) {
            if (!site_value(&site, &fault->delay_ns)) {
                return false;
            }
            continue;
        }
        const struct ks_fault_key *key = ks_fault_action_key(row, entry->key);
        if (key == NULL) {
            g_autofree char *keys = ks_fault_action_keys_text(row);
            return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                           "'%s' does not apply to action = %s (it takes: %s)", entry->key,
                           row->name, keys);
        }
        if (!fault_key(&site, key, fault)) {
            return false;
        }
    }
    return fault_rules(scenario, section, fault, error);
}

/* Each fault against the whole schedule, once every fault is filled
 * (sim/fault_actions.h: schedule_rule). */
static bool finalize_schedule(struct ks_scenario *scenario, GError **error)
{
    size_t index = 0;
    for (guint i = 0; i < scenario->raw->sections->len; i++) {
        const struct raw_section *section = g_ptr_array_index(scenario->raw->sections, i);
        if (section->kind != KS__SECTION_FAULT || scenario->cluster_count > 0) {
            continue; /* several clusters: cluster_fault_rules */
        }
        struct ks_fault_site site = { scenario, &scenario->faults[index++], section, error };
        if (!ks_fault_check_schedule(&site)) {
            return false;
        }
    }
    return true;
}

/* ---- finalize: expectations --------------------------------------------------------------- */

static int double_compare(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

/* An expected value: a plain decimal, "-12", "0", "12.5", nothing else (no
 * sign '+', exponent, hex, nan or inf, which strtod would take). */
static bool number_parse(const char *text, double *out)
{
    const char *p = text + (text[0] == '-');
    size_t whole = strspn(p, "0123456789");
    if (whole == 0) {
        return false;
    }
    p += whole;
    if (*p == '.') {
        size_t fraction = strspn(p + 1, "0123456789");
        if (fraction == 0) {
            return false;
        }
        p += 1 + fraction;
    }
    if (*p != '\0') {
        return false;
    }
    *out = g_ascii_strtod(text, NULL);
    return true;
}

static bool finalize_expectation(struct ks_scenario *scenario, struct ks_expectation *expect,
                                 const struct raw_section *section, const struct raw_entry *entry,
                                 GError **error)
{
    struct value_site site = { scenario, section, entry, error };
    g_strlcpy(expect->key, entry->key, sizeof expect->key);
    expect->line = entry->line;
    expect->tp = (struct ks_tp){ -1, -1 };
    g_autofree char *tp_text = NULL;
    int field = 0;
    if (metric_find(entry->key, &expect->metric)) {
        expect->kind = KS_EXPECT_METRIC;
    } else {
        bool ok = expect_partition_key(entry->key, &tp_text, &field);
        ks_assert(ok); /* R2 */
        static const enum ks_expect_kind kinds[] = { KS_EXPECT_PARTITION_LEADER,
                                                     KS_EXPECT_PARTITION_ISR,
                                                     KS_EXPECT_PARTITION_LEADER_EPOCH,
                                                     KS_EXPECT_PARTITION_HW };
        expect->kind = kinds[field];
        if (!tp_parse(&site, tp_text, &expect->tp)) {
            return false;
        }
    }
    const char *value = entry->value;
    while (*value == ' ') {
        value++;
    }
    expect->op = KS_OP_EQ;
    value += compare_op_read(value, &expect->op);
    g_autofree char *list = g_strstrip(g_strdup(value));
    if (strlen(list) >= sizeof expect->value_text) {
        return site_fail(&site, KS_SCENARIO_ERROR_VALUE, "the value is too long");
    }
    g_strlcpy(expect->value_text, list, sizeof expect->value_text);
    if (list[0] == '\0') {
        return site_fail(&site, KS_SCENARIO_ERROR_VALUE,
                         "a value expected, optionally after = != < <= > >=");
    }
    if (expect->kind == KS_EXPECT_METRIC && expect->metric == KS_METRIC_TRACE_HASH) {
        /* The hash is compared as its 16-hex-digit text. */
        bool hex = strlen(list) == 16;
        for (const char *p = list; *p != '\0'; p++) {
            hex = hex && g_ascii_isxdigit(*p);
        }
        if (!hex || (expect->op != KS_OP_EQ && expect->op != KS_OP_NE)) {
            return site_fail(&site, KS_SCENARIO_ERROR_VALUE,
                             "trace_hash compares with = or != to 16 hex digits");
        }
        return true;
    }
    g_auto(GStrv) parts = g_strsplit(list, ",", -1);
    guint count = g_strv_length(parts);
    if (count > 1 && expect->kind != KS_EXPECT_PARTITION_ISR) {
        return site_fail(&site, KS_SCENARIO_ERROR_VALUE, "a single number expected");
    }
    if (count > 1 && expect->op != KS_OP_EQ && expect->op != KS_OP_NE) {
        return site_fail(&site, KS_SCENARIO_ERROR_VALUE, "a list compares only with = or !=");
    }
    if (count > KS_EXPECT_VALUE_COUNT_MAX) {
        return site_fail(&site, KS_SCENARIO_ERROR_VALUE, "more than %d values",
                         KS_EXPECT_VALUE_COUNT_MAX);
    }
    for (guint i = 0; i < count; i++) {
        if (!number_parse(g_strstrip(parts[i]), &expect->values[i])) {
            return site_fail(&site, KS_SCENARIO_ERROR_VALUE, "'%s' is not a number", parts[i]);
        }
        if (fabs(expect->values[i]) >= 9007199254740992.0) {
            return site_fail(&site, KS_SCENARIO_ERROR_VALUE,
                             "'%s' is too large to compare exactly (2^53 or more)", parts[i]);
        }
        /* isr with = or != names brokers; with an ordering it compares the ISR's size. */
        bool names_brokers = expect->op == KS_OP_EQ || expect->op == KS_OP_NE;
        if (expect->kind == KS_EXPECT_PARTITION_ISR && names_brokers) {
            double id = expect->values[i];
            if (id != (double)(int64_t)id || id < 1 || id > scenario->cluster.broker_count) {
                return site_fail(&site, KS_SCENARIO_ERROR_REFERENCE,
                                 "'%s' is not a broker id (1..%d)", parts[i],
                                 scenario->cluster.broker_count);
            }
        }
    }
    expect->value_count = count;
    qsort(expect->values, count, sizeof expect->values[0], double_compare);
    return true;
}

/* ---- finalize ----------------------------------------------------------------------------- */

/* The [cluster NAME] section of cluster index (NULL: the unnamed [cluster]). */
static const struct raw_section *cluster_section(const struct ks_scenario *scenario,
                                                 int32_t index)
{
    const char *name = scenario->cluster_count > 0 ? scenario->clusters[index].name : "";
    return section_find(scenario->raw, KS__SECTION_CLUSTER, name);
}

/* `cluster = NAME` of a topic or client section: *out its index, or
 * `fallback` when the key is absent (-1: required with several clusters). */
static bool section_cluster(const struct ks_scenario *scenario, const struct raw_section *section,
                            int32_t fallback, int32_t *out, GError **error)
{
    const struct raw_entry *entry = entry_find(section, "cluster");
    g_autofree char *label = section_label(section);
    if (entry == NULL) {
        if (scenario->cluster_count > 1 && fallback < 0) {
            return fail_at(error, KS_SCENARIO_ERROR_MISSING, section, NULL,
                           "%s needs the key 'cluster' (the scenario has %zu clusters)", label,
                           scenario->cluster_count);
        }
        *out = fallback < 0 ? 0 : fallback;
        return true;
    }
    if (scenario->cluster_count == 0) {
        return fail_at(error, KS_SCENARIO_ERROR_REFERENCE, section, entry,
                       "cluster = %s: there is no [cluster %s] (the scenario has one unnamed "
                       "[cluster])",
                       entry->value, entry->value);
    }
    *out = ks_scenario_cluster_index(scenario, entry->value);
    if (*out < 0) {
        return fail_at(error, KS_SCENARIO_ERROR_REFERENCE, section, entry,
                       "cluster = %s: there is no [cluster %s]", entry->value, entry->value);
    }
    if (fallback >= 0 && *out != fallback) {
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                       "cluster = %s: %s's topic lives on cluster %s (a client connects to the "
                       "cluster of its topic)",
                       entry->value, label, scenario->clusters[fallback].name);
    }
    return true;
}

/* Runs fn with scenario->cluster holding cluster index's settings (topic
 * checks compare with brokers and racks), then puts clusters[0]'s back. */
static bool finalize_topic_on(struct ks_scenario *scenario, int32_t index,
                              struct ks_topic_config *topic, const struct raw_section *section,
                              GError **error)
{
    const struct raw_section *cluster = cluster_section(scenario, index);
    if (scenario->cluster_count == 0 || index == 0) {
        return finalize_topic(scenario, topic, section, cluster, error);
    }
    struct ks_cluster_config saved = scenario->cluster;
    scenario->cluster = scenario->clusters[index].cluster;
    bool ok = finalize_topic(scenario, topic, section, cluster, error);
    scenario->cluster = saved;
    return ok;
}

/* What the model's memory and start-up grow with (docs/scale-out.md,
 * Limits), summed over the topics of every cluster: the partition replicas
 * (each has its state, a log and its files) and the brokers x partitions
 * (every broker keeps every partition's state, as Kafka's MetadataCache). */
struct scale {
    uint64_t replica_count;
    uint64_t metadata_count;
};

static void scale_add(const struct ks_scenario *scenario, size_t topic_index, struct scale *sum)
{
    const struct ks_topic_config *topic = &scenario->topics[topic_index];
    int32_t cluster = scenario->topic_cluster[topic_index];
    int32_t brokers = scenario->cluster_count > 0
                          ? scenario->clusters[cluster].cluster.broker_count
                          : scenario->cluster.broker_count;
    sum->replica_count += (uint64_t)topic->partition_count * (uint64_t)topic->replication_factor;
    sum->metadata_count += (uint64_t)topic->partition_count * (uint64_t)brokers;
}

/* `who` (a topic, or an internal topic and its key) brings the scenario to
 * `sum`: refused above either limit, citing `entry` when written (else
 * `section`). */
static bool scale_limit(const struct scale *sum, const char *who, const struct raw_section *section,
                        const struct raw_entry *entry, GError **error)
{
    if (sum->replica_count > KS_SCENARIO_REPLICA_COUNT_MAX) {
        return fail_at(error, KS_SCENARIO_ERROR_VALUE, section, entry,
                       "%s brings the scenario to %" PRIu64
                       " partition replicas (partitions x replication.factor, every topic), "
                       "more than the %d ksim runs",
                       who, sum->replica_count, KS_SCENARIO_REPLICA_COUNT_MAX);
    }
    if (sum->metadata_count > KS_SCENARIO_METADATA_COUNT_MAX) {
        return fail_at(error, KS_SCENARIO_ERROR_VALUE, section, entry,
                       "%s brings the scenario to %" PRIu64
                       " partitions x brokers (every broker keeps the state of every partition "
                       "of its cluster), more than the %d ksim runs",
                       who, sum->metadata_count, KS_SCENARIO_METADATA_COUNT_MAX);
    }
    return true;
}

/* The topic just finalized, last of scenario->topics, brings the scenario to
 * `sum`: cited at its partitions key when written (else `section`). */
static bool scale_check(const struct ks_scenario *scenario, const struct scale *sum,
                        const struct raw_section *section, GError **error)
{
    const struct ks_topic_config *topic = &scenario->topics[scenario->topic_count - 1];
    const struct raw_entry *entry =
        section->kind == KS__SECTION_TOPIC ? entry_find(section, "partitions") : NULL;
    g_autofree char *who = g_strdup_printf("topic %s", topic->name);
    return scale_limit(sum, who, section, entry, error);
}

/* The internal topics count too (core/cluster.c makes them): a cluster with
 * a consumer has __consumer_offsets, one with a transactional producer
 * __transaction_state, each at its partition count and replication factor
 * capped at the brokers. Checked once the clients are known; a sum past a
 * limit cites the cluster's num.partitions key when written, else its
 * section. (A mirror's one-partition topics are left out.) */
static bool scale_check_internal(const struct ks_scenario *scenario, GError **error)
{
    struct scale sum = { 0, 0 };
    for (size_t t = 0; t < scenario->topic_count; t++) {
        scale_add(scenario, t, &sum);
    }
    size_t clusters = scenario->cluster_count > 0 ? scenario->cluster_count : 1;
    for (size_t c = 0; c < clusters; c++) {
        const struct ks_cluster_config *config =
            scenario->cluster_count > 0 ? &scenario->clusters[c].cluster : &scenario->cluster;
        bool consumers = false;
        bool txn = false;
        for (size_t i = 0; i < scenario->consumer_count; i++) {
            consumers = consumers || scenario->consumer_cluster[i] == (int32_t)c;
        }
        for (size_t i = 0; i < scenario->producer_count; i++) {
            txn = txn || (scenario->producer_cluster[i] == (int32_t)c &&
                          scenario->producers[i].transactional_id[0] != 0);
        }
        const struct {
            bool present;
            const char *topic;
            const char *key;
            int32_t partitions;
            int32_t replication_factor;
        } internal[2] = {
            { consumers, "__consumer_offsets", "offsets.topic.num.partitions",
              config->offsets_topic_partition_count, config->offsets_topic_replication_factor },
            { txn, "__transaction_state", "transaction.state.log.num.partitions",
              config->txn_topic_partition_count, config->txn_topic_replication_factor },
        };
        for (size_t k = 0; k < G_N_ELEMENTS(internal); k++) {
            if (!internal[k].present) {
                continue;
            }
            uint64_t partitions = (uint64_t)MAX(internal[k].partitions, 1);
            uint64_t rf = (uint64_t)CLAMP(internal[k].replication_factor, 1, config->broker_count);
            sum.replica_count += partitions * rf;
            sum.metadata_count += partitions * (uint64_t)config->broker_count;
            const struct raw_section *section = cluster_section(scenario, (int32_t)c);
            const struct raw_entry *entry = entry_find(section, internal[k].key);
            g_autofree char *who =
                g_strdup_printf("the internal topic %s (%s)", internal[k].topic, internal[k].key);
            if (!scale_limit(&sum, who, section, entry, error)) {
                return false;
            }
        }
    }
    return true;
}

static bool finalize_named(struct ks_scenario *scenario, enum ks__section_kind kind, GError **error)
{
    struct ks_scenario_raw *raw = scenario->raw;
    size_t index = 0;
    struct scale scale = { 0, 0 }; /* topics: so far */
    for (guint i = 0; i < raw->sections->len; i++) {
        const struct raw_section *section = g_ptr_array_index(raw->sections, i);
        if (section->kind != kind) {
            continue;
        }
        bool ok = true;
        switch (kind) {
        case KS__SECTION_TOPIC:
            ok = section_cluster(scenario, section, -1, &scenario->topic_cluster[index], error) &&
                 finalize_topic_on(scenario, scenario->topic_cluster[index],
                                   &scenario->topics[index], section, error);
            scenario->topic_count = index + 1;
            if (ok) {
                scale_add(scenario, index, &scale);
                ok = scale_check(scenario, &scale, section, error);
            }
            break;
        case KS__SECTION_PRODUCER:
            if (processor_producer_section(raw, section) != NULL) {
                continue; /* a processor's own: finalize_processor_producers */
            }
            if (section->line == 0 &&
                section_find(raw, KS__SECTION_CONSUMER, section->name) != NULL) {
                const struct raw_entry *entry = g_ptr_array_index(section->entries, 0);
                return fail_at(error, KS_SCENARIO_ERROR_REFERENCE, section, entry,
                               "consumer %s has no output.topic: it has no producer of its own",
                               section->name);
            }
            ok = finalize_producer(scenario, &scenario->producers[index], section, error) &&
                 section_cluster(scenario, section,
                                 scenario->topic_cluster[scenario->producers[index].topic_index],
                                 &scenario->producer_cluster[index], error);
            scenario->producer_count = index + 1;
            break;
        case KS__SECTION_CONSUMER:
            ok = finalize_consumer(scenario, &scenario->consumers[index], section, error) &&
                 section_cluster(scenario, section,
                                 scenario->topic_cluster[scenario->consumers[index].topic_index],
                                 &scenario->consumer_cluster[index], error);
            scenario->consumer_count = index + 1;
            break;
        case KS__SECTION_FAULT:
            ok = finalize_fault(scenario, &scenario->faults[index], section, error);
            break;
        case KS__SECTION_MIRROR:
        case KS__SECTION_SCENARIO:
        case KS__SECTION_CLUSTER:
        case KS__SECTION_EXPECT:
        case KS__SECTION_COUNT: ks_assert(false); break;
        }
        if (!ok) {
            return false;
        }
        index++;
    }
    return true;
}

static bool finalize_expect(struct ks_scenario *scenario, GError **error)
{
    const struct raw_section *section = section_find(scenario->raw, KS__SECTION_EXPECT, "");
    size_t count = section != NULL ? section->entries->len : 0;
    scenario->expectations = g_new0(struct ks_expectation, count + 1);
    for (size_t i = 0; i < count; i++) {
        const struct raw_entry *entry = g_ptr_array_index(section->entries, i);
        if (!finalize_expectation(scenario, &scenario->expectations[i], section, entry, error)) {
            return false;
        }
        scenario->expectation_count = i + 1;
    }
    return true;
}

/* ---- finalize: several clusters ------------------------------------------------------------- */

/* Keys of [cluster NAME] that set the one world every cluster lives in:
 * only the first cluster may give them. */
static const char *const world_keys[] = { "network.jitter",        "disk.fsync.latency",
                                          "disk.bandwidth",        "disk.writeback.expire",
                                          "disk.writeback.interval", "disk.dirty.limit",
                                          "disk.page.cache" };

static int cluster_link_compare(const void *a, const void *b)
{
    const struct ks_cluster_link *x = a;
    const struct ks_cluster_link *y = b;
    if (x->cluster_a != y->cluster_a) {
        return x->cluster_a < y->cluster_a ? -1 : 1;
    }
    return (x->cluster_b > y->cluster_b) - (x->cluster_b < y->cluster_b);
}

/* [scenario] network.latency.A-B between clusters A and B. */
static bool finalize_cluster_links(struct ks_scenario *scenario, GError **error)
{
    const struct raw_section *section = section_find(scenario->raw, KS__SECTION_SCENARIO, "");
    size_t count = section->entries->len;
    scenario->cluster_links = g_new0(struct ks_cluster_link, count + 1);
    for (size_t i = 0; i < count; i++) {
        const struct raw_entry *entry = g_ptr_array_index(section->entries, i);
        g_autofree char *name_a = NULL;
        g_autofree char *name_b = NULL;
        if (ks__key_find(KS__SECTION_SCENARIO, entry->key) != NULL ||
            !cluster_link_key_parse(entry->key, &name_a, &name_b)) {
            continue;
        }
        int32_t a = ks_scenario_cluster_index(scenario, name_a);
        int32_t b = ks_scenario_cluster_index(scenario, name_b);
        if (a < 0 || b < 0) {
            return fail_at(error, KS_SCENARIO_ERROR_REFERENCE, section, entry,
                           "%s: there is no [cluster %s]", entry->key, a < 0 ? name_a : name_b);
        }
        if (a == b) {
            return fail_at(error, KS_SCENARIO_ERROR_VALUE, section, entry,
                           "%s: a link joins two different clusters", entry->key);
        }
        struct ks_cluster_link link = { MIN(a, b), MAX(a, b), 0, entry->line };
        if (!entry_duration(section, entry, &link.latency_ns, error)) {
            return false;
        }
        for (size_t j = 0; j < scenario->cluster_link_count; j++) {
            const struct ks_cluster_link *other = &scenario->cluster_links[j];
            if (other->cluster_a == link.cluster_a && other->cluster_b == link.cluster_b) {
                return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                               "%s: the link %s-%s already has a latency (line %u)", entry->key,
                               name_a, name_b, other->line);
            }
        }
        scenario->cluster_links[scenario->cluster_link_count++] = link;
    }
    qsort(scenario->cluster_links, scenario->cluster_link_count, sizeof(struct ks_cluster_link),
          cluster_link_compare);
    return true;
}

/* Every [cluster NAME] in file order, finalized as [cluster] is; the last
 * one finalized is the first, whose values stay in the scenario's fields. */
static bool finalize_clusters(struct ks_scenario *scenario, GError **error)
{
    struct ks_scenario_raw *raw = scenario->raw;
    const struct raw_section *sections[KS_SCENARIO_CLUSTER_COUNT_MAX];
    size_t count = 0;
    for (guint i = 0; i < raw->sections->len; i++) {
        const struct raw_section *section = g_ptr_array_index(raw->sections, i);
        if (section->kind == KS__SECTION_CLUSTER) {
            ks_assert(section->name[0] != '\0' && count < KS_SCENARIO_CLUSTER_COUNT_MAX);
            sections[count++] = section;
        }
    }
    scenario->clusters = g_new0(struct ks_scenario_cluster, count + 1);
    for (size_t i = 0; i < count; i++) {
        g_strlcpy(scenario->clusters[i].name, sections[i]->name, sizeof scenario->clusters[i].name);
        scenario->clusters[i].line = sections[i]->line;
    }
    scenario->cluster_count = count;
    for (size_t n = count; n > 0; n--) {
        size_t i = n - 1;
        if (i > 0) {
            for (size_t k = 0; k < KS_ARRAY_COUNT(world_keys); k++) {
                const struct raw_entry *entry = entry_find(sections[i], world_keys[k]);
                if (entry != NULL) {
                    return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, sections[i], entry,
                                   "%s is a setting of the one simulated world all clusters "
                                   "share: give it in the first cluster, [cluster %s]",
                                   entry->key, sections[0]->name);
                }
            }
        }
        memset(&scenario->cluster, 0, sizeof scenario->cluster);
        memset(&scenario->log_defaults, 0, sizeof scenario->log_defaults);
        g_free(scenario->link_latencies);
        scenario->link_latencies = NULL;
        scenario->link_latency_count = 0;
        if (!finalize_cluster(scenario, sections[i], error)) {
            return false;
        }
        struct ks_scenario_cluster *c = &scenario->clusters[i];
        c->cluster = scenario->cluster;
        c->log_defaults = scenario->log_defaults;
        c->default_replication_factor = scenario->default_replication_factor;
        c->num_partitions_default = scenario->num_partitions_default;
        c->network_latency_ns = scenario->network_latency_ns;
        c->link_latencies = scenario->link_latencies;
        c->link_latency_count = scenario->link_latency_count;
        if (i > 0) {
            scenario->link_latencies = NULL; /* owned by clusters[i] now */
            scenario->link_latency_count = 0;
        }
    }
    return finalize_cluster_links(scenario, error);
}

/* topics = orders of a [mirror NAME]: one source topic; its remote topic on
 * the target, made here when no [topic] of that name is given. */
static bool mirror_topics(struct ks_scenario *scenario, struct ks_mirror_spec *mirror,
                          const struct raw_section *section, GError **error)
{
    const struct raw_entry *entry = entry_find(section, "topics");
    if (strchr(entry->value, ',') != NULL) {
        return fail_at(error, KS_SCENARIO_ERROR_NOT_MODELLED, section, entry,
                       "topics = %s: one topic per mirror in ksim (write one [mirror NAME] per "
                       "topic)",
                       entry->value);
    }
    mirror->topic_index = ks_scenario_topic_index(scenario, entry->value);
    if (mirror->topic_index < 0) {
        return fail_at(error, KS_SCENARIO_ERROR_REFERENCE, section, entry,
                       "topics = %s: there is no [topic %s]", entry->value, entry->value);
    }
    const struct ks_scenario_cluster *source = &scenario->clusters[mirror->source_cluster];
    const struct ks_scenario_cluster *target = &scenario->clusters[mirror->target_cluster];
    if (scenario->topic_cluster[mirror->topic_index] != mirror->source_cluster) {
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                       "topics = %s: the topic lives on cluster %s, not on the source %s",
                       entry->value,
                       scenario->clusters[scenario->topic_cluster[mirror->topic_index]].name,
                       source->name);
    }
    const struct ks_topic_config *topic = &scenario->topics[mirror->topic_index];
    g_autofree char *remote = g_strdup_printf("%s%s%s", source->name, mirror->separator,
                                              topic->name);
    g_autofree char *message = NULL;
    if (!ks__topic_name_check(remote, &message)) {
        return fail_at(error, KS_SCENARIO_ERROR_VALUE, section, entry, "the remote topic: %s",
                       message);
    }
    mirror->remote_topic_index = ks_scenario_topic_index(scenario, remote);
    if (mirror->remote_topic_index >= 0) {
        const struct ks_topic_config *given = &scenario->topics[mirror->remote_topic_index];
        if (scenario->topic_cluster[mirror->remote_topic_index] != mirror->target_cluster ||
            given->partition_count != topic->partition_count) {
            return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry,
                           "[topic %s] must live on the target %s with the %d partitions of %s "
                           "(MM2 copies each partition to the same one)",
                           remote, target->name, topic->partition_count, topic->name);
        }
        return true;
    }
    if (mirror->replication_factor > target->cluster.broker_count) {
        const struct raw_entry *rf = entry_find(section, "replication.factor");
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, rf != NULL ? rf : entry,
                       "the remote topic %s needs replication.factor %d, more than the %d "
                       "brokers of cluster %s (MM2 could not create it)",
                       remote, mirror->replication_factor, target->cluster.broker_count,
                       target->name);
    }
    /* A topic with no section of its own: the target's defaults. */
    int32_t index = (int32_t)scenario->topic_count;
    struct ks_topic_config *made = &scenario->topics[index];
    const struct raw_section *defaults = cluster_section(scenario, mirror->target_cluster);
    if (!apply_table(scenario->kafka_version, KS__SECTION_TOPIC, made, NULL, defaults, error)) {
        return false;
    }
    g_strlcpy(made->name, remote, sizeof made->name);
    made->partition_count = topic->partition_count;
    made->replication_factor = mirror->replication_factor;
    made->min_insync_replicas = MIN(made->min_insync_replicas, made->replication_factor);
    scenario->topic_cluster[index] = mirror->target_cluster;
    scenario->topic_count++;
    mirror->remote_topic_index = index;
    struct scale scale = { 0, 0 };
    for (size_t t = 0; t < scenario->topic_count; t++) {
        scale_add(scenario, t, &scale);
    }
    return scale_check(scenario, &scale, section, error);
}

static bool finalize_mirror(struct ks_scenario *scenario, struct ks_mirror_spec *mirror,
                            const struct raw_section *section, GError **error)
{
    g_strlcpy(mirror->name, section->name, sizeof mirror->name);
    mirror->line = section->line;
    if (scenario->cluster_count < 2) {
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, NULL,
                       "[mirror %s] copies between clusters: it needs two or more [cluster "
                       "NAME] sections",
                       section->name);
    }
    if (!apply_table(scenario->kafka_version, KS__SECTION_MIRROR, mirror, section, NULL, error)) {
        return false;
    }
    const char *ends[2] = { "source", "target" };
    int32_t *indexes[2] = { &mirror->source_cluster, &mirror->target_cluster };
    for (int k = 0; k < 2; k++) {
        const struct raw_entry *entry = entry_find(section, ends[k]);
        if (entry == NULL) {
            return fail_at(error, KS_SCENARIO_ERROR_MISSING, section, NULL,
                           "[mirror %s] needs the key '%s'", section->name, ends[k]);
        }
        *indexes[k] = ks_scenario_cluster_index(scenario, entry->value);
        if (*indexes[k] < 0) {
            return fail_at(error, KS_SCENARIO_ERROR_REFERENCE, section, entry,
                           "%s = %s: there is no [cluster %s]", ends[k], entry->value,
                           entry->value);
        }
    }
    if (mirror->source_cluster == mirror->target_cluster) {
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, entry_find(section, "target"),
                       "target = %s: a mirror copies to another cluster than its source",
                       scenario->clusters[mirror->target_cluster].name);
    }
    if (entry_find(section, "topics") == NULL) {
        return fail_at(error, KS_SCENARIO_ERROR_MISSING, section, NULL,
                       "[mirror %s] needs the key 'topics'", section->name);
    }
    return mirror_topics(scenario, mirror, section, error);
}

static bool finalize_mirrors(struct ks_scenario *scenario, GError **error)
{
    struct ks_scenario_raw *raw = scenario->raw;
    scenario->mirrors = g_new0(struct ks_mirror_spec, raw->kind_counts[KS__SECTION_MIRROR] + 1);
    for (guint i = 0; i < raw->sections->len; i++) {
        const struct raw_section *section = g_ptr_array_index(raw->sections, i);
        if (section->kind != KS__SECTION_MIRROR) {
            continue;
        }
        struct ks_mirror_spec *mirror = &scenario->mirrors[scenario->mirror_count];
        if (!finalize_mirror(scenario, mirror, section, error)) {
            return false;
        }
        for (size_t j = 0; j < scenario->mirror_count; j++) {
            if (scenario->mirrors[j].remote_topic_index == mirror->remote_topic_index) {
                return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, NULL,
                               "[mirror %s] writes the remote topic of [mirror %s]",
                               mirror->name, scenario->mirrors[j].name);
            }
        }
        scenario->mirror_count++;
    }
    return true;
}

/* A failover's mirror: the one that copies topic t away from cluster
 * `from`; else FILE:LINE naming the client (`what` NAME `verb` t ...). */
static bool failover_mirror_find(struct ks_scenario *scenario, const struct raw_section *section,
                                 const struct raw_entry *target, struct ks_fault *fault,
                                 const char *what, const char *name, const char *verb, int32_t t,
                                 int32_t from, GError **error)
{
    fault->failover_mirror = -1;
    for (size_t m = 0; m < scenario->mirror_count && fault->failover_mirror < 0; m++) {
        if (scenario->mirrors[m].source_cluster == from && scenario->mirrors[m].topic_index == t) {
            fault->failover_mirror = (int32_t)m;
        }
    }
    if (fault->failover_mirror < 0) {
        return fail_at(error, KS_SCENARIO_ERROR_REFERENCE, section, target,
                       "failover: %s %s %s %s on cluster %s, which no [mirror] copies to "
                       "another cluster",
                       what, name, verb, scenario->topics[t].name, scenario->clusters[from].name);
    }
    return true;
}

/* A producer's failover (KIP-382 "failover"): in a disaster-recovery
 * failover the application points bootstrap.servers at the target cluster
 * and keeps producing to the topic it knows by name. On the target that
 * name is the mirror's copy: under IdentityReplicationPolicy (KIP-690) the
 * remote topic keeps the source's name, and ksim's topic names are unique
 * across clusters, so the remote topic (east.orders) stands for it. A
 * standby copy of the producer (NAME.TARGET, same settings) writes there
 * from the failover's time; sim/run.c stops the original. A processor's
 * producer moves with its consumer, not on its own. */
static bool failover_producer(struct ks_scenario *scenario, const struct raw_section *section,
                              const struct raw_entry *target, struct ks_fault *fault,
                              GError **error)
{
    int32_t p = fault->target.client_index;
    const struct ks_producer_config *moved = &scenario->producers[p];
    int32_t from = scenario->producer_cluster[p];
    if (moved->input_consumer_index >= 0) {
        return fail_at(error, KS_SCENARIO_ERROR_VALUE, section, target,
                       "failover: producer %s is a processor's; fail its consumer over instead",
                       moved->name);
    }
    if (!failover_mirror_find(scenario, section, target, fault, "producer", moved->name, "writes",
                              moved->topic_index, from, error)) {
        return false;
    }
    const struct ks_mirror_spec *mirror = &scenario->mirrors[fault->failover_mirror];
    struct ks_producer_config standby = *moved;
    g_snprintf(standby.name, sizeof standby.name, "%s.%s", moved->name,
               scenario->clusters[mirror->target_cluster].name);
    if (ks_scenario_producer_index(scenario, standby.name) >= 0) {
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, target,
                       "failover: its standby producer's name %s is taken", standby.name);
    }
    standby.topic_index = mirror->remote_topic_index;
    standby.start_ns = fault->at_ns;
    standby.start_jitter_ns = 0;
    size_t n = scenario->producer_count++;
    scenario->producers = g_renew(struct ks_producer_config, scenario->producers, n + 2);
    scenario->producer_cluster = g_renew(int32_t, scenario->producer_cluster, n + 2);
    scenario->producers[n] = standby;
    scenario->producer_cluster[n] = mirror->target_cluster;
    return true;
}

/* Each failover fault: the mirror that copies its consumer's topic away
 * from its cluster, and a standby copy of every consumer of the group on
 * that cluster (NAME.TARGET, reading the remote topic, joining at the
 * failover's time), which sim/run.c starts when the fault fires. */
static bool finalize_failovers(struct ks_scenario *scenario, GError **error)
{
    size_t index = 0;
    for (guint i = 0; i < scenario->raw->sections->len; i++) {
        const struct raw_section *section = g_ptr_array_index(scenario->raw->sections, i);
        if (section->kind != KS__SECTION_FAULT) {
            continue;
        }
        struct ks_fault *fault = &scenario->faults[index++];
        if (fault->action != KS_FAULT_FAILOVER) {
            continue;
        }
        const struct raw_entry *target = entry_find(section, "target");
        if (fault->target.kind == KS_TARGET_PRODUCER) {
            if (!failover_producer(scenario, section, target, fault, error)) {
                return false;
            }
            continue;
        }
        int32_t k = fault->target.client_index;
        const struct ks_consumer_config *moved = &scenario->consumers[k];
        int32_t from = scenario->consumer_cluster[k];
        if (!failover_mirror_find(scenario, section, target, fault, "consumer", moved->name,
                                  "reads", moved->topic_index, from, error)) {
            return false;
        }
        const struct ks_mirror_spec *mirror = &scenario->mirrors[fault->failover_mirror];
        size_t count = scenario->consumer_count;
        for (size_t j = 0; j < count; j++) {
            const struct ks_consumer_config *c = &scenario->consumers[j];
            if (scenario->consumer_cluster[j] != from || c->topic_index != moved->topic_index ||
                strcmp(c->group_id, moved->group_id) != 0) {
                continue;
            }
            struct ks_consumer_config standby = *c;
            g_snprintf(standby.name, sizeof standby.name, "%s.%s", c->name,
                       scenario->clusters[mirror->target_cluster].name);
            if (ks_scenario_consumer_index(scenario, standby.name) >= 0) {
                return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, section, target,
                               "failover: its standby consumer's name %s is taken",
                               standby.name);
            }
            standby.topic_index = mirror->remote_topic_index;
            standby.start_ns = fault->at_ns;
            standby.start_jitter_ns = 0;
            size_t n = scenario->consumer_count++;
            scenario->consumers = g_renew(struct ks_consumer_config, scenario->consumers, n + 2);
            scenario->consumer_cluster = g_renew(int32_t, scenario->consumer_cluster, n + 2);
            scenario->consumers[n] = standby;
            scenario->consumer_cluster[n] = mirror->target_cluster;
        }
    }
    return true;
}

bool ks_scenario_finalize(struct ks_scenario *scenario, GError **error)
{
    struct ks_scenario_raw *raw = scenario->raw;
    fields_clear(scenario);
    /* [scenario] and [cluster] exist from here on, so messages can cite them. */
    if (section_find(raw, KS__SECTION_SCENARIO, "") == NULL) {
        section_add(raw, KS__SECTION_SCENARIO, "", 0, raw->file);
    }
    bool named_clusters = false;
    for (guint i = 0; i < raw->sections->len && !named_clusters; i++) {
        const struct raw_section *section = g_ptr_array_index(raw->sections, i);
        named_clusters = section->kind == KS__SECTION_CLUSTER && section->name[0] != '\0';
    }
    const struct raw_section *unnamed = section_find(raw, KS__SECTION_CLUSTER, "");
    if (named_clusters && unnamed != NULL) {
        return fail_at(error, KS_SCENARIO_ERROR_CONFLICT, unnamed, NULL,
                       "[cluster] next to [cluster NAME] sections: with several clusters every "
                       "one is [cluster NAME]");
    }
    if (!named_clusters && unnamed == NULL) {
        section_add(raw, KS__SECTION_CLUSTER, "", 0, raw->file);
    }
    /* The section limits were checked as the sections arrived (scan_header). */
    const size_t *counts = raw->kind_counts;
    /* a mirror may add its remote topic */
    size_t topic_slots = counts[KS__SECTION_TOPIC] + counts[KS__SECTION_MIRROR];
    scenario->topics = g_new0(struct ks_topic_config, topic_slots + 1);
    scenario->topic_cluster = g_new0(int32_t, topic_slots + 1);
    scenario->producers = g_new0(struct ks_producer_config, counts[KS__SECTION_PRODUCER] + 1);
    scenario->producer_cluster = g_new0(int32_t, counts[KS__SECTION_PRODUCER] + 1);
    scenario->consumers = g_new0(struct ks_consumer_config, counts[KS__SECTION_CONSUMER] + 1);
    scenario->consumer_cluster = g_new0(int32_t, counts[KS__SECTION_CONSUMER] + 1);
    /* Fault names first: a heal may name a fault that comes later. */
    scenario->faults = g_new0(struct ks_fault, counts[KS__SECTION_FAULT] + 1);
    for (guint i = 0; i < raw->sections->len; i++) {
        const struct raw_section *section = g_ptr_array_index(raw->sections, i);
        if (section->kind == KS__SECTION_FAULT) {
            g_strlcpy(scenario->faults[scenario->fault_count++].name, section->name,
                      sizeof scenario->faults[0].name);
        }
    }
    if (!finalize_scenario(scenario, section_find(raw, KS__SECTION_SCENARIO, ""), error) ||
        !(named_clusters ? finalize_clusters(scenario, error)
                         : finalize_cluster(scenario, section_find(raw, KS__SECTION_CLUSTER, ""),
                                            error)) ||
        !finalize_named(scenario, KS__SECTION_TOPIC, error) ||
        !finalize_mirrors(scenario, error) ||
        !finalize_named(scenario, KS__SECTION_PRODUCER, error) ||
        !finalize_named(scenario, KS__SECTION_CONSUMER, error) ||
        !finalize_processor_producers(scenario, error) ||
        !scale_check_internal(scenario, error) ||
        !finalize_named(scenario, KS__SECTION_FAULT, error) ||
        !finalize_failovers(scenario, error) ||
        !finalize_schedule(scenario, error) || !finalize_expect(scenario, error)) {
        return false;
    }
    scenario->finalized = true;
    return true;
}

/* ---- helpers ---------------------------------------------------------------------------------- */

bool ks_scenario_parse_duration(const char *text, int64_t *out_ns, GError **error)
{
    g_autofree char *message = NULL;
    if (!ks__parse_duration_ns(text, true, out_ns, &message)) {
        g_set_error_literal(error, KS_SCENARIO_ERROR, KS_SCENARIO_ERROR_VALUE, message);
        return false;
    }
    return true;
}

uint64_t ks__scenario_lookup_count(const struct ks_scenario *scenario)
{
    return scenario->raw->lookup_count;
}

int32_t ks_scenario_topic_index(const struct ks_scenario *scenario, const char *name)
{
    for (size_t i = 0; i < scenario->topic_count; i++) {
        if (strcmp(scenario->topics[i].name, name) == 0) {
            return (int32_t)i;
        }
    }
    return -1;
}

int32_t ks_scenario_producer_index(const struct ks_scenario *scenario, const char *name)
{
    for (size_t i = 0; i < scenario->producer_count; i++) {
        if (strcmp(scenario->producers[i].name, name) == 0) {
            return (int32_t)i;
        }
    }
    return -1;
}

int32_t ks_scenario_consumer_index(const struct ks_scenario *scenario, const char *name)
{
    for (size_t i = 0; i < scenario->consumer_count; i++) {
        if (strcmp(scenario->consumers[i].name, name) == 0) {
            return (int32_t)i;
        }
    }
    return -1;
}

int32_t ks_scenario_cluster_index(const struct ks_scenario *scenario, const char *name)
{
    for (size_t i = 0; i < scenario->cluster_count; i++) {
        if (strcmp(scenario->clusters[i].name, name) == 0) {
            return (int32_t)i;
        }
    }
    return -1;
}

void ks_scenario_cluster_view(const struct ks_scenario *scenario, int32_t index,
                              struct ks_scenario *out)
{
    const struct ks_scenario_cluster *c = &scenario->clusters[index];
    *out = *scenario;
    out->cluster = c->cluster;
    out->log_defaults = c->log_defaults;
    out->default_replication_factor = c->default_replication_factor;
    out->num_partitions_default = c->num_partitions_default;
    out->network_latency_ns = c->network_latency_ns;
    out->link_latencies = c->link_latencies;
    out->link_latency_count = c->link_latency_count;
    out->faults = NULL;
    out->fault_count = 0;
    out->expectations = NULL;
    out->expectation_count = 0;
    out->clusters = NULL;
    out->cluster_count = 0;
    out->mirrors = NULL;
    out->mirror_count = 0;
}

int64_t ks_scenario_cluster_link_latency(const struct ks_scenario *scenario, int32_t a, int32_t b)
{
    for (size_t i = 0; i < scenario->cluster_link_count; i++) {
        const struct ks_cluster_link *link = &scenario->cluster_links[i];
        if (link->cluster_a == MIN(a, b) && link->cluster_b == MAX(a, b)) {
            return link->latency_ns;
        }
    }
    return MAX(scenario->clusters[a].network_latency_ns, scenario->clusters[b].network_latency_ns);
}

int32_t ks_scenario_fault_index(const struct ks_scenario *scenario, const char *name)
{
    for (size_t i = 0; i < scenario->fault_count; i++) {
        if (strcmp(scenario->faults[i].name, name) == 0) {
            return (int32_t)i;
        }
    }
    return -1;
}

bool ks_scenario_parse_tp(const struct ks_scenario *scenario, const char *text, struct ks_tp *out)
{
    g_autofree char *copy = g_strdup(text);
    char *dash = strrchr(copy, '-');
    int64_t partition = 0;
    if (dash == NULL || !ks__parse_int64(dash + 1, &partition)) {
        return false;
    }
    *dash = '\0';
    int32_t topic = ks_scenario_topic_index(scenario, copy);
    if (topic < 0 || partition < 0 || partition >= scenario->topics[topic].partition_count) {
        return false;
    }
    out->topic_index = topic;
    out->partition = (int32_t)partition;
    return true;
}

char *ks_scenario_format_tp(const struct ks_scenario *scenario, struct ks_tp tp, char *buffer,
                            size_t buffer_bytes)
{
    ks_assert(tp.topic_index >= 0 && (size_t)tp.topic_index < scenario->topic_count);
    g_snprintf(buffer, buffer_bytes, "%s-%d", scenario->topics[tp.topic_index].name, tp.partition);
    return buffer;
}

bool ks_scenario_target_brokers(const struct ks_scenario *scenario, const struct ks_target *target,
                                bool *in)
{
    const struct ks_cluster_config *cluster = &scenario->cluster;
    switch (target->kind) {
    case KS_TARGET_BROKER: in[target->broker_id - 1] = true; return true;
    case KS_TARGET_RACK:
        for (int32_t b = 0; b < cluster->broker_count; b++) {
            if (strcmp(cluster->racks[b], cluster->racks[target->broker_id - 1]) == 0) {
                in[b] = true;
            }
        }
        return true;
    case KS_TARGET_ALL:
        for (int32_t b = 0; b < cluster->broker_count; b++) {
            in[b] = true;
        }
        return true;
    case KS_TARGET_NONE:
    case KS_TARGET_LEADER:
    case KS_TARGET_FOLLOWER:
    case KS_TARGET_FOLLOWERS:
    case KS_TARGET_CONTROLLER:
    case KS_TARGET_ZOOKEEPER:
    case KS_TARGET_RANDOM:
    case KS_TARGET_CLUSTER:
    case KS_TARGET_PRODUCER:
    case KS_TARGET_CONSUMER: break;
    }
    return false;
}

char *ks_scenario_format_target(const struct ks_scenario *scenario, const struct ks_target *target)
{
    char tp[KS_TOPIC_NAME_BYTES_MAX + 16];
    switch (target->kind) {
    case KS_TARGET_NONE: return g_strdup("");
    case KS_TARGET_BROKER:
        return target->in_cluster ? g_strdup_printf("%s:%d",
                                                    scenario->clusters[target->cluster_index].name,
                                                    target->broker_id)
                                  : g_strdup_printf("%d", target->broker_id);
    case KS_TARGET_LEADER:
        return g_strdup_printf("leader(%s)",
                               ks_scenario_format_tp(scenario, target->tp, tp, sizeof tp));
    case KS_TARGET_FOLLOWER:
        return g_strdup_printf("follower(%s)",
                               ks_scenario_format_tp(scenario, target->tp, tp, sizeof tp));
    case KS_TARGET_FOLLOWERS:
        return g_strdup_printf("followers(%s)",
                               ks_scenario_format_tp(scenario, target->tp, tp, sizeof tp));
    case KS_TARGET_CONTROLLER:
        return target->controller_number == 0
                   ? g_strdup("controller")
                   : g_strdup_printf("controller(%d)", target->controller_number);
    case KS_TARGET_ZOOKEEPER: return g_strdup("zookeeper");
    case KS_TARGET_CLUSTER:
        return g_strdup_printf("cluster(%s)", scenario->clusters[target->cluster_index].name);
    case KS_TARGET_RANDOM: return g_strdup("random");
    case KS_TARGET_RACK:
        return g_strdup_printf("rack(%s)", scenario->cluster.racks[target->broker_id - 1]);
    case KS_TARGET_ALL: return g_strdup("all");
    case KS_TARGET_PRODUCER:
        return g_strdup_printf("producer(%s)", scenario->producers[target->client_index].name);
    case KS_TARGET_CONSUMER:
        return g_strdup_printf("consumer(%s)", scenario->consumers[target->client_index].name);
    }
    ks_assert(false);
    return NULL;
}

const char *ks_compare_op_name(enum ks_compare_op op)
{
    switch (op) {
    case KS_OP_EQ: return "=";
    case KS_OP_NE: return "!=";
    case KS_OP_LT: return "<";
    case KS_OP_LE: return "<=";
    case KS_OP_GT: return ">";
    case KS_OP_GE: return ">=";
    }
    ks_assert(false);
    return "?";
}

bool ks_compare(enum ks_compare_op op, double actual, double expected)
{
    switch (op) {
    case KS_OP_EQ: return actual == expected;
    case KS_OP_NE: return actual != expected;
    case KS_OP_LT: return actual < expected;
    case KS_OP_LE: return actual <= expected;
    case KS_OP_GT: return actual > expected;
    case KS_OP_GE: return actual >= expected;
    }
    ks_assert(false);
    return false;
}

char *ks_scenario_format_trigger(const struct ks_scenario *scenario,
                                 const struct ks_trigger *trigger)
{
    char tp[KS_TOPIC_NAME_BYTES_MAX + 16] = "";
    if (trigger->tp.topic_index >= 0) {
        ks_scenario_format_tp(scenario, trigger->tp, tp, sizeof tp);
    }
    const char *op = trigger->op == KS_OP_EQ ? "==" : ks_compare_op_name(trigger->op);
    switch (trigger->fn) {
    case KS_TRIGGER_HW:
    case KS_TRIGGER_LEO:
        return g_strdup_printf("%s(%d, %s) %s %" PRId64,
                               trigger->fn == KS_TRIGGER_HW ? "hw" : "leo", trigger->broker_id, tp,
                               op, trigger->value);
    case KS_TRIGGER_ISR_SIZE:
        return g_strdup_printf("isr_size(%s) %s %" PRId64, tp, op, trigger->value);
    case KS_TRIGGER_CRASHED:
    case KS_TRIGGER_RESTARTED:
        return g_strdup_printf("%s(%d) %s %" PRId64,
                               trigger->fn == KS_TRIGGER_CRASHED ? "crashed" : "restarted",
                               trigger->broker_id, op, trigger->value);
    case KS_TRIGGER_ELECTED:
        return g_strdup_printf("elected(%s) %s %" PRId64, tp, op, trigger->value);
    case KS_TRIGGER_ACKED:
        return g_strdup_printf("acked(%s) %s %" PRId64,
                               scenario->producers[trigger->producer_index].name, op,
                               trigger->value);
    }
    ks_assert(false);
    return NULL;
}

uint32_t ks_scenario_key_line(const struct ks_scenario *scenario, const char *section,
                              const char *key)
{
    g_autofree char *copy = g_strdup(section);
    char *space = strchr(copy, ' ');
    const char *name = "";
    if (space != NULL) {
        *space = '\0';
        name = space + 1;
    }
    enum ks__section_kind kind;
    if (!section_kind_parse(copy, &kind)) {
        return 0;
    }
    const struct raw_entry *entry = entry_find(section_find(scenario->raw, kind, name), key);
    return entry != NULL ? entry->line : 0;
}

/* ---- writing back ------------------------------------------------------------------------------ */

void ks_scenario_write_ini(FILE *out, const struct ks_scenario *scenario)
{
    const struct ks_scenario_raw *raw = scenario->raw;
    /* A name that came from the file name is written out, so that the text
     * loads back under any file name with the same name (when it is one that
     * name = accepts; else the new file's name gives it, as before). */
    g_autofree char *message = NULL;
    bool write_name = scenario->finalized && scenario->name != NULL &&
                      ks__client_name_check(scenario->name, "scenario", &message);
    bool first = true;
    for (guint i = 0; i < raw->sections->len; i++) {
        const struct raw_section *section = g_ptr_array_index(raw->sections, i);
        bool name_here = section->kind == KS__SECTION_SCENARIO && write_name &&
                         entry_find(section, "name") == NULL;
        if (section->entries->len == 0 && section->kind != KS__SECTION_TOPIC && !name_here) {
            continue;
        }
        g_autofree char *label = section_label(section);
        fprintf(out, "%s%s\n", first ? "" : "\n", label);
        first = false;
        if (name_here) {
            fprintf(out, "name = %s\n", scenario->name);
        }
        for (guint j = 0; j < section->entries->len; j++) {
            const struct raw_entry *entry = g_ptr_array_index(section->entries, j);
            fprintf(out, "%s = %s\n", entry->key, entry->value);
        }
    }
}

/* ---- canonical JSON ------------------------------------------------------------------------------ */

void ks__json_duration(JsonBuilder *builder, const char *key, int64_t ns)
{
    json_builder_set_member_name(builder, key);
    if (ns < 0) {
        json_builder_add_null_value(builder);
        return;
    }
    g_autofree char *text = ks__format_duration(ns);
    json_builder_add_string_value(builder, text);
}

/* Every table key of one section's struct, in table order; custom keys call back. */
static void json_table(JsonBuilder *builder, const struct ks_scenario *scenario,
                       enum ks__section_kind kind, const void *base, size_t item_index)
{
    size_t count = 0;
    const struct ks__key_spec *table = ks__key_table(kind, &count);
    for (size_t i = 0; i < count; i++) {
        const struct ks__key_spec *spec = &table[i];
        if (kind == KS__SECTION_SCENARIO && strcmp(spec->name, "seed") == 0) {
            continue; /* runs.seed has it; params equal across seeds */
        }
        if (strcmp(spec->name, "cluster") == 0 && scenario->cluster_count == 0) {
            continue; /* the one-cluster form: as before clusters had names */
        }
        if (strcmp(spec->name, "cluster") == 0) {
            const int32_t *of = kind == KS__SECTION_TOPIC      ? scenario->topic_cluster
                                : kind == KS__SECTION_PRODUCER ? scenario->producer_cluster
                                                               : scenario->consumer_cluster;
            json_builder_set_member_name(builder, spec->name);
            json_builder_add_string_value(builder, scenario->clusters[of[item_index]].name);
            continue;
        }
        if (kind == KS__SECTION_CONSUMER &&
            ((const struct ks_consumer_config *)base)->output_topic_index < 0 &&
            (strcmp(spec->name, "output.topic") == 0 ||
             strcmp(spec->name, "transactional.id") == 0)) {
            continue; /* not a processor: the params of runs before processors existed */
        }
        json_builder_set_member_name(builder, spec->name);
        if (spec->type != KS__VALUE_CUSTOM && spec->offset != KS__NO_FIELD) {
            json_builder_add_value(builder, ks__value_json(spec, base));
            continue;
        }
        if (strcmp(spec->name, "name") == 0) { /* [scenario] */
            json_builder_add_string_value(builder, scenario->name);
        } else if (strcmp(spec->name, "kafka.version") == 0) { /* the line, "3.7" */
            json_builder_add_string_value(builder, scenario->kafka_version->name);
        } else if (strcmp(spec->name, "racks") == 0) {
            json_builder_begin_array(builder);
            for (int32_t b = 0; b < scenario->cluster.broker_count; b++) {
                if (scenario->cluster.racks[b][0] != '\0') {
                    json_builder_add_string_value(builder, scenario->cluster.racks[b]);
                }
            }
            json_builder_end_array(builder);
        } else if (strcmp(spec->name, "assignment") == 0) {
            const struct ks_topic_config *topic = &scenario->topics[item_index];
            if (topic->assignment == NULL) {
                json_builder_add_null_value(builder);
                continue;
            }
            json_builder_begin_array(builder);
            for (int32_t p = 0; p < topic->partition_count; p++) {
                json_builder_begin_array(builder);
                for (int32_t r = 0; r < topic->replication_factor; r++) {
                    json_builder_add_int_value(builder, topic->assignment[p][r]);
                }
                json_builder_end_array(builder);
            }
            json_builder_end_array(builder);
        } else if (strcmp(spec->name, "topic") == 0) {
            int32_t topic = kind == KS__SECTION_PRODUCER
                                ? scenario->producers[item_index].topic_index
                                : scenario->consumers[item_index].topic_index;
            json_builder_add_string_value(builder, scenario->topics[topic].name);
        } else if (strcmp(spec->name, "output.topic") == 0) {
            int32_t topic = scenario->consumers[item_index].output_topic_index;
            json_builder_add_string_value(builder, scenario->topics[topic].name);
        } else if (strcmp(spec->name, "enable.auto.commit") == 0) {
            json_builder_add_boolean_value(builder, scenario->consumers[item_index].commit ==
                                                        KS_COMMIT_AUTO);
        } else if (strcmp(spec->name, "commit") == 0) {
            static const char *const names[] = { "before-process", "after-process", "atomic",
                                                 "auto" };
            json_builder_add_string_value(builder, names[scenario->consumers[item_index].commit]);
        } else {
            ks_assert(false);
        }
    }
}

static void json_section_array(JsonBuilder *builder, const struct ks_scenario *scenario,
                               const char *member, enum ks__section_kind kind, size_t count)
{
    json_builder_set_member_name(builder, member);
    json_builder_begin_array(builder);
    for (size_t i = 0; i < count; i++) {
        json_builder_begin_object(builder);
        json_builder_set_member_name(builder, "name");
        const void *base = NULL;
        if (kind == KS__SECTION_TOPIC) {
            base = &scenario->topics[i];
            json_builder_add_string_value(builder, scenario->topics[i].name);
        } else if (kind == KS__SECTION_PRODUCER) {
            base = &scenario->producers[i];
            json_builder_add_string_value(builder, scenario->producers[i].name);
        } else {
            base = &scenario->consumers[i];
            json_builder_add_string_value(builder, scenario->consumers[i].name);
        }
        json_table(builder, scenario, kind, base, i);
        json_builder_end_object(builder);
    }
    json_builder_end_array(builder);
}

/* "network.latency.links": [{"1-2": "20ms"}, ...] */
static void json_links(JsonBuilder *builder, const struct ks_link_latency *links, size_t count)
{
    json_builder_set_member_name(builder, "network.latency.links");
    json_builder_begin_array(builder);
    for (size_t i = 0; i < count; i++) {
        g_autofree char *key = g_strdup_printf("%d-%d", links[i].broker_a, links[i].broker_b);
        json_builder_begin_object(builder);
        ks__json_duration(builder, key, links[i].latency_ns);
        json_builder_end_object(builder);
    }
    json_builder_end_array(builder);
}

/* Several clusters: "clusters" (each as "cluster" is, by name), the links
 * between them, and "mirrors". Absent from a one-cluster scenario's params. */
static void json_clusters(JsonBuilder *builder, const struct ks_scenario *scenario)
{
    json_builder_set_member_name(builder, "clusters");
    json_builder_begin_array(builder);
    for (size_t i = 0; i < scenario->cluster_count; i++) {
        const struct ks_scenario_cluster *c = &scenario->clusters[i];
        struct ks_scenario view;
        ks_scenario_cluster_view(scenario, (int32_t)i, &view);
        json_builder_begin_object(builder);
        json_builder_set_member_name(builder, "name");
        json_builder_add_string_value(builder, c->name);
        json_table(builder, &view, KS__SECTION_CLUSTER, &view, 0);
        json_links(builder, c->link_latencies, c->link_latency_count);
        json_builder_end_object(builder);
    }
    json_builder_end_array(builder);
    json_builder_set_member_name(builder, "cluster.links");
    json_builder_begin_array(builder);
    for (size_t i = 0; i + 1 < scenario->cluster_count; i++) {
        for (size_t j = i + 1; j < scenario->cluster_count; j++) {
            g_autofree char *key = g_strdup_printf("%s-%s", scenario->clusters[i].name,
                                                   scenario->clusters[j].name);
            json_builder_begin_object(builder);
            ks__json_duration(builder, key,
                              ks_scenario_cluster_link_latency(scenario, (int32_t)i, (int32_t)j));
            json_builder_end_object(builder);
        }
    }
    json_builder_end_array(builder);
    json_builder_set_member_name(builder, "mirrors");
    json_builder_begin_array(builder);
    for (size_t i = 0; i < scenario->mirror_count; i++) {
        const struct ks_mirror_spec *m = &scenario->mirrors[i];
        json_builder_begin_object(builder);
        json_builder_set_member_name(builder, "name");
        json_builder_add_string_value(builder, m->name);
        json_builder_set_member_name(builder, "source");
        json_builder_add_string_value(builder, scenario->clusters[m->source_cluster].name);
        json_builder_set_member_name(builder, "target");
        json_builder_add_string_value(builder, scenario->clusters[m->target_cluster].name);
        json_builder_set_member_name(builder, "topics");
        json_builder_add_string_value(builder, scenario->topics[m->topic_index].name);
        size_t count = 0;
        const struct ks__key_spec *table = ks__key_table(KS__SECTION_MIRROR, &count);
        for (size_t k = 0; k < count; k++) {
            if (table[k].type != KS__VALUE_CUSTOM) {
                json_builder_set_member_name(builder, table[k].name);
                json_builder_add_value(builder, ks__value_json(&table[k], m));
            }
        }
        json_builder_end_object(builder);
    }
    json_builder_end_array(builder);
}

char *ks_scenario_params_json(const struct ks_scenario *scenario)
{
    ks_assert(scenario->finalized);
    g_autoptr(JsonBuilder) builder = json_builder_new();
    json_builder_begin_object(builder);
    json_builder_set_member_name(builder, "scenario");
    json_builder_begin_object(builder);
    json_table(builder, scenario, KS__SECTION_SCENARIO, scenario, 0);
    json_builder_end_object(builder);

    json_builder_set_member_name(builder, "cluster");
    json_builder_begin_object(builder);
    json_table(builder, scenario, KS__SECTION_CLUSTER, scenario, 0);
    json_links(builder, scenario->link_latencies, scenario->link_latency_count);
    json_builder_end_object(builder);

    if (scenario->cluster_count > 0) {
        json_clusters(builder, scenario);
    }
    json_section_array(builder, scenario, "topics", KS__SECTION_TOPIC, scenario->topic_count);
    json_section_array(builder, scenario, "producers", KS__SECTION_PRODUCER,
                       scenario->producer_count);
    json_section_array(builder, scenario, "consumers", KS__SECTION_CONSUMER,
                       scenario->consumer_count);
    json_builder_set_member_name(builder, "faults");
    json_builder_begin_array(builder);
    for (size_t i = 0; i < scenario->fault_count; i++) {
        ks_fault_json(builder, scenario, &scenario->faults[i]);
    }
    json_builder_end_array(builder);
    json_builder_set_member_name(builder, "expect");
    json_builder_begin_array(builder);
    for (size_t i = 0; i < scenario->expectation_count; i++) {
        const struct ks_expectation *expect = &scenario->expectations[i];
        json_builder_begin_object(builder);
        json_builder_set_member_name(builder, "key");
        json_builder_add_string_value(builder, expect->key);
        json_builder_set_member_name(builder, "op");
        json_builder_add_string_value(builder, ks_compare_op_name(expect->op));
        json_builder_set_member_name(builder, "value");
        json_builder_add_string_value(builder, expect->value_text);
        json_builder_end_object(builder);
    }
    json_builder_end_array(builder);
    json_builder_end_object(builder);

    g_autoptr(JsonNode) root = json_builder_get_root(builder);
    g_autoptr(JsonGenerator) generator = json_generator_new();
    json_generator_set_root(generator, root);
    return json_generator_to_data(generator, NULL);
}
