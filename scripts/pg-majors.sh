#!/usr/bin/env bash
#
# pg-majors.sh - PostgreSQL servers of the majors Debian 12 does not ship, for
# the tests.  Run as root.
#
#   scripts/pg-majors.sh [MAJOR...]   build each MAJOR (default: every one
#                                     below) unless already built, then print
#                                     "MAJOR BINDIR" lines
#   scripts/pg-majors.sh --list       the majors it can build, one a line
#
# Each major is built from the upstream tarball of Debian's own source package
# of the suite that has it (Debian 12 has 15 only; no reachable suite has a
# postgresql-16 source package, so 16 is not built), then pg_cron and pgvector
# from the same suite's source packages for it (or trixie's).  apt runs with
# state of its own under LP_PG_MAJORS_DIR/apt (the system's sources.list and
# lists are untouched) and checks every file against the suite's Release,
# signed by a key of debian-archive-keyring, as install_pgvector of
# scripts/setup.sh does.  The Debian mirror of this project's machines serves
# neither postgresql-17's source nor any pg-cron source; trixie's pgvector
# 0.8.0 does not compile against 18: those are reported, not worked around.
#
# The server goes into LP_PG_MAJORS_DIR/MAJOR (default
# /opt/lance_parts/pg/MAJOR), outside any source tree; the file
# .lance_parts-built in it, written after the server built, makes later runs
# reuse it; it lists the server's version and pg_cron's and pgvector's, or
# why one of them is missing.  Building takes about 10 minutes a major on 2 cores;
# it runs under nice.  A lock per major lets concurrent runs wait for each
# other instead of building twice.
#
set -euo pipefail
shopt -s inherit_errexit

ROOT_DIR=${LP_PG_MAJORS_DIR:-/opt/lance_parts/pg}
# major -> Debian suite whose source packages build it
declare -A SUITES=([17]=trixie [18]=sid)
# Suites searched after the major's own for pg_cron and pgvector: an older
# release of them may be all the mirror serves.
ADDON_SUITES="trixie"
APT_ROOT=$ROOT_DIR/apt
# The majors built: Debian's mirror here lists trixie's postgresql-17 source
# package but does not serve its files, so 17 is left out until it does
# (add it here; its suite is above).
MAJORS=(18)
# The tests were written against pgvector 0.8 (see scripts/setup.sh).
PGVECTOR_SERIES=0.8
# Debian 12 packages the builds need beyond those scripts/setup.sh installs:
# the parser generators (tarballs of 17 and later ship no generated parsers),
# the libraries of the configure options below, IPC::Run for the TAP modules.
BUILD_PACKAGES=(bison flex pkg-config libicu-dev libreadline-dev zlib1g-dev libssl-dev
	liblz4-dev libzstd-dev liburing-dev libipc-run-perl make gcc xz-utils bzip2)

say()
{
	echo "pg-majors.sh: $*" >&2
}

