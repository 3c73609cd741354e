#include "bench/common/workloads.h"

#include <sys/resource.h>

#include <cctype>
#include <functional>
#include <mutex>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include "actorgrad/actors/engine.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/autograd/graph_builder.h"
#include "actorgrad/libengine/engine/detail/graph_task.h"
#include "actorgrad/libengine/engine/reference_executor.h"
#include "actorgrad/libengine/ops.h"
#include "bench/baseline/baseline_engine.h"
#include "bench/common/random_dag.h"

namespace actorgrad::bench {

namespace {

ExecuteOptions retain() {
  ExecuteOptions o;
  o.keep_graph = true;
  o.create_graph = false;
  o.accumulate_grad = true;
  return o;
}

// Nodes reachable from `root` (counted without a GraphTask, so that building
// a graph leaves no GraphTask-sized peak in the process's max RSS).
std::size_t count_nodes(Node* root) {
  std::unordered_map<Node*, bool> seen{{root, true}};
  std::vector<Node*> stack{root};
  while (!stack.empty()) {
    Node* fn = stack.back();
    stack.pop_back();
    for (const auto& e : fn->next_edges())
      if (e.is_valid() && seen.emplace(e.function.get(), true).second)
        stack.push_back(e.function.get());
  }
  return seen.size();
}

Tensor leaf(const Shape& s, std::uint64_t seed = 1) {
  Tensor x = Tensor::randn(s, seed);
  x.set_requires_grad(true);
  return x;
}

} // namespace

Graph finish_graph(Graph g, const Tensor& out) {
  g.keep.push_back(out);
  g.roots = {gradient_edge(out)};
  g.root_grads = {Tensor::full_like(out, 1.0)};
  g.nodes = count_nodes(g.roots[0].function.get());
  return g;
}

Graph chain_passthrough(int n) {
  Graph g;
  Tensor x = leaf({1});
  g.keep.push_back(x);
  Tensor y = x;
  for (int i = 0; i < n; ++i)
    y = y + 1.0;
  return finish_graph(std::move(g), y);
}

Graph chain_mul(int n) {
  Graph g;
  Tensor x = leaf({1});
  g.keep.push_back(x);
  Tensor y = x;
  for (int i = 0; i < n; ++i)
    y = y * 1.0001;
  return finish_graph(std::move(g), y);
}

Graph fan(int w) {
  Graph g;
  Tensor x = leaf({1});
  g.keep.push_back(x);
  Tensor h = x + 1.0;
  Tensor s;
  for (int i = 0; i < w; ++i) {
    Tensor b = h * (1.0 + 1e-3 * i);
    s = i == 0 ? b : s + b;
  }
  return finish_graph(std::move(g), s);
}

Graph mlp(int layers, int batch, int width) {
  Graph g;
  Tensor h = Tensor::randn({batch, width}, 7);
  for (int l = 0; l < layers; ++l) {
    Tensor w = Tensor::randn({width, width}, 100 + l) * (1.0 / width);
    w = w.detach();
    w.set_requires_grad(true);
    Tensor b = leaf({width}, 200 + l);
    g.keep.push_back(w);
    g.keep.push_back(b);
    h = tanh(matmul(h, w) + b);
  }
  return finish_graph(std::move(g), sum(h));
}

Graph wide_dag(int branches, int depth, int size) {
  Graph g;
  Tensor x = leaf({size, size}, 3);
  g.keep.push_back(x);
  const Tensor eye = Tensor::eye(size);
  Tensor total;
  for (int b = 0; b < branches; ++b) {
    // Near the identity, so that the gradients neither vanish into
    // subnormal numbers nor overflow over `depth` products.
    const double spread = 0.1 / size;
    const Tensor w = add(eye, Tensor::uniform({size, size}, -spread, spread, 1000 + b));
    Tensor y = x;
    for (int d = 0; d < depth; ++d)
      y = matmul(y, w);
    total = b == 0 ? sum(y) : add(total, sum(y));
  }
  return finish_graph(std::move(g), total);
}

Graph random_dag(int n, std::uint64_t seed) {
  Graph g;
  Tensor x = leaf({1});
  g.keep.push_back(x);
  Tensor y = random_dag_of(x, n, seed);
  return finish_graph(std::move(g), y);
}

// -- busy nodes on sim devices ---------------------------------------------------

void spin_for(std::chrono::nanoseconds d) {
  if (d.count() <= 0)
    return;
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

BusyNode::BusyNode(std::chrono::nanoseconds spin, Tensor input_like) : spin_(spin) {
  add_input_metadata(input_like);
}

void BusyNode::connect(const std::shared_ptr<Node>& next, Tensor grad_for_next) {
  add_next_edge(Edge{next, 0});
  outs_.push_back(std::move(grad_for_next));
}

variable_list BusyNode::apply(variable_list&&) {
  spin_for(spin_);
  return outs_;
}

namespace {

Tensor on(Device d) { return Tensor::scalar(1.0, DType::f64, d); }

Graph finish_busy(Graph g, const std::shared_ptr<Node>& root, Device root_device) {
  g.keep.push_back(on(root_device));
  g.roots = {Edge{root, 0}};
  g.root_grads = {on(root_device)};
  g.nodes = count_nodes(root.get());
  return g;
}

// Keeps the hand-built nodes alive (Graph holds tensors only).
struct NodeHolder {
  std::vector<std::shared_ptr<Node>> nodes;
};

} // namespace

static std::vector<std::shared_ptr<NodeHolder>> g_holders;

namespace {

/// A chain of n busy nodes, the one at position j (in execution order) on
/// `device_of(j)`.
Graph busy_chain(int n, const std::function<Device(int)>& device_of,
                 std::chrono::nanoseconds spin) {
  auto holder = std::make_shared<NodeHolder>();
  std::shared_ptr<BusyNode> next;
  for (int j = n - 1; j >= 0; --j) { // j = position in execution order
    auto node = make_node<BusyNode>(spin, on(device_of(j)));
    if (next)
      node->connect(next, on(device_of(j + 1)));
    holder->nodes.push_back(node);
    next = node;
  }
  g_holders.push_back(holder);
  Graph g;
  g.critical_path_ns = static_cast<double>(spin.count()) * n;
  g.total_work_ns = g.critical_path_ns;
  return finish_busy(std::move(g), next, device_of(0));
}

} // namespace

Graph busy_pipeline(int n, int devices, std::chrono::nanoseconds spin) {
  return busy_chain(
    n, [=](int j) { return Device::sim(static_cast<int>(static_cast<long>(j) * devices / n)); },
    spin);
}

Graph busy_hops(int n, int devices, std::chrono::nanoseconds spin) {
  return busy_chain(
    n, [=](int j) { return Device::sim(j % devices); }, spin);
}

Graph busy_branches(int n, int devices, std::chrono::nanoseconds spin) {
  auto holder = std::make_shared<NodeHolder>();
  auto root = make_node<BusyNode>(std::chrono::nanoseconds(0), on(Device::cpu()));
  for (int k = 0; k < devices; ++k) {
    std::shared_ptr<BusyNode> next;
    for (int j = n - 1; j >= 0; --j) {
      auto node = make_node<BusyNode>(spin, on(Device::sim(k)));
      if (next)
        node->connect(next, on(Device::sim(k)));
      holder->nodes.push_back(node);
      next = node;
    }
    root->connect(next, on(Device::sim(k)));
  }
  holder->nodes.push_back(root);
  g_holders.push_back(holder);
  Graph g;
  g.critical_path_ns = static_cast<double>(spin.count()) * n;
  g.total_work_ns = g.critical_path_ns * devices;
  return finish_busy(std::move(g), root, Device::cpu());
}

void run_backward(Executor& e, const Graph& g) { e.execute(g.roots, g.root_grads, retain(), {}); }

void run_backward_async(Engine& e, const Graph& g) {
  e.execute_async(g.roots, g.root_grads, retain(), {}).get();
}

void run_grad(Executor& e, const Graph& g) {
  ExecuteOptions o = retain();
  o.accumulate_grad = false;
  if (!e.execute(g.roots, g.root_grads, o, {gradient_edge(g.keep.at(0))}).at(0).defined())
    throw std::logic_error("run_grad: no gradient for the first leaf");
}

// -- sequential lower bound ------------------------------------------------------

SequentialPlan::SequentialPlan(const Graph& g)
  : order_(plan_ready_order(g.roots.at(0).function.get())), graph_(&g) {
  buffers_.resize(order_.size());
}

void start_pass(const std::vector<PlannedStep<Node>>& order,
                std::vector<detail::InputBuffer>& buffers, const Graph& g) {
  for (std::size_t i = 0; i < order.size(); ++i)
    buffers[i] = detail::InputBuffer(order[i].num_inputs);
  buffers[0].add(g.roots[0].input_nr, Tensor(g.root_grads[0]));
}

void SequentialPlan::run() {
  NoGradGuard no_grad;
  start_pass(order_, buffers_, *graph_);
  for (std::size_t i = 0; i < order_.size(); ++i)
    run_step(order_, buffers_, i, [](std::int32_t) {});
}

// -- engines ---------------------------------------------------------------------

namespace {

std::vector<Device> sim_devices() {
  return {Device::sim(0), Device::sim(1), Device::sim(2), Device::sim(3)};
}

} // namespace

std::optional<EngineConfig> actor_config(const std::string& name, std::vector<Device> devices) {
  const std::string spin = "actor_spin";
  const bool workers = name.size() > 7 && name.rfind("actor_", 0) == 0 && name.back() == 'w' &&
                       std::isdigit(static_cast<unsigned char>(name[6]));
  if (name != "actor" && name.rfind(spin, 0) != 0 && !workers)
    return std::nullopt;
  EngineConfig c;
  c.devices = std::move(devices);
  if (workers)
    c.cpu_workers = static_cast<std::size_t>(std::stoi(name.substr(6)));
  else if (name != "actor")
    c.spin_before_block = std::chrono::microseconds(std::stoi(name.substr(spin.size())));
  return c;
}

Executor& engine(const std::string& name) {
  static std::mutex m;
  static std::unordered_map<std::string, std::unique_ptr<Executor>> engines;
  std::lock_guard<std::mutex> lock(m);
  auto& e = engines[name];
  if (!e) {
    if (auto config = actor_config(name, sim_devices())) {
      e = std::make_unique<Engine>(std::move(*config));
    } else if (name == "baseline") {
      e = std::make_unique<BaselineEngine>(sim_devices());
    } else if (name == "reference") {
      e = std::make_unique<ReferenceExecutor>();
    } else {
      engines.erase(name);
      throw std::invalid_argument("unknown engine " + name);
    }
  }
  return *e;
}

const std::vector<std::string>& engine_names() {
  static const std::vector<std::string> names{"actor", "baseline", "reference"};
  return names;
}

std::size_t peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::size_t>(ru.ru_maxrss) * 1024;
}

} // namespace actorgrad::bench
