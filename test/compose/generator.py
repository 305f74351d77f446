#!/usr/bin/env python3
"""Composition suite: seeded scenario generator (stdlib only, deterministic per seed).

A scenario is a plain dict (json-serialisable):

  pools    2-3 Pools ("pa", "pb", "pc"; nodes labelled pool=<name>), sharing on for at
           least two so borrowing happens, sometimes off for one
  nodes    2-3 per pool, 4 or 8 GPUs (nvidia.com/gpu.memory 40960 for fractions), 32 cpu,
           128Gi, labels network.aibee.cn/spine and network.aibee.cn/block for topology gangs
  queues   a department "dept" with projects "proj-a", "proj-b", and a top-level "other";
           gpu quota / overQuotaWeight / limit (Queue units: GPUs; per pool, as documented)
  steps    in order: submit lone pods (whole GPUs, GPU fractions, CPU only; priority
           classes compose-low/mid/high and compose-never with preemptionPolicy Never),
           submit a gang (PodGroup with minMember, elastic extras, topology required or
           preferred on network.aibee.cn/block), add a PDB, add or remove a node, wait.
  lifecycle (issue 26) drawn from a second generator, so each seed's pods and steps stay
           what they were: minimum runtimes on some Queues and Pools (preemptMinRuntime,
           reclaimMinRuntime, a few seconds), checkpointGrace on a Queue, and lone pods
           asking a checkpoint grace, some of which acknowledge (kubelet.py plays their
           training loop) while the others run out their deadline.
  restart  (issue 35) one step that restarts the scheduler (run.py asks
           t_composition.sh to stop it by pid and start it again), from a third
           generator, inserted in the second half of the steps.
  dra      (issue 36) from a fourth generator, in about half the seeds: a DeviceClass
           gpu.example.com and node-local ResourceSlices (4-8 devices, attributes model
           and numa) on some nodes (at least one per pool), and some whole-GPU lone pods
           and gang members asking one device through a claim instead of nvidia.com/gpu:
           a ResourceClaimTemplate (one device, maybe a CEL selector on model) or a
           standalone claim of their own. A scenario without DRA has no "dra" key and is
           what it was before DRA existed (seeds 1, 3 and 7 draw none).

Pods carry their planned run time in the annotation compose.aibee.cn/run-seconds
(0: runs until the end); test/compose/kubelet.py finishes them after it. A pod with
compose.aibee.cn/restart "true" is recreated under the same name when the scheduler
evicts it (run.py plays its controller), so repeated evictions of one workload show.

    generator.py SEED   prints the scenario as JSON
"""
import json
import random
import sys

POOL_NAMES = ["pa", "pb", "pc"]
# PriorityClasses t_composition.sh creates: name -> (value, preemptionPolicy)
PRIORITY_CLASSES = {
    "compose-low": (10, "PreemptLowerPriority"),
    "compose-mid": (50, "PreemptLowerPriority"),
    "compose-high": (200, "PreemptLowerPriority"),   # >= 100: non-preemptible for queues
    "compose-never": (50, "Never"),
}
LEAF_QUEUES = ["proj-a", "proj-b", "other"]
GPU_MEMORY = 40960


