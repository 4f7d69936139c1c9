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
# Inspect every data file of the dataset: footer, schema and pages.
main_job()
{
	local dataset=$1 file

	for file in "$dataset"/data/*.lance; do
		echo
		echo "==== $file"
		psql -X -q -v ON_ERROR_STOP=1 -v file="$file" <<'SQL'
\echo file_info
SELECT * FROM lance_parts.file_info(:'file');
\echo file_schema
SELECT * FROM lance_parts.file_schema(:'file');
\echo file_pages
SELECT * FROM lance_parts.file_pages(:'file');
SQL
	done
}
# ---- end of main job ---------------------------------------------------------

main_job "$DATASET"

if $keep; then
	echo
	echo "The cluster is still running and the dataset is in $DATASET."
	echo "  connect:  eval \"\$(LP_CLUSTER_DIR=$LP_CLUSTER_DIR $ROOT/test/cluster.sh env)\"; psql"
	echo "  clean up: LP_CLUSTER_DIR=$LP_CLUSTER_DIR $ROOT/test/cluster.sh stop; rm -rf $WORK"
fi
