#!/usr/bin/env python3
"""Seeds test/fuzz/corpus/NAME for each fuzz target from the tests' own
inputs: the string literals of test/unit/*.c (JSON objects, kubeconfigs,
configurations, quantities) and the YAML documents of examples/ and pools/.
Files are named by their SHA-1, as libFuzzer names what it adds.

    python3 test/fuzz/seed.py        # (re)writes the seeds; keeps other files
"""
import hashlib
import json
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")
MACROS = {
    "HEAD": "apiVersion: v1\nkind: Config\n",
    "HDR": "apiVersion: ai-scheduler.aibee.cn/v1alpha1\nkind: AiSchedulerConfiguration\n",
}
# Which targets a unit test file's JSON literals seed.
JSON_FILES = {
    "test_types.c": ["pod", "node", "storage"],
    "test_cache.c": ["pod", "node"],
    "test_pool.c": ["pool"],
    "test_pool_table.c": ["pool"],
    "test_preemption.c": ["pdb", "pod"],
    "test_labels.c": ["selector"],
    "test_dispatch.c": ["dispatch"],
    "test_queue.c": ["queue"],
    "test_queue_table.c": ["queue"],
    "test_sched_faults.c": ["pod", "node"],
    "test_kube_client.c": ["watch"],
    "test_volumes.c": ["storage"],
}
KIND_TARGETS = {
    "Pod": "pod", "Node": "node", "Pool": "pool", "PodGroup": "podgroup", "Queue": "queue",
    "PodDisruptionBudget": "pdb", "PersistentVolume": "storage", "PersistentVolumeClaim": "storage",
    "StorageClass": "storage", "CSINode": "storage",
}
seeds = {}


def add(target, data):
    if isinstance(data, str):
        data = data.encode()
    if 0 < len(data) <= 64 * 1024:
        seeds.setdefault(target, set()).add(data)


