/* dashboard.c -- the dashboard's collectors (scheduler/dashboard.h): copy
 * what the pages show out of the cache, the rows (their groups point: the
 * gang row's PodGroups; node_use, node_doc and pod_use: the gpu-sharing
 * row's shared GPUs, the dynamic-resources row's devices), the Queues and the decision records, then sort,
 * page and build JSON with no lock held. The gang list is the gang row's
 * own page (gang/dash.c). */
#include <stdlib.h>
#include <string.h>

#include "explain/explain.h"
#include "scheduler/dashboard.h"
#include "scheduler/internal.h"
#include "util/jsonnum.h"
#include "util/util.h"

static int add_shown(void *ud, void *self, const sched_watch_t *w, informer_t *inf)
{
    (void)self;
    if (w->shown && inf)
        *(uint64_t *)ud += informer_delivered(inf);
    return 0;
}

uint64_t scheduler_generation(scheduler_t *s)
{
    /* The informers of what the pages show (none in a sandbox: it feeds
     * events through scheduler_feed, which counts in dash_gen), each event
     * counted once handled: pools, nodes, pods and the rows' shown
     * watches (PodGroups, Queues); and the binds handed to the binder. */
    informer_t *const shown[] = { s->inf_pools, s->inf_nodes, s->inf_pods };
    uint64_t g = __atomic_load_n(&s->dash_gen, __ATOMIC_RELAXED);
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++)
        g += informer_delivered(shown[i]);
    sched_rows_each_watch(s, add_shown, &g);
    return g;
}

/* ------------------------------------------------------------ helpers */

/* Live pools' names by id (dead ones NULL), copied under pools_mu. */
typedef struct pool_names {
    char **name;
    int n;
} pool_names_t;

static void pool_names_get(scheduler_t *s, pool_names_t *pn)
{
    pools_lock(s);
    pn->n = s->npools;
    pn->name = util_xcalloc((size_t)pn->n + 1, sizeof *pn->name);
    for (int i = 0; i < pn->n; i++)
        if (!s->pools[i]->dead)
            pn->name[i] = util_strdup(s->pools[i]->name);
    pools_unlock(s);
}

static void pool_names_free(pool_names_t *pn)
{
    for (int i = 0; i < pn->n; i++)
        free(pn->name[i]);
    free(pn->name);
}

static const char *pool_name(const pool_names_t *pn, int id)
{
    return id >= 0 && id < pn->n && pn->name[id] ? pn->name[id] : DEFAULT_POOL;
}

static int pool_index(const pool_names_t *pn, const char *name)
{
    for (int i = 0; i < pn->n; i++)
        if (pn->name[i] && strcmp(pn->name[i], name) == 0)
            return i;
    return -1;
}

static const char *pod_queue(scheduler_t *s, const pod_t *p)
{
    return s->queues.ops->queue_name(s->queues.self, p);
}

/* A pod's figures: whole GPUs asked, and what the rows' pod_use adds
 * (the gpu-sharing row: its share of shared GPUs, a reservation pod). */
static sched_pod_use_t pod_use(scheduler_t *s, const pod_t *p)
{
    sched_pod_use_t u = { .gpus = (double)res_get_scalar(&p->requests, RES_GPU) };
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].pod_use)
            ext[i].pod_use(&s->rows[i], p, &u);
    return u;
}

/* The reason a decision record gives: its hint, else its message. */
static char *record_reason(scheduler_t *s, const char *kind, const char *ns, const char *name, int *has)
{
    return dash_record_reason(scheduler_explain(s, kind, ns, name), has);
}

/* ------------------------------------------------------------ groups */

/* A group of pods a row keeps (its groups point: the gang row's PodGroups). */
typedef struct group_info {
    char *key, *ns, *name, *queue, *pool, *note;
    int members, done;
} group_info_t;

typedef struct group_list {
    group_info_t *v;
    int n, cap;
} group_list_t;

