#!/usr/bin/env bash
# test/bench/bench.sh — ai-scheduler vs kube-scheduler v1.20 on the same local
# kube-apiserver, plus the raw Binding ceiling and the algorithm alone.
# Run by `make bench` (after building bin/ai-scheduler and build/tools/*).
#
# For each scenario (NODES x PODS):
#   1. nodes: bench-node-0..NODES-1 (32 cpu, 128Gi, 8 nvidia.com/gpu, 110 pods)
#   2. ai-scheduler:  PODS pending pods in ns bench-ai-S (schedulerName
#      ai-scheduler); time from the scheduler's start until all are bound;
#      then the pods are deleted (the nodes are empty again)
#   3. kube-scheduler: the same in ns bench-kube-S (default-scheduler)
#   4. raw ceiling: PODS pending pods nobody schedules, bound by bind_probe
#      (Bindings only, round robin over the nodes), once per thread count in
#      BENCH_PROBE_CONC with fresh pods each time; the best rate is the ceiling
#   5. algo_bench NODES PODS (in-process, no API server)
# Pods request 500m cpu and 512Mi; every 4th also 1 nvidia.com/gpu.
# Reported per run: pods/s (PODS / time to bind all), time to first bind,
# peak RSS (VmHWM), CPU seconds (utime+stime) — sampled from /proc until all
# pods are bound, before the process is stopped.
#
# Environment:
#   BENCH_SCALE=small|large|both|affinity|all   small: 1000 x 5000 (default), large: 5000 x 10000,
#                                  affinity: 5000 x 10000 where each pod has a required hostname
#                                  anti-affinity within its app (100 apps) and a zone spread
#                                  (maxSkew 1) over 3 zones (BENCH_AFF_NODES, BENCH_AFF_PODS)
#   BENCH_TIMEOUT=600              seconds per scheduler run; past it: "did not finish"
#   BENCH_RUNS=ai,kube,probe,algo  which parts to run
#   BENCH_PROBE_CONC="16 64"       bind_probe thread counts to try
#   BENCH_DOCS=1                   write the results into docs/benchmarks.md (0: don't)
#   BENCH_AI_ARGS                  extra ai-scheduler args
#   BENCH_KEEP=1                   keep the work dir (logs) — also kept on failure
#   AISCHED_BIN, K8S_BIN, ETCD_BIN as in test/e2e/lib.sh
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../e2e/lib.sh
source "$BENCH_DIR/../e2e/lib.sh"
cd "$REPO" || exit 1

SCALE=${BENCH_SCALE:-small}
TIMEOUT=${BENCH_TIMEOUT:-600}
RUNS=${BENCH_RUNS:-ai,kube,probe,algo}
PROBE_CONC=${BENCH_PROBE_CONC:-16 64}
PY=python3
BULK="$BENCH_DIR/bulk_create.py"
BUILD=${BENCH_BUILD:-$REPO/build}
REAL_K8S_BIN=$K8S_BIN

blog() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
want() { case ",$RUNS," in *",$1,"*) return 0 ;; esac; return 1; }

case $SCALE in
    small) SCENARIOS="small" ;;
    large) SCENARIOS="large" ;;
    both)  SCENARIOS="small large" ;;
    affinity) SCENARIOS="affinity" ;;
    all)   SCENARIOS="small large affinity" ;;
    *) echo "bench.sh: BENCH_SCALE must be small, large, both, affinity or all" >&2; exit 2 ;;
esac
scen_nodes() { case $1 in small) echo "${BENCH_SMALL_NODES:-1000}" ;; large) echo "${BENCH_LARGE_NODES:-5000}" ;;
                          affinity) echo "${BENCH_AFF_NODES:-5000}" ;; esac; }
scen_pods()  { case $1 in small) echo "${BENCH_SMALL_PODS:-5000}" ;; large) echo "${BENCH_LARGE_PODS:-10000}" ;;
                          affinity) echo "${BENCH_AFF_PODS:-10000}" ;; esac; }
# Pod options per scenario: the affinity one adds the inter-pod constraints.
scen_pod_args() { case $1 in affinity) echo "--apps ${BENCH_AFF_APPS:-100}" ;; esac; }

if [ ! -x "$REAL_K8S_BIN/kube-apiserver" ] || [ ! -x "$REAL_K8S_BIN/kube-scheduler" ]; then
    echo "bench.sh: no kube-apiserver/kube-scheduler in $REAL_K8S_BIN (run: bash test/e2e/build-k8s.sh)" >&2
    exit 1
