# write_dataset encodes in bounded memory: 2,000,000 rows of (integer,
# text, double precision[]) written as two files, encoded in the backend
# (lance_parts.write_workers = 0: with workers the backend holds no pages), raise the backend's peak
# resident memory (VmHWM) by less than 56 MB over the same backend's peak
# before the write (the pages of every column, at about 8 MiB each, and
# one page's encoding), and lance_fdw reads every row back.
#
# Before the fix the same write raised it by about 69 MB: glibc raised its
# mmap threshold to the size of each page buffer freed, so later buffers
# came from the heap, where freed memory stays resident.
use strict;
use warnings;

use Cwd ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $work = $ENV{LP_SCRATCH}
  ? "$ENV{LP_SCRATCH}/022_write_memory"
  : Cwd::abs_path(PostgreSQL::Test::Utils::tempdir());
mkdir $work unless -d $work;
my $rows = 2000000;

my $node = PostgreSQL::Test::Cluster->new('write_memory');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');

# One session: load the library and warm the caches with a small write,
# take the peak, write the rows, take the peak again.  JIT is off: LLVM's
# compiler takes memory of its own, whatever the data.
my $hwm = q{SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\s+(\d+)')};
my $query =
  q{SELECT g::integer AS id, 'label ' || g AS label, ARRAY[g * 0.5, g * 0.25]::float8[] AS pair }
  . "FROM generate_series(1, $rows) g";
my $output = $node->safe_psql(
	'postgres', qq{
	SET jit = off;
	SET lance_parts.write_workers = 0;
	SELECT num_rows FROM lance_parts.write_dataset('$work/warm.lance',
	    \$q\$SELECT 1 AS id, 'a' AS label, ARRAY[0.5]::float8[] AS pair\$q\$) \\g /dev/null
	$hwm;
	SELECT fragments || ' ' || num_rows FROM lance_parts.write_dataset('$work/big.lance', \$q\$$query\$q\$);
	$hwm;});
my ($before, $written, $after) = split /\n/, $output;
is($written, "2 $rows", 'write_dataset writes every row, in two files of at most 1,048,576 rows');
my $growth_kb = $after - $before;
note("VmHWM before $before kB, after $after kB");
cmp_ok($growth_kb, '<', 56 * 1024,
	"the write raises the backend's peak memory by less than 56 MB ($growth_kb kB)");

is( $node->safe_psql(
		'postgres', qq{
	CREATE SERVER lance_srv FOREIGN DATA WRAPPER lance_fdw;
	CREATE FOREIGN TABLE big (id integer, label text, pair float8[])
	    SERVER lance_srv OPTIONS (uri '$work/big.lance');
	SELECT count(*) || ' ' || sum(id) || ' ' || sum(octet_length(label)) || ' ' || sum(pair[1] + pair[2])
	FROM big;}),
	$node->safe_psql('postgres',
		"SELECT count(*) || ' ' || sum(id) || ' ' || sum(octet_length(label)) || ' ' || sum(pair[1] + pair[2]) FROM ($query) q"
	),
	'lance_fdw reads back the rows written');

$node->stop;
done_testing();
