#!/usr/bin/env python3
"""Independent checker for the property suite: every binding against every hard constraint.

Written from the Kubernetes v1.20 scheduler semantics
(pkg/scheduler/framework/plugins/* of the kube-scheduler source), not from pkg/.
It re-implements the filters that the generated workloads exercise:

  NodeUnschedulable, NodeResourcesFit (pods, cpu, memory, ephemeral-storage,
  extended resources; max(sum of containers, each init container) + overhead),
  NodePorts, TaintToleration, NodeAffinity (nodeSelector + required terms,
  matchFields), InterPodAffinity (required affinity incl. the "first pod of a
  self-matching group" rule, required anti-affinity, existing pods' required
  anti-affinity), PodTopologySpread (DoNotSchedule; domains from nodes that pass
  the pod's node affinity and have every key), VolumeBinding (bound claims: PV
  node affinity; unbound Immediate claims; WaitForFirstConsumer: an available PV
  by class, size, access modes and node affinity, or dynamic provisioning with
  the class's allowedTopologies).
Not modelled (the generator never produces them): VolumeRestrictions (GCE PD,
AWS EBS, RBD, ISCSI conflicts), VolumeZone (zone labels on PVs), NodeVolumeLimits
(CSI/in-tree attach limits), NodeName (spec.nodeName preset), preemption.

Input: a result file written by run.py. Checks:
  1. each bound pod passes every filter on its node, on the state at its bind
     time: all pods bound before it (watch order = resourceVersion order). When
     another pod's bind was in flight at the same time (a pod left pending and
     retried), each order of those binds is tried (see candidate_states);
  2. each pod left pending fails some filter on every node of the final state;
  3. volumes: a bound pod's claims are bound to PVs that match its node, class,
     size and access modes; no PV is bound to two claims;
  4. every pod was either bound or reported unschedulable (PodScheduled=False).
Prints one line per violation (pod, node, constraint) and a summary line; exit
status 1 when anything is violated (or, with --compare, when the number of
pending pods differs from the other run's).

Usage: checker.py RESULT.json [--compare OTHER.json] [--label NAME]
"""
import argparse
import itertools
import json
import sys
from fractions import Fraction

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
NO_PROVISIONER = "kubernetes.io/no-provisioner"

# ----------------------------------------------------------------- quantities
_SUFFIX = {"": 1, "m": Fraction(1, 1000), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
           "P": 10**15, "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
           "Pi": 2**50, "Ei": 2**60}


def quantity(s):
    """A resource.Quantity string as an exact Fraction."""
    if isinstance(s, (int, float)):
        return Fraction(s)
    s = str(s).strip()
    for suf in sorted(_SUFFIX, key=len, reverse=True):
        if suf and s.endswith(suf):
            return Fraction(s[:-len(suf)]) * _SUFFIX[suf]
    if "e" in s.lower():
        m, e = s.lower().split("e", 1)
        return Fraction(m) * Fraction(10) ** int(e)
    return Fraction(s)


