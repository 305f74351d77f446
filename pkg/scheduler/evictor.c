/* evictor.c -- the eviction worker: a preemption's victims are evicted here,
 * off the pool thread, which only chooses them and reserves the room (a
 * nomination). An eviction refused midway (a PDB whose status lags, RBAC,
 * the API down) is explained: a Warning event on the preemptor and a
 * counter; the next candidate node is then tried, as before, and when none
 * is left the room is given back so the pod is tried again later.
 *
 * Checkpoint before eviction: a victim with a checkpoint grace (its
 * annotation, else its queue's spec.checkpointGrace) is first asked to
 * save (condition PreemptionRequested, annotation preemption-requested =
 * the deadline, an event) and evicted when it acknowledges (annotation
 * checkpointed-at at or after the request's second) or at the deadline.
 * The requests wait in a table the worker visits every CKPT_TICK_MS, and
 * at once when a requested pod changes; the room stays nominated
 * meanwhile, and a preemptor that goes away (deleted, placed elsewhere,
 * its nomination dropped) withdraws the request: nothing is evicted. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/internal.h"
#include "util/log.h"
#include "util/util.h"
#include "util/lockorder.h"

typedef struct evict_job {
    struct evict_job *next;
    pod_t *preemptor; /* one ref; a gang's first member */
    pod_t **mates;    /* a gang's other preemptors (one ref each), owned */
    int nmates;
    preempt_candidate_t *cands; /* owned; tried best first */
    int ncands;
    int pool_id; /* the preemptor's pool: who reclaims a borrowed node */
    char *pool;
    int stale;    /* no preemptor: preemptor is a stale gang's member to evict */
    char **dests; /* consolidation: each victim's destination (owned), else NULL */
    int ndests;
} evict_job_t;

/* The victims evicted for one preemptor, until every one is gone: while
 * any is still there (terminating) the preemptor waits for its room and
 * keeps its queue charge, wherever the victims were (a reclaim under a
 * queue limit nominates no node). */
typedef struct awaited {
    char **uids; /* owned */
    int n;
} awaited_t;

/* How often the worker visits pending checkpoint requests: a deadline is
 * met within this (and an acknowledgement seen at once, see evictor_pod_seen). */
#define CKPT_TICK_MS 250
/* How long a request that ended is remembered, so the informer's echo of
 * our own annotation is not taken for a request left by an earlier run. */
#define CKPT_ENDED_MS 60000

typedef struct ckpt_req ckpt_req_t;

struct evictor {
    scheduler_t *s;
    pthread_mutex_t mu;
    hashmap_t *awaiting;  /* preemptor uid -> awaited_t (mu) */
    ckpt_req_t *reqs;     /* pending checkpoint requests (the worker's; freed at evictor_free) */
    hashmap_t *requested; /* victim uid -> (void *)1 while its request is pending (mu) */
    int nrequested;       /* its size (written under mu, read atomically): victim searches skip mu at 0 */
    hashmap_t *ended;     /* victim uid -> int64_t * wall ms its request ended (mu) */
    hashmap_t *stale;     /* victim uid -> pod_t * carrying a request this process does not know (mu) */
    hashmap_t *warned;    /* uid -> (void *)1: malformed checkpoint-grace announced (worker only) */
    int poked;            /* a requested pod changed (mu) */
    pthread_cond_t cv;
    evict_job_t *head, *tail;
    int closing;
    int busy;              /* a job is being worked on */
    evict_job_t *busy_job; /* that job (its preemptors, for evictor_has_job) */
    pthread_t thread;
    int started;
    int offline; /* no thread: evictor_drain works (evictor_new_offline) */
};

static void job_free(evict_job_t *j)
{
    pod_unref(j->preemptor);
    for (int i = 0; i < j->nmates; i++)
        pod_unref(j->mates[i]);
    free(j->mates);
    for (int i = 0; i < j->ncands; i++)
        preempt_candidate_clear(&j->cands[i]);
    free(j->cands);
    free(j->pool);
    for (int i = 0; i < j->ndests; i++)
        free(j->dests[i]);
    free(j->dests);
    free(j);
}

/* kube-scheduler (1.26+, preemption.go prepareCandidate) patches this
 * condition onto a victim's status before deleting it, so the pod's owner
 * can tell a preemption from other disruptions. A server that refuses it
 * (older than the condition) costs nothing: the eviction still goes; only
 * the condition is missing. On 1.26+ servers the Eviction API then sets
 * its own DisruptionTarget (EvictionByEvictionAPI) over this one. */
static void mark_disruption_target(scheduler_t *s, const pod_t *victim, const pod_t *preemptor)
{
    char now[64], msg[320], err[256] = "";
    util_rfc3339(util_wall_ms(), now, sizeof(now));
    snprintf(msg, sizeof(msg), "%s: preempting to accommodate a higher priority pod",
             preemptor->scheduler_name ? preemptor->scheduler_name : s->opts.scheduler_name);
    json_t *body =
        json_pack("{s:{s:[{s:s, s:s, s:s, s:s, s:s}]}}", "status", "conditions", "type", "DisruptionTarget", "status",
                  "True", "reason", "PreemptionByScheduler", "message", msg, "lastTransitionTime", now);
    char *path = kube_pod_path(victim->ns, victim->name, "status");
    long status = 0;
    if (kube_send_json(s->kc, "PATCH", path, "application/strategic-merge-patch+json", body, NULL, &status, err,
                       sizeof(err)) != 0)
        LOG_D("preemption: DisruptionTarget condition on %s not set (HTTP %ld): %s", victim->key, status, err);
    json_decref(body);
    free(path);
}

