/* fairshare.c -- Queue objects, the hierarchy, per-pool accounting, fair
 * share by water-filling, decayed usage, admission and reclaim rules. */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api/labels.h"
#include "api/quantity.h"
#include "api/resources.h"
#include "fairshare/fairshare.h"
#include "gpu/gpu.h"
#include "util/hashmap.h"
#include "util/jsonnum.h"
#include "util/util.h"
#include "util/lockorder.h"

const char *const fs_res_names[FS_NRES] = { "gpu", "cpu", "memory" };

/* A dominant-share ratio counts GPU fully and CPU and memory at half: a
 * queue's GPU position decides its order unless it is far further over
 * its CPU or memory share. */
static const double RATIO_WEIGHT[FS_NRES] = { 1.0, 0.5, 0.5 };
#define FS_EPS 1e-9
/* Ratio of a queue that uses what it has no share of. */
#define FS_RATIO_OVER 1e9

/* ------------------------------------------------------------ parsing */

static double num_field(json_t *v, int is_memory, int is_cpu, int *bad)
{
    if (!v || json_is_null(v))
        return -1;
    if (json_is_number(v)) {
        double d = json_number_value(v);
        if (!isfinite(d) || d > 1e15 || d < -1e15)
            *bad = 1;
        return d;
    }
    if (json_is_string(v)) {
        /* A Kubernetes quantity ("8Gi", "500m", "2") in place of KAI's
         * numbers: converted to KAI units. */
        int64_t q = 0;
        char e[100];
        if (quantity_parse(json_string_value(v), is_cpu ? 3 : 0, &q, e, sizeof(e)) != 0) {
            *bad = 1;
            return -1;
        }
        return is_memory ? (double)q / 1e6 : (double)q;
    }
    *bad = 1;
    return -1;
}

/* {gpu:{quota,overQuotaWeight,limit},cpu:...,memory:...}; why on error. */
static int parse_res(json_t *res, fs_res_t out[FS_NRES], const char *where, char *why, size_t len)
{
    for (int r = 0; r < FS_NRES; r++)
        out[r] = (fs_res_t){ -1, -1, -1 };
    if (!res || json_is_null(res))
        return 0;
    if (!json_is_object(res)) {
        snprintf(why, len, "%s is not an object", where);
        return -1;
    }
    for (int r = 0; r < FS_NRES; r++) {
        json_t *o = json_object_get(res, fs_res_names[r]);
        if (!o || json_is_null(o))
            continue;
        if (!json_is_object(o)) {
            snprintf(why, len, "%s.%s is not an object", where, fs_res_names[r]);
            return -1;
        }
        int bad = 0;
        out[r].quota = num_field(json_object_get(o, "quota"), r == FS_MEM, r == FS_CPU, &bad);
        out[r].weight = num_field(json_object_get(o, "overQuotaWeight"), 0, 0, &bad);
        out[r].limit = num_field(json_object_get(o, "limit"), r == FS_MEM, r == FS_CPU, &bad);
        if (bad) {
            snprintf(why, len, "%s.%s: a value is not a number", where, fs_res_names[r]);
            return -1;
        }
        /* -1 means unset, as KAI; any other negative is an error. */
        if ((out[r].quota < 0 && out[r].quota != -1 && json_object_get(o, "quota")) ||
            (out[r].limit < 0 && out[r].limit != -1 && json_object_get(o, "limit"))) {
            snprintf(why, len, "%s.%s: a negative quota or limit (only -1, meaning none, is allowed)", where,
                     fs_res_names[r]);
            return -1;
        }
        if (out[r].weight < 0 && json_object_get(o, "overQuotaWeight") && out[r].weight != -1) {
            snprintf(why, len, "%s.%s.overQuotaWeight is negative", where, fs_res_names[r]);
            return -1;
        }
        if (out[r].limit >= 0 && out[r].quota > out[r].limit) {
            snprintf(why, len, "%s.%s: limit %g is below quota %g", where, fs_res_names[r], out[r].limit, out[r].quota);
            return -1;
        }
    }
    return 0;
}

/* A duration field of the spec (KAI-Scheduler's "10m"; never_ok: "-1"
 * too), left DURATION_UNSET when absent. */
static int parse_runtime(json_t *spec, const char *key, int never_ok, int64_t *out, char *why, size_t len)
{
    json_t *v = json_object_get(spec, key);
    if (!v || json_is_null(v))
        return 0;
    const char *str = json_string_value(v);
    int64_t ms;
    if (!str || util_parse_min_runtime(str, &ms) != 0 || (ms < 0 && !never_ok)) {
        snprintf(why, len, "spec.%s is not a duration such as \"10m\"%s", key, never_ok ? ", \"0\" or \"-1\"" : "");
        return -1;
    }
    *out = ms;
    return 0;
}

static void parse_spec(fs_queue_spec_t *q, json_t *spec, char *why, size_t len)
{
    if (!spec || json_is_null(spec))
        return;
    if (!json_is_object(spec)) {
        snprintf(why, len, "spec is not an object");
        return;
    }
    json_t *parent = json_object_get(spec, "parentQueue");
    if (parent && !json_is_null(parent)) {
        if (!json_is_string(parent) || strlen(json_string_value(parent)) > 253) {
            snprintf(why, len, "spec.parentQueue is not a queue name");
            return;
        }
        if (json_string_value(parent)[0])
            q->parent = util_strdup(json_string_value(parent));
    }
    json_t *prio = json_object_get(spec, "priority");
    if (prio && !json_is_null(prio)) {
        if (!json_is_integer(prio) || json_integer_value(prio) > INT32_MAX || json_integer_value(prio) < INT32_MIN) {
            snprintf(why, len, "spec.priority is not a 32-bit integer");
            return;
        }
        q->priority = json_integer_value(prio);
    }
    if (parse_res(json_object_get(spec, "resources"), q->res, "spec.resources", why, len) != 0)
        return;
    json_t *pools = json_object_get(spec, "pools");
    if (pools && !json_is_null(pools)) {
        if (!json_is_object(pools) || json_object_size(pools) > 256) {
            snprintf(why, len, "spec.pools is not a map of pool names");
            return;
        }
        q->pools = util_xcalloc(json_object_size(pools) + 1, sizeof(*q->pools));
        const char *k;
        json_t *v;
        json_object_foreach (pools, k, v) {
            fs_pool_res_t *pr = &q->pools[q->npools++];
            pr->pool = util_strdup(k);
            char where[300];
            snprintf(where, sizeof(where), "spec.pools.%.200s.resources", k);
            if (!json_is_object(v) || parse_res(json_object_get(v, "resources"), pr->res, where, why, len) != 0) {
                if (!why[0])
                    snprintf(why, len, "spec.pools.%.200s is not an object", k);
                return;
            }
        }
    }
    if (parse_runtime(spec, "preemptMinRuntime", 1, &q->preempt_min_runtime_ms, why, len) != 0 ||
        parse_runtime(spec, "reclaimMinRuntime", 1, &q->reclaim_min_runtime_ms, why, len) != 0 ||
        parse_runtime(spec, "checkpointGrace", 0, &q->checkpoint_grace_ms, why, len) != 0)
        return;
    json_t *eb = json_object_get(spec, "excessBudget");
    if (eb && !json_is_null(eb)) {
        if (!json_is_object(eb)) {
            snprintf(why, len, "spec.excessBudget is not an object");
            return;
        }
        for (int r = 0; r < FS_NRES; r++) {
            int bad = 0;
            q->excess_budget[r] = num_field(json_object_get(eb, fs_res_names[r]), 0, 0, &bad);
            if (bad || (q->excess_budget[r] < 0 && json_object_get(eb, fs_res_names[r]))) {
                snprintf(why, len, "spec.excessBudget.%s is not a non-negative number", fs_res_names[r]);
                return;
            }
        }
    }
}

