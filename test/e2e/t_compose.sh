#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Capabilities together on a real kube-apiserver (issue 22): Queues with
# borrowing between pools, reclaim across queues for gangs and single pods,
# and priority preemption inside a queue held at its limit. Each case is a
# fault that passed every suite of its own capability; each checks the exact
# outcome the rules give. Nodes are plain Node objects with nvidia.com/gpu (no
# kubelet: an evicted pod with a zero grace period is gone at once).
# One control plane; each case resets nodes, pods, pools, queues and groups.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=compose/

QLABEL=resource.aibee.cn/queue
PG_LABEL=scheduling.x-k8s.io/pod-group
PG_API=/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups

make_podgroup() {
    api_post_json "$PG_API" "$(jq -cn --arg n "$1" --argjson m "$2" \
        '{apiVersion: "scheduling.x-k8s.io/v1alpha1", kind: "PodGroup", metadata: {name: $n},
          spec: {minMember: $m}}')"
}
# gpu_nodes PREFIX COUNT GPUS [label=value]
gpu_nodes() {
    local i
    for ((i = 0; i < $2; i++)); do make_node "$1-$i" 64 256Gi "$3" 110 ${4:+"$4"}; done
}
# bound PREFIX: bound pods whose name starts with PREFIX-
bound() {
    pods_json | jq --arg p "$1-" '[.items[] | select(.metadata.name | startswith($p))
        | select((.spec.nodeName // "") != "" and .metadata.deletionTimestamp == null)] | length'
}
# existing PREFIX: pods (not being deleted) whose name starts with PREFIX-
existing() {
    pods_json | jq --arg p "$1-" '[.items[] | select(.metadata.name | startswith($p))
        | select(.metadata.deletionTimestamp == null)] | length'
}
# bound_on POOL PREFIX: bound pods named PREFIX-* on nodes POOL-*
bound_on() {
    pods_json | jq --arg p "$2-" --arg n "$1-" '[.items[] | select(.metadata.name | startswith($p))
        | select((.spec.nodeName // "") | startswith($n))] | length'
}

reset_all() {
    kc delete events --all -n default >/dev/null 2>&1 || true
    kc delete podgroups.scheduling.x-k8s.io --all -n default --wait=false >/dev/null 2>&1 || true
    cp_reset
    kc delete queues.resource.aibee.cn --all --wait=false >/dev/null 2>&1 || true
    kc delete pools --all --wait=false >/dev/null 2>&1 || true
    wait_until '[ "$(kc get pools,queues.resource.aibee.cn -o name | wc -l)" = 0 ]' 30 || fail "pools or queues remain"
    sched_alive || { log "scheduler is dead (crashed in an earlier case?); restarting it"; start_scheduler; }
    LOG_FROM=$(($(wc -l <"$CP_WORK/scheduler.log") + 1))
}
new_log() { tail -n +"${LOG_FROM:-1}" "$CP_WORK/scheduler.log"; }

# Fault 1. Queues qa (quota in pool a only) and qb (quota in pool b only).
# qa's 7 pods: 4 fill a, 3 borrow b. Then 8 of qb's home pods arrive in b:
# b takes its nodes back from the borrowers, whatever their queue: all 8 run,
# and the 3 borrowers are evicted (Preempted, "borrowed node reclaimed").
# Before: the borrowers' queue had no usage in b, so reclaim's rules dropped
# every borrower as a victim and 3 of qb's pods waited (nothing in 60 s).
case_queues_borrow_reclaim() {
    reset_all
    make_pool a
    make_pool b
    gpu_nodes a 1 4 pool=a
    gpu_nodes b 2 4 pool=b
    make_queue qa '{"pools": {"a": {"resources": {"gpu": {"quota": 4}}}}}'
    make_queue qb '{"pools": {"b": {"resources": {"gpu": {"quota": 8}}}}}'
    make_pods qa 7 --gpu 1 --pool a --label "$QLABEL=qa"
    wait_until '[ "$(bound qa)" = 7 ]' 45 || fail "qa: $(bound qa)/7 bound (4 home, 3 borrowing b)"
    [ "$(bound_on b qa)" = 3 ] || fail "qa: $(bound_on b qa) pods on pool b, want 3 borrowers"
    local t0=$SECONDS
    make_pods qb 8 --gpu 1 --pool b --label "$QLABEL=qb"
    wait_until '[ "$(bound qb)" = 8 ]' 60 ||
        fail "qb: $(bound qb)/8 home pods bound; borrowers still on b: $(bound_on b qa); $(events_for qb-0 | tail -2 | tr '\n' ' ')"
    log "measured: pool b reclaimed 3 borrowed GPUs for qb's 8 pods in $((SECONDS - t0)) s"
    [ "$(bound_on b qa)" = 0 ] || fail "qa still holds $(bound_on b qa) pods on pool b"
    local ev
    ev=$(kc get events -n default --field-selector reason=Preempted -o json | jq '[.items[] | select(.message | test("borrowed node reclaimed"))] | length')
    [ "$ev" -ge 3 ] || fail "$ev Preempted events say 'borrowed node reclaimed', want 3"
    assert_no_overcommit
}

# Fault 16. Queue train (quota 8, limit 8) against other (quota 0), which
# fills two 4-GPU nodes with 1-GPU pods. other's fair share of GPUs is 0, so
# train reclaims all 8: as a PodGroup of 4 x 2 GPUs (before: 0/4 after 90 s),
# and as 4 single pods of 2 GPUs (before: 3 of 4, other kept 2 GPUs).
reclaim_zero_share() { # GANG(1|0)
    reset_all
    gpu_nodes g 2 4
    make_queue train '{"resources": {"gpu": {"quota": 8, "limit": 8}}}'
    make_queue other '{"resources": {"gpu": {"quota": 0}}}'
    make_pods o 8 --gpu 1 --label "$QLABEL=other"
    wait_until '[ "$(bound o)" = 8 ]' 30 || fail "other: $(bound o)/8 bound"
    local t0=$SECONDS
    if [ "$1" = 1 ]; then
        make_podgroup t 4
        make_pods t 4 --gpu 2 --label "$QLABEL=train" --label "$PG_LABEL=t"
    else
        make_pods t 4 --gpu 2 --label "$QLABEL=train"
    fi
    wait_until '[ "$(bound t)" = 4 ]' 60 ||
        fail "train: $(bound t)/4 bound, other still holds $(bound o); $(events_for t-0 | tail -2 | tr '\n' ' ')"
    log "measured: train reclaimed 8 GPUs in $((SECONDS - t0)) s"
    [ "$(existing o)" = 0 ] || fail "other keeps $(existing o) pods with a fair share of 0"
    assert_no_overcommit
}
case_reclaim_zero_share_gang() { reclaim_zero_share 1; }
case_reclaim_zero_share_pods() { reclaim_zero_share 0; }

# Issue 35, fault 9. Queues qa and qb of GPU quota 4 each; qa's gang (2 x 4
# GPUs) runs on both 4-GPU nodes, twice qa's quota. qb (holding nothing)
# submits one 4-GPU pod: the gang is over-quota work as a whole and goes, so
# qb's pod runs (before: nothing in 90 s, "0 with victims allowed": without
# the gang qa is below its quota). The gang, recreated, waits: it cannot
# reclaim from qb, which is at its quota, not over it.
case_reclaim_gang_over_quota() {
    reset_all
    gpu_nodes g 2 4
    make_queue qa '{"resources": {"gpu": {"quota": 4}}}'
    make_queue qb '{"resources": {"gpu": {"quota": 4}}}'
    make_podgroup ga 2
    make_pods ga 2 --gpu 4 --label "$QLABEL=qa" --label "$PG_LABEL=ga"
    wait_until '[ "$(bound ga)" = 2 ]' 30 || fail "qa's gang: $(bound ga)/2 bound"
    local t0=$SECONDS
    make_pod b-0 --gpu 4 --label "$QLABEL=qb"
    wait_until '[ "$(bound b)" = 1 ]' 60 ||
        fail "qb's pod not bound, qa's gang holds $(bound ga); $(events_for b-0 | tail -2 | tr '\n' ' ')"
    log "measured: qb reclaimed 4 GPUs from qa's gang in $((SECONDS - t0)) s"
    [ "$(existing ga)" = 0 ] || fail "qa's gang keeps $(existing ga) pods"
    local at ev
    at=$(pods_json | jq -r '.items[] | select(.metadata.name == "b-0") | .spec.nodeName')
    ev=$(kc get events -n default --field-selector reason=Preempted -o json |
        jq '[.items[] | select(.message | contains("reclaimed by queue \"qb\" from queue \"qa\""))] | length')
    [ "$ev" -ge 2 ] || fail "$ev Preempted events say qb reclaimed from qa, want 2"
    make_pods ga 2 --gpu 4 --label "$QLABEL=qa" --label "$PG_LABEL=ga"
    sleep 20
    [ "$(bound ga)" = 0 ] || fail "the recreated gang bound $(bound ga) pods"
    [ "$(pods_json | jq -r '.items[] | select(.metadata.name == "b-0") | .spec.nodeName // ""')" = "$at" ] ||
        fail "qb's pod left $at: qa reclaimed it back"
    assert_no_overcommit
}

# Fault 4. Queue team at its limit (4 GPUs) with 4 pods of priority 10; the
# nodes have room. A priority-50 pod of team takes the place of one of them
# (priority preemption inside a queue, as kube-scheduler's); a second
# priority-10 pod does not (it waits, with the limit's message).
case_limit_own_priority() {
    reset_all
    gpu_nodes g 2 4
    make_queue team '{"resources": {"gpu": {"quota": 4, "limit": 4}}}'
    make_pods low 4 --gpu 1 --label "$QLABEL=team" --priority-class low
    wait_until '[ "$(bound low)" = 4 ]' 30 || fail "team: $(bound low)/4 bound"
    make_pod same-0 --gpu 1 --label "$QLABEL=team" --priority-class low
    wait_until 'events_for same-0 | grep -q "queue \"team\" limit"' 20 ||
        fail "same-0: no limit message: $(events_for same-0 | tr '\n' ' ')"
    make_pod urgent-0 --gpu 1 --label "$QLABEL=team" --priority-class mid
    wait_until '[ "$(bound urgent)" = 1 ]' 30 || fail "urgent-0 not bound: $(events_for urgent-0 | tr '\n' ' ')"
    [ "$(existing low)" = 3 ] || fail "$(existing low) low pods left, want 3 (one preempted)"
    [ "$(bound same)" = 0 ] || fail "same-0 (priority 10) was bound past the limit"
    assert_no_overcommit
}

# The same rule for a gang (issue 22: one admission row for every pod set):
# a PodGroup of 2 x 1 GPU at priority 50 in team, held at its limit by 4
# pods of priority 10, takes the place of two of them, whole. Before, a
# gang's admission only said no ("its minimum of 2 pods: queue \"team\"
# limit") and waited for team's own low-priority pods to finish.
case_limit_own_priority_gang() {
    reset_all
    gpu_nodes g 2 4
    make_queue team '{"resources": {"gpu": {"quota": 4, "limit": 4}}}'
    make_pods low 4 --gpu 1 --label "$QLABEL=team" --priority-class low
    wait_until '[ "$(bound low)" = 4 ]' 30 || fail "team: $(bound low)/4 bound"
    make_podgroup urgent 2
    make_pods urgent 2 --gpu 1 --label "$QLABEL=team" --label "$PG_LABEL=urgent" --priority-class mid
    wait_until '[ "$(bound urgent)" = 2 ]' 45 || fail "urgent: $(bound urgent)/2 bound: $(events_for urgent-0 | tail -3 | tr '\n' ' ')"
    [ "$(existing low)" = 2 ] || fail "$(existing low) low pods left, want 2 (two preempted for the gang)"
    assert_no_overcommit
}

case_clean_shutdown() {
    stop_scheduler_clean
}

cp_start
apply_pool_crd || die "Pool CRD"
apply_podgroup_crd || die "PodGroup CRD"
apply_queue_crd || die "Queue CRD"
make_priority_class low 10
make_priority_class mid 50
start_scheduler
run_case queues-borrow-reclaim case_queues_borrow_reclaim
run_case reclaim-zero-share-gang case_reclaim_zero_share_gang
run_case reclaim-zero-share-pods case_reclaim_zero_share_pods
run_case reclaim-gang-over-quota case_reclaim_gang_over_quota
run_case limit-own-priority case_limit_own_priority
run_case limit-own-priority-gang case_limit_own_priority_gang
run_case clean-shutdown case_clean_shutdown
finish
