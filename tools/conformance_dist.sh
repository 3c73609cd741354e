#!/usr/bin/env bash
# Distributed conformance: PyTorch's own distributed autograd tests
# (DistAutogradTest and TensorPipeAgentDistAutogradTest, shipped with
# Debian's python3-torch; tools/conformance/dist_autograd_suite.py) with
# actorgrad.torch.install() in every process the tests start, on
# localhost; then on torch's engine the tests that did not pass with
# actorgrad (stock, the oracle, only decides whether those fail there too).
#
#   tools/conformance_dist.sh           run them (needs the target actorgrad_python)
#   tools/conformance_dist.sh --help    print this text
#
# Each mode runs in CONFORMANCE_DIST_SHARDS processes at once (default
# nproc; each test starts 4 RPC workers), each killed after
# CONFORMANCE_DIST_TIMEOUT seconds (default 3600). Prints how many tests
# passed with actorgrad, which of the others pass on stock, and how many of
# the processes ran calls on actorgrad; exits non-zero when a test that
# passes on stock fails with actorgrad, a run did not finish, or no call
# ran on actorgrad. Logs and results: BUILD_DIR/conformance-dist/.
# Environment: CONFORMANCE_DIST_TESTS (space-separated test names, e.g.
# "test_backward_simple test_async_dist_autograd", to run only those; all
# by default), CONFORMANCE_DIST_SHARDS, CONFORMANCE_DIST_TIMEOUT, BUILD_DIR
# (default build).
set -euo pipefail

for arg in "$@"; do
  case "$arg" in
    -h|--help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "conformance_dist.sh: unknown argument '$arg' (see --help; tests are chosen with CONFORMANCE_DIST_TESTS)" >&2; exit 2 ;;
  esac
done

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo_root/${BUILD_DIR:-build}"
results="$build/conformance-dist"
shards="${CONFORMANCE_DIST_SHARDS:-$(nproc)}"
limit="${CONFORMANCE_DIST_TIMEOUT:-3600}"
python=/usr/bin/python3 # Debian's torch imports only in Debian's Python
suite="$repo_root/tools/conformance/dist_autograd_suite.py"

[[ -e $build/python/actorgrad/torch.py ]] || {
  echo "conformance_dist.sh: $build/python/actorgrad is missing (build actorgrad_python)" >&2; exit 1; }
rm -rf "$results"
mkdir -p "$results"
# The stand-in for `expecttest`, which Debian 12 lacks, as for conformance.sh.
common_env=(PYTHONPATH="$repo_root/tools/conformance/stand_in:$build/python" OMP_NUM_THREADS=1
            PYTHONDONTWRITEBYTECODE=1)
run_mode() { # MODE [TEST...]: the tests (all without names) in $shards processes
  local mode=$1 shard
  shift
  for ((shard = 0; shard < shards; shard++)); do
    (cd "$results" && env "${common_env[@]}" timeout -k 10 "$limit" "$python" "$suite" run \
       "$mode" "$results/$mode-$shard.json" "$shard" "$shards" "$@" \
       >"$results/$mode-$shard.log" 2>&1; echo $? >"$results/$mode-$shard.rc") &
  done
  wait
  env "${common_env[@]}" "$python" "$suite" merge "$results/$mode.json" "$results/$mode"-*[0-9].json
}
start=$SECONDS
# shellcheck disable=SC2086 # the names are words
run_mode install ${CONFORMANCE_DIST_TESTS:-}
rerun=$(env "${common_env[@]}" "$python" "$suite" not-passed "$results/install.json")
if [[ -n $rerun ]]; then
  # shellcheck disable=SC2086
  run_mode stock $rerun
else
  env "${common_env[@]}" "$python" "$suite" merge "$results/stock.json"
fi
echo "conformance_dist: runs in $((SECONDS - start)) s (logs: $results/*.log)"
failed=0
for rc in "$results"/*.rc; do
  if [[ $(cat "$rc") != 0 ]]; then
    echo "conformance_dist: $(basename "$rc" .rc) exited with $(cat "$rc"); its log ends:"
    tail -n 20 "${rc%.rc}.log"
    failed=1
  fi
done
env "${common_env[@]}" "$python" "$suite" table "$results/stock.json" "$results/install.json" >"$results/table.md"
echo "conformance_dist: per test and process: $results/table.md"
env "${common_env[@]}" "$python" "$suite" check "$results/stock.json" "$results/install.json" ||
  failed=1
exit "$failed"
