#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Checkpoint before eviction (issue 26): a victim with a checkpoint grace is
# asked first (condition PreemptionRequested, annotation
# resource.aibee.cn/preemption-requested = the deadline) and evicted when it
# acknowledges (annotation resource.aibee.cn/checkpointed-at) or at the
# deadline; a request whose preemptor goes away is withdrawn and nothing is
# evicted; a queue's spec.checkpointGrace applies to its pods; "0" opts out.
# There is no kubelet: the test plays the training loop (it watches for the
# annotation and writes the acknowledgement, as examples/checkpoint-training.yaml
# does in a pod), and "evicted" means the Eviction was accepted (with
# --eviction-grace-period 0 the pod is gone at once, or has a deletionTimestamp).
# The measured times are printed ("MEASURED ...").
# One control plane; each case resets nodes, pods, pools and queues.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=checkpoint/

REQ_ANN=resource.aibee.cn/preemption-requested
ACK_ANN=resource.aibee.cn/checkpointed-at
GRACE_ANN=resource.aibee.cn/checkpoint-grace


reset_all() {
    kc delete events --all -n default >/dev/null 2>&1 || true
    cp_reset
    kc delete pools --all --wait=false >/dev/null 2>&1 || true
    kc delete queues --all --wait=false >/dev/null 2>&1 || true
    wait_until '[ "$(kc get pools -o name | wc -l)" = 0 ] && [ "$(kc get queues -o name | wc -l)" = 0 ]' 30 ||
        fail "pools/queues remain"
    sched_alive || { log "scheduler is dead (crashed in an earlier case?); restarting it"; start_scheduler; }
    LOG_FROM=$(($(wc -l <"$CP_WORK/scheduler.log") + 1))
}
new_log() { tail -n +"${LOG_FROM:-1}" "$CP_WORK/scheduler.log"; }

pod_exists() { kc get pod "$1" -o name >/dev/null 2>&1; }
# evicted POD: the Eviction was accepted (gone, or terminating).
evicted() {
    ! pod_exists "$1" || [ -n "$(kc get pod "$1" -o jsonpath='{.metadata.deletionTimestamp}' 2>/dev/null)" ]
}
req_ann() { kc get pod "$1" -o json 2>/dev/null | jq -r --arg a "$REQ_ANN" '.metadata.annotations[$a] // ""'; }
now() { date +%s.%N; }
# secs A B: B - A, one decimal.
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
# within X LO HI: LO <= X <= HI
within() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x <= hi) }'; }
set_running() {
    api_req PATCH "/api/v1/namespaces/default/pods/$1/status" -H 'Content-Type: application/merge-patch+json' \
        -o /dev/null -w '%{http_code}' --data-binary '{"status":{"phase":"Running"}}' | grep -q '^2' ||
        fail "could not set $1 Running"
}
# ack POD: what the training loop does after saving: checkpointed-at = now.
ack() {
    api_req PATCH "/api/v1/namespaces/default/pods/$1" -H 'Content-Type: application/merge-patch+json' \
        -o /dev/null -w '%{http_code}' --data-binary \
        "$(jq -cn --arg a "$ACK_ANN" --arg t "$(date -u +%Y-%m-%dT%H:%M:%SZ)" '{metadata: {annotations: {($a): $t}}}')" |
        grep -q '^2' || fail "could not write $ACK_ANN on $1"
}

# One 4-cpu node in pool p, filled by victim v (4 cpu, priority low, extra
# args); v Running. The preemptor is made by the case.
setup_victim() {
    make_pool p '{"disableBorrowing": true}'
    make_node na 4 8Gi 0 110 pool=p
    make_pod v --pool p --cpu 4 --priority-class low "$@"
    wait_until '[ "$(pod_node v)" = na ]' 60 || fail "v not bound"
    set_running v
}

# wait_request POD PREEMPTOR: the request is visible (annotation and
# condition True naming the preemptor); prints the time it was first seen.
wait_request() {
    local t0 cond
    wait_until '[ -n "$(req_ann '"$1"')" ]' 30 0.1 || fail "no $REQ_ANN annotation on $1 ($(pod_condition "$1" PreemptionRequested))"
    t0=$(now)
    cond=$(pod_condition "$1" PreemptionRequested)
    [[ $cond == "True Preemption "*"default/$2"* ]] || fail "$1's PreemptionRequested condition is '$cond'"
    echo "$t0"
}

