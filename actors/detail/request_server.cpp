#include "actorgrad/actors/detail/request_server.h"

#include <exception>
#include <string>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/delegated.hpp>
#include <caf/sec.hpp>

#include "actorgrad/actors/detail/async_call.h"
#include "actorgrad/actors/detail/engine_actor.h"
#include "actorgrad/actors/detail/engine_core.h"
#include "actorgrad/actors/detail/post.h"
#include "actorgrad/actors/messages.h"
#include "actorgrad/libengine/engine/detail/call_args.h"

namespace actorgrad::detail {

namespace {

/// The error answer for `error`: `code` with the exception's message.
caf::error to_error(const std::exception_ptr& error, caf::sec code) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return caf::make_error(code, std::string(e.what()));
  } catch (...) {
    return caf::make_error(code, std::string("unknown exception"));
  }
}

/// Who asked: where the answer to the request being handled goes.
struct Requester {
  caf::strong_actor_ptr to;
  caf::message_id mid;
  caf::strong_actor_ptr from;

  template <class M>
  void answer(M&& m) const {
    respond(to, mid, from, std::forward<M>(m));
  }
};

Requester current_requester(caf::local_actor* self) {
  return {self->current_sender(), self->current_message_id(), caf::strong_actor_ptr{self->ctrl()}};
}

/// Answers the request being handled: builds its call with `make_call`
/// (an error there: sec::invalid_argument), runs it on a coordinator actor
/// and answers with `respond(gradients)` (an error in the pass or in
/// `respond`: sec::runtime_error).
template <class MakeCall, class Respond>
void serve(caf::local_actor* self, Executor* engine, const std::shared_ptr<EngineCore>& core,
           MakeCall make_call, Respond respond) {
  Requester who = current_requester(self);
  BackwardCall call;
  try {
    call = make_call();
  } catch (...) {
    who.answer(to_error(std::current_exception(), caf::sec::invalid_argument));
    return;
  }
  spawn_call(
    engine, core, std::move(call),
    make_call_done([who = std::move(who), respond](std::exception_ptr error, variable_list grads) {
      if (!error) {
        try {
          who.answer(respond(std::move(grads)));
          return;
        } catch (...) {
          error = std::current_exception();
        }
      }
      who.answer(to_error(error, caf::sec::runtime_error));
    }));
}

void request_server(caf::blocking_actor* self, Executor* engine,
                    const std::shared_ptr<EngineCore>& core) {
  bool running = true;
  self->receive_while(running)(
    [&](msg::BackwardRequest& req) -> caf::delegated<msg::BackwardResponse> {
      const BackwardOptions& o = req.options;
      serve(
        self, engine, core,
        [&] {
          return make_backward_call(req.tensors, o.grad_tensors, o.retain_graph, o.create_graph,
                                    o.inputs);
        },
        [inputs = o.inputs](const variable_list&) {
          msg::BackwardResponse response;
          for (const Tensor& t : inputs)
            response.grads.push_back(t.grad());
          return response;
        });
      return {};
    },
    [&](msg::GradRequest& req) -> caf::delegated<msg::GradResponse> {
      const GradOptions& o = req.options;
      serve(
        self, engine, core,
        [&] {
          return make_grad_call(req.outputs, req.inputs, o.grad_outputs, o.retain_graph,
                                o.create_graph);
        },
        [inputs = req.inputs, allow_unused = o.allow_unused](variable_list grads) {
          return msg::GradResponse{check_grad_results(std::move(grads), inputs, allow_unused)};
        });
      return {};
    },
    [&](msg::Shutdown) { running = false; });
}

/// The request actor: an EngineActor (Note [Waking an actor without a
/// lock]) running request_server.
class RequestServer final : public EngineActor {
public:
  RequestServer(caf::actor_config& cfg, Executor* engine, std::shared_ptr<EngineCore> core)
    : EngineActor(cfg), engine_(engine), core_(std::move(core)) {}
  void act() override { request_server(this, engine_, core_); }
  const char* name() const override { return "actorgrad.request_server"; }

private:
  Executor* engine_;
  std::shared_ptr<EngineCore> core_;
};

} // namespace

caf::actor spawn_request_server(Executor* engine, const std::shared_ptr<EngineCore>& core) {
  return core->start<RequestServer>("actorgrad.req", engine, core);
}

} // namespace actorgrad::detail
