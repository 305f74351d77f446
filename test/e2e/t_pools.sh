#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Pools (resource.aibee.cn/v1alpha1): strict partition of nodes, unknown pool
# -> default, live create / relabel / selector change / delete with pending
# pods, an invalid Pool (InvalidPool event, ignored), Pool .status written by
# the scheduler and shown by `kubectl get pool`.
# One control plane and one scheduler (pool status every 1 s) for the file;
# each case deletes every Pool, pod and node first.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=pools/

POOL_API=resource.aibee.cn/v1alpha1
ANN=resource.aibee.cn/pool
# Neither borrows nor lends: placement is a strict partition.
STRICT='{"disableBorrowing": true, "disableSharing": true}'

# make_pool NAME SELECTOR-JSON [SPEC-EXTRA-JSON]: kubectl apply a Pool.
make_pool() {
    local extra=${3:-}
    [ -n "$extra" ] || extra='{}'
    jq -cn --arg api "$POOL_API" --arg n "$1" --argjson s "$2" --argjson e "$extra" \
        '{apiVersion: $api, kind: "Pool", metadata: {name: $n}, spec: ({nodeSelector: $s} + $e)}' |
        kc apply -f - >/dev/null
}
ml() { jq -cn --arg k "$1" --arg v "$2" '{matchLabels: {($k): $v}}'; }   # ml KEY VALUE

# pool_status NAME JQ-PATH (e.g. .nodes, .used.cpu): "" when not written yet.
pool_status() { kc get pool "$1" -o json | jq -r ".status$2 // empty"; }

# wait_pool NAME NODES: the scheduler has seen the pool (it wrote .status)
# and counts NODES nodes in it.
wait_pool() {
    wait_until "[ \"\$(pool_status $1 .nodes)\" = $2 ]" 30 ||
        fail "pool $1: status.nodes is '$(pool_status "$1" .nodes)', want $2"
}

# nodes_of_pods PREFIX: sorted unique node names of pods whose name starts with PREFIX.
nodes_of_pods() {
    pods_json | jq -r --arg p "$1" '.items[] | select(.metadata.name | startswith($p)) | .spec.nodeName // "-"' | sort -u | paste -sd, -
}

