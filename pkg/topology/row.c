/* row.c -- the topology row (PreFilter-like, on a pool thread): a gang
 * whose PodGroup asks for a topology level (resource.aibee.cn/topology-*)
 * goes to the domain that fits its whole minimum and strands the least;
 * topology.c's rules choose it, on copies of the pool's nodes the core
 * builds (services' sim_build). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gang/gang.h"
#include "topology/pool.h"
#include "topology/row.h"
#include "util/log.h"
#include "util/util.h"

/* The row's room: the levels gangs may ask for, widest first. */
typedef struct topo_room {
    topo_levels_t levels;
} topo_room_t;

int topology_row_check(const scheduler_opts_t *o, char *err, size_t errlen)
{
    topo_levels_t l;
    if (topo_levels_parse(o->topology_levels, &l, err, errlen) != 0)
        return -1;
    topo_levels_free(&l);
    return 0;
}

void *topology_row_init(const sched_services_t *svc, void *core)
{
    topo_room_t *r = util_xcalloc(1, sizeof(*r));
    char err[256];
    /* check refused what fails here before any room was made: only a
     * table built without it (a test's) gets here with no levels. */
    if (topo_levels_parse(svc->opts(core)->topology_levels, &r->levels, err, sizeof(err)) != 0)
        LOG_E("topology levels: %s: none kept", err);
    return r;
}

void topology_row_fini(void *self)
{
    topo_room_t *r = self;
    if (!r)
        return;
    topo_levels_free(&r->levels);
    free(r);
}

void topology_row_publish(const sched_row_t *row, sched_published_t *pub)
{
    pub->topo_levels = &((topo_room_t *)row->self)->levels;
}

typedef struct topo_sim {
    const sched_row_t *row;
    sched_sim_t *sim;
    queue_item_t **items;
    int need;
} topo_sim_t;

/* topo_fit_fn: the whole minimum on these copies, first fit in member
 * order (each member sees the ones before it); the copies are restored. */
static int topo_fit(void *ud, node_info_t **nodes, int n)
{
    topo_sim_t *t = ud;
    int *where = util_xcalloc((size_t)t->need + 1, sizeof(*where));
    int placed = 0, ok = 1;
    for (int i = 0; i < t->need && ok; i++) {
        pod_t *pod = t->items[i]->pod;
        framework_t *fw = t->row->svc->pod_fw(t->row->core, pod);
        int k;
        for (k = 0; k < n; k++) {
            fw_status_t st;
            fw_status_reset(&st);
            if (framework_filter(fw, t->sim->cs[i], pod, nodes[k], &st) == FW_SUCCESS)
                break;
        }
        if (k == n) {
            ok = 0;
        } else {
            node_info_add_pod(nodes[k], pod);
            where[placed++] = k;
        }
    }
    for (int j = 0; j < placed; j++)
        node_info_remove_pod(nodes[where[j]], t->items[j]->pod->uid);
    free(where);
    return ok;
}

static void podgroup_event(const sched_row_t *row, const gang_snap_t *g, const char *type, const char *reason,
                           const char *msg)
{
    row->svc->object_event_ref(row->core, "PodGroup", PODGROUP_VERSION, g->ns, g->name, g->uid, type, reason, msg);
}

/* The domain the gang's minimum goes to. 1 with *dom (the caller frees
 * it) and *placed_msg for the event once placed; 0 when nothing
 * constrains the placement (no level, or preferred and no domain fits at
 * any level); -1 when required and no domain fits (*why, malloc'd). */
