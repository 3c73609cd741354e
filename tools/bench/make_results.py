#!/usr/bin/env python3
"""Turns the benchmark outputs in bench/results/ into bench/RESULTS.md and
bench/overhead_per_node.svg (standard library only: the SVG is written by hand).

Inputs (any may be missing): bench_engines.json (Google Benchmark JSON),
callgrind_chain.tsv (tools/bench/callgrind_chain.sh), memory.tsv.
The hand-recorded tail of an existing RESULTS.md (from the heading
HAND_RECORDED on) is kept below the generated part.
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

BOUND = {"torch": "torch_seq"}
ENGINE_ORDER = ["sequential", "torch_seq", "reference", "baseline", "actor", "torch"]
HAND_RECORDED = "## Further measurements"
REENTRANT_NOTE = ("`reentrant`, N = 100: a node whose backward runs a nested backward on a fresh small "
                  "graph, 100 levels deep (bench/common/reentrant.h); 101 backward calls of 3 nodes each "
                  "per pass, so instructions (or ns) per backward call = 3 x per node. Past depth 60 "
                  "both engines hand the nested call to their reentrant pool.")
DEVICES_NOTE = ("`pipeline` and `branches`, N = 4: the multi-device graphs of the wall-time tables below on "
                "4 sim devices, with nodes that do no work, so what is counted is each engine's cost of running "
                "nodes on its device threads (all threads are counted). `hops`, N = 2: 64 such nodes dealt "
                "round-robin over 2 sim devices, so every gradient crosses devices; hops minus pipeline, per node, "
                "is the cost of a device hop.")
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
                if case == "chain_passthrough":
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
    singles, devices, conc = {}, {}, []
    for b in js.get("benchmarks", []):
        if b.get("run_type") == "aggregate":
            continue
        name = b["name"]
        parts = name.split("/")
        if parts[0] == "single":
            singles.setdefault((parts[1], int(parts[2])), {})[parts[3]] = b
        elif parts[0] == "devices":
            devices.setdefault(tuple(parts[1:5]), []).append(b)
        elif parts[0] == "concurrent":
            conc.append((name, b))
    out = ["| case | N | nodes | " + " | ".join(f"{e} ns/node" for e in ENGINE_ORDER) +
           " | overhead ns/node: reference | baseline | actor | torch | actor/baseline | actor/torch |",
           "|---|---:|---:|" + "---:|" * (len(ENGINE_ORDER) + 6)]
    series = {}
    for (case, n), row in sorted(singles.items()):
        ns = {e: row[e]["ns_per_node"] for e in row if "ns_per_node" in row[e]}
        nodes = next(iter(row.values())).get("nodes")
        ov = {e: ns[e] - ns[bound_of(e)] for e in ("reference", "baseline", "actor", "torch")
              if e in ns and bound_of(e) in ns}
        if case == "chain_passthrough":
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
            c = COLORS.get(eng, "#9467bd")
            svg.append('<polyline fill="none" stroke-width="2" stroke="%s" points="%s"/>' %
                       (c, " ".join(f"{X(n):.1f},{Y(v):.1f}" for n, v in s)))
            for n, v in s:
                svg.append(f'<circle cx="{X(n):.1f}" cy="{Y(v):.1f}" r="3" fill="{c}"/>')
            ly = pad_t + 8 + 14 * i
            svg.append(f'<rect x="{ox + W - pad_r - 90}" y="{ly - 8}" width="10" height="10" fill="{c}"/>')
            svg.append(f'<text x="{ox + W - pad_r - 75}" y="{ly + 1}">{eng}</text>')
    svg.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(svg) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="tools/bench/run_benchmarks.sh")
    a = ap.parse_args()
    model, ncpu, plat, load = machine()
    cg = read_tsv(os.path.join(a.results, "callgrind_chain.tsv"))
    mem = read_tsv(os.path.join(a.results, "memory.tsv"))
    jpath = os.path.join(a.results, "bench_engines.json")
    js = json.load(open(jpath)) if os.path.exists(jpath) else {}
    lines = ["# actorgrad engine benchmarks", "",
             f"- machine: {model}, {ncpu} cores, {plat}",
             f"- date: {datetime.datetime.now().isoformat(timespec='seconds')}",
             f"- load average when the report was written: {load}",
             f"- command: `{a.command}` (Release build)",
             "- engines: `sequential` = lower bound (the graph's nodes called directly in ready order, "
             "no scheduling); `reference` = one thread, one heap; `baseline` = port of PyTorch's design "
             "(mutex/condvar ReadyQueue, GraphTask mutex, wake-up tasks; bench/baseline); `actor` = the CAF "
             "engine; `torch` = libtorch's engine; `torch_seq` = libtorch's nodes called directly (bound for torch).",
             "- overhead per node = (engine − its lower bound) / nodes.", ""]
    cg_lines, cg_series = callgrind_tables(cg) if cg else ([], {})
    if cg_lines:
        lines += ["## Instructions per node (callgrind, repeatable)", "",
                  "`tools/bench/callgrind_chain.sh`: backward passes only (CALLGRIND_START/STOP around them, "
                  "after one warm-up pass), divided by passes and nodes.", ""] + cg_lines + [""]
        if any(r["case"] == "reentrant" for r in cg):
            lines += [REENTRANT_NOTE, ""]
        if any(r["case"] in ("pipeline", "branches", "hops") for r in cg):
            lines += [DEVICES_NOTE, ""]
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
                  "graph, and after one backward.", "",
                  "| engine | nodes | RSS at start MiB | graph bytes/node | extra peak during backward bytes/node |",
                  "|---|---:|---:|---:|---:|"]
        for r in mem:
            n = float(r["nodes"])
            s0 = float(r["peak_rss_start_bytes"])
            g = float(r["peak_rss_graph_bytes"])
            p = float(r["peak_rss_after_backward_bytes"])
            lines.append(f"| {r['engine']} | {r['nodes']} | {fmt(s0 / 2**20, 0)} | {fmt((g - s0) / n, 0)} | "
                         f"{fmt((p - g) / n, 1)} |")
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
