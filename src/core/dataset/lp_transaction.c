/*
 * lp_transaction.c - the transaction of a commit: serialized from the
 * request, and checked against concurrent ones (lp_transaction.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/lp_alloc.h"
#include "base/lp_protobuf.h"
#include "dataset/lp_commit_internal.h"
#include "dataset/lp_manifest_internal.h"
#include "dataset/lp_transaction.h"
#include "transaction.pb-c.h"

/* The messages of a rewrite's remapped indexes; their details those of the old entries. */
typedef struct RewrittenMessages
{
	Lance__Table__IndexSection *section;	/* base's, which the details point into */
	Lance__Table__Transaction__Rewrite__RewrittenIndex *indexes;
	Lance__Table__Transaction__Rewrite__RewrittenIndex **pointers;
	Lance__Table__UUID *uuids;	/* old and new of each */
} RewrittenMessages;

static bool
build_rewritten_indices(const LpCommitRequest *request, const LpManifest *base,
						RewrittenMessages *out, LpError *err)
{
	size_t		n = request->n_rewritten_indices;

	memset(out, 0, sizeof(*out));
	if (n == 0)
		return true;
	if (!lp_manifest_index_section(base, &out->section, err))
		return false;
	out->indexes = lp_alloc_array(n, sizeof(*out->indexes));
	out->pointers = lp_alloc_array(n, sizeof(*out->pointers));
	out->uuids = lp_alloc_array(2 * n, sizeof(*out->uuids));
	if (out->indexes == NULL || out->pointers == NULL || out->uuids == NULL)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	for (size_t i = 0; i < n; i++)
	{
		const LpRewrittenIndex *rewritten = &request->rewritten_indices[i];
		Lance__Table__Transaction__Rewrite__RewrittenIndex *message = &out->indexes[i];
		const Lance__Table__IndexMetadata *old = NULL;

		for (size_t k = 0; out->section != NULL && k < out->section->n_indices; k++)
		{
			const Lance__Table__UUID *uuid = out->section->indices[k]->uuid;

			if (uuid != NULL && uuid->uuid.len == 16 &&
				memcmp(uuid->uuid.data, rewritten->old_uuid, 16) == 0)
				old = out->section->indices[k];
		}
		if (old == NULL)
			return lp_fail(err, LP_ERR_CONFLICT,
						   "an index the rewrite remapped is gone from version %llu",
						   (unsigned long long) base->proto->version);
		lance__table__transaction__rewrite__rewritten_index__init(message);
		lance__table__uuid__init(&out->uuids[2 * i]);
		lance__table__uuid__init(&out->uuids[2 * i + 1]);
		out->uuids[2 * i].uuid.data = (uint8_t *) rewritten->old_uuid;
		out->uuids[2 * i].uuid.len = 16;
		out->uuids[2 * i + 1].uuid.data = (uint8_t *) rewritten->new_uuid;
		out->uuids[2 * i + 1].uuid.len = 16;
		message->old_id = &out->uuids[2 * i];
		message->new_id = &out->uuids[2 * i + 1];
		message->new_index_details = old->index_details;
		message->new_index_version = old->index_version_present_case ==
			LANCE__TABLE__INDEX_METADATA__INDEX_VERSION_PRESENT_INDEX_VERSION ?
			(uint32_t) old->index_version : 0;
		out->pointers[i] = message;
	}
	return true;
}

static void
free_rewritten_indices(RewrittenMessages *messages)
{
	if (messages->section != NULL)
		lp_protobuf_free((ProtobufCMessage *) messages->section);
	lp_free(messages->indexes);
	lp_free(messages->pointers);
	lp_free(messages->uuids);
}

