#!/usr/bin/env bash
#
# compact_blobs.sh - lance_parts.compact of fragments with a Blob v2 column:
# its cost against the payloads' total size, and against lancedb optimize() of
# the same fragments; appended to docs/BENCHMARKS.md with the command line.
#
#   sudo bench/compact_blobs.sh [--fragments N] [--rows N] [--sizes "S ..."] [--version V] [--no-append]
#
# For each payload size S in bytes (default "131072 1048576 5242880": Packed,
# Packed, Dedicated with lancedb's default thresholds) a dataset of --fragments
# (default 8) appends of --rows (default 64) rows is written by lancedb
# (bench/blob_dataset.cjs, random payloads; each fragment's sidecars start at
# blob id 1, so compaction renumbers them), copied, and then compacted by
# lance_parts.compact on one copy and by lancedb optimize() on the other, each
# followed by sync.  The sidecars compact makes are hard links of the old ones
# (counted by their link count).
#
set -euo pipefail

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
COMMAND="bench/compact_blobs.sh${*:+ $*}"
FRAGMENTS=8
ROWS=64
SIZES="131072 1048576 5242880"
VERSION=2.2

while [ $# -gt 0 ]; do
	case "$1" in
		--fragments) FRAGMENTS=$2; shift ;;
		--rows) ROWS=$2; shift ;;
		--sizes) SIZES=$2; shift ;;
		--version) VERSION=$2; shift ;;
		--no-append) APPEND=false ;;
		*) echo "usage: bench/compact_blobs.sh [--fragments N] [--rows N] [--sizes \"S ...\"] [--version V] [--no-append]" >&2; exit 2 ;;
	esac
	shift
done
bench_start lp-bench-blobs
bench_data_dir

bench_header " ($FRAGMENTS fragments of $ROWS rows, file version $VERSION)"
out ""
out "| payload size | payloads in total | \`compact\` | of which sidecars linked | lancedb \`optimize()\` | ratio |"
out "| --- | --- | --- | --- | --- | --- |"
for size in $SIZES; do
	name=b$size
	log "dataset of $FRAGMENTS x $ROWS payloads of $size bytes"
	bytes=$(cd "$ROOT/bench" && node blob_dataset.cjs "$DATA" "$name" "$FRAGMENTS" "$ROWS" "$size" "$VERSION" |
		sed 's/.*"bytes":\([0-9]*\).*/\1/')
	cp -a --reflink=never "$DATA/$name.lance" "$DATA/l$name.lance"
	chown -R postgres "$DATA"
	sync
	log "compact"
	ours=$(synced_seconds psql -X -Atq -v ON_ERROR_STOP=1 -c "SELECT count(*) FROM lance_parts.compact('$DATA/$name.lance')")
	linked=$(find "$DATA/$name.lance/data" -name '*.blob' -links +1 | wc -l)
	total=$(find "$DATA/$name.lance/data" -name '*.blob' | wc -l)
	log "lancedb optimize()"
	theirs=$(cd "$ROOT/bench" && synced_seconds node optimize.cjs "$DATA" "l$name")
	out "| $size B | $(awk -v b="$bytes" 'BEGIN { printf "%.0f MB", b / 1e6 }') | $ours s | $linked of $total sidecar files have 2 links | $theirs s | $(ratio "$theirs" "$ours") |"
	rm -rf "$DATA/$name.lance" "$DATA/l$name.lance"
done
out ""
out "\`compact\` copies the id pages, writes the descriptor column anew and links each sidecar under its new name: its"
out "time follows the number of rows and of sidecar files (one per Dedicated payload), not the payloads' bytes;"
out "lancedb's \`optimize()\` copies every payload."
bench_finish
