/*
 * lp_fsst.c - FSST string compression and decompression (format in
 * lp_fsst.h).
 */
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "codec/lp_fsst.h"

#define FSST_MAGIC 0x46535354u

bool
lp_fsst_table_parse(const uint8_t *data, size_t len, LpFsstTable *table)
{
	uint64_t	header;
	uint32_t	n;

	if (len != LP_FSST_SYMBOL_TABLE_LEN)
		return false;
	header = lp_le64(data);
	if ((uint32_t) (header >> 32) != FSST_MAGIC)
		return false;
	n = (uint32_t) (header & 0xff);
	memset(table, 0, sizeof(*table));
	table->compressed = (header >> 24) & 1;
	table->num_symbols = n;
	for (uint32_t i = 0; i < n; i++)
	{
		memcpy(table->symbols[i], data + 8 + (size_t) i * 8, 8);
		table->lengths[i] = data[8 + (size_t) n * 8 + i];
		if (table->lengths[i] == 0 || table->lengths[i] > 8)
			return false;
	}
	return true;
}

bool
lp_fsst_decode(const LpFsstTable *table, const uint8_t *in, size_t len, uint8_t *out,
			   uint64_t *out_len)
{
	uint8_t    *start = out;
	size_t		i = 0;

	while (i < len)
	{
		uint8_t		code = in[i];

		if (code < table->num_symbols)
		{
			/* all 8 bytes of the symbol: out has room for 8 per code */
			memcpy(out, table->symbols[code], 8);
			out += table->lengths[code];
			i += 1;
		}
		else if (code == LP_FSST_ESCAPE && i + 1 < len)
		{
			*out++ = in[i + 1];
			i += 2;
		}
		else
			return false;
	}
	*out_len = (uint64_t) (out - start);
	return true;
}

/* ---- compression ---------------------------------------------------------- */

#define FSST_SAMPLE_BYTES (16 * 1024)	/* Lance's FSST_SAMPLETARGET */
#define FSST_ROUNDS 5
#define FSST_MAX_SYMBOLS 255
/* Codes while building: symbols 0..254, single bytes 256 + b. */
#define FSST_CODES 512

typedef struct Candidate
{
	uint64_t	symbol;			/* bytes, first in the low byte */
	uint32_t	len;
	uint64_t	gain;
} Candidate;

static int
by_symbol(const void *a, const void *b)
{
	const Candidate *x = a;
	const Candidate *y = b;

	if (x->symbol != y->symbol)
		return x->symbol < y->symbol ? -1 : 1;
	return (int) x->len - (int) y->len;
}

static int
by_gain(const void *a, const void *b)
{
	const Candidate *x = a;
	const Candidate *y = b;

	if (x->gain != y->gain)
		return x->gain > y->gain ? -1 : 1;
	return by_symbol(a, b);
}

static uint32_t
prefix_slot(uint16_t prefix)
{
	return ((uint32_t) prefix * 40503u >> 6) & (LP_FSST_PREFIX_SLOTS - 1);
}

static uint32_t
symbol_slot(uint64_t value, uint32_t len)
{
	return (uint32_t) (((value ^ (uint64_t) len << 61) * UINT64_C(0x9E3779B97F4A7C15)) >> 54) &
		(LP_FSST_SYMBOL_SLOTS - 1);
}

/* The bytes of a symbol of len bytes in a little-endian word. */
static uint64_t
length_mask(uint32_t len)
{
	return len >= 8 ? UINT64_MAX : ((uint64_t) 1 << (8 * len)) - 1;
}

/* The code of the symbol of len bytes that value's first len bytes are, or UINT32_MAX. */
static uint32_t
find_symbol(const LpFsstEncoder *encoder, uint64_t value, uint32_t len)
{
	for (uint32_t slot = symbol_slot(value, len); encoder->symbol_len[slot] != 0;
		 slot = (slot + 1) & (LP_FSST_SYMBOL_SLOTS - 1))
		if (encoder->symbol_len[slot] == len && encoder->symbol_value[slot] == value)
			return encoder->symbol_code[slot];
	return UINT32_MAX;
}

/*
 * Index the table's codes: one-byte symbols by their byte, longer ones by
 * their bytes and length, with the lengths present for each two-byte
 * prefix.  A match then tries one lookup per length, longest first:
 * symbols sharing their first bytes ("row 1", "row 12", ...) made a list
 * per prefix as long as the table, and scanning it took most of the time
 * of compressing such strings.
 */
