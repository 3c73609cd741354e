#pragma once
/// @file dist_engine.h
/// torch.distributed.autograd (libtorch's distributed autograd over RPC) on
/// the actor engine: install() takes over libtorch's DistEngine so that
/// dist_autograd.backward and the gradients other processes send run their
/// local part on actors (see Note [Distributed autograd on actors] in
/// dist_engine.cpp).

namespace actorgrad::torch::detail {

/// Redirects libtorch_cpu's calls of DistEngine::execute and
/// DistEngine::executeSendFunctionAsync to the actor engine (once per
/// process; later calls do nothing). While actorgrad is not installed they
/// go to libtorch's own. Returns whether both were taken over (false: this
/// libtorch calls them some other way, and distributed autograd stays on
/// libtorch's engine).
bool take_over_dist_engine();

} // namespace actorgrad::torch::detail
