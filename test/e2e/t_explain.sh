#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# `ai-scheduler explain` (issue 24): the leader's decision record of a
# pending pod or gang at /debug/pods/NS/NAME and /debug/podgroups/NS/NAME,
# through the CLI (--server, the scheduler's own port) as text, JSON and
# YAML: exact filter counts and example nodes, the hint, the post-filter
# steps (consolidation, preemption kept by a protected victim), a gang
# waiting behind another, a topology-required gang no block holds, and the
# 404 of a bound pod naming its node.
# One control plane and one scheduler; each case resets nodes and pods.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=explain/

PG_LABEL=scheduling.x-k8s.io/pod-group
PG_API=/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups

mport() { cat "$CP_WORK/metrics.port"; }
# explain ARGS...: the CLI against the scheduler's port (stdout; stderr to $CP_WORK/explain.err).
# The /debug routes are authenticated: the admin's bearer token (system:masters) in a
# kubeconfig of its own (the admin's usual one has a client certificate only).
explain() {
    "$AISCHED_BIN" explain "$@" --server "$(sched_url "$(mport)")" --insecure-skip-tls-verify --kubeconfig "${EXPLAIN_KC:-$CP_WORK/token.kubeconfig}" \
        2>"$CP_WORK/explain.err"
}
# rec POD: the pod's record as JSON ("" when none yet).
rec() { explain "$@" -o json || true; }
# has_rec ARGS...: a record exists (and says jq filter $JQ, when set).
has_rec() { local r; r=$(rec "$@"); [ -n "$r" ] && jq -e "${JQ:-.}" <<<"$r" >/dev/null 2>&1; }

reset_all() {
    cp_reset
    kc delete podgroups.scheduling.x-k8s.io --all -n default --wait=false >/dev/null 2>&1 || true
    kc delete pools --all --wait=false >/dev/null 2>&1 || true
    wait_until '[ "$(kc get pools -o name | wc -l)" = 0 ]' 30 || fail "pools remain"
}

make_podgroup() { # NAME MIN TIMEOUT
    api_post_json "$PG_API" "$(jq -cn --arg n "$1" --argjson m "$2" --argjson t "$3" \
        '{apiVersion: "scheduling.x-k8s.io/v1alpha1", kind: "PodGroup", metadata: {name: $n},
          spec: {minMember: $m, scheduleTimeoutSeconds: $t}}')"
}

# A pod asking more GPUs than any node has: every node says Insufficient
# nvidia.com/gpu (NodeResourcesFit), three examples, and the hint says no
# node of the pool is that large.
case_too_many_gpus() {
    reset_all
    make_node g1 8 16Gi 4 110
    make_node g2 8 16Gi 4 110
    make_node g3 8 16Gi 4 110
    make_pod big --gpu 8
    wait_until 'has_rec big' 30 || fail "no record for big: $(cat "$CP_WORK/explain.err")"
    local r
    r=$(rec big)
    [ "$(jq -c .filters <<<"$r")" = '{"Insufficient nvidia.com/gpu":3}' ] || fail "filters $(jq -c .filters <<<"$r")"
    [ "$(jq -c '.filterDetails | map({plugin, reason, count, examples: (.examples | sort)})' <<<"$r")" = \
        '[{"plugin":"NodeResourcesFit","reason":"Insufficient nvidia.com/gpu","count":3,"examples":["g1","g2","g3"]}]' ] ||
        fail "filterDetails $(jq -c .filterDetails <<<"$r")"
    [ "$(jq -r '"\(.pod) \(.pool) \(.nodesEvaluated) \(.outcome) \(.topNodes | length)"' <<<"$r")" = \
        "default/big default 3 unschedulable 0" ] || fail "unit $(jq -c '[.pod, .pool, .nodesEvaluated, .outcome, .topNodes]' <<<"$r")"
    local want="asks 8 GPUs on one node, but no node of pool default has more than 4 GPUs: it cannot fit there"
    [ "$(jq -r .hint <<<"$r")" = "$want" ] || fail "hint '$(jq -r .hint <<<"$r")', want '$want'"
    [ "$(jq -r '.attempts >= 1 and (.message | startswith("0/3 nodes are available: 3 Insufficient nvidia.com/gpu"))' <<<"$r")" = true ] ||
        fail "attempts/message $(jq -c '[.attempts, .message]' <<<"$r")"
    # every key of the contract is there, whatever its value
    [ "$(jq -c '[has("pod","pool","queue","attempts","filters","topNodes","postFilter","hint","gang","admission","message","time")] | all' <<<"$r")" = true ] ||
        fail "a contract key is missing: $(jq -c keys <<<"$r")"
    # text: the sections and the hint line
    local t
    t=$(explain big) || fail "explain big (text): $(cat "$CP_WORK/explain.err")"
    grep -qx "Hint:        $want" <<<"$t" || fail "text has no hint line: $t"
    grep -q '^     3  Insufficient nvidia.com/gpu  \[NodeResourcesFit\]  e.g. ' <<<"$t" || fail "text filters: $t"
    # yaml
    local y
    y=$(explain pod default/big -o yaml) || fail "explain -o yaml: $(cat "$CP_WORK/explain.err")"
    # read back, it is the JSON record (but for what a later attempt changes)
    local keep='{k: .kind, p: .pod, q: .pool, f: .filters, d: .filterDetails, h: .hint, n: .nodesEvaluated}'
    [ "$(python3 -c 'import sys, yaml, json; print(json.dumps(yaml.safe_load(sys.stdin), default=str))' <<<"$y" | jq -cS "$keep")" = \
        "$(jq -cS "$keep" <<<"$r")" ] || fail "-o yaml does not read back as -o json's record: $y"
    # placed, its record goes: the 404 names its node
    make_node g8 8 16Gi 8 110
    wait_until '[ "$(pod_node big)" = g8 ]' 30 || fail "big not placed on g8"
    wait_until '! explain default/big >/dev/null' 10 || fail "big's record outlived its placement"
    grep -qE "^error: .*: HTTP 404: no decision kept for pod default/big: it is bound to g8$" "$CP_WORK/explain.err" ||
        fail "placed pod: '$(cat "$CP_WORK/explain.err")'"
}

