"""Python backward passes, torch's engine vs actorgrad's (install(), and
install(fast_backward=False) with torch's own Tensor.backward), side by side in one process (bench/HISTORY.md,
"Python bridge"): median wall time of many backward calls of each case, one
intra-op thread.

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_python_bridge.py [--repeats N]
"""

import argparse
import statistics
import time

import torch
import torch.nn as nn

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


CASES = {"1,000 scalar adds": add_chain, "MLP 4x Linear(64)+ReLU": mlp, "one-node call": one_node,
         "TransformerEncoderLayer": transformer}


def median_us(root, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        root.backward(retain_graph=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
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


if __name__ == "__main__":
    main()
