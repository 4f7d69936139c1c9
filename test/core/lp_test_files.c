/*
 * lp_test_files.c - POSIX files behind LpInput and LpOutput, for core tests.
 */
#define _GNU_SOURCE
#include "lp_test_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct FileInput
{
	LpInput		base;
	int			fd;
	char	   *path;
} FileInput;

typedef struct FileOutput
{
	LpOutput	base;
	int			fd;
	char	   *path;
	char	   *temp_path;
} FileOutput;

static bool
file_read_at(LpInput *input, uint64_t offset, void *buffer, size_t len,
			 LpError *err)
{
	FileInput  *file = (FileInput *) input;
	size_t		done = 0;

	while (done < len)
	{
		ssize_t		n = pread(file->fd, (char *) buffer + done, len - done,
							  (off_t) (offset + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return lp_fail(err, LP_ERR_IO, "could not read file \"%s\": %s",
						   file->path, strerror(errno));
		if (n == 0)
			return lp_fail(err, LP_ERR_IO,
						   "could not read file \"%s\": short read of %zu of %zu bytes at offset %llu",
						   file->path, done, len, (unsigned long long) offset);
		done += (size_t) n;
	}
	return true;
}

static void
file_input_close(LpInput *input)
{
	FileInput  *file = (FileInput *) input;

	close(file->fd);
	free(file->path);
	free(file);
}

static const LpInputOps file_input_ops = {.read_at = file_read_at, .close = file_input_close};

LpInput *
lp_test_file_input_open(const char *path, LpError *err)
{
	FileInput  *file;
	struct stat st;
	int			fd = open(path, O_RDONLY);

	if (fd < 0)
	{
		lp_fail(err, errno == ENOENT ? LP_ERR_NOT_FOUND : LP_ERR_IO,
				"could not open file \"%s\": %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) != 0)
	{
		lp_fail(err, LP_ERR_IO, "could not stat file \"%s\": %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	file = calloc(1, sizeof(FileInput));
	file->fd = fd;
	file->path = strdup(path);
	file->base.ops = &file_input_ops;
	file->base.name = file->path;
	file->base.size = (uint64_t) st.st_size;
	return &file->base;
}

static bool
file_write_at(LpOutput *output, uint64_t offset, const void *data, size_t len,
			  LpError *err)
{
	FileOutput *file = (FileOutput *) output;
	size_t		done = 0;

	while (done < len)
	{
		ssize_t		n = pwrite(file->fd, (const char *) data + done, len - done,
							   (off_t) (offset + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return lp_fail(err, LP_ERR_IO, "could not write file \"%s\": %s",
						   file->temp_path, strerror(errno));
		done += (size_t) n;
	}
	return true;
}

/*
 * copy_file_range between files; any other input (memory) is refused with
 * LP_ERR_UNSUPPORTED, as a store refuses another store's input, and counted.
 */
int			lp_test_file_copies_refused;

static bool
file_copy_from(LpOutput *output, uint64_t output_offset, LpInput *input,
			   uint64_t input_offset, uint64_t len, LpError *err)
{
	FileOutput *file = (FileOutput *) output;
	int			source_fd;
	loff_t		in_off = (loff_t) input_offset;
	loff_t		out_off = (loff_t) output_offset;

	if (input->ops != &file_input_ops)
	{
		lp_test_file_copies_refused++;
		return lp_fail(err, LP_ERR_UNSUPPORTED, "cannot copy \"%s\" into \"%s\" without reading it",
					   input->name, file->path);
	}
	source_fd = ((FileInput *) input)->fd;
	while (len > 0)
	{
		ssize_t		n = copy_file_range(source_fd, &in_off, file->fd, &out_off,
										len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return lp_fail(err, LP_ERR_IO, "could not copy into \"%s\": %s",
						   file->temp_path, strerror(errno));
		if (n == 0)
			return lp_fail(err, LP_ERR_IO, "could not copy into \"%s\": short read of \"%s\"",
						   file->temp_path, input->name);
		len -= (uint64_t) n;
	}
	return true;
}

static void
free_output(FileOutput *file)
{
	free(file->path);
	free(file->temp_path);
	free(file);
}

static bool
file_publish(LpOutput *output, LpError *err)
{
	FileOutput *file = (FileOutput *) output;
	bool		ok = true;

	if (fsync(file->fd) != 0 || close(file->fd) != 0)
		ok = lp_fail(err, LP_ERR_IO, "could not sync file \"%s\": %s",
					 file->temp_path, strerror(errno));
	else if (rename(file->temp_path, file->path) != 0)
		ok = lp_fail(err, LP_ERR_IO, "could not rename \"%s\" to \"%s\": %s",
					 file->temp_path, file->path, strerror(errno));
	if (!ok)
		unlink(file->temp_path);
	free_output(file);
	return ok;
}

static void
file_abort(LpOutput *output)
{
	FileOutput *file = (FileOutput *) output;

	close(file->fd);
	unlink(file->temp_path);
	free_output(file);
}

static const LpOutputOps plain_output_ops = {
	.write_at = file_write_at,
	.publish = file_publish,
	.abort = file_abort
};
static const LpOutputOps copying_output_ops = {
	.write_at = file_write_at,
	.copy_from = file_copy_from,
	.publish = file_publish,
	.abort = file_abort
};

void
lp_test_file_temp_name(const char *path, char *buffer, size_t len)
{
	snprintf(buffer, len, "%s.tmp", path);
}

LpOutput *
lp_test_file_output_create(const char *path, bool use_copy_from, LpError *err)
{
	FileOutput *file;
	char		temp_path[4096];
	int			fd;

	lp_test_file_temp_name(path, temp_path, sizeof(temp_path));
	fd = open(temp_path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
	{
		lp_fail(err, LP_ERR_IO, "could not create file \"%s\": %s", temp_path,
				strerror(errno));
		return NULL;
	}
	file = calloc(1, sizeof(FileOutput));
	file->fd = fd;
	file->path = strdup(path);
	file->temp_path = strdup(temp_path);
	file->base.ops = use_copy_from ? &copying_output_ops : &plain_output_ops;
	file->base.name = file->path;
	return &file->base;
}

bool
lp_test_file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

bool
lp_test_file_read_all(const char *path, uint8_t **data, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	long		size;

	*data = NULL;
	*len = 0;
	if (f == NULL)
		return false;
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
	{
		fclose(f);
		return false;
	}
	*data = malloc(size > 0 ? (size_t) size : 1);
	*len = (size_t) size;
	if (fread(*data, 1, *len, f) != *len)
	{
		fclose(f);
		free(*data);
		*data = NULL;
		return false;
	}
	fclose(f);
	return true;
}

const char *
lp_test_make_temp_dir(void)
{
	static char path[4096];
	const char *base = getenv("TMPDIR");

	snprintf(path, sizeof(path), "%s/lp-core-test-XXXXXX", base && *base ? base : "/tmp");
	if (mkdtemp(path) == NULL)
		return NULL;
	return path;
}
