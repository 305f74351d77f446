/* test_fairshare.c -- queues: water-filling against hand-computed answers
 * (Run:ai's 12:4 and 6:10, overcommitted quotas, demand and limit caps,
 * priority levels, a department over two projects), Queue parsing and the
 * hierarchy faults, admission (limit, non-preemptible quota), the reclaim
 * rule (stops at the fair share, no ping-pong), and the scheduling queue's
 * per-tenant order. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fairshare/fairshare.h"
#include "queue/queue.h"
#include "scheduler/capabilities.h"
#include "util/util.h"

#include "fixtures.h"

#define NEAR(a, b) assert_true(((a) - (b)) < 1e-6 && ((b) - (a)) < 1e-6)

static void test_waterfill_runai(void **state)
{
    (void)state;
    /* Quotas 3 and 1, both hungry, 16 GPUs: weights default to the quotas. */
    double quota[2] = { 3, 1 }, weight[2] = { 3, 1 }, cap[2] = { 100, 100 }, out[2];
    int64_t prio[2] = { 0, 0 };
    fs_waterfill(16, 2, quota, weight, prio, cap, out);
    NEAR(out[0], 12);
    NEAR(out[1], 4);
    /* overQuotaWeight Low (1) and High (3): the surplus of 12 splits 1:3. */
    double w2[2] = { 1, 3 };
    fs_waterfill(16, 2, quota, w2, prio, cap, out);
    NEAR(out[0], 6);
    NEAR(out[1], 10);
}

static void test_waterfill_caps(void **state)
{
    (void)state;
    int64_t prio[3] = { 0, 0, 0 };
    double out[3];
    /* Demand caps: A wants 2, so B and C split the rest by weight. */
    double quota[3] = { -1, -1, -1 }, weight[3] = { 1, 1, 2 }, cap[3] = { 2, 100, 100 };
    fs_waterfill(14, 3, quota, weight, prio, cap, out);
    NEAR(out[0], 2);
    NEAR(out[1], 4);
    NEAR(out[2], 8);
    /* Quotas overcommit the share: max-min by quota. */
    double q2[2] = { 10, 10 }, w2[2] = { 10, 10 }, c2[2] = { 100, 3 };
    int64_t p2[2] = { 0, 0 };
    fs_waterfill(8, 2, q2, w2, p2, c2, out);
    NEAR(out[0], 5);
    NEAR(out[1], 3);
    /* Higher priority siblings take the surplus first. */
    double q3[2] = { 1, 1 }, w3[2] = { 1, 1 }, c3[2] = { 100, 5 };
    int64_t p3[2] = { 0, 1 };
    fs_waterfill(10, 2, q3, w3, p3, c3, out);
    NEAR(out[1], 5);
    NEAR(out[0], 5);
    /* Nothing wanted: nothing given. */
    double c4[2] = { 0, 0 };
    fs_waterfill(10, 2, q3, w3, p3, c4, out);
    NEAR(out[0], 0);
    NEAR(out[1], 0);
}

static fs_queue_spec_t *mkq(const char *name, const char *spec)
{
    char buf[1024];
    snprintf(buf, sizeof(buf), "{'metadata':{'name':'%s','uid':'uid-%s'},'spec':%s}", name, name, spec);
    json_t *j = parse_sq(buf);
    char err[256] = "";
    fs_queue_spec_t *q = fs_queue_from_json(j, err, sizeof(err));
    json_decref(j);
    if (!q)
        fail_msg("fs_queue_from_json: %s", err);
    return q;
}

static void test_parse(void **state)
{
    (void)state;
    fs_queue_spec_t *q = mkq("a", "{'parentQueue':'p','priority':2,'resources':{'gpu':{'quota':3,'overQuotaWeight':"
                                  "2,'limit':8},'cpu':{'quota':'4'},'memory':{'quota':'2G'}},'pools':{'gpu-pool':{"
                                  "'resources':{'gpu':{'quota':5}}}}}");
    assert_null(q->invalid);
    assert_string_equal(q->parent, "p");
    assert_int_equal(q->priority, 2);
    NEAR(q->res[FS_GPU].quota, 3);
    NEAR(q->res[FS_GPU].weight, 2);
    NEAR(q->res[FS_GPU].limit, 8);
    NEAR(q->res[FS_CPU].quota, 4000); /* a quantity string in millicores */
    NEAR(q->res[FS_MEM].quota, 2000); /* MB */
    NEAR(q->res[FS_CPU].limit, -1);
    assert_int_equal(q->npools, 1);
    NEAR(q->pools[0].res[FS_GPU].quota, 5);
    fs_queue_spec_free(q);

    const char *bad[] = {
        "{'resources':{'gpu':{'quota':-2}}}",
        "{'resources':{'gpu':{'quota':4,'limit':2}}}",
        "{'resources':{'gpu':{'quota':'lots'}}}",
        "{'resources':{'gpu':{'overQuotaWeight':-3}}}",
        "{'resources':[1]}",
        "{'parentQueue':7}",
        "{'parentQueue':'a'}",
        "{'priority':'high'}",
        "{'resources':{'gpu':{'quota':1e300}}}",
        "[]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        q = mkq("a", bad[i]);
        if (!q->invalid)
            fail_msg("spec %s parsed as valid", bad[i]);
        fs_queue_spec_free(q);
    }
    json_t *j = parse_sq("{'metadata':{}}");
    char err[128];
    assert_null(fs_queue_from_json(j, err, sizeof(err)));
    json_decref(j);
}

static pod_t *mkpod(const char *name, const char *queue, int gpu, int prio)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'ns','uid':'u-%s','labels':{'resource.aibee.cn/queue':'%s'},"
             "'creationTimestamp':'2026-01-01T00:00:01Z'},"
             "'spec':{'priority':%d,'containers':[{'name':'c','resources':{'requests':{'nvidia.com/gpu':'%d'}}}]}}",
             name, name, queue, prio, gpu);
    return fx_pod(buf);
}

typedef struct seen {
    char q[8][32];
    double alloc[8], fair[8];
    int n;
} seen_t;

