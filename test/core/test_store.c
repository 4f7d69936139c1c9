/*
 * test_store.c - the store operations that are plain POSIX (lp_posix_files,
 * shared by the server's local store and the tests' store): stat with and
 * without following a symlink, canonical names and same-object tests.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/lp_alloc.h"
#include "lp_test.h"
#include "lp_test_files.h"
#include "lp_test_store.h"
#include "lp_test_util.h"

static void
write_file(const char *path, const char *content)
{
	FILE	   *file = fopen(path, "w");

	LP_CHECK_MSG(file != NULL, "create %.200s: %s", path, strerror(errno));
	if (file != NULL)
	{
		fputs(content, file);
		fclose(file);
	}
}

LP_TEST(store_stat_kinds_sizes_and_times)
{
	LpStore    *store = lp_test_store();
	const char *dir = lp_test_make_temp_dir();
	char		file[1024];
	char		link[1024];
	char		dangling[1024];
	char		fifo[1024];
	char		missing[1024];
	struct timeval times[2] = {{1700000000, 0}, {1700000000, 0}};
	LpStat		st;
	LpError		err;

	snprintf(file, sizeof(file), "%s/file", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(dangling, sizeof(dangling), "%s/dangling", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(missing, sizeof(missing), "%s/missing/below", dir);
	write_file(file, "12345");
	LP_CHECK(utimes(file, times) == 0);
	LP_CHECK(symlink(file, link) == 0);
	LP_CHECK(symlink("nowhere", dangling) == 0);
	LP_CHECK(mkfifo(fifo, 0600) == 0);

	LP_CHECK(store->ops->stat(store, file, false, &st, &err));
	LP_CHECK_EQ_U64(st.kind, LP_OBJECT_FILE);
	LP_CHECK_EQ_U64(st.size, 5);
	LP_CHECK_EQ_U64(st.mtime, 1700000000);

	LP_CHECK(store->ops->stat(store, dir, false, &st, &err));
	LP_CHECK_EQ_U64(st.kind, LP_OBJECT_DIRECTORY);
	LP_CHECK_EQ_U64(st.size, 0);

	/* a symlink is reported, not followed, unless asked */
	LP_CHECK(store->ops->stat(store, link, false, &st, &err));
	LP_CHECK_EQ_U64(st.kind, LP_OBJECT_SYMLINK);
	LP_CHECK(store->ops->stat(store, link, true, &st, &err));
	LP_CHECK_EQ_U64(st.kind, LP_OBJECT_FILE);
	LP_CHECK_EQ_U64(st.size, 5);
	LP_CHECK(store->ops->stat(store, dangling, false, &st, &err));
	LP_CHECK_EQ_U64(st.kind, LP_OBJECT_SYMLINK);
	LP_CHECK(store->ops->stat(store, dangling, true, &st, &err));
	LP_CHECK_EQ_U64(st.kind, LP_OBJECT_ABSENT);

	LP_CHECK(store->ops->stat(store, fifo, false, &st, &err));
	LP_CHECK_EQ_U64(st.kind, LP_OBJECT_OTHER);

	/* nothing there is not an error; a path through a file cannot be examined */
	LP_CHECK(store->ops->stat(store, missing, false, &st, &err));
	LP_CHECK_EQ_U64(st.kind, LP_OBJECT_ABSENT);
	snprintf(missing, sizeof(missing), "%s/file/below", dir);
	LP_CHECK(!store->ops->stat(store, missing, false, &st, &err));
	LP_CHECK_EQ_U64(err.code, LP_ERR_IO);
	LP_CHECK_MSG(strstr(err.message, "Not a directory") != NULL, "%s", err.message);

	lp_test_remove_tree(dir);
}

static void
check_name(const char *got, const char *expected)
{
	LP_CHECK_MSG(got != NULL && strcmp(got, expected) == 0, "expected \"%.200s\", got \"%.200s\"",
				 expected, got ? got : "(null)");
}

LP_TEST(store_canonical_names)
{
	LpStore    *store = lp_test_store();
	const char *dir = lp_test_make_temp_dir();
	char	   *real_dir = realpath(dir, NULL);
	char		sub[1024];
	char		via_link[1024];
	char		roundabout[1024];
	char		expected[2048];
	char	   *canonical;
	LpError		err;

	snprintf(sub, sizeof(sub), "%s/dataset.lance", dir);
	snprintf(via_link, sizeof(via_link), "%s/alias", dir);
	snprintf(roundabout, sizeof(roundabout), "%s/alias/../dataset.lance/.", dir);
	snprintf(expected, sizeof(expected), "%s/dataset.lance", real_dir);
	LP_CHECK(mkdir(sub, 0777) == 0);
	LP_CHECK(symlink(sub, via_link) == 0);

	/* through a symlink, "." and "..": the one name of the directory */
	canonical = store->ops->canonical(store, via_link, "dataset", &err);
	check_name(canonical, expected);
	lp_free(canonical);
	canonical = store->ops->canonical(store, roundabout, "dataset", &err);
	check_name(canonical, expected);
	lp_free(canonical);

	snprintf(sub, sizeof(sub), "%s/missing.lance", dir);
	canonical = store->ops->canonical(store, sub, "dataset", &err);
	LP_CHECK(canonical == NULL);
	LP_CHECK_EQ_U64(err.code, LP_ERR_NOT_FOUND);
	snprintf(expected, sizeof(expected), "could not resolve dataset \"%s\": No such file or directory", sub);
	check_name(err.message, expected);

	free(real_dir);
	lp_test_remove_tree(dir);
}

LP_TEST(store_same_object)
{
	LpStore    *store = lp_test_store();
	const char *dir = lp_test_make_temp_dir();
	char		a[1024];
	char		hard[1024];
	char		soft[1024];
	char		other[1024];
	char		missing[1024];

	snprintf(a, sizeof(a), "%s/a.lance", dir);
	snprintf(hard, sizeof(hard), "%s/hard.lance", dir);
	snprintf(soft, sizeof(soft), "%s/soft.lance", dir);
	snprintf(other, sizeof(other), "%s/other.lance", dir);
	snprintf(missing, sizeof(missing), "%s/missing.lance", dir);
	write_file(a, "same");
	write_file(other, "same");
	LP_CHECK(link(a, hard) == 0);
	LP_CHECK(symlink(a, soft) == 0);

	LP_CHECK(store->ops->same_object(store, a, a));
	LP_CHECK(store->ops->same_object(store, a, hard));
	LP_CHECK(store->ops->same_object(store, soft, a));
	LP_CHECK(!store->ops->same_object(store, a, other));
	LP_CHECK(!store->ops->same_object(store, a, missing));
	LP_CHECK(!store->ops->same_object(store, missing, missing));

	lp_test_remove_tree(dir);
}
