/*
 * test_tree_removal.c - lp_posix_remove_tree (LpStoreOps.remove_tree of the
 * local stores): it removes exactly the tree below the root, and never
 * follows a symlink on the way to it or inside it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lp_test.h"
#include "lp_test_files.h"
#include "lp_test_store.h"
#include "lp_test_util.h"

static void
make_directory(const char *root, const char *relative)
{
	char		path[2048];

	snprintf(path, sizeof(path), "%s/%s", root, relative);
	LP_CHECK_MSG(mkdir(path, 0777) == 0, "mkdir %.200s: %s", path, strerror(errno));
}

static void
make_file(const char *root, const char *relative, const char *content)
{
	char		path[2048];
	FILE	   *file;

	snprintf(path, sizeof(path), "%s/%s", root, relative);
	file = fopen(path, "w");
	LP_CHECK_MSG(file != NULL, "create %.200s: %s", path, strerror(errno));
	if (file != NULL)
	{
		fputs(content, file);
		fclose(file);
	}
}

static void
make_symlink(const char *target, const char *root, const char *relative)
{
	char		path[2048];

	snprintf(path, sizeof(path), "%s/%s", root, relative);
	LP_CHECK_MSG(symlink(target, path) == 0, "symlink %.200s: %s", path, strerror(errno));
}

static bool
entry_exists(const char *root, const char *relative)
{
	char		path[2048];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, relative);
	return lstat(path, &st) == 0;
}

static LpTreeRemoval
remove_tree(const char *root, const char *relative, bool expect_ok, LpError *err)
{
	LpStore    *store = lp_test_store();
	LpTreeRemoval removal;
	bool		ok = store->ops->remove_tree(store, root, relative, &removal, err);

	LP_CHECK_MSG(ok == expect_ok, "remove_tree(%s) returned %d: %.300s",
				 relative, ok, ok ? "" : err->message);
	return removal;
}

/* A victim directory outside the root, with one file in it. */
static void
make_victim(const char *work)
{
	make_directory(work, "victim");
	make_file(work, "victim/precious.lance", "precious");
}

LP_TEST(tree_removal_removes_the_tree_and_only_it)
{
	char		work[1024];
	char		victim[1200];
	LpTreeRemoval removal;
	LpError		err;

	snprintf(work, sizeof(work), "%s", lp_test_make_temp_dir());
	snprintf(victim, sizeof(victim), "%s/victim", work);
	make_victim(work);
	make_directory(work, "root");
	make_directory(work, "root/data");
	make_directory(work, "root/data/_parts");
	make_directory(work, "root/data/_parts/f.lance");
	make_file(work, "root/data/_parts/f.lance/part-1", "12345");
	make_directory(work, "root/data/_parts/f.lance/sub");
	make_file(work, "root/data/_parts/f.lance/sub/part-2", "123");
	/* symlinks inside are removed as entries, never entered */
	make_symlink(victim, work, "root/data/_parts/f.lance/to-victim");
	make_symlink(victim, work, "root/data/_parts/f.lance/sub/to-victim");
	make_file(work, "root/data/_parts/g.lance", "sibling");

	snprintf(work + strlen(work), sizeof(work) - strlen(work), "/root");
	removal = remove_tree(work, "data/_parts/f.lance", true, &err);
	LP_CHECK(removal.outcome == LP_TREE_REMOVED);
	LP_CHECK_EQ_U64(removal.removed_entries, 6);
	LP_CHECK_EQ_U64(removal.removed_bytes, 8);
	LP_CHECK(!entry_exists(work, "data/_parts/f.lance"));
	LP_CHECK(entry_exists(work, "data/_parts/g.lance"));
	LP_CHECK(entry_exists(victim, "precious.lance"));

	/* nothing there any more */
	removal = remove_tree(work, "data/_parts/f.lance", true, &err);
	LP_CHECK(removal.outcome == LP_TREE_ABSENT);
	removal = remove_tree(work, "data/missing/f.lance", true, &err);
	LP_CHECK(removal.outcome == LP_TREE_ABSENT);
	LP_CHECK_EQ_U64(removal.removed_entries, 0);

	work[strlen(work) - strlen("/root")] = '\0';
	lp_test_remove_tree(work);
}