def generate(seed, scale=1.0):
    rnd = random.Random(seed)
    npools = rnd.choice([2, 3, 3])
    pools = []
    for i, name in enumerate(POOL_NAMES[:npools]):
        pools.append({"name": name,
                      # the first two always share: borrowing must be possible
                      "disableSharing": i >= 2 and rnd.random() < 0.5,
                      "disableBorrowing": False,
                      "disablePreemption": False})
    nodes = []
    for p in pools:
        for i in range(rnd.choice([2, 3])):
            nodes.append(_node(rnd, "%s-%d" % (p["name"], i), p["name"], i))

    def gq(quota, weight, limit):
        return {"gpu": {"quota": quota, "overQuotaWeight": weight, "limit": limit}}
    queues = [
        {"name": "dept", "parent": "", "resources": gq(rnd.choice([4, 6]), rnd.choice([1, 2, 3]), rnd.choice([8, 10, 12]))},
        {"name": "proj-a", "parent": "dept", "resources": gq(2, rnd.choice([1, 3]), rnd.choice([4, 6, 8]))},
        {"name": "proj-b", "parent": "dept", "resources": gq(2, rnd.choice([1, 3]), rnd.choice([6, 8, -1]))},
        {"name": "other", "parent": "", "resources": gq(rnd.choice([2, 4]), 1, rnd.choice([6, 8, -1]))},
    ]

    steps = []
    npods = 0
    target = int(rnd.randint(30, 50) * scale)
    ngang = 0
    nlone = 0
    npdb = 0
    nadded = 0
    removed = set()
    while npods < target:
        r = rnd.random()
        if r < 0.45:
            k = rnd.randint(2, 5)
            pods = [_lone(rnd, "l%d" % (nlone + j), pools) for j in range(k)]
            nlone += k
            npods += k
            steps.append({"op": "pods", "pods": pods})
        elif r < 0.70:
            g = _gang(rnd, "g%d" % ngang, pools)
            ngang += 1
            npods += len(g["pods"])
            steps.append(g)
        elif r < 0.77 and npdb < 2:
            # a PDB (disruptionsAllowed 0) over pods submitted next, labelled compose-pdb=<name>
            name = "guard%d" % npdb
            npdb += 1
            k = rnd.randint(2, 3)
            pods = [_lone(rnd, "l%d" % (nlone + j), pools) for j in range(k)]
            for p in pods:
                p["labels"]["compose-pdb"] = name
                p["restart"] = False
            nlone += k
            npods += k
            steps.append({"op": "pdb", "name": name})
            steps.append({"op": "pods", "pods": pods})
        elif r < 0.84 and nadded < 2:
            p = rnd.choice(pools)["name"]
            nodes_in = [n for n in nodes if n["pool"] == p]
            steps.append({"op": "add_node", "node": _node(rnd, "%s-x%d" % (p, nadded), p, len(nodes_in))})
            nadded += 1
        elif r < 0.89 and not removed:
            cand = [n["name"] for n in nodes if n["name"] not in removed]
            victim = rnd.choice(cand)
            removed.add(victim)
            steps.append({"op": "remove_node", "node": victim})
        else:
            steps.append({"op": "wait", "seconds": rnd.choice([2, 3, 5])})
        if rnd.random() < 0.4:
            steps.append({"op": "wait", "seconds": rnd.choice([1, 2, 3])})
    _lifecycle(random.Random(seed * 7919 + 26), pools, queues, steps)
    _restarts(random.Random(seed * 7919 + 35), steps)
    # 38, not 36: the seeds make test and make soak replay (1, 3, 7) draw no DRA with
    # it, so their scenarios stay byte-identical (each was a fault, see t_composition.sh)
    dra = _dra(random.Random(seed * 7919 + 38), pools, nodes, steps)
    scn = {"seed": seed, "pools": pools, "nodes": nodes, "queues": queues,
           "priorityClasses": PRIORITY_CLASSES, "steps": steps}
    if dra:
        scn["dra"] = dra
    return scn


DRA_DRIVER = "gpu.example.com"
DRA_CLASS = "gpu.example.com"
DRA_MODELS = ["A100", "H100"]


def _dra(rnd, pools, nodes, steps):
    """DRA (issue 36), from its own generator, so each seed's other draws stay what they
    were: None for about half the seeds; otherwise slices on some nodes (at least one per
    pool; on some added nodes, created with them; removed nodes' slices go with them,
    run.py) and claims on some pods. A pod that gets a claim stops asking
    nvidia.com/gpu: it asks one DRA device instead, which Queues count as a GPU
    (gpu.example.com is among the scheduler's default --dra-queue-resources classes)."""
    if rnd.random() < 0.5:
        return None
    slices = []
    for pl in pools:
        mine = [n for n in nodes if n["pool"] == pl["name"]]
        chosen = [n for n in mine if rnd.random() < 0.6] or [rnd.choice(mine)]
        for n in chosen:
            slices.append(_slice(rnd, n["name"]))
    templates = [{"name": "one-gpu", "model": ""}] + [{"name": "one-" + m.lower(), "model": m} for m in DRA_MODELS]
    share = rnd.choice([0.25, 0.4, 0.6])
    for st in steps:
        if st["op"] == "gang":
            if rnd.random() < share:
                t = rnd.choice(templates)["name"]
                for p in st["pods"]:
                    p["gpu"], p["claim"] = 0, {"template": t}
        elif st["op"] == "pods":
            for p in st["pods"]:
                if p["gpu"] and not p["fraction"] and rnd.random() < share:
                    if rnd.random() < 0.6:
                        p["gpu"], p["claim"] = 0, {"template": rnd.choice(templates)["name"]}
                    else:
                        model = rnd.choice([""] + DRA_MODELS)
                        p["gpu"], p["claim"] = 0, {"claim": p["name"] + "-gpu", "model": model}
    # a node added later may bring devices: its slice is created with it (run.py); drawn
    # last, so the claims stay what they were before added nodes had slices
    for st in steps:
        if st["op"] == "add_node" and rnd.random() < 0.6:
            slices.append(_slice(rnd, st["node"]["name"]))
    return {"driver": DRA_DRIVER, "class": DRA_CLASS, "slices": slices, "templates": templates}


