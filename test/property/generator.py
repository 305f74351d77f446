#!/usr/bin/env python3
"""Seeded random workloads for the property suite: a cluster (nodes, storage) and pods.

The workload is a JSON document of plain Kubernetes objects in submission order:
  {seed, kinds, namespaces, priorityclasses, storageclasses, nodes, pvcs, pvs, pods}
pvcs/pvs hold the volume objects the harness creates before the pods; a PV that
is pre-bound names its claim in spec.claimRef (namespace/name; the harness fills
in the uid once the claim exists).

Pods come in "apps": every pod of an app shares one constraint template, so
whether a pod can be placed rarely depends on where an earlier pod went (the
number of pods left pending must match between schedulers whose tie-breaks
differ). Some templates are infeasible by construction (a request larger than
any node, a selector no node matches, an unbound Immediate claim, ...).

Constraint kinds (each can be switched off with --kinds):
  resources    cpu/memory/ephemeral-storage/nvidia.com/gpu/example.com/fpga requests,
               init containers
  ports        hostPorts (TCP/UDP, some with a hostIP)
  taints       node taints of every effect, an unschedulable node, tolerations
  nodeaffinity nodeSelector, required/preferred node affinity (all operators,
               matchFields)
  podaffinity  required/preferred pod affinity and anti-affinity (hostname, zone
               and rack keys; namespaces)
  spread       topologySpreadConstraints (DoNotSchedule / ScheduleAnyway)
  volumes      PVCs: pre-bound to PVs with node affinity, WaitForFirstConsumer
               (local PVs; a dynamic class with allowedTopologies), Immediate unbound
Priorities (three PriorityClasses) are always random; preemption is off for the run.

Usage: generator.py --seed S [--nodes N] [--pods P] [--kinds k1,k2,...] [-o FILE]
"""
import argparse
import json
import random
import sys

ALL_KINDS = ["resources", "ports", "taints", "nodeaffinity", "podaffinity", "spread", "volumes"]

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
RACK = "prop.io/rack"
DISK = "prop.io/disk"
GEN = "prop.io/gen"
GPU = "nvidia.com/gpu"
FPGA = "example.com/fpga"
NAMESPACES = ["prop-a", "prop-b"]
ZONES = ["z0", "z1", "z2"]
TAINT_KEYS = ["prop.io/dedicated", "prop.io/maint", "prop.io/flaky"]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
PRIORITIES = [("prop-low", 10), ("prop-mid", 100), ("prop-high", 1000)]
SC_LOCAL = "prop-local"   # WaitForFirstConsumer, no provisioner: local PVs only
SC_DYN = "prop-dyn"       # WaitForFirstConsumer, dynamic, allowedTopologies z0/z1
SC_IMM = "prop-imm"       # Immediate, no PV ever matches
SC_STATIC = "prop-static" # pre-bound claims


def parse_kinds(text):
    if text in (None, "", "all"):
        return list(ALL_KINDS)
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    bad = [k for k in kinds if k not in ALL_KINDS]
    if bad:
        raise SystemExit("generator: unknown kind(s) %s (known: %s)" % (",".join(bad), ",".join(ALL_KINDS)))
    return kinds