static void
index_symbols(LpFsstEncoder *encoder)
{
	const LpFsstTable *table = &encoder->table;

	memset(encoder->single, 0xff, sizeof(encoder->single));
	memset(encoder->prefix_lengths, 0, sizeof(encoder->prefix_lengths));
	memset(encoder->symbol_len, 0, sizeof(encoder->symbol_len));
	for (uint32_t c = 0; c < table->num_symbols; c++)
	{
		uint32_t	len = table->lengths[c];
		uint64_t	value = lp_le_bytes(table->symbols[c], len);
		uint16_t	prefix;
		uint32_t	slot;

		if (len == 1)
		{
			encoder->single[table->symbols[c][0]] = (uint16_t) c;
			continue;
		}
		prefix = lp_le16(table->symbols[c]);
		for (slot = prefix_slot(prefix);
			 encoder->prefix_lengths[slot] != 0 && encoder->prefix_key[slot] != prefix;
			 slot = (slot + 1) & (LP_FSST_PREFIX_SLOTS - 1))
			;
		encoder->prefix_key[slot] = prefix;
		encoder->prefix_lengths[slot] |= (uint8_t) (1u << (len - 2));
		/* the table's symbols are distinct: no lookup before the insert */
		for (slot = symbol_slot(value, len); encoder->symbol_len[slot] != 0;
			 slot = (slot + 1) & (LP_FSST_SYMBOL_SLOTS - 1))
			;
		encoder->symbol_value[slot] = value;
		encoder->symbol_len[slot] = (uint8_t) len;
		encoder->symbol_code[slot] = (uint8_t) c;
	}
}

/* The longest symbol at in[0, len): its code, or 256 + byte; *match_len its length. */
static uint32_t
match(const LpFsstEncoder *encoder, const uint8_t *in, size_t len, uint32_t *match_len)
{
	uint8_t		b = in[0];
	uint8_t		tail[8] = {0};
	uint64_t	word;

	/* a tail shorter than a word is compared as one too, zero-padded: a symbol fits it or is longer */
	if (len < 8)
		memcpy(tail, in, len);
	word = lp_le64(len >= 8 ? in : tail);
	if (len >= 2)
	{
		uint16_t	prefix = (uint16_t) (word & 0xffff);

		for (uint32_t slot = prefix_slot(prefix); encoder->prefix_lengths[slot] != 0;
			 slot = (slot + 1) & (LP_FSST_PREFIX_SLOTS - 1))
		{
			if (encoder->prefix_key[slot] != prefix)
				continue;
			for (uint32_t lengths = encoder->prefix_lengths[slot]; lengths != 0;)
			{
				uint32_t	l = 31 - (uint32_t) __builtin_clz(lengths) + 2;
				uint32_t	code;

				lengths &= ~(1u << (l - 2));
				if (l <= len && (code = find_symbol(encoder, word & length_mask(l), l)) != UINT32_MAX)
				{
					*match_len = l;
					return code;
				}
			}
			break;
		}
	}
	*match_len = 1;
	return encoder->single[b] != UINT16_MAX ? encoder->single[b] : 256 + b;
}

static void
code_symbol(const LpFsstEncoder *encoder, uint32_t code, uint64_t *symbol, uint32_t *len)
{
	if (code >= 256)
	{
		*symbol = code - 256;
		*len = 1;
	}
	else
	{
		*symbol = lp_le_bytes(encoder->table.symbols[code], encoder->table.lengths[code]);
		*len = encoder->table.lengths[code];
	}
}

/*
 * What a build keeps over its rounds.  A round touches few of the
 * FSST_CODES^2 pair counts: it lists the codes and pairs it counted, makes
 * candidates of those alone and clears only their counts.  Going over every
 * pair, and sorting every candidate to add up equal symbols, took nearly all
 * of a build on pages of a few thousand strings.
 */
typedef struct BuildCounts
{
	uint32_t	counts1[FSST_CODES];
	uint32_t   *counts2;		/* prev * FSST_CODES + code; all zero between rounds */
	uint16_t	codes[FSST_CODES];	/* the codes counted in this round */
	uint32_t	n_codes;
	uint32_t   *pairs;			/* the pairs counted in this round */
	uint64_t	n_pairs;
	Candidate  *candidates;		/* room for every code and pair */
	uint32_t   *slots;			/* hash of candidates by symbol; UINT32_MAX: free */
} BuildCounts;

#define FSST_PAIRS ((size_t) FSST_CODES * FSST_CODES)
#define FREE_SLOT UINT32_MAX

static uint64_t
candidate_slot(uint64_t symbol, uint32_t len, uint64_t mask)
{
	return ((symbol ^ (uint64_t) len << 59) * UINT64_C(0x9E3779B97F4A7C15) >> 20) & mask;
}

