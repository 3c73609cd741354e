#define BOOST_TEST_MODULE cuda_ops
#include <boost/test/unit_test.hpp>

// Every CUDA kernel on cuda:0 against the host kernel on the same inputs,
// in float32 (to 1e-5) and float64: broadcasting, reductions, matmul
// shapes, data movement and in-place ops; the same argument errors; work on
// a pool stream ordered by an event; the caching allocator's reuse. Exits
// 77 (skipped) without a GPU.

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "actorgrad/device/cuda/caching_allocator.h"
#include "actorgrad/device/event.h"
#include "actorgrad/device/guards.h"
#include "actorgrad/libengine/tensor/kernels.h"
#include "actorgrad/libengine/tensor/tensor_impl.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/require_gpu.h"

using namespace actorgrad;
using namespace actorgrad::testing;
namespace gk = actorgrad::kernels::cuda;

BOOST_TEST_GLOBAL_FIXTURE(RequireGpu);

namespace {

const DType kDTypes[] = {DType::f32, DType::f64};

std::string name(const std::string& op, DType t, const Shape& a, const Shape& b = {}) {
  return op + " " + dtype_name(t) + " " + shape_str(a) + " " + shape_str(b);
}

Tensor input(const Shape& s, DType t, std::uint64_t seed, double lo = -2.0, double hi = 2.0) {
  return Tensor::uniform(s, lo, hi, seed, t);
}

using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;
using Unary = std::function<Tensor(const Tensor&)>;

} // namespace

BOOST_AUTO_TEST_CASE(binary_ops_broadcast_as_numpy) {
  struct Op {
    std::string name;
    Binary host, device;
    double lo; ///< inputs in [lo, 2): positive for div and pow
  };
  const std::vector<Op> ops = {
    {"add", [](auto& a, auto& b) { return kernels::add(a, b, 0.5); },
     [](auto& a, auto& b) { return gk::add(a, b, 0.5); }, -2.0},
    {"sub", [](auto& a, auto& b) { return kernels::sub(a, b); },
     [](auto& a, auto& b) { return gk::sub(a, b); }, -2.0},
    {"mul", [](auto& a, auto& b) { return kernels::mul(a, b); },
     [](auto& a, auto& b) { return gk::mul(a, b); }, -2.0},
    {"div", [](auto& a, auto& b) { return kernels::div(a, b); },
     [](auto& a, auto& b) { return gk::div(a, b); }, 0.5},
    {"pow", [](auto& a, auto& b) { return kernels::pow(a, b); },
     [](auto& a, auto& b) { return gk::pow(a, b); }, 0.5},
  };
  const std::vector<std::pair<Shape, Shape>> shapes = {
    {{3, 4}, {3, 4}},          {{3, 4}, {4}}, {{2, 1, 4}, {3, 1}}, {{}, {2, 3}}, {{5, 1}, {1, 6}},
    {{2, 3, 4, 5}, {3, 1, 5}}, {{0, 3}, {3}}, {{300, 257}, {257}},
  };
  std::uint64_t seed = 1;
  for (DType t : kDTypes)
    for (const auto& op : ops)
      for (const auto& [sa, sb] : shapes) {
        const auto a = input(sa, t, seed++, op.lo);
        const auto b = input(sb, t, seed++, op.lo);
        check_close(op.device(to_gpu(a), to_gpu(b)), op.host(a, b), name(op.name, t, sa, sb));
      }
}