static void seen_cb(void *ud, const char *queue, const char *pool, const double alloc[FS_NRES],
                    const double fair[FS_NRES], int pending)
{
    (void)pool;
    (void)pending;
    seen_t *s = ud;
    if (s->n < 8) {
        snprintf(s->q[s->n], sizeof(s->q[0]), "%s", queue);
        s->alloc[s->n] = alloc[FS_GPU];
        s->fair[s->n] = fair[FS_GPU];
        s->n++;
    }
}

static double fair_of(fs_store_t *fs, const char *queue)
{
    seen_t s = { 0 };
    fs_each_metric(fs, seen_cb, &s);
    for (int i = 0; i < s.n; i++)
        if (strcmp(s.q[i], queue) == 0)
            return s.fair[i];
    fail_msg("queue %s not reported", queue);
    return -1;
}

/* A pool of gpus GPUs where each named queue has want GPUs pending. */
static void pool_setup(fs_store_t *fs, double gpus, const char *const *queues, const double *want, int n)
{
    double cap[FS_NRES] = { gpus, 1e6, 1e6 };
    fs_set_pool(fs, 0, "default", cap);
    fs_pending_t p[8];
    for (int i = 0; i < n; i++) {
        p[i] = (fs_pending_t){ fs_tenant_id(fs, queues[i]), { want[i], 0, 0 }, (int)want[i] };
    }
    fs_set_pending(fs, 0, p, n);
    fs_refresh(fs, 0, 1000);
}

static void test_hierarchy(void **state)
{
    (void)state;
    fs_store_t *fs = fs_store_new(NULL);
    /* research (quota 8, limit 10) over a (quota 6) and b (quota 2, weight
     * 3); ops (quota 4) beside it; 20 GPUs, everyone hungry. Top: research 8
     * + ops 4, surplus 8 by weights 8:4 -> research +5.33 capped at its
     * limit 10 (+2), ops gets the rest: 20 - 10 = 10. Inside research (10):
     * a 6, b 2, surplus 2 by weights 6:3 -> a 7.33, b 2.67. */
    fs_queue_upsert(fs, mkq("research", "{'resources':{'gpu':{'quota':8,'limit':10}}}"));
    fs_queue_upsert(fs, mkq("a", "{'parentQueue':'research','resources':{'gpu':{'quota':6}}}"));
    fs_queue_upsert(fs, mkq("b", "{'parentQueue':'research','resources':{'gpu':{'quota':2,'overQuotaWeight':3}}}"));
    fs_queue_upsert(fs, mkq("ops", "{'resources':{'gpu':{'quota':4}}}"));
    const char *qs[] = { "a", "b", "ops" };
    double want[] = { 50, 50, 50 };
    pool_setup(fs, 20, qs, want, 3);
    NEAR(fair_of(fs, "research"), 10);
    NEAR(fair_of(fs, "ops"), 10);
    NEAR(fair_of(fs, "a"), 6 + 2.0 * 6 / 9);
    NEAR(fair_of(fs, "b"), 2 + 2.0 * 3 / 9);
    /* A pod naming the parent counts in default, with a message. */
    char *m = fs_fallback_message(fs, fs_tenant_id(fs, "research"));
    assert_non_null(m);
    assert_non_null(strstr(m, "child queues"));
    free(m);
    assert_null(fs_fallback_message(fs, fs_tenant_id(fs, "a")));
    fs_store_free(fs);
}

static void test_invalid_hierarchy(void **state)
{
    (void)state;
    fs_store_t *fs = fs_store_new(NULL);
    fs_queue_upsert(fs, mkq("x", "{'parentQueue':'y'}"));
    fs_queue_upsert(fs, mkq("y", "{'parentQueue':'x'}"));
    fs_queue_upsert(fs, mkq("orphan", "{'parentQueue':'nobody'}"));
    fs_queue_upsert(fs, mkq("kid", "{'parentQueue':'orphan'}"));
    fs_queue_upsert(fs, mkq("ok", "{'resources':{'gpu':{'quota':1}}}"));
    const char *names[] = { "x", "y", "orphan", "kid" };
    for (int i = 0; i < 4; i++) {
        char *m = fs_fallback_message(fs, fs_tenant_id(fs, names[i]));
        if (!m || !strstr(m, "invalid"))
            fail_msg("queue %s: %s", names[i], m ? m : "(resolves to itself)");
        free(m);
    }
    assert_null(fs_fallback_message(fs, fs_tenant_id(fs, "ok")));
    char *m = fs_fallback_message(fs, fs_tenant_id(fs, "never-created"));
    assert_non_null(strstr(m, "does not exist"));
    free(m);
    fs_tick_t t;
    fs_tick(fs, 1000, &t);
    int invalid = 0;
    for (int i = 0; i < t.nevents; i++)
        invalid += strcmp(t.events[i].reason, "InvalidQueue") == 0;
    assert_int_equal(invalid, 4);
    assert_int_equal(t.npatches, 5); /* every object gets a status */
    int saw = 0;
    for (int i = 0; i < t.npatches; i++)
        if (strcmp(t.patches[i].name, "x") == 0)
            saw = strstr(t.patches[i].body, "\"state\":\"Invalid\"") != NULL;
    assert_true(saw);
    fs_tick_clear(&t);
    /* Said once; a second tick says nothing new. */
    fs_tick(fs, 2000, &t);
    assert_int_equal(t.nevents, 0);
    assert_int_equal(t.npatches, 0);
    fs_tick_clear(&t);
    /* Breaking the cycle heals both. */
    fs_queue_upsert(fs, mkq("y", "{}"));
    assert_null(fs_fallback_message(fs, fs_tenant_id(fs, "x")));
    fs_store_free(fs);
}

