/* row.c -- the reservation row, reservation for large gangs: a gang that
 * has waited longer than --reservation-after and fits neither now nor by
 * preemption gets, in its pool, a few whole nodes held for it: other pods
 * see them taken (as a preemptor's nominated node), unless they will be
 * done before the gang is expected to start or the gang could evict them
 * (backfill). One reservation per pool; it ends when the gang is placed,
 * is deleted, or at --reservation-timeout, after which the gang may not
 * reserve again in that pool for one reservation-after (another gang goes
 * first). The rules are reservation.c's (pure); the row's state is its
 * room, and the core (the cache, the queues, the gang store) is reached
 * only through the services. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gang/gang.h"
#include "reservation/reservation.h"
#include "reservation/row.h"
#include "util/lockorder.h"
#include "util/log.h"
#include "util/util.h"

/* ------------------------------------------------------------ state */

typedef struct resv {
    int active;
    int ever;        /* this pool had one: its Pool .status says when it ends */
    char *pool_name; /* for status and metrics */
    char *key;       /* "ns/name" of the gang */
    char *ns, *name, *uid;
    int32_t prio;                            /* the gang's */
    int preempts;                            /* may the gang preempt in this pool (backfill rule) */
    int64_t since_ms, expires_ms, expect_ms; /* wall */
    char **nodes;
    pod_t **phantoms; /* per node: what other pods see there (its allocatable) */
    int nnodes;
    int64_t held;       /* main resource units held (GPUs, or millicores) */
    int64_t want;       /* the gang's minimum, in the same units */
    char *member_uid;   /* the member whose turn reserved: taken out of its backoff when the room is free */
    int64_t checked_ms; /* last look at the held room from a pool thread */
    int gpu;            /* the main resource is GPUs */
    char *barred;       /* the gang whose reservation expired here last */
    int64_t barred_until;
    /* When a gang seen waiting here is due for a reservation: nothing else
     * may retry it then (no pod event), so the housekeeper wakes the pool. */
    int64_t wake_ms;
    char *wake_uid; /* a member of that gang, to take it out of its backoff */
} resv_t;

typedef struct resv_state {
    const sched_services_t *svc;
    void *core;
    pthread_mutex_t mu; /* a leaf: taken under the cache lock by node views */
    resv_t *pools;      /* by pool id */
    int npools;
    int pub;   /* active reservations (atomic): node views skip the lock at 0 */
    int waits; /* pools with a wake_ms set (atomic) */
} resv_state_t;

