/* row.c -- the gang row of the cycle (extension.h): a gang member's set
 * becomes the gang's pending members, its minimum placed all or nothing by
 * the cycle (then each elastic member as a set of one behind it); the
 * backfill gate; a gang's victims taken whole; PodGroup events, status,
 * timeouts and stale gangs from the housekeeper. Nothing is held while a
 * gang waits: the cycle forgets every member it assumed before it ends.
 * The store is gang.c's (pure); the core is reached through the services. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gang/room.h"
#include "gang/row.h"
#include "topology/pool.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/util.h"

void *gang_row_init(const sched_services_t *svc, void *core)
{
    gang_room_t *r = util_xcalloc(1, sizeof(*r));
    r->svc = svc;
    r->core = core;
    r->gangs = gang_store_new();
    return r;
}

void gang_row_fini(void *self)
{
    gang_room_t *r = self;
    if (!r)
        return;
    gang_store_free(r->gangs);
    free(r);
}

/* What the row keeps of one set, in its slot (pod_set_t.slot): made on
 * demand, freed by gang_row_end. */
typedef struct gang_set {
    int turn;       /* the gang's turn is taken (gang_turn_begin) */
    gang_snap_t *g; /* its PodGroup: a minimum's own (owned), an elastic
                     * member's its minimum's (borrowed), or NULL */
    int owned;
} gang_set_t;

static gang_set_t *set_data(const sched_row_t *row, pod_set_t *set)
{
    if (!set->slot[row->index])
        set->slot[row->index] = util_xcalloc(1, sizeof(gang_set_t));
    return set->slot[row->index];
}

static int has_turn(const sched_row_t *row, const pod_set_t *set)
{
    const gang_set_t *d = set->slot[row->index];
    return d && d->turn;
}

const gang_snap_t *gang_row_set_gang(const sched_row_t *row, const pod_set_t *set)
{
    const gang_set_t *d = set->slot[row->index];
    return d ? d->g : NULL;
}

void gang_row_hold(const sched_row_t *row, pod_set_t *set, gang_snap_t *g, int owned)
{
    gang_set_t *d = set_data(row, set);
    d->g = g;
    d->owned = owned;
}

/* The set's PodGroup as the core forwards it (the services' set_gang). */
static const void *published_set_gang(const sched_row_t *row, const pod_set_t *set)
{
    return gang_row_set_gang(row, set);
}

void gang_row_publish(const sched_row_t *row, sched_published_t *pub)
{
    pub->group_store = ((gang_room_t *)row->self)->gangs;
    pub->set_group = published_set_gang;
    pub->set_group_row = row;
}

/* The counters this row moves (/metrics). */
typedef struct stat_add {
    size_t field; /* offsetof(scheduler_stats_t, ...) */
    unsigned long n;
} stat_add_t;

static void add_stat(scheduler_stats_t *st, void *ud)
{
    const stat_add_t *a = ud;
    *(unsigned long *)((char *)st + a->field) += a->n;
}

static void stat_add(const gang_room_t *r, size_t field, unsigned long n)
{
    stat_add_t a = { field, n };
    r->svc->stats(r->core, add_stat, &a);
}

/* ------------------------------------------------------------ events */

static void podgroup_event(const gang_room_t *r, const char *ns, const char *name, const char *uid, const char *type,
                           const char *reason, const char *message)
{
    r->svc->object_event_ref(r->core, "PodGroup", PODGROUP_VERSION, ns, name, uid, type, reason, message);
}

/* ------------------------------------------------------------ members */

/* Queue order inside a gang: higher priority, then older, then uid. */
static int member_cmp(const void *a, const void *b)
{
    const pod_t *x = (*(queue_item_t *const *)a)->pod, *y = (*(queue_item_t *const *)b)->pod;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    if (x->created_ms != y->created_ms)
        return x->created_ms < y->created_ms ? -1 : 1;
    return strcmp(x->uid, y->uid);
}

/* Members holding room from an earlier preemption (nominated) or from a
 * reclaim under their queue's limit (charged while pending) go first
 * (stable): the minimum is the set the room was made for, not a member
 * that came since and sorts before them. */
static void nominated_first(const gang_room_t *r, queue_item_t **items, int n)
{
    queue_item_t **tmp = util_xcalloc((size_t)n + 1, sizeof(*tmp));
    int k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++)
            if ((r->svc->nomination(r->core, items[i]->pod->uid, NULL, 0) ||
                 r->svc->charged(r->core, items[i]->pod->uid)) == (pass == 0))
                tmp[k++] = items[i];
    memcpy(items, tmp, (size_t)n * sizeof(*items));
    free(tmp);
}

/* A turn that ends neither placing nor preempting: the room and queue
 * charge an earlier preemption left to its members go (it holds them for
 * nothing while it waits). */
static void drop_rooms(const gang_room_t *r, queue_item_t **items, int n)
{
    for (int i = 0; i < n; i++)
        if (items[i] && r->svc->nomination(r->core, items[i]->pod->uid, NULL, 0))
            r->svc->drop_nomination(r->core, items[i]->pod);
}

/* Members that name different pools: the gang is not split. 1 with the
 * first two pools seen in *a and *b (borrowed from the snapshot). */
static int pool_conflict(const gang_snap_t *g, const char **a, const char **b)
{
    *a = *b = NULL;
    for (int i = 0; i < g->nmembers; i++) {
        const pod_t *m = g->members[i];
        if (pod_is_terminal(m) || m->deleting)
            continue;
        const char *p = pod_home_pool(m);
        if (!*a) {
            *a = p;
        } else if (strcmp(*a, p) != 0) {
            *b = p;
            return 1;
        }
    }
    return 0;
}

