#!/usr/bin/env bash
# test/bench/pools_concurrency.sh — do pools schedule in parallel?
#
# 4 pools (pa pb pc pd; disableBorrowing and disableSharing, so each pool's
# thread only places its own pods on its own nodes), POOLS_NODES nodes each
# (32 cpu, 128Gi, 110 pods), POOLS_PODS pending pods per pool (500m cpu +
# 512Mi, every 8th 1 GPU, annotation resource.aibee.cn/pool). Measured like
# test/bench/bench.sh (bulk_create.py run): the pods exist before the
# scheduler starts; the clock runs from its start until the last pod has a
# node. Five runs on one API server:
#   alone:    each pool's pods by themselves (4 runs; their times summed)
#   together: all 4 x POOLS_PODS pods at once
# If the pools' threads really work in parallel, "together" takes well under
# the sum of the "alone" times. Prints the figures and writes the section
# "Pools in parallel" of docs/benchmarks.md (between its markers; the rest of
# the file is left alone).
#
# Environment:
#   POOLS_PODS=1000      pods per pool
#   POOLS_NODES=20       nodes per pool
#   POOLS_TIMEOUT=600    seconds per run
#   POOLS_DOCS=1         write docs/benchmarks.md (0: don't)
#   POOLS_AI_ARGS        extra ai-scheduler args
#   AISCHED_BIN (default bin/ai-scheduler, the plain build), K8S_BIN, ETCD_BIN as in test/e2e/lib.sh
set -uo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../e2e/lib.sh
source "$BENCH_DIR/../e2e/lib.sh"
cd "$REPO" || exit 1

PODS=${POOLS_PODS:-1000}
NPP=${POOLS_NODES:-20}
TIMEOUT=${POOLS_TIMEOUT:-600}
POOLS="pa pb pc pd"
PY=python3
BULK="$BENCH_DIR/bulk_create.py"
REAL_K8S_BIN=$K8S_BIN
DOC=$REPO/docs/benchmarks.md

blog() { printf '[pools-bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

[ -x "$AISCHED_BIN" ] || { echo "pools_concurrency.sh: no $AISCHED_BIN (make)" >&2; exit 1; }
[ -x "$REAL_K8S_BIN/kube-apiserver" ] || { echo "pools_concurrency.sh: no kube-apiserver in $REAL_K8S_BIN" >&2; exit 1; }

mkdir -p "$BENCH_DIR/.work"
W=$(mktemp -d "$BENCH_DIR/.work/pools.XXXXXX")
blog "results and logs: $W"

# Same API server flags as bench.sh.
mkdir -p "$W/k8s-bin"
APISERVER_EXTRA="--max-requests-inflight=3000 --max-mutating-requests-inflight=1000"
cat >"$W/k8s-bin/kube-apiserver" <<EOF
#!/bin/sh
exec "$REAL_K8S_BIN/kube-apiserver" "\$@" $APISERVER_EXTRA
EOF
chmod +x "$W/k8s-bin/kube-apiserver"
K8S_BIN=$W/k8s-bin

# Pending pods with a pool annotation (bulk_create.py's Api, keep-alive HTTPS, 32 threads).
cat >"$W/pool_pods.py" <<'EOF'
import argparse, os, sys, time
sys.path.insert(0, os.environ["BENCH_DIR"])
import bulk_create as bc

ap = argparse.ArgumentParser()
ap.add_argument("--ns", required=True)
ap.add_argument("--pool", required=True)
ap.add_argument("--count", type=int, required=True)
a = ap.parse_args()
conn = argparse.Namespace(server=os.environ["BENCH_SERVER"], cacert=os.environ["BENCH_CACERT"],
                          cert=os.environ["BENCH_CERT"], key=os.environ["BENCH_KEY"], token=None)
api = bc.Api(conn)
bc.ensure_namespace(api, a.ns)

def create(i):
    req = {"cpu": "500m", "memory": "512Mi"}
    lim = {}
    if i % 8 == 0:
        req["nvidia.com/gpu"] = lim["nvidia.com/gpu"] = "1"
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "%s-%d" % (a.pool, i), "namespace": a.ns, "labels": {"app": "bench", "pool": a.pool},
                         "annotations": {"resource.aibee.cn/pool": a.pool}},
            "spec": {"schedulerName": "ai-scheduler", "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "k8s.gcr.io/pause:3.2",
                                     "resources": {"requests": req, "limits": lim}}]}}
    code, out = api.req("POST", "/api/v1/namespaces/%s/pods" % a.ns, body)
    return None if code in (200, 201, 409) else "%d %s" % (code, out[:200])

