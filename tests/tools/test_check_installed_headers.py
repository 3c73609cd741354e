"""tools/check_installed_headers.py: passes on an include tree made as
tools/cmake/Install.cmake makes it, and fails, naming the problem, when an
installed header includes one that is not there, or an internal header is
installed (planted in temp include trees)."""
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECK = ROOT / 'tools' / 'check_installed_headers.py'


class PlantedErrors(unittest.TestCase):
    def tree(self, files):
        """An include dir holding actorgrad/<path> for each (path, text)."""
        tmp = pathlib.Path(tempfile.mkdtemp(prefix='check_installed_headers.'))
        self.addCleanup(shutil.rmtree, tmp)
        for rel, text in files.items():
            path = tmp / 'actorgrad' / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        r = subprocess.run([sys.executable, str(CHECK), str(tmp)], capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr

    def test_public_headers_pass(self):
        rc, out = self.tree({
            'actors/remote/dist_context.h': '#include "actorgrad/actors/remote/runtime.h"\n',
            'actors/remote/runtime.h': '#include "actorgrad/actors/remote/agent_stats.h"\n',
            'actors/remote/agent_stats.h': '#include <cstdint>\n',
        })
        self.assertEqual(rc, 0, out)

    def test_missing_include_fails(self):
        rc, out = self.tree({'actors/engine.h': '#include "actorgrad/actors/detail/runner.h"\n'})
        self.assertEqual(rc, 1, out)
        self.assertIn('actors/engine.h includes actorgrad/actors/detail/runner.h, which is not installed',
                      out)

    def test_internal_header_fails(self):
        rc, out = self.tree({
            'libengine/engine/executor.h': '#include <memory>\n',
            'libengine/engine/detail/node_table.h': '#include <vector>\n',
        })
        self.assertEqual(rc, 1, out)
        self.assertIn('libengine/engine/detail/node_table.h is internal (a detail/ folder) and installed',
                      out)

    def test_internal_header_a_public_one_includes_fails(self):
        rc, out = self.tree({
            'actors/remote/runtime.h': '#include "actorgrad/actors/remote/detail/ask.h"\n',
            'actors/remote/detail/ask.h': '#include <optional>\n',
        })
        self.assertEqual(rc, 1, out)
        self.assertIn('actors/remote/detail/ask.h is internal (a detail/ folder) and installed', out)

    def test_impl_header_fails(self):
        rc, out = self.tree({'libengine/engine/basic_graph_task_impl.h': '#include <vector>\n'})
        self.assertEqual(rc, 1, out)
        self.assertIn('basic_graph_task_impl.h is internal and installed', out)


if __name__ == '__main__':
    unittest.main()
