#!/usr/bin/env bash
# Runs every cmocka unit binary in $1; prints a closing "N passed, N failed".
# The binaries run UNIT_JOBS at a time (default 6: the slow ones mostly sleep
# on fake API servers' timeouts and leases, e.g. test_leader, test_sched_faults,
# test_dispatch_cleanup, so the plain run takes ~20 s instead of ~60 s); each
# one's output is printed whole, in name order, when all have finished.
# UNIT_JOBS=1 runs them one after another as before.
set -u
dir=$1
jobs=${UNIT_JOBS:-6}
out=$(mktemp -d "${TMPDIR:-/tmp}/ai-sched-unit.XXXXXX")
trap 'rm -rf "$out"' EXIT
tests=()
for t in "$dir"/test_*; do
    [ -x "$t" ] && [ -f "$t" ] && tests+=("$t")
done
# one line per binary: its exit code lands in $out/NAME.rc, its output in $out/NAME.log
if [ ${#tests[@]} -gt 0 ]; then
    printf '%s\0' "${tests[@]}" |
        OUT=$out xargs -0 -P "$jobs" -n 1 bash -c '"$1" >"$OUT/${1##*/}.log" 2>&1; echo $? >"$OUT/${1##*/}.rc"' _
fi
pass=0; fail=0; failed=""
for t in "${tests[@]}"; do
    n=$(basename "$t")
    cat "$out/$n.log" 2>/dev/null
    if [ "$(cat "$out/$n.rc" 2>/dev/null)" = 0 ]; then pass=$((pass+1)); else fail=$((fail+1)); failed="$failed $n"; fi
done
echo "unit suites ($dir): $pass passed, $fail failed"
# make test adds up every part (test/summary.sh).
if [ -n "${TEST_SUMMARY:-}" ]; then echo "$pass $fail unit suites ($dir)" >>"$TEST_SUMMARY"; fi
[ "$fail" = 0 ] || { echo "failed suites:$failed" >&2; exit 1; }
