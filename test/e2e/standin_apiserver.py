#!/usr/bin/env python3
"""standin_apiserver.py -- a STAND-IN for the pod handling of a 1.33-1.35
kube-apiserver, for test/e2e/t_standin.sh. It is not a kube-apiserver: it is
an HTTPS proxy in front of the suite's real kube-apiserver v1.20, which drops
the pod fields it does not know. The stand-in keeps those fields itself and
plays kube-apiserver's rules for them where a scheduler can see the
difference; everything else is the v1.20 server's answer.

Fields it keeps (an overlay per pod, keyed by namespace/name and the uid the
upstream gave the pod):
  spec.schedulingGates, spec.resources (pod-level), spec.resourceClaims,
  spec.{containers,initContainers}[].restartPolicy / .resizePolicy /
  .resources.claims, and from PATCH .../pods/NAME/status:
  status.{containerStatuses,initContainerStatuses}[].allocatedResources /
  .allocatedResourcesStatus / .resources, status.resize and
  status.resourceClaimStatuses (DRA: the claims kube-controller-manager's
  resourceclaim controller made from templates; fake_claim_controller.py
  plays it in t_dra.sh).
Every pod it serves (GET, LIST, each WATCH event, the answers of POST, PATCH,
PUT, DELETE) gets its overlay merged back in, for every client.

Rules it plays (kube 1.33-1.35):
  - creation with gates: the condition PodScheduled=False reason
    SchedulingGated "Scheduling is blocked due to non-empty scheduling gates"
    (pkg/registry/core/pod/strategy.go, applySchedulingGatedCondition), shown
    until the pod has a PodScheduled condition of its own (the API server
    never clears it; the Binding or the scheduler replaces it);
  - gates are validated at creation (no duplicates, no nodeName beside them)
    and may only be removed afterwards: adding one is 422 "only deletion is
    allowed, but found new scheduling gate" (validation.go,
    validateOnlyDeletedSchedulingGates). A PATCH of the gates (merge,
    strategic merge with kube's merge key "name", JSON patch) is applied here
    and the upstream gets an annotation bump (standin.test/revision) instead,
    so that watchers see a MODIFIED event;
  - a Binding of a pod that still has gates is refused with 409 "Operation
    cannot be fulfilled on pods/binding "NAME": pod NAME has non-empty
    .spec.schedulingGates" (pkg/registry/core/pod/storage/storage.go);
  - resize status written through pods/status (a test plays the kubelet) is
    kept and shown, with the same annotation bump: a merge or strategic
    patch's fields of a container status are merged into the overlay's for
    the container of that name;
  - status.resourceClaimStatuses written through pods/status is kept and
    shown, with the same bump: a merge patch replaces the list (null clears
    it), a strategic merge patch merges by "name" (kube's patchMergeKey; an
    item replaces the one of its name, "$patch": "delete" removes it).
Not played: PUT keeps the overlay as it was; a JSON patch of pods/status is
forwarded without looking at it; clients must authenticate with a bearer
token (TLS ends here, so a client certificate cannot reach the upstream).

It also keeps spec.completionMode of batch/v1 Jobs (Indexed Jobs: alpha in
1.21, GA in 1.24; v1.20 drops the field): the value sent at creation is
merged back into every Job and JobList it serves (GET, LIST, watch events),
for the Job of the uid the upstream gave it. Nothing else of Jobs is played.

Every request is logged to --log as "epoch_s method path status" (status
"standin-409" / "standin-422" when the stand-in answered itself).

    standin_apiserver.py --listen-port P --upstream https://127.0.0.1:6443 \\
        --cert standin.crt --key standin.key --ca ca.crt --log req.log
"""
import copy
import datetime
import http
import json
import re
import ssl
import threading
import time
from urllib.parse import unquote, urlparse

import tlsproxy

SPEC_KEYS = ("schedulingGates", "resources", "resourceClaims")
CONTAINER_KINDS = ("containers", "initContainers")
CONTAINER_PATHS = (("restartPolicy",), ("resizePolicy",), ("resources", "claims"))
STATUS_KINDS = ("containerStatuses", "initContainerStatuses")
STATUS_KEYS = ("allocatedResources", "allocatedResourcesStatus", "resources")
BUMP = "standin.test/revision"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"

