/* test_grouper_rules.c -- the workload table: each default kind on the JSON its operator writes, the minMember
 * expressions (defaults, '*', sum, overflow, bad syntax), loading rows from YAML and JSON files (and rejecting bad
 * ones), find, object paths and PodGroup names. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <unistd.h>

#include "grouper/rules.h"
#include "scheduler/capabilities.h"
#include "util/util.h"

#include "fixtures.h"
#include "tmpdir.h"

/* ------------------------------------------------------------ helpers */

typedef struct verdict_want {
    int gang;
    int32_t min;
    const char *queue, *prio, *why;
    int unmet;
} verdict_want_t;

static void check_verdict(const wl_table_t *t, const char *api, const char *kind, const char *owner_sq,
                          verdict_want_t w)
{
    const wl_row_t *r = wl_table_find(t, api, kind);
    if (!r)
        fail_msg("no row for %s %s", api, kind);
    assert_true(wl_row_is_gang(r));
    json_t *o = parse_sq(owner_sq);
    wl_verdict_t v;
    assert_int_equal(wl_row_eval(r, o, &v), 0);
    json_decref(o);
    if (v.gang != w.gang || v.min_member != w.min || v.unmet != w.unmet)
        fail_msg("%s: gang %d min %d unmet %d (why: %s), want gang %d min %d unmet %d", kind, v.gang, v.min_member,
                 v.unmet, v.why ? v.why : "-", w.gang, w.min, w.unmet);
    if (w.queue)
        assert_string_equal(v.queue, w.queue);
    else
        assert_null(v.queue);
    if (w.prio)
        assert_string_equal(v.priority_class, w.prio);
    else
        assert_null(v.priority_class);
    if (w.why)
        assert_string_equal(v.why, w.why);
    else
        assert_null(v.why);
    wl_verdict_clear(&v);
}

static int64_t eval_ok(const char *expr, const char *obj_sq)
{
    char err[256] = "";
    int64_t out = -12345;
    json_t *o = parse_sq(obj_sq);
    int rc = wl_expr_eval(expr, o, &out, err, sizeof err);
    json_decref(o);
    if (rc != 0)
        fail_msg("%s: %s", expr, err);
    return out;
}

/* Fails unless expr fails on obj with err containing want. */
static void eval_fails(const char *expr, const char *obj_sq, const char *want)
{
    char err[256] = "";
    int64_t out = 0;
    json_t *o = parse_sq(obj_sq);
    int rc = wl_expr_eval(expr, o, &out, err, sizeof err);
    json_decref(o);
    if (rc == 0)
        fail_msg("%s: read %lld, want an error with \"%s\"", expr, (long long)out, want);
    if (!strstr(err, want))
        fail_msg("%s: error \"%s\", want \"%s\"", expr, err, want);
}

/* Writes text to a new temporary file; returns its path (caller unlinks, frees). */
static char *write_tmp(const char *text)
{
    char path[512];
    tmp_template(path, sizeof path, "wlrules");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t n = strlen(text);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
    return strdup(path);
}

/* Loads text as a file over t: the return code, err filled. */
static int load_text(wl_table_t *t, const char *text, char *err, size_t errlen, char **pathp)
{
    char *path = write_tmp(text);
    int rc = wl_table_load_file(t, path, err, errlen);
    unlink(path);
    if (pathp)
        *pathp = path;
    else
        free(path);
    return rc;
}

/* ------------------------------------------------------------ the default kinds */

#define PT_SPECS                                                                                                       \
    "'pytorchReplicaSpecs':{'Master':{'replicas':1,'restartPolicy':'OnFailure','template':{'spec':{'containers':[{'n"  \
    "ame':'pytorch','image':'bert:1'}]}}},'Worker':{'replicas':3,'restartPolicy':'OnFailure','template':{'spec':{'c"   \
    "ontainers':[{'name':'pytorch','image':'bert:1'}]}}}}"

static void test_pytorchjob(void **state)
{
    (void)state;
    wl_table_t *t = wl_table_new_default();
    /* minAvailable read first; the queue label beats the spec's queue */
    check_verdict(t, "kubeflow.org/v1", "PyTorchJob",
                  "{'apiVersion':'kubeflow.org/v1','kind':'PyTorchJob','metadata':{'name':'bert','namespace':'ml',"
                  "'uid':'u1','labels':{'resource.aibee.cn/queue':'team-a','kai.scheduler/queue':'kai-q'}},"
                  "'spec':{'runPolicy':{'cleanPodPolicy':'None','schedulingPolicy':{'minAvailable':2,'queue':'spec-q',"
                  "'priorityClass':'high'}}," PT_SPECS "},'status':{}}",
                  (verdict_want_t){ 1, 2, "team-a", "high", NULL, 0 });
    /* no minAvailable: every replica (1 master + 3 workers); kai's label, then the spec's queue */
    check_verdict(t, "kubeflow.org/v1", "PyTorchJob",
                  "{'metadata':{'name':'bert','labels':{'kai.scheduler/queue':'kai-q'}},"
                  "'spec':{'runPolicy':{'cleanPodPolicy':'None','schedulingPolicy':{'queue':'spec-q'}}," PT_SPECS "}}",
                  (verdict_want_t){ 1, 4, "kai-q", NULL, NULL, 0 });
    check_verdict(t, "kubeflow.org/v1", "PyTorchJob",
                  "{'metadata':{'name':'bert','labels':{'resource.aibee.cn/queue':''}},"
                  "'spec':{'runPolicy':{'schedulingPolicy':{'queue':'spec-q','priorityClass':''}}," PT_SPECS "}}",
                  (verdict_want_t){ 1, 4, "spec-q", NULL, NULL, 0 });
    /* a replica spec with no replicas counts 1 */
    check_verdict(t, "kubeflow.org/v1", "PyTorchJob",
                  "{'metadata':{'name':'x'},'spec':{'pytorchReplicaSpecs':{'Master':{},'Worker':{'replicas':7}}}}",
                  (verdict_want_t){ 1, 8, NULL, NULL, NULL, 0 });
    /* nothing to read */
    check_verdict(t, "kubeflow.org/v1", "PyTorchJob", "{'metadata':{'name':'x'},'spec':{}}",
                  (verdict_want_t){ 0, 0, NULL, NULL,
                                    "no minMember could be read: spec.runPolicy.schedulingPolicy.minAvailable missing; "
                                    "spec.pytorchReplicaSpecs missing",
                                    0 });
    /* minAvailable 0 is read (the first alternative that reads wins) and is not a gang */
    check_verdict(t, "kubeflow.org/v1", "PyTorchJob",
                  "{'spec':{'runPolicy':{'schedulingPolicy':{'minAvailable':0}}," PT_SPECS "}}",
                  (verdict_want_t){ 0, 0, NULL, NULL, "minMember 0", 0 });
    /* a string "3" is not an integer: that alternative fails, the next one reads */
    check_verdict(t, "kubeflow.org/v1", "PyTorchJob",
                  "{'spec':{'runPolicy':{'schedulingPolicy':{'minAvailable':'3'}}," PT_SPECS "}}",
                  (verdict_want_t){ 1, 4, NULL, NULL, NULL, 0 });
    check_verdict(
        t, "kubeflow.org/v1", "PyTorchJob",
        "{'spec':{'runPolicy':{'schedulingPolicy':{'minAvailable':'3'}},'pytorchReplicaSpecs':{'W':{'replica"
        "s':'2'}}}}",
        (verdict_want_t){ 0, 0, NULL, NULL,
                          "no minMember could be read: spec.runPolicy.schedulingPolicy.minAvailable is not an "
                          "integer; replicas is not an integer",
                          0 });
    /* negative, too large for int32 */
    check_verdict(t, "kubeflow.org/v1", "PyTorchJob", "{'spec':{'runPolicy':{'schedulingPolicy':{'minAvailable':-2}}}}",
                  (verdict_want_t){ 0, 0, NULL, NULL, "minMember -2", 0 });
    check_verdict(t, "kubeflow.org/v1", "PyTorchJob",
                  "{'spec':{'runPolicy':{'schedulingPolicy':{'minAvailable':2147483648}}}}",
                  (verdict_want_t){ 0, 0, NULL, NULL, "minMember 2147483648 is too large", 0 });
    check_verdict(t, "kubeflow.org/v1", "PyTorchJob",
                  "{'spec':{'runPolicy':{'schedulingPolicy':{'minAvailable':2147483647}}}}",
                  (verdict_want_t){ 1, 2147483647, NULL, NULL, NULL, 0 });
    wl_table_free(t);
}