bool
lp_transaction_build(const LpCommitRequest *request, const LpManifest *base,
					 const char *uuid, uint8_t **out, size_t *out_len,
					 LpError *err)
{
	Lance__Table__Transaction txn;
	Lance__Table__Transaction__Append append;
	Lance__Table__Transaction__DataReplacement replacement;
	Lance__Table__Transaction__DataReplacementGroup replacement_group;
	Lance__Table__Transaction__DataReplacementGroup *replacement_groups[1];
	Lance__Table__Transaction__Rewrite rewrite;
	Lance__Table__Transaction__Overwrite overwrite;
	Lance__Table__Transaction__Delete delete_op;
	Lance__Table__Transaction__Update update;
	LpCommitDeleteParts delete_parts;
	Lance__File__FileDescriptor *descriptor = NULL;
	LpNewFragment single;
	size_t		n_listed;
	const LpNewFragment *fragments = lp_commit_request_fragments(request, &single, &n_listed);
	Lance__Table__Transaction__Rewrite__RewriteGroup *groups = NULL;
	Lance__Table__Transaction__Rewrite__RewriteGroup **group_pointers = NULL;
	Lance__Table__DataFragment *new_fragments = NULL;
	Lance__Table__DataFragment **new_fragment_pointers = NULL;
	Lance__Table__DataFile *new_files = NULL;
	Lance__Table__DataFile **new_file_pointers = NULL;
	Lance__Table__DataFragment ***old_fragments = NULL;
	RewrittenMessages rewritten;
	size_t		n_new;
	size_t		len;
	bool		ok = false;

	if (!lp_commit_count_new_fragments(request, &n_new, err))
		return false;

	memset(&delete_parts, 0, sizeof(delete_parts));
	memset(&rewritten, 0, sizeof(rewritten));
	lance__table__transaction__init(&txn);
	txn.read_version = request->read_version;
	txn.uuid = (char *) uuid;

	new_files = lp_alloc_array(n_new + 1, sizeof(Lance__Table__DataFile));
	new_file_pointers = lp_alloc_array(n_new + 1, sizeof(Lance__Table__DataFile *));
	new_fragments = lp_alloc_array(n_new + 1, sizeof(Lance__Table__DataFragment));
	new_fragment_pointers = lp_alloc_array(n_new + 1, sizeof(Lance__Table__DataFragment *));
	if (new_files == NULL || new_file_pointers == NULL ||
		new_fragments == NULL || new_fragment_pointers == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n_new; i++)
	{
		const LpNewDataFile *file = request->kind == LP_COMMIT_REWRITE ?
			&request->groups[i].file : request->kind == LP_COMMIT_REPLACE ?
			&request->file : &fragments[i].file;

		lp_commit_init_data_file(&new_files[i], file);
		new_file_pointers[i] = &new_files[i];
		/*
		 * New fragments carry id 0: Lance assigns ids when it applies them;
		 * those of a rewrite that remapped indexes were reserved.
		 */
		lance__table__data_fragment__init(&new_fragments[i]);
		if (request->kind == LP_COMMIT_REWRITE && request->n_rewritten_indices > 0)
			new_fragments[i].id = request->first_new_fragment_id + i;
		new_fragments[i].n_files = 1;
		new_fragments[i].files = &new_file_pointers[i];
		new_fragments[i].physical_rows = request->kind == LP_COMMIT_REWRITE ?
			request->groups[i].physical_rows : request->kind == LP_COMMIT_REPLACE ?
			request->physical_rows : fragments[i].physical_rows;
		new_fragment_pointers[i] = &new_fragments[i];
	}

	/* the updated fragments as the new version has them, as Lance records them */
	if ((request->kind == LP_COMMIT_DELETE || request->kind == LP_COMMIT_UPDATE) &&
		!lp_commit_build_delete_parts(base, request, &delete_parts, err))
		goto done;

	switch (request->kind)
	{
		case LP_COMMIT_APPEND:
			lance__table__transaction__append__init(&append);
			append.n_fragments = n_new;
			append.fragments = new_fragment_pointers;
			txn.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_APPEND;
			txn.append = &append;
			break;
		case LP_COMMIT_REPLACE:
			lance__table__transaction__data_replacement__init(&replacement);
			lance__table__transaction__data_replacement_group__init(&replacement_group);
			replacement_group.fragment_id = request->fragment_id;
			replacement_group.new_file = &new_files[0];
			replacement_groups[0] = &replacement_group;
			replacement.n_replacements = 1;
			replacement.replacements = replacement_groups;
			txn.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_DATA_REPLACEMENT;
			txn.data_replacement = &replacement;
			break;
		case LP_COMMIT_REWRITE:
			groups = lp_alloc_array(n_new, sizeof(*groups));
			group_pointers = lp_alloc_array(n_new, sizeof(*group_pointers));
			old_fragments = lp_alloc_array(n_new, sizeof(*old_fragments));
			if (groups == NULL || group_pointers == NULL || old_fragments == NULL)
			{
				lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
				goto done;
			}
			for (size_t i = 0; i < n_new; i++)
			{
				const LpRewriteGroup *group = &request->groups[i];

				if (group->n_old == 0 || group->n_old > base->proto->n_fragments)
				{
					lp_fail(err, LP_ERR_INVALID_ARGUMENT,
							"rewrite group %zu names %zu old fragments", i, group->n_old);
					goto done;
				}
				old_fragments[i] = lp_alloc_array(group->n_old, sizeof(Lance__Table__DataFragment *));
				if (old_fragments[i] == NULL)
				{
					lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
					goto done;
				}
				for (size_t j = 0; j < group->n_old; j++)
				{
					old_fragments[i][j] = lp_manifest_find_fragment(base->proto,
																	group->old_fragment_ids[j]);
					if (old_fragments[i][j] == NULL)
					{
						lp_fail(err, LP_ERR_INVALID_ARGUMENT,
								"fragment %llu does not exist in version %llu",
								(unsigned long long) group->old_fragment_ids[j],
								(unsigned long long) base->proto->version);
						goto done;
					}
				}
				lance__table__transaction__rewrite__rewrite_group__init(&groups[i]);
				groups[i].n_old_fragments = group->n_old;
				groups[i].old_fragments = old_fragments[i];
				groups[i].n_new_fragments = 1;
				groups[i].new_fragments = &new_fragment_pointers[i];
				group_pointers[i] = &groups[i];
			}
			lance__table__transaction__rewrite__init(&rewrite);
			rewrite.n_groups = n_new;
			rewrite.groups = group_pointers;
			if (!build_rewritten_indices(request, base, &rewritten, err))
				goto done;
			rewrite.n_rewritten_indices = request->n_rewritten_indices;
			rewrite.rewritten_indices = rewritten.pointers;
			txn.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_REWRITE;
			txn.rewrite = &rewrite;
			break;
		case LP_COMMIT_OVERWRITE:
			descriptor = lp_commit_schema_message(request->schema, err);
			if (descriptor == NULL)
				goto done;
			lance__table__transaction__overwrite__init(&overwrite);
			overwrite.n_fragments = n_new;
			overwrite.fragments = new_fragment_pointers;
			overwrite.n_schema = descriptor->schema->n_fields;
			overwrite.schema = descriptor->schema->fields;
			/* both are map<string, bytes>: the same entries on the wire */
			overwrite.n_schema_metadata = descriptor->schema->n_metadata;
			overwrite.schema_metadata = (Lance__Table__Transaction__Overwrite__SchemaMetadataEntry **)
				descriptor->schema->metadata;
			txn.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_OVERWRITE;
			txn.overwrite = &overwrite;
			break;
		case LP_COMMIT_DELETE:
			lance__table__transaction__delete__init(&delete_op);
			delete_op.n_updated_fragments = delete_parts.n_updated;
			delete_op.updated_fragments = delete_parts.updated;
			delete_op.n_deleted_fragment_ids = delete_parts.n_deleted;
			delete_op.deleted_fragment_ids = delete_parts.deleted_ids;
			delete_op.predicate = (char *) (request->predicate != NULL ?
											request->predicate : protobuf_c_empty_string);
			txn.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_DELETE;
			txn.delete_ = &delete_op;
			break;
		case LP_COMMIT_UPDATE:
			lance__table__transaction__update__init(&update);
			update.n_removed_fragment_ids = delete_parts.n_deleted;
			update.removed_fragment_ids = delete_parts.deleted_ids;
			update.n_updated_fragments = delete_parts.n_updated;
			update.updated_fragments = delete_parts.updated;
			update.n_new_fragments = n_new;
			update.new_fragments = new_fragment_pointers;
			txn.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_UPDATE;
			txn.update = &update;
			break;
	}

	len = protobuf_c_message_get_packed_size((const ProtobufCMessage *) &txn);
	*out = lp_alloc(len > 0 ? len : 1);
	if (*out == NULL)
	{
		lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
		goto done;
	}
	protobuf_c_message_pack((const ProtobufCMessage *) &txn, *out);
	*out_len = len;
	ok = true;

done:
	lp_protobuf_free((ProtobufCMessage *) descriptor);
	free_rewritten_indices(&rewritten);
	lp_commit_free_delete_parts(&delete_parts);
	if (old_fragments != NULL)
		for (size_t i = 0; i < n_new; i++)
			lp_free(old_fragments[i]);
	lp_free(old_fragments);
	lp_free(groups);
	lp_free(group_pointers);
	lp_free(new_files);
	lp_free(new_file_pointers);
	lp_free(new_fragments);
	lp_free(new_fragment_pointers);
	return ok;
}

