/* preempt_eval.c -- one preemption for a pod set: a set of one and a
 * gang's minimum are planned by the same function on the same copies of
 * the pool's nodes, member by member, asking the victims point which pods
 * may go, and committed by one step (charge, nominate, evict). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/preempt_eval.h"
#include "util/log.h"
#include "util/util.h"

/* ----------------------------------------------------------- copies */

void pe_sim_free(pe_sim_t *sim)
{
    for (int i = 0; i < sim->nnodes; i++)
        node_info_free(sim->nodes[i]);
    free(sim->nodes);
    for (int i = 0; i < sim->nmembers; i++)
        cycle_state_free(sim->cs[i]);
    free(sim->cs);
    free(sim->pods);
    memset(sim, 0, sizeof(*sim));
}

/* Under the cache's read lock only for PreFilter and the copies (as long
 * as a normal cycle); the plan, which re-runs the filters per victim,
 * works on the copies unlocked, so informers (and, behind them, the other
 * pools) never wait for it. */
int pe_sim_build(scheduler_t *s, int pool_id, pod_t *const *pods, int n, pe_sim_t *sim)
{
    memset(sim, 0, sizeof(*sim));
    res_zero(&sim->alloc);
    res_zero(&sim->used);
    sim->cs = util_xcalloc((size_t)n + 1, sizeof(*sim->cs));
    sim->pods = util_xcalloc((size_t)n + 1, sizeof(*sim->pods));
    for (int i = 0; i < n; i++)
        sim->pods[i] = pods[i];
    for (int i = 0; i < n; i++)
        cache_interpod_prepare(s->cache, pods[i]);
    cache_rdlock(s->cache);
    fw_cluster_t cl;
    sched_cluster_view(s, &cl);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        fw_status_t st;
        fw_status_reset(&st);
        sim->cs[i] = cycle_state_new();
        sim->nmembers = i + 1;
        cycle_state_set_cluster(sim->cs[i], &cl);
        if (framework_pre_filter(sched_pod_fw(s, pods[i]), sim->cs[i], pods[i], &st) != FW_SUCCESS)
            rc = -1;
        cycle_state_set_cluster(sim->cs[i], NULL);
    }
    if (rc == 0) {
        sim->nodes = util_xcalloc((size_t)cl.nnodes + 1, sizeof(*sim->nodes));
        sim->nnodes = sched_pool_copies_locked(s, pool_id, pods[0], cl.nodes, cl.nnodes, sim->nodes, &sim->alloc,
                                               &sim->used, &sim->tasks);
    }
    cache_unlock(s->cache);
    return rc;
}

int pe_sim_fit(scheduler_t *s, pe_sim_t *sim, int i)
{
    framework_t *fw = sched_pod_fw(s, sim->pods[i]);
    for (int k = 0; k < sim->nnodes; k++) {
        fw_status_t st;
        fw_status_reset(&st);
        if (framework_filter(fw, sim->cs[i], sim->pods[i], sim->nodes[k], &st) == FW_SUCCESS)
            return k;
    }
    return -1;
}

/* The inter-pod and spread terms among the members themselves. */
void pe_sim_place(scheduler_t *s, pe_sim_t *sim, int k, int i)
{
    node_info_add_pod(sim->nodes[k], sim->pods[i]);
    for (int j = 0; j < sim->nmembers; j++)
        if (j != i)
            framework_add_pod(sched_pod_fw(s, sim->pods[j]), sim->cs[j], sim->pods[j], sim->pods[i], sim->nodes[k]);
}

/* A pod leaves copy k: every member's state forgets it. */
static void sim_remove(scheduler_t *s, pe_sim_t *sim, int k, const pod_t *p)
{
    for (int j = 0; j < sim->nmembers; j++)
        framework_remove_pod(sched_pod_fw(s, sim->pods[j]), sim->cs[j], sim->pods[j], p, sim->nodes[k]);
    node_info_remove_pod(sim->nodes[k], p->uid);
}

static int sim_find(pe_sim_t *sim, const char *node)
{
    for (int k = 0; k < sim->nnodes; k++)
        if (strcmp(sim->nodes[k]->name, node) == 0)
            return k;
    return -1;
}