# assert_pods_on PREFIX REGEX: every PREFIX* pod is bound to a node matching REGEX.
assert_pods_on() {
    local bad
    bad=$(pods_json | jq -r --arg p "$1" --arg re "^($2)$" '.items[]
        | select(.metadata.name | startswith($p))
        | select((.spec.nodeName // "") | test($re) | not) | "\(.metadata.name)@\(.spec.nodeName // "-")"')
    [ -z "$bad" ] || fail "pods $1* not on /$2/: $bad"
}

pool_reset() {
    kc delete pools --all --wait=false >/dev/null 2>&1 || true
    wait_until '[ "$(kc get pools -o name | wc -l)" = 0 ]' 30 || fail "pools remain"
    cp_reset
}

# Two strict pools and a default: each pod lands only in its pool; a node
# claimed by two pools is in default; a pod that does not fit its pool stays
# pending although default has room.
case_partition() {
    pool_reset
    make_pool pa "$(ml team a)" "$STRICT"
    # pb: matchExpressions; also claims node "both" (team=a, tier=gold) -> conflict -> default
    make_pool pb '{"matchExpressions": [{"key": "team", "operator": "In", "values": ["b"]}]}' "$STRICT"
    make_pool pg "$(ml tier gold)" "$STRICT"
    make_node a1 4 8Gi 0 110 team=a
    make_node a2 4 8Gi 0 110 team=a
    make_node b1 4 8Gi 0 110 team=b
    make_node b2 4 8Gi 0 110 team=b
    make_node both 8 16Gi 0 110 team=a tier=gold
    make_node d1 8 16Gi 0 110
    wait_pool pa 2
    wait_pool pb 2
    wait_pool pg 0
    make_pods pa 10 --pool pa --cpu 500m --mem 256Mi
    make_pods pb 10 --pool pb --cpu 500m --mem 256Mi
    make_pods df 10 --cpu 500m --mem 256Mi
    make_pod big-pa --pool pa --cpu 6            # no pa node has 6 cpu; default would
    make_pod any-pg --pool pg --cpu 100m         # pg has no node at all
    wait_until '[ "$(count_unbound)" = 2 ]' 60 || fail "want 2 unbound pods, have $(count_unbound)"
    assert_pods_on pa- 'a1|a2'
    assert_pods_on pb- 'b1|b2'
    assert_pods_on df- 'both|d1'
    wait_until 'events_for big-pa default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling for big-pa"
    wait_until 'events_for any-pg default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling for any-pg"
    [ -z "$(pod_node big-pa)" ] || fail "big-pa bound to $(pod_node big-pa)"
    [ -z "$(pod_node any-pg)" ] || fail "any-pg bound to $(pod_node any-pg)"
    assert_no_overcommit
    # the table agrees on the partition
    local t
    t=$("$AISCHED_BIN" pools --kubeconfig "$ADMIN_KUBECONFIG" -o json) || fail "ai-scheduler pools failed"
    [ "$(jq -c '[.[] | {(.name): .nodes}] | add' <<<"$t")" = '{"pa":2,"pb":2,"pg":0,"default":2,"total":6}' ] ||
        fail "pools -o json nodes: $(jq -c '[.[] | {(.name): .nodes}] | add' <<<"$t")"
}

# A pod naming a pool that does not exist is scheduled in default.
case_unknown_pool() {
    pool_reset
    make_pool pu "$(ml team u)" "$STRICT"
    make_node u1 8 16Gi 0 110 team=u
    make_node d1 4 8Gi 0 110
    wait_pool pu 1
    make_pods ghost 5 --pool no-such-pool --cpu 500m
    make_pod empty-ann --annotation "$ANN=" --cpu 500m
    wait_until '[ "$(count_unbound)" = 0 ]' 30 || fail "$(count_unbound) pods unbound"
    assert_pods_on ghost- d1
    assert_pods_on empty-ann d1
}

# Pending pods of a pool that does not exist yet wait in default; creating
# the Pool moves them to its queue and its nodes into it.
case_live_create() {
    pool_reset
    make_pool pa "$(ml team a)" "$STRICT"
    make_node a1 8 16Gi 0 110 team=a        # pa's, not lent
    make_node d1 2 4Gi 0 110                # default, too small for the pc pods
    make_node c0 1 2Gi 0 110 team=c         # default until pc exists
    wait_pool pa 1
    make_pods pc 3 --pool pc --cpu 3
    make_pod probe-c0 --cpu 100m --node-selector kubernetes.io/hostname=c0
    wait_until '[ "$(pod_node probe-c0)" = c0 ]' 30 || fail "c0 is not schedulable for default pods before pc exists"
    wait_until 'events_for pc-0 default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling for pc-0"
    [ "$(count_unbound)" = 3 ] || fail "pc pods bound before pool pc exists: $(nodes_of_pods pc-)"

    make_pool pc "$(ml team c)" "$STRICT"
    wait_pool pc 1                           # c0 moved in
    wait_pool pa 1
    make_pod probe2-c0 --cpu 100m --node-selector kubernetes.io/hostname=c0
    make_node c1 12 16Gi 0 110 team=c       # joins pc: room for the pc pods
    wait_until '[ -n "$(pod_node pc-0)" ] && [ -n "$(pod_node pc-1)" ] && [ -n "$(pod_node pc-2)" ]' 60 ||
        fail "pc pods not bound after pool pc was created: $(nodes_of_pods pc-)"
    assert_pods_on pc- 'c1'
    wait_until 'events_for probe2-c0 default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling for probe2-c0"
    [ -z "$(pod_node probe2-c0)" ] || fail "default pod bound to c0 after c0 moved to the strict pool pc"
    assert_no_overcommit
}

# Relabelling a node moves it between pools; changing a selector repartitions.
case_relabel() {
    pool_reset
    make_pool pa "$(ml team a)" "$STRICT"
    make_pool pb "$(ml team b)" "$STRICT"
    make_node a1 4 8Gi 0 110 team=a
    make_node b1 4 8Gi 0 110 team=b
    make_node x1 4 8Gi 0 110 team=x
    wait_pool pa 1
    wait_pool pb 1
    make_pods pb 2 --pool pb --cpu 3
    wait_until '[ "$(count_unbound)" = 1 ]' 30 || fail "want 1 unbound pb pod, have $(count_unbound)"
    assert_pods_on pb- 'b1|'
    wait_until 'events_for pb-0 default FailedScheduling | grep -q . || events_for pb-1 default FailedScheduling | grep -q .' 30 ||
        fail "no FailedScheduling for the pending pb pod"
    # a1: team=a -> team=b. pa is empty, pb has 2 nodes; the pending pb pod lands on a1.
    kc label node a1 team=b --overwrite >/dev/null
    wait_pool pb 2
    wait_pool pa 0
    wait_until '[ "$(count_unbound)" = 0 ]' 30 || fail "pending pb pod not bound after relabel"
    assert_pods_on pb- 'a1|b1'
    # pa now has no node: its pod waits
    make_pod pa-0 --pool pa --cpu 1
    wait_until 'events_for pa-0 default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling for pa-0"
    [ -z "$(pod_node pa-0)" ] || fail "pa-0 bound to $(pod_node pa-0) while pa has no node"
    # selector change: pa selects team=x -> x1 joins pa and pa-0 lands there
    make_pool pa "$(ml team x)" "$STRICT"
    wait_pool pa 1
    wait_until '[ "$(pod_node pa-0)" = x1 ]' 30 || fail "pa-0 on '$(pod_node pa-0)', want x1 after the selector change"
    assert_no_overcommit
}

# Deleting a Pool returns its nodes to default; its pending pods go to
# default's queue and are scheduled there.
case_delete() {
    pool_reset
    make_pool pd "$(ml team d)" "$STRICT"
    make_node pd1 1 2Gi 0 110 team=d
    make_node d1 4 8Gi 0 110
    wait_pool pd 1
    make_pods pd 2 --pool pd --cpu 2           # too big for pd1, no borrowing
    make_pod df-pd1 --cpu 100m --node-selector kubernetes.io/hostname=pd1
    wait_until 'events_for pd-0 default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling for pd-0"
    wait_until 'events_for df-pd1 default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling for df-pd1"
    [ "$(count_unbound)" = 3 ] || fail "want 3 unbound pods, have $(count_unbound)"
    kc delete pool pd >/dev/null
    wait_until '[ -n "$(pod_node pd-0)" ] && [ -n "$(pod_node pd-1)" ]' 60 ||
        fail "pd pods not bound in default after pool pd was deleted: $(nodes_of_pods pd-)"
    assert_pods_on pd- d1
    wait_until '[ "$(pod_node df-pd1)" = pd1 ]' 30 || fail "pd1 did not return to default (df-pd1 on '$(pod_node df-pd1)')"
    assert_no_overcommit
    # The table has no pd and counts pd1 in default.
    local t
    t=$("$AISCHED_BIN" pools --kubeconfig "$ADMIN_KUBECONFIG" -o json) || fail "ai-scheduler pools failed"
    [ "$(jq -c '[.[] | {(.name): .nodes}] | add' <<<"$t")" = '{"default":2,"total":2}' ] ||
        fail "pools -o json after delete: $(jq -c '[.[] | {(.name): .nodes}] | add' <<<"$t")"
}

# A Pool the API server accepts but the scheduler rejects (In without values):
# Warning InvalidPool event on the Pool, a log line, nodes stay where they
# were, the scheduler keeps running. An invalid update of a valid pool is
# ignored too (the pool keeps its last valid spec).
case_invalid() {
    pool_reset
    make_pool pv "$(ml team v)" "$STRICT"
    make_node v1 4 8Gi 0 110 team=v
    make_node w1 4 8Gi 0 110 team=w
    make_node d1 4 8Gi 0 110
    wait_pool pv 1
    make_pool bad '{"matchExpressions": [{"key": "team", "operator": "In"}]}' "$STRICT" ||
        fail "the API server refused the invalid pool (the CRD schema changed?)"
    wait_until 'kc get events -n default -o json | jq -e ".items[] | select(.reason == \"InvalidPool\" and .involvedObject.kind == \"Pool\" and .involvedObject.name == \"bad\" and .type == \"Warning\")"' 30 ||
        fail "no Warning InvalidPool event for Pool bad"
    local ev
    ev=$(events_for bad default InvalidPool | head -1)
    log "event: $ev"
    grep -q 'needs values' <<<"$ev" || fail "InvalidPool message does not say what is wrong: $ev"
    wait_until 'grep -q "pool bad is invalid" "$CP_WORK/scheduler.log"' 10 || fail "no log line for the invalid pool"
    sched_alive || fail "scheduler died"
    # w1 is still default; bad has no status
    make_pod df-w1 --cpu 100m --node-selector kubernetes.io/hostname=w1
    wait_until '[ "$(pod_node df-w1)" = w1 ]' 30 || fail "w1 not in default after the invalid pool"
    [ -z "$(pool_status bad .nodes)" ] || fail "the invalid pool got a status: $(kc get pool bad -o json | jq -c .status)"

    # invalid update of pv: ignored, v1 stays in pv
    make_pool pv '{"matchExpressions": [{"key": "team", "operator": "NotIn"}]}' "$STRICT" ||
        fail "the API server refused the invalid update"
    wait_until 'events_for pv default InvalidPool | grep -q .' 30 || fail "no InvalidPool event for the update of pv"
    make_pod pv-0 --pool pv --cpu 100m
    make_pod df-v1 --cpu 100m --node-selector kubernetes.io/hostname=v1
    wait_until '[ "$(pod_node pv-0)" = v1 ]' 30 || fail "pv-0 on '$(pod_node pv-0)', want v1"
    wait_until 'events_for df-v1 default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling for df-v1"
    [ -z "$(pod_node df-v1)" ] || fail "v1 left pv after an invalid update (df-v1 bound there)"
    sched_alive || fail "scheduler died"
    # a valid spec again is applied
    make_pool pv "$(ml team w)" "$STRICT"
    wait_until '[ "$(pod_node df-v1)" = v1 ]' 30 || fail "df-v1 not bound after pv moved to team=w"
}

# The scheduler writes .status (every second here) and `kubectl get pool`
# shows it in the printer columns.
case_status() {
    pool_reset
    make_pool ps "$(ml team s)" '{"disablePreemption": false, "disableBorrowing": true, "disableSharing": true}'
    make_pool default '{}'                   # status is written for default only when it has an object
    make_node s1 4 8Gi 2 110 team=s
    make_node s2 4 8Gi 2 110 team=s
    make_node d1 2 4Gi 0 110
    wait_pool ps 2
    make_pods ps 2 --pool ps --cpu 1 --mem 1Gi
    make_pod ps-gpu --pool ps --cpu 1 --mem 1Gi --gpu 1
    make_pod ps-huge --pool ps --cpu 100
    make_pod df-0 --cpu 500m --mem 512Mi
    wait_until '[ "$(count_unbound)" = 1 ]' 30 || fail "want 1 unbound pod, have $(count_unbound)"
    local want
    want='{"nodes":2,"pending":1,"cap_cpu":"8","alloc_cpu":"8","alloc_mem":"16Gi","alloc_gpu":"4","used_cpu":"3","used_mem":"3Gi","used_gpu":"1","used_pods":"3","free_cpu":"5","free_gpu":"3","shared_cpu":"0","borrowed_cpu":"0"}'
    sj() { kc get pool "$1" -o json | jq -c '.status | {nodes, pending, cap_cpu: .capacity.cpu,
        alloc_cpu: .allocatable.cpu, alloc_mem: .allocatable.memory, alloc_gpu: .allocatable["nvidia.com/gpu"],
        used_cpu: .used.cpu, used_mem: .used.memory, used_gpu: .used["nvidia.com/gpu"], used_pods: .used.pods,
        free_cpu: .free.cpu, free_gpu: .free["nvidia.com/gpu"], shared_cpu: .shared.cpu, borrowed_cpu: .borrowed.cpu}'; }
    wait_until '[ "$(sj ps)" = "$want" ]' 30 || fail "pool ps status: $(sj ps), want $want"
    wait_until '[ "$(kc get pool default -o json | jq -c ".status | {nodes, pending, used_cpu: .used.cpu, used_mem: .used.memory}")" = "{\"nodes\":1,\"pending\":0,\"used_cpu\":\"500m\",\"used_mem\":\"512Mi\"}" ]' 30 ||
        fail "pool default status: $(kc get pool default -o json | jq -c .status)"
    # printer columns: NAME NOPREEMPT NOBORROW NOSHARE NODES GPU-USED GPU-ALLOC CPU-USED CPU-ALLOC PENDING AGE
    prow() { kc get pool ps --no-headers | awk '{print $2, $3, $4, $5, $6, $7, $8, $9, $10}'; }
    wait_until '[ "$(prow)" = "false true true 2 1 4 3 8 1" ]' 10 || fail "kubectl get pool ps columns: '$(prow)'"
    log "kubectl get pool ps: $(prow)"
    # Whole output first: with pipefail, `kc | head -1` can fail on SIGPIPE.
    local header
    header=$(kc get pool ps)
    header=${header%%$'\n'*}
    [[ "$header" =~ NODES\ +GPU-USED\ +GPU-ALLOC\ +CPU-USED\ +CPU-ALLOC\ +PENDING ]] ||
        fail "kubectl get pool header: $header"
    # live: delete a pod, the status follows
    kc delete pod ps-gpu --grace-period=0 --force >/dev/null 2>&1
    kc delete pod ps-huge --grace-period=0 --force >/dev/null 2>&1
    wait_until '[ "$(kc get pool ps -o json | jq -c ".status | [.used.cpu, .used[\"nvidia.com/gpu\"], .pending]")" = "[\"2\",\"0\",0]" ]' 30 ||
        fail "status after deletions: $(kc get pool ps -o json | jq -c '.status | [.used.cpu, .used["nvidia.com/gpu"], .pending]')"
}

case_clean_shutdown() {
    stop_scheduler_clean
}

cp_start
cat >"$CP_WORK/sched-config.yaml" <<'EOF'
apiVersion: ai-scheduler.aibee.cn/v1alpha1
kind: AiSchedulerConfiguration
poolStatusIntervalSeconds: 1
EOF
start_scheduler --config "$CP_WORK/sched-config.yaml"
run_case partition case_partition
run_case unknown-pool case_unknown_pool
run_case live-create case_live_create
run_case relabel case_relabel
run_case delete case_delete
run_case invalid case_invalid
run_case status case_status
run_case clean-shutdown case_clean_shutdown
finish
