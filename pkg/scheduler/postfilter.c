/* postfilter.c -- when a pod does not fit its pool: preempt inside the pool
 * first (borrowers, then lower-priority home pods), then borrow from the
 * sharing pool with the most idle resources and fewest tasks. */
#include <stdlib.h>
#include <string.h>

#include "scheduler/internal.h"
#include "util/log.h"
#include "util/util.h"

/* Borrowers sit below every home pod: their rank is shifted below the
 * lowest int32 priority. */
#define BORROWER_RANK_SHIFT (((int64_t)1) << 33)

typedef struct victim_ctx {
    scheduler_t *s;
    int          pool_id;
} victim_ctx_t;

static int is_victim(const pod_t *victim, const pod_t *preemptor, void *ud, int64_t *rank)
{
    victim_ctx_t *vc = ud;
    if (!sched_is_ours(vc->s, victim->scheduler_name)) return 0;   /* not ours to evict */
    if (victim->deleting || strcmp(victim->uid, preemptor->uid) == 0) return 0;
    if (pools_home_id(vc->s, victim) != vc->pool_id) {
        *rank = (int64_t)victim->priority - BORROWER_RANK_SHIFT;
        return 1;
    }
    if (victim->priority < preemptor->priority) {
        *rank = victim->priority;
        return 1;
    }
    return 0;
}

/* A preemptor already nominated to a node where victims are still
 * terminating waits for them rather than preempting again. */
static int waiting_for_victims(scheduler_t *s, const pod_t *pod)
{
    const char *node = pod->nominated_node;
    if (!node || !node[0]) return 0;
    int waiting = 0;
    cache_rdlock(s->cache);
    node_info_t *ni = cache_node_locked(s->cache, node);
    if (ni) cache_node_lock(s->cache, node);
    for (int i = 0; ni && i < ni->npods; i++)
        if (ni->pods[i]->deleting && ni->pods[i]->priority < pod->priority) waiting = 1;
    if (ni) cache_node_unlock(s->cache, node);
    cache_unlock(s->cache);
    return waiting;
}

static int evict(scheduler_t *s, const pod_t *victim, char *err, size_t errlen)
{
    char *ns = util_urlencode(victim->ns), *name = util_urlencode(victim->name);
    sbuf_t path = {0};
    sbuf_printf(&path, "/api/v1/namespaces/%s/pods/%s/eviction", ns, name);
    json_t *body = json_pack("{s:s, s:s, s:{s:s, s:s}}",
                             "apiVersion", s->use_policy_v1 ? "policy/v1" : "policy/v1beta1",
                             "kind", "Eviction", "metadata", "name", victim->name, "namespace", victim->ns);
    if (s->opts.eviction_grace_s >= 0)
        json_object_set_new(body, "deleteOptions",
                            json_pack("{s:I}", "gracePeriodSeconds", (json_int_t)s->opts.eviction_grace_s));
    long status = 0;
    int rc = kube_send_json(s->kc, "POST", path.data, NULL, body, NULL, &status, err, errlen);
    json_decref(body);
    sbuf_free(&path);
    free(ns);
    free(name);
    if (status == 404) return 0;       /* already gone: the room is free */
    return rc == 0 ? 0 : -1;
}

/* Runs victim selection over the pool's nodes; evicts the best candidate's
 * victims, trying the next candidate when an eviction is refused. */