fi

# Results and logs; outlives the control plane's work dir.
mkdir -p "$BENCH_DIR/.work"
W=$(mktemp -d "$BENCH_DIR/.work/run.XXXXXX")
blog "results and logs: $W"

# Throughput flags for the API server, the same for both schedulers. lib.sh
# starts "$K8S_BIN/kube-apiserver", so point K8S_BIN at a directory whose
# kube-apiserver execs the real one with the extra flags (same pid).
mkdir -p "$W/k8s-bin"
APISERVER_EXTRA="--max-requests-inflight=3000 --max-mutating-requests-inflight=1000 ${BENCH_APISERVER_ARGS:-}"
cat >"$W/k8s-bin/kube-apiserver" <<EOF
#!/bin/sh
exec "$REAL_K8S_BIN/kube-apiserver" "\$@" $APISERVER_EXTRA
EOF
chmod +x "$W/k8s-bin/kube-apiserver"
ln -sf "$REAL_K8S_BIN/kube-scheduler" "$W/k8s-bin/kube-scheduler"
K8S_BIN=$W/k8s-bin

# Tools: from the Makefile's build dir, else built here (bind_probe needs only libcurl).
PROBE=$BUILD/tools/bind_probe
if [ ! -x "$PROBE" ] && want probe; then
    PROBE=$W/bind_probe
    blog "building bind_probe into $PROBE"
    # shellcheck disable=SC2046
    cc -std=c11 -O2 -D_GNU_SOURCE -o "$PROBE" "$BENCH_DIR/bind_probe.c" $(pkg-config --cflags --libs libcurl) -lpthread ||
        PROBE=""
fi
ALGO=$BUILD/tools/algo_bench
[ -x "$ALGO" ] || ALGO=""

# The control plane's work dir (certs, etcd data, logs) goes under ours, out
# of the way of test/e2e runs and their clean-ups.
# shellcheck disable=SC2034  # read by cp_start in lib.sh
E2E_DIR=$W
cp_start
export BENCH_SERVER=$API_URL BENCH_CACERT=$CP_WORK/pki/ca.crt \
       BENCH_CERT=$CP_WORK/pki/admin.crt BENCH_KEY=$CP_WORK/pki/admin.key
APISERVER_PID=$API_PID
blog "API server $API_URL (pid $APISERVER_PID), flags: $APISERVER_EXTRA"

KS_CONF=$W/kube-scheduler.yaml
sed "s|@KUBECONFIG@|$ADMIN_KUBECONFIG|" "$BENCH_DIR/kube-scheduler.yaml.in" >"$KS_CONF"

NODES_MADE=0
ensure_nodes() {
    local n=$1
    [ "$NODES_MADE" -ge "$n" ] && return 0
    blog "creating nodes $NODES_MADE..$((n - 1))"
    $PY "$BULK" nodes --start "$NODES_MADE" --count $((n - NODES_MADE)) >&2 || return 1
    NODES_MADE=$n
}

# run_sched S WHO NS PODS CMD...: create the pods, run the scheduler, measure, clean up.
run_sched() {
    local s=$1 who=$2 ns=$3 pods=$4 sched
    shift 4
    case $who in ai) sched=ai-scheduler ;; *) sched=default-scheduler ;; esac
    # shellcheck disable=SC2046
    $PY "$BULK" pods --ns "$ns" --count "$pods" --scheduler "$sched" $(scen_pod_args "$s") >&2 ||
        { blog "pod creation failed"; return 1; }
    blog "$s/$who: starting $1 ($pods pods, timeout ${TIMEOUT}s)"
    $PY "$BULK" run --ns "$ns" --count "$pods" --timeout "$TIMEOUT" \
        --out "$W/$s.$who.json" --log "$W/$s.$who.log" -- "$@" >&2 ||
        blog "$s/$who: did not finish or exited early (see $W/$s.$who.log)"
    blog "$s/$who: $(cat "$W/$s.$who.json" 2>/dev/null)"
    $PY "$BULK" delete-pods --ns "$ns" >&2
}

