#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# `ai-scheduler whatif` and `snapshot` on a real API server (issue 24): a pod
# that fits (the exact node bin-packing picks), one that fits only by
# preempting (the exact victim and why), a gang that does not fit (fits
# false, the reason) and fits with two more nodes from a template,
# --set-quota turning an over-quota hold into a fit, --remove-node; the
# leader's state read through /debug/state; nothing written by any run
# (every object's resourceVersion and the Event list unchanged); and a
# snapshot file giving the same answer as the live cluster.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=whatif/

IN=""   # the inputs' directory (set in setup)
KCFG="" # a token kubeconfig allowed everything (the CLI sends its token to /debug/state)

pod_exists() { kc get pod "$1" -o name >/dev/null 2>&1; }

# wi ARGS...: whatif -o json against the live cluster and the leader.
wi() {
    "$AISCHED_BIN" whatif --kubeconfig "$KCFG" --server "$(sched_url "$(cat "$CP_WORK/port")")" --insecure-skip-tls-verify -o json "$@" \
        2>"$CP_WORK/wi.err" || { log "whatif $*: $(cat "$CP_WORK/wi.err")"; return 1; }
}
# answer: the decision part of an answer (no state, time or notes)
answer() { jq -c '{fits, placements, victims, borrowedFrom, waitingBehind, reason}'; }

# the objects' resourceVersions and the Events: what a write would change
written_state() {
    {
        kc get nodes,pods,podgroups,queues,pools,priorityclasses,pdb -A -o json |
            jq -c '[.items[] | [.kind, .metadata.namespace, .metadata.name, .metadata.resourceVersion]] | sort'
        kc get events -A -o json | jq -c '[.items[] | .metadata.name] | sort'
    } | sha256sum
}

setup() {
    IN=$CP_WORK/in
    mkdir -p "$IN"
    kc create serviceaccount whatif -n default >/dev/null
    kc create clusterrolebinding whatif-admin --clusterrole cluster-admin --serviceaccount default:whatif >/dev/null
    local tok
    tok=$(api_req POST /api/v1/namespaces/default/serviceaccounts/whatif/token -H 'Content-Type: application/json' \
        --data-binary '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":3600}}' |
        jq -r '.status.token // empty')
    [ -n "$tok" ] || die "no token for default/whatif"
    KCFG=$CP_WORK/whatif.kubeconfig
    _write_kubeconfig "$KCFG" whatif token "$tok"
    make_priority_class low 10
    make_priority_class mid 20
    make_priority_class high 50
    make_priority_class critical 100
    make_queue team '{"resources": {"cpu": {"quota": 1000}}}' || die "no Queue team"
    # na: 3 of 4 cpu (6 of 8Gi) used by v1 (low); nb: 2 of 4 (4 of 8Gi) by w1 (mid)
    make_node na 4 8Gi 0 110
    make_node nb 4 8Gi 0 110
    make_pod v1 --cpu 3 --mem 6Gi --priority-class low --node-selector kubernetes.io/hostname=na
    make_pod w1 --cpu 2 --mem 4Gi --priority-class mid --node-selector kubernetes.io/hostname=nb
    free_port >"$CP_WORK/port"
    start_scheduler --metrics-port "$(cat "$CP_WORK/port")" --metrics-bind-address 127.0.0.1
    wait_until '[ "$(count_bound)" = 2 ]' 60 || die "v1 and w1 not bound"
    pod_json small --cpu 1 --mem 2Gi >"$IN/small.json"
    pod_json hi --cpu 3 --mem 6Gi --priority-class high >"$IN/hi.json"
    { pod_json g-0 --cpu 3 --mem 6Gi --priority-class low --label scheduling.x-k8s.io/pod-group=g
      pod_json g-1 --cpu 3 --mem 6Gi --priority-class low --label scheduling.x-k8s.io/pod-group=g
      echo '{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup","metadata":{"name":"g"},"spec":{"minMember":2}}'
    } >"$IN/gang.json"
    pod_json np --cpu 2 --mem 4Gi --priority-class critical --label resource.aibee.cn/queue=team >"$IN/np.json"
    node_json tmpl 4 8Gi 0 110 >"$IN/node.json"
    sleep 2 # the scheduler's own writes (Queue status) settle before the first whatif
    written_state >"$CP_WORK/before"
}

