#!/usr/bin/env python3
"""bulk_create.py -- fast object creation and measurement for test/bench/bench.sh.

Python 3 standard library only: http.client over keep-alive HTTPS connections
(one per thread, ThreadPoolExecutor), client-certificate or token auth.

Connection (flags or environment):
  --server URL     (BENCH_SERVER)   e.g. https://127.0.0.1:6443
  --cacert FILE    (BENCH_CACERT)   CA of the API server (else no verification)
  --cert/--key     (BENCH_CERT, BENCH_KEY)  client certificate
  --token T        (BENCH_TOKEN)    bearer token

Commands:
  nodes   --count N [--start I] [--prefix bench-node-] [--cpu 32 --memory 128Gi --gpu 8 --pods 110]
          POSTs Nodes with status.capacity/allocatable and a Ready condition;
          if the API server drops status on create, PATCHes /status.
  pods    --ns NS --count N [--prefix p-] [--scheduler NAME] [--gpu-every K] [--apps A]
          [--cpu-req 500m --mem-req 512Mi] [--gang-size K [--gang-prefix g]]
          [--queues Q [--queue-prefix q-]]
          [--owners K [--owner-kind ReplicaSet] [--owner-prefix rs-] [--with-deployments]]
          creates the namespace (and its default ServiceAccount) if missing,
          then N pending pods (cpu 500m, memory 512Mi; every K-th also 1 GPU).
          --gang-size K: pod i joins gang g(i//K) (label
          scheduling.x-k8s.io/pod-group); as a training operator does, each
          gang's PodGroup (minMember K) is created before its pods.
          --apps A: pod i is app app-(i%A), with a required hostname
          anti-affinity within its app and a zone spread (maxSkew 1,
          DoNotSchedule) over its app.
          --queues Q: pod i is labelled resource.aibee.cn/queue:
          q-((i // K) % Q) (K = --gpu-every, else 1), so each queue gets
          the same mix of GPU and CPU-only pods.
          --owners K: before the pods, K ReplicaSets rs-0..rs-(K-1) (apps/v1,
          replicas 0, selector and template label app=rs-N, labelled
          bench=true); pod i carries app=rs-(i%K) and a controller
          ownerReference to that ReplicaSet with its real uid (read back from
          the create). --with-deployments: each ReplicaSet is first given a
          Deployment dep-N (replicas 0, the same selector) as its controller
          owner. --owner-blocks: pod i goes to rs-(i*K/N) instead, each
          ReplicaSet's pods made one after another (as a scale-up makes
          them). No controller-manager runs in the bench, so nothing acts on
          them. Not with --apps (both set the app label).
          Nodes carry topology.kubernetes.io/zone=zone-(i%3).
  delete-pods --ns NS [--podgroups] [--keep-owners]  deletes every pod in NS
          (grace 0) and waits until gone, then the bench's ReplicaSets and
          Deployments in NS (label bench=true; --keep-owners: not them);
          --podgroups: then every PodGroup in NS too.
  delete-nodes --prefix P [--from I]  deletes the nodes whose name starts with P
          (and, with --from, whose number is >= I).
  unbound --ns NS          prints how many pods in NS have no spec.nodeName.
  run     --ns NS --count N [--timeout 600] [--out FILE] [--log FILE] -- CMD ...
          starts CMD (a scheduler), watches NS until N pods are bound, samples
          the process's VmHWM and utime+stime, stops it by pid, and writes a
          JSON result: seconds (start -> all bound), first_bind_s, pods_per_s,
          rss_kb (peak), cpu_s, bound, status (ok | timeout | exited).
          --arrive [--warmup S] and the pod options of `pods`: the pods (and
          PodGroups, owners) are created by this command S seconds after CMD started,
          and the clock runs from the first create instead (create_s: how
          long creating took). --linger S: CMD keeps running S seconds after
          the last binding (not measured), e.g. to write PodGroup status.
          --perf FILE: CMD runs under `perf record -g` (profiled until it exits).
          --also-pid NAME=PID (repeatable): other_cpu_s.NAME = that process's
          utime+stime over the same span (e.g. the API server, etcd).
  steady  --ns NS --rate R [--duration 60] [--warmup 5] [--drain 60] [--events-wait 60]
          [--out FILE] [--log FILE] [pod options] -- CMD ...
          starts CMD, waits --warmup s, then creates R pods a second for
          --duration s (each at its due time, from up to 64 threads) while a
          metadata watch notes when each is bound; waits up to --drain s for
          the last. JSON: p50/p90/p99/max creation->bound latency in ms (from
          the create request's start to the binding seen), pods created late
          (>50 ms behind schedule), the "Scheduled" events when the last pod
          was bound and how long after it there was one per pod, CMD's peak
          RSS and CPU during the arrivals.
  podgroups --ns NS        prints {"podgroups": N, "phases": {PHASE: count}}.
  queues  --count Q [--depts D] [--prefix q-]  creates Q leaf Queues (cluster-
          scoped resource.aibee.cn/v1alpha1) q-0..q-(Q-1), varied quotas,
          over-quota weights, priorities and a few limits (see queue_specs);
          with D > 0 also D parent Queues dept-0..dept-(D-1), Q/D leaves each.
  delete-queues            deletes every Queue and waits until none is left.
  queue-status [--prefix q-]  prints a summary of the leaves' .status:
          {"queues", "states", "allocated", "fairShare", "requested", "pending"}
          (sums over the leaves q-*; "states" counts status.state).
"""
import argparse
import http.client
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

