#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119,SC2120 source-path=SCRIPTDIR
# /healthz, /readyz and /metrics on 127.0.0.1, the counters against a real run,
# and no log or event storm from a thousand unschedulable pods. Serving: HTTPS
# with a self-signed certificate by default, /metrics behind a token with
# `get` on the non-resource URL unless always allowed, --tls-cert-file served
# as given, a client certificate from --client-ca-file accepted, --plain-http.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=metrics/

METRICS_PORT=""

start_with_metrics() { # start_with_metrics [extra args]: /metrics always allowed unless the args say
    METRICS_PORT=$(free_port)
    echo "$METRICS_PORT" >"$CP_WORK/metrics.port"
    start_scheduler --metrics-port "$METRICS_PORT" --metrics-bind-address 127.0.0.1 "${METRICS_OPEN[@]}" "$@"
}
mport() { cat "$CP_WORK/metrics.port"; }
# http_get PATH [CURL-ARGS] -> "CODE BODY"
http_get() {
    sched_curl -sS --max-time 5 -o "$CP_WORK/http.body" -w '%{http_code}' "${@:2}" "$(sched_url "$(mport)")$1" &&
        printf ' %s' "$(cat "$CP_WORK/http.body")"
}
http_code() { local o; o=$(http_get "$@") || return 1; echo "${o%% *}"; }
scrape() { sched_curl -fsS --max-time 5 "$(sched_url "$(mport)")/metrics"; }
# metric NAME-WITH-LABELS: the sample's value (exact series match), empty if absent
# (scraped whole first: awk leaving at the match would cut curl off, which
# pipefail reports as a failure, "curl: (23) Failed writing body")
metric() {
    local s
    s=$(scrape) || return 1
    awk -v k="$1" '$1 == k { print $2; exit }' <<<"$s"
}
num_eq() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 == b + 0 && a != "") }'; }
num_gt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 > b + 0) }'; }

case_health() {
    wait_until '[ "$(http_get /healthz)" = "200 ok" ]' 30 || fail "/healthz: '$(http_get /healthz)'"
    wait_until 'grep -q "caches synced" "$CP_WORK/scheduler.log"' 30 || fail "scheduler never synced"
    wait_until 'http_get /readyz | grep -q "^200 ok"' 30 || fail "/readyz: '$(http_get /readyz)'"
    local out
    out=$(http_get /nope) || true
    [ "${out%% *}" = 404 ] || fail "/nope: want 404, got '$out'"
    # bound to 127.0.0.1 only
    if ss -ltn 2>/dev/null | awk '{print $4}' | grep -qE "^(0\.0\.0\.0|\*|\[::\]):$(mport)\$"; then
        fail "metrics port $(mport) is bound to a wildcard address"
    fi
    scrape | grep '^# TYPE ai_scheduler_schedule_attempts_total counter' >/dev/null ||
        fail "/metrics has no TYPE line for ai_scheduler_schedule_attempts_total"
}

case_counters() {
    make_node m1 8 16Gi 0 110
    make_node m2 8 16Gi 0 110
    make_node m3 8 16Gi 0 110
    make_pods ok 20 --cpu 100m --mem 64Mi
    wait_until '[ "$(bound_in_ns)" = 20 ]' 60 || fail "only $(bound_in_ns) of 20 pods bound"
    local s n h api
    # counters are refreshed on scrape; the bind may land just before the scheduler counts it
    wait_until 'num_eq "$(metric "ai_scheduler_schedule_attempts_total{result=\"scheduled\"}")" 20' 10 ||
        fail "attempts{scheduled} = '$(metric 'ai_scheduler_schedule_attempts_total{result="scheduled"}')', want 20"
    wait_until 'num_eq "$(metric ai_scheduler_e2e_scheduling_duration_seconds_count)" 20' 10 ||
        fail "e2e latency histogram count = '$(metric ai_scheduler_e2e_scheduling_duration_seconds_count)', want 20"
    h=$(metric 'ai_scheduler_e2e_scheduling_duration_seconds_bucket{le="+Inf"}')
    num_eq "$h" 20 || fail "latency bucket le=+Inf = '$h', want 20"
    n=$(metric ai_scheduler_binds_total)
    num_eq "$n" 20 || fail "binds_total = '$n', want 20"
    s=$(scrape)
    local q
    for q in active backoff unschedulable; do
        grep -qE "^ai_scheduler_pending_pods\{pool=\"default\",queue=\"$q\"\} [0-9.e+]+$" <<<"$s" ||
            fail "no ai_scheduler_pending_pods{pool=\"default\",queue=\"$q\"}: $(grep pending_pods <<<"$s")"
    done
    api=$(metric ai_scheduler_api_requests_total)
    num_gt "$api" 0 || fail "api_requests_total = '$api'"
    log "attempts{scheduled}=20 latency count=20 api_requests=$api"

    # an impossible pod: result="unschedulable" goes up, the gauge shows it pending
    local u0 u1
    u0=$(metric 'ai_scheduler_schedule_attempts_total{result="unschedulable"}')
    u0=${u0:-0}
    make_pod impossible --cpu 100 --mem 1Mi
    wait_until 'num_gt "$(metric "ai_scheduler_schedule_attempts_total{result=\"unschedulable\"}")" '"$u0" 30 ||
        fail "attempts{unschedulable} did not go up from $u0"
    u1=$(metric 'ai_scheduler_schedule_attempts_total{result="unschedulable"}')
    wait_until 'scrape | grep -E "^ai_scheduler_pending_pods\{pool=\"default\",queue=\"(unschedulable|backoff|active)\"\} 1$"' 15 ||
        fail "pending_pods gauges do not show the impossible pod: $(scrape | grep pending_pods)"
    log "attempts{unschedulable}: $u0 -> $u1"
    num_eq "$(metric 'ai_scheduler_schedule_attempts_total{result="scheduled"}')" 20 ||
        fail "attempts{scheduled} changed to $(metric 'ai_scheduler_schedule_attempts_total{result="scheduled"}')"
}