/* -------------------------------------------------- victims, as a gang */

/* Adds the gang-mates of cd's gang victims (a gang goes whole). 0 when a
 * mate is no victim of preemptor by the same rule as any victim (ours,
 * lower claim, queue rules), or when a PDB protects one of the set: the
 * Eviction API would refuse it midway and leave a gang below its minimum. */
static int expand_one(const gang_room_t *r, void *vc, const pod_t *preemptor, preempt_candidate_t *cd)
{
    hashmap_t *seen = hashmap_new(16); /* the candidate's victims, by uid (borrowed) */
    int ok = 1, gangs = 0;
    for (int i = 0; i < cd->nvictims; i++)
        hashmap_put(seen, cd->victims[i]->uid, cd->victims[i]);
    int orig = cd->nvictims;
    for (int i = 0; i < orig && ok; i++) {
        if (!gang_of(cd->victims[i]))
            continue;
        pod_t **mates = NULL;
        int nm = gang_mates(r->gangs, cd->victims[i], &mates);
        gangs = 1;
        for (int k = 0; k < nm; k++) {
            int64_t rank = 0;
            if (ok && !mates[k]->deleting && hashmap_get(seen, mates[k]->uid) == NULL) {
                if (!r->svc->is_victim(r->core, mates[k], preemptor, vc, &rank)) {
                    ok = 0;
                } else {
                    cd->victims = util_xrealloc(cd->victims, (size_t)(cd->nvictims + 1) * sizeof(*cd->victims));
                    cd->victims[cd->nvictims++] = pod_ref(mates[k]);
                    hashmap_put(seen, mates[k]->uid, cd->victims[cd->nvictims - 1]);
                    if (rank > cd->max_rank)
                        cd->max_rank = rank;
                    cd->rank_sum += rank + PREEMPT_RANK_OFFSET;
                }
            }
            pod_unref(mates[k]);
        }
        free(mates);
    }
    hashmap_free(seen);
    if (ok && gangs)
        ok = r->svc->pdb_violations(r->core, cd->victims, cd->nvictims) == 0;
    return ok;
}

int gang_row_expand(const sched_row_t *row, void *vc, const pod_t *preemptor, preempt_candidate_t *cands, int n)
{
    const gang_room_t *r = row->self;
    int k = 0;
    for (int c = 0; c < n; c++) {
        if (expand_one(r, vc, preemptor, &cands[c]))
            cands[k++] = cands[c];
        else
            preempt_candidate_clear(&cands[c]);
    }
    return k;
}

/* A victim's gang goes whole, unless it is a member beyond the minimum. */
int gang_row_mates(const sched_row_t *row, const pod_t *victim, pod_t ***out)
{
    const gang_room_t *r = row->self;
    *out = NULL;
    return gang_of(victim) ? gang_mates(r->gangs, victim, out) : 0;
}

int gang_row_minimum_member(const sched_row_t *row, const pod_t *pod)
{
    const gang_room_t *r = row->self;
    return gang_of(pod) && gang_member_class(r->gangs, pod) == GANG_MEMBER_MINIMUM;
}

/* The class a member's PodGroup names (GANG_PRIORITY_CLASS_ANNOTATION). */
char *gang_row_group_class(const sched_row_t *row, const pod_t *pod)
{
    const gang_room_t *r = row->self;
    const char *g = gang_of(pod);
    return g ? gang_priority_class_of(r->gangs, pod->ns, g) : NULL;
}

/* A gang's preemption was committed (preempt_eval.c): said in the log,
 * on the PodGroup, and counted. */
void gang_row_preempting(const sched_row_t *row, const pod_set_t *set, const char *pool, int nvictims, int need)
{
    const gang_room_t *r = row->self;
    const gang_snap_t *g = gang_row_set_gang(row, set);
    if (!g)
        return;
    LOG_I("preempting for pod group %s in pool %s: %d victims for %d members", g->key, pool, nvictims, need);
    char msg[400];
    snprintf(msg, sizeof(msg), "preempting %d pods in pool %s to place the %d members of its minimum", nvictims, pool,
             need);
    podgroup_event(r, g->ns, g->name, g->uid, "Normal", "Preempting", msg);
    stat_add(r, offsetof(scheduler_stats_t, gang_preemptions), 1);
}

/* ------------------------------------------------------ minResources */

/* The allocatable and requested sums over a pool's nodes. */
typedef struct room_sum {
    int pool;
    resources_t *alloc, *used;
} room_sum_t;

static void add_room(void *ud, const node_info_t *ni)
{
    room_sum_t *r = ud;
    if (ni->pool != r->pool || !ni->node)
        return;
    res_add(r->alloc, &ni->node->allocatable);
    res_add(r->used, &ni->requested);
}

static void pool_room(const gang_room_t *r, int pool_id, resources_t *alloc, resources_t *used)
{
    res_zero(alloc);
    res_zero(used);
    room_sum_t sum = { pool_id, alloc, used };
    r->svc->nodes_visit(r->core, add_room, &sum);
}

/* The first resource need asks more of than have holds ("cpu 10000m >
 * 8000m free"), malloc'd; NULL when have covers need. */
