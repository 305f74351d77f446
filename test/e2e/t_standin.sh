#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Pod fields of Kubernetes 1.26-1.35 (issue 23), end to end, against a
# STAND-IN API server. The suite's kube-apiserver is v1.20, which drops the
# fields these cases are about (spec.schedulingGates, native sidecars'
# restartPolicy, pod-level spec.resources, spec.resourceClaims, resize
# status), so the scheduler and kubectl here talk to standin_apiserver.py, a
# proxy in front of it that keeps those fields and plays a 1.33-1.35
# kube-apiserver's rules for them (the SchedulingGated condition at creation,
# gates only removed, the 409 for a Binding of a gated pod). It is not a
# kube-apiserver: what it plays is listed in its docstring, and the first
# cases check the stand-in itself. Everything else is the real v1.20 server's.
#
# Cases (each outcome worked out by hand from kube-scheduler's rule, beside it):
#   standin-fields-round-trip  the fields through GET, LIST, WATCH and a status PATCH
#   standin-gate-patch-rules   gates only removed, none twice (422), merge / strategic / JSON patch, MODIFIED event
#   binding-refused-for-gated  the stand-in's 409 for a Binding of a gated pod
#   gated-not-scheduled        a gated pod: no Binding, no FailedScheduling; ungated: bound
#   gated-gang                 a gang of 3 with one gated member: none bound; ungated: all 3
#   native-sidecar-counted     a sidecar counts beside the app containers
#   pod-level-resources        spec.resources.requests is the pod's request
#   resize-allocated-counted   a pod's resize status (allocated 3 cpu) counts over its spec (1 cpu)
#   dra-claims-held            a pod with DRA claims, DRA not served: pending, saying why
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=standin.sh
source "$(dirname "$0")/standin.sh"
export E2E_FILE=standin/

PG_LABEL=scheduling.x-k8s.io/pod-group
PG_API=/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups
GATE='{"spec":{"schedulingGates":[{"name":"example.com/hold"}]}}'
GATED_MSG="Scheduling is blocked due to non-empty scheduling gates"

# ---------------------------------------------------------------------------
# the stand-in: standin_start, si, si_req, si_send, si_create, si_pod_json,
# node_of, failed_of, bindings_for, si_condition are standin.sh's.

# si_pod NAME [pod_json options]: si_create, failing the case unless 201.
si_pod() { si_create "$@" || fail "create $1"; }
# bound_with LABEL=VALUE: count_bound with one curl.
bound_with() {
    api_get "/api/v1/namespaces/default/pods?labelSelector=${1/\//%2F}&fieldSelector=spec.nodeName%21%3D" | jq '.items | length'
}
# expect_insufficient_cpu NAME: a FailedScheduling event for NAME saying
# "Insufficient cpu", and NAME not bound.
expect_insufficient_cpu() {
    wait_until "failed_of $1 | grep -q 'Insufficient cpu'" 20 ||
        fail "no 'Insufficient cpu' FailedScheduling for $1 (node: '$(node_of "$1")', events: $(events_for "$1" | tr '\n' ' '))"
    [ -z "$(node_of "$1")" ] || fail "$1 was bound to $(node_of "$1")"
}
# reset: no pod, no node (curl: a kubectl start costs about a second here).
# Events stay: each case's pods have names of their own.
# holder P [pod_json options]: a fresh n1 of 4 cpu and pod P-a on it.
holder() {
    local p=$1; shift
    reset
    make_node n1 4 8Gi 0 110
    si_pod "$p-a" "$@"
    wait_until "[ \"\$(node_of $p-a)\" = n1 ]" 30 || fail "$p-a not bound"
}
# rest_is_one_cpu P: with P-a counting 3 cpu on n1 (4 cpu), P-b (1.5 cpu)
# stays pending ("Insufficient cpu") and P-c (1 cpu, exactly the rest) binds.
rest_is_one_cpu() {
    si_pod "$1-b" --cpu 1500m
    expect_insufficient_cpu "$1-b"
    si_pod "$1-c" --cpu 1
    wait_until "[ \"\$(node_of $1-c)\" = n1 ]" 30 || fail "$1-c (1 cpu, exactly the rest) not bound"
}
reset() {
    api_req DELETE "/api/v1/namespaces/default/pods?gracePeriodSeconds=0" -o /dev/null || fail "DELETE pods"
    api_req DELETE /api/v1/nodes -o /dev/null || fail "DELETE nodes"
    wait_until '[ "$(api_get /api/v1/pods | jq ".items | length")" = 0 ] && [ "$(api_get /api/v1/nodes | jq ".items | length")" = 0 ]' 30 ||
        fail "reset: objects remain"
}

