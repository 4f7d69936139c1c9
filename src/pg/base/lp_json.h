/*
 * lp_json.h - JSON text helpers shared by the SQL functions.
 */
#ifndef LP_JSON_H
#define LP_JSON_H

#include "lib/stringinfo.h"

#include "format/lp_file.h"

/* Append a field metadata map as a JSON object (values as text, or "\x.." hex). */
extern void lp_json_append_metadata(StringInfo out, const LpKeyValue *metadata,
									uint32_t count);

#endif							/* LP_JSON_H */
