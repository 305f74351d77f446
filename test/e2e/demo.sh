#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# make demo: a local control plane (etcd + kube-apiserver v1.20 on 127.0.0.1),
# the Pool CRD and pools/, the PodGroup CRD, the Queue CRD and
# examples/queues.yaml, a few fake nodes, bin/ai-scheduler, and the pods in
# examples/. Prints where each pod landed, why the impossible one did not,
# where each gang's members landed (PodGroups), a gang that does not fit with
# none of its pods bound, a MultiClusterJob raced between this cluster and a
# second control plane, a PyTorchJob made a gang from its pods' owner with no
# PodGroup written, the pool table and the queue tree with each queue's
# share, the web dashboard's JSON as a viewer sees it (HTTPS, a token), and
# today's pod fields (scheduling gates, native sidecars, DRA
# claims) through a stand-in API server; then stops everything it started.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
cd "$REPO" || exit 1

bash test/deps.sh e2e || exit 1
K8S_BIN=$(bash test/e2e/build-k8s.sh) || { echo "demo: could not build kube-apiserver" >&2; exit 1; }
export K8S_BIN
export AISCHED_BIN=${AISCHED_BIN:-$REPO/bin/ai-scheduler}
# shellcheck source=lib.sh
source "$HERE/lib.sh"
# shellcheck source=standin.sh
source "$HERE/standin.sh"
[ -x "$AISCHED_BIN" ] || die "no $AISCHED_BIN: run make first"

step() { printf '\n==> %s\n' "$*"; }

step "starting etcd and kube-apiserver on 127.0.0.1"
cp_start
echo "API server: $API_URL   admin kubeconfig: $ADMIN_KUBECONFIG"

