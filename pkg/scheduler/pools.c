/* pools.c -- the live set of pools: one queue and one thread each, the node
 * partition, and what happens to nodes and pending pods when a Pool object
 * is created, changed or deleted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/internal.h"
#include "util/log.h"
#include "util/util.h"

/* Rebuilds the contiguous spec array used by the partition (pools_mu held). */
static void rebuild_specs_locked(scheduler_t *s)
{
    lockorder_assert_held(LO_POOLS);
    free(s->spec_arr);
    free(s->spec_ids);
    s->spec_arr = util_xcalloc((size_t)s->npools + 1, sizeof(*s->spec_arr));
    s->spec_ids = util_xcalloc((size_t)s->npools + 1, sizeof(*s->spec_ids));
    s->nspecs = 0;
    int with_min = 0;
    for (int i = 0; i < s->npools; i++) {
        sched_pool_t *P = s->pools[i];
        if (!P->dead && (P->spec.preempt_min_runtime_ms || P->spec.reclaim_min_runtime_ms))
            with_min++;
        if (P->dead || P->id == DEFAULT_POOL_ID)
            continue;
        s->spec_arr[s->nspecs] = P->spec; /* shallow: P owns the memory */
        s->spec_ids[s->nspecs] = P->id;
        s->nspecs++;
    }
    __atomic_store_n(&s->min_runtime_pools, with_min, __ATOMIC_RELEASE);
}

/* A pool's generator from the scheduler's seed and the pool's name (not
 * its id, which depends on the order Pools were seen): a live scheduler and
 * a sandbox given the same seed break a pool's ties alike. splitmix64 of
 * the two, never 0 (xorshift stays at 0). */
static uint64_t pool_rng_seed(uint64_t seed, const char *name)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        h = (h ^ *c) * 1099511628211ULL;
    uint64_t z = seed ^ h;
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z ? z : 0x9E3779B97F4A7C15ULL;
}

/* The scheduling queue's tenant_of and pick: the Queues' (s->queues),
 * read when asked (the rows are built after the default pool). */
static int pool_tenant_of(const pod_t *pod, void *ud)
{
    sched_pool_t *P = ud;
    return sched_pod_tenant(P->s, pod);
}

static int pool_pick(const int *tenants, const int64_t *head_first_ms, int n, void *ud)
{
    sched_pool_t *P = ud;
    const sched_queues_t *q = &P->s->queues;
    return q->ops->pick(q->self, P->id, tenants, head_first_ms, n);
}

static sched_pool_t *pool_new_locked(scheduler_t *s, const char *name)
{
    sched_pool_t *P = util_xcalloc(1, sizeof(*P));
    P->s = s;
    P->id = s->npools;
    P->name = util_strdup(name);
    P->rng = pool_rng_seed(s->opts.seed, name);
    queue_opts_t qo;
    queue_opts_default(&qo);
    qo.tenant_of = pool_tenant_of;
    qo.pick = pool_pick;
    qo.tenant_ud = P;
    P->q = queue_new(&qo);
    if (s->npools == s->cap_pools) {
        s->cap_pools = s->cap_pools ? s->cap_pools * 2 : 8;
        s->pools = util_xrealloc(s->pools, (size_t)s->cap_pools * sizeof(*s->pools));
    }
    s->pools[s->npools++] = P;
    return P;
}

void pools_init(scheduler_t *s)
{
    pthread_mutex_init(&s->pools_mu, NULL);
    s->pool_by_name = hashmap_new(16);
    pools_lock(s);
    sched_pool_t *def = pool_new_locked(s, DEFAULT_POOL);
    pool_spec_default(&def->spec);
    rebuild_specs_locked(s);
    pools_unlock(s);
}

static void pool_start(sched_pool_t *P)
{
    if (P->started)
        return;
    if (pthread_create(&P->thread, NULL, pool_thread_main, P) != 0) {
        LOG_E("pool %s: cannot start its thread", P->name);
        return;
    }
    P->started = 1;
}

/* Closes the queue and joins the thread; called without pools_mu (the
 * thread may need it to finish its last pod). */
static void pool_join(sched_pool_t *P)
{
    queue_close(P->q);
    pools_lock(P->s);
    int started = P->started;
    pools_unlock(P->s);
    if (!started)
        return;
    pthread_join(P->thread, NULL);
    pools_lock(P->s);
    P->started = 0;
    pools_unlock(P->s);
}

void pools_start_threads(scheduler_t *s)
{
    pools_lock(s);
    s->threads_on = 1;
    for (int i = 0; i < s->npools; i++)
        if (!s->pools[i]->dead)
            pool_start(s->pools[i]);
    pools_unlock(s);
}

