#!/usr/bin/env python3
"""Inclusive cost of libtorch's Node::apply in a callgrind output file.

    tools/bench/callgrind_apply.py CALLGRIND_OUT [REGEX]

Prints "total apply_inclusive apply_calls": the file's total instructions,
the summed inclusive cost of every call into a function whose (demangled)
name matches REGEX (default: `torch::autograd::...::apply(std::vector<at::Tensor...`,
libtorch's nodes: the generated *Backward nodes, AccumulateGrad, CppNode of
custom functions; not the bridge's own trampoline node, whose apply runs the
whole call on the actor engine and is engine cost) from a caller that does
not match it, and
the number of those calls. Calls from one apply into another (a node calling
a node) are inside the outer call's inclusive cost already, so they are
skipped; a node whose apply re-enters the engine would count its inner
nodes twice (none of the benchmark's cases does).

The engine's own instructions are then total - apply_inclusive: scheduling,
input buffers, output validation, thread-local state, hooks, and (stock
engine) Node::operator()'s profiler check around each apply.
"""
import re
import sys

DEFAULT = r"^torch::autograd::.*::apply\(std::vector<at::Tensor"


def parse(path, pattern):
    names = {}  # compressed id -> name, for fn= and cfn=
    rx = re.compile(pattern)
    total = None
    summary = None
    caller = ""
    callee = None
    pending_call = False
    inclusive = 0
    calls = 0

    def name_of(spec):
        # "(12) name", "(12)", or a plain name (no compression).
        m = re.match(r"\((\d+)\)\s*(.*)", spec)
        if not m:
            return spec
        if m.group(2):
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), "")

    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if pending_call:
                # The line after calls=: position(s) then the inclusive cost.
                pending_call = False
                parts = line.split()
                if rx.search(callee) and not rx.search(caller):
                    inclusive += int(parts[-1]) if len(parts) > 1 else 0
                continue
            if line.startswith("fn="):
                caller = name_of(line[3:].strip())
            elif line.startswith("cfn="):
                callee = name_of(line[4:].strip())
            elif line.startswith("calls="):
                pending_call = True
                if rx.search(callee) and not rx.search(caller):
                    calls += int(line[6:].split()[0])
            elif line.startswith("totals:"):
                total = int(line.split()[1])
            elif line.startswith("summary:"):
                summary = int(line.split()[1])
    return (total if total is not None else summary), inclusive, calls


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    total, inclusive, calls = parse(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else DEFAULT)
    if total is None:
        sys.exit(f"{sys.argv[1]}: no totals:/summary: line (not a callgrind output file?)")
    print(total, inclusive, calls)


if __name__ == "__main__":
    main()
