#include "tests/support/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/ops.h"

namespace actorgrad::testing {

namespace {

using Values = std::vector<std::vector<double>>;

Values values_of(const std::vector<Tensor>& ts) {
  Values v;
  for (const auto& t : ts)
    v.push_back(t.defined() ? t.to_vector() : std::vector<double>{});
  return v;
}

/// Fresh tensors shaped like `proto` holding `vals`; the ones whose
/// prototype requires grad are leaves that require grad.
std::vector<Tensor> make_inputs(const std::vector<Tensor>& proto, const Values& vals) {
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < proto.size(); ++i) {
    if (!proto[i].defined()) {
      out.emplace_back();
      continue;
    }
    Tensor t = Tensor::from_vector(vals[i], proto[i].shape(), proto[i].dtype(), proto[i].device());
    if (proto[i].requires_grad())
      t.set_requires_grad(true);
    out.push_back(t);
  }
  return out;
}

std::vector<std::size_t> differentiable(const std::vector<Tensor>& inputs) {
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !inputs[i].requires_grad())
      continue;
    if (inputs[i].dtype() != DType::f64)
      throw std::invalid_argument("gradcheck: differentiable input " + std::to_string(i) +
                                  " must be float64, not " + inputs[i].describe());
    idx.push_back(i);
  }
  if (idx.empty())
    throw std::invalid_argument("gradcheck: no input requires grad");
  return idx;
}

Tensor one_hot(const Tensor& like, std::int64_t pos) {
  std::vector<double> v(static_cast<std::size_t>(like.numel()), 0.0);
  v[static_cast<std::size_t>(pos)] = 1.0;
  return Tensor::from_vector(v, like.shape(), like.dtype(), like.device());
}

/// `g` as values, or zeros when it is undefined (an unused input); records a
/// failure when its shape is not that of `input`.
std::vector<double> grad_values(const Tensor& g, const Tensor& input, const std::string& what,
                                GradcheckResult& r) {
  if (!g.defined())
    return std::vector<double>(static_cast<std::size_t>(input.numel()), 0.0);
  if (g.shape() != input.shape()) {
    r.ok = false;
    r.message +=
      what + ": gradient " + g.describe() + " does not match input " + input.describe() + "; ";
    return std::vector<double>(static_cast<std::size_t>(input.numel()), 0.0);
  }
  return g.to_vector();
}

/// d eval / d vals[k][e] for every k in `which`: result[w][e][j].
std::vector<std::vector<std::vector<double>>>
numeric_jacobian(const std::function<std::vector<double>(const Values&)>& eval, Values vals,
                 const std::vector<std::size_t>& which, double eps) {
  std::vector<std::vector<std::vector<double>>> jac;
  for (std::size_t k : which) {
    auto& column_set = jac.emplace_back();
    for (std::size_t e = 0; e < vals[k].size(); ++e) {
      const double orig = vals[k][e];
      vals[k][e] = orig + eps;
      auto plus = eval(vals);
      vals[k][e] = orig - eps;
      auto minus = eval(vals);
      vals[k][e] = orig;
      std::vector<double> col(plus.size());
      for (std::size_t j = 0; j < plus.size(); ++j)
        col[j] = (plus[j] - minus[j]) / (2 * eps);
      column_set.push_back(std::move(col));
    }
  }
  return jac;
}

/// Accumulates the comparison of analytic and numeric entries.
class Comparer {
public:
  Comparer(const GradcheckOptions& o, GradcheckResult& r) : o_(o), r_(r) {}

  void add(double analytic, double numeric, const std::string& where) {
    const double err = std::abs(analytic - numeric);
    const double scale = std::max(std::abs(analytic), std::abs(numeric));
    r_.max_abs_err = std::max(r_.max_abs_err, err);
    if (scale > 0)
      r_.max_rel_err = std::max(r_.max_rel_err, err / scale);
    const bool pass =
      err <= o_.atol + o_.rtol * std::abs(numeric) && !std::isnan(analytic) && !std::isnan(numeric);
    if (pass)
      return;
    ++failures_;
    if (!(err <= worst_)) {
      worst_ = err;
      std::ostringstream s;
      s.precision(10);
      s << where << ": analytic " << analytic << " vs numeric " << numeric;
      worst_where_ = s.str();
    }
  }

  void finish() {
    if (failures_ == 0)
      return;
    r_.ok = false;
    r_.message += std::to_string(failures_) + " entries differ; worst " + worst_where_;
  }

private:
  const GradcheckOptions& o_;
  GradcheckResult& r_;
  int failures_ = 0;
  double worst_ = -1;
  std::string worst_where_;
};

} // namespace

