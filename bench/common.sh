# common.sh - the set-up every benchmark script shares; sourced by bench/run.sh,
# bench/pushdown.sh and bench/s3.sh before they parse their options.
#
#   bench_start NAME   after the options: checks root, installs what is missing
#                      (scripts/setup.sh: Debian packages, npm modules, the
#                      extension built and installed into LP_PG_BINDIR's server;
#                      idempotent, skipped with LP_BENCH_SETUP=0), makes the work
#                      directory $WORK under LP_BENCH_TMPDIR (default /var/tmp,
#                      the normal disk), starts a throwaway cluster there
#                      (test/cluster.sh, port LP_BENCH_PORT, default 55491) with
#                      the extension, and removes it all at exit
#   bench_prepare NAME bench_start without the cluster: root, set-up, $WORK
#   bench_on_exit CMD  run CMD at exit, before the cluster stops and $WORK goes
#                      (in the reverse order of registration)
#   bench_header TEXT  the results' heading: date, commit, the command line
#                      ($COMMAND) with TEXT after it, and the machine
#   bench_finish       print the results, insert them into docs/BENCHMARKS.md before
#                      the earlier runs (latest first)
#                      unless $APPEND is false
# and the helpers log, out, median, ratio, mbps, array_sql.
# shellcheck shell=bash

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_BINDIR=${LP_PG_BINDIR:-/usr/lib/postgresql/15/bin}
export LP_PG_BINDIR=$PG_BINDIR
export PATH=$PG_BINDIR:$PATH
export NODE_PATH=$ROOT/test/reference/node_modules
export LANCEDB_LOG=error
APPEND=true
BENCH_EXIT_COMMANDS=()

log() { echo "bench: $*" >&2; }
out() { echo "$*" >>"$RESULTS"; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
mbps() { awk -v mb="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.0f", mb / s; else print "-" }'; }

# array_sql ITEM... - an SQL text[] of the items
array_sql()
{
	local first=true f
	printf "ARRAY["
	for f in "$@"; do
		$first || printf ","
		first=false
		printf "'%s'" "$f"
	done
	printf "]::text[]"
}

bench_on_exit() { BENCH_EXIT_COMMANDS=("$1" "${BENCH_EXIT_COMMANDS[@]}"); }

bench_cleanup()
{
	local command
	for command in "${BENCH_EXIT_COMMANDS[@]}"; do
		eval "$command" || true
	done
	[ -z "${LP_CLUSTER_DIR:-}" ] || "$ROOT/test/cluster.sh" stop >/dev/null 2>&1 || true
	rm -rf "$WORK"
}

# bench_prepare NAME - bench_start without the cluster (bench/fuzz.sh needs none)
bench_prepare()
{
	if [ "$(id -u)" -ne 0 ]; then
		echo "bench: must run as root (it installs packages and runs the cluster as the postgres user)" >&2
		exit 1
	fi
	WORK=$(mktemp -d "${LP_BENCH_TMPDIR:-/var/tmp}/$1.XXXXXX")
	chmod 755 "$WORK"
	RESULTS=$WORK/results.md
	trap bench_cleanup EXIT
	if [ "${LP_BENCH_SETUP:-1}" != 0 ]; then
		log "set-up (scripts/setup.sh)"
		bash "$ROOT/scripts/setup.sh" >"$WORK/setup.log" 2>&1 || { cat "$WORK/setup.log" >&2; exit 1; }
	fi
}

bench_start()
{
	bench_prepare "$1"
	export LP_CLUSTER_DIR=$WORK/cluster
	export LP_PGPORT=${LP_BENCH_PORT:-55491}
	log "cluster"
	"$ROOT/test/cluster.sh" start >/dev/null
	# shellcheck source=/dev/null
	. "$LP_CLUSTER_DIR/env"
	psql -X -Atq -v ON_ERROR_STOP=1 -c "CREATE EXTENSION lance_parts"
}

# bench_data_dir - DATA=$WORK/data, made and given to the server's user
bench_data_dir()
{
	DATA=$WORK/data
	mkdir -p "$DATA"
	chown postgres "$DATA"
}

# synced_seconds CMD... - wall-clock seconds of CMD and a sync, 3 decimals
synced_seconds()
{
	local start end
	start=$(date +%s.%N)
	"$@" >/dev/null
	sync
	end=$(date +%s.%N)
	awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }'
}

# bench_s3_start MEMSTORE_BYTES - scripts/s3-server.sh's Ceph RGW on loopback for this run
# (objects in memory, up to MEMSTORE_BYTES), stopped at exit: its settings exported (LP_S3_*),
# LP_BENCH_STORAGE_OPTIONS for lancedb, BASE=s3://<bucket>/bench, and the lance_fdw server
# bench_s3 rooted there with the current user's mapping.  Needs sql().
bench_s3_start()
{
	local settings name value

	log "S3 server"
	export LP_S3_DIR=$WORK/s3
	export LP_S3_MEMSTORE_BYTES=$1
	bench_on_exit 'bash "$ROOT/scripts/s3-server.sh" stop >/dev/null 2>&1'
	settings=$(bash "$ROOT/scripts/s3-server.sh" start)
	while IFS='=' read -r name value; do
		export "$name=$value"
	done <<<"$settings"
	export LP_BENCH_STORAGE_OPTIONS="{\"aws_endpoint\": \"$LP_S3_ENDPOINT\", \"aws_access_key_id\": \"$LP_S3_ACCESS_KEY_ID\",
		\"aws_secret_access_key\": \"$LP_S3_SECRET_ACCESS_KEY\", \"aws_region\": \"$LP_S3_REGION\",
		\"allow_http\": \"true\", \"aws_virtual_hosted_style_request\": \"false\"}"
	BASE=s3://$LP_S3_BUCKET/bench
	sql -c "CREATE SERVER bench_s3 FOREIGN DATA WRAPPER lance_fdw OPTIONS (root '$BASE', endpoint '$LP_S3_ENDPOINT', region '$LP_S3_REGION', allow_http 'true')" \
		-c "CREATE USER MAPPING FOR CURRENT_USER SERVER bench_s3 OPTIONS (access_key_id '$LP_S3_ACCESS_KEY_ID', secret_access_key '$LP_S3_SECRET_ACCESS_KEY')"
}

bench_header()
{
	out "## $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	out ""
	out "Command: \`$COMMAND\`$1"
	out "Machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, kernel $(uname -r), $(psql --version | head -1)."
}

bench_finish()
{
	cat "$RESULTS"
	if $APPEND; then
		# latest first: before the first dated section (the summary stays on top)
		awk -v results="$RESULTS" '
			!done && /^## [0-9]/ { while ((getline line < results) > 0) print line; print ""; done = 1 }
			{ print }
			END { if (!done) while ((getline line < results) > 0) print line }
		' "$ROOT/docs/BENCHMARKS.md" >"$RESULTS.doc"
		cat "$RESULTS.doc" >"$ROOT/docs/BENCHMARKS.md"
		rm -f "$RESULTS.doc"
		log "inserted before the earlier runs in docs/BENCHMARKS.md"
	fi
}

