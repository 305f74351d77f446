#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Gang scheduling (PodGroup, scheduling.x-k8s.io/v1alpha1) on a real
# kube-apiserver: all-or-nothing placement of two racing gangs, preemption for
# a gang (minimal victim set, other gangs evicted only whole), whole-gang
# borrowing and reclaim, elastic surplus (after every gang's minimum, first
# victim), missing / invalid / deleted PodGroups, scheduleTimeoutSeconds,
# kill -9 while a gang waits or binds, and the PodGroup status and columns.
# One control plane; each case resets nodes, pods, podgroups, pools, events.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=gang/

PG_LABEL=scheduling.x-k8s.io/pod-group
PG_API=/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups
BORROWED=resource.aibee.cn/borrowed-from

# A minimal PodGroup CRD (the fields of the gang contract), used only when the
# control plane has none: pools/podgroup-crd.yaml, applied by cp_start, wins.
PG_CRD_JSON='{
 "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
 "metadata": {"name": "podgroups.scheduling.x-k8s.io"},
 "spec": {"group": "scheduling.x-k8s.io", "scope": "Namespaced",
  "names": {"kind": "PodGroup", "listKind": "PodGroupList", "plural": "podgroups", "singular": "podgroup",
            "shortNames": ["pg", "pgs"]},
  "versions": [{"name": "v1alpha1", "served": true, "storage": true, "subresources": {"status": {}},
   "additionalPrinterColumns": [
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
    {"name": "MinMember", "type": "integer", "jsonPath": ".spec.minMember"},
    {"name": "Scheduled", "type": "integer", "jsonPath": ".status.scheduled"},
    {"name": "Running", "type": "integer", "jsonPath": ".status.running"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
    "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
    "spec": {"type": "object", "properties": {
     "minMember": {"type": "integer", "format": "int32"},
     "minResources": {"type": "object", "additionalProperties": {"anyOf": [{"type": "integer"}, {"type": "string"}],
                      "x-kubernetes-int-or-string": true}},
     "scheduleTimeoutSeconds": {"type": "integer", "format": "int32"}}},
    "status": {"type": "object", "properties": {
     "phase": {"type": "string"}, "occupiedBy": {"type": "string"},
     "scheduled": {"type": "integer", "format": "int32"}, "running": {"type": "integer", "format": "int32"},
     "succeeded": {"type": "integer", "format": "int32"}, "failed": {"type": "integer", "format": "int32"},
     "scheduleStartTime": {"type": "string", "format": "date-time"}}}}}}}]}}'