static void test_admission(void **state)
{
    (void)state;
    fs_opts_t o = { .starvation_age_s = 600, .non_preemptible_priority = 100 };
    fs_store_t *fs = fs_store_new(&o);
    fs_queue_upsert(fs, mkq("lim", "{'resources':{'gpu':{'quota':2,'limit':4}}}"));
    int t = fs_tenant_id(fs, "lim");
    const char *qs[] = { "lim" };
    double want[] = { 10 };
    pool_setup(fs, 16, qs, want, 1);
    double one[FS_NRES] = { 1, 0, 0 };
    char msg[256];
    pod_t *p[5];
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof(name), "p%d", i);
        p[i] = mkpod(name, "lim", 1, 0);
        assert_int_equal(fs_admit(fs, 0, t, one, 1, msg, sizeof(msg)), 0);
        fs_charge(fs, p[i], t, 0, 0, +1);
    }
    assert_int_equal(fs_admit(fs, 0, t, one, 1, msg, sizeof(msg)), FS_ADMIT_LIMIT);
    assert_string_equal(msg, "queue \"lim\" limit: gpu 4 + 1 > 4");
    /* Non-preemptible work stays inside the quota (2), whatever else runs. */
    fs_uncharge(fs, p[3]->uid);
    fs_uncharge(fs, p[2]->uid);
    fs_uncharge(fs, p[1]->uid);
    p[4] = mkpod("np", "lim", 2, 1000);
    assert_false(fs_pod_preemptible(fs, p[4]));
    double two[FS_NRES] = { 2, 0, 0 };
    assert_int_equal(fs_admit(fs, 0, t, two, 0, msg, sizeof(msg)), 0);
    fs_charge(fs, p[4], t, 0, 0, +1); /* 3 held, 2 of them non-preemptible */
    assert_int_equal(fs_admit(fs, 0, t, one, 0, msg, sizeof(msg)), FS_ADMIT_QUOTA);
    assert_string_equal(msg, "queue \"lim\" quota (non-preemptible): gpu 2 + 1 > 2");
    /* ... while a preemptible pod may go on to the limit. */
    assert_int_equal(fs_admit(fs, 0, t, one, 1, msg, sizeof(msg)), 0);
    fs_charge(fs, p[1], t, 0, 0, +1);
    assert_int_equal(fs_admit(fs, 0, t, one, 1, msg, sizeof(msg)), -1);
    /* Past both the limit (4) and the quota: the quota is what is said, so
     * no limit reclaim makes room for non-preemptible work over its quota
     * (issue 22, found by the composition suite). */
    assert_int_equal(fs_admit(fs, 0, t, two, 0, msg, sizeof(msg)), FS_ADMIT_QUOTA);
    assert_string_equal(msg, "queue \"lim\" quota (non-preemptible): gpu 2 + 2 > 2");
    /* The default queue has no limit and no quota. */
    assert_int_equal(fs_admit(fs, 0, FS_DEFAULT_ID, two, 0, msg, sizeof(msg)), 0);
    for (int i = 0; i < 5; i++)
        pod_unref(p[i]);
    fs_store_free(fs);
}

static void test_reclaim_stops_at_share(void **state)
{
    (void)state;
    fs_store_t *fs = fs_store_new(NULL);
    fs_queue_upsert(fs, mkq("qa", "{'resources':{'gpu':{'quota':3}}}"));
    fs_queue_upsert(fs, mkq("qb", "{'resources':{'gpu':{'quota':1}}}"));
    int ta = fs_tenant_id(fs, "qa"), tb = fs_tenant_id(fs, "qb");
    pod_t *a[16], *b[5];
    for (int i = 0; i < 16; i++) {
        char name[8];
        snprintf(name, sizeof(name), "a%d", i);
        a[i] = mkpod(name, "qa", 1, 0);
        fs_charge(fs, a[i], ta, 0, 0, +1);
    }
    const char *qs[] = { "qa", "qb" };
    double want[] = { 4, 20 };
    pool_setup(fs, 16, qs, want, 2);
    NEAR(fair_of(fs, "qa"), 12);
    NEAR(fair_of(fs, "qb"), 4);
    double one[FS_NRES] = { 1, 0, 0 };
    int cross = 0, k = 0;
    /* qb takes one GPU at a time until it holds its 4; then nothing. */
    for (int i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof(name), "b%d", i);
        b[i] = mkpod(name, "qb", 1, 0);
        if (fs_may_reclaim(fs, 0, tb, one, 0, 0, 0, a[15 - k]->uid, 0, 0, &cross)) {
            assert_true(cross);
            fs_uncharge(fs, a[15 - k]->uid);
            fs_charge(fs, b[i], tb, 0, 0, +1);
            k++;
        }
    }
    assert_int_equal(k, 4);
    /* No ping-pong: qa (now at 12, its share) may not take one back. */
    assert_false(fs_may_reclaim(fs, 0, ta, one, 0, 0, 0, b[0]->uid, 0, 0, &cross));
    /* Same queue: only a starving pod, and only newer pods of no higher priority. */
    assert_false(fs_may_reclaim(fs, 0, ta, one, 0, 10, 0, a[0]->uid, 0, 0, &cross));
    assert_false(cross);
    /* A non-preemptible victim is never taken. */
    pod_t *np = mkpod("np", "qa", 1, 500);
    fs_charge(fs, np, ta, 0, 0, +1);
    assert_false(fs_may_reclaim(fs, 0, tb, one, 1, 0, 0, np->uid, 0, 0, &cross));
    pod_unref(np);
    for (int i = 0; i < 16; i++)
        pod_unref(a[i]);
    for (int i = 0; i < 5; i++)
        pod_unref(b[i]);
    fs_store_free(fs);
}

