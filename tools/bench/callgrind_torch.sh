#!/usr/bin/env bash
# The torch bridge's engine instructions per node, stock libtorch engine vs
# the actor engine, under valgrind's callgrind (bench/HISTORY.md, "Torch
# bridge").
#
#   tools/bench/callgrind_torch.sh [BUILD_DIR] [OUT_TSV]
#
# Env: RUNS (CASE:N:ITERS, default below), ENGINES (default "torch
# torch_actor"; torch_actor needs a build with the bridge), KEEP_OUT=1 keeps
# the callgrind.out files.
#
# tools/bench/callgrind_chain.sh runs the cases (bench_chain_driver: one
# intra-op thread, a warm-up backward, then ITERS backward passes between
# CALLGRIND_START/STOP_INSTRUMENTATION); tools/bench/callgrind_apply.py then
# sums the inclusive cost of every call into a libtorch node's apply (the
# nodes' own work); the rest is the engine's:
#   engine_per_node = (total - apply_inclusive) / ITERS / nodes
# Columns: engine case n nodes iters total apply_inclusive apply_calls
#          instructions_per_node engine_per_node
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
OUT_TSV=${2:-$ROOT/bench/results/callgrind_torch.tsv}
RUNS=${RUNS-"chain_passthrough:1000:5 chain_mul:1000:5 fan:1000:3 mlp:4:20 transformer:1:5"}
CHAIN_TSV=${OUT_TSV%.tsv}.chain.tsv
CASES="" EXTRA="$RUNS" ENGINES="${ENGINES:-torch torch_actor}" KEEP_OUT=1 \
  "$ROOT/tools/bench/callgrind_chain.sh" "$BUILD" "$CHAIN_TSV" >/dev/null
CGDIR=$(dirname "$CHAIN_TSV")/callgrind
echo -e "engine\tcase\tn\tnodes\titers\ttotal\tapply_inclusive\tapply_calls\tinstructions_per_node\tengine_per_node" > "$OUT_TSV"
tail -n +2 "$CHAIN_TSV" | while IFS=$'\t' read -r e c n nodes iters total _; do
  f=$CGDIR/callgrind.$e.$c.$n.out
  read -r _ apply calls < <(python3 "$ROOT/tools/bench/callgrind_apply.py" "$f")
  awk -v e="$e" -v c="$c" -v n="$n" -v nd="$nodes" -v it="$iters" -v t="$total" -v a="$apply" -v k="$calls" \
    'BEGIN {printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\n", e, c, n, nd, it, t, a, k, t/it/nd, (t-a)/it/nd}' \
    | tee -a "$OUT_TSV"
  [ "${KEEP_OUT:-0}" = 1 ] || rm -f "$f" "$f.log"
done
rm -f "$CHAIN_TSV"
