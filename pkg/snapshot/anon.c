/* anon.c -- snapshot_anonymize: one map from every identity string to a
 * pseudonym, applied wherever the scheduler compares such strings, so that
 * the same things still match (a selector its nodes, a pod its PodGroup, an
 * owner reference its ReplicaSet, a claim its volume). */
#include "snapshot/snapshot.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "fairshare/fairshare.h"
#include "gang/gang.h"
#include "gpu/gpu.h"
#include "pool/pool.h"

typedef struct anon {
    json_t *map; /* original -> pseudonym */
    int next;
} anon_t;

/* Strings that carry no identity or whose value means something to the
 * scheduler: kept as they are. Pseudonyms ("ns-3", "node-7", "x-12") can
 * never be one of them, so a pseudonym never equals a kept string. */
static int keep_string(const char *s)
{
    if (!*s || !strcmp(s, "default") || !strncmp(s, "kube-", 5) || !strncmp(s, "system-", 7) ||
        !strncmp(s, "system:", 7) || !strcmp(s, "true") || !strcmp(s, "false"))
        return 1;
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    int digits = 0;
    for (; *p; p++) {
        if (isdigit((unsigned char)*p))
            digits++;
        else if (*p != '.')
            return 0;
    }
    return digits > 0; /* a number: Gt/Lt and the GPU memory label compare it */
}

static const char *pseudo(anon_t *a, const char *s, const char *prefix)
{
    if (keep_string(s))
        return s;
    json_t *got = json_object_get(a->map, s);
    if (got)
        return json_string_value(got);
    char buf[64];
    if (!strncmp(s, GPU_RESERVATION_PREFIX, strlen(GPU_RESERVATION_PREFIX)))
        snprintf(buf, sizeof buf, "%s%s-%d", GPU_RESERVATION_PREFIX, prefix, ++a->next); /* found by prefix */
    else
        snprintf(buf, sizeof buf, "%s-%d", prefix, ++a->next);
    json_object_set_new(a->map, s, json_string(buf));
    return json_string_value(json_object_get(a->map, s));
}

/* Replaces the string at o[key] (if a string) by its pseudonym. */
static void map_field(anon_t *a, json_t *o, const char *key, const char *prefix)
{
    json_t *v = json_object_get(o, key);
    if (json_is_string(v))
        json_object_set_new(o, key, json_string(pseudo(a, json_string_value(v), prefix)));
}

static void map_strings(anon_t *a, json_t *arr, const char *prefix)
{
    size_t i;
    json_t *v;
    json_array_foreach (arr, i, v)
        if (json_is_string(v))
            json_array_set_new(arr, i, json_string(pseudo(a, json_string_value(v), prefix)));
}

/* Label values the scheduler reads for their meaning, not as names. */
static int keep_label_value(const char *key)
{
    static const char *const keys[] = { "kubernetes.io/os",        "kubernetes.io/arch", "beta.kubernetes.io/os",
                                        "beta.kubernetes.io/arch", GPU_LABEL_MANAGED_BY, GPU_LABEL_RESERVATION,
                                        FS_PREEMPTIBLE_LABEL };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(key, keys[i]))
            return 1;
    return 0;
}

static const char *label_value(anon_t *a, const char *key, const char *v)
{
    if (keep_label_value(key))
        return v;
    if (!strcmp(key, "kubernetes.io/hostname"))
        return pseudo(a, v, "node");
    return pseudo(a, v, "v");
}

/* {key: value} maps: labels, nodeSelector, Service and RC selectors. */
static void map_label_map(anon_t *a, json_t *m)
{
    const char *k;
    json_t *v;
    if (!json_is_object(m))
        return;
    json_object_foreach (m, k, v)
        if (json_is_string(v))
            json_object_set_new(m, k, json_string(label_value(a, k, json_string_value(v))));
}

/* [{key, operator, values}] of label and node selectors; matchFields'
 * metadata.name values are node names. */
static void map_expressions(anon_t *a, json_t *exprs)
{
    size_t i;
    json_t *e;
    json_array_foreach (exprs, i, e) {
        const char *key = json_string_value(json_object_get(e, "key"));
        json_t *vals = json_object_get(e, "values");
        if (!key || !json_is_array(vals))
            continue;
        size_t k;
        json_t *v;
        json_array_foreach (vals, k, v)
            if (json_is_string(v))
                json_array_set_new(vals, k,
                                   json_string(!strcmp(key, "metadata.name")
                                                   ? pseudo(a, json_string_value(v), "node")
                                                   : label_value(a, key, json_string_value(v))));
    }
}

