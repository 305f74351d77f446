/* test_cache.c -- the cache's pod life cycle: pending, assumed, bound,
 * forgotten, deleted; node partition and nominations. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pthread.h>

#include "cache/cache.h"
#include "scheduler/capabilities.h"

static node_t *mk_node(const char *name, const char *pool_label)
{
    char buf[512], err[256];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\",\"labels\":{\"pool\":\"%s\"}},"
             "\"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"}}}",
             name, name, pool_label);
    json_t *j = json_loads(buf, 0, NULL);
    node_t *n = node_from_json(j, err, sizeof(err));
    json_decref(j);
    assert_non_null(n);
    return n;
}

static pod_t *mk_pod(const char *name, const char *node, const char *cpu, const char *phase)
{
    char buf[1024], err[256];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"uid-%s\"},"
             "\"spec\":{\"schedulerName\":\"ai-scheduler\",\"nodeName\":\"%s\","
             "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]},"
             "\"status\":{\"phase\":\"%s\"}}",
             name, name, node, cpu, phase);
    json_t *j = json_loads(buf, 0, NULL);
    pod_t *p = pod_from_json(j, err, sizeof(err));
    json_decref(j);
    assert_non_null(p);
    return p;
}

/* Pool id = 1 for nodes labelled pool=a, else 0. */
static int partition(void *ud, const node_t *n)
{
    const char *want = ud;
    const char *v = labels_get(&n->labels, "pool");
    return v && strcmp(v, want) == 0 ? 1 : 0;
}

static int64_t requested_cpu(cache_t *c, const char *node)
{
    cache_rdlock(c);
    node_info_t *ni = cache_node_locked(c, node);
    int64_t v = ni ? ni->requested.milli_cpu : -1;
    cache_unlock(c);
    return v;
}

static void test_assume_confirm_forget(void **state)
{
    (void)state;
    cache_t *c = cache_new(partition, "a");
    node_t *n = mk_node("n1", "a");
    assert_int_equal(cache_upsert_node(c, n), 1);
    assert_int_equal(cache_upsert_node(c, n), 0); /* nothing changed */

    pod_t *p = mk_pod("p", "", "1", "Pending");
    cache_pod_state_t now;
    assert_int_equal(cache_upsert_pod(c, p, &now), CPOD_NONE);
    assert_int_equal(now, CPOD_PENDING);

    cache_wrlock(c);
    assert_int_equal(cache_assume_locked(c, p, "n1"), 0);
    assert_int_equal(cache_assume_locked(c, p, "nope"), -1);
    cache_unlock(c);
    assert_int_equal(requested_cpu(c, "n1"), 1000);

    /* An unbound view of an assumed pod (a status patch) keeps it assumed. */
    assert_int_equal(cache_upsert_pod(c, p, &now), CPOD_ASSUMED);
    assert_int_equal(now, CPOD_ASSUMED);
    assert_int_equal(requested_cpu(c, "n1"), 1000);

    cache_forget(c, p->uid);
    assert_int_equal(requested_cpu(c, "n1"), 0);
    cache_pod_state_t st;
    pod_t *got = cache_get_pod(c, p->uid, &st);
    assert_int_equal(st, CPOD_PENDING);
    pod_unref(got);

    /* Assume again, then the watch confirms the bind: counted once. */
    cache_wrlock(c);
    cache_assume_locked(c, p, "n1");
    cache_unlock(c);
    pod_t *bound = mk_pod("p", "n1", "1", "Running");
    assert_int_equal(cache_upsert_pod(c, bound, &now), CPOD_ASSUMED);
    assert_int_equal(now, CPOD_BOUND);
    assert_int_equal(requested_cpu(c, "n1"), 1000);

    /* Terminal: holds nothing. */
    pod_t *done = mk_pod("p", "n1", "1", "Succeeded");
    cache_upsert_pod(c, done, &now);
    assert_int_equal(now, CPOD_TERMINAL);
    assert_int_equal(requested_cpu(c, "n1"), 0);

    int pool = -2;
    pod_t *old = NULL;
    assert_int_equal(cache_delete_pod(c, p->uid, &old, &pool), CPOD_TERMINAL);
    assert_non_null(old);
    assert_null(cache_get_pod(c, p->uid, &st));
    assert_int_equal(st, CPOD_NONE);

    pod_unref(old);
    pod_unref(done);
    pod_unref(bound);
    pod_unref(p);
    node_unref(n);
    cache_free(c);
}

