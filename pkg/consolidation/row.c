/* row.c -- the consolidation row, on a pool thread (PostFilter, before
 * preemption: moving loses no work): when a pod needs GPUs that are free in
 * its pool but on no single node, move the fewest preemptible pods that
 * their controllers recreate, then hold each mover's new place for its
 * replacement. One consolidation at a time per pool. The plan is
 * consolidation.c's (pure); the core is reached through the services. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "consolidation/consolidation.h"
#include "consolidation/row.h"
#include "fairshare/fairshare.h"
#include "gang/gang.h"
#include "gpu/gpu.h"
#include "util/lockorder.h"
#include "util/log.h"
#include "util/util.h"

/* How long a consolidation (and a hold for a replacement) may take. */
#define CONSOL_TIMEOUT_MS 60000

typedef struct hold {
    char *node;           /* destination */
    char *controller_uid; /* whose replacement it waits for */
    pod_t *mover;         /* the moved pod: its requests are what is held (one ref) */
    int64_t until_ms;
} hold_t;

typedef struct consol_state {
    const sched_services_t *svc;
    void *core;
    pthread_mutex_t mu; /* a leaf: taken under the cache lock by node views */
    hold_t *holds;
    int nholds;
    int pub;         /* nholds as last published (atomic): node views skip the lock when 0 */
    char **pool_pod; /* by pool id: the pod a consolidation runs for, or NULL */
    int64_t *pool_until;
    int npools;
} consol_state_t;