for s in $SCENARIOS; do
    nodes=$(scen_nodes "$s"); pods=$(scen_pods "$s")
    echo "$nodes $pods" >"$W/$s.meta"
    blog "=== scenario $s: $nodes nodes x $pods pods"
    ensure_nodes "$nodes" || { blog "node creation failed"; exit 1; }
    # shellcheck disable=SC2086
    if want ai; then
        if [ -x "$AISCHED_BIN" ]; then
            run_sched "$s" ai "bench-ai-$s" "$pods" \
                "$AISCHED_BIN" --kubeconfig "$ADMIN_KUBECONFIG" --leader-elect=false --metrics-port 0 -v 0 \
                --kube-api-qps 5000 --kube-api-burst 5000 ${BENCH_AI_ARGS:-}
        else
            blog "no ai-scheduler binary at $AISCHED_BIN; skipped"
        fi
    fi
    if want kube; then
        run_sched "$s" kube "bench-kube-$s" "$pods" \
            "$REAL_K8S_BIN/kube-scheduler" --config "$KS_CONF" --port=0 --secure-port="$(free_port)" \
            --bind-address=127.0.0.1 --cert-dir "$W/kube-scheduler-certs" -v=1
    fi
    # The Binding ceiling and the in-process algorithm know no constraints.
    if want probe && [ -n "$PROBE" ] && [ "$s" != affinity ]; then
        for conc in $PROBE_CONC; do
            $PY "$BULK" pods --ns "bench-probe-$s-$conc" --count "$pods" --scheduler bench-nobody >&2
            blog "$s/probe: binding $pods pods with $conc threads"
            "$PROBE" --server "$API_URL" --cacert "$BENCH_CACERT" --cert "$BENCH_CERT" --key "$BENCH_KEY" \
                --namespace "bench-probe-$s-$conc" --pod-prefix p- --count "$pods" \
                --node-prefix bench-node- --node-count "$nodes" --concurrency "$conc" --json \
                >"$W/$s.probe.$conc.json" 2>"$W/$s.probe.$conc.log" ||
                blog "$s/probe: some Bindings failed (see $W/$s.probe.$conc.log)"
            blog "$s/probe: $(cat "$W/$s.probe.$conc.json")"
            $PY "$BULK" delete-pods --ns "bench-probe-$s-$conc" >&2
        done
    fi
    if want algo && [ "$s" != affinity ]; then
        if [ -n "$ALGO" ]; then
            blog "$s/algo: $ALGO $nodes $pods --repeat 3"
            timeout "$TIMEOUT" "$ALGO" "$nodes" "$pods" --repeat 3 >"$W/$s.algo.txt" 2>&1 || blog "$s/algo: failed (see $W/$s.algo.txt)"
            tail -1 "$W/$s.algo.txt" >&2
        else
            blog "no algo_bench at $BUILD/tools/algo_bench; skipped"
        fi
    fi
done

# Report.
ver() { "$@" 2>/dev/null | head -1; }
mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
aiv=""
[ -x "$AISCHED_BIN" ] && { aiv=$(timeout 5 "$AISCHED_BIN" --version 2>/dev/null | head -1 | sed 's/^ai-scheduler //') ||
    aiv="(built $(date -u -r "$AISCHED_BIN" '+%Y-%m-%d %H:%M UTC'))"; }
versions="ai-scheduler ${aiv:-?}; $(ver "$REAL_K8S_BIN/kube-apiserver" --version | sed 's/Kubernetes/kube-apiserver/'); $(ver "$REAL_K8S_BIN/kube-scheduler" --version | sed 's/Kubernetes/kube-scheduler/'); etcd $("$ETCD_BIN" --version 2>/dev/null | awk '/etcd Version/ {print $3}'); $(ver curl-config --version)"
docs_arg=()
[ "${BENCH_DOCS:-1}" = 1 ] && docs_arg=(--docs "$REPO/docs/benchmarks.md")
$PY "$BENCH_DIR/report.py" --work "$W" "${docs_arg[@]}" \
    --meta "date=$(date -u '+%Y-%m-%d %H:%M UTC')" \
    --meta "machine=$(nproc) CPUs ($cpu), $mem RAM, $(uname -sr)" \
    --meta "versions=$versions" \
    --meta "apiserver=etcd (--unsafe-no-fsync) + kube-apiserver, $APISERVER_EXTRA, TLS, RBAC; both schedulers use the admin client certificate, qps/burst 5000" \
    | tee "$W/results.md"

# shellcheck disable=SC2034  # read by cp_stop in lib.sh
[ "${BENCH_KEEP:-0}" = 1 ] && E2E_KEEP=1
blog "logs kept in $W"
cp_stop
exit 0
