/// @file embed_in_actor_system.cpp
/// Embedding actorgrad in an application's own CAF 0.17 actor system.
///
/// The application owns the `caf::actor_system`; the Engine is constructed
/// on it (`Engine(system, config)`) and its device workers live there too.
///
///   model actor (event-based)  --BackwardRequest-->  trainer actor (blocking)
///     runs the forward pass      <--GradReply------     calls the engine
///     applies the SGD step
///
/// The model actor never blocks its scheduler thread: it sends a request and
/// handles the reply when it comes. The trainer is a blocking actor (its own
/// thread), so it may call the synchronous engine API.
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
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/engine.h"
#include "libengine/autograd.h"
#include "libengine/autograd/grad_mode.h"
#include "libengine/ops.h"

using namespace actorgrad;

namespace app {

/// A loss to differentiate with respect to `params` (sent by the model actor).
struct BackwardRequest {
  Tensor loss;
  std::vector<Tensor> params;
};

/// The gradients of a BackwardRequest, or the engine's error message.
struct GradReply {
  std::vector<Tensor> grads;
  std::string error;
};

using stop_atom = caf::atom_constant<caf::atom("stop")>;

} // namespace app

// Local-only messages holding tensors (CAF 0.17: no serialization needed).
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(app::BackwardRequest)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(app::GradReply)

namespace app {

/// Answers BackwardRequests by running the backward pass on the engine.
void trainer(caf::blocking_actor* self, Engine* engine) {
  bool running = true;
  self->receive_while(running)(
    [&](const BackwardRequest& req) -> GradReply {
      try {
        return GradReply{grad({req.loss}, req.params, {}, *engine), {}};
      } catch (const std::exception& e) {
        return GradReply{{}, e.what()};
      }
    },
    [&](stop_atom) { running = false; });
}

/// Linear regression on sim:0: pred = X w + b, loss = mean((pred - y)^2).
struct ModelState {
  Tensor x, y; // data (cpu)
  Tensor w, b; // parameters (sim:0, require grad)
  int step = 0;
  std::vector<double> losses;
  caf::actor trainer;
  std::promise<std::vector<double>>* done = nullptr;
};

using ModelActor = caf::stateful_actor<ModelState>;

constexpr int kSteps = 8;
constexpr double kLearningRate = 0.1;

void finish(ModelActor* self, std::vector<double> losses) {
  self->state.done->set_value(std::move(losses));
  self->quit();
}

/// One training step: forward here, backward by the trainer, SGD on the reply.
void run_step(ModelActor* self) {
  auto& st = self->state;
  const Device dev = Device::sim(0);
  Tensor pred = add(matmul(st.x.to(dev), st.w), st.b);
  Tensor diff = sub(pred, st.y.to(dev));
  Tensor loss = mean(mul(diff, diff)).to(Device::cpu());
  st.losses.push_back(loss.item());
  std::printf("step %d loss %.6f\n", st.step, loss.item());
  std::fflush(stdout);
  self->request(st.trainer, std::chrono::seconds(30), BackwardRequest{loss, {st.w, st.b}})
    .then(
      [self](const GradReply& reply) {
        auto& s = self->state;
        if (!reply.error.empty()) {
          std::printf("backward failed: %s\n", reply.error.c_str());
          finish(self, {});
          return;
        }
        {
          NoGradGuard no_grad; // the SGD step is not part of the graph
          s.w.add_(reply.grads[0], -kLearningRate);
          s.b.add_(reply.grads[1], -kLearningRate);
        }
        if (++s.step < kSteps)
          run_step(self);
        else
          finish(self, s.losses);
      },
      [self](caf::error& err) {
        std::printf("request failed: %s\n", self->system().render(err).c_str());
        finish(self, {});
      });
}

/// The application's model actor (event-based): runs kSteps SGD steps and
/// reports the losses through `done`.
caf::behavior model(ModelActor* self, caf::actor trainer,
                    std::promise<std::vector<double>>* done) {
  auto& s = self->state;
  s.trainer = std::move(trainer);
  s.done = done;
  s.x = Tensor::uniform({16, 3}, -1, 1, 1);
  Tensor w_true = Tensor::from_vector({1.5, -2.0, 0.5}, {3, 1});
  s.y = add(matmul(s.x, w_true), 0.25);
  s.w = Tensor::zeros({3, 1}, DType::f64, Device::sim(0)).set_requires_grad(true);
  s.b = Tensor::zeros({1}, DType::f64, Device::sim(0)).set_requires_grad(true);
  run_step(self);
  return {[](stop_atom) {}};
}

} // namespace app

int main() {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2); // CAF's default of 4 is too many for 2 cores
  caf::actor_system system{cfg};
  int rc = 1;
  {
    Engine engine(system, EngineConfig{{Device::sim(0)}});
    auto trainer = system.spawn(app::trainer, &engine);
    std::promise<std::vector<double>> done;
    auto result = done.get_future();
    auto model = system.spawn(app::model, trainer, &done);
    if (result.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      std::printf("training did not finish within 60 s\n");
      std::fflush(stdout);
      std::_Exit(2);
    }
    std::vector<double> losses = result.get();
    caf::anon_send(trainer, app::stop_atom::value);
    {
      caf::scoped_actor self{system};
      self->wait_for(trainer, model);
    }
    if (losses.size() == static_cast<std::size_t>(app::kSteps)) {
      bool monotone = true;
      for (std::size_t i = 1; i < losses.size(); ++i)
        monotone = monotone && losses[i] < losses[i - 1];
      const bool decreased = losses.back() < losses.front();
      std::printf("loss %s: %.6f -> %.6f%s\n", decreased ? "decreased" : "did not decrease",
                  losses.front(), losses.back(), monotone ? " (every step)" : "");
      rc = decreased ? 0 : 1;
    } else {
      std::printf("training failed after %zu steps\n", losses.size());
    }
  } // the Engine stops its workers before the actor system goes away
  return rc;
}
