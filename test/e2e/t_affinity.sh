#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# InterPodAffinity and PodTopologySpread on a real API server: anti-affinity
# spreads replicas and reports kube's message, required affinity co-locates,
# existing pods' anti-affinity is honoured (symmetry), zone spread with
# maxSkew 1, ScheduleAnyway, and nodes without the topology key.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=affinity/

anti() {   # anti SELECTOR_APP TOPOLOGY_KEY -> merge JSON
    jq -cn --arg a "$1" --arg k "$2" '{spec: {affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
        [{labelSelector: {matchLabels: {app: $a}}, topologyKey: $k}]}}}}'
}
aff() {
    jq -cn --arg a "$1" --arg k "$2" '{spec: {affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
        [{labelSelector: {matchLabels: {app: $a}}, topologyKey: $k}]}}}}'
}
spread() {   # spread APP KEY WHEN MAXSKEW
    jq -cn --arg a "$1" --arg k "$2" --arg w "$3" --argjson s "$4" '{spec: {topologySpreadConstraints:
        [{maxSkew: $s, topologyKey: $k, whenUnsatisfiable: $w, labelSelector: {matchLabels: {app: $a}}}]}}'
}

# zone of the node each pod (by name prefix) landed on, counted: "a=3 b=3 c=3"
zone_counts() {
    local prefix=$1
    kc get nodes -o json | jq -c '[.items[] | {(.metadata.name): (.metadata.labels.zone // "none")}] | add' >"$CP_WORK/zones.json"
    pods_json | jq -r --arg p "$prefix" --slurpfile z "$CP_WORK/zones.json" '
        [.items[] | select(.metadata.name | startswith($p)) | select(.spec.nodeName != null)
         | $z[0][.spec.nodeName]] | group_by(.) | map("\(.[0])=\(length)") | join(" ")'
}

# Four replicas with hostname anti-affinity on three nodes: one per node,
# the fourth pending with kube-scheduler's exact message.
case_anti_spreads() {
    cp_reset
    make_node n1 4 8Gi 0 110 zone=a
    make_node n2 4 8Gi 0 110 zone=b
    make_node n3 4 8Gi 0 110 zone=c
    make_pods web 4 --cpu 100m --label app=web --merge "$(anti web kubernetes.io/hostname)"
    wait_until '[ "$(count_bound)" = 3 ]' 60 || fail "want 3 bound, have $(count_bound)"
    local nodes pending ev want
    nodes=$(pods_json | jq -r '[.items[] | .spec.nodeName // empty] | unique | length')
    [ "$nodes" = 3 ] || fail "replicas share nodes: $(pods_json | jq -c '[.items[] | [.metadata.name, .spec.nodeName]]')"
    pending=$(pods_json | jq -r '.items[] | select(.spec.nodeName == null) | .metadata.name')
    [ -n "$pending" ] || fail "no pending replica"
    wait_until "events_for $pending default FailedScheduling | grep -q ." 30 || fail "no FailedScheduling for $pending"
    ev=$(events_for "$pending" default FailedScheduling | head -1 | cut -f2)
    want="0/3 nodes are available: 3 node(s) didn't match pod affinity/anti-affinity, 3 node(s) didn't match pod anti-affinity rules."
    [ "$ev" = "$want" ] || fail "message: '$ev' want '$want'"
}

# Required affinity to a pod pinned on n2 (hostname): all land on n2.
case_affinity_colocates() {
    cp_reset
    make_node n1 4 8Gi 0 110 zone=a
    make_node n2 4 8Gi 0 110 zone=a
    make_node n3 4 8Gi 0 110 zone=b
    make_pod db --cpu 100m --label app=db --node-selector kubernetes.io/hostname=n2
    wait_until '[ "$(pod_node db)" = n2 ]' 30 || fail "db not on n2"
    make_pods follower 3 --cpu 100m --label app=follower --merge "$(aff db kubernetes.io/hostname)"
    wait_until '[ "$(count_bound)" = 4 ]' 60 || fail "want 4 bound, have $(count_bound)"
    local where
    where=$(pods_json | jq -r '[.items[] | select(.metadata.name | startswith("follower")) | .spec.nodeName] | unique | join(",")')
    [ "$where" = n2 ] || fail "followers on $where, want n2"
    # Affinity to nothing that exists (and not to itself): pending, unresolvable.
    make_pod lonely --cpu 100m --label app=lonely --merge "$(aff ghost zone)"
    wait_until 'events_for lonely default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling for lonely"
    local ev
    ev=$(events_for lonely default FailedScheduling | head -1 | cut -f2)
    [ "$ev" = "0/3 nodes are available: 3 node(s) didn't match pod affinity rules, 3 node(s) didn't match pod affinity/anti-affinity." ] ||
        fail "lonely message: $ev"
}