/* Add a candidate, adding its gain to an equal symbol's: the same symbol comes from several pairs. */
static void
add_candidate(BuildCounts *bc, uint64_t *n_candidates, uint64_t mask, uint64_t symbol, uint32_t len,
			  uint64_t gain)
{
	uint64_t	slot = candidate_slot(symbol, len, mask);

	for (;; slot = (slot + 1) & mask)
	{
		uint32_t	at = bc->slots[slot];

		if (at == FREE_SLOT)
		{
			bc->slots[slot] = (uint32_t) *n_candidates;
			bc->candidates[(*n_candidates)++] = (Candidate) {symbol, len, gain};
			return;
		}
		if (bc->candidates[at].symbol == symbol && bc->candidates[at].len == len)
		{
			bc->candidates[at].gain += gain;
			return;
		}
	}
}

/* Sift heap[i] down a heap of n whose top ranks last by by_gain (the weakest kept). */
static void
sift_down(Candidate *heap, uint32_t n, uint32_t i)
{
	for (;;)
	{
		uint32_t	weakest = i;
		uint32_t	left = 2 * i + 1;
		uint32_t	right = left + 1;
		Candidate	swap;

		if (left < n && by_gain(&heap[left], &heap[weakest]) > 0)
			weakest = left;
		if (right < n && by_gain(&heap[right], &heap[weakest]) > 0)
			weakest = right;
		if (weakest == i)
			return;
		swap = heap[i];
		heap[i] = heap[weakest];
		heap[weakest] = swap;
		i = weakest;
	}
}

/* The FSST_MAX_SYMBOLS best of candidates[0..n) by by_gain, in that order, at its front. */
static uint32_t
keep_best(Candidate *candidates, uint64_t n)
{
	uint32_t	kept = 0;

	for (uint64_t i = 0; i < n; i++)
	{
		if (kept < FSST_MAX_SYMBOLS)
		{
			candidates[kept++] = candidates[i];
			if (kept == FSST_MAX_SYMBOLS)
				for (uint32_t j = kept / 2 + 1; j-- > 0;)
					sift_down(candidates, kept, j);
		}
		else if (by_gain(&candidates[i], &candidates[0]) < 0)
		{
			candidates[0] = candidates[i];
			sift_down(candidates, kept, 0);
		}
	}
	qsort(candidates, kept, sizeof(Candidate), by_gain);
	return kept;
}

/* One round: count codes and pairs over the sample, keep the best 255 candidates. */
static void
build_round(LpFsstEncoder *encoder, const uint8_t *data, const uint64_t *offsets,
			const uint64_t *sample, uint64_t n_sample, BuildCounts *bc)
{
	uint64_t	n_candidates = 0;
	uint64_t	mask;
	uint32_t	kept;

	bc->n_codes = 0;
	bc->n_pairs = 0;
	for (uint64_t s = 0; s < n_sample; s++)
	{
		const uint8_t *in = data + offsets[sample[s]];
		size_t		len = offsets[sample[s] + 1] - offsets[sample[s]];
		uint32_t	prev = UINT32_MAX;

		for (size_t pos = 0; pos < len;)
		{
			uint32_t	l;
			uint32_t	code = match(encoder, in + pos, len - pos, &l);

			if (bc->counts1[code]++ == 0)
				bc->codes[bc->n_codes++] = (uint16_t) code;
			if (prev != UINT32_MAX && bc->counts2[prev * FSST_CODES + code]++ == 0)
				bc->pairs[bc->n_pairs++] = prev * FSST_CODES + code;
			prev = code;
			pos += l;
		}
	}
	/* a hash of twice the candidates' room or more, a power of two */
	for (mask = 1; mask < 2 * ((uint64_t) bc->n_codes + bc->n_pairs); mask <<= 1)
		;
	memset(bc->slots, 0xff, (size_t) mask * sizeof(uint32_t));
	mask--;
	for (uint32_t i = 0; i < bc->n_codes; i++)
	{
		uint32_t	a = bc->codes[i];
		uint64_t	sa;
		uint32_t	la;

		code_symbol(encoder, a, &sa, &la);
		add_candidate(bc, &n_candidates, mask, sa, la, (uint64_t) bc->counts1[a] * la);
		bc->counts1[a] = 0;
	}
	for (uint64_t i = 0; i < bc->n_pairs; i++)
	{
		uint32_t	a = bc->pairs[i] / FSST_CODES;
		uint32_t	b = bc->pairs[i] % FSST_CODES;
		uint32_t	count = bc->counts2[bc->pairs[i]];
		uint64_t	sa;
		uint64_t	sb;
		uint32_t	la;
		uint32_t	lb;
		uint32_t	len;

		bc->counts2[bc->pairs[i]] = 0;
		code_symbol(encoder, a, &sa, &la);
		if (la == 8)
			continue;
		code_symbol(encoder, b, &sb, &lb);
		len = la + lb > 8 ? 8 : la + lb;
		sb &= len - la == 8 ? UINT64_MAX : (((uint64_t) 1 << (8 * (len - la))) - 1);
		add_candidate(bc, &n_candidates, mask, sa | (sb << (8 * la)), len, (uint64_t) count * len);
	}
	kept = keep_best(bc->candidates, n_candidates);
	encoder->table.num_symbols = kept;
	for (uint32_t c = 0; c < kept; c++)
	{
		encoder->table.lengths[c] = (uint8_t) bc->candidates[c].len;
		lp_put_le64(encoder->table.symbols[c], bc->candidates[c].symbol);
	}
	index_symbols(encoder);
}

