#!/usr/bin/env python3
"""fake_claim_controller.py -- plays kube-controller-manager's resourceclaim
controller (pkg/controller/resourceclaim/controller.go, Kubernetes 1.34) for
test/e2e/t_dra.sh, where no controller manager runs: the suite has only etcd
and a kube-apiserver v1.20 (DRA's objects are CRDs there, and pods reach
their 1.34 fields through standin_apiserver.py, which this talks to).

What it plays, polling every --interval seconds (kube's controller is
event-driven; the outcome is the same):
  - a pod (not done, not being deleted) with spec.resourceClaims[] naming a
    resourceClaimTemplateName gets a ResourceClaim made from the template:
    generateName "<pod>-<claim>-", an ownerReference to the pod (v1 Pod,
    controller and blockOwnerDeletion true), the annotation
    resource.kubernetes.io/pod-claim-name: <claim>, the template's
    spec.metadata labels and annotations, and spec copied from its spec.spec;
    a claim already made for that pod and name (found by owner uid and the
    annotation) is reused. Then the pod's status.resourceClaimStatuses
    [{name, resourceClaimName}] is written (PATCH pods/status, strategic
    merge; kube applies it server-side). A template that does not exist yet
    leaves the pod as it is until it does (kube retries with backoff);
  - status.reservedFor entries of pods that are gone, replaced (other uid)
    or done (phase Succeeded/Failed, or deleted before being bound) are
    removed (PUT .../status, optimistic on resourceVersion). When that
    leaves none and the claim has the finalizer
    resource.kubernetes.io/delete-protection, status.allocation is cleared in
    the same write (kube deallocates on that transition only: a claim that
    was allocated without a reservation keeps its allocation), and then the
    finalizer is removed (PUT of the claim);
  - a claim being deleted with no reservation left: allocation cleared,
    finalizer removed, so that it goes;
  - a claim with no reservation generated for a pod (its controller
    ownerReference) that is done or replaced is deleted. The garbage
    collector's part is played too: such a claim whose pod is gone (a GET by
    name confirms it, or the uid differs) is deleted.

Not played: claims of a pod scheduled by someone else being reserved by the
controller (reserveForPod, for pods with spec.nodeName set at creation);
extended-resource claims (KEP-5004: the scheduler makes those); the admin
access namespace check; metrics; any other owner kind in reservedFor
(entries other than core pods are left as they are).

    fake_claim_controller.py --url https://127.0.0.1:PORT --ca ca.crt [--interval S]

The bearer token is read from the environment (FAKE_CLAIM_TOKEN). Writes a
line per action to stdout: "CREATED ns/claim pod=NAME claim=NAME",
"STATUS ns/pod", "UNRESERVED ns/claim uids=...", "DEALLOCATED ns/claim",
"UNFINALIZED ns/claim", "DELETED ns/claim".
"""
import argparse
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request

API = "/apis/resource.k8s.io/v1"
FINALIZER = "resource.kubernetes.io/delete-protection"
POD_CLAIM_ANN = "resource.kubernetes.io/pod-claim-name"


class Client:
    def __init__(self, url, ctx, token):
        self.url = url.rstrip("/")
        self.ctx = ctx
        self.token = token

    def call(self, path, method="GET", body=None, ctype="application/json"):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            req.add_header("Content-Type", ctype)
        with urllib.request.urlopen(req, context=self.ctx, timeout=10) as r:
            return json.loads(r.read() or b"{}")

    def get_or_none(self, path):
        try:
            return self.call(path)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise


def say(*words):
    print(" ".join(words), flush=True)


def is_done(pod):
    """kube's isPodDone: terminal phase, or deleted before being bound."""
    phase = pod.get("status", {}).get("phase")
    md, spec = pod.get("metadata", {}), pod.get("spec", {})
    return phase in ("Succeeded", "Failed") or (bool(md.get("deletionTimestamp")) and not spec.get("nodeName"))


