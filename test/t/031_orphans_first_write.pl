# cleanup_orphans after a kill -9 during the first write_dataset of a new
# dataset: the directory has data files and a temporary file but no version
# (no _versions/); cleanup_orphans removes the temporary file and skips the
# data files, which nothing tells from those of a dataset being copied in
# (data/ before _versions/), and the dataset can then be created afresh.  A
# directory holding anything else beside data/ stays "no Lance manifest"
# (58P01), nothing in it touched.
use strict;
use warnings;

use Cwd ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use LanceParts qw(directory_entries);

my $work = $ENV{LP_SCRATCH}
  ? "$ENV{LP_SCRATCH}/031_orphans_first_write"
  : Cwd::abs_path(PostgreSQL::Test::Utils::tempdir());
mkdir $work unless -d $work;
my $dataset = "$work/first.lance";

my $node = PostgreSQL::Test::Cluster->new('orphans_first_write');
$node->init;
$node->append_conf('postgresql.conf', 'restart_after_crash = on');
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');

# ---- kill -9 in the middle of the first write_dataset -----------------------
# small files (100 rows each) of a slow query: some are published, one is
# being written when the backend dies
my $session = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $session->query_safe('SELECT pg_backend_pid()');
$session->query_until(qr/started/,
	"\\echo started\nSELECT * FROM lance_parts.write_dataset('$dataset', \$q\$"
	  . "SELECT g::bigint AS id FROM generate_series(1, 1000000) g WHERE pg_sleep(0.001) IS NOT NULL"
	  . "\$q\$, 'create', '2.2', 100);\n");
# The backend is stopped (SIGSTOP) before the directory is looked at for the
# last time, so that the temporary file seen is still there when it dies: it
# publishes a file and starts the next one between any two looks.
sub stopped
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/stat") or return 0;
	my $stat = <$fh>;
	close $fh;
	# the state follows the parenthesised command name
	return $stat =~ /\)\s+[Tt]\s/;
}
my @entries;
my $ready = sub {
	@entries = -d "$dataset/data" ? directory_entries("$dataset/data") : ();
	return (grep { /\.lance$/ && !/^\./ } @entries) >= 2 && grep { /^\..*\.$pid\.[0-9a-f]{16}\.tmp$/ } @entries;
};
for (my $i = 0; $i < 6000; $i++)
{
	if ($ready->())
	{
		kill 'STOP', $pid;
		# a signal is delivered asynchronously: look once the backend is stopped
		for (my $j = 0; $j < 1000 && !stopped($pid); $j++) { usleep(1_000); }
		last if $ready->();
		kill 'CONT', $pid;
	}
	usleep(5_000);
}
my @published = grep { /\.lance$/ && !/^\./ } @entries;
cmp_ok(scalar @published, '>=', 2, 'the first write published data files before it was killed');
kill 'KILL', $pid;
eval { $session->quit };
$node->poll_query_until('postgres', 'SELECT 1', '1')
  or die 'the server did not come back after the crash';
@entries = directory_entries("$dataset/data");
my @temporary = grep { /^\..*\.$pid\.[0-9a-f]{16}\.tmp$/ } @entries;
cmp_ok(scalar @temporary, '>=', 1, 'the killed write left its temporary files');
ok(!-e "$dataset/_versions", 'and no version');

# ---- cleanup_orphans: a dataset with no version, its temporary files orphans ---
my $rows_sql = "SELECT string_agg(kind || ' ' || action || ' ' || regexp_replace(path, '^.*/', '') || coalesce(' (' || reason || ')', ''), E'\\n' ORDER BY path)"
  . " FROM lance_parts.cleanup_orphans('$dataset', older_than => '0', dry_run => %s)";
my $expected = join("\n",
	(map { "temporary_file would_remove $_" } @temporary),
	(map { "data_file skipped $_ (the dataset has no version yet (a first write that died, or a copy in progress))" }
		grep { /\.lance$/ && !/^\./ } @entries));
my ($rc, $listed, $stderr) = $node->psql('postgres', sprintf($rows_sql, 'true'));
is($stderr, '', 'cleanup_orphans of the dataset with no version raises nothing');
is(join("\n", sort split /\n/, $listed), join("\n", sort split /\n/, $expected),
	'the dry run lists the temporary file to remove and every data file as skipped');
($expected = $listed) =~ s/ would_remove / removed /g;
is($node->safe_psql('postgres', sprintf($rows_sql, 'false')), $expected,
	'the real run removes the temporary file only');
is(join(',', directory_entries("$dataset/data")), join(',', sort(grep { /\.lance$/ && !/^\./ } @entries)),
	'the data files stay in data/');

# the dataset can be made now
is($node->safe_psql('postgres',
		"SELECT num_rows FROM lance_parts.write_dataset('$dataset', 'SELECT 1::bigint AS id', 'create')"),
	'1', 'the dataset is created afresh');

# ---- a directory with other things beside data/ is no dataset -----------------
my $other = "$work/other";
mkdir $other or die;
mkdir "$other/data" or die;
mkdir "$other/src" or die;
for my $file ("$other/data/" . ('0' x 24) . ('e' x 26) . '.lance', "$other/data/.x.lance.1.0123456789abcdef.tmp")
{
	open my $fh, '>', $file or die "could not create $file: $!";
	close $fh;
}
($rc, $listed, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM lance_parts.cleanup_orphans('$other', older_than => '0', dry_run => false)");
like($stderr, qr/ERROR:  58P01: no Lance manifest found in "\Q$other\E\/_versions"/,
	'a directory holding more than a first write leaves is refused (58P01)');
is(join(',', directory_entries("$other/data")), '.x.lance.1.0123456789abcdef.tmp,' . ('0' x 24) . ('e' x 26) . '.lance',
	'nothing in it removed');

$node->stop;
done_testing();
