"""tools/bench/callgrind_breakdown.py: names cut to their function, and each
function put in the component RESULTS.md reports it under."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "bench"))
import callgrind_breakdown as b  # noqa: E402

ACTORS = "engine: actors (runner, messages, mailboxes)"
CALL = "engine: the call and its graph task (arguments, dependencies, ready heap, buffers, sent gradients, hooks)"


class BareName(unittest.TestCase):
    def test_argument_list_and_qualifiers_cut(self):
        self.assertEqual(b.bare_name("actorgrad::detail::Runner::make_context(a const&) const"),
                         "actorgrad::detail::Runner::make_context")
        self.assertEqual(b.bare_name("f(int) [clone .cold]"), "f")

    def test_parentheses_in_template_arguments_kept(self):
        self.assertEqual(b.bare_name("void actorgrad::detail::post<(caf::message_priority)1, M>(caf::actor const&)"),
                         "void actorgrad::detail::post<(caf::message_priority)1, M>")


class Component(unittest.TestCase):
    def test_libraries_by_name(self):
        self.assertEqual(b.component("???", "_int_free"), "malloc and free")
        self.assertEqual(b.component("???", "operator delete(void*, unsigned long)"), "malloc and free")
        self.assertEqual(b.component("???", "caf::blocking_actor::dequeue()"), "CAF: mailbox, elements, scheduler")
        self.assertEqual(b.component("???", "pthread_mutex_lock"), "mutexes")

    def test_library_code_inlined_into_the_engine_goes_to_the_library(self):
        self.assertEqual(b.component("/usr/include/caf/intrusive/fifo_inbox.hpp",
                                     "actorgrad::detail::Runner::serve()"), "CAF: mailbox, elements, scheduler")
        self.assertEqual(b.component("/usr/include/c++/12/bits/atomic_wait.h",
                                     "actorgrad::detail::EngineActor::enqueue(x)"),
                         "sleeping and waking (futex, polls, yields)")

    def test_engine_headers_inlined_elsewhere_do_not_decide(self):
        # Device and stream headers are inlined into the runner: its name decides.
        self.assertEqual(b.component("/work/main/device/stream.h", "actorgrad::detail::Runner::make_context(x)"),
                         ACTORS)
        # An engine class's own allocator is not malloc.
        self.assertEqual(b.component("???", "actorgrad::detail::RecycledElement<M>::operator delete(void*)"), ACTORS)
        # A Stream in the arguments does not make a buffer's add stream work.
        self.assertEqual(b.component("???", "actorgrad::detail::InputBuffer::add(unsigned long, "
                                            "std::optional<actorgrad::Stream> const&, actorgrad::Event const*)"), CALL)

    def test_engine_and_the_graph(self):
        self.assertEqual(b.component("???", "actorgrad::current_stream(actorgrad::Device)"),
                         "device streams and events")
        self.assertEqual(b.component("???", "actorgrad::grad(x)"), CALL)
        # A gradient sent between devices is the graph task's work.
        self.assertEqual(b.component("???", "actorgrad::detail::SentValue::{lambda(void*)#6}::_FUN(void*)"), CALL)
        self.assertEqual(b.component("???", "actorgrad::detail::ActorgradGraph::make_in_flight(a, b, c)"), CALL)
        self.assertEqual(b.component("???", "actorgrad::mul(a, b)"), "the graph's nodes and tensors")
        self.assertEqual(b.component("???", "actorgrad::bench::SequentialPlan::run()"), "benchmark harness")
        self.assertEqual(b.component("???", "__memcpy_avx_unaligned_erms"), b.OTHER)


if __name__ == "__main__":
    unittest.main()
