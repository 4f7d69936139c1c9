# Every base a manifest names is a location like any other (issue 23,
# defect 3).  An s3:// dataset on a real S3 server (Ceph RGW,
# scripts/s3-server.sh, stopped by PID at the end) whose latest manifest
# registers a local base path, with one fragment's data file in it: a role
# with only USAGE and a user mapping of the S3 server is refused (42501) by
# every entry point, through a foreign table granted to it, create_target
# with and without base_id, IMPORT FOREIGN SCHEMA, compact, cleanup_orphans,
# write_dataset and ingest, and reads nothing of the local file; a role with
# pg_read_server_files and pg_write_server_files, and the superuser, read
# the whole dataset, the local fragment included.  A manifest whose base is
# "/", a path with "..", or an S3 bucket without a prefix is refused (XX001)
# naming the manifest and the base, and one whose base is a regular file is
# refused when the base is reached.
use strict;
use warnings;

use File::Copy qw(move);
use File::Path qw(make_path);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(reference_data slurp start_s3_server upload_dataset);

my ($testdata) = reference_data();
my %s3 = start_s3_server();
my $bucket = "s3://$s3{LP_S3_BUCKET}";
my $work = PostgreSQL::Test::Utils::tempdir('bases');


# ---- a protobuf editor, just enough for the manifest (src/proto/table.proto)

sub varint
{
	my ($value) = @_;
	my $bytes = '';
	while ($value >= 0x80)
	{
		$bytes .= chr(($value & 0x7f) | 0x80);
		$value >>= 7;
	}
	return $bytes . chr($value);
}

sub read_varint
{
	my ($data, $pos) = @_;
	my ($value, $shift) = (0, 0);
	while (1)
	{
		my $byte = ord(substr($data, $pos++, 1));
		$value |= ($byte & 0x7f) << $shift;
		last unless $byte & 0x80;
		$shift += 7;
	}
	return ($value, $pos);
}

# The fields of a message: [number, wire type, raw bytes of the whole field, payload of a LEN field].
sub fields
{
	my ($data) = @_;
	my @fields;
	my $pos = 0;
	while ($pos < length($data))
	{
		my $start = $pos;
		my ($tag, $len, $payload);
		($tag, $pos) = read_varint($data, $pos);
		my $type = $tag & 7;
		if ($type == 0) { (undef, $pos) = read_varint($data, $pos); }
		elsif ($type == 1) { $pos += 8; }
		elsif ($type == 5) { $pos += 4; }
		elsif ($type == 2)
		{
			($len, $pos) = read_varint($data, $pos);
			$payload = substr($data, $pos, $len);
			$pos += $len;
		}
		else { die "unexpected wire type $type"; }
		push @fields, [ $tag >> 3, $type, substr($data, $start, $pos - $start), $payload ];
	}
	return @fields;
}

sub len_field
{
	my ($number, $payload) = @_;
	return varint(($number << 3) | 2) . varint(length $payload) . $payload;
}

# The manifest with a BasePath {id, is_dataset_root, path} registered and,
# when $move_first_file, the first data file of the first fragment in it.
sub with_base
{
	my ($manifest, $id, $path, $move_first_file) = @_;
	my $out = '';
	my $moved = 0;
	for my $field (fields($manifest))
	{
		my ($number, $type, $raw, $payload) = @$field;
		if ($number == 2 && $move_first_file && !$moved)
		{
			my $fragment = '';
			my $file_done = 0;
			for my $f (fields($payload))
			{
				if ($f->[0] == 2 && !$file_done)
				{
					$fragment .= len_field(2, $f->[3] . varint(7 << 3) . varint($id));
					$file_done = 1;
				}
				else { $fragment .= $f->[2]; }
			}
			$out .= len_field(2, $fragment);
			$moved = 1;
		}
		else { $out .= $raw; }
	}
	my $base = varint(1 << 3) . varint($id) . varint(3 << 3) . varint(1) . len_field(4, $path);
	return $out . len_field(18, $base);
}

