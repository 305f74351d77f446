/* trace.c -- the scheduler's side of decision records (explain/): the steps
 * the rows say while a set is not placed, and the record written when it
 * is given back; dropped when it is placed or leaves. A set that places
 * at once costs one NULL check (trace_set_diag) and one atomic read
 * (trace_set_placed, while no record is kept). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "explain/explain.h"
#include "scheduler/internal.h"
#include "util/util.h"

#define TRACE_MAX_PLUGINS 16

static pod_set_trace_t *trace_of(pod_set_t *set)
{
    if (!set->trace) {
        set->trace = util_xcalloc(1, sizeof(*set->trace));
        set->trace->steps = json_array();
    }
    return set->trace;
}

void pod_set_step(pod_set_t *set, const char *step, const char *result, const char *fmt, ...)
{
    if (!set->records)
        return; /* no records kept: nothing would read it */
    char detail[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    json_array_append_new(trace_of(set)->steps,
                          json_pack("{s:s, s:s, s:s}", "step", step, "result", result, "detail", detail));
}

void trace_set_diag(pod_set_t *set, fw_diagnosis_t *diag, int nodes)
{
    if (!diag)
        return;
    if (!set->P->s->explain) {
        fw_diagnosis_free(diag); /* taken, and not kept */
        return;
    }
    pod_set_trace_t *t = trace_of(set);
    fw_diagnosis_free(t->diag);
    t->diag = diag;
    t->nodes = nodes;
}

void trace_set_free(pod_set_t *set)
{
    pod_set_trace_t *t = set->trace;
    if (!t)
        return;
    json_decref(t->steps);
    fw_diagnosis_free(t->diag);
    free(t);
    set->trace = NULL;
}

/* ---------------------------------------------------------- the record */

/* Its queue: name, usage and fair share in the pool, their ratio. */
static json_t *queue_json(sched_pool_t *P, const pod_t *pod)
{
    scheduler_t *s = P->s;
    return s->queues.ops->pod_json(s->queues.self, P->id, P->name, pod);
}

typedef struct pool_free {
    int pool;
    int64_t gpu, one, cap;
    int nodes;
} pool_free_t;

/* What the pool's nodes have free now, for the hint (GPU pods only). */
static void pool_free_scan(scheduler_t *s, pool_free_t *pf)
{
    cache_rdlock(s->cache);
    int n = 0;
    node_info_t *const *nodes = cache_nodes_locked(s->cache, &n);
    for (int i = 0; i < n; i++) {
        node_info_t *ni = nodes[i];
        if (ni->pool != pf->pool || !ni->node)
            continue;
        int64_t cap = res_get_scalar(&ni->node->allocatable, RES_GPU);
        int64_t used = res_get_scalar(&ni->requested, RES_GPU);
        int64_t free_ = cap > used ? cap - used : 0;
        pf->nodes++;
        pf->gpu += free_;
        if (free_ > pf->one)
            pf->one = free_;
        if (cap > pf->cap)
            pf->cap = cap;
    }
    cache_unlock(s->cache);
}

static void add_request(json_t *rec, pod_set_t *set, const pod_t *pod)
{
    int64_t gpu = 0, cpu = 0, mem = 0;
    int n = set->need > 0 ? set->need : 1;
    for (int i = 0; i < n && i < set->n; i++) {
        const pod_t *p = set->items[i] ? set->items[i]->pod : NULL;
        if (!p)
            continue;
        if (set->kind != SET_MINIMUM && p != pod)
            continue;
        gpu += res_get_scalar(&p->requests, RES_GPU);
        cpu += p->requests.milli_cpu;
        mem += p->requests.memory;
    }
    json_object_set_new(rec, "request",
                        json_pack("{s:I, s:I, s:I}", "gpu", (json_int_t)gpu, "cpuMillicores", (json_int_t)cpu,
                                  "memoryBytes", (json_int_t)mem));
    if (gpu <= 0)
        return;
    /* One node per pod: a gang's hint speaks of its largest member. */
    int64_t one_pod = res_get_scalar(&pod->requests, RES_GPU);
    if (set->kind == SET_MINIMUM)
        json_object_set_new(json_object_get(rec, "request"), "gpuPerPod", json_integer(one_pod));
    pool_free_t pf = { .pool = set->P->id };
    pool_free_scan(set->P->s, &pf);
    json_object_set_new(rec, "poolFree",
                        json_pack("{s:i, s:I, s:I, s:I}", "nodes", pf.nodes, "gpu", (json_int_t)pf.gpu,
                                  "gpuMaxOnOneNode", (json_int_t)pf.one, "gpuMaxCapacity", (json_int_t)pf.cap));
}

