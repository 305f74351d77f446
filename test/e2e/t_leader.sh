#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2119 source-path=SCRIPTDIR
# Leader election: two replicas with short lease timings. kill -9 of the leader
# mid-run (the follower takes over within lease duration + a little, every pod
# ends bound once, no node over allocatable); SIGTERM of the leader releases
# the Lease (takeover in < 3 s); a follower never binds while the leader lives.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=leader/

LEASE_NS=$CHART_NS  # the chart's Role grants this Lease only
LEASE_NAME=ai-scheduler
LEASE_DURATION=4

# le_start NAME: a scheduler replica with leader election on. Its log is
# $CP_WORK/scheduler.le-NAME.log (so sched_log_clean covers it), its pid
# $CP_WORK/le-NAME.pid, its exit code $CP_WORK/le-NAME.rc.
le_start() {
    local name=$1 bin=$AISCHED_BIN
    local logf=$CP_WORK/scheduler.le-$name.log pidf=$CP_WORK/le-$name.pid rcf=$CP_WORK/le-$name.rc
    [ -x "$bin" ] || fail "scheduler binary not found: $bin"
    rm -f "$pidf" "$rcf"
    local -a wrap=()
    # shellcheck disable=SC2206
    [ -n "${AISCHED_WRAP:-}" ] && wrap=($AISCHED_WRAP)
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=0:second_deadlock_stack=1} \
    LOGF=$logf PIDF=$pidf RCF=$rcf \
    bash -c '"$@" >"$LOGF" 2>&1 & echo $! >"$PIDF.tmp"; mv "$PIDF.tmp" "$PIDF"; wait $!; echo $? >"$RCF"' _ \
        "${wrap[@]}" "$bin" --kubeconfig "$SCHED_KUBECONFIG" --scheduler-name "$SCHED_NAME" \
        --leader-elect=true \
        --leader-elect-lease-duration ${LEASE_DURATION}s \
        --leader-elect-renew-deadline 3s \
        --leader-elect-retry-period 1s \
        --leader-elect-resource-namespace "$LEASE_NS" \
        --leader-elect-resource-name "$LEASE_NAME" \
        --metrics-port 0 -v 4 >/dev/null 2>&1 &
    _pid_record $! "le-$name-wrapper"
    local i
    for ((i = 0; i < 50; i++)); do [ -s "$pidf" ] && break; sleep 0.1; done
    [ -s "$pidf" ] || fail "replica $name did not start"
    _pid_record "$(cat "$pidf")" "le-$name"
    ln -sfn "scheduler.le-$name.log" "$CP_WORK/scheduler.log"
    log "replica $name started: pid $(cat "$pidf"), log $logf"
}

le_pid() { cat "$CP_WORK/le-$1.pid"; }
le_log() { echo "$CP_WORK/scheduler.le-$1.log"; }
le_alive() { [ ! -e "$CP_WORK/le-$1.rc" ] && kill -0 "$(le_pid "$1")" 2>/dev/null; }

# holder_name: A/B/C whose pid the Lease holder identity names.
holder_name() {
    local p n
    p=$(lease_holder_pid) || return 1
    for n in A B C; do
        [ -s "$CP_WORK/le-$n.pid" ] && [ "$p" = "$(le_pid "$n")" ] && { echo "$n"; return 0; }
    done
    return 1
}

# log_before_leading NAME: the replica's log up to its "leading" line.
log_before_leading() { sed '/leader election: leading/q' "$(le_log "$1")"; }

# assert_follower_quiet NAME: waited for the lease, bound nothing before leading.
assert_follower_quiet() {
    local pre
    pre=$(log_before_leading "$1")
    grep -q 'waiting for lease' <<<"$pre" || fail "replica $1 never logged 'waiting for lease'"
    if grep -qE '(^|[^a-z_])bound pod=|bind pod=' <<<"$pre"; then
        grep -E '(^|[^a-z_])bound pod=|bind pod=' <<<"$pre" | head -5 >&2
        fail "replica $1 bound pods before it led"
    fi
}