void *consol_row_init(const sched_services_t *svc, void *core)
{
    consol_state_t *c = util_xcalloc(1, sizeof(*c));
    c->svc = svc;
    c->core = core;
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

static void hold_clear(hold_t *h)
{
    free(h->node);
    free(h->controller_uid);
    pod_unref(h->mover);
}

void consol_row_fini(void *self)
{
    consol_state_t *c = self;
    if (!c)
        return;
    for (int i = 0; i < c->nholds; i++)
        hold_clear(&c->holds[i]);
    free(c->holds);
    for (int i = 0; i < c->npools; i++)
        free(c->pool_pod[i]);
    free(c->pool_pod);
    free(c->pool_until);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* Drops expired holds; c->mu held. */
static void expire_locked(consol_state_t *c, int64_t now)
{
    for (int i = 0; i < c->nholds;) {
        if (c->holds[i].until_ms > now) {
            i++;
            continue;
        }
        hold_clear(&c->holds[i]);
        c->holds[i] = c->holds[--c->nholds];
    }
    __atomic_store_n(&c->pub, c->nholds, __ATOMIC_RELEASE);
}

node_info_t *consol_row_node_view(const sched_row_t *row, const pod_t *pod, node_info_t *view, int *cloned)
{
    consol_state_t *c = row->self;
    if (!c || __atomic_load_n(&c->pub, __ATOMIC_ACQUIRE) == 0)
        return view;
    lo_mutex_lock(&c->mu, LO_CONSOL);
    int64_t now = util_now_ms();
    for (int i = 0; i < c->nholds; i++) {
        hold_t *h = &c->holds[i];
        if (h->until_ms <= now || strcmp(h->node, view->name) != 0)
            continue;
        if (pod->controller_uid && strcmp(pod->controller_uid, h->controller_uid) == 0)
            continue; /* its own controller's replacement takes the room */
        if (!*cloned) {
            view = node_info_clone(view);
            *cloned = 1;
        }
        node_info_add_pod(view, h->mover);
    }
    lo_mutex_unlock(&c->mu, LO_CONSOL);
    return view;
}

/* The node held for this replacement pod (caller frees), the hold taken;
 * NULL when none. */
static char *consol_claim(consol_state_t *c, const pod_t *pod)
{
    if (!c || !pod->controller_uid || __atomic_load_n(&c->pub, __ATOMIC_ACQUIRE) == 0)
        return NULL;
    char *node = NULL;
    lo_mutex_lock(&c->mu, LO_CONSOL);
    expire_locked(c, util_now_ms());
    for (int i = 0; i < c->nholds && !node; i++) {
        hold_t *h = &c->holds[i];
        if (strcmp(h->controller_uid, pod->controller_uid) != 0 || !res_equal(&h->mover->requests, &pod->requests))
            continue;
        node = util_strdup(h->node);
        hold_clear(h);
        c->holds[i] = c->holds[--c->nholds];
    }
    __atomic_store_n(&c->pub, c->nholds, __ATOMIC_RELEASE);
    lo_mutex_unlock(&c->mu, LO_CONSOL);
    return node;
}

/* ----------------------------------------------------------- the plan */

typedef struct fit_ctx {
    consol_state_t *c;
    /* Per pod asked about (the waiting pod, movers): the pod as its
     * replacement would be (a shallow copy, unbound) and its PreFilter state. */
    const pod_t **pods;
    pod_t **as;
    cycle_state_t **cs;
    int n, cap;
    int pool_id;
    int tenant;       /* the waiting pod's: a mover of another queue is reclaimed */
    int64_t now_wall; /* movers' ages (minimum runtime) */
} fit_ctx_t;

static int state_of(fit_ctx_t *f, const pod_t *pod)
{
    for (int i = 0; i < f->n; i++)
        if (f->pods[i] == pod)
            return i;
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 8;
        f->pods = util_xrealloc(f->pods, sizeof(*f->pods) * (size_t)f->cap);
        f->as = util_xrealloc(f->as, sizeof(*f->as) * (size_t)f->cap);
        f->cs = util_xrealloc(f->cs, sizeof(*f->cs) * (size_t)f->cap);
    }
    /* A mover is bound (NodeName would keep it home); its replacement is
     * the same pod unbound. The copy borrows every field of pod, which
     * outlives it, and is only read. */
    pod_t *as = util_xmalloc(sizeof(*as));
    *as = *pod;
    as->node_name = (char *)"";
    cycle_state_t *cs = cycle_state_new();
    fw_status_t st;
    fw_status_reset(&st);
    /* Without the cache lock: the base view (volumes) only; the inter-pod
     * constraints of movers and GPU pods are not re-checked here. */
    framework_pre_filter(f->c->svc->pod_fw(f->c->core, pod), cs, as, &st);
    f->pods[f->n] = pod;
    f->as[f->n] = as;
    f->cs[f->n] = cs;
    return f->n++;
}

static int fit(void *ud, const pod_t *pod, node_info_t *ni)
{
    fit_ctx_t *f = ud;
    int i = state_of(f, pod);
    fw_status_t st;
    fw_status_reset(&st);
    return framework_filter(f->c->svc->pod_fw(f->c->core, pod), f->cs[i], f->as[i], ni, &st) == FW_SUCCESS;
}

static int movable(void *ud, const pod_t *p)
{
    fit_ctx_t *f = ud;
    const sched_services_t *svc = f->c->svc;
    void *core = f->c->core;
    if (!svc->is_ours(core, p->scheduler_name) || p->deleting || pod_is_terminal(p) || !p->controller_kind)
        return 0;
    if (strcmp(p->controller_kind, "ReplicaSet") != 0 && strcmp(p->controller_kind, "Job") != 0 &&
        strcmp(p->controller_kind, "StatefulSet") != 0)
        return 0;
    if (gpu_req_of(p) || gang_of(p)) /* fractions and gang members stay */
        return 0;
    if (p->nclaims > 0) /* DRA claims are allocated on their node: moving the pod would not move them */
        return 0;
    if (svc->home_pool(core, p) != f->pool_id)
        return 0;
    /* A young pod is no mover: moving it loses its work as evicting would. */
    int kind = svc->same_queue(core, f->tenant, svc->tenant_of(core, p)) ? FS_MINRT_PREEMPT : FS_MINRT_RECLAIM;
    if (svc->min_runtime(core, p, kind, f->now_wall))
        return 0;
    return svc->preemptible(core, p);
}

static void fit_ctx_free(fit_ctx_t *f)
{
    for (int i = 0; i < f->n; i++) {
        cycle_state_free(f->cs[i]);
        free(f->as[i]); /* the shallow copy only: its fields are the pod's */
    }
    free(f->cs);
    free(f->as);
    free(f->pods);
}

/* 1 while a consolidation runs in pool for another pod (or for this one:
 * *mine); 0 when none (an expired or finished one is cleared). */
static int in_flight(consol_state_t *c, int pool, const pod_t *pod, int *mine)
{
    *mine = 0;
    /* The cache is asked without c->mu held (c->mu is taken under the cache lock). */
    lo_mutex_lock(&c->mu, LO_CONSOL);
    char *uid = pool < c->npools && c->pool_pod[pool] ? util_strdup(c->pool_pod[pool]) : NULL;
    int64_t until = uid ? c->pool_until[pool] : 0;
    lo_mutex_unlock(&c->mu, LO_CONSOL);
    if (!uid)
        return 0;
    cache_pod_state_t st;
    pod_t *cur = c->svc->pod_get(c->core, uid, &st);
    int busy = cur && st == CPOD_PENDING && util_now_ms() <= until;
    pod_unref(cur);
    if (!busy) {
        lo_mutex_lock(&c->mu, LO_CONSOL);
        if (c->pool_pod[pool] && strcmp(c->pool_pod[pool], uid) == 0) {
            free(c->pool_pod[pool]);
            c->pool_pod[pool] = NULL;
        }
        lo_mutex_unlock(&c->mu, LO_CONSOL);
    } else {
        *mine = strcmp(uid, pod->uid) == 0;
    }
    free(uid);
    return busy;
}

static void start(consol_state_t *c, int pool, const pod_t *pod, node_info_t **nodes, const consol_plan_t *plan)
{
    int64_t until = util_now_ms() + CONSOL_TIMEOUT_MS;
    lo_mutex_lock(&c->mu, LO_CONSOL);
    if (pool >= c->npools) {
        int n = pool + 1;
        c->pool_pod = util_xrealloc(c->pool_pod, sizeof(*c->pool_pod) * (size_t)n);
        c->pool_until = util_xrealloc(c->pool_until, sizeof(*c->pool_until) * (size_t)n);
        for (int i = c->npools; i < n; i++) {
            c->pool_pod[i] = NULL;
            c->pool_until[i] = 0;
        }
        c->npools = n;
    }
    free(c->pool_pod[pool]);
    c->pool_pod[pool] = util_strdup(pod->uid);
    c->pool_until[pool] = until;
    c->holds = util_xrealloc(c->holds, sizeof(*c->holds) * (size_t)(c->nholds + plan->nmoves));
    for (int i = 0; i < plan->nmoves; i++) {
        const consol_move_t *m = &plan->moves[i];
        c->holds[c->nholds++] =
            (hold_t){ util_strdup(nodes[m->to]->name), util_strdup(m->pod->controller_uid), pod_ref(m->pod), until };
    }
    __atomic_store_n(&c->pub, c->nholds, __ATOMIC_RELEASE);
    lo_mutex_unlock(&c->mu, LO_CONSOL);
}

/* Why no plan, for the decision record: how many of the pool's running
 * pods could move, and how many are not a controller's (never moved). */
static void consol_no_plan_step(pod_set_t *set, fit_ctx_t *f, node_info_t **nodes, int n, int max_moves)
{
    int movers = 0, bare = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < nodes[i]->npods; k++) {
            const pod_t *p = nodes[i]->pods[k];
            if (preempt_removable(p, nodes[i]->name) && movable(f, p))
                movers++;
            else if (!p->controller_kind && !pod_is_terminal(p))
                bare++;
        }
    pod_set_step(set, "consolidation", "no plan",
                 "no plan within %d moves: %d pod(s) could move; %d pod(s) are not owned by a controller", max_moves,
                 movers, bare);
}

