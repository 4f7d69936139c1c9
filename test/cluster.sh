#!/usr/bin/env bash
#
# cluster.sh - a throwaway PostgreSQL cluster for tests and the demo.
#
#   test/cluster.sh start    initdb and start; prints the connection environment
#   test/cluster.sh env      prints the connection environment (for eval)
#   test/cluster.sh stop     stops the server and removes the cluster directory
#
# LP_CLUSTER_DIR (default /tmp/lance_parts-cluster) holds the data directory,
# the socket directory, the server log and the file "env", which other scripts
# source: it exports PGHOST, PGPORT, PGUSER=postgres and PGDATABASE=postgres.
# LP_PGPORT (default 55432) is the port.  LP_PG_BINDIR (default the system's
# PostgreSQL 15) picks the server, of any major scripts/pg-majors.sh builds.
#
# initdb refuses root, so the server runs as the postgres OS user; run this
# script as root or as postgres.  The server listens on a Unix socket in its
# own directory only (listen_addresses = ''), so it never clashes with another
# cluster on the same port and needs no TCP: psql, pg_regress and the node
# tests connect through the socket, and TAP tests start their own clusters.
# pg_cron is preloaded and runs its jobs in background workers, since with no
# TCP listener it could not connect to itself over libpq (where it is
# installed: without it the tests that use it fail, the others run); lance_parts is
# preloaded so that COPY ... TO takes format lance (the node tests write with it).
#
set -euo pipefail

PG_BINDIR=${LP_PG_BINDIR:-/usr/lib/postgresql/15/bin}
CLUSTER_DIR=${LP_CLUSTER_DIR:-/tmp/lance_parts-cluster}
PORT=${LP_PGPORT:-55432}

# The postgres user may not be allowed into the caller's directory.
[[ "$CLUSTER_DIR" == /* ]] || CLUSTER_DIR=$PWD/$CLUSTER_DIR
cd /

as_postgres()
{
	if [ "$(id -un)" = postgres ]; then
		"$@"
	else
		runuser -u postgres -- "$@"
	fi
}

is_cluster_dir()
{
	[ -f "$CLUSTER_DIR/env" ] || [ -f "$CLUSTER_DIR/data/PG_VERSION" ]
}

stop_cluster()
{
	if [ -f "$CLUSTER_DIR/data/postmaster.pid" ]; then
		as_postgres "$PG_BINDIR/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w -t 60 stop >/dev/null ||
			echo "cluster.sh: could not stop the server in $CLUSTER_DIR" >&2
	fi
	if is_cluster_dir; then
		rm -rf "$CLUSTER_DIR"
	elif [ -d "$CLUSTER_DIR" ]; then
		echo "cluster.sh: $CLUSTER_DIR is not a cluster directory; not removing it" >&2
		return 1
	fi
}

start_cluster()
{
	if [ -d "$CLUSTER_DIR" ] && [ -n "$(ls -A "$CLUSTER_DIR")" ]; then
		# A leftover from an interrupted run.
		stop_cluster
	fi
	mkdir -p "$CLUSTER_DIR"
	[ "$(id -un)" = postgres ] || chown postgres: "$CLUSTER_DIR"
	chmod 755 "$CLUSTER_DIR"
	as_postgres mkdir -m 755 "$CLUSTER_DIR/socket"

	as_postgres "$PG_BINDIR/initdb" -D "$CLUSTER_DIR/data" -U postgres -A trust \
		--no-locale -E UTF8 --no-sync >"$CLUSTER_DIR/initdb.log" 2>&1 || {
		cat "$CLUSTER_DIR/initdb.log" >&2
		return 1
	}
	local preload='pg_cron, lance_parts'
	[ -f "$("$PG_BINDIR/pg_config" --pkglibdir)/pg_cron.so" ] || preload=lance_parts
	as_postgres tee -a "$CLUSTER_DIR/data/postgresql.conf" >/dev/null <<EOF

# test/cluster.sh
port = $PORT
listen_addresses = ''
unix_socket_directories = '$CLUSTER_DIR/socket'
shared_preload_libraries = '$preload'
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 16
EOF
	as_postgres "$PG_BINDIR/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" \
		-w -t 60 start >/dev/null || {
		tail -n 50 "$CLUSTER_DIR/server.log" >&2
		return 1
	}
	cat >"$CLUSTER_DIR/env" <<EOF
export PGHOST='$CLUSTER_DIR/socket'
export PGPORT=$PORT
export PGUSER=postgres
export PGDATABASE=postgres
EOF
	chmod 644 "$CLUSTER_DIR/env"
}

case "${1:-}" in
	start)
		start_cluster
		cat "$CLUSTER_DIR/env"
		;;
	stop)
		stop_cluster
		;;
	env)
		if [ ! -f "$CLUSTER_DIR/env" ]; then
			echo "cluster.sh: no cluster in $CLUSTER_DIR (run: test/cluster.sh start)" >&2
			exit 1
		fi
		cat "$CLUSTER_DIR/env"
		;;
	*)
		echo "usage: test/cluster.sh start|stop|env" >&2
		exit 2
		;;
esac
