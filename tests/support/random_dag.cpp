#include "tests/support/random_dag.h"

#include <algorithm>
#include <sstream>

#include "actorgrad/libengine/ops.h"

namespace actorgrad::testing {

namespace {

/// `b` moved to `a`'s device (a ToCopyBackward crossing actors).
Tensor same_device(const Tensor& b, const Tensor& a) { return b.to(a.device()); }

} // namespace

RandomDag RandomDagGenerator::build() {
  RandomDag g;
  std::ostringstream desc;
  desc << "seed " << seed_ << ":";
  const int num_leaves = uniform(2, 5);
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
    std::size_t idx = static_cast<std::size_t>(
      uniform(static_cast<int>(lo), static_cast<int>(g.values.size() - 1)));
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
  std::vector<Device> seen;
  for (const auto& v : g.values)
    if (std::find(seen.begin(), seen.end(), v.device()) == seen.end())
      seen.push_back(v.device());
  g.devices_used = seen.size();
  g.description = desc.str();
  return g;
}

Shape RandomDagGenerator::random_shape() {
  switch (uniform(0, 5)) {
  case 0: return {uniform(1, 4)};
  case 1: return {};
  default: return {uniform(1, 4), uniform(1, 4)};
  }
}

Device RandomDagGenerator::random_device() {
  return devices_[static_cast<std::size_t>(uniform(0, static_cast<int>(devices_.size()) - 1))];
}

/// Mostly one of the recent values (chains), sometimes any (fan-out from
/// early values).
const Tensor& RandomDagGenerator::pick(const std::vector<Tensor>& values) {
  int n = static_cast<int>(values.size());
  if (coin(0.6))
    return values[uniform(std::max(0, n - 4), n - 1)];
  return values[uniform(0, n - 1)];
}

Tensor RandomDagGenerator::random_op(const std::vector<Tensor>& values, std::string& what) {
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
Tensor RandomDagGenerator::broadcastable_partner(const std::vector<Tensor>& values,
                                                 const Tensor& a) {
  std::vector<const Tensor*> cands;
  for (const auto& v : values)
    if (is_expandable_to(v.shape(), a.shape()))
      cands.push_back(&v);
  if (!cands.empty() && coin(0.8))
    return *cands[uniform(0, static_cast<int>(cands.size()) - 1)];
  return sum(values[uniform(0, static_cast<int>(values.size()) - 1)]);
}

Tensor RandomDagGenerator::matmul_op(const std::vector<Tensor>& values, const Tensor& a,
                                     std::string& what) {
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

Tensor RandomDagGenerator::sum_op(const Tensor& a, std::string& what) {
  if (a.dim() == 2) {
    std::int64_t d = uniform(0, 1);
    bool keep = coin(0.5);
    what = "sum(dim " + std::to_string(d) + (keep ? ",keep)" : ")");
    return sum(a, {d}, keep);
  }
  what = "sum";
  return sum(a);
}

Tensor RandomDagGenerator::reshape_op(const Tensor& a, std::string& what) {
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

Tensor RandomDagGenerator::index_select_op(const Tensor& a, std::string& what) {
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

} // namespace actorgrad::testing
