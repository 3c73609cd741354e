/// @file elementwise.cu
/// Elementwise kernels: one strided map for unary ops, binary ops with
/// broadcasting and casts; the row gather and scatter of index_select and
/// its backward.

#include <cmath>

#include "actorgrad/libengine/tensor/cuda/plugin/launch_support.cuh"

namespace actorgrad::kernels::cuda::detail {

namespace {

/// off[j] = the index of element `i` (row-major over g.sizes) dotted with g.strides[j].
template <int N>
__device__ void offsets_of(const Geometry& g, std::int64_t i, std::int64_t (&off)[N]) {
  for (int j = 0; j < N; ++j)
    off[j] = 0;
  for (int d = g.rank - 1; d >= 0; --d) {
    const std::int64_t idx = d == 0 ? i : i % g.sizes[d];
    for (int j = 0; j < N; ++j)
      off[j] += idx * g.strides[j][d];
    if (d > 0)
      i /= g.sizes[d];
  }
}

/// out[i] = f(a[...]) or f(a[...], b[...]) for every element of `g`.
template <int N, class In, class Out, class F>
__global__ void map_kernel(Geometry g, F f, const In* a, const In* b, Out* out) {
  for (std::int64_t i = grid_first(); i < g.numel; i += grid_step()) {
    std::int64_t off[N];
    offsets_of<N>(g, i, off);
    if constexpr (N == 1)
      out[i] = f(a[off[0]]);
    else
      out[i] = f(a[off[0]], b[off[1]]);
  }
}

/// The one elementwise launcher: `N` inputs read through `g`.
template <int N, class In, class Out, class F>
void map(const Launch& l, const Geometry& g, F f, const void* a, const void* b, void* out) {
  if (g.numel == 0)
    return;
  map_kernel<N, In, Out, F><<<blocks_for(g.numel), block_threads, 0, l.native>>>(
    g, f, static_cast<const In*>(a), static_cast<const In*>(b), static_cast<Out*>(out));
  check_launch(l);
}

// -- unary functors (s: the op's scalar) ---------------------------------------

template <class T>
struct Copy {
  __device__ T operator()(T x) const { return x; }
};
template <class T>
struct Fill {
  T s;
  __device__ T operator()(T) const { return s; }
};
template <class T>
struct AddScalar {
  T s;
  __device__ T operator()(T x) const { return x + s; }
};
template <class T>
struct MulScalar {
  T s;
  __device__ T operator()(T x) const { return x * s; }
};
template <class T>
struct PowScalar {
  T s;
  __device__ T operator()(T x) const { return pow(x, s); }
};
template <class T>
struct Neg {
  __device__ T operator()(T x) const { return -x; }
};
template <class T>
struct Exp {
  __device__ T operator()(T x) const { return exp(x); }
};
template <class T>
struct Log {
  __device__ T operator()(T x) const { return log(x); }
};
template <class T>
struct Tanh {
  __device__ T operator()(T x) const { return tanh(x); }
};
template <class T>
struct Sigmoid {
  __device__ T operator()(T x) const { return T(1) / (T(1) + exp(-x)); }
};
/// NaN propagates, as in PyTorch.
template <class T>
struct Relu {
  __device__ T operator()(T x) const { return x > T(0) || x != x ? x : T(0); }
};
template <class T>
struct GtScalar {
  T s;
  __device__ T operator()(T x) const { return x > s ? T(1) : T(0); }
};

// -- binary functors -----------------------------------------------------------

template <class T>
struct Add {
  T alpha;
  __device__ T operator()(T x, T y) const { return x + alpha * y; }
};
template <class T>
struct Sub {
  __device__ T operator()(T x, T y) const { return x - y; }
};
template <class T>
struct Mul {
  __device__ T operator()(T x, T y) const { return x * y; }
};
template <class T>
struct Div {
  __device__ T operator()(T x, T y) const { return x / y; }
};
template <class T>
struct Pow {
  __device__ T operator()(T x, T y) const { return pow(x, y); }
};
template <class T>
struct Second {
  __device__ T operator()(T, T y) const { return y; }
};
template <class T>
struct AbsDiff {
  __device__ T operator()(T x, T y) const { return fabs(x - y); }
};

template <class From, class To>
struct Cast {
  __device__ To operator()(From x) const { return static_cast<To>(x); }
};

// -- rows ------------------------------------------------------------------------

template <class T>
__global__ void gather_rows_kernel(const T* in, T* out, std::int64_t size, std::int64_t inner,
                                   const std::int64_t* index, std::int64_t k, std::int64_t n) {
  for (std::int64_t i = grid_first(); i < n; i += grid_step()) {
    const std::int64_t col = i % inner;
    const std::int64_t row = i / inner;
    out[i] = in[((row / k) * size + index[row % k]) * inner + col];
  }
}

template <class T>
__global__ void scatter_add_rows_kernel(const T* src, T* out, std::int64_t size, std::int64_t inner,
                                        const std::int64_t* index, std::int64_t k, std::int64_t n) {
  for (std::int64_t i = grid_first(); i < n; i += grid_step()) {
    const std::int64_t col = i % inner;
    const std::int64_t row = i / inner;
    atomicAdd(out + ((row / k) * size + index[row % k]) * inner + col, src[i]);
  }
}

} // namespace

void unary(const Launch& l, UnaryOp op, DType t, double s, const Geometry& g, const void* in,
           void* out) {
  dispatch_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    const T v = static_cast<T>(s);
    const auto run = [&](auto f) { map<1, T, T>(l, g, f, in, nullptr, out); };
    switch (op) {
    case UnaryOp::copy: return run(Copy<T>{});
    case UnaryOp::fill: return run(Fill<T>{v});
    case UnaryOp::add_scalar: return run(AddScalar<T>{v});
    case UnaryOp::mul_scalar: return run(MulScalar<T>{v});
    case UnaryOp::pow_scalar: return run(PowScalar<T>{v});
    case UnaryOp::neg: return run(Neg<T>{});
    case UnaryOp::exp: return run(Exp<T>{});
    case UnaryOp::log: return run(Log<T>{});
    case UnaryOp::tanh: return run(Tanh<T>{});
    case UnaryOp::sigmoid: return run(Sigmoid<T>{});
    case UnaryOp::relu: return run(Relu<T>{});
    case UnaryOp::gt_scalar: return run(GtScalar<T>{v});
    }
  });
}

