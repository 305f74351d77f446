#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Bad configuration: the scheduler exits non-zero, promptly, with one clear line.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=config/

# expect_one_line_error PATTERN ARGS...: runs the binary (30 s limit); wants a
# non-zero exit and exactly one non-empty output line matching PATTERN (ERE, case-insensitive).
expect_one_line_error() {
    local pat=$1 out rc=0
    shift
    [ -x "$AISCHED_BIN" ] || fail "scheduler binary not found: $AISCHED_BIN"
    out=$(ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} timeout -k 5 30 "$AISCHED_BIN" "$@" 2>&1 </dev/null) || rc=$?
    log "exit $rc: $(head -c 300 <<<"$out")"
    [ "$rc" != 0 ] || fail "exit status 0 for: $*"
    { [ "$rc" != 124 ] && [ "$rc" != 137 ]; } || fail "did not exit within 30s: $*"
    local n
    n=$(grep -c . <<<"$out" || true)
    [ "$n" = 1 ] || fail "want exactly one output line, got $n: $out"
    grep -qiE "$pat" <<<"$out" || fail "message does not match /$pat/: $out"
}

case_missing_kubeconfig() {
    expect_one_line_error 'kubeconfig|no such file|not found' --kubeconfig "$CP_WORK/does-not-exist" --leader-elect=false --metrics-port 0
}

case_garbage_kubeconfig() {
    printf 'this: [is not\n  a kubeconfig\n\t::' >"$CP_WORK/garbage.kubeconfig"
    expect_one_line_error 'kubeconfig|parse|yaml|invalid' --kubeconfig "$CP_WORK/garbage.kubeconfig" --leader-elect=false --metrics-port 0
}

case_kubeconfig_without_server() {
    sed '/server:/d' "$SCHED_KUBECONFIG" >"$CP_WORK/noserver.kubeconfig"
    expect_one_line_error 'server|kubeconfig|cluster' --kubeconfig "$CP_WORK/noserver.kubeconfig" --leader-elect=false --metrics-port 0
}

case_wrong_token() {
    sed "s/token: .*/token: wrong-$(openssl rand -hex 8)/" "$SCHED_KUBECONFIG" >"$CP_WORK/badtoken.kubeconfig"
    expect_one_line_error '401|unauthori[sz]ed|authenticat|token|credential' --kubeconfig "$CP_WORK/badtoken.kubeconfig" --leader-elect=false --metrics-port 0
}

case_bad_flag() {
    local rc=0
    [ -x "$AISCHED_BIN" ] || fail "scheduler binary not found: $AISCHED_BIN"
    timeout -k 5 30 "$AISCHED_BIN" --kubeconfig "$SCHED_KUBECONFIG" --no-such-flag >/dev/null 2>&1 </dev/null || rc=$?
    { [ "$rc" != 0 ] && [ "$rc" != 124 ]; } || fail "unknown flag: exit $rc"
}

# --- profiles: plugin sets and weights (KubeSchedulerConfiguration style) ---

write_cfg() { # NAME: the YAML on stdin, after the header
    { printf 'apiVersion: ai-scheduler.aibee.cn/v1alpha1\nkind: AiSchedulerConfiguration\n'; cat; } >"$CP_WORK/$1"
    echo "$CP_WORK/$1"
}

case_unknown_plugin() {
    local f
    f=$(write_cfg unknown.yaml <<'Y'
profiles:
  - plugins:
      filter:
        disabled:
          - name: TaintTolerations
Y
)
    expect_one_line_error 'unknown\.yaml:7: plugins\.filter: unknown plugin "TaintTolerations"' \
        --config "$f" --kubeconfig "$SCHED_KUBECONFIG" --leader-elect=false --metrics-port 0
}

# wait_bound NAME: prints the node once bound (30 s).
wait_bound() {
    wait_until "[ -n \"\$(pod_node $1)\" ]" 30 || fail "$1 was not bound"
    pod_node "$1"
}

# The only node has a NoSchedule taint: with TaintToleration's filter
# disabled in the profile the pod is placed there anyway.
case_disabled_filter() {
    cp_reset
    local f
    f=$(write_cfg nofilter.yaml <<'Y'
profiles:
  - plugins:
      filter:
        disabled: [{name: TaintToleration}]
Y
)
    make_node tainted 4 8Gi 0 110 taint:dedicated=x:NoSchedule >/dev/null
    start_scheduler --config "$f"
    make_pod through --cpu 100m >/dev/null
    local n
    n=$(wait_bound through)
    [ "$n" = tainted ] || fail "bound to $n"
    stop_scheduler_clean
    # Control: with the default profile the same pod stays pending.
    kc delete pod through --grace-period=0 --force >/dev/null 2>&1
    start_scheduler
    make_pod blocked --cpu 100m >/dev/null
    wait_until '[ -n "$(events_for blocked default FailedScheduling)" ]' 30 || fail "no FailedScheduling for the control pod"
    [ -z "$(pod_node blocked)" ] || fail "control pod bound despite the taint"
    stop_scheduler_clean
}

