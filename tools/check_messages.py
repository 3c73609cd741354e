#!/usr/bin/env python3
"""Fails when the message tables of the actors disagree with the code.

  tools/check_messages.py ACTORS_DIR

Two areas, each with its own message tables and its one sending helper:
  engine  actors/messages.h and requests.h; helper actors/detail/post.h (post, forward,
          respond; trait msg::is_engine_message)
  remote  actors/remote/detail/protocol.h and local_messages.h; helper
          actors/remote/detail/send.h (tell, request_from, tell_exit, and
          ask built on request_from; trait is_remote_message)

A table is a run of `/// |` comment lines. In a message table
(| message | sent by | received by | handled in | [reply] |) a "sent by" or
"handled in" cell lists `file: Function, Function; file: Function` (text in
parentheses is a remark; a part beginning with "the application" is outside
the code and not checked), and "received by" lists actors of the area's
actor table (| actor | is | handles messages in |). Checks (ctest:
check_messages):
  1. Every message struct of the area has a row (or is the reply of a row)
     and its trait accepts it; every row names a declared struct.
  2. Sent by: each file exists, defines each function, and the function
     sends the message: it names the type and calls the helper (directly or
     through functions of the same file), or passes a handled element on
     with `forward`. A request row's sender names its reply type too.
  3. Every send in the code is in the table: a function that calls the
     helper and names a message type is listed as a sender of that type
     (itself, or a function of its file that it is called from).
  4. Received by / handled in: each receiver is in the actor table, the
     handled-in cell lists exactly the receivers' handlers, and each handler
     function handles the type (`is<msg::X>()` or a clause taking an `X`).
  5. No file in ACTORS_DIR but the helpers sends with CAF directly
     (anon_send, send, request, delegate, enqueue, ..., as a function or a
     method). The one exception is a mailbox's own `enqueue` override
     passing an element to its base class's enqueue: a receive, not a send.
Exit 0 when all hold; else one line per problem (naming the file, line and
message) and exit 1.
"""
import pathlib
import re
import sys

RAW = re.compile(r'(?:(?<![\w.>:])(?:caf::)?|(?:->|\.)\s*)'
                 r'(anon_send|anon_send_exit|send|send_exit|send_as|delayed_send|delayed_anon_send|'
                 r'request|delegate|enqueue)\s*(<[^;(){}]*>)?\s*\(')
NOT_A_TYPE = {'return', 'else', 'do', 'throw', 'case', 'co_return', 'co_await', 'co_yield'}
KEYWORDS = {'if', 'for', 'while', 'switch', 'catch', 'return', 'sizeof', 'alignof', 'decltype',
            'static_assert', 'noexcept', 'requires', 'defined'}
AREAS = {
    'engine': dict(tables=['messages.h', 'requests.h'], helper='detail/post.h', trait_file='messages.h',
                   calls={'post', 'forward', 'respond'}, trait='is_engine_message'),
    'remote': dict(tables=['remote/detail/protocol.h', 'remote/detail/local_messages.h'],
                   helper='remote/detail/send.h', trait_file='remote/detail/send.h',
                   calls={'tell', 'request_from', 'tell_exit', 'ask'}, trait='is_remote_message'),
}


def blank(m):
    return re.sub(r'[^\n]', ' ', m.group(0))


def code_of(text):
    """The text with comments and string/char literals blanked (lines kept)."""
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', blank, text,
                  flags=re.S)


def match_close(text, start):
    """The index just past the bracket that closes the one at `start`."""
    pairs = {'(': ')', '{': '}', '[': ']'}
    stack = []
    for i in range(start, len(text)):
        ch = text[i]
        if ch in pairs:
            stack.append(pairs[ch])
        elif ch in ')}]':
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return i + 1
    return None


DEF_NAME = re.compile(r'((?:\w+::)*~?\w+)\s*(<[^;(){}]*>)?\s*\(')
AFTER_PARAMS = re.compile(r'\s*(?:(?:const|noexcept|override|final|mutable)\b\s*|->\s*[\w:<>,\s*&]+?)*\{')


