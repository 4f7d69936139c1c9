/*
 * lp_pq_score.c - PQ distance tables and the scores of rows of transposed
 * PQ codes: column by column, by blocks of rows and with AVX2
 * (lp_pq_score.h).
 */
#include <stdbool.h>
#include <string.h>

#include "index/lp_pq_score.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LP_PQ_HAVE_AVX2 1
#include <immintrin.h>
#endif

/* Column by column, each read in order: the reference the other kernels match. */
static void
scores_by_columns(const LpPqCodes *codes, float *scores)
{
	uint64_t	n = codes->num_rows;

	for (uint64_t r = 0; r < n; r++)
		scores[r] = codes->start;
	for (uint64_t b = 0; b < codes->width; b++)
	{
		const uint8_t *column = codes->codes + b * n;

		if (codes->num_bits == 8)
		{
			const float *table = codes->table + b * 256;

			for (uint64_t r = 0; r < n; r++)
				scores[r] += table[column[r]];
		}
		else
		{
			const float *low = codes->table + b * 32;
			const float *high = low + 16;

			for (uint64_t r = 0; r < n; r++)
			{
				scores[r] += low[column[r] & 0x0f];
				scores[r] += high[column[r] >> 4];
			}
		}
	}
}

/* The score of row r, its byte columns added in order. */
static float
row_score(const LpPqCodes *codes, uint64_t r)
{
	const uint8_t *column = codes->codes + r;
	float		sum = codes->start;

	for (uint64_t b = 0; b < codes->width; b++, column += codes->num_rows)
	{
		if (codes->num_bits == 8)
			sum += codes->table[b * 256 + *column];
		else
		{
			sum += codes->table[b * 32 + (*column & 0x0f)];
			sum += codes->table[b * 32 + 16 + (*column >> 4)];
		}
	}
	return sum;
}

/*
 * Four rows at a time, their sums in registers through every byte column:
 * a table entry and a code byte loaded for each term, where column by
 * column also loads and stores the sum (and four independent sums keep
 * the adds' latency hidden).  The last rows one by one.
 */
static void
scores_by_rows(const LpPqCodes *codes, float *scores)
{
	uint64_t	n = codes->num_rows;
	uint64_t	r = 0;

	if (codes->num_bits == 8)
		for (; r + 4 <= n; r += 4)
		{
			const uint8_t *column = codes->codes + r;
			const float *table = codes->table;
			float		s0 = codes->start,
						s1 = codes->start,
						s2 = codes->start,
						s3 = codes->start;

			for (uint64_t b = 0; b < codes->width; b++, column += n, table += 256)
			{
				s0 += table[column[0]];
				s1 += table[column[1]];
				s2 += table[column[2]];
				s3 += table[column[3]];
			}
			scores[r] = s0;
			scores[r + 1] = s1;
			scores[r + 2] = s2;
			scores[r + 3] = s3;
		}
	for (; r < n; r++)
		scores[r] = row_score(codes, r);
}

/* The table centroid by centroid across each dimension's values. */
static void
table_portable(const LpPqCodebook *codebook, const float *query, float *table)
{
	uint32_t	count = codebook->num_centroids;

	for (uint32_t s = 0; s < codebook->num_sub_vectors; s++)
	{
		float	   *entries = table + (uint64_t) s * count;

		for (uint32_t c = 0; c < count; c++)
			entries[c] = 0;
		for (uint32_t d = 0; d < codebook->sub_width; d++)
		{
			float		q = query[(uint64_t) s * codebook->sub_width + d];
			const float *values = codebook->by_dimension + ((uint64_t) s * codebook->sub_width + d) * count;

			for (uint32_t c = 0; c < count; c++)
			{
				float		diff = q - values[c];

				entries[c] += codebook->dot ? q * values[c] : diff * diff;
			}
		}
		if (codebook->dot)
			for (uint32_t c = 0; c < count; c++)
				entries[c] = -entries[c];
	}
}

#ifdef LP_PQ_HAVE_AVX2

/* The table eight centroids at a time, their sums in a register across the dimensions. */
__attribute__((target("avx2")))
static void
table_avx2(const LpPqCodebook *codebook, const float *query, float *table)
{
	uint32_t	count = codebook->num_centroids;
	__m256		sign = _mm256_set1_ps(-0.0f);

	if (count % 8 != 0)
	{
		table_portable(codebook, query, table);
		return;
	}
	for (uint32_t s = 0; s < codebook->num_sub_vectors; s++)
	{
		const float *sub = query + (uint64_t) s * codebook->sub_width;
		const float *values = codebook->by_dimension + (uint64_t) s * codebook->sub_width * count;

		for (uint32_t c = 0; c < count; c += 8)
		{
			__m256		sum = _mm256_setzero_ps();

			for (uint32_t d = 0; d < codebook->sub_width; d++)
			{
				__m256		q = _mm256_set1_ps(sub[d]);
				__m256		v = _mm256_loadu_ps(values + (uint64_t) d * count + c);

				if (codebook->dot)
					sum = _mm256_add_ps(sum, _mm256_mul_ps(q, v));
				else
				{
					__m256		diff = _mm256_sub_ps(q, v);

					sum = _mm256_add_ps(sum, _mm256_mul_ps(diff, diff));
				}
			}
			_mm256_storeu_ps(table + (uint64_t) s * count + c,
							 codebook->dot ? _mm256_xor_ps(sum, sign) : sum);
		}
	}
}

