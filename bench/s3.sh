#!/usr/bin/env bash
#
# s3.sh - assembly and scans on S3, appended to docs/BENCHMARKS.md with the
# command line that produced them.
#
#   sudo bench/s3.sh [--size-mb N] [--part-mb N] [--reps N] [--no-append]
#
# Needs root (the server runs as the postgres user).  The set-up (what is
# installed, the throwaway cluster, the work directory) is bench/common.sh's;
# the S3 server is scripts/s3-server.sh's Ceph RGW on loopback, started in
# the work directory with room for four copies of the data in memory, on
# LP_S3_PORT, LP_S3_MON_PORT and LP_S3_OSD_PORTS (defaults 7480, 6789, 6800).
#
# Data: about --size-mb (default 1024) of parts of --part-mb (default 15)
# each: one data file per fragment of a dataset npm lancedb writes on the
# server (bench/generate.cjs: id int64, value float64, label utf8 and a
# 128-float32 vector, barely compressible).  Measured, each the median of
# --reps runs (default 3):
#   1. concat_files of every part into one file on the server, with 0 and 2
#      copy workers (psql's \timing: without the session's start), and the
#      bytes PostgreSQL's processes sent to and received from the server
#      meanwhile (bench/socket_bytes.py: the kernel's counters of every
#      connection to the server's port, including those of workers that
#      exited); against a server-side CopyObject of every part (the same
#      bytes, 3 requests at a time, as the backend and 2 workers issue their
#      copies) and lancedb optimize() of the dataset (once, at the end: it
#      rewrites the dataset).
#   2. a full scan through lance_fdw (SELECT count(t.*): every column decoded
#      and converted; psql's \timing) with 0 and 2 parallel workers, against
#      lancedb reading every column of the same dataset.
#
set -euo pipefail
shopt -s inherit_errexit	# a failure inside $(...) ends the run too

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
COMMAND="bench/s3.sh${*:+ $*}"
SIZE_MB=1024
PART_MB=15
REPS=3

while [ $# -gt 0 ]; do
	case "$1" in
		--size-mb) SIZE_MB=$2; shift ;;
		--part-mb) PART_MB=$2; shift ;;
		--reps) REPS=$2; shift ;;
		--no-append) APPEND=false ;;
		*) echo "usage: bench/s3.sh [--size-mb N] [--part-mb N] [--reps N] [--no-append]" >&2; exit 2 ;;
	esac
	shift
done
bench_start lp-s3

sql() { psql -X -Atq -v ON_ERROR_STOP=1 "$@"; }

bench_s3_start $(( (SIZE_MB * 4 + 1024) << 20 ))
S3_PORT=${LP_S3_ENDPOINT##*:}

FRAGMENTS=$(( (SIZE_MB + PART_MB - 1) / PART_MB ))
log "generating $FRAGMENTS parts of $PART_MB MB on S3 with npm lancedb"
node "$ROOT/bench/generate.cjs" dataset "$BASE" big "$FRAGMENTS" $((PART_MB << 20)) >"$WORK/generate.json"
SCAN_ROWS=$(node -p "JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8')).rows" "$WORK/generate.json")
mapfile -t PART_KEYS < <(node "$ROOT/bench/s3_objects.cjs" list bench/big.lance/data/)
PARTS=$(array_sql "${PART_KEYS[@]/#/s3://$LP_S3_BUCKET/}")
PARTS_BYTES=$(sql -c "SELECT sum(size_bytes) FROM unnest($PARTS) AS p(uri), lance_parts.file_info(p.uri)")
PARTS_MB=$(awk -v b="$PARTS_BYTES" 'BEGIN { printf "%.0f", b / 1048576 }')

# remove PREFIX - delete every object under PREFIX and have RGW free their data now (its
# garbage collection would keep it for hours, and the objects are in memory)
remove()
{
	node "$ROOT/bench/s3_objects.cjs" delete "$1"
	CEPH_CONF=$LP_S3_DIR/ceph.conf radosgw-admin gc process --include-all >/dev/null 2>&1
}

# assemble WORKERS - concat_files of every part into bench/out.lance with WORKERS copy workers;
# "seconds sent received size": the call's time as psql's \timing reports it (without the
# session's start) and the bytes of bench/socket_bytes.py; the output removed afterwards
assemble()
{
	local output seconds bytes size
	output=$(python3 "$ROOT/bench/socket_bytes.py" "$S3_PORT" psql -X -Atq -v ON_ERROR_STOP=1 \
		-c "SET lance_parts.max_copy_workers = $1" -c '\timing on' \
		-c "SELECT status FROM lance_parts.concat_files('$BASE/out.lance', $PARTS)")
	grep -qx written <<<"$output"
	seconds=$(sed -nE 's/^Time: ([0-9.]+) ms.*/\1/p' <<<"$output" | awk '{ printf "%.3f", $1 / 1000 }')
	bytes=$(tail -n 1 <<<"$output")
	size=$(sql -c "SELECT size_bytes FROM lance_parts.file_info('$BASE/out.lance')")
	remove bench/out.lance
	echo "$seconds $bytes $size"
}

declare -A times=() traffic=()
copy_times=""
for rep in $(seq "$REPS"); do
	for workers in 0 2; do
		log "assembly with $workers workers: run $rep of $REPS"
		result=$(assemble "$workers")
		read -r t sent received size <<<"$result"
		times[$workers]+="$t "
		traffic[$workers]="$sent $received $size"
	done
	log "CopyObject of every part: run $rep of $REPS"
	copy_times+="$(node "$ROOT/bench/s3_objects.cjs" copy bench/big.lance/data/ bench/copies/ 3 |
		node -p "JSON.parse(require('fs').readFileSync(0, 'utf8')).seconds.toFixed(3)") "
	remove bench/copies/