static void test_tfjob_mpijob(void **state)
{
    (void)state;
    wl_table_t *t = wl_table_new_default();
    check_verdict(t, "kubeflow.org/v1", "TFJob",
                  "{'apiVersion':'kubeflow.org/v1','kind':'TFJob','metadata':{'name':'mnist','namespace':'ml'},"
                  "'spec':{'runPolicy':{'schedulingPolicy':{'priorityClass':'batch'}},'tfReplicaSpecs':{"
                  "'Chief':{'template':{'spec':{'containers':[{'name':'tensorflow'}]}}},"
                  "'PS':{'replicas':2,'template':{'spec':{'containers':[{'name':'tensorflow'}]}}},"
                  "'Worker':{'replicas':4,'template':{'spec':{'containers':[{'name':'tensorflow'}]}}}}}}",
                  (verdict_want_t){ 1, 7, NULL, "batch", NULL, 0 });
    check_verdict(t, "kubeflow.org/v2beta1", "MPIJob",
                  "{'apiVersion':'kubeflow.org/v2beta1','kind':'MPIJob','metadata':{'name':'pi',"
                  "'labels':{'kai.scheduler/queue':'research'}},'spec':{'slotsPerWorker':1,'runPolicy':{"
                  "'cleanPodPolicy':'Running','schedulingPolicy':{'minAvailable':3,'queue':'q2'}},"
                  "'mpiReplicaSpecs':{'Launcher':{'replicas':1},'Worker':{'replicas':2}}}}",
                  (verdict_want_t){ 1, 3, "research", NULL, NULL, 0 });
    check_verdict(t, "kubeflow.org/v1", "XGBoostJob",
                  "{'spec':{'xgbReplicaSpecs':{'Master':{'replicas':1},'Worker':{'replicas':5}}}}",
                  (verdict_want_t){ 1, 6, NULL, NULL, NULL, 0 });
    check_verdict(t, "kubeflow.org/v1", "PaddleJob", "{'spec':{'paddleReplicaSpecs':{'Worker':{'replicas':2}}}}",
                  (verdict_want_t){ 1, 2, NULL, NULL, NULL, 0 });
    wl_table_free(t);
}

static void test_jobset_and_jobs(void **state)
{
    (void)state;
    wl_table_t *t = wl_table_new_default();
    /* 1 driver x parallelism 1, 2 worker jobs x parallelism 4 */
    check_verdict(t, "jobset.x-k8s.io/v1alpha2", "JobSet",
                  "{'apiVersion':'jobset.x-k8s.io/v1alpha2','kind':'JobSet','metadata':{'name':'js','namespace':'ml'},"
                  "'spec':{'replicatedJobs':[{'name':'driver','replicas':1,'template':{'spec':{'parallelism':1,"
                  "'completions':1,'template':{'spec':{'containers':[{'name':'d'}]}}}}},"
                  "{'name':'workers','replicas':2,'template':{'spec':{'parallelism':4,'completions':4,"
                  "'completionMode':'Indexed','template':{'spec':{'containers':[{'name':'w'}]}}}}}],"
                  "'successPolicy':{'operator':'All'}}}",
                  (verdict_want_t){ 1, 9, NULL, NULL, NULL, 0 });
    /* replicas and parallelism default to 1 */
    check_verdict(t, "jobset.x-k8s.io/v1alpha2", "JobSet",
                  "{'spec':{'replicatedJobs':[{'name':'a','template':{'spec':{}}},{'name':'b','replicas':3}]}}",
                  (verdict_want_t){ 1, 4, NULL, NULL, NULL, 0 });
    const char *indexed = "{'apiVersion':'batch/v1','kind':'Job','metadata':{'name':'idx','namespace':'ml'},"
                          "'spec':{'parallelism':4,'completions':4,'completionMode':'Indexed','backoffLimit':6,"
                          "'template':{'spec':{'restartPolicy':'Never','containers':[{'name':'c'}]}}}}";
    check_verdict(t, "batch/v1", "Job", indexed, (verdict_want_t){ 1, 4, NULL, NULL, NULL, 0 });
    check_verdict(t, "batch/v1", "Job",
                  "{'spec':{'parallelism':4,'completions':4,'completionMode':'NonIndexed','backoffLimit':6}}",
                  (verdict_want_t){ 0, 0, NULL, NULL, "completionMode is not Indexed", 1 });
    check_verdict(
        t, "batch/v1", "Job", "{'spec':{'parallelism':1}}",
        (verdict_want_t){ 0, 0, NULL, NULL, "completionMode is not Indexed (spec.completionMode is not set)", 1 });
    check_verdict(t, "batch/v1", "Job", "{'spec':{'parallelism':2,'completions':4,'completionMode':'Indexed'}}",
                  (verdict_want_t){ 0, 0, NULL, NULL, "parallelism is not completions (2 vs 4)", 1 });
    check_verdict(
        t, "batch/v1", "Job", "{'spec':{'completions':4,'completionMode':'Indexed'}}",
        (verdict_want_t){ 0, 0, NULL, NULL, "parallelism is not completions (spec.parallelism is not set)", 1 });
    /* Job is a gang row; the pass-through kinds are not */
    const char *pass[][2] = { { "apps/v1", "ReplicaSet" },
                              { "apps/v1", "StatefulSet" },
                              { "apps/v1", "Deployment" },
                              { "batch/v1", "CronJob" },
                              { "v1", "Pod" } };
    for (size_t i = 0; i < sizeof pass / sizeof pass[0]; i++) {
        const wl_row_t *r = wl_table_find(t, pass[i][0], pass[i][1]);
        assert_non_null(r);
        assert_false(wl_row_is_gang(r));
        assert_null(wl_row_group_by(r));
    }
    assert_string_equal(wl_row_resource(wl_table_find(t, "batch/v1", "CronJob")), "cronjobs");
    wl_table_free(t);
}

