#!/usr/bin/env bash
# shellcheck disable=SC2016 source-path=SCRIPTDIR
# GPU fractions on a real API server: KAI's gpu-fraction / gpu-memory /
# gpu-fraction-num-devices annotations, the slots written at bind
# (resource.aibee.cn/gpu-index), one reservation pod per shared GPU, their
# release, whole-GPU pods beside fractions, bad input, and a restart in the
# middle of packing. Nodes are Node objects (no kubelet): nothing runs, the
# checks read what the scheduler wrote.
#   GPU_CASES="packing restart" runs only the named cases.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=gpu-share/

RES_NS=ai-scheduler-system

# Bound pods other than the reservation pods.
bound() { count_bound '!resource.aibee.cn/gpu-reservation'; }

# node<TAB>index<TAB>pod for every bound fraction (one line per slot it holds).
fraction_slots() {
    pods_json | jq -r '.items[] | select(.metadata.annotations["resource.aibee.cn/gpu-index"] != null and
        (.metadata.labels["resource.aibee.cn/gpu-reservation"] // "") != "true" and (.spec.nodeName // "") != "")
        | . as $p | (.metadata.annotations["resource.aibee.cn/gpu-index"] | split(","))[]
        | "\($p.spec.nodeName)\t\(.)\t\($p.metadata.name)"' | sort
}

# node<TAB>index of every live reservation pod.
reservations() {
    kc get pods -n "$RES_NS" -o json 2>/dev/null | jq -r '.items[] | select(.metadata.deletionTimestamp == null)
        | "\(.spec.nodeName)\t\(.metadata.annotations["resource.aibee.cn/gpu-index"])"' | sort
}

# The sum of fractions per (node, slot) must stay <= 1 (in millionths).
no_overbooked_slot() {
    local over
    over=$(pods_json | jq -r '[.items[] | select(.metadata.annotations["gpu-fraction"] != null and (.spec.nodeName // "") != ""
            and .metadata.annotations["resource.aibee.cn/gpu-index"] != null)
        | . as $p | (.metadata.annotations["resource.aibee.cn/gpu-index"] | split(","))[]
        | {k: "\($p.spec.nodeName)/\(.)", f: ($p.metadata.annotations["gpu-fraction"] | tonumber * 1000000 | round)}]
        | group_by(.k) | map(select((map(.f) | add) > 1000000) | .[0].k) | join(" ")')
    [ -z "$over" ] || { echo "overbooked: $over" >&2; return 1; }
}

case_packing() {
    make_node g1 16 64Gi 4 110 nvidia.com/gpu.memory=40960 || fail "node create failed"
    make_node g2 16 64Gi 4 110 nvidia.com/gpu.memory=40960 || fail "node create failed"
    start_scheduler
    make_pods q 16 --cpu 100m --annotation gpu-fraction=0.25 || fail "pod create failed"
    wait_until '[ "$(bound)" = 16 ]' 60 || fail "$(bound) of 16 quarters bound"
    wait_until '[ "$(reservations | wc -l)" = 4 ]' 20 || fail "reservations: $(reservations | tr '\n' ' ')"
    local slots per node
    slots=$(fraction_slots)
    per=$(cut -f1,2 <<<"$slots" | uniq -c | awk '{print $1}' | sort -u | tr '\n' ' ')
    [ "$(cut -f1,2 <<<"$slots" | sort -u | wc -l)" = 4 ] && [ "$per" = "4 " ] ||
        { echo "$slots" >&2; fail "16 quarters should fill exactly 4 GPUs, 4 each (got: $per)"; }
    # every slot used is held by exactly one reservation pod on the same node
    [ "$(cut -f1,2 <<<"$slots" | sort -u)" = "$(reservations)" ] ||
        fail "reservations $(reservations | tr '\n' ' ') != slots $(cut -f1,2 <<<"$slots" | sort -u | tr '\n' ' ')"
    # the reservation pods' names are the ones written on the fractions
    local named
    named=$(pods_json | jq -r '[.items[] | .metadata.annotations["resource.aibee.cn/gpu-reservation-pod"] // empty] | unique | .[]' | sort)
    [ "$named" = "$(kc get pods -n "$RES_NS" -o name | sed 's|pod/||' | sort)" ] || fail "names: $named"
    # Packing leaves one node with 4 GPUs free: a 4-GPU pod fits there only,
    # and then a 1-GPU pod fits nowhere.
    node=$(cut -f1 <<<"$slots" | sort -u)
    [ "$(wc -l <<<"$node")" = 1 ] || fail "fractions spread over $(tr '\n' ' ' <<<"$node")"
    make_pod w4 --gpu 4 || fail "pod create failed"
    wait_until '[ -n "$(pod_node w4)" ]' 20 || fail "w4 not bound"
    [ "$(pod_node w4)" != "$node" ] || fail "w4 went to $node, whose GPUs are shared"
    make_pod w1 --gpu 1 || fail "pod create failed"
    sleep 3
    [ -z "$(pod_node w1)" ] || fail "w1 bound to $(pod_node w1): every GPU is used"
    assert_no_overcommit
    no_overbooked_slot || fail "a GPU holds more than 1.0"
    stop_scheduler_clean
    cp_reset
}

