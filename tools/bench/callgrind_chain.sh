#!/usr/bin/env bash
# Counts the instructions of the backward passes of every single-device case
# for every engine under valgrind's callgrind (repeatable on a noisy, shared
# machine).
#
#   tools/bench/callgrind_chain.sh [BUILD_DIR] [OUT_TSV]
#
# Env: CASES (default "chain_passthrough chain_mul"; "" for none), SIZES (default
# "100 1000 10000"; add 100000 for the long chain: slow under valgrind),
# EXTRA (further CASE:N[:PASSES] runs, default: fan 16 and 256, the MLP, the
# random DAG of 1000, reentrant backward to depth 100, the multi-device
# graphs, the per-call cases and a grad call of the chain of 1000; "" for none),
# ENGINES (default: sequential reference baseline actor torch_seq torch),
# KEEP_OUT=1 keeps the callgrind.out files (for callgrind_annotate) in callgrind/
# next to the TSV; without it each run counts in a folder of its own.
#
# The driver runs one warm-up backward uninstrumented, then ITERS backward
# passes between CALLGRIND_START/STOP_INSTRUMENTATION (--instr-atstart=no),
# so the count is the backward passes only. Output columns:
#   engine case n nodes iters instructions instructions_per_node
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build-bench}
OUT_TSV=${2:-$ROOT/bench/results/callgrind_chain.tsv}
CASES=${CASES-"chain_passthrough chain_mul"}
SIZES=${SIZES:-"100 1000 10000"}
# fan 16 and the MLP take 100 passes: with fewer, one glibc malloc_consolidate
# (~40-50k instructions every few dozen passes) moves the figure by up to 80
# instructions per node.
# pipeline:4 and branches:4 are the multi-device graphs of bench_engines on 4
# sim devices with nodes that do no work: the engines' cost on device workers.
# hops:2 deals 64 such nodes round-robin over 2 sim devices: every gradient
# crosses devices, so hops minus pipeline is the cost of a device hop.
# The per-call cases (issue "Performance floor"): a synchronous 2-node CPU
# call, a 2-node call rooted on sim:0, the CPU call through execute_async
# (actor only: the other engines skip it), one nested call.
EXTRA=${EXTRA-"fan:16:100 fan:256:10 mlp:4:100 random_dag:1000:10 reentrant:100:20 pipeline:4:100 branches:4:100 hops:2:100 chain_passthrough:1:200 sim_root:2:200 async_chain_passthrough:1:200 reentrant:1:200 grad_chain_passthrough:1000:10"}
ENGINES=${ENGINES:-"sequential reference baseline actor torch_seq torch"}
DRIVER=$BUILD/bench/bench_chain_driver
command -v valgrind >/dev/null || { echo "valgrind not installed" >&2; exit 77; }
[ -x "$DRIVER" ] || { echo "build $DRIVER first" >&2; exit 1; }
mkdir -p "$(dirname "$OUT_TSV")"
if [ "${KEEP_OUT:-0}" = 1 ]; then
  CGDIR=$(dirname "$OUT_TSV")/callgrind
  mkdir -p "$CGDIR"
else # private: runs writing their TSVs into one folder must not share it
  CGDIR=$(mktemp -d)
  trap 'rm -rf "$CGDIR"' EXIT
fi
echo -e "engine\tcase\tn\tnodes\titers\tinstructions\tinstructions_per_node" > "$OUT_TSV"
RUNS=$EXTRA
for c in $CASES; do for n in $SIZES; do RUNS="$RUNS $c:$n"; done; done
for run in $RUNS; do
  IFS=: read -r c n iters <<<"$run"
  if [ -z "$iters" ]; then
    if   [ "$n" -le 100 ];   then iters=20
    elif [ "$n" -le 1000 ];  then iters=5
    else iters=1; fi
  fi
  for e in $ENGINES; do
    f=$CGDIR/callgrind.$e.$c.$n.out
    if ! line=$(valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$f" \
                  "$DRIVER" "$e" "$c" "$n" "$iters" 2>"$f.log"); then
      echo "skip $e $c $n: $(grep -v "^==" "$f.log" | tail -n 1)" >&2
      [ "${KEEP_OUT:-0}" = 1 ] || rm -f "$f" "$f.log"
      continue
    fi
    nodes=$(echo "$line" | awk '{print $4}')
    ir=$(awk '/^totals:/ {print $2; exit} /^summary:/ {s=$2} END {if (s) print s}' "$f" | head -1)
    per=$(awk -v ir="$ir" -v it="$iters" -v nd="$nodes" 'BEGIN {printf "%.1f", ir / it / nd}')
    echo -e "$e\t$c\t$n\t$nodes\t$iters\t$ir\t$per" | tee -a "$OUT_TSV"
    [ "${KEEP_OUT:-0}" = 1 ] || rm -f "$f" "$f.log"
  done
done
