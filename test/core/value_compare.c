/*
 * value_compare.c - decoded values against the canonical JSON encoding of
 * test/reference/values.cjs.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "value_compare.h"

static int64_t
read_signed(const uint8_t *p, uint32_t bytes)
{
	uint64_t	value = 0;

	for (uint32_t i = 0; i < bytes; i++)
		value |= (uint64_t) p[i] << (8 * i);
	if (bytes < 8 && (value >> (8 * bytes - 1)) & 1)
		value |= ~(uint64_t) 0 << (8 * bytes);
	return (int64_t) value;
}

static uint64_t
read_unsigned(const uint8_t *p, uint32_t bytes)
{
	uint64_t	value = 0;

	for (uint32_t i = 0; i < bytes; i++)
		value |= (uint64_t) p[i] << (8 * i);
	return value;
}

void
format_date(int64_t days, char *out, size_t size)
{
	/* civil-from-days (proleptic Gregorian) */
	int64_t		z = days + 719468;
	int64_t		era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t		doe = z - era * 146097;
	int64_t		yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t		y = yoe + era * 400;
	int64_t		doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t		mp = (5 * doy + 2) / 153;
	int64_t		d = doy - (153 * mp + 2) / 5 + 1;
	int64_t		m = mp < 10 ? mp + 3 : mp - 9;

	if (m <= 2)
		y++;
	snprintf(out, size, "%04" PRId64 "-%02" PRId64 "-%02" PRId64, y, m, d);
}

void
format_micros(int64_t micros, char *out, size_t size)
{
	int64_t		per_day = INT64_C(86400000000);
	int64_t		days = micros / per_day;
	int64_t		rest = micros % per_day;
	int64_t		seconds;
	int64_t		fraction;
	char		date[32];
	size_t		len;

	if (rest < 0)
	{
		rest += per_day;
		days--;
	}
	seconds = rest / 1000000;
	fraction = rest % 1000000;
	format_date(days, date, sizeof(date));
	snprintf(out, size, "%s %02" PRId64 ":%02" PRId64 ":%02" PRId64, date, seconds / 3600,
			 (seconds / 60) % 60, seconds % 60);
	if (fraction != 0)
	{
		len = strlen(out);
		snprintf(out + len, size - len, ".%06" PRId64, fraction);
		len = strlen(out);
		while (out[len - 1] == '0')
			out[--len] = '\0';
	}
}

void
format_decimal128(const uint8_t *bytes, int32_t scale, char *out, size_t size)
{
	unsigned __int128 value = 0;
	bool		negative;
	char		digits[64];
	int			n = 0;
	size_t		pos = 0;

	for (int i = 15; i >= 0; i--)
		value = (value << 8) | bytes[i];
	negative = (bytes[15] & 0x80) != 0;
	if (negative)
		value = ~value + 1;
	do
	{
		digits[n++] = (char) ('0' + (int) (value % 10));
		value /= 10;
	} while (value != 0);
	while (scale > 0 && n < scale + 1)
		digits[n++] = '0';
	if (negative && pos + 1 < size)
		out[pos++] = '-';
	for (int i = n - 1; i >= 0 && pos + 2 < size; i--)
	{
		out[pos++] = digits[i];
		if (scale > 0 && i == scale)
			out[pos++] = '.';
	}
	for (int i = 0; scale < 0 && i < -scale && pos + 1 < size; i++)
		out[pos++] = '0';
	out[pos] = '\0';
}

static bool
differ(char *what, size_t what_size, const char *fmt, const char *got, const JsonValue *expected)
{
	snprintf(what, what_size, fmt, got,
			 expected->kind == JSON_NULL ? "null" : expected->text ? expected->text : "(container)");
	return false;
}

