#include "actorgrad/actors/remote/remote_ops.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <thread>

#include "actorgrad/libengine/autograd/custom_function.h"
#include "actorgrad/libengine/ops.h"

namespace actorgrad::remote {

namespace {

void expect(const std::string& op, const variable_list& xs, std::size_t n, const char* what) {
  if (xs.size() != n)
    throw std::invalid_argument("remote op '" + op + "' takes " + std::to_string(n) + " " + what +
                                ", got " + std::to_string(xs.size()));
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (!xs[i].defined())
      throw std::invalid_argument("remote op '" + op + "': " + what + "[" + std::to_string(i) +
                                  "] is undefined");
}

using Unary = Tensor (*)(const Tensor&);
using Binary = Tensor (*)(const Tensor&, const Tensor&);

variable_list slow_backward(const Tensor& x, const OpAttrs& attrs) {
  const double ms = attrs.numbers.empty() ? 0.0 : attrs.numbers[0];
  const std::string marker = attrs.text;
  return apply_custom_function(
    "SlowBackward", {x},
    [](FunctionContext&, const variable_list& in) { return variable_list{in[0].detach()}; },
    [ms, marker](FunctionContext&, const variable_list& g) {
      if (!marker.empty())
        std::ofstream(marker) << "in backward\n";
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
      return variable_list{g[0]};
    });
}

variable_list nan_backward(const Tensor& x) {
  return apply_custom_function(
    "NanBackward", {x},
    [](FunctionContext&, const variable_list& in) { return variable_list{in[0].detach()}; },
    [](FunctionContext&, const variable_list& g) {
      return variable_list{mul(g[0], std::numeric_limits<double>::quiet_NaN())};
    });
}

} // namespace

variable_list run_remote_op(const std::string& op, const variable_list& args,
                            const variable_list& params, const OpAttrs& attrs, bool test_ops) {
  static const std::map<std::string, Unary> unary = {
    {"relu", &relu}, {"tanh", &tanh}, {"sigmoid", &sigmoid}, {"exp", &exp}};
  static const std::map<std::string, Binary> binary = {
    {"matmul", &matmul}, {"add", &add}, {"sub", &sub}, {"mul", &mul}};
  if (op == "identity") {
    expect(op, args, 1, "arguments");
    return {args[0]};
  }
  if (op == "linear") {
    expect(op, args, 1, "arguments");
    if (params.size() != 1 && params.size() != 2)
      throw std::invalid_argument(
        "remote op 'linear' takes parameters {weight} or {weight, bias}, got " +
        std::to_string(params.size()));
    Tensor y = matmul(args[0], params[0]);
    return {params.size() == 2 ? add(y, params[1]) : y};
  }
  if (auto it = unary.find(op); it != unary.end()) {
    expect(op, args, 1, "arguments");
    return {it->second(args[0])};
  }
  if (auto it = binary.find(op); it != binary.end()) {
    expect(op, args, 2, "arguments");
    return {it->second(args[0], args[1])};
  }
  if (op == "sum" || op == "mean") {
    expect(op, args, 1, "arguments");
    return {op == "sum" ? sum(args[0]) : mean(args[0])};
  }
  if (op == "mse") {
    expect(op, args, 2, "arguments");
    Tensor d = sub(args[0], args[1]);
    return {mean(mul(d, d))};
  }
  if (test_ops && op == "test.slow_backward") {
    expect(op, args, 1, "arguments");
    return slow_backward(args[0], attrs);
  }
  if (test_ops && op == "test.nan_backward") {
    expect(op, args, 1, "arguments");
    return nan_backward(args[0]);
  }
  throw std::invalid_argument(
    "unknown remote op '" + op +
    "' (known: identity, linear, matmul, add, sub, mul, relu, tanh, sigmoid, exp, sum, mean, mse" +
    (test_ops ? ", test.slow_backward, test.nan_backward)" : ")"));
}

} // namespace actorgrad::remote
