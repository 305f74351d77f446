#!/usr/bin/env python3
"""Unit tests of test/compose/checker.py: a clean hand-made snapshot passes, and one
snapshot per invariant that violates it is reported (with its rule name), so the
checker can fail. Plain unittest: python3 test/compose/test_checker.py"""
import copy
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checker  # noqa: E402

CTX = {"seed": 7, "step": "t"}


def node(name, pool, gpu=4, cpu="32", mem="128Gi"):
    res = {"cpu": cpu, "memory": mem, "nvidia.com/gpu": str(gpu), "pods": "110"}
    return {"metadata": {"name": name, "labels": {"pool": pool}}, "spec": {},
            "status": {"allocatable": res, "capacity": res}}


_uid = [0]


def pod(name, pool, gpu=0, nodeName="", queue="", prio=10, frac="", idx="", labels=None, phase=None,
        ns="default", ann=None, policy=None, cond=None, nominated=""):
    _uid[0] += 1
    lab = dict(labels or {})
    if queue:
        lab["resource.aibee.cn/queue"] = queue
    a = {"resource.aibee.cn/pool": pool}
    if frac:
        a["gpu-fraction"] = frac
    if idx:
        a["resource.aibee.cn/gpu-index"] = idx
    a.update(ann or {})
    req = {"cpu": "1", "memory": "1Gi"}
    if gpu:
        req["nvidia.com/gpu"] = str(gpu)
    p = {"metadata": {"name": name, "namespace": ns, "uid": "u-%s-%d" % (name, _uid[0]), "labels": lab,
                      "annotations": a, "creationTimestamp": "2026-01-01T00:00:%02dZ" % (_uid[0] % 60)},
         "spec": {"schedulerName": "ai-scheduler", "priority": prio, "nodeName": nodeName,
                  "containers": [{"name": "c", "resources": {"requests": req}}]},
         "status": {"phase": phase or ("Running" if nodeName else "Pending")}}
    if policy:
        p["spec"]["preemptionPolicy"] = policy
    if cond is not None:
        p["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                      "message": cond}]
    if nominated:
        p["status"]["nominatedNodeName"] = nominated
    return p


def reservation(nodeName, slot):
    return {"metadata": {"name": "gpu-res-%s-%d-x" % (nodeName, slot), "namespace": "ai-scheduler-system",
                         "uid": "r-%s-%d" % (nodeName, slot),
                         "labels": {"resource.aibee.cn/gpu-reservation": "true",
                                    "app.kubernetes.io/managed-by": "ai-scheduler"},
                         "annotations": {"resource.aibee.cn/gpu-index": str(slot),
                                         "resource.aibee.cn/gpu-reservation-node": nodeName}},
            "spec": {"schedulerName": "default-scheduler", "nodeName": nodeName,
                     "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]},
            "status": {"phase": "Running"}}


def pool(name, **kw):
    return {"metadata": {"name": name}, "spec": dict({"nodeSelector": {"matchLabels": {"pool": name}}}, **kw)}


def queue(name, parent="", quota=None, limit=None):
    g = {}
    if quota is not None:
        g["quota"] = quota
    if limit is not None:
        g["limit"] = limit
    spec = {"resources": {"gpu": g}}
    if parent:
        spec["parentQueue"] = parent
    return {"metadata": {"name": name}, "spec": spec}


def event(obj, reason, msg, when="2026-01-01T00:01:00Z"):
    m = obj["metadata"]
    return {"reason": reason, "message": msg, "firstTimestamp": when,
            "involvedObject": {"kind": "Pod", "namespace": m["namespace"], "name": m["name"], "uid": m["uid"]}}


def base():
    """A clean, settled cluster: pools pa (2 nodes) and pb (1 node), queues dept > (a, b)
    and other; a fraction pair on a shared slot, a whole-GPU pod, a borrower on pb where
    nobody of pb waits, a full gang, and a pending pod with a current reason."""
    fa = pod("fa", "pa", nodeName="pa-0", queue="a", frac="0.5", idx="0")
    fb = pod("fb", "pa", nodeName="pa-0", queue="a", frac="0.5", idx="0")
    w = pod("w", "pa", gpu=3, nodeName="pa-0", queue="b")
    bor = pod("bor", "pa", gpu=2, nodeName="pb-0", queue="other",
              ann={"resource.aibee.cn/borrowed-from": "pb"})
    g0 = pod("g-0", "pa", gpu=2, nodeName="pa-1", queue="b", labels={checker.PG_LABEL: "g"})
    g1 = pod("g-1", "pa", gpu=2, nodeName="pa-1", queue="b", labels={checker.PG_LABEL: "g"})
    big = pod("big", "pa", gpu=8, queue="other", cond="0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")
    snap = {"nodes": [node("pa-0", "pa"), node("pa-1", "pa"), node("pb-0", "pb")],
            "pods": [fa, fb, w, bor, g0, g1, big, reservation("pa-0", 0)],
            "pools": [pool("pa"), pool("pb")],
            "queues": [queue("dept", limit=8), queue("a", "dept", quota=2, limit=4), queue("b", "dept", quota=2),
                       queue("other", quota=2, limit=6)],
            "podgroups": [{"metadata": {"name": "g", "namespace": "default"}, "spec": {"minMember": 2}}],
            "pdbs": [], "events": [event(big, "FailedScheduling", "0/3 nodes are available")]}
    return snap


def named(snap, name):
    return next(p for p in snap["pods"] if p["metadata"]["name"] == name)


def rules(found):
    return sorted({f.split(": RULE ", 1)[1].split(":", 1)[0] for f in found})


class CheckerTest(unittest.TestCase):
    def all(self, snap, ctx=None):
        c = dict(CTX, **(ctx or {}))
        c.setdefault("seen", {p["metadata"]["uid"]: p for p in snap["pods"]})
        return checker.check_step(snap, c) + checker.check_history(snap, c) + checker.check_settled(snap, c)

    def assertRule(self, snap, rule, ctx=None):
        found = self.all(snap, ctx)
        self.assertIn(rule, rules(found), "want %s, got %s" % (rule, found))
        for f in found:
            self.assertTrue(f.startswith("SEED 7 step t: RULE "), f)
        return found

    def test_clean(self):
        self.assertEqual(self.all(base()), [])

    def test_overcommit_gpu(self):
        s = base()
        s["pods"].append(pod("x", "pa", gpu=1, nodeName="pa-0", queue="b"))   # 3 + 1 + reservation 1 = 5 > 4
        f = self.assertRule(s, "overcommit")
        self.assertIn("node pa-0", f[0])

    def test_overcommit_counts_reservation_pods(self):
        s = base()
        named(s, "w")["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "3"
        s["pods"].append(reservation("pa-0", 1))    # 3 whole + 2 reservations = 5 > 4
        self.assertRule(s, "overcommit")

    def test_overcommit_cpu_and_terminating_counts(self):
        s = base()
        x = pod("x", "pb", nodeName="pb-0", queue="b")
        x["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "31500m"
        x["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        s["pods"].append(x)
        self.assertRule(s, "overcommit")

    def test_succeeded_pods_do_not_count(self):
        s = base()
        s["pods"].append(pod("done", "pa", gpu=4, nodeName="pa-0", queue="b", phase="Succeeded"))
        self.assertEqual(self.all(s), [])

    def test_slot_over_one(self):
        s = base()
        s["pods"].append(pod("fc", "pa", nodeName="pa-0", queue="a", frac="0.25", idx="0"))
        self.assertRule(s, "gpu-slot")

    def test_slot_without_index_or_reservation(self):
        s = base()
        s["pods"].append(pod("fd", "pa", nodeName="pa-1", queue="a", frac="0.25"))
        self.assertRule(s, "gpu-slot")
        s = base()
        s["pods"] = [p for p in s["pods"] if not checker.is_reservation(p)]
        f = self.assertRule(s, "gpu-slot")
        self.assertTrue(any("no live reservation" in x for x in f))

    def test_forged_reservation_is_not_trusted(self):
        s = base()
        r = named(s, "gpu-res-pa-0-0-x")
        r["metadata"]["namespace"] = "default"
        self.assertRule(s, "gpu-slot")

    def test_queue_limit_leaf_and_ancestor(self):
        s = base()
        s["nodes"][2] = node("pb-0", "pb", gpu=16)
        s["pods"].append(pod("a2", "pa", gpu=2, nodeName="pb-0", queue="a"))   # borrowers: charged in pb
        s["pods"].append(pod("a3", "pb", gpu=2, nodeName="pb-0", queue="a"))   # a in pb: 4 <= 4
        self.assertEqual(self.all(s), [])
        s["pods"].append(pod("a4", "pb", gpu=1, nodeName="pb-0", queue="a"))   # 5 > 4
        f = self.assertRule(s, "queue-limit")
        self.assertTrue(any("queue a pool pb" in x for x in f), f)
        s = base()
        s["nodes"][2] = node("pb-0", "pb", gpu=16)
        s["pods"].append(pod("b2", "pb", gpu=4, nodeName="pb-0", queue="b"))   # dept in pb: 4 > 3
        s["queues"][0]["spec"]["resources"]["gpu"]["limit"] = 3
        f = self.assertRule(s, "queue-limit")
        self.assertTrue(any("queue dept pool pb" in x for x in f), f)

    def test_queue_limit_per_pool_override(self):
        s = base()
        s["queues"][3]["spec"]["pools"] = {"pb": {"resources": {"gpu": {"limit": 1}}}}
        f = self.assertRule(s, "queue-limit")     # bor (queue other) holds 2 GPUs of pb
        self.assertIn("queue other pool pb", f[0])

    def test_np_quota(self):
        s = base()
        s["nodes"][2] = node("pb-0", "pb", gpu=16)
        s["pods"].append(pod("hi1", "pb", gpu=1, nodeName="pb-0", queue="a", prio=200))
        s["pods"].append(pod("hi2", "pb", gpu=1, nodeName="pb-0", queue="a",
                             labels={"resource.aibee.cn/preemptible": "false"}))
        self.assertEqual(self.all(s), [])    # non-preemptible in a, pool pb: 2 <= quota 2
        s["pods"].append(pod("hi3", "pb", frac="0.5", idx="0", nodeName="pb-0", queue="a", prio=150))
        s["pods"].append(reservation("pb-0", 0))
        f = self.assertRule(s, "np-quota")   # 2.5 > 2
        self.assertIn("queue a pool pb", f[0])

    def test_pdb(self):
        s = base()
        v = pod("guarded", "pa", gpu=1, nodeName="pa-1", queue="b", labels={"compose-pdb": "g0"})
        s["pdbs"] = [{"metadata": {"name": "g0", "namespace": "default"},
                      "spec": {"selector": {"matchLabels": {"compose-pdb": "g0"}}}, "status": {"disruptionsAllowed": 0}}]
        seen = {p["metadata"]["uid"]: p for p in s["pods"] + [v]}
        s["events"].append(event(v, "Preempted", "Preempted by default/w on node pa-1"))
        self.assertRule(s, "pdb", {"seen": seen})

    def test_ping_pong_same_demand(self):
        s = base()
        v1 = pod("v", "pa", gpu=1, nodeName="pa-1", queue="b")
        v2 = copy.deepcopy(v1)
        v2["metadata"]["uid"] = "u-v-again"
        seen = {p["metadata"]["uid"]: p for p in s["pods"] + [v1, v2]}
        s["events"] += [event(v1, "Preempted", "Preempted by default/w on node pa-1"),
                        event(v2, "Preempted", "Preempted by default/w on node pa-1")]
        self.assertRule(s, "ping-pong", {"seen": seen})

    def test_same_victim_new_preemptor_incarnation_is_not_ping_pong(self):
        s = base()
        v1 = pod("v", "pa", gpu=1, nodeName="pa-1", queue="b")
        v2 = copy.deepcopy(v1)
        v2["metadata"]["uid"] = "u-v-again"
        w2 = copy.deepcopy(named(s, "w"))
        w2["metadata"]["uid"] = "u-w-again"
        w2["metadata"]["creationTimestamp"] = "2026-01-01T00:05:00Z"
        seen = {p["metadata"]["uid"]: p for p in s["pods"] + [v1, v2, w2]}
        s["events"] += [event(v1, "Preempted", "Preempted by default/w on node pa-1", "2026-01-01T00:01:00Z"),
                        event(v2, "Preempted", "Preempted by default/w on node pa-1", "2026-01-01T00:06:00Z")]
        self.assertEqual([f for f in self.all(s, {"seen": seen}) if "ping-pong" in f], [])

    def test_pending_victim(self):
        s = base()
        v = pod("v", "pa", gpu=1, queue="b")
        s["events"].append(event(v, "Preempted", "Preempted by default/w on node pa-1"))
        seen = {p["metadata"]["uid"]: p for p in s["pods"] + [v]}
        found = self.assertRule(s, "pending-victim", {"seen": seen, "watched": {v["metadata"]["uid"]}, "ever_bound": set()})
        self.assertEqual(rules(found), ["pending-victim"])
        # bound once (the watch saw its node), or never watched: not judged
        self.assertEqual(self.all(s, {"seen": seen, "watched": {v["metadata"]["uid"]},
                                      "ever_bound": {v["metadata"]["uid"]}}), [])
        self.assertEqual(self.all(s, {"seen": seen, "watched": set(), "ever_bound": set()}), [])

    def test_eviction_stats(self):
        s = base()
        young, old = pod("y", "pa", gpu=1, nodeName="pa-1"), pod("o", "pa", gpu=1, nodeName="pa-1")
        young["status"]["startTime"] = "2026-01-01T00:00:30Z"
        old["status"]["startTime"] = "2026-01-01T00:00:00Z"
        s["events"] += [event(young, "Preempted", "Preempted by default/w on node pa-1", "2026-01-01T00:01:00Z"),
                        event(old, "Preempted", "Preempted by default/w on node pa-1", "2026-01-01T00:01:00Z")]
        seen = {p["metadata"]["uid"]: p for p in [young, old]}
        self.assertEqual(checker.eviction_stats(s, seen), (2, 1, 1))

    def test_ping_pong_mutual(self):
        s = base()
        x, y = pod("x", "pa", gpu=1, nodeName="pa-1", queue="a"), pod("y", "pa", gpu=1, nodeName="pa-1", queue="b")
        seen = {p["metadata"]["uid"]: p for p in s["pods"] + [x, y]}
        s["events"] += [event(x, "Preempted", "Preempted by default/y on node pa-1"),
                        event(y, "Preempted", "Preempted by default/x on node pa-1")]
        self.assertRule(s, "ping-pong", {"seen": seen})

    def _evicted(self, snap, victim, by, start, when="2026-01-01T00:01:00Z", node="pa-0"):
        victim["status"]["startTime"] = start
        snap["events"].append(event(victim, "Preempted", "Preempted by default/%s on node %s" % (by, node), when))

    def test_min_runtime_preempt_inherited_and_pool(self):
        def q(snap, name):
            return next(x for x in snap["queues"] if x["metadata"]["name"] == name)["spec"]
        snap = base()
        q(snap, "dept")["preemptMinRuntime"] = "2m"   # inherited by b; big joins b: a preemption
        named(snap, "big")["metadata"]["labels"]["resource.aibee.cn/queue"] = "b"
        self._evicted(snap, named(snap, "w"), "big", "2026-01-01T00:00:00Z")  # 60 s old
        found = self.assertRule(snap, "min-runtime")
        self.assertIn("preemptMinRuntime of 120s", " ".join(found))
        snap = base()
        q(snap, "dept")["preemptMinRuntime"] = "2m"   # big in "other": a reclaim, whose 0 applies
        self._evicted(snap, named(snap, "w"), "big", "2026-01-01T00:00:00Z")
        self.assertNotIn("min-runtime", rules(self.all(snap)))
        snap["pools"][0]["spec"]["reclaimMinRuntime"] = "90s"   # w's home pool pa
        self.assertIn("min-runtime", rules(self.all(snap)))
        q(snap, "b")["reclaimMinRuntime"] = "0"   # the queue's own "0" wins over the pool's
        self.assertNotIn("min-runtime", rules(self.all(snap)))

    def test_min_runtime_old_enough_or_lowered_passes(self):
        snap = base()
        snap["queues"][2]["spec"]["reclaimMinRuntime"] = "1m"   # b, w's queue
        self._evicted(snap, named(snap, "w"), "big", "2026-01-01T00:00:00Z")  # exactly 60 s
        self.assertNotIn("min-runtime", rules(self.all(snap)))
        snap = base()
        snap["queues"][2]["spec"]["reclaimMinRuntime"] = "-1"
        named(snap, "w")["metadata"]["annotations"][checker.RECLAIM_MIN_ANN] = "30s"  # asks less
        self._evicted(snap, named(snap, "w"), "big", "2026-01-01T00:00:00Z")
        self.assertNotIn("min-runtime", rules(self.all(snap)))
        snap = base()
        snap["queues"][2]["spec"]["reclaimMinRuntime"] = "-1"   # never
        self._evicted(snap, named(snap, "w"), "big", "2025-01-01T00:00:00Z")
        self.assertRule(snap, "min-runtime")

    def test_checkpoint_not_requested(self):
        snap = base()
        w = named(snap, "w")
        w["metadata"]["annotations"][checker.CKPT_GRACE_ANN] = "30s"
        self._evicted(snap, w, "big", "2026-01-01T00:00:00Z")
        self.assertRule(snap, "checkpoint")
        self.assertNotIn("checkpoint", rules(self.all(snap, {"ckpt_requested": {w["metadata"]["uid"]: 1.0}})))
        snap = base()
        snap["queues"][3]["spec"]["checkpointGrace"] = "10s"    # "other" is not w's queue
        self._evicted(snap, named(snap, "w"), "big", "2026-01-01T00:00:00Z")
        self.assertNotIn("checkpoint", rules(self.all(snap)))
        snap["queues"][0]["spec"]["checkpointGrace"] = "10s"    # dept, b's parent
        self.assertIn("checkpoint", rules(self.all(snap)))
        named(snap, "w")["metadata"]["annotations"][checker.CKPT_GRACE_ANN] = "0"  # opted out
        self.assertNotIn("checkpoint", rules(self.all(snap)))

    def test_borrower_evicts_home(self):
        s = base()
        home = pod("pbhome", "pb", gpu=1, nodeName="pb-0", queue="other")
        seen = {p["metadata"]["uid"]: p for p in s["pods"] + [home]}
        s["events"].append(event(home, "Preempted", "Preempted by default/bor on node pb-0"))
        self.assertRule(s, "borrower-evicts-home", {"seen": seen})

    def test_gang_min(self):
        s = base()
        s["podgroups"][0]["spec"]["minMember"] = 3
        f = self.assertRule(s, "gang-min")
        self.assertIn("podgroup default/g", f[0])
        # a gang the harness broke (drain) is exempt; a Succeeded member counts
        self.assertEqual([x for x in self.all(s, {"disrupted_gangs": {"default/g"}}) if "gang-min" in x], [])
        s["pods"].append(pod("g-2", "pa", gpu=2, nodeName="pa-1", queue="b", labels={checker.PG_LABEL: "g"},
                             phase="Succeeded"))
        self.assertEqual([x for x in self.all(s) if "gang-min" in x], [])

    def test_home_pod_waits_behind_borrower(self):
        s = base()
        s["nodes"][2]["status"]["allocatable"]["nvidia.com/gpu"] = "2"     # pb-0: the borrower fills it
        s["nodes"][2]["status"]["capacity"]["nvidia.com/gpu"] = "2"
        h = pod("home", "pb", gpu=1, queue="other", cond="0/3 nodes are available: 1 Insufficient nvidia.com/gpu.")
        s["pods"].append(h)
        s["events"].append(event(h, "FailedScheduling", "x"))
        self.assertRule(s, "home-vs-borrower")
        # not for preemptionPolicy Never, nor when the borrower is PDB-protected, nor over the queue limit
        h["spec"]["preemptionPolicy"] = "Never"
        self.assertEqual(self.all(s), [])
        del h["spec"]["preemptionPolicy"]
        s["queues"][3]["spec"]["resources"]["gpu"]["limit"] = 2
        self.assertEqual([x for x in self.all(s) if "home-vs-borrower" in x], [])

    def test_stale_nomination(self):
        s = base()
        named(s, "big")["status"]["nominatedNodeName"] = "pa-1"
        self.assertRule(s, "nomination")

    def test_reason_missing(self):
        s = base()
        del named(s, "big")["status"]["conditions"]
        self.assertRule(s, "reason")
        s = base()
        s["events"] = []
        self.assertRule(s, "reason")

    def test_reason_stale_limit(self):
        s = base()
        named(s, "big")["status"]["conditions"][0]["message"] = 'queue "other" limit: gpu 6 + 8 > 6'
        self.assertEqual(self.all(s), [])        # other holds 2 in pb: 2 + 8 > 6 still true
        named(s, "big")["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
        named(s, "big")["status"]["conditions"][0]["message"] = 'queue "other" limit: gpu 6 + 1 > 6'
        self.assertRule(s, "reason")             # 2 + 1 <= 6 in every pool: stale

    def test_reason_stale_waiting_behind(self):
        s = base()
        named(s, "big")["status"]["conditions"][0]["message"] = \
            "waiting behind pod group default/g, which goes first in this pool and does not fit yet"
        self.assertRule(s, "reason")             # g has no pending member


def version(p, **kw):
    """A copy of pod p changed: nodeName, phase, nominated, cond, ts (condition time)."""
    q = copy.deepcopy(p)
    if "nodeName" in kw:
        q["spec"]["nodeName"] = kw["nodeName"]
        q["status"]["phase"] = "Running" if kw["nodeName"] else "Pending"
    if "phase" in kw:
        q["status"]["phase"] = kw["phase"]
    if "nominated" in kw:
        q["status"]["nominatedNodeName"] = kw["nominated"]
    if "cond" in kw:
        q["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                      "message": kw["cond"], "lastTransitionTime": kw.get("ts", "")}]
    if kw.get("deleting"):
        q["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:59Z"
    return q


INSUFFICIENT = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
T = 1767225600.0   # 2026-01-01T00:00:00Z: pods of pod() are created in its first minute


class TimelineTest(unittest.TestCase):
    """The rules over run.py's pod watch timeline: flush-wait, nomination-restart, and
    queue-age over its explain samples."""

    def flush_case(self, bind_after, cond=INSUFFICIENT, group=False, pool="pa", relist=False, cond_after=False):
        """w (4 GPUs) holds pa-0 and is deleted at T+100; p waits with cond and binds on
        pa-0 bind_after seconds later."""
        w = pod("w", "pa", gpu=4, nodeName="pa-0")
        p = pod("p", pool, gpu=4, labels={checker.PG_LABEL: "g"} if group else None)
        tl = [(T + 61, "ADDED", w), (T + 61, "ADDED", p),
              (T + 62, "MODIFIED", version(p, cond=cond, ts="2026-01-01T00:01:02Z"))]
        if cond_after:   # decided again after the room freed: same message, a new time
            tl.append((T + 101, "MODIFIED", version(p, cond=cond, ts="2026-01-01T00:01:41Z")))
        tl.append((T + 100, "DELETED", w))
        tl.sort(key=lambda e: e[0])
        if relist:
            tl.append((T + 100 + bind_after / 2, "RELIST", None))
        tl.append((T + 100 + bind_after, "MODIFIED", version(p, nodeName="pa-0", cond=cond)))
        return tl

    def test_flush_wait(self):
        ctx = dict(CTX, node_pools={"pa-0": "pa"})
        found = checker.check_flush_wait(self.flush_case(58), ctx)
        self.assertEqual(rules(found), ["flush-wait"], found)
        self.assertIn("default/p", found[0])
        self.assertIn("default/w deleted", found[0])
        self.assertEqual(checker.flush_wait_stats(self.flush_case(58), ctx["node_pools"]), (1, 58, 58))

    def test_flush_wait_not_judged(self):
        ctx = dict(CTX, node_pools={"pa-0": "pa"})
        self.assertEqual(checker.check_flush_wait(self.flush_case(2), ctx), [])          # woken at once
        self.assertEqual(checker.flush_wait_stats(self.flush_case(2), ctx["node_pools"]), (1, 2, 2))
        for kw in ({"cond": 'queue "a" limit: gpu 4 + 4 > 4'},          # another blocker
                   {"cond": "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had taint {a: b}, that the pod "
                            "didn't tolerate."},
                   {"cond": "waiting behind pod group default/g, which goes first"},
                   {"group": True},                                       # a gang member
                   {"pool": "pb"},                                        # a borrower
                   {"relist": True},                                      # the watch was cut
                   {"cond_after": True}):                                 # tried again after the room freed
            self.assertEqual(checker.flush_wait_stats(self.flush_case(58, **kw), ctx["node_pools"])[0], 0, kw)
            self.assertEqual(checker.check_flush_wait(self.flush_case(58, **kw), ctx), [], kw)
        # a later event freed room there too (a nomination dropped): measured from it
        tl = self.flush_case(58)
        n = pod("n", "pa", gpu=4, nominated="pa-0", prio=100)
        tl[-1:-1] = [(T + 90, "ADDED", n), (T + 150, "MODIFIED", version(n, nominated=""))]
        self.assertEqual(checker.flush_wait_stats(tl, ctx["node_pools"]), (1, 8, 8))
        self.assertEqual(checker.check_flush_wait(tl, ctx), [])

    def restart_case(self, low_prio=10, low_gpu=4, cleared=False, victim_leaving=True):
        """hi (prio 100, 4 GPUs) nominated to pa-0 (4 GPUs), whose victim v is being
        deleted; the scheduler restarts at T+100 (up at T+103); low binds on pa-0 at T+104."""
        v = pod("v", "pa", gpu=4, nodeName="pa-0")
        hi = pod("hi", "pa", gpu=4, prio=100, nominated="pa-0")
        low = pod("low", "pa", gpu=low_gpu, prio=low_prio)
        tl = [(T + 61, "ADDED", v), (T + 62, "ADDED", hi), (T + 62, "ADDED", low),
              (T + 99, "MODIFIED", version(v, deleting=victim_leaving)),
              (T + 103, "RESTART", (T + 100, T + 103)), (T + 103.5, "DELETED", v),
              (T + 104, "MODIFIED", version(low, nodeName="pa-0"))]
        if cleared:
            tl.append((T + 105, "MODIFIED", version(hi, nominated="")))
        tl.append((T + 120, "MODIFIED", version(hi, cond=INSUFFICIENT)))
        return tl

    def test_restart_nomination(self):
        ctx = dict(CTX, node_alloc={"pa-0": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "4", "pods": "110"}})
        found = checker.check_restart_nominations(self.restart_case(), ctx)
        self.assertEqual(rules(found), ["nomination-restart"], found)
        self.assertIn("default/low", found[0])
        self.assertEqual(checker.check_restart_nominations(self.restart_case(low_prio=100), ctx), [])  # not lower
        self.assertEqual(checker.check_restart_nominations(self.restart_case(low_prio=200), ctx), [])
        self.assertEqual(checker.check_restart_nominations(self.restart_case(cleared=True), ctx), [])   # dropped
        # both fit (a pod of no GPU beside it): no room taken
        self.assertEqual(checker.check_restart_nominations(self.restart_case(low_gpu=0), ctx), [])
        # no restart: not this rule's business
        tl = [e for e in self.restart_case() if e[1] != "RESTART"]
        self.assertEqual(checker.check_restart_nominations(tl, ctx), [])

    def test_queue_age(self):
        p = pod("p", "pa", gpu=1)   # created in 2026-01-01T00:00
        seen = {p["metadata"]["uid"]: p}
        ctx = dict(CTX, seen=seen)
        u = p["metadata"]["uid"]
        grow = [(T + 70, 1, 1, "2026-01-01T00:01:09Z"), (T + 80, 1, 3, "2026-01-01T00:01:19Z")]
        self.assertEqual(checker.check_queue_age({u: grow}, ctx), [])
        back = grow + [(T + 90, 1, 1, "2026-01-01T00:01:29Z")]
        found = checker.check_queue_age({u: back}, ctx)
        self.assertEqual(rules(found), ["queue-age"], found)
        # a restart starts every item afresh; a record older than the pod is another incarnation's
        self.assertEqual(checker.check_queue_age({u: grow + [(T + 90, 2, 1, "2026-01-01T00:01:29Z")]}, ctx), [])
        old = [(T + 1, 1, 7, "2025-12-31T23:59:00Z")] + grow
        self.assertEqual(checker.check_queue_age({u: old}, ctx), [])

def claim(name, node="", devices=(), reserved=()):
    """A ResourceClaim in default: allocated on node (its devices of pool node) when
    devices are given, reserved for the given pods."""
    c = {"metadata": {"name": name, "namespace": "default", "uid": "c-" + name}, "spec": {}, "status": {}}
    if devices:
        c["status"]["allocation"] = {
            "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": node, "device": d}
                                    for d in devices]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}
    if reserved:
        c["status"]["reservedFor"] = [{"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}
                                      for p in reserved]
    return c


def with_claim(p, claim_name="", template=""):
    """p asking one claim "gpu": by name, or from a template (its claim, when claim_name
    is given too, named in status.resourceClaimStatuses as the controller writes it)."""
    pc = {"name": "gpu"}
    if template:
        pc["resourceClaimTemplateName"] = template
        if claim_name:
            p["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    else:
        pc["resourceClaimName"] = claim_name
    p["spec"]["resourceClaims"] = [pc]
    return p


def dra_base():
    """base() with DRA: d0 bound on pa-1 with its own claim, d1 bound on pa-0 with a
    template's claim, d2 pending (no room; its template claim not allocated), every pod
    unchanged across the snapshot's two pod lists."""
    s = base()
    d0 = with_claim(pod("d0", "pa", nodeName="pa-1", queue="a"), "d0-gpu")
    d1 = with_claim(pod("d1", "pa", nodeName="pa-0", queue="a"), "d1-gpu-x1", template="one-gpu")
    d2 = with_claim(pod("d2", "pa", queue="a", cond="0/3 nodes are available: 3 cannot allocate all claims."),
                    "d2-gpu-x2", template="one-gpu")
    s["pods"] += [d0, d1, d2]
    s["events"].append(event(d2, "FailedScheduling", "cannot allocate all claims"))
    s["claims"] = [claim("d0-gpu", "pa-1", ["gpu-0"], [d0]), claim("d1-gpu-x1", "pa-0", ["gpu-0"], [d1]),
                   claim("d2-gpu-x2")]
    s["dra_stable"] = [p["metadata"]["uid"] for p in s["pods"]]
    s["time"] = 1000.0
    return s


def cl(snap, name):
    return next(c for c in snap["claims"] if c["metadata"]["name"] == name)


class DraTest(unittest.TestCase):
    """The DRA rules (issue 36): each fed a snapshot that violates it."""
    all = CheckerTest.all
    assertRule = CheckerTest.assertRule

    def test_dra_clean(self):
        self.assertEqual(self.all(dra_base()), [])
        # no "claims" in the snapshot (a seed without DRA): no DRA rule runs
        s = dra_base()
        del s["claims"]
        self.assertEqual(checker.check_dra(s, CTX), [])

    def test_device_once(self):
        s = dra_base()
        s["claims"].append(claim("other", "pa-1", ["gpu-0"]))   # d0-gpu's device, on the same pool
        s["claims"][-1]["status"]["reservedFor"] = [{"resource": "pods", "name": "w", "uid": named(s, "w")["metadata"]["uid"]}]
        f = self.assertRule(s, "dra-device-once")
        self.assertIn("gpu.example.com/pa-1/gpu-0", f[0])
        # admin access does not hold a device
        s["claims"][-1]["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = True
        self.assertNotIn("dra-device-once", rules(self.all(s)))

    def test_bound_claim_not_allocated(self):
        s = dra_base()
        cl(s, "d1-gpu-x1")["status"] = {}
        f = self.assertRule(s, "dra-bound-claim")
        self.assertIn("default/d1", " ".join(f))
        self.assertIn("not allocated", " ".join(f))

    def test_bound_claim_other_node(self):
        s = dra_base()
        s["claims"][0] = claim("d0-gpu", "pa-0", ["gpu-1"], [named(s, "d0")])
        f = self.assertRule(s, "dra-bound-claim")
        self.assertIn("allocated on 'pa-0'", " ".join(f))

    def test_bound_claim_not_reserved_or_missing(self):
        s = dra_base()
        cl(s, "d0-gpu")["status"]["reservedFor"] = []
        self.assertIn("not reserved for it", " ".join(self.assertRule(s, "dra-bound-claim")))
        s = dra_base()
        s["claims"] = [c for c in s["claims"] if c["metadata"]["name"] != "d0-gpu"]
        self.assertIn("does not exist", " ".join(self.assertRule(s, "dra-bound-claim")))
        # a template pod bound before its claim was made (no resourceClaimStatuses)
        s = dra_base()
        named(s, "d1")["status"].pop("resourceClaimStatuses")
        self.assertIn("template's claim not made", " ".join(self.assertRule(s, "dra-bound-claim")))

    def test_bound_claim_only_stable_pods(self):
        # a pod that changed between the two pod lists is not judged against the claims
        s = dra_base()
        cl(s, "d1-gpu-x1")["status"] = {}
        s["dra_stable"].remove(named(s, "d1")["metadata"]["uid"])
        self.assertEqual(checker.check_dra(s, CTX), [])

    def test_reserved_gone(self):
        s = dra_base()
        gone = pod("gone", "pa", nodeName="pa-1")
        cl(s, "d0-gpu")["status"]["reservedFor"].append(
            {"resource": "pods", "name": "gone", "uid": gone["metadata"]["uid"]})
        ctx = {"pod_done_at": {gone["metadata"]["uid"]: 1000.0 - checker.DRA_GONE_GRACE_S - 1}}
        f = self.assertRule(s, "dra-reserved-gone", ctx)
        self.assertIn("claim default/d0-gpu", " ".join(f))
        # within the controller's grace: not yet
        ctx = {"pod_done_at": {gone["metadata"]["uid"]: 1000.0 - 2}}
        self.assertNotIn("dra-reserved-gone", rules(self.all(s, ctx)))
        # a terminal pod still listed counts as gone too
        s = dra_base()
        d0 = named(s, "d0")
        d0["status"]["phase"] = "Succeeded"
        ctx = {"pod_done_at": {d0["metadata"]["uid"]: 980.0}}
        self.assertIn("dra-reserved-gone", rules(self.all(s, ctx)))

    def test_pending_claim_reserved(self):
        s = dra_base()
        s["claims"][2] = claim("d2-gpu-x2", "pa-1", ["gpu-3"], [named(s, "d2")])
        f = self.assertRule(s, "dra-pending-claim")
        self.assertIn("default/d2", " ".join(f))
        self.assertEqual(checker.check_dra(s, CTX), [])   # a step may catch PreBind in flight: settled only

    def test_allocated_unreserved(self):
        s = dra_base()
        s["claims"].append(claim("held", "pa-1", ["gpu-5"]))
        f = self.assertRule(s, "dra-pending-claim")
        self.assertIn("claim default/held", " ".join(f))

    def test_queue_limit_counts_dra_devices(self):
        # queue a (limit 4) holds fa + fb (1 GPU) and d0, d1 (a device each): 3; three more
        # devices on pa-1 make 6 > 4, though no pod asks nvidia.com/gpu
        s = dra_base()
        self.assertEqual(self.all(s), [])
        for i in range(3):
            p = with_claim(pod("e%d" % i, "pa", nodeName="pa-1", queue="a"), "e%d-gpu" % i)
            s["pods"].append(p)
            s["claims"].append(claim("e%d-gpu" % i, "pa-1", ["gpu-%d" % (i + 1)], [p]))
            s["dra_stable"].append(p["metadata"]["uid"])
        for c in s["claims"]:
            c["spec"] = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}
        f = self.assertRule(s, "queue-limit")
        self.assertIn("queue a pool pa", " ".join(f))
        # a class Queues do not count as GPUs: within the limit
        for c in s["claims"]:
            c["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "nic.example.com"
        self.assertNotIn("queue-limit", rules(self.all(s)))

    def test_home_vs_borrower_skips_claims(self):
        # a home pod asking a DRA device is not judged by home-vs-borrower (no devices counted)
        s = base()
        s["nodes"] = [node("pb-0", "pb")]
        s["pods"] = [pod("bor", "pa", gpu=4, nodeName="pb-0", queue="other")]
        home = pod("home", "pb", gpu=2, queue="other", cond="0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")
        s["pods"].append(home)
        s["events"] = [event(home, "FailedScheduling", "x")]
        self.assertIn("home-vs-borrower", rules(self.all(s)))
        with_claim(home, "home-gpu")
        self.assertNotIn("home-vs-borrower", rules(self.all(s)))


if __name__ == "__main__":
    unittest.main(verbosity=1)
