#!/usr/bin/env bash
# shellcheck disable=SC2016 source-path=SCRIPTDIR
# Topology-aware gangs on a real API server: 4 blocks (2 spines) x 8 nodes
# with 8 GPUs each; PodGroups of 8 to 32 GPUs with
# resource.aibee.cn/topology-required or -preferred on network.aibee.cn/block.
# Gangs are created one after another (each waits for the one before to be
# placed), so the policy's answer - the block that strands the fewest GPUs,
# ties by name - is exact and asserted gang by gang. The fragmented cluster
# has 4 GPUs of each block's first 4 nodes taken by pods this test binds
# itself; a topology-blind run on it is measured against the preferred one.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=topology/

PG_API=/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups
PG_LABEL=scheduling.x-k8s.io/pod-group
BLOCK=network.aibee.cn/block

make_cluster() {
    local b i spine
    for b in 0 1 2 3; do
        spine=s$((b / 2))
        for i in 0 1 2 3 4 5 6 7; do
            make_node "n$b$i" 64 256Gi 8 110 "network.aibee.cn/spine=$spine" "$BLOCK=b$b" || fail "node create failed"
        done
    done
}

# 4 GPUs taken on the first 4 nodes of each block (bound here: a fragmented cluster).
fragment() {
    local b i
    for b in 0 1 2 3; do
        for i in 0 1 2 3; do
            api_post_json /api/v1/namespaces/default/pods \
                "$(pod_json "fill-$b$i" --gpu 4 --merge "{\"spec\": {\"nodeName\": \"n$b$i\"}}")" || fail "fill pod failed"
        done
    done
}

# gang NAME GPUS PER-MEMBER-GPUS MODE(required|preferred|none): a PodGroup and its members; waits for them.
gang() {
    local name=$1 gpus=$2 per=$3 mode=$4 n ann='{}'
    n=$((gpus / per))
    [ "$mode" != none ] && ann=$(jq -cn --arg k "resource.aibee.cn/topology-$mode" --arg v "$BLOCK" '{($k): $v}')
    api_post_json "$PG_API" "$(jq -cn --arg n "$name" --argjson m "$n" --argjson a "$ann" \
        '{apiVersion: "scheduling.x-k8s.io/v1alpha1", kind: "PodGroup", metadata: {name: $n, annotations: $a},
          spec: {minMember: $m}}')" || fail "PodGroup $name create failed"
    make_pods "$name" "$n" --label "$PG_LABEL=$name" --gpu "$per" --cpu 1 || fail "pods of $name failed"
    wait_until "[ \"\$(count_bound '$PG_LABEL=$name')\" = $n ]" 30 || fail "gang $name: $(count_bound "$PG_LABEL=$name") of $n bound"
}

# The blocks a gang's pods landed in, sorted and unique, space-separated.
gang_blocks() {
    local nodes
    nodes=$(pods_json -l "$PG_LABEL=$1" | jq -r '.items[].spec.nodeName // empty' | sort -u)
    kc get nodes -o json | jq -r --arg nodes "$nodes" --arg k "$BLOCK" \
        '($nodes | split("\n")) as $n | [.items[] | select(.metadata.name as $x | $n | index($x)) | .metadata.labels[$k]]
         | unique | join(" ")'
}

SIZES="32 24 16 8 32 24 16 8"

# run_gangs MODE PER: the 8 gangs in order; prints each gang's blocks, one line each.
run_gangs() {
    local mode=$1 per=$2 i=0 g
    for g in $SIZES; do
        gang "$mode-$i" "$g" "$per" "$mode"
        echo "$(gang_blocks "$mode-$i")"
        i=$((i + 1))
    done
}

# Empty cluster, required, members of 8 GPUs (64 per block): b0 takes 32,
# 24 and 8; b1 32 and 16; b2 the rest.
case_required_empty() {
    make_cluster
    start_scheduler
    local got
    got=$(run_gangs required 8 | tr '\n' ' ')
    log "blocks per gang: $got"
    [ "$got" = "b0 b0 b1 b0 b1 b2 b1 b2 " ] || fail "blocks per gang: '$got', want 'b0 b0 b1 b0 b1 b2 b1 b2 '"
    wait_until 'events_for required-0 default TopologyPlaced | grep -q "network.aibee.cn/block=b0"' 10 ||
        fail "no TopologyPlaced event on required-0"
    events_for required-0 default TopologyPlaced | cut -f2 >&2
    assert_no_overcommit
    stop_scheduler_clean
    kc delete podgroups.scheduling.x-k8s.io --all >/dev/null 2>&1 || true
    cp_reset
}

# Fragmented (48 GPUs free per block, 4-GPU members): b0 32+16, b1 24+8+16,
# b2 32+8, b3 24.
EXPECT_FRAG="b0 b1 b0 b1 b2 b3 b1 b2 "

