/// @file test_recycled_element.cpp
/// The mailbox elements of the per-node messages (Note [Mailbox elements
/// kept by the thread that frees them] in actors/detail/recycled_element.h):
/// the thread that frees one takes its block for its next one, whichever
/// per-node message that is; an element reads as its message; and post
/// sends those messages in such elements.
#define BOOST_TEST_MODULE recycled_element
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <memory>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include "actorgrad/actors/detail/message_type.h"
#include "actorgrad/actors/detail/post.h"
#include "actorgrad/actors/detail/recycled_element.h"

using namespace actorgrad;
using detail::RecycledElement;

namespace {

/// A per-node message's element, as post makes it.
template <class M>
caf::mailbox_element_ptr element(M m) {
  return caf::mailbox_element_ptr{new RecycledElement<M>(caf::make_message_id(), std::move(m))};
}

/// The address of the block that holds `e`.
const void* block_of(const caf::mailbox_element_ptr& e) {
  return dynamic_cast<const void*>(e.get());
}

} // namespace

BOOST_AUTO_TEST_CASE(a_freed_element_s_block_holds_the_next_per_node_message) {
  caf::mailbox_element_ptr wake_up = element(msg::WakeUp{1});
  const void* block = block_of(wake_up);
  wake_up.reset();
  caf::mailbox_element_ptr grad = element(msg::Grad{});
  BOOST_TEST(block_of(grad) == block);
  grad.reset();
  BOOST_TEST(block_of(element(msg::Task{})) == block);
}

BOOST_AUTO_TEST_CASE(an_element_reads_as_its_message) {
  caf::mailbox_element_ptr e = element(msg::WakeUp{42, 9});
  const detail::MessageType type(e->content());
  BOOST_TEST(type.is<msg::WakeUp>());
  BOOST_TEST(!type.is<msg::Grad>());
  BOOST_TEST(e->content().get_as<msg::WakeUp>(0).task_id == 42u);
  BOOST_TEST(!e->sender);
  const caf::message copied = e->copy_content_to_message();
  BOOST_TEST(copied.get_as<msg::WakeUp>(0).trace == 9u);
  const caf::message moved = e->move_content_to_message();
  BOOST_TEST(moved.match_element<msg::WakeUp>(0));
  BOOST_TEST(moved.get_as<msg::WakeUp>(0).task_id == 42u);
}

BOOST_AUTO_TEST_CASE(post_sends_a_per_node_message_in_a_recycled_element) {
  caf::actor_system_config config;
  caf::actor_system system{config};
  caf::scoped_actor self{system};
  caf::mailbox_element_ptr probe = element(msg::Grad{});
  const void* block = block_of(probe);
  probe.reset(); // this thread's next per-node element takes `block`
  detail::post(caf::actor_cast<caf::actor>(self), msg::WakeUp{5, 6});
  // The posted WakeUp holds it now (a CAF element would have left it kept).
  BOOST_TEST(block_of(element(msg::Grad{})) != block);
  bool received = false;
  self->receive(
    [&](const msg::WakeUp& w) {
      received = true;
      BOOST_TEST(w.task_id == 5u);
      BOOST_TEST(w.trace == 6u);
    },
    caf::after(std::chrono::seconds(60)) >> [] { BOOST_FAIL("the posted WakeUp never arrived"); });
  BOOST_TEST(received);
  // Freed once handled, on this thread, which kept its block again.
  BOOST_TEST(block_of(element(msg::Task{})) == block);
}
