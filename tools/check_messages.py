#!/usr/bin/env python3
"""Fails when a message the actors send is missing from the map in actors/messages.h.

  tools/check_messages.py ACTORS_DIR

Checks (ctest: check_messages):
  1. Every engine message struct of actors/messages.h has a row in its table
     and is accepted by msg::is_engine_message (so detail::post takes it).
  2. No file in actors/ but actors/detail/post.h sends with CAF directly
     (anon_send, send, request, delegate; and Runtime::ask, the distributed
     runtime's helper in remote/runtime_ask.h) unless it is the distributed
     runtime (actors/remote/), whose sends must build a message type
     declared in actors/remote/protocol.h or actors/remote/local_messages.h
     or pass a CAF atom listed in messages.h.
Exit 0 when all hold; else one line per problem and exit 1.
"""
import pathlib
import re
import sys

SEND = re.compile(r'(?<![\w.>:])(?:caf::)?(anon_send|send|request|delegate|ask)\s*(<[^>()]*>)?\s*\(')
# The two sending helpers: the engine's and the distributed runtime's.
HELPERS = {'post.h', 'runtime_ask.h', 'messages.h'}


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text, flags=re.S)
    return re.sub(r'//[^\n]*', '', text)
METHOD_SEND = re.compile(r'->\s*(send|request|delegate)\s*(<[^>()]*>)?\s*\(')


def args_of(text, start):
    """The top-level comma-separated arguments of the call whose '(' is at start."""
    depth, args, cur = 0, [], ''
    for ch in text[start:]:
        if ch in '([{':
            depth += 1
            if depth == 1:
                continue
        elif ch in ')]}':
            depth -= 1
            if depth == 0:
                args.append(cur.strip())
                return args
        if ch == ',' and depth == 1:
            args.append(cur.strip())
            cur = ''
        else:
            cur += ch
    return args


def main():
    actors = pathlib.Path(sys.argv[1])
    problems = []
    messages = (actors / 'messages.h').read_text()
    structs = set(re.findall(r'^struct (\w+) \{', messages, re.M))
    rows = set(re.findall(r'^/// \| (\w+)\s+\|', messages, re.M)) - {'message'}
    trait = re.search(r'is_engine_message =(.*?);', messages, re.S)
    accepted = set(re.findall(r'std::is_same_v<M, (\w+)>', trait.group(1) if trait else ''))
    for s in sorted(structs - rows):
        problems.append(f'messages.h: struct {s} has no row in the message table')
    for s in sorted(rows - structs):
        problems.append(f'messages.h: the table lists {s}, which is not declared there')
    for s in sorted(structs - accepted):
        problems.append(f'messages.h: {s} is missing from is_engine_message')
    atoms = set(re.findall(r'`(caf::\w+_atom)`', messages))
    remote_types = set()
    for h in ('remote/protocol.h', 'remote/local_messages.h'):
        p = actors / h
        if p.exists():
            remote_types |= set(re.findall(r'^struct (\w+)', p.read_text(), re.M))
    for path in sorted(actors.rglob('*')):
        if path.suffix not in ('.h', '.cpp') or path.name in HELPERS:
            continue
        text = strip_comments(path.read_text())
        rel = path.relative_to(actors)
        for pattern in (SEND, METHOD_SEND):
            for m in pattern.finditer(text):
                line = text.count('\n', 0, m.start()) + 1
                before = text[max(0, m.start() - 40):m.start()]
                declared = re.search(r'(\w+)\s+$', before) or re.search(r'\w+::$', before)
                if pattern is SEND and declared and not before.endswith('caf::') and \
                        not before.rstrip().endswith('return'):
                    continue  # a declaration or definition of a send of our own
                where = f'actors/{rel}:{line}'
                if rel.parts[0] != 'remote':
                    problems.append(f'{where}: {m.group(1)} outside detail::post (actors/detail/post.h)')
                    continue
                args = args_of(text, m.end() - 1)
                skip = 2 if m.group(1) == 'request' else 1
                message = args[skip] if len(args) > skip else ''
                message = re.sub(r'^std::move\((.*)\)$', r'\1', message)
                atom = re.match(r'(caf::\w+_atom)::value', message)
                typed = re.match(r'(?:\w+::)*([A-Z]\w*)\s*[{(]', message)
                if atom and atom.group(1) in atoms:
                    continue
                if typed and typed.group(1) in remote_types:
                    continue
                problems.append(f'{where}: {m.group(1)} of "{message[:60]}", which is not a message '
                                'declared in actors/remote/protocol.h or local_messages.h '
                                '(nor an atom listed in actors/messages.h)')
    for p in problems:
        print(p)
    print(f'check_messages: {len(structs)} engine messages, {len(problems)} problems')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
