#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Dynamic Resource Allocation (issue 36), end to end, without a 1.34 API
# server. The suite's kube-apiserver is v1.20, so:
#   - DRA's own objects are CRDs at their real group, version and resources
#     (test/e2e/dra/crds.yaml: resource.k8s.io/v1 deviceclasses,
#     resourceslices, resourceclaims with /status, resourceclaimtemplates);
#   - pods carry spec.resourceClaims and status.resourceClaimStatuses through
#     the stand-in API server (standin_apiserver.py, see standin.sh), which
#     the scheduler and the fake controller talk to;
#   - fake_claim_controller.py plays kube-controller-manager's resourceclaim
#     controller (claims from templates, reservedFor cleared when a pod goes,
#     deallocation, generated claims deleted): see its docstring.
# What the scheduler must write is kube-scheduler's DynamicResources plugin's
# (v1.34): the finalizer resource.kubernetes.io/delete-protection on the
# claim, then PUT .../resourceclaims/NAME/status with status.allocation
# {devices: {results: [{request, driver, pool, device}], config}, nodeSelector:
# matchFields metadata.name In [NODE]} and status.reservedFor [{resource:
# "pods", name, uid}], then the Binding. Each case's outcome is worked out by
# hand from kube's allocator (devices tried in slice order, the first that
# fits), written beside it.
#
# The harness cases (crds-served, standin-claim-statuses,
# checks-on-kube-writes, controller-template-claims) need no scheduler. The
# others (chart-rbac-dra and the scheduler's) run only
# when bin/ai-scheduler has DRA (its --help names --dra-queue-resources);
# otherwise they are recorded as one SKIP line, with the reason
# (E2E_DRA_FORCE=1 runs them anyway).
#
# Cases:
#   crds-served                 the four CRDs serve resource.k8s.io/v1; valid objects of each kind apply, bad ones are refused
#   standin-claim-statuses      status.resourceClaimStatuses through pods/status (merge, strategic), GET, LIST, WATCH
#   checks-on-kube-writes       the scheduler cases' checks accept kube-scheduler's writes (played), refuse wrong ones
#   controller-template-claims  a claim made from the template for a pod, reservedFor cleared, deallocated, deleted when the pod goes
#   chart-rbac-dra              the chart lets the scheduler read DRA's kinds, write claims' status and finalizer, not slices or classes
#   class-and-claim-cel         class selector (model A100) and claim selectors (memory >= 80Gi, driverVersion > 2.0.0): n2's gpu-3
#   claims-not-sharing-a-node   one pod with 2 claims of 2 on nodes of 2: pending; two such pods: one per node; a third pending
#   shared-claim                a second pod of an allocated claim goes to its node; reservedFor has both
#   all-nodes-slice             a device of an allNodes slice: allocated without nodeSelector
#   allocation-mode-all         All: every T4 of n1; then a claim of 1 T4 pending
#   first-available             firstAvailable: "small" (n1's one T4) while no 80Gi A100 exists; then "big" on n2
#   match-attribute             two requests with matchAttribute numa: gpu-0 and gpu-3 (numa 0), then gpu-1 and gpu-2 (numa 1)
#   incomplete-pool             a pool of 2 slices with one present: its device unused; both: allocated
#   template-claim-waits        a pod whose template claim is not made yet waits, saying so; then bound
#   unsatisfiable-claim         5 A100 where 4 exist: pending, the reason names the claim and the request
#   unsupported-cel             a selector outside the evaluator's subset: pending, one event naming the expression
#   gang-claim-does-not-fit     PodGroup minMember 4, the 4th member's claim cannot be allocated: nothing allocated or bound
#   preemption-frees-devices    a high-priority pod with a claim evicts the low-priority holder of the devices
#   restart-no-device-lost      a scheduler killed mid-way and restarted: every device in at most one claim, none lost
#   queue-quota-dra-gpus        a Queue limited to 2 GPUs counts DRA devices (DEPENDS ON --dra-queue-resources)
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=standin.sh
source "$(dirname "$0")/standin.sh"
export E2E_FILE=dra/

DRA=/apis/resource.k8s.io/v1
CLAIMS=$DRA/namespaces/default/resourceclaims
TEMPLATES=$DRA/namespaces/default/resourceclaimtemplates
FINALIZER=resource.kubernetes.io/delete-protection
DRV=gpu.example.com
PG_LABEL=scheduling.x-k8s.io/pod-group
PG_API=/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups
QLABEL=resource.aibee.cn/queue
# The mapping from a device class to a queue resource is the lead's flag
# (issue 36); the queue case depends on this spelling.
DRA_QUEUE_FLAG=(--dra-queue-resources "$DRV=nvidia.com/gpu")

# ---------------------------------------------------------------------------
# objects

# dra_post PATH JSON: POST to the real API server (DRA's CRDs need no stand-in).
dra_post() { api_post_json "$1" "$2" || fail "POST $1"; }
# gpu NAME MODEL NUMA MEMORY VERSION: one device of driver $DRV.
gpu() {
    jq -cn --arg n "$1" --arg m "$2" --argjson numa "$3" --arg mem "$4" --arg v "$5" \
        '{name: $n, attributes: {"gpu.example.com/model": {string: $m}, numa: {int: $numa}, driverVersion: {version: $v}},
          capacity: {memory: {value: $mem}}}'
}
# gpus PREFIX COUNT MODEL [MEMORY] [VERSION]: COUNT devices PREFIX-0.., numa i/2.
gpus() {
    local i out=()
    for ((i = 0; i < $2; i++)); do out+=("$(gpu "$1-$i" "$3" $((i / 2)) "${4:-16Gi}" "${5:-1.0.0}")"); done
    printf '%s\n' "${out[@]}" | jq -sc .
}
# node_slice NODE DEVICES-JSON [POOL] [SLICE-NAME] [COUNT]: a slice local to NODE
# (spec.nodeName), pool POOL (default NODE), generation 1, COUNT slices in the pool (1).
node_slice() {
    local pool=${3:-$1} name=${4:-$1-$DRV}
    dra_post $DRA/resourceslices "$(jq -cn --arg n "$name" --arg node "$1" --arg pool "$pool" --argjson d "$2" \
        --arg drv "$DRV" --argjson cnt "${5:-1}" \
        '{apiVersion: "resource.k8s.io/v1", kind: "ResourceSlice", metadata: {name: $n},
          spec: {driver: $drv, nodeName: $node, pool: {name: $pool, generation: 1, resourceSliceCount: $cnt}, devices: $d}}')"
}
# device_class NAME [CEL...]: a DeviceClass with those selectors.
device_class() {
    local n=$1; shift
    dra_post $DRA/deviceclasses "$(printf '%s\n' "$@" | jq -R . | jq -sc --arg n "$n" \
        '{apiVersion: "resource.k8s.io/v1", kind: "DeviceClass", metadata: {name: $n},
          spec: {selectors: [.[] | select(. != "") | {cel: {expression: .}}]}}')"
}
# exactly NAME CLASS [COUNT|All] [CEL...]: one request of a claim's spec.
exactly() {
    local n=$1 c=$2 cnt=${3:-1}; shift 3 2>/dev/null || shift $#
    printf '%s\n' "$@" | jq -R . | jq -sc --arg n "$n" --arg c "$c" --arg cnt "$cnt" \
        '{name: $n, exactly: ({deviceClassName: $c}
            + (if $cnt == "All" then {allocationMode: "All"} else {allocationMode: "ExactCount", count: ($cnt | tonumber)} end)
            + (if map(select(. != "")) == [] then {} else {selectors: [.[] | select(. != "") | {cel: {expression: .}}]} end))}'
}
# claim NAME REQUEST-JSON... [-- CONSTRAINTS-JSON]: a ResourceClaim in default.
claim() {
    local n=$1 reqs=() cons='[]'; shift
    while [ $# -gt 0 ]; do
        [ "$1" = -- ] && { cons=$2; break; }
        reqs+=("$1"); shift
    done
    dra_post "$CLAIMS" "$(printf '%s\n' "${reqs[@]}" | jq -sc --arg n "$n" --argjson c "$cons" \
        '{apiVersion: "resource.k8s.io/v1", kind: "ResourceClaim", metadata: {name: $n},
          spec: {devices: ({requests: .} + (if $c == [] then {} else {constraints: $c} end))}}')"
}
# template NAME REQUEST-JSON...: a ResourceClaimTemplate in default.
template() {
    local n=$1; shift
    dra_post "$TEMPLATES" "$(printf '%s\n' "$@" | jq -sc --arg n "$n" \
        '{apiVersion: "resource.k8s.io/v1", kind: "ResourceClaimTemplate", metadata: {name: $n},
          spec: {spec: {devices: {requests: .}}}}')"
}
# claims_merge CLAIM... : pod_json --merge JSON for a pod using these claims
# (resourceClaimName; "tmpl:NAME" uses the template NAME), all in its one container.
claims_merge() {
    printf '%s\n' "$@" | jq -R . | jq -sc '[to_entries[] | {name: "c\(.key)"} + (if (.value | startswith("tmpl:"))
            then {resourceClaimTemplateName: (.value | ltrimstr("tmpl:"))} else {resourceClaimName: .value} end)] as $pc
        | {spec: {resourceClaims: $pc, containers: [{name: "main", image: "registry.invalid/pause:3",
            resources: {requests: {cpu: "100m"}, claims: [$pc[] | {name}]}}]}}'
}
# dpod NAME CLAIM... [-- pod_json options]: a pod through the stand-in.
dpod() {
    local n=$1 cl=() ; shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do cl+=("$1"); shift; done
    [ "${1:-}" = -- ] && shift
    si_create "$n" --merge "$(claims_merge "${cl[@]}")" "$@" || fail "create pod $n"
}

