#pragma once
/// @file sent_value.h
/// A graph's in-flight gradient, held inline in the message that carries it.

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace actorgrad::detail {

/// Holds one value of a type the holder's reader knows (a graph's
/// `in_flight`, see Note [Graph interface]) inside itself, without an
/// allocation: a gradient sent to another actor costs the message and
/// nothing more. std::any would allocate (libstdc++ stores only values of
/// a pointer's size inline). Copyable because CAF may copy a message.
class SentValue {
public:
  /// The largest value held (a tensor handle, a producer stream, an event).
  static constexpr std::size_t capacity = 64;

  SentValue() = default;
  /// Holds `v`.
  template <class T, class = std::enable_if_t<!std::is_same_v<std::decay_t<T>, SentValue>>>
  explicit SentValue(T&& v) : ops_(&ops_for<std::decay_t<T>>) {
    using U = std::decay_t<T>;
    static_assert(sizeof(U) <= capacity && alignof(U) <= alignof(std::max_align_t),
                  "a graph's in_flight must fit SentValue::capacity");
    ::new (buf_) U(std::forward<T>(v));
  }
  SentValue(const SentValue& other) : ops_(other.ops_) {
    if (ops_)
      ops_->copy(buf_, other.buf_);
  }
  SentValue(SentValue&& other) noexcept : ops_(other.ops_) {
    if (ops_)
      ops_->move(buf_, other.buf_);
  }
  /// Copy or move assignment (`other` is the copy, or the moved value).
  SentValue& operator=(SentValue other) noexcept {
    reset();
    if (other.ops_)
      other.ops_->move(buf_, other.buf_);
    ops_ = other.ops_;
    return *this;
  }
  ~SentValue() { reset(); }

  /// The value held, which the caller knows to be a `T`.
  template <class T>
  T& get() {
    return *std::launder(reinterpret_cast<T*>(buf_));
  }

private:
  struct Ops {
    void (*copy)(void* to, const void* from);
    void (*move)(void* to, void* from); ///< leaves `from` moved-from, still to be destroyed
    void (*destroy)(void* at);
  };
  template <class T>
  static constexpr Ops ops_for{
    [](void* to, const void* from) { ::new (to) T(*static_cast<const T*>(from)); },
    [](void* to, void* from) { ::new (to) T(std::move(*static_cast<T*>(from))); },
    [](void* at) { static_cast<T*>(at)->~T(); }};

  void reset() {
    if (ops_)
      ops_->destroy(buf_);
    ops_ = nullptr;
  }

  const Ops* ops_ = nullptr;
  alignas(std::max_align_t) unsigned char buf_[capacity];
};

} // namespace actorgrad::detail
