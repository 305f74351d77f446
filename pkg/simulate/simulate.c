/* simulate.c -- the virtual-time loop: arrivals, finishes, evictions and
 * the scheduler's own wakes, in one deterministic order. */
#include "simulate/internal.h"

#include <stdlib.h>
#include <string.h>

#include "api/resources.h"
#include "api/types.h"
#include "fairshare/fairshare.h"
#include "pool/pool.h"
#include "scheduler/capabilities.h"
#include "util/log.h"
#include "util/util.h"

#define DEFAULT_IDLE_MS     600000
#define DEFAULT_MAX_SAMPLES 512

/* ------------------------------------------------------------ series */

void sim_series_init(sim_series_t *se, const char *name, const char *pool, int nv, int64_t every)
{
    memset(se, 0, sizeof(*se));
    se->name = util_strdup(name);
    se->pool = pool ? util_strdup(pool) : NULL;
    se->nv = nv;
    se->every = every > 0 ? every : 1;
}

/* Keeps every other sample (the first stays) and doubles the spacing: a
 * series stays under max samples however long the run, evenly spaced. */
static void series_halve(sim_series_t *se)
{
    int k = 0;
    for (int i = 0; i < se->n; i++) {
        if (i % 2)
            continue;
        se->t[k] = se->t[i];
        memmove(&se->v[(size_t)k * se->nv], &se->v[(size_t)i * se->nv], sizeof(double) * se->nv);
        k++;
    }
    se->n = k;
    se->every *= 2;
    if (k > 1 && se->t[1] - se->t[0] > se->every)
        se->every = se->t[1] - se->t[0]; /* the spacing the samples now have */
}

void sim_series_add(sim_series_t *se, int64_t t, const double *v, int force, int max)
{
    if (se->n > 0) {
        const double *last = &se->v[(size_t)(se->n - 1) * se->nv];
        if (!memcmp(last, v, sizeof(double) * se->nv) && !force)
            return;                  /* a step plot: an unchanged value adds nothing */
        if (t == se->t[se->n - 1]) { /* the latest state at one instant */
            memcpy((double *)last, v, sizeof(double) * se->nv);
            return;
        }
        if (t - se->t[se->n - 1] < se->every && !force)
            return;
    }
    if (se->n >= max && max > 2)
        series_halve(se);
    if (se->n == se->cap) {
        se->cap = se->cap ? se->cap * 2 : 64;
        se->t = util_xrealloc(se->t, sizeof(*se->t) * (size_t)se->cap);
        se->v = util_xrealloc(se->v, sizeof(double) * (size_t)se->cap * se->nv);
    }
    se->t[se->n] = t;
    memcpy(&se->v[(size_t)se->n * se->nv], v, sizeof(double) * se->nv);
    se->n++;
}

void sim_series_free(sim_series_t *se)
{
    free(se->name);
    free(se->pool);
    free(se->t);
    free(se->v);
    memset(se, 0, sizeof(*se));
}

/* ------------------------------------------------------------ setup */

/* By time, then pod index: file order among jobs that arrive together. */
static int cmp_create(const void *a, const void *b)
{
    const sim_finish_t *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->pod - y->pod;
}

