#!/usr/bin/env bash
# The README's test command: sets up (including libtorch-dev and chromium,
# so the libtorch cross-check and the screenshot test really run), builds,
# runs every test with ctest, then the sanitizer stage (tools/sanitize.sh:
# the concurrency, reentrancy, fault, recorder and stream tests under ASan + UBSan)
# and the conformance stage (tools/conformance.sh: PyTorch's own autograd
# tests on torch's engine and on actorgrad's), then the distributed
# conformance stage (tools/conformance_dist.sh: PyTorch's distributed
# autograd tests, all 94, with actorgrad in every process, and on torch's
# engine those that did not pass; CONFORMANCE_DIST_TESTS="test_a test_b"
# runs only those).
# Exits non-zero when any test fails. Extra arguments go to ctest and skip
# the sanitizer and conformance stages (e.g. tools/test.sh -R semantics).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The configuration of tools/run.sh (setup.sh's defaults: the project's own
# warnings are errors), so the two commands share build/.
# Each stage says how long it took (where CI's time goes).
stage() { # NAME COMMAND...: runs COMMAND, then prints its wall time
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "test.sh: $name took $((SECONDS - start)) s"
}
stage "set-up and build" bash "$repo_root/tools/setup.sh" --with-test-deps
stage ctest ctest --test-dir "$repo_root/${BUILD_DIR:-build}" --output-on-failure --no-tests=error \
  -j2 "$@"
if (( $# == 0 )); then
  stage sanitizers bash "$repo_root/tools/sanitize.sh"
  stage conformance bash "$repo_root/tools/conformance.sh"
  CONFORMANCE_DIST_TIMEOUT="${CONFORMANCE_DIST_TIMEOUT:-900}" \
    stage "distributed conformance" bash "$repo_root/tools/conformance_dist.sh"
fi
