# Running out of resources gives the SQLSTATE a client can act on, and
# leaves nothing behind:
#  - a full filesystem is 53100 (disk_full), with neither a temporary nor a
#    final file left by concat_files, and no version published by a commit
#    whose transaction or manifest cannot be written;
#  - a backend under an address-space limit (prlimit on its own process)
#    that cannot decode a column is 53200 (out_of_memory) naming the field
#    and the file, not XX001 calling a good file damaged.
#
# LP_SMALL_FS_DIR must be a directory on a small filesystem (a few MB),
# writable by this user; test/run.sh mounts an 8 MB tmpfs.
use strict;
use warnings;

use Cwd;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(reference_data directory_entries);

my ($data_dir, $index) = reference_data();
my ($multipage) = grep { $_->{name} eq 'multipage_2_2' } @{ $index->{datasets} };
my ($types) = grep { $_->{name} eq 'types_2_2_v2' } @{ $index->{datasets} };
my ($big_part) = sort { $b->{num_rows} <=> $a->{num_rows} } @{ $multipage->{data_files} };
my $big_part_path = "$multipage->{path}/data/$big_part->{file}";
my ($small_part) = grep { $_->{num_rows} == 45 } @{ $types->{data_files} };
my $small_part_path = "$types->{path}/data/$small_part->{file}";

my $node = PostgreSQL::Test::Cluster->new('resource_limits');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');

# SQLSTATE and message of a statement, or 'ok'
$node->safe_psql('postgres', q{
CREATE FUNCTION outcome(statement text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE statement;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$});

sub sql_text_array
{
	return 'ARRAY[' . join(', ', map { "'$_'" } @_) . ']';
}

# ---- a full filesystem ------------------------------------------------------

my $small = $ENV{LP_SMALL_FS_DIR};
if (!$small || !-d $small || !-w $small)
{
	fail('LP_SMALL_FS_DIR names a writable directory on a small filesystem');
}
else
{
	my $work = "$small/" . time() . "-$$";
	mkdir $work or die "cannot create $work: $!";
	my $parts = sql_text_array(($big_part_path) x 100);
	like(
		$node->safe_psql('postgres',
			"SELECT outcome(\$\$SELECT * FROM lance_parts.concat_files('$work/out.lance', $parts)\$\$)"),
		qr/^53100: could not (write|copy).*No space left on device/,
		'concat_files into a full filesystem: 53100');
	is_deeply([ directory_entries($work) ], [], 'no temporary or final file is left');

	# a dataset with an assembled target, then a full filesystem at commit
	system('cp', '-r', $types->{path}, "$work/ds.lance") == 0 or die 'cannot copy the dataset';
	my $target = $node->safe_psql('postgres', qq{
		SELECT lance_parts.create_target('$work/ds.lance') AS t \\gset
		SELECT lance_parts.register_part(:'t', '$small_part_path') \\g /dev/null
		SELECT status FROM lance_parts.assemble(:'t') \\g /dev/null
		SELECT :'t'});
	my @versions = directory_entries("$work/ds.lance/_versions");
	my @transactions = directory_entries("$work/ds.lance/_transactions");
	system("dd if=/dev/zero of='$work/filler' bs=64k 2>/dev/null");
	like(
		$node->safe_psql('postgres',
			"SELECT outcome(\$\$SELECT * FROM lance_parts.commit('$target')\$\$)"),
		qr/^53100: .*No space left on device/,
		'commit into a full filesystem: 53100');
	is_deeply([ directory_entries("$work/ds.lance/_versions") ], \@versions, 'no version was published');
	is_deeply([ directory_entries("$work/ds.lance/_transactions") ], \@transactions,
		'no transaction file is left');
	unlink "$work/filler" or die "cannot remove the filler: $!";
	is($node->safe_psql('postgres', "SELECT dataset_version FROM lance_parts.commit('$target')"),
		$types->{version} + 1, 'with space again, the same target commits');
	system('rm', '-rf', $work);
}

# ---- a memory limit -----------------------------------------------------------

# A file of many copies of a 5000-row part, read through lance_fdw in one
# batch of all its rows by a backend whose address space may grow by only
# 16 MB more: too little to decode its string column.
my $tmp = Cwd::abs_path(PostgreSQL::Test::Utils::tempdir);
my $big_file = "$tmp/big.lance";
$node->safe_psql('postgres',
	"SELECT status FROM lance_parts.concat_files('$big_file', " . sql_text_array(($big_part_path) x 200) . ')');
my ($stdout, $stderr);
$node->psql('postgres', qq{
	CREATE SERVER lance_srv FOREIGN DATA WRAPPER lance_fdw;
	CREATE FOREIGN TABLE big (s text) SERVER lance_srv OPTIONS (uri '$big_file');
	SELECT count(*) FROM big;
	SET lance_parts.fdw_batch_rows = 1048576;
	DO \$\$
	BEGIN
	    EXECUTE format('COPY (SELECT 1 WHERE false) TO PROGRAM %L',
	        format('prlimit --pid %s --as=%s', pg_backend_pid(),
	               (regexp_match(pg_read_file('/proc/self/status'), 'VmSize:\\s+(\\d+)'))[1]::bigint * 1024
	               + 16 * 1024 * 1024));
	END
	\$\$;
	SELECT outcome('SELECT sum(length(s)) FROM big');},
	stdout => \$stdout, stderr => \$stderr);
my @lines = split /\n/, $stdout;
is($lines[0], 200 * $big_part->{num_rows}, 'the file is read without a limit');
like($lines[-1], qr/^53200: out of memory decoding field "s" of file "\Q$big_file\E"$/,
	'under a memory limit: 53200 naming the field and the file')
  or diag($stderr);

$node->stop;
done_testing();