def owning_pod(claim):
    for o in claim.get("metadata", {}).get("ownerReferences") or []:
        if o.get("controller") and o.get("apiVersion") == "v1" and o.get("kind") == "Pod":
            return o.get("name"), o.get("uid")
    return None, None


# ---------------------------------------------------------------------------
# pods: claims from templates


def claim_from_template(pod, pc, tmpl):
    md = pod["metadata"]
    tmeta = tmpl.get("spec", {}).get("metadata") or {}
    ann = dict(tmeta.get("annotations") or {})
    ann[POD_CLAIM_ANN] = pc["name"]
    base = md["name"] + "-" + pc["name"] + "-"
    if len(base) > 57:  # kube truncates both parts, proportionally
        base = md["name"][: len(md["name"]) * 57 // len(base)] + "-" + pc["name"][: len(pc["name"]) * 57 // len(base)]
    meta = {"generateName": base, "namespace": md["namespace"], "annotations": ann,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": md["name"], "uid": md["uid"],
                                 "controller": True, "blockOwnerDeletion": True}]}
    if tmeta.get("labels"):
        meta["labels"] = dict(tmeta["labels"])
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
            "spec": tmpl.get("spec", {}).get("spec", {})}


def sync_pod(cl, pod, claims):
    md, spec = pod["metadata"], pod.get("spec", {})
    if is_done(pod) or md.get("deletionTimestamp"):
        return
    ns = md["namespace"]
    have = {s.get("name"): s.get("resourceClaimName") for s in pod.get("status", {}).get("resourceClaimStatuses") or []}
    new = []
    for pc in spec.get("resourceClaims") or []:
        tname = pc.get("resourceClaimTemplateName")
        if not tname:
            continue
        known = have.get(pc["name"])
        if known and any(c["metadata"]["name"] == known and owning_pod(c)[1] == md["uid"] for c in claims):
            continue
        found = [c for c in claims if owning_pod(c)[1] == md["uid"]
                 and (c["metadata"].get("annotations") or {}).get(POD_CLAIM_ANN) == pc["name"]]
        if found:
            name = found[0]["metadata"]["name"]
        else:
            tmpl = cl.get_or_none("%s/namespaces/%s/resourceclaimtemplates/%s" % (API, ns, tname))
            if tmpl is None:
                continue  # kube: an error, retried; the pod waits
            made = cl.call("%s/namespaces/%s/resourceclaims" % (API, ns), "POST", claim_from_template(pod, pc, tmpl))
            name = made["metadata"]["name"]
            claims.append(made)
            say("CREATED", "%s/%s" % (ns, name), "pod=" + md["name"], "claim=" + pc["name"])
        new.append({"name": pc["name"], "resourceClaimName": name})
    if new:
        cl.call("/api/v1/namespaces/%s/pods/%s/status" % (ns, md["name"]), "PATCH",
                {"status": {"resourceClaimStatuses": new}}, "application/strategic-merge-patch+json")
        say("STATUS", "%s/%s" % (ns, md["name"]))


# ---------------------------------------------------------------------------
# claims: reservations, deallocation, deletion


def pod_now(cl, ns, name):
    """The pod as the API server has it now (None: gone)."""
    return cl.get_or_none("/api/v1/namespaces/%s/pods/%s" % (ns, name))


def still_valid(cl, ns, ref, pods):
    if ref.get("apiGroup") or ref.get("resource") != "pods":
        return True  # kube: an error for other kinds; left as it is here
    pod = pods.get((ns, ref.get("name"))) or pod_now(cl, ns, ref.get("name"))
    return pod is not None and pod["metadata"].get("uid") == ref.get("uid") and not is_done(pod)


