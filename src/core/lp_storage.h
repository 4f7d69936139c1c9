/*
 * lp_storage.h - the small I/O interface the core reads and writes through.
 *
 * Backends (local files through fd.c, S3 through libcurl, memory for tests
 * and fuzzing) embed LpInput/LpOutput as their first member.
 */
#ifndef LP_STORAGE_H
#define LP_STORAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "lp_error.h"

typedef struct LpInput LpInput;

typedef struct LpInputOps
{
	/* Read exactly len bytes at offset; a short read is an error. */
	bool		(*read_at) (LpInput *input, uint64_t offset, void *buffer,
							size_t len, LpError *err);
	void		(*close) (LpInput *input);
} LpInputOps;

struct LpInput
{
	const LpInputOps *ops;
	const char *name;			/* for messages: the path or URI */
	uint64_t	size;			/* exact size in bytes */
};

static inline bool
lp_input_read(LpInput *input, uint64_t offset, void *buffer, size_t len,
			  LpError *err)
{
	if (offset > input->size || len > input->size - offset)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "read of %zu bytes at offset %llu is beyond the end of file \"%s\" (%llu bytes)",
					   len, (unsigned long long) offset, input->name,
					   (unsigned long long) input->size);
	return input->ops->read_at(input, offset, buffer, len, err);
}

static inline void
lp_input_close(LpInput *input)
{
	if (input)
		input->ops->close(input);
}

/* An input over a caller-owned memory buffer (tests, fuzzing). */
LpInput    *lp_memory_input_open(const char *name, const void *data, uint64_t size);

#endif							/* LP_STORAGE_H */
