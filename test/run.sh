#!/usr/bin/env bash
#
# run.sh - every test of lance_parts: set-up, reference data, a throwaway
# cluster, then each test layer.  This is the README's test command and what
# .ci/run calls.  Runs as root (re-runs itself through sudo otherwise); the
# server and every test that talks to it run as the postgres OS user.
#
#   test/run.sh                 everything
#   test/run.sh --quick         skip the sanitizer and fuzz layers
#   test/run.sh --only LAYER    only this layer (repeat or use commas for more)
#   test/run.sh --no-setup      skip scripts/setup.sh (packages, build, install)
#   test/run.sh --keep          keep the work directory for inspection
#   test/run.sh --files GLOB    in the regress, tap and node layers, only the
#                               test files whose name (no extension) matches
#                               GLOB, e.g. --files '*blob*'
#   test/run.sh --pg MAJOR      the server layers on PostgreSQL MAJOR only, all
#                               of them (15, or a major scripts/pg-majors.sh
#                               builds)
#
# PostgreSQL majors: by default the server layers (regress, tap, node) run on
# PostgreSQL 15 (Debian 12's, or LP_PG_BINDIR's), then regress and tap on
# each major scripts/pg-majors.sh builds (it builds the missing ones first,
# about 10 minutes each; later runs reuse them), node on the newest of them
# too.  The other layers do not depend on PostgreSQL and run once.  The
# extension is built for a major in a copy of the tree of its own, so that no
# object of one major ends up in the module of another (the PostgreSQL-free
# core library of build/ is shared), and installed into that major's prefix.
#
# Layers (see the layer_* functions below):
#   layout    test/tools/check_layers.sh the layer rules, checked over the sources,
#                                        and test/tools/check_release.py: META.json,
#                                        the control file, the Makefile and debian/
#                                        name one release; test/tools/check_docs.py:
#                                        every SQL object, setting and option has an
#                                        entry in docs/REFERENCE.md, every src/ file a
#                                        line in docs/ARCHITECTURE.md, links resolve
#   core      make check-core            test/core/*.c, plain C, no server
#   s3        make check-s3              test/s3/*.c, the core's S3 store against
#                                        Ceph RGW (scripts/s3-server.sh, on the
#                                        ports LP_S3_PORT, LP_S3_MON_PORT,
#                                        LP_S3_OSD_PORTS give)
#   sanitize  make check-core-sanitize   the same under ASan and UBSan
#   fuzz      make fuzz                  test/fuzz/fuzz_*.c, LP_FUZZ_SECONDS each
#   regress   make installcheck          test/sql/[0-9]*.sql against test/expected/*.out
#   tap       prove                      test/t/*.pl (PostgreSQL::Test::Cluster)
#   node      node --test                test/reference/*.test.cjs
#
# Every layer runs even when an earlier one failed.  A layer whose command
# fails without reporting a failed test counts one failure.  The output ends
# with the line "N passed, N failed"; the exit status is non-zero when
# anything failed.
#
# Tests get these environment variables:
#   LP_TESTDATA   reference datasets written by test/reference/generate.cjs
#                 (with manifest.json); read-only for the tests
#   LP_SCRATCH    an empty directory the tests and the server may write to
#   LP_SRCDIR     the root of the source tree the tests run from
#   LP_ENCODE_APPEND  test/tools/encode_append, built for the node layer
#   LP_PAGE_ENCODINGS test/tools/page_encodings, built for the node layer
#   PGHOST, PGPORT, PGUSER, PGDATABASE   the throwaway cluster (regress, node;
#                 TAP tests start their own clusters)
#   LP_REFLINK_DIR  a directory, writable by postgres, on an XFS filesystem
#                 with reflink=1 (a loop-mounted image in the work directory),
#                 for the zero-copy tests; empty if it could not be mounted,
#                 which those tests report as a failure
#   LP_SMALL_FS_DIR  a directory, writable by postgres, on a small (8 MB)
#                 tmpfs, for the tests of a full filesystem (tap); empty if
#                 it could not be mounted, which those tests report as a
#                 failure
#   PGOPTIONS     (tap, node) -c lance_parts.publish_at=call: those tests
#                 were written against 0.2.0 and read the dataset versions
#                 the calls return, which publication at call gives;
#                 publication at commit, the default, is what the regress
#                 layer runs and what the tests that clear PGOPTIONS test
#                 (TAP 037_publish_at_commit, node fdw_insert)
#
# Why a copy of the tree: the clone may sit in a directory the postgres user
# cannot enter (e.g. under /root), and pg_regress, TAP and the node tests must
# run as postgres and write results/, tmp_check/ and datasets.  So the tree is
# copied into a postgres-owned directory under /tmp; node_modules is
# hard-linked (or copied) into it and stays root-owned and read-only.  The
# reference data is generated by root into a world-readable directory beside
# it.  The layout and C layers (core, sanitize, fuzz) run as root in the
# original tree.
#
# shellcheck disable=SC2317  # the layer_* functions are called through run_layer
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CALL_PUBLICATION='-c lance_parts.publish_at=call'	# PGOPTIONS of the tap and node layers
# LP_PG_BINDIR picks another (relocated) PostgreSQL 15 installation, so that
# several work trees can install and test their builds side by side.
PG_BINDIR=${LP_PG_BINDIR:-/usr/lib/postgresql/15/bin}
BASE_MAJOR=15
# 12 targets in about the 2 minutes the layer took with 4 at 30 s each; long
# runs are bench/fuzz.sh's
FUZZ_SECONDS=${LP_FUZZ_SECONDS:-10}
# TAP tests run initdb under the caller's locale; C.UTF-8 exists on every
# Debian system, a configured locale may not have been generated.
export LANG=C.UTF-8
unset LC_ALL LANGUAGE
LAYERS=(layout core s3 sanitize fuzz regress tap node)