# The scheduler's access to PodGroups, only when lib.sh's role lacks it.
PG_RBAC_JSON='{
 "apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "ai-scheduler-podgroups"},
  "rules": [
   {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups"], "verbs": ["get", "list", "watch"]},
   {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups/status"], "verbs": ["get", "patch", "update"]}]},
 {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "ai-scheduler-podgroups"},
  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "ai-scheduler-podgroups"},
  "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "ai-scheduler"}]}]}'

podgroup_api_setup() {
    if ! kc get crd podgroups.scheduling.x-k8s.io >/dev/null 2>&1; then
        log "no PodGroup CRD in the cluster: creating the minimal copy"
        echo "$PG_CRD_JSON" | kc create -f - >/dev/null || die "PodGroup CRD create failed"
    fi
    wait_until 'kc get crd podgroups.scheduling.x-k8s.io -o json | jq -e ".status.conditions[] | select(.type==\"Established\" and .status==\"True\")"' 30 ||
        die "PodGroup CRD not Established"
    if ! grep -q scheduling.x-k8s.io <<<"$SCHED_RBAC_JSON"; then
        echo "$PG_RBAC_JSON" | kc apply -f - >/dev/null || die "PodGroup RBAC apply failed"
    fi
}

# pool_nodes POOL COUNT CPU: nodes POOL-0 .. POOL-(COUNT-1), CPU cores each.
pool_nodes() {
    local i
    for ((i = 0; i < $2; i++)); do make_node "$1-$i" "$3" 16Gi 0 110 "pool=$1"; done
}

# make_podgroup NAME MIN [TIMEOUT]: MIN "none" leaves spec.minMember out.
make_podgroup() {
    api_post_json "$PG_API" "$(jq -cn --arg n "$1" --arg m "$2" --arg t "${3:-}" \
        '{apiVersion: "scheduling.x-k8s.io/v1alpha1", kind: "PodGroup", metadata: {name: $n},
          spec: ({} + (if $m == "none" then {} else {minMember: ($m | tonumber)} end)
                    + (if $t == "" then {} else {scheduleTimeoutSeconds: ($t | tonumber)} end))}')"
}
# gang_pods GROUP COUNT [pod_json options]: GROUP-0 .. GROUP-(COUNT-1), members of GROUP.
gang_pods() {
    local g=$1 n=$2; shift 2
    make_pods "$g" "$n" --label "$PG_LABEL=$g" "$@"
}
# gang_pod NAME GROUP [pod_json options]: one member.
gang_pod() {
    local name=$1 g=$2; shift 2
    make_pod "$name" --label "$PG_LABEL=$g" "$@"
}

pg_json() { kc get podgroups.scheduling.x-k8s.io "$1" -o json; }
pg_phase() { pg_json "$1" | jq -r '.status.phase // ""'; }
pg_status() { pg_json "$1" | jq -c '.status // {}'; }
# pg_events NAME [REASON]: "reason<TAB>message" per event whose object is the PodGroup NAME.
pg_events() {
    kc get events -n default -o json \
        --field-selector "involvedObject.kind=PodGroup,involvedObject.name=$1${2:+,reason=$2}" |
        jq -r '.items[] | "\(.reason)\t\(.message // .note // "")"'
}
# gang_bound GROUP / gang_count GROUP: bound / existing members (one curl each).
gang_bound() {
    api_get "/api/v1/namespaces/default/pods?labelSelector=scheduling.x-k8s.io%2Fpod-group%3D$1&fieldSelector=spec.nodeName%21%3D" |
        jq '.items | length'
}
gang_count() {
    api_get "/api/v1/namespaces/default/pods?labelSelector=scheduling.x-k8s.io%2Fpod-group%3D$1" | jq '.items | length'
}
# gang_nodes GROUP: the nodes of the bound members, sorted, one per line.
gang_nodes() { pods_json -l "$PG_LABEL=$1" | jq -r '.items[] | .spec.nodeName // empty' | sort; }

pod_exists() { kc get pod "$1" -o name >/dev/null 2>&1; }
borrowed_from() { kc get pod "$1" -o json | jq -r --arg k "$BORROWED" '.metadata.annotations[$k] // ""'; }
# placement: "pod@node" per pod, sorted (for failure messages).
placement() {
    pods_json | jq -r '.items[] | "\(.metadata.name)@\(.spec.nodeName // "-")"' | sort | tr '\n' ' '
}
# set_phase PHASE POD...: status.phase (no kubelet here).
set_phase() {
    local ph=$1 p; shift
    for p; do
        api_req PATCH "/api/v1/namespaces/default/pods/$p/status" -H 'Content-Type: application/merge-patch+json' \
            -o /dev/null -w '%{http_code}' --data-binary "{\"status\":{\"phase\":\"$ph\"}}" | grep -q '^2' ||
            fail "could not set $p $ph"
    done
}
# delete_pods NAME...: forced, no kubelet.
delete_pods() { kc delete pod "$@" --grace-period=0 --force --wait=false >/dev/null 2>&1 || true; }

# expect_members_placeable GROUP MIN [K]: a FailedScheduling event on the
# PodGroup with the contract's message, and the same on each member pod.
expect_members_placeable() {
    local g=$1 min=$2 k=${3:-[0-9]+} p msg
    wait_until "pg_events $g FailedScheduling | grep -q 'members placeable'" 30 ||
        fail "no FailedScheduling 'members placeable' event on PodGroup $g: $(pg_events "$g" | tr '\n' ' ')"
    msg=$(pg_events "$g" FailedScheduling | cut -f2-)
    grep -Eq "^pod group default/$g: $k/$min members placeable; [0-9]+/[0-9]+ nodes are available" <<<"$msg" ||
        fail "PodGroup $g FailedScheduling messages '$msg', want 'pod group default/$g: $k/$min members placeable; N/M nodes are available...'"
    for p in $(pods_json -l "$PG_LABEL=$g" | jq -r '.items[] | select((.spec.nodeName // "") == "") | .metadata.name'); do
        wait_until "events_for $p default FailedScheduling | grep -q 'pod group default/$g: '" 30 ||
            fail "member $p has no FailedScheduling event naming its group: $(events_for "$p" | tr '\n' ' ')"
    done
}

# expect_still GROUP COUNT SECONDS: the bound member count stays COUNT.
expect_still() {
    local g=$1 want=$2 secs=$3 i c
    for ((i = 0; i < secs * 2; i++)); do
        c=$(gang_bound "$g")
        [ "$c" = "$want" ] || fail "gang $g has $c bound members, want $want: $(placement)"
        sleep 0.5
    done
}

# Sampler: every 0.2 s, "epoch-seconds bound-count" of GROUP into $CP_WORK/samples.GROUP.
sampler_start() {
    local f=$CP_WORK/samples.$1
    : >"$f"
    (
        set +e
        while :; do
            c=$(gang_bound "$1" 2>/dev/null)
            [ -n "$c" ] && echo "$(date +%s.%N) $c" >>"$f"
            sleep 0.2
        done
    ) &
    SAMPLER_PID=$!
    _pid_record "$SAMPLER_PID" sampler
}
sampler_stop() {
    [ -n "${SAMPLER_PID:-}" ] || return 0
    kill "$SAMPLER_PID" 2>/dev/null || true
    wait "$SAMPLER_PID" 2>/dev/null || true
    SAMPLER_PID=""
}
# partial_runs GROUP MIN MAX-SECONDS: prints every run of consecutive samples
# with 0 < bound < MIN that lasted longer than MAX-SECONDS. Binding is one API
# call per pod, so a sample may catch a gang half-way through its binds; only a
# partial gang that stays partial is a violation.
partial_runs() {
    awk -v min="$2" -v max="$3" '
        { t = $1; c = $2
          if (c > 0 && c < min) { if (start == "") start = t; last = t; vals = vals " " c }
          else { if (start != "" && last - start > max) printf "partial %.1fs:%s\n", last - start, vals; start = ""; vals = "" } }
        END { if (start != "" && last - start > max) printf "partial %.1fs (at end):%s\n", last - start, vals }' \
        "$CP_WORK/samples.$1"
}

reset_all() {
    kc delete events --all -n default >/dev/null 2>&1 || true
    # pods first: a pod whose PodGroup vanished falls back to single-pod scheduling
    cp_reset
    kc delete podgroups.scheduling.x-k8s.io --all -n default --wait=false >/dev/null 2>&1 || true
    kc delete pools --all --wait=false >/dev/null 2>&1 || true
    wait_until '[ "$(kc get pools -o name | wc -l)" = 0 ] && [ "$(kc get podgroups.scheduling.x-k8s.io -A -o name | wc -l)" = 0 ]' 30 ||
        fail "pools/podgroups remain"
    sched_alive || { log "scheduler is dead (crashed in an earlier case?); restarting it"; start_scheduler; }
    LOG_FROM=$(($(wc -l <"$CP_WORK/scheduler.log") + 1))
}
new_log() { tail -n +"${LOG_FROM:-1}" "$CP_WORK/scheduler.log"; }

# ---------------------------------------------------------------------------
# cases

# 4 nodes x 4 cpu = 8 slots of 2 cpu; gangs ga and gb of 5 x 2 cpu (minMember
# 5), members created interleaved. Each fits alone, not both: exactly one is
# bound whole, the other has ZERO bound pods and says "3/5 members placeable".
# Deleting the winner's pods lets the other bind whole.
case_race() {
    reset_all
    make_pool p '{"disableBorrowing": true}'
    pool_nodes p 4 4
    make_podgroup ga 5
    make_podgroup gb 5
    local i win lose
    for i in 0 1 2 3 4; do
        gang_pod "ga-$i" ga --pool p --cpu 2
        gang_pod "gb-$i" gb --pool p --cpu 2
    done
    wait_until '[ "$(gang_bound ga)" = 5 ] || [ "$(gang_bound gb)" = 5 ]' 60 ||
        fail "no gang bound whole: ga $(gang_bound ga), gb $(gang_bound gb): $(placement)"
    if [ "$(gang_bound ga)" = 5 ]; then win=ga lose=gb; else win=gb lose=ga; fi
    log "winner $win, loser $lose"
    expect_members_placeable "$lose" 5 3
    expect_still "$lose" 0 3
    [ "$(gang_bound "$win")" = 5 ] || fail "winner $win lost members: $(placement)"
    wait_until "pg_events $win Scheduled | grep -q 'placed 5 members (minMember 5) in pool p'" 30 ||
        fail "no Scheduled 'placed 5 members (minMember 5) in pool p' event on $win: $(pg_events "$win" | tr '\n' ' ')"
    [ -z "$(pg_events "$win" FailedScheduling)" ] || log "note: $win had FailedScheduling events before it won"
    assert_no_overcommit

    delete_pods "$win"-0 "$win"-1 "$win"-2 "$win"-3 "$win"-4
    wait_until "[ \"\$(gang_bound $lose)\" = 5 ]" 60 || fail "$lose not bound whole after $win left: $(placement)"
    assert_no_overcommit
}

# 8 low-priority fillers (2 cpu) fill 4 x 4 cpu; a high-priority gang of 3 x 2
# cpu fits only by preempting: all 3 bound, exactly 3 fillers evicted (the
# minimal set), each with a Preempted event naming the gang.
case_preempt() {
    reset_all
    make_pool p '{"disableBorrowing": true}'
    pool_nodes p 4 4
    make_pods f 8 --pool p --cpu 2 --priority-class low
    wait_until '[ "$(count_bound)" = 8 ]' 60 || fail "fillers not bound: $(placement)"
    make_podgroup gh 3
    gang_pods gh 3 --pool p --cpu 2 --priority-class high
    wait_until '[ "$(gang_bound gh)" = 3 ]' 60 || fail "gang gh not bound: $(placement)"
    local gone="" p
    for p in f-0 f-1 f-2 f-3 f-4 f-5 f-6 f-7; do pod_exists "$p" || gone="$gone $p"; done
    [ "$(wc -w <<<"$gone")" = 3 ] || fail "want exactly 3 fillers evicted (minimal set), gone:'$gone': $(placement)"
    for p in $gone; do
        wait_until "events_for $p default Preempted | grep -q 'default/gh'" 30 ||
            fail "no Preempted event naming default/gh on $p: $(events_for "$p" | tr '\n' ' ')"
    done
    [ "$(count_bound)" = 8 ] || fail "want 5 fillers + 3 gang members bound: $(placement)"
    assert_no_overcommit
}

# A low gang gl (4 x 2 cpu, minMember 4) and 4 low fillers fill 4 x 4 cpu. A
# high gang of 2 x 2 cpu: the minimal victim set is 2 fillers, never gl's
# members. Then on 2 x 4 cpu filled by gl alone, a high single pod can only
# get room by evicting all of gl: no member is evicted alone.
case_preempt_whole_gang() {
    reset_all
    make_pool p '{"disableBorrowing": true}'
    pool_nodes p 4 4
    make_podgroup gl 4
    gang_pods gl 4 --pool p --cpu 2 --priority-class low
    wait_until '[ "$(gang_bound gl)" = 4 ]' 60 || fail "gl not bound: $(placement)"
    make_pods f 4 --pool p --cpu 2 --priority-class low
    wait_until '[ "$(count_bound)" = 8 ]' 60 || fail "fillers not bound: $(placement)"
    make_podgroup gh 2
    gang_pods gh 2 --pool p --cpu 2 --priority-class high
    wait_until '[ "$(gang_bound gh)" = 2 ]' 60 || fail "gang gh not bound: $(placement)"
    [ "$(gang_count gl)" = 4 ] && [ "$(gang_bound gl)" = 4 ] ||
        fail "a member of gang gl was evicted though 2 fillers were enough: $(placement)"
    local gone="" p
    for p in f-0 f-1 f-2 f-3; do pod_exists "$p" || gone="$gone $p"; done
    [ "$(wc -w <<<"$gone")" = 2 ] || fail "want exactly 2 fillers evicted, gone:'$gone': $(placement)"
    assert_no_overcommit

    reset_all
    make_pool p '{"disableBorrowing": true}'
    pool_nodes p 2 4
    make_podgroup gl 4
    gang_pods gl 4 --pool p --cpu 2 --priority-class low
    wait_until '[ "$(gang_bound gl)" = 4 ]' 60 || fail "gl not bound: $(placement)"
    make_pod hi --pool p --cpu 2 --priority-class high
    wait_until '[ -n "$(pod_node hi)" ]' 60 || fail "hi not bound: $(placement)"
    wait_until '[ "$(gang_count gl)" = 0 ]' 30 ||
        fail "gang gl partly evicted: $(gang_count gl) members left, $(gang_bound gl) bound (minMember 4): $(placement)"
    for p in gl-0 gl-1 gl-2 gl-3; do
        wait_until "events_for $p default Preempted | grep -q 'default/hi'" 30 ||
            fail "no Preempted event naming default/hi on $p: $(events_for "$p" | tr '\n' ' ')"
    done
    assert_no_overcommit
}

# team-a (1 x 4 cpu) is full; team-b and team-c share 4 idle cpu each. Gang g1
# (4 x 2 cpu) fits only across both lenders: it must not split, ZERO bound.
# A second team-b node: g1 borrows team-b whole (borrowed-from, Borrowed
# events). team-b's own pods then reclaim: all of g1 goes, not a part.
case_borrow() {
    reset_all
    make_pool team-a
    make_pool team-b
    make_pool team-c
    pool_nodes team-a 1 4
    pool_nodes team-b 1 4
    pool_nodes team-c 1 4
    make_pod af --pool team-a --cpu 4
    wait_until '[ "$(pod_node af)" = team-a-0 ]' 60 || fail "af not bound on team-a-0: $(placement)"
    make_podgroup g1 4
    gang_pods g1 4 --pool team-a --cpu 2
    expect_members_placeable g1 4
    expect_still g1 0 3

    make_node team-b-1 4 16Gi 0 110 pool=team-b
    wait_until '[ "$(gang_bound g1)" = 4 ]' 60 || fail "g1 not bound after team-b grew: $(placement)"
    local n p
    for n in $(gang_nodes g1); do
        case $n in team-b-*) ;; *) fail "member of g1 on $n, want all on team-b: $(placement)" ;; esac
    done
    for p in g1-0 g1-1 g1-2 g1-3; do
        [ "$(borrowed_from "$p")" = team-b ] || fail "$p borrowed-from '$(borrowed_from "$p")', want team-b"
        wait_until "events_for $p default Borrowed | grep -q team-b" 30 || fail "no Borrowed event for $p: $(events_for "$p" | tr '\n' ' ')"
    done
    assert_no_overcommit

    make_pods b 2 --pool team-b --cpu 2
    wait_until '[ -n "$(pod_node b-0)" ] && [ -n "$(pod_node b-1)" ]' 60 || fail "team-b's own pods not bound: $(placement)"
    for p in b-0 b-1; do
        case $(pod_node $p) in team-b-*) ;; *) fail "$p on $(pod_node $p), want team-b: $(placement)" ;; esac
    done
    wait_until '[ "$(gang_count g1)" = 0 ]' 30 ||
        fail "reclaim took part of g1: $(gang_count g1) members left, $(gang_bound g1) bound (minMember 4): $(placement)"
    for p in g1-0 g1-1 g1-2 g1-3; do
        wait_until "events_for $p default Preempted | grep -q ." 30 || fail "no Preempted event on $p"
    done
    assert_no_overcommit
}