claim_json() { api_get "$CLAIMS/$1"; }
pod_uid() { api_get "/api/v1/namespaces/default/pods/$1" | jq -r .metadata.uid; }
# results CLAIM: "request driver pool device" per allocated device, sorted, space-joined lines.
results() { claim_json "$1" | jq -r '[.status.allocation.devices.results[]? | "\(.request) \(.driver) \(.pool) \(.device)"] | sort | join(",")'; }
# alloc_node CLAIM: the node of its allocation's nodeSelector ("none" without one).
alloc_node() {
    claim_json "$1" | jq -r 'if .status.allocation.nodeSelector == null then "none" else
        (.status.allocation.nodeSelector.nodeSelectorTerms | if length == 1 and (.[0].matchFields | length) == 1
           and .[0].matchFields[0].key == "metadata.name" and .[0].matchFields[0].operator == "In"
           and (.[0].matchFields[0].values | length) == 1 and (.[0].matchExpressions // [] | length) == 0
         then .[0].matchFields[0].values[0] else "bad:\(tojson)" end) end'
}
# reserved CLAIM: "name uid" of each reservedFor entry (resource pods, no apiGroup), comma-joined.
reserved() {
    claim_json "$1" | jq -r '[.status.reservedFor[]? | if .resource == "pods" and (.apiGroup // "") == ""
        then "\(.name) \(.uid)" else "bad:\(tojson)" end] | join(",")'
}
allocated() { claim_json "$1" | jq -e '(.status | type) == "object" and .status.allocation != null' >/dev/null; }
# generated CLAIM-NAME-IN-POD POD: the claim the controller made for it (from the pod's status, via the stand-in).
generated() { si_pod_json "$2" | jq -r --arg n "$1" '.status.resourceClaimStatuses[]? | select(.name == $n) | .resourceClaimName // ""'; }

# expect_alloc CLAIM POD NODE RESULTS: POD bound to NODE; CLAIM allocated
# exactly RESULTS ("request driver pool device", comma-joined, sorted), its
# nodeSelector NODE ("none": no nodeSelector), reserved for POD (its uid),
# with the finalizer.
expect_alloc() {
    local c=$1 p=$2 node=$3 want=$4 n=${5:-$3}
    wait_until "[ \"\$(node_of $p)\" = $node ]" 30 ||
        fail "$p not bound to $node (node '$(node_of "$p")', events: $(failed_of "$p" | tr '\n' ' '))"
    [ "$(results "$c")" = "$want" ] || fail "claim $c results '$(results "$c")', want '$want'"
    [ "$(alloc_node "$c")" = "$n" ] || fail "claim $c nodeSelector '$(alloc_node "$c")', want $n"
    [ "$(reserved "$c")" = "$p $(pod_uid "$p")" ] || fail "claim $c reservedFor '$(reserved "$c")', want $p"
    claim_json "$c" | jq -e --arg f "$FINALIZER" '.metadata.finalizers // [] | index($f) != null' >/dev/null ||
        fail "claim $c has no finalizer $FINALIZER"
}
# expect_pending POD CLAIM: POD not bound, no Binding sent, CLAIM not allocated.
expect_pending() {
    sleep "${PENDING_WAIT:-3}"
    [ -z "$(node_of "$1")" ] || fail "$1 bound to $(node_of "$1")"
    [ "$(bindings_for "$1")" = 0 ] || fail "$(bindings_for "$1") Binding(s) sent for $1"
    ! allocated "$2" || fail "claim $2 allocated: $(results "$2")"
}
# no_device_twice: no device in the allocations of two claims (or twice in one).
no_device_twice() {
    local dup
    dup=$(api_get "$DRA/resourceclaims" | jq -r '[.items[].status.allocation.devices.results[]? | select(.adminAccess != true)
        | "\(.driver)/\(.pool)/\(.device)"] | group_by(.) | map(select(length > 1) | .[0]) | join(" ")')
    [ -z "$dup" ] || fail "devices in more than one allocation: $dup"
}

# reset: no pod, claim, template, slice, class, PodGroup, Queue or node.
# Claims lose their finalizer first (no controller would, with the pods gone at once).
reset() {
    local c
    api_req DELETE "/api/v1/namespaces/default/pods?gracePeriodSeconds=0" -o /dev/null || fail "DELETE pods"
    for c in $(api_get "$CLAIMS" | jq -r '.items[] | select(.metadata.finalizers // [] | length > 0) | .metadata.name'); do
        api_req PATCH "$CLAIMS/$c" -H 'Content-Type: application/merge-patch+json' \
            --data-binary '{"metadata":{"finalizers":null}}' -o /dev/null || true
    done
    local p
    for p in "$CLAIMS" "$TEMPLATES" $DRA/resourceslices $DRA/deviceclasses "$PG_API" /apis/resource.aibee.cn/v1alpha1/queues /api/v1/nodes; do
        api_req DELETE "$p" -o /dev/null || fail "DELETE $p"
    done
    wait_until '[ "$(api_get /api/v1/pods | jq ".items | length")" = 0 ] && [ "$(api_get /api/v1/nodes | jq ".items | length")" = 0 ] &&
        [ "$(api_get $DRA/resourceclaims | jq ".items | length")" = 0 ] && [ "$(api_get $DRA/resourceslices | jq ".items | length")" = 0 ]' 30 ||
        fail "reset: objects remain"
}
# base_classes: gpu.example.com (every device of the driver), gpu-a100, gpu-t4 (by model).
base_classes() {
    device_class $DRV "device.driver == \"$DRV\""
    device_class gpu-a100 "device.driver == \"$DRV\" && device.attributes[\"$DRV\"].model == \"A100\""
    device_class gpu-t4 "device.driver == \"$DRV\"" "device.attributes[\"$DRV\"].model == \"T4\""
}
# cluster: n1 with 4 T4 (16Gi), n2 with 4 A100 (gpu-0/1: 40Gi, version 1.5.0;
# gpu-2: 80Gi, 1.5.0; gpu-3: 80Gi, 2.1.0), each node 8 cpu.
cluster() {
    make_node n1 8 32Gi 0 110 || fail "node n1"
    make_node n2 8 32Gi 0 110 || fail "node n2"
    base_classes
    node_slice n1 "$(gpus gpu 4 T4)"
    node_slice n2 "$(jq -cn --argjson a "$(gpu gpu-0 A100 0 40Gi 1.5.0)" --argjson b "$(gpu gpu-1 A100 0 40Gi 1.5.0)" \
        --argjson c "$(gpu gpu-2 A100 1 80Gi 1.5.0)" --argjson d "$(gpu gpu-3 A100 1 80Gi 2.1.0)" '[$a, $b, $c, $d]')"
}

