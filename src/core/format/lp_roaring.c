/*
 * lp_roaring.c - serialized 32-bit Roaring bitmaps: membership tests,
 * expansion into a plain bitmap, listing of members, and serialization of
 * sorted values.
 *
 * Portable format: a cookie (12346 without run containers, then a u32
 * container count; or 12347 | (count - 1) << 16, then a bitmap of which
 * containers are runs), per container a u16 key (high 16 bits) and u16
 * cardinality - 1, then u32 offsets of the containers (always without runs,
 * with runs only from 4 containers on), then the containers: runs (u16 count,
 * then (start, length - 1) pairs), bitmaps (8 KiB) when the cardinality is
 * above 4096, sorted u16 arrays otherwise.
 */
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_bytes.h"
#include "format/lp_roaring.h"

#define COOKIE_NO_RUNS 12346
#define COOKIE_NO_RUNS_HEADER 8		/* the cookie and the container count */
#define COOKIE_RUNS 12347
#define NO_OFFSET_THRESHOLD 4
#define ARRAY_LIMIT 4096
#define BITMAP_BYTES 8192

typedef enum ContainerKind
{
	CONTAINER_RUNS,
	CONTAINER_BITMAP,
	CONTAINER_ARRAY
} ContainerKind;

/* One container: its key and bytes (after the run count for run containers). */
typedef struct Container
{
	uint16_t	key;
	ContainerKind kind;
	const uint8_t *data;
	uint32_t	count;			/* runs, or array entries */
} Container;

/* Called per container in order; false stops the walk (with err set or not). */
typedef bool (*ContainerVisitor) (void *arg, const Container *container,
								  LpError *err);

static bool
malformed(LpError *err, const char *what, const char *problem)
{
	return lp_fail(err, LP_ERR_CORRUPT, "%s is malformed: %s", what, problem);
}

/*
 * Check the whole serialized bitmap and visit its containers, until the
 * visitor has seen enough (the check goes on to the end).
 */
static bool
walk_containers(const uint8_t *data, size_t len, const char *what,
				ContainerVisitor visit, void *arg, LpError *err)
{
	uint32_t	cookie;
	uint32_t	count;
	size_t		pos;
	const uint8_t *run_flags = NULL;
	size_t		headers;
	size_t		container_start;
	bool		stopped = false;

	if (len < 4)
		return malformed(err, what, "too short");
	cookie = lp_le32(data);
	if ((cookie & 0xFFFF) == COOKIE_RUNS)
	{
		count = (cookie >> 16) + 1;
		pos = 4;
		run_flags = data + pos;
		pos += (count + 7) / 8;
	}
	else if (cookie == COOKIE_NO_RUNS)
	{
		if (len < 8)
			return malformed(err, what, "too short");
		count = lp_le32(data + 4);
		pos = 8;
	}
	else
		return malformed(err, what, "unknown cookie");

	if (count > 65536 || pos > len || (len - pos) / 4 < count)
		return malformed(err, what, "container count beyond the data");
	headers = pos;
	pos += (size_t) count * 4;

	/* Containers are found by walking them in order; offsets are optional. */
	if (run_flags == NULL || count >= NO_OFFSET_THRESHOLD)
	{
		if ((len - pos) / 4 < count)
			return malformed(err, what, "offsets beyond the data");
		pos += (size_t) count * 4;
	}
	container_start = pos;

	for (uint32_t i = 0; i < count; i++)
	{
		Container	container;
		uint32_t	cardinality = (uint32_t) lp_le16(data + headers + 4 * (size_t) i + 2) + 1;
		bool		is_run = run_flags != NULL && (run_flags[i / 8] >> (i % 8)) & 1;
		size_t		size;

		container.key = lp_le16(data + headers + 4 * (size_t) i);
		/* one container per key, in key order: a membership test stops at the first */
		if (i > 0 && container.key <= lp_le16(data + headers + 4 * (size_t) (i - 1)))
			return malformed(err, what, "container keys are not ascending");
		if (is_run)
		{
			if (len - container_start < 2)
				return malformed(err, what, "run container beyond the data");
			container.kind = CONTAINER_RUNS;
			container.count = lp_le16(data + container_start);
			container.data = data + container_start + 2;
			size = 2 + (size_t) container.count * 4;
			if (len - container_start < size)
				return malformed(err, what, "run container beyond the data");
		}
		else if (cardinality > ARRAY_LIMIT)
		{
			container.kind = CONTAINER_BITMAP;
			container.count = 0;
			container.data = data + container_start;
			size = BITMAP_BYTES;
			if (len - container_start < size)
				return malformed(err, what, "bitmap container beyond the data");
		}
		else
		{
			container.kind = CONTAINER_ARRAY;
			container.count = cardinality;
			container.data = data + container_start;
			size = (size_t) cardinality * 2;
			if (len - container_start < size)
				return malformed(err, what, "array container beyond the data");
		}
		/* after the visitor stops, the rest is still checked: every reader judges the same bytes */
		if (!stopped && !visit(arg, &container, err))
		{
			if (err != NULL && err->code != LP_OK)
				return false;
			stopped = true;
		}
		container_start += size;
	}
	return true;
}

