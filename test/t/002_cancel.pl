# Cancelling a long assembly: statement_timeout, a small read batch and
# pg_cancel_backend from another session end the call with 57014 and leave
# neither the final file nor a temporary file; a backend killed with SIGKILL
# in the middle of a copy leaves no final file after the restart.
use strict;
use warnings;

use Cwd ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JSON::PP qw(decode_json);
use Test::More;

use LanceParts qw(reference_data);
use Time::HiRes qw(usleep);


# A part of the multipage 2.2 dataset, and a copy of that dataset to
# assemble into.
my ($data_dir, $index) = reference_data();
my ($multipage) = grep { $_->{name} eq 'multipage_2_2' } @{ $index->{datasets} };
my ($part_file) = sort { $b->{num_rows} <=> $a->{num_rows} } @{ $multipage->{data_files} };
my $part = "$multipage->{path}/data/$part_file->{file}";


my $node = PostgreSQL::Test::Cluster->new('cancel');
$node->init;
$node->append_conf('postgresql.conf', 'restart_after_crash = on');
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');

# absolute: the server resolves paths from its data directory
my $work = $ENV{LP_SCRATCH}
  ? "$ENV{LP_SCRATCH}/002_cancel"
  : Cwd::abs_path(PostgreSQL::Test::Utils::tempdir());
mkdir $work unless -d $work;
my $out_dir = "$work/out";
mkdir $out_dir;
system('cp', '-r', $multipage->{path}, "$work/dataset.lance") == 0
  or die "could not copy $multipage->{path}";

# The large part: 64 copies of the part, then 26 copies of that (~300 MB).
my $stage1 = "$work/stage1.lance";
my $big = "$work/big.lance";
$node->safe_psql('postgres',
	"SELECT * FROM lance_parts.concat_files('$stage1', array_fill('$part'::text, ARRAY[64]))");
my $big_rows = $node->safe_psql('postgres',
	"SELECT num_rows FROM lance_parts.concat_files('$big', array_fill('$stage1'::text, ARRAY[26]))");
is($big_rows, 26 * 64 * $part_file->{num_rows}, 'large part written');
my $big_size = -s $big;
cmp_ok($big_size, '>', 250_000_000, "large part has $big_size bytes");
unlink $stage1;

# The inputs of every cancelled call: the large part four times (~1.2 GB).
my $inputs = "array_fill('$big'::text, ARRAY[4])";

sub temporary_files
{
	my ($dir) = @_;
	opendir my $dh, $dir or die "could not open $dir: $!";
	my @names = grep { /^\..*\.tmp$/ } readdir $dh;
	closedir $dh;
	return @names;
}

# Run a call that is expected to be cancelled; returns its stderr.
sub cancelled_call
{
	my ($settings, $sql) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"\\set VERBOSITY verbose\n$settings\n$sql", on_error_stop => 1);
	return $stderr;
}

# How long the whole copy takes when nothing interrupts it; the timeouts
# below are a small fraction of it.
my $t0 = Time::HiRes::time();
$node->safe_psql('postgres',
	"SELECT * FROM lance_parts.concat_files('$out_dir/uncancelled.lance', $inputs)");
my $full_seconds = Time::HiRes::time() - $t0;
note sprintf('an uncancelled copy of %.0f MB takes %.2f s', 4 * $big_size / 1e6, $full_seconds);
unlink "$out_dir/uncancelled.lance";
my $timeout_ms = int($full_seconds * 1000 / 8);
$timeout_ms = 50 if $timeout_ms < 50;

# statement_timeout, concat_files
my $stderr = cancelled_call("SET statement_timeout = $timeout_ms;",
	"SELECT * FROM lance_parts.concat_files('$out_dir/timeout.lance', $inputs);");
like($stderr, qr/ERROR:  57014: canceling statement due to statement timeout/,
	"concat_files: statement_timeout ($timeout_ms ms) ends the call with 57014");