def c_literals(text):
    """Groups of adjacent C string literals (macros above expanded), decoded."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    tok = re.compile(r'"((?:[^"\\\n]|\\.)*)"|\b(HEAD|HDR)\b|(\s+)|(.)', re.S)
    groups, cur = [], None
    for m in tok.finditer(text):
        if m.group(1) is not None or m.group(2):
            s = MACROS[m.group(2)] if m.group(2) else bytes(m.group(1), "utf-8").decode("unicode_escape")
            cur = (cur or "") + s
        elif m.group(3) is not None:
            continue
        else:
            if cur is not None:
                groups.append(cur)
            cur = None
    if cur is not None:
        groups.append(cur)
    return groups


def watch_seed(objs):
    lines = "".join(json.dumps({"type": t, "object": o}) + "\n" for t, o in objs)
    return b"\x07\x40" + lines.encode()


def from_unit_tests():
    d = os.path.join(REPO, "test", "unit")
    for f in sorted(os.listdir(d)):
        if not f.endswith(".c"):
            continue
        text = open(os.path.join(d, f), encoding="utf-8").read()
        for s in c_literals(text):
            if f == "test_quantity.c" and len(s) < 40:
                add("quantity", s)
            if f == "test_cel.c" and ("device" in s or "(" in s) and len(s) < 4096:
                add("cel", s)
            if f == "test_kubeconfig.c" and ("current-context" in s or "apiVersion" in s):
                add("kubeconfig", s)
            if f == "test_config.c" and "AiSchedulerConfiguration" in s:
                add("config", s)
            try:
                j = json.loads(s)
            except ValueError:
                continue
            for t in JSON_FILES.get(f, []):
                if t == "selector":
                    add(t, json.dumps({"selector": j, "term": j, "map": j, "labels": {"a": "b"}, "name": "n1"}))
                elif t == "watch":
                    add(t, b"\x03\x10" + s.encode() + b"\n")
                else:
                    add(t, s)


def pod_templates(doc):
    """Pods inside workload kinds (Job, Deployment, PyTorchJob replica specs...)."""
    if isinstance(doc, dict):
        if "spec" in doc and isinstance(doc["spec"], dict) and "containers" in doc["spec"]:
            yield {"apiVersion": "v1", "kind": "Pod",
                   "metadata": dict(doc.get("metadata") or {}, name="p", namespace="default"),
                   "spec": doc["spec"]}
        for v in doc.values():
            yield from pod_templates(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from pod_templates(v)


def from_yaml():
    docs = []
    for sub in ("examples", "pools"):
        d = os.path.join(REPO, sub)
        for f in sorted(os.listdir(d)):
            if f.endswith(".yaml"):
                with open(os.path.join(d, f), encoding="utf-8") as fh:
                    docs += [x for x in yaml.safe_load_all(fh) if isinstance(x, dict)]
    pods = []
    for doc in docs:
        kind = doc.get("kind")
        if kind in KIND_TARGETS:
            add(KIND_TARGETS[kind], json.dumps(doc, default=str))
        if kind == "MultiClusterJob":
            spec = doc.get("spec") or {}
            for c in spec.get("clusters") or []:
                add("dispatch", json.dumps({"template": spec.get("template"), "params": spec.get("params"),
                                            "cluster": c.get("name"), "name": doc["metadata"]["name"]}))
        for p in pod_templates(doc):
            pods.append(p)
            add("pod", json.dumps(p, default=str))
    # Fair share: the example Queues with the example pods, some running;
    # and a hierarchy with a cycle.
    queues = [d for d in docs if d.get("kind") == "Queue"]
    qpods = [p for p in pods if (p["metadata"].get("labels") or {}).get("resource.aibee.cn/queue")] or pods[:8]
    for k in range(0, len(qpods) + 1, 3):
        run = [dict(q, metadata=dict(q["metadata"], uid="u%d" % m), spec=dict(q["spec"], nodeName="n1"))
               for m, q in enumerate(qpods[:k])]
        add("fairshare", json.dumps({"queues": queues, "pods": run + qpods[k:],
                                     "cap": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8"}}, default=str))
    cyc = [{"apiVersion": "resource.aibee.cn/v1alpha1", "kind": "Queue", "metadata": {"name": a},
            "spec": {"parentQueue": b, "weight": 1}} for a, b in (("a", "b"), ("b", "a"), ("c", "a"))]
    add("fairshare", json.dumps({"queues": cyc, "pods": qpods[:2], "halfLife": 60}, default=str))
    # Cycles: the example pods against the seed nodes, with some bound.
    nodes = [json.loads(x) for x in seeds.get("node", set()) if x.startswith(b'{"apiVersion": "v1", "kind": "Node"')]
    nodes += [dict(EXTRA["node"][0], metadata={"name": "cpu-%d" % i, "labels": {"zone": "z%d" % (i % 2)}},
                   status={"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}) for i in range(3)]
    for k, p in enumerate(pods):
        bound = [dict(q, spec=dict(q["spec"], nodeName=nodes[m % len(nodes)]["metadata"]["name"]))
                 for m, q in enumerate(pods[:k])][:6]
        add("cycle", json.dumps({"nodes": nodes[:6], "pods": bound, "pod": p}, default=str))
    if pods:
        add("watch", watch_seed([("ADDED", pods[0]), ("MODIFIED", pods[-1]),
                                 ("ERROR", {"kind": "Status", "code": 410, "reason": "Expired"})]))
        add("watch", watch_seed([("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "12345"}})]))


# Shapes the unit tests do not hold as literals (the e2e suite builds them
# with jq): a GPU node with taints and images, PodGroups with the optional
# fields, a kubeconfig with inline credentials.
EXTRA = {
    "node": [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": "gpu-1", "labels": {"kubernetes.io/hostname": "gpu-1", "zone": "a",
                                                       "nvidia.com/gpu.product": "A100", "nvidia.com/gpu.memory": "81920"}},
              "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}], "unschedulable": False},
              "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8",
                                         "ephemeral-storage": "100Gi"},
                         "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"},
                         "conditions": [{"type": "Ready", "status": "True"}],
                         "images": [{"names": ["registry.invalid/pause:3"], "sizeBytes": 300000}]}}],
    "podgroup": [{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                  "metadata": {"name": "g", "namespace": "default", "creationTimestamp": "2026-11-25T10:00:00Z",
                               "annotations": {"resource.aibee.cn/topology-required": "rack"}},
                  "spec": {"minMember": 4, "scheduleTimeoutSeconds": 30,
                           "minResources": {"cpu": "8", "nvidia.com/gpu": "4"}},
                  "status": {"phase": "Scheduling"}}],
    # Requests near INT64_MAX on pods bound to one node (their sums overflowed
    # node_info's nonzero_cpu: a fix found by the cycle target).
    "cycle": [json.dumps({
        "nodes": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                   "status": {"allocatable": {"cpu": "8", "memory": "7Ei", "pods": "110",
                                              "nvidia.com/gpu": "9223372036854775807"}}}],
        "pods": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": n, "namespace": "d", "uid": n},
                  "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {
                      "requests": {"memory": "7Ei", "cpu": "9223372036854775", "nvidia.com/gpu": "9223372036854775807"},
                      "limits": {"nvidia.com/gpu": "9223372036854775807"}}}]}} for n in ("a", "b", "c")],
        "pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "d", "uid": "x"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "7Ei", "cpu": "9223372036854775"}}}]}}})],
    "kubeconfig": ["apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n"
                   "    server: https://127.0.0.1:6443\n    certificate-authority-data: aGVsbG8=\n"
                   "contexts:\n- name: c\n  context: {cluster: k, user: u}\nusers:\n- name: u\n"
                   "  user:\n    token: abc\n"],
}


def main():
    for t, items in EXTRA.items():
        for x in items:
            add(t, x if isinstance(x, str) else json.dumps(x))
    from_unit_tests()
    from_yaml()
    total = 0
    for t, items in sorted(seeds.items()):
        d = os.path.join(CORPUS, t)
        os.makedirs(d, exist_ok=True)
        for data in items:
            with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as fh:
                fh.write(data)
        total += len(items)
        print(f"{t}: {len(items)} seeds", file=sys.stderr)
    print(f"seed.py: {total} seeds in {CORPUS}", file=sys.stderr)


if __name__ == "__main__":
    main()