static void test_limit_reclaim(void **state)
{
    (void)state;
    fs_store_t *fs = fs_store_new(NULL);
    fs_queue_upsert(fs, mkq("dept", "{'resources':{'gpu':{'quota':8,'limit':8}}}"));
    fs_queue_upsert(fs, mkq("p1", "{'parentQueue':'dept','resources':{'gpu':{'quota':3}}}"));
    fs_queue_upsert(fs, mkq("p2", "{'parentQueue':'dept','resources':{'gpu':{'quota':5}}}"));
    int t1 = fs_tenant_id(fs, "p1"), t2 = fs_tenant_id(fs, "p2");
    pod_t *p[8];
    for (int i = 0; i < 8; i++) {
        char name[8];
        snprintf(name, sizeof(name), "x%d", i);
        p[i] = mkpod(name, i < 6 ? "p1" : "p2", 1, 0);
        fs_charge(fs, p[i], i < 6 ? t1 : t2, 0, 0, +1);
    }
    const char *qs[] = { "p1", "p2" };
    double want[] = { 0, 10 };
    pool_setup(fs, 16, qs, want, 2);
    NEAR(fair_of(fs, "p1"), 3);
    NEAR(fair_of(fs, "p2"), 5);
    double one[FS_NRES] = { 1, 0, 0 };
    char msg[256];
    assert_int_equal(fs_admit(fs, 0, t2, one, 1, msg, sizeof(msg)), -1);
    assert_string_equal(msg, "queue \"dept\" limit: gpu 8 + 1 > 8");
    char **uids = NULL;
    int n = fs_limit_victims(fs, 0, t2, one, 0, 0, &uids);
    assert_int_equal(n, 1);
    assert_non_null(strstr(uids[0], "u-x")); /* one of p1's pods */
    int k = uids[0][3] - '0';
    assert_true(k < 6);
    free(uids[0]);
    free(uids);
    /* p1 itself at its own share asks nothing of p2. */
    for (int i = 0; i < 3; i++)
        fs_uncharge(fs, p[i]->uid);
    n = fs_limit_victims(fs, 0, t1, one, 0, 0, &uids);
    assert_int_equal(n, 0);
    for (int i = 0; i < 8; i++)
        pod_unref(p[i]);
    fs_store_free(fs);
}

/* Issue 35, fault 11 (composition seed 354306169): a pod passes its own
 * queue's limit and its parent's. The victims must bring both within
 * their limits: the lowest queue's excess alone left the parent over (the
 * reclaiming pod is charged at once and its admission is not asked again:
 * dept held 8.5 GPUs against a limit of 8). */
static void test_limit_reclaim_every_level(void **state)
{
    (void)state;
    fs_store_t *fs = fs_store_new(NULL);
    fs_queue_upsert(fs, mkq("dept", "{'resources':{'gpu':{'quota':6,'limit':8}}}"));
    fs_queue_upsert(fs, mkq("pa", "{'parentQueue':'dept','resources':{'gpu':{'quota':2,'limit':6}}}"));
    fs_queue_upsert(fs, mkq("pb", "{'parentQueue':'dept','resources':{'gpu':{'quota':2,'limit':8}}}"));
    int ta = fs_tenant_id(fs, "pa"), tb = fs_tenant_id(fs, "pb");
    pod_t *a = mkpod("a", "pa", 1, 50), *big = mkpod("big", "pb", 4, 50);
    pod_t *low[2] = { mkpod("low0", "pb", 1, 10), mkpod("low1", "pb", 1, 10) };
    fs_charge(fs, a, ta, 0, 0, +1);
    fs_charge(fs, big, tb, 0, 0, +1);
    for (int i = 0; i < 2; i++)
        fs_charge(fs, low[i], tb, 0, 0, +1);
    const char *qs[] = { "pa", "pb" };
    double want[] = { 0, 3 };
    pool_setup(fs, 16, qs, want, 2);
    /* pb: 6 + 3 > 8 by 1; dept: 7 + 3 > 8 by 2 */
    double three[FS_NRES] = { 3, 0, 0 };
    char msg[256];
    assert_int_equal(fs_admit(fs, 0, tb, three, 1, msg, sizeof(msg)), -1);
    assert_string_equal(msg, "queue \"pb\" limit: gpu 6 + 3 > 8");
    char **uids = NULL;
    int n = fs_limit_victims(fs, 0, tb, three, 50, 0, &uids);
    assert_int_equal(n, 2); /* both of pb's lower-priority pods, not one */
    for (int i = 0; i < n; i++) {
        assert_true(strcmp(uids[i], "u-low0") == 0 || strcmp(uids[i], "u-low1") == 0);
        fs_uncharge(fs, uids[i]);
        free(uids[i]);
    }
    free(uids);
    assert_int_equal(fs_admit(fs, 0, tb, three, 1, msg, sizeof(msg)), 0);
    pod_unref(a);
    pod_unref(big);
    for (int i = 0; i < 2; i++)
        pod_unref(low[i]);
    fs_store_free(fs);
}

/* Issue 35, fault 9: a gang's minimum is one job. qa (quota 4) holds a
 * gang of 2 x 4 GPUs, twice its quota; qb (quota 4, holding nothing) asks
 * 4. Taken whole, the gang takes qa below its quota, but qa is over it
 * with the job counted: the job is over-quota work and goes back. Two lone
 * pods of 4 are two jobs: the second would be taken from a queue at its
 * quota, and is not. Once qb holds its 4, qa (within its quota, asking 4)
 * may take nothing back: qb is at its quota, not over it. */
