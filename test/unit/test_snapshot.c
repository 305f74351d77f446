/* test_snapshot.c -- the ClusterSnapshot document (pkg/snapshot): object
 * files (JSON, multi-document YAML, Lists), what sanitizing strips, that
 * an anonymized snapshot keeps every reference consistent (the structure
 * the scheduler decides on) and leaks none of the names, and the check of
 * a document read back. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "scheduler/capabilities.h"
#include "snapshot/objfile.h"
#include "snapshot/snapshot.h"
#include "tmpdir.h"

static json_t *J(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    if (!j)
        fail_msg("bad test JSON at %d: %s", e.position, e.text);
    return j;
}

static const char *S(json_t *root, const char *path)
{
    /* a dotted path with [n] for array indexes, keys may not contain '.' */
    char buf[512];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *cur = root;
    for (char *tok = strtok(buf, "."); tok && cur; tok = strtok(NULL, ".")) {
        char *br = strchr(tok, '[');
        if (br) {
            *br = '\0';
            if (*tok)
                cur = json_object_get(cur, tok);
            cur = json_array_get(cur, (size_t)atoi(br + 1));
        } else {
            cur = json_object_get(cur, tok);
        }
    }
    return json_string_value(cur);
}

static void test_objfile_yaml(void **st)
{
    (void)st;
    char err[300] = "";
    const char *y = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  priority: 10\n  x: 1.5\n  q: \"8\"\n"
                    "  b: true\n  n: ~\n---\n# only a comment\n---\nkind: Node\n";
    json_t *docs = objfile_parse(y, strlen(y), err, sizeof err);
    assert_non_null(docs);
    assert_int_equal(json_array_size(docs), 2);
    json_t *spec = json_object_get(json_array_get(docs, 0), "spec");
    assert_true(json_is_integer(json_object_get(spec, "priority")));
    assert_int_equal(json_integer_value(json_object_get(spec, "priority")), 10);
    assert_true(json_is_real(json_object_get(spec, "x")));
    assert_string_equal(json_string_value(json_object_get(spec, "q")), "8");
    assert_true(json_is_true(json_object_get(spec, "b")));
    assert_true(json_is_null(json_object_get(spec, "n")));
    json_decref(docs);

    assert_null(objfile_parse("a: [1, 2\n", 9, err, sizeof err));
    assert_non_null(strstr(err, "line "));
    const char *js = " {\"kind\":\"Pod\", \"kind\":\"Node\"}";
    assert_null(objfile_parse(js, strlen(js), err, sizeof err));
    assert_non_null(strstr(err, "JSON"));
}

static void test_objfile_load(void **st)
{
    (void)st;
    char path[256], err[400] = "";
    int fd = mkstemp(tmp_template(path, sizeof path, "objfile"));
    assert_true(fd >= 0);
    const char *y = "kind: List\nitems:\n- {kind: Pod, metadata: {name: a}}\n- {kind: Pod, metadata: {name: b}}\n"
                    "---\nkind: PodGroup\nmetadata: {name: g}\n";
    assert_int_equal(write(fd, y, strlen(y)), (ssize_t)strlen(y));
    close(fd);
    json_t *objs = objfile_load(path, err, sizeof err);
    assert_non_null(objs);
    assert_int_equal(json_array_size(objs), 3);
    assert_string_equal(S(objs, "[1].metadata.name"), "b");
    assert_string_equal(S(objs, "[2].kind"), "PodGroup");
    json_decref(objs);
    assert_null(objfile_load_one(path, err, sizeof err));
    assert_non_null(strstr(err, "2 documents, one expected"));

    FILE *f = fopen(path, "w");
    fputs("- 1\n", f);
    fclose(f);
    assert_null(objfile_load(path, err, sizeof err));
    assert_non_null(strstr(err, "is not a Kubernetes object"));
    unlink(path);
    assert_null(objfile_load(path, err, sizeof err));
    assert_non_null(strstr(err, "No such file"));
}