static int evict(scheduler_t *s, const pod_t *victim, char *err, size_t errlen)
{
    char *path = kube_pod_path(victim->ns, victim->name, "eviction");
    json_t *body =
        json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", s->use_policy_v1 ? "policy/v1" : "policy/v1beta1", "kind",
                  "Eviction", "metadata", "name", victim->name, "namespace", victim->ns);
    if (s->opts.eviction_grace_s >= 0)
        json_object_set_new(body, "deleteOptions",
                            json_pack("{s:I}", "gracePeriodSeconds", (json_int_t)s->opts.eviction_grace_s));
    long status = 0;
    int rc = kube_send_json(s->kc, "POST", path, NULL, body, NULL, &status, err, errlen);
    json_decref(body);
    free(path);
    if (status == 404)
        return 0; /* already gone: the room is free */
    return rc == 0 ? 0 : -1;
}

/* Evicts victim i of c for j, with its event and counters (how: a note
 * for the event, or NULL). 0, or -1 with err (the victim is not
 * recharged here: the caller knows which still run). */
static int evict_victim(scheduler_t *s, evict_job_t *j, const preempt_candidate_t *c, int i, const char *how, char *err,
                        size_t errlen)
{
    pod_t *v = c->victims[i];
    char *note = s->queues.ops->reclaim_note(s->queues.self, j->preemptor, v);
    /* A victim leaves as its eviction starts (fs_leave): it stops counting
     * for its queue's share, not for its limits while it holds its node. */
    s->queues.ops->leave(s->queues.self, v->uid);
    if (!j->dests)
        mark_disruption_target(s, v, j->preemptor);
    if (evict(s, v, err, errlen) != 0) {
        free(note);
        return -1;
    }
    char msg[768];
    if (j->dests) {
        snprintf(msg, sizeof(msg),
                 "Moved (consolidation) to make room for %s on node %s; its replacement is expected on node %s%s",
                 j->preemptor->key, c->node, j->dests[i], how ? how : "");
        free(note);
        writer_pod_event(s->writer, v, "Normal", "Consolidated", msg);
        stats_add(s, &s->stats.consolidation_moves, 1);
        return 0;
    }
    snprintf(msg, sizeof(msg), "Preempted by %s on node %s%s%s%s", j->preemptor->key, c->node,
             pools_home_id(s, v) != j->pool_id ? " (borrowed node reclaimed by its pool)" : "", note ? note : "",
             how ? how : "");
    free(note);
    writer_pod_event(s->writer, v, "Normal", "Preempted", msg);
    stats_add(s, &s->stats.victims, 1);
    return 0;
}

/* Victim bad of c was refused: said where the pod's owner looks, counted.
 * done[i]: victim i was evicted (the others count again). */
static void explain_refusal(scheduler_t *s, evict_job_t *j, const preempt_candidate_t *c, int bad, const int *done,
                            const char *err)
{
    int ndone = 0;
    for (int i = 0; i < c->nvictims; i++) {
        if (done[i])
            ndone++;
        else
            sched_recharge(s, c->victims[i]); /* still running */
    }
    /* Half done (or not started): say so where the pod's owner looks. */
    LOG_W("preemption: eviction of %s refused: %s (pod=%s node=%s, %d of %d victims evicted)", c->victims[bad]->key,
          err, j->preemptor->key, c->node, ndone, c->nvictims);
    char msg[768];
    snprintf(msg, sizeof(msg),
             "Preemption on node %s incomplete: eviction of %s refused (%d of %d victims "
             "evicted): %.300s",
             c->node, c->victims[bad]->key, ndone, c->nvictims, err);
    writer_pod_event(s->writer, j->preemptor, "Warning", "PreemptionIncomplete", msg);
    stats_add(s, &s->stats.evictions_refused, 1);
}

/* Which of c's victims a PodDisruptionBudget covers with no disruption
 * left (the Eviction API refuses them): first[i] set. */
static void pdb_blocked(scheduler_t *s, const preempt_candidate_t *c, int *first)
{
    pdb_lock(s);
    for (int i = 0; i < c->nvictims; i++)
        first[i] = s->npdbs > 0 && preempt_pdb_violations(&c->victims[i], 1, s->pdbs, s->npdbs) > 0;
    pdb_unlock(s);
}

/* Evicts one candidate's victims, except the held ones (held NULL: none;
 * those are asked to checkpoint first). Victims a PodDisruptionBudget
 * would keep go first: when the API refuses one, no other victim was
 * evicted for a room that is not made (evicted again once recreated, for
 * the same preemptor: ping-pong, composition seed 402862950). 1 when all
 * went, 0 when one was refused (explained by an event and counted), -1
 * when fenced. */
static int evict_candidate(scheduler_t *s, evict_job_t *j, const preempt_candidate_t *c, const int *held)
{
    char err[256] = "";
    int *done = util_xcalloc((size_t)c->nvictims + 1, sizeof(*done));
    int *first = util_xcalloc((size_t)c->nvictims + 1, sizeof(*first));
    pdb_blocked(s, c, first);
    int rc = 1;
    for (int pass = 1; pass >= 0; pass--)
        for (int i = 0; i < c->nvictims && rc == 1; i++) {
            if ((held && held[i]) || first[i] != pass)
                continue;
            if (scheduler_fenced(s))
                rc = -1; /* lost the lease: write nothing more */
            else if (evict_victim(s, j, c, i, NULL, err, sizeof(err)) != 0) {
                explain_refusal(s, j, c, i, done, err);
                rc = 0;
            } else
                done[i] = 1;
        }
    free(first);
    free(done);
    return rc;
}

/* A member of a gang below its minimum for too long (--evict-stale-gangs). */
static void run_stale(scheduler_t *s, evict_job_t *j)
{
    char err[256] = "";
    if (scheduler_fenced(s))
        return;
    if (evict(s, j->preemptor, err, sizeof(err)) != 0) {
        LOG_W("stale gang: eviction of %s refused: %s", j->preemptor->key, err);
        return;
    }
    LOG_I("stale gang: evicted pod=%s", j->preemptor->key);
    writer_pod_event(s->writer, j->preemptor, "Normal", "Preempted",
                     "Evicted: its gang stayed below minMember longer than the grace (--evict-stale-gangs)");
    stats_add(s, &s->stats.victims, 1);
}

