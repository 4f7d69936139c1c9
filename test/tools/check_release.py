#!/usr/bin/env python3
"""check_release.py [ROOT] - the release metadata agree with each other and
with the PGXN meta spec 1.0.0 (test/run.sh, layer "layout").  Prints "ok NAME"
or "FAILED NAME" and the reasons for each check; exits non-zero when any
check failed.

  meta-json   META.json is JSON with the keys, and only the keys, of the
              meta spec 1.0.0 (https://pgxn.org/meta/spec.txt), SemVer
              versions, a known license key, and provided files that exist
  versions    one release version everywhere: META.json (distribution and
              every extension it provides), lance_parts.control's
              default_version, the Makefile's EXTVERSION and debian/changelog,
              and sql/lance_parts--VERSION.sql is the file META.json provides
  majors      the oldest PostgreSQL major is the same in META.json's runtime
              prerequisite and in debian/pgversions ("N+")
"""
import json
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
EXTENSION = 'lance_parts'

SEMVER = re.compile(r'^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$')
# A version range: comma-separated clauses, each an optional operator and a
# SemVer, or 0 for "any version".
RANGE_CLAUSE = re.compile(r'^\s*(?:(==|!=|<=|>=|<|>)\s*)?(\S+)\s*$')
LICENSES = {
    'agpl_3', 'apache_1_1', 'apache_2_0', 'artistic_1', 'artistic_2', 'bsd', 'freebsd', 'gfdl_1_2',
    'gfdl_1_3', 'gpl_1', 'gpl_2', 'gpl_3', 'lgpl_2_1', 'lgpl_3_0', 'mit', 'mozilla_1_0', 'mozilla_1_1',
    'openssl', 'perl_5', 'postgresql', 'qpl_1_0', 'ssleay', 'sun', 'zlib', 'open_source', 'restricted',
    'unrestricted', 'unknown',
}
REQUIRED = {'name', 'abstract', 'version', 'maintainer', 'license', 'provides', 'meta-spec'}
OPTIONAL = {'description', 'generated_by', 'tags', 'no_index', 'prereqs', 'release_status', 'resources'}
EXTENSION_KEYS = {'file', 'version', 'abstract', 'docfile', 'docpath'}
PHASES = {'configure', 'build', 'test', 'runtime', 'develop'}
RELATIONS = {'requires', 'recommends', 'suggests', 'conflicts'}

failed = False


def check(name, problems):
    global failed
    if problems:
        print('FAILED ' + name)
        for problem in problems:
            print('    ' + problem)
        failed = True
    else:
        print('ok ' + name)