t0 = time.time()
bad = bc.parallel(create, range(a.count))
print("pods: %d for pool %s created in %s in %.1fs" % (a.count - bad, a.pool, a.ns, time.time() - t0))
sys.exit(1 if bad else 0)
EOF

E2E_WORK_ROOT=$W
cp_start
export BENCH_DIR BENCH_SERVER=$API_URL BENCH_CACERT=$CP_WORK/pki/ca.crt \
       BENCH_CERT=$CP_WORK/pki/admin.crt BENCH_KEY=$CP_WORK/pki/admin.key

for p in $POOLS; do
    $PY "$BULK" nodes --prefix "$p-node-" --count "$NPP" >&2 || { blog "node creation failed"; exit 1; }
    # shellcheck disable=SC2046
    kc label node $(seq -f "$p-node-%g" 0 $((NPP - 1))) "pool=$p" --overwrite >/dev/null || { blog "label failed"; exit 1; }
    jq -cn --arg p "$p" '{apiVersion: "resource.aibee.cn/v1alpha1", kind: "Pool", metadata: {name: $p},
        spec: {nodeSelector: {matchLabels: {pool: $p}}, disableBorrowing: true, disableSharing: true}}' |
        kc apply -f - >/dev/null || { blog "pool $p failed"; exit 1; }
done

