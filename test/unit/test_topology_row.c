/* test_topology_row.c -- the topology row alone (pkg/topology/row.c), on a
 * fake services table: four 8-GPU nodes in two blocks, a gang asking a
 * block. No scheduler is built: what the row asks of the core is exactly
 * the table's calls, and what it does is what those calls recorded. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gang/gang.h"
#include "scheduler/capabilities.h"
#include "topology/row.h"
#include "util/util.h"

#include "fake_services.h"
#include "fixtures.h"

#define BLOCK "network.aibee.cn/block"

typedef struct fake {
    fake_core_t fc; /* first: the core the row's calls get */
    node_info_t *ni[4];
    pod_t *running[4]; /* NULL: the node is empty */
    topo_levels_t levels;
    int builds, frees; /* sim_build / sim_free calls */
    int sim_pool;
} fake_t;

static const topo_levels_t *f_topo_levels(void *core)
{
    return &((fake_t *)core)->levels;
}

/* Every event is on the PodGroup API. */
static void f_object_event(void *core, const char *kind, const char *api_version, const char *ns, const char *name,
                           const char *uid, const char *type, const char *reason, const char *message)
{
    assert_string_equal(api_version, PODGROUP_VERSION);
    fake_object_event_ref(core, kind, api_version, ns, name, uid, type, reason, message);
}

/* The core's sim_build in small: copies of every node (one pool), each
 * member's PreFilter run against them. */
static int f_sim_build(void *core, int pool, pod_t *const *pods, int n, sched_sim_t *sim)
{
    fake_t *f = core;
    f->builds++;
    f->sim_pool = pool;
    memset(sim, 0, sizeof(*sim));
    fw_cluster_t cl = { .nodes = f->ni, .nnodes = 4 };
    sim->cs = util_xcalloc((size_t)n + 1, sizeof(*sim->cs));
    sim->pods = util_xcalloc((size_t)n + 1, sizeof(*sim->pods));
    for (int i = 0; i < n; i++) {
        fw_status_t st;
        fw_status_reset(&st);
        sim->pods[i] = pods[i];
        sim->cs[i] = cycle_state_new();
        sim->nmembers = i + 1;
        cycle_state_set_cluster(sim->cs[i], &cl);
        assert_int_equal(framework_pre_filter(f->fc.fw, sim->cs[i], pods[i], &st), FW_SUCCESS);
        cycle_state_set_cluster(sim->cs[i], NULL);
    }
    sim->nodes = util_xcalloc(4, sizeof(*sim->nodes));
    for (int i = 0; i < 4; i++)
        sim->nodes[sim->nnodes++] = node_info_clone(f->ni[i]);
    return 0;
}

static void f_sim_free(void *core, sched_sim_t *sim)
{
    ((fake_t *)core)->frees++;
    for (int i = 0; i < sim->nnodes; i++)
        node_info_free(sim->nodes[i]);
    free(sim->nodes);
    for (int i = 0; i < sim->nmembers; i++)
        cycle_state_free(sim->cs[i]);
    free(sim->cs);
    free(sim->pods);
    memset(sim, 0, sizeof(*sim));
}

static node_info_t *bnode(const char *name, const char *block)
{
    char buf[600];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','labels':{'kubernetes.io/hostname':'%s','" BLOCK "':'%s'}},"
             "'status':{'allocatable':{'cpu':'64','memory':'256Gi','pods':'110','nvidia.com/gpu':'8'}}}",
             name, name, block);
    return fx_node_info(buf);
}

/* A pod of gpus GPUs (bound to node, or pending with ""), in gang g. */
static pod_t *gpod(const char *name, const char *node, int gpus)
{
    char buf[800];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'ns','uid':'u-%s','labels':{'" GANG_LABEL "':'g'}},"
             "'spec':{'nodeName':'%s','containers':[{'name':'c','resources':{'requests':{'nvidia.com/gpu':'%d'}}}]}}",
             name, name, node, gpus);
    return fx_pod(buf);
}