def read(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as f:
        return f.read()


def custom(key):
    return re.match(r'^[xX]_.', key) is not None


def version_range_problems(where, value):
    if not isinstance(value, str):
        return [where + ': a version range must be a string']
    problems = []
    for clause in value.split(','):
        m = RANGE_CLAUSE.match(clause)
        if not m or not (m.group(2) == '0' or SEMVER.match(m.group(2))):
            problems.append(where + ': "' + clause.strip() + '" is no version clause')
    return problems


def meta_problems(meta):
    problems = []
    if not isinstance(meta, dict):
        return ['the top level is not an object']
    for key in sorted(REQUIRED - meta.keys()):
        problems.append('missing key "' + key + '"')
    for key in sorted(meta.keys() - REQUIRED - OPTIONAL):
        if not custom(key):
            problems.append('unknown key "' + key + '"')
    spec = meta.get('meta-spec', {})
    if not isinstance(spec, dict) or not re.match(r'^1\.0\.\d+$', str(spec.get('version', ''))):
        problems.append('meta-spec.version is not 1.0.x')
    if not SEMVER.match(str(meta.get('version', ''))):
        problems.append('version "' + str(meta.get('version')) + '" is not SemVer')
    for key in ('name', 'abstract'):
        if not isinstance(meta.get(key), str) or not meta.get(key):
            problems.append(key + ' must be a non-empty string')
    license_ = meta.get('license')
    if isinstance(license_, dict):
        known = bool(license_) and all(isinstance(url, str) for url in license_.values())
    else:
        names = [license_] if isinstance(license_, str) else license_
        known = isinstance(names, list) and bool(names) and all(n in LICENSES for n in names)
    if not known:
        problems.append('license ' + json.dumps(license_) + ' is not a key of the meta spec')
    provides = meta.get('provides')
    if not isinstance(provides, dict) or not provides:
        problems.append('provides must name at least one extension')
        provides = {}
    for name, ext in provides.items():
        if not isinstance(ext, dict):
            problems.append('provides.' + name + ' is not an object')
            continue
        for key in sorted({'file', 'version'} - ext.keys()):
            problems.append('provides.' + name + ' lacks "' + key + '"')
        for key in sorted(ext.keys() - EXTENSION_KEYS):
            if not custom(key):
                problems.append('provides.' + name + ' has unknown key "' + key + '"')
        if 'version' in ext and not SEMVER.match(str(ext['version'])):
            problems.append('provides.' + name + '.version is not SemVer')
        for key in ('file', 'docfile'):
            if key in ext and not os.path.isfile(os.path.join(ROOT, ext[key])):
                problems.append('provides.' + name + '.' + key + ' "' + ext[key] + '" is no file of the tree')
    for phase, relations in (meta.get('prereqs') or {}).items():
        if phase not in PHASES:
            problems.append('prereqs has unknown phase "' + phase + '"')
            continue
        for relation, prereqs in relations.items():
            if relation not in RELATIONS:
                problems.append('prereqs.' + phase + ' has unknown relation "' + relation + '"')
                continue
            for name, value in prereqs.items():
                problems += version_range_problems('prereqs.' + phase + '.' + relation + '.' + name, value)
    tags = meta.get('tags', ['ok'])
    if not isinstance(tags, list) or not tags or len(set(tags)) != len(tags) or \
            any(not isinstance(t, str) or len(t) < 2 or '/' in t or '\\' in t for t in tags):
        problems.append('tags must be distinct strings of 2 characters or more, without slashes')
    if meta.get('release_status', 'stable') not in ('stable', 'testing', 'unstable'):
        problems.append('release_status must be stable, testing or unstable')
    return problems


try:
    META = json.loads(read('META.json'))
    check('meta-json', meta_problems(META))
except (OSError, ValueError) as e:
    check('meta-json', ['META.json: ' + str(e)])
    META = {}


def first(pattern, text, what):
    m = re.search(pattern, text, re.M)
    return m.group(1) if m else '(no ' + what + ')'


versions = {}
versions['META.json version'] = str(META.get('version'))
for name, ext in (META.get('provides') or {}).items():
    if isinstance(ext, dict):
        versions['META.json provides.' + name + '.version'] = str(ext.get('version'))
versions[EXTENSION + '.control default_version'] = first(
    r"^\s*default_version\s*=\s*'([^']*)'", read(EXTENSION + '.control'), 'default_version')
versions['Makefile EXTVERSION'] = first(r'^EXTVERSION\s*=\s*(\S+)', read('Makefile'), 'EXTVERSION')
versions['debian/changelog'] = first(r'^\S+ \(([^)]*)\)', read('debian/changelog'), 'entry')
release = versions[EXTENSION + '.control default_version']
problems = [where + ' is ' + v + ', ' + EXTENSION + '.control says ' + release
            for where, v in versions.items() if v != release]
install_script = 'sql/' + EXTENSION + '--' + release + '.sql'
if not os.path.isfile(os.path.join(ROOT, install_script)):
    problems.append(install_script + ' does not exist')
provided = (META.get('provides') or {}).get(EXTENSION)
if not isinstance(provided, dict) or provided.get('file') != install_script:
    problems.append('META.json does not provide ' + EXTENSION + ' with file ' + install_script)
check('versions', problems)

requires = (((META.get('prereqs') or {}).get('runtime') or {}).get('requires') or {}).get('PostgreSQL', '')
meta_major = first(r'^(?:>=\s*)?(\d+)\.\d+\.\d+$', requires, 'minimum version')
debian_major = first(r'^(\d+)\+$', read('debian/pgversions'), '"N+" line')
check('majors', [] if meta_major == debian_major else
      ['META.json requires PostgreSQL ' + requires + ' (major ' + meta_major +
       '), debian/pgversions starts at ' + debian_major])
sys.exit(1 if failed else 0)