static void test_reclaim_gang_is_one_job(void **state)
{
    (void)state;
    fs_store_t *fs = fs_store_new(NULL);
    fs_queue_upsert(fs, mkq("qa", "{'resources':{'gpu':{'quota':4}}}"));
    fs_queue_upsert(fs, mkq("qb", "{'resources':{'gpu':{'quota':4}}}"));
    int ta = fs_tenant_id(fs, "qa"), tb = fs_tenant_id(fs, "qb");
    pod_t *g[2] = { mkpod("g0", "qa", 4, 0), mkpod("g1", "qa", 4, 0) };
    for (int i = 0; i < 2; i++)
        fs_charge(fs, g[i], ta, 0, 0, +1);
    const char *qs[] = { "qa", "qb" };
    double want[] = { 0, 4 };
    pool_setup(fs, 8, qs, want, 2);
    NEAR(fair_of(fs, "qa"), 4);
    NEAR(fair_of(fs, "qb"), 4);
    double four[FS_NRES] = { 4, 0, 0 };
    const char *uids[2] = { g[0]->uid, g[1]->uid };
    int one_job[2] = { 0, 0 };
    int cross = 0;
    assert_true(fs_may_reclaim(fs, 0, tb, four, 0, 0, 0, g[0]->uid, 1, 0, &cross));
    assert_true(fs_victims_ok(fs, 0, tb, four, 0, uids, one_job, 2, 0));
    assert_false(fs_victims_ok(fs, 0, tb, four, 0, uids, NULL, 2, 0));
    /* qb would pass its quota taking 8: not even a whole job over quota. */
    double eight[FS_NRES] = { 8, 0, 0 };
    assert_false(fs_victims_ok(fs, 0, tb, eight, 0, uids, one_job, 2, 0));
    pod_t *b = mkpod("b0", "qb", 4, 0);
    for (int i = 0; i < 2; i++)
        fs_uncharge(fs, g[i]->uid);
    fs_charge(fs, b, tb, 0, 0, +1);
    double want2[] = { 8, 0 };
    pool_setup(fs, 8, qs, want2, 2);
    NEAR(fair_of(fs, "qa"), 4);
    NEAR(fair_of(fs, "qb"), 4);
    /* No ping-pong: neither the gang (8, past qa's share) nor a pod of 4
     * within it takes qb's job. */
    const char *bu[1] = { b->uid };
    assert_false(fs_may_reclaim(fs, 0, ta, four, 0, 0, 0, b->uid, 0, 0, &cross));
    assert_false(fs_victims_ok(fs, 0, ta, four, 0, bu, NULL, 1, 0));
    assert_false(fs_victims_ok(fs, 0, ta, eight, 0, bu, NULL, 1, 0));
    pod_unref(b);
    for (int i = 0; i < 2; i++)
        pod_unref(g[i]);
    fs_store_free(fs);

    /* qa's quota 5: one member gone would leave qa at 4, below it. A lone
     * pod is refused that; a member of the gang's minimum is judged with
     * its job (the member) counted, and the gang whole. */
    fs = fs_store_new(NULL);
    fs_queue_upsert(fs, mkq("qa", "{'resources':{'gpu':{'quota':5}}}"));
    fs_queue_upsert(fs, mkq("qb", "{'resources':{'gpu':{'quota':3}}}"));
    ta = fs_tenant_id(fs, "qa");
    tb = fs_tenant_id(fs, "qb");
    g[0] = mkpod("g0", "qa", 4, 0);
    g[1] = mkpod("g1", "qa", 4, 0);
    for (int i = 0; i < 2; i++) {
        fs_charge(fs, g[i], ta, 0, 0, +1);
        uids[i] = g[i]->uid;
    }
    double want3[] = { 0, 3 };
    pool_setup(fs, 8, qs, want3, 2);
    NEAR(fair_of(fs, "qa"), 5);
    NEAR(fair_of(fs, "qb"), 3);
    double three[FS_NRES] = { 3, 0, 0 };
    assert_false(fs_may_reclaim(fs, 0, tb, three, 0, 0, 0, g[0]->uid, 0, 0, &cross));
    assert_true(fs_may_reclaim(fs, 0, tb, three, 0, 0, 0, g[0]->uid, 1, 0, &cross));
    assert_true(fs_victims_ok(fs, 0, tb, three, 0, uids, one_job, 2, 0));
    for (int i = 0; i < 2; i++)
        pod_unref(g[i]);
    fs_store_free(fs);
}

/* A GPU pod that asks some CPU too (the CPU is plentiful: not contested). */
static pod_t *mkpod_cpu(const char *name, const char *queue, int gpu)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'ns','uid':'u-%s','labels':{'resource.aibee.cn/queue':'%s'},"
             "'creationTimestamp':'2026-01-01T00:00:01Z'},"
             "'spec':{'containers':[{'name':'c','resources':{'requests':{'nvidia.com/gpu':'%d','cpu':'100m'}}}]}}",
             name, name, queue, gpu);
    return fx_pod(buf);
}

/* Issue 22, fault 16: train (quota 8, limit 8) against other (quota 0),
 * which fills the 8 GPUs with 1-GPU pods. other's fair share of GPUs is 0:
 * train reclaims all 8, as four 2-GPU pods one at a time and as one gang
 * of 4 x 2 at once. (The old rule stopped at 6 for single pods, and at 0
 * for the gang: emptied, other's ratio fell "below" a share of nothing.) */
static void test_reclaim_zero_share(void **state)
{
    (void)state;
    for (int gang = 0; gang < 2; gang++) {
        fs_store_t *fs = fs_store_new(NULL);
        fs_queue_upsert(fs, mkq("train", "{'resources':{'gpu':{'quota':8,'limit':8}}}"));
        fs_queue_upsert(fs, mkq("other", "{'resources':{'gpu':{'quota':0}}}"));
        int tt = fs_tenant_id(fs, "train"), to = fs_tenant_id(fs, "other");
        pod_t *o[8], *t[4];
        for (int i = 0; i < 8; i++) {
            char name[8];
            snprintf(name, sizeof(name), "o%d", i);
            o[i] = mkpod_cpu(name, "other", 1);
            fs_charge(fs, o[i], to, 0, 0, +1);
        }
        double cap[FS_NRES] = { 8, 1e6, 1e6 };
        fs_set_pool(fs, 0, "default", cap);
        fs_pending_t pend[1] = { { tt, { 8, 400, 0 }, 4 } };
        fs_set_pending(fs, 0, pend, 1);
        fs_refresh(fs, 0, 1000);
        NEAR(fair_of(fs, "train"), 8);
        NEAR(fair_of(fs, "other"), 0);
        int taken = 0;
        if (gang) {
            double req[FS_NRES] = { 8, 400, 0 };
            const char *uids[8];
            for (int i = 0; i < 8; i++)
                uids[i] = o[i]->uid;
            assert_true(fs_victims_ok(fs, 0, tt, req, 0, uids, NULL, 8, 0));
            taken = 8;
        } else {
            double req[FS_NRES] = { 2, 100, 0 };
            for (int k = 0; k < 4; k++) {
                char name[8];
                snprintf(name, sizeof(name), "t%d", k);
                t[k] = mkpod_cpu(name, "train", 2);
                const char *uids[2] = { o[2 * k]->uid, o[2 * k + 1]->uid };
                if (!fs_victims_ok(fs, 0, tt, req, 0, uids, NULL, 2, 0))
                    break;
                fs_uncharge(fs, uids[0]);
                fs_uncharge(fs, uids[1]);
                fs_charge(fs, t[k], tt, 0, 0, +1);
                taken += 2;
            }
            /* No ping-pong: other may take nothing back. */
            int cross = 0;
            double one[FS_NRES] = { 1, 100, 0 };
            assert_false(fs_may_reclaim(fs, 0, to, one, 0, 0, 0, t[0]->uid, 0, 0, &cross));
            for (int k = 0; k < 4; k++)
                pod_unref(t[k]);
        }
        assert_int_equal(taken, 8);
        for (int i = 0; i < 8; i++)
            pod_unref(o[i]);
        fs_store_free(fs);
    }
}