fs_queue_spec_t *fs_queue_from_json(json_t *obj, char *err, size_t errlen)
{
    json_t *meta = json_is_object(obj) ? json_object_get(obj, "metadata") : NULL;
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    if (!name || !name[0] || strlen(name) > 253) {
        util_errf(err, errlen, "not a Queue: no metadata.name");
        return NULL;
    }
    fs_queue_spec_t *q = util_xcalloc(1, sizeof(*q));
    q->name = util_strdup(name);
    q->uid = util_strdup(uid ? uid : "");
    for (int r = 0; r < FS_NRES; r++) {
        q->res[r] = (fs_res_t){ -1, -1, -1 };
        q->excess_budget[r] = -1;
    }
    q->preempt_min_runtime_ms = q->reclaim_min_runtime_ms = q->checkpoint_grace_ms = DURATION_UNSET;
    char why[400] = "";
    json_t *spec = json_object_get(obj, "spec");
    q->spec_json = spec ? json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_t *status = json_object_get(obj, "status");
    if (json_is_object(status)) {
        json_t *st = json_pack("{s:O}", "status", status);
        q->status_json = json_dumps(st, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(st);
    }
    parse_spec(q, spec, why, sizeof(why));
    if (!why[0] && q->parent && strcmp(q->parent, q->name) == 0)
        snprintf(why, sizeof(why), "spec.parentQueue names the queue itself");
    if (why[0])
        q->invalid = util_strdup(why);
    return q;
}

void fs_queue_spec_free(fs_queue_spec_t *q)
{
    if (!q)
        return;
    free(q->name);
    free(q->uid);
    free(q->parent);
    for (int i = 0; i < q->npools; i++)
        free(q->pools[i].pool);
    free(q->pools);
    free(q->invalid);
    free(q->spec_json);
    free(q->status_json);
    free(q);
}

void fs_res_vec(const resources_t *r, double v[FS_NRES])
{
    v[FS_GPU] = (double)res_get_scalar(r, RES_GPU);
    v[FS_CPU] = (double)r->milli_cpu;
    v[FS_MEM] = (double)r->memory / 1e6;
}

void fs_pod_vec(const pod_t *p, double v[FS_NRES])
{
    fs_res_vec(&p->requests, v);
    v[FS_GPU] += gpu_share(p, 0);
}

const char *fs_pod_queue_label(const pod_t *p)
{
    const char *q = labels_get(&p->labels, FS_QUEUE_LABEL);
    if (!q || !q[0])
        q = labels_get(&p->labels, FS_KAI_QUEUE_LABEL);
    return q && q[0] ? q : NULL;
}

/* -------------------------------------------------------------- store */

typedef struct fs_node {
    char *name;
    fs_queue_spec_t *spec; /* NULL: no Queue object */
    int valid;
    char *why;  /* why invalid (owned) */
    char *said; /* the invalid message last announced (owned) */
    int parent; /* -1: top level */
    int *kids;  /* valid children */
    int nkids;
    unsigned long reclaims, reclaimed;
    char *last_status;  /* body last handed out for this object */
    int object_name;    /* a Queue object has (had) this name */
    int64_t written_ms; /* when last_status was handed out */
    /* The status body last serialized and the raw figures it was made of
     * (status_key): a tick whose figures did not change reuses the body. */
    sbuf_t st_key;
    char *st_body;
} fs_node_t;

/* One queue id in one pool. Raw figures count the pods charged to this
 * id; a_* sum the raw figures of every id that resolves into this queue's
 * subtree. */
typedef struct fs_pq {
    double alloc[FS_NRES], np[FS_NRES], pend[FS_NRES], flow[FS_NRES], excess[FS_NRES];
    double leave[FS_NRES], leave_np[FS_NRES]; /* leaving charges (fs_leave): limits and quotas only */
    int npend;
    double a_alloc[FS_NRES], a_np[FS_NRES], a_pend[FS_NRES], a_flow[FS_NRES], a_excess[FS_NRES];
    double a_leave[FS_NRES], a_leave_np[FS_NRES];
    int a_npend;
    double fair[FS_NRES];
} fs_pq_t;

typedef struct fs_pool {
    int used;
    char *name;
    double cap[FS_NRES];
    fs_pq_t *q;
    int nq;
    int64_t flow_ms; /* last decay step (monotonic) */
} fs_pool_t;

typedef struct fs_chg {
    int tid, pool;
    double v[FS_NRES];
    int preemptible;
    int32_t prio;
    int64_t created_ms, started_ms; /* wall */
    int64_t lifetime_s;
    int held;    /* fs_charge_held: holds room, does not run (no victim) */
    int leaving; /* its pod is a victim on its way out (fs_leave) */
    double dev;  /* the GPUs its DRA claims counted for (in v[FS_GPU]) */
} fs_chg_t;

struct fs_store {
    pthread_mutex_t mu;
    fs_opts_t o;
    fs_node_t *n;
    int nn, capn;
    hashmap_t *by_name; /* name -> (void *)(id + 1) */
    int *eff;           /* id -> the queue its pods count in */
    int nobjects;
    int nobject_names; /* ids interned for Queue objects' names */
    fs_pool_t *pools;
    int npools;
    hashmap_t *charges; /* uid -> fs_chg_t */
    hashmap_t *leaving; /* uid -> (void *)1: victims on their way out (fs_leave), charged or not */
    int nlifetime;      /* charges with a lifetime */
    int nminrt;         /* Queue specs setting a minimum runtime (atomic reads: fs_any_min_runtime) */
    int64_t excess_ms;  /* last excess-budget step (wall) */
};

/* object: the name of a Queue object. Names only pods carry are bounded
 * (FS_MAX_NAMES of them, a label is anyone's to write); a Queue object's
 * name always gets an id (up to FS_MAX_OBJECT_NAMES), so labels never
 * lock a later Queue out. */
static int intern_locked(fs_store_t *fs, const char *name, int object)
{
    if (!name || !name[0])
        return FS_DEFAULT_ID;
    void *v = hashmap_get(fs->by_name, name);
    if (v)
        return (int)((intptr_t)v - 1);
    if (strlen(name) > 253 || fs->nn >= FS_MAX_NAMES + FS_MAX_OBJECT_NAMES)
        return FS_DEFAULT_ID;
    if (!object && fs->nn - fs->nobject_names >= FS_MAX_NAMES)
        return FS_DEFAULT_ID;
    if (fs->nn == fs->capn) {
        fs->capn = fs->capn ? fs->capn * 2 : 16;
        fs->n = util_xrealloc(fs->n, (size_t)fs->capn * sizeof(*fs->n));
        fs->eff = util_xrealloc(fs->eff, (size_t)fs->capn * sizeof(*fs->eff));
    }
    int id = fs->nn++;
    memset(&fs->n[id], 0, sizeof(fs->n[id]));
    fs->n[id].name = util_strdup(name);
    fs->n[id].parent = -1;
    fs->eff[id] = FS_DEFAULT_ID; /* a name without a Queue counts in default */
    fs->n[id].object_name = object;
    fs->nobject_names += object;
    hashmap_put(fs->by_name, fs->n[id].name, (void *)(intptr_t)(id + 1));
    return id;
}

void fs_store_pod_vec(fs_store_t *fs, const pod_t *p, double v[FS_NRES])
{
    fs_pod_vec(p, v);
    if (fs->o.pod_devices)
        v[FS_GPU] += fs->o.pod_devices(fs->o.pod_devices_ud, p);
}

fs_store_t *fs_store_new(const fs_opts_t *o)
{
    fs_store_t *fs = util_xcalloc(1, sizeof(*fs));
    if (o)
        fs->o = *o;
    else
        fs->o = (fs_opts_t){ .starvation_age_s = 600, .non_preemptible_priority = 100 };
    pthread_mutex_init(&fs->mu, NULL);
    fs->by_name = hashmap_new(32);
    fs->charges = hashmap_new(1024);
    fs->leaving = hashmap_new(64);
    int d = intern_locked(fs, FS_DEFAULT_QUEUE, 1);
    fs->n[d].valid = 1;
    return fs;
}

void fs_store_free(fs_store_t *fs)
{
    if (!fs)
        return;
    for (int i = 0; i < fs->nn; i++) {
        fs_node_t *n = &fs->n[i];
        free(n->name);
        fs_queue_spec_free(n->spec);
        free(n->why);
        free(n->said);
        free(n->kids);
        free(n->last_status);
        sbuf_free(&n->st_key);
        free(n->st_body);
    }
    free(fs->n);
    free(fs->eff);
    hashmap_free(fs->by_name);
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(fs->charges, &it, &k, &v);)
        free(v);
    hashmap_free(fs->charges);
    hashmap_free(fs->leaving);
    for (int i = 0; i < fs->npools; i++) {
        free(fs->pools[i].name);
        free(fs->pools[i].q);
    }
    free(fs->pools);
    pthread_mutex_destroy(&fs->mu);
    free(fs);
}

/* The pool's per-id table, grown to every interned id. */
static fs_pool_t *pool_at(fs_store_t *fs, int pool)
{
    if (pool < 0 || pool > 100000)
        return NULL;
    if (pool >= fs->npools) {
        fs->pools = util_xrealloc(fs->pools, (size_t)(pool + 1) * sizeof(*fs->pools));
        memset(fs->pools + fs->npools, 0, (size_t)(pool + 1 - fs->npools) * sizeof(*fs->pools));
        fs->npools = pool + 1;
    }
    fs_pool_t *P = &fs->pools[pool];
    P->used = 1;
    if (P->nq < fs->nn) {
        int cap = fs->capn > fs->nn ? fs->capn : fs->nn;
        P->q = util_xrealloc(P->q, (size_t)cap * sizeof(*P->q));
        memset(P->q + P->nq, 0, (size_t)(cap - P->nq) * sizeof(*P->q));
        P->nq = cap;
    }
    return P;
}

/* --------------------------------------------------------- hierarchy */

static void set_invalid(fs_node_t *n, const char *why)
{
    n->valid = 0;
    if (!n->why)
        n->why = util_strdup(why);
}

/* Sums the raw figures of every pool into the a_* aggregates. */
static void aggregate_pool(fs_store_t *fs, fs_pool_t *P)
{
    for (int i = 0; i < P->nq && i < fs->nn; i++) {
        fs_pq_t *q = &P->q[i];
        memset(q->a_alloc, 0, sizeof(q->a_alloc));
        memset(q->a_np, 0, sizeof(q->a_np));
        memset(q->a_leave, 0, sizeof(q->a_leave));
        memset(q->a_leave_np, 0, sizeof(q->a_leave_np));
        memset(q->a_pend, 0, sizeof(q->a_pend));
        memset(q->a_flow, 0, sizeof(q->a_flow));
        memset(q->a_excess, 0, sizeof(q->a_excess));
        q->a_npend = 0;
    }
    for (int i = 0; i < fs->nn && i < P->nq; i++) {
        fs_pq_t *src = &P->q[i];
        for (int a = fs->eff[i], guard = 0; a >= 0 && guard <= fs->nn; a = fs->n[a].parent, guard++) {
            fs_pq_t *dst = &P->q[a];
            for (int r = 0; r < FS_NRES; r++) {
                dst->a_alloc[r] += src->alloc[r];
                dst->a_np[r] += src->np[r];
                dst->a_leave[r] += src->leave[r];
                dst->a_leave_np[r] += src->leave_np[r];
                dst->a_pend[r] += src->pend[r];
                dst->a_flow[r] += src->flow[r];
                dst->a_excess[r] += src->excess[r];
            }
            dst->a_npend += src->npend;
        }
    }
}

/* Validates the hierarchy, lists valid children, resolves each id to the
 * queue its pods count in, and re-sums every pool. */
