#pragma once
/// @file kernels_cuda.h
/// The tensor kernels of kernels.h for tensors on CUDA devices.
///
/// Same signatures, argument checks and error messages as kernels.h; the
/// host kernels dispatch here for CUDA tensors. Every kernel runs on the
/// current stream of its device (`current_stream`), asynchronously: only
/// results read by the host (any_nan, max_abs_diff, to_device to a host
/// device) wait, for that stream. Outputs are allocated on that stream by
/// the caching allocator (device/cuda/caching_allocator.h). Elementwise
/// kernels take up to 8 dims once adjacent dims are merged (more is an
/// std::invalid_argument). Float32 matmul uses cuBLAS without TF32.

#include <cstdint>
#include <vector>

#include "actorgrad/libengine/tensor/kernels.h"

namespace actorgrad::kernels::cuda {

// -- elementwise --------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor add_scalar(const Tensor& a, double s);
Tensor mul_scalar(const Tensor& a, double s);
Tensor pow_scalar(const Tensor& a, double exponent);
Tensor neg(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor relu(const Tensor& a);
Tensor gt_scalar(const Tensor& a, double s);

// -- linear algebra -------------------------------------------------------------
/// cuBLAS sgemm/dgemm; 1-D operands as kernels::matmul.
Tensor matmul(const Tensor& a, const Tensor& b);

// -- reductions -------------------------------------------------------------------
Tensor sum(const Tensor& a, const std::vector<std::int64_t>& dims = {}, bool keepdim = false);
Tensor amax(const Tensor& a, std::int64_t dim, bool keepdim);
/// Composed of sum, view and clone, which dispatch: the host kernel serves every device.
using kernels::sum_to;
/// Waits for the current stream.
bool any_nan(const Tensor& a);

// -- shape and data movement ----------------------------------------------------
Tensor expand(const Tensor& a, const Shape& shape);
Tensor transpose(const Tensor& a, std::int64_t d0, std::int64_t d1);
/// Metadata only: the host kernel serves every device.
using kernels::view;
Tensor index_select(const Tensor& a, std::int64_t dim, const std::vector<std::int64_t>& index);
Tensor index_add_into_zeros(const Shape& shape, std::int64_t dim,
                            const std::vector<std::int64_t>& index, const Tensor& src);
Tensor narrow(const Tensor& a, std::int64_t dim, std::int64_t start, std::int64_t length);
Tensor narrow_into_zeros(const Shape& shape, std::int64_t dim, std::int64_t start,
                         const Tensor& src);
/// One cudaMemcpy2DAsync per input.
Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim);
/// Composed of view and cat, which dispatch: the host kernel serves every device.
using kernels::stack;
Tensor clone(const Tensor& a);
Tensor cast(const Tensor& a, DType dtype);
/// A copy on `device`, where `a` or `device` (or both) is a CUDA device.
/// Host to CUDA: enqueued on the destination's current stream (from
/// pageable memory, so the source may be dropped on return). CUDA to host:
/// enqueued on the source's current stream, which is then synchronized.
/// CUDA to CUDA across devices: on the source's current stream, ordered
/// after the destination's current stream and before its later work (as
/// PyTorch does). A sim device goes through the CPU.
Tensor to_device(const Tensor& a, Device device);

// -- activations over a dim -------------------------------------------------------
Tensor softmax(const Tensor& a, std::int64_t dim);
Tensor log_softmax(const Tensor& a, std::int64_t dim);

// -- in place (bump the version counter) --------------------------------------
void add_(const Tensor& self, const Tensor& other, double alpha);
void sub_(const Tensor& self, const Tensor& other, double alpha);
void mul_(const Tensor& self, double s);
void mul_(const Tensor& self, const Tensor& other);
void div_(const Tensor& self, const Tensor& other);
void fill_(const Tensor& self, double v);
void copy_(const Tensor& self, const Tensor& src);

/// Waits for the current stream.
double max_abs_diff(const Tensor& a, const Tensor& b);

} // namespace actorgrad::kernels::cuda
