#define BOOST_TEST_MODULE actors_equivalence
#include <boost/test/unit_test.hpp>

// The actor Engine against the sequential ReferenceExecutor on 1,000+
// seeded random DAGs: mixed ops, fan-in, fan-out, several roots with
// grad_tensors, inputs= subsets for grad() and backward(), values spread over
// cpu, sim:0, sim:1 and sim:2. Gradients are float64; they must be bitwise
// equal where both engines accumulate in the same order, else within 1e-12
// relative (|a - b| <= 1e-12 * max(|a|, |b|, 1)). The number of bitwise-equal
// graphs is reported (BOOST_TEST_MESSAGE, visible with --log_level=message).
// With 2 and 4 CPU workers (EngineConfig::cpu_workers) CPU-only and
// cross-device DAGs are run 20 times per call: within 1e-12 of the reference,
// and a CPU-only call bitwise equal to its first run every time.

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/engine/reference_executor.h"
#include "tests/actors/actor_test_util.h"
#include "tests/support/random_dag.h"

using namespace actorgrad;
using namespace actorgrad::testing;

namespace {

constexpr int kNumGraphs = 1000;
constexpr double kTol = 1e-12;

enum class Match { bitwise, close, mismatch };

/// Compares two gradient lists; `where` names the call for messages.
Match compare(const variable_list& ref, const variable_list& act, const std::string& where) {
  if (ref.size() != act.size()) {
    BOOST_ERROR(where << ": " << ref.size() << " reference results, " << act.size() << " actor");
    return Match::mismatch;
  }
  Match m = Match::bitwise;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (ref[i].defined() != act[i].defined()) {
      BOOST_ERROR(where << ": result " << i << " defined in "
                        << (ref[i].defined() ? "reference only" : "actor engine only"));
      return Match::mismatch;
    }
    if (!ref[i].defined())
      continue;
    if (ref[i].shape() != act[i].shape() || ref[i].device() != act[i].device()) {
      BOOST_ERROR(where << ": result " << i << " is " << ref[i].describe() << " in reference, "
                        << act[i].describe() << " in actor engine");
      return Match::mismatch;
    }
    auto a = ref[i].to_vector();
    auto b = act[i].to_vector();
    if (bitwise_equal(a, b))
      continue;
    if (!close(a, b, kTol)) {
      std::ostringstream os;
      for (std::size_t k = 0; k < a.size(); ++k)
        os << " " << a[k] << "/" << b[k];
      BOOST_ERROR(where << ": result " << i << " differs beyond " << kTol
                        << " (ref/actor):" << os.str());
      return Match::mismatch;
    }
    m = Match::close;
  }
  return m;
}

variable_list grads_of(const std::vector<Tensor>& ts) {
  variable_list out;
  for (const auto& t : ts)
    out.push_back(t.grad());
  return out;
}

/// Runs `f`; returns the message of the exception it threw, or "".
template <class F>
std::string attempt(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

/// Runs `f`; an exception fails the test naming the call and the graph.
template <class F>
void guarded(const char* call, const std::string& where, F f) {
  try {
    f();
  } catch (const std::exception& e) {
    BOOST_FAIL(call << " threw on " << where << ": " << e.what());
  }
}

void clear_grads(const std::vector<Tensor>& ts) {
  for (auto t : ts)
    t.set_grad(Tensor());
}

} // namespace

using SharedEngineFixture = SharedEngine<3>;
BOOST_TEST_GLOBAL_FIXTURE(SharedEngineFixture);