# 1000 pods that fit nowhere for ~20 s at -v 0: the log stays short and the
# API server gets about one FailedScheduling event per pod.
case_no_storm() {
    stop_scheduler TERM || true
    cp_reset
    make_node s1 8 16Gi 0 110
    make_node s2 8 16Gi 0 110
    local N=1000
    make_pods huge $N --cpu 1000 --mem 64Mi || fail "creating $N pods failed"
    SCHED_V=0 start_with_metrics
    local logf=$CP_WORK/scheduler.log t0=$SECONDS
    wait_until 'grep -q "caches synced" "$CP_WORK/scheduler.log"' 60 || fail "scheduler never synced"
    # every pod tried at least once
    wait_until 'num_gt "$(metric "ai_scheduler_schedule_attempts_total{result=\"unschedulable\"}")" '"$((N - 1))" 60 ||
        fail "only $(metric 'ai_scheduler_schedule_attempts_total{result="unschedulable"}') unschedulable attempts"
    local rest=$((20 - (SECONDS - t0)))
    [ "$rest" -gt 0 ] && sleep "$rest"
    sched_alive || fail "scheduler died"
    local lines attempts evs evcount
    lines=$(wc -l <"$(readlink -f "$logf")")
    attempts=$(metric 'ai_scheduler_schedule_attempts_total{result="unschedulable"}')
    api_get "/api/v1/namespaces/default/events?fieldSelector=reason%3DFailedScheduling" >"$CP_WORK/events.json"
    jq '.items |= map(select(.involvedObject.name | startswith("huge-")))' "$CP_WORK/events.json" >"$CP_WORK/events.huge.json"
    evs=$(jq '.items | length' "$CP_WORK/events.huge.json")
    evcount=$(jq "[.items[] | ([.count // 1, .series.count // 1] | max)] | add // 0" "$CP_WORK/events.huge.json")
    log "after $((SECONDS - t0)) s: log $lines lines, $attempts unschedulable attempts, $evs FailedScheduling events (count sum $evcount)"
    log "most frequent log lines:"
    sed -E 's/^[IWEF][0-9]{4} [0-9:.]+ //; s/pod=[^ ]+/pod=X/g; s/[0-9]+/N/g' "$(readlink -f "$logf")" |
        sort | uniq -c | sort -rn | head -5 >&2
    [ "$lines" -le $((N + 100)) ] || fail "log storm: $lines lines for $N pending pods"
    [ "$evs" -le $((2 * N)) ] || fail "event storm: $evs FailedScheduling events for $N pods"
    [ "$evcount" -le $((2 * N)) ] || fail "event storm: FailedScheduling events count $evcount for $N pods"
    [ "$evs" -ge $((N / 2)) ] || fail "only $evs FailedScheduling events for $N pods"
    [ "$(count_bound)" = 0 ] || fail "$(count_bound) impossible pods got bound"
}

case_clean_shutdown() {
    stop_scheduler_clean
}

