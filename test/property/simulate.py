#!/usr/bin/env python3
"""Offline stability check of the generator: does the number of pods left pending depend on placement?

Places each generated workload several times with a toy scheduler that uses the
checker's filters and picks a random feasible node (a stand-in for two schedulers
whose scores and tie-breaks differ), retrying pending pods after every bind as
real schedulers do, and prints the seeds whose pending counts differ between
placements. The e2e suite compares real schedulers; this only keeps the
generator honest without a cluster.

Usage: simulate.py [--seeds 1-200] [--tries 5] [--kinds ...] [--nodes N] [--pods P]
"""
import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checker  # noqa: E402
import generator  # noqa: E402


def place_all(w, rng):
    pvs = {p["metadata"]["name"]: json.loads(json.dumps(p)) for p in w["pvs"]}
    for p in pvs.values():
        p["status"] = {"phase": "Bound" if p["spec"].get("claimRef") else "Available"}
    res = {"seed": w["seed"], "nodes": w["nodes"], "pods": [], "pvs": list(pvs.values()),
           "pvcs": json.loads(json.dumps(w["pvcs"])), "storageclasses": w["storageclasses"], "bind_order": []}
    c = checker.Checker(res)
    placed, pending = [], []

    def try_place(pod):
        fits = c.feasible_nodes(pod, placed)
        if not fits:
            return False
        n = rng.choice(fits)
        node = c.nodes[n]
        for ck in c.pod_claims(pod):   # bind the pod's unbound claims as the PV controller would
            pvc = c.pvcs[ck]
            if pvc["spec"].get("volumeName"):
                continue
            pv = c.find_matching_pv(pvc, node, set())
            if pv is None:
                name = "dyn-" + ck.replace("/", "-")
                pv = {"metadata": {"name": name}, "status": {"phase": "Bound"},
                      "spec": {"capacity": {"storage": pvc["spec"]["resources"]["requests"]["storage"]},
                               "accessModes": pvc["spec"]["accessModes"],
                               "storageClassName": pvc["spec"]["storageClassName"],
                               "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                                   {"key": checker.HOST, "operator": "In", "values": [n]}]}]}}}}
                c.pvs[name] = pv
            pv["spec"]["claimRef"] = {"namespace": pvc["metadata"]["namespace"], "name": pvc["metadata"]["name"]}
            pv["status"]["phase"] = "Bound"
            pvc["spec"]["volumeName"] = pv["metadata"]["name"]
            pvc["metadata"].setdefault("annotations", {})[checker.ANN_BIND_COMPLETED] = "yes"
        placed.append((pod, n))
        return True

    for pod in w["pods"]:
        c.pods[checker.key(pod)] = pod
        if try_place(pod):
            progress = True
            while progress:   # a bind may make an earlier pod feasible
                progress = False
                for p in list(pending):
                    if try_place(p):
                        pending.remove(p)
                        progress = True
        else:
            pending.append(pod)
    return [checker.key(p) for p in pending]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1-100")
    ap.add_argument("--tries", type=int, default=5)
    ap.add_argument("--kinds", default="all")
    ap.add_argument("--nodes", type=int, default=12)
    ap.add_argument("--pods", type=int, default=40)
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    unstable, total_pending = 0, 0
    for s in seeds:
        w = generator.generate(s, a.nodes, a.pods, generator.parse_kinds(a.kinds))
        outs = [place_all(w, random.Random(t)) for t in range(a.tries)]
        counts = [len(o) for o in outs]
        total_pending += counts[0]
        if len(set(counts)) > 1:
            unstable += 1
            diff = set.union(*[set(o) for o in outs]) - set.intersection(*[set(o) for o in outs])
            print("seed=%d pending counts %s differ: %s" % (s, counts, ",".join(sorted(diff))))
    print("simulate: %d seeds, %d with placement-dependent pending counts, mean pending %.1f of %d"
          % (len(seeds), unstable, total_pending / len(seeds), a.pods))


if __name__ == "__main__":
    main()