static void test_lws_ray_trainjob(void **state)
{
    (void)state;
    wl_table_t *t = wl_table_new_default();
    check_verdict(t, "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet",
                  "{'apiVersion':'leaderworkerset.x-k8s.io/v1','kind':'LeaderWorkerSet','metadata':{'name':'vllm',"
                  "'labels':{'resource.aibee.cn/queue':'serving'}},'spec':{'replicas':2,'leaderWorkerTemplate':{"
                  "'size':4,'restartPolicy':'RecreateGroupOnPodRestart','leaderTemplate':{'spec':{'containers':[]}},"
                  "'workerTemplate':{'spec':{'containers':[]}}},'startupPolicy':'LeaderCreated'}}",
                  (verdict_want_t){ 1, 4, "serving", NULL, NULL, 0 });
    const wl_row_t *lws = wl_table_find(t, "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet");
    assert_string_equal(wl_row_group_by(lws), "leaderworkerset.sigs.k8s.io/group-index");
    assert_true(wl_row_admits(lws, NULL));

    /* head + minReplicas 1 + minReplicas 2 (replicas does not count) */
    check_verdict(t, "ray.io/v1", "RayCluster",
                  "{'apiVersion':'ray.io/v1','kind':'RayCluster','metadata':{'name':'rc'},'spec':{'rayVersion':'2.9.0',"
                  "'headGroupSpec':{'rayStartParams':{},'template':{'spec':{'containers':[{'name':'ray-head'}]}}},"
                  "'workerGroupSpecs':[{'groupName':'small','replicas':3,'minReplicas':1,'maxReplicas':5,"
                  "'rayStartParams':{},'template':{}},{'groupName':'gpu','minReplicas':2,'maxReplicas':2,"
                  "'rayStartParams':{},'template':{}}]}}",
                  (verdict_want_t){ 1, 4, NULL, NULL, NULL, 0 });
    /* a worker group without minReplicas counts 0; no worker groups at all: cannot be read */
    check_verdict(t, "ray.io/v1", "RayCluster", "{'spec':{'workerGroupSpecs':[{'groupName':'a','replicas':2}]}}",
                  (verdict_want_t){ 1, 1, NULL, NULL, NULL, 0 });
    check_verdict(t, "ray.io/v1", "RayCluster", "{'spec':{'headGroupSpec':{}}}",
                  (verdict_want_t){ 0, 0, NULL, NULL, "no minMember could be read: spec.workerGroupSpecs missing", 0 });
    check_verdict(
        t, "ray.io/v1", "RayJob",
        "{'apiVersion':'ray.io/v1','kind':'RayJob','metadata':{'name':'rj'},'spec':{'entrypoint':'python x.py',"
        "'shutdownAfterJobFinishes':true,'rayClusterSpec':{'headGroupSpec':{},'workerGroupSpecs':[{"
        "'groupName':'w','replicas':3,'minReplicas':3,'maxReplicas':3}]}}}",
        (verdict_want_t){ 1, 4, NULL, NULL, NULL, 0 });

    check_verdict(t, "trainer.kubeflow.org/v1alpha1", "TrainJob",
                  "{'apiVersion':'trainer.kubeflow.org/v1alpha1','kind':'TrainJob','metadata':{'name':'tj'},'spec':{"
                  "'runtimeRef':{'name':'torch-distributed','kind':'ClusterTrainingRuntime'},"
                  "'trainer':{'numNodes':3,'resourcesPerNode':{'limits':{'nvidia.com/gpu':8}}},"
                  "'initializer':{'dataset':{'storageUri':'hf://x'}}}}",
                  (verdict_want_t){ 1, 3, NULL, NULL, NULL, 0 });
    check_verdict(t, "trainer.kubeflow.org/v1alpha1", "TrainJob", "{'spec':{'runtimeRef':{'name':'x'}}}",
                  (verdict_want_t){ 1, 1, NULL, NULL, NULL, 0 });
    const wl_row_t *tj = wl_table_find(t, "trainer.kubeflow.org/v1alpha1", "TrainJob");
    labels_t node = { 0 }, init = { 0 };
    json_t *ln = parse_sq("{'jobset.sigs.k8s.io/replicatedjob-name':'node','jobset.sigs.k8s.io/jobset-name':'tj'}");
    json_t *li = parse_sq("{'jobset.sigs.k8s.io/replicatedjob-name':'dataset-initializer'}");
    assert_int_equal(labels_from_json(&node, ln, NULL, 0), 0);
    assert_int_equal(labels_from_json(&init, li, NULL, 0), 0);
    assert_true(wl_row_admits(tj, &node));
    assert_false(wl_row_admits(tj, &init));
    assert_false(wl_row_admits(tj, NULL));
    labels_free(&node);
    labels_free(&init);
    json_decref(ln);
    json_decref(li);
    wl_table_free(t);
}

