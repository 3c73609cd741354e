/// @file test_node_table.cpp
/// The GraphTask's node table (libengine/engine/detail/node_table.h): lookups,
/// growth past the reserved size, a thread's reused blocks, whose old
/// entries must not show through (Note [Node table generations]), and
/// lookups through node hints that other tables rewrite (Note [Node table
/// hints]), also by threads numbering one graph at once (Note [Numbering
/// passes in flight]).
#define BOOST_TEST_MODULE node_table
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "actorgrad/libengine/engine/detail/node_table.h"

using actorgrad::detail::NodeHint;
using actorgrad::detail::NodeTable;

namespace {

struct State {
  int dependencies = 0;
  std::vector<int> buffer;
};

/// Addresses of `n` distinct objects (heap blocks, as nodes are).
std::vector<std::unique_ptr<int>> nodes(int n) {
  std::vector<std::unique_ptr<int>> v;
  for (int i = 0; i < n; ++i)
    v.push_back(std::make_unique<int>(i));
  return v;
}

} // namespace

BOOST_AUTO_TEST_CASE(finds_what_it_holds_and_nothing_else) {
  const auto in = nodes(1000), out = nodes(1000);
  NodeTable<State> table;
  table.reset(10, false); // far fewer than it will hold: it grows
  for (const auto& n : in) {
    auto [s, made] = table.try_emplace(n.get());
    BOOST_TEST(made);
    s->dependencies = *n;
  }
  BOOST_TEST(table.size() == in.size());
  for (const auto& n : in) {
    auto [s, made] = table.try_emplace(n.get());
    BOOST_TEST(!made, "a second emplace finds the first");
    BOOST_TEST(s == table.find(n.get()));
  }
  std::set<const State*> distinct;
  for (const auto& n : in) {
    const State* s = table.find(n.get());
    BOOST_TEST_REQUIRE(s != nullptr);
    BOOST_TEST(s->dependencies == *n);
    distinct.insert(s);
  }
  BOOST_TEST(distinct.size() == in.size());
  for (const auto& n : out)
    BOOST_TEST(table.find(n.get()) == nullptr);
  BOOST_TEST(table.find(nullptr) == nullptr);
}

BOOST_AUTO_TEST_CASE(a_table_never_reset_takes_nodes) {
  const auto n = nodes(40);
  NodeTable<State> table;
  for (const auto& p : n)
    BOOST_TEST_REQUIRE(table.try_emplace(p.get()).second);
  for (const auto& p : n)
    BOOST_TEST_REQUIRE(table.find(p.get()) != nullptr);
  BOOST_TEST(table.size() == n.size());
}

BOOST_AUTO_TEST_CASE(an_empty_table_finds_nothing) {
  NodeTable<State> table;
  const auto n = nodes(1);
  BOOST_TEST(table.find(n[0].get()) == nullptr);
  table.reset(0, false);
  BOOST_TEST(table.find(n[0].get()) == nullptr);
  BOOST_TEST(table.size() == 0u);
}

BOOST_AUTO_TEST_CASE(a_reused_block_shows_none_of_its_old_entries) {
  const auto first = nodes(300), second = nodes(300);
  for (int round = 0; round < 5; ++round) {
    // Each table takes the blocks the previous one gave to this thread's
    // cache; reset must hide the old entries without clearing them.
    NodeTable<State> table;
    table.reset(first.size(), false);
    const auto& mine = round % 2 == 0 ? first : second;
    const auto& other = round % 2 == 0 ? second : first;
    for (const auto& n : other)
      BOOST_TEST_REQUIRE(table.find(n.get()) == nullptr, "round " << round);
    for (const auto& n : mine)
      BOOST_TEST_REQUIRE(table.find(n.get()) == nullptr, "round " << round << ": not yet emplaced");
    for (const auto& n : mine) {
      auto [s, made] = table.try_emplace(n.get());
      BOOST_TEST_REQUIRE(made);
      BOOST_TEST_REQUIRE(s->dependencies == 0, "a new state is default-made");
      BOOST_TEST_REQUIRE(s->buffer.empty());
      s->dependencies = round + 1;
      s->buffer.assign(3, round);
    }
    for (const auto& n : mine)
      BOOST_TEST_REQUIRE(table.find(n.get())->dependencies == round + 1);
    BOOST_TEST(table.size() == mine.size());
  }
}

