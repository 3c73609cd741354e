"""PyTorch's own distributed autograd tests (DistAutogradTest and
TensorPipeAgentDistAutogradTest of torch.testing._internal.distributed.rpc.
dist_autograd_test, shipped with Debian's python3-torch), run through
rpc_utils.generate_tests with the TensorPipe fixture as PyTorch's
test/distributed/rpc/test_tensorpipe_agent.py does, on torch's engine and
with actorgrad installed in every process; tools/conformance_dist.sh runs it.
Each test's processes are forked from a forkserver that imported torch and
the test modules (Note [Test processes come from a forkserver]).

    dist_autograd_suite.py run MODE OUT.json SHARD COUNT [NAME...]
        runs the tests (only those named NAME, e.g. test_backward_simple,
        when given) whose index is SHARD modulo COUNT and writes each
        test id's outcome to OUT.json (autograd_suite.py's format; the
        header's stats sum every process's actorgrad.torch.stats(), and
        `processes` counts the processes that ran a test, `on_actors` those
        whose calls ran on actorgrad). MODE: stock, or install
        (actorgrad.torch.install() in every process the tests spawn, before
        it runs its test).
    dist_autograd_suite.py merge OUT.json [SHARD.json...]
        joins the shards of one mode into one file (none: an empty run).
    dist_autograd_suite.py table STOCK.json INSTALL.json
        prints one line per test (Markdown): its outcome on stock and with
        actorgrad, and per process (rank) the calls and distributed passes
        each ran on actorgrad.
    dist_autograd_suite.py not-passed INSTALL.json
        prints the names of the tests that did not pass with actorgrad.
    dist_autograd_suite.py check STOCK.json INSTALL.json
        prints how many tests passed with actorgrad, and of the others
        (which STOCK.json holds: the stock run is the oracle for them only)
        which pass on stock; exits non-zero when one of those does or is
        not in STOCK.json, a run is incomplete, or no call ran on actorgrad.
"""

import glob
import json
import os
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from autograd_suite import PASSED, RecordingResult  # noqa: E402

# common_utils parses the command line when imported: give it none.
_argv, sys.argv = sys.argv, sys.argv[:1]

# Modules, not their classes: the test loader takes every test class it
# finds in this module.
import torch.multiprocessing  # noqa: E402
import torch.testing._internal.distributed.rpc.dist_autograd_test as suite  # noqa: E402
import torch.testing._internal.distributed.rpc.tensorpipe_rpc_agent_test_fixture as fixture  # noqa: E402
import torch.testing._internal.distributed.rpc_utils as rpc_utils  # noqa: E402

sys.argv = _argv

# Note [Test processes come from a forkserver]
# PyTorch's fixture spawns each test's 4 RPC workers: every one starts a
# fresh interpreter that imports torch and the test modules again, about
# 2 s of CPU each (test_backward_simple: 8.4 s spawned, 1.4 s forked, on
# 2 cores). Here they are forked from multiprocessing's forkserver, a
# process that imported only those modules (`run` names them; preloading
# "__main__" itself does not work in Python 3.11, whose forkserver is given
# no main path) and never runs a test, starts no thread, RPC agent or
# actorgrad. So each worker is still a process of its own that starts
# clean: it installs actorgrad (in install mode) and initialises RPC
# itself, as before; only the imports are shared. The whole suite took
# about 4.5 minutes in both modes at 2 shards, against about 23 spawned.
_FORKSERVER = torch.multiprocessing.get_context("forkserver")

#: Where each spawned process writes its stats (set by `run` for its children).
STATS_DIR = "ACTORGRAD_DIST_SUITE_STATS"
MODE = "ACTORGRAD_DIST_SUITE_MODE"


def with_actorgrad(cls):
    """`cls` whose spawned processes install actorgrad first (when MODE is
    install) and write their stats when their test ends."""

    class Installed(cls):
        def _spawn_processes(self):  # Note [Test processes come from a forkserver]
            self._start_processes(_FORKSERVER.Process)

        @classmethod
        def _run(cls, rank, test_name, file_name, parent_pipe):
            stats = None
            if os.environ.get(MODE) == "install":
                import actorgrad.torch
                actorgrad.torch.install()
                stats = actorgrad.torch.stats
            try:
                super()._run(rank, test_name, file_name, parent_pipe)
            finally:
                path = os.path.join(os.environ[STATS_DIR], f"{test_name}.{rank}.json")
                with open(path, "w") as f:
                    json.dump(stats() if stats else {}, f)

    Installed.__name__ = Installed.__qualname__ = cls.__name__
    Installed.__module__ = cls.__module__
    return Installed


# Module-level, as in PyTorch's test file, so that the spawned processes
# (which import this module as __mp_main__) find the classes by name.
globals().update({
    name: with_actorgrad(cls) for name, cls in rpc_utils.generate_tests(
        "TensorPipe", fixture.TensorPipeRpcAgentTestFixture,
        [suite.DistAutogradTest, suite.TensorPipeAgentDistAutogradTest], __name__).items()})


class StatsResult(RecordingResult):
    """Also adds up, per test, the stats its processes wrote."""

    def __init__(self, path, header, stats_dir):
        super().__init__(path, header)
        self.stats_dir = stats_dir
        header.update(stats={"calls": 0, "distributed_parts": 0}, processes=0, on_actors=0)

    def startTest(self, test):
        super().startTest(test)
        self.started = time.monotonic()

    def stopTest(self, test):
        name = test.id().rsplit(".", 1)[-1]
        if test.id() in self.outcomes:
            self.outcomes[test.id()]["seconds"] = round(time.monotonic() - self.started, 1)
        per_rank = {}
        for path in glob.glob(os.path.join(self.stats_dir, f"{name}.*.json")):
            with open(path) as f:
                s = json.load(f)
            os.remove(path)
            per_rank[int(path.rsplit(".", 2)[-2])] = [s.get("calls", 0),
                                                      s.get("distributed_parts", 0)]
            self.header["processes"] += 1
            if s.get("calls", 0) > 0:
                self.header["on_actors"] += 1
            for key in self.header["stats"]:
                self.header["stats"][key] += s.get(key, 0)
        if test.id() in self.outcomes:
            # [calls, distributed passes] of each rank, by rank.
            self.outcomes[test.id()]["ranks"] = [per_rank[r] for r in sorted(per_rank)]
        super().stopTest(test)