THREADS = int(os.environ.get("BENCH_THREADS", "32"))


class Api:
    def __init__(self, a):
        u = urllib.parse.urlparse(a.server)
        self.host, self.port = u.hostname, u.port or (443 if u.scheme == "https" else 80)
        self.https = u.scheme == "https"
        self.token = a.token
        if self.https:
            ctx = ssl.create_default_context(cafile=a.cacert) if a.cacert else ssl._create_unverified_context()
            if not a.cacert:
                ctx.check_hostname = False
            if a.cert:
                ctx.load_cert_chain(a.cert, a.key or None)
            self.ctx = ctx
        self.local = threading.local()

    def conn(self, fresh=False, timeout=60):
        c = getattr(self.local, "c", None)
        if c is None or fresh:
            if c is not None:
                c.close()
            if self.https:
                c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)
            else:
                c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
            self.local.c = c
        return c

    def headers(self, ctype="application/json", accept="application/json"):
        h = {"Content-Type": ctype, "Accept": accept}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        return h

    def req(self, method, path, body=None, ctype="application/json", accept="application/json", tries=6):
        data = json.dumps(body).encode() if body is not None and not isinstance(body, bytes) else body
        for attempt in range(tries):
            try:
                c = self.conn(fresh=attempt > 0)
                c.request(method, path, body=data, headers=self.headers(ctype, accept))
                r = c.getresponse()
                out = r.read()
                if r.status == 429 or r.status >= 500:
                    time.sleep(0.05 * (2 ** attempt))
                    continue
                return r.status, out
            except (OSError, http.client.HTTPException):
                time.sleep(0.05 * (2 ** attempt))
        raise RuntimeError("%s %s: gave up" % (method, path))


def parallel(fn, items):
    errs = []
    with ThreadPoolExecutor(max_workers=THREADS) as ex:
        for r in ex.map(fn, items):
            if r:
                errs.append(r)
    if errs:
        sys.stderr.write("bulk_create: %d failures, first: %s\n" % (len(errs), errs[0]))
    return len(errs)


# ---------------------------------------------------------------- nodes
def node_status(a):
    res = {"cpu": str(a.cpu), "memory": a.memory, "pods": str(a.pods), "ephemeral-storage": "500Gi"}
    if a.gpu:
        res["nvidia.com/gpu"] = str(a.gpu)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"capacity": res, "allocatable": dict(res),
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "bench", "lastHeartbeatTime": now, "lastTransitionTime": now}]}


def cmd_nodes(api, a):
    st = node_status(a)
    names = ["%s%d" % (a.prefix, i) for i in range(a.start, a.start + a.count)]

    def create(n):
        body = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n, "bench": "true",
                                                   "topology.kubernetes.io/zone": "zone-%d" % (int(n[len(a.prefix):]) % 3)}},
                "status": st}
        code, out = api.req("POST", "/api/v1/nodes", body)
        if code not in (200, 201, 409):
            return "%s: HTTP %d %s" % (n, code, out[:200])
        return None

    t0 = time.time()
    bad = parallel(create, names)
    code, out = api.req("GET", "/api/v1/nodes/" + names[0])
    got = json.loads(out).get("status", {}).get("allocatable", {}) if code == 200 else {}
    patched = False
    if got.get("cpu") != st["allocatable"]["cpu"] or got.get("memory") != st["allocatable"]["memory"]:
        patched = True

        def patch(n):
            code, out = api.req("PATCH", "/api/v1/nodes/%s/status" % n, {"status": st},
                                ctype="application/merge-patch+json")
            return None if code == 200 else "%s: HTTP %d %s" % (n, code, out[:200])
        bad += parallel(patch, names)
    print("nodes: %d created in %.1fs%s" % (len(names), time.time() - t0,
                                          " (status patched separately)" if patched else ""))
    return 1 if bad else 0


