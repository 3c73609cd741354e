#include "actorgrad/actors/detail/fresh_stack.h"

#include <pthread.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <system_error>
#include <utility>

#include "actorgrad/actors/detail/stack_guard.h"
#include "actorgrad/libengine/engine/detail/spare_stack.h"

#if defined(__SANITIZE_ADDRESS__)
#define ACTORGRAD_ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ACTORGRAD_ASAN_FIBERS 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define ACTORGRAD_TSAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ACTORGRAD_TSAN_FIBERS 1
#endif
#endif
#ifdef ACTORGRAD_ASAN_FIBERS
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef ACTORGRAD_TSAN_FIBERS
#include <sanitizer/tsan_interface.h>
#endif
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h> // a few no-op instructions when not under valgrind
#define ACTORGRAD_VALGRIND_STACKS 1
#endif

namespace actorgrad::detail {

namespace {

/// An anonymous mapping used as a stack, its lowest page a guard page.
class MappedStack {
public:
  MappedStack() = default;
  /// Maps `size` bytes (a multiple of the page size), the guard page included.
  explicit MappedStack(std::size_t size) : size_(size) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED)
      throw std::system_error(errno, std::generic_category(),
                              "mapping a stack for a reentrant backward past the depth limit");
    base_ = static_cast<char*>(p);
    if (mprotect(base_, page(), PROT_NONE) != 0) {
      const int e = errno;
      munmap(base_, size_);
      throw std::system_error(e, std::generic_category(), "protecting a stack's guard page");
    }
#ifdef ACTORGRAD_VALGRIND_STACKS
    valgrind_id_ = VALGRIND_STACK_REGISTER(low(), base_ + size_); // else memcheck sees a wild SP
#endif
  }
  ~MappedStack() {
    if (!base_)
      return;
#ifdef ACTORGRAD_VALGRIND_STACKS
    VALGRIND_STACK_DEREGISTER(valgrind_id_);
#endif
    munmap(base_, size_);
  }
  MappedStack(MappedStack&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)), size_(std::exchange(o.size_, 0)),
      valgrind_id_(std::exchange(o.valgrind_id_, 0)) {}
  MappedStack& operator=(MappedStack&& o) noexcept {
    MappedStack(std::move(o)).swap(*this);
    return *this;
  }
  void swap(MappedStack& o) noexcept {
    std::swap(base_, o.base_);
    std::swap(size_, o.size_);
    std::swap(valgrind_id_, o.valgrind_id_);
  }
  friend void swap(MappedStack& a, MappedStack& b) noexcept { a.swap(b); }

  /// The usable stack: above the guard page.
  char* low() const { return base_ + page(); }
  std::size_t usable_size() const { return size_ - page(); }

  static std::size_t page() {
    static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return p;
  }

private:
  char* base_ = nullptr;
  std::size_t size_ = 0;
  unsigned valgrind_id_ = 0; ///< the stack's id in valgrind (0 when not under it)
};

/// Stacks a thread keeps between calls (Note [Storage a thread keeps]):
/// enough for a few levels of fresh stacks in a row.
using SpareStacks = SpareStack<MappedStack, 4>;

/// The stack size a new thread gets (glibc's default: RLIMIT_STACK), page aligned.
std::size_t thread_stack_size() {
  static const std::size_t size = [] {
    std::size_t s = 8u << 20;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) == 0) {
      pthread_attr_getstacksize(&attr, &s);
      pthread_attr_destroy(&attr);
    }
    const std::size_t p = MappedStack::page();
    return (s + p - 1) / p * p + p; // and the guard page
  }();
  return size;
}

/// One switch to a fresh stack and back.
struct Switch {
  void (*fn)(void*);
  void* arg;
  ucontext_t caller;
  std::exception_ptr error;
#ifdef ACTORGRAD_ASAN_FIBERS
  void* fake_stack = nullptr;
  const void* caller_bottom = nullptr;
  std::size_t caller_size = 0;
#endif
#ifdef ACTORGRAD_TSAN_FIBERS
  void* caller_fiber = nullptr;
#endif
};

