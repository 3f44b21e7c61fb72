/*
** sim/sweep.h: the pieces of `ksim sweep` and `ksim explore` that tests and
** other commands reuse: seed ranges, shards, and the pool of worker
** processes (sim/sweep.c, sim/explore.c).
*/
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* "A-B" (A <= B) or a single "A": the seeds A..B. Errors read
 * "--seeds TEXT: what is wrong". */
bool ks_sweep_parse_seeds(const char *text, uint64_t *first, uint64_t *last, GError **error);

/* "I/N" with 1 <= I <= N: the I-th of N shards. */
bool ks_sweep_parse_shard(const char *text, uint32_t *shard_index, uint32_t *shard_count,
                          GError **error);

/* Whether work item `item_index` (0-based: a seed's offset from the first
 * seed, or a sweep run's index in the (setting, seed) order) belongs to shard
 * shard_index of shard_count. Round robin, so that every shard gets a share of
 * every setting: item mod N == I - 1. Every item belongs to exactly one shard. */
bool ks_sweep_shard_owns(uint64_t item_index, uint32_t shard_index, uint32_t shard_count);