# 2 x 4 cpu = 4 slots. With the scheduler down, gang gx (minMember 2, 4 pods)
# then gang gy (minMember 2, 2 pods). On start: both minimums are bound, gx's
# surplus waits (after every waiting gang's minimum). When gy leaves, gx's
# surplus binds.
case_elastic_min_first() {
    reset_all
    make_pool p '{"disableBorrowing": true}'
    pool_nodes p 2 4
    stop_scheduler_clean
    make_podgroup gx 2
    gang_pods gx 4 --pool p --cpu 2
    sleep 1.1 # creationTimestamp has 1 s resolution: gx strictly first
    make_podgroup gy 2
    gang_pods gy 2 --pool p --cpu 2
    start_scheduler
    # gx above 2 can only be its surplus taking gy's room: fail at once
    wait_until '[ "$(gang_bound gx)" -gt 2 ] || { [ "$(gang_bound gy)" = 2 ] && [ "$(gang_bound gx)" = 2 ]; }' 60 ||
        fail "minimums not bound: gx $(gang_bound gx), gy $(gang_bound gy): $(placement)"
    [ "$(gang_bound gx)" = 2 ] ||
        fail "gx's surplus was bound before gy's minimum: gx $(gang_bound gx), gy $(gang_bound gy): $(placement)"
    expect_still gx 2 3
    [ "$(gang_bound gy)" = 2 ] || fail "gy lost members: $(placement)"
    wait_until '[ "$(pg_phase gx)" = Scheduled ] && [ "$(pg_status gx | jq .scheduled)" = 2 ]' 30 ||
        fail "gx status $(pg_status gx), want phase Scheduled, scheduled 2"
    delete_pods gy-0 gy-1
    wait_until '[ "$(gang_bound gx)" = 4 ]' 60 || fail "gx's surplus not bound once room came: $(placement)"
    wait_until '[ "$(pg_status gx | jq .scheduled)" = 4 ]' 30 || fail "gx status $(pg_status gx), want scheduled 4"
    assert_no_overcommit
}

