#pragma once
/// @file fast_backward.h
/// `Tensor.backward` without torch's Python prologue, for
/// `actorgrad.torch.install(fast_backward=True)`.
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
/// - `self` and a given gradient are exactly `torch.Tensor` (no subclass,
///   no __torch_function__, no torch function mode), not vmapped, outside
///   vmap and functorch transforms;
/// - no `inputs`; `retain_graph` None or a bool, `create_graph` a bool;
/// - `self` requires grad; no gradient: `self` has one element (torch's
///   ones_like, memory format preserved); a gradient: same size, complex
///   only with a complex `self`, unnamed;
/// - `torch.autograd.backward` and `Variable._execution_engine` are still
///   what they were at install, checked at every call: code that patches
///   either sees its calls as before.
/// What differs from torch: an exception raised during the backward has
/// two frames fewer in its traceback (torch's two Python functions), and
/// profilers of Python calls do not see them. That is why it is opt-in.

#include <Python.h>

#include <cstdint>

namespace actorgrad::torch_python {

/// Returns the method that replaces `torch.Tensor.backward` (a method
/// descriptor of torch.Tensor with the stock method's docstring), and
/// starts taking calls: `stock` is torch's `Tensor.backward`, called for
/// every case the fast path leaves to torch, `autograd_backward`
/// `torch.autograd.backward` and `engine` the object in
/// `Variable._execution_engine`, both as installed. Raises when already
/// enabled.
PyObject* enable_fast_backward(PyObject* stock, PyObject* autograd_backward, PyObject* engine);

/// Drops what enable_fast_backward holds; the method it returned then
/// calls `stock` for every call (a reference to it may outlive uninstall).
void disable_fast_backward();

/// Calls the fast method ran itself, since the process started.
std::uint64_t fast_backward_calls();

} // namespace actorgrad::torch_python
