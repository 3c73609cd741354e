#!/usr/bin/env bash
# Runs the engine benchmark suite and writes bench/RESULTS.md and the plots.
#
#   tools/bench/run_benchmarks.sh [BUILD_DIR]
#
# Steps: build bench_engines, bench_chain_driver and bench_chain_memory
# (Release); callgrind
# instruction counts of the chain cases and of reentrant backward to depth
# 100 (tools/bench/callgrind_chain.sh; its EXTRA runs), and where the
# per-call and hop instructions go (tools/bench/callgrind_breakdown.py); with the torch
# bridge built, its engine instructions per node (tools/bench/callgrind_torch.sh);
# peak memory of one backward of the chains of 10^5 and 10^6 per engine (the
# resident set and the heap's live bytes, bench_chain_memory); the Google
# Benchmark suite (JSON); then tools/bench/make_results.py, which keeps the
# hand-recorded "## Further measurements" tail of bench/RESULTS.md.
# Env: SKIP_BUILD=1, SKIP_CALLGRIND=1, BENCH_FILTER (a --benchmark_filter
# regex), JOBS (build parallelism, default 2), BREAKDOWN_BUILD (see below).
# Before/after: BEFORE_BUILD names a Release build of an earlier tree made
# with this tree's bench/ files (BEFORE_LABEL names it, e.g. its commit).
# Every stage then measures that build too, into bench/results/before/,
# right after this one (callgrind counts of both run side by side, one
# per core: they do not depend on load); make_results.py adds the
# before/after tables and the issue-20 targets.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build-bench}
RES=$ROOT/bench/results
AFTER_LABEL=$(git -C "$ROOT" rev-parse --short HEAD) # the tree measured, before any commit made meanwhile
mkdir -p "$RES"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD" -j"${JOBS:-2}" --target bench_engines bench_chain_driver bench_chain_memory
fi
ENGINES="sequential reference baseline actor"
if "$BUILD/bench/bench_chain_driver" torch_seq chain_passthrough 10 1 >/dev/null 2>&1; then
  ENGINES="$ENGINES torch_seq torch"
fi

# The trees to measure: "BUILD RESULTS_DIR ENGINES" each. The earlier tree
# is measured on actorgrad's own engines only (libtorch's are the same).
TREES=("$BUILD|$RES|$ENGINES")
if [ -n "${BEFORE_BUILD:-}" ]; then
  mkdir -p "$RES/before"
  TREES+=("$BEFORE_BUILD|$RES/before|sequential reference baseline actor")
fi

if [ "${SKIP_CALLGRIND:-0}" != 1 ]; then
  pids=()
  for t in "${TREES[@]}"; do
    IFS='|' read -r b r e <<<"$t"
    ENGINES="$e" "$ROOT/tools/bench/callgrind_chain.sh" "$b" "$r/callgrind_chain.tsv" > "$r/callgrind_chain.log" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done # a failed count stops the run (set -e)
  # Where the per-call and hop targets' instructions go, by component
  # (BREAKDOWN_BUILD: a build of this tree with debug info, which names the
  # files of inlined code too).
  python3 "$ROOT/tools/bench/callgrind_breakdown.py" "${BREAKDOWN_BUILD:-$BUILD}" "$RES/callgrind_breakdown.tsv"
  if "$BUILD/bench/bench_chain_driver" torch_actor chain_passthrough 10 1 >/dev/null 2>&1; then
    "$ROOT/tools/bench/callgrind_torch.sh" "$BUILD" "$RES/callgrind_torch.tsv" > "$RES/callgrind_torch.log"
  fi
fi

# Peak memory: one backward of the chains of 10^5 and 10^6 in a fresh process
# per engine (about 1 GB for 10^6): the resident set, and the heap's live
# bytes (Note [Counting the heap, not the resident set] in
# bench/common/heap_counter.h).
for t in "${TREES[@]}"; do
  IFS='|' read -r b r e <<<"$t"
  echo -e "engine\tcase\tn\tnodes\tpeak_rss_start_bytes\tpeak_rss_graph_bytes\tpeak_rss_after_backward_bytes\theap_live_graph_bytes\theap_peak_backward_bytes" > "$r/memory.tsv"
  for n in 100000 1000000; do
    for eng in $e; do
      "$b/bench/bench_chain_memory" "$eng" chain_passthrough $n --mem |
        awk -v OFS='\t' '{print $1, $2, $3, $4, $9, $7, $8, $10, $11}' >> "$r/memory.tsv"
    done
  done
done

for t in "${TREES[@]}"; do
  IFS='|' read -r b r e <<<"$t"
  "$b/bench/bench_engines" --benchmark_out="$r/bench_engines.json" --benchmark_out_format=json \
    ${BENCH_FILTER:+--benchmark_filter="$BENCH_FILTER"} | tee "$r/bench_engines.txt"
done

CMD="tools/bench/run_benchmarks.sh $*"
[ -n "${BEFORE_BUILD:-}" ] && CMD="BEFORE_BUILD=$BEFORE_BUILD BEFORE_LABEL=${BEFORE_LABEL:-before} $CMD"
[ -n "${BREAKDOWN_BUILD:-}" ] && CMD="BREAKDOWN_BUILD=$BREAKDOWN_BUILD $CMD"
python3 "$ROOT/tools/bench/make_results.py" --results "$RES" --out "$ROOT/bench/RESULTS.md" \
  --command "$CMD" ${BEFORE_BUILD:+--before "$RES/before" --before-label "${BEFORE_LABEL:-before}"} \
  --after-label "$AFTER_LABEL"
