#!/usr/bin/env bash
# Conformance stage: PyTorch's own autograd test suite on actorgrad's engine.
# Fetches Debian's `pytorch` source package (the version of the installed
# python3-torch; tools/deb_source.sh: `apt-get source --download-only` with a
# deb-src entry for the fetch only), extracts test/test_autograd.py, the
# test/autograd/ it imports and its expect files, and runs the suite
# (tools/conformance/autograd_suite.py) in four processes:
#
#   stock                 torch's own engine
#   install               actorgrad.torch.install()
#   install_torch_method  actorgrad.torch.install(fast_backward=False)
#   preload               LD_PRELOAD=libactorgrad_torch_preload.so, ACTORGRAD_TRACE set
#
# then prints per mode how many tests passed on both, failed on both, only on
# stock and only with actorgrad. Exits non-zero when a test that passes on
# stock does not pass in some mode, or a run did not finish (each is killed
# after CONFORMANCE_TIMEOUT seconds, default 600, so a hang fails the stage).
# Nothing of PyTorch's is kept in the repository: the sources are cached in
# BUILD_DIR/conformance/ (reused by later runs); the stand-in for the
# `expecttest` package, which Debian 12 lacks, is on PYTHONPATH for these
# runs only. Needs the targets actorgrad_python and actorgrad_torch_preload.
# Environment: BUILD_DIR (default build), CONFORMANCE_JOBS (runs at once,
# default nproc), CONFORMANCE_TIMEOUT.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo_root/${BUILD_DIR:-build}"
work="$build/conformance"
jobs="${CONFORMANCE_JOBS:-$(nproc)}"
limit="${CONFORMANCE_TIMEOUT:-600}"
python=/usr/bin/python3 # Debian's torch imports only in Debian's Python
preload_lib="$build/actors/torch/libactorgrad_torch_preload.so"
log() { echo "conformance: $*"; }

for f in "$build/python/actorgrad/torch.py" "$preload_lib"; do
  [[ -e $f ]] || { echo "conformance.sh: $f is missing (build actorgrad_python and actorgrad_torch_preload)" >&2; exit 1; }
done
version="$(dpkg-query -W -f='${source:Version}' python3-torch 2>/dev/null || true)"
[[ -n $version ]] || { echo "conformance.sh: python3-torch is not installed" >&2; exit 1; }

# shellcheck source=tools/deb_source.sh
source "$repo_root/tools/deb_source.sh"
tarball="$(deb_source_orig pytorch "$version" "$work/source")"
suite="$work/suite-$version"
if [[ ! -f $suite/.complete ]]; then
  rm -rf "$suite"
  mkdir -p "$suite"
  tar -xf "$tarball" -C "$suite" --strip-components=2 --wildcards \
    '*/test/test_autograd.py' '*/test/autograd/*' '*/test/expect/TestAutograd.*'
  touch "$suite/.complete"
fi

results="$work/results"
rm -rf "$results"
mkdir -p "$results"
modes=(stock install install_torch_method preload)
# One thread per run: the runs share the cores instead. The tests marked
# slow run too (a few seconds).
common_env=(PYTHONPATH="$repo_root/tools/conformance/stand_in:$build/python" OMP_NUM_THREADS=1
            PYTHONDONTWRITEBYTECODE=1 PYTORCH_TEST_WITH_SLOW=1)
# Writes the run's exit status to $results/MODE.rc.
run_mode() {
  local mode="$1" extra=() status=0
  [[ $mode == preload ]] && extra=(LD_PRELOAD="$preload_lib" ACTORGRAD_TRACE="$results/preload-trace.json")
  # The suite writes temporary files into the working directory.
  (cd "$results" && env "${common_env[@]}" "${extra[@]}" timeout -k 10 "$limit" \
     "$python" "$repo_root/tools/conformance/autograd_suite.py" run "$mode" "$suite" "$results/$mode.json" \
     >"$results/$mode.log" 2>&1) || status=$?
  echo "$status" >"$results/$mode.rc"
}

start=$SECONDS
for mode in "${modes[@]}"; do
  while (( $(jobs -rp | wc -l) >= jobs )); do
    wait -n
  done
  run_mode "$mode" &
done
wait
log "4 runs of $suite/test_autograd.py in $((SECONDS - start)) s (logs: $results/*.log)"

failed=0
for mode in "${modes[@]}"; do
  status="$(cat "$results/$mode.rc")"
  if (( status != 0 )); then
    log "the $mode run exited with $status$( (( status == 124 )) && echo " (timed out after $limit s)"); its log ends:"
    tail -n 20 "$results/$mode.log"
    failed=1
  fi
done
if [[ -f $results/preload-trace.json ]]; then
  passes="$("$python" -c 'import json, sys
events = json.load(open(sys.argv[1])).get("traceEvents", [])
print(len({e["args"]["graph_task"] for e in events if "graph_task" in e.get("args", {})}))' "$results/preload-trace.json")"
  log "preload: the trace records $passes backward calls on actorgrad"
fi
compare=()
for mode in "${modes[@]:1}"; do
  compare+=("$mode=$results/$mode.json")
done
"$python" "$repo_root/tools/conformance/autograd_suite.py" compare "$results/stock.json" "${compare[@]}" || failed=1
exit "$failed"
