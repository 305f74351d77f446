#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119,SC2120 source-path=SCRIPTDIR
# The /debug endpoints are authenticated (TokenReview) and authorised
# (SubjectAccessReview) by the API server, with the reviews created by the
# scheduler's own ServiceAccount and the chart's RBAC (issue 24): no token or
# a bad one is 401, a ServiceAccount without rights 403, the chart's
# debug-reader ClusterRole bound in a namespace 200 there; /healthz stays
# open, /metrics does not (issue 25); the port is HTTPS with a self-signed
# certificate; `ai-scheduler debug` reaches the scheduler with --server (and
# --certificate-authority or --insecure-skip-tls-verify) and, without it, the
# leader through the API server's pod proxy (https: to the pod).
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=debugauth/

# The metrics port listens on the host's first non-loopback IPv4 address:
# the API server's pod proxy refuses loopback pod IPs. 127.0.0.1 when there is none.
HOST_IP=$(ip -4 -o addr show scope global 2>/dev/null | awk '{sub(/\/.*/, "", $4); print $4; exit}')
HOST_IP=${HOST_IP:-127.0.0.1}
LEASE_NS=$CHART_NS
LEASE_NAME=ai-scheduler
PROXY_POD=ai-scheduler-e2e-0 # a pod object standing for the scheduler's, its podIP $HOST_IP

port() { cat "$CP_WORK/debug.port"; }
base() { sched_url "$(port)" "$HOST_IP"; } # HTTPS, self-signed

# get PATH [TOKEN]: "CODE BODY" of GET PATH (bearer TOKEN when given);
# the WWW-Authenticate header lands in $CP_WORK/www.
get() {
    local -a h=()
    [ -n "${2:-}" ] && h=(-H "Authorization: Bearer $2")
    sched_curl -sS --max-time 10 -D "$CP_WORK/headers" -o "$CP_WORK/body" -w '%{http_code}' "${h[@]}" "$(base)$1" &&
        printf ' %s' "$(cat "$CP_WORK/body")"
    tr -d '\r' <"$CP_WORK/headers" | sed -n 's/^[Ww][Ww][Ww]-[Aa]uthenticate: //p' >"$CP_WORK/www"
}
code() { # code PATH [TOKEN]: the status only (bodies have several lines)
    local o
    o=$(get "$@") || return 1
    echo "${o%% *}"
}

setup() {
    ns_create team-a
    ns_create team-b
    VIEWER_TOKEN=$(sa_token team-a viewer)
    [ -n "$VIEWER_TOKEN" ] || die "no token for team-a/viewer"
    echo "$VIEWER_TOKEN" >"$CP_WORK/viewer.token"
    _write_kubeconfig "$CP_WORK/viewer.kubeconfig" viewer token "$VIEWER_TOKEN"
    _write_kubeconfig "$CP_WORK/cert.kubeconfig" e2e-admin cert
    # the scheduler's pod as the Lease will name it (POD_NAME, POD_NAMESPACE)
    make_pod "$PROXY_POD" --ns "$CHART_NS" --scheduler none-e2e || die "no stand-in scheduler pod"
    api_req PATCH "/api/v1/namespaces/$CHART_NS/pods/$PROXY_POD/status" \
        -H 'Content-Type: application/merge-patch+json' \
        --data-binary "{\"status\":{\"phase\":\"Running\",\"podIP\":\"$HOST_IP\",\"podIPs\":[{\"ip\":\"$HOST_IP\"}]}}" \
        >/dev/null || die "cannot set the stand-in pod's IP"
    # a pending pod in each team's namespace (no node: each has a decision record)
    make_pod p1 --ns team-a --cpu 100m || die "no pod"
    make_pod p1 --ns team-b --cpu 100m || die "no pod"
    free_port >"$CP_WORK/debug.port"
    POD_NAME=$PROXY_POD POD_NAMESPACE=$CHART_NS start_scheduler --metrics-port "$(port)" \
        --metrics-bind-address "$HOST_IP" --leader-elect=true --leader-elect-resource-namespace "$LEASE_NS" \
        --leader-elect-resource-name "$LEASE_NAME"
    wait_until '[ "$(get /healthz)" = "200 ok" ]' 30 || die "/healthz: '$(get /healthz)'"
}

