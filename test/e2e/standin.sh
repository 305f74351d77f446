# shellcheck shell=bash
# test/e2e/standin.sh — the stand-in API server (standin_apiserver.py) in
# front of lib.sh's kube-apiserver v1.20, and clients that go through it.
# Sourced after lib.sh and cp_start by t_standin.sh and make demo (demo.sh).
# The v1.20 server drops the pod fields of 1.26-1.35 (spec.schedulingGates,
# native sidecars' restartPolicy, pod-level spec.resources,
# spec.resourceClaims, resize status, status.resourceClaimStatuses); the
# stand-in keeps them and plays a 1.33-1.35 kube-apiserver's rules for them
# (see its docstring).
#
#   standin_start || die "..."   # SI_URL, SI_LOG, SI_ADMIN_KC, SI_SCHED_KC
#   SCHED_KUBECONFIG=$SI_SCHED_KC start_scheduler
#   si_create NAME [pod_json options]; si patch pod NAME ...

# standin_start: standin_apiserver.py in front of $API_URL with a certificate
# of the test CA, recorded by pid (cp_stop stops it); SI_URL, and kubeconfigs
# for the admin (SI_ADMIN_KC, its token: TLS ends at the stand-in, so a
# client certificate cannot pass) and the scheduler (SI_SCHED_KC:
# $SCHED_KUBECONFIG's ServiceAccount token, the stand-in's address).
# Returns 1 (with a log line) when it did not start.
standin_start() {
    local p=$CP_WORK/pki port
    (cd "$p" && openssl req -config openssl.cnf -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout standin.key -out standin.csr \
        -subj /CN=standin-apiserver && openssl x509 -req -in standin.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
        -days 1 -out standin.crt -extfile openssl.cnf -extensions server) >/dev/null 2>&1 || { log "stand-in certificate"; return 1; }
    port=$(free_port) || { log "no free port"; return 1; }
    SI_URL=https://127.0.0.1:$port
    SI_LOG=$CP_WORK/standin.req.log
    : >"$SI_LOG"
    python3 "$E2E_DIR/standin_apiserver.py" --listen-port "$port" --upstream "$API_URL" --cert "$p/standin.crt" \
        --key "$p/standin.key" --ca "$p/ca.crt" --log "$SI_LOG" >"$CP_WORK/standin.log" 2>&1 &
    _pid_record $! standin-apiserver
    SI_ADMIN_KC=$CP_WORK/standin.admin.kubeconfig
    API_URL=$SI_URL _write_kubeconfig "$SI_ADMIN_KC" e2e-admin token "$ADMIN_TOKEN"
    SI_SCHED_KC=$CP_WORK/standin.sched.kubeconfig
    sed "s|server: .*|server: $SI_URL|" "$SCHED_KUBECONFIG" >"$SI_SCHED_KC"
    chmod 600 "$SI_SCHED_KC"
    wait_until "grep -q listening '$CP_WORK/standin.log'" 10 || { log "the stand-in did not start"; return 1; }
}

# si ARGS...: kubectl through the stand-in. si_req METHOD PATH [CURL-ARGS...]: curl.
si() { kubectl --kubeconfig "$SI_ADMIN_KC" --request-timeout=30s "$@" 2> >(grep -v 'WARNING: version difference' >&2); }
si_req() {
    local method=$1 path=$2; shift 2
    curl -sS --max-time 30 --cacert "$CP_WORK/pki/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" \
        -X "$method" "$SI_URL$path" "$@"
}
# si_send METHOD PATH CONTENT-TYPE BODY: prints the answer, then its code on a line of its own.
si_send() {
    si_req "$1" "$2" -H "Content-Type: $3" --data-binary @- -w '\n%{http_code}' <<<"$4"
}
# si_create NAME [pod_json options]: create in default through the stand-in
# (kubectl's client-side validation knows v1.20's schema only); returns 1,
# with a log line, unless 201.
si_create() {
    local out
    out=$(si_send POST /api/v1/namespaces/default/pods application/json "$(pod_json "$@")") || { log "POST $1"; return 1; }
    [ "${out##*$'\n'}" = 201 ] || { log "create $1 -> ${out##*$'\n'}: ${out%$'\n'*}"; return 1; }
}
si_pod_json() { si_req GET "/api/v1/namespaces/default/pods/$1"; }
# node_of NAME / failed_of NAME: lib.sh's pod_node and events_for NAME
# default FailedScheduling with one curl each (these run in wait loops; a
# kubectl start costs about a second here).
node_of() { api_get "/api/v1/namespaces/default/pods/$1" | jq -r '.spec.nodeName // ""'; }
failed_of() {
    api_get "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3D$1,reason%3DFailedScheduling" |
        jq -r '.items[] | "\(.reason)\t\(.message // "")"'
}
# bindings_for NAME: Binding POSTs for pod NAME the stand-in saw (any answer).
bindings_for() { grep -c " POST /api/v1/namespaces/default/pods/$1/binding " "$SI_LOG"; }
# si_condition NAME: the PodScheduled condition as "status reason message".
si_condition() {
    si_pod_json "$1" | jq -r '.status.conditions[]? | select(.type == "PodScheduled") | "\(.status) \(.reason // "") \(.message // "")"'
}

# dra_standin_start: DRA's objects served on the control plane (the
# resource.k8s.io/v1 CRDs of dra/crds.yaml, Established), the stand-in for
# the pod fields they need, and fake_claim_controller.py on it (recorded by
# pid); the file dies when one of them does not come up.
dra_standin_start() {
    kc apply -f "$E2E_DIR/dra/crds.yaml" >/dev/null || die "test/e2e/dra/crds.yaml did not apply"
    wait_until 'api_get /apis/apiextensions.k8s.io/v1/customresourcedefinitions | jq -e "[.items[] | select(.spec.group == \"resource.k8s.io\")
        | select(any(.status.conditions[]?; .type == \"Established\" and .status == \"True\"))] | length == 4"' 30 ||
        die "the DRA CRDs are not Established"
    standin_start || die "the stand-in did not start"
    FAKE_CLAIM_TOKEN=$ADMIN_TOKEN python3 "$E2E_DIR/fake_claim_controller.py" --url "$SI_URL" --ca "$CP_WORK/pki/ca.crt" \
        >"$CP_WORK/claimctl.log" 2>&1 &
    _pid_record $! fake-claim-controller
    wait_until "grep -q listening '$CP_WORK/claimctl.log'" 10 || die "the fake claim controller did not start"
}
