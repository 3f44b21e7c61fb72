/*
** core/placement.c: replica placement at topic creation (contract in
** core/placement.h).
**
** ks_placement_striped follows KRaft's StripedReplicaPlacer
** (metadata/.../metadata/placement/StripedReplicaPlacer.java: RackList.place,
** Rack.next/nextUnfenced, BrokerList.next), which QuorumController's
** ReplicationControlManager uses for every topic it creates, racks or not:
**   - brokers are grouped by rack (no racks: one unnamed rack); in each rack
**     a sorted list of unfenced and one of fenced brokers, each with a random
**     start offset; the racks sorted by name, with a random start offset;
**   - each partition is one "epoch": its leader is the next unfenced broker
**     of the rack at the rack offset (or the first rack after it that has
**     one); every further replica comes from the next rack in turn, skipping
**     the leader's rack once, so that with replication factor <= racks every
**     replica sits in another rack; a rack gives its brokers in turn within
**     an epoch, and its list offset moves by one each epoch it is used;
**   - the rack offset moves by one per partition (the "stripes"), and after
**     as many partitions as there are unfenced brokers the rack order and
**     every broker list are shuffled (Collections.shuffle) and the epochs
**     start over.
** Kafka keeps its racks in a HashMap and initialises and shuffles them in
** its iteration order; ksim does both in rack-name order (no hash order may
** reach the simulated world), which draws the same kinds of values in a
** fixed order. Java's Random.nextInt(n) becomes random_below(n).
**
** ks_placement_admin_utils follows AdminUtils.assignReplicasToBrokers
** (server-common/.../admin/AdminUtils.java): without racks the rack-unaware
** rule of kafka-reference 9.12; with racks the rack-alternated broker list
** (getRackAlternatedBrokerList) and the rack-aware rule, which skips a
** broker whose rack already holds a replica while some rack holds none, and
** a broker that holds one while some broker holds none.
**
** Invariants (asserted):
**   P1  every partition gets replication_factor distinct brokers, in range.
**   P2  the striped placer's leader (first replica) is unfenced (AdminUtils
**       knows no fencing: its caller passes the live brokers).
*/
#include "placement.h"

#include "base.h"

#include <stdlib.h>
#include <string.h>

/* ---- StripedReplicaPlacer ------------------------------------------------------ */

struct broker_list {
    int32_t *ids; /* a slice of rack_list.pool */
    int32_t count;
    int32_t index;  /* brokers returned in the current epoch */
    int32_t offset; /* added to index, modulo count */
    int32_t epoch;  /* the last epoch next() saw */
};

struct rack {
    const char *name; /* not owned */
    struct broker_list unfenced;
    struct broker_list fenced;
};

struct rack_list {
    const struct ks_placement *placement;   /* not owned */
    struct rack racks[KS_BROKER_COUNT_MAX]; /* sorted by name */
    int32_t rack_count;
    int32_t order[KS_BROKER_COUNT_MAX]; /* RackList.rackNames: indexes into racks */
    int32_t *pool;                      /* owned: broker_count ids, every list's slice */
    int32_t total_count;
    int32_t unfenced_count;
    int32_t epoch;
    int32_t offset;
};

static int32_t draw(const struct ks_placement *placement, int32_t bound)
{
    ks_assert(bound >= 1);
    uint64_t value = placement->random_below(placement->random_context, (uint64_t)bound);
    ks_assert(value < (uint64_t)bound);
    return (int32_t)value;
}

/* BrokerList.initialize: the ids are added in ascending order already. */
static void list_initialize(const struct ks_placement *placement, struct broker_list *list)
{
    if (list->count > 0) {
        list->offset = draw(placement, list->count);
    }
}

/* Collections.shuffle(list, random): swap(i - 1, nextInt(i)) for i = size..2. */
static void shuffle_ids(const struct ks_placement *placement, int32_t *ids, int32_t count)
{
    for (int32_t i = count; i > 1; i--) {
        int32_t j = draw(placement, i);
        int32_t kept = ids[i - 1];
        ids[i - 1] = ids[j];
        ids[j] = kept;
    }
}

