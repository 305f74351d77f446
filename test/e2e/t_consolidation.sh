#!/usr/bin/env bash
# shellcheck disable=SC2016 source-path=SCRIPTDIR
# Consolidation on a real API server: 8 nodes with 8 GPUs each; on every
# node 2 GPUs are used by two 1-GPU pods of a ReplicaSet (bound by this
# test), so 48 GPUs are free but no node has 8. An 8-GPU pod must run after
# exactly 2 moves (the minimum: the 2 pods of one node), every moved pod's
# replacement must run again, and no node may be overcommitted. There is no
# kube-controller-manager: a small loop below plays the ReplicaSet
# controller (it recreates a deleted pod with the same owner and request).
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=consolidation/

RS_PODS=16

# post_uid PATH JSON: creates the object, prints its uid.
post_uid() { api_req POST "$1" -H 'Content-Type: application/json' --data-binary @- <<<"$2" | jq -r '.metadata.uid // empty'; }

rs_owned() { # pods of the ReplicaSet not being deleted
    pods_json -l app=rs | jq '[.items[] | select(.metadata.deletionTimestamp == null)] | length'
}

# The ReplicaSet controller's part: keep RS_PODS pods, each new one pending.
rs_controller() {
    local owner=$1 i=0 n
    while [ -f "$CP_WORK/rs.on" ]; do
        n=$(rs_owned 2>/dev/null || echo "$RS_PODS")
        while [ "$n" -lt "$RS_PODS" ]; do
            make_pod "rs-new-$i" --gpu 1 --cpu 100m --label app=rs --merge "$owner" >/dev/null 2>&1
            i=$((i + 1)); n=$((n + 1))
        done
        sleep 0.5
    done
}

case_fragmented() {
    local i rsuid owner
    for i in 0 1 2 3 4 5 6 7; do make_node "c$i" 64 256Gi 8 110 || fail "node create failed"; done
    rsuid=$(post_uid /apis/apps/v1/namespaces/default/replicasets "$(jq -cn '{apiVersion: "apps/v1", kind: "ReplicaSet",
        metadata: {name: "rs"}, spec: {replicas: 16, selector: {matchLabels: {app: "rs"}},
        template: {metadata: {labels: {app: "rs"}}, spec: {containers: [{name: "c", image: "registry.invalid/pause:3"}]}}}}')") || fail "ReplicaSet create failed"
    [ -n "$rsuid" ] || fail "no ReplicaSet uid"
    owner=$(jq -cn --arg u "$rsuid" '{metadata: {ownerReferences: [{apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs",
        uid: $u, controller: true}]}}')
    for i in 0 1 2 3 4 5 6 7; do
        make_pod "rs-a$i" --gpu 1 --cpu 100m --label app=rs --merge "$(jq -c --arg n "c$i" '. * {spec: {nodeName: $n}}' <<<"$owner")" ||
            fail "pod create failed"
        make_pod "rs-b$i" --gpu 1 --cpu 100m --label app=rs --merge "$(jq -c --arg n "c$i" '. * {spec: {nodeName: $n}}' <<<"$owner")" ||
            fail "pod create failed"
    done
    touch "$CP_WORK/rs.on"
    rs_controller "$owner" &
    local ctl=$!
    start_scheduler
    local t0=$SECONDS
    make_pod big --gpu 8 --cpu 1 || fail "pod create failed"
    wait_until '[ -n "$(pod_node big)" ]' 60 || { rm -f "$CP_WORK/rs.on"; wait "$ctl"; fail "the 8-GPU pod did not run"; }
    local secs=$((SECONDS - t0))
    wait_until '[ "$(count_bound app=rs)" = 16 ] && [ "$(rs_owned)" = 16 ]' 60 ||
        { rm -f "$CP_WORK/rs.on"; wait "$ctl"; fail "replacements: $(count_bound app=rs) of 16 RS pods bound"; }
    rm -f "$CP_WORK/rs.on"
    wait "$ctl"
    local moves
    moves=$(kc get events -o json | jq '[.items[] | select(.reason == "Consolidated")] | length')
    echo "MEASURE consolidation: 8-GPU pod on 8 nodes with 2 of 8 GPUs used by movable pods each: $moves moves (minimum 2), placed after ${secs}s, 16 of 16 movers running again"
    [ "$moves" = 2 ] || fail "$moves moves, want the minimum 2"
    events_for big default Consolidation | grep -q "moving 2 pod(s)" || fail "no Consolidation event on the pod"
    # Each replacement runs where its room was held.
    local held landed
    held=$(kc get events -o json | jq -r '.items[] | select(.reason == "Consolidated") | .message
        | capture("expected on node (?<n>[^ ;]+)").n' | sort | tr '\n' ' ')
    landed=$(pods_json -l app=rs | jq -r '.items[] | select(.metadata.name | startswith("rs-new-")) | .spec.nodeName' |
        sort | tr '\n' ' ')
    [ "$held" = "$landed" ] || fail "replacements on '$landed', held for them: '$held'"
    # The moved pods left the node the big pod runs on.
    [ "$(pods_json -l app=rs | jq --arg n "$(pod_node big)" '[.items[] | select(.spec.nodeName == $n)] | length')" = 0 ] ||
        fail "RS pods still on $(pod_node big)"
    assert_no_overcommit
    stop_scheduler_clean
}

