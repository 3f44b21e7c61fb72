/*
** tests/testlib.h: what every CUnit suite shares: a fresh run folder per test
** and a world built from a fixed seed. No state is shared between tests.
*/
#pragma once

#include "../sim/world.h"

#include <CUnit/CUnit.h>

struct ks_test_env {
    char *run_dir;   /* owned; a fresh folder under $TMPDIR, removed by deinit */
    ks_world *world; /* owned */
};

/* Makes a fresh run folder and a world with `node_count` nodes, 1ms latency,
 * no jitter, 2ms fsync, 500 MiB/s. */
void ks_test_env_init(struct ks_test_env *env, uint64_t seed, uint32_t node_count);
/* The same with a caller-filled config (seed, run_dir and node_count are kept
 * from it, run_dir replaced by the fresh folder). */
void ks_test_env_init_config(struct ks_test_env *env, struct ks_world_config *config);
void ks_test_env_deinit(struct ks_test_env *env);

/* Removes a folder tree (test clean-up). */
void ks_test_remove_tree(const char *path);

/* Adds a suite with the given tests to the CUnit registry. */
struct ks_test_case {
    const char *name;
    void (*fn)(void);
};
void ks_test_add_suite(const char *suite_name, const struct ks_test_case *cases, size_t count);
#define KS_TEST_ADD_SUITE(name, cases) \
    ks_test_add_suite(name, cases, sizeof(cases) / sizeof(cases[0]))