static void take_group(void *ud, const sched_group_info_t *r)
{
    group_list_t *l = ud;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = util_xrealloc(l->v, (size_t)l->cap * sizeof *l->v);
    }
    l->v[l->n++] =
        (group_info_t){ util_strdup(r->key),  util_strdup(r->ns),           util_strdup(r->name), util_strdup(r->queue),
                        util_strdup(r->pool), util_strdup_or_null(r->note), r->members,           r->done };
}

static void group_list_free(group_list_t *l)
{
    for (int i = 0; i < l->n; i++) {
        group_info_t *g = &l->v[i];
        free(g->key), free(g->ns), free(g->name), free(g->queue), free(g->pool), free(g->note);
    }
    free(l->v);
}

/* Every row's groups (pn: the pools' names the rows name them by). */
static void group_list_get(scheduler_t *s, const pool_names_t *pn, group_list_t *l)
{
    memset(l, 0, sizeof *l);
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].groups)
            ext[i].groups(&s->rows[i], (const char *const *)pn->name, pn->n, take_group, l);
}

/* ------------------------------------------------------------ pending */

typedef struct prow {
    pod_t *pod;          /* a pod row's pod, a group row's oldest pending member */
    group_info_t *group; /* group rows: borrowed from the group list */
    const char *named;   /* the group its pod names (borrowed from the pod), or NULL */
    const char *ns, *name, *queue, *pool;
    int64_t since_ms;
} prow_t;

static int cmp_prow(const void *a, const void *b, void *ud)
{
    const prow_t *x = a, *y = b;
    const dash_sort_ctx_t *c = ud;
    /* Waiting longer sorts as a larger wait. */
    return dash_cmp_keys(c->now - x->since_ms, c->now - y->since_ms, x->queue, y->queue, x->pool, y->pool, x->ns, y->ns,
                         x->name, y->name, c);
}

static int cmp_group_key(const void *a, const void *b)
{
    return strcmp((*(group_info_t *const *)a)->key, (*(group_info_t *const *)b)->key);
}

/* The group row of p, if p names a group a row keeps (g: that name). */
static group_info_t *group_of_pod(group_info_t **by_key, int n, const pod_t *p, const char *g)
{
    if (!g || !n)
        return NULL;
    char key[600];
    if ((size_t)snprintf(key, sizeof key, "%s/%s", p->ns, g) >= sizeof key)
        return NULL;
    group_info_t probe = { .key = key }, *pp = &probe;
    group_info_t **hit = bsearch(&pp, by_key, (size_t)n, sizeof *by_key, cmp_group_key);
    return hit ? *hit : NULL;
}

/* The pending pods of ours (refs, caller unrefs): pending in the cache,
 * our schedulerName, not being deleted. */
static int our_pending(scheduler_t *s, pod_t ***out)
{
    pod_t **all;
    int n = cache_pending_pods(s->cache, &all), m = 0;
    for (int i = 0; i < n; i++) {
        if (sched_is_ours(s, all[i]->scheduler_name) && !all[i]->deleting)
            all[m++] = all[i];
        else
            pod_unref(all[i]);
    }
    *out = all;
    return m;
}

static void unref_all(pod_t **v, int n)
{
    for (int i = 0; i < n; i++)
        pod_unref(v[i]);
    free(v);
}

