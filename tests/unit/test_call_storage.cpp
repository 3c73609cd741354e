/// @file test_call_storage.cpp
/// The storage a backward call takes from its thread instead of malloc:
/// the task's block (RecyclingAllocator) and the node table's blocks, also
/// for calls nested as deep as max_recursion_depth (Note [Node table
/// memory]), the edge lists of backward() and grad() (Note [The API's edge
/// lists]), and the clean-up that frees what a thread kept when it ends
/// (detail::close_at_thread_exit). Counts this thread's calls of the global operator new, which
/// this binary replaces.
#define BOOST_TEST_MODULE call_storage
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <set>
#include <thread>
#include <vector>

#include "actorgrad/libengine/engine/detail/call_args.h"
#include "actorgrad/libengine/engine/detail/node_table.h"
#include "actorgrad/libengine/engine/detail/recycling_allocator.h"
#include "actorgrad/libengine/engine/detail/thread_exit.h"
#include "actorgrad/libengine/ops.h"

namespace {
/// operator new calls made by this thread.
thread_local std::size_t news = 0;
} // namespace

// None of the three inlined: GCC would then see a block from malloc freed
// by operator delete, or one from operator new by free
// (-Wmismatched-new-delete), which is this replacement's own pairing.
[[gnu::noinline]] void* operator new(std::size_t size) {
  ++news;
  if (void* p = std::malloc(size == 0 ? 1 : size))
    return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using actorgrad::detail::NodeTable;
using actorgrad::detail::RecyclingAllocator;

namespace {

/// A block as big as a task's.
struct Task {
  char bytes[400];
};
/// A block of a type no other test case keeps.
struct Other {
  char bytes[64];
};

struct State {
  int dependencies = 0;
};

/// Fills `table` with `n` states keyed by `keys`' first n addresses.
void fill(NodeTable<State>& table, const std::vector<int>& keys, std::size_t n) {
  table.reset(n, false);
  for (std::size_t i = 0; i < n; ++i)
    table.try_emplace(&keys[i]).first->dependencies = static_cast<int>(i) + 1;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_freed_block_is_the_next_one_allocated) {
  RecyclingAllocator<Task> alloc;
  Task* a = alloc.allocate(1);
  alloc.deallocate(a, 1);
  const std::size_t before = news;
  Task* b = alloc.allocate(1);
  BOOST_TEST(b == a);
  BOOST_TEST(news == before, "a kept block needs no operator new");
  alloc.deallocate(b, 1);
}

BOOST_AUTO_TEST_CASE(shared_tasks_nested_max_depth_deep_reuse_their_blocks) {
  // 60 tasks alive at once (a call nested max_recursion_depth deep), then
  // the same again: the second pass allocates nothing.
  auto pass = [] {
    std::vector<std::shared_ptr<Task>> nested;
    nested.reserve(60);
    const std::size_t before = news;
    for (int i = 0; i < 60; ++i)
      nested.push_back(std::allocate_shared<Task>(RecyclingAllocator<Task>{}));
    const std::size_t made = news - before;
    while (!nested.empty())
      nested.pop_back(); // innermost first, as nested calls end
    return made;
  };
  BOOST_TEST(pass() > 0u);
  BOOST_TEST(pass() == 0u);
}

BOOST_AUTO_TEST_CASE(a_thread_keeps_at_most_max_kept_blocks) {
  constexpr std::size_t max_kept = actorgrad::detail::SpareBlocks<Other>::max_kept;
  RecyclingAllocator<Other> alloc;
  std::vector<Other*> blocks;
  for (std::size_t i = 0; i < max_kept + 10; ++i)
    blocks.push_back(alloc.allocate(1));
  for (Other* p : blocks)
    alloc.deallocate(p, 1);
  // The first max_kept freed are kept (and come back last kept first);
  // the 10 past the bound went back to the heap.
  std::vector<Other*> again;
  again.reserve(max_kept);
  const std::size_t before = news;
  for (std::size_t i = 0; i < max_kept; ++i)
    again.push_back(alloc.allocate(1));
  BOOST_TEST(news == before);
  BOOST_TEST(std::set<Other*>(again.begin(), again.end()) ==
             std::set<Other*>(blocks.begin(), blocks.begin() + max_kept));
  BOOST_TEST(again.front() == blocks[max_kept - 1]);
  const std::size_t before_fresh = news;
  Other* fresh = alloc.allocate(1);
  BOOST_TEST(news == before_fresh + 1, "with none kept, the allocator allocates");
  alloc.deallocate(fresh, 1);
  for (Other* p : again)
    alloc.deallocate(p, 1);
}

BOOST_AUTO_TEST_CASE(a_block_freed_on_another_thread_is_kept_there) {
  RecyclingAllocator<Task> alloc;
  Task* p = alloc.allocate(1);
  Task* kept_there = nullptr;
  std::thread([&] {
    alloc.deallocate(p, 1);
    kept_there = alloc.allocate(1);
    alloc.deallocate(kept_there, 1); // freed with the thread's kept blocks at its exit
  }).join();
  BOOST_TEST(kept_there == p);
}

namespace {
std::atomic<int> closes{0}; ///< calls of count_close, from any thread
void count_close() noexcept { closes.fetch_add(1); }
} // namespace

BOOST_AUTO_TEST_CASE(a_thread_runs_its_exit_clean_up_once_and_only_at_its_exit) {
  int before_exit = -1;
  std::thread([&] {
    actorgrad::detail::close_at_thread_exit<&count_close>();
    actorgrad::detail::close_at_thread_exit<&count_close>(); // registers nothing more
    before_exit = closes.load();
  }).join();
  BOOST_TEST(before_exit == 0);
  BOOST_TEST(closes.load() == 1);
}

BOOST_AUTO_TEST_CASE(tables_nested_max_depth_deep_find_their_blocks_again) {
  const std::vector<int> keys(40);
  auto pass = [&keys] {
    std::vector<std::unique_ptr<NodeTable<State>>> nested;
    nested.reserve(60);
    const std::size_t before = news;
    for (int depth = 0; depth < 60; ++depth) {
      nested.push_back(std::make_unique<NodeTable<State>>());
      fill(*nested.back(), keys, 3 + depth % 5);
    }
    const std::size_t made = news - before - 60; // less the tables themselves
    for (std::size_t depth = 0; depth < nested.size(); ++depth)
      for (std::size_t i = 0; i < 3 + depth % 5; ++i)
        BOOST_TEST_REQUIRE(nested[depth]->find(&keys[i])->dependencies == static_cast<int>(i) + 1);
    while (!nested.empty())
      nested.pop_back();
    return made;
  };
  BOOST_TEST(pass() > 0u);
  BOOST_TEST(pass() == 0u, "each nested table took blocks a table of the last pass gave back");
}

BOOST_AUTO_TEST_CASE(small_tables_leave_room_for_a_large_one) {
  // A large table outlives 64 small ones (a big call whose nodes made
  // nested calls): when it goes, the cache still keeps it.
  const std::vector<int> keys(5000);
  auto large = std::make_unique<NodeTable<State>>();
  fill(*large, keys, keys.size());
  {
    std::vector<std::unique_ptr<NodeTable<State>>> small;
    for (int t = 0; t < 64; ++t) {
      small.push_back(std::make_unique<NodeTable<State>>());
      fill(*small.back(), keys, 3);
    }
  }
  large.reset();
  const std::size_t before = news;
  auto again = std::make_unique<NodeTable<State>>();
  fill(*again, keys, keys.size());
  BOOST_TEST(news - before - 1 == 0u, "the large table's blocks were kept (less the table itself)");
}

BOOST_AUTO_TEST_CASE(only_two_large_tables_are_kept) {
  const std::vector<int> keys(5000);
  auto large_pass = [&keys](int tables) {
    std::vector<std::unique_ptr<NodeTable<State>>> held;
    held.reserve(tables);
    const std::size_t before = news;
    for (int t = 0; t < tables; ++t) {
      held.push_back(std::make_unique<NodeTable<State>>());
      fill(*held.back(), keys, keys.size());
    }
    return news - before - tables;
  };
  large_pass(3);
  // Of three large tables freed, two were kept: a pass of two allocates
  // nothing, a third table allocates its blocks again.
  BOOST_TEST(large_pass(2) == 0u);
  BOOST_TEST(large_pass(3) > 0u);
}

namespace {

using actorgrad::Edge;
using actorgrad::Tensor;
using actorgrad::detail::BackwardCall;
using actorgrad::detail::SpareEdgeLists;

/// A grad() call of y = x * 2 for `inputs` inputs (x each time).
BackwardCall grad_call(std::size_t inputs = 1) {
  static const Tensor x = Tensor::ones({1}).set_requires_grad();
  static const Tensor y = actorgrad::mul(x, 2.0);
  return actorgrad::detail::make_grad_call({y}, actorgrad::variable_list(inputs, x), {},
                                           std::nullopt, false);
}

/// The storage of a call's two edge lists.
std::set<const Edge*> storage_of(const BackwardCall& call) {
  return {call.roots.data(), call.outputs.data()};
}

/// Takes every list this thread keeps (held by the calls returned).
std::vector<BackwardCall> take_all_kept() {
  std::vector<BackwardCall> calls;
  while (SpareEdgeLists::stack::size() != 0)
    calls.push_back(grad_call());
  return calls;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_call_s_edge_lists_are_the_next_call_s) {
  BackwardCall first = grad_call();
  const std::set<const Edge*> storage = storage_of(first);
  first.keep_edge_lists();
  BOOST_TEST(first.roots.capacity() == 0u);
  const BackwardCall next = grad_call();
  BOOST_TEST((storage_of(next) == storage));
  BOOST_TEST(next.roots.size() == 1u);
  BOOST_TEST(next.outputs.size() == 1u);
  BOOST_TEST(next.roots[0].function.get() != nullptr);
}

BOOST_AUTO_TEST_CASE(calls_nested_max_depth_deep_find_their_edge_lists_again) {
  // 60 calls alive at once (nested max_recursion_depth deep), kept
  // innermost first as nested calls end; then the same again.
  auto pass = [] {
    std::vector<BackwardCall> nested;
    std::set<const Edge*> storage;
    for (int i = 0; i < 60; ++i) {
      nested.push_back(grad_call());
      storage.merge(storage_of(nested.back()));
    }
    while (!nested.empty()) {
      nested.back().keep_edge_lists();
      nested.pop_back();
    }
    return storage;
  };
  const std::set<const Edge*> first = pass();
  BOOST_TEST(first.size() == 120u);
  BOOST_TEST((pass() == first));
}

BOOST_AUTO_TEST_CASE(a_thread_keeps_at_most_max_kept_edge_lists_of_at_most_max_size_edges) {
  std::vector<BackwardCall> held = take_all_kept();
  BackwardCall wide = grad_call(SpareEdgeLists::max_size + 1);
  wide.keep_edge_lists();
  BOOST_TEST(SpareEdgeLists::stack::size() == 1u, "the root list only");
  for (std::size_t i = 0; i < SpareEdgeLists::stack::max_kept; ++i)
    held.push_back(grad_call());
  for (BackwardCall& call : held)
    call.keep_edge_lists();
  BOOST_TEST(SpareEdgeLists::stack::size() == SpareEdgeLists::stack::max_kept);
  const BackwardCall wide_again = grad_call(SpareEdgeLists::max_size + 1);
  BOOST_TEST(SpareEdgeLists::stack::size() == SpareEdgeLists::stack::max_kept - 1,
             "only the root list takes a kept one: the inputs' would not fit");
}

BOOST_AUTO_TEST_CASE(edge_lists_kept_by_one_thread_are_not_another_s) {
  BackwardCall here = grad_call();
  here.keep_edge_lists();
  const std::size_t kept_here = SpareEdgeLists::stack::size();
  std::size_t kept_there_before = 1, kept_there_after = 0;
  std::thread([&] {
    kept_there_before = SpareEdgeLists::stack::size();
    BackwardCall there = grad_call();
    there.keep_edge_lists();
    kept_there_after = SpareEdgeLists::stack::size();
  }).join();
  BOOST_TEST(kept_there_before == 0u);
  BOOST_TEST(kept_there_after == 2u);
  BOOST_TEST(SpareEdgeLists::stack::size() == kept_here);
}
