/* dash.c -- what the gang row shows outside the cycle (gang/dash.h): the
 * PodGroups copied out of the store, then sorted, paged and built into
 * JSON with no lock held; the core is reached through the services. */
#include <stdlib.h>
#include <string.h>

#include "fairshare/fairshare.h"
#include "gang/dash.h"
#include "gang/room.h"
#include "util/util.h"

/* Pools' names by id (dead ones NULL), as the dashboard's pages take them. */
typedef struct pool_names {
    char **name;
    int n;
} pool_names_t;

static void copy_names(void *ud, const sched_pool_info_t *pools, int n)
{
    pool_names_t *pn = ud;
    pn->n = n;
    pn->name = util_xcalloc((size_t)n + 1, sizeof *pn->name);
    for (int i = 0; i < n; i++)
        if (!pools[i].dead)
            pn->name[i] = util_strdup(pools[i].name);
}

static void pool_names_free(pool_names_t *pn)
{
    for (int i = 0; i < pn->n; i++)
        free(pn->name[i]);
    free(pn->name);
}

static const char *pool_name(const char *const *names, int n, int id)
{
    return id >= 0 && id < n && names[id] ? names[id] : DEFAULT_POOL;
}

typedef struct gang_info {
    char *key, *ns, *name, *queue, *pool, *phase, *wait_msg, *behind, *topo, *invalid, *placed_node;
    int topo_required;
    int32_t min_member;
    int members, placed, waiting, timed_out;
    int64_t since_ms; /* first considered, else created (wall) */
} gang_info_t;

typedef struct gang_list {
    gang_info_t *v;
    int n, cap;
    const char *const *pools;
    int npools;
} gang_list_t;

static void take_gang(void *ud, const gang_row_t *r)
{
    gang_list_t *l = ud;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = util_xrealloc(l->v, (size_t)l->cap * sizeof *l->v);
    }
    gang_info_t *g = &l->v[l->n++];
    memset(g, 0, sizeof *g);
    g->key = util_strdup(r->key);
    g->ns = util_strdup(r->ns);
    g->name = util_strdup(r->name);
    /* The queue the scheduler charges (the tenants row's tenant_of): a
     * member's own label first, else the PodGroup's. */
    const char *q = r->member ? fs_pod_queue_label(r->member) : NULL;
    g->queue = util_strdup(q ? q : r->queue ? r->queue : FS_DEFAULT_QUEUE);
    g->pool = util_strdup(r->waiting ? pool_name(l->pools, l->npools, r->wait_pool)
                                     : (r->member_pool ? r->member_pool : DEFAULT_POOL));
    g->phase = util_strdup(r->phase ? r->phase : "Pending");
    g->wait_msg = util_strdup_or_null(r->wait_msg);
    g->behind = util_strdup_or_null(r->waiting_behind);
    g->topo = util_strdup_or_null(r->topo_level);
    g->placed_node = util_strdup_or_null(r->placed_node);
    g->invalid = util_strdup_or_null(r->invalid);
    g->topo_required = r->topo_required;
    g->min_member = r->min_member;
    g->members = r->members;
    g->placed = r->placed;
    g->waiting = r->waiting;
    g->timed_out = r->timed_out;
    g->since_ms = r->start_ms ? r->start_ms : r->created_ms;
}

static void gang_list_free(gang_list_t *l)
{
    for (int i = 0; i < l->n; i++) {
        gang_info_t *g = &l->v[i];
        free(g->key), free(g->ns), free(g->name), free(g->queue), free(g->pool), free(g->phase);
        free(g->wait_msg), free(g->behind), free(g->topo), free(g->invalid), free(g->placed_node);
    }
    free(l->v);
}

static void gang_list_get(const gang_room_t *r, const char *const *pools, int npools, gang_list_t *l)
{
    memset(l, 0, sizeof *l);
    l->pools = pools;
    l->npools = npools;
    gang_each_row(r->gangs, take_gang, l);
}

static int gang_done(const gang_info_t *g)
{
    return g->min_member > 0 && g->placed >= g->min_member;
}

static int64_t gang_wait_s(const gang_info_t *g, int64_t now)
{
    if (gang_done(g) || !g->since_ms || now < g->since_ms)
        return 0;
    return (now - g->since_ms) / 1000;
}

/* ------------------------------------------------------ groups point */

void gang_row_groups(const sched_row_t *row, const char *const *pools, int npools, sched_group_fn fn, void *ud)
{
    gang_list_t l;
    gang_list_get(row->self, pools, npools, &l);
    for (int i = 0; i < l.n; i++) {
        const gang_info_t *g = &l.v[i];
        sched_group_info_t info = { .key = g->key,
                                    .ns = g->ns,
                                    .name = g->name,
                                    .queue = g->queue,
                                    .pool = g->pool,
                                    .note = g->invalid ? g->invalid : g->wait_msg,
                                    .members = g->members,
                                    .done = gang_done(g) };
        fn(ud, &info);
    }
    gang_list_free(&l);
}

const char *gang_row_group_of(const sched_row_t *row, const pod_t *pod)
{
    (void)row;
    return gang_of(pod);
}

/* ------------------------------------------------------ the gang list */