sim_t *sim_new(const sim_opts_t *o, const sim_workload_t *w, const sim_backend_t *b)
{
    capabilities_init(); /* sim_load parses the snapshot's pods */
    sim_t *s = util_xcalloc(1, sizeof(*s));
    s->o = *o;
    if (s->o.idle_ms <= 0)
        s->o.idle_ms = DEFAULT_IDLE_MS;
    if (s->o.max_samples < 4)
        s->o.max_samples = DEFAULT_MAX_SAMPLES;
    s->w = w;
    s->b = *b;
    s->now = s->last_progress = o->start_wall_ms;
    s->js = util_xcalloc((size_t)w->njobs + 1, sizeof(*s->js));
    s->first_pod = util_xcalloc((size_t)w->njobs + 1, sizeof(int));
    for (int i = 0; i < w->njobs; i++) {
        s->first_pod[i] = s->npods;
        s->npods += w->jobs[i].npods;
        const sim_job_t *j = &w->jobs[i];
        s->js[i].arrival_at = j->arrival_abs ? j->arrival : o->start_wall_ms + j->arrival;
    }
    /* A job's pods are created one after another, SIM_CREATE_GAP_MS apart,
     * as a controller makes them: the live queue orders pods that tie on
     * priority by when they came, and that order has to exist here too. */
    s->creates = util_xcalloc((size_t)s->npods + 1, sizeof(*s->creates));
    for (int i = 0, k = 0; i < w->njobs; i++)
        for (int p = 0; p < w->jobs[i].npods; p++, k++)
            s->creates[k] = (sim_finish_t){ s->js[i].arrival_at + (int64_t)p * SIM_CREATE_GAP_MS, k, 0 };
    qsort(s->creates, (size_t)s->npods, sizeof(*s->creates), cmp_create);
    s->pods = util_xcalloc((size_t)s->npods + 1, sizeof(*s->pods));
    s->by_key = hashmap_new((size_t)s->npods * 2 + 16);
    for (int i = 0, k = 0; i < w->njobs; i++)
        for (int p = 0; p < w->jobs[i].npods; p++, k++) {
            sim_pod_t *sp = &s->pods[k];
            char name[300];
            sbuf_t key = { 0 };
            sbuf_printf(&key, "%s/%s", w->jobs[i].ns, sim_pod_name(&w->jobs[i], p, name, sizeof name));
            sp->key = key.data;
            sp->job = i;
            sp->idx = p;
            sp->pool = -1;
            hashmap_put(s->by_key, sp->key, (void *)(intptr_t)(k + 1));
        }
    s->node_pool = hashmap_new(1024);
    s->other_pods = hashmap_new(1024);
    s->prio = hashmap_new(64);
    s->queue_idx = hashmap_new(64);
    return s;
}

void sim_free(sim_t *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->npods; i++) {
        free(s->pods[i].key);
        free(s->pods[i].node);
    }
    size_t it = 0;
    const char *k;
    void *v;
    while (hashmap_next(s->other_pods, &it, &k, &v)) {
        sim_pod_t *p = v;
        free(p->node);
        free(p);
    }
    for (int i = 0; i < s->npools; i++) {
        free(s->pools[i].name);
        sim_series_free(&s->pools[i].series);
    }
    for (int i = 0; i < s->nqueues; i++)
        sim_series_free(&s->queues[i]);
    for (int i = 0; i < s->nacts; i++) {
        free(s->acts[i].key);
        free(s->acts[i].uid);
        free(s->acts[i].node);
        free(s->acts[i].reason);
    }
    sbuf_free(&s->events);
    free(s->acts);
    free(s->queues);
    free(s->pools);
    free(s->pods);
    free(s->js);
    free(s->first_pod);
    free(s->creates);
    free(s->heap);
    free(s->recreate);
    hashmap_free(s->by_key);
    hashmap_free(s->node_pool);
    hashmap_free(s->other_pods);
    hashmap_free(s->prio);
    hashmap_free(s->queue_idx);
    free(s);
}

/* What a pod occupies, in scheduler_each_queue's units. */
static void pod_req(const pod_t *p, double out[SIM_NRES])
{
    out[SIM_GPU] = (double)res_get_scalar(&p->requests, RES_GPU_NAME);
    out[SIM_CPU] = (double)p->requests.milli_cpu;
    out[SIM_MEM] = (double)p->requests.memory / (1024.0 * 1024.0);
}

static int pool_index(sim_t *s, const char *name)
{
    for (int i = 0; i < s->npools; i++)
        if (!strcmp(s->pools[i].name, name))
            return i;
    s->pools = util_xrealloc(s->pools, sizeof(*s->pools) * (size_t)(s->npools + 1));
    sim_pool_t *p = &s->pools[s->npools];
    memset(p, 0, sizeof(*p));
    p->name = util_strdup(name);
    p->area_at = s->o.start_wall_ms;
    sim_series_init(&p->series, name, NULL, SIM_NRES, 1);
    return s->npools++;
}

static int cmp_pool(const void *a, const void *b)
{
    return strcmp(((const sim_pool_t *)a)->name, ((const sim_pool_t *)b)->name);
}

