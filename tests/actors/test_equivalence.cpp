#define BOOST_TEST_MODULE actors_equivalence
#include <boost/test/unit_test.hpp>

// The actor Engine against the sequential ReferenceExecutor on 1,000+
// seeded random DAGs: mixed ops, fan-in, fan-out, several roots with
// grad_tensors, inputs= subsets for grad() and backward(), values spread over
// cpu, sim:0, sim:1 and sim:2. Gradients are float64; they must be bitwise
// equal where both engines accumulate in the same order, else within 1e-12
// relative (|a - b| <= 1e-12 * max(|a|, |b|, 1)). The number of bitwise-equal
// graphs is reported (BOOST_TEST_MESSAGE, visible with --log_level=message).

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "actors/engine.h"
#include "libengine/autograd.h"
#include "libengine/engine/reference_executor.h"
#include "tests/actors/actor_test_util.h"

using namespace actorgrad;
using namespace actorgrad::actors_test;

namespace {

constexpr int kNumGraphs = 1000;
constexpr double kTol = 1e-12;

const Device kDevices[] = {Device::cpu(), Device::sim(0), Device::sim(1), Device::sim(2)};

/// The engine of this test binary: created and destroyed by the global
/// fixture, inside main. (A static Engine destroyed by exit() crashes in
/// ~actor_system after an async call from the main thread: see the report.)
/// One random DAG: its leaves, every value, the roots and their gradients.
struct RandomGraph {
  std::vector<Tensor> leaves;      ///< require grad
  std::vector<Tensor> values;      ///< every tensor that requires grad (leaves first)
  std::vector<Tensor> roots;
  std::vector<Tensor> root_grads;  ///< one per root
  std::string description;         ///< ops, for failure messages
  std::size_t devices_used = 0;
};

class Generator {
public:
  explicit Generator(std::uint64_t seed) : rng_(seed), seed_(seed) {}

  RandomGraph build() {
    RandomGraph g;
    std::ostringstream desc;
    desc << "seed " << seed_ << ":";
    const int num_leaves = uniform(2, 5);
    std::vector<bool> device_seen(4, false);
    for (int i = 0; i < num_leaves; ++i) {
      Shape s = random_shape();
      Device d = random_device();
      Tensor t = Tensor::uniform(s, -1.0, 1.0, rng_(), DType::f64, d).set_requires_grad(true);
      g.leaves.push_back(t);
      g.values.push_back(t);
      desc << " leaf" << i << shape_str(s) << "@" << d.str();
    }
    // A constant that does not require grad, to mix into binary ops.
    constant_ = Tensor::uniform({1}, 0.5, 1.5, rng_(), DType::f64, random_device());

    const int num_ops = uniform(5, 30);
    for (int i = 0; i < num_ops; ++i) {
      std::string what;
      Tensor out = random_op(g.values, what);
      g.values.push_back(out);
      desc << " [" << g.values.size() - 1 << "]=" << what;
    }

    // Roots: 1..3 of the later values (distinct); sometimes a scalar sum.
    const int num_roots = uniform(1, 3);
    std::vector<std::size_t> picked;
    for (int r = 0; r < num_roots; ++r) {
      std::size_t lo = g.values.size() > 6 ? g.values.size() - 6 : 0;
      std::size_t idx = static_cast<std::size_t>(uniform(static_cast<int>(lo),
                                                         static_cast<int>(g.values.size() - 1)));
      if (std::find(picked.begin(), picked.end(), idx) != picked.end())
        continue;
      picked.push_back(idx);
      Tensor root = g.values[idx];
      if (root.is_leaf())
        root = mul(root, 1.0); // a root with a grad_fn
      if (coin(0.3))
        root = sum(root);
      g.roots.push_back(root);
      g.root_grads.push_back(
        Tensor::uniform(root.shape(), -1.0, 1.0, rng_(), DType::f64, root.device()));
      desc << " root" << idx;
    }
    for (const auto& v : g.values)
      for (int k = 0; k < 4; ++k)
        if (v.device() == kDevices[k])
          device_seen[k] = true;
    g.devices_used = static_cast<std::size_t>(std::count(device_seen.begin(), device_seen.end(), true));
    g.description = desc.str();
    return g;
  }

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(double p) { return std::bernoulli_distribution(p)(rng_); }
  std::mt19937_64& rng() { return rng_; }

private:
  Shape random_shape() {
    switch (uniform(0, 5)) {
    case 0: return {uniform(1, 4)};
    case 1: return {};
    default: return {uniform(1, 4), uniform(1, 4)};
    }
  }

