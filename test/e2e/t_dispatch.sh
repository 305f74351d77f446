#!/usr/bin/env bash
# shellcheck disable=SC2016
# t_dispatch.sh -- MultiClusterJob dispatch (issue 12) on three real control
# planes: a hub and two members (a: priority 60, b: priority 20), each member
# with its own ai-scheduler. No kubelet runs: fake_kubelet.py marks bound pods
# Running and confirms deletions, as a kubelet would. Capacity is a node in
# the member or none.
#
# Policy numbers: guard 3 s, timeScale 0.25 s, so a keeps a window of
# (60 - 20) * 0.25 = 10 s against b. The checks compare .status with the
# rule's exact answer: decidedAt = winner.runningSince + guard, a window ends
# at decidedAt + (p_a - p_b) * timeScale.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
E2E_FILE=dispatch/

cp_start
kc apply -f "$REPO/pools/multiclusterjob-crd.yaml" >/dev/null || die "CRD"
wait_until 'kc get crd multiclusterjobs.resource.aibee.cn -o json | jq -e ".status.conditions[] | select(.type==\"Established\" and .status==\"True\")"' 30 ||
    die "CRD not established"
member_start a || die "member a"
member_start b || die "member b"
member_scheduler a
member_scheduler b
for m in a b; do
    kc create secret generic "member-$m" --from-file=kubeconfig="$CP_WORK/m/$m/admin.kubeconfig" >/dev/null ||
        die "secret member-$m"
done
python3 "$E2E_DIR/fake_kubelet.py" --ca "$CP_WORK/pki/ca.crt" --cert "$CP_WORK/pki/admin.crt" \
    --key "$CP_WORK/pki/admin.key" --interval 0.2 \
    "https://127.0.0.1:$(cat "$CP_WORK/m/a/port")" "https://127.0.0.1:$(cat "$CP_WORK/m/b/port")" \
    >"$CP_WORK/kubelet.log" 2>&1 &
_pid_record $! fake-kubelet

DISPATCH_N=0
# start_dispatch: the controller ($AISCHED_BIN dispatch) against the hub; its
# pid lands in dispatch.pid and, when it ends, its exit code in dispatch.rc.
start_dispatch() {
    DISPATCH_N=$((DISPATCH_N + 1))
    rm -f "$CP_WORK/dispatch.pid" "$CP_WORK/dispatch.rc"
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1} LOGF=$CP_WORK/dispatch.$DISPATCH_N.log \
        PIDF=$CP_WORK/dispatch.pid RCF=$CP_WORK/dispatch.rc \
        bash -c '"$@" >"$LOGF" 2>&1 & echo $! >"$PIDF.tmp"; mv "$PIDF.tmp" "$PIDF"; wait $!; echo $? >"$RCF"' _ \
        "$AISCHED_BIN" dispatch --kubeconfig "$DISPATCH_KUBECONFIG" --leader-elect=false \
        --metrics-bind-address 127.0.0.1 --metrics-port "$(free_port | tee "$CP_WORK/dispatch.port")" "${METRICS_OPEN[@]}" \
        --poll-interval "${DISPATCH_POLL:-0.25}" -v 4 &
    _pid_record $! dispatch-wrapper
    wait_until '[ -s "$CP_WORK/dispatch.pid" ]' 10 0.05 || fail "dispatch did not start"
    _pid_record "$(dispatch_pid)" dispatch
}
dispatch_pid() { cat "$CP_WORK/dispatch.pid"; }
# restart_dispatch [POLL]: stop the controller (SIGTERM) and start it again
# with --poll-interval POLL (default 0.25).
restart_dispatch() {
    _kill_pid "$(dispatch_pid)" 10
    wait_until '[ -s "$CP_WORK/dispatch.rc" ]' 10 0.1 || fail "the controller did not stop"
    DISPATCH_POLL=${1:-0.25} start_dispatch
}

# nodes_in MEMBER N: exactly N 8-CPU nodes in the member (0 = no room).
nodes_in() {
    local m=$1 n=$2 i
    # a case that failed with the member down leaves it down: bring it back
    kill -0 "$(cat "$CP_WORK/m/$m/api.pid")" 2>/dev/null || member_api_start "$m" || return 1
    mkc "$m" delete nodes --all --wait=false >/dev/null 2>&1 || true
    wait_until "[ \"\$(mkc $m get nodes -o name | wc -l)\" = 0 ]" 20 || return 1
    for ((i = 1; i <= n; i++)); do
        node_json "n$i" 8 16Gi 0 110 | mkc "$m" create -f - >/dev/null || return 1
    done
}