# The issue's example: the GPUs are free in the pool but on no single node,
# and the pods that hold them belong to no controller, so consolidation has
# no plan; preemption finds no victim of lower priority.
case_fragmented() {
    reset_all
    local n
    for n in f1 f2 f3; do
        make_node "$n" 8 16Gi 4 110
        make_pod "hold-$n" --gpu 2 --node-selector "kubernetes.io/hostname=$n"
    done
    wait_until '[ "$(bound_in_ns)" = 3 ]' 30 || fail "the holders are not bound"
    make_pod wide --gpu 4
    JQ='.postFilter | length > 0' wait_until 'has_rec wide' 30 || fail "no record for wide: $(cat "$CP_WORK/explain.err")"
    local r
    r=$(rec wide)
    [ "$(jq -c .filters <<<"$r")" = '{"Insufficient nvidia.com/gpu":3}' ] || fail "filters $(jq -c .filters <<<"$r")"
    [ "$(jq -c '.postFilter | map(select(.step == "consolidation")) | .[0] | [.step, .result, .detail]' <<<"$r")" = \
        '["consolidation","no plan","no plan within 8 moves: 0 pod(s) could move; 3 pod(s) are not owned by a controller"]' ] ||
        fail "consolidation step $(jq -c .postFilter <<<"$r")"
    [ "$(jq -r '.postFilter | map(select(.step == "preemption")) | .[0].result' <<<"$r")" = "no candidate" ] ||
        fail "preemption step $(jq -c .postFilter <<<"$r")"
    local want="asks 4 GPUs on one node; pool default has 6 free GPUs, at most 2 on one node; consolidation: no plan within 8 moves: 0 pod(s) could move; 3 pod(s) are not owned by a controller; preemption: 3 node(s) where evicting could help, 0 with victims allowed; borrowing: no pool that lends has a node where it fits within its queue's limits there"
    [ "$(jq -r .hint <<<"$r")" = "$want" ] || fail "hint '$(jq -r .hint <<<"$r")', want '$want'"
}

# A pod that would fit by preemption, but its only victim is protected by
# the pool's minimum runtime: the preemption step says so.
case_protected_victim() {
    reset_all
    make_pool p '{"preemptMinRuntime": "1h", "disableBorrowing": true}'
    make_node pa 1 8Gi 0 110 pool=p
    make_pod v --pool p --cpu 1 --priority-class low
    wait_until '[ -n "$(pod_node v)" ]' 30 || fail "v not bound"
    api_req PATCH "/api/v1/namespaces/default/pods/v/status" -H 'Content-Type: application/merge-patch+json' \
        -o /dev/null -w '%{http_code}' --data-binary "{\"status\":{\"phase\":\"Running\",\"startTime\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}}" |
        grep -q '^2' || fail "could not set v Running"
    make_pod hi --pool p --cpu 1 --priority-class high
    JQ='.postFilter | map(select(.step == "preemption")) | length > 0' wait_until 'has_rec hi' 30 ||
        fail "no preemption step for hi: $(rec hi | jq -c .postFilter)"
    local r s
    r=$(rec hi)
    s=$(jq -c '.postFilter | map(select(.step == "preemption")) | .[0]' <<<"$r")
    [ "$(jq -r .result <<<"$s")" = protected ] || fail "preemption step $s, want result protected"
    jq -r .detail <<<"$s" | grep -q '^1 node(s) where evicting could help, 0 with victims allowed; preemption: 1 pod that could make room is protected by a minimum runtime until .* (pool "p": preemptMinRuntime 1h)$' ||
        fail "preemption detail: $(jq -r .detail <<<"$s")"
    [ "$(jq -r '"\(.pool) \(.filters["Insufficient cpu"]) \(.postFilter | map(.step) | join(","))"' <<<"$r")" = "p 1 preemption,borrowing" ] ||
        fail "pool/filters/steps $(jq -c '[.pool, .filters, .postFilter]' <<<"$r")"
    [ "$(jq -r '.postFilter[1] | "\(.result): \(.detail)"' <<<"$r")" = "skipped: pool p does not borrow" ] ||
        fail "borrowing step $(jq -c '.postFilter[1]' <<<"$r")"
    kc get pod v -o name >/dev/null || fail "the protected victim was evicted"
}

