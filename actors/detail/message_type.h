#pragma once
/// @file message_type.h
/// The type of a message an engine actor handles. Internal.

#include <cstdint>
#include <cstdlib>
#include <cxxabi.h>
#include <memory>
#include <string>
#include <typeinfo>

#include <caf/rtti_pair.hpp>
#include <caf/type_erased_tuple.hpp>
#include <caf/type_nr.hpp>

namespace actorgrad::detail {

/// The type of a one-element message, read once: what the engine's
/// handlers branch on. CAF 0.17's `content.match_elements<T>()` builds a
/// pattern and calls through it for every type tried, about 130
/// instructions a try, so a handler that tried four types before the right
/// one spent more on matching than on the message (bench/HISTORY.md, "A
/// parked caller mailbox, kept monitors and one type read a message").
/// Here each try is a compare.
class MessageType {
public:
  explicit MessageType(const caf::type_erased_tuple& content)
    : rtti_(content.size() == 1 ? content.type(0) : caf::rtti_pair{0, nullptr}) {}

  /// Whether the message is one `T`.
  template <class T>
  bool is() const noexcept {
    constexpr std::uint16_t nr = caf::type_nr<T>::value;
    if constexpr (nr != 0)
      return rtti_.first == nr; // a CAF builtin (down_msg, exit_msg)
    else                        // the same type_info object, or an equal one from another library
      return rtti_.second != nullptr && *rtti_.second == typeid(T);
  }

  /// The type's name, for an error: a C++ type's demangled name, CAF's name
  /// of a builtin (`@i32`, `@str`, ...), or a note that the message is not
  /// one value.
  std::string name() const {
    if (rtti_.second) {
      int status = 0;
      std::unique_ptr<char, void (*)(void*)> demangled{
        abi::__cxa_demangle(rtti_.second->name(), nullptr, nullptr, &status), std::free};
      return status == 0 ? demangled.get() : rtti_.second->name();
    }
    if (rtti_.first != 0)
      return caf::numbered_type_names[rtti_.first - 1];
    return "(a message of other than one value)";
  }

private:
  caf::rtti_pair rtti_;
};

} // namespace actorgrad::detail