static bool
request_touches(const LpCommitRequest *request, uint64_t fragment_id)
{
	if (request->kind == LP_COMMIT_REPLACE)
		return request->fragment_id == fragment_id;
	if (request->kind == LP_COMMIT_DELETE || request->kind == LP_COMMIT_UPDATE)
		for (size_t i = 0; i < request->n_deletes; i++)
			if (request->deletes[i].fragment_id == fragment_id)
				return true;
	if (request->kind == LP_COMMIT_REWRITE)
		for (size_t i = 0; i < request->n_groups; i++)
			for (size_t j = 0; j < request->groups[i].n_old; j++)
				if (request->groups[i].old_fragment_ids[j] == fragment_id)
					return true;
	return false;
}

static bool
fragments_touched(const LpCommitRequest *request,
				  Lance__Table__DataFragment *const *fragments, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (request_touches(request, fragments[i]->id))
			return true;
	return false;
}

static bool
ids_touched(const LpCommitRequest *request, const uint64_t *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (request_touches(request, ids[i]))
			return true;
	return false;
}

/* Operations of newer Lance versions, which protobuf-c keeps as unknown fields. */
#define LP_OPERATION_DATA_OVERLAY 115
#define LP_OPERATION_COMPOSITE 116
/* The operation oneof's fields start here (Append); the fields below are the transaction's own. */
#define LP_FIRST_OPERATION_FIELD 100
#define LP_OPERATION_NAME_SIZE 64

