/* test_preemption.c -- PDB parsing, minimal victim sets on synthetic nodes,
 * and each node-choice tie-break. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "preemption/preemption.h"
#include "framework/nodeinfo.h"
#include "scheduler/capabilities.h"

static json_t *parse(const char *s)
{
    json_error_t je;
    json_t *j = json_loads(s, 0, &je);
    if (!j)
        fail_msg("bad test json: %s: %s", je.text, s);
    return j;
}

static node_t *mknode(const char *name, const char *cpu)
{
    char buf[512], err[256];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\","
             "\"labels\":{\"kubernetes.io/hostname\":\"%s\"}},"
             "\"status\":{\"capacity\":{\"cpu\":\"%s\",\"memory\":\"64Gi\",\"pods\":\"110\"},"
             "\"allocatable\":{\"cpu\":\"%s\",\"memory\":\"64Gi\",\"pods\":\"110\"}}}",
             name, name, name, cpu, cpu);
    json_t *j = parse(buf);
    node_t *n = node_from_json(j, err, sizeof(err));
    json_decref(j);
    if (!n)
        fail_msg("node_from_json: %s", err);
    return n;
}

/* A running pod on node (or pending when node is NULL). start is the
 * startTime second (0..59). borrowed marks a borrower; extra goes in spec. */
static pod_t *mkpod_x(const char *name, const char *node, int prio, const char *cpu, int start, const char *labels,
                      int borrowed, const char *extra_spec)
{
    char buf[2048], err[256];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
             "\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns1\",\"uid\":\"uid-%s\","
             "\"creationTimestamp\":\"2024-01-01T00:00:00Z\",\"labels\":{%s},\"annotations\":{%s}},"
             "\"spec\":{\"priority\":%d,\"schedulerName\":\"ai-scheduler\"%s%s%s%s,"
             "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]},"
             "\"status\":{\"phase\":\"%s\",\"startTime\":\"2024-01-01T00:10:%02dZ\"}}",
             name, name, labels ? labels : "", borrowed ? "\"" BORROWED_ANNOTATION "\":\"other\"" : "", prio,
             node ? ",\"nodeName\":\"" : "", node ? node : "", node ? "\"" : "", extra_spec ? extra_spec : "", cpu,
             node ? "Running" : "Pending", start);
    json_t *j = parse(buf);
    pod_t *p = pod_from_json(j, err, sizeof(err));
    json_decref(j);
    if (!p)
        fail_msg("pod_from_json: %s", err);
    return p;
}

static pod_t *mkpod(const char *name, const char *node, int prio, const char *cpu, int start)
{
    return mkpod_x(name, node, prio, cpu, start, NULL, 0, NULL);
}

/* Places a pod on ni, dropping the test's reference. */
static void place(node_info_t *ni, pod_t *p)
{
    node_info_add_pod(ni, p);
    pod_unref(p);
}

static node_info_t *mkni(const char *name, const char *cpu)
{
    node_info_t *ni = node_info_new(name);
    node_t *n = mknode(name, cpu);
    node_info_set_node(ni, n);
    node_unref(n);
    return ni;
}

#define BORROWER_SHIFT ((int64_t)1 << 33)

/* The scheduler's rule: borrowers rank below every home pod; anything
 * ranked below the preemptor may go. */
static int victim_rule(const pod_t *v, const pod_t *preemptor, void *ud, int64_t *rank)
{
    int *calls = ud;
    if (calls)
        (*calls)++;
    int64_t r = v->priority;
    if (v->borrowed_from && *v->borrowed_from)
        r -= BORROWER_SHIFT;
    if (r >= preemptor->priority)
        return 0;
    *rank = r;
    return 1;
}

struct fx {
    framework_t *fw;
};

static int setup(void **st)
{
    fw_config_t c;
    fw_config_default(&c);
    struct fx *f = calloc(1, sizeof(*f));
    f->fw = framework_new(&c);
    *st = f;
    return f->fw ? 0 : -1;
}

static int teardown(void **st)
{
    struct fx *f = *st;
    framework_free(f->fw);
    free(f);
    return 0;
}

static int has_victim(const preempt_candidate_t *c, const char *name)
{
    for (int i = 0; i < c->nvictims; i++)
        if (!strcmp(c->victims[i]->name, name))
            return 1;
    return 0;
}

/* ------------------------------------------------------------------ PDB */

