#include "actorgrad/device/cuda/plugin_loader.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "actorgrad/device/launch_observer.h"

namespace actorgrad::cuda {

namespace {

namespace fs = std::filesystem;

constexpr const char* file_name = "libactorgrad_cuda.so";

/// What loading the plugin came to: the table, or why there is none.
struct Loaded {
  const Plugin* plugin = nullptr;
  std::string error;
};

/// The folder of the object holding this code: the binary, or a shared
/// library (the Python module) that links the core. Empty when unknown.
fs::path own_folder() {
  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(reinterpret_cast<void*>(&own_folder), &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) == 0 ||
      map == nullptr)
    return {};
  std::error_code ec;
  // The main program's link map has no name.
  const fs::path self =
    map->l_name[0] == '\0' ? fs::read_symlink("/proc/self/exe", ec) : fs::path(map->l_name);
  if (ec || self.empty())
    return {};
  return fs::weakly_canonical(self, ec).parent_path();
}

/// dlopen(`what`): the table, or the error (also on an ABI mismatch).
Loaded open(const std::string& what) {
  Loaded r;
  void* handle = dlopen(what.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    r.error = err != nullptr ? err : "dlopen failed";
    return r;
  }
  using Entry = const Plugin* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, "actorgrad_cuda_plugin"));
  if (entry == nullptr) {
    const char* err = dlerror();
    r.error = std::string("no actorgrad_cuda_plugin in it: ") + (err != nullptr ? err : "");
    dlclose(handle);
    return r;
  }
  const Plugin* p = entry();
  if (p->abi_version != plugin_abi_version) {
    r.error = "it was built for plugin ABI " + std::to_string(p->abi_version) +
              ", this build of actorgrad expects " + std::to_string(plugin_abi_version);
    dlclose(handle);
    return r;
  }
  p->connect_launch_observer(&launch_observer);
  r.plugin = p; // never unloaded: its memory and backend outlive every tensor
  return r;
}

Loaded load() {
  if (const char* forced = std::getenv("ACTORGRAD_CUDA_PLUGIN"); forced && *forced) {
    Loaded r = open(forced);
    if (r.plugin == nullptr)
      r.error = "the CUDA plugin " + std::string(forced) +
                " (from ACTORGRAD_CUDA_PLUGIN) failed to load: " + r.error;
    return r;
  }
  std::vector<fs::path> files;
  if (const fs::path here = own_folder(); !here.empty()) {
    files.push_back(here / file_name);
    files.push_back((here / ".." / ACTORGRAD_INSTALL_LIBDIR / file_name).lexically_normal());
  }
  std::string tried;
  auto failed = [](const std::string& file, const std::string& error) {
    return Loaded{nullptr, "the CUDA plugin " + file + " failed to load: " + error};
  };
  for (const auto& f : files) {
    std::error_code ec;
    if (fs::exists(f, ec)) {
      Loaded r = open(f.string());
      return r.plugin ? r : failed(f.string(), r.error);
    }
    tried += f.string() + ", ";
  }
  // By name: a missing plugin reads "libactorgrad_cuda.so: cannot open
  // shared object file"; any other error is the plugin's own.
  if (Loaded r = open(file_name); r.plugin || r.error.rfind(std::string(file_name) + ":", 0) != 0)
    return r.plugin ? r : failed(file_name, r.error);
  tried += std::string(file_name) + " on the library search path, ";
  const fs::path installed = fs::path(ACTORGRAD_INSTALL_FULL_LIBDIR) / file_name;
  if (std::error_code ec; fs::exists(installed, ec)) {
    Loaded r = open(installed.string());
    return r.plugin ? r : failed(installed.string(), r.error);
  }
  tried += installed.string();
  return {nullptr, std::string("the CUDA plugin ") + file_name + " was not found (tried " + tried +
                     ")" +
                     (ACTORGRAD_CUDA_PLUGIN_BUILT
                        ? "; set ACTORGRAD_CUDA_PLUGIN to its path"
                        : "; this build of actorgrad has no CUDA backend (configure with the CUDA "
                          "toolkit and -DACTORGRAD_CUDA=ON)")};
}

const Loaded& loaded() {
  static std::once_flag once;
  static Loaded result;
  std::call_once(once, [] { result = load(); });
  return result;
}

} // namespace

const Plugin* find_plugin() { return loaded().plugin; }

const Plugin& plugin_for(Device d) {
  const Loaded& l = loaded();
  if (l.plugin == nullptr)
    throw std::runtime_error(d.str() + " cannot be used: " + l.error);
  if (const int n = l.plugin->device_count();
      d.type != DeviceType::cuda || d.index < 0 || d.index >= n)
    throw std::invalid_argument(d.str() + " cannot be used: " + usable_devices());
  return *l.plugin;
}

std::string plugin_error() { return loaded().error; }

std::string usable_devices() {
  const Plugin& p = *loaded().plugin;
  const int n = p.device_count();
  std::string text =
    "this machine has " + std::to_string(n) + " usable CUDA device" + (n == 1 ? "" : "s");
  if (const std::string why = p.no_device_reason(); n == 0 && !why.empty())
    text += " (" + why + ")";
  return text;
}

} // namespace actorgrad::cuda
