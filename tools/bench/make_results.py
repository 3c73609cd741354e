#!/usr/bin/env python3
"""Turns the benchmark outputs in bench/results/ into bench/RESULTS.md and
bench/overhead_per_node.svg (standard library only: the SVG is written by hand).

Inputs (any may be missing): bench_engines.json (Google Benchmark JSON),
callgrind_chain.tsv (tools/bench/callgrind_chain.sh), memory.tsv; with
--before, the same files from an earlier tree measured in the same run, which
add before/after tables, the issue-20 targets (met or not, with the figure)
and the earlier overhead to the plot.
The hand-recorded tail of an existing RESULTS.md (from the heading
HAND_RECORDED on: the current figures no run here measures) is kept below
the generated part; earlier figures live in bench/HISTORY.md.
"""
import argparse
import csv
import datetime
import json
import math
import os
import platform
import statistics
import subprocess

from callgrind_breakdown import bare_name

BOUND = {"torch": "torch_seq"}
ENGINE_ORDER = ["sequential", "torch_seq", "reference", "baseline", "actor", "torch"]
HAND_RECORDED = "## Further measurements"
# The page's title and what it holds; earlier figures go to bench/HISTORY.md by hand.
PAGE_HEAD = ["# actorgrad engine benchmarks: the current figures", "",
             "This page holds the figures that describe the code as it is: the last",
             "regenerated run of the benchmark suite (`tools/bench/run_benchmarks.sh`,",
             "which writes this page through `tools/bench/make_results.py`; its command,",
             "machine and date are just below) and, after it, the latest hand-recorded",
             "measurement of each thing that run does not cover, each with its command.",
             "Every earlier figure (each change's own measurement, with the figures of",
             "its day) is in [HISTORY.md](HISTORY.md), verbatim;",
             "regenerating this page keeps everything from the heading \"Further",
             "measurements\" on.", ""]
REENTRANT_NOTE = ("`reentrant`, N = 100: a node whose backward runs a nested backward on a fresh small "
                  "graph, 100 levels deep (bench/common/reentrant.h); 101 backward calls of 3 nodes each "
                  "per pass, so instructions (or ns) per backward call = 3 x per node. Past depth 60 "
                  "the actor engine runs the nested call on a fresh stack of its thread, the baseline "
                  "hands it to its reentrant pool's thread (PyTorch's design).")
DEVICES_NOTE = ("`pipeline` and `branches`, N = 4: the multi-device graphs of the wall-time tables below on "
                "4 sim devices, with nodes that do no work, so what is counted is each engine's cost of running "
                "nodes on its device threads (all threads are counted). `hops`, N = 2: 64 such nodes dealt "
                "round-robin over 2 sim devices, so every gradient crosses devices; hops minus pipeline, per node, "
                "is the cost of a device hop.")
BEFORE_SUFFIX = " (before)"
COLORS = {"reference": "#888888", "baseline": "#d62728", "actor": "#1f77b4", "torch": "#2ca02c"}


def bound_of(engine):
    return BOUND.get(engine, "sequential")


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
    return model, os.cpu_count(), platform.platform(), " ".join(load)


def fmt(x, nd=0):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:,.{nd}f}"


def callgrind_tables(rows):
    """instructions per node and overhead per node, by (case, n) then engine."""
    data = {}
    for r in rows:
        data.setdefault((r["case"], int(r["n"])), {})[r["engine"]] = float(r["instructions_per_node"])
    out = ["| case | N | " + " | ".join(f"{e} instr/node" for e in ENGINE_ORDER) +
           " | overhead instr/node: reference | baseline | actor | torch | actor/baseline | actor/torch |",
           "|---|---:|" + "---:|" * (len(ENGINE_ORDER) + 6)]
    series = {}
    for (case, n), row in sorted(data.items()):
        ov = {}
        for e in ("reference", "baseline", "actor", "torch"):
            if e in row and bound_of(e) in row:
                ov[e] = row[e] - row[bound_of(e)]
                if case == "chain_passthrough" and n > 1:  # N = 1 is the per-call case
                    series.setdefault(e, []).append((n, ov[e]))
        ratio_b = ov["actor"] / ov["baseline"] if "actor" in ov and ov.get("baseline") else None
        ratio_t = ov["actor"] / ov["torch"] if "actor" in ov and ov.get("torch") else None
        out.append(f"| {case} | {n} | " + " | ".join(fmt(row.get(e)) for e in ENGINE_ORDER) + " | " +
                   " | ".join(fmt(ov.get(e)) for e in ("reference", "baseline", "actor", "torch")) +
                   f" | {fmt(ratio_b, 2)} | {fmt(ratio_t, 2)} |")
    return out, series


