#pragma once
/// @file fast_backward.h
/// `Tensor.backward` without torch's Python prologue, the method
/// `actorgrad.torch.install()` puts in `torch.Tensor` (unless
/// `fast_backward=False`).
///
/// Note [Fast Tensor.backward]
/// A Python `loss.backward()` passes through two Python functions before it
/// reaches the engine: `Tensor.backward` (torch/_tensor.py: the
/// __torch_function__ check) and `torch.autograd.backward` (argument
/// handling, `_make_grads`' checks and its `torch.ones_like`). On a call of
/// one node that prologue costs more than the engine's part.
/// The fast method does the same in C++ for the common case (about 15,500
/// instructions, 1.6 µs here, less a call; bench/RESULTS.md) and calls
/// torch's own `Tensor.backward` for every other, so every refusal keeps
/// torch's text, type and warning:
/// - no Python profiler or tracer on the thread (`sys.setprofile`,
///   `sys.settrace`: cProfile, debuggers, coverage, torch's Python stack
///   tracer), so they see torch's calls;
/// - `self` and a given gradient are exactly `torch.Tensor` (no subclass,
///   no __torch_function__, no torch function mode), not vmapped, outside
///   vmap and functorch transforms;
/// - no `inputs`; `retain_graph` None or a bool, `create_graph` a bool;
/// - `self` requires grad; no gradient: `self` has one element (torch's
///   ones_like, memory format preserved); a gradient: same size, complex
///   only with a complex `self`, unnamed;
/// - `torch.autograd.backward` and `Variable._execution_engine` are still
///   what they were at install, checked at every call: code that patches
///   either sees its calls as before. (install() also checks, with a probe
///   engine, that torch's two functions are all that stands between
///   `Tensor.backward` and the engine; where a patch came first it leaves
///   torch's method in place.)
/// An exception from the engine gets the two traceback entries torch's
/// functions would have added (their code, line and instruction, taken
/// from the probe's traceback at install), so its traceback prints as
/// torch's does, and libtorch's warnings of the call are issued at
/// torch.autograd.backward's line (WarningBuffer, torch_prologue.h). What
/// still differs from torch: those two frames have no local variables (a
/// debugger's post-mortem or `--showlocals` shows none there), and the
/// method's `self` is positional-only (`Tensor.backward(self=t)` is
/// refused), as for every method written in C.

#include <Python.h>

#include <cstdint>

namespace actorgrad::python {

/// Returns the method that replaces `torch.Tensor.backward` (a method
/// descriptor of torch.Tensor with the stock method's docstring), and
/// starts taking calls: `stock` is torch's `Tensor.backward`, called for
/// every case the fast path leaves to torch, `autograd_backward`
/// `torch.autograd.backward` and `engine` the object in
/// `Variable._execution_engine`, both as installed; `prologue_frames` the
/// traceback entries torch's two functions add to an exception from the
/// engine, outermost first, as a tuple of (code, globals, lasti, lineno)
/// tuples. Raises when already enabled or when `prologue_frames` is not
/// such a tuple.
PyObject* enable_fast_backward(PyObject* stock, PyObject* autograd_backward, PyObject* engine,
                               PyObject* prologue_frames);

/// Drops what enable_fast_backward holds; the method it returned then
/// calls `stock` for every call (a reference to it may outlive uninstall).
void disable_fast_backward();

/// Calls the fast method ran itself, since the process started.
std::uint64_t fast_backward_calls();

} // namespace actorgrad::python
