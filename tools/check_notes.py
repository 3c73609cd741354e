#!/usr/bin/env python3
"""Fails when a cited Note does not exist (CONTRIBUTING.md, "Notes").

  tools/check_notes.py [REPO_ROOT]     REPO_ROOT defaults to this script's ../

A Note is defined by a comment line that is exactly its title after the
comment marker ("//", "///" or "#", then the word Note and the title in
square brackets) followed by a comment line that goes on with its text.
Every other mention of a titled Note in the repository's sources, scripts,
build files and docs is a citation, also when it wraps over two lines
(a title starts with a letter or digit, so placeholders are none).

Checks (ctest: check_notes):
  1. Every citation names a defined Note.
  2. A citation followed by `in PATH` or `(PATH)` names the file that holds
     the definition (PATH may be a tail of the path: runner.cpp).
  3. No Note is defined twice.
bench/HISTORY.md is left out: it records the code as it was.
Exit 0 when all hold; else one line per problem (file:line: ...) and exit 1.
"""
import os
import pathlib
import re
import subprocess
import sys

SUFFIXES = {'.h', '.hpp', '.cpp', '.cc', '.cu', '.cuh', '.py', '.sh', '.cmake', '.md', '.in',
            '.supp'}
NAMES = {'CMakeLists.txt', 'run'}
LEFT_OUT = {'bench/HISTORY.md'}

# A title starts with a letter or digit: 'Note [...]' and format strings are no citation.
NOTE = r'Note\s+\[([A-Za-z0-9][^\]\[]*)\]'
DEFINITION = re.compile(r'^\s*(?:///?|#)\s*' + NOTE + r'\s*$')
# A comment line's marker: what the joined text of a wrapped citation drops.
MARKER = re.compile(r'^\s*(?:/\*+|\*+/?|///?|#+|>)?\s?')
CONTINUES = re.compile(r'^\s*(?:///?|#)\s*\S')
CITATION = re.compile(NOTE + r'(?:\s*(?:in\s+|\()`?([\w./-]+\.(?:h|cpp|cu|cuh|cmake|txt|py|sh|md))`?)?')


def title(text):
    return ' '.join(text.split())


def tracked_files(root):
    try:
        out = subprocess.run(['git', '-C', str(root), 'ls-files', '-z'], check=True,
                             capture_output=True).stdout.decode()
        paths = [p for p in out.split('\0') if p]
    except (OSError, subprocess.CalledProcessError):  # not a checkout: walk the tree
        paths = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith(('.', 'build'))]
            paths += [os.path.relpath(os.path.join(dirpath, f), root) for f in filenames]
    return sorted(p for p in paths
                  if (pathlib.PurePath(p).suffix in SUFFIXES or pathlib.PurePath(p).name in NAMES)
                  and p not in LEFT_OUT and (root / p).is_file())


def joined(lines):
    """The lines without their comment markers, joined by spaces, and the
    offset in that text where each line starts."""
    starts, parts, pos = [], [], 0
    for line in lines:
        body = MARKER.sub('', line, count=1).strip()
        starts.append(pos)
        parts.append(body)
        pos += len(body) + 1
    return ' '.join(parts), starts


def line_of(starts, offset):
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
    definitions = {}  # title -> [(path, line)]
    citations = []  # (path, line, title, file named with it or None)
    for path in tracked_files(root):
        lines = (root / path).read_text(encoding='utf-8', errors='replace').splitlines()
        defined_at = set()
        if not path.endswith('.md'):
            for i, line in enumerate(lines):
                m = DEFINITION.match(line)
                if m and i + 1 < len(lines) and CONTINUES.match(lines[i + 1]):
                    definitions.setdefault(title(m.group(1)), []).append((path, i + 1))
                    defined_at.add(i + 1)
        text, starts = joined(lines)
        for m in CITATION.finditer(text):
            line = line_of(starts, m.start())
            if line not in defined_at:
                citations.append((path, line, title(m.group(1)), m.group(2)))

    problems = []
    for name, places in sorted(definitions.items()):
        if len(places) > 1:
            where = ', '.join(f'{p}:{n}' for p, n in places)
            problems.append(f'{places[0][0]}:{places[0][1]}: Note [{name}] is defined {len(places)} times ({where})')
    for path, line, name, named_file in citations:
        places = definitions.get(name)
        if not places:
            problems.append(f'{path}:{line}: cites Note [{name}], which no file defines')
        elif named_file and not any(p == named_file or p.endswith('/' + named_file)
                                    for p, _ in places):
            where = ', '.join(p for p, _ in places)
            problems.append(f'{path}:{line}: cites Note [{name}] in {named_file}, but it is defined in {where}')
    for problem in problems:
        print(problem)
    if problems:
        print(f'check_notes: {len(problems)} problem(s); {len(definitions)} Notes defined, '
              f'{len(citations)} citations', file=sys.stderr)
        return 1
    print(f'check_notes: {len(definitions)} Notes defined, {len(citations)} citations, all resolve')
    return 0


if __name__ == '__main__':
    sys.exit(main())