ms() { date +%s%3N; }
# tod_ms: now, as milliseconds since local midnight (the logs' clock).
tod_ms() { date +%H:%M:%S.%N | awk -F'[:.]' '{printf "%d\n", (($1*60+$2)*60+$3)*1000 + substr($4,1,3)}'; }
# log_ms NAME REGEX: time of the replica's first log line matching REGEX (ms since midnight).
log_ms() {
    grep -m1 -E "$2" "$(le_log "$1")" | awk '{split($2, t, /[:.]/); printf "%d\n", ((t[1]*60+t[2])*60+t[3])*1000 + substr(t[4],1,3)}'
}
# elapsed_ms FROM TO (ms since midnight; wraps at midnight)
elapsed_ms() { local d=$(( $2 - $1 )); [ "$d" -lt -43200000 ] && d=$((d + 86400000)); echo "$d"; }

case_kill_leader() {
    cp_reset
    kc delete lease "$LEASE_NAME" -n "$LEASE_NS" >/dev/null 2>&1 || true
    # 3 x 10 cpu, 300 pods of 100m: exactly full, any double count shows
    make_node n1 10 64Gi 0 110
    make_node n2 10 64Gi 0 110
    make_node n3 10 64Gi 0 110
    le_start A
    sleep 0.5
    le_start B
    wait_until 'holder_name' 30 || fail "no replica took the lease (holder '$(lease_holder)')"
    local leader follower
    leader=$(holder_name)
    follower=$([ "$leader" = A ] && echo B || echo A)
    log "leader $leader (pid $(le_pid "$leader")), follower $follower"
    wait_until 'grep -q "caches synced" "$(le_log '"$leader"')"' 30 || fail "leader never synced"
    wait_until 'grep -q "waiting for lease" "$(le_log '"$follower"')"' 30 || fail "follower not waiting"
    sleep 2
    assert_follower_quiet "$follower"
    grep -q 'leader election: leading' "$(le_log "$follower")" && fail "follower claims to lead while the leader lives"

    # submit 300 pods in the background; kill the leader once some are bound
    make_pods p 300 --cpu 100m --mem 64Mi &
    local mkpid=$!
    wait_until '[ "$(bound_in_ns)" -ge 30 ]' 60 0.1 || fail "leader bound nothing"
    local before t0 took
    before=$(bound_in_ns)
    t0=$(tod_ms)
    kill -KILL "$(le_pid "$leader")"
    log "killed leader $leader with $before pods bound"
    wait_until 'grep -q "leader election: leading" "$(le_log '"$follower"')"' $((LEASE_DURATION + 15)) 0.2 ||
        fail "follower never logged leading (holder '$(lease_holder)')"
    took=$(elapsed_ms "$t0" "$(log_ms "$follower" 'leader election: leading')")
    log "follower $follower leads ${took} ms after the kill"
    [ "$took" -le $(( (LEASE_DURATION + 3) * 1000 )) ] || fail "takeover took ${took} ms (lease ${LEASE_DURATION}s)"
    wait_until '[ "$(holder_name)" = '"$follower"' ]' 10 0.2 || fail "lease holder is '$(lease_holder)', want $follower"
    wait "$mkpid" || fail "creating pods failed"
    le_alive "$follower" || fail "follower died"

    wait_until '[ "$(count_unbound)" = 0 ]' 90 || fail "$(count_unbound) pods still unbound"
    [ "$(count_bound)" = 300 ] || fail "want 300 bound pods, have $(count_bound)"
    assert_no_overcommit
    # every pod exactly one nodeName (trivially, but also: no binding conflicts logged as errors)
    local dup
    dup=$(pods_json | jq -r '[.items[] | .metadata.name] | group_by(.) | map(select(length > 1)) | length')
    [ "$dup" = 0 ] || fail "duplicate pod names?"
    assert_follower_quiet "$follower"
    # the killed leader did bind pods (the log at -v 4 has "bound" lines)
    grep -q 'bound pod=' "$(le_log "$leader")" || fail "killed leader has no 'bound' lines: is -v 4 logging binds?"
    local nb
    nb=$(sed '1,/leader election: leading/d' "$(le_log "$follower")" | grep -c 'bound pod=' || true)
    log "new leader bound $nb pods; $(grep -c 'bound pod=' "$(le_log "$leader")") by the killed one"
    # Scheduled events (best effort, events can be dropped): none twice for one pod
    local twice
    twice=$(kc get events -n default -o json --field-selector reason=Scheduled |
        jq -r '[.items[] | select((.count // 1) > 1 or (.series.count // 1) > 1) | .involvedObject.name] + ([.items[] | .involvedObject.name] | group_by(.) | map(select(length > 1)) | map(.[0])) | unique | join(" ")')
    [ -z "$twice" ] || fail "pods with more than one Scheduled event: $twice"
    echo "$follower" >"$CP_WORK/current-leader"
}

