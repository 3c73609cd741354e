/// @file test_node_table.cpp
/// The GraphTask's node table (libengine/engine/node_table.h): lookups,
/// growth past the reserved size, and a thread's reused blocks, whose old
/// entries must not show through (Note [Node table generations]).
#define BOOST_TEST_MODULE node_table
#include <boost/test/unit_test.hpp>

#include <memory>
#include <set>
#include <vector>

#include "actorgrad/libengine/engine/node_table.h"

using actorgrad::NodeTable;

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
  table.reset(10); // far fewer than it will hold: it grows
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
    BOOST_TEST(!table.contains(n.get()));
  BOOST_TEST(!table.contains(nullptr));
}

BOOST_AUTO_TEST_CASE(an_empty_table_finds_nothing) {
  NodeTable<State> table;
  const auto n = nodes(1);
  BOOST_TEST(table.find(n[0].get()) == nullptr);
  table.reset(0);
  BOOST_TEST(table.find(n[0].get()) == nullptr);
  BOOST_TEST(table.size() == 0u);
}

BOOST_AUTO_TEST_CASE(a_reused_block_shows_none_of_its_old_entries) {
  const auto first = nodes(300), second = nodes(300);
  for (int round = 0; round < 5; ++round) {
    // Each table takes the blocks the previous one gave to this thread's
    // cache; reset must hide the old entries without clearing them.
    NodeTable<State> table;
    table.reset(first.size());
    const auto& mine = round % 2 == 0 ? first : second;
    const auto& other = round % 2 == 0 ? second : first;
    for (const auto& n : other)
      BOOST_TEST_REQUIRE(!table.contains(n.get()), "round " << round);
    for (const auto& n : mine)
      BOOST_TEST_REQUIRE(!table.contains(n.get()), "round " << round << ": not yet emplaced");
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
  table.reset(50);
  for (const auto& n : a)
    table.try_emplace(n.get());
  table.reset(50); // compute_dependencies runs again after a cycle check
  BOOST_TEST(table.size() == 0u);
  for (const auto& n : a)
    BOOST_TEST(!table.contains(n.get()));
  for (const auto& n : b)
    table.try_emplace(n.get());
  for (const auto& n : b)
    BOOST_TEST(table.contains(n.get()));
}
