# shellcheck shell=bash disable=SC2016
# test/e2e/lib.sh — a throw-away Kubernetes control plane (etcd + kube-apiserver
# v1.20) on 127.0.0.1 for the ai-scheduler end-to-end tests, plus helpers.
#
# Source it, then:
#   cp_start                 # temp work dir, certs, etcd, apiserver, kubeconfigs
#   make_node n1 4 8Gi 0 110 zone=a
#   make_pod p1 --cpu 500m --mem 256Mi
#   start_scheduler          # $AISCHED_BIN (default bin/ai-scheduler)
#   wait_until 'pod_node p1 | grep -q .' 30
#   cp_stop                  # also runs on EXIT (trap set by cp_start)
#
# Every process started here is recorded by pid in $CP_WORK/pids and stopped
# by pid only (TERM, then KILL). Two runs never share ports or directories.
#
# Environment:
#   AISCHED_BIN    scheduler binary (default: $REPO/bin/ai-scheduler)
#   AISCHED_WRAP   command prefix for the scheduler, e.g. "valgrind --error-exitcode=1"
#   K8S_BIN        dir with kube-apiserver (default ~/.cache/ai-scheduler/bin)
#   ETCD_BIN       etcd binary (default: etcd on PATH, else /usr/bin/etcd)
#   E2E_KEEP=1     keep the work dir even when everything passed
#   E2E_RESULTS    file that run_case appends "PASS name"/"FAIL name" lines to

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$E2E_DIR/../.." && pwd)
# Where cp_start makes its work dirs; the benchmarks put them under their own.
E2E_WORK_ROOT=${E2E_WORK_ROOT:-$E2E_DIR/.work}
AISCHED_BIN=${AISCHED_BIN:-$REPO/bin/ai-scheduler}
K8S_BIN=${K8S_BIN:-${AI_SCHED_CACHE:-$HOME/.cache/ai-scheduler}/bin}
ETCD_BIN=${ETCD_BIN:-$(command -v etcd || echo /usr/bin/etcd)}
SCHED_NAME=${SCHED_NAME:-ai-scheduler}
CP_WORK=""
CP_FAILED=0

