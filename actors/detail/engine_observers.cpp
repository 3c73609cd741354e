#include "actorgrad/actors/detail/engine_observers.h"

#include <algorithm>
#include <utility>

#include "actorgrad/actors/detail/observer_list.h"

namespace actorgrad::detail {

EngineObservers::EngineObservers(std::shared_ptr<EngineObserver> installed)
  : installed_(std::move(installed)) {
  publish();
}

void EngineObservers::install(std::shared_ptr<EngineObserver> observer) {
  installed_ = std::move(observer);
  publish();
}

void EngineObservers::add(std::shared_ptr<EngineObserver> observer) {
  added_.push_back(std::move(observer));
  publish();
}

bool EngineObservers::remove(const EngineObserver* observer) {
  const auto it =
    std::find_if(added_.begin(), added_.end(), [&](const auto& o) { return o.get() == observer; });
  if (it == added_.end())
    return false;
  added_.erase(it);
  publish();
  return true;
}

void EngineObservers::set_recorder(std::shared_ptr<EngineObserver> recorder) {
  recorder_ = std::move(recorder);
  publish();
}

void EngineObservers::publish() {
  std::vector<std::shared_ptr<EngineObserver>> all;
  if (installed_)
    all.push_back(installed_);
  all.insert(all.end(), added_.begin(), added_.end());
  if (recorder_)
    all.push_back(recorder_);
  std::shared_ptr<EngineObserver> now;
  if (all.size() == 1)
    now = std::move(all.front());
  else if (all.size() > 1)
    now = std::make_shared<ObserverList>(std::move(all));
  published_.store(std::move(now), std::memory_order_release);
}

} // namespace actorgrad::detail