/*
 * The name of an operation this file does not implement: the first unknown
 * length-delimited field in the operation oneof's range.
 */
static const char *
unknown_operation_name(const Lance__Table__Transaction *transaction,
					   char name[LP_OPERATION_NAME_SIZE])
{
	for (size_t i = 0; i < transaction->base.n_unknown_fields; i++)
	{
		const ProtobufCMessageUnknownField *field = &transaction->base.unknown_fields[i];

		if (field->tag < LP_FIRST_OPERATION_FIELD ||
			field->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED)
			continue;
		if (field->tag == LP_OPERATION_DATA_OVERLAY)
			return "DataOverlay";
		if (field->tag == LP_OPERATION_COMPOSITE)
			return "CompositeOperation";
		snprintf(name, LP_OPERATION_NAME_SIZE, "unknown operation (field %u)", field->tag);
		return name;
	}
	return "transaction without an operation";
}

static const char *
operation_name(const Lance__Table__Transaction *transaction, char name[LP_OPERATION_NAME_SIZE])
{
	switch (transaction->operation_case)
	{
		case LANCE__TABLE__TRANSACTION__OPERATION_APPEND:
			return "Append";
		case LANCE__TABLE__TRANSACTION__OPERATION_DELETE:
			return "Delete";
		case LANCE__TABLE__TRANSACTION__OPERATION_OVERWRITE:
			return "Overwrite";
		case LANCE__TABLE__TRANSACTION__OPERATION_CREATE_INDEX:
			return "CreateIndex";
		case LANCE__TABLE__TRANSACTION__OPERATION_REWRITE:
			return "Rewrite";
		case LANCE__TABLE__TRANSACTION__OPERATION_MERGE:
			return "Merge";
		case LANCE__TABLE__TRANSACTION__OPERATION_RESTORE:
			return "Restore";
		case LANCE__TABLE__TRANSACTION__OPERATION_RESERVE_FRAGMENTS:
			return "ReserveFragments";
		case LANCE__TABLE__TRANSACTION__OPERATION_UPDATE:
			return "Update";
		case LANCE__TABLE__TRANSACTION__OPERATION_PROJECT:
			return "Project";
		case LANCE__TABLE__TRANSACTION__OPERATION_UPDATE_CONFIG:
			return "UpdateConfig";
		case LANCE__TABLE__TRANSACTION__OPERATION_DATA_REPLACEMENT:
			return "DataReplacement";
		case LANCE__TABLE__TRANSACTION__OPERATION_UPDATE_MEM_WAL_STATE:
			return "UpdateMemWalState";
		case LANCE__TABLE__TRANSACTION__OPERATION_CLONE:
			return "Clone";
		case LANCE__TABLE__TRANSACTION__OPERATION_UPDATE_BASES:
			return "UpdateBases";
		default:
			return unknown_operation_name(transaction, name);
	}
}

