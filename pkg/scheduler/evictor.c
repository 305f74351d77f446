/* evictor.c -- the eviction worker: a preemption's victims are evicted here,
 * off the pool thread, which only chooses them and reserves the room (a
 * nomination). An eviction refused midway (a PDB whose status lags, RBAC,
 * the API down) is explained: a Warning event on the preemptor and a
 * counter; the next candidate node is then tried, as before, and when none
 * is left the room is given back so the pod is tried again later. */
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

struct evictor {
    scheduler_t *s;
    pthread_mutex_t mu;
    hashmap_t *awaiting; /* preemptor uid -> awaited_t (mu) */
    pthread_cond_t cv;
    evict_job_t *head, *tail;
    int closing;
    int busy;              /* a job is being worked on */
    evict_job_t *busy_job; /* that job (its preemptors, for evictor_has_job) */
    pthread_t thread;
    int started;
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

/* Evicts one candidate's victims. 1 when all went, 0 when one was refused
 * (explained by an event and counted), -1 when fenced. */
static int evict_candidate(scheduler_t *s, evict_job_t *j, const preempt_candidate_t *c)
{
    char err[256] = "";
    int done = 0;
    for (; done < c->nvictims; done++) {
        if (scheduler_fenced(s))
            return -1; /* lost the lease: write nothing more */
        pod_t *v = c->victims[done];
        char *note = tenants_reclaim_note(s, j->preemptor, v);
        /* A victim stops counting for its queue as its eviction starts. */
        fs_uncharge(s->fs, v->uid);
        if (!j->dests)
            mark_disruption_target(s, v, j->preemptor);
        if (evict(s, v, err, sizeof(err)) != 0) {
            free(note);
            break;
        }
        char msg[640];
        if (j->dests) {
            snprintf(msg, sizeof(msg),
                     "Moved (consolidation) to make room for %s on node %s; its replacement is expected on node %s",
                     j->preemptor->key, c->node, j->dests[done]);
            free(note);
            writer_pod_event(s->writer, v, "Normal", "Consolidated", msg);
            stats_add(s, &s->stats.consolidation_moves, 1);
            continue;
        }
        snprintf(msg, sizeof(msg), "Preempted by %s on node %s%s%s", j->preemptor->key, c->node,
                 pools_home_id(s, v) != j->pool_id ? " (borrowed node reclaimed by its pool)" : "", note ? note : "");
        free(note);
        writer_pod_event(s->writer, v, "Normal", "Preempted", msg);
        stats_add(s, &s->stats.victims, 1);
    }
    if (done == c->nvictims)
        return 1;
    for (int i = done; i < c->nvictims; i++)
        tenants_recharge(s, c->victims[i]); /* still running */
    /* Half done (or not started): say so where the pod's owner looks. */
    LOG_W("preemption: eviction of %s refused: %s (pod=%s node=%s, %d of %d victims evicted)", c->victims[done]->key,
          err, j->preemptor->key, c->node, done, c->nvictims);
    char msg[768];
    snprintf(msg, sizeof(msg),
             "Preemption on node %s incomplete: eviction of %s refused (%d of %d victims "
             "evicted): %.300s",
             c->node, c->victims[done]->key, done, c->nvictims, err);
    writer_pod_event(s->writer, j->preemptor, "Warning", "PreemptionIncomplete", msg);
    stats_add(s, &s->stats.evictions_refused, 1);
    return 0;
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
    tenants_unreserve_preemptor(s, p);
    writer_nominate(s->writer, p, NULL);
}

static void run_job(scheduler_t *s, evict_job_t *j)
{
    int first = 1;
    if (j->stale) {
        run_stale(s, j);
        return;
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
        int rc = evict_candidate(s, j, c);
        if (rc < 0)
            return;
        if (rc == 1) {
            LOG_I("%s pod=%s node=%s pool=%s victims=%d pdb_violations=%d", j->dests ? "moved for" : "preempted",
                  j->preemptor->key, c->node, j->pool, c->nvictims, c->pdb_violations);
            if (!j->dests) {
                stats_add(s, &s->stats.preemptions, 1);
                await_victims(s->evictor, j, c);
            }
            return;
        }
        preempt_candidate_clear(c);
        j->cands[b] = j->cands[--j->ncands];
    }
    /* Every candidate refused: give the room back and let the pods retry
     * (every member of a gang: each was nominated and charged). */
    give_back(s, j->preemptor);
    for (int i = 0; i < j->nmates; i++)
        give_back(s, j->mates[i]);
    pools_move_all(s, "EvictionRefused");
}

static void *evictor_main(void *arg)
{
    evictor_t *e = arg;
    util_thread_name("evictor");
    for (;;) {
        lo_mutex_lock(&e->mu, LO_EVICTOR);
        while (!e->head && !e->closing)
            pthread_cond_wait(&e->cv, &e->mu);
        evict_job_t *j = e->closing ? NULL : e->head;
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
        run_job(e->s, j);
        await_sweep(e);
        lo_mutex_lock(&e->mu, LO_EVICTOR);
        e->busy = 0;
        e->busy_job = NULL;
        job_free(j);
        pthread_cond_broadcast(&e->cv);
        lo_mutex_unlock(&e->mu, LO_EVICTOR);
    }
    return NULL;
}

evictor_t *evictor_new(scheduler_t *s)
{
    evictor_t *e = util_xcalloc(1, sizeof(*e));
    e->s = s;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->awaiting = hashmap_new(16);
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

void evictor_wait_idle(evictor_t *e)
{
    lo_mutex_lock(&e->mu, LO_EVICTOR);
    while ((e->head || e->busy) && e->started && !e->closing)
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
    if (e->started)
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
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e);
}