static void test_pod_before_node_and_node_delete(void **state)
{
    (void)state;
    cache_t *c = cache_new(partition, "a");
    pod_t *p = mk_pod("early", "n9", "500m", "Running");
    cache_pod_state_t now;
    cache_upsert_pod(c, p, &now);
    assert_int_equal(now, CPOD_BOUND);
    assert_int_equal(requested_cpu(c, "n9"), 500); /* accounted before the node is known */

    node_t *n = mk_node("n9", "a");
    cache_upsert_node(c, n);
    cache_rdlock(c);
    assert_int_equal(cache_node_locked(c, "n9")->pool, 1);
    cache_unlock(c);

    /* Deleting the node keeps its pods' accounting until they go. */
    cache_delete_node(c, "n9");
    cache_rdlock(c);
    node_info_t *ni = cache_node_locked(c, "n9");
    assert_non_null(ni);
    assert_null(ni->node);
    cache_unlock(c);
    int pool = 0;
    assert_int_equal(cache_delete_pod(c, p->uid, NULL, &pool), CPOD_BOUND);
    assert_int_equal(pool, -1);
    cache_rdlock(c);
    assert_null(cache_node_locked(c, "n9"));
    cache_unlock(c);

    node_unref(n);
    pod_unref(p);
    cache_free(c);
}

/* The accounting hook as a queue store would use it: the pool last charged. */
typedef struct charged {
    int pool, sign, calls;
} charged_t;

static void record_charge(void *ud, const pod_t *p, const node_info_t *ni, int sign)
{
    charged_t *ch = ud;
    (void)p;
    ch->pool = ni ? ni->pool : -1;
    ch->sign = sign;
    ch->calls++;
}

/* Issue 22, fault 15: a node that moves to another pool (its Pool's
 * selector changed) takes its pods' charges along: the hook sees each pod
 * leave and come back in the new pool. */
static void test_repartition_recharges(void **state)
{
    (void)state;
    char want[8] = "a";
    cache_t *c = cache_new(partition, want);
    charged_t ch = { 0 };
    cache_set_account_hook(c, record_charge, &ch);
    node_t *na = mk_node("na", "a");
    cache_upsert_node(c, na);
    pod_t *p = mk_pod("run", "na", "1", "Running");
    cache_upsert_pod(c, p, NULL);
    assert_int_equal(ch.pool, 1);
    assert_int_equal(ch.sign, +1);
    int before = ch.calls;
    strcpy(want, "b");
    cache_repartition(c);
    assert_int_equal(ch.calls, before + 2);
    assert_int_equal(ch.pool, 0);
    assert_int_equal(ch.sign, +1);
    /* A relabelled node, the same. */
    strcpy(want, "a");
    node_t *na2 = mk_node("na", "a");
    cache_upsert_node(c, na2);
    assert_int_equal(ch.pool, 1);
    assert_int_equal(ch.sign, +1);
    assert_int_equal(ch.calls, before + 4);
    /* A pod seen before its node (the pod informer first): charged again
     * once the node, and so its pool, is known. */
    pod_t *early = mk_pod("early", "nz", "1", "Running");
    cache_upsert_pod(c, early, NULL);
    assert_int_equal(ch.pool, -1);
    node_t *nz = mk_node("nz", "a");
    cache_upsert_node(c, nz);
    assert_int_equal(ch.pool, 1);
    assert_int_equal(ch.sign, +1);
    pod_unref(early);
    node_unref(nz);
    pod_unref(p);
    node_unref(na);
    node_unref(na2);
    cache_free(c);
}

