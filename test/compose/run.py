#!/usr/bin/env python3
"""Composition suite: drives one seed's scenario against a running API server + ai-scheduler.

  run.py --seed S [--scale F] --server URL --ca CA --cert CRT --key KEY [--out DIR]
         [--control DIR] [--sched-url URL --token T]

1. Removes what an earlier seed left (pods of default and the reservation namespace,
   PodGroups, PDBs, Queues, Pools, nodes) and waits until it is gone.
2. Creates the scenario's Pools, Queues and nodes (plain Node objects with status),
   starts the fake kubelet (kubelet.py) and a controller that recreates, under the same
   name, the pods marked compose.aibee.cn/restart that the scheduler evicted.
3. Runs the steps in order; after each, a short pause, a snapshot (nodes, pods, pools,
   queues, podgroups, pdbs, events) and checker.check_step + check_history.
4. Freezes the kubelet (no more pods finish), waits until the cluster settles (no pod
   terminating or bound-but-not-running, bindings unchanged for 6 s; at most --settle s),
   then checker.check_settled, retried for up to 20 s while it fails (the scheduler's
   retries must have had their chance), and the step checks once more.
DRA (issue 36; a scenario with "dra", generator.py): --standin URL is the stand-in API
server (test/e2e/standin_apiserver.py, the admin's --token) that keeps pods'
spec.resourceClaims; pods with a claim are created through it and every snapshot's pods
are read through it, with the claims and slices (snapshot: "claims", "slices",
"dra_stable"); the rest goes straight to the API server. The scenario's DeviceClass,
ResourceSlices and ResourceClaimTemplates are created in step 2, a pod's standalone
claim just before the pod; a removed node's slice is deleted with it (kube's garbage
collector would: the slice's owner is the Node). t_composition.sh runs the fake
resourceclaim controller (claims from templates, reservations of gone pods cleared,
deallocation). Every seed's reset removes DRA's objects too.
A restart step stops and starts the scheduler through t_composition.sh (--control); with
--sched-url and --token a sampler reads pending pods' decision records (queue-age). At the
end the rules over the pod watch's timeline run once (flush-wait, nomination-restart,
queue-age) and the summary gives the flush-wait delays.
Prints "SEED <n>: ok" or every failure (each names the seed, the step, the objects and
the rule); exit 1 on failure. --out DIR keeps the scenario, the snapshots of failing
checks and the final one.
"""
import argparse
import json
import os
import sys
import ssl
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checker  # noqa: E402
import generator  # noqa: E402
from kubelet import ACK_ANN, ApiError, Client, Kubelet  # noqa: E402

GPU = checker.GPU

NS = "default"
PG_API = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/%s/podgroups" % NS
PDB_API = "/apis/policy/v1beta1/namespaces/%s/poddisruptionbudgets" % NS
Q_API = "/apis/resource.aibee.cn/v1alpha1/queues"
POOL_API = "/apis/resource.aibee.cn/v1alpha1/pools"
DRA_API = "/apis/resource.k8s.io/v1"
CLAIM_API = DRA_API + "/namespaces/%s/resourceclaims" % NS
TMPL_API = DRA_API + "/namespaces/%s/resourceclaimtemplates" % NS
SLICE_API = DRA_API + "/resourceslices"
CLASS_API = DRA_API + "/deviceclasses"
T0 = time.time()


def log(msg):
    sys.stderr.write("[compose %s +%.0fs] %s\n" % (time.strftime("%H:%M:%S"), time.time() - T0, msg))
    sys.stderr.flush()