# ---------------------------------------------------------------------------
# the harness itself (no scheduler)

# The CRDs serve resource.k8s.io/v1 with the four resources (claims with a
# status subresource); an object of each kind as a 1.34 cluster would hold it
# applies and reads back unchanged; the schema refuses a wrong type where
# types.go has one (count: a string; an attribute value: an object of
# unknown fields is pruned) and a missing required field (a slice's pool).
case_crds_served() {
    reset
    local got
    got=$(api_get $DRA | jq -c '[.resources[] | "\(.name) \(.namespaced)"] | sort')
    [ "$got" = '["deviceclasses false","resourceclaims true","resourceclaims/status true","resourceclaimtemplates true","resourceslices false"]' ] ||
        fail "resource.k8s.io/v1 serves $got"
    cluster
    # an allNodes slice and one with a nodeSelector
    dra_post $DRA/resourceslices '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"fabric"},
        "spec":{"driver":"net.example.com","allNodes":true,"pool":{"name":"fabric","generation":3,"resourceSliceCount":1},
        "devices":[{"name":"nic-0","attributes":{"speed":{"int":400}}}]}}'
    dra_post $DRA/resourceslices '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"rack"},
        "spec":{"driver":"net.example.com","nodeSelector":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"rack","operator":"In","values":["r1"]}]}]},
        "pool":{"name":"rack","generation":1,"resourceSliceCount":1},"devices":[{"name":"sw-0"}]}}'
    [ "$(api_get $DRA/resourceslices/n2-$DRV | jq -c '.spec.devices[3]')" = \
      '{"attributes":{"driverVersion":{"version":"2.1.0"},"gpu.example.com/model":{"string":"A100"},"numa":{"int":1}},"capacity":{"memory":{"value":"80Gi"}},"name":"gpu-3"}' ] ||
        fail "slice n2 read back: $(api_get $DRA/resourceslices/n2-$DRV | jq -c '.spec.devices[3]')"
    claim full "$(exactly gpus gpu-a100 2 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0')" \
        '{"name":"alt","firstAvailable":[{"name":"big","deviceClassName":"gpu-a100","count":1},{"name":"small","deviceClassName":"gpu-t4","allocationMode":"All"}]}' \
        -- '[{"requests":["gpus","alt"],"matchAttribute":"gpu.example.com/numa"}]'
    got=$(claim_json full | jq -c .spec.devices)
    [ "$got" = '{"constraints":[{"matchAttribute":"gpu.example.com/numa","requests":["gpus","alt"]}],"requests":[{"exactly":{"allocationMode":"ExactCount","count":2,"deviceClassName":"gpu-a100","selectors":[{"cel":{"expression":"device.capacity[\"gpu.example.com\"].memory.compareTo(quantity(\"40Gi\")) >= 0"}}]},"name":"gpus"},{"firstAvailable":[{"count":1,"deviceClassName":"gpu-a100","name":"big"},{"allocationMode":"All","deviceClassName":"gpu-t4","name":"small"}],"name":"alt"}]}' ] ||
        fail "claim full read back: $got"
    template tg "$(exactly gpu $DRV 1)"
    [ "$(api_get "$TEMPLATES/tg" | jq -c .spec.spec.devices.requests)" = '[{"exactly":{"allocationMode":"ExactCount","count":1,"deviceClassName":"gpu.example.com"},"name":"gpu"}]' ] ||
        fail "template read back: $(api_get "$TEMPLATES/tg" | jq -c .spec)"
    # the status as kube-scheduler writes it, through /status only, reserved
    # for a pod that exists (the fake controller drops other reservations)
    local uid st out puid
    make_pod holder --scheduler nobody || fail "pod holder"
    puid=$(pod_uid holder)
    uid=$(claim_json full | jq -r .metadata.uid)
    st=$(claim_json full | jq -c --arg u "$puid" '.status = {allocation: {devices: {results: [
            {request: "gpus", driver: "gpu.example.com", pool: "n2", device: "gpu-2"},
            {request: "gpus", driver: "gpu.example.com", pool: "n2", device: "gpu-3"},
            {request: "alt/big", driver: "gpu.example.com", pool: "n2", device: "gpu-1"}],
          config: [{source: "FromClaim", requests: ["gpus"], opaque: {driver: "gpu.example.com", parameters: {sharing: {strategy: "TimeSlicing"}}}}]},
        nodeSelector: {nodeSelectorTerms: [{matchFields: [{key: "metadata.name", operator: "In", values: ["n2"]}]}]}},
        reservedFor: [{resource: "pods", name: "holder", uid: $u}]}')
    out=$(api_req PUT "$CLAIMS/full/status" -H 'Content-Type: application/json' --data-binary "$st" -w '\n%{http_code}')
    [ "${out##*$'\n'}" = 200 ] || fail "PUT status -> ${out%$'\n'*}"
    [ "$(results full)" = "alt/big gpu.example.com n2 gpu-1,gpus gpu.example.com n2 gpu-2,gpus gpu.example.com n2 gpu-3" ] ||
        fail "status read back: $(results full)"
    [ "$(alloc_node full)" = n2 ] && [ "$(reserved full)" = "holder $puid" ] || fail "nodeSelector/reservedFor: $(alloc_node full) $(reserved full)"
    [ "$(claim_json full | jq -c .status.allocation.devices.config[0].opaque.parameters)" = '{"sharing":{"strategy":"TimeSlicing"}}' ] ||
        fail "opaque parameters not kept"
    # a PUT of the claim itself leaves status alone (status subresource)
    out=$(api_req PUT "$CLAIMS/full" -H 'Content-Type: application/json' --data-binary "$(claim_json full | jq -c 'del(.status)')" -w '\n%{http_code}')
    [ "${out##*$'\n'}" = 200 ] && allocated full || fail "PUT of the claim dropped its status: ${out%$'\n'*}"
    [ "$(claim_json full | jq -r .metadata.uid)" = "$uid" ] || fail "claim replaced"
    # the schema refuses what types.go would not decode
    out=$(api_req POST "$CLAIMS" -H 'Content-Type: application/json' -o /dev/null -w '%{http_code}' --data-binary \
        '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"bad"},"spec":{"devices":{"requests":[{"name":"g","exactly":{"deviceClassName":"x","count":"two"}}]}}}')
    [ "$out" = 422 ] || fail "a claim with count \"two\" -> $out (want 422)"
    out=$(api_req POST $DRA/resourceslices -H 'Content-Type: application/json' -o /dev/null -w '%{http_code}' --data-binary \
        '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"bad"},"spec":{"driver":"d","nodeName":"n1","devices":[]}}')
    [ "$out" = 422 ] || fail "a slice without a pool -> $out (want 422)"
    out=$(api_req POST $DRA/resourceslices -H 'Content-Type: application/json' -o /dev/null -w '%{http_code}' --data-binary \
        '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"bad"},"spec":{"driver":"d","nodeName":"n1","pool":{"name":"p","generation":1,"resourceSliceCount":1},"devices":[{"name":"x","attributes":{"a":{"int":"one"}}}]}}')
    [ "$out" = 422 ] || fail "an int attribute \"one\" -> $out (want 422)"
    # kubectl lists them by their resource names
    [ "$(kc get resourceslices.resource.k8s.io -o name | wc -l)" = 4 ] || fail "kubectl get resourceslices: $(kc get resourceslices.resource.k8s.io -o name)"
    [ "$(kc get deviceclasses.resource.k8s.io -o name | sort | tr '\n' ' ')" = "deviceclass.resource.k8s.io/gpu-a100 deviceclass.resource.k8s.io/gpu-t4 deviceclass.resource.k8s.io/gpu.example.com " ] ||
        fail "kubectl get deviceclasses: $(kc get deviceclasses.resource.k8s.io -o name | tr '\n' ' ')"
}

