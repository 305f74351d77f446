#!/usr/bin/env bash
# shellcheck disable=SC2016 source-path=SCRIPTDIR
# Composition suite (issue 22, test/compose/): seeded scenarios that mix pools with
# borrowing, a Queue hierarchy with quotas and limits, PodGroups (minimum, elastic,
# topology), GPU fractions and whole GPUs, priorities, PDBs, preemptionPolicy Never,
# node add/remove, and a fake kubelet that runs, finishes and deletes pods. An
# independent checker (test/compose/checker.py) verifies every step and the settled end.
# One control plane and one scheduler for all seeds; run.py resets the objects per seed.
#
# Environment:
#   COMPOSE_SEEDS    seeds to run (default below); a failing seed prints itself and
#                    replays with COMPOSE_SEEDS=<seed>
#   COMPOSE_RANDOM   number of extra random seeds (printed), default 0
#   COMPOSE_SCALE    scenario size factor (default 1; make soak uses 2)
#   COMPOSE_KNOWN=1  also run the KNOWN_FAILING seeds (scheduler faults, see below)
# `make soak` runs random seeds at a larger scale.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=composition/

COMP=$REPO/test/compose
# Seeds that pass on the current scheduler (make test; 14 passes too).
SEEDS=${COMPOSE_SEEDS:-5 8 12}
# Seeds that fail on scheduler faults this suite found (run only with COMPOSE_KNOWN=1;
# the checks stay as they are, the scheduler is to be fixed):
#   np-quota   1, 9, 13, 15: a non-preemptible pod that goes through the queue-limit reclaim
#              ("reclaiming N pods under a queue limit") is admitted past its queue's
#              quota, even one asking more than the whole quota (seed 9: l13, priority 200,
#              4 GPUs into proj-a of quota 2 in pool pc; fs_admit reports only the limit
#              when both are exceeded, and nothing checks the quota after the reclaim)
#   borrower-evicts-home  1: that same reclaim lets a borrower (l23, home pa) evict home
#              pods of the lending pool (l13, l16 of pb)
#   ping-pong  2: l17 evicts l15 twice on pa-1; l15's replacement (higher priority, queue
#              default) takes the room nominated for l17 in between
#   queue-limit / np-quota  3, 4, 6, 10, 11 (7 in some runs): a gang's elastic surplus (members beyond
#              minMember) is bound without queue admission (seed 3: g4, minMember 2 of 4,
#              2 GPUs each, priority 200: queue other holds 8.75 > limit 8 and 8 > quota 4
#              non-preemptible in pool pb)
#   gang-min   7, 16: the queue-limit reclaim takes part of a gang at its minimum and
#              leaves the rest running (seed 7: for l32 it evicts g2-0 alone, g2-1 keeps
#              running below minMember 2; seed 16: for l14 it evicts g1-1 and g1-2, g1-0
#              stays below minMember 3)
KNOWN_FAILING="1 2 3 4 6 7 9 10 11 13 15 16"
[ "${COMPOSE_KNOWN:-0}" = 1 ] && SEEDS="$SEEDS $KNOWN_FAILING"
for ((i = 0; i < ${COMPOSE_RANDOM:-0}; i++)); do SEEDS="$SEEDS $((RANDOM * 32768 + RANDOM))"; done
SCALE=${COMPOSE_SCALE:-1}
log "composition: seeds=[$SEEDS] scale=$SCALE"

cp_start
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
start_scheduler
wait_until 'grep -q "caches synced" "$CP_WORK/scheduler.log"' 30 || die "scheduler never synced"

# the checker's own unit tests: each invariant fed a violating snapshot
case_checker_unit() { python3 "$COMP/test_checker.py" 2>&1 | tail -3 >&2; [ "${PIPESTATUS[0]}" = 0 ]; }

run_seed() {
    local s=$1
    sched_alive || { log "scheduler is dead (crashed in an earlier seed?); restarting it"; start_scheduler; }
    echo "seed $s: scheduler log from line $(($(wc -l <"$CP_WORK/scheduler.log") + 1))" >>"$OUT/log-lines.txt"
    python3 "$COMP/run.py" --seed "$s" --scale "$SCALE" --server "$API_URL" --ca "$CP_WORK/pki/ca.crt" \
        --cert "$CP_WORK/pki/admin.crt" --key "$CP_WORK/pki/admin.key" --out "$OUT" ||
        fail "seed $s failed (replay: COMPOSE_SEEDS=$s COMPOSE_SCALE=$SCALE bash test/e2e/run.sh composition)"
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