# si_watch NAME FILE: a watch of pod NAME through the stand-in into FILE, in
# the background (its pid in SI_WATCH_PID); si_watch_end FILE N: once FILE
# has N MODIFIED events (10 s at most), the watch is stopped.
si_watch() {
    si_req GET "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=20&fieldSelector=metadata.name%3D$1" -N >"$2" &
    SI_WATCH_PID=$!
    wait_until "grep -q ADDED '$2'" 10 || fail "no ADDED event on the watch of $1"
}
si_watch_end() {
    wait_until "[ \"\$(grep -c MODIFIED '$1')\" -ge $2 ]" 10 || log "fewer than $2 MODIFIED events"
    kill "$SI_WATCH_PID" 2>/dev/null || true
    wait "$SI_WATCH_PID" 2>/dev/null || true
}

# ---------------------------------------------------------------------------
# the stand-in itself

SIDECAR='{"name":"proxy","image":"registry.invalid/proxy:1","restartPolicy":"Always","resources":{"requests":{"cpu":"1"}}}'

# Every kept field of a 1.35 pod, as the API server serves it, through GET,
# LIST and WATCH (the v1.20 server itself has none of them), and resize
# status written through pods/status kept and announced by a MODIFIED event.
case_fields_round_trip() {
    reset
    local spec got w want pick
    spec=$(jq -cn --argjson s "$SIDECAR" '{spec: {schedulingGates: [{name: "example.com/a"}],
        resources: {requests: {cpu: "2"}}, resourceClaims: [{name: "gpu", resourceClaimName: "gpu-claim"}],
        initContainers: [$s],
        containers: [{name: "main", image: "registry.invalid/pause:3",
                      resizePolicy: [{resourceName: "cpu", restartPolicy: "NotRequired"}],
                      resources: {requests: {cpu: "500m"}, claims: [{name: "gpu"}]}}]}}')
    si_pod rt --scheduler nobody --merge "$spec"
    want='{"gates":[{"name":"example.com/a"}],"res":{"requests":{"cpu":"2"}},"claims":[{"name":"gpu","resourceClaimName":"gpu-claim"}],"rp":"Always","resize":[{"resourceName":"cpu","restartPolicy":"NotRequired"}],"cclaims":[{"name":"gpu"}]}'
    pick='{gates: .spec.schedulingGates, res: .spec.resources, claims: .spec.resourceClaims,
           rp: .spec.initContainers[0].restartPolicy, resize: .spec.containers[0].resizePolicy,
           cclaims: .spec.containers[0].resources.claims}'
    [ "$(api_get /api/v1/namespaces/default/pods/rt | jq -c '.spec.schedulingGates // "dropped"')" = '"dropped"' ] ||
        fail "the v1.20 server kept spec.schedulingGates: this suite's premise is wrong"
    got=$(si_pod_json rt | jq -c "$pick")
    [ "$got" = "$want" ] || fail "GET through the stand-in: $got"
    got=$(si get pods -o json | jq -c ".items[] | select(.metadata.name == \"rt\") | $pick")
    [ "$got" = "$want" ] || fail "LIST through the stand-in: $got"
    [ "$(si_condition rt)" = "False SchedulingGated $GATED_MSG" ] || fail "condition: $(si_condition rt)"
    # a watch's ADDED event (the pod as it is) carries the fields
    w=$CP_WORK/rt.watch
    si_watch rt "$w"
    # the kubelet's part, played here: a 1.33+ kubelet's status during a resize
    local now st out
    now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    st=$(jq -cn --arg t "$now" '{status: {conditions: [{type: "PodResizeInProgress", status: "True",
        lastProbeTime: null, lastTransitionTime: $t}], containerStatuses: [{name: "main", image: "registry.invalid/pause:3",
        imageID: "", ready: false, restartCount: 0, started: false, state: {waiting: {reason: "ContainerCreating"}},
        allocatedResources: {cpu: "750m"}, resources: {requests: {cpu: "750m"}}}]}}')
    out=$(si_send PATCH /api/v1/namespaces/default/pods/rt/status application/strategic-merge-patch+json "$st")
    [ "${out##*$'\n'}" = 200 ] || fail "status PATCH -> ${out%$'\n'*}"
    si_watch_end "$w" 1
    jq -se 'any(.[]; .type == "ADDED" and .object.spec.schedulingGates == [{"name":"example.com/a"}]
           and .object.spec.initContainers[0].restartPolicy == "Always")' "$w" >/dev/null ||
        fail "no ADDED event with the fields: $(head -c 600 "$w")"
    jq -se 'any(.[]; .type == "MODIFIED" and .object.status.containerStatuses[0].allocatedResources.cpu == "750m"
           and .object.status.containerStatuses[0].resources.requests.cpu == "750m"
           and any(.object.status.conditions[]; .type == "PodResizeInProgress"))' "$w" >/dev/null ||
        fail "no MODIFIED event with the resize status: $(tail -c 600 "$w")"
    got=$(si_pod_json rt | jq -c '.status.containerStatuses[0] | [.allocatedResources.cpu, .resources.requests.cpu]')
    [ "$got" = '["750m","750m"]' ] || fail "resize status through GET: $got"
}

