#include "tools/cli/progress.h"

#include "tools/cli/format.h"

#include <unistd.h>

namespace actorgrad::cli {

namespace {

/// Erase the current terminal line.
constexpr const char* kClearLine = "\r\x1b[K";

} // namespace

Progress::Progress(std::FILE* out, std::int64_t total)
  : out_(out), total_(total), live_(::isatty(::fileno(out)) == 1),
    start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

void Progress::step_done(std::int64_t step, const std::function<double()>& loss) {
  done_ = step;
  if (!live_)
    return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100) && step != total_)
    return;
  last_draw_ = now;
  std::fprintf(out_, "%sstep %lld/%lld  loss %.4f  %.1f steps/s  ETA %s", kClearLine,
               (long long)step, (long long)total_, loss(), rate(), eta().c_str());
  std::fflush(out_);
  status_shown_ = true;
}

void Progress::print(const std::string& line) {
  clear_status();
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

void Progress::finish() { clear_status(); }

void Progress::clear_status() {
  if (!status_shown_)
    return;
  std::fputs(kClearLine, out_);
  status_shown_ = false;
}

double Progress::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double Progress::rate() const {
  const double s = elapsed_s();
  return s > 0 ? double(done_) / s : 0.0;
}

std::string Progress::eta() const {
  const double r = rate();
  if (r <= 0)
    return "?";
  const auto left = static_cast<long long>(double(total_ - done_) / r + 0.5);
  return left < 60 ? format("%llds", left) : format("%lldm%02llds", left / 60, left % 60);
}

} // namespace actorgrad::cli
