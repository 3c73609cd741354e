#include "actorgrad/actors/detail/caller_state.h"

#include "actorgrad/libengine/autograd/grad_mode.h"

namespace actorgrad::detail {

namespace {
/// Makes `state` this thread's; returns what it replaced.
CallerState swap_in(const CallerState& state) {
  CallerState replaced{{}, AnomalyMode::is_enabled()};
  replaced.streams.reserve(state.streams.size());
  for (const Stream& s : state.streams) {
    replaced.streams.push_back(current_stream(s.device));
    set_current_stream(s);
  }
  AnomalyMode::set_enabled(state.anomaly);
  return replaced;
}
} // namespace

CallerState CallerState::of_this_thread() {
  return {thread_current_streams(), AnomalyMode::is_enabled()};
}

CallerScope::CallerScope(const CallerState& caller) : own_(swap_in(caller)) {}

CallerScope::~CallerScope() { swap_in(own_); }

} // namespace actorgrad::detail
