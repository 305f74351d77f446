#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Minimum runtime and the freezing window (issue 26): a running pod younger
# than its minimum (Pool spec, Queue spec, lowered by its annotation) is no
# victim of priority preemption (preemptMinRuntime) or reclaim
# (reclaimMinRuntime); the waiting pod's FailedScheduling message names the
# time the first such pod becomes available, and it is placed then, not at a
# 60 s poll; "-1" is never; an elastic gang's surplus is kept for its
# freezing window after the scheduler resized it.
# There is no kubelet: the test plays it by writing status.phase Running and
# status.startTime (the pod's age) itself.
# One control plane; each case resets nodes, pods, pools, queues, podgroups.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=minruntime/

QLABEL=resource.aibee.cn/queue
PG_API=/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups

make_pool() {
    api_post_json /apis/resource.aibee.cn/v1alpha1/pools "$(jq -cn --arg n "$1" --argjson x "${2:-{\}}" \
        '{apiVersion: "resource.aibee.cn/v1alpha1", kind: "Pool", metadata: {name: $n},
          spec: ({nodeSelector: {matchLabels: {pool: $n}}, disableBorrowing: true} + $x)}')"
}

reset_all() {
    kc delete events --all -n default >/dev/null 2>&1 || true
    cp_reset
    kc delete pools --all --wait=false >/dev/null 2>&1 || true
    kc delete queues.resource.aibee.cn --all --wait=false >/dev/null 2>&1 || true
    kc delete podgroups.scheduling.x-k8s.io --all -n default --wait=false >/dev/null 2>&1 || true
    wait_until '[ "$(kc get pools,queues.resource.aibee.cn -o name | wc -l)" = 0 ]' 30 || fail "pools/queues remain"
    sched_alive || { log "scheduler is dead; restarting it"; start_scheduler; }
    STARTS=$CP_WORK/minrt.starts
    : >"$STARTS"
}

pod_exists() { kc get pod "$1" -o name >/dev/null 2>&1; }
# rfc EPOCH: RFC 3339 UTC.
rfc() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
# play_kubelet POD AGE_S [MIN_S]: the pod Running, started AGE_S seconds ago;
# remembers "POD START_EPOCH MIN_S" for the eviction check.
play_kubelet() {
    local p=$1 start=$(($(date +%s) - $2))
    api_req PATCH "/api/v1/namespaces/default/pods/$p/status" -H 'Content-Type: application/merge-patch+json' \
        -o /dev/null -w '%{http_code}' --data-binary "{\"status\":{\"phase\":\"Running\",\"startTime\":\"$(rfc "$start")\"}}" |
        grep -q '^2' || fail "could not set $p Running"
    echo "$p $start ${3:-0}" >>"$STARTS"
}
# wait_bound POD...
wait_bound() {
    local p
    for p; do wait_until "[ -n \"\$(pod_node $p)\" ]" 60 || fail "$p not bound: $(events_for "$p" | tail -2 | tr '\n' ' ')"; done
}
# evictions: "VICTIM EPOCH" per Preempted event (its firstTimestamp).
evictions() {
    kc get events -n default -o json --field-selector reason=Preempted |
        jq -r '.items[] | "\(.involvedObject.name) \(.firstTimestamp // .eventTime | sub("\\.[0-9]+"; "") | fromdateiso8601)"'
}
# check_evictions: EVERY Preempted event's victim was evicted no earlier
# than its start plus its minimum (the ones recorded by play_kubelet);
# prints how many distinct pods were evicted (a victim already gone when a
# second preemptor chose it gets a second event: its Eviction answers 404).
check_evictions() {
    local v t start min seen=" "
    while read -r v t; do
        read -r _ start min < <(grep "^$v " "$STARTS") || fail "evicted $v is not one of the test's pods"
        [ "$t" -ge $((start + min)) ] ||
            fail "$v evicted at $(rfc "$t"), younger than its minimum ${min}s (started $(rfc "$start"))"
        [[ "$seen" == *" $v "* ]] || seen="$seen$v "
    done < <(evictions)
    echo $(($(wc -w <<<"$seen")))
}
# last_wait_msg POD: the newest FailedScheduling message.
last_wait_msg() { events_for "$1" default FailedScheduling | tail -1 | cut -f2; }

