#!/usr/bin/env bash
# Fails (exit 1, naming each file and its first unformatted line) when a tracked C++ file is not
# formatted as .clang-format says. Formats nothing: clang-format -i FILE does.
#
#   tools/check_format.sh [FILE...]     FILE... defaults to every tracked
#                                       .h/.cpp/.cu/.cuh file
#
# Needs clang-format 14 (Debian 12's package clang-format): other versions
# format some constructs differently. CLANG_FORMAT names another binary.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
clang_format="${CLANG_FORMAT:-clang-format}"
if ! command -v "$clang_format" >/dev/null; then
  echo "check_format.sh: '$clang_format' not found (Debian package clang-format; tools/setup.sh --with-test-deps installs it)" >&2
  exit 2
fi
version="$("$clang_format" --version)"
if [[ ! "$version" =~ version\ 14\. ]]; then
  echo "check_format.sh: needs clang-format 14, '$clang_format' is: $version" >&2
  exit 2
fi

cd "$repo_root"
if (( $# > 0 )); then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh')
fi
# --dry-run -Werror: "file:line:col: error: code should be clang-formatted"
# for the first unformatted place of each file, exit 1 when there is any.
status=0
report="$(printf '%s\0' "${files[@]}" |
          xargs -0 -n 100 "$clang_format" --dry-run -Werror --ferror-limit=1 2>&1)" || status=$?
if (( status != 0 )); then
  grep -E '^[^ ]+:[0-9]+:[0-9]+: ' <<<"$report" || printf '%s\n' "$report"
  echo "check_format.sh: the files above are not formatted as .clang-format says (clang-format -i FILE formats one)" >&2
  exit 1
fi
echo "check_format.sh: ${#files[@]} files formatted as .clang-format says"