LP_TEST(tree_removal_leaves_what_is_not_a_directory)
{
	char		work[1024];
	char		victim[1200];
	char		root[1200];
	LpTreeRemoval removal;
	LpError		err;

	snprintf(work, sizeof(work), "%s", lp_test_make_temp_dir());
	snprintf(victim, sizeof(victim), "%s/victim", work);
	snprintf(root, sizeof(root), "%s/root", work);
	make_victim(work);
	make_directory(work, "victim/f.lance");
	make_file(work, "victim/f.lance/part-1", "victim's");
	make_directory(work, "root");
	make_directory(work, "root/data");
	make_directory(work, "root/data/_parts");

	/* the top directory is a symlink */
	make_symlink(victim, root, "data/_parts/top.lance");
	removal = remove_tree(root, "data/_parts/top.lance", false, &err);
	LP_CHECK(removal.outcome == LP_TREE_NOT_DIRECTORY);
	LP_CHECK_MSG(strstr(err.message, "is a symbolic link, not a directory") != NULL, "%s", err.message);
	LP_CHECK(entry_exists(root, "data/_parts/top.lance"));

	/* a component on the way is a symlink (the victim has an f.lance) */
	make_symlink(victim, root, "data/parts-link");
	removal = remove_tree(root, "data/parts-link/f.lance", false, &err);
	LP_CHECK(removal.outcome == LP_TREE_NOT_DIRECTORY);
	LP_CHECK_MSG(strstr(err.message, "/data/parts-link\" is a symbolic link") != NULL, "%s", err.message);

	/* a regular file, a FIFO */
	make_file(root, "data/_parts/file.lance", "x");
	removal = remove_tree(root, "data/_parts/file.lance", false, &err);
	LP_CHECK(removal.outcome == LP_TREE_NOT_DIRECTORY);
	LP_CHECK(entry_exists(root, "data/_parts/file.lance"));
	snprintf(work + strlen(work), sizeof(work) - strlen(work), "/root/data/_parts/fifo.lance");
	LP_CHECK(mkfifo(work, 0600) == 0);
	work[strlen(work) - strlen("/root/data/_parts/fifo.lance")] = '\0';
	removal = remove_tree(root, "data/_parts/fifo.lance", false, &err);
	LP_CHECK(removal.outcome == LP_TREE_NOT_DIRECTORY);
	LP_CHECK_MSG(strstr(err.message, "is a FIFO") != NULL, "%s", err.message);

	LP_CHECK(entry_exists(victim, "precious.lance"));
	LP_CHECK(entry_exists(victim, "f.lance/part-1"));
	lp_test_remove_tree(work);
}

LP_TEST(tree_removal_refuses_paths_that_are_not_plain_names)
{
	static const char *const bad[] = {"", "/data", "data//x", "data/", "../x", "data/./x", "data/../x"};
	char		work[1024];
	LpTreeRemoval removal;
	LpError		err;

	snprintf(work, sizeof(work), "%s", lp_test_make_temp_dir());
	make_directory(work, "data");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		removal = remove_tree(work, bad[i], false, &err);
		LP_CHECK_MSG(removal.outcome == LP_TREE_INCOMPLETE && err.code == LP_ERR_INTERNAL,
					 "\"%s\": outcome %d, %.300s", bad[i], removal.outcome, err.message);
		LP_CHECK_EQ_U64(removal.removed_entries, 0);
	}
	LP_CHECK(entry_exists(work, "data"));
	lp_test_remove_tree(work);
}