static void count_done(scheduler_stats_t *st, void *ud)
{
    if (ud)
        st->consolidations++;
    else
        st->consolidations_failed++;
}

/* Starts the plan's moves for pod: holds, nomination, event, evictions. */
static void consol_commit(consol_state_t *c, pod_set_t *set, pod_t *pod, node_info_t **nodes, const consol_plan_t *plan)
{
    const char *target = nodes[plan->target]->name;
    sbuf_t names = { 0 };
    for (int i = 0; i < plan->nmoves; i++)
        sbuf_printf(&names, "%s%s -> %s", i ? ", " : "", plan->moves[i].pod->key, nodes[plan->moves[i].to]->name);
    LOG_I("consolidation for pod=%s pool=%s: %d move(s) free node %s: %s", pod->key, set->pool_name, plan->nmoves,
          target, names.data);
    start(c, set->pool_id, pod, nodes, plan);
    c->svc->nominate(c->core, pod, target);
    sbuf_t msg = { 0 };
    sbuf_printf(&msg, "moving %d pod(s) so that node %s has room (free GPUs were fragmented): %s", plan->nmoves, target,
                names.data);
    c->svc->pod_event(c->core, pod, "Normal", "Consolidation", msg.data);
    sbuf_free(&msg);
    pod_set_step(set, "consolidation", "planned", "%d move(s) free node %s: %s", plan->nmoves, target, names.data);
    sbuf_free(&names);
    preempt_candidate_t *cand = util_xcalloc(1, sizeof(*cand));
    cand->node = util_strdup(target);
    cand->victims = util_xcalloc((size_t)plan->nmoves, sizeof(*cand->victims));
    char **dests = util_xcalloc((size_t)plan->nmoves, sizeof(*dests));
    for (int i = 0; i < plan->nmoves; i++) {
        cand->victims[i] = pod_ref(plan->moves[i].pod);
        dests[i] = util_strdup(nodes[plan->moves[i].to]->name);
    }
    cand->nvictims = plan->nmoves;
    c->svc->evict_moves(c->core, pod, cand, dests, set->pool_id, set->pool_name);
    c->svc->stats(c->core, count_done, c);
}