static bool
compare_text(const char *got, size_t got_len, const JsonValue *expected, char *what,
			 size_t what_size)
{
	char		shown[128];

	if (expected->kind == JSON_STRING && expected->len == got_len &&
		memcmp(expected->text, got, got_len) == 0)
		return true;
	snprintf(shown, sizeof(shown), "%.*s", (int) (got_len < 100 ? got_len : 100), got);
	return differ(what, what_size, "got \"%s\", expected %s", shown, expected);
}

static bool
compare_float(double got, bool single, const JsonValue *expected, char *what, size_t what_size)
{
	char		shown[64];
	double		want;

	snprintf(shown, sizeof(shown), "%.17g", got);
	if (expected->kind == JSON_STRING)
	{
		if (strcmp(expected->text, "NaN") == 0 && isnan(got))
			return true;
		if (strcmp(expected->text, "Infinity") == 0 && isinf(got) && got > 0)
			return true;
		if (strcmp(expected->text, "-Infinity") == 0 && isinf(got) && got < 0)
			return true;
		if (strcmp(expected->text, "-0") == 0 && got == 0 && signbit(got))
			return true;
		return differ(what, what_size, "got %s, expected %s", shown, expected);
	}
	if (expected->kind != JSON_NUMBER || (got == 0 && signbit(got)))
		return differ(what, what_size, "got %s, expected %s", shown, expected);
	want = strtod(expected->text, NULL);
	if (single ? (float) want == (float) got : want == got)
		return true;
	return differ(what, what_size, "got %s, expected %s", shown, expected);
}

static int64_t
to_micros(int64_t raw, LpTimeUnit unit)
{
	switch (unit)
	{
		case LP_UNIT_SECOND:
			return raw * 1000000;
		case LP_UNIT_MILLI:
			return raw * 1000;
		case LP_UNIT_MICRO:
			return raw;
		default:
			return raw / 1000;
	}
}

