# Parallel copy of an assembly: identical bytes for 0, 1 and 2 workers on
# every file version, serial fallback when no worker can start, a worker's
# error reaching the caller, a cancelled copy leaving nothing behind, and
# lance_parts.progress advancing while a copy runs.  Every case checks that
# no parallel worker is left.
use strict;
use warnings;

use Digest::MD5;
use File::Copy qw(copy);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(reference_data);

my ($data_dir, $index) = reference_data();
use Time::HiRes qw(usleep);


my $node = PostgreSQL::Test::Cluster->new('parallel_copy');
$node->init;
$node->append_conf('postgresql.conf', "max_worker_processes = 8\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');

my $work = PostgreSQL::Test::Utils::tempdir;

sub file_md5
{
	my ($path) = @_;
	open my $fh, '<:raw', $path or return "missing $path";
	my $md5 = Digest::MD5->new->addfile($fh)->hexdigest;
	close $fh;
	return $md5;
}

sub sql_array
{
	return 'ARRAY[' . join(',', map { "'$_'" } @_) . ']::text[]';
}

# Run sql with settings; returns (rc, stdout, stderr).
sub run_sql
{
	my ($settings, $sql) = @_;
	my ($out, $err);
	my $rc = $node->psql('postgres', "$settings\n$sql",
		stdout => \$out, stderr => \$err, extra_params => ['-v', 'VERBOSITY=verbose']);
	return ($rc, $out, $err);
}

sub no_parallel_workers_left
{
	my ($what) = @_;
	# a terminated worker may take a moment to leave pg_stat_activity
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'parallel worker'"),
		"$what: no parallel worker left");
}

# Only the files the test put there: no output, no temporary file.
sub directory_holds
{
	my ($dir, @names) = @_;
	opendir my $dh, $dir or die "cannot list $dir: $!";
	my @found = sort grep { !/^\.\.?$/ } readdir $dh;
	closedir $dh;
	is_deeply(\@found, [ sort @names ], "$dir holds only " . join(', ', @names));
}

# ---- identical bytes for 0, 1 and 2 workers, every version -------------------

my @datasets = grep { $_->{name} =~ /^(types_2_\d_v2|multipage_2_\d)$/ } @{ $index->{datasets} };
is(scalar(@datasets), 8, 'found the types and multipage datasets of versions 2.0 to 2.3');

my $small = "SET lance_parts.read_batch_bytes = '64kB'; SET client_min_messages = debug1;";
for my $dataset (@datasets)
{
	my @files = map { "$dataset->{path}/data/$_->{file}" } @{ $dataset->{data_files} };
	# each file three times: more spans than workers
	my @parts = (@files, reverse(@files), @files);
	my $rows = 0;
	$rows += $_->{num_rows} for @{ $dataset->{data_files} };
	my %md5;
	for my $run ([ 'serial', 0, 'on' ], [ '1 worker', 1, 'off' ], [ '2 workers', 2, 'off' ],
		[ '2 workers and the leader', 2, 'on' ])
	{
		my ($label, $workers, $leader) = @$run;
		my $out = "$work/$dataset->{name}-$workers-$leader.lance";
		my ($rc, $stdout, $stderr) = run_sql(
			"$small SET lance_parts.max_copy_workers = $workers; SET parallel_leader_participation = $leader;",
			"SELECT status || ' ' || num_rows FROM lance_parts.concat_files('$out', " . sql_array(@parts) . ')');
		is($rc, 0, "$dataset->{name}, $label: assembled") or diag $stderr;
		my $all_rows = 3 * $rows;
		like($stdout, qr/^written $all_rows$/m, "$dataset->{name}, $label: all rows");
		if ($workers > 0)
		{
			like($stderr, qr/copying into "\Q$out\E" with $workers parallel workers/,
				"$dataset->{name}, $label: workers copied");
		}
		$md5{$label} = file_md5($out);
	}
	is_deeply([ map { $md5{$_} } ('1 worker', '2 workers', '2 workers and the leader') ],
		[ ($md5{serial}) x 3 ], "$dataset->{name}: the same bytes with 0, 1 and 2 workers");
	my $info = $node->safe_psql('postgres',
		"SELECT num_rows, version FROM lance_parts.file_info('$work/$dataset->{name}-2-off.lance')");
	is($info, 3 * $rows . "|$dataset->{file_version}", "$dataset->{name}: the output reads back");
}
no_parallel_workers_left('identical bytes');

