#pragma once
/// @file message_has.h
/// A BOOST_CHECK_EXCEPTION predicate on what an error message names.

#include <boost/test/unit_test.hpp>

#include <exception>
#include <string>
#include <vector>

namespace actorgrad::testing {

/// True when the exception's message contains each of `parts` (case
/// sensitive); otherwise reports the message.
inline auto message_has(std::vector<std::string> parts) {
  return [parts](const std::exception& e) {
    const std::string msg = e.what();
    bool ok = true;
    for (const auto& p : parts)
      ok = ok && msg.find(p) != std::string::npos;
    BOOST_TEST(ok, "unexpected error message: " << msg);
    return ok;
  };
}

} // namespace actorgrad::testing