# The name of the first data file of the first fragment.
sub first_data_file
{
	my ($manifest) = @_;
	for my $field (fields($manifest))
	{
		next unless $field->[0] == 2;
		for my $f (fields($field->[3]))
		{
			next unless $f->[0] == 2;
			for my $g (fields($f->[3]))
			{
				return $g->[3] if $g->[0] == 1;
			}
		}
	}
	die 'no data file';
}

# The latest manifest file of a local dataset (V2 names sort newest first).
sub latest_manifest
{
	my ($dataset) = @_;
	my @names = sort grep { /\.manifest$/ } map { s{.*/}{}r } glob("$dataset/_versions/*");
	my $v2 = length($names[0]) == length('18446744073709551614.manifest');
	my @by_version = sort { ($a =~ /^(\d+)/)[0] <=> ($b =~ /^(\d+)/)[0] } @names;
	return "$dataset/_versions/" . ($v2 ? $names[0] : $by_version[-1]);
}

# The manifest message of a manifest file, and where it starts.
sub manifest_message
{
	my ($data) = @_;
	my $position = unpack('Q<', substr($data, -16, 8));
	my $len = unpack('V', substr($data, $position, 4));
	die 'something follows the manifest' if $position + 4 + $len != length($data) - 16;
	return (substr($data, $position + 4, $len), $position);
}

# Rewrite a manifest file with its manifest message edited by $edit.
sub edit_manifest_file
{
	my ($file, $edit) = @_;
	my $data = slurp($file);
	my $tail = substr($data, -16);
	my ($old, $position) = manifest_message($data);
	my $message = $edit->($old);
	open my $fh, '>:raw', $file or die "could not write $file: $!";
	print $fh substr($data, 0, $position), pack('V', length $message), $message, $tail;
	close $fh;
}

sub copy_tree
{
	my ($from, $to) = @_;
	system('cp', '-r', $from, $to) == 0 or die "could not copy $from";
}

# ---- the datasets

my $reference = "$testdata/types_2_1_v2.lance";

# s3://…/bases/local.lance: one fragment's data file in the local base $work/secret
my $local_base = "$work/secret";
copy_tree($reference, "$work/local.lance");
my $manifest_file = latest_manifest("$work/local.lance");
my $moved_file = first_data_file((manifest_message(slurp($manifest_file)))[0]);
make_path("$local_base/data");
move("$work/local.lance/data/$moved_file", "$local_base/data/$moved_file") or die "move: $!";
my ($s3_file) = map { s{.*/}{}r } glob("$work/local.lance/data/*.lance");
edit_manifest_file($manifest_file, sub { with_base($_[0], 1, $local_base, 1) });
upload_dataset(\%s3, "$work/local.lance", 'bases/local.lance');
my $dataset = "$bucket/bases/local.lance";

# bases that are not dataset-like directories, registered without files in them
my %bad_base = (root => '/', parent => "$work/secret/../secret", bucket => $bucket, file => "$work/plain");
for my $name (sort keys %bad_base)
{
	copy_tree($reference, "$work/$name.lance");
	edit_manifest_file(latest_manifest("$work/$name.lance"),
		sub { with_base($_[0], 7, $bad_base{$name}, $name eq 'file') });
	upload_dataset(\%s3, "$work/$name.lance", "bases/$name.lance");
}
open my $plain, '>', "$work/plain" or die;
print $plain "not a directory\n";
close $plain;

my $node = PostgreSQL::Test::Cluster->new('manifest_bases');
$node->init;
$node->start;
$node->safe_psql('postgres', qq{
CREATE EXTENSION lance_parts;
CREATE SERVER rgw FOREIGN DATA WRAPPER lance_fdw
    OPTIONS (root '$bucket', endpoint '$s3{LP_S3_ENDPOINT}', allow_http 'true', region '$s3{LP_S3_REGION}');
CREATE USER MAPPING FOR PUBLIC SERVER rgw
    OPTIONS (access_key_id '$s3{LP_S3_ACCESS_KEY_ID}', secret_access_key '$s3{LP_S3_SECRET_ACCESS_KEY}');
CREATE ROLE regress_s3_only;
CREATE ROLE regress_filer IN ROLE pg_read_server_files, pg_write_server_files;
GRANT USAGE ON SCHEMA lance_parts TO regress_s3_only, regress_filer;
GRANT USAGE ON FOREIGN SERVER rgw TO regress_s3_only, regress_filer;
GRANT CREATE ON SCHEMA public TO regress_s3_only, regress_filer;
CREATE FOREIGN TABLE based (id bigint) SERVER rgw OPTIONS (uri 'bases/local.lance');
GRANT SELECT ON based TO regress_s3_only, regress_filer;
});

