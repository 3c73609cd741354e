#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for actorgrad and builds it into build/.
#
#   tools/setup.sh                    build dependencies, then configure + build
#   tools/setup.sh --with-test-deps   also libtorch-dev (the gradient cross-check
#                                     test), chromium (the trace screenshot test)
#                                     and python3-torch, pybind11-dev, python3-pytest
#                                     (the Python bridge and its tests), clang-tidy, clang-format
#                                     (the check_tidy and check_format tests)
#   tools/setup.sh --no-build         install packages only
#
# Idempotent: packages already installed are not touched, `apt-get update`
# runs only when something is missing, and a configured build/ is reused.
# Environment: BUILD_DIR (default build), BUILD_TYPE (default Release),
# ACTORGRAD_WERROR (default ON: warnings are errors, as in CI). tools/run.sh and
# tools/test.sh both take these defaults, so they share one configuration of
# build/: tools/run.sh right after tools/test.sh compiles nothing, and the
# other way round only what the test dependencies bring in when they were
# missing (the torch and Python bridges, their tests, the benchmarks that
# compare with libtorch; no other target's flags depend on them).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-build}"
build_type="${BUILD_TYPE:-Release}"
with_test_deps=0
do_build=1
for arg in "$@"; do
  case "$arg" in
    --with-test-deps) with_test_deps=1 ;;
    --no-build) do_build=0 ;;
    -h|--help) sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

packages=(cmake g++ make ccache python3 libcaf-dev libboost-dev libboost-test-dev libbenchmark-dev libeigen3-dev libcli11-dev)
if [[ $with_test_deps == 1 ]]; then
  packages+=(libtorch-dev chromium python3-torch pybind11-dev python3-pytest pkg-config clang-tidy clang-format)
fi

missing=()
for p in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if (( ${#missing[@]} > 0 )); then
  if [[ $(id -u) == 0 ]]; then
    sudo=()
  elif command -v sudo >/dev/null; then
    sudo=(sudo)
  else
    echo "setup.sh: missing packages (${missing[*]}) and not root, and sudo is not installed" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake_args=(-S "$repo_root" -B "$repo_root/$build_dir" -DCMAKE_BUILD_TYPE="$build_type"
            -DACTORGRAD_WERROR="${ACTORGRAD_WERROR:-ON}")
# CMake builds the CUDA backend when nvcc works (tools/cmake/Cuda.cmake; off
# with -DACTORGRAD_CUDA=OFF): say which build this is.
if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "CUDA toolkit found ($(/usr/local/cuda/bin/nvcc --version | tail -n 1)): building CPU + sim devices + the CUDA backend (tests/cuda/ skip without a GPU)"
else
  echo "CUDA not found: building CPU + sim devices"
fi

if [[ $do_build == 1 ]]; then
  cmake "${cmake_args[@]}" >/dev/null
  cmake --build "$repo_root/$build_dir" -j"$(nproc)"
fi
