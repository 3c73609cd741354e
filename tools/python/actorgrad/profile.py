"""Runs a PyTorch script with its backward passes on actorgrad and writes
the message-flow report of them, as `python3 -m cProfile` profiles a script:

    python3 -m actorgrad.profile [--html OUT.html] [--json OUT.json]
                                 [--summary] [--devices sim:2] script.py [args...]

The options are recognized before or after the script's path, among its own
arguments; everything after `--` goes to the script unread. Without
--html/--json the summary is printed.
"""

import argparse
import os
import runpy
import sys

from . import torch as actor_torch

OPTIONS = {"--html": 1, "--json": 1, "--devices": 1, "--summary": 0}


def _split(argv):
    """(our options, script, script args); see the module's doc."""
    ours, rest, script = [], [], None
    i = 0
    while i < len(argv):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        if arg == "--" and script is not None:
            rest.extend(argv[i + 1:])
            break
        if arg in ("-h", "--help") and script is None:
            ours.append(arg)
        elif name in OPTIONS:
            n = 0 if "=" in arg else OPTIONS[name]
            ours.extend(argv[i:i + 1 + n])
            i += n
        elif script is None:
            script = arg
        else:
            rest.append(arg)
        i += 1
    return ours, script, rest


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ours, script, script_args = _split(argv)
    parser = argparse.ArgumentParser(prog="python3 -m actorgrad.profile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--html", help="write the HTML report here (%%r: rank, %%p: pid)")
    parser.add_argument("--json", help="write the Chrome trace (Perfetto) here (%%r: rank, %%p: pid)")
    parser.add_argument("--summary", action="store_true", help="print the text summary")
    parser.add_argument("--devices", default="", help="devices besides the CPU (sim:2)")
    opts = parser.parse_args(ours)
    if script is None:
        parser.error("no script to run")
    if not os.path.isfile(script):
        parser.error(f"{script}: no such file")
    actor_torch.install(devices=opts.devices)
    sys.argv = [script] + script_args
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        with actor_torch.profile() as p:
            runpy.run_path(script, run_name="__main__")
    finally:
        actor_torch.uninstall()
    if opts.html:
        p.save_html(opts.html)
    if opts.json:
        p.save(opts.json)
    if opts.summary or not (opts.html or opts.json):
        print(p.summary())


if __name__ == "__main__":
    main()