/* A preemptor whose victims could not all be evicted gives up its room. */
static void awaited_free(awaited_t *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->n; i++)
        free(a->uids[i]);
    free(a->uids);
    free(a);
}

/* cand's victims were evicted for j's preemptors. */
static void await_victims(evictor_t *e, const evict_job_t *j, const preempt_candidate_t *c)
{
    lo_mutex_lock(&e->mu, LO_EVICTOR);
    for (int k = -1; k < j->nmates; k++) {
        const pod_t *p = k < 0 ? j->preemptor : j->mates[k];
        awaited_t *a = util_xcalloc(1, sizeof(*a));
        a->uids = util_xcalloc((size_t)c->nvictims + 1, sizeof(*a->uids));
        for (int i = 0; i < c->nvictims; i++)
            a->uids[a->n++] = util_strdup(c->victims[i]->uid);
        awaited_free(hashmap_put(e->awaiting, p->uid, a));
    }
    lo_mutex_unlock(&e->mu, LO_EVICTOR);
}

static void await_drop(evictor_t *e, const char *uid)
{
    lo_mutex_lock(&e->mu, LO_EVICTOR);
    awaited_free(hashmap_remove(e->awaiting, uid));
    lo_mutex_unlock(&e->mu, LO_EVICTOR);
}

int evictor_awaiting(evictor_t *e, const char *uid)
{
    char **uids = NULL;
    int n = 0;
    lo_mutex_lock(&e->mu, LO_EVICTOR);
    awaited_t *a = hashmap_get(e->awaiting, uid);
    if (a) {
        uids = util_xcalloc((size_t)a->n + 1, sizeof(*uids));
        for (int i = 0; i < a->n; i++)
            uids[n++] = util_strdup(a->uids[i]);
    }
    lo_mutex_unlock(&e->mu, LO_EVICTOR);
    if (!uids)
        return 0;
    /* The cache is read with no evictor lock held (the cache is outer). */
    int left = 0;
    for (int i = 0; i < n; i++) {
        cache_pod_state_t st;
        pod_t *v = cache_get_pod(e->s->cache, uids[i], &st);
        left |= v != NULL;
        pod_unref(v);
        free(uids[i]);
    }
    free(uids);
    if (!left)
        await_drop(e, uid);
    return left;
}

/* After each job: entries whose victims are all gone go (their preemptor
 * may never ask again: bound, or deleted). */
static void await_sweep(evictor_t *e)
{
    lo_mutex_lock(&e->mu, LO_EVICTOR);
    size_t nk = hashmap_len(e->awaiting), k = 0;
    char **keys = util_xcalloc(nk + 1, sizeof(*keys));
    const char *key;
    void *v;
    for (size_t it = 0; k < nk && hashmap_next(e->awaiting, &it, &key, &v);)
        keys[k++] = util_strdup(key);
    lo_mutex_unlock(&e->mu, LO_EVICTOR);
    for (size_t i = 0; i < k; i++) {
        evictor_awaiting(e, keys[i]);
        free(keys[i]);
    }
    free(keys);
}

static void give_back(scheduler_t *s, const pod_t *p)
{
    await_drop(s->evictor, p->uid);
    cache_clear_nomination(s->cache, p->uid);
    sched_unreserve_preemptor(s, p);
    writer_nominate(s->writer, p, NULL);
}

/* ------------------------------------------------ checkpoint before eviction */

/* One candidate's victims while some are asked to checkpoint. A unit is
 * the victims of one group (the rows' group_of: a gang) on this candidate
 * (else one pod): evicted whole, once every member asked has acknowledged
 * or reached its deadline, so a gang still saving is not broken by
 * evicting its mates early. */
struct ckpt_req {
    ckpt_req_t *next;
    evict_job_t *j;         /* owned: the preemptors and the chosen candidate */
    preempt_candidate_t *c; /* in j->cands */
    int *wait;              /* per victim: held, not evicted yet */
    int *asked;             /* per victim: has a grace (else a held gang mate) */
    int *acked;             /* per victim: acknowledged */
    int *unit;              /* per victim: its unit's first victim */
    int64_t *deadline;      /* per victim asked, wall ms */
    int64_t requested_ms;   /* wall */
    int *nominated;         /* per preemptor (0: j->preemptor, k + 1: mates[k]): held a nomination */
};

static void ckpt_free(ckpt_req_t *r)
{
    if (!r)
        return;
    free(r->wait);
    free(r->asked);
    free(r->acked);
    free(r->unit);
    free(r->deadline);
    free(r->nominated);
    free(r);
}

/* A victim's grace in ms (0: none): its annotation, else its queue's. A
 * malformed annotation is said once (Warning) and counts as absent. */
static int64_t victim_grace(evictor_t *e, const pod_t *v)
{
    scheduler_t *s = e->s;
    if (v->checkpoint_grace_ms >= 0)
        return v->checkpoint_grace_ms;
    if (v->checkpoint_grace_ms == DURATION_BAD && !hashmap_get(e->warned, v->uid)) {
        if (hashmap_len(e->warned) >= 4096) { /* bounded: at worst a pod is told twice */
            hashmap_free(e->warned);
            e->warned = hashmap_new(16);
        }
        hashmap_put(e->warned, v->uid, (void *)1);
        writer_pod_event(s->writer, v, "Warning", "InvalidCheckpointGrace",
                         "annotation " CHECKPOINT_GRACE_ANNOTATION " is not a duration (e.g. \"120s\"); ignored: "
                         "the queue's checkpointGrace applies, if any");
    }
    int64_t q = s->queues.ops->checkpoint_grace(s->queues.self, sched_pod_tenant(s, v));
    return q > 0 ? q : 0;
}

