#!/usr/bin/env bash
# The README's main command: sets up, builds, and runs `actorgrad train`
# (a small MLP on two spirals, backward passes on the actor engine, layers
# spread over two simulated devices so gradients cross actors), recording
# the last step's message flow into trace.json (Chrome/Perfetto) and
# trace.html (a self-contained report).
# Arguments replace those defaults (see build/tools/actorgrad train --help).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$repo_root/tools/setup.sh"
if (( $# == 0 )); then
  set -- --devices sim:2 --trace trace.json --html trace.html
fi
exec "$repo_root/${BUILD_DIR:-build}/tools/actorgrad" train "$@"