# mcjob NAME GUARD SCALE [CLUSTERS-JSON]: a job whose template is one pod
# asking for params.cpu (1 in a, 1 in b); the pod has no name of its own, so
# it is NAME-a in a and NAME-b in b.
mcjob() {
    local name=$1 guard=$2 scale=$3
    local clusters=${4:-'[{"name":"a","kubeconfigSecret":"member-a","priority":60},{"name":"b","kubeconfigSecret":"member-b","priority":20}]'}
    jq -n --arg n "$name" --argjson g "$guard" --argjson s "$scale" --argjson c "$clusters" --arg sched "$SCHED_NAME" '{
      apiVersion: "resource.aibee.cn/v1alpha1", kind: "MultiClusterJob",
      metadata: {name: $n, namespace: "default"},
      spec: {clusters: $c, guardTimeRunningSeconds: $g, timeScaleSeconds: $s,
             params: {cpu: {a: "1", b: "1", c: "1", x: "1"}, args: {a: ["--big"], b: ["--small"], c: [], x: []}},
             template: [{apiVersion: "v1", kind: "Pod", metadata: {labels: {app: "train"}},
                         spec: {schedulerName: $sched, terminationGracePeriodSeconds: 0,
                                containers: [{name: "main", image: "busybox", args: "<% $mcc.args %>",
                                  env: [{name: "WHERE", value: "cpu=<% $mcc.cpu %>"}],
                                  resources: {requests: {cpu: "<% $mcc.cpu %>"}}}]}}]}}' |
        kc apply -f - >/dev/null
}

# delete_job NAME: delete it and wait until the finalizer let it go.
delete_job() {
    kc delete mcjob "$1" --wait=false >/dev/null
    wait_until "! kc get mcjob $1" 30 || fail "$1 never deleted: $(st "$1")"
}
st() { kc get mcjob "$1" -o json | jq -c ".status${2:-}"; }
cst() { kc get mcjob "$1" -o json | jq -r --arg c "$2" ".status.clusters[] | select(.name==\$c) | .${3:-state}"; }
uid_of() { kc get mcjob "$1" -o jsonpath='{.metadata.uid}'; }
# ours MEMBER UID: how many pods carry the job's uid label there (live ones).
ours() {
    mkc "$1" get pods -A -l "resource.aibee.cn/multiclusterjob-uid=$2" -o json |
        jq '[.items[] | select(.metadata.deletionTimestamp == null)] | length'
}
# ms RFC3339: milliseconds since the epoch.
ms() { python3 -c 'import sys,datetime; print(int(datetime.datetime.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()*1000))' "$1"; }
latency_line() { # JOB LOSER: deletedAt - when its cancel was due
    local j=$1 l=$2 due del
    due=$(ms "$(cst "$j" "$l" cancelDueAt)")
    del=$(ms "$(cst "$j" "$l" deletedAt)")
    echo "LATENCY $j/$l $(((del - due)))ms" | tee -a "$CP_WORK/latency.txt" >&2
}

start_dispatch

# 1. Only b (low priority) has room: b wins after the guard time; a keeps its
#    10 s window, then is cancelled and its pod deleted.
c_only_low() {
    nodes_in a 0 && nodes_in b 1
    mcjob j1 3 0.25
    wait_until '[ "$(st j1 .winner)" = "\"b\"" ]' 40 || fail "b never won: $(st j1)"
    local dec rs we
    dec=$(ms "$(st j1 .decidedAt | jq -r .)")
    rs=$(ms "$(cst j1 b runningSince)")
    [ $((dec - rs)) = 3000 ] || fail "b decided $((dec - rs)) ms after it ran, want 3000"
    we=$(ms "$(cst j1 a windowEndsAt)")
    [ $((we - dec)) = 10000 ] || fail "a's window ends $((we - dec)) ms after the decision, want 10000"
    [ "$(cst j1 a)" = Waiting ] || fail "a is $(cst j1 a) inside its window, want Waiting"
    [ "$(ours a "$(uid_of j1)")" = 1 ] || fail "a's pod should still exist inside its window"
    wait_until '[ "$(cst j1 a)" = Cancelled ] && [ "$(cst j1 a cleanedUp)" = true ]' 20 || fail "a not cancelled: $(st j1)"
    local can
    can=$(ms "$(cst j1 a cancelledAt)")
    [ "$can" -ge "$we" ] && [ "$can" -lt $((we + 2000)) ] ||
        fail "a cancelled $((can - we)) ms after its window ended (want 0..2000)"
    [ "$(ours a "$(uid_of j1)")" = 0 ] || fail "a's pod left behind"
    [ "$(ours b "$(uid_of j1)")" = 1 ] || fail "b's pod gone"
    [ "$(mkc b get pod j1-b -o jsonpath='{.spec.containers[0].args[0]}')" = --small ] || fail "b's args not specialised"
    [ "$(mkc b get pod j1-b -o jsonpath='{.spec.containers[0].env[0].value}')" = cpu=1 ] || fail "text param"
    latency_line j1 a
    bin/ai-scheduler mcjob get --kubeconfig "$ADMIN_KUBECONFIG" | tee "$CP_WORK/table.txt" >&2
    grep -Eq '^j1 +Won +b +[0-9]+s +a\(60\)=Cancelled,b\(20\)=Won' "$CP_WORK/table.txt" || fail "mcjob get table"
    delete_job j1
}