BOOST_AUTO_TEST_CASE(unary_ops) {
  struct Op {
    std::string name;
    Unary host, device;
    double lo;
  };
  const std::vector<Op> ops = {
    {"add_scalar", [](auto& a) { return kernels::add_scalar(a, 1.5); },
     [](auto& a) { return gk::add_scalar(a, 1.5); }, -2.0},
    {"mul_scalar", [](auto& a) { return kernels::mul_scalar(a, -3.0); },
     [](auto& a) { return gk::mul_scalar(a, -3.0); }, -2.0},
    {"pow_scalar", [](auto& a) { return kernels::pow_scalar(a, 2.5); },
     [](auto& a) { return gk::pow_scalar(a, 2.5); }, 0.1},
    {"neg", [](auto& a) { return kernels::neg(a); }, [](auto& a) { return gk::neg(a); }, -2.0},
    {"exp", [](auto& a) { return kernels::exp(a); }, [](auto& a) { return gk::exp(a); }, -2.0},
    {"log", [](auto& a) { return kernels::log(a); }, [](auto& a) { return gk::log(a); }, 0.1},
    {"tanh", [](auto& a) { return kernels::tanh(a); }, [](auto& a) { return gk::tanh(a); }, -2.0},
    {"sigmoid", [](auto& a) { return kernels::sigmoid(a); }, [](auto& a) { return gk::sigmoid(a); },
     -2.0},
    {"relu", [](auto& a) { return kernels::relu(a); }, [](auto& a) { return gk::relu(a); }, -2.0},
    {"gt_scalar", [](auto& a) { return kernels::gt_scalar(a, 0.25); },
     [](auto& a) { return gk::gt_scalar(a, 0.25); }, -2.0},
  };
  std::uint64_t seed = 100;
  for (DType t : kDTypes)
    for (const auto& op : ops)
      for (const Shape& s : {Shape{}, Shape{7, 13}, Shape{1000, 37}, Shape{0}}) {
        const auto a = input(s, t, seed++, op.lo);
        check_close(op.device(to_gpu(a)), op.host(a), name(op.name, t, s));
      }
}

BOOST_AUTO_TEST_CASE(matmul_shapes) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
    {{5, 7}, {7, 3}}, {{7}, {7, 3}},          {{5, 7}, {7}},    {{7}, {7}},
    {{1, 1}, {1, 1}}, {{64, 128}, {128, 96}}, {{0, 3}, {3, 4}}, {{2, 0}, {0, 3}},
  };
  std::uint64_t seed = 200;
  for (DType t : kDTypes)
    for (const auto& [sa, sb] : shapes) {
      const auto a = input(sa, t, seed++);
      const auto b = input(sb, t, seed++);
      check_close(gk::matmul(to_gpu(a), to_gpu(b)), kernels::matmul(a, b),
                  name("matmul", t, sa, sb));
    }
}

BOOST_AUTO_TEST_CASE(reductions_and_softmax) {
  std::uint64_t seed = 300;
  for (DType t : kDTypes) {
    const auto a = input({4, 5, 6}, t, seed++);
    const auto ga = to_gpu(a);
    const std::vector<std::pair<std::vector<std::int64_t>, bool>> sums = {
      {{}, false}, {{0}, false}, {{1}, true}, {{0, 2}, false}, {{-1}, true}, {{0, 1, 2}, true}};
    for (const auto& [dims, keep] : sums)
      check_close(gk::sum(ga, dims, keep), kernels::sum(a, dims, keep),
                  name("sum", t, a.shape(), Shape(dims.begin(), dims.end())));
    for (std::int64_t d : {0, 1, 2, -1}) {
      check_close(gk::amax(ga, d, d == 1), kernels::amax(a, d, d == 1), name("amax", t, {d}));
      check_close(gk::softmax(ga, d), kernels::softmax(a, d), name("softmax", t, {d}));
      check_close(gk::log_softmax(ga, d), kernels::log_softmax(a, d), name("log_softmax", t, {d}));
    }
    check_close(gk::sum_to(ga, {5, 1}), kernels::sum_to(a, {5, 1}), name("sum_to", t, {5, 1}));
    // Long lanes (split over blocks), wide lanes, an empty reduced dim.
    const auto rows = input({3, 100000}, t, seed++);
    check_close(gk::sum(to_gpu(rows), {1}), kernels::sum(rows, {1}), name("sum long", t, {1}));
    check_close(gk::sum(to_gpu(rows), {0}), kernels::sum(rows, {0}), name("sum wide", t, {0}));
    check_close(gk::amax(to_gpu(rows), 1, false), kernels::amax(rows, 1, false),
                name("amax long", t, {1}));
    const auto flat = input({1 << 20}, t, seed++, 0.0, 1.0);
    check_close(gk::sum(to_gpu(flat)), kernels::sum(flat), name("sum 1M", t, flat.shape()));
    const auto empty = input({3, 0}, t, seed++);
    check_close(gk::sum(to_gpu(empty), {1}), kernels::sum(empty, {1}), name("sum empty", t, {1}));
    const auto wide = input({8, 1000}, t, seed++);
    check_close(gk::softmax(to_gpu(wide), 1), kernels::softmax(wide, 1), name("softmax", t, {8}));
    check_close(gk::log_softmax(to_gpu(wide), 0), kernels::log_softmax(wide, 0),
                name("log_softmax", t, {0}));
  }
}