static pdb_t *pdb_parse(const char *s, char *err, size_t n)
{
    json_t *j = parse(s);
    pdb_t *p = pdb_from_json(j, err, n);
    json_decref(j);
    return p;
}

static pdb_t *mkpdb(const char *app, int allowed)
{
    char buf[512], err[256];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\","
             "\"metadata\":{\"name\":\"pdb-%s\",\"namespace\":\"ns1\"},"
             "\"spec\":{\"minAvailable\":1,\"selector\":{\"matchLabels\":{\"app\":\"%s\"}}},"
             "\"status\":{\"disruptionsAllowed\":%d}}",
             app, app, allowed);
    pdb_t *p = pdb_parse(buf, err, sizeof(err));
    if (!p)
        fail_msg("pdb_from_json: %s", err);
    return p;
}

static void test_pdb_parse_v1(void **st)
{
    pdb_t *p = mkpdb("db", 2);
    assert_string_equal(p->ns, "ns1");
    assert_string_equal(p->name, "pdb-db");
    assert_int_equal(p->disruptions_allowed, 2);
    pod_t *db = mkpod_x("x", NULL, 0, "1", 0, "\"app\":\"db\"", 0, NULL);
    pod_t *web = mkpod_x("y", NULL, 0, "1", 0, "\"app\":\"web\"", 0, NULL);
    assert_true(selector_matches(&p->selector, &db->labels, db->name));
    assert_false(selector_matches(&p->selector, &web->labels, web->name));
    pod_unref(db);
    pod_unref(web);
    pdb_free(p);
}

static void test_pdb_parse_v1beta1_expressions(void **st)
{
    char err[256] = "";
    pdb_t *p = pdb_parse("{\"apiVersion\":\"policy/v1beta1\",\"kind\":\"PodDisruptionBudget\","
                         "\"metadata\":{\"name\":\"b\",\"namespace\":\"team\"},"
                         "\"spec\":{\"selector\":{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\","
                         "\"values\":[\"a\",\"b\"]}]}}}",
                         err, sizeof(err));
    assert_non_null(p);
    assert_string_equal(p->ns, "team");
    assert_int_equal(p->disruptions_allowed, 0); /* no status yet */
    pod_t *a = mkpod_x("x", NULL, 0, "1", 0, "\"tier\":\"b\"", 0, NULL);
    pod_t *c = mkpod_x("y", NULL, 0, "1", 0, "\"tier\":\"c\"", 0, NULL);
    assert_true(selector_matches(&p->selector, &a->labels, a->name));
    assert_false(selector_matches(&p->selector, &c->labels, c->name));
    pod_unref(a);
    pod_unref(c);
    pdb_free(p);
}

static void test_pdb_empty_selector_matches_nothing(void **st)
{
    char err[256];
    pod_t *a = mkpod_x("x", NULL, 0, "1", 0, "\"app\":\"db\"", 0, NULL);
    const char *docs[] = {
        "{\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":\"e\",\"namespace\":\"ns1\"},"
        "\"spec\":{\"selector\":{}},\"status\":{\"disruptionsAllowed\":0}}",
        "{\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":\"e\",\"namespace\":\"ns1\"},"
        "\"spec\":{},\"status\":{\"disruptionsAllowed\":0}}",
    };
    for (size_t i = 0; i < 2; i++) {
        pdb_t *p = pdb_parse(docs[i], err, sizeof(err));
        assert_non_null(p);
        assert_false(selector_matches(&p->selector, &a->labels, a->name));
        pdb_free(p);
    }
    pod_unref(a);
}

static void test_pdb_bad_input(void **st)
{
    char err[256];
    const char *bad[] = {
        "[]",
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\",\"namespace\":\"n\"}}",
        "{\"apiVersion\":\"policy/v2\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":\"x\"}}",
        "{\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"namespace\":\"n\"}}",
        "{\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":\"x\"},\"spec\":{\"selector\":\"app=x\"}}",
        "{\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":\"x\"},\"spec\":{\"selector\":"
        "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}}}",
        "{\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":\"x\"},\"spec\":7}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        err[0] = 0;
        json_t *j = parse(bad[i]);
        assert_null(pdb_from_json(j, err, sizeof(err)));
        assert_true(err[0] != 0);
        json_decref(j);
    }
    assert_null(pdb_from_json(NULL, err, sizeof(err)));
}

