/* test_gang.c -- the gang store: PodGroup parsing (bad input included),
 * membership, the phase rules, the backfill gate, elastic surplus and
 * whole-gang victims, and the housekeeping tick (status patches,
 * timeouts, stale gangs). */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pthread.h>
#include <unistd.h>

#include "gang/gang.h"
#include "scheduler/capabilities.h"
#include "util/util.h"

#include "fixtures.h"

static podgroup_t *mkpg(const char *name, const char *spec)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'ns','uid':'pg-%s','creationTimestamp':'2026-01-01T00:00:00Z'},"
             "'spec':%s}",
             name, name, spec);
    json_t *j = parse_sq(buf);
    char err[256] = "";
    podgroup_t *pg = podgroup_from_json(j, err, sizeof(err));
    json_decref(j);
    if (!pg)
        fail_msg("podgroup_from_json: %s", err);
    return pg;
}

/* A member pod: node "" = pending; phase Running/Succeeded/Failed/Pending. */
static pod_t *mkmember(const char *name, const char *group, int prio, const char *node, const char *phase,
                       const char *start)
{
    char buf[2048];
    snprintf(buf, sizeof(buf),
             "{'metadata':{'name':'%s','namespace':'ns','uid':'u-%s','labels':{'scheduling.x-k8s.io/pod-group':'%s'},"
             "'creationTimestamp':'2026-01-01T00:00:01Z'},"
             "'spec':{'priority':%d,'nodeName':'%s','containers':[{'name':'c','resources':{'requests':{'cpu':'1'}}}]},"
             "'status':{'phase':'%s','startTime':'%s'}}",
             name, name, group, prio, node, phase, start);
    return fx_pod(buf);
}