/* Nodes into pools (the partition rule of pkg/pool) and their capacity. */
static int load_pools(sim_t *s, json_t *items, char *err, size_t errlen)
{
    pool_spec_t *specs = NULL;
    int nspecs = 0, rc = 0;
    size_t i;
    json_t *it;
    json_array_foreach (items, i, it) {
        if (strcmp(json_string_value(json_object_get(it, "kind")) ?: "", "Pool"))
            continue;
        specs = util_xrealloc(specs, sizeof(*specs) * (size_t)(nspecs + 1));
        char e[256];
        if (pool_spec_from_json(&specs[nspecs], it, e, sizeof e) < 0) {
            rc = util_errf(err, errlen, "snapshot items[%zu]: Pool: %s", i, e);
            break;
        }
        nspecs++;
    }
    for (int k = 0; k < nspecs && !rc; k++)
        pool_index(s, specs[k].name);
    pool_index(s, DEFAULT_POOL);
    qsort(s->pools, (size_t)s->npools, sizeof(*s->pools), cmp_pool);
    json_array_foreach (items, i, it) {
        if (rc || strcmp(json_string_value(json_object_get(it, "kind")) ?: "", "Node"))
            continue;
        char e[256];
        node_t *n = node_from_json(it, e, sizeof e);
        if (!n) {
            rc = util_errf(err, errlen, "snapshot items[%zu]: Node: %s", i, e);
            break;
        }
        int k = pool_partition_node(specs, nspecs, &n->labels, n->name);
        int pi = pool_index(s, k < 0 ? DEFAULT_POOL : specs[k].name);
        sim_pool_t *p = &s->pools[pi];
        int64_t gpu = res_get_scalar(&n->allocatable, RES_GPU_NAME);
        p->cap[SIM_GPU] += (double)gpu;
        p->cap[SIM_CPU] += (double)n->allocatable.milli_cpu;
        p->cap[SIM_MEM] += (double)n->allocatable.memory / (1024.0 * 1024.0);
        s->has_gpu |= gpu > 0;
        hashmap_put(s->node_pool, n->name, (void *)(intptr_t)(pi + 1));
        node_unref(n);
    }
    for (int k = 0; k < nspecs; k++)
        pool_spec_free(&specs[k]);
    free(specs);
    return rc;
}

static void pool_use(sim_t *s, int pi, const double req[SIM_NRES], double sign)
{
    if (pi < 0)
        return;
    sim_pool_t *p = &s->pools[pi];
    for (int r = 0; r < SIM_NRES; r++) {
        p->area[r] += p->used[r] * (double)(s->now - p->area_at);
        p->used[r] += sign * req[r];
        if (p->used[r] < 0)
            p->used[r] = 0;
    }
    p->area_at = s->now;
}

static int node_pool(sim_t *s, const char *node)
{
    intptr_t v = node ? (intptr_t)hashmap_get(s->node_pool, node) : 0;
    return v ? (int)v - 1 : -1;
}

/* Pods of the snapshot already on a node count in their pool's use. */
static void load_running(sim_t *s, json_t *items)
{
    size_t i;
    json_t *it;
    json_array_foreach (items, i, it) {
        if (strcmp(json_string_value(json_object_get(it, "kind")) ?: "", "Pod"))
            continue;
        char e[256];
        pod_t *p = pod_from_json(it, e, sizeof e);
        if (!p)
            continue; /* the sandbox says what is wrong with it */
        if (pod_is_bound(p) && !pod_is_terminal(p)) {
            sim_pod_t *o = util_xcalloc(1, sizeof(*o));
            o->job = -1;
            o->node = util_strdup(p->node_name);
            o->pool = node_pool(s, p->node_name);
            o->state = POD_RUNNING;
            pod_req(p, o->req);
            pool_use(s, o->pool, o->req, 1);
            free(hashmap_put(s->other_pods, p->key, o));
        }
        pod_unref(p);
    }
}

/* PriorityClasses: the value a pod of that class gets, as the API server's
 * Priority admission would set it; the global default for pods with none. */
