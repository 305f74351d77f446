/* test_dispatch.c -- MultiClusterJob pieces without a cluster: template
 * specialisation (dispatch/template.h), the first-available decision with
 * priorities (dispatch/decide.h) against the rule's exact answers, and the
 * `mcjob get` table (dispatch/table.h, cmd/ai-scheduler/mcjob.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dispatch/decide.h"
#include "ai-scheduler/mcjob.h"
#include "dispatch/template.h"

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v)
        fail_msg("bad JSON in test: %s: %s", text, e.text);
    return v;
}

static void assert_json(json_t *got, const char *want)
{
    json_t *w = js(want);
    if (!json_equal(got, w)) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        fail_msg("got %s, want %s", g, want);
    }
    json_decref(w);
}

static const char *PARAMS = "{\"gpus\": {\"a\": 8, \"b\": 2}, \"stores\": {\"a\": [\"s1\", \"s2\"], \"b\": [\"s3\"]},"
                            " \"tag\": {\"a\": \"big\", \"b\": \"small\"}, \"only_a\": {\"a\": true}}";

static void test_substitute_keeps_type(void **state)
{
    (void)state;
    json_t *p = js(PARAMS);
    char err[200];
    json_t *v = js("{\"n\": \"<% $mcc.gpus %>\", \"l\": \" <%$mcc.stores%> \", \"t\": \"run-<% $mcc.tag %>-<% "
                   "$mcc.gpus %>\", \"j\": \"x=<% $mcc.stores %>\", \"other\": \"<% not ours %>\", \"k\": 7}");
    json_t *a = dsp_substitute(v, p, "a", err, sizeof err);
    assert_non_null(a);
    assert_json(a, "{\"n\": 8, \"l\": [\"s1\", \"s2\"], \"t\": \"run-big-8\", \"j\": \"x=[\\\"s1\\\",\\\"s2\\\"]\","
                   " \"other\": \"<% not ours %>\", \"k\": 7}");
    json_t *b = dsp_substitute(v, p, "b", err, sizeof err);
    assert_json(b, "{\"n\": 2, \"l\": [\"s3\"], \"t\": \"run-small-2\", \"j\": \"x=[\\\"s3\\\"]\","
                   " \"other\": \"<% not ours %>\", \"k\": 7}");
    json_decref(a);
    json_decref(b);
    json_decref(v);
    json_decref(p);
}

static void test_substitute_errors(void **state)
{
    (void)state;
    json_t *p = js(PARAMS);
    char err[200];
    json_t *v = js("[\"<% $mcc.nope %>\"]");
    assert_null(dsp_substitute(v, p, "a", err, sizeof err));
    assert_string_equal(err, "unknown param \"nope\"");
    json_decref(v);
    v = js("{\"x\": \"<% $mcc.only_a %>\"}");
    assert_null(dsp_substitute(v, p, "b", err, sizeof err));
    assert_string_equal(err, "param \"only_a\" has no value for cluster \"b\"");
    json_decref(v);
    v = js("\"a <% $mcc.tag\"");
    assert_null(dsp_substitute(v, p, "a", err, sizeof err));
    assert_non_null(strstr(err, "unterminated"));
    json_decref(v);
    /* refs: each name once, in order */
    json_t *names = json_array();
    v = js("[\"<% $mcc.tag %>\", {\"q\": \"<% $mcc.gpus %>/<% $mcc.tag %>\"}]");
    dsp_param_refs(v, names);
    assert_json(names, "[\"tag\", \"gpus\"]");
    json_decref(names);
    json_decref(v);
    json_decref(p);
}