static void map_label_selector(anon_t *a, json_t *sel)
{
    if (!json_is_object(sel))
        return;
    map_label_map(a, json_object_get(sel, "matchLabels"));
    map_expressions(a, json_object_get(sel, "matchExpressions"));
}

static void map_node_terms(anon_t *a, json_t *terms)
{
    size_t i;
    json_t *t;
    json_array_foreach (terms, i, t) {
        map_expressions(a, json_object_get(t, "matchExpressions"));
        map_expressions(a, json_object_get(t, "matchFields"));
        map_expressions(a, json_object_get(t, "matchLabelExpressions")); /* StorageClass allowedTopologies */
    }
}

static void map_pod_affinity_terms(anon_t *a, json_t *terms, int weighted)
{
    size_t i;
    json_t *t;
    json_array_foreach (terms, i, t) {
        json_t *term = weighted ? json_object_get(t, "podAffinityTerm") : t;
        if (!json_is_object(term))
            continue;
        map_label_selector(a, json_object_get(term, "labelSelector"));
        map_label_selector(a, json_object_get(term, "namespaceSelector"));
        map_strings(a, json_object_get(term, "namespaces"), "ns");
    }
}

/* A volume source, a pod's inline one or a PV's: what names a disk. */
static void map_volume_source(anon_t *a, json_t *v)
{
    static const struct {
        const char *src, *field;
    } ids[] = { { "persistentVolumeClaim", "claimName" },
                { "secret", "secretName" },
                { "configMap", "name" },
                { "csi", "volumeHandle" },
                { "awsElasticBlockStore", "volumeID" },
                { "gcePersistentDisk", "pdName" },
                { "azureDisk", "diskName" },
                { "azureDisk", "diskURI" },
                { "cinder", "volumeID" },
                { "rbd", "image" },
                { "iscsi", "iqn" },
                { "nfs", "server" },
                { "nfs", "path" },
                { "hostPath", "path" },
                { "local", "path" } };
    if (!json_is_object(v))
        return;
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        json_t *s = json_object_get(v, ids[i].src);
        if (json_is_object(s))
            map_field(a, s, ids[i].field, "x");
    }
}

