#pragma once
/// @file install.h
/// Runs every libtorch backward of the process on an actorgrad actor engine.
///
///     actorgrad::torch::Scope actorgrad_backward;   // or install() / uninstall()
///     loss.backward();                              // libtorch's own nodes, on actors
///
/// libtorch's backward(), torch::autograd::backward and torch::autograd::grad
/// all go through libtorch's default engine; install() makes that an engine
/// whose calls the actor engine schedules (actors/torch/detail/bridge_engine.h).
/// take_over_distributed_autograd() makes torch::distributed::autograd's
/// backward passes run their local parts on it too (actors/torch/detail/dist_engine.h).
/// Calls whose graph reaches a non-CPU device (CUDA) are given to libtorch's
/// stock engine whole (counted in Stats::delegated). Without code changes:
/// LD_PRELOAD=libactorgrad_torch_preload.so (preload.cpp).

#include <cstdint>

#include "actorgrad/actors/engine.h"
#include "actorgrad/actors/engine_config.h"

namespace actorgrad::torch {

/// Makes an actor engine with `config` libtorch's default engine (every
/// backward/grad of the process runs on it) until uninstall(). Throws
/// std::logic_error if already installed, std::invalid_argument naming a bad
/// setting of `config`.
void install(EngineConfig config = {});

/// From now on, while installed, torch::distributed::autograd's backward
/// passes (dist_autograd.backward and the gradients other processes send
/// by RPC) run their local parts on the installed engine; not installed,
/// on libtorch's. Returns false when this libtorch does not call its
/// distributed engine through its PLT (then nothing changes). The Python
/// install() and the preload library call it.
bool take_over_distributed_autograd();

/// Restores libtorch's stock engine. Waits for nothing: calls in flight
/// finish on actorgrad, and the actor engine goes when the last one ends.
/// Does nothing when not installed.
void uninstall();

/// Whether actorgrad is libtorch's default engine now.
bool installed();

/// The installed actor engine (for recording traces, observers, stats).
/// Throws std::logic_error if not installed.
actorgrad::Engine& engine();

/// RAII: install() in the constructor, uninstall() in the destructor.
class Scope {
public:
  explicit Scope(EngineConfig config = {}) { install(std::move(config)); }
  ~Scope() { uninstall(); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};

/// Process-wide counters since the program started.
struct Stats {
  /// Backward/grad calls run on an actor engine.
  std::uint64_t calls = 0;
  /// Calls given to libtorch's stock engine while installed: their graph
  /// reaches a CUDA (non-CPU) device, they were made inside a node of a
  /// delegated call, or they reached an engine already uninstalled.
  std::uint64_t delegated = 0;
  /// Parts of torch.distributed.autograd backward passes run in this
  /// process: one task per pass and process (started by a
  /// dist_autograd.backward call here, or by the first gradient of the pass
  /// that arrived by RPC), each one call counted in `calls`
  /// (actors/torch/detail/dist_engine.h).
  std::uint64_t distributed_parts = 0;
  /// Those passes still running here now (listed until their task ended).
  std::int64_t distributed_running = 0;
  /// Whether install() took over libtorch's distributed autograd engine.
  bool distributed_taken_over = false;
};
Stats stats();

} // namespace actorgrad::torch