# A gang whose minimum does not fit waits (2/3 placeable, holding back the
# pool); a smaller gang behind it is held, naming it. Both PodGroups and a
# member are explained; a bound pod's 404 names its node.
case_gang_behind() {
    reset_all
    make_node c1 5 16Gi 0 110
    make_node c2 5 16Gi 0 110
    make_podgroup big 3 600
    make_pods big 3 --label "$PG_LABEL=big" --cpu 3
    JQ='.gang.placeable == 2' wait_until 'has_rec podgroup default/big' 30 ||
        fail "no record for big: $(rec podgroup default/big | jq -c .gang) $(cat "$CP_WORK/explain.err")"
    make_podgroup small 2 600
    make_pods small 2 --label "$PG_LABEL=small" --cpu 500m
    JQ='.waitingBehind == "default/big"' wait_until 'has_rec podgroup default/small' 30 ||
        fail "small not waiting behind big: $(rec podgroup default/small | jq -c '[.waitingBehind, .message]')"
    local b s m
    b=$(rec podgroup default/big)
    [ "$(jq -c '.gang | [.name, .minMember, .placed, .placeable, .timeoutSeconds, (.timeoutLeftSeconds > 540 and .timeoutLeftSeconds <= 600), (.members | length)]' <<<"$b")" = \
        '["default/big",3,0,2,600,true,3]' ] || fail "big's gang $(jq -c .gang <<<"$b")"
    [ "$(jq -c '[.kind, .outcome, .filters, .nodesEvaluated, (.topNodes | map(.node) | sort)]' <<<"$b")" = \
        '["podgroup","unschedulable",{"Insufficient cpu":2},2,["c1","c2"]]' ] ||
        fail "big's record $(jq -c '[.kind, .outcome, .filters, .nodesEvaluated, .topNodes]' <<<"$b")"
    jq -e '.topNodes[0].scores | length > 0 and (to_entries | map(.value) | add) == $t' --argjson t "$(jq '.topNodes[0].score' <<<"$b")" <<<"$b" >/dev/null ||
        fail "topNodes' plugin scores do not add up: $(jq -c .topNodes <<<"$b")"
    [ "$(jq -r '.postFilter | map(select(.step == "gang-wait")) | .[0].result' <<<"$b")" = waiting ] ||
        fail "big's steps $(jq -c .postFilter <<<"$b")"
    s=$(rec podgroup default/small)
    [ "$(jq -c '[.outcome, .gang.name, .gang.minMember, .gang.waitingBehind]' <<<"$s")" = '["held","default/small",2,"default/big"]' ] ||
        fail "small's record $(jq -c '[.outcome, .gang]' <<<"$s")"
    local want="waits behind pod group default/big, which goes first in pool default and does not fit yet"
    [ "$(jq -r .hint <<<"$s")" = "$want" ] || fail "small's hint '$(jq -r .hint <<<"$s")'"
    # a member's own record is its gang's, named for it
    m=$(rec pod default/small-1)
    [ "$(jq -r '"\(.kind) \(.pod) \(.waitingBehind)"' <<<"$m")" = "pod default/small-1 default/big" ] ||
        fail "small-1's record $(jq -c '[.kind, .pod, .waitingBehind]' <<<"$m")"
    # the gang goes: so do its records
    kc delete podgroup.scheduling.x-k8s.io small >/dev/null
    wait_until '! explain podgroup default/small >/dev/null' 20 || fail "small's record outlived its PodGroup"
    grep -qE "^error: .*: HTTP 404: no decision kept for pod group default/small: not seen \(no such PodGroup or member\)$" "$CP_WORK/explain.err" ||
        grep -qE "^error: .*: HTTP 404: no decision kept for pod group default/small: " "$CP_WORK/explain.err" ||
        fail "deleted PodGroup: $(cat "$CP_WORK/explain.err")"
}

