#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Concurrency (run.sh uses the TSan build here): pods are created from several
# clients at once while nodes are added, relabelled and pods deleted. All
# surviving pods bind, no node is over allocatable, SIGTERM exits 0, and the
# log has no ThreadSanitizer report.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=concurrency/

case_churn() {
    local i pids=()
    for i in 0 1 2 3; do make_node "c$i" 4 8Gi 0 110 "slot=$i"; done
    start_scheduler
    for i in 0 1 2 3; do
        make_pods "w$i" 50 --cpu 50m --mem 64Mi &
        pids+=($!)
    done
    make_pods gpuw 6 --cpu 100m --gpu 1 &
    pids+=($!)
    for i in 4 5 6 7; do make_node "c$i" 4 8Gi 2 110 "slot=$i"; sleep 0.2; done
    for i in 0 1 2 3 4 5 6 7 8 9; do
        kc delete pod "w0-$i" --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
    done
    kc label node c1 extra=yes --overwrite >/dev/null
    for i in "${pids[@]}"; do wait "$i" || fail "pod creation failed"; done
    wait_until '[ "$(count_unbound)" = 0 ]' 180 || fail "$(count_unbound) pods unbound"
    # 4 x 50 + 6 created; up to 10 deleted (some deletes may race creation)
    local n
    n=$(count_bound)
    { [ "$n" -ge 196 ] && [ "$n" -le 206 ]; } || fail "unexpected bound count $n"
    assert_no_overcommit
    local bad
    bad=$(pods_json | jq -r '.items[] | select(.metadata.name | startswith("gpuw")) | select(.spec.nodeName | test("^c[4-7]$") | not) | .metadata.name')
    [ -z "$bad" ] || fail "gpu pods on nodes without GPUs: $bad"
    stop_scheduler_clean
}

cp_start
run_case churn case_churn
finish