int pe_vset_add(pe_vset_t *vs, pod_t *p)
{
    if (hashmap_get(vs->seen, p->uid))
        return 0;
    hashmap_put(vs->seen, p->uid, p);
    vs->v = util_xrealloc(vs->v, (size_t)(vs->n + 1) * sizeof(*vs->v));
    vs->v[vs->n++] = pod_ref(p);
    return 1;
}

void pe_vset_free(pe_vset_t *vs)
{
    for (int i = 0; i < vs->n; i++)
        pod_unref(vs->v[i]);
    free(vs->v);
    hashmap_free(vs->seen);
}

/* Removes a victim (and the mates that go with it, the rows' mates
 * point: a gang whole) from the copies and adds them to vs. */
static void sim_evict(scheduler_t *s, pe_sim_t *sim, pe_vset_t *vs, pod_t *v)
{
    if (!pe_vset_add(vs, v))
        return;
    int k = sim_find(sim, v->node_name);
    if (k >= 0)
        sim_remove(s, sim, k, v);
    pod_t **mates = NULL;
    int nm = sched_rows_mates(s, v, &mates);
    for (int i = 0; i < nm; i++) {
        if (pe_vset_add(vs, mates[i])) {
            int km = sim_find(sim, mates[i]->node_name);
            if (km >= 0)
                sim_remove(s, sim, km, mates[i]);
        }
        pod_unref(mates[i]);
    }
    free(mates);
}

/* ---------------------------------------------------------- victims */

/* The Queues' side (s->queues): the preemptors' queue and request, and
 * whether they starve. */
void pe_victim_ctx(sched_pool_t *P, pod_t *const *pods, int n, int64_t first_ms, victim_ctx_t *vc)
{
    const sched_queues_t *q = &P->s->queues;
    vc->queues = q->ops->active(q->self);
    if (!q->ops->set_request(q->self, pods, n, &vc->tenant, vc->req))
        return;
    vc->prio = pods[0]->priority;
    vc->created_ms = pods[0]->created_ms;
    vc->now_wall = util_wall_ms();
    vc->starving = first_ms > 0 && q->ops->starving(q->self, P->id, vc->tenant, first_ms);
}

/* The index of the job victim k joins among kept[0..k) (each marked
 * minimum[] when a member of its group's minimum, which goes whole: one
 * job for reclaim), else k. */
static int victim_job(scheduler_t *s, pod_t *const *kept, const int *minimum, const int *jobs, int k)
{
    const char *g = minimum[k] ? sched_rows_group_of(s, kept[k]) : NULL;
    for (int j = 0; g && j < k; j++) {
        const char *gj = minimum[j] ? sched_rows_group_of(s, kept[j]) : NULL;
        if (gj && strcmp(gj, g) == 0 && strcmp(kept[j]->ns, kept[k]->ns) == 0)
            return jobs[j];
    }
    return k;
}

/* Reclaim's rules over a victim set, by job (the Queues' victims_ok): a
 * group's minimum members (the rows' minimum_member: a gang's) are one
 * job, a lone pod or a member beyond the minimum one of its own
 * (KAI-Scheduler splits a job's victims
 * the same way). Borrowers of vc's pool are left out: a pool takes back
 * what it lent whatever queue the borrower is in (the rule of
 * postfilter_is_victim), so no share of theirs is weighed here. */
static int queue_victims_ok(const victim_ctx_t *vc, pod_t *const *victims, int n)
{
    const char **uids = util_xcalloc((size_t)n + 1, sizeof(*uids));
    pod_t **kept = util_xcalloc((size_t)n + 1, sizeof(*kept));
    int *jobs = util_xcalloc((size_t)n + 1, sizeof(*jobs)), *minimum = util_xcalloc((size_t)n + 1, sizeof(*minimum));
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (pools_home_id(vc->s, victims[i]) != vc->pool_id)
            continue;
        kept[k] = victims[i];
        minimum[k] = sched_rows_minimum_member(vc->s, victims[i]);
        jobs[k] = victim_job(vc->s, kept, minimum, jobs, k);
        uids[k++] = victims[i]->uid;
    }
    const sched_queues_t *q = &vc->s->queues;
    int ok = q->ops->victims_ok(q->self, vc->pool_id, vc->tenant, vc->req, vc->starving, uids, jobs, k, vc->now_wall);
    free(uids);
    free(kept);
    free(jobs);
    free(minimum);
    return ok;
}