# Acknowledges 3 s after seeing the request: evicted then, not at the 60 s deadline.
case_ack() {
    reset_all
    setup_victim --annotation "$GRACE_ANN=60s"
    make_pod hi --pool p --cpu 2 --priority-class high
    local t_req t_ack t_ev dl left el
    t_req=$(wait_request v hi)
    dl=$(date -u -d "$(req_ann v)" +%s) || fail "annotation '$(req_ann v)' is not RFC 3339"
    left=$(secs "$t_req" "$dl")
    within "$left" 58 62 || fail "deadline $(req_ann v) is ${left}s after the request was seen, want ~60s"
    [ -z "$(pod_node hi)" ] || fail "hi bound while v still runs"
    [ "$(kc get pod hi -o jsonpath='{.status.nominatedNodeName}')" = na ] || fail "hi is not nominated on na"
    evicted v && fail "v evicted before it acknowledged"
    # The training loop saves for 3 s, then acknowledges (an eviction
    # before that would show as less than 3 s below).
    sleep "$(awk -v t="$t_req" -v n="$(now)" 'BEGIN { d = t + 3 - n; print (d > 0 ? d : 0) }')"
    t_ack=$(now)
    ack v
    wait_until 'evicted v' 15 0.1 || fail "v not evicted after its acknowledgement"
    t_ev=$(now)
    el=$(secs "$t_req" "$t_ev")
    echo "MEASURED ack: acknowledged $(secs "$t_req" "$t_ack")s after the request was seen, evicted ${el}s after it" \
        "($(secs "$t_ack" "$t_ev")s after the acknowledgement; deadline 60s)"
    within "$el" 3 10 || fail "evicted ${el}s after the request, want 3..10s"
    wait_until '[ "$(pod_node hi)" = na ]' 30 || fail "hi not bound on na after v went"
    events_for v default PreemptionRequested | grep -q 'default/hi' || fail "no PreemptionRequested event on v"
    new_log | grep -q 'checkpoint: evicted pod=default/v (after the checkpoint' || fail "no 'evicted after the checkpoint' log"
}

# Never acknowledges (grace 8 s): evicted at the deadline.
case_deadline() {
    reset_all
    setup_victim --annotation "$GRACE_ANN=8s"
    make_pod hi --pool p --cpu 2 --priority-class high
    local t_req dl t_ev el late
    t_req=$(wait_request v hi)
    dl=$(date -u -d "$(req_ann v)" +%s)
    wait_until 'evicted v' 20 0.1 || fail "v not evicted at its deadline"
    t_ev=$(now)
    el=$(secs "$t_req" "$t_ev")
    late=$(secs "$dl" "$t_ev")
    echo "MEASURED deadline: grace 8s, evicted ${el}s after the request was seen, ${late}s after the annotated deadline"
    within "$late" 0 3 || fail "evicted ${late}s from the deadline, want -1..3s"
    wait_until '[ "$(pod_node hi)" = na ]' 30 || fail "hi not bound on na after v went"
}

# The preemptor is deleted during the grace: the request is withdrawn
# (condition False PreemptionWithdrawn, annotation removed), v stays.
case_withdrawn() {
    reset_all
    setup_victim --annotation "$GRACE_ANN=60s"
    make_pod hi --pool p --cpu 2 --priority-class high
    local t_req t_w cond
    t_req=$(wait_request v hi)
    kc delete pod hi --grace-period=0 --force >/dev/null 2>&1 || fail "could not delete hi"
    wait_until '[ -z "$(req_ann v)" ]' 15 0.2 || fail "the annotation stayed after hi went"
    t_w=$(now)
    cond=$(pod_condition v PreemptionRequested)
    [[ $cond == "False PreemptionWithdrawn "* ]] || fail "v's condition is '$cond', want False PreemptionWithdrawn"
    echo "MEASURED withdrawn: request cleared $(secs "$t_req" "$t_w")s after it was seen (preemptor deleted)"
    sleep 3
    evicted v && fail "v was evicted although the request was withdrawn"
    events_for v default PreemptionWithdrawn | grep -q . || fail "no PreemptionWithdrawn event on v"
    # v counts for its queue again: a pod of v's priority still does not fit.
    [ "$(pod_node v)" = na ] || fail "v moved?"
}

