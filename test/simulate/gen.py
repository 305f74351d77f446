#!/usr/bin/env python3
"""gen.py -- a synthetic cluster snapshot and workload for `ai-scheduler simulate`.

  gen.py --nodes 10000 --pods 100000 --out DIR [--pools 4] [--queues 4] [--seed 1] [--load 1.2]
  gen.py --mix contended --nodes 200 --pods 2000 --out DIR [--seed 1]

Writes DIR/snapshot.json (a ClusterSnapshot: PriorityClasses, Pools, Queues,
nodes of 8 GPUs in blocks of 32) and DIR/workload.json (jobs of 1, 4, 16 and
64 pods of 1 GPU each; the 16s and 64s are gangs, a few with a topology
annotation; arrivals spread so that demand is about --load times capacity).
--mix contended writes the reclaim mix instead: one pool, two Queues of equal
GPU quota (half the cluster each), qa asking three times its share and qb
its share, every job a gang at one priority, half of 8 pods of 8 GPUs (8
whole nodes), half of 32 pods of 1 GPU. The same arguments write the same
bytes."""
import argparse
import json
import os
import random

GPUS_PER_NODE = 8
BLOCK = 32  # nodes per network block
TAKEN_AT = "2026-01-01T00:00:00Z"
SIZES = [(1, 0.55), (4, 0.25), (16, 0.15), (64, 0.05)]  # pods per job, share of jobs