# run NAME POOL...: pods of the given pools in ns pools-NAME, run the scheduler, measure, delete the pods.
run() {
    local name=$1 ns=pools-$1 p n=0
    shift
    for p in "$@"; do
        BENCH_DIR=$BENCH_DIR $PY "$W/pool_pods.py" --ns "$ns" --pool "$p" --count "$PODS" >&2 || { blog "pod creation failed"; return 1; }
        n=$((n + PODS))
    done
    blog "$name: $n pods, starting $AISCHED_BIN"
    # shellcheck disable=SC2086
    $PY "$BULK" run --ns "$ns" --count "$n" --timeout "$TIMEOUT" --out "$W/$name.json" --log "$W/$name.log" -- \
        "$AISCHED_BIN" --kubeconfig "$ADMIN_KUBECONFIG" --leader-elect=false --metrics-port 0 -v 0 \
        --kube-api-qps 5000 --kube-api-burst 5000 ${POOLS_AI_ARGS:-} >&2 ||
        blog "$name: did not finish (see $W/$name.log)"
    blog "$name: $(cat "$W/$name.json" 2>/dev/null)"
    # every pod on its own pool's nodes?
    kc get pods -n "$ns" -o json | jq -r '.items[] | select((.spec.nodeName // "") != "")
        | (.metadata.annotations["resource.aibee.cn/pool"] // "?") as $p
        | select(.spec.nodeName | startswith($p + "-node-") | not) | .metadata.name' |
        head -3 >"$W/$name.misplaced"
    [ -s "$W/$name.misplaced" ] && blog "$name: pods outside their pool: $(paste -sd' ' "$W/$name.misplaced")"
    $PY "$BULK" delete-pods --ns "$ns" >&2
}

for p in $POOLS; do run "alone-$p" "$p"; done
# shellcheck disable=SC2086
run together $POOLS

# Report.
cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
$PY - "$W" "$PODS" "$NPP" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(nproc) CPUs ($cpu), $mem RAM" >"$W/results.md" <<'EOF'
import json, sys
w, pods, npp, date, machine = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
def load(n):
    try:
        return json.load(open("%s/%s.json" % (w, n)))
    except Exception:
        return {"status": "missing"}
def f(x, fmt="%.2f s"):
    return fmt % x if isinstance(x, (int, float)) else "-"
def phase(r):  # first bind -> last bind
    s, b = r.get("seconds"), r.get("first_bind_s")
    return s - b if isinstance(s, (int, float)) and isinstance(b, (int, float)) else None
rows, ok = [], True
alone = {p: load("alone-" + p) for p in ("pa", "pb", "pc", "pd")}
tog = load("together")
for p, r in alone.items():
    ok &= r.get("status") == "ok"
    rows.append("| %s alone | %d | %s | %s | %s | %s |" % (p, pods, f(r.get("seconds")), f(r.get("first_bind_s")),
                f(phase(r)), f(r.get("pods_per_s"), "%.0f")))
ok &= tog.get("status") == "ok"
sum_all = sum(r["seconds"] for r in alone.values()) if ok else None
sum_phase = sum(phase(r) for r in alone.values()) if ok else None
rows.append("| **sum of the 4 alone** | %d | %s | | %s | %s |" % (4 * pods, f(sum_all), f(sum_phase),
            f(4 * pods / sum_all if sum_all else None, "%.0f")))
rows.append("| **all 4 together** | %d | %s | %s | %s | %s |" % (4 * pods, f(tog.get("seconds")), f(tog.get("first_bind_s")),
            f(phase(tog)), f(tog.get("pods_per_s"), "%.0f")))
out = ["Run %s on %s. 4 pools (disableBorrowing, disableSharing) x %d nodes (32 cpu, 128Gi, 8 GPU, 110 pods) "
       "x %d pods (500m cpu + 512Mi, every 8th 1 GPU). `test/bench/pools_concurrency.sh` (plain build); "
       "time from scheduler start to the last binding, *binding phase* = first to last binding." % (date, machine, npp, pods),
       "",
       "| run | pods | time to bind all | first bind | binding phase | pods/s |",
       "|---|---:|---:|---:|---:|---:|"] + rows
if ok and tog.get("seconds"):
    out += ["", "Together / sum of alone: **%.2f** (time to bind all), **%.2f** (binding phase); "
            "1.0 would mean the pools run one after another, 0.25 perfect 4-way parallelism."
            % (tog["seconds"] / sum_all, (phase(tog) / sum_phase) if sum_phase else float("nan")),
            "", "Caveat: etcd, the API server, the scheduler and the measuring tool share this machine; when the "
            "API server's Binding throughput is the limit (compare the raw ceiling above), parallel pool threads "
            "cannot make binding faster, and a ratio near 1.0 says more about the API server than about the pools."]
else:
    out += ["", "Some runs did not finish: %s" % json.dumps({"alone": alone, "together": tog})]
print("\n".join(out))
EOF
cat "$W/results.md"

if [ "${POOLS_DOCS:-1}" = 1 ]; then
    $PY - "$DOC" "$W/results.md" <<'EOF'
import os, sys
doc, res = sys.argv[1], open(sys.argv[2]).read().strip()
begin, end = "<!-- bench:pools:begin -->", "<!-- bench:pools:end -->"
text = open(doc).read() if os.path.exists(doc) else "# Benchmarks\n"
block = "%s\n%s\n%s" % (begin, res, end)
if begin in text and end in text:
    a, b = text.index(begin), text.index(end) + len(end)
    text = text[:a] + block + text[b:]
else:
    text = text.rstrip("\n") + "\n\n## Pools in parallel\n\n" + block + "\n"
with open(doc + ".tmp", "w") as f:
    f.write(text)
os.replace(doc + ".tmp", doc)
EOF
    blog "wrote the \"Pools in parallel\" section of $DOC"
fi
blog "logs kept in $W"
cp_stop
exit 0
