#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Preemption inside a pool: which node is chosen (PDB violations, highest
# victim priority, priority sum), the minimal victim set, Preempted events,
# nominatedNodeName, and no eviction when preemption is disabled (flag or
# Pool spec) or when no victim has a lower priority.
# One control plane; each case resets nodes, pods, pools and PDBs.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=preemption/


# make_pdb NAME LABEL=VALUE [ALLOWED [OBSERVED-GENERATION-OFFSET]]: policy/v1beta1
# PDB (minAvailable 1) whose status says disruptionsAllowed ALLOWED (default 0;
# currentHealthy 3 < desiredHealthy 4, else v1.20 evicts not-Ready pods anyway;
# no controller-manager computes it here). With offset -1 the status lags the
# spec, so the Eviction API refuses (429) while the scheduler sees ALLOWED.
make_pdb() {
    local name=$1 k=${2%%=*} v=${2#*=} allowed=${3:-0} off=${4:-0} gen
    api_post_json /apis/policy/v1beta1/namespaces/default/poddisruptionbudgets "$(jq -cn --arg n "$name" --arg k "$k" --arg v "$v" \
        '{apiVersion: "policy/v1beta1", kind: "PodDisruptionBudget", metadata: {name: $n},
          spec: {minAvailable: 1, selector: {matchLabels: {($k): $v}}}}')" || return 1
    gen=$(kc get pdb "$name" -o jsonpath='{.metadata.generation}')
    api_req PATCH "/apis/policy/v1beta1/namespaces/default/poddisruptionbudgets/$name/status" \
        -H 'Content-Type: application/merge-patch+json' -o /dev/null -w '%{http_code}' --data-binary \
        "$(jq -cn --argjson g "$((gen + off))" --argjson a "$allowed" '{status: {disruptionsAllowed: $a, currentHealthy: 3, desiredHealthy: 4,
            expectedPods: 4, observedGeneration: $g}}')" | grep -q '^2' || return 1
}

reset_all() {
    # pods first: a pending pod of a deleted pool would move to default and act there
    kc delete events --all -n default >/dev/null 2>&1 || true
    cp_reset
    kc delete pools --all --wait=false >/dev/null 2>&1 || true
    kc delete pdb --all -n default --wait=false >/dev/null 2>&1 || true
    wait_until '[ "$(kc get pools -o name | wc -l)" = 0 ] && [ "$(kc get pdb -A -o name | wc -l)" = 0 ]' 30 ||
        fail "pools/pdbs remain"
    sched_alive || { log "scheduler is dead (crashed in an earlier case?); restarting it"; start_scheduler; }
    LOG_FROM=$(($(wc -l <"$CP_WORK/scheduler.log") + 1))
}
# new_log: the scheduler log since the case's reset_all.
new_log() { tail -n +"${LOG_FROM:-1}" "$CP_WORK/scheduler.log"; }

# pod_exists NAME
pod_exists() { kc get pod "$1" -o name >/dev/null 2>&1; }
# set_running POD...: status.phase Running (the Eviction API ignores PDBs for
# Pending pods, and there is no kubelet here).
set_running() {
    local p
    for p; do
        api_req PATCH "/api/v1/namespaces/default/pods/$p/status" -H 'Content-Type: application/merge-patch+json' \
            -o /dev/null -w '%{http_code}' --data-binary '{"status":{"phase":"Running"}}' | grep -q '^2' ||
            fail "could not set $p Running"
    done
}
pods_named() { kc get pods -o json | jq -r '[.items[].metadata.name] | sort | join(" ")'; }
nominated() { kc get pod "$1" -o jsonpath='{.status.nominatedNodeName}'; }

# two nodes (4 cpu) of pool p; the victims are pinned with nodeSelectors.
two_nodes() {
    make_pool p "${1:-{\}}"
    make_node na 4 8Gi 0 110 pool=p
    make_node nb 4 8Gi 0 110 pool=p
}

