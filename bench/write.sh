#!/usr/bin/env bash
#
# write.sh - writing Lance from SQL: lance_parts.write_dataset of a query's
# rows, against npm lancedb writing the same rows from Arrow data already in
# memory (bench/write_lancedb.cjs), and against COPY (the same query) TO a
# file (PostgreSQL's own export floor); and INSERT ... SELECT and COPY FROM
# into a lance_fdw table against write_dataset and against the same into an
# unlogged heap table, and a DELETE of 1 % of its rows against rewriting the
# rest; appended to docs/BENCHMARKS.md with the command line that produced
# them.
#
#   sudo bench/write.sh [--sizes N [N ...]] [--version V] [--lancedb-max N] [--jit on|off] [--no-append]
#
# Needs root (the server runs as the postgres user).  The set-up (what is
# installed, the throwaway cluster, the work directory) is bench/common.sh's.
#
# Rows (--sizes, default "100000 1000000 10000000"; the table is made once, of the
# largest size, with id its primary key so that each size reads only its rows):
# id bigint, k integer, x double precision, y real, label text
# and emb, 128 floats: pgvector's vector(128) (a fixed-size list of float32)
# where pgvector is installed (scripts/setup.sh installs it; the log and the
# table's description say which), else real[] (a list of float32).  Each size is
# written once by each writer, file version --version (default 2.2):
# write_dataset with lance_parts.write_workers = 0 (serial) and = 2 (the
# backend reads, two workers encode), COPY TO, and lancedb for sizes up to
# --lancedb-max (default 1000000: lancedb holds all rows in memory).  Times
# are psql's \timing (lancedb's: createTable alone).  Peak backend memory is
# the largest RssAnon (the backend's private memory; shared buffers
# excluded) of the backend, sampled every 2 ms; for 2 workers also the
# largest sum of the workers' RssAnon.  The timed sessions run with jit off
# (--jit on keeps PostgreSQL's default): on a large table the query passes
# the JIT cost thresholds, and LLVM's inlining and optimisation then add
# about 24 MiB to every reader of it, COPY TO's too, which is not the
# writer's memory.
#
set -euo pipefail

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
COMMAND="bench/write.sh${*:+ $*}"
SIZES="100000 1000000 10000000"
LANCEDB_MAX=1000000
VERSION=2.2
DIM=128
JIT=off

while [ $# -gt 0 ]; do
	case "$1" in
		--sizes)
			# One or more sizes, as words or one quoted list, so that the command
			# line recorded in docs/BENCHMARKS.md runs as written.
			SIZES=
			while [ $# -gt 1 ] && [[ $2 =~ ^[0-9\ ]+$ ]]; do
				SIZES+=" $2"
				shift
			done
			[ -n "$SIZES" ] || { echo "bench/write.sh: --sizes needs at least one number of rows" >&2; exit 2; }
			;;
		--version) VERSION=$2; shift ;;
		--lancedb-max) LANCEDB_MAX=$2; shift ;;
		--jit) JIT=$2; shift ;;
		--no-append) APPEND=false ;;
		*) echo "usage: bench/write.sh [--sizes N [N ...]] [--version V] [--lancedb-max N] [--jit on|off] [--no-append]" >&2; exit 2 ;;
	esac
	shift
done
case "$JIT" in
	on | off) ;;
	*) echo "bench/write.sh: --jit takes on or off, not \"$JIT\"" >&2; exit 2 ;;
esac
sql() { psql -X -Atq -v ON_ERROR_STOP=1 "$@"; }

# rss_anon NAME PID - set NAME to the process's RssAnon in kB (0 once it is gone),
# read with builtins: a fork per sample would make the sampling too slow to catch
# the short peak of each file a write encodes
rss_anon()
{
	local -n result=$1
	local key value rest
	result=0
	{ while read -r key value rest; do
		[ "$key" = RssAnon: ] && { result=$value; break; }
	done <"/proc/$2/status"; } 2>/dev/null || true
}

# a descriptor that never has data: read -t on it waits without a fork (sleep's)
exec {NAP_FD}<> <(:)

