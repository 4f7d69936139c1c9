# Dataset versions published with the PostgreSQL transaction
# (lance_parts.publish_at = 'commit', the default): nothing at ROLLBACK, at an
# ERROR or at the rollback of a savepoint, and the files written for it
# removed; appends of one transaction in one version; PREPARE TRANSACTION
# refused; a conflict at COMMIT is 40001 and leaves the other writer's
# version; a backend killed while publishing leaves the whole version or
# none, and cleanup_orphans removes what an unpublished one wrote (a data
# file, a deletion file).  The reference implementation (npm lancedb) reads
# every state.
#
# The backend is stopped with gdb at lp_commit (the pre-commit phase, before
# the transaction and manifest files are written) and at the lp_progress_end
# that follows publication, then killed there.
use strict;
use warnings;

use File::Path qw(make_path);
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(directory_entries reference_read);

# scripts/setup.sh installs gdb: without it this test fails rather than skips.
die('gdb is needed to stop a backend while it publishes')
  unless system('gdb --version >/dev/null 2>&1') == 0;

# the default, not what test/run.sh sets for the tests written against 0.2.0
delete $ENV{PGOPTIONS};

my $work = "$ENV{LP_SCRATCH}/037_publish_at_commit";
make_path($work);
chmod 0777, $work;

my $node = PostgreSQL::Test::Cluster->new('publish');
$node->init;
$node->append_conf('postgresql.conf', "restart_after_crash = on\nmax_prepared_transactions = 2");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');

