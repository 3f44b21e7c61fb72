/*
** tests/sim/test_sched.c: the scheduler (suite "sim/sched").
**
** Goal: events run in (time, insertion) order, cancel works and is safe with
** stale ids, the clock follows the contract of run_until and run_until_idle,
** pause defers a node's events and resume replays them in order, a crash
** drops the node's timers, and lazy cancellation keeps memory bounded.
** Method: small worlds whose timers append their tag to a log array; each test
** compares the log with the order the contract implies.
*/
#include "../testlib.h"

#include "../../sim/world_int.h"

struct order_log {
    int tags[256];
    ks_time_ns times_ns[256];
    int count;
};

struct tagged {
    struct order_log *log;
    int tag;
};

static void record_tag(ks_world *world, void *context)
{
    struct tagged *t = context;
    CU_ASSERT_FATAL(t->log->count < 256);
    t->log->times_ns[t->log->count] = ks_world_now_ns(world);
    t->log->tags[t->log->count++] = t->tag;
}

static void test_order_and_ties(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 3);
    struct order_log log = { 0 };
    struct tagged tags[6];
    /* Delays 30, 10, 10, 20, 10, 0: ties at 10 keep insertion order. */
    ks_time_ns delays[6] = { 30, 10, 10, 20, 10, 0 };
    for (int i = 0; i < 6; i++) {
        tags[i] = (struct tagged){ &log, i };
        ks_world_schedule(env.world, (ks_node_id)(i % 3), delays[i], 1, record_tag, &tags[i]);
    }
    uint64_t processed = ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    CU_ASSERT_EQUAL(processed, 6);
    CU_ASSERT_EQUAL(ks_world_event_count(env.world), 6);
    int expected[6] = { 5, 1, 2, 4, 3, 0 };
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_EQUAL(log.tags[i], expected[i]);
        CU_ASSERT_EQUAL(log.times_ns[i], delays[expected[i]]);
    }
    CU_ASSERT_EQUAL(ks_world_now_ns(env.world), 30);
    ks_test_env_deinit(&env);
}

static void test_run_until_sets_clock(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    struct order_log log = { 0 };
    struct tagged a = { &log, 1 }, b = { &log, 2 };
    ks_world_schedule(env.world, 1, 100, 1, record_tag, &a);
    ks_world_schedule(env.world, 1, 200, 1, record_tag, &b);
    CU_ASSERT_EQUAL(ks_world_run_until(env.world, 99), 0);
    CU_ASSERT_EQUAL(ks_world_now_ns(env.world), 99);
    CU_ASSERT_EQUAL(ks_world_run_until(env.world, 100), 1); /* at_ns <= until runs */
    CU_ASSERT_EQUAL(ks_world_now_ns(env.world), 100);
    CU_ASSERT_EQUAL(ks_world_run_until(env.world, 150), 0);
    CU_ASSERT_EQUAL(ks_world_now_ns(env.world), 150);
    /* Delays are relative to the new clock. */
    struct tagged c = { &log, 3 };
    ks_world_schedule(env.world, 1, 10, 1, record_tag, &c);
    CU_ASSERT_EQUAL(ks_world_run_until_idle(env.world, KS_TIME_NEVER), 2);
    CU_ASSERT_EQUAL(log.count, 3);
    CU_ASSERT_EQUAL(log.tags[1], 3);
    CU_ASSERT_EQUAL(log.times_ns[1], 160);
    CU_ASSERT_EQUAL(ks_world_now_ns(env.world), 200);
    ks_test_env_deinit(&env);
}