/* ---- membership --------------------------------------------------------------- */

typedef struct MembershipSearch
{
	uint32_t	value;
	bool		contains;
} MembershipSearch;

static bool
visit_for_membership(void *arg, const Container *container, LpError *err)
{
	MembershipSearch *search = arg;
	uint16_t	low = (uint16_t) search->value;

	(void) err;					/* membership tests cannot fail here */

	if (container->key != (uint16_t) (search->value >> 16))
		return true;
	switch (container->kind)
	{
		case CONTAINER_RUNS:
			for (uint32_t r = 0; r < container->count; r++)
			{
				uint32_t	start = lp_le16(container->data + 4 * (size_t) r);
				uint32_t	length = lp_le16(container->data + 4 * (size_t) r + 2);

				if (low >= start && low <= start + length)
					search->contains = true;
			}
			break;
		case CONTAINER_BITMAP:
			search->contains = (container->data[low / 8] >> (low % 8)) & 1;
			break;
		case CONTAINER_ARRAY:
			for (uint32_t k = 0; k < container->count; k++)
				if (lp_le16(container->data + 2 * (size_t) k) == low)
					search->contains = true;
			break;
	}
	return false;
}

bool
lp_roaring32_contains(const uint8_t *data, size_t len, uint32_t value,
					  bool *contains, LpError *err)
{
	MembershipSearch search = {value, false};

	*contains = false;
	lp_error_clear(err);
	if (!walk_containers(data, len, "fragment bitmap of an index",
						 visit_for_membership, &search, err))
		return false;
	*contains = search.contains;
	return true;
}

/* ---- expansion ------------------------------------------------------------------ */

/* Called for every member of a container, in ascending order; false stops with err set. */
typedef bool (*MemberVisitor) (void *arg, uint32_t value, LpError *err);

static bool
visit_members(const Container *container, const char *what, MemberVisitor visit, void *arg,
			  LpError *err)
{
	uint32_t	high = (uint32_t) container->key << 16;

	switch (container->kind)
	{
		case CONTAINER_RUNS:
			for (uint32_t r = 0; r < container->count; r++)
			{
				uint32_t	start = lp_le16(container->data + 4 * (size_t) r);
				uint32_t	length = lp_le16(container->data + 4 * (size_t) r + 2);

				if (start + length > 0xFFFF)
					return malformed(err, what, "run beyond its container");
				for (uint32_t v = start; v <= start + length; v++)
					if (!visit(arg, high | v, err))
						return false;
			}
			break;
		case CONTAINER_BITMAP:
			for (uint32_t v = 0; v < BITMAP_BYTES * 8; v++)
				if ((container->data[v / 8] >> (v % 8)) & 1 && !visit(arg, high | v, err))
					return false;
			break;
		case CONTAINER_ARRAY:
			for (uint32_t k = 0; k < container->count; k++)
				if (!visit(arg, high | lp_le16(container->data + 2 * (size_t) k), err))
					return false;
			break;
	}
	return true;
}

typedef struct Expansion
{
	uint8_t    *bitmap;
	uint64_t	num_bits;
	uint64_t	count;
	const char *what;
} Expansion;

static bool
set_member(void *arg, uint32_t value, LpError *err)
{
	Expansion  *expansion = arg;

	if (value >= expansion->num_bits)
		return lp_fail(err, LP_ERR_CORRUPT,
					   "%s holds %u, beyond its %llu rows", expansion->what, value,
					   (unsigned long long) expansion->num_bits);
	if (!((expansion->bitmap[value >> 3] >> (value & 7)) & 1))
	{
		expansion->bitmap[value >> 3] |= (uint8_t) (1 << (value & 7));
		expansion->count++;
	}
	return true;
}

static bool
visit_for_expansion(void *arg, const Container *container, LpError *err)
{
	Expansion  *expansion = arg;

	return visit_members(container, expansion->what, set_member, expansion, err);
}

bool
lp_roaring32_expand(const uint8_t *data, size_t len, const char *what,
					uint8_t *bitmap, uint64_t num_bits, uint64_t *count,
					LpError *err)
{
	Expansion	expansion = {bitmap, num_bits, 0, what};

	lp_error_clear(err);
	if (!walk_containers(data, len, what, visit_for_expansion, &expansion, err))
		return false;
	*count = expansion.count;
	return true;
}