/* BrokerList.next: the next broker of this epoch, or -1 when all were given. */
static int32_t list_next(struct broker_list *list, int32_t epoch)
{
    if (list->count == 0) {
        return -1;
    }
    if (list->epoch != epoch) {
        list->epoch = epoch;
        list->index = 0;
        list->offset = (list->offset + 1) % list->count;
    }
    if (list->index >= list->count) {
        return -1;
    }
    int32_t broker = list->ids[(list->index + list->offset) % list->count];
    list->index++;
    return broker;
}

/* Rack.next: unfenced brokers first, then fenced ones. */
static int32_t rack_next(struct rack *rack, int32_t epoch)
{
    int32_t broker = list_next(&rack->unfenced, epoch);
    return broker >= 0 ? broker : list_next(&rack->fenced, epoch);
}

static const char *rack_of(const struct ks_placement *placement, int32_t broker_id)
{
    bool has_racks = placement->racks != NULL && placement->racks[0][0] != '\0';
    return has_racks ? placement->racks[broker_id - 1] : "";
}

static bool is_fenced(const struct ks_placement *placement, int32_t broker_id)
{
    return placement->fenced != NULL && placement->fenced[broker_id - 1];
}

/* The rack named `name` in list->racks (sorted by name). */
static struct rack *rack_find(struct rack_list *list, const char *name)
{
    int32_t at = 0;
    while (at < list->rack_count && strcmp(list->racks[at].name, name) < 0) {
        at++;
    }
    ks_assert(at < list->rack_count && strcmp(list->racks[at].name, name) == 0);
    return &list->racks[at];
}

/* The RackList constructor. Two passes over the brokers: the racks (in name
 * order) and how many brokers each list gets, then the ids into each list's
 * slice of one pool (a rack may hold every broker, and there may be as many
 * racks as brokers: fixed arrays would take brokers^2 ids). */
static void rack_list_init(struct rack_list *list, const struct ks_placement *placement)
{
    memset(list, 0, sizeof *list);
    list->placement = placement;
    for (int32_t id = 1; id <= placement->broker_count; id++) {
        const char *name = rack_of(placement, id);
        /* Insert the rack in name order if new. */
        int32_t at = 0;
        while (at < list->rack_count && strcmp(list->racks[at].name, name) < 0) {
            at++;
        }
        if (at == list->rack_count || strcmp(list->racks[at].name, name) != 0) {
            memmove(&list->racks[at + 1], &list->racks[at],
                    sizeof list->racks[0] * (size_t)(list->rack_count - at));
            memset(&list->racks[at], 0, sizeof list->racks[at]);
            list->racks[at].name = name;
            list->rack_count++;
        }
        struct broker_list *brokers =
            is_fenced(placement, id) ? &list->racks[at].fenced : &list->racks[at].unfenced;
        brokers->count++;
    }
    list->pool = malloc(sizeof(int32_t) * (size_t)placement->broker_count);
    ks_assert(list->pool != NULL);
    int32_t *next = list->pool;
    for (int32_t r = 0; r < list->rack_count; r++) {
        list->racks[r].fenced.ids = next;
        next += list->racks[r].fenced.count;
        list->racks[r].fenced.count = 0;
        list->racks[r].unfenced.ids = next;
        next += list->racks[r].unfenced.count;
        list->racks[r].unfenced.count = 0;
    }
    /* Ids come ascending, so every broker list is sorted as
     * BrokerList.initialize sorts it. */
    for (int32_t id = 1; id <= placement->broker_count; id++) {
        struct rack *rack = rack_find(list, rack_of(placement, id));
        struct broker_list *brokers = is_fenced(placement, id) ? &rack->fenced : &rack->unfenced;
        brokers->ids[brokers->count++] = id;
        list->unfenced_count += !is_fenced(placement, id);
        list->total_count++;
    }
    for (int32_t r = 0; r < list->rack_count; r++) {
        list_initialize(placement, &list->racks[r].fenced);
        list_initialize(placement, &list->racks[r].unfenced);
        list->order[r] = r;
    }
    list->offset = list->rack_count > 0 ? draw(placement, list->rack_count) : 0;
}

