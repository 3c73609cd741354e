"""tools/check_messages.py: passes on the tree as it is, and fails, naming
the problem, on a copy of actors/ with one violation planted."""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECK = ROOT / 'tools' / 'check_messages.py'


def run(actors):
    r = subprocess.run([sys.executable, str(CHECK), str(actors)], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


class PlantedViolations(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='check_messages.')
        self.actors = pathlib.Path(self.tmp) / 'actors'
        shutil.copytree(ROOT / 'actors', self.actors)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def plant(self, rel, old, new):
        path = self.actors / rel
        text = path.read_text()
        self.assertIn(old, text, f'{rel} changed: the planted violation needs a new anchor')
        path.write_text(text.replace(old, new, 1))

    def assert_fails(self, *expected):
        rc, out = run(self.actors)
        self.assertEqual(rc, 1, out)
        for e in expected:
            self.assertIn(e, out)

    def test_tree_passes(self):
        rc, out = run(ROOT / 'actors')
        self.assertEqual(rc, 0, out)

    def test_raw_anon_send(self):
        self.plant('detail/runner.cpp', '  post(to, std::forward<Message>(m));',
                   '  caf::anon_send(to, std::forward<Message>(m));')
        self.assert_fails('actors/detail/runner.cpp:', 'raw anon_send',
                          'row Grad: sender runner.cpp: Runner::send calls none of')

    def test_raw_enqueue_instead_of_forward(self):
        self.plant('detail/coordinator_pool.cpp', 'forward(coordinator, std::move(waiting_.front()));',
                   'coordinator->enqueue(std::move(waiting_.front()), nullptr);')
        self.assert_fails('actors/detail/coordinator_pool.cpp:', 'raw enqueue')

    def test_raw_send_in_remote(self):
        self.plant('remote/dist_context.cpp', 'detail::tell(rt.agent(), detail::LocalRegisterSend',
                   'caf::anon_send(rt.agent(), detail::LocalRegisterSend')
        self.assert_fails('actors/remote/dist_context.cpp:', 'raw anon_send',
                          'actors/remote/detail/send.h')

    def test_send_missing_from_the_table(self):
        self.plant('engine.cpp', 'detail::post(core_->worker(device), msg::Job{std::move(job)});',
                   'detail::post(core_->worker(device), msg::Job{std::move(job)});\n'
                   '  detail::post(core_->pool, msg::Idle{});')
        self.assert_fails("Engine::post sends Idle, but Idle's row does not list it as a sender")

    def test_handler_that_does_not_handle(self):
        self.plant('detail/runner.cpp', '} else if (type.is<msg::Job>()) {', '} else if (false) {')
        self.assert_fails('row Job: handler runner.cpp: Runner::handle does not handle Job')

    def test_wrong_sender_file(self):
        self.plant('messages.h', '| Idle      | async_call.cpp: run_call', '| Idle      | engine.cpp: run_call')
        self.assert_fails('row Idle: sender engine.cpp: run_call is not defined there')

    def test_receiver_without_its_handler(self):
        self.plant('messages.h', '| Job       | engine.cpp: Engine::post                              | DeviceWorker |',
                   '| Job       | engine.cpp: Engine::post                              | DeviceWorker, CoordinatorPool |')
        self.assert_fails('row Job: handled in does not list coordinator_pool.cpp: CoordinatorPool::act')

    def test_struct_without_a_row(self):
        self.plant('remote/detail/local_messages.h', 'struct SetName {', 'struct Unlisted {\n  int x;\n};\n\nstruct SetName {')
        self.assert_fails('struct Unlisted has no row in a message table',
                          'struct Unlisted is missing from is_remote_message')


if __name__ == '__main__':
    unittest.main()
