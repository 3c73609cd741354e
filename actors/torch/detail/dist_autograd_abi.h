#pragma once
/// @file dist_autograd_abi.h
/// The parts of libtorch 1.13's distributed autograd (torch/csrc/distributed/
/// autograd/) that dist_engine.cpp calls, declared here because Debian's
/// libtorch-dev does not ship those headers (/usr/include/torch/csrc/
/// distributed/ has only c10d/ and rpc/).
///
/// Note [Declaring libtorch's distributed autograd]
/// Each declaration below names a function libtorch_cpu.so exports (checked
/// with `readelf --dyn-syms -W libtorch_cpu.so.1.13.0 | c++filt`); a name
/// that is missing fails the link. What the mangled name does not fix was
/// checked against libtorch 1.13's sources and, for the one return type
/// that matters most, the machine code: DistEngine::executeSendFunctionAsync
/// writes one pointer through its hidden return slot (objdump: `mov
/// %r14,(%rax)` before `ret`), so it returns c10::intrusive_ptr<Future>, as
/// 1.13's dist_engine.h says. The classes are declared with no data members
/// and are only used through pointers libtorch made; members private in
/// libtorch are public here (access is not part of a symbol's name).

#include <ATen/core/ivalue.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/graph_task.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace torch::distributed::autograd {

class SendRpcBackward;

/// One distributed autograd context of this process (context/context.h).
class DistAutogradContext {
public:
  int64_t contextId() const;
  /// Adds `grad` into the context's gradient of `variable` (what
  /// dist_autograd.get_gradients returns); steals `grad` when it holds at
  /// most `num_expected_refs` references.
  void accumulateGrad(const at::Tensor& variable, const at::Tensor& grad, size_t num_expected_refs);
  /// The pass's libtorch GraphTask (RecvRpcBackward reads its keep_graph_).
  std::shared_ptr<::torch::autograd::GraphTask> retrieveGraphTask();
  void setGraphTask(std::shared_ptr<::torch::autograd::GraphTask> graphTask);
  void resetGraphTask();
  /// The context's send functions by their autograd message id (one per
  /// tensor this process sent with a gradient to come).
  std::unordered_map<int64_t, std::shared_ptr<SendRpcBackward>> sendFunctions() const;
  /// Forgets the gradient RPCs sent so far.
  void clearOutstandingRpcs();
  /// A future for every gradient RPC sent so far (RecvRpcBackward), which
  /// it forgets.
  c10::intrusive_ptr<c10::ivalue::Future> clearAndWaitForOutstandingRpcsAsync();
};

/// The process's contexts (context/container.h).
class DistAutogradContainer {
public:
  static DistAutogradContainer& getInstance();
  /// Throws naming `context_id` when there is no such context.
  std::shared_ptr<DistAutogradContext> retrieveContext(int64_t context_id);
  /// This process's RPC worker id.
  int16_t getWorkerId() const;
};

/// The node that receives, in the backward pass, the gradient another
/// process sends for a tensor this process sent it (functions/sendrpc_backward.h).
class SendRpcBackward : public ::torch::autograd::Node {};

/// libtorch's distributed engine (engine/dist_engine.h).
class DistEngine {
public:
  /// Counts of the process's distributed autograd state by name
  /// ("num_current_backward_passes", "num_autograd_contexts"):
  /// dist_autograd._get_debug_info(). The values are ints (the mangled
  /// name does not say; objdump: it fills them with
  /// `unordered_map<string, int>::operator[]`). The preload library defines
  /// it over libtorch's (Note [Counting the passes that run on actors] in
  /// preload.cpp).
  std::unordered_map<std::string, int> getDebugInfo() const;
};

/// What std::type_info::name() says of a RecvRpcBackward node (its class is
/// not declared here: it is recognized by name).
inline constexpr const char* kRecvRpcBackwardTypeName =
  "N5torch11distributed8autograd15RecvRpcBackwardE";

} // namespace torch::distributed::autograd
