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
# past its schedule timeout gets today) and "with" (reservations, and
# --gang-schedule-timeout 1 too: with the 6 s hold the gang is sometimes
# placed by the hold alone, as in "without", and the run shows nothing of
# the reservation; the default configuration gets the hold first, then,
# past reservation-after, the reservation).
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
# reservation, with what the held room explains: the GPUs that freed on the
# nodes not held during it (each is the next job's start, at most).
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
[[ $RUNS == *" with "* ]] && one_run with "${AFTER}s" 1

python3 "$HERE/resv_table.py" "$OUT/without.json" "$OUT/nohold.json" "$OUT/with.json" | tee "$OUT/table.txt"
cp_stop