GradcheckResult gradcheck(const TensorFn& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  AutoGradMode grad_on(true);
  GradcheckResult r;
  const auto diff = differentiable(inputs);
  const Values vals = values_of(inputs);

  auto eval = [&](const Values& v) {
    NoGradGuard no_grad;
    return f(make_inputs(inputs, v)).to_vector();
  };
  const auto numeric = numeric_jacobian(eval, vals, diff, options.eps);

  auto xs = make_inputs(inputs, vals);
  variable_list diff_xs;
  for (std::size_t k : diff)
    diff_xs.push_back(xs[k]);
  Tensor out = f(xs);
  const std::int64_t m = out.numel();
  // analytic[w][e][j] = d out_j / d input_{diff[w]}[e]
  std::vector<std::vector<std::vector<double>>> analytic(diff.size());
  for (std::size_t w = 0; w < diff.size(); ++w)
    analytic[w].assign(vals[diff[w]].size(), std::vector<double>(static_cast<std::size_t>(m), 0.0));
  if (out.requires_grad()) {
    for (std::int64_t j = 0; j < m; ++j) {
      auto gs =
        grad({out}, diff_xs,
             {.grad_outputs = {one_hot(out, j)}, .retain_graph = true, .allow_unused = true});
      if (gs.size() != diff.size()) {
        r.ok = false;
        r.message += "grad returned " + std::to_string(gs.size()) + " results for " +
                     std::to_string(diff.size()) + " inputs; ";
        return r;
      }
      for (std::size_t w = 0; w < diff.size(); ++w) {
        auto g = grad_values(gs[w], xs[diff[w]], "input " + std::to_string(diff[w]), r);
        for (std::size_t e = 0; e < g.size(); ++e)
          analytic[w][e][static_cast<std::size_t>(j)] = g[e];
      }
    }
  }

  Comparer cmp(options, r);
  for (std::size_t w = 0; w < diff.size(); ++w)
    for (std::size_t e = 0; e < analytic[w].size(); ++e)
      for (std::size_t j = 0; j < static_cast<std::size_t>(m); ++j)
        cmp.add(analytic[w][e][j], numeric[w][e][j],
                "d out[" + std::to_string(j) + "] / d input " + std::to_string(diff[w]) + "[" +
                  std::to_string(e) + "]");
  cmp.finish();
  return r;
}

GradcheckResult gradgradcheck(const TensorFn& f, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options) {
  AutoGradMode grad_on(true);
  GradcheckResult r;
  const auto diff = differentiable(inputs);
  const std::size_t u_index = inputs.size(); // the grad_output is the last variable

  Tensor out_shape_probe;
  {
    NoGradGuard no_grad;
    out_shape_probe = f(inputs);
  }
  const Tensor u0 = Tensor::randn(out_shape_probe.shape(), options.seed, out_shape_probe.dtype(),
                                  out_shape_probe.device());
  std::vector<Tensor> v;
  for (std::size_t w = 0; w < diff.size(); ++w)
    v.push_back(Tensor::randn(inputs[diff[w]].shape(), options.seed + 1 + w, DType::f64,
                              inputs[diff[w]].device()));

  Values vals = values_of(inputs);
  vals.push_back(u0.to_vector());
  auto make_u = [&](const Values& vv) {
    return Tensor::from_vector(vv[u_index], u0.shape(), u0.dtype(), u0.device());
  };
  auto diff_of = [&](const std::vector<Tensor>& xs) {
    variable_list d;
    for (std::size_t k : diff)
      d.push_back(xs[k]);
    return d;
  };

  // H(x, u) by a first-order backward, in doubles.
  auto eval = [&](const Values& vv) {
    auto xs = make_inputs(inputs, vv);
    Tensor out = f(xs);
    double h = 0;
    if (out.requires_grad()) {
      auto gs = grad({out}, diff_of(xs), {.grad_outputs = {make_u(vv)}, .allow_unused = true});
      for (std::size_t w = 0; w < diff.size() && w < gs.size(); ++w) {
        if (!gs[w].defined())
          continue;
        auto g = gs[w].to_vector();
        auto vw = v[w].to_vector();
        for (std::size_t e = 0; e < g.size() && e < vw.size(); ++e)
          h += g[e] * vw[e];
      }
    }
    return std::vector<double>{h};
  };
  auto which = diff;
  which.push_back(u_index);
  const auto numeric = numeric_jacobian(eval, vals, which, options.eps);

  // Analytic: grad of H = sum_k sum(g_k * v_k), g built with create_graph.
  auto xs = make_inputs(inputs, vals);
  Tensor u = make_u(vals);
  u.set_requires_grad(true);
  variable_list wrt = diff_of(xs);
  wrt.push_back(u);
  std::vector<std::vector<double>> analytic;
  for (const auto& t : wrt)
    analytic.emplace_back(static_cast<std::size_t>(t.numel()), 0.0);

  Tensor out = f(xs);
  if (out.requires_grad()) {
    auto gs =
      grad({out}, diff_of(xs), {.grad_outputs = {u}, .create_graph = true, .allow_unused = true});
    Tensor h;
    for (std::size_t w = 0; w < diff.size() && w < gs.size(); ++w) {
      if (!gs[w].defined())
        continue;
      if (gs[w].shape() != xs[diff[w]].shape()) {
        r.ok = false;
        r.message += "first-order gradient of input " + std::to_string(diff[w]) + " is " +
                     gs[w].describe() + ", input is " + xs[diff[w]].describe() + "; ";
        return r;
      }
      Tensor term = sum(mul(gs[w], v[w]));
      h = h.defined() ? add(h, term) : term;
    }
    if (h.defined() && h.requires_grad()) {
      auto second = grad({h}, wrt, {.allow_unused = true});
      for (std::size_t i = 0; i < wrt.size() && i < second.size(); ++i)
        analytic[i] = grad_values(
          second[i], wrt[i],
          i < diff.size() ? "input " + std::to_string(diff[i]) : std::string("grad_output"), r);
    }
  }

  Comparer cmp(options, r);
  for (std::size_t i = 0; i < wrt.size(); ++i) {
    const std::string name =
      i < diff.size() ? "input " + std::to_string(diff[i]) : std::string("grad_output");
    for (std::size_t e = 0; e < analytic[i].size(); ++e)
      cmp.add(analytic[i][e], numeric[i][e][0], "d2 / d " + name + "[" + std::to_string(e) + "]");
  }
  cmp.finish();
  return r;
}

} // namespace actorgrad::testing
