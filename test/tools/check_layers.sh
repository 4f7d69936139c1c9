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

exit "$failed"
