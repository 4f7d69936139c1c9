/*
 * lp_protobuf.h - protobuf-c on top of the core's allocation hook.
 *
 * protobuf-c recurses once per nested message while unpacking and has no
 * depth limit, so a few kilobytes of hostile input could exhaust the stack.
 * lp_protobuf_unpack therefore walks the wire format first and refuses
 * messages nested deeper than LP_PROTOBUF_MAX_DEPTH.
 */
#ifndef LP_PROTOBUF_H
#define LP_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* Far deeper than any Lance message (encoding trees are about ten deep). */
#define LP_PROTOBUF_MAX_DEPTH 64

typedef enum LpUnpackResult
{
	LP_UNPACK_OK = 0,
	LP_UNPACK_MALFORMED,		/* not a valid message of the type */
	LP_UNPACK_TOO_DEEP,			/* nested deeper than LP_PROTOBUF_MAX_DEPTH */
	LP_UNPACK_NO_MEMORY			/* the allocation hook failed */
} LpUnpackResult;

/* An allocator that routes protobuf-c through lp_alloc/lp_free. */
ProtobufCAllocator *lp_protobuf_allocator(void);

/* Unpack len bytes as a message of the given type into *message. */
LpUnpackResult lp_protobuf_unpack(const ProtobufCMessageDescriptor *descriptor,
								  const uint8_t *data, size_t len,
								  ProtobufCMessage **message);

/* Free a message returned by lp_protobuf_unpack; NULL is allowed. */
void		lp_protobuf_free(ProtobufCMessage *message);

/* Words for messages: "is malformed", "is nested too deeply", ... */
const char *lp_unpack_result_text(LpUnpackResult result);

#endif							/* LP_PROTOBUF_H */
