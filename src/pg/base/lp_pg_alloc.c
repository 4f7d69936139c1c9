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
 *
 * A scan decodes its batches into mappings too (lp_pg_recycle_large_begin),
 * and takes them again batch after batch: such a mapping given back is kept
 * idle, up to LP_PG_IDLE_MAPPING_BYTES in all, and the next one it fits
 * reuses it, its pages already resident.  Taking fresh memory from the
 * system for every batch (malloc trims its heap as soon as a batch frees
 * its buffers) cost a full scan of wide rows as much time in page faults
 * as in decoding.  The idle mappings are given back at the end of the
 * transaction.
 */
#include "postgres.h"

#include <sys/mman.h>
#include <unistd.h>

#include "access/xact.h"
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
	bool		recycled;		/* kept idle for reuse when it goes */
} Mapping;

/* Open lp_pg_map_large_begin and lp_pg_recycle_large_begin scopes. */
static int	map_large_scopes;
static int	recycle_large_scopes;

/* Mappings given back and kept for reuse, LP_PG_IDLE_MAPPING_BYTES at most. */
#define MAX_IDLE_MAPPINGS 32
typedef struct IdleMapping
{
	void	   *address;
	size_t		length;
} IdleMapping;
static IdleMapping idle_mappings[MAX_IDLE_MAPPINGS];
static int	num_idle_mappings;
static size_t idle_bytes;

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

void
lp_pg_recycle_large_begin(void)
{
	recycle_large_scopes++;
}

void
lp_pg_recycle_large_end(void)
{
	Assert(recycle_large_scopes > 0);
	recycle_large_scopes--;
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
	if (mapping->recycled && num_idle_mappings < MAX_IDLE_MAPPINGS &&
		idle_bytes + mapping->length <= LP_PG_IDLE_MAPPING_BYTES)
	{
		idle_mappings[num_idle_mappings].address = mapping->address;
		idle_mappings[num_idle_mappings++].length = mapping->length;
		idle_bytes += mapping->length;
		return;
	}
	(void) munmap(mapping->address, mapping->length);
}

/*
 * The smallest idle mapping of *length bytes or more, but not over twice
 * that (a small allocation would hold a large mapping), its length in
 * *length; or NULL.
 */
static void *
take_idle(size_t *length)
{
	int			best = -1;
	void	   *address;

	for (int i = 0; i < num_idle_mappings; i++)
		if (idle_mappings[i].length >= *length && idle_mappings[i].length / 2 <= *length &&
			(best < 0 || idle_mappings[i].length < idle_mappings[best].length))
			best = i;
	if (best < 0)
		return NULL;
	address = idle_mappings[best].address;
	*length = idle_mappings[best].length;
	idle_bytes -= idle_mappings[best].length;
	idle_mappings[best] = idle_mappings[--num_idle_mappings];
	return address;
}

static void
release_idle_mappings(XactEvent event, void *arg)
{
	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT &&
		event != XACT_EVENT_PREPARE)
		return;
	while (num_idle_mappings > 0)
	{
		num_idle_mappings--;
		(void) munmap(idle_mappings[num_idle_mappings].address,
					  idle_mappings[num_idle_mappings].length);
	}
	idle_bytes = 0;
}

void
lp_pg_alloc_init(void)
{
	RegisterXactCallback(release_idle_mappings, NULL);
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
map_apart(size_t size, bool recycled)
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
	address = recycled ? take_idle(&length) : NULL;
	if (address == NULL)
	{
		address = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (address == MAP_FAILED)
		{
			pfree(mapping);
			return NULL;
		}
	}
	mapping->context = CurrentMemoryContext;
	mapping->address = address;
	mapping->length = length;
	mapping->recycled = recycled;
	mapping->callback.func = unmap_after_other_callbacks;
	mapping->callback.arg = mapping;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &mapping->callback);
	live_mappings[num_live_mappings++] = mapping;
	return address;
}

static void *
lp_pg_alloc(size_t size, void *context)
{
	if (recycle_large_scopes > 0 && size >= LP_PG_RECYCLED_ALLOC_BYTES)
		return map_apart(size, true);
	if (map_large_scopes > 0 && size >= LP_PG_MAPPED_ALLOC_BYTES)
		return map_apart(size, false);
	return palloc_extended(size, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
}

static Mapping *
live_mapping(void *pointer)
{
	if (num_live_mappings > 0 && (uintptr_t) pointer % (uintptr_t) sysconf(_SC_PAGESIZE) == 0)
		for (int i = 0; i < num_live_mappings; i++)
			if (live_mappings[i]->address == pointer)
				return live_mappings[i];
	return NULL;
}

static void
lp_pg_free(void *pointer, void *context)
{
	Mapping    *mapping = live_mapping(pointer);

	if (mapping == NULL)
	{
		pfree(pointer);
		return;
	}
	unregister_callback(mapping);
	unmap(mapping);
	pfree(mapping);
}

/*
 * A mapping grows by mremap: its pages move, resident, instead of being
 * copied into a new block that faults in again (a column's page buffer
 * doubles several times on its first page).  Other blocks take a new one
 * (a mapping, where large buffers are mapped apart) and are copied:
 * repalloc, which reallocs their malloc'd blocks, made a compaction's index
 * remapping slower.
 */
static void *
lp_pg_resize(void *pointer, size_t old_size, size_t size, void *context)
{
	Mapping    *mapping = live_mapping(pointer);
	void	   *resized;

	if (mapping != NULL)
	{
		size_t		page = (size_t) sysconf(_SC_PAGESIZE);
		size_t		length = (size + page - 1) / page * page;

		resized = mremap(mapping->address, mapping->length, length, MREMAP_MAYMOVE);
		if (resized == MAP_FAILED)
			return NULL;
		mapping->address = resized;
		mapping->length = length;
		return resized;
	}
	resized = lp_pg_alloc(size, context);
	if (resized == NULL)
		return NULL;
	memcpy(resized, pointer, Min(old_size, size));
	pfree(pointer);
	return resized;
}

const LpAllocator lp_pg_allocator = {lp_pg_alloc, lp_pg_free, NULL, lp_pg_resize};
