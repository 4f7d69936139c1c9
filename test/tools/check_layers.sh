#!/usr/bin/env bash
#
# check_layers.sh [ROOT] - the layer rules of the source tree, checked by
# grep over the sources (test/run.sh, layer "layout").  Prints "ok NAME" or
# "FAILED NAME" and the offending lines for each check; exits non-zero when
# any check failed.
#
#   protobuf   no file of the PostgreSQL layer (src/ outside src/core and the
#              generated src/proto) mentions a protobuf-c type or header: the
#              wire format is the core's business (lp_manifest_internal.h)
#   core       no file of the core includes a PostgreSQL header (the core
#              library is also compiled without PostgreSQL's include
#              directories, so such an include would not even build)
#   cycles     no cycle in the include/call graph of src/, and no core file
#              depending on one outside the core (check_cycles.py)
#   storage    no direct file-system call in the core (src/core) or the
#              PostgreSQL layer (src/pg) outside its stores (src/pg/store:
#              the local store backend, whose helpers are src/platform, and
#              the server's own files that are not dataset storage, the
#              target keys in $PGDATA and the progress records in
#              pg_stat_tmp), and no file outside src/pg/store naming the
#              local backend (lp_local_*): everything else reaches files
#              through the LpStore that lp_store_for_uri picks
#   backends   nothing outside the stores (src/core/io, src/pg/store) and
#              their platform helpers (src/platform) names a backend: no
#              other file includes the header of a backend (the S3 store,
#              its client and multipart uploads: io/lp_s3_store.h,
#              io/lp_s3_client.h, io/lp_s3_multipart.h; the server's S3 and
#              local stores: store/lp_pg_s3.h, store/lp_pg_local.h) or uses
#              a name one of them declares (a function, type or macro): the
#              others reach a backend only through LpStoreOps and
#              LpOutputOps, whichever store lp_store_for_uri picks.  (S3
#              settings, the lance_fdw server options and s3_settings_for,
#              are configuration: store/lp_pg_s3_config.h is no backend.)
#   abovestore nothing above the stores in the PostgreSQL layer (src/pg but
#              src/pg/base and src/pg/store) names a backend in its code, not
#              even by a field or a test: no name there (comments and string
#              literals left out) contains s3, multipart, local_store or
#              lp_local, but for the names of S3 configuration (those
#              store/lp_pg_s3_config.h and io/lp_s3_transport.h declare: URIs,
#              lance_fdw server options, settings) and the C functions of SQL
#              functions (s3_settings_for).  The assembly, the FDW and the
#              writers see one store interface: a parallel copy writes
#              numbered parts through LpStoreOps.open_part whatever the store
#   includes   every header of the tree is included with its folder, as
#              PostgreSQL writes "utils/guc.h": "<folder>/lp_<name>.h", the
#              folder being the header's own below src/core, src/pg or src
#              (base/, io/, store/, platform/, ...); no header is included
#              by its bare name, whichever include path would find it
#   byteorder  one byte-order helper: no file of src/ but
#              src/core/base/lp_bytes.h assembles an integer from bytes
#              shifted into place, or cuts one into bytes by shifts
#              ((uintN) bytes[i] << 8 * i, (uint8) (value >> 8 * i)): they
#              call lp_le32, lp_put_le64, lp_le_bytes and the like
#   manifests  the PostgreSQL layer reads dataset manifests only through
#              lp_read_latest_manifest and lp_read_manifest_version
#              (src/pg/store/lp_pg_storage.c), which check the privileges
#              and form of every base a manifest names: no other file of
#              src/pg calls the core's readers of manifests
set -uo pipefail

ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
failed=0

# check NAME MATCHES - report a check whose offending lines are MATCHES.
check()
{
	local name=$1 matches=$2
	if [ -z "$matches" ]; then
		echo "ok $name"
	else
		echo "FAILED $name"
		printf '%s\n' "$matches" | sed 's/^/    /'
		failed=1
	fi
}

check protobuf "$(cd "$ROOT" && grep -rnE 'Lance__|LANCE__|\.pb-c\.h|protobuf-c' src \
	--include='*.c' --include='*.h' --exclude-dir=core --exclude-dir=proto)"

check core "$(cd "$ROOT" && grep -rnE '#\s*include\s*[<"](postgres|postgres_fe|fmgr|miscadmin|funcapi|pgstat)\.h[>"]|#\s*include\s*[<"](access|catalog|commands|executor|lib|nodes|optimizer|parser|port|storage|tcop|utils|common)/' \
	src/core --include='*.c' --include='*.h')"

check cycles "$(python3 "$ROOT/test/tools/check_cycles.py" "$ROOT/src" 2>/dev/null)"

# A call is the name followed by "(", not preceded by "->", "." or a name
# character (store->ops->stat( is an op); comment lines are left out.
FS_CALLS='stat|lstat|fstat|fstatat|statfs|fstatfs|access|faccessat|open|openat|creat|fopen|'\
'OpenTransientFile|OpenTransientFilePerm|PathNameOpenFile|PathNameOpenFilePerm|AllocateFile|'\
'AllocateDir|ReadDir|ReadDirExtended|opendir|fdopendir|readdir|scandir|get_dirent_type|'\
'mkdir|mkdirat|pg_mkdir_p|MakePGDirectory|rmdir|rmtree|unlink|unlinkat|durable_unlink|'\
'rename|renameat|durable_rename|link|linkat|symlink|readlink|realpath|truncate|ftruncate|'\
'copy_file_range|ioctl|chmod|chown|lchown|utime|utimes|utimensat|fsync|fdatasync|pg_fsync|fsync_fname|'\
'pread|pwrite|CloseTransientFile|FreeDir|FreeFile'
check storage "$(cd "$ROOT" && {
	grep -rnE "(^|[^A-Za-z0-9_>.])($FS_CALLS)\(" src/pg src/core --include='*.c' --include='*.h' |
		grep -vE '^src/pg/store/'
	grep -rnE '\blp_local_[a-z_]+' src/pg --include='*.c' --include='*.h' |
		grep -vE '^src/pg/store/'
} | grep -vE '^[^:]+:[0-9]+:\s*(/?\*|//)')"

