#pragma once
/// @file run_backward.h
/// The methods of `torch.autograd.Variable._execution_engine` that Python's
/// autograd calls (torch/autograd/__init__.py, torch.utils.checkpoint, DDP),
/// as CPython functions: `run_backward` takes and checks the arguments as
/// torch 1.13's THPEngine_run_backward does and runs the call on libtorch's
/// default engine (the actor engine once installed), with the GIL released;
/// `queue_callback` and `is_checkpoint_valid` read libtorch's own state,
/// which the bridge sets (Note [The bridge runs inside one libtorch
/// GraphTask]; a call that needs none of it queues callbacks on the actor
/// engine's task: Note [Calls without a libtorch GraphTask]).

#include <Python.h>

namespace actorgrad::python {

/// `run_backward(tensors, grad_tensors, keep_graph, create_graph, inputs=None,
/// allow_unreachable=False, accumulate_grad=False)` (METH_FASTCALL |
/// METH_KEYWORDS).
PyObject* run_backward(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);
/// `queue_callback(fn)`: runs `fn` at the end of the backward call whose
/// node runs on this thread.
PyObject* queue_callback(PyObject* self, PyObject* callback);
/// `is_checkpoint_valid()`.
PyObject* is_checkpoint_valid(PyObject* self, PyObject* unused);

} // namespace actorgrad::python