def wait_for(pred, timeout, what, interval=0.5):
    end = time.time() + timeout
    while not pred():
        if time.time() > end:
            raise SystemExit("run.py: timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(interval)


def names(c, path):
    r = c.get(path, ok=(404,))
    return [o["metadata"]["name"] for o in (r or {}).get("items", [])]


def reset_dra(c):
    """DRA's objects of an earlier seed: claims lose their finalizer first (the fake
    controller removes it only once a claim's pods are gone and it was deallocated, and
    the pods go at once here). 404: DRA's CRDs are not installed."""
    for cl in (c.get(CLAIM_API, ok=(404,)) or {}).get("items", []):
        if cl["metadata"].get("finalizers"):
            c.merge_patch("%s/%s" % (CLAIM_API, cl["metadata"]["name"]), {"metadata": {"finalizers": None}})
    for path in (CLAIM_API, TMPL_API, SLICE_API, CLASS_API):
        c.req("DELETE", path, ok=(404,))
    wait_for(lambda: not any(names(c, p) for p in (CLAIM_API, SLICE_API, CLASS_API, TMPL_API)), 60, "DRA objects gone")


def reset(c):
    grace0 = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
    for ns in (NS, checker.RES_NS):
        c.req("DELETE", "/api/v1/namespaces/%s/pods" % ns, grace0, ok=(404,))
    for path in (PG_API, PDB_API):
        c.req("DELETE", path, ok=(404,))
    c.req("DELETE", "/api/v1/namespaces/%s/events" % NS, ok=(404,))
    wait_for(lambda: not c.get("/api/v1/pods")["items"], 60, "pods gone")
    for path in (Q_API, POOL_API, "/api/v1/nodes"):
        for n in names(c, path):
            c.delete("%s/%s" % (path, n))
    wait_for(lambda: not any(names(c, p) for p in (Q_API, POOL_API, "/api/v1/nodes", PG_API, PDB_API)), 60,
             "nodes, queues, pools, podgroups, pdbs gone")
    reset_dra(c)
    time.sleep(1)   # the scheduler's informers see the deletions


def node_obj(n):
    res = {"cpu": str(n["cpu"]), "memory": n["memory"], "pods": "110", "ephemeral-storage": "100Gi",
           "nvidia.com/gpu": str(n["gpu"])}
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": n["name"], "labels": dict(n["labels"], **{"kubernetes.io/hostname": n["name"],
                                                                              "kubernetes.io/os": "linux"})},
            "spec": {},
            "status": {"capacity": res, "allocatable": res,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "compose fake node", "lastHeartbeatTime": now,
                                       "lastTransitionTime": now}],
                       "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                       "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "v1.20.2",
                                    "kubeProxyVersion": "v1.20.2", "containerRuntimeVersion": "fake://0",
                                    "osImage": "compose", "kernelVersion": "0", "machineID": "", "systemUUID": "",
                                    "bootID": ""}}}


def pod_obj(p):
    labels = dict(p["labels"], app="compose")
    if p["queue"]:
        labels["resource.aibee.cn/queue"] = p["queue"]
    if p["group"]:
        labels[checker.PG_LABEL] = p["group"]
    ann = {checker.POOL_ANN: p["pool"], "compose.aibee.cn/run-seconds": str(p["run"]),
           "compose.aibee.cn/restart": "true" if p["restart"] else "false"}
    if p["fraction"]:
        ann["gpu-fraction"] = p["fraction"]
    if p.get("checkpointGrace"):
        ann[checker.CKPT_GRACE_ANN] = p["checkpointGrace"]
    if p.get("ackAfter"):
        ann[ACK_ANN] = str(p["ackAfter"])
    if p.get("minRuntime"):   # asks less than its queue gives (never more: checker.min_runtime)
        ann[checker.PREEMPT_MIN_ANN] = p["minRuntime"]
        ann[checker.RECLAIM_MIN_ANN] = p["minRuntime"]
    req = {"cpu": p["cpu"], "memory": p["memory"]}
    res = {"requests": req}
    if p["gpu"]:
        req["nvidia.com/gpu"] = str(p["gpu"])
        res["limits"] = {"nvidia.com/gpu": str(p["gpu"])}
    spec = {"schedulerName": checker.SCHED, "terminationGracePeriodSeconds": 0,
            "priorityClassName": p["priorityClass"],
            "containers": [{"name": "main", "image": "registry.invalid/pause:3", "resources": res}]}
    cl = p.get("claim")
    if cl:   # one DRA device, through a template or the pod's own claim (generator.py _dra)
        pc = {"name": "gpu"}
        if cl.get("template"):
            pc["resourceClaimTemplateName"] = cl["template"]
        else:
            pc["resourceClaimName"] = cl["claim"]
        spec["resourceClaims"] = [pc]
        res["claims"] = [{"name": "gpu"}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": p["name"], "namespace": NS, "labels": labels, "annotations": ann},
            "spec": spec}