static void test_cancel(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    struct order_log log = { 0 };
    struct tagged t[4];
    ks_timer_id ids[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (struct tagged){ &log, i };
        ids[i] = ks_world_schedule(env.world, 1, (ks_time_ns)(10 * (i + 1)), 1, record_tag, &t[i]);
        CU_ASSERT_NOT_EQUAL(ids[i], 0);
    }
    ks_world_cancel(env.world, ids[1]);
    ks_world_cancel(env.world, ids[1]); /* twice: no-op */
    ks_world_cancel(env.world, 0);      /* none: no-op */
    ks_world_run_until(env.world, 10);
    ks_world_cancel(env.world, ids[0]); /* already ran: no-op */
    /* A new timer may reuse the slot of a finished one: the old id must not
     * cancel it. */
    struct tagged late = { &log, 9 };
    ks_timer_id late_id = ks_world_schedule(env.world, 1, 5, 1, record_tag, &late);
    ks_world_cancel(env.world, ids[0]);
    CU_ASSERT_NOT_EQUAL(late_id, ids[0]);
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    CU_ASSERT_EQUAL(log.count, 4);
    CU_ASSERT_EQUAL(log.tags[0], 0);
    CU_ASSERT_EQUAL(log.tags[1], 9);
    CU_ASSERT_EQUAL(log.tags[2], 2);
    CU_ASSERT_EQUAL(log.tags[3], 3);
    ks_test_env_deinit(&env);
}

/* A world left with only cancelled timers past the limit is idle: the clock
 * stays at its last event, as when nothing at all is left. */
static void test_idle_ignores_cancelled_timers(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    struct order_log log = { 0 };
    struct tagged a = { &log, 1 }, b = { &log, 2 };
    ks_world_schedule(env.world, 1, 100, 1, record_tag, &a);
    ks_timer_id late = ks_world_schedule(env.world, 1, 5000, 1, record_tag, &b);
    ks_world_cancel(env.world, late);
    CU_ASSERT_EQUAL(ks_world_run_until_idle(env.world, 1000), 1);
    CU_ASSERT_EQUAL(ks_world_now_ns(env.world), 100);
    /* A live timer past the limit still moves the clock to the limit. */
    ks_world_schedule(env.world, 1, 5000, 1, record_tag, &b);
    CU_ASSERT_EQUAL(ks_world_run_until_idle(env.world, 1000), 0);
    CU_ASSERT_EQUAL(ks_world_now_ns(env.world), 1000);
    CU_ASSERT_EQUAL(log.count, 1);
    ks_test_env_deinit(&env);
}

static void noop(ks_world *world, void *context)
{
    (void)world;
    (void)context;
}

/* Schedule-then-cancel many far timers: the heap must stay bounded. */
static void test_cancel_is_bounded(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    for (int i = 0; i < 200000; i++) {
        ks_timer_id id = ks_world_schedule(env.world, 1, KS_NS_PER_S * 30, 1, noop, NULL);
        ks_world_cancel(env.world, id);
    }
    CU_ASSERT(env.world->heaps[KS__HEAP_NEAR].count + env.world->heaps[KS__HEAP_FAR].count <= 4096);
    CU_ASSERT(env.world->pool_used <= 8192);
    CU_ASSERT_EQUAL(ks_world_run_until_idle(env.world, KS_TIME_NEVER), 0);
    ks_test_env_deinit(&env);
}

struct chain {
    struct order_log log;
    int remaining;
};

static void chain_step(ks_world *world, void *context)
{
    struct chain *c = context;
    c->log.times_ns[c->log.count] = ks_world_now_ns(world);
    c->log.tags[c->log.count++] = c->remaining;
    if (--c->remaining > 0) {
        ks_world_schedule(world, 1, 7, 1, chain_step, c);
    }
}

static void test_handlers_schedule(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    struct chain c = { .remaining = 10 };
    ks_world_schedule(env.world, 1, 0, 1, chain_step, &c);
    CU_ASSERT_EQUAL(ks_world_run_until_idle(env.world, KS_TIME_NEVER), 10);
    CU_ASSERT_EQUAL(c.log.count, 10);
    CU_ASSERT_EQUAL(c.log.times_ns[9], 63);
    ks_test_env_deinit(&env);
}

struct pause_ctl {
    ks_node_id node;
};

static void do_resume(ks_world *world, void *context)
{
    ks_world_node_resume(world, ((struct pause_ctl *)context)->node);
}