/* Every default row on owners of every wrong shape: a verdict, never a crash. */
static void test_untrusted_owners(void **state)
{
    (void)state;
    wl_table_t *t = wl_table_new_default();
    const char *owners[] = {
        "[]",
        "{}",
        "{'metadata':'x','spec':[]}",
        "{'metadata':{'labels':[]},'spec':{'runPolicy':[1,2],'pytorchReplicaSpecs':[{'replicas':2},{'replicas':null}]}}",
        "{'metadata':{'labels':{'resource.aibee.cn/queue':7}},'spec':{'parallelism':'4','completions':'4',"
        "'completionMode':'Indexed','replicatedJobs':{'a':{'replicas':true}}}}",
        "{'spec':{'workerGroupSpecs':'many','leaderWorkerTemplate':{'size':1.5},'trainer':{'numNodes':null}}}",
        "{'spec':{'replicatedJobs':[{'replicas':4611686018427387904,'template':{'spec':{'parallelism':4}}}]}}",
        "{'spec':{'workerGroupSpecs':[{'minReplicas':9223372036854775807}]}}",
        "{'spec':{'tfReplicaSpecs':{'a':{'replicas':-9223372036854775807},'b':{'replicas':-5}}}}",
    };
    for (size_t i = 0; i < sizeof owners / sizeof owners[0]; i++) {
        json_t *o = parse_sq(owners[i]);
        for (int k = 0; k < wl_table_nrows(t); k++) {
            wl_verdict_t v;
            assert_int_equal(wl_row_eval(wl_table_row(t, k), o, &v), 0);
            assert_true(v.gang == 0 || v.min_member >= 1);
            assert_true(v.gang == 1 || v.why != NULL);
            wl_verdict_clear(&v);
        }
        json_decref(o);
    }
    /* the overflow cases say so */
    json_t *o = parse_sq(owners[6]);
    wl_verdict_t v;
    wl_row_eval(wl_table_find(t, "jobset.x-k8s.io/v1alpha2", "JobSet"), o, &v);
    assert_string_equal(v.why, "no minMember could be read: overflow");
    wl_verdict_clear(&v);
    json_decref(o);
    o = parse_sq(owners[7]);
    wl_row_eval(wl_table_find(t, "ray.io/v1", "RayCluster"), o, &v);
    assert_string_equal(v.why, "no minMember could be read: overflow");
    wl_verdict_clear(&v);
    json_decref(o);
    assert_int_equal(wl_row_eval(NULL, NULL, &v), -1);
    assert_int_equal(wl_row_eval(wl_table_row(t, 0), NULL, NULL), -1);
    wl_table_free(t);
}

/* ------------------------------------------------------------ expressions */

static void test_expr_values(void **state)
{
    (void)state;
    assert_int_equal(eval_ok("4", "{}"), 4);
    assert_int_equal(eval_ok("  a.b  ", "{'a':{'b':5}}"), 5);
    assert_int_equal(eval_ok("a|5", "{}"), 5);
    assert_int_equal(eval_ok("a | 5", "{'a':null}"), 5);
    assert_int_equal(eval_ok("a|5", "{'a':2}"), 2);
    assert_int_equal(eval_ok("a.b|0", "{'a':[1]}"), 0);
    assert_int_equal(eval_ok("1 + 2 * 3", "{}"), 7);
    assert_int_equal(eval_ok("(1 + 2) * 3", "{}"), 9);
    assert_int_equal(eval_ok("((2))*(a+1)", "{'a':3}"), 8);
    assert_int_equal(eval_ok("l.1.r", "{'l':[{'r':1},{'r':2}]}"), 2);
    assert_int_equal(eval_ok("l.9.r|6", "{'l':[{'r':1},{'r':2}]}"), 6);
    assert_int_equal(eval_ok("my_key-2.x", "{'my_key-2':{'x':3}}"), 3);
    assert_int_equal(eval_ok("3x", "{'3x':11}"), 11); /* a path may start with a digit */
    assert_int_equal(eval_ok("sum", "{'sum':12}"), 12);
    assert_int_equal(eval_ok("sum.x + 1", "{'sum':{'x':1}}"), 2);
    /* '*' over an object's values and an array's elements; missing ones are skipped */
    assert_int_equal(eval_ok("sum(m.*.r)", "{'m':{'x':{'r':1},'y':{'r':2},'z':{}}}"), 3);
    assert_int_equal(eval_ok("sum(l.*.r)", "{'l':[{'r':4},{'r':5},7]}"), 9);
    assert_int_equal(eval_ok("sum(l.*)", "{'l':[1,2,3]}"), 6);
    assert_int_equal(eval_ok("sum(l)", "{'l':[1,2,null,3]}"), 6);
    assert_int_equal(eval_ok("sum(m)", "{'m':{'a':1,'b':2}}"), 3);
    assert_int_equal(eval_ok("sum(m.a)", "{'m':{'a':1,'b':2}}"), 1);
    assert_int_equal(eval_ok("sum(*.n)", "{'a':{'n':1},'b':{'n':2}}"), 3);
    assert_int_equal(eval_ok("sum( l , 1 )", "{'l':[0,0,0]}"), 3);
    assert_int_equal(eval_ok("sum(l, 1)", "{'l':[]}"), 0);
    assert_int_equal(eval_ok("sum(m, r|1)", "{'m':{'a':{'r':3},'b':{}}}"), 4);
    assert_int_equal(eval_ok("sum(m.*.l, x)", "{'m':{'a':{'l':[{'x':1}]},'b':{'l':[{'x':2},{'x':3}]}}}"), 6);
    /* nested sums */
    assert_int_equal(eval_ok("sum(g, sum(items, n|1))", "{'g':[{'items':[{'n':2},{}]},{'items':[{'n':3}]}]}"), 6);
    assert_int_equal(eval_ok("2 * sum(g, 1 + sum(items, n|1) * 2)", "{'g':[{'items':[{'n':2}]},{'items':[]}]}"), 12);
    /* negative values are integers */
    assert_int_equal(eval_ok("a", "{'a':-2}"), -2);
    assert_int_equal(eval_ok("a + 5", "{'a':-2}"), 3);
    assert_int_equal(eval_ok("sum(l)", "{'l':[-1,-2]}"), -3);
    assert_int_equal(eval_ok("9223372036854775807", "{}"), INT64_MAX);
}

