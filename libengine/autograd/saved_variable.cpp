#include "actorgrad/libengine/autograd/saved_variable.h"

#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/engine/errors.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"

namespace actorgrad {

SavedVariable::SavedVariable(const Tensor& t, bool is_output)
  : is_output_(is_output), was_defined_(t.defined()) {
  if (!was_defined_)
    return;
  saved_version_ = t.version();
  requires_grad_ = t.requires_grad();
  output_nr_ = t.output_nr();
  // A node's own output would hold the node through its grad_fn: keep an
  // alias without autograd state instead and restore the link on unpack.
  data_ = is_output ? t.detach() : t;
}

Tensor SavedVariable::unpack(const Node* saved_for) const {
  if (!was_defined_)
    return {};
  const std::string who = saved_for ? saved_for->name() : std::string("a node");
  if (released_)
    throw EngineError("Trying to backward through the graph a second time (or to use saved "
                      "tensors after they were freed) in " +
                      who + ". Pass retain_graph=true to the first backward call to keep them.");
  if (data_.version() != saved_version_)
    throw EngineError("One of the tensors needed for gradient computation has been modified by "
                      "an in-place operation: the " +
                      data_.describe() + " saved by " + who + " is at version " +
                      std::to_string(data_.version()) + "; expected version " +
                      std::to_string(saved_version_) + " instead.");
  if (!is_output_ || !requires_grad_ || !saved_for)
    return data_;
  // Re-attach the output to its grad_fn (the node unpacking it) so that a
  // create_graph backward can differentiate through it.
  Tensor out = data_.detach();
  auto& m = out.impl()->meta();
  m.requires_grad = true;
  m.grad_fn = const_cast<Node*>(saved_for)->shared_from_this();
  m.output_nr = output_nr_;
  return out;
}

void SavedVariable::reset_data() {
  data_ = Tensor();
  released_ = true;
}

variable_list SavedVariables::unpack_locked(const Node* saved_for) const {
  variable_list out;
  out.reserve(saved_.size());
  const std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& s : saved_)
    out.push_back(s.unpack(saved_for));
  return out;
}

void SavedVariables::release_locked() {
  const std::lock_guard<std::mutex> lock(mutex_);
  for (auto& s : saved_)
    s.reset_data();
}

} // namespace actorgrad
