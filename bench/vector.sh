#!/usr/bin/env bash
#
# vector.sh - approximate nearest-neighbour search with Lance's IVF vector
# indexes in lance_fdw, against lancedb's own search with the same index and
# parameters, lance_fdw's exact top-k and pgvector's HNSW on a heap table,
# in one run; inserted at the top of docs/BENCHMARKS.md with the command
# line that produced them.
#
#   sudo bench/vector.sh [--rows N] [--dim N] [--queries N] [--nprobes N] [--no-append]
#
# Needs root (the server runs as the postgres user) and pgvector in the
# server.  The set-up (what is installed, the throwaway cluster, the work
# directory) is bench/common.sh's.
#
# Data (bench/vector.cjs, a fixed seed): --rows (default 1,000,000) vectors
# of --dim (128) dimensions around 1000 cluster centres, varying along 16
# directions shared by every cluster, in 8 fragments,
# written twice by npm lancedb, once with an IVF_PQ index and once with an
# IVF_HNSW_SQ index (lancedb's default parameters, l2); --queries (1000)
# query vectors from the same clusters.  Each method runs every query once
# untimed, then once timed, one query after the other in one session (psql's
# \timing: planning and execution, without the session's start; lancedb
# inside node).  Recall@10 is against lance_fdw's exact top-k
# (lance_parts.fdw_vector_index off), which the node tests check against
# PostgreSQL's own evaluation.
#
set -euo pipefail

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
COMMAND="bench/vector.sh${*:+ $*}"
ROWS=1000000
DIM=128
QUERIES=1000
NPROBES=20
K=10

while [ $# -gt 0 ]; do
	case "$1" in
		--rows) ROWS=$2; shift ;;
		--dim) DIM=$2; shift ;;
		--queries) QUERIES=$2; shift ;;
		--nprobes) NPROBES=$2; shift ;;
		--no-append) APPEND=false ;;
		*) echo "usage: bench/vector.sh [--rows N] [--dim N] [--queries N] [--nprobes N] [--no-append]" >&2; exit 2 ;;
	esac
	shift
done
sql() { psql -X -Atq -v ON_ERROR_STOP=1 "$@"; }
vector() { node "$ROOT/bench/vector.cjs" "$@"; }

# run_sql NAME TABLE SETTINGS - every query on TABLE in one session after SETTINGS, warm-up
# first; the timed results into $WORK/NAME.json
run_sql()
{
	vector sql "$WORK/data" "$2" "$K" >"$WORK/$1.sql"
	log "$1: $QUERIES queries, warm-up"
	{ echo "$3"; cat "$WORK/$1.sql"; } | sql >/dev/null
	log "$1: $QUERIES queries, timed"
	{ echo "$3"; cat "$WORK/$1.sql"; } | sql >"$WORK/$1.out"
	vector parse "$WORK/$1.out" >"$WORK/$1.json"
}

# run_lancedb NAME DATASET REFINE - lancedb's search (nprobes $NPROBES) into $WORK/NAME.json
run_lancedb()
{
	log "$1: $QUERIES queries with lancedb"
	vector search "$WORK/data" "$2" "$NPROBES" "$3" "$K" >"$WORK/$1.json"
}

# row LABEL NAME - a row of the results' table
row()
{
	local recall p50 p99 qps
	read -r recall p50 p99 qps < <(vector summary "$WORK/exact.json" "$WORK/$2.json")
	out "| $1 | $recall | $p50 | $p99 | $qps |"
}

bench_start lp-vector
sql -c "CREATE EXTENSION vector"

log "generating $ROWS vectors of $DIM dimensions and their indexes with npm lancedb"
mkdir -p "$WORK/data"
started=$(date +%s)
vector generate "$WORK/data" "$ROWS" "$DIM" "$QUERIES" 2>"$WORK/generate.log"
log "$(cat "$WORK/generate.log")"
chown -R postgres: "$WORK/data"
sql -c "CREATE SERVER bench_vector FOREIGN DATA WRAPPER lance_fdw" \
	-c "CREATE FOREIGN TABLE pq (id bigint, emb vector($DIM)) SERVER bench_vector OPTIONS (uri '$WORK/data/pq.lance')" \
	-c "CREATE FOREIGN TABLE hnsw_sq (id bigint, emb vector($DIM)) SERVER bench_vector OPTIONS (uri '$WORK/data/hnsw_sq.lance')"