/* a and b name one group (the rows' group_of): they go together. */
static int same_group(scheduler_t *s, const pod_t *a, const pod_t *b)
{
    const char *ga = sched_rows_group_of(s, a), *gb = sched_rows_group_of(s, b);
    return ga && gb && strcmp(ga, gb) == 0 && strcmp(a->ns, b->ns) == 0;
}

/* The request for c's victims, or NULL when none has a grace (evicted
 * at once, as before). */
static ckpt_req_t *ckpt_plan(evictor_t *e, evict_job_t *j, preempt_candidate_t *c)
{
    int n = c->nvictims, any = 0;
    int64_t *grace = util_xcalloc((size_t)n + 1, sizeof(*grace));
    for (int i = 0; i < n; i++)
        any |= (grace[i] = victim_grace(e, c->victims[i])) > 0;
    if (!any) {
        free(grace);
        return NULL;
    }
    ckpt_req_t *r = util_xcalloc(1, sizeof(*r));
    r->j = j;
    r->c = c;
    r->wait = util_xcalloc((size_t)n + 1, sizeof(int));
    r->asked = util_xcalloc((size_t)n + 1, sizeof(int));
    r->acked = util_xcalloc((size_t)n + 1, sizeof(int));
    r->unit = util_xcalloc((size_t)n + 1, sizeof(int));
    r->deadline = util_xcalloc((size_t)n + 1, sizeof(int64_t));
    r->requested_ms = util_wall_ms();
    for (int i = 0; i < n; i++) {
        r->unit[i] = i;
        for (int k = 0; k < i; k++)
            if (same_group(e->s, c->victims[i], c->victims[k])) {
                r->unit[i] = r->unit[k];
                break;
            }
        r->asked[i] = grace[i] > 0;
        /* On a whole second, so the annotation (RFC 3339, seconds) says
         * exactly when: never earlier than the grace. */
        r->deadline[i] = (r->requested_ms + grace[i] + 999) / 1000 * 1000;
    }
    for (int i = 0; i < n; i++)
        if (r->asked[i])
            for (int k = 0; k < n; k++)
                r->wait[k] |= r->unit[k] == r->unit[i];
    r->nominated = util_xcalloc((size_t)j->nmates + 2, sizeof(int));
    for (int k = -1; k < j->nmates; k++)
        r->nominated[k + 1] = cache_is_nominated(e->s->cache, (k < 0 ? j->preemptor : j->mates[k])->uid);
    free(grace);
    return r;
}

/* Writes the request's state on v: condition PreemptionRequested (status,
 * reason, message) and the annotation (the deadline; NULL removes it). */
static void ckpt_write(scheduler_t *s, const pod_t *v, const char *status, const char *reason, const char *msg,
                       const char *deadline)
{
    char now[64], err[256] = "";
    long code = 0;
    util_rfc3339(util_wall_ms(), now, sizeof(now));
    json_t *body = json_pack("{s:{s:[{s:s, s:s, s:s, s:s, s:s}]}}", "status", "conditions", "type", CKPT_CONDITION,
                             "status", status, "reason", reason, "message", msg, "lastTransitionTime", now);
    char *path = kube_pod_path(v->ns, v->name, "status");
    if (kube_send_json(s->kc, "PATCH", path, "application/strategic-merge-patch+json", body, NULL, &code, err,
                       sizeof(err)) != 0)
        LOG_W("checkpoint: condition %s=%s on %s not set (HTTP %ld): %s", CKPT_CONDITION, status, v->key, code, err);
    json_decref(body);
    free(path);
    body = json_pack("{s:{s:{s:o}}}", "metadata", "annotations", PREEMPTION_REQUESTED_ANNOTATION,
                     deadline ? json_string(deadline) : json_null());
    path = kube_pod_path(v->ns, v->name, NULL);
    if (kube_send_json(s->kc, "PATCH", path, "application/merge-patch+json", body, NULL, &code, err, sizeof(err)) != 0)
        LOG_W("checkpoint: annotation %s on %s not written (HTTP %ld): %s", PREEMPTION_REQUESTED_ANNOTATION, v->key,
              code, err);
    json_decref(body);
    free(path);
}

static const char *ckpt_reason(scheduler_t *s, const evict_job_t *j, const pod_t *v)
{
    if (j->dests)
        return "Consolidation";
    char *note = s->queues.ops->reclaim_note(s->queues.self, j->preemptor, v);
    int reclaim = note != NULL || pools_home_id(s, v) != j->pool_id;
    free(note);
    return reclaim ? "Reclaim" : "Preemption";
}

/* Asks every held victim that has a grace, then keeps r (taken). */
static void ckpt_start(evictor_t *e, ckpt_req_t *r)
{
    scheduler_t *s = e->s;
    const preempt_candidate_t *c = r->c;
    lo_mutex_lock(&e->mu, LO_EVICTOR);
    for (int i = 0; i < c->nvictims; i++)
        if (r->wait[i]) {
            if (!hashmap_put(e->requested, c->victims[i]->uid, (void *)1))
                __atomic_add_fetch(&e->nrequested, 1, __ATOMIC_RELEASE);
            free(hashmap_remove(e->ended, c->victims[i]->uid));
        }
    lo_mutex_unlock(&e->mu, LO_EVICTOR);
    char req[64], dl[64], msg[768];
    util_rfc3339(r->requested_ms, req, sizeof(req));
    for (int i = 0; i < c->nvictims; i++) {
        const pod_t *v = c->victims[i];
        if (!r->wait[i] || !r->asked[i]) {
            if (r->wait[i])
                LOG_I("checkpoint: %s held with its gang's mates (no grace of its own)", v->key);
            continue;
        }
        util_rfc3339(r->deadline[i], dl, sizeof(dl));
        snprintf(msg, sizeof(msg),
                 "%s: checkpoint requested: %s needs this pod's room on node %s (%s); evicted at %s, or once "
                 "annotation " CHECKPOINTED_AT_ANNOTATION " is at or after %s",
                 s->opts.scheduler_name, r->j->preemptor->key, c->node, ckpt_reason(s, r->j, v), dl, req);
        ckpt_write(s, v, "True", ckpt_reason(s, r->j, v), msg, dl);
        writer_pod_event(s->writer, v, "Normal", CKPT_CONDITION, msg);
        LOG_I("checkpoint: requested pod=%s for=%s node=%s deadline=%s", v->key, r->j->preemptor->key, c->node, dl);
        stats_add(s, &s->stats.checkpoint_requests, 1);
    }
    r->next = e->reqs;
    e->reqs = r;
}

