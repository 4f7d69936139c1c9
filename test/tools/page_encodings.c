/*
 * page_encodings.c - print the encoding tree of every page of Lance data
 * files, one line per column and distinct tree, to see which encodings a
 * writer really emitted (test/reference/README.md lists them).
 *
 * Usage: page_encodings FILE.lance...
 * Output: "<file> column <c> (<field>) pages <n>: <tree>" where the tree
 * names each set oneof member and, in brackets, its sub-messages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "format/lp_columns.h"
#include "decode/lp_decode.h"
#include "decode/lp_decode_internal.h"
#include "format/lp_file.h"
#include "base/lp_protobuf.h"

#define MAX_TREE 4096

static void
append(char *out, const char *text)
{
	size_t		len = strlen(out);

	if (len + strlen(text) + 1 < MAX_TREE)
		strcat(out, text);
}

/* Names of the message fields that are set, recursing into sub-messages. */
static void
describe(const ProtobufCMessage *message, char *out)
{
	const ProtobufCMessageDescriptor *desc = message->descriptor;
	bool		first = true;

	for (unsigned i = 0; i < desc->n_fields; i++)
	{
		const ProtobufCFieldDescriptor *field = &desc->fields[i];
		const char *base = (const char *) message;
		const void *member = base + field->offset;

		if (field->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		{
			if (*(const uint32_t *) (base + field->quantifier_offset) != field->id)
				continue;
		}
		if (field->label == PROTOBUF_C_LABEL_REPEATED)
		{
			size_t		n = *(const size_t *) (base + field->quantifier_offset);
			ProtobufCMessage *const *items = *(ProtobufCMessage *const *const *) member;

			for (size_t k = 0; k < n; k++)
			{
				append(out, first ? "" : " ");
				first = false;
				append(out, field->name);
				append(out, "{");
				describe(items[k], out);
				append(out, "}");
			}
			continue;
		}
		if (*(ProtobufCMessage *const *) member == NULL)
			continue;
		append(out, first ? "" : " ");
		first = false;
		append(out, field->name);
		append(out, "{");
		describe(*(ProtobufCMessage *const *) member, out);
		append(out, "}");
	}
}

static int
dump_file(const char *path)
{
	FILE	   *f = fopen(path, "rb");
	long		size;
	uint8_t    *bytes;
	LpInput    *input;
	LpFile	   *file;
	LpError		err;

	if (f == NULL)
	{
		fprintf(stderr, "cannot open %s\n", path);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, 0, SEEK_SET);
	bytes = malloc((size_t) size);
	if (bytes == NULL || fread(bytes, 1, (size_t) size, f) != (size_t) size)
	{
		fclose(f);
		fprintf(stderr, "cannot read %s\n", path);
		return 1;
	}
	fclose(f);
	input = lp_memory_input_open(path, bytes, (uint64_t) size);
	file = lp_file_open(input, &err);
	if (file == NULL)
	{
		fprintf(stderr, "%s: %s\n", path, err.message);
		return 1;
	}
	for (uint32_t c = 0; c < file->num_columns; c++)
	{
		char		previous[MAX_TREE] = "";
		uint32_t	same = 0;
		const char *field_name = "?";

		/* The top-level field the column belongs to: the last one starting at or before it. */
		for (uint32_t fi = 0; fi < file->schema.num_fields; fi++)
		{
			uint32_t	first;

			if (file->schema.fields[fi].parent_id == -1 &&
				lp_field_first_column(file, fi, &first, &err) && first <= c)
				field_name = file->schema.fields[fi].name;
		}
		for (uint32_t p = 0; p <= file->columns[c].num_pages; p++)
		{
			char		tree[MAX_TREE] = "";
			LpPageContext ctx = {file, c, p, &err};
			ProtobufCMessage *message = NULL;

			if (p < file->columns[c].num_pages)
			{
				append(tree, file->columns[c].pages[p].layout);
				append(tree, ": ");
				if (lp_unpack_page_encoding(&ctx, &file->columns[c].pages[p], &message))
				{
					describe(message, tree);
					lp_protobuf_free(message);
				}
				else
					append(tree, err.message);
			}
			if (p > 0 && (p == file->columns[c].num_pages || strcmp(tree, previous) != 0))
			{
				printf("%s column %u (%s) pages %u: %s\n", path, c, field_name, same, previous);
				same = 0;
			}
			strcpy(previous, tree);
			same++;
		}
	}
	lp_file_free(file);
	lp_input_close(input);
	free(bytes);
	return 0;
}

int
main(int argc, char **argv)
{
	int			status = 0;

	for (int i = 1; i < argc; i++)
		status |= dump_file(argv[i]);
	return status;
}