void binary(const Launch& l, BinaryOp op, DType t, double alpha, const Geometry& g, const void* a,
            const void* b, void* out) {
  dispatch_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    const auto run = [&](auto f) { map<2, T, T>(l, g, f, a, b, out); };
    switch (op) {
    case BinaryOp::add: return run(Add<T>{static_cast<T>(alpha)});
    case BinaryOp::sub: return run(Sub<T>{});
    case BinaryOp::mul: return run(Mul<T>{});
    case BinaryOp::div: return run(Div<T>{});
    case BinaryOp::pow: return run(Pow<T>{});
    case BinaryOp::second: return run(Second<T>{});
    case BinaryOp::abs_diff: return run(AbsDiff<T>{});
    }
  });
}

void cast(const Launch& l, DType from, DType to, std::int64_t n, const void* in, void* out) {
  Geometry g;
  g.rank = 1;
  g.numel = n;
  g.sizes[0] = n;
  g.strides[0][0] = 1;
  dispatch_dtype(from, [&](auto f) {
    dispatch_dtype(to, [&](auto t) {
      using From = decltype(f);
      using To = decltype(t);
      map<1, From, To>(l, g, Cast<From, To>{}, in, nullptr, out);
    });
  });
}

void gather_rows(const Launch& l, DType t, std::int64_t outer, std::int64_t size,
                 std::int64_t inner, const std::int64_t* index, std::int64_t k, const void* in,
                 void* out) {
  const std::int64_t n = outer * k * inner;
  if (n == 0)
    return;
  dispatch_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    gather_rows_kernel<T><<<blocks_for(n), block_threads, 0, l.native>>>(
      static_cast<const T*>(in), static_cast<T*>(out), size, inner, index, k, n);
  });
  check_launch(l);
}

void scatter_add_rows(const Launch& l, DType t, std::int64_t outer, std::int64_t size,
                      std::int64_t inner, const std::int64_t* index, std::int64_t k,
                      const void* src, void* out) {
  const std::int64_t n = outer * k * inner;
  if (n == 0)
    return;
  dispatch_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    scatter_add_rows_kernel<T><<<blocks_for(n), block_threads, 0, l.native>>>(
      static_cast<const T*>(src), static_cast<T*>(out), size, inner, index, k, n);
  });
  check_launch(l);
}

} // namespace actorgrad::kernels::cuda::detail