/* The preemptor's room is given back unless it was bound meanwhile (then
 * its nomination went with the bind and its charge is its own). */
static void release_preemptor(scheduler_t *s, const pod_t *p)
{
    cache_pod_state_t st = CPOD_NONE;
    pod_t *cur = cache_get_pod(s->cache, p->uid, &st);
    if (cur && st == CPOD_PENDING)
        give_back(s, cur);
    else
        await_drop(s->evictor, p->uid);
    if (!cur) { /* deleted: nothing to write on it */
        cache_clear_nomination(s->cache, p->uid);
        sched_unreserve_preemptor(s, p);
    }
    pod_unref(cur);
}

/* Nothing more is evicted for r: every held victim still there is told
 * (condition False, annotation removed, event) and counts again. */
static void ckpt_withdraw(scheduler_t *s, ckpt_req_t *r, const char *why)
{
    const preempt_candidate_t *c = r->c;
    char msg[512];
    snprintf(msg, sizeof(msg), "%s: preemption request withdrawn: %s; nothing will be evicted", s->opts.scheduler_name,
             why);
    for (int i = 0; i < c->nvictims; i++) {
        if (!r->wait[i])
            continue;
        r->wait[i] = 0;
        pod_t *cur = cache_get_pod(s->cache, c->victims[i]->uid, NULL);
        if (!cur)
            continue;
        if (r->asked[i]) {
            ckpt_write(s, cur, "False", "PreemptionWithdrawn", msg, NULL);
            writer_pod_event(s->writer, cur, "Normal", "PreemptionWithdrawn", msg);
        }
        sched_recharge(s, cur);
        pod_unref(cur);
    }
    LOG_I("checkpoint: withdrawn for=%s node=%s: %s", r->j->preemptor->key, c->node, why);
    stats_add(s, &s->stats.checkpoint_withdrawn, 1);
    release_preemptor(s, r->j->preemptor);
    for (int k = 0; k < r->j->nmates; k++)
        release_preemptor(s, r->j->mates[k]);
}

/* Why r's room is no longer wanted, or NULL: a preemptor deleted, bound
 * (it fit elsewhere), or its nomination dropped. */
static const char *ckpt_unwanted(scheduler_t *s, const ckpt_req_t *r, char *buf, size_t len)
{
    for (int k = -1; k < r->j->nmates; k++) {
        const pod_t *p = k < 0 ? r->j->preemptor : r->j->mates[k];
        cache_pod_state_t st = CPOD_NONE;
        pod_t *cur = cache_get_pod(s->cache, p->uid, &st);
        const char *why = NULL;
        if (!cur || cur->deleting)
            why = "was deleted";
        else if (st != CPOD_PENDING)
            why = "was placed elsewhere";
        else if (r->nominated[k + 1] && !cache_is_nominated(s->cache, p->uid))
            why = "no longer holds this room";
        pod_unref(cur);
        if (why) {
            snprintf(buf, len, "the preemptor %s %s", p->key, why);
            return buf;
        }
    }
    return NULL;
}

/* Sees acknowledgements and pods gone by themselves; evicts the units
 * that are ready. 1 when r is over. */
static int ckpt_advance(evictor_t *e, ckpt_req_t *r)
{
    scheduler_t *s = e->s;
    preempt_candidate_t *c = r->c;
    char why[512], err[256] = "", how[160];
    if (ckpt_unwanted(s, r, why, sizeof(why))) {
        ckpt_withdraw(s, r, why);
        return 1;
    }
    int64_t now = util_wall_ms(), left = 0;
    for (int i = 0; i < c->nvictims; i++) {
        if (!r->wait[i])
            continue;
        pod_t *cur = cache_get_pod(s->cache, c->victims[i]->uid, NULL);
        if (!cur || cur->deleting) {
            r->wait[i] = 0; /* finished or deleted by itself: the request just ends */
            LOG_I("checkpoint: %s went by itself", c->victims[i]->key);
        } else if (r->asked[i] && !r->acked[i] && cur->checkpointed_at_ms / 1000 >= r->requested_ms / 1000) {
            r->acked[i] = 1; /* second precision, as the annotation is written */
            LOG_I("checkpoint: %s acknowledged after %.1fs", cur->key, (double)(now - r->requested_ms) / 1000);
        }
        pod_unref(cur);
    }
    for (int u = 0; u < c->nvictims; u++) {
        if (r->unit[u] != u)
            continue;
        int waiting = 0, ready = 1, acked = 1;
        for (int i = u; i < c->nvictims; i++)
            if (r->unit[i] == u && r->wait[i]) {
                waiting = 1;
                if (r->asked[i] && !r->acked[i]) {
                    acked = 0;
                    ready &= now >= r->deadline[i];
                }
            }
        if (!waiting)
            continue;
        if (!ready) {
            left = 1;
            continue;
        }
        snprintf(how, sizeof(how),
                 acked ? " (after the checkpoint, %.1fs after the request)"
                       : " (checkpoint deadline reached, %.1fs after the request)",
                 (double)(now - r->requested_ms) / 1000);
        for (int i = u; i < c->nvictims; i++) {
            if (r->unit[i] != u || !r->wait[i])
                continue;
            if (scheduler_fenced(s))
                return 1;
            if (evict_victim(s, r->j, c, i, how, err, sizeof(err)) != 0) {
                LOG_W("checkpoint: eviction of %s refused: %s (pod=%s node=%s)", c->victims[i]->key, err,
                      r->j->preemptor->key, c->node);
                char msg[640];
                snprintf(msg, sizeof(msg), "Preemption on node %s incomplete: eviction of %s refused: %.300s", c->node,
                         c->victims[i]->key, err);
                writer_pod_event(s->writer, r->j->preemptor, "Warning", "PreemptionIncomplete", msg);
                stats_add(s, &s->stats.evictions_refused, 1);
                ckpt_withdraw(s, r, "an eviction was refused");
                sched_event(s, SCHED_EV_EVICTION_REFUSED, r->j->preemptor, c->node, "EvictionRefused");
                return 1;
            }
            r->wait[i] = 0;
            LOG_I("checkpoint: evicted pod=%s%s", c->victims[i]->key, how);
            stats_add(s, acked ? &s->stats.checkpoint_acked : &s->stats.checkpoint_deadlines, r->asked[i]);
        }
    }
    return !left;
}

