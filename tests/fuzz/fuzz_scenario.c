/*
** tests/fuzz/fuzz_scenario.c: libFuzzer target for the scenario parser.
**
** An input is a scenario file, optionally followed by a line "%%" and one
** --set assignment per line (the corpus in tests/fuzz/fuzz_scenario-corpus/
** is written so; the CUnit round-trip test reads it the same way). Each
** input goes through what `ksim run FILE --set ...` does with it:
**   1. ks_scenario_parse_from_bytes: the bytes as they are, NULs included;
**   2. ks_scenario_apply_set for each assignment (at most 16; a failed one
**      changes nothing, so the others still apply);
**   3. ks_scenario_finalize;
** and every failure must be a one-line message "fuzz.ini:LINE: ..." with LINE
** a line of the scenario text (1..lines), or "--set ...: ..." for an error a
** --set value caused. A scenario that finalizes must then survive the round
** trip: its write_ini text loads under another file name with the same
** params JSON, seed and name, writes back to the same text, and a copy has
** the same params JSON. Nothing may crash, leak or read out of bounds (the
** build uses ASan and UBSan).
*/
#include "../../sim/scenario.h"

#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_NAME          "fuzz.ini"
#define FUZZ_SET_COUNT_MAX 16

/* A failed check: the input is saved by libFuzzer as a crash. */
static void fuzz_fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_scenario: %s\n%s\n", what, detail != NULL ? detail : "");
    abort();
}

/* The message of a failed parse or finalize: one line, located in the text
 * (1..line_count) or at a --set. */
static void message_check(const GError *error, unsigned line_count, bool sets_applied)
{
    if (error == NULL || error->domain != KS_SCENARIO_ERROR || error->message == NULL) {
        fuzz_fail("a failure without a scenario error", NULL);
    }
    const char *message = error->message;
    if (strchr(message, '\n') != NULL) {
        fuzz_fail("a message of more than one line", message);
    }
    if (sets_applied && g_str_has_prefix(message, "--set ") && strstr(message, ": ") != NULL) {
        return;
    }
    unsigned line = 0;
    int consumed = 0;
    if (sscanf(message, FUZZ_NAME ":%u: %n", &line, &consumed) != 1 || consumed == 0 ||
        message[consumed] == '\0') {
        fuzz_fail("a message not shaped FILE:LINE: what", message);
    }
    if (line < 1 || line > line_count) {
        fuzz_fail("a message naming a line outside the input", message);
    }
}

static char *ini_text(const struct ks_scenario *scenario)
{
    char *text = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&text, &length);
    ks_scenario_write_ini(out, scenario);
    fclose(out);
    char *copy = g_strndup(text, length);
    free(text);
    return copy;
}

/* write_ini -> load gives the same scenario; a copy too. */
static void round_trip_check(const struct ks_scenario *scenario)
{
    g_autofree char *json = ks_scenario_params_json(scenario);
    g_autofree char *ini = ini_text(scenario);
    struct ks_scenario *back = NULL;
    GError *error = NULL;
    if (!ks_scenario_load_from_data("elsewhere/other.ini", ini, &back, &error)) {
        g_autofree char *detail = g_strdup_printf("%s\n---\n%s", error->message, ini);
        fuzz_fail("write_ini output does not load", detail);
    }
    g_autofree char *json_back = ks_scenario_params_json(back);
    g_autofree char *ini_back = ini_text(back);
    if (strcmp(json, json_back) != 0) {
        g_autofree char *detail = g_strdup_printf("%s\n---\n%s", json, json_back);
        fuzz_fail("params JSON differs after write_ini", detail);
    }
    if (scenario->seed != back->seed || strcmp(scenario->name, back->name) != 0) {
        fuzz_fail("seed or name differs after write_ini", ini);
    }
    if (strcmp(ini, ini_back) != 0) {
        g_autofree char *detail = g_strdup_printf("%s\n---\n%s", ini, ini_back);
        fuzz_fail("write_ini is not stable", detail);
    }
    ks_scenario_free(back);
    struct ks_scenario *copy = ks_scenario_copy(scenario);
    g_autofree char *json_copy = ks_scenario_params_json(copy);
    if (strcmp(json, json_copy) != 0) {
        fuzz_fail("a copy has other params", json_copy);
    }
    ks_scenario_free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    /* The scenario ends at the first "\n%%\n"; the --set lines follow. */
    size_t scenario_bytes = size;
    for (size_t i = 0; i + 4 <= size; i++) {
        if (memcmp(text + i, "\n%%\n", 4) == 0) {
            scenario_bytes = i + 1;
            break;
        }
    }
    unsigned line_count = 1;
    for (size_t i = 0; i < scenario_bytes; i++) {
        line_count += text[i] == '\n';
    }
    struct ks_scenario *scenario = NULL;
    GError *error = NULL;
    if (!ks_scenario_parse_from_bytes(FUZZ_NAME, text, scenario_bytes, &scenario, &error)) {
        message_check(error, line_count, false);
        g_error_free(error);
        return 0;
    }
    /* --set lines: NUL-terminated copies, so a NUL inside one ends it there
     * (as it would on a command line). */
    bool sets_applied = false;
    size_t position = scenario_bytes + 3;
    for (int count = 0; position < size && count < FUZZ_SET_COUNT_MAX; count++) {
        const char *start = text + position;
        const char *newline = memchr(start, '\n', size - position);
        size_t length = newline != NULL ? (size_t)(newline - start) : size - position;
        position += length + 1;
        g_autofree char *assignment = g_strndup(start, length);
        if (assignment[0] == '\0') {
            continue;
        }
        sets_applied = true;
        if (!ks_scenario_apply_set(scenario, assignment, &error)) {
            if (!g_str_has_prefix(error->message, "--set ") ||
                strchr(error->message, '\n') != NULL) {
                fuzz_fail("a --set message not shaped '--set ASSIGNMENT: what'", error->message);
            }
            g_clear_error(&error);
        }
    }
    if (!ks_scenario_finalize(scenario, &error)) {
        message_check(error, line_count, sets_applied);
        g_error_free(error);
        ks_scenario_free(scenario);
        return 0;
    }
    round_trip_check(scenario);
    ks_scenario_free(scenario);
    return 0;
}