static void rebuild_locked(fs_store_t *fs)
{
    for (int i = 0; i < fs->nn; i++) {
        fs_node_t *n = &fs->n[i];
        free(n->why);
        n->why = NULL;
        free(n->kids);
        n->kids = NULL;
        n->nkids = 0;
        n->parent = -1;
        n->valid = n->spec != NULL;
        if (n->spec && n->spec->invalid)
            set_invalid(n, n->spec->invalid);
    }
    fs->n[FS_DEFAULT_ID].valid = 1; /* the implicit one, when its object is bad */
    int nn0 = fs->nn;
    for (int i = 0; i < nn0; i++) {
        fs_node_t *n = &fs->n[i];
        if (!n->spec || !n->valid || !n->spec->parent)
            continue;
        int p = intern_locked(fs, n->spec->parent, 1);
        n = &fs->n[i]; /* interning may move the array */
        char why[400];
        if (p == FS_DEFAULT_ID) {
            snprintf(why, sizeof(why), "parentQueue \"%.200s\": the default queue cannot have children",
                     n->spec->parent);
            set_invalid(n, why);
        } else if (!fs->n[p].spec) {
            snprintf(why, sizeof(why), "parentQueue \"%.200s\" does not exist", n->spec->parent);
            set_invalid(n, why);
        } else {
            n->parent = p;
        }
    }
    /* Cycles: a walk up that takes more steps than there are queues. */
    for (int i = 0; i < fs->nn; i++) {
        int steps = 0, a = i;
        while (a >= 0 && steps <= fs->nn) {
            a = fs->n[a].parent;
            steps++;
        }
        if (a >= 0) {
            char why[400];
            snprintf(why, sizeof(why), "parentQueue cycle through \"%.200s\"", fs->n[i].name);
            set_invalid(&fs->n[i], why);
        }
    }
    for (int i = 0; i < fs->nn; i++)
        if (fs->n[i].why && strstr(fs->n[i].why, "cycle"))
            fs->n[i].parent = -1; /* cut it so every later walk ends */
    /* An invalid ancestor makes the subtree invalid. */
    for (int changed = 1, rounds = 0; changed && rounds <= fs->nn; rounds++) {
        changed = 0;
        for (int i = 0; i < fs->nn; i++) {
            fs_node_t *n = &fs->n[i];
            if (n->valid && n->parent >= 0 && !fs->n[n->parent].valid) {
                char why[400];
                snprintf(why, sizeof(why), "parentQueue \"%.200s\" is invalid", fs->n[n->parent].name);
                set_invalid(n, why);
                changed = 1;
            }
        }
    }
    for (int i = 0; i < fs->nn; i++) {
        fs_node_t *n = &fs->n[i];
        if (!n->valid || n->parent < 0)
            continue;
        fs_node_t *p = &fs->n[n->parent];
        p->kids = util_xrealloc(p->kids, (size_t)(p->nkids + 1) * sizeof(int));
        p->kids[p->nkids++] = i;
    }
    for (int i = 0; i < fs->nn; i++)
        fs->eff[i] = fs->n[i].valid && fs->n[i].nkids == 0 ? i : FS_DEFAULT_ID;
    for (int p = 0; p < fs->npools; p++)
        if (fs->pools[p].used)
            aggregate_pool(fs, pool_at(fs, p));
}

static void minrt_count(fs_store_t *fs, const fs_queue_spec_t *q, int sign)
{
    if (q && (q->preempt_min_runtime_ms != DURATION_UNSET || q->reclaim_min_runtime_ms != DURATION_UNSET))
        __atomic_add_fetch(&fs->nminrt, sign, __ATOMIC_RELEASE);
}

int fs_any_min_runtime(fs_store_t *fs)
{
    return __atomic_load_n(&fs->nminrt, __ATOMIC_ACQUIRE) > 0;
}

int fs_queue_upsert(fs_store_t *fs, fs_queue_spec_t *q)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    int id = intern_locked(fs, q->name, 1);
    if (id == FS_DEFAULT_ID && strcmp(q->name, FS_DEFAULT_QUEUE) != 0) {
        /* Past FS_MAX_OBJECT_NAMES Queue objects, or a name too long. */
        lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
        fs_queue_spec_free(q);
        return 0;
    }
    fs_node_t *n = &fs->n[id];
    if (!n->object_name) { /* first seen on a pod: now a Queue's name */
        n->object_name = 1;
        fs->nobject_names++;
    }
    if (n->spec && strcmp(n->spec->uid, q->uid) == 0 &&
        strcmp(n->spec->spec_json ? n->spec->spec_json : "", q->spec_json ? q->spec_json : "") == 0) {
        /* our own status write, come back: what the API shows now */
        free(n->spec->status_json);
        n->spec->status_json = q->status_json;
        q->status_json = NULL;
        lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
        fs_queue_spec_free(q);
        return 0;
    }
    if (!n->spec)
        fs->nobjects++;
    if (n->spec && n->spec->uid && q->uid && strcmp(n->spec->uid, q->uid) != 0) {
        free(n->last_status); /* a new object: its status is empty */
        n->last_status = NULL;
        free(n->said);
        n->said = NULL;
    }
    minrt_count(fs, n->spec, -1);
    minrt_count(fs, q, +1);
    fs_queue_spec_free(n->spec);
    n->spec = q;
    rebuild_locked(fs);
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return 1;
}

void fs_queue_delete(fs_store_t *fs, const char *name)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    void *v = hashmap_get(fs->by_name, name);
    if (v) {
        fs_node_t *n = &fs->n[(intptr_t)v - 1];
        if (n->spec)
            fs->nobjects--;
        minrt_count(fs, n->spec, -1);
        fs_queue_spec_free(n->spec);
        n->spec = NULL;
        free(n->last_status);
        n->last_status = NULL;
        free(n->said);
        n->said = NULL;
        rebuild_locked(fs);
    }
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
}

int fs_active(fs_store_t *fs)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    int a = fs->nobjects > 0;
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return a;
}

int fs_tenant_id(fs_store_t *fs, const char *name)
{
    if (!name || !name[0])
        return FS_DEFAULT_ID;
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    int id = intern_locked(fs, name, 0);
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return id;
}

char *fs_fallback_message(fs_store_t *fs, int tenant)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    char *msg = NULL;
    if (tenant > 0 && tenant < fs->nn && fs->eff[tenant] != tenant) {
        const fs_node_t *n = &fs->n[tenant];
        sbuf_t b = { 0 };
        if (!n->spec)
            sbuf_printf(&b, "queue \"%s\" does not exist", n->name);
        else if (!n->valid)
            sbuf_printf(&b, "queue \"%s\" is invalid (%s)", n->name, n->why ? n->why : "?");
        else
            sbuf_printf(&b, "queue \"%s\" has child queues; pods belong in leaf queues", n->name);
        sbuf_printf(&b, "; using queue \"%s\"", FS_DEFAULT_QUEUE);
        msg = b.data;
    }
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return msg;
}

int fs_pod_preemptible(fs_store_t *fs, const pod_t *p)
{
    const char *l = labels_get(&p->labels, FS_PREEMPTIBLE_LABEL);
    if (l && strcmp(l, "false") == 0)
        return 0;
    if (l && strcmp(l, "true") == 0)
        return 1;
    return p->priority < fs->o.non_preemptible_priority;
}

/* ---------------------------------------------------------- accounting */

/* A charge counts in alloc (shares, reclaim, limits) while its pod stays,
 * in leave (limits and quotas only) while it is a victim on its way out. */
static void apply_charge(fs_store_t *fs, const fs_chg_t *c, double sign)
{
    fs_pool_t *P = pool_at(fs, c->pool);
    if (!P || c->tid >= P->nq)
        return;
    fs_pq_t *raw = &P->q[c->tid];
    double *all = c->leaving ? raw->leave : raw->alloc, *np = c->leaving ? raw->leave_np : raw->np;
    for (int r = 0; r < FS_NRES; r++) {
        all[r] += sign * c->v[r];
        if (!c->preemptible)
            np[r] += sign * c->v[r];
    }
    for (int a = fs->eff[c->tid], guard = 0; a >= 0 && guard <= fs->nn; a = fs->n[a].parent, guard++) {
        fs_pq_t *x = &P->q[a];
        double *a_all = c->leaving ? x->a_leave : x->a_alloc, *a_np = c->leaving ? x->a_leave_np : x->a_np;
        for (int r = 0; r < FS_NRES; r++) {
            a_all[r] += sign * c->v[r];
            if (!c->preemptible)
                a_np[r] += sign * c->v[r];
        }
    }
}

void fs_refresh_devices(fs_store_t *fs, const pod_t *p)
{
    if (!fs->o.pod_devices)
        return;
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    fs_chg_t *c = hashmap_get(fs->charges, p->uid);
    double now = c ? fs->o.pod_devices(fs->o.pod_devices_ud, p) : 0;
    if (c && now != c->dev) {
        apply_charge(fs, c, -1);
        c->v[FS_GPU] += now - c->dev;
        c->dev = now;
        apply_charge(fs, c, +1);
    }
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
}

static int64_t lifetime_of(const pod_t *p)
{
    return p->lifetime_s > 0 ? p->lifetime_s : 0;
}

static void uncharge_locked(fs_store_t *fs, const char *uid)
{
    fs_chg_t *old = hashmap_remove(fs->charges, uid);
    if (old) {
        apply_charge(fs, old, -1);
        if (old->lifetime_s > 0)
            fs->nlifetime--;
        free(old);
    }
}

int fs_is_charged(fs_store_t *fs, const char *uid)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    int yes = hashmap_get(fs->charges, uid) != NULL;
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return yes;
}

void fs_uncharge(fs_store_t *fs, const char *uid)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    uncharge_locked(fs, uid);
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
}

void fs_forget(fs_store_t *fs, const char *uid)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    uncharge_locked(fs, uid);
    hashmap_remove(fs->leaving, uid);
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
}

/* Moves uid's charge, if any, between alloc and leave. fs->mu held. */
static void set_leaving_locked(fs_store_t *fs, const char *uid, int leaving)
{
    fs_chg_t *c = hashmap_get(fs->charges, uid);
    if (!c || c->leaving == leaving)
        return;
    apply_charge(fs, c, -1);
    c->leaving = leaving;
    apply_charge(fs, c, +1);
}

void fs_leave(fs_store_t *fs, const char *uid)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    if (!hashmap_get(fs->leaving, uid))
        hashmap_put(fs->leaving, uid, (void *)1);
    set_leaving_locked(fs, uid, 1);
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
}

void fs_stay(fs_store_t *fs, const char *uid)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    hashmap_remove(fs->leaving, uid);
    set_leaving_locked(fs, uid, 0);
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
}