BOOST_AUTO_TEST_CASE(reset_empties_a_table_in_use) {
  const auto a = nodes(50), b = nodes(50);
  NodeTable<State> table;
  table.reset(50, false);
  for (const auto& n : a)
    table.try_emplace(n.get());
  table.reset(50, false); // compute_dependencies runs again after a cycle check
  BOOST_TEST(table.size() == 0u);
  for (const auto& n : a)
    BOOST_TEST(table.find(n.get()) == nullptr);
  for (const auto& n : b)
    table.try_emplace(n.get());
  for (const auto& n : b)
    BOOST_TEST(table.find(n.get()) != nullptr);
}

namespace {

/// A node with a hint, as actorgrad's Node keeps one.
struct HintedNode {
  int id = 0;
  NodeHint hint{0};
};

std::vector<std::unique_ptr<HintedNode>> hinted_nodes(int n) {
  std::vector<std::unique_ptr<HintedNode>> v;
  for (int i = 0; i < n; ++i) {
    v.push_back(std::make_unique<HintedNode>());
    v.back()->id = i;
  }
  return v;
}

/// Numbers `ns` in a table through their hints, each state holding its
/// node's id, and checks the pass kept its hints.
void number(NodeTable<State>& table, const std::vector<std::unique_ptr<HintedNode>>& ns) {
  table.reset(ns.size(), true);
  for (const auto& n : ns)
    table.try_emplace(n->hint).first->dependencies = n->id;
  BOOST_TEST_REQUIRE(table.finish_numbering(false));
}

} // namespace

BOOST_AUTO_TEST_CASE(hints_number_and_find_nodes) {
  const auto ns = hinted_nodes(1000);
  NodeTable<State> table;
  number(table, ns);
  BOOST_TEST(table.size() == ns.size());
  for (std::size_t k = 0; k < ns.size(); ++k) {
    BOOST_TEST_REQUIRE(ns[k]->hint.load() == k, "nodes are numbered in the pass's order");
    auto [s, made] = table.try_emplace(ns[k]->hint);
    BOOST_TEST_REQUIRE(!made, "a second emplace finds the first");
    BOOST_TEST_REQUIRE(s == table.find(ns[k]->hint));
    BOOST_TEST_REQUIRE(s->dependencies == ns[k]->id);
  }
  const auto others = hinted_nodes(10);
  for (const auto& n : others)
    BOOST_TEST(table.find(n->hint) == nullptr, "a node the table never numbered");
}

BOOST_AUTO_TEST_CASE(a_hint_another_table_rewrote_is_found_through_the_index) {
  // Two calls over overlapping graphs: the second numbers some of the
  // first's nodes in another order, so their hints point elsewhere.
  const auto ns = hinted_nodes(500);
  NodeTable<State> first;
  number(first, ns);
  NodeTable<State> second;
  second.reset(ns.size(), true);
  for (auto it = ns.rbegin(); it != ns.rbegin() + 200; ++it)
    second.try_emplace((*it)->hint).first->dependencies = -(*it)->id;
  BOOST_TEST_REQUIRE(second.finish_numbering(false));
  for (const auto& n : ns) {
    const State* s = first.find(n->hint);
    BOOST_TEST_REQUIRE(s != nullptr);
    BOOST_TEST_REQUIRE(s->dependencies == n->id);
  }
  for (auto it = ns.rbegin(); it != ns.rbegin() + 200; ++it)
    BOOST_TEST_REQUIRE(second.find((*it)->hint)->dependencies == -(*it)->id);
  for (auto it = ns.rbegin() + 200; it != ns.rend(); ++it)
    BOOST_TEST_REQUIRE(second.find((*it)->hint) == nullptr);
}