# 2. b runs first and wins; a gets room within its window and wins its own
#    guard time inside it: a becomes the winner, b is cancelled.
c_high_in_window() {
    nodes_in a 0 && nodes_in b 1
    mcjob j2 3 0.25
    wait_until '[ "$(st j2 .winner)" = "\"b\"" ]' 40 || fail "b never led: $(st j2)"
    local dec
    dec=$(ms "$(st j2 .decidedAt | jq -r .)")
    nodes_in a 1
    wait_until '[ "$(st j2 .winner)" = "\"a\"" ]' 30 || fail "a never took over: $(st j2)"
    local ars adec
    ars=$(ms "$(cst j2 a runningSince)")
    adec=$(ms "$(st j2 .decidedAt | jq -r .)")
    [ $((adec - ars)) = 3000 ] || fail "a decided $((adec - ars)) ms after it ran, want 3000"
    [ "$adec" -le $((dec + 10000)) ] || fail "a won after its window"
    wait_until '[ "$(cst j2 b)" = Cancelled ] && [ "$(cst j2 b cleanedUp)" = true ]' 20 || fail "b not cancelled: $(st j2)"
    [ "$(ours b "$(uid_of j2)")" = 0 ] || fail "b's pod left behind"
    [ "$(ours a "$(uid_of j2)")" = 1 ] || fail "a's pod gone"
    [ "$(st j2 .phase)" = '"Won"' ] || fail "phase $(st j2 .phase)"
    latency_line j2 b
    delete_job j2
}

# 3. Both have room: a (higher) wins, b is cancelled; deleting the job then
#    leaves nothing anywhere (6 for a decided job).
c_both_room() {
    nodes_in a 1 && nodes_in b 1
    mcjob j3 3 0.25
    wait_until '[ "$(kc get mcjob j3 -o json | jq -r ".status.conditions[] | select(.type==\"Decided\") | .status")" = True ]' 40 ||
        fail "never decided: $(st j3)"
    [ "$(st j3 .winner)" = '"a"' ] || fail "winner $(st j3 .winner), want a"
    wait_until '[ "$(cst j3 b cleanedUp)" = true ]' 10 || fail "b not cleaned"
    local u
    u=$(uid_of j3)
    [ "$(ours b "$u")" = 0 ] && [ "$(ours a "$u")" = 1 ] || fail "objects: a $(ours a "$u"), b $(ours b "$u")"
    latency_line j3 b
    kc delete mcjob j3 --wait=false >/dev/null
    wait_until '! kc get mcjob j3' 30 || fail "hub object never went: $(st j3)"
    [ "$(ours a "$u")" = 0 ] && [ "$(ours b "$u")" = 0 ] || fail "left behind: a $(ours a "$u"), b $(ours b "$u")"
    kc get events -o json | jq -e '[.items[] | select(.involvedObject.name=="j3" and .reason=="Won")] | length > 0' \
        >/dev/null || fail "no Won event"
}

# 4. a is down when the job is submitted (Unavailable, retried with
#    backoff), comes back within its window (submitted), goes down again,
#    and is cancelled while down: the cleanup reaches it when it is back.
c_member_down() {
    nodes_in a 0 && nodes_in b 1
    member_api_stop a
    mcjob j4 3 1
    wait_until '[ "$(cst j4 a)" = Unavailable ] && [ "$(st j4 .winner)" = "\"b\"" ]' 40 || fail "$(st j4)"
    kc get mcjob j4 -o json | jq -e '.status.conditions[] | select(.type=="ClusterReady.a" and .status=="False" and .reason=="Unreachable")' \
        >/dev/null || fail "no Unreachable condition for a: $(st j4 .conditions)"
    member_api_start a || fail "a did not come back"
    wait_until '[ "$(cst j4 a)" = Waiting ]' 30 || fail "a never submitted: $(st j4)"
    local u
    u=$(uid_of j4)
    [ "$(ours a "$u")" = 1 ] || fail "a has no pod after coming back"
    member_api_stop a
    wait_until '[ "$(cst j4 a)" = Cancelled ]' 60 || fail "a never cancelled: $(st j4)"
    [ "$(cst j4 a cleanedUp)" != true ] || fail "cleaned while down?"
    member_api_start a || fail "a did not come back"
    wait_until '[ "$(cst j4 a cleanedUp)" = true ]' 30 || fail "cleanup never reached a: $(st j4)"
    [ "$(ours a "$u")" = 0 ] || fail "a's pod left behind"
    [ "$(ours b "$u")" = 1 ] || fail "b's pod gone"
    delete_job j4
}