log()  { printf '[e2e %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die()  { log "FATAL: $*"; exit 1; }
# fail: abort the current case (cases run in a subshell, see run_case).
fail() { log "FAIL: $*"; exit 1; }

# ---------------------------------------------------------------------------
# processes

_pid_record() { echo "$1 $2" >>"$CP_WORK/pids"; }   # pid name

# _kill_pid PID: TERM, wait up to ${2:-5}s, then KILL. Only this pid.
_kill_pid() {
    local pid=$1 grace=${2:-5} i
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < grace * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        # a zombie child of ours counts as gone
        [ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" = Z ] && return 0
        sleep 0.1
    done
    log "pid $pid did not stop on TERM in ${grace}s; KILL"
    kill -KILL "$pid" 2>/dev/null || true
}

# free_port: a port below the ephemeral range that nothing listens on (bash
# only: a python3 start costs ~0.5 s, and cp_start needs three). A port taken
# between here and its use fails that start, which cp_start retries.
free_port() {
    local lo=32768 hi=60999 p i
    read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    # Below the ephemeral range when there is room: a port in it can become
    # an outgoing connection's local end between this check and the bind.
    if [ "$lo" -gt 12000 ]; then
        hi=$((lo - 1)) lo=10000
    fi
    for ((i = 0; i < 100; i++)); do
        p=$((lo + (RANDOM * 32768 + RANDOM) % (hi - lo + 1)))
        # connection refused: nobody listens there
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    return 1
}

# wait_until CMD TIMEOUT_SECONDS [INTERVAL]: eval CMD until it succeeds.
# Gives up early when the scheduler was started and has died since.
wait_until() {
    local cmd=$1 timeout=${2:-30} interval=${3:-0.5} end
    end=$((SECONDS + timeout))
    while true; do
        if eval "$cmd" >/dev/null 2>&1; then return 0; fi
        if [ $SECONDS -ge $end ]; then
            log "timed out after ${timeout}s waiting for: $cmd"
            return 1
        fi
        if [ -n "$CP_WORK" ] && [ -s "$CP_WORK/sched.pid" ] && ! sched_alive; then
            # The binary's exit and the wrapper's write of sched.rc are two
            # steps: let the wrapper finish, then look once more, since the
            # condition may be the exit itself (a refused start).
            local i
            for ((i = 0; i < 20; i++)); do [ -s "$CP_WORK/sched.rc" ] && break; sleep 0.1; done
            if eval "$cmd" >/dev/null 2>&1; then return 0; fi
            log "scheduler is not running (while waiting for: $cmd)"
            sched_log_tail
            return 1
        fi
        sleep "$interval"
    done
}

# ---------------------------------------------------------------------------
# control plane

# _gen_certs: CA, server and admin certificates, the ServiceAccount key and the
# admin token in $CP_WORK/pki. test/e2e/run.sh sets E2E_SHARED (a directory of
# its own run): the first control plane of the run generates them there, the
# others copy them (RSA key generation is ~2 s of each start). Each control
# plane still has its own etcd, API server and ServiceAccount tokens.
_gen_certs() {
    local d=$CP_WORK/pki
    if [ -n "${E2E_SHARED:-}" ] && [ -s "$E2E_SHARED/pki/tokens.csv" ]; then
        cp -a "$E2E_SHARED/pki" "$d" || die "could not copy $E2E_SHARED/pki"
        ADMIN_TOKEN=$(cut -d, -f1 "$d/tokens.csv")
        return 0
    fi
    mkdir -p "$d"
    cat >"$d/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[server]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,IP:10.0.0.1
[client]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
EOF
    (
        cd "$d" || exit 1
        openssl req -config openssl.cnf -x509 -newkey rsa:2048 -nodes -days 3 \
            -keyout ca.key -out ca.crt -subj "/CN=ai-scheduler-e2e-ca" -extensions ca
        openssl req -config openssl.cnf -new -newkey rsa:2048 -nodes \
            -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver"
        openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
            -days 3 -out apiserver.crt -extfile openssl.cnf -extensions server
        openssl req -config openssl.cnf -new -newkey rsa:2048 -nodes \
            -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=e2e-admin"
        openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
            -days 3 -out admin.crt -extfile openssl.cnf -extensions client
        openssl genrsa -out sa.key 2048
        openssl rsa -in sa.key -pubout -out sa.pub
    ) >"$CP_WORK/openssl.log" 2>&1 || { cat "$CP_WORK/openssl.log" >&2; die "openssl failed"; }
    ADMIN_TOKEN=$(openssl rand -hex 16)
    # token,user,uid,"groups". The scheduler has no static token: it runs as
    # the chart's ServiceAccount (see _chart_rbac_apply).
    cat >"$d/tokens.csv" <<EOF
$ADMIN_TOKEN,e2e-admin-token,uid-admin,"system:masters"
EOF
    chmod 600 "$d"/*.key "$d/tokens.csv"
    if [ -n "${E2E_SHARED:-}" ] && [ -d "$E2E_SHARED" ]; then
        # two first starts may race (run.sh prepares the next control plane meanwhile): one wins
        local tmp=$E2E_SHARED/pki.tmp.$BASHPID
        if cp -a "$d" "$tmp"; then mv -T "$tmp" "$E2E_SHARED/pki" 2>/dev/null || rm -rf "$tmp"; fi
    fi
}

# write_kubeconfig FILE USER-NAME cert | FILE USER-NAME token TOKEN
_write_kubeconfig() {
    local file=$1 user=$2 kind=$3 token=${4:-} ca auth
    ca=$(base64 -w0 <"$CP_WORK/pki/ca.crt")
    if [ "$kind" = cert ]; then
        auth="    client-certificate-data: $(base64 -w0 <"$CP_WORK/pki/admin.crt")
    client-key-data: $(base64 -w0 <"$CP_WORK/pki/admin.key")"
    else
        auth="    token: $token"
    fi
    cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: $API_URL
    certificate-authority-data: $ca
users:
- name: $user
  user:
$auth
contexts:
- name: e2e
  context:
    cluster: e2e
    user: $user
    namespace: default
current-context: e2e
EOF
    chmod 600 "$file"
}

# Least privilege: the scheduler and the dispatch controller run with the
# Helm chart's own RBAC (ClusterRoles, Roles, bindings, ServiceAccounts in
# $CHART_NS, release "ai-scheduler", dispatch enabled), rendered by helm, and
# authenticate with their ServiceAccounts' tokens (TokenRequest). A permission
# the chart lacks fails the test that needs it (sched_log_clean also fails on
# any "forbidden" in a scheduler log).
CHART_NS=ai-scheduler-system
SCHED_SA=ai-scheduler
DISPATCH_SA=ai-scheduler-dispatch

# _chart_rbac_render: the chart's RBAC objects as one JSON List in
# $CP_WORK/chart-rbac.json (helm comes from test/e2e/get-helm.sh).
_chart_rbac_render() {
    local out=$CP_WORK/chart-rbac.json helm
    [ -s "$out" ] && return 0
    # rendered once per test/e2e/run.sh (the chart does not change meanwhile)
    if [ -n "${E2E_SHARED:-}" ] && [ -s "$E2E_SHARED/chart-rbac.json" ]; then
        cp "$E2E_SHARED/chart-rbac.json" "$out" && return 0
    fi
    helm=$(bash "$E2E_DIR/get-helm.sh") || die "no helm: the e2e suite runs the scheduler with the chart's RBAC"
    "$helm" template ai-scheduler "$REPO/charts/ai-scheduler" --namespace "$CHART_NS" \
        --set dispatch.enabled=true >"$CP_WORK/chart.yaml" || die "helm template failed"
    python3 - "$CP_WORK/chart.yaml" >"$out" <<'PY' || die "could not read the chart's RBAC"
import json, sys, yaml
keep = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
items = [d for d in yaml.safe_load_all(open(sys.argv[1])) if isinstance(d, dict) and d.get("kind") in keep]
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
PY
    if [ -n "${E2E_SHARED:-}" ] && [ -d "$E2E_SHARED" ]; then
        if cp "$out" "$E2E_SHARED/chart-rbac.json.$BASHPID"; then
            mv -f "$E2E_SHARED/chart-rbac.json.$BASHPID" "$E2E_SHARED/chart-rbac.json"
        fi
    fi
}

# _chart_rbac_apply: the chart's RBAC on the current API server
# ($ADMIN_KUBECONFIG), then each ServiceAccount's token: prints
# "SCHED-TOKEN DISPATCH-TOKEN". Tokens are bound to the server's copy of the
# account, so each control plane (members too) gets its own.
_chart_rbac_apply() {
    _chart_rbac_render
    api_get "/api/v1/namespaces/$CHART_NS" | jq -e .metadata.name >/dev/null 2>&1 ||
        kc create namespace "$CHART_NS" >/dev/null || return 1
    kc apply -f "$CP_WORK/chart-rbac.json" >/dev/null || return 1
    local sa tok out="" kcfg=$ADMIN_KUBECONFIG url ca crt key
    # the server of $ADMIN_KUBECONFIG (a member's too) with the run's admin certificate
    url=$(sed -n 's/^ *server: //p' "$kcfg" | head -1)
    ca=$CP_WORK/pki/ca.crt crt=$CP_WORK/pki/admin.crt key=$CP_WORK/pki/admin.key
    for sa in "$SCHED_SA" "$DISPATCH_SA"; do
        tok=$(curl -sS --max-time 30 --cacert "$ca" --cert "$crt" --key "$key" -X POST \
            -H 'Content-Type: application/json' --data-binary \
            '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":172800}}' \
            "$url/api/v1/namespaces/$CHART_NS/serviceaccounts/$sa/token" |
            jq -r '.status.token // empty') || return 1
        [ -n "$tok" ] || { log "no token for ServiceAccount $CHART_NS/$sa"; return 1; }
        out="$out $tok"
    done
    echo "$out"
}

_require_bins() {
    [ -x "$K8S_BIN/kube-apiserver" ] || die "no $K8S_BIN/kube-apiserver (run: bash test/e2e/build-k8s.sh)"
    [ -x "$ETCD_BIN" ] || die "no etcd at $ETCD_BIN (run: bash test/deps.sh e2e)"
    local t
    for t in kubectl openssl jq curl python3 base64; do
        command -v "$t" >/dev/null || die "missing tool: $t (run: bash test/deps.sh e2e)"
    done
}

# cp_start: fresh control plane in a new work dir; sets CP_WORK, API_URL,
# ADMIN_KUBECONFIG, SCHED_KUBECONFIG, ADMIN_TOKEN, SCHED_TOKEN. Installs an
# EXIT trap that calls cp_stop.
#
# test/e2e/run.sh starts the next file's control plane while a file runs
# (cp_prepare, at a lower CPU priority): when E2E_SPARE names it, cp_start
# takes it over (its etcd and kube-apiserver are as fresh as its own would be:
# nothing but cp_prepare has used them) instead of waiting ~10 s for a new one.
# Not when this file sets APISERVER_EXTRA_ARGS or E2E_ETCD_FSYNC=1 (the spare
# has neither), nor for a second cp_start in one file.
cp_start() {
    _require_bins
    mkdir -p "$E2E_WORK_ROOT"
    if _cp_adopt_spare; then
        trap 'cp_stop' EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
        export KUBECONFIG=$ADMIN_KUBECONFIG
        log "control plane up: $API_URL (etcd $ETCD_PORT; started ahead by run.sh)"
        return 0
    fi
    CP_WORK=$(mktemp -d "$E2E_WORK_ROOT/cp.XXXXXX")
    : >"$CP_WORK/pids"
    trap 'cp_stop' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    log "control plane work dir: $CP_WORK"
    _cp_boot || die "control plane did not start"
    log "control plane up: $API_URL (etcd $ETCD_PORT)"
}

# cp_prepare DIR: what cp_start does, in DIR (made by the caller), for a later
# cp_start to take over; then writes DIR/cp.env and DIR/ready and returns,
# leaving etcd and kube-apiserver running (their pids in DIR/pids). On failure
# stops what it started and writes DIR/failed. Used by test/e2e/run.sh only.
cp_prepare() {
    CP_WORK=$1
    : >"$CP_WORK/pids"
    if (_cp_boot) >"$CP_WORK/prepare.log" 2>&1 && [ -s "$CP_WORK/cp.env" ]; then
        touch "$CP_WORK/ready"
    else
        _stop_pids
        touch "$CP_WORK/failed"
    fi
    CP_WORK=""
}

# _cp_adopt_spare: take over $E2E_SPARE (see cp_start); false when there is
# none to take, it failed, or it is not what this file would start.
_cp_adopt_spare() {
    local d=${E2E_SPARE:-} i pid
    [ -n "$d" ] && [ -d "$d" ] || return 1
    [ -z "${APISERVER_EXTRA_ARGS:-}" ] && [ "${E2E_ETCD_FSYNC:-0}" != 1 ] || return 1
    mkdir "$d/taken" 2>/dev/null || return 1     # one cp_start per spare
    for ((i = 0; i < 1200; i++)); do             # still starting: up to 120 s
        [ -e "$d/ready" ] || [ -e "$d/failed" ] && break
        sleep 0.1
    done
    [ "$i" -ge 10 ] && log "waited $((i / 10)) s for the control plane started ahead"
    if [ ! -e "$d/ready" ]; then
        log "the control plane started ahead ($d) is not up: starting one"
        return 1
    fi
    CP_WORK=$d
    # shellcheck disable=SC1091
    source "$CP_WORK/cp.env"
    # started at nice 10 beside the previous file: back to the priority of
    # everything else (each thread; root only, else it stays at 10)
    local -a spare_tids
    for pid in "$ETCD_PID" "$API_PID"; do
        spare_tids=("/proc/$pid/task/"*)
        spare_tids=("${spare_tids[@]##*/}")
        [ "${spare_tids[0]}" = "*" ] || renice -n 0 -p "${spare_tids[@]}" >/dev/null 2>&1 || true
    done
    log "control plane work dir: $CP_WORK"
    return 0
}

# _cp_boot: certificates, etcd, kube-apiserver, kubeconfigs, the chart's RBAC,
# the CRDs in $CP_WORK; the variables cp_start sets, also in $CP_WORK/cp.env.
_cp_boot() {
    _gen_certs
    local attempt
    for attempt in 1 2 3; do
        if _start_etcd && _start_apiserver; then break; fi
        log "control plane start attempt $attempt failed; retrying with new ports"
        _stop_pids
        : >"$CP_WORK/pids"
        [ $attempt = 3 ] && return 1
    done
    ADMIN_KUBECONFIG=$CP_WORK/admin.kubeconfig
    SCHED_KUBECONFIG=$CP_WORK/scheduler.kubeconfig
    DISPATCH_KUBECONFIG=$CP_WORK/dispatch.kubeconfig
    _write_kubeconfig "$ADMIN_KUBECONFIG" e2e-admin cert
    export KUBECONFIG=$ADMIN_KUBECONFIG
    wait_until 'api_get /api/v1/namespaces/default | jq -e ".metadata.name == \"default\""' 60 0.2 ||
        { log "namespace default never appeared"; return 1; }
    local toks
    toks=$(_chart_rbac_apply) || { log "the chart's RBAC did not apply"; return 1; }
    read -r SCHED_TOKEN DISPATCH_TOKEN <<<"$toks"
    _write_kubeconfig "$SCHED_KUBECONFIG" "system:serviceaccount:$CHART_NS:$SCHED_SA" token "$SCHED_TOKEN"
    _write_kubeconfig "$DISPATCH_KUBECONFIG" "system:serviceaccount:$CHART_NS:$DISPATCH_SA" token "$DISPATCH_TOKEN"
    _apply_crds_fresh || { log "the CRDs of pools/ did not apply"; return 1; }
    local v
    for v in API_URL API_PORT API_PID ETCD_PORT ETCD_PEER_PORT ETCD_PID ADMIN_TOKEN SCHED_TOKEN DISPATCH_TOKEN \
        ADMIN_KUBECONFIG SCHED_KUBECONFIG DISPATCH_KUBECONFIG; do
        printf '%s=%q\n' "$v" "${!v}"
    done >"$CP_WORK/cp.env"
}

# _start_etcd [DIR]: etcd with its data and log in DIR (default $CP_WORK).
# No fsync unless E2E_ETCD_FSYNC=1 (a real cluster's durability, which makes
# every write wait for the disk: the benchmarks' BENCH_ETCD_FSYNC).
_start_etcd() {
    local d=${1:-$CP_WORK} nofsync=--unsafe-no-fsync
    [ "${E2E_ETCD_FSYNC:-0}" = 1 ] && nofsync=""
    ETCD_PORT=$(free_port); ETCD_PEER_PORT=$(free_port)
    rm -rf "$d/etcd"
    "$ETCD_BIN" --name e2e --data-dir "$d/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster "e2e=http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster-state new ${nofsync:+"$nofsync"} \
        >"$d/etcd.log" 2>&1 &
    ETCD_PID=$!
    _pid_record "$ETCD_PID" etcd
    if ! wait_until "curl -fsS http://127.0.0.1:$ETCD_PORT/health | grep -q true" 30 0.2; then
        tail -20 "$d/etcd.log" >&2
        return 1
    fi
}

# _start_apiserver [DIR [PORT]]: kube-apiserver on $ETCD_PORT with its log in
# DIR (default $CP_WORK), on PORT (default a free one); the certificates and
# tokens are always $CP_WORK/pki's, so one kubeconfig user works everywhere.
_start_apiserver() {
    local p=$CP_WORK/pki d=${1:-$CP_WORK}
    API_PORT=${2:-$(free_port)}
    API_URL=https://127.0.0.1:$API_PORT
    mkdir -p "$d/apiserver-certs"
    "$K8S_BIN/kube-apiserver" \
        --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
        --secure-port "$API_PORT" --insecure-port 0 \
        --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
        --cert-dir "$d/apiserver-certs" \
        --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" \
        --client-ca-file "$p/ca.crt" --token-auth-file "$p/tokens.csv" \
        --authorization-mode RBAC \
        --service-account-key-file "$p/sa.pub" \
        --service-account-signing-key-file "$p/sa.key" \
        --service-account-issuer https://kubernetes.default.svc.cluster.local \
        --api-audiences https://kubernetes.default.svc.cluster.local \
        --service-cluster-ip-range 10.0.0.0/24 \
        --disable-admission-plugins ServiceAccount,TaintNodesByCondition \
        --allow-privileged=true --profiling=false ${APISERVER_EXTRA_ARGS:-} \
        >>"$d/apiserver.log" 2>&1 &
    API_PID=$!
    _pid_record "$API_PID" kube-apiserver
    if ! wait_until "kill -0 $API_PID && api_get /readyz | grep -qx ok" 90 0.2; then
        tail -30 "$d/apiserver.log" >&2
        return 1
    fi
}

_stop_pids() {
    [ -n "$CP_WORK" ] && [ -f "$CP_WORK/pids" ] || return 0
    local pid name
    # newest first: scheduler, apiserver, then etcd
    while read -r pid name; do
        [ -n "$pid" ] || continue
        _kill_pid "$pid" 5
        wait "$pid" 2>/dev/null || true
        : "$name"
    done < <(tac "$CP_WORK/pids")
}

# cp_stop: stop everything started in this work dir (idempotent).
cp_stop() {
    local rc=$?
    [ -n "$CP_WORK" ] || return "$rc"
    _stop_pids
    : >"$CP_WORK/pids"
    if [ "$CP_FAILED" = 0 ] && [ "$rc" = 0 ] && [ "${E2E_KEEP:-0}" != 1 ]; then
        rm -rf "$CP_WORK"
    else
        log "work dir kept: $CP_WORK"
    fi
    CP_WORK=""
    trap - EXIT
    return "$rc"
}

# ---------------------------------------------------------------------------
# API access

kc() { kubectl --kubeconfig "$ADMIN_KUBECONFIG" --request-timeout=30s "$@" 2> >(grep -v 'WARNING: version difference' >&2); }
# sa_token NS NAME: a token for ServiceAccount NS/NAME (created first), by a
# TokenRequest valid an hour (the debug, metrics and dashboard tests' users).
sa_token() {
    kc create serviceaccount "$2" -n "$1" >/dev/null 2>&1 || true
    api_req POST "/api/v1/namespaces/$1/serviceaccounts/$2/token" -H 'Content-Type: application/json' \
        --data-binary '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":3600}}' |
        jq -r '.status.token // empty'
}

# api_get PATH / api_req METHOD PATH [CURL-ARGS...]: admin client cert.
api_req() {
    local method=$1 path=$2; shift 2
    curl -sS --max-time 30 --cacert "$CP_WORK/pki/ca.crt" \
        --cert "$CP_WORK/pki/admin.crt" --key "$CP_WORK/pki/admin.key" \
        -X "$method" "$API_URL$path" "$@"
}
api_get() { api_req GET "$1"; }

# api_post_json PATH JSON: POST, fail unless 2xx.
api_post_json() {
    local out code
    out=$(api_req POST "$1" -H 'Content-Type: application/json' --data-binary @- -w '\n%{http_code}' <<<"$2") || return 1
    code=${out##*$'\n'}
    case $code in 2??) return 0 ;; esac
    log "POST $1 -> $code: ${out%$'\n'*}"
    return 1
}

apply_pool_crd() {
    kc apply -f "$REPO/pools/crd.yaml" >/dev/null || return 1
    wait_until 'kc get crd -o json | jq -e ".items[] | select(.spec.group==\"resource.aibee.cn\" and .spec.names.kind==\"Pool\") | .status.conditions[] | select(.type==\"Established\" and .status==\"True\")"' 30
}

# _apply_crds_fresh: what apply_pool_crd, apply_podgroup_crd and
# apply_queue_crd do, on the fresh control plane of cp_start (which has no
# CRD yet), with two kubectl runs and one wait for the three (~5 s less).
_apply_crds_fresh() {
    local f crd_files=() crd_names=()
    [ -f "$REPO/pools/crd.yaml" ] && { kc apply -f "$REPO/pools/crd.yaml" >/dev/null || return 1; crd_names+=(pools.resource.aibee.cn); }
    for f in podgroup-crd.yaml:podgroups.scheduling.x-k8s.io queue-crd.yaml:queues.resource.aibee.cn; do
        [ -f "$REPO/pools/${f%%:*}" ] || continue
        crd_files+=(-f "$REPO/pools/${f%%:*}")
        crd_names+=("${f#*:}")
    done
    if [ ${#crd_files[@]} -gt 0 ]; then kc create "${crd_files[@]}" >/dev/null || return 1; fi
    [ ${#crd_names[@]} -gt 0 ] || return 0
    _CRDS_WANT=$(printf '%s\n' "${crd_names[@]}" | jq -R . | jq -sc .)
    wait_until 'api_get /apis/apiextensions.k8s.io/v1/customresourcedefinitions | jq -e --argjson w "$_CRDS_WANT" \
        "[.items[] | select(.metadata.name as \$n | \$w | index(\$n)) | select(any(.status.conditions[]?; .type == \"Established\" and .status == \"True\"))] | length == (\$w | length)"' 30 0.2
}

# apply_podgroup_crd: the PodGroup CRD, created only when the cluster has none
# (a cluster running scheduler-plugins keeps its own), then waits until it is
# Established either way.
apply_podgroup_crd() {
    if ! kc get crd podgroups.scheduling.x-k8s.io >/dev/null 2>&1; then
        kc create -f "$REPO/pools/podgroup-crd.yaml" >/dev/null || return 1
    fi
    wait_until 'kc get crd podgroups.scheduling.x-k8s.io -o json | jq -e ".status.conditions[] | select(.type==\"Established\" and .status==\"True\")"' 30
}

# apply_queue_crd: the Queue CRD (pools/queue-crd.yaml), created only when the
# cluster has none, then waits until it is Established either way.
apply_queue_crd() {
    if ! kc get crd queues.resource.aibee.cn >/dev/null 2>&1; then
        kc create -f "$REPO/pools/queue-crd.yaml" >/dev/null || return 1
    fi
    wait_until 'kc get crd queues.resource.aibee.cn -o json | jq -e ".status.conditions[] | select(.type==\"Established\" and .status==\"True\")"' 30
}

# ---------------------------------------------------------------------------
# objects

# make_node NAME CPU MEM GPU PODS [label=value | taint:key=value:Effect | unschedulable]...
# A Ready node with capacity == allocatable. Node status survives create
# (the node strategy keeps it), so one POST suffices.
make_node() {
    api_post_json /api/v1/nodes "$(node_json "$@")"
}

node_json() {
    local name=$1 cpu=$2 mem=$3 gpu=$4 pods=$5 a labels='{}' taints='[]' unsched=false
    shift 5
    labels=$(jq -cn --arg n "$name" '{"kubernetes.io/hostname": $n, "kubernetes.io/os": "linux"}')
    for a in "$@"; do
        case $a in
            taint:*)
                a=${a#taint:}
                local kv=${a%:*} eff=${a##*:} k v
                k=${kv%%=*}; v=""; [ "$kv" != "$k" ] && v=${kv#*=}
                taints=$(jq -c --arg k "$k" --arg v "$v" --arg e "$eff" \
                    '. + [{key: $k, effect: $e} + (if $v == "" then {} else {value: $v} end)]' <<<"$taints") ;;
            unschedulable) unsched=true ;;
            *=*) labels=$(jq -c --arg k "${a%%=*}" --arg v "${a#*=}" '. + {($k): $v}' <<<"$labels") ;;
            *) die "make_node: bad argument '$a'" ;;
        esac
    done
    jq -cn --arg name "$name" --arg cpu "$cpu" --arg mem "$mem" --arg gpu "$gpu" \
        --arg pods "$pods" --argjson labels "$labels" --argjson taints "$taints" \
        --argjson unsched "$unsched" '
      ({cpu: $cpu, memory: $mem, pods: $pods, "ephemeral-storage": "100Gi"}
        + (if $gpu == "0" or $gpu == "" then {} else {"nvidia.com/gpu": $gpu} end)) as $res
      | {apiVersion: "v1", kind: "Node",
         metadata: {name: $name, labels: $labels},
         spec: ({taints: $taints} + (if $unsched then {unschedulable: true} else {} end)),
         status: {capacity: $res, allocatable: $res,
           conditions: [{type: "Ready", status: "True", reason: "KubeletReady",
                         message: "e2e fake node",
                         lastHeartbeatTime: (now | todate), lastTransitionTime: (now | todate)}],
           addresses: [{type: "InternalIP", address: "127.0.0.1"}, {type: "Hostname", address: $name}],
           nodeInfo: {architecture: "amd64", operatingSystem: "linux", kubeletVersion: "v1.20.2",
             kubeProxyVersion: "v1.20.2", containerRuntimeVersion: "fake://0", osImage: "e2e",
             kernelVersion: "0", machineID: "", systemUUID: "", bootID: ""}}}'
}

# pod_json NAME [options] — prints a Pod object.
#   --ns NS  --cpu Q  --mem Q  --gpu N  --scheduler NAME (default ai-scheduler)
#   --priority-class NAME (see make_priority_class)  --annotation k=v  --label k=v  --node-selector k=v  --pool NAME
#   --toleration KEY[=VALUE]:EFFECT   (EFFECT may be empty: matches all effects)
#   --merge JSON                      (deep-merged into the pod, e.g. affinity)
pod_json() {
    local name=$1 ns=default cpu="" mem="" gpu="" sched=$SCHED_NAME prio=""
    local ann='{}' lab='{}' nsel='{}' tol='[]' merge='{}'
    shift
    while [ $# -gt 0 ]; do
        case $1 in
            --ns) ns=$2 ;;
            --cpu) cpu=$2 ;;
            --mem) mem=$2 ;;
            --gpu) gpu=$2 ;;
            --scheduler) sched=$2 ;;
            --priority-class) prio=$2 ;;
            --annotation) ann=$(jq -c --arg k "${2%%=*}" --arg v "${2#*=}" '. + {($k): $v}' <<<"$ann") ;;
            --label) lab=$(jq -c --arg k "${2%%=*}" --arg v "${2#*=}" '. + {($k): $v}' <<<"$lab") ;;
            --node-selector) nsel=$(jq -c --arg k "${2%%=*}" --arg v "${2#*=}" '. + {($k): $v}' <<<"$nsel") ;;
            --pool) ann=$(jq -c --arg v "$2" '. + {"resource.aibee.cn/pool": $v}' <<<"$ann") ;;
            --toleration)
                local t=$2 kv eff k v
                kv=${t%:*}; eff=${t##*:}; k=${kv%%=*}; v=""; [ "$kv" != "$k" ] && v=${kv#*=}
                tol=$(jq -c --arg k "$k" --arg v "$v" --arg e "$eff" '. + [{key: $k}
                    + (if $v == "" then {operator: "Exists"} else {operator: "Equal", value: $v} end)
                    + (if $e == "" then {} else {effect: $e} end)]' <<<"$tol") ;;
            --merge) merge=$(jq -c --argjson m "$2" '. * $m' <<<"$merge") ;;
            *) die "pod_json: unknown option $1" ;;
        esac
        shift 2
    done
    jq -cn --arg name "$name" --arg ns "$ns" --arg cpu "$cpu" --arg mem "$mem" --arg gpu "$gpu" \
        --arg sched "$sched" --arg prio "$prio" --argjson ann "$ann" --argjson lab "$lab" \
        --argjson nsel "$nsel" --argjson tol "$tol" --argjson merge "$merge" '
      ({} + (if $cpu == "" then {} else {cpu: $cpu} end)
          + (if $mem == "" then {} else {memory: $mem} end)
          + (if $gpu == "" then {} else {"nvidia.com/gpu": $gpu} end)) as $req
      | ({} + (if $gpu == "" then {} else {"nvidia.com/gpu": $gpu} end)) as $lim
      | {apiVersion: "v1", kind: "Pod",
         metadata: {name: $name, namespace: $ns, labels: ({app: "e2e"} + $lab), annotations: $ann},
         spec: ({schedulerName: $sched, terminationGracePeriodSeconds: 0,
                 containers: [{name: "main", image: "registry.invalid/pause:3",
                               resources: ({requests: $req} + (if $lim == {} then {} else {limits: $lim} end))}]}
                + (if $nsel == {} then {} else {nodeSelector: $nsel} end)
                + (if $tol == [] then {} else {tolerations: $tol} end)
                + (if $prio == "" then {} else {priorityClassName: $prio} end))}
      | . * $merge'
}

