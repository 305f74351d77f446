#!/usr/bin/env bash
# shellcheck disable=SC2016 source-path=SCRIPTDIR
# Composition suite (issue 22, test/compose/): seeded scenarios that mix pools with
# borrowing, a Queue hierarchy with quotas and limits, PodGroups (minimum, elastic,
# topology), GPU fractions and whole GPUs, priorities, PDBs, preemptionPolicy Never,
# node add/remove, and a fake kubelet that runs, finishes and deletes pods. An
# independent checker (test/compose/checker.py) verifies every step and the settled end.
# One control plane and one scheduler for all seeds; run.py resets the objects per seed.
# Each scenario has one restart step: run.py asks (run_seed's loop) for the scheduler to be
# stopped by its pid and started again (restart_for). The scheduler's port serves the
# decision records that run.py samples for the queue-age rule.
# DRA (issue 36): generator.py draws it in about half the seeds (not 1, 3, 7): a
# DeviceClass, node-local ResourceSlices and pods with claims. DRA's objects are CRDs
# (test/e2e/dra/crds.yaml, as in t_dra.sh), pods keep spec.resourceClaims through the
# stand-in API server (standin.sh), and fake_claim_controller.py plays the resourceclaim
# controller. The scheduler talks to the stand-in in every seed (so seeds without DRA
# run through it too); run.py sends pods with claims and its snapshots' pod reads
# through it, the rest straight to the API server.
#
# Environment:
#   COMPOSE_SEEDS    seeds to run (default below); a failing seed prints itself and
#                    replays with COMPOSE_SEEDS=<seed>
#   COMPOSE_RANDOM   number of extra random seeds (printed), default 0
#   COMPOSE_SCALE    scenario size factor (default 1; make soak uses 2)
#   COMPOSE_ALL=1    also run MORE_SEEDS (seeds 1-16 in all)
# `make soak` runs random seeds at a larger scale.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=standin.sh
source "$(dirname "$0")/standin.sh"
export E2E_FILE=composition/

COMP=$REPO/test/compose
# Seeds of make test: each showed a fault this suite found (issue 22), now fixed, and
# must stay fixed: 1 (a non-preemptible pod let past its quota by a limit reclaim; a
# borrower evicting its lender's home pods through it; gang members left nominated), 3
# (elastic members bound past their queue's limit), 7 (a limit reclaim taking part of a
# gang). Seeds 1-16 all pass (COMPOSE_ALL=1 runs the other thirteen; 2 showed ping-pong).
# Seed 3 takes two minutes: make soak runs it (with 1 and 7), make test does not; its
# fault (elastic members past a limit) is also covered by a unit test
# (test_limit_room_for_minimum_not_surplus).
# Seed 4 draws DRA (issue 36): it showed a preemptor's freed device taken by
# a recreated borrower's claim, evicted again and again (fixed).
SEEDS=${COMPOSE_SEEDS:-1 7 4}
MORE_SEEDS="2 5 6 8 9 10 11 12 13 14 15 16"
[ "${COMPOSE_ALL:-0}" = 1 ] && SEEDS="$SEEDS $MORE_SEEDS"
for ((i = 0; i < ${COMPOSE_RANDOM:-0}; i++)); do SEEDS="$SEEDS $((RANDOM * 32768 + RANDOM))"; done
# which seeds draw DRA (generator.py): said once, so a failure's replay line is complete
DRA_SEEDS=$(for s in $SEEDS; do python3 "$REPO/test/compose/generator.py" "$s" | jq -e .dra >/dev/null && printf '%s ' "$s"; done)
SCALE=${COMPOSE_SCALE:-1}
log "composition: seeds=[$SEEDS] scale=$SCALE; with DRA: [${DRA_SEEDS% }]"

