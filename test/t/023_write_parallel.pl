# write_dataset with parallel encoding workers (lance_parts.write_workers):
# 0 and 2 workers write the same bytes (one file and several) and lance_fdw
# reads back the query's rows in order; without a free worker slot
# (max_parallel_workers = 0, and max_worker_processes taken by the logical
# replication launcher) the write runs serially with a NOTICE; a cancel in
# the middle of a parallel write and an ERROR raised in a worker leave no
# file (neither final nor temporary) and no version; lance_parts.progress
# shows the write and its 2 workers from another session.
use strict;
use warnings;

use Cwd ();
use Digest::MD5 ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use LanceParts qw(directory_entries slurp);

my $work = $ENV{LP_SCRATCH}
  ? "$ENV{LP_SCRATCH}/023_write_parallel"
  : Cwd::abs_path(PostgreSQL::Test::Utils::tempdir());
mkdir $work unless -d $work;

my $node = PostgreSQL::Test::Cluster->new('write_parallel');
$node->init;
$node->append_conf('postgresql.conf', "max_worker_processes = 8\nmax_parallel_workers = 8\n");
$node->start;
$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION lance_parts;
	CREATE TYPE pair AS (n integer, s text);
	CREATE SERVER lance_srv FOREIGN DATA WRAPPER lance_fdw;});

# nulls at every level, strings, lists, fixed-size vectors, structs
my $columns =
    q{g::bigint AS id, CASE WHEN g % 11 = 0 THEN NULL ELSE 'text ' || g END AS label, }
  . q{g * 0.25::float8 AS x, ARRAY[g, g + 1, g + 2, g + 3]::real[] AS vec, }
  . q{CASE WHEN g % 5 = 0 THEN NULL ELSE ARRAY[g, NULL, g * 2] END AS list, }
  . q{CASE WHEN g % 7 = 0 THEN NULL ELSE ROW(g, CASE WHEN g % 3 = 0 THEN NULL ELSE 's' || g END)::pair END AS p};
my $rows = 250000;
my $query = "SELECT $columns FROM generate_series(1, $rows) g";
# lance_fdw reads structs as jsonb
my $table_def = 'id bigint, label text, x float8, vec real[], list integer[], p jsonb';

sub file_digests
{
	my ($dataset) = @_;
	my @digests;
	for my $name (directory_entries("$dataset/data"))
	{
		open my $fh, '<:raw', "$dataset/data/$name" or die "$name: $!";
		push @digests, Digest::MD5->new->addfile($fh)->hexdigest;
		close $fh;
	}
	return join ',', sort @digests;
}

sub write_dataset
{
	my ($dataset, $workers, $max_rows, $settings) = @_;
	$settings //= '';
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"SET client_min_messages = debug1; SET lance_parts.write_workers = $workers; $settings "
		  . "SELECT fragments || ' ' || num_rows FROM lance_parts.write_dataset('$dataset', "
		  . "\$q\$$query\$q\$, max_rows_per_file => $max_rows);");
	return ($stdout, $stderr);
}

my $rows_digest = "SELECT md5(string_agg(t::text, E'\\n')) FROM (%s) t";
my $expected = $node->safe_psql('postgres',
	sprintf($rows_digest, "SELECT id, label, x, vec, list, to_jsonb(p) AS p FROM ($query) q ORDER BY id"));

for my $case ([ 'several files', 60000, "5 $rows" ], [ 'one file', 1048576, "1 $rows" ])
{
	my ($what, $max_rows, $result) = @$case;
	my $tag = $max_rows;
	my ($serial, $serial_err) = write_dataset("$work/serial_$tag.lance", 0, $max_rows);
	my ($parallel, $parallel_err) = write_dataset("$work/parallel_$tag.lance", 2, $max_rows);
	is($serial, $result, "$what: 0 workers write every row");
	is($parallel, $result, "$what: 2 workers write every row");
	unlike($serial_err, qr/parallel workers/, "$what: 0 workers encode in the backend");
	like($parallel_err, qr/encoding dataset ".*" with 2 parallel workers/, "$what: 2 workers encode");
	is(file_digests("$work/parallel_$tag.lance"), file_digests("$work/serial_$tag.lance"),
		"$what: the files of 2 workers have the bytes of the serial write");
	$node->safe_psql('postgres',
		"CREATE FOREIGN TABLE parallel_$tag ($table_def) SERVER lance_srv "
		  . "OPTIONS (uri '$work/parallel_$tag.lance')");
	is( $node->safe_psql(
			'postgres',
			"SET max_parallel_workers_per_gather = 0; "
			  . sprintf($rows_digest, "SELECT * FROM parallel_$tag")),
		$expected,
		"$what: lance_fdw reads the query's rows in order from the parallel write");
}