/* --------------------------------------------------------- victim sets */

static void test_minimal_victim_set(void **st)
{
    struct fx *f = *st;
    node_info_t *ni = mkni("n1", "4");
    place(ni, mkpod("p1", "n1", 1, "1", 1));
    place(ni, mkpod("p2", "n1", 2, "1", 2));
    place(ni, mkpod("p3", "n1", 3, "1", 3));
    place(ni, mkpod("p4", "n1", 4, "1", 4));
    pod_t *pre = mkpod("pre", NULL, 10, "2", 0);
    int calls = 0;
    preempt_candidate_t c;
    assert_int_equal(preempt_select_on_node(f->fw, pre, ni, victim_rule, &calls, NULL, 0, &c), 1);
    assert_int_equal(calls, 4);
    assert_string_equal(c.node, "n1");
    assert_int_equal(c.nvictims, 2);
    assert_true(has_victim(&c, "p1"));
    assert_true(has_victim(&c, "p2"));
    assert_int_equal(c.pdb_violations, 0);
    assert_int_equal(c.max_rank, 2);
    /* The input node is untouched: preemption is simulation only. */
    assert_int_equal(ni->npods, 4);
    assert_int_equal(ni->requested.milli_cpu, 4000);
    preempt_candidate_t c3;
    pod_t *pre3 = mkpod("pre3", NULL, 10, "3", 0);
    assert_int_equal(preempt_select_on_node(f->fw, pre3, ni, victim_rule, NULL, NULL, 0, &c3), 1);
    assert_int_equal(c3.nvictims, 3);
    assert_false(has_victim(&c3, "p4"));
    assert_int_equal(c3.max_rank, 3);
    assert_true(c3.rank_sum > c.rank_sum);
    preempt_candidate_clear(&c3);
    preempt_candidate_clear(&c);
    assert_null(c.node);
    assert_int_equal(c.nvictims, 0);
    pod_unref(pre3);
    pod_unref(pre);
    node_info_free(ni);
}

static void test_fits_without_victims(void **st)
{
    struct fx *f = *st;
    node_info_t *ni = mkni("n1", "4");
    place(ni, mkpod("p1", "n1", 1, "1", 1));
    pod_t *pre = mkpod("pre", NULL, 10, "1", 0);
    preempt_candidate_t c;
    assert_int_equal(preempt_select_on_node(f->fw, pre, ni, victim_rule, NULL, NULL, 0, &c), 1);
    assert_int_equal(c.nvictims, 0);
    preempt_candidate_clear(&c);
    pod_unref(pre);
    node_info_free(ni);
}

static void test_does_not_fit(void **st)
{
    struct fx *f = *st;
    node_info_t *ni = mkni("n1", "4");
    place(ni, mkpod("low", "n1", 1, "1", 1));
    place(ni, mkpod("high1", "n1", 50, "1", 2));
    place(ni, mkpod("high2", "n1", 50, "1", 3));
    preempt_candidate_t c;

    /* Bigger than the node. */
    pod_t *huge = mkpod("huge", NULL, 10, "8", 0);
    assert_int_equal(preempt_select_on_node(f->fw, huge, ni, victim_rule, NULL, NULL, 0, &c), 0);
    assert_null(c.node);
    assert_int_equal(c.nvictims, 0);
    pod_unref(huge);

    /* Fits only if higher-priority pods went too. */
    pod_t *three = mkpod("three", NULL, 10, "3", 0);
    assert_int_equal(preempt_select_on_node(f->fw, three, ni, victim_rule, NULL, NULL, 0, &c), 0);
    pod_unref(three);

    /* Evicting cannot fix a node selector. */
    pod_t *sel = mkpod_x("sel", NULL, 10, "1", 0, NULL, 0, ",\"nodeSelector\":{\"gpu\":\"yes\"}");
    assert_int_equal(preempt_select_on_node(f->fw, sel, ni, victim_rule, NULL, NULL, 0, &c), 0);
    pod_unref(sel);
    node_info_free(ni);
}

