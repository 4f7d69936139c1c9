#!/usr/bin/env bash
#
# topk.sh - exact top-k in the lance_fdw scan: ORDER BY emb <op> q LIMIT k
# answered by the scan (distances on the decoded vectors, a bounded heap,
# the other columns decoded for the k rows kept) against today's plan, a
# full decode and a Sort (SET lance_parts.fdw_topk = off), in one run;
# inserted at the top of docs/BENCHMARKS.md with the command line that
# produced them.
#
#   sudo bench/topk.sh [--rows N] [--dim N] [--reps N] [--no-append]
#
# Needs root (the server runs as the postgres user) and pgvector in the
# server.  The set-up (what is installed, the throwaway cluster, the work
# directory) is bench/common.sh's.
#
# Data: --rows (default 262,144) rows in 4 fragments written by npm lancedb
# (bench/generate.cjs: id int64, value float64 uniform in [0, 1), label
# utf8 and emb fixed_size_list<float32>[--dim], default 128), read through a
# foreign table declaring emb vector(dim).  Each query is timed as the
# median of --reps runs (default 3) through psql, session start excluded
# (psql's \timing), serially and with 2 parallel workers; the two plans
# must return the same ids.
#
set -euo pipefail

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
COMMAND="bench/topk.sh${*:+ $*}"
ROWS=262144
DIM=128
REPS=3

while [ $# -gt 0 ]; do
	case "$1" in
		--rows) ROWS=$2; shift ;;
		--dim) DIM=$2; shift ;;
		--reps) REPS=$2; shift ;;
		--no-append) APPEND=false ;;
		*) echo "usage: bench/topk.sh [--rows N] [--dim N] [--reps N] [--no-append]" >&2; exit 2 ;;
	esac
	shift
done
sql() { psql -X -Atq -v ON_ERROR_STOP=1 "$@"; }

# seconds TOPK WORKERS QUERY - seconds of QUERY with lance_parts.fdw_topk = TOPK and at most
# WORKERS parallel workers, as psql's \timing reports it (planning and execution)
seconds()
{
	sql -c "SET lance_parts.fdw_topk = $1" -c "SET max_parallel_workers_per_gather = $2" \
		-c '\timing on' -c "$3" | sed -nE 's/^Time: ([0-9.]+) ms.*/\1/p' | awk '{ printf "%.3f", $1 / 1000 }'
}

# ids TOPK WORKERS QUERY - the ids QUERY returns, in order
ids()
{
	sql -c "SET lance_parts.fdw_topk = $1" -c "SET max_parallel_workers_per_gather = $2" -c "$3" |
		cut -d'|' -f1 | tr '\n' ' '
}

bench_start lp-topk
sql -c "CREATE EXTENSION vector"

log "generating $ROWS rows of $DIM dimensions with npm lancedb"
mkdir -p "$WORK/data"
node "$ROOT/bench/generate.cjs" dataset "$WORK/data" vectors 4 $((ROWS / 4 * (40 + 4 * DIM))) "$DIM" >"$WORK/vectors.json"
chown -R postgres: "$WORK/data"
TABLE_ROWS=$(node -p "JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8')).rows" "$WORK/vectors.json")
sql -c "CREATE SERVER bench_topk FOREIGN DATA WRAPPER lance_fdw" \
	-c "CREATE FOREIGN TABLE vectors (id bigint, value double precision, label text, emb vector($DIM)) SERVER bench_topk OPTIONS (uri '$WORK/data/vectors.lance')"
# the data files in the page cache before anything is timed
sql -c "SELECT count(t.*) FROM vectors t" >/dev/null
QUERY_VECTOR="'[$(awk -v n="$DIM" 'BEGIN { srand(27); for (i = 0; i < n; i++) printf "%s%.6f", i ? "," : "", rand() }')]'::vector"

bench_header " (times are medians of $REPS runs, in seconds, as psql's \`\\timing\` reports them: without the session's start)."
out ""
out "### Exact top-k, $TABLE_ROWS rows of vector($DIM), ext4"
out ""
out "Columns id int64, value float64 (uniform in [0, 1)), label utf8 and emb fixed_size_list<float32>[$DIM] (4 fragments,"
out "written by npm lancedb), read as \`vector($DIM)\`. Each query returns id, value, label and the distance of the k"
out "nearest rows. \"full decode + sort\" is \`SET lance_parts.fdw_topk = off\`, today's plan: every needed column of every"
out "row decoded and converted (the vectors through pgvector's text input), then a top-N Sort; \"top-k\" is the scan"
out "ranking the rows itself. Both plans returned the same ids in the same order for every query."
out ""
out "| query | workers | full decode + sort, s | top-k, s | speed-up |"
out "|---|---:|---:|---:|---:|"
for shape in "<->|10|" "<=>|10|" "<#>|100|" "<->|10|WHERE value < 0.5 "; do
	IFS='|' read -r op k where <<<"$shape"
	query="SELECT id, value, label, emb $op $QUERY_VECTOR AS d FROM vectors ${where}ORDER BY emb $op $QUERY_VECTOR LIMIT $k"
	shown="ORDER BY emb $op q LIMIT $k"
	[ -z "$where" ] || shown="${where}$shown"
	for workers in 0 2; do
		if [ "$(ids off "$workers" "$query")" != "$(ids on "$workers" "$query")" ]; then
			echo "bench: the plans return different rows for: $query" >&2
			exit 1
		fi
		off_times=""
		on_times=""
		for rep in $(seq "$REPS"); do
			log "$shown, $workers workers: run $rep of $REPS"
			off_times+="$(seconds off "$workers" "$query") "
			on_times+="$(seconds on "$workers" "$query") "
		done
		off_times=$(echo "$off_times" | median)
		on_times=$(echo "$on_times" | median)
		out "| \`$shown\` | $workers | $off_times | $on_times | $(ratio "$off_times" "$on_times")× |"
	done
done
out ""
out "The plan of the first query with 2 workers (\`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)\`, the query vector elided):"
out ""
out '```'
sql -c "SET max_parallel_workers_per_gather = 2" \
	-c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id, value, label, emb <-> $QUERY_VECTOR AS d FROM vectors ORDER BY emb <-> $QUERY_VECTOR LIMIT 10" |
	sed -e "s|$WORK|\$WORK|g" -e "s|'\[[^]]*\]'::vector|q|g" >>"$RESULTS"
out '```'
out ""

bench_finish