static int choose_domain(const sched_row_t *row, const pod_set_t *set, topo_domain_t *dom, char **placed_msg,
                         char **why)
{
    const sched_services_t *svc = row->svc;
    const gang_snap_t *g = svc->set_gang(row->core, set);
    queue_item_t **items = set->items;
    int need = set->need;
    const topo_levels_t *levels = svc->topo_levels(row->core);
    memset(dom, 0, sizeof(*dom));
    *placed_msg = *why = NULL;
    if (topo_level_index(levels, g->topo_level) < 0 && items[0]->attempts == 0) {
        sbuf_t w = { 0 };
        sbuf_printf(&w, "topology level %s is not one of --topology-levels: %s", g->topo_level,
                    !g->topo_required                  ? "no wider level to fall back to"
                    : topo_level_device(g->topo_level) ? "a device level must be configured to be read"
                                                       : "taken as a plain node label");
        podgroup_event(row, g, "Warning", "UnknownTopologyLevel", w.data);
        sbuf_free(&w);
    }
    pod_t **pods = pod_set_pods(set);
    sched_sim_t sim;
    int built = svc->sim_build(row->core, set->pool_id, pods, need, &sim);
    free(pods);
    if (built != 0) {
        svc->sim_free(row->core, &sim);
        return 0; /* a member's PreFilter fails: the placement says why */
    }
    resources_t tot;
    res_zero(&tot);
    for (int i = 0; i < need; i++)
        res_add(&tot, &items[i]->pod->requests);
    topo_sim_t t = { row, &sim, items, need };
    topo_choice_t c;
    topo_levels_t view;
    topo_levels_view(svc, row->core, g->topo_level, &view);
    int ok = topo_choose(&view, g->topo_level, g->topo_required, sim.nodes, sim.nnodes, &tot, topo_fit, &t, &c);
    topo_levels_view_free(&view);
    svc->sim_free(row->core, &sim);
    sbuf_t m = { 0 };
    if (!ok) {
        topo_choice_clear(&c);
        if (!g->topo_required)
            return 0;
        sbuf_printf(&m, "pod group %s: no %s domain of pool %s has room for its %d members (topology-required)", g->key,
                    g->topo_level, set->pool_name, need);
        *why = m.data;
        return -1;
    }
    char name[512];
    topo_domain_format(&c.dom, name, sizeof(name));
    sbuf_printf(&m,
                "minimum (%d members) placed in %s (%d nodes, %s %s): %lld GPUs and %lld millicores left free there",
                need, name, c.nodes, g->topo_required ? "required" : "preferred", g->topo_level,
                (long long)c.stranded_gpu, (long long)c.stranded_milli_cpu);
    if (c.next[0])
        sbuf_printf(&m, "; next best: %s", c.next);
    else
        sbuf_printf(&m, "; the only domain that fits");
    *dom = c.dom;
    *placed_msg = m.data;
    return 1;
}

typedef struct dom_probe {
    const topo_levels_t *l;
    const char *key;
    topo_domain_t *dom;
    int rc;
} dom_probe_t;

static void probe_domain(void *ud, const node_info_t *ni)
{
    dom_probe_t *p = ud;
    p->rc = ni->node ? topo_domain_of(p->l, p->key, ni->node, p->dom) : -1;
}

/* The domain where a gang whose minimum is already placed runs (for its
 * elastic members under topology-required): that of its first running
 * member whose node carries the level; 0 and *dom filled, or -1. */
static int placed_domain(const sched_row_t *row, const gang_snap_t *g, topo_domain_t *dom)
{
    topo_levels_t view;
    topo_levels_view(row->svc, row->core, g->topo_level, &view);
    int rc = -1;
    for (int i = 0; i < g->nmembers && rc != 0; i++) {
        const pod_t *m = g->members[i];
        if (!m->node_name[0] || pod_is_terminal(m) || m->deleting)
            continue;
        dom_probe_t p = { &view, g->topo_level, dom, -1 };
        row->svc->node_visit(row->core, m->node_name, probe_domain, &p);
        rc = p.rc;
    }
    topo_levels_view_free(&view);
    return rc;
}

/* A surplus set of a topology-required gang: its minimum's domain. */
static void parent_domain(pod_set_t *set)
{
    fw_node_match_copy(&set->match, &set->parent->match);
    set->has_match = 1;
}

ext_rc_t topology_row_pre_place(const sched_row_t *row, pod_set_t *set)
{
    const gang_snap_t *g = row->svc->set_gang(row->core, set);
    if (!g || !g->topo_level)
        return EXT_NEXT;
    if (set->kind == SET_SURPLUS) {
        if (g->topo_required && set->parent && set->parent->has_match)
            parent_domain(set);
        return EXT_NEXT;
    }
    if (set->need == 0) {
        set->has_match = g->topo_required && placed_domain(row, g, &set->match) == 0;
        return EXT_NEXT;
    }
    char *twhy = NULL, *tmsg = NULL;
    int tr = choose_domain(row, set, &set->match, &tmsg, &twhy);
    LOG_D("pod group %s: topology %s %s: %d", g->key, g->topo_required ? "required" : "preferred", g->topo_level, tr);
    if (tr != 0)
        pod_set_step(set, "topology", tr > 0 ? "chosen" : "no domain", "%s", tr > 0 ? tmsg : twhy);
    if (tr < 0) {
        /* No domain has the room free: preempt inside the best domain,
         * or wait holding back what would refragment them. */
        queue_item_t *it = set->items[0];
        if (!it->last_message || strstr(it->last_message, twhy) == NULL)
            podgroup_event(row, g, "Warning", "TopologyUnsatisfiable", twhy);
        pod_set_why(set, NULL, twhy);
        return EXT_FAIL;
    }
    set->has_match = tr > 0;
    free(set->placed_msg);
    set->placed_msg = tmsg;
    return EXT_NEXT;
}

int topology_row_plan_within(const sched_row_t *row, const pod_set_t *set, fw_node_match_t **out)
{
    const gang_snap_t *g = row->svc->set_gang(row->core, set);
    if (!g || !g->topo_level || !g->topo_required)
        return -1;
    return topo_pool_domains(row->svc, row->core, g->topo_level, set->pool_id, out, NULL);
}
