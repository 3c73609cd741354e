#!/usr/bin/env python3
"""Where the instructions of the issue-20 targets that are counted per call
or per hop go: each such case under callgrind for the actor engine and for
what it is measured against, every function's exclusive count sorted into
components, and the functions that differ most.

    tools/bench/callgrind_breakdown.py BUILD_DIR OUT_TSV

BUILD_DIR holds bench/bench_chain_driver (a build with -g names source files
too; without, functions are sorted by their names alone). Output columns:
    case  kind  name  actor  other
kind "component" (instructions a unit, every component) or "function" (the
12 functions whose counts differ most); kind "unit" rows name the unit and
the engine compared ("other"). Standard library only; needs valgrind.
"""
import os
import re
import subprocess
import sys
import tempfile

# (case label, unit, [(sign, engine, case, n, iters)] for the actor, the
# same for what it is compared with, its label, units per run).
# Units: a call (ITERS calls a run), a nested call (ITERS x (depth + 1)),
# a hop (hops 2 minus pipeline 4: 64 nodes a pass, each a hop).
CASES = [
    ("sync CPU call, 2 nodes", "call", [(1, "actor", "chain_passthrough", 1, 200)],
     [(1, "sequential", "chain_passthrough", 1, 200)], "no engine", 200),
    ("root on sim:0, 2 nodes", "call", [(1, "actor", "sim_root", 2, 200)],
     [(1, "sequential", "sim_root", 2, 200)], "no engine", 200),
    ("backward_async, 2 nodes", "call", [(1, "actor", "async_chain_passthrough", 1, 200)],
     [(1, "sequential", "chain_passthrough", 1, 200)], "no engine", 200),
    ("nested call, depth 100", "call", [(1, "actor", "reentrant", 100, 20)],
     [(1, "sequential", "reentrant", 100, 20)], "no engine", 20 * 101),
    ("device hop", "hop", [(1, "actor", "hops", 2, 100), (-1, "actor", "pipeline", 4, 100)],
     [(1, "baseline", "hops", 2, 100), (-1, "baseline", "pipeline", 4, 100)],
     "baseline", 100 * 64),
]

# Each component: a pattern for the function's name (its argument list cut
# off), and one for its file. Library code inlined into the engine's
# functions (CAF's inbox, malloc, the waits) goes to the library by its file;
# the engine's own headers (device.h, ...) are inlined everywhere, so for the
# engine's components the name decides and the file only names functions
# that match no name.
LIBRARIES = [
    ("malloc and free", r"^(malloc|free|cfree|calloc|realloc|_int_\w+|malloc_consolidate|unlink_chunk|"
                        r"tcache\w*|arena_get2|operator new|operator delete)$", r"/malloc/"),
    ("sleeping and waking (futex, polls, yields)",
     r"__atomic_wait|__atomic_notify|futex|syscall|sched_yield|nanosleep|__waiter_pool|__platform_wait|asynccancel",
     r"atomic_wait\.h|atomic_timed_wait\.h|gthr-default\.h|/syscall"),
    ("mutexes", r"pthread_mutex|__lll_lock|__lll_unlock|pthread_cond", r"/nptl/pthread_(mutex|cond)"),
    ("CAF: mailbox, elements, scheduler", r"(^|\s)caf::", r"/include/caf/"),
]
ENGINE = [
    ("device streams and events", r"current_stream|has_streams|StreamGuard|stream_backend|plan_accumulation|"
                                  r"producer_stream|record_stream|wait_for_stream|PendingReads|"
                                  r"record_async_read|actorgrad::Event::|actorgrad::sim::|task_streams",
     r"/device/(sim|cuda)/|/device/stream|stream_sync|pending_reads"),
    ("engine: actors (runner, messages, mailboxes)",
     r"actorgrad::detail::(Runner|EngineActor|RecycledElement|post|run_on_fresh_stack|AsyncCoordinator|CoordinatorPool|"
     r"run_call|spawn_call|DeviceWorker|CallerMailbox|Doorbell|TaskContext|Caller)|CallerRunner|actorgrad::Engine::",
     r"/actors/"),
    # A gradient sent to another device's worker (SentValue, made by
    # ActorgradGraph::make_in_flight) is the graph task's, not the streams'.
    ("engine: the call and its graph task (arguments, dependencies, ready heap, buffers, sent gradients, hooks)",
     r"BasicGraphTask|GraphTaskBase|ReadyHeap|ReadyTask|NodeTable|InputBuffer|SentValue|evaluate|validate_outputs|call_node|"
     r"ActorgradGraph|HookSnapshot|CurrentGraphTask|scratch|Executor|make_grad|SpareEdge|RecyclingAllocator|"
     r"collect_|capture_outputs|run_final_callbacks|BackwardCall|\w+_edge_list|actorgrad::(grad|backward)$",
     r"/libengine/engine/|/libengine/autograd\.cpp"),
    ("benchmark harness", r"actorgrad::bench::", r"/bench/"),
    # The rest of actorgrad: its tensors, ops and the nodes they record.
    ("the graph's nodes and tensors", r"actorgrad::", r"/libengine/"),
]
OTHER = "other (libc, libstdc++)"