/* r is over: its victims are no longer requested. */
static void ckpt_end(evictor_t *e, ckpt_req_t *r)
{
    int64_t now = util_wall_ms();
    lo_mutex_lock(&e->mu, LO_EVICTOR);
    for (int i = 0; i < r->c->nvictims; i++) {
        const char *uid = r->c->victims[i]->uid;
        if (!hashmap_remove(e->requested, uid))
            continue;
        __atomic_sub_fetch(&e->nrequested, 1, __ATOMIC_RELEASE);
        int64_t *t = util_xcalloc(1, sizeof(*t));
        *t = now;
        free(hashmap_put(e->ended, uid, t));
    }
    lo_mutex_unlock(&e->mu, LO_EVICTOR);
    job_free(r->j);
    ckpt_free(r);
}

/* Requests left by an earlier run (or another leader) that no one here
 * knows: cleared, nothing evicted. Also forgets old ended requests. */
static void ckpt_sweep_stale(evictor_t *e)
{
    scheduler_t *s = e->s;
    int64_t now = util_wall_ms();
    lo_mutex_lock(&e->mu, LO_EVICTOR);
    size_t n = hashmap_len(e->stale), k = 0;
    pod_t **pods = util_xcalloc(n + 1, sizeof(*pods));
    const char *key;
    void *v;
    for (size_t it = 0; hashmap_next(e->stale, &it, &key, &v);) {
        if (k < n && !hashmap_get(e->requested, key))
            pods[k++] = v;
        else
            pod_unref(v); /* asked again meanwhile: that request is its state now */
    }
    hashmap_free(e->stale);
    e->stale = hashmap_new(16);
    size_t ne = hashmap_len(e->ended), m = 0;
    char **old = util_xcalloc(ne + 1, sizeof(*old));
    for (size_t it = 0; m < ne && hashmap_next(e->ended, &it, &key, &v);)
        if (now - *(int64_t *)v > CKPT_ENDED_MS)
            old[m++] = util_strdup(key);
    for (size_t i = 0; i < m; i++) {
        free(hashmap_remove(e->ended, old[i]));
        free(old[i]);
    }
    free(old);
    lo_mutex_unlock(&e->mu, LO_EVICTOR);
    char msg[384];
    snprintf(msg, sizeof(msg),
             "%s: preemption request withdrawn: no such request is pending in this scheduler (it restarted or "
             "another replica leads now); nothing will be evicted for it",
             s->opts.scheduler_name);
    for (size_t i = 0; i < k; i++) {
        if (!scheduler_fenced(s)) {
            LOG_I("checkpoint: clearing a request this process does not know on %s", pods[i]->key);
            ckpt_write(s, pods[i], "False", "PreemptionWithdrawn", msg, NULL);
            writer_pod_event(s->writer, pods[i], "Normal", "PreemptionWithdrawn", msg);
            int64_t *t = util_xcalloc(1, sizeof(*t));
            *t = now;
            lo_mutex_lock(&e->mu, LO_EVICTOR);
            free(hashmap_put(e->ended, pods[i]->uid, t));
            lo_mutex_unlock(&e->mu, LO_EVICTOR);
        }
        pod_unref(pods[i]);
    }
    free(pods);
}

/* The worker's visit of the pending requests; fenced, they are dropped
 * with nothing written (whoever leads next clears them). */
static void ckpt_step(evictor_t *e)
{
    ckpt_sweep_stale(e);
    for (ckpt_req_t **pp = &e->reqs; *pp;) {
        ckpt_req_t *r = *pp;
        if (scheduler_fenced(e->s) || ckpt_advance(e, r)) {
            *pp = r->next;
            ckpt_end(e, r);
        } else
            pp = &r->next;
    }
}

void evictor_pod_seen(evictor_t *e, const pod_t *p, int has_request)
{
    if (!e)
        return;
    lo_mutex_lock(&e->mu, LO_EVICTOR);
    if (hashmap_get(e->requested, p->uid)) {
        e->poked = 1; /* maybe its acknowledgement: seen at once */
        pthread_cond_signal(&e->cv);
    } else if (has_request && !p->deleting && p->phase != PHASE_SUCCEEDED && p->phase != PHASE_FAILED &&
               !hashmap_get(e->ended, p->uid) && !hashmap_get(e->stale, p->uid) && e->started && !e->closing) {
        hashmap_put(e->stale, p->uid, pod_ref((pod_t *)p));
        e->poked = 1;
        pthread_cond_signal(&e->cv);
    }
    lo_mutex_unlock(&e->mu, LO_EVICTOR);
}