  Device random_device() { return kDevices[uniform(0, 3)]; }

  /// Picks an operand: mostly one of the recent values (chains), sometimes
  /// any (fan-out from early values).
  const Tensor& pick(const std::vector<Tensor>& values) {
    int n = static_cast<int>(values.size());
    if (coin(0.6))
      return values[uniform(std::max(0, n - 4), n - 1)];
    return values[uniform(0, n - 1)];
  }

  /// `b` moved to `a`'s device (a ToCopyBackward crossing actors).
  static Tensor same_device(const Tensor& b, const Tensor& a) { return b.to(a.device()); }

  Tensor random_op(const std::vector<Tensor>& values, std::string& what) {
    const Tensor& a = pick(values);
    switch (uniform(0, 11)) {
    case 0: { // add, with broadcasting when shapes differ
      Tensor b = broadcastable_partner(values, a);
      what = "add";
      return add(a, same_device(b, a));
    }
    case 1: {
      Tensor b = broadcastable_partner(values, a);
      what = "mul";
      return mul(a, same_device(b, a));
    }
    case 2: what = "tanh"; return tanh(a);
    case 3: what = "sigmoid"; return sigmoid(a);
    case 4: what = "exp(tanh)"; return exp(tanh(a)); // small arguments only
    case 5: return matmul_op(values, a, what);
    case 6: return sum_op(a, what);
    case 7: return reshape_op(a, what);
    case 8: return index_select_op(a, what);
    case 9: {
      Device d = random_device();
      what = "to(" + d.str() + ")";
      Tensor out = a.to(d);
      if (out.is_same(a)) // already there: still add a node
        out = mul(out, 0.5);
      return out;
    }
    case 10: { // mul by a constant that does not require grad
      what = "mul(const)";
      return mul(a, same_device(constant_, a));
    }
    default: { // add of two values with fan-in from the whole graph
      const Tensor& b = values[uniform(0, static_cast<int>(values.size()) - 1)];
      what = "add(sum)";
      return add(a, same_device(sum(b), a));
    }
    }
  }

  /// A value broadcastable to `a`'s shape (same shape, a row, a column, a
  /// scalar), or a sum of a random value (0-dim) when none is found.
  Tensor broadcastable_partner(const std::vector<Tensor>& values, const Tensor& a) {
    std::vector<const Tensor*> cands;
    for (const auto& v : values)
      if (is_expandable_to(v.shape(), a.shape()))
        cands.push_back(&v);
    if (!cands.empty() && coin(0.8))
      return *cands[uniform(0, static_cast<int>(cands.size()) - 1)];
    return sum(values[uniform(0, static_cast<int>(values.size()) - 1)]);
  }

  Tensor matmul_op(const std::vector<Tensor>& values, const Tensor& a, std::string& what) {
    if (a.dim() != 2) {
      // vector: outer product v[n,1] @ v[1,n] through reshapes
      Tensor v = reshape(a, {a.numel()});
      what = "outer";
      return matmul(reshape(v, {v.numel(), 1}), reshape(v, {1, v.numel()}));
    }
    // a[m,k] @ b[k,n] when some value has k rows, else a @ a^T
    std::vector<const Tensor*> cands;
    for (const auto& v : values)
      if (v.dim() == 2 && v.size(0) == a.size(1))
        cands.push_back(&v);
    if (!cands.empty() && coin(0.7)) {
      const Tensor& b = *cands[uniform(0, static_cast<int>(cands.size()) - 1)];
      what = "matmul";
      return matmul(a, same_device(b, a));
    }
    what = "matmul(a,aT)";
    return matmul(a, transpose(a, 0, 1));
  }

