/*
 * lp_fsst.c - FSST string decompression (format in lp_fsst.h).
 */
#include <string.h>

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