static char *res_short(const resources_t *need, const resources_t *have)
{
    sbuf_t b = { 0 };
    if (need->milli_cpu > have->milli_cpu)
        sbuf_printf(&b, "cpu %lldm > %lldm free", (long long)need->milli_cpu, (long long)have->milli_cpu);
    else if (need->memory > have->memory)
        sbuf_printf(&b, "memory %lld > %lld bytes free", (long long)need->memory, (long long)have->memory);
    else if (need->ephemeral > have->ephemeral)
        sbuf_printf(&b, "ephemeral-storage %lld > %lld bytes free", (long long)need->ephemeral,
                    (long long)have->ephemeral);
    else if (need->pods > have->pods)
        sbuf_printf(&b, "pods %lld > %lld free", (long long)need->pods, (long long)have->pods);
    for (int i = 0; !b.data && i < need->nscalar; i++) {
        int64_t v = res_get_scalar(have, need->scalar[i].name);
        if (need->scalar[i].value > v)
            sbuf_printf(&b, "%s %lld > %lld free", need->scalar[i].name, (long long)need->scalar[i].value,
                        (long long)v);
    }
    return b.data;
}

/* Why a minimum needing want can never fit pool_id (caller frees), or NULL:
 * more than the pool's allocatable, or, topology-required, more than any
 * one domain's. Such a gang holds nobody back. */
static char *never_fits(const gang_room_t *r, int pool_id, const gang_snap_t *g, const resources_t *want)
{
    resources_t alloc, used;
    pool_room(r, pool_id, &alloc, &used);
    char *never = res_short(want, &alloc);
    if (never || !g->topo_level || !g->topo_required)
        return never;
    topo_domain_t *doms = NULL;
    resources_t *room = NULL;
    int nd = topo_pool_domains(r->svc, r->core, g->topo_level, pool_id, &doms, &room);
    for (int j = 0; j < nd; j++) {
        char *w = res_short(want, &room[j]);
        if (!w) {
            free(never);
            never = NULL;
            break;
        }
        if (!never)
            never = w;
        else
            free(w);
    }
    for (int j = 0; j < nd; j++)
        topo_domain_free(&doms[j]);
    free(doms);
    free(room);
    return nd > 0 ? never : NULL;
}

/* scheduler-plugins' PreFilter check: the gang's minResources must be free
 * in its pool before its members are tried. NULL when they are (or none
 * are set); else why not (malloc'd). */
static char *min_resources_short(const gang_room_t *r, int pool_id, const resources_t *min)
{
    resources_t none, alloc, used;
    res_zero(&none);
    if (res_equal(min, &none))
        return NULL;
    pool_room(r, pool_id, &alloc, &used);
    res_sub(&alloc, &used);
    return res_short(min, &alloc);
}

/* Gathers it and the gang's other pending members queued in the set's
 * pool (each then out with us as if popped). Counts members already
 * placed. */
static int gather(const gang_room_t *r, pod_set_t *set, queue_item_t *it, const gang_snap_t *g, queue_item_t ***out,
                  int *placed)
{
    queue_item_t **items = util_xcalloc((size_t)g->nmembers + 2, sizeof(*items));
    int n = 0;
    items[n++] = it;
    *placed = 0;
    for (int i = 0; i < g->nmembers; i++) {
        const pod_t *m = g->members[i];
        if (strcmp(m->uid, it->pod->uid) == 0)
            continue;
        cache_pod_state_t st = CPOD_NONE;
        pod_t *cur = r->svc->pod_get(r->core, m->uid, &st);
        int live = cur && !cur->deleting;
        pod_unref(cur);
        if ((st == CPOD_ASSUMED || st == CPOD_BOUND) && live) {
            /* A member being evicted is no member the gang keeps: counted,
             * a surplus (or a smaller minimum) would bind beside it into
             * the room its own eviction freed, and the gang would be left
             * below its minimum once it is gone (issue 35, fault 11). */
            if (!r->svc->leaving(r->core, m->uid))
                (*placed)++;
            continue;
        }
        if (st != CPOD_PENDING || !live)
            continue;
        queue_item_t *o = r->svc->take_pending(r->core, set->P, m->uid);
        if (!o)
            continue; /* queued elsewhere (a lender, its home), in flight, or gone */
        items[n++] = o;
    }
    *out = items;
    return n;
}

/* ------------------------------------------------------------ the rows */

/* How often an elastic member yields to the pods queued behind it before it
 * is tried on its own (each time after its backoff: 1 + 2 + 4 s). */
#define SURPLUS_STEP_BACKS 3

static int pool_preempts(const gang_room_t *r, const pod_set_t *set)
{
    return r->svc->pool_preempts(r->core, set->pool_id);
}

static ext_rc_t hold(pod_set_t *set, const char *reason, char *why)
{
    pod_set_why(set, reason, why);
    return EXT_HOLD;
}

/* Held behind a waiting gang (gang_blocker's why, which names it). */
static ext_rc_t hold_behind(pod_set_t *set, char *why)
{
    pod_set_step(set, "gang-wait", "behind", "%s", why);
    return hold(set, NULL, why);
}

/* A lone pod that holds a nomination and is held behind a waiting gang:
 * the rule (issue 35, fault 2). It goes on, to its nominated node only, when
 *  - the node is in this pool and the pod is at home here (a borrower's
 *    nomination does not count against the pool's own pods);
 *  - no waiting gang that ranks above it holds it back once its own room
 *    is set aside (gang_blocker_nominee: a gang of a priority not above
 *    the pod's sees that room taken whether the pod waits or binds; one
 *    above could take the room, and still holds the pod);
 *  - it fits there now (its victims are gone).
 * Otherwise it stays held, as any pod behind the gang: it neither takes
 * other room nor preempts again while the gang waits (the gate runs before
 * post-filter), so what passes is room made before the gang waited, each
 * room once, and the gang is left the same room as if the pod still
 * waited. Held, the two waited on the node the pod emptied until the gang
 * timed out or reserved it (kube-scheduler, with no gang gate, tries a
 * nominee's node first; KAI keeps a pipelined pod's room for it). */