void *resv_row_init(const sched_services_t *svc, void *core)
{
    resv_state_t *r = util_xcalloc(1, sizeof(*r));
    r->svc = svc;
    r->core = core;
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

static void resv_clear(resv_t *v)
{
    free(v->key);
    free(v->ns);
    free(v->name);
    free(v->uid);
    free(v->member_uid);
    v->member_uid = NULL;
    for (int i = 0; i < v->nnodes; i++) {
        free(v->nodes[i]);
        pod_unref(v->phantoms[i]);
    }
    free(v->nodes);
    free(v->phantoms);
    v->key = v->ns = v->name = v->uid = NULL;
    v->nodes = NULL;
    v->phantoms = NULL;
    v->nnodes = 0;
    v->active = 0;
}

void resv_row_fini(void *self)
{
    resv_state_t *r = self;
    if (!r)
        return;
    for (int i = 0; i < r->npools; i++) {
        resv_clear(&r->pools[i]);
        free(r->pools[i].pool_name);
        free(r->pools[i].barred);
        free(r->pools[i].wake_uid);
    }
    free(r->pools);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* The pool's slot, grown on demand; r->mu held. */
static resv_t *slot_locked(resv_state_t *r, int pool)
{
    if (pool < 0)
        return NULL;
    if (pool >= r->npools) {
        r->pools = util_xrealloc(r->pools, (size_t)(pool + 1) * sizeof(*r->pools));
        memset(r->pools + r->npools, 0, (size_t)(pool + 1 - r->npools) * sizeof(*r->pools));
        r->npools = pool + 1;
    }
    return &r->pools[pool];
}

static int node_index(const resv_t *v, const char *node)
{
    for (int i = 0; i < v->nnodes; i++)
        if (strcmp(v->nodes[i], node) == 0)
            return i;
    return -1;
}

static int is_member(const resv_t *v, const pod_t *pod)
{
    const char *g = gang_of(pod);
    return g && strcmp(pod->ns, v->ns) == 0 && strcmp(g, v->name) == 0;
}

/* Whether v's held room is open to pod: a member of its gang, or a pod
 * that may backfill. What a node view shows and which pods a freed held
 * node wakes besides the gang (resv_row_on_event) follow this one rule. */
static int resv_admits(const resv_t *v, const pod_t *pod, int64_t now)
{
    return is_member(v, pod) || resv_may_backfill(pod, now, v->expect_ms, v->prio, v->preempts);
}

node_info_t *resv_row_node_view(const sched_row_t *row, const pod_t *pod, node_info_t *view, int *cloned)
{
    resv_state_t *r = row->self;
    if (!r || __atomic_load_n(&r->pub, __ATOMIC_ACQUIRE) == 0)
        return view;
    lo_mutex_lock(&r->mu, LO_RESV);
    resv_t *v = view->pool >= 0 && view->pool < r->npools ? &r->pools[view->pool] : NULL;
    int k = v && v->active ? node_index(v, view->name) : -1;
    if (k >= 0 && !resv_admits(v, pod, util_wall_ms())) {
        if (!*cloned) {
            view = node_info_clone(view);
            *cloned = 1;
        }
        node_info_add_pod(view, v->phantoms[k]);
    }
    lo_mutex_unlock(&r->mu, LO_RESV);
    return view;
}

/* A stand-in pod that fills node: never ours (no victim), never bound. */
static pod_t *phantom_new(const char *ns, const char *gang, const char *node, const resources_t *alloc)
{
    char uid[512];
    snprintf(uid, sizeof(uid), "reservation:%s/%s:%s", ns, gang, node);
    json_t *o = json_pack("{s:{s:s, s:s, s:s}, s:{s:s, s:[]}}", "metadata", "name", "reservation", "namespace", ns,
                          "uid", uid, "spec", "schedulerName", "ai-scheduler.reservation", "containers");
    char err[256];
    pod_t *p = o ? pod_from_json(o, err, sizeof(err)) : NULL;
    json_decref(o);
    if (p)
        p->requests = *alloc;
    return p;
}

/* ------------------------------------------------------------ choosing */

static int64_t main_amount(const resources_t *r, int gpu)
{
    return gpu ? res_get_scalar(r, RES_GPU) : r->milli_cpu;
}

typedef struct pick {
    char **nodes;
    resources_t *alloc;
    int n;
    int64_t held, expect_ms;
    double lost;
} pick_t;

static void pick_clear(pick_t *p)
{
    for (int i = 0; i < p->n; i++)
        free(p->nodes[i]);
    free(p->nodes);
    free(p->alloc);
    memset(p, 0, sizeof(*p));
}

/* When node's running pods are expected to be gone: unknown runtimes count
 * as running past expires; pods the gang may evict as gone now. Node
 * stripe held. */
static int64_t node_done(const node_info_t *ni, const resv_t *v, int64_t now, int64_t expires)
{
    int64_t d = now;
    for (int i = 0; i < ni->npods; i++) {
        const pod_t *p = ni->pods[i];
        if (pod_is_terminal(p) || p->deleting || is_member(v, p))
            continue;
        if (v->preempts && p->priority < v->prio)
            continue;
        int64_t e = resv_pod_done(p);
        if (e < 0 || e > expires)
            e = expires;
        if (e > d)
            d = e;
    }
    return d;
}

/* Whether a pod of no lower priority than v's gang, at home in the node's
 * pool, waits on node for room its preemption made (a nomination). The
 * gang's members see that room as taken (node_with_nominated), so holding
 * the node would keep it from the pod and give the gang nothing: such a
 * node is not held (issue 35, fault 2). */
static int nominee_waits(resv_state_t *r, const char *node, int pool, const resv_t *v)
{
    pod_t **noms = NULL;
    int nn = r->svc->nominated(r->core, node, &noms), waits = 0;
    for (int i = 0; i < nn; i++) {
        if (!waits && !is_member(v, noms[i]) && noms[i]->priority >= v->prio &&
            r->svc->home_pool(r->core, noms[i]) == pool)
            waits = 1;
        pod_unref(noms[i]);
    }
    free(noms);
    return waits;
}

/* The candidates of one pool, gathered node by node (nodes_visit). */
typedef struct cands {
    int pool;
    const gang_snap_t *g;
    const resv_t *v;
    int64_t now, expires;
    resv_cand_t *c;
    resources_t *alloc;
    int n, cap;
} cands_t;

static void cand_add(void *ud, const node_info_t *ni)
{
    cands_t *cs = ud;
    if (ni->pool != cs->pool || !ni->node || ni->node->unschedulable)
        return;
    const char *dom = NULL;
    if (cs->g->topo_level && cs->g->topo_required && !(dom = labels_get(&ni->node->labels, cs->g->topo_level)))
        return; /* outside every domain of the level */
    int64_t a = main_amount(&ni->node->allocatable, cs->v->gpu);
    if (a <= 0)
        return;
    if (cs->n == cs->cap) {
        cs->cap = cs->cap ? cs->cap * 2 : 16;
        cs->c = util_xrealloc(cs->c, (size_t)cs->cap * sizeof(*cs->c));
        cs->alloc = util_xrealloc(cs->alloc, (size_t)cs->cap * sizeof(*cs->alloc));
    }
    cs->c[cs->n] = (resv_cand_t){ .name = util_strdup(ni->name),
                                  .domain = dom ? util_strdup(dom) : NULL,
                                  .alloc = a,
                                  .free = a - main_amount(&ni->requested, cs->v->gpu),
                                  .done_ms = node_done(ni, cs->v, cs->now, cs->expires) };
    cs->alloc[cs->n++] = ni->node->allocatable;
}

/* The nodes of pool to hold for v's gang (v->key, prio, preempts set). */
static int choose_nodes(resv_state_t *r, int pool, const gang_snap_t *g, const resv_t *v, int64_t want, int64_t now,
                        int64_t expires, pick_t *out)
{
    memset(out, 0, sizeof(*out));
    cands_t cs = { .pool = pool, .g = g, .v = v, .now = now, .expires = expires };
    r->svc->nodes_visit(r->core, cand_add, &cs);
    /* Nominations are asked after the visit (its fn may not call back). */
    int nc = 0;
    resv_cand_t *c = cs.c;
    resources_t *alloc = cs.alloc;
    for (int i = 0; i < cs.n; i++) {
        if (nominee_waits(r, c[i].name, pool, v)) {
            free((char *)c[i].name);
            free((char *)c[i].domain);
            continue;
        }
        c[nc] = c[i];
        alloc[nc++] = alloc[i];
    }
    int *idx = util_xcalloc((size_t)nc + 1, sizeof(*idx));
    resv_cand_t *sorted = util_xcalloc((size_t)nc + 1, sizeof(*sorted));
    memcpy(sorted, c, (size_t)nc * sizeof(*c));
    int k = resv_choose(sorted, nc, want, now, idx, &out->expect_ms, &out->lost);
    if (k > 0) {
        out->nodes = util_xcalloc((size_t)k, sizeof(*out->nodes));
        out->alloc = util_xcalloc((size_t)k, sizeof(*out->alloc));
        for (int i = 0; i < k; i++) {
            const resv_cand_t *x = &sorted[idx[i]];
            out->nodes[i] = util_strdup(x->name);
            for (int j = 0; j < nc; j++)
                if (c[j].name == x->name)
                    out->alloc[i] = alloc[j];
            out->held += x->alloc;
        }
        out->n = k;
    }
    for (int i = 0; i < nc; i++) {
        free((char *)c[i].name);
        free((char *)c[i].domain);
    }
    free(c);
    free(sorted);
    free(idx);
    free(alloc);
    return k;
}

/* Free room (main resource) on the named nodes now. With v, *done gets
 * the latest time one of them is expected free (node_done), at least now. */
typedef struct scan {
    int gpu;
    const resv_t *v;
    int64_t now, expires, done, sum;
} scan_t;

static void scan_node(void *ud, const node_info_t *ni)
{
    scan_t *sc = ud;
    if (!ni->node)
        return;
    if (sc->v) {
        int64_t d = node_done(ni, sc->v, sc->now, sc->expires);
        if (d > sc->done)
            sc->done = d;
    }
    sc->sum += main_amount(&ni->node->allocatable, sc->gpu) - main_amount(&ni->requested, sc->gpu);
}

static int64_t room_scan(resv_state_t *r, char **nodes, int nn, int gpu, const resv_t *v, int64_t now, int64_t expires,
                         int64_t *done)
{
    scan_t sc = { .gpu = gpu, .v = v, .now = now, .expires = expires, .done = now };
    for (int k = 0; k < nn; k++)
        r->svc->node_visit(r->core, nodes[k], scan_node, &sc);
    if (done)
        *done = sc.done;
    return sc.sum;
}

/* From a pool thread, at most every ROOM_CHECK_MS: when the held room
 * covers the gang's minimum, its turn now. The pods the freed room woke
 * (a deletion moves the pool's unschedulable pods) come here first, while
 * the gang itself waits out a backoff of up to 10 s. */
#define ROOM_CHECK_MS 200
static void room_check(resv_state_t *r, int pool)
{
    int64_t now = util_now_ms();
    lo_mutex_lock(&r->mu, LO_RESV);
    resv_t *v = pool >= 0 && pool < r->npools ? &r->pools[pool] : NULL;
    if (!v || !v->active || !v->member_uid || now - v->checked_ms < ROOM_CHECK_MS) {
        lo_mutex_unlock(&r->mu, LO_RESV);
        return;
    }
    v->checked_ms = now;
    int nn = v->nnodes, gpu = v->gpu;
    int64_t want = v->want;
    char **nodes = util_xcalloc((size_t)nn + 1, sizeof(*nodes));
    for (int k = 0; k < nn; k++)
        nodes[k] = util_strdup(v->nodes[k]);
    char *uid = util_strdup(v->member_uid);
    lo_mutex_unlock(&r->mu, LO_RESV);
    if (room_scan(r, nodes, nn, gpu, NULL, 0, 0, NULL) >= want)
        r->svc->pod_activate(r->core, pool, uid);
    for (int k = 0; k < nn; k++)
        free(nodes[k]);
    free(nodes);
    free(uid);
}

/* What a pod leaving a held node may wake in the reservation's pool. */
typedef struct freed_wake {
    resv_t rule; /* copies of the gang's ns, name, prio, preempts, expect_ms */
    int64_t now; /* wall */
    const resv_state_t *r;
    int tenant; /* the queue whose usage went down; -1: no queues */
} freed_wake_t;

/* The freed room is open to the pods the reservation admits; the room of
 * the other nodes is as it was, but a pod may now use it when what held
 * it back was the leaving pod itself: its queue's usage (the limits and
 * shares of the queues above it, which the pods of that top-level queue
 * answer to) or its labels (required pod affinity or anti-affinity, hard
 * spread). */
static int freed_may_use(const pod_t *pod, int tenant, void *ud)
{
    const freed_wake_t *w = ud;
    if (is_member(&w->rule, pod))
        return 0; /* the gang's turn is room_check's: when the held room covers its minimum */
    return resv_admits(&w->rule, pod, w->now) ||
           (w->tenant >= 0 && w->r->svc->same_tree(w->r->core, tenant, w->tenant)) || pod_affinity_hard(pod->interpod);
}

static void freed_wake_free(void *ud)
{
    freed_wake_t *w = ud;
    free(w->rule.ns);
    free(w->rule.name);
    free(w);
}

int resv_row_on_event(const sched_row_t *row, const sched_event_t *ev, sched_wake_t *wake)
{
    resv_state_t *r = row->self;
    const pod_t *pod = ev->pod;
    if (ev->kind != SCHED_EV_POD_DELETED && ev->kind != SCHED_EV_POD_COMPLETED)
        return 0;
    if (!r || !pod || !pod->node_name || !pod->node_name[0] || __atomic_load_n(&r->pub, __ATOMIC_ACQUIRE) == 0)
        return 0;
    int64_t now = util_wall_ms();
    int pool = -1;
    resv_t rule = { 0 };
    lo_mutex_lock(&r->mu, LO_RESV);
    for (int i = 0; i < r->npools && pool < 0; i++) {
        resv_t *v = &r->pools[i];
        if (v->active && !is_member(v, pod) && node_index(v, pod->node_name) >= 0) {
            pool = i;
            v->checked_ms = 0; /* look now */
            rule = (resv_t){ .ns = util_strdup(v->ns),
                             .name = util_strdup(v->name),
                             .prio = v->prio,
                             .preempts = v->preempts,
                             .expect_ms = v->expect_ms };
        }
    }
    lo_mutex_unlock(&r->mu, LO_RESV);
    if (pool < 0)
        return 0;
    room_check(r, pool); /* the gang first, when the held room covers its minimum */
    freed_wake_t *w = util_xcalloc(1, sizeof(*w));
    *w = (freed_wake_t){ .rule = rule, .now = now, .r = r, .tenant = -1 };
    if (r->svc->queues_active(r->core))
        w->tenant = r->svc->tenant_of(r->core, pod);
    /* Other pools lose nothing to the reservation: their pods move as on
     * any deletion. */
    *wake = (sched_wake_t){ .pool = pool,
                            .in_pool = SCHED_WAKE_SOME,
                            .others = SCHED_WAKE_ALL,
                            .match = freed_may_use,
                            .ud = w,
                            .release = freed_wake_free };
    return 1;
}

/* ------------------------------------------------------------ the row */

static void podgroup_note(resv_state_t *r, const char *ns, const char *name, const char *uid, const char *type,
                          const char *reason, const char *msg)
{
    json_t *inv = json_pack("{s:s, s:s, s:s, s:s, s:s}", "kind", "PodGroup", "apiVersion", PODGROUP_VERSION,
                            "namespace", ns, "name", name, "uid", uid ? uid : "");
    r->svc->object_event(r->core, ns, inv, type, reason, msg, name);
}

static void count_made(scheduler_stats_t *st, void *ud)
{
    (void)ud;
    st->reservations_made++;
}

/* ud: the outcome ("placed", "expired" or "deleted"). */
static void count_ended(scheduler_stats_t *st, void *ud)
{
    const char *outcome = ud;
    if (strcmp(outcome, "placed") == 0)
        st->reservations_placed++;
    else if (strcmp(outcome, "expired") == 0)
        st->reservations_expired++;
    else
        st->reservations_deleted++;
}

/* The gang's minimum did not fit, nor by preemption: reserve if it is due. */
static void try_reserve(resv_state_t *r, pod_set_t *set)
{
    const sched_services_t *svc = r->svc;
    const scheduler_opts_t *o = svc->opts(r->core);
    const gang_snap_t *g = svc->set_gang(r->core, set);
    int64_t after = (int64_t)o->reservation_after_s * 1000;
    int64_t now = util_wall_ms();
    int64_t start = svc->gang_considered(r->core, g->key, now);
    lo_mutex_lock(&r->mu, LO_RESV);
    resv_t *v = slot_locked(r, set->pool_id);
    /* Another gang at this row after an expiry: it had its chance, the
     * expired gang is no longer held back. */
    if (v->barred && strcmp(v->barred, g->key) != 0) {
        free(v->barred);
        v->barred = NULL;
    }
    int barred = v->barred && now < v->barred_until;
    int due = !v->active && after > 0 && now - start >= after && !barred;
    if (!v->active && after > 0 && !due) {
        int64_t at = barred ? v->barred_until : start + after;
        if (!v->wake_ms)
            __atomic_add_fetch(&r->waits, 1, __ATOMIC_RELAXED);
        if (!v->wake_ms || at < v->wake_ms) {
            v->wake_ms = at;
            free(v->wake_uid);
            v->wake_uid = util_strdup(set->items[0]->pod->uid);
        }
    }
    lo_mutex_unlock(&r->mu, LO_RESV);
    if (!due)
        return;

    resources_t want;
    res_zero(&want);
    for (int i = 0; i < set->need; i++)
        res_add(&want, &set->items[i]->pod->requests);
    resv_t tmp = { .ns = g->ns, .name = g->name };
    tmp.prio = svc->gang_priority(r->core, g, set->items[0]->pod->priority);
    /* The backfill rule asks whether the gang could evict: the pool's
     * switch and its first member's policy and profile, as it always was
     * (a set of that member alone). */
    pod_set_t first = *set;
    first.need = first.n = 1;
    tmp.preempts = svc->may_evict(r->core, &first);
    tmp.gpu = res_get_scalar(&want, RES_GPU) > 0;
    int64_t expires = now + (int64_t)o->reservation_timeout_s * 1000;
    pick_t pk;
    if (choose_nodes(r, set->pool_id, g, &tmp, main_amount(&want, tmp.gpu), now, expires, &pk) == 0)
        return; /* no node set (or domain) of this pool could ever hold it */

    pod_t **ph = util_xcalloc((size_t)pk.n, sizeof(*ph));
    for (int i = 0; i < pk.n; i++) {
        if (!(ph[i] = phantom_new(g->ns, g->name, pk.nodes[i], &pk.alloc[i]))) {
            for (int j = 0; j < i; j++)
                pod_unref(ph[j]);
            free(ph);
            pick_clear(&pk);
            return;
        }
    }
    int taken = 0;
    lo_mutex_lock(&r->mu, LO_RESV);
    v = slot_locked(r, set->pool_id);
    if (!v->active) {
        taken = 1;
        v->active = 1;
        v->ever = 1;
        if (!v->pool_name)
            v->pool_name = util_strdup(set->pool_name);
        v->key = util_strdup(g->key);
        v->ns = util_strdup(g->ns);
        v->name = util_strdup(g->name);
        v->uid = util_strdup(g->uid ? g->uid : "");
        v->prio = tmp.prio;
        v->preempts = tmp.preempts;
        v->gpu = tmp.gpu;
        v->since_ms = now;
        v->expires_ms = expires;
        v->expect_ms = pk.expect_ms;
        v->nodes = pk.nodes;
        v->phantoms = ph;
        v->nnodes = pk.n;
        v->held = pk.held;
        v->want = main_amount(&want, tmp.gpu);
        v->member_uid = util_strdup(set->items[0]->pod->uid);
        pk.nodes = NULL;
        ph = NULL;
        __atomic_add_fetch(&r->pub, 1, __ATOMIC_RELEASE);
    }
    lo_mutex_unlock(&r->mu, LO_RESV);
    if (!taken) {
        for (int i = 0; i < pk.n; i++)
            pod_unref(ph[i]);
        free(ph);
        pick_clear(&pk);
        return;
    }
    char t[64], e[64];
    util_rfc3339(pk.expect_ms, t, sizeof(t));
    util_rfc3339(expires, e, sizeof(e));
    sbuf_t msg = { 0 };
    sbuf_printf(&msg, "reserved %d nodes (%lld %s) in pool %s after %llds waiting; expected free about %s; expires %s",
                pk.n, (long long)pk.held, tmp.gpu ? "GPUs" : "millicores", set->pool_name,
                (long long)((now - start) / 1000), t, e);
    podgroup_note(r, g->ns, g->name, g->uid, "Normal", "Reserved", msg.data);
    LOG_I("pod group %s: %s", g->key, msg.data);
    sbuf_free(&msg);
    pk.n = 0;
    pick_clear(&pk);
    svc->stats(r->core, count_made, NULL);
    svc->status_changed(r->core);
}

/* Said if the set does not fit: the room held in its pool, for the gang
 * itself or against a pod that may not backfill it. */
ext_rc_t resv_row_pre_place(const sched_row_t *row, pod_set_t *set)
{
    resv_state_t *r = row->self;
    if (!r || __atomic_load_n(&r->pub, __ATOMIC_ACQUIRE) == 0 || set->n == 0)
        return EXT_NEXT;
    const pod_t *pod = set->items[0]->pod;
    sbuf_t b = { 0 };
    lo_mutex_lock(&r->mu, LO_RESV);
    resv_t *v = set->pool_id >= 0 && set->pool_id < r->npools ? &r->pools[set->pool_id] : NULL;
    if (v && v->active) {
        char t[64];
        util_rfc3339(v->expect_ms, t, sizeof(t));
        if (is_member(v, pod))
            sbuf_printf(&b, "%d nodes held for it in pool %s, expected free about %s", v->nnodes, set->pool_name, t);
        else if (!resv_may_backfill(pod, util_wall_ms(), v->expect_ms, v->prio, v->preempts))
            sbuf_printf(&b,
                        "%d nodes held for pod group %s until about %s (held room takes only pods that finish by "
                        "then, annotation " EXPECTED_RUNTIME_ANNOTATION ", that it could preempt, or that outrank it)",
                        v->nnodes, v->key, t);
    }
    lo_mutex_unlock(&r->mu, LO_RESV);
    if (b.data) {
        free(set->place_note);
        set->place_note = b.data;
    }
    room_check(r, set->pool_id);
    return EXT_NEXT;
}

ext_rc_t resv_row_post_filter(const sched_row_t *row, pod_set_t *set)
{
    resv_state_t *r = row->self;
    if (r && set->kind == SET_MINIMUM && r->svc->set_gang(r->core, set) && set->need > 0)
        try_reserve(r, set);
    return EXT_NEXT;
}

/* Ends pool's reservation (r->mu held): what to say is left in *ended. */
typedef struct ended {
    int pool;
    char *ns, *name, *uid, *key;
    const char *outcome;
} ended_t;

/* An expired gang may reserve again in its pool once another gang had its
 * turn at the row, or after reservation-after plus this: the longest
 * backoff, so the other waiting gangs get a turn first. */
#define BARRED_SLACK_MS 10000

static void end_locked(resv_state_t *r, resv_t *v, int pool, const char *outcome, int64_t now, int64_t after,
                       ended_t *e)
{
    e->pool = pool;
    e->ns = util_strdup(v->ns);
    e->name = util_strdup(v->name);
    e->uid = util_strdup(v->uid);
    e->key = util_strdup(v->key);
    e->outcome = outcome;
    if (strcmp(outcome, "expired") == 0) {
        free(v->barred);
        v->barred = util_strdup(v->key);
        v->barred_until = now + after + BARRED_SLACK_MS;
    }
    resv_clear(v);
    __atomic_sub_fetch(&r->pub, 1, __ATOMIC_RELEASE);
}

static void ended_say(resv_state_t *r, ended_t *e)
{
    const sched_services_t *svc = r->svc;
    svc->stats(r->core, count_ended, (void *)e->outcome);
    if (strcmp(e->outcome, "expired") == 0) {
        char msg[300];
        snprintf(msg, sizeof(msg),
                 "reservation expired after %ds (--reservation-timeout): the held nodes are released and the gang "
                 "waits in its queue again",
                 svc->opts(r->core)->reservation_timeout_s);
        podgroup_note(r, e->ns, e->name, e->uid, "Warning", "ReservationExpired", msg);
    }
    LOG_I("pod group %s: reservation ended (%s)", e->key, e->outcome);
    svc->pool_wake(r->core, e->pool, "ReservationEnded");
    svc->status_changed(r->core);
    free(e->ns);
    free(e->name);
    free(e->uid);
    free(e->key);
}

void resv_row_commit(const sched_row_t *row, pod_set_t *set)
{
    resv_state_t *r = row->self;
    const gang_snap_t *g = r ? r->svc->set_gang(r->core, set) : NULL;
    if (!g || set->kind != SET_MINIMUM || __atomic_load_n(&r->pub, __ATOMIC_ACQUIRE) == 0)
        return;
    ended_t e;
    int found = 0;
    lo_mutex_lock(&r->mu, LO_RESV);
    for (int i = 0; i < r->npools && !found; i++) {
        resv_t *v = &r->pools[i];
        if (v->active && strcmp(v->key, g->key) == 0) {
            end_locked(r, v, i, "placed", 0, 0, &e);
            found = 1;
        }
    }
    lo_mutex_unlock(&r->mu, LO_RESV);
    if (found)
        ended_say(r, &e);
}

/* Once a second: expiry, a gang gone or placed, and a fresh estimate. */
/* Wakes the pools where a waiting gang is now due for a reservation. */
static void wake_due(resv_state_t *r, int64_t now)
{
    if (__atomic_load_n(&r->waits, __ATOMIC_RELAXED) == 0)
        return;
    lo_mutex_lock(&r->mu, LO_RESV);
    int n = r->npools;
    char **due = util_xcalloc((size_t)n + 1, sizeof(*due));
    for (int i = 0; i < n; i++) {
        resv_t *v = &r->pools[i];
        if (v->wake_ms && now >= v->wake_ms) {
            v->wake_ms = 0;
            __atomic_sub_fetch(&r->waits, 1, __ATOMIC_RELAXED);
            due[i] = v->wake_uid ? v->wake_uid : util_strdup("");
            v->wake_uid = NULL;
        }
    }
    lo_mutex_unlock(&r->mu, LO_RESV);
    for (int i = 0; i < n; i++) {
        if (due[i]) {
            r->svc->pool_wake(r->core, i, "ReservationDue");
            r->svc->pod_activate(r->core, i, due[i]);
        }
        free(due[i]);
    }
    free(due);
}

void resv_row_housekeep(const sched_row_t *row)
{
    resv_state_t *r = row->self;
    if (!r)
        return;
    int64_t now = util_wall_ms();
    wake_due(r, now);
    if (__atomic_load_n(&r->pub, __ATOMIC_ACQUIRE) == 0)
        return;
    int64_t after = (int64_t)r->svc->opts(r->core)->reservation_after_s * 1000;
    lo_mutex_lock(&r->mu, LO_RESV);
    int n = r->npools;
    char **keys = util_xcalloc((size_t)n + 1, sizeof(*keys));
    for (int i = 0; i < n; i++)
        if (r->pools[i].active)
            keys[i] = util_strdup(r->pools[i].key);
    lo_mutex_unlock(&r->mu, LO_RESV);
    for (int i = 0; i < n; i++) {
        if (!keys[i])
            continue;
        /* Gone or placed: from the gang store (no lock of ours held). */
        const char *outcome = NULL;
        char *slash = strchr(keys[i], '/');
        gang_snap_t g;
        char *pending_uid = NULL;
        if (!slash) {
            outcome = "deleted";
        } else {
            *slash = 0;
            int rc = r->svc->gang_get(r->core, keys[i], slash + 1, &g);
            *slash = '/';
            if (rc != 0) {
                outcome = "deleted";
            } else {
                int live = 0, bound = 0;
                for (int m = 0; m < g.nmembers; m++) {
                    const pod_t *p = g.members[m];
                    if (pod_is_terminal(p) || p->deleting)
                        continue;
                    live++;
                    bound += pod_is_bound(p);
                    if (!pod_is_bound(p) && !pending_uid)
                        pending_uid = util_strdup(p->uid);
                }
                if (g.state == GANG_DELETED || g.state == GANG_MISSING || live < g.min_member)
                    outcome = "deleted";
                else if (bound >= g.min_member)
                    outcome = "placed";
                gang_snap_clear(&g);
            }
        }
        /* A fresh estimate of when the held nodes are free. */
        int64_t expect = 0;
        if (!outcome) {
            lo_mutex_lock(&r->mu, LO_RESV);
            resv_t *v = &r->pools[i];
            int nn = v->active ? v->nnodes : 0;
            char **nodes = util_xcalloc((size_t)nn + 1, sizeof(*nodes));
            for (int k = 0; k < nn; k++)
                nodes[k] = util_strdup(v->nodes[k]);
            resv_t tmp = {
                .ns = util_strdup(v->ns), .name = util_strdup(v->name), .prio = v->prio, .preempts = v->preempts
            };
            int64_t expires = v->expires_ms, want = v->want;
            int gpu = v->gpu;
            lo_mutex_unlock(&r->mu, LO_RESV);
            int64_t free_now = room_scan(r, nodes, nn, gpu, &tmp, now, expires, &expect);
            /* The held room covers the minimum: the gang's next turn now,
             * not after its backoff (a pod deletion only moves it there). */
            if (free_now >= want && pending_uid)
                r->svc->pod_activate(r->core, i, pending_uid);
            for (int k = 0; k < nn; k++)
                free(nodes[k]);
            free(nodes);
            free(tmp.ns);
            free(tmp.name);
        }
        ended_t e;
        int ended = 0, changed = 0;
        lo_mutex_lock(&r->mu, LO_RESV);
        resv_t *v = &r->pools[i];
        if (v->active && strcmp(v->key, keys[i]) == 0) {
            if (!outcome && now >= v->expires_ms)
                outcome = "expired";
            if (outcome) {
                end_locked(r, v, i, outcome, now, after, &e);
                ended = 1;
            } else if (expect != v->expect_ms) {
                v->expect_ms = expect;
                changed = 1;
            }
        }
        lo_mutex_unlock(&r->mu, LO_RESV);
        if (changed)
            r->svc->status_changed(r->core); /* no call out under the leaf */
        if (ended)
            ended_say(r, &e);
        free(pending_uid);
        free(keys[i]);
    }
    free(keys);
}

/* ------------------------------------------------------------ visible */

/* Pool .status.reservation: the gang, its nodes and what they hold, or
 * null once the pool had a reservation and has none now (absent before). */
void resv_row_pool_status(const sched_row_t *row, const char *pool, json_t *status)
{
    resv_state_t *r = row->self;
    json_t *o = NULL;
    int ever = 0;
    if (!r)
        return;
    lo_mutex_lock(&r->mu, LO_RESV);
    for (int i = 0; i < r->npools; i++) {
        resv_t *v = &r->pools[i];
        if (!v->pool_name || strcmp(v->pool_name, pool) != 0)
            continue;
        ever = v->ever;
        if (!v->active)
            break;
        char since[64], exp[64], expect[64];
        util_rfc3339(v->since_ms, since, sizeof(since));
        util_rfc3339(v->expires_ms, exp, sizeof(exp));
        util_rfc3339(v->expect_ms, expect, sizeof(expect));
        json_t *nodes = json_array();
        for (int k = 0; k < v->nnodes; k++)
            json_array_append_new(nodes, json_string(v->nodes[k]));
        o = json_pack("{s:s, s:o, s:s, s:I, s:s, s:s, s:s}", "podGroup", v->key, "nodes", nodes, "resource",
                      v->gpu ? "nvidia.com/gpu" : "cpu", "held", (json_int_t)v->held, "since", since, "expires", exp,
                      "expectedStart", expect);
        break;
    }
    lo_mutex_unlock(&r->mu, LO_RESV);
    if (o || ever)
        json_object_set_new(status, "reservation", o ? o : json_null());
}

void resv_row_each_pool(const sched_row_t *row,
                        void (*fn)(void *ud, const char *pool, int active, int64_t gpus, int nodes), void *ud)
{
    resv_state_t *r = row ? row->self : NULL;
    if (!r)
        return;
    typedef struct pool_row {
        char *pool;
        int active, nodes;
        int64_t gpus;
    } pool_row_t;
    lo_mutex_lock(&r->mu, LO_RESV);
    int n = r->npools;
    pool_row_t *rows = util_xcalloc((size_t)n + 1, sizeof(*rows));
    for (int i = 0; i < n; i++) {
        resv_t *v = &r->pools[i];
        if (!v->pool_name)
            continue;
        rows[i].pool = util_strdup(v->pool_name);
        rows[i].active = v->active;
        rows[i].nodes = v->active ? v->nnodes : 0;
        rows[i].gpus = v->active && v->gpu ? v->held : 0;
    }
    lo_mutex_unlock(&r->mu, LO_RESV);
    for (int i = 0; i < n; i++) {
        if (rows[i].pool)
            fn(ud, rows[i].pool, rows[i].active, rows[i].gpus, rows[i].nodes);
        free(rows[i].pool);
    }
    free(rows);
}
