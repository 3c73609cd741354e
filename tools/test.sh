#!/usr/bin/env bash
# The README's test command: sets up (including libtorch-dev and chromium,
# so the libtorch cross-check and the screenshot test really run), builds,
# runs every test with ctest, then the sanitizer stage (tools/sanitize.sh:
# the concurrency, reentrancy, fault, recorder and stream tests under ASan + UBSan)
# and the conformance stage (tools/conformance.sh: PyTorch's own autograd
# tests on torch's engine and on actorgrad's).
# Exits non-zero when any test fails. Extra arguments go to ctest and skip
# the sanitizer and conformance stages (e.g. tools/test.sh -R semantics).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The configuration of tools/run.sh (setup.sh's defaults: the project's own
# warnings are errors), so the two commands share build/.
bash "$repo_root/tools/setup.sh" --with-test-deps
(cd "$repo_root/${BUILD_DIR:-build}" && ctest --output-on-failure --no-tests=error -j2 "$@")
if (( $# == 0 )); then
  bash "$repo_root/tools/sanitize.sh"
  bash "$repo_root/tools/conformance.sh"
fi