static void test_pause_defers_in_order(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 3);
    struct order_log log = { 0 };
    struct tagged t[5];
    for (int i = 0; i < 5; i++) {
        t[i] = (struct tagged){ &log, i };
    }
    ks_world_node_pause(env.world, 1);
    CU_ASSERT_TRUE(ks_world_node_is_paused(env.world, 1));
    CU_ASSERT_TRUE(ks_world_node_is_up(env.world, 1));
    ks_world_schedule(env.world, 1, 30, 1, record_tag, &t[0]);
    ks_world_schedule(env.world, 1, 10, 1, record_tag, &t[1]);
    ks_timer_id cancelled = ks_world_schedule(env.world, 1, 20, 1, record_tag, &t[2]);
    ks_world_schedule(env.world, 2, 40, 1, record_tag, &t[3]); /* another node runs */
    ks_world_schedule(env.world, 1, 80, 1, record_tag, &t[4]); /* after resume: normal */
    struct pause_ctl ctl = { 1 };
    ks_world_schedule(env.world, KS_NODE_DRIVER, 50, 1, do_resume, &ctl);
    ks_world_run_until(env.world, 45);
    ks_world_cancel(env.world, cancelled); /* cancel while deferred */
    CU_ASSERT_EQUAL(log.count, 1);
    CU_ASSERT_EQUAL(log.tags[0], 3);
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    CU_ASSERT_FALSE(ks_world_node_is_paused(env.world, 1));
    CU_ASSERT_EQUAL(log.count, 4);
    CU_ASSERT_EQUAL(log.tags[1], 1);
    CU_ASSERT_EQUAL(log.times_ns[1], 50);
    CU_ASSERT_EQUAL(log.tags[2], 0);
    CU_ASSERT_EQUAL(log.times_ns[2], 50);
    CU_ASSERT_EQUAL(log.tags[3], 4);
    CU_ASSERT_EQUAL(log.times_ns[3], 80);
    ks_test_env_deinit(&env);
}

static void test_crash_drops_timers(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 3);
    struct order_log log = { 0 };
    struct tagged t[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (struct tagged){ &log, i };
    }
    ks_world_schedule(env.world, 1, 10, 1, record_tag, &t[0]);
    ks_world_schedule(env.world, 2, 10, 1, record_tag, &t[1]);
    ks_world_node_crash(env.world, 1, false);
    CU_ASSERT_FALSE(ks_world_node_is_up(env.world, 1));
    /* Scheduled while down: dropped too (a restarted node starts with none). */
    ks_world_schedule(env.world, 1, 20, 1, record_tag, &t[2]);
    ks_world_run_until(env.world, 5);
    ks_world_node_restart(env.world, 1);
    CU_ASSERT_TRUE(ks_world_node_is_up(env.world, 1));
    ks_world_schedule(env.world, 1, 10, 1, record_tag, &t[3]);
    CU_ASSERT_EQUAL(ks_world_run_until_idle(env.world, KS_TIME_NEVER), 2);
    CU_ASSERT_EQUAL(log.count, 2);
    CU_ASSERT_EQUAL(log.tags[0], 1);
    CU_ASSERT_EQUAL(log.tags[1], 3);
    CU_ASSERT_EQUAL(ks_world_event_count(env.world), 2);
    ks_test_env_deinit(&env);
}

static void test_crash_while_paused(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    struct order_log log = { 0 };
    struct tagged t = { &log, 1 };
    ks_world_node_pause(env.world, 1);
    ks_world_schedule(env.world, 1, 10, 1, record_tag, &t);
    ks_world_run_until(env.world, 20);
    ks_world_node_crash(env.world, 1, false);
    CU_ASSERT_FALSE(ks_world_node_is_paused(env.world, 1));
    ks_world_node_restart(env.world, 1);
    ks_world_node_resume(env.world, 1); /* not paused any more: no-op */
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    CU_ASSERT_EQUAL(log.count, 0);
    ks_test_env_deinit(&env);
}

struct counter {
    int count;
};

static void count_after(ks_world *world, void *context)
{
    (void)world;
    ((struct counter *)context)->count++;
}

static void test_after_event(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    struct counter counter = { 0 };
    ks_world_set_after_event(env.world, count_after, &counter);
    for (int i = 0; i < 5; i++) {
        ks_world_schedule(env.world, 1, (ks_time_ns)i, 1, noop, NULL);
    }
    ks_timer_id id = ks_world_schedule(env.world, 1, 3, 1, noop, NULL);
    ks_world_cancel(env.world, id);
    ks_world_run_until(env.world, 3);
    CU_ASSERT_EQUAL(counter.count, 4);
    ks_world_set_after_event(env.world, NULL, NULL);
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    CU_ASSERT_EQUAL(counter.count, 4);
    CU_ASSERT_EQUAL(ks_world_event_count(env.world), 5);
    ks_test_env_deinit(&env);
}

