/// @file module.cpp
/// `actorgrad._C`: the Python side of the torch bridge (tools/python/actorgrad/
/// torch.py is its Python API). install() makes the actor engine libtorch's
/// default engine (actors/torch/install.h: TorchScript and C++ callers);
/// torch.py also puts an object with this module's run_backward,
/// queue_callback and is_checkpoint_valid in
/// `torch.autograd.Variable._execution_engine`, which every Python backward
/// calls.

#include <dlfcn.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>

#include "actorgrad/actors/default_engine.h"
#include "actorgrad/actors/torch/detail/nodes_in_graph.h"
#include "actorgrad/actors/torch/install.h"
#include "actorgrad/actors/torch/python/fast_backward.h"
#include "actorgrad/actors/torch/python/run_backward.h"
#include "actorgrad/tools/trace/detail/summary.h"
#include "actorgrad/tools/trace/report_files.h"
#include "actorgrad/tools/trace/timeline.h"
#include "actorgrad/tools/trace/trace_request.h"

namespace py = pybind11;

namespace actorgrad::python {
namespace {

/// What a profile() recorded: the message flow of its backward passes.
class Recording {
public:
  explicit Recording(trace::Trace t) : timeline_(trace::build_timeline(t)) {
    timeline_.processes.front().name = trace::TraceProcess::current().label();
  }
  /// Writes the Chrome trace (Perfetto, `actorgrad trace --in`).
  void save(const std::string& path) const {
    trace::ReportPaths paths;
    paths.json = path;
    write(paths);
  }
  /// Writes the self-contained HTML report.
  void save_html(const std::string& path) const {
    trace::ReportPaths paths;
    paths.html = path;
    write(paths);
  }
  /// Writes the per-op table as CSV.
  void save_ops_csv(const std::string& path) const {
    trace::ReportPaths paths;
    paths.ops_csv = path;
    write(paths);
  }
  /// The text summary (per-actor load, operations, message edges, per pass
  /// its parallelism and critical path), each list cut to `top` rows (0: all).
  std::string summary(std::size_t top) const {
    return trace::detail::format_summary(timeline_, trace::detail::summarize(timeline_), top);
  }

private:
  /// Writes `paths`, each with `%p`, `%r` and `%%` expanded as in
  /// ACTORGRAD_TRACE (Note [Trace file names of many processes]).
  void write(trace::ReportPaths paths) const {
    py::gil_scoped_release no_gil;
    const trace::TraceProcess me = trace::TraceProcess::current();
    for (std::string* path : {&paths.json, &paths.html, &paths.ops_csv})
      if (!path->empty() && *path != "-")
        *path = trace::expand_trace_path(*path, me);
    trace::write_reports(timeline_, paths);
  }
  trace::Timeline timeline_;
};

PyMethodDef engine_methods[] = {
  {"run_backward", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(run_backward)),
   METH_FASTCALL | METH_KEYWORDS,
   "torch 1.13's Variable._execution_engine.run_backward, on actorgrad"},
  {"queue_callback", queue_callback, METH_O, "Runs a callable when the current backward ends"},
  {"is_checkpoint_valid", is_checkpoint_valid, METH_NOARGS, "torch's is_checkpoint_valid"},
  {nullptr, nullptr, 0, nullptr}};

} // namespace
} // namespace actorgrad::python

PYBIND11_MODULE(_C, m) {
  using namespace actorgrad;
  using actorgrad::python::Recording;
  m.doc() = "actorgrad's torch bridge (see actorgrad.torch)";
  for (PyMethodDef* def = actorgrad::python::engine_methods; def->ml_name; ++def)
    m.add_object(def->ml_name, py::reinterpret_steal<py::object>(
                                 PyCFunction_NewEx(def, nullptr, m.attr("__name__").ptr())));
  m.def(
    "install",
    [](const std::string& devices, int max_recursion_depth, std::size_t cpu_workers) {
      EngineConfig config;
      config.devices = parse_devices(devices);
      config.max_recursion_depth = max_recursion_depth;
      config.cpu_workers = cpu_workers;
      torch::install(std::move(config));
      torch::take_over_distributed_autograd();
    },
    py::arg("devices") = "", py::arg("max_recursion_depth") = 60, py::arg("cpu_workers") = 1,
    "Makes the actor engine libtorch's default engine (devices as ACTORGRAD_DEVICES: 'sim:2').");
  m.def("uninstall", &torch::uninstall, "Restores libtorch's default engine.");
  m.def(
    "engine_config",
    [] {
      const EngineConfig& c = torch::engine().config();
      py::list devices;
      for (Device d : c.devices)
        devices.append(d.str());
      return py::dict(py::arg("devices") = devices,
                      py::arg("max_recursion_depth") = c.max_recursion_depth,
                      py::arg("cpu_workers") = c.cpu_workers);
    },
    "The installed engine's settings (raises when not installed).");
  m.def(
    "debug_info_counts_actors",
    [] { return dlsym(RTLD_DEFAULT, "actorgrad_debug_info_counts_actors") != nullptr; },
    "Whether DistEngine::getDebugInfo counts the passes on actors already (the preload "
    "library's definition: Note [Counting the passes that run on actors] in preload.cpp).");
  m.def("installed", &torch::installed);
  m.def("stats", [] {
    const auto s = torch::stats();
    return py::dict(py::arg("calls") = s.calls, py::arg("delegated") = s.delegated,
                    py::arg("fast_backward") = actorgrad::python::fast_backward_calls(),
                    py::arg("distributed_parts") = s.distributed_parts,
                    py::arg("distributed_running") = s.distributed_running,
                    py::arg("distributed_taken_over") = s.distributed_taken_over);
  });
  m.def(
    "enable_fast_backward",
    [](py::object stock, py::object autograd_backward, py::object engine,
       py::object prologue_frames) {
      PyObject* method = actorgrad::python::enable_fast_backward(
        stock.ptr(), autograd_backward.ptr(), engine.ptr(), prologue_frames.ptr());
      if (method == nullptr)
        throw py::error_already_set();
      return py::reinterpret_steal<py::object>(method);
    },
    "The method that replaces torch.Tensor.backward (Note [Fast Tensor.backward]).");
  m.def("disable_fast_backward", &actorgrad::python::disable_fast_backward);
  m.def("fill_nodes_in_graph", &actorgrad::torch::detail::fill_current_nodes_in_graph,
        "Fills the current call's nodes_in_graph_ for torch._C._will_engine_execute_node "
        "(Note [Nodes in graph on demand]).");
  m.def("start_recording", [] { torch::engine().start_recording(); });
  m.def("stop_recording", [] { return Recording(torch::engine().stop_recording()); });
  py::class_<Recording>(m, "Recording")
    .def("save", &Recording::save, py::arg("path"))
    .def("save_html", &Recording::save_html, py::arg("path"))
    .def("save_ops_csv", &Recording::save_ops_csv, py::arg("path"))
    .def("summary", &Recording::summary, py::arg("top") = 20);
}
