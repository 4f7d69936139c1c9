/*
 * lp_wire.h - values a leader hands its parallel workers through shared
 * memory: length-prefixed bytes and strings, and schemas, written into a
 * StringInfo and read back by a reader that refuses to run past the end.
 */
#ifndef LP_WIRE_H
#define LP_WIRE_H

#include "lib/stringinfo.h"

#include "format/lp_schema.h"

/* What the leader wrote, read from the front; running past its end is an internal error. */
typedef struct LpWireReader
{
	const char *data;
	Size		len;
	Size		pos;
} LpWireReader;

extern void lp_wire_put_bytes(StringInfo buf, const void *data, uint32 len);
/* NULL as length PG_UINT32_MAX */
extern void lp_wire_put_string(StringInfo buf, const char *s);
extern void lp_wire_put_u64(StringInfo buf, uint64 value);
extern void lp_wire_put_schema(StringInfo buf, const LpSchema *schema);

/* The next len bytes, in place (they stay valid as long as the reader's data). */
extern const char *lp_wire_take(LpWireReader *reader, Size len);
extern uint32 lp_wire_take_u32(LpWireReader *reader);
extern uint64 lp_wire_take_u64(LpWireReader *reader);
/* palloc'd, NUL-terminated; NULL as written */
extern char *lp_wire_take_string(LpWireReader *reader);
/* The bytes of lp_wire_put_bytes, in place; *len receives their length. */
extern const char *lp_wire_take_bytes(LpWireReader *reader, uint32 *len);
/* A schema of lp_wire_put_schema, palloc'd. */
extern void lp_wire_take_schema(LpWireReader *reader, LpSchema *schema);

#endif							/* LP_WIRE_H */
