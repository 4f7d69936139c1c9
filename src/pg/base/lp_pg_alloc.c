/*
 * lp_pg_alloc.c - the core's allocator in a backend (see lp_pg_alloc.h).
 *
 * Core allocations go to the current memory context.  MCXT_ALLOC_NO_OOM
 * makes palloc return NULL instead of throwing, so an allocation failure
 * unwinds through the core as an error value rather than a longjmp.
 *
 * A write's large buffers (the file writer's page buffers, the pages it
 * encodes) are mmap'd apart instead of taken from malloc: glibc raises its
 * mmap threshold to the size of every mapped block freed (up to 32 MiB),
 * after which such buffers come from the heap, where memory freed between
 * live blocks stays resident, so a write's backend grew with its rows.
 * Setting the threshold with mallopt instead would hold for the rest of
 * the process (glibc cannot give back its dynamic threshold).
 *
 * A mapping lives as palloc'd memory of the context current when it was
 * taken: it goes when the core frees it, or when that context is reset or
 * deleted, after the context's other reset callbacks, as palloc'd memory
 * is freed after them.  An S3 output's abort, a callback of the context
 * its part buffer was taken in, still frees that buffer.  A mapping's own
 * callback, called first when it was registered last, therefore moves
 * itself behind the callbacks still to come and unmaps on its second call.
 * Mappings start at a page boundary and palloc'd chunks rarely do, so only
 * page-aligned pointers are looked up among the live mappings when freed.
 */
#include "postgres.h"

#include <sys/mman.h>
#include <unistd.h>

#include "utils/memutils.h"

#include "base/lp_pg_alloc.h"

/* A live mapping, and what unmaps it when its context goes. */
typedef struct Mapping
{
	MemoryContextCallback callback;
	MemoryContext context;		/* the one it was taken in */
	void	   *address;
	size_t		length;
	bool		behind_others;	/* its callback moved behind the context's others */
} Mapping;

/* Open lp_pg_map_large_begin scopes. */
static int	map_large_scopes;

/* The live mappings (few: the page buffers of the columns being written). */
static Mapping **live_mappings;
static int	num_live_mappings;
static int	live_capacity;

void
lp_pg_map_large_begin(void)
{
	map_large_scopes++;
}

void
lp_pg_map_large_end(void)
{
	Assert(map_large_scopes > 0);
	map_large_scopes--;
}

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
}

/* The context's callbacks always hold a live mapping's. */
static void
unregister_callback(Mapping *mapping)
{
	MemoryContextCallback **link = &mapping->context->reset_cbs;

	while (*link != NULL && *link != &mapping->callback)
		link = &(*link)->next;
	if (*link != NULL)
		*link = mapping->callback.next;
}

static void
unmap_after_other_callbacks(void *arg)
{
	Mapping    *mapping = arg;
	MemoryContextCallback **tail = &mapping->context->reset_cbs;

	if (!mapping->behind_others && *tail != NULL)
	{
		while (*tail != NULL)
			tail = &(*tail)->next;
		mapping->behind_others = true;
		mapping->callback.next = NULL;
		*tail = &mapping->callback;
		return;
	}
	unmap(mapping);
	/* the record goes with its context */
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
	mapping = palloc_extended(sizeof(Mapping), MCXT_ALLOC_NO_OOM | MCXT_ALLOC_ZERO);
	if (mapping == NULL)
		return NULL;
	address = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (address == MAP_FAILED)
	{
		pfree(mapping);
		return NULL;
	}
	mapping->context = CurrentMemoryContext;
	mapping->address = address;
	mapping->length = length;
	mapping->callback.func = unmap_after_other_callbacks;
	mapping->callback.arg = mapping;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &mapping->callback);
	live_mappings[num_live_mappings++] = mapping;
	return address;
}

static void *
lp_pg_alloc(size_t size, void *context)
{
	if (map_large_scopes > 0 && size >= LP_PG_MAPPED_ALLOC_BYTES)
		return map_apart(size);
	return palloc_extended(size, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
}

static void
lp_pg_free(void *pointer, void *context)
{
	if (num_live_mappings > 0 && (uintptr_t) pointer % (uintptr_t) sysconf(_SC_PAGESIZE) == 0)
		for (int i = 0; i < num_live_mappings; i++)
		{
			Mapping    *mapping = live_mappings[i];

			if (mapping->address != pointer)
				continue;
			unregister_callback(mapping);
			unmap(mapping);
			pfree(mapping);
			return;
		}
	pfree(pointer);
}

const LpAllocator lp_pg_allocator = {lp_pg_alloc, lp_pg_free, NULL};