# status.resourceClaimStatuses (dropped by v1.20) through the stand-in: a
# merge patch of pods/status sets it, a strategic merge patch merges by name
# and deletes by "$patch", GET/LIST/WATCH show it, a MODIFIED event says so.
case_standin_claim_statuses() {
    reset
    local w out got
    si_create rcs --scheduler nobody --merge "$(claims_merge tmpl:t-a tmpl:t-b)" || fail "create rcs"
    w=$CP_WORK/rcs.watch
    si_req GET "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=20&fieldSelector=metadata.name%3Drcs" -N >"$w" 2>/dev/null &
    local wpid=$!
    wait_until "grep -q ADDED '$w'" 10 || fail "no ADDED event"
    out=$(si_send PATCH /api/v1/namespaces/default/pods/rcs/status application/merge-patch+json \
        '{"status":{"resourceClaimStatuses":[{"name":"c0","resourceClaimName":"rcs-c0-abcde"}]}}')
    [ "${out##*$'\n'}" = 200 ] || fail "merge patch -> ${out%$'\n'*}"
    [ "$(jq -c .status.resourceClaimStatuses <<<"${out%$'\n'*}")" = '[{"name":"c0","resourceClaimName":"rcs-c0-abcde"}]' ] ||
        fail "the PATCH answer: $(jq -c .status <<<"${out%$'\n'*}")"
    [ "$(api_get /api/v1/namespaces/default/pods/rcs | jq -c '.status.resourceClaimStatuses // "dropped"')" = '"dropped"' ] ||
        fail "v1.20 kept status.resourceClaimStatuses: the stand-in is not needed for it"
    out=$(si_send PATCH /api/v1/namespaces/default/pods/rcs/status application/strategic-merge-patch+json \
        '{"status":{"resourceClaimStatuses":[{"name":"c1","resourceClaimName":"rcs-c1-fghij"}]}}')
    [ "${out##*$'\n'}" = 200 ] || fail "strategic patch -> ${out%$'\n'*}"
    got=$(si_pod_json rcs | jq -c .status.resourceClaimStatuses)
    [ "$got" = '[{"name":"c0","resourceClaimName":"rcs-c0-abcde"},{"name":"c1","resourceClaimName":"rcs-c1-fghij"}]' ] || fail "GET after the strategic patch: $got"
    got=$(si get pods -o json | jq -c '.items[] | select(.metadata.name == "rcs") | .status.resourceClaimStatuses')
    [ "$got" = '[{"name":"c0","resourceClaimName":"rcs-c0-abcde"},{"name":"c1","resourceClaimName":"rcs-c1-fghij"}]' ] || fail "LIST: $got"
    wait_until "[ \"\$(grep -c MODIFIED '$w')\" -ge 2 ]" 10 || fail "fewer than 2 MODIFIED events"
    kill "$wpid" 2>/dev/null || true
    wait "$wpid" 2>/dev/null || true
    jq -se 'any(.[]; .type == "MODIFIED" and (.object.status.resourceClaimStatuses | length) == 2)' "$w" >/dev/null ||
        fail "no MODIFIED event with both: $(tail -c 600 "$w")"
    out=$(si_send PATCH /api/v1/namespaces/default/pods/rcs/status application/strategic-merge-patch+json \
        '{"status":{"resourceClaimStatuses":[{"$patch":"delete","name":"c0"}],"phase":"Pending"}}')
    [ "${out##*$'\n'}" = 200 ] || fail "strategic delete -> ${out%$'\n'*}"
    [ "$(si_pod_json rcs | jq -c '[.status.resourceClaimStatuses[].name]')" = '["c1"]' ] || fail "after the delete: $(si_pod_json rcs | jq -c .status.resourceClaimStatuses)"
    # the spec's claims stay as created
    [ "$(si_pod_json rcs | jq -c '[.spec.resourceClaims[].resourceClaimTemplateName]')" = '["t-a","t-b"]' ] || fail "spec.resourceClaims lost"
}

