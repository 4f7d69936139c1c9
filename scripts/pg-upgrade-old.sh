#!/usr/bin/env bash
#
# pg-upgrade-old.sh - the PostgreSQL 15 that TAP 036_pg_upgrade upgrades
# from.  Run as root.
#
#   scripts/pg-upgrade-old.sh    install it unless present; print its bin dir
#
# pg_upgrade restores the old cluster's schema with the new major's
# pg_dump, which must know every catalog detail of the old minor release:
# a new major older than the old minor can refuse it (18.6, the newest 18
# Debian serves, refuses the column options of 15.20, bookworm-security's).
# So the old installation is the 15 of Debian 12's last point release
# (bookworm main, not -security), which predates every new major built by
# scripts/pg-majors.sh.  It comes from Debian's binary packages, downloaded
# by apt with state of its own (the system's sources.list and lists are
# untouched, the installed packages ignored) and checked against bookworm's signed Release, and is extracted
# into LP_PG_MAJORS_DIR/15-bookworm (default /opt/lance_parts/pg/15-bookworm)
# in Debian's layout (usr/lib/postgresql/15, usr/share/postgresql/15), which
# PostgreSQL finds relative to its binaries; the system's libpq serves it.
# Its server headers come too: a module built with 15.20's may call what
# 15.18 lacks (DatumGetHeapTupleHeader), so test/run.sh builds lance_parts
# for it with its own pg_config, like a major of its own.
#
set -euo pipefail

ROOT_DIR=${LP_PG_MAJORS_DIR:-/opt/lance_parts/pg}
PREFIX=$ROOT_DIR/15-bookworm
APT_DIR=$ROOT_DIR/apt/bookworm-binary
STAMP=$PREFIX/.lance_parts-built
PACKAGES=(postgresql-15 postgresql-client-15 postgresql-server-dev-15)

if [ -f "$STAMP" ]; then
	echo "$PREFIX/usr/lib/postgresql/15/bin"
	exit 0
fi

mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial" "$APT_DIR/debs"
cat >"$APT_DIR/deb.sources" <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Architectures: $(dpkg --print-architecture)
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt_options=(-o Dir::Etc::SourceList="$APT_DIR/deb.sources" -o Dir::Etc::SourceParts=/dev/null
	-o Dir::State::Lists="$APT_DIR/lists" -o Dir::Cache="$APT_DIR/cache" -o APT::Sandbox::User=root
	-o Dir::State::status=/dev/null)
apt-get "${apt_options[@]}" -qq update
version=$(apt-cache "${apt_options[@]}" show postgresql-15 | sed -n 's/^Version: //p' | sort -V | tail -n 1)
[ -n "$version" ] || { echo "pg-upgrade-old.sh: bookworm lists no postgresql-15" >&2; exit 1; }
echo "pg-upgrade-old.sh: installing PostgreSQL $version (Debian 12's point release) into $PREFIX" >&2
(cd "$APT_DIR/debs" && rm -f ./*.deb &&
	apt-get "${apt_options[@]}" -qq download "${PACKAGES[@]/%/=$version}")
rm -rf "$PREFIX"
mkdir -p "$PREFIX"
for deb in "$APT_DIR"/debs/*.deb; do
	dpkg-deb -x "$deb" "$PREFIX"
done
echo "postgresql-15 $version" >"$STAMP"
echo "$PREFIX/usr/lib/postgresql/15/bin"