# No annotation: the queue's checkpointGrace (6 s, from the parent queue)
# applies; the test acknowledges at once.
case_queue_grace() {
    reset_all
    make_queue research '{"checkpointGrace": "6s"}'
    make_queue train '{"parentQueue": "research"}'
    wait_until 'kc get queue train -o name' 10 || fail "queue train"
    sleep 1 # the scheduler's Queue informer
    setup_victim --label resource.aibee.cn/queue=train
    make_pod hi --pool p --cpu 2 --priority-class high --label resource.aibee.cn/queue=train
    local t_req dl left t_ev
    t_req=$(wait_request v hi)
    dl=$(date -u -d "$(req_ann v)" +%s)
    left=$(secs "$t_req" "$dl")
    echo "MEASURED queue-grace: deadline ${left}s after the request was seen (queue research's checkpointGrace 6s)"
    within "$left" 5 7.5 || fail "deadline ${left}s after the request, want ~6s (the parent queue's grace)"
    ack v
    wait_until 'evicted v' 10 0.1 || fail "v not evicted after its acknowledgement"
    t_ev=$(now)
    echo "MEASURED queue-grace: evicted $(secs "$t_req" "$t_ev")s after the request (acknowledged at once)"
    wait_until '[ "$(pod_node hi)" = na ]' 30 || fail "hi not bound on na"
}

# checkpoint-grace "0" opts out, also under a queue that sets one: evicted
# at once, never asked.
case_opt_out() {
    reset_all
    make_queue train '{"checkpointGrace": "60s"}'
    sleep 1
    setup_victim --annotation "$GRACE_ANN=0" --label resource.aibee.cn/queue=train
    local t0 t_ev
    t0=$(now)
    make_pod hi --pool p --cpu 2 --priority-class high --label resource.aibee.cn/queue=train
    wait_until 'evicted v' 10 0.1 || fail "v not evicted at once"
    t_ev=$(now)
    echo "MEASURED opt-out: evicted $(secs "$t0" "$t_ev")s after the preemptor was created"
    new_log | grep -q 'checkpoint: requested pod=default/v' && fail "v was asked to checkpoint"
    wait_until '[ "$(pod_node hi)" = na ]' 30 || fail "hi not bound on na"
}

# A request left by an earlier run is cleared by the next one, nothing
# evicted: the scheduler stops during the grace, the preemptor is deleted
# while it is down, and the new process does not know the request.
case_restart_clears() {
    reset_all
    setup_victim --annotation "$GRACE_ANN=60s"
    make_pod hi --pool p --cpu 2 --priority-class high
    wait_request v hi >/dev/null
    stop_scheduler_clean
    kc delete pod hi --grace-period=0 --force >/dev/null 2>&1 || fail "could not delete hi"
    start_scheduler
    wait_until '[ -z "$(req_ann v)" ]' 20 0.2 || fail "the stale request was not cleared after the restart"
    local cond
    cond=$(pod_condition v PreemptionRequested)
    [[ $cond == "False PreemptionWithdrawn "* ]] || fail "v's condition is '$cond', want False PreemptionWithdrawn"
    sleep 2
    evicted v && fail "v was evicted"
    return 0
}

case_clean_shutdown() {
    stop_scheduler_clean
}

cp_start
apply_queue_crd || die "Queue CRD"
make_priority_class low 10
make_priority_class high 100
start_scheduler
run_case ack case_ack
run_case deadline case_deadline
run_case withdrawn case_withdrawn
run_case queue-grace case_queue_grace
run_case opt-out case_opt_out
run_case restart-clears case_restart_clears
run_case clean-shutdown case_clean_shutdown
finish