static void test_repartition_and_nominations(void **state)
{
    (void)state;
    char want[8] = "a";
    cache_t *c = cache_new(partition, want);
    node_t *na = mk_node("na", "a"), *nb = mk_node("nb", "b");
    cache_upsert_node(c, na);
    cache_upsert_node(c, nb);
    cache_rdlock(c);
    assert_int_equal(cache_node_locked(c, "na")->pool, 1);
    assert_int_equal(cache_node_locked(c, "nb")->pool, 0);
    cache_unlock(c);

    strcpy(want, "b"); /* the pool's selector changed */
    cache_repartition(c);
    cache_rdlock(c);
    assert_int_equal(cache_node_locked(c, "na")->pool, 0);
    assert_int_equal(cache_node_locked(c, "nb")->pool, 1);
    cache_unlock(c);

    pod_t *p = mk_pod("pre", "", "2", "Pending");
    cache_upsert_pod(c, p, NULL);
    cache_nominate(c, p, "nb");
    pod_t *const *noms = NULL;
    cache_rdlock(c);
    assert_int_equal(cache_nominated_locked(c, "nb", &noms), 1);
    assert_string_equal(noms[0]->uid, p->uid);
    assert_int_equal(cache_nominated_locked(c, "na", &noms), 0);
    cache_unlock(c);

    /* Binding the preemptor clears its nomination. */
    cache_wrlock(c);
    cache_assume_locked(c, p, "nb");
    assert_int_equal(cache_nominated_locked(c, "nb", &noms), 0);
    cache_unlock(c);

    node_t **nodes;
    pod_t **pods;
    int nn, np;
    cache_snapshot(c, &nodes, &nn, &pods, &np);
    assert_int_equal(nn, 2);
    assert_int_equal(np, 1);
    cache_free_snapshot(nodes, nn, pods, np);

    cache_stats_t s;
    cache_get_stats(c, &s);
    assert_int_equal(s.assumed, 1);
    assert_int_equal(s.nodes, 2);

    pod_unref(p);
    node_unref(na);
    node_unref(nb);
    cache_free(c);
}

static int refit_no(void *ud, node_info_t *ni)
{
    (void)ni;
    (*(int *)ud)++;
    return 0;
}

static int refit_yes(void *ud, node_info_t *ni)
{
    (void)ud;
    (void)ni;
    return 1;
}

static void test_concurrent_assume_rules(void **state)
{
    (void)state;
    cache_t *c = cache_new(partition, "a");
    node_t *n = mk_node("n1", "a");
    cache_upsert_node(c, n);
    pod_t *p = mk_pod("p", "", "1", "Pending");
    cache_upsert_pod(c, p, NULL);
    cache_rdlock(c);
    uint64_t gen = cache_node_locked(c, "n1")->generation;
    cache_unlock(c);

    int calls = 0;
    assert_int_equal(cache_assume(c, p, "n1", 0, gen, refit_no, &calls), -1); /* wrong pool */
    assert_int_equal(cache_assume(c, p, "zz", 1, gen, refit_no, &calls), -1); /* no node */
    assert_int_equal(calls, 0);
    /* The generation moved: the fit callback decides. */
    assert_int_equal(cache_assume(c, p, "n1", 1, gen + 7, refit_no, &calls), -1);
    assert_int_equal(calls, 1);
    assert_int_equal(requested_cpu(c, "n1"), 0);
    assert_int_equal(cache_assume(c, p, "n1", 1, gen, refit_no, &calls), 0);
    assert_int_equal(requested_cpu(c, "n1"), 1000);
    cache_pod_state_t st;
    pod_t *got = cache_get_pod(c, p->uid, &st);
    assert_int_equal(st, CPOD_ASSUMED);
    pod_unref(got);
    /* Already assumed: not twice. */
    assert_int_equal(cache_assume(c, p, "n1", 1, gen + 1, refit_yes, NULL), -1);
    assert_int_equal(requested_cpu(c, "n1"), 1000);

    /* A deleted pod is not resurrected by a late reserve. */
    pod_t *q = mk_pod("q", "", "1", "Pending");
    cache_upsert_pod(c, q, NULL);
    cache_delete_pod(c, q->uid, NULL, NULL);
    assert_int_equal(cache_assume(c, q, "n1", 1, 0, refit_yes, NULL), -1);
    assert_int_equal(requested_cpu(c, "n1"), 1000);

    /* A nominated pod takes the exclusive path and loses its nomination. */
    pod_t *r = mk_pod("r", "", "1", "Pending");
    cache_upsert_pod(c, r, NULL);
    cache_nominate(c, r, "n1");
    assert_int_equal(cache_assume(c, r, "n1", 1, 0, refit_yes, NULL), 0);
    pod_t *const *noms;
    cache_rdlock(c);
    assert_int_equal(cache_nominated_locked(c, "n1", &noms), 0);
    cache_unlock(c);
    assert_int_equal(requested_cpu(c, "n1"), 2000);

    pod_unref(p);
    pod_unref(q);
    pod_unref(r);
    node_unref(n);
    cache_free(c);
}