int evictor_requested(evictor_t *e, const char *uid)
{
    if (!e || __atomic_load_n(&e->nrequested, __ATOMIC_ACQUIRE) == 0)
        return 0;
    lo_mutex_lock(&e->mu, LO_EVICTOR);
    int r = hashmap_get(e->requested, uid) != NULL;
    lo_mutex_unlock(&e->mu, LO_EVICTOR);
    return r;
}

/* 1 when j was kept (a checkpoint request holds it), else the caller frees it. */
static int run_job(scheduler_t *s, evict_job_t *j)
{
    int first = 1;
    if (j->stale) {
        run_stale(s, j);
        return 0;
    }
    while (j->ncands > 0) {
        int b = preempt_pick(j->cands, j->ncands);
        if (b < 0)
            break;
        preempt_candidate_t *c = &j->cands[b];
        if (!first) {
            /* The room moves to the next candidate. */
            cache_nominate(s->cache, j->preemptor, c->node);
            writer_nominate(s->writer, j->preemptor, c->node);
        }
        first = 0;
        /* Victims with a checkpoint grace (and their gang mates) are held:
         * the others go first; a refusal among them moves on as before. */
        ckpt_req_t *r = ckpt_plan(s->evictor, j, c);
        int rc = evict_candidate(s, j, c, r ? r->wait : NULL);
        if (rc < 0) {
            ckpt_free(r);
            return 0;
        }
        if (rc == 1) {
            LOG_I("%s pod=%s node=%s pool=%s victims=%d pdb_violations=%d%s", j->dests ? "moved for" : "preempted",
                  j->preemptor->key, c->node, j->pool, c->nvictims, c->pdb_violations,
                  r ? " (some asked to checkpoint first)" : "");
            if (!j->dests) {
                stats_add(s, &s->stats.preemptions, 1);
                await_victims(s->evictor, j, c);
            }
            if (r) {
                ckpt_start(s->evictor, r);
                return 1;
            }
            return 0;
        }
        ckpt_free(r);
        preempt_candidate_clear(c);
        j->cands[b] = j->cands[--j->ncands];
    }
    /* Every candidate refused: give the room back and let the pods retry
     * (every member of a gang: each was nominated and charged). */
    give_back(s, j->preemptor);
    for (int i = 0; i < j->nmates; i++)
        give_back(s, j->mates[i]);
    sched_event(s, SCHED_EV_EVICTION_REFUSED, j->preemptor, NULL, "EvictionRefused");
    return 0;
}

/* Runs the job taken from the queue (e->busy set), then frees it unless a
 * checkpoint request keeps it. */
static void work_job(evictor_t *e, evict_job_t *j)
{
    int kept = run_job(e->s, j);
    await_sweep(e);
    lo_mutex_lock(&e->mu, LO_EVICTOR);
    e->busy = 0;
    e->busy_job = NULL;
    if (!kept)
        job_free(j);
    pthread_cond_broadcast(&e->cv);
    lo_mutex_unlock(&e->mu, LO_EVICTOR);
}

static void *evictor_main(void *arg)
{
    evictor_t *e = arg;
    util_thread_name("evictor");
    for (;;) {
        lo_mutex_lock(&e->mu, LO_EVICTOR);
        while (!e->head && !e->closing && !e->poked) {
            if (!e->reqs) {
                pthread_cond_wait(&e->cv, &e->mu);
                continue;
            }
            /* Requests pending: a timed wake for their deadlines. */
            struct timespec ts;
            util_deadline(CLOCK_REALTIME, CKPT_TICK_MS, &ts);
            if (pthread_cond_timedwait(&e->cv, &e->mu, &ts) == ETIMEDOUT)
                break;
        }
        e->poked = 0;
        int closing = e->closing;
        evict_job_t *j = closing ? NULL : e->head;
        if (j) {
            e->head = j->next;
            if (!e->head)
                e->tail = NULL;
            e->busy = 1;
            e->busy_job = j;
        }
        lo_mutex_unlock(&e->mu, LO_EVICTOR);
        if (closing)
            break;
        if (j)
            work_job(e, j);
        ckpt_step(e);
    }
    return NULL;
}

/* The evictor's state, threaded or offline alike. */
static evictor_t *evictor_alloc(scheduler_t *s)
{
    evictor_t *e = util_xcalloc(1, sizeof(*e));
    e->s = s;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->awaiting = hashmap_new(16);
    e->requested = hashmap_new(16);
    e->ended = hashmap_new(16);
    e->stale = hashmap_new(16);
    e->warned = hashmap_new(16);
    return e;
}

evictor_t *evictor_new_offline(scheduler_t *s)
{
    evictor_t *e = evictor_alloc(s);
    e->started = 1; /* takes jobs; evictor_drain runs them */
    e->offline = 1;
    return e;
}

int64_t evictor_next_due(evictor_t *e)
{
    int64_t due = 0;
    for (ckpt_req_t *r = e->reqs; r; r = r->next)
        for (int i = 0; i < r->c->nvictims; i++)
            if (r->asked[i] && r->wait[i] && (due == 0 || r->deadline[i] < due))
                due = r->deadline[i];
    return due;
}

int evictor_drain(evictor_t *e)
{
    int n = 0;
    for (;;) {
        lo_mutex_lock(&e->mu, LO_EVICTOR);
        e->poked = 0;
        evict_job_t *j = e->head;
        if (j) {
            e->head = j->next;
            if (!e->head)
                e->tail = NULL;
            e->busy = 1;
            e->busy_job = j;
        }
        lo_mutex_unlock(&e->mu, LO_EVICTOR);
        if (!j)
            break;
        work_job(e, j);
        n++;
    }
    ckpt_step(e);
    return n;
}

