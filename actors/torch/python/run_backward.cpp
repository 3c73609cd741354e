#include "actorgrad/actors/torch/python/run_backward.h"

#include <ATen/BatchedTensorImpl.h>
#include <ATen/VmapMode.h>
#include <c10/util/irange.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/THP.h>
#include <torch/csrc/autograd/edge.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/functions/basic_ops.h>
#include <torch/csrc/autograd/graph_task.h>
#include <torch/csrc/autograd/python_variable.h>

#include <memory>

#include "actorgrad/libengine/engine/detail/current_graph_task.h"
#include "actorgrad/libengine/engine/graph_task_base.h"
#include "actorgrad/libengine/engine/queue_callback.h"

namespace actorgrad::python {

using ::torch::autograd::Edge;
using ::torch::autograd::Engine;
using ::torch::autograd::variable_list;

namespace {

/// torch's refusal of a vmapped tensor among the call's `what` ("output" or
/// "input") tensors.
void check_not_vmapped(const at::Tensor& t, const char* what, Py_ssize_t i) {
  TORCH_CHECK(!at::isBatchedTensor(t),
              "torch.autograd.grad(outputs, inputs, grad_outputs) called inside torch.vmap. We "
              "do not support the case where any ",
              what, "s are vmapped tensors (", what, " ", i,
              " is being vmapped over). Please call autograd.grad() outside torch.vmap or "
              "file a bug report with your use case.")
}

/// The roots and their gradients of a call (THPEngine_run_backward's checks
/// and texts).
void unpack_roots(PyObject* tensors, PyObject* grad_tensors, std::vector<Edge>& roots,
                  variable_list& grads) {
  const Py_ssize_t n = PyTuple_GET_SIZE(tensors);
  roots.reserve(n);
  grads.reserve(n);
  for (const auto i : c10::irange(n)) {
    PyObject* py_tensor = PyTuple_GET_ITEM(tensors, i);
    TORCH_CHECK(THPVariable_Check(py_tensor), "element ", i, " of tensors tuple is not a Tensor");
    const auto& variable = THPVariable_Unpack(py_tensor);
    check_not_vmapped(variable, "output", i);
    auto edge = ::torch::autograd::impl::gradient_edge(variable);
    TORCH_CHECK(edge.function, "element ", i,
                " of tensors does not require grad and does not have a grad_fn");
    roots.push_back(std::move(edge));
    PyObject* grad = PyTuple_GET_ITEM(grad_tensors, i);
    if (THPVariable_Check(grad)) {
      const auto& grad_var = THPVariable_Unpack(grad);
      if (grad_var.has_names())
        TORCH_WARN("Autograd was passed a named grad tensor with dims ", grad_var.names(),
                   ". Autograd does not yet support named tensor semantics, so all names will be "
                   "ignored. In practice all computed gradients will still be correct according "
                   "to regular tensor semantics.");
      grads.push_back(grad_var);
    } else {
      TORCH_CHECK(grad == Py_None, "element ", i, " of gradients tuple is not a Tensor or None");
      // torch 1.13 passes no index for this %d: its text shows a garbage number.
      TORCH_CHECK(!variable.requires_grad(), "element ", i,
                  " of gradients tuple is None, but the corresponding Tensor requires grad");
    }
  }
}

/// The edges of `inputs` (grad(inputs=) / backward(inputs=)).
std::vector<Edge> unpack_inputs(PyObject* inputs, bool accumulate_grad) {
  std::vector<Edge> edges;
  const Py_ssize_t n = PyTuple_GET_SIZE(inputs);
  edges.reserve(n);
  for (const auto i : c10::irange(n)) {
    PyObject* input = PyTuple_GET_ITEM(inputs, i);
    TORCH_CHECK(THPVariable_Check(input), "all inputs have to be Tensors, but got ",
                THPUtils_typename(input));
    const auto& tensor = THPVariable_Unpack(input);
    check_not_vmapped(tensor, "input", i);
    auto grad_fn = tensor.grad_fn();
    if (!grad_fn)
      grad_fn = ::torch::autograd::impl::try_get_grad_accumulator(tensor);
    if (accumulate_grad)
      tensor.retain_grad();
    TORCH_CHECK(tensor.requires_grad(), "One of the differentiated Tensors does not require grad");
    // Without a grad accumulator the input is unreachable; an edge to a node
    // of its own keeps nodes whose edges point nowhere from being needed
    // (torch's NOTE [ Autograd Unreachable Input ]).
    if (!grad_fn)
      edges.emplace_back(std::make_shared<::torch::autograd::Identity>(), 0);
    else
      edges.emplace_back(std::move(grad_fn), tensor.output_nr());
  }
  return edges;
}

/// torch's THPEngine_run_backward parses "OObb|Obb" from a tuple and a
/// dict; run_backward parses the same from the caller's stack (vectorcall),
/// without building them. CPython fills in the rest on the first call
/// (under the GIL) and keeps the keyword names.
_PyArg_Parser run_backward_parser() {
  static const char* const keywords[] = {"tensors",         "grad_tensors", "keep_graph",
                                         "create_graph",    "inputs",       "allow_unreachable",
                                         "accumulate_grad", nullptr};
  _PyArg_Parser parser{};
  parser.format = "OObb|Obb:run_backward";
  parser.keywords = keywords;
  return parser;
}

} // namespace

PyObject* run_backward(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  HANDLE_TH_ERRORS
  PyObject* tensors = nullptr;
  PyObject* grad_tensors = nullptr;
  unsigned char keep_graph = 0;
  unsigned char create_graph = 0;
  PyObject* inputs = nullptr;
  unsigned char allow_unreachable = 0;
  unsigned char accumulate_grad = 0;
  static _PyArg_Parser parser = run_backward_parser();
  if (!_PyArg_ParseStackAndKeywords(args, nargs, kwnames, &parser, &tensors, &grad_tensors,
                                    &keep_graph, &create_graph, &inputs, &allow_unreachable,
                                    &accumulate_grad))
    return nullptr;
  TORCH_CHECK(PyTuple_Check(tensors), "tensors argument is expected to be a tuple, but got ",
              THPUtils_typename(tensors));
  TORCH_CHECK(PyTuple_Check(grad_tensors),
              "grad_tensors argument is expected to be a tuple, but got ",
              THPUtils_typename(grad_tensors));
  const Py_ssize_t num_tensors = PyTuple_GET_SIZE(tensors);
  const Py_ssize_t num_gradients = PyTuple_GET_SIZE(grad_tensors);
  TORCH_CHECK(num_tensors == num_gradients, "got ", num_tensors, " tensors and ", num_gradients,
              " gradients");
  // backward() accumulates into .grad; grad() returns the gradients.
  const bool backward_api_called = accumulate_grad;
  TORCH_CHECK(!backward_api_called || at::impl::VmapMode::current_vmap_level() == 0,
              "backward() called inside torch.vmap. This is not supported, please call backward() "
              "outside torch.vmap or instead use torch.autograd.grad inside torch.vmap");
  std::vector<Edge> roots;
  variable_list grads;
  unpack_roots(tensors, grad_tensors, roots, grads);
  std::vector<Edge> output_edges;
  if (inputs != nullptr && inputs != Py_None)
    output_edges = unpack_inputs(inputs, accumulate_grad);

  variable_list outputs;
  {
    pybind11::gil_scoped_release no_gil;
    outputs = Engine::get_default_engine().execute(roots, grads, keep_graph, create_graph,
                                                   accumulate_grad, output_edges);
  }
  if (backward_api_called || inputs == nullptr || inputs == Py_None)
    Py_RETURN_NONE;
  const Py_ssize_t num_inputs = PyTuple_GET_SIZE(inputs);
  THPObjectPtr py_outputs{PyTuple_New(num_inputs)};
  if (!py_outputs)
    return nullptr;
  for (const auto i : c10::irange(num_inputs)) {
    TORCH_CHECK(allow_unreachable || outputs[i].defined(),
                "One of the differentiated Tensors appears to not have been used in the graph. "
                "Set allow_unused=True if this is the desired behavior.");
    PyTuple_SET_ITEM(py_outputs.get(), i, THPVariable_Wrap(outputs[i]));
  }
  return py_outputs.release();
  END_HANDLE_TH_ERRORS
}

PyObject* queue_callback(PyObject*, PyObject* callback) {
  HANDLE_TH_ERRORS
  std::shared_ptr<PyObject> fn(callback, [](PyObject* obj) {
    pybind11::gil_scoped_acquire gil;
    Py_DECREF(obj);
  });
  Py_INCREF(callback);
  auto call = [fn]() {
    pybind11::gil_scoped_acquire gil;
    THPObjectPtr result{PyObject_CallFunctionObjArgs(fn.get(), nullptr)};
    if (!result)
      throw python_error();
  };
  // A call that runs without a libtorch GraphTask (Note [Calls without a
  // libtorch GraphTask] in actors/torch/detail/bridge_engine.cpp) takes the
  // callback on the actor engine's task; everywhere else libtorch's engine
  // takes it (or refuses it, with its text, outside a backward call).
  if (!::torch::autograd::get_current_graph_task_exec_info() &&
      actorgrad::detail::current_graph_task())
    actorgrad::queue_callback(std::move(call));
  else
    Engine::get_default_engine().queue_callback(std::move(call));
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS
}

PyObject* is_checkpoint_valid(PyObject*, PyObject*) {
  HANDLE_TH_ERRORS
  if (Engine::get_default_engine().is_checkpoint_valid())
    Py_RETURN_TRUE;
  Py_RETURN_FALSE;
  END_HANDLE_TH_ERRORS
}

} // namespace actorgrad::python