# fake_claim_controller.py as kube's resourceclaim controller: a pod naming a
# template gets a claim (generateName pod-claim-, owned by the pod as its
# controller, the pod-claim-name annotation, the template's spec) and its
# resourceClaimStatuses; a pod naming a template that does not exist yet gets
# nothing until it does. Then, with the claim allocated and reserved for the
# pod (played here as the scheduler would write it): a Succeeded pod is
# removed from reservedFor, the claim deallocated, its finalizer removed and,
# being the pod's generated claim, deleted; a shared claim (not generated)
# reserved for a deleted pod is only unreserved and deallocated.
case_controller_template_claims() {
    reset
    base_classes
    template one-gpu "$(exactly gpu $DRV 1 'device.attributes["gpu.example.com"].model == "T4"')"
    si_create tp --scheduler nobody --merge "$(claims_merge tmpl:one-gpu tmpl:later)" || fail "create tp"
    local c uid got
    wait_until '[ -n "$(generated c0 tp)" ]' 15 || fail "no claim for tp's c0 (controller: $(tail -5 "$CP_WORK/claimctl.log"))"
    c=$(generated c0 tp)
    uid=$(pod_uid tp)
    [[ $c == tp-c0-????? ]] || fail "generated name $c (want tp-c0-xxxxx)"
    got=$(claim_json "$c" | jq -Sc '{o: .metadata.ownerReferences, a: .metadata.annotations, s: .spec}')
    [ "$got" = "$(jq -Scn --arg u "$uid" '{o: [{apiVersion: "v1", kind: "Pod", name: "tp", uid: $u, controller: true, blockOwnerDeletion: true}],
        a: {"resource.kubernetes.io/pod-claim-name": "c0"},
        s: {devices: {requests: [{name: "gpu", exactly: {deviceClassName: "gpu.example.com", allocationMode: "ExactCount", count: 1,
            selectors: [{cel: {expression: "device.attributes[\"gpu.example.com\"].model == \"T4\""}}]}}]}}}')" ] ||
        fail "claim $c: $got"
    [ -z "$(generated c1 tp)" ] || fail "a claim for c1 before its template exists"
    [ "$(api_get "$CLAIMS" | jq '.items | length')" = 1 ] || fail "claims: $(api_get "$CLAIMS" | jq -c '[.items[].metadata.name]')"
    template later "$(exactly gpu $DRV 2)"
    wait_until '[ -n "$(generated c1 tp)" ]' 15 || fail "no claim for c1 once its template exists"
    [ "$(generated c0 tp)" = "$c" ] || fail "c0's claim changed: $(generated c0 tp)"
    sleep 1
    [ "$(api_get "$CLAIMS" | jq '.items | length')" = 2 ] || fail "claims made twice: $(api_get "$CLAIMS" | jq -c '[.items[].metadata.name]')"
    # a shared claim, both reserved for tp as the scheduler would (finalizer, then status)
    claim shared "$(exactly gpu $DRV 1)"
    local cl
    for cl in "$c" shared; do
        api_req PATCH "$CLAIMS/$cl" -H 'Content-Type: application/merge-patch+json' \
            --data-binary "{\"metadata\":{\"finalizers\":[\"$FINALIZER\"]}}" -o /dev/null || fail "finalizer on $cl"
        api_req PUT "$CLAIMS/$cl/status" -H 'Content-Type: application/json' -o /dev/null --data-binary "$(claim_json "$cl" | jq -c --arg u "$uid" \
            '.status = {allocation: {devices: {results: [{request: "gpu", driver: "gpu.example.com", pool: "n1", device: "gpu-0"}]},
               nodeSelector: {nodeSelectorTerms: [{matchFields: [{key: "metadata.name", operator: "In", values: ["n1"]}]}]}},
             reservedFor: [{resource: "pods", name: "tp", uid: $u}]}')" || fail "status of $cl"
        allocated "$cl" || fail "$cl not allocated"
    done
    sleep 1
    allocated "$c" && [ "$(reserved "$c")" = "tp $uid" ] || fail "the controller touched a claim of a running pod: $(claim_json "$c" | jq -c .status)"
    # the kubelet's part: tp finished
    si_send PATCH /api/v1/namespaces/default/pods/tp/status application/merge-patch+json '{"status":{"phase":"Succeeded"}}' >/dev/null
    wait_until "[ \"\$(api_req GET $CLAIMS/$c -o /dev/null -w '%{http_code}')\" = 404 ]" 15 ||
        fail "generated claim $c of a Succeeded pod not deleted: $(claim_json "$c" | jq -c '{m: .metadata.finalizers, s: .status}')"
    wait_until '[ -z "$(reserved shared)" ]' 10 || fail "shared still reserved: $(reserved shared)"
    ! allocated shared || fail "shared not deallocated"
    claim_json shared | jq -e '.metadata.finalizers // [] | length == 0' >/dev/null || fail "shared kept its finalizer"
    grep -q "UNRESERVED default/$c" "$CP_WORK/claimctl.log" && grep -q "DELETED default/$c" "$CP_WORK/claimctl.log" ||
        fail "controller log: $(cat "$CP_WORK/claimctl.log")"
    # a deleted pod's generated claim goes too (the garbage collector's part)
    si_create tq --scheduler nobody --merge "$(claims_merge tmpl:one-gpu)" || fail "create tq"
    wait_until '[ -n "$(generated c0 tq)" ]' 15 || fail "no claim for tq"
    c=$(generated c0 tq)
    api_req DELETE "/api/v1/namespaces/default/pods/tq?gracePeriodSeconds=0" -o /dev/null
    wait_until "[ \"\$(api_req GET $CLAIMS/$c -o /dev/null -w '%{http_code}')\" = 404 ]" 15 || fail "claim $c of a deleted pod not deleted"
}

