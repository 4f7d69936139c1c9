#!/usr/bin/env python3
"""check_docs.py [ROOT] - the documentation covers the extension (test/run.sh,
layer "layout").  Static: reads the sources, needs no server.  Prints "ok NAME"
or "FAILED NAME" and what is missing for each check; exits non-zero when any
check failed.

  reference-objects   every function (name and argument types), view, foreign-
                      data wrapper and role of the install script of the
                      current version (default_version of lance_parts.control,
                      sql/lance_parts--VERSION.sql) has a heading in
                      docs/REFERENCE.md: "### `lance_parts.NAME(TYPES)`" for a
                      function, a heading naming the object in backticks for
                      the others
  reference-settings  every setting defined in src/pg (DefineCustom*Variable
                      "lance_parts.NAME") has a heading "### `lance_parts.NAME`"
  reference-fdw-options  every option of lance_fdw (the option table of
                      src/pg/fdw/lp_fdw_options.c) has a heading "#### `NAME`"
  reference-copy-options every COPY option of format lance
                      (src/pg/write/lp_copy_to.c) has a heading
                      "#### COPY option `NAME`"
  readme-functions    README.md links every function of the install script to
                      its entry, docs/REFERENCE.md#lance_partsNAME
  links               every relative link of README.md and docs/*.md to a
                      Markdown file names a file that exists, and its #anchor
                      (if any) an anchor of that file: an <a id="..."> or a
                      heading, as GitHub derives anchors from headings
  architecture        every file under src/ is named in docs/ARCHITECTURE.md
                      (a header may be named as "NAME.c/.h"), and every file
                      the map names exists under src/
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
EXTENSION = 'lance_parts'
failed = False


def read(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as f:
        return f.read()


def report(name, problems):
    global failed
    if problems:
        failed = True
        print('FAILED ' + name)
        for problem in problems:
            print('    ' + problem)
    else:
        print('ok ' + name)


def split_top(text):
    """Split an argument list at the commas that are not inside parentheses."""
    parts, depth, current = [], 0, ''
    for c in text:
        if c == '(':
            depth += 1
        elif c == ')':
            depth -= 1
        if c == ',' and depth == 0:
            parts.append(current)
            current = ''
        else:
            current += c
    if current.strip():
        parts.append(current)
    return [p.strip() for p in parts]


def argument_types(arguments):
    """The IN argument types of a CREATE FUNCTION argument list, normalised."""
    types = []
    for arg in split_top(arguments):
        arg = re.split(r'\s+DEFAULT\s+|\s*=\s*', arg, maxsplit=1, flags=re.I)[0].strip()
        words = arg.split()
        if words and words[0].upper() in ('OUT', 'INOUT', 'IN', 'VARIADIC'):
            if words[0].upper() == 'OUT':
                continue
            words = words[1:]
        if len(words) >= 2:          # a name, then the type
            words = words[1:]
        types.append(normalise_type(' '.join(words)))
    return types


def normalise_type(t):
    t = re.sub(r'\s+', ' ', t.strip().lower())
    t = re.sub(r'\s*\[\s*\]', '[]', t)
    return {'int': 'integer', 'int4': 'integer', 'int8': 'bigint', 'bool': 'boolean'}.get(t, t)


def install_script():
    control = read(EXTENSION + '.control')
    version = re.search(r"^\s*default_version\s*=\s*'([^']+)'", control, re.M).group(1)
    path = 'sql/%s--%s.sql' % (EXTENSION, version)
    return path, read(path)


def install_objects(sql):
    """(kind, name, types) for every object the install script creates."""
    objects = []
    for m in re.finditer(r'CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(?:@extschema@\.)?(\w+)\s*\(', sql, re.I):
        depth, i = 1, m.end()
        while depth:
            depth += {'(': 1, ')': -1}.get(sql[i], 0)
            i += 1
        objects.append(('function', m.group(1), argument_types(sql[m.end():i - 1])))
    for m in re.finditer(r'CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+(?:@extschema@\.)?(\w+)', sql, re.I):
        objects.append(('view', m.group(1), None))
    for m in re.finditer(r'CREATE\s+FOREIGN\s+DATA\s+WRAPPER\s+(\w+)', sql, re.I):
        objects.append(('foreign-data wrapper', m.group(1), None))
    for m in re.finditer(r'CREATE\s+ROLE\s+(\w+)', sql, re.I):
        objects.append(('role', m.group(1), None))
    return objects


def headings(text):
    """(level, text) of every Markdown heading outside fenced code blocks."""
    result, fenced = [], False
    for line in text.split('\n'):
        if line.startswith('```'):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r'^(#{1,6})\s+(.*?)\s*#*\s*$', line)
        if m:
            result.append((len(m.group(1)), m.group(2)))
    return result


def github_anchor(heading):
    """The anchor GitHub derives from a heading's text."""
    text = re.sub(r'<[^>]+>', '', heading)
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)
    text = text.strip().lower()
    text = re.sub(r'[^\w\- ]', '', text)
    return text.replace(' ', '-')


def anchors(text):
    found = set(re.findall(r'<a\s+(?:id|name)="([^"]+)"', text))
    seen = {}
    for _, heading in headings(text):
        anchor = github_anchor(heading)
        n = seen.get(anchor, 0)
        seen[anchor] = n + 1
        found.add(anchor if n == 0 else '%s-%d' % (anchor, n))
    return found