class Source:
    """One file: its code (comments and strings blanked) and its function definitions."""

    def __init__(self, path, rel):
        self.rel = rel
        self.code = code_of(path.read_text())
        self.defs = []  # (name, body start, body end)
        for m in DEF_NAME.finditer(self.code):
            name = m.group(1)
            if name.split('::')[-1] in KEYWORDS or self.code[m.start() - 1:m.start()] in ('.', '>'):
                continue
            close = match_close(self.code, m.end() - 1)
            if close is None:
                continue
            after = AFTER_PARAMS.match(self.code, close)
            if not after:
                continue
            end = match_close(self.code, after.end() - 1)
            if end:
                self.defs.append((name, after.end() - 1, end))

    def line(self, pos):
        return self.code.count('\n', 0, pos) + 1

    def bodies(self, name):
        """The bodies of the definitions of `name` (`Class::f` also finds `f` defined in its class)."""
        last = name.split('::')[-1]
        exact = [(s, e) for n, s, e in self.defs if n == name]
        return exact or [(s, e) for n, s, e in self.defs if n == last]

    def enclosing(self, pos):
        inner = [(e - s, n) for n, s, e in self.defs if s <= pos < e]
        return min(inner)[1] if inner else None

    def callees(self, name):
        """Names of this file's functions that a body of `name` calls."""
        text = ''.join(self.code[s:e] for s, e in self.bodies(name))
        own = {n for n, _, _ in self.defs}
        return {n for n in own if n != name and
                re.search(r'(?<![\w:])' + re.escape(n.split('::')[-1]) + r'\s*(<[^;(){}]*>)?\s*\(', text)}

    def reach(self, name):
        """`name` and every function of this file it calls, directly or not."""
        seen, todo = set(), [name]
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(self.callees(n))
        return seen

    def text_of(self, names):
        return ''.join(self.code[s:e] for n in names for s, e in self.bodies(n))


def calls_any(text, calls):
    return re.search(r'(?<![\w:])(?:detail::)?(' + '|'.join(calls) + r')\s*(<[^;(){}]*>)?\s*\(', text)


def named(text, type_name):
    return re.search(r'(?<![\w])' + type_name + r'(?!\w)', text)


def handles(text, type_name):
    return (re.search(r'\bis<\s*(?:\w+::)*' + type_name + r'\s*>', text) or
            re.search(r'\(\s*(?:const\s+)?(?:\w+::)*' + type_name + r'\s*&{0,2}\s*\w*\s*\)', text))


def split_top(cell, sep):
    """`cell` split at `sep` outside parentheses, each part without its parenthesised remarks."""
    parts, depth, cur = [], 0, ''
    for ch in cell:
        depth += ch == '('
        depth -= ch == ')'
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ''
        elif depth == 0 and ch != ')':
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def places(cell):
    """[(file, [functions])] of a "file: f, g; file: h" cell; None for an outside part."""
    out = []
    for part in split_top(cell, ';'):
        if part.startswith('the application') or part.startswith('the requester'):
            out.append(None)
            continue
        m = re.match(r'([\w/.]+\.(?:h|cpp)):\s*(.*)$', part)
        out.append((m.group(1), [f.strip() for f in m.group(2).split(',') if f.strip()]) if m
                   else ('?', [part]))
    return out


def tables(path):
    """The tables of a header: lists of rows, each a list of cells; the header row first."""
    found, cur = [], []
    for line in path.read_text().splitlines():
        m = re.match(r'\s*/// \|(.*)\|\s*$', line)
        if m:
            if not re.match(r'\s*-+\s*\|', m.group(1)):
                cur.append([c.strip().strip('`') for c in m.group(1).split('|')])
        elif cur:
            found.append(cur)
            cur = []
    if cur:
        found.append(cur)
    return found