def _ceil(f):
    return -((-f.numerator) // f.denominator)


def res_value(name, q):
    """cpu in millicores (MilliValue rounds up), everything else Value() (rounds up)."""
    v = quantity(q)
    return _ceil(v * 1000) if name == "cpu" else _ceil(v)


def pod_requests(pod):
    """v1.20 computePodResourceRequest: max(sum containers, each init) + overhead."""
    total = {}
    for c in pod["spec"].get("containers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[k] = total.get(k, 0) + res_value(k, v)
    for c in pod["spec"].get("initContainers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[k] = max(total.get(k, 0), res_value(k, v))
    for k, v in (pod["spec"].get("overhead") or {}).items():
        total[k] = total.get(k, 0) + res_value(k, v)
    return total


# ------------------------------------------------------------------ selectors
def labels_of(obj):
    return obj.get("metadata", {}).get("labels") or {}


def match_label_selector(sel, labels):
    """metav1.LabelSelectorAsSelector: nil matches nothing, {} matches everything."""
    if sel is None:
        return False
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], e.get("values") or []
        if op == "In" and not (k in labels and labels[k] in vals):
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def _int_or_none(s):
    try:
        return int(s)
    except (TypeError, ValueError):
        return None


def match_node_requirement(e, labels):
    """One NodeSelectorRequirement (labels.Selector semantics, Gt/Lt on integers)."""
    k, op, vals = e["key"], e["operator"], e.get("values") or []
    if op == "In":
        return k in labels and labels[k] in vals
    if op == "NotIn":
        return k not in labels or labels[k] not in vals
    if op == "Exists":
        return k in labels
    if op == "DoesNotExist":
        return k not in labels
    if op in ("Gt", "Lt"):
        if k not in labels or len(vals) != 1:
            return False
        a, b = _int_or_none(labels[k]), _int_or_none(vals[0])
        if a is None or b is None:
            return False
        return a > b if op == "Gt" else a < b
    return False


def match_node_selector_terms(terms, node):
    """v1helper.MatchNodeSelectorTerms: terms ORed; an empty term matches nothing."""
    labels = labels_of(node)
    fields = {"metadata.name": node["metadata"]["name"]}
    for t in terms or []:
        exprs, mfields = t.get("matchExpressions") or [], t.get("matchFields") or []
        if not exprs and not mfields:
            continue
        if all(match_node_requirement(e, labels) for e in exprs) and \
                all(match_node_requirement(e, fields) for e in mfields):
            return True
    return False


def pod_matches_node_selector_and_affinity(pod, node):
    labels = labels_of(node)
    for k, v in (pod["spec"].get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    req = (((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
           .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if req is not None:
        return match_node_selector_terms(req.get("nodeSelectorTerms"), node)
    return True


def tolerates(tol, taint):
    """v1 Toleration.ToleratesTaint."""
    if tol.get("effect") and tol["effect"] != taint["effect"]:
        return False
    if tol.get("key") and tol["key"] != taint["key"]:
        return False
    op = tol.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (tol.get("value") or "") == (taint.get("value") or "")
    return False


def tolerated(pod, taint):
    return any(tolerates(t, taint) for t in pod["spec"].get("tolerations") or [])


def host_ports(pod):
    out = []
    for c in pod["spec"].get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                ip = p.get("hostIP") or "0.0.0.0"
                out.append((ip, p.get("protocol") or "TCP", int(p["hostPort"])))
    return out


def ports_conflict(a, b):
    (ipa, pra, pa), (ipb, prb, pb) = a, b
    if pra != prb or pa != pb:
        return False
    return ipa == "0.0.0.0" or ipb == "0.0.0.0" or ipa == ipb


def key(pod):
    return "%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"])


# -------------------------------------------------------------- pod affinity
def affinity_terms(pod, kind):
    """Required terms of podAffinity/podAntiAffinity as (namespaces, selector, topologyKey)."""
    a = ((pod["spec"].get("affinity") or {}).get(kind) or {})
    out = []
    for t in a.get("requiredDuringSchedulingIgnoredDuringExecution") or []:
        nss = set(t.get("namespaces") or [pod["metadata"]["namespace"]])
        out.append((nss, t.get("labelSelector"), t["topologyKey"]))
    return out


def term_matches(term, pod):
    nss, sel, _ = term
    return pod["metadata"]["namespace"] in nss and match_label_selector(sel, labels_of(pod))


class Checker:
    def __init__(self, result):
        self.result = result
        self.nodes = {n["metadata"]["name"]: n for n in result["nodes"]}
        self.node_names = sorted(self.nodes)
        self.pvs = {p["metadata"]["name"]: p for p in result.get("pvs") or []}
        self.pvcs = {key(p): p for p in result.get("pvcs") or []}
        self.classes = {c["metadata"]["name"]: c for c in result.get("storageclasses") or []}
        self.pods = {key(p): p for p in result["pods"]}
        self.violations = []

    # ---------------------------------------------------------------- filters
    def filters(self, pod, node, placed):
        """Reasons `pod` cannot go to `node` given `placed` (list of (pod, nodeName)); [] = fits."""
        name = node["metadata"]["name"]
        why = []
        on_node = [p for p, n in placed if n == name]
        # NodeUnschedulable
        if node.get("spec", {}).get("unschedulable") and not tolerated(pod, UNSCHEDULABLE_TAINT):
            why.append("NodeUnschedulable: node(s) were unschedulable")
        # NodeResourcesFit
        alloc = {k: res_value(k, v) for k, v in (node.get("status", {}).get("allocatable") or {}).items()}
        if len(on_node) + 1 > alloc.get("pods", 0):
            why.append("NodeResourcesFit: Too many pods (%d on node, allocatable %d)"
                       % (len(on_node), alloc.get("pods", 0)))
        req = pod_requests(pod)
        if any(v != 0 for k, v in req.items() if k in ("cpu", "memory", "ephemeral-storage")) or \
                any(k not in ("cpu", "memory", "ephemeral-storage", "pods") for k in req):
            used = {}
            for p in on_node:
                for k, v in pod_requests(p).items():
                    used[k] = used.get(k, 0) + v
            for k, v in sorted(req.items()):
                if k == "pods":
                    continue
                if alloc.get(k, 0) < v + used.get(k, 0):
                    why.append("NodeResourcesFit: Insufficient %s (request %d + requested %d > allocatable %d)"
                               % (k, v, used.get(k, 0), alloc.get(k, 0)))
        # NodePorts
        mine = host_ports(pod)
        if mine:
            for p in on_node:
                for hp in host_ports(p):
                    for m in mine:
                        if ports_conflict(m, hp):
                            why.append("NodePorts: host port %s/%s:%d taken by %s" % (m[1], m[0], m[2], key(p)))
        # TaintToleration (NoSchedule and NoExecute must be tolerated)
        for t in node.get("spec", {}).get("taints") or []:
            if t["effect"] in ("NoSchedule", "NoExecute") and not tolerated(pod, t):
                why.append("TaintToleration: untolerated taint {%s=%s:%s}" % (t["key"], t.get("value", ""), t["effect"]))
        # NodeAffinity
        if not pod_matches_node_selector_and_affinity(pod, node):
            why.append("NodeAffinity: node(s) didn't match node selector")
        why.extend(self.inter_pod_affinity(pod, node, placed))
        why.extend(self.topology_spread(pod, node, placed))
        why.extend(self.volume_binding(pod, node))
        return why

    def inter_pod_affinity(self, pod, node, placed):
        why = []
        labels = labels_of(node)
        # existing pods' required anti-affinity (symmetry)
        for p, n in placed:
            pn = self.nodes.get(n)
            if pn is None:
                continue
            for term in affinity_terms(p, "podAntiAffinity"):
                tk = term[2]
                if tk in labels_of(pn) and labels.get(tk) == labels_of(pn)[tk] and term_matches(term, pod):
                    why.append("InterPodAffinity: existing pod %s's anti-affinity (%s) matches the pod"
                               % (key(p), tk))
        # the pod's own required anti-affinity
        for term in affinity_terms(pod, "podAntiAffinity"):
            tk = term[2]
            if tk not in labels:
                continue
            for p, n in placed:
                pn = self.nodes.get(n)
                if pn is not None and labels_of(pn).get(tk) == labels[tk] and tk in labels_of(pn) \
                        and term_matches(term, p):
                    why.append("InterPodAffinity: anti-affinity (%s=%s) with %s" % (tk, labels[tk], key(p)))
                    break
        # the pod's own required affinity
        terms = affinity_terms(pod, "podAffinity")
        if terms:
            if any(t[2] not in labels for t in terms):
                why.append("InterPodAffinity: node lacks topology key of an affinity term")
                return why
            # existing pods matching all terms, counted per (key, value) of their node
            counts = {}
            for p, n in placed:
                pn = self.nodes.get(n)
                if pn is None or not all(term_matches(t, p) for t in terms):
                    continue
                for t in terms:
                    if t[2] in labels_of(pn):
                        pair = (t[2], labels_of(pn)[t[2]])
                        counts[pair] = counts.get(pair, 0) + 1
            exist = all(counts.get((t[2], labels[t[2]]), 0) > 0 for t in terms)
            if not exist:
                if not (not counts and all(term_matches(t, pod) for t in terms)):
                    why.append("InterPodAffinity: no pod matching the affinity terms in the node's topology")
        return why

    def topology_spread(self, pod, node, placed):
        why = []
        cons = [c for c in pod["spec"].get("topologySpreadConstraints") or []
                if c.get("whenUnsatisfiable") == "DoNotSchedule"]
        if not cons:
            return why
        ns = pod["metadata"]["namespace"]
        keys = [c["topologyKey"] for c in cons]
        # domains: (key, value) of nodes passing nodeSelector/affinity and having every key
        domains = set()
        for n in self.nodes.values():
            if pod_matches_node_selector_and_affinity(pod, n) and all(k in labels_of(n) for k in keys):
                for k in keys:
                    domains.add((k, labels_of(n)[k]))
        counts = {d: 0 for d in domains}
        for c in cons:
            k = c["topologyKey"]
            for p, n in placed:
                pn = self.nodes.get(n)
                if pn is None or k not in labels_of(pn):
                    continue
                d = (k, labels_of(pn)[k])
                if d not in counts:
                    continue
                if p["metadata"].get("deletionTimestamp") or p["metadata"]["namespace"] != ns:
                    continue
                if match_label_selector(c.get("labelSelector"), labels_of(p)):
                    counts[d] += 1
        labels = labels_of(node)
        for c in cons:
            k = c["topologyKey"]
            if k not in labels:
                why.append("PodTopologySpread: node(s) didn't match pod topology spread constraints (missing required label %s)" % k)
                return why
            vals = [counts[d] for d in counts if d[0] == k]
            min_match = min(vals) if vals else 2**31 - 1
            self_match = 1 if match_label_selector(c.get("labelSelector"), labels_of(pod)) else 0
            match = counts.get((k, labels[k]), 0)
            if match + self_match - min_match > c["maxSkew"]:
                why.append("PodTopologySpread: %s=%s skew %d+%d-%d > maxSkew %d"
                           % (k, labels[k], match, self_match, min_match, c["maxSkew"]))
        return why

    # ---------------------------------------------------------------- volumes
    def pod_claims(self, pod):
        ns = pod["metadata"]["namespace"]
        return ["%s/%s" % (ns, v["persistentVolumeClaim"]["claimName"])
                for v in pod["spec"].get("volumes") or [] if v.get("persistentVolumeClaim")]

    def pv_matches_node(self, pv, node):
        na = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")
        if na is None:
            return True
        return match_node_selector_terms(na.get("nodeSelectorTerms"), node)

    def volume_binding(self, pod, node):
        """VolumeBinding Filter on the final state of PVs and PVCs (for pending pods)."""
        why = []
        chosen = set()
        claims = self.pod_claims(pod)
        unbound = []
        for ck in claims:
            pvc = self.pvcs.get(ck)
            if pvc is None:
                return ["VolumeBinding: persistentvolumeclaim %s not found" % ck]
            if pvc["spec"].get("volumeName") and ANN_BIND_COMPLETED in (pvc["metadata"].get("annotations") or {}):
                pv = self.pvs.get(pvc["spec"]["volumeName"])
                if pv is None:
                    why.append("VolumeBinding: bound PV %s of %s not found" % (pvc["spec"]["volumeName"], ck))
                elif not self.pv_matches_node(pv, node):
                    why.append("VolumeBinding: node(s) had volume node affinity conflict (PV %s)" % pv["metadata"]["name"])
                continue
            sc = self.classes.get(pvc["spec"].get("storageClassName") or "")
            if sc is None or sc.get("volumeBindingMode") != "WaitForFirstConsumer" or pvc["spec"].get("volumeName"):
                return ["VolumeBinding: pod has unbound immediate PersistentVolumeClaims (%s)" % ck]
            unbound.append((pvc, sc))
        # smallest claims first, as findMatchingVolumes sorts them
        unbound.sort(key=lambda x: quantity(x[0]["spec"]["resources"]["requests"]["storage"]))
        for pvc, sc in unbound:
            sel = (pvc["metadata"].get("annotations") or {}).get(ANN_SELECTED_NODE)
            if sel is not None and sel != node["metadata"]["name"]:
                why.append("VolumeBinding: claim %s selected another node" % key(pvc))
                continue
            pv = None if sel is not None else self.find_matching_pv(pvc, node, chosen)
            if pv is not None:
                chosen.add(pv["metadata"]["name"])
                continue
            prov = sc.get("provisioner") or ""
            if prov in ("", NO_PROVISIONER):
                why.append("VolumeBinding: node(s) didn't find available persistent volumes to bind (%s)" % key(pvc))
                continue
            allowed = sc.get("allowedTopologies") or []
            if allowed and not self.match_topology_terms(allowed, node):
                why.append("VolumeBinding: node(s) didn't find available persistent volumes to bind (%s: allowedTopologies)" % key(pvc))
        return why

    @staticmethod
    def match_topology_terms(terms, node):
        labels = labels_of(node)
        for t in terms:
            if all(e["key"] in labels and labels[e["key"]] in e["values"]
                   for e in t.get("matchLabelExpressions") or []):
                return True
        return False

    def find_matching_pv(self, pvc, node, chosen):
        want = quantity(pvc["spec"]["resources"]["requests"]["storage"])
        cls = pvc["spec"].get("storageClassName") or ""
        best = None
        for pv in self.pvs.values():
            spec = pv["spec"]
            name = pv["metadata"]["name"]
            if name in chosen or (spec.get("storageClassName") or "") != cls:
                continue
            ref = spec.get("claimRef")
            bound_here = ref is not None and ref.get("namespace") == pvc["metadata"]["namespace"] \
                and ref.get("name") == pvc["metadata"]["name"]
            if ref is not None and not bound_here:
                continue
            if quantity(spec["capacity"]["storage"]) < want:
                continue
            if bound_here:
                return pv if self.pv_matches_node(pv, node) else None
            if (pv.get("status") or {}).get("phase") != "Available":
                continue
            if not self.pv_matches_node(pv, node):
                continue
            if not set(pvc["spec"].get("accessModes") or []) <= set(spec.get("accessModes") or []):
                continue
            if best is None or quantity(spec["capacity"]["storage"]) < quantity(best["spec"]["capacity"]["storage"]):
                best = pv
        return best

    def check_bound_volumes(self, pod, node_name):
        """A bound pod's claims are bound to PVs that fit its node."""
        node = self.nodes.get(node_name)
        for ck in self.pod_claims(pod):
            pvc = self.pvcs.get(ck)
            if pvc is None:
                self.violate(pod, node_name, "VolumeBinding: claim %s does not exist" % ck)
                continue
            vn = pvc["spec"].get("volumeName")
            pv = self.pvs.get(vn) if vn else None
            if pv is None:
                self.violate(pod, node_name, "VolumeBinding: claim %s is not bound to a PV (volumeName=%r)" % (ck, vn))
                continue
            ref = pv["spec"].get("claimRef") or {}
            if (ref.get("namespace"), ref.get("name")) != (pvc["metadata"]["namespace"], pvc["metadata"]["name"]):
                self.violate(pod, node_name, "VolumeBinding: PV %s's claimRef %s/%s is not claim %s"
                             % (vn, ref.get("namespace"), ref.get("name"), ck))
            if node is not None and not self.pv_matches_node(pv, node):
                self.violate(pod, node_name, "VolumeBinding: PV %s of claim %s: volume node affinity conflict" % (vn, ck))
            if (pv["spec"].get("storageClassName") or "") != (pvc["spec"].get("storageClassName") or ""):
                self.violate(pod, node_name, "VolumeBinding: PV %s class differs from claim %s" % (vn, ck))
            if quantity(pv["spec"]["capacity"]["storage"]) < quantity(pvc["spec"]["resources"]["requests"]["storage"]):
                self.violate(pod, node_name, "VolumeBinding: PV %s smaller than claim %s" % (vn, ck))
            if not set(pvc["spec"].get("accessModes") or []) <= set(pv["spec"].get("accessModes") or []):
                self.violate(pod, node_name, "VolumeBinding: PV %s lacks access modes of claim %s" % (vn, ck))
            if ck in self.result.get("immediate_unbound_claims", []):
                self.violate(pod, node_name, "VolumeBinding: claim %s was an unbound Immediate claim" % ck)

    # ------------------------------------------------------------------ runs
    def violate(self, pod, node, what):
        self.violations.append("VIOLATION pod=%s node=%s %s" % (key(pod) if isinstance(pod, dict) else pod, node, what))

    def bind_filters(self, pod, node, placed):
        """filters() minus VolumeBinding, whose bind-time state is not recorded (checked on the final state)."""
        saved = self.volume_binding
        self.volume_binding = lambda p, n: []
        try:
            return self.filters(pod, node, placed)
        finally:
            self.volume_binding = saved

    def candidate_states(self, i, order, window):
        """States the scheduler may have seen for order[i]: the pods bound before it, with
        binds that were in flight at the same time (within `window` seconds, of pods that
        existed before the other's bind) moved across it in every combination."""
        me = order[i]
        base = [b for b in order[:i]]
        movable_out = [b for b in order[:i] if b["t_bind"] >= me["t_bind"] - window and me["t_create"] < b["t_bind"]]
        movable_in = [b for b in order[i + 1:] if b["t_bind"] <= me["t_bind"] + window and b["t_create"] < me["t_bind"]]
        movable = (movable_out + movable_in)[-4:]
        yield base
        for r in range(1, len(movable) + 1):
            for combo in itertools.combinations(movable, r):
                ids = {id(b) for b in combo}
                st = [b for b in base if id(b) not in ids] + [b for b in combo if b in movable_in]
                yield st

    def check_binds(self, window=1.0):
        order = self.result["bind_order"]
        seen = set()
        for i, b in enumerate(order):
            pod = self.pods.get(b["pod"])
            if pod is None or b["pod"] in seen:
                continue
            seen.add(b["pod"])
            node = self.nodes.get(b["node"])
            if node is None:
                self.violate(b["pod"], b["node"], "bound to a node that does not exist")
                continue
            first = None
            ok = False
            for st in self.candidate_states(i, order, window):
                placed = [(self.pods[s["pod"]], s["node"]) for s in st if s["pod"] in self.pods]
                why = self.bind_filters(pod, node, placed)
                if not why:
                    ok = True
                    break
                if first is None:
                    first = why
            if not ok:
                for w in first:
                    self.violate(pod, b["node"], w)
            self.check_bound_volumes(pod, b["node"])
        # PVs bound twice
        owners = {}
        for ck, pvc in self.pvcs.items():
            vn = pvc["spec"].get("volumeName")
            if vn:
                owners.setdefault(vn, []).append(ck)
        for vn, cks in owners.items():
            if len(cks) > 1:
                self.violations.append("VIOLATION pv=%s bound to several claims: %s" % (vn, ", ".join(cks)))

    def final_placed(self):
        return [(p, p["spec"]["nodeName"]) for p in self.pods.values() if p["spec"].get("nodeName")]

    def feasible_nodes(self, pod, placed=None):
        placed = self.final_placed() if placed is None else placed
        return [n for n in self.node_names if not self.filters(pod, self.nodes[n], placed)]

    def pending(self):
        return sorted(k for k, p in self.pods.items() if not p["spec"].get("nodeName"))

    def check_pending(self):
        placed = self.final_placed()
        for k in self.pending():
            fits = self.feasible_nodes(self.pods[k], placed)
            if fits:
                self.violate(k, fits[0], "pending, but node(s) %s pass every filter on the final state"
                             % ",".join(fits))

    def check_reported(self):
        for k, how in sorted((self.result.get("outcome") or {}).items()):
            if how == "timeout":
                self.violate(k, "-", "neither bound nor reported unschedulable within %ss"
                             % self.result.get("pod_timeout", "?"))

    def run(self):
        self.check_binds()
        self.check_pending()
        self.check_reported()
        return self.violations


def sched_label(result):
    name = result.get("scheduler", "?")
    return "kube-scheduler" if name == "default-scheduler" else name


def summary(result, violations, other=None):
    pods = len(result["pods"])
    pend = sum(1 for p in result["pods"] if not p["spec"].get("nodeName"))
    line = "property: seed=%s sched=%s pods=%d bound=%d pending=%d violations=%d" % (
        result["seed"], sched_label(result), pods, pods - pend, pend, len(violations))
    if other is not None:
        opend = sum(1 for p in other["pods"] if not p["spec"].get("nodeName"))
        line += " (%s pending=%d)" % (sched_label(other), opend)
    return line, pend


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result")
    ap.add_argument("--compare", help="result of the same workload under another scheduler")
    ap.add_argument("--window", type=float, default=1.0,
                    help="seconds within which two binds count as concurrent")
    a = ap.parse_args()
    with open(a.result) as f:
        result = json.load(f)
    other = None
    if a.compare:
        with open(a.compare) as f:
            other = json.load(f)
    c = Checker(result)
    c.check_binds(a.window)
    c.check_pending()
    c.check_reported()
    for v in c.violations:
        print(v)
    line, pend = summary(result, c.violations, other)
    rc = 1 if c.violations else 0
    if other is not None:
        opend = sum(1 for p in other["pods"] if not p["spec"].get("nodeName"))
        if opend != pend:
            mine = set(Checker(result).pending())
            theirs = set(Checker(other).pending())
            print("MISMATCH pending: %d vs %d; only here: %s; only there: %s" % (
                pend, opend, ",".join(sorted(mine - theirs)) or "-", ",".join(sorted(theirs - mine)) or "-"))
            rc = 1
    print(line)
    return rc


if __name__ == "__main__":
    sys.exit(main())
