#!/usr/bin/env bash
#
# demo.sh - the README's first command: install what is missing, build and
# install lance_parts, start a throwaway cluster, write a small Lance dataset
# with the reference implementation (npm lancedb) and run the main job on it.
# Everything is removed afterwards unless --keep is given, which leaves the
# cluster and the dataset for you to explore.
#
#   scripts/demo.sh [--keep]
#
# Runs as root (re-runs itself through sudo otherwise); the server runs as the
# postgres OS user and owns the dataset, as it would in production.  It prints
# one line per step and the results; what the steps print (apt, the compiler,
# npm, the server) goes to the log file /tmp/lance_parts-demo.log, whose end is
# shown when a step fails.  LP_PG_BINDIR picks another PostgreSQL 15
# installation and LP_PGPORT the cluster's port, as for test/run.sh.
#
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_BINDIR=${LP_PG_BINDIR:-/usr/lib/postgresql/15/bin}
LOG=/tmp/lance_parts-demo.log

if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null; then
		exec sudo -- bash "${BASH_SOURCE[0]}" "$@"
	fi
	echo "demo.sh: must run as root (it installs packages and runs the server as postgres)" >&2
	exit 1
fi

keep=false
case "${1:-}" in
	"") ;;
	--keep) keep=true ;;
	*)
		echo "usage: scripts/demo.sh [--keep]" >&2
		exit 2
		;;
esac

# fail TITLE STATUS - the end of the log, and stop.
fail()
{
	echo "---- the last 40 lines of $LOG"
	tail -n 40 "$LOG"
	echo "demo.sh: \"$1\" failed (exit status $2); all its output is in $LOG" >&2
	exit 1
}

# step TITLE CMD... - run CMD (a command or a function of this script), all its
# output in the log; "done", or the log's end.
step()
{
	local title=$1 rc
	shift
	printf '==> %s ... ' "$title"
	printf '\n==== %s\n' "$title" >>"$LOG"
	if "$@" >>"$LOG" 2>&1 </dev/null; then
		echo "done"
	else
		rc=$?
		echo "failed"
		fail "$title" "$rc"
	fi
}

# show TITLE CMD... - the same for a step whose standard output is its result:
# shown, indented, below the title.
show()
{
	local title=$1 result rc
	shift
	printf '==> %s\n' "$title"
	printf '\n==== %s\n' "$title" >>"$LOG"
	if result=$("$@" 2>>"$LOG" </dev/null); then
		printf '%s\n' "$result" >>"$LOG"
		printf '%s\n' "$result" | sed 's/^/    /'
	else
		rc=$?
		printf '%s\n' "$result" >>"$LOG"
		fail "$title" "$rc"
	fi
}

: >"$LOG"
echo "lance_parts demo; the output of every step is in $LOG"

step "installing what is missing, building and installing lance_parts (scripts/setup.sh)" \
	bash "$ROOT/scripts/setup.sh"
if [ ! -d "$ROOT/test/reference/node_modules/@lancedb/lancedb" ]; then
	echo "demo.sh: the reference implementation is not installed (test/reference/node_modules)" >&2
	exit 1
fi

WORK=$(mktemp -d /tmp/lance_parts-demo.XXXXXX)
chmod 755 "$WORK"
export LP_CLUSTER_DIR=$WORK/cluster
export LP_PGPORT=${LP_PGPORT:-55432}
DATASET=$WORK/datasets/products.lance

cleanup()
{
	"$ROOT/test/cluster.sh" stop
	rm -rf "$WORK"
}
$keep || trap 'cleanup >>"$LOG" 2>&1' EXIT

lancedb_node()
{
	NODE_PATH="$ROOT/test/reference/node_modules" LANCEDB_LOG=error node "$@"
}

write_datasets()
{
	lancedb_node "$ROOT/scripts/demo-dataset.cjs" "$WORK/datasets" &&
		chown -R postgres: "$WORK/datasets"
}

start_cluster()
{
	# shellcheck source=/dev/null
	"$ROOT/test/cluster.sh" start &&
		. "$LP_CLUSTER_DIR/env" &&
		"$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION lance_parts'
}

show "writing a dataset and the 3 parts of an ingestion job with npm lancedb" write_datasets
step "starting a throwaway cluster (port $LP_PGPORT) and creating the extension" start_cluster

# ---- main job ----------------------------------------------------------------
# A whole ingest: the parts the workers wrote are assembled by page copy into
# one new data file of the dataset and committed as a new version, in one
# SQL call; then the reference implementation reads the dataset back.
ingest()
{
	local dataset=$1 parts_dir=$2 parts

	parts=$(printf "'%s'," "$parts_dir"/data/*.lance)
	"$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 <<SQL
SELECT * FROM lance_parts.ingest('$dataset', ARRAY[${parts%,}]) \\gset
\\echo :num_rows rows assembled into :path, published as a new version when the statement commits
SELECT version, num_rows, num_columns, size_bytes FROM lance_parts.file_info(:'path');
SQL
}

# shellcheck disable=SC2016  # ${...} is JavaScript's
read_back()
{
	local read
	read=$(lancedb_node "$ROOT/test/reference/read.cjs" "$1") &&
		lancedb_node -e '
const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(`version ${r.version}: ${r.num_rows} rows in fragments ${JSON.stringify(r.fragments)}`);' <<<"$read"
}
# ---- end of main job ---------------------------------------------------------

show "ingest: lance_parts.ingest('$DATASET', ARRAY[the 3 parts])" \
	ingest "$DATASET" "$WORK/datasets/incoming.lance"
show "reading the dataset back with npm lancedb" read_back "$DATASET"

if $keep; then
	echo
	echo "The cluster is still running and the dataset is in $DATASET."
	echo "  connect:  eval \"\$(LP_CLUSTER_DIR=$LP_CLUSTER_DIR $ROOT/test/cluster.sh env)\"; psql"
	echo "  clean up: LP_CLUSTER_DIR=$LP_CLUSTER_DIR $ROOT/test/cluster.sh stop; rm -rf $WORK"
else
	trap - EXIT
	step "removing the cluster and the datasets" cleanup
fi