# 4 slots: low filler f0, then low gang ge (minMember 2, 4 pods): 3 bound (2 +
# 1 surplus), 1 waits. A high pod needs one slot: ge's surplus member is the
# victim, not f0 and not a minimum member.
case_elastic_surplus_victim() {
    reset_all
    make_pool p '{"disableBorrowing": true}'
    pool_nodes p 2 4
    make_pod f0 --pool p --cpu 2 --priority-class low
    wait_until '[ -n "$(pod_node f0)" ]' 60 || fail "f0 not bound"
    make_podgroup ge 2
    gang_pods ge 4 --pool p --cpu 2 --priority-class low
    wait_until '[ "$(gang_bound ge)" = 3 ]' 60 || fail "want 3 of ge bound (2 + 1 surplus): $(placement)"
    expect_still ge 3 2
    make_pod hi --pool p --cpu 2 --priority-class high
    wait_until '[ -n "$(pod_node hi)" ]' 60 || fail "hi not bound: $(placement)"
    pod_exists f0 || fail "f0 was evicted; ge's surplus member should go first: $(placement)"
    [ "$(gang_count ge)" = 3 ] && [ "$(gang_bound ge)" = 2 ] ||
        fail "want one ge member evicted (3 left, 2 bound), have $(gang_count ge) left, $(gang_bound ge) bound: $(placement)"
    local gone="" p
    for p in ge-0 ge-1 ge-2 ge-3; do pod_exists "$p" || gone=$p; done
    wait_until "events_for $gone default Preempted | grep -q 'default/hi'" 30 ||
        fail "no Preempted event naming default/hi on $gone: $(events_for "$gone" | tr '\n' ' ')"
    assert_no_overcommit
}

