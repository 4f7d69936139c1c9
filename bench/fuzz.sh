#!/usr/bin/env bash
#
# fuzz.sh - every libFuzzer target of the core (test/fuzz/fuzz_*.c) run for a
# fixed number of executions under ASan and UBSan, seeded from the reference
# files, recorded at the top of docs/BENCHMARKS.md with the command line that
# produced it.
#
#   sudo bench/fuzz.sh [--runs N] [--max-seconds S] [--targets "fuzz_a fuzz_b"] [--no-append]
#
# Needs root like the other bench scripts: the set-up (bench/common.sh,
# scripts/setup.sh) installs clang, the libraries and the npm modules.  Then:
#   1. builds every target (make build/fuzz_<name>: the core library with
#      libFuzzer coverage, ASan and UBSan, -fno-sanitize-recover=all);
#   2. seeds a work corpus per target: its committed seeds
#      (test/fuzz/corpus/<target>) and the files of the reference datasets
#      that target reads (LP_TESTDATA, else written by make testdata into the
#      work directory): data files of at most 64 KiB for the file, decoder,
#      field reader, footer and blob targets, manifests, transaction files
#      and deletion files, with the header bytes each target expects;
#   3. runs the targets one after the other, one process each (the machine
#      is shared), for --runs executions each (default 10^6; -runs), or at
#      most --max-seconds each when given (-max_total_time: the executions
#      column then shows how far a slow target got), with leak detection, a
#      120 s limit per input and 2 GiB of memory;
#   4. prints per target the executions, their rate, the coverage (cov: edges,
#      ft: features, from libFuzzer's last status line), the corpus it ended
#      with, the crashes (crash, leak, timeout and out-of-memory inputs) and
#      the time, and inserts that section at the top of docs/BENCHMARKS.md
#      (unless --no-append).
# Inputs that crashed are kept in build/fuzz-artifacts/<target>/ and the run
# exits with status 1 when there is any.
#
set -euo pipefail
shopt -s inherit_errexit	# a failure inside $(...) ends the run too

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
COMMAND="bench/fuzz.sh${*:+ $*}"
RUNS=1000000
MAX_SECONDS=0
TARGETS=""
SEED_MAX_BYTES=65536

while [ $# -gt 0 ]; do
	case "$1" in
		--runs) RUNS=$2; shift ;;
		--max-seconds) MAX_SECONDS=$2; shift ;;
		--targets) TARGETS=${2//,/ }; shift ;;
		--no-append) APPEND=false ;;
		*) echo "usage: bench/fuzz.sh [--runs N] [--max-seconds S] [--targets \"fuzz_a fuzz_b\"] [--no-append]" >&2; exit 2 ;;
	esac
	shift
done
if [ -z "$TARGETS" ]; then
	for source in "$ROOT"/test/fuzz/fuzz_*.c; do
		TARGETS+="$(basename "$source" .c) "
	done
fi
for target in $TARGETS; do
	[ -f "$ROOT/test/fuzz/$target.c" ] || { echo "bench: no fuzz target $target (test/fuzz/$target.c)" >&2; exit 2; }
done
unset LP_CLUSTER_DIR			# no cluster: bench_cleanup stops none
bench_prepare lp-fuzz

# ---- 1. build ----------------------------------------------------------------
log "build"
for target in $TARGETS; do
	make -C "$ROOT" --no-print-directory "build/$target" >>"$WORK/build.log" 2>&1 ||
		{ cat "$WORK/build.log" >&2; exit 1; }
done

# ---- 2. seeds ----------------------------------------------------------------
DATA=${LP_TESTDATA:-}
if [ -z "$DATA" ] || [ ! -f "$DATA/manifest.json" ]; then
	DATA=$WORK/testdata
	log "reference data (make testdata)"
	make -C "$ROOT" --no-print-directory testdata TESTDATA="$DATA" >"$WORK/testdata.log" 2>&1 ||
		{ cat "$WORK/testdata.log" >&2; exit 1; }
fi

# le64 N: N as 8 little-endian bytes, in hex
le64()
{
	local n=$1 i
	for i in 0 1 2 3 4 5 6 7; do
		printf %02x $(( (n >> (8 * i)) & 255 ))
	done
}

# reference FIND-ARGS...: the reference files find selects, at most SEED_MAX_BYTES each
reference() { find "$DATA" -type f "$@" -size -$((SEED_MAX_BYTES + 1))c | sort; }

# seed TARGET FILE [HEADER]: FILE, behind the header (hex digits), into TARGET's corpus
seed()
{
	local corpus=$WORK/corpus/$1 name
	name=$(printf '%s' "${2#"$DATA"/}" | tr '/' '_')
	# shellcheck disable=SC2059
	{ printf "$(sed 's/../\\x&/g' <<<"${3:-}")"; cat "$2"; } >"$corpus/ref_$name"
}

