"""Run PyTorch's backward passes on actorgrad's actor engine.

    import actorgrad.torch
    actorgrad.torch.install()          # every backward from now on
    loss.backward()                    # torch's own nodes, scheduled by actors

    with actorgrad.torch.installed():  # or only inside a block
        ...

    with actorgrad.torch.profile() as p:
        loss.backward()
    p.save("trace.json"); p.save_html("trace.html"); print(p.summary())

install() makes the actor engine libtorch's default engine (C++ and
TorchScript callers) and puts an engine object in
``torch.autograd.Variable._execution_engine``, which torch.autograd.backward,
torch.autograd.grad, Tensor.backward, torch.autograd.functional and
torch.utils.checkpoint call. Calls whose graph reaches a CUDA device run on
torch's own engine (counted in ``stats()["delegated"]``).
"""

import contextlib

import torch.autograd

from . import _C

__all__ = ["install", "uninstall", "is_installed", "installed", "stats", "profile"]


class _ActorEngine:
    """What torch.autograd.Variable._execution_engine holds while installed."""

    run_backward = _C.run_backward
    queue_callback = _C.queue_callback
    is_checkpoint_valid = _C.is_checkpoint_valid


_stock_engine = None
_stock_tensor_backward = None


def install(devices="", max_recursion_depth=60, fast_backward=False):
    """Makes the actor engine run every backward pass of the process.

    devices: the non-CPU devices the engine serves besides the CPU, as for
    ACTORGRAD_DEVICES ("sim:2"); torch's CPU nodes need none.
    fast_backward: Tensor.backward does torch's Python prologue (argument
    checks, the implicit ones_like) in C++ for the common case, about 1.6 µs
    less a call; every other case, and every refusal, is torch's own
    method. What differs: an exception raised during the backward has two
    frames fewer in its traceback (torch/_tensor.py and
    torch/autograd/__init__.py), and profilers of Python calls do not see
    them (Note [Fast Tensor.backward] in actors/torch/python/fast_backward.h).
    Raises RuntimeError when already installed.
    """
    global _stock_engine, _stock_tensor_backward
    _C.install(devices, max_recursion_depth)
    _stock_engine = torch.autograd.Variable._execution_engine
    torch.autograd.Variable._execution_engine = _ActorEngine()
    if fast_backward:
        _stock_tensor_backward = torch.Tensor.__dict__["backward"]
        torch.Tensor.backward = _C.enable_fast_backward(
            _stock_tensor_backward, torch.autograd.backward, torch.autograd.Variable._execution_engine)


def uninstall():
    """Restores torch's engine. Does nothing when not installed."""
    global _stock_engine, _stock_tensor_backward
    if _stock_tensor_backward is not None:
        torch.Tensor.backward = _stock_tensor_backward
        _stock_tensor_backward = None
        _C.disable_fast_backward()
    if _stock_engine is not None:
        torch.autograd.Variable._execution_engine = _stock_engine
        _stock_engine = None
    _C.uninstall()


def is_installed():
    """Whether actorgrad runs the backward passes now."""
    return _C.installed()


@contextlib.contextmanager
def installed(devices="", max_recursion_depth=60, fast_backward=False):
    """install() for the duration of a with-block."""
    install(devices, max_recursion_depth, fast_backward)
    try:
        yield
    finally:
        uninstall()


def stats():
    """{"calls": backward calls run on actors, "delegated": given to torch's engine,
    "fast_backward": Tensor.backward calls the fast method ran itself}."""
    return _C.stats()


class Profile:
    """The message flow of the backward passes of a profile() block."""

    def __init__(self):
        self._recording = None

    def save(self, path):
        """Writes a Chrome trace (Perfetto, `actorgrad trace --in`)."""
        self._recording.save(path)

    def save_html(self, path):
        """Writes the self-contained HTML report."""
        self._recording.save_html(path)

    def save_ops_csv(self, path):
        """Writes the per-operation table (calls, total/self/mean/min/max ns, share) as CSV."""
        self._recording.save_ops_csv(path)

    def summary(self, top=20):
        """The text summary: per-actor load, the per-operation table, messages,
        critical paths; each list cut to `top` rows (0: all)."""
        return self._recording.summary(top)


@contextlib.contextmanager
def profile():
    """Records the backward passes of a with-block (install() first)."""
    p = Profile()
    _C.start_recording()
    try:
        yield p
    finally:
        p._recording = _C.stop_recording()
