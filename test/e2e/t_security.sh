#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Least privilege and secrets (issue 13). The whole e2e suite runs the
# scheduler and the dispatch controller as the Helm chart's ServiceAccounts
# with the chart's own RBAC (lib.sh: _chart_rbac_apply); this file checks
# that it is so, that TLS is verified unless --insecure says otherwise (and
# then loudly), and that no token or key reaches a log at any verbosity.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=security/

# can_i KUBECONFIG VERB RESOURCE [kubectl args]: yes or no, as the API server
# answers a SelfSubjectAccessReview for that account.
can_i() {
    local kcf=$1; shift
    kubectl --kubeconfig "$kcf" --request-timeout=30s auth can-i "$@" 2>/dev/null || true
}

# expect_sar KUBECONFIG yes|no VERB GROUP RESOURCE [NS]: the same through a
# SelfSubjectAccessReview of our own, for kinds whose CRD this cluster does
# not have (kubectl auth can-i says "no" for a resource discovery lacks).
expect_sar() {
    local kcf=$1 want=$2 verb=$3 group=$4 res=$5 ns=${6:-} got
    got=$(jq -cn --arg v "$verb" --arg g "$group" --arg r "$res" --arg n "$ns"         '{apiVersion: "authorization.k8s.io/v1", kind: "SelfSubjectAccessReview",
          spec: {resourceAttributes: ({verb: $v, group: $g, resource: $r} + (if $n == "" then {} else {namespace: $n} end))}}' |
        kubectl --kubeconfig "$kcf" --request-timeout=30s create -f - -o json 2>/dev/null |
        jq -r 'if .status.allowed then "yes" else "no" end')
    [ "$got" = "$want" ] || fail "access review $verb $res.$group ${ns:+-n $ns} as $(basename "$kcf"): ${got:-no answer}, want $want"
}

# expect KUBECONFIG yes|no ARGS...
expect() {
    local kcf=$1 want=$2 got; shift 2
    got=$(can_i "$kcf" "$@")
    [ "$got" = "$want" ] || fail "auth can-i $* as $(basename "$kcf"): $got, want $want"
}

# The scheduler's identity is the chart's ServiceAccount, with what the chart
# grants and nothing more; the dispatch controller's is its own account.
case_chart_identity() {
    local s=$SCHED_KUBECONFIG d=$DISPATCH_KUBECONFIG
    kc get clusterrole ai-scheduler -o json | jq -e '.metadata.labels["app.kubernetes.io/name"] == "ai-scheduler"' \
        >/dev/null || fail "the ClusterRole is not the chart's"
    grep -q 'client-certificate' "$s" && fail "scheduler kubeconfig carries a client certificate"
    expect "$s" yes create pods --subresource=binding -n default
    expect "$s" yes create pods --subresource=eviction -n team-x
    expect "$s" yes watch nodes
    expect "$s" yes list pools.resource.aibee.cn
    expect "$s" yes patch queues.resource.aibee.cn --subresource=status
    expect "$s" yes update leases.coordination.k8s.io/ai-scheduler -n "$CHART_NS"
    expect "$s" yes create pods -n "$CHART_NS"
    expect "$s" no create pods -n default
    expect "$s" no delete pods -n default
    expect "$s" no get secrets -n default
    expect "$s" no list secrets -n "$CHART_NS"
    expect "$s" no update leases.coordination.k8s.io/other -n "$CHART_NS"
    expect "$s" no update leases.coordination.k8s.io/ai-scheduler -n kube-system
    expect "$s" no create nodes
    expect "$s" no update pools.resource.aibee.cn
    # Workload groups: read the owners' kinds, create and patch PodGroups, nothing else of theirs.
    expect "$s" yes create podgroups.scheduling.x-k8s.io -n default
    expect "$s" yes patch podgroups.scheduling.x-k8s.io -n default
    expect "$s" no delete podgroups.scheduling.x-k8s.io -n default
    expect_sar "$s" yes get kubeflow.org pytorchjobs default
    expect_sar "$s" yes get leaderworkerset.x-k8s.io leaderworkersets default
    expect_sar "$s" no list kubeflow.org pytorchjobs default
    expect_sar "$s" no update jobset.x-k8s.io jobsets default
    expect "$s" no patch deployments.apps -n default
    expect "$s" yes list priorityclasses.scheduling.k8s.io
    # /debug: the reviews of the callers' tokens and rights, nothing else of those groups
    expect "$s" yes create tokenreviews.authentication.k8s.io
    expect "$s" yes create subjectaccessreviews.authorization.k8s.io
    expect "$s" no create localsubjectaccessreviews.authorization.k8s.io -n default
    expect "$s" no get pods --subresource=proxy -n "$CHART_NS"
    expect "$s" no '*' '*'
    expect "$d" yes get secrets -n default
    expect "$d" no list secrets -n default
    expect "$d" no watch secrets -n default
    expect "$d" yes patch multiclusterjobs.resource.aibee.cn --subresource=status -n default
    expect "$d" no create pods --subresource=binding -n default
    expect "$d" no get nodes
}