# The scheduler cases' checks against kube-scheduler's own writes, played
# here for pod kp (scheduler "nobody"): the finalizer on claim kc (update of
# the claim), then PUT .../status with the allocation and reservedFor, then
# the Binding through the stand-in. expect_alloc accepts exactly that and
# refuses a wrong device, node or reservation; no_device_twice refuses a
# second claim holding the same device.
kube_prebind() { # CLAIM POD NODE RESULTS-JSON
    local cj
    cj=$(claim_json "$1" | jq -c --arg f "$FINALIZER" '.metadata.finalizers = ((.metadata.finalizers // []) + [$f])')
    api_req PUT "$CLAIMS/$1" -H 'Content-Type: application/json' --data-binary "$cj" -o /dev/null -w '%{http_code}' | grep -q 200 ||
        fail "finalizer on $1"
    cj=$(claim_json "$1" | jq -c --arg p "$2" --arg u "$(pod_uid "$2")" --arg n "$3" --argjson r "$4"         '.status = {allocation: {devices: {results: $r},
            nodeSelector: {nodeSelectorTerms: [{matchFields: [{key: "metadata.name", operator: "In", values: [$n]}]}]}},
          reservedFor: ((.status.reservedFor // []) + [{resource: "pods", name: $p, uid: $u}])}')
    api_req PUT "$CLAIMS/$1/status" -H 'Content-Type: application/json' --data-binary "$cj" -o /dev/null -w '%{http_code}' | grep -q 200 ||
        fail "status of $1"
}
case_checks_on_kube_writes() {
    reset
    cluster
    claim kc "$(exactly gpu gpu-a100 1)"
    dpod kp kc -- --scheduler nobody
    kube_prebind kc kp n2 '[{"request":"gpu","driver":"gpu.example.com","pool":"n2","device":"gpu-3"}]'
    local out
    out=$(si_send POST /api/v1/namespaces/default/pods/kp/binding application/json \
        '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"kp"},"target":{"apiVersion":"v1","kind":"Node","name":"n2"}}')
    [ "${out##*$'\n'}" = 201 ] || fail "Binding -> ${out%$'\n'*}"
    expect_alloc kc kp n2 "gpu $DRV n2 gpu-3"
    no_device_twice
    ( expect_alloc kc kp n2 "gpu $DRV n2 gpu-2" ) 2>/dev/null && fail "expect_alloc took a wrong device"
    ( wait_until() { return 0; }; expect_alloc kc kp n1 "gpu $DRV n2 gpu-3" ) 2>/dev/null && fail "expect_alloc took a wrong node"
    claim kd "$(exactly gpu gpu-a100 1)"
    kube_prebind kd kp n2 '[{"request":"gpu","driver":"gpu.example.com","pool":"n2","device":"gpu-3"}]'
    ( no_device_twice ) 2>/dev/null && fail "no_device_twice missed gpu-3 in kc and kd"
    ( expect_alloc kd kp n2 "gpu $DRV n2 gpu-3" ) 2>/dev/null || fail "kd as written"
    return 0
}

# ---------------------------------------------------------------------------
# the scheduler (kube-scheduler's DynamicResources plugin's outcomes)

# The chart's RBAC (applied by cp_start, used by every scheduler here) lets
# the scheduler read DRA's four kinds, write a claim's status and its
# finalizer (kube-scheduler's PreBind: an update of the claim, then of
# .../status), and write no slice or class (those are drivers' and admins').
case_chart_rbac() {
    local as=system:serviceaccount:$CHART_NS:$SCHED_SA r v bad=""
    can() { [ "$(kc auth can-i "$@" --as "$as" 2>/dev/null)" = yes ]; }
    for r in deviceclasses resourceslices resourceclaims resourceclaimtemplates; do
        for v in get list watch; do can "$v" "$r.resource.k8s.io" -A || bad="$bad $v:$r"; done
    done
    can update resourceclaims.resource.k8s.io --subresource=status -A || bad="$bad update:resourceclaims/status"
    can update resourceclaims.resource.k8s.io -A || can patch resourceclaims.resource.k8s.io -A || bad="$bad update|patch:resourceclaims (the finalizer)"
    [ -z "$bad" ] || fail "the chart does not grant:$bad"
    for r in deviceclasses resourceslices; do
        for v in create update patch delete; do ! can "$v" "$r.resource.k8s.io" || bad="$bad $v:$r"; done
    done
    ! can delete resourceclaimtemplates.resource.k8s.io -A || bad="$bad delete:resourceclaimtemplates"
    [ -z "$bad" ] || fail "the chart grants more than the scheduler needs:$bad"
}

# Class gpu-a100 selects the A100s of n2 (not n1's T4); the claim's
# selectors keep memory >= 80Gi (gpu-2, gpu-3) and driverVersion > 2.0.0
# (gpu-3 only): p1 on n2 with gpu-3.
case_cel_selectors() {
    reset
    cluster
    claim c1 "$(exactly gpu gpu-a100 1 'device.capacity["gpu.example.com"].memory.compareTo(quantity("80Gi")) >= 0' \
        'device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("2.0.0"))')"
    dpod p1 c1
    expect_alloc c1 p1 n2 "gpu $DRV n2 gpu-3"
    [ "$(bindings_for p1)" = 1 ] || fail "$(bindings_for p1) Bindings for p1"
    no_device_twice
}

# n1 and n2 with 2 GPUs each. One pod with two claims of 2 GPUs: both
# must be on the pod's node, no node has 4: pending, neither allocated. It
# goes; then two pods of 2 GPUs cannot share a node, so one is on each, each
# claim with gpu-0 and gpu-1 of its node; a third pod (1 GPU) finds none
# left: pending, its claim not allocated.
case_no_share() {
    reset
    make_node n1 8 32Gi 0 110; make_node n2 8 32Gi 0 110
    base_classes
    node_slice n1 "$(gpus gpu 2 T4)"
    node_slice n2 "$(gpus gpu 2 T4)"
    claim cx1 "$(exactly gpus $DRV 2)"
    claim cx2 "$(exactly gpus $DRV 2)"
    dpod pboth cx1 cx2
    expect_pending pboth cx1
    ! allocated cx2 || fail "cx2 allocated: $(results cx2)"
    api_req DELETE "/api/v1/namespaces/default/pods/pboth?gracePeriodSeconds=0" -o /dev/null || fail "DELETE pboth"
    wait_until '[ "$(api_req GET /api/v1/namespaces/default/pods/pboth -o /dev/null -w "%{http_code}")" = 404 ]' 10 || fail "pboth remains"
    claim ca "$(exactly gpus $DRV 2)"
    claim cb "$(exactly gpus $DRV 2)"
    claim cc "$(exactly gpus $DRV 1)"
    dpod pa ca
    dpod pb cb
    wait_until '[ -n "$(node_of pa)" ] && [ -n "$(node_of pb)" ]' 30 || fail "pa '$(node_of pa)' pb '$(node_of pb)'"
    local na nb
    na=$(node_of pa) nb=$(node_of pb)
    [ "$na" != "$nb" ] || fail "pa and pb both on $na"
    expect_alloc ca pa "$na" "gpus $DRV $na gpu-0,gpus $DRV $na gpu-1"
    expect_alloc cb pb "$nb" "gpus $DRV $nb gpu-0,gpus $DRV $nb gpu-1"
    dpod pc cc
    expect_pending pc cc
    no_device_twice
}

# A claim already allocated pins its next pod to its node: s1 takes cs
# (1 T4, n1 is the only node with T4); s2 uses cs too: bound to n1 though n2
# has room, the allocation unchanged (gpu-0), reservedFor s1 then s2.
case_shared_claim() {
    reset
    cluster
    claim cs "$(exactly gpu gpu-t4 1)"
    dpod s1 cs
    expect_alloc cs s1 n1 "gpu $DRV n1 gpu-0"
    dpod s2 cs
    wait_until '[ "$(node_of s2)" = n1 ]' 30 || fail "s2 on '$(node_of s2)', want n1 (the claim's node)"
    [ "$(results cs)" = "gpu $DRV n1 gpu-0" ] || fail "allocation changed: $(results cs)"
    [ "$(reserved cs)" = "s1 $(pod_uid s1),s2 $(pod_uid s2)" ] || fail "reservedFor: $(reserved cs)"
    no_device_twice
}

# An allNodes slice (net.example.com, pool fabric): its device is allocated
# with no nodeSelector (kube's allocator adds none for allNodes devices), the
# pod bound to any node.
case_all_nodes() {
    reset
    cluster
    device_class nic "device.driver == \"net.example.com\""
    dra_post $DRA/resourceslices '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"fabric"},
        "spec":{"driver":"net.example.com","allNodes":true,"pool":{"name":"fabric","generation":1,"resourceSliceCount":1},
        "devices":[{"name":"nic-0"},{"name":"nic-1"}]}}'
    claim cn "$(exactly nic nic 1)"
    dpod pn cn
    wait_until '[ -n "$(node_of pn)" ]' 30 || fail "pn not bound: $(failed_of pn)"
    expect_alloc cn pn "$(node_of pn)" "nic net.example.com fabric nic-0" none
    # with a node-local device beside it, the node-local one decides the node
    claim cm "$(exactly nic nic 1)" "$(exactly gpu gpu-a100 1)"
    dpod pm cm
    expect_alloc cm pm n2 "gpu $DRV n2 gpu-0,nic net.example.com fabric nic-1"
    no_device_twice
}

# allocationMode All of class gpu-t4 on n1 alone (4 T4): every T4; then a
# pod wanting one T4 is pending. (One node: whether All of zero matching
# devices may allocate nothing elsewhere is not what this case is about.)
case_mode_all() {
    reset
    make_node n1 8 32Gi 0 110 || fail "node n1"
    base_classes
    node_slice n1 "$(gpus gpu 4 T4)"
    claim call "$(exactly all gpu-t4 All)"
    dpod pall call
    expect_alloc call pall n1 "all $DRV n1 gpu-0,all $DRV n1 gpu-1,all $DRV n1 gpu-2,all $DRV n1 gpu-3"
    claim cone "$(exactly gpu gpu-t4 1)"
    dpod pone cone
    expect_pending pone cone
    no_device_twice
}

# firstAvailable [big: an A100 of >= 80Gi, small: a T4]: with only n1's one
# T4 (no A100 slice yet) "gpu/small" gets n1's gpu-0; with n2's A100s
# published a second claim of the same spec can only have "gpu/big": n2's
# gpu-2 (the first of >= 80Gi).
case_first_available() {
    reset
    make_node n1 8 32Gi 0 110; make_node n2 8 32Gi 0 110
    base_classes
    node_slice n1 "$(gpus gpu 1 T4)"
    local fa='{"name":"gpu","firstAvailable":[{"name":"big","deviceClassName":"gpu-a100","count":1,
        "selectors":[{"cel":{"expression":"device.capacity[\"gpu.example.com\"].memory.compareTo(quantity(\"80Gi\")) >= 0"}}]},
        {"name":"small","deviceClassName":"gpu-t4","count":1}]}'
    claim f1 "$fa"
    dpod pf1 f1
    expect_alloc f1 pf1 n1 "gpu/small $DRV n1 gpu-0"
    node_slice n2 "$(jq -cn --argjson a "$(gpu gpu-0 A100 0 40Gi 1.5.0)" --argjson b "$(gpu gpu-1 A100 0 40Gi 1.5.0)" \
        --argjson c "$(gpu gpu-2 A100 1 80Gi 1.5.0)" --argjson d "$(gpu gpu-3 A100 1 80Gi 2.1.0)" '[$a, $b, $c, $d]')"
    claim f2 "$fa"
    dpod pf2 f2
    expect_alloc f2 pf2 n2 "gpu/big $DRV n2 gpu-2"
    no_device_twice
}

