#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119,SC2120 source-path=SCRIPTDIR
# The dashboard's JSON routes (/api/v1/..., issue 25) on a real API server:
# two pools, a Queue, a 0.5-GPU fraction, a gang of three 2-GPU pods that
# fits neither its pool nor a lender whole,
# and a pod no node fits; each route read with a ServiceAccount token that
# has the rights the routes ask (get pools, list pods, list podgroups) and
# compared with exact values; no token is 401, a token without rights 403,
# /api/v1/info needs authentication only.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=dashboard/

# The scheme is one variable: HTTPS, the server's default (self-signed: curl
# -k); DASH_SCHEME=http runs the same cases on --plain-http.
DASH_SCHEME=${DASH_SCHEME:-https}
PG_API=/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups
PG_LABEL=scheduling.x-k8s.io/pod-group

port() { cat "$CP_WORK/dash.port"; }
base() { echo "$DASH_SCHEME://127.0.0.1:$(port)"; }

# get PATH [TOKEN]: "CODE BODY" of GET PATH (bearer TOKEN when given).
get() {
    local -a h=()
    [ -n "${2:-}" ] && h=(-H "Authorization: Bearer $2")
    curl -ksS --max-time 10 -o "$CP_WORK/body" -w '%{http_code}' "${h[@]}" "$(base)$1" &&
        printf ' %s' "$(cat "$CP_WORK/body")"
}
code() { local o; o=$(get "$@") || return 1; echo "${o%% *}"; }
# body PATH TOKEN: the JSON of a 200 answer (fails otherwise).
body() {
    local o
    o=$(get "$1" "$2") || fail "GET $1: curl failed"
    [ "${o%% *}" = 200 ] || fail "GET $1: ${o:0:400}"
    printf '%s' "${o#* }"
}

setup() {
    apply_queue_crd >/dev/null 2>&1 || true
    READER=$(sa_token default dash-reader)
    NOBODY=$(sa_token default dash-nobody)
    [ -n "$READER" ] && [ -n "$NOBODY" ] || die "no ServiceAccount tokens"
    api_post_json /apis/rbac.authorization.k8s.io/v1/clusterroles '{"apiVersion":"rbac.authorization.k8s.io/v1",
        "kind":"ClusterRole","metadata":{"name":"dash-e2e-reader"},"rules":[
        {"apiGroups":["resource.aibee.cn"],"resources":["pools"],"verbs":["get"]},
        {"apiGroups":[""],"resources":["pods"],"verbs":["get","list"]},
        {"apiGroups":["scheduling.x-k8s.io"],"resources":["podgroups"],"verbs":["get","list"]}]}' >/dev/null ||
        die "no ClusterRole"
    kc create clusterrolebinding dash-e2e-reader --clusterrole dash-e2e-reader \
        --serviceaccount default:dash-reader >/dev/null || die "no binding"
    make_pool a >/dev/null || die "pool a"
    make_pool b >/dev/null || die "pool b"
    make_queue team '{"resources":{"gpu":{"quota":2}}}' >/dev/null || die "queue"
    make_node a1 16 64Gi 4 110 pool=a >/dev/null || die "node a1"
    make_node a2 8 16Gi 0 110 pool=a unschedulable >/dev/null || die "node a2"
    make_node b1 16 64Gi 2 110 pool=b >/dev/null || die "node b1"
    free_port >"$CP_WORK/dash.port"
    local -a extra=()
    [ "$DASH_SCHEME" = http ] && extra=(--plain-http)
    start_scheduler --metrics-port "$(port)" --metrics-bind-address 127.0.0.1 "${extra[@]}"
    wait_until '[ "$(get /healthz)" = "200 ok" ]' 30 || die "/healthz: '$(get /healthz)'"
    make_pod half --cpu 100m --mem 128Mi --pool a --annotation gpu-fraction=0.5 >/dev/null || die "pod half"
    api_post_json "$PG_API" '{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup",
        "metadata":{"name":"g","labels":{"resource.aibee.cn/queue":"team"}},"spec":{"minMember":3}}' >/dev/null ||
        die "podgroup"
    make_pods g 3 --cpu 100m --gpu 2 --pool b --label "$PG_LABEL=g" --label resource.aibee.cn/queue=team ||
        die "gang pods"
    make_pod big --cpu 64 --pool a >/dev/null || die "pod big"
    wait_until '[ -n "$(pod_node half)" ]' 30 || die "half not bound"
    wait_until '[ "$(pod_condition big PodScheduled | cut -d" " -f1)" = False ]' 30 || die "big: no PodScheduled=False"
}

