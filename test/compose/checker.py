#!/usr/bin/env python3
"""Composition suite: an independent checker of ai-scheduler's documented invariants.

Written from README.md, docs/design.md and docs/gpu-sharing.md, not from pkg/: it
imports nothing of the scheduler and recomputes everything from API objects.

Input: a snapshot (dict) of what the API server holds at one moment:
  {"nodes": [...], "pods": [...], "pools": [...], "queues": [...], "podgroups": [...],
   "pdbs": [...], "events": [...]}
and a context: {"seed", "step" (a label such as "3 gang g1" or "final"),
  "harness_deleted": {"ns/name/uid": why} (deleted by the fake kubelet or a drain),
  "disrupted_gangs": set of "ns/name" (a member deleted by the harness),
  "seen": {uid: pod} (every pod version run.py ever saw, for evicted pods' labels)}.

WHEN each rule is checked
  After every step (check_step), on any snapshot; these must hold at every instant:
    overcommit     no node over allocatable in cpu, memory, nvidia.com/gpu or pods, summing
                   the requests of every pod bound to it that is not Succeeded/Failed
                   (terminating pods included), reservation pods included: as kubelet counts
    gpu-slot       every bound GPU-fraction pod carries resource.aibee.cn/gpu-index; each
                   slot index < the node's GPUs; the fractions on one (node, slot) sum to
                   <= 1; each used slot has a live, trusted reservation pod for that slot on
                   that node (docs/gpu-sharing.md: created before the first fraction binds)
    queue-limit    per pool (the pool of the node a pod holds), no queue or ancestor holds
                   more gpu than its limit (spec.pools[pool] overrides spec.resources);
                   fractions charged their fraction, reservation pods nothing, a pod with
                   DRA claims also the devices allocated to them of a class Queues count as
                   GPUs (DRA_GPU_CLASSES)
    np-quota       per pool, a leaf queue's non-preemptible pods (priority >= 100 or
                   resource.aibee.cn/preemptible "false") hold no more gpu than its quota,
                   where one is set. Only the leaf is checked: the docs say "its queue's quota".
  DRA (issue 36; snapshots with "claims", run.py), after every step (check_dra):
    dra-device-once  every device (driver/pool/device) is in at most one claim's
                   status.allocation (adminAccess results excepted): "devices already
                   allocated to any claim are in use"
    dra-bound-claim  a bound, non-terminal pod's claims (resourceClaimName, or a template's
                   claim named in status.resourceClaimStatuses) exist, are allocated, their
                   allocation's nodeSelector names the pod's node, and reservedFor holds the
                   pod's uid: the scheduler writes all of that in PreBind, before the
                   Binding, so a bound pod with an unallocated claim is a fault. Judged only
                   for pods unchanged between the two pod lists around the claims' list
                   (snapshot "dra_stable"), so the pod was in that state when the claims
                   were read
    dra-reserved-gone  an allocated claim's reservedFor names only pods that exist and are
                   not done, DRA_GONE_GRACE_S after the pod watch first saw them deleted or
                   terminal (ctx "pod_done_at"; the fake claim controller's round)
  DRA, only once the cluster has settled (check_dra_settled):
    dra-pending-claim  no pending pod's claim is reserved for it, and no claim is
                   allocated without a reservation (devices of a pod that was not bound,
                   say a gang that did not fit, stay held: PreBind's failure must undo its
                   writes, and the controller deallocates only when the last reservation goes)
  On the event history (check_history), after every step:
    borrower-evicts-home  no borrower (a pod on a node outside its home pool) evicts a home
                   pod of the pool lending it the node (design.md "Ranks", README: borrowing
                   takes idle nodes; a borrower ranks below every home pod)
    pdb            no pod covered by a PDB with status.disruptionsAllowed 0 was evicted
                   (Preempted event)
    min-runtime    no victim was evicted (Preempted event) younger than its minimum runtime
                   (README, docs/operations.md "Minimum runtime"): reclaimMinRuntime when the
                   preemptor is in another queue or the victim borrowed the node from its
                   pool, else preemptMinRuntime; the victim's leaf Queue's field, else the
                   nearest ancestor's that sets it, else its home Pool's; the pod's annotation
                   may only lower it. Age: the event's time less the victim's
                   status.startTime (both to the second: one second of slack); a gang's age
                   is its last member's start, so a member's own start is a lower bound and
                   the check stays sound
    checkpoint     a victim with a checkpoint grace (its annotation, else its queue's
                   checkpointGrace) was asked to checkpoint before it was evicted: the fake
                   kubelet saw resource.aibee.cn/preemption-requested on it (ckpt_requested)
    pending-victim no pod that was never bound was evicted (a Preempted event for it): the
                   Eviction API deletes a pending pod at once, so a nominated preemptor or a
                   pod waiting its turn is lost (issue 35, fault 1). "Never bound" is what
                   run.py's pod watch saw of that uid from its creation to its deletion
                   (ctx "watched" and "ever_bound"); a uid the watch missed is not judged
    ping-pong      no workload (pod name; run.py recreates some evicted pods under the same
                   name, as a controller would) evicted twice for the same preemptor, and no
                   two workloads each evicted for the other; the preemptor's incarnation is the one
                   that existed when the event was first written
  Only once the cluster has settled (check_settled: no pod terminating, bindings unchanged
  for several seconds, the kubelet frozen), because each needs the scheduler's retries to
  have happened:
    gang-min       no PodGroup with bound members has fewer than minMember bound + Succeeded
                   (gangs the harness itself broke by a drain are exempt)
    home-vs-borrower  a pending home pod of pool P does not wait while borrowers occupy a
                   node of P where it would fit without them (borrowers rank below every
                   home pod: design.md "Ranks"). Checked for lone pods that ask whole GPUs or
                   no GPU, may preempt (not preemptionPolicy Never, pool preemption on), pass
                   their queue's admission (limit, and quota when non-preemptible) in P, and
                   are not held by the gang backfill rule ("waiting behind pod group"), and
                   ask no DRA claim (the rule counts no devices);
                   borrowers covered by a PDB with disruptionsAllowed 0 are not counted as
                   removable, nor are fraction borrowers (their GPU is shared).
    nomination     no pending pod still carries status.nominatedNodeName (its victims are
                   gone by then: it should be bound or the nomination dropped)
    reason         every pending pod of ours has PodScheduled=False with a message and a
                   FailedScheduling event; a "queue "q" limit: gpu A + B > L" reason is
                   current only if q + B is still over L in some pool; a "waiting behind pod
                   group ns/g" reason only while g exists with pending members.
  Once at the end, over run.py's pod watch timeline (every version with its arrival
  time, node additions, scheduler restarts) and its samples of the decision records
  (see each function's docstring for the exact rule):
    flush-wait     no pod waits for the unschedulable flush when an event freed room it
                   fits: a lone home-pool pod whose last reason was only "Insufficient ..."
                   binds within FLUSH_WAIT_BOUND_S of the latest event that freed room on
                   its node (check_flush_wait; the delays' max and p50 go to the summary)
    nomination-restart  a pod nominated before a scheduler restart does not lose the room
                   to a lower-priority pod after it (check_restart_nominations)
    queue-age      a pending pod's decision record's attempts never decrease within one
                   scheduler instance: its queue item is never replaced (check_queue_age)
NOT CHECKED (cannot be checked faithfully from API objects):
  - which physical GPU a whole-GPU pod holds versus a shared slot (no device ids on the
    objects); kubelet-level GPU counting (rule overcommit) is what is checkable;
  - gpu-memory shares (the generator makes none), cpu/memory queue quotas (none set);
  - whether an arbitrary "0/N nodes are available: ..." reason is still true;
  - gang members for home-vs-borrower (a gang needs its whole minimum, topology, backfill).
"""
import json
import re
import sys