/* Issue 22, fault 4: a queue at its own limit lets its urgent pod in by
 * evicting its own lower-priority pods (lowest priority first), never
 * pods of its own priority or higher. */
static void test_limit_own_priority(void **state)
{
    (void)state;
    fs_store_t *fs = fs_store_new(NULL);
    fs_queue_upsert(fs, mkq("team", "{'resources':{'gpu':{'quota':4,'limit':4}}}"));
    int t = fs_tenant_id(fs, "team");
    pod_t *p[4];
    int prio[4] = { 50, 10, 50, 80 };
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof(name), "l%d", i);
        p[i] = mkpod(name, "team", 1, prio[i]);
        fs_charge(fs, p[i], t, 0, 0, +1);
    }
    const char *qs[] = { "team" };
    double want[] = { 6 };
    pool_setup(fs, 8, qs, want, 1);
    double two[FS_NRES] = { 2, 0, 0 };
    char msg[256];
    assert_int_equal(fs_admit(fs, 0, t, two, 1, msg, sizeof(msg)), -1);
    char **uids = NULL;
    /* priority 60: the 10 and one of the 50s go. */
    int n = fs_limit_victims(fs, 0, t, two, 60, 0, &uids);
    assert_int_equal(n, 2);
    assert_string_equal(uids[0], "u-l1");
    assert_true(strcmp(uids[1], "u-l0") == 0 || strcmp(uids[1], "u-l2") == 0);
    for (int i = 0; i < n; i++)
        free(uids[i]);
    free(uids);
    /* priority 50: only the 10 is lower, and one GPU is not enough. */
    assert_int_equal(fs_limit_victims(fs, 0, t, two, 50, 0, &uids), 0);
    assert_null(uids);
    for (int i = 0; i < 4; i++)
        pod_unref(p[i]);
    fs_store_free(fs);
}

/* Issue 35, fault 1: a held charge (a preemptor holding the room it made,
 * a pod whose Binding is in flight) counts against the limit but is never
 * a victim: its pod is not bound, and evicting it would delete it. The
 * priority-10 pod holds its room; the two 50s go instead. */
static void test_limit_spares_held(void **state)
{
    (void)state;
    fs_store_t *fs = fs_store_new(NULL);
    fs_queue_upsert(fs, mkq("team", "{'resources':{'gpu':{'quota':4,'limit':4}}}"));
    int t = fs_tenant_id(fs, "team");
    pod_t *p[4];
    int prio[4] = { 50, 10, 50, 80 };
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof(name), "l%d", i);
        p[i] = mkpod(name, "team", 1, prio[i]);
        if (i == 1)
            fs_charge_held(fs, p[i], t, 0, 0);
        else
            fs_charge(fs, p[i], t, 0, 0, +1);
    }
    const char *qs[] = { "team" };
    double want[] = { 6 };
    pool_setup(fs, 8, qs, want, 1);
    double two[FS_NRES] = { 2, 0, 0 };
    char msg[256];
    assert_int_equal(fs_admit(fs, 0, t, two, 1, msg, sizeof(msg)), -1); /* the held GPU counts */
    char **uids = NULL;
    int n = fs_limit_victims(fs, 0, t, two, 60, 0, &uids);
    assert_int_equal(n, 2);
    for (int i = 0; i < n; i++) {
        assert_true(strcmp(uids[i], "u-l0") == 0 || strcmp(uids[i], "u-l2") == 0);
        free(uids[i]);
    }
    free(uids);
    for (int i = 0; i < 4; i++)
        pod_unref(p[i]);
    fs_store_free(fs);
}

/* Issue 35, fault 15: a victim on its way out (fs_leave) still holds its
 * node. Limits count it until it is gone, so room it frees beyond what its
 * preemptor asked (a gang goes whole: a 1-GPU pod reclaimed a 4-GPU gang
 * under its queue's limit) is nobody's meanwhile: neither a second pod of
 * the same queue nor one of a sibling under the same parent limit is
 * admitted, and neither reclaims again (the leaving pods are counted
 * freed, never chosen twice). Shares count it as freed at once. */
