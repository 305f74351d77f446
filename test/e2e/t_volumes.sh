#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Volumes: VolumeBinding (bound PV affinity, unbound Immediate claims,
# WaitForFirstConsumer static matching, dynamic provisioning with
# allowedTopologies, PreBind's wait and its timeout), VolumeZone,
# NodeVolumeLimits (CSINode), pods racing for PVs (in one pool, and from two
# pool threads at once).
#
# No volume controller runs here: a small script (fake_pv_controller below)
# plays the PV controller's part. When it sees a PV whose claimRef names an
# unbound claim (written by the scheduler at PreBind) it binds them
# (claim's spec.volumeName, the bind-completed annotation, phases Bound);
# when it sees a claim of a class provisioned by "e2e.csi.io" with the
# volume.kubernetes.io/selected-node annotation, it creates a PV on that
# node and binds it. Claims labelled e2e-no-bind are left alone.
# Each case uses its own StorageClasses, so PVs of earlier cases (kept: their
# protection finalizers have no controller to remove them) never match.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=volumes/

BIND_TIMEOUT=8

fake_pv_controller() {
    cat >"$CP_WORK/pvctl.py" <<'PY'
import json, ssl, sys, time, urllib.request, urllib.error
api, ca, cert, key = sys.argv[1:5]
ctx = ssl.create_default_context(cafile=ca)
ctx.load_cert_chain(cert, key)

def req(method, path, body=None, ctype="application/merge-patch+json"):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(api + path, data=data, method=method, headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(r, context=ctx, timeout=10) as f:
            return json.load(f)
    except urllib.error.HTTPError as e:
        print(method, path, e.code, e.read()[:300], file=sys.stderr, flush=True)
    except Exception as e:  # the API server going away at the end
        print(method, path, e, file=sys.stderr, flush=True)
    return None

def bind(c, pv):
    ns, name = c["metadata"]["namespace"], c["metadata"]["name"]
    base = "/api/v1/namespaces/%s/persistentvolumeclaims/%s" % (ns, name)
    if req("PATCH", base, {"metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
                           "spec": {"volumeName": pv}}) is None:
        return
    req("PATCH", base + "/status", {"status": {"phase": "Bound"}})
    req("PATCH", "/api/v1/persistentvolumes/%s/status" % pv, {"status": {"phase": "Bound"}})
    print("bound", ns, name, "to", pv, flush=True)

def provision(c, node):
    m, s = c["metadata"], c["spec"]
    pv = "pvc-" + m["uid"]
    body = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
            "spec": {"capacity": {"storage": s["resources"]["requests"]["storage"]},
                     "accessModes": s.get("accessModes", ["ReadWriteOnce"]),
                     "storageClassName": s["storageClassName"],
                     "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": m["namespace"],
                                  "name": m["name"], "uid": m["uid"]},
                     "csi": {"driver": "e2e.csi.io", "volumeHandle": pv},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}}}
    if req("POST", "/api/v1/persistentvolumes", body, "application/json") is not None:
        print("provisioned", pv, "on", node, flush=True)
        bind(c, pv)

while True:
    pvs = (req("GET", "/api/v1/persistentvolumes") or {}).get("items", [])
    pvcs = (req("GET", "/api/v1/persistentvolumeclaims") or {}).get("items", [])
    classes = {c["metadata"]["name"]: c for c in
               (req("GET", "/apis/storage.k8s.io/v1/storageclasses") or {}).get("items", [])}
    for c in pvcs:
        m = c["metadata"]
        if c["spec"].get("volumeName") or (m.get("labels") or {}).get("e2e-no-bind"):
            continue
        mine = [p for p in pvs if (p["spec"].get("claimRef") or {}).get("uid") == m["uid"]]
        if mine:
            bind(c, mine[0]["metadata"]["name"])
            continue
        node = (m.get("annotations") or {}).get("volume.kubernetes.io/selected-node")
        cls = classes.get(c["spec"].get("storageClassName") or "")
        if node and cls and cls.get("provisioner") == "e2e.csi.io":
            provision(c, node)
    time.sleep(0.3)