# The default: HTTPS with a self-signed certificate (the SHA-256 in the log is
# the one served; SANs localhost and 127.0.0.1), /metrics needs a token whose
# user may `get` the non-resource URL /metrics; probes stay open.
case_tls_default() {
    stop_scheduler_clean
    start_scheduler --metrics-port "$(mport)" --metrics-bind-address 127.0.0.1
    wait_until '[ "$(http_get /healthz)" = "200 ok" ]' 30 || fail "/healthz over https: '$(http_get /healthz)'"
    # plain HTTP to the TLS port: no answer
    if curl -sS --max-time 5 -o /dev/null "http://127.0.0.1:$(mport)/healthz" 2>/dev/null; then
        fail "plain HTTP answered on the TLS port"
    fi
    # the certificate: self-signed, SANs, fingerprint as logged
    local pem fp logged sans
    pem=$(openssl s_client -connect "127.0.0.1:$(mport)" -servername localhost </dev/null 2>/dev/null |
        openssl x509) || fail "openssl s_client got no certificate"
    fp=$(openssl x509 -noout -fingerprint -sha256 <<<"$pem" | sed 's/.*=//')
    logged=$(sed -n 's/.*self-signed serving certificate for .* (SHA-256 \([0-9A-F:]*\)).*/\1/p' "$CP_WORK/scheduler.log")
    [ -n "$fp" ] && [ "$fp" = "$logged" ] || fail "served certificate $fp, logged '$logged'"
    sans=$(openssl x509 -noout -ext subjectAltName <<<"$pem" | tail -1)
    grep -q "DNS:localhost" <<<"$sans" && grep -q "IP Address:127.0.0.1" <<<"$sans" &&
        grep -q "IP Address:0:0:0:0:0:0:0:1" <<<"$sans" || fail "SANs: $sans"
    # curl checks it against itself (the SAN 127.0.0.1) without -k
    openssl x509 <<<"$pem" >"$CP_WORK/served.crt"
    [ "$(curl -sS --max-time 5 --cacert "$CP_WORK/served.crt" "https://127.0.0.1:$(mport)/livez")" = ok ] ||
        fail "the self-signed certificate does not verify as itself for 127.0.0.1"

    # /metrics: 401 without a token, 403 without the right, 200 with it
    [ "$(http_code /metrics)" = 401 ] || fail "/metrics without a token: $(http_get /metrics)"
    local tok_none tok_reader
    tok_none=$(sa_token default nobody)
    tok_reader=$(sa_token default scraper)
    [ -n "$tok_none" ] && [ -n "$tok_reader" ] || fail "no ServiceAccount tokens"
    [ "$(http_code /metrics -H "Authorization: Bearer $tok_none")" = 403 ] ||
        fail "/metrics with a token without rights: $(http_get /metrics -H "Authorization: Bearer $tok_none")"
    grep -q 'cannot get path \\"/metrics\\"' "$CP_WORK/http.body" || fail "403 body: $(cat "$CP_WORK/http.body")"
    kc create clusterrole e2e-metrics-reader --verb=get --non-resource-url=/metrics >/dev/null || fail "clusterrole"
    kc create clusterrolebinding e2e-metrics-reader --clusterrole=e2e-metrics-reader \
        --serviceaccount=default:scraper >/dev/null || fail "clusterrolebinding"
    wait_until '[ "$(http_code /metrics -H "Authorization: Bearer $tok_reader")" = 200 ]' 20 ||
        fail "/metrics with get on /metrics: $(http_get /metrics -H "Authorization: Bearer $tok_reader")"
    grep -q '^# TYPE ai_scheduler_schedule_attempts_total counter' "$CP_WORK/http.body" || fail "not the metrics page"
    # open from the start: 503 while the informers sync, never 401; then 200
    case "$(http_code /readyz)" in 200 | 503) ;; *) fail "/readyz is not open: $(http_get /readyz)" ;; esac
    wait_until '[ "$(http_code /readyz)" = 200 ]' 30 || fail "/readyz: $(http_get /readyz)"
    # the e2e PKI's admin certificate is ignored without --client-ca-file
    [ "$(http_code /debug/whoami --cert "$CP_WORK/pki/admin.crt" --key "$CP_WORK/pki/admin.key")" = 401 ] ||
        fail "a client certificate authenticated without --client-ca-file"
}