/* Fault 8: a nominated pod's reserve drops the read lock to take the
 * write lock; the pod deleted in that gap must not come back as a ghost. */
typedef struct gap {
    cache_t *c;
    pod_t *p;
} gap_t;

static void delete_in_gap(void *ud)
{
    gap_t *g = ud;
    cache_delete_pod(g->c, g->p->uid, NULL, NULL);
}

static void test_nominated_reserve_delete_gap(void **state)
{
    (void)state;
    cache_t *c = cache_new(partition, "a");
    node_t *n = mk_node("n1", "a");
    cache_upsert_node(c, n);
    pod_t *p = mk_pod("g", "", "1", "Pending");
    cache_upsert_pod(c, p, NULL);
    cache_nominate(c, p, "n1");
    gap_t g = { c, p };
    cache_set_assume_gap_hook(c, delete_in_gap, &g);
    assert_int_equal(cache_assume(c, p, "n1", 1, 0, refit_yes, NULL), -1);
    cache_set_assume_gap_hook(c, NULL, NULL);
    cache_pod_state_t st;
    pod_t *got = cache_get_pod(c, p->uid, &st);
    assert_null(got);
    assert_int_equal(st, CPOD_NONE);
    assert_int_equal(requested_cpu(c, "n1"), 0);
    cache_stats_t cs;
    cache_get_stats(c, &cs);
    assert_int_equal(cs.pods, 0);
    pod_unref(p);
    node_unref(n);
    cache_free(c);
}

/* Fault 4: a nomination for a pod that is no longer pending (deleted,
 * bound) is not recorded: it would hold room for nobody. */
static void test_nominate_gone_pod_ignored(void **state)
{
    (void)state;
    cache_t *c = cache_new(partition, "a");
    node_t *n = mk_node("n1", "a");
    cache_upsert_node(c, n);
    pod_t *p = mk_pod("gone", "", "1", "Pending");
    cache_upsert_pod(c, p, NULL);
    cache_delete_pod(c, p->uid, NULL, NULL);
    cache_nominate(c, p, "n1");
    pod_t *const *noms;
    cache_rdlock(c);
    assert_int_equal(cache_nominated_locked(c, "n1", &noms), 0);
    cache_unlock(c);
    /* And a late reserve of it leaves nothing behind. */
    assert_int_equal(cache_assume(c, p, "n1", 1, 0, refit_yes, NULL), -1);
    cache_pod_state_t st;
    pod_t *got = cache_get_pod(c, p->uid, &st);
    assert_null(got);
    assert_int_equal(requested_cpu(c, "n1"), 0);
    pod_unref(p);
    node_unref(n);
    cache_free(c);
}

/* Two "pools" reserving on their own nodes at once while a third thread
 * reads both and a writer churns an unrelated node: run under TSan. */
typedef struct racer {
    cache_t *c;
    const char *node;
    int pool, n;
} racer_t;