DEVICE_COUNTERS = {"makespan_us": 1, "makespan_median_us": 1, "makespan_over_cp": 3,
                   "makespan_over_bound": 3, "median_over_bound": 3, "makespan_over_threads": 3}


def device_summary(runs):
    """A multi-device case over its repetitions: each counter as the median
    of the repetitions, with their range in brackets when there are several."""
    reps = [b for b in runs if b.get("run_type", "iteration") == "iteration"]
    out = {"nodes": reps[0].get("nodes"), "cp_us": reps[0].get("cp_us")}
    for k, nd in DEVICE_COUNTERS.items():
        vals = sorted(b[k] for b in reps if k in b)
        if not vals:
            out[k] = "–"
            continue
        out[k] = fmt(statistics.median(vals), nd) + (f" ({fmt(vals[0], nd)}–{fmt(vals[-1], nd)})" if len(vals) > 1 else "")
    return out


def bench_tables(js):
    singles, devices = singles_index(js), devices_index(js)
    conc = [(b["name"], b) for b in js.get("benchmarks", [])
            if b["name"].startswith("concurrent/") and b.get("run_type") != "aggregate"]
    out = ["| case | N | nodes | " + " | ".join(f"{e} ns/node" for e in ENGINE_ORDER) +
           " | overhead ns/node: reference | baseline | actor | torch | actor/baseline | actor/torch |",
           "|---|---:|---:|" + "---:|" * (len(ENGINE_ORDER) + 6)]
    series = {}
    for (case, n), row in sorted(singles.items()):
        ns = {e: row[e]["ns_per_node"] for e in row if "ns_per_node" in row[e]}
        nodes = next(iter(row.values())).get("nodes")
        ov = {e: ns[e] - ns[bound_of(e)] for e in ("reference", "baseline", "actor", "torch")
              if e in ns and bound_of(e) in ns}
        if case == "chain_passthrough" and n > 1:  # N = 1 is the per-call case
            for e, v in ov.items():
                series.setdefault(e, []).append((n, v))
        rb = ov["actor"] / ov["baseline"] if "actor" in ov and ov.get("baseline") else None
        rt = ov["actor"] / ov["torch"] if "actor" in ov and ov.get("torch") else None
        out.append(f"| {case} | {n} | {fmt(nodes)} | " + " | ".join(fmt(ns.get(e), 1) for e in ENGINE_ORDER) +
                   " | " + " | ".join(fmt(ov.get(e), 1) for e in ("reference", "baseline", "actor", "torch")) +
                   f" | {fmt(rb, 2)} | {fmt(rt, 2)} |")
    dev = ["| pattern | devices | busy/node | engine | nodes | makespan µs: min | median | critical path µs | "
           "min / cp | min / bound | median / bound | min / threads' best |",
           "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for parts, runs in devices.items():
        pattern, d, us, eng = parts
        b = device_summary(runs)
        dev.append(f"| {pattern} | {d.replace('dev', '')} | {us.replace('us', ' µs')} | {eng} | {fmt(b.get('nodes'))} | "
                   f"{b['makespan_us']} | {b['makespan_median_us']} | {fmt(b.get('cp_us'), 1)} | "
                   f"{b['makespan_over_cp']} | {b['makespan_over_bound']} | {b['median_over_bound']} | "
                   f"{b['makespan_over_threads']} |")
    cc = ["| benchmark | threads | nodes/s (all threads) | ns per node (wall / all nodes) |", "|---|---:|---:|---:|"]
    for name, b in conc:
        th = name.rpartition("/threads:")[2] if "/threads:" in name else "1"
        base = "/".join(p for p in name.split("/") if not p.startswith(("min_time", "real_time", "threads")))
        rate = b.get("nodes_per_s")
        cc.append(f"| {base} | {th or 1} | {fmt(rate)} | {fmt(1e9 / rate if rate else None, 1)} |")
    return out, series, dev, cc


def cg_index(rows):
    """callgrind rows by (case, n), then engine: (instructions per node, nodes)."""
    out = {}
    for r in rows:
        out.setdefault((r["case"], int(r["n"])), {})[r["engine"]] = (float(r["instructions_per_node"]),
                                                                     int(r["nodes"]))
    return out


def singles_index(js):
    """bench_engines' single-device cases by (case, n), then engine: the benchmark."""
    out = {}
    for b in js.get("benchmarks", []):
        parts = b["name"].split("/")
        if parts[0] == "single" and b.get("run_type") != "aggregate":
            out.setdefault((parts[1], int(parts[2])), {})[parts[3]] = b
    return out


def devices_index(js):
    """bench_engines' multi-device cases by (pattern, devices, us, engine): the repetitions."""
    out = {}
    for b in js.get("benchmarks", []):
        parts = b["name"].split("/")
        if parts[0] == "devices" and b.get("run_type", "iteration") == "iteration":
            out.setdefault(tuple(parts[1:5]), []).append(b)
    return out


def median_of(runs, key):
    vals = [b[key] for b in runs if key in b]
    return statistics.median(vals) if vals else None


def extra_per_node(mem, peak, before):
    """memory.tsv by (engine, nodes): bytes per node the backward adds, column
    `peak` less column `before`, over the rows that have both."""
    return {(r["engine"], int(r["nodes"])): (float(r[peak]) - float(r[before])) / float(r["nodes"])
            for r in mem if r.get(peak) and r.get(before)}


def extra_peak_per_node(mem):
    """Bytes per node the backward adds to the peak resident set."""
    return extra_per_node(mem, "peak_rss_after_backward_bytes", "peak_rss_graph_bytes")


def extra_heap_per_node(mem):
    """Bytes per node the backward adds to the heap's live bytes at their peak
    (rows measured by bench_chain_memory)."""
    return extra_per_node(mem, "heap_peak_backward_bytes", "heap_live_graph_bytes")


def arrow(before, after, nd=0):
    return f"{fmt(before, nd)} → {fmt(after, nd)}"


def change(before, after):
    if before is None or after is None or not before:
        return "–"
    return f"{(after - before) / before * 100:+.1f}%"


CMP_ENGINES = ("reference", "baseline", "actor")


def before_after_tables(before, after):
    """Every case measured in both trees: each engine's figure before → after."""
    b_cg, a_cg = cg_index(before["cg"]), cg_index(after["cg"])
    out = ["### Instructions per node", "",
           "| case | N | sequential | " + " | ".join(f"{e} before → after" for e in CMP_ENGINES) +
           " | actor overhead before → after | change |",
           "|---|---:|---:|" + "---:|" * (len(CMP_ENGINES) + 2)]
    for key in sorted(set(b_cg) & set(a_cg)):
        b, a = b_cg[key], a_cg[key]
        get = lambda row, e: row[e][0] if e in row else None
        ov = lambda row: get(row, "actor") - get(row, "sequential") \
            if "actor" in row and "sequential" in row else None
        out.append(f"| {key[0]} | {key[1]} | {fmt(get(a, 'sequential'))} | " +
                   " | ".join(arrow(get(b, e), get(a, e)) for e in CMP_ENGINES) +
                   f" | {arrow(ov(b), ov(a))} | {change(get(b, 'actor'), get(a, 'actor'))} |")
    b_s, a_s = singles_index(before["js"]), singles_index(after["js"])
    if b_s and a_s:
        out += ["", "### Wall time, single device (ns per node, Google Benchmark minimum)", "",
                "| case | N | sequential before → after | " +
                " | ".join(f"{e} before → after" for e in CMP_ENGINES) + " | actor change |",
                "|---|---:|---:|" + "---:|" * (len(CMP_ENGINES) + 1)]
        for key in sorted(set(b_s) & set(a_s)):
            ns = lambda row, e: row[e].get("ns_per_node") if e in row else None
            b, a = b_s[key], a_s[key]
            out.append(f"| {key[0]} | {key[1]} | {arrow(ns(b, 'sequential'), ns(a, 'sequential'), 1)} | " +
                       " | ".join(arrow(ns(b, e), ns(a, e), 1) for e in CMP_ENGINES) +
                       f" | {change(ns(b, 'actor'), ns(a, 'actor'))} |")
    b_d, a_d = devices_index(before["js"]), devices_index(after["js"])
    if b_d and a_d:
        out += ["", "### Wall time, simulated devices (medians of the repetitions)", "",
                "| pattern | devices | busy/node | engine | median makespan µs before → after | "
                "min / threads' best before → after |", "|---|---:|---:|---|---:|---:|"]
        for key in a_d:
            if key in b_d and key[3] in CMP_ENGINES:
                b, a = b_d[key], a_d[key]
                out.append(f"| {key[0]} | {key[1].replace('dev', '')} | {key[2].replace('us', ' µs')} | {key[3]} | "
                           f"{arrow(median_of(b, 'makespan_median_us'), median_of(a, 'makespan_median_us'), 1)} | "
                           f"{arrow(median_of(b, 'makespan_over_threads'), median_of(a, 'makespan_over_threads'), 3)} |")
    b_m, a_m = extra_peak_per_node(before["mem"]), extra_peak_per_node(after["mem"])
    b_h, a_h = extra_heap_per_node(before["mem"]), extra_heap_per_node(after["mem"])
    if b_m and a_m:
        out += ["", "### Peak memory of one backward (bytes per node the backward adds to the peak)", "",
                "| engine | nodes | heap before → after | resident set before → after |",
                "|---|---:|---:|---:|"]
        for key in sorted(set(b_m) & set(a_m), key=lambda k: (k[1], k[0])):
            out.append(f"| {key[0]} | {key[1]} | {arrow(b_h.get(key), a_h.get(key), 3)} | "
                       f"{arrow(b_m[key], a_m[key], 1)} |")
    return out + [""]


SINGLE_DEVICE_CASES = ("chain_passthrough", "chain_mul", "fan", "mlp", "random_dag", "reentrant")


def targets(res):
    """The targets of issue 20 (and the torch bridge's) on one tree's results:
    (target, figure, met) rows; met is None where the run lacks the case."""
    cg, singles = cg_index(res["cg"]), singles_index(res["js"])
    devices, mem = devices_index(res["js"]), extra_peak_per_node(res["mem"])
    heap = extra_heap_per_node(res["mem"])
    rows = []

    def per_node(case, n, e):
        return cg.get((case, n), {}).get(e, (None, 0))[0]

    def per_call(case, n, e):
        v, nodes = cg.get((case, n), {}).get(e, (None, 0))
        return v * nodes if v is not None else None

    def overhead(case, n, e):
        v, s = per_node(case, n, e), per_node(case, n, "sequential")
        return v - s if v is not None and s is not None else None

    def check(name, value, limit, nd=0, unit="", next_to=None):
        """next_to: (label, figure) shown with the figure: the floor no engine
        gets below on this machine (the nodes alone, plain threads), or
        PyTorch's design's figure (the baseline), so that a target below
        what the machine or that design allows reads as such."""
        if value is None:
            rows.append((name, "–", None))
            return
        fig = f"{fmt(value, nd)}{unit}"
        if next_to and next_to[1] is not None:
            fig += f" ({next_to[0]}: {fmt(next_to[1], nd)}{unit})"
        rows.append((name, fig, value <= limit))

    def ratio(a, b):
        return a / b if a and b else None

    check("chain_passthrough 1000: actor overhead ≤ 400 instr/node", overhead("chain_passthrough", 1000, "actor"), 400)
    check("chain_passthrough 1000: reference overhead ≤ 300 instr/node",
          overhead("chain_passthrough", 1000, "reference"), 300)
    # The per-node cases; the per-call ones (N = 1) have targets of their own below.
    ratios = {k: row["actor"][0] / row["baseline"][0] for k, row in cg.items()
              if k[0] in SINGLE_DEVICE_CASES and k[1] > 1 and "actor" in row and "baseline" in row}
    if ratios:
        worst = max(ratios, key=ratios.get)
        rows.append(("every single-device case (N > 1): actor < baseline (the closest, actor/baseline)",
                     f"{ratios[worst]:.3f}× ({worst[0]} {worst[1]})", ratios[worst] < 1))
    for case, n in (("chain_mul", 1000), ("mlp", 4)):
        check(f"{case} {n}: actor ≤ 1.5× the sequential bound",
              ratio(per_node(case, n, "actor"), per_node(case, n, "sequential")), 1.5, 3, "×")

    def scaling(e):
        lo = singles.get(("chain_passthrough", 1000), {}).get(e, {}).get("ns_per_node")
        hi = singles.get(("chain_passthrough", 1000000), {}).get(e, {}).get("ns_per_node")
        return ratio(hi, lo)

    for e in ("actor", "reference"):
        check(f"{e}: wall ns/node at 10^6 ≤ 1.5× at 10^3 (pass-through chain)", scaling(e), 1.5, 2, "×",
              ("the sequential bound", scaling("sequential")))
    check("sync CPU call, 2 nodes: ≤ 1,500 instructions", per_call("chain_passthrough", 1, "actor"), 1500,
          next_to=("no engine", per_call("chain_passthrough", 1, "sequential")))
    check("root on sim:0, 2 nodes: ≤ 5,000 instructions", per_call("sim_root", 2, "actor"), 5000,
          next_to=("baseline", per_call("sim_root", 2, "baseline")))
    # A call whose nodes run on another thread cannot return before that
    # thread wakes: `threads` hands sim_root's nodes to one plain thread
    # (bench/common/parallel_plan.h) and waits, with no engine at all.
    handoff = singles.get(("sim_root", 2), {}).get("threads", {}).get("median_ns_per_iter")
    for case, n, label in (("sim_root", 2, "root on sim:0, 2 nodes"),
                           ("async_chain_passthrough", 1, "backward_async, 2 nodes")):
        med = singles.get((case, n), {}).get("actor", {}).get("median_ns_per_iter")
        check(f"{label}: ≤ 10 µs (median call)", med / 1e3 if med else None, 10, 1, " µs",
              ("plain threads", handoff / 1e3 if handoff else None))
    check("backward_async, 2 nodes: ≤ 5,000 instructions", per_call("async_chain_passthrough", 1, "actor"), 5000)
    # Past depth 60 the actor engine's nested call runs on a fresh stack (Note
    # [A fresh stack past the depth limit]), the baseline's on a pool thread;
    # at depth 1 it runs on the caller's: both are shown, the first decides.
    for depth, where in ((100, "40 of its 101 calls past the depth limit"), (1, "on the caller's thread")):
        nested = {e: overhead("reentrant", depth, e) for e in ("actor", "baseline")}
        check(f"one nested call (reentrant {depth}, {where}: overhead per call of 3 nodes) ≤ 5,000 instructions",
              nested["actor"] * 3 if nested["actor"] is not None else None, 5000,
              next_to=("baseline", nested["baseline"] * 3 if nested["baseline"] is not None else None))
    hop = {e: per_node("hops", 2, e) - per_node("pipeline", 4, e)
           for e in ("actor", "baseline") if per_node("hops", 2, e) and per_node("pipeline", 4, e)}
    if "baseline" in hop:
        rows.append(("device hop (hops 2 − pipeline 4, instr/node) ≤ the baseline's",
                     f"{fmt(hop.get('actor'))} (baseline {fmt(hop['baseline'])})",
                     hop["actor"] <= hop["baseline"] if "actor" in hop else None))
    for d in (2, 4):
        for us, limit in ((1, 1.15), (10, 1.05)):
            runs = devices.get(("pipeline", f"{d}dev", f"{us}us", "actor"), [])
            check(f"pipeline, {d} devices, {us} µs nodes: ≤ {limit}× plain threads",
                  median_of(runs, "makespan_over_threads"), limit, 3, "×")
    # The heap's live bytes decide: the resident set moves in heap growth
    # steps from run to run (Note [Counting the heap, not the resident set]).
    a, b = heap.get(("actor", 1000001)), heap.get(("baseline", 1000001))
    a_rss, b_rss = mem.get(("actor", 1000001)), mem.get(("baseline", 1000001))
    rows.append(("peak memory, 10^6 chain: actor ≤ baseline (heap bytes/node the backward adds)",
                 f"{fmt(a, 4)} (baseline {fmt(b, 4)}; resident set {fmt(a_rss, 1)}, baseline {fmt(b_rss, 1)})",
                 None if a is None or b is None else a <= b))
    # The torch bridge's targets (issue 18), kept in view: the fan went past
    # its target unnoticed once, between two runs of callgrind_torch.sh.
    bridge = {r["case"]: float(r["engine_per_node"]) for r in res["torch"] if r["engine"] == "torch_actor"}
    check("torch bridge, add chain of 1000: ≤ 1,000 engine instr/node", bridge.get("chain_passthrough"), 1000, 1)
    check("torch bridge, fan of 1000: ≤ 1,500 engine instr/node", bridge.get("fan"), 1500, 1)
    return rows


def targets_table(before, after):
    """The issue-20 targets, met or not on the after tree, with both trees' figures."""
    after_rows = targets(after)
    before_rows = {name: fig for name, fig, _ in targets(before)} if before else {}
    met = {True: "met", False: "not met", None: "–"}
    out = ["| target | before | after | after: met |", "|---|---:|---:|---|"]
    for name, fig, ok in after_rows:
        out.append(f"| {name} | {before_rows.get(name, '–')} | {fig} | {met[ok]} |")
    return out + [""]


def svg_plot(panels, path):
    """panels: list of (title, ylabel, {engine: [(n, value)]}); log-log axes."""
    W, H, pad_l, pad_b, pad_t, pad_r = 460, 340, 70, 50, 30, 20
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W * len(panels)}" height="{H}" '
           'font-family="sans-serif" font-size="11">',
           f'<rect width="{W * len(panels)}" height="{H}" fill="white"/>']
    for k, (title, ylabel, series) in enumerate(panels):
        ox = k * W
        pts = [(n, v) for s in series.values() for n, v in s if v > 0]
        if not pts:
            svg.append(f'<text x="{ox + 40}" y="{H / 2}">{title}: no data</text>')
            continue
        xs = [math.log10(n) for n, _ in pts]
        ys = [math.log10(v) for _, v in pts]
        x0, x1 = math.floor(min(xs)), math.ceil(max(xs))
        y0, y1 = math.floor(min(ys)), math.ceil(max(ys))
        if x1 == x0: x1 += 1
        if y1 == y0: y1 += 1
        def X(n): return ox + pad_l + (math.log10(n) - x0) / (x1 - x0) * (W - pad_l - pad_r)
        def Y(v): return H - pad_b - (math.log10(v) - y0) / (y1 - y0) * (H - pad_b - pad_t)
        svg.append(f'<text x="{ox + W / 2}" y="18" text-anchor="middle" font-size="13">{title}</text>')
        svg.append(f'<line x1="{ox + pad_l}" y1="{H - pad_b}" x2="{ox + W - pad_r}" y2="{H - pad_b}" stroke="black"/>')
        svg.append(f'<line x1="{ox + pad_l}" y1="{pad_t}" x2="{ox + pad_l}" y2="{H - pad_b}" stroke="black"/>')
        for e in range(x0, x1 + 1):
            x = X(10 ** e)
            svg.append(f'<line x1="{x}" y1="{H - pad_b}" x2="{x}" y2="{H - pad_b + 4}" stroke="black"/>')
            svg.append(f'<text x="{x}" y="{H - pad_b + 16}" text-anchor="middle">10^{e}</text>')
        for e in range(y0, y1 + 1):
            y = Y(10 ** e)
            svg.append(f'<line x1="{ox + pad_l}" y1="{y}" x2="{ox + W - pad_r}" y2="{y}" stroke="#eee"/>')
            svg.append(f'<text x="{ox + pad_l - 6}" y="{y + 4}" text-anchor="end">{10 ** e:g}</text>')
        svg.append(f'<text x="{ox + W / 2}" y="{H - 12}" text-anchor="middle">N (nodes in the pass-through chain)</text>')
        svg.append(f'<text transform="translate({ox + 16},{H / 2}) rotate(-90)" text-anchor="middle">{ylabel}</text>')
        for i, (eng, s) in enumerate(sorted(series.items())):
            s = sorted((n, v) for n, v in s if v > 0)
            if not s:
                continue
            earlier = eng.endswith(BEFORE_SUFFIX)
            c = COLORS.get(eng.removesuffix(BEFORE_SUFFIX), "#9467bd")
            svg.append('<polyline fill="none" stroke-width="2" stroke="%s"%s points="%s"/>' %
                       (c, ' stroke-dasharray="5,3"' if earlier else "",
                        " ".join(f"{X(n):.1f},{Y(v):.1f}" for n, v in s)))
            for n, v in s:
                svg.append(f'<circle cx="{X(n):.1f}" cy="{Y(v):.1f}" r="3" fill="{c}"/>')
            ly = pad_t + 8 + 14 * i
            faded = ' fill-opacity="0.4"' if earlier else ""
            svg.append(f'<rect x="{ox + W - pad_r - 130}" y="{ly - 8}" width="10" height="10" fill="{c}"{faded}/>')
            svg.append(f'<text x="{ox + W - pad_r - 115}" y="{ly + 1}">{eng}</text>')
    svg.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(svg) + "\n")