int pe_queue_candidates(const victim_ctx_t *vc, preempt_candidate_t *cands, int n)
{
    if (!vc->queues)
        return n;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (queue_victims_ok(vc, cands[i].victims, cands[i].nvictims))
            cands[k++] = cands[i];
        else
            preempt_candidate_clear(&cands[i]);
    }
    return k;
}

int pe_queue_victims_ok(const victim_ctx_t *vc, pod_t *const *victims, int n)
{
    return !vc->queues || queue_victims_ok(vc, victims, n);
}

static int core_expand(victim_ctx_t *vc, const pod_t *preemptor, preempt_candidate_t *cands, int n)
{
    return sched_rows_expand(vc->s, vc, preemptor, cands, n);
}

/* The core's answers; a row's will take their place. */
static const pe_victims_t core_victims = {
    .pod = postfilter_is_victim,
    .expand = core_expand,
    .candidates = pe_queue_candidates,
    .set_ok = pe_queue_victims_ok,
};

const pe_victims_t *pe_victims(const scheduler_t *s)
{
    (void)s;
    return &core_victims;
}

/* ------------------------------------------------------------- plan */

int postfilter_candidates_wanted(int nodes)
{
    int k = nodes / 10;
    return k < 100 ? 100 : k;
}

/* A preemption worked out on copies: where each member of the minimum
 * goes and its victims (whole gangs for gang victims). A set of one keeps
 * every candidate node it found (alts, the chosen one alts[best]): the
 * evictor moves on to the next when an eviction is refused. */
typedef struct pe_plan {
    char **where; /* need node names, owned */
    int need;
    pe_vset_t vs;
    int64_t max_rank; /* highest victim rank, for choosing between domains */
    preempt_candidate_t *alts;
    int nalts, best;
    int nodes, cands; /* a set of one: copies where evicting could help, and with victims allowed */
} pe_plan_t;

static void plan_free(pe_plan_t *pl)
{
    for (int i = 0; pl->where && i < pl->need; i++)
        free(pl->where[i]);
    free(pl->where);
    pe_vset_free(&pl->vs);
    for (int i = 0; i < pl->nalts; i++)
        preempt_candidate_clear(&pl->alts[i]);
    free(pl->alts);
    memset(pl, 0, sizeof(*pl));
}

/* The copies member i's victim search runs over (indices into sim, in
 * search order; returns how many). A set of one asks, as kube's dry run,
 * only the nodes where evicting could help (its filters fail there as
 * unschedulable, not for a selector or a taint), from a random one on, so
 * no node is always the first asked to give way. A gang member asks every
 * copy in order: the copies hold the members placed before it. */
static int search_order(sched_pool_t *P, pe_sim_t *sim, int i, int lone, int *idx)
{
    scheduler_t *s = P->s;
    int n = 0;
    for (int k = 0; k < sim->nnodes; k++) {
        fw_status_t st;
        fw_status_reset(&st);
        if (!lone || (framework_filter(sched_pod_fw(s, sim->pods[i]), sim->cs[i], sim->pods[i], sim->nodes[k], &st) !=
                          FW_SUCCESS &&
                      st.code == FW_UNSCHEDULABLE))
            idx[n++] = k;
    }
    if (!lone || n == 0)
        return n;
    int start = (int)(sched_rng_next(&P->rng) % (uint64_t)n);
    int *tmp = util_xcalloc((size_t)n, sizeof(*tmp));
    for (int j = 0; j < n; j++)
        tmp[j] = idx[(start + j) % n];
    memcpy(idx, tmp, (size_t)n * sizeof(*idx));
    free(tmp);
    return n;
}