def cmd_delete_nodes(api, a):
    code, out = api.req("GET", "/api/v1/nodes?labelSelector=bench%3Dtrue",
                        accept="application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
    names = [i["metadata"]["name"] for i in json.loads(out).get("items", [])
             if i["metadata"]["name"].startswith(a.prefix)]
    if a.start_from is not None:
        names = [n for n in names if n[len(a.prefix):].isdigit() and int(n[len(a.prefix):]) >= a.start_from]

    def delete(n):
        code, out = api.req("DELETE", "/api/v1/nodes/" + n)
        return None if code in (200, 202, 404) else "%s: HTTP %d" % (n, code)
    bad = parallel(delete, names)
    print("nodes: %d deleted" % (len(names) - bad))
    return 1 if bad else 0


# ---------------------------------------------------------------- pods
def ensure_namespace(api, ns):
    code, out = api.req("POST", "/api/v1/namespaces",
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    if code not in (200, 201, 409):
        raise RuntimeError("namespace %s: HTTP %d %s" % (ns, code, out[:200]))
    # No controller-manager here: the ServiceAccount admission plugin wants
    # the default account to exist.
    code, out = api.req("POST", "/api/v1/namespaces/%s/serviceaccounts" % ns,
                        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"},
                         "automountServiceAccountToken": False})
    if code not in (200, 201, 409):
        raise RuntimeError("serviceaccount %s/default: HTTP %d %s" % (ns, code, out[:200]))


PG_API = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/%s/podgroups"
PG_LABEL = "scheduling.x-k8s.io/pod-group"


def pod_body(a, i, n):
    req = {"cpu": a.cpu_req, "memory": a.mem_req}
    lim = {}
    ann = {}
    if a.gpu_every and i % a.gpu_every == 0:
        if getattr(a, "gpu_fraction", False):
            # The same pods share GPUs instead (KAI's annotation): halves and quarters.
            ann["gpu-fraction"] = "0.5" if (i // a.gpu_every) % 2 == 0 else "0.25"
        else:
            req["nvidia.com/gpu"] = "1"
            lim["nvidia.com/gpu"] = "1"
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": n, "namespace": a.ns, "labels": {"app": "bench"}},
            "spec": {"schedulerName": a.scheduler, "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "k8s.gcr.io/pause:3.2",
                                     "resources": {"requests": req, "limits": lim}}]}}
    if a.apps:
        app = "app-%d" % (i % a.apps)
        sel = {"matchLabels": {"app": app}}
        body["metadata"]["labels"] = {"app": app}
        body["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": sel, "topologyKey": "kubernetes.io/hostname"}]}}
        body["spec"]["topologySpreadConstraints"] = [
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": sel}]
    if ann:
        body["metadata"]["annotations"] = ann
    if a.gang_size:
        body["metadata"]["labels"][PG_LABEL] = "%s%d" % (a.gang_prefix, i // a.gang_size)
    if a.queues:
        body["metadata"]["labels"][QUEUE_LABEL] = "%s%d" % (a.queue_prefix, (i // max(a.gpu_every, 1)) % a.queues)
    uids = getattr(a, "owner_uids", None)
    if a.owners and uids:
        k = i * a.owners // max(getattr(a, "count", 0) or 1, 1) if a.owner_blocks else i % a.owners
        name = "%s%d" % (a.owner_prefix, k)
        body["metadata"]["labels"]["app"] = name
        body["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": a.owner_kind, "name": name, "uid": uids[k],
             "controller": True, "blockOwnerDeletion": True}]
    return body


# ---------------------------------------------------------------- owners
APPS_API = "/apis/apps/v1/namespaces/%s/%s"
OWNER_LABEL = "bench"


def owner_body(kind, ns, name, app, owner_ref=None):
    """A replicas-0 Deployment or ReplicaSet selecting app=APP."""
    meta = {"name": name, "namespace": ns, "labels": {OWNER_LABEL: "true", "app": app}}
    if owner_ref:
        meta["ownerReferences"] = [owner_ref]
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta,
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": app}},
                     "template": {"metadata": {"labels": {"app": app}},
                                  "spec": {"containers": [{"name": "c", "image": "k8s.gcr.io/pause:3.2"}]}}}}


def create_owned_object(api, ns, resource, body):
    """POSTs body; an object that exists already is read back. Returns (uid, None) or (None, error)."""
    name = body["metadata"]["name"]
    code, out = api.req("POST", APPS_API % (ns, resource), body)
    if code == 409:
        code, out = api.req("GET", APPS_API % (ns, resource) + "/" + name)
    if code not in (200, 201):
        return None, "%s %s: HTTP %d %s" % (resource, name, code, out[:300])
    return json.loads(out)["metadata"]["uid"], None


def create_owners(api, a):
    """The a.owners ReplicaSets (each under a Deployment with
    a.with_deployments), their uids in a.owner_uids. Returns failures."""
    if a.owner_kind != "ReplicaSet":
        raise RuntimeError("--owner-kind: only ReplicaSet is supported")
    idx = list(range(a.owners))
    names = ["%s%d" % (a.owner_prefix, k) for k in idx]
    dep_uids = {}

    def make_dep(k):
        uid, err = create_owned_object(api, a.ns, "deployments",
                                       owner_body("Deployment", a.ns, "dep-%d" % k, names[k]))
        dep_uids[k] = uid
        return err

    bad = parallel(make_dep, idx) if a.with_deployments else 0
    uids = {}

    def make_rs(k):
        ref = None
        if a.with_deployments:
            if not dep_uids.get(k):
                return "replicasets %s: no Deployment" % names[k]
            ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "dep-%d" % k, "uid": dep_uids[k],
                   "controller": True, "blockOwnerDeletion": True}
        uid, err = create_owned_object(api, a.ns, "replicasets", owner_body("ReplicaSet", a.ns, names[k], names[k], ref))
        uids[k] = uid
        return err

    bad += parallel(make_rs, idx)
    a.owner_uids = [uids.get(k) for k in idx]
    return bad


def delete_owners(api, ns):
    """Deletes the bench's Deployments and ReplicaSets in ns (label bench=true).
    Background propagation: with no garbage collector running, Foreground or
    Orphan would leave a finalizer nobody removes. Returns (deleted, failures)."""
    n, bad = 0, 0
    for resource in ("replicasets", "deployments"):
        code, out = api.req("DELETE", APPS_API % (ns, resource) + "?labelSelector=" + OWNER_LABEL + "%3Dtrue",
                            {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"})
        if code in (200, 202):
            try:
                n += len(json.loads(out).get("items") or [])
            except ValueError:
                pass
        elif code != 404:
            sys.stderr.write("delete %s in %s: HTTP %d %s\n" % (resource, ns, code, out[:200]))
            bad += 1
    return n, bad


def create_podgroup(api, ns, name, min_member):
    body = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns}, "spec": {"minMember": min_member}}
    code, out = api.req("POST", PG_API % ns, body)
    if code not in (200, 201, 409):
        return "podgroup %s: HTTP %d %s" % (name, code, out[:300])
    return None