static void add_filters(json_t *rec, const pod_set_t *set, const pod_set_trace_t *t)
{
    if (!t || !t->diag)
        return;
    int max = 0;
    for (int i = 0; i < fw_diagnosis_len(t->diag); i++) {
        const char *reason, *plugin;
        const char *const *ex;
        int count, nex;
        if (fw_diagnosis_get(t->diag, i, &reason, &plugin, &count, &ex, &nex) == 0) {
            explain_record_filter(rec, plugin, reason, count, ex, nex);
            if (count > max)
                max = count;
        }
    }
    json_object_set_new(rec, "nodesEvaluated", json_integer(t->nodes > 0 ? t->nodes : max));
    /* The member the filter pass was for: the first that did not fit. */
    if (set->kind == SET_MINIMUM && set->fits < set->n && set->items[set->fits])
        json_object_set_new(rec, "failedMember", json_string(set->items[set->fits]->pod->key));
}

static void add_top_nodes(json_t *rec, sched_pool_t *P, const pod_t *pod)
{
    char *names[EXPLAIN_TOP_NODES] = { 0 };
    int64_t totals[EXPLAIN_TOP_NODES], pp[EXPLAIN_TOP_NODES * TRACE_MAX_PLUGINS];
    const char *plugins[TRACE_MAX_PLUGINS];
    int np = 0;
    int n = sched_top_nodes(P, pod, EXPLAIN_TOP_NODES, names, totals, pp, plugins, TRACE_MAX_PLUGINS, &np);
    for (int i = 0; i < n; i++) {
        json_t *sc = json_object();
        for (int p = 0; p < np; p++)
            json_object_set_new(sc, plugins[p], json_integer(pp[i * TRACE_MAX_PLUGINS + p]));
        explain_record_top_node(rec, names[i], totals[i], sc);
        free(names[i]);
    }
}

/* A group's minimum is recorded under its group (each member's record
 * is a copy); anything else under its pod. */
static int set_is_group(const pod_set_t *set)
{
    return set->kind == SET_MINIMUM && set->group.kind;
}

/* A held set is tried again at every event (a gang created pod by pod
 * is held once per arrival): its best nodes are a filter pass over the
 * pool, so the last record's are kept for TRACE_TOP_REUSE_MS. */
#define TRACE_TOP_REUSE_MS 10000

static void top_nodes_fresh(json_t *rec, pod_set_t *set, const pod_t *pod, int is_group)
{
    scheduler_t *s = set->P->s;
    int64_t now = util_wall_ms();
    const char *ns = is_group ? set->group.ns : pod->ns, *name = is_group ? set->group.name : pod->name;
    json_t *prev =
        set->outcome == SET_HELD ? explain_get(s->explain, is_group ? set->group.kind : "pod", ns, name) : NULL;
    json_int_t at = json_integer_value(json_object_get(prev, "topNodesAtMs"));
    if (prev && at > 0 && now - at < TRACE_TOP_REUSE_MS) {
        json_object_set(rec, "topNodes", json_object_get(prev, "topNodes"));
        json_object_set_new(rec, "topNodesAtMs", json_integer(at));
    } else {
        add_top_nodes(rec, set->P, pod);
        json_object_set_new(rec, "topNodesAtMs", json_integer(now));
    }
    json_decref(prev);
}