static void test_borrowers_go_first(void **st)
{
    struct fx *f = *st;
    node_info_t *ni = mkni("n1", "4");
    place(ni, mkpod_x("borrower", "n1", 100, "2", 1, NULL, 1, NULL));
    place(ni, mkpod("home", "n1", 0, "2", 2));
    pod_t *pre = mkpod("pre", NULL, 10, "2", 0);
    preempt_candidate_t c;
    assert_int_equal(preempt_select_on_node(f->fw, pre, ni, victim_rule, NULL, NULL, 0, &c), 1);
    assert_int_equal(c.nvictims, 1);
    assert_true(has_victim(&c, "borrower"));
    assert_int_equal(c.max_rank, 100 - BORROWER_SHIFT);
    preempt_candidate_clear(&c);
    pod_unref(pre);
    node_info_free(ni);
}

/* Equal rank: without PDBs the earlier-started pod is reprieved first; a
 * PDB with no disruptions left flips that. */
static void test_pdb_protected_reprieved(void **st)
{
    struct fx *f = *st;
    node_info_t *ni = mkni("n1", "4");
    place(ni, mkpod_x("db", "n1", 1, "1", 30, "\"app\":\"db\"", 0, NULL));
    place(ni, mkpod_x("batch", "n1", 1, "1", 10, "\"app\":\"batch\"", 0, NULL));
    place(ni, mkpod("mid1", "n1", 5, "1", 1));
    place(ni, mkpod("mid2", "n1", 5, "1", 2));
    pod_t *pre = mkpod("pre", NULL, 10, "1", 0);
    preempt_candidate_t c;

    assert_int_equal(preempt_select_on_node(f->fw, pre, ni, victim_rule, NULL, NULL, 0, &c), 1);
    assert_int_equal(c.nvictims, 1);
    assert_true(has_victim(&c, "db"));
    preempt_candidate_clear(&c);

    pdb_t *pdbs[2] = { mkpdb("db", 0), mkpdb("batch", 5) };
    assert_int_equal(preempt_select_on_node(f->fw, pre, ni, victim_rule, NULL, pdbs, 2, &c), 1);
    assert_int_equal(c.nvictims, 1);
    assert_true(has_victim(&c, "batch"));
    assert_int_equal(c.pdb_violations, 0);
    preempt_candidate_clear(&c);

    /* Needs the whole node: the protected pod must go, one violation. */
    pod_t *all = mkpod("all", NULL, 10, "4", 0);
    assert_int_equal(preempt_select_on_node(f->fw, all, ni, victim_rule, NULL, pdbs, 2, &c), 1);
    assert_int_equal(c.nvictims, 4);
    assert_int_equal(c.pdb_violations, 1);
    preempt_candidate_clear(&c);

    /* A PDB in another namespace protects nothing here. */
    pdb_t *elsewhere = mkpdb("db", 0);
    free(elsewhere->ns);
    elsewhere->ns = strdup("other");
    assert_int_equal(preempt_select_on_node(f->fw, all, ni, victim_rule, NULL, &elsewhere, 1, &c), 1);
    assert_int_equal(c.pdb_violations, 0);
    preempt_candidate_clear(&c);
    pdb_free(elsewhere);

    pod_unref(all);
    pdb_free(pdbs[0]);
    pdb_free(pdbs[1]);
    pod_unref(pre);
    node_info_free(ni);
}

/* disruptionsAllowed counts victims: with 1 allowed and two selected pods
 * evicted, exactly one is a violation. */
static void test_pdb_budget_counts(void **st)
{
    struct fx *f = *st;
    node_info_t *ni = mkni("n1", "2");
    place(ni, mkpod_x("w1", "n1", 1, "1", 1, "\"app\":\"web\"", 0, NULL));
    place(ni, mkpod_x("w2", "n1", 1, "1", 2, "\"app\":\"web\"", 0, NULL));
    pod_t *pre = mkpod("pre", NULL, 10, "2", 0);
    pdb_t *p1 = mkpdb("web", 1);
    preempt_candidate_t c;
    assert_int_equal(preempt_select_on_node(f->fw, pre, ni, victim_rule, NULL, &p1, 1, &c), 1);
    assert_int_equal(c.nvictims, 2);
    assert_int_equal(c.pdb_violations, 1);
    preempt_candidate_clear(&c);
    pdb_free(p1);
    pod_unref(pre);
    node_info_free(ni);
}