BOOST_AUTO_TEST_CASE(random_dags_match_reference_executor) {
  ReferenceExecutor reference;
  Engine& eng = engine();
  int both_failed = 0;
  int bitwise = 0, close_only = 0, mismatches = 0, multi_root = 0, cross_device = 0, calls = 0;
  double worst_rel = 0;
  const auto start = std::chrono::steady_clock::now();

  for (int gi = 0; gi < kNumGraphs; ++gi) {
    RandomDagGenerator gen(0x5eed0000ULL + static_cast<std::uint64_t>(gi));
    RandomDag g = gen.build();
    if (g.roots.size() > 1)
      ++multi_root;
    if (g.devices_used > 1)
      ++cross_device;
    const std::string& where = g.description;
    Match graph_match = Match::bitwise;
    // Both executors must fail alike where the reference fails (same
    // message); such calls are counted, not compared.
    auto note_errors = [&](const std::string& r, const std::string& a, const std::string& what) {
      if (r.empty() && a.empty())
        return;
      ++both_failed;
      if (both_failed <= 3)
        BOOST_TEST_MESSAGE("both executors failed on " << what << ": " << r);
      if (r != a) {
        BOOST_ERROR(what << ": reference " << (r.empty() ? "succeeded" : "failed: " + r)
                         << "; actor engine " << (a.empty() ? "succeeded" : "failed: " + a));
        graph_match = Match::mismatch;
      }
    };
    auto note = [&](Match m) {
      if (m == Match::mismatch)
        graph_match = Match::mismatch;
      else if (m == Match::close && graph_match == Match::bitwise)
        graph_match = Match::close;
    };

    // (1) grad(outputs, inputs): a random subset of all values (leaves and
    //     intermediates) as inputs; unused inputs allowed.
    std::vector<Tensor> inputs;
    for (const auto& v : g.values)
      if (gen.coin(0.4))
        inputs.push_back(v);
    if (inputs.empty())
      inputs.push_back(g.leaves[0]);
    variable_list ref, act;
    const GradOptions grad_options{
      .grad_outputs = g.root_grads, .retain_graph = true, .allow_unused = true};
    const std::string ref_err =
      attempt([&] { ref = grad(g.roots, inputs, grad_options, reference); });
    const std::string act_err = attempt([&] { act = grad(g.roots, inputs, grad_options, eng); });
    std::string inputs_desc = where + " inputs=";
    for (const auto& t : inputs)
      for (std::size_t k = 0; k < g.values.size(); ++k)
        if (g.values[k].is_same(t))
          inputs_desc += " [" + std::to_string(k) + "]";
    note_errors(ref_err, act_err, "grad(): " + inputs_desc);
    note(compare(ref, act, "grad(): " + where));
    calls += 2;

    // (2) backward() into every leaf's .grad.
    std::vector<Tensor> all_grads = g.values;
    clear_grads(all_grads);
    const BackwardOptions retained{.grad_tensors = g.root_grads, .retain_graph = true};
    guarded("reference backward()", where, [&] { backward(g.roots, retained, reference); });
    variable_list ref_b = grads_of(g.leaves);
    clear_grads(all_grads);
    guarded("actor backward()", where, [&] { backward(g.roots, retained, eng); });
    variable_list act_b = grads_of(g.leaves);
    note(compare(ref_b, act_b, "backward(): " + where));
    calls += 2;

    // (3) backward(inputs=) with a subset of leaves and intermediates; the
    //     last call (actor engine) sometimes frees the graph.
    const std::vector<Tensor> subset = gen.subset(g.values, 0.3);
    std::string subset_desc = where + " inputs=";
    for (const auto& t : subset)
      for (std::size_t k = 0; k < g.values.size(); ++k)
        if (g.values[k].is_same(t))
          subset_desc += " [" + std::to_string(k) + "]";
    clear_grads(all_grads);
    BackwardOptions subset_options{
      .grad_tensors = g.root_grads, .retain_graph = true, .inputs = subset};
    const std::string ref_s_err = attempt([&] { backward(g.roots, subset_options, reference); });
    variable_list ref_s = grads_of(g.values);
    clear_grads(all_grads);
    subset_options.retain_graph = gen.coin(0.5);
    const std::string act_s_err = attempt([&] { backward(g.roots, subset_options, eng); });
    variable_list act_s = grads_of(g.values);
    note_errors(ref_s_err, act_s_err, "backward(inputs=): " + subset_desc);
    note(compare(ref_s, act_s, "backward(inputs=): " + where));
    calls += 2;

    // Largest relative difference seen (for the report).
    auto track = [&](const variable_list& x, const variable_list& y) {
      for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
        if (x[i].defined() && y[i].defined() && x[i].numel() == y[i].numel()) {
          auto a = x[i].to_vector(), b = y[i].to_vector();
          for (std::size_t k = 0; k < a.size(); ++k) {
            double s = std::max({std::abs(a[k]), std::abs(b[k]), 1.0});
            worst_rel = std::max(worst_rel, std::abs(a[k] - b[k]) / s);
          }
        }
    };
    track(ref, act);
    track(ref_b, act_b);
    track(ref_s, act_s);

    switch (graph_match) {
    case Match::bitwise: ++bitwise; break;
    case Match::close: ++close_only; break;
    case Match::mismatch: ++mismatches; break;
    }
    if (mismatches > 5)
      BOOST_FAIL("more than 5 graphs differ; stopping");
  }
  const double secs =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST_MESSAGE("equivalence: "
                     << kNumGraphs << " graphs (" << multi_root << " with several roots, "
                     << cross_device << " across devices), " << calls
                     << " backward calls: " << bitwise << " bitwise equal, " << close_only
                     << " within " << kTol << " only, " << mismatches << " mismatched; "
                     << both_failed << " calls failed alike in both executors; largest difference "
                     << worst_rel << "; " << secs << " s");
  BOOST_TEST(mismatches == 0);
  BOOST_TEST(multi_root > 100);
  BOOST_TEST(cross_device > 500);
  BOOST_TEST(bitwise + close_only == kNumGraphs);
  BOOST_TEST(both_failed < kNumGraphs / 10); // most calls are compared, not errors
}

