#!/usr/bin/env python3
"""Unit tests of checker.py against cases taken from the v1.20 plugins' semantics (stdlib unittest)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checker  # noqa: E402


def node(name, cpu="4", mem="8Gi", pods="110", labels=None, taints=None, unsched=False, extra=None):
    alloc = {"cpu": cpu, "memory": mem, "pods": pods}
    alloc.update(extra or {})
    lab = {checker.HOST: name}
    lab.update(labels or {})
    spec = {}
    if taints:
        spec["taints"] = taints
    if unsched:
        spec["unschedulable"] = True
    return {"metadata": {"name": name, "labels": lab}, "spec": spec, "status": {"allocatable": alloc}}


def pod(name, ns="prop-a", labels=None, cpu=None, on=None, **spec):
    c = {"name": "main"}
    if cpu:
        c["resources"] = {"requests": {"cpu": cpu}}
    s = {"containers": [c]}
    s.update(spec)
    if on:
        s["nodeName"] = on
    return {"metadata": {"name": name, "namespace": ns, "labels": labels or {}}, "spec": s}


def result(nodes, pods, order=(), **extra):
    r = {"seed": 0, "nodes": nodes, "pods": pods, "pvs": [], "pvcs": [], "storageclasses": [],
         "bind_order": [{"pod": "prop-a/" + p, "node": n, "rv": i, "t_bind": float(i), "t_create": 0.0}
                        for i, (p, n) in enumerate(order)]}
    r.update(extra)
    return r


def violations(r):
    return checker.Checker(r).run()


def term(key, sel, ns=None):
    t = {"labelSelector": {"matchLabels": sel}, "topologyKey": key}
    if ns:
        t["namespaces"] = ns
    return t


class Quantities(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(checker.res_value("cpu", "250m"), 250)
        self.assertEqual(checker.res_value("cpu", "1.5"), 1500)
        self.assertEqual(checker.res_value("memory", "1Gi"), 2**30)
        self.assertEqual(checker.res_value("memory", "1e3"), 1000)
        self.assertEqual(checker.res_value("cpu", "0.0001"), 1)   # MilliValue rounds up

    def test_requests_init_max(self):
        p = pod("p", cpu="1")
        p["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "3"}}}]
        self.assertEqual(checker.pod_requests(p)["cpu"], 3000)


class Filters(unittest.TestCase):
    def test_overcommit_detected(self):
        n = [node("n1", cpu="4")]
        ps = [pod("a", cpu="3", on="n1"), pod("b", cpu="2", on="n1")]
        v = violations(result(n, ps, [("a", "n1"), ("b", "n1")]))
        self.assertEqual(len(v), 1)
        self.assertIn("pod=prop-a/b", v[0])
        self.assertIn("Insufficient cpu", v[0])

    def test_pod_count_and_zero_request(self):
        n = [node("n1", pods="1")]
        ps = [pod("a", on="n1"), pod("b", on="n1")]
        v = violations(result(n, ps, [("a", "n1"), ("b", "n1")]))
        self.assertEqual(len(v), 1)
        self.assertIn("Too many pods", v[0])

    def test_pending_pod_that_fits_is_reported(self):
        v = violations(result([node("n1")], [pod("a", cpu="1")]))
        self.assertEqual(len(v), 1)
        self.assertIn("pending, but node(s) n1", v[0])

    def test_ports(self):
        def hp(ip, proto="TCP"):
            port = {"containerPort": 80, "hostPort": 8080, "protocol": proto}
            if ip:
                port["hostIP"] = ip
            return [{"name": "main", "ports": [port]}]
        n = [node("n1")]
        a = pod("a", on="n1", containers=hp("127.0.0.1"))
        b = pod("b", containers=hp(None))
        c = pod("c", containers=hp(None, "UDP"))
        ck = checker.Checker(result(n, [a, b, c]))
        placed = [(a, "n1")]
        self.assertTrue(ck.filters(b, n[0], placed))      # 0.0.0.0 vs 127.0.0.1
        self.assertFalse(ck.filters(c, n[0], placed))     # UDP vs TCP

    def test_taints(self):
        n = node("n1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"},
                               {"key": "soft", "effect": "PreferNoSchedule"}])
        ck = checker.Checker(result([n], []))
        self.assertTrue(ck.filters(pod("a"), n, []))
        self.assertFalse(ck.filters(pod("a", tolerations=[{"key": "k", "operator": "Equal", "value": "v"}]), n, []))
        self.assertTrue(ck.filters(pod("a", tolerations=[{"key": "k", "operator": "Equal", "value": "w"}]), n, []))
        self.assertFalse(ck.filters(pod("a", tolerations=[{"operator": "Exists"}]), n, []))
        self.assertTrue(ck.filters(pod("a", tolerations=[{"key": "k", "operator": "Exists",
                                                          "effect": "NoExecute"}]), n, []))
        u = node("n2", unsched=True)
        self.assertTrue(ck.filters(pod("a"), u, []))
        self.assertFalse(ck.filters(pod("a", tolerations=[{"key": "node.kubernetes.io/unschedulable",
                                                           "operator": "Exists", "effect": "NoSchedule"}]), u, []))

    def test_node_affinity_operators(self):
        n = node("n1", labels={"gen": "3", "zone": "z1"})

        def req(*exprs, fields=None):
            t = {"matchExpressions": list(exprs)}
            if fields:
                t["matchFields"] = fields
            return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [t]}}}
        ok = [{"key": "gen", "operator": "Gt", "values": ["2"]}, {"key": "gen", "operator": "Lt", "values": ["4"]},
              {"key": "absent", "operator": "NotIn", "values": ["x"]}, {"key": "absent", "operator": "DoesNotExist"},
              {"key": "zone", "operator": "In", "values": ["z1", "z2"]}]
        bad = [{"key": "gen", "operator": "Gt", "values": ["3"]}, {"key": "absent", "operator": "Lt", "values": ["9"]},
               {"key": "zone", "operator": "NotIn", "values": ["z1"]}, {"key": "absent", "operator": "Exists"}]
        for e in ok:
            self.assertTrue(checker.pod_matches_node_selector_and_affinity(pod("a", affinity=req(e)), n), e)
        for e in bad:
            self.assertFalse(checker.pod_matches_node_selector_and_affinity(pod("a", affinity=req(e)), n), e)
        f = [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]
        self.assertTrue(checker.pod_matches_node_selector_and_affinity(pod("a", affinity=req(fields=f)), n))
        empty = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}}
        self.assertFalse(checker.pod_matches_node_selector_and_affinity(pod("a", affinity=empty), n))


class PodAffinity(unittest.TestCase):
    def setUp(self):
        self.n1 = node("n1", labels={checker.ZONE: "z1"})
        self.n2 = node("n2", labels={checker.ZONE: "z2"})
        self.n3 = node("n3")   # no zone label

    def aff(self, key, sel, kind="podAffinity"):
        return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term(key, sel)]}}

    def test_first_self_matching_pod_may_go(self):
        ck = checker.Checker(result([self.n1, self.n3], []))
        me = pod("a", labels={"app": "x"}, affinity=self.aff(checker.ZONE, {"app": "x"}))
        self.assertFalse(ck.filters(me, self.n1, []))
        self.assertTrue(ck.filters(me, self.n3, []))            # node lacks the key
        other = pod("b", labels={"app": "y"}, affinity=self.aff(checker.ZONE, {"app": "x"}))
        self.assertTrue(ck.filters(other, self.n1, []))          # does not match itself

    def test_affinity_follows_matching_pod(self):
        ck = checker.Checker(result([self.n1, self.n2], []))
        x = pod("x", labels={"app": "x"})
        me = pod("a", labels={"app": "x"}, affinity=self.aff(checker.ZONE, {"app": "x"}))
        self.assertFalse(ck.filters(me, self.n1, [(x, "n1")]))
        self.assertTrue(ck.filters(me, self.n2, [(x, "n1")]))    # a match exists elsewhere: not first
        other_ns = pod("x", ns="prop-b", labels={"app": "x"})
        self.assertFalse(ck.filters(me, self.n2, [(other_ns, "n1")]))   # other namespace: no match, self-match

    def test_anti_affinity_and_symmetry(self):
        ck = checker.Checker(result([self.n1, self.n2], []))
        x = pod("x", labels={"app": "x"}, affinity=self.aff(checker.HOST, {"app": "y"}, "podAntiAffinity"))
        y = pod("y", labels={"app": "y"})
        self.assertTrue(ck.filters(y, self.n1, [(x, "n1")]))     # existing pod's anti-affinity
        self.assertFalse(ck.filters(y, self.n2, [(x, "n1")]))
        z = pod("z", labels={"app": "z"}, affinity=self.aff(checker.ZONE, {"app": "y"}, "podAntiAffinity"))
        self.assertTrue(ck.filters(z, self.n1, [(y, "n1")]))
        self.assertFalse(ck.filters(z, self.n2, [(y, "n1")]))

    def test_concurrent_bind_window(self):
        # b (affinity to app=x) bound just before x in watch order, while x was in flight:
        # acceptable only because x's bind was concurrent.
        x = pod("x", labels={"app": "x"}, on="n1")
        b = pod("b", labels={"app": "b"}, on="n1", affinity=self.aff(checker.ZONE, {"app": "x"}))
        r = result([self.n1, self.n2], [x, b])
        r["bind_order"] = [{"pod": "prop-a/b", "node": "n1", "rv": 1, "t_bind": 10.0, "t_create": 9.9},
                           {"pod": "prop-a/x", "node": "n1", "rv": 2, "t_bind": 10.2, "t_create": 1.0}]
        self.assertEqual(violations(r), [])
        r["bind_order"][1]["t_create"] = 10.1   # x created after b was bound: b was wrong
        v = violations(r)
        self.assertEqual(len(v), 1)
        self.assertIn("pod=prop-a/b", v[0])


class Spread(unittest.TestCase):
    def test_skew(self):
        n1 = node("n1", labels={checker.ZONE: "z1"})
        n2 = node("n2", labels={checker.ZONE: "z2"})
        n3 = node("n3")
        c = [{"maxSkew": 1, "topologyKey": checker.ZONE, "whenUnsatisfiable": "DoNotSchedule",
              "labelSelector": {"matchLabels": {"app": "s"}}}]
        ck = checker.Checker(result([n1, n2, n3], []))
        s = pod("s", labels={"app": "s"}, topologySpreadConstraints=c)
        placed = [(pod("s0", labels={"app": "s"}), "n1")]
        self.assertTrue(ck.filters(s, n1, placed))       # 1+1-0 > 1
        self.assertFalse(ck.filters(s, n2, placed))
        self.assertTrue(ck.filters(s, n3, placed))       # no zone label
        # pods of another namespace do not count
        self.assertFalse(ck.filters(s, n1, [(pod("s0", ns="prop-b", labels={"app": "s"}), "n1")]))
        # domains only from nodes passing the pod's nodeSelector
        s2 = pod("s", labels={"app": "s"}, topologySpreadConstraints=c, nodeSelector={checker.ZONE: "z1"})
        self.assertFalse(ck.filters(s2, n1, placed))
        soft = [dict(c[0], whenUnsatisfiable="ScheduleAnyway")]
        self.assertFalse(ck.filters(pod("s", labels={"app": "s"}, topologySpreadConstraints=soft), n1, placed))


class Volumes(unittest.TestCase):
    def test_wait_for_first_consumer(self):
        n1, n2 = node("n1", labels={checker.ZONE: "z0"}), node("n2", labels={checker.ZONE: "z2"})
        classes = [{"metadata": {"name": "local"}, "provisioner": checker.NO_PROVISIONER,
                    "volumeBindingMode": "WaitForFirstConsumer"},
                   {"metadata": {"name": "dyn"}, "provisioner": "x", "volumeBindingMode": "WaitForFirstConsumer",
                    "allowedTopologies": [{"matchLabelExpressions": [{"key": checker.ZONE, "values": ["z0"]}]}]},
                   {"metadata": {"name": "imm"}, "provisioner": checker.NO_PROVISIONER,
                    "volumeBindingMode": "Immediate"}]
        pv = {"metadata": {"name": "pv1"}, "status": {"phase": "Available"},
              "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                       "storageClassName": "local",
                       "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                           {"key": checker.HOST, "operator": "In", "values": ["n1"]}]}]}}}}

        def claim(name, sc, size="5Gi"):
            return {"metadata": {"name": name, "namespace": "prop-a"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": sc,
                             "resources": {"requests": {"storage": size}}}}

        def user(c):
            return pod("p-" + c, volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": c}}])
        r = result([n1, n2], [], storageclasses=classes, pvs=[pv],
                   pvcs=[claim("l", "local"), claim("big", "local", "20Gi"), claim("d", "dyn"), claim("i", "imm")])
        ck = checker.Checker(r)
        self.assertEqual(ck.feasible_nodes(user("l")), ["n1"])
        self.assertEqual(ck.feasible_nodes(user("big")), [])
        self.assertEqual(ck.feasible_nodes(user("d")), ["n1"])
        self.assertEqual(ck.feasible_nodes(user("i")), [])
        self.assertEqual(ck.feasible_nodes(user("missing")), [])


if __name__ == "__main__":
    unittest.main()
