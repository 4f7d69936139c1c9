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
# of scripts/s3-server.sh), and what builds the Debian package (debian/;
# the TAP test 040_debian_package.pl builds it): dpkg-dev, build-essential,
# debhelper and pg_buildext with its debhelper sequences
# (postgresql-server-dev-all).
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
	dpkg-dev build-essential debhelper postgresql-server-dev-all
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

# pgvector: test/reference/write_vector.test.cjs and bench/write.sh need it.
# Installed into the PostgreSQL of $PG_BINDIR (a relocated copy too), so the
# check is its sharedir's vector.control.  The distribution's package where it
# has one and $PG_BINDIR is the system's server; else (Debian 12 has no
# postgresql-15-pgvector) built from Debian trixie's source package, fetched
# with apt state of its own under build/pgvector (the system's sources.list
# and lists are untouched) so that apt checks the tarball against trixie's
# signed Release.
PGVECTOR_SERIES=0.8
install_pgvector()
{
	local pg_config=$PG_BINDIR/pg_config apt_dir=$ROOT/build/pgvector version source_dir
	local apt_options
	if [ -f "$("$pg_config" --sharedir)/extension/vector.control" ]; then
		echo "setup.sh: pgvector already installed in $("$pg_config" --sharedir)"
		return
	fi
	if [ "$PG_BINDIR" = /usr/lib/postgresql/15/bin ] &&
		apt-cache show postgresql-15-pgvector >/dev/null 2>&1; then
		echo "setup.sh: installing postgresql-15-pgvector"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15-pgvector </dev/null
		return
	fi
	rm -rf "$apt_dir"
	mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/source"
	cat >"$apt_dir/trixie.sources" <<-EOF
		Types: deb-src
		URIs: http://deb.debian.org/debian
		Suites: trixie
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	apt_options=(-o Dir::Etc::SourceList="$apt_dir/trixie.sources" -o Dir::Etc::SourceParts=/dev/null
		-o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache" -o APT::Sandbox::User=root)
	apt-get "${apt_options[@]}" -qq update
	version=$(apt-cache "${apt_options[@]}" showsrc pgvector | sed -n 's/^Version: //p' | head -n 1)
	# The tests were written against 0.8.0-1; a later 0.8.x is accepted (and
	# said), another series refused rather than built untested.
	case "$version" in
		"$PGVECTOR_SERIES".*) ;;
		*)
			echo "setup.sh: Debian trixie's pgvector is version ${version:-(none)}, not $PGVECTOR_SERIES.x; install pgvector $PGVECTOR_SERIES into $("$pg_config" --sharedir) by hand" >&2
			exit 1 ;;
	esac
	echo "setup.sh: building pgvector $version from Debian trixie's source package for $pg_config"
	(cd "$apt_dir/source" && apt-get "${apt_options[@]}" -qq source --download-only "pgvector=$version")
	tar -xzf "$apt_dir"/source/pgvector_*.orig.tar.gz -C "$apt_dir/source"
	source_dir=$(find "$apt_dir/source" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*')
	# OPTFLAGS="": no -march=native, as Debian's own build (its patch no-native)
	make --no-print-directory -C "$source_dir" -j2 OPTFLAGS="" PG_CONFIG="$pg_config"
	make --no-print-directory -C "$source_dir" install OPTFLAGS="" PG_CONFIG="$pg_config"
}
install_pgvector

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
