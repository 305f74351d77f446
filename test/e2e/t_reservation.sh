#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Reservation for large gangs (--reservation-after, --reservation-timeout) on
# a real kube-apiserver: a gang that waited past reservation-after and fits
# neither now nor by preemption gets whole nodes held in its pool; a pod that
# will finish before the expected start backfills held room, a long one is
# refused with "held for pod group ..."; the gang is placed once the held
# nodes free; a reservation expires (event, the pool's room back, the next
# gang reserves); one reservation per pool; Pool .status and /metrics show it.
# No kubelet runs: "a job finishing" is the test deleting its pod.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=reservation/

PG_LABEL=scheduling.x-k8s.io/pod-group
PG_API=/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups
ERT=resource.aibee.cn/expected-runtime

make_podgroup() {
    api_post_json "$PG_API" "$(jq -cn --arg n "$1" --argjson m "$2" \
        '{apiVersion: "scheduling.x-k8s.io/v1alpha1", kind: "PodGroup", metadata: {name: $n}, spec: {minMember: $m}}')"
}
gpu_nodes() { # gpu_nodes POOL COUNT: POOL-0.. with 4 GPUs, 16 cpu
    local i
    for ((i = 0; i < $2; i++)); do make_node "$1-$i" 16 64Gi 4 110 "pool=$1"; done
}
pg_events() {
    kc get events -n default -o json \
        --field-selector "involvedObject.kind=PodGroup,involvedObject.name=$1${2:+,reason=$2}" |
        jq -r '.items[] | "\(.reason)\t\(.message // .note // "")"'
}
gang_bound() {
    api_get "/api/v1/namespaces/default/pods?labelSelector=scheduling.x-k8s.io%2Fpod-group%3D$1&fieldSelector=spec.nodeName%21%3D" |
        jq '.items | length'
}
pool_resv() { kc get pools "$1" -o json | jq -c '.status.reservation // null'; }
placement() { pods_json | jq -r '.items[] | "\(.metadata.name)@\(.spec.nodeName // "-")"' | sort | tr '\n' ' '; }
delete_pods() { kc delete pod "$@" --grace-period=0 --force --wait=false >/dev/null 2>&1 || true; }
# fill_node NODE PREFIX: four 1-GPU pods pinned to NODE, no expected runtime.
fill_node() {
    local i
    for i in 0 1 2 3; do make_pod "$2-$i" --gpu 1 --pool p --node-selector "kubernetes.io/hostname=$1"; done
}
on_node() { pods_json | jq -r --arg n "$1" '.items[] | select(.spec.nodeName == $n) | .metadata.name'; }
fs_msg() { kc get pod "$1" -o json | jq -r '.status.conditions[]? | select(.type == "PodScheduled") | .message // ""'; }

METRICS_PORT=""
scrape() { sched_curl -fsS --max-time 5 "$(sched_url "$METRICS_PORT")/metrics"; }
metric() {
    local s
    s=$(scrape) || return 1
    awk -v k="$1" '$1 == k { print $2; exit }' <<<"$s"
}

reset_all() {
    stop_scheduler_clean >/dev/null 2>&1 || true
    kc delete events --all -n default >/dev/null 2>&1 || true
    cp_reset
    kc delete podgroups.scheduling.x-k8s.io --all -n default --wait=false >/dev/null 2>&1 || true
    kc delete pools --all --wait=false >/dev/null 2>&1 || true
    wait_until '[ "$(kc get pools -o name | wc -l)" = 0 ] && [ "$(kc get podgroups.scheduling.x-k8s.io -A -o name | wc -l)" = 0 ]' 30 ||
        fail "pools/podgroups remain"
}
# start RESERVATION-TIMEOUT: reservation-after 3 s; the gang's own schedule
# timeout 1 s (its whole-pool hold ends before the reservation: what is
# measured here is the reservation's hold alone).
start() {
    METRICS_PORT=$(free_port)
    start_scheduler --metrics-port "$METRICS_PORT" --metrics-bind-address 127.0.0.1 "${METRICS_OPEN[@]}" --reservation-after 3s \
        --reservation-timeout "$1" --gang-schedule-timeout 1 --pool-status-interval 1
}

