#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# A short run meant for valgrind (run.sh sets AISCHED_WRAP="valgrind
# --error-exitcode=1 --leak-check=full"): bind a few pods, report one
# unschedulable pod, then SIGTERM; exit status must be 0 (no valgrind errors).
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=valgrind/
export SCHED_STOP_GRACE=90

case_short_run() {
    make_node v1 4 8Gi 0 110
    make_node v2 4 8Gi 2 110 accelerator=nvidia
    make_node v3 2 4Gi 0 110 taint:dedicated=x:NoSchedule
    start_scheduler
    make_pods vp 12 --cpu 200m --mem 128Mi
    make_pod vgpu --cpu 100m --gpu 1
    make_pod vbig --cpu 64
    wait_until '[ "$(count_bound)" = 13 ]' 240 1 || fail "want 13 bound, have $(count_bound)"
    wait_until 'events_for vbig default FailedScheduling | grep -q "0/3 nodes are available"' 120 1 ||
        fail "no FailedScheduling for vbig"
    [ "$(pod_node vgpu)" = v2 ] || fail "vgpu on '$(pod_node vgpu)'"
    assert_no_overcommit
    stop_scheduler_clean
}

cp_start
run_case short-run case_short_run
finish