if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null; then
		exec sudo -- bash "${BASH_SOURCE[0]}" "$@"
	fi
	echo "run.sh: must run as root (the server runs as the postgres user)" >&2
	exit 1
fi

quick=false
setup=true
keep=false
files_glob='*'
only_major=
selected=()
while [ $# -gt 0 ]; do
	case "$1" in
		--quick) quick=true ;;
		--no-setup) setup=false ;;
		--keep) keep=true ;;
		--files)
			[ $# -ge 2 ] || { echo "run.sh: --files needs a pattern" >&2; exit 2; }
			files_glob=$2
			shift
			;;
		--pg)
			[ $# -ge 2 ] || { echo "run.sh: --pg needs a major" >&2; exit 2; }
			if [ "$2" != "$BASE_MAJOR" ] && ! bash "$ROOT/scripts/pg-majors.sh" --list | grep -qx "$2"; then
				echo "run.sh: no PostgreSQL $2 (majors: $BASE_MAJOR $(bash "$ROOT/scripts/pg-majors.sh" --list | tr '\n' ' '))" >&2
				exit 2
			fi
			only_major=$2
			shift
			;;
		--only)
			[ $# -ge 2 ] || { echo "run.sh: --only needs a layer" >&2; exit 2; }
			IFS=, read -r -a names <<<"$2"
			for name in "${names[@]}"; do
				if [[ " ${LAYERS[*]} " != *" $name "* ]]; then
					echo "run.sh: unknown layer \"$name\" (layers: ${LAYERS[*]})" >&2
					exit 2
				fi
				selected+=("$name")
			done
			shift
			;;
		*)
			echo "usage: test/run.sh [--quick] [--only LAYER[,LAYER...]] [--files GLOB] [--pg MAJOR] [--no-setup] [--keep]" >&2
			exit 2
			;;
	esac
	shift
