/*
 * lp_registry.h - the session-scoped registry of parts per target.
 *
 * Registrations are transactional: parts registered in a (sub)transaction
 * that rolls back disappear with it.
 */
#ifndef LP_REGISTRY_H
#define LP_REGISTRY_H

#include "nodes/pg_list.h"

#include "dataset/lp_blob.h"

typedef struct LpRegisteredPart
{
	char	   *uri;
	int64		num_rows;
	int64		size_bytes;
	bool		has_lease;		/* registered with blob_ids */
	LpBlobLease lease;			/* its blob id lease, when has_lease */
	SubTransactionId subid;		/* registering subtransaction; Invalid once committed */
} LpRegisteredPart;

/*
 * Append a part for target_key, with its blob id lease (or NULL); returns
 * its 1-based position.
 */
extern int	lp_registry_add(const char *target_key, const char *uri,
							int64 num_rows, int64 size_bytes, const LpBlobLease *lease);

/* The parts of target_key in registration order (NIL if none); do not modify. */
extern List *lp_registry_parts(const char *target_key);

/* Forget every part of target_key; returns how many there were. */
extern int	lp_registry_clear(const char *target_key);

#endif							/* LP_REGISTRY_H */