# ---- serial fallback when no worker can start ---------------------------------

my $multipage = (grep { $_->{name} eq 'multipage_2_1' } @datasets)[0];
my @multipage_files = map { "$multipage->{path}/data/$_->{file}" } @{ $multipage->{data_files} };
my @fallback_parts = (@multipage_files, reverse(@multipage_files), @multipage_files);
my $serial_md5 = file_md5("$work/multipage_2_1-0-on.lance");

my ($rc, $stdout, $stderr) = run_sql("$small SET max_parallel_workers = 0;",
	"SELECT status FROM lance_parts.concat_files('$work/fallback-1.lance', " . sql_array(@fallback_parts) . ')');
is($rc, 0, 'max_parallel_workers = 0: assembled');
like($stderr, qr/NOTICE:  00000: no parallel workers could be started to copy into "[^"]*fallback-1.lance", copying serially/,
	'max_parallel_workers = 0: a NOTICE says the copy is serial');
is(file_md5("$work/fallback-1.lance"), $serial_md5, 'max_parallel_workers = 0: the serial bytes');

# no background worker slot at all: the logical replication launcher takes the only one
$node->append_conf('postgresql.conf', "max_worker_processes = 1\n");
$node->restart;
($rc, $stdout, $stderr) = run_sql($small,
	"SELECT status FROM lance_parts.concat_files('$work/fallback-2.lance', " . sql_array(@fallback_parts) . ')');
is($rc, 0, 'worker slots exhausted: assembled');
like($stderr, qr/no parallel workers could be started to copy into "[^"]*fallback-2.lance", copying serially/,
	'worker slots exhausted: a NOTICE says the copy is serial');
is(file_md5("$work/fallback-2.lance"), $serial_md5, 'worker slots exhausted: the serial bytes');
$node->append_conf('postgresql.conf', "max_worker_processes = 8\n");
$node->restart;

# ---- long copies: a large part made from many small ones ----------------------

my $big_dir = "$work/big";
mkdir $big_dir or die "cannot create $big_dir: $!";
$node->safe_psql('postgres',
	"SELECT lance_parts.concat_files('$big_dir/big.lance', array_fill('$multipage_files[0]'::text, ARRAY[1200]))");
my $big_size = -s "$big_dir/big.lance";
ok($big_size > 100_000_000, "a large part of $big_size bytes");

my $timeout = $PostgreSQL::Test::Utils::timeout_default;

# Start sql in its own session; returns the harness and its outputs.
sub start_session
{
	my ($sql) = @_;
	my %session = (out => '', err => '');
	$session{harness} = IPC::Run::start(
		[ 'psql', '-X', '-A', '-t', '-v', 'VERBOSITY=verbose', '-d', $node->connstr('postgres'), '-c', $sql ],
		'>', \$session{out}, '2>', \$session{err},
		IPC::Run::timeout($timeout));
	return \%session;
}

