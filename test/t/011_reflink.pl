# Zero-copy assembly on a filesystem that shares extents (XFS, reflink=1):
# the assembled file shares its data blocks with the parts, takes almost no
# space, has the same pages as the packed assembly, and the reference
# implementation reads the committed rows back exactly.
#
# LP_REFLINK_DIR must be a directory on such a filesystem, writable by this
# user; test/run.sh mounts one.
use strict;
use warnings;

use File::Copy qw(copy);
use JSON::PP qw(decode_json);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(reference_data);

my ($data_dir, $index) = reference_data();

my $src_dir = $ENV{LP_SRCDIR} or BAIL_OUT('LP_SRCDIR must name the source tree');
my $reflink_dir = $ENV{LP_REFLINK_DIR};
if (!$reflink_dir || !-d $reflink_dir || !-w $reflink_dir)
{
	fail('LP_REFLINK_DIR names a writable directory on a reflink filesystem');
	done_testing();
	exit;
}
my $fs_type = `stat -f -c %T '$reflink_dir'`;
chomp $fs_type;
is($fs_type, 'xfs', 'LP_REFLINK_DIR is on XFS');

my $node = PostgreSQL::Test::Cluster->new('reflink');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');

my ($source) = grep { $_->{name} eq 'multipage_2_1' } @{ $index->{datasets} };
my @data_files = sort { $a->{fragment_id} <=> $b->{fragment_id} } @{ $source->{data_files} };

my $work = "$reflink_dir/" . time() . "-$$";
mkdir $work or die "cannot create $work: $!";
system('cp', '-r', '--reflink=never', $source->{path}, "$work/ds") == 0
  or die 'cannot copy the dataset';
my @parts = map { "$work/ds/data/$_->{file}" } @data_files;
system('sync');

# Written blocks of a file (not those preallocated past its end):
# [logical start, physical start, length, shared].
sub extents
{
	my ($path) = @_;
	my $file_blocks = int((-s $path) / 4096) + 1;
	my @extents;
	for (`filefrag -v '$path'`)
	{
		next unless /^\s*\d+:\s+(\d+)\.\.\s*\d+:\s+(\d+)\.\.\s*\d+:\s+(\d+):/;
		my @extent = ($1, $2, $3);
		next if /unwritten/ || $extent[0] >= $file_blocks;
		$extent[2] = $file_blocks - $extent[0] if $extent[0] + $extent[2] > $file_blocks;
		push @extents, [ @extent, /shared/ ? 1 : 0 ];
	}
	return @extents;
}

# Blocks XFS preallocated past the end of a file (freed later, not data).
sub preallocated_blocks
{
	my ($path) = @_;
	my $file_blocks = int(((-s $path) + 4095) / 4096);
	my $blocks = 0;
	for (`filefrag -v '$path'`)
	{
		next unless /^\s*\d+:\s+(\d+)\.\.\s*(\d+):\s+\d+\.\.\s*\d+:\s+\d+:/;
		my ($first, $last) = ($1, $2);
		$blocks += $last - ($first > $file_blocks ? $first : $file_blocks) + 1 if $last >= $file_blocks;
	}
	return $blocks;
}

sub free_blocks
{
	my $free = `stat -f -c %f '$work'`;
	chomp $free;
	return $free;
}

# ---- assemble the target on XFS with two workers --------------------------------