# 5. The controller is killed (SIGKILL) again and again while four jobs
#    race: no object is created twice, no loser is left, winners exact.
c_controller_killed() {
    nodes_in a 1 && nodes_in b 1
    local i
    # a 40 s window: the decision never depends on how fast a schedules
    for i in 1 2 3 4; do mcjob "k$i" 2 1; done
    local end=$((SECONDS + 20)) n=0
    while [ $SECONDS -lt $end ]; do
        sleep "0.$((RANDOM % 9 + 1))"
        kill -KILL "$(dispatch_pid)" 2>/dev/null || true
        wait_until '[ -s "$CP_WORK/dispatch.rc" ]' 10 0.05 || fail "killed controller still there"
        start_dispatch
        n=$((n + 1))
    done
    log "controller killed $n times"
    for i in 1 2 3 4; do
        wait_until "[ \"\$(st k$i .winner)\" = '\"a\"' ] && [ \"\$(cst k$i b cleanedUp)\" = true ]" 40 ||
            fail "k$i: $(st "k$i")"
        local u
        u=$(uid_of "k$i")
        [ "$(ours a "$u")" = 1 ] && [ "$(ours b "$u")" = 0 ] || fail "k$i: a $(ours a "$u") b $(ours b "$u")"
        # every object of ours in a is the one named k$i-a: none created twice
        [ "$(mkc a get pods -A -l "resource.aibee.cn/multiclusterjob-uid=$u" -o name)" = "pod/k$i-a" ] ||
            fail "k$i: unexpected objects in a"
    done
    for i in 1 2 3 4; do kc delete mcjob "k$i" --wait=false >/dev/null; done
    wait_until '[ "$(kc get mcjob -o name | grep -c "/k")" = 0 ]' 30 || fail "k* not deleted"
}

# 6. Deleting a job mid-race removes its objects from every member.
c_delete_racing() {
    nodes_in a 0 && nodes_in b 0
    mcjob j6 3 0.25
    wait_until '[ "$(cst j6 a)" = Waiting ] && [ "$(cst j6 b)" = Waiting ]' 30 || fail "$(st j6)"
    local u
    u=$(uid_of j6)
    [ "$(ours a "$u")" = 1 ] && [ "$(ours b "$u")" = 1 ] || fail "not submitted everywhere"
    kc delete mcjob j6 --wait=false >/dev/null
    wait_until '! kc get mcjob j6' 30 || fail "hub object never went"
    [ "$(ours a "$u")" = 0 ] && [ "$(ours b "$u")" = 0 ] || fail "left behind"
}

# A gang in the template: a PodGroup and its two workers. The pod-group
# label follows the rename, each member's ai-scheduler places the gang whole,
# the member is Running once both workers run; the loser's PodGroup and pods
# go with it.
c_gang_template() {
    nodes_in a 1 && nodes_in b 0
    jq -n --arg sched "$SCHED_NAME" '
      def worker($n): {apiVersion: "v1", kind: "Pod",
        metadata: {name: $n, labels: {"scheduling.x-k8s.io/pod-group": "gang"}},
        spec: {schedulerName: $sched, terminationGracePeriodSeconds: 0,
               containers: [{name: "w", image: "x", resources: {requests: {cpu: "<% $mcc.cpu %>"}}}]}};
      {apiVersion: "resource.aibee.cn/v1alpha1", kind: "MultiClusterJob", metadata: {name: "jg"},
       spec: {guardTimeRunningSeconds: 2, timeScaleSeconds: 0.1,
              clusters: [{name: "a", kubeconfigSecret: "member-a", priority: 20},
                         {name: "b", kubeconfigSecret: "member-b", priority: 60}],
              params: {cpu: {a: "3", b: "3"}},
              template: [{apiVersion: "scheduling.x-k8s.io/v1alpha1", kind: "PodGroup",
                          metadata: {name: "gang"}, spec: {minMember: 2}},
                         worker("w0"), worker("w1")]}}' | kc apply -f - >/dev/null
    wait_until '[ "$(st jg .winner)" = "\"a\"" ] && [ "$(cst jg b cleanedUp)" = true ]' 40 || fail "$(st jg)"
    local u w
    u=$(uid_of jg)
    for w in w0-a w1-a; do
        [ "$(mkc a get pod "$w" -o jsonpath='{.metadata.labels.scheduling\.x-k8s\.io/pod-group}')" = gang-a ] ||
            fail "$w's pod-group label not renamed"
        [ -n "$(mkc a get pod "$w" -o jsonpath='{.spec.nodeName}')" ] || fail "$w not bound"
    done
    [ "$(mkc a get podgroup gang-a -o jsonpath='{.metadata.labels.resource\.aibee\.cn/multiclusterjob-uid}')" = "$u" ] ||
        fail "PodGroup gang-a not ours"
    [ "$(ours a "$u")" = 2 ] && [ "$(ours b "$u")" = 0 ] || fail "pods: a $(ours a "$u"), b $(ours b "$u")"
    ! mkc b get podgroup gang-b >/dev/null 2>&1 || fail "b's PodGroup left behind"
    delete_job jg
    ! mkc a get podgroup gang-a >/dev/null 2>&1 || fail "a's PodGroup left behind after deletion"
}