# ---- no worker to be had: serial, with a NOTICE --------------------------------
my ($fallback, $fallback_err) =
  write_dataset("$work/fallback.lance", 2, 60000, 'SET max_parallel_workers = 0;');
is($fallback, "5 $rows", 'max_parallel_workers = 0: every row written');
like($fallback_err, qr/NOTICE:  no parallel workers could be started to encode dataset ".*fallback.lance", encoding serially/,
	'max_parallel_workers = 0: the NOTICE says the write runs serially');
is(file_digests("$work/fallback.lance"), file_digests("$work/serial_60000.lance"),
	'max_parallel_workers = 0: the serial bytes');

# ---- a cancel in the middle of a parallel write, seen in progress first --------
my $slow = 'SELECT g::bigint AS id, \'slow \' || g AS label FROM generate_series(1, 2000000) g '
  . 'WHERE pg_sleep(0.0001) IS NOT NULL';
my $cancelled = "$work/cancelled.lance";
my $session = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $session->query_safe('SELECT pg_backend_pid()');
$session->query_until(qr/started/,
	"\\set VERBOSITY verbose\nSET lance_parts.write_workers = 2;\n\\echo started\n"
	  . "SELECT * FROM lance_parts.write_dataset('$cancelled', \$q\$$slow\$q\$, max_rows_per_file => 2000);\n");
my $seen = '';
my $published = sub { $seen =~ /^encoding 2 (\d+)$/ && $1 >= 2 };
for (my $i = 0; $i < 2000 && !$published->(); $i++)
{
	$seen = $node->safe_psql('postgres',
		"SELECT phase || ' ' || workers || ' ' || parts_done FROM lance_parts.progress WHERE pid = $pid");
	usleep(10_000) unless $published->();
}
ok($published->(),
	"another session sees the write in lance_parts.progress: phase encoding, 2 workers, files published ($seen)");
ok(scalar(directory_entries("$cancelled/data")) >= 2, 'files were published before the cancel');
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't', 'pg_cancel_backend');
$session->query('SELECT 1');
like($session->{stderr}, qr/ERROR:  57014: canceling statement due to user request/,
	'the cancel ends the parallel write with 57014');
$session->quit;
is(join(',', directory_entries("$cancelled/data")), '',
	'no data file and no temporary file left by the cancelled parallel write');
ok(!-e "$cancelled/_versions" || scalar(directory_entries("$cancelled/_versions")) == 0,
	'no manifest after the cancel');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'parallel worker'"),
	'0', 'no parallel worker outlives the cancel');

# ---- an ERROR raised in a worker, after files were published --------------------
# A null struct cannot be written in a 2.0 file: the file writer, which runs
# in the workers, refuses it in the twelfth file.
my $failed = "$work/failed.lance";
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"SET lance_parts.write_workers = 2; SELECT * FROM lance_parts.write_dataset('$failed', "
	  . "\$q\$SELECT g AS id, CASE WHEN g = 23000 THEN NULL ELSE ROW(g, 'v')::pair END AS p "
	  . "FROM generate_series(1, 30000) g\$q\$, file_version => '2.0', max_rows_per_file => 2000);");
like($stderr, qr/ERROR:  a struct in field "p" is null at row \d+, which the encoder cannot write in a 2.0 file\nCONTEXT:  parallel worker/,
	"the worker's ERROR ends the write, in the leader with the worker's context");
is(join(',', directory_entries("$failed/data")), '',
	'no data file and no temporary file left by the failed parallel write');
ok(!-e "$failed/_versions", 'no manifest after the worker ERROR');

# ---- max_worker_processes exhausted: the launcher holds the only slot -----------
$node->append_conf('postgresql.conf', "max_worker_processes = 1\n");
$node->restart;
my ($exhausted, $exhausted_err) = write_dataset("$work/exhausted.lance", 2, 60000);
is($exhausted, "5 $rows", 'max_worker_processes exhausted: every row written');
like($exhausted_err, qr/NOTICE:  no parallel workers could be started to encode dataset/,
	'max_worker_processes exhausted: the write runs serially');
is(file_digests("$work/exhausted.lance"), file_digests("$work/serial_60000.lance"),
	'max_worker_processes exhausted: the serial bytes');

$node->stop;
done_testing();
