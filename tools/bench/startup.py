#!/usr/bin/env python3
"""Start-up cost of a command: runs it N times (default 20) and prints the
median wall time and the median peak RSS (bench/HISTORY.md, "CUDA loaded only
when used"). The RSS is read by /usr/bin/time: a child of this interpreter
would count the interpreter's pages it had before exec in its peak.

    tools/bench/startup.py [-n N] -- COMMAND ARGS...
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20, help="runs (default 20)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")
    walls, rss = [], []
    with tempfile.NamedTemporaryFile("r") as out:
        for _ in range(args.n):
            start = time.perf_counter()
            status = subprocess.call(["/usr/bin/time", "-o", out.name, "-f", "%M"] + command,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            walls.append((time.perf_counter() - start) * 1e3)
            if status != 0:
                sys.exit(f"{' '.join(command)}: exit status {status}")
            out.seek(0)
            rss.append(int(out.read().split()[-1]) / 1024)
    print(f"{' '.join(command)}: wall median {statistics.median(walls):.1f} ms "
          f"(min {min(walls):.1f}, max {max(walls):.1f}), peak RSS median "
          f"{statistics.median(rss):.1f} MB, {args.n} runs")


if __name__ == "__main__":
    main()
