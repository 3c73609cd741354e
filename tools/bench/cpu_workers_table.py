#!/usr/bin/env python3
"""The table of a bench_cpu_workers run (its --benchmark_out JSON) for
RESULTS.md: issue #60's targets, 1 and 2 CPU workers side by side.

    tools/bench/cpu_workers_table.py bench_cpu_workers.json

Per case and engine: the least of the repetitions' minimum times of one
backward (us), the median of their medians (us), and the ratios of both to
the same case's 1-worker row and, for libtorch's cases, to the stock
engine's row; for the 2-worker rows of the cases with a `two_copies` row
(two copies of the graph run at once by two threads on 1 worker each: what
this machine gives two threads that share nothing, per graph), the ratio of
the minima to it, which says how much of the wall-time ratio is the engine's
and how much the machine's (and wide_dag's `actor_2w_timing_placed`, the
same without EngineConfig::cpu_keep_lanes). Then each target of the issue with the figure it is judged by
(the minima's ratio) and whether it is met, and the cache-line round trip
between two threads (host/cache_line_round_trip) over the repetitions, and
the 2-worker rows' nodes moved between threads from one call to the next.
"""
import json
import statistics
import sys

# case -> (row, against, at most): issue #60's targets.
TARGETS = [
    ("ensemble/16", "torch_actor_2w", "torch", 0.6),
    ("ensemble/16", "torch_actor_2w", "torch_actor_1w", 0.6),
    ("wide_dag/64x20", "actor_2w", "actor_1w", 0.6),
    ("chain_mul/1000", "actor_2w", "actor_1w", 1.05),
    ("mlp/4", "actor_2w", "actor_1w", 1.05),
    ("transformer/1", "torch_actor_2w", "torch_actor_1w", 1.05),
    ("mlp/4", "torch_actor_2w", "torch_actor_1w", 1.05),
    ("chain_passthrough/1000", "torch_actor_2w", "torch_actor_1w", 1.05),
    # Models: 2 workers never slower than the stock engine (their backward).
    ("transformer/1", "torch_actor_2w", "torch", 1.0),
    ("mlp/4", "torch_actor_2w", "torch", 1.0),
]


def load(benchmarks):
    """{case: {engine: (min us, median us, nodes)}} over the repetitions."""
    runs = {}
    for b in benchmarks:
        if b.get("run_type") != "iteration" or "best_us" not in b:
            continue
        case, _, engine = b["run_name"].removesuffix("/real_time").rpartition("/")
        runs.setdefault(case, {}).setdefault(engine, []).append(b)
    return {case: {e: (min(b["best_us"] for b in bs),
                       statistics.median(b["median_ns_per_iter"] / 1e3 for b in bs),
                       int(bs[0]["nodes"]))
                   for e, bs in engines.items()}
            for case, engines in runs.items()}


def main(path):
    with open(path) as f:
        benchmarks = json.load(f)["benchmarks"]
    rows = load(benchmarks)
    print("| case | nodes | engine | min µs | median µs | min / 1 worker | median / 1 worker "
          "| min / stock | median / stock | min / two copies |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for case, engines in rows.items():
        for e, (low, med, nodes) in engines.items():
            two = "_2w" in e
            one = (engines.get(e[:e.index("_2w")] + "_1w") if two else
                   engines.get("actor_1w", engines.get("torch_actor_1w"))
                   if e == "two_copies" else None)
            stock = engines.get("torch") if e.startswith("torch_actor") else None
            pair = engines.get("two_copies") if two else None
            cells = [f"{low / one[0]:.3f}" if one else "", f"{med / one[1]:.3f}" if one else "",
                     f"{low / stock[0]:.3f}" if stock else "",
                     f"{med / stock[1]:.3f}" if stock else "",
                     f"{low / pair[0]:.3f}" if pair else ""]
            print(f"| {case} | {nodes} | {e} | {low:,.1f} | {med:,.1f} | " + " | ".join(cells) + " |")
    print("\n| target | min ratio | median ratio | met (min) |\n|---|---:|---:|---|")
    for case, row, against, most in TARGETS:
        engines = rows.get(case, {})
        if row not in engines or against not in engines:
            print(f"| {case}: {row} ≤ {most}× {against} | – | – | not run |")
            continue
        low = engines[row][0] / engines[against][0]
        med = engines[row][1] / engines[against][1]
        print(f"| {case}: {row} ≤ {most}× {against} | {low:.3f}× | {med:.3f}× | "
              f"{'met' if low <= most else 'not met'} |")
    moved = {}
    for b in benchmarks:
        if b.get("run_type") == "iteration" and "moved_per_call" in b and "_2w" in b["run_name"]:
            moved.setdefault(b["run_name"].removesuffix("/real_time"), []).append(b["moved_per_call"])
    if moved:
        print("\nnodes run on another thread than in the call before, a call (median over the "
              "repetitions): " + "; ".join(f"{name} {statistics.median(m):.0f}"
                                           for name, m in moved.items()))
    trips = [b["round_trip_ns"] for b in benchmarks
             if b.get("run_type") == "iteration" and "round_trip_ns" in b]
    if trips:
        print(f"\ncache-line round trip between two threads: {min(trips):.0f} to "
              f"{max(trips):.0f} ns over {len(trips)} repetitions "
              f"(median {statistics.median(trips):.0f} ns)")


if __name__ == "__main__":
    main(sys.argv[1])