/* ---- listing ---------------------------------------------------------------------- */

typedef struct Listing
{
	uint32_t   *values;
	size_t		count;
	size_t		capacity;
	const char *what;
} Listing;

static bool
list_member(void *arg, uint32_t value, LpError *err)
{
	Listing    *listing = arg;

	/* containers come in key order and members in order within them */
	if (listing->count > 0 && value <= listing->values[listing->count - 1])
		return malformed(err, listing->what, "members are not ascending");
	if (listing->count == listing->capacity)
	{
		size_t		capacity = listing->capacity > 0 ? listing->capacity * 2 : 256;
		uint32_t   *values = lp_alloc_array(capacity, sizeof(uint32_t));

		if (values == NULL)
			return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory reading %s", listing->what);
		if (listing->count > 0)
			memcpy(values, listing->values, listing->count * sizeof(uint32_t));
		lp_free(listing->values);
		listing->values = values;
		listing->capacity = capacity;
	}
	listing->values[listing->count++] = value;
	return true;
}

static bool
visit_for_listing(void *arg, const Container *container, LpError *err)
{
	Listing    *listing = arg;

	return visit_members(container, listing->what, list_member, listing, err);
}

bool
lp_roaring32_values(const uint8_t *data, size_t len, const char *what, uint32_t **values,
					size_t *count, LpError *err)
{
	Listing		listing = {NULL, 0, 0, what};

	*values = NULL;
	*count = 0;
	lp_error_clear(err);
	if (!walk_containers(data, len, what, visit_for_listing, &listing, err))
	{
		lp_free(listing.values);
		return false;
	}
	*values = listing.values;
	*count = listing.count;
	return true;
}

/* ---- serialization ---------------------------------------------------------- */

/* How many of the values from values[start] on share its container key. */
static size_t
container_cardinality(const uint32_t *values, size_t n, size_t start)
{
	uint32_t	key = values[start] >> 16;
	size_t		end = start;

	while (end < n && values[end] >> 16 == key)
		end++;
	return end - start;
}

/*
 * The inverse of walk_containers for the form without runs: headers, then
 * offsets (always present there), then each container as an array or, above
 * ARRAY_LIMIT values, a bitmap.
 */
bool
lp_roaring32_serialize(const uint32_t *values, size_t n, uint8_t **out, size_t *out_len,
					   LpError *err)
{
	size_t		count = 0;
	size_t		len = COOKIE_NO_RUNS_HEADER;
	size_t		cardinality;
	size_t		offsets;
	size_t		position;
	uint8_t    *data;

	*out = NULL;
	*out_len = 0;
	lp_error_clear(err);
	for (size_t i = 1; i < n; i++)
		if (values[i] <= values[i - 1])
			return lp_fail(err, LP_ERR_INVALID_ARGUMENT,
						   "values of a Roaring bitmap must be strictly ascending, but %u follows %u",
						   values[i], values[i - 1]);
	/* a container: its header, its offset and its values (at most 8 KiB) */
	for (size_t i = 0; i < n; i += cardinality)
	{
		cardinality = container_cardinality(values, n, i);
		count++;
		len += 8 + (cardinality > ARRAY_LIMIT ? BITMAP_BYTES : cardinality * 2);
	}
	data = lp_alloc0(len);
	if (data == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory serializing a Roaring bitmap");

	lp_put_le32(data, COOKIE_NO_RUNS);
	lp_put_le32(data + 4, (uint32_t) count);
	offsets = COOKIE_NO_RUNS_HEADER + 4 * count;
	position = offsets + 4 * count;
	for (size_t i = 0, c = 0; i < n; i += cardinality, c++)
	{
		uint8_t    *header = data + COOKIE_NO_RUNS_HEADER + 4 * c;

		cardinality = container_cardinality(values, n, i);
		lp_put_le16(header, (uint16_t) (values[i] >> 16));
		lp_put_le16(header + 2, (uint16_t) (cardinality - 1));
		/* below 2^32: at most 65536 containers of at most 8 KiB */
		lp_put_le32(data + offsets + 4 * c, (uint32_t) position);
		if (cardinality > ARRAY_LIMIT)
		{
			for (size_t k = 0; k < cardinality; k++)
			{
				uint16_t	low = (uint16_t) values[i + k];

				data[position + low / 8] |= (uint8_t) (1 << (low % 8));
			}
			position += BITMAP_BYTES;
		}
		else
		{
			for (size_t k = 0; k < cardinality; k++)
				lp_put_le16(data + position + 2 * k, (uint16_t) values[i + k]);
			position += cardinality * 2;
		}
	}
	*out = data;
	*out_len = len;
	return true;
}