reference = read('docs/REFERENCE.md')
reference_headings = [h for _, h in headings(reference)]
script_path, sql = install_script()
objects = install_objects(sql)

# reference-objects
problems = []
function_headings = set()
for h in reference_headings:
    m = re.match(r'^`?%s\.(\w+)\(([^)]*)\)`?' % EXTENSION, h)
    if m:
        types = [normalise_type(t) for t in split_top(m.group(2))]
        function_headings.add((m.group(1), tuple(types)))
if not objects:
    problems.append('no object found in %s' % script_path)
for kind, name, types in objects:
    if kind == 'function':
        if (name, tuple(types)) not in function_headings:
            problems.append('function %s.%s(%s) of %s has no heading "### `%s.%s(%s)`" in docs/REFERENCE.md'
                            % (EXTENSION, name, ', '.join(types), script_path, EXTENSION, name, ', '.join(types)))
    else:
        pattern = re.compile(r'`(?:%s\.)?%s`' % (EXTENSION, re.escape(name)))
        if not any(pattern.search(h) and not re.search(r'`%s\.%s\(' % (EXTENSION, re.escape(name)), h)
                   for h in reference_headings):
            problems.append('%s %s of %s has no heading naming `%s` in docs/REFERENCE.md'
                            % (kind, name, script_path, name))
report('reference-objects', problems)

# reference-settings
problems = []
settings = set()
for directory, _, files in os.walk(os.path.join(ROOT, 'src', 'pg')):
    for f in files:
        if f.endswith('.c'):
            with open(os.path.join(directory, f), encoding='utf-8') as source:
                settings.update(re.findall(r'DefineCustom\w+Variable\(\s*"(%s\.\w+)"' % EXTENSION, source.read()))
if not settings:
    problems.append('no DefineCustom*Variable found in src/pg')
for setting in sorted(settings):
    if not any(re.match(r'^`%s`' % re.escape(setting), h) for h in reference_headings):
        problems.append('setting %s has no heading "### `%s`" in docs/REFERENCE.md' % (setting, setting))
report('reference-settings', problems)

# reference-fdw-options
problems = []
options = re.findall(r'\{\s*"(\w+)"\s*,\s*\w+RelationId\s*,', read('src/pg/fdw/lp_fdw_options.c'))
if not options:
    problems.append('no option found in src/pg/fdw/lp_fdw_options.c')
for option in options:
    if not any(re.match(r'^`%s`' % re.escape(option), h) for level, h in headings(reference) if level == 4):
        problems.append('lance_fdw option %s has no heading "#### `%s`" in docs/REFERENCE.md' % (option, option))
report('reference-fdw-options', problems)

# reference-copy-options
problems = []
copy_options = re.findall(r'strcmp\(option->defname,\s*"(\w+)"\)', read('src/pg/write/lp_copy_to.c'))
if not copy_options:
    problems.append('no option found in src/pg/write/lp_copy_to.c')
for option in copy_options:
    if not any(re.match(r'^COPY option `%s`' % re.escape(option), h) for h in reference_headings):
        problems.append('COPY option %s has no heading "#### COPY option `%s`" in docs/REFERENCE.md'
                        % (option, option))
report('reference-copy-options', problems)

# readme-functions
problems = []
readme = read('README.md')
for name in sorted({name for kind, name, _ in objects if kind == 'function'}):
    if 'docs/REFERENCE.md#%s%s)' % (EXTENSION, name) not in readme:
        problems.append('README.md has no link to docs/REFERENCE.md#%s%s' % (EXTENSION, name))
report('readme-functions', problems)

# links
problems = []
pages = ['README.md'] + sorted('docs/' + f for f in os.listdir(os.path.join(ROOT, 'docs')) if f.endswith('.md'))
anchor_cache = {}
for page in pages:
    text = read(page)
    for target in re.findall(r'\]\(([^)\s]+)\)', text):
        if re.match(r'^[a-z][a-z0-9+.-]*:', target):
            continue                          # http:, https:, mailto:
        path, _, anchor = target.partition('#')
        resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(os.path.join(ROOT, resolved)):
            problems.append('%s: link to %s: no file %s' % (page, target, resolved))
            continue
        if anchor and resolved.endswith('.md'):
            if resolved not in anchor_cache:
                anchor_cache[resolved] = anchors(read(resolved))
            if anchor not in anchor_cache[resolved]:
                problems.append('%s: link to %s: no anchor "%s" in %s' % (page, target, anchor, resolved))
report('links', problems)

# architecture
problems = []
architecture = read('docs/ARCHITECTURE.md')
named = set(re.findall(r'\b([A-Za-z0-9_]+\.(?:c|h|proto))\b', architecture))
named |= {m + '.h' for m in re.findall(r'\b([A-Za-z0-9_]+)\.c/\.h\b', architecture)}
sources = set()
for directory, _, files in os.walk(os.path.join(ROOT, 'src')):
    for f in files:
        if re.search(r'\.(c|h|proto)$', f) and not re.search(r'\.pb-c\.[ch]$', f):
            sources.add(f)
            if f not in named:
                problems.append('src/%s is not named in docs/ARCHITECTURE.md'
                                % os.path.relpath(os.path.join(directory, f), os.path.join(ROOT, 'src')))
for f in sorted(named - sources):
    if re.match(r'lp_|lance_parts\.|.*\.proto$', f):
        problems.append('docs/ARCHITECTURE.md names %s, which is no file under src/' % f)
report('architecture', problems)

sys.exit(1 if failed else 0)