static void charge(fs_store_t *fs, const pod_t *p, int tenant, int pool, int64_t gpu_mem_mib, int sign, int held)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    uncharge_locked(fs, p->uid);
    if (sign > 0 && tenant >= 0 && tenant < fs->nn) {
        fs_chg_t *c = util_xcalloc(1, sizeof(*c));
        c->tid = tenant;
        c->pool = pool;
        fs_pod_vec(p, c->v);
        c->dev = fs->o.pod_devices ? fs->o.pod_devices(fs->o.pod_devices_ud, p) : 0;
        c->v[FS_GPU] += c->dev;
        c->v[FS_GPU] += gpu_share(p, gpu_mem_mib) - gpu_share(p, 0);
        c->preemptible = fs_pod_preemptible(fs, p);
        c->prio = p->priority;
        c->created_ms = p->created_ms;
        c->started_ms = p->started_ms ? p->started_ms : util_wall_ms();
        c->lifetime_s = lifetime_of(p);
        c->held = held;
        /* A victim's pod updated on its way out (its checkpoint asked, its
         * deletion begun) is charged again as leaving. */
        c->leaving = !held && hashmap_get(fs->leaving, p->uid) != NULL;
        if (c->lifetime_s > 0)
            fs->nlifetime++;
        hashmap_put(fs->charges, p->uid, c);
        apply_charge(fs, c, +1);
    }
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
}

void fs_charge(fs_store_t *fs, const pod_t *p, int tenant, int pool, int64_t gpu_mem_mib, int sign)
{
    charge(fs, p, tenant, pool, gpu_mem_mib, sign, 0);
}

void fs_charge_held(fs_store_t *fs, const pod_t *p, int tenant, int pool, int64_t gpu_mem_mib)
{
    charge(fs, p, tenant, pool, gpu_mem_mib, +1, 1);
}

void fs_set_pool(fs_store_t *fs, int pool, const char *name, const double cap[FS_NRES])
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    fs_pool_t *P = pool_at(fs, pool);
    if (P) {
        if (!P->name || strcmp(P->name, name) != 0) {
            free(P->name);
            P->name = util_strdup(name);
        }
        memcpy(P->cap, cap, sizeof(P->cap));
    }
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
}

void fs_set_pending(fs_store_t *fs, int pool, const fs_pending_t *p, int n)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    fs_pool_t *P = pool_at(fs, pool);
    if (P) {
        for (int i = 0; i < P->nq; i++) {
            memset(P->q[i].pend, 0, sizeof(P->q[i].pend));
            P->q[i].npend = 0;
        }
        for (int k = 0; k < n; k++) {
            if (p[k].tenant < 0 || p[k].tenant >= P->nq)
                continue;
            fs_pq_t *q = &P->q[p[k].tenant];
            for (int r = 0; r < FS_NRES; r++)
                q->pend[r] += p[k].v[r];
            q->npend += p[k].pods;
        }
    }
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
}

/* ------------------------------------------------------- water-filling */

/* Gives up to R to the active entries, in proportion to w, none beyond
 * room; returns what was given (added to out). */
static double fill(double R, int n, int *active, const double *w, const double *room, double *out)
{
    double given = 0;
    double *left = util_xcalloc((size_t)n + 1, sizeof(double));
    for (int i = 0; i < n; i++)
        left[i] = room[i];
    while (R > FS_EPS) {
        double W = 0;
        for (int i = 0; i < n; i++)
            if (active[i])
                W += w[i];
        if (W <= 0)
            break;
        double unit = R / W;
        int capped = 0;
        for (int i = 0; i < n; i++) {
            if (active[i] && w[i] * unit >= left[i]) {
                out[i] += left[i];
                R -= left[i];
                given += left[i];
                left[i] = 0;
                active[i] = 0;
                capped = 1;
            }
        }
        if (capped)
            continue;
        for (int i = 0; i < n; i++)
            if (active[i]) {
                out[i] += w[i] * unit;
                given += w[i] * unit;
            }
        R = 0;
    }
    free(left);
    return given;
}

void fs_waterfill(double share, int n, const double *quota, const double *weight, const int64_t *prio,
                  const double *cap, double *out)
{
    if (n <= 0)
        return;
    int *active = util_xcalloc((size_t)n, sizeof(int));
    double *room = util_xcalloc((size_t)n, sizeof(double));
    double sumd = 0;
    for (int i = 0; i < n; i++) {
        double q = quota[i] > 0 ? quota[i] : 0;
        out[i] = 0;
        room[i] = q < cap[i] ? q : cap[i];
        if (room[i] < 0)
            room[i] = 0;
        sumd += room[i];
    }
    if (share < 0)
        share = 0;
    if (sumd > share + FS_EPS) {
        /* Quotas overcommit the share: max-min by quota over what each
         * deserves. */
        for (int i = 0; i < n; i++)
            active[i] = room[i] > 0 && quota[i] > 0;
        fill(share, n, active, quota, room, out);
        free(active);
        free(room);
        return;
    }
    for (int i = 0; i < n; i++)
        out[i] = room[i];
    double R = share - sumd;
    /* The surplus by overQuotaWeight, higher-priority siblings first:
     * each priority level, from the top, takes what it can hold. */
    int64_t below = INT64_MAX; /* levels >= below are done */
    while (R > FS_EPS) {
        int have = 0;
        int64_t top = 0;
        for (int i = 0; i < n; i++)
            if (prio[i] < below && (!have || prio[i] > top)) {
                top = prio[i];
                have = 1;
            }
        if (!have)
            break;
        for (int i = 0; i < n; i++) {
            active[i] = prio[i] == top && cap[i] - out[i] > FS_EPS && weight[i] > 0;
            room[i] = cap[i] > out[i] ? cap[i] - out[i] : 0;
        }
        R -= fill(R, n, active, weight, room, out);
        below = top;
    }
    free(active);
    free(room);
}

/* ------------------------------------------------------- fair shares */

/* The node's resource r as it applies in pool P: spec.pools.<pool>
 * overrides field by field. The implicit default: no quota, weight 1. */
static fs_res_t node_res(const fs_store_t *fs, int id, const fs_pool_t *P, int r)
{
    fs_res_t out = { -1, -1, -1 };
    const fs_node_t *n = &fs->n[id];
    if (!n->spec || !n->valid || n->spec->invalid)
        return out;
    out = n->spec->res[r];
    for (int i = 0; P && P->name && i < n->spec->npools; i++) {
        if (strcmp(n->spec->pools[i].pool, P->name) != 0)
            continue;
        const fs_res_t *o = &n->spec->pools[i].res[r];
        if (o->quota >= 0)
            out.quota = o->quota;
        if (o->weight >= 0)
            out.weight = o->weight;
        if (o->limit >= 0)
            out.limit = o->limit;
    }
    return out;
}

/* Run:ai's default: the weight is the quota; a queue without one weighs 1. */
static double weight_of(fs_res_t x)
{
    return x.weight >= 0 ? x.weight : (x.quota > 0 ? x.quota : 1);
}

static int64_t prio_of(const fs_store_t *fs, int id)
{
    const fs_node_t *n = &fs->n[id];
    return n->spec && n->valid ? n->spec->priority : 0;
}

/* Splits share[] among ids (siblings), then each one's share among its
 * children. */
static void share_level(fs_store_t *fs, fs_pool_t *P, const int *ids, int n, const double share[FS_NRES], int depth)
{
    if (n <= 0 || depth > fs->nn)
        return;
    double *quota = util_xcalloc((size_t)n, sizeof(double)), *weight = util_xcalloc((size_t)n, sizeof(double));
    double *cap = util_xcalloc((size_t)n, sizeof(double)), *out = util_xcalloc((size_t)n, sizeof(double));
    int64_t *prio = util_xcalloc((size_t)n, sizeof(int64_t));
    for (int r = 0; r < FS_NRES; r++) {
        for (int i = 0; i < n; i++) {
            fs_res_t x = node_res(fs, ids[i], P, r);
            const fs_pq_t *q = &P->q[ids[i]];
            double demand = q->a_alloc[r] + q->a_pend[r];
            quota[i] = x.quota;
            weight[i] = weight_of(x);
            prio[i] = prio_of(fs, ids[i]);
            cap[i] = x.limit >= 0 && x.limit < demand ? x.limit : demand;
        }
        fs_waterfill(share[r], n, quota, weight, prio, cap, out);
        for (int i = 0; i < n; i++)
            P->q[ids[i]].fair[r] = out[i];
    }
    for (int i = 0; i < n; i++) {
        const fs_node_t *nd = &fs->n[ids[i]];
        if (nd->nkids > 0)
            share_level(fs, P, nd->kids, nd->nkids, P->q[ids[i]].fair, depth + 1);
    }
    free(quota);
    free(weight);
    free(cap);
    free(out);
    free(prio);
}

/* Decays usage, re-sums and recomputes fair shares; 1 when a share moved. */
static int refresh_locked(fs_store_t *fs, fs_pool_t *P, int64_t now_ms)
{
    int h = fs->o.usage_half_life_s;
    double f = 0;
    if (h > 0 && P->flow_ms > 0 && now_ms > P->flow_ms)
        f = pow(0.5, (double)(now_ms - P->flow_ms) / (h * 1000.0));
    else if (h > 0 && P->flow_ms > 0)
        f = 1;
    P->flow_ms = now_ms;
    for (int i = 0; i < fs->nn && i < P->nq; i++) {
        fs_pq_t *q = &P->q[i];
        for (int r = 0; r < FS_NRES; r++) {
            double over = q->flow[r] - q->alloc[r];
            q->flow[r] = q->alloc[r] + (h > 0 && over > 0 ? over * f : 0);
        }
    }
    aggregate_pool(fs, P);
    double *old = util_xcalloc((size_t)fs->nn * FS_NRES + 1, sizeof(double));
    for (int i = 0; i < fs->nn; i++)
        for (int r = 0; r < FS_NRES; r++) {
            old[i * FS_NRES + r] = P->q[i].fair[r];
            P->q[i].fair[r] = 0;
        }
    int *roots = util_xcalloc((size_t)fs->nn + 1, sizeof(int)), nroots = 0;
    for (int i = 0; i < fs->nn; i++)
        if (fs->n[i].valid && fs->n[i].parent < 0)
            roots[nroots++] = i;
    share_level(fs, P, roots, nroots, P->cap, 0);
    int moved = 0;
    for (int i = 0; i < fs->nn && !moved; i++)
        for (int r = 0; r < FS_NRES; r++)
            if (fabs(old[i * FS_NRES + r] - P->q[i].fair[r]) > 1e-6 * (1 + fabs(P->q[i].fair[r])))
                moved = 1;
    free(old);
    free(roots);
    return moved;
}

int fs_refresh(fs_store_t *fs, int pool, int64_t now_ms)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    fs_pool_t *P = pool_at(fs, pool);
    int moved = P ? refresh_locked(fs, P, now_ms) : 0;
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return moved;
}