# kubeconfig_variant NAME SED-EXPR: a copy of the scheduler's kubeconfig.
kubeconfig_variant() {
    sed "$2" "$SCHED_KUBECONFIG" >"$CP_WORK/$1.kubeconfig"
    chmod 600 "$CP_WORK/$1.kubeconfig"
    echo "$CP_WORK/$1.kubeconfig"
}

# Without the cluster's CA the server's certificate does not verify: nothing
# is scheduled and the log says why. The same with a CA that did not sign it.
case_tls_verified_by_default() {
    cp_reset
    make_node n1 4 8Gi 0 110
    make_pod p1 --cpu 100m
    local noca other
    noca=$(kubeconfig_variant noca '/certificate-authority-data:/d')
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=other-ca -keyout "$CP_WORK/other-ca.key" \
        -out "$CP_WORK/other-ca.crt" >/dev/null 2>&1 || fail "openssl"
    other=$(kubeconfig_variant otherca "s|certificate-authority-data: .*|certificate-authority-data: $(base64 -w0 <"$CP_WORK/other-ca.crt")|")
    local kcf
    for kcf in "$noca" "$other"; do
        SCHED_KUBECONFIG=$kcf start_scheduler
        wait_until 'grep -qiE "certificate|SSL" "$CP_WORK/scheduler.log"' 20 ||
            { sched_log_tail; fail "$(basename "$kcf"): no TLS error in the log"; }
        # one error line and exit 1, as for any kubeconfig that cannot work
        wait_until '[ -s "$CP_WORK/sched.rc" ]' 20 || fail "$(basename "$kcf"): still running"
        [ "$(cat "$CP_WORK/sched.rc")" = 1 ] || fail "$(basename "$kcf"): exit $(cat "$CP_WORK/sched.rc"), want 1"
        [ -z "$(pod_node p1)" ] || fail "$(basename "$kcf"): p1 bound through an unverified server"
        stop_scheduler TERM || true
    done
    grep -hiE -m1 'certificate|SSL' "$CP_WORK"/scheduler.*.log | sed 's/^/  /' >&2
}

# --insecure (or the kubeconfig's insecure-skip-tls-verify) works, and says
# so at the default verbosity, once per client.
case_insecure_is_loud() {
    cp_reset
    make_node n1 4 8Gi 0 110
    make_pod p2 --cpu 100m
    local noca skip
    noca=$(kubeconfig_variant noca '/certificate-authority-data:/d')
    SCHED_KUBECONFIG=$noca SCHED_V=0 start_scheduler --insecure
    wait_until '[ "$(pod_node p2)" = n1 ]' 30 || { sched_log_tail; fail "p2 not bound with --insecure"; }
    grep -q 'INSECURE: TLS verification is OFF' "$CP_WORK/scheduler.log" || { sched_log_tail; fail "--insecure was quiet"; }
    stop_scheduler_clean
    skip=$(kubeconfig_variant skip 's|certificate-authority-data: .*|insecure-skip-tls-verify: true|')
    make_pod p3 --cpu 100m
    SCHED_KUBECONFIG=$skip SCHED_V=0 start_scheduler
    wait_until '[ "$(pod_node p3)" = n1 ]' 30 || { sched_log_tail; fail "p3 not bound with insecure-skip-tls-verify"; }
    grep -q 'INSECURE: TLS verification is OFF' "$CP_WORK/scheduler.log" ||
        fail "insecure-skip-tls-verify in the kubeconfig was quiet"
    stop_scheduler_clean
}

# secrets_in FILE...: prints each secret of this control plane that occurs in
# the files (tokens, the JWTs' signatures, private keys in PEM or base64).
secrets_in() {
    local -a needles=("$ADMIN_TOKEN" "$SCHED_TOKEN" "$DISPATCH_TOKEN" "${SCHED_TOKEN##*.}" "${DISPATCH_TOKEN##*.}"
        "PRIVATE KEY" "$BAD_TOKEN")
    local k line
    for k in admin.key apiserver.key sa.key; do
        # a line from the middle of each key, and the whole key in base64 (kubeconfig's *-data)
        line=$(sed -n 5p "$CP_WORK/pki/$k")
        needles+=("$line" "$(base64 -w0 <"$CP_WORK/pki/$k" | cut -c 300-360)")
    done
    local n
    for n in "${needles[@]}"; do
        [ -n "$n" ] || continue
        grep -lF -- "$n" "$@" 2>/dev/null | sed "s|^|  ${n:0:6}... in |" || true
    done
}