# make_pod NAME [pod_json options]
make_pod() {
    local j ns
    j=$(pod_json "$@") || return 1
    ns=$(jq -r .metadata.namespace <<<"$j")
    api_post_json "/api/v1/namespaces/$ns/pods" "$j"
}

# make_pods PREFIX COUNT [pod_json options]: PREFIX-0 .. PREFIX-(COUNT-1), 8 in parallel.
make_pods() {
    local prefix=$1 n=$2 j ns
    shift 2
    j=$(pod_json "$prefix-X" "$@") || return 1
    ns=$(jq -r .metadata.namespace <<<"$j")
    jq -c --arg p "$prefix" --argjson n "$n" 'range(0; $n) as $i | .metadata.name = "\($p)-\($i)"' <<<"$j" |
        _post_many "/api/v1/namespaces/$ns/pods"
}

# _post_many PATH < one JSON object per line (8 concurrent curl).
_post_many() {
    local path=$1 dir
    dir=$(mktemp -d "$CP_WORK/post.XXXXXX")
    split -l 1 -a 5 - "$dir/o."
    # shellcheck disable=SC2016
    find "$dir" -name 'o.*' -print0 |
        CA=$CP_WORK/pki/ca.crt CERT=$CP_WORK/pki/admin.crt KEY=$CP_WORK/pki/admin.key URL=$API_URL$path \
        xargs -0 -P 8 -n 16 bash -c '
        for f; do
          code=$(curl -sS --max-time 30 --cacert "$CA" --cert "$CERT" --key "$KEY" \
                 -H "Content-Type: application/json" --data-binary @"$f" -o "$f.out" \
                 -w "%{http_code}" "$URL") || exit 1
          case $code in 2??) ;; *) echo "POST -> $code: $(cat "$f.out")" >&2; exit 1 ;; esac
        done' _ 2>&1 | head -5 >&2
    local rc=${PIPESTATUS[1]}
    rm -rf "$dir"
    return "$rc"
}