case_required_fragmented() {
    make_cluster
    fragment
    start_scheduler
    local got
    got=$(run_gangs required 4 | tr '\n' ' ')
    log "blocks per gang: $got"
    [ "$got" = "$EXPECT_FRAG" ] || fail "blocks per gang: '$got', want '$EXPECT_FRAG'"
    # A 56-GPU gang fits no block now: it waits, with an event, evicting nobody.
    gang_nowait() {
        api_post_json "$PG_API" "$(jq -cn '{apiVersion: "scheduling.x-k8s.io/v1alpha1", kind: "PodGroup",
            metadata: {name: "huge", annotations: {"resource.aibee.cn/topology-required": "network.aibee.cn/block"}},
            spec: {minMember: 14}}')" || fail "PodGroup huge create failed"
        make_pods huge 14 --label "$PG_LABEL=huge" --gpu 4 --cpu 1 || fail "pods of huge failed"
    }
    gang_nowait
    wait_until 'events_for huge default TopologyUnsatisfiable | grep -q "no network.aibee.cn/block domain"' 20 ||
        fail "no TopologyUnsatisfiable event"
    [ "$(count_bound "$PG_LABEL=huge")" = 0 ] || fail "part of the huge gang was bound"
    assert_no_overcommit
    stop_scheduler_clean
    kc delete podgroups.scheduling.x-k8s.io --all >/dev/null 2>&1 || true
    cp_reset
}

# Fraction of gangs inside one block.
one_block_fraction() { awk '{ n++; if (NF == 1) k++ } END { printf "%d/%d", k, n }'; }

case_preferred_vs_blind() {
    make_cluster
    fragment
    start_scheduler
    local blind pref
    blind=$(run_gangs none 4 | one_block_fraction)
    stop_scheduler_clean
    kc delete podgroups.scheduling.x-k8s.io --all >/dev/null 2>&1 || true
    cp_reset
    make_cluster
    fragment
    start_scheduler
    local got
    got=$(run_gangs preferred 4)
    pref=$(one_block_fraction <<<"$got")
    echo "MEASURE topology/preferred: gangs of 8-32 GPUs on a fragmented 4 x 8-node cluster: in one block: preferred $pref, topology-blind $blind"
    log "measured: preferred $pref, blind $blind"
    [ "$(tr '\n' ' ' <<<"$got")" = "$EXPECT_FRAG" ] || fail "preferred blocks: '$(tr '\n' ' ' <<<"$got")', want '$EXPECT_FRAG'"
    [ "${pref%/*}" -ge "${blind%/*}" ] || fail "preferred ($pref) worse than blind ($blind)"
    assert_no_overcommit
    stop_scheduler_clean
    kc delete podgroups.scheduling.x-k8s.io --all >/dev/null 2>&1 || true
    cp_reset
}

# Issue 22, fault 10: a topology-required gang that fits no block preempts
# inside one block (the one that costs the fewest victims), never across
# blocks. 2 blocks x 2 nodes x 8 GPUs, each node half taken by a priority-10
# pod of 4 GPUs; a priority-100 gang of 2 x 8 GPUs must share a block: the two
# fill pods of one block go, the other block's stay, the gang lands whole in
# the block it emptied.
case_required_preempts_in_block() {
    local b i
    for b in 0 1; do
        for i in 0 1; do
            make_node "n$b$i" 64 256Gi 8 110 "$BLOCK=b$b" || fail "node create failed"
        done
    done
    start_scheduler
    make_priority_class low 10 >/dev/null 2>&1 || true
    make_priority_class high 100 >/dev/null 2>&1 || true
    for b in 0 1; do
        for i in 0 1; do
            make_pod "fill-$b$i" --gpu 4 --priority-class low --node-selector "kubernetes.io/hostname=n$b$i" ||
                fail "fill pod failed"
        done
    done
    wait_until '[ "$(count_bound app=e2e)" = 4 ]' 30 || fail "fill pods: $(count_bound app=e2e)/4 bound"
    api_post_json "$PG_API" "$(jq -cn '{apiVersion: "scheduling.x-k8s.io/v1alpha1", kind: "PodGroup",
        metadata: {name: "tp", annotations: {"resource.aibee.cn/topology-required": "network.aibee.cn/block"}},
        spec: {minMember: 2}}')" || fail "PodGroup tp create failed"
    make_pods tp 2 --label "$PG_LABEL=tp" --gpu 8 --cpu 1 --priority-class high || fail "pods of tp failed"
    wait_until "[ \"\$(count_bound '$PG_LABEL=tp')\" = 2 ]" 60 ||
        fail "gang tp: $(count_bound "$PG_LABEL=tp")/2 bound: $(events_for tp default | tail -3 | tr '\n' ' ')"
    local blocks left
    blocks=$(gang_blocks tp)
    [ "$blocks" = b0 ] || [ "$blocks" = b1 ] || fail "gang tp spans blocks '$blocks'"
    left=$(pods_json | jq -r '[.items[] | select(.metadata.name | startswith("fill-")) | select(.metadata.deletionTimestamp == null) | .metadata.name] | sort | join(" ")')
    local other=b0
    [ "$blocks" = b0 ] && other=b1
    [ "$left" = "fill-${other#b}0 fill-${other#b}1" ] || fail "fill pods left: '$left', want the two of block $other"
    log "measured: gang tp preempted the 2 fill pods of block $blocks; block $other untouched"
    assert_no_overcommit
    stop_scheduler_clean
}

# topo_run NAME FUNC: run_case, then clean up what a failed case left.
topo_run() {
    run_case "$@"
    stop_scheduler KILL >/dev/null 2>&1 || true
    kc delete podgroups.scheduling.x-k8s.io --all >/dev/null 2>&1 || true
    cp_reset
}

cp_start
topo_run required-empty case_required_empty
topo_run required-fragmented case_required_fragmented
topo_run preferred-vs-blind case_preferred_vs_blind
topo_run required-preempts-in-block case_required_preempts_in_block
finish