# fill_a PRIO [extra pod args]: 4 x 1 cpu on na; fill_b PRIO1 PRIO2: 2 x 2 cpu on nb.
fill_a() {
    local prio=$1 i; shift
    for i in 0 1 2 3; do
        make_pod a$i --pool p --cpu 1 --priority-class "$prio" --node-selector kubernetes.io/hostname=na "$@"
    done
}
fill_b() {
    make_pod b0 --pool p --cpu 2 --priority-class "$1" --node-selector kubernetes.io/hostname=nb
    make_pod b1 --pool p --cpu 2 --priority-class "$2" --node-selector kubernetes.io/hostname=nb
}
wait_full() {
    wait_until '[ "$(count_bound)" = 6 ]' 60 || fail "pool not filled: $(count_bound)/6 bound"
}

# expect_preempt NODE "GONE..." "KEPT...": the preemptor 'hi' lands on NODE,
# exactly the GONE pods were evicted, each with a Preempted event naming hi.
expect_preempt() {
    local node=$1 gone=$2 kept=$3 p
    wait_until '[ -n "$(pod_node hi)" ]' 60 || fail "preemptor hi not bound (pods: $(pods_named))"
    [ "$(pod_node hi)" = "$node" ] || fail "hi on '$(pod_node hi)', want $node"
    for p in $gone; do
        wait_until "! pod_exists $p" 30 || fail "victim $p not evicted"
        wait_until "events_for $p default Preempted | grep -q 'default/hi'" 30 ||
            fail "no Preempted event naming default/hi for $p: $(events_for "$p")"
    done
    for p in $kept; do pod_exists "$p" || fail "$p was evicted, but the minimal victim set is '$gone'"; done
    wait_until "[ \"\$(nominated hi)\" = $node ]" 30 || fail "hi.status.nominatedNodeName='$(nominated hi)', want $node"
    assert_no_overcommit
}

# na: 4 x 1cpu prio 10; nb: 2 x 2cpu prio 10 and 20. A 2-cpu prio 100 pod:
# both nodes' highest victim is 10, nb's sum (one pod) is smaller -> nb, b0 only.
case_priority_sum() {
    reset_all
    two_nodes
    fill_a low; fill_b low mid; wait_full
    make_pod hi --pool p --cpu 2 --priority-class high
    expect_preempt nb "b0" "a0 a1 a2 a3 b1"
    new_log | grep 'preempted pod=default/hi node=nb pool=p victims=1' >/dev/null ||
        fail "no 'preempted ... victims=1' log line"
}

# na: 4 x 1cpu prio 10; nb: 2 x 2cpu prio 20. nb needs one victim but of
# priority 20; na needs two of priority 10 -> lowest highest-victim wins: na.
case_highest_victim() {
    reset_all
    two_nodes
    fill_a low; fill_b mid mid; wait_full
    make_pod hi --pool p --cpu 2 --priority-class high
    wait_until '[ -n "$(pod_node hi)" ]' 60 || fail "hi not bound"
    [ "$(pod_node hi)" = na ] || fail "hi on '$(pod_node hi)', want na"
    local gone
    gone=$(for p in a0 a1 a2 a3; do pod_exists $p || echo $p; done | wc -l)
    [ "$gone" = 2 ] || fail "want exactly 2 of a0..a3 evicted, $gone were (pods: $(pods_named))"
    pod_exists b0 && pod_exists b1 || fail "a pod on nb was evicted"
    assert_no_overcommit
}

# Same as highest_victim, but the na pods are covered by a PDB with
# disruptionsAllowed 0: the node without violations (nb) is chosen.
case_pdb() {
    reset_all
    two_nodes
    make_pdb guard guard=yes
    fill_a low --label guard=yes; fill_b mid mid; wait_full
    make_pod hi --pool p --cpu 2 --priority-class high
    wait_until '[ -n "$(pod_node hi)" ]' 60 || fail "hi not bound"
    [ "$(pod_node hi)" = nb ] || fail "hi on '$(pod_node hi)', want nb (na's pods are PDB-protected)"
    pod_exists a0 && pod_exists a1 && pod_exists a2 && pod_exists a3 || fail "a PDB-protected pod was evicted"
    local gone
    gone=$(for p in b0 b1; do pod_exists $p || echo $p; done | wc -l)
    [ "$gone" = 1 ] || fail "want exactly one of b0,b1 evicted, $gone were"
    assert_no_overcommit
}

