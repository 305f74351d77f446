#!/usr/bin/env bash
# shellcheck disable=SC2016 source-path=SCRIPTDIR
# Property suite (test/property/): random clusters and pods, submitted one at a
# time to ai-scheduler and, on the same API server after a reset, to
# kube-scheduler v1.20; an independent checker (test/property/checker.py)
# verifies every binding against every hard constraint as of its bind time and
# that every pod left pending is infeasible on the final state; both schedulers
# must leave the same number of pods pending. Preemption is off in both.
#
# Environment:
#   PROPERTY_SEEDS   seeds to run (default "1 2"); a failing seed reproduces
#   PROPERTY_RANDOM  number of extra random seeds (printed), default 0
#   PROPERTY_PODS    pods per run (default 40), PROPERTY_NODES nodes (default 12)
#   PROPERTY_KINDS   constraint kinds the scheduler supports (default: all of
#                    resources,ports,taints,nodeaffinity,podaffinity,spread,volumes)
#   PROPERTY_SCHEDULERS  "ai kube" (default); "kube" alone validates the generator
#                    and the checker against kube-scheduler only
# `make property` runs a longer random campaign.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=property/

PROP=$REPO/test/property
KINDS=${PROPERTY_KINDS:-resources,ports,taints,nodeaffinity,podaffinity,spread,volumes}
PODS=${PROPERTY_PODS:-40}
NODES=${PROPERTY_NODES:-12}
SEEDS=${PROPERTY_SEEDS:-1 2}
for ((i = 0; i < ${PROPERTY_RANDOM:-0}; i++)); do SEEDS="$SEEDS $((RANDOM * 32768 + RANDOM))"; done
SCHEDS=${PROPERTY_SCHEDULERS:-ai kube}
KS_BIN=${KUBE_SCHEDULER_BIN:-$K8S_BIN/kube-scheduler}
log "property: seeds=[$SEEDS] kinds=$KINDS nodes=$NODES pods=$PODS"

cp_start
OUT=$CP_WORK/property
mkdir -p "$OUT"

# run_seeds TAG SCHEDULER-NAME: every seed through the running scheduler.
run_seeds() {
    local tag=$1 name=$2 s
    for s in $SEEDS; do
        log "property: seed $s through $tag"
        python3 "$PROP/run.py" --seed "$s" --kinds "$KINDS" --nodes "$NODES" --pods "$PODS" \
            --scheduler-name "$name" --server "$API_URL" --ca "$CP_WORK/pki/ca.crt" \
            --cert "$CP_WORK/pki/admin.crt" --key "$CP_WORK/pki/admin.key" \
            --out "$OUT/$s.$tag.json" || fail "seed $s: the run through $tag failed"
    done
}

case_ai_scheduler() {
    start_scheduler --disable-preemption --scoring-strategy LeastAllocated
    run_seeds ai "$SCHED_NAME"
    stop_scheduler_clean
}

# kube-scheduler v1.20 with the admin kubeconfig (as test/bench/bench.sh does) and
# DefaultPreemption disabled, so both schedulers only place or leave pending.
case_kube_scheduler() {
    [ -x "$KS_BIN" ] || fail "no kube-scheduler at $KS_BIN (run: bash test/e2e/build-k8s.sh)"
    cat >"$OUT/kube-scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1beta1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: "$ADMIN_KUBECONFIG"
  qps: 500
  burst: 1000
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
  plugins:
    postFilter:
      disabled:
      - name: DefaultPreemption
EOF
    "$KS_BIN" --config "$OUT/kube-scheduler.yaml" --port=0 --secure-port="$(free_port)" \
        --bind-address=127.0.0.1 --cert-dir "$OUT/kube-scheduler-certs" -v=2 \
        >"$OUT/kube-scheduler.log" 2>&1 &
    local pid=$!
    _pid_record "$pid" kube-scheduler
    run_seeds kube default-scheduler
    kill -0 "$pid" 2>/dev/null || fail "kube-scheduler died (see $OUT/kube-scheduler.log)"
    _kill_pid "$pid" 10
}

# check_seed S: the checker on both results; same number of pods pending.
check_seed() {
    local s=$1 rc=0
    [ -s "$OUT/$s.kube.json" ] || fail "seed $s: no kube-scheduler result"
    python3 "$PROP/checker.py" "$OUT/$s.kube.json" || { log "seed $s: kube-scheduler's placements fail the checker"; rc=1; }
    case " $SCHEDS " in
        *" ai "*)
            [ -s "$OUT/$s.ai.json" ] || fail "seed $s: no ai-scheduler result"
            python3 "$PROP/checker.py" "$OUT/$s.ai.json" --compare "$OUT/$s.kube.json" || rc=1 ;;
    esac
    [ $rc = 0 ] || fail "seed $s: violations (reproduce: PROPERTY_SEEDS=$s PROPERTY_KINDS=$KINDS PROPERTY_PODS=$PODS PROPERTY_NODES=$NODES)"
}

# the checker's own unit tests (cases from the v1.20 plugins' semantics)
case_checker_unit() { python3 "$PROP/test_checker.py" 2>&1 | tail -3 >&2; [ "${PIPESTATUS[0]}" = 0 ]; }

run_case checker-unit case_checker_unit
case " $SCHEDS " in *" ai "*) run_case ai-scheduler case_ai_scheduler ;; esac
run_case kube-scheduler case_kube_scheduler
for seed in $SEEDS; do
    eval "case_seed_$seed() { check_seed $seed; }"
    run_case "seed-$seed" "case_seed_$seed"
done
finish
