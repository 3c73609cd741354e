#include "actorgrad/device/device.h"

#include <charconv>
#include <ostream>
#include <stdexcept>

#include "actorgrad/device/stream.h"

namespace actorgrad {

Device Device::parse(std::string_view text) {
  auto fail = [&] {
    throw std::invalid_argument("unknown device '" + std::string(text) +
                                "' (expected cpu, sim:N or cuda:N)");
  };
  if (text == "cpu")
    return cpu();
  auto colon = text.find(':');
  if (colon == std::string_view::npos)
    fail();
  auto kind = text.substr(0, colon);
  auto num = text.substr(colon + 1);
  int index = -1;
  auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), index);
  if (ec != std::errc{} || end != num.data() + num.size() || index < 0 || index > 1023)
    fail();
  if (kind == "sim")
    return sim(index);
  if (kind == "cuda")
    return cuda(index);
  fail();
  return {};
}

std::string Device::str() const {
  switch (type) {
  case DeviceType::cpu: return "cpu";
  case DeviceType::sim: return "sim:" + std::to_string(index);
  case DeviceType::cuda: return "cuda:" + std::to_string(index);
  }
  return "?";
}

// Stream's names live here, with Device's, and not in stream.cpp: the CUDA
// plugin builds this file, which holds no state (Note [CUDA only when used]).
std::string Stream::str() const {
  return device.str() + (is_default() ? "/default" : "/stream " + std::to_string(id));
}

std::ostream& operator<<(std::ostream& os, Stream s) { return os << s.str(); }

} // namespace actorgrad
