/* test_gang_row.c -- the gang row alone (pkg/gang/row.c), on a fake
 * services table, with the gang store it makes and publishes: the gate
 * gathers a gang's minimum, minResources are checked against the pool's
 * free room, a placed minimum is said and wakes the pods held behind it,
 * and a gang victim brings its whole gang. No scheduler is built: what the row asks
 * of the core is exactly the table's calls. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gang/dash.h"
#include "gang/row.h"
#include "scheduler/capabilities.h"
#include "util/util.h"

#include "fake_services.h"
#include "fixtures.h"

typedef struct fake {
    fake_core_t fc; /* first: the core the row's calls get */
    gang_store_t *gangs;
    node_info_t *node;    /* the pool's one node (pool 0) */
    queue_item_t *queued; /* what take_pending hands out (one pod) */
    pod_t *pending;       /* its pod, as the cache has it */
    char taken[64];       /* the uid take_pending was asked for */
    int victim_ok, npdb;  /* is_victim's and pdb_violations' answers */
    const char *nominee;  /* the uid nomination says holds room */
    char dropped[64];     /* the last uid drop_nomination was asked for */
} fake_t;

static pod_t *f_pod_get(void *core, const char *uid, cache_pod_state_t *st)
{
    fake_t *f = core;
    *st = CPOD_NONE;
    if (f->pending && strcmp(uid, f->pending->uid) == 0) {
        *st = CPOD_PENDING;
        return pod_ref(f->pending);
    }
    return NULL;
}

static queue_item_t *f_take_pending(void *core, struct sched_pool *P, const char *uid)
{
    fake_t *f = core;
    (void)P;
    snprintf(f->taken, sizeof(f->taken), "%s", uid);
    queue_item_t *it = f->queued;
    f->queued = NULL;
    return it;
}

static int f_zero_uid(void *core, const char *uid)
{
    (void)core;
    (void)uid;
    return 0;
}

static int f_nomination(void *core, const char *uid, char *node, size_t len)
{
    fake_t *f = core;
    (void)node;
    (void)len;
    return f->nominee && strcmp(uid, f->nominee) == 0;
}

static void f_drop_nomination(void *core, const pod_t *pod)
{
    fake_t *f = core;
    snprintf(f->dropped, sizeof(f->dropped), "%s", pod->uid);
}

static int f_zero_pool(void *core, int pool)
{
    (void)core;
    (void)pool;
    return 0;
}

static int f_zero_pod(void *core, const pod_t *pod)
{
    (void)core;
    (void)pod;
    return 0;
}

static int f_set_request(void *core, pod_t *const *pods, int n, int *tenant, double req[FS_NRES])
{
    (void)core;
    (void)pods;
    (void)n;
    (void)req;
    *tenant = -1;
    return 0; /* Queues are off */
}

static int f_is_victim(void *core, const pod_t *victim, const pod_t *preemptor, void *vc, int64_t *rank)
{
    (void)victim;
    (void)preemptor;
    assert_ptr_equal(vc, core); /* the evaluator's context, handed through */
    *rank = 5;
    return ((fake_t *)core)->victim_ok;
}

static int f_pdb_violations(void *core, pod_t *const *pods, int n)
{
    (void)pods;
    (void)n;
    return ((fake_t *)core)->npdb;
}

/* Pools: default (0) and one whose Pool was deleted (1). */
static void f_pools_visit(void *core, sched_pools_fn fn, void *ud)
{
    (void)core;
    sched_pool_info_t p[2] = { { .id = 0, .name = "default" }, { .id = 1, .name = "gone", .dead = 1 } };
    fn(ud, p, 2);
}

static json_t *f_explain(void *core, const char *kind, const char *ns, const char *name)
{
    (void)core;
    (void)kind;
    (void)ns;
    (void)name;
    return NULL; /* no decision record kept */
}

static void add_podgroup(fake_t *f, const char *spec)
{
    char buf[512];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'g','namespace':'ns','uid':'pg-g','creationTimestamp':'2026-01-01T00:00:00Z'},"
             "'spec':%s}",
             spec);
    json_t *j = parse_sq(buf);
    char err[256] = "";
    podgroup_t *pg = podgroup_from_json(j, err, sizeof(err));
    json_decref(j);
    assert_non_null(pg);
    gang_group_upsert(f->gangs, pg);
}

