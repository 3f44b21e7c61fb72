/* tests/testlib.c: shared test fixtures (see testlib.h). */
#include "testlib.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ks_test_remove_tree(const char *path)
{
    ks_host_remove_tree(path);
}

void ks_test_env_init_config(struct ks_test_env *env, struct ks_world_config *config)
{
    GError *error = NULL;
    env->run_dir = g_dir_make_tmp("ksim-test-XXXXXX", &error);
    CU_ASSERT_PTR_NOT_NULL_FATAL(env->run_dir);
    config->run_dir = env->run_dir;
    env->world = ks_world_new(config, &error);
    if (env->world == NULL) {
        fprintf(stderr, "ks_world_new: %s\n", error ? error->message : "?");
        g_clear_error(&error);
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(env->world);
}

void ks_test_env_init(struct ks_test_env *env, uint64_t seed, uint32_t node_count)
{
    struct ks_world_config config = {
        .seed = seed,
        .node_count = node_count,
        .network_latency_ns = 1000000,
        .network_jitter_ns = 0,
        .disk_fsync_latency_ns = 2000000,
        .disk_bandwidth_bytes_per_s = 500ull * 1024 * 1024,
    };
    ks_test_env_init_config(env, &config);
}

void ks_test_env_deinit(struct ks_test_env *env)
{
    ks_world_free(env->world);
    env->world = NULL;
    if (env->run_dir != NULL) {
        ks_test_remove_tree(env->run_dir);
        g_free(env->run_dir);
        env->run_dir = NULL;
    }
}

void ks_test_add_suite(const char *suite_name, const struct ks_test_case *cases, size_t count)
{
    CU_pSuite suite = CU_add_suite(suite_name, NULL, NULL);
    if (suite == NULL) {
        fprintf(stderr, "CU_add_suite(%s) failed\n", suite_name);
        exit(3);
    }
    for (size_t i = 0; i < count; i++) {
        CU_add_test(suite, cases[i].name, cases[i].fn);
    }
}
