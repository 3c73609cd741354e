/// The replacement of malloc and its family behind heap_counter.h: each
/// function calls glibc's own (the __libc_ entry points, which are not
/// replaced) and counts the usable size of the blocks it hands out and
/// takes back. These are the functions glibc's manual lists for replacing
/// malloc; glibc's own internal allocations call them too.

#include "bench/common/heap_counter.h"

#include <atomic>
#include <cerrno>
#include <cstdint>

#include <malloc.h>

extern "C" {
void* __libc_malloc(std::size_t size);
void __libc_free(void* p);
void* __libc_calloc(std::size_t n, std::size_t size);
void* __libc_realloc(void* p, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void* __libc_valloc(std::size_t size);
void* __libc_pvalloc(std::size_t size);
}

namespace actorgrad::bench::heap_counter {
namespace {

// Both written by every thread's allocations and frees and read by the
// driver between backward passes. Relaxed: each is a sum or a maximum of
// its own updates, and the driver reads them with the engine idle.
std::atomic<std::size_t> live{0};
std::atomic<std::size_t> peak{0};

void* counted(void* p) {
  if (!p)
    return p;
  const std::size_t size = malloc_usable_size(p);
  const std::size_t now = live.fetch_add(size, std::memory_order_relaxed) + size;
  std::size_t high = peak.load(std::memory_order_relaxed);
  while (now > high && !peak.compare_exchange_weak(high, now, std::memory_order_relaxed)) {
  }
  return p;
}

void uncount(std::size_t size) { live.fetch_sub(size, std::memory_order_relaxed); }

void uncount(void* p) {
  if (p)
    uncount(malloc_usable_size(p));
}

} // namespace

std::size_t live_bytes() { return live.load(std::memory_order_relaxed); }
std::size_t peak_bytes() { return peak.load(std::memory_order_relaxed); }
void reset_peak() { peak.store(live.load(std::memory_order_relaxed), std::memory_order_relaxed); }

} // namespace actorgrad::bench::heap_counter

using actorgrad::bench::heap_counter::counted;
using actorgrad::bench::heap_counter::uncount;

extern "C" {

void* malloc(std::size_t size) { return counted(__libc_malloc(size)); }

void free(void* p) {
  uncount(p);
  __libc_free(p);
}

void* calloc(std::size_t n, std::size_t size) { return counted(__libc_calloc(n, size)); }

void* realloc(void* p, std::size_t size) {
  const std::size_t old = p ? malloc_usable_size(p) : 0;
  void* q = __libc_realloc(p, size);
  if (q || size == 0) { // moved, resized or freed; on failure p is untouched
    uncount(old);
    counted(q);
  }
  return q;
}

void* reallocarray(void* p, std::size_t n, std::size_t size) {
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(p, bytes);
}

void* memalign(std::size_t alignment, std::size_t size) {
  return counted(__libc_memalign(alignment, size));
}

void* aligned_alloc(std::size_t alignment, std::size_t size) {
  return counted(__libc_memalign(alignment, size));
}

int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0)
    return EINVAL;
  void* p = counted(__libc_memalign(alignment, size));
  if (!p)
    return ENOMEM;
  *out = p;
  return 0;
}

void* valloc(std::size_t size) { return counted(__libc_valloc(size)); }

void* pvalloc(std::size_t size) { return counted(__libc_pvalloc(size)); }

} // extern "C"