static void test_podgroup_parse(void **state)
{
    (void)state;
    podgroup_t *pg = mkpg("a", "{'minMember':3,'scheduleTimeoutSeconds':10,'minResources':{'cpu':'4'}}");
    assert_null(pg->invalid);
    assert_int_equal(pg->min_member, 3);
    assert_int_equal(pg->timeout_s, 10);
    assert_int_equal(pg->min_resources.milli_cpu, 4000);
    assert_true(pg->created_ms > 0);
    podgroup_free(pg);

    /* Bad specs parse, marked invalid with the reason; never a crash. */
    const char *bad[][2] = {
        { "{'minMember':0}", "at least 1" },
        { "{'minMember':-4}", "at least 1" },
        { "{}", "at least 1" },
        { "{'minMember':99999999999}", "32-bit" },
        { "{'minMember':'3'}", "32-bit" },
        { "{'minMember':2,'scheduleTimeoutSeconds':-1}", "scheduleTimeoutSeconds" },
        { "{'minMember':2,'minResources':{'cpu':'lots'}}", "minResources" },
        { "[]", "spec" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        pg = mkpg("b", bad[i][0]);
        assert_non_null(pg->invalid);
        if (!strstr(pg->invalid, bad[i][1]))
            fail_msg("%s: '%s' lacks '%s'", bad[i][0], pg->invalid, bad[i][1]);
        podgroup_free(pg);
    }
    /* Not a PodGroup at all. */
    char err[128];
    json_t *j = parse_sq("{'metadata':{'name':'x'}}");
    assert_null(podgroup_from_json(j, err, sizeof(err)));
    json_decref(j);
    j = json_integer(3);
    assert_null(podgroup_from_json(j, err, sizeof(err)));
    json_decref(j);
}

static void test_phase(void **state)
{
    (void)state;
    /* (members, min, scheduled, running, succeeded, failed, timed_out) */
    assert_string_equal(gang_phase(2, 3, 0, 0, 0, 0, 0), "Pending");
    assert_string_equal(gang_phase(3, 3, 0, 0, 0, 0, 0), "PreScheduling");
    assert_string_equal(gang_phase(3, 3, 1, 0, 0, 0, 0), "Scheduling");
    assert_string_equal(gang_phase(3, 3, 3, 0, 0, 0, 0), "Scheduled");
    assert_string_equal(gang_phase(4, 3, 3, 3, 0, 0, 0), "Running");
    assert_string_equal(gang_phase(3, 3, 3, 0, 3, 0, 0), "Finished");
    assert_string_equal(gang_phase(3, 3, 0, 0, 0, 0, 1), "Failed");
    assert_string_equal(gang_phase(3, 3, 3, 1, 0, 2, 0), "Failed");
    /* Placed after a timeout: back to Scheduled. */
    assert_string_equal(gang_phase(3, 3, 3, 0, 0, 0, 1), "Scheduled");
}

static void test_membership_and_snapshot(void **state)
{
    (void)state;
    gang_store_t *gs = gang_store_new();
    gang_snap_t s;
    pod_t *a = mkmember("a", "g", 0, "", "Pending", "2026-01-01T00:00:01Z");
    gang_pod_upsert(gs, a);
    assert_int_equal(gang_snapshot(gs, "ns", "g", &s), 0);
    assert_int_equal(s.state, GANG_MISSING);
    assert_int_equal(s.nmembers, 1);
    gang_snap_clear(&s);

    assert_int_equal(gang_group_upsert(gs, mkpg("g", "{'minMember':2}")), 1);
    /* A status-only update (our own writes coming back) changes nothing. */
    assert_int_equal(gang_group_upsert(gs, mkpg("g", "{'minMember':2}")), 0);
    assert_int_equal(gang_group_upsert(gs, mkpg("g", "{'minMember':2,'minResources':{'cpu':'1'}}")), 1);
    assert_int_equal(gang_group_upsert(gs, mkpg("g", "{'minMember':2}")), 1);
    pod_t *b = mkmember("b", "g", 0, "", "Pending", "2026-01-01T00:00:01Z");
    gang_pod_upsert(gs, b);
    assert_int_equal(gang_snapshot(gs, "ns", "g", &s), 0);
    assert_int_equal(s.state, GANG_OK);
    assert_int_equal(s.min_member, 2);
    assert_int_equal(s.nmembers, 2);
    assert_string_equal(s.uid, "pg-g");
    gang_snap_clear(&s);

    /* A pod relabelled to another group leaves the first. */
    pod_t *b2 = mkmember("b", "h", 0, "", "Pending", "2026-01-01T00:00:01Z");
    gang_pod_upsert(gs, b2);
    assert_int_equal(gang_snapshot(gs, "ns", "g", &s), 0);
    assert_int_equal(s.nmembers, 1);
    gang_snap_clear(&s);
    assert_int_equal(gang_snapshot(gs, "ns", "h", &s), 0);
    assert_int_equal(s.nmembers, 1);
    gang_snap_clear(&s);

    /* Deleted PodGroup: a tombstone while members remain. */
    gang_group_delete(gs, "ns", "g");
    assert_int_equal(gang_snapshot(gs, "ns", "g", &s), 0);
    assert_int_equal(s.state, GANG_DELETED);
    gang_snap_clear(&s);
    gang_pod_delete(gs, a);
    assert_int_equal(gang_snapshot(gs, "ns", "g", &s), -1);
    gang_pod_delete(gs, b2);
    assert_int_equal(gang_snapshot(gs, "ns", "h", &s), -1);
    pod_unref(a);
    pod_unref(b);
    pod_unref(b2);
    gang_store_free(gs);
}

typedef struct behind_log {
    char text[512];
} behind_log_t;

static void note_behind(void *ud, const gang_row_t *r)
{
    behind_log_t *l = ud;
    size_t n = strlen(l->text);
    snprintf(l->text + n, sizeof l->text - n, "%s>%s ", r->key, r->waiting_behind ? r->waiting_behind : "-");
}

/* The dashboard's rows: every waiting gang waits behind its pool's first in
 * line (highest priority, then oldest), the first waits behind none, and
 * pools do not mix. */
static void test_each_row_waits_behind(void **state)
{
    (void)state;
    gang_store_t *gs = gang_store_new();
    const char *names[] = { "a", "b", "c", "d", "e" };
    for (int i = 0; i < 5; i++)
        gang_group_upsert(gs, mkpg(names[i], "{'minMember':2}"));
    gang_waiting(gs, "ns/a", 1, 10, 1000, "no room", 1, NULL);
    gang_waiting(gs, "ns/b", 1, 20, 2000, "no room", 1, NULL);
    gang_waiting(gs, "ns/c", 1, 10, 500, "no room", 1, NULL);
    gang_waiting(gs, "ns/d", 2, 0, 3000, "no room", 1, NULL);
    behind_log_t l = { "" };
    gang_each_row(gs, note_behind, &l);
    for (int i = 0; i < 5; i++) {
        static const char *const want[] = { "ns/a>ns/b ", "ns/b>- ", "ns/c>ns/b ", "ns/d>- ", "ns/e>- " };
        assert_non_null(strstr(l.text, want[i]));
    }
    gang_store_free(gs);
}

static void test_blocker(void **state)
{
    (void)state;
    gang_store_t *gs = gang_store_new();
    gang_group_upsert(gs, mkpg("w", "{'minMember':2}"));
    assert_int_equal(gang_nwaiting(gs), 0);
    assert_null(gang_blocker(gs, 1, NULL, 0, 0, 0, 1));
    /* gang ns/w waits in pool 1 at priority 10, created at t=1000 */
    gang_waiting(gs, "ns/w", 1, 10, 1000, "0/4 nodes are available", 1, NULL);
    assert_int_equal(gang_nwaiting(gs), 1);
    /* A gang that can never fit the pool notes why but holds nobody back. */
    gang_group_upsert(gs, mkpg("huge", "{'minMember':2}"));
    gang_waiting(gs, "ns/huge", 1, 100, 1, "too big", 0, NULL);
    assert_int_equal(gang_nwaiting(gs), 1);
    char *why;
    /* same priority, younger: blocked */
    why = gang_blocker(gs, 1, NULL, 10, 2000, 0, 1);
    assert_non_null(why);
    assert_non_null(strstr(why, "ns/w"));
    free(why);
    /* same priority, created in the same second: behind the waiting gang
     * (seen once in CI as a pod passing a gang it came after) */
    why = gang_blocker(gs, 1, NULL, 10, 1000, 0, 1);
    assert_non_null(why);
    free(why);
    /* A gang created in the same second that sorts first by key, but was
     * considered after the waiting gang: behind it (seen in CI as gang gb
     * placed while gw, created in the same second, waited). */
    gang_considered(gs, "ns/w", 100);
    gang_group_upsert(gs, mkpg("a", "{'minMember':2}"));
    gang_considered(gs, "ns/a", 200);
    why = gang_blocker(gs, 1, "ns/a", 10, 1000, 0, 1);
    assert_non_null(why);
    assert_non_null(strstr(why, "ns/w"));
    free(why);
    /* both waiting: a strict order, so exactly one holds the other back */
    gang_waiting(gs, "ns/a", 1, 10, 1000, "0/4 nodes are available", 1, NULL);
    why = gang_blocker(gs, 1, "ns/w", 10, 1000, 0, 1);
    assert_null(why);
    why = gang_blocker(gs, 1, "ns/a", 10, 1000, 0, 1);
    assert_non_null(why);
    free(why);
    gang_group_delete(gs, "ns", "a");
    /* same priority, older: goes first */
    assert_null(gang_blocker(gs, 1, NULL, 10, 500, 0, 1));
    /* higher priority: goes first */
    assert_null(gang_blocker(gs, 1, NULL, 11, 2000, 0, 1));
    /* lower priority: the gang could evict it, so it may backfill... */
    assert_null(gang_blocker(gs, 1, NULL, 5, 2000, 0, 1));
    /* ...unless the pool does not preempt */
    why = gang_blocker(gs, 1, NULL, 5, 2000, 0, 0);
    assert_non_null(why);
    free(why);
    /* another pool: never */
    assert_null(gang_blocker(gs, 2, NULL, 5, 2000, 0, 0));
    /* the gang itself is not blocked by itself */
    assert_null(gang_blocker(gs, 1, "ns/w", 10, 2000, 0, 1));
    /* A pod holding a nomination (issue 35, fault 2): a gang not above its
     * priority sees its room taken either way and does not hold it back;
     * one above it does, where it cannot evict it. */
    assert_null(gang_blocker_nominee(gs, 1, 10, 2000, 1));
    assert_null(gang_blocker_nominee(gs, 1, 10, 2000, 0));
    why = gang_blocker_nominee(gs, 1, 5, 2000, 0);
    assert_non_null(why);
    assert_non_null(strstr(why, "ns/w"));
    free(why);
    assert_null(gang_blocker_nominee(gs, 1, 5, 2000, 1));
    /* elastic surplus of an older gang with the same priority waits */
    why = gang_blocker(gs, 1, "ns/old", 10, 500, 1, 1);
    assert_non_null(why);
    free(why);
    /* placed: no more gate */
    assert_true(fabs(gang_placed(gs, "ns/w", 5000, NULL) - 4.9) < 1e-9); /* considered at 100 ms */
    assert_int_equal(gang_nwaiting(gs), 0);
    assert_null(gang_blocker(gs, 1, NULL, 10, 2000, 0, 1));
    gang_store_free(gs);
}

static void test_surplus_and_mates(void **state)
{
    (void)state;
    gang_store_t *gs = gang_store_new();
    gang_group_upsert(gs, mkpg("e", "{'minMember':2}"));
    pod_t *p[4];
    p[0] = mkmember("e0", "e", 0, "n1", "Running", "2026-01-01T00:00:10Z");
    p[1] = mkmember("e1", "e", 0, "n1", "Running", "2026-01-01T00:00:11Z");
    p[2] = mkmember("e2", "e", 0, "n2", "Running", "2026-01-01T00:00:12Z");
    p[3] = mkmember("e3", "e", 0, "", "Pending", "2026-01-01T00:00:13Z");
    for (int i = 0; i < 4; i++)
        gang_pod_upsert(gs, p[i]);
    /* minMember 2, three bound: the latest started (e2) is the surplus. */
    assert_false(gang_is_surplus(gs, p[0]));
    assert_false(gang_is_surplus(gs, p[1]));
    assert_true(gang_is_surplus(gs, p[2]));
    assert_false(gang_is_surplus(gs, p[3]));
    /* A member that keeps the minimum drags the other bound members. */
    pod_t **m = NULL;
    int n = gang_mates(gs, p[0], &m);
    assert_int_equal(n, 2);
    int seen1 = 0, seen2 = 0;
    for (int i = 0; i < n; i++) {
        seen1 |= strcmp(m[i]->name, "e1") == 0;
        seen2 |= strcmp(m[i]->name, "e2") == 0;
        pod_unref(m[i]);
    }
    free(m);
    assert_true(seen1 && seen2);
    /* Surplus goes alone. */
    assert_int_equal(gang_mates(gs, p[2], &m), 0);
    free(m);
    /* Not a gang member. */
    pod_t *lone = fx_pod("{'metadata':{'name':'x','namespace':'ns','uid':'ux'},'spec':{'containers':[]}}");
    assert_false(gang_is_surplus(gs, lone));
    assert_int_equal(gang_mates(gs, lone, &m), 0);
    free(m);
    pod_unref(lone);
    for (int i = 0; i < 4; i++)
        pod_unref(p[i]);
    gang_store_free(gs);
}

/* Issue 26: a gang's age is its last bound member's start; a resize is a
 * burst (one start within GANG_RESIZE_BURST_MS); with no memory (a restart)
 * a gang above its minimum counts from its newest member's start; the
 * window annotation parses, a malformed one is DURATION_BAD. */
static void test_last_start_and_resize(void **state)
{
    (void)state;
    gang_store_t *gs = gang_store_new();
    gang_group_upsert(gs, mkpg("e", "{'minMember':1}"));
    pod_t *a = mkmember("a", "e", 0, "n1", "Running", "2026-01-01T00:00:10Z");
    pod_t *b = mkmember("b", "e", 0, "n1", "Running", "2026-01-01T00:00:40Z");
    pod_t *c = mkmember("c", "e", 0, "", "Pending", "2026-01-01T00:00:50Z");
    gang_pod_upsert(gs, a);
    gang_pod_upsert(gs, b);
    gang_pod_upsert(gs, c);
    assert_int_equal(gang_last_start(gs, a), b->started_ms); /* the pending c does not count */
    int64_t win = 0;
    /* No change seen, one surplus bound: its start. */
    assert_int_equal(gang_resize_start(gs, "ns", "e", &win), b->started_ms);
    assert_int_equal(win, DURATION_UNSET);
    gang_resized(gs, "ns", "e", 1000000);
    gang_resized(gs, "ns", "e", 1001500); /* same burst */
    assert_int_equal(gang_resize_start(gs, "ns", "e", &win), 1000000);
    gang_resized(gs, "ns", "e", 1002000); /* a new change */
    assert_int_equal(gang_resize_start(gs, "ns", "e", &win), 1002000);
    gang_group_upsert(gs, mkpg("w", "{'minMember':1}"));
    assert_int_equal(gang_resize_start(gs, "ns", "w", &win), 0); /* never resized, no surplus */
    json_t *j = parse_sq("{'metadata':{'name':'f','namespace':'ns','uid':'pg-f','annotations':"
                         "{'resource.aibee.cn/freezing-window':'90s'}},'spec':{'minMember':1}}");
    char err[256];
    podgroup_t *pg = podgroup_from_json(j, err, sizeof err);
    json_decref(j);
    assert_int_equal(pg->freezing_window_ms, 90000);
    podgroup_free(pg);
    j = parse_sq("{'metadata':{'name':'f','namespace':'ns','uid':'pg-f','annotations':"
                 "{'resource.aibee.cn/freezing-window':'soon'}},'spec':{'minMember':1}}");
    pg = podgroup_from_json(j, err, sizeof err);
    json_decref(j);
    assert_int_equal(pg->freezing_window_ms, DURATION_BAD);
    podgroup_free(pg);
    pod_unref(a);
    pod_unref(b);
    pod_unref(c);
    gang_store_free(gs);
}

static int find_event(const gang_tick_t *t, const char *reason)
{
    for (int i = 0; i < t->nevents; i++)
        if (strcmp(t->events[i].reason, reason) == 0)
            return i;
    return -1;
}

static void test_tick_status_timeout_stale(void **state)
{
    (void)state;
    gang_store_t *gs = gang_store_new();
    gang_group_upsert(gs, mkpg("t", "{'minMember':2,'scheduleTimeoutSeconds':5}"));
    pod_t *a = mkmember("ta", "t", 0, "", "Pending", "2026-01-01T00:00:01Z");
    pod_t *b = mkmember("tb", "t", 0, "", "Pending", "2026-01-01T00:00:01Z");
    gang_pod_upsert(gs, a);
    gang_pod_upsert(gs, b);
    gang_tick_t t;
    int64_t t0 = 1700000000000LL;
    /* Bindings queued: the status waits for a later tick. */
    gang_tick(gs, t0, 60, 60, 0, 0, &t);
    assert_int_equal(t.npatches, 0);
    gang_tick_clear(&t);
    gang_tick(gs, t0, 60, 60, 0, 1, &t);
    assert_int_equal(t.npatches, 1);
    assert_non_null(strstr(t.patches[0].path, "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups/t/status"));
    assert_non_null(strstr(t.patches[0].body, "\"phase\":\"PreScheduling\""));
    gang_tick_clear(&t);
    /* Nothing moved: nothing to write. */
    gang_tick(gs, t0 + 1000, 60, 60, 0, 1, &t);
    assert_int_equal(t.npatches, 0);
    gang_tick_clear(&t);

    /* Considered and waiting; the PodGroup's own 5 s timeout, not the 60 s default. */
    gang_considered(gs, "ns/t", t0);
    gang_waiting(gs, "ns/t", 0, 0, 0, "0/2 nodes are available: 2 Insufficient cpu.", 1, NULL);
    gang_tick(gs, t0 + 4000, 60, 60, 0, 1, &t);
    assert_int_equal(t.timed_out, 0);
    assert_int_equal(t.waiting, 1);
    gang_tick_clear(&t);
    gang_tick(gs, t0 + 5000, 60, 60, 0, 1, &t);
    assert_int_equal(t.timed_out, 1);
    int e = find_event(&t, "GangScheduleTimeout");
    assert_true(e >= 0);
    assert_non_null(strstr(t.events[e].msg, "Insufficient cpu"));
    assert_int_equal(t.nwake, 1); /* the pods it held back may go */
    assert_int_equal(t.npatches, 1);
    assert_non_null(strstr(t.patches[0].body, "\"phase\":\"Failed\""));
    assert_non_null(strstr(t.patches[0].body, "scheduleStartTime"));
    gang_tick_clear(&t);
    /* Once only. */
    gang_tick(gs, t0 + 9000, 60, 60, 0, 1, &t);
    assert_int_equal(t.timed_out, 0);
    gang_tick_clear(&t);
    /* A timed-out gang no longer holds back backfill. */
    assert_null(gang_blocker(gs, 0, NULL, 0, 1, 0, 0));

    /* Placed: Scheduled; then one member fails: below minMember -> stale after the grace. */
    pod_t *a2 = mkmember("ta", "t", 0, "n1", "Running", "2026-01-01T00:00:01Z");
    pod_t *b2 = mkmember("tb", "t", 0, "n2", "Running", "2026-01-01T00:00:02Z");
    gang_pod_upsert(gs, a2);
    gang_pod_upsert(gs, b2);
    assert_true(gang_placed(gs, "ns/t", t0 + 10000, NULL) >= 10.0);
    gang_tick(gs, t0 + 10000, 60, 3, 1, 1, &t);
    assert_non_null(strstr(t.patches[0].body, "\"phase\":\"Running\""));
    gang_tick_clear(&t);
    pod_t *b3 = mkmember("tb", "t", 0, "n2", "Failed", "2026-01-01T00:00:02Z");
    gang_pod_upsert(gs, b3);
    gang_tick(gs, t0 + 11000, 60, 3, 1, 1, &t);
    assert_int_equal(t.stale, 0);
    assert_int_equal(t.nevict, 0);
    gang_tick_clear(&t);
    gang_tick(gs, t0 + 14000, 60, 3, 1, 1, &t);
    assert_int_equal(t.stale, 1);
    assert_true(find_event(&t, "StaleGang") >= 0);
    assert_int_equal(t.nevict, 1); /* --evict-stale-gangs: the one still running */
    assert_string_equal(t.evict[0]->name, "ta");
    gang_tick_clear(&t);
    gang_tick(gs, t0 + 15000, 60, 3, 1, 1, &t);
    assert_int_equal(t.nevict, 0); /* once */
    gang_tick_clear(&t);

    /* An invalid PodGroup is said once per reason. */
    gang_group_upsert(gs, mkpg("bad", "{'minMember':0}"));
    gang_tick(gs, t0 + 16000, 60, 3, 0, 1, &t);
    assert_true(find_event(&t, "InvalidPodGroup") >= 0);
    gang_tick_clear(&t);
    gang_tick(gs, t0 + 17000, 60, 3, 0, 1, &t);
    assert_int_equal(find_event(&t, "InvalidPodGroup"), -1);
    gang_tick_clear(&t);

    pod_unref(a);
    pod_unref(b);
    pod_unref(a2);
    pod_unref(b2);
    pod_unref(b3);
    gang_store_free(gs);
}

/* Issue 22, fault 3: a gang placed once, then preempted whole (or its pods
 * recreated), times out again: its clock restarts at its next turn. */
static void test_timeout_after_placement(void **state)
{
    (void)state;
    gang_store_t *gs = gang_store_new();
    gang_group_upsert(gs, mkpg("r", "{'minMember':2,'scheduleTimeoutSeconds':5}"));
    pod_t *a = mkmember("ra", "r", 0, "n1", "Running", "2026-01-01T00:00:01Z");
    pod_t *b = mkmember("rb", "r", 0, "n2", "Running", "2026-01-01T00:00:01Z");
    gang_pod_upsert(gs, a);
    gang_pod_upsert(gs, b);
    int64_t t0 = 1700000000000LL;
    gang_considered(gs, "ns/r", t0);
    gang_placed(gs, "ns/r", t0 + 1000, NULL);
    gang_tick_t t;
    gang_tick(gs, t0 + 2000, 60, 60, 0, 1, &t);
    gang_tick_clear(&t);
    /* Preempted whole: both members gone, replacements pending. */
    gang_pod_delete(gs, a);
    gang_pod_delete(gs, b);
    pod_t *a2 = mkmember("ra2", "r", 0, "", "Pending", "2026-01-01T00:00:03Z");
    pod_t *b2 = mkmember("rb2", "r", 0, "", "Pending", "2026-01-01T00:00:03Z");
    gang_pod_upsert(gs, a2);
    gang_pod_upsert(gs, b2);
    gang_tick(gs, t0 + 3000, 60, 60, 0, 1, &t);
    gang_tick_clear(&t);
    gang_considered(gs, "ns/r", t0 + 4000);
    gang_waiting(gs, "ns/r", 0, 0, 0, "0/2 nodes are available: 2 Insufficient cpu.", 1, NULL);
    gang_tick(gs, t0 + 8000, 60, 60, 0, 1, &t);
    assert_int_equal(t.timed_out, 0); /* 4 s since its new turn */
    gang_tick_clear(&t);
    gang_tick(gs, t0 + 9000, 60, 60, 0, 1, &t);
    assert_int_equal(t.timed_out, 1);
    assert_true(find_event(&t, "GangScheduleTimeout") >= 0);
    gang_tick_clear(&t);
    /* It no longer holds back the pods of its priority behind it. */
    assert_null(gang_blocker(gs, 0, NULL, 0, t0, 0, 0));
    pod_unref(a);
    pod_unref(b);
    pod_unref(a2);
    pod_unref(b2);
    gang_store_free(gs);
}

typedef struct turn_probe {
    gang_store_t *gs;
    int entered; /* atomic */
} turn_probe_t;

static void *second_turn(void *arg)
{
    turn_probe_t *t = arg;
    gang_turn_begin(t->gs, "ns/g");
    __atomic_store_n(&t->entered, 1, __ATOMIC_SEQ_CST);
    gang_turn_end(t->gs, "ns/g");
    return NULL;
}

/* Issue 22, fault 9: one turn of a gang at a time across pool threads (a
 * borrowing gang has members queued in two pools); another gang's turn is
 * not held up. */
static void test_one_turn_at_a_time(void **state)
{
    (void)state;
    gang_store_t *gs = gang_store_new();
    turn_probe_t t = { gs, 0 };
    gang_turn_begin(gs, "ns/g");
    pthread_t th;
    pthread_create(&th, NULL, second_turn, &t);
    gang_turn_begin(gs, "ns/other"); /* a different gang: no wait */
    gang_turn_end(gs, "ns/other");
    usleep(100 * 1000);
    assert_int_equal(__atomic_load_n(&t.entered, __ATOMIC_SEQ_CST), 0);
    gang_turn_end(gs, "ns/g");
    pthread_join(th, NULL);
    assert_int_equal(t.entered, 1);
    gang_store_free(gs);
}

/* Issue 22, fault 15: a status write is not taken as done until the
 * PodGroup the informer sees carries it: a dropped write goes again. */
static void test_status_rewritten_until_seen(void **state)
{
    (void)state;
    gang_store_t *gs = gang_store_new();
    gang_group_upsert(gs, mkpg("s", "{'minMember':1}"));
    pod_t *a = mkmember("sa", "s", 0, "", "Pending", "2026-01-01T00:00:01Z");
    gang_pod_upsert(gs, a);
    gang_tick_t t;
    int64_t t0 = 1700000000000LL;
    gang_tick(gs, t0, 60, 60, 0, 1, &t);
    assert_int_equal(t.npatches, 1);
    char *body = util_strdup(t.patches[0].body);
    gang_tick_clear(&t);
    gang_tick(gs, t0 + 5000, 60, 60, 0, 1, &t);
    assert_int_equal(t.npatches, 0); /* in flight: not sent twice at once */
    gang_tick_clear(&t);
    gang_tick(gs, t0 + 11000, 60, 60, 0, 1, &t);
    assert_int_equal(t.npatches, 1); /* never seen: sent again */
    assert_string_equal(t.patches[0].body, body);
    gang_tick_clear(&t);
    /* The informer brings it back: done. */
    json_t *b = json_loads(body, 0, NULL);
    char *st = json_dumps(json_object_get(b, "status"), JSON_COMPACT);
    char text[1024];
    snprintf(text, sizeof(text),
             "{\"metadata\":{\"name\":\"s\",\"namespace\":\"ns\",\"uid\":\"pg-s\"},\"spec\":{\"minMember\":1},"
             "\"status\":%s}",
             st);
    json_t *j = json_loads(text, 0, NULL);
    char err[256];
    podgroup_t *pg = podgroup_from_json(j, err, sizeof(err));
    assert_non_null(pg);
    assert_int_equal(gang_group_upsert(gs, pg), 0);
    gang_tick(gs, t0 + 30000, 60, 60, 0, 1, &t);
    assert_int_equal(t.npatches, 0);
    gang_tick_clear(&t);
    json_decref(j);
    json_decref(b);
    free(st);
    free(body);
    pod_unref(a);
    gang_store_free(gs);
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_podgroup_parse),
        cmocka_unit_test(test_phase),
        cmocka_unit_test(test_membership_and_snapshot),
        cmocka_unit_test(test_each_row_waits_behind),
        cmocka_unit_test(test_blocker),
        cmocka_unit_test(test_surplus_and_mates),
        cmocka_unit_test(test_last_start_and_resize),
        cmocka_unit_test(test_tick_status_timeout_stale),
        cmocka_unit_test(test_timeout_after_placement),
        cmocka_unit_test(test_one_turn_at_a_time),
        cmocka_unit_test(test_status_rewritten_until_seen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
