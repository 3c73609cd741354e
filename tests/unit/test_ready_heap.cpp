#define BOOST_TEST_MODULE ready_heap
#include <boost/test/unit_test.hpp>

// ReadyHeap (libengine/engine/detail/ready_heap.h), the heap each actor pops its
// ready nodes from: it pops in the ready order (shutdown, then wake-ups,
// then depth, then sequence_nr) for random tasks and for interleaved pushes
// and pops, moves and copies its tasks intact, and holds one reference per
// waiting task. (The order the actors run nodes in, end to end:
// tests/actors/test_ready_order_per_actor.cpp.)

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

#include "actorgrad/libengine/autograd/node.h"
#include "actorgrad/libengine/engine/detail/ready_heap.h"

using namespace actorgrad;
using actorgrad::detail::ReadyHeap;
using actorgrad::detail::ReadyOrder;
using actorgrad::detail::ReadyTask;

namespace {

struct DummyNode final : Node {
  variable_list apply(variable_list&&) override { return {}; }
};

/// Nodes in creation order: nodes[i+1] has a higher sequence_nr than nodes[i].
std::vector<std::shared_ptr<Node>> make_nodes(int n) {
  std::vector<std::shared_ptr<Node>> nodes;
  for (int i = 0; i < n; ++i)
    nodes.push_back(make_node<DummyNode>());
  return nodes;
}

ReadyTask task(const std::shared_ptr<Node>& fn, int depth) {
  return ReadyTask{nullptr, fn, nullptr, {fn->sequence_nr(), depth}};
}

/// True when `a` is popped before `b`.
bool runs_before(const ReadyTask& a, const ReadyTask& b) { return ReadyOrder{}(b, a); }

/// What the order can tell apart: (shutdown, wake-up, depth, sequence_nr).
/// Wake-ups are all equivalent, whatever their depth.
std::tuple<bool, bool, int, std::uint64_t> key(const ReadyTask& t) {
  if (t.is_shutdown())
    return {true, false, 0, 0};
  if (t.is_wake_up())
    return {false, true, 0, 0};
  return {false, false, t.key.reentrant_depth, t.key.sequence_nr};
}

} // namespace

BOOST_AUTO_TEST_CASE(sequence_numbers_increase_with_creation) {
  auto nodes = make_nodes(3);
  BOOST_TEST(nodes[0]->sequence_nr() < nodes[1]->sequence_nr());
  BOOST_TEST(nodes[1]->sequence_nr() < nodes[2]->sequence_nr());
}

BOOST_AUTO_TEST_CASE(pairwise_rules) {
  auto nodes = make_nodes(2);
  auto older = nodes[0], newer = nodes[1];
  const auto shutdown = ReadyTask::make_shutdown();
  const auto wake = ReadyTask::make_wake_up(0);
  const auto deep_wake = ReadyTask::make_wake_up(7);

  // shutdown beats everything
  BOOST_TEST(runs_before(shutdown, wake));
  BOOST_TEST(!runs_before(wake, shutdown));
  BOOST_TEST(runs_before(shutdown, task(newer, 9)));
  BOOST_TEST(!runs_before(task(newer, 9), shutdown));
  // wake-ups beat node tasks of any depth, and tie with each other
  BOOST_TEST(runs_before(wake, task(newer, 9)));
  BOOST_TEST(!runs_before(task(newer, 9), wake));
  BOOST_TEST(!runs_before(wake, deep_wake));
  BOOST_TEST(!runs_before(deep_wake, wake));
  // higher reentrant depth beats higher sequence_nr
  BOOST_TEST(runs_before(task(older, 2), task(newer, 1)));
  BOOST_TEST(!runs_before(task(newer, 1), task(older, 2)));
  // same depth: the later-created node first
  BOOST_TEST(runs_before(task(newer, 3), task(older, 3)));
  BOOST_TEST(!runs_before(task(older, 3), task(newer, 3)));
  // irreflexive on node tasks
  BOOST_TEST(!runs_before(task(older, 3), task(older, 3)));
}

BOOST_AUTO_TEST_CASE(heap_pops_in_sorted_order_for_random_tasks) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 20; ++round) {
    auto nodes = make_nodes(40);
    std::vector<ReadyTask> tasks;
    std::uniform_int_distribution<int> depth(0, 3), pick(0, 39), kind(0, 9);
    for (int i = 0; i < 60; ++i) {
      const int k = kind(rng);
      if (k == 0)
        tasks.push_back(ReadyTask::make_wake_up(depth(rng)));
      else // a node may appear in several tasks (several GraphTasks)
        tasks.push_back(task(nodes[static_cast<std::size_t>(pick(rng))], depth(rng)));
    }
    if (round % 2 == 0) // at most one shutdown: two shutdowns are not ordered strictly
      tasks.push_back(ReadyTask::make_shutdown());
    std::shuffle(tasks.begin(), tasks.end(), rng);

    ReadyHeap heap;
    for (const auto& t : tasks)
      heap.push(ReadyTask(t));
    BOOST_TEST(heap.size() == tasks.size());

    auto expected = tasks;
    std::sort(expected.begin(), expected.end(), runs_before);
    for (std::size_t i = 0; i < expected.size(); ++i) {
      BOOST_REQUIRE(!heap.empty());
      BOOST_TEST((key(heap.top()) == key(expected[i])), "round " << round << " position " << i);
      ReadyTask popped = heap.pop();
      BOOST_TEST((key(popped) == key(expected[i])), "round " << round << " position " << i);
    }
    BOOST_TEST(heap.empty());
  }
}