static int nominee_passes(const gang_room_t *r, pod_set_t *set)
{
    const pod_t *pod = set->items[0]->pod;
    char node[256];
    if (!r->svc->nomination(r->core, pod->uid, node, sizeof(node)) || r->svc->home_pool(r->core, pod) != set->pool_id)
        return 0;
    char *why = gang_blocker_nominee(r->gangs, set->pool_id, pod->priority, pod->created_ms,
                                     pool_preempts(r, set) && r->svc->may_preempt(r->core, pod));
    if (why) {
        free(why);
        return 0;
    }
    int fits = r->svc->fits_on(r->core, set->P, pod, node);
    if (fits) {
        free(set->only_node);
        set->only_node = util_strdup(node);
    }
    return fits;
}

/* The backfill gate across queues (gang_blocker_q's yields): what a set
 * of tenant asks; a waiting gang's claim is the same of its minimum
 * (gang_row_post_filter). */
typedef struct yield_ctx {
    const gang_room_t *r;
    int pool, tenant;
    double req[FS_NRES];
} yield_ctx_t;

_Static_assert(FS_NRES <= GANG_CLAIM_DIMS, "a gang's claim holds a fair-share request");

/* The backfill gate with Queues: a waiting gang ahead of the set holds
 * it back unless the set's queue could take that room back from the
 * gang's by reclaim (placed first, the gang would be evicted for the set);
 * a gang behind it holds it back when the gang's queue could take the
 * room back from the set's (placed first, the set would be evicted for
 * the gang, and placed again when room frees: again and again). */
static int set_yields(void *ud, const gang_claim_t *claim, int ahead)
{
    const yield_ctx_t *y = ud;
    if (ahead)
        return !y->r->svc->yields(y->r->core, y->pool, claim->owner, claim->amount, y->tenant, y->req);
    return y->r->svc->yields(y->r->core, y->pool, y->tenant, y->req, claim->owner, claim->amount);
}

/* The yield context of pods[0..n) (a set's minimum, or one pod) in pool;
 * 0 when Queues are off (no yields to ask). */
static int yield_ctx_of(const gang_room_t *r, int pool, pod_t *const *pods, int n, yield_ctx_t *y)
{
    y->r = r;
    y->pool = pool;
    return r->svc->set_request(r->core, pods, n, &y->tenant, y->req);
}

/* yield_ctx_of for the pods of items[0..n). */
static int yield_ctx_of_items(const gang_room_t *r, int pool, queue_item_t *const *items, int n, yield_ctx_t *y)
{
    pod_t **pods = util_xcalloc((size_t)(n > 0 ? n : 1), sizeof(*pods));
    for (int i = 0; i < n; i++)
        pods[i] = items[i]->pod;
    int q = yield_ctx_of(r, pool, pods, n, y);
    free(pods);
    return q;
}

/* A pod outside any gang: the backfill gate keeps it from delaying a
 * waiting gang (see gang_blocker), unless it goes to room its nomination
 * holds (nominee_passes). */
static ext_rc_t gate_lone(const gang_room_t *r, pod_set_t *set)
{
    const pod_t *pod = set->items[0]->pod;
    if (gang_nwaiting(r->gangs) == 0)
        return EXT_NEXT;
    yield_ctx_t y;
    int q = yield_ctx_of(r, set->pool_id, &set->items[0]->pod, 1, &y);
    char *why = gang_blocker_q(r->gangs, set->pool_id, NULL, pod->priority, pod->created_ms, 0,
                               pool_preempts(r, set) && r->svc->may_preempt(r->core, pod), q ? set_yields : NULL, &y);
    if (why && nominee_passes(r, set)) {
        pod_set_step(set, "gang-wait", "passed", "to node %s, the room its nomination holds: %s", set->only_node, why);
        free(why);
        return EXT_NEXT;
    }
    return why ? hold_behind(set, why) : EXT_NEXT;
}

/* An elastic member: after every minimum queued in this pool. While other
 * pods wait in activeQ (another gang not tried yet), it steps back, a few
 * times: under a steady arrival activeQ is never empty, and a surplus that
 * always stepped back would never run. */
/* The freezing window: an elastic gang whose size the scheduler changed
 * less than its window ago gets no more surplus (unless within the same
 * burst: one change grows the gang to what fits at once). */
static ext_rc_t gate_frozen(const gang_room_t *r, const gang_snap_t *g, pod_set_t *set)
{
    int64_t win, now = util_wall_ms();
    int64_t start = gang_resize_start(r->gangs, g->ns, g->name, &win);
    if (!start || now - start < GANG_RESIZE_BURST_MS)
        return EXT_NEXT;
    char src[300], t0[40], t1[40];
    int64_t end = r->svc->freeze_end(r->core, g->ns, g->name, set->items[0]->pod, src, sizeof(src));
    if (end <= now)
        return EXT_NEXT;
    util_rfc3339(start, t0, sizeof(t0));
    util_rfc3339(end, t1, sizeof(t1));
    sbuf_t b = { 0 };
    sbuf_printf(&b, "elastic member of %s (beyond minMember): its size changed at %s; no further change until %s (%s)",
                set->label, t0, t1, src);
    set->wake_wall_ms = end;
    return hold(set, NULL, b.data);
}

