#pragma once
/// @file graph_ops.h
/// Shorthands that add op nodes for the common differentiable ops
/// (each is `add_op` with the matching closure; `name` defaults to the op).

#include <string>

#include "actorgrad/libengine/graph/graph.h"

namespace actorgrad::define_once {

/// a + b
NodeId add(Graph& g, NodeId a, NodeId b, std::string name = "add");
/// a - b
NodeId sub(Graph& g, NodeId a, NodeId b, std::string name = "sub");
/// a * b (elementwise)
NodeId mul(Graph& g, NodeId a, NodeId b, std::string name = "mul");
/// a / b (elementwise)
NodeId div(Graph& g, NodeId a, NodeId b, std::string name = "div");
/// a @ b
NodeId matmul(Graph& g, NodeId a, NodeId b, std::string name = "matmul");
/// a * s + t, for scalars s and t
NodeId affine(Graph& g, NodeId a, double s, double t, std::string name = "affine");
NodeId relu(Graph& g, NodeId a, std::string name = "relu");
NodeId tanh(Graph& g, NodeId a, std::string name = "tanh");
NodeId sigmoid(Graph& g, NodeId a, std::string name = "sigmoid");
NodeId exp(Graph& g, NodeId a, std::string name = "exp");
/// Sum of all elements (0-dim).
NodeId sum(Graph& g, NodeId a, std::string name = "sum");
/// Mean of all elements (0-dim).
NodeId mean(Graph& g, NodeId a, std::string name = "mean");
/// A differentiable copy to `device` (moves the rest of a branch there).
NodeId to_device(Graph& g, NodeId a, Device device, std::string name = "to_device");

} // namespace actorgrad::define_once