/* Room for member i by evicting: the best candidate node among the search
 * order (kube's order: PDB violations, highest victim, priority sum,
 * count), whole gangs for gang victims, reclaim's rules per candidate.
 * Its victims leave the copies. Returns the copy, or -1. pdb_mu held. */
static int plan_member(sched_pool_t *P, pe_sim_t *sim, int i, int lone, victim_ctx_t *vc, pe_plan_t *pl)
{
    scheduler_t *s = P->s;
    const pe_victims_t *V = pe_victims(s);
    pod_t *pod = sim->pods[i];
    int *idx = util_xcalloc((size_t)sim->nnodes + 1, sizeof(*idx));
    int nidx = search_order(P, sim, i, lone, idx);
    if (lone)
        pl->nodes = nidx;
    preempt_candidate_t *cands = util_xcalloc((size_t)nidx + 1, sizeof(*cands));
    int nc = 0, want = postfilter_candidates_wanted(nidx);
    for (int j = 0; j < nidx && nc < want; j++)
        if (preempt_select_on_node_cs(sched_pod_fw(s, pod), sim->cs[i], pod, sim->nodes[idx[j]], V->pod, vc, s->pdbs,
                                      s->npdbs, &cands[nc]) == 1)
            nc++;
    free(idx);
    /* A gang victim costs its whole gang: count it before choosing. */
    nc = V->expand(vc, pod, cands, nc);
    nc = V->candidates(vc, cands, nc);
    int b = preempt_pick(cands, nc), k = -1;
    if (b >= 0) {
        k = sim_find(sim, cands[b].node);
        if (cands[b].max_rank > pl->max_rank || pl->vs.n == 0)
            pl->max_rank = cands[b].max_rank;
        for (int v = 0; v < cands[b].nvictims; v++)
            sim_evict(s, sim, &pl->vs, cands[b].victims[v]);
    }
    if (lone)
        pl->cands = nc;
    if (lone && b >= 0) {
        pl->alts = cands;
        pl->nalts = nc;
        pl->best = b;
        return k;
    }
    for (int j = 0; j < nc; j++)
        preempt_candidate_clear(&cands[j]);
    free(cands);
    return k;
}

/* Members are placed in turn on copies of the pool's nodes (inside dom,
 * when given); a member that does not fit takes the best node's minimal
 * victim set (plan_member). A set of one is a minimum of one whose fit
 * the cycle has just refused: it goes straight to its victim search. All
 * or nothing: 1 with *pl when every member of the minimum finds a place
 * and the victims together keep reclaim's rules; -1 when a gang's minimum
 * fits with no victim (a race: nothing to evict); 0 otherwise. */
static int plan(const pe_request_t *r, victim_ctx_t *vc, const fw_node_match_t *dom, pe_plan_t *pl)
{
    sched_pool_t *P = r->P;
    scheduler_t *s = P->s;
    int lone = r->group == NULL;
    memset(pl, 0, sizeof(*pl));
    pl->vs.seen = hashmap_new(32);
    pl->need = r->need;
    pl->where = util_xcalloc((size_t)r->need + 1, sizeof(*pl->where));
    pe_sim_t sim;
    if (pe_sim_build(s, P->id, r->pods, r->need, &sim) != 0) {
        pe_sim_free(&sim);
        return 0;
    }
    for (int i = 0; dom && i < r->need; i++)
        cycle_state_set_match(sim.cs[i], dom);
    for (int g = 0; g < r->ngone; g++)
        sim_evict(s, &sim, &pl->vs, r->gone[g]);
    int ok = 1;
    pdb_lock(s);
    for (int i = 0; i < r->need && ok; i++) {
        /* A set of one was refused by the cycle as the nodes are; with
         * victims already gone from the copies it may fit as they are. */
        int k = lone && r->ngone == 0 ? -1 : pe_sim_fit(s, &sim, i);
        if (k < 0)
            k = plan_member(P, &sim, i, lone, vc, pl);
        if (k < 0) {
            ok = 0;
            break;
        }
        pe_sim_place(s, &sim, k, i);
        pl->where[i] = util_strdup(sim.nodes[k]->name);
    }
    pdb_unlock(s);
    pe_sim_free(&sim);
    if (lone)
        return ok; /* its one candidate check was the whole set's */
    if (ok && pl->vs.n == 0)
        return -1; /* fits on paper without victims: a race, retry normally */
    if (ok && !pe_victims(s)->set_ok(vc, pl->vs.v, pl->vs.n))
        ok = 0; /* the victims together would take a queue below its share */
    return ok;
}

