/*
 * lp_s3_sizes.h - the sizes the S3 store reads and writes in, which its
 * inputs and outputs (and the tests of the part layout) share.
 */
#ifndef LP_S3_SIZES_H
#define LP_S3_SIZES_H

#include <stddef.h>
#include <stdint.h>

/* a read smaller than this fetches the aligned block around it */
#define LP_S3_READ_BLOCK ((size_t) 64 << 10)
/* the parts an output sends while it is written front to back */
#define LP_S3_UPLOAD_PART_SIZE ((size_t) 8 << 20)
/* bytes an input holds fetched ahead: a scan batch's pages, about */
#define LP_S3_READAHEAD_BYTES ((uint64_t) 16 << 20)

#endif							/* LP_S3_SIZES_H */
