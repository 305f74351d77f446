#!/usr/bin/env python3
"""Composition suite: a fake kubelet. It plays the kubelet's part on the plain Node
objects of the e2e control plane (there is no real kubelet), plus the pod garbage
collector's and a job controller's cleanup:

  - a pod bound to a node (spec.nodeName set, phase Pending) goes to phase Running;
  - a Running pod whose annotation compose.aibee.cn/run-seconds is > 0 finishes
    (phase Succeeded) that many seconds after it started running;
  - a Succeeded pod that is not a gang member is deleted 2 s later (a Job's cleanup);
  - a pod being deleted (deletionTimestamp set) is confirmed gone: DELETE with grace 0
    and a uid precondition, what a kubelet does once its containers stopped;
  - a pod bound to a node that no longer exists is deleted (the pod GC).

Everything it deletes itself is recorded in `deleted` (namespace/name/uid) so the
checker can tell the harness's deletions from the scheduler's evictions.
`freeze()` stops finishing pods (run.py calls it before the final settle).

Stdlib only; also usable alone:  kubelet.py --server URL --ca CA --cert CRT --key KEY
"""
import argparse
import json
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

RUN_ANN = "compose.aibee.cn/run-seconds"
# Checkpoint before eviction (issue 26): the scheduler asks with this annotation (the
# deadline); a pod whose ACK_ANN says N acknowledges N seconds after it first sees the
# request, by writing CHECKPOINTED_ANN, as its training loop would (docs/operations.md).
REQUESTED_ANN = "resource.aibee.cn/preemption-requested"
CHECKPOINTED_ANN = "resource.aibee.cn/checkpointed-at"
ACK_ANN = "compose.aibee.cn/ack-after"
PG_LABEL = "scheduling.x-k8s.io/pod-group"


class ApiError(Exception):
    def __init__(self, code, method, path, body):
        super().__init__("%s %s -> %s: %s" % (method, path, code, body[:300]))
        self.code = code


class Client:
    """JSON over HTTPS with the admin client certificate (TLS verified with the CA), or
    with a bearer token instead (the stand-in API server ends TLS: no certificate
    passes it)."""

    def __init__(self, server, ca, cert, key, timeout=30, token=""):
        self.server = server.rstrip("/")
        self.timeout = timeout
        self.token = token
        self.ctx = ssl.create_default_context(cafile=ca)
        if not token:
            self.ctx.load_cert_chain(cert, key)

    def req(self, method, path, body=None, ctype="application/json", ok=()):
        data = None if body is None else json.dumps(body).encode()
        r = urllib.request.Request(self.server + path, data=data, method=method)
        r.add_header("Accept", "application/json")
        if self.token:
            r.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            r.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(r, context=self.ctx, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            if e.code in ok:
                return None
            raise ApiError(e.code, method, path, text) from None
        return json.loads(raw) if raw else None

    def get(self, path, ok=()):
        return self.req("GET", path, ok=ok)

    def post(self, path, body, ok=()):
        return self.req("POST", path, body, ok=ok)

    def merge_patch(self, path, body, ok=(404, 409)):
        return self.req("PATCH", path, body, ctype="application/merge-patch+json", ok=ok)

    def delete(self, path, body=None, ok=(404, 409)):
        return self.req("DELETE", path, body, ok=ok)


def now_iso():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Kubelet:
    def __init__(self, client, interval=0.4, log=None):
        self.c = client
        self.interval = interval
        self.started = {}          # uid -> monotonic time it went Running
        self.succeeded_at = {}     # uid -> monotonic time it went Succeeded
        self.deleted = {}          # "ns/name/uid" -> why (the harness's own deletions)
        self.ckpt_requested = {}   # uid -> monotonic time a checkpoint request was first seen
        self.ckpt_acked = set()    # uids whose acknowledgement was written
        self.frozen = False
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.log = log or (lambda m: None)
        self.errors = []
        self.thread = None

    def freeze(self):
        self.frozen = True

    def start(self):
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def close(self):
        self.stop.set()
        if self.thread:
            self.thread.join(10)

    def loop(self):
        while not self.stop.is_set():
            try:
                self.tick()
            except Exception as e:  # keep playing the kubelet; the runner reports errors
                self.errors.append(str(e))
                self.log("kubelet: %s" % e)
            self.stop.wait(self.interval)

    def _del(self, p, why):
        m = p["metadata"]
        key = "%s/%s/%s" % (m["namespace"], m["name"], m["uid"])
        with self.lock:
            if m.get("deletionTimestamp") is None:
                self.deleted[key] = why
        self.c.delete("/api/v1/namespaces/%s/pods/%s" % (m["namespace"], m["name"]),
                      {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                       "preconditions": {"uid": m["uid"]}})

    def _checkpoint(self, p, path, t):
        """The training loop's side of a checkpoint request: seen, then acknowledged."""
        ann = p["metadata"].get("annotations") or {}
        if not ann.get(REQUESTED_ANN):
            return
        uid = p["metadata"]["uid"]
        with self.lock:
            first = self.ckpt_requested.setdefault(uid, t)
        after = float(ann.get(ACK_ANN, "0") or 0)
        if after > 0 and t - first >= after and not ann.get(CHECKPOINTED_ANN):
            self.c.merge_patch(path, {"metadata": {"annotations": {CHECKPOINTED_ANN: now_iso()}}})
            self.ckpt_acked.add(uid)

    def tick(self):
        nodes = {n["metadata"]["name"] for n in self.c.get("/api/v1/nodes")["items"]}
        pods = self.c.get("/api/v1/pods")["items"]
        t = time.monotonic()
        for p in pods:
            m, spec, st = p["metadata"], p.get("spec", {}), p.get("status", {})
            uid, phase, node = m["uid"], st.get("phase", "Pending"), spec.get("nodeName") or ""
            path = "/api/v1/namespaces/%s/pods/%s" % (m["namespace"], m["name"])
            if m.get("deletionTimestamp"):
                self._del(p, "confirm")
                continue
            if node and node not in nodes:
                self._del(p, "podgc: node %s is gone" % node)
                continue
            if node and phase == "Pending":
                self.c.merge_patch(path + "/status", {"status": {
                    "phase": "Running", "startTime": now_iso(),
                    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now_iso()}]}})
                self.started[uid] = t
                continue
            if phase == "Running":
                self.started.setdefault(uid, t)
                self._checkpoint(p, path, t)
                run = float((m.get("annotations") or {}).get(RUN_ANN, "0") or 0)
                if run > 0 and not self.frozen and t - self.started[uid] >= run:
                    self.c.merge_patch(path + "/status", {"status": {
                        "phase": "Succeeded",
                        "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": now_iso()}]}})
                    self.succeeded_at[uid] = t
                continue
            if phase == "Succeeded" and not (m.get("labels") or {}).get(PG_LABEL):
                self.succeeded_at.setdefault(uid, t)
                if t - self.succeeded_at[uid] >= 2:
                    self._del(p, "finished")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    a = ap.parse_args()
    k = Kubelet(Client(a.server, a.ca, a.cert, a.key), log=lambda m: print(m, file=sys.stderr, flush=True))
    k.loop()


if __name__ == "__main__":
    main()