static int resolve_priorities(sim_t *s, json_t *items, char *err, size_t errlen)
{
    size_t i;
    json_t *it;
    const char *def = NULL;
    json_int_t defv = 0;
    json_array_foreach (items, i, it) {
        if (strcmp(json_string_value(json_object_get(it, "kind")) ?: "", "PriorityClass"))
            continue;
        const char *name = json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));
        json_t *v = json_object_get(it, "value");
        if (!name || !json_is_integer(v))
            return util_errf(err, errlen, "snapshot items[%zu]: PriorityClass without a name or value", i);
        hashmap_put(s->prio, name, it);
        if (json_is_true(json_object_get(it, "globalDefault"))) {
            def = name;
            defv = json_integer_value(v);
        }
    }
    for (int j = 0; j < s->w->njobs; j++) {
        const sim_job_t *job = &s->w->jobs[j];
        for (int k = 0; k < job->npods; k++) {
            if (k > 0 && job->pods[k] == job->pods[k - 1])
                continue; /* a template's replicas share their object */
            json_t *spec = json_object_get(job->pods[k], "spec");
            const char *pc = json_string_value(json_object_get(spec, "priorityClassName"));
            if (pc) {
                json_t *c = hashmap_get(s->prio, pc);
                if (!c)
                    return util_errf(err, errlen, "job %s/%s: priorityClassName %s is not in the snapshot", job->ns,
                                     job->name, pc);
                json_object_set(spec, "priority", json_object_get(c, "value"));
            } else if (!json_object_get(spec, "priority") && def) {
                json_object_set_new(spec, "priorityClassName", json_string(def));
                json_object_set_new(spec, "priority", json_integer(defv));
            }
        }
    }
    return 0;
}

/* A job's pod or PodGroup named like an object of the snapshot would
 * overwrite it: refused, as the API server's AlreadyExists. */
static int check_names(sim_t *s, json_t *items, char *err, size_t errlen)
{
    size_t i;
    json_t *it;
    json_array_foreach (items, i, it) {
        const char *kind = json_string_value(json_object_get(it, "kind"));
        int pod = kind && !strcmp(kind, "Pod"), pg = kind && !strcmp(kind, "PodGroup");
        if (!pod && !pg)
            continue;
        json_t *meta = json_object_get(it, "metadata");
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        const char *name = json_string_value(json_object_get(meta, "name"));
        if (!name)
            continue;
        sbuf_t key = { 0 };
        sbuf_printf(&key, "%s/%s", ns ? ns : "default", name);
        int clash = 0;
        if (pod)
            clash = hashmap_get(s->by_key, key.data) != NULL;
        for (int j = 0; pg && !clash && j < s->w->njobs; j++) {
            const sim_job_t *jb = &s->w->jobs[j];
            clash = jb->podgroup && !strcmp(jb->ns, ns ? ns : "default") && !strcmp(jb->name, name);
        }
        if (clash) {
            util_errf(err, errlen, "%s %s of the workload already exists in the snapshot: rename the job",
                      pod ? "pod" : "PodGroup", key.data);
            sbuf_free(&key);
            return -1;
        }
        sbuf_free(&key);
    }
    return 0;
}

int sim_load(sim_t *s, json_t *snapshot, char *err, size_t errlen)
{
    json_t *items = json_object_get(snapshot, "items");
    if (!json_is_array(items))
        return util_errf(err, errlen, "snapshot: no items list");
    if (check_names(s, items, err, errlen) < 0 || load_pools(s, items, err, errlen) < 0 ||
        resolve_priorities(s, items, err, errlen) < 0)
        return -1;
    load_running(s, items);
    /* Each pod's requests, once (its pool is known when it binds). */
    for (int i = 0; i < s->npods; i++) {
        sim_pod_t *sp = &s->pods[i];
        json_t *obj = s->w->jobs[sp->job].pods[sp->idx];
        if (sp->idx > 0 && obj == s->w->jobs[sp->job].pods[sp->idx - 1]) {
            memcpy(sp->req, s->pods[i - 1].req, sizeof sp->req); /* a replica: same object */
            continue;
        }
        json_t *meta = json_object_get(obj, "metadata");
        json_object_set_new(meta, "uid", json_string("req"));
        char e[256];
        pod_t *p = pod_from_json(obj, e, sizeof e);
        json_object_del(meta, "uid");
        if (!p)
            return util_errf(err, errlen, "pod %s: %s", sp->key, e);
        pod_req(p, sp->req);
        pod_unref(p);
    }
    return 0;
}

/* ------------------------------------------------------------ events */

