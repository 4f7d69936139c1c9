# write_dataset encodes in bounded memory.
#
# 1. 2,000,000 rows of (integer, text, double precision[]) written as two
#    files, encoded in the backend (lance_parts.write_workers = 0), raise
#    the backend's peak resident memory (VmHWM) by less than 45 MB over the
#    same backend's peak before the write, and lance_fdw reads every row
#    back.  The write's large buffers are mappings of their own
#    (src/pg/base/lp_pg_alloc.c): about +37 MB.  From malloc, the same write
#    raised it by about 69 MB: glibc raised its mmap threshold to the size
#    of each page buffer freed, so later buffers came from the heap, where
#    freed memory stays resident.
#
# 2. The peak is flat with the rows: N and 4N rows of eight narrow columns
#    (whose pages fill slowly) raise the peak of the backend (0 workers) and
#    of each write worker (2 workers) by about the same, within 3 MB (both
#    about 32 MB for the backend, 52 MB for a worker, whose VmHWM also counts
#    its queue in shared memory).
#    Before the writer's budget for the pages of all columns
#    (LP_WRITER_BUFFER_BYTES), every column held up to 8 MiB until its page
#    was written, so 4N rows took about 30 MB more than N; and the workers,
#    which did not map large buffers apart, grew by more again.
#
# 3. A write that fails gives its mappings back (its memory context goes).
use strict;
use warnings;

use Cwd ();
use IPC::Run ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();

my $work = $ENV{LP_SCRATCH}
  ? "$ENV{LP_SCRATCH}/022_write_memory"
  : Cwd::abs_path(PostgreSQL::Test::Utils::tempdir());
mkdir $work unless -d $work;
my $rows = 2000000;

my $node = PostgreSQL::Test::Cluster->new('write_memory');
$node->init;
$node->append_conf('postgresql.conf', "max_worker_processes = 8\nmax_parallel_workers = 8\n");
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
cmp_ok($growth_kb, '<', 45 * 1024,
	"the write raises the backend's peak memory by less than 45 MB ($growth_kb kB)");

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

# ---- flat with the rows ----
#
# Eight columns of 4 to 20 bytes a row: at 500,000 rows their pages
# together pass the writer's budget (16 MiB at about 250,000 rows), so its
# pages are written while the others are held, as at 2,000,000, where
# without the budget the 8-byte columns would hold 8 MiB each.
my $narrow_rows = 500000;
my $narrow =
    q{g::bigint AS a, (g * 3)::bigint AS b, g * 0.5::float8 AS c, g * 0.25::float8 AS d, }
  . q{(g % 1000)::integer AS e, (g * 7)::integer AS f, (g / 3.0)::real AS h, }
  . q{'label ' || g AS label};

sub status_kb
{
	my ($pid, $field) = @_;
	open(my $fh, '<', "/proc/$pid/status") or return undef;
	my ($kb) = map { /^$field:\s+(\d+)/ ? $1 : () } <$fh>;
	close($fh);
	return $kb;
}

# The pids of the parallel workers of backend $leader (by their process title).
sub worker_pids
{
	my ($leader) = @_;
	my @pids;
	foreach my $cmdline (glob('/proc/[0-9]*/cmdline'))
	{
		open(my $fh, '<', $cmdline) or next;
		my $title = <$fh> // '';
		close($fh);
		push @pids, $1
		  if $title =~ /parallel worker for PID $leader\b/ && $cmdline =~ m{/proc/(\d+)/};
	}
	return @pids;
}

