#include "tools/cli/format.h"

#include <cstdarg>
#include <cstdio>
#include <vector>

namespace actorgrad::cli {

std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, args);
  va_end(args);
  std::vector<char> buf(static_cast<std::size_t>(n) + 1);
  std::vsnprintf(buf.data(), buf.size(), fmt, again);
  va_end(again);
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

} // namespace actorgrad::cli
