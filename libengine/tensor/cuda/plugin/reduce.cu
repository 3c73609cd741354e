/// @file reduce.cu
/// Reductions along the middle dim of [outer, size, inner] (sum, max), the
/// softmax family, and the NaN search.

#include <cmath>
#include <memory>

#include "actorgrad/device/cuda/plugin/caching_allocator.h"
#include "actorgrad/libengine/tensor/cuda/plugin/launch_support.cuh"

namespace actorgrad::kernels::cuda::detail {

namespace {

constexpr int warp = 32;
/// Blocks wanted in flight before a lane is split across blocks.
constexpr std::int64_t target_blocks = 1024;

template <class T>
struct SumOp {
  using Acc = double; ///< float32 sums accumulate in float64
  __device__ static Acc identity() { return 0; }
  __device__ static Acc combine(Acc a, Acc b) { return a + b; }
};

template <class T>
struct MaxOp {
  using Acc = T;
  __device__ static Acc identity() { return -static_cast<T>(INFINITY); }
  /// NaN wins, as in the host kernel.
  __device__ static Acc combine(Acc a, Acc b) { return a != a || b <= a ? a : b; }
};

/// Combines `v` over the block with Op; every thread gets the result.
/// `shared` holds warp + 1 values; all threads of the block must call it.
template <class Op, class Acc>
__device__ Acc block_reduce(Acc v, Acc* shared) {
  const int lane = threadIdx.x % warp;
  const int w = threadIdx.x / warp;
  for (int o = warp / 2; o > 0; o /= 2)
    v = Op::combine(v, __shfl_down_sync(0xffffffffu, v, o));
  if (lane == 0)
    shared[w] = v;
  __syncthreads();
  if (w == 0) {
    v = lane < static_cast<int>(blockDim.x / warp) ? shared[lane] : Op::identity();
    for (int o = warp / 2; o > 0; o /= 2)
      v = Op::combine(v, __shfl_down_sync(0xffffffffu, v, o));
    if (lane == 0)
      shared[warp] = v;
  }
  __syncthreads();
  v = shared[warp];
  __syncthreads(); // `shared` may be reused right after
  return v;
}

/// Contiguous lanes (inner == 1): lane r is in[r * size, (r + 1) * size),
/// cut into `chunks` pieces of `chunk` elements; block b reduces piece
/// b % chunks of lane b / chunks into out[b].
template <class Op, class In, class Out>
__global__ void reduce_rows_kernel(const In* in, Out* out, std::int64_t rows, std::int64_t size,
                                   std::int64_t chunks, std::int64_t chunk) {
  using Acc = typename Op::Acc;
  __shared__ Acc shared[warp + 1];
  for (std::int64_t b = blockIdx.x; b < rows * chunks; b += gridDim.x) {
    const std::int64_t row = b / chunks;
    const std::int64_t begin = (b % chunks) * chunk;
    const std::int64_t end = begin + chunk < size ? begin + chunk : size;
    Acc v = Op::identity();
    for (std::int64_t j = begin + threadIdx.x; j < end; j += blockDim.x)
      v = Op::combine(v, static_cast<Acc>(in[row * size + j]));
    v = block_reduce<Op>(v, shared);
    if (threadIdx.x == 0)
      out[b] = static_cast<Out>(v);
  }
}

/// Strided lanes (inner > 1): a block of warp x rows_per_block threads takes
/// `warp` adjacent lanes (coalesced reads) and splits each over its rows.
constexpr int rows_per_block = 8;

template <class Op, class T>
__global__ void reduce_columns_kernel(const T* in, T* out, std::int64_t outer, std::int64_t size,
                                      std::int64_t inner) {
  using Acc = typename Op::Acc;
  __shared__ Acc shared[rows_per_block][warp + 1];
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * warp + threadIdx.x;
  for (std::int64_t o = blockIdx.y; o < outer; o += gridDim.y) {
    Acc v = Op::identity();
    if (i < inner)
      for (std::int64_t j = threadIdx.y; j < size; j += rows_per_block)
        v = Op::combine(v, static_cast<Acc>(in[(o * size + j) * inner + i]));
    shared[threadIdx.y][threadIdx.x] = v;
    __syncthreads();
    if (threadIdx.y == 0 && i < inner) {
      for (int r = 1; r < rows_per_block; ++r)
        v = Op::combine(v, shared[r][threadIdx.x]);
      out[o * inner + i] = static_cast<T>(v);
    }
    __syncthreads();
  }
}

template <class Op, class T>
void reduce_as(const Launch& l, std::int64_t outer, std::int64_t size, std::int64_t inner,
               const T* in, T* out) {
  using Acc = typename Op::Acc;
  if (inner > 1) {
    const dim3 block(warp, rows_per_block);
    const dim3 grid(static_cast<unsigned>((inner + warp - 1) / warp),
                    static_cast<unsigned>(std::min<std::int64_t>(outer, 65535)));
    reduce_columns_kernel<Op, T><<<grid, block, 0, l.native>>>(in, out, outer, size, inner);
    check_launch(l);
    return;
  }
  // Few long lanes: split each over several blocks, then reduce the partials.
  std::int64_t chunks = 1;
  if (outer < target_blocks && size > 8 * block_threads)
    chunks = std::min((target_blocks + outer - 1) / outer, size / (8 * block_threads));
  const auto grid = [](std::int64_t blocks) {
    return static_cast<unsigned>(std::min<std::int64_t>(blocks, 1 << 16));
  };
  if (chunks <= 1) {
    reduce_rows_kernel<Op, T, T>
      <<<grid(outer), block_threads, 0, l.native>>>(in, out, outer, size, 1, size);
    check_launch(l);
    return;
  }
  const std::int64_t chunk = (size + chunks - 1) / chunks;
  const auto partials = actorgrad::cuda::plugin::allocate(sizeof(Acc) * outer * chunks, l.stream);
  auto* p = static_cast<Acc*>(partials.get());
  reduce_rows_kernel<Op, T, Acc>
    <<<grid(outer * chunks), block_threads, 0, l.native>>>(in, p, outer, size, chunks, chunk);
  check_launch(l);
  reduce_rows_kernel<Op, Acc, T>
    <<<grid(outer), block_threads, 0, l.native>>>(p, out, outer, chunks, 1, chunks);
  check_launch(l);
  // `partials` returns to the cache on this stream: later work on it runs after these kernels.
}

/// Softmax of contiguous lanes (inner == 1): one block per lane.
template <class T>
__global__ void softmax_rows_kernel(const T* in, T* out, std::int64_t rows, std::int64_t size,
                                    bool log_out) {
  using Acc = typename SumOp<T>::Acc;
  __shared__ Acc sums[warp + 1];
  __shared__ T maxes[warp + 1];
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* x = in + r * size;
    T* y = out + r * size;
    T m = MaxOp<T>::identity();
    for (std::int64_t j = threadIdx.x; j < size; j += blockDim.x)
      m = MaxOp<T>::combine(m, x[j]);
    m = block_reduce<MaxOp<T>>(m, maxes);
    if (isinf(m))
      m = T(0); // all -inf (or an inf): keep the shift finite
    Acc total = 0;
    for (std::int64_t j = threadIdx.x; j < size; j += blockDim.x)
      total += exp(x[j] - m);
    total = block_reduce<SumOp<T>>(total, sums);
    const Acc log_total = log(total);
    for (std::int64_t j = threadIdx.x; j < size; j += blockDim.x) {
      const T shifted = x[j] - m;
      y[j] = log_out ? static_cast<T>(shifted - log_total) : static_cast<T>(exp(shifted) / total);
    }
  }
}

/// Softmax of strided lanes (inner > 1): one thread per lane.
template <class T>
__global__ void softmax_columns_kernel(const T* in, T* out, std::int64_t outer, std::int64_t size,
                                       std::int64_t inner, bool log_out) {
  using Acc = typename SumOp<T>::Acc;
  for (std::int64_t lane = grid_first(); lane < outer * inner; lane += grid_step()) {
    const std::int64_t base = (lane / inner) * size * inner + lane % inner;
    T m = MaxOp<T>::identity();
    for (std::int64_t j = 0; j < size; ++j)
      m = MaxOp<T>::combine(m, in[base + j * inner]);
    if (isinf(m))
      m = T(0);
    Acc total = 0;
    for (std::int64_t j = 0; j < size; ++j)
      total += exp(in[base + j * inner] - m);
    const Acc log_total = log(total);
    for (std::int64_t j = 0; j < size; ++j) {
      const T shifted = in[base + j * inner] - m;
      out[base + j * inner] =
        log_out ? static_cast<T>(shifted - log_total) : static_cast<T>(exp(shifted) / total);
    }
  }
}

template <class T>
__global__ void find_nan_kernel(const T* in, std::int64_t n, int* flag) {
  for (std::int64_t i = grid_first(); i < n; i += grid_step())
    if (in[i] != in[i])
      *flag = 1;
}

} // namespace

