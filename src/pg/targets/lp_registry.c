/*
 * lp_registry.c - session-scoped part registry (backend-local hash table).
 *
 * Parts live in TopMemoryContext so that they survive transactions.  Each
 * part remembers the subtransaction that registered it until its top-level
 * transaction commits; transaction callbacks drop the parts of aborted
 * (sub)transactions, as postgres_fdw does for its connection state.
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "targets/lp_registry.h"

typedef struct RegistryEntry
{
	char		key[MAXPGPATH];	/* hash key: the target's final file path */
	List	   *parts;			/* of LpRegisteredPart *, in TopMemoryContext */
} RegistryEntry;

static HTAB *registry;

static void
free_part(LpRegisteredPart *part)
{
	pfree(part->uri);
	pfree(part);
}

/* Apply fn to every part of every target; fn returns false to drop the part. */
static void
filter_parts(bool (*keep) (LpRegisteredPart *part, SubTransactionId my_subid,
						   SubTransactionId parent_subid),
			 SubTransactionId my_subid, SubTransactionId parent_subid)
{
	HASH_SEQ_STATUS status;
	RegistryEntry *entry;

	if (registry == NULL)
		return;
	hash_seq_init(&status, registry);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		ListCell   *cell;

		foreach(cell, entry->parts)
		{
			LpRegisteredPart *part = lfirst(cell);

			if (!keep(part, my_subid, parent_subid))
			{
				entry->parts = foreach_delete_current(entry->parts, cell);
				free_part(part);
			}
		}
	}
}

static bool
keep_unless_uncommitted(LpRegisteredPart *part, SubTransactionId my_subid,
						SubTransactionId parent_subid)
{
	return part->subid == InvalidSubTransactionId;
}

static bool
keep_and_mark_committed(LpRegisteredPart *part, SubTransactionId my_subid,
						SubTransactionId parent_subid)
{
	part->subid = InvalidSubTransactionId;
	return true;
}

static bool
keep_unless_from_subtransaction(LpRegisteredPart *part, SubTransactionId my_subid,
								SubTransactionId parent_subid)
{
	return part->subid != my_subid;
}

static bool
keep_and_move_to_parent(LpRegisteredPart *part, SubTransactionId my_subid,
						SubTransactionId parent_subid)
{
	if (part->subid == my_subid)
		part->subid = parent_subid;
	return true;
}

static void
registry_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			filter_parts(keep_and_mark_committed, InvalidSubTransactionId,
						 InvalidSubTransactionId);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			filter_parts(keep_unless_uncommitted, InvalidSubTransactionId,
						 InvalidSubTransactionId);
			break;
		default:
			break;
	}
}

static void
registry_subxact_callback(SubXactEvent event, SubTransactionId my_subid,
						  SubTransactionId parent_subid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		filter_parts(keep_unless_from_subtransaction, my_subid, parent_subid);
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
		filter_parts(keep_and_move_to_parent, my_subid, parent_subid);
}

static RegistryEntry *
lookup(const char *target_key, bool create)
{
	char		key[MAXPGPATH];
	bool		found;

	if (strlen(target_key) >= MAXPGPATH)
		ereport(ERROR,
				errcode(ERRCODE_NAME_TOO_LONG),
				errmsg("target path is too long: \"%s\"", target_key));

	if (registry == NULL)
	{
		HASHCTL		ctl;

		if (!create)
			return NULL;
		ctl.keysize = MAXPGPATH;
		ctl.entrysize = sizeof(RegistryEntry);
		registry = hash_create("lance_parts part registry", 16, &ctl,
							   HASH_ELEM | HASH_STRINGS);
		RegisterXactCallback(registry_xact_callback, NULL);
		RegisterSubXactCallback(registry_subxact_callback, NULL);
	}

	memset(key, 0, sizeof(key));
	strlcpy(key, target_key, sizeof(key));
	{
		RegistryEntry *entry = hash_search(registry, key,
										   create ? HASH_ENTER : HASH_FIND, &found);

		if (entry != NULL && !found)
			entry->parts = NIL;
		return entry;
	}
}

int
lp_registry_add(const char *target_key, const char *uri, int64 num_rows,
				int64 size_bytes, const LpBlobLease *lease)
{
	RegistryEntry *entry = lookup(target_key, true);
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	LpRegisteredPart *part = palloc(sizeof(LpRegisteredPart));

	part->uri = pstrdup(uri);
	part->num_rows = num_rows;
	part->size_bytes = size_bytes;
	part->has_lease = lease != NULL;
	if (lease != NULL)
		part->lease = *lease;
	part->subid = GetCurrentSubTransactionId();
	entry->parts = lappend(entry->parts, part);
	MemoryContextSwitchTo(old);
	return list_length(entry->parts);
}

List *
lp_registry_parts(const char *target_key)
{
	RegistryEntry *entry = lookup(target_key, false);

	return entry ? entry->parts : NIL;
}

int
lp_registry_clear(const char *target_key)
{
	RegistryEntry *entry = lookup(target_key, false);
	int			count;
	ListCell   *cell;

	if (entry == NULL)
		return 0;
	count = list_length(entry->parts);
	foreach(cell, entry->parts)
		free_part(lfirst(cell));
	list_free(entry->parts);
	entry->parts = NIL;
	return count;
}