def sync_claim(cl, claim, pods):
    md = claim["metadata"]
    ns, name = md["namespace"], md["name"]
    path = "%s/namespaces/%s/resourceclaims/%s" % (API, ns, name)
    status = claim.get("status") or {}
    reserved = status.get("reservedFor") or []
    valid = [r for r in reserved if still_valid(cl, ns, r, pods)]
    has_fin = FINALIZER in (md.get("finalizers") or [])
    if len(valid) < len(reserved):
        claim["status"] = dict(status, reservedFor=valid)
        if not valid:
            claim["status"].pop("reservedFor")
            if has_fin:
                claim["status"].pop("allocation", None)
        claim = cl.call(path + "/status", "PUT", claim)
        say("UNRESERVED", "%s/%s" % (ns, name),
            "uids=" + ",".join(r.get("uid", "") for r in reserved if r not in valid))
        if not valid and has_fin:
            say("DEALLOCATED", "%s/%s" % (ns, name))
        if has_fin and not (claim.get("status") or {}).get("allocation"):
            claim["metadata"]["finalizers"] = [f for f in claim["metadata"].get("finalizers") or [] if f != FINALIZER]
            claim = cl.call(path, "PUT", claim)
            say("UNFINALIZED", "%s/%s" % (ns, name))
    elif has_fin and md.get("deletionTimestamp") and not valid:
        if status.get("allocation"):
            claim["status"] = {k: v for k, v in status.items() if k != "allocation"}
            claim = cl.call(path + "/status", "PUT", claim)
            say("DEALLOCATED", "%s/%s" % (ns, name))
        claim["metadata"]["finalizers"] = [f for f in claim["metadata"].get("finalizers") or [] if f != FINALIZER]
        claim = cl.call(path, "PUT", claim)
        say("UNFINALIZED", "%s/%s" % (ns, name))
    if valid or claim["metadata"].get("deletionTimestamp"):
        return
    pname, puid = owning_pod(claim)
    if not pname:
        return
    pod = pods.get((ns, pname))
    if pod is None:
        pod = pod_now(cl, ns, pname)  # the garbage collector's part: sure it is gone
    if pod is None or pod["metadata"].get("uid") != puid or is_done(pod):
        try:
            cl.call(path, "DELETE", {"kind": "DeleteOptions", "apiVersion": "v1",
                                     "preconditions": {"uid": claim["metadata"]["uid"]}})
            say("DELETED", "%s/%s" % (ns, name))
        except urllib.error.HTTPError as e:
            if e.code not in (404, 409):
                raise


def tick(cl):
    pods_list = cl.call("/api/v1/pods").get("items", [])
    pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods_list}
    claims = cl.call(API + "/resourceclaims").get("items", [])
    for pod in pods_list:
        try:
            sync_pod(cl, pod, claims)
        except urllib.error.HTTPError as e:
            if e.code not in (404, 409):
                print("error pod %s: %s %s" % (pod["metadata"]["name"], e.code, e.read()[:300]), file=sys.stderr, flush=True)
    for claim in claims:
        try:
            sync_claim(cl, claim, pods)
        except urllib.error.HTTPError as e:
            if e.code not in (404, 409):  # 409: changed meanwhile, next round
                print("error claim %s: %s %s" % (claim["metadata"]["name"], e.code, e.read()[:300]), file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--interval", type=float, default=0.3)
    a = ap.parse_args()
    if not a.url.startswith("https://127.0.0.1:"):
        sys.exit("fake_claim_controller: --url must be https://127.0.0.1:PORT")
    token = os.environ.get("FAKE_CLAIM_TOKEN", "")
    if not token:
        sys.exit("fake_claim_controller: FAKE_CLAIM_TOKEN is empty")
    cl = Client(a.url, ssl.create_default_context(cafile=a.ca), token)
    say("listening", a.url)
    while True:
        try:
            tick(cl)
        except (urllib.error.URLError, OSError, ValueError, KeyError) as e:
            print("round failed: %s" % e, file=sys.stderr, flush=True)
        time.sleep(a.interval)


if __name__ == "__main__":
    main()
