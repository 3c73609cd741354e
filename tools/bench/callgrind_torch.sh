#!/usr/bin/env bash
# The torch bridge's engine instructions per node, stock libtorch engine vs
# the actor engine, under valgrind's callgrind (bench/RESULTS.md, "Torch
# bridge").
#
#   tools/bench/callgrind_torch.sh [BUILD_DIR] [OUT_TSV]
#
# Env: RUNS (CASE:N:ITERS, default below), ENGINES (default "torch
# torch_actor"; torch_actor needs a build with actorgrad_torch),
# KEEP_OUT=1 keeps the callgrind.out files.
#
# bench_chain_driver (one intra-op thread) runs one warm-up backward, then
# ITERS backward passes between CALLGRIND_START/STOP_INSTRUMENTATION.
# tools/bench/callgrind_apply.py sums the inclusive cost of every call into
# a node's apply (the nodes' own work); the rest is the engine's:
#   engine_per_node = (total - apply_inclusive) / ITERS / nodes
# Columns: engine case n nodes iters total apply_inclusive apply_calls
#          instructions_per_node engine_per_node
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
OUT_TSV=${2:-$ROOT/bench/results/callgrind_torch.tsv}
RUNS=${RUNS-"chain_passthrough:1000:5 chain_mul:1000:5 fan:1000:3 mlp:4:20 transformer:1:5"}
ENGINES=${ENGINES:-"torch torch_actor"}
DRIVER=$BUILD/bench/bench_chain_driver
command -v valgrind >/dev/null || { echo "valgrind not installed" >&2; exit 77; }
[ -x "$DRIVER" ] || { echo "build $DRIVER first" >&2; exit 1; }
CGDIR=$(dirname "$OUT_TSV")/callgrind
mkdir -p "$CGDIR"
echo -e "engine\tcase\tn\tnodes\titers\ttotal\tapply_inclusive\tapply_calls\tinstructions_per_node\tengine_per_node" > "$OUT_TSV"
for run in $RUNS; do
  IFS=: read -r c n iters <<<"$run"
  for e in $ENGINES; do
    f=$CGDIR/callgrind.$e.$c.$n.out
    if ! line=$(valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$f" \
                  "$DRIVER" "$e" "$c" "$n" "$iters" 2>"$f.log"); then
      echo "skip $e $c $n: $(grep -v "^==" "$f.log" | tail -n 1)" >&2
      continue
    fi
    nodes=$(echo "$line" | awk '{print $4}')
    read -r total apply calls < <(python3 "$ROOT/tools/bench/callgrind_apply.py" "$f")
    awk -v e="$e" -v c="$c" -v n="$n" -v nd="$nodes" -v it="$iters" -v t="$total" -v a="$apply" -v k="$calls" \
      'BEGIN {printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\n", e, c, n, nd, it, t, a, k, t/it/nd, (t-a)/it/nd}' \
      | tee -a "$OUT_TSV"
    [ "${KEEP_OUT:-0}" = 1 ] || rm -f "$f" "$f.log"
  done
done