/* Usage over fair share, dominant resource; add (times sign) is a pod
 * arriving (+1) or leaving (-1). */
static double ratio_of(const fs_store_t *fs, const fs_pool_t *P, int q, const double *add, double sign)
{
    const fs_pq_t *x = &P->q[q];
    double dom = 0;
    for (int r = 0; r < FS_NRES; r++) {
        double u = x->a_alloc[r] + (add ? sign * add[r] : 0);
        if (fs->o.usage_half_life_s > 0) {
            double fl = x->a_flow[r] + (add ? sign * add[r] : 0);
            if (fl > u)
                u = fl;
        }
        if (u <= FS_EPS)
            continue;
        double v = x->fair[r] > FS_EPS ? u / x->fair[r] : FS_RATIO_OVER;
        if (RATIO_WEIGHT[r] * v > dom)
            dom = RATIO_WEIGHT[r] * v;
    }
    return dom;
}

double fs_ratio(fs_store_t *fs, int pool, int tenant)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    fs_pool_t *P = pool_at(fs, pool);
    double r = P && tenant >= 0 && tenant < fs->nn ? ratio_of(fs, P, fs->eff[tenant], NULL, 0) : 0;
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return r;
}

int fs_at_share(fs_store_t *fs, int pool, int tenant)
{
    int at = 0;
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    fs_pool_t *P = pool_at(fs, pool);
    if (P && tenant >= 0 && tenant < fs->nn) {
        const fs_pq_t *x = &P->q[fs->eff[tenant]];
        for (int r = 0; r < FS_NRES && !at; r++)
            at = x->a_alloc[r] > FS_EPS && x->a_alloc[r] + FS_EPS >= x->fair[r];
    }
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return at;
}

static int starving_locked(fs_store_t *fs, fs_pool_t *P, int tenant, int64_t first_ms, int64_t now_ms)
{
    if (fs->o.starvation_age_s <= 0 || now_ms - first_ms < (int64_t)fs->o.starvation_age_s * 1000)
        return 0;
    return ratio_of(fs, P, fs->eff[tenant], NULL, 0) < 1.0;
}

int fs_starving(fs_store_t *fs, int pool, int tenant, int64_t first_ms, int64_t now_ms)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    fs_pool_t *P = pool_at(fs, pool);
    int s = P && tenant >= 0 && tenant < fs->nn ? starving_locked(fs, P, tenant, first_ms, now_ms) : 0;
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return s;
}

int fs_pick(fs_store_t *fs, int pool, const int *tenants, const int64_t *head_first_ms, int n, int64_t now_ms)
{
    if (n <= 1)
        return 0;
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    fs_pool_t *P = pool_at(fs, pool);
    int best = 0, starve = -1;
    double br = 0;
    for (int i = 0; P && i < n; i++) {
        int t = tenants[i] >= 0 && tenants[i] < fs->nn ? tenants[i] : FS_DEFAULT_ID;
        if (starving_locked(fs, P, t, head_first_ms[i], now_ms) &&
            (starve < 0 || head_first_ms[i] < head_first_ms[starve]))
            starve = i;
        double r = ratio_of(fs, P, fs->eff[t], NULL, 0);
        if (i == 0 || r < br - FS_EPS) {
            best = i;
            br = r;
        }
    }
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return starve >= 0 ? starve : best;
}

/* -------------------------------------------------------- admission */

static void fmt_amount(char *buf, size_t n, int r, double v)
{
    if (r == FS_CPU)
        snprintf(buf, n, "%gm", v);
    else if (r == FS_MEM)
        snprintf(buf, n, "%gMB", v);
    else
        snprintf(buf, n, "%g", v);
}

static double tol_of(double x)
{
    return 1e-6 * (1 + fabs(x));
}

/* The first queue on tenant's path where req passes a bound: the quota of
 * non-preemptible work (quota 1) or the limit (quota 0). */
static int admit_pass(fs_store_t *fs, fs_pool_t *P, int q, const double *req, int quota, char *msg, size_t msglen)
{
    for (int a = q, guard = 0; a >= 0 && guard <= fs->nn; a = fs->n[a].parent, guard++) {
        for (int r = 0; r < FS_NRES; r++) {
            if (req[r] <= 0)
                continue;
            fs_res_t x = node_res(fs, a, P, r);
            /* Victims on their way out still hold their nodes: a limit
             * and a quota count them until they are gone. */
            const fs_pq_t *y = &P->q[a];
            double have = quota ? y->a_np[r] + y->a_leave_np[r] : y->a_alloc[r] + y->a_leave[r];
            double bound = quota ? x.quota : x.limit;
            if (bound < 0 || have + req[r] <= bound + tol_of(bound))
                continue;
            char h[40], q1[40], b[40];
            fmt_amount(h, sizeof(h), r, have);
            fmt_amount(q1, sizeof(q1), r, req[r]);
            fmt_amount(b, sizeof(b), r, bound);
            snprintf(msg, msglen, "queue \"%s\" %s: %s %s + %s > %s", fs->n[a].name,
                     quota ? "quota (non-preemptible)" : "limit", fs_res_names[r], h, q1, b);
            return -1;
        }
    }
    return 0;
}

int fs_admit(fs_store_t *fs, int pool, int tenant, const double req[FS_NRES], int preemptible, char *msg, size_t msglen)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    fs_pool_t *P = pool_at(fs, pool);
    int rc = 0;
    int q = tenant >= 0 && tenant < fs->nn ? fs->eff[tenant] : FS_DEFAULT_ID;
    /* Quota first: a limit reclaim (FS_ADMIT_LIMIT) may then make room
     * knowing the quota holds. */
    if (P && !preemptible && admit_pass(fs, P, q, req, 1, msg, msglen) != 0)
        rc = FS_ADMIT_QUOTA;
    else if (P && admit_pass(fs, P, q, req, 0, msg, msglen) != 0)
        rc = FS_ADMIT_LIMIT;
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return rc;
}

/* ----------------------------------------------------------- reclaim */

/* The two children of the lowest common ancestor of leaves p and v on
 * their paths (the top-level queues when they share none). */
static void lca_pair(const fs_store_t *fs, int p, int v, int *a, int *b)
{
    *a = p;
    *b = v;
    for (int x = p, gx = 0; x >= 0 && gx <= fs->nn; x = fs->n[x].parent, gx++) {
        int prev = -1;
        for (int y = v, gy = 0; y >= 0 && gy <= fs->nn; y = fs->n[y].parent, gy++) {
            if (fs->n[y].parent == fs->n[x].parent && y != x) {
                *a = x;
                *b = y;
                return;
            }
            prev = y;
        }
        (void)prev;
    }
}

static int expired(const fs_chg_t *c, int64_t now_wall)
{
    return c->lifetime_s > 0 && now_wall - c->started_ms >= c->lifetime_s * 1000;
}

/* Whether the victim's queue spent its excess budget on pods past their
 * lifetime: then such pods lose the fair-share floor. */
static int over_budget(const fs_store_t *fs, const fs_pool_t *P, const fs_chg_t *c, int64_t now_wall)
{
    if (!expired(c, now_wall))
        return 0;
    int q = fs->eff[c->tid];
    const fs_node_t *n = &fs->n[q];
    if (!n->spec)
        return 0;
    for (int r = 0; r < FS_NRES; r++)
        if (n->spec->excess_budget[r] >= 0 && P->q[q].a_excess[r] >= n->spec->excess_budget[r])
            return 1;
    return 0;
}

/* The subtree is denied every resource it is short of: some resource's
 * fair share is below its demand (held and pending), and each such share
 * is zero. Resources it has all it asks of (CPU beside a GPU shortage) say
 * nothing of whether it deserves what it holds of the contested ones. */
static int no_share(const fs_pq_t *x)
{
    int contested = 0;
    for (int r = 0; r < FS_NRES; r++) {
        double demand = x->a_alloc[r] + x->a_pend[r];
        if (x->fair[r] + tol_of(demand) >= demand)
            continue;
        contested = 1;
        if (x->fair[r] > FS_EPS)
            return 0;
    }
    return contested;
}

/* Whether the reclaimer qp (a: its side below the common ancestor) stays
 * within its fair share with req placed, at its own level and at a's. */
static int reclaimer_within(const fs_store_t *fs, const fs_pool_t *P, int qp, int a, const double *req)
{
    return ratio_of(fs, P, qp, req, +1) <= 1 + 1e-9 && ratio_of(fs, P, a, req, +1) <= 1 + 1e-9;
}

/* The cross-queue rule, for the reclaimer leaf qp (a below the common
 * ancestor) taking v from b's subtree; rb_last is b's ratio with the last
 * job of several pods (a gang's minimum) still counted and the victims
 * before it gone, negative when no such job is taken. */
static int reclaim_ok(const fs_store_t *fs, const fs_pool_t *P, int qp, int a, int b, const double *req,
                      const double *v, double rb_last, int starving, int relaxed)
{
    if (starving) {
        if (ratio_of(fs, P, qp, NULL, 0) >= 1.0)
            return 0;
        return ratio_of(fs, P, b, NULL, 0) > ratio_of(fs, P, a, NULL, 0) + FS_EPS;
    }
    /* Shares are compared by the dominant-resource ratio: a queue holding
     * its GPU share is not "below its share" because pods it still waits
     * for would take more CPU. */
    double ra = ratio_of(fs, P, a, req, +1), rb = ratio_of(fs, P, b, v, -1);
    if (!reclaimer_within(fs, P, qp, a, req))
        return 0; /* the reclaimer would pass its own share */
    /* A subtree whose fair share here is nothing falls below it by no
     * eviction, and its ratio once emptied (0) says nothing of who is
     * fairer: all it holds goes back (it cannot reclaim it again, its
     * ratio with anything would pass its share). */
    if (no_share(&P->q[b]))
        return 1;
    /* A gang's minimum goes whole: while b, with the gang counted, is over
     * its share, the gang is over-quota work, and over-quota work is what
     * reclaim takes back (Run:ai's reclaim; KAI-Scheduler's
     * MaintainFairShare strategy), even when b falls below its share once
     * it is gone. Pods that can go one by one (lone pods, elastic surplus)
     * keep the finer rule below: b gives back only what it holds over its
     * share. No ping-pong: the reclaimer ends within its share (checked
     * above), not over it, so neither rule lets b take the room back. */
    if (rb_last > 1 + 1e-9)
        return 1;
    if (!relaxed && rb < 1 - 1e-9)
        return 0; /* the victim's queue would fall below its share */
    return ra <= rb + 1e-9;
}

