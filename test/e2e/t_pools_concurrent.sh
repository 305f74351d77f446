#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Pools scheduling in parallel: 4 strict pools x 250 pods (plus default),
# submitted at once; all bound, each on its own pool's nodes, no node over
# allocatable, and — with the TSan build, used when present — no
# "WARNING: ThreadSanitizer" in the scheduler's log. A second case churns
# Pools (create, relabel, delete) while pods are being scheduled.
# AISCHED_BIN overrides the binary; CONC_PODS the pods per pool (250).
set -uo pipefail
_here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${AISCHED_BIN:-}" ] && [ -x "$_here/../../build-tsan/bin/ai-scheduler" ]; then
    AISCHED_BIN=$(cd "$_here/../.." && pwd)/build-tsan/bin/ai-scheduler
    export AISCHED_BIN
fi
# shellcheck source=lib.sh
source "$_here/lib.sh"
export E2E_FILE=pools-concurrent/

PODS=${CONC_PODS:-250}
POOLS="p0 p1 p2 p3"

make_pool() { # make_pool NAME SELECTOR-JSON [SPEC-EXTRA-JSON]
    local extra=${3:-}
    [ -n "$extra" ] || extra='{"disableBorrowing": true, "disableSharing": true}'
    jq -cn --arg n "$1" --argjson s "$2" --argjson e "$extra" \
        '{apiVersion: "resource.aibee.cn/v1alpha1", kind: "Pool", metadata: {name: $n}, spec: ({nodeSelector: $s} + $e)}' |
        kc apply -f - >/dev/null
}
pool_nodes_status() { kc get pool "$1" -o jsonpath='{.status.nodes}'; }

# misplaced: pods whose node is not in their pool (node label pool=<name>, default: none).
misplaced() {
    # files, not --argjson: the lists exceed the 128 KiB argument limit
    kc get nodes -o json >"$CP_WORK/m.nodes.json" && pods_json >"$CP_WORK/m.pods.json" || { echo "kubectl failed"; return 0; }
    jq -rn --slurpfile NN "$CP_WORK/m.nodes.json" --slurpfile PP "$CP_WORK/m.pods.json" '
      $NN[0] as $N | $PP[0] as $P
      | (reduce $N.items[] as $n ({}; .[$n.metadata.name] = ($n.metadata.labels.pool // "default"))) as $w
      | $P.items[] | select((.spec.nodeName // "") != "")
      | (.metadata.annotations["resource.aibee.cn/pool"] // "default") as $home
      | select($w[.spec.nodeName] != $home) | "\(.metadata.name)@\(.spec.nodeName)"' | head -10
}

case_parallel() {
    local p i
    for p in $POOLS; do
        make_pool "$p" "$(jq -cn --arg p "$p" '{matchLabels: {pool: $p}}')"
        # 4 x 16 cpu = 64 cpu for 250 x 250m = 62.5 cpu: nearly full
        for i in 0 1 2 3; do make_node "$p-n$i" 16 32Gi 0 110 "pool=$p"; done
    done
    make_node d-n0 8 16Gi 0 110
    make_node d-n1 8 16Gi 0 110
    for p in $POOLS; do
        wait_until "[ \"\$(pool_nodes_status $p)\" = 4 ]" 60 || fail "pool $p not seen by the scheduler"
    done
    log "submitting $((4 * PODS + 50)) pods at once"
    local t0=$SECONDS pids=()
    for p in $POOLS; do
        make_pods "$p" "$PODS" --pool "$p" --cpu 250m --mem 256Mi & pids+=($!)
    done
    make_pods df 50 --cpu 250m --mem 256Mi & pids+=($!)
    for i in "${pids[@]}"; do wait "$i" || fail "pod creation failed"; done
    log "created in $((SECONDS - t0))s"
    wait_until '[ "$(count_bound)" = '$((4 * PODS + 50))' ]' 300 2 ||
        fail "$(count_bound) of $((4 * PODS + 50)) pods bound"
    log "all bound $((SECONDS - t0))s after the first submission"
    [ "$(count_unbound)" = 0 ] || fail "$(count_unbound) unbound"
    assert_no_overcommit
    local bad
    bad=$(misplaced)
    [ -z "$bad" ] || fail "pods outside their pool: $bad"
    sched_log_clean || fail "ThreadSanitizer (or other sanitizer) reports in the scheduler log"
}

# Pools change while the pools' threads schedule: a pool is created and
# deleted repeatedly, nodes are relabelled between pools. Everything that can
# be bound is bound, nothing is over allocatable, no sanitizer report.
case_churn() {
    kc delete pods --all --grace-period=0 --force --wait=false >/dev/null 2>&1
    wait_until '[ "$(kc get pods -o name | wc -l)" = 0 ]' 60 || fail "pods remain"
    local p i pids=()
    make_node spare 16 32Gi 0 110 pool=p0
    for p in $POOLS; do
        make_pods "c$p" 100 --pool "$p" --cpu 250m --mem 256Mi & pids+=($!)
    done
    make_pods cq 40 --pool q --cpu 100m & pids+=($!)
    for i in 1 2 3 4 5 6; do
        make_pool q "$(jq -cn '{matchLabels: {churn: "q"}}')" '{}'
        kc label node spare pool- churn=q --overwrite >/dev/null
        sleep 0.5
        kc label node spare pool=p$((i % 4)) churn- --overwrite >/dev/null
        kc delete pool q --wait=false >/dev/null
        sleep 0.5
    done
    for i in "${pids[@]}"; do wait "$i" || fail "pod creation failed"; done
    # pool q is gone: its pods are default's (d-n0, d-n1 have room)
    wait_until '[ "$(count_unbound)" = 0 ]' 240 2 || fail "$(count_unbound) pods unbound after the churn"
    assert_no_overcommit
    sched_alive || fail "scheduler died"
    sched_log_clean || fail "ThreadSanitizer (or other sanitizer) reports in the scheduler log"
}

case_clean_shutdown() {
    stop_scheduler_clean
}

cp_start
log "scheduler binary: $AISCHED_BIN"
cat >"$CP_WORK/sched-config.yaml" <<'EOF'
apiVersion: ai-scheduler.aibee.cn/v1alpha1
kind: AiSchedulerConfiguration
poolStatusIntervalSeconds: 1
EOF
SCHED_V=${SCHED_V:-1} start_scheduler --config "$CP_WORK/sched-config.yaml"
run_case parallel case_parallel
run_case churn case_churn
run_case clean-shutdown case_clean_shutdown
finish