# Every account's secrets stay out of every log at the highest verbosity:
# the scheduler authenticating with a token file (rotation path) while it
# binds, reports an unschedulable pod and preempts; a scheduler refused for a
# bad token; the dispatch controller reading member kubeconfigs (a client key
# and a token) from Secrets.
case_no_secrets_in_logs() {
    cp_reset
    make_node n1 2 4Gi 0 110
    echo -n "$SCHED_TOKEN" >"$CP_WORK/sa-token"
    chmod 600 "$CP_WORK/sa-token"
    local tf bad
    tf=$(kubeconfig_variant tokenfile "s|    token: .*|    tokenFile: $CP_WORK/sa-token|")
    grep -q tokenFile "$tf" || fail "no tokenFile in $tf"
    make_priority_class high 1000
    make_pod low --cpu 1500m
    make_pod never --cpu 64
    SCHED_KUBECONFIG=$tf SCHED_V=10 start_scheduler
    wait_until '[ "$(pod_node low)" = n1 ]' 30 || { sched_log_tail; fail "low not bound"; }
    make_pod high --cpu 1500m --priority-class high
    wait_until '[ "$(pod_node high)" = n1 ]' 60 || { sched_log_tail; fail "high never preempted low"; }
    events_for never default FailedScheduling | grep -q . || fail "no FailedScheduling for never"
    stop_scheduler_clean
    BAD_TOKEN=wrong-$(openssl rand -hex 12)
    bad=$(kubeconfig_variant badtoken "s|    token: .*|    token: $BAD_TOKEN|")
    SCHED_KUBECONFIG=$bad SCHED_V=10 start_scheduler
    wait_until 'grep -qE "401|Unauthorized" "$CP_WORK/scheduler.log"' 20 || { sched_log_tail; fail "no 401 in the log"; }
    stop_scheduler TERM || true

    # Dispatch: two member Secrets for this same cluster, one with the admin
    # client key, one with the admin token.
    sed "s|    client-certificate-data: .*|    token: $ADMIN_TOKEN|; /client-key-data/d" "$ADMIN_KUBECONFIG" >"$CP_WORK/admin-token.kubeconfig"
    kc create secret generic m-cert --from-file=kubeconfig="$ADMIN_KUBECONFIG" >/dev/null || fail "secret"
    kc create secret generic m-token --from-file=kubeconfig="$CP_WORK/admin-token.kubeconfig" >/dev/null || fail "secret"
    kc create namespace m1 >/dev/null; kc create namespace m2 >/dev/null
    "$AISCHED_BIN" dispatch --kubeconfig "$DISPATCH_KUBECONFIG" --leader-elect=false --metrics-port 0 \
        --poll-interval 0.25 -v 10 >"$CP_WORK/dispatch.log" 2>&1 &
    local dpid=$!
    _pid_record $dpid dispatch
    jq -n --arg sched "$SCHED_NAME" '{apiVersion: "resource.aibee.cn/v1alpha1", kind: "MultiClusterJob",
      metadata: {name: "sj", namespace: "default"},
      spec: {clusters: [{name: "c1", kubeconfigSecret: "m-cert", namespace: "m1", priority: 10},
                        {name: "c2", kubeconfigSecret: "m-token", namespace: "m2", priority: 20}],
             guardTimeRunningSeconds: 60,
             template: [{apiVersion: "v1", kind: "Pod", metadata: {},
                         spec: {schedulerName: $sched, containers: [{name: "main", image: "busybox"}]}}]}}' |
        kc apply -f - >/dev/null || fail "mcjob"
    wait_until '[ -n "$(kc get pod sj-c1 -n m1 -o name 2>/dev/null)" ] && [ -n "$(kc get pod sj-c2 -n m2 -o name 2>/dev/null)" ]' 30 ||
        { tail -20 "$CP_WORK/dispatch.log" >&2; fail "dispatch did not create the pods through both Secrets"; }
    kc delete mcjob sj --wait=false >/dev/null
    wait_until '! kc get mcjob sj >/dev/null 2>&1' 30 || fail "sj never deleted"
    _kill_pid $dpid 10
    grep -q 'forbidden' "$CP_WORK/dispatch.log" && { grep -m3 forbidden "$CP_WORK/dispatch.log" >&2; fail "the dispatch controller was refused by the chart's RBAC"; }

    local leaks
    # the check itself finds a token and a key line when they are there
    { echo "Authorization: Bearer $SCHED_TOKEN"; sed -n 5p "$CP_WORK/pki/sa.key"; } >"$CP_WORK/leak.probe"
    [ "$(secrets_in "$CP_WORK/leak.probe" | wc -l)" -ge 3 ] || fail "secrets_in misses a planted token or key"
    leaks=$(secrets_in "$CP_WORK"/scheduler.*.log "$CP_WORK/dispatch.log" "$CP_WORK/apiserver.log")
    [ -z "$leaks" ] || { echo "$leaks" >&2; fail "secrets in logs"; }
    log "no token or key in $(ls "$CP_WORK"/scheduler.*.log "$CP_WORK/dispatch.log" | wc -l) logs ($(cat "$CP_WORK"/scheduler.*.log "$CP_WORK/dispatch.log" | wc -l) lines)"
}

cp_start
kc apply -f "$REPO/pools/multiclusterjob-crd.yaml" >/dev/null || die "CRD"
wait_until 'kc get crd multiclusterjobs.resource.aibee.cn -o json | jq -e ".status.conditions[] | select(.type==\"Established\" and .status==\"True\")"' 30 ||
    die "CRD not established"
BAD_TOKEN=""
run_case chart-identity case_chart_identity
run_case tls-verified-by-default case_tls_verified_by_default
run_case insecure-is-loud case_insecure_is_loud
run_case no-secrets-in-logs case_no_secrets_in_logs
finish