# Gates may only be removed (422 naming the new gate, as validation.go's
# validateOnlyDeletedSchedulingGates words it); a strategic merge patch
# deletes one by its merge key, a JSON patch removes the list, and each
# change reaches a watcher as a MODIFIED event.
case_gate_patch_rules() {
    reset
    local out w
    si_pod gp --scheduler nobody --merge '{"spec":{"schedulingGates":[{"name":"example.com/a"},{"name":"example.com/b"}]}}'
    out=$(si_send PATCH /api/v1/namespaces/default/pods/gp application/merge-patch+json \
        '{"spec":{"schedulingGates":[{"name":"example.com/a"},{"name":"example.com/b"},{"name":"example.com/c"}]}}')
    [ "${out##*$'\n'}" = 422 ] || fail "adding a gate -> ${out##*$'\n'} (want 422)"
    [ "$(jq -r .message <<<"${out%$'\n'*}")" = "Pod \"gp\" is invalid: spec.schedulingGates[2].name: Forbidden: only deletion is allowed, but found new scheduling gate 'example.com/c'" ] ||
        fail "422 message: ${out%$'\n'*}"
    # at creation: no gate twice (validation.go, validateSchedulingGates)
    out=$(si_send POST /api/v1/namespaces/default/pods application/json \
        "$(pod_json dup --scheduler nobody --merge '{"spec":{"schedulingGates":[{"name":"example.com/a"},{"name":"example.com/a"}]}}')")
    [ "${out##*$'\n'}" = 422 ] && [ "$(jq -r .message <<<"${out%$'\n'*}")" = 'Pod "dup" is invalid: spec.schedulingGates[1]: Duplicate value: "example.com/a"' ] ||
        fail "duplicate gates: $out"
    w=$CP_WORK/gp.watch
    si_watch gp "$w"
    si patch pod gp -p '{"spec":{"schedulingGates":[{"$patch":"delete","name":"example.com/a"}]}}' >/dev/null ||
        fail "strategic merge patch"
    [ "$(si_pod_json gp | jq -c '[.spec.schedulingGates[].name]')" = '["example.com/b"]' ] || fail "after the strategic patch: $(si_pod_json gp | jq -c .spec.schedulingGates)"
    wait_until "[ \"\$(grep -c MODIFIED '$w')\" -ge 1 ]" 10 || fail "no MODIFIED event for the strategic patch"
    si patch pod gp --type json -p '[{"op":"remove","path":"/spec/schedulingGates"}]' >/dev/null || fail "JSON patch"
    [ "$(si_pod_json gp | jq -c '.spec.schedulingGates // "none"')" = '"none"' ] || fail "gates left: $(si_pod_json gp | jq -c .spec.schedulingGates)"
    si_watch_end "$w" 2
    out=$(jq -c 'select(.type == "MODIFIED") | [.object.spec.schedulingGates[]?.name]' "$w" | tr '\n' ' ')
    [ "$out" = '["example.com/b"] [] ' ] || fail "MODIFIED events' gates: $out"
    # removing a gate never clears the condition (kube: only the Binding or the scheduler replaces it)
    [ "$(si_condition gp)" = "False SchedulingGated $GATED_MSG" ] || fail "condition after the gates went: $(si_condition gp)"
}

