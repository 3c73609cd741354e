#include "actorgrad/libengine/graph/graph_ops.h"

#include <utility>

#include "actorgrad/libengine/ops.h"

namespace actorgrad::define_once {

namespace {

template <class F>
NodeId unary(Graph& g, NodeId a, std::string name, F f) {
  return g.add_op(std::move(name), {a}, [f](const variable_list& v) { return f(v[0]); });
}

template <class F>
NodeId binary(Graph& g, NodeId a, NodeId b, std::string name, F f) {
  return g.add_op(std::move(name), {a, b}, [f](const variable_list& v) { return f(v[0], v[1]); });
}

} // namespace

NodeId add(Graph& g, NodeId a, NodeId b, std::string name) {
  return binary(g, a, b, std::move(name),
                [](const Tensor& x, const Tensor& y) { return actorgrad::add(x, y); });
}
NodeId sub(Graph& g, NodeId a, NodeId b, std::string name) {
  return binary(g, a, b, std::move(name),
                [](const Tensor& x, const Tensor& y) { return actorgrad::sub(x, y); });
}
NodeId mul(Graph& g, NodeId a, NodeId b, std::string name) {
  return binary(g, a, b, std::move(name),
                [](const Tensor& x, const Tensor& y) { return actorgrad::mul(x, y); });
}
NodeId div(Graph& g, NodeId a, NodeId b, std::string name) {
  return binary(g, a, b, std::move(name),
                [](const Tensor& x, const Tensor& y) { return actorgrad::div(x, y); });
}
NodeId matmul(Graph& g, NodeId a, NodeId b, std::string name) {
  return binary(g, a, b, std::move(name),
                [](const Tensor& x, const Tensor& y) { return actorgrad::matmul(x, y); });
}
NodeId affine(Graph& g, NodeId a, double s, double t, std::string name) {
  return unary(g, a, std::move(name),
               [s, t](const Tensor& x) { return actorgrad::add(actorgrad::mul(x, s), t); });
}
NodeId relu(Graph& g, NodeId a, std::string name) {
  return unary(g, a, std::move(name), [](const Tensor& x) { return actorgrad::relu(x); });
}
NodeId tanh(Graph& g, NodeId a, std::string name) {
  return unary(g, a, std::move(name), [](const Tensor& x) { return actorgrad::tanh(x); });
}
NodeId sigmoid(Graph& g, NodeId a, std::string name) {
  return unary(g, a, std::move(name), [](const Tensor& x) { return actorgrad::sigmoid(x); });
}
NodeId exp(Graph& g, NodeId a, std::string name) {
  return unary(g, a, std::move(name), [](const Tensor& x) { return actorgrad::exp(x); });
}
NodeId sum(Graph& g, NodeId a, std::string name) {
  return unary(g, a, std::move(name), [](const Tensor& x) { return actorgrad::sum(x); });
}
NodeId mean(Graph& g, NodeId a, std::string name) {
  return unary(g, a, std::move(name), [](const Tensor& x) { return actorgrad::mean(x); });
}
NodeId to_device(Graph& g, NodeId a, Device device, std::string name) {
  return unary(g, a, std::move(name),
               [device](const Tensor& x) { return actorgrad::to_device(x, device); });
}

} // namespace actorgrad::define_once
