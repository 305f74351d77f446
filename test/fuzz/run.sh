#!/usr/bin/env bash
# Builds the libFuzzer targets (make VARIANT=fuzz fuzz-bins: clang, ASan+UBSan)
# and runs each over its seeds in test/fuzz/corpus/NAME, two at a time.
#
#   run.sh short   each target for FUZZ_SHORT seconds (default 10): make test
#   run.sh long    each for FUZZ_RUNS executions (default 10,000,000) or
#                  FUZZ_TIME seconds (default 3600), whichever ends first: make fuzz
#   FUZZ_TARGETS="pod node"  only these targets
#
# What a run finds goes to build-fuzz/corpus/NAME (the seeds stay as they
# are); a crash is kept as build-fuzz/artifacts/NAME/crash-*, and fails the
# run. Prints one line per target: executions, seconds, exec/s, new inputs.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
cd "$REPO" || exit 1
mode=${1:-short}
JOBS=${FUZZ_JOBS:-2}
B=build-fuzz

say() { echo "fuzz: $*" >&2; }
record() { # passed failed: make test adds up every part (test/summary.sh)
    [ -n "${TEST_SUMMARY:-}" ] && echo "$1 $2 fuzz targets ($mode)" >>"$TEST_SUMMARY"
    return 0
}

bash test/deps.sh fuzz || { record 0 1; exit 1; }
mkdir -p $B
# every core for the build (the targets are compiled with clang, a fourth variant)
if ! make --no-print-directory -j"$(nproc 2>/dev/null || echo 2)" VARIANT=fuzz fuzz-bins >$B/build.log 2>&1; then
    tail -30 $B/build.log >&2; say "the targets did not build ($B/build.log)"; record 0 1; exit 1
fi
targets=${FUZZ_TARGETS:-$(for f in test/fuzz/fuzz_*.c; do f=${f##*/fuzz_}; echo "${f%.c}"; done)}
for t in $targets; do
    [ -x "$B/fuzz/$t" ] || { say "no target $t"; record 0 1; exit 1; }
done

case $mode in
short) args=(-max_total_time="${FUZZ_SHORT:-10}") ;;
long) args=(-runs="${FUZZ_RUNS:-10000000}" -max_total_time="${FUZZ_TIME:-3600}") ;;
*) say "usage: run.sh short|long"; exit 2 ;;
esac

# One target: its own work corpus (new inputs) first, then the seeds.
run_one() {
    local t=$1
    local work=$B/corpus/$t art=$B/artifacts/$t/ log=$B/logs/$t.log
    mkdir -p "$work" "$art" "$(dirname "$log")"
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
        "$B/fuzz/$t" "${args[@]}" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$art" "$work" "test/fuzz/corpus/$t" >"$log" 2>&1
    echo $? >"$log.rc"
}

start=$(date +%s)
running=0
for t in $targets; do
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
done
wait

pass=0 fail=0
printf '%-11s %12s %8s %10s %6s  %s\n' target executions seconds exec/s new result
for t in $targets; do
    log=$B/logs/$t.log
    rc=$(cat "$log.rc" 2>/dev/null || echo 1)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
    new=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
    runs=${runs:-0} secs=${secs:-0} new=${new:-0}
    rate=$((secs > 0 ? runs / secs : runs))
    if [ "$rc" = 0 ]; then
        result=ok; pass=$((pass + 1))
    else
        result="FAILED (exit $rc; $log)"; fail=$((fail + 1))
        grep -m1 -A25 -E '^==[0-9]+==ERROR|runtime error|deadly signal|Timeout|out-of-memory' "$log" >&2
        ls "$B/artifacts/$t"/* 2>/dev/null | sed 's/^/  input: /' >&2
    fi
    printf '%-11s %12s %8s %10s %6s  %s\n' "$t" "$runs" "$secs" "$rate" "$new" "$result"
done
say "$pass passed, $fail failed in $(($(date +%s) - start)) s ($mode)"
record "$pass" "$fail"
[ "$fail" = 0 ]