/* Whether req fits what no queue holds in P (its capacity less every
 * root queue's allocation): room the waiting set could have at once. */
static int fits_unheld(const fs_store_t *fs, const fs_pool_t *P, const double *req)
{
    double held[FS_NRES] = { 0 };
    for (int i = 0; i < fs->nn; i++)
        if (fs->n[i].valid && fs->n[i].parent < 0)
            for (int r = 0; r < FS_NRES; r++)
                held[r] += P->q[i].a_alloc[r];
    for (int r = 0; r < FS_NRES; r++)
        if (req[r] > FS_EPS && held[r] + req[r] > P->cap[r] + 1e-9)
            return 0;
    return 1;
}

int fs_yields(fs_store_t *fs, int pool, int tenant, const double req[FS_NRES], int other,
              const double other_req[FS_NRES])
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    int yes = 0;
    fs_pool_t *P = pool_at(fs, pool);
    if (P && tenant >= 0 && tenant < fs->nn && other >= 0 && other < fs->nn && fs->eff[tenant] != fs->eff[other]) {
        int o = fs->eff[other], a, b;
        lca_pair(fs, o, fs->eff[tenant], &a, &b);
        /* other may take back room over tenant's share without passing its
         * own (reclaim_ok's reclaimer test), and tenant's side would pass
         * its share with req placed: what it placed would be reclaimed. */
        yes = reclaimer_within(fs, P, o, a, other_req) && !no_share(&P->q[a]) &&
              ratio_of(fs, P, b, req, +1) > 1 + 1e-9 && fits_unheld(fs, P, other_req);
    }
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return yes;
}

int fs_may_reclaim(fs_store_t *fs, int pool, int tenant, const double req[FS_NRES], int starving, int32_t prio,
                   int64_t created_ms, const char *victim_uid, int in_gang, int64_t now_ms, int *cross)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    int ok = 0;
    *cross = 0;
    fs_chg_t *c = hashmap_get(fs->charges, victim_uid);
    fs_pool_t *P = pool_at(fs, pool);
    if (c && !c->leaving && P && tenant >= 0 && tenant < fs->nn && (c->preemptible || expired(c, now_ms))) {
        int qp = fs->eff[tenant], qv = fs->eff[c->tid];
        if (qp == qv) {
            ok = starving && c->prio <= prio && c->created_ms > created_ms;
        } else {
            *cross = 1;
            int a, b;
            lca_pair(fs, qp, qv, &a, &b);
            /* A member of a gang's minimum is judged with its job counted
             * (here, the member: the mates are added, and the whole judged
             * by fs_victims_ok, after). */
            ok = reclaim_ok(fs, P, qp, a, b, req, c->v, in_gang ? ratio_of(fs, P, b, NULL, 0) : -1, starving,
                            over_budget(fs, P, c, now_ms));
        }
    }
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return ok;
}

/* b's ratio with one of its victim jobs of several pods still counted and
 * every other victim gone, for the job that leaves it highest (taken
 * last: KAI-Scheduler judges each job with the ones before it gone, and
 * the last one decides); -1 when b loses no such job. gv: b's victims'
 * sum; jv, jg, jn: each job's sum, group and member count. */
static double ratio_before_last(const fs_store_t *fs, const fs_pool_t *P, int b, int g, const double *gv,
                                const double *jv, const int *jg, const int *jn, int njobs)
{
    double best = -1;
    for (int j = 0; j < njobs; j++) {
        if (jg[j] != g || jn[j] < 2)
            continue;
        double rest[FS_NRES];
        for (int r = 0; r < FS_NRES; r++)
            rest[r] = gv[r] - jv[j * FS_NRES + r];
        double x = ratio_of(fs, P, b, rest, -1);
        if (x > best)
            best = x;
    }
    return best;
}

int fs_victims_ok(fs_store_t *fs, int pool, int tenant, const double req[FS_NRES], int starving,
                  const char *const *victim_uids, const int *jobs, int n, int64_t now_ms)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    fs_pool_t *P = pool_at(fs, pool);
    int ok = P != NULL && tenant >= 0 && tenant < fs->nn;
    int *ga = util_xcalloc((size_t)n + 1, sizeof(int)), *gb = util_xcalloc((size_t)n + 1, sizeof(int));
    int *relax = util_xcalloc((size_t)n + 1, sizeof(int));
    double *gv = util_xcalloc(((size_t)n + 1) * FS_NRES, sizeof(double));
    /* Per job (an index below n): its sum, its group (-1 while unseen)
     * and its member count. */
    double *jv = util_xcalloc(((size_t)n + 1) * FS_NRES, sizeof(double));
    int *jg = util_xcalloc((size_t)n + 1, sizeof(int)), *jn = util_xcalloc((size_t)n + 1, sizeof(int));
    for (int j = 0; j < n; j++)
        jg[j] = -1;
    int ng = 0;
    for (int i = 0; ok && i < n; i++) {
        fs_chg_t *c = hashmap_get(fs->charges, victim_uids[i]);
        if (!c || c->leaving)
            continue;
        int qp = fs->eff[tenant], qv = fs->eff[c->tid];
        if (qp == qv)
            continue;
        int a, b, g;
        lca_pair(fs, qp, qv, &a, &b);
        for (g = 0; g < ng && gb[g] != b; g++)
            ;
        if (g == ng) {
            ga[g] = a;
            gb[g] = b;
            relax[g] = 1;
            ng++;
        }
        if (!over_budget(fs, P, c, now_ms))
            relax[g] = 0;
        int j = jobs && jobs[i] >= 0 && jobs[i] < n ? jobs[i] : i;
        jg[j] = g;
        jn[j]++;
        for (int r = 0; r < FS_NRES; r++) {
            gv[g * FS_NRES + r] += c->v[r];
            jv[j * FS_NRES + r] += c->v[r];
        }
    }
    for (int g = 0; ok && g < ng; g++) {
        double rb_last = ratio_before_last(fs, P, gb[g], g, &gv[g * FS_NRES], jv, jg, jn, n);
        ok = reclaim_ok(fs, P, fs->eff[tenant], ga[g], gb[g], req, &gv[g * FS_NRES], rb_last, starving, relax[g]);
    }
    free(ga);
    free(gb);
    free(relax);
    free(gv);
    free(jv);
    free(jg);
    free(jn);
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return ok;
}

typedef struct lim_cand {
    const char *uid;
    const fs_chg_t *c;
} lim_cand_t;

static int lim_cand_cmp(const void *x, const void *y)
{
    const fs_chg_t *a = ((const lim_cand_t *)x)->c, *b = ((const lim_cand_t *)y)->c;
    if (a->prio != b->prio)
        return a->prio < b->prio ? -1 : 1;
    return a->started_ms > b->started_ms ? -1 : a->started_ms < b->started_ms;
}

static int in_subtree(const fs_store_t *fs, int q, int top)
{
    for (int a = q, g = 0; a >= 0 && g <= fs->nn; a = fs->n[a].parent, g++)
        if (a == top)
            return 1;
    return 0;
}

/* The queues on qp's path (qp included) whose limit req would pass, lowest
 * first, into lv, and by how much (excess, FS_NRES per queue). */
static int blocking_path(const fs_store_t *fs, const fs_pool_t *P, int qp, const double *req, int *lv, double *excess)
{
    int n = 0;
    for (int a = qp, g = 0; a >= 0 && g <= fs->nn; a = fs->n[a].parent, g++) {
        double *e = &excess[n * FS_NRES];
        int over = 0;
        for (int r = 0; r < FS_NRES; r++) {
            fs_res_t x = node_res(fs, a, P, r);
            e[r] = x.limit >= 0 && req[r] > 0 ? P->q[a].a_alloc[r] + req[r] - x.limit : 0;
            if (e[r] > tol_of(x.limit))
                over = 1;
            else
                e[r] = 0;
        }
        if (over)
            lv[n++] = a;
    }
    return n;
}

/* Whether charge c (in qv) may go so that a pod of qp at priority prio
 * passes the limit of top: a lower-priority pod of qp itself (priority
 * preemption inside a queue, as kube-scheduler's), or, while qp stays
 * within its share, a reclaimable pod of a sibling subtree under top. */
static int limit_victim_ok(const fs_store_t *fs, const fs_pool_t *P, int qp, int top, int32_t prio, const double *req,
                           const fs_chg_t *c, int64_t now_ms)
{
    int qv = fs->eff[c->tid], a, b;
    if (c->held)
        return 0; /* not running: its eviction would delete a pending pod */
    if (c->leaving)
        return 0; /* already going: the room it frees is counted freed */
    if (qv == qp)
        return c->prio < prio;
    if (top == qp || !(c->preemptible || expired(c, now_ms)) || !in_subtree(fs, qv, top))
        return 0;
    if (ratio_of(fs, P, qp, req, +1) > 1 + 1e-9)
        return 0;
    lca_pair(fs, qp, qv, &a, &b);
    return reclaim_ok(fs, P, qp, a, b, req, c->v, -1, 0, over_budget(fs, P, c, now_ms));
}

/* Whether every blocking queue i has freed (in its subtree) its excess. */
static int limits_met(int nl, const double *freed, const double *excess)
{
    for (int i = 0; i < nl * FS_NRES; i++)
        if (freed[i] + 1e-9 < excess[i])
            return 0;
    return 1;
}

/* Takes victim c if it is in the subtree of a blocking queue still short:
 * it frees its amount in every blocking queue above it. */
static int limit_take(const fs_store_t *fs, const fs_chg_t *c, const int *lv, int nl, double *freed,
                      const double *excess)
{
    int qv = fs->eff[c->tid], helps = 0;
    for (int i = 0; i < nl && !helps; i++)
        if (in_subtree(fs, qv, lv[i]) && !limits_met(1, &freed[i * FS_NRES], &excess[i * FS_NRES]))
            helps = 1;
    for (int i = 0; helps && i < nl; i++)
        if (in_subtree(fs, qv, lv[i]))
            for (int r = 0; r < FS_NRES; r++)
                freed[i * FS_NRES + r] += c->v[r];
    return helps;
}

