# Random damage to real Lance files: every call of file_info, file_schema and
# file_pages on a damaged file returns rows or a clean ERROR with an expected
# SQLSTATE, and the server never restarts.
use strict;
use warnings;

use Cwd ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(reference_data slurp);

my $mutations = $ENV{LP_MUTATIONS} // 1200;
my $seed = $ENV{LP_MUTATION_SEED} // 20261129;
srand($seed);
note "seed $seed, $mutations mutations";

# One data file of each version, from the generated "types" datasets.
my ($data_dir, $index) = reference_data();
my %source_by_version;
for my $dataset (@{ $index->{datasets} })
{
	next unless $dataset->{name} =~ /^types_/;
	my @files = glob("$dataset->{path}/data/*.lance");
	$source_by_version{ $dataset->{file_version} } //= $files[0] if @files;
}
my @sources = map { $source_by_version{$_} } sort keys %source_by_version;
is(scalar(@sources), 5, 'found data files of every version: ' . join(', ', sort keys %source_by_version));


sub put_u64
{
	my ($bytes, $offset, $value) = @_;
	substr($$bytes, $offset, 8) = pack('Q<', $value) if $offset >= 0 && $offset + 8 <= length $$bytes;
}

sub put_u32
{
	my ($bytes, $offset, $value) = @_;
	substr($$bytes, $offset, 4) = pack('L<', $value) if $offset >= 0 && $offset + 4 <= length $$bytes;
}

my @huge = (~0, 1 << 63, ~0 >> 1, ~0 ^ 63);

sub random_offset_value
{
	my ($size) = @_;
	my $choice = int(rand(4));
	return $huge[int(rand(@huge))] if $choice == 0;
	return $size + int(rand(4096)) if $choice == 1;
	return $size - int(rand(64)) if $choice == 2;
	return int(rand($size));
}

# Each mutation kind returns damaged bytes from the original ones.
my %mutate = (
	truncate => sub {
		my ($b) = @_;
		return substr($b, 0, int(rand(length $b)));
	},
	flip_tail_bytes => sub {
		my ($b) = @_;
		my $tail = length($b) < 4096 ? length($b) : 4096;
		for (1 .. 1 + int(rand(8)))
		{
			my $pos = length($b) - 1 - int(rand($tail));
			substr($b, $pos, 1) = chr(ord(substr($b, $pos, 1)) ^ (1 << int(rand(8))));
		}
		return $b;
	},
	footer_offset => sub {
		my ($b) = @_;
		put_u64(\$b, length($b) - 40 + 8 * int(rand(3)), random_offset_value(length $b));
		return $b;
	},
	footer_count => sub {
		my ($b) = @_;
		my @counts = (0, 1, 2, 0xFFFFFFFF, 0x7FFFFFFF, 1 + int(rand(100000)));
		put_u32(\$b, length($b) - 16 + 4 * int(rand(2)), $counts[int(rand(@counts))]);
		return $b;
	},
	footer_version => sub {
		my ($b) = @_;
		substr($b, length($b) - 8, 4) = pack('S<S<', int(rand(4)), int(rand(6)));
		return $b;
	},
	table_entry => sub {
		my ($b) = @_;
		my $size = length $b;
		my ($cmo, $gbo, $ngb, $ncol) = unpack('Q<Q<L<L<', substr($b, $size - 32, 24));
		my ($start, $entries) = rand() < 0.5 ? ($cmo, $ncol) : ($gbo, $ngb);
		return $b if $entries == 0 || $start + 16 * $entries > $size;
		put_u64(\$b, $start + 16 * int(rand($entries)) + 8 * int(rand(2)), random_offset_value($size));
		return $b;
	},
	metadata_garbage => sub {
		my ($b) = @_;
		my $size = length $b;
		my ($meta_start) = unpack('Q<', substr($b, $size - 40, 8));
		return $b if $meta_start >= $size - 40;
		my $pos = $meta_start + int(rand($size - 40 - $meta_start));
		substr($b, $pos, 1) = chr(int(rand(256))) for 0 .. int(rand(4));
		return $b;
	});
my @kinds = sort keys %mutate;

my $node = PostgreSQL::Test::Cluster->new('damaged');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');
my $start_time = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

# absolute: the server resolves paths from its data directory
my $work = Cwd::abs_path(PostgreSQL::Test::Utils::tempdir);
my @rows;
for my $i (1 .. $mutations)
{
	my $source = $sources[ $i % @sources ];
	my $kind = $kinds[ int(rand(@kinds)) ];
	my $bytes = $mutate{$kind}->(slurp($source));
	my $path = sprintf('%s/m%05d.lance', $work, $i);
	open my $fh, '>:raw', $path or die "could not write $path: $!";
	print $fh $bytes;
	close $fh;
	push @rows, "$kind\t$path";
}
open my $list, '>', "$work/list.tsv" or die;
print $list join("\n", @rows), "\n";
close $list;

my $outcomes = $node->safe_psql(
	'postgres', qq{
CREATE TABLE mutation (kind text, path text);
COPY mutation FROM '$work/list.tsv';
CREATE TABLE outcome (kind text, fn text, result text, message text);
DO \$\$
DECLARE
	m record;
	fn text;
BEGIN
	FOR m IN SELECT * FROM mutation LOOP
		FOREACH fn IN ARRAY ARRAY['file_info', 'file_schema', 'file_pages'] LOOP
			BEGIN
				EXECUTE format('SELECT count(*) FROM lance_parts.%I(%L)', fn, m.path);
				INSERT INTO outcome VALUES (m.kind, fn, 'rows', NULL);
			EXCEPTION WHEN OTHERS THEN
				INSERT INTO outcome VALUES (m.kind, fn, SQLSTATE, SQLERRM);
			END;
		END LOOP;
	END LOOP;
END
\$\$;
SELECT kind, result, count(*) FROM outcome GROUP BY 1, 2 ORDER BY 1, 2;
});
note "mutation kind | outcome | calls";
note $_ for split /\n/, $outcomes;

my $total = $node->safe_psql('postgres',
	"SELECT count(*) FROM outcome");
is($total, 3 * $mutations, 'every call on a damaged file finished in this session');

# Damaged files may read as valid (a flip in padding), or fail as corrupt,
# unsupported (unknown version numbers) or invalid; never an internal error.
my $unexpected = $node->safe_psql('postgres', q{
	SELECT string_agg(DISTINCT result || ': ' || message, E'\n')
	FROM outcome WHERE result NOT IN ('rows', 'XX001', '0A000', '22023')});
is($unexpected, '', 'only rows, XX001, 0A000 or 22023');

my $without_path = $node->safe_psql('postgres', q{
	SELECT count(*) FROM outcome WHERE result <> 'rows'
	AND message NOT LIKE '%/m_____.lance%'});
is($without_path, '0', 'every error names the damaged file');

is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'),
	$start_time, 'the server did not restart');

$node->stop;
done_testing();