/* Of two plans, a is better: fewer victims, then a lower highest victim. */
static int plan_better(const pe_plan_t *a, const pe_plan_t *b)
{
    if (a->vs.n != b->vs.n)
        return a->vs.n < b->vs.n;
    return a->max_rank < b->max_rank;
}

/* For a group a row keeps inside node matches (plan_within: a
 * topology-required gang, each domain of its level in the pool): the best
 * plan over doms[0..nd) (each plan kept inside its match). Frees doms. */
static int plan_domains(const pe_request_t *r, victim_ctx_t *vc, fw_node_match_t *doms, int nd, pe_plan_t *best)
{
    int found = 0, free_domain = 0;
    for (int j = 0; j < nd && !free_domain; j++) {
        pe_plan_t pl;
        int rc = plan(r, vc, &doms[j], &pl);
        free_domain = rc < 0; /* a domain has the room already: evict nobody */
        if (rc > 0 && (!found || plan_better(&pl, best))) {
            if (found)
                plan_free(best);
            *best = pl;
            found = 1;
        } else {
            plan_free(&pl);
        }
    }
    for (int j = 0; j < nd; j++)
        fw_node_match_free(&doms[j]);
    free(doms);
    if (free_domain && found)
        plan_free(best);
    return found && !free_domain;
}

/* The best plan for r: inside each of the node matches a row keeps its
 * group in (plan_within: a topology-required gang's domains), else on the
 * whole pool. 1 with *pl (the caller frees it); 0 with *pl freed, and
 * *nodes and *cands, the whole-pool search's counts (a set of one's
 * explanation). */
static int plan_set(const pe_request_t *r, victim_ctx_t *vc, pe_plan_t *pl, int *nodes, int *cands)
{
    fw_node_match_t *doms = NULL;
    int nd = r->group ? sched_rows_plan_within(r->P->s, r->group, &doms) : -1;
    if (nd >= 0)
        return plan_domains(r, vc, doms, nd, pl);
    int ok = plan(r, vc, NULL, pl) > 0;
    *nodes = pl->nodes;
    *cands = pl->cands;
    if (!ok)
        plan_free(pl);
    return ok;
}

/* The request for set's minimum (pods: pod_set_pods's). */
static pe_request_t request_of(pod_set_t *set, pod_t *const *pods)
{
    return (pe_request_t){ .P = set->P,
                           .pods = pods,
                           .need = set->need,
                           .first_ms = set->items[0]->first_ms,
                           .group = set->kind == SET_MINIMUM ? set : NULL,
                           .set = set };
}

/* ----------------------------------------------------------- commit */

static void announce(const pe_commit_t *c, const preempt_candidate_t *b)
{
    const pod_t *pod = c->pods[0];
    switch (c->by) {
    case PE_BY_LONE:
        LOG_D("preempting for pod=%s node=%s pool=%s victims=%d", pod->key, b->node, c->P->name, b->nvictims);
        break;
    case PE_BY_GROUP: sched_rows_preempting(c->P->s, c->set, c->P->name, b->nvictims, c->np); break;
    case PE_BY_LIMIT:
        LOG_I("reclaiming %d pods under a queue limit for pod=%s (%d members) pool=%s", b->nvictims, pod->key, c->np,
              c->P->name);
        break;
    }
}

