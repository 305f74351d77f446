/* consolidate.c -- consolidation on a pool thread (PostFilter, before
 * preemption: moving loses no work): when a pod needs GPUs that are free in
 * its pool but on no single node, move the fewest preemptible pods that
 * their controllers recreate, then hold each mover's new place for its
 * replacement. One consolidation at a time per pool. */
#include <stdlib.h>
#include <string.h>

#include "consolidation/consolidation.h"
#include "scheduler/internal.h"
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

struct consol_state {
    pthread_mutex_t mu; /* a leaf: taken under the cache lock by node views */
    hold_t *holds;
    int nholds;
    int pub;         /* nholds as last published (atomic): node views skip the lock when 0 */
    char **pool_pod; /* by pool id: the pod a consolidation runs for, or NULL */
    int64_t *pool_until;
    int npools;
};

consol_state_t *consol_new(void)
{
    consol_state_t *c = util_xcalloc(1, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

static void hold_clear(hold_t *h)
{
    free(h->node);
    free(h->controller_uid);
    pod_unref(h->mover);
}

void consol_free(consol_state_t *c)
{
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

node_info_t *consol_view(scheduler_t *s, const pod_t *pod, node_info_t *view, int *cloned)
{
    consol_state_t *c = s->consol;
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

char *consol_claim(scheduler_t *s, const pod_t *pod)
{
    consol_state_t *c = s->consol;
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
    scheduler_t *s;
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
    framework_pre_filter(sched_pod_fw(f->s, pod), cs, as, &st);
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
    return framework_filter(sched_pod_fw(f->s, pod), f->cs[i], f->as[i], ni, &st) == FW_SUCCESS;
}

static int movable(void *ud, const pod_t *p)
{
    fit_ctx_t *f = ud;
    if (!sched_is_ours(f->s, p->scheduler_name) || p->deleting || pod_is_terminal(p) || !p->controller_kind)
        return 0;
    if (strcmp(p->controller_kind, "ReplicaSet") != 0 && strcmp(p->controller_kind, "Job") != 0 &&
        strcmp(p->controller_kind, "StatefulSet") != 0)
        return 0;
    if (gpu_req_of(p) || gang_of(p)) /* fractions and gang members stay */
        return 0;
    if (pools_home_id(f->s, p) != f->pool_id)
        return 0;
    /* A young pod is no mover: moving it loses its work as evicting would. */
    int kind = fs_same_queue(f->s->fs, f->tenant, tenants_pod_tenant(f->s, p)) ? FS_MINRT_PREEMPT : FS_MINRT_RECLAIM;
    if (minrt_check(f->s, p, kind, f->now_wall, NULL))
        return 0;
    return fs_pod_preemptible(f->s->fs, p);
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

/* 1 while a consolidation runs in pool P for another pod (or for this one:
 * *mine); 0 when none (an expired or finished one is cleared). */
static int in_flight(scheduler_t *s, sched_pool_t *P, const pod_t *pod, int *mine)
{
    consol_state_t *c = s->consol;
    *mine = 0;
    /* The cache is asked without c->mu held (c->mu is taken under the cache lock). */
    lo_mutex_lock(&c->mu, LO_CONSOL);
    char *uid = P->id < c->npools && c->pool_pod[P->id] ? util_strdup(c->pool_pod[P->id]) : NULL;
    int64_t until = uid ? c->pool_until[P->id] : 0;
    lo_mutex_unlock(&c->mu, LO_CONSOL);
    if (!uid)
        return 0;
    cache_pod_state_t st;
    pod_t *cur = cache_get_pod(s->cache, uid, &st);
    int busy = cur && st == CPOD_PENDING && util_now_ms() <= until;
    pod_unref(cur);
    if (!busy) {
        lo_mutex_lock(&c->mu, LO_CONSOL);
        if (c->pool_pod[P->id] && strcmp(c->pool_pod[P->id], uid) == 0) {
            free(c->pool_pod[P->id]);
            c->pool_pod[P->id] = NULL;
        }
        lo_mutex_unlock(&c->mu, LO_CONSOL);
    } else {
        *mine = strcmp(uid, pod->uid) == 0;
    }
    free(uid);
    return busy;
}

static void start(scheduler_t *s, sched_pool_t *P, const pod_t *pod, node_info_t **nodes, const consol_plan_t *plan)
{
    consol_state_t *c = s->consol;
    int64_t until = util_now_ms() + CONSOL_TIMEOUT_MS;
    lo_mutex_lock(&c->mu, LO_CONSOL);
    if (P->id >= c->npools) {
        int n = P->id + 1;
        c->pool_pod = util_xrealloc(c->pool_pod, sizeof(*c->pool_pod) * (size_t)n);
        c->pool_until = util_xrealloc(c->pool_until, sizeof(*c->pool_until) * (size_t)n);
        for (int i = c->npools; i < n; i++) {
            c->pool_pod[i] = NULL;
            c->pool_until[i] = 0;
        }
        c->npools = n;
    }
    free(c->pool_pod[P->id]);
    c->pool_pod[P->id] = util_strdup(pod->uid);
    c->pool_until[P->id] = until;
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

/* 1 when a consolidation for it->pod was started (or is under way): the
 * pod waits for its nominated node; 0 when there is nothing to consolidate. */
static int consolidate_run(sched_pool_t *P, queue_item_t *it, pod_set_t *set)
{
    scheduler_t *s = P->s;
    pod_t *pod = it->pod;
    if (s->opts.max_consolidation_moves <= 0 || res_get_scalar(&pod->requests, RES_GPU) <= 0 || gang_of(pod))
        return 0;
    int mine = 0;
    if (in_flight(s, P, pod, &mine)) {
        pod_set_step(set, "consolidation", mine ? "under way" : "busy",
                     mine ? "its moves are under way" : "another pod's consolidation runs in pool %s", P->name);
        return mine; /* its own: wait for the movers; another's: not now */
    }
    /* Copies of the pool's nodes, as this pod would see them. */
    node_info_t **nodes = NULL;
    int n = 0;
    cache_rdlock(s->cache);
    int nn = 0;
    node_info_t *const *all = cache_nodes_locked(s->cache, &nn);
    nodes = util_xcalloc((size_t)nn + 1, sizeof(*nodes));
    for (int i = 0; i < nn; i++) {
        if (all[i]->pool != P->id || !all[i]->node)
            continue;
        cache_node_lock(s->cache, all[i]->name);
        int cloned = 0;
        node_info_t *v = node_with_nominated(s, pod, all[i], &cloned);
        nodes[n++] = cloned ? v : node_info_clone(all[i]);
        cache_node_unlock(s->cache, all[i]->name);
    }
    cache_unlock(s->cache);
    int64_t total, best;
    consol_free_gpus(nodes, n, &total, &best);
    int64_t want = res_get_scalar(&pod->requests, RES_GPU);
    int done = 0;
    /* Only fragmentation: the pool has the GPUs, no node has them. */
    if (total >= want && best < want) {
        fit_ctx_t f = { .s = s, .pool_id = P->id, .tenant = tenants_pod_tenant(s, pod), .now_wall = util_wall_ms() };
        consol_plan_t plan;
        if (consol_plan(nodes, n, pod, s->opts.max_consolidation_moves, fit, movable, &f, &plan)) {
            const char *target = nodes[plan.target]->name;
            sbuf_t names = { 0 };
            for (int i = 0; i < plan.nmoves; i++)
                sbuf_printf(&names, "%s%s -> %s", i ? ", " : "", plan.moves[i].pod->key, nodes[plan.moves[i].to]->name);
            LOG_I("consolidation for pod=%s pool=%s: %d move(s) free node %s: %s", pod->key, P->name, plan.nmoves,
                  target, names.data);
            start(s, P, pod, nodes, &plan);
            cache_nominate(s->cache, pod, target);
            writer_nominate(s->writer, pod, target);
            sbuf_t msg = { 0 };
            sbuf_printf(&msg, "moving %d pod(s) so that node %s has room (free GPUs were fragmented): %s", plan.nmoves,
                        target, names.data);
            writer_pod_event(s->writer, pod, "Normal", "Consolidation", msg.data);
            sbuf_free(&msg);
            pod_set_step(set, "consolidation", "planned", "%d move(s) free node %s: %s", plan.nmoves, target,
                         names.data);
            sbuf_free(&names);
            preempt_candidate_t *cand = util_xcalloc(1, sizeof(*cand));
            cand->node = util_strdup(target);
            cand->victims = util_xcalloc((size_t)plan.nmoves, sizeof(*cand->victims));
            char **dests = util_xcalloc((size_t)plan.nmoves, sizeof(*dests));
            for (int i = 0; i < plan.nmoves; i++) {
                cand->victims[i] = pod_ref(plan.moves[i].pod);
                dests[i] = util_strdup(nodes[plan.moves[i].to]->name);
            }
            cand->nvictims = plan.nmoves;
            evictor_submit_moves(s->evictor, pod, cand, dests, P->id, P->name);
            stats_add(s, &s->stats.consolidations, 1);
            consol_plan_clear(&plan);
            done = 1;
        } else {
            stats_add(s, &s->stats.consolidations_failed, 1);
            consol_no_plan_step(set, &f, nodes, n, s->opts.max_consolidation_moves);
            LOG_D("consolidation for pod=%s pool=%s: no plan within %d moves", pod->key, P->name,
                  s->opts.max_consolidation_moves);
        }
        fit_ctx_free(&f);
    } else if (total < want) {
        pod_set_step(set, "consolidation", "not applicable", "pool %s has %lld free GPUs, fewer than the %lld asked",
                     P->name, (long long)total, (long long)want);
    }
    for (int i = 0; i < n; i++)
        node_info_free(nodes[i]);
    free(nodes);
    return done;
}

/* The consolidation row's post-filter, before preemption: moving pods that
 * are recreated loses no work. It moves pods for one pod, and evicts, so
 * it follows the pool's preemption switch and the pod's preemptionPolicy
 * (Never: it displaces nobody, moved or not). */
ext_rc_t consol_ext_post_filter(pod_set_t *set)
{
    if (set->kind != SET_LONE || !sched_set_may_evict(set))
        return EXT_NEXT;
    return consolidate_run(set->P, set->items[0], set) ? EXT_DONE : EXT_NEXT;
}

static void hostname_of(void *ud, const node_info_t *ni)
{
    topo_domain_t *d = ud;
    const char *h = ni->node ? labels_get(&ni->node->labels, "kubernetes.io/hostname") : NULL;
    if (h && h[0]) {
        d->keys[0] = util_strdup("kubernetes.io/hostname");
        d->values[0] = util_strdup(h);
        d->n = 1;
    }
}

/* The consolidation row's pre-place: a pod moved by a consolidation comes
 * back where room was held for it (a one-node domain by its hostname
 * label), else anywhere. */
ext_rc_t consol_ext_pre_place(pod_set_t *set)
{
    if (set->kind != SET_LONE || set->has_dom)
        return EXT_NEXT;
    scheduler_t *s = set->P->s;
    char *node = consol_claim(s, set->items[0]->pod);
    if (!node)
        return EXT_NEXT;
    cache_node_visit(s->cache, node, hostname_of, &set->dom);
    free(node);
    set->has_dom = set->dom.n > 0;
    set->dom_soft = 1;
    return EXT_NEXT;
}