static void test_leaving_victims_hold_limits(void **state)
{
    (void)state;
    fs_store_t *fs = fs_store_new(NULL);
    fs_queue_upsert(fs, mkq("dept", "{'resources':{'gpu':{'quota':8,'limit':8}}}"));
    fs_queue_upsert(fs, mkq("pa", "{'parentQueue':'dept','resources':{'gpu':{'quota':4,'limit':6}}}"));
    fs_queue_upsert(fs, mkq("pb", "{'parentQueue':'dept','resources':{'gpu':{'quota':4}}}"));
    int ta = fs_tenant_id(fs, "pa"), tb = fs_tenant_id(fs, "pb");
    /* pa runs a 4-GPU gang (g0, g1: priority 10) and a 2-GPU pod (k). */
    pod_t *g0 = mkpod("g0", "pa", 2, 10), *g1 = mkpod("g1", "pa", 2, 10), *k = mkpod("k", "pa", 2, 50);
    pod_t *l5 = mkpod("l5", "pa", 1, 80), *a2 = mkpod("a2", "pa", 1, 80), *b1 = mkpod("b1", "pb", 1, 80);
    fs_charge(fs, g0, ta, 0, 0, +1);
    fs_charge(fs, g1, ta, 0, 0, +1);
    fs_charge(fs, k, ta, 0, 0, +1);
    const char *qs[] = { "pa", "pb" };
    double want[] = { 8, 2 };
    pool_setup(fs, 16, qs, want, 2);
    double one[FS_NRES] = { 1, 0, 0 };
    char msg[256];
    assert_int_equal(fs_admit(fs, 0, ta, one, 1, msg, sizeof(msg)), FS_ADMIT_LIMIT); /* 6 + 1 > 6 */
    char **uids = NULL;
    int n = fs_limit_victims(fs, 0, ta, one, 80, 0, &uids);
    assert_int_equal(n, 1);
    assert_true(strcmp(uids[0], "u-g0") == 0 || strcmp(uids[0], "u-g1") == 0);
    free(uids[0]);
    free(uids);
    /* The core takes the gang whole (q_reserve): both leave, l5 holds 1. */
    fs_leave(fs, g0->uid);
    fs_leave(fs, g1->uid);
    fs_charge_held(fs, l5, ta, 0, 0);
    /* Still running: pa holds 2 + 4 leaving + 1 held = 7 against 6. */
    assert_int_equal(fs_admit(fs, 0, ta, one, 1, msg, sizeof(msg)), FS_ADMIT_LIMIT);
    assert_non_null(strstr(msg, "gpu 7 + 1 > 6"));
    /* dept holds 7 against 8: pb's 1 GPU fits, 2 would not. */
    assert_int_equal(fs_admit(fs, 0, tb, one, 1, msg, sizeof(msg)), 0);
    double two[FS_NRES] = { 2, 0, 0 };
    assert_int_equal(fs_admit(fs, 0, tb, two, 1, msg, sizeof(msg)), FS_ADMIT_LIMIT);
    assert_non_null(strstr(msg, "queue \"dept\" limit"));
    /* Nothing is reclaimed again: counted freed, pa and dept are within. */
    assert_int_equal(fs_limit_victims(fs, 0, ta, one, 80, 0, &uids), 0);
    assert_int_equal(fs_limit_victims(fs, 0, tb, two, 80, 0, &uids), 0);
    assert_null(uids);
    int cross = 0;
    assert_true(fs_may_reclaim(fs, 0, tb, one, 1, 80, 0, k->uid, 0, 0, &cross)); /* k stays: a candidate */
    assert_false(fs_may_reclaim(fs, 0, tb, one, 1, 80, 0, g0->uid, 0, 0, &cross));
    /* An informer update charges a leaving pod again: it stays leaving. */
    fs_uncharge(fs, g0->uid);
    fs_charge(fs, g0, ta, 0, 0, +1);
    assert_int_equal(fs_admit(fs, 0, ta, one, 1, msg, sizeof(msg)), FS_ADMIT_LIMIT);
    assert_int_equal(fs_limit_victims(fs, 0, ta, one, 80, 0, &uids), 0);
    /* The gang is gone: a2 fits beside l5 (2 + 1 + 1 <= 6), and pb's 1. */
    fs_forget(fs, g0->uid);
    fs_forget(fs, g1->uid);
    assert_int_equal(fs_admit(fs, 0, ta, one, 1, msg, sizeof(msg)), 0);
    assert_int_equal(fs_admit(fs, 0, tb, one, 1, msg, sizeof(msg)), 0);
    /* A victim that stays (its eviction refused) counts everywhere again,
     * and may be chosen again. */
    fs_leave(fs, k->uid);
    assert_int_equal(fs_admit(fs, 0, ta, one, 1, msg, sizeof(msg)), 0); /* 1 + 2 leaving + 1 <= 6 */
    fs_stay(fs, k->uid);
    fs_charge(fs, k, ta, 0, 0, +1);
    double four[FS_NRES] = { 4, 0, 0 };
    n = fs_limit_victims(fs, 0, ta, four, 80, 0, &uids); /* 3 + 4 > 6: k goes */
    assert_int_equal(n, 1);
    assert_string_equal(uids[0], "u-k");
    free(uids[0]);
    free(uids);
    (void)a2;
    (void)b1;
    pod_unref(g0);
    pod_unref(g1);
    pod_unref(k);
    pod_unref(l5);
    pod_unref(a2);
    pod_unref(b1);
    fs_store_free(fs);
}

/* Issue 22, fault 14: pods naming more than FS_MAX_NAMES queues send the
 * rest to default, but never keep a Queue created later out. */
static void test_names_cap(void **state)
{
    (void)state;
    fs_store_t *fs = fs_store_new(NULL);
    char name[32];
    for (int i = 0; i < FS_MAX_NAMES + 10; i++) {
        snprintf(name, sizeof(name), "label-%d", i);
        (void)fs_tenant_id(fs, name);
    }
    assert_int_equal(fs_tenant_id(fs, "one-too-many"), FS_DEFAULT_ID);
    assert_int_equal(fs_queue_upsert(fs, mkq("late", "{'resources':{'gpu':{'quota':2}}}")), 1);
    int t = fs_tenant_id(fs, "late");
    assert_int_not_equal(t, FS_DEFAULT_ID);
    char *qn = fs_queue_name(fs, t);
    assert_string_equal(qn, "late");
    free(qn);
    assert_null(fs_fallback_message(fs, t));
    fs_store_free(fs);
}

/* Issue 22, fault 15: a Queue's status write counts as done only once the
 * informer shows it; a dropped write goes again after STATUS_RETRY_MS. */
