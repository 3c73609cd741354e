#!/usr/bin/env python3
"""Fails when the installed headers are not the public API alone.

  tools/check_installed_headers.py INCLUDE_DIR

INCLUDE_DIR is an install prefix's include/ (the one holding actorgrad/).
Checks (run by tests/packaging/check_packaging.sh, ctest packaging_check):
  1. Every `#include "actorgrad/..."` of an installed header names an
     installed file: a consumer can include any of them.
  2. No internal header is installed (tools/cmake/Install.cmake leaves them
     out): none in a detail/ folder, none named *_impl.h, not
     actors/messages.h. So no public header includes an internal one.
Exit 0 when all hold; else one line per problem and exit 1.
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"actorgrad/([^"]+)"', re.M)


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1]) / 'actorgrad'
    headers = {p.relative_to(root).as_posix(): INCLUDE.findall(p.read_text())
               for p in sorted(root.rglob('*.h'))}
    problems = []
    for rel, includes in headers.items():
        for inc in includes:
            if inc not in headers:
                problems.append(f'{rel} includes actorgrad/{inc}, which is not installed')
        if rel.endswith('_impl.h') or rel == 'actors/messages.h':
            problems.append(f'{rel} is internal and installed')
        if 'detail' in rel.split('/')[:-1]:
            problems.append(f'{rel} is internal (a detail/ folder) and installed')
    for p in problems:
        print(p)
    print(f'check_installed_headers: {len(headers)} headers, {len(problems)} problems')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
