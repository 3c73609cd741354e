#include "actorgrad/libengine/autograd/graph_root.h"

namespace actorgrad {

GraphRoot::GraphRoot(edge_list roots, variable_list grads)
  : Node(std::move(roots)), grads_(std::move(grads)) {
  for (const auto& g : grads_)
    add_input_metadata(g);
  // It has no input to wait for: it runs on the CPU (the coordinator), as
  // PyTorch queues it by its empty InputBuffer's device.
  device_ = Device::cpu();
  stream_.reset();
}

} // namespace actorgrad