# A pod naming a missing PodGroup waits (PodGroupNotFound) until the group is
# created; minMember 0 (or none) gives InvalidPodGroup and pending pods; a
# deleted PodGroup's pods fall back to single-pod scheduling (PodGroupDeleted).
case_missing_invalid() {
    reset_all
    make_pool p '{"disableBorrowing": true}'
    pool_nodes p 2 4
    gang_pod pm-0 nope --pool p --cpu 1
    wait_until 'events_for pm-0 default PodGroupNotFound | grep -q .' 30 ||
        fail "no PodGroupNotFound event on pm-0: $(events_for pm-0 | tr '\n' ' ')"

    if ! make_podgroup bad 0; then
        log "the CRD refuses minMember 0; an unset minMember instead"
        make_podgroup bad none
    fi
    gang_pods bad 2 --pool p --cpu 1
    wait_until 'pg_events bad InvalidPodGroup | grep -q .' 30 ||
        fail "no InvalidPodGroup event on PodGroup bad: $(pg_events bad | tr '\n' ' ')"

    make_podgroup gd 3
    gang_pods gd 2 --pool p --cpu 1
    wait_until '[ "$(pg_phase gd)" = Pending ]' 30 || fail "gd (2 of minMember 3) phase '$(pg_phase gd)', want Pending"
    sleep 3
    [ "$(count_bound)" = 0 ] || fail "want nothing bound (missing, invalid, short gang): $(placement)"

    kc delete podgroups.scheduling.x-k8s.io gd >/dev/null
    wait_until '[ "$(gang_bound gd)" = 2 ]' 60 || fail "gd's pods not bound after their PodGroup was deleted: $(placement)"
    local p
    for p in gd-0 gd-1; do
        wait_until "events_for $p default PodGroupDeleted | grep -q ." 30 || fail "no PodGroupDeleted event on $p: $(events_for "$p" | tr '\n' ' ')"
    done
    [ -z "$(pod_node pm-0)" ] && [ "$(gang_bound bad)" = 0 ] ||
        fail "pm-0 or an invalid group's pod got bound: $(placement)"

    make_podgroup nope 1
    wait_until '[ -n "$(pod_node pm-0)" ]' 60 || fail "pm-0 not bound once its PodGroup exists: $(placement)"
    [ "$(gang_bound bad)" = 0 ] || fail "an invalid group's pod got bound: $(placement)"
    assert_no_overcommit
}

# scheduleTimeoutSeconds 3, 3 x 4 cpu on 2 x 4 cpu: GangScheduleTimeout on the
# PodGroup, phase Failed, the pods still Pending and unbound. A third node:
# the gang binds and the phase goes back to Scheduled.
case_timeout() {
    reset_all
    make_pool p '{"disableBorrowing": true}'
    pool_nodes p 2 4
    make_podgroup gt 3 3
    gang_pods gt 3 --pool p --cpu 4
    wait_until 'pg_events gt GangScheduleTimeout | grep -q .' 30 ||
        fail "no GangScheduleTimeout event on gt: $(pg_events gt | tr '\n' ' ')"
    local msg
    msg=$(pg_events gt GangScheduleTimeout | cut -f2- | tail -1)
    grep -Eq '^not placed within 3s: 2/3 members placeable; ' <<<"$msg" ||
        fail "GangScheduleTimeout message '$msg', want 'not placed within 3s: 2/3 members placeable; ...'"
    wait_until '[ "$(pg_phase gt)" = Failed ]' 30 || fail "gt phase '$(pg_phase gt)', want Failed"
    local phases
    phases=$(pods_json -l "$PG_LABEL=gt" | jq -r '[.items[] | "\(.status.phase)/\(.spec.nodeName // "-")"] | sort | join(" ")')
    [ "$phases" = "Pending/- Pending/- Pending/-" ] || fail "gt pods '$phases', want all Pending and unbound"

    make_node p-2 4 16Gi 0 110 pool=p
    wait_until '[ "$(gang_bound gt)" = 3 ]' 60 || fail "gt not bound after a node was added: $(placement)"
    wait_until '[ "$(pg_phase gt)" = Scheduled ]' 30 || fail "gt phase '$(pg_phase gt)' after placement, want Scheduled"
    assert_no_overcommit
}

