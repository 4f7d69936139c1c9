#!/usr/bin/env bash
#
# pushdown.sh - lance_fdw filter pushdown: 1 %-selective queries and IN lists
# of 8 and 1000 random ids, with the
# pushed clauses evaluated while decoding, against the same queries with
# lance_parts.fdw_pushdown off (every column of every row decoded and
# converted, then filtered by the executor); recorded in docs/BENCHMARKS.md
# with the command line that produced them.
#
#   sudo bench/pushdown.sh [--rows N] [--reps N] [--workers N] [--no-append]
#
# Needs root (the server runs as the postgres user).  The set-up (what is
# installed, the throwaway cluster, the work directory) is bench/common.sh's.
#
# Data: --rows (default 4,194,304) rows in 4 fragments written by npm
# lancedb (bench/generate.cjs: id int64, value float64 uniform in [0, 1),
# label utf8 and emb fixed_size_list<float32>[8]).  Each query is timed as
# the median of --reps runs (default 3) through psql, session
# start excluded (psql's \timing); count(t.*) forms every row that passes,
# so every column of it is decoded and converted.  --workers N sets
# max_parallel_workers_per_gather for every query (default: the server's, 2).
#
set -euo pipefail

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
COMMAND="bench/pushdown.sh${*:+ $*}"
ROWS=4194304
REPS=3
WORKERS=

while [ $# -gt 0 ]; do
	case "$1" in
		--rows) ROWS=$2; shift ;;
		--reps) REPS=$2; shift ;;
		--workers) WORKERS=$2; shift ;;
		--no-append) APPEND=false ;;
		*) echo "usage: bench/pushdown.sh [--rows N] [--reps N] [--workers N] [--no-append]" >&2; exit 2 ;;
	esac
	shift
done
sql() { psql -X -Atq -v ON_ERROR_STOP=1 ${WORKERS:+-c "SET max_parallel_workers_per_gather = $WORKERS"} "$@"; }

# seconds SETTING QUERY - seconds of QUERY with lance_parts.fdw_pushdown = SETTING, as psql's
# \timing reports it (planning and execution, without the session's start)
seconds()
{
	sql -c "SET lance_parts.fdw_pushdown = $1" -c '\timing on' -c "$2" |
		sed -nE 's/^Time: ([0-9.]+) ms.*/\1/p' | awk '{ printf "%.3f", $1 / 1000 }'
}

bench_start lp-pushdown

log "generating $ROWS rows with npm lancedb"
mkdir -p "$WORK/data"
node "$ROOT/bench/generate.cjs" dataset "$WORK/data" scan 4 $((ROWS / 4 * 72)) 8 >"$WORK/scan.json"
chown -R postgres: "$WORK/data"
SCAN_ROWS=$(node -p "JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8')).rows" "$WORK/scan.json")
sql -c "CREATE SERVER bench_scan FOREIGN DATA WRAPPER lance_fdw" \
	-c "CREATE FOREIGN TABLE scan (id bigint, value double precision, label text, emb real[]) SERVER bench_scan OPTIONS (uri '$WORK/data/scan.lance')"
# the data files in the page cache before anything is timed
sql -c "SELECT count(t.*) FROM scan t" >/dev/null

bench_header " (times are medians of $REPS runs, in seconds, as psql's \`\\timing\` reports them: without the session's start)."
out ""
out "### Filter pushdown, $SCAN_ROWS rows, ext4"
out ""
out "Columns id int64, value float64 (uniform in [0, 1)), label utf8 and emb fixed_size_list<float32>[8] (file version"
out "2.1, 4 fragments, written by npm lancedb). Each query counts whole rows (\`count(t.*)\`: every column of a row that"
out "passes is decoded and converted). \"off\" is \`SET lance_parts.fdw_pushdown = off\`: the executor filters after every"
out "column of every row was decoded and converted."
out ""
out "| query | rows returned | pushdown off, s | pushdown on, s | speed-up |"
out "|---|---:|---:|---:|---:|"
# random ids (a fixed seed) for the IN lists; the table shows their count, not the list
ids() { awk -v n="$1" -v rows="$SCAN_ROWS" -v seed="$2" 'BEGIN { srand(seed); for (i = 0; i < n; i++) printf "%s%d", (i ? ", " : ""), int(rand() * rows) }'; }
IN_8="id IN ($(ids 8 27))"
IN_1000="id IN ($(ids 1000 28))"
for clause in "value < 0.01" "id < $((SCAN_ROWS / 100))" "value < 0.01 AND label LIKE '%x%'" "$IN_8" "$IN_1000"; do
	query="SELECT count(t.*) FROM scan t WHERE $clause"
	case "$clause" in
		"$IN_8") shown="id IN (8 random ids)" ;;
		"$IN_1000") shown="id IN (1000 random ids)" ;;
		*) shown=$clause ;;
	esac
	returned=$(sql -c "$query")
	off_times=""
	on_times=""
	for rep in $(seq "$REPS"); do
		log "$clause: run $rep of $REPS"
		off_times+="$(seconds off "$query") "
		on_times+="$(seconds on "$query") "
	done
	off_times=$(echo "$off_times" | median)
	on_times=$(echo "$on_times" | median)
	out "| \`WHERE $shown\` | $returned | $off_times | $on_times | $(ratio "$off_times" "$on_times")× |"
done
out ""
out "The pushed clauses and counters of the first query (\`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)\`):"
out ""
out '```'
sql -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(t.*) FROM scan t WHERE value < 0.01" |
	sed "s|$WORK|\$WORK|g" >>"$RESULTS"
out '```'
out ""

bench_finish