static ext_rc_t gate_surplus(const sched_row_t *row, pod_set_t *set)
{
    const gang_room_t *r = row->self;
    queue_item_t *it = set->items[0];
    /* Its gang is its minimum's, which the minimum's set keeps until its
     * end, after its elastic members' cycles (cycle.c). */
    const gang_set_t *pd = set->parent->slot[row->index];
    gang_snap_t *g = pd ? pd->g : NULL;
    gang_row_hold(row, set, g, 0);
    if (gate_frozen(r, g, set) == EXT_HOLD)
        return EXT_HOLD;
    char *why = gang_blocker(r->gangs, set->pool_id, g->key, r->svc->gang_priority(r->core, g, it->pod->priority),
                             it->pod->created_ms, 1, pool_preempts(r, set));
    if (why)
        return hold_behind(set, why);
    if (r->svc->pool_active(r->core, set->P) > 0 && it->attempts < SURPLUS_STEP_BACKS) {
        sbuf_t b = { 0 };
        sbuf_printf(&b, "elastic member of %s (beyond minMember): the pods queued before it go first", set->label);
        set->backoff = 1;
        return hold(set, NULL, b.data);
    }
    return EXT_NEXT;
}

/* Every member of the minimum holds room an earlier preemption made for
 * it (nominated; nominated_first put them first). */
static int holds_room(const gang_room_t *r, queue_item_t *const *items, int need)
{
    for (int i = 0; i < need; i++)
        if (!r->svc->nomination(r->core, items[i]->pod->uid, NULL, 0))
            return 0;
    return need > 0;
}

/* A gang's member was popped: the set becomes the gang's pending members
 * (its turn taken), the first need of them its minimum. */
static ext_rc_t gate_gang(const sched_row_t *row, pod_set_t *set)
{
    const gang_room_t *r = row->self;
    queue_item_t *it = set->items[0];
    const char *group = gang_of(it->pod);
    gang_snap_t *g = util_xcalloc(1, sizeof(*g));
    if (gang_snapshot(r->gangs, it->pod->ns, group, g) != 0) {
        memset(g, 0, sizeof(*g));
        g->state = GANG_MISSING;
    }
    sbuf_t msg = { 0 };
    if (g->state == GANG_DELETED) {
        if (!sched_mark(row, it)) {
            sbuf_printf(&msg, "pod group %s/%s was deleted: scheduling this pod on its own", it->pod->ns, group);
            r->svc->pod_event(r->core, it->pod, "Warning", "PodGroupDeleted", msg.data);
            sched_mark_set(row, it);
            sbuf_free(&msg);
        }
        gang_snap_clear(g);
        free(g);
        return gate_lone(r, set);
    }
    set->kind = SET_MINIMUM;
    gang_row_hold(row, set, g, 1); /* the set's until gang_row_end */
    if (g->key) {
        set->group.kind = "podgroup";
        set->group.ns = util_strdup(g->ns);
        set->group.name = util_strdup(g->name);
        set->group.key = util_strdup(g->key);
        set->group.priority_class = g->priority_class ? util_strdup(g->priority_class) : NULL;
    }
    if (g->state == GANG_MISSING || g->state == GANG_INVALID) {
        if (g->state == GANG_MISSING)
            sbuf_printf(&msg, "pod group %s/%s not found: the pod waits for it (label " GANG_LABEL ")", it->pod->ns,
                        group);
        else
            sbuf_printf(&msg, "pod group %s/%s is invalid: %s", it->pod->ns, group, g->invalid);
        return hold(set, g->state == GANG_MISSING ? "PodGroupNotFound" : NULL, msg.data);
    }
    const char *pa, *pb;
    if (pool_conflict(g, &pa, &pb)) {
        sbuf_printf(&msg, "pod group %s: its pods name different pools (%s and %s); none is placed until they agree",
                    g->key, pa, pb);
        if (!it->last_message || strcmp(it->last_message, msg.data) != 0)
            podgroup_event(r, g->ns, g->name, g->uid, "Warning", "PodGroupPoolConflict", msg.data);
        return hold(set, NULL, msg.data);
    }
    /* Cheap count first: while a gang is being created pod by pod, each
     * arrival must not gather (and give back) all the members before it. A
     * member kept out of the queues (scheduling gates, DRA claims) does not
     * count: the gang waits, whole, until it may be scheduled too. */
    int live = 0, out = 0;
    for (int i = 0; i < g->nmembers; i++) {
        const pod_t *m = g->members[i];
        if (pod_is_terminal(m) || m->deleting)
            continue;
        if (!pod_is_bound(m) && r->svc->kept_out(r->core, m))
            out++;
        else
            live++;
    }
    if (live < g->min_member) {
        sbuf_printf(&msg, "pod group %s: waiting for minMember %d pods to exist (scheduled ones count)", g->key,
                    g->min_member);
        if (out > 0)
            sbuf_printf(&msg, "; %d of its members are kept out of scheduling (scheduling gates or DRA claims)", out);
        /* Room an earlier preemption nominated it to is held for nothing
         * until the members exist (composition seed 37920437: a member
         * kept pa-1 to the end after a mate was deleted). */
        drop_rooms(r, set->items, set->n);
        return hold(set, NULL, msg.data);
    }
    /* Another pool's thread may be placing this gang (it borrows): its
     * assumed members would count here as placed, and both would place. */
    gang_turn_begin(r->gangs, g->key);
    set_data(row, set)->turn = 1;
    queue_item_t **items;
    int placed = 0;
    int n = gather(r, set, it, g, &items, &placed);
    qsort(items, (size_t)n, sizeof(*items), member_cmp);
    nominated_first(r, items, n);
    free(set->items);
    set->items = items;
    set->n = n;
    set->placed = placed;
    set->min = g->min_member;
    sbuf_printf(&msg, "pod group %s", g->key);
    set->label = msg.data;
    int need = g->min_member - placed;
    set->need = need < 0 ? 0 : need > n ? n : need;
    if (need > n) {
        /* Too few members exist: a constant message, so a gang created pod
         * by pod sends one event per pod, not one per pod per arrival. */
        sbuf_t w = { 0 };
        sbuf_printf(&w, "pod group %s: waiting for minMember %d pods to exist (scheduled ones count)", g->key,
                    g->min_member);
        drop_rooms(r, set->items, set->n);
        return hold(set, NULL, w.data);
    }
    /* The snapshot was taken before: on a first attempt it still says
     * "never considered", and the decision record (trace.c) would show no
     * timeout clock for a gang whose clock has just started. */
    g->start_ms = gang_considered(r->gangs, g->key, util_wall_ms());
    /* A minimum holding the room its preemption made is not held behind
     * a waiting gang. Where the pool preempts, gang_blocker holds it only
     * behind older gangs of its own priority, and node_with_nominated
     * keeps nominated room from those: the blocker cannot use that room,
     * and a held minimum gives it back (gang_row_report). Freed, it goes
     * to whatever fits first: often the gang it was reclaimed from, which
     * its controller recreated at once and which is older, so it would be
     * reclaimed again every second (issue 35, fault 8). */
    int kept = pool_preempts(r, set) && holds_room(r, items, set->need);
    if (set->need > 0 && !kept) {
        int64_t created = g->created_ms ? g->created_ms : items[0]->pod->created_ms;
        int32_t prio = r->svc->gang_priority(r->core, g, items[0]->pod->priority);
        yield_ctx_t y;
        int q = yield_ctx_of_items(r, set->pool_id, items, set->need, &y);
        char *why = gang_blocker_q(r->gangs, set->pool_id, g->key, prio, created, 0, pool_preempts(r, set),
                                   q ? set_yields : NULL, &y);
        if (why)
            return hold_behind(set, why);
    }
    return EXT_NEXT;
}

