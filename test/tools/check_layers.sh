#!/usr/bin/env bash
#
# check_layers.sh [ROOT] - the layer rules of the source tree, checked by
# grep over the sources (test/run.sh, layer "layout").  Prints "ok NAME" or
# "FAILED NAME" and the offending lines for each check; exits non-zero when
# any check failed.
#
#   protobuf   no file of the PostgreSQL layer (src/ outside src/core and the
#              generated src/proto) mentions a protobuf-c type or header: the
#              wire format is the core's business (lp_manifest_internal.h)
#   core       no file of the core includes a PostgreSQL header (the core
#              library is also compiled without PostgreSQL's include
#              directories, so such an include would not even build)
#   cycles     no cycle in the include/call graph of src/, and no core file
#              depending on one outside the core (check_cycles.py)
set -uo pipefail

ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
failed=0

# check NAME MATCHES - report a check whose offending lines are MATCHES.
check()
{
	local name=$1 matches=$2
	if [ -z "$matches" ]; then
		echo "ok $name"
	else
		echo "FAILED $name"
		printf '%s\n' "$matches" | sed 's/^/    /'
		failed=1
	fi
}

check protobuf "$(cd "$ROOT" && grep -rnE 'Lance__|LANCE__|\.pb-c\.h|protobuf-c' src \
	--include='*.c' --include='*.h' --exclude-dir=core --exclude-dir=proto)"

check core "$(cd "$ROOT" && grep -rnE '#\s*include\s*[<"](postgres|postgres_fe|fmgr|miscadmin|funcapi|pgstat)\.h[>"]|#\s*include\s*[<"](access|catalog|commands|executor|lib|nodes|optimizer|parser|port|storage|tcop|utils|common)/' \
	src/core --include='*.c' --include='*.h')"

check cycles "$(python3 "$ROOT/test/tools/check_cycles.py" "$ROOT/src" 2>/dev/null)"

exit "$failed"
