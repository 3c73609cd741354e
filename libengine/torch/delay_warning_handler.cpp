/// @file delay_warning_handler.cpp
/// libtorch's DelayWarningHandler, whose virtual table libtorch does not
/// export: a libtorch GraphTask (actors/torch/detail/bridge_engine.cpp makes one per
/// call) holds one, so the program that makes it must define the handler's
/// out-of-line members. Same behaviour as libtorch's warnings.cpp: warnings
/// raised while nodes run are kept, then replayed on the caller's thread.
/// libtorch's own copy stays in libtorch (hidden), so they do not clash.

#include <torch/csrc/autograd/utils/warnings.h>

namespace torch::autograd::utils {

void DelayWarningHandler::process(const at::SourceLocation& source_location, const std::string& msg,
                                  bool verbatim) {
  std::lock_guard<std::mutex> lock(mutex_);
  warnings_.push_back({source_location, msg, verbatim});
}

void DelayWarningHandler::replay_warnings() {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_INTERNAL_ASSERT(c10::Warning::get_warning_handler() != this,
                        "DelayWarningHandler cannot replay warnings into itself, this will "
                        "cause a deadlock");
  for (const auto& warning : warnings_)
    c10::Warning::warn(warning.source_location, warning.msg, warning.verbatim);
}

} // namespace torch::autograd::utils
