/*
 * lp_pg_types.c - the integer mapping both directions of the value mapping
 * share (see lp_pg_types.h).
 */
#include "postgres.h"

#include "catalog/pg_type.h"

#include "base/lp_bytes.h"
#include "base/lp_pg_types.h"

static const LpPgInteger integers[] = {
	{LP_TYPE_INT8, INT2OID, PG_INT8_MIN, PG_INT8_MAX, 1},
	{LP_TYPE_UINT8, INT2OID, 0, PG_UINT8_MAX, 1},
	{LP_TYPE_INT16, INT2OID, PG_INT16_MIN, PG_INT16_MAX, 2},
	{LP_TYPE_UINT16, INT4OID, 0, PG_UINT16_MAX, 2},
	{LP_TYPE_INT32, INT4OID, PG_INT32_MIN, PG_INT32_MAX, 4},
	{LP_TYPE_UINT32, INT8OID, 0, PG_UINT32_MAX, 4},
	{LP_TYPE_INT64, INT8OID, PG_INT64_MIN, PG_INT64_MAX, 8},
};

const LpPgInteger *
lp_pg_integer(LpTypeId id)
{
	for (size_t i = 0; i < lengthof(integers); i++)
		if (integers[i].id == id)
			return &integers[i];
	return NULL;
}

int64
lp_pg_integer_read(const LpPgInteger *mapping, const void *bytes)
{
	uint64		raw = lp_le_bytes(bytes, mapping->width);
	uint64		sign;

	if (mapping->min == 0 || mapping->width == 8)
		return (int64) raw;
	/* sign-extend the narrower signed types */
	sign = UINT64CONST(1) << (8 * mapping->width - 1);
	return (int64) ((raw ^ sign) - sign);
}

Datum
lp_pg_integer_datum(const LpPgInteger *mapping, int64 value)
{
	switch (mapping->pg_type)
	{
		case INT2OID:
			return Int16GetDatum((int16) value);
		case INT4OID:
			return Int32GetDatum((int32) value);
		default:
			return Int64GetDatum(value);
	}
}

int64
lp_pg_integer_of_datum(const LpPgInteger *mapping, Datum value)
{
	switch (mapping->pg_type)
	{
		case INT2OID:
			return DatumGetInt16(value);
		case INT4OID:
			return DatumGetInt32(value);
		default:
			return DatumGetInt64(value);
	}
}