/// The fresh stack's first frame (makecontext passes ints: the Switch's
/// address in two halves). It never returns: it resumes `caller` itself,
/// after telling the sanitizers, so that no code of this frame (a
/// ThreadSanitizer function-exit hook) runs once they count the caller's
/// stack as current.
[[noreturn]] void enter(unsigned hi, unsigned lo) {
  auto* s = reinterpret_cast<Switch*>((std::uintptr_t{hi} << 32) | lo);
#ifdef ACTORGRAD_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(nullptr, &s->caller_bottom, &s->caller_size);
#endif
  try {
    s->fn(s->arg);
  } catch (...) {
    s->error = std::current_exception();
    if (!s->error) {
      // glibc's thread-exit unwind (Note [A thread that exits inside a node]
      // in current_exception_or_unwind.h): it cannot go on below this frame,
      // whose caller is on another stack, and keeping it aborts the process;
      // say why first.
      static constexpr char why[] =
        "actorgrad: a thread ended (pthread_exit or cancellation) inside a nested backward call "
        "past EngineConfig::max_recursion_depth, which runs on a stack of its own that the "
        "thread's unwinding cannot cross; stopping the process\n";
      static_cast<void>(write(STDERR_FILENO, why, sizeof why - 1));
      std::abort();
    }
  }
#ifdef ACTORGRAD_ASAN_FIBERS
  __sanitizer_start_switch_fiber(nullptr, s->caller_bottom, s->caller_size); // this stack ends
#endif
#ifdef ACTORGRAD_TSAN_FIBERS
  __tsan_switch_to_fiber(s->caller_fiber, 0);
#endif
  setcontext(&s->caller);
  std::abort(); // setcontext returns only if `caller` is not a valid context
}

} // namespace

void run_on_fresh_stack(void (*fn)(void*), void* arg) {
  static_assert(sizeof(std::uintptr_t) <= 2 * sizeof(unsigned));
  MappedStack stack;
  if (SpareStacks::size() != 0)
    SpareStacks::take(stack);
  else
    stack = MappedStack(thread_stack_size());
#ifdef ACTORGRAD_ASAN_FIBERS
  ASAN_UNPOISON_MEMORY_REGION(stack.low(), stack.usable_size()); // a kept stack's old frames
#endif
  Switch s{fn, arg, {}, {}};
  ucontext_t fresh;
  if (getcontext(&fresh) != 0)
    throw std::system_error(errno, std::generic_category(), "getcontext");
  fresh.uc_stack.ss_sp = stack.low();
  fresh.uc_stack.ss_size = stack.usable_size();
  fresh.uc_link = nullptr; // enter() never returns
  const auto address = reinterpret_cast<std::uintptr_t>(&s);
  makecontext(&fresh, reinterpret_cast<void (*)()>(&enter), 2, static_cast<unsigned>(address >> 32),
              static_cast<unsigned>(address & 0xffffffffu));
  const std::uintptr_t outer_low = enter_stack(reinterpret_cast<std::uintptr_t>(stack.low()));
#ifdef ACTORGRAD_TSAN_FIBERS
  s.caller_fiber = __tsan_get_current_fiber();
  void* fiber = __tsan_create_fiber(0);
  __tsan_switch_to_fiber(fiber, 0);
#endif
#ifdef ACTORGRAD_ASAN_FIBERS
  __sanitizer_start_switch_fiber(&s.fake_stack, stack.low(), stack.usable_size());
#endif
  const int switch_error = swapcontext(&s.caller, &fresh) == 0 ? 0 : errno;
#ifdef ACTORGRAD_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(s.fake_stack, nullptr, nullptr);
#endif
#ifdef ACTORGRAD_TSAN_FIBERS
  __tsan_destroy_fiber(fiber);
#endif
  enter_stack(outer_low);
  SpareStacks::keep(stack);
  if (switch_error != 0)
    throw std::system_error(switch_error, std::generic_category(), "swapcontext");
  if (s.error)
    std::rethrow_exception(s.error);
}

} // namespace actorgrad::detail
