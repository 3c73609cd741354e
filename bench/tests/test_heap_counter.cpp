/// The heap counter behind bench_chain_memory's peak memory figures
/// (bench/common/heap_counter.h): each replaced allocation function moves
/// the live bytes by the block's usable size, and the peak follows.

#define BOOST_TEST_MODULE heap_counter
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include <malloc.h>

#include "bench/common/heap_counter.h"

namespace hc = actorgrad::bench::heap_counter;

namespace {
constexpr std::size_t mib = std::size_t{1} << 20;
// Keeps the compiler from pairing a new with its delete and dropping both.
void* volatile sink = nullptr;
} // namespace

BOOST_AUTO_TEST_CASE(malloc_and_free_move_the_live_bytes_by_the_usable_size) {
  const std::size_t before = hc::live_bytes();
  void* p = std::malloc(mib);
  BOOST_REQUIRE(p);
  BOOST_TEST(hc::live_bytes() - before == malloc_usable_size(p));
  std::free(p);
  BOOST_TEST(hc::live_bytes() == before);
}

BOOST_AUTO_TEST_CASE(the_peak_holds_the_most_live_bytes_since_its_reset) {
  hc::reset_peak();
  const std::size_t before = hc::live_bytes();
  BOOST_TEST(hc::peak_bytes() == before);
  void* a = std::malloc(2 * mib);
  void* b = std::malloc(mib);
  const std::size_t both = malloc_usable_size(a) + malloc_usable_size(b);
  std::free(a);
  std::free(b);
  BOOST_TEST(hc::peak_bytes() == before + both);
  hc::reset_peak();
  BOOST_TEST(hc::peak_bytes() == before);
}

BOOST_AUTO_TEST_CASE(realloc_counts_the_new_block_instead_of_the_old) {
  const std::size_t before = hc::live_bytes();
  void* p = std::malloc(100);
  void* q = std::realloc(p, 4 * mib);
  BOOST_REQUIRE(q);
  BOOST_TEST(hc::live_bytes() - before == malloc_usable_size(q));
  BOOST_TEST(std::realloc(q, 0) == nullptr); // glibc frees the block
  BOOST_TEST(hc::live_bytes() == before);
}

BOOST_AUTO_TEST_CASE(calloc_and_the_aligned_functions_are_counted) {
  const std::size_t before = hc::live_bytes();
  void* c = std::calloc(1000, 8);
  void* m = memalign(64, 3000);
  void* a = std::aligned_alloc(4096, 8192);
  void* p = nullptr;
  BOOST_REQUIRE(posix_memalign(&p, 256, 5000) == 0);
  void* bad = nullptr;
  BOOST_TEST(posix_memalign(&bad, 3, 8) == EINVAL); // not a power of two
  BOOST_TEST(!bad);
  BOOST_TEST(reinterpret_cast<std::uintptr_t>(a) % 4096 == 0);
  BOOST_TEST(hc::live_bytes() - before == malloc_usable_size(c) + malloc_usable_size(m) +
                                            malloc_usable_size(a) + malloc_usable_size(p));
  for (void* x : {c, m, a, p})
    std::free(x);
  BOOST_TEST(hc::live_bytes() == before);
}

BOOST_AUTO_TEST_CASE(operator_new_goes_through_the_counted_malloc) {
  const std::size_t before = hc::live_bytes();
  auto* block = new char[mib];
  sink = block;
  BOOST_TEST(hc::live_bytes() - before >= mib);
  delete[] block;
  BOOST_TEST(hc::live_bytes() == before);
}