void preempt_commit(const pe_commit_t *c)
{
    scheduler_t *s = c->P->s;
    const preempt_candidate_t *b = &c->cands[c->best];
    if (c->vc->queues)
        s->queues.ops->reserve(s->queues.self, c->vc->tenant, c->vc->pool_id, c->pods, c->np, b->victims, b->nvictims);
    sched_rows_victims_taken(s, b->victims, b->nvictims);
    for (int i = 0; c->where && i < c->np; i++) {
        cache_nominate(s->cache, c->pods[i], c->where[i]);
        writer_nominate(s->writer, c->pods[i], c->where[i]);
    }
    announce(c, b);
    /* The evictions (and the fallback to the next candidates) are the
     * eviction worker's: this thread never waits on the API server. */
    evictor_submit(s->evictor, c->pods, c->np, c->cands, c->nc, c->P->id, c->P->name);
}

/* -------------------------------------------------------- evaluator */

/* A preemptor already nominated to a node where victims are still
 * terminating waits for them rather than preempting again. */
int postfilter_waiting_for_victims(scheduler_t *s, const pod_t *pod)
{
    if (s->evictor && evictor_awaiting(s->evictor, pod->uid))
        return 1;
    const char *node = pod->nominated_node;
    if (!node || !node[0])
        return 0;
    int waiting = 0;
    cache_rdlock(s->cache);
    node_info_t *ni = cache_node_locked(s->cache, node);
    if (ni)
        cache_node_lock(s->cache, node);
    for (int i = 0; ni && i < ni->npods; i++)
        if (ni->pods[i]->deleting && ni->pods[i]->priority < pod->priority)
            waiting = 1;
    if (ni)
        cache_node_unlock(s->cache, node);
    cache_unlock(s->cache);
    return waiting;
}

/* Victims chosen earlier for a member are still being evicted, or are
 * terminating: it waits for them rather than preempting again. */
static int waiting_for_victims(scheduler_t *s, const pe_request_t *r)
{
    for (int i = 0; i < r->need; i++)
        if (evictor_has_job(s->evictor, r->pods[i]->uid) || postfilter_waiting_for_victims(s, r->pods[i]))
            return 1;
    return 0;
}

/* The victim rules' view of the preemptors: a set of one (an elastic
 * member too) preempts with its own class, a gang with its gang's; only a
 * set of one queued long enough is starving. */
static void victim_ctx_of(const pe_request_t *r, victim_ctx_t *vc)
{
    scheduler_t *s = r->P->s;
    memset(vc, 0, sizeof(*vc));
    vc->s = s;
    vc->pool_id = r->P->id;
    vc->has_group_prio = 1;
    vc->group_prio = r->group ? sched_class_priority(s, r->group->group.priority_class, INT32_MIN)
                              : sched_pod_priority(s, r->pods[0]);
    pe_victim_ctx(r->P, r->pods, r->need, r->group ? 0 : r->first_ms, vc);
    vc->set = r->set;
}

/* A gang's members drop the room an earlier round nominated them to: the
 * plan finds it again if it is still the best. */
static void drop_stale_rooms(scheduler_t *s, const pe_request_t *r)
{
    int dropped = 0;
    for (int i = 0; i < r->need; i++)
        dropped |= cache_clear_nomination(s->cache, r->pods[i]->uid);
    if (dropped)
        sched_event(s, SCHED_EV_NOMINATION_DROPPED, NULL, NULL, "NominationDropped");
}

int preempt_eval(const pe_request_t *r, preempt_outcome_t *out)
{
    scheduler_t *s = r->P->s;
    memset(out, 0, sizeof(*out));
    if (waiting_for_victims(s, r))
        return out->waiting = 1;
    if (r->group)
        drop_stale_rooms(s, r);
    victim_ctx_t vc;
    victim_ctx_of(r, &vc);
    pe_plan_t pl;
    if (!plan_set(r, &vc, &pl, &out->nodes, &out->cands))
        return 0;
    out->nodes = pl.nodes;
    out->cands = pl.cands;
    if (r->group) {
        /* One job, one candidate (no ranks to compare) holding all the
         * victims: the evictor reports a refusal on the first member and
         * gives back every member's room and charge. */
        pl.alts = util_xcalloc(1, sizeof(*pl.alts));
        pl.alts->node = util_strdup(pl.where[0]);
        pl.alts->victims = pl.vs.v;
        pl.alts->nvictims = pl.vs.n;
        pl.nalts = 1;
        pl.best = 0;
        pl.vs.v = NULL;
        pl.vs.n = 0;
    }
    const preempt_candidate_t *b = &pl.alts[pl.best];
    snprintf(out->node, sizeof(out->node), "%s", b->node);
    out->victims = b->nvictims;
    pe_commit_t c = { .P = r->P,
                      .vc = &vc,
                      .pods = r->pods,
                      .np = r->need,
                      .where = pl.where,
                      .cands = pl.alts,
                      .nc = pl.nalts,
                      .best = pl.best,
                      .by = r->group ? PE_BY_GROUP : PE_BY_LONE,
                      .set = r->group };
    preempt_commit(&c);
    pl.alts = NULL; /* the evictor's now */
    pl.nalts = 0;
    plan_free(&pl);
    return 1;
}

