/*
** sim/steps.c: pictures of every replica's log at the run's steps (what a
** picture holds and who reads it: sim/steps.h).
**
** Invariants:
**   S1  steps are in event order (event never decreases), so look-ups by
**       event are binary searches.
**   S2  a view's epoch entries are in the order of the broker's cache:
**       epochs and start offsets strictly increase (LeaderEpochFileCache).
*/
#include "steps.h"

#include "../core/base.h"
#include "../core/log.h"

struct ks_steps {
    GArray *steps;   /* struct ks_step */
    GArray *views;   /* struct ks_log_view */
    GArray *entries; /* struct ks_epoch_entry */
};

struct ks_steps *ks_steps_new(void)
{
    struct ks_steps *steps = g_new0(struct ks_steps, 1);
    steps->steps = g_array_new(FALSE, FALSE, sizeof(struct ks_step));
    steps->views = g_array_new(FALSE, FALSE, sizeof(struct ks_log_view));
    steps->entries = g_array_new(FALSE, FALSE, sizeof(struct ks_epoch_entry));
    return steps;
}

void ks_steps_free(struct ks_steps *steps)
{
    if (steps == NULL) {
        return;
    }
    g_array_free(steps->steps, TRUE);
    g_array_free(steps->views, TRUE);
    g_array_free(steps->entries, TRUE);
    g_free(steps);
}

void ks_steps_begin(struct ks_steps *steps, const struct ks_step *step)
{
    if (steps->steps->len > 0) {
        const struct ks_step *last =
            &g_array_index(steps->steps, struct ks_step, steps->steps->len - 1);
        ks_assert(last->event <= step->event); /* S1 */
    }
    struct ks_step copy = *step;
    copy.view_first = steps->views->len;
    copy.view_count = 0;
    g_array_append_val(steps->steps, copy);
}

void ks_steps_add_view(struct ks_steps *steps, const struct ks_log_view *view,
                       const struct ks_epoch_entry *entries, int32_t entry_count)
{
    ks_assert(steps->steps->len > 0);
    struct ks_step *step = &g_array_index(steps->steps, struct ks_step, steps->steps->len - 1);
    struct ks_log_view copy = *view;
    copy.epoch_first = steps->entries->len;
    copy.epoch_count = entry_count;
    for (int32_t i = 1; i < entry_count; i++) {
        ks_assert(entries[i].epoch > entries[i - 1].epoch);               /* S2 */
        ks_assert(entries[i].start_offset > entries[i - 1].start_offset); /* S2 */
    }
    if (entry_count > 0) {
        g_array_append_vals(steps->entries, entries, (guint)entry_count);
    }
    g_array_append_val(steps->views, copy);
    step->view_count++;
}

void ks_steps_capture(struct ks_steps *steps, struct ks_cluster *cluster, int32_t event,
                      ks_time_ns at_ns, int32_t topic_index, int32_t partition)
{
    struct ks_step step = {
        .event = event,
        .at_ns = at_ns,
        .topic_index = topic_index,
        .partition = partition,
        .leader = ks_cluster_leader(cluster, topic_index, partition),
        .leader_epoch = ks_cluster_leader_epoch(cluster, topic_index, partition),
    };
    step.isr_count =
        ks_cluster_isr(cluster, topic_index, partition, step.isr, KS_REPLICATION_FACTOR_MAX);
    ks_steps_begin(steps, &step);
    int32_t replicas[KS_REPLICATION_FACTOR_MAX];
    int32_t count =
        ks_cluster_replicas(cluster, topic_index, partition, replicas, KS_REPLICATION_FACTOR_MAX);
    GArray *entries = g_array_new(FALSE, FALSE, sizeof(struct ks_epoch_entry));
    for (int32_t r = 0; r < count; r++) {
        struct ks_log_view view = {
            .broker = replicas[r],
            .replica_index = r,
            .role = KS_ROLE_NONE,
            .leo = -1,
            .hw = -1,
            .log_start_offset = -1,
            .leader_epoch = -1,
        };
        struct ks_replica_state state;
        struct ks_log *log = ks_cluster_replica_log(cluster, replicas[r], topic_index, partition);
        g_array_set_size(entries, 0);
        view.online = log != NULL && ks_cluster_replica_state(cluster, replicas[r], topic_index,
                                                              partition, &state);
        view.broker_up = ks_cluster_broker_is_up(cluster, replicas[r]);
        if (view.online) {
            view.role = state.role;
            view.leo = state.leo;
            view.hw = state.hw;
            view.log_start_offset = state.log_start_offset;
            view.leader_epoch = state.leader_epoch;
            int32_t n = ks_log_epoch_count(log);
            for (int32_t i = 0; i < n; i++) {
                struct ks_epoch_entry entry;
                ks_log_epoch_entry(log, i, &entry.epoch, &entry.start_offset);
                g_array_append_val(entries, entry);
            }
        }
        ks_steps_add_view(steps, &view, (const struct ks_epoch_entry *)(void *)entries->data,
                          (int32_t)entries->len);
    }
    g_array_free(entries, TRUE);
}

