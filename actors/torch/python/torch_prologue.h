#pragma once
/// @file torch_prologue.h
/// What torch's Python prologue of a backward call (`Tensor.backward` in
/// torch/_tensor.py, `torch.autograd.backward` in torch/autograd/__init__.py)
/// leaves on what passes through it: its two traceback entries on an
/// exception from the engine, and its line as the place of libtorch's
/// warnings. The fast `Tensor.backward` skips the prologue and puts both
/// back (Note [Fast Tensor.backward] in fast_backward.h).

#include <Python.h>
#include <c10/util/Exception.h>

#include <string>
#include <vector>

namespace actorgrad::python {

/// Whether `frames` is what install()'s probe returns: a tuple of (code,
/// globals dict, lasti, lineno) tuples, outermost first, the last one
/// torch.autograd.backward's call of the engine.
bool valid_prologue_frames(PyObject* frames);

/// Puts the entries of `frames` (valid_prologue_frames) in front of the
/// pending exception's traceback, as if it had passed through them: each
/// a new frame of its code, with its line and instruction, no locals.
/// Leaves the exception as it is where that fails.
void add_prologue_frames(PyObject* frames);

/// Collects the warnings libtorch raises on this thread while installed
/// (c10::Warning::WarningHandlerGuard), to be issued as torch's Python
/// engine issues them, but at torch.autograd.backward's line.
class WarningBuffer final : public c10::WarningHandler {
public:
  void process(const c10::SourceLocation& where, const std::string& message,
               bool verbatim) override;

  /// Issues the collected warnings as torch's PyWarningHandler does, at the
  /// place of the last entry of `frames`: with no C++ location a
  /// RuntimeWarning, verbatim ones at their C++ location, the others a
  /// UserWarning naming the C++ line. `in_exception`: a Python error is
  /// pending, kept; a warning that fails is printed. Otherwise false, with
  /// the Python error, where a warning became an error (a filter).
  bool issue(PyObject* frames, bool in_exception);

private:
  struct Entry {
    c10::SourceLocation where;
    std::string message;
    bool verbatim;
  };
  std::vector<Entry> entries_;
};

} // namespace actorgrad::python
