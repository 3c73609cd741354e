#pragma once
/// @file tensor_impl.h
/// What a Tensor handle points to. Internal: ops and autograd use it.

#include <memory>

#include "actorgrad/libengine/autograd/autograd_meta.h"
#include "actorgrad/libengine/tensor/storage.h"
#include "actorgrad/libengine/tensor/tensor.h"

namespace actorgrad {

/// Storage + view geometry + version counter + autograd state.
struct TensorImpl {
  std::shared_ptr<Storage> storage;
  std::int64_t offset = 0; ///< in elements
  Shape shape;
  Shape strides;
  DType dtype = DType::f64;
  std::shared_ptr<VersionCounter> version = std::make_shared<VersionCounter>();
  /// Null until the tensor takes part in autograd.
  std::unique_ptr<AutogradMeta> autograd;

  /// Returns the autograd state, creating it on first use.
  AutogradMeta& meta();

  /// Element pointer (start of this view).
  void* raw() const {
    return static_cast<char*>(storage->data.get()) + offset * element_size(dtype);
  }
};

/// Readies `t`'s memory for the host to read (or write): on an asynchronous
/// sim device, synchronizes the calling thread's current stream and checks
/// the access with the race detector. Nothing to do on the CPU or inside a
/// kernel body. Tensor::data() calls it.
void prepare_host_access(const TensorImpl& t, bool write = false);

} // namespace actorgrad
