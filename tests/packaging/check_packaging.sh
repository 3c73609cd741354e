#!/usr/bin/env bash
# Consumes actorgrad the ways its README describes, from a finished build:
#   1. cmake --install into a temporary prefix, whose headers are the public
#      API alone (tools/check_installed_headers.py); a project outside the tree
#      (consumer/) builds with find_package(actorgrad CONFIG REQUIRED), trains
#      and writes a trace (JSON and HTML);
#   2. the same project with add_subdirectory(<source tree>): only the
#      libraries are configured (consumer/CMakeLists.txt fails if Boost.Test,
#      Google Benchmark, libtorch or CLI11 were looked for);
#   3. pkg-config --cflags --libs actorgrad for a one-file consumer, which
#      links no CUDA library and, put in the prefix's bin/, finds the CUDA
#      plugin there (when the build has one) as soon as it asks about cuda:0;
#   4. cpack -G DEB: the package's file list (dpkg-deb -c), then the package
#      extracted into a temporary root (dpkg-deb -x, not installed into the
#      system), its CUDA plugin loaded, and the find_package consumer built
#      against it.
#
#   check_packaging.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
jobs=${PACKAGING_JOBS:-2}
consumer=$src/tests/packaging/consumer
plugin=libactorgrad_cuda.so
with_cuda=false
if [ -f "$build/lib/$plugin" ]; then with_cuda=true; fi

run_consumer() { # BUILD_DIR: runs it, checks its trace files
  "$1/consumer" "$1/trace"
  test -s "$1/trace.json" && test -s "$1/trace.html"
  grep -q '"traceEvents"' "$1/trace.json"
}

echo "== 1. installed: find_package"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
python3 "$src/tools/check_installed_headers.py" "$work/prefix/include"
cmake -S "$consumer" -B "$work/installed" -DCMAKE_PREFIX_PATH="$work/prefix" > /dev/null
cmake --build "$work/installed" -j "$jobs" > /dev/null
run_consumer "$work/installed"
"$work/prefix/bin/actorgrad" --version
if $with_cuda; then test -f "$work/prefix/lib/$plugin"; fi

echo "== 2. add_subdirectory"
# Release without optimisation (-O0, no debug information: 30% less compile
# time than -O3): this route compiles every library again, the longest part
# of this check, and what it checks is the subproject's configuration and
# linking, not the code that the Release build under test already runs.
cmake -S "$consumer" -B "$work/subproject" -DACTORGRAD_SOURCE_DIR="$src" -DACTORGRAD_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-DNDEBUG > "$work/subproject.log"
cmake --build "$work/subproject" -j "$jobs" > "$work/subproject-build.log"
run_consumer "$work/subproject"

echo "== 3. pkg-config"
cat > "$work/one_file.cpp" <<'CPP'
#include <cstdio>
#include "actorgrad/device/availability.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/ops.h"
int main() {
  using namespace actorgrad;
  Tensor w = Tensor::randn({3}, 1);
  w.set_requires_grad();
  sum(w * w).backward();
  // Loads the CUDA plugin: empty with a GPU, else why not.
  std::printf("cuda:0: %s\n", device_unavailable(Device::cuda(0)).c_str());
  return w.grad().defined() ? 0 : 1;
}
CPP
flags=$(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs actorgrad)
# shellcheck disable=SC2086
g++ "$work/one_file.cpp" -o "$work/prefix/bin/one_file" $flags
if readelf -d "$work/prefix/bin/one_file" | grep -E 'NEEDED.*(cudart|cublas)'; then
  echo "the pkg-config consumer links a CUDA library" >&2
  exit 1
fi
"$work/prefix/bin/one_file" | tee "$work/one_file.out"
if $with_cuda && grep -q "$plugin" "$work/one_file.out"; then
  echo "the installed CUDA plugin was not loaded from the prefix" >&2
  exit 1
fi

echo "== 4. cpack -G DEB"
(cd "$build" && cpack -G DEB -B "$work/deb" > "$work/cpack.log")
deb=$(ls "$work"/deb/actorgrad_*.deb)
dpkg-deb -c "$deb" > "$work/deb.list"
grep -q './usr/lib/cmake/actorgrad/actorgradConfig.cmake' "$work/deb.list"
grep -q './usr/include/actorgrad/actors/engine.h' "$work/deb.list"
grep -q './usr/bin/actorgrad' "$work/deb.list"
if $with_cuda; then grep -q "./usr/lib/$plugin" "$work/deb.list"; fi
dpkg-deb -f "$deb" Depends > "$work/deb.depends"
grep -q libcaf-dev "$work/deb.depends"
dpkg-deb -x "$deb" "$work/root"
if $with_cuda; then
  ACTORGRAD_CUDA_PLUGIN="$work/root/usr/lib/$plugin" "$work/prefix/bin/one_file" > "$work/deb_plugin.out"
  if grep -q "$plugin" "$work/deb_plugin.out"; then
    cat "$work/deb_plugin.out" >&2
    exit 1
  fi
fi
cmake -S "$consumer" -B "$work/from_deb" -DCMAKE_PREFIX_PATH="$work/root/usr" > /dev/null
cmake --build "$work/from_deb" -j "$jobs" > /dev/null
run_consumer "$work/from_deb"
echo "packaging: all four routes work"
