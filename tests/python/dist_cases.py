"""RPC programs for test_dist_autograd.py: one process of a torch.distributed.rpc
world on localhost, on torch's engine or with actorgrad installed.

    dist_cases.py CASE ENGINE WORLD RANK PORT OUT
        ENGINE: stock or actorgrad (actorgrad.torch.install() before RPC
        starts). Rank 0 drives the case and saves what it saw to OUT
        (torch.save: a dict of tensors, stats per rank, errors); the other
        ranks serve until rank 0 shuts RPC down.

Cases (CASES): `chain` (WORLD 2 or 3: a layer on every worker in turn
through rpc_sync and rpc.remote, dist_autograd.backward in a loop, a
DistributedOptimizer step after each), `remote_error` (a node on worker 1
raises in backward), `threads` (4 threads, one context each, backward at
once), `killed` (worker 1 exits in the middle of its backward),
`round_trips` (PyTorch's test_backward_multiple_round_trips: a tensor rank 0
received is sent back twice, so two send functions of rank 0 reach its
receive node, whose gradient the worker's node then gets once;
retain_graph=False), `fan_in` (PyTorch's test_backwards_nested_python_udf
with a parameter of worker 1: two send functions of worker 1, the one of
its result and the one of the arguments it sent back to rank 0, reach a
node of worker 1, which must run once per backward with their sum;
retain_graph=False), `released` (as fan_in, but rank 0's node behind the
arguments worker 1 sent raises: worker 1's pass waits for a gradient that
will not come until rank 0 leaves the context, which releases it there),
`debug_info` (a node of rank 0 and one of worker 1 read
dist_autograd._get_debug_info()["num_current_backward_passes"] while
their part of the pass runs).
"""

import os
import sys
import threading
import time

import torch
import torch.distributed.autograd as dist_autograd
import torch.distributed.rpc as rpc
from torch.distributed.optim import DistributedOptimizer

STEPS = 3


class Layer(torch.nn.Module):
    """A worker's layer: its parameters live on the worker (rpc.remote)."""

    def __init__(self, seed):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.w = torch.nn.Parameter(torch.randn(8, 8, generator=g) / 3)
        self.b = torch.nn.Parameter(torch.randn(8, generator=g) / 3)

    def forward(self, x):
        return torch.tanh(x @ self.w + self.b)


def call_layer(layer_rref, x):
    return layer_rref.local_value()(x)


def param_rrefs(layer_rref):
    return [rpc.RRef(p) for p in layer_rref.local_value().parameters()]


def params_of(layer_rref):
    return [p.detach().clone() for p in layer_rref.local_value().parameters()]


def context_grads(context_id, layer_rref):
    """This worker's gradients of its layer in context `context_id`."""
    grads = dist_autograd.get_gradients(context_id)
    return [grads[p] for p in layer_rref.local_value().parameters()]


def stats():
    import actorgrad.torch
    return actorgrad.torch.stats() if actorgrad.torch.is_installed() else {}


class Boom(torch.autograd.Function):
    """Identity whose backward raises on the worker that runs it."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise ValueError("boom in the backward of worker " + rpc.get_worker_info().name)


def boom(x):
    return Boom.apply(x * 2)


class Exit(torch.autograd.Function):
    """Identity whose backward ends its process."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        os._exit(0)


def exit_in_backward(x):
    return Exit.apply(x * 2)


def all_stats(world):
    return {f"w{r}": stats() if r == 0 else rpc.rpc_sync(f"w{r}", stats) for r in range(world)}


def chain(world):
    """Rank 0: a local layer, then each worker's layer, then a local loss."""
    out = {}
    torch.manual_seed(0)
    local = Layer(100)
    layers = [rpc.remote(f"w{r}", Layer, args=(r,)) for r in range(1, world)]
    rrefs = [rpc.RRef(p) for p in local.parameters()]
    for layer in layers:
        rrefs += rpc.rpc_sync(layer.owner(), param_rrefs, args=(layer,))
    opt = DistributedOptimizer(torch.optim.SGD, rrefs, lr=0.1)
    x = torch.randn(4, 8)
    for step in range(STEPS):
        with dist_autograd.context() as cid:
            h = local(x)
            for i, layer in enumerate(layers):
                # rpc_sync for the first worker, rpc.remote for the next.
                if i % 2 == 0:
                    h = rpc.rpc_sync(layer.owner(), call_layer, args=(layer, h))
                else:
                    h = rpc.remote(layer.owner(), call_layer, args=(layer, h)).to_here()
            loss = (h * h).sum()
            for k in range(2):  # twice per context: gradients add up in it
                dist_autograd.backward(cid, [loss], retain_graph=k == 0)
            grads = dist_autograd.get_gradients(cid)
            for j, p in enumerate(local.parameters()):
                out[f"step{step}.local{j}"] = grads[p]
            for r, layer in enumerate(layers, 1):
                for j, g in enumerate(rpc.rpc_sync(layer.owner(), context_grads, args=(cid, layer))):
                    out[f"step{step}.w{r}.{j}"] = g
            opt.step(cid)
    for j, p in enumerate(local.parameters()):
        out[f"final.local{j}"] = p.detach().clone()
    for r, layer in enumerate(layers, 1):
        for j, p in enumerate(rpc.rpc_sync(layer.owner(), params_of, args=(layer,))):
            out[f"final.w{r}.{j}"] = p
    return out