static void test_sanitize(void **st)
{
    (void)st;
    json_t *pod = J("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"managedFields\":[{}],\"annotations\":{"
                    "\"kubectl.kubernetes.io/last-applied-configuration\":\"{secret}\",\"keep\":\"x\"}},"
                    "\"spec\":{\"containers\":[{\"name\":\"c\",\"command\":[\"sh\",\"-c\",\"pw=1\"],\"args\":[\"a\"],"
                    "\"env\":[{\"name\":\"PW\",\"value\":\"hunter2\"},{\"name\":\"K\",\"valueFrom\":{\"secretKeyRef\":"
                    "{\"name\":\"s\",\"key\":\"k\"}}}],\"resources\":{\"requests\":{\"cpu\":\"1\"}}}],"
                    "\"initContainers\":[{\"name\":\"i\",\"env\":[{\"name\":\"X\",\"value\":\"y\"}]}]}}");
    assert_int_equal(snapshot_sanitize(pod), 0);
    char *txt = json_dumps(pod, JSON_COMPACT);
    assert_null(strstr(txt, "hunter2"));
    assert_null(strstr(txt, "pw=1"));
    assert_null(strstr(txt, "secretKeyRef"));
    assert_null(strstr(txt, "managedFields"));
    assert_null(strstr(txt, "last-applied"));
    assert_null(strstr(txt, "\"y\""));
    assert_non_null(strstr(txt, "\"name\":\"PW\""));
    assert_non_null(strstr(txt, "\"name\":\"K\""));
    assert_non_null(strstr(txt, "\"keep\":\"x\""));
    assert_non_null(strstr(txt, "\"cpu\":\"1\""));
    free(txt);
    json_decref(pod);

    json_t *rs = J("{\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"r\"},\"spec\":{\"template\":{\"spec\":{"
                   "\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"T\",\"value\":\"tok\"}]}]}}}}");
    snapshot_sanitize(rs);
    txt = json_dumps(rs, JSON_COMPACT);
    assert_null(strstr(txt, "tok"));
    free(txt);
    json_decref(rs);

    json_t *sec = J("{\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"},\"data\":{\"k\":\"dg==\"}}");
    assert_int_equal(snapshot_sanitize(sec), 1);
    json_decref(sec);
}