/* n0, n1 in block b1; n2, n3 in b2; used[i] GPUs taken on node i. */
static void setup(fake_t *f, sched_row_t *row, const int used[4])
{
    memset(f, 0, sizeof(*f));
    fake_core_init(&f->fc);
    f->fc.svc.object_event_ref = f_object_event;
    f->fc.svc.topo_levels = f_topo_levels;
    f->fc.svc.sim_build = f_sim_build;
    f->fc.svc.sim_free = f_sim_free;
    f->fc.nodes = f->ni;
    f->fc.nnodes = 4;
    char err[256];
    assert_int_equal(topo_levels_parse(TOPO_DEFAULT_LEVELS, &f->levels, err, sizeof(err)), 0);
    f->fc.fw = framework_new(NULL);
    for (int i = 0; i < 4; i++) {
        char name[8], run[8];
        snprintf(name, sizeof(name), "n%d", i);
        snprintf(run, sizeof(run), "r%d", i);
        f->ni[i] = bnode(name, i < 2 ? "b1" : "b2");
        if (used[i]) {
            f->running[i] = gpod(run, name, used[i]);
            node_info_add_pod(f->ni[i], f->running[i]);
        }
    }
    *row = fake_row(&f->fc, NULL);
}

static void teardown(fake_t *f)
{
    for (int i = 0; i < 4; i++) {
        node_info_free(f->ni[i]);
        pod_unref(f->running[i]);
    }
    framework_free(f->fc.fw);
    topo_levels_free(&f->levels);
}

/* A gang's minimum of n members of gpus GPUs each, asking level key. */
typedef struct gang_set {
    pod_set_t set;
    queue_item_t it[4];
    pod_t *pods[4];
    gang_snap_t g;
} gang_set_t;

static void gang_set(fake_t *f, gang_set_t *gs, set_kind_t kind, int n, int gpus, const char *key, int required)
{
    memset(gs, 0, sizeof(*gs));
    gs->g.key = "ns/g";
    gs->g.ns = "ns";
    gs->g.name = "g";
    gs->g.uid = "uid-g";
    gs->g.min_member = n;
    gs->g.topo_level = (char *)key;
    gs->g.topo_required = required;
    pod_set_t *set = &gs->set;
    set->kind = kind;
    set->pool_name = "default";
    set->pool_id = 3;
    set->items = util_xcalloc((size_t)n + 1, sizeof(*set->items));
    for (int i = 0; i < n; i++) {
        char name[8];
        snprintf(name, sizeof(name), "m%d", i);
        gs->pods[i] = gpod(name, "", gpus);
        gs->it[i].pod = gs->pods[i];
        set->items[i] = &gs->it[i];
    }
    set->n = set->need = n;
    set->min = n;
    fake_set_gang(&f->fc, set, &gs->g);
}

static void gang_done(fake_t *f, gang_set_t *gs)
{
    for (int i = 0; i < gs->set.n; i++) {
        gs->set.items[i] = NULL; /* the test's, not the set's */
        pod_unref(gs->pods[i]);
    }
    fake_set_gang(&f->fc, &gs->set, NULL);
    pod_set_clear(&gs->set);
}

/* Both blocks fit two 4-GPU members; b1 (4 GPUs used on n0) strands 4
 * GPUs once they are placed, b2 strands 8: the row chooses b1, limits the
 * set to it, and says so once placed; on the pool's copies, freed. */
static void test_chooses_least_stranding_block(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    int used[4] = { 4, 0, 0, 0 };
    setup(&f, &row, used);
    gang_set_t gs;
    gang_set(&f, &gs, SET_MINIMUM, 2, 4, BLOCK, 1);
    assert_int_equal(topology_row_pre_place(&row, &gs.set), EXT_NEXT);
    assert_int_equal(gs.set.has_match, 1);
    assert_int_equal(gs.set.match.n, 3); /* zone, spine (absent: ""), block */
    assert_string_equal(gs.set.match.keys[2], BLOCK);
    assert_string_equal(gs.set.match.values[2], "b1");
    assert_string_equal(gs.set.match.values[0], "");
    assert_int_equal(f.builds, 1);
    assert_int_equal(f.frees, 1);
    assert_int_equal(f.sim_pool, 3);
    /* 64 cores per node, none asked: 128000 millicores stay free in b1. */
    assert_string_equal(gs.set.placed_msg,
                        "minimum (2 members) placed in " BLOCK "=b1 (2 nodes, required " BLOCK
                        "): 4 GPUs and 128000 millicores left free there; next best: " BLOCK "=b2 would strand 8 GPUs");
    assert_int_equal(f.fc.nevents, 0); /* a known level, placed: no PodGroup event here */
    gang_done(&f, &gs);
    teardown(&f);
}

/* Two 6-GPU members: b1 (4 GPUs used on n0) has the 12 GPUs free in sum
 * and would strand none, but its nodes take one member only (each member
 * sees the ones placed before it): the row chooses b2. */
