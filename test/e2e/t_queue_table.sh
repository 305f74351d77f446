#!/usr/bin/env bash
# shellcheck disable=SC2016 source-path=SCRIPTDIR
# `ai-scheduler queues` (and `kubectl queue`) against a real API server: the
# Queues of examples/queues.yaml plus a missing parent and a cycle, with
# statuses written here through the status subresource as the scheduler
# would. The tree, the numbers, -o json, --pool, and no Queue CRD at all;
# then with the scheduler writing the statuses for examples/queue-jobs.yaml.
set -uo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
export E2E_FILE=queue-table/

QUEUE_API=/apis/resource.aibee.cn/v1alpha1/queues

queues() { "$AISCHED_BIN" queues --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }

make_queue() { # make_queue NAME SPEC-JSON
    jq -cn --arg n "$1" --argjson s "$2" \
        '{apiVersion: "resource.aibee.cn/v1alpha1", kind: "Queue", metadata: {name: $n}, spec: $s}' |
        kc apply -f - >/dev/null
}

set_status() { # set_status NAME STATUS-JSON
    api_req PATCH "$QUEUE_API/$1/status" -H 'Content-Type: application/merge-patch+json' -f -o /dev/null \
        --data "{\"status\": $2}"
}

# The columns of one queue's row (names indented by depth), spaces squeezed.
row() { grep -E "^ *$1 " <<<"$2" | tr -s ' '; }

case_tree() {
    kc apply -f "$REPO/examples/queues.yaml" >/dev/null || fail "examples/queues.yaml did not apply"
    make_queue orphan '{"parentQueue": "nope"}' || fail "Queue create failed"
    make_queue loop-a '{"parentQueue": "loop-b"}' || fail "Queue create failed"
    make_queue loop-b '{"parentQueue": "loop-a", "resources": {"gpu": {"quota": 1.5}}}' || fail "Queue create failed"
    set_status team-a '{"allocated": {"gpu": 3, "cpu": 6000, "memory": 25769.803776}, "fairShare": {"gpu": 3, "cpu": 6000},
        "pending": 0, "state": "Active", "pools": [{"name": "gpu-pool", "allocated": {"gpu": 2}, "fairShare": {"gpu": 2.5}, "pending": 0}]}' ||
        fail "status patch failed"
    set_status team-b '{"allocated": {"gpu": 3}, "fairShare": {"gpu": 3}, "pending": 2, "state": "Active"}' || fail "status patch failed"
    set_status research '{"allocated": {"gpu": 6}, "fairShare": {"gpu": 6}, "pending": 2, "state": "Active"}' || fail "status patch failed"

    local out
    out=$(queues) || fail "ai-scheduler queues failed"
    echo "$out" >&2
    [ "$(head -1 <<<"$out" | tr -s ' ')" = "QUEUE PRIORITY GPU QUOTA GPU LIMIT GPU WEIGHT GPU ALLOCATED GPU FAIRSHARE CPU ALLOCATED/FAIRSHARE MEMORY ALLOCATED PENDING STATE" ] ||
        fail "header: $(head -1 <<<"$out")"
    # tree order: top level by name, children under their parent, indented
    [ "$(sed -n '2,9p' <<<"$out" | awk '{print $1}' | tr '\n' ' ')" = "default inference loop-a loop-b orphan research team-a team-b " ] ||
        fail "order: $(sed -n '2,9p' <<<"$out" | awk '{print $1}' | tr '\n' ' ')"
    grep -q '^  team-a ' <<<"$out" && grep -q '^  team-b ' <<<"$out" && grep -q '^research ' <<<"$out" || fail "not indented as a tree"
    [ "$(row default "$out")" = "default 0 - - 1 - - -/- - - Implicit" ] || fail "default: $(row default "$out")"
    [ "$(row inference "$out")" = "inference 0 4 4 4 - - -/- - - -" ] || fail "inference: $(row inference "$out")"
    [ "$(row research "$out")" = "research 0 8 - 8 6 6 -/- - 2 Active" ] || fail "research: $(row research "$out")"
    [ "$(row team-a "$out")" = " team-a 0 6 - 6 3 3 6/6 24Gi 0 Active" ] || fail "team-a: $(row team-a "$out")"
    [ "$(row team-b "$out")" = " team-b 0 2 - 2 3 3 -/- - 2 Active" ] || fail "team-b: $(row team-b "$out")"
    [ "$(row loop-b "$out")" = "loop-b 0 1.5 - 1.5 - - -/- - - Invalid" ] || fail "loop-b: $(row loop-b "$out")"
    [ "$(row orphan "$out")" = "orphan 0 - - 1 - - -/- - - Invalid" ] || fail "orphan: $(row orphan "$out")"
    grep -qx 'loop-a: spec.parentQueue cycle: loop-a -> loop-b -> loop-a' <<<"$out" || fail "no reason for loop-a"
    grep -qx 'orphan: parent queue "nope" not found' <<<"$out" || fail "no reason for orphan"

    # -o json: the API's units, the same tree
    local js
    js=$(queues -o json) || fail "-o json failed"
    jq -e 'map(.name) == ["default", "inference", "loop-a", "loop-b", "orphan", "research", "team-a", "team-b"]
        and (map(.depth) == [0, 0, 0, 0, 0, 0, 1, 1])
        and (.[6] | .parent == "research" and .allocated.cpu == 6000 and .allocated.memory == 25769.803776
             and .quota.gpu == 6 and .limit.gpu == -1 and .overQuotaWeight.gpu == 6 and .state == "Active")
        and (.[0] | .implicit and .allocated == null and .pending == null)
        and (.[2] | .state == "Invalid" and (.message | test("cycle")))' <<<"$js" >/dev/null ||
        { echo "$js" >&2; fail "-o json differs"; }
    queues -o yaml | grep -q '^- name: team-b$' || fail "-o yaml has no team-b"

    # --pool: status.pools[] of that pool; a written status without it reads 0
    out=$(queues --pool gpu-pool) || fail "--pool failed"
    echo "$out" >&2
    [ "$(row team-a "$out")" = " team-a 0 6 - 6 2 2.5 -/- - 0 Active" ] || fail "team-a in gpu-pool: $(row team-a "$out")"
    [ "$(row team-b "$out")" = " team-b 0 2 - 2 0 0 0/0 0Gi 0 Active" ] || fail "team-b in gpu-pool: $(row team-b "$out")"

    # kubectl queue: the same binary under the plugin's name
    ln -sf "$AISCHED_BIN" "$CP_WORK/kubectl-queue"
    local plug
    plug=$(PATH="$CP_WORK:$PATH" kubectl queue --kubeconfig "$ADMIN_KUBECONFIG" 2>&1) || { echo "$plug" >&2; fail "kubectl queue failed"; }
    [ "$plug" = "$(queues)" ] || fail "kubectl queue differs from ai-scheduler queues"

    # bad flags
    local rc=0
    queues -o xml >/dev/null 2>&1 || rc=$?
    [ "$rc" = 2 ] || fail "-o xml exited $rc, want 2"
    kc delete queues --all >/dev/null || true
}

