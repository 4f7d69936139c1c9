# The Debian package: debian/ builds postgresql-NN-lance-parts from a copy of
# the tree without node_modules (dpkg-buildpackage -us -uc -b, as the README
# says), its dependencies can be installed, it holds the extension's files and
# nothing else, and installed into a clean PostgreSQL -- the files of the
# Debian packages postgresql-NN and postgresql-client-NN only, copied into a
# directory of the test with the package extracted beside them, so that
# the system's installation (where the suite installs the extension with
# make install) is untouched -- it loads at server start, the extension is
# created and updated from each earlier release, and reads Lance data with
# file_info and lance_fdw.
use strict;
use warnings;

use Cwd ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use LanceParts qw(reference_data slurp);

my $src = $ENV{LP_SRCDIR}
  or BAIL_OUT('LP_SRCDIR must name the source tree');

# The major the suite tests (test/run.sh puts its bin directory first in
# PATH); pg_buildext builds for the majors Debian supports here.
my ($major) = `pg_config --version` =~ /^PostgreSQL (\d+)/
  or die 'pg_config --version gave no major version';
my @built_majors = split /\s+/, `cd '$src' && pg_buildext supported-versions`;
$? == 0 or die 'pg_buildext supported-versions failed (scripts/setup.sh installs postgresql-server-dev-all)';
plan skip_all => "the package is built for PostgreSQL @built_majors (pg_buildext supported-versions), not $major"
  unless grep { $_ eq $major } @built_majors;

my ($version) = slurp("$src/lance_parts.control") =~ /^default_version = '([^']+)'/m
  or die 'lance_parts.control has no default_version';
my $package = "postgresql-$major-lance-parts";

# ---- the build -------------------------------------------------------------

my $work = Cwd::abs_path(PostgreSQL::Test::Utils::tempdir('package'));
my $tree = "$work/lance-parts-$version";
mkdir $tree or die "could not create $tree: $!";
system("tar -C '$src' --exclude=./.git --exclude=./build --exclude=./results --exclude=./tmp_check "
	  . "--exclude='./test/reference/node_modules' --exclude='./test/reference/legacy/node_modules' "
	  . "-cf - . | tar -C '$tree' -xf -") == 0
  or die "could not copy $src";
ok(!-e "$tree/test/reference/node_modules" && !-e "$tree/build",
	'the copy of the tree has no node_modules and no build/');

my $build_log = "$work/build.log";
my $built = system("cd '$tree' && DEB_BUILD_OPTIONS=parallel=2 dpkg-buildpackage -us -uc -b >'$build_log' 2>&1") == 0;
ok($built, "dpkg-buildpackage -us -uc -b builds the packages")
  or diag(join("\n", (split /\n/, slurp($build_log))[-60 .. -1]));
my @debs = glob("$work/${package}_${version}_*.deb");
is(scalar(@debs), 1, "it built ${package}_${version}")
  or die 'no package to test';
my $deb = $debs[0];

# ---- the package -------------------------------------------------------------

