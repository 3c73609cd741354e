#!/usr/bin/env bash
# The README's test command: sets up (including libtorch-dev and chromium,
# so the libtorch cross-check and the screenshot test really run), builds,
# and runs every test with ctest. Exits non-zero when any test fails.
# Extra arguments go to ctest (e.g. tools/test.sh -R semantics).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$repo_root/tools/setup.sh" --with-test-deps
cd "$repo_root/${BUILD_DIR:-build}"
exec ctest --output-on-failure --no-tests=error -j2 "$@"
