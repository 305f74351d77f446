#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# test/bench/reservation.sh — `make bench-reservation`: the issue's scenario
# for reservation of large gangs, on a real kube-apiserver, time scaled down
# 10x: 16 nodes x 4 GPUs in Pool gpu, kept full by a stream of 1-GPU jobs of
# 12 s (2 min), each annotated resource.aibee.cn/expected-runtime: 12s,
# arriving steadily at 1.25 x the rate the full pool frees GPUs, at most
# RESV_QUEUED (8) pending; after a RESV_WARMUP (30) s warm-up, at T0 a gang
# of 8 x 4 GPUs (32 GPUs) arrives; the stream goes on for RESV_STREAM (90) s.
# Reservations: --reservation-after 30s (5 min scaled), --reservation-timeout
# 180s. Three runs on the same API server: "without" (--reservation-after 0, --gang-schedule-timeout 6,
# i.e. today's 60 s scaled: the gang holds back the whole pool for 6 s, then
# nothing), "no hold" (the same with --gang-schedule-timeout 1: what a gang
# past its schedule timeout gets today) and "with" (--gang-schedule-timeout 6
# and reservations).
#
# (The e2e control plane's work dir is removed at the end; per-run JSON in
# build/bench-reservation.)
# A test helper plays the kubelet (resv_driver.py): bound pods go Running with
# startTime now; a job is deleted 12 s after it started (its job done).
#
# Printed side by side: the gang's start after T0; with reservations, when
# the reservation was made, when its held nodes were free (from the start
# times of the jobs on them) and the gang's start against that + 10%; job
# starts per minute before T0, while the gang waits, and during the
# reservation, with what the held room explains (rate before x the share of
# the pool not held).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../e2e/lib.sh
source "$HERE/../e2e/lib.sh"

RUNTIME=${RESV_RUNTIME:-12}
STREAM=${RESV_STREAM:-90}
WARMUP=${RESV_WARMUP:-30}
AFTER=${RESV_AFTER:-30}
export SCHED_V=${SCHED_V:-2}
OUT=${RESV_OUT:-$REPO/build/bench-reservation}
mkdir -p "$OUT"

one_run() { # one_run NAME RESERVATION-AFTER GANG-SCHEDULE-TIMEOUT
    local name=$1 after=$2 gto=$3 i
    kc delete pods --all -n default --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
    kc delete podgroups.scheduling.x-k8s.io --all -n default --wait=false >/dev/null 2>&1 || true
    wait_until '[ "$(kc get pods -n default -o name | wc -l)" = 0 ]' 60 || die "pods remain"
    start_scheduler --gang-schedule-timeout "$gto" --reservation-after "$after" --reservation-timeout 180s \
        --pool-status-interval 1
    python3 "$HERE/resv_driver.py" --url "$API_URL" --ca "$CP_WORK/pki/ca.crt" --cert "$CP_WORK/pki/admin.crt" \
        --key "$CP_WORK/pki/admin.key" --runtime "$RUNTIME" --warmup "$WARMUP" --stream "$STREAM" \
        --queued "${RESV_QUEUED:-8}" >"$OUT/$name.json" || die "driver failed ($name)"
    stop_scheduler || true
    log "$name: $(jq -c '{gang_bound, resv_seen, free_at, resv_nodes}' "$OUT/$name.json")"
}

cp_start
apply_podgroup_crd || die "PodGroup CRD"
api_post_json /apis/resource.aibee.cn/v1alpha1/pools \
    '{"apiVersion":"resource.aibee.cn/v1alpha1","kind":"Pool","metadata":{"name":"gpu"},"spec":{"nodeSelector":{"matchLabels":{"pool":"gpu"}}}}'
for ((i = 0; i < 16; i++)); do make_node "g$i" 32 128Gi 4 110 pool=gpu; done
# RESV_RUNS: which runs to make (the others' JSON is reused from $OUT).
RUNS=" ${RESV_RUNS:-without nohold with} "
[[ $RUNS == *" without "* ]] && one_run without 0 6
[[ $RUNS == *" nohold "* ]] && one_run nohold 0 1
[[ $RUNS == *" with "* ]] && one_run with "${AFTER}s" 6

python3 - "$OUT/without.json" "$OUT/nohold.json" "$OUT/with.json" <<'EOF' | tee "$OUT/table.txt"
import json, sys
runs = [json.load(open(p)) for p in sys.argv[1:4]]
def rate(d, a, b):
    if a is None or b is None or b <= a:
        return None
    n = sum(1 for t in d["job_starts"] if a <= t < b)
    return 60.0 * n / (b - a)
def f(v, fmt="%.1f"):
    return "-" if v is None else fmt % v
rows = []
for d in runs:
    end = d["gang_bound"] if d["gang_bound"] is not None else d["stream_end"]
    before = rate(d, -20, 0)
    during = rate(d, d["resv_seen"], d["gang_bound"]) if d["resv_seen"] is not None else None
    free = (d["free_at"] - d["resv_seen"]) if d["resv_seen"] is not None and d["free_at"] is not None else None
    start = (d["gang_bound"] - d["resv_seen"]) if d["resv_seen"] is not None and d["gang_bound"] is not None else None
    held = len(d["resv_nodes"]) * 4
    rows.append(dict(bound=d["gang_bound"], stream=d["stream_end"], resv=d["resv_seen"], free=free, start=start,
                     within=None if start is None or free is None else start <= 1.1 * free + 0.5,
                     before=before, wait=rate(d, 0, min(end, d["stream_end"])), during=during,
                     explained=None if during is None or before is None else before * (64 - held) / 64.0,
                     held=held if d["resv_seen"] is not None else None))
def line(label, key, fmt="%.1f"):
    print("%-58s %10s %10s %10s" % ((label,) + tuple(f(r[key], fmt) for r in rows)))
print("%-58s %10s %10s %10s" % ("", "without", "no hold", "with"))
line("gang (8 x 4 GPUs) started, s after T0", "bound")
line("stream of 1-GPU 12 s jobs stopped, s after T0", "stream")
line("reservation made, s after T0 (reservation-after 30 s)", "resv")
line("GPUs held", "held", "%d")
line("held nodes free, s after the reservation (jobs' starts)", "free")
line("gang started, s after the reservation", "start")
print("%-58s %10s %10s %10s" % (("gang start <= time for its GPUs to free + 10%",) + tuple(
    "-" if r["within"] is None else ("yes" if r["within"] else "NO") for r in rows)))
line("job starts/min, 20 s before T0", "before")
line("job starts/min, T0 until the gang starts (or stream end)", "wait")
line("job starts/min during the reservation", "during")
line("  ... explained by held room (before x unheld share)", "explained")
EOF
cp_stop
