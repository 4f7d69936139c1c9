#!/usr/bin/env bash
#
# run.sh - the assembly benchmarks, side by side on the same generated data,
# recorded in docs/BENCHMARKS.md (latest first) with the command line that produced them.
#
#   sudo bench/run.sh [--size-mb N] [--reps N] [--only SECTION[,SECTION...]] [--no-append]
#
# Needs root (it mounts a loop XFS with reflink).  The set-up (what is
# installed, the throwaway cluster, the work directory) is bench/common.sh's.
#
# Measured, each with the median of --reps runs (default 3):
#   1. assembling --size-mb (default 1024) of parts (10 data files written by
#      npm lancedb) with 0, 1 and 2 workers, against cp of the same files
#      and cat of them to /dev/null; ext4 and a loop-mounted reflink XFS.
#      Every write is fsynced: concat_files fsyncs its output, cp is
#      followed by sync of the copies.  The parts are in the page cache.
#   2. the backend's peak memory (VmHWM) by input size.
#   3. lance_parts.compact against lancedb optimize() of the same fragments:
#      the vector parts on ext4 and XFS, and text-heavy fragments on ext4.
#   4. 10 to 10,000 parts of the same total size: planning time per part
#      (DEBUG1 message of concat_files) and total time.
#   5. a full scan of 2M rows (8 fragments; id, value, label and an 8-float
#      vector) through lance_fdw with 0, 1 and 2 parallel workers against
#      lancedb reading the same dataset.
#   6. the same of one 4.2M-row fragment of a 2.2 file with a 32-float
#      vector (lancedb's 5 fragments joined by lance_parts.compact).
#
# --only runs some sections: assembly (1), memory (2), compaction (3),
# parts (4), scan (5), scan_large (6).
#
set -euo pipefail

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
COMMAND="bench/run.sh${*:+ $*}"
SIZE_MB=1024
REPS=3
ONLY=assembly,memory,compaction,parts,scan,scan_large

while [ $# -gt 0 ]; do
	case "$1" in
		--size-mb) SIZE_MB=$2; shift ;;
		--reps) REPS=$2; shift ;;
		--only) ONLY=$2; shift ;;
		--no-append) APPEND=false ;;
		*) echo "usage: bench/run.sh [--size-mb N] [--reps N] [--only SECTION[,SECTION...]] [--no-append]" >&2; exit 2 ;;
	esac
	shift
done
bench_start lp-bench
XFS=$WORK/xfs
bench_on_exit 'if mountpoint -q "$XFS"; then umount "$XFS"; fi'

section() { [[ ",$ONLY," == *",$1,"* ]]; }

# seconds CMD... - wall-clock seconds of CMD, 3 decimals
seconds()
{
	local start end
	start=$(date +%s.%N)
	"$@" >/dev/null
	end=$(date +%s.%N)
	echo "$start $end" | awk '{ printf "%.3f", $2 - $1 }'
}

sql() { psql -X -Atq -v ON_ERROR_STOP=1 "$@"; }

concat_files()
{
	local out=$1 workers=$2 parts=$3
	sql -c "SET lance_parts.max_copy_workers = $workers" \
		-c "SELECT status FROM lance_parts.concat_files('$out', $parts)" | grep -qx written
}