my $target = $node->safe_psql('postgres', "SELECT lance_parts.create_target('$work/ds')");
my ($out, $err);
$node->psql('postgres',
	"SET lance_parts.read_batch_bytes = '64kB'; SET lance_parts.max_copy_workers = 2;
	 SET client_min_messages = debug1;
	 SELECT status, path, num_rows FROM lance_parts.assemble('$target'::jsonb, ARRAY['"
	  . join("','", @parts) . "'])",
	stdout => \$out, stderr => \$err);
my ($status, $assembled, $rows) = split /\|/, $out;
my $expected_rows = 0;
$expected_rows += $_->{num_rows} for @data_files;
is("$status|$rows", "written|$expected_rows", 'assembled on XFS') or diag $err;
like($err, qr/with 2 parallel workers/, 'two workers copied');

# eight times the parts: the file is large, the space it takes is not
my $free_before = free_blocks();
$node->safe_psql('postgres',
	"SELECT lance_parts.concat_files('$work/large.lance', ARRAY['" . join("','", (@parts) x 8) . "'])");
system('sync');
my $large_blocks = int((-s "$work/large.lance") / 4096);
my $preallocated = preallocated_blocks("$work/large.lance");
my $used = $free_before - free_blocks() - $preallocated;
ok($used <= 8 * @parts + 8,
	"an assembly of $large_blocks blocks took $used blocks (and $preallocated preallocated past its end)");
my @large_extents = extents("$work/large.lance");
is(scalar(grep { !$_->[3] } @large_extents) <= 8 * @parts + 1, 1,
	'its blocks are shared but for each part\'s last block and the tail');

# each part's data blocks are the assembled file's blocks
my $part_blocks = 0;
my %physical;
for my $part (@parts)
{
	for my $extent (extents($part))
	{
		$physical{ $extent->[1] + $_ } = 1 for 0 .. $extent->[2] - 1;
		$part_blocks += $extent->[2];
	}
}
my ($shared_blocks, $common_blocks, $total_blocks) = (0, 0, 0);
for my $extent (extents($assembled))
{
	$total_blocks += $extent->[2];
	$shared_blocks += $extent->[2] if $extent->[3];
	$common_blocks += grep { $physical{ $extent->[1] + $_ } } 0 .. $extent->[2] - 1;
}
note "assembled: $total_blocks blocks, $shared_blocks flagged shared, $common_blocks also in the parts "
  . "($part_blocks part blocks)";
ok($shared_blocks >= $total_blocks - 2 * @parts - 2, 'filefrag flags the data blocks shared');
ok($common_blocks >= $total_blocks - 2 * @parts - 2, 'those blocks are the parts\' blocks');

# ---- the same pages as the packed layout ----------------------------------------

my $packed_dir = PostgreSQL::Test::Utils::tempdir;
$node->safe_psql('postgres',
	"SELECT lance_parts.concat_files('$packed_dir/packed.lance', ARRAY['" . join("','", @parts) . "'])");
my $pages_query = 'SELECT column_index, page_index, num_rows, priority, buffer_count, buffer_bytes, layout'
  . ' FROM lance_parts.file_pages(%s) ORDER BY 1, 2';
is( $node->safe_psql('postgres', sprintf($pages_query, "'$assembled'")),
	$node->safe_psql('postgres', sprintf($pages_query, "'$packed_dir/packed.lance'")),
	'file_pages of the block-aligned and the packed output agree');
is( $node->safe_psql('postgres', "SELECT num_rows, num_columns, version FROM lance_parts.file_info('$assembled')"),
	$node->safe_psql('postgres',
		"SELECT num_rows, num_columns, version FROM lance_parts.file_info('$packed_dir/packed.lance')"),
	'file_info agrees');
ok(-s $assembled > -s "$packed_dir/packed.lance", 'the parts sit at block boundaries');

# ---- committed, the reference reads the rows back exactly -----------------------

my $commit = $node->safe_psql('postgres',
	"SELECT dataset_version, fragment_id FROM lance_parts.commit('$target'::jsonb)");
my ($version, $fragment) = split /\|/, $commit;
my $json = `LANCEDB_LOG=error node '$src_dir/test/reference/read.cjs' '$work/ds'`;
is($?, 0, 'the reference reads the dataset');
my $read = decode_json($json);
is($read->{fragments}{$fragment}, $expected_rows, "fragment $fragment holds the assembled rows");

# rows of the new fragment, in order, equal those of the parts' fragments
my (%by_fragment);
for my $row (@{ $read->{rows} })
{
	my $rowid = delete $row->{_rowid};
	push @{ $by_fragment{ int($rowid / 2**32) } }, $row;
}
my @expected = map { @{ $by_fragment{ $_->{fragment_id} } } } @data_files;
my $json_canonical = JSON::PP->new->canonical;
ok( @{ $by_fragment{$fragment} } == @expected
	  && $json_canonical->encode($by_fragment{$fragment}) eq $json_canonical->encode(\@expected),
	'the reference reads every assembled row back exactly');

system('rm', '-rf', $work);
$node->stop;
done_testing();
