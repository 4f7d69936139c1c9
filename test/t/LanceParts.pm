# LanceParts.pm - what the TAP tests share: the generated reference data and
# small file-system helpers.  test/run.sh runs prove with -I test/t.
package LanceParts;

use strict;
use warnings;

use Exporter 'import';
use JSON::PP qw(decode_json);
use Test::More;

our @EXPORT_OK = qw(reference_data slurp directory_entries reference_read);

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

1;