# timed_backend NAME SQL - run SQL in a session of its own with \timing, sampling its
# backend's RssAnon and the sum of its parallel workers' meanwhile; sets SECONDS_TAKEN,
# PEAK_KB and WORKERS_PEAK_KB
timed_backend()
{
	local app=lp_bench_$1 log=$WORK/$1.log psql_pid backend_pid="" rss worker_pids="" pid sum samples=0
	PGAPPNAME=$app PGOPTIONS="-c jit=$JIT" psql -X -Atq -v ON_ERROR_STOP=1 -c '\timing on' -c "$2" >"$log" 2>&1 &
	psql_pid=$!
	PEAK_KB=0
	WORKERS_PEAK_KB=0
	while kill -0 "$psql_pid" 2>/dev/null; do
		if [ -z "$backend_pid" ]; then
			# the workers inherit the application name: the session's own backend
			backend_pid=$(sql -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$app' AND backend_type = 'client backend'" 2>/dev/null || true)
		fi
		if [ -n "$backend_pid" ]; then
			rss_anon rss "$backend_pid"
			[ "$rss" -gt "$PEAK_KB" ] && PEAK_KB=$rss
			# the workers start with the write: look for them about every 0.5 s
			if [ $((samples % 250)) -eq 0 ]; then
				worker_pids=$(sql -c "SELECT pid FROM pg_stat_activity WHERE leader_pid = $backend_pid AND pid <> $backend_pid" 2>/dev/null || true)
			fi
			sum=0
			for pid in $worker_pids; do
				rss_anon rss "$pid"
				sum=$((sum + rss))
			done
			[ "$sum" -gt "$WORKERS_PEAK_KB" ] && WORKERS_PEAK_KB=$sum
		fi
		samples=$((samples + 1))
		read -r -t 0.002 -u "$NAP_FD" _ || true
	done
	wait "$psql_pid" || { cat "$log" >&2; exit 1; }
	SECONDS_TAKEN=$(sed -nE 's/^Time: ([0-9.]+) ms.*/\1/p' "$log" | tail -n 1 | awk '{ printf "%.2f", $1 / 1000 }')
}

bytes_of() { du -sb --apparent-size "$1" | awk '{ print $1 }'; }

bench_start lp-write

MAX=$(echo "$SIZES" | tr ' ' '\n' | sort -n | tail -n 1)
if [ "$(sql -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'")" = 1 ]; then
	sql -c "CREATE EXTENSION vector"
	EMB_TYPE="vector($DIM)"
	EMB_LANCE="fixed_size_list<float32>[$DIM] (pgvector's vector($DIM))"
else
	EMB_TYPE="real[]"
	EMB_LANCE="list<float32> of $DIM items (real[]: pgvector is not installed)"
	log "pgvector is not installed in $PG_BINDIR's server (scripts/setup.sh installs it): emb is real[], not vector($DIM)"
fi
log "making the table of $MAX rows (emb $EMB_TYPE)"
sql -c "CREATE UNLOGGED TABLE bench_rows AS
	SELECT g::bigint AS id, (g % 1000)::integer AS k,
	       (g * 7919 % 100003)::float8 / 100003 AS x,
	       ((g * 104729 % 65521)::float8 / 256)::real AS y,
	       'label ' || g || ' ' || (g % 97) AS label,
	       (SELECT array_agg((((g * 131 + j * 17) % 10007)::float8 / 10007)::real ORDER BY j)
	        FROM generate_series(0, $((DIM - 1))) j)::$EMB_TYPE AS emb
	FROM generate_series(1, $MAX::bigint) g" -c "ALTER TABLE bench_rows ADD PRIMARY KEY (id)" -c "VACUUM ANALYZE bench_rows"
# the table in the page cache before anything is timed
sql -c "SELECT count(t.*) FROM bench_rows t" >/dev/null
mkdir -p "$WORK/out"
chown postgres: "$WORK/out"

sql -c "CREATE SERVER bench_lance FOREIGN DATA WRAPPER lance_fdw"
bench_header " (one run of each writer per size; file version $VERSION)."
out ""
out "### Writing Lance from SQL: write_dataset against lancedb and COPY TO, ext4"
out ""
out "Rows: id int64, k int32, x float64, y float32, label utf8 and emb $EMB_LANCE, made by one formula in both"
out "writers. write_dataset and COPY read \`SELECT id, k, x, y, label, emb FROM bench_rows WHERE id <= N\` from an"
out "unlogged table of the largest size in the page cache, whose primary key is id (rows stored in id order), so that"
out "a smaller size reads only its N rows (an index scan) rather than scanning the whole table; lancedb (npm 0.39,"
out "\`createTable\` timed alone) writes Arrow data already in"
out "memory, up to $LANCEDB_MAX rows. COPY writes PostgreSQL's text format. write_dataset runs with"
out "\`lance_parts.write_workers\` 0 (serial) and 2 (the backend reads rows, two parallel workers encode the files; one"
out "file per 1048576 rows, so below that one worker encodes while the backend reads). Peak memory is the backend's"
out "largest RssAnon (private memory, shared buffers excluded), sampled every 2 ms, and for 2 workers the largest sum"
out "of the workers' RssAnon; lancedb runs in its own process and is not sampled. The timed sessions run with"
out "jit = $JIT. The machine is shared with other jobs, so times vary."
out ""
out "| rows | 0 workers, s | rows/s | 2 workers, s | rows/s | speed-up | lancedb, s | rows/s | COPY TO, s | rows/s | Lance bytes | lancedb bytes | size ratio | COPY bytes | peak RssAnon 0 workers, MiB | 2 workers: backend, MiB | 2 workers: workers, MiB | COPY, MiB |"
out "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
INSERT_RESULTS=$WORK/inserts.md
for rows in $SIZES; do
	query="SELECT id, k, x, y, label, emb FROM bench_rows WHERE id <= $rows"
	log "$rows rows: write_dataset, 0 workers"
	timed_backend "write_$rows" "SET lance_parts.write_workers = 0; SELECT * FROM lance_parts.write_dataset('$WORK/out/pg_$rows.lance', \$q\$$query\$q\$, file_version => '$VERSION')"
	write_s=$SECONDS_TAKEN
	write_peak=$PEAK_KB
	write_bytes=$(bytes_of "$WORK/out/pg_$rows.lance/data")
	rm -rf "$WORK/out/pg_$rows.lance"

	log "$rows rows: write_dataset, 2 workers"
	timed_backend "write2_$rows" "SET lance_parts.write_workers = 2; SELECT * FROM lance_parts.write_dataset('$WORK/out/pg2_$rows.lance', \$q\$$query\$q\$, file_version => '$VERSION')"
	write2_s=$SECONDS_TAKEN
	write2_peak=$PEAK_KB
	write2_workers_peak=$WORKERS_PEAK_KB
	write2_bytes=$(bytes_of "$WORK/out/pg2_$rows.lance/data")
	rm -rf "$WORK/out/pg2_$rows.lance"
	[ "$write2_bytes" = "$write_bytes" ] || log "$rows rows: 2 workers wrote $write2_bytes bytes, 0 workers $write_bytes"

	log "$rows rows: COPY TO"
	timed_backend "copy_$rows" "COPY ($query) TO '$WORK/out/copy_$rows.txt'"
	copy_s=$SECONDS_TAKEN
	copy_peak=$PEAK_KB
	copy_bytes=$(bytes_of "$WORK/out/copy_$rows.txt")

	# an empty dataset of the rows' schema, its lance_fdw table, and an unlogged heap table like it
	sql -c "SELECT * FROM lance_parts.write_dataset('$WORK/out/ins_$rows.lance', \$q\$$query LIMIT 0\$q\$, file_version => '$VERSION')" >/dev/null
	sql -c "CREATE FOREIGN TABLE ins_$rows (id bigint, k integer, x float8, y real, label text, emb $EMB_TYPE)
		SERVER bench_lance OPTIONS (uri '$WORK/out/ins_$rows.lance')" \
		-c "CREATE UNLOGGED TABLE heap_$rows (id bigint, k integer, x float8, y real, label text, emb $EMB_TYPE)"
	log "$rows rows: INSERT INTO a lance_fdw table"
	timed_backend "insert_$rows" "INSERT INTO ins_$rows $query"
	insert_s=$SECONDS_TAKEN
	insert_peak=$PEAK_KB
	log "$rows rows: INSERT INTO an unlogged heap table"
	timed_backend "heap_$rows" "INSERT INTO heap_$rows $query"
	heap_s=$SECONDS_TAKEN
	log "$rows rows: COPY FROM into the lance_fdw table and the heap table"
	timed_backend "copy_from_$rows" "COPY ins_$rows FROM '$WORK/out/copy_$rows.txt'"
	copy_from_s=$SECONDS_TAKEN
	copy_from_peak=$PEAK_KB
	timed_backend "heap_copy_$rows" "COPY heap_$rows FROM '$WORK/out/copy_$rows.txt'"
	heap_copy_s=$SECONDS_TAKEN
	[ "$(sql -c "SELECT count(*) FROM ins_$rows")" = $((2 * rows)) ] || { log "ins_$rows does not hold $((2 * rows)) rows"; exit 1; }
	# 1 % of the rows (k < 10 of k = id % 1000: scattered over every fragment), deleted in
	# place through the pushed WHERE, against rewriting the other 99 % as a new dataset
	log "$rows rows: DELETE of 1 % against rewriting the rest"
	timed_backend "delete_$rows" "DELETE FROM ins_$rows WHERE k < 10"
	delete_s=$SECONDS_TAKEN
	timed_backend "rewrite_$rows" "SELECT * FROM lance_parts.write_dataset('$WORK/out/rewrite_$rows.lance', \$q\$SELECT * FROM ins_$rows WHERE k >= 10\$q\$, file_version => '$VERSION')"
	rewrite_s=$SECONDS_TAKEN
	[ "$(sql -c "SELECT count(*) FROM ins_$rows")" = $((2 * rows * 99 / 100)) ] || { log "ins_$rows does not hold 99 % of its rows after the DELETE"; exit 1; }
	sql -c "DROP FOREIGN TABLE ins_$rows" -c "DROP TABLE heap_$rows"
	rm -rf "$WORK/out/ins_$rows.lance" "$WORK/out/rewrite_$rows.lance" "$WORK/out/copy_$rows.txt"
	echo "| $rows | $write2_s | $insert_s | $(ratio "$insert_s" "$write2_s") | $heap_s | $(ratio "$insert_s" "$heap_s") | $copy_from_s | $heap_copy_s | $(ratio "$copy_from_s" "$heap_copy_s") | $(mib "$insert_peak") | $(mib "$copy_from_peak") | $delete_s | $rewrite_s | $(ratio "$rewrite_s" "$delete_s") |" >>"$INSERT_RESULTS"

	lancedb_s=- lancedb_bytes=-
	if [ "$rows" -le "$LANCEDB_MAX" ]; then
		log "$rows rows: lancedb"
		mkdir -p "$WORK/lancedb_$rows"
		lancedb_json=$(node "$ROOT/bench/write_lancedb.cjs" "$WORK/lancedb_$rows" "$rows" "$DIM" "$VERSION")
		lancedb_s=$(node -p "JSON.parse(process.argv[1]).seconds.toFixed(2)" "$lancedb_json")
		lancedb_bytes=$(node -p "JSON.parse(process.argv[1]).bytes" "$lancedb_json")
		rm -rf "$WORK/lancedb_$rows"
	fi

	out "| $rows | $write_s | $(mbps "$rows" "$write_s") | $write2_s | $(mbps "$rows" "$write2_s") | $(ratio "$write_s" "$write2_s") | $lancedb_s | $(mbps "$rows" "$lancedb_s") | $copy_s | $(mbps "$rows" "$copy_s") | $write_bytes | $lancedb_bytes | $(ratio "$write_bytes" "$lancedb_bytes") | $copy_bytes | $(mib "$write_peak") | $(mib "$write2_peak") | $(mib "$write2_workers_peak") | $(mib "$copy_peak") |"
done
out ""
out "### Writing through a lance_fdw table: INSERT ... SELECT and COPY FROM, ext4"
out ""
out "The same query's rows inserted into a lance_fdw table over an empty dataset of file version $VERSION (autocommit:"
out "each statement publishes one Append at its commit, which the time includes), against write_dataset of the same"
out "query with 2 workers (the default, as the INSERT) and against INSERT into an unlogged heap table of the same"
out "columns (no index); then COPY FROM of the text file COPY TO wrote into both tables. Peak memory as above, of the"
out "backend alone (the write workers encode as for write_dataset). Then a DELETE of 1 % of the table's rows (k < 10,"
out "scattered over every fragment; the WHERE pushed into the scan) against rewriting the other 99 % with write_dataset"
out "(what a format without deletion files would do)."
out ""
out "| rows | write_dataset, s | INSERT into lance_fdw, s | INSERT / write_dataset | INSERT into unlogged heap, s | lance / heap | COPY FROM into lance_fdw, s | COPY FROM into heap, s | lance / heap | peak RssAnon INSERT, MiB | peak RssAnon COPY FROM, MiB | DELETE 1 % of 2 x rows, s | rewrite 99 %, s | rewrite / DELETE |"
out "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
cat "$INSERT_RESULTS" >>"$RESULTS"
out ""

bench_finish