// Several roots on different devices, all of them on a device (the GraphRoot
// runs on cpu, the roots on sim workers) and an explicit grad_tensors list.
BOOST_AUTO_TEST_CASE(multi_root_across_devices_matches) {
  ReferenceExecutor reference;
  Tensor x = Tensor::uniform({3, 3}, -1, 1, 7).set_requires_grad(true);
  Tensor w = Tensor::uniform({3, 3}, -1, 1, 8, DType::f64, Device::sim(1)).set_requires_grad(true);
  Tensor x0 = x.to(Device::sim(0));
  Tensor r0 = tanh(matmul(x0, w.to(Device::sim(0))));
  Tensor r1 = sigmoid(mul(w, x.to(Device::sim(1))));
  Tensor r2 = sum(exp(tanh(x)), {1}, false);
  variable_list roots{r0, r1, r2};
  variable_list gts{Tensor::ones({3, 3}, DType::f64, Device::sim(0)),
                    Tensor::full({3, 3}, 0.5, DType::f64, Device::sim(1)), Tensor::full({3}, -2.0)};
  auto ref = grad(roots, {x, w}, {.grad_outputs = gts, .retain_graph = true}, reference);
  auto act = grad(roots, {x, w}, {.grad_outputs = gts, .retain_graph = true}, engine());
  BOOST_TEST((compare(ref, act, "multi-root") != Match::mismatch));
  BOOST_TEST((act[0].device() == Device::cpu()));
  BOOST_TEST((act[1].device() == Device::sim(1)));
}