static void test_status_rewritten_until_seen(void **state)
{
    (void)state;
    fs_store_t *fs = fs_store_new(NULL);
    fs_queue_upsert(fs, mkq("s", "{'resources':{'gpu':{'quota':1}}}"));
    fs_tick_t t;
    fs_tick(fs, 1000, &t);
    assert_int_equal(t.npatches, 1);
    char *body = util_strdup(t.patches[0].body);
    fs_tick_clear(&t);
    fs_tick(fs, 5000, &t);
    assert_int_equal(t.npatches, 0); /* in flight */
    fs_tick_clear(&t);
    fs_tick(fs, 12000, &t);
    assert_int_equal(t.npatches, 1); /* never shown: again */
    assert_string_equal(t.patches[0].body, body);
    fs_tick_clear(&t);
    /* The write comes back through the informer: done for good. */
    json_t *b = json_loads(body, 0, NULL);
    json_t *obj = json_pack("{s:{s:s, s:s}, s:{s:{s:{s:i}}}, s:O}", "metadata", "name", "s", "uid", "uid-s", "spec",
                            "resources", "gpu", "quota", 1, "status", json_object_get(b, "status"));
    char err[128];
    assert_int_equal(fs_queue_upsert(fs, fs_queue_from_json(obj, err, sizeof(err))), 0);
    fs_tick(fs, 30000, &t);
    assert_int_equal(t.npatches, 0);
    fs_tick_clear(&t);
    json_decref(obj);
    json_decref(b);
    free(body);
    fs_store_free(fs);
}

/* The scheduling queue keeps one heap per tenant and asks pick. */
static int tenant_by_label(const pod_t *p, void *ud)
{
    (void)ud;
    const char *q = fs_pod_queue_label(p);
    return q && strcmp(q, "b") == 0 ? 1 : 0;
}

static int pick_tenant1(const int *tenants, const int64_t *first, int n, void *ud)
{
    (void)first;
    (void)ud;
    for (int i = 0; i < n; i++)
        if (tenants[i] == 1)
            return i;
    return 0;
}

typedef struct sum_seen {
    int pods[2];
    int64_t gpu[2];
} sum_seen_t;

static void sum_cb(int tenant, const resources_t *req, int pods, void *ud)
{
    sum_seen_t *s = ud;
    if (tenant < 2) {
        s->pods[tenant] = pods;
        s->gpu[tenant] = res_get_scalar(req, "nvidia.com/gpu");
    }
}

static void test_queue_tenants(void **state)
{
    (void)state;
    queue_opts_t o;
    queue_opts_default(&o);
    o.tenant_of = tenant_by_label;
    o.pick = pick_tenant1;
    sched_queue_t *q = queue_new(&o);
    pod_t *a1 = mkpod("qa1", "a", 1, 10), *a2 = mkpod("qa2", "a", 1, 5), *b1 = mkpod("qb1", "b", 2, 0);
    queue_add(q, a1, 0);
    queue_add(q, a2, 0);
    queue_add(q, b1, 0);
    sum_seen_t s = { 0 };
    queue_tenant_pending(q, sum_cb, &s);
    assert_int_equal(s.pods[0], 2);
    assert_int_equal(s.pods[1], 1);
    assert_int_equal(s.gpu[1], 2);
    /* pick prefers tenant 1 although its head has the lowest priority. */
    queue_item_t *it = queue_pop_timeout(q, 0);
    assert_string_equal(it->pod->name, "qb1");
    /* Out with the caller, it still counts as pending. */
    memset(&s, 0, sizeof(s));
    queue_tenant_pending(q, sum_cb, &s);
    assert_int_equal(s.pods[1], 1);
    queue_done(q, it);
    queue_item_free(it);
    memset(&s, 0, sizeof(s));
    queue_tenant_pending(q, sum_cb, &s);
    assert_int_equal(s.pods[1], 0);
    /* Inside a tenant: priority order. */
    it = queue_pop_timeout(q, 0);
    assert_string_equal(it->pod->name, "qa1");
    queue_requeue(q, it);
    queue_stats_t st;
    queue_get_stats(q, &st);
    assert_int_equal(st.active + st.unschedulable + st.backoff, 2);
    queue_free(q);
    pod_unref(a1);
    pod_unref(a2);
    pod_unref(b1);
}

/* checkpointGrace: the leaf's own, else the nearest ancestor's; a child
 * setting "0" opts out under a parent that sets one; none: unset. */
static void test_checkpoint_grace_inherited(void **state)
{
    (void)state;
    fs_store_t *fs = fs_store_new(NULL);
    fs_queue_upsert(fs, mkq("train", "{'checkpointGrace':'2m'}"));
    fs_queue_upsert(fs, mkq("mid", "{'parentQueue':'train'}"));
    fs_queue_upsert(fs, mkq("leaf", "{'parentQueue':'mid'}"));
    fs_queue_upsert(fs, mkq("own", "{'parentQueue':'mid','checkpointGrace':'30s'}"));
    fs_queue_upsert(fs, mkq("off", "{'parentQueue':'mid','checkpointGrace':'0'}"));
    fs_queue_upsert(fs, mkq("plain", "{}"));
    assert_int_equal(fs_checkpoint_grace(fs, fs_tenant_id(fs, "leaf")), 120000);
    assert_int_equal(fs_checkpoint_grace(fs, fs_tenant_id(fs, "own")), 30000);
    assert_int_equal(fs_checkpoint_grace(fs, fs_tenant_id(fs, "off")), 0);
    assert_int_equal(fs_checkpoint_grace(fs, fs_tenant_id(fs, "plain")), DURATION_UNSET);
    /* An unknown queue counts in default, which sets none. */
    assert_int_equal(fs_checkpoint_grace(fs, fs_tenant_id(fs, "nosuch")), DURATION_UNSET);
    fs_store_free(fs);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_waterfill_runai),
        cmocka_unit_test(test_waterfill_caps),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_hierarchy),
        cmocka_unit_test(test_invalid_hierarchy),
        cmocka_unit_test(test_admission),
        cmocka_unit_test(test_reclaim_stops_at_share),
        cmocka_unit_test(test_reclaim_gang_is_one_job),
        cmocka_unit_test(test_queue_tenants),
        cmocka_unit_test(test_limit_reclaim),
        cmocka_unit_test(test_limit_reclaim_every_level),
        cmocka_unit_test(test_reclaim_zero_share),
        cmocka_unit_test(test_limit_own_priority),
        cmocka_unit_test(test_limit_spares_held),
        cmocka_unit_test(test_leaving_victims_hold_limits),
        cmocka_unit_test(test_names_cap),
        cmocka_unit_test(test_status_rewritten_until_seen),
        cmocka_unit_test(test_checkpoint_grace_inherited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