case_open() {
    [ "$(get /healthz)" = "200 ok" ] || fail "/healthz is not open"
    [ "$(get /livez)" = "200 ok" ] || fail "/livez is not open"
    # /readyz is open from the start: "not ready" (503, the informers may
    # still be syncing) and never 401; then 200 once the scheduler is ready
    local r
    r=$(code /readyz)
    [ "$r" = 200 ] || [ "$r" = 503 ] || fail "/readyz is not open: $r"
    wait_until '[ "$(get /readyz)" = "200 ok" ]' 30 || fail "/readyz: '$(get /readyz)'"
    # /metrics is not (issue 25): a token whose user may get the path
    [ "$(code /metrics)" = 401 ] || fail "/metrics without a token: not 401"
    [ "$(code /metrics "$VIEWER_TOKEN")" = 403 ] || fail "/metrics without the right: not 403"
}

case_unauthenticated() {
    local out
    out=$(get /debug/whoami)
    [ "$out" = '401 {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"a bearer token is required","reason":"Unauthorized","code":401}' ] ||
        fail "no token: $out"
    [ "$(cat "$CP_WORK/www")" = 'Bearer realm="ai-scheduler"' ] || fail "WWW-Authenticate: '$(cat "$CP_WORK/www")'"
    out=$(get /debug/whoami not-a-token)
    [ "${out%% *}" = 401 ] && grep -q '"message":"invalid bearer token"' <<<"$out" || fail "bad token: $out"
    # a token the API server would accept, tampered with: still 401
    [ "$(code /debug/whoami "${VIEWER_TOKEN}x")" = 401 ] || fail "tampered token not 401"
    # no path probing without a token: 401 first, 404 only once authenticated
    [ "$(code /debug/nothing-here)" = 401 ] || fail "unknown /debug path without a token: not 401"
    [ "$(code /debug/pods/team-a/p1)" = 401 ] || fail "/debug/pods without a token: not 401"
    [ "$(code /debug/nothing-here "$VIEWER_TOKEN")" = 404 ] || fail "unknown /debug path with a token: not 404"
}

