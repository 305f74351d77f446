#!/usr/bin/env bash
# Runs every cmocka unit binary in $1; prints a closing "N passed, N failed".
set -u
dir=$1
pass=0; fail=0; failed=""
for t in "$dir"/test_*; do
    [ -x "$t" ] || continue
    if "$t"; then pass=$((pass+1)); else fail=$((fail+1)); failed="$failed $(basename "$t")"; fi
done
echo "unit suites ($dir): $pass passed, $fail failed"
# make test adds up every part (test/summary.sh).
if [ -n "${TEST_SUMMARY:-}" ]; then echo "$pass $fail unit suites ($dir)" >>"$TEST_SUMMARY"; fi
[ "$fail" = 0 ] || { echo "failed suites:$failed" >&2; exit 1; }