/* Entries index (0 to 15) of a 16-entry table held in two registers. */
__attribute__((target("avx2")))
static inline __m256
lookup16(__m256 first, __m256 second, __m256i index)
{
	__m256		upper = _mm256_castsi256_ps(_mm256_cmpgt_epi32(index, _mm256_set1_epi32(7)));

	return _mm256_blendv_ps(_mm256_permutevar8x32_ps(first, index),
							_mm256_permutevar8x32_ps(second, index), upper);
}

/*
 * 4-bit codes eight rows at a time, their sums in a register through every
 * byte column, each nibble looked up by permutes in its sub-vector's 16
 * entries.  8-bit codes by rows: gathering from 256 entries is slower
 * than scalar loads on the CPUs measured (AMD Zen 5).
 */
__attribute__((target("avx2")))
static void
scores_avx2(const LpPqCodes *codes, float *scores)
{
	uint64_t	n = codes->num_rows;
	uint64_t	r = 0;

	if (codes->num_bits == 8)
	{
		scores_by_rows(codes, scores);
		return;
	}
	for (; r + 8 <= n; r += 8)
	{
		__m256		sum = _mm256_set1_ps(codes->start);
		const uint8_t *column = codes->codes + r;
		const float *low = codes->table;

		for (uint64_t b = 0; b < codes->width; b++, column += n, low += 32)
		{
			uint64_t	bytes;
			__m256i		code;

			memcpy(&bytes, column, sizeof(bytes));
			code = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long) bytes));
			sum = _mm256_add_ps(sum, lookup16(_mm256_loadu_ps(low), _mm256_loadu_ps(low + 8),
											  _mm256_and_si256(code, _mm256_set1_epi32(0x0f))));
			sum = _mm256_add_ps(sum, lookup16(_mm256_loadu_ps(low + 16), _mm256_loadu_ps(low + 24),
											  _mm256_srli_epi32(code, 4)));
		}
		_mm256_storeu_ps(scores + r, sum);
	}
	for (; r < n; r++)
		scores[r] = row_score(codes, r);
}

#endif

bool
lp_pq_kernel_available(LpPqKernel kernel)
{
	switch (kernel)
	{
		case LP_PQ_KERNEL_COLUMNS:
		case LP_PQ_KERNEL_ROWS:
			return true;
		case LP_PQ_KERNEL_AVX2:
#ifdef LP_PQ_HAVE_AVX2
			return __builtin_cpu_supports("avx2");
#else
			return false;
#endif
	}
	return false;
}

LpPqKernel
lp_pq_best_kernel(void)
{
	static int	best = -1;

	if (best < 0)
		best = lp_pq_kernel_available(LP_PQ_KERNEL_AVX2) ? LP_PQ_KERNEL_AVX2 : LP_PQ_KERNEL_ROWS;
	return (LpPqKernel) best;
}

void
lp_pq_scores(LpPqKernel kernel, const LpPqCodes *codes, float *scores)
{
	switch (kernel)
	{
		case LP_PQ_KERNEL_COLUMNS:
			scores_by_columns(codes, scores);
			break;
		case LP_PQ_KERNEL_ROWS:
			scores_by_rows(codes, scores);
			break;
		case LP_PQ_KERNEL_AVX2:
#ifdef LP_PQ_HAVE_AVX2
			scores_avx2(codes, scores);
#else
			scores_by_rows(codes, scores);
#endif
			break;
	}
}

void
lp_pq_codebook_by_dimension(const float *codebook, uint32_t num_sub_vectors, uint32_t sub_width,
							uint32_t num_centroids, float *out)
{
	for (uint32_t s = 0; s < num_sub_vectors; s++)
		for (uint32_t c = 0; c < num_centroids; c++)
			for (uint32_t d = 0; d < sub_width; d++)
				out[((uint64_t) s * sub_width + d) * num_centroids + c] =
					codebook[((uint64_t) s * num_centroids + c) * sub_width + d];
}

void
lp_pq_table(LpPqKernel kernel, const LpPqCodebook *codebook, const float *query, float *table)
{
#ifdef LP_PQ_HAVE_AVX2
	if (kernel == LP_PQ_KERNEL_AVX2)
	{
		table_avx2(codebook, query, table);
		return;
	}
#else
	(void) kernel;
#endif
	table_portable(codebook, query, table);
}
