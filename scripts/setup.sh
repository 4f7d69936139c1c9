#!/usr/bin/env bash
#
# setup.sh - install what lance_parts needs on Debian 12, then build and
# install the extension.  Run as root (or through sudo).  Idempotent: apt is
# skipped when every package is already installed, npm when node_modules is
# up to date, and make rebuilds only what changed.
#
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_BINDIR=${LP_PG_BINDIR:-/usr/lib/postgresql/15/bin}

if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null; then
		exec sudo -- bash "${BASH_SOURCE[0]}" "$@"
	fi
	echo "setup.sh: must run as root (it installs Debian packages)" >&2
	exit 1
fi

# Build tools, the server and its development files, the libraries the
# extension links, pg_cron (integration tests), IPC::Run (TAP tests), clang
# with its compiler-rt (sanitizers and libFuzzer), xfsprogs (mkfs.xfs for
# file-system tests), python3 (the layout check), gdb (the TAP test that
# stops a backend between a commit's validation and its publication), and
# Ceph's RADOS Gateway with one monitor and one OSD plus curl (the S3 server
# of scripts/s3-server.sh).
PACKAGES=(
	make gcc python3
	postgresql-15 postgresql-server-dev-15 postgresql-15-cron
	libprotobuf-c-dev protobuf-c-compiler
	libzstd-dev liblz4-dev libcurl4-openssl-dev libssl-dev
	libipc-run-perl
	clang libclang-rt-14-dev
	xfsprogs
	gdb
	radosgw ceph-mon ceph-osd curl
)
# Node may come from elsewhere than Debian (CI ships Node 20); only install
# Debian's when there is none.
command -v node >/dev/null || PACKAGES+=(nodejs)
command -v npm >/dev/null || PACKAGES+=(npm)

missing=()
for package in "${PACKAGES[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
	[ "$status" = "install ok installed" ] || missing+=("$package")
done

if [ ${#missing[@]} -gt 0 ]; then
	echo "setup.sh: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
else
	echo "setup.sh: Debian packages already installed"
fi

# pgvector (the vector(n) tests of test/reference/write_vector.test.cjs skip
# without it), where the distribution packages it: Debian 12 does not.  apt's
# lists are there once the packages above were installed.
if [ "$(dpkg-query -W -f='${Status}' postgresql-15-pgvector 2>/dev/null || true)" != "install ok installed" ] &&
	apt-cache show postgresql-15-pgvector >/dev/null 2>&1; then
	echo "setup.sh: installing postgresql-15-pgvector"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15-pgvector </dev/null
fi

cd "$ROOT"

# The reference implementation (npm lancedb) writes the test data.  The
# Makefile rule runs npm install only when package.json is newer than
# node_modules.
if [ -f test/reference/package.json ]; then
	make --no-print-directory test/reference/node_modules test/reference/legacy/node_modules
else
	echo "setup.sh: test/reference/package.json is missing; skipping npm install (no reference data can be generated)" >&2
fi

make --no-print-directory -j2 PG_CONFIG="$PG_BINDIR/pg_config"
make --no-print-directory install PG_CONFIG="$PG_BINDIR/pg_config"
