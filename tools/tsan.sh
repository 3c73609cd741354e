#!/usr/bin/env bash
# ThreadSanitizer stage: builds CAF itself with -fsanitize=thread from
# Debian's source package (Debian's libcaf is not instrumented, so TSan would
# report false races inside it), builds the engine's concurrency, fault,
# reentrancy, stream, distributed and stress tests against it with TSan
# (build-tsan/) and runs them. Any report that tools/tsan.supp does not
# suppress fails. Run it before changing the scheduling code (README,
# "ThreadSanitizer").
#
#   tools/tsan.sh            build what is missing, run every test
#   tools/tsan.sh TARGET...  only these test targets (e.g. actors_test_faults)
#
# The instrumented CAF is cached: $ACTORGRAD_TSAN_CACHE, by default
# ${XDG_CACHE_HOME:-~/.cache}/actorgrad/caf-tsan, one install per CAF version,
# compiler and flags. A cold run fetches Debian's source package with
# `apt-get source --download-only` (tools/deb_source.sh: a deb-src entry
# derived from the machine's deb entries, for the fetch only).
# Environment: TSAN_BUILD_DIR (default build-tsan), TSAN_CXX (default g++),
# TSAN_JOBS (default nproc), ACTORGRAD_STRESS_SECONDS (default 5 here).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo_root/${TSAN_BUILD_DIR:-build-tsan}"
cache="${ACTORGRAD_TSAN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/actorgrad/caf-tsan}"
cxx="$(command -v "${TSAN_CXX:-g++}")"
jobs="${TSAN_JOBS:-$(nproc)}"
tsan_flags="-fsanitize=thread -fno-omit-frame-pointer -g -O1"
targets=(unit_test_node_deletion actors_test_doorbell actors_test_concurrency actors_test_reentrant actors_test_faults
         actors_test_thread_exit
         streams_test_sim_streams streams_test_input_buffer_streams streams_test_engine_streams
         streams_test_pending_reads streams_test_second_order_streams
         distributed_test_dist_mlp distributed_test_dist_faults
         stress_test_stress_dags stress_test_stress_worker_kills stress_test_stress_engine_teardown
         stress_test_stress_remote_kill stress_test_stress_async_burst actors_test_engine_threads
         actors_test_parallel_cpu actors_test_later_roots)
