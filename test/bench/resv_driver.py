#!/usr/bin/env python3
"""resv_driver.py -- one run of the reservation benchmark (test/bench/
reservation.sh): a steady stream of 1-GPU jobs keeps a full pool busy, a
large gang arrives at T0, and we record when it starts.

It plays the kubelet, as the e2e suites do (there is none on the plain Node
objects): a pod bound to a node goes Running with status.startTime = now, and
a job pod is deleted (its job done) RUNTIME seconds after it started. The
gang's pods run until the end. Also polls Pool .status.reservation.

Prints one JSON object with the timeline (seconds from T0)."""
import argparse
import json
import ssl
import sys
import time
import urllib.error
import urllib.request


class Api:
    def __init__(self, url, ca, cert, key):
        self.url = url
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ctx.load_cert_chain(cert, key)

    def call(self, method, path, body=None, ctype="application/json"):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=10) as r:
                return json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            if e.code in (404, 409):
                return None
            raise


def job(name, pool, runtime):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "stream"},
                         "annotations": {"resource.aibee.cn/pool": pool,
                                         "resource.aibee.cn/expected-runtime": "%ds" % runtime}},
            "spec": {"schedulerName": "ai-scheduler", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "registry.invalid/pause:3",
                                     "resources": {"requests": {"nvidia.com/gpu": "1", "cpu": "100m"},
                                                   "limits": {"nvidia.com/gpu": "1"}}}]}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--pool", default="gpu")
    ap.add_argument("--runtime", type=int, default=12, help="seconds a job runs")
    ap.add_argument("--warmup", type=float, default=30, help="stream alone before the gang (s)")
    ap.add_argument("--stream", type=float, default=90, help="stream keeps going this long after T0 (s)")
    ap.add_argument("--tail", type=float, default=60, help="give up this long after the stream stops (s)")
    ap.add_argument("--queued", type=int, default=8, help="most pending jobs at a time")
    ap.add_argument("--gpus", type=int, default=64, help="the pool's GPUs (arrival rate)")
    ap.add_argument("--gang-members", type=int, default=8)
    ap.add_argument("--gang-gpus", type=int, default=4, help="GPUs per member")
    a = ap.parse_args()
    api = Api(a.url, a.ca, a.cert, a.key)

    start = {}  # pod -> (time Running, node)
    ended = {}  # job -> time deleted
    created = 0
    t_start = time.time()
    t0 = t_start + a.warmup
    gang_made = False
    gang_bound = None
    resv_seen = None
    resv_nodes = []
    resv_gone = None
    last_pool = 0.0
    # Arrivals: a steady 1.25 x the rate at which a full pool frees GPUs
    # (gpus / runtime), capped by --queued pending: the pool stays full and
    # its jobs' start times stay spread out (a burst would start them all at
    # once and free whole nodes together, every runtime seconds).
    rate = 1.25 * a.gpus / a.runtime
    tokens = 0.0
    last = t_start
    while True:
        now = time.time()
        items = (api.call("GET", "/api/v1/namespaces/default/pods") or {}).get("items", [])
        pending_jobs = 0
        gang_nodes = 0
        for p in items:
            m, spec = p["metadata"], p.get("spec", {})
            name = m["name"]
            is_gang = "scheduling.x-k8s.io/pod-group" in m.get("labels", {})
            node = spec.get("nodeName")
            if not node:
                pending_jobs += not is_gang
                continue
            gang_nodes += is_gang
            path = "/api/v1/namespaces/default/pods/" + name
            if name not in start:
                ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
                api.call("PATCH", path + "/status",
                         {"status": {"phase": "Running", "startTime": ts,
                                     "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": ts}]}},
                         "application/merge-patch+json")
                start[name] = (now, node)
            elif not is_gang and name not in ended and now - start[name][0] >= a.runtime:
                api.call("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
                ended[name] = now
        tokens = min(tokens + rate * (now - last), float(a.queued))
        last = now
        if now < t0 + a.stream:
            while tokens >= 1 and pending_jobs < a.queued:
                api.call("POST", "/api/v1/namespaces/default/pods", job("job-%05d" % created, a.pool, a.runtime))
                created += 1
                pending_jobs += 1
                tokens -= 1
        if not gang_made and now >= t0:
            api.call("POST", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups",
                     {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                      "metadata": {"name": "big"}, "spec": {"minMember": a.gang_members}})
            for i in range(a.gang_members):
                pod = job("big-%d" % i, a.pool, a.runtime)
                pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "big"
                del pod["metadata"]["annotations"]["resource.aibee.cn/expected-runtime"]
                r = pod["spec"]["containers"][0]["resources"]
                r["requests"]["nvidia.com/gpu"] = r["limits"]["nvidia.com/gpu"] = str(a.gang_gpus)
                api.call("POST", "/api/v1/namespaces/default/pods", pod)
            gang_made = True
        if gang_made and gang_bound is None and gang_nodes >= a.gang_members:
            gang_bound = now
        if now - last_pool >= 0.5:
            last_pool = now
            pl = api.call("GET", "/apis/resource.aibee.cn/v1alpha1/pools/" + a.pool) or {}
            r = (pl.get("status") or {}).get("reservation")
            if r and resv_seen is None:
                resv_seen = now
                resv_nodes = r.get("nodes", [])
            if not r and resv_seen is not None and resv_gone is None:
                resv_gone = now
        if gang_bound is not None and now > gang_bound + 1:
            break
        if now > t0 + a.stream + a.tail:
            break
        time.sleep(0.2)

    # Timeline, seconds from T0.
    def rel(t):
        return None if t is None else round(t - t0, 2)

    job_starts = sorted(t for n, (t, _) in start.items() if n.startswith("job-"))
    # When the held nodes were free: the jobs on them at the reservation
    # ended (from their start times: the kubelet deletes at start + runtime).
    free_at = None
    if resv_seen is not None:
        busy = [start[n][0] + a.runtime for n in start
                if n.startswith("job-") and start[n][1] in resv_nodes and start[n][0] <= resv_seen
                and start[n][0] + a.runtime > resv_seen]
        free_at = max(busy) if busy else resv_seen
    out = {"t0": t0, "runtime": a.runtime, "gang_bound": rel(gang_bound), "resv_seen": rel(resv_seen),
           "resv_nodes": resv_nodes, "resv_gone": rel(resv_gone), "free_at": rel(free_at),
           "stream_end": a.stream, "job_starts": [round(t - t0, 2) for t in job_starts],
           "job_ends": sorted([round(t - t0, 2), start[n][1]] for n, t in ended.items()),
           "gang_nodes": sorted({start[n][1] for n in start if n.startswith("big-")})}
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
