#include "bench/torch/torch_cases.h"

#include <queue>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include <torch/torch.h>

#include "bench/common/random_dag.h"
#include "bench/common/ready_order.h"
#if ACTORGRAD_BENCH_HAVE_TORCH_BRIDGE
#include "actorgrad/actors/torch/install.h"
#endif

namespace actorgrad::bench::torchb {

using ::torch::autograd::Node;
using ::torch::autograd::variable_list;

struct TorchGraph {
  std::vector<::torch::Tensor> keep;
  ::torch::Tensor root;
  ::torch::Tensor root_grad;
  std::vector<PlannedStep<Node>> order;
  std::vector<variable_list> buffers;
};

namespace {

::torch::TensorOptions f64() { return ::torch::TensorOptions().dtype(::torch::kFloat64); }

::torch::Tensor leaf(std::vector<std::int64_t> shape) {
  return ::torch::randn(shape, f64()).requires_grad_(true);
}

void plan(TorchGraph& g) {
  g.order = plan_ready_order(g.root.grad_fn().get());
  g.buffers.resize(g.order.size());
}

} // namespace

std::shared_ptr<TorchGraph> make(const std::string& kind, int n) {
  auto g = std::make_shared<TorchGraph>();
  ::torch::manual_seed(1);
  ::torch::Tensor y;
  if (kind == "chain_passthrough" || kind == "chain_mul") {
    ::torch::Tensor x = leaf({1});
    g->keep.push_back(x);
    y = x;
    for (int i = 0; i < n; ++i)
      y = kind == "chain_mul" ? y * 1.0001 : y + 1.0;
  } else if (kind == "fan") {
    ::torch::Tensor x = leaf({1});
    g->keep.push_back(x);
    ::torch::Tensor h = x + 1.0;
    for (int i = 0; i < n; ++i) {
      ::torch::Tensor b = h * (1.0 + 1e-3 * i);
      y = i == 0 ? b : y + b;
    }
  } else if (kind == "mlp") {
    const int layers = 4, batch = 32, width = 64;
    ::torch::Tensor h = ::torch::randn({batch, width}, f64());
    for (int l = 0; l < layers; ++l) {
      ::torch::Tensor w = (::torch::randn({width, width}, f64()) / width).requires_grad_(true);
      ::torch::Tensor b = leaf({width});
      g->keep.push_back(w);
      g->keep.push_back(b);
      h = ::torch::tanh(::torch::matmul(h, w) + b);
    }
    y = h.sum();
  } else if (kind == "ensemble") {
    // n independent MLPs of 4 x (Linear(64, 64) + Tanh) on one batch of
    // 32 (float32, as torch's default), loss = the sum of their outputs' sums.
    const ::torch::Tensor x = ::torch::randn({32, 64});
    for (int m = 0; m < n; ++m) {
      ::torch::nn::Sequential model;
      for (int l = 0; l < 4; ++l) {
        model->push_back(::torch::nn::Linear(64, 64));
        model->push_back(::torch::nn::Tanh());
      }
      for (const auto& p : model->parameters())
        g->keep.push_back(p);
      const ::torch::Tensor s = model->forward(x).sum();
      y = m == 0 ? s : y + s;
    }
  } else if (kind == "transformer") {
    // One encoder layer (d_model 64, 4 heads, feed-forward 128, no dropout)
    // on 16 tokens x 4 sequences; n is unused.
    ::torch::nn::TransformerEncoderLayer layer(
      ::torch::nn::TransformerEncoderLayerOptions(64, 4).dim_feedforward(128).dropout(0.0));
    for (const auto& p : layer->parameters())
      g->keep.push_back(p);
    y = layer(::torch::randn({16, 4, 64})).sum();
  } else if (kind == "random_dag") {
    ::torch::Tensor x = leaf({1});
    g->keep.push_back(x);
    y = actorgrad::bench::random_dag_of(x, n, 42);
  } else {
    throw std::invalid_argument("unknown torch graph " + kind);
  }
  g->root = y;
  g->root_grad = ::torch::ones_like(y);
  g->keep.push_back(y);
  plan(*g);
  return g;
}

std::size_t nodes(const TorchGraph& g) { return g.order.size(); }

void backward(TorchGraph& g) {
  ::torch::autograd::backward({g.root}, {g.root_grad}, /*retain_graph=*/true);
}

void single_intra_op_thread() { intra_op_threads(1); }

void intra_op_threads(int n) { at::set_num_threads(n); }

void install_bridge() {
#if ACTORGRAD_BENCH_HAVE_TORCH_BRIDGE
  if (!actorgrad::torch::installed())
    actorgrad::torch::install();
#else
  throw std::runtime_error("built without the torch bridge (actorgrad_torch)");
#endif
}

void sequential(TorchGraph& g) {
  ::torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < g.order.size(); ++i)
    g.buffers[i].assign(g.order[i].num_inputs, ::torch::Tensor());
  g.buffers[0][g.root.output_nr()] = g.root_grad;
  for (std::size_t i = 0; i < g.order.size(); ++i) {
    const auto& s = g.order[i];
    variable_list out = (*s.fn)(std::move(g.buffers[i]));
    for (std::size_t k = 0; k < out.size() && k < s.targets.size(); ++k) {
      if (s.targets[k].first < 0 || !out[k].defined())
        continue;
      // What the engine's validate_outputs does for a broadcast input.
      const auto& meta = s.fn->next_edge(k).function->input_metadata(s.targets[k].second);
      if (!meta.is_same_shape(out[k]))
        out[k] = meta.reduce_grad(out[k]);
      ::torch::Tensor& slot = g.buffers[s.targets[k].first][s.targets[k].second];
      slot = slot.defined() ? slot + out[k] : std::move(out[k]);
    }
  }
}

} // namespace actorgrad::bench::torchb
