/* test_reservation_row.c -- the reservation row alone
 * (pkg/reservation/row.c), on a fake services table: two 8-GPU nodes of
 * pool 0, each half used by a running pod, and a gang of two 8-GPU members
 * that fits neither now nor by preemption. No scheduler is built: what the
 * row asks of the core is exactly the table's calls, and what it does is
 * what those calls recorded and what its points answer. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gang/gang.h"
#include "reservation/row.h"
#include "scheduler/capabilities.h"
#include "util/util.h"

#include "fake_services.h"
#include "fixtures.h"

typedef struct fake {
    fake_core_t fc; /* first: the core the row's calls get */
    node_info_t *ni[2];
    pod_t *running[2];
    pod_t *members[2];
    int64_t waited_ms; /* how long the gang has been considered */
} fake_t;

/* The gang's store: it is pending whole (both members live, none bound). */
static int f_gang_get(void *core, const char *ns, const char *name, gang_snap_t *out)
{
    fake_t *f = core;
    if (strcmp(ns, "ns") != 0 || strcmp(name, "g") != 0)
        return -1;
    memset(out, 0, sizeof(*out));
    out->key = util_strdup("ns/g");
    out->ns = util_strdup("ns");
    out->name = util_strdup("g");
    out->uid = util_strdup("ug");
    out->min_member = 2;
    out->members = util_xcalloc(2, sizeof(*out->members));
    for (int i = 0; i < 2; i++)
        out->members[i] = pod_ref(f->members[i]);
    out->nmembers = 2;
    return 0;
}

static int64_t f_gang_considered(void *core, const char *key, int64_t now)
{
    (void)key;
    return now - ((fake_t *)core)->waited_ms;
}

/* Every wake and activation is the reservation's pool's (0). */
static void f_pool_wake(void *core, int pool, const char *event)
{
    assert_int_equal(pool, 0);
    fake_pool_wake(core, pool, event);
}

static void f_pod_activate(void *core, int pool, const char *uid)
{
    assert_int_equal(pool, 0);
    fake_pod_activate(core, pool, uid);
}

static void f_object_event(void *core, const char *ns, json_t *involved, const char *type, const char *reason,
                           const char *message, const char *base_name)
{
    assert_string_equal(json_string_value(json_object_get(involved, "kind")), "PodGroup");
    fake_object_event(core, ns, involved, type, reason, message, base_name);
}

static node_info_t *gnode(const char *name)
{
    char buf[400];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','labels':{'kubernetes.io/hostname':'%s'}},"
             "'status':{'allocatable':{'cpu':'64','memory':'256Gi','pods':'110','nvidia.com/gpu':'8'}}}",
             name, name);
    node_info_t *ni = fx_node_info(buf);
    ni->pool = 0;
    return ni;
}

/* A pod of gpus GPUs and priority prio, bound to node (or pending: ""),
 * in gang (or none). */
static pod_t *gpod(const char *name, const char *node, int gpus, int prio, const char *gang)
{
    char buf[800];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'ns','uid':'u-%s'%s%s%s},"
             "'spec':{'nodeName':'%s','priority':%d,"
             "'containers':[{'name':'c','resources':{'requests':{'nvidia.com/gpu':'%d'}}}]}}",
             name, name, gang ? ",'labels':{'scheduling.x-k8s.io/pod-group':'" : "", gang ? gang : "", gang ? "'}" : "",
             node, prio, gpus);
    return fx_pod(buf);
}

static void setup(fake_t *f, sched_row_t *row)
{
    memset(f, 0, sizeof(*f));
    fake_core_init(&f->fc);
    f->fc.svc.gang_get = f_gang_get;
    f->fc.svc.gang_considered = f_gang_considered;
    f->fc.svc.pool_wake = f_pool_wake;
    f->fc.svc.pod_activate = f_pod_activate;
    f->fc.svc.object_event = f_object_event;
    /* may_evict 0: the gang may not preempt, only the rule's other answers open held room */
    f->fc.opts.reservation_after_s = 30;
    f->fc.opts.reservation_timeout_s = 600;
    f->waited_ms = 60000;
    for (int i = 0; i < 2; i++) {
        f->ni[i] = gnode(i ? "n1" : "n0");
        f->running[i] = gpod(i ? "r1" : "r0", f->ni[i]->name, 4, 0, NULL);
        node_info_add_pod(f->ni[i], f->running[i]);
        f->members[i] = gpod(i ? "g-1" : "g-0", "", 8, 0, "g");
    }
    f->fc.nodes = f->ni;
    f->fc.nnodes = 2;
    *row = fake_row(&f->fc, resv_row_init(&f->fc.svc, &f->fc));
}

