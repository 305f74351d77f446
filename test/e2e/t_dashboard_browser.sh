#!/usr/bin/env bash
# shellcheck disable=SC2016 source-path=SCRIPTDIR
# The web dashboard in a real browser (issue 25): the scheduler on the real
# API server with two pools, a Queue tree with quotas, a waiting gang, a
# GPU fraction and a pending pod; Debian's Chromium (playwright-core from
# test/browser, npm ci) opens /ui/ on the scheduler's port and checks what a
# person sees (test/browser/dashboard.mjs --e2e): the pools' names and GPUs,
# the queue tree, the gang and its reason, the pending pod's reason and, on
# a click, its decision, the fraction on its node; a pod that binds shows
# without a reload within 2 s (+1 s margin); no token shows 401, a token
# without rights 403. Screenshots into build/ (and $DASHBOARD_SCREENSHOTS_TO).
# Without Chromium or npm the test fails: it never skips.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=dashboard_browser/

PG_LABEL=scheduling.x-k8s.io/pod-group
QLABEL=resource.aibee.cn/queue

port() { cat "$CP_WORK/ui.port"; }
base() { cat "$CP_WORK/ui.base"; }

browser_deps() {
    bash "$REPO/test/browser/run.sh" --deps-only || die "no Chromium or playwright-core (test/browser/run.sh)"
}

setup() {
    browser_deps
    ns_create ml
    # two pools: train (2 nodes x 4 GPUs), infer (1 node x 2 GPUs)
    make_node train-0 8 32Gi 4 110 pool=train || die "no node"
    make_node train-1 8 32Gi 4 110 pool=train || die "no node"
    make_node infer-0 4 16Gi 2 110 pool=infer || die "no node"
    make_pool train || die "no pool"
    make_pool infer || die "no pool"
    make_queue org '{"resources":{"gpu":{"quota":10}}}' || die "no queue"
    make_queue team-a '{"parentQueue":"org","resources":{"gpu":{"quota":8,"limit":8}}}' || die "no queue"
    make_queue team-b '{"parentQueue":"org","resources":{"gpu":{"quota":2}}}' || die "no queue"
    # dashboard viewer and a user without rights
    VIEWER=$(sa_token ml dash-viewer)
    NOBODY=$(sa_token ml dash-nobody)
    [ -n "$VIEWER" ] && [ -n "$NOBODY" ] || die "no ServiceAccount tokens"
    kc create clusterrolebinding dash-viewer --clusterrole ai-scheduler-dashboard-viewer \
        --serviceaccount ml:dash-viewer >/dev/null || die "no clusterrolebinding"
    echo "$VIEWER" >"$CP_WORK/viewer.token"
    echo "$NOBODY" >"$CP_WORK/nobody.token"
    free_port >"$CP_WORK/ui.port"
    start_scheduler --metrics-port "$(port)" --metrics-bind-address 127.0.0.1
    # TLS when the server has it (issue 25: on by default), else plain HTTP
    wait_until 'curl -sk --max-time 2 "https://127.0.0.1:$(port)/healthz" | grep -qx ok || curl -s --max-time 2 "http://127.0.0.1:$(port)/healthz" | grep -qx ok' 30 ||
        die "/healthz does not answer on port $(port)"
    if curl -sk --max-time 2 "https://127.0.0.1:$(port)/healthz" | grep -qx ok; then
        echo "https://127.0.0.1:$(port)" >"$CP_WORK/ui.base"
    else
        echo "http://127.0.0.1:$(port)" >"$CP_WORK/ui.base"
    fi
    log "dashboard at $(base)/ui/"
    # a fraction in infer, a gang of 3 x 4 GPUs in train (8 GPUs: waits), a
    # pod that asks more CPU than a train node has
    make_pod frac --ns ml --pool infer --cpu 100m --label "$QLABEL=team-b" --annotation gpu-fraction=0.5 ||
        die "no pod"
    api_post_json /apis/scheduling.x-k8s.io/v1alpha1/namespaces/ml/podgroups \
        '{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup","metadata":{"name":"big"},"spec":{"minMember":3}}' ||
        die "no podgroup"
    make_pods big 3 --ns ml --pool train --cpu 1 --gpu 4 --label "$PG_LABEL=big" --label "$QLABEL=team-a" || die "no gang"
    make_pod huge --ns ml --pool train --cpu 64 --label "$QLABEL=team-a" || die "no pod"
    wait_until '[ -n "$(pod_node frac ml)" ]' 30 || die "the fraction pod did not bind"
}

