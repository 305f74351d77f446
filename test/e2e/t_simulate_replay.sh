#!/usr/bin/env bash
# shellcheck disable=SC2016 source-path=SCRIPTDIR
# Simulate is faithful: a recorded real run replayed through `ai-scheduler
# simulate` gets the same placements and the same order of decisions.
#
# Live: the scheduler (one seed) on the real API server with 4 nodes of 4
# GPUs, two Queues and a priority class; a snapshot of that cluster before
# any workload (nodes, Queues, PriorityClasses, Pools and the scheduler's
# config, as `ai-scheduler snapshot` writes it); then 8 jobs (lone pods,
# gangs, one gang too big to fit, one pod that needs a whole node), created
# ARRIVAL_GAP seconds apart in file order, each pod one at a time. Every job
# is placed (or given up for now) long before the next arrives, and the
# cluster has one pool, so one pool thread decides everything: the order of
# decisions is defined (the log's "assumed pod=... node=..." lines, -v 4).
# No pod finishes during the run (run times of an hour; no kubelet).
#
# Replay: the same snapshot and the workload file the live jobs were made
# from, the same seed, --until just after the last arrival: events.csv's
# binds must equal the live "assumed" lines (pod and node, in order), and
# the pods left pending must be the same.
#
# The one race the live run keeps: a gang's members are gathered in an
# order that follows their uids (random on the API server, fixed in the
# simulation), so which member of a gang lands on which of the gang's nodes
# is not defined. A gang is one decision (all or nothing, one cycle): it is
# compared as one, its nodes as a multiset at its place in the order.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=simulate_replay/

SEED=${REPLAY_SEED:-7}
ARRIVAL_GAP=${REPLAY_GAP:-3}
QAPI=/apis/resource.aibee.cn/v1alpha1
PGAPI=/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups

# The workload: simulate's file format; the live objects are made from it
# below exactly as simulate makes them (pkg/simulate/workload.c).
WORKLOAD='{"kind": "Workload", "jobs": [
 {"name": "j0", "arrival": "0s",  "runTime": "1h", "queue": "qa", "replicas": 2, "tmpl": 1},
 {"name": "j1", "arrival": "1s",  "runTime": "1h", "queue": "qb", "replicas": 4, "tmpl": 1, "gang": {"minMember": 4}},
 {"name": "j2", "arrival": "2s",  "runTime": "1h", "queue": "qa", "replicas": 2, "tmpl": 2, "gang": {"minMember": 2}},
 {"name": "j3", "arrival": "3s",  "runTime": "1h", "queue": "qb", "replicas": 3, "tmpl": 1, "priorityClassName": "high"},
 {"name": "j4", "arrival": "4s",  "runTime": "1h", "queue": "qa", "replicas": 3, "tmpl": 2, "gang": {"minMember": 3}},
 {"name": "j5", "arrival": "5s",  "runTime": "1h", "queue": "qb", "replicas": 1, "tmpl": 1},
 {"name": "j6", "arrival": "6s",  "runTime": "1h", "queue": "qa", "replicas": 1, "tmpl": 4},
 {"name": "j7", "arrival": "7s",  "runTime": "1h", "queue": "qb", "replicas": 2, "tmpl": 1, "gang": {"minMember": 2}}]}'

# The workload file: arrivals ARRIVAL_GAP apart, "tmpl": N GPUs a pod.
workload_file() {
    jq --argjson gap "$ARRIVAL_GAP" '.jobs |= map(
        .arrival = "\((.arrival | rtrimstr("s") | tonumber) * $gap)s"
        | .template = {spec: {containers: [{name: "main", image: "registry.invalid/pause:3",
              resources: {requests: {cpu: "1", "nvidia.com/gpu": "\(.tmpl)"}, limits: {"nvidia.com/gpu": "\(.tmpl)"}}}],
              terminationGracePeriodSeconds: 0}}
        | del(.tmpl))' <<<"$WORKLOAD"
}

# A job's objects as simulate creates them: its PodGroup, then its pods.
job_objects() { # JOB-JSON SCHEDULER-NAME
    jq -c --arg s "$2" '. as $j
      | (if $j.gang then [{apiVersion: "scheduling.x-k8s.io/v1alpha1", kind: "PodGroup",
            metadata: {name: $j.name, namespace: "default", labels: {"resource.aibee.cn/queue": $j.queue}},
            spec: {minMember: $j.gang.minMember}}] else [] end)
      + [range(0; $j.replicas) as $i | {apiVersion: "v1", kind: "Pod",
            metadata: {name: "\($j.name)-\($i)", namespace: "default",
              labels: ({"resource.aibee.cn/queue": $j.queue}
                + (if $j.gang then {"scheduling.x-k8s.io/pod-group": $j.name} else {} end))},
            spec: ($j.template.spec + {schedulerName: $s}
                + (if $j.priorityClassName then {priorityClassName: $j.priorityClassName} else {} end))}]
      | .[]' <<<"$1"
}

# The cluster as `ai-scheduler snapshot` would write it (whatif's command is
# not needed: the same document from kubectl).
take_snapshot() {
    local items
    items=$(for r in nodes priorityclasses queues.resource.aibee.cn pools.resource.aibee.cn podgroups pods; do
        kc get "$r" -A -o json | jq -c '.items[] | del(.metadata.managedFields)'
    done | jq -sc .)
    jq -n --argjson items "$items" --arg t "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg s "$SCHED_NAME" \
        '{apiVersion: "ai-scheduler.aibee.cn/v1", kind: "ClusterSnapshot", takenAt: $t,
          config: {apiVersion: "ai-scheduler.aibee.cn/v1alpha1", kind: "AiSchedulerConfiguration",
                   schedulerName: $s, preemption: {evictionGracePeriodSeconds: 0}},
          items: $items}'
}