# kill -9 while gang gw (4 x 4 cpu on 3 x 4 cpu) waits, restart: it stays at
# ZERO bound, and binds whole when a fourth node comes. Then kill -9 right
# as gang gk (32 x 250m, exactly 2 x 4 cpu) is placed, its binds in flight; restart: the
# restarted scheduler completes the gang. Samples of the bound count every
# 0.2 s: no partial gang lasts (binds are one API call per pod).
case_restart() {
    reset_all
    trap sampler_stop EXIT
    make_pool p '{"disableBorrowing": true}'
    pool_nodes p 3 4
    make_podgroup gw 4
    gang_pods gw 4 --pool p --cpu 4
    expect_members_placeable gw 4 3
    sampler_start gw
    stop_scheduler KILL || true
    start_scheduler
    expect_still gw 0 4
    make_node p-3 4 16Gi 0 110 pool=p
    wait_until '[ "$(gang_bound gw)" = 4 ]' 60 || fail "gw not bound after the fourth node: $(placement)"
    sleep 1
    sampler_stop
    local bad
    bad=$(partial_runs gw 4 2)
    [ -z "$bad" ] || fail "gang gw partly bound: $bad"

    reset_all
    make_pool p '{"disableBorrowing": true}'
    pool_nodes p 2 4
    stop_scheduler_clean
    make_podgroup gk 32
    gang_pods gk 32 --pool p --cpu 250m
    start_scheduler --bind-workers 1 # one bind at a time: a wide window for the kill
    # the log line comes before the binds: kill -9 while they are in flight
    wait_until 'grep -q "pod group default/gk: placed" "$CP_WORK/scheduler.log"' 60 0.01 || fail "gk never placed"
    stop_scheduler KILL || true
    log "killed -9 with $(gang_bound gk)/32 of gk bound"
    sampler_start gk
    start_scheduler
    wait_until '[ "$(gang_bound gk)" = 32 ]' 60 || fail "restarted scheduler left gk at $(gang_bound gk)/32: $(placement)"
    sleep 2
    sampler_stop
    log "gk after the restart: $(partial_runs gk 32 0 | cut -c1-120) (the kill's partial binds, completed)"
    [ "$(gang_bound gk)" = 32 ] || fail "gk lost members: $(placement)"
    tail -n 3 "$CP_WORK/samples.gk" | awk '$2 != 32 { exit 1 }' || fail "gk not steady at 32: $(tail -n 3 "$CP_WORK/samples.gk" | tr '\n' ' ')"
    assert_no_overcommit
}

# Status: 2 of minMember 3 -> Pending; the third -> Scheduled, scheduled 3,
# scheduleStartTime, a Scheduled event; `kubectl get podgroup` columns; the
# members Running -> Running, running 3; Succeeded -> Finished.
case_status() {
    reset_all
    make_pool p '{"disableBorrowing": true}'
    pool_nodes p 2 4
    make_podgroup gs 3
    gang_pods gs 2 --pool p --cpu 1
    wait_until '[ "$(pg_phase gs)" = Pending ]' 30 || fail "gs phase '$(pg_phase gs)', want Pending (2 of 3 exist)"
    expect_still gs 0 2
    gang_pod gs-2 gs --pool p --cpu 1
    wait_until '[ "$(gang_bound gs)" = 3 ]' 60 || fail "gs not bound: $(placement)"
    wait_until '[ "$(pg_phase gs)" = Scheduled ] && [ "$(pg_status gs | jq .scheduled)" = 3 ]' 30 ||
        fail "gs status $(pg_status gs), want phase Scheduled, scheduled 3"
    pg_status gs | jq -e '.scheduleStartTime | type == "string" and test("^[0-9]{4}-")' >/dev/null ||
        fail "gs status $(pg_status gs) has no scheduleStartTime"
    wait_until "pg_events gs Scheduled | grep -q 'placed 3 members (minMember 3) in pool p'" 30 ||
        fail "no Scheduled event 'placed 3 members (minMember 3) in pool p' on gs: $(pg_events gs | tr '\n' ' ')"

    local head row
    head=$(kc get podgroups.scheduling.x-k8s.io gs | awk 'NR == 1 {print $1, $2, $3, $4, $5}')
    [ "$head" = "NAME PHASE MINMEMBER SCHEDULED RUNNING" ] || fail "kubectl get podgroup header '$head'"
    row=$(kc get pg gs --no-headers | awk '{print $1, $2, $3, $4}')
    [ "$row" = "gs Scheduled 3 3" ] || fail "kubectl get pg row '$row', want 'gs Scheduled 3 3'"

    set_phase Running gs-0 gs-1 gs-2
    wait_until '[ "$(pg_phase gs)" = Running ] && [ "$(pg_status gs | jq .running)" = 3 ]' 30 ||
        fail "gs status $(pg_status gs), want phase Running, running 3"
    wait_until '[ "$(kc get pg gs --no-headers | awk "{print \$2, \$5}")" = "Running 3" ]' 30 ||
        fail "kubectl get pg row '$(kc get pg gs --no-headers)', want phase Running, running 3"
    set_phase Succeeded gs-0 gs-1 gs-2
    wait_until '[ "$(pg_phase gs)" = Finished ] && [ "$(pg_status gs | jq .succeeded)" = 3 ]' 30 ||
        fail "gs status $(pg_status gs), want phase Finished, succeeded 3"
}

