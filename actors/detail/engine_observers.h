#pragma once
/// @file engine_observers.h
/// The observers of one engine, and the one that calls starting now get. Internal.

#include <atomic>
#include <memory>
#include <vector>

#include "actorgrad/actors/observer.h"

namespace actorgrad::detail {

/// Any number of observers: the one installed (EngineConfig::observer,
/// Engine::set_observer), those added (Engine::add_observer) and the
/// recorder of Engine::start_recording, in that order. Changed by the
/// Engine's observer calls, one thread at a time; each change publishes
/// what the GraphTasks started from then on keep (current()): null for
/// none, the observer itself for one, an ObserverList for more.
class EngineObservers {
public:
  explicit EngineObservers(std::shared_ptr<EngineObserver> installed);

  /// What a call starting now keeps (acquire: any thread). Null when
  /// unobserved, the one thing every call checks.
  std::shared_ptr<EngineObserver> current() const {
    return published_.load(std::memory_order_acquire);
  }

  /// Replaces the installed observer (null: none).
  void install(std::shared_ptr<EngineObserver> observer);
  /// Adds `observer` (not null) after those there are, before the recorder.
  void add(std::shared_ptr<EngineObserver> observer);
  /// Removes `observer` if it was added; false if not.
  bool remove(const EngineObserver* observer);
  /// Replaces the recorder (null: none).
  void set_recorder(std::shared_ptr<EngineObserver> recorder);
  const std::shared_ptr<EngineObserver>& recorder() const { return recorder_; }

private:
  /// Recomputes published_ from the parts.
  void publish();

  // The parts, kept by the Engine's observer calls only (one thread at a time).
  std::shared_ptr<EngineObserver> installed_;
  std::vector<std::shared_ptr<EngineObserver>> added_;
  std::shared_ptr<EngineObserver> recorder_;
  /// Written by publish (the Engine's observer calls); read by every call
  /// that starts (current()).
  std::atomic<std::shared_ptr<EngineObserver>> published_;
};

} // namespace actorgrad::detail