/* ------------------------------------------------- under a queue limit */

/* Whether a row's protect point (a minimum runtime) keeps one of the
 * victims a queue limit chose in pool (its own queue's pod at home:
 * preempt; another queue's, or a borrower whose lender takes its room
 * back: reclaim, as for any victim): then none goes, and the set's
 * message says until when (the rows' kept point). Every victim is asked,
 * so the message counts them all. */
static int limit_victims_protected(pod_set_t *set, const preempt_candidate_t *c, int pool)
{
    scheduler_t *s = set->P->s;
    const sched_queues_t *q = &s->queues;
    int kept = 0;
    sched_victim_q_t vq = { .preemptor = set->items[0]->pod, .pool_id = pool, .now_wall = util_wall_ms(), .set = set };
    for (int i = 0; i < c->nvictims; i++) {
        const pod_t *v = c->victims[i];
        int same =
            q->ops->same_queue(q->self, set->items[0]->tenant, sched_pod_tenant(s, v)) && pools_home_id(s, v) == pool;
        vq.victim = v;
        kept |= sched_rows_protect(s, &vq, same ? FS_MINRT_PREEMPT : FS_MINRT_RECLAIM);
    }
    sched_rows_kept(s, set, 0, NULL);
    return kept;
}

/* Whether the set would be placed once the victims c a queue limit chose
 * are gone: planned on copies of the pool's nodes without them, inside
 * the rows' node matches (plan_within: a topology-required gang's
 * domains), where members that still do not fit may take further victims
 * by the usual rules (the post-filter's preemption finds them once the
 * set is admitted). Room under a limit for a set that no node would take
 * is evictions for nothing: the set gives it up at its next failed try,
 * its queue's pods take the limit's room back, and the set reclaims them
 * again (composition seed 809706068: a topology-required gang reclaimed
 * the same pod three times). */
static int limit_room_fits(pod_set_t *set, pod_t *const *pods, const preempt_candidate_t *c)
{
    pe_request_t r = request_of(set, pods);
    r.set = NULL; /* a check, not the set's try: the rows note nothing in it */
    r.gone = c->victims;
    r.ngone = c->nvictims;
    victim_ctx_t vc;
    victim_ctx_of(&r, &vc);
    pe_plan_t pl;
    int nodes, cands;
    int ok = plan_set(&r, &vc, &pl, &nodes, &cands);
    if (ok)
        plan_free(&pl);
    return ok;
}

/* The room is the limit's, on no node: nobody is nominated. A gang goes
 * whole, each mate by the victim rules, or not at all; and only for a
 * set that would be placed once they are gone (limit_room_fits: -1 when
 * it would not). */
