/*
 * lp_protobuf.c - protobuf-c unpacking through lp_alloc, with a nesting
 * limit checked before protobuf-c recurses.
 */
#include <stdbool.h>

#include "base/lp_alloc.h"
#include "base/lp_protobuf.h"

#define WIRE_VARINT 0
#define WIRE_FIXED64 1
#define WIRE_LENGTH_DELIMITED 2
#define WIRE_FIXED32 5

/* Remembers whether the allocation hook failed during one unpack. */
typedef struct UnpackState
{
	bool		out_of_memory;
} UnpackState;

static void *
protobuf_alloc(void *allocator_data, size_t size)
{
	(void) allocator_data;
	return lp_alloc(size);
}

static void
protobuf_free(void *allocator_data, void *pointer)
{
	(void) allocator_data;
	lp_free(pointer);
}

static void *
tracking_alloc(void *allocator_data, size_t size)
{
	void	   *pointer = lp_alloc(size);

	if (pointer == NULL)
		((UnpackState *) allocator_data)->out_of_memory = true;
	return pointer;
}

ProtobufCAllocator *
lp_protobuf_allocator(void)
{
	/* protobuf-c wants a non-const pointer but never writes through it. */
	static ProtobufCAllocator allocator = {protobuf_alloc, protobuf_free, NULL};

	return &allocator;
}

static bool
read_varint(const uint8_t **cursor, const uint8_t *end, uint64_t *value)
{
	uint64_t	result = 0;

	for (int shift = 0; shift < 64; shift += 7)
	{
		uint8_t		byte;

		if (*cursor >= end)
			return false;
		byte = *(*cursor)++;
		result |= (uint64_t) (byte & 0x7f) << shift;
		if ((byte & 0x80) == 0)
		{
			*value = result;
			return true;
		}
	}
	return false;
}

/*
 * Walk the fields of one message; recurse into the fields the descriptor
 * declares as messages.  Unknown fields are skipped, as protobuf-c does.
 */
static LpUnpackResult
check_nesting(const ProtobufCMessageDescriptor *descriptor,
			  const uint8_t *data, size_t len, int depth)
{
	const uint8_t *cursor = data;
	const uint8_t *end = data + len;

	if (depth > LP_PROTOBUF_MAX_DEPTH)
		return LP_UNPACK_TOO_DEEP;
	while (cursor < end)
	{
		uint64_t	tag;
		uint64_t	length;
		const ProtobufCFieldDescriptor *field;
		LpUnpackResult result;

		if (!read_varint(&cursor, end, &tag) || (tag >> 3) == 0 ||
			(tag >> 3) > UINT32_MAX)
			return LP_UNPACK_MALFORMED;
		switch (tag & 7)
		{
			case WIRE_VARINT:
				if (!read_varint(&cursor, end, &length))
					return LP_UNPACK_MALFORMED;
				break;
			case WIRE_FIXED64:
				if (end - cursor < 8)
					return LP_UNPACK_MALFORMED;
				cursor += 8;
				break;
			case WIRE_FIXED32:
				if (end - cursor < 4)
					return LP_UNPACK_MALFORMED;
				cursor += 4;
				break;
			case WIRE_LENGTH_DELIMITED:
				if (!read_varint(&cursor, end, &length) ||
					length > (uint64_t) (end - cursor))
					return LP_UNPACK_MALFORMED;
				field = protobuf_c_message_descriptor_get_field(descriptor,
																(unsigned) (tag >> 3));
				if (field != NULL && field->type == PROTOBUF_C_TYPE_MESSAGE)
				{
					result = check_nesting(field->descriptor, cursor,
										   (size_t) length, depth + 1);
					if (result != LP_UNPACK_OK)
						return result;
				}
				cursor += length;
				break;
			default:
				/* groups are not used by proto3 */
				return LP_UNPACK_MALFORMED;
		}
	}
	return LP_UNPACK_OK;
}

LpUnpackResult
lp_protobuf_unpack(const ProtobufCMessageDescriptor *descriptor,
				   const uint8_t *data, size_t len,
				   ProtobufCMessage **message)
{
	static const uint8_t empty[1];
	UnpackState state = {false};
	ProtobufCAllocator allocator = {tracking_alloc, protobuf_free, &state};
	LpUnpackResult result;

	/* never form pointer arithmetic on NULL */
	if (data == NULL)
		data = empty;
	*message = NULL;
	result = check_nesting(descriptor, data, len, 1);
	if (result != LP_UNPACK_OK)
		return result;
	*message = protobuf_c_message_unpack(descriptor, &allocator, len, data);
	if (*message != NULL)
		return LP_UNPACK_OK;
	return state.out_of_memory ? LP_UNPACK_NO_MEMORY : LP_UNPACK_MALFORMED;
}

void
lp_protobuf_free(ProtobufCMessage *message)
{
	if (message != NULL)
		protobuf_c_message_free_unpacked(message, lp_protobuf_allocator());
}

const char *
lp_unpack_result_text(LpUnpackResult result)
{
	switch (result)
	{
		case LP_UNPACK_OK:
			return "is valid";
		case LP_UNPACK_MALFORMED:
			return "is malformed";
		case LP_UNPACK_TOO_DEEP:
			return "is nested too deeply";
		case LP_UNPACK_NO_MEMORY:
			return "could not be unpacked: out of memory";
	}
	return "is malformed";
}