done
copy_times=$(echo "$copy_times" | median)

log "full scans"
sql -c "CREATE FOREIGN TABLE big (id bigint, value double precision, label text, emb real[]) SERVER bench_s3 OPTIONS (uri '$BASE/big.lance')"
declare -A scan_times=()
ref_times=""
for rep in $(seq "$REPS"); do
	for workers in 0 2; do
		log "scan with $workers workers: run $rep of $REPS"
		output=$(sql -c "SET max_parallel_workers_per_gather = $workers" -c '\timing on' -c "SELECT count(t.*) FROM big t")
		scanned=$(head -n 1 <<<"$output")
		scan_times[$workers]+="$(sed -nE 's/^Time: ([0-9.]+) ms.*/\1/p' <<<"$output" | awk '{ printf "%.3f", $1 / 1000 }') "
	done
	log "lancedb scan: run $rep of $REPS"
	ref_times+="$(node "$ROOT/bench/scan.cjs" "$BASE" big | node -p "JSON.parse(require('fs').readFileSync(0, 'utf8')).seconds.toFixed(3)") "
done
ref_times=$(echo "$ref_times" | median)

log "lancedb optimize()"
opt_json=$(node "$ROOT/bench/optimize.cjs" "$BASE" big)
opt_time=$(node -p "JSON.parse(process.argv[1]).seconds.toFixed(3)" "$opt_json")

bench_header " (sizes in MB of 2^20 bytes; times are medians of $REPS runs, in seconds)."
out "Data: $FRAGMENTS data files (one per fragment) of about $PART_MB MB written on the S3 server by npm lancedb $(node -p "require('$NODE_PATH/@lancedb/lancedb/package.json').version"), file version 2.1, rows of int64, float64, utf8 and a 128-float32 vector; $PARTS_MB MB in all. Server: Ceph RGW $(radosgw --version 2>/dev/null | awk '{ print $3; exit }') on loopback, objects in memory (memstore), one OSD (scripts/s3-server.sh)."
out ""
out "### Assembling $PARTS_MB MB of parts on S3"
out ""
out "\`concat_files\` of every part into one file on the same server: one multipart upload of \`UploadPartCopy\`"
out "ranges of the parts' data regions, issued by the backend alone (0 workers) or by 2 parallel workers and the"
out "backend; only the metadata tail is uploaded. Bytes: what PostgreSQL's processes (backend and workers) sent to"
out "and received from the server during the call, from the kernel's counters of their TCP connections"
out "(\`bench/socket_bytes.py\`), of the last run. CopyObject: a server-side copy of every part (the same bytes), 3"
out "requests at a time; RGW copies a whole object by reference (only its first 4 MiB are rewritten, the rest of its"
out "data is shared), whereas an \`UploadPartCopy\` range is read and written, so this is a lower bound no ranged copy"
out "reaches on RGW. lancedb \`optimize()\` compacts the same dataset on the server (run once, as it rewrites it:"
out "$opt_json)."
out ""
out "| operation | seconds | MB/s | time / CopyObject | bytes sent + received | of the output |"
out "|---|---:|---:|---:|---:|---:|"
for workers in 0 2; do
	t=$(echo "${times[$workers]}" | median)
	read -r sent received size <<<"${traffic[$workers]}"
	out "| \`concat_files\`, $workers workers | $t | $(mbps "$PARTS_MB" "$t") | $(ratio "$t" "$copy_times") | $sent + $received | $(awk -v b=$((sent + received)) -v s="$size" 'BEGIN { printf "%.3f %%", 100 * b / s }') |"
done
out "| CopyObject of every part (3 at a time) | $copy_times | $(mbps "$PARTS_MB" "$copy_times") | 1.00 | | |"
out "| lancedb \`optimize()\` (once) | $opt_time | $(mbps "$PARTS_MB" "$opt_time") | $(ratio "$opt_time" "$copy_times") | | |"
out ""
out "### Full scan of $SCAN_ROWS rows on S3"
out ""
out "lance_fdw: \`SELECT count(t.*) FROM big t\` through psql (every column decoded and converted to PostgreSQL values;"
out "psql's \`\\timing\`, without the session's start) with \`max_parallel_workers_per_gather\` 0 and 2; the ranges a"
out "scan needs are fetched one after the other, without read-ahead. Reference: lancedb \`table.query().toArrow()\` of"
out "every column of the same dataset on the same server (timed inside node)."
out ""
out "| reader | rows | seconds | MB/s | speed / reference |"
out "|---|---:|---:|---:|---:|"
for workers in 0 2; do
	t=$(echo "${scan_times[$workers]}" | median)
	out "| lance_fdw, $workers workers | $scanned | $t | $(mbps "$PARTS_MB" "$t") | $(ratio "$ref_times" "$t") |"
done
out "| lancedb (reference) | $SCAN_ROWS | $ref_times | $(mbps "$PARTS_MB" "$ref_times") | 1.00 |"
out ""
bench_finish
