/// @file embed_in_actor_system.cpp
/// Embedding actorgrad in an application's own CAF 0.17 actor system.
///
/// The application owns the `caf::actor_system`; the Engine is constructed
/// on it (`Engine(system, config)`) and its actors live there too.
///
///   model actor (event-based)  --msg::GradRequest-->   engine.request_actor()
///     runs the forward pass      <--msg::GradResponse--   (a coordinator actor
///     applies the SGD step           or a caf::error       runs each pass)
///
/// The model actor never blocks its scheduler thread: it sends a request and
/// handles the response when it comes (an Engine owning its own actor system
/// answers the same requests). The main thread, which is no actor, uses the
/// plain call `engine.grad(...)`.
///
/// Prints the loss of every step; exits 0 only if the loss decreased.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "actorgrad/actors/engine.h"
#include "actorgrad/actors/requests.h"
#include "actorgrad/libengine/autograd.h"
#include "actorgrad/libengine/autograd/grad_mode.h"
#include "actorgrad/libengine/ops.h"

using namespace actorgrad;

namespace app {

/// What the model actor reports: the loss of every step (none on failure),
/// the data and the trained parameters.
struct Trained {
  std::vector<double> losses;
  Tensor x, y, w, b;
};

/// Linear regression on sim:0: pred = X w + b, loss = mean((pred - y)^2).
struct ModelState {
  Tensor x, y; // data (cpu)
  Tensor w, b; // parameters (sim:0, require grad)
  int step = 0;
  std::vector<double> losses;
  caf::actor engine; // Engine::request_actor()
  std::promise<Trained>* done = nullptr;
};

using ModelActor = caf::stateful_actor<ModelState>;

constexpr int kSteps = 8;
constexpr double kLearningRate = 0.1;

void report(ModelActor* self, std::vector<double> losses) {
  auto& s = self->state;
  s.done->set_value(Trained{std::move(losses), s.x, s.y, s.w, s.b});
  self->quit();
}

/// Reports the losses, after showing how a bad request is answered: with
/// a caf::error carrying the engine's message.
void finish(ModelActor* self, std::vector<double> losses) {
  Tensor constant = sum(self->state.x); // needs no gradient
  self->request(self->state.engine, std::chrono::seconds(30), msg::BackwardRequest{{constant}})
    .then([self, losses](const msg::BackwardResponse&) { report(self, losses); },
          [self, losses](caf::error& err) {
            std::printf("bad request answered with an error: %s\n", msg::error_text(err).c_str());
            report(self, losses);
          });
}

/// One training step: forward here, backward by the engine, SGD on the response.
void run_step(ModelActor* self) {
  auto& st = self->state;
  const Device dev = Device::sim(0);
  Tensor pred = add(matmul(st.x.to(dev), st.w), st.b);
  Tensor diff = sub(pred, st.y.to(dev));
  Tensor loss = mean(mul(diff, diff)).to(Device::cpu());
  st.losses.push_back(loss.item());
  std::printf("step %d loss %.6f\n", st.step, loss.item());
  std::fflush(stdout);
  self->request(st.engine, std::chrono::seconds(30), msg::GradRequest{{loss}, {st.w, st.b}})
    .then(
      [self](const msg::GradResponse& response) {
        auto& s = self->state;
        {
          NoGradGuard no_grad; // the SGD step is not part of the graph
          s.w.add_(response.grads[0], -kLearningRate);
          s.b.add_(response.grads[1], -kLearningRate);
        }
        if (++s.step < kSteps)
          run_step(self);
        else
          finish(self, s.losses);
      },
      [self](caf::error& err) {
        std::printf("backward failed: %s\n", msg::error_text(err).c_str());
        report(self, {});
      });
}

/// The application's model actor (event-based): runs kSteps SGD steps and
/// reports the losses through `done`.
caf::behavior model(ModelActor* self, caf::actor engine, std::promise<Trained>* done) {
  auto& s = self->state;
  s.engine = std::move(engine);
  s.done = done;
  s.x = Tensor::uniform({16, 3}, -1, 1, 1);
  Tensor w_true = Tensor::from_vector({1.5, -2.0, 0.5}, {3, 1});
  s.y = add(matmul(s.x, w_true), 0.25);
  s.w = Tensor::zeros({3, 1}, DType::f64, Device::sim(0)).set_requires_grad(true);
  s.b = Tensor::zeros({1}, DType::f64, Device::sim(0)).set_requires_grad(true);
  run_step(self);
  return {[](const msg::GradRequest&) {}}; // none come: stays alive until quit
}

} // namespace app

int main() {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2); // CAF's default of 4 is too many for 2 cores
  caf::actor_system system{cfg};
  int rc = 1;
  {
    Engine engine(system, EngineConfig{{Device::sim(0)}});
    std::promise<app::Trained> done;
    auto result = done.get_future();
    auto model = system.spawn(app::model, engine.request_actor(), &done);
    if (result.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      std::printf("training did not finish within 60 s\n");
      std::fflush(stdout);
      std::_Exit(2);
    }
    app::Trained trained = result.get();
    {
      caf::scoped_actor self{system};
      self->wait_for(model);
    }
    const std::vector<double>& losses = trained.losses;
    if (losses.size() == static_cast<std::size_t>(app::kSteps)) {
      bool monotone = true;
      for (std::size_t i = 1; i < losses.size(); ++i)
        monotone = monotone && losses[i] < losses[i - 1];
      const bool decreased = losses.back() < losses.front();
      std::printf("loss %s: %.6f -> %.6f%s\n", decreased ? "decreased" : "did not decrease",
                  losses.front(), losses.back(), monotone ? " (every step)" : "");
      // A plain call on the engine, from a thread that is no actor: the
      // gradient of the loss at the trained parameters.
      const Device dev = Device::sim(0);
      Tensor diff = sub(add(matmul(trained.x.to(dev), trained.w), trained.b), trained.y.to(dev));
      Tensor loss = mean(mul(diff, diff)).to(Device::cpu());
      variable_list g = engine.grad({loss}, {trained.w, trained.b});
      std::vector<double> dw = g[0].to(Device::cpu()).to_vector();
      std::printf("plain call engine.grad: dloss/dw = (%.4f, %.4f, %.4f) after training\n", dw[0],
                  dw[1], dw[2]);
      rc = decreased ? 0 : 1;
    } else {
      std::printf("training failed after %zu steps\n", losses.size());
    }
  } // the Engine stops its workers before the actor system goes away
  return rc;
}