# A pod waiting for pod affinity is retried as soon as a matching pod is
# bound (well before the unschedulable queue's periodic flush).
case_affinity_wakes() {
    cp_reset
    make_node w1 4 8Gi 0 110 zone=a
    make_node w2 4 8Gi 0 110 zone=b
    make_pod waiter --cpu 100m --label app=waiter --merge "$(aff late zone)"
    wait_until 'events_for waiter default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling for waiter"
    make_pod late --cpu 100m --label app=late --node-selector zone=b
    wait_until '[ "$(pod_node late)" = w2 ]' 30 || fail "late not on w2"
    wait_until '[ "$(pod_node waiter)" = w2 ]' 20 || fail "waiter not bound next to late within 20s: '$(pod_node waiter)'"
}

# An existing pod's required anti-affinity keeps plain pods out of its zone.
case_symmetry() {
    cp_reset
    make_node n1 4 8Gi 0 110 zone=a
    make_node n2 4 8Gi 0 110 zone=a
    make_node n3 4 8Gi 0 110 zone=b
    make_pod guard --cpu 100m --label app=guard --node-selector kubernetes.io/hostname=n1 --merge "$(anti web zone)"
    wait_until '[ "$(pod_node guard)" = n1 ]' 30 || fail "guard not on n1"
    make_pods web 4 --cpu 100m --label app=web
    wait_until '[ "$(count_bound)" = 5 ]' 60 || fail "want 5 bound, have $(count_bound)"
    local where
    where=$(pods_json | jq -r '[.items[] | select(.metadata.name | startswith("web")) | .spec.nodeName] | unique | join(",")')
    [ "$where" = n3 ] || fail "web pods on $where, want only n3 (zone b)"
}

# Zone spread, maxSkew 1, 9 pods over 3 zones of 2 nodes, plus a node
# without the zone label: 3 per zone, none on the unlabelled node.
case_zone_spread() {
    cp_reset
    local z
    for z in a b c; do
        make_node "$z"1 8 16Gi 0 110 zone=$z
        make_node "$z"2 8 16Gi 0 110 zone=$z
    done
    make_node nozone 64 128Gi 0 110
    make_pods sp 9 --cpu 100m --label app=sp --merge "$(spread sp zone DoNotSchedule 1)"
    wait_until '[ "$(count_bound)" = 9 ]' 60 || fail "want 9 bound, have $(count_bound)"
    local counts
    counts=$(zone_counts sp-)
    [ "$counts" = "a=3 b=3 c=3" ] || fail "zone counts: $counts"
}

# ScheduleAnyway only scores: 6 pods go 2 per zone; a node without the key
# is still usable (nothing filters it).
case_schedule_anyway() {
    cp_reset
    local z
    for z in a b c; do make_node "$z"1 8 16Gi 0 110 zone=$z; done
    make_pods soft 6 --cpu 100m --label app=soft --merge "$(spread soft zone ScheduleAnyway 1)"
    wait_until '[ "$(count_bound)" = 6 ]' 60 || fail "want 6 bound, have $(count_bound)"
    local counts
    counts=$(zone_counts soft-)
    [ "$counts" = "a=2 b=2 c=2" ] || fail "zone counts: $counts"
    kc delete nodes a1 b1 c1 --wait=false >/dev/null
    make_node plain 8 16Gi 0 110
    make_pod soft-late --cpu 100m --label app=soft --merge "$(spread soft zone ScheduleAnyway 1)"
    wait_until '[ "$(pod_node soft-late)" = plain ]' 30 || fail "soft-late not bound to the unlabelled node"
}

# DoNotSchedule when no node has the key: pending, kube's exact message.
case_missing_label() {
    cp_reset
    make_node m1 4 8Gi 0 110
    make_node m2 4 8Gi 0 110
    make_pod hard --cpu 100m --label app=hard --merge "$(spread hard zone DoNotSchedule 1)"
    wait_until 'events_for hard default FailedScheduling | grep -q .' 30 || fail "no FailedScheduling for hard"
    local ev
    ev=$(events_for hard default FailedScheduling | head -1 | cut -f2)
    [ "$ev" = "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints (missing required label)." ] ||
        fail "message: $ev"
    [ -z "$(pod_node hard)" ] || fail "hard got bound"
    # A labelled node appears: the pod goes there.
    make_node m3 4 8Gi 0 110 zone=a
    wait_until '[ "$(pod_node hard)" = m3 ]' 60 || fail "hard not bound to m3 after it appeared"
}

case_clean_shutdown() {
    stop_scheduler_clean
}

cp_start
start_scheduler
run_case anti-spreads case_anti_spreads
run_case affinity-colocates case_affinity_colocates
run_case affinity-wakes case_affinity_wakes
run_case symmetry case_symmetry
run_case zone-spread case_zone_spread
run_case schedule-anyway case_schedule_anyway
run_case missing-label case_missing_label
run_case clean-shutdown case_clean_shutdown
finish