BACKEND_HEADERS='core/io/lp_s3_store.h core/io/lp_s3_client.h core/io/lp_s3_multipart.h pg/store/lp_pg_s3.h pg/store/lp_pg_s3_internal.h pg/store/lp_pg_local.h'
# The names a header declares: functions (a name before "(" at the end of a
# declaration's first line), types (typedef ... Name; and } Name;) and macros.
backend_names=$(cd "$ROOT/src" && sed -nE \
	-e 's/^[A-Za-z_][A-Za-z0-9_[:space:]*]*[[:space:]*]([a-z_][a-z0-9_]*)\(.*$/\1/p' \
	-e 's/^typedef .*[[:space:]*]([A-Za-z_][A-Za-z0-9_]*);$/\1/p' \
	-e 's/^\}\s*([A-Za-z_][A-Za-z0-9_]*);$/\1/p' \
	-e 's/^#define\s+([A-Z_][A-Z0-9_]*).*$/\1/p' $BACKEND_HEADERS | sort -u | paste -sd'|')
backend_includes=$(cd "$ROOT/src" && printf '%s\n' $BACKEND_HEADERS | sed -E 's,^(core|pg)/,,; s,\.,\\.,g' | paste -sd'|')
check backends "$(cd "$ROOT" && {
	grep -rnwE "$backend_names" src --include='*.c' --include='*.h'
	grep -rnE "#\s*include\s*\"($backend_includes)\"" src --include='*.c' --include='*.h'
} | grep -vE '^src/(core/io|pg/store|platform)/' | grep -vE '^[^:]+:[0-9]+:\s*(/?\*|//)')"

CONFIG_HEADERS='pg/store/lp_pg_s3_config.h core/io/lp_s3_transport.h'
config_names=$(cd "$ROOT/src" && {
	sed -nE \
		-e 's/^(extern )?[A-Za-z_][A-Za-z0-9_[:space:]*]*[[:space:]*]([A-Za-z_][A-Za-z0-9_]*)\(.*$/\2/p' \
		-e 's/^typedef .*[[:space:]*]([A-Za-z_][A-Za-z0-9_]*);$/\1/p' \
		-e 's/^\}\s*([A-Za-z_][A-Za-z0-9_]*);$/\1/p' \
		-e 's/^\s*(LP_[A-Z0-9_]+)\s*(=.*)?,?\s*(\/\*.*)?$/\1/p' \
		-e 's/^#define\s+([A-Z_][A-Z0-9_]*).*$/\1/p' $CONFIG_HEADERS
	grep -rhoE 'PG_FUNCTION_INFO_V1\([a-z0-9_]+\)' pg | sed -E 's/.*\((.*)\)/\1/'
} | sort -u)
check abovestore "$(cd "$ROOT" && grep -rnE '[sS]3|[mM]ultipart|local_store|lp_local' src/pg --include='*.c' --include='*.h' |
	grep -vE '^src/pg/(base|store)/' | grep -vE '^[^:]+:[0-9]+:\s*(/?\*|//)' |
	while IFS=: read -r file line code; do
		code=$(printf '%s\n' "$code" | sed -E "s/\"([^\"\\\\]|\\\\.)*\"//g; s/'([^'\\\\]|\\\\.)'//g" | sed -E 's#/\*.*(\*/|$)##; s#//.*$##; s/<[^>]*>//g')
		for name in $(printf '%s\n' "$code" | grep -oE '[A-Za-z_][A-Za-z0-9_]*' |
			grep -E '[sS]3|[mM]ultipart|local_store|lp_local' | sort -u); do
			printf '%s\n' "$config_names" | grep -qxF "$name" || echo "$file:$line: $name"
		done
	done)"

check includes "$(cd "$ROOT" && grep -rnoE '#\s*include\s*"[^"]*lp_[a-z0-9_]+\.h"' src --include='*.c' --include='*.h' |
	while IFS= read -r line; do
		header=${line#*\"}
		header=${header%\"}
		case $header in
			*/*/*) ;;
			*/*) if [ -f "src/core/$header" ] || [ -f "src/pg/$header" ] ||
				   { [ "${header%%/*}" = platform ] && [ -f "src/$header" ]; }; then continue; fi ;;
		esac
		echo "$line"
	done)"

check byteorder "$(cd "$ROOT" && grep -rnE \
	'\(uint(16|32|64)(_t)?\) *[A-Za-z_][A-Za-z0-9_>.-]*\[[^]]+\] *<< *\(?(8|16|24|32|40|48|56)\b|\(uint8(_t)?\) *\(+[^;]*>> *\(?(8|16|24|32|40|48|56)\b' \
	src --include='*.c' --include='*.h' | grep -vE '^src/core/base/lp_bytes\.h:' |
	grep -vE '^[^:]+:[0-9]+:\s*(/?\*|//)')"

check manifests "$(cd "$ROOT" && grep -rnE '(^|[^A-Za-z0-9_>.])(lp_dataset_read_latest|lp_dataset_read_manifest|lp_manifest_read|lp_manifest_parse)\(' \
	src/pg --include='*.c' --include='*.h' | grep -vE '^src/pg/store/lp_pg_storage\.c:' |
	grep -vE '^[^:]+:[0-9]+:\s*(/?\*|//)')"
exit "$failed"