def remote_error(world):
    x = torch.randn(4, 8, requires_grad=True)
    with dist_autograd.context() as cid:
        y = rpc.rpc_sync("w1", boom, args=(x,))
        try:
            dist_autograd.backward(cid, [y.sum()])
        except RuntimeError as e:
            return {"error": str(e)}
    return {"error": None}


def threads(world):
    """4 threads, each its own context on the same worker layer."""
    layer = rpc.remote("w1", Layer, args=(1,))
    results = {}
    start = threading.Barrier(4)

    def one(t):
        x = torch.full((4, 8), 0.1 * (t + 1), requires_grad=True)
        start.wait()
        for step in range(STEPS):
            with dist_autograd.context() as cid:
                h = rpc.rpc_sync("w1", call_layer, args=(layer, x))
                dist_autograd.backward(cid, [(h * h).sum()])
                results[f"t{t}.step{step}.x"] = dist_autograd.get_gradients(cid)[x]
                for j, g in enumerate(rpc.rpc_sync("w1", context_grads, args=(cid, layer))):
                    results[f"t{t}.step{step}.w1.{j}"] = g

    workers = [threading.Thread(target=one, args=(t,)) for t in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    results["threads alive"] = sum(w.is_alive() for w in workers)
    return results


def killed(world):
    x = torch.randn(4, 8, requires_grad=True)
    with dist_autograd.context() as cid:
        y = rpc.rpc_sync("w1", exit_in_backward, args=(x,))
        start = time.monotonic()
        try:
            dist_autograd.backward(cid, [y.sum()])
            error = None
        except RuntimeError as e:
            error = str(e)
    return {"error": error, "seconds": time.monotonic() - start}


def round_trips(world):
    """Round trips to w1; rank 0 sends `val` twice (two send functions reach
    its receive node): each of STEPS contexts one backward without
    retain_graph."""
    out = {}
    torch.manual_seed(0)
    t1, t3, t5 = (torch.rand(3, 3, requires_grad=True) for _ in range(3))
    t2, t4 = torch.rand(3, 3), torch.rand(3, 3)
    for step in range(STEPS):
        with dist_autograd.context() as cid:
            val = rpc.rpc_sync("w1", torch.add, args=(t1, t2))
            val = rpc.rpc_sync("w1", torch.mul, args=(t3, val))
            s1 = rpc.rpc_sync("w1", torch.stack, args=((t4, val),))
            s2 = rpc.rpc_sync("w1", torch.stack, args=((t5, val),))
            val = rpc.rpc_sync("w1", torch.bmm, args=(s1, s2))
            val = rpc.rpc_sync("w1", torch.matmul, args=(val, val))
            dist_autograd.backward(cid, [val.sum()])
            grads = dist_autograd.get_gradients(cid)
            for name, t in (("t1", t1), ("t3", t3), ("t5", t5)):
                out[f"step{step}.{name}"] = grads[t]
    return out


class Counted(torch.autograd.Function):
    """Identity whose backward counts its runs in this process."""
    runs = 0

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        Counted.runs += 1
        return g


FAN_IN_W = torch.Generator().manual_seed(7)
FAN_IN_W = torch.rand(3, 3, generator=FAN_IN_W, requires_grad=True)


def py_add(a, b):
    return a + b


def nested_udf(t1, t2):
    """On worker 1: its nodes behind t3 and t4 are reached from two of its send
    functions (the arguments sent to rank 0, and this function's result)."""
    t3 = Counted.apply(t1 * t2 * FAN_IN_W)
    t4 = t1 + t2
    res = rpc.rpc_sync("w0", py_add, args=(t3, t4))
    return t1 * t2 * t3 * t4 * res


def fan_in_state(context_id):
    """Worker 1's gradient of its parameter in the context, and its Counted runs."""
    return dist_autograd.get_gradients(context_id)[FAN_IN_W], Counted.runs


def fan_in(world):
    out = {}
    torch.manual_seed(0)
    t1, t2 = torch.rand(3, 3, requires_grad=True), torch.rand(3, 3, requires_grad=True)
    for step in range(STEPS):
        with dist_autograd.context() as cid:
            loss = rpc.rpc_sync("w1", nested_udf, args=(t1, t2))
            dist_autograd.backward(cid, [loss.sum()])
            grads = dist_autograd.get_gradients(cid)
            out[f"step{step}.t1"], out[f"step{step}.t2"] = grads[t1], grads[t2]
            out[f"step{step}.w1.W"], out[f"step{step}.w1.runs"] = rpc.rpc_sync(
                "w1", fan_in_state, args=(cid,))
    return out


def boom_add(a, b):
    return Boom.apply(a + b)


def nested_udf_boom(t1, t2):
    """As nested_udf, but the backward of rank 0's part raises."""
    t3, t4 = t1 * t2, t1 + t2
    res = rpc.rpc_sync("w0", boom_add, args=(t3, t4))
    return t1 * t2 * t3 * t4 * res


def released(world):
    t1, t2 = torch.rand(3, 3, requires_grad=True), torch.rand(3, 3, requires_grad=True)
    error = None
    with dist_autograd.context() as cid:
        loss = rpc.rpc_sync("w1", nested_udf_boom, args=(t1, t2))
        try:
            dist_autograd.backward(cid, [loss.sum()])
        except RuntimeError as e:
            error = str(e)
        waiting = rpc.rpc_sync("w1", stats)["distributed_running"]
    start = time.monotonic()
    while rpc.rpc_sync("w1", stats)["distributed_running"] and time.monotonic() - start < 20:
        time.sleep(0.05)
    return {"error": error, "waiting in the context": waiting,
            "running after": rpc.rpc_sync("w1", stats)["distributed_running"],
            "seconds": time.monotonic() - start}


class ReadsDebugInfo(torch.autograd.Function):
    """Identity whose backward notes how many distributed passes this
    process says are running."""
    seen = []

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        info = dist_autograd._get_debug_info()
        ReadsDebugInfo.seen.append(int(info["num_current_backward_passes"]))
        return g


def reads_debug_info(x):
    return ReadsDebugInfo.apply(x) * 2


def debug_info_seen():
    return ReadsDebugInfo.seen


def debug_info(world):
    """One backward through a ReadsDebugInfo node on rank 0 and one on w1:
    what each saw."""
    x = torch.rand(3, requires_grad=True)
    with dist_autograd.context() as cid:
        y = rpc.rpc_sync("w1", reads_debug_info, args=(ReadsDebugInfo.apply(x),))
        dist_autograd.backward(cid, [y.sum()])
    return {"w0": ReadsDebugInfo.seen, "w1": rpc.rpc_sync("w1", debug_info_seen)}


CASES = {"chain": chain, "remote_error": remote_error, "threads": threads, "killed": killed,
         "round_trips": round_trips, "fan_in": fan_in, "released": released,
         "debug_info": debug_info}
# Cases whose rank 0 reads every rank's stats at the end (in `killed`, worker 1 is gone).
STATS_CASES = ("chain", "threads", "round_trips", "fan_in")


def main(case, engine, world, rank, port, out):
    if engine == "actorgrad":
        import actorgrad.torch
        actorgrad.torch.install()
    elif engine == "reinstalled":  # under the preload library: install() anew, 2 CPU workers
        import actorgrad.torch
        actorgrad.torch.uninstall()
        actorgrad.torch.install(cpu_workers=2)
    options = rpc.TensorPipeRpcBackendOptions(
        num_worker_threads=8, rpc_timeout=20, init_method=f"tcp://127.0.0.1:{port}",
        _transports=["uv"])
    rpc.init_rpc(f"w{rank}", rank=rank, world_size=world, rpc_backend_options=options)
    if rank != 0:
        if case == "killed":
            time.sleep(120)  # until its backward ends the process
        rpc.shutdown(graceful=case != "killed")
        return
    result = CASES[case](world)
    if case in STATS_CASES:
        result["stats"] = all_stats(world)
    torch.save(result, out)
    # A world that lost a worker cannot shut down gracefully.
    rpc.shutdown(graceful=case != "killed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
         sys.argv[6])