/* gang_blocker's reason names the gang: "waiting behind pod group ns/name, which ...". */
static char *behind_of(const char *detail)
{
    static const char pfx[] = "waiting behind pod group ";
    const char *p = detail ? strstr(detail, pfx) : NULL;
    if (!p)
        return NULL;
    p += sizeof(pfx) - 1;
    const char *e = strchr(p, ',');
    return e ? util_strndup(p, (size_t)(e - p)) : util_strdup(p);
}

/* The steps: admission and topology (the gang's) have keys of their own,
 * the rest are postFilter's. Returns the gang it waits behind (caller
 * frees); *topo: the topology row's steps (new reference). */
static char *add_steps(json_t *rec, const pod_set_trace_t *t, int admitted, json_t **topo)
{
    *topo = json_array();
    char *behind = NULL;
    json_t *adm = NULL;
    size_t i;
    json_t *st;
    if (t)
        json_array_foreach (t->steps, i, st) {
            const char *name = json_string_value(json_object_get(st, "step"));
            const char *result = json_string_value(json_object_get(st, "result"));
            const char *detail = json_string_value(json_object_get(st, "detail"));
            if (strcmp(name, "admission") == 0) {
                json_decref(adm);
                adm = json_pack("{s:s, s:s}", "verdict", result, "message", detail);
                continue;
            }
            if (strcmp(name, "topology") == 0) {
                json_array_append_new(*topo, json_pack("{s:s, s:s}", "result", result, "detail", detail));
                continue;
            }
            if (strcmp(name, "gang-wait") == 0 && strcmp(result, "behind") == 0 && !behind)
                behind = behind_of(detail);
            explain_record_step(rec, name, result, detail);
        }
    if (!adm)
        adm = json_pack("{s:s}", "verdict", admitted ? "admitted" : "not reached");
    json_object_set_new(rec, "admission", adm);
    json_object_set_new(rec, "waitingBehind", behind ? json_string(behind) : json_null());
    return behind;
}

/* The set's group as a row records it (the record point), else only
 * what it waits behind. */
static json_t *group_json(pod_set_t *set, const char *behind)
{
    json_t *j = sched_rows_record(set->P->s, set, behind);
    if (j)
        return j;
    return behind ? json_pack("{s:s}", "waitingBehind", behind) : json_null();
}

static const char *outcome_name(set_outcome_t o)
{
    switch (o) {
    case SET_HELD: return "held";
    case SET_ROOM: return "making room";
    case SET_MOVED: return "moved";
    default: return "unschedulable";
    }
}

void trace_set_done(pod_set_t *set, const char *msg)
{
    sched_pool_t *P = set->P;
    scheduler_t *s = P->s;
    if (!s->explain || set->n <= 0 || !set->items[0])
        return;
    queue_item_t *first = set->items[0];
    const pod_t *pod = first->pod;
    pod_set_trace_t *t = set->trace;
    int is_group = set_is_group(set);
    json_t *rec = explain_record_new(is_group ? set->group.kind : "pod", pod->key, P->name, util_wall_ms());
    json_object_set_new(rec, "attempts", json_integer(first->attempts + 1));
    json_object_set_new(rec, "message", msg ? json_string(msg) : json_null());
    json_object_set_new(rec, "outcome", json_string(outcome_name(set->outcome)));
    json_object_set_new(rec, "queue", queue_json(P, pod));
    add_request(rec, set, pod);
    add_filters(rec, set, t);
    /* Where it would go: only when no filter pass said "nowhere". */
    if (!t || !t->diag || set->fits > 0)
        top_nodes_fresh(rec, set, pod, is_group);
    json_t *topo = NULL;
    char *behind = add_steps(rec, t, set->outcome != SET_HELD, &topo);
    json_t *gang = group_json(set, behind);
    if (json_is_object(gang))
        json_object_set(gang, "topology", topo);
    json_decref(topo);
    json_object_set_new(rec, "gang", gang);
    free(behind);
    char *hint = explain_hint(rec);
    json_object_set_new(rec, "hint", hint ? json_string(hint) : json_null());
    free(hint);
    if (is_group) {
        /* Each member's own record is the group's, named for it. */
        for (int i = 0; i < set->n; i++) {
            if (!set->items[i])
                continue;
            const pod_t *m = set->items[i]->pod;
            json_t *mine = json_copy(rec);
            json_object_set_new(mine, "kind", json_string("pod"));
            json_object_set_new(mine, "pod", json_string(m->key));
            explain_put(s->explain, "pod", m->ns, m->name, mine);
        }
        explain_put(s->explain, set->group.kind, set->group.ns, set->group.name, rec);
    } else {
        explain_put(s->explain, "pod", pod->ns, pod->name, rec);
    }
}

