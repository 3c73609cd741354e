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
torch.utils.checkpoint call, wraps ``torch._C._will_engine_execute_node``
(which reads what the actor engine's calls fill on demand), and (unless
``fast_backward=False``) replaces
``Tensor.backward`` with a C++ method that does torch's Python prologue for
the common call. Calls whose graph reaches a CUDA device run on torch's own
engine (counted in ``stats()["delegated"]``).
"""

import contextlib
import threading

import torch.autograd

from . import _C

__all__ = ["install", "uninstall", "is_installed", "installed", "engine_config", "stats",
           "profile"]


class _ActorEngine:
    """What torch.autograd.Variable._execution_engine holds while installed."""

    run_backward = _C.run_backward
    queue_callback = _C.queue_callback
    is_checkpoint_valid = _C.is_checkpoint_valid


_stock_engine = None
_stock_tensor_backward = None
_stock_will_engine_execute_node = None
_stock_get_debug_info = None


def _will_engine_execute_node(node):
    """torch._C._will_engine_execute_node while installed: torch's own, once
    the set of nodes it reads is filled for the call running on this thread
    (Note [Nodes in graph on demand] in actors/torch/detail/bridge_engine.cpp)."""
    _C.fill_nodes_in_graph()
    return _stock_will_engine_execute_node(node)


class _Probe(Exception):
    """Raised by the probe engine of _prologue_frames."""


class _ProbeEngine:
    """Variable._execution_engine while _prologue_frames probes: raises
    _Probe on the probing thread; every other thread's backward, which
    may run meanwhile, goes to `engine`."""

    def __init__(self, engine):
        self._engine = engine
        self._thread = threading.get_ident()

    def run_backward(self, *args, **kwargs):
        if threading.get_ident() == self._thread:
            raise _Probe
        return self._engine.run_backward(*args, **kwargs)

    def __getattr__(self, name):  # queue_callback, is_checkpoint_valid
        return getattr(self._engine, name)


def _prologue_frames(stock_backward):
    """The traceback entries torch's Tensor.backward and
    torch.autograd.backward add to an exception the engine raises, as
    (code, globals, lasti, lineno) tuples, outermost first; None where
    anything else stands between Tensor.backward and the engine (a patch
    of either), so the fast method must not take their place."""
    def defined_in(fn, module):
        return getattr(getattr(fn, "__code__", None), "co_filename", None) == module.__file__

    if not (defined_in(stock_backward, torch._tensor)
            and defined_in(torch.autograd.backward, torch.autograd)):
        return None  # a patch, not called here
    engine = torch.autograd.Variable._execution_engine
    torch.autograd.Variable._execution_engine = _ProbeEngine(engine)
    try:
        stock_backward(torch.ones((), requires_grad=True))
    except _Probe as e:
        tb = e.__traceback__.tb_next  # past this function's own entry
    except Exception:  # noqa: BLE001 - a patch that fails: leave torch's method
        return None
    else:
        return None
    finally:
        torch.autograd.Variable._execution_engine = engine
    entries = []
    while tb is not None:
        entries.append((tb.tb_frame.f_code, tb.tb_frame.f_globals, tb.tb_lasti, tb.tb_lineno))
        tb = tb.tb_next
    expected = (stock_backward.__code__, torch.autograd.backward.__code__,
                _ProbeEngine.run_backward.__code__)
    if tuple(entry[0] for entry in entries) != expected:
        return None
    return tuple(entries[:2])


def _check_cpu_workers(cpu_workers):
    """Refuses, naming it, a cpu_workers that is not an integer >= 1 (the
    engine checks the upper bound)."""
    if isinstance(cpu_workers, bool) or not isinstance(cpu_workers, int) or cpu_workers < 1:
        raise ValueError(f"install(cpu_workers={cpu_workers!r}): cpu_workers must be an integer "
                         ">= 1 (threads that run a backward's CPU nodes, the caller included)")


def install(devices="", max_recursion_depth=60, fast_backward=True, cpu_workers=1):
    """Makes the actor engine run every backward pass of the process.

    devices: the non-CPU devices the engine serves besides the CPU, as for
    ACTORGRAD_DEVICES ("sim:2"); torch's CPU nodes need none.
    cpu_workers: threads that run the CPU nodes of a backward, the calling
    thread included (EngineConfig::cpu_workers, as ACTORGRAD_CPU_WORKERS for
    the preload library); 1, the default, runs them all on the caller, as
    torch does. Raises ValueError naming it when not an integer in [1, 256].
    fast_backward: Tensor.backward does torch's Python prologue (argument
    checks, the implicit ones_like) in C++ for the common case, about 1.6 µs
    less a call; every other case, every refusal, and every call under a
    Python profiler or tracer is torch's own method. An exception from the
    engine shows torch's traceback and libtorch's warnings name torch's
    line; what differs: its two torch frames have no local variables, and
    the method's `self` is positional-only (Note [Fast Tensor.backward] in
    actors/torch/python/fast_backward.h). False keeps torch's method.
    Raises RuntimeError when already installed.
    """
    global _stock_engine, _stock_tensor_backward, _stock_will_engine_execute_node
    _check_cpu_workers(cpu_workers)
    _C.install(devices, max_recursion_depth, cpu_workers)
    _stock_engine = torch.autograd.Variable._execution_engine
    torch.autograd.Variable._execution_engine = _ActorEngine()
    _stock_will_engine_execute_node = torch._C._will_engine_execute_node
    torch._C._will_engine_execute_node = _will_engine_execute_node
    _take_over_debug_info()
    if fast_backward:
        stock = torch.Tensor.__dict__["backward"]
        frames = _prologue_frames(stock)
        if frames is not None:
            _stock_tensor_backward = stock
            torch.Tensor.backward = _C.enable_fast_backward(
                stock, torch.autograd.backward, torch.autograd.Variable._execution_engine, frames)


def _dist_autograd():
    """torch.distributed.autograd, or None in a torch built without it."""
    try:
        import torch.distributed.autograd as dist_autograd
    except ImportError:
        return None
    return dist_autograd if hasattr(dist_autograd, "_get_debug_info") else None


def _take_over_debug_info():
    """dist_autograd._get_debug_info() counts in "num_current_backward_passes"
    the passes of torch's DistEngine, which runs none once install() took
    over distributed autograd: it adds the passes that run here on actors
    (stats()["distributed_running"]), as PyTorch's test_debug_info expects.
    Not under the preload library, whose DistEngine::getDebugInfo adds them
    already (Note [Counting the passes that run on actors] in
    actors/torch/preload.cpp)."""
    global _stock_get_debug_info
    dist_autograd = _dist_autograd()
    if (dist_autograd is None or not _C.stats()["distributed_taken_over"]
            or _C.debug_info_counts_actors()):
        return
    stock = dist_autograd._get_debug_info

    def _get_debug_info():
        info = stock()
        running = int(info["num_current_backward_passes"])
        info["num_current_backward_passes"] = running + _C.stats()["distributed_running"]
        return info

    _stock_get_debug_info = stock
    dist_autograd._get_debug_info = _get_debug_info


def uninstall():
    """Restores torch's engine. Does nothing when not installed."""
    global _stock_engine, _stock_tensor_backward, _stock_will_engine_execute_node
    global _stock_get_debug_info
    if _stock_get_debug_info is not None:
        _dist_autograd()._get_debug_info = _stock_get_debug_info
        _stock_get_debug_info = None
    if _stock_will_engine_execute_node is not None:
        torch._C._will_engine_execute_node = _stock_will_engine_execute_node
        _stock_will_engine_execute_node = None
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
def installed(devices="", max_recursion_depth=60, fast_backward=True, cpu_workers=1):
    """install() for the duration of a with-block."""
    install(devices, max_recursion_depth, fast_backward, cpu_workers)
    try:
        yield
    finally:
        uninstall()