static void test_specialise(void **state)
{
    (void)state;
    json_t *p = js(PARAMS);
    json_t *t =
        js("[{\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", \"kind\": \"PodGroup\","
           "  \"metadata\": {\"name\": \"pg\", \"uid\": \"stale\", \"resourceVersion\": \"9\"},"
           "  \"spec\": {\"minMember\": \"<% $mcc.gpus %>\"}, \"status\": {\"phase\": \"Running\"}},"
           " {\"apiVersion\": \"batch/v1\", \"kind\": \"Job\","
           "  \"metadata\": {\"namespace\": \"elsewhere\", \"labels\": {\"app\": \"x\"}},"
           "  \"spec\": {\"template\": {\"metadata\": {\"labels\": {\"scheduling.x-k8s.io/pod-group\": \"pg\"}},"
           "    \"spec\": {\"containers\": []}}}}]");
    char err[200];
    json_t *o = dsp_specialise(t, p, "a", "team", "train", "u-1", err, sizeof err);
    assert_non_null(o);
    assert_json(
        o, "[{\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", \"kind\": \"PodGroup\","
           "  \"metadata\": {\"name\": \"pg-a\", \"namespace\": \"team\", \"labels\": {"
           "   \"resource.aibee.cn/multiclusterjob-uid\": \"u-1\", \"resource.aibee.cn/multicluster-cluster\": \"a\","
           "   \"resource.aibee.cn/multiclusterjob\": \"train\"}},"
           "  \"spec\": {\"minMember\": 8}},"
           " {\"apiVersion\": \"batch/v1\", \"kind\": \"Job\","
           "  \"metadata\": {\"name\": \"train-a\", \"namespace\": \"team\", \"labels\": {\"app\": \"x\","
           "   \"resource.aibee.cn/multiclusterjob-uid\": \"u-1\", \"resource.aibee.cn/multicluster-cluster\": \"a\","
           "   \"resource.aibee.cn/multiclusterjob\": \"train\"}},"
           "  \"spec\": {\"template\": {\"metadata\": {\"labels\": {\"scheduling.x-k8s.io/pod-group\": \"pg-a\","
           "   \"resource.aibee.cn/multiclusterjob-uid\": \"u-1\", \"resource.aibee.cn/multicluster-cluster\": \"a\","
           "   \"resource.aibee.cn/multiclusterjob\": \"train\"}},"
           "    \"spec\": {\"containers\": []}}}}]");
    json_decref(o);
    json_decref(t);

    /* two objects of one name, a non-object, too long a name */
    t = js("[{\"apiVersion\": \"v1\", \"kind\": \"Pod\"}, {\"apiVersion\": \"v1\", \"kind\": \"Pod\"}]");
    assert_null(dsp_specialise(t, p, "a", "ns", "j", "u", err, sizeof err));
    assert_string_equal(err, "template has two objects named \"j\"");
    json_decref(t);
    t = js("[42]");
    assert_null(dsp_specialise(t, p, "a", "ns", "j", "u", err, sizeof err));
    assert_string_equal(err, "template[0] is not an object");
    json_decref(t);
    char longname[260];
    memset(longname, 'x', 252);
    longname[252] = '\0';
    char buf[400];
    snprintf(buf, sizeof buf, "[{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"%s\"}}]",
             longname);
    t = js(buf);
    assert_null(dsp_specialise(t, p, "a", "ns", "j", "u", err, sizeof err));
    assert_non_null(strstr(err, "253"));
    json_decref(t);
    t = js("[]");
    assert_null(dsp_specialise(t, p, "a", "ns", "j", "u", err, sizeof err));
    json_decref(t);
    json_decref(p);
}

/* ---- decide ------------------------------------------------------------ */

#define G 10.0 /* guard */
#define S 1.0  /* time scale */

static dsp_member_t M(int prio, double running_since)
{
    dsp_member_t m = { prio, 1, running_since };
    return m;
}

static void test_decide_nothing_yet(void **state)
{
    (void)state;
    dsp_member_t m[2] = { M(80, -1), M(20, 100) };
    int c[2];
    dsp_decision_t d;
    dsp_decide(m, 2, -1, 0, G, S, 105, c, &d);
    assert_int_equal(d.winner, -1);
    assert_true(d.next_wake == 110); /* b's guard time ends */
    assert_int_equal(c[0] + c[1], 0);
    m[1].running_since = -1;
    dsp_decide(m, 2, -1, 0, G, S, 105, c, &d);
    assert_true(d.next_wake < 0);
}

/* Only the low one runs: it wins at rs + guard; the high one keeps
 * (80 - 20) * S = 60 s, then is cancelled. */
static void test_decide_low_wins_high_window(void **state)
{
    (void)state;
    dsp_member_t m[3] = { M(80, -1), M(20, 100), M(10, -1) };
    int c[3];
    dsp_decision_t d;
    dsp_decide(m, 3, -1, 0, G, S, 111, c, &d);
    assert_int_equal(d.winner, 1);
    assert_true(d.decided_at == 110);
    assert_int_equal(c[0], 0);
    assert_int_equal(c[2], 1); /* lower priority: at once */
    assert_int_equal(d.final, 0);
    assert_true(d.next_wake == 170);
    m[2].in_race = 0; /* cancelled by the caller */
    dsp_decide(m, 3, 1, 110, G, S, 169.9, c, &d);
    assert_int_equal(c[0], 0);
    dsp_decide(m, 3, 1, 110, G, S, 170, c, &d);
    assert_int_equal(d.winner, 1);
    assert_int_equal(c[0], 1);
    assert_int_equal(d.final, 1);
}

/* The high one starts running inside its window and wins its own guard
 * time by the window's end: it takes over at its win time. */