# make_pool NAME [SPEC-JSON]: a Pool of the nodes labelled pool=NAME, SPEC-JSON
# merged into its spec (disablePreemption, preemptMinRuntime, ...).
make_pool() {
    api_post_json /apis/resource.aibee.cn/v1alpha1/pools "$(jq -cn --arg n "$1" --argjson x "${2:-{\}}" \
        '{apiVersion: "resource.aibee.cn/v1alpha1", kind: "Pool", metadata: {name: $n},
          spec: ({nodeSelector: {matchLabels: {pool: $n}}} + $x)}')"
}

# make_queue NAME [SPEC-JSON]: a Queue.
make_queue() {
    api_post_json /apis/resource.aibee.cn/v1alpha1/queues "$(jq -cn --arg n "$1" --argjson s "${2:-{\}}" \
        '{apiVersion: "resource.aibee.cn/v1alpha1", kind: "Queue", metadata: {name: $n}, spec: $s}')"
}

# make_priority_class NAME VALUE (the Priority admission plugin forbids a bare
# spec.priority, so pods name a class).
make_priority_class() {
    api_post_json /apis/scheduling.k8s.io/v1/priorityclasses \
        "$(jq -cn --arg n "$1" --argjson v "$2" '{apiVersion: "scheduling.k8s.io/v1", kind: "PriorityClass", metadata: {name: $n}, value: $v}')"
}