# Pools, borrowing and queues inside the members. a (60): the job's pool
# "train" has 2 CPUs, so the 4-CPU pod borrows the idle sharing pool "spare";
# its queue "research" has room. b (20): pool "batch" has room, but queue
# "research" is limited to 2 CPUs, so the pod is held by the queue. a runs
# by borrowing and wins at the guard time; b is cancelled at once and its
# queue holds nothing; deleting the job gives a's queue and lender back.
mpool() { # MEMBER NAME: a Pool of the nodes labelled pool=NAME
    jq -n --arg n "$2" '{apiVersion: "resource.aibee.cn/v1alpha1", kind: "Pool", metadata: {name: $n},
        spec: {nodeSelector: {matchLabels: {pool: $n}}}}' | mkc "$1" create -f - >/dev/null
}
mqueue() { # MEMBER NAME CPU-SPEC-JSON: a Queue with that cpu spec (millicores)
    jq -n --arg n "$2" --argjson c "$3" '{apiVersion: "resource.aibee.cn/v1alpha1", kind: "Queue",
        metadata: {name: $n}, spec: {resources: {cpu: $c}}}' | mkc "$1" create -f - >/dev/null
}
mqueue_status() { mkc "$1" get queues.resource.aibee.cn "$2" -o json | jq -c "${3:-.status}"; }
c_pools_queues() {
    nodes_in a 0 && nodes_in b 0
    node_json train-1 2 16Gi 0 110 pool=train | mkc a create -f - >/dev/null
    node_json spare-1 8 16Gi 0 110 pool=spare | mkc a create -f - >/dev/null
    node_json batch-1 8 16Gi 0 110 pool=batch | mkc b create -f - >/dev/null
    mpool a train && mpool a spare && mpool b batch
    mqueue a research '{"quota": 8000}' && mqueue b research '{"limit": 2000}'
    jq -n --arg sched "$SCHED_NAME" '{apiVersion: "resource.aibee.cn/v1alpha1", kind: "MultiClusterJob",
      metadata: {name: "jpq"}, spec: {guardTimeRunningSeconds: 2, timeScaleSeconds: 0.25,
        clusters: [{name: "a", kubeconfigSecret: "member-a", priority: 60},
                   {name: "b", kubeconfigSecret: "member-b", priority: 20}],
        params: {pool: {a: "train", b: "batch"}},
        template: [{apiVersion: "v1", kind: "Pod",
          metadata: {labels: {"resource.aibee.cn/queue": "research"},
                     annotations: {"resource.aibee.cn/pool": "<% $mcc.pool %>"}},
          spec: {schedulerName: $sched, terminationGracePeriodSeconds: 0,
                 containers: [{name: "main", image: "x", resources: {requests: {cpu: "4"}}}]}}]}}' |
        kc apply -f - >/dev/null
    local u
    wait_until '[ "$(cst jpq b)" = Waiting ]' 30 || fail "b never submitted: $(st jq)"
    # b: held by its queue's limit, with the queue's own words
    wait_until "mkc b get events -o json | jq -e '[.items[] | select(.involvedObject.name==\"jpq-b\" and .reason==\"FailedScheduling\"
        and (.message | contains(\"queue \\\"research\\\" limit: cpu 0m + 4000m > 2000m\")))] | length > 0'" 30 ||
        fail "no queue-limit FailedScheduling for jpq-b: $(mkc b get events -o json | jq -c '[.items[] | select(.involvedObject.name=="jpq-b") | .message]')"
    [ -z "$(mkc b get pod jpq-b -o jsonpath='{.spec.nodeName}')" ] || fail "jpq-b bound past its queue's limit"
    wait_until '[ "$(st jpq .winner)" = "\"a\"" ] && [ "$(cst jpq b cleanedUp)" = true ]' 40 || fail "$(st jpq)"
    # a ran by borrowing: on spare-1, marked as borrowed from spare
    [ "$(mkc a get pod jpq-a -o jsonpath='{.spec.nodeName}')" = spare-1 ] || fail "jpq-a not on spare-1"
    [ "$(mkc a get pod jpq-a -o json | jq -r '.metadata.annotations["resource.aibee.cn/borrowed-from"] // ""')" = spare ] ||
        fail "jpq-a not marked borrowed-from spare"
    local dec rs can
    dec=$(ms "$(st jpq .decidedAt | jq -r .)")
    rs=$(ms "$(cst jpq a runningSince)")
    [ $((dec - rs)) = 2000 ] || fail "a decided $((dec - rs)) ms after it ran, want 2000"
    can=$(ms "$(cst jpq b cancelledAt)")
    [ "$can" -ge "$dec" ] && [ "$can" -lt $((dec + 2000)) ] || fail "b cancelled $((can - dec)) ms after the decision"
    u=$(uid_of jpq)
    [ "$(ours a "$u")" = 1 ] && [ "$(ours b "$u")" = 0 ] || fail "pods: a $(ours a "$u"), b $(ours b "$u")"
    # the queues' own accounts: a's holds the winner's 4 CPUs, b's nothing
    wait_until "[ \"\$(mqueue_status a research .status.allocated.cpu)\" = 4000 ]" 20 ||
        fail "a's queue: $(mqueue_status a research)"
    wait_until "[ \"\$(mqueue_status b research '.status.allocated.cpu // 0')\" = 0 ] &&
        [ \"\$(mqueue_status b research '.status.pending // 0')\" = 0 ]" 20 || fail "b's queue: $(mqueue_status b research)"
    delete_job jpq
    [ "$(ours a "$u")" = 0 ] || fail "a's pod left behind"
    wait_until "[ \"\$(mqueue_status a research '.status.allocated.cpu // 0')\" = 0 ]" 20 ||
        fail "a's queue still charged: $(mqueue_status a research)"
    local m
    for m in a b; do
        mkc "$m" delete queues.resource.aibee.cn --all >/dev/null
        mkc "$m" delete pools --all >/dev/null
    done
}

# A member whose pod failed is dropped from the race (the others go on);
# failed everywhere, the job is Failed.
pod_failed() { # MEMBER POD: what a kubelet reports when the pod's container failed
    curl -sS --max-time 10 --cacert "$CP_WORK/pki/ca.crt" --cert "$CP_WORK/pki/admin.crt" \
        --key "$CP_WORK/pki/admin.key" -X PATCH -H 'Content-Type: application/merge-patch+json' \
        "https://127.0.0.1:$(cat "$CP_WORK/m/$1/port")/api/v1/namespaces/default/pods/$2/status" \
        --data '{"status":{"phase":"Failed"}}' >/dev/null
}
c_failed_everywhere() {
    nodes_in a 0 && nodes_in b 0
    mcjob jf 2 0.1
    wait_until '[ "$(cst jf a)" = Waiting ] && [ "$(cst jf b)" = Waiting ]' 30 || fail "$(st jf)"
    pod_failed a jf-a
    wait_until '[ "$(cst jf a)" = Failed ]' 20 || fail "a not failed: $(st jf)"
    [ "$(cst jf a reason)" = PodFailed ] || fail "reason $(cst jf a reason)"
    [ "$(st jf .phase)" = '"Racing"' ] || fail "phase $(st jf .phase) with b still racing"
    pod_failed b jf-b
    wait_until '[ "$(st jf .phase)" = "\"Failed\"" ]' 20 || fail "job not Failed: $(st jf)"
    kc get mcjob jf -o json | jq -e '.status.conditions[] | select(.type=="Failed" and .status=="True")' >/dev/null ||
        fail "no Failed condition"
    delete_job jf
}

# 8. Bad input, each named in a condition and an event, while the good
#    cluster proceeds: a missing Secret, a priority out of range, an unknown
#    param; and a member that rejects the template; and a look-alike pod
#    without our label is never touched.
c_bad_input() {
    nodes_in a 0 && nodes_in b 0
    mcjob j7 2 0.1 '[{"name":"a","kubeconfigSecret":"member-a","priority":60},
      {"name":"x","kubeconfigSecret":"nope","priority":10},
      {"name":"c","kubeconfigSecret":"member-b","priority":150},
      {"name":"d","kubeconfigSecret":"member-b","priority":5}]'
    wait_until '[ "$(cst j7 a)" = Waiting ] && [ "$(cst j7 x)" = Unavailable ]' 40 || fail "$(st j7)"
    local c
    for c in x:SecretNotFound c:InvalidPriority d:UnknownParam; do
        kc get mcjob j7 -o json | jq -e --arg t "ClusterReady.${c%%:*}" --arg r "${c#*:}" \
            '.status.conditions[] | select(.type==$t and .status=="False" and .reason==$r)' >/dev/null ||
            fail "no condition $c: $(st j7 .conditions)"
        kc get events -o json | jq -e --arg m "cluster ${c%%:*}:" \
            '[.items[] | select(.involvedObject.name=="j7" and (.message | startswith($m)))] | length > 0' >/dev/null ||
            fail "no event for cluster ${c%%:*}"
    done
    nodes_in a 1
    wait_until '[ "$(st j7 .winner)" = "\"a\"" ]' 30 || fail "a never won: $(st j7)"
    # rejected by the member: an invalid container name
    jq -n --arg sched "$SCHED_NAME" '{apiVersion: "resource.aibee.cn/v1alpha1", kind: "MultiClusterJob",
      metadata: {name: "j8"}, spec: {guardTimeRunningSeconds: 2, timeScaleSeconds: 0.1,
      clusters: [{name: "a", kubeconfigSecret: "member-a", priority: 50}],
      template: [{apiVersion: "v1", kind: "Pod", metadata: {name: "bad"},
                  spec: {containers: [{name: "NOT_VALID", image: "x"}]}}]}}' | kc apply -f - >/dev/null
    wait_until '[ "$(cst j8 a reason)" = Rejected ]' 20 || fail "$(st j8)"
    # a pod named like ours but not ours: a conflict, left alone
    jq -n '{apiVersion: "v1", kind: "Pod", metadata: {name: "j9-b", namespace: "default"},
            spec: {containers: [{name: "c", image: "x"}]}}' | mkc b create -f - >/dev/null
    mcjob j9 2 0.1 '[{"name":"b","kubeconfigSecret":"member-b","priority":20}]'
    wait_until '[ "$(cst j9 b reason)" = NameConflict ]' 20 || fail "$(st j9)"
    kc delete mcjob j7 j8 j9 --wait=false >/dev/null
    wait_until '[ "$(kc get mcjob -o name | grep -c "/j[789]")" = 0 ]' 30 || fail "j7-j9 not deleted"
    [ "$(mkc b get pod j9-b -o jsonpath='{.metadata.labels}')" = "" ] || fail "look-alike changed"
    mkc b get pod j9-b >/dev/null || fail "the look-alike j9-b was deleted"
    mkc b delete pod j9-b --grace-period=0 --force >/dev/null 2>&1 || true
}