PY
    python3 "$CP_WORK/pvctl.py" "$API_URL" "$CP_WORK/pki/ca.crt" "$CP_WORK/pki/admin.crt" "$CP_WORK/pki/admin.key" \
        >"$CP_WORK/pvctl.log" 2>&1 &
    _pid_record $! fake-pv-controller
}

# make_class NAME MODE PROVISIONER [ZONE...]: ZONEs become allowedTopologies on "zone".
make_class() {
    local name=$1 mode=$2 prov=$3 topo='[]'
    shift 3
    [ $# -gt 0 ] && topo=$(jq -cn --args '[{matchLabelExpressions: [{key: "zone", values: $ARGS.positional}]}]' "$@")
    api_post_json /apis/storage.k8s.io/v1/storageclasses "$(jq -cn --arg n "$name" --arg m "$mode" --arg p "$prov" \
        --argjson t "$topo" '{apiVersion: "storage.k8s.io/v1", kind: "StorageClass", metadata: {name: $n},
          provisioner: $p, volumeBindingMode: $m} + (if $t == [] then {} else {allowedTopologies: $t} end)')"
}

# make_pv NAME SIZE CLASS [affinity=KEY=VALUE] [label=KEY=VALUE] [claim=NAME] [csi=HANDLE]
# An Available PV (the status a PV controller would give it).
make_pv() {
    local name=$1 size=$2 class=$3 a spec labels='{}'
    shift 3
    spec=$(jq -cn --arg s "$size" --arg c "$class" \
        '{capacity: {storage: $s}, accessModes: ["ReadWriteOnce"], storageClassName: $c,
          hostPath: {path: "/tmp/e2e"}}')
    for a in "$@"; do
        case $a in
            affinity=*) a=${a#affinity=}
                spec=$(jq -c --arg k "${a%%=*}" --arg v "${a#*=}" '. + {nodeAffinity: {required: {nodeSelectorTerms:
                    [{matchExpressions: [{key: $k, operator: "In", values: [$v]}]}]}}}' <<<"$spec") ;;
            label=*) a=${a#label=}; labels=$(jq -c --arg k "${a%%=*}" --arg v "${a#*=}" '. + {($k): $v}' <<<"$labels") ;;
            claim=*) spec=$(jq -c --arg n "${a#claim=}" '. + {claimRef: {namespace: "default", name: $n}}' <<<"$spec") ;;
            csi=*) spec=$(jq -c --arg h "${a#csi=}" 'del(.hostPath) + {csi: {driver: "e2e.csi.io", volumeHandle: $h}}' <<<"$spec") ;;
            *) die "make_pv: bad argument '$a'" ;;
        esac
    done
    api_post_json /api/v1/persistentvolumes "$(jq -cn --arg n "$name" --argjson s "$spec" --argjson l "$labels" \
        '{apiVersion: "v1", kind: "PersistentVolume", metadata: {name: $n, labels: $l}, spec: $s}')" || return 1
    api_req PATCH "/api/v1/persistentvolumes/$name/status" -H 'Content-Type: application/merge-patch+json' \
        --data-binary '{"status":{"phase":"Available"}}' -o /dev/null -f
}

# make_pvc NAME SIZE CLASS [volume=PV] [nobind]: volume= makes it already bound.
make_pvc() {
    local name=$1 size=$2 class=$3 a extra='{}'
    shift 3
    for a in "$@"; do
        case $a in
            volume=*) extra=$(jq -c --arg v "${a#volume=}" '. * {spec: {volumeName: $v},
                metadata: {annotations: {"pv.kubernetes.io/bind-completed": "yes"}}}' <<<"$extra") ;;
            nobind) extra=$(jq -c '. * {metadata: {labels: {"e2e-no-bind": "1"}}}' <<<"$extra") ;;
            *) die "make_pvc: bad argument '$a'" ;;
        esac
    done
    api_post_json /api/v1/namespaces/default/persistentvolumeclaims "$(jq -cn --arg n "$name" --arg s "$size" \
        --arg c "$class" --argjson x "$extra" '{apiVersion: "v1", kind: "PersistentVolumeClaim",
          metadata: {name: $n, namespace: "default"}, spec: {accessModes: ["ReadWriteOnce"], storageClassName: $c,
          resources: {requests: {storage: $s}}}} * $x')"
}