int fs_limit_victims(fs_store_t *fs, int pool, int tenant, const double req[FS_NRES], int32_t prio, int64_t now_ms,
                     char ***out)
{
    *out = NULL;
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    fs_pool_t *P = pool_at(fs, pool);
    int qp = tenant >= 0 && tenant < fs->nn ? fs->eff[tenant] : FS_DEFAULT_ID, n = 0;
    /* Every limit on the path req passes must be met, not only the lowest:
     * room made under a leaf's limit alone would leave an ancestor over
     * its own (the set is charged when it reclaims, and admission does
     * not count it again). Victims come from the highest one's subtree. */
    int *lv = util_xcalloc((size_t)fs->nn + 2, sizeof(int));
    double *excess = util_xcalloc(((size_t)fs->nn + 2) * FS_NRES, sizeof(double));
    int nl = P ? blocking_path(fs, P, qp, req, lv, excess) : 0;
    if (nl == 0) {
        lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
        free(lv);
        free(excess);
        return 0;
    }
    int top = lv[nl - 1];
    lim_cand_t *cand = util_xcalloc(hashmap_len(fs->charges) + 1, sizeof(*cand));
    int nc = 0;
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(fs->charges, &it, &k, &v);) {
        const fs_chg_t *c = v;
        if (c->pool == pool && limit_victim_ok(fs, P, qp, top, prio, req, c, now_ms))
            cand[nc++] = (lim_cand_t){ k, c };
    }
    qsort(cand, (size_t)nc, sizeof(*cand), lim_cand_cmp);
    double *freed = util_xcalloc((size_t)nl * FS_NRES, sizeof(double));
    for (int i = 0; i < nc && !limits_met(nl, freed, excess); i++)
        if (limit_take(fs, cand[i].c, lv, nl, freed, excess))
            cand[n++] = cand[i];
    if (!limits_met(nl, freed, excess))
        n = 0;
    if (n > 0) {
        *out = util_xcalloc((size_t)n + 1, sizeof(char *));
        for (int i = 0; i < n; i++)
            (*out)[i] = util_strdup(cand[i].uid);
    }
    free(freed);
    free(cand);
    free(lv);
    free(excess);
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    /* The set as a whole keeps reclaim's rules, per victim queue. */
    if (n > 0 && !fs_victims_ok(fs, pool, tenant, req, 0, (const char *const *)*out, NULL, n, now_ms)) {
        for (int i = 0; i < n; i++)
            free((*out)[i]);
        free(*out);
        *out = NULL;
        n = 0;
    }
    return n;
}

/* The nearest queue on tenant's path up the tree whose spec sets the
 * duration field at off (an int64_t of fs_queue_spec_t): its index, with
 * *out; -1 when none does. fs->mu held. g bounds the walk: a parent cycle
 * is the store's to report, not to loop on. */
static int inherited_duration_locked(fs_store_t *fs, int tenant, size_t off, int64_t *out)
{
    int q = tenant >= 0 && tenant < fs->nn ? fs->eff[tenant] : FS_DEFAULT_ID;
    for (int g = 0; q >= 0 && q < fs->nn && g <= fs->nn; q = fs->n[q].parent, g++) {
        const fs_queue_spec_t *sp = fs->n[q].spec;
        int64_t x = sp ? *(const int64_t *)(const void *)((const char *)sp + off) : DURATION_UNSET;
        if (x != DURATION_UNSET) {
            *out = x;
            return q;
        }
    }
    return -1;
}

int64_t fs_min_runtime(fs_store_t *fs, int tenant, int kind, int64_t pool_default, char **from)
{
    if (from)
        *from = NULL;
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    int64_t v = pool_default;
    int a = inherited_duration_locked(fs, tenant,
                                      kind == FS_MINRT_RECLAIM ? offsetof(fs_queue_spec_t, reclaim_min_runtime_ms)
                                                               : offsetof(fs_queue_spec_t, preempt_min_runtime_ms),
                                      &v);
    if (a >= 0 && from)
        *from = util_strdup(fs->n[a].name);
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return v;
}

int fs_same_queue(fs_store_t *fs, int a, int b)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    int ea = a >= 0 && a < fs->nn ? fs->eff[a] : FS_DEFAULT_ID, eb = b >= 0 && b < fs->nn ? fs->eff[b] : FS_DEFAULT_ID;
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return ea == eb;
}

/* The top-level queue whose subtree tenant counts in; fs->mu held. */
static int root_locked(const fs_store_t *fs, int tenant)
{
    int r = tenant >= 0 && tenant < fs->nn ? fs->eff[tenant] : FS_DEFAULT_ID;
    for (int hops = 0; fs->n[r].parent >= 0 && hops < fs->nn; hops++)
        r = fs->n[r].parent;
    return r;
}

int fs_same_tree(fs_store_t *fs, int a, int b)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    int same = root_locked(fs, a) == root_locked(fs, b);
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return same;
}

char *fs_queue_name(fs_store_t *fs, int tenant)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    char *name = util_strdup(fs->n[tenant >= 0 && tenant < fs->nn ? fs->eff[tenant] : FS_DEFAULT_ID].name);
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return name;
}

void fs_note_reclaim(fs_store_t *fs, int tenant, const char *const *victim_uids, int n)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    int qp = tenant >= 0 && tenant < fs->nn ? fs->eff[tenant] : FS_DEFAULT_ID, cross = 0;
    for (int i = 0; i < n; i++) {
        fs_chg_t *c = hashmap_get(fs->charges, victim_uids[i]);
        if (c && fs->eff[c->tid] != qp) {
            fs->n[fs->eff[c->tid]].reclaimed++;
            cross = 1;
        }
    }
    if (cross)
        fs->n[qp].reclaims++;
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
}

/* ------------------------------------------------------ housekeeping */

static json_t *jvec(const double v[FS_NRES])
{
    json_t *o = json_object();
    for (int r = 0; r < FS_NRES; r++)
        json_object_set_new(o, fs_res_names[r], util_json_num(v[r]));
    return o;
}

/* Queue id's row in pool p, or NULL when the pool is unused or has none. */
static const fs_pq_t *pool_row(const fs_store_t *fs, int p, int id)
{
    const fs_pool_t *P = &fs->pools[p];
    return P->used && P->name && id < P->nq ? &P->q[id] : NULL;
}

/* A queue's figures summed over its pools: its status and its dashboard row. */
typedef struct q_sums {
    double alloc[FS_NRES], fair[FS_NRES], pend[FS_NRES], req[FS_NRES], excess[FS_NRES];
    int npend;
} q_sums_t;

static void q_sums_add(q_sums_t *s, const fs_pq_t *q)
{
    for (int r = 0; r < FS_NRES; r++) {
        s->alloc[r] += q->a_alloc[r];
        s->fair[r] += q->fair[r];
        s->pend[r] += q->a_pend[r];
        s->req[r] += q->a_alloc[r] + q->a_pend[r];
        s->excess[r] += q->a_excess[r];
    }
    s->npend += q->a_npend;
}

static json_t *status_of(fs_store_t *fs, int id)
{
    const fs_node_t *n = &fs->n[id];
    q_sums_t sum = { 0 };
    json_t *pools = json_array();
    for (int p = 0; p < fs->npools; p++) {
        const fs_pq_t *q = pool_row(fs, p, id);
        if (!q)
            continue;
        q_sums_add(&sum, q);
        double rq[FS_NRES];
        for (int r = 0; r < FS_NRES; r++)
            rq[r] = q->a_alloc[r] + q->a_pend[r];
        json_array_append_new(pools, json_pack("{s:s, s:o, s:o, s:o, s:i}", "name", fs->pools[p].name, "allocated",
                                               jvec(q->a_alloc), "fairShare", jvec(q->fair), "requested", jvec(rq),
                                               "pending", q->a_npend));
    }
    json_t *st = json_pack("{s:o, s:o, s:o, s:i, s:o, s:s}", "allocated", jvec(sum.alloc), "fairShare", jvec(sum.fair),
                           "requested", jvec(sum.req), "pending", sum.npend, "pools", pools, "state",
                           n->valid ? "Active" : "Invalid");
    json_object_set_new(st, "message", n->valid ? json_null() : json_string(n->why ? n->why : "invalid"));
    int budget = 0;
    for (int r = 0; n->spec && r < FS_NRES; r++)
        budget |= n->spec->excess_budget[r] >= 0;
    if (budget)
        json_object_set_new(st, "excessUsed", jvec(sum.excess));
    return st;
}

/* Everything status_of reads, as raw bytes: equal keys make equal bodies. */
static void status_key(const fs_store_t *fs, int id, sbuf_t *k)
{
    const fs_node_t *n = &fs->n[id];
    sbuf_reset(k);
    for (int p = 0; p < fs->npools; p++) {
        const fs_pq_t *q = pool_row(fs, p, id);
        if (!q)
            continue;
        sbuf_append(k, fs->pools[p].name, strlen(fs->pools[p].name) + 1);
        sbuf_append(k, (const char *)q->a_alloc, sizeof(q->a_alloc));
        sbuf_append(k, (const char *)q->a_pend, sizeof(q->a_pend));
        sbuf_append(k, (const char *)q->fair, sizeof(q->fair));
        sbuf_append(k, (const char *)q->a_excess, sizeof(q->a_excess));
        sbuf_append(k, (const char *)&q->a_npend, sizeof(q->a_npend));
    }
    int budget = 0;
    for (int r = 0; n->spec && r < FS_NRES; r++)
        budget |= n->spec->excess_budget[r] >= 0;
    char flags[2] = { (char)(n->valid != 0), (char)budget };
    sbuf_append(k, flags, sizeof(flags));
    if (!n->valid && n->why)
        sbuf_append(k, n->why, strlen(n->why) + 1);
}