ok(!-e "$out_dir/timeout.lance", 'concat_files: no final file after the timeout');
is(join(',', temporary_files($out_dir)), '', 'concat_files: no temporary file after the timeout');

# statement_timeout with a small read batch, assemble into a dataset
my $target = $node->safe_psql('postgres',
	"SELECT lance_parts.create_target('$work/dataset.lance')");
my $target_file = "$work/dataset.lance/data/" . decode_json($target)->{file_name};
$stderr = cancelled_call(
	"SET statement_timeout = $timeout_ms; SET lance_parts.read_batch_bytes = '64kB';",
	"SELECT * FROM lance_parts.assemble('$target', $inputs);");
like($stderr, qr/ERROR:  57014: canceling statement due to statement timeout/,
	'assemble with 64kB batches: statement_timeout ends the call with 57014');
ok(!-e $target_file, 'assemble: no target file after the timeout');
is(join(',', temporary_files("$work/dataset.lance/data")), '',
	'assemble: no temporary file after the timeout');

# pg_cancel_backend from another session while the copy is under way
my $session = $node->background_psql('postgres', on_error_stop => 0);
my $pid = $session->query_safe('SELECT pg_backend_pid()');
$session->query_until(qr/started/,
	"\\set VERBOSITY verbose\n\\echo started\nSELECT * FROM lance_parts.concat_files('$out_dir/cancel.lance', $inputs);\n");
my $seen_bytes = 0;
for (my $i = 0; $i < 3000 && $seen_bytes < 100_000_000; $i++)
{
	for my $name (temporary_files($out_dir))
	{
		my $size = -s "$out_dir/$name";
		$seen_bytes = $size if defined $size && $size > $seen_bytes;
	}
	usleep(5_000) if $seen_bytes < 100_000_000;
}
cmp_ok($seen_bytes, '>=', 100_000_000,
	"the copy was under way ($seen_bytes bytes in its temporary file)");
is($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)"), 't', 'pg_cancel_backend');
$session->query('SELECT 1');
like($session->{stderr}, qr/ERROR:  57014: canceling statement due to user request/,
	'pg_cancel_backend ends the call with 57014');
$session->quit;
ok(!-e "$out_dir/cancel.lance", 'no final file after pg_cancel_backend');
is(join(',', temporary_files($out_dir)), '', 'no temporary file after pg_cancel_backend');

# SIGKILL of the backend in the middle of a copy: the server restarts, the
# final file does not exist; the temporary file stays (no process is left
# to remove it)
$session = $node->background_psql('postgres', on_error_stop => 0);
$pid = $session->query_safe('SELECT pg_backend_pid()');
$session->query_until(qr/started/,
	"\\echo started\nSELECT * FROM lance_parts.concat_files('$out_dir/killed.lance', $inputs);\n");
$seen_bytes = 0;
for (my $i = 0; $i < 3000 && $seen_bytes < 100_000_000; $i++)
{
	for my $name (temporary_files($out_dir))
	{
		my $size = -s "$out_dir/$name";
		$seen_bytes = $size if defined $size && $size > $seen_bytes;
	}
	usleep(5_000) if $seen_bytes < 100_000_000;
}
cmp_ok($seen_bytes, '>=', 100_000_000, 'the copy to be killed was under way');
kill 'KILL', $pid;
# psql has lost its server; it may already have exited
eval { $session->quit };
$node->poll_query_until('postgres', 'SELECT 1', '1')
  or die 'the server did not come back after the crash';
ok(!-e "$out_dir/killed.lance", 'no final file after a backend crash');
my @left = temporary_files($out_dir);
note 'temporary files left by the crash: ' . (join(', ', @left) || 'none');
is(scalar(@left), 1, 'the temporary file of the killed copy remains: nothing removes it after a crash');
unlink map { "$out_dir/$_" } @left;

$node->stop;
system('rm', '-rf', $work) if $ENV{LP_SCRATCH};
done_testing();