static void test_members_fit_node_by_node(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    int used[4] = { 4, 0, 0, 0 };
    setup(&f, &row, used);
    gang_set_t gs;
    gang_set(&f, &gs, SET_MINIMUM, 2, 6, BLOCK, 1);
    assert_int_equal(topology_row_pre_place(&row, &gs.set), EXT_NEXT);
    assert_int_equal(gs.set.has_match, 1);
    assert_string_equal(gs.set.match.values[2], "b2");
    assert_string_equal(gs.set.placed_msg, "minimum (2 members) placed in " BLOCK "=b2 (2 nodes, required " BLOCK
                                           "): 4 GPUs and 128000 millicores left free there; the only domain that "
                                           "fits");
    gang_done(&f, &gs);
    teardown(&f);
}

/* Each block has 4 GPUs used: two 8-GPU members fit no block. Required:
 * the set fails with why, and the PodGroup hears it once; preferred: no
 * domain at any level, nothing constrains it. */
static void test_required_fits_no_block(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    int used[4] = { 4, 0, 4, 0 };
    setup(&f, &row, used);
    gang_set_t gs;
    gang_set(&f, &gs, SET_MINIMUM, 2, 8, BLOCK, 1);
    const char *why = "pod group ns/g: no " BLOCK " domain of pool default has room for its 2 members "
                      "(topology-required)";
    assert_int_equal(topology_row_pre_place(&row, &gs.set), EXT_FAIL);
    assert_int_equal(gs.set.has_match, 0);
    assert_string_equal(gs.set.why, why);
    assert_int_equal(f.fc.nevents, 1);
    char want[600];
    snprintf(want, sizeof(want), "PodGroup ns/g Warning TopologyUnsatisfiable %s", why);
    assert_string_equal(f.fc.event, want);
    /* The member already said it: no second event. */
    gs.it[0].last_message = util_strdup(why);
    assert_int_equal(topology_row_pre_place(&row, &gs.set), EXT_FAIL);
    assert_int_equal(f.fc.nevents, 1);
    free(gs.it[0].last_message);
    gang_done(&f, &gs);

    gang_set(&f, &gs, SET_MINIMUM, 2, 8, BLOCK, 0);
    assert_int_equal(topology_row_pre_place(&row, &gs.set), EXT_NEXT);
    assert_int_equal(gs.set.has_match, 0);
    assert_null(gs.set.why);
    assert_null(gs.set.placed_msg);
    assert_int_equal(f.fc.nevents, 1);
    assert_int_equal(f.builds, f.frees);
    gang_done(&f, &gs);
    teardown(&f);
}

/* A level not in --topology-levels: said on the PodGroup on the first
 * attempt only. */
static void test_unknown_level_said_once(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    int used[4] = { 0, 0, 0, 0 };
    setup(&f, &row, used);
    gang_set_t gs;
    gang_set(&f, &gs, SET_MINIMUM, 1, 1, "example.com/rack", 0);
    assert_int_equal(topology_row_pre_place(&row, &gs.set), EXT_NEXT);
    assert_int_equal(f.fc.nevents, 1);
    assert_string_equal(f.fc.event, "PodGroup ns/g Warning UnknownTopologyLevel topology level example.com/rack is not "
                                    "one of --topology-levels: no wider level to fall back to");
    gs.it[0].attempts = 1;
    assert_int_equal(topology_row_pre_place(&row, &gs.set), EXT_NEXT);
    assert_int_equal(f.fc.nevents, 1);
    gang_done(&f, &gs);
    teardown(&f);
}

/* Elastic members of a required gang stay where its minimum is: the
 * minimum's set's domain (a surplus set), or, with the minimum already
 * placed (need 0), the block of the node a member runs on. Preferred:
 * nothing is limited. No simulation for either. */