# A write_dataset of the ids from..to into $ds.
sub write_rows
{
	my ($ds, $mode, $from, $to, $extra) = @_;
	return "SELECT dataset_version IS NULL AS pending, fragments, num_rows FROM lance_parts.write_dataset('$ds', "
	  . "\$q\$SELECT g::bigint AS id, 'row ' || g AS name FROM generate_series($from, $to) g\$q\$, '$mode'"
	  . ($extra // '') . ')';
}

# The ids lancedb reads in the latest version, sorted, as "1-10,21-30".
sub ids
{
	my ($ds) = @_;
	my ($read, $stderr) = reference_read($ds);
	return "read failed: $stderr" unless $read;
	my @ids = sort { $a <=> $b } map { $_->{id} } @{ $read->{rows} };
	my @ranges;
	for my $id (@ids)
	{
		if (@ranges && $ranges[-1][1] + 1 == $id) { $ranges[-1][1] = $id }
		else { push @ranges, [ $id, $id ] }
	}
	return join(',', map { "$_->[0]-$_->[1]" } @ranges);
}

sub version
{
	my ($ds) = @_;
	my ($read, $stderr) = reference_read($ds);
	return $read ? $read->{version} : "read failed: $stderr";
}

sub data_files
{
	my ($ds) = @_;
	return join(' ', grep { /\.lance$/ } directory_entries("$ds/data"));
}

# psql -c of a script with errors allowed: (stdout, stderr).
sub run_script
{
	my ($sql) = @_;
	my ($stdout, $stderr);
	$node->psql('postgres', $sql, stdout => \$stdout, stderr => \$stderr,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return ($stdout, $stderr);
}

my $ds = "$work/main.lance";

# ---- autocommit -----------------------------------------------------------------

is($node->safe_psql('postgres', write_rows($ds, 'create', 1, 10)),
	't|1|10', 'write_dataset in its own transaction: the version is not known when it returns');
is(ids($ds), '1-10', 'and is published when the statement commits');
is(version($ds), 1, 'as version 1');
my $files = data_files($ds);

# ---- ROLLBACK, ERROR ----------------------------------------------------------

run_script("BEGIN;\n" . write_rows($ds, 'append', 11, 20) . ";\nROLLBACK;");
is(ids($ds), '1-10', 'ROLLBACK: nothing published');
is(data_files($ds), $files, 'ROLLBACK: the data file written is removed');

my (undef, $stderr) = run_script("BEGIN;\n" . write_rows($ds, 'append', 11, 20) . ";\nSELECT 1/0;\nCOMMIT;");
like($stderr, qr/22012/, 'an ERROR after the write');
is(ids($ds), '1-10', 'ERROR: nothing published');
is(data_files($ds), $files, 'ERROR: the data file written is removed');

# ---- savepoints, appends merged -------------------------------------------------

run_script(
	"BEGIN;\n"
	  . write_rows($ds, 'append', 11, 20)
	  . ";\nSAVEPOINT s;\n"
	  . write_rows($ds, 'append', 21, 30)
	  . ";\nROLLBACK TO s;\nSAVEPOINT t;\n"
	  . write_rows($ds, 'append', 31, 40)
	  . ";\nRELEASE t;\nCOMMIT;");
is(ids($ds), '1-20,31-40', 'the rolled-back savepoint\'s rows are not published, the others are');
is(version($ds), 2, 'the two appends of the transaction are one version');
my @files = split / /, data_files($ds);
is(scalar(@files), 3, 'the rolled-back savepoint\'s data file is removed');

# A target's commit in the same transaction as a write_dataset append.
my $target = $node->safe_psql('postgres', "SELECT lance_parts.create_target('$ds')");
my $part = $node->safe_psql('postgres',
	"SELECT uri FROM lance_parts.write_part('$target', \$q\$SELECT g::bigint AS id, 'row ' || g AS name FROM generate_series(41, 45) g\$q\$)"
);
is($node->safe_psql('postgres', "SELECT status FROM lance_parts.assemble('$target', ARRAY['$part'])"),
	'written', 'a target assembled');
my $staging = $node->safe_psql('postgres', "SELECT lance_parts.staging_dir('$target')");
ok(-d $staging, 'its staging directory holds the part');
my ($out, $err) = run_script(
	"BEGIN;\n"
	  . write_rows($ds, 'append', 46, 50)
	  . ";\nSELECT dataset_version IS NULL, fragment_id IS NULL FROM lance_parts.commit('$target');\n"
	  . "SELECT * FROM lance_parts.commit('$target');\nCOMMIT;");
like($err, qr/55000: file ".*" is already committed by this transaction/,
	'a second commit of the target in the transaction is refused');
is(ids($ds), '1-20,31-40', '... and the transaction publishes nothing');
($out, $err) = run_script(
	"BEGIN;\n" . write_rows($ds, 'append', 46, 50) . ";\nSELECT * FROM lance_parts.commit('$target');\nCOMMIT;");
is($err, '', 'an append and a target\'s commit in one transaction');
is(ids($ds), '1-20,31-50', 'both are published');
is(version($ds), 3, 'in one version');
ok(!-e $staging, 'the target\'s staging directory is removed after publication');

# ---- PREPARE TRANSACTION, publish_at = call --------------------------------------

$files = data_files($ds);
(undef, $err) = run_script("BEGIN;\n" . write_rows($ds, 'append', 51, 60) . ";\nPREPARE TRANSACTION 'p';");
like($err, qr/0A000: cannot PREPARE a transaction that has pending Lance publications/,
	'PREPARE TRANSACTION with a pending publication is refused');
is(ids($ds), '1-20,31-50', 'nothing published');
is(data_files($ds), $files, 'the data file written is removed');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_prepared_xacts'), '0', 'nothing prepared');

($out, $err) = run_script(
	"BEGIN;\nSET LOCAL lance_parts.publish_at = call;\n" . write_rows($ds, 'append', 51, 60) . ";\nROLLBACK;");
is($out, 'f|1|10', 'publish_at = call: the version is known when the call returns');
is(ids($ds), '1-20,31-60', 'and stays published after ROLLBACK');

# ---- two transactions racing ---------------------------------------------------

my $raced = "$work/raced.lance";
$node->safe_psql('postgres', write_rows($raced, 'create', 1, 20, ', max_rows_per_file => 5'));
my $raced_files = data_files($raced);
my $loser = $node->background_psql('postgres', on_error_stop => 0);
$loser->query_safe('\set VERBOSITY verbose');
$loser->query_safe('BEGIN');
is($loser->query_safe("SELECT count(*) FROM lance_parts.compact('$raced') WHERE action = 'rewritten'"),
	'4', 'transaction A compacts the four fragments');
is($node->safe_psql('postgres', "SELECT count(*) FROM lance_parts.compact('$raced') WHERE action = 'rewritten'"),
	'4', 'transaction B compacts them too and commits first');
$loser->query('COMMIT');
like($loser->{stderr}, qr/ERROR:  40001: .*conflict/s, 'A\'s COMMIT fails with 40001');
$loser->quit;
is(ids($raced), '1-20', 'every row is there once');
is(version($raced), 2, 'in B\'s version');
is(scalar(split / /, data_files($raced)), scalar(split / /, $raced_files) + 1,
	'A\'s compacted file is removed, B\'s is there');

# ---- kill -9 while publishing ------------------------------------------------------

# Run $sql in a session, then COMMIT with the backend stopped by gdb at
# $function, kill it there and wait for the server to come back.
sub kill_while_publishing
{
	my ($sql, $function) = @_;
	my $session = $node->background_psql('postgres', on_error_stop => 0);
	$session->query_safe('BEGIN');
	$session->query_safe($sql);
	my $pid = $session->query_safe('SELECT pg_backend_pid()');

	my ($gdb_in, $gdb_out) = ('', '');
	my $timer = IPC::Run::timer($PostgreSQL::Test::Utils::timeout_default);
	my $gdb = IPC::Run::start([ 'gdb', '-q', '-nx', '-p', $pid ],
		'<', \$gdb_in, '>', \$gdb_out, '2>', \$gdb_out, $timer);
	my $wait = sub {
		my ($pattern, $what) = @_;
		$timer->start($PostgreSQL::Test::Utils::timeout_default);
		$gdb->pump while $gdb_out !~ $pattern && !$timer->is_expired && $gdb->pumpable;
		return if $gdb_out =~ $pattern;
		$gdb->kill_kill;
		BAIL_OUT("gdb did not get to $what:\n$gdb_out");
	};
	$gdb_in .= "set pagination off\nset confirm off\nbreak $function\ncontinue\n";
	$wait->(qr/Continuing\./, 'resume the backend');
	$session->{stdin} .= "COMMIT;\n";
	$session->{run}->pump_nb();
	$wait->(qr/Breakpoint 1, .*$function/, "the breakpoint at $function");
	kill 'KILL', $pid;
	$gdb->kill_kill;
	eval { $session->quit };
	$node->poll_query_until('postgres', 'SELECT 1', '1')
	  or die 'the server did not come back after the crash';
}

$files = data_files($ds);
kill_while_publishing(write_rows($ds, 'append', 61, 70), 'lp_commit');
is(ids($ds), '1-20,31-60', 'killed before the manifest: nothing published');
is(version($ds), 4, 'no new version');
my @left = grep { !($files =~ /\Q$_\E/) } split / /, data_files($ds);
is(scalar(@left), 1, 'the data file written is left');
my $orphans = $node->safe_psql('postgres',
	"SELECT string_agg(kind || ' ' || action, ',') FROM lance_parts.cleanup_orphans('$ds', '0 seconds', false) WHERE path LIKE '%$left[0]'"
);
is($orphans, 'data_file removed', 'cleanup_orphans removes it');
is(data_files($ds), $files, 'nothing else is left');

kill_while_publishing(write_rows($ds, 'append', 61, 70), 'lp_progress_end');
is(ids($ds), '1-20,31-70', 'killed after the manifest: the version is all there');
is(version($ds), 5, 'as the next version');

# a DELETE killed before its manifest leaves a deletion file no version names
$node->safe_psql('postgres', "CREATE SERVER lance FOREIGN DATA WRAPPER lance_fdw;
	CREATE FOREIGN TABLE main_rows (id bigint, name text) SERVER lance OPTIONS (uri '$ds')");
kill_while_publishing('DELETE FROM main_rows WHERE id <= 5', 'lp_commit');
is(ids($ds), '1-20,31-70', 'a DELETE killed before the manifest: nothing deleted');
my @deletion_files = -d "$ds/_deletions" ? directory_entries("$ds/_deletions") : ();
is(scalar(@deletion_files), 1, 'its deletion file is left');
is($node->safe_psql('postgres',
		"SELECT string_agg(kind || ' ' || action, ',') FROM lance_parts.cleanup_orphans('$ds', '0 seconds', false) WHERE path LIKE '%/_deletions/%'"),
	'deletion_file removed', 'cleanup_orphans removes it');
is(join(' ', directory_entries("$ds/_deletions")), '', 'nothing is left in _deletions/');
$node->safe_psql('postgres', 'DELETE FROM main_rows WHERE id <= 5');
is(ids($ds), '6-20,31-70', 'a DELETE that commits deletes the rows');

$node->stop;
done_testing();
