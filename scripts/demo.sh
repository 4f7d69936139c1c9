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
# postgres OS user and owns the dataset, as it would in production.
#
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

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

bash "$ROOT/scripts/setup.sh"
if [ ! -d "$ROOT/test/reference/node_modules/@lancedb/lancedb" ]; then
	echo "demo.sh: the reference implementation is not installed (test/reference/node_modules)" >&2
	exit 1
fi

WORK=$(mktemp -d /tmp/lance_parts-demo.XXXXXX)
chmod 755 "$WORK"
export LP_CLUSTER_DIR=$WORK/cluster
export LP_PGPORT=${LP_PGPORT:-55432}

cleanup()
{
	"$ROOT/test/cluster.sh" stop
	rm -rf "$WORK"
}
$keep || trap cleanup EXIT

echo
echo "==== writing a dataset with npm lancedb"
NODE_PATH="$ROOT/test/reference/node_modules" LANCEDB_LOG=error \
	node "$ROOT/scripts/demo-dataset.cjs" "$WORK/datasets"
chown -R postgres: "$WORK/datasets"
DATASET=$WORK/datasets/products.lance

echo
echo "==== starting a throwaway cluster"
"$ROOT/test/cluster.sh" start >/dev/null
# shellcheck source=/dev/null
. "$LP_CLUSTER_DIR/env"
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION lance_parts'

# ---- main job ----------------------------------------------------------------
# A whole ingest: the parts the workers wrote are assembled by page copy into
# one new data file of the dataset and committed as a new version, in one
# SQL call; then the reference implementation reads the dataset back.
main_job()
{
	local dataset=$1 parts_dir=$2 parts

	parts=$(printf "'%s'," "$parts_dir"/data/*.lance)
	echo
	echo "==== ingest: lance_parts.ingest('$dataset', ARRAY[parts])"
	psql -X -q -v ON_ERROR_STOP=1 <<SQL
SELECT * FROM lance_parts.ingest('$dataset', ARRAY[${parts%,}]) \\gset
\\echo new version :dataset_version, fragment :fragment_id, :num_rows rows in :path
SELECT version, num_rows, num_columns, size_bytes FROM lance_parts.file_info(:'path');
SQL
	echo
	echo "==== read back by the reference implementation (npm lancedb)"
	NODE_PATH="$ROOT/test/reference/node_modules" LANCEDB_LOG=error \
		node -e '
const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(`version ${r.version}: ${r.num_rows} rows in fragments ${JSON.stringify(r.fragments)}`);' \
		< <(NODE_PATH="$ROOT/test/reference/node_modules" LANCEDB_LOG=error \
			node "$ROOT/test/reference/read.cjs" "$dataset")
}
# ---- end of main job ---------------------------------------------------------

main_job "$DATASET" "$WORK/datasets/incoming.lance"

if $keep; then
	echo
	echo "The cluster is still running and the dataset is in $DATASET."
	echo "  connect:  eval \"\$(LP_CLUSTER_DIR=$LP_CLUSTER_DIR $ROOT/test/cluster.sh env)\"; psql"
	echo "  clean up: LP_CLUSTER_DIR=$LP_CLUSTER_DIR $ROOT/test/cluster.sh stop; rm -rf $WORK"
fi