/* Two nodes through select and pick: the one with the cheaper victims. */
static void test_select_then_pick(void **st)
{
    struct fx *f = *st;
    node_info_t *a = mkni("a", "2"), *b = mkni("b", "2");
    place(a, mkpod("a-home", "a", 5, "2", 1));
    place(b, mkpod_x("b-borrow", "b", 500, "2", 1, NULL, 1, NULL));
    pod_t *pre = mkpod("pre", NULL, 10, "1", 0);
    preempt_candidate_t c[2];
    assert_int_equal(preempt_select_on_node(f->fw, pre, a, victim_rule, NULL, NULL, 0, &c[0]), 1);
    assert_int_equal(preempt_select_on_node(f->fw, pre, b, victim_rule, NULL, NULL, 0, &c[1]), 1);
    assert_int_equal(preempt_pick(c, 2), 1);
    preempt_candidate_clear(&c[0]);
    preempt_candidate_clear(&c[1]);
    pod_unref(pre);
    node_info_free(a);
    node_info_free(b);
}

/* ------------------------------------------------------------ node choice */

static preempt_candidate_t cand(int viol, int64_t max, int64_t sum, int n, int64_t start)
{
    preempt_candidate_t c = {
        .pdb_violations = viol, .max_rank = max, .rank_sum = sum, .nvictims = n, .latest_start_ms = start
    };
    return c;
}

static void test_pick_rules(void **st)
{
    assert_int_equal(preempt_pick(NULL, 0), -1);

    preempt_candidate_t one[] = { cand(3, 9, 9, 9, 0) };
    assert_int_equal(preempt_pick(one, 1), 0);

    /* Fewest PDB violations beats everything else. */
    preempt_candidate_t v[] = { cand(2, 1, 1, 1, 100), cand(1, 50, 500, 5, 0), cand(3, 0, 0, 1, 900) };
    assert_int_equal(preempt_pick(v, 3), 1);

    /* Then the lowest highest rank. */
    preempt_candidate_t m[] = { cand(0, 10, 10, 1, 100), cand(0, 5, 50, 9, 0), cand(0, 7, 1, 1, 900) };
    assert_int_equal(preempt_pick(m, 3), 1);

    /* Then the smallest rank sum. */
    preempt_candidate_t s[] = { cand(0, 5, 30, 1, 100), cand(0, 5, 20, 4, 0), cand(0, 5, 25, 1, 900) };
    assert_int_equal(preempt_pick(s, 3), 1);

    /* Then the fewest victims. */
    preempt_candidate_t n[] = { cand(0, 5, 20, 3, 900), cand(0, 5, 20, 2, 0), cand(0, 5, 20, 4, 500) };
    assert_int_equal(preempt_pick(n, 3), 1);

    /* Then the most recently started victims. */
    preempt_candidate_t t[] = { cand(0, 5, 20, 2, 100), cand(0, 5, 20, 2, 300), cand(0, 5, 20, 2, 200) };
    assert_int_equal(preempt_pick(t, 3), 1);

    /* Full tie: the first. */
    preempt_candidate_t e[] = { cand(1, 5, 20, 2, 7), cand(1, 5, 20, 2, 7), cand(1, 5, 20, 2, 7) };
    assert_int_equal(preempt_pick(e, 3), 0);

    /* A node that needs no eviction wins outright. */
    preempt_candidate_t z[] = { cand(0, -100, 1, 1, 0), cand(0, INT64_MIN, 0, 0, 0) };
    assert_int_equal(preempt_pick(z, 2), 1);

    /* Negative ranks (borrowers) compare below home ranks. */
    preempt_candidate_t b[] = { cand(0, 0, 10, 1, 0), cand(0, -BORROWER_SHIFT, 10, 1, 0) };
    assert_int_equal(preempt_pick(b, 2), 1);
}

/* Among otherwise equal candidates, victims that checkpointed most
 * recently go first (they lose the least work), before the start time;
 * the value is the oldest save among a candidate's victims. */
static void test_pick_prefers_checkpointed(void **st)
{
    (void)st;
    preempt_candidate_t c[] = { cand(0, 5, 20, 2, 900), cand(0, 5, 20, 2, 100), cand(0, 5, 20, 2, 500) };
    c[0].checkpointed_ms = 0; /* a victim never saved */
    c[1].checkpointed_ms = 2000;
    c[2].checkpointed_ms = 1000;
    assert_int_equal(preempt_pick(c, 3), 1);
    /* Not above the earlier rules: fewer victims still wins. */
    preempt_candidate_t d[] = { cand(0, 5, 20, 2, 0), cand(0, 5, 20, 1, 0) };
    d[0].checkpointed_ms = 5000;
    assert_int_equal(preempt_pick(d, 2), 1);
    /* Equal saves: the start-time tie-break as before. */
    preempt_candidate_t e[] = { cand(0, 5, 20, 2, 100), cand(0, 5, 20, 2, 300) };
    e[0].checkpointed_ms = e[1].checkpointed_ms = 7000;
    assert_int_equal(preempt_pick(e, 2), 1);
}