log "seeds from $DATA"
for target in $TARGETS; do
	mkdir -p "$WORK/corpus/$target"
	cp -r "$ROOT/test/fuzz/corpus/$target/." "$WORK/corpus/$target/"
	case "$target" in
		fuzz_file_metadata|fuzz_decode|fuzz_field_reader|fuzz_blob_descriptor)
			while read -r file; do seed "$target" "$file"; done < <(reference -name '*.lance')
			;;
		fuzz_footer)
			# the file's real size first: its tail is the whole file
			while read -r file; do
				seed "$target" "$file" "$(le64 "$(stat -c %s "$file")")"
			done < <(reference -name '*.lance')
			;;
		fuzz_manifest)
			while read -r file; do seed "$target" "$file"; done < <(reference -name '*.manifest')
			;;
		fuzz_transaction)
			# a replace of fragment 0, then the transaction
			while read -r file; do seed "$target" "$file" 0100000000000000; done < <(reference -name '*.txn')
			;;
		fuzz_btree_index)
			# the lookup file's length, the lookup file, then the page file
			while read -r file; do
				dir=$(dirname "$file")
				[ -f "$dir/page_data.lance" ] || continue
				# shellcheck disable=SC2059
				{ printf "$(le64 "$(stat -c %s "$file")" | cut -c1-8 | sed 's/../\\x&/g')"; cat "$file" "$dir/page_data.lance"; } \
					>"$WORK/corpus/$target/ref_$(basename "$dir")"
			done < <(reference -name page_lookup.lance -path '*_indices*')
			;;
		fuzz_deletion)
			# the form, then 2^17 - 1 rows
			while read -r file; do seed "$target" "$file" 00ffff01; done < <(reference -name '*.arrow' -path '*_deletions*')
			while read -r file; do seed "$target" "$file" 01ffff01; done < <(reference -name '*.bin' -path '*_deletions*')
			;;
	esac
done

# ---- 3. runs -----------------------------------------------------------------
header()
{
	out "## $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown): fuzzing"
	out ""
	out "Command: \`$COMMAND\`"
	out "Machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, kernel $(uname -r), $(clang --version | head -1), load average $(cut -d' ' -f1-3 /proc/loadavg) at the start."
	out "Every target (test/fuzz/<target>.c) runs alone, one process, for $RUNS executions$( [ "$MAX_SECONDS" -eq 0 ] || echo " or $MAX_SECONDS s, whichever comes first,") under ASan and UBSan"
	out "(-fno-sanitize-recover=all, leak detection on), seeded from test/fuzz/corpus/<target> and the reference"
	out "datasets. cov: edges covered, ft: libFuzzer's features, from its last status line; corpus: the inputs it"
	out "kept (from the seeds it started with); crashes: crash, leak, timeout and out-of-memory inputs."
	out ""
	out "| target | executions | exec/s | cov | ft | corpus (seeds) | crashes | time |"
	out "|---|---:|---:|---:|---:|---:|---:|---:|"
}

header
ARTIFACTS=$ROOT/build/fuzz-artifacts
TOTAL_CRASHES=0
for target in $TARGETS; do
	corpus=$WORK/corpus/$target
	seeds=$(find "$corpus" -type f | wc -l)
	mkdir -p "$ARTIFACTS/$target"
	log "$target: $RUNS runs from $seeds seeds"
	started=$(date +%s)
	status=0
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		"$ROOT/build/$target" -runs="$RUNS" -max_total_time="$MAX_SECONDS" -rss_limit_mb=2048 -timeout=120 -print_final_stats=1 \
		-artifact_prefix="$ARTIFACTS/$target/" "$corpus" >"$WORK/$target.log" 2>&1 || status=$?
	seconds=$(( $(date +%s) - started ))
	executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$WORK/$target.log" | tail -1)
	rate=$(awk -v n="${executions:-0}" -v s="$seconds" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print "-" }')
	last=$(grep -E '^#[0-9]+' "$WORK/$target.log" | tail -1)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	units=$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<<"$last")
	crashes=$(find "$ARTIFACTS/$target" -type f -newermt "@$started" | wc -l)
	if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then
		crashes=1			# died without an input to keep: the log says why
	fi
	if [ "$crashes" -gt 0 ]; then
		TOTAL_CRASHES=$((TOTAL_CRASHES + crashes))
		cp "$WORK/$target.log" "$ARTIFACTS/$target/fuzz-$started.log"
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$WORK/$target.log" | head -5 >&2 || true
	fi
	out "| $target | ${executions:-?} | ${rate:-?} | ${cov:-?} | ${ft:-?} | ${units:-?} ($seeds) | $crashes | ${seconds} s |"
	log "$target: ${executions:-?} executions, cov ${cov:-?}, ft ${ft:-?}, $crashes crashes, ${seconds} s"
done
out ""
if [ "$TOTAL_CRASHES" -gt 0 ]; then
	out "$TOTAL_CRASHES crashing inputs, kept in build/fuzz-artifacts/."
	out ""
fi

# ---- 4. the record -------------------------------------------------------------
bench_finish
[ "$TOTAL_CRASHES" -eq 0 ]