ext_rc_t gang_row_gate(const sched_row_t *row, pod_set_t *set)
{
    const gang_room_t *r = row->self;
    if (set->kind == SET_SURPLUS)
        return gate_surplus(row, set);
    if (gang_of(set->items[0]->pod))
        return gate_gang(row, set);
    return gate_lone(r, set);
}

/* scheduler-plugins' PreFilter check: the gang's minResources must be free
 * in its pool before its members are tried. */
ext_rc_t gang_row_pre_place(const sched_row_t *row, pod_set_t *set)
{
    if (set->kind != SET_MINIMUM || set->need == 0)
        return EXT_NEXT;
    char *short_ = min_resources_short(row->self, set->pool_id, &gang_row_set_gang(row, set)->min_resources);
    if (!short_)
        return EXT_NEXT;
    sbuf_t w = { 0 };
    sbuf_printf(&w, "its minResources are not free in pool %s: %s", set->pool_name, short_);
    free(short_);
    pod_set_why(set, NULL, w.data);
    return EXT_FAIL;
}

void gang_row_commit(const sched_row_t *row, pod_set_t *set)
{
    const gang_room_t *r = row->self;
    /* Surplus placed resizes the gang (its freezing window); the minimum does not. */
    const gang_snap_t *g = gang_row_set_gang(row, set);
    if (set->kind == SET_SURPLUS && g)
        gang_resized(r->gangs, g->ns, g->name, util_wall_ms());
    if (set->kind != SET_MINIMUM || set->need == 0)
        return;
    int was_waiting = 0;
    double wait = gang_placed(r->gangs, g->key, util_wall_ms(), &was_waiting);
    stat_add(r, offsetof(scheduler_stats_t, gangs_scheduled), 1);
    const scheduler_opts_t *o = r->svc->opts(r->core);
    if (wait >= 0 && o->on_gang_placed)
        o->on_gang_placed(o->on_gang_ud, wait);
    sbuf_t msg = { 0 };
    sbuf_printf(&msg, "placed %d members (minMember %d) in pool %s", set->need, g->min_member, set->pool_name);
    podgroup_event(r, g->ns, g->name, g->uid, "Normal", "Scheduled", msg.data);
    if (set->placed_msg)
        podgroup_event(r, g->ns, g->name, g->uid, "Normal", "TopologyPlaced", set->placed_msg);
    LOG_I("pod group %s: %s", g->key, msg.data);
    sbuf_free(&msg);
    /* Pods held back behind it may go now. */
    if (was_waiting)
        r->svc->pool_wake(r->core, set->pool_id, "GangPlaced");
}

/* Last of the post-filter rows: the minimum neither made room nor
 * borrowed, so the gang waits, holding back what would take its room. */
