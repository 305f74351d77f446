#!/usr/bin/env python3
"""Property-suite harness: one generated workload through one scheduler, pods one at a time.

  run.py --seed S --kinds K --scheduler-name NAME --server URL --ca CA --cert CRT --key KEY --out FILE

1. Removes what an earlier run left (pods and claims in the suite's namespaces,
   PVs, nodes, the suite's StorageClasses and PriorityClasses) and waits until
   it is gone.
2. Creates the PriorityClasses, StorageClasses, claims and PVs (and sets their
   status, as the PV controller would), then the nodes (plain Node objects, no
   kubelet), then a sentinel pod pinned to the last node: once it is bound the
   scheduler has seen every node.
3. Submits the pods in order, one at a time: each is posted only after the
   previous one was bound or reported unschedulable (PodScheduled=False), so
   the bind order and the state at each bind are well defined. A watch on pods
   records every bind in resourceVersion order.
4. Plays the PV controller's part, since none runs here: when the scheduler sets
   a PV's claimRef (static binding of a WaitForFirstConsumer claim) it binds the
   claim to that PV; when it sets the volume.kubernetes.io/selected-node
   annotation on a claim of a class with a provisioner, it "provisions" a PV with
   node affinity to that node and binds the two. Claims of Immediate classes are
   left alone (the generator gives them no matching PV, so a real PV controller
   would leave them Pending too).
5. After the last pod, waits (up to --settle seconds) while some pending pod is
   feasible on the current state by the checker's filters: the scheduler retries
   unschedulable pods when the cluster changes, and those retries must settle.
6. Writes the workload, the final objects, the bind order and each pod's outcome
   to --out for checker.py.
"""
import argparse
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checker  # noqa: E402
import generator  # noqa: E402
from kube import ApiError, Client  # noqa: E402

SENTINEL_NS = "default"
SENTINEL = "property-sentinel"


