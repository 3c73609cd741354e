#pragma once
/// @file graph_builder.h
/// Glue between ops and the backward graph: what an op calls to record itself.

#include <memory>

#include "actorgrad/libengine/autograd/edge.h"
#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad {

class Node;

/// True when grad mode is on and any defined input requires grad.
bool any_requires_grad(const variable_list& inputs);

/// The edge a tensor's gradient flows along: its grad_fn and output_nr, or
/// its leaf's AccumulateGrad (created on first use), or an invalid edge if
/// it does not require grad.
Edge gradient_edge(const Tensor& t);

/// One gradient_edge per input.
edge_list collect_next_edges(const variable_list& inputs);

/// Makes `fn` the grad_fn of `output` and records its input metadata.
void set_history(Tensor& output, const std::shared_ptr<Node>& fn);

/// The existing AccumulateGrad of a leaf, or null (does not create one).
std::shared_ptr<Node> try_get_grad_accumulator(const Tensor& leaf);

} // namespace actorgrad