case_replay() {
    local w=$CP_WORK/replay
    mkdir -p "$w"
    local seed_flag=() help
    help=$("$AISCHED_BIN" --help 2>&1)
    grep -q -- '--seed' <<<"$help" && seed_flag=(--seed "$SEED")
    [ ${#seed_flag[@]} -gt 0 ] || log "this scheduler has no --seed: ties between nodes must not decide"
    for i in 0 1 2 3; do make_node "n$i" 16 64Gi 4 110 >/dev/null; done
    api_post_json "$QAPI/queues" '{"apiVersion":"resource.aibee.cn/v1alpha1","kind":"Queue","metadata":{"name":"qa"},"spec":{"resources":{"gpu":{"quota":8}}}}' >/dev/null
    api_post_json "$QAPI/queues" '{"apiVersion":"resource.aibee.cn/v1alpha1","kind":"Queue","metadata":{"name":"qb"},"spec":{"resources":{"gpu":{"quota":8}}}}' >/dev/null
    make_priority_class high 50 >/dev/null
    start_scheduler "${seed_flag[@]}"
    wait_until 'grep -q "caches synced" "$CP_WORK/scheduler.log"' 30 || fail "scheduler never synced"
    take_snapshot >"$w/snapshot.json"
    workload_file >"$w/workload.json"
    local t0 n job at obj kind
    t0=$(date +%s.%N)
    n=$(jq '.jobs | length' "$w/workload.json")
    for ((k = 0; k < n; k++)); do
        job=$(jq -c ".jobs[$k]" "$w/workload.json")
        at=$(jq -r '.arrival | rtrimstr("s")' <<<"$job")
        sleep "$(echo "$t0 + $at - $(date +%s.%N)" | bc | sed 's/^-.*/0/')"
        while read -r obj; do
            kind=$(jq -r .kind <<<"$obj")
            if [ "$kind" = PodGroup ]; then api_post_json "$PGAPI" "$obj" >/dev/null; else make_pod_raw "$obj"; fi
        done < <(job_objects "$job" "$SCHED_NAME")
    done
    sleep "$ARRIVAL_GAP"
    # Live record: the decisions in order, then where each pod is.
    sed -n 's/.*assumed pod=\([^ ]*\) node=\([^ ]*\) .*/\1 \2/p' "$CP_WORK/scheduler.log" >"$w/live.order"
    kc get pods -n default -o json | jq -r '.items[] | "default/\(.metadata.name) \(.spec.nodeName // "-")"' | sort >"$w/live.placement"
    [ -s "$w/live.order" ] || fail "no decision in the live log"
    log "live: $(wc -l <"$w/live.order") placements, $(grep -c ' -$' "$w/live.placement") pending"
    # Replay.
    local until=$(( (n - 1) * ARRIVAL_GAP + ARRIVAL_GAP ))
    "$AISCHED_BIN" simulate --snapshot "$w/snapshot.json" --workload "$w/workload.json" --seed "$SEED" \
        --until "${until}s" -o "$w/sim" >"$w/sim.out" 2>"$w/sim.err" || fail "simulate: $(cat "$w/sim.err")"
    awk -F, '$2 == "bind" { print $3, $5 }' "$w/sim/events.csv" >"$w/sim.order"
    # every pod of the workload: its node at the end, "-" when pending
    jq -r '.jobs[] | .name as $j | range(0; .replicas) | "default/\($j)-\(.)"' "$w/workload.json" |
        awk -F, -v ev="$w/sim/events.csv" 'BEGIN {
            while ((getline l < ev) > 0) { split(l, f, ","); if (f[2] == "bind") node[f[3]] = f[5]; else if (f[2] != "action") node[f[3]] = "-" } }
            { print $1, ($1 in node) ? node[$1] : "-" }' | sort >"$w/sim.placement"
    local gangs f
    gangs=$(jq -r '[.jobs[] | select(.gang) | .name] | join(" ")' "$w/workload.json")
    for f in live.order sim.order live.placement sim.placement; do gang_units "$gangs" <"$w/$f" >"$w/$f.units"; done
    sort -o "$w/live.placement.units" "$w/live.placement.units"
    sort -o "$w/sim.placement.units" "$w/sim.placement.units"
    diff -u "$w/live.order.units" "$w/sim.order.units" >&2 || fail "the order of decisions differs (live vs simulated)"
    diff -u "$w/live.placement.units" "$w/sim.placement.units" >&2 || fail "placements differ (live vs simulated)"
    log "replay: $(wc -l <"$w/sim.order") placements in the same order on the same nodes"
}

# gang_units "GANG..." < "ns/pod node" lines: a gang member's pod becomes
# its gang ("default/j1[gang]"), and each run of one gang's lines is sorted
# by node: members of one decision in a defined order.
gang_units() {
    awk -v gangs="$1" 'BEGIN { n = split(gangs, g, " "); for (i = 1; i <= n; i++) isg["default/" g[i]] = 1 }
        function flush(  i, j, t) {
            for (i = 2; i <= m; i++) for (j = i; j > 1 && run[j - 1] > run[j]; j--) { t = run[j]; run[j] = run[j - 1]; run[j - 1] = t }
            for (i = 1; i <= m; i++) print key, run[i]
            m = 0 }
        { job = $1; sub(/-[0-9]+$/, "", job)
          if (job in isg) { if (key != job "[gang]") flush(); key = job "[gang]"; run[++m] = $2 }
          else { flush(); key = ""; print } }
        END { flush() }'
}

# make_pod_raw JSON: one pod object as it is.
make_pod_raw() { api_post_json /api/v1/namespaces/default/pods "$1" >/dev/null; }

cp_start
run_case replay case_replay
stop_scheduler_clean
finish
