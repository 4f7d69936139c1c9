#!/usr/bin/env bash
#
# compact_indexed.sh - lance_parts.compact of fragments a BTREE and a BITMAP
# index cover, against lancedb optimize() of the same fragments; appended to
# docs/BENCHMARKS.md with the command line.
#
#   sudo bench/compact_indexed.sh [--fragments N] [--rows N] [--version V] [--no-append]
#
# Cases (bench/indexed_dataset.cjs writes each dataset with lancedb: --fragments
# (default 32) appends of --rows (default 20000) rows, both indexes built over
# them): stable row ids (the indexes stay, their fragment bitmaps follow); no
# stable row ids (both indexes remapped into new ones); no stable row ids with
# every 10th row deleted after the indexes were built (compact with
# rewrite_deletions re-encodes the live rows and drops the deleted ones from
# the remapped indexes).  Each dataset is copied, then compacted by
# lance_parts.compact on one copy and by lancedb optimize() (which compacts,
# remaps and optimizes the indexes) on the other, each followed by sync.
#
set -euo pipefail

# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
COMMAND="bench/compact_indexed.sh${*:+ $*}"
FRAGMENTS=32
ROWS=20000
VERSION=2.1

while [ $# -gt 0 ]; do
	case "$1" in
		--fragments) FRAGMENTS=$2; shift ;;
		--rows) ROWS=$2; shift ;;
		--version) VERSION=$2; shift ;;
		--no-append) APPEND=false ;;
		*) echo "usage: bench/compact_indexed.sh [--fragments N] [--rows N] [--version V] [--no-append]" >&2; exit 2 ;;
	esac
	shift
done
bench_start lp-bench-indexed
bench_data_dir

bench_header " ($FRAGMENTS fragments of $ROWS rows, file version $VERSION, a BTREE index on id and a BITMAP index on k)"
out ""
out "| case | \`compact\` | new index directories | lancedb \`optimize()\` | ratio |"
out "| --- | --- | --- | --- | --- |"
for spec in "stable row ids:true:false:false" "no stable row ids, indexes remapped:false:false:false" \
	"no stable row ids, 10% deleted, indexes remapped:false:true:true"; do
	IFS=: read -r label stable remove rewrite <<<"$spec"
	name=d$stable$remove
	log "dataset: $label"
	(cd "$ROOT/bench" && node indexed_dataset.cjs "$DATA" "$name" "$FRAGMENTS" "$ROWS" "$VERSION" "$stable" "$remove") >/dev/null
	cp -a --reflink=never "$DATA/$name.lance" "$DATA/l$name.lance"
	chown -R postgres "$DATA"
	sync
	before=$(ls "$DATA/$name.lance/_indices" | wc -l)
	log "compact"
	ours=$(synced_seconds psql -X -Atq -v ON_ERROR_STOP=1 -o "$WORK/compact.out" -c \
		"SELECT count(*) FILTER (WHERE action = 'skipped') FROM lance_parts.compact('$DATA/$name.lance', rewrite_deletions => $rewrite)")
	[ "$(cat "$WORK/compact.out")" = 0 ] || { log "compact skipped $(cat "$WORK/compact.out") fragments"; exit 1; }
	after=$(ls "$DATA/$name.lance/_indices" | wc -l)
	log "lancedb optimize()"
	theirs=$(cd "$ROOT/bench" && synced_seconds node optimize.cjs "$DATA" "l$name")
	out "| $label | $ours s | $((after - before)) | $theirs s | $(ratio "$theirs" "$ours") |"
	rm -rf "$DATA/$name.lance" "$DATA/l$name.lance"
done
out ""
out "\`compact\` copies the pages of the data files (re-encoding only the live rows of fragments with deleted rows)"
out "and, without stable row ids, writes each index anew for the new row addresses; with stable row ids the indexes"
out "stay and only their fragment bitmaps change.  lancedb's \`optimize()\` re-encodes every row and remaps or"
out "retrains the indexes."
bench_finish