namespace {

/// What check_with_cpu_workers found.
struct WorkersOutcome {
  /// Graphs whose every run passed.
  int passed = 0;
  /// ... and were bitwise equal to the reference's.
  int bitwise_to_reference = 0;
  /// Ready tasks the engine's lanes handed each other (EngineStats).
  std::uint64_t tasks_shared = 0;
};

/// Runs grad() of every value and backward() into the leaves' .grad of
/// `graphs` random DAGs (values on `devices`) on an engine with
/// `cpu_workers`, `repeats` times each: every run must be within kTol of the
/// reference executor and, when `same_bits`, bitwise equal to the first run
/// of the same call (Note [Parallel CPU nodes] in actors/detail/cpu_lanes.h:
/// a gradient's bits do not depend on which worker ran what).
WorkersOutcome check_with_cpu_workers(std::size_t cpu_workers, const std::vector<Device>& devices,
                                      std::uint64_t first_seed, int graphs, int repeats,
                                      bool same_bits) {
  EngineConfig config;
  config.cpu_workers = cpu_workers;
  config.cpu_spread_branch = 1; // spread at the first fork: every call takes the lanes
  for (Device d : devices)
    if (!d.is_cpu())
      config.devices.push_back(d);
  Engine eng(std::move(config));
  ReferenceExecutor reference;
  WorkersOutcome out;
  for (int gi = 0; gi < graphs; ++gi) {
    RandomDagGenerator gen(first_seed + static_cast<std::uint64_t>(gi), devices);
    RandomDag g = gen.build();
    const std::string where = std::to_string(cpu_workers) + " cpu workers, " + g.description;
    const GradOptions grad_options{
      .grad_outputs = g.root_grads, .retain_graph = true, .allow_unused = true};
    const BackwardOptions backward_options{.grad_tensors = g.root_grads, .retain_graph = true};
    auto by_grad = [&](Executor& e) { return grad(g.roots, g.values, grad_options, e); };
    auto by_backward = [&](Executor& e) {
      clear_grads(g.values);
      backward(g.roots, backward_options, e);
      return grads_of(g.leaves);
    };
    bool all_bitwise = true;
    for (const auto& [call, run] :
         {std::pair<const char*, std::function<variable_list(Executor&)>>{"grad()", by_grad},
          {"backward()", by_backward}}) {
      variable_list ref, first;
      guarded("reference", where, [&] { ref = run(reference); });
      for (int r = 0; r < repeats; ++r) {
        variable_list act;
        guarded(call, where, [&] { act = run(eng); });
        const Match m =
          compare(ref, act, std::string(call) + " run " + std::to_string(r) + ": " + where);
        if (m == Match::mismatch)
          return out;
        all_bitwise = all_bitwise && m == Match::bitwise;
        if (r == 0)
          first = act;
        else if (same_bits && compare(first, act, where) != Match::bitwise) {
          BOOST_ERROR(call << " run " << r << " differs from run 0 in its bits: " << where);
          return out;
        }
      }
    }
    ++out.passed;
    out.bitwise_to_reference += all_bitwise;
  }
  out.tasks_shared = eng.stats().cpu_tasks_shared;
  return out;
}

} // namespace

// With 2 and 4 CPU workers, each call 20 times: CPU-only DAGs (whose ready
// nodes spread over the workers) within 1e-12 of the reference and with the
// same bits every time; DAGs over cpu and sim devices within 1e-12 of the
// reference (their bits may change from run to run whatever the workers: a
// buffer fed from several device workers sums in arrival order, as in
// PyTorch; one of these 100 graphs did so before any CPU node ran off the
// caller's thread).
BOOST_AUTO_TEST_CASE(random_dags_with_cpu_workers_match_the_reference_and_repeat_bitwise) {
  constexpr int kRepeats = 20;
  const std::vector<Device> cpu_only{Device::cpu()};
  for (std::size_t workers : {std::size_t{2}, std::size_t{4}}) {
    const int cpu_graphs = 300, mixed_graphs = 100;
    const WorkersOutcome cpu =
      check_with_cpu_workers(workers, cpu_only, 0xc0de0000ULL, cpu_graphs, kRepeats, true);
    const WorkersOutcome mixed = check_with_cpu_workers(
      workers, testing::default_dag_devices(), 0x5eed0000ULL, mixed_graphs, kRepeats, false);
    BOOST_TEST(cpu.passed == cpu_graphs, workers << " cpu workers");
    BOOST_TEST(cpu.tasks_shared > 0u, workers << " cpu workers: the nodes really moved");
    BOOST_TEST(mixed.passed == mixed_graphs, workers << " cpu workers");
    BOOST_TEST_MESSAGE(workers << " cpu workers: " << cpu.bitwise_to_reference << " of "
                               << cpu_graphs << " cpu-only and " << mixed.bitwise_to_reference
                               << " of " << mixed_graphs
                               << " cross-device graphs bitwise equal to the reference, each call "
                               << kRepeats << " times");
  }
}