json_t *scheduler_dash_pending(scheduler_t *s, const dash_list_opts_t *o)
{
    pool_names_t pn;
    pool_names_get(s, &pn);
    group_list_t gl;
    group_list_get(s, &pn, &gl);
    group_info_t **by_key = util_xcalloc((size_t)gl.n + 1, sizeof *by_key);
    for (int i = 0; i < gl.n; i++)
        by_key[i] = &gl.v[i];
    qsort(by_key, (size_t)gl.n, sizeof *by_key, cmp_group_key);
    int *group_row = util_xcalloc((size_t)gl.n + 1, sizeof *group_row); /* row index + 1 */

    pod_t **pods;
    int np = our_pending(s, &pods);
    prow_t *rows = util_xcalloc((size_t)np + 1, sizeof *rows);
    int nr = 0;
    for (int i = 0; i < np; i++) {
        pod_t *p = pods[i];
        const char *named = sched_rows_group_of(s, p);
        group_info_t *g = group_of_pod(by_key, gl.n, p, named);
        if (g) {
            int gi = (int)(g - gl.v);
            if (group_row[gi]) {
                prow_t *r = &rows[group_row[gi] - 1];
                if (p->created_ms < r->since_ms) {
                    r->since_ms = p->created_ms;
                    r->pod = p;
                }
                continue;
            }
            group_row[gi] = nr + 1;
            rows[nr++] = (prow_t){ p, g, named, g->ns, g->name, g->queue, pod_home_pool(p), p->created_ms };
            continue;
        }
        rows[nr++] = (prow_t){ p, NULL, named, p->ns, p->name, pod_queue(s, p), pod_home_pool(p), p->created_ms };
    }
    int m = 0;
    for (int i = 0; i < nr; i++) {
        prow_t *r = &rows[i];
        if (!dash_row_passes(o, r->pool, r->queue, r->ns, r->name))
            continue;
        rows[m++] = *r;
    }
    int64_t now = util_wall_ms();
    dash_sort_ctx_t c = { o->sort, o->desc, now };
    qsort_r(rows, (size_t)m, sizeof *rows, cmp_prow, &c);
    int off, lim;
    dash_clamp_page(o, m, &off, &lim);
    json_t *items = json_array();
    for (int i = off; i < m && i < off + lim; i++) {
        prow_t *r = &rows[i];
        int has = 0;
        char *why = record_reason(s, r->group ? "podgroup" : "pod", r->ns, r->name, &has);
        const char *cond = r->pod->scheduled_message && r->pod->scheduled_message[0] ? r->pod->scheduled_message : NULL;
        const char *reason = why                          ? why
                             : r->group && r->group->note ? r->group->note
                             : cond                       ? cond
                                                          : "waiting for its first attempt";
        int64_t w = now > r->since_ms ? (now - r->since_ms) / 1000 : 0;
        json_t *group = r->group ? json_string(r->group->key) : NULL;
        if (!group && r->named) /* names a group no row keeps: scheduled alone */
            group = json_null();
        json_array_append_new(items, json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:o, s:b}", "kind",
                                               r->group ? "gang" : "pod", "namespace", r->ns, "name", r->name, "queue",
                                               r->queue, "pool", r->pool, "waitingSeconds", (json_int_t)w, "reason",
                                               reason, "gang", group ? group : json_null(), "hasDecision", has));
        free(why);
    }
    free(rows);
    unref_all(pods, np);
    free(group_row);
    free(by_key);
    group_list_free(&gl);
    pool_names_free(&pn);
    return dash_page_doc(m, off, lim, items);
}

/* ------------------------------------------------------------ nodes */

typedef struct nrow {
    char *name;
    int pool, cordoned, ready, pods;
    int64_t whole, shared;
    double gpu_used;
    int64_t cpu_cap, cpu_used, mem_cap, mem_used;
    int dra, dra_used;
} nrow_t;

static int node_ready(const node_t *n)
{
    for (int i = 0; i < n->ntaints; i++)
        if (strcmp(n->taints[i].key, "node.kubernetes.io/not-ready") == 0 ||
            strcmp(n->taints[i].key, "node.kubernetes.io/unreachable") == 0)
            return 0;
    return 1;
}

/* Cache read lock and the node's stripe held: the node's figures, GPUs
 * as the rows' node_use count them. */
