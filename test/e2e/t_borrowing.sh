#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Borrowing between pools: a full pool's pods borrow an idle sharing pool
# (annotation resource.aibee.cn/borrowed-from + Borrowed event), the lender's
# own pods reclaim its nodes (borrowers evicted whatever their priority),
# disableSharing / disableBorrowing / borrowingPools, the choice of lender,
# three overloaded pools converging to each running only its own pods, and a
# kill -9 restart while pods are borrowed.
# One control plane; each case resets nodes, pods, pools and events.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=borrowing/

BORROWED=resource.aibee.cn/borrowed-from


reset_all() {
    # pods first: a pending pod of a deleted pool would move to default and act there
    kc delete events --all -n default >/dev/null 2>&1 || true
    cp_reset
    kc delete pools --all --wait=false >/dev/null 2>&1 || true
    wait_until '[ "$(kc get pools -o name | wc -l)" = 0 ]' 30 || fail "pools remain"
    sched_alive || { log "scheduler is dead (crashed in an earlier case?); restarting it"; start_scheduler; }
    LOG_FROM=$(($(wc -l <"$CP_WORK/scheduler.log") + 1))
}
new_log() { tail -n +"${LOG_FROM:-1}" "$CP_WORK/scheduler.log"; }

pod_exists() { kc get pod "$1" -o name >/dev/null 2>&1; }
borrowed_from() { kc get pod "$1" -o json | jq -r --arg k "$BORROWED" '.metadata.annotations[$k] // ""'; }