def add_earlier_actor(series, earlier):
    """Adds the earlier tree's actor overhead to a plot's series, dashed."""
    if "actor" in earlier:
        series["actor" + BEFORE_SUFFIX] = earlier["actor"]


def short_name(function, width=100):
    """A function's name without its argument list, cut to `width`."""
    name = bare_name(function)
    name += "(…)" if name != function else ""
    return name if len(name) <= width else name[:width - 1] + "…"


def breakdown_tables(rows):
    """Per case of tools/bench/callgrind_breakdown.py: its components, then
    the functions that differ most (in a collapsed block)."""
    out = []
    for case in dict.fromkeys(r["case"] for r in rows):
        mine = [r for r in rows if r["case"] == case]
        unit = next(r for r in mine if r["kind"] == "unit")
        other = unit["other"]
        total = {k: sum(float(r[k]) for r in mine if r["kind"] == "component") for k in ("actor", "other")}
        out += [f"**{case}**, instructions a {unit['name']}: actor {fmt(total['actor'])}, "
                f"{other} {fmt(total['other'])}.", "",
                f"| component | actor | {other} | difference |", "|---|---:|---:|---:|"]
        for r in mine:
            if r["kind"] == "component":
                a, o = float(r["actor"]), float(r["other"])
                out.append(f"| {r['name']} | {fmt(a)} | {fmt(o)} | {a - o:+,.0f} |")
        out += ["", "<details><summary>the functions that differ most</summary>", "",
                f"| function (exclusive) | actor | {other} |", "|---|---:|---:|"]
        for r in mine:
            if r["kind"] == "function":
                name = short_name(r["name"]).replace("|", "\\|")
                out.append(f"| `{name}` | {fmt(float(r['actor']))} | {fmt(float(r['other']))} |")
        out += ["", "</details>", ""]
    return out