# Pool p: 4 nodes x 4 GPUs, all full of 1-GPU pods of unknown runtime. Gang
# big (2 x 4 GPUs) waits; after 3 s it reserves 2 whole nodes. One held node
# frees: a 2 s pod backfills it, a 1 h pod is refused with the message. The
# short pod ends and the other held node frees: big is placed on the two held
# nodes, the reservation ends (placed), the long pod stays off them.
case_reserve_backfill_place() {
    reset_all
    start 60s
    make_pool p
    gpu_nodes p 4
    local i
    for i in 0 1 2 3; do fill_node "p-$i" "f$i"; done
    wait_until '[ "$(count_bound)" = 16 ]' 60 || fail "fillers not bound: $(placement)"
    make_podgroup big 2
    make_pods big 2 --label "$PG_LABEL=big" --gpu 4 --pool p
    wait_until '[ -n "$(pg_events big Reserved)" ]' 20 || fail "no Reserved event on big"
    pg_events big Reserved | grep -q 'reserved 2 nodes (8 GPUs) in pool p' ||
        fail "Reserved event: $(pg_events big Reserved)"
    wait_until '[ "$(pool_resv p | jq -r .podGroup)" = default/big ]' 10 || fail "Pool status: $(pool_resv p)"
    local held
    held=$(pool_resv p | jq -r '.nodes[]' | sort | tr '\n' ' ')
    [ "$(pool_resv p | jq -r .held)" = 8 ] || fail "held: $(pool_resv p)"
    [ "$(metric 'ai_scheduler_reservations{pool="p"}')" = 1 ] || fail "gauge: $(scrape | grep reserv)"
    [ "$(metric 'ai_scheduler_reserved_resources{pool="p",resource="gpu"}')" = 8 ] || fail "held gauge"
    # The pool table (`ai-scheduler pools`) shows the held room.
    "$AISCHED_BIN" pools --kubeconfig "$ADMIN_KUBECONFIG" 2>/dev/null | grep -E '^ +nodes +4 +4 +2 held for default/big' >/dev/null ||
        fail "pools table: $("$AISCHED_BIN" pools --kubeconfig "$ADMIN_KUBECONFIG" 2>&1 | head -8)"
    [ "$("$AISCHED_BIN" pools --kubeconfig "$ADMIN_KUBECONFIG" -o json 2>/dev/null |
        jq -cS '.[] | select(.name == "p") | .held')" = '{"gpu":8,"nodes":2,"pod_group":"default/big"}' ] ||
        fail "pools -o json: no held"
    local a=${held%% *} b
    b=$(echo "$held" | awk '{print $2}')
    log "held: $a $b"
    # A held node frees: its fillers' jobs end.
    # shellcheck disable=SC2046
    delete_pods $(on_node "$a")
    wait_until '[ -z "$(on_node '"$a"')" ]' 20 || fail "$a not empty"
    make_pod long --gpu 1 --pool p --annotation "$ERT=1h"
    wait_until 'fs_msg long | grep -qF "held for pod group default/big until about"' 20 ||
        fail "long: no 'held for pod group' message: $(fs_msg long)"
    [ -z "$(pod_node long)" ] || fail "long (1h) backfilled held room: $(placement)"
    make_pod short --gpu 1 --pool p --annotation "$ERT=2s"
    wait_until '[ "$(pod_node short)" = "'"$a"'" ]' 20 || fail "short (2s) not backfilled on $a: $(placement)"
    [ "$(gang_bound big)" = 0 ] || fail "big placed early"
    # short ends, the other held node frees: big goes there.
    delete_pods short
    # shellcheck disable=SC2046
    delete_pods $(on_node "$b")
    wait_until '[ "$(gang_bound big)" = 2 ]' 30 || fail "big not placed: $(placement)"
    local nodes
    nodes=$(pods_json -l "$PG_LABEL=big" | jq -r '.items[].spec.nodeName' | sort | tr '\n' ' ')
    [ "$nodes" = "$held" ] || fail "big on $nodes, held $held"
    wait_until '[ "$(pool_resv p)" = null ]' 10 || fail "reservation still shown: $(pool_resv p)"
    wait_until '[ "$(metric "ai_scheduler_reservations_total{outcome=\"placed\"}")" = 1 ]' 10 || fail "placed counter"
    [ "$(metric 'ai_scheduler_reservations{pool="p"}')" = 0 ] || fail "gauge after"
    [ -z "$(pod_node long)" ] || fail "long bound with no room?: $(placement)"
    assert_no_overcommit
}