static void teardown(fake_t *f, sched_row_t *row)
{
    resv_row_fini(row->self);
    for (int i = 0; i < 2; i++) {
        node_info_free(f->ni[i]);
        pod_unref(f->running[i]);
        pod_unref(f->members[i]);
    }
    fake_core_free(&f->fc);
}

typedef struct gang_set {
    pod_set_t set;
    queue_item_t it[2];
    gang_snap_t g;
} gang_set_t;

/* The gang's minimum as the cycle hands it to the row (no pool thread). */
static void gang_set_of(gang_set_t *gs, fake_t *f)
{
    memset(gs, 0, sizeof(*gs));
    gs->g = (gang_snap_t){ .key = "ns/g", .ns = "ns", .name = "g", .uid = "ug", .min_member = 2 };
    pod_set_t *set = &gs->set;
    set->kind = SET_MINIMUM;
    set->pool_id = 0;
    set->pool_name = "default";
    set->items = util_xcalloc(2, sizeof(*set->items));
    for (int i = 0; i < 2; i++) {
        gs->it[i].pod = f->members[i];
        set->items[i] = &gs->it[i];
    }
    set->n = set->need = set->min = 2;
    fake_set_gang(&f->fc, set, &gs->g);
}

static void gang_set_done(fake_t *f, gang_set_t *gs)
{
    gs->set.items[0] = gs->set.items[1] = NULL; /* the test's, not the set's */
    fake_set_gang(&f->fc, &gs->set, NULL);
    pod_set_clear(&gs->set);
}

/* Held GPUs node n shows pod: the requested GPUs of its view. */
static int seen_gpus(sched_row_t *row, const pod_t *pod, node_info_t *ni, int *cloned)
{
    *cloned = 0;
    node_info_t *v = resv_row_node_view(row, pod, ni, cloned);
    int gpus = (int)res_get_scalar(&v->requested, RES_GPU);
    if (*cloned)
        node_info_free(v);
    else
        assert_ptr_equal(v, ni);
    return gpus;
}

/* A gang that has waited less than reservation-after holds nothing; past
 * it, both nodes are held: a pod of the gang's priority with no expected
 * runtime sees them taken, a pod that outranks the gang and the gang's own
 * members see them as they are. The Pool's status shows the reservation,
 * and the gang's commit ends it: the pool's waiting pods are woken, the
 * nodes are free to all, and the status says null. */
static void test_reserves_after_wait_and_ends_at_commit(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    gang_set_t gs;
    gang_set_of(&gs, &f);
    pod_t *low = gpod("low", "", 4, 0, NULL);
    pod_t *high = gpod("high", "", 4, 100, NULL);
    int cloned;

    f.waited_ms = 10000; /* not yet due */
    assert_int_equal(resv_row_post_filter(&row, &gs.set), EXT_NEXT);
    assert_int_equal((int)f.fc.st.reservations_made, 0);
    assert_int_equal(seen_gpus(&row, low, f.ni[0], &cloned), 4);
    assert_int_equal(cloned, 0);

    f.waited_ms = 60000;
    assert_int_equal(resv_row_post_filter(&row, &gs.set), EXT_NEXT);
    assert_int_equal((int)f.fc.st.reservations_made, 1);
    assert_non_null(strstr(f.fc.event, "Normal Reserved reserved 2 nodes (16 GPUs) in pool default"));
    assert_true(f.fc.nstatus > 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(seen_gpus(&row, low, f.ni[i], &cloned), 12); /* its 4 and the held 8 */
        assert_int_equal(cloned, 1);
        assert_int_equal(seen_gpus(&row, high, f.ni[i], &cloned), 4);
        assert_int_equal(cloned, 0);
        assert_int_equal(seen_gpus(&row, f.members[i], f.ni[i], &cloned), 4);
        assert_int_equal(cloned, 0);
    }
    /* The pod refused held room is told why in its message. */
    pod_set_t lone;
    queue_item_t lit = { .pod = low };
    memset(&lone, 0, sizeof(lone));
    lone.kind = SET_LONE;
    lone.pool_id = 0;
    lone.pool_name = "default";
    lone.items = util_xcalloc(1, sizeof(*lone.items));
    lone.items[0] = &lit;
    lone.n = lone.need = 1;
    assert_int_equal(resv_row_pre_place(&row, &lone), EXT_NEXT);
    assert_non_null(lone.place_note);
    assert_non_null(strstr(lone.place_note, "2 nodes held for pod group ns/g"));
    lone.items[0] = NULL;
    pod_set_clear(&lone);

    json_t *status = json_object();
    resv_row_pool_status(&row, "default", status);
    json_t *r = json_object_get(status, "reservation");
    assert_string_equal(json_string_value(json_object_get(r, "podGroup")), "ns/g");
    assert_int_equal((int)json_array_size(json_object_get(r, "nodes")), 2);
    assert_int_equal((int)json_integer_value(json_object_get(r, "held")), 16);
    json_decref(status);

    resv_row_commit(&row, &gs.set);
    assert_int_equal((int)f.fc.st.reservations_placed, 1);
    assert_string_equal(f.fc.wake, "ReservationEnded");
    assert_int_equal(seen_gpus(&row, low, f.ni[0], &cloned), 4);
    assert_int_equal(cloned, 0);
    status = json_object();
    resv_row_pool_status(&row, "default", status);
    assert_true(json_is_null(json_object_get(status, "reservation")));
    json_decref(status);

    pod_unref(low);
    pod_unref(high);
    gang_set_done(&f, &gs);
    teardown(&f, &row);
}