# 11. Members' pods are watched, not polled: with a 30 s poll, b's pod
#     getting room (a node appears, its scheduler binds, the kubelet runs
#     it) is seen at once because the watch kicks the job; the decision is
#     the rule's exact answer and a's window ends on time.
c_watched_not_polled() {
    restart_dispatch 30
    nodes_in a 0 && nodes_in b 0
    mcjob j11 3 0.25
    wait_until '[ "$(cst j11 b)" = Waiting ] && [ "$(cst j11 b pods.total)" = 1 ]' 20 ||
        fail "b's pod never seen: $(st j11)"
    sleep 2
    local t0
    t0=$(date +%s%3N)
    node_json n1 8 16Gi 0 110 | mkc b create -f - >/dev/null || fail "node in b"
    wait_until '[ "$(cst j11 b)" = Running ] || [ "$(st j11 .winner)" = "\"b\"" ]' 12 ||
        fail "b's pod Running not seen within 12 s with a 30 s poll: $(st j11)"
    log "b Running seen within $(($(date +%s%3N) - t0)) ms of its node appearing (poll 30 s)"
    wait_until '[ "$(st j11 .winner)" = "\"b\"" ]' 15 || fail "b never won: $(st j11)"
    local dec rs
    dec=$(ms "$(st j11 .decidedAt | jq -r .)")
    rs=$(ms "$(cst j11 b runningSince)")
    [ $((dec - rs)) = 3000 ] || fail "b decided $((dec - rs)) ms after it ran, want 3000"
    wait_until '[ "$(cst j11 a)" = Cancelled ] && [ "$(cst j11 a cleanedUp)" = true ]' 20 ||
        fail "a not cancelled at its window's end: $(st j11)"
    [ "$(ours a "$(uid_of j11)")" = 0 ] && [ "$(ours b "$(uid_of j11)")" = 1 ] || fail "objects after the race"
    delete_job j11
    restart_dispatch
}