static void *race_assume(void *arg)
{
    racer_t *r = arg;
    for (int i = 0; i < r->n; i++) {
        char name[32];
        snprintf(name, sizeof(name), "%s-%d", r->node, i);
        pod_t *p = mk_pod(name, "", "1m", "Pending");
        cache_upsert_pod(r->c, p, NULL);
        assert_int_equal(cache_assume(r->c, p, r->node, r->pool, 0, refit_yes, NULL), 0);
        pod_unref(p);
    }
    return NULL;
}

static void *race_read(void *arg)
{
    racer_t *r = arg;
    for (int i = 0; i < r->n; i++) {
        cache_rdlock(r->c);
        const char *names[2] = { "na", "nb" };
        for (int k = 0; k < 2; k++) {
            node_info_t *ni = cache_node_locked(r->c, names[k]);
            cache_node_lock(r->c, names[k]);
            volatile int64_t v = ni->requested.milli_cpu;
            (void)v;
            cache_node_unlock(r->c, names[k]);
        }
        cache_unlock(r->c);
        cache_stats_t s;
        cache_get_stats(r->c, &s);
    }
    return NULL;
}

static int by_name(void *ud, const node_t *n)
{
    (void)ud;
    return n->name[1] == 'a' ? 1 : n->name[1] == 'b' ? 2 : 0;
}

static void test_concurrent_assume_race(void **state)
{
    (void)state;
    cache_t *c = cache_new(by_name, NULL);
    node_t *na = mk_node("na", "x"), *nb = mk_node("nb", "x"), *nc = mk_node("nc", "x");
    cache_upsert_node(c, na);
    cache_upsert_node(c, nb);
    cache_upsert_node(c, nc);
    racer_t ra = { c, "na", 1, 200 }, rb = { c, "nb", 2, 200 }, rr = { c, NULL, 0, 400 };
    pthread_t ta, tb, tr;
    pthread_create(&ta, NULL, race_assume, &ra);
    pthread_create(&tb, NULL, race_assume, &rb);
    pthread_create(&tr, NULL, race_read, &rr);
    for (int i = 0; i < 100; i++)
        cache_upsert_node(c, nc); /* writer */
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_join(tr, NULL);
    assert_int_equal(requested_cpu(c, "na"), 200);
    assert_int_equal(requested_cpu(c, "nb"), 200);
    cache_stats_t s;
    cache_get_stats(c, &s);
    assert_int_equal(s.assumed, 400);
    node_unref(na);
    node_unref(nb);
    node_unref(nc);
    cache_free(c);
}

/* cache_each_placed (for /debug/state): assumed pods with their node, then
 * nominations; bound and pending pods are not told. */
static void collect_placed(void *ud, const pod_t *p, const char *node, int nominated)
{
    char *buf = ud;
    size_t n = strlen(buf);
    snprintf(buf + n, 512 - n, "%s%s@%s;", nominated ? "nom:" : "", p->name, node);
}

static void test_each_placed(void **state)
{
    (void)state;
    cache_t *c = cache_new(partition, "a");
    node_t *n1 = mk_node("n1", "a"), *n2 = mk_node("n2", "a");
    cache_upsert_node(c, n1);
    cache_upsert_node(c, n2);
    pod_t *as = mk_pod("as", "", "1", "Pending"), *nom = mk_pod("nom", "", "1", "Pending");
    pod_t *bd = mk_pod("bd", "n2", "1", "Running"), *pe = mk_pod("pe", "", "1", "Pending");
    cache_pod_state_t now;
    cache_upsert_pod(c, as, &now);
    cache_upsert_pod(c, nom, &now);
    cache_upsert_pod(c, bd, &now);
    cache_upsert_pod(c, pe, &now);
    cache_wrlock(c);
    assert_int_equal(cache_assume_locked(c, as, "n1"), 0);
    cache_unlock(c);
    cache_nominate(c, nom, "n2");
    char buf[512] = "";
    cache_each_placed(c, collect_placed, buf);
    assert_string_equal(buf, "as@n1;nom:nom@n2;");
    pod_unref(as);
    pod_unref(nom);
    pod_unref(bd);
    pod_unref(pe);
    node_unref(n1);
    node_unref(n2);
    cache_free(c);
}