/* A member of gang g asking 1 CPU: node "" = pending. */
static pod_t *member(const char *name, int prio, const char *node, const char *phase)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'ns','uid':'u-%s','labels':{'" GANG_LABEL "':'g'},"
             "'creationTimestamp':'2026-01-01T00:00:01Z'},"
             "'spec':{'priority':%d,'nodeName':'%s','containers':[{'name':'c','resources':{'requests':{'cpu':'1'}}}]},"
             "'status':{'phase':'%s'}}",
             name, name, prio, node, phase);
    return fx_pod(buf);
}

static void setup(fake_t *f, sched_row_t *row)
{
    memset(f, 0, sizeof(*f));
    fake_core_init(&f->fc);
    f->fc.svc.pod_get = f_pod_get;
    f->fc.svc.nomination = f_nomination;
    f->fc.svc.drop_nomination = f_drop_nomination;
    f->fc.svc.charged = f_zero_uid;
    f->fc.svc.leaving = f_zero_uid;
    f->fc.svc.take_pending = f_take_pending;
    f->fc.svc.pool_preempts = f_zero_pool;
    f->fc.svc.may_preempt = f_zero_pod;
    f->fc.svc.kept_out = f_zero_pod;
    f->fc.svc.set_request = f_set_request;
    f->fc.svc.is_victim = f_is_victim;
    f->fc.svc.pdb_violations = f_pdb_violations;
    f->node =
        fx_node_info("{'metadata':{'name':'n0'},'status':{'allocatable':{'cpu':'8','memory':'32Gi','pods':'110'}}}");
    f->node->pool = 0;
    f->fc.nodes = &f->node;
    f->fc.nnodes = 1;
    f->fc.svc.pools_visit = f_pools_visit;
    f->fc.svc.explain = f_explain;
    *row = fake_row(&f->fc, gang_row_init(&f->fc.svc, &f->fc));
    sched_published_t pub = { 0 };
    gang_row_publish(row, &pub);
    f->gangs = pub.group_store; /* the row's own */
}

static void teardown(fake_t *f, sched_row_t *row)
{
    gang_row_fini(row->self);
    node_info_free(f->node);
}

/* Items back to the test (they are not queued anywhere), then the set. */
/* A member of a gang of minMember 2 is popped; its mate waits in the
 * pool's queue: the set becomes both (the higher priority first), the
 * minimum is both, the gang's turn is taken and given back at end. */
static void test_gate_gathers_the_minimum(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    add_podgroup(&f, "{'minMember':2}");
    pod_t *m0 = member("m0", 0, "", "Pending"), *m1 = member("m1", 10, "", "Pending");
    gang_pod_upsert(f.gangs, m0);
    gang_pod_upsert(f.gangs, m1);
    queue_item_t it0 = { 0 }, it1 = { .pod = m1 };
    f.queued = &it1;
    f.pending = m1;
    pod_set_t set;
    fake_lone_set(&set, &it0, m0);
    assert_int_equal(gang_row_gate(&row, &set), EXT_NEXT);
    assert_string_equal(f.taken, "u-m1");
    assert_int_equal(set.kind, SET_MINIMUM);
    assert_int_equal(set.n, 2);
    assert_int_equal(set.need, 2);
    assert_int_equal(set.min, 2);
    assert_int_equal(set.placed, 0);
    assert_ptr_equal(set.items[0], &it1); /* priority 10 first */
    assert_ptr_equal(set.items[1], &it0);
    assert_string_equal(set.label, "pod group ns/g");
    assert_non_null(set.slot[row.index]); /* the row's own, holding its turn */
    /* With the turn, the reason is said on the PodGroup too. */
    gang_row_report(&row, &set, "0/2 members placeable; no node fits");
    assert_int_equal(f.fc.nevents, 1);
    assert_string_equal(f.fc.event, "PodGroup ns/g Warning FailedScheduling 0/2 members placeable; no node fits");
    assert_non_null(gang_row_set_gang(&row, &set)); /* in its slot, published */
    assert_string_equal(gang_row_set_gang(&row, &set)->key, "ns/g");
    assert_string_equal(set.group.kind, "podgroup"); /* what the core's records name */
    assert_string_equal(set.group.key, "ns/g");
    assert_string_equal(set.group.ns, "ns");
    assert_string_equal(set.group.name, "g");
    gang_row_end(&row, &set);
    assert_null(set.slot[row.index]); /* given back */
    fake_set_done(&set);

    /* With one member only, the gang waits for minMember to exist, and a
     * room an earlier preemption nominated m0 to goes (issue 35, composition
     * seed 37920437: kept to the end). */
    gang_pod_delete(f.gangs, m1);
    f.queued = NULL;
    f.nominee = m0->uid;
    fake_lone_set(&set, &it0, m0);
    assert_int_equal(gang_row_gate(&row, &set), EXT_HOLD);
    assert_string_equal(set.why, "pod group ns/g: waiting for minMember 2 pods to exist (scheduled ones count)");
    assert_string_equal(f.dropped, "u-m0");
    gang_row_end(&row, &set);
    fake_set_done(&set);
    pod_unref(m0);
    pod_unref(m1);
    teardown(&f, &row);
}