# pvc_pod NAME CLAIM...: a pod using the claims.
pvc_pod() {
    local name=$1 vols
    shift
    vols=$(jq -cn --args '[$ARGS.positional | to_entries[] | {name: "v\(.key)", persistentVolumeClaim: {claimName: .value}}]' "$@")
    make_pod "$name" --cpu 100m --merge "$(jq -cn --argjson v "$vols" '{spec: {volumes: $v}}')"
}

three_nodes() {
    make_node n1 4 8Gi 0 110 zone=a topology.kubernetes.io/zone=a
    make_node n2 4 8Gi 0 110 zone=b topology.kubernetes.io/zone=b
    make_node n3 4 8Gi 0 110 zone=c topology.kubernetes.io/zone=c
}

pv_claim() { kc get pv "$1" -o jsonpath='{.spec.claimRef.name}'; }
expect_event() { # POD SUBSTRING
    # shellcheck disable=SC2034 # read by the command wait_until evals
    EXP_POD=$1 EXP_TEXT=$2
    wait_until 'events_for "$EXP_POD" default FailedScheduling | grep -qF -- "$EXP_TEXT"' 30 ||
        fail "no FailedScheduling event for $1 with: $2 (have: $(events_for "$1" default FailedScheduling | head -3))"
}

# A bound claim whose PV may only be used on n2.
case_bound_pv_affinity() {
    cp_reset
    three_nodes
    make_class bound-imm Immediate e2e.csi.io
    make_pv pv-bound 1Gi bound-imm affinity=kubernetes.io/hostname=n2 claim=c-bound
    make_pvc c-bound 1Gi bound-imm volume=pv-bound
    pvc_pod p-bound c-bound
    wait_until '[ "$(pod_node p-bound)" = n2 ]' 30 || fail "p-bound on '$(pod_node p-bound)', want n2"
}

# An unbound claim of an Immediate class: pending with kube's message.
case_immediate_unbound() {
    cp_reset
    three_nodes
    make_class imm Immediate e2e.csi.io
    make_pvc c-imm 1Gi imm nobind
    pvc_pod p-imm c-imm
    expect_event p-imm "0/3 nodes are available: 3 pod has unbound immediate PersistentVolumeClaims."
    [ -z "$(pod_node p-imm)" ] || fail "p-imm got bound"
    # A missing claim: kube's message too.
    pvc_pod p-missing nosuchclaim
    expect_event p-missing '0/3 nodes are available: 3 persistentvolumeclaim "nosuchclaim" not found.'
}

# WaitForFirstConsumer: the smallest fitting PV (8Gi: pv-a of zone a is too
# small, zone c has none, so zone b, where pv-b of 10Gi beats pv-big of
# 50Gi), claimRef written, bound by the controller, then the pod bound.
case_wffc_static() {
    cp_reset
    three_nodes
    make_class local WaitForFirstConsumer kubernetes.io/no-provisioner
    make_pv pv-a 5Gi local affinity=zone=a
    make_pv pv-b 10Gi local affinity=zone=b
    make_pv pv-big 50Gi local affinity=zone=b
    make_pvc c-wffc 8Gi local
    pvc_pod p-wffc c-wffc
    wait_until '[ "$(pod_node p-wffc)" = n2 ]' 30 || fail "p-wffc on '$(pod_node p-wffc)', want n2"
    [ "$(pv_claim pv-b)" = c-wffc ] || fail "pv-b claimRef is '$(pv_claim pv-b)'"
    [ -z "$(pv_claim pv-big)" ] || fail "pv-big was taken"
    [ "$(kc get pvc c-wffc -o jsonpath='{.spec.volumeName}')" = pv-b ] || fail "c-wffc not bound to pv-b"
}

# Dynamic provisioning limited to zone c: selected-node is n3.
case_dynamic_topology() {
    cp_reset
    three_nodes
    make_class dyn WaitForFirstConsumer e2e.csi.io c
    make_pvc c-dyn 2Gi dyn
    pvc_pod p-dyn c-dyn
    wait_until '[ "$(pod_node p-dyn)" = n3 ]' 30 || fail "p-dyn on '$(pod_node p-dyn)', want n3"
    [ "$(kc get pvc c-dyn -o jsonpath='{.metadata.annotations.volume\.kubernetes\.io/selected-node}')" = n3 ] ||
        fail "selected-node annotation is not n3"
    # A class whose topology no node has: kube's bind conflict.
    make_class dyn-nowhere WaitForFirstConsumer e2e.csi.io z
    make_pvc c-nowhere 1Gi dyn-nowhere
    pvc_pod p-nowhere c-nowhere
    expect_event p-nowhere "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind."
}