static void node_row(scheduler_t *s, const node_info_t *ni, nrow_t *r)
{
    const node_t *n = ni->node;
    memset(r, 0, sizeof *r);
    r->name = util_strdup(ni->name);
    r->pool = ni->pool;
    r->cordoned = n->unschedulable;
    r->ready = node_ready(n);
    for (int i = 0; i < ni->npods; i++)
        r->pods += !pod_is_terminal(ni->pods[i]);
    r->whole = res_get_scalar(&n->allocatable, RES_GPU);
    sched_node_use_t u = { .gpu_used = (double)res_get_scalar(&ni->requested, RES_GPU) };
    int next = 0;
    const sched_ext_t *ext = sched_extensions(&next);
    for (int i = 0; i < s->nrows && i < next; i++)
        if (ext[i].node_use)
            ext[i].node_use(&s->rows[i], ni, &u);
    r->shared = u.gpu_shared;
    r->gpu_used = u.gpu_used;
    r->dra = u.dra_devices;
    r->dra_used = u.dra_used;
    r->cpu_cap = n->allocatable.milli_cpu;
    r->cpu_used = ni->requested.milli_cpu;
    r->mem_cap = n->allocatable.memory;
    r->mem_used = ni->requested.memory;
}

static int nodes_get(scheduler_t *s, nrow_t **out)
{
    cache_rdlock(s->cache);
    int n;
    node_info_t *const *v = cache_nodes_locked(s->cache, &n);
    nrow_t *rows = util_xcalloc((size_t)n + 1, sizeof *rows);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (!v[i]->node)
            continue;
        /* Its pool thread may be reserving on it (under the read lock). */
        cache_node_lock(s->cache, v[i]->name);
        node_row(s, v[i], &rows[m++]);
        cache_node_unlock(s->cache, v[i]->name);
    }
    cache_unlock(s->cache);
    *out = rows;
    return m;
}

static void nodes_free(nrow_t *rows, int n)
{
    for (int i = 0; i < n; i++)
        free(rows[i].name);
    free(rows);
}

static int cmp_nrow(const void *a, const void *b)
{
    return strcmp(((const nrow_t *)a)->name, ((const nrow_t *)b)->name);
}

/* A node's item on the nodes page, which the rows' node_doc add to. */
typedef struct node_doc_ctx {
    scheduler_t *s;
    json_t *item;
    int seen;
} node_doc_ctx_t;

/* The rows' node_doc for ni (NULL: the node left the cache). */
static void rows_node_doc(scheduler_t *s, const node_info_t *ni, json_t *item)
{
    int n = 0;
    const sched_ext_t *ext = sched_extensions(&n);
    for (int i = 0; i < s->nrows && i < n; i++)
        if (ext[i].node_doc)
            ext[i].node_doc(&s->rows[i], ni, item);
}

/* cache_node_visit's fn (cache read lock and the node's stripe held). */
static void node_doc_of(void *ud, const node_info_t *ni)
{
    node_doc_ctx_t *c = ud;
    c->seen = 1;
    rows_node_doc(c->s, ni, c->item);
}

json_t *scheduler_dash_nodes(scheduler_t *s, const dash_list_opts_t *o)
{
    pool_names_t pn;
    pool_names_get(s, &pn);
    nrow_t *rows;
    int n = nodes_get(s, &rows), m = 0;
    qsort(rows, (size_t)n, sizeof *rows, cmp_nrow);
    int *sel = util_xcalloc((size_t)n + 1, sizeof *sel);
    for (int i = 0; i < n; i++) {
        if (o->pool && strcmp(o->pool, pool_name(&pn, rows[i].pool)) != 0)
            continue;
        if (o->q && o->q[0] && !strstr(rows[i].name, o->q))
            continue;
        sel[m++] = i;
    }
    int off, lim;
    dash_clamp_page(o, m, &off, &lim);
    json_t *items = json_array();
    for (int k = off; k < m && k < off + lim; k++) {
        nrow_t *r = &rows[sel[k]];
        json_t *item = json_pack("{s:s, s:s, s:b, s:b, s:{s:I, s:o, s:I, s:o}, s:{s:I, s:I}, s:{s:I, s:I}, s:i}",
                                 "name", r->name, "pool", pool_name(&pn, r->pool), "cordoned", r->cordoned, "ready",
                                 r->ready, "gpu", "whole", (json_int_t)r->whole, "used", util_json_num(r->gpu_used),
                                 "shared", (json_int_t)r->shared, "free", util_json_num((double)r->whole - r->gpu_used),
                                 "cpu", "capacity", (json_int_t)r->cpu_cap, "used", (json_int_t)r->cpu_used, "memory",
                                 "capacity", (json_int_t)r->mem_cap, "used", (json_int_t)r->mem_used, "pods", r->pods);
        node_doc_ctx_t c = { s, item, 0 };
        cache_node_visit(s->cache, r->name, node_doc_of, &c);
        if (!c.seen)
            rows_node_doc(s, NULL, item);
        json_array_append_new(items, item);
    }
    free(sel);
    nodes_free(rows, n);
    pool_names_free(&pn);
    return dash_page_doc(m, off, lim, items);
}