/* minResources of 4 CPUs against a pool of one 8-CPU node with 6 used. */
static void test_min_resources_not_free(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    f.node->requested.milli_cpu = 6000;
    pod_t *m0 = member("m0", 0, "", "Pending");
    queue_item_t it0 = { 0 };
    pod_set_t set;
    fake_lone_set(&set, &it0, m0);
    gang_snap_t g = { .key = "ns/g" };
    res_zero(&g.min_resources);
    g.min_resources.milli_cpu = 4000;
    set.kind = SET_MINIMUM;
    gang_row_hold(&row, &set, &g, 0);
    assert_int_equal(gang_row_pre_place(&row, &set), EXT_FAIL);
    assert_string_equal(set.why, "its minResources are not free in pool default: cpu 4000m > 2000m free");
    /* 2 CPUs asked: free. */
    g.min_resources.milli_cpu = 2000;
    free(set.why);
    set.why = NULL;
    assert_int_equal(gang_row_pre_place(&row, &set), EXT_NEXT);
    assert_null(set.why);
    gang_row_end(&row, &set);
    fake_set_done(&set);
    pod_unref(m0);
    teardown(&f, &row);
}

/* A minimum placed after its gang waited: counted, said on the PodGroup,
 * and the pool's pods held behind it are woken. */
static void test_commit_says_placed(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    add_podgroup(&f, "{'minMember':2}");
    gang_waiting(f.gangs, "ns/g", 0, 0, 1, "0/2 members placeable", 1, NULL);
    pod_t *m0 = member("m0", 0, "", "Pending");
    queue_item_t it0 = { 0 };
    pod_set_t set;
    fake_lone_set(&set, &it0, m0);
    gang_snap_t g = { .key = "ns/g", .ns = "ns", .name = "g", .uid = "pg-g", .min_member = 2 };
    set.kind = SET_MINIMUM;
    gang_row_hold(&row, &set, &g, 0);
    set.need = 2;
    gang_row_commit(&row, &set);
    assert_int_equal((int)f.fc.st.gangs_scheduled, 1);
    assert_int_equal(f.fc.nevents, 1);
    assert_string_equal(f.fc.event, "PodGroup ns/g Normal Scheduled placed 2 members (minMember 2) in pool default");
    assert_int_equal(f.fc.wake_pool, 0);
    assert_string_equal(f.fc.wake, "GangPlaced");
    gang_row_end(&row, &set);
    set.n = 1;
    fake_set_done(&set);
    pod_unref(m0);
    teardown(&f, &row);
}

/* A candidate whose victim is a member keeping its gang at minMember:
 * the mate joins the victims (rank by the pod rule); a mate the rule
 * refuses, or a PDB over the set, drops the candidate. */