static void heap_push(sim_t *s, int64_t at, int pod, int gen)
{
    if (s->nheap == s->capheap) {
        s->capheap = s->capheap ? s->capheap * 2 : 1024;
        s->heap = util_xrealloc(s->heap, sizeof(*s->heap) * (size_t)s->capheap);
    }
    int i = s->nheap++;
    sim_finish_t e = { at, pod, gen };
    while (i > 0) {
        int up = (i - 1) / 2;
        sim_finish_t *u = &s->heap[up];
        if (u->at < at || (u->at == at && u->pod < pod))
            break;
        s->heap[i] = *u;
        i = up;
    }
    s->heap[i] = e;
}

static sim_finish_t heap_pop(sim_t *s)
{
    sim_finish_t top = s->heap[0], last = s->heap[--s->nheap];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= s->nheap)
            break;
        if (c + 1 < s->nheap && (s->heap[c + 1].at < s->heap[c].at ||
                                 (s->heap[c + 1].at == s->heap[c].at && s->heap[c + 1].pod < s->heap[c].pod)))
            c++;
        if (last.at < s->heap[c].at || (last.at == s->heap[c].at && last.pod < s->heap[c].pod))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->nheap > 0)
        s->heap[i] = last;
    return top;
}

void sim_on_action(void *sim, const sb_action_t *a)
{
    sim_t *s = sim;
    if (a->kind != SB_BIND && a->kind != SB_EVICT)
        return; /* FailedScheduling, nominations and reservation pods change no job */
    if (s->nacts == s->capacts) {
        s->capacts = s->capacts ? s->capacts * 2 : 256;
        s->acts = util_xrealloc(s->acts, sizeof(*s->acts) * (size_t)s->capacts);
    }
    sim_action_t *x = &s->acts[s->nacts++];
    sbuf_t key = { 0 };
    sbuf_printf(&key, "%s/%s", a->ns ? a->ns : "", a->name ? a->name : "");
    intptr_t v = (intptr_t)hashmap_get(s->by_key, key.data);
    x->kind = a->kind;
    x->pod = v ? (int)v - 1 : -1;
    x->key = key.data;
    x->uid = util_strdup(a->uid);
    x->node = util_strdup(a->node);
    x->reason = a->kind == SB_EVICT && a->reason ? util_strdup(a->reason) : NULL;
    x->at = a->at_ms;
}

static void pod_uid(const sim_t *s, int i, char *buf, size_t n)
{
    snprintf(buf, n, "sim-%d-%d-%d", s->pods[i].job, s->pods[i].idx, s->pods[i].gen);
}

/* One row of events.csv: time,action,pod,uid,node,reason. Names are DNS
 * names (no comma or quote); a reason is the scheduler's text, quoted. */
static void log_event(sim_t *s, const char *what, const sim_action_t *a)
{
    int64_t t = s->now - s->o.start_wall_ms;
    sbuf_printf(&s->events, "%lld.%03lld,%s,%s,%s,%s,", (long long)(t / 1000), (long long)(t % 1000), what, a->key,
                a->uid ? a->uid : "", a->node ? a->node : "");
    if (a->reason) {
        sbuf_puts(&s->events, "\"");
        for (const char *c = a->reason; *c; c++)
            sbuf_append(&s->events, *c == '"' ? "\"\"" : c, *c == '"' ? 2 : 1);
        sbuf_puts(&s->events, "\"");
    }
    sbuf_puts(&s->events, "\n");
}

static void on_bind(sim_t *s, const sim_action_t *a)
{
    char uid[64];
    sim_pod_t *p = &s->pods[a->pod];
    pod_uid(s, a->pod, uid, sizeof uid);
    if (p->state != POD_PENDING || strcmp(uid, a->uid))
        return; /* an older incarnation's */
    const sim_job_t *j = &s->w->jobs[p->job];
    sim_job_state_t *js = &s->js[p->job];
    int64_t at = a->at > s->now ? a->at : s->now;
    log_event(s, "bind", a);
    p->state = POD_RUNNING;
    free(p->node);
    p->node = util_strdup(a->node);
    p->pool = node_pool(s, a->node);
    p->finish_at = at + j->run_ms;
    p->bound_at = at;
    heap_push(s, p->finish_at, a->pod, p->gen);
    pool_use(s, p->pool, p->req, 1);
    s->running++;
    s->binds++;
    s->last_progress = s->now;
    if (++js->running >= j->min && !js->start_at)
        js->start_at = at;
}

