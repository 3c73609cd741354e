"""tools/tidy.sh fails, naming the check, on a source with one planted
finding of a check in .clang-tidy (a literal 0 as a pointer:
modernize-use-nullptr), compiled through a compile database of its own in
a temp build folder, and passes on the same source without it."""
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TIDY = ROOT / 'tools' / 'tidy.sh'


class PlantedFinding(unittest.TestCase):
    def tidy(self, source):
        tmp = pathlib.Path(tempfile.mkdtemp(prefix='tidy_planted.'))
        self.addCleanup(shutil.rmtree, tmp)
        src = tmp / 'planted.cpp'
        src.write_text(source)
        (tmp / 'compile_commands.json').write_text(json.dumps([{
            'directory': str(tmp), 'file': str(src),
            'command': f'g++ -std=c++20 -c {src} -o {tmp / "planted.o"}'}]))
        env = dict(os.environ, BUILD_DIR=str(tmp))
        r = subprocess.run(['bash', str(TIDY), str(src)], capture_output=True, text=True, env=env)
        return r.returncode, r.stdout + r.stderr

    def test_clean_source_passes(self):
        rc, out = self.tidy('int* first(int* p) { return p == nullptr ? nullptr : p; }\n')
        self.assertEqual(rc, 0, out)

    def test_planted_finding_fails(self):
        rc, out = self.tidy('int* first(int* p) { return p == 0 ? 0 : p; }\n')
        self.assertEqual(rc, 1, out)
        self.assertIn('modernize-use-nullptr', out)
        self.assertIn('planted.cpp', out)


if __name__ == '__main__':
    unittest.main()