def bare_name(function):
    """`function` without its argument list and qualifiers: `ns::f<(x)1>`."""
    name = re.sub(r"(\s+const)?(\s*\[clone [^]]*\])*$", "", function.strip())
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                return name[:i]
    return name


def component(file, function):
    name = bare_name(function)
    for label, name_re, file_re in LIBRARIES:
        if re.search(name_re, name) or re.search(file_re, file):
            return label
    for label, name_re, _ in ENGINE:
        if re.search(name_re, name):
            return label
    for label, _, file_re in ENGINE:
        if re.search(file_re, file):
            return label
    return OTHER


def exclusive(out_file):
    """{(file, function): instructions} from callgrind_annotate, exclusive."""
    text = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=no", "--auto=no", out_file],
                          check=True, capture_output=True, text=True).stdout
    counts = {}
    for line in text.splitlines():
        m = re.match(r"^\s*([0-9,]+)\s+(?:\(\s*[0-9.]+%\)\s+)?(?!=>)(.*?)(\s+\[.*\])?$", line)
        if not m or "PROGRAM TOTALS" in line or ":" not in m.group(2):
            continue
        file, function = m.group(2).split(":", 1)
        function = re.sub(r"'\d+$", "", function)  # callgrind's recursion level
        key = (file, function)
        counts[key] = counts.get(key, 0) + int(m.group(1).replace(",", ""))
    return counts


def measure(driver, runs, workdir, cache):
    """Signed sum of the runs' exclusive counts."""
    total = {}
    for sign, engine, case, n, iters in runs:
        key = (engine, case, n, iters)
        if key not in cache:
            out = os.path.join(workdir, f"callgrind.{engine}.{case}.{n}.out")
            subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
                            driver, engine, case, str(n), str(iters)],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            cache[key] = exclusive(out)
        for k, v in cache[key].items():
            total[k] = total.get(k, 0) + sign * v
    return total


def summed(counts, key):
    """`counts` ({(file, function): instructions}) summed by key(file, function)."""
    by = {}
    for (file, function), v in counts.items():
        k = key(file, function)
        by[k] = by.get(k, 0) + v
    return by


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    driver = os.path.join(sys.argv[1], "bench", "bench_chain_driver")
    rows = [("case", "kind", "name", "actor", "other")]
    cache = {}
    with tempfile.TemporaryDirectory() as workdir:
        for label, unit, actor_runs, other_runs, other_label, units in CASES:
            a = measure(driver, actor_runs, workdir, cache)
            o = measure(driver, other_runs, workdir, cache)
            rows.append((label, "unit", unit, "actor", other_label))
            comp_a, comp_o = (summed(c, component) for c in (a, o))
            for c in sorted(set(comp_a) | set(comp_o), key=lambda c: -(comp_a.get(c, 0) - comp_o.get(c, 0))):
                rows.append((label, "component", c, f"{comp_a.get(c, 0) / units:.1f}", f"{comp_o.get(c, 0) / units:.1f}"))
            # Functions by name (a function's lines in several files summed).
            fa, fo = (summed(c, lambda _, function: function) for c in (a, o))
            top = sorted(set(fa) | set(fo), key=lambda f: -abs(fa.get(f, 0) - fo.get(f, 0)))[:12]
            for f in top:
                rows.append((label, "function", f, f"{fa.get(f, 0) / units:.1f}", f"{fo.get(f, 0) / units:.1f}"))
    with open(sys.argv[2], "w") as out:
        for r in rows:
            out.write("\t".join(r) + "\n")


if __name__ == "__main__":
    main()
