#pragma once
/// @file call_done.h
/// What a pooled async coordinator calls once an asynchronous call ended.
/// Internal.

#include <exception>
#include <future>
#include <memory>
#include <type_traits>
#include <utility>

#include "actorgrad/libengine/autograd.h"

namespace actorgrad::detail {

// Note [One allocation for an async call's outcome]
// The caller allocates what reports an asynchronous call's outcome, and the
// coordinator frees it after reporting: on glibc such a cross-thread pair
// takes malloc's slow paths on both threads (the caller's cache for that
// size runs empty, the coordinator's overflows). So it is one object that
// holds the promise (or the requester) itself, not a shared_ptr to a
// promise captured by a std::function, which are two. msg::AsyncCall keeps
// it by shared_ptr, as CAF 0.17 wants message types copyable: if the call
// is dropped unhandled, the last reference destroys the promise, and the
// future reports a broken promise instead of waiting forever.

/// Reports an asynchronous call's outcome: called once, on the coordinator,
/// with a null error and the captured gradients when the call completed,
/// else with the error (of making its task, or of its nodes). Must not throw.
class CallDone {
public:
  virtual ~CallDone() = default;
  virtual void operator()(std::exception_ptr error, variable_list grads) = 0;
};

/// A CallDone that calls `F`.
template <class F>
class CallDoneFn final : public CallDone {
public:
  explicit CallDoneFn(F f) : f_(std::move(f)) {}
  void operator()(std::exception_ptr error, variable_list grads) override {
    f_(std::move(error), std::move(grads));
  }

private:
  F f_;
};

/// `f` as a CallDone (one allocation).
template <class F>
std::shared_ptr<CallDone> make_call_done(F f) {
  return std::make_shared<CallDoneFn<F>>(std::move(f));
}

/// A CallDone that fulfils a future with `finish(captured gradients)`; an
/// error of the call or of `finish` arrives through the future.
template <class R, class Finish>
class PromiseDone final : public CallDone {
public:
  explicit PromiseDone(Finish finish) : finish_(std::move(finish)) {}
  /// The future this fulfils; taken once.
  std::future<R> future() { return promise_.get_future(); }

  void operator()(std::exception_ptr error, variable_list grads) override {
    try {
      if (error)
        std::rethrow_exception(error);
      if constexpr (std::is_void_v<R>) {
        finish_(std::move(grads));
        promise_.set_value();
      } else {
        promise_.set_value(finish_(std::move(grads)));
      }
    } catch (...) {
      promise_.set_exception(std::current_exception());
    }
  }

private:
  std::promise<R> promise_;
  Finish finish_;
};

} // namespace actorgrad::detail
