#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Default spreading (PodTopologySpread's system defaults over the selector of
# the ReplicaSets/Services that select a pod), ImageLocality,
# preemptionPolicy: Never, and the UnsupportedConstraint warning, on a real
# API server. No controller-manager runs: the test creates the ReplicaSet and
# Service objects and the pods they would own itself.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=spread/

reset_all() {
    kc delete events --all -n default >/dev/null 2>&1 || true
    cp_reset
    kc delete rs,svc -n default -l e2e=spread --wait=false >/dev/null 2>&1 || true
    sched_alive || { log "scheduler is dead (crashed in an earlier case?); restarting it"; start_scheduler; }
}

# zone_nodes: three nodes in zone a, three in zone b (4 cpu, 8Gi each).
zone_nodes() {
    local z i
    for z in a b; do
        for i in 1 2 3; do make_node "$z$i" 4 8Gi 0 110 "topology.kubernetes.io/zone=$z" >/dev/null || return 1; done
    done
}

# make_rs NAME APP: a ReplicaSet selecting app=APP (replicas 0: nothing acts on it).
make_rs() {
    api_post_json /apis/apps/v1/namespaces/default/replicasets "$(jq -cn --arg n "$1" --arg a "$2" '
      {apiVersion: "apps/v1", kind: "ReplicaSet", metadata: {name: $n, labels: {e2e: "spread"}},
       spec: {replicas: 0, selector: {matchLabels: {app: $a}},
              template: {metadata: {labels: {app: $a}},
                         spec: {containers: [{name: "main", image: "registry.invalid/pause:3"}]}}}}')"
}

# owned_pod NAME APP RS-UID: a pod as the ReplicaSet controller would make it.
owned_pod() {
    make_pod "$1" --cpu 100m --mem 100Mi --label "app=$2" \
        --merge "$(jq -cn --arg u "$3" '{metadata: {ownerReferences: [{apiVersion: "apps/v1", kind: "ReplicaSet",
                   name: "web", uid: $u, controller: true, blockOwnerDeletion: true}]}}')" >/dev/null
}

# bind_one NAME: waits until it is bound; prints the node.
bind_one() {
    wait_until "[ -n \"\$(pod_node $1)\" ]" 30 || fail "$1 was not bound"
    pod_node "$1"
}

case_replicaset_spreads() {
    reset_all
    zone_nodes
    make_rs web web >/dev/null || fail "cannot create the ReplicaSet"
    local uid
    uid=$(kc get rs web -o jsonpath='{.metadata.uid}')
    sleep 1    # the scheduler's ReplicaSet watch sees it
    local i nodes=""
    for i in 0 1 2 3 4 5; do
        owned_pod "web-$i" web "$uid" || fail "cannot create web-$i"
        nodes="$nodes $(bind_one "web-$i")"
    done
    log "ReplicaSet pods on:$nodes"
    # kube v1.20: each new replica goes where the fewest replicas are (zone
    # first, then node), so six replicas take the six nodes, three per zone.
    local distinct za
    distinct=$(tr ' ' '\n' <<<"$nodes" | grep . | sort -u | wc -l)
    za=$(tr ' ' '\n' <<<"$nodes" | grep -c '^a')
    [ "$distinct" = 6 ] || fail "want 6 distinct nodes, got $distinct:$nodes"
    [ "$za" = 3 ] || fail "want 3 replicas in zone a, got $za:$nodes"

    # The same pods without an owner bin-pack (MostAllocated): no spreading.
    for i in 0 1 2; do
        make_pod "solo-$i" --cpu 500m --mem 1Gi --label app=solo >/dev/null
        bind_one "solo-$i" >/dev/null
    done
    local solo
    solo=$(for i in 0 1 2; do pod_node "solo-$i"; echo; done | sort -u | grep -c .)
    [ "$solo" = 1 ] || fail "unowned pods spread over $solo nodes (want bin-packed on 1)"
}

case_service_spreads() {
    reset_all
    zone_nodes
    api_post_json /api/v1/namespaces/default/services '{"apiVersion":"v1","kind":"Service","metadata":{"name":"api","labels":{"e2e":"spread"}},
        "spec":{"selector":{"tier":"api"},"ports":[{"port":80}]}}' >/dev/null || fail "cannot create the Service"
    sleep 1
    local i nodes=""
    for i in 0 1 2 3; do
        make_pod "api-$i" --cpu 100m --mem 100Mi --label tier=api >/dev/null
        nodes="$nodes $(bind_one "api-$i")"
    done
    log "Service pods on:$nodes"
    local distinct za
    distinct=$(tr ' ' '\n' <<<"$nodes" | grep . | sort -u | wc -l)
    za=$(tr ' ' '\n' <<<"$nodes" | grep -c '^a')
    [ "$distinct" = 4 ] || fail "want 4 distinct nodes, got:$nodes"
    [ "$za" = 2 ] || fail "want 2 pods per zone, got:$nodes"
}