static void test_expr_errors(void **state)
{
    (void)state;
    /* missing paths, non-integers */
    eval_fails("a", "{}", "a missing");
    eval_fails("a.b.c", "{'a':{'b':{}}}", "a.b.c missing");
    eval_fails("a", "{'a':'3'}", "a is not an integer");
    eval_fails("a", "{'a':3.0}", "a is not an integer");
    eval_fails("a", "{'a':true}", "a is not an integer");
    eval_fails("a|1", "{'a':'3'}", "a is not an integer");
    eval_fails("a", "{'a':{'b':1}}", "a is not an integer");
    eval_fails("sum(l)", "{'l':[1,'2']}", "sum(l): a value is not an integer");
    eval_fails("sum(l)", "{'l':[[1]]}", "sum(l): a value is not an integer");
    eval_fails("sum(l)", "{'l':'1'}", "sum(l): a value is not an integer");
    eval_fails("sum(l, 1)", "{'l':3}", "sum(l, ...): l is not a list or map");
    eval_fails("sum(l, x)", "{'l':[{'x':1},{}]}", "x missing");
    eval_fails("sum(l)", "{}", "l missing");
    eval_fails("sum(l.*)", "{'l':[]}", "l.* missing");
    eval_fails("1 + a", "[1]", "a missing");
    /* overflow */
    eval_fails("9223372036854775807 + 1", "{}", "overflow");
    eval_fails("a * a", "{'a':4611686018427387904}", "overflow");
    eval_fails("a + 1", "{'a':9223372036854775807}", "overflow");
    eval_fails("0 + a + a", "{'a':-9223372036854775807}", "overflow");
    eval_fails("sum(l)", "{'l':[9223372036854775807,1]}", "sum(l): overflow");
    eval_fails("sum(l, x * 2)", "{'l':[{'x':4611686018427387904}]}", "overflow");
    /* syntax */
    eval_fails("99999999999999999999", "{}", "syntax error at column 1: integer too large");
    eval_fails("1 + 2 * 99999999999999999999", "{}", "syntax error at column 9: integer too large");
    eval_fails("a|99999999999999999999", "{}", "syntax error at column 3: integer too large");
    eval_fails("", "{}", "syntax error at column 1: expected a path");
    eval_fails("   ", "{}", "expected a path");
    eval_fails("1 +", "{}", "syntax error at column 4: expected a path");
    eval_fails("1 2", "{}", "syntax error at column 3: unexpected character");
    /* no negative literals: "-1" is a path (segments may hold '-'), "a - 1" no subtraction */
    eval_fails("-1", "{}", "-1 missing");
    eval_fails("a - 1", "{}", "unexpected character");
    eval_fails("a.", "{}", "expected a path");
    eval_fails("a..b", "{}", "expected a path");
    eval_fails(".a", "{}", "expected a path");
    eval_fails("a|", "{}", "expected an integer");
    eval_fails("a|x", "{}", "expected an integer");
    eval_fails("a|-1", "{}", "expected an integer");
    eval_fails("*", "{}", "'*' is only allowed in sum()'s path");
    eval_fails("a.*", "{'a':[1]}", "'*' is only allowed in sum()'s path");
    eval_fails("(1", "{}", "expected ')'");
    eval_fails("1)", "{}", "unexpected character");
    eval_fails("sum(a", "{}", "expected ')' closing sum(");
    eval_fails("sum(a,)", "{}", "expected a path");
    eval_fails("sum()", "{}", "expected a path");
    eval_fails("sum(a|1)", "{}", "expected ')' closing sum(");
    eval_fails("sum(1 + 2)", "{}", "expected ')' closing sum(");
    eval_fails("a == 1", "{}", "unexpected character");
    eval_fails("a\"b", "{}", "unexpected character");
    eval_fails("a b", "{}", "unexpected character");
    /* deep nesting and long text are refused, not recursed into */
    char deep[200];
    memset(deep, '(', 100);
    strcpy(deep + 100, "1");
    eval_fails(deep, "{}", "nested too deep");
    char sums[400] = "";
    for (int i = 0; i < 40; i++)
        strcat(sums, "sum(a,");
    eval_fails(sums, "{}", "nested too deep");
    char *longx = malloc(2000);
    memset(longx, 'a', 1999);
    longx[1999] = '\0';
    eval_fails(longx, "{}", "longer than 512 characters");
    free(longx);
    char err[64];
    int64_t v;
    assert_int_equal(wl_expr_eval(NULL, NULL, &v, err, sizeof err), -1);
    assert_int_equal(wl_expr_eval("a|3", NULL, &v, NULL, 0), 0);
    assert_int_equal(v, 3);
}

/* ------------------------------------------------------------ files */

#define HDR "apiVersion: ai-scheduler.aibee.cn/v1alpha1\nkind: WorkloadGroups\n"

static const char *good_yaml = "# ours\n"
                               "apiVersion: ai-scheduler.aibee.cn/v1alpha1\n"
                               "kind: WorkloadGroups\n"
                               "kinds:\n"
                               "- group: batch.volcano.sh\n"
                               "  kind: Job\n"
                               "  resource: jobs\n"
                               "  minMember:\n"
                               "  - spec.minAvailable\n"
                               "  - 4\n"
                               "  queue: [spec.queue]\n"
                               "  priorityClass: [spec.priorityClassName]\n"
                               "  members: {volcano.sh/task-spec: worker}\n"
                               "- group: kubeflow.org\n"
                               "  kind: PyTorchJob\n"
                               "  resource: pytorchjobs\n"
                               "  minMember: ['sum(spec.pytorchReplicaSpecs.*.replicas)']\n"
                               "  when: ['spec.runPolicy.suspend != true']\n"
                               "- group: ray.io\n"
                               "  kind: RayJob\n"
                               "  disabled: true\n"
                               "- group: \"\"\n"
                               "  kind: Pod\n"
                               "  disabled: yes-but-no\n";