/* The selection fills checkpointed_ms: the oldest save of the victims. */
static void test_select_checkpointed_min(void **st)
{
    struct fx *f = *st;
    node_info_t *a = mkni("a", "2"), *b = mkni("b", "2");
    pod_t *a1 = mkpod_x("a1", "a", 0, "1", 1, NULL, 1, NULL), *a2 = mkpod_x("a2", "a", 0, "1", 1, NULL, 1, NULL);
    pod_t *b1 = mkpod_x("b1", "b", 0, "1", 1, NULL, 1, NULL), *b2 = mkpod_x("b2", "b", 0, "1", 1, NULL, 1, NULL);
    a1->checkpointed_at_ms = 3000;
    a2->checkpointed_at_ms = 4000;
    b1->checkpointed_at_ms = 9000; /* b2 never saved */
    place(a, a1);
    place(a, a2);
    place(b, b1);
    place(b, b2);
    pod_t *pre = mkpod("pre", NULL, 10, "2", 0);
    preempt_candidate_t c[2];
    assert_int_equal(preempt_select_on_node(f->fw, pre, a, victim_rule, NULL, NULL, 0, &c[0]), 1);
    assert_int_equal(preempt_select_on_node(f->fw, pre, b, victim_rule, NULL, NULL, 0, &c[1]), 1);
    assert_int_equal(c[0].checkpointed_ms, 3000);
    assert_int_equal(c[1].checkpointed_ms, 0);
    assert_int_equal(preempt_pick(c, 2), 0);
    preempt_candidate_clear(&c[0]);
    preempt_candidate_clear(&c[1]);
    pod_unref(pre);
    node_info_free(a);
    node_info_free(b);
}

/* One more borrower victim must not look cheaper through a lower sum. */
static void test_rank_sum_counts_victims(void **st)
{
    struct fx *f = *st;
    node_info_t *a = mkni("a", "2"), *b = mkni("b", "2");
    place(a, mkpod_x("a1", "a", 0, "2", 1, NULL, 1, NULL));
    place(b, mkpod_x("b1", "b", 0, "1", 1, NULL, 1, NULL));
    place(b, mkpod_x("b2", "b", 0, "1", 1, NULL, 1, NULL));
    pod_t *pre = mkpod("pre", NULL, 10, "2", 0);
    preempt_candidate_t c[2];
    assert_int_equal(preempt_select_on_node(f->fw, pre, a, victim_rule, NULL, NULL, 0, &c[0]), 1);
    assert_int_equal(preempt_select_on_node(f->fw, pre, b, victim_rule, NULL, NULL, 0, &c[1]), 1);
    assert_int_equal(c[0].nvictims, 1);
    assert_int_equal(c[1].nvictims, 2);
    assert_int_equal(c[0].max_rank, c[1].max_rank);
    assert_true(c[0].rank_sum < c[1].rank_sum);
    assert_int_equal(preempt_pick(c, 2), 0);
    assert_int_equal(c[0].latest_start_ms, c[0].victims[0]->started_ms);
    preempt_candidate_clear(&c[0]);
    preempt_candidate_clear(&c[1]);
    pod_unref(pre);
    node_info_free(a);
    node_info_free(b);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pdb_parse_v1),
        cmocka_unit_test(test_pdb_parse_v1beta1_expressions),
        cmocka_unit_test(test_pdb_empty_selector_matches_nothing),
        cmocka_unit_test(test_pdb_bad_input),
        cmocka_unit_test_setup_teardown(test_minimal_victim_set, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fits_without_victims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_does_not_fit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_borrowers_go_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pdb_protected_reprieved, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pdb_budget_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_select_then_pick, setup, teardown),
        cmocka_unit_test(test_pick_rules),
        cmocka_unit_test_setup_teardown(test_rank_sum_counts_victims, setup, teardown),
        cmocka_unit_test(test_pick_prefers_checkpointed),
        cmocka_unit_test_setup_teardown(test_select_checkpointed_min, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