(( $# > 0 )) && targets=("$@")
log() { echo "tsan: $*"; }

# The upstream version of the installed libcaf-dev (the headers the normal build uses).
caf_version="$(dpkg-query -W -f='${source:Upstream-Version}' libcaf-dev 2>/dev/null || true)"
if [[ -z $caf_version ]]; then
  echo "tsan.sh: libcaf-dev is not installed (run tools/setup.sh)" >&2
  exit 1
fi
src_dir="$cache/src"
# shellcheck source=tools/deb_source.sh
source "$repo_root/tools/deb_source.sh"

# CAF's options: core and io only, shared libraries as Debian ships them.
caf_options=(-DCAF_NO_EXAMPLES=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_TOOLS=yes -DCAF_NO_PYTHON=yes
             -DCAF_NO_OPENCL=yes -DCAF_NO_OPENSSL=yes -DCAF_NO_AUTO_LIBCPP=yes -DCAF_NO_SUMMARY=yes)
# Cache key: what makes the install differ (recipe: bump when build_caf changes).
recipe=1
key="$(printf '%s\n' "$recipe" "$caf_version" "$("$cxx" --version | head -n 1)" "$tsan_flags" "${caf_options[*]}" |
       sha256sum | cut -c1-12)"
prefix="$cache/caf-$caf_version-$key"

# Builds and installs the instrumented CAF into $prefix unless it is there
# (an interrupted build resumes in $cache/work-KEY).
build_caf() {
  [[ -f $prefix/.complete ]] && { log "cached CAF $caf_version with TSan: $prefix"; return; }
  local work="$cache/work-$key"
  local src="$work/actor-framework-$caf_version"
  if [[ ! -d $src ]]; then
    local tarball
    tarball="$(deb_source_orig actor-framework "$(dpkg-query -W -f='${source:Version}' libcaf-dev)" "$src_dir")"
    mkdir -p "$work"
    tar -xzf "$tarball" -C "$work"
  fi
  # Debian's one patch that matters here (its patch tarball may be missing
  # from the mirror): GCC 12's libstdc++ no longer includes <limits> through
  # <memory>, and this header uses std::numeric_limits.
  local header="$src/libcaf_io/caf/io/network/receive_buffer.hpp"
  grep -q '#include <limits>' "$header" || sed -i 's/#include <cstring>/#include <cstring>\n#include <limits>/' "$header"
  grep -q '#include <limits>' "$header" || { echo "tsan.sh: could not patch $header" >&2; exit 1; }
  log "building CAF $caf_version with TSan ($cxx) into $prefix"
  cmake -S "$src" -B "$work/build" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="-std=c++11" -DCMAKE_CXX_FLAGS_DEBUG="$tsan_flags" \
    -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_INSTALL_LIBDIR=lib "${caf_options[@]}" >"$work/configure.log"
  nice cmake --build "$work/build" -j"$jobs" >"$work/build.log" ||
    { tail -n 40 "$work/build.log"; exit 1; }
  rm -rf "$prefix"
  cmake --install "$work/build" >/dev/null
  touch "$prefix/.complete"
  rm -rf "$work"
}

build_caf

# The project, against that CAF: its headers must win over /usr/include/caf.
cmake -S "$repo_root" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DACTORGRAD_SANITIZE=thread \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-g -O1" -DACTORGRAD_CUDA=OFF \
  -DCAF_INCLUDE_DIR="$prefix/include" -DCAF_CORE_LIBRARY="$prefix/lib/libcaf_core.so" \
  -DCAF_IO_LIBRARY="$prefix/lib/libcaf_io.so" >/dev/null
nice cmake --build "$build" -j"$jobs" --target "${targets[@]}" actorgrad
if grep -rlsq --include='*.d' '/usr/include/caf/' "$build"; then
  echo "tsan.sh: some objects include Debian's uninstrumented CAF headers:" >&2
  grep -rls --include='*.d' '/usr/include/caf/' "$build" | head >&2
  exit 1
fi

export ACTORGRAD_BIN="$build/tools/actorgrad"
# The stress tests' time budget per case (TSan runs them ~10x slower).
export ACTORGRAD_STRESS_SECONDS="${ACTORGRAD_STRESS_SECONDS:-5}"
# grep reads all of ldd's output: with -q it could exit first, and pipefail
# would count ldd's SIGPIPE as a miss.
if ! ldd "$ACTORGRAD_BIN" | grep "$prefix/lib/libcaf_core" >/dev/null; then
  echo "tsan.sh: $ACTORGRAD_BIN does not load the instrumented CAF:" >&2
  ldd "$ACTORGRAD_BIN" | grep caf >&2
  exit 1
fi
# Test cases that race on purpose: each makes sim memory accesses that no
# event orders, to check that the sim race detector reports them, and TSan
# (rightly) reports the same accesses. They are left out here.
declare -A deliberate_races=(
  [streams_test_sim_streams]="a_read_on_an_unordered_stream_is_reported_with_tensor_streams_and_ops a_host_read_synchronizes_the_current_stream_only a_copy_reading_a_source_its_stream_does_not_follow_is_reported a_write_after_an_unordered_read_is_reported"
  [streams_test_input_buffer_streams]="without_the_waits_the_detector_reports_the_cases_that_need_them"
  [streams_test_engine_streams]="without_the_engine_waits_the_detector_reports_races"
)
# halt_on_error=0: every report of a run is printed; a report makes the
# process exit with 66 at its end. print_suppressions: what tsan.supp hid.
export TSAN_OPTIONS="suppressions=$repo_root/tools/tsan.supp halt_on_error=0 exitcode=66 print_suppressions=1 history_size=4 ${TSAN_OPTIONS:-}"
passed=0
failed=0
total_reports=0
for t in "${targets[@]}"; do
  exe="$(find "$build/tests" -maxdepth 1 -name "$t" -type f)"
  args=()
  for c in ${deliberate_races[$t]:-}; do
    args+=("--run_test=!$c")
  done
  log "running $t ${args[*]}"
  start=$SECONDS
  rc=0
  "$exe" "${args[@]}" >"$build/$t.log" 2>&1 || rc=$?
  reports="$(grep -c '^WARNING: ThreadSanitizer' "$build/$t.log" || true)"
  suppressed="$({ grep -o 'ThreadSanitizer: Matched [0-9]* suppressions' "$build/$t.log" || true; } |
                awk '{ s += $3 } END { print s + 0 }')"
  total_reports=$((total_reports + reports))
  summary="$reports TSan reports, $suppressed suppressed, $((SECONDS - start)) s"
  if (( rc == 0 )); then
    passed=$((passed + 1))
    log "$t passed ($summary)"
  else
    cat "$build/$t.log"
    echo
    log "FAILED: $t (exit $rc, $summary)"
    failed=$((failed + 1))
  fi
done
log "$passed passed, $failed failed; $total_reports TSan reports (logs: $build/*.log)"
(( failed == 0 ))