# A topology-required gang that no block can hold: the topology row's
# verdict is in the record's gang.topology.
case_topology() {
    reset_all
    local b i
    for b in 0 1; do for i in 0 1; do make_node "t$b$i" 8 16Gi 4 110 "network.aibee.cn/block=b$b"; done; done
    api_post_json "$PG_API" '{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": "topo", "annotations": {"resource.aibee.cn/topology-required": "network.aibee.cn/block"}},
        "spec": {"minMember": 3, "scheduleTimeoutSeconds": 600}}'
    make_pods topo 3 --label "$PG_LABEL=topo" --gpu 4
    JQ='.gang.topology | length > 0' wait_until 'has_rec podgroup default/topo' 30 ||
        fail "no topology in topo's record: $(rec podgroup default/topo | jq -c .gang)"
    [ "$(rec podgroup default/topo | jq -c '.gang.topology')" = \
        '[{"detail":"pod group default/topo: no network.aibee.cn/block domain of pool default has room for its 3 members (topology-required)","result":"no domain"}]' ] ||
        fail "topology $(rec podgroup default/topo | jq -c .gang.topology)"
    explain podgroup default/topo | grep -qx '  topology no domain: pod group default/topo: no network.aibee.cn/block domain of pool default has room for its 3 members (topology-required)' ||
        fail "text: $(explain podgroup default/topo)"
}

case_bound_and_errors() {
    reset_all
    make_node b1 4 16Gi 0 110
    make_pod ok --cpu 100m
    wait_until '[ "$(pod_node ok)" = b1 ]' 30 || fail "ok not bound"
    explain default/ok >/dev/null && fail "explain of a bound pod succeeded"
    grep -qE "^error: .*: HTTP 404: no decision kept for pod default/ok: it is bound to b1$" "$CP_WORK/explain.err" ||
        fail "bound pod: '$(cat "$CP_WORK/explain.err")'"
    explain default/nope >/dev/null && fail "explain of an unknown pod succeeded"
    grep -qE "^error: .*: HTTP 404: no decision kept for pod default/nope: not seen" "$CP_WORK/explain.err" ||
        fail "unknown pod: '$(cat "$CP_WORK/explain.err")'"
    # bad input: a clear error, never a crash
    local rc=0
    explain a/b/c >/dev/null || rc=$?
    [ "$rc" = 2 ] || fail "a/b/c: exit $rc, want 2 (usage)"
    explain -n kube-system ok >/dev/null && fail "explain -n kube-system ok succeeded"
    grep -qE "^error: .*: HTTP 404: no decision kept for pod kube-system/ok: not seen" "$CP_WORK/explain.err" ||
        fail "-n: '$(cat "$CP_WORK/explain.err")'"
    local code
    code=$(sched_curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $ADMIN_TOKEN" \
        "$(sched_url "$(mport)")/debug/pods/default/x/y")
    [ "$code" = 400 ] || fail "bad path: HTTP $code, want 400"
    # who may read a record: no token 401, a ServiceAccount without get pods 403
    code=$(sched_curl -sS -o /dev/null -w '%{http_code}' "$(sched_url "$(mport)")/debug/pods/default/ok")
    [ "$code" = 401 ] || fail "no token: HTTP $code, want 401"
    kc create serviceaccount nobody -n default >/dev/null 2>&1 || true
    local tok
    tok=$(api_req POST /api/v1/namespaces/default/serviceaccounts/nobody/token -H 'Content-Type: application/json' \
        --data-binary '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":3600}}' |
        jq -r '.status.token // empty')
    [ -n "$tok" ] || fail "no token for default/nobody"
    _write_kubeconfig "$CP_WORK/nobody.kubeconfig" nobody token "$tok"
    rc=0
    EXPLAIN_KC=$CP_WORK/nobody.kubeconfig explain default/ok >/dev/null || rc=$?
    [ "$rc" = 1 ] || fail "explain without the right: exit $rc, want 1"
    grep -q "403" "$CP_WORK/explain.err" && grep -q "pods" "$CP_WORK/explain.err" ||
        fail "explain without the right says: '$(cat "$CP_WORK/explain.err")'"
    sched_alive || fail "the scheduler died"
}

cp_start
_write_kubeconfig "$CP_WORK/token.kubeconfig" e2e-admin token "$ADMIN_TOKEN"
apply_pool_crd
apply_podgroup_crd || die "PodGroup CRD"
make_priority_class low 10
make_priority_class high 100
echo "$(free_port)" >"$CP_WORK/metrics.port"
start_scheduler --metrics-port "$(mport)" --metrics-bind-address 127.0.0.1
run_case too-many-gpus case_too_many_gpus
run_case fragmented case_fragmented
run_case protected-victim case_protected_victim
run_case gang-behind case_gang_behind
run_case topology case_topology
run_case bound-and-errors case_bound_and_errors
run_case clean-shutdown stop_scheduler_clean
finish