json_t *scheduler_dash_nodes_map(scheduler_t *s)
{
    pool_names_t pn;
    pool_names_get(s, &pn);
    nrow_t *rows;
    int n = nodes_get(s, &rows);
    qsort(rows, (size_t)n, sizeof *rows, cmp_nrow);
    /* Pools listed in id order (live ones); a node's index is into this list. */
    json_t *pools = json_array();
    int *idx = util_xcalloc((size_t)pn.n + 1, sizeof *idx);
    for (int i = 0; i < pn.n; i++) {
        idx[i] = -1;
        if (pn.name[i]) {
            idx[i] = (int)json_array_size(pools);
            json_array_append_new(pools, json_string(pn.name[i]));
        }
    }
    json_t *nodes = json_array();
    for (int i = 0; i < n; i++) {
        nrow_t *r = &rows[i];
        int state = !r->ready ? 2 : r->cordoned ? 1 : 0;
        int pi = r->pool >= 0 && r->pool < pn.n ? idx[r->pool] : -1;
        int pct = r->cpu_cap > 0 ? (int)(r->cpu_used * 100 / r->cpu_cap) : 0;
        json_array_append_new(nodes,
                              json_pack("[s, i, i, I, o, I, i, i, i]", r->name, pi, state, (json_int_t)r->whole,
                                        util_json_num(r->gpu_used), (json_int_t)r->shared, pct, r->dra, r->dra_used));
    }
    free(idx);
    nodes_free(rows, n);
    pool_names_free(&pn);
    return json_pack("{s:o, s:[s,s,s,s,s,s,s,s,s], s:o}", "pools", pools, "fields", "name", "pool", "state", "gpu",
                     "gpuUsed", "gpuShared", "cpuPct", "dra", "draUsed", "nodes", nodes);
}

/* ------------------------------------------------------------ overview */

enum { R_GPU = 0, R_CPU, R_MEM, R_N };
static const char *const r_names[R_N] = { "gpu", "cpu", "memory" };

typedef struct res_sum {
    double cap[R_N], used[R_N], shared[R_N], pend[R_N];
} res_sum_t;

typedef struct flow {
    char *from, *to;
    double v[R_N];
    int pods;
} flow_t;

typedef struct overview_ctx {
    scheduler_t *s;
    const pool_names_t *pn;
    flow_t *flows;
    int nflows, cap;
} overview_ctx_t;

static flow_t *flow_at(overview_ctx_t *c, const char *from, const char *to)
{
    for (int i = 0; i < c->nflows; i++)
        if (strcmp(c->flows[i].from, from) == 0 && strcmp(c->flows[i].to, to) == 0)
            return &c->flows[i];
    if (c->nflows == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 8;
        c->flows = util_xrealloc(c->flows, (size_t)c->cap * sizeof *c->flows);
    }
    flow_t *f = &c->flows[c->nflows++];
    memset(f, 0, sizeof *f);
    f->from = util_strdup(from);
    f->to = util_strdup(to);
    return f;
}

/* Cache read lock and ni's stripe held: pods running on ni whose home pool is not ni's pool are
 * lent by ni's pool to theirs. */
