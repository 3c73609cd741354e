/// @file arithmetic.cpp
/// Differentiable arithmetic: broadcasting binary ops, scalar ops, pow, exp, log.

#include "actorgrad/libengine/ops.h"
#include "actorgrad/libengine/ops/detail/function_node.h"
#include "actorgrad/libengine/tensor/kernels.h"

namespace actorgrad {

using detail::record;
using detail::save_if;

// Binary ops broadcast, so each input's gradient is summed back to its shape.

Tensor add(const Tensor& a, const Tensor& b) {
  auto out = kernels::add(a, b);
  return record("AddBackward", std::move(out), {a, b},
                [sa = a.shape(), sb = b.shape()](const Tensor& g, const auto&,
                                                 const auto& needs) -> variable_list {
                  return {needs[0] ? sum_to(g, sa) : Tensor(), needs[1] ? sum_to(g, sb) : Tensor()};
                });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  auto out = kernels::sub(a, b);
  return record(
    "SubBackward", std::move(out), {a, b},
    [sa = a.shape(), sb = b.shape()](const Tensor& g, const auto&,
                                     const auto& needs) -> variable_list {
      return {needs[0] ? sum_to(g, sa) : Tensor(), needs[1] ? sum_to(neg(g), sb) : Tensor()};
    });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  auto out = kernels::mul(a, b);
  return record("MulBackward", std::move(out), {a, b},
                [sa = a.shape(), sb = b.shape()](const Tensor& g, const variable_list& s,
                                                 const auto& needs) -> variable_list {
                  return {needs[0] ? sum_to(mul(g, s[1]), sa) : Tensor(),
                          needs[1] ? sum_to(mul(g, s[0]), sb) : Tensor()};
                },
                {save_if(b.requires_grad(), a), save_if(a.requires_grad(), b)});
}

Tensor div(const Tensor& a, const Tensor& b) {
  auto out = kernels::div(a, b);
  return record("DivBackward", std::move(out), {a, b},
                [sa = a.shape(), sb = b.shape()](const Tensor& g, const variable_list& s,
                                                 const auto& needs) -> variable_list {
                  return {needs[0] ? sum_to(div(g, s[1]), sa) : Tensor(),
                          needs[1] ? sum_to(neg(div(mul(g, s[0]), mul(s[1], s[1]))), sb)
                                   : Tensor()};
                },
                {save_if(b.requires_grad(), a), b});
}

Tensor neg(const Tensor& a) {
  return record(
    "NegBackward", kernels::neg(a), {a},
    [](const Tensor& g, const auto&, const auto&) -> variable_list { return {neg(g)}; });
}

Tensor add(const Tensor& a, double s) {
  return record("AddBackward", kernels::add_scalar(a, s), {a},
                [](const Tensor& g, const auto&, const auto&) -> variable_list { return {g}; });
}

Tensor mul(const Tensor& a, double s) {
  return record(
    "MulBackward", kernels::mul_scalar(a, s), {a},
    [s](const Tensor& g, const auto&, const auto&) -> variable_list { return {mul(g, s)}; });
}

Tensor pow(const Tensor& a, double exponent) {
  return record("PowBackward", kernels::pow_scalar(a, exponent), {a},
                [exponent](const Tensor& g, const variable_list& s, const auto&) -> variable_list {
                  if (exponent == 0.0)
                    return {mul(g, 0.0)};
                  return {mul(g, mul(pow(s[0], exponent - 1.0), exponent))};
                },
                {a});
}

Tensor pow(const Tensor& a, const Tensor& b) {
  auto out = kernels::pow(a, b);
  // d/da = b * a^(b-1); d/db = a^b * log(a), from the saved output (index 2).
  return record(
    "PowBackward", std::move(out), {a, b},
    [sa = a.shape(), sb = b.shape()](const Tensor& g, const variable_list& s,
                                     const auto& needs) -> variable_list {
      return {needs[0] ? sum_to(mul(g, mul(s[1], pow(s[0], add(s[1], -1.0)))), sa) : Tensor(),
              needs[1] ? sum_to(mul(g, mul(s[2], log(s[0]))), sb) : Tensor()};
    },
    {a, save_if(a.requires_grad(), b)}, b.requires_grad());
}

Tensor exp(const Tensor& a) {
  return record(
    "ExpBackward", kernels::exp(a), {a},
    [](const Tensor& g, const variable_list& s, const auto&) -> variable_list {
      return {mul(g, s[0])};
    },
    {}, true);
}

Tensor log(const Tensor& a) {
  return record("LogBackward", kernels::log(a), {a},
                [](const Tensor& g, const variable_list& s, const auto&) -> variable_list {
                  return {div(g, s[0])};
                },
                {a});
}

} // namespace actorgrad