cp_start
dra_standin_start
SCHED_KUBECONFIG=$SI_SCHED_KC   # every start_scheduler below: through the stand-in
OUT=$CP_WORK/compose
mkdir -p "$OUT"
# Priority classes of test/compose/generator.py (PRIORITY_CLASSES).
pc() {
    api_post_json /apis/scheduling.k8s.io/v1/priorityclasses "$(jq -cn --arg n "$1" --argjson v "$2" --arg p "$3" \
        '{apiVersion: "scheduling.k8s.io/v1", kind: "PriorityClass", metadata: {name: $n}, value: $v, preemptionPolicy: $p}')"
}
pc compose-low 10 PreemptLowerPriority || die "priority class"
pc compose-mid 50 PreemptLowerPriority || die "priority class"
pc compose-high 200 PreemptLowerPriority || die "priority class"
pc compose-never 50 Never || die "priority class"
# The scheduler's port serves the decision records run.py samples (queue-age), read with
# the admin's bearer token.
MPORT=$(free_port)
SCHED_ARGS=(--metrics-port "$MPORT" --metrics-bind-address 127.0.0.1)
start_scheduler "${SCHED_ARGS[@]}"
wait_until 'grep -q "caches synced" "$CP_WORK/scheduler.log"' 30 || die "scheduler never synced"

# restart_for CTL: run.py's restart step (generator.py "restart") wrote CTL/restart.req:
# stop the scheduler by its pid (SIGTERM), check its log, start it again, wait for its
# caches; CTL/restart.done gets the old one's exit code (run.py fails the seed unless 0;
# 99: its log has sanitizer errors, 98: the new one did not sync in 60 s).
restart_for() {
    local ctl=$1 rc=0
    rm -f "$ctl/restart.req"
    stop_scheduler TERM || rc=$?
    sched_log_clean || { [ "$rc" = 0 ] && rc=99; }
    start_scheduler "${SCHED_ARGS[@]}"
    wait_until 'grep -q "caches synced" "$CP_WORK/scheduler.log"' 60 || { [ "$rc" = 0 ] && rc=98; }
    echo "$rc" >"$ctl/restart.tmp" && mv "$ctl/restart.tmp" "$ctl/restart.done"
}

# the checker's own unit tests: each invariant fed a violating snapshot
case_checker_unit() { python3 "$COMP/test_checker.py" 2>&1 | tail -3 >&2; [ "${PIPESTATUS[0]}" = 0 ]; }

run_seed() {
    local s=$1
    sched_alive || { log "scheduler is dead (crashed in an earlier seed?); restarting it"; start_scheduler "${SCHED_ARGS[@]}"; }
    echo "seed $s: scheduler log from line $(($(wc -l <"$CP_WORK/scheduler.log") + 1))" >>"$OUT/log-lines.txt"
    local ctl=$OUT/ctl-$s rc=0
    mkdir -p "$ctl"
    python3 "$COMP/run.py" --seed "$s" --scale "$SCALE" --server "$API_URL" --ca "$CP_WORK/pki/ca.crt" \
        --cert "$CP_WORK/pki/admin.crt" --key "$CP_WORK/pki/admin.key" --out "$OUT" --control "$ctl" \
        --sched-url "$(sched_url "$MPORT")" --token "$ADMIN_TOKEN" --standin "$SI_URL" &
    local py=$!
    while kill -0 "$py" 2>/dev/null; do
        [ -e "$ctl/restart.req" ] && restart_for "$ctl"
        sleep 0.2
    done
    wait "$py" || rc=$?
    [ "$rc" = 0 ] || fail "seed $s failed (replay: COMPOSE_SEEDS=$s COMPOSE_SCALE=$SCALE bash test/e2e/run.sh composition)"
    sched_alive || fail "seed $s: the scheduler died"
}

run_case checker-unit case_checker_unit
for seed in $SEEDS; do
    eval "case_seed_$seed() { run_seed $seed; }"
    run_case "seed-$seed" "case_seed_$seed"
done
case_scheduler_clean() { stop_scheduler_clean; }
run_case scheduler-clean case_scheduler_clean
finish