# Two profiles in one process: the default one bin-packs (MostAllocated),
# "ai-least" scores LeastAllocated with weight 5. Same pod, two schedulerNames,
# two placements.
case_weights_and_profiles() {
    cp_reset
    local f
    f=$(write_cfg profiles.yaml <<'Y'
profiles:
  - {}
  - schedulerName: ai-least
    plugins:
      score:
        disabled: [{name: NodeResourcesMostAllocated}]
        enabled: [{name: NodeResourcesLeastAllocated, weight: 5}]
Y
)
    local a b
    place_two "$f" ai-scheduler ai-least >"$CP_WORK/placed"
    read -r a b <"$CP_WORK/placed"
    [ "$a" = packed ] || fail "default profile put its pod on $a (want packed)"
    [ "$b" = empty ] || fail "ai-least profile put its pod on $b (want empty)"
}

# place_two CONFIG NAME-A NAME-B: nodes "packed" (half in use, bound
# directly: no scheduler involved) and "empty"; the scheduler runs with
# CONFIG; one 100m/100Mi pod per schedulerName. Prints "NODE-A NODE-B".
place_two() {
    make_node packed 4 8Gi 0 110 >/dev/null
    make_node empty 4 8Gi 0 110 >/dev/null
    make_pod filler --cpu 2 --mem 4Gi --merge '{"spec":{"nodeName":"packed"}}' >/dev/null
    start_scheduler --config "$1"
    make_pod pod-a --cpu 100m --mem 100Mi --scheduler "$2" >/dev/null
    make_pod pod-b --cpu 100m --mem 100Mi --scheduler "$3" >/dev/null
    echo "$(wait_bound pod-a) $(wait_bound pod-b)"
    stop_scheduler_clean
}

# --- kubescheduler.config.k8s.io/v1 files (kube 1.25+) ---

# examples/scheduler-config-v1.yaml as it is: its bin-packing profile
# (NodeResourcesFit MostAllocated, weight 3) puts a pod on the half-used
# node, its default profile (v1's LeastAllocated) the same pod on the empty one.
case_kube_v1_file() {
    expect_pack_and_spread scheduler-config-v1.yaml v1
}

# examples/FILE's profile ai-scheduler bin-packs a pod onto the half-used
# node, its profile ai-scheduler-spread (VERSION's default LeastAllocated)
# puts the same pod on the empty one.
expect_pack_and_spread() {
    cp_reset
    local a b
    # Through a file, not a pipe: a scheduler left running by a failed
    # place_two must not keep the reader waiting.
    place_two "$E2E_DIR/../../examples/$1" ai-scheduler ai-scheduler-spread >"$CP_WORK/placed"
    read -r a b <"$CP_WORK/placed"
    [ "$a" = packed ] || fail "profile ai-scheduler (MostAllocated) put its pod on $a (want packed)"
    [ "$b" = empty ] || fail "profile ai-scheduler-spread ($2 default) put its pod on $b (want empty)"
}

# A plugin kube removed (SelectorSpread) in a v1 file: refused, naming it.
case_kube_v1_removed_plugin() {
    printf '%s\n' 'apiVersion: kubescheduler.config.k8s.io/v1' 'kind: KubeSchedulerConfiguration' 'profiles:' \
        '  - plugins:' '      score:' '        enabled:' '          - name: SelectorSpread' >"$CP_WORK/removed.yaml"
    expect_one_line_error 'removed\.yaml:7: plugins\.score\.enabled: plugin "SelectorSpread" was removed' \
        --config "$CP_WORK/removed.yaml" --kubeconfig "$SCHED_KUBECONFIG" --leader-elect=false --metrics-port 0
}

# --- kubescheduler.config.k8s.io/v1beta1 files (kube 1.20-1.21) ---

# examples/scheduler-config-v1beta1.yaml as it is: its bin-packing profile
# (NodeResourcesMostAllocated, weight 3) puts a pod on the half-used node,
# its default profile (v1.20's LeastAllocated) the same pod on the empty one.
case_kube_v1beta1_file() {
    expect_pack_and_spread scheduler-config-v1beta1.yaml v1beta1
}

cp_start
run_case missing-kubeconfig case_missing_kubeconfig
run_case garbage-kubeconfig case_garbage_kubeconfig
run_case kubeconfig-without-server case_kubeconfig_without_server
run_case wrong-token case_wrong_token
run_case bad-flag case_bad_flag
run_case unknown-plugin case_unknown_plugin
run_case disabled-filter case_disabled_filter
run_case weights-and-profiles case_weights_and_profiles
run_case kube-v1-file case_kube_v1_file
run_case kube-v1-removed-plugin case_kube_v1_removed_plugin
run_case kube-v1beta1-file case_kube_v1beta1_file
finish