done
[ ${#selected[@]} -gt 0 ] || selected=("${LAYERS[@]}")

WORK=$(mktemp -d "${LP_TMPDIR:-/tmp}/lance_parts-test.XXXXXX") || exit 1
chmod 755 "$WORK"
TREE=$WORK/tree
DATA=$WORK/data
LOGS=$WORK/logs
export LP_CLUSTER_DIR=$WORK/cluster
export LP_PGPORT=${LP_PGPORT:-55432}
mkdir -p "$TREE" "$DATA" "$LOGS"
chown postgres: "$TREE"

# The major whose server layers run: its bin directory, PGXS directory, the
# copy of the tree its module was built in and the tests run from, and the
# tests' scratch directory (set by use_major).
CUR_MAJOR=
CUR_BINDIR=
CUR_PGXS=
CUR_TREE=
CUR_SCRATCH=

# A loop-mounted XFS with reflink for the zero-copy tests (root only can mount).
REFLINK_MOUNT=$WORK/xfs
export LP_REFLINK_DIR=
mount_reflink_fs()
{
	truncate -s 1G "$WORK/xfs.img" &&
		mkfs.xfs -q -m reflink=1 "$WORK/xfs.img" &&
		mkdir -p "$REFLINK_MOUNT" &&
		mount -o loop "$WORK/xfs.img" "$REFLINK_MOUNT" &&
		chown postgres: "$REFLINK_MOUNT" &&
		LP_REFLINK_DIR=$REFLINK_MOUNT
}

# test/tools/encode_append and page_encodings for the node layer (layer_node builds them)
LP_ENCODE_APPEND=
LP_PAGE_ENCODINGS=

# A small tmpfs for the tests of a full filesystem (no loop device needed).
SMALL_FS_MOUNT=$WORK/small
export LP_SMALL_FS_DIR=
mount_small_fs()
{
	mkdir -p "$SMALL_FS_MOUNT" &&
		mount -t tmpfs -o size=8m,mode=0755 lance_parts_small "$SMALL_FS_MOUNT" &&
		chown postgres: "$SMALL_FS_MOUNT" &&
		LP_SMALL_FS_DIR=$SMALL_FS_MOUNT
}

# The S3 server of the s3 layer, stopped by PID when the run ends.
export LP_S3_DIR=$WORK/s3

cleaned=false
cleanup()
{
	$cleaned && return
	cleaned=true
	"$ROOT/test/cluster.sh" stop
	[ -d "$LP_S3_DIR" ] && bash "$ROOT/scripts/s3-server.sh" stop
	if mountpoint -q "$REFLINK_MOUNT"; then
		umount "$REFLINK_MOUNT" || echo "run.sh: could not unmount $REFLINK_MOUNT" >&2
	fi
	if mountpoint -q "$SMALL_FS_MOUNT"; then
		umount "$SMALL_FS_MOUNT" || echo "run.sh: could not unmount $SMALL_FS_MOUNT" >&2
	fi
	if $keep; then
		echo "work directory kept: $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

TOTAL_PASSED=0
TOTAL_FAILED=0
SUMMARY=()

# Result of the current layer, set by the layer_* functions.
L_PASSED=0
L_FAILED=0
L_NOTE=

# run_logged LOG CMD... - run CMD, showing its output and saving it in LOG;
# returns CMD's exit status.
run_logged()
{
	local log=$1
	shift
	"$@" </dev/null 2>&1 | tee "$log"
	return "${PIPESTATUS[0]}"
}

# as_postgres CMD... - run CMD as the postgres user with the tests' environment.
as_postgres()
{
	runuser -u postgres -- env \
		LP_TESTDATA="$DATA" LP_SCRATCH="$CUR_SCRATCH" LP_SRCDIR="$CUR_TREE" \
		LP_REFLINK_DIR="$LP_REFLINK_DIR" LP_SMALL_FS_DIR="$LP_SMALL_FS_DIR" \
		LP_ENCODE_APPEND="$LP_ENCODE_APPEND" LP_PAGE_ENCODINGS="$LP_PAGE_ENCODINGS" \
		PATH="$CUR_BINDIR:$PATH" "$@"
}

# command_failed RC - a command that failed without reporting a failed test
# still counts as one failure.
command_failed()
{
	local rc=$1
	if [ "$rc" -ne 0 ] && [ "$L_FAILED" -eq 0 ]; then
		L_FAILED=1
		L_NOTE="command failed with exit status $rc"
	fi
}

# no_tests PATTERN... - true (and noted) when no file matches.
no_tests()
{
	local file
	for file in "$@"; do
		[ -e "$file" ] && return 1
	done
	L_NOTE="0 tests"
	return 0
}

# selected_files DIR SUFFIX - the files DIR/*SUFFIX whose name without SUFFIX
# matches --files, in name order.
selected_files()
{
	local file name
	for file in "$1"/*"$2"; do
		name=$(basename "$file" "$2")
		# shellcheck disable=SC2053  # the pattern is meant to match
		[[ $name == $files_glob ]] && echo "$file"
	done
}

# ---- layers -----------------------------------------------------------------

# layout: each rule of test/tools/check_layers.sh and each check of the
# release metadata (test/tools/check_release.py) and of the documentation
# (test/tools/check_docs.py) is one test.
layer_layout()
{
	local log=$LOGS/layout.log rc release_rc docs_rc
	run_logged "$log" bash "$ROOT/test/tools/check_layers.sh" "$ROOT"
	rc=$?
	run_logged "$LOGS/release.log" python3 "$ROOT/test/tools/check_release.py" "$ROOT"
	release_rc=$?
	run_logged "$LOGS/docs.log" python3 "$ROOT/test/tools/check_docs.py" "$ROOT"
	docs_rc=$?
	L_PASSED=$(cat "$log" "$LOGS/release.log" "$LOGS/docs.log" | grep -c '^ok ')
	L_FAILED=$(cat "$log" "$LOGS/release.log" "$LOGS/docs.log" | grep -c '^FAILED ')
	command_failed "$rc"
	command_failed "$release_rc"
	command_failed "$docs_rc"
}

# core and sanitize: the unit-test binary ends with "core: N passed, N failed".
core_binary_layer()
{
	local target=$1 log=$LOGS/$1.log line rc
	run_logged "$log" make -C "$ROOT" --no-print-directory "$target" TESTDATA="$DATA"
	rc=$?
	line=$(grep -E '^core: [0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
	if [ -n "$line" ]; then
		L_PASSED=$(sed -E 's/^core: ([0-9]+) passed.*/\1/' <<<"$line")
		L_FAILED=$(sed -E 's/.* ([0-9]+) failed$/\1/' <<<"$line")
	fi
	command_failed "$rc"
}

layer_core()
{
	core_binary_layer check-core
}

# s3: the S3 integration binary ends like the core one; the server's
# settings (LP_S3_ENDPOINT, ...) are exported for it, and it is stopped after.
layer_s3()
{
	local settings
	if ! settings=$(bash "$ROOT/scripts/s3-server.sh" start 2>"$LOGS/s3-server.log"); then
		cat "$LOGS/s3-server.log"
		L_FAILED=1
		L_NOTE="the S3 server did not start"
		return
	fi
	eval "$settings"
	export LP_S3_ENDPOINT LP_S3_REGION LP_S3_BUCKET LP_S3_ACCESS_KEY_ID LP_S3_SECRET_ACCESS_KEY
	core_binary_layer check-s3
	# the node layer's s3.test.cjs starts its own server on the same ports,
	# and no later layer may think this one still runs
	bash "$ROOT/scripts/s3-server.sh" stop
	unset LP_S3_ENDPOINT LP_S3_REGION LP_S3_BUCKET LP_S3_ACCESS_KEY_ID LP_S3_SECRET_ACCESS_KEY
}

layer_sanitize()
{
	core_binary_layer check-core-sanitize
}

# fuzz: each target is one test, passed when libFuzzer exits 0.  libFuzzer is
# chatty, so only the end of its output is shown.
layer_fuzz()
{
	local source target log rc
	no_tests "$ROOT"/test/fuzz/fuzz_*.c && return
	for source in "$ROOT"/test/fuzz/fuzz_*.c; do
		target=$(basename "$source" .c)
		log=$LOGS/$target.log
		echo "$target: fuzzing for $FUZZ_SECONDS s"
		make -C "$ROOT" --no-print-directory fuzz FUZZ_TARGET="$target" \
			FUZZ_SECONDS="$FUZZ_SECONDS" </dev/null >"$log" 2>&1
		rc=$?
		if [ "$rc" -eq 0 ]; then
			L_PASSED=$((L_PASSED + 1))
			tail -n 3 "$log"
			echo "ok $target"
		else
			L_FAILED=$((L_FAILED + 1))
			tail -n 80 "$log"
			echo "FAILED $target (exit status $rc)"
		fi
	done
}

# regress: pg_regress prints one line per test saying ok or not.
layer_regress()
{
	local log=$LOGS/regress-$CUR_MAJOR.log rc
	local tests
	tests=$(selected_files "$CUR_TREE/test/sql" .sql | xargs -r -n1 basename -s .sql | grep -E '^[0-9]' | tr '\n' ' ')
	[ -n "$tests" ] || { L_NOTE="0 tests"; return; }
	if [ ! -f "$LP_CLUSTER_DIR/env" ]; then
		L_FAILED=1
		L_NOTE="no cluster"
		return
	fi
	# shellcheck source=/dev/null
	. "$LP_CLUSTER_DIR/env"
	run_logged "$log" as_postgres PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER="$PGUSER" \
		PGDATABASE="$PGDATABASE" make -C "$CUR_TREE" --no-print-directory installcheck \
		PG_CONFIG="$CUR_BINDIR/pg_config" REGRESS="$tests"
	rc=$?
	# 15: "test name ... ok"; 16 on: TAP lines, "ok 1 - name" ("+" in a parallel group)
	L_PASSED=$(grep -cE '^(test | +)?[[:alnum:]_-]+ +\.\.\. ok|^ok [0-9]+ +[-+] ' "$log")
	L_FAILED=$(grep -cE '^(test | +)?[[:alnum:]_-]+ +\.\.\. FAILED|^not ok [0-9]+ +[-+] ' "$log")
	if [ -s "$CUR_TREE/results/regression.diffs" ]; then
		echo "---- results/regression.diffs"
		cat "$CUR_TREE/results/regression.diffs"
	fi
	command_failed "$rc"
}

# tap: prove reports "Tests=N" and lists each failing script with its count of
# failed subtests; a script that died counts one failure.
layer_tap()
{
	local log=$LOGS/tap-$CUR_MAJOR.log rc total failed_subtests dead_scripts skipped script name tests
	mapfile -t tests < <(selected_files "$CUR_TREE/test/t" .pl | sed "s|^$CUR_TREE/||")
	[ ${#tests[@]} -gt 0 ] || { L_NOTE="0 tests"; return; }
	rm -rf "$CUR_TREE/tmp_check"
	as_postgres mkdir -p "$CUR_TREE/tmp_check"
	# mounted by the first major's run, emptied for the next
	if [ -n "$LP_REFLINK_DIR" ]; then
		find "$LP_REFLINK_DIR" -mindepth 1 -delete
	else
		mount_reflink_fs || echo "run.sh: could not mount a reflink XFS; the zero-copy tests will fail"
	fi
	if [ -n "$LP_SMALL_FS_DIR" ]; then
		find "$LP_SMALL_FS_DIR" -mindepth 1 -delete
	else
		mount_small_fs || echo "run.sh: could not mount a small tmpfs; the full-filesystem tests will fail"
	fi
	# TESTDIR for 15's PostgreSQL::Test::Utils, TESTDATADIR and TESTLOGDIR for 16's on
	run_logged "$log" as_postgres TESTDIR="$CUR_TREE" TESTDATADIR="$CUR_TREE/tmp_check" \
		TESTLOGDIR="$CUR_TREE/tmp_check/log" PGOPTIONS="$CALL_PUBLICATION" \
		PG_REGRESS="$CUR_PGXS/src/test/regress/pg_regress" \
		prove -I "$CUR_PGXS/src/test/perl" -I test/t "${tests[@]}"
	rc=$?
	total=$(sed -nE 's/^Files=[0-9]+, Tests=([0-9]+),.*/\1/p' "$log" | tail -n 1)
	failed_subtests=$(sed -nE 's/^.*\(Wstat: .* Tests: [0-9]+ Failed: ([0-9]+)\)$/\1/p' "$log" |
		awk '{ sum += $1 } END { print sum + 0 }')
	dead_scripts=$(grep -cE '\(Wstat: .* Failed: 0\)$' "$log")
	L_PASSED=$(( ${total:-0} - failed_subtests ))
	L_FAILED=$((failed_subtests + dead_scripts))
	# a script that skips itself says why (a server without pg_cron, a major
	# before 18 for io_method)
	skipped=$(grep -cE '^\S+\.pl \.+ skipped: ' "$log")
	[ "$skipped" -eq 0 ] || L_NOTE="$skipped skipped: $(sed -nE 's/^(\S+)\.pl \.+ skipped: (.*)$/\1 (\2)/p' "$log" |
		sed 's|^test/t/||' | paste -sd, -)"
	sed -nE 's/^(\S+\.pl) \(Wstat: .*/\1/p' "$log" | while read -r script; do
		name=$(basename "$script" .pl)
		if [ -f "$CUR_TREE/tmp_check/log/regress_log_$name" ]; then
			echo "---- tail of tmp_check/log/regress_log_$name"
			tail -n 60 "$CUR_TREE/tmp_check/log/regress_log_$name"
		fi
	done
	command_failed "$rc"
}

# node: node's TAP reporter ends with "# pass N", "# fail N", "# cancelled N".
layer_node()
{
	local log=$LOGS/node-$CUR_MAJOR.log rc cancelled skipped tests
	mapfile -t tests < <(selected_files "$CUR_TREE/test/reference" .test.cjs | sed "s|^$CUR_TREE/||")
	[ ${#tests[@]} -gt 0 ] || { L_NOTE="0 tests"; return; }
	if [ ! -f "$LP_CLUSTER_DIR/env" ]; then
		L_FAILED=1
		L_NOTE="no cluster"
		return
	fi
	# shellcheck source=/dev/null
	. "$LP_CLUSTER_DIR/env"
	# The encoder's files reach lancedb through this tool (encode.test.cjs); built as
	# root in the work tree, run by postgres from the copy.
	LP_ENCODE_APPEND=
	if make -C "$ROOT" --no-print-directory -s build/encode_append; then
		install -o postgres -m 755 "$ROOT/build/encode_append" "$CUR_TREE/encode_append" &&
			LP_ENCODE_APPEND=$CUR_TREE/encode_append
	fi
	# encode_compress.test.cjs compares encoding trees through this one.
	LP_PAGE_ENCODINGS=
	if make -C "$ROOT" --no-print-directory -s build/page_encodings; then
		install -o postgres -m 755 "$ROOT/build/page_encodings" "$CUR_TREE/page_encodings" &&
			LP_PAGE_ENCODINGS=$CUR_TREE/page_encodings
	fi
	run_logged "$log" as_postgres PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER="$PGUSER" \
		PGDATABASE="$PGDATABASE" PGOPTIONS="$CALL_PUBLICATION" node --test --test-reporter=tap \
		--test-concurrency=1 "${tests[@]}"
	rc=$?
	L_PASSED=$(sed -nE 's/^# pass ([0-9]+)$/\1/p' "$log" | tail -n 1)
	L_FAILED=$(sed -nE 's/^# fail ([0-9]+)$/\1/p' "$log" | tail -n 1)
	cancelled=$(sed -nE 's/^# cancelled ([0-9]+)$/\1/p' "$log" | tail -n 1)
	L_PASSED=${L_PASSED:-0}
	L_FAILED=$(( ${L_FAILED:-0} + ${cancelled:-0} ))
	# a test that skips itself says why (a major without pgvector)
	skipped=$(sed -nE 's/^# skipped ([0-9]+)$/\1/p' "$log" | tail -n 1)
	[ "${skipped:-0}" -eq 0 ] || L_NOTE="$skipped skipped: $(sed -nE 's/^ *ok [0-9]+ - (.*) # SKIP (.*)$/\1 (\2)/p' "$log" | paste -sd, -)"
	command_failed "$rc"
}

# ---- driver -----------------------------------------------------------------

selected_layer()
{
	[[ " ${selected[*]} " == *" $1 "* ]]
}

# record STEP PASSED FAILED NOTE - add a line to the summary and the totals.
record()
{
	local line
	TOTAL_PASSED=$((TOTAL_PASSED + $2))
	TOTAL_FAILED=$((TOTAL_FAILED + $3))
	if [ -n "$CUR_MAJOR" ]; then
		MAJOR_PASSED=$((MAJOR_PASSED + $2))
		MAJOR_FAILED=$((MAJOR_FAILED + $3))
	fi
	if [ -n "$4" ] && [ "$2" -eq 0 ] && [ "$3" -eq 0 ]; then
		line=$4
	else
		line="$2 passed, $3 failed${4:+ ($4)}"
	fi
	SUMMARY+=("$(printf '%-16s %s' "$1" "$line")")
}

run_layer()
{
	local name=$1 label=$1
	[ -n "$CUR_MAJOR" ] && label="$1 (pg$CUR_MAJOR)"
	L_PASSED=0
	L_FAILED=0
	L_NOTE=
	echo
	echo "==== $label"
	"layer_$name"
	if [ "$L_PASSED" -eq 0 ] && [ "$L_FAILED" -eq 0 ] && [ -z "$L_NOTE" ]; then
		L_NOTE="0 tests"
	fi
	record "$label" "$L_PASSED" "$L_FAILED" "$L_NOTE"
	echo "==== $label: $L_PASSED passed, $L_FAILED failed, $(( SECONDS - LAYER_START )) s"
	LAYER_START=$SECONDS
}

finish()
{
	local line
	echo
	echo "==== cleanup"
	cleanup
	echo
	echo "==== summary"
	for line in "${SUMMARY[@]}"; do
		echo "$line"
	done
	for line in "${MAJOR_SUMMARY[@]}"; do
		echo "$line"
	done
	echo "$TOTAL_PASSED passed, $TOTAL_FAILED failed"
	[ "$TOTAL_FAILED" -eq 0 ]
	exit $?
}

# The majors whose server layers run: 15 first, then those of
# scripts/pg-majors.sh (or the one of --pg).
if [ -n "$only_major" ]; then
	MAJORS=("$only_major")
else
	MAJORS=("$BASE_MAJOR")
	mapfile -t -O 1 MAJORS < <(bash "$ROOT/scripts/pg-majors.sh" --list)
fi
NEWEST_MAJOR=${MAJORS[-1]}
declare -A MAJOR_BINDIR=([$BASE_MAJOR]=$PG_BINDIR)
MAJOR_SUMMARY=()
MAJOR_PASSED=0
MAJOR_FAILED=0
LAYER_START=$SECONDS

# major_layers MAJOR - the server layers to run on MAJOR: all of them on 15,
# on the newest major and under --pg; regress and tap on the others.
major_layers()
{
	local layer
	for layer in regress tap node; do
		selected_layer "$layer" || continue
		if [ "$layer" = node ] && [ -z "$only_major" ] && [ "$1" != "$BASE_MAJOR" ] &&
			[ "$1" != "$NEWEST_MAJOR" ]; then
			continue
		fi
		echo "$layer"
	done
}

# prepare_major MAJOR - the server of MAJOR (built by scripts/pg-majors.sh when
# missing) with the extension built in $WORK/tree-MAJOR and installed.
prepare_major()
{
	local major=$1 bindir
	echo
	echo "==== PostgreSQL $major"
	bindir=$(bash "$ROOT/scripts/pg-majors.sh" "$major" | sed -n "s/^$major //p")
	if [ -z "$bindir" ]; then
		echo "run.sh: scripts/pg-majors.sh could not build PostgreSQL $major"
		return 1
	fi
	install_extension "$bindir" "$WORK/tree-$major" "$LOGS/build-$major.log" || return 1
	MAJOR_BINDIR[$major]=$bindir
}

# prepare_upgrade_source - the PostgreSQL 15 that TAP 036 upgrades from to
# the other majors (scripts/pg-upgrade-old.sh), with the extension; its bin
# dir in UPGRADE_OLD_BINDIR.
UPGRADE_OLD_BINDIR=
prepare_upgrade_source()
{
	local bindir
	echo
	echo "==== PostgreSQL 15 to upgrade from"
	bindir=$(bash "$ROOT/scripts/pg-upgrade-old.sh") || return 1
	install_extension "$bindir" "$WORK/tree-upgrade-old" "$LOGS/build-upgrade-old.log" || return 1
	UPGRADE_OLD_BINDIR=$bindir
}

# install_extension BINDIR TREE LOG - build the extension for the PostgreSQL
# of BINDIR in TREE, a copy of the sources, and install it there.
install_extension()
{
	local bindir=$1 tree=$2 log=$3
	mkdir -p "$tree"
	tar -C "$ROOT" --exclude=./.git --exclude=./build --exclude='./build-*' --exclude=./results \
		--exclude=./tmp_check --exclude=./test/reference/node_modules --exclude='*.o' --exclude='*.so' \
		--exclude='*.bc' --exclude=.deps -cf - . | tar -C "$tree" -xf -
	# BUILD: the core library setup.sh built, free of PostgreSQL
	if ! run_logged "$log" make -C "$tree" --no-print-directory -j2 PG_CONFIG="$bindir/pg_config" \
		BUILD="$ROOT/build" all install; then
		echo "run.sh: the extension did not build for the PostgreSQL of $bindir"
		return 1
	fi
	chown -R postgres: "$tree"
	if [ -d "$ROOT/test/reference/node_modules" ]; then
		cp -al "$ROOT/test/reference/node_modules" "$tree/test/reference/" 2>/dev/null ||
			cp -a "$ROOT/test/reference/node_modules" "$tree/test/reference/"
	fi
}

# use_major MAJOR - point CUR_* (and test/cluster.sh) at MAJOR.
use_major()
{
	CUR_MAJOR=$1
	CUR_BINDIR=${MAJOR_BINDIR[$1]}
	CUR_PGXS=$("$CUR_BINDIR/pg_config" --pgxs)
	CUR_PGXS=${CUR_PGXS%/src/makefiles/pgxs.mk}
	if [ "$1" = "$BASE_MAJOR" ]; then
		CUR_TREE=$TREE
	else
		CUR_TREE=$WORK/tree-$1
	fi
	CUR_SCRATCH=$WORK/scratch-$1
	mkdir -p "$CUR_SCRATCH"
	chown postgres: "$CUR_SCRATCH"
	export LP_PG_BINDIR=$CUR_BINDIR
	# pg_cron and pgvector lines "pg-cron none: why" of the major's stamp
	# (scripts/pg-majors.sh): the tests that need them skip with that reason
	LP_PG_ADDONS_MISSING=$(sed -n 's/^\(pg-cron\|pgvector\) none: /\1: /p' \
		"$(dirname "$CUR_BINDIR")/.lance_parts-built" 2>/dev/null)
	export LP_PG_ADDONS_MISSING
	# TAP 036 upgrades from the 15 of pg-upgrade-old.sh to every other major
	# in the run of 15, and to none in the others'
	export LP_PG_UPGRADE_OLD_BINDIR=$UPGRADE_OLD_BINDIR LP_PG_UPGRADE_BINDIRS=
	if [ "$1" = "$BASE_MAJOR" ]; then
		LP_PG_UPGRADE_BINDIRS=$(upgrade_target_bindirs)
	fi
	cd "$CUR_TREE" || exit 1
}

# upgrade_target_bindirs - the bin dirs of the prepared majors other than 15, ':' between
upgrade_target_bindirs()
{
	local major dirs=()
	for major in "${!MAJOR_BINDIR[@]}"; do
		[ "$major" = "$BASE_MAJOR" ] || dirs+=("${MAJOR_BINDIR[$major]}")
	done
	(IFS=:; echo "${dirs[*]}")
}

if $setup; then
	echo "==== setup"
	if ! bash "$ROOT/scripts/setup.sh"; then
		record setup 0 1 "scripts/setup.sh failed"
		finish
	fi
fi

echo
echo "==== reference data"
if [ -f "$ROOT/test/reference/generate.cjs" ]; then
	if run_logged "$LOGS/testdata.log" make -C "$ROOT" --no-print-directory testdata TESTDATA="$DATA" &&
		[ -f "$DATA/manifest.json" ]; then
		SUMMARY+=("$(printf '%-16s %s' testdata "written to LP_TESTDATA ($(find "$DATA" -type f | wc -l) files)")")
	else
		record testdata 0 1 "generator failed or wrote no manifest.json"
	fi
else
	echo "test/reference/generate.cjs is missing; LP_TESTDATA stays empty"
fi
chmod -R a+rX "$DATA"

# The copy the postgres user runs from (see the comment at the top).
tar -C "$ROOT" --exclude=./.git --exclude=./build --exclude='./build-*' \
	--exclude=./results --exclude=./tmp_check --exclude=./test/reference/node_modules \
	-cf - . | tar -C "$TREE" -xf -
chown -R postgres: "$TREE"
if [ -d "$ROOT/test/reference/node_modules" ]; then
	cp -al "$ROOT/test/reference/node_modules" "$TREE/test/reference/" 2>/dev/null ||
		cp -a "$ROOT/test/reference/node_modules" "$TREE/test/reference/"
fi
# Commands run as postgres start here; the C layers use make -C "$ROOT".
cd "$TREE" || exit 1
LAYER_START=$SECONDS

for layer in layout core s3 sanitize fuzz; do
	selected_layer "$layer" || continue
	if $quick && { [ "$layer" = sanitize ] || [ "$layer" = fuzz ]; }; then
		SUMMARY+=("$(printf '%-16s %s' "$layer" "skipped (--quick)")")
		continue
	fi
	run_layer "$layer"
done

# Every major's server and extension first: the tap layer of 15 upgrades to
# them.  A major that did not build counts one failure in its own summary.
declare -A MAJOR_UNPREPARED=()
for major in "${MAJORS[@]}"; do
	[ "$major" = "$BASE_MAJOR" ] && continue
	mapfile -t layers < <(major_layers "$major")
	[ ${#layers[@]} -gt 0 ] || continue
	prepare_major "$major" || MAJOR_UNPREPARED[$major]=1
done
if [ ${#MAJOR_BINDIR[@]} -gt 1 ] && selected_layer tap && [ -z "$only_major" ] &&
	! prepare_upgrade_source; then
	record "pg_upgrade source" 0 1 "the PostgreSQL 15 to upgrade from, or the extension for it, did not install"
fi

for major in "${MAJORS[@]}"; do
	mapfile -t layers < <(major_layers "$major")
	[ ${#layers[@]} -gt 0 ] || continue
	MAJOR_PASSED=0
	MAJOR_FAILED=0
	major_start=$SECONDS
	if [ -n "${MAJOR_UNPREPARED[$major]:-}" ]; then
		CUR_MAJOR=$major
		record "pg$major setup" 0 1 "PostgreSQL $major or the extension for it did not build"
	else
		use_major "$major"
		if [[ " ${layers[*]} " == *" regress "* && -n $(compgen -G "$CUR_TREE/test/sql/[0-9]*.sql") ]] ||
			[[ " ${layers[*]} " == *" node "* && -n $(compgen -G "$CUR_TREE/test/reference/*.test.cjs") ]]; then
			echo
			echo "==== cluster (PostgreSQL $major)"
			"$ROOT/test/cluster.sh" start || echo "could not start the cluster"
		fi
		LAYER_START=$SECONDS
		for layer in "${layers[@]}"; do
			run_layer "$layer"
		done
		"$ROOT/test/cluster.sh" stop
	fi
	MAJOR_SUMMARY+=("$(printf 'PostgreSQL %s:    %s passed, %s failed (%s; %d min)' "$major" "$MAJOR_PASSED" \
		"$MAJOR_FAILED" "${layers[*]}" $(( (SECONDS - major_start + 30) / 60 )))")
	CUR_MAJOR=
done

finish