copy_files()
{
	local dest=$1 mode=$2
	shift 2
	mkdir -p "$dest"
	cp "--reflink=$mode" "$@" "$dest/"
	sync "$dest"/*
}

# ---- set-up ----------------------------------------------------------------------

mkdir -p "$WORK/ext4"
chown postgres: "$WORK/ext4"
if section assembly || section memory || section compaction; then
	log "reflink XFS"
	truncate -s $((SIZE_MB * 4 + 1024))M "$WORK/xfs.img"
	mkfs.xfs -q -m reflink=1 "$WORK/xfs.img"
	mkdir -p "$XFS"
	mount -o loop "$WORK/xfs.img" "$XFS"
	chown postgres: "$XFS"

	log "generating $SIZE_MB MB of parts with npm lancedb"
	node "$ROOT/bench/generate.cjs" dataset "$WORK/ext4" big 10 $((SIZE_MB * 1024 * 1024 / 10)) >"$WORK/generate.json"
	chown -R postgres: "$WORK/ext4"
	mapfile -t EXT4_PARTS < <(ls "$WORK/ext4/big.lance/data/"*.lance)
	PARTS_MB=$(du -cm --apparent-size "${EXT4_PARTS[@]}" | tail -1 | cut -f1)
	mkdir -p "$XFS/parts"
	cp --reflink=never "${EXT4_PARTS[@]}" "$XFS/parts/"
	sync
	chown -R postgres: "$XFS"
	mapfile -t XFS_PARTS < <(ls "$XFS/parts/"*.lance)
fi

bench_header " (sizes in MB of 2^20 bytes; times are medians of $REPS runs, in seconds)."
if section assembly || section memory || section compaction; then
	out "Data: 10 data files (one per fragment) written by npm lancedb $(node -p "require('$NODE_PATH/@lancedb/lancedb/package.json').version"), file version 2.1, rows of int64, float64, utf8 and a 128-float32 vector; $PARTS_MB MB in all."
fi
out ""

# ---- 1. throughput -----------------------------------------------------------------

# throughput LABEL DIR PARTS... - one table of a filesystem
throughput()
{
	local label=$1 dir=$2
	shift 2
	local parts
	parts=$(array_sql "$@")
	local -A times=()
	local rep name t
	cat "$@" >/dev/null
	for rep in $(seq "$REPS"); do
		log "$label: run $rep of $REPS"
		times[cat]+="$(seconds cat "$@") "
		times[cp]+="$(seconds copy_files "$dir/cp" never "$@") "
		rm -rf "$dir/cp"
		if [ "$label" = xfs ]; then
			times[cp_reflink]+="$(seconds copy_files "$dir/cp" always "$@") "
			rm -rf "$dir/cp"
		fi
		for workers in 0 1 2; do
			times[w$workers]+="$(seconds concat_files "$dir/out.lance" $workers "$parts") "
			rm -f "$dir/out.lance"
		done
		sync
	done
	for name in "${!times[@]}"; do
		times[$name]=$(echo "${times[$name]}" | median)
	done
	out "### Assembling $PARTS_MB MB of parts on $label"
	out ""
	out "| operation | seconds | MB/s | time / cp |"
	out "|---|---:|---:|---:|"
	out "| \`cat parts > /dev/null\` (read only) | ${times[cat]} | $(mbps "$PARTS_MB" "${times[cat]}") | $(ratio "${times[cat]}" "${times[cp]}") |"
	out "| \`cp --reflink=never\` + \`sync\` | ${times[cp]} | $(mbps "$PARTS_MB" "${times[cp]}") | 1.00 |"
	if [ "$label" = xfs ]; then
		out "| \`cp --reflink=always\` + \`sync\` | ${times[cp_reflink]} | $(mbps "$PARTS_MB" "${times[cp_reflink]}") | $(ratio "${times[cp_reflink]}" "${times[cp]}") |"
	fi
	for workers in 0 1 2; do
		out "| concat_files, $workers workers | ${times[w$workers]} | $(mbps "$PARTS_MB" "${times[w$workers]}") | $(ratio "${times[w$workers]}" "${times[cp]}") |"
	done
	out ""
}

if section assembly; then
	throughput ext4 "$WORK/ext4" "${EXT4_PARTS[@]}"
	throughput xfs "$XFS" "${XFS_PARTS[@]}"
fi

# ---- 2. peak memory ---------------------------------------------------------------

if section memory; then
	log "peak memory"
	out "### Backend peak memory (VmHWM) by input size, ext4"
	out ""
	out "| input MB | parts | workers | VmHWM before, kB | VmHWM after, kB |"
	out "|---:|---:|---:|---:|---:|"
	for count in 1 10 30; do
		parts=()
		for i in $(seq 0 $((count - 1))); do
			parts+=("${EXT4_PARTS[$((i % 10))]}")
		done
		input_mb=$(du -cm --apparent-size "${parts[@]}" | tail -1 | cut -f1)
		[ "$count" -eq 30 ] && input_mb=$((PARTS_MB * 3))
		for workers in 0 2; do
			hwm=$(sql -c "SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\\s+(\\d+)')" \
				-c "SET lance_parts.max_copy_workers = $workers" \
				-c "SELECT status FROM lance_parts.concat_files('$WORK/ext4/memory.lance', $(array_sql "${parts[@]}"))" \
				-c "SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\\s+(\\d+)')" | grep -v written | paste -sd' ')
			rm -f "$WORK/ext4/memory.lance"
			out "| $input_mb | $count | $workers | ${hwm% *} | ${hwm#* } |"
		done
	done
	out ""
fi

# ---- 3. against the reference compaction -------------------------------------------

# compaction LABEL DIR SOURCE DESCRIPTION - optimize() against lance_parts.compact on
# copies of the dataset SOURCE
compaction()
{
	local label=$1 dir=$2 source=$3 description=$4
	local lp_times="" opt_times="" opt_sync_times="" opt_json="" rep start end source_mb
	source_mb=$(du -cm --apparent-size "$source"/data/*.lance | tail -1 | cut -f1)
	log "$label: lancedb optimize()"
	for rep in $(seq "$REPS"); do
		rm -rf "$dir/opt.lance" "$dir/lp.lance"
		cp -r --reflink=never "$source" "$dir/opt.lance"
		cp -r --reflink=never "$source" "$dir/lp.lance"
		chown -R postgres: "$dir/lp.lance"
		sync
		start=$(date +%s.%N)
		opt_json=$(node "$ROOT/bench/optimize.cjs" "$dir" opt)
		sync -f "$dir/opt.lance"
		end=$(date +%s.%N)
		opt_times+="$(node -p "JSON.parse(process.argv[1]).seconds.toFixed(3)" "$opt_json") "
		opt_sync_times+="$(echo "$start $end" | awk '{ printf "%.3f", $2 - $1 }') "
		lp_times+="$(seconds sql -c "SELECT count(*) FROM lance_parts.compact('$dir/lp.lance', target_rows_per_fragment => 4294967295)") "
	done
	rm -rf "$dir/opt.lance" "$dir/lp.lance"
	opt_times=$(echo "$opt_times" | median)
	opt_sync_times=$(echo "$opt_sync_times" | median)
	lp_times=$(echo "$lp_times" | median)
	out "### Compaction against the reference's compaction, $label, $(basename "$source" .lance) data"
	out ""
	out "$description lancedb \`optimize()\` decodes and re-encodes them into new files ($opt_json);"
	out "it does not fsync, so it is also timed with a \`sync\` of the dataset, node start-up included."
	out "\`lance_parts.compact\` concatenates the 10 data files by page copy into one new file (fsynced) and commits"
	out "a Rewrite of the 10 fragments into one."
	out ""
	out "| operation | seconds | MB/s | speed-up over optimize() + sync |"
	out "|---|---:|---:|---:|"
	out "| lancedb \`optimize()\` | $opt_times | $(mbps "$source_mb" "$opt_times") | $(ratio "$opt_sync_times" "$opt_times") |"
	out "| lancedb \`optimize()\` + \`sync\` | $opt_sync_times | $(mbps "$source_mb" "$opt_sync_times") | 1.00 |"
	out "| \`lance_parts.compact\` (2 workers) | $lp_times | $(mbps "$source_mb" "$lp_times") | $(ratio "$opt_sync_times" "$lp_times") |"
	out ""
}

if section compaction; then
	compaction ext4 "$WORK/ext4" "$WORK/ext4/big.lance" "Same 10 fragments (vectors)."
	compaction xfs "$XFS" "$WORK/ext4/big.lance" "Same 10 fragments (vectors)."
	log "generating text-heavy fragments with npm lancedb"
	node "$ROOT/bench/generate.cjs" text "$WORK/ext4" text 10 200000 >/dev/null
	compaction ext4 "$WORK/ext4" "$WORK/ext4/text.lance" \
		"10 fragments of 200,000 text rows (id, an 8-word title, a 20-word body, a user id, a category; FSST and dictionaries)."
	rm -rf "$WORK/ext4/text.lance"
fi

# ---- 4. number of parts -------------------------------------------------------------

if section parts; then
	out "### Cost by number of parts of the same total size, ext4"
	out ""
	out "Each row assembles one generated part of total/N bytes, listed N times."
	out ""
	out "| parts | part size, kB | validate + plan, ms | per part, µs | total seconds | MB/s |"
	out "|---:|---:|---:|---:|---:|---:|"
	for count in 10 100 1000 10000; do
		log "$count parts"
		node "$ROOT/bench/generate.cjs" dataset "$WORK/ext4" "n$count" 1 $((SIZE_MB * 1024 * 1024 / count)) >/dev/null
		chown -R postgres: "$WORK/ext4/n$count.lance"
		part=$(ls "$WORK/ext4/n$count.lance/data/"*.lance)
		part_kb=$(( $(stat -c %s "$part") / 1024 ))
		plan_ms=""
		total=""
		for rep in $(seq "$REPS"); do
			start=$(date +%s.%N)
			msg=$(sql -c "SET client_min_messages = debug1" \
				-c "SELECT status FROM lance_parts.concat_files('$WORK/ext4/n.lance', array_fill('$part'::text, ARRAY[$count]))" 2>&1 |
				sed -nE 's/.*validated and planned [0-9]+ parts of .* in ([0-9.]+) ms.*/\1/p')
			end=$(date +%s.%N)
			rm -f "$WORK/ext4/n.lance"
			plan_ms+="$msg "
			total+="$(echo "$start $end" | awk '{ printf "%.3f", $2 - $1 }') "
		done
		plan_ms=$(echo "$plan_ms" | median)
		total=$(echo "$total" | median)
		total_mb=$(( $(stat -c %s "$part") * count / 1048576 ))
		out "| $count | $part_kb | $plan_ms | $(awk -v ms="$plan_ms" -v n="$count" 'BEGIN { printf "%.1f", ms * 1000 / n }') | $total | $(mbps "$total_mb" "$total") |"
		rm -rf "$WORK/ext4/n$count.lance"
	done
	out ""
fi

# ---- 5. full scans ----------------------------------------------------------------

# scan TABLE WORKERS - a full scan of TABLE through lance_fdw with at most WORKERS parallel workers
scan()
{
	sql -c "SET max_parallel_workers_per_gather = $2" -c "SELECT count(t.*) FROM $1 t"
}

# scan_plan TABLE WORKERS - "planned/launched" workers of the same scan (EXPLAIN ANALYZE)
scan_plan()
{
	sql -c "SET max_parallel_workers_per_gather = $2" \
		-c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(t.*) FROM $1 t" |
		awk '/Workers Planned:/ { p = $3 } /Workers Launched:/ { l = $3 } END { printf "%d/%d", p, l }'
}

# full_scan NAME FRAGMENTS ROWS_PER_FRAGMENT DIM VERSION JOIN DESCRIPTION - a dataset NAME
# written by lancedb (FRAGMENTS fragments, emb of DIM floats, file version VERSION), its
# fragments joined into one by lance_parts.compact (a page copy) when JOIN is "join", scanned by
# lance_fdw with 0, 1 and 2 workers and by lancedb, REPS times each, alternating.
full_scan()
{
	local name=$1 fragments=$2 rows=$3 dim=$4 version=$5 join=$6 description=$7
	local row_bytes=$((8 + 8 + 16 + 4 * dim + 8)) scan_rows ref_times="" workers
	declare -A scan_times=() scan_plans=()

	log "full scans: $name"
	node "$ROOT/bench/generate.cjs" dataset "$WORK/ext4" "$name" "$fragments" $((rows * row_bytes)) "$dim" "$version" >"$WORK/$name.json"
	chown -R postgres: "$WORK/ext4/$name.lance"
	scan_rows=$(node -p "JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8')).rows" "$WORK/$name.json")
	if [ "$join" = join ]; then
		sql -c "SELECT count(*) FROM lance_parts.compact('$WORK/ext4/$name.lance', target_rows_per_fragment => 4294967295)" >/dev/null
	fi
	sql -c "CREATE FOREIGN TABLE $name (id bigint, value double precision, label text, emb real[]) SERVER bench_scan OPTIONS (uri '$WORK/ext4/$name.lance')"
	for rep in $(seq "$REPS"); do
		# count(t.*) needs the whole row, so every column is decoded and converted
		for workers in 0 1 2; do
			scan_times[$workers]+="$(seconds scan "$name" "$workers") "
		done
		ref_times+="$(node "$ROOT/bench/scan.cjs" "$WORK/ext4" "$name" | node -p "JSON.parse(require('fs').readFileSync(0, 'utf8')).seconds.toFixed(3)") "
	done
	for workers in 0 1 2; do
		scan_times[$workers]=$(echo "${scan_times[$workers]}" | median)
		scan_plans[$workers]=$(scan_plan "$name" "$workers")
	done
	ref_times=$(echo "$ref_times" | median)
	out "### Full scan of $scan_rows rows, $description, ext4"
	out ""
	out "Columns id int64, value float64, label utf8 and emb fixed_size_list<float32>[$dim] (file version $version,"
	out "$(sql -c "SET max_parallel_workers_per_gather = 0" -c "EXPLAIN SELECT 1 FROM $name" | awk '/Fragments:/ { print $2; exit }') fragments)."
	out "lance_fdw: \`SELECT count(t.*) FROM $name t\` through psql (every column decoded and converted to PostgreSQL"
	out "values; session start included) with \`max_parallel_workers_per_gather\` 0, 1 and 2 and the default planner costs"
	out "(workers planned/launched from \`EXPLAIN ANALYZE\` of the same query; the leader scans too). Reference: lancedb"
	out "\`table.query().toArrow()\` of every column (timed inside node). The runs alternate, so they share the machine's noise."
	out ""
	out "| reader | workers planned/launched | seconds | rows per second | speed / reference |"
	out "|---|---:|---:|---:|---:|"
	for workers in 0 1 2; do
		out "| lance_fdw, $workers workers | ${scan_plans[$workers]} | ${scan_times[$workers]} | $(rows_per_second "$scan_rows" "${scan_times[$workers]}") | $(ratio "$ref_times" "${scan_times[$workers]}") |"
	done
	out "| lancedb (reference) | | $ref_times | $(rows_per_second "$scan_rows" "$ref_times") | 1.00 |"
	out ""
}

rows_per_second() { awk -v n="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print "-" }'; }

if section scan || section scan_large; then
	sql -c "CREATE SERVER bench_scan FOREIGN DATA WRAPPER lance_fdw"
fi
if section scan; then
	full_scan scan 8 250000 8 2.1 keep "8 small fragments"
fi
if section scan_large; then
	full_scan scan_large 5 840000 32 2.2 join "one large fragment"
fi

bench_finish