# Given files: that pair served; a client certificate from --client-ca-file
# authenticates (user CN, groups O: the e2e admin is system:masters).
case_tls_files() {
    stop_scheduler_clean
    local d=$CP_WORK/servingpki
    mkdir -p "$d"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=sched-e2e \
        -addext "subjectAltName=DNS:sched-e2e,IP:127.0.0.1" -keyout "$d/tls.key" -out "$d/tls.crt" \
        >"$d/openssl.log" 2>&1 || fail "openssl: $(cat "$d/openssl.log")"
    # a key that is not the certificate's: a clear start error
    openssl ecparam -name prime256v1 -genkey -noout -out "$d/other.key" 2>/dev/null || fail "openssl ecparam"
    local out rc=0
    out=$(timeout 20 "$AISCHED_BIN" --kubeconfig "$SCHED_KUBECONFIG" --leader-elect=false --metrics-port "$(mport)" \
        --metrics-bind-address 127.0.0.1 --tls-cert-file "$d/tls.crt" --tls-private-key-file "$d/other.key" 2>&1) || rc=$?
    [ "$rc" = 1 ] || fail "a mismatched pair: exit $rc, want 1: $out"
    grep -q "does not match certificate $d/tls.crt" <<<"$out" || fail "a mismatched pair: $out"
    out=$(timeout 20 "$AISCHED_BIN" --kubeconfig "$SCHED_KUBECONFIG" --leader-elect=false --metrics-port "$(mport)" \
        --tls-cert-file "$d/tls.crt" 2>&1) || rc=$?
    grep -q "give both or neither" <<<"$out" || fail "a certificate without a key: $out"

    start_scheduler --metrics-port "$(mport)" --metrics-bind-address 127.0.0.1 \
        --tls-cert-file "$d/tls.crt" --tls-private-key-file "$d/tls.key" --client-ca-file "$CP_WORK/pki/ca.crt"
    wait_until '[ "$(curl -sS --max-time 5 --cacert "$d/tls.crt" "https://127.0.0.1:$(mport)/healthz")" = ok ]' 30 ||
        fail "--tls-cert-file is not what is served (curl --cacert)"
    local want got
    want=$(openssl x509 -noout -fingerprint -sha256 -in "$d/tls.crt")
    got=$(openssl s_client -connect "127.0.0.1:$(mport)" </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256)
    [ "$want" = "$got" ] || fail "served $got, want $want"
    # the admin's client certificate: whoami says who, /metrics is allowed (system:masters)
    out=$(curl -sS --max-time 5 --cacert "$d/tls.crt" --cert "$CP_WORK/pki/admin.crt" --key "$CP_WORK/pki/admin.key" \
        "https://127.0.0.1:$(mport)/debug/whoami")
    [ "$(jq -c . <<<"$out")" = '{"username":"e2e-admin","uid":"","groups":["system:masters"],"extra":{}}' ] ||
        fail "whoami with the admin certificate: $out"
    [ "$(http_code /metrics --cert "$CP_WORK/pki/admin.crt" --key "$CP_WORK/pki/admin.key")" = 200 ] ||
        fail "/metrics with the admin certificate: $(http_get /metrics --cert "$CP_WORK/pki/admin.crt" --key "$CP_WORK/pki/admin.key")"
    # no certificate, no token: 401
    [ "$(http_code /metrics)" = 401 ] || fail "/metrics without credentials: $(http_get /metrics)"
    # the CLI sends a certificate-only kubeconfig's certificate, checking the server against --certificate-authority
    out=$("$AISCHED_BIN" debug /debug/whoami --server "https://127.0.0.1:$(mport)" --certificate-authority "$d/tls.crt" \
        --kubeconfig "$ADMIN_KUBECONFIG" 2>&1) || fail "debug with the admin's certificate: $out"
    [ "$(jq -r .username <<<"$out")" = e2e-admin ] || fail "debug with the admin's certificate: $out"
}

# --plain-http: plain HTTP, said in the log.
case_plain_http() {
    stop_scheduler_clean
    start_scheduler --metrics-port "$(mport)" --metrics-bind-address 127.0.0.1 --plain-http
    wait_until '[ "$(curl -sS --max-time 5 "http://127.0.0.1:$(mport)/healthz")" = ok ]' 30 ||
        fail "--plain-http: no plain /healthz"
    grep -q "serving plain HTTP (--plain-http)" "$CP_WORK/scheduler.log" || fail "no warning for --plain-http"
    [ "$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(mport)/metrics")" = 401 ] ||
        fail "--plain-http: /metrics is open"
    stop_scheduler_clean
}

cp_start
start_with_metrics
run_case health case_health
run_case counters case_counters
run_case no-storm case_no_storm
run_case clean-shutdown case_clean_shutdown
run_case tls-default case_tls_default
run_case tls-files case_tls_files
run_case plain-http case_plain_http
finish