BOOST_AUTO_TEST_CASE(any_nan_and_max_abs_diff) {
  for (DType t : kDTypes) {
    const auto a = input({50, 40}, t, 400);
    const auto b = input({50, 40}, t, 401);
    BOOST_TEST(!gk::any_nan(to_gpu(a)));
    auto values = a.to_vector();
    values[777] = std::numeric_limits<double>::quiet_NaN();
    BOOST_TEST(gk::any_nan(to_gpu(Tensor::from_vector(values, a.shape(), t))));
    BOOST_TEST(!gk::any_nan(to_gpu(input({0}, t, 402))));
    BOOST_TEST(gk::max_abs_diff(to_gpu(a), to_gpu(b)) == kernels::max_abs_diff(a, b),
               boost::test_tools::tolerance(tolerance(t)));
    BOOST_TEST(gk::max_abs_diff(to_gpu(a), to_gpu(a)) == 0.0);
  }
}

BOOST_AUTO_TEST_CASE(shape_and_data_movement) {
  std::uint64_t seed = 500;
  for (DType t : kDTypes) {
    const auto a = input({4, 5, 6}, t, seed++);
    const auto ga = to_gpu(a);
    check_close(ga, a, name("to_device round trip", t, a.shape()));
    check_close(gk::expand(to_gpu(input({5, 1}, t, 9)), {3, 5, 4}),
                kernels::expand(input({5, 1}, t, 9), {3, 5, 4}), name("expand", t, {3, 5, 4}));
    check_close(gk::transpose(ga, 0, 2), kernels::transpose(a, 0, 2), name("transpose", t, {0, 2}));
    check_close(gk::transpose(ga, -1, 1), kernels::transpose(a, -1, 1), name("transpose", t, {-1}));
    check_close(gk::view(ga, {20, -1}), kernels::view(a, {20, -1}), name("view", t, {20, -1}));
    const std::vector<std::int64_t> index = {3, 0, 3, 1};
    check_close(gk::index_select(ga, 1, index), kernels::index_select(a, 1, index),
                name("index_select", t, {1}));
    check_close(gk::index_select(ga, 0, {}), kernels::index_select(a, 0, {}),
                name("index_select none", t, {0}));
    const auto rows = input({4, 4, 6}, t, seed++);
    check_close(gk::index_add_into_zeros({4, 5, 6}, 1, index, to_gpu(rows)),
                kernels::index_add_into_zeros({4, 5, 6}, 1, index, rows),
                name("index_add_into_zeros", t, {1}));
    check_close(gk::narrow(ga, 2, 1, 4), kernels::narrow(a, 2, 1, 4), name("narrow", t, {2}));
    check_close(gk::narrow(ga, 0, 3, 1), kernels::narrow(a, 0, 3, 1), name("narrow", t, {0}));
    const auto part = input({4, 2, 6}, t, seed++);
    check_close(gk::narrow_into_zeros({4, 5, 6}, 1, 2, to_gpu(part)),
                kernels::narrow_into_zeros({4, 5, 6}, 1, 2, part),
                name("narrow_into_zeros", t, {1}));
    const auto c = gk::clone(ga);
    BOOST_TEST(c.impl()->storage != ga.impl()->storage);
    check_close(c, a, name("clone", t, a.shape()));
    for (DType to : kDTypes)
      check_close(gk::cast(ga, to), kernels::cast(a, to), name("cast to " + dtype_name(to), t, {}));
    const auto b = input({4, 2, 6}, t, seed++);
    check_close(gk::cat({ga, to_gpu(b), ga}, 1), kernels::cat({a, b, a}, 1), name("cat", t, {1}));
    check_close(gk::cat({ga, to_gpu(input({1, 5, 6}, t, 7))}, 0),
                kernels::cat({a, input({1, 5, 6}, t, 7)}, 0), name("cat", t, {0}));
    check_close(gk::cat({to_gpu(input({4, 5, 0}, t, 8)), ga}, -1),
                kernels::cat({input({4, 5, 0}, t, 8), a}, -1), name("cat empty", t, {-1}));
    check_close(kernels::stack({ga, ga}, 3), kernels::stack({a, a}, 3), name("stack", t, {3}));
    // A view of a view: offset into shared storage.
    const auto tail = gk::view(gk::narrow(ga, 0, 2, 2), {-1});
    check_close(gk::mul_scalar(tail, 2.0),
                kernels::mul_scalar(kernels::view(kernels::narrow(a, 0, 2, 2), {-1}), 2.0),
                name("narrowed view", t, {}));
  }
}