class Gen:
    def __init__(self, seed, n_nodes, n_pods, kinds):
        self.r = random.Random(seed)
        self.seed = seed
        self.n_nodes = n_nodes
        self.n_pods = n_pods
        self.kinds = set(kinds)
        self.nodes = []
        self.pvs = []
        self.pvcs = []
        self.pod_list = []
        self.apps = []      # (name, namespace, labels) of apps made so far
        self.free_apps = []  # (name, namespace) of apps that fit anywhere

    def on(self, kind):
        return kind in self.kinds

    def chance(self, p):
        return self.r.random() < p

    # ------------------------------------------------------------------ nodes
    def make_nodes(self):
        r = self.r
        for i in range(self.n_nodes):
            name = "n%02d" % i
            labels = {HOST: name, "kubernetes.io/os": "linux",
                      ZONE: ZONES[i % len(ZONES)] if i < 6 else r.choice(ZONES),
                      DISK: r.choice(["ssd", "hdd"]), GEN: str(r.randint(1, 5))}
            if not self.chance(0.15):   # some nodes lack the rack key
                labels[RACK] = "r%d" % r.randint(0, 3)
            cpu = r.choice([16, 32, 64])
            res = {"cpu": str(cpu), "memory": "%dGi" % r.choice([64, 128, 256]),
                   "pods": str(r.choice([32, 64, 110])), "ephemeral-storage": "%dGi" % r.choice([50, 100])}
            if self.chance(0.5):
                res[GPU] = "8"
                labels["prop.io/accelerator"] = "nvidia"
            if self.chance(0.15):
                res[FPGA] = "8"
            spec = {}
            if self.on("taints"):
                taints = []
                for key in r.sample(TAINT_KEYS, r.choice([0, 0, 0, 0, 1, 1, 2])):
                    t = {"key": key, "effect": r.choice(EFFECTS)}
                    if key == "prop.io/dedicated":
                        t["value"] = r.choice(["gpu", "infra"])
                    taints.append(t)
                if taints:
                    spec["taints"] = taints
                if i == self.n_nodes - 2 and self.chance(0.5):
                    spec["unschedulable"] = True
            self.nodes.append({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": spec,
                "status": {"capacity": res, "allocatable": dict(res),
                           "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                           "message": "property-suite fake node"}],
                           "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                           "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux",
                                        "kubeletVersion": "v1.20.2", "kubeProxyVersion": "v1.20.2",
                                        "containerRuntimeVersion": "fake://0", "osImage": "property",
                                        "kernelVersion": "0", "machineID": "", "systemUUID": "",
                                        "bootID": ""}}})

    def node_label_values(self, key):
        return sorted({n["metadata"]["labels"][key] for n in self.nodes if key in n["metadata"]["labels"]})

    # ------------------------------------------------------------- selectors
    def node_expression(self):
        r = self.r
        key = r.choice([ZONE, RACK, DISK, GEN, HOST, "prop.io/accelerator", "prop.io/absent"])
        op = r.choice(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
        if op in ("Gt", "Lt"):
            return {"key": GEN if self.chance(0.8) else key, "operator": op, "values": [str(r.randint(1, 5))]}
        if op in ("Exists", "DoesNotExist"):
            return {"key": key, "operator": op}
        vals = self.node_label_values(key) or ["none"]
        k = r.randint(1, min(2, len(vals)))
        values = r.sample(vals, k)
        if self.chance(0.1):
            values.append("no-such-value")
        return {"key": key, "operator": op, "values": values}

    def node_selector_term(self):
        term = {"matchExpressions": [self.node_expression() for _ in range(self.r.choice([1, 1, 2]))]}
        if self.chance(0.1):
            names = [n["metadata"]["name"] for n in self.nodes]
            term["matchFields"] = [{"key": "metadata.name", "operator": self.r.choice(["In", "NotIn"]),
                                    "values": [self.r.choice(names)]}]   # exactly one value
        return term

    def other_app_selector(self):
        """A selector for pods of earlier apps (or of an app that never exists)."""
        r = self.r
        if not self.apps or self.chance(0.15):
            return {"matchLabels": {"app": "no-such-app"}}
        if self.chance(0.7):
            return {"matchLabels": {"app": r.choice(self.apps)[2]["app"]}}
        apps = [a[2]["app"] for a in r.sample(self.apps, min(2, len(self.apps)))]
        return {"matchExpressions": [{"key": "app", "operator": "In", "values": apps}]}

    def term(self, selector, key, ns):
        t = {"labelSelector": selector, "topologyKey": key}
        c = self.r.random()
        if c < 0.2:
            t["namespaces"] = list(NAMESPACES)
        elif c < 0.3:
            t["namespaces"] = [ns]
        return t

    def soft_term(self, labels, ns):
        r = self.r
        sel = r.choice([{"matchLabels": {"app": labels["app"]}},
                        {"matchLabels": {"tier": r.choice(["web", "db", "batch"])}},
                        self.other_app_selector()])
        return {"weight": r.randint(1, 100), "podAffinityTerm": self.term(sel, r.choice([HOST, ZONE, RACK]), ns)}

    # ------------------------------------------------------------- templates
    def app_template(self, idx):
        """One app: a namespace, labels and a pod spec shared by its pods.

        To keep the number of pending pods independent of placement, an app has at
        most one "exclusive" constraint among its own pods (a hostPort, required
        anti-affinity to itself, a DoNotSchedule spread, required affinity to
        itself), resources are ample, and constraints between apps are limited to
        hostname anti-affinity and affinity of otherwise unconstrained pods."""
        r = self.r
        name = "a%02d" % idx
        ns = NAMESPACES[0] if self.chance(0.8) else NAMESPACES[1]
        labels = {"app": name, "tier": r.choice(["web", "db", "batch"])}
        spec = {"terminationGracePeriodSeconds": 0,
                "priorityClassName": r.choice(PRIORITIES)[0]}
        container = {"name": "main", "image": "registry.invalid/pause:3"}
        own = {"matchLabels": {"app": name}}
        affinity = {}
        # cross-app affinity: a pod that follows another app anywhere (it tolerates every
        # taint and has no node constraint), so it is pending exactly when that app has no
        # bound pod in a namespace of the term
        follower = self.on("podaffinity") and self.chance(0.12)
        # "free" apps go anywhere (every taint tolerated, no node constraint, no extended
        # resource or volume); only they carry required anti-affinity to another free app,
        # which then can never make either of them pending
        free = self.on("podaffinity") and not follower and self.chance(0.15)
        loose = follower or free
        exclusive = None
        choices = [k for k in ("ports", "podaffinity", "spread") if self.on(k)]
        if choices and not loose and self.chance(0.45):
            exclusive = r.choice(choices)
        if self.on("resources"):
            req = {}
            cpu = r.choice([None, "100m", "250m", "500m", "1"])
            mem = r.choice([None, "128Mi", "256Mi", "512Mi", "1Gi"])
            if cpu:
                req["cpu"] = cpu
            if mem:
                req["memory"] = mem
            if self.chance(0.1):
                req["ephemeral-storage"] = "1Gi"
            if self.chance(0.12) and not loose:
                req[GPU] = "1"
            if self.chance(0.03) and not loose:
                req[FPGA] = "1"
            if self.chance(0.05) and not loose:   # larger than any node
                k, v = r.choice([("cpu", "200"), ("memory", "1Ti"), (GPU, "16"), ("ephemeral-storage", "1Ti")])
                req[k] = v
            if req:
                container["resources"] = {"requests": req}
                ext = {k: v for k, v in req.items() if k in (GPU, FPGA)}
                if ext:   # extended resources need limits == requests
                    container["resources"]["limits"] = ext
            if self.chance(0.15):
                spec["initContainers"] = [{"name": "init", "image": "registry.invalid/pause:3",
                                           "resources": {"requests": {"cpu": r.choice(["1", "2"]),
                                                                      "memory": "256Mi"}}}]
        if exclusive == "ports":
            port = {"containerPort": 80, "hostPort": 8000 + idx, "protocol": r.choice(["TCP", "TCP", "UDP"])}
            if self.chance(0.25):
                port["hostIP"] = "127.0.0.1"
            container["ports"] = [port]
            if self.chance(0.3):   # the same port twice, other protocol: no conflict with itself
                other = dict(port, protocol="UDP" if port["protocol"] == "TCP" else "TCP", containerPort=81)
                container["ports"].append(other)
        spec["containers"] = [container]
        if self.chance(0.15):
            side = {"name": "side", "image": "registry.invalid/pause:3"}
            if self.on("resources"):
                side["resources"] = {"requests": {"cpu": "100m", "memory": "64Mi"}}
            spec["containers"].append(side)
        if self.on("taints") and (loose or self.chance(0.5)):
            tols = []
            for _ in range(r.randint(1, 2)):
                c = r.random()
                if c < 0.05 or loose:
                    tols.append({"operator": "Exists"})          # tolerates everything
                elif c < 0.15:
                    tols.append({"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                 "effect": "NoSchedule"})
                else:
                    key = r.choice(TAINT_KEYS)
                    t = {"key": key}
                    if key == "prop.io/dedicated" and self.chance(0.6):
                        t.update({"operator": "Equal", "value": r.choice(["gpu", "infra"])})
                    else:
                        t["operator"] = "Exists"
                    if self.chance(0.6):
                        t["effect"] = r.choice(EFFECTS)
                    tols.append(t)
            spec["tolerations"] = tols
        if self.on("nodeaffinity") and not loose:
            if self.chance(0.2):
                key = r.choice([ZONE, DISK, "prop.io/accelerator", RACK])
                vals = self.node_label_values(key) or ["x"]
                spec["nodeSelector"] = {key: r.choice(vals) if self.chance(0.93) else "no-such-value"}
            na = {}
            if self.chance(0.3):
                na["requiredDuringSchedulingIgnoredDuringExecution"] = {
                    "nodeSelectorTerms": [self.node_selector_term() for _ in range(r.choice([1, 1, 2]))]}
            if self.chance(0.2):
                na["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": r.randint(1, 100), "preference": self.node_selector_term()}]
            if na:
                affinity["nodeAffinity"] = na
        if self.on("podaffinity"):
            pa, paa = {}, {}
            if follower:
                pa["requiredDuringSchedulingIgnoredDuringExecution"] = [
                    self.term(self.other_app_selector(), r.choice([ZONE, HOST]), ns)]
            elif exclusive == "podaffinity":
                key = r.choice([HOST, ZONE, RACK])
                if self.chance(0.3):    # all pods of the app in one topology domain
                    pa["requiredDuringSchedulingIgnoredDuringExecution"] = [self.term(own, HOST, ns)]
                else:                   # at most one pod of the app per domain
                    paa["requiredDuringSchedulingIgnoredDuringExecution"] = [self.term(own, key, ns)]
            if free and self.free_apps and self.chance(0.7):   # keep away from another free app
                target = r.choice(self.free_apps)
                paa.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(
                    self.term({"matchLabels": {"app": target[0]}}, HOST, target[1]))
            elif not loose and self.chance(0.1):   # a term no pod matches
                paa.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(
                    self.term({"matchLabels": {"app": "no-such-app"}}, r.choice([HOST, ZONE]), ns))
            if self.chance(0.2):
                pa["preferredDuringSchedulingIgnoredDuringExecution"] = [self.soft_term(labels, ns)]
            if self.chance(0.2):
                paa["preferredDuringSchedulingIgnoredDuringExecution"] = [self.soft_term(labels, ns)]
            if pa:
                affinity["podAffinity"] = pa
            if paa:
                affinity["podAntiAffinity"] = paa
        if affinity:
            spec["affinity"] = affinity
        if self.on("spread"):
            cons = []
            if exclusive == "spread":
                cons.append({"maxSkew": r.choice([1, 1, 2]), "topologyKey": r.choice([ZONE, RACK, HOST]),
                             "whenUnsatisfiable": "DoNotSchedule", "labelSelector": own})
            if self.chance(0.2):
                cons.append({"maxSkew": r.choice([1, 2, 3]), "topologyKey": r.choice([ZONE, HOST]),
                             "whenUnsatisfiable": "ScheduleAnyway",
                             "labelSelector": r.choice([own, {"matchLabels": {"tier": labels["tier"]}}])})
            if cons:
                spec["topologySpreadConstraints"] = cons
        volume_kind = None
        static_target = None
        if self.on("volumes") and not loose and self.chance(0.25):
            volume_kind = r.choice(["static", "local", "local", "dynamic", "immediate"])
            if volume_kind == "local" and exclusive:   # local PVs are a per-node supply: exclusive
                volume_kind = "dynamic"
            # one app's claims share their size and, when pre-bound, their PVs' node affinity
            size = r.choice(["1Gi", "20Gi", "80Gi", "80Gi", "500Gi"])
            if self.chance(0.5):
                static_target = (ZONE, [r.choice(ZONES)], size)
            else:
                static_target = (HOST, [r.choice(self.nodes)["metadata"]["name"]], size)
        if free:
            self.free_apps.append((name, ns))
        scarce = any(k in (GPU, FPGA) for c in spec["containers"]
                     for k in ((c.get("resources") or {}).get("requests") or {}))
        return {"name": name, "ns": ns, "labels": labels, "spec": spec, "volume": volume_kind,
                "static_target": static_target, "max_size": 2 if scarce else 6}

    # --------------------------------------------------------------- volumes
    def make_storage(self):
        if not self.on("volumes"):
            return []
        classes = [
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": SC_LOCAL},
             "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"},
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": SC_DYN},
             "provisioner": "prop.io/fake-provisioner", "volumeBindingMode": "WaitForFirstConsumer",
             "allowedTopologies": [{"matchLabelExpressions": [{"key": ZONE, "values": ["z0", "z1"]}]}]},
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": SC_IMM},
             "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "Immediate"},
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": SC_STATIC},
             "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "Immediate"},
        ]
        # local PVs: on about half of the nodes, one or two each
        for n in self.nodes:
            if self.chance(0.85):
                for j in range(4):
                    name = "lpv-%s-%d" % (n["metadata"]["name"], j)
                    self.pvs.append(self.pv(name, SC_LOCAL, "100Gi",
                                            HOST, [n["metadata"]["name"]], None))
        return classes

    def pv(self, name, sc, size, key, values, claim):
        pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
              "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                       "persistentVolumeReclaimPolicy": "Retain", "storageClassName": sc,
                       "local": {"path": "/mnt/" + name},
                       "nodeAffinity": {"required": {"nodeSelectorTerms": [
                           {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}]}}}}
        if claim:
            pv["spec"]["claimRef"] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                      "namespace": claim[0], "name": claim[1]}
        return pv

    def pvc(self, ns, name, sc, size, volume_name=None):
        pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": name, "namespace": ns},
               "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": sc,
                        "resources": {"requests": {"storage": size}}}}
        if volume_name:
            pvc["spec"]["volumeName"] = volume_name
            pvc["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
        return pvc

    def pod_volume(self, kind, ns, pod_name, static_target):
        """Makes the claim (and for 'static' its PV) of one pod; returns the volume entry."""
        r = self.r
        claim = pod_name + "-data"
        if kind == "static":
            pv_name = "spv-" + pod_name
            key, values, _ = static_target
            self.pvs.append(self.pv(pv_name, SC_STATIC, "10Gi", key, values, (ns, claim)))
            self.pvcs.append(self.pvc(ns, claim, SC_STATIC, "10Gi", pv_name))
        elif kind == "local":
            self.pvcs.append(self.pvc(ns, claim, SC_LOCAL, static_target[2]))
        elif kind == "dynamic":
            self.pvcs.append(self.pvc(ns, claim, SC_DYN, "5Gi"))
        else:
            self.pvcs.append(self.pvc(ns, claim, SC_IMM, "5Gi"))
        return {"name": "data", "persistentVolumeClaim": {"claimName": claim}}

    # ------------------------------------------------------------------ pods
    def make_pods(self):
        r = self.r
        groups = []
        total, idx = 0, 0
        while total < self.n_pods:
            t = self.app_template(idx)
            size = min(self.n_pods - total, t["max_size"], r.choice([1, 1, 2, 3, 4, 6]))
            groups.append((t, size))
            self.apps.append((t["name"], t["ns"], t["labels"]))
            total += size
            idx += 1
        # Submission order: apps interleaved, each app's pods in order.
        queue = []
        for t, size in groups:
            queue.extend([t] * size)
        r.shuffle(queue)
        counters = {}
        for t in queue:
            k = counters.get(t["name"], 0)
            counters[t["name"]] = k + 1
            pod_name = "%s-%d" % (t["name"], k)
            spec = json.loads(json.dumps(t["spec"]))
            if t["volume"]:
                spec["volumes"] = [self.pod_volume(t["volume"], t["ns"], pod_name, t["static_target"])]
            self.pod_list.append({"apiVersion": "v1", "kind": "Pod",
                                  "metadata": {"name": pod_name, "namespace": t["ns"],
                                               "labels": dict(t["labels"])},
                                  "spec": spec})

    def build(self):
        self.make_nodes()
        classes = self.make_storage()
        self.make_pods()
        return {"seed": self.seed, "kinds": sorted(self.kinds, key=ALL_KINDS.index),
                "namespaces": NAMESPACES,
                "priorityclasses": [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                     "metadata": {"name": n}, "value": v} for n, v in PRIORITIES],
                "storageclasses": classes, "nodes": self.nodes,
                "pvcs": self.pvcs, "pvs": self.pvs, "pods": self.pod_list}


def generate(seed, n_nodes=12, n_pods=40, kinds=None):
    return Gen(seed, n_nodes, n_pods, kinds if kinds is not None else ALL_KINDS).build()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--nodes", type=int, default=12)
    ap.add_argument("--pods", type=int, default=40)
    ap.add_argument("--kinds", default="all")
    ap.add_argument("-o", "--out", default="-")
    a = ap.parse_args()
    w = generate(a.seed, a.nodes, a.pods, parse_kinds(a.kinds))
    text = json.dumps(w, indent=1, sort_keys=True)
    if a.out == "-":
        sys.stdout.write(text + "\n")
    else:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