# kube >= 1.26 refuses a Binding of a gated pod (storage.go: "pod %v has
# non-empty .spec.schedulingGates" as a Conflict on pods/binding).
case_binding_refused() {
    reset
    make_node n1 4 8Gi 0 110
    si_pod held --scheduler nobody --merge "$GATE"
    local b out
    b='{"apiVersion":"v1","kind":"Binding","metadata":{"name":"held"},"target":{"apiVersion":"v1","kind":"Node","name":"n1"}}'
    out=$(si_send POST /api/v1/namespaces/default/pods/held/binding application/json "$b")
    [ "${out##*$'\n'}" = 409 ] || fail "Binding of a gated pod -> ${out##*$'\n'} (want 409)"
    out=${out%$'\n'*}
    [ "$(jq -r '[.kind, .status, .reason, .code, .details.kind, .details.name] | join(" ")' <<<"$out")" = "Status Failure Conflict 409 pods/binding held" ] ||
        fail "409 Status: $out"
    [ "$(jq -r .message <<<"$out")" = 'Operation cannot be fulfilled on pods/binding "held": pod held has non-empty .spec.schedulingGates' ] ||
        fail "409 message: $out"
    [ -z "$(node_of held)" ] || fail "held got bound"
    si patch pod held --type merge -p '{"spec":{"schedulingGates":null}}' >/dev/null || fail "gate removal"
    out=$(si_send POST /api/v1/namespaces/default/pods/held/binding application/json "$b")
    [ "${out##*$'\n'}" = 201 ] || fail "Binding after the gate went -> ${out##*$'\n'}: ${out%$'\n'*}"
    [ "$(node_of held)" = n1 ] || fail "held not on n1"
}

# ---------------------------------------------------------------------------
# the scheduler

# kube-scheduler's SchedulingGates PreEnqueue keeps a gated pod out of the
# queue: no attempt (no Binding, no FailedScheduling), the API server's
# SchedulingGated condition stays; once the gate goes it is scheduled like any
# pod (n1 has 4 cpu, the pod asks 500m). An ungated pod bound meanwhile shows
# the scheduler sees pods through the stand-in.
case_gated_not_scheduled() {
    reset
    make_node n1 4 8Gi 0 110
    si_pod gated --cpu 500m --merge "$GATE"
    si_pod free --cpu 500m
    wait_until '[ "$(node_of free)" = n1 ]' 30 || fail "the ungated pod was not bound"
    sleep 5
    [ -z "$(node_of gated)" ] || fail "the gated pod was bound to $(node_of gated)"
    [ "$(bindings_for gated)" = 0 ] || fail "$(bindings_for gated) Binding(s) sent for the gated pod"
    [ -z "$(failed_of gated)" ] || fail "FailedScheduling for the gated pod: $(events_for gated)"
    [ "$(si_condition gated)" = "False SchedulingGated $GATED_MSG" ] || fail "condition: $(si_condition gated)"
    si patch pod gated --type merge -p '{"spec":{"schedulingGates":null}}' >/dev/null || fail "gate removal"
    wait_until '[ "$(node_of gated)" = n1 ]' 10 || fail "not bound within 10 s of the gate's removal"
    [ "$(bindings_for gated)" = 1 ] || fail "$(bindings_for gated) Bindings for the gated pod (want 1)"
}

