#!/usr/bin/env bash
#
# s3-server.sh start|stop|status - a real S3 server on loopback for the
# tests: Ceph's RADOS Gateway over a one-monitor, one-OSD cluster that keeps
# its objects in memory (memstore).  Ceph's RGW checks signatures, payload
# hashes, the 5 MiB minimum part size and conditional PUTs the way AWS does
# (docs: ../shared/docs/object-storage.md, section 4, whose settings these
# are).  setup.sh installs the Debian packages (radosgw, ceph-mon, ceph-osd).
#
#   start   a fresh cluster in $LP_S3_DIR (its previous contents are removed),
#           an S3 user with the test keys below and the bucket $LP_S3_BUCKET;
#           prints the settings as shell assignments (eval them) and exits
#           once the gateway answers (up to three attempts, each stopping
#           what it started when it fails).  Refused while one runs in that
#           dir.
#   stop    SIGTERM to the daemons by the PIDs in $LP_S3_DIR/run and of
#           any other process whose CEPH_CONF is this cluster's, SIGKILL to
#           any left after 3 s; the logs stay in $LP_S3_DIR/log.
#   status  "running" (exit 0) when every daemon is alive and the gateway
#           answers, "stopped" (exit 1) otherwise.
#
# Environment (defaults in brackets): LP_S3_DIR [/tmp/lance_parts-s3-$UID],
# LP_S3_PORT, the gateway's port [7480], LP_S3_MON_PORT [6789],
# LP_S3_OSD_PORTS, first of eight consecutive ports of the OSD [6800]: one
# cluster per set of ports on a machine; LP_S3_MEMSTORE_BYTES, the room for
# objects, in memory [1073741824] (bench/s3.sh needs more).  The daemons run as the invoking
# user.
set -euo pipefail

DIR=${LP_S3_DIR:-/tmp/lance_parts-s3-$(id -u)}
PORT=${LP_S3_PORT:-7480}
MON_PORT=${LP_S3_MON_PORT:-6789}
OSD_PORTS=${LP_S3_OSD_PORTS:-6800}
MEMSTORE_BYTES=${LP_S3_MEMSTORE_BYTES:-1073741824}
BUCKET=${LP_S3_BUCKET:-lance-parts-test}
# Test keys, known to every test; the cluster listens on loopback only.
ACCESS_KEY=lance_parts_test_access
SECRET_KEY=lance_parts_test_secret
REGION=us-east-1
ENDPOINT=http://127.0.0.1:$PORT
DAEMONS=(client.rgw.r osd.0 mon.a)		# stop order: the gateway first

export CEPH_CONF=$DIR/ceph.conf

die()
{
	echo "s3-server.sh: $*" >&2
	exit 1
}

pid_of()
{
	local file=$DIR/run/$1.pid
	[ -s "$file" ] && cat "$file"
}

alive()
{
	local pid
	pid=$(pid_of "$1") && kill -0 "$pid" 2>/dev/null
}

gateway_answers()
{
	curl -s -o /dev/null --max-time 2 "$ENDPOINT/"
}

# s3_request METHOD PATH - a SigV4-signed request without a body, through
# curl's own signer (good enough for paths without a query string).
s3_request()
{
	curl -sS -f -o /dev/null --max-time 30 -X "$1" \
		--aws-sigv4 "aws:amz:$REGION:s3" --user "$ACCESS_KEY:$SECRET_KEY" \
		-H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" \
		-H "Content-Length: 0" "$ENDPOINT$2"
}

print_settings()
{
	echo "LP_S3_ENDPOINT=$ENDPOINT"
	echo "LP_S3_REGION=$REGION"
	echo "LP_S3_BUCKET=$BUCKET"
	echo "LP_S3_ACCESS_KEY_ID=$ACCESS_KEY"
	echo "LP_S3_SECRET_ACCESS_KEY=$SECRET_KEY"
}

running()
{
	local daemon
	for daemon in "${DAEMONS[@]}"; do
		alive "$daemon" || return 1
	done
	gateway_answers
}

write_config()
{
	local osd_last=$((OSD_PORTS + 7))
	cat >"$CEPH_CONF" <<EOF
[global]
fsid = $(uuidgen)
mon host = v1:127.0.0.1:$MON_PORT
ms bind msgr2 = false
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind port min = $OSD_PORTS
ms bind port max = $osd_last
auth cluster required = none
auth service required = none
auth client required = none
run dir = $DIR/run
admin socket = \$run_dir/\$cluster-\$name.asok
pid file = \$run_dir/\$name.pid
log file = $DIR/log/\$name.log
log to stderr = false
err to stderr = true
osd crush chooseleaf type = 0
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon data avail crit = 0
mon data avail warn = 0
mon warn on pool no redundancy = false
paxos propose interval = 0.05
paxos min wait = 0.01
[mon.a]
mon data = $DIR/mon
public addrv = v1:127.0.0.1:$MON_PORT
[osd.0]
osd data = $DIR/osd
osd objectstore = memstore
memstore device bytes = $MEMSTORE_BYTES
osd class load list = *
# The OSD's own crush and device-class updates at start race its first monitor map
# (sent with a zero fsid they are refused, "wrong fsid", and the OSD exits): the
# script puts osd.0 in the crush map itself.
osd crush update on start = false
osd class update on start = false
osd class default list = *
[client.rgw.r]
rgw frontends = beast endpoint=127.0.0.1:$PORT
rgw data = $DIR/rgw
ms mon client mode = crc
EOF
}

