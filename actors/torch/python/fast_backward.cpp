#include "actorgrad/actors/torch/python/fast_backward.h"
#include "actorgrad/actors/torch/python/torch_prologue.h"

#include <ATen/BatchedTensorImpl.h>
#include <ATen/VmapMode.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/disable_torch_function.h>

#include <string>
#include <vector>

namespace actorgrad::python {
namespace {

/// What the fast method needs between calls. Read and written under the
/// GIL only (every entry point here holds it), so plain fields.
struct FastBackwardState {
  /// torch's Tensor.backward: strong, kept once set (a reference to the
  /// fast method may outlive uninstall and still needs it).
  PyObject* stock = nullptr;
  /// torch.autograd.backward and Variable._execution_engine as installed;
  /// null while disabled. Strong references.
  PyObject* autograd_backward = nullptr;
  PyObject* engine = nullptr;
  /// torch.autograd's module dict, torch.autograd.Variable and
  /// torch._C._are_functorch_transforms_active: strong, kept once set.
  PyObject* autograd_dict = nullptr;
  PyObject* variable_class = nullptr;
  PyObject* functorch_active = nullptr;
  /// The traceback entries torch's two Python functions add to an
  /// exception from the engine, outermost first: a tuple of (code,
  /// globals, lasti, lineno) tuples. Strong, kept once set.
  PyObject* prologue_frames = nullptr;
  /// The method's definition, and its docstring: torch's signature and
  /// the stock docstring.
  std::string doc;
  PyMethodDef def{};
  std::uint64_t calls = 0;
};

FastBackwardState& state() {
  static FastBackwardState s;
  return s;
}

/// Tensor.backward's arguments (gradient, retain_graph, create_graph,
/// inputs), borrowed; null where not passed.
struct BackwardArgs {
  PyObject* gradient = nullptr;
  PyObject* retain_graph = nullptr;
  PyObject* create_graph = nullptr;
  PyObject* inputs = nullptr;
};

/// Parses the arguments as Tensor.backward's signature; false (no Python
/// error left) where they do not fit it: torch's method then says why.
bool parse(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, BackwardArgs& out) {
  static const char* const keywords[] = {"gradient", "retain_graph", "create_graph", "inputs",
                                         nullptr};
  static _PyArg_Parser parser = [] {
    _PyArg_Parser p{};
    p.format = "|OOOO:backward";
    p.keywords = keywords;
    return p;
  }();
  if (_PyArg_ParseStackAndKeywords(args, nargs, kwnames, &parser, &out.gradient, &out.retain_graph,
                                   &out.create_graph, &out.inputs))
    return true;
  PyErr_Clear();
  return false;
}

bool is_none_or_bool(PyObject* o) { return o == nullptr || o == Py_None || PyBool_Check(o); }

bool is_plain_tensor(PyObject* o) {
  return Py_TYPE(o) == reinterpret_cast<PyTypeObject*>(THPVariableClass) &&
         !::torch::check_has_torch_function(o);
}

/// Whether torch.autograd.backward and Variable._execution_engine are
/// still what install() saw, and no functorch transform is active.
bool torch_unchanged(const FastBackwardState& s) {
  if (s.autograd_backward == nullptr)
    return false; // disabled
  static PyObject* backward_name = PyUnicode_InternFromString("backward");
  static PyObject* engine_name = PyUnicode_InternFromString("_execution_engine");
  if (PyDict_GetItemWithError(s.autograd_dict, backward_name) != s.autograd_backward)
    return false;
  PyObject* engine = PyObject_GetAttr(s.variable_class, engine_name);
  Py_XDECREF(engine); // only its identity is compared
  PyObject* active = PyObject_CallNoArgs(s.functorch_active);
  const bool transforms = active != Py_False;
  Py_XDECREF(active);
  PyErr_Clear(); // a failed lookup or call counts as changed: torch's method decides
  return engine == s.engine && !transforms;
}

/// The gradient of the call's root, or an undefined tensor where the fast
/// path leaves the call to torch (Note [Fast Tensor.backward]).
at::Tensor root_gradient(const at::Tensor& root, PyObject* gradient) {
  if (!root.requires_grad() || at::isBatchedTensor(root))
    return {};
  if (gradient == nullptr || gradient == Py_None) {
    if (root.numel() != 1)
      return {};
    return at::ones_like(root, at::TensorOptions(), at::MemoryFormat::Preserve);
  }
  if (!is_plain_tensor(gradient))
    return {};
  const at::Tensor& grad = THPVariable_Unpack(gradient);
  if (!grad.defined() || !root.is_same_size(grad) || root.is_complex() != grad.is_complex() ||
      grad.has_names())
    return {};
  return grad;
}

/// torch's Tensor.backward with the same arguments.
PyObject* call_stock(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  std::vector<PyObject*> all(static_cast<std::size_t>(nargs + nkw + 1));
  all[0] = self;
  std::copy(args, args + nargs + nkw, all.begin() + 1);
  return PyObject_Vectorcall(state().stock, all.data(), static_cast<std::size_t>(nargs) + 1,
                             kwnames);
}

/// Runs the backward on the installed engine, collecting libtorch's
/// warnings in `warnings`; null with the engine's Python error where it
/// failed.
PyObject* call_engine(::torch::autograd::Edge edge, at::Tensor grad, bool keep_graph,
                      bool create_graph, WarningBuffer& warnings) {
  HANDLE_TH_ERRORS
  c10::Warning::WarningHandlerGuard collect(&warnings);
  pybind11::gil_scoped_release no_gil;
  ::torch::autograd::Engine::get_default_engine().execute(
    {std::move(edge)}, {std::move(grad)}, keep_graph, create_graph, /*accumulate_grad=*/true, {});
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS
}

/// call_engine, then what torch's Python prologue would have left on its
/// outcome: its place on the call's warnings, its traceback entries on an
/// error (Note [Fast Tensor.backward]).
PyObject* run_engine(const FastBackwardState& s, ::torch::autograd::Edge edge, at::Tensor grad,
                     bool keep_graph, bool create_graph) {
  WarningBuffer warnings;
  PyObject* result =
    call_engine(std::move(edge), std::move(grad), keep_graph, create_graph, warnings);
  if (!warnings.issue(s.prologue_frames, /*in_exception=*/result == nullptr))
    Py_CLEAR(result);
  if (result == nullptr)
    add_prologue_frames(s.prologue_frames);
  return result;
}

/// Whether a Python profiler or tracer watches this thread: it then sees
/// torch's own method and its two Python calls.
bool python_watched() {
  const PyThreadState* thread = PyThreadState_Get();
  return thread->c_profilefunc != nullptr || thread->c_tracefunc != nullptr;
}

PyObject* fast_backward(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                        PyObject* kwnames) {
  HANDLE_TH_ERRORS
  FastBackwardState& s = state();
  BackwardArgs a;
  if (python_watched() || !parse(args, nargs, kwnames, a) ||
      (a.inputs != nullptr && a.inputs != Py_None) || !is_none_or_bool(a.retain_graph) ||
      (a.create_graph != nullptr && !PyBool_Check(a.create_graph)) || !is_plain_tensor(self) ||
      at::impl::VmapMode::current_vmap_level() != 0 || !torch_unchanged(s))
    return call_stock(self, args, nargs, kwnames);
  const at::Tensor& root = THPVariable_Unpack(self);
  at::Tensor grad = root_gradient(root, a.gradient);
  auto edge = ::torch::autograd::impl::gradient_edge(root);
  if (!grad.defined() || !edge.function)
    return call_stock(self, args, nargs, kwnames);
  const bool create_graph = a.create_graph == Py_True;
  const bool keep_graph = a.retain_graph == nullptr || a.retain_graph == Py_None
                            ? create_graph
                            : a.retain_graph == Py_True;
  ++s.calls;
  return run_engine(s, std::move(edge), std::move(grad), keep_graph, create_graph);
  END_HANDLE_TH_ERRORS
}

/// A strong reference to `module.name`, or null with a Python error.
PyObject* import_attr(const char* module, const char* name) {
  PyObject* m = PyImport_ImportModule(module);
  if (m == nullptr)
    return nullptr;
  PyObject* attr = PyObject_GetAttrString(m, name);
  Py_DECREF(m);
  return attr;
}

} // namespace

PyObject* enable_fast_backward(PyObject* stock, PyObject* autograd_backward, PyObject* engine,
                               PyObject* prologue_frames) {
  FastBackwardState& s = state();
  if (s.autograd_backward != nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "actorgrad's fast Tensor.backward is already enabled");
    return nullptr;
  }
  if (!valid_prologue_frames(prologue_frames)) {
    PyErr_SetString(PyExc_TypeError,
                    "prologue_frames: a tuple of (code, globals dict, lasti, lineno) tuples");
    return nullptr;
  }
  if (s.stock == nullptr) {
    PyObject* autograd = PyImport_ImportModule("torch.autograd");
    if (autograd == nullptr)
      return nullptr;
    s.autograd_dict = PyModule_GetDict(autograd); // borrowed from the module, which stays
    Py_INCREF(s.autograd_dict);
    Py_DECREF(autograd);
    s.variable_class = import_attr("torch.autograd", "Variable");
    s.functorch_active = import_attr("torch._C", "_are_functorch_transforms_active");
    if (s.variable_class == nullptr || s.functorch_active == nullptr)
      return nullptr;
    // The signature block (what inspect.signature reads; CPython keeps it
    // out of __doc__) is the one parse() takes, torch's own.
    s.doc = "backward($self, gradient=None, retain_graph=None, create_graph=False, inputs=None)\n"
            "--\n\n";
    PyObject* doc = PyObject_GetAttrString(stock, "__doc__");
    if (doc != nullptr && PyUnicode_Check(doc))
      s.doc += PyUnicode_AsUTF8(doc);
    Py_XDECREF(doc);
    PyErr_Clear(); // a stock method without a docstring: the fast one shows none either
    s.def = {"backward", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fast_backward)),
             METH_FASTCALL | METH_KEYWORDS, s.doc.c_str()};
    Py_INCREF(stock);
    s.stock = stock;
    Py_INCREF(prologue_frames);
    s.prologue_frames = prologue_frames;
  }
  Py_INCREF(autograd_backward);
  Py_INCREF(engine);
  s.autograd_backward = autograd_backward;
  s.engine = engine;
  return PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(THPVariableClass), &s.def);
}

void disable_fast_backward() {
  FastBackwardState& s = state();
  Py_CLEAR(s.autograd_backward);
  Py_CLEAR(s.engine);
}

std::uint64_t fast_backward_calls() { return state().calls; }

} // namespace actorgrad::python
