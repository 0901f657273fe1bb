#!/usr/bin/env python3
# Every repository path a comment cites must exist (issue 38: comments that
# lie are bugs). Reads the comments of the tracked C sources and headers
# (/* */ and //), of CMake files, shell and Python scripts and Makefiles (#),
# and the whole text of the Markdown files; a citation is a word that starts
# with one of the repository's top-level folders (host/, tests/, scripts/,
# ...) followed by a path: `host/src/quantize/quantize_plan.c`,
# `tests/parity/`, `host/src/base/json.h:120`. Words with a wildcard or a
# placeholder (`*`, `<`, `{`, `$`, `%`, `...`) are patterns, not citations.
# Another project's path is cited with its owner shortly before it
# ("llama.cpp's tools/quantize/quantize.cpp", "ggml's src/...") and is not
# checked; a build output is cited by the source it is built from.
#
#   scripts/check-paths.py       list each citation that names no file or
#                                folder (file:line: path); exit 1 if any
#
# No dependencies beyond python3; run by `make format-check`.
import os, re, subprocess, sys

root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
os.chdir(root)
files = subprocess.run(['git', 'ls-files', '-co', '--exclude-standard'], capture_output=True,
                       text=True, check=True).stdout.split('\n')
files = [f for f in files if f and os.path.isfile(f)]
# Top-level folders of the checkout; build outputs are not citations.
tops = sorted({f.split('/')[0] for f in files if '/' in f} - {'build', 'shared'})
cite = re.compile(r'(?<![\w./@:-])((?:%s)/[\w./+-]*)' % '|'.join(map(re.escape, tops)))


def c_comments(text):
    """(line, comment text) of each /* */ and // comment, strings skipped."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        ch = text[i]
        if ch == '\n':
            line += 1
            i += 1
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append((line, text[i:j]))
            line += text.count('\n', i, j)
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append((line, text[i:j]))
            i = j
        elif ch in '"\'':
            j = i + 1
            while j < n and text[j] != ch and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            i = j + 1
        else:
            i += 1
    return out


def hash_comments(text):
    out = []
    for k, ln in enumerate(text.split('\n'), 1):
        m = re.search(r'(?:^|\s)#(?!include|define|!)(.*)', ln)
        if m:
            out.append((k, m.group(1)))
    return out


def kind(f):
    base = os.path.basename(f)
    if re.search(r'\.(c|h|cc|cpp|inc)$', base):
        return c_comments
    if base in ('CMakeLists.txt', 'Makefile') or re.search(r'\.(cmake|sh|py)$', base):
        return hash_comments
    if base.endswith('.md'):
        return lambda t: [(k, ln) for k, ln in enumerate(t.split('\n'), 1)]
    return None


bad = 0
for f in files:
    reader = kind(f)
    if reader is None or f == 'scripts/check-paths.py':
        continue
    try:
        text = open(f, encoding='utf-8').read()
    except (UnicodeDecodeError, OSError):
        continue
    for line, comment in reader(text):
        for m in cite.finditer(comment):
            p = m.group(1)
            if re.search(r'[*<{$%]|\.\.\.', comment[m.start():m.end() + 1]):
                continue
            if re.search(r"llama\.cpp|ggml|'s\s*$", comment[max(0, m.start() - 64):m.start()]):
                continue
            p = re.sub(r'(:\d+)+$', '', p).rstrip('.,;:')
            if not p or os.path.exists(p):
                continue
            print('%s:%d: %s' % (f, line + comment.count('\n', 0, m.start()), p))
            bad += 1
if bad:
    print('check-paths: %d cited paths do not exist; fix the citation (or the file)' % bad,
          file=sys.stderr)
    sys.exit(1)
print('check-paths: every cited path exists')