case_auth() {
    [ "$(code /api/v1/overview)" = 401 ] || fail "no token: not 401"
    [ "$(code /api/v1/info)" = 401 ] || fail "info without a token: not 401"
    local out
    out=$(get /api/v1/pending "$NOBODY")
    [ "${out%% *}" = 403 ] || fail "no rights: ${out:0:300}"
    jq -e '.kind == "Status" and (.message | contains("cannot list resource \"pods\""))' <<<"${out#* }" >/dev/null ||
        fail "403 body: ${out:0:300}"
    [ "$(code /api/v1/overview "$NOBODY")" = 403 ] || fail "overview without rights: not 403"
    [ "$(code /api/v1/gangs "$NOBODY")" = 403 ] || fail "gangs without rights: not 403"
    [ "$(code /api/v1/info "$NOBODY")" = 200 ] || fail "info needs authentication only"
    [ "$(body /api/v1/info "$NOBODY" | jq -r .user)" = system:serviceaccount:default:dash-nobody ] ||
        fail "info user"
}

case_overview() {
    local o
    wait_until '[ "$(body /api/v1/overview "$READER" | jq -r "[.pools[] | select(.name == \"b\")][0].waitingGangs")" = 1 ]' 30 ||
        fail "no waiting gang in b: $(body /api/v1/overview "$READER")"
    o=$(body /api/v1/overview "$READER")
    jq -e '.pools[] | select(.name == "a") | .nodes == 2 and .cordoned == 1 and .notReady == 0
        and .resources.gpu.capacity == 4 and .resources.gpu.used == 0.5 and .resources.gpu.shared == 1
        and .resources.gpu.free == 3.5 and .pendingPods == 1 and .resources.cpu.pending == 64000' <<<"$o" >/dev/null ||
        fail "pool a: $(jq -c '.pools[] | select(.name == "a")' <<<"$o")"
    jq -e '.pools[] | select(.name == "b") | .nodes == 1 and .pendingPods == 3 and .resources.gpu.pending == 6' \
        <<<"$o" >/dev/null || fail "pool b: $(jq -c '.pools[] | select(.name == "b")' <<<"$o")"
    jq -e '.totals.gpu.capacity == 6 and (.generation > 0) and (.now > 0) and .leader.isLeader' <<<"$o" >/dev/null ||
        fail "totals: $(jq -c '{totals, generation, leader}' <<<"$o")"
}

case_gangs_pending() {
    local o rec want
    o=$(body /api/v1/gangs "$READER")
    jq -e '.total == 1 and (.items[0] | .namespace == "default" and .name == "g" and .queue == "team"
        and .pool == "b" and .placed == 0 and .minMember == 3 and .members == 3)' <<<"$o" >/dev/null ||
        fail "gangs: $o"
    o=$(body "/api/v1/pending?sort=name" "$READER")
    [ "$(jq -c '[.items[] | [.kind, .name]]' <<<"$o")" = '[["pod","big"],["gang","g"]]' ] || fail "pending: $o"
    # big's reason: its decision record's hint, else its message
    rec=$(body /debug/pods/default/big "$READER")
    want=$(jq -r 'if (.hint // "") != "" then .hint else .message end' <<<"$rec")
    [ -n "$want" ] || fail "no record for big: $rec"
    [ "$(jq -r '.items[0].reason' <<<"$o")" = "$want" ] || fail "big's reason: $(jq -c '.items[0]' <<<"$o") want $want"
    jq -e '.items[0].hasDecision and .items[1].gang == "default/g"' <<<"$o" >/dev/null || fail "rows: $o"
    o=$(body "/api/v1/pending?pool=b&limit=1" "$READER")
    jq -e '.total == 1 and .limit == 1 and .items[0].name == "g"' <<<"$o" >/dev/null || fail "pool b page: $o"
    [ "$(code "/api/v1/pending?limit=9999" "$READER")" = 400 ] || fail "limit over 500: not 400"
}

case_nodes_queues() {
    local o
    o=$(body "/api/v1/nodes?pool=a" "$READER")
    jq -e '.total == 2 and (.items[0] | .name == "a1" and .gpu.whole == 4 and .gpu.used == 0.5
        and .slots[0].fractions == [{"pod": "default/half", "fraction": 0.5}]
        and (.slots[0].reservation | startswith("ai-scheduler-system/gpu-res-a1-")))
        and .items[1].cordoned' <<<"$o" >/dev/null || fail "nodes: $o"
    o=$(body /api/v1/nodes/map "$READER")
    jq -e '.fields == ["name","pool","state","gpu","gpuUsed","gpuShared","cpuPct","dra","draUsed"]
        and ([.nodes[] | select(.[0] == "a2")][0][2] == 1)' <<<"$o" >/dev/null || fail "map: $o"
    o=$(body /api/v1/queues "$READER")
    jq -e '.queues[] | select(.name == "team") | .resources.gpu.quota == 2 and .pendingPods == 3' <<<"$o" \
        >/dev/null || fail "queues: $o"
    [ "$(code "/api/v1/queues/history?queue=nope" "$READER")" = 404 ] || fail "history of an unknown queue: not 404"
}

case_clean() {
    grep -qF -- "${READER##*.}" "$CP_WORK"/scheduler.*.log && fail "a token is in the scheduler log"
    stop_scheduler_clean
}

cp_start
READER=""
NOBODY=""
setup
run_case auth case_auth
run_case overview case_overview
run_case gangs-pending case_gangs_pending
run_case nodes-queues case_nodes_queues
run_case clean case_clean
finish
