"""Python backward passes, torch's engine vs actorgrad's (install(), and
install(fast_backward=False) with torch's own Tensor.backward), side by side in one process (bench/HISTORY.md,
"Python bridge"): median wall time of many backward calls of each case, one
intra-op thread. Then the ensemble of issue #60 (16 MLPs of 4 x
(Linear(64, 64) + Tanh), batch 32, loss = the sum of their outputs' sums) on
torch's engine, install(cpu_workers=1) and install(cpu_workers=2): the
median and the minimum of the calls, each the median over the rounds, and
both against stock and 1 worker (issue #60 judges the minima); and
the same ensemble with each MLP under torch.utils.checkpoint, whose
backward nodes run Python (user code, which a call spread over CPU workers
runs on its own thread: Note [Nodes that need their call's thread] in
actors/detail/cpu_lanes.h).

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_python_bridge.py [--repeats N]
        [--rounds N] [--only engines|cpu_workers]
"""

import argparse
import statistics
import time

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

import actorgrad.torch as ag


def add_chain():
    x = torch.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(1000):
        y = y + 1.0
    return y


def mlp():
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [nn.Linear(64, 64), nn.ReLU()]
    return nn.Sequential(*layers)(torch.randn(32, 64)).sum()


def one_node():
    x = torch.tensor(1.0, requires_grad=True)
    return x * 2.0


def transformer():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0)
    return layer(torch.randn(16, 4, 64)).sum()


def ensemble(models=16):
    torch.manual_seed(0)
    x = torch.randn(32, 64)
    total = 0
    for _ in range(models):
        layers = []
        for _ in range(4):
            layers += [nn.Linear(64, 64), nn.Tanh()]
        total = total + nn.Sequential(*layers)(x).sum()
    return total


def checkpointed_ensemble(models=16):
    """ensemble() with each MLP under torch.utils.checkpoint (reentrant, as
    1.13's default): its input requires grad, so that the MLPs get theirs."""
    torch.manual_seed(0)
    x = torch.randn(32, 64, requires_grad=True)
    total = 0
    for _ in range(models):
        layers = []
        for _ in range(4):
            layers += [nn.Linear(64, 64), nn.Tanh()]
        total = total + checkpoint(nn.Sequential(*layers), x).sum()
    return total


CASES = {"1,000 scalar adds": add_chain, "MLP 4x Linear(64)+ReLU": mlp, "one-node call": one_node,
         "TransformerEncoderLayer": transformer}


def call_times_us(root, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        root.backward(retain_graph=True)
        times.append(time.perf_counter() - start)
    return [t * 1e6 for t in times]


def median_us(root, repeats):
    return statistics.median(call_times_us(root, repeats))


def engines_table(args):
    print(f"{'case':28} {'stock us':>10} {'actorgrad us':>13} {'ratio':>7} {'torch method us':>16} {'ratio':>7}")
    for name, make in CASES.items():
        root = make()
        repeats = args.repeats if name != "TransformerEncoderLayer" else args.repeats // 10
        stock, ours, method = [], [], []
        for _ in range(args.rounds):  # alternate, so drift hits all three
            stock.append(median_us(root, repeats))
            with ag.installed():
                ours.append(median_us(root, repeats))
            with ag.installed(fast_backward=False):
                method.append(median_us(root, repeats))
        s, o, m = statistics.median(stock), statistics.median(ours), statistics.median(method)
        print(f"{name:28} {s:10.1f} {o:13.1f} {o / s:7.2f} {m:16.1f} {m / s:7.2f}")


def cpu_workers_table(args, title, root):
    """`root`'s backward on torch's engine and on 1 and 2 CPU workers."""
    repeats = max(1, args.repeats // 20)
    engines = {"stock": None, "cpu_workers=1": 1, "cpu_workers=2": 2}
    medians = {name: [] for name in engines}
    minima = {name: [] for name in engines}
    for _ in range(args.rounds):  # alternate, so drift hits all three
        for name, workers in engines.items():
            if workers is None:
                times = call_times_us(root, repeats)
            else:
                with ag.installed(cpu_workers=workers):
                    assert ag.engine_config()["cpu_workers"] == workers
                    times = call_times_us(root, repeats)
            medians[name].append(statistics.median(times))
            minima[name].append(min(times))
    print(f"\n{title}, {repeats} calls x {args.rounds} rounds")
    print(f"{'engine':16} {'median us':>10} {'min us':>10} {'median vs stock':>16} "
          f"{'vs 1 worker':>12} {'min vs stock':>13} {'vs 1 worker':>12}")
    med = {name: statistics.median(v) for name, v in medians.items()}
    low = {name: statistics.median(v) for name, v in minima.items()}
    for name in engines:
        print(f"{name:16} {med[name]:10.1f} {low[name]:10.1f} {med[name] / med['stock']:16.2f} "
              f"{med[name] / med['cpu_workers=1']:12.2f} {low[name] / low['stock']:13.2f} "
              f"{low[name] / low['cpu_workers=1']:12.2f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", choices=["engines", "cpu_workers"],
                        help="run one of the two tables")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.only != "cpu_workers":
        engines_table(args)
    if args.only != "engines":
        cpu_workers_table(args, "ensemble of 16 MLPs", ensemble())
        cpu_workers_table(args, "ensemble of 16 checkpointed MLPs", checkpointed_ensemble())


if __name__ == "__main__":
    main()
