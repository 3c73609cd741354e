"""torch.distributed.autograd's backward of a 2-process RPC model, torch's
engine vs actorgrad's (install() in both processes), side by side in the
same two processes (engines toggled in both between blocks of passes):
median wall time of dist_autograd.backward, one intra-op thread.

    PYTHONPATH=build/python /usr/bin/python3 bench/bench_dist_autograd.py [--repeats N]

The model: an MLP on rank 0, its output sent by rpc_sync to an MLP on
rank 1, the result back on rank 0 for the loss (each backward crosses to
rank 1 and back).
"""

import argparse
import os
import socket
import statistics
import time

import torch
import torch.distributed.autograd as dist_autograd
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp
import torch.nn as nn

import actorgrad.torch as ag

WIDTH = 64
DEPTH = 4
BLOCKS = 5  # blocks of passes per engine, alternated


def mlp(seed):
    torch.manual_seed(seed)
    layers = []
    for _ in range(DEPTH):
        layers += [nn.Linear(WIDTH, WIDTH), nn.Tanh()]
    return nn.Sequential(*layers)


REMOTE = None


def remote_forward(x):
    return REMOTE(x)


def set_engine(actorgrad):
    if actorgrad and not ag.is_installed():
        ag.install()
    elif not actorgrad and ag.is_installed():
        ag.uninstall()


def calls():
    return ag.stats()["calls"]


def backward_times(local, x, repeats):
    times = []
    for _ in range(repeats):
        with dist_autograd.context() as cid:
            h = rpc.rpc_sync("w1", remote_forward, args=(local(x),))
            loss = (h * h).sum()
            start = time.perf_counter()
            dist_autograd.backward(cid, [loss])
            times.append(time.perf_counter() - start)
    return times


def run(rank, port, repeats):
    global REMOTE
    torch.set_num_threads(1)
    REMOTE = mlp(1)
    options = rpc.TensorPipeRpcBackendOptions(num_worker_threads=8,
                                              init_method=f"tcp://127.0.0.1:{port}",
                                              _transports=["uv"])
    rpc.init_rpc(f"w{rank}", rank=rank, world_size=2, rpc_backend_options=options)
    if rank == 0:
        local = mlp(0)
        x = torch.randn(32, WIDTH)
        results = {"torch": [], "actorgrad": []}
        for engine in ("torch", "actorgrad"):  # warm-up
            set_engine(engine == "actorgrad")
            rpc.rpc_sync("w1", set_engine, args=(engine == "actorgrad",))
            backward_times(local, x, 20)
        for _ in range(BLOCKS):
            for engine in ("torch", "actorgrad"):
                set_engine(engine == "actorgrad")
                rpc.rpc_sync("w1", set_engine, args=(engine == "actorgrad",))
                results[engine] += backward_times(local, x, repeats)
        print(f"calls on actorgrad: rank 0 {calls()}, rank 1 {rpc.rpc_sync('w1', calls)}")
        medians = {e: statistics.median(t) * 1e6 for e, t in results.items()}
        print(f"{'case':<40} {'torch us':>10} {'actorgrad us':>13} {'ratio':>7}")
        print(f"{f'2-process MLP {DEPTH}x{WIDTH} + {DEPTH}x{WIDTH}':<40} {medians['torch']:>10.1f} "
              f"{medians['actorgrad']:>13.1f} {medians['actorgrad'] / medians['torch']:>7.3f}")
    rpc.shutdown()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=100, help="passes per block and engine")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(run, args=(port, args.repeats), nprocs=2, join=True)


if __name__ == "__main__":
    main()