# Two big gangs, reservation-timeout 10 s: one reservation in the pool at a
# time (big1, the older); it expires (event) and big2 reserves next (the
# expired gang goes behind the next candidate); both gangs deleted: the
# reservation ends (deleted) and the held room goes back to the pool (a pod
# of unknown runtime binds there).
case_expiry_one_per_pool() {
    reset_all
    start 10s
    make_pool p
    gpu_nodes p 4
    local i
    for i in 0 1 2 3; do fill_node "p-$i" "f$i"; done
    wait_until '[ "$(count_bound)" = 16 ]' 60 || fail "fillers not bound"
    make_podgroup big1 2
    make_pods big1 2 --label "$PG_LABEL=big1" --gpu 4 --pool p
    sleep 1
    make_podgroup big2 2
    make_pods big2 2 --label "$PG_LABEL=big2" --gpu 4 --pool p
    wait_until '[ -n "$(pg_events big1 Reserved)" ]' 20 || fail "no Reserved event on big1"
    [ "$(pool_resv p | jq -r .podGroup)" = default/big1 ] || wait_until '[ "$(pool_resv p | jq -r .podGroup)" = default/big1 ]' 5 ||
        fail "Pool status: $(pool_resv p)"
    [ -z "$(pg_events big2 Reserved)" ] || fail "two reservations in one pool"
    # One held node frees; a pod of unknown runtime may not take it.
    local a
    a=$(pool_resv p | jq -r '.nodes[0]')
    # shellcheck disable=SC2046
    delete_pods $(on_node "$a")
    make_pod long --gpu 4 --pool p
    sleep 2
    [ -z "$(pod_node long)" ] || fail "long took held room: $(placement)"
    wait_until '[ -n "$(pg_events big1 ReservationExpired)" ]' 15 || fail "no ReservationExpired on big1"
    # big1 goes behind the next candidate: big2 reserves now.
    wait_until '[ -n "$(pg_events big2 Reserved)" ]' 15 || fail "big2 never reserved after big1 expired"
    wait_until '[ "$(pool_resv p | jq -r .podGroup)" = default/big2 ]' 10 || fail "Pool status: $(pool_resv p)"
    [ "$(metric 'ai_scheduler_reservations_total{outcome="expired"}')" = 1 ] || fail "expired counter"
    [ "$(gang_bound big1)" = 0 ] && [ "$(gang_bound big2)" = 0 ] || fail "a gang partly bound: $(placement)"
    [ -z "$(pod_node long)" ] || fail "long took big2's held room: $(placement)"
    # Both gangs go: the reservation ends (deleted) and the pool is not
    # frozen: the freed node goes to the pod of unknown runtime.
    kc delete podgroups.scheduling.x-k8s.io big1 big2 >/dev/null
    delete_pods big1-0 big1-1 big2-0 big2-1
    wait_until '[ "$(metric "ai_scheduler_reservations_total{outcome=\"deleted\"}")" = 1 ]' 15 || fail "deleted counter"
    wait_until '[ -n "$(pod_node long)" ]' 15 || fail "long not bound once the reservation ended: $(placement)"
    wait_until '[ "$(pool_resv p)" = null ]' 10 || fail "reservation still shown: $(pool_resv p)"
    assert_no_overcommit
}

# --reservation-after 0: no reservation, ever.
case_disabled() {
    reset_all
    METRICS_PORT=$(free_port)
    start_scheduler --metrics-port "$METRICS_PORT" --metrics-bind-address 127.0.0.1 "${METRICS_OPEN[@]}" --reservation-after 0 \
        --gang-schedule-timeout 1
    make_pool p
    gpu_nodes p 2
    fill_node p-0 f0
    fill_node p-1 f1
    wait_until '[ "$(count_bound)" = 8 ]' 60 || fail "fillers not bound"
    make_podgroup big 2
    make_pods big 2 --label "$PG_LABEL=big" --gpu 4 --pool p
    sleep 5
    [ -z "$(pg_events big Reserved)" ] || fail "reserved with --reservation-after 0"
    delete_pods f0-0
    make_pod long --gpu 1 --pool p
    wait_until '[ -n "$(pod_node long)" ]' 15 || fail "long not bound: $(placement)"
}

cp_start
apply_podgroup_crd
run_case reserve-backfill-place case_reserve_backfill_place
run_case expiry-one-per-pool case_expiry_one_per_pool
run_case disabled case_disabled
stop_scheduler_clean >/dev/null 2>&1 || true
finish