ext_rc_t gang_row_post_filter(const sched_row_t *row, pod_set_t *set)
{
    if (set->kind != SET_MINIMUM)
        return EXT_NEXT;
    const gang_room_t *r = row->self;
    const gang_snap_t *g = gang_row_set_gang(row, set);
    /* items are sorted: the highest member, or the gang's class */
    int32_t prio = r->svc->gang_priority(r->core, g, set->items[0]->pod->priority);
    int64_t created = g->created_ms ? g->created_ms : set->items[0]->pod->created_ms;
    /* A minimum larger than the whole pool (or than any domain it must
     * stay in) can never fit here: it holds nobody back (it may still
     * borrow, or wait for the pool to grow). */
    resources_t want;
    res_zero(&want);
    for (int i = 0; i < set->need; i++)
        res_add(&want, &set->items[i]->pod->requests);
    want.pods = 0; /* resources only, not pod slots */
    char *never = never_fits(r, set->pool_id, g, &want);
    sbuf_t bare = { 0 };
    sbuf_printf(&bare, "%d/%d members placeable; %s", set->placed + set->fits, g->min_member,
                set->why ? set->why : "no node fits");
    yield_ctx_t y;
    gang_claim_t claim = { .owner = -1 };
    if (yield_ctx_of_items(r, set->pool_id, set->items, set->need, &y)) {
        claim.owner = y.tenant;
        for (int k = 0; k < FS_NRES; k++)
            claim.amount[k] = y.req[k];
    }
    gang_waiting(r->gangs, g->key, set->pool_id, prio, created, bare.data, never == NULL, &claim);
    pod_set_step(set, "gang-wait", never ? "never fits here" : "waiting", "%s%s%s", bare.data, never ? "; " : "",
                 never ? never : "; it holds back the pods behind it in the pool");
    if (!set->items[0]->last_message || strstr(set->items[0]->last_message, bare.data) == NULL)
        LOG_I("unschedulable pod group %s pool=%s: %s", g->key, set->pool_name, bare.data);
    free(never);
    sbuf_free(&bare);
    return EXT_NEXT;
}

/* A gang-wide reason: the PodGroup's own event too, so `kubectl describe
 * podgroup` says why. One per new message of the member that was popped,
 * and every tenth attempt, at the pace of the pods' own events. A turn
 * that ends neither placing nor preempting gives back the room and queue
 * charge an earlier preemption left to its members. */
void gang_row_report(const sched_row_t *row, pod_set_t *set, const char *msg)
{
    const gang_room_t *r = row->self;
    if (set->kind != SET_MINIMUM || !has_turn(row, set) || !set->items[0])
        return;
    const gang_snap_t *g = gang_row_set_gang(row, set);
    queue_item_t *first = set->items[0];
    if (!first->last_message || strcmp(first->last_message, msg) != 0 || first->attempts % 10 == 0)
        podgroup_event(r, g->ns, g->name, g->uid, "Warning", "FailedScheduling", msg);
    if (set->outcome == SET_HELD)
        drop_rooms(r, set->items, set->n);
}

void gang_row_end(const sched_row_t *row, pod_set_t *set)
{
    const gang_room_t *r = row->self;
    gang_set_t *d = set->slot[row->index];
    set->slot[row->index] = NULL;
    if (!d)
        return;
    if (d->turn && d->g && set->kind == SET_MINIMUM)
        gang_turn_end(r->gangs, d->g->key);
    if (d->owned && d->g) {
        gang_snap_clear(d->g);
        free(d->g);
    }
    free(d);
}

/* ------------------------------------------------- decision records */

static const char *member_state(const gang_room_t *r, const pod_t *m)
{
    if (pod_is_terminal(m))
        return "finished";
    if (pod_is_bound(m))
        return "bound";
    cache_pod_state_t st = CPOD_NONE;
    pod_t *cur = r->svc->pod_get(r->core, m->uid, &st);
    pod_unref(cur);
    if (st == CPOD_ASSUMED)
        return "assumed";
    return r->svc->kept_out(r->core, m) ? "kept out" : "pending";
}

/* The gang as a set's decision record shows it: its members and their
 * states, its timeout clock and topology level. */
json_t *gang_row_record(const sched_row_t *row, const pod_set_t *set, const char *behind)
{
    const gang_room_t *r = row->self;
    const gang_snap_t *g = gang_row_set_gang(row, set);
    if (!g || !g->key)
        return NULL;
    json_t *members = json_array();
    for (int i = 0; i < g->nmembers; i++)
        json_array_append_new(
            members, json_pack("{s:s, s:s}", "pod", g->members[i]->key, "state", member_state(r, g->members[i])));
    int timeout = g->timeout_s > 0 ? g->timeout_s : r->svc->opts(r->core)->gang_timeout_s;
    int64_t now = util_wall_ms();
    json_t *left = json_null();
    if (g->start_ms > 0) {
        int64_t ms = g->start_ms + (int64_t)timeout * 1000 - now;
        left = json_integer(ms > 0 ? (ms + 999) / 1000 : 0);
    }
    return json_pack("{s:s, s:i, s:i, s:i, s:o, s:s?, s:i, s:o, s:s?, s:b}", "name", g->key, "minMember", g->min_member,
                     "placed", set->placed, "placeable", set->placed + set->fits, "members", members, "waitingBehind",
                     behind, "timeoutSeconds", timeout, "timeoutLeftSeconds", left, "topologyLevel", g->topo_level,
                     "topologyRequired", g->topo_required);
}

/* A PodGroup with no decision record: unknown, its minimum placed, or
 * not tried yet, with its members' count. */