static void test_load_yaml(void **state)
{
    (void)state;
    wl_table_t *t = wl_table_new_default();
    int n0 = wl_table_nrows(t);
    char err[512] = "";
    /* "yes-but-no" is a string, not a boolean */
    assert_int_equal(load_text(t, good_yaml, err, sizeof err, NULL), -1);
    assert_non_null(strstr(err, ": kinds[3].disabled: not true or false"));
    assert_int_equal(wl_table_nrows(t), n0);
    assert_null(wl_table_find(t, "batch.volcano.sh/v1alpha1", "Job"));

    char *ok = strdup(good_yaml);
    *strstr(ok, "- group: \"\"") = '\0';
    assert_int_equal(load_text(t, ok, err, sizeof err, NULL), 0);
    free(ok);
    assert_int_equal(wl_table_nrows(t), n0); /* one added, one replaced, one removed */
    assert_null(wl_table_find(t, "ray.io/v1", "RayJob"));
    assert_non_null(wl_table_find(t, "ray.io/v1", "RayCluster"));
    assert_non_null(wl_table_find(t, "batch/v1", "Job")); /* a Job of another group is another row */

    const wl_row_t *vj = wl_table_find(t, "batch.volcano.sh/v1alpha1", "Job");
    assert_non_null(vj);
    assert_string_equal(wl_row_resource(vj), "jobs");
    assert_string_equal(wl_row_group(vj), "batch.volcano.sh");
    check_verdict(t, "batch.volcano.sh/v1alpha1", "Job",
                  "{'spec':{'minAvailable':3,'queue':'vq','priorityClassName':'pc','tasks':[]}}",
                  (verdict_want_t){ 1, 3, "vq", "pc", NULL, 0 });
    check_verdict(t, "batch.volcano.sh/v1alpha1", "Job", "{'spec':{}}", (verdict_want_t){ 1, 4, NULL, NULL, NULL, 0 });
    labels_t l = { 0 };
    json_t *lj = parse_sq("{'volcano.sh/task-spec':'worker'}");
    labels_from_json(&l, lj, NULL, 0);
    assert_true(wl_row_admits(vj, &l));
    labels_free(&l);
    json_decref(lj);

    /* the replaced PyTorchJob reads only its own expression, and has a when */
    check_verdict(t, "kubeflow.org/v1", "PyTorchJob",
                  "{'spec':{'runPolicy':{'suspend':false,'schedulingPolicy':{'minAvailable':2}}," PT_SPECS "}}",
                  (verdict_want_t){ 1, 4, NULL, NULL, NULL, 0 });
    check_verdict(t, "kubeflow.org/v1", "PyTorchJob", "{'spec':{'runPolicy':{'suspend':true}," PT_SPECS "}}",
                  (verdict_want_t){ 0, 0, NULL, NULL, "suspend is true", 1 });
    /* a missing path makes a condition false, != too */
    check_verdict(t, "kubeflow.org/v1", "PyTorchJob", "{'spec':{" PT_SPECS "}}",
                  (verdict_want_t){ 0, 0, NULL, NULL, "spec.runPolicy.suspend is not set", 1 });

    /* a second file over the first: the added row can be disabled now */
    const char *more = "apiVersion: ai-scheduler.aibee.cn/v1alpha1\nkind: WorkloadGroups\n"
                       "kinds:\n- {group: batch.volcano.sh, kind: Job, disabled: true}\n"
                       "- {group: '', kind: Pod, disabled: false, resource: pods}\n";
    assert_int_equal(load_text(t, more, err, sizeof err, NULL), 0);
    assert_null(wl_table_find(t, "batch.volcano.sh/v1alpha1", "Job"));
    assert_non_null(wl_table_find(t, "v1", "Pod"));
    assert_int_equal(wl_table_nrows(t), n0 - 1);
    wl_table_free(t);
}

static void test_load_json(void **state)
{
    (void)state;
    wl_table_t *t = wl_table_new_default();
    char err[512] = "";
    const char *js = "{\"apiVersion\":\"ai-scheduler.aibee.cn/v1alpha1\",\"kind\":\"WorkloadGroups\",\"kinds\":["
                     "{\"group\":\"example.com\",\"kind\":\"Trainer\",\"resource\":\"trainers\","
                     "\"minMember\":[8],\"groupBy\":\"example.com/shard\"},"
                     "{\"group\":\"example.com\",\"kind\":\"Wrapper\",\"resource\":\"wrappers\"}]}";
    assert_int_equal(load_text(t, js, err, sizeof err, NULL), 0);
    check_verdict(t, "example.com/v1", "Trainer", "{}", (verdict_want_t){ 1, 8, NULL, NULL, NULL, 0 });
    assert_string_equal(wl_row_group_by(wl_table_find(t, "example.com/v1", "Trainer")), "example.com/shard");
    assert_false(wl_row_is_gang(wl_table_find(t, "example.com/v2", "Wrapper")));

    /* the parsed-document entry point */
    json_t *doc = parse_sq("{'apiVersion':'ai-scheduler.aibee.cn/v1alpha1','kind':'WorkloadGroups','kinds':["
                           "{'group':'example.com','kind':'Trainer','resource':'trainers','minMember':['2 * 3']}]}");
    assert_int_equal(wl_table_load_json(t, doc, "inline", err, sizeof err), 0);
    json_decref(doc);
    check_verdict(t, "example.com/v1", "Trainer", "{}", (verdict_want_t){ 1, 6, NULL, NULL, NULL, 0 });
    doc = parse_sq("{'kinds':[]}");
    assert_int_equal(wl_table_load_json(t, doc, "inline", err, sizeof err), -1);
    assert_string_equal(err, "inline: apiVersion: want ai-scheduler.aibee.cn/v1alpha1");
    json_decref(doc);
    assert_int_equal(wl_table_load_json(t, NULL, "inline", err, sizeof err), -1);
    /* from text: len bytes, no NUL needed */
    const char *yml = HDR "kinds: [{group: example.com, kind: Trainer, resource: trainers, minMember: [5]}]\nXXX";
    assert_int_equal(wl_table_load_string(t, yml, strlen(yml) - 3, "text", err, sizeof err), 0);
    check_verdict(t, "example.com/v1", "Trainer", "{}", (verdict_want_t){ 1, 5, NULL, NULL, NULL, 0 });
    assert_int_equal(wl_table_load_string(t, "  {", 3, "text", err, sizeof err), -1);
    assert_non_null(strstr(err, "text: line 1: JSON: "));
    assert_int_equal(wl_table_load_string(t, NULL, 0, "text", err, sizeof err), -1);
    wl_table_free(t);
}

typedef struct bad_file {
    const char *text, *want; /* want: the message after "FILE: " */
} bad_file_t;

