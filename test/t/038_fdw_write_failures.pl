# Writes through lance_fdw tables that fail publish nothing and leave no
# file: a full disk in the middle of an INSERT, a statement_timeout and a
# cancel (pg_cancel_backend) in the middle of an INSERT and of a DELETE, a
# value that does not fit its Lance field, a column that is not a field, a
# field without a column.  After each, the dataset has its version, its data
# and deletion files, and no temporary file; later writes work.
#
# LP_SMALL_FS_DIR must be a directory on a small filesystem (a few MB),
# writable by this user; test/run.sh mounts an 8 MB tmpfs.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(directory_entries);

# publication at commit, the default, not what test/run.sh sets for the
# tests written against 0.2.0
delete $ENV{PGOPTIONS};

my $small = $ENV{LP_SMALL_FS_DIR};
unless ($small && -d $small && -w $small)
{
	fail('LP_SMALL_FS_DIR names a writable directory on a small filesystem');
	done_testing();
	exit;
}

my $node = PostgreSQL::Test::Cluster->new('fdw_write_failures');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts; CREATE SERVER lance FOREIGN DATA WRAPPER lance_fdw');

# Every entry of a dataset: files and directories, temporary ones included.
sub tree
{
	my ($dir) = @_;
	my @entries;
	for my $sub ('data', '_versions', '_transactions', '_deletions')
	{
		next unless -d "$dir/$sub";
		push @entries, map { "$sub/$_" } directory_entries("$dir/$sub");
	}
	return join("\n", @entries);
}

sub make_dataset
{
	my ($path, $table) = @_;
	$node->safe_psql('postgres', qq{
		SELECT * FROM lance_parts.write_dataset('$path', \$q\$SELECT g::bigint AS id, 'row ' || g AS label FROM generate_series(1, 100) g\$q\$);
		CREATE FOREIGN TABLE $table (id bigint, label text) SERVER lance OPTIONS (uri '$path');
	});
}

sub rows
{
	my ($table) = @_;
	return $node->safe_psql('postgres', "SELECT count(*) || ' ' || sum(id) FROM $table");
}

# ---- a full disk -----------------------------------------------------------------

my $full = "$small/038-" . time() . "-$$.lance";
make_dataset($full, 'on_small');
my $before = tree($full);
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"INSERT INTO on_small SELECT g, repeat(md5(g::text), 20) FROM generate_series(1, 200000) g",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($stderr, qr/ERROR:  53100: .*No space left on device/s, 'an INSERT that fills the disk fails with 53100');
is(tree($full), $before, 'no version, no data file, no temporary file left');
is(rows('on_small'), '100 5050', 'the table holds its rows');
is($node->safe_psql('postgres', 'INSERT INTO on_small VALUES (101, \'after\')'), '', 'an INSERT that fits works after');
is(rows('on_small'), '101 5151', 'and is published');

# ---- statement_timeout and a cancel ----------------------------------------------

my $dataset = "$ENV{LP_SCRATCH}/038_fdw_write_failures.lance";
make_dataset($dataset, 'rows');
$before = tree($dataset);
($ret, $stdout, $stderr) = $node->psql('postgres',
	"SET statement_timeout = '500ms'; INSERT INTO rows SELECT g, 'slow' FROM generate_series(1000, 1000000) g WHERE pg_sleep(0.001) IS NOT NULL");
like($stderr, qr/canceling statement due to statement timeout/, 'statement_timeout ends an INSERT');
is(tree($dataset), $before, 'no file left by the timed-out INSERT');

my $session = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $session->query_safe('SELECT pg_backend_pid()');
$session->query_until(qr/started/,
	"\\echo started\nDELETE FROM rows WHERE pg_sleep(0.2) IS NOT NULL;\n");
$node->poll_query_until('postgres', "SELECT wait_event = 'PgSleep' FROM pg_stat_activity WHERE pid = $pid")
  or die 'the DELETE did not start';
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
$session->query('SELECT 1');
like($session->{stderr}, qr/canceling statement due to user request/, 'pg_cancel_backend ends a DELETE');
$session->quit;
is(tree($dataset), $before, 'no deletion file, no version after the cancelled DELETE');
is(rows('rows'), '100 5050', 'every row is there');

# ---- values and columns that do not fit ------------------------------------------

$node->safe_psql('postgres', qq{
	CREATE FOREIGN TABLE rows_numeric (id numeric, label text) SERVER lance OPTIONS (uri '$dataset');
	CREATE FOREIGN TABLE rows_extra (id bigint, label text, extra int) SERVER lance OPTIONS (uri '$dataset');
	CREATE FOREIGN TABLE rows_short (id bigint) SERVER lance OPTIONS (uri '$dataset');
});
my @refusals = (
	[ "INSERT INTO rows_numeric VALUES (1e30, 'big')", qr/ERROR:  22003: .*"id"/s, 'a value beyond its int64 field' ],
	[ "INSERT INTO rows_extra VALUES (1, 'x', 2)", qr/ERROR:  42703: column "extra" .* is not a field/s, 'a column that is not a field' ],
	[ "INSERT INTO rows_short VALUES (1)", qr/ERROR:  42703: .*field "label"/s, 'a field without a column' ],
	[ "UPDATE rows_numeric SET id = 1e30 WHERE id = 1", qr/ERROR:  22003: .*"id"/s, 'an UPDATE to a value beyond its field' ],
);
for my $refusal (@refusals)
{
	my ($sql, $pattern, $what) = @$refusal;
	($ret, $stdout, $stderr) = $node->psql('postgres', $sql, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($stderr, $pattern, "$what is refused");
}
is(tree($dataset), $before, 'nothing is written by the refused statements');
is(rows('rows'), '100 5050', 'every row is there');

$node->stop;
done_testing();