case_memory() {
    make_node m40 16 64Gi 1 110 nvidia.com/gpu.memory=40960 || fail "node create failed"
    make_node m80 16 64Gi 1 110 nvidia.com/gpu.memory=81920 || fail "node create failed"
    start_scheduler
    # 60000 MiB fits only the 80 GiB GPU; then 20480 fits only the 40 GiB one
    # (80 GiB has 21920 left, 40 GiB 40960: the fullest that fits is 80 GiB!)
    make_pod big --annotation gpu-memory=60000 || fail "pod create failed"
    wait_until '[ "$(pod_node big)" = m80 ]' 20 || fail "big on '$(pod_node big)', want m80"
    make_pod mid --annotation gpu-memory=20480 || fail "pod create failed"
    wait_until '[ "$(pod_node mid)" = m80 ]' 20 || fail "mid on '$(pod_node mid)', want m80 (fullest that fits)"
    make_pod small --annotation gpu-memory=1440 || fail "pod create failed"
    wait_until '[ "$(pod_node small)" = m80 ]' 20 || fail "small on '$(pod_node small)', want m80 (exactly full)"
    make_pod next --annotation gpu-memory=1 || fail "pod create failed"
    wait_until '[ "$(pod_node next)" = m40 ]' 20 || fail "next on '$(pod_node next)', want m40 (m80 is full)"
    make_pod huge --annotation gpu-memory=90000 || fail "pod create failed"
    wait_until 'events_for huge | grep -q "no GPU with enough memory"' 20 || fail "no event for 90000 MiB"
    [ -z "$(pod_node huge)" ] || fail "huge bound"
    stop_scheduler_clean
    cp_reset
}

case_num_devices() {
    make_node d1 16 64Gi 4 110 || fail "node create failed"
    start_scheduler
    make_pod two --annotation gpu-fraction=0.5 --annotation gpu-fraction-num-devices=2 || fail "pod create failed"
    wait_until '[ -n "$(pod_node two)" ]' 20 || fail "not bound"
    local idx
    idx=$(kc get pod two -o jsonpath='{.metadata.annotations.resource\.aibee\.cn/gpu-index}')
    [ "$idx" = "0,1" ] || fail "gpu-index '$idx', want two distinct slots 0,1"
    wait_until '[ "$(reservations | wc -l)" = 2 ]' 20 || fail "reservations: $(reservations | tr '\n' ' ')"
    stop_scheduler_clean
    cp_reset
}

case_bad_input() {
    make_node b1 16 64Gi 2 110 || fail "node create failed"
    start_scheduler
    make_pod f0 --annotation gpu-fraction=0 || fail "pod create failed"
    make_pod f1 --annotation gpu-fraction=1 || fail "pod create failed"
    make_pod f15 --annotation gpu-fraction=1.5 || fail "pod create failed"
    make_pod fabc --annotation gpu-fraction=abc || fail "pod create failed"
    make_pod mx --annotation gpu-memory=x || fail "pod create failed"
    make_pod both --annotation gpu-fraction=0.5 --gpu 1 || fail "pod create failed"
    local p
    for p in f0 f1 f15 fabc; do
        wait_until "events_for $p | grep -q 'invalid gpu-fraction'" 20 || fail "$p: no event naming gpu-fraction"
    done
    wait_until "events_for mx | grep -q 'invalid gpu-memory'" 20 || fail "mx: no event naming gpu-memory"
    wait_until "events_for both | grep -q 'are exclusive'" 20 || fail "both: no event"
    [ "$(bound)" = 0 ] || fail "an invalid request was bound"
    # the scheduler keeps scheduling
    make_pod ok --annotation gpu-fraction=0.5 || fail "pod create failed"
    wait_until '[ -n "$(pod_node ok)" ]' 20 || fail "a valid fraction after bad ones was not bound"
    stop_scheduler_clean
    cp_reset
}