# placement: "pod node pool-annotation borrowed-from" per pod, sorted.
placement() {
    pods_json | jq -r --arg k "$BORROWED" '.items[] | [.metadata.name, (.spec.nodeName // "-"),
        (.metadata.annotations["resource.aibee.cn/pool"] // "-"), (.metadata.annotations[$k] // "-")] | join(":")' |
        sort | tr '\n' ' '
}
# bound_on_pool POOL: number of pods bound to nodes labelled pool=POOL
# (node names here are POOL-N).
bound_on_pool() { pods_json | jq --arg p "$1" '[.items[] | select((.spec.nodeName // "") | startswith($p + "-"))] | length'; }
# strangers: pods bound to a node of a pool other than their own.
strangers() {
    pods_json | jq -r '.items[] | select((.spec.nodeName // "") != "")
        | select((.spec.nodeName | sub("-[0-9]+$"; "")) != (.metadata.annotations["resource.aibee.cn/pool"] // ""))
        | "\(.metadata.name)@\(.spec.nodeName)"'
}
# borrowers_on POOL: names of bound pods on POOL's nodes that carry borrowed-from=POOL.
borrowers_on() {
    pods_json | jq -r --arg p "$1" --arg k "$BORROWED" '.items[]
        | select((.spec.nodeName // "") | startswith($p + "-")) | select(.metadata.annotations[$k] == $p) | .metadata.name'
}

# Pool team-a full (1 node, 4 cpu, 6 x 1 cpu pods of high priority); team-b
# idle and sharing: 2 of a's pods borrow b's node, annotated and evented.
# Then 4 low-priority pods of b: both borrowers are evicted, b's pods bound.
case_borrow_and_reclaim() {
    reset_all
    make_pool team-a
    make_pool team-b
    make_node team-a-0 4 8Gi 0 110 pool=team-a
    make_node team-b-0 4 8Gi 0 110 pool=team-b
    make_pods a 6 --pool team-a --cpu 1 --priority-class high
    wait_until '[ "$(count_bound)" = 6 ]' 60 || fail "a's pods not all bound: $(placement)"
    [ "$(bound_on_pool team-a)" = 4 ] || fail "want 4 pods on team-a's node: $(placement)"
    local borrowers p
    borrowers=$(borrowers_on team-b | sort | tr '\n' ' ')
    [ "$(wc -w <<<"$borrowers")" = 2 ] || fail "want 2 pods borrowed-from team-b, have '$borrowers': $(placement)"
    for p in $borrowers; do
        [ "$(pod_node "$p")" = team-b-0 ] || fail "borrower $p not on team-b-0"
        wait_until "events_for $p default Borrowed | grep -q team-b" 30 || fail "no Borrowed event for $p: $(events_for "$p")"
    done
    # pods bound at home carry no annotation
    [ "$(pods_json | jq --arg k "$BORROWED" '[.items[] | select(.spec.nodeName == "team-a-0") | select(.metadata.annotations[$k])] | length')" = 0 ] ||
        fail "a pod on its own pool's node carries $BORROWED"
    assert_no_overcommit

    make_pods b 4 --pool team-b --cpu 1 --priority-class low
    wait_until '[ "$(pods_json | jq "[.items[] | select(.metadata.name | startswith(\"b-\")) | select(.spec.nodeName == \"team-b-0\")] | length")" = 4 ]' 60 ||
        fail "b's pods not all bound on team-b-0: $(placement)"
    for p in $borrowers; do
        wait_until "! pod_exists $p" 30 || fail "borrower $p not evicted"
        wait_until "events_for $p default Preempted | grep -q 'default/b-'" 30 ||
            fail "no Preempted event naming a b pod for $p: $(events_for "$p")"
        events_for "$p" default Preempted | grep 'reclaimed' >/dev/null ||
            fail "Preempted event of $p does not say the borrowed node was reclaimed: $(events_for "$p")"
    done
    [ "$(bound_on_pool team-a)" = 4 ] || fail "team-a's own pods were touched: $(placement)"
    [ -z "$(strangers)" ] || fail "pods outside their pool: $(strangers)"
    assert_no_overcommit
}

# team-b disableSharing: a's extra pods wait (FailedScheduling), b's node stays empty.
case_no_sharing() {
    reset_all
    make_pool team-a
    make_pool team-b '{"disableSharing": true}'
    make_node team-a-0 4 8Gi 0 110 pool=team-a
    make_node team-b-0 4 8Gi 0 110 pool=team-b
    make_pods a 6 --pool team-a --cpu 1
    wait_until '[ "$(count_bound)" = 4 ]' 60 || fail "team-a not filled: $(placement)"
    wait_until '[ "$(pods_json | jq "[.items[] | select((.spec.nodeName // \"\") == \"\")] | .[].metadata.name" | wc -l)" = 2 ]' 30 ||
        fail "want 2 pending: $(placement)"
    local p
    for p in $(pods_json | jq -r '.items[] | select((.spec.nodeName // "") == "") | .metadata.name'); do
        wait_until "events_for $p default FailedScheduling | grep -q ." 30 || fail "no FailedScheduling for $p"
    done
    sleep 3
    [ "$(bound_on_pool team-b)" = 0 ] || fail "a pod went to team-b despite disableSharing: $(placement)"
    [ "$(count_bound)" = 4 ] || fail "want 4 bound: $(placement)"
}

# team-a disableBorrowing: same, its pods wait at home.
case_no_borrowing() {
    reset_all
    make_pool team-a '{"disableBorrowing": true}'
    make_pool team-b
    make_node team-a-0 4 8Gi 0 110 pool=team-a
    make_node team-b-0 4 8Gi 0 110 pool=team-b
    make_pods a 6 --pool team-a --cpu 1
    wait_until '[ "$(count_bound)" = 4 ]' 60 || fail "team-a not filled: $(placement)"
    wait_until '[ "$(pods_json | jq "[.items[] | select(.metadata.name | startswith(\"a-\")) | select((.spec.nodeName // \"\") == \"\")] | length")" = 2 ]' 30 ||
        fail "want 2 pending: $(placement)"
    sleep 3
    [ "$(bound_on_pool team-b)" = 0 ] || fail "a pod borrowed despite disableBorrowing: $(placement)"
    # b's own pods still use b's node
    make_pod b-0 --pool team-b --cpu 1
    wait_until '[ "$(pod_node b-0)" = team-b-0 ]' 30 || fail "b-0 not bound on team-b-0"
}

# Lender choice: team-b has 2 of 4 cpu used, team-c is idle -> c (most idle).
# Then team-b idle but busy with 2 cpu-less tasks vs team-d idle with none ->
# equal idle cpu, fewest tasks: d. borrowingPools [team-b] restricts team-e to b.
case_lender_choice() {
    reset_all
    make_pool team-a
    make_pool team-b
    make_pool team-c
    make_node team-a-0 1 8Gi 0 110 pool=team-a
    make_node team-b-0 4 8Gi 0 110 pool=team-b
    make_node team-c-0 4 8Gi 0 110 pool=team-c
    make_pods b 2 --pool team-b --cpu 1
    make_pod a-0 --pool team-a --cpu 1
    wait_until '[ "$(count_bound)" = 3 ]' 60 || fail "setup not bound: $(placement)"
    make_pod a-1 --pool team-a --cpu 1
    wait_until '[ -n "$(pod_node a-1)" ]' 30 || fail "a-1 not bound"
    [ "$(pod_node a-1)" = team-c-0 ] && [ "$(borrowed_from a-1)" = team-c ] ||
        fail "a-1 on '$(pod_node a-1)' borrowed-from '$(borrowed_from a-1)', want team-c-0/team-c (most idle)"

    # tie on idle cpu, fewer tasks wins
    reset_all
    make_pool team-a
    make_pool team-b
    make_pool team-d
    make_node team-a-0 1 8Gi 0 110 pool=team-a
    make_node team-b-0 4 8Gi 0 110 pool=team-b
    make_node team-d-0 4 8Gi 0 110 pool=team-d
    make_pods b 2 --pool team-b --mem 100Mi
    make_pod a-0 --pool team-a --cpu 1
    wait_until '[ "$(count_bound)" = 3 ]' 60 || fail "setup not bound: $(placement)"
    make_pod a-1 --pool team-a --cpu 1
    wait_until '[ -n "$(pod_node a-1)" ]' 30 || fail "a-1 not bound"
    [ "$(pod_node a-1)" = team-d-0 ] || fail "a-1 on '$(pod_node a-1)', want team-d-0 (equal idle cpu, fewer tasks)"

    # borrowingPools: only team-b may lend to team-e, though team-d is idler
    make_pool team-e '{"borrowingPools": ["team-b"]}'
    make_node team-e-0 1 8Gi 0 110 pool=team-e
    make_pod e-0 --pool team-e --cpu 1
    wait_until '[ "$(pod_node e-0)" = team-e-0 ]' 30 || fail "e-0 not bound at home"
    make_pod e-1 --pool team-e --cpu 1
    wait_until '[ -n "$(pod_node e-1)" ]' 30 || fail "e-1 not bound"
    [ "$(pod_node e-1)" = team-b-0 ] && [ "$(borrowed_from e-1)" = team-b ] ||
        fail "e-1 on '$(pod_node e-1)' borrowed-from '$(borrowed_from e-1)', want team-b-0/team-b (borrowingPools)"
    assert_no_overcommit
}

# Three pools of 2 nodes x 2 cpu; each gets 6 x 1 cpu pods (capacity 4), a's
# first (they spread into b and c), then b's and c's together. In the end
# every bound pod runs in its own pool, every node is full, no borrowers.
case_three_pools_converge() {
    reset_all
    local t
    for t in a b c; do
        make_pool team-$t
        make_node team-$t-0 2 8Gi 0 110 pool=team-$t
        make_node team-$t-1 2 8Gi 0 110 pool=team-$t
    done
    make_pods a 6 --pool team-a --cpu 1
    wait_until '[ "$(count_bound)" = 6 ]' 60 || fail "a's pods not all bound (2 should borrow): $(placement)"
    [ "$(strangers | wc -l)" = 2 ] || fail "want 2 borrowers: $(placement)"
    make_pods b 6 --pool team-b --cpu 1
    make_pods c 6 --pool team-c --cpu 1
    wait_until '[ -z "$(strangers)" ] && [ "$(count_bound)" = 12 ]' 120 ||
        fail "no convergence: strangers '$(strangers | tr '\n' ' ')', $(count_bound) bound: $(placement)"
    for t in a b c; do
        [ "$(bound_on_pool team-$t)" = 4 ] || fail "team-$t runs $(bound_on_pool team-$t) pods, want 4: $(placement)"
    done
    # stays converged
    sleep 5
    [ -z "$(strangers)" ] && [ "$(count_bound)" = 12 ] || fail "not stable: $(placement)"
    [ "$(pods_json | jq --arg k "$BORROWED" '[.items[] | select(.spec.nodeName and .metadata.annotations[$k])] | length')" = 0 ] ||
        fail "a bound pod still carries $BORROWED"
    assert_no_overcommit
}

# kill -9 while 2 of a's pods are borrowed on b; restart: they are left alone
# until b's pods arrive, then reclaimed.
case_restart_reclaim() {
    reset_all
    make_pool team-a
    make_pool team-b
    make_node team-a-0 4 8Gi 0 110 pool=team-a
    make_node team-b-0 4 8Gi 0 110 pool=team-b
    make_pods a 6 --pool team-a --cpu 1 --priority-class high
    wait_until '[ "$(count_bound)" = 6 ] && [ "$(borrowers_on team-b | wc -l)" = 2 ]' 60 ||
        fail "want 2 borrowers on team-b: $(placement)"
    local borrowers p
    borrowers=$(borrowers_on team-b)
    stop_scheduler KILL || true
    start_scheduler
    wait_until 'grep -q "pool team-b created" "$CP_WORK/scheduler.log"' 30 || fail "restarted scheduler did not load pools"
    sleep 3
    for p in $borrowers; do pod_exists "$p" || fail "borrower $p evicted without demand after restart"; done
    make_pods b 4 --pool team-b --cpu 1 --priority-class low
    wait_until '[ "$(pods_json | jq "[.items[] | select(.metadata.name | startswith(\"b-\")) | select(.spec.nodeName == \"team-b-0\")] | length")" = 4 ]' 60 ||
        fail "b's pods not all bound on team-b-0 after restart: $(placement)"
    for p in $borrowers; do
        wait_until "! pod_exists $p" 30 || fail "borrower $p not evicted after restart"
    done
    [ -z "$(strangers)" ] || fail "pods outside their pool: $(strangers)"
    assert_no_overcommit
}

case_clean_shutdown() {
    stop_scheduler_clean
}

cp_start
make_priority_class low 10
make_priority_class high 100
start_scheduler
run_case borrow-and-reclaim case_borrow_and_reclaim
run_case no-sharing case_no_sharing
run_case no-borrowing case_no_borrowing
run_case lender-choice case_lender_choice
run_case three-pools-converge case_three_pools_converge
run_case restart-reclaim case_restart_reclaim
run_case clean-shutdown case_clean_shutdown
finish
