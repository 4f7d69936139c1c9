#!/usr/bin/env bash
#
# compact_takes.sh - random takes from a file that compaction by page copy
# assembled from many small fragments, against the same rows re-encoded by
# lancedb optimize(), on S3 (issue 26: page copy keeps each input fragment's
# pages, so narrow columns keep one page per input fragment); recorded in
# docs/BENCHMARKS.md with the command line that produced them.
#
#   sudo bench/compact_takes.sh [--fragments N] [--fragment-kb N] [--takes N] [--no-append]
#
# Needs root (the server runs as the postgres user).  The set-up is
# bench/common.sh's; the S3 server is scripts/s3-server.sh's Ceph RGW on
# loopback (LP_S3_PORT, LP_S3_MON_PORT, LP_S3_OSD_PORTS).
#
# Data: two identical datasets of --fragments (default 64) fragments of
# about --fragment-kb (default 1024) KiB each, written by npm lancedb
# (bench/generate.cjs: id int64, value float64, label utf8, a 128-float32
# vector).  One is compacted by lance_parts.compact, the other by lancedb
# optimize(); then lancedb takes --takes (default 300) times 10 random row
# offsets from each (bench/takes.cjs, the same offsets for both), and the
# median and 90th percentile of a take are compared.
#
set -euo pipefail
shopt -s inherit_errexit	# a failure inside $(...) ends the run too

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
COMMAND="bench/compact_takes.sh${*:+ $*}"
FRAGMENTS=64
FRAGMENT_KB=1024
TAKES=300

while [ $# -gt 0 ]; do
	case "$1" in
		--fragments) FRAGMENTS=$2; shift ;;
		--fragment-kb) FRAGMENT_KB=$2; shift ;;
		--takes) TAKES=$2; shift ;;
		--no-append) APPEND=false ;;
		*) echo "usage: bench/compact_takes.sh [--fragments N] [--fragment-kb N] [--takes N] [--no-append]" >&2; exit 2 ;;
	esac
	shift
done
bench_start lp-compact-takes

sql() { psql -X -Atq -v ON_ERROR_STOP=1 "$@"; }

bench_s3_start $(( (FRAGMENTS * FRAGMENT_KB * 6 / 1024 + 1024) << 20 ))

log "generating two datasets of $FRAGMENTS fragments with npm lancedb"
for name in copied reencoded; do
	node "$ROOT/bench/generate.cjs" dataset "$BASE" "$name" "$FRAGMENTS" $((FRAGMENT_KB << 10)) >"$WORK/$name.json"
done
ROWS=$(node -p "JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8')).rows" "$WORK/copied.json")

log "compacting: lance_parts.compact and lancedb optimize()"
COMPACT_S=$(sql -c '\timing on' -c "SELECT count(*) FROM lance_parts.compact('$BASE/copied.lance')" |
	sed -nE 's/^Time: ([0-9.]+) ms.*/\1/p' | awk '{ printf "%.2f", $1 / 1000 }')
OPTIMIZE_S=$(node "$ROOT/bench/optimize.cjs" "$BASE" reencoded | node -p "JSON.parse(require('fs').readFileSync(0, 'utf8')).seconds.toFixed(2)")
FRAGMENTS_AFTER=$(node -e "
const { connect } = require('$ROOT/bench/connect.cjs');
(async () => { const db = await connect('$BASE');
  for (const n of ['copied', 'reencoded']) process.stdout.write((await (await db.openTable(n)).stats()).fragmentStats.numFragments + ' '); })();")

log "random takes"
COPIED=$(node "$ROOT/bench/takes.cjs" "$BASE" copied "$TAKES" 10)
REENCODED=$(node "$ROOT/bench/takes.cjs" "$BASE" reencoded "$TAKES" 10)
field() { node -p "JSON.parse(process.argv[1]).$2" "$1"; }

bench_header " (lancedb's takes timed inside node; each dataset taken at the same random offsets)."
out ""
out "### Random takes after compaction, $ROWS rows from $FRAGMENTS fragments, on S3 (Ceph RGW on loopback)"
out ""
out "Columns id int64, value float64, label utf8 and a 128-float32 vector (file version 2.1, written by npm lancedb in"
out "$FRAGMENTS fragments of about $FRAGMENT_KB KiB). \"page copy\" is \`lance_parts.compact\` ($COMPACT_S s), \"re-encoded\""
out "is lancedb \`optimize()\` ($OPTIMIZE_S s); fragments after: $FRAGMENTS_AFTER(page copy, re-encoded). A take is"
out "\`takeOffsets\` of 10 random row offsets, $TAKES takes per dataset."
out ""
out "| dataset | median take, ms | 90th percentile, ms |"
out "|---|---:|---:|"
out "| page copy | $(field "$COPIED" median_ms) | $(field "$COPIED" p90_ms) |"
out "| re-encoded | $(field "$REENCODED" median_ms) | $(field "$REENCODED" p90_ms) |"
out "| ratio (page copy / re-encoded) | $(ratio "$(field "$COPIED" median_ms)" "$(field "$REENCODED" median_ms)") | $(ratio "$(field "$COPIED" p90_ms)" "$(field "$REENCODED" p90_ms)") |"
out ""

bench_finish