def load_results(path):
    jpath = os.path.join(path, "bench_engines.json")
    return {"cg": read_tsv(os.path.join(path, "callgrind_chain.tsv")),
            "breakdown": read_tsv(os.path.join(path, "callgrind_breakdown.tsv")),
            "mem": read_tsv(os.path.join(path, "memory.tsv")),
            "torch": read_tsv(os.path.join(path, "callgrind_torch.tsv")),
            "js": json.load(open(jpath)) if os.path.exists(jpath) else {}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="tools/bench/run_benchmarks.sh")
    ap.add_argument("--before", help="results of an earlier tree, measured in the same run")
    ap.add_argument("--before-label", default="before")
    ap.add_argument("--after-label", default="after")
    a = ap.parse_args()
    model, ncpu, plat, load = machine()
    after = load_results(a.results)
    before = load_results(a.before) if a.before else None
    cg, mem, js = after["cg"], after["mem"], after["js"]
    lines = PAGE_HEAD + [
             f"- machine: {model}, {ncpu} cores, {plat}",
             f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}",
             f"- load average when the report was written: {load}",
             f"- command: `{a.command}` (Release build)",
             "- engines: `sequential` = lower bound (the graph's nodes called directly in ready order, "
             "no scheduling); `reference` = one thread, one heap; `baseline` = port of PyTorch's design "
             "(mutex/condvar ReadyQueue, GraphTask mutex, wake-up tasks; bench/baseline); `actor` = the CAF "
             "engine; `torch` = libtorch's engine; `torch_seq` = libtorch's nodes called directly (bound for torch).",
             "- overhead per node = (engine − its lower bound) / nodes.", ""]
    if before:
        lines += [f"- before = {a.before_label}, after = {a.after_label}: both trees built with this tree's "
                  "bench files and measured in this run, stage by stage (`BEFORE_BUILD`); the tables below "
                  "the targets are the after tree's.", "",
                  "## Issue 20 (performance floor): targets", "",
                  "Each figure from the tables of this run; how each is computed: `targets()` in "
                  "tools/bench/make_results.py.", ""] + targets_table(before, after)
        if after["breakdown"]:
            lines += ["### Where the per-call and hop instructions go", "",
                      "`tools/bench/callgrind_breakdown.py` (this run: the after tree, as built in "
                      "`BREAKDOWN_BUILD` when the command names one): each case under callgrind, every "
                      "function's exclusive count put in one component by its name (then its "
                      "file), divided by the calls or hops counted. The actor engine beside the same nodes "
                      "called with no engine (the sequential bound), or, for the hop, beside the baseline's "
                      "hop. Valgrind runs one thread at a time, so a wait's poll (libstdc++'s `atomic::wait`, "
                      "CAF's scheduler) runs to its end here.", ""] + breakdown_tables(after["breakdown"])
        lines += ["## Before and after", ""] + before_after_tables(before, after)
    cg_lines, cg_series = callgrind_tables(cg) if cg else ([], {})
    if cg_lines:
        lines += ["## Instructions per node (callgrind, repeatable)", "",
                  "`tools/bench/callgrind_chain.sh`: backward passes only (CALLGRIND_START/STOP around them, "
                  "after one warm-up pass), divided by passes and nodes.", ""] + cg_lines + [""]
        if any(r["case"] == "reentrant" for r in cg):
            lines += [REENTRANT_NOTE, ""]
        if any(r["case"] in ("pipeline", "branches", "hops") for r in cg):
            lines += [DEVICES_NOTE, ""]
    if before and before["cg"]:
        add_earlier_actor(cg_series, callgrind_tables(before["cg"])[1])
    panels = []
    if cg_series:
        panels.append(("Engine overhead, instructions/node", "instructions per node", cg_series))
    if js:
        ctx = js.get("context", {})
        lines += ["## Wall time (Google Benchmark, bench_engines)", "",
                  f"Context: {ctx.get('num_cpus')} CPUs at {ctx.get('mhz_per_cpu')} MHz, "
                  f"load average {ctx.get('load_avg')}, library build {ctx.get('library_build_type')}. "
                  "Times are the minimum over iterations (least disturbed run on a shared machine).", ""]
        single, series, dev, cc = bench_tables(js)
        if before and before["js"]:
            add_earlier_actor(series, bench_tables(before["js"])[1])
        lines += ["### Single device (CPU)", ""] + single + [""]
        if any("reentrant" in row for row in single):
            lines += [REENTRANT_NOTE, ""]
        lines += ["### Simulated devices", "",
                  "Busy nodes (each spins for the given wall time): pipeline = one chain of 64 over the devices "
                  "in stages; branches = a CPU root feeding one chain of 32 per device. bound = max(critical "
                  "path, total work / cores). `threads` is no engine: one plain thread per device calling its "
                  "nodes in order, hand-offs through `std::atomic::wait` (bench/common/parallel_plan.h); it is "
                  "what this machine itself makes of the graph, so `min / threads' best` is the engine's share. "
                  "Each case ran as several repetitions (Google Benchmark `Repetitions`): a cell is the median "
                  "of the repetitions, with their range in brackets.", ""] + dev + [""]
        lines += ["### Concurrent backward calls (each thread its own chain of 1000)", ""] + cc + [""]
        if series:
            panels.append(("Engine overhead, ns/node (wall)", "ns per node", series))
    if mem:
        lines += ["## Peak memory, pass-through chains, one backward in a fresh process", "",
                  "Peak resident set (`ru_maxrss`) at start (libraries, idle engines), after building the "
                  "graph, and after one backward; and the heap's live bytes (every block malloc handed out "
                  "and not yet freed, counted by `bench_chain_memory`) before the backward and at their "
                  "peak during it. The heap's figure moves only with what the engine allocates; the resident "
                  "set's moves in the heap's growth steps (Note [Counting the heap, not the resident set] in "
                  "`bench/common/heap_counter.h`).", "",
                  "| engine | nodes | RSS at start MiB | graph bytes/node (RSS) | extra peak during backward "
                  "bytes/node (RSS) | extra peak during backward bytes/node (heap) |",
                  "|---|---:|---:|---:|---:|---:|"]
        heap = extra_heap_per_node(mem)
        for r in mem:
            n = float(r["nodes"])
            s0 = float(r["peak_rss_start_bytes"])
            g = float(r["peak_rss_graph_bytes"])
            p = float(r["peak_rss_after_backward_bytes"])
            lines.append(f"| {r['engine']} | {r['nodes']} | {fmt(s0 / 2**20, 0)} | {fmt((g - s0) / n, 0)} | "
                         f"{fmt((p - g) / n, 1)} | {fmt(heap.get((r['engine'], int(r['nodes']))), 3)} |")
        lines.append("")
    if panels:
        svg = os.path.join(os.path.dirname(a.out), "overhead_per_node.svg")
        svg_plot(panels, svg)
        lines += ["## Plot", "", "![overhead per node vs N](overhead_per_node.svg)", ""]
    tail = ""
    if os.path.exists(a.out):
        old = open(a.out).read()
        if HAND_RECORDED in old:
            tail = old[old.index(HAND_RECORDED):]
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
        if tail:
            f.write("\n" + tail)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
