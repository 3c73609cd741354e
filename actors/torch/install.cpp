#include "actorgrad/actors/torch/install.h"

#include <atomic>
#include <memory>
#include <stdexcept>

#include "actorgrad/actors/torch/detail/bridge_engine.h"
#include "actorgrad/actors/torch/detail/dist_engine.h"

namespace actorgrad::torch {

namespace {

using detail::BridgeEngine;

/// The installed bridge (null: none). Written by install/uninstall, read by
/// every libtorch call of get_default_engine (through default_engine_stub).
std::atomic<BridgeEngine*> installed_bridge{nullptr};

/// libtorch's default engine before the first install: the stock C++
/// engine, or in a Python process torch's Python engine. Set once, before
/// the stub that reads it.
::torch::autograd::Engine* fallback_engine = nullptr;

::torch::autograd::Engine& default_engine_stub() {
  if (BridgeEngine* b = installed_bridge.load(std::memory_order_acquire))
    return *b;
  return *fallback_engine;
}

/// Whether libtorch's distributed engine was taken over. Written by
/// take_over_distributed_autograd(), read by stats().
std::atomic<bool> dist_taken_over{false};

} // namespace

namespace detail {
BridgeEngine* installed_bridge_engine() { return installed_bridge.load(std::memory_order_acquire); }
} // namespace detail

void install(EngineConfig config) {
  if (installed())
    throw std::logic_error("actorgrad::torch::install: already installed (uninstall() first)");
  static ::torch::autograd::Engine* const fallback =
    (fallback_engine = &::torch::autograd::Engine::get_default_engine());
  auto* bridge =
    new BridgeEngine(std::make_unique<actorgrad::Engine>(std::move(config)), *fallback);
  BridgeEngine* expected = nullptr;
  if (!installed_bridge.compare_exchange_strong(expected, bridge, std::memory_order_acq_rel)) {
    bridge->retire(); // another thread installed meanwhile; `bridge` stays in the chain
    throw std::logic_error("actorgrad::torch::install: already installed (uninstall() first)");
  }
  // The stub is set once and stays: it reads installed_bridge on every call,
  // so install/uninstall never race libtorch's read of the stub.
  static const bool stub_set =
    (::torch::autograd::set_default_engine_stub(&default_engine_stub), true);
  (void)stub_set;
}

bool take_over_distributed_autograd() {
  const bool taken = detail::take_over_dist_engine();
  dist_taken_over.store(taken, std::memory_order_relaxed);
  return taken;
}

void uninstall() {
  if (BridgeEngine* b = installed_bridge.exchange(nullptr, std::memory_order_acq_rel))
    b->retire();
}

bool installed() { return installed_bridge.load(std::memory_order_acquire) != nullptr; }

actorgrad::Engine& engine() {
  BridgeEngine* b = installed_bridge.load(std::memory_order_acquire);
  if (!b)
    throw std::logic_error("actorgrad::torch::engine: not installed (install() first)");
  return b->engine();
}

Stats stats() {
  auto& c = detail::counters();
  return {c.calls.load(std::memory_order_relaxed), c.delegated.load(std::memory_order_relaxed),
          c.distributed_parts.load(std::memory_order_relaxed),
          c.distributed_running.load(std::memory_order_relaxed),
          dist_taken_over.load(std::memory_order_relaxed)};
}

} // namespace actorgrad::torch