# A PodGroup of minMember 3 whose third member is gated: the gang has 2
# schedulable members < 3, so none is bound (and no Binding is sent); the gate
# removed, 3 members of 1 cpu fit n1 (8 cpu): all 3 bound.
case_gated_gang() {
    reset
    api_req DELETE "$PG_API" -o /dev/null || fail "DELETE podgroups"
    make_node n1 8 16Gi 0 110
    api_post_json "$PG_API" '{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup","metadata":{"name":"g"},"spec":{"minMember":3}}' ||
        fail "PodGroup"
    si_pod g-0 --cpu 1 --label "$PG_LABEL=g"
    si_pod g-1 --cpu 1 --label "$PG_LABEL=g"
    si_pod g-2 --cpu 1 --label "$PG_LABEL=g" --merge "$GATE"
    sleep 5
    [ "$(bound_with "$PG_LABEL=g")" = 0 ] || fail "members bound while one is gated: $(bound_with "$PG_LABEL=g")"
    local n
    n=$(grep -cE " POST /api/v1/namespaces/default/pods/g-[0-9]/binding " "$SI_LOG" || true)
    [ "$n" = 0 ] || fail "$n Bindings sent for the gang while a member is gated"
    si patch pod g-2 --type json -p '[{"op":"remove","path":"/spec/schedulingGates"}]' >/dev/null || fail "gate removal"
    wait_until '[ "$(bound_with "$PG_LABEL=g")" = 3 ]' 15 || fail "$(bound_with "$PG_LABEL=g") of 3 members bound"
}

# kube >= 1.29 (sidecars): a restartable init container runs beside the app
# containers, so pod A's cpu request is max(2 + 1, 1) = 3, not v1.20's
# max(2, 1) = 2. On 4 cpu, B (1.5) does not fit: 3 + 1.5 = 4.5 > 4 ("Insufficient
# cpu"; v1.20's rule would bind it: 2 + 1.5 = 3.5). C (1 cpu) fits: 3 + 1 = 4.
case_native_sidecar() {
    holder sc --cpu 2 --merge "{\"spec\":{\"initContainers\":[$SIDECAR]}}"
    rest_is_one_cpu sc
}

# kube >= 1.34 (pod-level resources, beta, on): spec.resources.requests is
# the pod's request: A asks 3 cpu (its two containers 100m each, 0.2 by
# v1.20's rule). B (1.5) on the 4-cpu node: 3 + 1.5 > 4, pending ("Insufficient
# cpu"; v1.20: 0.2 + 1.5 fits). C (1 cpu) fits: 3 + 1 = 4.
case_pod_level_resources() {
    holder pl --merge '{"spec":{"resources":{"requests":{"cpu":"3"}},"containers":[
        {"name":"main","image":"registry.invalid/pause:3","resources":{"requests":{"cpu":"100m"}}},
        {"name":"helper","image":"registry.invalid/pause:3","resources":{"requests":{"cpu":"100m"}}}]}}'
    rest_is_one_cpu pl
}