# Members naming different pools: PodGroupPoolConflict on the PodGroup, nothing placed.
case_pool_conflict() {
    reset_all
    make_pool p '{"disableBorrowing": true}'
    make_pool q '{"disableBorrowing": true}'
    pool_nodes p 1 4
    pool_nodes q 1 4
    make_podgroup gc 2
    gang_pod gc-0 gc --pool p --cpu 1
    gang_pod gc-1 gc --pool q --cpu 1
    wait_until 'pg_events gc PodGroupPoolConflict | grep -q .' 30 ||
        fail "no PodGroupPoolConflict event on gc: $(pg_events gc | tr '\n' ' ')"
    expect_still gc 0 3
    local wrong
    wrong=$(pg_events gc PodGroupPoolConflict | cut -f2- | grep -Ev '\((p and q|q and p)\)' || true)
    [ -z "$wrong" ] || fail "PodGroupPoolConflict messages that do not name both pools p and q: $wrong"
}

# Backfill: gang gw (mid, 2 x 4 cpu, timeout 12 s) waits behind a high pod on
# 2 x 4 cpu. A later low pod may use the free node (gw could evict it); a
# later mid pod, or a later mid gang gb, may not until gw's timeout, then
# they backfill. gb's PodGroup itself says why it waits.
case_backfill() {
    reset_all
    make_pool p '{"disableBorrowing": true}'
    pool_nodes p 2 4
    make_pod f0 --pool p --cpu 4 --priority-class high
    wait_until '[ -n "$(pod_node f0)" ]' 60 || fail "f0 not bound"
    make_podgroup gw 2 12
    gang_pods gw 2 --pool p --cpu 4 --priority-class mid
    expect_members_placeable gw 2 1
    [ "$(pg_phase gw)" != Failed ] || fail "gw timed out before the test could start (slow machine?)"
    make_pod s-mid --pool p --cpu 1 --priority-class mid
    make_pod s-low --pool p --cpu 1 --priority-class low
    make_podgroup gb 2
    gang_pods gb 2 --pool p --cpu 1 --priority-class mid
    wait_until '[ -n "$(pod_node s-low)" ]' 30 || fail "s-low (gw could evict it) not backfilled: $(placement)"
    wait_until "pg_events gb FailedScheduling | grep -qF 'waiting behind pod group default/gw, which goes first'" 10 ||
        fail "no FailedScheduling 'waiting behind pod group default/gw' on PodGroup gb: $(pg_events gb | tr '\n' ' ')"
    # s-mid may bind only once gw timed out; the Failed phase is written up
    # to ~1 s after that, so a bound s-mid gets 3 s to see it.
    local ph t0=$SECONDS
    while :; do
        ph=$(pg_phase gw)
        [ "$ph" = Failed ] && break
        if [ -n "$(pod_node s-mid)" ] || [ "$(gang_bound gb)" != 0 ]; then
            wait_until '[ "$(pg_phase gw)" = Failed ]' 3 ||
                fail "s-mid or gb (equal priority, behind gw) bound while gw waits (phase $ph): $(placement)"
            break
        fi
        [ $((SECONDS - t0)) -lt 60 ] || fail "gw never timed out (phase $ph)"
        sleep 0.3
    done
    wait_until '[ -n "$(pod_node s-mid)" ] && [ "$(gang_bound gb)" = 2 ]' 30 ||
        fail "s-mid and gb not backfilled after gw's timeout: $(placement)"
    [ "$(gang_bound gw)" = 0 ] || fail "gw partly bound: $(placement)"
    assert_no_overcommit
}

# minResources (10 cpu) larger than the pool's free room (8 cpu): the gang
# waits though its pods (2 x 1 cpu) would fit; a third node: it is placed.
case_min_resources() {
    reset_all
    make_pool p '{"disableBorrowing": true}'
    pool_nodes p 2 4
    api_post_json "$PG_API" '{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": "gm"}, "spec": {"minMember": 2, "minResources": {"cpu": "10"}}}'
    gang_pods gm 2 --pool p --cpu 1
    wait_until "pg_events gm FailedScheduling | grep -Eq '^FailedScheduling.pod group default/gm: [0-9]+/2 members placeable; .*minResources'" 30 ||
        fail "no FailedScheduling naming minResources on gm: $(pg_events gm | tr '\n' ' ')"
    expect_still gm 0 3
    make_node p-2 4 16Gi 0 110 pool=p
    wait_until '[ "$(gang_bound gm)" = 2 ]' 60 || fail "gm not bound once 12 cpu were free: $(placement)"
}

# metric NAME-WITH-LABELS: the sample's value from /metrics, empty if absent.
metric() { # the whole page first: awk leaving early would cut curl off (pipefail)
    local page
    page=$(sched_curl -fsS --max-time 5 "$(sched_url "$(cat "$CP_WORK/metrics.port")")/metrics") || return 1
    awk -v k="$1" '$1 == k { print $2; exit }' <<<"$page"
}

