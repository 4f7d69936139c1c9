#!/usr/bin/env bash
#
# scalar_index.sh - lance_fdw with Lance scalar indexes: IN lists of 8 and
# 1000 random ids out of --rows rows through a BTREE index on id, and
# equality and a 4-value IN list on a low-cardinality column (1000 values)
# through a BITMAP index, read with the index (lance_parts.fdw_scalar_index
# on) and without it (off: every row read and tested), against lancedb's own
# query with the same filter on the same dataset (with the index, and on a
# copy without it) and against a heap table with a btree index; recorded in
# docs/BENCHMARKS.md with the command line that produced them.
#
#   sudo bench/scalar_index.sh [--rows N] [--reps N] [--no-append]
#
# Needs root (the server runs as the postgres user).  The set-up (what is
# installed, the throwaway cluster, the work directory) is bench/common.sh's.
#
# Data: --rows (default 10,000,000) rows in 8 fragments written by npm
# lancedb (bench/generate.cjs: id int64, value float64, label utf8, emb
# fixed_size_list<float32>[8]), a column category int32 = id % 1000 added by
# lancedb's addColumns (a second data file per fragment: every thousandth
# row holds a value, so its rows are spread over every page), then a BTREE
# index on id and a BITMAP index on category (lancedb's createIndex,
# bench/scalar_index.cjs).  Each query returns whole rows
# (count(t.*) in PostgreSQL: every column decoded and converted; lancedb's
# query().where() into Arrow) and is timed as the median of --reps runs
# (default 3), each in a new session: psql's \timing (planning and
# execution, without the session's start), and in node the dataset's
# opening and the query, in a fresh process each time (no index pages
# cached from an earlier run on either side).  Serial scans
# (max_parallel_workers_per_gather = 0).
#
set -euo pipefail

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
COMMAND="bench/scalar_index.sh${*:+ $*}"
ROWS=10000000
REPS=3

while [ $# -gt 0 ]; do
	case "$1" in
		--rows) ROWS=$2; shift ;;
		--reps) REPS=$2; shift ;;
		--no-append) APPEND=false ;;
		*) echo "usage: bench/scalar_index.sh [--rows N] [--reps N] [--no-append]" >&2; exit 2 ;;
	esac
	shift
done
sql() { psql -X -Atq -v ON_ERROR_STOP=1 -c "SET max_parallel_workers_per_gather = 0" "$@"; }

# seconds SETTINGS QUERY - median seconds of QUERY after SETTINGS over REPS runs, as psql's \timing reports it
seconds()
{
	local times="" rep
	for rep in $(seq "$REPS"); do
		times+="$(sql -c "$1" -c '\timing on' -c "$2" | sed -nE 's/^Time: ([0-9.]+) ms.*/\1/p' |
			awk '{ printf "%.4f", $1 / 1000 }') "
	done
	echo "$times" | median
}

# lancedb_seconds NAME WHERE - median seconds of lancedb's query on dataset NAME, each run in a
# fresh process (opening the dataset included, as planning is in psql's time), and its rows
lancedb_seconds()
{
	local times="" rows="" rep seconds
	for rep in $(seq "$REPS"); do
		read -r seconds rows < <(node "$ROOT/bench/scalar_index.cjs" query "$WORK/data" "$1" "$2")
		times+="$seconds "
	done
	echo "$(echo "$times" | median) $rows"
}

bench_start lp-scalar-index

