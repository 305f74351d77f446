#!/usr/bin/env bash
# The closing "N passed, M failed" of `make test`, over every part (unit
# suites plain/ASan/TSan, builds, e2e cases). The parts' runners
# (test/run-unit.sh, test/e2e/run.sh) append "PASSED FAILED LABEL" lines to
# $TEST_SUMMARY; this script wraps each part so make goes on after a failure.
#
#   summary.sh begin              empty $TEST_SUMMARY
#   summary.sh run LABEL CMD...   run CMD; if it fails without having recorded
#                                 a failure, record "0 1 LABEL (exit N)"; exit 0
#   summary.sh end                print the parts and the total; exit 1 if any
#                                 failed or nothing passed
set -uo pipefail
: "${TEST_SUMMARY:?set TEST_SUMMARY to the file the parts append to}"

failures() { awk '{ f += $2 } END { print f + 0 }' "$TEST_SUMMARY" 2>/dev/null || echo 0; }

case "${1:-}" in
begin)
    mkdir -p "$(dirname "$TEST_SUMMARY")" && : >"$TEST_SUMMARY"
    ;;
run)
    [ $# -ge 3 ] || { echo "usage: summary.sh run LABEL CMD..." >&2; exit 2; }
    label=$2
    shift 2
    before=$(failures)
    "$@"
    rc=$?
    if [ "$rc" != 0 ] && [ "$(failures)" = "$before" ]; then
        echo "0 1 $label (exit $rc)" >>"$TEST_SUMMARY"
    fi
    exit 0
    ;;
end)
    echo "---- make test summary"
    awk '{ label = $3; for (i = 4; i <= NF; i++) label = label " " $i;
           printf "%s: %d passed, %d failed\n", label, $1, $2 }' "$TEST_SUMMARY"
    read -r passed failed < <(awk '{ p += $1; f += $2 } END { print p + 0, f + 0 }' "$TEST_SUMMARY")
    echo "$passed passed, $failed failed"
    [ "$failed" = 0 ] && [ "$passed" -gt 0 ]
    ;;
*)
    echo "usage: summary.sh begin | run LABEL CMD... | end" >&2
    exit 2
    ;;
esac