/* RackList.shuffle. */
static void rack_list_shuffle(struct rack_list *list)
{
    shuffle_ids(list->placement, list->order, list->rack_count);
    for (int32_t r = 0; r < list->rack_count; r++) {
        shuffle_ids(list->placement, list->racks[r].fenced.ids, list->racks[r].fenced.count);
        shuffle_ids(list->placement, list->racks[r].unfenced.ids, list->racks[r].unfenced.count);
    }
}

/* RackList.place: the replicas of one partition. */
static void rack_list_place(struct rack_list *list, int32_t replication_factor, int32_t *out)
{
    ks_assert(replication_factor >= 1 && replication_factor <= list->total_count);
    ks_assert(list->unfenced_count >= 1); /* P2 */
    if (list->epoch == list->unfenced_count && list->unfenced_count > 1) {
        rack_list_shuffle(list);
        list->epoch = 0;
    }
    if (list->offset == list->rack_count) {
        list->offset = 0;
    }
    int32_t first_rack = list->offset;
    for (;;) {
        struct rack *rack = &list->racks[list->order[first_rack]];
        int32_t broker = list_next(&rack->unfenced, list->epoch);
        if (broker >= 0) {
            out[0] = broker;
            break;
        }
        first_rack = (first_rack + 1) % list->rack_count;
    }
    int32_t rack_index = list->offset;
    for (int32_t replica = 1; replica < replication_factor; replica++) {
        int32_t broker = -1;
        do {
            if (rack_index == first_rack) {
                first_rack = -1; /* skip the leader's rack once */
            } else {
                broker = rack_next(&list->racks[list->order[rack_index]], list->epoch);
            }
            rack_index = (rack_index + 1) % list->rack_count;
        } while (broker < 0);
        out[replica] = broker;
    }
    list->epoch++;
    list->offset++;
}

static void check_placement(const struct ks_placement *placement,
                            int32_t (*out)[KS_REPLICATION_FACTOR_MAX], bool leader_unfenced)
{
    for (int32_t p = 0; p < placement->partition_count; p++) {
        if (leader_unfenced) {
            ks_assert(!is_fenced(placement, out[p][0])); /* P2 */
        }
        for (int32_t j = 0; j < placement->replication_factor; j++) {
            ks_assert(out[p][j] >= 1 && out[p][j] <= placement->broker_count); /* P1 */
            for (int32_t i = 0; i < j; i++) {
                ks_assert(out[p][i] != out[p][j]); /* P1 */
            }
        }
    }
}

void ks_placement_striped(const struct ks_placement *placement,
                          int32_t (*out)[KS_REPLICATION_FACTOR_MAX])
{
    ks_assert(placement->broker_count >= 1 && placement->broker_count <= KS_BROKER_COUNT_MAX);
    ks_assert(placement->replication_factor <= KS_REPLICATION_FACTOR_MAX);
    struct rack_list list;
    rack_list_init(&list, placement);
    for (int32_t p = 0; p < placement->partition_count; p++) {
        rack_list_place(&list, placement->replication_factor, out[p]);
    }
    free(list.pool);
    check_placement(placement, out, true);
}

/* ---- AdminUtils ---------------------------------------------------------------- */

/* AdminUtils.replicaIndex. */
static int32_t replica_index(int32_t first, int32_t shift, int32_t j, int32_t n)
{
    int32_t offset = 1 + (shift + j) % (n - 1);
    return (first + offset) % n;
}

/* AdminUtils.getRackAlternatedBrokerList: racks in name order, one broker
 * (ascending ids) from each in turn. Returns the number of racks. */
static int32_t rack_alternated(int32_t broker_count, const char (*racks)[32], int32_t *order)
{
    bool used[KS_BROKER_COUNT_MAX] = { false };
    int32_t n = 0;
    int32_t rack_count = 0;
    while (n < broker_count) {
        /* One round: for each distinct rack in name order, its next broker. */
        const char *last_rack = NULL;
        int32_t round = 0;
        for (;;) {
            int32_t pick = -1;
            for (int32_t i = 0; i < broker_count; i++) {
                if (used[i] || (last_rack != NULL && strcmp(racks[i], last_rack) <= 0)) {
                    continue;
                }
                if (pick < 0 || strcmp(racks[i], racks[pick]) < 0) {
                    pick = i;
                }
            }
            if (pick < 0) {
                break;
            }
            used[pick] = true;
            order[n++] = pick + 1;
            last_rack = racks[pick];
            round++;
        }
        if (rack_count == 0) {
            rack_count = round; /* the first round meets every rack */
        }
    }
    return rack_count;
}