# 12. The hub's API server goes down mid-race (its etcd keeps the data) for
#     longer than the guard time: the controller rides it out without a
#     restart; once the hub is back, .status carries the rule's exact answer
#     and the loser is cleaned up.
c_hub_outage() {
    nodes_in a 0 && nodes_in b 1
    mcjob j12 3 0.25
    wait_until '[ "$(cst j12 b)" = Running ]' 40 || fail "b never ran: $(st j12)"
    local pid
    pid=$(dispatch_pid)
    _kill_pid "$API_PID" 3
    wait "$API_PID" 2>/dev/null || true
    log "hub kube-apiserver stopped"
    sleep 6
    _start_apiserver "$CP_WORK" "$API_PORT" || fail "the hub did not come back"
    log "hub kube-apiserver back"
    wait_until '[ "$(st j12 .winner)" = "\"b\"" ]' 40 || fail "b never won: $(st j12)"
    local dec rs due
    dec=$(ms "$(st j12 .decidedAt | jq -r .)")
    rs=$(ms "$(cst j12 b runningSince)")
    [ $((dec - rs)) = 3000 ] || fail "b decided $((dec - rs)) ms after it ran, want 3000"
    # a's window (10 s) may end during the outage: its cancel is then due at
    # exactly the window's end whenever it was seen
    wait_until '[ "$(cst j12 a)" = Cancelled ] && [ "$(cst j12 a cleanedUp)" = true ]' 30 ||
        fail "a not cancelled: $(st j12)"
    due=$(ms "$(cst j12 a cancelDueAt)")
    [ $((due - dec)) = 10000 ] || fail "a's cancel due $((due - dec)) ms after the decision, want 10000: $(st j12)"
    [ "$(ours a "$(uid_of j12)")" = 0 ] && [ "$(ours b "$(uid_of j12)")" = 1 ] || fail "objects after the race"
    [ "$(dispatch_pid)" = "$pid" ] && kill -0 "$pid" 2>/dev/null || fail "the controller did not ride out the outage"
    delete_job j12
}