int pe_limit_reclaim(pod_set_t *set, int pool, char **uids, int n)
{
    sched_pool_t *P = set->P;
    scheduler_t *s = P->s;
    int np = set->need;
    queue_item_t *const *items = set->items;
    int busy = 0;
    for (int i = 0; i < np && !busy; i++)
        busy = evictor_has_job(s->evictor, items[i]->pod->uid);
    preempt_candidate_t *c = util_xcalloc(1, sizeof(*c));
    c->victims = util_xcalloc((size_t)n, sizeof(*c->victims));
    for (int i = 0; i < n; i++) {
        cache_pod_state_t st;
        pod_t *v = busy ? NULL : cache_get_pod(s->cache, uids[i], &st);
        if (v && st == CPOD_BOUND && preempt_removable(v, NULL) && !v->deleting)
            c->victims[c->nvictims++] = v;
        else
            pod_unref(v);
        free(uids[i]);
    }
    free(uids);
    /* one went meanwhile (choose again next time), or a minimum runtime
     * keeps one */
    if (busy || c->nvictims < n || limit_victims_protected(set, c, pool)) {
        preempt_candidate_clear(c);
        free(c);
        return 0;
    }
    c->node = util_strdup(c->victims[0]->node_name);
    pod_t **pods = pod_set_pods(set);
    victim_ctx_t vc = { .s = s, .pool_id = pool };
    pe_victim_ctx(P, pods, np, 0, &vc);
    pdb_lock(s);
    int left = pe_victims(s)->expand(&vc, pods[0], c, 1);
    pdb_unlock(s);
    if (left == 0) {
        free(c);
        free(pods);
        return 0;
    }
    if (!limit_room_fits(set, pods, c)) {
        preempt_candidate_clear(c);
        free(c);
        free(pods);
        return -1;
    }
    pe_commit_t cm = { .P = P, .vc = &vc, .pods = pods, .np = np, .cands = c, .nc = 1, .by = PE_BY_LIMIT };
    preempt_commit(&cm);
    free(pods);
    return 1;
}

/* ------------------------------------------------- for rows and tests */

int postfilter_preempt(sched_pool_t *P, pod_t *pod, int64_t first_ms)
{
    pe_request_t r = { .P = P, .pods = &pod, .need = 1, .first_ms = first_ms };
    preempt_outcome_t out;
    return preempt_eval(&r, &out);
}

int preempt_set(pod_set_t *set, preempt_outcome_t *seen, char **kept)
{
    pod_t **pods = pod_set_pods(set);
    pe_request_t r = request_of(set, pods);
    int made = preempt_eval(&r, seen);
    free(pods);
    *kept = NULL;
    sched_rows_kept(set->P->s, set, made, kept);
    return made;
}

/* The pod gave up the room it was promised (it found none by preemption,
 * or it goes to borrow): drop the nomination, here and on the API. */
void postfilter_drop_nomination(scheduler_t *s, const pod_t *pod)
{
    /* Lower-priority pods saw the room taken (node_with_nominated). */
    if (cache_clear_nomination(s->cache, pod->uid))
        sched_event(s, SCHED_EV_NOMINATION_DROPPED, pod, NULL, "NominationDropped");
    sched_unreserve_preemptor(s, pod);
    if (pod->nominated_node && pod->nominated_node[0])
        writer_nominate(s->writer, pod, NULL);
}

/* Whether the set may evict: the pool's preemption switch, and every
 * member of its minimum's preemptionPolicy and profile. */
int sched_set_may_evict(const pod_set_t *set)
{
    scheduler_t *s = set->P->s;
    int no_preempt = 1;
    pools_flags(s, set->P->id, &no_preempt, NULL, NULL);
    if (s->opts.disable_preemption || no_preempt)
        return 0;
    for (int i = 0; i < set->need; i++)
        if (!sched_may_preempt(s, set->items[i]->pod))
            return 0;
    return 1;
}

/* A lender's room for a set's minimum (the borrowing row's choice):
 * whether it fits whole in pool's free room, simulated on copies with no
 * eviction; the sums over its nodes and its pods. */
int pe_room_for(scheduler_t *s, int pool, pod_t *const *pods, int n, resources_t *alloc, resources_t *used, int *tasks)
{
    pe_sim_t sim;
    int fits = pe_sim_build(s, pool, pods, n, &sim) == 0 && sim.nnodes > 0;
    for (int i = 0; fits && i < n; i++) {
        int k = pe_sim_fit(s, &sim, i);
        if (k < 0)
            fits = 0;
        else
            pe_sim_place(s, &sim, k, i);
    }
    *alloc = sim.alloc;
    *used = sim.used;
    *tasks = sim.tasks;
    pe_sim_free(&sim);
    return fits;
}
