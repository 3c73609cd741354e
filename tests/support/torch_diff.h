#pragma once
/// @file torch_diff.h
/// The torch comparison harness: differential runs of a libtorch program,
/// the same lambda run once on libtorch's stock engine and once on
/// actorgrad's (actorgrad::torch::Scope), each from the same seed, and the
/// named tensors they return (gradients, parameters, losses) compared
/// bitwise; with Boost.Test checks for the bridge's tests, whose bodies
/// return their tensors by position (Results). Header-only: only the torch
/// tests include it (they link libtorch and actorgrad_torch).

#include <torch/torch.h> // libtorch first

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "actorgrad/actors/default_engine.h"
#include "actorgrad/actors/torch/install.h"

namespace actorgrad::testing {

/// The engine settings of the bridge's runs: ACTORGRAD_CPU_WORKERS CPU
/// workers and ACTORGRAD_CPU_SPREAD_BRANCH (ctest runs the bridge's and the
/// models' tests with 1 worker and with 2 spreading at the first fork: Note
/// [Parallel CPU nodes] in actors/detail/cpu_lanes.h).
inline actorgrad::EngineConfig bridge_config() { return actorgrad::cpu_lanes_from_env({}); }

/// The tensors a program run returns, by name, in a fixed order.
using NamedTensors = std::vector<std::pair<std::string, ::torch::Tensor>>;

/// A program: builds its model from the global seed, runs backward passes,
/// returns what to compare.
using TorchProgram = std::function<NamedTensors()>;

/// Both runs of one program.
struct DiffRuns {
  NamedTensors stock;
  NamedTensors actor;
  /// Backward calls the actor run made through the bridge, and how many of
  /// them it delegated to the stock engine (actorgrad::torch::stats).
  std::uint64_t actor_calls = 0;
  std::uint64_t actor_delegated = 0;
};

/// Appends every parameter's value and gradient ("<name>", "<name>.grad") of
/// `module`, detached and cloned (later steps must not change them).
inline void add_parameters(NamedTensors& out, const ::torch::nn::Module& module,
                           const std::string& prefix = "") {
  for (const auto& p : module.named_parameters()) {
    out.emplace_back(prefix + p.key(), p.value().detach().clone());
    out.emplace_back(prefix + p.key() + ".grad", p.value().grad().defined()
                                                   ? p.value().grad().detach().clone()
                                                   : ::torch::Tensor());
  }
}

/// Runs `program` on the stock engine, then under an
/// actorgrad::torch::Scope(config), each after ::torch::manual_seed(seed). Throws std::logic_error
/// when the bridge is installed already (the stock run would not be stock) or when the actor run
/// made no backward call on actorgrad (the comparison could not fail).
inline DiffRuns run_both(const TorchProgram& program, std::uint64_t seed = 0,
                         actorgrad::EngineConfig config = bridge_config()) {
  if (actorgrad::torch::installed())
    throw std::logic_error(
      "run_both: the torch bridge is installed already; the stock run would not be stock");
  DiffRuns runs;
  ::torch::manual_seed(seed);
  runs.stock = program();
  {
    actorgrad::torch::Scope scope(std::move(config));
    const auto before = actorgrad::torch::stats();
    ::torch::manual_seed(seed);
    runs.actor = program();
    const auto after = actorgrad::torch::stats();
    runs.actor_calls = after.calls - before.calls;
    runs.actor_delegated = after.delegated - before.delegated;
  }
  if (runs.actor_calls == runs.actor_delegated)
    throw std::logic_error("run_both: the program made no backward call on actorgrad");
  return runs;
}

/// Compares two runs' tensors: same names in the same order, each pair
/// either both undefined or of the same dtype and shape with
/// max |stock - actor| <= tolerance (0: bitwise, ::torch::equal). Returns ""
/// when they agree, else the first mismatch by name with its max abs diff.
inline std::string compare(const NamedTensors& stock, const NamedTensors& actor,
                           double tolerance = 0) {
  std::ostringstream msg;
  if (stock.size() != actor.size()) {
    msg << "stock returned " << stock.size() << " tensors, actorgrad " << actor.size();
    return msg.str();
  }
  for (std::size_t i = 0; i < stock.size(); ++i) {
    const auto& [name, s] = stock[i];
    const auto& [aname, a] = actor[i];
    if (name != aname) {
      msg << "tensor " << i << ": stock names it '" << name << "', actorgrad '" << aname << "'";
      return msg.str();
    }
    if (s.defined() != a.defined()) {
      msg << name << ": defined on " << (s.defined() ? "stock" : "actorgrad") << " only";
      return msg.str();
    }
    if (!s.defined())
      continue;
    if (s.scalar_type() != a.scalar_type() || s.sizes() != a.sizes()) {
      msg << name << ": stock " << s.scalar_type() << s.sizes() << ", actorgrad " << a.scalar_type()
          << a.sizes();
      return msg.str();
    }
    if (tolerance == 0 && ::torch::equal(s, a))
      continue;
    const double diff =
      s.numel() == 0 ? 0.0
                     : (s.to(::torch::kDouble) - a.to(::torch::kDouble)).abs().max().item<double>();
    if (tolerance > 0 && diff <= tolerance)
      continue;
    msg << name << ": max abs diff " << diff
        << (tolerance > 0 ? " > tolerance " : " (bitwise compare)")
        << (tolerance > 0 ? std::to_string(tolerance) : "");
    return msg.str();
  }
  return "";
}

/// The names of `runs`' tensors that are undefined on both (no gradient):
/// a program whose gradients are all undefined compares equal but tests
/// nothing, so tests check this is empty where every parameter trains.
inline std::vector<std::string> undefined_names(const NamedTensors& t) {
  std::vector<std::string> out;
  for (const auto& [name, x] : t)
    if (!x.defined())
      out.push_back(name);
  return out;
}

/// run_both, then every check of a differential model test: the actor run
/// made `calls` backward calls on actorgrad and delegated none, the stock
/// run's tensors are all defined, and compare() finds none that differ.
/// Returns "" or what failed.
inline std::string differential_check(const TorchProgram& program, std::uint64_t calls,
                                      double tolerance = 0, std::uint64_t seed = 0) {
  const DiffRuns runs = run_both(program, seed);
  std::ostringstream msg;
  if (runs.actor_calls != calls || runs.actor_delegated != 0)
    msg << "expected " << calls << " backward calls on actorgrad, got " << runs.actor_calls << " ("
        << runs.actor_delegated << " delegated to the stock engine); ";
  for (const auto& name : undefined_names(runs.stock))
    msg << name << " is undefined (no gradient); ";
  msg << compare(runs.stock, runs.actor, tolerance);
  return msg.str();
}

/// The results of one run of a bridge test's body (gradients, outputs),
/// compared by position.
using Results = std::vector<::torch::Tensor>;

/// `r` named by position ("result 0", ...), for compare().
inline NamedTensors named(Results r) {
  NamedTensors out;
  for (std::size_t i = 0; i < r.size(); ++i)
    out.emplace_back("result " + std::to_string(i), std::move(r[i]));
  return out;
}

/// The tensors of `t`, without their names.
inline Results unnamed(const NamedTensors& t) {
  Results out;
  for (const auto& [name, x] : t)
    out.push_back(x);
  return out;
}

/// run_both for a body that returns Results: {stock, actorgrad}.
template <class Body>
std::pair<Results, Results> run_both_unnamed(Body body,
                                             actorgrad::EngineConfig config = bridge_config()) {
  const auto runs = run_both([&] { return named(body()); }, 0, std::move(config));
  return {unnamed(runs.stock), unnamed(runs.actor)};
}

/// Bitwise equality of two runs' Results (undefined tensors must match too).
/// With CPU workers (bridge_config), within 1e-12: a buffer that three or
/// more gradients reach adds them in a fixed order, which may differ from
/// one thread's in the last bits (Note [Parallel CPU nodes] in
/// actors/detail/cpu_lanes.h). Otherwise bitwise.
inline void check_equal(const Results& stock, const Results& ours) {
  const double tolerance = bridge_config().cpu_workers > 1 ? 1e-12 : 0;
  const std::string diff = compare(named(stock), named(ours), tolerance);
  BOOST_CHECK_MESSAGE(diff.empty(), diff);
}

/// run_both_unnamed + check_equal.
template <class Body>
void check_same(Body body, actorgrad::EngineConfig config = bridge_config()) {
  auto [stock, ours] = run_both_unnamed(body, std::move(config));
  check_equal(stock, ours);
}

/// Detached copies of every gradient in `tensors` (undefined stays undefined).
inline Results grads_of(const std::vector<::torch::Tensor>& tensors) {
  Results r;
  for (const auto& t : tensors)
    r.push_back(t.grad().defined() ? t.grad().detach().clone() : ::torch::Tensor());
  return r;
}

} // namespace actorgrad::testing
