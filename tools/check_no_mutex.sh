#!/usr/bin/env bash
# Fails (exit 1, printing the offending lines) when a mutex or condition
# variable appears in the actor engine's sources (DESIGN.md: "No std::mutex /
# std::condition_variable in the scheduling path").
#
#   tools/check_no_mutex.sh [DIR]     DIR defaults to the repository's actors/
#
# Checked: std::mutex, std::recursive_mutex, std::shared_mutex, their timed_
# variants, std::condition_variable and std::condition_variable_any, outside
# comments. A file that must use one anyway (it is off the scheduling path)
# is skipped when it contains the marker comment
#   // NOT-SCHEDULING-PATH: <why>
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$repo_root/actors}"
if [[ ! -d "$dir" ]]; then
  echo "check_no_mutex.sh: no directory '$dir'" >&2
  exit 2
fi

pattern='std::(recursive_|shared_)?(timed_)?mutex\b|std::condition_variable(_any)?\b'
found=0
while IFS= read -r -d '' file; do
  if grep -q 'NOT-SCHEDULING-PATH:' "$file"; then
    continue
  fi
  # Drop // comments and lines of /* */ or /// blocks before matching.
  hits="$(sed -E -e 's@//.*$@@' -e 's@/\*.*\*/@@g' -e 's@^[[:space:]]*(\*|/\*).*$@@' "$file" \
          | grep -nE "$pattern" || true)"
  if [[ -n "$hits" ]]; then
    found=1
    while IFS=: read -r lineno _; do
      echo "${file#"$repo_root"/}:$lineno: $(sed -n "${lineno}p" "$file")"
    done <<<"$hits"
  fi
done < <(find "$dir" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.cc' \
                                -o -name '*.inl' -o -name '*.ipp' -o -name '*.cu' \) -print0 | sort -z)

if [[ $found == 1 ]]; then
  echo "check_no_mutex.sh: mutex/condition variable in the actor engine (above)." >&2
  echo "  Actors own their state and exchange messages; atomics for counters and flags." >&2
  echo "  A file off the scheduling path may opt out with a comment '// NOT-SCHEDULING-PATH: <why>'." >&2
  exit 1
fi
echo "check_no_mutex.sh: no mutex or condition variable in ${dir#"$repo_root"/}"