/* A far timer (scheduled 100 ms ahead, the far heap) and a near one
 * scheduled later for the same instant (40 ms ahead, the near heap): the far
 * one was scheduled first, so it runs first. */
static void schedule_near_tie(ks_world *world, void *context)
{
    ks_world_schedule(world, 1, 40 * KS_NS_PER_MS, 1, record_tag, context);
}

static void test_near_and_far_ties(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    struct order_log log = { 0 };
    struct tagged far = { &log, 1 }, near = { &log, 2 };
    ks_world_schedule(env.world, 1, 100 * KS_NS_PER_MS, 1, record_tag, &far);
    ks_world_schedule(env.world, 1, 60 * KS_NS_PER_MS, 1, schedule_near_tie, &near);
    CU_ASSERT_EQUAL(ks_world_run_until_idle(env.world, KS_TIME_NEVER), 3);
    CU_ASSERT_EQUAL(log.count, 2);
    CU_ASSERT_EQUAL(log.tags[0], 1);
    CU_ASSERT_EQUAL(log.tags[1], 2);
    CU_ASSERT_EQUAL(log.times_ns[0], 100 * KS_NS_PER_MS);
    CU_ASSERT_EQUAL(log.times_ns[1], 100 * KS_NS_PER_MS);
    ks_test_env_deinit(&env);
}

/* A random mix of near and far timers, scheduled by handlers (so that a
 * handler's push meets the root it runs, in either heap) and cancelled at
 * random (so that both heaps compact): every timer not cancelled runs once,
 * none cancelled runs, and they run in (time, order of scheduling). */
#define MIX_TIMERS 20000

struct mix {
    uint64_t state;
    uint32_t scheduled; /* timers made so far; a timer's number is its order */
    ks_time_ns at_ns[MIX_TIMERS];
    ks_timer_id id[MIX_TIMERS];
    bool cancelled[MIX_TIMERS];
    uint32_t ran[MIX_TIMERS];
    uint32_t last; /* the number of the timer that ran last */
    bool in_order;
    uint32_t cancelled_seen[KS__HEAP_COUNT];
    uint32_t compactions[KS__HEAP_COUNT];
};

struct mix_timer {
    struct mix *mix;
    uint32_t number;
};

static struct mix_timer mix_timers[MIX_TIMERS];

static uint64_t mix_draw(struct mix *m)
{
    m->state ^= m->state << 13;
    m->state ^= m->state >> 7;
    m->state ^= m->state << 17;
    return m->state;
}

static void mix_fire(ks_world *world, void *context);

static void mix_schedule(ks_world *world, struct mix *m)
{
    if (m->scheduled == MIX_TIMERS) {
        return;
    }
    static const ks_time_ns delays[] = {
        0, KS_NS_PER_MS, 49 * KS_NS_PER_MS, 50 * KS_NS_PER_MS, 500 * KS_NS_PER_MS, 30 * KS_NS_PER_S
    };
    uint64_t draw = mix_draw(m);
    ks_time_ns delay_ns = delays[draw % 6] + (draw >> 32) % 3 * KS_NS_PER_MS;
    uint32_t n = m->scheduled++;
    mix_timers[n] = (struct mix_timer){ m, n };
    m->at_ns[n] = ks_world_now_ns(world) + delay_ns;
    m->id[n] = ks_world_schedule(world, 1, delay_ns, 1, mix_fire, &mix_timers[n]);
}