static void test_expand_takes_the_gang_whole(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    add_podgroup(&f, "{'minMember':2}");
    pod_t *b0 = member("b0", 0, "n0", "Running"), *b1 = member("b1", 0, "n1", "Running");
    gang_pod_upsert(f.gangs, b0);
    gang_pod_upsert(f.gangs, b1);
    pod_t *pre = member("pre", 100, "", "Pending");
    for (int round = 0; round < 3; round++) {
        f.victim_ok = round != 1;
        f.npdb = round == 2;
        preempt_candidate_t c = { 0 };
        c.node = util_strdup("n0");
        c.victims = util_xcalloc(1, sizeof(*c.victims));
        c.victims[c.nvictims++] = pod_ref(b0);
        int left = gang_row_expand(&row, &f, pre, &c, 1);
        if (round == 0) {
            assert_int_equal(left, 1);
            assert_int_equal(c.nvictims, 2);
            assert_string_equal(c.victims[1]->uid, "u-b1");
            assert_int_equal((int)c.max_rank, 5);
            assert_int_equal(c.rank_sum, 5 + PREEMPT_RANK_OFFSET);
        } else {
            assert_int_equal(left, 0); /* cleared */
            assert_int_equal(c.nvictims, 0);
        }
        preempt_candidate_clear(&c);
    }
    pod_unref(pre);
    pod_unref(b0);
    pod_unref(b1);
    teardown(&f, &row);
}

/* What the core asks of a victim without naming gangs: its mates (the
 * rows' mates point), whether it is in its group's minimum (reclaim's
 * jobs), and why a PodGroup has no decision record (the absent point). */
static void test_victim_mates_and_absent(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    add_podgroup(&f, "{'minMember':2}");
    pod_t *b0 = member("b0", 0, "n0", "Running"), *b1 = member("b1", 0, "n0", "Running");
    pod_t *lone = fx_pod("{'metadata':{'name':'l','namespace':'ns','uid':'u-l'},'spec':{'nodeName':'n0'},"
                         "'status':{'phase':'Running'}}");
    gang_pod_upsert(f.gangs, b0);
    gang_pod_upsert(f.gangs, b1);
    gang_pod_upsert(f.gangs, lone);
    pod_t **mates = NULL;
    assert_int_equal(gang_row_mates(&row, b0, &mates), 1);
    assert_string_equal(mates[0]->uid, "u-b1");
    pod_unref(mates[0]);
    free(mates);
    assert_int_equal(gang_row_mates(&row, lone, &mates), 0);
    assert_null(mates);
    assert_int_equal(gang_row_minimum_member(&row, b1), 1);
    assert_int_equal(gang_row_minimum_member(&row, lone), 0);
    assert_null(gang_row_absent(&row, "pod", "ns", "g"));
    char *msg = gang_row_absent(&row, "podgroup", "ns", "g");
    assert_string_equal(msg, "no decision kept for pod group ns/g: its minimum is placed (2 of 2 members bound, "
                             "minMember 2)");
    free(msg);
    msg = gang_row_absent(&row, "podgroup", "ns", "nope");
    assert_string_equal(msg, "no decision kept for pod group ns/nope: not seen (no such PodGroup or member)");
    free(msg);
    pod_unref(b0);
    pod_unref(b1);
    pod_unref(lone);
    teardown(&f, &row);
}

/* A member whose PodGroup was deleted is scheduled alone, and that is
 * said once per item: the row's mark (its bit, at its place in the table)
 * keeps the second gate quiet. */
static void test_deleted_podgroup_said_once(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    row.index = 5;
    add_podgroup(&f, "{'minMember':2}");
    pod_t *m0 = member("m0", 0, "", "Pending");
    gang_row_pod_seen(&row, m0);
    gang_group_delete(f.gangs, "ns", "g");
    queue_item_t it0 = { 0 };
    for (int round = 0; round < 2; round++) {
        pod_set_t set;
        fake_lone_set(&set, &it0, m0);
        assert_int_equal(gang_row_gate(&row, &set), EXT_NEXT);
        assert_int_equal(set.kind, SET_LONE);
        gang_row_end(&row, &set);
        fake_set_done(&set);
    }
    assert_int_equal(f.fc.nevents, 1);
    assert_string_equal(f.fc.event,
                        "ns/m0 Warning PodGroupDeleted pod group ns/g was deleted: scheduling this pod on its own");
    assert_int_equal(it0.marks, 1u << 5);
    assert_int_equal(it0.round_marks, 0);
    gang_row_pod_deleted(&row, m0);
    pod_unref(m0);
    teardown(&f, &row);
}