static int preempt(sched_pool_t *P, pod_t *pod)
{
    scheduler_t *s = P->s;
    if (waiting_for_victims(s, pod)) return 1;
    victim_ctx_t vc = { s, P->id };
    cycle_state_t *cs = cycle_state_new();
    fw_status_t st;
    fw_status_reset(&st);
    framework_t *fw = sched_pod_fw(s, pod);
    if (framework_pre_filter(fw, cs, pod, &st) != FW_SUCCESS) {
        cycle_state_free(cs);
        return 0;
    }
    preempt_candidate_t *cands = NULL;
    int nc = 0;
    cache_rdlock(s->cache);
    int n = 0;
    node_info_t *const *nodes = cache_nodes_locked(s->cache, &n);
    cands = util_xcalloc((size_t)(n ? n : 1), sizeof(*cands));
    pthread_mutex_lock(&s->pdb_mu);
    for (int i = 0; i < n; i++) {
        node_info_t *ni = nodes[i];
        if (ni->pool != P->id || !ni->node) continue;
        /* Only nodes where removing pods can help (not selector/taint
         * misses), seen with the room already promised to other preemptors. */
        int cloned = 0;
        node_info_t *view = node_with_nominated(s, pod, ni, &cloned);
        fw_status_reset(&st);
        if (framework_filter(fw, cs, pod, view, &st) != FW_SUCCESS && st.code == FW_UNSCHEDULABLE &&
            preempt_select_on_node(fw, pod, view, is_victim, &vc, s->pdbs, s->npdbs, &cands[nc]) == 1)
            nc++;
        if (cloned) node_info_free(view);
    }
    pthread_mutex_unlock(&s->pdb_mu);
    cache_unlock(s->cache);
    cycle_state_free(cs);

    int done = 0;
    while (!done && nc > 0) {
        int b = preempt_pick(cands, nc);
        if (b < 0) break;
        preempt_candidate_t *c = &cands[b];
        int refused = 0;
        char err[256];
        for (int v = 0; v < c->nvictims; v++) {
            if (evict(s, c->victims[v], err, sizeof(err)) != 0) {
                LOG_W("preemption: eviction of %s refused: %s", c->victims[v]->key, err);
                refused = 1;
                break;
            }
            char msg[512];
            snprintf(msg, sizeof(msg), "Preempted by %s on node %s%s", pod->key, c->node,
                     pools_home_id(s, c->victims[v]) != P->id ? " (borrowed node reclaimed by its pool)" : "");
            writer_pod_event(s->writer, c->victims[v], "Normal", "Preempted", msg);
            stats_add(s, &s->stats.victims, 1);
        }
        if (!refused) {
            LOG_I("preempted pod=%s node=%s pool=%s victims=%d pdb_violations=%d", pod->key, c->node,
                  P->name, c->nvictims, c->pdb_violations);
            cache_nominate(s->cache, pod, c->node);
            writer_nominate(s->writer, pod, c->node);
            stats_add(s, &s->stats.preemptions, 1);
            done = 1;
        } else {
            preempt_candidate_clear(c);
            cands[b] = cands[--nc];
        }
    }
    for (int i = 0; i < nc; i++) preempt_candidate_clear(&cands[i]);
    free(cands);
    return done;
}

/* --- borrowing ------------------------------------------------------------ */

typedef struct lender_score {
    double idle;       /* sum over requested kinds of free/allocatable */
    int    tasks;
    int    fits;
} lender_score_t;

static void add_fraction(double *idle, int64_t alloc, int64_t used)
{
    if (alloc > 0) *idle += (double)(alloc > used ? alloc - used : 0) / (double)alloc;
}

