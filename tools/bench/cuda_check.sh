#!/usr/bin/env bash
# The checks that need a GPU, on a machine that has one: the CUDA tests,
# compute-sanitizer over them (memcheck with leak check on each; racecheck,
# synccheck and initcheck on the kernels' test) and bench_cuda.
#
#   tools/bench/cuda_check.sh [BUILD_DIR] [OUT_DIR]
#
# BUILD_DIR is a build with the CUDA backend and the benchmarks (or a copy of
# its tests/cuda_test_cuda_*, bench/bench_cuda and lib/libactorgrad_cuda.so,
# for a GPU machine without this project's build dependencies: then put the
# shared libraries they need, such as libcaf_core, in BUILD_DIR/runtime-libs).
# Writes env.log, tests.log, memcheck.log, checks.log, bench_cuda.log and
# bench_cuda.json to OUT_DIR (default BUILD_DIR/cuda-check). Exits 77 when no
# GPU is seen, else non-zero when a test or a sanitizer failed.
set -uo pipefail
BUILD=$(cd "${1:-build}" && pwd)
OUT=${2:-$BUILD/cuda-check}
mkdir -p "$OUT"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PATH=$PATH:$CUDA_HOME/bin
export LD_LIBRARY_PATH=$BUILD/runtime-libs:$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# A copied build tree has no RUNPATH to its plugin: name it.
export ACTORGRAD_CUDA_PLUGIN=$BUILD/lib/libactorgrad_cuda.so
tests=(ops mlp stream_tracks concurrent)
failed=0

{
  date -u +%FT%TZ
  nvidia-smi -L && nvidia-smi --query-gpu=driver_version --format=csv,noheader
  grep PRETTY_NAME /etc/os-release
  echo "cores: $(nproc)"
  ldd "$BUILD/lib/libactorgrad_cuda.so" "$BUILD/tests/cuda_test_cuda_ops" | grep "not found"
} > "$OUT/env.log" 2>&1
cat "$OUT/env.log"

# LABEL NAME [SANITIZER ARGS...]: runs one CUDA test (under the sanitizer
# when given) between a "== LABEL" line and an "rc=STATUS" line; returns
# its status.
run_test() {
  local label=$1 name=$2
  shift 2
  echo "== $label"
  "$@" "$BUILD/tests/cuda_test_cuda_$name" --report_level=short --color_output=false 2>&1 | tail -40
  local rc=${PIPESTATUS[0]}
  echo "rc=$rc"
  return "$rc"
}

for t in "${tests[@]}"; do
  run_test "cuda_test_cuda_$t" "$t" || { [ $? -eq 77 ] && exit 77; }
done 2>&1 | tee "$OUT/tests.log"
[ "${PIPESTATUS[0]}" -eq 77 ] && exit 77
grep -q "^rc=[1-9]" "$OUT/tests.log" && failed=1

sanitizer=$(command -v compute-sanitizer) || {
  echo "compute-sanitizer not found: the sanitizer runs are left out" | tee "$OUT/memcheck.log"
  sanitizer=
}
[ -n "$sanitizer" ] && for t in "${tests[@]}"; do
  run_test "memcheck cuda_test_cuda_$t" "$t" "$sanitizer" --tool memcheck --leak-check full \
    --error-exitcode 9
done 2>&1 | tee "$OUT/memcheck.log"
[ -n "$sanitizer" ] && for tool in racecheck synccheck initcheck; do
  run_test "$tool cuda_test_cuda_ops" ops "$sanitizer" --tool "$tool" --error-exitcode 9
done 2>&1 | tee "$OUT/checks.log"
grep -qs "^rc=[1-9]" "$OUT"/memcheck.log "$OUT"/checks.log && failed=1

"$BUILD/bench/bench_cuda" --benchmark_repetitions=3 \
  --benchmark_out="$OUT/bench_cuda.json" --benchmark_out_format=json 2>&1 | tee "$OUT/bench_cuda.log"
[ "${PIPESTATUS[0]}" -ne 0 ] && failed=1
exit $failed