static const bad_file_t bad_files[] = {
    { HDR "kinds:\n- {group: a.io, kind: A, resource: as}\n- {group: a.io, kind: B, resource: bs, minmember: [1]}\n",
      "kinds[1]: unknown key \"minmember\" (group, kind, resource, minMember, when, queue, priorityClass, groupBy, "
      "members, disabled)" },
    { HDR "kinds:\n- group: a.io\n  kind: A\n  resource: as\n  minMember: [spec.x, 'sum(spec.y']\n",
      "kinds[0].minMember[1]: \"sum(spec.y\": syntax error at column 11: expected ')' closing sum(" },
    { HDR "kinds:\n- {group: a.io, kind: A, minMember: [1]}\n",
      "kinds[0].resource: missing (the plural resource, e.g. pytorchjobs)" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: As}\n",
      "kinds[0].resource: \"As\" is not a lowercase resource name" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: a/s}\n",
      "kinds[0].resource: \"a/s\" is not a lowercase resource name" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: ''}\n",
      "kinds[0].resource: \"\" is not a lowercase resource name" },
    { HDR "kinds:\n- {kind: A, resource: as}\n", "kinds[0].group: missing (\"\" for the core group)" },
    { HDR "kinds:\n- {group: A_B, kind: A, resource: as}\n", "kinds[0].group: \"A_B\" is not an API group" },
    { HDR "kinds:\n- {group: a.io, resource: as}\n", "kinds[0].kind: missing" },
    { HDR "kinds:\n- {group: a.io, kind: 'a b', resource: as}\n", "kinds[0].kind: \"a b\" is not a kind" },
    { HDR "kinds:\n- {group: a.io, kind: [A], resource: as}\n", "kinds[0].kind: not a string" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: as, minMember: []}\n",
      "kinds[0].minMember: empty (leave it out for a pass-through row)" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: as, minMember: spec.x}\n", "kinds[0].minMember: not a list" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: as, minMember: [{a: 1}]}\n",
      "kinds[0].minMember[0]: not a string or integer" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: as, minMember: ['']}\n", "kinds[0].minMember[0]: empty" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: as, minMember: [1], when: ['spec.a = 1']}\n",
      "kinds[0].when[0]: \"spec.a = 1\": syntax error at column 8: expected == or !=" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: as, minMember: [1], when: ['spec.a == \"x']}\n",
      "kinds[0].when[0]: \"spec.a == \"x\": syntax error at column 13: unterminated string" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: as, minMember: [1], when: ['1 == 1']}\n",
      "kinds[0].when[0]: \"1 == 1\": compares two constants" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: as, minMember: [1], queue: ['spec.q|1']}\n",
      "kinds[0].queue[0]: \"spec.q|1\": syntax error at column 7: unexpected character after the path" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: as, minMember: [1], priorityClass: [[x]]}\n",
      "kinds[0].priorityClass[0]: not a string" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: as, minMember: [1], groupBy: 'a b'}\n",
      "kinds[0].groupBy: \"a b\" is not a label key" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: as, minMember: [1], members: [a]}\n",
      "kinds[0].members: not a map of label to value" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: as, minMember: [1], members: {a: [b]}}\n",
      "kinds[0].members: the value of a is not a label value" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: as, groupBy: x}\n",
      "kinds[0]: when, queue, priorityClass, groupBy and members need minMember" },
    { HDR "kinds:\n- {group: a.io, kind: A, disabled: true}\n",
      "kinds[0]: disables a.io/A, which is not in the table" },
    { HDR "kinds:\n- {group: a.io, kind: A, resource: as}\n- {group: a.io, kind: A, resource: bs}\n",
      "kinds[1]: a.io/A is in the file twice" },
    { HDR "kinds:\n- just a string\n", "kinds[0]: not a map" },
    { HDR "kinds: {}\n", "kinds: not a list" },
    { HDR, "kinds: missing" },
    { HDR "kinds: []\nextra: 1\n", "unknown key \"extra\" (apiVersion, kind, kinds)" },
    { "apiVersion: v1\nkind: WorkloadGroups\nkinds: []\n", "apiVersion: want ai-scheduler.aibee.cn/v1alpha1" },
    { "apiVersion: ai-scheduler.aibee.cn/v1alpha1\nkind: Config\nkinds: []\n", "kind: want WorkloadGroups" },
    { "- a\n- b\n", "expected a map with apiVersion: ai-scheduler.aibee.cn/v1alpha1, kind: WorkloadGroups and kinds" },
    { "", "empty document" },
    { HDR "kinds: [\n", "line 4: YAML: did not find expected node content" },
    { HDR "kinds: []\nkind: x\n", "line 4: key \"kind\" twice" },
    { HDR "kinds: []\n---\na: 1\n", "only one YAML document is allowed" },
    { HDR "kinds: []\n? [a]\n: 1\n", "line 4: a map key is not a string" },
    { "{\"apiVersion\": 1,", "line 1: JSON: " },
    { "{\"kinds\": [], \"kinds\": []}", "line 1: JSON: duplicate object key" },
};