/* A reservation past --reservation-timeout ends in the housekeeper (event
 * ReservationExpired, the pool woken, the nodes open again), and the same
 * gang may not reserve again at once: another gang goes first. Meanwhile
 * a bound pod leaving a held node wakes, in the reservation's pool, only
 * the pods the held room admits. */
static void test_expires_in_housekeep(void **state)
{
    (void)state;
    fake_t f;
    sched_row_t row;
    setup(&f, &row);
    gang_set_t gs;
    gang_set_of(&gs, &f);
    pod_t *low = gpod("low", "", 4, 0, NULL);
    pod_t *high = gpod("high", "", 4, 100, NULL);
    int cloned;

    assert_int_equal(resv_row_post_filter(&row, &gs.set), EXT_NEXT);
    assert_int_equal((int)f.fc.st.reservations_made, 1);

    /* r0 leaves held n0: the pool's waiting pods that may use it move. */
    sched_event_t ev = { .kind = SCHED_EV_POD_DELETED, .pod = f.running[0], .node = "n0", .reason = "PodDeleted" };
    sched_wake_t wake = { .pool = -1 };
    assert_int_equal(resv_row_on_event(&row, &ev, &wake), 1);
    assert_int_equal(wake.pool, 0);
    assert_int_equal(wake.in_pool, SCHED_WAKE_SOME);
    assert_int_equal(wake.others, SCHED_WAKE_ALL);
    assert_true(wake.match(high, -1, wake.ud));
    assert_false(wake.match(low, -1, wake.ud));
    wake.release(wake.ud);

    resv_row_housekeep(&row); /* within its timeout: still held */
    assert_int_equal((int)f.fc.st.reservations_expired, 0);
    assert_int_equal(seen_gpus(&row, low, f.ni[1], &cloned), 12);

    f.fc.opts.reservation_timeout_s = 0; /* a new reservation would expire at once */
    resv_row_commit(&row, &gs.set);      /* end this one (placed) to make one that expires */
    f.waited_ms = 60000;
    assert_int_equal(resv_row_post_filter(&row, &gs.set), EXT_NEXT);
    assert_int_equal((int)f.fc.st.reservations_made, 2);
    f.fc.nwakes = 0;
    resv_row_housekeep(&row);
    assert_int_equal((int)f.fc.st.reservations_expired, 1);
    assert_non_null(strstr(f.fc.event, "Warning ReservationExpired reservation expired after 0s"));
    assert_true(f.fc.nwakes >= 1);
    assert_int_equal(seen_gpus(&row, low, f.ni[1], &cloned), 4);
    assert_int_equal(cloned, 0);

    /* Barred: the expired gang does not reserve again right away. */
    assert_int_equal(resv_row_post_filter(&row, &gs.set), EXT_NEXT);
    assert_int_equal((int)f.fc.st.reservations_made, 2);
    assert_int_equal(seen_gpus(&row, low, f.ni[0], &cloned), 4);

    pod_unref(low);
    pod_unref(high);
    gang_set_done(&f, &gs);
    teardown(&f, &row);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserves_after_wait_and_ends_at_commit),
        cmocka_unit_test(test_expires_in_housekeep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