typedef struct groups_seen {
    int n, members, done;
    char key[64], pool[64], queue[64];
} groups_seen_t;

static void see_group(void *ud, const sched_group_info_t *g)
{
    groups_seen_t *s = ud;
    s->n++;
    s->members = g->members;
    s->done = g->done;
    snprintf(s->key, sizeof(s->key), "%s", g->key);
    snprintf(s->pool, sizeof(s->pool), "%s", g->pool);
    snprintf(s->queue, sizeof(s->queue), "%s", g->queue);
}

static void see_pool(void *ud, const char *pool, int waiting)
{
    groups_seen_t *s = ud;
    s->n++;
    snprintf(s->pool, sizeof(s->pool), "%s:%d", pool, waiting);
}

/* What the row shows outside the cycle: the store follows the pods the
 * informer hands it (pod_seen, pod_deleted); the dashboard's groups and
 * gang list; the pending-gangs gauge for live pools only; timed while a
 * gang is stale. */
static void test_pods_groups_and_pages(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    add_podgroup(&f, "{'minMember':2}");
    pod_t *m0 = member("m0", 0, "", "Pending"), *m1 = member("m1", 0, "", "Pending");
    gang_row_pod_seen(&row, m0);
    gang_row_pod_seen(&row, m1);
    assert_string_equal(gang_row_group_of(&row, m0), "g");
    const char *const pools[] = { "default" };
    groups_seen_t seen = { 0 };
    gang_row_groups(&row, pools, 1, see_group, &seen);
    assert_int_equal(seen.n, 1);
    assert_string_equal(seen.key, "ns/g");
    assert_string_equal(seen.pool, "default");
    assert_string_equal(seen.queue, "default");
    assert_int_equal(seen.members, 2);
    assert_int_equal(seen.done, 0);
    gang_row_pod_deleted(&row, m1);
    memset(&seen, 0, sizeof(seen));
    gang_row_groups(&row, pools, 1, see_group, &seen);
    assert_int_equal(seen.members, 1);

    dash_list_opts_t o = { .limit = 10 };
    json_t *doc = gang_row_dash_gangs(&row, &o);
    json_t *item = json_array_get(json_object_get(doc, "items"), 0);
    assert_true(json_integer_value(json_object_get(item, "waitingSeconds")) > 0); /* since its creation */
    json_object_del(item, "waitingSeconds");
    char *txt = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(txt, "{\"items\":[{\"hasDecision\":false,\"members\":1,\"minMember\":2,\"name\":\"g\","
                             "\"namespace\":\"ns\",\"phase\":\"Pending\",\"placed\":0,\"pool\":\"default\","
                             "\"queue\":\"default\",\"reason\":\"waiting for its first attempt\",\"topology\":null,"
                             "\"waitingBehind\":null}],\"limit\":10,\"offset\":0,\"total\":1}");
    free(txt);
    json_decref(doc);
    o.pool = "other";
    doc = gang_row_dash_gangs(&row, &o);
    assert_int_equal(json_integer_value(json_object_get(doc, "total")), 0);
    json_decref(doc);
    doc = gang_row_dash_gangs(NULL, &o); /* no gang row: an empty page */
    assert_int_equal(json_array_size(json_object_get(doc, "items")), 0);
    json_decref(doc);

    memset(&seen, 0, sizeof(seen));
    gang_row_each_pool(&row, see_pool, &seen);
    assert_int_equal(seen.n, 1);
    assert_string_equal(seen.pool, "default:0");

    assert_int_equal(gang_row_timed(&row), 0);
    f.fc.st.gangs_stale = 1;
    assert_int_equal(gang_row_timed(&row), 1);
    gang_row_pod_deleted(&row, m0);
    pod_unref(m0);
    pod_unref(m1);
    teardown(&f, &row);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gate_gathers_the_minimum),   cmocka_unit_test(test_min_resources_not_free),
        cmocka_unit_test(test_commit_says_placed),         cmocka_unit_test(test_expand_takes_the_gang_whole),
        cmocka_unit_test(test_deleted_podgroup_said_once), cmocka_unit_test(test_pods_groups_and_pages),
        cmocka_unit_test(test_victim_mates_and_absent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