case_image_locality() {
    reset_all
    make_node plain 4 8Gi 0 110 >/dev/null
    # A node reporting the pod's image (800MB): kube's ImageLocality favours it.
    api_post_json /api/v1/nodes "$(node_json cached 4 8Gi 0 110 |
        jq -c '.status.images = [{names: ["registry.invalid/model-server:v1"], sizeBytes: 838860800}]')" >/dev/null
    make_pod img --cpu 100m --mem 100Mi --merge '{"spec":{"containers":[{"name":"main","image":"registry.invalid/model-server:v1"}]}}' >/dev/null
    local n
    n=$(bind_one img)
    [ "$n" = cached ] || fail "pod went to $n, want the node holding its image"
}

case_preemption_policy_never() {
    reset_all
    make_node small 1 2Gi 0 110 >/dev/null
    kc get priorityclass spread-low >/dev/null 2>&1 || make_priority_class spread-low 10 >/dev/null
    kc get priorityclass spread-never >/dev/null 2>&1 ||
        api_post_json /apis/scheduling.k8s.io/v1/priorityclasses '{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",
            "metadata":{"name":"spread-never"},"value":1000,"preemptionPolicy":"Never"}' >/dev/null
    make_pod low --cpu 1 --priority-class spread-low >/dev/null
    bind_one low >/dev/null
    make_pod never --cpu 1 --priority-class spread-never >/dev/null
    [ "$(kc get pod never -o jsonpath='{.spec.preemptionPolicy}')" = Never ] || fail "admission did not set preemptionPolicy"
    wait_until '[ -n "$(events_for never default FailedScheduling)" ]' 30 || fail "no FailedScheduling event for the Never pod"
    sleep 3
    kc get pod low -o name >/dev/null 2>&1 || fail "the low-priority pod was evicted by a Never pod"
    [ -z "$(pod_node never)" ] || fail "the Never pod was bound"
    [ -z "$(kc get pod never -o jsonpath='{.status.nominatedNodeName}')" ] || fail "the Never pod was nominated"
    ! grep -q "preempted pod=default/never" "$CP_WORK/scheduler.log" || fail "scheduler log shows a preemption"
}

# A generic ephemeral volume (the API server here runs with the v1.20 alpha
# gate on, so it keeps the field): ai-scheduler does not create or wait for
# its claim as kube-scheduler's VolumeBinding would, and says so once.
case_unsupported_warning() {
    reset_all
    make_node n1 4 8Gi 0 110 >/dev/null
    make_pod eph --cpu 100m --merge '{"spec":{"volumes":[{"name":"d","ephemeral":{"volumeClaimTemplate":
        {"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}}}]}}' >/dev/null
    [ -n "$(kc get pod eph -o jsonpath='{.spec.volumes[0].ephemeral}')" ] || fail "the API server dropped the ephemeral volume"
    wait_until '[ -n "$(events_for eph default UnsupportedConstraint)" ]' 30 || fail "no UnsupportedConstraint event"
    local ev
    ev=$(events_for eph default UnsupportedConstraint)
    log "event: $ev"
    grep -q 'spec.volumes\[\].ephemeral' <<<"$ev" || fail "event does not name the field: $ev"
    bind_one eph >/dev/null
    sleep 1
    [ "$(events_for eph default UnsupportedConstraint | wc -l)" = 1 ] || fail "more than one warning for one pod"
    # A pod asking for nothing unsupported gets no warning.
    make_pod plain --cpu 100m >/dev/null
    bind_one plain >/dev/null
    [ -z "$(events_for plain default UnsupportedConstraint)" ] || fail "warning for a plain pod"
}

# Keeps spec.volumes[].ephemeral (alpha, off by default in v1.20).
export APISERVER_EXTRA_ARGS=--feature-gates=GenericEphemeralVolume=true
cp_start
start_scheduler
run_case replicaset-spreads case_replicaset_spreads
run_case service-spreads case_service_spreads
run_case image-locality case_image_locality
run_case preemption-policy-never case_preemption_policy_never
run_case unsupported-warning case_unsupported_warning
run_case clean-exit stop_scheduler_clean
finish