is(`dpkg-deb -f '$deb' Version`, "$version\n", "the package's version is the release's ($version)");
my $depends = `dpkg-deb -f '$deb' Depends`;
like($depends, qr/(^|, )postgresql-$major( \(|,|$)/m, "it depends on postgresql-$major");
# the libraries the module links (${shlibs:Depends}; Debian 13 renamed some
# to ...t64)
for my $library (qw(libprotobuf-c1 libzstd1 liblz4-1 libcurl4 libssl3 libc6))
{
	like($depends, qr/(^|, )\Q$library\E(t64)?( \(|,|$)/m, "it depends on $library");
}

my $simulation = `apt-get -s install '$deb' 2>&1`;
ok($? == 0 && $simulation =~ /^Inst \Q$package\E /m,
	'apt-get -s install satisfies its dependencies')
  or diag($simulation);

# Its files: the module, the control file and every script of sql/ (install
# and update), besides its documentation.
my @contents = sort grep { !m{/$} && !m{^\./usr/share/doc/\Q$package\E/} }
  map { (split /\s+/, $_, 6)[5] =~ s/ -> .*//r } split /\n/, `dpkg-deb -c '$deb'`;
my @sql = map { s{^.*/}{}r } glob("$src/sql/lance_parts--*.sql");
is_deeply(\@contents,
	[ sort("./usr/lib/postgresql/$major/lib/lance_parts.so",
		"./usr/share/postgresql/$major/extension/lance_parts.control",
		map { "./usr/share/postgresql/$major/extension/$_" } @sql) ],
	'it holds the module, the control file and every SQL script, nothing else');

# ---- a clean PostgreSQL with the package ----------------------------------------

my $root = "$work/root";
my @server_files = grep { m{^/usr/(lib|share)/postgresql/$major/} && !-d $_ }
  split /\n/, `dpkg-query -L postgresql-$major postgresql-client-$major`;
open my $list, '>', "$work/server-files" or die "could not write $work/server-files: $!";
print $list map { substr($_, 1) . "\n" } @server_files;
close $list;
mkdir $root or die "could not create $root: $!";
system("tar -C / -cf - -T '$work/server-files' | tar -C '$root' -xf -") == 0
  or die 'could not copy the files of the server packages';
my @installed = (glob("$root/usr/share/postgresql/$major/extension/lance_parts*"),
	glob("$root/usr/lib/postgresql/$major/lib/lance_parts*"));
is_deeply(\@installed, [],
	"the clean server (the files of postgresql-$major) has no lance_parts");
system('dpkg-deb', '-x', $deb, $root) == 0 or die "could not extract $deb";

my $node = PostgreSQL::Test::Cluster->new('package',
	install_path => "$root/usr/lib/postgresql/$major");
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'lance_parts'");
$node->start;

is($node->safe_psql('postgres',
		"SELECT setting FROM pg_config WHERE name IN ('PKGLIBDIR', 'SHAREDIR') ORDER BY name"),
	"$root/usr/lib/postgresql/$major/lib\n$root/usr/share/postgresql/$major",
	'the server takes its modules and extensions from the clean installation');
is($node->safe_psql('postgres', 'SHOW shared_preload_libraries'), 'lance_parts',
	'the module loads at server start');

$node->safe_psql('postgres', 'CREATE EXTENSION lance_parts');
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'lance_parts'"),
	$version, "CREATE EXTENSION lance_parts installs $version");

# ALTER EXTENSION UPDATE from each earlier release the package installs.
my @earlier = grep { $_ ne $version } map { /^lance_parts--([^-]+)\.sql$/ ? $1 : () } @sql;
ok(@earlier > 0, 'the package has install scripts of earlier releases: ' . join(', ', @earlier));
for my $release (@earlier)
{
	my $db = "from_$release" =~ s/\./_/gr;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, "CREATE EXTENSION lance_parts VERSION '$release'; ALTER EXTENSION lance_parts UPDATE");
	is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'lance_parts'"),
		$version, "ALTER EXTENSION lance_parts UPDATE from $release reaches $version");
}

# Lance data written by the reference implementation, read by the package's module.
my (undef, $index) = reference_data();
my ($dataset) = grep { $_->{name} eq 'types_2_2_v2' } @{ $index->{datasets} };
$dataset or die 'the reference data has no types_2_2_v2';
my $file = $dataset->{data_files}[0];
is($node->safe_psql('postgres',
		"SELECT num_rows, version FROM lance_parts.file_info('$dataset->{path}/data/$file->{file}')"),
	"$file->{num_rows}|2.2", 'file_info reads a data file');
$node->safe_psql('postgres', qq{
	CREATE SERVER lance FOREIGN DATA WRAPPER lance_fdw;
	CREATE SCHEMA lake;
	IMPORT FOREIGN SCHEMA lake FROM SERVER lance INTO lake OPTIONS (uri '$dataset->{path}');});
is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT id) FROM lake.types_2_2_v2'),
	"$dataset->{num_rows}|$dataset->{num_rows}", 'lance_fdw reads every row of the dataset');

$node->stop;
done_testing();
