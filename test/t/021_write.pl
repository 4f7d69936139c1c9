# Writing Lance from SQL with real sessions: a cancel (pg_cancel_backend)
# and a statement_timeout or an ERROR in the middle of write_part and
# write_dataset leave no file (neither final nor temporary) and no version;
# two sessions write the parts of one target at once and a third registers,
# assembles and commits them in caller order; COPY ... TO with format 'lance'
# works with the library in shared_preload_libraries and COPY is unchanged
# without it.  (The README's pg_cron recipe is 003_pg_cron's.)
use strict;
use warnings;

use Cwd ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JSON::PP qw(decode_json);
use Test::More;
use Time::HiRes qw(usleep);

use LanceParts qw(directory_entries reference_read);

# absolute: the server resolves paths from its data directory
my $work = $ENV{LP_SCRATCH}
  ? "$ENV{LP_SCRATCH}/021_write"
  : Cwd::abs_path(PostgreSQL::Test::Utils::tempdir());
mkdir $work unless -d $work;

my $node = PostgreSQL::Test::Cluster->new('write');
$node->init;
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'lance_parts'
max_worker_processes = 16
max_parallel_workers_per_gather = 0
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');

my $dataset = "$work/ds.lance";
is( $node->safe_psql(
		'postgres',
		"SELECT dataset_version || ' ' || fragments || ' ' || num_rows FROM lance_parts.write_dataset("
		  . "'$dataset', \$q\$SELECT g::bigint AS id, 'row ' || g AS label FROM generate_series(1, 10) g\$q\$)"),
	'1 1 10',
	'write_dataset creates the dataset');
$node->safe_psql('postgres', qq{
	CREATE SERVER lance FOREIGN DATA WRAPPER lance_fdw;
	CREATE FOREIGN TABLE ds (id bigint, label text) SERVER lance OPTIONS (uri '$dataset');
});

# the rows of the dataset as the scan returns them (fragment order, row order)
sub dataset_ids
{
	return $node->safe_psql('postgres', 'SELECT string_agg(id::text, \',\') FROM ds');
}

sub ids_text
{
	my ($from, $to) = @_;
	return join(',', $from .. $to);
}

# every entry of a directory, temporary files included (a missing one is empty)
sub entries
{
	my ($dir) = @_;
	return -d $dir ? join(',', directory_entries($dir)) : '';
}

# A slow query of the dataset's columns: one row every millisecond.
sub slow_query
{
	my ($rows) = @_;
	return "SELECT g::bigint AS id, 'slow ' || g AS label FROM generate_series(1, $rows) g "
	  . 'WHERE pg_sleep(0.001) IS NOT NULL';
}

my $target = $node->safe_psql('postgres', "SELECT lance_parts.create_target('$dataset')");
my $staging = "$dataset/data/_parts/" . decode_json($target)->{file_name};

# ---- pg_cancel_backend in the middle of write_part ------------------------
my $session = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $session->query_safe('SELECT pg_backend_pid()');
$session->query_until(qr/started/,
	"\\set VERBOSITY verbose\n\\echo started\nSELECT * FROM lance_parts.write_part('$target', \$q\$"
	  . slow_query(1_000_000) . "\$q\$);\n");
my $seen = '';
for (my $i = 0; $i < 2000 && $seen eq ''; $i++)
{
	$seen = entries($staging);
	usleep(5_000) if $seen eq '';
}
like($seen, qr/^\..*\.tmp$/, "write_part is under way ($seen in the staging directory)");
is( $node->safe_psql('postgres',
		"SELECT phase || ' ' || (dataset = '$dataset') FROM lance_parts.progress WHERE pid = $pid"),
	'encoding true',
	'lance_parts.progress shows the write in phase encoding');
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't', 'pg_cancel_backend');
$session->query('SELECT 1');
like($session->{stderr}, qr/ERROR:  57014: canceling statement due to user request/,
	'pg_cancel_backend ends write_part with 57014');
$session->quit;
is(entries($staging), '', 'no file left in the staging directory after the cancel');

# ---- statement_timeout and an ERROR in the middle of write_dataset ------------
my @data_before = directory_entries("$dataset/data");
my $versions_before = entries("$dataset/_versions");
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"SET statement_timeout = '500ms'; SELECT * FROM lance_parts.write_dataset('$dataset', \$q\$"
	  . slow_query(1_000_000) . "\$q\$, 'append', '2.2', 100);");
like($stderr, qr/canceling statement due to statement timeout/, 'statement_timeout ends write_dataset');
($ret, $stdout, $stderr) = $node->psql('postgres',
	"SELECT * FROM lance_parts.write_dataset('$dataset', \$q\$SELECT g::bigint AS id, "
	  . "(1 / (g - 150000))::text AS label FROM generate_series(1, 200000) g\$q\$, 'append', '2.2', 1000);");
like($stderr, qr/division by zero/, 'an ERROR after 149 published files ends write_dataset');
is(join(',', directory_entries("$dataset/data")), join(',', @data_before),
	'no data file and no temporary file left by the cancelled and the failed write_dataset');