def dra_request(dra, model):
    ex = {"deviceClassName": dra["class"], "allocationMode": "ExactCount", "count": 1}
    if model:
        ex["selectors"] = [{"cel": {"expression": 'device.attributes["%s"].model == "%s"' % (dra["driver"], model)}}]
    return {"devices": {"requests": [{"name": "gpu", "exactly": ex}]}}


def dra_objects(dra):
    """The scenario's DeviceClass, ResourceSlices (node-local, one pool per node,
    complete) and ResourceClaimTemplates, as (path, object)."""
    out = [(CLASS_API, {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": dra["class"]},
                        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "%s"' % dra["driver"]}}]}})]
    for sl in dra["slices"]:
        devs = [{"name": d["name"], "attributes": {"model": {"string": d["model"]}, "numa": {"int": d["numa"]}},
                 "capacity": {"memory": {"value": "80Gi"}}} for d in sl["devices"]]
        out.append((SLICE_API, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": sl["name"]},
                                "spec": {"driver": dra["driver"], "nodeName": sl["node"],
                                         "pool": {"name": sl["node"], "generation": 1, "resourceSliceCount": 1},
                                         "devices": devs}}))
    for t in dra["templates"]:
        out.append((TMPL_API, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                               "metadata": {"name": t["name"]}, "spec": {"spec": dra_request(dra, t["model"])}}))
    return out


class PodWatch:
    """Every version of every pod, from a LIST and then a WATCH resumed at the last
    resourceVersion (re-listed when the server says it expired): which uids it saw at
    all and which were ever bound, and the timeline of every version with its arrival
    time (checker.py "on the pod watch's timeline"), to which the harness adds node
    additions and scheduler restarts. Snapshots come 1.5 s apart and would miss a pod
    bound and evicted between two; the pending-victim, flush-wait and nomination-restart
    rules need every version."""

    def __init__(self, client):
        self.c = client
        self.watched, self.ever_bound = set(), set()
        self.timeline = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.errors = 0
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def note(self, p, kind="LIST"):
        m = p.get("metadata") or {}
        with self.lock:
            self.watched.add(m.get("uid", ""))
            if checker.node_of(p):
                self.ever_bound.add(m.get("uid", ""))
            self.timeline.append((time.time(), kind, p))

    def mark(self, kind, what):
        with self.lock:
            self.timeline.append((time.time(), kind, what))

    def sets(self):
        with self.lock:
            return set(self.watched), set(self.ever_bound)

    def done_at(self):
        """{uid: when the watch first saw it deleted or in a terminal phase}: the claim
        rule dra-reserved-gone gives the claim controller its time from then."""
        out = {}
        with self.lock:
            for t, kind, p in self.timeline:
                if kind in ("ADDED", "MODIFIED", "DELETED", "LIST"):
                    uid = p["metadata"].get("uid", "")
                    if uid not in out and (kind == "DELETED" or checker.terminal(p)):
                        out[uid] = t
        return out

    def history(self):
        with self.lock:
            return list(self.timeline)

    def loop(self):
        rv = None
        while not self.stop.is_set():
            try:
                if rv is None:
                    lst = self.c.get("/api/v1/pods")
                    live = {p["metadata"]["uid"] for p in lst["items"]}
                    with self.lock:
                        # gone while the stream was cut: whether it was bound is unknown
                        self.watched -= {u for u in self.watched if u not in live and u not in self.ever_bound}
                        if self.timeline:   # the first list is no cut
                            self.timeline.append((time.time(), "RELIST", None))
                    for p in lst["items"]:
                        self.note(p)
                    rv = lst["metadata"]["resourceVersion"]
                rv = self.follow(rv)
            except Exception:  # a cut stream or an expired version: list again
                self.errors += 1
                rv = None
                self.stop.wait(0.5)

    def follow(self, rv):
        path = "/api/v1/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=30&resourceVersion=" + rv
        r = urllib.request.Request(self.c.server + path, method="GET")
        with urllib.request.urlopen(r, context=self.c.ctx, timeout=45) as resp:
            for line in resp:
                if self.stop.is_set():
                    break
                ev = json.loads(line)
                obj = ev.get("object") or {}
                if ev.get("type") == "ERROR":
                    return None
                rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                if ev.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    self.note(obj, ev["type"])
        return rv


class AgeSampler:
    """Samples the decision record (GET /debug/pods/NS/NAME on the scheduler's port, the
    admin's bearer token) of every pending lone pod of ours every `every` s: its
    "attempts" and "time", for checker.check_queue_age. `instance` counts scheduler
    starts; the restart step holds `lock` while it restarts, so no sample straddles two."""

    def __init__(self, client, url, token, every=2.0):
        self.c, self.url, self.token, self.every = client, url.rstrip("/"), token, every
        self.samples = {}           # uid -> [(t, instance, attempts, record time)]
        self.instance = 1
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.errors = 0
        self.ctx = ssl.create_default_context()
        self.ctx.check_hostname = False
        self.ctx.verify_mode = ssl.CERT_NONE   # the scheduler's self-signed serving certificate
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def record(self, ns, name):
        r = urllib.request.Request("%s/debug/pods/%s/%s" % (self.url, ns, name),
                                   headers={"Authorization": "Bearer " + self.token})
        try:
            with urllib.request.urlopen(r, context=self.ctx, timeout=10) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            if e.code != 404:   # 404: no decision yet, or bound meanwhile
                self.errors += 1
            return None
        except Exception:
            self.errors += 1
            return None

    def pending_lone(self):
        return {p["metadata"]["uid"]: p for p in self.c.get("/api/v1/namespaces/%s/pods" % NS)["items"]
                if checker.pending(p) and not (p["metadata"].get("labels") or {}).get(checker.PG_LABEL)}

    def loop(self):
        while not self.stop.wait(self.every):
            with self.lock:
                try:
                    got = []
                    for uid, p in self.pending_lone().items():
                        rec = self.record(NS, p["metadata"]["name"])
                        if rec and rec.get("kind") == "pod" and isinstance(rec.get("attempts"), int):
                            got.append((uid, (time.time(), self.instance, rec["attempts"], rec.get("time") or "")))
                    # A record is fetched by name: one whose pod was replaced meanwhile
                    # (the controller recreates evicted pods) may be the new one's.
                    still = self.pending_lone()
                except Exception:
                    self.errors += 1
                    continue
                for uid, smp in got:
                    if uid in still:
                        self.samples.setdefault(uid, []).append(smp)


class Runner:
    def __init__(self, a):
        self.a = a
        self.c = Client(a.server, a.ca, a.cert, a.key)
        self.scn = generator.generate(a.seed, a.scale)
        self.dra = self.scn.get("dra")
        if self.dra and not (a.standin and a.token):
            raise SystemExit("run.py: seed %d has DRA: --standin and --token are needed" % a.seed)
        # pods with claims and the snapshots' pods go through the stand-in (it keeps
        # spec.resourceClaims and status.resourceClaimStatuses, which v1.20 drops)
        self.si = Client(a.standin, a.ca, "", "", token=a.token) if self.dra else None
        self.kubelet = Kubelet(self.c, log=log)
        self.watch = PodWatch(self.c)
        self.sampler = AgeSampler(self.c, a.sched_url, a.token) if a.sched_url and a.token else None
        self.restarts = 0
        self.carried = []           # pods nominated when a restart began
        self.seen = {}              # uid -> last pod version seen
        self.created = {}           # name -> (scenario pod, uid of the current incarnation, recreations)
        self.drained = set()        # "ns/name/uid" deleted by a drain
        self.failures = []
        self.lock = threading.Lock()
        self.stop = threading.Event()

    # -- objects
    def create_pod(self, p):
        cl = p.get("claim") or {}
        if cl.get("claim"):   # the pod's own claim, kept across its recreations
            self.c.post(CLAIM_API, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                    "metadata": {"name": cl["claim"]},
                                    "spec": dra_request(self.dra, cl.get("model"))}, ok=(409,))
        try:
            o = (self.si if cl else self.c).post("/api/v1/namespaces/%s/pods" % NS, pod_obj(p))
        except ApiError as e:
            if e.code == 409:
                return
            raise
        with self.lock:
            old = self.created.get(p["name"])
            self.created[p["name"]] = (p, o["metadata"]["uid"], (old[2] + 1) if old else 0)

    def setup(self):
        s = self.scn
        for pl in s["pools"]:
            spec = {"nodeSelector": {"matchLabels": {"pool": pl["name"]}},
                    "disableSharing": pl["disableSharing"],
                    "disableBorrowing": pl["disableBorrowing"],
                    "disablePreemption": pl["disablePreemption"]}
            spec.update({k: pl[k] for k in ("preemptMinRuntime", "reclaimMinRuntime") if pl.get(k)})
            self.c.post(POOL_API, {"apiVersion": "resource.aibee.cn/v1alpha1", "kind": "Pool",
                                   "metadata": {"name": pl["name"]}, "spec": spec})
        for q in s["queues"]:   # parents come first in the list
            spec = {"resources": q["resources"]}
            if q["parent"]:
                spec["parentQueue"] = q["parent"]
            spec.update({k: q[k] for k in ("preemptMinRuntime", "reclaimMinRuntime", "checkpointGrace") if q.get(k)})
            self.c.post(Q_API, {"apiVersion": "resource.aibee.cn/v1alpha1", "kind": "Queue",
                                "metadata": {"name": q["name"]}, "spec": spec})
        for n in s["nodes"]:
            self.c.post("/api/v1/nodes", node_obj(n))
        first = {n["name"] for n in s["nodes"]}
        for path, o in dra_objects(self.dra) if self.dra else []:
            if path != SLICE_API or o["spec"]["nodeName"] in first:   # added nodes' slices: with them
                self.c.post(path, o)
        time.sleep(1)

    def controller(self):
        """Recreates restartable pods the scheduler evicted (gone, not deleted by the harness)."""
        while not self.stop.wait(0.5):
            try:
                live = {p["metadata"]["name"] for p in self.c.get("/api/v1/namespaces/%s/pods" % NS)["items"]}
                for name, (p, uid, n) in list(self.created.items()):
                    if not p["restart"] or name in live or n >= 3:
                        continue
                    k = "%s/%s/%s" % (NS, name, uid)
                    if k in self.kubelet.deleted or k in self.drained:
                        continue
                    log("controller: %s was evicted; recreating it" % name)
                    self.create_pod(p)
            except Exception as e:
                log("controller: %s" % e)

    def step(self, i, st):
        op = st["op"]
        if op == "pods":
            for p in st["pods"]:
                self.create_pod(p)
        elif op == "gang":
            ann = {}
            if st["topology"]:
                ann["resource.aibee.cn/topology-" + st["topology"]] = "network.aibee.cn/block"
            self.c.post(PG_API, {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                                 "metadata": {"name": st["name"], "annotations": ann,
                                              "labels": {"resource.aibee.cn/queue": st["pods"][0]["queue"]}},
                                 "spec": {"minMember": st["minMember"],
                                          "scheduleTimeoutSeconds": st["scheduleTimeoutSeconds"]}})
            for p in st["pods"]:
                self.create_pod(p)
        elif op == "pdb":
            o = self.c.post(PDB_API, {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
                                      "metadata": {"name": st["name"]},
                                      "spec": {"minAvailable": 1, "selector": {"matchLabels": {"compose-pdb": st["name"]}}}})
            # no disruption controller runs here: say "none allowed" as it would for a budget at its floor
            self.c.merge_patch(PDB_API + "/%s/status" % st["name"], {"status": {
                "disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1,
                "observedGeneration": o["metadata"].get("generation", 1)}}, ok=())
        elif op == "add_node":
            self.c.post("/api/v1/nodes", node_obj(st["node"]))
            for path, o in dra_objects(self.dra) if self.dra else []:
                if path == SLICE_API and o["spec"]["nodeName"] == st["node"]["name"]:
                    self.c.post(path, o)
            self.watch.mark("NODE_ADDED", st["node"]["name"])
        elif op == "remove_node":
            n = st["node"]
            self.c.merge_patch("/api/v1/nodes/" + n, {"spec": {"unschedulable": True}})
            for p in self.c.get("/api/v1/pods?fieldSelector=spec.nodeName%3D" + n)["items"]:
                m = p["metadata"]
                self.drained.add("%s/%s/%s" % (m["namespace"], m["name"], m["uid"]))
                self.kubelet._del(p, "drain of " + n)
            self.c.delete("/api/v1/nodes/" + n)
            if self.dra:
                self.c.delete("%s/%s-%s" % (SLICE_API, n, self.dra["driver"]))
        elif op == "wait":
            time.sleep(st["seconds"])
        elif op == "restart":
            self.restart(i)

    def restart(self, i):
        """Asks t_composition.sh (--control DIR: it watches for DIR/restart.req) to stop the
        scheduler by its pid (SIGTERM) and start it again; DIR/restart.done then holds the
        old one's exit code. Without --control the step is skipped."""
        if not self.a.control:
            log("step %d: restart skipped (no --control)" % i)
            return
        req, done = os.path.join(self.a.control, "restart.req"), os.path.join(self.a.control, "restart.done")
        # The restart is meant to catch a preemption in flight (rule nomination-restart):
        # up to 20 s for a pending pod that carries a nomination.
        end, noms = time.time() + 20, []
        while time.time() < end and not noms:
            noms = [checker.key(p) for p in self.c.get("/api/v1/namespaces/%s/pods" % NS)["items"]
                    if checker.pending(p) and (p.get("status") or {}).get("nominatedNodeName")]
            if not noms:
                time.sleep(0.2)
        self.carried += noms
        lock = self.sampler.lock if self.sampler else threading.Lock()
        with lock:
            if os.path.exists(done):
                os.unlink(done)
            t_stop = time.time()
            with open(req, "w") as f:
                f.write("%d\n" % i)
            wait_for(lambda: os.path.exists(done), 120, "the scheduler's restart")
            rc = open(done).read().strip()
            self.restarts += 1
            if self.sampler:
                self.sampler.instance += 1
            self.watch.mark("RESTART", (t_stop, time.time()))
        log("step %d: scheduler restarted (the old one exited %s); nominated then: %s" % (i, rc, ", ".join(noms) or "none"))
        if rc != "0":
            self.failures.append(checker.fmt({"seed": self.a.seed, "step": "%d restart" % i}, "restart", "scheduler",
                                             "exited %s on SIGTERM at the restart (want 0; see its log)" % rc))

    # -- observation
    def snapshot(self):
        g = self.c.get
        s = {"nodes": g("/api/v1/nodes")["items"], "pods": g("/api/v1/pods")["items"],
             "pools": g(POOL_API)["items"], "queues": g(Q_API)["items"],
             "podgroups": g(PG_API)["items"], "pdbs": g(PDB_API)["items"],
             "events": g("/api/v1/events")["items"]}
        if self.dra:
            # Pods, then claims, then pods again: a pod of the same resourceVersion in
            # both lists was in that state while the claims were read (dra_stable), so
            # the claim rules judge it against them without a race.
            first = {p["metadata"]["uid"]: p["metadata"].get("resourceVersion")
                     for p in self.si.get("/api/v1/pods")["items"]}
            s["claims"] = g(CLAIM_API)["items"]
            s["slices"] = g(SLICE_API)["items"]
            s["pods"] = self.si.get("/api/v1/pods")["items"]
            s["dra_stable"] = sorted(p["metadata"]["uid"] for p in s["pods"]
                                     if first.get(p["metadata"]["uid"]) == p["metadata"].get("resourceVersion"))
            s["time"] = time.time()
        for p in s["pods"]:
            self.seen[p["metadata"]["uid"]] = p
        return s

    def ctx(self, label):
        gangs = set()
        for k in list(self.drained) + [k for k, why in self.kubelet.deleted.items() if why.startswith("podgc")]:
            p = self.seen.get(k.rsplit("/", 1)[1])
            grp = ((p or {}).get("metadata", {}).get("labels") or {}).get(checker.PG_LABEL)
            if grp:
                gangs.add("%s/%s" % (NS, grp))
        node_pools = {n["name"]: n["pool"] for n in self.scn["nodes"]}
        node_pools.update({st["node"]["name"]: st["node"]["pool"] for st in self.scn["steps"] if st["op"] == "add_node"})
        watched, ever_bound = self.watch.sets()
        nodes = self.scn["nodes"] + [st["node"] for st in self.scn["steps"] if st["op"] == "add_node"]
        node_alloc = {n["name"]: {"cpu": str(n["cpu"]), "memory": n["memory"], GPU: str(n["gpu"]), "pods": "110"}
                      for n in nodes}
        return {"seed": self.a.seed, "step": label, "seen": self.seen, "disrupted_gangs": gangs, "node_pools": node_pools,
                "node_alloc": node_alloc, "pod_done_at": self.watch.done_at(),
                "watched": watched, "ever_bound": ever_bound,
                "harness_deleted": dict(self.kubelet.deleted),
                "ckpt_requested": dict(self.kubelet.ckpt_requested)}

    def record(self, label, snap, found):
        new = [f for f in found if f.split(": RULE ", 1)[1] not in {x.split(": RULE ", 1)[1] for x in self.failures}]
        for f in new:
            log("FAIL " + f)
        self.failures += new
        if new and self.a.out:
            with open(os.path.join(self.a.out, "seed-%s.snap-%s.json" % (self.a.seed, label.split()[0])), "w") as f:
                json.dump(snap, f)

    def settle(self, timeout):
        end = time.time() + timeout
        last, same_since = None, time.time()
        while True:
            snap = self.snapshot()
            busy = [p for p in snap["pods"] if p["metadata"].get("deletionTimestamp")
                    or (checker.node_of(p) and (p.get("status") or {}).get("phase", "Pending") == "Pending")]
            state = sorted((p["metadata"]["uid"], checker.node_of(p)) for p in snap["pods"])
            if state != last or busy:
                last, same_since = state, time.time()
            elif time.time() - same_since >= 6:
                return snap, True
            if time.time() > end:
                return snap, False
            time.sleep(1)

    def run(self):
        s = self.scn
        log("seed %d: %d pools, %d nodes, %d steps, %d pods" % (
            self.a.seed, len(s["pools"]), len(s["nodes"]), len(s["steps"]),
            sum(len(st.get("pods", [])) for st in s["steps"])))
        if self.a.out:
            with open(os.path.join(self.a.out, "seed-%s.scenario.json" % self.a.seed), "w") as f:
                json.dump(s, f, indent=1)
        reset(self.c)
        self.watch.thread.start()
        if self.sampler:
            self.sampler.thread.start()
        self.setup()
        self.kubelet.start()
        ctl = threading.Thread(target=self.controller, daemon=True)
        ctl.start()
        try:
            for i, st in enumerate(s["steps"]):
                what = st["node"]["name"] if isinstance(st.get("node"), dict) else st.get("node") or st.get("name") or ""
                if st["op"] == "pods":
                    what = ",".join(p["name"] for p in st["pods"])
                label = ("%d %s %s" % (i, st["op"], what)).strip()
                self.step(i, st)
                time.sleep(self.a.pause)
                snap = self.snapshot()
                c = self.ctx(label)
                self.record(label, snap, checker.check_step(snap, c) + checker.check_history(snap, c))
            self.kubelet.freeze()
            snap, ok = self.settle(self.a.settle)
            if not ok:
                log("the cluster did not settle in %ss; checking anyway" % self.a.settle)
            end = time.time() + self.a.retry
            while True:
                c = self.ctx("final")
                found = checker.check_settled(snap, c)
                if not found or time.time() > end:
                    break
                time.sleep(3)
                snap = self.snapshot()
            c = self.ctx("final")
            tl = self.watch.history()
            timed = checker.check_flush_wait(tl, c) + checker.check_restart_nominations(tl, c)
            if self.sampler:
                with self.sampler.lock:
                    timed += checker.check_queue_age(self.sampler.samples, c)
            self.record("final", snap, found + checker.check_step(snap, c) + checker.check_history(snap, c) + timed)
            if self.a.out:
                with open(os.path.join(self.a.out, "seed-%s.final.json" % self.a.seed), "w") as f:
                    json.dump(snap, f)
                with open(os.path.join(self.a.out, "seed-%s.timeline.json" % self.a.seed), "w") as f:
                    json.dump({"timeline": tl, "samples": self.sampler.samples if self.sampler else {}, "ctx": {
                        k: c[k] for k in ("seed", "node_pools", "node_alloc")}}, f)
        finally:
            self.stop.set()
            self.watch.stop.set()
            if self.sampler:
                self.sampler.stop.set()
            self.kubelet.close()
        log("lifecycle: %d checkpoint requests seen, %d acknowledged; %d evictions checked against their minimum runtime" % (
            len(self.kubelet.ckpt_requested), len(self.kubelet.ckpt_acked), len(checker.evictions(snap))))
        n, short, most = checker.eviction_stats(snap, self.seen)
        log("evictions: %d, %d of pods that ran under a minute, at most %d of one workload; pod watch: %d pods, %d restarts" % (
            n, short, most, len(self.watch.sets()[0]), self.watch.errors))
        judged, most, p50 = checker.flush_wait_stats(self.watch.history(), self.ctx("final")["node_pools"])
        log("flush-wait: %d binds judged, delay from the freeing event max %.1fs, p50 %.1fs (bound %ds, flush %ds)" % (
            judged, most, p50, checker.FLUSH_WAIT_BOUND_S, checker.FLUSH_S))
        log("restarts: %d; nominations carried over them: %d" % (self.restarts, len(self.carried)))
        if self.dra:
            uids = {u for u, p in self.seen.items() if (p.get("spec") or {}).get("resourceClaims")}
            bound = uids & self.watch.sets()[1]
            held = [c for c in snap.get("claims", []) if (c.get("status") or {}).get("allocation")]
            log("dra: %d slices, %d pods with a claim seen (snapshots), %d of them ever bound; at the end %d claims, "
                "%d allocated (%d devices)" % (
                    len(self.dra["slices"]), len(uids), len(bound), len(snap.get("claims", [])), len(held),
                    sum(len(c["status"]["allocation"].get("devices", {}).get("results") or []) for c in held)))
        if self.sampler:
            log("queue-age: %d samples of %d pods, %d request errors" % (
                sum(len(v) for v in self.sampler.samples.values()), len(self.sampler.samples), self.sampler.errors))
        if self.kubelet.errors:
            log("kubelet errors (first 3): %s" % self.kubelet.errors[:3])
        if self.failures:
            print("SEED %d: FAILED (%d): replay with COMPOSE_SEEDS=%d" % (self.a.seed, len(self.failures), self.a.seed))
            for f in self.failures:
                print("  " + f)
            return 1
        print("SEED %d: ok (%.0fs)" % (self.a.seed, time.time() - T0))
        return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--server", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--out", default="")
    ap.add_argument("--control", default="", help="directory of the restart handshake (restart.req, restart.done)")
    ap.add_argument("--sched-url", default="", help="the scheduler's HTTPS base URL, for the decision records")
    ap.add_argument("--token", default="", help="the admin's bearer token, for --sched-url and --standin")
    ap.add_argument("--standin", default="", help="the stand-in API server's URL (DRA scenarios: pods with claims)")
    ap.add_argument("--pause", type=float, default=1.5, help="seconds after each step before its snapshot")
    ap.add_argument("--settle", type=float, default=45)
    ap.add_argument("--retry", type=float, default=20)
    a = ap.parse_args()
    if a.out:
        os.makedirs(a.out, exist_ok=True)
    sys.exit(Runner(a).run())


if __name__ == "__main__":
    main()