# 1 cpu and 2Gi fit on both nodes; the scores (MostAllocated, balanced
# allocation, spreading) pick nb, as the live scheduler does (live-agrees).
case_fits() {
    local out
    out=$(wi -f "$IN/small.json") || fail "whatif failed"
    [ "$(jq -r .state <<<"$out")" = leader ] || fail "state '$(jq -r .state <<<"$out")', want leader: $(jq -c . <<<"$out")"
    [ "$(answer <<<"$out")" = '{"fits":true,"placements":[{"pod":"default/small","node":"nb","borrowedFrom":null}],"victims":[],"borrowedFrom":[],"waitingBehind":null,"reason":null}' ] ||
        fail "small: $(jq -c . <<<"$out")"
    pod_exists small && fail "whatif created the pod" || true
    "$AISCHED_BIN" whatif --kubeconfig "$KCFG" --server "$(sched_url "$(cat "$CP_WORK/port")")" --insecure-skip-tls-verify -f "$IN/small.json" \
        >"$CP_WORK/text" 2>&1 || fail "text: $(cat "$CP_WORK/text")"
    [ "$(head -4 "$CP_WORK/text")" = "State:       the leader's cache (a LIST with its assumed pods and nominations)
Fits:        yes
Placements:
  default/small -> nb" ] || fail "text answer: $(cat "$CP_WORK/text")"
}

# 3 cpu (priority 50) fits nowhere; na's victim v1 (priority 10) is lower
# than nb's w1 (20): v1 is preempted, hi lands on na.
case_preempt() {
    local out
    out=$(wi -f "$IN/hi.json") || fail "whatif failed"
    [ "$(answer <<<"$out")" = '{"fits":true,"placements":[{"pod":"default/hi","node":"na","borrowedFrom":null}],"victims":[{"pod":"default/v1","node":"na","why":"preemption","by":"default/hi"}],"borrowedFrom":[],"waitingBehind":null,"reason":null}' ] ||
        fail "hi: $(jq -c . <<<"$out")"
    [ "$(pod_node v1)" = na ] || fail "v1 was really evicted"
}

# Two 3-cpu members (priority 10) of a gang of 2: no room, no lower victim.
case_gang() {
    local out
    out=$(wi -f "$IN/gang.json") || fail "whatif failed"
    [ "$(jq -c '{fits, placements, victims}' <<<"$out")" = '{"fits":false,"placements":[],"victims":[]}' ] ||
        fail "gang: $(jq -c . <<<"$out")"
    [ "$(jq -r .reason <<<"$out")" = "pod group default/g: 0/2 members placeable; 0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory." ] ||
        fail "gang reason: $(jq -r .reason <<<"$out")"
    out=$(wi -f "$IN/gang.json" --add-nodes 2 --node-template "$IN/node.json") || fail "whatif --add-nodes failed"
    [ "$(jq -c '{fits, victims, nodes: ([.placements[].node] | sort)}' <<<"$out")" = '{"fits":true,"victims":[],"nodes":["tmpl-whatif-1","tmpl-whatif-2"]}' ] ||
        fail "gang with 2 nodes: $(jq -c . <<<"$out")"
}

# np is non-preemptible (priority 100) in queue team, whose cpu quota (1)
# it would pass: held. With the quota at 4 it fits, on nb (2 cpu free).
case_quota() {
    local out
    out=$(wi -f "$IN/np.json") || fail "whatif failed"
    [ "$(jq -c '{fits, placements, victims}' <<<"$out")" = '{"fits":false,"placements":[],"victims":[]}' ] ||
        fail "np over quota: $(jq -c . <<<"$out")"
    [ "$(jq -r .reason <<<"$out")" = 'queue "team" quota (non-preemptible): cpu 0m + 2000m > 1000m' ] || fail "np reason: $(jq -r .reason <<<"$out")"
    out=$(wi -f "$IN/np.json" --set-quota team=cpu:4) || fail "whatif --set-quota failed"
    [ "$(answer <<<"$out")" = '{"fits":true,"placements":[{"pod":"default/np","node":"nb","borrowedFrom":null}],"victims":[],"borrowedFrom":[],"waitingBehind":null,"reason":null}' ] ||
        fail "np with quota 4: $(jq -c . <<<"$out")"
}

# Without na, small goes to nb; v1 (no controller) goes with its node.
case_remove_node() {
    local out
    out=$(wi -f "$IN/small.json" --remove-node na) || fail "whatif failed"
    [ "$(answer <<<"$out")" = '{"fits":true,"placements":[{"pod":"default/small","node":"nb","borrowedFrom":null}],"victims":[],"borrowedFrom":[],"waitingBehind":null,"reason":null}' ] ||
        fail "small without na: $(jq -c . <<<"$out")"
    [ "$(jq -r '.notes[0]' <<<"$out")" = "node na removed: 0 of its pods come back pending (their controllers'), 1 go with it" ] ||
        fail "notes: $(jq -c . <<<"$out")"
    wi -f "$IN/small.json" --remove-node nope >/dev/null && fail "an unknown node accepted"
    grep -qx 'error: --remove-node: no node named nope' "$CP_WORK/wi.err" || fail "stderr: $(cat "$CP_WORK/wi.err")"
}

# A snapshot file (the config in it) answers as the live cluster does.
case_snapshot() {
    local live snap
    "$AISCHED_BIN" snapshot --kubeconfig "$KCFG" -o "$CP_WORK/snap.json" 2>"$CP_WORK/snap.err" ||
        fail "snapshot: $(cat "$CP_WORK/snap.err")"
    grep -q '^snapshot: .* (2 nodes, 2 pods) written to ' "$CP_WORK/snap.err" || fail "snapshot: $(cat "$CP_WORK/snap.err")"
    [ "$(stat -c %a "$CP_WORK/snap.json")" = 600 ] || fail "snapshot mode $(stat -c %a "$CP_WORK/snap.json")"
    [ "$(jq -c '[.kind, .config, ([.items[].kind] | unique)]' "$CP_WORK/snap.json")" = '["ClusterSnapshot",null,["Node","Pod","PriorityClass","Queue","Service"]]' ] ||
        fail "snapshot document: $(jq -c '[.kind, .config, ([.items[].kind] | unique)]' "$CP_WORK/snap.json")"
    # anonymized: no node name left, and the same decision on the pseudonyms (nb is node-2)
    "$AISCHED_BIN" snapshot --kubeconfig "$KCFG" --anonymize -o "$CP_WORK/anon.json" 2>"$CP_WORK/snap.err" ||
        fail "snapshot --anonymize: $(cat "$CP_WORK/snap.err")"
    [ "$(jq -c '[.items[] | select(.kind == "Node") | .metadata.name]' "$CP_WORK/anon.json")" = '["node-1","node-2"]' ] ||
        fail "anonymized nodes: $(jq -c '[.items[] | select(.kind == "Node") | .metadata.name]' "$CP_WORK/anon.json")"
    [ "$(jq '[.. | strings | select(. == "na" or . == "nb" or . == "w1" or . == "team")] | length' "$CP_WORK/anon.json")" = 0 ] &&
        [ "$(jq '[.items[] | select(.metadata.name == "v1")] | length' "$CP_WORK/anon.json")" = 0 ] ||
        fail "a name left in the anonymized snapshot"
    snap=$("$AISCHED_BIN" whatif --snapshot "$CP_WORK/anon.json" -f "$IN/small.json" -o json 2>"$CP_WORK/wi.err") ||
        fail "whatif on the anonymized snapshot: $(cat "$CP_WORK/wi.err")"
    [ "$(jq -c '[.fits, .placements]' <<<"$snap")" = '[true,[{"pod":"default/small","node":"node-2","borrowedFrom":null}]]' ] ||
        fail "anonymized answer: $(jq -c . <<<"$snap")"
    for f in hi gang np; do
        live=$(wi -f "$IN/$f.json" | answer) || fail "live $f"
        snap=$("$AISCHED_BIN" whatif --snapshot "$CP_WORK/snap.json" -f "$IN/$f.json" -o json 2>"$CP_WORK/wi.err") ||
            fail "whatif --snapshot: $(cat "$CP_WORK/wi.err")"
        [ "$(jq -r .state <<<"$snap")" = snapshot ] || fail "state: $snap"
        [ "$(answer <<<"$snap")" = "$live" ] || fail "$f: snapshot answer $(answer <<<"$snap"), live $live"
    done
}

# After every run above: not one write.
case_nothing_written() {
    written_state >"$CP_WORK/after"
    cmp -s "$CP_WORK/before" "$CP_WORK/after" || fail "objects or events changed during the whatif runs"
    [ "$(kc get pods -A -o name | sort | tr '\n' ' ')" = "pod/v1 pod/w1 " ] || fail "pods: $(kc get pods -A -o name)"
}

# The live scheduler does what whatif said: small lands on nb; hi preempts
# v1 and lands on na.
case_live_agrees() {
    make_pod small --cpu 1 --mem 2Gi
    wait_until '[ -n "$(pod_node small)" ]' 60 || fail "small not bound"
    [ "$(pod_node small)" = nb ] || fail "small on '$(pod_node small)', whatif said nb"
    kc delete pod small --grace-period=0 --force >/dev/null 2>&1
    wait_until '! pod_exists small' 30 || fail "small not deleted"
    make_pod hi --cpu 3 --mem 6Gi --priority-class high
    wait_until '[ "$(pod_node hi)" = na ]' 60 || fail "hi on '$(pod_node hi)', whatif said na"
    ! pod_exists v1 || fail "v1 not evicted, whatif said it would be"
    [ "$(pod_node w1)" = nb ] || fail "w1 moved"
}

cp_start
setup
run_case fits case_fits
run_case preempt case_preempt
run_case gang case_gang
run_case quota case_quota
run_case remove-node case_remove_node
run_case snapshot case_snapshot
run_case nothing-written case_nothing_written
run_case live-agrees case_live_agrees
finish