BOOST_AUTO_TEST_CASE(in_place_ops_bump_the_version) {
  for (DType t : kDTypes) {
    const auto a = input({6, 7}, t, 600);
    const auto row = input({7}, t, 601);
    const auto ga = to_gpu(a);
    const auto v0 = ga.version();
    gk::add_(ga, to_gpu(row), -0.5);
    auto want = kernels::clone(a);
    kernels::add_(want, row, -0.5);
    check_close(ga, want, name("add_", t, a.shape(), row.shape()));
    gk::mul_(ga, 3.0);
    kernels::mul_(want, 3.0);
    check_close(ga, want, name("mul_", t, a.shape()));
    gk::copy_(ga, to_gpu(row));
    kernels::copy_(want, row);
    check_close(ga, want, name("copy_", t, a.shape()));
    gk::fill_(ga, 2.25);
    kernels::fill_(want, 2.25);
    check_close(ga, want, name("fill_", t, a.shape()));
    const auto col = input({6, 1}, t, 602, 0.5);
    gk::sub_(ga, to_gpu(row), 1.5);
    kernels::sub_(want, row, 1.5);
    check_close(ga, want, name("sub_", t, a.shape(), row.shape()));
    gk::mul_(ga, to_gpu(col));
    kernels::mul_(want, col);
    check_close(ga, want, name("mul_ tensor", t, a.shape(), col.shape()));
    gk::div_(ga, to_gpu(col));
    kernels::div_(want, col);
    check_close(ga, want, name("div_", t, a.shape(), col.shape()));
    BOOST_TEST(ga.version() == v0 + 7);
  }
}