BOOST_AUTO_TEST_CASE(a_pass_whose_hint_was_rewritten_must_run_again) {
  const auto ns = hinted_nodes(3);
  NodeTable<State> table, other;
  table.reset(3, true);
  table.try_emplace(ns[0]->hint);
  table.try_emplace(ns[1]->hint).first->dependencies += 1;
  // Another call numbers ns[1] first, as if on another thread meanwhile.
  other.reset(3, true);
  other.try_emplace(ns[2]->hint);
  other.try_emplace(ns[0]->hint);
  other.try_emplace(ns[1]->hint);
  // This pass meets ns[1] again through a second edge: its hint is not
  // this table's, so it numbers ns[1] twice, and finish_numbering says so.
  table.try_emplace(ns[1]->hint).first->dependencies += 1;
  BOOST_TEST(!table.finish_numbering(false));
  // Numbered again through the index, ns[1] has one state and both edges.
  table.reset(3, false);
  table.try_emplace(ns[0]->hint);
  table.try_emplace(ns[1]->hint).first->dependencies += 1;
  table.try_emplace(ns[1]->hint).first->dependencies += 1;
  BOOST_TEST(table.finish_numbering(false));
  BOOST_TEST(table.size() == 2u);
  BOOST_TEST(table.find(ns[1]->hint)->dependencies == 2);
  BOOST_TEST(table.find(ns[2]->hint) == nullptr);
}

BOOST_AUTO_TEST_CASE(a_shared_table_is_indexed_when_numbered) {
  // Looked up from several threads, a table must not build its index on a
  // miss: finish_numbering(true) builds it, and lookups after hints were
  // rewritten run concurrently.
  const auto ns = hinted_nodes(2000);
  NodeTable<State> table;
  table.reset(ns.size(), true);
  for (const auto& n : ns)
    table.try_emplace(n->hint).first->dependencies = n->id;
  BOOST_TEST_REQUIRE(table.finish_numbering(true));
  for (const auto& n : ns)
    n->hint.store(7);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (const auto& n : ns)
        if (const State* s = table.find(n->hint); !s || s->dependencies != n->id)
          wrong.fetch_add(1);
    });
  for (auto& th : threads)
    th.join();
  BOOST_TEST(wrong.load() == 0);
}

BOOST_AUTO_TEST_CASE(passes_numbering_one_graph_at_once_each_count_every_node_once) {
  // Threads numbering the same nodes at once rewrite each other's hints.
  // finish_numbering must catch every pass that met a node twice because
  // of that, though it checks hints only after an overlap (Note [Numbering
  // passes in flight]); the pass then runs again through the index.
  const auto ns = hinted_nodes(256);
  std::atomic<int> wrong{0}, again{0}, waiting{4};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      NodeTable<State> table;
      waiting.fetch_sub(1); // start together
      while (waiting.load() > 0)
        std::this_thread::yield();
      // Meets each node twice, as through two edges, starting from a node
      // of its own (so that the threads give the nodes different numbers).
      auto pass = [&](bool hinted) {
        table.reset(ns.size(), hinted);
        for (int edge = 0; edge < 2; ++edge)
          for (std::size_t k = 0; k < ns.size(); ++k)
            table.try_emplace(ns[(k + 64 * t) % ns.size()]->hint).first->dependencies += 1;
        return table.finish_numbering(false);
      };
      // 2000 rounds, and more until some pass ran again: on a loaded machine
      // the threads may take turns for a while before they overlap.
      for (int round = 0; round < 2000 || (again.load() == 0 && round < 200000); ++round) {
        if (!pass(true)) {
          again.fetch_add(1);
          if (!pass(false))
            wrong.fetch_add(1);
        }
        if (table.size() != ns.size())
          wrong.fetch_add(1);
        for (const auto& n : ns)
          if (const State* s = table.find(n->hint); !s || s->dependencies != 2)
            wrong.fetch_add(1);
      }
    });
  for (auto& th : threads)
    th.join();
  BOOST_TEST(wrong.load() == 0);
  BOOST_TEST_MESSAGE(again.load() << " passes ran again through the index");
  BOOST_TEST(again.load() > 0, "the passes overlapped");
}
