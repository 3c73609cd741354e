/// @file plain_libtorch_program.cpp
/// An ordinary libtorch program with no actorgrad in it, for the preload
/// test (test_preload.cpp runs it plain and under
/// LD_PRELOAD=libactorgrad_torch_preload.so): an MLP trained with
/// cross-entropy and Adam for 5 steps, a Dropout layer drawing from a fixed
/// seed, and a Hessian-vector product through torch::autograd::grad with
/// create_graph. Prints every loss, parameter and gradient in hexadecimal
/// floating point (%a), so equal output means bitwise-equal values, and
/// last "backward_calls N" (the engine calls it made).

#include <cstdio>
#include <string>

#include <torch/torch.h>

namespace {

void print(const std::string& name, const torch::Tensor& t) {
  const torch::Tensor flat = t.detach().to(torch::kDouble).contiguous().view(-1);
  std::printf("%s %lld", name.c_str(), static_cast<long long>(flat.numel()));
  const double* p = flat.data_ptr<double>();
  for (std::int64_t i = 0; i < flat.numel(); ++i)
    std::printf(" %a", p[i]);
  std::printf("\n");
}

} // namespace

int main() {
  torch::manual_seed(7);
  int backward_calls = 0;
  torch::nn::Sequential net(torch::nn::Linear(12, 32), torch::nn::ReLU(), torch::nn::Dropout(0.2),
                            torch::nn::Linear(32, 4));
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-2));
  const torch::Tensor x = torch::randn({16, 12});
  const torch::Tensor y = torch::randint(0, 4, {16});
  for (int step = 0; step < 5; ++step) {
    opt.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    loss.backward();
    ++backward_calls;
    opt.step();
    print("loss." + std::to_string(step), loss);
  }
  for (const auto& p : net->named_parameters()) {
    print(p.key(), p.value());
    print(p.key() + ".grad", p.value().grad());
  }

  // Hessian-vector product: grad of (grad(f, w) . v) with respect to w.
  torch::Tensor w = torch::randn({6}, torch::kDouble).requires_grad_(true);
  const torch::Tensor v = torch::randn({6}, torch::kDouble);
  torch::Tensor f = (w.pow(3) * w.sin()).sum();
  torch::Tensor g =
    torch::autograd::grad({f}, {w}, {}, /*retain_graph=*/true, /*create_graph=*/true)[0];
  torch::Tensor hv = torch::autograd::grad({(g * v).sum()}, {w})[0];
  backward_calls += 2;
  print("hvp", hv);
  std::printf("backward_calls %d\n", backward_calls);
  return 0;
}