ns_create() { kc create namespace "$1" >/dev/null; }

# pod_node NAME [NS]: the node a pod is bound to (empty when unbound).
pod_node() { kc get pod "$1" -n "${2:-default}" -o jsonpath='{.spec.nodeName}'; }

# pods_json [kubectl-get args]: all pods as a List.
pods_json() { kc get pods -A -o json "$@"; }

# count_unbound [selector]: pods with our scheduler and no nodeName.
count_unbound() {
    pods_json ${1:+-l "$1"} | jq --arg s "$SCHED_NAME" '[.items[] | select(.spec.schedulerName == $s and (.spec.nodeName // "") == "")] | length'
}
# bound_in_ns [NS]: cheap count of bound pods (one curl, no kubectl).
bound_in_ns() {
    api_get "/api/v1/namespaces/${1:-default}/pods?fieldSelector=spec.nodeName%21%3D" | jq '.items | length'
}
count_bound() {
    pods_json ${1:+-l "$1"} | jq '[.items[] | select((.spec.nodeName // "") != "")] | length'
}

# jq helpers: quantity parsing and pod requests (max(sum containers, max init) + overhead).
JQ_DEFS='
def q: if . == null then 0 else tostring | capture("^(?<n>[0-9.]+)(?<s>[a-zA-Z]*)$") as $c
  | ($c.n | tonumber) * ({"": 1, "m": 0.001, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
      "Ki": 1024, "Mi": 1048576, "Gi": 1073741824, "Ti": 1099511627776, "Pi": 1125899906842624}[$c.s]) end;