log "pgvector: heap copy and HNSW index"
heap_started=$(date +%s)
sql -c "CREATE TABLE heap AS SELECT id, emb FROM pq" -c "SET maintenance_work_mem = '1GB'" \
	-c "CREATE INDEX ON heap USING hnsw (emb vector_l2_ops)" -c "VACUUM ANALYZE heap"
heap_seconds=$(( $(date +%s) - heap_started ))
generate_seconds=$(( heap_started - started ))

# the index cache holds the index, as lancedb's cache does in its process (the default 64 MB
# holds the IVF_PQ index of 1M vectors, not the IVF_HNSW_SQ one: its partition is re-read per query)
SETTINGS="SET lance_parts.fdw_nprobes = $NPROBES; SET max_parallel_workers_per_gather = 0; SET lance_parts.fdw_vector_index_cache = '1GB';"
run_sql exact pq "$SETTINGS SET lance_parts.fdw_vector_index = off;"
run_sql fdw_pq pq "$SETTINGS"
run_sql fdw_pq_refine pq "$SETTINGS SET lance_parts.fdw_refine_factor = 5;"
run_sql fdw_hnsw_sq hnsw_sq "$SETTINGS"
run_lancedb lancedb_pq pq 0
run_lancedb lancedb_pq_refine pq 5
run_lancedb lancedb_hnsw_sq hnsw_sq 0
run_sql pgvector heap "SET enable_seqscan = off;"

bench_header " (one client, queries one after the other; latencies in ms)."
out ""
out "### Vector search, $ROWS vectors of $DIM dimensions, $QUERIES queries, k = $K, nprobes = $NPROBES, ext4"
out ""
out "Clustered synthetic vectors (bench/vector.cjs, 1000 centres, 16 latent directions, a fixed seed) in 8 fragments written by npm lancedb,"
out "indexed by lancedb with its default parameters (l2); data, indexes and the heap table made in ${generate_seconds} s and"
out "${heap_seconds} s (pgvector's HNSW, m = 16, ef_construction = 64, ef_search 40). lance_fdw and pgvector through psql"
out "in one session (planning and execution), \`lance_parts.fdw_vector_index_cache\` 1 GB so that the index stays in memory between"
out "queries as lancedb's does; lancedb timed inside node. Recall@$K against the exact top-k."
out ""
out "| method | recall@$K | p50, ms | p99, ms | queries/s |"
out "|---|---:|---:|---:|---:|"
row "lance_fdw, IVF_PQ" fdw_pq
row "lancedb, IVF_PQ" lancedb_pq
row "lance_fdw, IVF_PQ, refine factor 5" fdw_pq_refine
row "lancedb, IVF_PQ, refine factor 5" lancedb_pq_refine
row "lance_fdw, IVF_HNSW_SQ" fdw_hnsw_sq
row "lancedb, IVF_HNSW_SQ" lancedb_hnsw_sq
row "lance_fdw, exact top-k" exact
row "pgvector HNSW, heap table" pgvector
out ""
out "The plans of one query through each index (\`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)\`, the query vector elided):"
out ""
out '```'
QUERY_VECTOR=$(head -2 "$WORK/fdw_pq.sql" | tail -1 | sed -E "s/.*(<-> '[^']*'::vector).*/\1/")
for table in pq hnsw_sq; do
	sql -c "$SETTINGS" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id FROM $table ORDER BY emb $QUERY_VECTOR LIMIT $K" |
		sed -e "s|$WORK|\$WORK|g" -e "s|'\[[^]]*\]'::vector|q|g" >>"$RESULTS"
done
out '```'
out ""

bench_finish