static void score_lender(scheduler_t *s, const sched_pool_t *L, const pod_t *pod, cycle_state_t *cs,
                         lender_score_t *out)
{
    resources_t alloc, used;
    res_zero(&alloc);
    res_zero(&used);
    memset(out, 0, sizeof(*out));
    fw_status_t st;
    cache_rdlock(s->cache);
    int n = 0;
    node_info_t *const *nodes = cache_nodes_locked(s->cache, &n);
    for (int i = 0; i < n; i++) {
        node_info_t *ni = nodes[i];
        if (ni->pool != L->id || !ni->node) continue;
        cache_node_lock(s->cache, ni->name);      /* L's thread may be reserving here */
        res_add(&alloc, &ni->node->allocatable);
        res_add(&used, &ni->requested);
        out->tasks += ni->npods;
        if (!out->fits && framework_filter(sched_pod_fw(s, pod), cs, pod, ni, &st) == FW_SUCCESS) out->fits = 1;
        cache_node_unlock(s->cache, ni->name);
    }
    cache_unlock(s->cache);
    const resources_t *r = &pod->requests;
    if (r->milli_cpu || (!r->memory && !r->nscalar)) add_fraction(&out->idle, alloc.milli_cpu, used.milli_cpu);
    if (r->memory) add_fraction(&out->idle, alloc.memory, used.memory);
    if (r->ephemeral) add_fraction(&out->idle, alloc.ephemeral, used.ephemeral);
    for (int k = 0; k < r->nscalar; k++)
        add_fraction(&out->idle, res_get_scalar(&alloc, r->scalar[k].name), res_get_scalar(&used, r->scalar[k].name));
    queue_stats_t qs;
    queue_get_stats(L->q, &qs);
    out->tasks += qs.active + qs.backoff + qs.unschedulable;
}

static sched_pool_t *choose_lender(sched_pool_t *P, const pod_t *pod)
{
    scheduler_t *s = P->s;
    int *ids = NULL, nids = 0;
    pthread_mutex_lock(&s->pools_mu);
    ids = util_xcalloc((size_t)s->npools, sizeof(*ids));
    for (int i = 0; i < s->npools; i++) {
        sched_pool_t *L = s->pools[i];
        if (L->dead || L == P) continue;
        if (pool_may_borrow(&P->spec, &L->spec)) ids[nids++] = L->id;
    }
    pthread_mutex_unlock(&s->pools_mu);

    cycle_state_t *cs = cycle_state_new();
    fw_status_t st;
    fw_status_reset(&st);
    sched_pool_t *best = NULL;
    lender_score_t bs = {0};
    if (framework_pre_filter(sched_pod_fw(s, pod), cs, pod, &st) == FW_SUCCESS) {
        for (int i = 0; i < nids; i++) {
            sched_pool_t *L = pools_get(s, ids[i]);
            if (!L) continue;
            lender_score_t sc;
            score_lender(s, L, pod, cs, &sc);
            if (!sc.fits) continue;
            if (!best || sc.idle > bs.idle || (sc.idle == bs.idle && sc.tasks < bs.tasks)) {
                best = L;
                bs = sc;
            }
        }
    }
    cycle_state_free(cs);
    free(ids);
    return best;
}

/* A borrower that no longer fits its lender goes back to its home pool,
 * marked so that it waits there instead of bouncing between pools. */
static void return_home(sched_pool_t *P, queue_item_t *it)
{
    scheduler_t *s = P->s;
    sched_pool_t *H = pools_get(s, pools_home_id(s, it->pod));
    if (!H) H = pools_get(s, DEFAULT_POOL_ID);
    it->borrower = 0;
    it->tried_borrow = 1;
    queue_done(P->q, it);
    queue_push_item(H->q, it);
}

pf_result_t postfilter_run(sched_pool_t *P, queue_item_t *it)
{
    scheduler_t *s = P->s;
    if (it->borrower) {
        LOG_D("borrower pod=%s no longer fits pool %s; back to its pool", it->pod->key, P->name);
        return_home(P, it);
        return PF_MOVED;
    }
    int no_preempt = 1, no_borrow = 1;
    pools_flags(s, P->id, &no_preempt, &no_borrow, NULL);
    if (!s->opts.disable_preemption && !no_preempt && sched_may_preempt(s, it->pod) && preempt(P, it->pod)) return PF_PREEMPTED;
    if (no_borrow || it->tried_borrow) return PF_NONE;
    sched_pool_t *L = choose_lender(P, it->pod);
    if (!L) return PF_NONE;
    LOG_I("borrowing pod=%s from pool=%s for pool=%s", it->pod->key, L->name, P->name);
    stats_add(s, &s->stats.borrowings, 1);
    it->borrower = 1;
    queue_done(P->q, it);
    queue_push_item(L->q, it);
    return PF_MOVED;
}