class Checker:
    def __init__(self, actors):
        self.actors = actors
        self.problems = []
        self.sources = {}
        for p in sorted(actors.rglob('*')):
            if p.suffix in ('.h', '.cpp'):
                rel = p.relative_to(actors).as_posix()
                self.sources[rel] = Source(p, rel)

    def problem(self, text):
        self.problems.append(text)

    def source(self, name, where):
        """The file a table names (a path under actors/, or a unique file name)."""
        if name in self.sources:
            return self.sources[name]
        hits = [s for rel, s in self.sources.items() if rel.split('/')[-1] == name]
        if len(hits) == 1:
            return hits[0]
        self.problem(f'{where}: names {name}, which is ' +
                     ('not a file in actors/' if not hits else 'more than one file in actors/'))
        return None

    def area_of(self, rel):
        return 'remote' if rel.startswith('remote/') else 'engine'

    def check_area(self, area, spec):
        structs, rows, actors, trait_types = {}, [], {}, set()
        for t in spec['tables']:
            path = self.actors / t
            text = code_of(path.read_text())
            for s in re.findall(r'^struct (\w+) \{', text, re.M):
                structs[s] = t
            for table in tables(path):
                head = table[0][0].lower()
                if head == 'message':
                    rows += [(t, r) for r in table[1:]]
                elif head == 'actor':
                    for r in table[1:]:
                        actors[r[0]] = (t, r)
        trait_file = self.actors / spec['trait_file']
        if trait_file.exists():
            trait = re.search(spec['trait'] + r' =(.*?);', code_of(trait_file.read_text()), re.S)
            if trait:
                trait_types = set(re.findall(r'std::is_same_v<M, (\w+)>', trait.group(1)))
        if not trait_types:
            self.problem(f'actors/{spec["trait_file"]}: no {spec["trait"]} trait found')
        listed = set()
        for t, r in rows:
            listed.add(r[0])
            if len(r) > 4 and r[4]:
                listed |= set(re.findall(r'\w+', r[4]))
        for s, t in sorted(structs.items()):
            if s not in listed:
                self.problem(f'actors/{t}: struct {s} has no row in a message table')
            if s not in trait_types:
                self.problem(f'actors/{t}: struct {s} is missing from {spec["trait"]} '
                             f'(actors/{spec["trait_file"]})')
        for name, (t, r) in actors.items():
            for p in places(r[1]):
                if p:
                    src = self.source(p[0], f'actors/{t}: actor {name}')
                    for cls in p[1]:
                        if src and not re.search(r'\b(class|struct)\s+' + cls + r'\b', src.code) \
                                and not src.bodies(cls):
                            self.problem(f'actors/{t}: actor {name}: {p[0]} declares no {cls}')
        senders = {}
        for t, r in rows:
            self.check_row(area, spec, t, r, structs, actors, senders)
        self.check_sends_listed(area, spec, structs, senders)

    def check_row(self, area, spec, t, r, structs, actors, senders):
        where = f'actors/{t}: row {r[0]}'
        if len(r) < 4:
            self.problem(f'{where}: has {len(r)} columns, not 4 or more')
            return
        message, sent, received, handled = r[:4]
        reply = r[4] if len(r) > 4 and r[4] not in ('', '-') else None
        if message not in structs:
            self.problem(f'{where}: {message} is not a struct declared in the area\'s tables\' headers')
            return
        if reply and reply not in structs:
            self.problem(f'{where}: its reply {reply} is not a declared struct')
        for p in places(sent):
            if not p:
                continue
            src = self.source(p[0], where)
            if not src:
                continue
            for f in p[1]:
                if not src.bodies(f):
                    self.problem(f'{where}: sender {p[0]}: {f} is not defined there')
                    continue
                senders.setdefault(message, set()).add((src.rel, f))
                if reply:  # naming the reply is expecting it, not sending it
                    senders.setdefault(reply, set()).add((src.rel, f))
                reach = src.reach(f)
                text = src.text_of(reach)
                if not calls_any(text, spec['calls']):
                    self.problem(f'{where}: sender {p[0]}: {f} calls none of '
                                 f'{", ".join(sorted(spec["calls"]))} (actors/{spec["helper"]})')
                elif not named(text, message) and not (
                        re.search(r'(?<![\w:])forward\s*\(', text) and handles(src.code, message)):
                    self.problem(f'{where}: sender {p[0]}: {f} sends no {message} '
                                 '(the type is not named there)')
                if reply and not named(text, reply):
                    self.problem(f'{where}: sender {p[0]}: {f} does not expect the reply {reply}')
        expected = set()
        for name in split_top(received, ','):
            name = re.sub(r'^(the|a|an|then an?|then the)\s+', '', name)
            if name not in actors:
                self.problem(f'{where}: receiver "{name}" is not in the actor table')
                continue
            expected |= {(p[0], tuple(p[1])) for p in places(actors[name][1][2]) if p}
        got = set()
        for p in places(handled):
            if p:
                got.add((p[0], tuple(p[1])))
        flat = lambda s: {(f, fn) for f, fns in s for fn in fns}
        for f, fn in sorted(flat(expected) - flat(got)):
            self.problem(f'{where}: handled in does not list {f}: {fn}, the handler of a receiver')
        for f, fn in sorted(flat(got) - flat(expected)):
            self.problem(f'{where}: handled in lists {f}: {fn}, which handles none of its receivers')
        for f, fn in sorted(flat(got)):
            src = self.source(f, where)
            if not src:
                continue
            bodies = src.text_of([fn])
            if not bodies:
                self.problem(f'{where}: handler {f}: {fn} is not defined there')
            elif not handles(bodies, message):
                self.problem(f'{where}: handler {f}: {fn} does not handle {message} '
                             f'(no is<{message}>() nor a clause taking it)')

    def check_sends_listed(self, area, spec, structs, senders):
        helper = spec['helper']
        for rel, src in self.sources.items():
            if self.area_of(rel) != area or rel == helper or rel in spec['tables']:
                continue
            for name, s, e in src.defs:
                body = src.code[s:e]
                if not calls_any(body, spec['calls']):
                    continue
                callers = {n for n, _, _ in src.defs if name in src.reach(n)}
                for message in structs:
                    if not named(body, message):
                        continue
                    listed = senders.get(message, set())
                    if not any((rel, c) in listed or (rel, c.split('::')[-1]) in listed
                               for c in callers):
                        self.problem(f'actors/{rel}:{src.line(s)}: {name} sends {message}, '
                                     f'but {message}\'s row does not list it as a sender')

    def check_raw(self):
        helpers = {spec['helper'] for spec in AREAS.values()}
        for rel, src in self.sources.items():
            if rel in helpers:
                continue
            for m in RAW.finditer(src.code):
                before = src.code[max(0, m.start() - 60):m.start()]
                method = m.group(0).lstrip().startswith(('->', '.'))
                word = re.search(r'(\w+)\s*$', before)
                if not method and word and word.group(1) not in NOT_A_TYPE:
                    continue  # a declaration of a function of that name
                if not method and re.search(r'[&*]\s*$', before):
                    continue
                if m.group(1) == 'enqueue' and re.search(r'\w+::\s*$', before) and \
                        src.enclosing(m.start()) and src.enclosing(m.start()).endswith('::enqueue'):
                    continue  # an enqueue override handing the element to its base's mailbox
                area = self.area_of(rel)
                self.problem(f'actors/{rel}:{src.line(m.start())}: raw {m.group(1)} (send through '
                             f'actors/{AREAS[area]["helper"]})')

    def run(self):
        for area, spec in AREAS.items():
            self.check_area(area, spec)
        self.check_raw()
        return self.problems


def report(check, problems):
    """Prints each problem and a count; the exit status: 1 when there are any."""
    for p in problems:
        print(p)
    print(f'{check}: {len(problems)} problems')
    return 1 if problems else 0


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    return report('check_messages', Checker(pathlib.Path(sys.argv[1])).run())


if __name__ == '__main__':
    sys.exit(main())