void pools_stop_threads(scheduler_t *s)
{
    /* Close every queue first so threads finish together, then join
     * without pools_mu (a pool thread may be waiting for it). */
    pools_lock(s);
    s->threads_on = 0; /* pools created from now on get no thread */
    int n = s->npools;
    sched_pool_t **ps = util_xcalloc((size_t)n + 1, sizeof(*ps));
    memcpy(ps, s->pools, (size_t)n * sizeof(*ps));
    pools_unlock(s);
    for (int i = 0; i < n; i++)
        queue_close(ps[i]->q);
    for (int i = 0; i < n; i++)
        pool_join(ps[i]);
    free(ps);
}

void pools_destroy(scheduler_t *s)
{
    for (int i = 0; i < s->npools; i++) {
        sched_pool_t *P = s->pools[i];
        queue_free(P->q);
        pool_spec_free(&P->spec);
        free(P->name);
        free(P);
    }
    free(s->pools);
    free(s->spec_arr);
    free(s->spec_ids);
    hashmap_free(s->pool_by_name);
    pthread_mutex_destroy(&s->pools_mu);
}

int pools_partition(void *ud, const node_t *node)
{
    scheduler_t *s = ud;
    pools_lock(s);
    int idx = pool_partition_node(s->spec_arr, s->nspecs, &node->labels, node->name);
    int id = idx < 0 ? DEFAULT_POOL_ID : s->spec_ids[idx];
    pools_unlock(s);
    return id;
}

int pools_home_id(scheduler_t *s, const pod_t *p)
{
    if (!p->pool || !p->pool[0])
        return DEFAULT_POOL_ID;
    pools_lock(s);
    sched_pool_t *P = hashmap_get(s->pool_by_name, p->pool);
    int id = P ? P->id : DEFAULT_POOL_ID;
    pools_unlock(s);
    return id;
}

sched_pool_t *pools_get(scheduler_t *s, int id)
{
    pools_lock(s);
    sched_pool_t *P = (id >= 0 && id < s->npools && !s->pools[id]->dead) ? s->pools[id] : NULL;
    pools_unlock(s);
    return P;
}

void pools_flags(scheduler_t *s, int id, int *no_preempt, int *no_borrow, int *no_share)
{
    pools_lock(s);
    sched_pool_t *P = (id >= 0 && id < s->npools) ? s->pools[id] : NULL;
    if (no_preempt)
        *no_preempt = P ? P->spec.disable_preemption : 1;
    if (no_borrow)
        *no_borrow = P ? P->spec.disable_borrowing : 1;
    if (no_share)
        *no_share = P ? P->spec.disable_sharing : 1;
    pools_unlock(s);
}

int64_t pools_min_runtime(scheduler_t *s, int id, int reclaim, char *name, size_t len)
{
    int64_t v = 0;
    pools_lock(s);
    if (id >= 0 && id < s->npools && s->pools[id] && !s->pools[id]->dead) {
        const pool_spec_t *sp = &s->pools[id]->spec;
        v = reclaim ? sp->reclaim_min_runtime_ms : sp->preempt_min_runtime_ms;
        snprintf(name, len, "%s", s->pools[id]->name);
    }
    pools_unlock(s);
    return v;
}

void pools_each_live(scheduler_t *s, void (*fn)(sched_pool_t *P, void *ud), void *ud)
{
    /* pools_mu is not held while fn runs: fn may block on a queue. Pools
     * created meanwhile are skipped; sched_pool_t is never freed early. */
    pools_lock(s);
    int n = s->npools;
    pools_unlock(s);
    for (int i = 0; i < n; i++) {
        sched_pool_t *P = pools_get(s, i);
        if (P)
            fn(P, ud);
    }
}

static void move_all_one(sched_pool_t *P, void *event)
{
    queue_move_all_to_active(P->q, event);
}

void pools_move_all(scheduler_t *s, const char *event)
{
    pools_each_live(s, move_all_one, (void *)event);
}

static void delete_pod_one(sched_pool_t *P, void *uid)
{
    queue_delete(P->q, uid);
}

void pools_delete_pod(scheduler_t *s, const char *uid)
{
    pools_each_live(s, delete_pod_one, (void *)uid);
}

static void update_pod_one(sched_pool_t *P, void *pod)
{
    queue_update(P->q, pod);
}

void pools_update_pod(scheduler_t *s, pod_t *p)
{
    pools_each_live(s, update_pod_one, p);
}

/* Pending pods move to the queue of their (new) home pool: after a pool is
 * created (its pods wait in default) or deleted (its pods go to default). */
