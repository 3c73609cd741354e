#!/usr/bin/env bash
# The README's main command: sets up, builds, and runs `actorgrad train`
# (a small MLP on two spirals, backward passes on the actor engine).
# Arguments go to `actorgrad train` (see build/tools/actorgrad train --help).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$repo_root/tools/setup.sh"
exec "$repo_root/${BUILD_DIR:-build}/tools/actorgrad" train "$@"
