#include "actorgrad/actors/torch/python/torch_prologue.h"

#include <frameobject.h>
#include <torch/csrc/Exceptions.h>

namespace actorgrad::python {

bool valid_prologue_frames(PyObject* frames) {
  if (!PyTuple_Check(frames) || PyTuple_GET_SIZE(frames) == 0)
    return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(frames); ++i) {
    PyObject* e = PyTuple_GET_ITEM(frames, i);
    if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 4 || !PyCode_Check(PyTuple_GET_ITEM(e, 0)) ||
        !PyDict_Check(PyTuple_GET_ITEM(e, 1)) || !PyLong_Check(PyTuple_GET_ITEM(e, 2)) ||
        !PyLong_Check(PyTuple_GET_ITEM(e, 3)))
      return false;
  }
  return true;
}

void add_prologue_frames(PyObject* frames) {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  PyThreadState* thread = PyThreadState_Get();
  for (Py_ssize_t i = PyTuple_GET_SIZE(frames) - 1; i >= 0; --i) {
    PyObject* entry = PyTuple_GET_ITEM(frames, i);
    PyFrameObject* frame =
      PyFrame_New(thread, reinterpret_cast<PyCodeObject*>(PyTuple_GET_ITEM(entry, 0)),
                  PyTuple_GET_ITEM(entry, 1), nullptr);
    PyObject* outer =
      frame == nullptr
        ? nullptr
        : PyObject_CallFunctionObjArgs(
            reinterpret_cast<PyObject*>(&PyTraceBack_Type), tb != nullptr ? tb : Py_None, frame,
            PyTuple_GET_ITEM(entry, 2), PyTuple_GET_ITEM(entry, 3), nullptr);
    Py_XDECREF(frame);
    if (outer == nullptr) {
      PyErr_Clear();
      break;
    }
    Py_XDECREF(tb);
    tb = outer;
  }
  if (tb != nullptr && value != nullptr)
    PyException_SetTraceback(value, tb);
  PyErr_Restore(type, value, tb);
}

void WarningBuffer::process(const c10::SourceLocation& where, const std::string& message,
                            bool verbatim) {
  entries_.push_back({where, message, verbatim});
}

namespace {

/// PyErr_WarnEx(category, text, 1) as if called from the place `entry`
/// (code, globals, lasti, lineno) names: the filename, line, module and
/// registry Python's warnings take from such a frame.
int warn_at(PyObject* entry, PyObject* category, const std::string& text) {
  static PyObject* registry_name = PyUnicode_InternFromString("__warningregistry__");
  static PyObject* module_name = PyUnicode_InternFromString("__name__");
  auto* code = reinterpret_cast<PyCodeObject*>(PyTuple_GET_ITEM(entry, 0));
  PyObject* globals = PyTuple_GET_ITEM(entry, 1);
  const int lineno = static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(entry, 3)));
  PyObject* empty = PyDict_New();
  if (empty == nullptr)
    return -1;
  PyObject* registry = PyDict_SetDefault(globals, registry_name, empty); // borrowed
  Py_DECREF(empty);
  PyObject* module = registry == nullptr ? nullptr : PyDict_GetItemWithError(globals, module_name);
  if (PyErr_Occurred())
    return -1;
  // Python's rule for a frame's module: its __name__ if a str or None.
  PyObject* owned_module = module != nullptr && (module == Py_None || PyUnicode_Check(module))
                             ? Py_NewRef(module)
                             : PyUnicode_FromString("<string>");
  PyObject* message =
    PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
  const int result = owned_module != nullptr && message != nullptr
                       ? PyErr_WarnExplicitObject(category, message, code->co_filename, lineno,
                                                  owned_module, registry)
                       : -1;
  Py_XDECREF(owned_module);
  Py_XDECREF(message);
  return result;
}

} // namespace

bool WarningBuffer::issue(PyObject* frames, bool in_exception) {
  if (entries_.empty())
    return true;
  PyObject* place = PyTuple_GET_ITEM(frames, PyTuple_GET_SIZE(frames) - 1);
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  if (in_exception)
    PyErr_Fetch(&type, &value, &tb);
  bool ok = true;
  for (const Entry& w : entries_) {
    const std::string message = ::torch::processErrorMsg(w.message);
    int result = 0;
    if (w.where.file == nullptr) {
      result = warn_at(place, PyExc_RuntimeWarning, message);
    } else if (w.verbatim) {
      result = PyErr_WarnExplicit(PyExc_UserWarning, message.c_str(), w.where.file,
                                  static_cast<int>(w.where.line), nullptr, nullptr);
    } else {
      result = warn_at(place, PyExc_UserWarning,
                       message + " (Triggered internally at  " + w.where.file + ":" +
                         std::to_string(w.where.line) + ".)");
    }
    if (result < 0) {
      if (!in_exception) {
        ok = false;
        break;
      }
      PyErr_Print(); // as torch does with a warning that fails during an exception
    }
  }
  entries_.clear();
  if (in_exception)
    PyErr_Restore(type, value, tb);
  return ok;
}

} // namespace actorgrad::python