# the whole dataset, local fragment included, for those who may read server files
my $expected = $node->safe_psql('postgres', qq{
CREATE FOREIGN TABLE pg_temp.reference (id bigint) SERVER rgw OPTIONS (uri '$reference');
SELECT count(*) || ' ' || sum(id) FROM pg_temp.reference;
});
like($expected, qr/^515 /, 'the reference dataset has its rows');
is($node->safe_psql('postgres', q{SELECT count(*) || ' ' || sum(id) FROM based}), $expected,
	'the superuser reads every row, those in the local base too');
is($node->safe_psql('postgres', q{SET ROLE regress_filer; SELECT count(*) || ' ' || sum(id) FROM based}), $expected,
	'so does a role with pg_read_server_files');
like($node->safe_psql('postgres',
		qq{SET ROLE regress_filer; SELECT lance_parts.create_target('$dataset', base_id => 1)->>'base_path'}),
	qr{/secret$}, 'and it may make a target in the local base');

# a role with only the S3 server's USAGE and a mapping: refused everywhere
my @refused = (
	[ 'the granted foreign table', 'SELECT count(*) FROM based' ],
	[ 'create_target with base_id', "SELECT lance_parts.create_target('$dataset', base_id => 1)" ],
	[ 'create_target', "SELECT lance_parts.create_target('$dataset')" ],
	[ 'IMPORT FOREIGN SCHEMA', "IMPORT FOREIGN SCHEMA bases FROM SERVER rgw INTO public OPTIONS (uri '$bucket/bases')" ],
	[ 'compact', "SELECT * FROM lance_parts.compact('$dataset')" ],
	[ 'cleanup_orphans', "SELECT * FROM lance_parts.cleanup_orphans('$dataset', '0 s', true)" ],
	[ 'write_dataset', "SELECT * FROM lance_parts.write_dataset('$dataset', \$\$SELECT 1::bigint AS id\$\$, mode => 'append')" ],
	[ 'ingest', "SELECT * FROM lance_parts.ingest('$dataset', ARRAY['$dataset/data/$s3_file'])" ],
);
for my $case (@refused)
{
	my ($what, $sql) = @$case;
	my ($rc, $stdout, $stderr) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSET ROLE regress_s3_only;\n$sql;");
	like($stderr, qr/ERROR:  42501: permission denied to (read Lance files|import Lance datasets)/,
		"refused to a role without file roles: $what");
	is($stdout, '', "and nothing is returned: $what");
}

# bases that are not dataset-like directories
for my $name ('root', 'parent', 'bucket')
{
	my ($rc, $stdout, $stderr) = $node->psql('postgres', qq{\\set VERBOSITY verbose
SELECT lance_parts.create_target('$bucket/bases/$name.lance');});
	like($stderr,
		qr/ERROR:  XX001: manifest file "[^"]*\.manifest" names base path 7 as "\Q$bad_base{$name}\E", which is not a dataset-like directory/,
		"a base $name is refused, naming the manifest and the base");
}
my ($rc, $stdout, $stderr) = $node->psql('postgres', qq{\\set VERBOSITY verbose
CREATE FOREIGN TABLE pg_temp.plain (id bigint) SERVER rgw OPTIONS (uri 'bases/file.lance');
SELECT sum(id) FROM pg_temp.plain;});
like($stderr, qr/ERROR:  XX001: base path 7 of dataset "[^"]*" is "\Q$work\E\/plain", which is not a directory/,
	'a base that is a file is refused where it is reached');

$node->stop;
done_testing();