void trace_set_placed(pod_set_t *set)
{
    scheduler_t *s = set->P->s;
    if (explain_count(s->explain) == 0)
        return;
    for (int i = 0; i < set->need && i < set->n; i++)
        if (set->items[i])
            explain_drop(s->explain, "pod", set->items[i]->pod->ns, set->items[i]->pod->name);
    if (set_is_group(set))
        explain_drop(s->explain, set->group.kind, set->group.ns, set->group.name);
}

void trace_forget(scheduler_t *s, const char *kind, const char *key)
{
    const char *slash = key ? strchr(key, '/') : NULL;
    if (!slash || explain_count(s->explain) == 0)
        return;
    char *ns = util_strndup(key, (size_t)(slash - key));
    explain_drop(s->explain, kind, ns, slash + 1);
    free(ns);
}

/* --------------------------------------------------------- the queries */

json_t *scheduler_explain(scheduler_t *s, const char *kind, const char *ns, const char *name)
{
    if (!s || !kind || !ns || !name)
        return NULL;
    return explain_get(s->explain, kind, ns, name);
}

typedef struct find_pod {
    const char *ns, *name;
    char *node, *scheduler;
    int found;
} find_pod_t;

char *scheduler_explain_absent(scheduler_t *s, const char *kind, const char *ns, const char *name)
{
    /* A group's kind is its row's to explain (the rows' absent point). */
    char *group = sched_rows_absent(s, kind, ns, name);
    if (group)
        return group;
    sbuf_t b = { 0 };
    sbuf_printf(&b, "no decision kept for pod %s/%s: ", ns, name);
    find_pod_t f = { ns, name, NULL, NULL, 0 };
    cache_rdlock(s->cache);
    int n = 0;
    node_info_t *const *nodes = cache_nodes_locked(s->cache, &n);
    for (int i = 0; i < n && !f.found; i++) {
        cache_node_lock(s->cache, nodes[i]->name);
        for (int k = 0; k < nodes[i]->npods; k++) {
            const pod_t *p = nodes[i]->pods[k];
            if (strcmp(p->ns, ns) == 0 && strcmp(p->name, name) == 0) {
                f.found = 1;
                f.node = util_strdup(nodes[i]->name);
                f.scheduler = util_strdup(p->scheduler_name ? p->scheduler_name : "");
                break;
            }
        }
        cache_node_unlock(s->cache, nodes[i]->name);
    }
    cache_unlock(s->cache);
    if (f.found && !sched_is_ours(s, f.scheduler))
        sbuf_printf(&b, "it is not ours (schedulerName %s); it is on node %s", f.scheduler, f.node);
    else if (f.found)
        sbuf_printf(&b, "it is bound to %s", f.node);
    else
        sbuf_puts(&b, "not seen (no pending pod of ours has been tried under this name)");
    free(f.node);
    free(f.scheduler);
    return b.data;
}