log "generating $ROWS rows with npm lancedb"
mkdir -p "$WORK/data"
node "$ROOT/bench/generate.cjs" dataset "$WORK/data" scan 8 $((ROWS / 8 * 72)) 8 >"$WORK/scan.json"
SCAN_ROWS=$(node -p "JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8')).rows" "$WORK/scan.json")
log "category column (lancedb addColumns)"
node "$ROOT/bench/scalar_index.cjs" category "$WORK/data" scan
cp -a "$WORK/data/scan.lance" "$WORK/data/noindex.lance"
# seconds_of COMMAND... - wall-clock seconds of COMMAND, one decimal
seconds_of() { local a; a=$(date +%s.%N); "$@"; awk -v a="$a" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
log "BTREE index on id, BITMAP index on category (lancedb)"
btree_seconds=$(seconds_of node "$ROOT/bench/scalar_index.cjs" index "$WORK/data" scan id btree)
bitmap_seconds=$(seconds_of node "$ROOT/bench/scalar_index.cjs" index "$WORK/data" scan category bitmap)
chown -R postgres: "$WORK/data"
sql -c "CREATE SERVER bench_scan FOREIGN DATA WRAPPER lance_fdw" \
	-c "CREATE FOREIGN TABLE scan (id bigint, value double precision, label text, emb real[], category int) SERVER bench_scan OPTIONS (uri '$WORK/data/scan.lance')"
log "heap copy with btree indexes"
sql -c "CREATE TABLE heap AS SELECT * FROM scan" -c "CREATE INDEX ON heap (id)" -c "CREATE INDEX ON heap (category)" \
	-c "VACUUM ANALYZE heap"
# the files in the page cache before anything is timed
sql -c "SELECT count(t.*) FROM scan t" >/dev/null
sql -c "SELECT count(t.*) FROM heap t" >/dev/null

# measure LABEL WHERE - one table row: the rows of WHERE and each way's median seconds
measure()
{
	local query="SELECT count(t.*) FROM scan t WHERE $2" returned with_index without_index lancedb_index \
		lancedb_rows lancedb_plain heap
	returned=$(sql -c "$query")
	log "$1"
	with_index=$(seconds "SET lance_parts.fdw_scalar_index = on" "$query")
	without_index=$(seconds "SET lance_parts.fdw_scalar_index = off" "$query")
	read -r lancedb_index lancedb_rows < <(lancedb_seconds scan "$2")
	read -r lancedb_plain _ < <(lancedb_seconds noindex "$2")
	heap=$(seconds "SET enable_seqscan = off" "SELECT count(t.*) FROM heap t WHERE $2")
	[ "$lancedb_rows" = "$returned" ] || { echo "bench: lancedb returned $lancedb_rows rows, lance_fdw $returned" >&2; exit 1; }
	out "| \`$1\` | $returned | $with_index | $without_index | $lancedb_index | $lancedb_plain | $heap | $(ratio "$with_index" "$lancedb_index") |"
}

# explain WHERE - the indexed scan's plan, in a code block
explain()
{
	out '```'
	sql -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(t.*) FROM scan t WHERE $1" |
		sed "s|$WORK|\$WORK|g" >>"$RESULTS"
	out '```'
}

TABLE_HEADER="| query | rows | lance_fdw, index, s | lance_fdw, no index, s | lancedb, index, s | lancedb, no index, s | heap + btree, s | lance_fdw / lancedb (index) |
|---|---:|---:|---:|---:|---:|---:|---:|"

bench_header " (times are medians of $REPS runs, in seconds, each in a new session: psql's \`\\timing\` without the session's start, and lancedb's opening of the dataset and query in a fresh node process)."
out ""
out "### Scalar index: IN lists of random ids, $SCAN_ROWS rows, ext4"
out ""
out "Columns id int64, value float64, label utf8 and emb fixed_size_list<float32>[8] (file version 2.1, 8 appends"
out "written by npm lancedb, in the fragments the plan below shows), category int32 (id % 1000, added by lancedb's"
out "\`addColumns\`: a second data file per fragment), a BTREE index on id built by lancedb's \`createIndex\` ($btree_seconds s)."
out "Every query returns whole rows: \`count(t.*)\` in PostgreSQL (every column decoded and converted), lancedb's"
out "\`query().where(...)\` into Arrow. \"lance_fdw, no index\" is \`SET lance_parts.fdw_scalar_index = off\` (pushed filter,"
out "every row read and tested); \"lancedb, no index\" queries a copy of the dataset without the indexes; the heap table is a"
out "copy of the rows with btree indexes on id and category. Serial scans."
out ""
out "$TABLE_HEADER"
ids() { awk -v n="$1" -v rows="$SCAN_ROWS" -v seed="$2" 'BEGIN { srand(seed); for (i = 0; i < n; i++) printf "%s%d", (i ? ", " : ""), int(rand() * rows) }'; }
for n in 8 1000; do
	measure "id IN ($n random ids)" "id IN ($(ids "$n" $((27 + n))))"
done
out ""
out "The indexed scan of the 8 ids (\`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)\`):"
out ""
explain "id IN ($(ids 8 35))"
out ""
out "### Scalar index: a low-cardinality column through a BITMAP index, $SCAN_ROWS rows, ext4"
out ""
out "The same dataset and ways of reading; a BITMAP index on category (1000 values, every thousandth row holding one:"
out "the rows of a value are spread over every page) built by lancedb's \`createIndex\` ($bitmap_seconds s)."
out ""
out "$TABLE_HEADER"
measure "category = 17" "category = 17"
measure "category IN (3, 141, 592, 653)" "category IN (3, 141, 592, 653)"
out ""
out "The indexed scan of \`category = 17\`:"
out ""
explain "category = 17"
out ""

bench_finish