/* An entry the process may not remove (needs a non-root user: root may remove anything). */
LP_TEST(tree_removal_reports_what_it_could_not_remove)
{
	char		work[1024];
	char		locked[1200];
	LpTreeRemoval removal;
	LpError		err;

	if (geteuid() == 0)
		return;
	snprintf(work, sizeof(work), "%s", lp_test_make_temp_dir());
	snprintf(locked, sizeof(locked), "%s/top/locked", work);
	make_directory(work, "top");
	make_file(work, "top/a", "a");
	make_directory(work, "top/locked");
	make_file(work, "top/locked/stuck", "stuck");
	make_file(work, "top/z", "z");
	LP_CHECK(chmod(locked, 0555) == 0);

	removal = remove_tree(work, "top", false, &err);
	LP_CHECK(removal.outcome == LP_TREE_INCOMPLETE);
	LP_CHECK_EQ_U64(removal.failure_errno, EACCES);
	LP_CHECK_MSG(strstr(err.message, "could not remove \"") != NULL &&
				 strstr(err.message, "/top/locked/stuck\": Permission denied") != NULL,
				 "%s", err.message);
	/* everything else went */
	LP_CHECK(!entry_exists(work, "top/a"));
	LP_CHECK(!entry_exists(work, "top/z"));
	LP_CHECK(entry_exists(work, "top/locked/stuck"));
	chmod(locked, 0755);
	lp_test_remove_tree(work);
}

/* remove_file: the same walk to the file, and only a regular file goes. */
LP_TEST(file_removal_never_follows_a_symlink)
{
	static const char *const bad[] = {"", "/data/x", "data//x", "data/", "../x", "data/../x"};
	LpStore    *store = lp_test_store();
	char		work[1024];
	char		victim[1200];
	char		root[1200];
	bool		removed;
	LpError		err;

	snprintf(work, sizeof(work), "%s", lp_test_make_temp_dir());
	snprintf(victim, sizeof(victim), "%s/victim", work);
	snprintf(root, sizeof(root), "%s/root", work);
	make_victim(work);
	make_directory(work, "root");
	make_directory(work, "root/data");
	make_file(root, "data/orphan.lance", "orphan");
	make_file(root, "data/kept.lance", "kept");

	LP_CHECK(store->ops->remove_file(store, root, "data/orphan.lance", &removed, &err) && removed);
	LP_CHECK(!entry_exists(root, "data/orphan.lance"));
	LP_CHECK(entry_exists(root, "data/kept.lance"));
	/* missing file, missing directory */
	LP_CHECK(store->ops->remove_file(store, root, "data/orphan.lance", &removed, &err) && !removed);
	LP_CHECK(store->ops->remove_file(store, root, "missing/orphan.lance", &removed, &err) && !removed);

	/* the file is a symlink: left, and so is its target */
	make_symlink(victim, root, "data/link.lance");
	LP_CHECK(!store->ops->remove_file(store, root, "data/link.lance", &removed, &err) && !removed);
	LP_CHECK_MSG(err.code == LP_ERR_INVALID_ARGUMENT &&
				 strstr(err.message, "is a symbolic link, not a regular file") != NULL, "%s", err.message);
	LP_CHECK(entry_exists(root, "data/link.lance"));

	/* a component on the way is a symlink to the victim */
	make_symlink(victim, root, "data/sidecars");
	LP_CHECK(!store->ops->remove_file(store, root, "data/sidecars/precious.lance", &removed, &err));
	LP_CHECK_MSG(strstr(err.message, "/data/sidecars\" is a symbolic link, not a directory") != NULL,
				 "%s", err.message);

	/* a directory is not a file */
	make_directory(work, "root/data/dir.lance");
	LP_CHECK(!store->ops->remove_file(store, root, "data/dir.lance", &removed, &err));
	LP_CHECK(entry_exists(root, "data/dir.lance"));

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		LP_CHECK_MSG(!store->ops->remove_file(store, root, bad[i], &removed, &err) &&
					 err.code == LP_ERR_INTERNAL, "\"%s\": %.300s", bad[i], err.message);
	}
	LP_CHECK(entry_exists(victim, "precious.lance"));
	lp_test_remove_tree(work);
}