/* An evicted pod is gone, running or pending (the Eviction API deletes a
 * pod that is not bound at once): it is counted and logged, and its
 * controller makes it again, pending; a running one gives its room back. */
static void on_evict(sim_t *s, const sim_action_t *a)
{
    if (a->pod < 0) {
        log_event(s, "evict", a);
        sim_pod_t *o = hashmap_remove(s->other_pods, a->key);
        if (o) {
            pool_use(s, o->pool, o->req, -1);
            free(o->node);
            free(o);
        }
        s->other_evictions++;
        return;
    }
    char uid[64];
    sim_pod_t *p = &s->pods[a->pod];
    pod_uid(s, a->pod, uid, sizeof uid);
    if ((p->state != POD_RUNNING && p->state != POD_PENDING) || strcmp(uid, a->uid))
        return; /* not created yet, finished, or an older incarnation's */
    log_event(s, "evict", a);
    int was_running = p->state == POD_RUNNING;
    if (was_running) {
        pool_use(s, p->pool, p->req, -1);
        s->running--;
        s->js[p->job].running--;
    }
    p->state = POD_PENDING;
    sim_job_state_t *js = &s->js[p->job];
    js->preempted++;
    if (js->last_evict_at != s->now || !js->evicted)
        js->evicted++;
    js->last_evict_at = s->now;
    /* A pending pod's eviction (it never ran) counts as a short one too. */
    if (!was_running || s->now - p->bound_at < SIM_SHORT_RUN_MS) {
        js->short_evictions++;
        s->short_evictions++;
    }
    s->evictions++;
    s->last_progress = s->now;
    if (s->nrecreate == s->caprecreate) {
        s->caprecreate = s->caprecreate ? s->caprecreate * 2 : 64;
        s->recreate = util_xrealloc(s->recreate, sizeof(int) * (size_t)s->caprecreate);
    }
    s->recreate[s->nrecreate++] = a->pod;
}

/* The actions recorded during the backend's last call, in their order. */
static void drain_actions(sim_t *s)
{
    for (int i = 0; i < s->nacts; i++) {
        sim_action_t *a = &s->acts[i];
        if (a->kind == SB_BIND && a->pod >= 0)
            on_bind(s, a);
        else if (a->kind == SB_EVICT)
            on_evict(s, a);
        free(a->key);
        free(a->uid);
        free(a->node);
        free(a->reason);
    }
    s->nacts = 0;
}

static int apply(sim_t *s, const char *type, json_t *obj, char *err, size_t errlen)
{
    char e[512];
    if (s->b.apply(s->b.ctx, type, obj, e, sizeof e) < 0) {
        json_t *m = json_object_get(obj, "metadata");
        return util_errf(err, errlen, "%s %s %s/%s refused: %s", type,
                         json_string_value(json_object_get(obj, "kind")) ?: "?",
                         json_string_value(json_object_get(m, "namespace")) ?: "",
                         json_string_value(json_object_get(m, "name")) ?: "?", e);
    }
    return 0;
}

/* A pod's current incarnation, as created now. Only the top level and the
 * metadata are copied: the spec is the template's, shared (the sandbox
 * copies what it changes, never the object it was given). */
static int create_pod(sim_t *s, int i, char *err, size_t errlen)
{
    sim_pod_t *p = &s->pods[i];
    const sim_job_t *j = &s->w->jobs[p->job];
    json_t *obj = json_copy(j->pods[p->idx]);
    json_t *meta = json_copy(json_object_get(obj, "metadata"));
    json_object_set_new(obj, "metadata", meta);
    char uid[64], ts[40], name[300];
    json_object_set_new(meta, "name", json_string(sim_pod_name(j, p->idx, name, sizeof name)));
    pod_uid(s, i, uid, sizeof uid);
    util_rfc3339(s->now, ts, sizeof ts);
    json_object_set_new(meta, "uid", json_string(uid));
    json_object_set_new(meta, "creationTimestamp", json_string(ts));
    json_object_set_new(meta, "resourceVersion", json_string("1"));
    p->state = POD_PENDING;
    int rc = apply(s, "ADDED", obj, err, errlen);
    json_decref(obj);
    return rc;
}