# No plan when the movers cannot be placed elsewhere: the pod stays pending
# and nothing is moved.
case_no_room_elsewhere() {
    local i rsuid owner
    # 8 GPUs free in the pool (4 + 2 + 2), none on one node: consolidation
    # plans; the only movable pod (m0, 4 GPUs) has nowhere to go.
    make_node d0 64 256Gi 8 110 || fail "node create failed"
    make_node d1 64 256Gi 8 110 || fail "node create failed"
    make_node d2 64 256Gi 8 110 || fail "node create failed"
    rsuid=$(post_uid /apis/apps/v1/namespaces/default/replicasets "$(jq -cn '{apiVersion: "apps/v1", kind: "ReplicaSet",
        metadata: {name: "rs2"}, spec: {replicas: 1, selector: {matchLabels: {app: "rs2"}},
        template: {metadata: {labels: {app: "rs2"}}, spec: {containers: [{name: "c", image: "registry.invalid/pause:3"}]}}}}')") || fail "ReplicaSet create failed"
    [ -n "$rsuid" ] || fail "no ReplicaSet uid"
    owner=$(jq -cn --arg u "$rsuid" '{metadata: {ownerReferences: [{apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs2",
        uid: $u, controller: true}]}, spec: {nodeName: "d0"}}')
    make_pod m0 --gpu 4 --label app=rs2 --merge "$owner" || fail "pod create failed"
    make_pod w1 --gpu 6 --merge '{"spec": {"nodeName": "d1"}}' || fail "pod create failed"
    make_pod w2 --gpu 6 --merge '{"spec": {"nodeName": "d2"}}' || fail "pod create failed"
    start_scheduler
    make_pod big2 --gpu 8 || fail "pod create failed"
    wait_until 'events_for big2 default FailedScheduling | grep -q .' 20 || fail "no FailedScheduling"
    # It did plan (the free total was enough), and found no plan.
    wait_until 'grep -q "consolidation for pod=default/big2 pool=default: no plan" "$CP_WORK/scheduler.log"' 20 ||
        fail "consolidation never planned for big2 (the case would pass for the wrong reason)"
    sleep 2
    [ -z "$(pod_node big2)" ] || fail "big2 bound"
    [ "$(kc get events -o json | jq '[.items[] | select(.reason == "Consolidated")] | length')" = 0 ] || fail "something moved"
    kc get pod m0 >/dev/null 2>&1 || fail "m0 was evicted"
    stop_scheduler_clean
}

consol_run() {
    run_case "$@"
    rm -f "$CP_WORK/rs.on"
    stop_scheduler KILL >/dev/null 2>&1 || true
    kc delete replicasets --all >/dev/null 2>&1 || true
    kc delete events --all >/dev/null 2>&1 || true
    cp_reset
}

cp_start
consol_run fragmented case_fragmented
consol_run no-room-elsewhere case_no_room_elsewhere
finish