# 13. A member that takes connections and never answers (a blackhole)
#     holds up one worker per request, not every job: while three jobs wait
#     on it, a job racing on a and b is decided on time.
c_slow_member() {
    local port pf=$CP_WORK/blackhole.port
    # The kernel picks the port (bind to 0): a port picked beforehand can be
    # taken meanwhile by an outgoing connection's local end (EADDRINUSE).
    rm -f "$pf"
    python3 -c 'import os, socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(128)
with open(sys.argv[1] + ".tmp", "w") as f: f.write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1]); time.sleep(900)' "$pf" &
    local bh=$!
    _pid_record "$bh" blackhole
    wait_until "[ -s '$pf' ]" 10 || fail "the blackhole did not start"
    port=$(cat "$pf")
    sed "s#server: .*#server: https://127.0.0.1:$port#" "$CP_WORK/m/a/admin.kubeconfig" >"$CP_WORK/blackhole.kubeconfig"
    kc create secret generic member-z --from-file=kubeconfig="$CP_WORK/blackhole.kubeconfig" >/dev/null ||
        fail "secret member-z"
    nodes_in a 0 && nodes_in b 1
    local i
    for i in 1 2 3; do mcjob "z$i" 3 0.25 '[{"name":"c","kubeconfigSecret":"member-z","priority":50}]'; done
    sleep 2 # the three are in their first 10 s request to z
    local t0
    t0=$(date +%s%3N)
    mcjob j13 3 0.25
    wait_until '[ "$(st j13 .winner)" = "\"b\"" ]' 30 || fail "b never won: $(st j13)"
    local took=$(($(date +%s%3N) - t0))
    log "j13 decided ${took} ms after it was created, three jobs waiting on a blackhole"
    [ "$took" -lt 12000 ] || fail "j13 took ${took} ms: the blackhole held up every worker"
    [ "$(st z1 .winner)" = null ] || fail "z1 on the blackhole has a winner: $(st z1)"
    delete_job j13
    for i in 1 2 3; do
        # z never answers, so the cleanup cannot confirm: the admin's way out
        kc patch mcjob "z$i" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
        kc delete mcjob "z$i" --wait=false >/dev/null
    done
    wait_until '[ "$(kc get mcjob -o name | grep -c "/z")" = 0 ]' 30 || fail "z* not deleted"
    kc delete secret member-z >/dev/null
    _kill_pid "$bh" 3
}

run_case only-low-room-wins-after-window c_only_low
run_case high-priority-takes-over-in-window c_high_in_window
run_case both-room-high-wins-delete-cleans c_both_room
run_case controller-killed-repeatedly c_controller_killed
run_case delete-mid-race c_delete_racing
run_case failed-everywhere c_failed_everywhere
run_case gang-in-template c_gang_template
run_case pools-queues-borrowing c_pools_queues
run_case bad-input-per-cluster c_bad_input
run_case watched-not-polled c_watched_not_polled
run_case hub-outage c_hub_outage
run_case slow-member-holds-one-worker c_slow_member
# last before clean-exit, whose metrics check counts its Unreachable
run_case member-down-then-back c_member_down

check_dispatch_exit() {
    # /readyz and /metrics of the controller that ran the last cases
    local url
    url=$(sched_url "$(cat "$CP_WORK/dispatch.port")")
    [ "$(sched_curl -sS --max-time 5 "$url/readyz")" = ok ] || fail "/readyz"
    sched_curl -sS --max-time 5 "$url/metrics" >"$CP_WORK/dispatch.metrics" || fail "/metrics"
    # HTTPS like the scheduler's port; anything else needs credentials
    [ "$(sched_curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "$url/debug/whoami")" = 401 ] ||
        fail "the controller's /debug/whoami without a token: not 401"
    if curl -sS --max-time 5 -o /dev/null "http://127.0.0.1:$(cat "$CP_WORK/dispatch.port")/readyz" 2>/dev/null; then
        fail "the controller's port answers plain HTTP"
    fi
    [ "$(grep -cE '^ai_scheduler_dispatch_(decisions_total|cancel_latency_seconds_count|reconciles_total) [1-9]' \
        "$CP_WORK/dispatch.metrics")" = 3 ] || { cat "$CP_WORK/dispatch.metrics" >&2; fail "dispatch metrics"; }
    grep -q '^ai_scheduler_dispatch_member_errors_total{reason="Unreachable"} [1-9]' "$CP_WORK/dispatch.metrics" ||
        fail "no Unreachable member error counted"
    _kill_pid "$(dispatch_pid)" 10
    wait_until '[ -s "$CP_WORK/dispatch.rc" ]' 10 0.1 || fail "no exit code"
    [ "$(cat "$CP_WORK/dispatch.rc")" = 0 ] || fail "dispatch exited $(cat "$CP_WORK/dispatch.rc") on SIGTERM"
    ! grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|WARNING: ThreadSanitizer|runtime error:' \
        "$CP_WORK"/dispatch.*.log || fail "sanitizer report"
    [ -s "$CP_WORK/latency.txt" ] && cat "$CP_WORK/latency.txt"
    return 0
}
run_case clean-exit check_dispatch_exit
finish
