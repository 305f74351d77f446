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

cp_start
run_case missing-kubeconfig case_missing_kubeconfig
run_case garbage-kubeconfig case_garbage_kubeconfig
run_case kubeconfig-without-server case_kubeconfig_without_server
run_case wrong-token case_wrong_token
run_case bad-flag case_bad_flag
finish