/* A small cluster with every kind of reference the anonymizer must keep. */
static const char *cluster_json =
    "["
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-host-a\",\"uid\":\"u-n1\",\"labels\":{"
    "\"kubernetes.io/hostname\":\"gpu-host-a\",\"topology.kubernetes.io/zone\":\"zone-east\",\"kubernetes.io/os\":"
    "\"linux\",\"nvidia.com/gpu.memory\":\"81920\",\"team\":\"alice\"}},\"spec\":{\"taints\":[{\"key\":\"dedicated\","
    "\"value\":\"alice\",\"effect\":\"NoSchedule\"}]},\"status\":{\"allocatable\":{\"cpu\":\"32\",\"nvidia.com/gpu\":"
    "\"8\"},\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.1.2.3\"}],\"images\":[{\"names\":["
    "\"registry.corp/secret-model:1\"],\"sizeBytes\":5}]}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-host-b\",\"labels\":{"
    "\"kubernetes.io/hostname\":\"gpu-host-b\",\"topology.kubernetes.io/zone\":\"zone-west\"}},\"status\":{"
    "\"allocatable\":{\"cpu\":\"32\"}}},"
    "{\"apiVersion\":\"resource.aibee.cn/v1alpha1\",\"kind\":\"Pool\",\"metadata\":{\"name\":\"training\"},\"spec\":{"
    "\"nodeSelector\":{\"matchLabels\":{\"topology.kubernetes.io/zone\":\"zone-east\"}},\"borrowingPools\":["
    "\"inference\"]}},"
    "{\"apiVersion\":\"resource.aibee.cn/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{\"name\":\"research\"},\"spec\":{"
    "\"resources\":{\"gpu\":{\"quota\":8}}}},"
    "{\"apiVersion\":\"resource.aibee.cn/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{\"name\":\"team-vision\"},"
    "\"spec\":{\"parentQueue\":\"research\",\"pools\":{\"training\":{\"resources\":{\"gpu\":{\"quota\":4}}}}}},"
    "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"llm-pretrain\","
    "\"namespace\":\"ml-secret\"},\"spec\":{\"minMember\":2}},"
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"web-7f9\",\"namespace\":"
    "\"ml-secret\",\"uid\":\"u-rs\"},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"frontend\"}},\"template\":{"
    "\"metadata\":{\"labels\":{\"app\":\"frontend\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
    "\"registry.corp/web:2\"}]}}}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolume\",\"metadata\":{\"name\":\"pv-ckpt\"},\"spec\":{"
    "\"storageClassName\":\"fast-ssd\",\"claimRef\":{\"name\":\"ckpt-claim\",\"namespace\":\"ml-secret\"},"
    "\"nodeAffinity\":{\"required\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
    "\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"gpu-host-a\"]}]}]}},\"local\":{\"path\":"
    "\"/mnt/alice\"}}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"ckpt-claim\",\"namespace\":"
    "\"ml-secret\"},\"spec\":{\"volumeName\":\"pv-ckpt\",\"storageClassName\":\"fast-ssd\"}},"
    "{\"apiVersion\":\"policy/v1beta1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{\"name\":\"web-pdb\","
    "\"namespace\":\"ml-secret\"},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"frontend\"}},\"minAvailable\":1}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"worker-0\",\"namespace\":\"ml-secret\",\"uid\":"
    "\"u-p0\",\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"llm-pretrain\",\"resource.aibee.cn/queue\":"
    "\"team-vision\",\"app\":\"frontend\"},\"annotations\":{\"resource.aibee.cn/pool\":\"training\","
    "\"resource.aibee.cn/preempt-min-runtime\":\"10m\",\"owner-email\":\"alice@corp\"},\"ownerReferences\":[{"
    "\"kind\":\"ReplicaSet\",\"name\":\"web-7f9\",\"uid\":\"u-rs\",\"controller\":true}]},\"spec\":{\"nodeName\":"
    "\"gpu-host-a\",\"schedulerName\":\"ai-scheduler\",\"priority\":100,\"priorityClassName\":\"high-train\","
    "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
    "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"gpu-host-b\"]}]}]}},"
    "\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"labelSelector\":{"
    "\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"In\",\"values\":[\"frontend\"]}]},\"topologyKey\":"
    "\"topology.kubernetes.io/zone\",\"namespaces\":[\"ml-secret\"]}]}},\"tolerations\":[{\"key\":\"dedicated\","
    "\"operator\":\"Equal\",\"value\":\"alice\"}],\"volumes\":[{\"name\":\"v\",\"persistentVolumeClaim\":{"
    "\"claimName\":\"ckpt-claim\"}}],\"containers\":[{\"name\":\"c\",\"image\":\"registry.corp/secret-model:1\","
    "\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"4\"}}}]},\"status\":{\"phase\":\"Running\",\"podIP\":"
    "\"10.9.9.9\"}},"
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"sys\",\"namespace\":\"default\"},\"spec\":{"
    "\"priorityClassName\":\"system-node-critical\",\"containers\":[]}}"
    "]";

static json_t *cluster_doc(void)
{
    return snapshot_doc(J(cluster_json), NULL, 1700000000000LL);
}

static json_t *item(json_t *doc, int i)
{
    return json_array_get(json_object_get(doc, "items"), (size_t)i);
}