BOOST_AUTO_TEST_CASE(argument_errors_match_the_host_kernels) {
  const auto a = input({2, 3}, DType::f32, 700);
  const auto ga = to_gpu(a);
  const auto same_message = [](const std::function<void()>& host,
                               const std::function<void()>& device) {
    std::string want, got;
    try {
      host();
    } catch (const std::exception& e) {
      want = e.what();
    }
    try {
      device();
    } catch (const std::exception& e) {
      got = e.what();
    }
    BOOST_TEST(!want.empty());
    BOOST_TEST(got == want);
  };
  same_message([&] { kernels::add(a, input({4}, DType::f32, 1)); },
               [&] { gk::add(ga, to_gpu(input({4}, DType::f32, 1))); });
  same_message([&] { kernels::mul(a, kernels::cast(a, DType::f64)); },
               [&] { gk::mul(ga, gk::cast(ga, DType::f64)); });
  same_message([&] { kernels::matmul(a, a); }, [&] { gk::matmul(ga, ga); });
  same_message([&] { kernels::index_select(a, 1, {3}); }, [&] { gk::index_select(ga, 1, {3}); });
  same_message([&] { kernels::narrow(a, 1, 2, 2); }, [&] { gk::narrow(ga, 1, 2, 2); });
  same_message([&] { kernels::sum(a, {0, -2}); }, [&] { gk::sum(ga, {0, -2}); });
  same_message(
    [&] {
      kernels::amax(input({2, 0}, DType::f32, 2), 1, false);
    },
    [&] {
      gk::amax(to_gpu(input({2, 0}, DType::f32, 2)), 1, false);
    });
  same_message(
    [&] {
      kernels::cat({a, input({3, 3}, DType::f32, 3)}, 1);
    },
    [&] {
      gk::cat({ga, to_gpu(input({3, 3}, DType::f32, 3))}, 1);
    });
  same_message([&] { kernels::div_(a, input({4}, DType::f32, 4)); },
               [&] { gk::div_(ga, to_gpu(input({4}, DType::f32, 4))); });
  BOOST_CHECK_THROW(gk::add(ga, a), std::invalid_argument); // cuda:0 and cpu
  BOOST_CHECK_THROW(kernels::cat({ga, a}, 0), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(pool_stream_work_ordered_by_an_event) {
  const auto a = input({512, 512}, DType::f32, 800);
  const auto b = input({512, 512}, DType::f32, 801);
  const auto ga = to_gpu(a);
  const auto gb = to_gpu(b);
  const Stream side = stream_from_pool(gpu);
  BOOST_TEST(!side.is_default());
  Tensor product;
  Event done;
  {
    StreamGuard guard(side);
    BOOST_TEST(current_stream(gpu).str() == side.str());
    // The inputs were made on the default stream: order the side stream after it.
    Event::recorded_on(default_stream(gpu)).block(side);
    product = gk::matmul(ga, gb);
    for (int i = 0; i < 20; ++i)
      product = gk::tanh(gk::add(product, gb));
    done.record(side);
  }
  BOOST_TEST(current_stream(gpu).str() == default_stream(gpu).str());
  done.block(default_stream(gpu));
  const auto total = gk::sum(product, {0}); // on the default stream, after the event
  auto want = kernels::matmul(a, b);
  for (int i = 0; i < 20; ++i)
    want = kernels::tanh(kernels::add(want, b));
  check_close(total, kernels::sum(want, {0}), "sum of the side stream's product");
  done.synchronize();
  BOOST_TEST(done.query());
  synchronize(side);
  BOOST_TEST(query(side));
  BOOST_TEST(query(default_stream(gpu)));
}

BOOST_AUTO_TEST_CASE(caching_allocator_reuses_freed_blocks) {
  synchronize(default_stream(gpu));
  cuda::empty_cache();
  const auto before = cuda::allocator_stats(gpu);
  BOOST_TEST(before.bytes_cached == 0u);
  void* first = nullptr;
  {
    const auto block = cuda::allocate(1000, gpu);
    first = block.get();
    BOOST_TEST(cuda::allocator_stats(gpu).bytes_in_use == before.bytes_in_use + 1024);
  }
  const auto freed = cuda::allocator_stats(gpu);
  BOOST_TEST(freed.bytes_cached == 1024u);
  BOOST_TEST(freed.bytes_in_use == before.bytes_in_use);
  {
    // Same stream, same rounded size: the same block, no cudaMalloc.
    const auto again = cuda::allocate(900, gpu);
    BOOST_TEST(again.get() == first);
    const auto s = cuda::allocator_stats(gpu);
    BOOST_TEST(s.device_allocations == freed.device_allocations);
    BOOST_TEST(s.reuses == freed.reuses + 1);
  }
  // A block freed on a pool stream serves the default stream once its
  // free event completed.
  const Stream side = stream_from_pool(gpu);
  void* on_side = nullptr;
  {
    StreamGuard guard(side);
    const auto block = cuda::allocate(3000, gpu);
    on_side = block.get();
  }
  synchronize(side);
  {
    const auto reused = cuda::allocate(3000, gpu);
    BOOST_TEST(reused.get() == on_side);
  }
  // A block more than twice the rounded request is not handed out.
  { const auto big = cuda::allocate(4 << 20, gpu); }
  const auto cached_big = cuda::allocator_stats(gpu);
  {
    const auto smaller = cuda::allocate(600 << 10, gpu);
    BOOST_TEST(cuda::allocator_stats(gpu).device_allocations == cached_big.device_allocations + 1);
  }
  synchronize(default_stream(gpu));
  cuda::empty_cache();
  BOOST_TEST(cuda::allocator_stats(gpu).bytes_cached == 0u);
  BOOST_CHECK_THROW(cuda::allocate(8, Device::cuda(cuda::device_count())), std::invalid_argument);
}
