#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Foundation: binding, capacity, unschedulable reporting, schedulerName,
# nodeSelector / node affinity / taints, and a node added later.
# One control plane and one scheduler for the file; each case resets nodes and pods.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=basic/

five_nodes() {
    make_node n1 8 16Gi 0 110 zone=a
    make_node n2 8 16Gi 0 110 zone=b
    make_node n3 4 8Gi 0 110 zone=c
    make_node g1 16 64Gi 8 110 zone=a accelerator=nvidia
    make_node g2 16 64Gi 8 110 zone=b accelerator=nvidia
}

# 5 nodes, 42 pods of mixed shapes (12 of 16 GPUs, slack against fragmentation):
# all bound, none over allocatable, GPU pods only on GPU nodes.
case_mixed() {
    cp_reset
    five_nodes
    make_pods small 20 --cpu 250m --mem 256Mi
    make_pods big 8 --cpu 2 --mem 4Gi
    make_pods mem 6 --mem 3Gi
    make_pods gpu1 4 --cpu 1 --mem 2Gi --gpu 1
    make_pods gpu2 4 --cpu 2 --mem 8Gi --gpu 2
    wait_until '[ "$(count_unbound)" = 0 ]' 60 || fail "$(count_unbound) pods still unbound"
    [ "$(count_bound)" = 42 ] || fail "want 42 bound pods, have $(count_bound)"
    assert_no_overcommit
    # GPU pods only on GPU nodes
    local bad
    bad=$(pods_json | jq -r '.items[] | select(.metadata.name | startswith("gpu")) | select(.spec.nodeName | test("^g") | not) | .metadata.name')
    [ -z "$bad" ] || fail "gpu pods on non-gpu nodes: $bad"
}

# An impossible pod: FailedScheduling event + PodScheduled=False/Unschedulable.
case_unschedulable() {
    cp_reset
    five_nodes
    make_pod fits --cpu 100m
    make_pod huge --cpu 100m --gpu 1000
    wait_until '[ -n "$(pod_node fits)" ]' 30 || fail "control pod not bound"
    wait_until 'events_for huge default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling event for huge"
    local ev cond
    ev=$(events_for huge default FailedScheduling | head -1)
    log "event: $ev"
    grep -qE '0/5 nodes are available' <<<"$ev" || fail "event message lacks '0/5 nodes are available': $ev"
    wait_until '[ "$(pod_condition huge PodScheduled | cut -d" " -f1-2)" = "False Unschedulable" ]' 30 ||
        fail "PodScheduled condition is '$(pod_condition huge PodScheduled)'"
    cond=$(pod_condition huge PodScheduled)
    grep -qE '0/5 nodes are available' <<<"$cond" || fail "condition message lacks '0/5 nodes are available': $cond"
    [ -z "$(pod_node huge)" ] || fail "huge got bound"
}

# Pods for another scheduler are left alone.
case_other_scheduler() {
    cp_reset
    five_nodes
    make_pod theirs --cpu 100m --scheduler default-scheduler
    make_pod theirs2 --cpu 100m --scheduler some-other
    make_pod ours --cpu 100m
    wait_until '[ -n "$(pod_node ours)" ]' 30 || fail "our pod not bound"
    sleep 3
    [ -z "$(pod_node theirs)" ] || fail "pod for default-scheduler was bound"
    [ -z "$(pod_node theirs2)" ] || fail "pod for some-other was bound"
    [ -z "$(events_for theirs)" ] || fail "events were posted for a foreign pod: $(events_for theirs)"
    [ -z "$(pod_condition theirs PodScheduled)" ] || fail "foreign pod got a PodScheduled condition"
}

aff() { # aff KEY OP VALUES-JSON -> --merge JSON for required node affinity
    jq -cn --arg k "$1" --arg op "$2" --argjson v "$3" \
        '{spec: {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
          {nodeSelectorTerms: [{matchExpressions: [{key: $k, operator: $op, values: $v}]}]}}}}}'
}