BOOST_AUTO_TEST_CASE(heap_moves_the_task_out_intact) {
  auto nodes = make_nodes(1);
  ReadyHeap heap;
  int slot = 0;
  heap.push(ReadyTask{nullptr, nodes[0], &slot, {nodes[0]->sequence_nr(), 4}});
  ReadyTask t = heap.pop();
  BOOST_TEST(t.node == nodes[0]);
  BOOST_TEST(t.slot == &slot);
  BOOST_TEST(t.key.reentrant_depth == 4);
  BOOST_TEST(t.key.sequence_nr == nodes[0]->sequence_nr());
  BOOST_TEST(nodes[0].use_count() == 2); // the test's and the task's
}

BOOST_AUTO_TEST_CASE(a_copied_heap_pops_the_same_tasks_and_the_original_keeps_its_own) {
  // A queue travels in CAF messages, which may copy it: both the inline
  // tasks (Note [Few ready tasks]) and the keyed heap must be copied.
  std::mt19937 rng(31);
  auto nodes = make_nodes(20);
  std::uniform_int_distribution<int> depth(0, 2);
  for (std::size_t n : {std::size_t{3}, std::size_t{20}}) {
    std::vector<ReadyTask> tasks;
    for (std::size_t i = 0; i < n; ++i)
      tasks.push_back(task(nodes[i], depth(rng)));
    ReadyHeap heap;
    for (const auto& t : tasks)
      heap.push(ReadyTask(t));
    std::sort(tasks.begin(), tasks.end(), runs_before);
    ReadyHeap copy = heap;
    ReadyHeap assigned;
    assigned.push(task(nodes[0], 9)); // replaced by the assignment
    assigned = copy;
    for (ReadyHeap* h : {&copy, &assigned, &heap}) {
      BOOST_REQUIRE(h->size() == n);
      for (std::size_t i = 0; i < n; ++i)
        BOOST_TEST((key(h->pop()) == key(tasks[i])), "size " << n << " position " << i);
      BOOST_TEST(h->empty());
    }
  }
}

BOOST_AUTO_TEST_CASE(heap_keeps_the_order_when_pushes_and_pops_interleave) {
  // Pushes and pops in random turns, so that the heap keeps passing between
  // a few waiting tasks and many (see Note [Few ready tasks]); each pop must
  // be the first of what is waiting.
  std::mt19937 rng(777);
  auto nodes = make_nodes(30);
  std::uniform_int_distribution<int> depth(0, 2), pick(0, 29), coin(0, 1);
  ReadyHeap heap;
  std::vector<ReadyTask> waiting;
  for (int step = 0; step < 2000; ++step) {
    if (waiting.empty() || coin(rng) == 0) { // a random walk: often one task, sometimes dozens
      ReadyTask t = step % 7 == 0 ? ReadyTask::make_wake_up(depth(rng))
                                  : task(nodes[static_cast<std::size_t>(pick(rng))], depth(rng));
      waiting.push_back(t);
      heap.push(std::move(t));
    } else {
      auto first = std::min_element(waiting.begin(), waiting.end(), runs_before);
      BOOST_REQUIRE(!heap.empty());
      BOOST_TEST((key(heap.top()) == key(*first)), "step " << step);
      BOOST_TEST((key(heap.pop()) == key(*first)), "step " << step);
      waiting.erase(first);
    }
    BOOST_REQUIRE(heap.size() == waiting.size());
    if (step % 100 == 0) { // a heap handed over keeps its tasks; the old one is empty
      ReadyHeap moved = std::move(heap);
      BOOST_TEST(heap.empty());
      BOOST_TEST(heap.size() == 0u);
      heap = std::move(moved);
      BOOST_TEST(moved.empty());
      BOOST_REQUIRE(heap.size() == waiting.size());
    }
  }
}

BOOST_AUTO_TEST_CASE(a_heap_holds_one_reference_per_waiting_task_and_none_after) {
  // The few tasks live in places constructed only while they hold a task
  // (Note [Few ready tasks]): a push, pop, copy, move or destruction must
  // neither leak a task nor destroy one twice.
  auto nodes = make_nodes(1);
  const std::shared_ptr<Node>& n = nodes[0];
  for (long count : {1L, 4L, 9L}) { // inline, all places inline, keyed
    {
      ReadyHeap heap;
      for (long i = 0; i < count; ++i)
        heap.push(task(n, static_cast<int>(i % 3)));
      BOOST_TEST(n.use_count() == 1 + count);
      ReadyHeap copy = heap;
      BOOST_TEST(n.use_count() == 1 + 2 * count);
      ReadyHeap moved = std::move(heap);
      BOOST_TEST(n.use_count() == 1 + 2 * count);
      moved = copy; // replaces what `moved` held
      BOOST_TEST(n.use_count() == 1 + 2 * count);
      {
        ReadyTask t = moved.pop();
        BOOST_TEST(n.use_count() == 1 + 2 * count);
      }
      BOOST_TEST(n.use_count() == 2 * count);
      heap = std::move(moved); // into the heap moved from before
      BOOST_TEST(moved.empty());
      BOOST_TEST(n.use_count() == 2 * count);
    }
    BOOST_TEST(n.use_count() == 1, "count " << count);
  }
}