POOL_ANN = "resource.aibee.cn/pool"
PREEMPT_MIN_ANN = "resource.aibee.cn/preempt-min-runtime"
RECLAIM_MIN_ANN = "resource.aibee.cn/reclaim-min-runtime"
CKPT_GRACE_ANN = "resource.aibee.cn/checkpoint-grace"
QUEUE_LABELS = ("resource.aibee.cn/queue", "kai.scheduler/queue")
PG_LABEL = "scheduling.x-k8s.io/pod-group"
GPU = "nvidia.com/gpu"
RES_NS = "ai-scheduler-system"
SCHED = "ai-scheduler"
NP_PRIORITY = 100
MICRO = 1000000

_SUFFIX = {"": 1, "m": 0.001, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3, "Ti": 1024 ** 4, "Pi": 1024 ** 5, "Ei": 1024 ** 6}


def qty(s):
    """A Kubernetes quantity as a float (cpu in cores)."""
    if s is None:
        return 0.0
    if isinstance(s, (int, float)):
        return float(s)
    m = re.match(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$", str(s).strip())
    if not m or m.group(2) not in _SUFFIX:
        raise ValueError("bad quantity %r" % s)
    return float(m.group(1)) * _SUFFIX[m.group(2)]


def key(o):
    m = o["metadata"]
    return "%s/%s" % (m["namespace"], m["name"]) if m.get("namespace") else m["name"]


def requests(pod, res):
    spec = pod.get("spec", {})
    c = sum(qty(((x.get("resources") or {}).get("requests") or {}).get(res)) for x in spec.get("containers", []))
    i = max([qty(((x.get("resources") or {}).get("requests") or {}).get(res)) for x in spec.get("initContainers") or []] or [0])
    return max(c, i) + qty((spec.get("overhead") or {}).get(res))


def node_of(p):
    return (p.get("spec") or {}).get("nodeName") or ""


def terminal(p):
    return (p.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def holds_node(p):
    """Counts on its node as kubelet counts: bound and not terminal (terminating included)."""
    return bool(node_of(p)) and not terminal(p)


def is_ours(p):
    return (p.get("spec") or {}).get("schedulerName") == SCHED


def is_reservation(p):
    """docs/gpu-sharing.md: all of namespace, name prefix, both labels, node annotation."""
    m = p["metadata"]
    lab, ann = m.get("labels") or {}, m.get("annotations") or {}
    return (m.get("namespace") == RES_NS and m["name"].startswith("gpu-res-")
            and lab.get("resource.aibee.cn/gpu-reservation") == "true"
            and lab.get("app.kubernetes.io/managed-by") == SCHED
            and ann.get("resource.aibee.cn/gpu-reservation-node") == node_of(p) and node_of(p) != "")


def fraction(p):
    f = (p["metadata"].get("annotations") or {}).get("gpu-fraction")
    return round(float(f) * MICRO) if f else 0


def pdevices(p):
    return int((p["metadata"].get("annotations") or {}).get("gpu-fraction-num-devices") or 1)


def priority(p):
    return (p.get("spec") or {}).get("priority") or 0


def non_preemptible(p):
    return priority(p) >= NP_PRIORITY or (p["metadata"].get("labels") or {}).get("resource.aibee.cn/preemptible") == "false"


def pending(p):
    return is_ours(p) and not node_of(p) and not terminal(p) and not p["metadata"].get("deletionTimestamp")


def label_match(sel, labels):
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and labels.get(k) in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


class View:
    """Derived facts of one snapshot."""

    def __init__(self, snap):
        self.snap = snap
        self.nodes = {n["metadata"]["name"]: n for n in snap.get("nodes", [])}
        self.pods = snap.get("pods", [])
        self.pools = {p["metadata"]["name"]: p for p in snap.get("pools", [])}
        # design.md "Pools": a node is in the one pool whose (non-empty) selector matches it;
        # none or several: default
        self.node_pool = {}
        for name, n in self.nodes.items():
            labels = n["metadata"].get("labels") or {}
            hits = [pn for pn, p in self.pools.items() if pn != "default"
                    and (((p.get("spec") or {}).get("nodeSelector") or {}).get("matchLabels")
                         or ((p.get("spec") or {}).get("nodeSelector") or {}).get("matchExpressions"))
                    and label_match((p.get("spec") or {}).get("nodeSelector") or {}, labels)]
            self.node_pool[name] = hits[0] if len(hits) == 1 else "default"
        self.queues = {q["metadata"]["name"]: q for q in snap.get("queues", [])}
        self.pgs = {key(g): g for g in snap.get("podgroups", [])}
        self.pdbs = snap.get("pdbs", [])
        self.claims = _claims_by_name(snap)

    def home(self, p):
        h = (p["metadata"].get("annotations") or {}).get(POOL_ANN) or ""
        return h if h in self.pools and h != "default" else "default"

    def queue_of(self, p):
        lab = p["metadata"].get("labels") or {}
        name = next((lab[k] for k in QUEUE_LABELS if lab.get(k)), "")
        if not name:
            g = self.pgs.get("%s/%s" % (p["metadata"]["namespace"], lab.get(PG_LABEL, "")))
            if g:
                glab = g["metadata"].get("labels") or {}
                name = next((glab[k] for k in QUEUE_LABELS if glab.get(k)), "")
        if name in self.queues and not self.children(name):
            return name
        return "default"

    def children(self, q):
        return [n for n, o in self.queues.items() if (o.get("spec") or {}).get("parentQueue") == q]

    def ancestors(self, q):
        out, seen = [], set()
        while q in self.queues and q not in seen:
            seen.add(q)
            out.append(q)
            q = (self.queues[q].get("spec") or {}).get("parentQueue") or ""
        return out or [q]

    def qfield(self, q, pool, field):
        """gpu quota/limit of queue q in pool (spec.pools overrides); None when not set."""
        spec = (self.queues.get(q) or {}).get("spec") or {}
        v = (((spec.get("pools") or {}).get(pool) or {}).get("resources") or {}).get("gpu", {}).get(field)
        if v is None:
            v = ((spec.get("resources") or {}).get("gpu") or {}).get(field)
        if v is None or v < 0:
            return None
        return round(v * MICRO)

    def gpu_charge(self, p):
        """What a queue is charged, in millionths of a GPU."""
        if is_reservation(p):
            return 0
        f = fraction(p)
        if f:
            return f * pdevices(p)
        return round((requests(p, GPU) + self.dra_gpus(p)) * MICRO)

    def dra_gpus(self, p):
        """The devices of p's allocated claims whose class Queues count as GPUs
        (DRA_GPU_CLASSES; a shared claim counts for each pod): design.md, DRA "With the
        rest". A claim not allocated (yet) counts nothing."""
        n = 0
        ns = p["metadata"].get("namespace", "")
        for cn in claim_refs(p).values():
            c = self.claims.get("%s/%s" % (ns, cn)) if cn else None
            if not c:
                continue
            cls = {}
            for r in ((c.get("spec") or {}).get("devices") or {}).get("requests") or []:
                cls[r.get("name")] = (r.get("exactly") or {}).get("deviceClassName")
                for sub in r.get("firstAvailable") or []:
                    cls["%s/%s" % (r.get("name"), sub.get("name"))] = sub.get("deviceClassName")
            for r in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []:
                if cls.get(r.get("request")) in DRA_GPU_CLASSES:
                    n += 1
        return n

    def usage(self):
        """{(queue, pool): micro-GPUs} over every leaf's ancestors, and the leaf's
        non-preemptible part {(leaf, pool): micro}."""
        use, np_use = {}, {}
        for p in self.pods:
            if not holds_node(p) or is_reservation(p) or node_of(p) not in self.nodes:
                continue
            pool = self.node_pool[node_of(p)]
            q = self.queue_of(p)
            c = self.gpu_charge(p)
            for a in self.ancestors(q):
                use[(a, pool)] = use.get((a, pool), 0) + c
            if non_preemptible(p):
                np_use[(q, pool)] = np_use.get((q, pool), 0) + c
        return use, np_use

    def pdb_blocks(self, p, pods_labels=None):
        labels = pods_labels if pods_labels is not None else (p["metadata"].get("labels") or {})
        for d in self.pdbs:
            if d["metadata"].get("namespace") != p["metadata"].get("namespace"):
                continue
            sel = (d.get("spec") or {}).get("selector")
            if sel and label_match(sel, labels) and ((d.get("status") or {}).get("disruptionsAllowed") or 0) <= 0:
                return key(d)
        return ""


def fmt(ctx, rule, objs, detail):
    return "SEED %s step %s: RULE %s: %s: %s" % (ctx.get("seed", "?"), ctx.get("step", "?"), rule, objs, detail)


def gb(micro):
    return ("%.6f" % (micro / MICRO)).rstrip("0").rstrip(".")


# ---------------------------------------------------------------------------
# after every step

def check_step(snap, ctx):
    v = View(snap)
    out = []
    # overcommit (kubelet's count)
    for name, n in v.nodes.items():
        alloc = (n.get("status") or {}).get("allocatable") or {}
        mine = [p for p in v.pods if node_of(p) == name and holds_node(p)]
        for res in ("cpu", "memory", GPU):
            used = sum(requests(p, res) for p in mine)
            if used > qty(alloc.get(res)) + 1e-9:
                out.append(fmt(ctx, "overcommit", "node " + name, "%s requested %g > allocatable %s by %s" % (
                    res, used, alloc.get(res), ", ".join(key(p) for p in mine if requests(p, res)))))
        if len(mine) > qty(alloc.get("pods")):
            out.append(fmt(ctx, "overcommit", "node " + name, "%d pods > allocatable %s" % (len(mine), alloc.get("pods"))))
    # gpu-slot
    slots = {}
    for p in v.pods:
        if not holds_node(p) or not fraction(p) or not is_ours(p):
            continue
        idx = (p["metadata"].get("annotations") or {}).get("resource.aibee.cn/gpu-index")
        if not idx:
            out.append(fmt(ctx, "gpu-slot", key(p), "bound GPU fraction on %s without resource.aibee.cn/gpu-index" % node_of(p)))
            continue
        ngpu = qty((((v.nodes.get(node_of(p)) or {}).get("status") or {}).get("allocatable") or {}).get(GPU))
        for s in idx.split(","):
            s = int(s)
            if s < 0 or s >= ngpu:
                out.append(fmt(ctx, "gpu-slot", key(p), "slot %d outside node %s's %g GPUs" % (s, node_of(p), ngpu)))
            slots.setdefault((node_of(p), s), []).append(p)
    live_res = {}
    for p in v.pods:
        if is_reservation(p) and holds_node(p) and not p["metadata"].get("deletionTimestamp"):
            idx = (p["metadata"].get("annotations") or {}).get("resource.aibee.cn/gpu-index", "")
            live_res.setdefault((node_of(p), idx), []).append(key(p))
    for (node, s), ps in sorted(slots.items()):
        tot = sum(fraction(p) for p in ps)
        if tot > MICRO:
            out.append(fmt(ctx, "gpu-slot", "node %s slot %d" % (node, s), "fractions sum to %s > 1: %s" % (
                gb(tot), ", ".join("%s=%s" % (key(p), gb(fraction(p))) for p in ps))))
        if not live_res.get((node, str(s))):
            out.append(fmt(ctx, "gpu-slot", "node %s slot %d" % (node, s), "used by %s but no live reservation pod holds it" % (
                ", ".join(key(p) for p in ps))))
    # queue-limit and np-quota
    use, np_use = v.usage()
    for (q, pool), u in sorted(use.items()):
        lim = v.qfield(q, pool, "limit")
        if lim is not None and u > lim:
            out.append(fmt(ctx, "queue-limit", "queue %s pool %s" % (q, pool), "holds gpu %s > limit %s" % (gb(u), gb(lim))))
    for (q, pool), u in sorted(np_use.items()):
        quota = v.qfield(q, pool, "quota")
        if quota is not None and u > quota:
            out.append(fmt(ctx, "np-quota", "queue %s pool %s" % (q, pool),
                           "non-preemptible pods hold gpu %s > quota %s" % (gb(u), gb(quota))))
    return out + check_dra(snap, ctx)


PREEMPTED_RE = re.compile(r"^Preempted by (\S+) on node (\S+)")


def evictions(snap):
    """[(victim ns/name, victim uid, preemptor ns/name, node)] from Preempted events."""
    out = []
    for e in snap.get("events", []):
        if e.get("reason") != "Preempted":
            continue
        m = PREEMPTED_RE.match(e.get("message") or e.get("note") or "")
        if not m:
            continue
        io = e.get("involvedObject") or e.get("regarding") or {}
        out.append(("%s/%s" % (io.get("namespace", ""), io.get("name", "")), io.get("uid", ""), m.group(1), m.group(2)))
    return out


_DUR = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def duration(v):
    """Seconds of a duration such as "10m", "1m30s" or "90"; -1 for "-1" (never);
    None when unset or malformed."""
    if v is None or v == "":
        return None
    v = str(v)
    if v == "-1":
        return -1
    if v.isdigit():
        return float(v)
    parts = _DUR.findall(v)
    if not parts or "".join(a + b for a, b in parts) != v:
        return None
    return sum(float(a) * _UNIT[b] for a, b in parts)


def rfc_seconds(t):
    """Seconds since the epoch of "2026-01-01T00:01:00Z" (fraction dropped); None if not one."""
    m = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)", t or "")
    if not m:
        return None
    import calendar
    y, mo, d, h, mi, se = (int(x) for x in m.groups())
    return calendar.timegm((y, mo, d, h, mi, se, 0, 0, 0))


def min_runtime(v, p, kind):
    """The minimum runtime (seconds, -1 never, 0 none) of running pod p as a victim of
    kind "preempt" or "reclaim": queue tree, then home pool, lowered by the pod's ask."""
    field = kind + "MinRuntime"
    got = None
    for q in v.ancestors(v.queue_of(p)):
        got = duration(((v.queues.get(q) or {}).get("spec") or {}).get(field))
        if got is not None:
            break
    if got is None:
        got = duration(((v.pools.get(v.home(p)) or {}).get("spec") or {}).get(field)) or 0
    ask = duration((p["metadata"].get("annotations") or {}).get(PREEMPT_MIN_ANN if kind == "preempt" else RECLAIM_MIN_ANN))
    if ask is not None and ask >= 0 and (got < 0 or ask < got):
        got = ask
    return got


def checkpoint_grace(v, p):
    """Seconds of p's checkpoint grace: its annotation, else its queue tree's; 0 none."""
    own = duration((p["metadata"].get("annotations") or {}).get(CKPT_GRACE_ANN))
    if own is not None:
        return max(own, 0)
    for q in v.ancestors(v.queue_of(p)):
        got = duration(((v.queues.get(q) or {}).get("spec") or {}).get("checkpointGrace"))
        if got is not None:
            return max(got, 0)
    return 0


def check_lifecycle(v, ctx, victim, old, pre, node, when):
    """min-runtime and checkpoint for one eviction (seen versions of victim and preemptor)."""
    out = []
    lender = v.node_pool.get(node) or _pool_from_seen_node(ctx, node)
    kind = "reclaim" if (lender and v.home(old) != lender) or (pre is not None and v.queue_of(pre) != v.queue_of(old)) \
        else "preempt"
    need = min_runtime(v, old, kind)
    start, at = rfc_seconds((old.get("status") or {}).get("startTime")), rfc_seconds(when)
    if need and start is not None and at is not None and (need < 0 or at - start + 1 < need):
        out.append(fmt(ctx, "min-runtime", victim, "evicted %ss after its start, under its %sMinRuntime of %s" % (
            at - start, kind, "never" if need < 0 else "%gs" % need)))
    if checkpoint_grace(v, old) > 0 and old["metadata"]["uid"] not in (ctx.get("ckpt_requested") or {}):
        out.append(fmt(ctx, "checkpoint", victim, "evicted with a checkpoint grace of %gs but never asked to checkpoint" %
                       checkpoint_grace(v, old)))
    return out


def _incarnation(seen, name, when):
    """The uid of pod ns/name that existed at time `when` (RFC 3339): the newest one
    created at or before it (run.py recreates some pods under the same name)."""
    best = None
    for uid, p in seen.items():
        if key(p) == name and p["metadata"].get("creationTimestamp", "") <= when:
            if best is None or p["metadata"]["creationTimestamp"] >= best[0]:
                best = (p["metadata"]["creationTimestamp"], uid)
    return best[1] if best else name


def check_history(snap, ctx):
    v = View(snap)
    seen = ctx.get("seen") or {}
    out = []
    per = {}
    for e in snap.get("events", []):
        if e.get("reason") != "Preempted":
            continue
        m = PREEMPTED_RE.match(e.get("message") or e.get("note") or "")
        if not m:
            continue
        io = e.get("involvedObject") or e.get("regarding") or {}
        victim, uid, by, node = "%s/%s" % (io.get("namespace", ""), io.get("name", "")), io.get("uid", ""), m.group(1), m.group(2)
        when = e.get("firstTimestamp") or e.get("eventTime") or e.get("lastTimestamp") or ""
        by_uid = _incarnation(seen, by, when)
        per.setdefault((victim, by, by_uid), set()).add(uid)
        old = seen.get(uid)
        if old is not None:
            blk = v.pdb_blocks(old)
            if blk:
                out.append(fmt(ctx, "pdb", victim, "evicted for %s on %s although PDB %s allows no disruption" % (by, node, blk)))
        # design.md "Ranks": a borrower ranks below every home pod; README: it borrows idle
        # nodes. A borrower never evicts a home pod of the pool that lends it the node.
        pre = seen.get(by_uid)
        if old is not None:
            out += check_lifecycle(v, ctx, victim, old, pre, node, when)
        if uid in (ctx.get("watched") or ()) and uid not in (ctx.get("ever_bound") or ()):
            out.append(fmt(ctx, "pending-victim", victim, "evicted for %s on %s but never bound (%s)" % (
                by, node, e.get("message"))))
        lender = v.node_pool.get(node) or _pool_from_seen_node(ctx, node)
        if pre is not None and old is not None and lender and v.home(pre) != lender and v.home(old) == lender:
            out.append(fmt(ctx, "borrower-evicts-home", victim,
                           "home pod of pool %s evicted on %s for %s, a borrower from pool %s (%s)" % (
                               lender, node, by, v.home(pre), e.get("message"))))
    for (victim, by, _), uids in sorted(per.items()):
        if len(uids) > 1:
            out.append(fmt(ctx, "ping-pong", victim, "evicted %d times for the same demand (one incarnation of %s)" % (len(uids), by)))
    pairs = {(a, b) for (a, b, _) in per}
    for (victim, by) in sorted(pairs):
        if victim < by and (by, victim) in pairs:
            out.append(fmt(ctx, "ping-pong", "%s <-> %s" % (victim, by), "each was evicted for the other"))
    return out


def eviction_stats(snap, seen):
    """(evictions, of pods that ran under a minute, the most evictions of one workload)
    over the Preempted events: the contention figures the issue asks to keep near zero."""
    short, per = 0, {}
    evs = evictions(snap)
    when = {}
    for e in snap.get("events", []):
        io = e.get("involvedObject") or e.get("regarding") or {}
        if e.get("reason") == "Preempted":
            when[io.get("uid", "")] = e.get("firstTimestamp") or e.get("eventTime") or e.get("lastTimestamp") or ""
    for victim, uid, _, _ in evs:
        per[victim] = per.get(victim, 0) + 1
        start = rfc_seconds(((seen.get(uid) or {}).get("status") or {}).get("startTime"))
        at = rfc_seconds(when.get(uid))
        if start is not None and at is not None and at - start < 60:
            short += 1
    return len(evs), short, max(per.values() or [0])


# ---------------------------------------------------------------------------
# on the pod watch's timeline (run.py's PodWatch): every version of every pod with the
# time it arrived, so what happened between two snapshots can be judged.
#
# A timeline is a list of entries in arrival order:
#   (t, "ADDED" | "MODIFIED" | "DELETED" | "LIST", pod)   a version (LIST: re-listed after
#                                                         the stream was cut, when unknown)
#   (t, "RELIST", None)     the stream was cut and re-listed: what happened meanwhile is
#                           known only as its end state
#   (t, "NODE_ADDED", name) the harness added node `name`
#   (t, "RESTART", (t_stop, t_up))  the harness stopped the scheduler at t_stop and the new
#                           one had synced its caches at t_up (= t)

# The scheduler's unschedulable flush (pkg/queue: unschedulable_max_ms 60000).
FLUSH_S = 60
# A bind later than this after the event that freed its room fails flush-wait: above
# the queue's longest backoff (10 s) plus a loaded machine's cycle and the watch's lag,
# at half the flush: a pod that sat out the flush binds 0-60 s after the event, so a lost
# wake-up shows above this bound half the time, and a woken pod never does.
FLUSH_WAIT_BOUND_S = 30
FIT_PART = re.compile(r"^\d+ (Insufficient \S+|node\(s\) had no free GPU to share)$")
AVAILABLE_RE = re.compile(r"^0/\d+ nodes are available: ([^.;]*)[.;]")


def _cond_msg(p):
    """(message, lastTransitionTime) of an unschedulable PodScheduled condition: the
    scheduler rewrites it with a new time when the message changes and every 10th
    attempt; ("", "") when none."""
    c = _cond(p)
    if not c or c.get("status") != "False":
        return "", ""
    return c.get("message") or "", c.get("lastTransitionTime") or ""


def only_resources(msg):
    """Whether a PodScheduled message says no more than "not enough room": every part of
    its "0/N nodes are available: ..." list is an Insufficient resource (or no free GPU to
    share). Queue limits and quotas, a gang's backfill rule ("waiting behind"), taints,
    topology, a node's pool: all say something else and are not judged."""
    m = AVAILABLE_RE.match(msg or "")
    return bool(m) and all(FIT_PART.match(x.strip()) for x in m.group(1).split(","))


def _holds(p, node):
    return p is not None and node_of(p) == node and not terminal(p)


def flush_waits(timeline, node_pools):
    """For each pod judged by rule flush-wait: (delay s, pod ns/name, node, what freed the
    room), see check_flush_wait. Also used for the run's summary (max, p50)."""
    last = {}          # uid -> latest version
    freed = {}         # node -> (t, what): the latest event that freed room on it
    relist_at = []     # times the watch re-listed
    restarted = None   # when the scheduler last came up: every pod is tried afresh
    msg_since = {}     # uid -> ((message, its time), when the watch first saw that pair)
    out = []
    for t, kind, obj in timeline:
        if kind == "RELIST":
            relist_at.append(t)
            continue
        if kind == "NODE_ADDED":
            freed[obj] = (t, "node %s added" % obj)
            continue
        if kind == "RESTART":
            restarted = (t, "the scheduler restarted")
            continue
        uid = obj["metadata"]["uid"]
        prev = last.get(uid)
        # room freed on a node: a pod holding it goes (deleted or terminal), or a
        # nomination to it goes without the nominee binding there
        if prev is not None:
            pn = node_of(prev)
            if _holds(prev, pn) and (kind == "DELETED" or terminal(obj)):
                freed[pn] = (t, "%s %s" % (key(obj), "deleted" if kind == "DELETED" else "ended"))
            nom = (prev.get("status") or {}).get("nominatedNodeName")
            if nom and not node_of(prev) and (kind == "DELETED" or (
                    (obj.get("status") or {}).get("nominatedNodeName") != nom and node_of(obj) != nom)):
                freed[nom] = (t, "%s's nomination dropped" % key(obj))
        if kind == "DELETED":
            last.pop(uid, None)
            continue
        last[uid] = obj
        msg = _cond_msg(obj)
        if not node_of(obj):
            if msg[0] and (uid not in msg_since or msg_since[uid][0] != msg):
                msg_since[uid] = (msg, t)
            continue
        if prev is None or node_of(prev) or kind == "LIST" or not is_ours(obj):
            continue   # not a bind seen as it happened
        # obj: the bind of a pending pod, seen at t
        n = node_of(obj)
        if (obj["metadata"].get("labels") or {}).get(PG_LABEL) or uid not in msg_since:
            continue
        home = (obj["metadata"].get("annotations") or {}).get(POOL_ANN) or ""
        if node_pools.get(n) != home:
            continue   # a borrower: the lender's rules, not room, may have held it
        (m, _), since = msg_since[uid]
        f = freed.get(n)
        if f is not None and restarted is not None and restarted[0] > f[0]:
            f = restarted
        if not only_resources(m) or f is None or since > f[0]:
            continue   # blocked by something else, or decided again after the room freed
        created = rfc_seconds(obj["metadata"].get("creationTimestamp"))
        if created is not None and created > f[0]:
            continue   # it did not exist yet
        if any(f[0] < r <= t for r in relist_at):
            continue   # the watch was cut meanwhile: an event may be missing
        out.append((t - f[0], key(obj), n, f[1]))
    return out


def check_flush_wait(timeline, ctx):
    """flush-wait: no pod waits for the unschedulable flush when an event freed room it
    fits (issue 35, faults 5 and 6). For each pod of ours bound as the watch saw it
    happen, on a node of its home pool, that is not a PodGroup member and whose last
    PodScheduled message before the bind says only that room was short (only_resources)
    and was written (last, with its time) before the room freed: the delay is the bind's time less the
    time of the latest event on that node that freed room before it (a pod holding it
    deleted or ended, a nomination to it dropped, the node added, the scheduler
    restarted), both as the watch saw them. Nothing in between freed room on that node,
    so that event made the room the pod got; a woken pod is tried within its backoff (at
    most 10 s). A delay above FLUSH_WAIT_BOUND_S fails. Not judged: pods created after the
    event, pods whose blocker changed (a new message after the event), binds the watch
    saw only in a re-list, and any span in which the watch was cut."""
    out = []
    for d, pod, node, what in flush_waits(timeline, ctx.get("node_pools") or {}):
        if d > FLUSH_WAIT_BOUND_S:
            out.append(fmt(ctx, "flush-wait", pod, "bound on %s %.0fs after room freed there (%s), over %ss "
                           "(the flush is %ss): a wake-up was lost" % (node, d, what, FLUSH_WAIT_BOUND_S, FLUSH_S)))
    return out


def flush_wait_stats(timeline, node_pools):
    """(pods judged, max delay, median delay) of flush_waits, seconds."""
    ds = sorted(d for d, _, _, _ in flush_waits(timeline, node_pools))
    if not ds:
        return 0, 0.0, 0.0
    return len(ds), ds[-1], ds[len(ds) // 2]


def _fits_on(req, alloc, holders):
    for r in ("cpu", "memory", GPU):
        if req[r] + sum(requests(x, r) for x in holders) > qty(alloc.get(r)) + 1e-9:
            return False
    return 1 + len(holders) <= qty(alloc.get("pods") or 110)


def check_restart_nominations(timeline, ctx, settle=3.0):
    """nomination-restart: a nomination survives a scheduler restart (issue 35, fault
    3). For each restart (the scheduler stopped at t_stop) and each pending pod P of ours
    whose last version before t_stop carried status.nominatedNodeName N: no pod L of ours
    of lower priority binds on N (a bind the watch saw happen, after t_stop) while P is
    pending, not being deleted, and still nominated to N, at L's bind and `settle`
    seconds after it (the field lags the scheduler's own drop of a nomination), where P
    would fit on N beside the pods that hold it and are not being deleted (its victims
    leave) but not once L is there too. Allocatable from ctx "node_alloc"; requests as
    kubelet counts them (a fraction's GPU share is not counted: it can only hide a
    violation, never make one)."""
    out = []
    alloc = ctx.get("node_alloc") or {}
    restarts = [obj for _, kind, obj in timeline if kind == "RESTART"]
    for t_stop, t_up in restarts:
        state = {}
        for t, kind, obj in timeline:
            if t >= t_stop:
                break
            if kind in ("ADDED", "MODIFIED", "LIST"):
                state[obj["metadata"]["uid"]] = obj
            elif kind == "DELETED":
                state.pop(obj["metadata"]["uid"], None)
        noms = {u: (p.get("status") or {}).get("nominatedNodeName") for u, p in state.items()
                if pending(p) and (p.get("status") or {}).get("nominatedNodeName")}
        if not noms:
            continue
        cur = dict(state)
        for i, (t, kind, obj) in enumerate(timeline):
            if t < t_stop or kind not in ("ADDED", "MODIFIED", "DELETED", "LIST"):
                continue
            uid = obj["metadata"]["uid"]
            prev = cur.get(uid)
            if kind == "DELETED":
                cur.pop(uid, None)
                continue
            cur[uid] = obj
            n = node_of(obj)
            if kind == "LIST" or not n or (prev is not None and node_of(prev)) or not is_ours(obj):
                continue
            for pu, nn in noms.items():
                p = cur.get(pu)
                if nn != n or p is None or pu == uid or not pending(p) or \
                        (p.get("status") or {}).get("nominatedNodeName") != n or priority(obj) >= priority(p):
                    continue
                if n not in alloc:
                    continue
                later = _version_at(timeline, pu, t + settle, i, p)
                if later is None or not pending(later) or (later.get("status") or {}).get("nominatedNodeName") != n:
                    continue
                holders = [x for u, x in cur.items() if u not in (uid, pu) and holds_node(x) and node_of(x) == n
                           and not x["metadata"].get("deletionTimestamp")]
                req = {r: requests(p, r) for r in ("cpu", "memory", GPU)}
                if _fits_on(req, alloc[n], holders) and not _fits_on(req, alloc[n], holders + [obj]):
                    out.append(fmt(ctx, "nomination-restart", key(p), "nominated to %s before the scheduler's restart "
                                   "(priority %d); %s (priority %d) bound there %.0fs after the restart while it was "
                                   "still pending there, and took the room it needs" % (
                                       n, priority(p), key(obj), priority(obj), t - t_up)))
    return out


def _version_at(timeline, uid, when, start, got):
    """The latest version of uid at time `when` (None when deleted by then), given `got`,
    its version at index start."""
    for t, kind, obj in timeline[start + 1:]:
        if t > when:
            break
        if kind in ("ADDED", "MODIFIED", "DELETED", "LIST") and obj["metadata"]["uid"] == uid:
            got = None if kind == "DELETED" else obj
    return got


def check_queue_age(samples, ctx):
    """queue-age: a pending pod's queue item is never replaced by a new one (issue 35,
    fault 4: the grouper's cache expiry took pods out and back, age 0 and attempts 0).
    What the scheduler shows of an item is its decision record's "attempts" (GET
    /debug/pods/NS/NAME: the item's failed attempts + 1), which only grows while the item
    lives. samples: {uid: [(t, instance, attempts, record time RFC 3339), ...]} in
    time order, taken by run.py while the pod (a lone pod: a gang's record follows its
    first member) was pending; instance counts scheduler starts (a restart starts
    every item afresh: compared within one). A record older than the pod's creation
    (the same name's previous incarnation, not forgotten yet) is skipped (same second:
    skipped too). Fails when attempts decrease between two samples of one instance."""
    out = []
    seen = ctx.get("seen") or {}
    for uid, ss in sorted(samples.items()):
        p = seen.get(uid)
        created = rfc_seconds(((p or {}).get("metadata") or {}).get("creationTimestamp"))
        last = None
        for t, inst, att, rtime in ss:
            rt = rfc_seconds(rtime)
            if created is not None and (rt is None or rt <= created):
                continue
            if last is not None and last[1] == inst and att < last[2]:
                out.append(fmt(ctx, "queue-age", key(p) if p else uid, "attempts went from %d (record of %s) to %d "
                               "(record of %s) while pending: its queue item was replaced" % (
                                   last[2], last[3], att, rtime)))
                break
            last = (t, inst, att, rtime)
    return out


def _pool_from_seen_node(ctx, node):
    return (ctx.get("node_pools") or {}).get(node, "")


# ---------------------------------------------------------------------------
# once settled

LIMIT_RE = re.compile(r'queue "([^"]+)" limit: gpu ([0-9.]+) \+ ([0-9.]+) > ([0-9.]+)')
BEHIND_RE = re.compile(r"waiting behind pod group (\S+?),")


def _fits(req, free):
    return all(req[r] <= free[r] + 1e-9 for r in req)


def check_settled(snap, ctx):
    v = View(snap)
    out = []
    disrupted = ctx.get("disrupted_gangs") or set()
    use, np_use = v.usage()
    # gang-min
    for gk, g in sorted(v.pgs.items()):
        ns = g["metadata"]["namespace"]
        mem = [p for p in v.pods if p["metadata"].get("namespace") == ns
               and (p["metadata"].get("labels") or {}).get(PG_LABEL) == g["metadata"]["name"]]
        bound = [p for p in mem if holds_node(p)]
        done = [p for p in mem if (p.get("status") or {}).get("phase") == "Succeeded"]
        minm = (g.get("spec") or {}).get("minMember") or 0
        if bound and len(bound) + len(done) < minm and gk not in disrupted:
            out.append(fmt(ctx, "gang-min", "podgroup " + gk, "%d bound + %d succeeded < minMember %d (bound: %s)" % (
                len(bound), len(done), minm, ", ".join("%s@%s" % (key(p), node_of(p)) for p in bound))))
    # home-vs-borrower (not for pods with DRA claims: the rule counts no devices)
    for p in v.pods:
        if not pending(p) or fraction(p) or (p["metadata"].get("labels") or {}).get(PG_LABEL):
            continue
        if (p.get("spec") or {}).get("resourceClaims"):
            continue
        if (p.get("spec") or {}).get("preemptionPolicy") == "Never":
            continue
        home = v.home(p)
        if home == "default" or ((v.pools[home].get("spec") or {}).get("disablePreemption")):
            continue
        cond = _cond(p)
        if cond and BEHIND_RE.search(cond.get("message") or ""):
            continue
        q = v.queue_of(p)
        c = v.gpu_charge(p)
        if any(v.qfield(a, home, "limit") is not None and use.get((a, home), 0) + c > v.qfield(a, home, "limit")
               for a in v.ancestors(q)):
            continue
        if non_preemptible(p) and v.qfield(q, home, "quota") is not None and \
                np_use.get((q, home), 0) + c > v.qfield(q, home, "quota"):
            continue
        req = {"cpu": requests(p, "cpu"), "memory": requests(p, "memory"), GPU: requests(p, GPU), "pods": 1}
        for name, n in sorted(v.nodes.items()):
            if v.node_pool[name] != home or (n.get("spec") or {}).get("unschedulable") or (n.get("spec") or {}).get("taints"):
                continue
            alloc = (n.get("status") or {}).get("allocatable") or {}
            mine = [x for x in v.pods if node_of(x) == name and holds_node(x)]
            free = {r: qty(alloc.get(r)) - sum(requests(x, r) for x in mine) for r in ("cpu", "memory", GPU)}
            free["pods"] = qty(alloc.get("pods")) - len(mine)
            if _fits(req, free):
                continue   # fits without reclaim: not this rule's business
            borrowers = [x for x in mine if not is_reservation(x) and is_ours(x) and v.home(x) != home
                         and not fraction(x) and not v.pdb_blocks(x)]
            if not borrowers:
                continue
            for x in borrowers:
                for r in ("cpu", "memory", GPU):
                    free[r] += requests(x, r)
                free["pods"] += 1
            if _fits(req, free):
                out.append(fmt(ctx, "home-vs-borrower", key(p), "home pod of pool %s (queue %s, priority %d) pending: %s; "
                               "it fits on %s without the borrowers %s" % (
                                   home, q, priority(p), (cond or {}).get("message", "no reason"), name,
                                   ", ".join("%s(home %s)" % (key(x), v.home(x)) for x in borrowers))))
                break
    # nomination and reason
    events_by_uid = {}
    for e in snap.get("events", []):
        io = e.get("involvedObject") or e.get("regarding") or {}
        events_by_uid.setdefault(io.get("uid"), []).append(e)
    for p in v.pods:
        if not pending(p):
            continue
        nn = (p.get("status") or {}).get("nominatedNodeName")
        if nn:
            out.append(fmt(ctx, "nomination", key(p), "still pending with nominatedNodeName %s%s" % (
                nn, "" if nn in v.nodes else " (node gone)")))
        cond = _cond(p)
        if not cond or cond.get("status") != "False" or not cond.get("message"):
            out.append(fmt(ctx, "reason", key(p), "pending without a PodScheduled=False condition and message"))
            continue
        if not any(e.get("reason") == "FailedScheduling" for e in events_by_uid.get(p["metadata"]["uid"], [])):
            out.append(fmt(ctx, "reason", key(p), "pending without a FailedScheduling event (condition: %s)" % cond.get("message")))
        msg = cond["message"]
        m = LIMIT_RE.search(msg)
        if m:
            q, b, lim = m.group(1), round(float(m.group(3)) * MICRO), round(float(m.group(4)) * MICRO)
            pools = set(v.node_pool.values()) | {"default"}
            if not any(use.get((q, pl), 0) + b > lim for pl in pools):
                out.append(fmt(ctx, "reason", key(p), "stale reason %r: queue %s holds %s in every pool, + %s <= %s" % (
                    msg, q, "/".join("%s=%s" % (pl, gb(use.get((q, pl), 0))) for pl in sorted(pools)), gb(b), gb(lim))))
        m = BEHIND_RE.search(msg)
        if m:
            g = m.group(1)
            ns, _, gname = g.partition("/")
            waiting = [x for x in v.pods if pending(x) and x["metadata"].get("namespace") == ns
                       and (x["metadata"].get("labels") or {}).get(PG_LABEL) == gname]
            if g not in v.pgs or not waiting:
                out.append(fmt(ctx, "reason", key(p), "stale reason %r: pod group %s %s" % (
                    msg, g, "is gone" if g not in v.pgs else "has no pending member")))
    return out + check_dra_settled(snap, ctx)


DRA_GONE_GRACE_S = 10
# the classes whose devices Queues count as GPUs when --dra-queue-resources is not given
# (pkg/scheduler/scheduler.h's default, documented in design.md; t_composition.sh gives none)
DRA_GPU_CLASSES = {"gpu.nvidia.com", "mig.nvidia.com", "gpu.amd.com", "gpu.example.com"}


def claim_refs(p):
    """{pod claim name: ResourceClaim name or None (a template's claim not made yet)}."""
    st = {x.get("name"): x.get("resourceClaimName")
          for x in (p.get("status") or {}).get("resourceClaimStatuses") or []}
    out = {}
    for pc in (p.get("spec") or {}).get("resourceClaims") or []:
        out[pc.get("name")] = pc.get("resourceClaimName") or st.get(pc.get("name"))
    return out


def alloc_node(claim):
    """The node a claim's allocation is pinned to: "" without an allocation or node
    selector, "?<json>" for a selector other than one metadata.name In [NODE]."""
    a = (claim.get("status") or {}).get("allocation")
    if not a or not a.get("nodeSelector"):
        return ""
    terms = a["nodeSelector"].get("nodeSelectorTerms") or []
    if len(terms) == 1 and not terms[0].get("matchExpressions"):
        mf = terms[0].get("matchFields") or []
        if len(mf) == 1 and mf[0].get("key") == "metadata.name" and mf[0].get("operator") == "In" \
                and len(mf[0].get("values") or []) == 1:
            return mf[0]["values"][0]
    return "?" + json.dumps(a["nodeSelector"], sort_keys=True)


def _claims_by_name(snap):
    return {"%s/%s" % (c["metadata"].get("namespace", ""), c["metadata"]["name"]): c for c in snap.get("claims") or []}


def check_dra(snap, ctx):
    if "claims" not in snap:
        return []
    out = []
    claims = _claims_by_name(snap)
    # dra-device-once
    holders = {}
    for ck, c in sorted(claims.items()):
        for r in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []:
            if r.get("adminAccess"):
                continue
            holders.setdefault("%s/%s/%s" % (r.get("driver"), r.get("pool"), r.get("device")), []).append(ck)
    for dev, cs in sorted(holders.items()):
        if len(cs) > 1:
            out.append(fmt(ctx, "dra-device-once", "device " + dev, "in the allocations of %s" % ", ".join(cs)))
    # dra-bound-claim
    stable = set(snap.get("dra_stable") or [])
    for p in snap.get("pods", []):
        if not holds_node(p) or p["metadata"]["uid"] not in stable:
            continue
        ns, n = p["metadata"].get("namespace", ""), node_of(p)
        for pcn, cn in sorted(claim_refs(p).items()):
            c = claims.get("%s/%s" % (ns, cn)) if cn else None
            what = "claim %s (%s)" % (pcn, cn or "template's claim not made")
            if c is None:
                out.append(fmt(ctx, "dra-bound-claim", key(p), "bound to %s but its %s does not exist" % (n, what)))
                continue
            st = c.get("status") or {}
            if not st.get("allocation"):
                out.append(fmt(ctx, "dra-bound-claim", key(p), "bound to %s but its %s is not allocated" % (n, what)))
            elif alloc_node(c) != n:
                out.append(fmt(ctx, "dra-bound-claim", key(p), "bound to %s but its %s is allocated on %r" % (
                    n, what, alloc_node(c))))
            if p["metadata"]["uid"] not in {r.get("uid") for r in st.get("reservedFor") or []}:
                out.append(fmt(ctx, "dra-bound-claim", key(p), "bound to %s but its %s is not reserved for it "
                               "(reservedFor %s)" % (n, what, [r.get("name") for r in st.get("reservedFor") or []])))
    # dra-reserved-gone
    now = snap.get("time") or 0
    live = {p["metadata"]["uid"] for p in snap.get("pods", []) if not terminal(p)}
    done_at = ctx.get("pod_done_at") or {}
    for ck, c in sorted(claims.items()):
        for r in (c.get("status") or {}).get("reservedFor") or []:
            u = r.get("uid")
            if r.get("resource") != "pods" or u in live or u not in done_at:
                continue
            if now - done_at[u] > DRA_GONE_GRACE_S:
                out.append(fmt(ctx, "dra-reserved-gone", "claim " + ck, "reserved for %s (uid %s), deleted or done "
                               "%.0fs before" % (r.get("name"), u, now - done_at[u])))
    return out


def check_dra_settled(snap, ctx):
    if "claims" not in snap:
        return []
    out = []
    claims = _claims_by_name(snap)
    for p in snap.get("pods", []):
        if not pending(p):
            continue
        ns = p["metadata"].get("namespace", "")
        for pcn, cn in sorted(claim_refs(p).items()):
            c = claims.get("%s/%s" % (ns, cn)) if cn else None
            if c and p["metadata"]["uid"] in {r.get("uid") for r in (c.get("status") or {}).get("reservedFor") or []}:
                out.append(fmt(ctx, "dra-pending-claim", key(p), "pending, but claim %s is reserved for it (allocated "
                               "on %r)" % (cn, alloc_node(c))))
    for ck, c in sorted(claims.items()):
        st = c.get("status") or {}
        if st.get("allocation") and not st.get("reservedFor"):
            out.append(fmt(ctx, "dra-pending-claim", "claim " + ck, "allocated on %r with no reservation: its devices "
                           "are held for nobody" % alloc_node(c)))
    return out


def _cond(p):
    for c in (p.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled":
            return c
    return None


def main():
    """checker.py SNAPSHOT.json [--settled]: prints failures, exit 1 if any."""
    snap = json.load(open(sys.argv[1]))
    ctx = snap.get("ctx") or {"seed": "?", "step": "file"}
    out = check_step(snap, ctx) + check_history(snap, ctx)
    if "--settled" in sys.argv:
        out += check_settled(snap, ctx)
    for f in out:
        print(f)
    sys.exit(1 if out else 0)


if __name__ == "__main__":
    main()