# The message names startTime + minimum (to the second); the pod is placed
# only after that time, within ~2 s (a timed wake, no 60 s poll).
case_wait_message_time() {
    reset_all
    make_pool p '{"preemptMinRuntime": "25s"}'
    make_node na 1 8Gi 0 110 pool=p
    make_pod v --pool p --cpu 1 --priority-class low
    wait_bound v
    play_kubelet v 10 25
    local until
    until=$(rfc $(($(grep '^v ' "$STARTS" | cut -d' ' -f2) + 25)))
    make_pod hi --pool p --cpu 1 --priority-class high
    local want="protected by a minimum runtime until $until (pool \"p\": preemptMinRuntime 25s)"
    wait_until "last_wait_msg hi | grep -qF '$want'" 20 || fail "hi's message '$(last_wait_msg hi)', want '...$want'"
    pod_exists v || fail "v evicted while protected"
    wait_bound hi
    local bound now
    now=$(date +%s)
    bound=$(kc get events -n default -o json --field-selector involvedObject.name=hi,reason=Scheduled |
        jq -r '.items[0] | (.firstTimestamp // .eventTime) | sub("\\.[0-9]+"; "") | fromdateiso8601')
    [ -n "$bound" ] && [ "$bound" != null ] || bound=$now
    local due
    due=$(date -u -d "$until" +%s)
    [ "$bound" -ge "$due" ] || fail "hi placed at $(rfc "$bound"), before $until"
    [ "$bound" -le $((due + 3)) ] || fail "hi placed at $(rfc "$bound"), more than 2 s after $until (polled?)"
    echo "measure: wait message named $until; hi placed at $(rfc "$bound") ($((bound - due)) s after)"
    [ "$(check_evictions)" = 1 ] || fail "want exactly one eviction (v)"
}

# Churn: rounds of low-priority pods of mixed ages preempted by
# high-priority ones; every eviction's victim is checked against its minimum.
case_churn() {
    reset_all
    make_pool c '{"preemptMinRuntime": "40s"}'
    make_node nc 4 8Gi 0 110 pool=c
    local r i ages
    for r in 1 2 3; do
        # ages: two old, one just under the minimum (freed during the round), one young
        ages=(300 $((35 + r)) 100 5)
        for i in 0 1 2 3; do make_pod "r$r-l$i" --pool c --cpu 1 --priority-class low; done
        wait_bound "r$r-l0" "r$r-l1" "r$r-l2" "r$r-l3"
        for i in 0 1 2 3; do play_kubelet "r$r-l$i" "${ages[$i]}" 40; done
        for i in 0 1 2; do make_pod "r$r-h$i" --pool c --cpu 1 --priority-class high; done
        wait_bound "r$r-h0" "r$r-h1" "r$r-h2"
        pod_exists "r$r-l3" || fail "round $r: the young r$r-l3 was evicted"
        # the test plays the kubelet again: the round's pods finish
        kc delete pods --all -n default --grace-period=0 --force --wait=false >/dev/null 2>&1
        wait_until '[ "$(kc get pods -o name | wc -l)" = 0 ]' 30 || fail "round $r: pods remain"
    done
    local n
    n=$(check_evictions) || exit 1
    [ "$n" = 9 ] || fail "want 9 pods evicted (3 per round), got $n"
    echo "measure: churn: $n pods evicted in 3 rounds ($(evictions | wc -l) Preempted events checked), none younger than its minimum"
}

# Reclaim across queues: b takes back what a borrowed, but not a's pods
# younger than a's reclaimMinRuntime; preemptMinRuntime does not apply.
case_reclaim() {
    reset_all
    make_pool q
    make_node nq 64 256Gi 4 110 pool=q
    make_queue a '{"resources": {"gpu": {"quota": 2}}, "reclaimMinRuntime": "1h", "preemptMinRuntime": "0"}'
    make_queue b '{"resources": {"gpu": {"quota": 2}}}'
    local i
    for i in 0 1 2 3; do make_pod "a$i" --pool q --gpu 1 --label "$QLABEL=a"; done
    wait_bound a0 a1 a2 a3
    play_kubelet a0 7200 3600
    for i in 1 2 3; do play_kubelet "a$i" 60 3600; done
    make_pod b0 --pool q --gpu 1 --label "$QLABEL=b"
    make_pod b1 --pool q --gpu 1 --label "$QLABEL=b"
    wait_until '[ -n "$(pod_node b0)" ] || [ -n "$(pod_node b1)" ]' 60 || fail "no b pod placed"
    wait_until '! pod_exists a0' 30 || fail "old a0 not reclaimed"
    local waiting=b1
    [ -n "$(pod_node b1)" ] && waiting=b0
    wait_until "last_wait_msg $waiting | grep -qF 'queue \"a\": reclaimMinRuntime 1h'" 20 ||
        fail "$waiting's message '$(last_wait_msg $waiting)' does not name a's reclaimMinRuntime"
    for i in 1 2 3; do pod_exists "a$i" || fail "young a$i reclaimed"; done
    [ "$(check_evictions)" = 1 ] || fail "want exactly one eviction (a0)"
    echo "measure: reclaim: $waiting waits: $(last_wait_msg $waiting | grep -o 'preemption:.*')"
}