static void mix_fire(ks_world *world, void *context)
{
    struct mix_timer *t = context;
    struct mix *m = t->mix;
    m->ran[t->number]++;
    if (m->last != UINT32_MAX) {
        ks_time_ns last_ns = m->at_ns[m->last];
        bool after = last_ns < m->at_ns[t->number] ||
                     (last_ns == m->at_ns[t->number] && m->last < t->number);
        m->in_order = m->in_order && after;
    }
    m->in_order = m->in_order && ks_world_now_ns(world) == m->at_ns[t->number];
    m->last = t->number;
    mix_schedule(world, m);
    if (mix_draw(m) % 3 == 0) {
        mix_schedule(world, m);
    }
    uint32_t back = (uint32_t)(mix_draw(m) % 64);
    uint32_t victim = back < m->scheduled ? m->scheduled - 1 - back : 0;
    if (mix_draw(m) % 2 == 0 && m->ran[victim] == 0 && !m->cancelled[victim]) {
        ks_world_cancel(world, m->id[victim]);
        m->cancelled[victim] = true;
    }
    /* A heap compacted when its count of cancelled entries fell by more than
     * the one a pop takes. */
    for (int h = 0; h < KS__HEAP_COUNT; h++) {
        uint32_t now_cancelled = world->heaps[h].cancelled_count;
        m->compactions[h] += now_cancelled + 1 < m->cancelled_seen[h];
        m->cancelled_seen[h] = now_cancelled;
    }
}

static void test_near_and_far_mix(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    struct mix *m = g_new0(struct mix, 1);
    m->state = 88172645463325252ULL;
    m->last = UINT32_MAX;
    m->in_order = true;
    for (int i = 0; i < 100; i++) {
        mix_schedule(env.world, m);
    }
    ks_world_run_until_idle(env.world, KS_TIME_NEVER);
    CU_ASSERT_EQUAL(m->scheduled, MIX_TIMERS);
    CU_ASSERT_TRUE(m->in_order);
    uint32_t cancelled = 0;
    bool each_once = true;
    for (uint32_t n = 0; n < MIX_TIMERS; n++) {
        cancelled += m->cancelled[n];
        each_once = each_once && m->ran[n] == (m->cancelled[n] ? 0u : 1u);
    }
    CU_ASSERT_TRUE(each_once);
    CU_ASSERT(cancelled > MIX_TIMERS / 10);
    CU_ASSERT(m->compactions[KS__HEAP_NEAR] > 0);
    CU_ASSERT(m->compactions[KS__HEAP_FAR] > 0);
    CU_ASSERT_EQUAL(ks_world_event_count(env.world), MIX_TIMERS - cancelled);
    g_free(m);
    ks_test_env_deinit(&env);
}

/* The pool and each heap's children of an index sit on cache lines (sched.c's
 * "Cache lines"), also after they grew and the handlers ran. */
static void noop_timer(ks_world *world, void *context)
{
    (void)world;
    (void)context;
}

static void test_cache_lines(void)
{
    struct ks_test_env env;
    ks_test_env_init(&env, 1, 2);
    for (uint32_t i = 0; i < 5000; i++) {
        ks_time_ns delay_ns = i % 2 == 0 ? i : 60 * KS_NS_PER_S + i;
        ks_world_schedule(env.world, 1, delay_ns, 1, noop_timer, NULL);
    }
    ks_world_run_until(env.world, KS_NS_PER_S);
    ks_world *world = env.world;
    CU_ASSERT(world->pool_capacity > 1024); /* it grew */
    CU_ASSERT_EQUAL((uintptr_t)world->pool % 64, 0);
    for (int h = 0; h < KS__HEAP_COUNT; h++) {
        CU_ASSERT(world->heaps[h].capacity >= 2048 || h == KS__HEAP_NEAR);
        CU_ASSERT_EQUAL((uintptr_t)&world->heaps[h].entries[1] % 64, 0);
    }
    ks_test_env_deinit(&env);
}

void ks_test_register_sched(void)
{
    static const struct ks_test_case cases[] = {
        { "order_and_ties", test_order_and_ties },
        { "run_until_sets_clock", test_run_until_sets_clock },
        { "run_until_idle: cancelled timers are not pending", test_idle_ignores_cancelled_timers },
        { "cancel", test_cancel },
        { "cancel_is_bounded", test_cancel_is_bounded },
        { "handlers_schedule", test_handlers_schedule },
        { "pause_defers_in_order", test_pause_defers_in_order },
        { "crash_drops_timers", test_crash_drops_timers },
        { "crash_while_paused", test_crash_while_paused },
        { "after_event", test_after_event },
        { "near_and_far_ties", test_near_and_far_ties },
        { "near_and_far_mix", test_near_and_far_mix },
        { "cache_lines", test_cache_lines },
    };
    KS_TEST_ADD_SUITE("sim/sched", cases);
}