is(entries("$dataset/_versions"), $versions_before, 'no new version');
is(dataset_ids(), ids_text(1, 10), 'the dataset holds its rows');

# ---- two sessions write parts at once, a third commits them in caller order ----
my @writers = map { $node->background_psql('postgres', on_error_stop => 1) } 1 .. 2;
my @slices = ([ 11, 5000 ], [ 5001, 12000 ]);
# the second slice starts first and is the larger one
for my $w (1, 0)
{
	my ($from, $to) = @{ $slices[$w] };
	$writers[$w]->query_until(qr/started/,
		"\\echo started\nSELECT uri FROM lance_parts.write_part('$target', "
		  . "\$q\$SELECT g::bigint AS id, 'part ' || g AS label FROM generate_series($from, $to) g\$q\$, "
		  . ($to - $from + 1) . ");\n\\echo done\n");
}
my @parts;
for my $w (0, 1)
{
	my $out = $writers[$w]->query_until(qr/done/, '');
	($parts[$w]) = $out =~ /^(\S+\.lance)$/m;
	$writers[$w]->quit;
}
ok(defined $parts[0] && defined $parts[1] && $parts[0] ne $parts[1], "two parts written: @parts");
like($_, qr/^\Q$staging\E\//, "part $_ is in the target's staging directory") for @parts;
is( $node->safe_psql(
		'postgres',
		"SELECT a.status || ' ' || a.num_rows || ' ' || c.dataset_version FROM "
		  . "lance_parts.assemble('$target', ARRAY['$parts[0]', '$parts[1]']) a, "
		  . "LATERAL lance_parts.commit('$target') c"),
	'written 11990 2',
	'the parts are assembled and committed as version 2');
is(dataset_ids(), ids_text(1, 12000), 'the dataset reads the parts in caller order');
is(entries($staging), '', 'commit removed the staging directory');

SKIP:
{
	skip 'the reference implementation is not installed', 1
	  unless -d (($ENV{LP_SRCDIR} // Cwd::getcwd()) . '/test/reference/node_modules');
	my ($read, $read_stderr) = reference_read($dataset);
	is(join(',', map { $_->{id} } @{ $read->{rows} // [] }), ids_text(1, 12000),
		'lancedb reads the rows in caller order') or diag($read_stderr);
}

# ---- COPY ... TO with format 'lance' ---------------------------------------------
my $copied = "$work/copied.lance";
$node->safe_psql('postgres',
	"CREATE TABLE source AS SELECT g::bigint AS id, 'copy ' || g AS label FROM generate_series(1, 500) g");
is( $node->safe_psql(
		'postgres',
		"COPY (SELECT id, label FROM source WHERE id <= 100 /* ) */ ORDER BY id) TO '$copied' "
		  . "WITH (format 'lance', file_version '2.1')"),
	'', 'COPY (query) TO creates a dataset');
($ret, $stdout, $stderr) = $node->psql('postgres',
	"COPY source TO '$copied' WITH (format 'lance', mode 'append', max_rows_per_file 150)");
like($stderr, qr/^$/, 'COPY table TO appends');
$node->safe_psql('postgres',
	"CREATE FOREIGN TABLE copied (id bigint, label text) SERVER lance OPTIONS (uri '$copied')");
is( $node->safe_psql('postgres', 'SELECT count(*) || \' \' || count(DISTINCT id) || \' \' || sum(id) FROM copied'),
	'600 500 130300', 'COPY wrote every row');
is( $node->safe_psql('postgres',
		"SELECT version FROM lance_parts.file_info('$copied/data/' || (SELECT min(f) FROM pg_ls_dir('$copied/data') f))"),
	'2.1', 'COPY takes file_version');
($ret, $stdout, $stderr) = $node->psql('postgres',
	"COPY source TO '$work/other.lance' WITH (format 'lance', header true)");
like($stderr, qr/COPY option "header" is not supported with format lance/, 'other COPY options are refused');
($ret, $stdout, $stderr) = $node->psql('postgres', 'COPY source TO STDOUT WITH (format csv)');
like($stdout, qr/^1,copy 1$/m, 'other formats are PostgreSQL\'s COPY');

# without the preload, format 'lance' is unknown to COPY
my $plain = PostgreSQL::Test::Cluster->new('plain');
$plain->init;
$plain->start;
$plain->safe_psql('postgres', 'CREATE EXTENSION lance_parts');
($ret, $stdout, $stderr) = $plain->psql('postgres',
	"COPY (SELECT 1 AS id) TO '$work/plain.lance' WITH (format 'lance')");
like($stderr, qr/COPY format "lance" not recognized/, 'without shared_preload_libraries COPY is unchanged');
ok(!-e "$work/plain.lance", 'and writes nothing');
$plain->stop;

$node->stop;
system('rm', '-rf', $work) if $ENV{LP_SCRATCH};
done_testing();
