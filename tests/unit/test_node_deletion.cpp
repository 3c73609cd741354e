#define BOOST_TEST_MODULE node_deletion
#include <boost/test/unit_test.hpp>

// ~Node (libengine/autograd/node.cpp): dropping a long chain does not
// recurse (a recursive deletion of this chain overflows the 8 MiB stack),
// every node is deleted exactly once, a node shared by two graphs lives
// until both are gone, and two threads may drop the graphs that share it at
// once (TSan-clean: see Note [Deleting a graph without recursion or
// use_count]).

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "actorgrad/libengine/autograd/node.h"

using namespace actorgrad;

namespace {

std::atomic<int> alive{0}; // changed by Counted's constructor and destructor, on any thread

/// A node that counts the live instances.
class Counted final : public Node {
public:
  explicit Counted(edge_list next = {}) : Node(std::move(next)) { alive.fetch_add(1); }
  ~Counted() override { alive.fetch_sub(1); }
  variable_list apply(variable_list&& g) override { return std::move(g); }
};

/// A chain of `n` nodes ending at `tail`; returns its head.
std::shared_ptr<Node> chain(int n, std::shared_ptr<Node> tail = nullptr) {
  std::shared_ptr<Node> head = tail ? tail : make_node<Counted>();
  for (int i = 1; i < n; ++i)
    head = make_node<Counted>(edge_list{Edge{head, 0}});
  return head;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_chain_of_200000_nodes_is_deleted_without_recursion) {
  auto head = chain(200000);
  BOOST_TEST(alive.load() == 200000);
  head.reset();
  BOOST_TEST(alive.load() == 0);
}

BOOST_AUTO_TEST_CASE(a_shared_node_lives_until_its_last_owner_is_deleted) {
  auto shared = make_node<Counted>();
  auto a = chain(1000, shared);
  auto b = chain(1000, shared);
  shared.reset();
  a.reset();
  BOOST_TEST(alive.load() == 1000); // b's chain, the shared node included
  b.reset();
  BOOST_TEST(alive.load() == 0);
}

// One thread reads a shared node's edges and drops its reference while
// another drops the graph that held the node's only other reference: the
// deletion must be ordered after the read (it is, when it starts from the
// last release; a relaxed use_count() == 1 check does not order it).
BOOST_AUTO_TEST_CASE(a_node_released_by_one_thread_is_deleted_by_another_after_its_last_use) {
  for (int round = 0; round < 200; ++round) {
    auto shared = chain(100);
    auto a = chain(100, shared);
    std::atomic<bool> go{false}, had_edge{false};
    std::thread reader([&go, &had_edge, ref = shared]() mutable {
      while (!go.load()) {
      }
      const Edge e = ref->next_edge(0); // reads the node's edge list
      had_edge = e.function != nullptr;
      ref.reset();
    });
    shared.reset();
    std::thread dropper([&] {
      while (!go.load()) {
      }
      a.reset();
    });
    go = true;
    reader.join();
    dropper.join();
    BOOST_TEST_REQUIRE(had_edge.load());
    BOOST_TEST_REQUIRE(alive.load() == 0);
  }
}
