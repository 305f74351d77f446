#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# `ai-scheduler pools -o json` against sums computed here, independently, with
# kubectl -o json + jq: the node partition by the Pools' selectors (matchLabels,
# In/NotIn/Exists/DoesNotExist, conflicts and invalid pools -> default),
# capacity/allocatable sums, used = requests of non-terminal pods bound to the
# pool's nodes (init containers, any scheduler), shared/borrowed by the pods'
# home pools, pending = unbound pods of ai-scheduler that are not terminal or
# being deleted. First without a scheduler (fixed numbers), then with one
# running (the table and the Pool .status it writes agree with the recount).
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=pool-table/

POOL_API=resource.aibee.cn/v1alpha1

make_pool() { # make_pool NAME SPEC-JSON
    jq -cn --arg api "$POOL_API" --arg n "$1" --argjson s "$2" \
        '{apiVersion: $api, kind: "Pool", metadata: {name: $n}, spec: $s}' | kc apply -f - >/dev/null
}

# bound_pod NAME NODE [pod_json options]: a pod created already bound (no scheduler involved).
bound_pod() {
    local name=$1 node=$2
    shift 2
    make_pod "$name" --merge "$(jq -cn --arg n "$node" '{spec: {nodeName: $n}}')" "$@"
}

# set_phase NAME PHASE
set_phase() {
    local out
    out=$(api_req PATCH "/api/v1/namespaces/default/pods/$1/status" -H 'Content-Type: application/merge-patch+json' \
        --data-binary "{\"status\":{\"phase\":\"$2\"}}" -w '\n%{http_code}') || return 1
    case ${out##*$'\n'} in 2??) return 0 ;; esac
    log "set_phase $1 $2: $out"; return 1
}

# The expected table, from the Node, Pod and Pool lists alone.
EXPECT_JQ="$JQ_DEFS"'
def has_vals: ((.values // []) | length) > 0;
def valid_pool: ((.spec.nodeSelector.matchExpressions // []) | all(
    if .operator == "In" or .operator == "NotIn" then has_vals
    elif .operator == "Exists" or .operator == "DoesNotExist" then (has_vals | not)
    else false end));
def nreq: ((.matchLabels // {}) | length) + ((.matchExpressions // []) | length);
def matches($l): ((.matchLabels // {}) | to_entries | all(. as $e | $l[$e.key] == $e.value))
  and ((.matchExpressions // []) | all(. as $x | ($l | has($x.key)) as $h
      | if $x.operator == "In" then $h and any($x.values[]; . == $l[$x.key])
        elif $x.operator == "NotIn" then ($h | not) or (any($x.values[]; . == $l[$x.key]) | not)
        elif $x.operator == "Exists" then $h
        else ($h | not) end));
def vec: {cpu_milli: 0, gpu: 0, memory: 0, storage: 0, pods: 0};
def rl: {cpu_milli: (.cpu | q * 1000 | round), gpu: (.["nvidia.com/gpu"] | q | round),
         memory: (.memory | q | round), storage: (.["ephemeral-storage"] | q | round), pods: (.pods | q | round)};
def podvec: {cpu_milli: (req("cpu") * 1000 | round), gpu: (req("nvidia.com/gpu") | round),
             memory: (req("memory") | round), storage: (req("ephemeral-storage") | round), pods: 1};
def vsum: reduce .[] as $v (vec; with_entries(.value += $v[.key]));
def terminal: .status.phase == "Succeeded" or .status.phase == "Failed";

($PL.items | map(select(valid_pool))) as $valid
| ($valid | map(select(.metadata.name != "default")) | sort_by(.metadata.name)) as $pools
| ($pools | map(.metadata.name)) as $names
| ($valid | map(select(.metadata.name == "default")) | .[0].spec // {}) as $dspec
| ($N.items | map(.metadata.labels as $l
    | ([$pools[] | select((.spec.nodeSelector // {}) | nreq > 0 and matches($l)) | .metadata.name]) as $m
    | {name: .metadata.name, pool: (if ($m | length) == 1 then $m[0] else "default" end),
       cap: (.status.capacity | rl), alloc: (.status.allocatable | rl)})) as $nodes
| (reduce $nodes[] as $n ({}; .[$n.name] = $n.pool)) as $where
| ($P.items | map(select(terminal | not)
    | (.metadata.annotations["resource.aibee.cn/pool"] // "") as $a
    | {home: (if any($names[]; . == $a) then $a else "default" end),
       on: (if (.spec.nodeName // "") == "" then null else $where[.spec.nodeName] // "?" end),
       pending_ok: ((.spec.nodeName // "") == "" and .metadata.deletionTimestamp == null and .spec.schedulerName == $sched),
       gang: (.metadata.labels["scheduling.x-k8s.io/pod-group"] // "" | if . == "" then null else . end),
       ns: .metadata.namespace,
       v: podvec})) as $pods
| [($pools[] | {name: .metadata.name, s: .spec}), {name: "default", s: $dspec}]
| map(.name as $p
    | ($pods | map(select(.on == $p))) as $used
    | ($pods | map(select(.pending_ok and .home == $p))) as $pend
    | {name: $p, preemption: (.s.disablePreemption != true), borrowing: (.s.disableBorrowing != true),
       sharing: (.s.disableSharing != true),
       nodes: ($nodes | map(select(.pool == $p)) | length),
       capacity: ($nodes | map(select(.pool == $p) | .cap) | vsum),
       allocatable: ($nodes | map(select(.pool == $p) | .alloc) | vsum),
       used: ($used | map(.v) | vsum),
       shared: ($used | map(select(.home != $p) | .v) | vsum),
       borrowed: ($pods | map(select(.on != null and .on != "?" and .home == $p and .on != $p) | .v) | vsum),
       pending: ($pend | map(.v) | vsum),
       pending_gangs: ($pend | map(select(.gang != null) | "\(.ns)/\(.gang)") | unique | length)})'

# expected_table: prints the expected `pools -o json` document (sorted keys).
expected_table() {
    # files, not --argjson: the lists can exceed the 128 KiB argument limit
    kc get nodes -o json >"$CP_WORK/x.nodes.json" && kc get pods -A -o json >"$CP_WORK/x.pods.json" &&
        kc get pools -o json >"$CP_WORK/x.pools.json" || return 1
    jq -S -n --slurpfile NN "$CP_WORK/x.nodes.json" --slurpfile PP "$CP_WORK/x.pods.json" \
        --slurpfile PLL "$CP_WORK/x.pools.json" --arg sched "$SCHED_NAME" '$NN[0] as $N | $PP[0] as $P | $PLL[0] as $PL | '"$EXPECT_JQ" |
        jq -S '. as $all | . + [{name: "total", nodes: (map(.nodes) | add), pending_gangs: (map(.pending_gangs) | add)}
            + (reduce ("capacity", "allocatable", "used", "shared", "borrowed", "pending") as $k ({};
                .[$k] = (reduce $all[] as $p ({cpu_milli: 0, gpu: 0, memory: 0, storage: 0, pods: 0};
                    with_entries(.value += $p[$k][.key])))))]'
}

actual_table() {
    "$AISCHED_BIN" pools --kubeconfig "$ADMIN_KUBECONFIG" -o json 2>"$CP_WORK/pools.stderr" | jq -S .
}

# tables_agree: actual == expected; on mismatch leaves both in $CP_WORK/table.{want,got}.
tables_agree() {
    expected_table >"$CP_WORK/table.want" || return 1
    actual_table >"$CP_WORK/table.got" || return 1
    cmp -s "$CP_WORK/table.want" "$CP_WORK/table.got"
}

show_diff() {
    diff <(jq -c '.[]' "$CP_WORK/table.want") <(jq -c '.[]' "$CP_WORK/table.got") | head -30 >&2
}

setup_cluster() {
    make_pool ta '{"nodeSelector": {"matchLabels": {"team": "a"}}}'
    make_pool tb '{"nodeSelector": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["b", "b2"]}]}, "disableSharing": true}'
    make_pool tc '{"nodeSelector": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}, {"key": "team", "operator": "NotIn", "values": ["a", "b"]}]}, "disablePreemption": true}'
    make_pool tx '{"nodeSelector": {"matchLabels": {"zone": "z9"}, "matchExpressions": [{"key": "x-excluded", "operator": "DoesNotExist"}]}, "disableBorrowing": true}'
    make_pool tempty '{"nodeSelector": {}}'
    make_pool bad '{"nodeSelector": {"matchExpressions": [{"key": "bad", "operator": "In"}]}}'
    make_pool default '{"disableSharing": true}'

    make_node a1 8 32Gi 0 110 team=a
    make_node a2 16 64Gi 4 110 team=a gpu=yes
    # a2: allocatable below capacity (reserved resources)
    api_req PATCH /api/v1/nodes/a2/status -H 'Content-Type: application/merge-patch+json' --data-binary \
        '{"status":{"allocatable":{"cpu":"15500m","memory":"60Gi","pods":"100","ephemeral-storage":"90Gi","nvidia.com/gpu":"4"}}}' \
        -o /dev/null -f || fail "patching a2 status"
    make_node b1 4 8Gi 0 50 team=b
    make_node b2 4 8Gi 2 50 team=b2 gpu=yes          # tb and tc: conflict -> default
    make_node c1 32 128Gi 8 110 team=c gpu=yes       # tc
    make_node x1 2 4Gi 0 20 zone=z9                  # tx
    make_node x2 2 4Gi 0 20 zone=z9 x-excluded=1     # default
    make_node ax 4 8Gi 0 110 team=a zone=z9          # ta and tx: conflict -> default
    make_node d1 6 12Gi 0 110                        # default
    make_node e1 3 6Gi 0 30 bad=1                    # only the invalid pool: default
    [ "$(jq -r .status.allocatable.cpu <<<"$(kc get node a2 -o json)")" = 15500m ] || fail "a2 allocatable not patched"

    bound_pod ta-own-1 a1 --pool ta --cpu 1 --mem 2Gi
    bound_pod ta-own-2 a1 --pool ta --cpu 500m --mem 1536Mi
    bound_pod tb-on-a1 a1 --pool tb --cpu 2 --mem 1Gi
    bound_pod ta-gpu a2 --pool ta --cpu 4 --mem 8Gi --gpu 2
    bound_pod ta-init a2 --pool ta --merge '{"spec": {"containers": [
        {"name": "c1", "image": "registry.invalid/pause:3", "resources": {"requests": {"cpu": "250m", "memory": "100Mi"}}},
        {"name": "c2", "image": "registry.invalid/pause:3", "resources": {"requests": {"cpu": "250m", "memory": "100Mi"}}}],
        "initContainers": [{"name": "i", "image": "registry.invalid/pause:3", "resources": {"requests": {"cpu": "1", "memory": "50Mi"}}}]}}'
    bound_pod ta-disk a2 --pool ta --cpu 100m --merge '{"spec": {"containers": [{"name": "main", "image": "registry.invalid/pause:3",
        "resources": {"requests": {"cpu": "100m", "ephemeral-storage": "5Gi"}}}]}}'
    bound_pod none-on-b1 b1 --cpu 500m --mem 256Mi
    bound_pod zzz-on-b1 b1 --pool zzz --cpu 250m --mem 128Mi
    bound_pod tc-gpu c1 --pool tc --cpu 8 --mem 16Gi --gpu 4
    bound_pod tc-done c1 --pool tc --cpu 16 --mem 64Gi --gpu 4
    bound_pod tc-failed c1 --pool tc --cpu 2 --mem 1Gi
    bound_pod tb-on-b2 b2 --pool tb --cpu 1 --mem 1Gi --gpu 1
    bound_pod tx-1 x1 --pool tx --cpu 1 --mem 1Gi
    bound_pod d-1 d1 --cpu 2 --mem 2Gi
    bound_pod foreign-d1 d1 --scheduler default-scheduler --pool ta --cpu 1 --mem 1Gi
    bound_pod ghost ghost-node --pool ta --cpu 1                      # no such node: not counted
    set_phase tc-done Succeeded || fail "set phase"
    set_phase tc-failed Failed || fail "set phase"

    make_pod pend-ta-huge --pool ta --cpu 100 --mem 1Gi
    make_pod pend-tb --pool tb --cpu 1 --mem 512Mi --gpu 1
    make_pod pend-none --cpu 500m
    make_pod pend-zzz --pool zzz --cpu 300m --mem 300Mi
    make_pod pend-default --pool default --cpu 200m
    make_pod pend-foreign --pool ta --scheduler default-scheduler --cpu 1     # not ours: not pending
    make_pod pend-failed --pool ta --cpu 1
    set_phase pend-failed Failed || fail "set phase"
    make_pod pend-deleting --pool ta --cpu 1 --merge '{"metadata": {"finalizers": ["e2e.aibee.cn/hold"]}}'
    kc delete pod pend-deleting --wait=false >/dev/null
    wait_until '[ -n "$(kc get pod pend-deleting -o jsonpath={.metadata.deletionTimestamp})" ]' 10 || fail "pend-deleting not deleting"
}

# No scheduler: the numbers are fixed; check the recount and a few hand-made values.
case_static() {
    setup_cluster
    tables_agree || { show_diff; fail "pools -o json differs from the recount (want < > got)"; }
    local t=$CP_WORK/table.got
    grep -q 'skipping invalid Pool: pool bad' "$CP_WORK/pools.stderr" || fail "no warning about Pool bad: $(cat "$CP_WORK/pools.stderr")"
    # by hand, so the recount itself is checked too
    chk() { local got; got=$(jq -c "$1" "$t"); [ "$got" = "$2" ] || fail "$1 = $got, want $2"; }
    chk '[.[] | .name]' '["ta","tb","tc","tempty","tx","default","total"]'
    chk '[.[] | .nodes]' '[2,1,1,0,1,5,10]'
    chk '.[] | select(.name == "ta") | .allocatable' '{"cpu_milli":23500,"gpu":4,"memory":98784247808,"pods":210,"storage":204010946560}'
    chk '.[] | select(.name == "ta") | .capacity.cpu_milli' '24000'
    # ta: used 1+0.5+2 (a1) + 4+1+0.1 (a2; init container 1 cpu > 2x250m)
    chk '.[] | select(.name == "ta") | .used' '{"cpu_milli":8600,"gpu":2,"memory":13631488000,"pods":6,"storage":5368709120}'
    chk '.[] | select(.name == "ta") | .shared | [.cpu_milli, .pods]' '[2000,1]'
    chk '.[] | select(.name == "tb") | .borrowed | [.cpu_milli, .gpu, .pods]' '[3000,1,2]'
    chk '.[] | select(.name == "tb") | .shared | [.cpu_milli, .pods]' '[750,2]'
    chk '.[] | select(.name == "tc") | .used | [.cpu_milli, .gpu, .pods]' '[8000,4,1]'
    chk '.[] | select(.name == "ta") | .pending | [.cpu_milli, .pods]' '[100000,1]'
    chk '.[] | select(.name == "default") | .pending | [.cpu_milli, .memory, .pods]' '[1000,314572800,3]'
    chk '.[] | select(.name == "default") | [.preemption, .borrowing, .sharing]' '[true,true,false]'
    chk '.[] | select(.name == "tc") | [.preemption, .borrowing, .sharing]' '[false,true,true]'
    chk '.[] | select(.name == "total") | .used.pods' '13'
    chk '.[] | select(.name == "total") | .pending.pods' '5'
    # the text table: header, one block per pool, Total
    local txt
    txt=$("$AISCHED_BIN" pools --kubeconfig "$ADMIN_KUBECONFIG" 2>/dev/null) || fail "pools (table) failed"
    grep -qE '^Pools +p b s +Resource +Capacity +Allocatable +Used +Shared +Pending$' <<<"$txt" || fail "table header: $(head -1 <<<"$txt")"
    [ "$(grep -cE '^(ta|tb|tc|tempty|tx|Default|Total) ' <<<"$txt")" = 7 ] || fail "table blocks: $txt"
    grep -qE '^Total +cpu +81 +80.5 +22.35 ' <<<"$txt" || fail "Total cpu row: $(grep '^Total' <<<"$txt")"
    [ "$("$AISCHED_BIN" pools --kubeconfig "$ADMIN_KUBECONFIG" -o yaml 2>/dev/null | grep -c '^- name:')" = 7 ] || fail "-o yaml"
}

# With the scheduler running: it binds the pending pods and new ones; the
# table still equals the recount, and the Pool .status it writes agrees.
case_live() {
    cat >"$CP_WORK/sched-config.yaml" <<'EOF'
apiVersion: ai-scheduler.aibee.cn/v1alpha1
kind: AiSchedulerConfiguration
poolStatusIntervalSeconds: 1
EOF
    start_scheduler --config "$CP_WORK/sched-config.yaml"
    make_pods w-ta 12 --pool ta --cpu 500m --mem 512Mi --label wave=2
    make_pods w-tb 6 --pool tb --cpu 250m --mem 256Mi --label wave=2
    make_pods w-tc 4 --pool tc --cpu 1 --mem 1Gi --gpu 1 --label wave=2
    make_pods w-tx 4 --pool tx --cpu 200m --label wave=2
    make_pods w-df 8 --cpu 300m --mem 300Mi --label wave=2
    wait_until '[ "$(count_unbound wave=2)" = 0 ]' 60 || fail "$(count_unbound wave=2) wave-2 pods unbound"
    wait_until '[ -n "$(pod_node pend-tb)" ] && [ -n "$(pod_node pend-none)" ] && [ -n "$(pod_node pend-zzz)" ]' 30 ||
        fail "pending pods not bound"
    wait_until tables_agree 30 || { show_diff; fail "pools -o json differs from the recount (want < > got)"; }
    log "live table: $(jq -c '[.[] | {(.name): [.nodes, .used.cpu_milli, .used.pods, .shared.pods, .borrowed.pods, .pending.pods]}] | add' "$CP_WORK/table.got")"
    # The Pool .status (quantity strings) written by the scheduler == the table.
    status_agrees() {
        kc get pools -o json >"$CP_WORK/s.pools.json" || return 1
        jq -e -n --slurpfile PLL "$CP_WORK/s.pools.json" --slurpfile T "$CP_WORK/table.got" '$PLL[0] as $PL | '"$JQ_DEFS"'
          def rl: {cpu_milli: (.cpu | q * 1000 | round), gpu: (.["nvidia.com/gpu"] | q | round),
                   memory: (.memory | q | round), storage: (.["ephemeral-storage"] | q | round), pods: (.pods | q | round)};
          [$T[0][] | select(.name != "total") | . as $t
           | ($PL.items[] | select(.metadata.name == $t.name) | .status) as $s
           | $s.nodes == $t.nodes and $s.pending == $t.pending.pods
             and ($s.capacity | rl) == $t.capacity and ($s.allocatable | rl) == $t.allocatable
             and ($s.used | rl) == $t.used and ($s.shared | rl) == $t.shared and ($s.borrowed | rl) == $t.borrowed
             and ($s.free | rl) == ($t.allocatable | with_entries(.value -= $t.used[.key])) ]
          | length == 6 and all' >/dev/null
    }
    wait_until 'tables_agree && status_agrees' 30 || {
        kc get pools -o json | jq -c '.items[] | {n: .metadata.name, s: .status | {nodes, pending, used: .used.cpu, shared: .shared.cpu, borrowed: .borrowed.cpu}}' >&2
        fail "Pool .status differs from the table"; }
    [ -z "$(kc get pool bad -o jsonpath='{.status}')" ] || fail "the invalid pool has a status"
    kc delete pod ghost --grace-period=0 --force >/dev/null 2>&1    # bound to a node that does not exist
    assert_no_overcommit
    stop_scheduler_clean
}

cp_start
run_case static case_static
run_case live case_live
finish