def engine_config():
    """The installed engine's settings: {"devices": ["sim:0", ...],
    "max_recursion_depth": int, "cpu_workers": int}. Raises RuntimeError
    when not installed."""
    return _C.engine_config()


def stats():
    """{"calls": backward calls run on actors, "delegated": given to torch's engine,
    "fast_backward": Tensor.backward calls the fast method ran itself,
    "distributed_parts": parts of torch.distributed.autograd backward passes
    run in this process (Note [Distributed autograd on actors] in
    actors/torch/detail/dist_engine.cpp), "distributed_running": those still
    running here now, "distributed_taken_over": whether
    install() took over torch's distributed autograd engine}."""
    return _C.stats()


class Profile:
    """The message flow of the backward passes of a profile() block."""

    def __init__(self):
        self._recording = None

    def save(self, path):
        """Writes a Chrome trace (Perfetto, `actorgrad trace --in`, `--merge`).

        In every path here, `%r` is the rank (RANK, else `pid` and the process
        id), `%p` the process id and `%%` a `%`, as in ACTORGRAD_TRACE, so that
        each process of a torchrun or mp.spawn job writes its own file."""
        self._recording.save(path)

    def save_html(self, path):
        """Writes the self-contained HTML report."""
        self._recording.save_html(path)

    def save_ops_csv(self, path):
        """Writes the per-operation table (calls, total/self/mean/min/max ns, share) as CSV."""
        self._recording.save_ops_csv(path)

    def summary(self, top=20):
        """The text summary: per-actor load, the per-operation table, messages,
        per pass its parallelism (busy % per track, node time / wall time,
        longest chain of dependent nodes) and critical path; each list cut
        to `top` rows (0: all)."""
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
