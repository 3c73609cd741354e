#!/usr/bin/env bash
# Instructions per Python backward call of one case of bench/bench_python_bridge.py,
# on torch's engine and on actorgrad's (install(), and install(fast_backward=False)
# with torch's own Tensor.backward),
# counted under valgrind's callgrind (repeatable on a noisy, shared machine).
#
#   tools/bench/callgrind_python.sh [PYTHONPATH_DIR] [CASE]
#
# PYTHONPATH_DIR: the build tree's python/ folder (default build/python);
# CASE: one_node (default), mlp, add_chain or transformer.
# Each mode runs 20 warm-up calls, then N calls, for N = 200 and N = 2,200,
# in fresh processes; the main thread's count (--separate-threads=yes: the
# start-up of the other threads varies by far more than a call) of the
# second minus the first, divided by 2,000, is the cost of one call, with
# start-up and the case's forward cancelled out. Output: mode and
# instructions per call, tab-separated. PYTHONHASHSEED is fixed: with random
# string hashes two runs of one build differed by up to 1,500 instructions a
# call.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PYDIR=${1:-$ROOT/build/python}
CASE=${2:-one_node}
command -v valgrind >/dev/null || { echo "valgrind not installed" >&2; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat >"$TMP/calls.py" <<'EOF'
import sys

import torch

sys.path.insert(0, sys.argv[4])
import bench_python_bridge as cases  # noqa: E402
import actorgrad.torch as ag  # noqa: E402

mode, case, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.set_num_threads(1)
if mode != "stock":
    ag.install(fast_backward=(mode != "torch_method"))
root = getattr(cases, case)()
for _ in range(20 + calls):
    root.backward(retain_graph=True)
EOF
count() { # mode calls -> main thread's instructions
  local out=$TMP/cg.$1.$2
  PYTHONHASHSEED=0 PYTHONPATH=$PYDIR valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out" \
    /usr/bin/python3 "$TMP/calls.py" "$1" "$CASE" "$2" "$ROOT/bench" >/dev/null 2>&1
  awk '/^summary:|^totals:/ {print $2; exit}' "$out-01"
}
for mode in stock install torch_method; do
  few=$(count "$mode" 200)
  many=$(count "$mode" 2200)
  echo -e "$mode\t$(( (many - few) / 2000 ))"
done
