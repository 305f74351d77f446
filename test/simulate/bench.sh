#!/usr/bin/env bash
# make bench-simulate: a synthetic 10,000-node snapshot and a 100,000-pod
# workload (test/simulate/gen.py) through `ai-scheduler simulate`; prints the
# wall time, CPU time and peak RSS (docs/benchmarks.md, "Simulate").
#   SIM_NODES, SIM_PODS, SIM_SEED change the size and the seed; SIM_PERF=1
#   records a perf profile (build/simulate-bench/perf.data) and prints its top.
set -euo pipefail
cd "$(dirname "$0")/../.."
nodes=${SIM_NODES:-10000} pods=${SIM_PODS:-100000} seed=${SIM_SEED:-1}
dir=build/simulate-bench
mkdir -p "$dir"
python3 test/simulate/gen.py --nodes "$nodes" --pods "$pods" --seed "$seed" --out "$dir"
bin=${SIM_BIN:-bin/ai-scheduler}
run=("$bin" simulate --snapshot "$dir/snapshot.json" --workload "$dir/workload.json" --seed "$seed" -o "$dir/out")
if [ "${SIM_PERF:-0}" = 1 ]; then
    perf record -g -o "$dir/perf.data" "${run[@]}" >"$dir/summary.txt"
    perf report -i "$dir/perf.data" --no-children 2>/dev/null | grep -E '^ +[0-9]' | head -30
else
    /usr/bin/time -f '%e s wall, %U s user, %S s sys, %M KB peak RSS' -o "$dir/time.txt" "${run[@]}" >"$dir/summary.txt"
fi
cat "$dir/summary.txt"
echo "simulate: $nodes nodes, $pods pods, seed $seed: $(cat "$dir/time.txt" 2>/dev/null || echo 'see perf above')"