def _lifecycle(rnd, pools, queues, steps):
    """Minimum runtimes and checkpoint graces (issue 26), from their own generator.
    Short (seconds), so the cluster still settles; never "-1" (a borrower that can
    never be reclaimed would make the settled home-vs-borrower rule meaningless)."""
    for p in pools:
        p["preemptMinRuntime"] = rnd.choice(["", "", "3s"])
        p["reclaimMinRuntime"] = rnd.choice(["", "", "4s"])
    for q in queues:
        q["preemptMinRuntime"] = rnd.choice(["", "", "0", "5s"] if q["name"] != "dept" else ["", "6s"])
        q["reclaimMinRuntime"] = rnd.choice(["", "", "0", "6s"])
        q["checkpointGrace"] = rnd.choice(["", "", "", "3s"])
    for st in steps:
        for p in st.get("pods", []):
            r = rnd.random()
            p["checkpointGrace"] = "4s" if r < 0.2 else ("0" if r < 0.25 else "")
            p["ackAfter"] = rnd.choice([1, 1, 0]) if p["checkpointGrace"] == "4s" else 0
            p["minRuntime"] = rnd.choice(["", "", "", "2s"])


def _slice(rnd, node):
    k = rnd.randint(4, 8)
    model = rnd.choice(DRA_MODELS)
    return {"name": "%s-%s" % (node, DRA_DRIVER), "node": node,
            "devices": [{"name": "gpu-%d" % i, "model": model, "numa": i * 2 // k} for i in range(k)]}


def _restarts(rnd, steps):
    """One scheduler restart (issue 35: nominations survive it, queue ages restart with
    it), from its own generator so each seed's other steps stay what they were: after a
    random step of the second half, when preemptions are likeliest in flight."""
    if len(steps) < 4:
        return
    at = rnd.randint(len(steps) // 2, len(steps) - 1)
    steps.insert(at, {"op": "restart"})


def _node(rnd, name, pool, i):
    return {"name": name, "pool": pool, "cpu": 32, "memory": "128Gi",
            "gpu": rnd.choice([4, 4, 8]),
            "labels": {"pool": pool, "network.aibee.cn/spine": "s0",
                       "network.aibee.cn/block": "%s-b%d" % (pool, i % 2),
                       "nvidia.com/gpu.memory": str(GPU_MEMORY)}}


def _pc(rnd):
    return rnd.choices(["compose-low", "compose-mid", "compose-high", "compose-never"], [4, 3, 1, 1])[0]


def _lone(rnd, name, pools):
    kind = rnd.choices(["gpu", "fraction", "cpu"], [5, 2, 2])[0]
    p = {"name": name, "pool": rnd.choice(pools)["name"], "queue": rnd.choice(LEAF_QUEUES + [""]),  # "": no label, queue default
         "cpu": rnd.choice(["500m", "1", "2"]), "memory": rnd.choice(["1Gi", "4Gi"]),
         "gpu": 0, "fraction": "", "priorityClass": _pc(rnd), "labels": {},
         "run": rnd.choice([0, 0, 8, 15, 25]), "restart": rnd.random() < 0.4, "group": ""}
    if kind == "gpu":
        p["gpu"] = rnd.choice([1, 1, 2, 4])
    elif kind == "fraction":
        p["fraction"] = rnd.choice(["0.25", "0.5"])
        p["restart"] = False
    else:
        p["cpu"] = rnd.choice(["4", "8"])
    return p


def _gang(rnd, name, pools):
    pool = rnd.choice(pools)["name"]
    minm = rnd.randint(2, 3)
    extra = rnd.choice([0, 0, 1, 2])
    per = rnd.choice([1, 2, 2, 4])
    topo = rnd.choices(["", "required", "preferred"], [3, 1, 1])[0]
    pc = rnd.choice(["compose-low", "compose-mid", "compose-mid", "compose-high"])
    queue = rnd.choice(LEAF_QUEUES)
    run = rnd.choice([0, 0, 20])
    pods = []
    for j in range(minm + extra):
        pods.append({"name": "%s-%d" % (name, j), "pool": pool, "queue": queue, "cpu": "1", "memory": "2Gi",
                     "gpu": per, "fraction": "", "priorityClass": pc, "labels": {},
                     "run": run, "restart": False, "group": name})
    return {"op": "gang", "name": name, "minMember": minm, "topology": topo,
            "scheduleTimeoutSeconds": rnd.choice([20, 30]), "pods": pods}


if __name__ == "__main__":
    print(json.dumps(generate(int(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 1.0), indent=1))