/* A pending pod (uid-name) whose status.nominatedNodeName is nom ("": none). */
static pod_t *mk_nominated(const char *name, const char *nom)
{
    char buf[1024], err[256];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"uid-%s\"},"
             "\"spec\":{\"schedulerName\":\"ai-scheduler\","
             "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},"
             "\"status\":{\"phase\":\"Pending\",\"nominatedNodeName\":\"%s\"}}",
             name, name, nom);
    json_t *j = json_loads(buf, 0, NULL);
    pod_t *p = pod_from_json(j, err, sizeof(err));
    json_decref(j);
    assert_non_null(p);
    return p;
}

/* Applies p (taken) as the informer would, the pod ours or not. */
static void upsert_as(cache_t *c, pod_t *p, int ours)
{
    cache_upsert_pod_ex(c, p, ours, NULL);
    pod_unref(p);
}

static const char *nominated_to(cache_t *c, const char *uid, char *buf, size_t len)
{
    return cache_nomination_of(c, uid, buf, len) ? buf : "-";
}

/* Issue 35, fault 3: a pending pod of ours that carries
 * status.nominatedNodeName holds that room in the cache as if this
 * scheduler had nominated it (a restart, a failover, a loaded copy); a
 * pod of another scheduler, a node unknown or gone, and a pod being
 * deleted hold none; the nomination follows later changes of the field,
 * but not a stale one (the field lags this scheduler's own nominations). */
static void test_nomination_follows_field(void **state)
{
    (void)state;
    cache_t *c = cache_new(partition, "a");
    node_t *n1 = mk_node("n1", "a"), *n2 = mk_node("n2", "a");
    cache_upsert_node(c, n1);
    cache_upsert_node(c, n2);
    char b[64];

    upsert_as(c, mk_nominated("p", "n1"), 1);
    assert_string_equal(nominated_to(c, "uid-p", b, sizeof b), "n1");
    cache_rdlock(c);
    pod_t *const *noms = NULL;
    assert_int_equal(cache_nominated_locked(c, "n1", &noms), 1);
    assert_string_equal(noms[0]->uid, "uid-p");
    cache_unlock(c);

    upsert_as(c, mk_nominated("foreign", "n1"), 0); /* not ours: not trusted */
    assert_string_equal(nominated_to(c, "uid-foreign", b, sizeof b), "-");
    upsert_as(c, mk_nominated("lost", "n9"), 1); /* no such node */
    assert_string_equal(nominated_to(c, "uid-lost", b, sizeof b), "-");

    /* This scheduler re-nominates p to n2; the watch then brings the older
     * writes: n1 cleared (n1 -> ""), then n2 set ("" -> n2). n2 stays. */
    pod_t *p = mk_nominated("p", "n1");
    cache_nominate(c, p, "n2");
    assert_string_equal(nominated_to(c, "uid-p", b, sizeof b), "n2");
    upsert_as(c, mk_nominated("p", ""), 1);
    assert_string_equal(nominated_to(c, "uid-p", b, sizeof b), "n2");
    upsert_as(c, mk_nominated("p", "n2"), 1);
    assert_string_equal(nominated_to(c, "uid-p", b, sizeof b), "n2");
    /* An update that leaves the field as it was keeps a drop made here. */
    cache_clear_nomination(c, "uid-p");
    upsert_as(c, mk_nominated("p", "n2"), 1);
    assert_string_equal(nominated_to(c, "uid-p", b, sizeof b), "-");
    /* Another instance moves it (n2 -> n1), then clears it. */
    cache_nominate(c, p, "n2");
    pod_unref(p);
    upsert_as(c, mk_nominated("p", "n1"), 1);
    assert_string_equal(nominated_to(c, "uid-p", b, sizeof b), "n1");
    upsert_as(c, mk_nominated("p", ""), 1);
    assert_string_equal(nominated_to(c, "uid-p", b, sizeof b), "-");

    /* The node goes: its nominations go with it. */
    upsert_as(c, mk_nominated("q", "n2"), 1);
    assert_string_equal(nominated_to(c, "uid-q", b, sizeof b), "n2");
    cache_delete_node(c, "n2");
    assert_string_equal(nominated_to(c, "uid-q", b, sizeof b), "-");
    cache_stats_t st;
    cache_get_stats(c, &st);
    assert_int_equal(st.nominated, 0);

    /* A pod that ends holds nothing. */
    upsert_as(c, mk_nominated("r", "n1"), 1);
    assert_string_equal(nominated_to(c, "uid-r", b, sizeof b), "n1");
    upsert_as(c, mk_pod("r", "", "1", "Failed"), 1);
    assert_string_equal(nominated_to(c, "uid-r", b, sizeof b), "-");
    node_unref(n1);
    node_unref(n2);
    cache_free(c);
}