# A bound PV labelled for a zone no node is in.
case_zone_conflict() {
    cp_reset
    three_nodes
    make_class zone-imm Immediate e2e.csi.io
    make_pv pv-z9 1Gi zone-imm label=topology.kubernetes.io/zone=z9 claim=c-zone
    make_pvc c-zone 1Gi zone-imm volume=pv-z9
    pvc_pod p-zone c-zone
    expect_event p-zone "0/3 nodes are available: 3 node(s) had no available volume zone."
    [ -z "$(pod_node p-zone)" ] || fail "p-zone got bound"
}

# CSINode allows one e2e.csi.io volume on the node: the second pod waits.
case_csinode_limit() {
    cp_reset
    make_node solo 4 8Gi 0 110
    api_post_json /apis/storage.k8s.io/v1/csinodes '{"apiVersion":"storage.k8s.io/v1","kind":"CSINode",
        "metadata":{"name":"solo"},"spec":{"drivers":[{"name":"e2e.csi.io","nodeID":"solo","allocatable":{"count":1}}]}}'
    make_class lim-imm Immediate e2e.csi.io
    make_pv pv-h1 1Gi lim-imm csi=h1 claim=c-h1
    make_pv pv-h2 1Gi lim-imm csi=h2 claim=c-h2
    make_pvc c-h1 1Gi lim-imm volume=pv-h1
    make_pvc c-h2 1Gi lim-imm volume=pv-h2
    pvc_pod p-h1 c-h1
    wait_until '[ "$(pod_node p-h1)" = solo ]' 30 || fail "p-h1 not bound"
    pvc_pod p-h2 c-h2
    expect_event p-h2 "0/1 nodes are available: 1 node(s) exceed max volume count."
    [ -z "$(pod_node p-h2)" ] || fail "p-h2 got bound past the limit"
    # A second pod on the same volume adds nothing to the count.
    pvc_pod p-h1b c-h1
    wait_until '[ "$(pod_node p-h1b)" = solo ]' 30 || fail "p-h1b (same volume) not bound"
    kc delete csinode solo >/dev/null
}

# Two pods, two claims, one PV: exactly one pod gets it.
case_race_one_pv() {
    cp_reset
    three_nodes
    make_class race WaitForFirstConsumer kubernetes.io/no-provisioner
    make_pv pv-race 1Gi race
    make_pvc c-r1 1Gi race
    make_pvc c-r2 1Gi race
    pvc_pod p-r1 c-r1 & pvc_pod p-r2 c-r2 & wait
    wait_until '[ -n "$(pod_node p-r1)$(pod_node p-r2)" ]' 30 || fail "neither racer bound"
    local winner loser
    if [ -n "$(pod_node p-r1)" ]; then winner=r1 loser=r2; else winner=r2 loser=r1; fi
    expect_event "p-$loser" "node(s) didn't find available persistent volumes to bind"
    sleep 2
    [ -z "$(pod_node "p-$loser")" ] || fail "both racers bound"
    [ "$(pv_claim pv-race)" = "c-$winner" ] || fail "pv-race claimRef '$(pv_claim pv-race)', winner c-$winner"
    [ -z "$(kc get pvc "c-$loser" -o jsonpath='{.spec.volumeName}')" ] || fail "c-$loser got a volume"
}

# PreBind waits for the claim; with no controller answer it times out
# (kube's message), and binds once the claim is bound.
case_prebind_timeout() {
    cp_reset
    three_nodes
    make_class slow WaitForFirstConsumer kubernetes.io/no-provisioner
    make_pv pv-slow 1Gi slow
    make_pvc c-slow 1Gi slow nobind
    pvc_pod p-slow c-slow
    wait_until '[ "$(pv_claim pv-slow)" = c-slow ]' 30 || fail "claimRef not written at PreBind"
    expect_event p-slow 'running PreBind plugin "VolumeBinding": binding volumes: timed out waiting for the condition'
    [ -z "$(pod_node p-slow)" ] || fail "p-slow bound before its claim"
    kc label pvc c-slow e2e-no-bind- >/dev/null
    wait_until '[ -n "$(pod_node p-slow)" ]' $((BIND_TIMEOUT * 3 + 30)) || fail "p-slow not bound after the claim was"
}