install_build_packages()
{
	local package status missing=()
	for package in "${BUILD_PACKAGES[@]}"; do
		status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
		[ "$status" = "install ok installed" ] || missing+=("$package")
	done
	[ ${#missing[@]} -eq 0 ] && return
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
}

# fetch_source SUITES PACKAGE - download into $APT_ROOT/SUITES/source the
# newest version of the source package PACKAGE that the suites SUITES (space
# separated, newest first) list and the mirror serves, checked by apt; prints
# its version, or fails.
fetch_source()
{
	local suites=$1 package=$2 apt_dir version
	apt_dir=$APT_ROOT/${suites// /+}
	local apt_options=(-o Dir::Etc::SourceList="$apt_dir/deb-src.sources" -o Dir::Etc::SourceParts=/dev/null
		-o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache" -o APT::Sandbox::User=root)
	if [ ! -f "$apt_dir/updated" ]; then
		mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
		cat >"$apt_dir/deb-src.sources" <<-EOF
			Types: deb-src
			URIs: http://deb.debian.org/debian
			Suites: $suites
			Components: main
			Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
		EOF
		apt-get "${apt_options[@]}" -qq update >&2
		touch "$apt_dir/updated"
	fi
	rm -rf "$apt_dir/source"
	mkdir -p "$apt_dir/source"
	for version in $(apt-cache "${apt_options[@]}" showsrc "$package" | sed -n 's/^Version: //p' | sort -rVu); do
		if (cd "$apt_dir/source" && apt-get "${apt_options[@]}" -qq source --download-only \
			"$package=$version" >&2 2>"$apt_dir/source.log"); then
			echo "$version"
			return
		fi
		say "Debian ($suites) lists $package $version but the mirror does not serve it: $(grep -m1 '^E:' "$apt_dir/source.log")"
	done
	say "no source package $package of Debian ($suites) could be downloaded"
	return 1
}

# unpack SUITES PACKAGE - unpack the upstream tarball fetch_source downloaded;
# prints the directory.
unpack()
{
	local apt_dir=$APT_ROOT/${1// /+} tarball
	tarball=$(find "$apt_dir/source" -maxdepth 1 -name "${2}_*.orig.tar.*" ! -name '*.asc' | head -n 1)
	tar -xf "$tarball" -C "$apt_dir/source"
	find "$apt_dir/source" -mindepth 1 -maxdepth 1 -type d
}

# build_server MAJOR - PostgreSQL MAJOR into $ROOT_DIR/MAJOR unless its stamp is there.
build_server()
{
	local major=$1 suites=${SUITES[$1]} prefix=$ROOT_DIR/$1 src version liburing=()
	[ -f "$prefix/.lance_parts-built" ] && return
	install_build_packages
	version=$(fetch_source "$suites" "postgresql-$major")
	say "building PostgreSQL $major ($version) into $prefix (about 10 minutes)"
	src=$(unpack "$suites" "postgresql-$major")
	rm -rf "$prefix"
	# io_uring (io_method = io_uring) from 18 on
	[ "$major" -ge 18 ] && liburing=(--with-liburing)
	(cd "$src" && nice ./configure --prefix="$prefix" --enable-tap-tests --enable-debug \
		--with-icu --with-openssl --with-lz4 --with-zstd "${liburing[@]}" --without-llvm \
		>"$src/../configure.log" 2>&1) || { tail -n 40 "$src/../configure.log" >&2; return 1; }
	{ nice make -C "$src" -s -j2 && make -C "$src" -s install; } >"$src/../make.log" 2>&1 ||
		{ tail -n 60 "$src/../make.log" >&2; return 1; }
	rm -rf "$src"
	echo "postgresql-$major $version" >"$prefix/.lance_parts-built"
	say "PostgreSQL $major ($version) in $prefix"
}

# build_addon MAJOR PACKAGE CONTROL SERIES - the extension CONTROL from the
# newest source package PACKAGE the mirror serves (a version starting with
# SERIES).  The outcome goes into the stamp file, a failure too ("PACKAGE
# none: why"), so that later runs neither rebuild nor retry it; removing
# the prefix retries.  Called where set -e does not hold: every step checked.
build_addon()
{
	local major=$1 package=$2 control=$3 series=$4 suites="${SUITES[$1]} ${ADDON_SUITES}"
	local pg_config=$ROOT_DIR/$1/bin/pg_config stamp=$ROOT_DIR/$1/.lance_parts-built src version
	grep -q "^$package " "$stamp" && return
	if ! version=$(fetch_source "$suites" "$package"); then
		echo "$package none: no source package served" >>"$stamp"
		return 1
	fi
	case "$version" in
		"$series"*) ;;
		*)
			say "$package $version is not of the series $series the tests were written for"
			echo "$package none: $version is not $series" >>"$stamp"
			return 1 ;;
	esac
	src=$(unpack "$suites" "$package") || return 1
	# OPTFLAGS="": no -march=native (pgvector), as Debian's own build
	if ! { nice make -C "$src" -s -j2 OPTFLAGS="" PG_CONFIG="$pg_config" &&
		make -C "$src" -s install OPTFLAGS="" PG_CONFIG="$pg_config"; } >"$src/../make.log" 2>&1; then
		tail -n 30 "$src/../make.log" >&2
		echo "$package none: $version does not build for PostgreSQL $major" >>"$stamp"
		rm -rf "$src"
		return 1
	fi
	rm -rf "$src"
	[ -f "$("$pg_config" --sharedir)/extension/$control.control" ] || return 1
	echo "$package $version" >>"$stamp"
	say "$package $version installed for PostgreSQL $major"
}

case "${1:-}" in
	--list)
		printf '%s\n' "${MAJORS[@]}"
		exit 0
		;;
	--one)
		# one major, run under its lock by the loop below (a process of its
		# own, so that set -e holds in it)
		build_server "$2"
		# Without them the tests that need them fail, the others run.
		build_addon "$2" pg-cron pg_cron 1.6 ||
			say "PostgreSQL $2 has no pg_cron: $(sed -n 's/^pg-cron none: //p' "$ROOT_DIR/$2/.lance_parts-built")"
		build_addon "$2" pgvector vector "$PGVECTOR_SERIES" ||
			say "PostgreSQL $2 has no pgvector: $(sed -n 's/^pgvector none: //p' "$ROOT_DIR/$2/.lance_parts-built")"
		exit 0
		;;
	-*)
		echo "usage: scripts/pg-majors.sh [--list | MAJOR...]" >&2
		exit 2
		;;
esac
if [ "$(id -u)" -ne 0 ]; then
	echo "pg-majors.sh: must run as root (it installs Debian packages)" >&2
	exit 1
fi

[ $# -gt 0 ] || set -- "${MAJORS[@]}"
for major in "$@"; do
	if [ -z "${SUITES[$major]:-}" ]; then
		say "cannot build PostgreSQL $major (majors: ${MAJORS[*]})"
		exit 2
	fi
done
mkdir -p "$ROOT_DIR"
status=0
for major in "$@"; do
	if flock "$ROOT_DIR/.lock-$major" bash "${BASH_SOURCE[0]}" --one "$major"; then
		echo "$major $ROOT_DIR/$major/bin"
	else
		say "PostgreSQL $major could not be built"
		status=1
	fi
done
exit "$status"