# One node, numa of gpu-0..3 = 0,1,1,0. Claim m1: requests a and b (1 each)
# with matchAttribute gpu.example.com/numa: a takes gpu-0 (numa 0), b skips
# gpu-1 and gpu-2 (numa 1) for gpu-3. Claim m2: 2 devices, same constraint:
# gpu-1 and gpu-2 (numa 1, what is left). Claim m3 (1 device) pending.
case_match_attribute() {
    reset
    make_node n1 8 32Gi 0 110
    base_classes
    node_slice n1 "$(jq -cn --argjson a "$(gpu gpu-0 T4 0 16Gi 1.0.0)" --argjson b "$(gpu gpu-1 T4 1 16Gi 1.0.0)" \
        --argjson c "$(gpu gpu-2 T4 1 16Gi 1.0.0)" --argjson d "$(gpu gpu-3 T4 0 16Gi 1.0.0)" '[$a, $b, $c, $d]')"
    claim m1 "$(exactly a $DRV 1)" "$(exactly b $DRV 1)" -- '[{"requests":["a","b"],"matchAttribute":"gpu.example.com/numa"}]'
    dpod pm1 m1
    expect_alloc m1 pm1 n1 "a $DRV n1 gpu-0,b $DRV n1 gpu-3"
    claim m2 "$(exactly pair $DRV 2)" -- '[{"matchAttribute":"gpu.example.com/numa"}]'
    dpod pm2 m2
    expect_alloc m2 pm2 n1 "pair $DRV n1 gpu-1,pair $DRV n1 gpu-2"
    claim m3 "$(exactly one $DRV 1)"
    dpod pm3 m3
    expect_pending pm3 m3
    no_device_twice
}

# Pool "h" of n1 spread over 2 slices (resourceSliceCount 2): with only
# h-a (h100-0, the only H100) the pool is incomplete and its devices are not
# used: pending. Once h-b (an L4) is published, the pod binds with h100-0.
case_incomplete_pool() {
    reset
    make_node n1 8 32Gi 0 110
    base_classes
    device_class gpu-h100 "device.attributes[\"$DRV\"].model == \"H100\""
    node_slice n1 "[$(gpu h100-0 H100 0 80Gi 2.0.0)]" h h-a 2
    claim ch "$(exactly gpu gpu-h100 1)"
    dpod ph ch
    expect_pending ph ch
    node_slice n1 "[$(gpu l4-0 L4 0 24Gi 2.0.0)]" h h-b 2
    expect_alloc ch ph n1 "gpu $DRV h h100-0"
}

# kube-scheduler's PreEnqueue: a pod whose claim comes from a template waits
# until the claim exists (status.resourceClaimStatuses names it): with the
# template missing, no claim, no Binding, and the scheduler says the pod
# waits for its claim c0 to be created (an event or the condition naming c0
# and saying "created", "template" or "wait"); once the template exists, the controller makes
# the claim and the pod is bound with n1's gpu-0 (gpu-t4: n1 only).
case_template_claim_waits() {
    reset
    cluster
    dpod tw tmpl:later-t4
    PENDING_WAIT=4 expect_pending tw none
    wait_until '{ failed_of tw; si_condition tw; } | grep -F c0 | grep -qEi "creat|template|wait"' 10 ||
        fail "nothing says tw waits for its claim c0: events '$(failed_of tw | tr '\n' ' ')', condition '$(si_condition tw)'"
    template later-t4 "$(exactly gpu gpu-t4 1)"
    wait_until '[ -n "$(generated c0 tw)" ]' 15 || fail "no claim for tw"
    expect_alloc "$(generated c0 tw)" tw n1 "gpu $DRV n1 gpu-0"
}

# 5 A100 where n2 has 4: pending; the FailedScheduling event or the
# PodScheduled condition names the claim (c5) and its request (gpus).
case_unsatisfiable() {
    reset
    cluster
    claim c5 "$(exactly gpus gpu-a100 5)"
    dpod p5 c5
    wait_until '{ failed_of p5; si_condition p5; } | grep -F c5 | grep -qF gpus' 20 ||
        fail "no reason naming claim c5 and request gpus: events '$(failed_of p5 | tr '\n' ' ')', condition '$(si_condition p5)'"
    expect_pending p5 c5
}

# A selector outside the evaluator's subset (a comprehension macro): not
# guessed. The pod stays pending with one event (one Event object, however
# often the scheduler retries) naming the expression.
case_unsupported_cel() {
    reset
    cluster
    local expr='["T4", "L4"].exists(m, device.attributes["gpu.example.com"].model == m)'
    claim cx "$(exactly gpu $DRV 1 "$expr")"
    dpod px cx
    wait_until 'api_get "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dpx" | jq -e --arg e "$expr" "[.items[] | select(.message | contains(\$e))] | length >= 1"' 20 ||
        fail "no event naming the expression: $(events_for px | tr '\n' ' ')"
    PENDING_WAIT=8 expect_pending px cx
    local n
    n=$(api_get "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dpx" | jq --arg e "$expr" '[.items[] | select(.message | contains($e))] | length')
    [ "$n" = 1 ] || fail "$n events name the expression (want 1): $(events_for px | tr '\n' ' ')"
}

# PodGroup g (minMember 4): members 0-2 each claim one T4 (n1 has 4), member
# 3 claims an A100 and none is published: the gang does not fit, so no claim
# is allocated and no member bound (no Binding sent). n2's A100s published:
# all four bound, g-3 with n2's gpu-0, g-0..2 with three distinct T4s.
case_gang() {
    reset
    make_node n1 8 32Gi 0 110; make_node n2 8 32Gi 0 110
    base_classes
    node_slice n1 "$(gpus gpu 4 T4)"
    dra_post "$PG_API" '{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup","metadata":{"name":"g"},"spec":{"minMember":4}}'
    local i
    for i in 0 1 2; do claim "gc-$i" "$(exactly gpu gpu-t4 1)"; done
    claim gc-3 "$(exactly gpu gpu-a100 1)"
    for i in 0 1 2 3; do dpod "g-$i" "gc-$i" -- --label "$PG_LABEL=g"; done
    sleep 6
    for i in 0 1 2 3; do
        [ -z "$(node_of "g-$i")" ] || fail "g-$i bound to $(node_of "g-$i") while the gang does not fit"
        ! allocated "gc-$i" || fail "gc-$i allocated while the gang does not fit: $(results "gc-$i")"
    done
    [ "$(grep -cE " POST /api/v1/namespaces/default/pods/g-[0-9]/binding " "$SI_LOG")" = 0 ] || fail "Bindings sent for the gang"
    node_slice n2 "$(gpus gpu 4 A100 80Gi 2.0.0)"
    expect_alloc gc-3 g-3 n2 "gpu $DRV n2 gpu-0"
    for i in 0 1 2; do
        wait_until "[ \"\$(node_of g-$i)\" = n1 ]" 20 || fail "g-$i not on n1"
        [ "$(alloc_node "gc-$i")" = n1 ] && [ "$(reserved "gc-$i")" = "g-$i $(pod_uid "g-$i")" ] || fail "gc-$i: $(claim_json "gc-$i" | jq -c .status)"
    done
    no_device_twice
}