case_sigterm_release() {
    local leader follower=C
    leader=$(cat "$CP_WORK/current-leader" 2>/dev/null) || fail "previous case left no leader"
    le_alive "$leader" || fail "leader $leader is not running"
    [ "$(holder_name)" = "$leader" ] || fail "lease holder '$(lease_holder)' is not $leader"
    le_start C
    wait_until 'grep -q "waiting for lease" "$(le_log C)"' 30 || fail "C not waiting for the lease"
    make_pods q 10 --mem 1Mi
    sleep 3
    assert_follower_quiet C
    grep -q 'leader election: leading' "$(le_log C)" && fail "C claims to lead while $leader lives"
    local t0 took rc rel
    t0=$(tod_ms)
    kill -TERM "$(le_pid "$leader")"
    wait_until 'grep -q "leader election: leading" "$(le_log C)"' 15 0.1 || fail "C did not take over (holder '$(lease_holder)')"
    took=$(elapsed_ms "$t0" "$(log_ms C 'leader election: leading')")
    wait_until 'grep -q "released lease" "$(le_log '"$leader"')"' 15 || fail "$leader did not log 'released lease'"
    rel=$(elapsed_ms "$t0" "$(log_ms "$leader" 'released lease')")
    log "C leads ${took} ms after SIGTERM of $leader (which released the lease after ${rel} ms)"
    [ "$(holder_name)" = C ] || fail "lease holder is '$(lease_holder)', want C"
    [ "$took" -lt 3000 ] || fail "takeover after SIGTERM took ${took} ms (want < 3000; $leader released the lease after ${rel} ms)"
    wait_until '[ -s "$CP_WORK/le-'"$leader"'.rc" ]' 20 || fail "$leader did not exit on SIGTERM"
    rc=$(cat "$CP_WORK/le-$leader.rc")
    [ "$rc" = 0 ] || fail "$leader exited $rc on SIGTERM (want 0)"
    grep -q 'released lease' "$(le_log "$leader")" || fail "$leader did not log 'released lease'"
    # C schedules
    make_pods r 10 --mem 1Mi
    wait_until '[ "$(count_unbound)" = 0 ]' 60 || fail "$(count_unbound) pods unbound after C took over"
    assert_no_overcommit
    assert_follower_quiet C
    kill -TERM "$(le_pid C)"
    wait_until '[ -s "$CP_WORK/le-C.rc" ]' 20 || fail "C did not exit on SIGTERM"
    [ "$(cat "$CP_WORK/le-C.rc")" = 0 ] || fail "C exited $(cat "$CP_WORK/le-C.rc") on SIGTERM"
    # released: holder identity cleared
    local h
    h=$(lease_holder)
    [ -z "$h" ] || log "note: lease holder after C's release is '$h'"
    sched_log_clean || fail "sanitizer reports in the replicas' logs"
}

cp_start
run_case kill-leader case_kill_leader
run_case sigterm-release case_sigterm_release
finish
