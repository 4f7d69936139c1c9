/*
 * lp_pg_alloc.c - the core's allocator in a backend (see lp_pg_alloc.h).
 *
 * Core allocations go to the current memory context.  MCXT_ALLOC_NO_OOM
 * makes palloc return NULL instead of throwing, so an allocation failure
 * unwinds through the core as an error value rather than a longjmp.
 *
 * Large ones (the encoder's page buffers of about 8 MiB per column, read
 * batches) are mmap'd apart instead of taken from malloc: glibc raises its
 * mmap threshold to the size of every mapped block freed (up to 32 MiB),
 * after which such buffers come from the heap, where memory freed between
 * live blocks stays resident, so a write's backend grew with its rows.  A
 * mapping is returned with munmap when freed, or, after an ERROR, when the
 * memory context it was taken in is reset or deleted (a reset callback of
 * a small record in that context).  Mappings start at a page boundary and
 * palloc'd chunks never do (a chunk header precedes them), so only
 * page-aligned pointers are looked up among the live mappings when freed.
 * The record of a mapping freed early stays in its context until the
 * context goes (a few dozen bytes per page buffer).
 */
#include "postgres.h"

#include <sys/mman.h>
#include <unistd.h>

#include "utils/memutils.h"

#include "lp_pg_alloc.h"

/* A live mapping, and what unmaps it when its context goes. */
typedef struct Mapping
{
	MemoryContextCallback callback;
	void	   *address;		/* NULL once unmapped */
	size_t		length;
} Mapping;

/* The live mappings (few: a page buffer per column being written, read batches). */
static Mapping **live_mappings;
static int	num_live_mappings;
static int	live_capacity;

static void
unmap(Mapping *mapping)
{
	for (int i = 0; i < num_live_mappings; i++)
		if (live_mappings[i] == mapping)
		{
			live_mappings[i] = live_mappings[--num_live_mappings];
			break;
		}
	(void) munmap(mapping->address, mapping->length);
	mapping->address = NULL;
}

static void
unmap_at_reset(void *arg)
{
	Mapping    *mapping = arg;

	if (mapping->address != NULL)
		unmap(mapping);
}

static void *
map_apart(size_t size)
{
	size_t		page = (size_t) sysconf(_SC_PAGESIZE);
	size_t		length = (size + page - 1) / page * page;
	Mapping    *mapping;
	void	   *address;

	if (num_live_mappings == live_capacity)
	{
		int			capacity = Max(16, live_capacity * 2);
		Mapping   **grown = MemoryContextAllocExtended(TopMemoryContext,
													   sizeof(Mapping *) * capacity,
													   MCXT_ALLOC_NO_OOM);

		if (grown == NULL)
			return NULL;
		if (num_live_mappings > 0)
			memcpy(grown, live_mappings, sizeof(Mapping *) * num_live_mappings);
		if (live_mappings != NULL)
			pfree(live_mappings);
		live_mappings = grown;
		live_capacity = capacity;
	}
	mapping = palloc_extended(sizeof(Mapping), MCXT_ALLOC_NO_OOM);
	if (mapping == NULL)
		return NULL;
	address = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (address == MAP_FAILED)
	{
		pfree(mapping);
		return NULL;
	}
	mapping->address = address;
	mapping->length = length;
	mapping->callback.func = unmap_at_reset;
	mapping->callback.arg = mapping;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &mapping->callback);
	live_mappings[num_live_mappings++] = mapping;
	return address;
}

static void *
lp_pg_alloc(size_t size, void *context)
{
	if (size >= LP_PG_MAPPED_ALLOC_BYTES)
		return map_apart(size);
	return palloc_extended(size, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
}

static void
lp_pg_free(void *pointer, void *context)
{
	if ((uintptr_t) pointer % (uintptr_t) sysconf(_SC_PAGESIZE) == 0)
		for (int i = 0; i < num_live_mappings; i++)
			if (live_mappings[i]->address == pointer)
			{
				unmap(live_mappings[i]);
				return;
			}
	pfree(pointer);
}

const LpAllocator lp_pg_allocator = {lp_pg_alloc, lp_pg_free, NULL};
