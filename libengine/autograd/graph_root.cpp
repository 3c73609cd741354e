#include "libengine/autograd/graph_root.h"

namespace actorgrad {

GraphRoot::GraphRoot(edge_list roots, variable_list grads)
  : Node(std::move(roots)), grads_(std::move(grads)) {
  for (const auto& g : grads_)
    add_input_metadata(g);
}

} // namespace actorgrad
