# LanceParts.pm - what the TAP tests share: the generated reference data,
# small file-system helpers and the S3 server.  test/run.sh runs prove with
# -I test/t.
package LanceParts;

use strict;
use warnings;

use Exporter 'import';
use File::Find ();
use JSON::PP qw(decode_json);
use PostgreSQL::Test::Utils ();
use Test::More;

our @EXPORT_OK = qw(reference_data slurp directory_entries reference_read start_s3_server upload_dataset);

# The generated data directory (LP_TESTDATA) and its parsed manifest.json.
sub reference_data
{
	my $dir = $ENV{LP_TESTDATA}
	  or BAIL_OUT('LP_TESTDATA must name the generated reference data');
	return ($dir, decode_json(slurp("$dir/manifest.json")));
}

sub slurp
{
	my ($path) = @_;
	open my $fh, '<:raw', $path or die "could not open $path: $!";
	local $/;
	my $bytes = <$fh>;
	close $fh;
	return $bytes;
}

# Names in a directory (without . and ..), sorted.
sub directory_entries
{
	my ($dir) = @_;
	opendir my $dh, $dir or die "could not open $dir: $!";
	my @names = sort grep { !/^\.\.?$/ } readdir $dh;
	closedir $dh;
	return @names;
}

# Read a dataset completely with the reference implementation (npm lancedb,
# test/reference/read.cjs): its parsed output, or undef and read.cjs's stderr.
sub reference_read
{
	my ($dataset) = @_;
	my $script = ($ENV{LP_SRCDIR} // '.') . '/test/reference/read.cjs';
	my $stderr_file = "$dataset.read-stderr";
	local $ENV{LANCEDB_LOG} = 'error';
	my $json = `node '$script' '$dataset' 2>'$stderr_file'`;
	my $stderr = slurp($stderr_file);
	unlink $stderr_file;
	return ($? == 0 ? decode_json($json) : undef, $stderr);
}

my @s3_server_dirs;			# of the S3 servers start_s3_server started

# Start an S3 server (Ceph RGW, scripts/s3-server.sh, on the LP_S3_* ports)
# in a temporary directory: its settings (LP_S3_ENDPOINT, LP_S3_BUCKET,
# LP_S3_ACCESS_KEY_ID, ...) as a hash.  It is stopped when the test exits.
sub start_s3_server
{
	my $script = ($ENV{LP_SRCDIR} // '.') . '/scripts/s3-server.sh';
	my $dir = PostgreSQL::Test::Utils::tempdir('s3');
	my $started = `LP_S3_DIR='$dir' bash '$script' start`;
	$? == 0 or BAIL_OUT("the S3 server did not start: $started");
	push @s3_server_dirs, $dir;
	return map { split /=/, $_, 2 } split /\n/, $started;
}

# Copy the local dataset directory to key of the bucket of the S3 server
# settings %$s3 (what start_s3_server returns), file by file, with curl's own
# signer: the dataset lands there as another writer would put it.
sub upload_dataset
{
	my ($s3, $local, $key) = @_;
	my @files;
	File::Find::find({ wanted => sub { push @files, $File::Find::name if -f $_ }, no_chdir => 1 }, $local);
	for my $file (@files)
	{
		my $relative = substr($file, length($local) + 1);
		system('curl', '-sS', '-f', '-o', '/dev/null', '--max-time', '30', '-T', $file,
			'--aws-sigv4', "aws:amz:$s3->{LP_S3_REGION}:s3",
			'--user', "$s3->{LP_S3_ACCESS_KEY_ID}:$s3->{LP_S3_SECRET_ACCESS_KEY}",
			'-H', 'x-amz-content-sha256: UNSIGNED-PAYLOAD',
			"$s3->{LP_S3_ENDPOINT}/$s3->{LP_S3_BUCKET}/$key/$relative") == 0
		  or die "could not upload $file";
	}
}

# The test's exit status is in $?: stopping the servers must not change it.
END
{
	local $?;
	my $script = ($ENV{LP_SRCDIR} // '.') . '/scripts/s3-server.sh';
	system("LP_S3_DIR='$_' bash '$script' stop") for @s3_server_dirs;
}

1;
