#!/usr/bin/env bash
# Runs the engine benchmark suite and writes bench/RESULTS.md and the plots.
#
#   tools/bench/run_benchmarks.sh [BUILD_DIR]
#
# Steps: build bench_engines and bench_chain_driver (Release); callgrind
# instruction counts of the chain cases and of reentrant backward to depth
# 100 (tools/bench/callgrind_chain.sh; its EXTRA runs);
# peak memory of one backward of the chains of 10^5 and 10^6 per engine; the Google
# Benchmark suite (JSON); then tools/bench/make_results.py, which keeps the
# hand-recorded "## Further measurements" tail of bench/RESULTS.md.
# Env: SKIP_BUILD=1, SKIP_CALLGRIND=1, BENCH_FILTER (a --benchmark_filter
# regex), JOBS (build parallelism, default 2).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build-bench}
RES=$ROOT/bench/results
mkdir -p "$RES"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD" -j"${JOBS:-2}" --target bench_engines bench_chain_driver
fi
ENGINES="sequential reference baseline actor"
if "$BUILD/bench/bench_chain_driver" torch_seq chain_passthrough 10 1 >/dev/null 2>&1; then
  ENGINES="$ENGINES torch_seq torch"
fi

if [ "${SKIP_CALLGRIND:-0}" != 1 ]; then
  ENGINES="$ENGINES" "$ROOT/tools/bench/callgrind_chain.sh" "$BUILD" "$RES/callgrind_chain.tsv"
fi

# Peak memory: one backward of the chains of 10^5 and 10^6 in a fresh process
# per engine (about 1 GB for 10^6).
echo -e "engine\tcase\tn\tnodes\tpeak_rss_start_bytes\tpeak_rss_graph_bytes\tpeak_rss_after_backward_bytes" > "$RES/memory.tsv"
for n in 100000 1000000; do
  for e in $ENGINES; do
    "$BUILD/bench/bench_chain_driver" "$e" chain_passthrough $n --mem |
      awk -v OFS='\t' '{print $1, $2, $3, $4, $9, $7, $8}' >> "$RES/memory.tsv"
  done
done

"$BUILD/bench/bench_engines" --benchmark_out="$RES/bench_engines.json" --benchmark_out_format=json \
  ${BENCH_FILTER:+--benchmark_filter="$BENCH_FILTER"} | tee "$RES/bench_engines.txt"

CMD="tools/bench/run_benchmarks.sh $*"
python3 "$ROOT/tools/bench/make_results.py" --results "$RES" --out "$ROOT/bench/RESULTS.md" \
  --command "$CMD"