# A pod's annotation lowers the pool's minimum (never raises it); "-1" is
# never, said as such; a malformed annotation gets one Warning event.
case_annotation_and_never() {
    reset_all
    make_pool p '{"preemptMinRuntime": "1h"}'
    make_node na 2 8Gi 0 110 pool=p
    make_pod vann --pool p --cpu 1 --priority-class low --annotation resource.aibee.cn/preempt-min-runtime=5s
    make_pod vbad --pool p --cpu 1 --priority-class low --annotation resource.aibee.cn/preempt-min-runtime=soon
    wait_bound vann vbad
    play_kubelet vann 20 5
    play_kubelet vbad 20 3600
    wait_until 'events_for vbad default InvalidMinRuntime | grep -q .' 10 || fail "no InvalidMinRuntime event on vbad"
    make_pod hi --pool p --cpu 1 --priority-class high
    wait_bound hi
    pod_exists vann && fail "vann (annotation 5s, 20 s old) not evicted"
    pod_exists vbad || fail "vbad (malformed annotation: the pool's 1h) evicted"
    [ "$(check_evictions)" = 1 ] || fail "want exactly one eviction (vann)"

    make_pool n '{"preemptMinRuntime": "-1"}'
    make_node nn 1 8Gi 0 110 pool=n
    make_pod old --pool n --cpu 1 --priority-class low
    wait_bound old
    play_kubelet old 86400 999999999
    make_pod hi2 --pool n --cpu 1 --priority-class high
    wait_until "last_wait_msg hi2 | grep -qF 'never preempted (pool \"n\": preemptMinRuntime -1)'" 20 ||
        fail "hi2's message '$(last_wait_msg hi2)'"
    sleep 2
    pod_exists old || fail "old evicted under preemptMinRuntime -1"
    [ -z "$(pod_node hi2)" ] || fail "hi2 placed"
}

# Freezing window: an elastic gang grown in one burst keeps its surplus for
# its window (a preemptor waits, the message naming the window's end), and
# loses one after it.
case_freezing_window() {
    reset_all
    make_pool g
    make_node ng 3 8Gi 0 110 pool=g
    api_post_json "$PG_API" '{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": "el", "annotations": {"resource.aibee.cn/freezing-window": "12s"}}, "spec": {"minMember": 1}}'
    local i
    for i in 0 1 2; do make_pod "el-$i" --pool g --cpu 1 --priority-class low --label scheduling.x-k8s.io/pod-group=el; done
    wait_bound el-0 el-1 el-2
    local t0
    t0=$(date +%s)
    for i in 0 1 2; do play_kubelet "el-$i" 600 0; done
    make_pod hi --pool g --cpu 1 --priority-class high
    wait_until "last_wait_msg hi | grep -qF 'pod group default/el: resource.aibee.cn/freezing-window 12s'" 20 ||
        fail "hi's message '$(last_wait_msg hi)' does not name the freezing window"
    local until due
    until=$(last_wait_msg hi | grep -o 'until [0-9TZ:-]*' | cut -d' ' -f2)
    due=$(date -u -d "$until" +%s)
    [ "$due" -ge $((t0 + 12 - 4)) ] && [ "$due" -le $((t0 + 12)) ] || fail "window ends $until, want ~12 s after the gang grew ($(rfc "$t0"))"
    local gone=0
    for i in 0 1 2; do pod_exists "el-$i" || gone=$((gone + 1)); done
    [ "$gone" = 0 ] || fail "a member was evicted inside the freezing window"
    wait_bound hi
    local v t
    read -r v t < <(evictions | head -1)
    [ -n "$v" ] || fail "no eviction after the window"
    [ "$t" -ge "$due" ] || fail "$v evicted at $(rfc "$t"), inside the window (until $until)"
    echo "measure: freezing window until $until; $v evicted at $(rfc "$t")"
    # That eviction resized the gang again: a new member is not placed before
    # the new window ends, even with room (hi finishes: the test plays the kubelet).
    make_pod el-3 --pool g --cpu 1 --priority-class low --label scheduling.x-k8s.io/pod-group=el
    kc delete pod hi --grace-period=0 --force --wait=false >/dev/null 2>&1
    wait_until "last_wait_msg el-3 | grep -qF 'no further change until'" 20 ||
        fail "el-3 not held by the window: '$(last_wait_msg el-3)'"
    until=$(last_wait_msg el-3 | grep -o 'until [0-9TZ:-]*' | cut -d' ' -f2)
    due=$(date -u -d "$until" +%s)
    [ "$due" -ge $((t + 12 - 1)) ] && [ "$due" -le $((t + 12 + 1)) ] || fail "new window ends $until, want 12 s after $(rfc "$t")"
    wait_bound el-3
    local now
    now=$(date +%s)
    [ "$now" -ge "$due" ] || fail "el-3 placed at $(rfc "$now"), inside the window (until $until)"
    [ "$now" -le $((due + 4)) ] || fail "el-3 placed at $(rfc "$now"), long after the window's end $until"
    echo "measure: growth held until $until; el-3 placed at $(rfc "$now")"
}

case_clean_shutdown() {
    stop_scheduler_clean
}

cp_start
make_priority_class low 10
make_priority_class high 100
start_scheduler
run_case wait-message-time case_wait_message_time
run_case churn case_churn
run_case reclaim case_reclaim
run_case annotation-and-never case_annotation_and_never
run_case freezing-window case_freezing_window
run_case clean-shutdown case_clean_shutdown
finish