/* 1 when a consolidation for the set's pod was started (or is under way):
 * the pod waits for its nominated node; 0 when there is nothing to
 * consolidate. */
static int consolidate_run(consol_state_t *c, pod_set_t *set)
{
    pod_t *pod = set->items[0]->pod;
    int max_moves = c->svc->opts(c->core)->max_consolidation_moves;
    if (max_moves <= 0 || res_get_scalar(&pod->requests, RES_GPU) <= 0 || gang_of(pod))
        return 0;
    int mine = 0;
    if (in_flight(c, set->pool_id, pod, &mine)) {
        pod_set_step(set, "consolidation", mine ? "under way" : "busy",
                     mine ? "its moves are under way" : "another pod's consolidation runs in pool %s", set->pool_name);
        return mine; /* its own: wait for the movers; another's: not now */
    }
    /* Copies of the pool's nodes, as this pod would see them. */
    node_info_t **nodes = NULL;
    int n = c->svc->pool_views(c->core, set->pool_id, pod, &nodes);
    int64_t total, best;
    consol_free_gpus(nodes, n, &total, &best);
    int64_t want = res_get_scalar(&pod->requests, RES_GPU);
    int done = 0;
    /* Only fragmentation: the pool has the GPUs, no node has them. */
    if (total >= want && best < want) {
        fit_ctx_t f = {
            .c = c, .pool_id = set->pool_id, .tenant = c->svc->tenant_of(c->core, pod), .now_wall = util_wall_ms()
        };
        consol_plan_t plan;
        if (consol_plan(nodes, n, pod, max_moves, fit, movable, &f, &plan)) {
            consol_commit(c, set, pod, nodes, &plan);
            consol_plan_clear(&plan);
            done = 1;
        } else {
            c->svc->stats(c->core, count_done, NULL);
            consol_no_plan_step(set, &f, nodes, n, max_moves);
            LOG_D("consolidation for pod=%s pool=%s: no plan within %d moves", pod->key, set->pool_name, max_moves);
        }
        fit_ctx_free(&f);
    } else if (total < want) {
        pod_set_step(set, "consolidation", "not applicable", "pool %s has %lld free GPUs, fewer than the %lld asked",
                     set->pool_name, (long long)total, (long long)want);
    }
    for (int i = 0; i < n; i++)
        node_info_free(nodes[i]);
    free(nodes);
    return done;
}

/* It moves pods for one pod, and evicts, so it follows the pool's
 * preemption switch and the pod's preemptionPolicy (Never: it displaces
 * nobody, moved or not). */
ext_rc_t consol_row_post_filter(const sched_row_t *row, pod_set_t *set)
{
    consol_state_t *c = row->self;
    if (set->kind != SET_LONE || !c->svc->may_evict(c->core, set))
        return EXT_NEXT;
    return consolidate_run(c, set) ? EXT_DONE : EXT_NEXT;
}

static void hostname_of(void *ud, const node_info_t *ni)
{
    fw_node_match_t *d = ud;
    const char *h = ni->node ? labels_get(&ni->node->labels, "kubernetes.io/hostname") : NULL;
    if (h && h[0]) {
        d->keys[0] = util_strdup("kubernetes.io/hostname");
        d->values[0] = util_strdup(h);
        d->n = 1;
    }
}

/* A pod moved by a consolidation comes back where room was held for it (a
 * one-node match by its hostname label), else anywhere. */
ext_rc_t consol_row_pre_place(const sched_row_t *row, pod_set_t *set)
{
    consol_state_t *c = row->self;
    if (set->kind != SET_LONE || set->has_match)
        return EXT_NEXT;
    char *node = consol_claim(c, set->items[0]->pod);
    if (!node)
        return EXT_NEXT;
    c->svc->node_visit(c->core, node, hostname_of, &set->match);
    free(node);
    set->has_match = set->match.n > 0;
    set->match_soft = 1;
    return EXT_NEXT;
}
