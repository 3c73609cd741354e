#pragma once
/// @file torch_cases.h
/// The same graph shapes built with libtorch ops, run by libtorch's own
/// engine and by direct calls of its nodes in ready order (the lower bound).
/// Compiled only when libtorch is found (ACTORGRAD_BENCH_HAVE_TORCH).

#include <cstddef>
#include <memory>
#include <string>

namespace actorgrad::bench::torchb {

struct TorchGraph;

/// kind: chain_passthrough, chain_mul, fan, mlp, random_dag; n: nodes / width.
std::shared_ptr<TorchGraph> make(const std::string& kind, int n);
/// Nodes the backward runs (reachable from the root's grad_fn).
std::size_t nodes(const TorchGraph& g);
/// torch::autograd::backward with retain_graph.
void backward(TorchGraph& g);
/// The same nodes called directly (`(*node)(inputs)`) in ready order.
void sequential(TorchGraph& g);

} // namespace actorgrad::bench::torchb