static int cmp_gang(const void *a, const void *b, void *ud)
{
    const gang_info_t *x = *(gang_info_t *const *)a, *y = *(gang_info_t *const *)b;
    const dash_sort_ctx_t *c = ud;
    return dash_cmp_keys(gang_wait_s(x, c->now), gang_wait_s(y, c->now), x->queue, y->queue, x->pool, y->pool, x->ns,
                         y->ns, x->name, y->name, c);
}

typedef struct label_at {
    const char *key;
    char *value; /* malloc'd, NULL when the node lacks the label */
} label_at_t;

static void node_label_cb(void *ud, const node_info_t *ni)
{
    label_at_t *l = ud;
    const char *v = ni->node ? labels_get(&ni->node->labels, l->key) : NULL;
    l->value = v ? util_strdup(v) : NULL;
}

/* A gang's topology: its level, and the domain it holds: the level's
 * label on the node of a placed member (the cycle places a gang's minimum
 * in one domain); null while none is placed. */
static json_t *topo_doc(const gang_room_t *r, const gang_info_t *g)
{
    label_at_t l = { g->topo, NULL };
    if (g->placed_node)
        r->svc->node_visit(r->core, g->placed_node, node_label_cb, &l);
    json_t *o = json_pack("{s:s, s:b, s:o}", "key", g->topo, "required", g->topo_required, "domain",
                          l.value ? json_string(l.value) : json_null());
    free(l.value);
    return o;
}

static json_t *gang_item(const gang_room_t *r, const gang_info_t *g, int64_t now)
{
    int has = 0;
    char *why = gang_done(g) ? NULL : dash_record_reason(r->svc->explain(r->core, "podgroup", g->ns, g->name), &has);
    const char *reason = why            ? why
                         : g->invalid   ? g->invalid
                         : gang_done(g) ? ""
                         : g->wait_msg  ? g->wait_msg
                                        : "waiting for its first attempt";
    json_t *topo = g->topo ? topo_doc(r, g) : json_null();
    json_t *item = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:o, s:o, s:s, s:b}", "namespace", g->ns, "name", g->name,
        "queue", g->queue, "pool", g->pool, "phase", g->phase, "placed", g->placed, "minMember", g->min_member,
        "members", g->members, "waitingSeconds", (json_int_t)gang_wait_s(g, now), "waitingBehind",
        g->behind ? json_string(g->behind) : json_null(), "topology", topo, "reason", reason, "hasDecision", has);
    free(why);
    return item;
}

json_t *gang_row_dash_gangs(const sched_row_t *row, const dash_list_opts_t *o)
{
    const gang_room_t *r = row ? row->self : NULL;
    pool_names_t pn = { 0 };
    if (r)
        r->svc->pools_visit(r->core, copy_names, &pn);
    gang_list_t l = { 0 };
    if (r)
        gang_list_get(r, (const char *const *)pn.name, pn.n, &l);
    int64_t now = util_wall_ms();
    gang_info_t **sel = util_xcalloc((size_t)l.n + 1, sizeof *sel);
    int n = 0;
    for (int i = 0; i < l.n; i++) {
        gang_info_t *g = &l.v[i];
        if (!dash_row_passes(o, g->pool, g->queue, g->ns, g->name))
            continue;
        sel[n++] = g;
    }
    dash_sort_ctx_t c = { o->sort, o->desc, now };
    qsort_r(sel, (size_t)n, sizeof *sel, cmp_gang, &c);
    int off, lim;
    dash_clamp_page(o, n, &off, &lim);
    json_t *items = json_array();
    for (int i = off; i < n && i < off + lim; i++)
        json_array_append_new(items, gang_item(r, sel[i], now));
    free(sel);
    gang_list_free(&l);
    pool_names_free(&pn);
    return dash_page_doc(n, off, lim, items);
}

/* ------------------------------------------------------ /metrics */

typedef struct live_pools {
    int *id;
    char **name;
    int n, npools;
} live_pools_t;

static void copy_live(void *ud, const sched_pool_info_t *pools, int n)
{
    live_pools_t *lp = ud;
    lp->npools = n;
    lp->id = util_xcalloc((size_t)n + 1, sizeof *lp->id);
    lp->name = util_xcalloc((size_t)n + 1, sizeof *lp->name);
    for (int i = 0; i < n; i++) {
        if (pools[i].dead)
            continue;
        lp->id[lp->n] = pools[i].id;
        lp->name[lp->n++] = util_strdup(pools[i].name);
    }
}

void gang_row_each_pool(const sched_row_t *row, void (*fn)(void *ud, const char *pool, int waiting), void *ud)
{
    const gang_room_t *r = row ? row->self : NULL;
    if (!r)
        return;
    live_pools_t lp = { 0 };
    r->svc->pools_visit(r->core, copy_live, &lp);
    int *per_pool = util_xcalloc((size_t)lp.npools + 1, sizeof *per_pool);
    gang_count_waiting(r->gangs, per_pool, lp.npools);
    for (int i = 0; i < lp.n; i++) {
        fn(ud, lp.name[i], lp.id[i] < lp.npools ? per_pool[lp.id[i]] : 0);
        free(lp.name[i]);
    }
    free(per_pool);
    free(lp.id);
    free(lp.name);
}