static void test_elastic_members_stay_in_the_domain(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    int used[4] = { 0, 0, 0, 0 };
    setup(&f, &row, used);
    gang_set_t min, sur;
    gang_set(&f, &min, SET_MINIMUM, 1, 1, BLOCK, 1);
    min.set.has_match = 1;
    min.set.match.n = 1;
    min.set.match.keys[0] = util_strdup(BLOCK);
    min.set.match.values[0] = util_strdup("b2");
    gang_set(&f, &sur, SET_SURPLUS, 1, 1, BLOCK, 1);
    sur.set.parent = &min.set;
    assert_int_equal(topology_row_pre_place(&row, &sur.set), EXT_NEXT);
    assert_int_equal(sur.set.has_match, 1);
    assert_int_equal(sur.set.match.n, 1);
    assert_string_equal(sur.set.match.values[0], "b2");
    gang_done(&f, &sur);

    gang_set(&f, &sur, SET_MINIMUM, 1, 1, BLOCK, 1);
    sur.set.need = 0;
    pod_t *bound = gpod("b", "n1", 1);
    pod_t *gone = gpod("x", "n3", 1);
    gone->deleting = 1;
    pod_t *members[2] = { gone, bound };
    sur.g.members = members;
    sur.g.nmembers = 2;
    assert_int_equal(topology_row_pre_place(&row, &sur.set), EXT_NEXT);
    assert_int_equal(sur.set.has_match, 1);
    assert_string_equal(sur.set.match.values[sur.set.match.n - 1], "b1");
    fw_node_match_free(&sur.set.match);
    sur.set.has_match = 0;
    sur.g.topo_required = 0;
    assert_int_equal(topology_row_pre_place(&row, &sur.set), EXT_NEXT);
    assert_int_equal(sur.set.has_match, 0);
    assert_int_equal(f.builds, 0);
    pod_unref(bound);
    pod_unref(gone);
    gang_done(&f, &sur);
    gang_done(&f, &min);
    teardown(&f);
}

/* Preemption plans a topology-required gang inside each block of its
 * pool (plan_within), nodes of other pools left out; a preferred gang, or
 * a set with no gang, leaves the plan to the core (-1). */
static void test_plan_within_each_block(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    int used[4] = { 0, 0, 0, 0 };
    setup(&f, &row, used);
    for (int i = 0; i < 4; i++)
        f.ni[i]->pool = 3; /* the set's pool (gang_set) */
    gang_set_t gs;
    gang_set(&f, &gs, SET_MINIMUM, 2, 8, BLOCK, 1);
    fw_node_match_t *doms = NULL;
    assert_int_equal(topology_row_plan_within(&row, &gs.set, &doms), 2);
    assert_string_equal(doms[0].keys[doms[0].n - 1], BLOCK);
    assert_string_equal(doms[0].values[doms[0].n - 1], "b1");
    assert_string_equal(doms[1].values[doms[1].n - 1], "b2");
    for (int j = 0; j < 2; j++)
        fw_node_match_free(&doms[j]);
    free(doms);
    f.ni[2]->pool = f.ni[3]->pool = 1; /* b2 is another pool's */
    assert_int_equal(topology_row_plan_within(&row, &gs.set, &doms), 1);
    assert_string_equal(doms[0].values[doms[0].n - 1], "b1");
    fw_node_match_free(&doms[0]);
    free(doms);
    gs.g.topo_required = 0;
    assert_int_equal(topology_row_plan_within(&row, &gs.set, &doms), -1);
    gang_done(&f, &gs);
    pod_set_t lone = { .kind = SET_LONE, .pool_id = 3 };
    assert_int_equal(topology_row_plan_within(&row, &lone, &doms), -1);
    assert_int_equal(f.builds, 0);
    teardown(&f);
}

/* The row's room keeps the levels of --topology-levels and publishes
 * them (the services' topo_levels); its check refuses what does not
 * parse, with topo_levels_parse's message. */
static void test_room_keeps_the_levels(void **state)
{
    (void)state;
    fake_core_t fc;
    memset(&fc, 0, sizeof(fc));
    fake_core_init(&fc);
    fc.opts.topology_levels = " x, y ";
    char err[256] = "";
    assert_int_equal(topology_row_check(&fc.opts, err, sizeof(err)), 0);
    sched_row_t row = fake_row(&fc, topology_row_init(&fc.svc, &fc));
    sched_published_t pub = { 0 };
    topology_row_publish(&row, &pub);
    assert_non_null(pub.topo_levels);
    assert_int_equal(pub.topo_levels->n, 2);
    assert_string_equal(pub.topo_levels->keys[0], "x");
    assert_string_equal(pub.topo_levels->keys[1], "y");
    topology_row_fini(row.self);
    fc.opts.topology_levels = "a,a";
    assert_int_equal(topology_row_check(&fc.opts, err, sizeof(err)), -1);
    assert_string_equal(err, "topology level a listed twice");
    fake_core_free(&fc);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chooses_least_stranding_block),
        cmocka_unit_test(test_members_fit_node_by_node),
        cmocka_unit_test(test_required_fits_no_block),
        cmocka_unit_test(test_unknown_level_said_once),
        cmocka_unit_test(test_elastic_members_stay_in_the_domain),
        cmocka_unit_test(test_plan_within_each_block),
        cmocka_unit_test(test_room_keeps_the_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