static void test_anonymize_structure(void **st)
{
    (void)st;
    json_t *doc = cluster_doc();
    int renamed = snapshot_anonymize(doc);
    assert_true(renamed > 10);
    char *txt = json_dumps(doc, JSON_COMPACT);
    static const char *const secrets[] = { "gpu-host",  "zone-east", "zone-west",   "alice",         "training",
                                           "inference", "research",  "team-vision", "llm-pretrain",  "ml-secret",
                                           "web-7f9",   "frontend",  "pv-ckpt",     "ckpt-claim",    "fast-ssd",
                                           "web-pdb",   "worker-0",  "high-train",  "registry.corp", "10.1.2.3",
                                           "10.9.9.9",  "/mnt/alice" };
    for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++)
        if (strstr(txt, secrets[i]))
            fail_msg("\"%s\" is still in the anonymized snapshot: %s", secrets[i], txt);
    free(txt);

    json_t *n1 = item(doc, 0), *n2 = item(doc, 1), *pool = item(doc, 2), *q1 = item(doc, 3), *q2 = item(doc, 4);
    json_t *pg = item(doc, 5), *rs = item(doc, 6), *pv = item(doc, 7), *pvc = item(doc, 8), *pdb = item(doc, 9);
    json_t *pod = item(doc, 10), *sys = item(doc, 11);
    const char *n1name = S(n1, "metadata.name"), *n2name = S(n2, "metadata.name");
    assert_string_not_equal(n1name, n2name);
    assert_memory_equal(n1name, "node-", 5);
    /* the node's own hostname label, the pod's binding, a PV's node affinity, a matchFields term */
    assert_string_equal(S(pod, "spec.nodeName"), n1name);
    assert_string_equal(S(pv, "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]"), n1name);
    assert_string_equal(S(pod, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                               "nodeSelectorTerms[0].matchFields[0].values[0]"),
                        n2name);
    /* topology values renamed, consistently: the pool still selects node 1 only */
    /* dotted keys: the labels objects read directly */
    json_t *l1 = json_object_get(json_object_get(n1, "metadata"), "labels");
    json_t *l2 = json_object_get(json_object_get(n2, "metadata"), "labels");
    const char *zone1 = json_string_value(json_object_get(l1, "topology.kubernetes.io/zone"));
    const char *zone2 = json_string_value(json_object_get(l2, "topology.kubernetes.io/zone"));
    assert_non_null(zone1);
    assert_string_not_equal(zone1, zone2);
    json_t *ml = json_object_get(json_object_get(json_object_get(pool, "spec"), "nodeSelector"), "matchLabels");
    assert_string_equal(json_string_value(json_object_get(ml, "topology.kubernetes.io/zone")), zone1);
    assert_string_equal(json_string_value(json_object_get(l1, "kubernetes.io/hostname")), n1name);
    /* kept: label keys, the OS, numbers */
    assert_string_equal(json_string_value(json_object_get(l1, "kubernetes.io/os")), "linux");
    assert_string_equal(json_string_value(json_object_get(l1, "nvidia.com/gpu.memory")), "81920");
    assert_null(json_object_get(json_object_get(n1, "status"), "addresses"));
    /* a taint and its toleration still match */
    assert_string_equal(S(n1, "spec.taints[0].value"), S(pod, "spec.tolerations[0].value"));
    /* queues, pools, gangs, owners, claims */
    json_t *pl = json_object_get(json_object_get(pod, "metadata"), "labels");
    json_t *pa = json_object_get(json_object_get(pod, "metadata"), "annotations");
    assert_string_equal(json_string_value(json_object_get(pl, "scheduling.x-k8s.io/pod-group")),
                        S(pg, "metadata.name"));
    assert_string_equal(json_string_value(json_object_get(pl, "resource.aibee.cn/queue")), S(q2, "metadata.name"));
    assert_string_equal(S(q2, "spec.parentQueue"), S(q1, "metadata.name"));
    assert_non_null(json_object_get(json_object_get(json_object_get(q2, "spec"), "pools"), S(pool, "metadata.name")));
    assert_string_equal(json_string_value(json_object_get(pa, "resource.aibee.cn/pool")), S(pool, "metadata.name"));
    assert_string_equal(json_string_value(json_object_get(pa, "resource.aibee.cn/preempt-min-runtime")), "10m");
    assert_string_equal(S(pod, "metadata.namespace"), S(pg, "metadata.namespace"));
    assert_string_equal(S(pod, "metadata.ownerReferences[0].name"), S(rs, "metadata.name"));
    assert_string_equal(S(pod, "metadata.ownerReferences[0].uid"), "u-rs");
    assert_string_equal(S(pod, "spec.volumes[0].persistentVolumeClaim.claimName"), S(pvc, "metadata.name"));
    assert_string_equal(S(pv, "spec.claimRef.name"), S(pvc, "metadata.name"));
    assert_string_equal(S(pvc, "spec.volumeName"), S(pv, "metadata.name"));
    assert_string_equal(S(pvc, "spec.storageClassName"), S(pv, "spec.storageClassName"));
    /* selectors select what they did */
    const char *app = json_string_value(json_object_get(pl, "app"));
    assert_string_equal(S(rs, "spec.selector.matchLabels.app"), app);
    assert_string_equal(S(rs, "spec.template.metadata.labels.app"), app);
    assert_string_equal(S(pdb, "spec.selector.matchLabels.app"), app);
    assert_string_equal(S(pod, "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]."
                               "labelSelector.matchExpressions[0].values[0]"),
                        app);
    assert_string_equal(S(pod, "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]."
                               "namespaces[0]"),
                        S(pod, "metadata.namespace"));
    /* image locality: the node's image and the pod's are still one */
    assert_string_equal(S(n1, "status.images[0].names[0]"), S(pod, "spec.containers[0].image"));
    /* what decisions depend on, untouched */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(pod, "spec"), "priority")), 100);
    assert_string_equal(S(pod, "spec.schedulerName"), "ai-scheduler");
    json_t *req = json_object_get(
        json_object_get(json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0), "resources"),
        "requests");
    assert_string_equal(json_string_value(json_object_get(req, "nvidia.com/gpu")), "4");
    assert_string_equal(S(sys, "metadata.namespace"), "default");
    assert_string_equal(S(sys, "spec.priorityClassName"), "system-node-critical");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(pg, "spec"), "minMember")), 2);
    assert_null(json_object_get(json_object_get(pod, "status"), "podIP"));
    json_decref(doc);
}

