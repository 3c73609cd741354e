"""tools/check_map.py: passes on the tree as it is, and fails, naming the
problem, when the map of docs/architecture.md is planted with one error
(in a temp root whose docs/ is a changed copy; the rest links the tree)."""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECK = ROOT / 'tools' / 'check_map.py'


def run(root):
    r = subprocess.run([sys.executable, str(CHECK), str(root)], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


class PlantedErrors(unittest.TestCase):
    def plant(self, old, new):
        tmp = pathlib.Path(tempfile.mkdtemp(prefix='check_map.'))
        self.addCleanup(shutil.rmtree, tmp)
        for folder in ('device', 'libengine', 'actors', 'tools', 'bench', 'tests'):
            os.symlink(ROOT / folder, tmp / folder)
        (tmp / 'docs').mkdir()
        text = (ROOT / 'docs' / 'architecture.md').read_text()
        self.assertIn(old, text, 'the map changed: the planted error needs a new anchor')
        (tmp / 'docs' / 'architecture.md').write_text(text.replace(old, new, 1))
        return run(tmp)

    def assert_fails(self, result, expected):
        rc, out = result
        self.assertEqual(rc, 1, out)
        self.assertIn(expected, out)

    def test_tree_passes(self):
        rc, out = run(ROOT)
        self.assertEqual(rc, 0, out)

    def test_type_not_declared_in_its_file(self):
        self.assert_fails(self.plant('`Stream` (`device/stream.h`)', '`Streams` (`device/stream.h`)'),
                          'device/stream.h declares no Streams')

    def test_second_type_of_a_file(self):
        self.assert_fails(self.plant('and `AsyncCoordinator` (', 'and `AsyncCoordinators` ('),
                          'actors/detail/coordinator_pool.h declares no AsyncCoordinators')

    def test_missing_file(self):
        self.assert_fails(self.plant('(`actors/trace/recorder.h`)', '(`actors/trace/recorders.h`)'),
                          'actors/trace/recorders.h does not exist')

    def test_wrong_sender(self):
        self.assert_fails(self.plant('| `Idle` | `run_call` |', '| `Idle` | `spawn_call` |'),
                          "map: Idle is sent by ['spawn_call'], actors/messages.h and actors/requests.h say ['run_call']")

    def test_missing_message(self):
        self.assert_fails(self.plant('| `Job` | `Engine::post` | `Runner::handle` |\n', ''),
                          'map: message Job of actors/messages.h and actors/requests.h is missing')


if __name__ == '__main__':
    unittest.main()