/*
 * The compatibility rules of Lance's conflict resolver, for the operations
 * made here, resolved to "conflict" wherever Lance looks closer than
 * fragment ids (index coverage of replaced columns, config keys) or rebases
 * (two deletes of one fragment: Lance merges their deletion files).
 */
static bool
operations_conflict(const LpCommitRequest *request,
					const Lance__Table__Transaction *theirs)
{
	/* not even an overwrite: what an unknown operation changed may outlive it */
	if (theirs->operation_case == LANCE__TABLE__TRANSACTION__OPERATION__NOT_SET)
		return true;
	/* an overwrite replaces everything, whatever came in between */
	if (request->kind == LP_COMMIT_OVERWRITE)
		return false;
	switch (theirs->operation_case)
	{
		case LANCE__TABLE__TRANSACTION__OPERATION_APPEND:
		case LANCE__TABLE__TRANSACTION__OPERATION_RESERVE_FRAGMENTS:
		case LANCE__TABLE__TRANSACTION__OPERATION_UPDATE_CONFIG:
		case LANCE__TABLE__TRANSACTION__OPERATION_UPDATE_BASES:
			return false;
		case LANCE__TABLE__TRANSACTION__OPERATION_CREATE_INDEX:
			/* an index skips deleted rows when it is read, and covers no new fragment */
			return request->kind != LP_COMMIT_APPEND && request->kind != LP_COMMIT_DELETE &&
				request->kind != LP_COMMIT_UPDATE;
		case LANCE__TABLE__TRANSACTION__OPERATION_DELETE:
			return ids_touched(request, theirs->delete_->deleted_fragment_ids,
							   theirs->delete_->n_deleted_fragment_ids) ||
				fragments_touched(request, theirs->delete_->updated_fragments,
								  theirs->delete_->n_updated_fragments);
		case LANCE__TABLE__TRANSACTION__OPERATION_UPDATE:
			return ids_touched(request, theirs->update->removed_fragment_ids,
							   theirs->update->n_removed_fragment_ids) ||
				fragments_touched(request, theirs->update->updated_fragments,
								  theirs->update->n_updated_fragments);
		case LANCE__TABLE__TRANSACTION__OPERATION_REWRITE:
			if (fragments_touched(request, theirs->rewrite->old_fragments,
								  theirs->rewrite->n_old_fragments))
				return true;
			for (size_t i = 0; i < theirs->rewrite->n_groups; i++)
				if (fragments_touched(request, theirs->rewrite->groups[i]->old_fragments,
									  theirs->rewrite->groups[i]->n_old_fragments))
					return true;
			return false;
		case LANCE__TABLE__TRANSACTION__OPERATION_DATA_REPLACEMENT:
			for (size_t i = 0; i < theirs->data_replacement->n_replacements; i++)
				if (request_touches(request,
									theirs->data_replacement->replacements[i]->fragment_id))
					return true;
			return false;
		default:
			/* Overwrite, Restore, Merge, Project, UpdateMemWalState, Clone */
			return true;
	}
}

bool
lp_transaction_check_conflict(const LpCommitRequest *request,
							  const uint8_t *transaction, size_t transaction_len,
							  uint64_t version, LpError *err)
{
	Lance__Table__Transaction *theirs;
	LpUnpackResult result;
	bool		conflict;
	char		name[LP_OPERATION_NAME_SIZE];

	result = lp_protobuf_unpack(&lance__table__transaction__descriptor,
								transaction, transaction_len,
								(ProtobufCMessage **) &theirs);
	if (result == LP_UNPACK_NO_MEMORY)
		return lp_fail(err, LP_ERR_NO_MEMORY, "out of memory");
	if (result != LP_UNPACK_OK)
		return lp_fail(err, LP_ERR_CORRUPT, "transaction of version %llu %s",
					   (unsigned long long) version, lp_unpack_result_text(result));
	conflict = operations_conflict(request, theirs);
	if (conflict)
		lp_fail(err, LP_ERR_CONFLICT,
				"commit conflicts with the concurrent %s of version %llu",
				operation_name(theirs, name),
				(unsigned long long) version);
	if (conflict && theirs->operation_case == LANCE__TABLE__TRANSACTION__OPERATION__NOT_SET)
		lp_error_detail(err, "lance_parts does not implement this operation, so it never rebases a commit over it.");
	lp_protobuf_free((ProtobufCMessage *) theirs);
	return !conflict;
}