# kube >= 1.33 (in-place resize, beta, on): a container's request is
# max(spec, status.containerStatuses[].resources) unless the resize is
# infeasible. A was resized down to 1 cpu and the kubelet has not done it yet
# (allocated and actual 3 cpu, PodResizeInProgress; the test plays that
# kubelet through the stand-in's pods/status): A counts 3. B (1.5) on 4 cpu:
# 3 + 1.5 > 4, pending (v1.20: 1 + 1.5 fits). C (1 cpu) fits: 3 + 1 = 4.
case_resize_allocated() {
    holder rs --cpu 1
    local now st out
    now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    st=$(jq -cn --arg t "$now" '{status: {phase: "Running",
        conditions: [{type: "PodResizeInProgress", status: "True", lastProbeTime: null, lastTransitionTime: $t}],
        containerStatuses: [{name: "main", image: "registry.invalid/pause:3", imageID: "", ready: true,
          restartCount: 0, started: true, state: {running: {startedAt: $t}},
          allocatedResources: {cpu: "3"}, resources: {requests: {cpu: "3"}}}]}}')
    out=$(si_send PATCH /api/v1/namespaces/default/pods/rs-a/status application/strategic-merge-patch+json "$st")
    [ "${out##*$'\n'}" = 200 ] || fail "the kubelet's status PATCH -> ${out%$'\n'*}"
    [ "$(si_pod_json rs-a | jq -r '.status.containerStatuses[0].allocatedResources.cpu')" = 3 ] || fail "resize status not kept"
    sleep 1 # the MODIFIED event reaches the scheduler's watch
    rest_is_one_cpu rs
}

# This server does not serve DRA's objects (resource.k8s.io/v1; t_dra.sh
# serves them as CRDs): a pod with spec.resourceClaims is never bound, and
# says why (an event or condition naming DRA claims and that the API does
# not serve them). The 100m pod beside it binds.
case_dra_claims_held() {
    reset
    make_node n1 4 8Gi 0 110
    si_pod claim --merge '{"spec":{"resourceClaims":[{"name":"gpu","resourceClaimName":"gpu-claim"}],
        "containers":[{"name":"main","image":"registry.invalid/pause:3",
                       "resources":{"requests":{"cpu":"100m"},"claims":[{"name":"gpu"}]}}]}}'
    si_pod dra-free --cpu 100m
    wait_until '[ "$(node_of dra-free)" = n1 ]' 30 || fail "the pod without claims was not bound"
    wait_until '{ failed_of claim; si_condition claim; } | grep -i DRA | grep -i claim | grep -q "does not serve"' 20 ||
        fail "nothing says DRA claims hold the pod: events '$(events_for claim | tr '\n' ' ')', condition '$(si_condition claim)'"
    sleep 1
    [ -z "$(node_of claim)" ] || fail "the pod with DRA claims was bound to $(node_of claim)"
    [ "$(bindings_for claim)" = 0 ] || fail "$(bindings_for claim) Binding(s) sent for the pod with DRA claims"
}

cp_start
# cp_start installed the PodGroup CRD (pools/podgroup-crd.yaml)
api_get /apis/scheduling.x-k8s.io/v1alpha1 | jq -e '.resources[] | select(.name == "podgroups")' >/dev/null ||
    die "no PodGroup API"