# --stale-gang-grace 2 --evict-stale-gangs, /metrics on: gang gz placed
# (gangs_scheduled_total 1, gang_wait_seconds_count 1); a member deleted:
# StaleGang on gz and the rest evicted. Gang gq (2 x 4 cpu on 2 x 4 cpu with
# 1 cpu taken, timeout 3 s): pending_gangs{pool="p"} 1, then gangs_timed_out_total 1.
case_stale_metrics() {
    reset_all
    stop_scheduler_clean
    free_port >"$CP_WORK/metrics.port"
    start_scheduler --metrics-port "$(cat "$CP_WORK/metrics.port")" --metrics-bind-address 127.0.0.1 \
        "${METRICS_OPEN[@]}" --stale-gang-grace 2 --evict-stale-gangs
    make_pool p '{"disableBorrowing": true}'
    pool_nodes p 2 4
    make_podgroup gz 3
    gang_pods gz 3 --pool p --cpu 1
    wait_until '[ "$(gang_bound gz)" = 3 ]' 60 || fail "gz not bound: $(placement)"
    wait_until '[ "$(metric ai_scheduler_gangs_scheduled_total)" = 1 ]' 30 ||
        fail "ai_scheduler_gangs_scheduled_total '$(metric ai_scheduler_gangs_scheduled_total)', want 1"
    [ "$(metric ai_scheduler_gang_wait_seconds_count)" = 1 ] ||
        fail "ai_scheduler_gang_wait_seconds_count '$(metric ai_scheduler_gang_wait_seconds_count)', want 1"
    delete_pods gz-0
    wait_until 'pg_events gz StaleGang | grep -q "2 of minMember 3"' 30 ||
        fail "no StaleGang event '2 of minMember 3 ...' on gz: $(pg_events gz | tr '\n' ' ')"
    wait_until '[ "$(gang_count gz)" = 0 ]' 30 || fail "the rest of stale gz not evicted: $(placement)"

    # gq fits the pool's capacity, not its free room (a gang larger than
    # its whole pool holds nobody back and is not counted as waiting)
    make_pod f0 --pool p --cpu 1 --priority-class high
    wait_until '[ -n "$(pod_node f0)" ]' 30 || fail "f0 not bound"
    make_podgroup gq 2 3
    gang_pods gq 2 --pool p --cpu 4
    wait_until '[ "$(metric "ai_scheduler_pending_gangs{pool=\"p\"}")" = 1 ]' 30 ||
        fail "ai_scheduler_pending_gangs{pool=\"p\"} '$(metric "ai_scheduler_pending_gangs{pool=\"p\"}")', want 1"
    wait_until '[ "$(metric ai_scheduler_gangs_timed_out_total)" = 1 ]' 30 ||
        fail "ai_scheduler_gangs_timed_out_total '$(metric ai_scheduler_gangs_timed_out_total)', want 1"
    [ "$(gang_bound gq)" = 0 ] || fail "gq partly bound: $(placement)"
    stop_scheduler_clean
    start_scheduler
}

case_clean_shutdown() {
    stop_scheduler_clean
}

# gang_run NAME FUNC: run_case, unless GANG_CASES (names separated by spaces)
# leaves NAME out.
# Issue 35, fault 2: a preemptor nominated to a node is not held behind a
# gang that its nomination keeps from fitting. "hi" evicts "saver" (a
# finalizer keeps it Terminating) and is nominated on p-0; PodGroup gn,
# created before hi with members of hi's priority (it ranks ahead), then
# waits: the room is hi's. Once saver is gone hi binds on p-0. Before, the
# backfill gate held hi behind gn until gn's timeout (600 s), both waiting
# on the node hi had emptied.
case_nominee_behind_gang() {
    reset_all
    make_pool p '{"disableBorrowing": true}'
    pool_nodes p 1 4
    make_podgroup gn 2 600
    make_pod saver --pool p --cpu 4 --priority-class low \
        --merge '{"metadata": {"finalizers": ["e2e.aibee.cn/hold"]}}'
    wait_until '[ -n "$(pod_node saver)" ]' 60 || fail "saver not bound"
    make_pod hi --pool p --cpu 4 --priority-class high
    wait_until '[ "$(kc get pod hi -o jsonpath="{.status.nominatedNodeName}")" = p-0 ]' 60 ||
        fail "hi not nominated on p-0"
    wait_until '[ -n "$(kc get pod saver -o jsonpath="{.metadata.deletionTimestamp}")" ]' 30 || fail "saver not evicted"
    gang_pods gn 2 --pool p --cpu 2 --priority-class high
    wait_until 'events_for gn-0 default FailedScheduling | grep -q "gn"' 60 || fail "gn not tried: $(placement)"
    [ -z "$(pod_node hi)" ] || fail "hi bound beside its terminating victim"
    kc patch pod saver --type=merge -p '{"metadata": {"finalizers": null}}' >/dev/null
    wait_until '[ "$(pod_node hi)" = p-0 ]' 60 ||
        fail "hi not bound on p-0: $(events_for hi default FailedScheduling | tail -1)"
    [ "$(gang_bound gn)" = 0 ] || fail "gn bound: $(placement)"
    assert_no_overcommit
}

gang_run() {
    if [ -z "${GANG_CASES:-}" ] || [[ " $GANG_CASES " == *" $1 "* ]]; then
        run_case "$1" "$2"
    fi
}

cp_start
podgroup_api_setup
make_priority_class low 10
make_priority_class mid 50
make_priority_class high 100
start_scheduler
gang_run race case_race
gang_run preempt case_preempt
gang_run preempt-whole-gang case_preempt_whole_gang
gang_run borrow case_borrow
gang_run elastic-min-first case_elastic_min_first
gang_run elastic-surplus-victim case_elastic_surplus_victim
gang_run missing-invalid case_missing_invalid
gang_run timeout case_timeout
gang_run pool-conflict case_pool_conflict
gang_run backfill case_backfill
gang_run min-resources case_min_resources
gang_run stale-metrics case_stale_metrics
gang_run restart case_restart
gang_run status case_status
gang_run nominee-behind-gang case_nominee_behind_gang
run_case clean-shutdown case_clean_shutdown
finish
