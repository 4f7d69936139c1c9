/*
 * test_pq_score.c - the kernels of lp_pq_score.h on random transposed PQ
 * codes, tables and codebooks (fixed seeds): every kernel this CPU runs
 * gives, to the bit, each row's table entries added in Lance's order (byte
 * column by byte column, the low nibble first), for 8-bit and 4-bit codes,
 * row counts that leave partial blocks and a start of 0 (l2, cosine) or 1
 * (dot); and each table entry, squared l2 or negated dot product, its
 * dimensions added in order, for 256 and 16 centroids.  ivf_index_answers_match_lancedb checks the kernel chosen here
 * against lancedb's own scores.
 */
#include <math.h>
#include <stdlib.h>

#include "lp_test.h"
#include "lp_test_util.h"

#include "index/lp_pq_score.h"

/* A row's score added term by term in Lance's order. */
static float
expected_score(const LpPqCodes *codes, uint64_t r)
{
	float		sum = codes->start;

	for (uint64_t b = 0; b < codes->width; b++)
	{
		uint8_t		code = codes->codes[b * codes->num_rows + r];

		if (codes->num_bits == 8)
			sum += codes->table[b * 256 + code];
		else
		{
			sum += codes->table[b * 32 + (code & 0x0f)];
			sum += codes->table[b * 32 + 16 + (code >> 4)];
		}
	}
	return sum;
}

LP_TEST(pq_score_kernels_match_lance_order)
{
	static const uint64_t row_counts[] = {0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 1003};
	static const uint64_t widths[] = {1, 2, 8, 16, 48};
	static const uint32_t bits[] = {8, 4};
	uint64_t	seed = 27027;
	LpError		err;

	for (size_t i = 0; i < sizeof(row_counts) / sizeof(row_counts[0]); i++)
		for (size_t w = 0; w < sizeof(widths) / sizeof(widths[0]); w++)
			for (size_t k = 0; k < sizeof(bits) / sizeof(bits[0]); k++)
			{
				uint64_t	n = row_counts[i];
				uint64_t	width = widths[w];
				uint64_t	entries = width * 256;
				float	   *table = malloc(sizeof(float) * entries);
				uint32_t   *draws = malloc(sizeof(uint32_t) * entries);
				uint8_t    *codes = malloc(n * width + 1);
				float	   *scores = malloc(sizeof(float) * (n + 1));
				LpPqCodes	pq = {table, codes, width, n, bits[k], (float) (i % 2)};

				LP_CHECK(lp_test_random(&seed, (uint8_t *) draws, sizeof(uint32_t) * entries, &err));
				LP_CHECK(lp_test_random(&seed, codes, n * width + 1, &err));
				/* magnitudes 1e-3 to 1e3, so that another order of the adds rounds differently */
				for (uint64_t e = 0; e < entries; e++)
					table[e] = (float) ldexp(draws[e] >> 8, -24) * powf(10, (float) (draws[e] % 7) - 3);
				for (int kernel = LP_PQ_KERNEL_COLUMNS; kernel <= LP_PQ_KERNEL_AVX2; kernel++)
				{
					uint64_t	wrong = 0;

					if (!lp_pq_kernel_available((LpPqKernel) kernel))
						continue;
					for (uint64_t r = 0; r < n; r++)
						scores[r] = NAN;
					lp_pq_scores((LpPqKernel) kernel, &pq, scores);
					for (uint64_t r = 0; r < n; r++)
						if (memcmp(&scores[r], &(float) {expected_score(&pq, r)}, sizeof(float)) != 0)
							wrong++;
					LP_CHECK_MSG(wrong == 0, "kernel %d, %llu rows of %llu bytes, %u-bit codes: %llu scores differ",
								 kernel, (unsigned long long) n, (unsigned long long) width, bits[k],
								 (unsigned long long) wrong);
				}
				free(table);
				free(draws);
				free(codes);
				free(scores);
			}
	LP_CHECK(lp_pq_kernel_available(lp_pq_best_kernel()));
}

/* A table entry as Lance's scalar distance adds it: dimension by dimension. */
static float
expected_entry(const float *codebook, const LpPqCodebook *book, const float *query, uint32_t s, uint32_t c)
{
	const float *sub = query + (uint64_t) s * book->sub_width;
	const float *centroid = codebook + ((uint64_t) s * book->num_centroids + c) * book->sub_width;
	float		sum = 0;

	for (uint32_t d = 0; d < book->sub_width; d++)
	{
		float		diff = sub[d] - centroid[d];

		sum += book->dot ? sub[d] * centroid[d] : diff * diff;
	}
	return book->dot ? -sum : sum;
}

LP_TEST(pq_table_kernels_match_lance_order)
{
	static const uint32_t sub_widths[] = {1, 3, 8, 16, 17};
	static const uint32_t centroid_counts[] = {256, 16};
	uint64_t	seed = 27028;
	LpError		err;

	for (size_t w = 0; w < sizeof(sub_widths) / sizeof(sub_widths[0]); w++)
		for (size_t k = 0; k < sizeof(centroid_counts) / sizeof(centroid_counts[0]); k++)
			for (int dot = 0; dot <= 1; dot++)
			{
				uint32_t	num_sub_vectors = 6;
				uint32_t	dimension = num_sub_vectors * sub_widths[w];
				uint64_t	values = (uint64_t) centroid_counts[k] * dimension;
				int32_t    *draws = malloc(sizeof(int32_t) * (values + dimension));
				float	   *codebook = malloc(sizeof(float) * values);
				float	   *by_dimension = malloc(sizeof(float) * values);
				float	   *query = malloc(sizeof(float) * dimension);
				float	   *table = malloc(sizeof(float) * num_sub_vectors * centroid_counts[k]);
				LpPqCodebook book = {by_dimension, num_sub_vectors, sub_widths[w], centroid_counts[k], dot};

				LP_CHECK(lp_test_random(&seed, (uint8_t *) draws, sizeof(int32_t) * (values + dimension), &err));
				for (uint64_t v = 0; v < values; v++)
					codebook[v] = (float) ldexp(draws[v] >> 8, -22);
				for (uint32_t d = 0; d < dimension; d++)
					query[d] = (float) ldexp(draws[values + d] >> 8, -22);
				lp_pq_codebook_by_dimension(codebook, num_sub_vectors, sub_widths[w], centroid_counts[k],
											by_dimension);
				for (int kernel = LP_PQ_KERNEL_COLUMNS; kernel <= LP_PQ_KERNEL_AVX2; kernel++)
				{
					uint64_t	wrong = 0;

					if (!lp_pq_kernel_available((LpPqKernel) kernel))
						continue;
					lp_pq_table((LpPqKernel) kernel, &book, query, table);
					for (uint32_t s = 0; s < num_sub_vectors; s++)
						for (uint32_t c = 0; c < centroid_counts[k]; c++)
							wrong += memcmp(&table[s * centroid_counts[k] + c],
											&(float) {expected_entry(codebook, &book, query, s, c)},
											sizeof(float)) != 0;
					LP_CHECK_MSG(wrong == 0, "kernel %d, sub-vectors of %u, %u centroids, %s: %llu entries differ",
								 kernel, sub_widths[w], centroid_counts[k], dot ? "dot" : "l2",
								 (unsigned long long) wrong);
				}
				free(draws);
				free(codebook);
				free(by_dimension);
				free(query);
				free(table);
			}
}