/* The status body of node i (malloc'd), serialized only when its figures changed. */
static char *status_body(fs_store_t *fs, int i)
{
    fs_node_t *n = &fs->n[i];
    sbuf_t k = { 0 };
    status_key(fs, i, &k);
    if (n->st_body && k.len == n->st_key.len && memcmp(k.data, n->st_key.data, k.len) == 0) {
        sbuf_free(&k);
        return util_strdup(n->st_body);
    }
    json_t *st = json_pack("{s:o}", "status", status_of(fs, i));
    char *body = json_dumps(st, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(st);
    free(n->st_body);
    n->st_body = body ? util_strdup(body) : NULL;
    sbuf_free(&n->st_key);
    n->st_key = k;
    return body;
}

/* Resource-seconds past each pod's lifetime, for excess budgets. */
static void excess_step(fs_store_t *fs, int64_t now_wall)
{
    int64_t last = fs->excess_ms;
    fs->excess_ms = now_wall;
    if (fs->nlifetime == 0 || last == 0 || now_wall <= last)
        return;
    const char *k;
    void *v;
    for (size_t it = 0; hashmap_next(fs->charges, &it, &k, &v);) {
        fs_chg_t *c = v;
        if (!expired(c, now_wall))
            continue;
        int64_t from = c->started_ms + c->lifetime_s * 1000;
        double secs = (double)(now_wall - (from > last ? from : last)) / 1000.0;
        fs_pool_t *P = pool_at(fs, c->pool);
        if (!P || c->tid >= P->nq)
            continue;
        for (int r = 0; r < FS_NRES; r++)
            P->q[c->tid].excess[r] += c->v[r] * secs;
    }
}

/* How long a status write may take to show in the informer before it is
 * handed out again. */
#define STATUS_RETRY_MS 10000

void fs_tick(fs_store_t *fs, int64_t now_ms, fs_tick_t *out)
{
    memset(out, 0, sizeof(*out));
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    excess_step(fs, util_wall_ms());
    for (int p = 0; p < fs->npools; p++)
        if (fs->pools[p].used)
            refresh_locked(fs, pool_at(fs, p), now_ms);
    for (int i = 0; i < fs->nn; i++) {
        fs_node_t *n = &fs->n[i];
        if (!n->spec)
            continue;
        char *body = status_body(fs, i);
        /* Written is not shown: resent every STATUS_RETRY_MS until the
         * Queue the informer sees carries it (a dropped write is retried). */
        int shown = body && n->spec->status_json && strcmp(n->spec->status_json, body) == 0;
        int in_flight =
            body && n->last_status && strcmp(n->last_status, body) == 0 && now_ms - n->written_ms < STATUS_RETRY_MS;
        if (body && !shown && !in_flight) {
            free(n->last_status);
            n->last_status = util_strdup(body);
            n->written_ms = now_ms;
            out->patches = util_xrealloc(out->patches, (size_t)(out->npatches + 1) * sizeof(*out->patches));
            out->patches[out->npatches++] = (fs_patch_t){ util_strdup(n->name), body };
        } else {
            free(body);
        }
        if (!n->valid && n->why && (!n->said || strcmp(n->said, n->why) != 0)) {
            free(n->said);
            n->said = util_strdup(n->why);
            out->events = util_xrealloc(out->events, (size_t)(out->nevents + 1) * sizeof(*out->events));
            out->events[out->nevents++] = (fs_event_t){ util_strdup(n->name), util_strdup(n->spec->uid),
                                                        util_strdup("InvalidQueue"), util_strdup(n->why) };
        } else if (n->valid && n->said) {
            free(n->said);
            n->said = NULL;
        }
    }
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
}

void fs_tick_clear(fs_tick_t *t)
{
    for (int i = 0; i < t->npatches; i++) {
        free(t->patches[i].name);
        free(t->patches[i].body);
    }
    for (int i = 0; i < t->nevents; i++) {
        free(t->events[i].name);
        free(t->events[i].uid);
        free(t->events[i].reason);
        free(t->events[i].message);
    }
    free(t->patches);
    free(t->events);
    memset(t, 0, sizeof(*t));
}

void fs_each_metric(fs_store_t *fs, fs_metric_fn fn, void *ud)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    for (int p = 0; p < fs->npools; p++) {
        const fs_pool_t *P = &fs->pools[p];
        if (!P->used || !P->name)
            continue;
        for (int i = 0; i < fs->nn && i < P->nq; i++)
            if (fs->n[i].spec || i == FS_DEFAULT_ID)
                fn(ud, fs->n[i].name, P->name, P->q[i].a_alloc, P->q[i].fair, P->q[i].a_npend);
    }
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
}

void fs_each_counter(fs_store_t *fs, fs_counter_fn fn, void *ud)
{
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    for (int i = 0; i < fs->nn; i++)
        if (fs->n[i].reclaims || fs->n[i].reclaimed)
            fn(ud, fs->n[i].name, fs->n[i].reclaims, fs->n[i].reclaimed);
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
}

/* ------------------------------------------------- checkpoint grace */

int64_t fs_checkpoint_grace(fs_store_t *fs, int tenant)
{
    int64_t ms = DURATION_UNSET;
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    inherited_duration_locked(fs, tenant, offsetof(fs_queue_spec_t, checkpoint_grace_ms), &ms);
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return ms;
}

/* ------------------------------------------------------------ dashboard */

static json_t *dash_num(double v, int r)
{
    return util_json_num(r == FS_MEM ? v * 1e6 : v);
}

static json_t *dash_opt(double v, int r)
{
    return v < 0 ? json_null() : dash_num(v, r);
}

/* {gpu|cpu|memory: {quota, limit, weight, fairShare, allocated, pending}}. */
static json_t *dash_res(const fs_queue_spec_t *spec, const double *alloc, const double *fair, const double *pend)
{
    json_t *o = json_object();
    for (int r = 0; r < FS_NRES; r++) {
        const fs_res_t *sr = spec ? &spec->res[r] : NULL;
        json_object_set_new(o, fs_res_names[r],
                            json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "quota", dash_opt(sr ? sr->quota : -1, r),
                                      "limit", dash_opt(sr ? sr->limit : -1, r), "weight",
                                      sr && sr->weight >= 0 ? util_json_num(sr->weight) : json_null(), "fairShare",
                                      dash_num(fair[r], r), "allocated", dash_num(alloc[r], r), "pending",
                                      dash_num(pend[r], r)));
    }
    return o;
}

static int dash_shown(const fs_store_t *fs, int id)
{
    return fs->n[id].spec != NULL || id == FS_DEFAULT_ID;
}

static int cmp_ids_by_name(const void *a, const void *b, void *ud)
{
    const fs_store_t *fs = ud;
    return strcmp(fs->n[*(const int *)a].name, fs->n[*(const int *)b].name);
}

static json_t *dash_queue(fs_store_t *fs, int id, const int *running)
{
    const fs_node_t *n = &fs->n[id];
    q_sums_t sum = { 0 };
    json_t *pools = json_array();
    for (int p = 0; p < fs->npools; p++) {
        const fs_pq_t *q = pool_row(fs, p, id);
        if (!q)
            continue;
        q_sums_add(&sum, q);
        json_array_append_new(pools,
                              json_pack("{s:s, s:o, s:i}", "name", fs->pools[p].name, "resources",
                                        dash_res(n->spec, q->a_alloc, q->fair, q->a_pend), "pendingPods", q->a_npend));
    }
    json_t *kids = json_array();
    for (int i = 0; i < n->nkids; i++)
        json_array_append_new(kids, json_string(fs->n[n->kids[i]].name));
    const char *parent = n->parent >= 0 ? fs->n[n->parent].name : (n->spec && n->spec->parent ? n->spec->parent : NULL);
    json_t *o = json_pack(
        "{s:s, s:o, s:o, s:o, s:b, s:o, s:o, s:i, s:i}", "name", n->name, "parent",
        parent ? json_string(parent) : json_null(), "children", kids, "weight",
        n->spec && n->spec->res[FS_GPU].weight >= 0 ? util_json_num(n->spec->res[FS_GPU].weight) : json_null(), "valid",
        id == FS_DEFAULT_ID || n->valid, "resources", dash_res(n->spec, sum.alloc, sum.fair, sum.pend), "pools", pools,
        "pendingPods", sum.npend, "runningPods", running[id]);
    if (n->why && !n->valid)
        json_object_set_new(o, "message", json_string(n->why));
    return o;
}

static void dash_walk(fs_store_t *fs, int id, const int *running, char *done, json_t *out, int depth)
{
    if (done[id] || depth > fs->nn)
        return;
    done[id] = 1;
    json_array_append_new(out, dash_queue(fs, id, running));
    const fs_node_t *n = &fs->n[id];
    int *kids = util_xcalloc((size_t)n->nkids + 1, sizeof *kids);
    if (n->nkids)
        memcpy(kids, n->kids, (size_t)n->nkids * sizeof *kids);
    qsort_r(kids, (size_t)n->nkids, sizeof *kids, cmp_ids_by_name, fs);
    for (int i = 0; i < n->nkids; i++)
        if (dash_shown(fs, kids[i]))
            dash_walk(fs, kids[i], running, done, out, depth + 1);
    free(kids);
}

json_t *fs_dashboard_queues(fs_store_t *fs)
{
    json_t *out = json_array();
    lo_mutex_lock(&fs->mu, LO_FAIRSHARE);
    int *running = util_xcalloc((size_t)fs->nn + 1, sizeof *running);
    const char *k;
    void *v;
    /* A charge is a pod holding room (bound, or a preemptor's provisional
     * charge); it counts in its queue and every ancestor, as a_alloc does. */
    for (size_t it = 0; hashmap_next(fs->charges, &it, &k, &v);) {
        const fs_chg_t *c = v;
        if (c->tid < 0 || c->tid >= fs->nn)
            continue;
        for (int a = fs->eff[c->tid], guard = 0; a >= 0 && guard <= fs->nn; a = fs->n[a].parent, guard++)
            running[a]++;
    }
    int *ids = util_xcalloc((size_t)fs->nn + 1, sizeof *ids);
    int n = 0;
    for (int i = 0; i < fs->nn; i++)
        if (dash_shown(fs, i))
            ids[n++] = i;
    qsort_r(ids, (size_t)n, sizeof *ids, cmp_ids_by_name, fs);
    char *done = util_xcalloc((size_t)fs->nn + 1, 1);
    for (int i = 0; i < n; i++)
        if (fs->n[ids[i]].parent < 0)
            dash_walk(fs, ids[i], running, done, out, 0);
    for (int i = 0; i < n; i++) /* cut from the tree (a cycle, a bad parent) */
        if (!done[ids[i]])
            dash_walk(fs, ids[i], running, done, out, 0);
    free(done);
    free(ids);
    free(running);
    lo_mutex_unlock(&fs->mu, LO_FAIRSHARE);
    return out;
}