static void reroute_queue(scheduler_t *s, sched_queue_t *from, int from_id)
{
    int n = 0;
    queue_item_t **items = queue_take_all(from, &n);
    for (int i = 0; i < n; i++) {
        queue_item_t *it = items[i];
        int home = pools_home_id(s, it->pod);
        sched_pool_t *dst = NULL;
        if (it->borrower && from_id >= 0 && pools_get(s, from_id)) {
            dst = pools_get(s, from_id); /* still a valid lender */
        } else {
            it->borrower = 0;
            dst = pools_get(s, home);
        }
        if (!dst)
            dst = pools_get(s, DEFAULT_POOL_ID);
        queue_push_item(dst->q, it);
    }
    free(items);
}

static void pool_upsert(scheduler_t *s, json_t *obj)
{
    char err[256];
    pool_spec_t spec;
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    const char *uid = json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
    if (pool_spec_from_json(&spec, obj, err, sizeof(err)) != 0) {
        LOG_W("pool %s is invalid and ignored: %s", name ? name : "?", err);
        if (name && s->writer)
            writer_pool_event(s->writer, name, uid ? uid : "", "Warning", "InvalidPool", err);
        return;
    }
    int is_default = strcmp(spec.name, DEFAULT_POOL) == 0;
    int created = 0, selector_changed = 0;
    sched_pool_t *P;
    pools_lock(s);
    P = is_default ? s->pools[DEFAULT_POOL_ID] : hashmap_get(s->pool_by_name, spec.name);
    if (P && P->has_object && spec.generation > 0 && P->spec.generation == spec.generation && P->spec.uid && spec.uid &&
        strcmp(P->spec.uid, spec.uid) == 0) {
        /* Same generation: only .status changed (our own writes). Nothing
         * to repartition, nobody to wake. */
        pools_unlock(s);
        pool_spec_free(&spec);
        return;
    }
    if (!P) {
        P = pool_new_locked(s, spec.name);
        hashmap_put(s->pool_by_name, spec.name, P);
        created = 1;
        selector_changed = 1;
    } else {
        selector_changed = !is_default; /* cheap to recompute; selectors are small */
    }
    if (is_default) {
        /* The default pool keeps its catch-all role; only its flags apply. */
        selector_free(&spec.selector);
        memset(&spec.selector, 0, sizeof(spec.selector));
    }
    pool_spec_free(&P->spec);
    P->spec = spec;
    P->has_object = 1;
    rebuild_specs_locked(s);
    if (created && s->threads_on)
        pool_start(P);
    pools_unlock(s);

    if (created) {
        LOG_I("pool %s created (preemption=%s borrowing=%s sharing=%s)", spec.name,
              spec.disable_preemption ? "off" : "on", spec.disable_borrowing ? "off" : "on",
              spec.disable_sharing ? "off" : "on");
    }
    if (selector_changed)
        cache_repartition(s->cache);
    status_changed(s);
    if (created)
        reroute_queue(s, pools_get(s, DEFAULT_POOL_ID)->q, DEFAULT_POOL_ID);
    sched_event(s, SCHED_EV_OBJECT, NULL, NULL, "PoolChanged");
}

static void pool_remove(scheduler_t *s, const char *name)
{
    if (strcmp(name, DEFAULT_POOL) == 0) {
        pools_lock(s);
        sched_pool_t *D = s->pools[DEFAULT_POOL_ID];
        pool_spec_free(&D->spec);
        pool_spec_default(&D->spec);
        D->has_object = 0;
        pools_unlock(s);
        return;
    }
    pools_lock(s);
    sched_pool_t *P = hashmap_remove(s->pool_by_name, name);
    if (P) {
        P->dead = 1;
        rebuild_specs_locked(s);
    }
    pools_unlock(s);
    if (!P)
        return;
    LOG_I("pool %s deleted: its nodes return to default", name);
    status_changed(s);
    pool_join(P);
    cache_repartition(s->cache);
    reroute_queue(s, P->q, -1);
    sched_event(s, SCHED_EV_OBJECT, NULL, NULL, "PoolDeleted");
}

/* A pod pushed into a pool's queue just as the pool was deleted would be
 * stranded there: sweep dead pools' queues back to the live ones. */
void pools_sweep_dead(scheduler_t *s)
{
    pools_lock(s);
    int n = s->npools;
    pools_unlock(s);
    for (int i = 0; i < n; i++) {
        pools_lock(s);
        sched_pool_t *P = s->pools[i];
        int dead = P->dead && !P->started;
        pools_unlock(s);
        if (!dead)
            continue;
        queue_stats_t qs;
        queue_get_stats(P->q, &qs);
        if (qs.active + qs.backoff + qs.unschedulable > 0)
            reroute_queue(s, P->q, -1);
    }
}

void pools_on_event(void *ud, kube_event_type_t type, const char *key, json_t *obj)
{
    scheduler_t *s = ud;
    if (type == KUBE_DELETED)
        pool_remove(s, key);
    else
        pool_upsert(s, obj);
}