static void lending_of(overview_ctx_t *c, const node_info_t *ni)
{
    const char *owner = pool_name(c->pn, ni->pool);
    for (int k = 0; k < ni->npods; k++) {
        const pod_t *p = ni->pods[k];
        if (pod_is_terminal(p))
            continue;
        sched_pod_use_t u = pod_use(c->s, p);
        if (u.holder)
            continue;
        const char *home = pod_home_pool(p);
        if (strcmp(home, owner) == 0)
            continue;
        flow_t *f = flow_at(c, owner, home);
        f->v[R_GPU] += u.gpus;
        f->v[R_CPU] += (double)p->requests.milli_cpu;
        f->v[R_MEM] += (double)p->requests.memory;
        f->pods++;
    }
}

static json_t *flow_json(const flow_t *f, const char *key, const char *who)
{
    json_t *o = json_pack("{s:s, s:o, s:o, s:o, s:i}", key, who, "gpu", util_json_num(f->v[R_GPU]), "cpu",
                          util_json_num(f->v[R_CPU]), "memory", util_json_num(f->v[R_MEM]), "pods", f->pods);
    return o;
}

static json_t *res_json(const res_sum_t *r)
{
    json_t *o = json_object();
    for (int k = 0; k < R_N; k++)
        json_object_set_new(o, r_names[k],
                            json_pack("{s:o, s:o, s:o, s:o, s:o}", "capacity", util_json_num(r->cap[k]), "used",
                                      util_json_num(r->used[k]), "shared", util_json_num(r->shared[k]), "free",
                                      util_json_num(r->cap[k] - r->used[k]), "pending", util_json_num(r->pend[k])));
    return o;
}

json_t *scheduler_dash_overview(scheduler_t *s)
{
    pool_names_t pn;
    pool_names_get(s, &pn);
    int np = pn.n;
    res_sum_t *rs = util_xcalloc((size_t)np + 1, sizeof *rs);
    int *nodes = util_xcalloc((size_t)np + 1, sizeof *nodes), *cordoned = util_xcalloc((size_t)np + 1, sizeof(int)),
        *notready = util_xcalloc((size_t)np + 1, sizeof(int)), *pending = util_xcalloc((size_t)np + 1, sizeof(int)),
        *waiting = util_xcalloc((size_t)np + 1, sizeof(int));
    overview_ctx_t c = { .s = s, .pn = &pn };

    cache_rdlock(s->cache);
    int n;
    node_info_t *const *v = cache_nodes_locked(s->cache, &n);
    for (int i = 0; i < n; i++) {
        if (!v[i]->node)
            continue;
        nrow_t r;
        cache_node_lock(s->cache, v[i]->name);
        node_row(s, v[i], &r);
        lending_of(&c, v[i]);
        cache_node_unlock(s->cache, v[i]->name);
        int p = r.pool >= 0 && r.pool < np ? r.pool : DEFAULT_POOL_ID;
        nodes[p]++;
        cordoned[p] += r.cordoned;
        notready[p] += !r.ready;
        rs[p].cap[R_GPU] += (double)r.whole;
        rs[p].used[R_GPU] += r.gpu_used;
        rs[p].shared[R_GPU] += (double)r.shared;
        rs[p].cap[R_CPU] += (double)r.cpu_cap;
        rs[p].used[R_CPU] += (double)r.cpu_used;
        rs[p].cap[R_MEM] += (double)r.mem_cap;
        rs[p].used[R_MEM] += (double)r.mem_used;
        free(r.name);
    }
    cache_unlock(s->cache);

    pod_t **pods;
    int npend = our_pending(s, &pods);
    for (int i = 0; i < npend; i++) {
        int p = pool_index(&pn, pod_home_pool(pods[i]));
        if (p < 0)
            continue; /* its pool does not exist: no pool's pending */
        pending[p]++;
        rs[p].pend[R_GPU] += pod_use(s, pods[i]).gpus;
        rs[p].pend[R_CPU] += (double)pods[i]->requests.milli_cpu;
        rs[p].pend[R_MEM] += (double)pods[i]->requests.memory;
    }
    unref_all(pods, npend);
    /* Waiting: a group whose minimum is not placed (a gang: not only those
     * holding back backfill, as the gangs_waiting metric counts). */
    group_list_t gl;
    group_list_get(s, &pn, &gl);
    for (int i = 0; i < gl.n; i++) {
        int p = pool_index(&pn, gl.v[i].pool);
        if (p >= 0 && !gl.v[i].done && gl.v[i].members > 0)
            waiting[p]++;
    }
    group_list_free(&gl);

    json_t *pools = json_array();
    res_sum_t tot = { 0 };
    for (int p = 0; p < np; p++) {
        if (!pn.name[p])
            continue;
        json_t *lent = json_array(), *borrowed = json_array();
        for (int f = 0; f < c.nflows; f++) {
            if (strcmp(c.flows[f].from, pn.name[p]) == 0)
                json_array_append_new(lent, flow_json(&c.flows[f], "pool", c.flows[f].to));
            if (strcmp(c.flows[f].to, pn.name[p]) == 0)
                json_array_append_new(borrowed, flow_json(&c.flows[f], "pool", c.flows[f].from));
        }
        for (int k = 0; k < R_N; k++) {
            tot.cap[k] += rs[p].cap[k];
            tot.used[k] += rs[p].used[k];
            tot.shared[k] += rs[p].shared[k];
            tot.pend[k] += rs[p].pend[k];
        }
        json_array_append_new(pools, json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:o, s:o, s:o}", "name", pn.name[p],
                                               "nodes", nodes[p], "cordoned", cordoned[p], "notReady", notready[p],
                                               "pendingPods", pending[p], "waitingGangs", waiting[p], "resources",
                                               res_json(&rs[p]), "lentTo", lent, "borrowedFrom", borrowed));
    }
    json_t *lending = json_array();
    for (int f = 0; f < c.nflows; f++) {
        json_t *o = flow_json(&c.flows[f], "from", c.flows[f].from);
        json_object_set_new(o, "to", json_string(c.flows[f].to));
        json_array_append_new(lending, o);
        free(c.flows[f].from);
        free(c.flows[f].to);
    }
    free(c.flows);
    free(rs), free(nodes), free(cordoned), free(notready), free(pending), free(waiting);
    pool_names_free(&pn);
    return json_pack("{s:o, s:o, s:o}", "pools", pools, "lending", lending, "totals", res_json(&tot));
}