# Poll the progress view until a row for target (a file name) matches phase;
# returns the row (pid|phase|parts_done|parts_total|bytes_done|bytes_total|workers).
sub wait_for_phase
{
	my ($target, $phase) = @_;
	my $deadline = time + $timeout;
	while (time < $deadline)
	{
		my $row = $node->safe_psql('postgres',
			"SELECT pid, phase, parts_done, parts_total, bytes_done, bytes_total, workers
			 FROM lance_parts.progress WHERE target_file LIKE '%/$target'");
		return $row if $row =~ /\|$phase\|/;
		usleep(10_000);
	}
	return '';
}

my $long_settings = "SET lance_parts.read_batch_bytes = '64kB'; SET lance_parts.max_copy_workers = 2;";
my @long_parts = ("$big_dir/big.lance") x 3;

# ---- progress advances during a copy -------------------------------------------

my $session = start_session("$long_settings SELECT status FROM lance_parts.concat_files("
	  . "'$big_dir/progress.lance', " . sql_array(@long_parts) . ')');
my @seen;
my $deadline = time + $timeout;
while (time < $deadline)
{
	my $row = $node->safe_psql('postgres',
		"SELECT phase, parts_done, parts_total, bytes_done, bytes_total, workers
		 FROM lance_parts.progress WHERE target_file LIKE '%/progress.lance'");
	last if $row eq '' && @seen;
	push @seen, $row if $row ne '' && (!@seen || $seen[-1] ne $row);
	usleep(10_000);
}
$session->{harness}->finish;
like($session->{out}, qr/written/, 'progress: the assembly succeeded');
note "progress rows seen:\n" . join("\n", @seen);
my @copying = grep { /^copying\|/ } @seen;
my @bytes = map { (split /\|/)[3] } @copying;
ok(@copying >= 2, 'progress: at least two copying states seen');
ok(@bytes >= 2 && $bytes[-1] > $bytes[0], 'progress: bytes done advance while copying');
is_deeply([ grep { $bytes[$_] < $bytes[ $_ - 1 ] } 1 .. $#bytes ], [], 'progress: bytes done never go back');
my $first_copying = @copying ? $copying[0] : '';
my $progress_size = -s "$big_dir/progress.lance";
like($first_copying, qr/^copying\|[0-3]\|3\|\d+\|$progress_size\|[12]$/,
	'progress: parts total, bytes total and workers');
ok((grep { /^validating\|/ } @seen) || (grep { /^finalizing\|/ } @seen), 'progress: other phases are shown');
is($node->safe_psql('postgres', 'SELECT count(*) FROM lance_parts.progress'), '0',
	'progress: the row is gone after the call');
no_parallel_workers_left('progress');

# ---- cancel during a parallel copy --------------------------------------------

$session = start_session("$long_settings SELECT status FROM lance_parts.concat_files("
	  . "'$big_dir/cancelled.lance', " . sql_array(@long_parts) . ')');
my $row = wait_for_phase('cancelled.lance', 'copying');
like($row, qr/\|copying\|/, 'cancel: the copy is running');
my ($pid) = split /\|/, $row;
$node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)");
$session->{harness}->finish;
like($session->{err}, qr/ERROR:  57014: canceling statement due to user request/, 'cancel: 57014');
no_parallel_workers_left('cancel');
directory_holds($big_dir, 'big.lance', 'progress.lance');

# ---- a worker's error: a part shrinks after validation -------------------------

my $victim = "$big_dir/victim.lance";
copy($multipage_files[0], $victim) or die "cannot copy: $!";
$session = start_session("$long_settings SET parallel_leader_participation = off;"
	  . " SELECT status FROM lance_parts.concat_files('$big_dir/failed.lance', "
	  . sql_array(@long_parts, $victim) . ')');
$row = wait_for_phase('failed.lance', 'copying');
like($row, qr/\|copying\|/, 'worker error: the copy is running');
truncate($victim, 1000) or die "cannot truncate $victim: $!";
$session->{harness}->finish;
like($session->{err}, qr/ERROR:  XX001: file "\Q$victim\E" changed size after it was validated/,
	'worker error: the worker\'s message reaches the caller');
like($session->{err}, qr/CONTEXT:  parallel worker/, 'worker error: raised in a parallel worker');
no_parallel_workers_left('worker error');
directory_holds($big_dir, 'big.lance', 'progress.lance', 'victim.lance');

$node->stop;
done_testing();