# n1 with 2 T4. low (priority 0) holds both through its template claim;
# high (priority 1000) claims 2 T4: low is evicted, the fake controller
# deletes low's generated claim (its pod gone) after clearing it, and high
# is bound to n1 with gpu-0 and gpu-1.
case_preemption() {
    reset
    make_node n1 8 32Gi 0 110
    base_classes
    node_slice n1 "$(gpus gpu 2 T4)"
    make_priority_class dra-low 0 2>/dev/null || true
    make_priority_class dra-high 1000 2>/dev/null || true
    template two-t4 "$(exactly gpus gpu-t4 2)"
    dpod low tmpl:two-t4 -- --priority-class dra-low
    wait_until '[ -n "$(generated c0 low)" ]' 15 || fail "no claim for low"
    local lc
    lc=$(generated c0 low)
    expect_alloc "$lc" low n1 "gpus $DRV n1 gpu-0,gpus $DRV n1 gpu-1"
    claim hc "$(exactly gpus gpu-t4 2)"
    dpod high hc -- --priority-class dra-high
    expect_alloc hc high n1 "gpus $DRV n1 gpu-0,gpus $DRV n1 gpu-1"
    [ "$(api_req GET "/api/v1/namespaces/default/pods/low" -o /dev/null -w '%{http_code}')" = 404 ] || fail "low not evicted"
    wait_until "[ \"\$(api_req GET $CLAIMS/$lc -o /dev/null -w '%{http_code}')\" = 404 ]" 15 || fail "low's claim $lc remains"
    no_device_twice
}

# 10 pods with one claim of 1 GPU each, 8 GPUs (n1 T4 x4, n2 A100 x4): the
# scheduler is killed (SIGKILL) as soon as a claim has the finalizer (its
# PreBind began) and started again. In
# the end 8 pods are bound and 2 pending; every bound pod's claim is
# allocated on its node and reserved for it; the 2 pending pods' claims are
# not allocated; all 8 devices are in use, none twice.
case_restart() {
    reset
    cluster
    local i
    for i in $(seq 0 9); do claim "rc-$i" "$(exactly gpu $DRV 1)"; done
    for i in $(seq 0 9); do dpod "r-$i" "rc-$i" & done
    wait
    # killed as soon as the first PreBind began (a claim has the finalizer),
    # so that some allocations are in flight
    wait_until 'api_get "$CLAIMS" | jq -e --arg f "$FINALIZER" "any(.items[]; .metadata.finalizers // [] | index(\$f) != null)"' 30 0.1 ||
        fail "no PreBind began before the restart"
    stop_scheduler KILL || true
    SCHED_KUBECONFIG=$SI_SCHED_KC start_scheduler
    wait_until '[ "$(api_get "/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName%21%3D" | jq ".items | length")" = 8 ]' 60 ||
        fail "$(api_get "/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName%21%3D" | jq ".items | length") of 8 bound after the restart"
    sleep 3
    local bound=0 node
    for i in $(seq 0 9); do
        node=$(node_of "r-$i")
        if [ -n "$node" ]; then
            bound=$((bound + 1))
            [ "$(alloc_node "rc-$i")" = "$node" ] || fail "rc-$i allocated on '$(alloc_node "rc-$i")', r-$i on $node"
            [ "$(reserved "rc-$i")" = "r-$i $(pod_uid "r-$i")" ] || fail "rc-$i reservedFor '$(reserved "rc-$i")'"
        else
            ! allocated "rc-$i" || fail "rc-$i of pending r-$i allocated: $(results "rc-$i")"
        fi
    done
    [ "$bound" = 8 ] || fail "$bound bound"
    [ "$(api_get "$DRA/resourceclaims" | jq '[.items[].status.allocation.devices.results[]?] | length')" = 8 ] || fail "not 8 devices allocated"
    no_device_twice
}

# DEPENDS ON the lead's mapping flag (--dra-queue-resources CLASS=RESOURCE,
# here gpu.example.com=nvidia.com/gpu, the resource a Queue's "gpu" counts).
# Queue qd limited to 2 GPUs; three pods of qd each claim one device of class
# gpu.example.com (n1 has 4): 2 bound, the third pending, its claim not
# allocated; the Queue's status counts 2 GPUs allocated.
case_queue_quota() {
    reset
    stop_scheduler || true
    SCHED_KUBECONFIG=$SI_SCHED_KC start_scheduler "${DRA_QUEUE_FLAG[@]}"
    make_node n1 8 32Gi 0 110
    base_classes
    node_slice n1 "$(gpus gpu 4 T4)"
    make_queue qd '{"resources":{"gpu":{"limit":2}}}' || fail "Queue qd"
    local i
    for i in 0 1 2; do claim "qc-$i" "$(exactly gpu $DRV 1)"; done
    for i in 0 1; do dpod "q-$i" "qc-$i" -- --label "$QLABEL=qd"; done
    for i in 0 1; do wait_until "[ \"\$(node_of q-$i)\" = n1 ]" 30 || fail "q-$i not bound"; done
    dpod q-2 qc-2 -- --label "$QLABEL=qd"
    expect_pending q-2 qc-2
    wait_until 'api_get /apis/resource.aibee.cn/v1alpha1/queues/qd | jq -e ".status.allocated.gpu == 2"' 15 ||
        fail "Queue qd status: $(api_get /apis/resource.aibee.cn/v1alpha1/queues/qd | jq -c .status)"
    no_device_twice
    stop_scheduler || true
    SCHED_KUBECONFIG=$SI_SCHED_KC start_scheduler
}

# ---------------------------------------------------------------------------

cp_start
dra_standin_start

run_case crds-served case_crds_served
run_case standin-claim-statuses case_standin_claim_statuses
run_case controller-template-claims case_controller_template_claims
run_case checks-on-kube-writes case_checks_on_kube_writes

# E2E_DRA_FORCE=1: run them anyway (to try the harness against any binary).
if [ "${E2E_DRA_FORCE:-0}" != 1 ] && { [ ! -x "$AISCHED_BIN" ] || ! "$AISCHED_BIN" --help 2>&1 | grep -q -- --dra-queue-resources; }; then
    why="$AISCHED_BIN has no DRA (its --help does not name --dra-queue-resources)"
    [ -x "$AISCHED_BIN" ] || why="no scheduler binary at $AISCHED_BIN"
    log "SKIP the scheduler cases: $why"
    echo "SKIP ${E2E_FILE}scheduler-cases ($why)"
    [ -n "${E2E_RESULTS:-}" ] && echo "SKIP ${E2E_FILE}scheduler-cases ($why)" >>"$E2E_RESULTS"
    finish
    exit
fi
run_case chart-rbac-dra case_chart_rbac
SCHED_KUBECONFIG=$SI_SCHED_KC start_scheduler
run_case class-and-claim-cel case_cel_selectors
run_case claims-not-sharing-a-node case_no_share
run_case shared-claim case_shared_claim
run_case all-nodes-slice case_all_nodes
run_case allocation-mode-all case_mode_all
run_case first-available case_first_available
run_case match-attribute case_match_attribute
run_case incomplete-pool case_incomplete_pool
run_case template-claim-waits case_template_claim_waits
run_case unsatisfiable-claim case_unsatisfiable
run_case unsupported-cel case_unsupported_cel
run_case gang-claim-does-not-fit case_gang
run_case preemption-frees-devices case_preemption
run_case restart-no-device-lost case_restart
run_case queue-quota-dra-gpus case_queue_quota
run_case clean-shutdown stop_scheduler_clean
finish