def log(msg):
    sys.stderr.write("[property %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def wait_for(pred, timeout, what, interval=0.1):
    end = time.time() + timeout
    while True:
        if pred():
            return True
        if time.time() > end:
            raise SystemExit("run.py: timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(interval)


class Run:
    def __init__(self, api, workload, sched, pod_timeout, settle):
        self.api = api
        self.w = workload
        self.sched = sched
        self.pod_timeout = pod_timeout
        self.settle = settle
        self.lock = threading.Condition()
        self.bound = {}         # pod key -> node
        self.bind_order = []    # [{pod, node, rv, t_bind, t_create}]
        self.unsched = {}       # pod key -> condition message
        self.t_create = {}
        self.stop = threading.Event()
        self.errors = []

    # ------------------------------------------------------------------ reset
    def items(self, path):
        return (self.api.get(path) or {}).get("items") or []

    def clear_finalizers(self, path):
        try:
            self.api.merge_patch(path, {"metadata": {"finalizers": None}})
        except ApiError as e:
            if e.code != 404:
                raise

    def reset(self):
        for ns in self.w["namespaces"] + [SENTINEL_NS]:
            for p in self.items("/api/v1/namespaces/%s/pods" % ns):
                self.api.delete("/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=0" % (ns, p["metadata"]["name"]))
            for c in self.items("/api/v1/namespaces/%s/persistentvolumeclaims" % ns):
                path = "/api/v1/namespaces/%s/persistentvolumeclaims/%s" % (ns, c["metadata"]["name"])
                self.clear_finalizers(path)
                self.api.delete(path)
        for pv in self.items("/api/v1/persistentvolumes"):
            path = "/api/v1/persistentvolumes/" + pv["metadata"]["name"]
            self.clear_finalizers(path)
            self.api.delete(path)
        for n in self.items("/api/v1/nodes"):
            self.api.delete("/api/v1/nodes/" + n["metadata"]["name"])
        for sc in self.items("/apis/storage.k8s.io/v1/storageclasses"):
            if sc["metadata"]["name"].startswith("prop-"):
                self.api.delete("/apis/storage.k8s.io/v1/storageclasses/" + sc["metadata"]["name"])
        for pc in self.items("/apis/scheduling.k8s.io/v1/priorityclasses"):
            if pc["metadata"]["name"].startswith("prop-"):
                self.api.delete("/apis/scheduling.k8s.io/v1/priorityclasses/" + pc["metadata"]["name"])

        def empty():
            for ns in self.w["namespaces"] + [SENTINEL_NS]:
                if self.items("/api/v1/namespaces/%s/pods" % ns) or \
                        self.items("/api/v1/namespaces/%s/persistentvolumeclaims" % ns):
                    return False
            return not self.items("/api/v1/persistentvolumes") and not self.items("/api/v1/nodes") and \
                not any(x["metadata"]["name"].startswith("prop-")
                        for x in self.items("/apis/storage.k8s.io/v1/storageclasses") +
                        self.items("/apis/scheduling.k8s.io/v1/priorityclasses"))
        wait_for(empty, 60, "the previous run's objects to go", 0.3)

    # ----------------------------------------------------------------- set-up
    def setup(self):
        for ns in self.w["namespaces"]:
            if self.api.get("/api/v1/namespaces/" + ns, ok404=True) is None:
                self.api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": ns}})
        for pc in self.w["priorityclasses"]:
            self.api.post("/apis/scheduling.k8s.io/v1/priorityclasses", pc)
        for sc in self.w["storageclasses"]:
            self.api.post("/apis/storage.k8s.io/v1/storageclasses", sc)
        uids = {}
        for pvc in self.w["pvcs"]:
            ns = pvc["metadata"]["namespace"]
            made = self.api.post("/api/v1/namespaces/%s/persistentvolumeclaims" % ns, pvc)
            uids[checker.key(made)] = made["metadata"]["uid"]
            if pvc["spec"].get("volumeName"):   # pre-bound: status as the PV controller leaves it
                made["status"] = {"phase": "Bound", "accessModes": pvc["spec"]["accessModes"],
                                  "capacity": {"storage": pvc["spec"]["resources"]["requests"]["storage"]}}
                self.api.put("/api/v1/namespaces/%s/persistentvolumeclaims/%s/status"
                             % (ns, pvc["metadata"]["name"]), made)
        for pv in self.w["pvs"]:
            pv = json.loads(json.dumps(pv))
            ref = pv["spec"].get("claimRef")
            if ref:
                ref["uid"] = uids["%s/%s" % (ref["namespace"], ref["name"])]
            made = self.api.post("/api/v1/persistentvolumes", pv)
            made["status"] = {"phase": "Bound" if ref else "Available"}
            self.api.put("/api/v1/persistentvolumes/%s/status" % pv["metadata"]["name"], made)
        for n in self.w["nodes"]:
            self.api.post("/api/v1/nodes", n)
        # Sentinel: pinned to the last node, tolerates everything, requests nothing, in a
        # namespace no generated term or spread constraint looks at.
        last = self.w["nodes"][-1]["metadata"]["name"]
        sentinel = {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": SENTINEL, "namespace": SENTINEL_NS},
                    "spec": {"schedulerName": self.sched, "terminationGracePeriodSeconds": 0,
                             "nodeSelector": {checker.HOST: last},
                             "tolerations": [{"operator": "Exists"}],
                             "containers": [{"name": "main", "image": "registry.invalid/pause:3"}]}}
        self.api.post("/api/v1/namespaces/%s/pods" % SENTINEL_NS, sentinel)
        spath = "/api/v1/namespaces/%s/pods/%s" % (SENTINEL_NS, SENTINEL)
        wait_for(lambda: (self.api.get(spath).get("spec") or {}).get("nodeName"), 60,
                 "the sentinel pod to be bound (is the scheduler running?)", 0.2)
        self.api.delete(spath + "?gracePeriodSeconds=0")
        wait_for(lambda: self.api.get(spath, ok404=True) is None, 30, "the sentinel pod to go")

    # ------------------------------------------------------------------ watch
    def watch_pods(self, rv):
        while not self.stop.is_set():
            try:
                for ev in self.api.watch("/api/v1/pods", rv, timeout_seconds=300):
                    obj = ev.get("object") or {}
                    if ev.get("type") == "ERROR":
                        raise RuntimeError("watch error: %s" % obj)
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    self.on_pod(ev["type"], obj)
                    if self.stop.is_set():
                        return
            except Exception as e:  # noqa: BLE001 — reported, the run fails
                if self.stop.is_set():
                    return
                self.errors.append("pod watch: %s" % e)
                with self.lock:
                    self.lock.notify_all()
                return

    def on_pod(self, typ, pod):
        ns = pod["metadata"]["namespace"]
        if ns not in self.w["namespaces"] or typ == "DELETED":
            return
        k = checker.key(pod)
        with self.lock:
            node = pod["spec"].get("nodeName")
            if node and k not in self.bound:
                self.bound[k] = node
                self.bind_order.append({"pod": k, "node": node,
                                        "rv": int(pod["metadata"]["resourceVersion"]),
                                        "t_bind": time.monotonic(),
                                        "t_create": self.t_create.get(k, 0.0)})
            for c in (pod.get("status") or {}).get("conditions") or []:
                if c.get("type") == "PodScheduled" and c.get("status") == "False":
                    self.unsched[k] = "%s: %s" % (c.get("reason"), c.get("message"))
            self.lock.notify_all()

    # ---------------------------------------------------------- PV controller
    def pv_controller(self):
        """Plays the PV controller for WaitForFirstConsumer claims (see the module comment)."""
        classes = {c["metadata"]["name"]: c for c in self.w["storageclasses"]}
        while not self.stop.is_set():
            try:
                self.pv_controller_pass(classes)
            except Exception as e:  # noqa: BLE001
                if not self.stop.is_set():
                    self.errors.append("pv controller: %s" % e)
                return
            self.stop.wait(0.1)

    def bind_claim(self, pvc, pv_name):
        ns, name = pvc["metadata"]["namespace"], pvc["metadata"]["name"]
        path = "/api/v1/namespaces/%s/persistentvolumeclaims/%s" % (ns, name)
        made = self.api.merge_patch(path, {"metadata": {"annotations": {checker.ANN_BIND_COMPLETED: "yes"}},
                                           "spec": {"volumeName": pv_name}})
        made["status"] = {"phase": "Bound", "accessModes": pvc["spec"]["accessModes"],
                          "capacity": {"storage": pvc["spec"]["resources"]["requests"]["storage"]}}
        self.api.put(path + "/status", made)
        pv = self.api.get("/api/v1/persistentvolumes/" + pv_name)
        pv["status"] = {"phase": "Bound"}
        self.api.put("/api/v1/persistentvolumes/%s/status" % pv_name, pv)

    def pv_controller_pass(self, classes):
        pvs = self.items("/api/v1/persistentvolumes")
        claims = {}
        for ns in self.w["namespaces"]:
            for c in self.items("/api/v1/namespaces/%s/persistentvolumeclaims" % ns):
                claims[checker.key(c)] = c
        # static binding chosen by the scheduler: PV.spec.claimRef set, claim not bound yet
        for pv in pvs:
            ref = pv["spec"].get("claimRef")
            if not ref or (pv.get("status") or {}).get("phase") == "Bound":
                continue
            c = claims.get("%s/%s" % (ref.get("namespace"), ref.get("name")))
            if c is None or c["metadata"]["uid"] != ref.get("uid") or c["spec"].get("volumeName"):
                continue
            log("pv controller: binding claim %s to PV %s" % (checker.key(c), pv["metadata"]["name"]))
            self.bind_claim(c, pv["metadata"]["name"])
        # dynamic provisioning requested by the scheduler: selected-node annotation
        for k, c in claims.items():
            node = (c["metadata"].get("annotations") or {}).get(checker.ANN_SELECTED_NODE)
            sc = classes.get(c["spec"].get("storageClassName") or "")
            if not node or c["spec"].get("volumeName") or sc is None or \
                    sc.get("provisioner") in (None, "", checker.NO_PROVISIONER):
                continue
            name = "pvc-" + c["metadata"]["uid"]
            size = c["spec"]["resources"]["requests"]["storage"]
            log("pv controller: provisioning PV %s on %s for claim %s" % (name, node, k))
            pv = {"apiVersion": "v1", "kind": "PersistentVolume",
                  "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": sc["provisioner"]}},
                  "spec": {"capacity": {"storage": size}, "accessModes": c["spec"]["accessModes"],
                           "persistentVolumeReclaimPolicy": "Delete", "storageClassName": sc["metadata"]["name"],
                           "local": {"path": "/mnt/" + name},
                           "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                        "namespace": c["metadata"]["namespace"], "name": c["metadata"]["name"],
                                        "uid": c["metadata"]["uid"]},
                           "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                               {"key": checker.HOST, "operator": "In", "values": [node]}]}]}}}}
            try:
                self.api.post("/api/v1/persistentvolumes", pv)
            except ApiError as e:
                if e.code != 409:
                    raise
            self.bind_claim(c, name)

    # -------------------------------------------------------------------- run
    def submit_all(self):
        for pod in self.w["pods"]:
            pod = json.loads(json.dumps(pod))
            pod["spec"]["schedulerName"] = self.sched
            k = checker.key(pod)
            with self.lock:
                self.t_create[k] = time.monotonic()
            self.api.post("/api/v1/namespaces/%s/pods" % pod["metadata"]["namespace"], pod)
            end = time.monotonic() + self.pod_timeout
            with self.lock:
                while k not in self.bound and k not in self.unsched and not self.errors:
                    left = end - time.monotonic()
                    if left <= 0:
                        break
                    self.lock.wait(left)
                if self.errors:
                    raise SystemExit("run.py: " + "; ".join(self.errors))

    def snapshot(self):
        out = {"nodes": self.items("/api/v1/nodes"),
               "pvs": self.items("/api/v1/persistentvolumes"),
               "storageclasses": [s for s in self.items("/apis/storage.k8s.io/v1/storageclasses")
                                  if s["metadata"]["name"].startswith("prop-")],
               "pods": [], "pvcs": []}
        for ns in self.w["namespaces"]:
            out["pods"] += self.items("/api/v1/namespaces/%s/pods" % ns)
            out["pvcs"] += self.items("/api/v1/namespaces/%s/persistentvolumeclaims" % ns)
        return out

    def settle_pending(self):
        """Waits while a pending pod passes every filter somewhere (a retry is due)."""
        end = time.monotonic() + self.settle
        quiet_since = time.monotonic()
        last_binds = -1
        while True:
            snap = self.snapshot()
            c = checker.Checker(dict(snap, bind_order=[], seed=self.w["seed"]))
            feasible = [k for k in c.pending() if c.feasible_nodes(c.pods[k])]
            with self.lock:
                nb = len(self.bind_order)
            if nb != last_binds:
                last_binds, quiet_since = nb, time.monotonic()
            # a bind may still be on its way even when nothing looks feasible: 0.5 s of quiet
            if not feasible and time.monotonic() - quiet_since >= 0.5:
                return snap
            if time.monotonic() > end:
                log("settle: still feasible after %ss: %s" % (self.settle, ", ".join(feasible)))
                return snap
            time.sleep(0.25)

    def run(self):
        self.reset()
        lst = self.api.get("/api/v1/pods")
        rv = lst["metadata"]["resourceVersion"]
        watcher = threading.Thread(target=self.watch_pods, args=(rv,), daemon=True)
        watcher.start()
        pvc_thread = None
        if self.w["storageclasses"]:
            pvc_thread = threading.Thread(target=self.pv_controller, daemon=True)
            pvc_thread.start()
        t0 = time.monotonic()
        self.setup()
        self.submit_all()
        snap = self.settle_pending()
        elapsed = time.monotonic() - t0
        self.stop.set()
        if pvc_thread:
            pvc_thread.join(5)
        if self.errors:
            raise SystemExit("run.py: " + "; ".join(self.errors))
        with self.lock:
            outcome = {}
            for p in self.w["pods"]:
                k = checker.key(p)
                outcome[k] = "bound" if k in self.bound else ("unschedulable" if k in self.unsched else "timeout")
            order = sorted(self.bind_order, key=lambda b: b["rv"])
        immediate = [checker.key(c) for c in self.w["pvcs"]
                     if not c["spec"].get("volumeName") and
                     any(s["metadata"]["name"] == c["spec"].get("storageClassName") and
                         s.get("volumeBindingMode") != "WaitForFirstConsumer" for s in self.w["storageclasses"])]
        return dict(snap, seed=self.w["seed"], kinds=self.w["kinds"], scheduler=self.sched,
                    pod_timeout=self.pod_timeout, bind_order=order, outcome=outcome,
                    unschedulable_messages=dict(self.unsched), immediate_unbound_claims=immediate,
                    workload=self.w, elapsed=round(elapsed, 2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--nodes", type=int, default=12)
    ap.add_argument("--pods", type=int, default=40)
    ap.add_argument("--kinds", default="all")
    ap.add_argument("--scheduler-name", required=True)
    ap.add_argument("--server", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--pod-timeout", type=float, default=30.0)
    ap.add_argument("--settle", type=float, default=30.0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    w = generator.generate(a.seed, a.nodes, a.pods, generator.parse_kinds(a.kinds))
    api = Client(a.server, a.ca, a.cert, a.key)
    log("seed=%d kinds=%s scheduler=%s nodes=%d pods=%d" % (a.seed, ",".join(w["kinds"]), a.scheduler_name,
                                                            len(w["nodes"]), len(w["pods"])))
    res = Run(api, w, a.scheduler_name, a.pod_timeout, a.settle).run()
    with open(a.out, "w") as f:
        json.dump(res, f)
    pend = sum(1 for p in res["pods"] if not p["spec"].get("nodeName"))
    log("seed=%d scheduler=%s: %d bound, %d pending in %.1fs" % (a.seed, a.scheduler_name,
                                                                  len(res["pods"]) - pend, pend, res["elapsed"]))


if __name__ == "__main__":
    main()