char *gang_row_absent(const sched_row_t *row, const char *kind, const char *ns, const char *name)
{
    const gang_room_t *r = row->self;
    if (!kind || strcmp(kind, "podgroup") != 0)
        return NULL;
    sbuf_t b = { 0 };
    sbuf_printf(&b, "no decision kept for pod group %s/%s: ", ns, name);
    gang_snap_t g;
    if (gang_snapshot(r->gangs, ns, name, &g) != 0) {
        sbuf_puts(&b, "not seen (no such PodGroup or member)");
        return b.data;
    }
    int bound = 0;
    for (int i = 0; i < g.nmembers; i++)
        bound += pod_is_bound(g.members[i]);
    if (bound >= g.min_member && g.min_member > 0)
        sbuf_printf(&b, "its minimum is placed (%d of %d members bound, minMember %d)", bound, g.nmembers,
                    g.min_member);
    else
        sbuf_printf(&b, "not tried yet (%d of %d members bound, minMember %d)", bound, g.nmembers, g.min_member);
    gang_snap_clear(&g);
    return b.data;
}

/* --------------------------------------------------------- informer */

void gang_row_pod_seen(const sched_row_t *row, pod_t *pod)
{
    const gang_room_t *r = row->self;
    gang_pod_upsert(r->gangs, pod);
}

void gang_row_pod_deleted(const sched_row_t *row, const pod_t *pod)
{
    const gang_room_t *r = row->self;
    gang_pod_delete(r->gangs, pod);
}

/* The PodGroup informer: the gang store. */
void gang_row_on_podgroup(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    const gang_room_t *r = ud;
    if (type == KUBE_DELETED) {
        r->svc->forget_record(r->core, "podgroup", key);
        const char *slash = strchr(key, '/');
        if (slash) {
            char *ns = util_strndup(key, (size_t)(slash - key));
            gang_group_delete(r->gangs, ns, slash + 1);
            free(ns);
        }
    } else {
        char err[256];
        podgroup_t *pg = podgroup_from_json(obj, err, sizeof(err));
        if (!pg) {
            LOG_W("PodGroup %s ignored: %s", key, err);
            return;
        }
        char *bad = pg->freezing_window_ms == DURATION_BAD ? util_strdup(pg->uid) : NULL;
        char *ns = util_strdup(pg->ns), *name = util_strdup(pg->name);
        /* Our own status writes come back as updates: they change
         * nothing a pod waits for. */
        int changed = gang_group_upsert(r->gangs, pg);
        if (changed && bad) /* said once per change of the PodGroup */
            podgroup_event(r, ns, name, bad, "Warning", "InvalidFreezingWindow",
                           "annotation " GANG_FREEZING_WINDOW_ANNOTATION
                           " is not a duration such as \"10m\"; ignored (the queue's reclaimMinRuntime applies)");
        free(bad);
        free(ns);
        free(name);
        if (!changed)
            return;
    }
    r->svc->wake_all(r->core, "PodGroupChanged");
}

/* ------------------------------------------------------ housekeeping */

static void set_gauges(scheduler_stats_t *st, void *ud)
{
    const gang_tick_t *t = ud;
    st->gangs_stale = t->stale;
    st->gangs_waiting = t->waiting;
}

static void stale_gangs(scheduler_stats_t *st, void *ud)
{
    *(int *)ud = st->gangs_stale > 0;
}

int gang_row_timed(const sched_row_t *row)
{
    int stale = 0;
    row->svc->stats(row->core, stale_gangs, &stale);
    return stale;
}

void gang_row_housekeep(const sched_row_t *row)
{
    const gang_room_t *r = row->self;
    if (r->svc->fenced(r->core))
        return;
    const scheduler_opts_t *o = r->svc->opts(r->core);
    gang_tick_t t;
    /* While Bindings are queued they have the API server to themselves:
     * a hundred gangs binding at once would otherwise add a status write
     * per gang per second to the burst. Statuses follow within a second. */
    int binds_queued = r->svc->binds_queued(r->core);
    gang_tick(r->gangs, util_wall_ms(), o->gang_timeout_s, o->stale_gang_grace_s, o->evict_stale_gangs, !binds_queued,
              &t);
    for (int i = 0; i < t.npatches; i++) {
        r->svc->patch(r->core, t.patches[i].path, "application/merge-patch+json", t.patches[i].body);
        t.patches[i].body = NULL;
    }
    for (int i = 0; i < t.nevents; i++) {
        const gang_event_t *e = &t.events[i];
        podgroup_event(r, e->ns, e->name, e->uid, e->type, e->reason, e->msg);
    }
    if (t.timed_out)
        stat_add(r, offsetof(scheduler_stats_t, gangs_timed_out), (unsigned long)t.timed_out);
    r->svc->stats(r->core, set_gauges, &t);
    for (int i = 0; i < t.nwake; i++)
        r->svc->pool_wake(r->core, t.wake_pools[i], "GangTimedOut");
    for (int i = 0; i < t.nevict; i++)
        r->svc->evict_stale(r->core, t.evict[i]);
    gang_tick_clear(&t);
}

int gang_row_nominee(const sched_row_t *row, const pod_t *nominee, const pod_t *pod, int pool, int same_side)
{
    (void)row;
    (void)pool;
    (void)same_side;
    const char *gang = gang_of(pod);
    if (gang && strcmp(nominee->ns, pod->ns) == 0 && gang_of(nominee) && strcmp(gang_of(nominee), gang) == 0)
        return NOMINEE_FREE; /* a whole-gang simulation sees it free */
    return NOMINEE_ANY;
}