# Two pool threads decide at the same time: 8 pods (4 per pool, each with
# its own claim) race for 3 PVs. Exactly 3 pods bind, each on a PV whose
# claimRef names that pod's claim; the other claims stay unbound.
case_race_across_pools() {
    cp_reset
    local n api=resource.aibee.cn/v1alpha1 i p
    for p in pa pb; do
        jq -cn --arg api "$api" --arg n "$p" '{apiVersion: $api, kind: "Pool", metadata: {name: $n},
            spec: {nodeSelector: {matchLabels: {team: $n}}, disableBorrowing: true, disableSharing: true}}' |
            kc apply -f - >/dev/null
    done
    for n in 1 2; do
        make_node "a$n" 4 8Gi 0 110 team=pa
        make_node "b$n" 4 8Gi 0 110 team=pb
    done
    wait_until '[ "$(kc get pool pa -o jsonpath={.status.nodes})" = 2 ] && [ "$(kc get pool pb -o jsonpath={.status.nodes})" = 2 ]' 30 ||
        fail "pools not seen by the scheduler"
    make_class race2 WaitForFirstConsumer kubernetes.io/no-provisioner
    for i in 1 2 3; do make_pv "pv-x$i" 1Gi race2; done
    for i in 1 2 3 4 5 6 7 8; do make_pvc "c-x$i" 1Gi race2; done
    for i in 1 2 3 4 5 6 7 8; do
        p=pa; [ $((i % 2)) = 0 ] && p=pb
        make_pod "p-x$i" --cpu 100m --pool "$p" --merge "$(jq -cn --arg c "c-x$i" \
            '{spec: {volumes: [{name: "v", persistentVolumeClaim: {claimName: $c}}]}}')" &
    done
    wait
    wait_until '[ "$(bound_named p-x | wc -l)" = 3 ]' 60 || fail "$(bound_named p-x | wc -l) racers bound, want 3"
    sleep 3
    [ "$(bound_named p-x | wc -l)" = 3 ] || fail "more than 3 racers bound: $(bound_named p-x | paste -sd' ')"
    local pod claim pv owners
    for pod in $(bound_named p-x); do
        claim=c-${pod#p-}
        pv=$(kc get pvc "$claim" -o jsonpath='{.spec.volumeName}')
        [ -n "$pv" ] || fail "$pod bound but $claim has no volume"
        [ "$(pv_claim "$pv")" = "$claim" ] || fail "$pv claimRef '$(pv_claim "$pv")', want $claim"
    done
    owners=$(for i in 1 2 3; do pv_claim "pv-x$i"; echo; done | grep . | sort -u | wc -l)
    [ "$owners" = 3 ] || fail "3 PVs should have 3 distinct claims, have $owners"
    kc delete pools --all --wait=false >/dev/null 2>&1 || true
    wait_until '[ "$(kc get pools -o name | wc -l)" = 0 ]' 30 || fail "pools remain"
}
bound_named() { pods_json | jq -r --arg p "$1" '.items[] | select(.metadata.name | startswith($p)) | select(.spec.nodeName // "" | length > 0) | .metadata.name'; }

case_clean_shutdown() {
    stop_scheduler_clean
}

cp_start
fake_pv_controller
start_scheduler --volume-bind-timeout "$BIND_TIMEOUT" --pool-status-interval 1
run_case bound-pv-affinity case_bound_pv_affinity
run_case immediate-unbound case_immediate_unbound
run_case wffc-static case_wffc_static
run_case dynamic-topology case_dynamic_topology
run_case zone-conflict case_zone_conflict
run_case csinode-limit case_csinode_limit
run_case race-one-pv case_race_one_pv
run_case prebind-timeout case_prebind_timeout
run_case race-across-pools case_race_across_pools
run_case clean-shutdown case_clean_shutdown
finish
