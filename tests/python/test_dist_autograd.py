"""torch.distributed.autograd on actorgrad (Note [Distributed autograd on
actors] in actors/torch/detail/dist_engine.cpp): RPC worlds of 2 and 3 processes on
localhost (dist_cases.py), on torch's engine and with actorgrad installed in
every process: gradients and parameters bitwise equal, and every process ran
its part of each backward on the actor engine."""

import json
import os
import socket
import subprocess
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
# Each process of a world; a world that hangs fails its test past this.
TIMEOUT_S = 180


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_world(case, engine, world, tmp_path, env=None):
    """Runs `case` on `world` processes (with `env` added to their
    environment); returns what rank 0 saved."""
    out = tmp_path / f"{case}.{engine}.{world}{'.env' if env else ''}.pt"
    port = str(free_port())
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "dist_cases.py"), case, engine,
                               str(world), str(rank), port, str(out)],
                              env=dict(os.environ, **(env or {})))
             for rank in range(world)]
    try:
        codes = [p.wait(timeout=TIMEOUT_S) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert codes[0] == 0, f"rank 0 of {case} on {engine} exited with {codes[0]}"
    return torch.load(out)


def assert_on_actors(stats, world):
    """Every process ran parts of distributed backward passes on actorgrad."""
    assert sorted(stats) == [f"w{r}" for r in range(world)]
    for rank, s in stats.items():
        assert s["distributed_taken_over"], rank
        assert s["calls"] > 0 and s["distributed_parts"] > 0, (rank, s)


def assert_bitwise_equal(stock, ours):
    assert sorted(stock) == sorted(ours)
    for key, expected in stock.items():
        got = ours[key]
        if isinstance(expected, torch.Tensor):
            assert torch.equal(expected, got), f"{key}: max abs diff {(expected - got).abs().max()}"
        else:
            assert expected == got, key


@pytest.mark.parametrize("world", [2, 3])
def test_model_across_processes_same_as_stock(world, tmp_path):
    stock = run_world("chain", "stock", world, tmp_path)
    ours = run_world("chain", "actorgrad", world, tmp_path)
    assert stock.pop("stats") == {f"w{r}": {} for r in range(world)}
    assert_on_actors(ours.pop("stats"), world)
    # 3 steps x (local layer + each worker's) x (weight, bias), and final parameters.
    assert len(stock) == 4 * 2 * world
    assert_bitwise_equal(stock, ours)


def test_contexts_of_4_threads_same_as_stock(tmp_path):
    stock = run_world("threads", "stock", 2, tmp_path)
    ours = run_world("threads", "actorgrad", 2, tmp_path)
    stock.pop("stats")
    assert_on_actors(ours.pop("stats"), 2)
    assert ours["threads alive"] == 0
    assert len(stock) == 4 * 3 * 3 + 1
    assert_bitwise_equal(stock, ours)


def test_node_reached_from_two_send_functions_same_as_stock(tmp_path):
    # Without one task per context and process, the worker's nodes ran once
    # per gradient the receive node sent, and the second run failed on the
    # freed graph (retain_graph=False).
    stock = run_world("round_trips", "stock", 2, tmp_path)
    ours = run_world("round_trips", "actorgrad", 2, tmp_path)
    stock.pop("stats")
    assert_on_actors(ours.pop("stats"), 2)
    assert len(stock) == 3 * 3
    assert_bitwise_equal(stock, ours)


def test_node_of_a_remote_process_reached_from_two_send_functions_runs_once(tmp_path):
    # One task per context in the process a pass reaches by RPC too: worker
    # 1's node behind two of its send functions runs once per backward, with
    # their gradients summed (retain_graph=False: a second run would fail on
    # the freed graph), and worker 1 ran one pass per context.
    stock = run_world("fan_in", "stock", 2, tmp_path)
    ours = run_world("fan_in", "actorgrad", 2, tmp_path)
    stock.pop("stats")
    stats = ours.pop("stats")
    assert_on_actors(stats, 2)
    assert stats["w1"]["distributed_parts"] == 3, stats
    assert [ours[f"step{s}.w1.runs"] for s in range(3)] == [1, 2, 3]
    assert len(stock) == 3 * 4
    assert_bitwise_equal(stock, ours)


def test_context_release_ends_a_remote_pass_left_waiting(tmp_path):
    # Rank 0's node raises, so worker 1's pass never gets the gradient of the
    # arguments it sent: it waits (it holds a pooled coordinator) until rank 0
    # leaves the context, whose release there fails and ends it.
    result = run_world("released", "actorgrad", 2, tmp_path)
    assert "Error on Node 0" in result["error"], result
    assert "boom in the backward of worker w0" in result["error"], result
    assert result["waiting in the context"] == 1, result
    assert result["running after"] == 0, result
    assert result["seconds"] < 10, result


def test_preload_library_runs_distributed_autograd_on_actors(tmp_path):
    # An unmodified program (no install()) under LD_PRELOAD: every process
    # records backward passes on the actor engine (a process that ran none
    # writes no trace) and the gradients are torch's.
    preload = os.environ.get("ACTORGRAD_TORCH_PRELOAD")
    if not preload:
        pytest.skip("run through ctest: ACTORGRAD_TORCH_PRELOAD names the preload library")
    stock = run_world("round_trips", "stock", 2, tmp_path)
    traces = tmp_path / "traces"
    traces.mkdir()
    ours = run_world("round_trips", "stock", 2, tmp_path,
                     env={"LD_PRELOAD": preload, "ACTORGRAD_TRACE": str(traces / "t.%p.json")})
    written = sorted(traces.glob("t.*.json"))
    assert len(written) == 2, written
    for path in written:
        events = json.loads(path.read_text())["traceEvents"]
        assert any(e.get("ph") == "X" for e in events), path
    stock.pop("stats")
    ours.pop("stats")
    assert_bitwise_equal(stock, ours)


def test_debug_info_counts_the_passes_running_on_actors(tmp_path):
    # dist_autograd._get_debug_info() read by a node of each process's part
    # of the pass says one pass runs there, as on stock, with install()
    # (its wrapper) and under the preload library (its DistEngine::getDebugInfo),
    # also where a program run under it calls uninstall() and install() (once,
    # not by both).
    expected = {"w0": [1], "w1": [1]}
    assert run_world("debug_info", "stock", 2, tmp_path) == expected
    assert run_world("debug_info", "actorgrad", 2, tmp_path) == expected
    preload = os.environ.get("ACTORGRAD_TORCH_PRELOAD")
    if not preload:
        pytest.skip("run through ctest: ACTORGRAD_TORCH_PRELOAD names the preload library")
    assert run_world("debug_info", "stock", 2, tmp_path, env={"LD_PRELOAD": preload}) == expected
    assert run_world("debug_info", "reinstalled", 2, tmp_path,
                     env={"LD_PRELOAD": preload}) == expected


def test_error_of_a_remote_node_reaches_the_caller(tmp_path):
    error = run_world("remote_error", "actorgrad", 2, tmp_path)["error"]
    assert error is not None, "backward did not fail"
    assert "Error on Node 1" in error, error
    assert "boom in the backward of worker w1" in error, error


def test_worker_killed_during_backward_fails_the_call(tmp_path):
    result = run_world("killed", "actorgrad", 2, tmp_path)
    assert result["error"] is not None, "backward did not fail"
    # Within the RPC timeout (20 s, dist_cases.py).
    assert result["seconds"] < 20, result
