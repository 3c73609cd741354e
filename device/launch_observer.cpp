#include "actorgrad/device/launch_observer.h"

#include <cstring>

namespace actorgrad {

namespace {
constinit thread_local LaunchObserver* current = nullptr;
constexpr const char* kNames[] = {"none", "kernel", "copy", "wait", "record"};
} // namespace

const char* device_work_name(DeviceWork w) { return kNames[static_cast<int>(w)]; }

DeviceWork parse_device_work(const char* name) {
  for (int i = 0; i < 5; ++i)
    if (std::strcmp(kNames[i], name) == 0)
      return static_cast<DeviceWork>(i);
  return DeviceWork::none;
}

LaunchObserver* launch_observer() { return current; }

ScopedLaunchObserver::ScopedLaunchObserver(LaunchObserver* observer) : previous_(current) {
  current = observer;
}

ScopedLaunchObserver::~ScopedLaunchObserver() { current = previous_; }

} // namespace actorgrad