/* ------------------------------------------------------------ queues */

json_t *scheduler_dash_queues(scheduler_t *s)
{
    return json_pack("{s:o}", "queues", s->queues.ops->dashboard(s->queues.self));
}

typedef struct qsample {
    char *name;
    double alloc[3], fair[3];
} qsample_t;

typedef struct qsample_list {
    qsample_t *v;
    int n, cap;
} qsample_list_t;

static void take_sample(void *ud, const char *queue, const char *pool, const double alloc[3], const double fair[3],
                        int pending)
{
    (void)pool, (void)pending;
    qsample_list_t *l = ud;
    qsample_t *q = NULL;
    for (int i = 0; i < l->n && !q; i++)
        if (strcmp(l->v[i].name, queue) == 0)
            q = &l->v[i];
    if (!q) {
        if (l->n == l->cap) {
            l->cap = l->cap ? l->cap * 2 : 16;
            l->v = util_xrealloc(l->v, (size_t)l->cap * sizeof *l->v);
        }
        q = &l->v[l->n++];
        memset(q, 0, sizeof *q);
        q->name = util_strdup(queue);
    }
    for (int r = 0; r < 3; r++) {
        /* The store's memory is in MB (10^6 bytes). */
        double k = r == FS_MEM ? 1e6 : 1;
        q->alloc[r] += alloc[r] * k;
        q->fair[r] += fair[r] * k;
    }
}

void scheduler_dash_queue_sample(scheduler_t *s, dash_queue_sample_fn fn, void *ud)
{
    qsample_list_t l = { 0 };
    scheduler_each_queue(s, take_sample, &l);
    for (int i = 0; i < l.n; i++) {
        fn(ud, l.v[i].name, l.v[i].alloc, l.v[i].fair);
        free(l.v[i].name);
    }
    free(l.v);
}