static void test_load_bad_files(void **state)
{
    (void)state;
    wl_table_t *t = wl_table_new_default();
    int n0 = wl_table_nrows(t);
    const wl_row_t *pt = wl_table_find(t, "kubeflow.org/v1", "PyTorchJob");
    for (size_t i = 0; i < sizeof bad_files / sizeof bad_files[0]; i++) {
        char err[512] = "";
        char *path = NULL;
        if (load_text(t, bad_files[i].text, err, sizeof err, &path) != -1)
            fail_msg("bad file %zu loaded: %s", i, bad_files[i].text);
        char want[700];
        snprintf(want, sizeof want, "%s: %s", path, bad_files[i].want);
        if (strncmp(err, want, strlen(want)) != 0)
            fail_msg("bad file %zu: \"%s\", want \"%s\"", i, err, want);
        free(path);
        assert_int_equal(wl_table_nrows(t), n0);
        assert_ptr_equal(wl_table_find(t, "kubeflow.org/v1", "PyTorchJob"), pt);
    }
    /* a failed file leaves the table as it was, even after rows of it were applied */
    char err[512];
    const char *half = HDR "kinds:\n- {group: ray.io, kind: RayJob, disabled: true}\n"
                           "- {group: kubeflow.org, kind: PyTorchJob, resource: pytorchjobs}\n- 3\n";
    assert_int_equal(load_text(t, half, err, sizeof err, NULL), -1);
    assert_non_null(wl_table_find(t, "ray.io/v1", "RayJob"));
    assert_ptr_equal(wl_table_find(t, "kubeflow.org/v1", "PyTorchJob"), pt);
    assert_true(wl_row_is_gang(pt));

    assert_int_equal(wl_table_load_file(t, "/nonexistent/rules.yaml", err, sizeof err), -1);
    assert_string_equal(err, "/nonexistent/rules.yaml: No such file or directory");

    /* aliases that expand exponentially are cut off */
    sbuf_t b = { 0 };
    sbuf_puts(&b, HDR "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i < 10; i++)
        sbuf_printf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i - 1, i - 1,
                    i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
    sbuf_puts(&b, "kinds: []\n");
    assert_int_equal(load_text(t, b.data, err, sizeof err, NULL), -1);
    assert_non_null(strstr(err, "too many nodes"));
    sbuf_free(&b);
    /* deep nesting */
    sbuf_puts(&b, HDR "kinds: ");
    for (int i = 0; i < 200; i++)
        sbuf_puts(&b, "[");
    assert_int_equal(load_text(t, b.data, err, sizeof err, NULL), -1);
    sbuf_reset(&b);
    sbuf_puts(&b, HDR "kinds: ");
    for (int i = 0; i < 100; i++)
        sbuf_puts(&b, "[");
    for (int i = 0; i < 100; i++)
        sbuf_puts(&b, "]");
    assert_int_equal(load_text(t, b.data, err, sizeof err, NULL), -1);
    assert_non_null(strstr(err, "nested too deep"));
    sbuf_free(&b);
    assert_int_equal(wl_table_nrows(t), n0);
    wl_table_free(t);
}

/* ------------------------------------------------------------ find, paths, names */

static void test_find(void **state)
{
    (void)state;
    wl_table_t *t = wl_table_new_default();
    const wl_row_t *r = wl_table_find(t, "kubeflow.org/v1", "PyTorchJob");
    assert_non_null(r);
    assert_string_equal(wl_row_kind(r), "PyTorchJob");
    assert_string_equal(wl_row_group(r), "kubeflow.org");
    assert_string_equal(wl_row_resource(r), "pytorchjobs");
    r = wl_table_find(t, "v1", "Pod");
    assert_non_null(r);
    assert_string_equal(wl_row_group(r), "");
    assert_string_equal(wl_row_resource(r), "pods");
    r = wl_table_find(t, "apps/v1", "Deployment");
    assert_non_null(r);
    assert_string_equal(wl_row_resource(r), "deployments");
    assert_null(wl_table_find(t, "apps/v1", "DaemonSet"));
    assert_null(wl_table_find(t, "example.com/v1", "PyTorchJob"));
    assert_null(wl_table_find(t, "v1", "ReplicaSet"));
    assert_null(wl_table_find(t, "apps/v1", "pod"));
    assert_null(wl_table_find(t, NULL, "Pod"));
    assert_null(wl_table_find(NULL, "v1", "Pod"));
    assert_null(wl_table_row(t, -1));
    assert_null(wl_table_row(t, wl_table_nrows(t)));
    /* every default kind is there once */
    assert_int_equal(wl_table_nrows(t), 16);
    for (int i = 0; i < wl_table_nrows(t); i++)
        for (int j = i + 1; j < wl_table_nrows(t); j++)
            assert_false(!strcmp(wl_row_group(wl_table_row(t, i)), wl_row_group(wl_table_row(t, j))) &&
                         !strcmp(wl_row_kind(wl_table_row(t, i)), wl_row_kind(wl_table_row(t, j))));
    wl_table_free(t);
}

static void test_object_path(void **state)
{
    (void)state;
    wl_table_t *t = wl_table_new_default();
    const wl_row_t *pt = wl_table_find(t, "kubeflow.org/v1", "PyTorchJob");
    const wl_row_t *pod = wl_table_find(t, "v1", "Pod");
    char *p = wl_object_path(pt, "kubeflow.org/v1", "ml", "bert");
    assert_string_equal(p, "/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs/bert");
    free(p);
    p = wl_object_path(pod, "v1", "default", "p-0");
    assert_string_equal(p, "/api/v1/namespaces/default/pods/p-0");
    free(p);
    p = wl_object_path(pt, "kubeflow.org/v1", "m l", "a%b?c");
    assert_string_equal(p, "/apis/kubeflow.org/v1/namespaces/m%20l/pytorchjobs/a%25b%3Fc");
    free(p);
    assert_null(wl_object_path(pt, "kubeflow.org/v1", "ml", ""));
    assert_null(wl_object_path(pt, "kubeflow.org/v1", "ml", "a/b"));
    assert_null(wl_object_path(pt, "kubeflow.org/v1", "ml", ".."));
    assert_null(wl_object_path(pt, "kubeflow.org/v1", "", "x"));
    assert_null(wl_object_path(pt, "kubeflow.org/v1", NULL, "x"));
    assert_null(wl_object_path(pt, "kubeflow.org/v1", "a/b", "x"));
    assert_null(wl_object_path(pt, "example.com/v1", "ml", "x"));
    assert_null(wl_object_path(pt, "v1", "ml", "x"));
    assert_null(wl_object_path(pt, "kubeflow.org/", "ml", "x"));
    assert_null(wl_object_path(pt, "kubeflow.org/v1/x", "ml", "x"));
    assert_null(wl_object_path(pod, "apps/v1", "ml", "x"));
    assert_null(wl_object_path(NULL, "v1", "ml", "x"));
    wl_table_free(t);
}

static uint32_t fnv(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

static void check_name(const char *kind, const char *name, const char *suffix, const char *want)
{
    char *got = wl_group_name(kind, name, suffix);
    assert_non_null(got);
    if (strcmp(got, want))
        fail_msg("wl_group_name(%s, %s, %s) = %s, want %s", kind, name, suffix ? suffix : "NULL", got, want);
    free(got);
}

static void test_group_name(void **state)
{
    (void)state;
    char want[128], whole[256];
    check_name("PyTorchJob", "bert", NULL, "pytorchjob-bert");
    check_name("LeaderWorkerSet", "vllm", "0", "leaderworkerset-vllm-0");
    check_name("Job", "my-job", "", "job-my-job");
    /* changed by sanitising: hashed, so that my.job and my-job do not meet */
    snprintf(want, sizeof want, "job-my-job-%08x", fnv("Job/my.job"));
    check_name("Job", "my.job", NULL, want);
    snprintf(want, sizeof want, "leaderworkerset-lws-a-b-%08x", fnv("LeaderWorkerSet/lws/A_b"));
    check_name("LeaderWorkerSet", "lws", "A_b", want);
    snprintf(want, sizeof want, "job-x-%08x", fnv("Job/x/."));
    check_name("Job", "x", ".", want);
    /* long: cut to 54 and the hash of the whole */
    char name[100];
    memset(name, 'n', 80);
    name[80] = '\0';
    snprintf(whole, sizeof whole, "PyTorchJob/%s/3", name);
    snprintf(want, sizeof want, "pytorchjob-%.*s-%08x", 54 - 11, name, fnv(whole));
    char *got = wl_group_name("PyTorchJob", name, "3");
    assert_int_equal(strlen(got), 63);
    assert_string_equal(got, want);
    free(got);
    /* exactly 63 is kept */
    memset(name, 'n', 63 - 4);
    name[63 - 4] = '\0';
    snprintf(want, sizeof want, "job-%s", name);
    check_name("Job", name, NULL, want);
    /* a cut that ends on '-' drops it */
    memset(name, 'a', 80);
    name[49] = '-';
    snprintf(whole, sizeof whole, "Job/%s", name);
    snprintf(want, sizeof want, "job-%.49s-%08x", name, fnv(whole));
    check_name("Job", name, NULL, want);
    /* odd characters only */
    snprintf(want, sizeof want, "%08x", fnv("__/.."));
    check_name("__", "..", NULL, want);
    assert_null(wl_group_name("Job", "", NULL));
    assert_null(wl_group_name(NULL, "x", NULL));
    assert_null(wl_group_name("", "x", NULL));
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pytorchjob),
        cmocka_unit_test(test_tfjob_mpijob),
        cmocka_unit_test(test_jobset_and_jobs),
        cmocka_unit_test(test_lws_ray_trainjob),
        cmocka_unit_test(test_untrusted_owners),
        cmocka_unit_test(test_expr_values),
        cmocka_unit_test(test_expr_errors),
        cmocka_unit_test(test_load_yaml),
        cmocka_unit_test(test_load_json),
        cmocka_unit_test(test_load_bad_files),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_object_path),
        cmocka_unit_test(test_group_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
