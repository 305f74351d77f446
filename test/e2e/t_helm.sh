#!/usr/bin/env bash
# shellcheck disable=SC2016 source-path=SCRIPTDIR
# The Helm chart (charts/ai-scheduler): lints, renders, and every rendered
# object passes the real API server's validation (kubectl apply
# --dry-run=server); its RBAC, applied for real, grants what the scheduler
# needs and no more; the scheduler starts with the chart's configuration; the
# chart's CRDs (Pool, PodGroup, Queue) are installed only where missing.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=helm/

CHART=$REPO/charts/ai-scheduler
HELM=$(bash "$E2E_DIR/get-helm.sh") || die "no helm (test/e2e/get-helm.sh failed)"

render() { # render RELEASE NAMESPACE [helm args...]
    local rel=$1 ns=$2
    shift 2
    "$HELM" template "$rel" "$CHART" --namespace "$ns" "$@"
}

case_lint() {
    "$HELM" lint --strict "$CHART" >&2 || fail "helm lint failed"
    "$HELM" lint --strict "$CHART" --set replicas=1,leaderElection.enabled=false,scoring.strategy=LeastAllocated >&2 ||
        fail "helm lint (single replica) failed"
}

# The chart ships the same CRD as pools/crd.yaml, and it installs for real.
case_crd() {
    if [ -f "$REPO/pools/crd.yaml" ]; then
        diff -u "$REPO/pools/crd.yaml" "$CHART/crds/pools.yaml" >&2 ||
            fail "charts/ai-scheduler/crds/pools.yaml differs from pools/crd.yaml"
    fi
    kc apply -f "$CHART/crds/pools.yaml" >/dev/null || fail "CRD did not apply"
    wait_until 'kc get crd pools.resource.aibee.cn -o json | jq -e ".status.conditions[] | select(.type==\"Established\" and .status==\"True\")" >/dev/null' 30 ||
        fail "CRD pools.resource.aibee.cn not established"
    # A Pool from the examples is accepted against the chart's schema.
    if [ -f "$REPO/pools/gpu-pool.yaml" ]; then
        kc apply --dry-run=server -f "$REPO/pools/gpu-pool.yaml" >/dev/null || fail "pools/gpu-pool.yaml rejected"
    fi
    # The chart's crds/ hold the four CRDs.
    local names
    names=$(render x default --include-crds | kc create --dry-run=client -o json -f - |
        jq -r '(.items // [.])[] | select(.kind == "CustomResourceDefinition") | .metadata.name' | sort | tr '\n' ' ')
    [ "$names" = "multiclusterjobs.resource.aibee.cn podgroups.scheduling.x-k8s.io pools.resource.aibee.cn queues.resource.aibee.cn " ] ||
        fail "chart CRDs: $names"
}

PG_API=/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups

