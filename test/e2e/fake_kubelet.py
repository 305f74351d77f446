#!/usr/bin/env python3
"""fake_kubelet.py -- plays the one part of a kubelet the multi-cluster
tests need (there is no kubelet on the plain Node objects): a pod bound to a
node goes to phase Running, and a pod being deleted is confirmed gone (what a
kubelet does once its containers stopped).

    fake_kubelet.py --ca CA --cert CRT --key KEY [--interval S] URL...

Every URL is one API server; one that is down is skipped until it answers.
Writes "RUNNING <url> <ns>/<name> <unix time>" to stdout for each pod it
starts, so a test knows when Running began.
"""
import argparse
import json
import ssl
import sys
import time
import urllib.error
import urllib.request


def call(ctx, url, method="GET", body=None, ctype="application/json"):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", ctype)
    with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
        return json.loads(r.read() or b"{}")


def tick(ctx, base):
    pods = call(ctx, base + "/api/v1/pods").get("items", [])
    for p in pods:
        meta, spec = p["metadata"], p.get("spec", {})
        path = "%s/api/v1/namespaces/%s/pods/%s" % (base, meta["namespace"], meta["name"])
        try:
            if meta.get("deletionTimestamp"):
                call(ctx, path, "DELETE", {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                                           "preconditions": {"uid": meta["uid"]}})
            elif spec.get("nodeName") and p.get("status", {}).get("phase", "Pending") == "Pending":
                now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                call(ctx, path + "/status", "PATCH",
                     {"status": {"phase": "Running", "startTime": now,
                                 "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]}},
                     "application/merge-patch+json")
                print("RUNNING %s %s/%s %.3f" % (base, meta["namespace"], meta["name"], time.time()), flush=True)
        except urllib.error.HTTPError as e:
            if e.code not in (404, 409):
                print("error %s %s: %s" % (path, e.code, e.read()[:200]), file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ca", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--interval", type=float, default=0.3)
    ap.add_argument("urls", nargs="+")
    a = ap.parse_args()
    ctx = ssl.create_default_context(cafile=a.ca)
    ctx.load_cert_chain(a.cert, a.key)
    while True:
        for base in a.urls:
            try:
                tick(ctx, base)
            except (urllib.error.URLError, OSError, ValueError):
                pass  # down or restarting: next round
        time.sleep(a.interval)


if __name__ == "__main__":
    main()