if [ -f pools/crd.yaml ]; then
    step "Pool CRD and pools/"
    for f in pools/*.yaml; do
        case $f in pools/crd.yaml | pools/podgroup-crd.yaml | pools/queue-crd.yaml | pools/multiclusterjob-crd.yaml) continue ;; esac
        kc apply -f "$f"
    done
fi
# cp_start created the PodGroup CRD (apply_podgroup_crd: only when missing).
if kc get crd podgroups.scheduling.x-k8s.io >/dev/null 2>&1; then
    echo "PodGroup CRD podgroups.scheduling.x-k8s.io is installed"
fi
# cp_start created the Queue CRD too (apply_queue_crd); the queues come first,
# so the pods that name them find them.
if kc get crd queues.resource.aibee.cn >/dev/null 2>&1 && [ -f examples/queues.yaml ]; then
    step "Queue CRD and examples/queues.yaml: research (8 GPUs) -> team-a (6), team-b (2); inference (4, limit 4)"
    kc apply -f examples/queues.yaml
fi

step "nodes: 2 in cpu-pool (cpu=true), 2 in gpu-pool (gpu=true, 8 GPUs each), 3 unlabelled (default pool: 12 GPUs for the queues)"
make_node cpu-node-1 16 64Gi 0 110 cpu=true || die "node create failed"
make_node cpu-node-2 16 64Gi 0 110 cpu=true
make_node gpu-node-1 32 256Gi 8 110 gpu=true nvidia.com/gpu.product=A100 nvidia.com/gpu.memory=40960
make_node gpu-node-2 32 256Gi 8 110 gpu=true nvidia.com/gpu.product=A100 nvidia.com/gpu.memory=40960
make_node plain-node-1 4 8Gi 0 110
make_node gpu-node-3 32 256Gi 8 110 nvidia.com/gpu.product=A100
make_node gpu-node-4 16 128Gi 4 110 nvidia.com/gpu.product=A100
kc get nodes -L cpu,gpu

step "starting $AISCHED_BIN"
# its HTTP port on loopback: explain and whatif ask it below (--server), with the
# admin's bearer token (the /debug endpoints check it with a TokenReview)
DEMO_PORT=$(free_port)
DEMO_SERVER=$(sched_url "$DEMO_PORT") # HTTPS, self-signed: the CLI lines pass --insecure-skip-tls-verify
DEMO_TOKEN_KC=$CP_WORK/demo-token.kubeconfig
_write_kubeconfig "$DEMO_TOKEN_KC" e2e-admin token "$ADMIN_TOKEN"
start_scheduler --metrics-port "$DEMO_PORT" --metrics-bind-address 127.0.0.1

step "applying examples/ (the gangs come later)"
for f in examples/*.yaml; do
    case $f in *gang* | *multicluster* | *checkpoint* | *scheduler-config* | examples/queues.yaml | examples/pytorchjob.yaml) continue ;; esac
    kc apply -f "$f"
done

total=$(kc get pods -o name | wc -l)
want=$((total - 1))   # all but train-impossible
wait_until "[ \"\$(count_bound)\" -ge $want ] && events_for train-impossible default FailedScheduling | grep -q ." 60 ||
    echo "(not everything settled within 60s)"
sleep 1

step "where the pods landed"
kc get pods -o custom-columns='POD:.metadata.name,POOL:.metadata.annotations.resource\.aibee\.cn/pool,QUEUE:.metadata.labels.resource\.aibee\.cn/queue,CPU:.spec.containers[0].resources.requests.cpu,GPU:.spec.containers[0].resources.requests.nvidia\.com/gpu,NODE:.spec.nodeName,SCHEDULED:.status.conditions[?(@.type=="PodScheduled")].status'

step "GPU fractions (examples/gpu-fractions.yaml): packed onto shared GPUs, one reservation pod each"
kc get pods -l gpu-share=demo -o custom-columns='POD:.metadata.name,FRACTION:.metadata.annotations.gpu-fraction,GPU-MEMORY:.metadata.annotations.gpu-memory,NODE:.spec.nodeName,GPU-INDEX:.metadata.annotations.resource\.aibee\.cn/gpu-index'
kc get pods -n ai-scheduler-system -o custom-columns='RESERVATION:.metadata.name,NODE:.spec.nodeName,GPU-INDEX:.metadata.annotations.resource\.aibee\.cn/gpu-index,NVIDIA.COM/GPU:.spec.containers[0].resources.requests.nvidia\.com/gpu' 2>/dev/null ||
    echo "(no reservation pods)"

step "pod anti-affinity: the two web replicas on different nodes"
echo "web-1 -> $(pod_node web-1)   web-2 -> $(pod_node web-2)"

step "why train-impossible is pending"
events_for train-impossible default FailedScheduling | cut -f2 | sort -u
echo "condition: $(pod_condition train-impossible PodScheduled)"

step "ai-scheduler explain default/train-impossible: the leader's own last decision on it"
"$AISCHED_BIN" explain default/train-impossible --server "$DEMO_SERVER" --insecure-skip-tls-verify --kubeconfig "$DEMO_TOKEN_KC" ||
    echo "(explain failed)"

step "ai-scheduler whatif: would a 16-GPU pod fit in gpu-pool? and with two more 8-GPU nodes? (nothing is written)"
cat >"$CP_WORK/whatif-pod.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: train-16
  annotations: {resource.aibee.cn/pool: gpu-pool}
spec:
  schedulerName: ai-scheduler
  containers:
  - name: trainer
    image: pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime
    resources:
      requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: 16}
      limits: {nvidia.com/gpu: 16}
YAML
cat >"$CP_WORK/whatif-node.yaml" <<'YAML'
apiVersion: v1
kind: Node
metadata:
  name: gpu-big
  labels: {gpu: "true", nvidia.com/gpu.product: A100}
status:
  allocatable: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "16"}
  capacity: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "16"}
  conditions: [{type: Ready, status: "True"}]
YAML
"$AISCHED_BIN" whatif -f "$CP_WORK/whatif-pod.yaml" --server "$DEMO_SERVER" --insecure-skip-tls-verify --kubeconfig "$DEMO_TOKEN_KC" ||
    echo "(whatif failed)"
echo
echo "with --add-nodes 1 --node-template (a 16-GPU node labelled gpu=true):"
"$AISCHED_BIN" whatif -f "$CP_WORK/whatif-pod.yaml" --add-nodes 1 --node-template "$CP_WORK/whatif-node.yaml" \
    --server "$DEMO_SERVER" --insecure-skip-tls-verify --kubeconfig "$DEMO_TOKEN_KC" || echo "(whatif failed)"
echo "pods named train-16 in the cluster afterwards: $(kc get pods -o name | grep -c train-16)"

# Gangs after the single pods settled; the pool table below includes them.
# Nothing here fails the demo: a gang that stays Pending is shown as it is.
if kc get crd podgroups.scheduling.x-k8s.io >/dev/null 2>&1 && ls examples/*gang*.yaml >/dev/null 2>&1; then
    step "gang scheduling: PodGroups from examples/*gang*.yaml"
    # The all-or-nothing gang first, then the elastic one into what is left
    # (gpu-pool has 9 whole GPUs free here: the fractions above hold 2);
    # gang-waiting.yaml last: a waiting gang holds back what ranks behind it.
    kc apply -f examples/pytorchjob-gang.yaml || echo "(apply examples/pytorchjob-gang.yaml failed)"
    wait_until '[ "$(count_bound scheduling.x-k8s.io/pod-group=bert-ddp)" -ge 3 ]' 30 ||
        echo "(bert-ddp was not placed within 30s)"
    for f in examples/*gang*.yaml; do
        case $f in examples/gang-waiting.yaml | examples/pytorchjob-gang.yaml) continue ;; esac
        kc apply -f "$f" || echo "(apply $f failed)"
    done
    # bert-ddp: all 3 members; sweep: its minMember 2, then the surplus that fits
    # (3 of 4: the fourth waits for a free GPU).
    if ! wait_until '[ "$(count_bound scheduling.x-k8s.io/pod-group=sweep)" -ge 2 ]' 30; then
        echo "(sweep was not placed within 30s; what the cluster shows:)"
    else
        wait_until '[ "$(count_bound scheduling.x-k8s.io/pod-group=sweep)" -ge 3 ]' 10 || true
        echo "sweep: $(count_bound scheduling.x-k8s.io/pod-group=sweep) of 4 workers placed (minMember 2)"
    fi
    sleep 2   # the PodGroup status follows within about a second
    kc get podgroups
    echo
    kc get pods -l scheduling.x-k8s.io/pod-group -o custom-columns='POD:.metadata.name,GANG:.metadata.labels.scheduling\.x-k8s\.io/pod-group,ROLE:.metadata.labels.training\.kubeflow\.org/replica-type,GPU:.spec.containers[0].resources.requests.nvidia\.com/gpu,NODE:.spec.nodeName'
    echo
    echo "events on the PodGroups:"
    ev=$(kc get events --field-selector involvedObject.kind=PodGroup -o json |
        jq -r '.items[] | "  \(.involvedObject.name)  \(.type)  \(.reason): \(.message)"')
    echo "${ev:-  (none)}"

    if [ -f examples/gang-waiting.yaml ]; then
        step "all or nothing: llm-pretrain needs 2 whole GPU nodes, none is free"
        kc apply -f examples/gang-waiting.yaml || echo "(apply failed)"
        wait_until 'events_for llm-pretrain default FailedScheduling | grep -q .' 20 ||
            echo "(no FailedScheduling event on the PodGroup within 20s)"
        sleep 1
        kc get podgroup llm-pretrain
        echo "members bound: $(count_bound scheduling.x-k8s.io/pod-group=llm-pretrain) of 2"
        echo "why (events on the PodGroup):"
        events_for llm-pretrain default | sed 's/^/  /; s/\t/: /'
    fi
fi

# Gangs derived from the owning workload (issue 27): a PyTorchJob with no
# PodGroup. No training operator runs here: the demo creates the job's pods
# as the operator would (names, labels, an ownerReference to the job), from
# the job's own templates, and the PyTorchJob CRD is the suite's minimal
# stand-in (test/e2e/workloads/crds.yaml).
if [ -f examples/pytorchjob.yaml ] && [ -f test/e2e/workloads/crds.yaml ]; then
    step "gangs from the workload: examples/pytorchjob.yaml, a PyTorchJob with no PodGroup (the demo plays the training operator: it creates the pods)"
    kc apply -f test/e2e/workloads/crds.yaml >/dev/null
    wait_until 'kc get crd pytorchjobs.kubeflow.org -o json | jq -e ".status.conditions[] | select(.type==\"Established\" and .status==\"True\")"' 30 ||
        echo "(the PyTorchJob CRD is not Established)"
    kc apply -f examples/pytorchjob.yaml
    job=$(kc get pytorchjob resnet-ddp -o json)
    for rtype in Master Worker; do
        n=$(jq -r --arg t "$rtype" '.spec.pytorchReplicaSpecs[$t].replicas // 1' <<<"$job")
        for ((i = 0; i < n; i++)); do
            jq -c --arg t "$rtype" --argjson i "$i" '
                (.spec.pytorchReplicaSpecs[$t].template) as $tpl | ($t | ascii_downcase) as $lt |
                {apiVersion: "v1", kind: "Pod",
                 metadata: {name: "\(.metadata.name)-\($lt)-\($i)",
                   labels: {"training.kubeflow.org/job-name": .metadata.name,
                            "training.kubeflow.org/operator-name": "pytorchjob-controller",
                            "training.kubeflow.org/replica-type": $lt,
                            "training.kubeflow.org/replica-index": ($i | tostring)},
                   ownerReferences: [{apiVersion: "kubeflow.org/v1", kind: "PyTorchJob", name: .metadata.name,
                                      uid: .metadata.uid, controller: true, blockOwnerDeletion: true}]},
                 spec: ($tpl.spec + {restartPolicy: "OnFailure"})}' <<<"$job" | kc create -f - >/dev/null ||
                echo "(creating a $rtype pod failed)"
        done
    done
    wait_until '[ "$(count_bound training.kubeflow.org/job-name=resnet-ddp)" -ge 3 ]' 30 ||
        echo "(resnet-ddp was not placed within 30s; what the cluster shows:)"
    kc get podgroup pytorchjob-resnet-ddp -o custom-columns='PODGROUP:.metadata.name,MINMEMBER:.spec.minMember,QUEUE:.metadata.labels.resource\.aibee\.cn/queue,OWNER:.metadata.ownerReferences[0].kind,MANAGED-BY:.metadata.labels.app\.kubernetes\.io/managed-by'
    echo
    kc get pods -l training.kubeflow.org/job-name=resnet-ddp -o custom-columns='POD:.metadata.name,GANG:.metadata.labels.scheduling\.x-k8s\.io/pod-group,NODE:.spec.nodeName'
fi

# Preemption that respects training jobs (issue 26), in a pool of its own
# (one 4-GPU node) so nothing above is disturbed: the running job is
# protected for 20 s (the Pool's preemptMinRuntime), then asked to
# checkpoint; the demo plays the kubelet (Running, startTime) and the job's
# training loop (it writes checkpointed-at 2 s after the request).
if kc get crd pools.resource.aibee.cn >/dev/null 2>&1; then
    step "minimum runtime and checkpoint before eviction: pool 'lifecycle' (neither lends nor borrows) protects running pods for 20s; the victim saves before it goes"
    api_post_json /apis/resource.aibee.cn/v1alpha1/pools '{"apiVersion":"resource.aibee.cn/v1alpha1","kind":"Pool","metadata":{"name":"lifecycle"},"spec":{"nodeSelector":{"matchLabels":{"lifecycle":"true"}},"preemptMinRuntime":"20s","disableSharing":true,"disableBorrowing":true}}' >/dev/null
    make_node train-node-1 16 64Gi 4 110 lifecycle=true
    make_priority_class demo-train-low 10 >/dev/null
    make_priority_class demo-train-high 1000 >/dev/null
    make_pod train-ckpt --gpu 4 --cpu 1 --mem 1Gi --pool lifecycle --priority-class demo-train-low \
        --annotation resource.aibee.cn/checkpoint-grace=60s >/dev/null
    wait_until '[ -n "$(pod_node train-ckpt)" ]' 20 || echo "(train-ckpt was not placed)"
    api_req PATCH /api/v1/namespaces/default/pods/train-ckpt/status -H 'Content-Type: application/merge-patch+json' \
        -o /dev/null --data-binary "{\"status\":{\"phase\":\"Running\",\"startTime\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}}"
    echo "train-ckpt runs on $(pod_node train-ckpt) (4 GPUs, priority 10, checkpoint-grace 60s)"
    make_pod train-urgent --gpu 4 --cpu 1 --mem 1Gi --pool lifecycle --priority-class demo-train-high >/dev/null
    wait_until 'events_for train-urgent default FailedScheduling | grep -q "minimum runtime"' 20 ||
        echo "(no minimum-runtime message on train-urgent within 20s)"
    echo "train-urgent (priority 1000) waits:"
    events_for train-urgent default FailedScheduling | cut -f2 | sort -u | sed 's/^/  /'
    wait_until '[ -n "$(kc get pod train-ckpt -o jsonpath="{.metadata.annotations.resource\.aibee\.cn/preemption-requested}")" ]' 40 ||
        echo "(no checkpoint request on train-ckpt within 40s)"
    echo "train-ckpt is asked to checkpoint:"
    kc get pod train-ckpt -o json | jq -r '.status.conditions[]? | select(.type == "PreemptionRequested") | "  condition PreemptionRequested=\(.status) \(.reason): \(.message)"'
    sleep 2
    echo "  (its training loop saves and answers: checkpointed-at)"
    kc annotate pod train-ckpt --overwrite "resource.aibee.cn/checkpointed-at=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >/dev/null
    wait_until '[ "$(pod_node train-urgent)" = train-node-1 ]' 30 || echo "(train-urgent was not placed within 30s)"
    echo "train-urgent now runs on $(pod_node train-urgent); events of train-ckpt:"
    events_for train-ckpt default | cut -f1,2 | sed 's/^/  /; s/\t/: /'
fi

if [ -f examples/multicluster-job.yaml ]; then
    step "multi-cluster dispatch: examples/multicluster-job.yaml offered to this cluster ('here', priority 20) and a second control plane ('big', priority 80, no nodes)"
    kc apply -f pools/multiclusterjob-crd.yaml
    member_start big || die "second control plane did not start"
    kc create secret generic cluster-here --from-file=kubeconfig="$ADMIN_KUBECONFIG"
    kc create secret generic cluster-big --from-file=kubeconfig="$CP_WORK/m/big/admin.kubeconfig"
    # no kubelet here: the stand-in marks bound pods Running (as in the tests)
    python3 test/e2e/fake_kubelet.py --ca "$CP_WORK/pki/ca.crt" --cert "$CP_WORK/pki/admin.crt" \
        --key "$CP_WORK/pki/admin.key" "$API_URL" "https://127.0.0.1:$(cat "$CP_WORK/m/big/port")" >/dev/null 2>&1 &
    _pid_record $! fake-kubelet
    "$AISCHED_BIN" dispatch --kubeconfig "$DISPATCH_KUBECONFIG" --leader-elect=false --metrics-port 0 \
        --poll-interval 0.25 >"$CP_WORK/dispatch.log" 2>&1 &
    _pid_record $! dispatch
    wait_until 'kc get crd multiclusterjobs.resource.aibee.cn -o json | jq -e ".status.conditions[] | select(.type==\"Established\" and .status==\"True\")"' 30
    kc apply -f examples/multicluster-job.yaml
    wait_until '[ "$(kc get mcjob finetune -o json | jq -r ".status.winner, ([.status.clusters[] | select(.name==\"big\") | .state] | .[0])" | tr "\n" " ")" = "here Cancelled " ]' 40 ||
        echo "(not decided within 40s)"
    "$AISCHED_BIN" mcjob get --kubeconfig "$ADMIN_KUBECONFIG"
    kc get mcjob finetune -o json | jq -r '.status.clusters[] | "  \(.name): \(.state)  \(.message // "")"'
    echo "  the winner's pod: $(kc get pod finetune-here -o jsonpath='{.metadata.name} on {.spec.nodeName}, args {.spec.containers[0].args}')"
fi

step "ai-scheduler snapshot, then simulate examples/simulate/workload.yaml on it (virtual time, no API server)"
if "$AISCHED_BIN" snapshot -o "$CP_WORK/demo-snapshot.json" --kubeconfig "$ADMIN_KUBECONFIG"; then
    echo "snapshot: $(jq '.items | length' "$CP_WORK/demo-snapshot.json") objects (no Secrets, no env values)"
    "$AISCHED_BIN" simulate --snapshot "$CP_WORK/demo-snapshot.json" --workload examples/simulate/workload.yaml \
        --seed 1 -o "$CP_WORK/simulation" || echo "(simulate failed)"
    echo "jobs.csv:"
    column -s, -t <"$CP_WORK/simulation/jobs.csv" 2>/dev/null || cat "$CP_WORK/simulation/jobs.csv"
    echo "(the HTML report: $CP_WORK/simulation/report.html, removed with the demo's work dir)"
else
    echo "(snapshot failed)"
fi

step "the web dashboard on the scheduler's port: HTTPS, every request checked by the API server"
DASH_URL=$DEMO_SERVER/ui/
kc create clusterrole demo-dashboard-viewer --verb get --resource pools.resource.aibee.cn >/dev/null 2>&1 || true
kc create clusterrole demo-dashboard-lists --verb get,list --resource pods,podgroups.scheduling.x-k8s.io >/dev/null 2>&1 || true
kc create clusterrolebinding demo-dashboard-viewer --clusterrole demo-dashboard-viewer --serviceaccount default:demo-viewer >/dev/null 2>&1 || true
kc create clusterrolebinding demo-dashboard-lists --clusterrole demo-dashboard-lists --serviceaccount default:demo-viewer >/dev/null 2>&1 || true
DASH_TOKEN=$(sa_token default demo-viewer)
echo "$DASH_TOKEN" >"$CP_WORK/dashboard.token"
dash() { sched_curl -sS --max-time 10 -H "Authorization: Bearer $DASH_TOKEN" "$DEMO_SERVER$1"; }
echo "GET /api/v1/overview without a token: $(sched_curl -sS -o /dev/null -w '%{http_code}' "$DEMO_SERVER/api/v1/overview") (the page, /ui/, is open: $(sched_curl -sS -o /dev/null -w '%{http_code}' "$DASH_URL"))"
echo "as default/demo-viewer (a ServiceAccount with get pools, list pods and podgroups), /api/v1/overview:"
dash /api/v1/overview | jq -r '.pools[] | "  \(.name): \(.nodes) nodes, GPUs used \(.resources.gpu.used) of \(.resources.gpu.capacity) (\(.resources.gpu.shared) split into fractions), \(.pendingPods) pods pending, \(.waitingGangs) gangs waiting"' ||
    echo "(no overview)"
echo "/api/v1/pending, longest wait first:"
dash '/api/v1/pending?limit=5' | jq -r '.items[] | "  \(.kind) \(.namespace)/\(.name) (queue \(.queue), pool \(.pool), \(.waitingSeconds)s): \(.reason)"' ||
    echo "(no pending list)"
echo "open $DASH_URL in a browser (self-signed certificate) with the token in $CP_WORK/dashboard.token;"
echo "DEMO_HOLD=SECONDS make demo keeps the cluster up that long for it (screenshots: docs/dashboard-*.png)"
if [ -n "${DEMO_HOLD:-}" ]; then
    echo "holding for $DEMO_HOLD s (token: $DASH_TOKEN)"
    sleep "$DEMO_HOLD"
fi

step "pool table: ai-scheduler pools"
if ! timeout 30 "$AISCHED_BIN" pools --kubeconfig "$ADMIN_KUBECONFIG"; then
    echo "(the pools subcommand is not available yet)"
fi
if kc get crd pools.resource.aibee.cn >/dev/null 2>&1; then
    kc get pools
fi

step "queue tree: ai-scheduler queues (allocated and fair share from the status the scheduler writes)"
if ! timeout 30 "$AISCHED_BIN" queues --kubeconfig "$ADMIN_KUBECONFIG"; then
    echo "(the queues subcommand is not available yet)"
fi
if kc get crd queues.resource.aibee.cn >/dev/null 2>&1; then
    kc get queues
fi

# Today's pod fields (Kubernetes 1.29-1.35). The v1.20 API server drops
# them, so this step goes through t_standin.sh's stand-in
# (test/e2e/standin.sh, standin_apiserver.py): a proxy in front of it that
# keeps them and plays kube-apiserver's rules (the SchedulingGated condition,
# a 409 for a Binding of a gated pod). Nothing here fails the demo: an
# outcome not reached within its time is shown as the cluster has it.
step "today's pod fields, through a stand-in API server (v1.20 drops them)"
if ! standin_start; then
    echo "(the stand-in API server did not start; its log:)"
    tail -5 "$CP_WORK/standin.log"
else
    echo "stand-in: $SI_URL in front of $API_URL"
    echo "DRA's objects (resource.k8s.io/v1) served as CRDs in their real group (test/e2e/dra/crds.yaml)"
    kc apply -f test/e2e/dra/crds.yaml >/dev/null && kc wait --for condition=established --timeout=30s \
        crd/deviceclasses.resource.k8s.io crd/resourceslices.resource.k8s.io crd/resourceclaims.resource.k8s.io \
        crd/resourceclaimtemplates.resource.k8s.io >/dev/null || echo "(the DRA CRDs are not served)"
    echo "restarting the scheduler on it, with examples/scheduler-config-v1.yaml (kubescheduler.config.k8s.io/v1)"
    stop_scheduler TERM || echo "(scheduler exit status $?)"
    SCHED_KUBECONFIG=$SI_SCHED_KC start_scheduler --config examples/scheduler-config-v1.yaml
    # two fresh nodes of their own: nothing else lands there (no pool selects
    # the label, no pending pod of the steps above fits)
    make_node today-gates 2 8Gi 0 110 demo=today-gates
    make_node today-sidecar 4 8Gi 0 110 demo=today-sidecar
    # demo_state NAME: where pod NAME is, its PodScheduled condition, its FailedScheduling events
    demo_state() {
        echo "   node: '$(node_of "$1")'   PodScheduled: $(si_condition "$1")"
        failed_of "$1" | sort -u | sed 's/^/   event: /; s/\t/: /'
    }

    echo
    echo "1. spec.schedulingGates (GA in 1.30): a gated pod is not scheduled; the API server refuses its Binding"
    si_create today-gated --cpu 500m --node-selector demo=today-gates \
        --merge '{"spec":{"schedulingGates":[{"name":"example.com/approval"}]}}'
    sleep 3
    echo "   after 3 s: node '$(node_of today-gated)', Bindings sent: $(bindings_for today-gated)"
    echo "   PodScheduled: $(si_condition today-gated)"
    echo "   kubectl patch pod today-gated --type json -p '[{\"op\":\"remove\",\"path\":\"/spec/schedulingGates\"}]'"
    t0=${EPOCHREALTIME/./}
    si patch pod today-gated --type json -p '[{"op":"remove","path":"/spec/schedulingGates"}]' >/dev/null
    if wait_until '[ -n "$(node_of today-gated)" ]' 10 0.1; then
        ms=$(((${EPOCHREALTIME/./} - t0) / 1000))
        echo "   bound to $(node_of today-gated) within ${ms} ms of the patch (Bindings sent: $(bindings_for today-gated))"
    else
        echo "   (not bound within 10 s of the gate's removal; what the cluster shows:)"
        demo_state today-gated
    fi

    echo
    echo "2. native sidecars (on by default in 1.29, GA in 1.33): an init container with restartPolicy Always runs beside the app containers"
    si_create today-app --cpu 2 --node-selector demo=today-sidecar --merge '{"spec":{"initContainers":[
        {"name":"log-shipper","image":"registry.invalid/shipper:1","restartPolicy":"Always","resources":{"requests":{"cpu":"1"}}}]}}'
    if wait_until '[ -n "$(node_of today-app)" ]' 20; then
        echo "   today-app (app 2 cpu + sidecar 1 cpu = 3 cpu) -> $(node_of today-app) (4 cpu)"
    else
        echo "   (today-app not bound within 20 s; what the cluster shows:)"
        demo_state today-app
    fi
    si_create today-more --cpu 1500m --node-selector demo=today-sidecar
    wait_until 'failed_of today-more | grep -q "Insufficient cpu"' 20 ||
        echo "   (no 'Insufficient cpu' within 20 s; what the cluster shows:)"
    echo "   today-more (1.5 cpu), same node: 3 + 1.5 > 4"
    demo_state today-more
    echo "   (v1.20's rule, max(app, init) = max(2, 1) = 2 cpu, would have placed it: 2 + 1.5 <= 4)"

    echo
    echo "3. spec.resourceClaims (DRA, GA in 1.34): claims allocated from ResourceSlices, as kube-scheduler's DynamicResources"
    echo "   a DeviceClass gpu.example.com, and today-gates' slice: gpu-0 (A100 40Gi), gpu-1 (H100 80Gi)"
    api_post_json /apis/resource.k8s.io/v1/deviceclasses '{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass",
        "metadata":{"name":"gpu.example.com"},"spec":{"selectors":[{"cel":{"expression":"device.driver == \"gpu.example.com\""}}]}}' ||
        echo "   (DeviceClass not created)"
    api_post_json /apis/resource.k8s.io/v1/resourceslices '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice",
        "metadata":{"name":"today-gates-gpus"},"spec":{"driver":"gpu.example.com","nodeName":"today-gates",
        "pool":{"name":"today-gates","generation":1,"resourceSliceCount":1},"devices":[
        {"name":"gpu-0","attributes":{"model":{"string":"A100"}},"capacity":{"memory":{"value":"40Gi"}}},
        {"name":"gpu-1","attributes":{"model":{"string":"H100"}},"capacity":{"memory":{"value":"80Gi"}}}]}}' ||
        echo "   (ResourceSlice not created)"
    echo "   claim big-gpu: 1 device with memory >= 80Gi (CEL: device.capacity[...].memory.compareTo(quantity(\"80Gi\")) >= 0)"
    api_post_json /apis/resource.k8s.io/v1/namespaces/default/resourceclaims '{"apiVersion":"resource.k8s.io/v1",
        "kind":"ResourceClaim","metadata":{"name":"big-gpu"},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{
        "deviceClassName":"gpu.example.com","selectors":[{"cel":{"expression":
        "device.capacity[\"gpu.example.com\"].memory.compareTo(quantity(\"80Gi\")) >= 0"}}]}}]}}}' ||
        echo "   (ResourceClaim not created)"
    si_create today-claim --node-selector demo=today-gates --merge '{"spec":{"resourceClaims":[{"name":"gpu","resourceClaimName":"big-gpu"}],
        "containers":[{"name":"main","image":"registry.invalid/pause:3","resources":{"requests":{"cpu":"100m"},"claims":[{"name":"gpu"}]}}]}}'
    if wait_until '[ -n "$(node_of today-claim)" ]' 20; then
        echo "   today-claim -> $(node_of today-claim); claim big-gpu:"
        kc get --raw /apis/resource.k8s.io/v1/namespaces/default/resourceclaims/big-gpu |
            jq -c '{devices: [.status.allocation.devices.results[] | .pool + "/" + .device],
                    node: .status.allocation.nodeSelector.nodeSelectorTerms[0].matchFields[0].values,
                    reservedFor: [.status.reservedFor[].name], finalizers: .metadata.finalizers}' | sed 's/^/   /'
    else
        echo "   (today-claim not bound within 20 s; what the cluster shows:)"
        demo_state today-claim
    fi
    echo "   claim two-gpus: 2 devices where 1 is left: pending, the reason names the claim and the request"
    api_post_json /apis/resource.k8s.io/v1/namespaces/default/resourceclaims '{"apiVersion":"resource.k8s.io/v1",
        "kind":"ResourceClaim","metadata":{"name":"two-gpus"},"spec":{"devices":{"requests":[{"name":"gpus","exactly":{
        "deviceClassName":"gpu.example.com","count":2}}]}}}' || echo "   (ResourceClaim not created)"
    si_create today-claim-2 --node-selector demo=today-gates --merge '{"spec":{"resourceClaims":[{"name":"gpus","resourceClaimName":"two-gpus"}],
        "containers":[{"name":"main","image":"registry.invalid/pause:3","resources":{"requests":{"cpu":"100m"},"claims":[{"name":"gpus"}]}}]}}'
    wait_until 'failed_of today-claim-2 | grep -q .' 20 ||
        echo "   (no event within 20 s; what the cluster shows:)"
    demo_state today-claim-2
fi

step "stopping"
stop_scheduler TERM || echo "(scheduler exit status $?)"
cp_stop
echo "demo done"