bool
value_matches(const LpArray *array, uint64_t index, const JsonValue *expected, char *what,
			  size_t what_size)
{
	const LpType *type = array->type;
	uint32_t	width = lp_type_byte_width(type);
	const uint8_t *p = array->values ? array->values + index * width : NULL;
	char		text[256];

	if (!lp_array_is_valid(array, index) || type->id == LP_TYPE_NULL)
	{
		if (expected->kind == JSON_NULL)
			return true;
		return differ(what, what_size, "got %s, expected %s", "null", expected);
	}
	if (expected->kind == JSON_NULL)
	{
		snprintf(what, what_size, "got a value, expected null");
		return false;
	}
	switch (type->id)
	{
		case LP_TYPE_BOOL:
			{
				bool		got = lp_bit_get(array->values, index);

				if (expected->kind == JSON_BOOL && expected->boolean == got)
					return true;
				return differ(what, what_size, "got %s, expected %s", got ? "true" : "false",
							  expected);
			}
		case LP_TYPE_INT8:
		case LP_TYPE_INT16:
		case LP_TYPE_INT32:
		case LP_TYPE_UINT8:
		case LP_TYPE_UINT16:
		case LP_TYPE_UINT32:
			{
				bool		is_signed = type->id <= LP_TYPE_INT64;
				long long	got = is_signed ? (long long) read_signed(p, width)
				: (long long) read_unsigned(p, width);

				snprintf(text, sizeof(text), "%lld", got);
				if (expected->kind == JSON_NUMBER && strtoll(expected->text, NULL, 10) == got)
					return true;
				return differ(what, what_size, "got %s, expected %s", text, expected);
			}
		case LP_TYPE_INT64:
			snprintf(text, sizeof(text), "%" PRId64, read_signed(p, 8));
			return compare_text(text, strlen(text), expected, what, what_size);
		case LP_TYPE_UINT64:
			snprintf(text, sizeof(text), "%" PRIu64, read_unsigned(p, 8));
			return compare_text(text, strlen(text), expected, what, what_size);
		case LP_TYPE_FLOAT:
			{
				float		got;

				memcpy(&got, p, 4);
				return compare_float(got, true, expected, what, what_size);
			}
		case LP_TYPE_DOUBLE:
			{
				double		got;

				memcpy(&got, p, 8);
				return compare_float(got, false, expected, what, what_size);
			}
		case LP_TYPE_DECIMAL128:
			format_decimal128(p, type->scale, text, sizeof(text));
			return compare_text(text, strlen(text), expected, what, what_size);
		case LP_TYPE_DATE32:
			format_date(read_signed(p, 4), text, sizeof(text));
			return compare_text(text, strlen(text), expected, what, what_size);
		case LP_TYPE_DATE64:
			format_date(read_signed(p, 8) / 86400000, text, sizeof(text));
			return compare_text(text, strlen(text), expected, what, what_size);
		case LP_TYPE_TIMESTAMP:
			format_micros(to_micros(read_signed(p, 8), type->unit), text, sizeof(text));
			if (type->timezone != NULL)
				strcat(text, "+00");
			return compare_text(text, strlen(text), expected, what, what_size);
		case LP_TYPE_STRING:
		case LP_TYPE_LARGE_STRING:
			/* data is NULL when every value is empty */
			return compare_text(array->data ? (const char *) array->data + array->offsets[index] : "",
								array->offsets[index + 1] - array->offsets[index],
								expected, what, what_size);
		case LP_TYPE_BINARY:
		case LP_TYPE_LARGE_BINARY:
		case LP_TYPE_FIXED_SIZE_BINARY:
			{
				const uint8_t *bytes;
				uint64_t	len;
				char	   *hex;
				bool		same;

				if (type->id == LP_TYPE_FIXED_SIZE_BINARY)
				{
					bytes = p;
					len = width;
				}
				else
				{
					bytes = array->data ? array->data + array->offsets[index] : NULL;
					len = array->offsets[index + 1] - array->offsets[index];
				}
				hex = malloc(2 * len + 3);
				strcpy(hex, "\\x");
				for (uint64_t i = 0; i < len; i++)
					sprintf(hex + 2 + 2 * i, "%02x", bytes[i]);
				same = compare_text(hex, 2 + 2 * len, expected, what, what_size);
				free(hex);
				return same;
			}
		case LP_TYPE_FIXED_SIZE_LIST:
		case LP_TYPE_LIST:
		case LP_TYPE_LARGE_LIST:
			{
				uint64_t	start;
				uint64_t	end;

				if (type->id == LP_TYPE_FIXED_SIZE_LIST)
				{
					start = index * (uint64_t) type->fixed_size;
					end = start + (uint64_t) type->fixed_size;
				}
				else
				{
					start = array->offsets[index];
					end = array->offsets[index + 1];
				}
				if (expected->kind != JSON_ARRAY || expected->count != end - start)
				{
					snprintf(what, what_size, "got a list of %llu items, expected %s of %zu",
							 (unsigned long long) (end - start),
							 expected->kind == JSON_ARRAY ? "a list" : "no list", expected->count);
					return false;
				}
				for (uint64_t i = start; i < end; i++)
					if (!value_matches(array->children[0], i, &expected->items[i - start], what,
									   what_size))
						return false;
				return true;
			}
		case LP_TYPE_STRUCT:
			if (expected->kind != JSON_OBJECT || expected->count != array->num_children)
			{
				snprintf(what, what_size, "got a struct of %u members, expected another shape",
						 array->num_children);
				return false;
			}
			for (uint32_t i = 0; i < array->num_children; i++)
			{
				const JsonValue *member = json_get(expected, type->children[i]->name);

				if (member == NULL)
				{
					snprintf(what, what_size, "member \"%s\" is not expected",
							 type->children[i]->name);
					return false;
				}
				if (!value_matches(array->children[i], index, member, what, what_size))
					return false;
			}
			return true;
		default:
			snprintf(what, what_size, "type %s cannot be compared", lp_type_id_name(type->id));
			return false;
	}
}
