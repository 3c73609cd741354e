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

/// kind: chain_passthrough, chain_mul, fan, mlp, transformer, random_dag,
/// ensemble (n MLPs of 4 x (Linear(64, 64) + Tanh), batch 32, float32); n:
/// nodes / width / models (unused by mlp and transformer).
std::shared_ptr<TorchGraph> make(const std::string& kind, int n);
/// Nodes the backward runs (reachable from the root's grad_fn).
std::size_t nodes(const TorchGraph& g);
/// torch::autograd::backward with retain_graph.
void backward(TorchGraph& g);
/// One intra-op thread (at::set_num_threads(1)): every instruction of a
/// node's work then runs inside its apply, on the thread that calls it.
void single_intra_op_thread();
/// libtorch with `n` intra-op threads (at::set_num_threads).
void intra_op_threads(int n);
/// Makes actorgrad's actor engine libtorch's default engine for the rest of
/// the process (actorgrad::torch::install, once); throws std::runtime_error
/// in a build without the bridge (actorgrad_torch).
void install_bridge();
/// The same nodes called directly (`(*node)(inputs)`) in ready order.
void sequential(TorchGraph& g);

} // namespace actorgrad::bench::torchb