guint ks_steps_count(const struct ks_steps *steps)
{
    return steps->steps->len;
}

const struct ks_step *ks_steps_get(const struct ks_steps *steps, guint index)
{
    ks_assert(index < steps->steps->len);
    return &g_array_index(steps->steps, struct ks_step, index);
}

const struct ks_log_view *ks_steps_view(const struct ks_steps *steps, const struct ks_step *step,
                                        int32_t view_index)
{
    ks_assert(view_index >= 0 && view_index < step->view_count);
    return &g_array_index(steps->views, struct ks_log_view, step->view_first + (guint)view_index);
}

const struct ks_epoch_entry *ks_steps_epochs(const struct ks_steps *steps,
                                             const struct ks_log_view *view)
{
    if (view->epoch_count == 0) {
        return NULL;
    }
    return &g_array_index(steps->entries, struct ks_epoch_entry, view->epoch_first);
}

/* The first step whose event is >= event (S1). */
static guint first_at_or_after(const struct ks_steps *steps, int32_t event)
{
    guint lo = 0;
    guint hi = steps->steps->len;
    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2;
        if (g_array_index(steps->steps, struct ks_step, mid).event < event) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

const struct ks_step *ks_steps_find(const struct ks_steps *steps, int32_t event,
                                    int32_t topic_index, int32_t partition)
{
    for (guint i = first_at_or_after(steps, event); i < steps->steps->len; i++) {
        const struct ks_step *step = &g_array_index(steps->steps, struct ks_step, i);
        if (step->event != event) {
            break;
        }
        if (step->topic_index == topic_index && step->partition == partition) {
            return step;
        }
    }
    return NULL;
}

const struct ks_log_view *ks_steps_view_of(const struct ks_steps *steps, const struct ks_step *step,
                                           int32_t broker)
{
    for (int32_t r = 0; r < step->view_count; r++) {
        const struct ks_log_view *view = ks_steps_view(steps, step, r);
        if (view->broker == broker) {
            return view;
        }
    }
    return NULL;
}

const struct ks_log_view *ks_steps_last_online(const struct ks_steps *steps, int32_t before_event,
                                               int32_t topic_index, int32_t partition,
                                               int32_t broker)
{
    for (guint i = first_at_or_after(steps, before_event); i-- > 0;) {
        const struct ks_step *step = &g_array_index(steps->steps, struct ks_step, i);
        if (step->topic_index != topic_index || step->partition != partition) {
            continue;
        }
        const struct ks_log_view *view = ks_steps_view_of(steps, step, broker);
        if (view != NULL && view->online) {
            return view;
        }
    }
    return NULL;
}

int32_t ks_log_view_epoch_at(const struct ks_steps *steps, const struct ks_log_view *view,
                             int64_t offset)
{
    if (!view->online || offset < view->log_start_offset || offset >= view->leo) {
        return -1;
    }
    const struct ks_epoch_entry *entries = ks_steps_epochs(steps, view);
    for (int32_t i = view->epoch_count; i-- > 0;) {
        if (entries[i].start_offset <= offset) {
            return entries[i].epoch;
        }
    }
    return -1;
}

bool ks_log_view_holds(const struct ks_steps *steps, const struct ks_log_view *view, int64_t offset,
                       int32_t epoch)
{
    if (!view->online || offset < view->log_start_offset || offset >= view->leo) {
        return false;
    }
    return epoch < 0 || ks_log_view_epoch_at(steps, view, offset) == epoch;
}
