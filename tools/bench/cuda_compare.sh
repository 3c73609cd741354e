#!/usr/bin/env bash
# bench_cuda of two builds alternated on one GPU machine, with each build's
# recorded summary (bench_cuda --summary) between the timed rounds: the
# side-by-side comparison that lent machines need, since each lease is a
# fresh machine whose figures differ from the last one's.
#
#   tools/bench/cuda_compare.sh BEFORE_DIR AFTER_DIR OUT_DIR [ROUNDS] [FILTER] [REPETITIONS]
#
# Each DIR is laid out as cuda_check.sh's BUILD_DIR (bench/bench_cuda and
# lib/libactorgrad_cuda.so; shared libraries in AFTER_DIR/runtime-libs serve
# both). Per round r and build b (before, after): OUT_DIR/summary_b_r.log
# and bench_b_r.json (--benchmark_filter=FILTER, default all cases;
# REPETITIONS, default 3); ROUNDS defaults to 2. Prints each JSON's table
# (cuda_table.py). Exits 77 without a GPU.
set -uo pipefail
[ $# -ge 3 ] || { sed -n 2,15p "$0"; exit 2; }
declare -A dir=([before]=$(cd "$1" && pwd) [after]=$(cd "$2" && pwd))
OUT=$3 ROUNDS=${4:-2} FILTER=${5:-.} REPS=${6:-3}
mkdir -p "$OUT"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export LD_LIBRARY_PATH=${dir[after]}/runtime-libs:$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
here=$(dirname "$0")
for ((r = 1; r <= ROUNDS; ++r)); do
  for b in before after; do
    export ACTORGRAD_CUDA_PLUGIN=${dir[$b]}/lib/libactorgrad_cuda.so
    "${dir[$b]}/bench/bench_cuda" --summary --benchmark_filter=NONE > "$OUT/summary_${b}_$r.log" 2>&1
    rc=$?
    [ $rc -eq 77 ] && { echo "no CUDA device: skipped"; exit 77; }
    "${dir[$b]}/bench/bench_cuda" --benchmark_filter="$FILTER" --benchmark_repetitions="$REPS" \
      --benchmark_out="$OUT/bench_${b}_$r.json" --benchmark_out_format=json > "$OUT/bench_${b}_$r.log" 2>&1
    echo "round $r, $b: summary rc=$rc, bench rc=$?"
  done
done
for ((r = 1; r <= ROUNDS; ++r)); do
  for b in before after; do
    echo "## round $r, $b"
    python3 "$here/cuda_table.py" "$OUT/bench_${b}_$r.json"
  done
done