/* A pod gone from the copy: the object the copy has, else ours. */
static int delete_pod(sim_t *s, int i, char *err, size_t errlen)
{
    sim_pod_t *p = &s->pods[i];
    const sim_job_t *j = &s->w->jobs[p->job];
    char name[300];
    json_t *cur = s->b.get(s->b.ctx, "Pod", j->ns, sim_pod_name(j, p->idx, name, sizeof name));
    if (!cur)
        return 0;
    json_t *obj = json_incref(cur); /* borrowed from the copy, which drops it during the apply */
    int rc = apply(s, "DELETED", obj, err, errlen);
    json_decref(obj);
    return rc;
}

/* A finished job's PodGroup goes with it, as its operator deletes it (the
 * scheduler would otherwise tick it every second for the rest of the run). */
static int delete_podgroup(sim_t *s, int ji, char *err, size_t errlen)
{
    const sim_job_t *j = &s->w->jobs[ji];
    if (!j->podgroup)
        return 0;
    json_t *cur = s->b.get(s->b.ctx, "PodGroup", j->ns, j->name);
    if (!cur)
        return 0;
    json_t *obj = json_incref(cur);
    int rc = apply(s, "DELETED", obj, err, errlen);
    json_decref(obj);
    return rc;
}

static int do_finishes(sim_t *s, char *err, size_t errlen)
{
    while (s->nheap > 0 && s->heap[0].at <= s->now) {
        sim_finish_t f = heap_pop(s);
        sim_pod_t *p = &s->pods[f.pod];
        if (p->state != POD_RUNNING || p->gen != f.gen)
            continue; /* evicted since: its finish moved */
        if (delete_pod(s, f.pod, err, errlen) < 0)
            return -1;
        char uid[64];
        pod_uid(s, f.pod, uid, sizeof uid);
        sim_action_t fin = { .kind = SB_DELETE, .pod = f.pod, .key = p->key, .uid = uid, .node = p->node };
        log_event(s, "finish", &fin);
        p->state = POD_DONE;
        pool_use(s, p->pool, p->req, -1);
        s->running--;
        s->finishes++;
        s->last_progress = s->now;
        sim_job_state_t *js = &s->js[p->job];
        js->running--;
        if (++js->done == s->w->jobs[p->job].npods) {
            js->finish_at = s->now;
            if (delete_podgroup(s, p->job, err, errlen) < 0)
                return -1;
        }
    }
    return 0;
}

static int create_podgroup(sim_t *s, int ji, char *err, size_t errlen)
{
    json_t *pg = json_deep_copy(s->w->jobs[ji].podgroup);
    json_t *meta = json_object_get(pg, "metadata");
    char uid[64], ts[40];
    snprintf(uid, sizeof uid, "sim-pg-%d", ji);
    util_rfc3339(s->now, ts, sizeof ts);
    json_object_set_new(meta, "uid", json_string(uid));
    json_object_set_new(meta, "creationTimestamp", json_string(ts));
    json_object_set_new(meta, "resourceVersion", json_string("1"));
    int rc = apply(s, "ADDED", pg, err, errlen);
    json_decref(pg);
    return rc;
}

/* Pods due to be created by now; a job's PodGroup comes with its first pod. */
static int do_arrivals(sim_t *s, char *err, size_t errlen)
{
    while (s->next_create < s->npods && s->creates[s->next_create].at <= s->now) {
        int pi = s->creates[s->next_create++].pod;
        const sim_pod_t *p = &s->pods[pi];
        const sim_job_t *j = &s->w->jobs[p->job];
        if (p->idx == 0 && j->podgroup && create_podgroup(s, p->job, err, errlen) < 0)
            return -1;
        if (create_pod(s, pi, err, errlen) < 0)
            return -1;
        if (p->idx == j->npods - 1)
            s->arrivals_done++;
        s->last_progress = s->now;
    }
    return 0;
}