# wait_for SECONDS DESCRIPTION COMMAND... - poll COMMAND every 0.1 s
wait_for()
{
	local tries=$(($1 * 10)) what=$2
	shift 2
	while ! "$@" >/dev/null 2>&1; do
		tries=$((tries - 1))
		[ "$tries" -gt 0 ] || start_failed "waiting for $what"
		sleep 0.1
	done
}

osd_up()
{
	ceph --connect-timeout 5 osd stat 2>/dev/null | grep -q '1 up'
}

# A failed start stops whatever it had started and says which step failed.
start_failed()
{
	echo "s3-server.sh: start failed at \"$1\"; see $DIR/log" >&2
	stop
	exit 1
}

# What no attempt to start can change.
start_checks()
{
	local daemon command
	for daemon in "${DAEMONS[@]}"; do
		! alive "$daemon" || die "a server already runs in $DIR (stop it first)"
	done
	for command in ceph-mon ceph-osd radosgw radosgw-admin ceph uuidgen curl; do
		command -v "$command" >/dev/null ||
			die "$command is missing: run scripts/setup.sh (Debian packages radosgw, ceph-mon, ceph-osd)"
	done
	! gateway_answers || die "something already answers on port $PORT (set LP_S3_PORT)"
}

start()
{
	rm -rf "$DIR"
	mkdir -p "$DIR/run" "$DIR/log" "$DIR/mon" "$DIR/osd" "$DIR/rgw"
	write_config
	trap 'start_failed "$BASH_COMMAND"' ERR

	ceph-mon --id a --mkfs --keyring /dev/null
	touch "$DIR/mon/keyring"
	ceph-mon --id a
	[ "$(ceph --connect-timeout 10 osd create)" = 0 ] || start_failed "ceph osd create"
	ceph --connect-timeout 10 osd crush add osd.0 1 root=default >/dev/null 2>&1
	ceph-osd --id 0 --mkfs >/dev/null 2>&1
	ceph-osd --id 0 >/dev/null 2>&1
	wait_for 30 "the OSD" osd_up
	# Without "ms mon client mode = crc" the gateway would retry forever.
	timeout 60 radosgw -n client.rgw.r >/dev/null 2>&1 || start_failed "radosgw"
	wait_for 10 "the gateway's PID file" alive client.rgw.r
	wait_for 30 "the gateway" gateway_answers
	radosgw-admin user create --uid tester --display-name Tester \
		--access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" >/dev/null
	s3_request PUT "/$BUCKET"
	# The first object creates the data pools (about 2 s): do it now.
	s3_request PUT "/$BUCKET/warm-up"
	s3_request DELETE "/$BUCKET/warm-up"
	trap - ERR
}

# PIDs of this cluster's daemons: those whose environment names its
# configuration (a daemon whose PID file is gone or was never written is
# found too).  A zombie is left to its parent, unless it is a main thread
# that exited while the process's other threads still run (ceph-osd does
# that): that process is alive.
cluster_pids()
{
	local entry pid
	for entry in /proc/[0-9]*; do
		pid=${entry#/proc/}
		[ "$( { awk '/^State:/ {s=$2} /^Threads:/ {t=$2} END {print s t}' "$entry/status"; } 2>/dev/null)" = Z1 ] &&
			continue
		{ tr '\0' '\n' <"$entry/environ"; } 2>/dev/null | grep -qxF "CEPH_CONF=$CEPH_CONF" &&
			echo "$pid"
	done
	return 0
}

stop()
{
	local daemon pid waited=0 pids=()
	for daemon in "${DAEMONS[@]}"; do
		pid=$(pid_of "$daemon") && kill -TERM "$pid" 2>/dev/null || true
	done
	mapfile -t pids < <(cluster_pids)
	[ ${#pids[@]} -eq 0 ] || kill -TERM "${pids[@]}" 2>/dev/null || true
	while mapfile -t pids < <(cluster_pids) && [ ${#pids[@]} -gt 0 ]; do
		if [ "$waited" -ge 30 ]; then
			kill -KILL "${pids[@]}" 2>/dev/null || true
			sleep 0.2
			break
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	rm -f "$DIR"/run/*.pid
}

case "${1:-}" in
	start)
		# A start that fails on a loaded machine (a daemon slow to come up)
		# is retried afresh.
		start_checks
		for attempt in 1 2 3; do
			# a plain command, so that errexit and the ERR trap hold inside
			set +e
			(
				set -e
				start
			)
			rc=$?
			set -e
			if [ "$rc" -eq 0 ]; then
				print_settings
				exit 0
			fi
			echo "s3-server.sh: start attempt $attempt failed" >&2
			sleep 1
		done
		exit 1
		;;
	stop) stop ;;
	status)
		if running; then
			echo running
			print_settings
		else
			echo stopped
			exit 1
		fi
		;;
	*)
		echo "usage: $0 start|stop|status" >&2
		exit 2
		;;
esac