static bool contains(const int32_t *ids, int32_t count, int32_t id)
{
    for (int32_t i = 0; i < count; i++) {
        if (ids[i] == id) {
            return true;
        }
    }
    return false;
}

void ks_placement_admin_utils_fixed(int32_t broker_count, const char (*racks)[32],
                                    int32_t partition_count, int32_t replication_factor,
                                    int32_t start_index, int32_t shift,
                                    int32_t (*out)[KS_REPLICATION_FACTOR_MAX])
{
    ks_assert(broker_count >= 1 && broker_count <= KS_BROKER_COUNT_MAX);
    ks_assert(replication_factor >= 1 && replication_factor <= broker_count);
    int32_t order[KS_BROKER_COUNT_MAX];
    int32_t n = broker_count;
    bool has_racks = racks != NULL && racks[0][0] != '\0';
    int32_t rack_count = 1;
    if (has_racks) {
        rack_count = rack_alternated(broker_count, racks, order);
    } else {
        for (int32_t i = 0; i < n; i++) {
            order[i] = i + 1;
        }
    }
    int32_t current_shift = shift;
    for (int32_t p = 0; p < partition_count; p++) {
        if (p > 0 && p % n == 0) {
            current_shift++;
        }
        int32_t first = (p + start_index) % n;
        out[p][0] = order[first];
        if (!has_racks) {
            for (int32_t j = 0; j < replication_factor - 1; j++) {
                out[p][j + 1] = order[replica_index(first, current_shift, j, n)];
            }
            continue;
        }
        /* assignReplicasToBrokersRackAware. */
        const char *racks_with[KS_REPLICATION_FACTOR_MAX];
        int32_t racks_with_count = 1;
        racks_with[0] = racks[out[p][0] - 1];
        int32_t k = 0;
        for (int32_t j = 1; j < replication_factor; j++) {
            for (;;) {
                int32_t broker = order[replica_index(first, current_shift * rack_count, k, n)];
                const char *rack = racks[broker - 1];
                bool rack_has = false;
                for (int32_t r = 0; r < racks_with_count; r++) {
                    rack_has = rack_has || strcmp(racks_with[r], rack) == 0;
                }
                k++;
                if ((!rack_has || racks_with_count == rack_count) &&
                    (!contains(out[p], j, broker) || j == n)) {
                    out[p][j] = broker;
                    if (!rack_has) {
                        racks_with[racks_with_count++] = rack;
                    }
                    break;
                }
            }
        }
    }
}

void ks_placement_admin_utils(const struct ks_placement *placement,
                              int32_t (*out)[KS_REPLICATION_FACTOR_MAX])
{
    /* AdminUtils draws startIndex, then nextReplicaShift, each nextInt(n);
     * it knows nothing of fencing (the ZooKeeper controller passes live
     * brokers only). */
    int32_t n = placement->broker_count;
    int32_t start_index = draw(placement, n);
    int32_t shift = draw(placement, n);
    ks_placement_admin_utils_fixed(n, placement->racks, placement->partition_count,
                                   placement->replication_factor, start_index, shift, out);
    check_placement(placement, out, false);
}

int32_t (*ks_placement_assign_topic(const struct ks_topic_config *topic, ks_placer_fn *placer,
                                    struct ks_placement placement))[KS_REPLICATION_FACTOR_MAX]
{
    int32_t(*assignment)[KS_REPLICATION_FACTOR_MAX] =
        calloc((size_t)topic->partition_count, sizeof *assignment);
    ks_assert(assignment != NULL);
    if (topic->assignment != NULL) {
        for (int32_t p = 0; p < topic->partition_count; p++) {
            memcpy(assignment[p], topic->assignment[p], sizeof assignment[p]);
        }
        return assignment;
    }
    placement.partition_count = topic->partition_count;
    placement.replication_factor = topic->replication_factor;
    placer(&placement, assignment);
    return assignment;
}
