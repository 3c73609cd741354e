#!/usr/bin/env python3
"""Fails when the map at the top of docs/architecture.md is no longer true.

  tools/check_map.py REPO_ROOT

The map is the "## Map" section (up to the next "## " heading). Checks
(ctest: check_map):
  1. Every path in backticks that names a file or folder of the tree
     (`device/`, `actors/engine.h`, ...) exists.
  2. Every type or function named in backticks just before a path in
     parentheses (`Engine` (`actors/engine.h`); `A` and `B` (`file`)) is
     declared in that file (class, struct, enum, using, namespace, or a
     function declared or defined there).
  3. The message table (| message | sent by | handled in |) lists every
     message of the tables of actors/messages.h and requests.h, each with the same sender and
     handler functions as that table ("the application": outside the code).
Exit 0 when all hold; else one line per problem and exit 1.
"""
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from check_messages import AREAS, code_of, places, report, tables  # noqa: E402

PATH = re.compile(r'`((?:device|libengine|actors|tools|bench|tests|docs)/[\w/.-]*)`')


def functions(cell):
    """The function names of a map cell (`A::f`, `g`), none for "the application"."""
    return set(re.findall(r'`([\w:~]+)`', cell))


def table_functions(cell):
    return {f for p in places(cell) if p for f in p[1]}


def declares(code, name):
    n = re.escape(name)
    return re.search(r'\b(?:class|struct|enum(?:\s+class)?|using|namespace)\s+' + n + r'\b', code) or \
        re.search(r'[\w>&*]\s+' + n + r'\s*\(', code)


def main():
    root = pathlib.Path(sys.argv[1])
    text = (root / 'docs/architecture.md').read_text()
    m = re.search(r'^## Map\n(.*?)(?=^## )', text, re.S | re.M)
    problems = []
    if not m:
        print('docs/architecture.md: no "## Map" section')
        return 1
    section = m.group(1)
    for path in sorted(set(PATH.findall(section))):
        if not (root / path).exists():
            problems.append(f'map: {path} does not exist')
    for line in section.splitlines():
        for cell in line.split('|'):
            last = 0
            for pm in re.finditer(r'\(`([^`]+)`\)', cell):
                names = re.findall(r'`(\w+)`', cell[last:pm.start()])
                last = pm.end()
                path = root / pm.group(1)
                if not path.is_file():
                    continue
                code = code_of(path.read_text())
                for name in names:
                    if not declares(code, name):
                        problems.append(f'map: {pm.group(1)} declares no {name}')
    headers = ' and '.join('actors/' + t for t in AREAS['engine']['tables'])
    rows = [r for h in AREAS['engine']['tables'] for t in tables(root / 'actors' / h)
            if t[0][0] == 'message' for r in t[1:]]
    want = {r[0]: (table_functions(r[1]), table_functions(r[3])) for r in rows}
    seen = set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) != 3 or not cells[0].startswith('`'):
            continue
        for message in re.findall(r'`(\w+)`', cells[0]):
            seen.add(message)
            if message not in want:
                problems.append(f'map: message {message} is not in the tables of {headers}')
                continue
            sent, handled = want[message]
            if functions(cells[1]) != sent:
                problems.append(f'map: {message} is sent by {sorted(functions(cells[1]))}, '
                                f'{headers} say {sorted(sent)}')
            if functions(cells[2]) != handled:
                problems.append(f'map: {message} is handled in {sorted(functions(cells[2]))}, '
                                f'{headers} say {sorted(handled)}')
    for message in sorted(set(want) - seen):
        problems.append(f'map: message {message} of {headers} is missing')
    return report('check_map', problems)


if __name__ == '__main__':
    sys.exit(main())