JOB_PATH = re.compile(r"^/apis/batch/v1/(?:watch/)?(?:namespaces/([^/]+)/)?jobs(?:/([^/]+)(/status)?)?$")
JOB_FIELDS = ("completionMode",)  # spec fields of a batch/v1 Job that v1.20 drops
POD_PATH = re.compile(r"^/api/v1/(?:watch/)?(?:namespaces/([^/]+)/)?pods(?:/([^/]+)(/status)?)?$")
BINDING_PATH = re.compile(r"^/api/v1/namespaces/([^/]+)/(?:pods/([^/]+)/binding|bindings)$")
QUALIFIED = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                       r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
DROP_FROM_UPSTREAM = ("content-length", "transfer-encoding", "connection", "content-encoding", "keep-alive")


class ApiError(Exception):
    """An answer of the stand-in's own: code, message, optional Status details."""

    def __init__(self, code, message, details=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details


def invalid(name, errs):
    """422 as kube-apiserver words a failed validation of Pod NAME."""
    causes = [{"reason": "FieldValue" + kind, "message": "%s: %s" % (kind_text, msg), "field": fld}
              for fld, kind, kind_text, msg in errs]
    text = ["%s: %s: %s" % (fld, kind_text, msg) for fld, _, kind_text, msg in errs]
    joined = text[0] if len(text) == 1 else "[" + ", ".join(text) + "]"
    return ApiError(422, 'Pod "%s" is invalid: %s' % (name, joined),
                    {"name": name, "kind": "Pod", "causes": causes})


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------
# the overlay


def get_path(obj, path):
    for k in path:
        if not isinstance(obj, dict) or k not in obj:
            return None
        obj = obj[k]
    return obj


def set_path(obj, path, value):
    for k in path[:-1]:
        nxt = obj.get(k)
        if not isinstance(nxt, dict):
            nxt = obj[k] = {}
        obj = nxt
    obj[path[-1]] = value


def by_name(items):
    """{name: item} of a list of objects with a string name; bad items are skipped."""
    out = {}
    for it in items if isinstance(items, list) else []:
        if isinstance(it, dict) and isinstance(it.get("name"), str):
            out[it["name"]] = it
    return out


def gate_names(gates):
    return [g.get("name") for g in gates] if isinstance(gates, list) else []


def spec_overlay(pod):
    """The newer spec fields of a pod as its creator sent it."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    ov = {"spec": {k: copy.deepcopy(spec[k]) for k in SPEC_KEYS if spec.get(k) is not None},
          "ctr": {}, "st": {}, "resize": None, "rcs": None, "cond": None, "uid": None}
    for kind in CONTAINER_KINDS:
        for name, c in by_name(spec.get(kind)).items():
            keep = {p: copy.deepcopy(get_path(c, p)) for p in CONTAINER_PATHS if get_path(c, p) is not None}
            if keep:
                ov["ctr"].setdefault(kind, {})[name] = keep
    if ov["spec"].get("schedulingGates"):
        ov["cond"] = {"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                      "lastTransitionTime": now_rfc3339(), "reason": "SchedulingGated", "message": GATED_MESSAGE}
    return ov


def has_pod_scheduled(status):
    conds = status.get("conditions") if isinstance(status.get("conditions"), list) else []
    return any(isinstance(c, dict) and c.get("type") == "PodScheduled" for c in conds)


def merge_overlay(pod, ov):
    """pod (as the upstream serves it) with the overlay ov merged in."""
    if not isinstance(pod.get("spec", {}), dict) or not isinstance(pod.get("status", {}), dict):
        return pod  # not a pod's shape: served as it is
    spec = pod.setdefault("spec", {})
    for k in SPEC_KEYS:
        spec.pop(k, None)
        if ov["spec"].get(k):
            spec[k] = copy.deepcopy(ov["spec"][k])
    for kind, named in ov["ctr"].items():
        for name, c in by_name(spec.get(kind)).items():
            for p, v in named.get(name, {}).items():
                set_path(c, p, copy.deepcopy(v))
    status = pod.setdefault("status", {})
    for kind, named in ov["st"].items():
        for name, cs in by_name(status.get(kind)).items():
            cs.update(copy.deepcopy(named.get(name, {})))
    if ov["resize"] is not None:
        status["resize"] = ov["resize"]
    if ov.get("rcs"):
        status["resourceClaimStatuses"] = copy.deepcopy(ov["rcs"])
    if ov["cond"] is not None and not has_pod_scheduled(status) and isinstance(status.get("conditions", []), list):
        status.setdefault("conditions", []).append(copy.deepcopy(ov["cond"]))
    return pod


class Overlays:
    """The overlays by (namespace, name); an overlay whose uid is known only
    applies to the pod of that uid (a pod deleted and made again under the
    same name gets its own)."""

    def __init__(self):
        self.mu = threading.Lock()
        self.pods = {}
        self.jobs = {}  # (namespace, name) -> {"uid": ..., "spec": {completionMode}}

    def put_job(self, key, uid, spec):
        with self.mu:
            if spec:
                self.jobs[key] = {"uid": uid, "spec": spec}
            else:
                self.jobs.pop(key, None)

    def job_overlay(self, obj):
        md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        with self.mu:
            ov = copy.deepcopy(self.jobs.get((md.get("namespace", ""), md.get("name", ""))))
        if ov is not None and ov["uid"] == md.get("uid") and isinstance(obj.get("spec"), dict):
            obj["spec"].update(ov["spec"])

    def get(self, key):
        with self.mu:
            ov = self.pods.get(key)
            return copy.deepcopy(ov) if ov is not None else None

    def put(self, key, ov):
        """Sets (None: removes) the overlay of key; returns the one it replaced."""
        with self.mu:
            old = self.pods.pop(key, None)
            if ov is not None:
                self.pods[key] = ov
            return old

    def set_uid(self, key, uid):
        with self.mu:
            if key in self.pods:
                self.pods[key]["uid"] = uid

    def rewrite(self, obj):
        """A Pod, PodList, Table of Pods or watch event with the overlays merged in."""
        if not isinstance(obj, dict):
            return obj
        kind = obj.get("kind")
        if kind == "Job":
            self.job_overlay(obj)
        elif kind == "JobList" and isinstance(obj.get("items"), list):
            for it in obj["items"]:
                if isinstance(it, dict):
                    self.job_overlay(it)
        elif kind == "Pod":
            md = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
            ov = self.get((md.get("namespace", ""), md.get("name", "")))
            if ov is not None and ov["uid"] in (None, md.get("uid")):
                merge_overlay(obj, ov)
        elif kind == "PodList" and isinstance(obj.get("items"), list):
            for it in obj["items"]:
                if isinstance(it, dict):
                    it.setdefault("kind", "Pod")
                    self.rewrite(it)
                    it.pop("kind", None)
        elif kind == "Table" and isinstance(obj.get("rows"), list):
            for row in obj["rows"]:
                if isinstance(row, dict):
                    self.rewrite(row.get("object"))
        elif "type" in obj and isinstance(obj.get("object"), dict):
            self.rewrite(obj["object"])
        return obj


# ---------------------------------------------------------------------------
# gates: patches and validation


def validate_gates_create(pod, name):
    gates = get_path(pod, ("spec", "schedulingGates"))
    if gates is None:
        return
    if not isinstance(gates, list) or not all(isinstance(g, dict) and isinstance(g.get("name"), str) for g in gates):
        raise invalid(name, [("spec.schedulingGates", "Invalid", "Invalid value",
                              "must be a list of objects with a string name")])
    errs, seen = [], set()
    for i, g in enumerate(gate_names(gates)):
        if not QUALIFIED.match(g) or len(g.split("/")[-1]) > 63:
            errs.append(("spec.schedulingGates[%d]" % i, "Invalid", "Invalid value",
                         '"%s": must be a qualified name' % g))
        if g in seen:
            errs.append(("spec.schedulingGates[%d]" % i, "Duplicate", "Duplicate value", '"%s"' % g))
        seen.add(g)
    if gates and get_path(pod, ("spec", "nodeName")):
        errs.append(("spec.nodeName", "Forbidden", "Forbidden",
                     "cannot be set until all schedulingGates have been cleared"))
    if errs:
        raise invalid(name, errs)


def validate_only_deleted(new, old, name):
    known = set(gate_names(old))
    errs = [("spec.schedulingGates[%d].name" % i, "Forbidden", "Forbidden",
             "only deletion is allowed, but found new scheduling gate '%s'" % g)
            for i, g in enumerate(gate_names(new)) if g not in known]
    if errs:
        raise invalid(name, errs)


def smp_gates(patch, old):
    """Strategic merge of the gate list (patchStrategy merge, key "name")."""
    if patch is None:
        return []
    if not isinstance(patch, list):
        raise ApiError(400, "spec.schedulingGates: a strategic merge patch wants a list")
    items = [p for p in patch if not (isinstance(p, dict) and p.get("$patch") == "replace")]
    if len(items) != len(patch):
        return [copy.deepcopy(p) for p in items]
    out = copy.deepcopy(old)
    for p in items:
        if not isinstance(p, dict) or not isinstance(p.get("name"), str):
            raise ApiError(400, "spec.schedulingGates: each item wants a string name")
        rest = [g for g in out if g.get("name") != p["name"]]
        if p.get("$patch") == "delete":
            out = rest
        elif len(rest) == len(out):
            out.append({k: v for k, v in p.items() if not k.startswith("$")})
    return out


def pointer(path):
    if not path.startswith("/"):
        raise ApiError(422, "json patch: bad path %r" % path)
    return [unquote(t).replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def json_patch_op(doc, op):
    """One RFC 6902 add/remove/replace/test on doc (the gates only)."""
    toks = pointer(op.get("path", ""))
    parent = doc
    for t in toks[:-1]:
        parent = parent[int(t)] if isinstance(parent, list) else parent[t]
    last, kind = toks[-1], op.get("op")
    if isinstance(parent, list):
        idx = len(parent) if last == "-" else int(last)
        if kind == "add":
            parent.insert(idx, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            del parent[idx]
        elif kind == "replace":
            parent[idx] = copy.deepcopy(op.get("value"))
        elif kind == "test" and parent[idx] != op.get("value"):
            raise ApiError(422, "json patch: test operation failed at %s" % op.get("path"))
    else:
        if kind in ("remove", "replace", "test") and last not in parent:
            raise ApiError(422, "jsonpatch %s operation does not apply: doc is missing path: %s" % (kind, op.get("path")))
        if kind in ("add", "replace"):
            parent[last] = copy.deepcopy(op.get("value"))
        elif kind == "remove":
            del parent[last]
        elif kind == "test" and parent[last] != op.get("value"):
            raise ApiError(422, "json patch: test operation failed at %s" % op.get("path"))


def json_patch_gates(ops, old):
    """(touched, new gates, the ops left for the upstream)."""
    if not isinstance(ops, list) or not all(isinstance(o, dict) for o in ops):
        raise ApiError(400, "json patch: want a list of operations")
    mine = [o for o in ops if str(o.get("path", "")).startswith("/spec/schedulingGates")]
    if not mine:
        return False, old, ops
    for o in mine:
        if o.get("op") not in ("add", "remove", "replace", "test"):
            raise ApiError(422, "json patch: the stand-in plays add, remove, replace and test on the gates")
    doc = {"spec": {"schedulingGates": copy.deepcopy(old)} if old else {}}
    try:
        for o in mine:
            json_patch_op(doc, o)
    except (KeyError, IndexError, ValueError, TypeError, AttributeError) as e:
        raise ApiError(422, "json patch on spec.schedulingGates does not apply: %s" % e) from e
    new = doc["spec"].get("schedulingGates") or []
    return True, new, [o for o in ops if o not in mine]


def split_gate_patch(ctype, body, old):
    """(touched, new gates, the patch left for the upstream or None)."""
    if ctype == "application/json-patch+json":
        touched, new, rest = json_patch_gates(body, old)
        return touched, new, (rest or None)
    spec = body.get("spec") if isinstance(body, dict) else None
    if not isinstance(spec, dict) or "schedulingGates" not in spec:
        return False, old, body
    gates = spec.pop("schedulingGates")
    spec.pop("$setElementOrder/schedulingGates", None)
    if ctype == "application/strategic-merge-patch+json":
        new = smp_gates(gates, old)
    elif gates is None:
        new = []
    elif isinstance(gates, list):
        new = copy.deepcopy(gates)
    else:
        raise ApiError(400, "spec.schedulingGates: want a list or null")
    if not spec:
        body.pop("spec")
    return True, new, (body or None)


def smp_claim_statuses(patch, old):
    """Strategic merge of status.resourceClaimStatuses (patchStrategy
    merge,retainKeys, key "name": an item replaces the one of its name)."""
    if patch is None:
        return []
    if not isinstance(patch, list):
        raise ApiError(400, "status.resourceClaimStatuses: a strategic merge patch wants a list")
    items = [p for p in patch if not (isinstance(p, dict) and p.get("$patch") == "replace")]
    out = [] if len(items) != len(patch) else copy.deepcopy(old or [])
    for p in items:
        if not isinstance(p, dict) or not isinstance(p.get("name"), str):
            raise ApiError(400, "status.resourceClaimStatuses: each item wants a string name")
        out = [c for c in out if c.get("name") != p["name"]]
        if p.get("$patch") != "delete":
            out.append({k: v for k, v in p.items() if not k.startswith("$")})
    return out


def split_status_patch(body):
    """(the fields of a pods/status merge or strategic patch the stand-in
    keeps: resize status and resourceClaimStatuses, the patch without them);
    None when there are none."""
    status = body.get("status") if isinstance(body, dict) else None
    if not isinstance(status, dict):
        return None, body
    found = {"st": {}, "resize": status.pop("resize", None) if "resize" in status else False,
             "rcs": status.pop("resourceClaimStatuses", None) if "resourceClaimStatuses" in status else False}
    status.pop("$setElementOrder/resourceClaimStatuses", None)
    for kind in STATUS_KINDS:
        for name, cs in by_name(status.get(kind)).items():
            keep = {k: cs.pop(k) for k in STATUS_KEYS if k in cs}
            if keep:
                found["st"].setdefault(kind, {})[name] = keep
    if not found["st"] and found["resize"] is False and found["rcs"] is False:
        return None, body
    return found, body


# ---------------------------------------------------------------------------
# HTTP


class Response:
    def __init__(self, code, headers, body):
        self.code = code
        self.headers = headers
        self.body = body

    def ok(self):
        return 200 <= self.code < 300

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None


class Reader:
    """An upstream response read from its socket: head, then the body
    without its chunked framing."""

    def __init__(self, sock):
        self.s = sock
        self.buf = b""

    def fill(self):
        chunk = self.s.recv(65536)
        self.buf += chunk
        return bool(chunk)

    def line(self):
        while b"\r\n" not in self.buf:
            if not self.fill():
                raise OSError("upstream closed")
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln.decode("latin-1")

    def exact(self, n):
        while len(self.buf) < n:
            if not self.fill():
                raise OSError("upstream closed")
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def head(self):
        code = int(self.line().split(" ", 2)[1])
        headers = []
        while True:
            ln = self.line()
            if not ln:
                return code, headers
            headers.append(ln)

    def pieces(self, headers):
        names = {h.partition(":")[0].strip().lower(): h.partition(":")[2].strip().lower() for h in headers}
        if "chunked" in names.get("transfer-encoding", ""):
            while True:
                n = int(self.line().split(";")[0], 16)
                if n == 0:
                    return
                yield self.exact(n)
                self.line()
        elif "content-length" in names:
            yield self.exact(int(names["content-length"]))
        else:
            if self.buf:
                yield self.buf
                self.buf = b""
            while self.fill():
                yield self.buf
                self.buf = b""


class Standin:
    def __init__(self, a):
        self.up = urlparse(a.upstream)
        self.srv_ctx = tlsproxy.server_context(a.cert, a.key)
        self.up_ctx = ssl.create_default_context(cafile=a.ca)
        self.log = tlsproxy.RequestLog(a.log)
        self.overlays = Overlays()
        self.rev = 0
        self.rev_mu = threading.Lock()

    def serve(self, port):
        tlsproxy.serve("standin_apiserver", port, self.up.geturl(), self.srv_ctx, self.one_request)

    # -- upstream

    @staticmethod
    def headers_for(req, body, ctype=None):
        out = [h for h in req.headers
               if h.partition(":")[0].strip().lower() not in ("content-length", "accept-encoding", "content-type")]
        if ctype is None:
            ctype = req.header("content-type")
        if ctype:
            out.append("Content-Type: " + ctype)
        out.append("Accept-Encoding: identity")
        out.append("Content-Length: %d" % len(body))
        return out

    def open_upstream(self, method, target, headers, body):
        u = tlsproxy.connect_upstream(self.up, self.up_ctx)
        u.sendall(tlsproxy.request_bytes(method, target, headers, body))
        return u

    def roundtrip(self, req, method, target, body, ctype=None):
        u = self.open_upstream(method, target, self.headers_for(req, body, ctype), body)
        try:
            r = Reader(u)
            code, headers = r.head()
            return Response(code, headers, b"".join(r.pieces(headers)))
        finally:
            u.close()

    def bump(self, req, ns, name):
        """A metadata change the v1.20 server stores, so that every watcher
        gets a MODIFIED event carrying the overlay's new state."""
        with self.rev_mu:
            self.rev += 1
            rev = self.rev
        body = json.dumps({"metadata": {"annotations": {BUMP: str(rev)}}}).encode()
        return self.roundtrip(req, "PATCH", "/api/v1/namespaces/%s/pods/%s" % (ns, name), body,
                              "application/merge-patch+json")

    # -- client

    def relay(self, c, resp, rewrite=True):
        body = resp.body
        if rewrite and resp.body:
            obj = resp.json()
            if obj is not None:
                body = json.dumps(self.overlays.rewrite(obj)).encode()
        keep = [h for h in resp.headers if h.partition(":")[0].strip().lower() not in DROP_FROM_UPSTREAM]
        c.sendall(("HTTP/1.1 %d %s\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n"
                   % (resp.code, phrase(resp.code), "".join(h + "\r\n" for h in keep), len(body))).encode("latin-1")
                  + body)

    def refuse(self, c, t0, req, err):
        tlsproxy.send_json(c, err.code, tlsproxy.status_body(err.code, err.message, err.details))
        self.log.record(t0, req.method, req.path, "standin-%d" % err.code)

    def one_request(self, c):
        req = tlsproxy.read_request(c)
        if req is None:
            return False
        t0 = time.time()
        try:
            status = self.route(c, req)
        except ApiError as e:
            self.refuse(c, t0, req, e)
            return False
        except (OSError, ssl.SSLError) as e:
            tlsproxy.send_json(c, 502, tlsproxy.status_body(502, "standin_apiserver: upstream: %s" % e))
            status = "upstream-down"
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
            # a request or an upstream answer of a shape nothing here expects
            msg = "standin_apiserver: cannot handle %s %s: %s: %s" % (req.method, req.path, type(e).__name__, e)
            tlsproxy.send_json(c, 400, tlsproxy.status_body(400, msg))
            status = "standin-400"
        self.log.record(t0, req.method, req.path, status)
        return False  # one request per connection, as the upstream's

    def route(self, c, req):
        m = BINDING_PATH.match(req.path)
        if m and req.method == "POST":
            return self.binding(c, req, unquote(m.group(1)), m.group(2))
        m = JOB_PATH.match(req.path)
        if m:
            return self.job_request(c, req, m)
        m = POD_PATH.match(req.path)
        if not m:
            return self.passthrough(c, req)
        ns, name, sub = (unquote(g) if g else g for g in m.groups())
        if re.search(r"[?&]watch=(1|true)", req.target) or req.path.startswith("/api/v1/watch/"):
            return self.watch(c, req)
        if req.method == "POST" and name is None and ns:
            return self.create(c, req, ns)
        if req.method == "PATCH" and name and not sub:
            return self.patch_spec(c, req, ns, name)
        if req.method == "PATCH" and name and sub:
            return self.patch_status(c, req, ns, name)
        resp = self.roundtrip(req, req.method, req.target, req.body)
        self.relay(c, resp)
        return resp.code

    def job_request(self, c, req, m):
        """Jobs: completionMode kept at creation, merged into what is served."""
        ns, name = (unquote(g) if g else g for g in m.groups()[:2])
        if re.search(r"[?&]watch=(1|true)", req.target) or "/watch/" in req.path:
            return self.watch(c, req)
        spec = {}
        if req.method == "POST" and name is None and ns:
            try:
                body = json.loads(req.body)
            except ValueError:
                body = None
            bspec = body.get("spec") if isinstance(body, dict) else None
            if isinstance(bspec, dict):
                spec = {k: bspec[k] for k in JOB_FIELDS if k in bspec}
        resp = self.roundtrip(req, req.method, req.target, req.body)
        if spec and resp.ok():
            obj = resp.json()
            md = obj.get("metadata", {}) if isinstance(obj, dict) else {}
            if isinstance(md, dict) and md.get("name"):
                self.overlays.put_job((ns, md["name"]), md.get("uid"), spec)
        self.relay(c, resp)
        return resp.code

    def passthrough(self, c, req):
        """Not a pod: the upstream's answer as it comes (watches included)."""
        hs = [h for h in req.headers if h.partition(":")[0].strip().lower() != "content-length"]
        hs.append("Content-Length: %d" % len(req.body))
        u = self.open_upstream(req.method, req.target, hs, req.body)
        try:
            return tlsproxy.pump(u, c)
        finally:
            u.close()

    def watch(self, c, req):
        """Each event line of the upstream's stream, rewritten, as one chunk."""
        body = req.body
        u = self.open_upstream(req.method, req.target, self.headers_for(req, body), body)
        try:
            r = Reader(u)
            code, headers = r.head()
            keep = [h for h in headers if h.partition(":")[0].strip().lower() not in DROP_FROM_UPSTREAM]
            c.sendall(("HTTP/1.1 %d %s\r\n%sTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                       % (code, phrase(code), "".join(h + "\r\n" for h in keep))).encode("latin-1"))
            pending = b""
            for piece in r.pieces(headers):
                pending += piece
                while b"\n" in pending:
                    ln, pending = pending.split(b"\n", 1)
                    self.send_chunk(c, self.rewrite_line(ln) + b"\n")
            if pending:
                self.send_chunk(c, self.rewrite_line(pending))
            c.sendall(b"0\r\n\r\n")
        except OSError:
            code = "cut"
        finally:
            u.close()
        return code

    def rewrite_line(self, ln):
        try:
            obj = json.loads(ln)
        except ValueError:
            return ln
        return json.dumps(self.overlays.rewrite(obj)).encode()

    @staticmethod
    def send_chunk(c, data):
        if data:
            c.sendall(b"%x\r\n" % len(data) + data + b"\r\n")

    # -- the rules

    def binding(self, c, req, ns, name):
        if name is None:
            try:
                name = json.loads(req.body)["metadata"]["name"]
            except (ValueError, KeyError, TypeError):
                name = ""
        name = unquote(name)
        ov = self.overlays.get((ns, name))
        if ov is not None and ov["spec"].get("schedulingGates"):
            raise ApiError(409, 'Operation cannot be fulfilled on pods/binding "%s": pod %s has non-empty '
                           '.spec.schedulingGates' % (name, name), {"name": name, "kind": "pods/binding"})
        resp = self.roundtrip(req, req.method, req.target, req.body)
        self.relay(c, resp, rewrite=False)
        return resp.code

    def create(self, c, req, ns):
        try:
            pod = json.loads(req.body)
        except ValueError:
            pod = None
        if not isinstance(pod, dict):
            resp = self.roundtrip(req, req.method, req.target, req.body)
            self.relay(c, resp)
            return resp.code
        md = pod.get("metadata") if isinstance(pod.get("metadata"), dict) else {}
        name = md.get("name") if isinstance(md.get("name"), str) else ""
        validate_gates_create(pod, name)
        ov = spec_overlay(pod)
        # Set before the upstream answers: its watchers may see the pod first.
        prev = self.overlays.put((ns, name), ov) if name else None
        resp = self.roundtrip(req, req.method, req.target, req.body)
        obj = resp.json() if resp.ok() else None
        omd = obj.get("metadata", {}) if isinstance(obj, dict) else {}
        if resp.ok() and omd.get("name"):
            if not name:  # generateName: known from here on
                self.overlays.put((ns, omd["name"]), ov)
            self.overlays.set_uid((ns, omd["name"]), omd.get("uid"))
        elif name:
            self.overlays.put((ns, name), prev)
        self.relay(c, resp)
        return resp.code

    def patch_spec(self, c, req, ns, name):
        ctype = req.header("content-type").split(";")[0].strip()
        try:
            body = json.loads(req.body)
        except ValueError:
            body = None
        ov = self.overlays.get((ns, name))
        old = (ov["spec"].get("schedulingGates") or []) if ov else []
        touched, new, rest = split_gate_patch(ctype, body, old) if body is not None else (False, old, None)
        if not touched:
            resp = self.roundtrip(req, req.method, req.target, req.body)
            self.relay(c, resp)
            return resp.code
        validate_only_deleted(new, old, name)
        return self.apply_and_bump(c, req, ns, name, ctype, rest, lambda o: o["spec"].update(schedulingGates=new))

    def patch_status(self, c, req, ns, name):
        ctype = req.header("content-type").split(";")[0].strip()
        try:
            body = json.loads(req.body) if ctype != "application/json-patch+json" else None
        except ValueError:
            body = None
        found, rest = split_status_patch(body) if body is not None else (None, None)
        if found is None:
            resp = self.roundtrip(req, req.method, req.target, req.body)
            self.relay(c, resp)
            return resp.code

        def change(o):
            for kind, named in found["st"].items():
                for cname, keep in named.items():
                    o["st"].setdefault(kind, {}).setdefault(cname, {}).update(keep)
            if found["resize"] is not False:
                o["resize"] = found["resize"]
            if found["rcs"] is False:
                return
            if ctype == "application/strategic-merge-patch+json":
                o["rcs"] = smp_claim_statuses(found["rcs"], o.get("rcs"))
            elif found["rcs"] is None or isinstance(found["rcs"], list):
                o["rcs"] = copy.deepcopy(found["rcs"])
            else:
                raise ApiError(400, "status.resourceClaimStatuses: want a list or null")
        if rest == {"status": {}}:
            rest = None
        return self.apply_and_bump(c, req, ns, name, ctype, rest, change)

    def apply_and_bump(self, c, req, ns, name, ctype, rest, change):
        """The overlay changed by change(), the rest of the patch forwarded,
        then the bump; the overlay goes back when the upstream refuses."""
        key = (ns, name)
        ov = self.overlays.get(key) or spec_overlay({})
        before = copy.deepcopy(ov)
        change(ov)
        self.overlays.put(key, ov)
        if rest is not None:
            resp = self.roundtrip(req, req.method, req.target, json.dumps(rest).encode(), ctype)
            if not resp.ok():
                self.overlays.put(key, before)
                self.relay(c, resp)
                return resp.code
        resp = self.bump(req, quote_name(ns), quote_name(name))
        if not resp.ok():
            self.overlays.put(key, before)
        self.relay(c, resp)
        return resp.code


def phrase(code):
    try:
        return http.HTTPStatus(code).phrase
    except ValueError:
        return "Unknown"


def quote_name(s):
    # Kubernetes names need no escaping; anything else is refused upstream.
    return s if re.match(r"^[A-Za-z0-9._-]+$", s) else "invalid-name"


def main():
    a = tlsproxy.arg_parser(__doc__).parse_args()
    Standin(a).serve(a.listen_port)


if __name__ == "__main__":
    main()