static void test_decide_high_takes_over(void **state)
{
    (void)state;
    dsp_member_t m[2] = { M(80, 150), M(20, 100) };
    int c[2];
    dsp_decision_t d;
    dsp_decide(m, 2, 1, 110, G, S, 155, c, &d);
    assert_int_equal(d.winner, 1);
    assert_true(d.next_wake == 160); /* a's win time, inside its window */
    dsp_decide(m, 2, 1, 110, G, S, 160, c, &d);
    assert_int_equal(d.winner, 0);
    assert_true(d.decided_at == 160);
    assert_int_equal(c[1], 1);
    assert_int_equal(d.final, 1);
    /* exactly at the window's end still counts; a moment later does not */
    m[0].running_since = 160;
    dsp_decide(m, 2, 1, 110, G, S, 171, c, &d);
    assert_int_equal(d.winner, 0);
    m[0].running_since = 160.5;
    dsp_decide(m, 2, 1, 110, G, S, 171, c, &d);
    assert_int_equal(d.winner, 1);
    assert_int_equal(c[0], 1);
}

/* Seen late (the controller was down): the same answer as if watched. */
static void test_decide_replay(void **state)
{
    (void)state;
    dsp_member_t m[3] = { M(20, 100), M(50, 112), M(90, 125) };
    int c[3];
    dsp_decision_t d;
    /* [0] (20) wins at 110; [1] (50) has until 140 and wins at 122; [2]
     * (90) is re-based on [1]: until 122 + 40 = 162, and wins at 135. */
    dsp_decide(m, 3, -1, 0, G, S, 500, c, &d);
    assert_int_equal(d.winner, 2);
    assert_true(d.decided_at == 135);
    assert_int_equal(c[0], 1);
    assert_int_equal(c[1], 1);
    assert_int_equal(d.final, 1);
    /* [2] starting at 153 would win at 163, past 162: [1] stays */
    m[2].running_since = 153;
    dsp_decide(m, 3, -1, 0, G, S, 500, c, &d);
    assert_int_equal(d.winner, 1);
    assert_true(d.decided_at == 122);
    assert_int_equal(c[0], 1);
    assert_int_equal(c[2], 1);
}

/* Several Running: the earliest to enter Running wins; a tie goes to the
 * higher priority. */
static void test_decide_earliest(void **state)
{
    (void)state;
    dsp_member_t m[3] = { M(30, 104), M(30, 101), M(30, 103) };
    int c[3];
    dsp_decision_t d;
    dsp_decide(m, 3, -1, 0, G, S, 200, c, &d);
    assert_int_equal(d.winner, 1);
    assert_int_equal(c[0] + c[2], 2);
    dsp_member_t t[2] = { M(30, 100), M(31, 100) };
    dsp_decide(t, 2, -1, 0, G, S, 200, c, &d);
    assert_int_equal(d.winner, 1);
    assert_int_equal(c[0], 1);
}

/* A winner that failed before the end is dropped and the race goes on. */
static void test_decide_winner_dropped(void **state)
{
    (void)state;
    dsp_member_t m[2] = { M(80, -1), M(20, 100) };
    m[1].in_race = 0;
    int c[2];
    dsp_decision_t d;
    dsp_decide(m, 2, 1, 110, G, S, 120, c, &d);
    assert_int_equal(d.winner, -1);
    assert_int_equal(c[0], 0);
    m[0].running_since = 118;
    dsp_decide(m, 2, 1, 110, G, S, 128, c, &d);
    assert_int_equal(d.winner, 0);
    assert_int_equal(d.final, 1);
}

/* ---- table ----------------------------------------------------------- */

static void test_table(void **state)
{
    (void)state;
    json_t *items = js(
        "[{\"metadata\": {\"name\": \"train\", \"namespace\": \"ml\", \"creationTimestamp\": \"2026-01-01T00:00:00Z\"},"
        "  \"status\": {\"phase\": \"Won\", \"winner\": \"a\", \"clusters\": ["
        "   {\"name\": \"a\", \"priority\": 80, \"state\": \"Won\", \"wonAt\": \"2026-01-01T00:02:05.500Z\"},"
        "   {\"name\": \"b\", \"priority\": 20, \"state\": \"Cancelled\"}]}},"
        " {\"metadata\": {\"name\": \"new\", \"namespace\": \"ml\", \"creationTimestamp\": \"2026-01-01T00:00:00Z\"},"
        "  \"spec\": {\"clusters\": [{\"name\": \"a\"}]}}]");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mcjob_print(f, items, 0, 1767225630000LL); /* 2026-01-01T00:00:30Z */
    fclose(f);
    assert_string_equal(buf, "NAME    PHASE     WINNER   WAITED   CLUSTERS\n"
                             "train   Won       a        2m5s     a(80)=Won,b(20)=Cancelled\n"
                             "new     Pending   -        30s      a=-\n");
    free(buf);
    json_decref(items);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_substitute_keeps_type),
        cmocka_unit_test(test_substitute_errors),
        cmocka_unit_test(test_specialise),
        cmocka_unit_test(test_decide_nothing_yet),
        cmocka_unit_test(test_decide_low_wins_high_window),
        cmocka_unit_test(test_decide_high_takes_over),
        cmocka_unit_test(test_decide_replay),
        cmocka_unit_test(test_decide_earliest),
        cmocka_unit_test(test_decide_winner_dropped),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