/* Evicted pods come back pending, new uid, as their controller makes them. */
static int do_recreations(sim_t *s, char *err, size_t errlen)
{
    int n = s->nrecreate;
    s->nrecreate = 0;
    for (int i = 0; i < n; i++) {
        int pi = s->recreate[i];
        if (delete_pod(s, pi, err, errlen) < 0)
            return -1;
        s->pods[pi].gen++;
        if (create_pod(s, pi, err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ samples */

static void on_queue(void *ud, const char *queue, const char *pool, const double alloc[3], const double fair[3],
                     int pending)
{
    sim_t *s = ud;
    char key[400];
    snprintf(key, sizeof key, "%s\t%s", queue, pool);
    intptr_t v = (intptr_t)hashmap_get(s->queue_idx, key);
    if (!v) {
        s->queues = util_xrealloc(s->queues, sizeof(*s->queues) * (size_t)(s->nqueues + 1));
        sim_series_init(&s->queues[s->nqueues], queue, pool, 7, 1);
        v = ++s->nqueues;
        hashmap_put(s->queue_idx, key, (void *)v);
    }
    double vals[7] = { alloc[0], alloc[1], alloc[2], fair[0], fair[1], fair[2], (double)pending };
    sim_series_add(&s->queues[v - 1], s->now - s->o.start_wall_ms, vals, 0, s->o.max_samples);
}

static void sample(sim_t *s, int force)
{
    int64_t t = s->now - s->o.start_wall_ms;
    for (int i = 0; i < s->npools; i++)
        sim_series_add(&s->pools[i].series, t, s->pools[i].used, force, s->o.max_samples);
    if (s->b.each_queue)
        s->b.each_queue(s->b.ctx, on_queue, s);
}

/* ------------------------------------------------------------ loop */

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* One instant: finishes free room first, then arrivals in file order, then
 * the controllers' replacements; the scheduler runs after each. */
static int step(sim_t *s, char *err, size_t errlen)
{
    if (do_finishes(s, err, errlen) < 0 || do_arrivals(s, err, errlen) < 0)
        return -1;
    for (int rounds = 0;; rounds++) {
        s->b.run(s->b.ctx);
        drain_actions(s);
        if (do_finishes(s, err, errlen) < 0) /* a 0-length run cannot happen, but a bind at now + 0 would */
            return -1;
        if (!s->nrecreate)
            break;
        if (do_recreations(s, err, errlen) < 0)
            return -1;
    }
    sample(s, 0);
    return 0;
}

int sim_run(sim_t *s, char *err, size_t errlen)
{
    int64_t until = s->o.until_ms > 0 ? s->o.start_wall_ms + s->o.until_ms : SIM_INF;
    s->ran = 1;
    drain_actions(s); /* what loading the snapshot did */
    sample(s, 1);
    if (step(s, err, errlen) < 0)
        return -1;
    for (;;) {
        int64_t t_arr = s->next_create < s->npods ? s->creates[s->next_create].at : SIM_INF;
        int64_t t_fin = s->nheap ? s->heap[0].at : SIM_INF;
        int64_t t_due = s->b.next_due(s->b.ctx);
        if (t_due <= 0)
            t_due = SIM_INF;
        else if (t_due <= s->now)
            t_due = s->now + 1; /* due already: the next advance runs it */
        int64_t next = min64(min64(t_arr, t_fin), t_due);
        int idle = s->running == 0 && t_arr == SIM_INF;
        if (next == SIM_INF || (idle && next - s->last_progress > s->o.idle_ms))
            break; /* nothing can ever start, or nothing did for idle_ms */
        if (next > until) {
            s->now = until;
            s->b.advance(s->b.ctx, until);
            drain_actions(s);
            break;
        }
        s->b.advance(s->b.ctx, next);
        s->now = next;
        drain_actions(s);
        if (step(s, err, errlen) < 0)
            return -1;
    }
    /* The end is the last thing that happened (not the idle wait after it),
     * unless --until cut the run. */
    s->end_at = until != SIM_INF && s->now >= until ? until : s->last_progress;
    if (s->end_at < s->o.start_wall_ms)
        s->end_at = s->o.start_wall_ms;
    int64_t keep = s->now;
    s->now = s->end_at;
    for (int i = 0; i < s->npools; i++)
        pool_use(s, i, s->pools[i].used, 0); /* closes each pool's area at the end */
    sample(s, 1);
    s->now = keep;
    return 0;
}