static void test_anonymize_stable(void **st)
{
    (void)st;
    json_t *a = cluster_doc(), *b = cluster_doc();
    snapshot_anonymize(a);
    snapshot_anonymize(b);
    assert_true(json_equal(a, b));
    json_decref(a);
    json_decref(b);
}

static void test_doc_and_check(void **st)
{
    (void)st;
    char err[300] = "";
    json_t *doc = snapshot_doc(J("[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n\"}}]"),
                               J("{\"schedulerName\":\"x\"}"), 1700000000000LL);
    assert_string_equal(S(doc, "apiVersion"), SNAPSHOT_API_VERSION);
    assert_string_equal(S(doc, "kind"), SNAPSHOT_KIND);
    assert_string_equal(S(doc, "takenAt"), "2023-11-14T22:13:20Z");
    assert_string_equal(S(doc, "config.schedulerName"), "x");
    assert_int_equal(snapshot_check(doc, err, sizeof err), 0);
    json_decref(doc);
    doc = snapshot_doc(json_array(), NULL, 0);
    assert_true(json_is_null(json_object_get(doc, "config")));
    assert_int_equal(snapshot_check(doc, err, sizeof err), 0);
    json_array_append_new(json_object_get(doc, "items"), J("{\"kind\":\"Pod\"}"));
    assert_int_equal(snapshot_check(doc, err, sizeof err), -1);
    assert_string_equal(err, "items[0] is not an object with apiVersion, kind and metadata.name");
    json_object_set_new(doc, "kind", json_string("Other"));
    assert_int_equal(snapshot_check(doc, err, sizeof err), -1);
    assert_non_null(strstr(err, "kind Other"));
    json_decref(doc);
    json_t *arr = json_array();
    assert_int_equal(snapshot_check(arr, err, sizeof err), -1);
    json_decref(arr);
}

static void test_kinds(void **st)
{
    (void)st;
    int n = 0;
    const snapshot_kind_t *k = snapshot_kinds(&n);
    assert_int_equal(n, 18);
    /* what a pod refers to comes before it */
    assert_string_equal(k[n - 1].kind, "Pod");
    assert_string_equal(k[n - 2].kind, "Node");
    for (int i = 0; i < n; i++)
        assert_string_not_equal(k[i].kind, "Secret");
}

int main(void)
{
    capabilities_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_objfile_yaml),
        cmocka_unit_test(test_objfile_load),
        cmocka_unit_test(test_sanitize),
        cmocka_unit_test(test_anonymize_structure),
        cmocka_unit_test(test_anonymize_stable),
        cmocka_unit_test(test_doc_and_check),
        cmocka_unit_test(test_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