static void map_pod_spec(anon_t *a, json_t *spec)
{
    if (!json_is_object(spec))
        return;
    map_field(a, spec, "nodeName", "node");
    map_field(a, spec, "priorityClassName", "x");
    map_field(a, spec, "serviceAccountName", "x");
    json_object_del(spec, "serviceAccount");
    map_field(a, spec, "hostname", "x");
    map_field(a, spec, "subdomain", "x");
    map_label_map(a, json_object_get(spec, "nodeSelector"));
    json_t *aff = json_object_get(spec, "affinity");
    json_t *na = json_object_get(aff, "nodeAffinity");
    map_node_terms(
        a, json_object_get(json_object_get(na, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms"));
    size_t i;
    json_t *x;
    json_array_foreach (json_object_get(na, "preferredDuringSchedulingIgnoredDuringExecution"), i, x) {
        json_t *pref = json_object_get(x, "preference");
        map_expressions(a, json_object_get(pref, "matchExpressions"));
        map_expressions(a, json_object_get(pref, "matchFields"));
    }
    static const char *const pa[] = { "podAffinity", "podAntiAffinity" };
    for (int k = 0; k < 2; k++) {
        json_t *p = json_object_get(aff, pa[k]);
        map_pod_affinity_terms(a, json_object_get(p, "requiredDuringSchedulingIgnoredDuringExecution"), 0);
        map_pod_affinity_terms(a, json_object_get(p, "preferredDuringSchedulingIgnoredDuringExecution"), 1);
    }
    json_array_foreach (json_object_get(spec, "topologySpreadConstraints"), i, x)
        map_label_selector(a, json_object_get(x, "labelSelector"));
    json_array_foreach (json_object_get(spec, "tolerations"), i, x) {
        const char *key = json_string_value(json_object_get(x, "key"));
        const char *val = json_string_value(json_object_get(x, "value"));
        if (key && val)
            json_object_set_new(x, "value", json_string(label_value(a, key, val)));
    }
    json_array_foreach (json_object_get(spec, "volumes"), i, x)
        map_volume_source(a, x);
    json_array_foreach (json_object_get(spec, "imagePullSecrets"), i, x)
        map_field(a, x, "name", "x");
    static const char *const cs[] = { "containers", "initContainers", "ephemeralContainers" };
    for (int k = 0; k < 3; k++) {
        size_t j;
        json_t *c;
        json_array_foreach (json_object_get(spec, cs[k]), j, c) {
            map_field(a, c, "image", "img");
            size_t m;
            json_t *vm;
            json_array_foreach (json_object_get(c, "volumeMounts"), m, vm)
                json_object_del(vm, "mountPath"); /* paths name things; the scheduler does not read them */
        }
    }
}

/* Annotations whose value is a name of something the snapshot holds. */
static const char *identity_annotation(const char *key)
{
    if (!strcmp(key, POOL_ANNOTATION) || !strcmp(key, BORROWED_ANNOTATION) ||
        !strcmp(key, GANG_PRIORITY_CLASS_ANNOTATION) || !strcmp(key, GPU_ANN_RESERVATION_POD) ||
        !strcmp(key, "scheduling.k8s.io/group-name") || !strcmp(key, "pod-group.scheduling.sigs.k8s.io") ||
        !strncmp(key, "resource.aibee.cn/multicluster", 30) || !strcmp(key, FS_QUEUE_LABEL))
        return "x";
    if (!strcmp(key, GPU_ANN_RESERVATION_NODE))
        return "node";
    return NULL;
}

/* Annotations the scheduler reads for their meaning (durations, GPU
 * fractions, topology label keys, its own GPU index): kept. */
static int semantic_annotation(const char *key)
{
    return !strncmp(key, "resource.aibee.cn/", 18) || !strcmp(key, GPU_ANN_FRACTION) || !strcmp(key, GPU_ANN_MEMORY) ||
           !strcmp(key, GPU_ANN_NUM_DEVICES) || !strncmp(key, "scheduler.alpha.kubernetes.io/", 30) ||
           !strncmp(key, "scheduling.x-k8s.io/", 20);
}

static void map_meta(anon_t *a, json_t *meta, const char *name_prefix)
{
    if (!json_is_object(meta))
        return;
    map_field(a, meta, "name", name_prefix);
    map_field(a, meta, "namespace", "ns");
    json_object_del(meta, "generateName");
    json_object_del(meta, "selfLink");
    map_label_map(a, json_object_get(meta, "labels"));
    json_t *ann = json_object_get(meta, "annotations");
    const char *k;
    json_t *v;
    json_object_foreach (ann, k, v) {
        if (!json_is_string(v))
            continue;
        const char *id = identity_annotation(k);
        if (id)
            json_object_set_new(ann, k, json_string(pseudo(a, json_string_value(v), id)));
        else if (!semantic_annotation(k))
            json_object_set_new(ann, k, json_string(pseudo(a, json_string_value(v), "v")));
    }
    size_t i;
    json_array_foreach (json_object_get(meta, "ownerReferences"), i, v)
        map_field(a, v, "name", "x");
}

/* A workload's pod template and selector (ReplicaSet, RC, StatefulSet). */
static void map_workload(anon_t *a, json_t *spec)
{
    json_t *sel = json_object_get(spec, "selector");
    if (json_is_object(sel) && (json_object_get(sel, "matchLabels") || json_object_get(sel, "matchExpressions")))
        map_label_selector(a, sel);
    else
        map_label_map(a, sel); /* an RC's plain map */
    json_t *tmpl = json_object_get(spec, "template");
    map_meta(a, json_object_get(tmpl, "metadata"), "x");
    map_pod_spec(a, json_object_get(tmpl, "spec"));
    map_field(a, spec, "serviceName", "x");
    size_t i;
    json_t *c;
    json_array_foreach (json_object_get(spec, "volumeClaimTemplates"), i, c) {
        map_meta(a, json_object_get(c, "metadata"), "x");
        map_field(a, json_object_get(c, "spec"), "storageClassName", "x");
    }
}

static void map_item(anon_t *a, json_t *o)
{
    const char *kind = json_string_value(json_object_get(o, "kind"));
    json_t *meta = json_object_get(o, "metadata");
    json_t *spec = json_object_get(o, "spec");
    json_t *status = json_object_get(o, "status");
    if (!kind)
        return;
    int is_node = !strcmp(kind, "Node") || !strcmp(kind, "CSINode");
    map_meta(a, meta, is_node ? "node" : "x");
    if (!strcmp(kind, "Pod")) {
        map_pod_spec(a, spec);
        map_field(a, status, "nominatedNodeName", "node");
        static const char *const drop[] = { "hostIP", "hostIPs", "podIP", "podIPs", "message" };
        for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
            json_object_del(status, drop[i]);
        json_object_del(status, "containerStatuses"); /* image ids, container ids */
        json_object_del(status, "initContainerStatuses");
    } else if (!strcmp(kind, "Node")) {
        json_object_del(spec, "providerID");
        json_object_del(spec, "podCIDR");
        json_object_del(spec, "podCIDRs");
        size_t i;
        json_t *t;
        json_array_foreach (json_object_get(spec, "taints"), i, t) {
            const char *key = json_string_value(json_object_get(t, "key"));
            const char *val = json_string_value(json_object_get(t, "value"));
            if (key && val)
                json_object_set_new(t, "value", json_string(label_value(a, key, val)));
        }
        json_object_del(status, "addresses");
        json_object_del(status, "nodeInfo");
        json_object_del(status, "daemonEndpoints");
        json_array_foreach (json_object_get(status, "images"), i, t)
            map_strings(a, json_object_get(t, "names"), "img");
    } else if (!strcmp(kind, "CSINode")) {
        size_t i;
        json_t *d;
        json_array_foreach (json_object_get(spec, "drivers"), i, d)
            map_field(a, d, "nodeID", "x");
    } else if (!strcmp(kind, "Pool")) {
        map_label_selector(a, json_object_get(spec, "nodeSelector"));
        map_strings(a, json_object_get(spec, "borrowingPools"), "x");
    } else if (!strcmp(kind, "Queue")) {
        map_field(a, spec, "parentQueue", "x");
        json_t *pools = json_object_get(spec, "pools");
        if (json_is_object(pools)) { /* keys are pool names */
            json_t *renamed = json_object();
            const char *k;
            json_t *v;
            json_object_foreach (pools, k, v)
                json_object_set(renamed, pseudo(a, k, "x"), v);
            json_object_set_new(spec, "pools", renamed);
        }
    } else if (!strcmp(kind, "PodGroup")) {
        map_field(a, spec, "queue", "x");
        map_field(a, spec, "priorityClassName", "x");
    } else if (!strcmp(kind, "PodDisruptionBudget")) {
        map_label_selector(a, json_object_get(spec, "selector"));
    } else if (!strcmp(kind, "PersistentVolume")) {
        json_t *ref = json_object_get(spec, "claimRef");
        map_field(a, ref, "name", "x");
        map_field(a, ref, "namespace", "ns");
        json_object_del(ref, "resourceVersion");
        map_field(a, spec, "storageClassName", "x");
        map_node_terms(a, json_object_get(json_object_get(json_object_get(spec, "nodeAffinity"), "required"),
                                          "nodeSelectorTerms"));
        map_volume_source(a, spec);
    } else if (!strcmp(kind, "PersistentVolumeClaim")) {
        map_field(a, spec, "volumeName", "x");
        map_field(a, spec, "storageClassName", "x");
        map_label_selector(a, json_object_get(spec, "selector"));
        json_t *ann = json_object_get(meta, "annotations");
        map_field(a, ann, "volume.kubernetes.io/selected-node", "node");
    } else if (!strcmp(kind, "StorageClass")) {
        size_t i;
        json_t *t;
        json_array_foreach (json_object_get(o, "allowedTopologies"), i, t)
            map_expressions(a, json_object_get(t, "matchLabelExpressions"));
        json_object_del(o, "parameters"); /* account ids, keys of the provisioner */
    } else if (!strcmp(kind, "Service")) {
        map_label_map(a, json_object_get(spec, "selector"));
        static const char *const drop[] = { "clusterIP", "clusterIPs", "externalIPs", "loadBalancerIP",
                                            "externalName" };
        for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
            json_object_del(spec, drop[i]);
        json_object_del(o, "status");
    } else if (!strcmp(kind, "ReplicaSet") || !strcmp(kind, "ReplicationController") || !strcmp(kind, "StatefulSet")) {
        map_workload(a, spec);
    }
}

int snapshot_anonymize(json_t *doc)
{
    json_t *items = json_object_get(doc, "items");
    anon_t a = { json_object(), 0 };
    size_t i;
    json_t *o;
    /* Nodes first, so node names get "node-N" even where a pod names them
     * before its node is met. */
    json_array_foreach (items, i, o) {
        const char *kind = json_string_value(json_object_get(o, "kind"));
        if (kind && !strcmp(kind, "Node"))
            map_item(&a, o);
    }
    json_array_foreach (items, i, o) {
        const char *kind = json_string_value(json_object_get(o, "kind"));
        if (json_is_object(o) && !(kind && !strcmp(kind, "Node")))
            map_item(&a, o);
    }
    int n = (int)json_object_size(a.map);
    json_decref(a.map);
    return n;
}