# kube >= 1.24 (Indexed Jobs; alpha in 1.21): a Job with completionMode
# Indexed and parallelism == completions makes its pods a gang (workload
# groups: the grouper GETs the Job, through the stand-in, which keeps the
# completionMode v1.20 drops). Two pods of 2 cpu owned by the Job, on n1 (4
# cpu): the first alone is not bound (the gang needs 2); with the second both
# are, labelled to the PodGroup job-ij (minMember 2, controlled by the Job).
# The control: a Job without completionMode (NonIndexed) leaves its pod
# single: bound alone (on n2), no PodGroup.
JOB_API=/apis/batch/v1/namespaces/default/jobs
si_job() { # NAME [SPEC-JSON-TO-MERGE]: prints the created Job's uid
    local out
    out=$(si_send POST "$JOB_API" application/json "$(jq -cn --arg n "$1" --argjson x "${2:-{\}}" \
        '{apiVersion: "batch/v1", kind: "Job", metadata: {name: $n},
          spec: ({parallelism: 2, completions: 2, template: {spec: {restartPolicy: "Never", schedulerName: "nobody",
                  containers: [{name: "c", image: "registry.invalid/pause:3"}]}}} + $x)}')")
    [ "${out##*$'\n'}" = 201 ] || fail "create Job $1 -> ${out##*$'\n'}: ${out%$'\n'*}"
    jq -r .metadata.uid <<<"${out%$'\n'*}"
}
owned_by_job() { # NAME UID: --merge JSON of a Job controller ownerReference
    jq -cn --arg n "$1" --arg u "$2" '{metadata: {ownerReferences: [{apiVersion: "batch/v1", kind: "Job", name: $n,
        uid: $u, controller: true, blockOwnerDeletion: true}]}}'
}
case_indexed_job_gang() {
    reset
    api_req DELETE "$PG_API" -o /dev/null || fail "DELETE podgroups"
    api_req DELETE "$JOB_API?propagationPolicy=Background" -o /dev/null || fail "DELETE jobs"
    make_node n1 4 8Gi 0 110
    local uid cuid pg
    uid=$(si_job ij '{"completionMode":"Indexed"}')
    [ "$(si_req GET "$JOB_API/ij" | jq -r .spec.completionMode)" = Indexed ] || fail "the stand-in lost completionMode"
    [ "$(api_get "$JOB_API/ij" | jq -r '.spec.completionMode // "none"')" = none ] ||
        fail "v1.20 kept completionMode: this case no longer needs the stand-in"
    si_pod ij-0 --cpu 2 --label batch.kubernetes.io/job-completion-index=0 --merge "$(owned_by_job ij "$uid")"
    wait_until '[ "$(api_get "/api/v1/namespaces/default/pods/ij-0" | jq -r ".metadata.labels[\"$PG_LABEL\"] // \"\"")" = job-ij ]' 15 ||
        fail "ij-0 not labelled to job-ij"
    sleep 2
    [ -z "$(node_of ij-0)" ] || fail "one member of the Indexed Job's gang of 2 bound alone"
    si_pod ij-1 --cpu 2 --label batch.kubernetes.io/job-completion-index=1 --merge "$(owned_by_job ij "$uid")"
    wait_until '[ -n "$(node_of ij-0)" ] && [ -n "$(node_of ij-1)" ]' 20 ||
        fail "the gang was not bound: ij-0 '$(node_of ij-0)', ij-1 '$(node_of ij-1)'"
    pg=$(api_get "$PG_API/job-ij")
    [ "$(jq -r '.spec.minMember' <<<"$pg")" = 2 ] || fail "PodGroup job-ij: $(jq -c .spec <<<"$pg")"
    [ "$(jq -r '.metadata.ownerReferences[0] | "\(.kind) \(.uid) \(.controller)"' <<<"$pg")" = "Job $uid true" ] ||
        fail "PodGroup job-ij's owner: $(jq -c .metadata.ownerReferences <<<"$pg")"
    [ "$(jq -r '.metadata.labels["app.kubernetes.io/managed-by"]' <<<"$pg")" = ai-scheduler ] || fail "not labelled managed-by"
    # The control: NonIndexed (no completionMode), the same shape otherwise,
    # on a node of its own (the gang filled n1).
    make_node n2 4 8Gi 0 110
    cuid=$(si_job plain)
    si_pod plain-0 --cpu 100m --merge "$(owned_by_job plain "$cuid")"
    wait_until '[ -n "$(node_of plain-0)" ]' 20 || fail "the NonIndexed Job's pod was not bound alone"
    [ "$(api_req GET "$PG_API/job-plain" -o /dev/null -w '%{http_code}')" = 404 ] || fail "a PodGroup for a NonIndexed Job"
}

standin_start || die "the stand-in did not start"
run_case standin-fields-round-trip case_fields_round_trip
run_case standin-gate-patch-rules case_gate_patch_rules
run_case binding-refused-for-gated case_binding_refused
SCHED_KUBECONFIG=$SI_SCHED_KC start_scheduler
run_case gated-not-scheduled case_gated_not_scheduled
run_case gated-gang case_gated_gang
run_case native-sidecar-counted case_native_sidecar
run_case pod-level-resources case_pod_level_resources
run_case resize-allocated-counted case_resize_allocated
run_case dra-claims-held case_dra_claims_held
run_case indexed-job-gang case_indexed_job_gang
run_case clean-shutdown stop_scheduler_clean
finish
