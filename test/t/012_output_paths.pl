# Outputs at long paths: parallel copy workers write exactly the leader's
# temporary file whatever the length of its path (an output directory of
# about 1000 and of about 4000 bytes), never a regular file or a symlink put
# at a shorter name (each shorter name of the temporary file in the output
# directory, and its first MAXPGPATH - 1 bytes, where workers used to open
# it); a temporary path beyond PATH_MAX is a clean error; final names of
# NAME_MAX bytes get a temporary name within NAME_MAX.
use strict;
use warnings;

use Digest::MD5;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(reference_data slurp directory_entries);

my ($data_dir, $index) = reference_data();

my $node = PostgreSQL::Test::Cluster->new('output_paths');
$node->init;
$node->append_conf('postgresql.conf', "max_worker_processes = 8\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');

my $work = PostgreSQL::Test::Utils::tempdir;

# PostgreSQL's MAXPGPATH, where the old code cut the path it gave the workers
my $maxpgpath = 1024;
my $name_max = 255;
my $path_max = 4096;

sub file_md5
{
	my ($path) = @_;
	open my $fh, '<:raw', $path or return "missing $path";
	my $md5 = Digest::MD5->new->addfile($fh)->hexdigest;
	close $fh;
	return $md5;
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

my $multipage = (grep { $_->{name} eq 'multipage_2_1' } @{ $index->{datasets} })[0];
my @files = map { "$multipage->{path}/data/$_->{file}" } @{ $multipage->{data_files} };
my @parts = (@files, reverse(@files), @files);
my $parts_sql = 'ARRAY[' . join(',', map { "'$_'" } @parts) . ']::text[]';
my $rows = 0;
$rows += 3 * $_->{num_rows} for @{ $multipage->{data_files} };

# small spans, so that each worker copies many; the workers copy them all
my $parallel = "SET lance_parts.read_batch_bytes = '64kB'; SET lance_parts.max_copy_workers = 2;"
  . " SET parallel_leader_participation = off; SET client_min_messages = debug1;";

my ($rc, $stdout, $stderr) = run_sql('SET lance_parts.max_copy_workers = 0;',
	"SELECT status FROM lance_parts.concat_files('$work/serial.lance', $parts_sql)");
is($rc, 0, 'serial assembly at a short path') or diag $stderr;
my $serial_md5 = file_md5("$work/serial.lance");

# A directory under root whose path is exactly $length bytes, made of
# components of at most 200 bytes.
sub directory_of_length
{
	my ($root, $length, $letter) = @_;
	my $dir = $root;
	mkdir $root or die "cannot create $root: $!";
	while (length($dir) < $length)
	{
		my $remaining = $length - length($dir);
		my $bytes = $remaining - 1 > 200 ? 200 : $remaining - 1;
		# never leave a single byte, which cannot be a component of its own
		$bytes-- if $remaining - 1 - $bytes == 1;
		$dir .= '/' . ($letter x $bytes);
		mkdir $dir or die "cannot create directory of " . length($dir) . " bytes: $!";
	}
	die "directory of " . length($dir) . " bytes, not $length" unless length($dir) == $length;
	return $dir;
}

# The shorter names a worker could have been given for the temporary file of
# output (".<name>.<pid>.<random>.tmp" beside it): each leading part of
# "<dir>/.<name>." past "<dir>/.", and its first MAXPGPATH - 1 bytes.
sub shorter_names
{
	my ($output) = @_;
	my ($dir, $name) = $output =~ m{^(.*)/([^/]+)$};
	my $known = "$dir/.$name.";
	my %names = map { substr($known, 0, $_) => 1 } (length($dir) + 3 .. length($known));
	my $cut = substr($known, 0, $maxpgpath - 1);
	die "the MAXPGPATH cut of $output ends in a slash" if $cut =~ m{/$};
	$names{$cut} = 1;
	return (sort keys %names);
}

# Put a regular file (kind 'file') or a symlink to a victim file (kind
# 'symlink') at each name; returns a sub that checks they are untouched.
sub place_decoys
{
	my ($kind, @names) = @_;
	my $victim = "$work/victim-" . int(rand(1 << 30));
	my $victim_bytes = "the victim of a symlink\n" x 100;
	if ($kind eq 'symlink')
	{
		open my $fh, '>:raw', $victim or die "cannot write $victim: $!";
		print $fh $victim_bytes;
		close $fh;
	}
	for my $i (0 .. $#names)
	{
		if ($kind eq 'file')
		{
			open my $fh, '>:raw', $names[$i] or die "cannot write a decoy of " . length($names[$i]) . " bytes: $!";
			print $fh "decoy $i\n";
			close $fh;
		}
		else
		{
			symlink($victim, $names[$i]) or die "cannot create a symlink: $!";
		}
	}
	return sub {
		my ($label) = @_;
		my @changed;
		for my $i (0 .. $#names)
		{
			if ($kind eq 'file')
			{
				push @changed, length($names[$i])
				  if -l $names[$i] || !-f $names[$i] || slurp($names[$i]) ne "decoy $i\n";
			}
			else
			{
				push @changed, length($names[$i])
				  if !-l $names[$i] || readlink($names[$i]) ne $victim;
			}
		}
		is_deeply(\@changed, [], "$label: every $kind at a shorter name untouched ("
			  . scalar(@names) . ' names, one of ' . ($maxpgpath - 1) . ' bytes)');
		if ($kind eq 'symlink')
		{
			ok(-s $victim == length($victim_bytes) && slurp($victim) eq $victim_bytes,
				"$label: the symlinks' victim untouched");
		}
		unlink @names, $victim;
	};
}

# Assemble into output with two workers; the bytes of a serial assembly and
# no temporary file left beside it.
sub assemble_in_parallel
{
	my ($label, $output) = @_;
	my ($dir) = $output =~ m{^(.*)/[^/]+$};
	my %before = map { $_ => 1 } directory_entries($dir);
	my ($rc, $stdout, $stderr) = run_sql($parallel,
		"SELECT status || ' ' || num_rows FROM lance_parts.concat_files('$output', $parts_sql)");
	is($rc, 0, "$label: assembled") or diag $stderr;
	like($stdout, qr/^written $rows$/m, "$label: written, all rows");
	like($stderr, qr/with 2 parallel workers/, "$label: two workers copied");
	is(file_md5($output), $serial_md5, "$label: the bytes of the serial assembly");
	my ($name) = $output =~ m{/([^/]+)$};
	is_deeply([ grep { !$before{$_} } directory_entries($dir) ], [$name],
		"$label: only the output is new in its directory");
	my ($info_rc, $info) = run_sql('', "SELECT num_rows FROM lance_parts.file_info('$output')");
	is($info, $rows, "$label: the output reads back");
	unlink $output;
}

my $name = 'parallel-output.lance';

# ---- an output directory of about 1000 bytes: the cut lands in the name --------

my $dir_1k = directory_of_length("$work/1k", $maxpgpath - 14, 'k');
my @names_1k = shorter_names("$dir_1k/$name");
ok(length("$dir_1k/.$name") > $maxpgpath, 'the temporary path is longer than MAXPGPATH');
for my $kind ('file', 'symlink')
{
	my $check = place_decoys($kind, @names_1k);
	assemble_in_parallel("1000-byte directory, a $kind at each shorter name", "$dir_1k/$name");
	$check->("1000-byte directory, a $kind at each shorter name");
}

# ---- an output directory of 4000 bytes, close to PATH_MAX --------------------------

my $dir_4k = directory_of_length("$work/4k", 4000, 'm');
assemble_in_parallel('4000-byte directory', "$dir_4k/$name");
my @names_4k = shorter_names("$dir_4k/$name");
for my $kind ('file', 'symlink')
{
	my $check = place_decoys($kind, @names_4k);
	assemble_in_parallel("4000-byte directory, a $kind at each shorter name", "$dir_4k/$name");
	$check->("4000-byte directory, a $kind at each shorter name");
}

# ---- a temporary path beyond PATH_MAX: a clean error, nothing published ------------

my $dir_long = directory_of_length("$work/long", $path_max - 2 - length($name) - 20, 'p');
ok(length("$dir_long/$name") < $path_max, 'the final path is within PATH_MAX');
($rc, $stdout, $stderr) = run_sql($parallel,
	"SELECT status FROM lance_parts.concat_files('$dir_long/$name', $parts_sql)");
isnt($rc, 0, 'temporary path beyond PATH_MAX: the call fails');
# (the message is cut off after 512 bytes, before the reason)
my $dir_long_start = substr($dir_long, 0, 300);
like($stderr, qr/ERROR:  \w{5}: could not create file "\Q$dir_long_start\E/,
	'temporary path beyond PATH_MAX: a clean error');
is_deeply([ directory_entries($dir_long) ], [], 'temporary path beyond PATH_MAX: nothing published, nothing left');

# ---- final names of NAME_MAX bytes --------------------------------------------------

my $names_dir = "$work/names";
mkdir $names_dir or die "cannot create $names_dir: $!";
# ASCII, and two-byte characters at either parity, so that one of them is cut
# in the middle of a character whatever the length of the backend's pid
for my $final ('n' x ($name_max - 6) . '.lance', "\x{e9}" x 124 . '.lance', 'x' . "\x{e9}" x 124 . '.lance')
{
	my $bytes = $final;
	utf8::encode($bytes);
	my $label = 'a final name of ' . length($bytes) . ' bytes' . ($bytes =~ /^n/ ? '' : ' with two-byte characters');
	($rc, $stdout, $stderr) = run_sql("$parallel SET client_min_messages = debug2;",
		"SELECT status FROM lance_parts.concat_files('$names_dir/$bytes', $parts_sql)");
	is($rc, 0, "$label: assembled") or diag $stderr;
	is(file_md5("$names_dir/$bytes"), $serial_md5, "$label: the bytes of the serial assembly");
	my ($temp) = $stderr =~ m{writing "\Q$names_dir/$bytes\E" as temporary file "\Q$names_dir\E/([^"/]+)"};
	ok(defined $temp && length($temp) <= $name_max, "$label: the temporary name is within NAME_MAX")
	  or diag $stderr;
	like($temp // '', qr/^\.[^.]+(\.lance)?\.\d+\.[0-9a-f]{16}\.tmp$/, "$label: the temporary name's form");
	my $decoded = $temp // '';
	ok(utf8::decode($decoded), "$label: the temporary name is valid UTF-8");
	is_deeply([ directory_entries($names_dir) ], [$bytes], "$label: only the output in its directory");
	unlink "$names_dir/$bytes";
}

my $too_long = 'n' x ($name_max - 5) . '.lance';
($rc, $stdout, $stderr) = run_sql($parallel,
	"SELECT status FROM lance_parts.concat_files('$names_dir/$too_long', $parts_sql)");
like($stderr, qr/ERROR:  22023: could not create file "[^"]*": its name is longer than $name_max bytes/,
	'a final name longer than NAME_MAX: 22023');
is_deeply([ directory_entries($names_dir) ], [], 'a final name longer than NAME_MAX: nothing left');

$node->stop;
done_testing();