# The last fraction leaving a GPU frees it: its reservation pod goes within
# the grace (5 s), or at once when a whole-GPU pod needs that GPU.
case_release() {
    make_node r1 16 64Gi 2 110 || fail "node create failed"
    start_scheduler
    make_pod a --annotation gpu-fraction=0.5 || fail "pod create failed"
    make_pod b --annotation gpu-fraction=0.7 || fail "pod create failed"
    wait_until '[ "$(bound)" = 2 ]' 20 || fail "fractions not bound"
    wait_until '[ "$(reservations | wc -l)" = 2 ]' 20 || fail "reservations: $(reservations | tr '\n' ' ')"
    kc delete pod a --grace-period=0 --force >/dev/null 2>&1
    wait_until '[ "$(reservations | wc -l)" = 1 ]' 15 || fail "the idle reservation was not collected"
    # one GPU free, one shared: a 2-GPU pod waits, a 1-GPU pod fits
    make_pod w2 --gpu 2 || fail "pod create failed"
    make_pod w1 --gpu 1 || fail "pod create failed"
    wait_until '[ "$(pod_node w1)" = r1 ]' 20 || fail "w1 not bound"
    kc delete pod w1 --grace-period=0 --force >/dev/null 2>&1
    # b leaves: w2 takes both GPUs, the reservation goes before it binds
    kc delete pod b --grace-period=0 --force >/dev/null 2>&1
    wait_until '[ "$(pod_node w2)" = r1 ]' 20 || fail "w2 not bound after the fractions left"
    wait_until '[ "$(reservations | wc -l)" = 0 ]' 10 || fail "a reservation survived: $(reservations)"
    stop_scheduler_clean
    cp_reset
}

# Killed while packing, restarted: the slots are rebuilt from the pods'
# gpu-index and the reservation pods; nothing is double-booked and no
# orphan reservation survives.
case_restart() {
    make_node s1 16 64Gi 4 110 || fail "node create failed"
    make_node s2 16 64Gi 4 110 || fail "node create failed"
    start_scheduler
    make_pods h 10 --annotation gpu-fraction=0.5 || fail "pod create failed"
    wait_until '[ "$(bound)" -ge 3 ]' 30 || fail "nothing bound before the kill"
    stop_scheduler KILL || true
    make_pods t 6 --annotation gpu-fraction=0.3 || fail "pod create failed"
    start_scheduler
    # 10 halves and 6 x 0.3 need at most 8 GPUs however they mix (at worst
    # six 0.5+0.3 pairs and two pairs of halves): all 16 must be bound.
    wait_until '[ "$(bound)" = 16 ]' 60 || fail "$(bound) of 16 bound after the restart"
    no_overbooked_slot || fail "a GPU is double-booked after the restart"
    local used
    used=$(fraction_slots | cut -f1,2 | sort -u)
    wait_until '[ "$(reservations)" = "$(fraction_slots | cut -f1,2 | sort -u)" ]' 20 ||
        fail "reservations $(reservations | tr '\n' ' ') != used slots $(tr '\n' ' ' <<<"$used")"
    assert_no_overcommit
    stop_scheduler_clean
    cp_reset
}

gpu_run() {
    if [ -z "${GPU_CASES:-}" ] || [[ " $GPU_CASES " == *" $1 "* ]]; then
        run_case "$@"
        # a failed case leaves its scheduler and objects behind
        stop_scheduler KILL >/dev/null 2>&1 || true
        cp_reset
    fi
}

cp_start
gpu_run packing case_packing
gpu_run memory case_memory
gpu_run num-devices case_num_devices
gpu_run bad-input case_bad_input
gpu_run release case_release
gpu_run restart case_restart
finish
