/*
 * lp_pq_score.h - a query's PQ distance table, and the scores of a
 * partition's rows of transposed PQ codes (Lance's layout: byte column by
 * byte column) from it, by one of three kernels: column by column (the
 * reference), rows four at a time (portable) and, on x86-64 CPUs with
 * AVX2, vectors of 8 rows or centroids, chosen at run time.  Each adds a
 * row's table entries in Lance's order (byte column by byte column, the
 * low nibble before the high one), and a table entry's terms dimension by
 * dimension, so their tables and scores are the same to the bit.
 *
 * The table: for 8-bit codes 256 entries a byte column (one sub-vector);
 * for 4-bit codes 32 a byte column, the 16 of its low nibble's sub-vector
 * then the 16 of its high nibble's.
 */
#ifndef LP_PQ_SCORE_H
#define LP_PQ_SCORE_H

#include <stdbool.h>
#include <stdint.h>

typedef enum LpPqKernel
{
	LP_PQ_KERNEL_COLUMNS,
	LP_PQ_KERNEL_ROWS,
	LP_PQ_KERNEL_AVX2
} LpPqKernel;

/* The PQ codes of a partition and its query's table. */
typedef struct LpPqCodes
{
	const float *table;
	const uint8_t *codes;		/* width columns of num_rows bytes */
	uint64_t	width;			/* bytes a row */
	uint64_t	num_rows;
	uint32_t	num_bits;		/* 8 or 4 */
	float		start;			/* every score's first term */
} LpPqCodes;

/*
 * A PQ codebook stored dimension by dimension: for each sub-vector, for
 * each of its sub_width dimensions, that coordinate of its num_centroids
 * centroids (so that a kernel computes the distances to many centroids at
 * once, each adding its dimensions in order).
 */
typedef struct LpPqCodebook
{
	const float *by_dimension;
	uint32_t	num_sub_vectors;
	uint32_t	sub_width;
	uint32_t	num_centroids;
	bool		dot;			/* the table holds negated dot products, not squared l2 distances */
} LpPqCodebook;

/* The fastest kernel this CPU runs (found once). */
LpPqKernel	lp_pq_best_kernel(void);

/* Whether this build and CPU run kernel. */
bool		lp_pq_kernel_available(LpPqKernel kernel);

/* The num_rows scores of codes into scores, by kernel (which must be available). */
void		lp_pq_scores(LpPqKernel kernel, const LpPqCodes *codes, float *scores);

/* codebook (sub-vector by sub-vector, centroid by centroid) stored dimension by dimension into out. */
void		lp_pq_codebook_by_dimension(const float *codebook, uint32_t num_sub_vectors,
										uint32_t sub_width, uint32_t num_centroids, float *out);

/*
 * The distance table of query (num_sub_vectors * sub_width floats) into
 * table (num_sub_vectors * num_centroids), by kernel: for each sub-vector s
 * and centroid c the squared l2 distance, or the negated dot product, of
 * the query's sub-vector s and centroid c, its dimensions added in order.
 */
void		lp_pq_table(LpPqKernel kernel, const LpPqCodebook *codebook, const float *query,
						float *table);

#endif							/* LP_PQ_SCORE_H */