/* The nomination hook, as the tenants row (fairshare/row.c) uses it: "+uid@pool" for a
 * nomination taken from the field, "-uid" for one that went while its pod
 * holds no node. */
static void record_nomination(void *ud, const pod_t *p, const node_info_t *ni, int sign)
{
    char *log = ud;
    size_t n = strlen(log);
    if (sign > 0)
        snprintf(log + n, 256 - n, "+%s@%d ", p->uid, ni ? ni->pool : -1);
    else
        snprintf(log + n, 256 - n, "-%s ", p->uid);
}

/* Issue 35, fault 3's remainder: the queue charge of a restored nomination
 * is made with it and goes with it (its field cleared, its node deleted,
 * the pod ended or deleted), but not when this scheduler re-nominates the
 * pod (the live preemption charges that) nor when it binds (the bind's
 * accounting replaces it). */
static void test_nomination_hook(void **state)
{
    (void)state;
    cache_t *c = cache_new(partition, "a");
    char log[256] = "";
    cache_set_nomination_hook(c, record_nomination, log);
    node_t *n1 = mk_node("n1", "a"), *n2 = mk_node("n2", "a");
    cache_upsert_node(c, n1);
    cache_upsert_node(c, n2);

    upsert_as(c, mk_nominated("p", "n1"), 1);
    assert_string_equal(log, "+uid-p@1 ");
    pod_t *p = mk_nominated("p", "n1");
    cache_nominate(c, p, "n2"); /* replaced: the preemption charges it */
    pod_unref(p);
    assert_string_equal(log, "+uid-p@1 ");
    upsert_as(c, mk_pod("p", "n2", "1", "Running"), 1); /* bound: accounted */
    assert_string_equal(log, "+uid-p@1 ");

    log[0] = 0;
    upsert_as(c, mk_nominated("q", "n1"), 1);
    upsert_as(c, mk_nominated("q", ""), 1); /* cleared */
    upsert_as(c, mk_nominated("r", "n2"), 1);
    cache_delete_node(c, "n2");
    upsert_as(c, mk_nominated("t", "n1"), 1);
    upsert_as(c, mk_pod("t", "", "1", "Failed"), 1);
    upsert_as(c, mk_nominated("u", "n1"), 1);
    cache_delete_pod(c, "uid-u", NULL, NULL);
    assert_string_equal(log, "+uid-q@1 -uid-q +uid-r@1 -uid-r +uid-t@1 -uid-t +uid-u@1 -uid-u ");
    node_unref(n1);
    node_unref(n2);
    cache_free(c);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assume_confirm_forget),
        cmocka_unit_test(test_pod_before_node_and_node_delete),
        cmocka_unit_test(test_repartition_and_nominations),
        cmocka_unit_test(test_repartition_recharges),
        cmocka_unit_test(test_nominated_reserve_delete_gap),
        cmocka_unit_test(test_nominate_gone_pod_ignored),
        cmocka_unit_test(test_concurrent_assume_rules),
        cmocka_unit_test(test_concurrent_assume_race),
        cmocka_unit_test(test_each_placed),
        cmocka_unit_test(test_nomination_follows_field),
        cmocka_unit_test(test_nomination_hook),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