# The only candidate's pods are Running and covered by a PDB with
# disruptionsAllowed 0: the Eviction API answers 429, nothing is evicted, hi waits.
case_pdb_only_candidate() {
    reset_all
    make_pool p '{"disableBorrowing": true}'
    make_node na 4 8Gi 0 110 pool=p
    make_pdb guard guard=yes
    fill_a low --label guard=yes
    wait_until '[ "$(count_bound)" = 4 ]' 60 || fail "na not filled"
    set_running a0 a1 a2 a3
    make_pod hi --pool p --cpu 2 --priority-class high
    wait_until 'new_log | grep -q "eviction of default/a[0-3] refused"' 30 ||
        fail "no refused eviction logged"
    sleep 3
    [ -z "$(pod_node hi)" ] || fail "hi bound on '$(pod_node hi)'"
    [ "$(kc get pods -o name | grep -c /a)" = 4 ] || fail "a PDB-protected pod was evicted: $(pods_named)"
    assert_no_overcommit
}

# The scheduler sees no violation on na (its PDB status claims 5 disruptions
# allowed) and picks na (lower victim priority), but the Eviction API refuses
# (the PDB status lags its generation): the next candidate, nb, is used.
case_eviction_refused_next_node() {
    reset_all
    two_nodes
    make_pdb lagging guard=yes 5 -1
    fill_a low --label guard=yes; fill_b mid mid; wait_full
    set_running a0 a1 a2 a3 b0 b1
    make_pod hi --pool p --cpu 2 --priority-class high
    wait_until '[ -n "$(pod_node hi)" ]' 60 || fail "hi not bound (pods: $(pods_named))"
    new_log | grep "eviction of default/a[0-3] refused" >/dev/null || fail "na was not tried first"
    [ "$(pod_node hi)" = nb ] || fail "hi on '$(pod_node hi)', want nb"
    pod_exists a0 && pod_exists a1 && pod_exists a2 && pod_exists a3 || fail "a pod on na was evicted"
    local gone
    gone=$(for p in b0 b1; do pod_exists $p || echo $p; done | wc -l)
    [ "$gone" = 1 ] || fail "want exactly one of b0,b1 evicted, $gone were"
    assert_no_overcommit
}

# Equal priority: no victims, nothing evicted, FailedScheduling.
case_equal_priority() {
    reset_all
    two_nodes '{"disableBorrowing": true}'
    fill_a mid; fill_b mid mid; wait_full
    make_pod same --pool p --cpu 2 --priority-class mid
    wait_until 'events_for same default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling for same"
    sleep 3
    [ -z "$(pod_node same)" ] || fail "same bound"
    [ "$(kc get pods -o name | wc -l)" = 7 ] || fail "pods were evicted: $(pods_named)"
}

# Pool spec disablePreemption: nothing evicted.
case_pool_disable_preemption() {
    reset_all
    two_nodes '{"disablePreemption": true, "disableBorrowing": true}'
    fill_a low; fill_b low mid; wait_full
    make_pod hi --pool p --cpu 2 --priority-class high
    wait_until 'events_for hi default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling for hi"
    sleep 3
    [ -z "$(pod_node hi)" ] || fail "hi bound despite disablePreemption"
    [ "$(kc get pods -o name | wc -l)" = 7 ] || fail "pods were evicted: $(pods_named)"
    [ -z "$(events_for b0 default Preempted)" ] || fail "Preempted event despite disablePreemption"
}

# --disable-preemption: nothing evicted; after a restart without it, hi preempts.
case_flag_disable_preemption() {
    reset_all
    stop_scheduler_clean
    start_scheduler --disable-preemption
    two_nodes '{"disableBorrowing": true}'
    fill_a low; fill_b low mid; wait_full
    make_pod hi --pool p --cpu 2 --priority-class high
    wait_until 'events_for hi default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling for hi"
    sleep 3
    [ -z "$(pod_node hi)" ] || fail "hi bound despite --disable-preemption"
    [ "$(kc get pods -o name | wc -l)" = 7 ] || fail "pods were evicted: $(pods_named)"
    stop_scheduler_clean
    start_scheduler
    expect_preempt nb "b0" "a0 a1 a2 a3 b1"
}

