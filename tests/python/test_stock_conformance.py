"""Where PyTorch's own autograd tests (tools/conformance.sh) once found the
bridge different from torch's engine: each program runs on torch's engine,
then in the same process with actorgrad installed (with the fast
Tensor.backward and with torch's), and must give the same results."""

import os
import sys

import torch
from torch._vmap_internals import _vmap

import actorgrad.torch as ag

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402  (its custom Functions)


def on_each_engine(program):
    """`program()` on torch's engine and on actorgrad's (both install modes),
    with the number of calls actorgrad ran for each of the latter."""
    results = {"stock": program()}
    for fast in (True, False):
        with ag.installed(fast_backward=fast):
            before = ag.stats()["calls"]
            results[f"fast_backward={fast}"] = program()
            results[f"calls, fast_backward={fast}"] = ag.stats()["calls"] - before
    return results


def outcome(call):
    """What `call()` returns, or the type and text of what it raises."""
    try:
        return ("returned", call())
    except Exception as e:  # noqa: BLE001 - the exception is the point
        return ("raised", type(e), str(e))


def assert_same_as_stock(results, equal=lambda a, b: a == b):
    for fast in (True, False):
        assert equal(results[f"fast_backward={fast}"], results["stock"]), fast


def tensors_equal(a, b):
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


class ConstantGradient(torch.autograd.Function):
    """The identity, whose backward returns ones, whatever its gradient
    (so not a BatchedTensor under vmap)."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return torch.ones(3)


def test_a_vmapped_gradient_adds_to_a_plain_one_out_of_place():
    # gradgradcheck's batched-gradient check (PyTorch's
    # test_hessian_create_graph_vectorize_*): a node's input gets a plain
    # gradient first, then a BatchedTensor one with more elements. libtorch
    # 1.13 adds them out of place; in place into the plain one vmap refuses.
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)

    def program():
        h = x * 1.0
        doubled = h * 2.0
        out = torch.cat([doubled, ConstantGradient.apply(h)])  # the later node runs first

        def vjp(v):
            return torch.autograd.grad(out, x, v, retain_graph=True)[0]

        return outcome(lambda: _vmap(vjp)(torch.eye(6)))

    results = on_each_engine(program)
    assert results["stock"][0] == "returned"
    assert_same_as_stock(results, lambda a, b: a[0] == b[0] and torch.equal(a[1], b[1]))
    assert results["calls, fast_backward=True"] > 0


def test_gradients_add_with_the_op_libtorch_1_13_uses():
    # Two dense gradients meeting at a node: libtorch 1.13's InputBuffer adds
    # them out of place (aten::add), which the profiler records.
    def program():
        adds = []
        for size in (4, 200):  # a few elements; more than libtorch's parallel grain
            x = torch.randn(size, size, requires_grad=True)
            h = x.exp()
            out = (h * 2.0).sum() + (h * 3.0).sum()
            with torch.autograd.profiler.profile() as prof:
                out.backward()
            adds.append(sorted(e.name for e in prof.function_events if e.name.startswith("aten::add")))
        return adds

    results = on_each_engine(program)
    assert results["stock"] == [["aten::add"], ["aten::add"]]
    assert_same_as_stock(results)


def test_a_call_without_roots_returns_what_torch_returns():
    # gradcheck of a function without differentiable outputs (PyTorch's
    # test_gradcheck_check_no_differentiable_outputs, test_where_functional).
    x = torch.ones(2, requires_grad=True)

    def program():
        return [outcome(lambda: torch.autograd.grad([], [x], allow_unused=True)),
                outcome(lambda: torch.autograd.grad([], [x])),
                outcome(lambda: torch.autograd.grad([], [])),
                outcome(lambda: torch.autograd.backward([])),
                outcome(lambda: torch.autograd.backward([], inputs=[x])),
                x.grad,
                outcome(lambda: torch.autograd.gradcheck(lambda x: (), (x.double(),))),
                outcome(lambda: torch.autograd.gradcheck(lambda x: torch.tensor([x.sum()]),
                                                         (x.double(),), raise_exception=False))]

    results = on_each_engine(program)
    assert results["stock"][0] == ("returned", (None,))
    assert results["stock"][3] == ("returned", None)
    assert_same_as_stock(results)


def test_will_engine_execute_node_answers_in_a_hook_as_torch_does():
    # PyTorch's test_will_engine_execute_node: a hook asks, during backward,
    # whether the engine will run a node (libtorch's GraphTask's
    # nodes_in_graph_ and exec_info).
    def grad_fn(t):
        return t.clone().grad_fn.next_functions[0][0] if t.grad_fn is None else t.grad_fn

    def program():
        torch.manual_seed(0)
        a = torch.randn(2, 3, requires_grad=True)
        a2 = torch.randn(2, 3, requires_grad=True)
        b = a * a2
        b2 = b.cos()
        c = cases.Square.apply(b)  # a custom Function
        out = c.sum()
        asked = {"a": grad_fn(a), "a2": grad_fn(a2), "b": b.grad_fn, "b2": b2.grad_fn,
                 "c": c.grad_fn, "out": out.grad_fn}
        answers = []

        def hook(_):
            answers.append({k: outcome(lambda: torch._C._will_engine_execute_node(g))
                            for k, g in asked.items()})

        b.register_hook(hook)
        c.register_hook(hook)
        torch.autograd.backward(out, inputs=(a, b2), retain_graph=True)
        torch.autograd.backward(out, retain_graph=True)
        torch.autograd.grad(out, (b,), retain_graph=True)
        answers.append(outcome(lambda: torch.autograd.grad(out, (a,), retain_graph=True)[0].tolist()))
        (c.sum() + b2.sum()).backward()
        answers.append(outcome(lambda: torch._C._will_engine_execute_node(out.grad_fn)))
        return answers

    stock_function = torch._C._will_engine_execute_node
    results = on_each_engine(program)
    assert torch._C._will_engine_execute_node is stock_function  # uninstall put it back
    assert results["stock"][0]["a"] == ("returned", True)
    assert results["stock"][0]["a2"] == ("returned", False)
    assert_same_as_stock(results)
