#!/usr/bin/env bash
# End-to-end suite: each test/e2e/t_*.sh against a fresh etcd + kube-apiserver
# v1.20 on 127.0.0.1 (see lib.sh).
#
#   bash test/e2e/run.sh            # everything
#   bash test/e2e/run.sh basic      # only files whose name contains "basic"
#
# Binaries: the core files use the ASan build (build-asan/bin/ai-scheduler)
# when present, else bin/ai-scheduler; t_concurrency.sh uses the TSan build
# when present (so do t_pools_concurrent.sh and t_leader.sh); t_valgrind.sh runs bin/ai-scheduler under valgrind
# (and t_chaos.sh's soak case runs bin/ai-scheduler too: ASan's quarantine would hide an RSS trend). Setting
# AISCHED_BIN forces one binary everywhere (valgrind still wraps t_valgrind).
# Ends with "e2e: N passed, M failed"; non-zero exit on any failure.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
cd "$REPO" || exit 1
FILE_TIMEOUT=${E2E_FILE_TIMEOUT:-900}

say() { echo "e2e: $*" >&2; }

bash test/deps.sh e2e || { say "dependencies missing"; echo "e2e: 0 passed, 1 failed"; exit 1; }
if ! K8S_BIN=$(bash test/e2e/build-k8s.sh); then
    say "could not build kube-apiserver"; echo "e2e: 0 passed, 1 failed"; exit 1
fi
export K8S_BIN

pick() { # first executable among the arguments
    local b
    for b; do [ -x "$b" ] && { echo "$b"; return; }; done
    echo "$REPO/bin/ai-scheduler"
}
PLAIN=$REPO/bin/ai-scheduler
CORE_BIN=${AISCHED_BIN:-$(pick "$REPO/build-asan/bin/ai-scheduler" "$PLAIN")}
TSAN_BIN=${AISCHED_BIN:-$(pick "$REPO/build-tsan/bin/ai-scheduler" "$PLAIN")}
VG_BIN=${AISCHED_BIN:-$PLAIN}
# somalloc: valgrind takes over jemalloc's malloc and free too (the plain build links it).
VG_WRAP="valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite --quiet --soname-synonyms=somalloc=libjemalloc.so*"
[ -x "$CORE_BIN" ] || say "WARNING: no scheduler binary yet ($CORE_BIN): the cases will fail"

RESULTS=$(mktemp "${TMPDIR:-/tmp}/ai-sched-e2e.XXXXXX")
CHILD=""
cleanup() {
    # each t_*.sh stops its own processes (EXIT trap); make sure of it on ^C
    if [ -n "$CHILD" ] && kill -0 "$CHILD" 2>/dev/null; then
        kill -TERM "$CHILD" 2>/dev/null; wait "$CHILD" 2>/dev/null
    fi
    rm -f "$RESULTS"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

run_file() { # run_file FILE BIN [WRAP]
    local f=$1 bin=$2 wrap=${3:-} name rc before after
    name=$(basename "$f" .sh)
    say "---- $name (scheduler: ${wrap:+$wrap }$bin)"
    before=$(wc -l <"$RESULTS")
    AISCHED_BIN=$bin AISCHED_WRAP=$wrap E2E_RESULTS=$RESULTS \
        timeout -k 30 "$FILE_TIMEOUT" bash "$f" &
    CHILD=$!
    wait "$CHILD"; rc=$?
    CHILD=""
    after=$(wc -l <"$RESULTS")
    if [ "$rc" != 0 ] && ! tail -n +"$((before + 1))" "$RESULTS" | grep -q '^FAIL'; then
        # crashed or timed out outside a case
        local why="exit $rc"
        [ "$rc" = 124 ] && why="timed out after ${FILE_TIMEOUT}s"
        echo "FAIL $name ($why)" | tee -a "$RESULTS"
    elif [ "$after" = "$before" ]; then
        echo "FAIL $name (no case ran)" | tee -a "$RESULTS"
    fi
}

filter=${1:-}
for f in test/e2e/t_*.sh; do
    case $f in *"$filter"*) ;; *) continue ;; esac
    case $(basename "$f") in
        t_concurrency.sh|t_pools_concurrent.sh|t_leader.sh) run_file "$f" "$TSAN_BIN" ;;
        t_valgrind.sh)
            if command -v valgrind >/dev/null; then
                run_file "$f" "$VG_BIN" "$VG_WRAP"
            else
                echo "FAIL t_valgrind (valgrind not installed)" | tee -a "$RESULTS"
            fi ;;
        *) run_file "$f" "$CORE_BIN" ;;
    esac
done

echo "---- e2e results"
cat "$RESULTS"
passed=$(grep -c '^PASS' "$RESULTS")
failed=$(grep -c '^FAIL' "$RESULTS")
echo "e2e: $passed passed, $failed failed"
# make test adds up every part (test/summary.sh).
if [ -n "${TEST_SUMMARY:-}" ]; then echo "$passed $failed e2e cases" >>"$TEST_SUMMARY"; fi
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