# kube-scheduler's way (--eviction-grace-period -1, the binary's default;
# lib.sh passes 0 as no kubelet runs here): the victim (terminationGracePeriodSeconds
# 30) is evicted with its own grace, so it stays Terminating with a
# deletionTimestamp and deletionGracePeriodSeconds 30; the preemptor stays
# nominated on na, not bound, while it terminates. A stand-in kubelet then
# confirms the victim gone (DELETE, grace 0): the preemptor is bound on na.
case_victim_own_grace() {
    reset_all
    stop_scheduler_clean
    start_scheduler --eviction-grace-period -1
    make_pool p '{"disableBorrowing": true}'
    make_node na 4 8Gi 0 110 pool=p
    make_pod v --pool p --cpu 4 --priority-class low --merge '{"spec": {"terminationGracePeriodSeconds": 30}}'
    wait_until '[ "$(pod_node v)" = na ]' 60 || fail "v not bound"
    set_running v
    make_pod hi --pool p --cpu 2 --priority-class high
    wait_until '[ -n "$(kc get pod v -o jsonpath="{.metadata.deletionTimestamp}" 2>/dev/null)" ]' 30 ||
        fail "v not evicted (pods: $(pods_named))"
    local grace cond
    grace=$(kc get pod v -o jsonpath='{.metadata.deletionGracePeriodSeconds}')
    [ "$grace" = 30 ] || fail "v.metadata.deletionGracePeriodSeconds='$grace', want 30 (its own grace)"
    wait_until '[ "$(nominated hi)" = na ]' 30 || fail "hi.status.nominatedNodeName='$(nominated hi)', want na"
    # kube 1.26+'s condition before the delete; v1.20 keeps it as it is (a
    # 1.26+ server's Eviction API would then write its own reason over it).
    cond=$(kc get pod v -o json | jq -r '[.status.conditions[]? | select(.type == "DisruptionTarget") | .reason] | join(",")')
    [ "$cond" = PreemptionByScheduler ] || fail "v's DisruptionTarget condition reason '$cond', want PreemptionByScheduler"
    sleep 3
    pod_exists v || fail "v went before its grace (no kubelet runs)"
    [ -z "$(pod_node hi)" ] || fail "hi bound on '$(pod_node hi)' while v is still terminating"
    [ "$(nominated hi)" = na ] || fail "hi lost its nomination while v terminates: '$(nominated hi)'"
    api_req DELETE /api/v1/namespaces/default/pods/v -H 'Content-Type: application/json' -o /dev/null \
        --data-binary '{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0}' || fail "kubelet's DELETE failed"
    wait_until '! pod_exists v' 30 || fail "v still there after the DELETE with grace 0"
    wait_until '[ "$(pod_node hi)" = na ]' 60 || fail "hi not bound on na after v went (on '$(pod_node hi)')"
    events_for v default Preempted | grep -q 'default/hi' || fail "no Preempted event naming default/hi for v"
    assert_no_overcommit
    stop_scheduler_clean
    start_scheduler
}

case_clean_shutdown() {
    stop_scheduler_clean
}

cp_start
make_priority_class low 10
make_priority_class mid 20
make_priority_class high 100
start_scheduler
run_case priority-sum case_priority_sum
run_case highest-victim case_highest_victim
run_case pdb case_pdb
run_case pdb-only-candidate case_pdb_only_candidate
run_case eviction-refused-next-node case_eviction_refused_next_node
run_case equal-priority case_equal_priority
run_case pool-disable-preemption case_pool_disable_preemption
run_case flag-disable-preemption case_flag_disable_preemption
run_case victim-own-grace case_victim_own_grace
run_case clean-shutdown case_clean_shutdown
finish