# The chart's PodGroup CRD is pools/podgroup-crd.yaml (cp_start installed
# that one): scheduler-plugins' schema, the status subresource, the short
# names and printer columns; the gang examples pass its validation.
case_podgroup_crd() {
    diff -u "$REPO/pools/podgroup-crd.yaml" "$CHART/crds/podgroups.yaml" >&2 ||
        fail "charts/ai-scheduler/crds/podgroups.yaml differs from pools/podgroup-crd.yaml"
    wait_until 'kc get crd podgroups.scheduling.x-k8s.io -o json | jq -e ".status.conditions[] | select(.type==\"Established\" and .status==\"True\")"' 30 ||
        fail "CRD podgroups.scheduling.x-k8s.io not established"
    local f
    for f in "$REPO"/examples/*gang*.yaml; do
        kc apply --dry-run=server -f "$f" >/dev/null || fail "$f rejected"
    done
    # Wrong types and bad quantities are refused by the schema.
    local bad
    for bad in '{"minMember": "three"}' '{"minMember": 2, "minResources": {"cpu": "lots"}}' \
        '{"minMember": 2, "scheduleTimeoutSeconds": "1m"}'; do
        if jq -n --argjson s "$bad" '{apiVersion: "scheduling.x-k8s.io/v1alpha1", kind: "PodGroup", metadata: {name: "bad"}, spec: $s}' |
            kc create --dry-run=server -f - >/dev/null 2>&1; then
            fail "a PodGroup with spec $bad was accepted"
        fi
    done
    # Status goes through the subresource only; the columns show it.
    jq -n '{apiVersion: "scheduling.x-k8s.io/v1alpha1", kind: "PodGroup", metadata: {name: "cols"},
            spec: {minMember: 3, minResources: {cpu: "12", "nvidia.com/gpu": 6}, scheduleTimeoutSeconds: 30}}' |
        kc create -f - >/dev/null || fail "PodGroup create failed"
    kc patch podgroup cols --type=merge -p '{"status": {"phase": "Failed"}}' >/dev/null 2>&1 || true
    [ "$(kc get pg cols -o jsonpath='{.status.phase}')" = "" ] || fail "status written through the main resource"
    api_req PATCH "$PG_API/cols/status" -H 'Content-Type: application/merge-patch+json' -f -o /dev/null \
        --data '{"status": {"phase": "Scheduled", "scheduled": 3, "running": 2, "succeeded": 0, "failed": 0,
                 "occupiedBy": "uid-1", "scheduleStartTime": "2026-01-02T03:04:05Z"}}' || fail "status patch failed"
    local out
    out=$(kc get pgs cols --no-headers) || fail "kubectl get pgs failed"
    echo "$out" >&2
    [ "$(kc get pg cols | head -1 | awk '{print $1, $2, $3, $4, $5, $6}')" = "NAME PHASE MINMEMBER SCHEDULED RUNNING AGE" ] ||
        fail "printer columns: $(kc get pg cols | head -1)"
    [ "$(awk '{print $1, $2, $3, $4, $5}' <<<"$out")" = "cols Scheduled 3 3 2" ] || fail "columns show: $out"
    [ "$(kc get pg cols -o wide | head -1 | awk '{print $6, $7}')" = "SUCCEEDED FAILED" ] || fail "no wide columns"
    [ "$(kc get podgroup cols -o jsonpath='{.status.scheduleStartTime} {.status.occupiedBy}')" = "2026-01-02T03:04:05Z uid-1" ] ||
        fail "status fields not kept"
    kc delete pg cols >/dev/null || true
}

QUEUE_API=/apis/resource.aibee.cn/v1alpha1/queues

# The chart's Queue CRD is pools/queue-crd.yaml (cp_start installed that one):
# cluster-scoped, KAI's field names, floats allowed, the status subresource,
# the printer columns; examples/queues.yaml passes its validation.
case_queue_crd() {
    diff -u "$REPO/pools/queue-crd.yaml" "$CHART/crds/queues.yaml" >&2 ||
        fail "charts/ai-scheduler/crds/queues.yaml differs from pools/queue-crd.yaml"
    wait_until 'kc get crd queues.resource.aibee.cn -o json | jq -e ".status.conditions[] | select(.type==\"Established\" and .status==\"True\")"' 30 ||
        fail "CRD queues.resource.aibee.cn not established"
    [ "$(kc get crd queues.resource.aibee.cn -o jsonpath='{.spec.scope}')" = Cluster ] || fail "Queue is not cluster-scoped"
    if [ -f "$REPO/examples/queues.yaml" ]; then
        kc apply --dry-run=server -f "$REPO/examples/queues.yaml" >/dev/null || fail "examples/queues.yaml rejected"
    fi
    local bad
    for bad in '{"parentQueue": 3}' '{"priority": "high"}' '{"resources": {"gpu": {"quota": "8"}}}' \
        '{"pools": {"gpu-pool": {"resources": {"cpu": {"limit": "lots"}}}}}' '{"excessBudget": {"gpu": "1h"}}'; do
        if jq -n --argjson s "$bad" '{apiVersion: "resource.aibee.cn/v1alpha1", kind: "Queue", metadata: {name: "bad"}, spec: $s}' |
            kc create --dry-run=server -f - >/dev/null 2>&1; then
            fail "a Queue with spec $bad was accepted"
        fi
    done
    jq -n '{apiVersion: "resource.aibee.cn/v1alpha1", kind: "Queue", metadata: {name: "cols"},
            spec: {parentQueue: "dept", priority: 1, resources: {gpu: {quota: 2.5, overQuotaWeight: 1, limit: -1},
                   cpu: {quota: 8000}, memory: {quota: 32000}},
                   pools: {"gpu-pool": {resources: {gpu: {quota: 4}}}}, excessBudget: {gpu: 3600}}}' |
        kc create -f - >/dev/null || fail "Queue create failed"
    [ "$(kc get queue cols -o jsonpath='{.spec.resources.gpu.quota} {.spec.pools.gpu-pool.resources.gpu.quota}')" = "2.5 4" ] ||
        fail "spec not kept: $(kc get queue cols -o json | jq -c .spec)"
    kc patch queue cols --type=merge -p '{"status": {"state": "Invalid"}}' >/dev/null 2>&1 || true
    [ "$(kc get queue cols -o jsonpath='{.status.state}')" = "" ] || fail "status written through the main resource"
    api_req PATCH "$QUEUE_API/cols/status" -H 'Content-Type: application/merge-patch+json' -f -o /dev/null \
        --data '{"status": {"allocated": {"gpu": 3, "cpu": 6000, "memory": 1024}, "fairShare": {"gpu": 2.5},
                 "requested": {"gpu": 4}, "pending": 1, "state": "Active",
                 "pools": [{"name": "gpu-pool", "allocated": {"gpu": 3}, "pending": 1}]}}' || fail "status patch failed"
    [ "$(kc get queue cols | head -1 | awk '{print $1, $2, $3, $4, $5, $6, $7}')" = "NAME PARENT GPU-QUOTA GPU-ALLOCATED GPU-FAIRSHARE PENDING AGE" ] ||
        fail "printer columns: $(kc get queue cols | head -1)"
    [ "$(kc get queue cols --no-headers | awk '{print $1, $2, $3, $4, $5, $6}')" = "cols dept 2.5 3 2.5 1" ] ||
        fail "columns show: $(kc get queue cols --no-headers)"
    [ "$(kc get queue cols -o wide | head -1 | awk '{print $8}')" = STATE ] || fail "no wide column State"
    [ "$(kc get queue cols -o jsonpath='{.status.pools[0].name}')" = gpu-pool ] || fail "status.pools not kept"
    kc delete queue cols >/dev/null || true
}

# Defaults into kube-system: every object passes server-side validation.
case_dry_run_defaults() {
    local out kinds
    render ai-scheduler kube-system >"$CP_WORK/helm-default.yaml" || fail "helm template failed"
    out=$(kc apply --dry-run=server -f "$CP_WORK/helm-default.yaml" 2>&1) || { echo "$out" >&2; fail "dry-run apply failed"; }
    echo "$out" >&2
    for kinds in serviceaccount/ai-scheduler clusterrole.rbac.authorization.k8s.io/ai-scheduler \
        clusterrolebinding.rbac.authorization.k8s.io/ai-scheduler role.rbac.authorization.k8s.io/ai-scheduler-leader-election \
        rolebinding.rbac.authorization.k8s.io/ai-scheduler-leader-election configmap/ai-scheduler \
        clusterrole.rbac.authorization.k8s.io/ai-scheduler-debug-reader role.rbac.authorization.k8s.io/ai-scheduler-debug-proxy \
        clusterrole.rbac.authorization.k8s.io/ai-scheduler-dashboard-viewer \
        role.rbac.authorization.k8s.io/ai-scheduler-dashboard-port-forward \
        deployment.apps/ai-scheduler service/ai-scheduler-metrics; do
        grep -q "^$kinds " <<<"$out" || fail "dry-run did not handle $kinds"
    done
    # The dashboard viewer holds exactly what the dashboard's routes ask
    # (pkg/dashboard/dashboard.h) and the explain routes a click reads.
    local viewer
    viewer=$(kc create --dry-run=client -o json -f "$CP_WORK/helm-default.yaml" 2>/dev/null |
        jq -sc '[.[] | (.items // [.])[] | select(.kind=="ClusterRole" and .metadata.name=="ai-scheduler-dashboard-viewer")
        | .rules[] | "\(.apiGroups | join(",")):\(.resources | join(",")):\(.verbs | join(","))"] | sort')
    [ "$viewer" = '[":pods:get,list","resource.aibee.cn:multiclusterjobs:list","resource.aibee.cn:pools:get","scheduling.x-k8s.io:podgroups:get,list"]' ] ||
        fail "dashboard-viewer rules: $viewer"
    # Two replicas, non-root, read-only root, probes on the metrics port.
    local dep
    dep=$(kc create --dry-run=client -o json -f "$CP_WORK/helm-default.yaml" 2>/dev/null |
        jq -c '(.items // [.])[] | select(.kind=="Deployment")')
    [ "$(jq '.spec.replicas' <<<"$dep")" = 2 ] || fail "want 2 replicas"
    [ "$(jq '.spec.template.spec.securityContext.runAsNonRoot' <<<"$dep")" = true ] || fail "not runAsNonRoot"
    [ "$(jq '.spec.template.spec.containers[0].securityContext.readOnlyRootFilesystem' <<<"$dep")" = true ] ||
        fail "root filesystem is writable"
    [ "$(jq -r '.spec.template.spec.containers[0].readinessProbe.httpGet.path' <<<"$dep")" = /readyz ] || fail "no /readyz probe"
    [ "$(jq -r '.spec.template.spec.containers[0].livenessProbe.httpGet.path' <<<"$dep")" = /healthz ] || fail "no /healthz probe"
    [ "$(jq -r '[.spec.template.spec.containers[0] | .readinessProbe, .livenessProbe | .httpGet.scheme] | join(",")' <<<"$dep")" = HTTPS,HTTPS ] ||
        fail "the probes are not HTTPS"
    # the leader identity names its pod (ai-scheduler debug finds the leader from the Lease)
    [ "$(jq -r '[.spec.template.spec.containers[0].env[] | select(.name == "POD_NAME" or .name == "POD_NAMESPACE")
        | .valueFrom.fieldRef.fieldPath] | join(",")' <<<"$dep")" = metadata.name,metadata.namespace ] ||
        fail "POD_NAME and POD_NAMESPACE do not come from the downward API"
}

# Overrides into another namespace with the lease elsewhere.
case_dry_run_overrides() {
    kc create namespace ai-sched >/dev/null 2>&1 || true
    kc create namespace leases >/dev/null 2>&1 || true
    render sched ai-sched --set replicas=3,logLevel=4,disablePreemption=true \
        --set scoring.strategy=LeastAllocated,clientConnection.qps=50,clientConnection.burst=100 \
        --set leaderElection.resourceNamespace=leases,leaderElection.resourceName=my-lease \
        --set metrics.port=9100,podAntiAffinity=hard,image.tag=v9 \
        --set-json 'tolerations=[{"key":"node-role.kubernetes.io/master","operator":"Exists","effect":"NoSchedule"}]' \
        --set-json 'nodeSelector={"node-role.kubernetes.io/master":""}' \
        >"$CP_WORK/helm-over.yaml" || fail "helm template failed"
    kc apply --dry-run=server -f "$CP_WORK/helm-over.yaml" >&2 || fail "dry-run apply failed"
    grep -q 'namespace: leases' "$CP_WORK/helm-over.yaml" || fail "the lease Role is not in the lease namespace"
    grep -q 'image: "ai-scheduler:v9"' "$CP_WORK/helm-over.yaml" || fail "image tag not applied"
    # Several active replicas without an election must be refused.
    if render x default --set replicas=2,leaderElection.enabled=false >/dev/null 2>&1; then
        fail "replicas=2 without leader election rendered"
    fi
    if render x default --set scoring.strategy=Random >/dev/null 2>&1; then
        fail "a bad scoring strategy rendered"
    fi
    if render x default --set gang.scheduleTimeoutSeconds=0 >/dev/null 2>&1; then
        fail "gang.scheduleTimeoutSeconds=0 rendered"
    fi
    if render x default --set queues.starvationAgeSeconds=-1 >/dev/null 2>&1; then
        fail "queues.starvationAgeSeconds=-1 rendered"
    fi
    # Single replica without election: no lease Role at all.
    render solo default --set replicas=1,leaderElection.enabled=false >"$CP_WORK/helm-solo.yaml" || fail "solo render failed"
    ! grep -q 'name: solo-ai-scheduler-leader-election$' "$CP_WORK/helm-solo.yaml" || fail "a lease Role without leader election"
    grep -q 'name: solo-ai-scheduler-gpu-reservations$' "$CP_WORK/helm-solo.yaml" || fail "no GPU reservation Role"
    kc apply --dry-run=server -f "$CP_WORK/helm-solo.yaml" >/dev/null || fail "solo dry-run failed"
}

# RBAC applied for real; the service account can do its job and no more.
case_rbac_least_privilege() {
    render rbactest kube-system --show-only templates/serviceaccount.yaml --show-only templates/rbac.yaml |
        kc apply -f - >/dev/null || fail "RBAC apply failed"
    local sa=system:serviceaccount:kube-system:rbactest-ai-scheduler
    can() { kc auth can-i --as "$sa" "$@" 2>/dev/null; }
    local ok
    for ok in "list nodes" "watch pods" "get namespaces" "create pods --subresource=binding" \
        "create pods --subresource=eviction" "patch pods --subresource=status" "update pods --subresource=status" \
        "patch pods" "create events" "create events.events.k8s.io" "list poddisruptionbudgets.policy" \
        "watch pools.resource.aibee.cn" "update pools.resource.aibee.cn --subresource=status" \
        "-n kube-system create leases.coordination.k8s.io" "-n kube-system get leases.coordination.k8s.io/ai-scheduler" \
        "-n kube-system update leases.coordination.k8s.io/ai-scheduler" \
        "watch persistentvolumes" "patch persistentvolumes" "patch persistentvolumeclaims" \
        "list storageclasses.storage.k8s.io" "watch csinodes.storage.k8s.io" \
        "list podgroups.scheduling.x-k8s.io -A" "watch podgroups.scheduling.x-k8s.io -A" "get podgroups.scheduling.x-k8s.io" \
        "patch podgroups.scheduling.x-k8s.io --subresource=status" "update podgroups.scheduling.x-k8s.io --subresource=status" \
        "list queues.resource.aibee.cn" "watch queues.resource.aibee.cn" "get queues.resource.aibee.cn" \
        "patch queues.resource.aibee.cn --subresource=status" \
        "-n kube-system create pods" "-n kube-system delete pods" \
        "create podgroups.scheduling.x-k8s.io" "patch podgroups.scheduling.x-k8s.io" \
        "get deployments.apps" "get jobs.batch" "get cronjobs.batch" "list priorityclasses.scheduling.k8s.io"; do
        # shellcheck disable=SC2086
        [ "$(can $ok)" = yes ] || fail "service account cannot: $ok"
    done
    local no
    for no in "delete pods" "create pods" "update nodes" "get secrets" "list secrets -A" "create pools.resource.aibee.cn" \
        "update pools.resource.aibee.cn" "delete pools.resource.aibee.cn" "-n kube-system update leases.coordination.k8s.io/other" \
        "-n default create leases.coordination.k8s.io" "-n kube-system delete leases.coordination.k8s.io/ai-scheduler" \
        "delete persistentvolumes" "create persistentvolumeclaims" "update storageclasses.storage.k8s.io" \
        "update podgroups.scheduling.x-k8s.io" "delete podgroups.scheduling.x-k8s.io" \
        "list deployments.apps" "patch deployments.apps" "update jobs.batch" "list jobs.batch" \
        "create priorityclasses.scheduling.k8s.io" "create queues.resource.aibee.cn" "patch queues.resource.aibee.cn" \
        "update queues.resource.aibee.cn" "delete queues.resource.aibee.cn"; do
        # shellcheck disable=SC2086
        [ "$(can $no)" = no ] || fail "service account can: $no"
    done
    render rbactest kube-system --show-only templates/serviceaccount.yaml --show-only templates/rbac.yaml |
        kc delete -f - >/dev/null 2>&1 || true
}

# dispatch.enabled adds the MultiClusterJob controller: its own account, a
# Deployment running `ai-scheduler dispatch`, and RBAC that reads Secrets by
# name only and writes MultiClusterJobs' finalizers and status, nothing else.
case_dispatch() {
    diff -u "$REPO/pools/multiclusterjob-crd.yaml" "$CHART/crds/multiclusterjobs.yaml" >&2 ||
        fail "charts/ai-scheduler/crds/multiclusterjobs.yaml differs from pools/multiclusterjob-crd.yaml"
    kc apply -f "$CHART/crds/multiclusterjobs.yaml" >/dev/null || fail "CRD did not apply"
    wait_until 'kc get crd multiclusterjobs.resource.aibee.cn -o json | jq -e ".status.conditions[] | select(.type==\"Established\" and .status==\"True\")"' 30 ||
        fail "CRD multiclusterjobs not established"
    ! render x default | grep -q 'dispatch' || fail "dispatch objects rendered while disabled"
    render dsp kube-system --set dispatch.enabled=true,dispatch.pollIntervalSeconds=0.5 >"$CP_WORK/helm-dsp.yaml" ||
        fail "helm template failed"
    kc apply --dry-run=server -f "$CP_WORK/helm-dsp.yaml" >/dev/null || fail "dry-run apply failed"
    local dep
    dep=$(kc create --dry-run=client -o json -f "$CP_WORK/helm-dsp.yaml" 2>/dev/null |
        jq -c '(.items // [.])[] | select(.kind=="Deployment" and .metadata.name=="dsp-ai-scheduler-dispatch")')
    [ -n "$dep" ] || fail "no dispatch Deployment"
    jq -e '.spec.template.spec.containers[0].args | index("dispatch") == 0 and index("--poll-interval=0.5") and index("--leader-elect=true")' \
        <<<"$dep" >/dev/null || fail "dispatch args: $(jq -c '.spec.template.spec.containers[0].args' <<<"$dep")"
    [ "$(jq -r .spec.template.spec.serviceAccountName <<<"$dep")" = dsp-ai-scheduler-dispatch ] || fail "service account"
    kc apply -f "$CP_WORK/helm-dsp.yaml" --dry-run=client -o json |
        jq '(.items // [.]) | map(select(.kind != "Deployment" and .kind != "Service" and .kind != "ConfigMap")) | {apiVersion: "v1", kind: "List", items: .}' |
        kc apply -f - >/dev/null || fail "RBAC apply failed"
    local sa=system:serviceaccount:kube-system:dsp-ai-scheduler-dispatch
    can() { kc auth can-i --as "$sa" "$@" 2>/dev/null; }
    local ok no
    for ok in "watch multiclusterjobs.resource.aibee.cn -A" "patch multiclusterjobs.resource.aibee.cn" \
        "patch multiclusterjobs.resource.aibee.cn --subresource=status" "-n team get secrets/member-a" \
        "create events" "-n kube-system create leases.coordination.k8s.io" \
        "-n kube-system update leases.coordination.k8s.io/ai-scheduler-dispatch" \
        "create tokenreviews.authentication.k8s.io" "create subjectaccessreviews.authorization.k8s.io"; do
        # shellcheck disable=SC2086
        [ "$(can $ok)" = yes ] || fail "dispatch account cannot: $ok"
    done
    for no in "list secrets -A" "watch secrets" "create pods" "create pods --subresource=binding" \
        "delete multiclusterjobs.resource.aibee.cn" "create multiclusterjobs.resource.aibee.cn" \
        "-n kube-system update leases.coordination.k8s.io/ai-scheduler"; do
        # shellcheck disable=SC2086
        [ "$(can $no)" = no ] || fail "dispatch account can: $no"
    done
    kc apply -f "$CP_WORK/helm-dsp.yaml" --dry-run=client -o json |
        jq '(.items // [.]) | map(select(.kind != "Deployment" and .kind != "Service" and .kind != "ConfigMap")) | {apiVersion: "v1", kind: "List", items: .}' |
        kc delete -f - >/dev/null 2>&1 || true
}

# Serving (issue 25): HTTPS by default (self-signed, POD_IP a SAN), a TLS
# Secret mounted and passed when given, metrics.open adds /metrics to the
# always-allowed paths, clientCAFile passed; the metrics-reader ClusterRole
# (get on the non-resource URL /metrics) bound to no one; Prometheus told https.
case_serving() {
    local y dep
    y=$(render s kube-system --set dispatch.enabled=true | kc create --dry-run=client -o json -f - 2>/dev/null)
    [ "$(jq -r '(.items // [.])[] | select(.kind=="ConfigMap") | .data["config.yaml"]' <<<"$y" | sed -n '/^serving:/,/^[a-z]/p' | head -2 | tail -1)" = '  authorizationAlwaysAllowPaths: "/healthz,/readyz,/livez"' ] ||
        fail "default serving config: $(jq -r '(.items // [.])[] | select(.kind=="ConfigMap") | .data["config.yaml"]' <<<"$y" | sed -n '/^serving:/,/^[a-z]/p')"
    [ "$(jq -c '(.items // [.])[] | select(.kind=="ClusterRole" and .metadata.name=="s-ai-scheduler-metrics-reader") | .rules' <<<"$y")" = '[{"nonResourceURLs":["/metrics"],"verbs":["get"]}]' ] ||
        fail "no metrics-reader ClusterRole"
    ! jq -e '(.items // [.])[] | select(.kind=="ClusterRoleBinding" or .kind=="RoleBinding") | select(.roleRef.name=="s-ai-scheduler-metrics-reader")' <<<"$y" >/dev/null ||
        fail "the metrics-reader ClusterRole is bound"
    [ "$(jq -r '(.items // [.])[] | select(.kind=="Service") | .metadata.annotations["prometheus.io/scheme"]' <<<"$y")" = https ] ||
        fail "no prometheus.io/scheme: https"
    dep=$(jq -c '(.items // [.])[] | select(.kind=="Deployment" and .metadata.name=="s-ai-scheduler")' <<<"$y")
    [ "$(jq -r '.spec.template.spec.containers[0].env[] | select(.name=="POD_IP") | .valueFrom.fieldRef.fieldPath' <<<"$dep")" = status.podIP ] ||
        fail "no POD_IP"
    dep=$(jq -c '(.items // [.])[] | select(.kind=="Deployment" and .metadata.name=="s-ai-scheduler-dispatch")' <<<"$y")
    [ "$(jq -r '[.spec.template.spec.containers[0] | .readinessProbe, .livenessProbe | .httpGet.scheme] | join(",")' <<<"$dep")" = HTTPS,HTTPS ] ||
        fail "the dispatch probes are not HTTPS"
    ! jq -e '.spec.template.spec.containers[0].args | map(select(startswith("--tls") or startswith("--authorization") or startswith("--client-ca"))) | length > 0' <<<"$dep" >/dev/null ||
        fail "serving flags by default: $(jq -c '.spec.template.spec.containers[0].args' <<<"$dep")"

    y=$(render s kube-system --set dispatch.enabled=true,tls.secretName=sched-tls,metrics.open=true \
        --set clientCAFile=/etc/ai-scheduler-tls/ca.crt | kc create --dry-run=client -o json -f - 2>/dev/null)
    [ "$(jq -r '(.items // [.])[] | select(.kind=="ConfigMap") | .data["config.yaml"]' <<<"$y" | sed -n '/^serving:/,/^[a-z]/p' | sed '$d')" = 'serving:
  tlsCertFile: /etc/ai-scheduler-tls/tls.crt
  tlsPrivateKeyFile: /etc/ai-scheduler-tls/tls.key
  clientCAFile: "/etc/ai-scheduler-tls/ca.crt"
  authorizationAlwaysAllowPaths: "/healthz,/readyz,/livez,/metrics"' ] ||
        fail "serving config: $(jq -r '(.items // [.])[] | select(.kind=="ConfigMap") | .data["config.yaml"]' <<<"$y" | sed -n '/^serving:/,/^[a-z]/p')"
    local name
    for name in s-ai-scheduler s-ai-scheduler-dispatch; do
        dep=$(jq -c --arg n "$name" '(.items // [.])[] | select(.kind=="Deployment" and .metadata.name==$n)' <<<"$y")
        [ "$(jq -r '.spec.template.spec.volumes[] | select(.name=="tls") | .secret.secretName' <<<"$dep")" = sched-tls ] ||
            fail "$name: no tls volume"
        [ "$(jq -r '.spec.template.spec.containers[0].volumeMounts[] | select(.name=="tls") | .mountPath' <<<"$dep")" = /etc/ai-scheduler-tls ] ||
            fail "$name: tls not mounted"
    done
    jq -e '.spec.template.spec.containers[0].args | index("--tls-cert-file=/etc/ai-scheduler-tls/tls.crt") and index("--tls-private-key-file=/etc/ai-scheduler-tls/tls.key") and index("--client-ca-file=/etc/ai-scheduler-tls/ca.crt") and index("--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics")' \
        <<<"$dep" >/dev/null || fail "dispatch serving args: $(jq -c '.spec.template.spec.containers[0].args' <<<"$dep")"
    render s kube-system --set dispatch.enabled=true,tls.secretName=sched-tls >"$CP_WORK/helm-tls.yaml" || fail "render"
    kc apply --dry-run=server -f "$CP_WORK/helm-tls.yaml" >/dev/null || fail "dry-run apply with tls.secretName failed"
}

# The scheduler accepts the chart's configuration file as rendered.
case_config_accepted() {
    [ -x "$AISCHED_BIN" ] || fail "no scheduler binary $AISCHED_BIN"
    render ai-scheduler kube-system --show-only templates/configmap.yaml --set logLevel=2 \
        --set gang.scheduleTimeoutSeconds=120 --set gang.staleGraceSeconds=30 --set gang.evictStale=true \
        --set queues.usageHalfLifeSeconds=300 --set queues.starvationAgeSeconds=120 --set queues.nonPreemptiblePriority=50 |
        kc create --dry-run=client -o json -f - | jq -r '.data["config.yaml"]' >"$CP_WORK/chart-config.yaml"
    grep -q '^kind: AiSchedulerConfiguration' "$CP_WORK/chart-config.yaml" || fail "no config in the ConfigMap"
    grep -q '^gangScheduleTimeoutSeconds: 120$' "$CP_WORK/chart-config.yaml" &&
        grep -q '^staleGangGraceSeconds: 30$' "$CP_WORK/chart-config.yaml" &&
        grep -q '^evictStaleGangs: true$' "$CP_WORK/chart-config.yaml" || fail "gang values not in the config"
    grep -q '^usageHalfLifeSeconds: 300$' "$CP_WORK/chart-config.yaml" &&
        grep -q '^starvationAgeSeconds: 120$' "$CP_WORK/chart-config.yaml" &&
        grep -q '^nonPreemptiblePriority: 50$' "$CP_WORK/chart-config.yaml" || fail "queues values not in the config"
    start_scheduler --config "$CP_WORK/chart-config.yaml"
    sleep 3
    sched_alive || { sched_log_tail; fail "scheduler exited with the chart's config"; }
    grep -qiE 'unknown key|is not a|expected' "$CP_WORK/scheduler.log" && { sched_log_tail; fail "config complaints in the log"; }
    stop_scheduler_clean
    # And it really reads the file: a bad key stops it with the file's line.
    printf '%s\nleaderElection:\n  leaseDuraton: 15s\n' "$(head -2 "$CP_WORK/chart-config.yaml")" >"$CP_WORK/bad-config.yaml"
    start_scheduler --config "$CP_WORK/bad-config.yaml"
    wait_until '[ -s "$CP_WORK/sched.rc" ]' 20 || fail "scheduler kept running with a bad config"
    [ "$(cat "$CP_WORK/sched.rc")" != 0 ] || fail "scheduler exited 0 with a bad config"
    grep -q 'bad-config.yaml:4: unknown key "leaseDuraton" in leaderElection' "$CP_WORK/scheduler.log" ||
        { sched_log_tail; fail "no file:line message for the bad key"; }
    stop_scheduler || true
}

# helm install creates a CRD of crds/ only where none exists: it installs
# the PodGroup CRD on a cluster without one, and leaves another copy (here
# one like scheduler-plugins' current file, without status.scheduled)
# untouched through install and upgrade. Helm never deletes them.
case_install_crds_only_when_missing() {
    local crd=podgroups.scheduling.x-k8s.io h=("$HELM" --kubeconfig "$ADMIN_KUBECONFIG" -n kube-system)
    local set=(--set replicas=1 --set leaderElection.enabled=false)
    kc delete crd "$crd" >/dev/null || fail "CRD delete failed"
    wait_until "! kc get crd $crd" 30 || fail "CRD not deleted"
    "${h[@]}" install crdtest "$CHART" "${set[@]}" >&2 || fail "helm install failed"
    wait_until 'kc get crd '"$crd"' -o json | jq -e ".status.conditions[] | select(.type==\"Established\" and .status==\"True\")"' 30 ||
        fail "helm install did not create $crd"
    kc get crd "$crd" -o json | jq -e '.spec.versions[0].schema.openAPIV3Schema.properties.status.properties.scheduled' >/dev/null ||
        fail "the installed CRD is not the chart's"
    "${h[@]}" uninstall crdtest >&2 || fail "helm uninstall failed"
    kc get crd "$crd" >/dev/null || fail "helm uninstall deleted $crd"

    # Someone else's CRD: kept as it is.
    use_upstream_podgroup_crd
    local rv
    rv=$(kc get crd "$crd" -o jsonpath='{.metadata.resourceVersion}')
    "${h[@]}" install crdtest "$CHART" "${set[@]}" >&2 || fail "helm install over a foreign CRD failed"
    "${h[@]}" upgrade crdtest "$CHART" "${set[@]}" --set logLevel=2 >&2 || fail "helm upgrade failed"
    [ "$(kc get crd "$crd" -o jsonpath='{.metadata.labels.owner}')" = scheduler-plugins ] || fail "the foreign CRD was replaced"
    ! kc get crd "$crd" -o json | jq -e '.spec.versions[0].schema.openAPIV3Schema.properties.status.properties.scheduled' >/dev/null ||
        fail "the foreign CRD was changed"
    [ "$(kc get crd "$crd" -o jsonpath='{.metadata.resourceVersion}')" = "$rv" ] || fail "the foreign CRD was written"
    "${h[@]}" uninstall crdtest >&2 || fail "helm uninstall failed"

    use_repo_podgroup_crd
}

# use_upstream_podgroup_crd: replaces the PodGroup CRD with one like
# scheduler-plugins' current file (no status.scheduled, minMember >= 1),
# labelled owner=scheduler-plugins. use_repo_podgroup_crd: back to ours.
use_upstream_podgroup_crd() {
    local crd=podgroups.scheduling.x-k8s.io
    kc delete crd "$crd" >/dev/null 2>&1 || true
    wait_until "! kc get crd $crd" 30 || fail "CRD not deleted"
    kc create --dry-run=client -o json -f "$REPO/pools/podgroup-crd.yaml" |
        jq '.metadata.labels = {"owner": "scheduler-plugins"} |
            del(.spec.versions[0].schema.openAPIV3Schema.properties.status.properties.scheduled) |
            .spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.minMember.minimum = 1 |
            .spec.versions[0].additionalPrinterColumns |= map(select(.name != "Scheduled"))' |
        kc create -f - >/dev/null || fail "upstream-like CRD create failed"
    wait_until "kc get crd $crd -o json | jq -e '.status.conditions[] | select(.type==\"Established\" and .status==\"True\")'" 30 ||
        fail "upstream-like CRD not established"
}
use_repo_podgroup_crd() {
    kc delete crd podgroups.scheduling.x-k8s.io >/dev/null 2>&1 || true
    wait_until "! kc get crd podgroups.scheduling.x-k8s.io" 30 || fail "CRD not deleted"
    apply_podgroup_crd || fail "apply_podgroup_crd failed"
}

# A cluster that kept scheduler-plugins' CRD: gangs are placed all together
# and their status is written (the server drops only status.scheduled).
case_scheduler_with_upstream_crd() {
    use_upstream_podgroup_crd
    make_node gn-1 16 64Gi 4 110 || fail "node create failed"
    make_node gn-2 16 64Gi 4 110 || fail "node create failed"
    start_scheduler
    jq -n '{apiVersion: "scheduling.x-k8s.io/v1alpha1", kind: "PodGroup", metadata: {name: "up"}, spec: {minMember: 2}}' |
        kc create -f - >/dev/null || fail "PodGroup create failed"
    make_pods up 2 --gpu 4 --cpu 1 --label scheduling.x-k8s.io/pod-group=up || fail "pods create failed"
    wait_until '[ "$(count_bound scheduling.x-k8s.io/pod-group=up)" = 2 ]' 30 || fail "gang not placed"
    wait_until '[ "$(kc get pg up -o jsonpath="{.status.phase}")" = Scheduled ]' 15 ||
        fail "phase $(kc get pg up -o jsonpath='{.status.phase}'), want Scheduled"
    [ "$(kc get pg up -o jsonpath='{.status.scheduled}')" = "" ] || fail "status.scheduled kept by a CRD without it"
    # A gang that does not fit binds nothing.
    jq -n '{apiVersion: "scheduling.x-k8s.io/v1alpha1", kind: "PodGroup", metadata: {name: "big"}, spec: {minMember: 2}}' |
        kc create -f - >/dev/null || fail "PodGroup create failed"
    make_pods big 2 --gpu 4 --cpu 1 --label scheduling.x-k8s.io/pod-group=big || fail "pods create failed"
    wait_until 'events_for big default FailedScheduling | grep -q "pod group default/big: 0/2 members placeable"' 30 ||
        fail "no FailedScheduling event on the PodGroup"
    [ "$(count_bound scheduling.x-k8s.io/pod-group=big)" = 0 ] || fail "part of a gang that does not fit was bound"
    stop_scheduler_clean
    kc delete pg --all >/dev/null || true
    cp_reset
    use_repo_podgroup_crd
}

cp_start
run_case lint case_lint
run_case crd case_crd
run_case podgroup-crd case_podgroup_crd
run_case queue-crd case_queue_crd
run_case dry-run-defaults case_dry_run_defaults
run_case serving case_serving
run_case dry-run-overrides case_dry_run_overrides
run_case rbac-least-privilege case_rbac_least_privilege
run_case dispatch case_dispatch
run_case config-accepted case_config_accepted
run_case install-crds-only-when-missing case_install_crds_only_when_missing
run_case scheduler-with-upstream-crd case_scheduler_with_upstream_crd
finish