api_ok() { curl -sk --max-time 5 -H "Authorization: Bearer $(cat "$CP_WORK/viewer.token")" "$(base)$1"; }

case_api_ready() {
    # what the page will show is there (the browser then checks the page)
    wait_until 'api_ok /api/v1/gangs | jq -e ".items[] | select(.name == \"big\" and .reason != \"\")" >/dev/null' 30 ||
        fail "gangs: $(api_ok /api/v1/gangs)"
    wait_until 'api_ok "/api/v1/pending?q=huge" | jq -e ".items[] | select(.name == \"huge\" and .hasDecision)" >/dev/null' 30 ||
        fail "pending: $(api_ok '/api/v1/pending?q=huge')"
    # one history sample (every 10 s) for the queues' chart
    wait_until 'api_ok "/api/v1/queues/history?queue=team-b&resource=gpu" | jq -e ".points | length > 0" >/dev/null' 30 ||
        fail "history: $(api_ok '/api/v1/queues/history?queue=team-b&resource=gpu')"
    log "gang: $(api_ok /api/v1/gangs | jq -c '.items[0] | {name, reason}')"
    log "pending: $(api_ok '/api/v1/pending?q=huge' | jq -c '.items[0] | {name, reason}')"
}

case_browser() {
    jq -n '{
      pools: [{name: "train", gpu: "^used 0 / 8 · shared 0 · free 8 · pending 12$",
               facts: "^2 nodes · 0 cordoned · 0 not ready · 4 pending pods · 1 waiting gangs$"},
              {name: "infer", gpu: "^used 0.5 / 2 · shared 1 · free 1.5 · pending 0$",
               facts: "^1 nodes · 0 cordoned · 0 not ready · 0 pending pods · 0 waiting gangs$"}],
      queues: [{name: "org", label: "org", quota: "10", limit: "–"},
               {name: "team-a", label: "└ team-a", quota: "8", limit: "8"},
               {name: "team-b", label: "└ team-b", quota: "2", limit: "–"}],
      gang: {name: "big", reason: "^mlbigteam-atrainPreScheduling0 / 33.*held by its queue \"team-a\" \\(limit\\): queue \"team-a\" limit: gpu 0 \\+ 12 > 8"},
      pending: {ns: "ml", name: "huge", reason: "no node of pool train fits it \\(2 evaluated\\)",
                decision: "outcome: unschedulable.*Nodes filtered out.*2 × Insufficient cpu"},
      fraction: {node: "infer-0", pod: "ml/frac", fraction: "0.5"},
      bind: {pool: "infer", cpuDelta: 1}
    }' >"$CP_WORK/expect.json"
    # the pod that binds: 1 CPU in infer (room there), created by the driver
    # once the overview is on screen, then waited for until bound
    pod_json late --ns ml --pool infer --cpu 1 --label "$QLABEL=team-b" >"$CP_WORK/late.json"
    cat >"$CP_WORK/bind.sh" <<EOF
set -e
c() { curl -sS --max-time 10 --cacert "$CP_WORK/pki/ca.crt" --cert "$CP_WORK/pki/admin.crt" --key "$CP_WORK/pki/admin.key" "\$@"; }
c -H 'Content-Type: application/json' --data-binary @"$CP_WORK/late.json" "$API_URL/api/v1/namespaces/ml/pods" >/dev/null
for _ in \$(seq 400); do
    [ -n "\$(c "$API_URL/api/v1/namespaces/ml/pods/late" | jq -r '.spec.nodeName // ""')" ] && exit 0
    sleep 0.05
done
echo "bind.sh: ml/late did not bind in 20 s" >&2
exit 1
EOF
    DASH_URL=$(base) DASH_TOKEN=$(cat "$CP_WORK/viewer.token") DASH_TOKEN_NORIGHTS=$(cat "$CP_WORK/nobody.token") \
        DASH_EXPECT=$CP_WORK/expect.json DASH_BIND_CMD="bash $CP_WORK/bind.sh" \
        node "$REPO/test/browser/dashboard.mjs" --e2e >&2 || fail "the dashboard in Chromium (see above)"
}

case_clean() {
    grep -qF -- "$(cut -d. -f3 "$CP_WORK/viewer.token")" "$CP_WORK"/scheduler.*.log && fail "a token is in the scheduler log"
    stop_scheduler_clean
}

cp_start
setup
run_case api-ready case_api_ready
run_case browser case_browser
run_case clean case_clean
finish