# Without the CRD the command still works: only the implicit default.
case_no_crd() {
    kc delete crd queues.resource.aibee.cn >/dev/null || fail "CRD delete failed"
    wait_until '! kc get crd queues.resource.aibee.cn' 30 || fail "CRD not deleted"
    wait_until '[ "$(api_req GET "$QUEUE_API" -o /dev/null -w "%{http_code}")" = 404 ]' 30 || fail "queues still served"
    local out
    out=$(queues 2>&1) || { echo "$out" >&2; fail "ai-scheduler queues failed without the CRD"; }
    [ "$(sed -n '2,$p' <<<"$out" | awk '{print $1, $NF}')" = "default Implicit" ] || fail "without the CRD: $out"
    apply_queue_crd || fail "apply_queue_crd failed"
}

# With the scheduler: examples/queue-jobs.yaml on 12 GPUs of the default
# pool; the table shows what the scheduler wrote, and it agrees with the
# pods bound per queue (counted here from the pod list).
case_live() {
    kc apply -f "$REPO/examples/queues.yaml" >/dev/null || fail "examples/queues.yaml did not apply"
    make_node g8 32 256Gi 8 110 || fail "node create failed"
    make_node g4 16 128Gi 4 110 || fail "node create failed"
    start_scheduler
    kc apply -f "$REPO/examples/queue-jobs.yaml" >/dev/null || fail "examples/queue-jobs.yaml did not apply"
    wait_until '[ "$(count_bound)" = 8 ]' 30 || fail "$(count_bound) of 8 pods bound"
    local want
    want=$(pods_json | jq -c '[.items[] | select((.spec.nodeName // "") != "") | .metadata.labels["resource.aibee.cn/queue"]]
        | {"team-a": map(select(. == "team-a")) | length, "team-b": map(select(. == "team-b")) | length,
           inference: map(select(. == "inference")) | length} | .research = .["team-a"] + .["team-b"]')
    [ "$want" = '{"team-a":3,"team-b":3,"inference":2,"research":6}' ] || fail "bound per queue: $want"
    agree() { # agree [--pool P]: allocated.gpu of each queue = its bound pods, fair share as the policy gives
        queues -o json "$@" | jq -e --argjson w "$want" '
            map(select(.implicit | not) | {key: .name, value: {a: .allocated.gpu, f: .fairShare.gpu, p: .pending}}) | from_entries
            | . == ($w | map_values({a: ., f: ., p: 0}))' >/dev/null
    }
    wait_until 'agree' 15 || { queues >&2; fail "the table does not show the bound pods"; }
    wait_until 'agree --pool default' 15 || { queues --pool default >&2; fail "--pool default does not show them"; }
    queues >&2
    stop_scheduler_clean
    kc delete queues --all >/dev/null || true
    cp_reset
}

cp_start
run_case tree case_tree
run_case no-crd case_no_crd
run_case live case_live
finish