void reduce(const Launch& l, ReduceOp op, DType t, std::int64_t outer, std::int64_t size,
            std::int64_t inner, const void* in, void* out) {
  if (outer * inner == 0)
    return;
  dispatch_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    const auto* x = static_cast<const T*>(in);
    auto* y = static_cast<T*>(out);
    if (op == ReduceOp::sum)
      reduce_as<SumOp<T>>(l, outer, size, inner, x, y);
    else
      reduce_as<MaxOp<T>>(l, outer, size, inner, x, y);
  });
}

void softmax(const Launch& l, bool log, DType t, std::int64_t outer, std::int64_t size,
             std::int64_t inner, const void* in, void* out) {
  if (outer * size * inner == 0)
    return;
  dispatch_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    const auto* x = static_cast<const T*>(in);
    auto* y = static_cast<T*>(out);
    if (inner == 1)
      softmax_rows_kernel<T>
        <<<blocks_for(outer * block_threads), block_threads, 0, l.native>>>(x, y, outer, size, log);
    else
      softmax_columns_kernel<T>
        <<<blocks_for(outer * inner), block_threads, 0, l.native>>>(x, y, outer, size, inner, log);
  });
  check_launch(l);
}

void find_nan(const Launch& l, DType t, std::int64_t n, const void* in, int* flag) {
  if (n == 0)
    return;
  dispatch_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    find_nan_kernel<T>
      <<<blocks_for(n), block_threads, 0, l.native>>>(static_cast<const T*>(in), n, flag);
  });
  check_launch(l);
}

} // namespace actorgrad::kernels::cuda::detail
