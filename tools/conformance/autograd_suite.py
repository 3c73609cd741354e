"""PyTorch's own autograd tests (test/test_autograd.py of Debian's `pytorch`
source package, which imports test/autograd/) on torch's engine and on
actorgrad's; tools/conformance.sh runs it.

    autograd_suite.py run MODE SUITE_DIR OUT.json
        runs every test of SUITE_DIR/test_autograd.py in this process and
        writes each test id's outcome to OUT.json (rewritten after every
        test, so a run cut short by a timeout keeps what it ran). MODE:
        stock; install (actorgrad.torch.install()); install_torch_method
        (install(fast_backward=False)); preload (nothing here: the caller
        sets LD_PRELOAD to the preload library).
    autograd_suite.py compare STOCK.json MODE=OUT.json...
        prints per mode how many tests passed on both, failed on both, only
        on stock, only with actorgrad, and the tests that pass on stock
        only; exits 1 if there is any, if a run is incomplete, or if a mode
        that installs actorgrad ran no call on it (then it tested nothing).

A test passes when unittest reports success or an expected failure; a
failure, an error or an unexpected success fails it; a skip is neither. A
test missing from a run (cut short) did not pass.
"""

import json
import os
import sys
import time
import traceback
import unittest

PASSED = ("passed", "expected failure")


class RecordingResult(unittest.TestResult):
    """Records every test's outcome (and the last line of its error) in
    `outcomes`, writing them to `path` after each test."""

    def __init__(self, path, header):
        super().__init__()
        self.path = path
        self.header = header
        self.outcomes = {}

    def _record(self, test, outcome, err=None, reason=None):
        entry = {"outcome": outcome}
        if reason is not None:
            entry["reason"] = reason
        if err is not None:
            lines = "".join(traceback.format_exception(*err)).strip().splitlines()
            entry["error"] = lines[-1] if lines else ""
        previous = self.outcomes.get(test.id())
        # A failing subtest fails its test; success does not undo that.
        if previous is None or previous["outcome"] in PASSED:
            self.outcomes[test.id()] = entry

    def stopTest(self, test):
        super().stopTest(test)
        self.save()

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(dict(self.header, tests=self.outcomes), f, indent=0, sort_keys=True)
        os.replace(tmp, self.path)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "passed")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "failed", err)

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "error", err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skipped", reason=reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._record(test, "expected failure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record(test, "unexpected success")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._record(test, "failed" if failed else "error", err)


def install(mode):
    """Puts actorgrad in place for `mode`; returns a function giving its
    stats afterwards (None for stock and preload)."""
    if mode in ("stock", "preload"):
        return lambda: None
    if mode not in ("install", "install_torch_method"):
        raise SystemExit(f"autograd_suite.py: unknown mode {mode!r}")
    import actorgrad.torch
    actorgrad.torch.install(fast_backward=mode == "install")
    return actorgrad.torch.stats


def run(mode, suite_dir, out):
    # common_utils parses the command line when imported: give it none.
    sys.argv = [os.path.join(suite_dir, "test_autograd.py")]
    sys.path.insert(0, suite_dir)
    stats = install(mode)
    import test_autograd  # noqa: E402  (the suite: imported after install)
    tests = unittest.defaultTestLoader.loadTestsFromModule(test_autograd)
    result = RecordingResult(out, {"mode": mode, "total": tests.countTestCases(), "complete": False})
    start = time.monotonic()
    tests.run(result)
    result.header.update(complete=True, seconds=round(time.monotonic() - start, 1), stats=stats())
    result.save()


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return {"tests": {}, "complete": False, "error": str(e)}


def compare(stock_path, runs):
    stock = load(stock_path)
    ok = stock.get("complete", False)
    if not ok:
        print(f"stock run incomplete ({stock_path})")
    print(f"{'mode':<22} {'passed both':>11} {'failed both':>11} {'only stock':>10} "
          f"{'only actorgrad':>14} {'skipped':>7}  actorgrad calls")
    only_stock_lines = []
    for mode, path in runs:
        ours = load(path)
        ids = set(stock["tests"]) | set(ours["tests"])
        counts = {"both": 0, "neither": 0, "stock": 0, "ours": 0, "skipped": 0}
        for test in sorted(ids):
            a = stock["tests"].get(test, {}).get("outcome")
            b = ours["tests"].get(test, {}).get("outcome")
            if a == "skipped" and b == "skipped":
                counts["skipped"] += 1
            elif a in PASSED and b in PASSED:
                counts["both"] += 1
            elif a in PASSED:
                counts["stock"] += 1
                error = ours["tests"].get(test, {}).get("error", b or "not run")
                only_stock_lines.append(f"  {mode}: {test}: {error}")
            elif b in PASSED:
                counts["ours"] += 1
            else:
                counts["neither"] += 1
        stats = ours.get("stats") or {}
        calls = stats.get("calls", "-") if stats else "-"
        note = "" if ours.get("complete") else "  (incomplete run)"
        if calls == 0:
            note += "  (no call ran on actorgrad)"
        ok = ok and ours.get("complete", False) and counts["stock"] == 0 and calls != 0
        print(f"{mode:<22} {counts['both']:>11} {counts['neither']:>11} {counts['stock']:>10} "
              f"{counts['ours']:>14} {counts['skipped']:>7}  {calls}{note}")
    if only_stock_lines:
        print("passed on stock only:")
        print("\n".join(only_stock_lines))
    return 0 if ok else 1


def main(argv):
    if len(argv) == 4 and argv[0] == "run":
        run(*argv[1:])
        return 0
    if len(argv) >= 2 and argv[0] == "compare":
        return compare(argv[1], [tuple(a.split("=", 1)) for a in argv[2:]])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