# Write $n rows of $narrow with $workers write workers in a session of its
# own, after a warm-up write; returns the backend's VmHWM growth in kB, the
# largest VmHWM of its workers (sampled while they run; VmHWM only grows),
# how many workers were seen and the backend's largest RssAnon sampled.
sub narrow_write
{
	my ($workers, $n) = @_;
	my $dir = "$work/narrow_${workers}_$n";
	my ($in, $out, $err) = ('', '', '');
	my $session = IPC::Run::start(
		[
			'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
			'-c', 'SET jit = off',
			'-c', "SET lance_parts.write_workers = $workers",
			'-c', 'SELECT pg_backend_pid()',
			'-c', "SELECT count(*) FROM lance_parts.write_dataset('$dir.warm',"
			  . " \$q\$SELECT $narrow FROM generate_series(1, 10) g\$q\$)",
			'-c', $hwm,
			'-c', "SELECT num_rows FROM lance_parts.write_dataset('$dir',"
			  . " \$q\$SELECT $narrow FROM generate_series(1, $n) g\$q\$)",
			'-c', $hwm
		],
		'<', \$in, '>', \$out, '2>', \$err);
	my ($leader, %worker_peak);
	my $backend_anon = 0;
	while ($session->pumpable)
	{
		$session->pump_nb;
		# once the warm-up write is over (its peak printed)
		($leader) = $out =~ /^(\d+)\n\d+\n\d+\n/ unless defined $leader;
		if (defined $leader)
		{
			my $anon = status_kb($leader, 'RssAnon');
			$backend_anon = $anon if defined $anon && $anon > $backend_anon;
			foreach my $pid (worker_pids($leader))
			{
				my $kb = status_kb($pid, 'VmHWM');
				$worker_peak{$pid} = $kb
				  if defined $kb && (!defined $worker_peak{$pid} || $kb > $worker_peak{$pid});
			}
		}
		Time::HiRes::sleep(0.02);
	}
	$session->finish;
	die "$workers workers, $n rows: the session failed: $err" if $? != 0;
	my (undef, undef, $hwm_before, $written, $hwm_after) = split /\n/, $out;
	is($written, $n, "$workers workers, $n rows: write_dataset writes every row");
	my @peaks = values %worker_peak;
	my $worker_max = 0;
	$worker_max = $_ > $worker_max ? $_ : $worker_max foreach @peaks;
	note("$workers workers, $n rows: backend VmHWM $hwm_before -> $hwm_after kB, "
		  . scalar(@peaks) . " workers seen, largest VmHWM $worker_max kB, "
		  . "backend's largest RssAnon $backend_anon kB");
	return ($hwm_after - $hwm_before, $worker_max, scalar(@peaks), $backend_anon);
}

my $margin_kb = 3 * 1024;
my ($serial_small) = narrow_write(0, $narrow_rows);
my ($serial_large) = narrow_write(0, 4 * $narrow_rows);
cmp_ok(abs($serial_large - $serial_small), '<', $margin_kb,
	"0 workers: the backend's peak grows about as much for $narrow_rows rows ($serial_small kB) "
	  . 'as for 4 times as many (' . $serial_large . ' kB)');
cmp_ok($serial_large, '<', 36 * 1024, "0 workers: the backend's peak grows by less than 36 MB");

my (undef, $worker_small, $seen_small) = narrow_write(2, $narrow_rows);
my (undef, $worker_large, $seen_large, $parallel_backend) = narrow_write(2, 4 * $narrow_rows);
ok($seen_small >= 1 && $seen_large >= 1, '2 workers: parallel workers encode the files');
cmp_ok(abs($worker_large - $worker_small), '<', $margin_kb,
	"2 workers: each worker's peak is about the same for $narrow_rows rows ($worker_small kB) "
	  . "and 4 times as many ($worker_large kB)");
cmp_ok($worker_large, '<', 58 * 1024, '2 workers: no worker\'s peak reaches 58 MB');
# RssAnon: the backend's VmHWM also counts the queues to the workers, in shared memory
cmp_ok($parallel_backend, '<', 12 * 1024,
	"2 workers: the backend, which holds no pages, keeps its private memory under 12 MB ($parallel_backend kB)");

# ---- an ERROR gives the mappings back ----
#
# A write that fails at row 300,000 (its pages hold about 16 MB then, most
# of it in mappings of 1 MB and more) leaves the session's private memory
# within 6 MB of where it was (about 3 MB: freed heap memory malloc keeps;
# with the mappings left in place, about 18 MB): the deletion of its memory
# context unmapped them, after the output's callback removed its temporary
# file; and the next write works.
my $anon = q{SELECT substring(pg_read_file('/proc/self/status') from 'RssAnon:\s+(\d+)')};
my ($ret, $stdout, $stderr) = $node->psql(
	'postgres', qq{
	SET jit = off;
	SET lance_parts.write_workers = 0;
	SELECT count(*) FROM lance_parts.write_dataset('$work/failed_warm',
	    \$q\$SELECT $narrow FROM generate_series(1, 10) g\$q\$) \\g /dev/null
	$anon;
	SELECT count(*) FROM lance_parts.write_dataset('$work/failed',
	    \$q\$SELECT $narrow, 1 / (300000 - g) AS boom FROM generate_series(1, 400000) g\$q\$);
	$anon;
	SELECT num_rows FROM lance_parts.write_dataset('$work/after_failed',
	    \$q\$SELECT $narrow FROM generate_series(1, 10) g\$q\$);},
	on_error_stop => 0);
like($stderr, qr/division by zero/, 'the failing write fails with its query\'s ERROR');
my ($anon_before, $anon_after, $after_rows) = split /\n/, $stdout;
note("RssAnon before the failed write $anon_before kB, after $anon_after kB");
cmp_ok($anon_after - $anon_before, '<', 6 * 1024,
	'after the failed write the backend\'s private memory is within 6 MB of where it was '
	  . '(' . ($anon_after - $anon_before) . ' kB)');
is($after_rows, 10, 'the next write in the session works');

$node->stop;
done_testing();
