#!/usr/bin/env bash
# Builds the actor-engine tests that stress concurrency, reentrancy, faults,
# recording (stream tracks included), pooled async calls, CPU nodes spread
# over several workers (actors_test_parallel_cpu), sim streams, the
# input buffers' per-thread recycled lists and the storage a thread keeps
# for its next calls (freed when it ends: LeakSanitizer checks)
# with ASan + UBSan (build-asan/) and runs them: any leak (LeakSanitizer),
# memory error or undefined behaviour fails. Part of the
# README's test command (tools/test.sh). TSan needs a CAF built with it
# (Debian's is not instrumented): tools/tsan.sh builds one and runs TSan.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo_root/${ASAN_BUILD_DIR:-build-asan}"
targets=(actors_test_concurrency actors_test_reentrant actors_test_faults actors_test_thread_exit
         actors_test_recorder actors_test_recording_window actors_test_stream_tracks
         actors_test_engine_calls actors_test_parallel_cpu
         semantics_test_backward_semantics semantics_test_hook_results
         semantics_test_hook_handles streams_test_sim_streams
         streams_test_input_buffer_streams streams_test_engine_streams streams_test_pending_reads
         unit_test_input_buffer_saved_variable unit_test_call_storage)

# The CUDA backend is left out: without a GPU none of it runs here.
cmake -S "$repo_root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DACTORGRAD_SANITIZE=ON \
  -DACTORGRAD_CUDA=OFF >/dev/null
# The torch bridge's concurrent and reentrant callers, when libtorch is there
# (libtorch itself is not instrumented; its calls into ours are checked).
for t in torch_test_bridge_threads torch_test_bridge_reentrant; do
  # grep reads all the list: with -q, cmake could die of SIGPIPE first and
  # pipefail would drop the target.
  if cmake --build "$build" --target help | grep "\b$t\b" >/dev/null; then
    targets+=("$t")
  fi
done
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$repo_root/tools/ubsan.supp"
passed=0
failed=0
run() {
  echo "sanitizers: $*"
  if "$@" >"$build/last.log" 2>&1; then
    passed=$((passed + 1))
  else
    cat "$build/last.log"
    echo "sanitizers: FAILED: $*"
    failed=$((failed + 1))
  fi
}
for t in "${targets[@]}"; do
  if [[ $t == semantics_* ]]; then
    for executor in reference actor; do
      run env ACTORGRAD_EXECUTOR=$executor "$build/tests/$t"
    done
  else
    run "$build/tests/$t"
  fi
done
echo "sanitizers: $passed passed, $failed failed"
(( failed == 0 ))