def run(mode, out, shard, count, names):
    if mode not in ("stock", "install"):
        raise SystemExit(f"dist_autograd_suite.py: unknown mode {mode!r}")
    os.environ[MODE] = mode
    _FORKSERVER.set_forkserver_preload([suite.__name__, rpc_utils.__name__, fixture.__name__])
    stats_dir = tempfile.mkdtemp(prefix="dist-suite-stats-")
    os.environ[STATS_DIR] = stats_dir
    tests = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    chosen = [t for t in _flatten(tests) if not names or t.id().rsplit(".", 1)[-1] in names]
    mine = unittest.TestSuite(t for i, t in enumerate(chosen) if i % count == shard)
    result = StatsResult(out, {"mode": mode, "total": mine.countTestCases(), "complete": False},
                         stats_dir)
    start = time.monotonic()
    mine.run(result)
    result.header.update(complete=True, seconds=round(time.monotonic() - start, 1))
    result.save()


def _flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _flatten(t)
        else:
            yield t


def merge(out, shards):
    merged = {"mode": None, "tests": {}, "complete": True, "seconds": 0.0, "processes": 0,
              "on_actors": 0, "stats": {"calls": 0, "distributed_parts": 0}, "total": 0}
    for path in shards:
        with open(path) as f:
            s = json.load(f)
        merged["mode"] = s["mode"]
        merged["tests"].update(s["tests"])
        merged["complete"] = merged["complete"] and s.get("complete", False)
        merged["seconds"] = max(merged["seconds"], s.get("seconds", 0.0))
        merged["total"] += s.get("total", 0)
        for key in ("processes", "on_actors"):
            merged[key] += s.get(key, 0)
        for key in merged["stats"]:
            merged["stats"][key] += s.get("stats", {}).get(key, 0)
    with open(out, "w") as f:
        json.dump(merged, f, indent=0, sort_keys=True)
    print(f"{merged['mode'] or 'no run'}: {len(merged['tests'])} of {merged['total']} tests, "
          f"{merged['processes']} processes, {merged['on_actors']} ran calls on actorgrad, "
          f"stats {merged['stats']}")


def table(stock_path, install_path):
    with open(stock_path) as f:
        stock = json.load(f)["tests"]
    with open(install_path) as f:
        install = json.load(f)["tests"]
    print("| test | stock | actorgrad | ranks with calls | calls per rank | passes per rank |")
    print("|---|---|---|---|---|---|")
    for test_id in sorted(set(stock) | set(install)):
        ours = install.get(test_id, {})
        ranks = ours.get("ranks", [])
        print(f"| {test_id.rsplit('.', 1)[-1]} ({test_id.split('.')[-2]}) "
              f"| {stock.get(test_id, {}).get('outcome', 'not run')} "
              f"| {ours.get('outcome', 'not run')} "
              f"| {sum(1 for c, _ in ranks if c > 0)}/{len(ranks)} "
              f"| {' '.join(str(c) for c, _ in ranks)} | {' '.join(str(p) for _, p in ranks)} |")


def _not_passed(tests):
    """The ids of `tests` (a result file's "tests") that did not pass."""
    return sorted(t for t, r in tests.items() if r["outcome"] not in PASSED)


def not_passed(install_path):
    with open(install_path) as f:
        tests = json.load(f)["tests"]
    print(" ".join(t.rsplit(".", 1)[-1] for t in _not_passed(tests)))


def check(stock_path, install_path):
    with open(stock_path) as f:
        stock = json.load(f)
    with open(install_path) as f:
        install = json.load(f)
    others = _not_passed(install["tests"])
    only_stock = [t for t in others
                  if stock["tests"].get(t, {}).get("outcome") in PASSED]
    passed = len(install["tests"]) - len(others)
    print(f"install: {passed} of {len(install['tests'])} passed with actorgrad; "
          f"of the {len(others)} others, {len(only_stock)} pass on stock; "
          f"{install['on_actors']} of {install['processes']} processes ran calls on actorgrad "
          f"({install['stats']['calls']} calls)")
    for t in only_stock:
        print(f"  passes on stock only: {t}: {install['tests'][t].get('error', '')}")
    ok = True
    for t in others:
        if t not in stock["tests"]:
            print(f"  not run on stock: {t}")
            ok = False
    for name, run in (("stock", stock), ("install", install)):
        if not run.get("complete", False):
            print(f"the {name} run did not finish")
            ok = False
    if install["stats"]["calls"] == 0:
        print("no call ran on actorgrad")
        ok = False
    return 0 if ok and not only_stock else 1


def main(argv):
    if len(argv) >= 5 and argv[0] == "run":
        run(argv[1], argv[2], int(argv[3]), int(argv[4]), set(argv[5:]))
        return 0
    if len(argv) >= 2 and argv[0] == "merge":
        merge(argv[1], argv[2:])
        return 0
    if len(argv) == 3 and argv[0] == "table":
        table(argv[1], argv[2])
        return 0
    if len(argv) == 2 and argv[0] == "not-passed":
        not_passed(argv[1])
        return 0
    if len(argv) == 3 and argv[0] == "check":
        return check(argv[1], argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
