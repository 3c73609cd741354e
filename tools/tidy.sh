#!/usr/bin/env bash
# Runs clang-tidy with the checks of .clang-tidy over the engine's sources
# (every .cpp of actors/ and libengine/ in the build's compile database) and
# fails (exit 1, printing each finding) when any check finds something.
#
#   tools/tidy.sh [FILE...]     FILE... defaults to those sources
#   tools/tidy.sh --core        the engine's core only: libengine/engine/,
#                               actors/ and actors/detail/ (ctest check_tidy)
#
# Needs a configured build (tools/setup.sh, or cmake -S . -B build: the
# project sets CMAKE_EXPORT_COMPILE_COMMANDS) and clang-tidy 14 (Debian 12's
# package clang-tidy). Environment: BUILD_DIR (default build; relative to
# the repository root unless absolute), JOBS (files
# checked at once, default 2), CLANG_TIDY (default clang-tidy).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-build}"
[[ $build_dir == /* ]] || build_dir="$repo_root/$build_dir"
clang_tidy="${CLANG_TIDY:-clang-tidy}"
jobs="${JOBS:-2}"
if [[ ! -f "$build_dir/compile_commands.json" ]]; then
  echo "tidy.sh: no $build_dir/compile_commands.json: configure first (tools/setup.sh, or cmake -S . -B ${BUILD_DIR:-build})" >&2
  exit 2
fi
if ! command -v "$clang_tidy" >/dev/null; then
  echo "tidy.sh: '$clang_tidy' not found (Debian package clang-tidy)" >&2
  exit 2
fi

# GCC's compile commands, less the flags clang 14 rejects or turns into
# errors of its own: the TLS dialect (Note [Thread-locals in shared objects]
# in CMakeLists.txt) and -Werror (clang warns where GCC does not; the
# findings that fail are the checks').
db_dir="$build_dir/tidy"
mkdir -p "$db_dir"
python3 - "$build_dir/compile_commands.json" "$db_dir/compile_commands.json" <<'PY'
import json, shlex, sys
entries = json.load(open(sys.argv[1]))
drop = {'-mtls-dialect=gnu2', '-Werror', '-Wno-error=restrict'}
for e in entries:
    e['command'] = shlex.join(a for a in shlex.split(e['command']) if a not in drop)
json.dump(entries, open(sys.argv[2], 'w'), indent=1)
PY

if (( $# > 0 )) && [[ $1 != --core ]]; then
  files=("$@")
else
  mapfile -t files < <(python3 - "$db_dir/compile_commands.json" "$repo_root" "${1:-}" <<'PY'
import json, re, sys
root = sys.argv[2].rstrip('/') + '/'
core = re.compile(r'(libengine/engine/.*|actors/(detail/)?[^/]*)\.cpp')
for e in json.load(open(sys.argv[1])):
    f = e['file']
    if not f.startswith(root) or not f.endswith('.cpp'):
        continue
    rel = f[len(root):]
    if (core.fullmatch(rel) if sys.argv[3] == '--core' else rel.startswith(('actors/', 'libengine/'))):
        print(f)
PY
)
fi

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
start=$SECONDS
status=0
printf '%s\0' "${files[@]}" |
  xargs -0 -n 1 -P "$jobs" "$clang_tidy" -p "$db_dir" --config-file="$repo_root/.clang-tidy" --quiet \
    >"$out" 2>&1 || status=$?
if (( status != 0 )); then
  grep -E '(warning|error):' "$out" || cat "$out"
  echo "tidy.sh: findings above (${#files[@]} files, $((SECONDS - start)) s)" >&2
  exit 1
fi
echo "tidy.sh: ${#files[@]} files, no findings ($((SECONDS - start)) s)"