LpFsstEncoder *
lp_fsst_encoder_build(const uint8_t *data, const uint64_t *offsets, uint64_t n)
{
	LpFsstEncoder *encoder = lp_alloc0(sizeof(LpFsstEncoder));
	BuildCounts *bc = lp_alloc0(sizeof(BuildCounts));
	uint64_t   *sample = lp_alloc_array_unzeroed(n + 1, sizeof(uint64_t));
	uint64_t	n_sample = 0;
	uint64_t	total = n > 0 ? offsets[n] - offsets[0] : 0;
	uint64_t	stride = total > FSST_SAMPLE_BYTES ? total / FSST_SAMPLE_BYTES : 1;
	bool		ok;

	/* only counts2 is read before it is written: the others are filled as far as a round needs */
	if (bc != NULL)
	{
		bc->counts2 = lp_alloc_array(FSST_PAIRS, sizeof(uint32_t));
		bc->pairs = lp_alloc_array_unzeroed(FSST_PAIRS, sizeof(uint32_t));
		bc->candidates = lp_alloc_array_unzeroed(FSST_PAIRS + FSST_CODES, sizeof(Candidate));
		bc->slots = lp_alloc_array_unzeroed(4 * (FSST_PAIRS + FSST_CODES), sizeof(uint32_t));
	}
	ok = encoder && bc && bc->counts2 && bc->pairs && bc->candidates && bc->slots && sample;

	/* Every stride-th string (by bytes), about FSST_SAMPLE_BYTES in all. */
	for (uint64_t i = 0, taken = 0; ok && i < n; i++)
		if (offsets[i + 1] > offsets[i] && (offsets[i] - offsets[0]) / stride >= taken)
		{
			sample[n_sample++] = i;
			taken += offsets[i + 1] - offsets[i];
		}
	if (ok)
	{
		index_symbols(encoder);
		for (int round = 0; round < FSST_ROUNDS; round++)
			build_round(encoder, data, offsets, sample, n_sample, bc);
	}
	if (bc != NULL)
	{
		lp_free(bc->counts2);
		lp_free(bc->pairs);
		lp_free(bc->candidates);
		lp_free(bc->slots);
	}
	lp_free(bc);
	lp_free(sample);
	if (!ok)
	{
		lp_free(encoder);
		return NULL;
	}
	encoder->table.compressed = true;
	return encoder;
}

void
lp_fsst_table_write(const LpFsstTable *table, uint8_t *out)
{
	uint64_t	header = ((uint64_t) FSST_MAGIC << 32) | ((uint64_t) 1 << 24) |
		((uint64_t) (table->num_symbols & 255) << 16) | (table->num_symbols & 255);

	memset(out, 0, LP_FSST_SYMBOL_TABLE_LEN);
	lp_put_le64(out, header);
	for (uint32_t i = 0; i < table->num_symbols; i++)
	{
		memcpy(out + 8 + (size_t) i * 8, table->symbols[i], 8);
		out[8 + (size_t) table->num_symbols * 8 + i] = table->lengths[i];
	}
}

size_t
lp_fsst_encode(const LpFsstEncoder *encoder, const uint8_t *in, size_t len, uint8_t *out)
{
	size_t		written = 0;

	for (size_t pos = 0; pos < len;)
	{
		uint32_t	l;
		uint32_t	code = match(encoder, in + pos, len - pos, &l);

		if (code >= 256)
		{
			out[written++] = LP_FSST_ESCAPE;
			out[written++] = in[pos];
		}
		else
			out[written++] = (uint8_t) code;
		pos += l;
	}
	return written;
}