evictor_t *evictor_new(scheduler_t *s)
{
    evictor_t *e = evictor_alloc(s);
    if (pthread_create(&e->thread, NULL, evictor_main, e) == 0)
        e->started = 1;
    else
        LOG_E("cannot start the eviction worker");
    return e;
}

/* Queues j (taken); dropped when the worker is closing or never started. */
static void push_job(evictor_t *e, evict_job_t *j)
{
    lo_mutex_lock(&e->mu, LO_EVICTOR);
    if (e->closing || !e->started) {
        lo_mutex_unlock(&e->mu, LO_EVICTOR);
        job_free(j);
        return;
    }
    if (e->tail)
        e->tail->next = j;
    else
        e->head = j;
    e->tail = j;
    pthread_cond_signal(&e->cv);
    lo_mutex_unlock(&e->mu, LO_EVICTOR);
}

void evictor_submit(evictor_t *e, pod_t *const *preemptors, int np, preempt_candidate_t *cands, int n, int pool_id,
                    const char *pool)
{
    evict_job_t *j = util_xcalloc(1, sizeof(*j));
    j->preemptor = pod_ref(preemptors[0]);
    if (np > 1) {
        j->mates = util_xcalloc((size_t)np - 1, sizeof(*j->mates));
        for (int i = 1; i < np; i++)
            j->mates[j->nmates++] = pod_ref(preemptors[i]);
    }
    j->cands = cands;
    j->ncands = n;
    j->pool_id = pool_id;
    j->pool = util_strdup(pool);
    push_job(e, j);
}

void evictor_submit_moves(evictor_t *e, const pod_t *pod, preempt_candidate_t *cand, char **dests, int pool_id,
                          const char *pool)
{
    evict_job_t *j = util_xcalloc(1, sizeof(*j));
    j->preemptor = pod_ref((pod_t *)pod);
    j->cands = cand;
    j->ncands = 1;
    j->pool_id = pool_id;
    j->pool = util_strdup(pool);
    j->dests = dests;
    j->ndests = cand->nvictims;
    push_job(e, j);
}

void evictor_evict_stale(evictor_t *e, pod_t *victim)
{
    evict_job_t *j = util_xcalloc(1, sizeof(*j));
    j->preemptor = pod_ref(victim);
    j->stale = 1;
    j->pool_id = -1;
    j->pool = util_strdup("");
    push_job(e, j);
}

static int job_has(const evict_job_t *j, const char *uid)
{
    if (strcmp(j->preemptor->uid, uid) == 0)
        return 1;
    for (int i = 0; i < j->nmates; i++)
        if (strcmp(j->mates[i]->uid, uid) == 0)
            return 1;
    return 0;
}

int evictor_has_job(evictor_t *e, const char *uid)
{
    int found = 0;
    lo_mutex_lock(&e->mu, LO_EVICTOR);
    if (e->busy_job && job_has(e->busy_job, uid))
        found = 1;
    for (evict_job_t *j = e->head; j && !found; j = j->next)
        found = job_has(j, uid);
    lo_mutex_unlock(&e->mu, LO_EVICTOR);
    return found;
}

/* Whether uid is among j's victims (any candidate's). */
static int job_evicts(const evict_job_t *j, const char *uid)
{
    for (int c = 0; c < j->ncands; c++)
        for (int v = 0; v < j->cands[c].nvictims; v++)
            if (strcmp(j->cands[c].victims[v]->uid, uid) == 0)
                return 1;
    return 0;
}

int evictor_outgoing(evictor_t *e, const char *uid)
{
    if (!e)
        return 0;
    int found = 0;
    lo_mutex_lock(&e->mu, LO_EVICTOR);
    found = hashmap_get(e->requested, uid) != NULL || (e->busy_job && job_evicts(e->busy_job, uid));
    for (evict_job_t *j = e->head; j && !found; j = j->next)
        found = job_evicts(j, uid);
    size_t it = 0;
    const char *k;
    void *v;
    while (!found && hashmap_next(e->awaiting, &it, &k, &v)) {
        const awaited_t *a = v;
        for (int i = 0; i < a->n && !found; i++)
            found = strcmp(a->uids[i], uid) == 0;
    }
    lo_mutex_unlock(&e->mu, LO_EVICTOR);
    return found;
}

void evictor_wait_idle(evictor_t *e)
{
    lo_mutex_lock(&e->mu, LO_EVICTOR);
    while ((e->head || e->busy) && e->started && !e->closing && !e->offline)
        pthread_cond_wait(&e->cv, &e->mu);
    lo_mutex_unlock(&e->mu, LO_EVICTOR);
}

/* Queued jobs are dropped, not drained: a stopping (or fenced) scheduler
 * evicts nothing more; their preemptors are retried by whoever leads. */
void evictor_free(evictor_t *e)
{
    if (!e)
        return;
    lo_mutex_lock(&e->mu, LO_EVICTOR);
    e->closing = 1;
    pthread_cond_broadcast(&e->cv);
    lo_mutex_unlock(&e->mu, LO_EVICTOR);
    if (e->started && !e->offline)
        pthread_join(e->thread, NULL);
    for (evict_job_t *j = e->head, *n; j; j = n) {
        n = j->next;
        job_free(j);
    }
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(e->awaiting, &it, &k, &v);)
        awaited_free(v);
    hashmap_free(e->awaiting);
    /* Pending requests are dropped with nothing written, like queued jobs. */
    for (ckpt_req_t *r = e->reqs, *n; r; r = n) {
        n = r->next;
        job_free(r->j);
        ckpt_free(r);
    }
    for (size_t it = 0; hashmap_next(e->ended, &it, &k, &v);)
        free(v);
    hashmap_free(e->ended);
    for (size_t it = 0; hashmap_next(e->stale, &it, &k, &v);)
        pod_unref(v);
    hashmap_free(e->stale);
    hashmap_free(e->requested);
    hashmap_free(e->warned);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e);
}