# nodeSelector, node affinity (In, NotIn, Gt), taints and tolerations.
case_placement() {
    cp_reset
    make_node a1 4 8Gi 0 110 zone=a disk=ssd rank=1
    make_node a2 4 8Gi 0 110 zone=a disk=hdd rank=5
    make_node b1 4 8Gi 0 110 zone=b disk=ssd rank=9
    make_node t1 4 8Gi 0 110 zone=t rank=3 taint:dedicated=infer:NoSchedule
    make_node t2 4 8Gi 0 110 zone=t rank=4 taint:maint:NoExecute
    make_node c1 4 8Gi 0 110 zone=c rank=2             # no disk label
    local i
    for i in 0 1 2; do
        make_pod sel-b-$i --cpu 100m --node-selector zone=b
        make_pod sel-ssd-a-$i --cpu 100m --node-selector zone=a --node-selector disk=ssd
        make_pod in-$i --cpu 100m --merge "$(aff disk In '["hdd","nvme"]')"
        make_pod notin-$i --cpu 100m --merge "$(aff disk NotIn '["ssd"]')"
        make_pod gt-$i --cpu 100m --merge "$(aff rank Gt '["4"]')"
        make_pod tol-$i --cpu 100m --node-selector zone=t --toleration dedicated=infer:NoSchedule
        make_pod tolall-$i --cpu 100m --node-selector zone=t --toleration dedicated: --toleration maint:
        make_pod notol-$i --cpu 100m
    done
    make_pod sel-none --cpu 100m --node-selector zone=nowhere
    make_pod tol-none --cpu 100m --node-selector zone=t    # both zone=t nodes are tainted
    wait_until '[ "$(count_unbound)" = 2 ]' 60 || fail "want exactly 2 unbound pods, have $(count_unbound)"
    local want p n
    check() { # check POD-PREFIX REGEX-OF-ALLOWED-NODES
        for i in 0 1 2; do
            p=$1-$i; n=$(pod_node "$p")
            [[ $n =~ ^($2)$ ]] || fail "$p on '$n', want one of $2"
        done
    }
    check sel-b 'b1'
    check sel-ssd-a 'a1'
    check in 'a2'
    check notin 'a2|c1'        # absent label matches NotIn; t1/t2 are tainted
    check gt 'a2|b1'           # rank 5 and 9 (t2 has rank 4: not > 4)
    check tol 't1'
    check tolall 't1|t2'
    check notol 'a1|a2|b1|c1'
    [ -z "$(pod_node sel-none)" ] || fail "sel-none bound"
    [ -z "$(pod_node tol-none)" ] || fail "tol-none bound to a tainted node"
    wait_until 'events_for tol-none default FailedScheduling | grep -q "0/6 nodes are available"' 30 ||
        fail "no FailedScheduling for tol-none"
    want=$(events_for tol-none default FailedScheduling | head -1)
    log "tol-none: $want"
    grep -qiE 'taint' <<<"$want" || fail "FailedScheduling for tol-none does not mention taints: $want"
    assert_no_overcommit
}

# A pod that fits nowhere becomes schedulable when a node is added.
case_node_added() {
    cp_reset
    make_node small1 2 4Gi 0 110
    make_node small2 2 4Gi 0 110
    make_pod waits --cpu 6 --mem 8Gi
    make_pod waits-gpu --cpu 1 --gpu 2
    wait_until 'events_for waits default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling for waits"
    [ -z "$(pod_node waits)" ] || fail "waits bound before a big node existed"
    make_node big1 8 16Gi 2 110
    wait_until '[ "$(pod_node waits)" = big1 ] && [ "$(pod_node waits-gpu)" = big1 ]' 30 ||
        fail "pods not bound to the new node (waits='$(pod_node waits)', waits-gpu='$(pod_node waits-gpu)')"
    assert_no_overcommit
}

# Capacity freed by deleting a pod is reused.
case_pod_deleted() {
    cp_reset
    make_node one 2 4Gi 0 110
    make_pod first --cpu 1500m
    wait_until '[ "$(pod_node first)" = one ]' 30 || fail "first not bound"
    make_pod second --cpu 1500m
    wait_until 'events_for second default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling for second"
    kc delete pod first --grace-period=0 --force >/dev/null 2>&1
    wait_until '[ "$(pod_node second)" = one ]' 30 || fail "second not bound after first was deleted"
    assert_no_overcommit
}

case_clean_shutdown() {
    stop_scheduler_clean
}

cp_start
start_scheduler
run_case mixed case_mixed
run_case unschedulable case_unschedulable
run_case other-scheduler case_other_scheduler
run_case placement case_placement
run_case node-added case_node_added
run_case pod-deleted case_pod_deleted
run_case clean-shutdown case_clean_shutdown
finish