def node(i, pool):
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "node-%05d" % i, "uid": "node-uid-%d" % i,
                     "labels": {"pool": pool, "kubernetes.io/hostname": "node-%05d" % i,
                                "network.aibee.cn/block": "block-%d" % (i // BLOCK)}},
        "status": {"allocatable": {"cpu": "96", "memory": "1024Gi", "pods": "110",
                                   "nvidia.com/gpu": str(GPUS_PER_NODE)},
                   "capacity": {"cpu": "96", "memory": "1024Gi", "pods": "110",
                                "nvidia.com/gpu": str(GPUS_PER_NODE)},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


def snapshot(a):
    pools = ["pool-%d" % p for p in range(a.pools)]
    items = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"}, "value": 10},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 50},
    ]
    for p in pools:
        items.append({"apiVersion": "resource.aibee.cn/v1alpha1", "kind": "Pool", "metadata": {"name": p},
                      "spec": {"nodeSelector": {"matchLabels": {"pool": p}}}})
    total_gpus = a.nodes * GPUS_PER_NODE
    for q in range(a.queues):
        items.append({"apiVersion": "resource.aibee.cn/v1alpha1", "kind": "Queue", "metadata": {"name": "q%d" % q},
                      "spec": {"resources": {"gpu": {"quota": total_gpus // (a.queues * a.pools)}}}})
    # Nodes in pool order, whole blocks to a pool.
    for i in range(a.nodes):
        items.append(node(i, pools[min(a.pools - 1, (i // BLOCK) * BLOCK * a.pools // a.nodes)]))
    return {"apiVersion": "ai-scheduler.aibee.cn/v1", "kind": "ClusterSnapshot", "takenAt": TAKEN_AT,
            "config": None, "items": items}


def workload(a):
    rnd = random.Random(a.seed)
    jobs, pods = [], 0
    sizes = [s for s, _ in SIZES]
    weights = [w for _, w in SIZES]
    mean_size = sum(s * w for s, w in SIZES)
    mean_run = 45 * 60  # seconds
    capacity = a.nodes * GPUS_PER_NODE
    njobs_est = max(1, a.pods // mean_size)
    # demand over the arrival window ~ load x capacity x window
    window = max(60, int(njobs_est * mean_size * mean_run / (capacity * a.load)))
    t = 0.0
    while pods < a.pods:
        n = min(rnd.choices(sizes, weights)[0], a.pods - pods)
        t += rnd.expovariate(njobs_est / window)
        j = {
            "name": "job-%06d" % len(jobs),
            "namespace": "team-%d" % (len(jobs) % a.queues),
            "arrival": "%ds" % int(t),
            "runTime": "%ds" % rnd.randint(10 * 60, 80 * 60),
            "queue": "q%d" % rnd.randrange(a.queues),
            "pool": "pool-%d" % rnd.randrange(a.pools),
            "priorityClassName": "high" if rnd.random() < 0.2 else "low",
            "replicas": n,
            "template": {"spec": {"containers": [{"name": "main", "image": "trainer:1",
                                                  "resources": {"requests": {"cpu": "8", "memory": "64Gi",
                                                                             "nvidia.com/gpu": "1"},
                                                                "limits": {"nvidia.com/gpu": "1"}}}]}},
        }
        if n >= 16:
            j["gang"] = {"minMember": n}
            if n == 16 and rnd.random() < 0.5:
                j["gang"]["annotations"] = {"resource.aibee.cn/topology-preferred": "network.aibee.cn/block"}
        jobs.append(j)
        pods += n
    return {"apiVersion": "ai-scheduler.aibee.cn/v1", "kind": "Workload", "jobs": jobs}


def contended_snapshot(a):
    total_gpus = a.nodes * GPUS_PER_NODE
    items = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"}, "value": 10},
             {"apiVersion": "resource.aibee.cn/v1alpha1", "kind": "Pool", "metadata": {"name": "pool-0"},
              "spec": {"nodeSelector": {"matchLabels": {"pool": "pool-0"}}}}]
    for q in ("qa", "qb"):
        items.append({"apiVersion": "resource.aibee.cn/v1alpha1", "kind": "Queue", "metadata": {"name": q},
                      "spec": {"resources": {"gpu": {"quota": total_gpus // 2}}}})
    items += [node(i, "pool-0") for i in range(a.nodes)]
    return {"apiVersion": "ai-scheduler.aibee.cn/v1", "kind": "ClusterSnapshot", "takenAt": TAKEN_AT,
            "config": None, "items": items}


def contended_workload(a):
    rnd = random.Random(a.seed)
    mean_run = 45 * 60
    capacity = a.nodes * GPUS_PER_NODE
    # a job is 20 pods and 48 GPUs on average (8 x 8 or 32 x 1); qa's
    # demand arrives at 1.5x capacity (three times its half), qb's at 0.5x
    window = max(60, int(a.pods * 48 / 20 * mean_run / (2 * capacity)))
    jobs, pods, t = [], 0, 0.0
    rate = max(1, a.pods // 20) / window
    while pods < a.pods:
        whole = rnd.random() < 0.5
        n, gpus = (8, GPUS_PER_NODE) if whole else (32, 1)
        t += rnd.expovariate(rate)
        q = "qa" if rnd.random() < 0.75 else "qb"
        jobs.append({
            "name": "job-%06d" % len(jobs),
            "namespace": "team-%s" % q,
            "arrival": "%ds" % int(t),
            "runTime": "%ds" % rnd.randint(10 * 60, 80 * 60),
            "queue": q,
            "pool": "pool-0",
            "priorityClassName": "low",
            "replicas": n,
            "gang": {"minMember": n},
            "template": {"spec": {"containers": [{"name": "main", "image": "trainer:1",
                                                  "resources": {"requests": {"cpu": str(gpus), "memory": "8Gi",
                                                                             "nvidia.com/gpu": str(gpus)},
                                                                "limits": {"nvidia.com/gpu": str(gpus)}}}]}},
        })
        pods += n
    return {"apiVersion": "ai-scheduler.aibee.cn/v1", "kind": "Workload", "jobs": jobs}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--pods", type=int, default=1000)
    p.add_argument("--pools", type=int, default=4)
    p.add_argument("--queues", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--load", type=float, default=1.2, help="demand over capacity while jobs arrive")
    p.add_argument("--mix", choices=["mixed", "contended"], default="mixed")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    if a.nodes < a.pools or a.pools < 1 or a.queues < 1 or a.pods < 1:
        p.error("want pods >= 1, pools >= 1, queues >= 1 and nodes >= pools")
    os.makedirs(a.out, exist_ok=True)
    docs = (snapshot(a), workload(a)) if a.mix == "mixed" else (contended_snapshot(a), contended_workload(a))
    for name, doc in zip(("snapshot.json", "workload.json"), docs):
        with open(os.path.join(a.out, name), "w") as f:
            json.dump(doc, f, separators=(",", ":"), sort_keys=False)
            f.write("\n")


if __name__ == "__main__":
    main()