def create_workload(api, a):
    """Creates the pods of `a` (and, with a.gang_size, each gang's PodGroup
    right before submitting its pods, so every PodGroup exists before its
    first pod; with a.owners, the owners before any pod). Returns (pods
    created, failures)."""
    owner_bad = create_owners(api, a) if a.owners else 0
    if owner_bad:
        sys.stderr.write("bulk_create: %d owners not created; no pods\n" % owner_bad)
        return 0, owner_bad
    items = list(enumerate(["%s%d" % (a.prefix, i) for i in range(a.start, a.start + a.count)], a.start))

    def create(i_n):
        i, n = i_n
        code, out = api.req("POST", "/api/v1/namespaces/%s/pods" % a.ns, pod_body(a, i, n))
        if code not in (200, 201, 409):
            return "%s: HTTP %d %s" % (n, code, out[:300])
        return None

    if not a.gang_size:
        bad = parallel(create, items)
        return len(items) - bad, bad
    errs = []
    with ThreadPoolExecutor(max_workers=THREADS) as ex:
        futs = []
        gangs = {}
        for it in items:
            gangs.setdefault(it[0] // a.gang_size, []).append(it)
        for g in sorted(gangs):
            e = create_podgroup(api, a.ns, "%s%d" % (a.gang_prefix, g), a.gang_size)
            if e:
                errs.append(e)
            futs += [ex.submit(create, it) for it in gangs[g]]
        errs += [r for r in (f.result() for f in futs) if r]
    if errs:
        sys.stderr.write("bulk_create: %d failures, first: %s\n" % (len(errs), errs[0]))
    return len(items) - sum(1 for e in errs if not e.startswith("podgroup ")), len(errs)


def cmd_podgroups(api, a):
    code, out = api.req("GET", PG_API % a.ns)
    if code != 200:
        sys.stderr.write("podgroups %s: HTTP %d %s\n" % (a.ns, code, out[:200]))
        return 1
    items = json.loads(out).get("items") or []
    phases = {}
    for i in items:
        ph = (i.get("status") or {}).get("phase") or "(none)"
        phases[ph] = phases.get(ph, 0) + 1
    print(json.dumps({"podgroups": len(items), "phases": phases}))
    return 0


def cmd_pods(api, a):
    ensure_namespace(api, a.ns)
    t0 = time.time()
    made, bad = create_workload(api, a)
    print("pods: %d created in %s in %.1fs (schedulerName %s%s)" % (
        made, a.ns, time.time() - t0, a.scheduler,
        ", %d gangs of %d with PodGroups" % ((a.count + a.gang_size - 1) // a.gang_size, a.gang_size)
        if a.gang_size else "") + (
        ", owned by %d %ss%s" % (a.owners, a.owner_kind, " under Deployments" if a.with_deployments else "")
        if a.owners else ""))
    return 1 if bad else 0


# ---------------------------------------------------------------- queues
QUEUE_API = "/apis/resource.aibee.cn/v1alpha1/queues"
QUEUE_LABEL = "resource.aibee.cn/queue"


def queue_specs(count, depts, prefix):
    """[(name, spec)] of the bench's Queues, parents first. Leaf j (k = j % 5)
    has gpu quota 20+10k, cpu 50000+25000k millicores, memory 50000+25000k MB,
    over-quota weights 1,2,4,1,(absent: the quota), priority 1 when k == 0 and
    a limit well above its demand when k == 4. With the bench's 5000 pods
    (250 a queue, a quarter of them with 1 GPU) every leaf wants more than
    its quota (62 GPUs, 125000 millicores, 134218 MB), and the quotas sum to
    far less than 1000 nodes hold, so the fair share hands out surplus by
    weight while every pod still fits."""
    weights = [1, 2, 4, 1, None]
    leaves, sums = [], {}
    per = (count + depts - 1) // depts if depts else count
    for j in range(count):
        k = j % 5
        res = {}
        for r, q in (("gpu", 20 + 10 * k), ("cpu", 50000 + 25000 * k), ("memory", 50000 + 25000 * k)):
            res[r] = {"quota": q}
            if weights[k] is not None:
                res[r]["overQuotaWeight"] = weights[k]
            if k == 4:
                res[r]["limit"] = 4 * q + {"gpu": 300, "cpu": 1000000, "memory": 1000000}[r]
        spec = {"resources": res}
        if k == 0:
            spec["priority"] = 1
        if depts:
            d = j // per
            spec["parentQueue"] = "dept-%d" % d
            for r, v in res.items():
                sums.setdefault(d, {}).setdefault(r, 0)
                sums[d][r] += v["quota"]
        leaves.append(("%s%d" % (prefix, j), spec))
    parents = [("dept-%d" % d, {"resources": {r: {"quota": q, "overQuotaWeight": d + 1} for r, q in sums[d].items()}})
               for d in sorted(sums)]
    return parents + leaves


def cmd_queues(api, a):
    t0 = time.time()
    bad = 0
    for name, spec in queue_specs(a.count, a.depts, a.prefix):
        body = {"apiVersion": "resource.aibee.cn/v1alpha1", "kind": "Queue",
                "metadata": {"name": name, "labels": {"bench": "true"}}, "spec": spec}
        code, out = api.req("POST", QUEUE_API, body)
        if code not in (200, 201, 409):
            sys.stderr.write("queue %s: HTTP %d %s\n" % (name, code, out[:300]))
            bad += 1
    print("queues: %d leaves%s created in %.1fs" % (a.count, " under %d departments" % a.depts if a.depts else "",
                                                   time.time() - t0))
    return 1 if bad else 0


def cmd_delete_queues(api, a):
    t0 = time.time()
    code, out = api.req("DELETE", QUEUE_API)
    if code not in (200, 202, 404):
        sys.stderr.write("delete-queues: HTTP %d %s\n" % (code, out[:200]))
        return 1
    while code != 404:
        code, out = api.req("GET", QUEUE_API, accept=META_LIST)
        if code != 200 or not json.loads(out).get("items"):
            break
        if time.time() - t0 > 60:
            sys.stderr.write("delete-queues: Queues left after 60s\n")
            return 1
        time.sleep(0.2)
    print("queues deleted in %.1fs" % (time.time() - t0))
    return 0


def cmd_queue_status(api, a):
    code, out = api.req("GET", QUEUE_API)
    if code != 200:
        sys.stderr.write("queue-status: HTTP %d %s\n" % (code, out[:200]))
        return 1
    items = [i for i in json.loads(out).get("items") or [] if i["metadata"]["name"].startswith(a.prefix)]
    res = {"queues": len(items), "states": {}, "pending": 0}
    for i in items:
        st = i.get("status") or {}
        s = st.get("state") or "(none)"
        res["states"][s] = res["states"].get(s, 0) + 1
        p = st.get("pending")
        res["pending"] += p if isinstance(p, (int, float)) else 0
        for f in ("allocated", "fairShare", "requested"):
            for r, v in (st.get(f) or {}).items():
                if isinstance(v, (int, float)):
                    res.setdefault(f, {}).setdefault(r, 0)
                    res[f][r] = round(res[f][r] + v, 3)
    print(json.dumps(res))
    return 0


META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
META_OBJ = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


def list_names(api, ns, selector):
    """Names of pods in ns matching a field selector, and the list's resourceVersion (paginated)."""
    names, cont, rv = [], "", ""
    while True:
        q = {"limit": "2000"}
        if selector:
            q["fieldSelector"] = selector
        if cont:
            q["continue"] = cont
        code, out = api.req("GET", "/api/v1/namespaces/%s/pods?%s" % (ns, urllib.parse.urlencode(q)), accept=META_LIST)
        if code != 200:
            raise RuntimeError("list pods %s: HTTP %d %s" % (ns, code, out[:200]))
        d = json.loads(out)
        names += [i["metadata"]["name"] for i in d.get("items") or []]
        rv = d["metadata"].get("resourceVersion", rv)
        cont = d["metadata"].get("continue", "")
        if not cont:
            return names, rv


def cmd_unbound(api, a):
    print(len(list_names(api, a.ns, "spec.nodeName=")[0]))
    return 0


def cmd_delete_pods(api, a):
    t0 = time.time()
    code, out = api.req("DELETE", "/api/v1/namespaces/%s/pods?gracePeriodSeconds=0" % a.ns,
                        {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
    if code not in (200, 202, 404):
        sys.stderr.write("delete-pods: HTTP %d %s\n" % (code, out[:200]))
    while True:
        left, _ = list_names(api, a.ns, "")
        if not left:
            break
        if time.time() - t0 > 300:
            sys.stderr.write("delete-pods: %d pods left in %s after 300s\n" % (len(left), a.ns))
            return 1

        def delete(n):
            code, out = api.req("DELETE", "/api/v1/namespaces/%s/pods/%s" % (a.ns, n),
                                {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
            return None if code in (200, 202, 404) else "%s: HTTP %d" % (n, code)
        parallel(delete, left)
        time.sleep(0.5)
    owners = 0
    if not a.keep_owners:
        owners, bad = delete_owners(api, a.ns)
        if bad:
            return 1
    if a.podgroups:
        code, out = api.req("DELETE", PG_API % a.ns)
        if code not in (200, 202, 404):
            sys.stderr.write("delete podgroups: HTTP %d %s\n" % (code, out[:200]))
            return 1
    print("pods%s%s in %s deleted in %.1fs" % (" and podgroups" if a.podgroups else "",
                                               " and %d ReplicaSets/Deployments" % owners if owners else "",
                                               a.ns, time.time() - t0))
    return 0


# ---------------------------------------------------------------- run
def proc_stats(pid):
    """(VmHWM kB, utime+stime seconds) of a live pid, or (None, None)."""
    try:
        hwm = None
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
        fields = s[s.rindex(")") + 2:].split()
        # fields[0] is field 3 (state); utime is field 14, stime field 15.
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return hwm, cpu
    except (OSError, ValueError, IndexError):
        return None, None


def loadavg1():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class BoundWatcher(threading.Thread):
    """Counts pods of ns that have spec.nodeName set, through a metadata-only
    watch with a field selector (one small event per binding), re-listing
    whenever the watch ends."""

    def __init__(self, api, ns):
        super().__init__(daemon=True)
        self.api, self.ns = api, ns
        self.bound = set()
        self.when = {}  # name -> monotonic time its binding was seen
        self.first = None
        self.last = None
        self.lock = threading.Lock()
        self.stop = False
        self.listed = threading.Event()

    def count(self):
        with self.lock:
            return len(self.bound)

    def _add(self, name):
        with self.lock:
            if name not in self.bound:
                self.bound.add(name)
                t = time.monotonic()
                self.when[name] = t
                if self.first is None:
                    self.first = t
                self.last = t

    def run(self):
        while not self.stop:
            try:
                names, rv = list_names(self.api, self.ns, "spec.nodeName!=")
                for n in names:
                    self._add(n)
                self.listed.set()
                q = urllib.parse.urlencode({"watch": "1", "fieldSelector": "spec.nodeName!=",
                                            "resourceVersion": rv, "timeoutSeconds": "1800",
                                            "allowWatchBookmarks": "true"})
                c = self.api.conn(fresh=True, timeout=3600)
                c.request("GET", "/api/v1/namespaces/%s/pods?%s" % (self.ns, q),
                          headers=self.api.headers(accept=META_OBJ))
                r = c.getresponse()
                if r.status != 200:
                    r.read()
                    time.sleep(0.5)
                    continue
                while not self.stop:
                    line = r.readline()
                    if not line:
                        break
                    ev = json.loads(line)
                    if ev.get("type") in ("ADDED", "MODIFIED"):
                        self._add(ev["object"]["metadata"]["name"])
                    elif ev.get("type") == "ERROR":
                        break
            except Exception as e:  # keep counting whatever happens
                sys.stderr.write("watch: %s\n" % e)
                time.sleep(0.5)


def stop_process(p):
    """SIGTERM, then SIGKILL after 10 s; waits for it."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Traced:
    """CMD started by perf: pid, poll, send_signal, wait and kill act on CMD
    itself (perf's only child); perf ends with it."""

    def __init__(self, argv, log):
        self.perf = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        self.pid = None
        for _ in range(200):
            try:
                with open("/proc/%d/task/%d/children" % (self.perf.pid, self.perf.pid)) as f:
                    kids = f.read().split()
            except OSError:
                kids = []
            if kids:
                self.pid = int(kids[0])
                break
            if self.perf.poll() is not None:
                break
            time.sleep(0.01)
        if self.pid is None:
            self.pid = self.perf.pid

    def poll(self):
        if os.path.exists("/proc/%d" % self.pid) and self.perf.poll() is None:
            return None
        return self.perf.wait()

    def send_signal(self, sig):
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass

    def wait(self, timeout=None):
        return self.perf.wait(timeout)

    def kill(self):
        self.send_signal(signal.SIGKILL)


def cmd_run(api, a):
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        sys.stderr.write("run: no command\n")
        return 2
    if a.arrive:
        ensure_namespace(api, a.ns)
    w = BoundWatcher(api, a.ns)
    w.start()
    if not w.listed.wait(30):
        sys.stderr.write("run: cannot list pods of %s\n" % a.ns)
    pre = w.count()
    if pre:
        sys.stderr.write("run: %d pods of %s already bound before start\n" % (pre, a.ns))
    log = open(a.log, "wb") if a.log else subprocess.DEVNULL
    load_start = loadavg1()
    # --also-pid NAME=PID: other processes' CPU over the same span (e.g. the API server).
    others = {}
    for spec in a.also_pid or []:
        name, _, pid = spec.partition("=")
        if pid.isdigit():
            others[name] = [int(pid), proc_stats(int(pid))[1], None]
    t0 = time.monotonic()
    # --perf: CMD runs under `perf record -g` (it costs CPU: not for measured
    # runs). perf starts CMD, so every thread is profiled from its first
    # instruction (attaching with -p misses threads made while it attaches).
    if a.perf:
        # BENCH_PERF_ARGS: other perf record options, e.g. "--call-graph dwarf".
        extra = os.environ.get("BENCH_PERF_ARGS", "").split()
        p = Traced(["perf", "record", "-q", "-F", "499", "-g"] + extra + ["-o", a.perf, "--"] + cmd, log)
    else:
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    status, hwm, cpu, exitcode = "timeout", None, None, None
    t_done = None
    creator, created, cpu_warm = None, {}, None
    if a.arrive:
        # The scheduler syncs its informers first; the clock starts at the
        # first create, as when a training operator submits jobs to a
        # running scheduler.
        while time.monotonic() - t0 < a.warmup and p.poll() is None:
            time.sleep(0.05)
        cpu_warm = proc_stats(p.pid)[1]
        t0 = time.monotonic()

        def create_all():
            created["made"], created["bad"] = create_workload(api, a)
            created["seconds"] = time.monotonic() - t0
        creator = threading.Thread(target=create_all, daemon=True)
        creator.start()
    while True:
        h, c = proc_stats(p.pid)
        if h is not None:
            hwm, cpu = h, c
        if w.count() >= a.count:
            t_done = w.last if w.last is not None else time.monotonic()
            status = "ok"
            break
        rc = p.poll()
        if rc is not None:
            status, exitcode = "exited", rc
            break
        if time.monotonic() - t0 > a.timeout:
            break
        time.sleep(0.05)
    h, c = proc_stats(p.pid)   # final sample, before stopping
    for o in others.values():
        o[2] = proc_stats(o[0])[1]
    if h is not None:
        hwm, cpu = h, c
    # --linger: time for status writes (PodGroup phases) after the last binding.
    while status == "ok" and p.poll() is None and time.monotonic() - (t_done or 0) < a.linger:
        time.sleep(0.05)
    stop_process(p)
    w.stop = True
    if creator:
        creator.join(60)
    bound = w.count()
    secs = (t_done - t0) if t_done else None
    res = {"status": status, "exit_code": exitcode, "pods": a.count, "bound": bound,
           "seconds": round(secs, 3) if secs else None,
           "first_bind_s": round(w.first - t0, 3) if w.first else None,
           "pods_per_s": round(a.count / secs, 1) if secs else None,
           "steady_pods_per_s": round(a.count / (t_done - w.first), 1) if t_done and w.first and t_done > w.first else None,
           "rss_kb": hwm, "cpu_s": round(cpu, 2) if cpu is not None else None,
           "loadavg_start": load_start, "loadavg_end": loadavg1()}
    if others:
        res["other_cpu_s"] = {n: round(o[2] - o[1], 2) if o[1] is not None and o[2] is not None else None
                              for n, o in others.items()}
    if a.arrive:
        res.update({"clock": "first create", "warmup_s": a.warmup,
                    "cpu_warmup_s": round(cpu_warm, 2) if cpu_warm is not None else None,
                    "create_s": round(created["seconds"], 3) if "seconds" in created else None,
                    "create_failures": created.get("bad")})
    if a.gang_size:
        res.update({"gang_size": a.gang_size, "gangs": (a.count + a.gang_size - 1) // a.gang_size})
    out = json.dumps(res)
    print(out)
    if a.out:
        with open(a.out, "w") as f:
            f.write(out + "\n")
    return 0 if status == "ok" else 1


def percentile(v, q):
    """The q-quantile (0..1) of the sorted list v (nearest rank)."""
    if not v:
        return None
    return v[min(len(v) - 1, max(0, int(round(q * len(v) + 0.5)) - 1))]


def count_events(api, ns, reason):
    code, out = api.req("GET", "/api/v1/namespaces/%s/events?fieldSelector=reason%%3D%s" % (ns, reason))
    if code != 200:
        return None
    return len(json.loads(out).get("items") or [])


def cmd_steady(api, a):
    """Steady arrival: CMD runs (warm), pods are created at --rate for
    --duration seconds, each pod's creation->bound latency is measured."""
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        sys.stderr.write("steady: no command\n")
        return 2
    ensure_namespace(api, a.ns)
    if a.owners and create_owners(api, a):
        sys.stderr.write("steady: owners not created\n")
        return 1
    w = BoundWatcher(api, a.ns)
    w.start()
    w.listed.wait(30)
    log = open(a.log, "wb") if a.log else subprocess.DEVNULL
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    t_start = time.monotonic()
    while time.monotonic() - t_start < a.warmup and p.poll() is None:
        time.sleep(0.05)
    cpu0 = proc_stats(p.pid)[1]
    n = int(a.rate * a.duration)
    sent = {}
    lock = threading.Lock()
    t0 = time.monotonic()
    late = [0]

    def create(i):
        name = "%s%d" % (a.prefix, i)
        due = t0 + i / a.rate
        d = due - time.monotonic()
        if d > 0:
            time.sleep(d)
        elif d < -0.05:
            with lock:
                late[0] += 1
        ts = time.monotonic()
        code, out = api.req("POST", "/api/v1/namespaces/%s/pods" % a.ns, pod_body(a, i, name))
        with lock:
            sent[name] = ts
        return None if code in (200, 201) else "%s: HTTP %d %s" % (name, code, out[:200])

    # Enough threads that a slow create never holds up the schedule.
    with ThreadPoolExecutor(max_workers=max(THREADS, 64)) as ex:
        errs = [e for e in ex.map(create, range(n)) if e]
    t_created = time.monotonic()
    hwm, cpu = None, None
    while time.monotonic() - t_created < a.drain:
        h, c = proc_stats(p.pid)
        if h is not None:
            hwm, cpu = h, c
        if w.count() >= n - len(errs) or p.poll() is not None:
            break
        time.sleep(0.05)
    h, c = proc_stats(p.pid)
    if h is not None:
        hwm, cpu = h, c
    t_bound = time.monotonic()
    with w.lock:
        lat = sorted(w.when[k] - sent[k] for k in sent if k in w.when)
        last_bind = max(w.when.values()) if w.when else None
    # "Scheduled" events: how many exist when the last pod is bound, and how
    # long after that until there is one per bound pod.
    ev_at_end = count_events(api, a.ns, "Scheduled")
    ev, caught = ev_at_end, None
    while ev is not None and time.monotonic() - t_bound < a.events_wait:
        if ev >= len(lat):
            caught = round(time.monotonic() - (last_bind or t_bound), 2)
            break
        time.sleep(0.5)
        ev = count_events(api, a.ns, "Scheduled")
    stop_process(p)
    w.stop = True
    ms = lambda v: None if v is None else round(v * 1000.0, 1)
    res = {"status": "ok" if len(lat) == n - len(errs) and not errs else "incomplete",
           "rate": a.rate, "duration_s": a.duration, "created": n - len(errs), "create_errors": len(errs),
           "created_late": late[0], "create_s": round(t_created - t0, 2), "bound": len(lat),
           "p50_ms": ms(percentile(lat, 0.5)), "p90_ms": ms(percentile(lat, 0.9)),
           "p99_ms": ms(percentile(lat, 0.99)), "max_ms": ms(lat[-1] if lat else None),
           "events_at_last_bind": ev_at_end, "events_final": ev, "events_caught_up_s": caught,
           "rss_kb": hwm, "cpu_s": round(cpu - cpu0, 2) if cpu is not None and cpu0 is not None else None}
    if errs:
        sys.stderr.write("steady: %d create failures, first: %s\n" % (len(errs), errs[0]))
    out = json.dumps(res)
    print(out)
    if a.out:
        with open(a.out, "w") as f:
            f.write(out + "\n")
    return 0 if res["status"] == "ok" else 1


def add_pod_args(p):
    """The pod options shared by `pods` and `run --arrive`."""
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--prefix", default="p-")
    p.add_argument("--scheduler", default="default-scheduler")
    p.add_argument("--gpu-every", type=int, default=4)
    p.add_argument("--gpu-fraction", action="store_true",
                   help="the GPU pods ask gpu-fraction 0.5/0.25 instead of nvidia.com/gpu: 1")
    p.add_argument("--apps", type=int, default=0)
    p.add_argument("--cpu-req", default="500m")
    p.add_argument("--mem-req", default="512Mi")
    p.add_argument("--gang-size", type=int, default=0)
    p.add_argument("--gang-prefix", default="g")
    p.add_argument("--queues", type=int, default=0)
    p.add_argument("--queue-prefix", default="q-")
    p.add_argument("--owners", type=int, default=0,
                   help="K ReplicaSets rs-0..rs-(K-1) created first; pod i owned by rs-(i%%K)")
    p.add_argument("--owner-kind", default="ReplicaSet", choices=["ReplicaSet"])
    p.add_argument("--owner-prefix", default="rs-")
    p.add_argument("--with-deployments", action="store_true",
                   help="each ReplicaSet owned by a Deployment dep-N")
    p.add_argument("--owner-blocks", action="store_true",
                   help="pod i owned by rs-(i*K/count): each ReplicaSet's pods created together")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", default=os.environ.get("BENCH_SERVER"))
    ap.add_argument("--cacert", default=os.environ.get("BENCH_CACERT"))
    ap.add_argument("--cert", default=os.environ.get("BENCH_CERT"))
    ap.add_argument("--key", default=os.environ.get("BENCH_KEY"))
    ap.add_argument("--token", default=os.environ.get("BENCH_TOKEN"))
    sub = ap.add_subparsers(dest="cmd_name", required=True)
    p = sub.add_parser("nodes")
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--prefix", default="bench-node-")
    p.add_argument("--cpu", type=int, default=32)
    p.add_argument("--memory", default="128Gi")
    p.add_argument("--gpu", type=int, default=8)
    p.add_argument("--pods", type=int, default=110)
    p = sub.add_parser("delete-nodes")
    p.add_argument("--prefix", default="bench-node-")
    p.add_argument("--from", dest="start_from", type=int)
    p = sub.add_parser("pods")
    p.add_argument("--ns", required=True)
    p.add_argument("--count", type=int, required=True)
    add_pod_args(p)
    p = sub.add_parser("delete-pods")
    p.add_argument("--ns", required=True)
    p.add_argument("--podgroups", action="store_true")
    p.add_argument("--keep-owners", action="store_true", help="leave the bench's ReplicaSets and Deployments")
    p = sub.add_parser("podgroups")
    p.add_argument("--ns", required=True)
    p = sub.add_parser("queues")
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--depts", type=int, default=0)
    p.add_argument("--prefix", default="q-")
    sub.add_parser("delete-queues")
    p = sub.add_parser("queue-status")
    p.add_argument("--prefix", default="q-")
    p = sub.add_parser("unbound")
    p.add_argument("--ns", required=True)
    p = sub.add_parser("run")
    p.add_argument("--ns", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--out")
    p.add_argument("--log")
    p.add_argument("--arrive", action="store_true")
    p.add_argument("--linger", type=float, default=0)
    p.add_argument("--perf")
    p.add_argument("--also-pid", action="append")
    p.add_argument("--warmup", type=float, default=3.0)
    add_pod_args(p)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    p = sub.add_parser("steady")
    p.add_argument("--ns", required=True)
    p.add_argument("--rate", type=float, required=True)
    p.add_argument("--duration", type=float, default=60)
    p.add_argument("--warmup", type=float, default=5)
    p.add_argument("--drain", type=float, default=60)
    p.add_argument("--events-wait", dest="events_wait", type=float, default=60)
    p.add_argument("--out")
    p.add_argument("--log")
    add_pod_args(p)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if not a.server:
        ap.error("--server (or BENCH_SERVER) is required")
    if getattr(a, "owners", 0) and getattr(a, "apps", 0):
        ap.error("--owners and --apps both set the pods' app label")
    api = Api(a)
    fn = {"nodes": cmd_nodes, "delete-nodes": cmd_delete_nodes, "pods": cmd_pods,
          "delete-pods": cmd_delete_pods, "unbound": cmd_unbound, "podgroups": cmd_podgroups, "run": cmd_run,
          "queues": cmd_queues, "delete-queues": cmd_delete_queues, "queue-status": cmd_queue_status,
          "steady": cmd_steady}[a.cmd_name]
    sys.exit(fn(api, a))


if __name__ == "__main__":
    main()
