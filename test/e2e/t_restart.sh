#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Crash recovery: kill -9 the scheduler while it binds 300 pods that exactly
# fill 10 nodes, add more pods while it is down, restart it. Every pod must end
# up bound exactly once and no node may be over allocatable.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=restart/

# Scheduled events per pod (core count / events.k8s.io series), >1 is a double bind report.
double_scheduled() {
    kc get events -n default -o json --field-selector reason=Scheduled |
        jq -r '[.items[] | {n: .involvedObject.name, c: ([(.count // 1), (.series.count // 1)] | max)}]
               | group_by(.n) | map({n: .[0].n, c: (map(.c) | add)}) | map(select(.c > 1)) | .[] | "\(.n) x\(.c)"'
}

case_kill9_restart() {
    local i
    for i in $(seq 0 9); do make_node "r$i" 3 6Gi 0 110; done
    # 10 x 3 CPU = 3000m; 300 x 100m fills every node exactly.
    make_pods a 200 --cpu 100m --mem 200Mi
    start_scheduler
    wait_until '[ "$(bound_in_ns)" -ge 1 ]' 60 0.05 || fail "nothing bound before the first kill"
    stop_scheduler KILL || true
    log "killed -9 with $(bound_in_ns)/200 bound"
    make_pods b 100 --cpu 100m --mem 200Mi
    local before
    before=$(bound_in_ns)
    start_scheduler
    wait_until "[ \"\$(bound_in_ns)\" -gt $before ]" 60 0.05 || fail "nothing bound before the second kill"
    stop_scheduler KILL || true
    log "killed -9 again with $(bound_in_ns)/300 bound"
    start_scheduler
    wait_until '[ "$(count_unbound)" = 0 ]' 180 || fail "$(count_unbound) pods unbound after restart"
    [ "$(count_bound)" = 300 ] || fail "want 300 bound, have $(count_bound)"
    assert_no_overcommit
    local d
    d=$(double_scheduled)
    [ -z "$d" ] || fail "pods reported Scheduled more than once: $(echo "$d" | head -5 | tr '\n' ' ')"
    # one more: a pod that cannot fit anywhere now that every node is full
    make_pod overflow --cpu 100m
    wait_until 'events_for overflow default FailedScheduling | grep -q "0/10 nodes are available"' 60 ||
        fail "no FailedScheduling for overflow on full nodes"
    [ -z "$(pod_node overflow)" ] || fail "overflow got bound: nodes overcommitted"
    assert_no_overcommit
}

# A second restart (clean this time) must not rebind or double count.
case_clean_restart() {
    stop_scheduler_clean
    start_scheduler
    make_pod overflow2 --cpu 100m
    wait_until 'events_for overflow2 default FailedScheduling | grep -q "0/10 nodes are available"' 60 ||
        fail "no FailedScheduling for overflow2 after restart"
    [ -z "$(pod_node overflow2)" ] || fail "overflow2 bound after a restart"
    kc delete pod a-0 --grace-period=0 --force >/dev/null 2>&1
    wait_until '[ -n "$(pod_node overflow)$(pod_node overflow2)" ]' 60 || fail "freed slot not reused"
    [ -z "$(pod_node overflow)" ] || [ -z "$(pod_node overflow2)" ] || fail "both overflow pods bound into one 100m slot"
    assert_no_overcommit
    stop_scheduler_clean
}

# Issue 35, fault 3: room a preemption made survives a restart. While the
# scheduler is down, pod "high" waits with status.nominatedNodeName nr (as
# the scheduler before wrote it) for its victim "leaving", still
# terminating there; "small", of lower priority, fits beside the victim.
# After the restart the nomination holds the room: "small" stays pending
# and, once the victim is gone, "high" binds on nr with no eviction.
# Before, "small" was bound on nr at once and later evicted for "high".
case_nomination_survives_restart() {
    cp_reset
    make_priority_class e2e-low 10
    make_priority_class e2e-mid 50
    make_priority_class e2e-high 1000
    make_node nr 4 8Gi 0 110
    make_pod leaving --cpu 2 --priority-class e2e-mid \
        --merge '{"spec": {"nodeName": "nr"}, "metadata": {"finalizers": ["e2e.aibee.cn/hold"]}}'
    kc delete pod leaving --wait=false >/dev/null
    make_pod high --cpu 4 --priority-class e2e-high
    kc patch pod high --subresource=status --type=merge -p '{"status": {"nominatedNodeName": "nr"}}' >/dev/null ||
        fail "cannot set high's nominatedNodeName"
    make_pod small --cpu 2 --priority-class e2e-low
    start_scheduler
    wait_until 'events_for small default FailedScheduling | grep -q "0/1 nodes are available"' 60 ||
        fail "no FailedScheduling for small (small on '$(pod_node small)')"
    [ -z "$(pod_node small)" ] || fail "small took the room nominated to high on $(pod_node small)"
    [ -z "$(pod_node high)" ] || fail "high bound beside its terminating victim"
    kc patch pod leaving --type=merge -p '{"metadata": {"finalizers": null}}' >/dev/null
    wait_until '[ "$(pod_node high)" = nr ]' 60 || fail "high not bound on nr (on '$(pod_node high)')"
    [ -z "$(pod_node small)" ] || fail "small bound on $(pod_node small)"
    kc get pod small -o name >/dev/null 2>&1 || fail "small was evicted"
    [ -z "$(events_for small default Preempted)" ] || fail "small was preempted"
    assert_no_overcommit
    stop_scheduler_clean
}

cp_start
run_case kill9-restart case_kill9_restart
run_case clean-restart case_clean_restart
run_case nomination-survives-restart case_nomination_survives_restart
finish
