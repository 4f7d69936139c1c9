/*
 * fuzz_transaction.c - libFuzzer target for transaction files
 * (_transactions/<name>.txn, and the same message inline in a manifest): a
 * commit that lost version N + 1 to another writer reads the transactions
 * committed since its read version and checks each against its own request
 * (lp_transaction_check_conflict).  The first 8 input bytes choose the
 * request (its kind, the fragment it replaces or deletes from, the
 * fragments of a rewrite group); the rest is the transaction.  The answer is no conflict, a
 * conflict naming the operation, damaged input or no memory, never
 * anything else; an overwrite conflicts only with an operation lance_parts
 * does not implement (never rebased over, whatever the request), a request that
 * touches no fragment (an append) conflicts only with what conflicts with
 * every request, and an update conflicts exactly where a delete of the same
 * fragment does.  Seeds: the transaction files of the reference datasets
 * (bench/fuzz.sh) and a few in test/fuzz/corpus/fuzz_transaction.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lp_fuzz.h"
#include "dataset/lp_commit.h"

#define HEADER_BYTES 8

/*
 * Whether the answer is one of those a damaged or conflicting transaction
 * may give; *unimplemented: the conflict is with an operation lance_parts
 * does not implement.
 */
static bool
check_operation(const LpCommitRequest *request, const uint8_t *transaction, size_t len,
				bool *conflict, bool *unimplemented)
{
	LpError		err;

	*conflict = *unimplemented = false;
	if (lp_transaction_check_conflict(request, transaction, len, 7, &err))
		return true;
	*conflict = err.code == LP_ERR_CONFLICT;
	*unimplemented = *conflict && strstr(err.detail, "never rebases") != NULL;
	if (err.code != LP_ERR_CONFLICT && err.code != LP_ERR_CORRUPT && err.code != LP_ERR_NO_MEMORY)
		abort();
	return false;
}

static bool
check(const LpCommitRequest *request, const uint8_t *transaction, size_t len, bool *conflict)
{
	bool		unimplemented;

	return check_operation(request, transaction, len, conflict, &unimplemented);
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const LpCommitKind kinds[] = {LP_COMMIT_APPEND, LP_COMMIT_REPLACE, LP_COMMIT_REWRITE,
	LP_COMMIT_OVERWRITE, LP_COMMIT_DELETE, LP_COMMIT_UPDATE};
	const size_t n_kinds = sizeof(kinds) / sizeof(kinds[0]);
	uint64_t	old_ids[3];
	LpRewriteGroup group;
	LpDeleteFragment deleted;
	LpCommitRequest request;
	const uint8_t *transaction;
	size_t		len;
	bool		parsed;
	bool		conflict;
	bool		unimplemented;
	bool		append_conflict;
	bool		delete_conflict;

	if (size < HEADER_BYTES)
		return 0;
	lp_fuzz_use_bounded_allocator();
	transaction = data + HEADER_BYTES;
	len = size - HEADER_BYTES;
	memset(&request, 0, sizeof(request));
	memset(&group, 0, sizeof(group));
	memset(&deleted, 0, sizeof(deleted));
	for (int i = 0; i < 3; i++)
		old_ids[i] = data[2 + i];
	group.old_fragment_ids = old_ids;
	group.n_old = 1 + data[5] % 3;
	request.kind = kinds[data[0] % n_kinds];
	request.read_version = 6;
	request.fragment_id = data[1];
	request.groups = &group;
	request.n_groups = request.kind == LP_COMMIT_REWRITE ? 1 : 0;
	deleted.fragment_id = data[1];
	request.deletes = &deleted;
	request.n_deletes = (request.kind == LP_COMMIT_DELETE ||
							 request.kind == LP_COMMIT_UPDATE) ? 1 : 0;

	parsed = check_operation(&request, transaction, len, &conflict, &unimplemented) || conflict;
	if (request.kind == LP_COMMIT_OVERWRITE && conflict && !unimplemented)
		abort();
	/* an update deletes as a delete does */
	if (request.kind == LP_COMMIT_UPDATE)
	{
		request.kind = LP_COMMIT_DELETE;
		(void) check(&request, transaction, len, &delete_conflict);
		if (delete_conflict != conflict)
			abort();
	}
	/* what conflicts with an append (which touches no fragment) conflicts with everything but an overwrite */
	request.kind = LP_COMMIT_APPEND;
	request.n_groups = 0;
	request.n_deletes = 0;
	if ((check(&request, transaction, len, &append_conflict) || append_conflict) != parsed)
		abort();
	if (append_conflict)
	{
		request.kind = kinds[data[0] % n_kinds];
		request.n_groups = request.kind == LP_COMMIT_REWRITE ? 1 : 0;
		request.n_deletes = (request.kind == LP_COMMIT_DELETE ||
							 request.kind == LP_COMMIT_UPDATE) ? 1 : 0;
		if (request.kind != LP_COMMIT_OVERWRITE && (check(&request, transaction, len, &conflict), !conflict))
			abort();
	}
	return 0;
}
