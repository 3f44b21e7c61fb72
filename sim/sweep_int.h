/*
** sim/sweep_int.h: what sim/sweep.c shares with sim/explore.c only.
*/
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* The options sweep and explore share: --db, --seeds, --jobs, --shard. */
struct ks__pool_cli {
    const char *db_path;    /* default "ksim.db" */
    const char *seeds_text; /* required */
    uint32_t jobs;          /* default 1 */
    uint32_t shard_index;   /* default 1/1 */
    uint32_t shard_count;
};

/* Handles the option at argv[*i] (advancing *i past its value) and returns
 * true if it was one of the shared ones; sets *bad after printing a message
 * for a bad value. `command` names the subcommand in messages. */
bool ks__pool_cli_option(const char *command, int argc, char **argv, int *i,
                         struct ks__pool_cli *cli, bool *bad);

/* Exit code for an error of ks_pool_run: 2 for a database that is not
 * usable (not ksim's, cannot be opened), else 3. */
int ks__pool_error_code(const GError *error);