def req(r): ([.spec.containers[]? | .resources.requests[r] | q] | add // 0) as $c
  | ([.spec.initContainers[]? | .resources.requests[r] | q] | max // 0) as $i
  | ([$c, $i] | max) + (.spec.overhead[r] | q);
'

# overcommitted_nodes: prints one JSON line per node whose bound, non-terminal
# pods request more cpu/memory/gpu/pod-count than its allocatable, or per pod
# bound to a node that does not exist. Empty output == OK.
overcommitted_nodes() {
    # files, not --argjson: a few hundred pods exceed the 128 KiB argument limit
    local pf=$CP_WORK/usage.pods.json nf=$CP_WORK/usage.nodes.json
    if ! pods_json >"$pf" || ! kc get nodes -o json >"$nf"; then
        echo '{"error":"kubectl get failed"}'; return 1
    fi
    jq -cn --slurpfile PP "$pf" --slurpfile NN "$nf" "$JQ_DEFS"'
      $PP[0] as $P | $NN[0] as $N |
      ($P.items | map(select((.spec.nodeName // "") != "" and .status.phase != "Succeeded" and .status.phase != "Failed"))) as $pods
      | ($N.items | map(.metadata.name)) as $names
      | ($N.items[] | .metadata.name as $n | .status.allocatable as $a
          | ($pods | map(select(.spec.nodeName == $n))) as $mine
          | {node: $n,
             cpu_m: (($mine | map(req("cpu")) | add // 0) * 1000 | round), cpu_alloc_m: (($a.cpu | q) * 1000 | round),
             mem: ($mine | map(req("memory")) | add // 0), mem_alloc: ($a.memory | q),
             gpu: ($mine | map(req("nvidia.com/gpu")) | add // 0), gpu_alloc: ($a["nvidia.com/gpu"] | q),
             pods: ($mine | length), pods_alloc: ($a.pods | q)}
          | select(.cpu_m > .cpu_alloc_m or .mem > .mem_alloc or .gpu > .gpu_alloc or .pods > .pods_alloc)),
        ($pods[] | select(.spec.nodeName as $n | $names | index($n) | not)
          | {pod: "\(.metadata.namespace)/\(.metadata.name)", missing_node: .spec.nodeName})'
}

assert_no_overcommit() {
    local out
    out=$(overcommitted_nodes) || fail "could not compute node usage"
    [ -z "$out" ] || fail "nodes over allocatable: $out"
}

# pod_condition NAME TYPE [NS] -> "Status Reason Message"
pod_condition() {
    kc get pod "$1" -n "${3:-default}" -o json |
        jq -r --arg t "$2" '.status.conditions[]? | select(.type == $t) | "\(.status) \(.reason // "") \(.message // "")"'
}

# events_for NAME [NS] [REASON]: "reason<TAB>message" per event (core and events.k8s.io).
events_for() {
    kc get events -n "${2:-default}" -o json --field-selector "involvedObject.name=$1${3:+,reason=$3}" |
        jq -r '.items[] | "\(.reason)\t\(.message // .note // "")"'
}

# cp_reset: delete every pod (forced; there is no kubelet) and every node.
cp_reset() {
    kc delete pods -A --all --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
    kc delete nodes --all --wait=false >/dev/null 2>&1 || true
    wait_until '[ "$(kc get pods -A -o name | wc -l)" = 0 ] && [ "$(kc get nodes -o name | wc -l)" = 0 ]' 60 ||
        fail "cp_reset: objects remain"
}

# ---------------------------------------------------------------------------
# scheduler

# start_scheduler [extra args...]: runs $AISCHED_WRAP $AISCHED_BIN with the
# scheduler kubeconfig; default args --leader-elect=false --metrics-port 0 -v 4 (debug)
# --eviction-grace-period 0: no kubelet runs here, so a victim deleted with
# its own grace period (the scheduler's default, as kube-scheduler) would stay
# Terminating for good; the suites that evict want victims gone at once. A
# later --eviction-grace-period in the extra args wins (t_preemption does).
# Records the pid in $CP_WORK/sched.pid; the exit code lands in sched.rc.
# Works from subshells (state is in files, not variables).
start_scheduler() {
    local bin=$AISCHED_BIN
    [ -x "$bin" ] || fail "scheduler binary not found: $bin (make, or set AISCHED_BIN)"
    local n
    n=$(($(cat "$CP_WORK/sched.count" 2>/dev/null || echo 0) + 1))
    echo "$n" >"$CP_WORK/sched.count"
    local logf=$CP_WORK/scheduler.$n.log
    ln -sfn "scheduler.$n.log" "$CP_WORK/scheduler.log"
    rm -f "$CP_WORK/sched.rc" "$CP_WORK/sched.pid"
    local -a wrap=()
    # shellcheck disable=SC2206
    [ -n "${AISCHED_WRAP:-}" ] && wrap=($AISCHED_WRAP)
    # The wrapper shell execs nothing: it starts the binary, records its pid,
    # waits, and records its exit code. We signal the binary's pid only.
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=0:second_deadlock_stack=1} \
    LOGF=$logf PIDF=$CP_WORK/sched.pid RCF=$CP_WORK/sched.rc \
    bash -c '"$@" >"$LOGF" 2>&1 & echo $! >"$PIDF.tmp"; mv "$PIDF.tmp" "$PIDF"; wait $!; echo $? >"$RCF"' _ \
        "${wrap[@]}" "$bin" --kubeconfig "$SCHED_KUBECONFIG" --scheduler-name "$SCHED_NAME" \
        --leader-elect=false --metrics-port 0 -v "${SCHED_V:-4}" --eviction-grace-period 0 "$@" >>"$logf" 2>&1 &
    _pid_record $! sched-wrapper
    # The wrapper's stdout is the log, not the caller's: a caller that reads
    # start_scheduler's output through a pipe ($(...), < <(...)) would
    # otherwise wait for the scheduler to exit. 30 s: a loaded CI machine
    # running two e2e lanes under ASan has taken more than 5 s to fork it.
    local i
    for ((i = 0; i < 300; i++)); do [ -s "$CP_WORK/sched.pid" ] && break; sleep 0.1; done
    [ -s "$CP_WORK/sched.pid" ] || fail "scheduler did not start"
    _pid_record "$(cat "$CP_WORK/sched.pid")" scheduler
    log "scheduler #$n started: pid $(cat "$CP_WORK/sched.pid"), log $logf"
}

# The scheduler's port is HTTPS with a self-signed certificate by default:
# sched_curl is curl that takes it (-k), sched_url PORT [HOST] its base URL.
# METRICS_OPEN: start_scheduler's flags for suites that scrape /metrics
# without a token (as a scraper that cannot authenticate).
sched_curl() { curl -k "$@"; }
sched_url() { echo "https://${2:-127.0.0.1}:$1"; }
# shellcheck disable=SC2034,SC2054  # used by the suites; the commas are the flag's value
METRICS_OPEN=(--authorization-always-allow-paths /healthz,/readyz,/livez,/metrics)

sched_pid() { cat "$CP_WORK/sched.pid" 2>/dev/null; }
sched_alive() {
    local pid
    pid=$(sched_pid) || return 1
    [ -n "$pid" ] && [ ! -e "$CP_WORK/sched.rc" ] && kill -0 "$pid" 2>/dev/null
}
sched_log_tail() { [ -e "$CP_WORK/scheduler.log" ] && tail -n "${1:-30}" "$CP_WORK/scheduler.log" | sed 's/^/  sched| /' >&2; return 0; }

# stop_scheduler [SIGNAL]: TERM (default) or KILL; waits; returns its exit
# code (128+n when killed by a signal). KILL: no wait for a clean exit.
stop_scheduler() {
    local sig=${1:-TERM} pid i
    pid=$(sched_pid) || return 0
    [ -n "$pid" ] || return 0
    if [ "$sig" = KILL ]; then
        kill -KILL "$pid" 2>/dev/null || true
    else
        _kill_pid "$pid" "${SCHED_STOP_GRACE:-15}"
    fi
    for ((i = 0; i < 100; i++)); do [ -s "$CP_WORK/sched.rc" ] && break; sleep 0.1; done
    rm -f "$CP_WORK/sched.pid"
    local rc
    rc=$(cat "$CP_WORK/sched.rc" 2>/dev/null || echo 255)
    return "$rc"
}

# lease_holder: the holderIdentity ("<host>_<pid>") of Lease $LEASE_NS/$LEASE_NAME;
# lease_holder_pid: the pid it names, failing when nobody holds it.
lease_holder() {
    kc get lease "$LEASE_NAME" -n "$LEASE_NS" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null
}
lease_holder_pid() {
    local h
    h=$(lease_holder) || return 1
    [ -n "$h" ] && echo "${h##*_}"
}

# sched_log_clean: no sanitizer / valgrind report in any scheduler log, no
# request the chart's RBAC refused (a missing permission is a failure), and
# not the scheduler's token (t_security.sh looks for every secret).
sched_log_clean() {
    local bad=""
    if [ -n "${SCHED_TOKEN:-}" ] && grep -qF -- "${SCHED_TOKEN##*.}" "$CP_WORK"/scheduler.*.log 2>/dev/null; then
        log "the scheduler's ServiceAccount token is in a scheduler log"
        return 1
    fi
    # E2E_FORBIDDEN_OK=1: a case that restarts the API server, which answers
    # 403 for a moment while its RBAC caches fill.
    [ -z "${E2E_FORBIDDEN_OK:-}" ] && bad=$(grep -l -i 'forbidden' "$CP_WORK"/scheduler.*.log 2>/dev/null)
    if [ -n "$bad" ]; then
        log "requests refused by the chart's RBAC in: $bad"
        # shellcheck disable=SC2086  # one file name per line
        grep -h -i -m5 'forbidden' $bad >&2
        return 1
    fi
    bad=$(grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|WARNING: ThreadSanitizer|runtime error:|ERROR SUMMARY: [1-9]|definitely lost: [1-9]' \
        "$CP_WORK"/scheduler.*.log 2>/dev/null)
    [ -z "$bad" ] && return 0
    log "sanitizer/valgrind reports in: $bad"
    # shellcheck disable=SC2086  # one file name per line
    grep -hE -A15 'ERROR: (AddressSanitizer|LeakSanitizer)|WARNING: ThreadSanitizer|runtime error:' $bad | head -60 >&2
    return 1
}

# stop_scheduler_clean: TERM, expect exit 0 and clean sanitizer logs.
stop_scheduler_clean() {
    local rc=0
    stop_scheduler TERM || rc=$?
    sched_log_clean || fail "scheduler log has sanitizer/valgrind errors"
    [ "$rc" = 0 ] || { sched_log_tail; fail "scheduler exited $rc on SIGTERM (want 0)"; }
}

# ---------------------------------------------------------------------------
# member clusters (multi-cluster tests)
#
# member_start NAME: one more control plane (its own etcd and kube-apiserver
# on new ports) beside cp_start's, sharing its certificates and tokens, with
# the same RBAC and CRDs. State in $CP_WORK/m/NAME: port, admin.kubeconfig,
# scheduler.kubeconfig, logs. The hub's globals are left as they were.
member_start() {
    local name=$1 d=$CP_WORK/m/$1 rc=0
    local s_url=$API_URL s_port=$API_PORT s_etcd=$ETCD_PORT s_kc=$ADMIN_KUBECONFIG s_pid=$API_PID s_epid=$ETCD_PID
    mkdir -p "$d"
    if _start_etcd "$d" && _start_apiserver "$d"; then
        echo "$ETCD_PORT" >"$d/etcd_port"; echo "$API_PORT" >"$d/port"; echo "$API_PID" >"$d/api.pid"
        _write_kubeconfig "$d/admin.kubeconfig" e2e-admin cert
        ADMIN_KUBECONFIG=$d/admin.kubeconfig
        local toks="" st _dt
        { wait_until 'kc get namespace default' 60 && toks=$(_chart_rbac_apply) &&
            apply_pool_crd && apply_podgroup_crd && apply_queue_crd; } || rc=1
        read -r st _dt <<<"$toks"
        _write_kubeconfig "$d/scheduler.kubeconfig" "system:serviceaccount:$CHART_NS:$SCHED_SA" token "${st:-none}"
    else
        rc=1
    fi
    API_URL=$s_url API_PORT=$s_port ETCD_PORT=$s_etcd ADMIN_KUBECONFIG=$s_kc API_PID=$s_pid ETCD_PID=$s_epid
    [ $rc = 0 ] && log "member $name up: https://127.0.0.1:$(cat "$d/port")"
    return $rc
}

# mkc NAME ARGS...: kubectl against member NAME.
mkc() {
    local name=$1; shift
    kubectl --kubeconfig "$CP_WORK/m/$name/admin.kubeconfig" --request-timeout=10s "$@" \
        2> >(grep -v 'WARNING: version difference' >&2)
}

# member_api_stop NAME / member_api_start NAME: take member NAME's
# kube-apiserver down (its etcd keeps the data) and bring it back on the
# same port.
member_api_stop() {
    local d=$CP_WORK/m/$1
    _kill_pid "$(cat "$d/api.pid")" 3
    wait "$(cat "$d/api.pid")" 2>/dev/null || true
    log "member $1: kube-apiserver stopped"
}
member_api_start() {
    local d=$CP_WORK/m/$1 rc=0
    local s_url=$API_URL s_port=$API_PORT s_etcd=$ETCD_PORT s_pid=$API_PID
    ETCD_PORT=$(cat "$d/etcd_port")
    _start_apiserver "$d" "$(cat "$d/port")" || rc=1
    [ $rc = 0 ] && echo "$API_PID" >"$d/api.pid"
    API_URL=$s_url API_PORT=$s_port ETCD_PORT=$s_etcd API_PID=$s_pid
    log "member $1: kube-apiserver started again (rc $rc)"
    return $rc
}

# member_scheduler NAME: ai-scheduler ($AISCHED_BIN) for member NAME, with
# its scheduler kubeconfig; log in $CP_WORK/m/NAME/scheduler.log.
member_scheduler() {
    local d=$CP_WORK/m/$1
    "$AISCHED_BIN" --kubeconfig "$d/scheduler.kubeconfig" --scheduler-name "$SCHED_NAME" \
        --leader-elect=false --metrics-port 0 -v 2 >"$d/scheduler.log" 2>&1 &
    _pid_record $! "scheduler-$1"
}

# ---------------------------------------------------------------------------
# cases

# run_case NAME FUNC: runs FUNC in a subshell (errexit on); records PASS/FAIL.
# E2E_CASES="a b": run only the cases of those names (E2E_TRACE=1: set -x).
run_case() {
    local name=$1 fn=$2 rc t0=$SECONDS
    [ -n "${E2E_CASES:-}" ] && [[ " $E2E_CASES " != *" $name "* ]] && return 0
    [ -n "${E2E_TRACE:-}" ] && set -x
    log "=== case $name"
    ( set -e; "$fn" )
    rc=$?
    if [ $rc = 0 ]; then
        echo "PASS ${E2E_FILE:-}$name ($((SECONDS - t0))s)"
        [ -n "${E2E_RESULTS:-}" ] && echo "PASS ${E2E_FILE:-}$name" >>"$E2E_RESULTS"
    else
        CP_FAILED=1
        sched_log_tail 20
        echo "FAIL ${E2E_FILE:-}$name ($((SECONDS - t0))s)"
        [ -n "${E2E_RESULTS:-}" ] && echo "FAIL ${E2E_FILE:-}$name" >>"$E2E_RESULTS"
    fi
    return 0
}

# finish: exit status for a t_*.sh file.
finish() { [ "$CP_FAILED" = 0 ]; }