  Tensor sum_op(const Tensor& a, std::string& what) {
    if (a.dim() == 2) {
      std::int64_t d = uniform(0, 1);
      bool keep = coin(0.5);
      what = "sum(dim " + std::to_string(d) + (keep ? ",keep)" : ")");
      return sum(a, {d}, keep);
    }
    what = "sum";
    return sum(a);
  }

  Tensor reshape_op(const Tensor& a, std::string& what) {
    const std::int64_t n = a.numel();
    what = "reshape";
    if (a.dim() == 2 && coin(0.5))
      return reshape(a, {a.size(1), a.size(0)});
    if (a.dim() == 2)
      return reshape(a, {n});
    if (coin(0.5))
      return reshape(a, {1, n});
    return reshape(a, {n, 1});
  }

  Tensor index_select_op(const Tensor& a, std::string& what) {
    if (a.dim() == 0) {
      what = "reshape(scalar)";
      return reshape(a, {1, 1});
    }
    std::int64_t dim = uniform(0, static_cast<int>(a.dim()) - 1);
    std::int64_t size = a.size(dim);
    std::vector<std::int64_t> index(static_cast<std::size_t>(uniform(1, 4)));
    for (auto& i : index)
      i = uniform(0, static_cast<int>(size) - 1); // repeats: gradients scatter-add
    what = "index_select(dim " + std::to_string(dim) + ")";
    return index_select(a, dim, index);
  }

  std::mt19937_64 rng_;
  std::uint64_t seed_;
  Tensor constant_;
};

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
      BOOST_ERROR(where << ": result " << i << " differs beyond " << kTol << " (ref/actor):"
                        << os.str());
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
    Generator gen(0x5eed0000ULL + static_cast<std::uint64_t>(gi));
    RandomGraph g = gen.build();
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
    std::vector<Tensor> subset;
    for (const auto& v : g.values)
      if (gen.coin(0.3))
        subset.push_back(v);
    if (subset.empty())
      subset.push_back(g.values.back());
    std::string subset_desc = where + " inputs=";
    for (const auto& t : subset)
      for (std::size_t k = 0; k < g.values.size(); ++k)
        if (g.values[k].is_same(t))
          subset_desc += " [" + std::to_string(k) + "]";
    clear_grads(all_grads);
    BackwardOptions subset_options{
      .grad_tensors = g.root_grads, .retain_graph = true, .inputs = subset};
    const std::string ref_s_err =
      attempt([&] { backward(g.roots, subset_options, reference); });
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
  BOOST_TEST_MESSAGE("equivalence: " << kNumGraphs << " graphs (" << multi_root
                                     << " with several roots, " << cross_device
                                     << " across devices), " << calls << " backward calls: "
                                     << bitwise << " bitwise equal, " << close_only
                                     << " within " << kTol << " only, " << mismatches
                                     << " mismatched; " << both_failed
                                     << " calls failed alike in both executors; largest difference "
                                     << worst_rel << "; "
                                     << secs << " s");
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
                    Tensor::full({3, 3}, 0.5, DType::f64, Device::sim(1)),
                    Tensor::full({3}, -2.0)};
  auto ref = grad(roots, {x, w}, {.grad_outputs = gts, .retain_graph = true}, reference);
  auto act = grad(roots, {x, w}, {.grad_outputs = gts, .retain_graph = true}, engine());
  BOOST_TEST((compare(ref, act, "multi-root") != Match::mismatch));
  BOOST_TEST((act[0].device() == Device::cpu()));
  BOOST_TEST((act[1].device() == Device::sim(1)));
}
