#!/usr/bin/env python3
"""The table of a bench_cuda run (its --benchmark_out JSON) for RESULTS.md.

    tools/bench/cuda_table.py bench_cuda.json

Per case and engine: the least of the repetitions' minimum times of one
backward (us), the median of their medians, and the overhead over the
sequential bound per node (us); on actor rows, the actor's overhead over the
baseline's.
"""
import json
import statistics
import sys


def main(path):
    runs = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") != "iteration" or "us" not in b:
            continue
        case, _, engine = b["run_name"].rpartition("/iterations:")[0].rpartition("/")
        runs.setdefault(case, {}).setdefault(engine, []).append(b)
    print("| case | nodes | engine | min µs | median µs | overhead µs/node | actor / baseline overhead |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for case, engines in runs.items():
        best = {e: min(b["us"] for b in bs) for e, bs in engines.items()}
        nodes = int(next(iter(engines.values()))[0]["nodes"])
        over = {e: (best[e] - best["sequential"]) / nodes for e in best if e != "sequential"}
        for e, bs in engines.items():
            median = statistics.median(b["median_ns_per_iter"] / 1e3 for b in bs)
            ov = f"{over[e]:.2f}" if e in over else "-"
            ratio = f"{over['actor'] / over['baseline']:.2f}" if e == "actor" and over["baseline"] > 0 else "-"
            print(f"| {case} | {nodes} | {e} | {best[e]:,.1f} | {median:,.1f} | {ov} | {ratio} |")


if __name__ == "__main__":
    main(sys.argv[1])
