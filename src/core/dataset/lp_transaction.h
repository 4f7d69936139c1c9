/*
 * lp_transaction.h - the transaction of a commit, as Lance records it
 * (lance-format.md section 5.7): serialized from the request, and checked
 * against the transactions of versions committed since the request's read
 * version (Lance's conflict rules).
 */
#ifndef LP_TRANSACTION_H
#define LP_TRANSACTION_H

#include <stddef.h>
#include <stdint.h>

#include "base/lp_error.h"
#include "dataset/lp_commit_request.h"
#include "dataset/lp_manifest.h"

/*
 * The serialized Transaction of a request (read_version and uuid as given).
 * Rewrites record the old fragments as base has them.
 */
bool		lp_transaction_build(const LpCommitRequest *request,
								 const LpManifest *base, const char *uuid,
								 uint8_t **out, size_t *out_len, LpError *err);

/*
 * Check the transaction that produced version `version` against a request.
 * Returns false with LP_ERR_CONFLICT when they conflict.  An operation
 * lance_parts does not implement always conflicts, named in the message:
 * DataOverlay (field 115) and CompositeOperation (116) of newer Lance
 * versions, else "unknown operation (field N)".
 */
bool		lp_transaction_check_conflict(const LpCommitRequest *request,
										  const uint8_t *transaction,
										  size_t transaction_len,
										  uint64_t version, LpError *err);

#endif							/* LP_TRANSACTION_H */