case_whoami() {
    local out
    out=$(get /debug/whoami "$VIEWER_TOKEN")
    [ "${out%% *}" = 200 ] || fail "whoami: $out"
    [ "$(jq -r .username <<<"${out#* }")" = system:serviceaccount:team-a:viewer ] || fail "whoami names: $out"
    jq -e '.groups | index("system:serviceaccounts:team-a")' <<<"${out#* }" >/dev/null || fail "whoami groups: $out"
}

case_authorise() {
    local out
    # no right: 403 naming what was asked
    out=$(get /debug/pods/team-a/p1 "$VIEWER_TOKEN")
    [ "$out" = '403 {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"user \"system:serviceaccount:team-a:viewer\" cannot get resource \"pods\" in API group \"\" in the namespace \"team-a\"","reason":"Forbidden","code":403}' ] ||
        fail "no rights: $out"
    # the chart's debug-reader ClusterRole bound in team-a: 200 there (after
    # the cached denial, 10 s, runs out), still 403 in team-b
    kc create rolebinding debug-reader -n team-a --clusterrole ai-scheduler-debug-reader \
        --serviceaccount team-a:viewer >/dev/null || fail "no rolebinding"
    wait_until '[ "$(code /debug/pods/team-a/p1 "$VIEWER_TOKEN")" = 200 ]' 30 ||
        fail "with the debug-reader binding: $(get /debug/pods/team-a/p1 "$VIEWER_TOKEN")"
    out=$(get /debug/pods/team-a/p1 "$VIEWER_TOKEN")
    jq -e '.pod' <<<"${out#* }" >/dev/null || fail "no decision record: $out"
    [ "$(code /debug/pods/team-b/p1 "$VIEWER_TOKEN")" = 403 ] || fail "team-b without a binding: not 403"
    [ "$(code /debug/podgroups/team-b/g "$VIEWER_TOKEN")" = 403 ] || fail "podgroups in team-b: not 403"
}

case_cli_server() {
    local out rc=0
    # the scheduler's certificate is self-signed: refused, saying what to pass
    "$AISCHED_BIN" debug /debug/whoami --server "$(base)" --kubeconfig "$CP_WORK/viewer.kubeconfig" \
        >/dev/null 2>"$CP_WORK/cli.err" || rc=$?
    [ "$rc" = 1 ] && grep -q -- "pass --certificate-authority FILE .* or --insecure-skip-tls-verify" "$CP_WORK/cli.err" ||
        fail "self-signed without flags: exit $rc, $(cat "$CP_WORK/cli.err")"
    # its own certificate as the authority, or no check
    openssl s_client -connect "$HOST_IP:$(port)" </dev/null 2>/dev/null | openssl x509 >"$CP_WORK/sched.crt" ||
        fail "no certificate from the scheduler"
    out=$("$AISCHED_BIN" debug /debug/whoami --server "$(base)" --certificate-authority "$CP_WORK/sched.crt" \
        --kubeconfig "$CP_WORK/viewer.kubeconfig" 2>"$CP_WORK/cli.err") ||
        fail "debug --server --certificate-authority: $(cat "$CP_WORK/cli.err")"
    [ "$(jq -r .username <<<"$out")" = system:serviceaccount:team-a:viewer ] || fail "debug --server: $out"
    out=$("$AISCHED_BIN" debug /debug/whoami --server "$(base)" --insecure-skip-tls-verify \
        --kubeconfig "$CP_WORK/viewer.kubeconfig" 2>"$CP_WORK/cli.err") ||
        fail "debug --server --insecure-skip-tls-verify: $(cat "$CP_WORK/cli.err")"
    [ "$(jq -r .username <<<"$out")" = system:serviceaccount:team-a:viewer ] || fail "debug --server: $out"
    rc=0
    "$AISCHED_BIN" debug /debug/pods/team-b/p1 --server "$(base)" --insecure-skip-tls-verify --kubeconfig "$CP_WORK/viewer.kubeconfig" \
        >/dev/null 2>"$CP_WORK/cli.err" || rc=$?
    [ "$rc" = 1 ] || fail "403 through the CLI: exit $rc"
    grep -qF 'HTTP 403: user "system:serviceaccount:team-a:viewer" cannot get resource "pods" in API group "" in the namespace "team-b"' \
        "$CP_WORK/cli.err" || fail "403 through the CLI says: $(cat "$CP_WORK/cli.err")"
    rc=0
    "$AISCHED_BIN" debug /debug/whoami --server "$(base)" --insecure-skip-tls-verify --kubeconfig "$CP_WORK/cert.kubeconfig" \
        >/dev/null 2>"$CP_WORK/cli.err" || rc=$?
    [ "$rc" = 1 ] || fail "a certificate-only kubeconfig: exit $rc"
    # sent over https, refused: this scheduler runs without --client-ca-file (t_metrics has one that does)
    grep -q "HTTP 401: .*the kubeconfig's client certificate was sent: the scheduler takes one only with --client-ca-file" \
        "$CP_WORK/cli.err" || fail "a certificate-only kubeconfig says: $(cat "$CP_WORK/cli.err")"
}

case_cli_leader_proxy() {
    [ "$HOST_IP" != 127.0.0.1 ] || { log "no non-loopback address: the pod proxy cannot reach the scheduler"; return 0; }
    wait_until '[ "$(kc get lease "$LEASE_NAME" -n "$LEASE_NS" -o jsonpath="{.spec.holderIdentity}")" = "$CHART_NS/${PROXY_POD}_$(sched_pid)" ]' 30 ||
        fail "Lease holder: '$(kc get lease "$LEASE_NAME" -n "$LEASE_NS" -o jsonpath='{.spec.holderIdentity}')'"
    local out rc=0
    # without get on pods/proxy in the scheduler's namespace the API server refuses
    "$AISCHED_BIN" debug /debug/whoami --kubeconfig "$CP_WORK/viewer.kubeconfig" --lease-namespace "$LEASE_NS" \
        --scheduler-port "$(port)" >/dev/null 2>"$CP_WORK/cli.err" || rc=$?
    [ "$rc" = 1 ] && grep -qi "forbidden" "$CP_WORK/cli.err" || fail "proxy without rights: exit $rc, $(cat "$CP_WORK/cli.err")"
    kc create rolebinding viewer-debug-proxy -n "$CHART_NS" --role ai-scheduler-debug-proxy \
        --serviceaccount team-a:viewer >/dev/null || fail "no rolebinding"
    wait_until '"$AISCHED_BIN" debug /debug/whoami --kubeconfig "$CP_WORK/viewer.kubeconfig" --lease-namespace "$LEASE_NS" --scheduler-port "$(port)" >"$CP_WORK/cli.out" 2>"$CP_WORK/cli.err"' 20 ||
        fail "debug via the leader: $(cat "$CP_WORK/cli.err")"
    [ "$(jq -r .username "$CP_WORK/cli.out")" = system:serviceaccount:team-a:viewer ] ||
        fail "via the proxy the scheduler saw: $(cat "$CP_WORK/cli.out")"
    # the user is still authorised at the scheduler: team-b stays closed
    rc=0
    "$AISCHED_BIN" debug /debug/pods/team-b/p1 --kubeconfig "$CP_WORK/viewer.kubeconfig" --lease-namespace "$LEASE_NS" \
        --scheduler-port "$(port)" >/dev/null 2>"$CP_WORK/cli.err" || rc=$?
    [ "$rc" = 1 ] && grep -q 'HTTP 403: user "system:serviceaccount:team-a:viewer" cannot get' "$CP_WORK/cli.err" ||
        fail "team-b through the proxy: exit $rc, $(cat "$CP_WORK/cli.err")"
    out=$("$AISCHED_BIN" debug /debug/pods/team-a/p1 --kubeconfig "$CP_WORK/viewer.kubeconfig" \
        --lease-namespace "$LEASE_NS" --scheduler-port "$(port)" 2>"$CP_WORK/cli.err") ||
        fail "team-a through the proxy: $(cat "$CP_WORK/cli.err")"
    jq -e .pod <<<"$out" >/dev/null || fail "team-a through the proxy: $out"
}

case_metrics() {
    # the reviews above went out and none failed
    local m
    m=$(sched_curl -fsS --max-time 5 -H "Authorization: Bearer $ADMIN_TOKEN" "$(base)/metrics")
    grep -qE '^ai_scheduler_http_auth_reviews_total\{kind="token"\} [1-9]' <<<"$m" || fail "no token reviews counted"
    grep -qE '^ai_scheduler_http_auth_reviews_total\{kind="access"\} [1-9]' <<<"$m" || fail "no access reviews counted"
    grep -qx 'ai_scheduler_http_auth_review_errors_total 0' <<<"$m" ||
        fail "review errors: $(grep review_errors <<<"$m")"
}

case_clean() {
    # the reviews were made with the chart's RBAC (sched_log_clean fails on
    # any "forbidden" in the scheduler's log) and no token reached the log
    grep -qF -- "${VIEWER_TOKEN##*.}" "$CP_WORK"/scheduler.*.log && fail "the viewer's token is in the scheduler log"
    stop_scheduler_clean
}

cp_start
VIEWER_TOKEN=""
setup
run_case open case_open
run_case unauthenticated case_unauthenticated
run_case whoami case_whoami
run_case authorise case_authorise
run_case cli-server case_cli_server
run_case cli-leader-proxy case_cli_leader_proxy
run_case metrics case_metrics
run_case clean case_clean
finish
