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
            cpu = r.choice([4, 8, 16, 32])
            res = {"cpu": str(cpu), "memory": "%dGi" % r.choice([8, 16, 32, 64]),
                   "pods": str(r.choice([32, 64, 110])), "ephemeral-storage": "%dGi" % r.choice([20, 100])}
            if self.chance(0.35):
                res[GPU] = str(r.choice([4, 8]))
                labels["prop.io/accelerator"] = "nvidia"
            if self.chance(0.15):
                res[FPGA] = "2"
            spec = {}
            if self.on("taints"):
                taints = []
                for key in r.sample(TAINT_KEYS, r.choice([0, 0, 0, 1, 1, 2])):
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
                                    "values": self.r.sample(names, 2)}]
        return term

    def label_selector(self, own_labels):
        """A selector over app/tier labels: own app, another app, a tier, or an expression."""
        r = self.r
        c = r.random()
        if c < 0.45 or not self.apps:
            return {"matchLabels": {"app": own_labels["app"]}}
        if c < 0.7:
            other = r.choice(self.apps)
            return {"matchLabels": {"app": other[2]["app"]}}
        if c < 0.85:
            return {"matchLabels": {"tier": r.choice(["web", "db", "batch"])}}
        apps = [a[2]["app"] for a in r.sample(self.apps, min(2, len(self.apps)))]
        return {"matchExpressions": [{"key": "app", "operator": r.choice(["In", "NotIn"]), "values": apps}]}

    def pod_affinity_term(self, own_labels, ns):
        r = self.r
        term = {"labelSelector": self.label_selector(own_labels),
                "topologyKey": r.choice([HOST, HOST, ZONE, RACK])}
        c = r.random()
        if c < 0.2:
            term["namespaces"] = list(NAMESPACES)
        elif c < 0.3:
            term["namespaces"] = [r.choice(NAMESPACES)]
        return term

    # ------------------------------------------------------------- templates
    def app_template(self, idx):
        """One app: a namespace, labels and a pod spec shared by its pods."""
        r = self.r
        name = "a%02d" % idx
        ns = NAMESPACES[0] if self.chance(0.8) else NAMESPACES[1]
        labels = {"app": name, "tier": r.choice(["web", "db", "batch"])}
        spec = {"terminationGracePeriodSeconds": 0,
                "priorityClassName": r.choice(PRIORITIES)[0]}
        container = {"name": "main", "image": "registry.invalid/pause:3"}
        init = None
        if self.on("resources"):
            req = {}
            cpu = r.choice([None, "100m", "250m", "500m", "1", "2"])
            mem = r.choice([None, "128Mi", "512Mi", "1Gi", "4Gi"])
            if cpu:
                req["cpu"] = cpu
            if mem:
                req["memory"] = mem
            if self.chance(0.1):
                req["ephemeral-storage"] = r.choice(["1Gi", "50Gi"])
            if self.chance(0.2):
                req[GPU] = str(r.choice([1, 1, 2, 4]))
            if self.chance(0.05):
                req[FPGA] = "1"
            if self.chance(0.05):   # larger than any node
                k, v = r.choice([("cpu", "64"), ("memory", "256Gi"), (GPU, "16")])
                req[k] = v
            if req:
                container["resources"] = {"requests": req}
                ext = {k: v for k, v in req.items() if k in (GPU, FPGA)}
                if ext:   # extended resources need limits == requests
                    container["resources"]["limits"] = ext
            if self.chance(0.15):
                init = {"name": "init", "image": "registry.invalid/pause:3",
                        "resources": {"requests": {"cpu": r.choice(["1", "3"]), "memory": "256Mi"}}}
        if self.on("ports") and self.chance(0.2):
            port = {"containerPort": 80, "hostPort": r.choice([8080, 9090, 9100]),
                    "protocol": r.choice(["TCP", "TCP", "UDP"])}
            if self.chance(0.2):
                port["hostIP"] = "127.0.0.1"
            container["ports"] = [port]
        spec["containers"] = [container]
        if self.chance(0.15):
            spec["containers"].append({"name": "side", "image": "registry.invalid/pause:3",
                                       "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}
                                       if self.on("resources") else {}})
        if init:
            spec["initContainers"] = [init]
        if self.on("taints") and self.chance(0.5):
            tols = []
            for _ in range(r.randint(1, 2)):
                c = r.random()
                if c < 0.05:
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
        affinity = {}
        if self.on("nodeaffinity"):
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
            if self.chance(0.15):
                pa["requiredDuringSchedulingIgnoredDuringExecution"] = [self.pod_affinity_term(labels, ns)]
            if self.chance(0.15):
                pa["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": r.randint(1, 100), "podAffinityTerm": self.pod_affinity_term(labels, ns)}]
            if self.chance(0.25):
                paa["requiredDuringSchedulingIgnoredDuringExecution"] = [self.pod_affinity_term(labels, ns)
                                                                         for _ in range(r.choice([1, 1, 2]))]
            if self.chance(0.15):
                paa["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": r.randint(1, 100), "podAffinityTerm": self.pod_affinity_term(labels, ns)}]
            if pa:
                affinity["podAffinity"] = pa
            if paa:
                affinity["podAntiAffinity"] = paa
        if affinity:
            spec["affinity"] = affinity
        if self.on("spread") and self.chance(0.3):
            cons = []
            for key in r.sample([ZONE, RACK, HOST], r.choice([1, 1, 2])):
                sel = {"matchLabels": {"app": name}} if self.chance(0.7) else \
                    {"matchLabels": {"tier": labels["tier"]}}
                cons.append({"maxSkew": r.choice([1, 1, 2, 3]), "topologyKey": key,
                             "whenUnsatisfiable": "DoNotSchedule" if self.chance(0.7) else "ScheduleAnyway",
                             "labelSelector": sel})
            spec["topologySpreadConstraints"] = cons
        volume_kind = None
        if self.on("volumes") and self.chance(0.25):
            volume_kind = r.choice(["static", "local", "local", "dynamic", "immediate"])
        return {"name": name, "ns": ns, "labels": labels, "spec": spec, "volume": volume_kind}

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
            if self.chance(0.5):
                for j in range(self.r.choice([1, 1, 2])):
                    name = "lpv-%s-%d" % (n["metadata"]["name"], j)
                    self.pvs.append(self.pv(name, SC_LOCAL, "%dGi" % self.r.choice([50, 100]),
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

    def pod_volume(self, kind, ns, pod_name):
        """Makes the claim (and for 'static' its PV) of one pod; returns the volume entry."""
        r = self.r
        claim = pod_name + "-data"
        if kind == "static":
            pv_name = "spv-" + pod_name
            if self.chance(0.5):
                key, values = ZONE, [r.choice(ZONES)]
            else:
                key, values = HOST, [r.choice(self.nodes)["metadata"]["name"]]
            self.pvs.append(self.pv(pv_name, SC_STATIC, "10Gi", key, values, (ns, claim)))
            self.pvcs.append(self.pvc(ns, claim, SC_STATIC, "10Gi", pv_name))
        elif kind == "local":
            self.pvcs.append(self.pvc(ns, claim, SC_LOCAL, r.choice(["1Gi", "20Gi", "80Gi", "500Gi"])))
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
            size = min(self.n_pods - total, r.choice([1, 1, 2, 3, 4, 6]))
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
                spec["volumes"] = [self.pod_volume(t["volume"], t["ns"], pod_name)]
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
