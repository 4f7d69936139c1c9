/*
 * lp_write_workers.c - the files of a write encoded by parallel workers
 * (see lp_write_workers.h).
 *
 * The leader runs the query and converts its rows into batches of column
 * arrays, as the serial path does; the workers own the file writers.  File
 * k goes to worker k mod n, so with one file the leader reads the next
 * batch while a worker encodes the last one, and with several the workers
 * encode files side by side.  A batch travels whole through the worker's
 * shm_mq (the arrays' headers, then their buffers, sent from where they are
 * with shm_mq_sendv), so each file gets exactly the batches the serial path
 * would give its writer: the same pages and bytes.
 *
 * The leader creates every output (a temporary file) and publishes it once
 * its worker reports it finished, in the order the files were opened; a
 * worker only writes into it through the output's share token.  So no file
 * ever gets its final name but by the leader, an ERROR anywhere (a worker's
 * is re-raised in the leader by the ParallelContext) leaves only temporary
 * files, which the outputs' memory-context callbacks remove after the
 * workers are gone, and the caller removes the files published so far.
 * The query runs in the leader in parallel mode while workers run: it may
 * not write (as in any parallel query); lance_parts.write_workers = 0 runs
 * it outside parallel mode.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/shm_mq.h"
#include "storage/shm_toc.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "encode/lp_file_writer.h"
#include "base/lp_parallel.h"
#include "base/lp_pg_alloc.h"
#include "base/lp_pg_error.h"
#include "base/lp_wire.h"
#include "store/lp_pg_storage.h"
#include "write/lp_write_workers.h"

PGDLLEXPORT void lp_write_worker_main(dsm_segment *seg, shm_toc *toc);

int			lp_write_workers = 2;

#define WRITE_WORKERS_LIMIT 64
/* A worker's queue holds about two batches of the leader (lp_write_sql.c). */
#define TO_WORKER_QUEUE_BYTES (8 * 1024 * 1024)
#define FROM_WORKER_QUEUE_BYTES (64 * 1024)
/* Closed files a worker may have in hand before the leader waits for the earliest. */
#define FILES_IN_FLIGHT_PER_WORKER 2

#define WRITE_KEY_SHARED	UINT64CONST(0x4C50000000000021)
#define WRITE_KEY_SCHEMA	UINT64CONST(0x4C50000000000022)
#define WRITE_KEY_QUEUES	UINT64CONST(0x4C50000000000023)

/* Messages to a worker: a tag, then (aligned to 8) the tag's contents. */
#define WRITE_MSG_OPEN	'O'			/* output name, NUL, share token */
#define WRITE_MSG_BATCH	'B'			/* uint64 number of arrays, node headers, buffers */
#define WRITE_MSG_FINISH	'F'
#define WRITE_MSG_HEADER_BYTES 8

typedef struct WriteShared
{
	LpFileVersion version;
	Size		schema_bytes;
} WriteShared;

/* One array of a batch, in pre-order; its buffers follow all headers, each padded to 8. */
typedef struct NodeHeader
{
	uint64		length;
	uint64		null_count;
	uint64		validity_bytes;
	uint64		values_bytes;
	uint64		offsets_bytes;
	uint64		data_bytes;
	uint64		num_children;
} NodeHeader;

typedef struct FileInFlight
{
	int			worker;
	void	   *owner;
	LpOutput   *output;
	bool		closed;
	bool		done;
	uint64		size_bytes;
} FileInFlight;

struct LpWriteWorkers
{
	ParallelContext *pcxt;
	int			nworkers;
	shm_mq_handle **to_worker;
	shm_mq_handle **from_worker;
	List	   *in_flight;		/* FileInFlight *, in the order opened */
	int			next_worker;
	const char *what;
};

void
LpWriteWorkersInit(void)
{
	DefineCustomIntVariable("lance_parts.write_workers",
							gettext_noop("Largest number of parallel workers that encode the files of one write_dataset or COPY TO."),
							gettext_noop("The calling backend reads the rows and hands whole batches to the worker of each file. 0 encodes in the calling backend only. Workers count against max_worker_processes and max_parallel_workers; when none can be started, the write runs serially."),
							&lp_write_workers,
							2, 0, WRITE_WORKERS_LIMIT,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
}

/* ---- batches through a queue ------------------------------------------------- */

static const char zero_padding[8];

#define PAD8(n) (((n) + 7) & ~(uint64) 7)

static void
count_nodes(const LpArray *array, int *nodes)
{
	(*nodes)++;
	for (uint32 i = 0; i < array->num_children; i++)
		count_nodes(array->children[i], nodes);
}

static uint64
values_bytes(const LpArray *array)
{
	uint32		width;

	if (array->values == NULL)
		return 0;
	if (array->type->id == LP_TYPE_BOOL)
		return (array->length + 7) / 8;
	width = lp_type_byte_width(array->type);
	return array->length * width;
}

static void
add_header(const LpArray *array, NodeHeader *headers, int *next)
{
	NodeHeader *header = &headers[(*next)++];

	header->length = array->length;
	header->null_count = array->null_count;
	header->validity_bytes = array->validity != NULL ? (array->length + 7) / 8 : 0;
	header->values_bytes = values_bytes(array);
	header->offsets_bytes = array->offsets != NULL ? (array->length + 1) * sizeof(uint64) : 0;
	header->data_bytes = array->data != NULL ? array->data_len : 0;
	header->num_children = array->num_children;
	for (uint32 i = 0; i < array->num_children; i++)
		add_header(array->children[i], headers, next);
}

static void
add_piece(shm_mq_iovec *iov, int *n, const void *data, uint64 len)
{
	if (len == 0)
		return;
	iov[*n].data = data;
	iov[*n].len = (Size) len;
	(*n)++;
	if (PAD8(len) != len)
	{
		iov[*n].data = zero_padding;
		iov[*n].len = (Size) (PAD8(len) - len);
		(*n)++;
	}
}

static void
add_buffers(const LpArray *array, shm_mq_iovec *iov, int *n, const NodeHeader *headers,
			int *node)
{
	const NodeHeader *header = &headers[(*node)++];

	add_piece(iov, n, array->validity, header->validity_bytes);
	add_piece(iov, n, array->values, header->values_bytes);
	add_piece(iov, n, array->offsets, header->offsets_bytes);
	add_piece(iov, n, array->data, header->data_bytes);
	for (uint32 i = 0; i < array->num_children; i++)
		add_buffers(array->children[i], iov, n, headers, node);
}

static int
count_type_nodes(const LpType *type)
{
	int			nodes = 1;

	for (uint32 i = 0; i < type->num_children; i++)
		nodes += count_type_nodes(type->children[i]);
	return nodes;
}

/* An array of type from the headers and buffers of reader (which stays valid). */
static LpArray *
take_array(LpWireReader *headers, LpWireReader *buffers, const LpType *type)
{
	LpArray    *array = palloc0(sizeof(LpArray));
	NodeHeader	header;

	memcpy(&header, lp_wire_take(headers, sizeof(header)), sizeof(header));
	if (header.num_children != type->num_children)
		elog(ERROR, "batch for a lance_parts write worker has %llu children of a %s array, not %u",
			 (unsigned long long) header.num_children, lp_type_id_name(type->id),
			 type->num_children);
	array->type = type;
	array->length = header.length;
	array->null_count = header.null_count;
	if (header.validity_bytes > 0)
		array->validity = (uint8_t *) lp_wire_take(buffers, PAD8(header.validity_bytes));
	if (header.values_bytes > 0)
		array->values = (uint8_t *) lp_wire_take(buffers, PAD8(header.values_bytes));
	if (header.offsets_bytes > 0)
		array->offsets = (uint64_t *) lp_wire_take(buffers, PAD8(header.offsets_bytes));
	if (header.data_bytes > 0)
		array->data = (uint8_t *) lp_wire_take(buffers, PAD8(header.data_bytes));
	array->data_len = header.data_bytes;
	array->num_children = type->num_children;
	array->children = palloc0(sizeof(LpArray *) * Max(type->num_children, 1));
	for (uint32 i = 0; i < type->num_children; i++)
		array->children[i] = take_array(headers, buffers, type->children[i]);
	return array;
}

/* ---- the leader --------------------------------------------------------------- */

/* A worker stopped reading or answering: its ERROR, or one of ours. */
static void
worker_gone(LpWriteWorkers *workers)
{
	WaitForParallelWorkersToFinish(workers->pcxt);
	ereport(ERROR,
			errcode(ERRCODE_INTERNAL_ERROR),
			errmsg("a parallel worker encoding %s exited before its files were finished",
				   workers->what));
}

static void
send_to(LpWriteWorkers *workers, int worker, shm_mq_iovec *iov, int n)
{
	if (shm_mq_sendv(workers->to_worker[worker], iov, n, false, true) != SHM_MQ_SUCCESS)
		worker_gone(workers);
}

/* What lp_write_workers_start puts in the workers' segment. */
typedef struct WriteSegment
{
	LpFileVersion version;
	StringInfoData schema;		/* serialized */
	Size		queues_bytes;
	char	   *queues;			/* set by fill_write_segment */
} WriteSegment;

static void
fill_write_segment(ParallelContext *pcxt, void *arg)
{
	WriteSegment *segment = arg;
	WriteShared *shared = shm_toc_allocate(pcxt->toc, sizeof(WriteShared));

	shared->version = segment->version;
	shared->schema_bytes = segment->schema.len;
	shm_toc_insert(pcxt->toc, WRITE_KEY_SHARED, shared);
	lp_parallel_insert_copy(pcxt, WRITE_KEY_SCHEMA, segment->schema.data, segment->schema.len);
	segment->queues = shm_toc_allocate(pcxt->toc, segment->queues_bytes);
	shm_toc_insert(pcxt->toc, WRITE_KEY_QUEUES, segment->queues);
	for (int i = 0; i < lp_write_workers; i++)
	{
		char	   *to = segment->queues + (Size) i * (TO_WORKER_QUEUE_BYTES + FROM_WORKER_QUEUE_BYTES);

		shm_mq_set_sender(shm_mq_create(to, TO_WORKER_QUEUE_BYTES), MyProc);
		shm_mq_set_receiver(shm_mq_create(to + TO_WORKER_QUEUE_BYTES, FROM_WORKER_QUEUE_BYTES),
							MyProc);
	}
}

LpWriteWorkers *
lp_write_workers_start(LpStore *store, const LpSchema *schema, LpFileVersion version,
					   const char *what)
{
	LpWriteWorkers *workers;
	ParallelContext *pcxt;
	WriteSegment segment;
	char	   *queues;

	if (lp_write_workers == 0 || store->ops->open_shared_output == NULL)
		return NULL;
	segment.version = version;
	initStringInfo(&segment.schema);
	lp_wire_put_schema(&segment.schema, schema);
	segment.queues_bytes = mul_size(lp_write_workers, TO_WORKER_QUEUE_BYTES + FROM_WORKER_QUEUE_BYTES);

	{
		/* the chunks of fill_write_segment */
		const Size	chunk_sizes[] = {sizeof(WriteShared), segment.schema.len, segment.queues_bytes};

		pcxt = lp_parallel_start("lp_write_worker_main", lp_write_workers, chunk_sizes,
								 lengthof(chunk_sizes), fill_write_segment, &segment);
	}
	if (pcxt == NULL)
	{
		ereport(NOTICE,
				errmsg("no parallel workers could be started to encode %s, encoding serially", what),
				errhint("Raise max_worker_processes or max_parallel_workers, or set lance_parts.write_workers to 0."));
		return NULL;
	}
	queues = segment.queues;

	workers = palloc0(sizeof(LpWriteWorkers));
	workers->pcxt = pcxt;
	workers->nworkers = pcxt->nworkers_launched;
	workers->what = what;
	workers->to_worker = palloc0(sizeof(shm_mq_handle *) * workers->nworkers);
	workers->from_worker = palloc0(sizeof(shm_mq_handle *) * workers->nworkers);
	for (int i = 0; i < workers->nworkers; i++)
	{
		char	   *to = queues + (Size) i * (TO_WORKER_QUEUE_BYTES + FROM_WORKER_QUEUE_BYTES);

		workers->to_worker[i] = shm_mq_attach((shm_mq *) to, pcxt->seg,
											  pcxt->worker[i].bgwhandle);
		workers->from_worker[i] = shm_mq_attach((shm_mq *) (to + TO_WORKER_QUEUE_BYTES),
												pcxt->seg, pcxt->worker[i].bgwhandle);
	}
	ereport(DEBUG1,
			errmsg_internal("encoding %s with %d parallel workers", what, workers->nworkers));
	return workers;
}

int
lp_write_workers_count(const LpWriteWorkers *workers)
{
	return workers->nworkers;
}

void
lp_write_workers_open_file(LpWriteWorkers *workers, LpOutput *output, void *owner)
{
	FileInFlight *file = palloc0(sizeof(FileInFlight));
	Size		token_bytes = output->ops->share_token(output, NULL, 0);
	char	   *token = palloc(token_bytes);
	uint64		header = WRITE_MSG_OPEN;
	shm_mq_iovec iov[3];

	(void) output->ops->share_token(output, token, token_bytes);
	file->worker = workers->next_worker;
	file->owner = owner;
	file->output = output;
	workers->next_worker = (workers->next_worker + 1) % workers->nworkers;
	workers->in_flight = lappend(workers->in_flight, file);

	iov[0].data = (const char *) &header;
	iov[0].len = WRITE_MSG_HEADER_BYTES;
	iov[1].data = output->name;
	iov[1].len = strlen(output->name) + 1;
	iov[2].data = token;
	iov[2].len = token_bytes;
	send_to(workers, file->worker, iov, 3);
	pfree(token);
}

static FileInFlight *
open_file(LpWriteWorkers *workers)
{
	FileInFlight *file = workers->in_flight != NIL ? llast(workers->in_flight) : NULL;

	if (file == NULL || file->closed)
		elog(ERROR, "no file is open for the parallel workers encoding %s", workers->what);
	return file;
}

void
lp_write_workers_write(LpWriteWorkers *workers, const LpArray *const *arrays, uint32 num_arrays)
{
	FileInFlight *file = open_file(workers);
	int			num_nodes = 0;
	int			next = 0;
	int			n = 0;
	uint64		header[2] = {WRITE_MSG_BATCH, num_arrays};
	NodeHeader *headers;
	shm_mq_iovec *iov;

	for (uint32 i = 0; i < num_arrays; i++)
		count_nodes(arrays[i], &num_nodes);
	headers = palloc0(sizeof(NodeHeader) * Max(num_nodes, 1));
	for (uint32 i = 0; i < num_arrays; i++)
		add_header(arrays[i], headers, &next);
	/* the tag and count, the headers, and up to four padded buffers per node */
	iov = palloc(sizeof(shm_mq_iovec) * (2 + 8 * (Size) num_nodes));
	iov[n].data = (const char *) header;
	iov[n++].len = sizeof(header);
	iov[n].data = (const char *) headers;
	iov[n++].len = sizeof(NodeHeader) * num_nodes;
	next = 0;
	for (uint32 i = 0; i < num_arrays; i++)
		add_buffers(arrays[i], iov, &n, headers, &next);
	send_to(workers, file->worker, iov, n);
	pfree(iov);
	pfree(headers);
}

void
lp_write_workers_close_file(LpWriteWorkers *workers)
{
	FileInFlight *file = open_file(workers);
	uint64		header = WRITE_MSG_FINISH;
	shm_mq_iovec iov = {(const char *) &header, WRITE_MSG_HEADER_BYTES};

	send_to(workers, file->worker, &iov, 1);
	file->closed = true;
}

/* Mark the earliest unfinished file of worker finished from its answer; false if none came (nowait). */
static bool
receive_done(LpWriteWorkers *workers, int worker, bool nowait)
{
	Size		len;
	void	   *data;
	shm_mq_result result = shm_mq_receive(workers->from_worker[worker], &len, &data, nowait);
	ListCell   *cell;

	if (result == SHM_MQ_WOULD_BLOCK)
		return false;
	if (result != SHM_MQ_SUCCESS)
		worker_gone(workers);
	if (len != sizeof(uint64))
		elog(ERROR, "parallel worker encoding %s answered with %zu bytes", workers->what, len);
	foreach(cell, workers->in_flight)
	{
		FileInFlight *file = lfirst(cell);

		if (file->worker == worker && file->closed && !file->done)
		{
			memcpy(&file->size_bytes, data, sizeof(uint64));
			file->done = true;
			return true;
		}
	}
	elog(ERROR, "parallel worker encoding %s finished a file it was not given", workers->what);
	pg_unreachable();
}

bool
lp_write_workers_next_done(LpWriteWorkers *workers, bool wait, void **owner,
						   LpOutput **output, uint64 *size_bytes)
{
	FileInFlight *first;

	for (int w = 0; w < workers->nworkers; w++)
		while (receive_done(workers, w, true))
			;
	if (workers->in_flight == NIL)
		return false;
	first = linitial(workers->in_flight);
	if (!first->closed)
		return false;
	if (!first->done &&
		(wait || list_length(workers->in_flight) > FILES_IN_FLIGHT_PER_WORKER * workers->nworkers))
		while (!first->done)
			(void) receive_done(workers, first->worker, false);
	if (!first->done)
		return false;
	*owner = first->owner;
	*output = first->output;
	*size_bytes = first->size_bytes;
	workers->in_flight = list_delete_first(workers->in_flight);
	pfree(first);
	return true;
}

void
lp_write_workers_end(LpWriteWorkers *workers)
{
	if (workers->in_flight != NIL)
		elog(ERROR, "parallel workers encoding %s still have files", workers->what);
	/* detaching tells every worker that no file follows */
	for (int i = 0; i < workers->nworkers; i++)
	{
		shm_mq_detach(workers->to_worker[i]);
		shm_mq_detach(workers->from_worker[i]);
	}
	WaitForParallelWorkersToFinish(workers->pcxt);
	lp_parallel_end(workers->pcxt);
}

/* ---- a worker ----------------------------------------------------------------- */

/* A received message, at an address aligned for the buffers' uint64 offsets. */
static const char *
aligned_message(const void *data, Size len)
{
	char	   *copy;

	if ((uintptr_t) data % sizeof(uint64) == 0)
		return data;
	copy = palloc(len);
	memcpy(copy, data, len);
	return copy;
}

void
lp_write_worker_main(dsm_segment *seg, shm_toc *toc)
{
	WriteShared *shared = shm_toc_lookup(toc, WRITE_KEY_SHARED, false);
	char	   *schema_bytes = shm_toc_lookup(toc, WRITE_KEY_SCHEMA, false);
	char	   *queues = shm_toc_lookup(toc, WRITE_KEY_QUEUES, false);
	char	   *to = queues + (Size) ParallelWorkerNumber * (TO_WORKER_QUEUE_BYTES + FROM_WORKER_QUEUE_BYTES);
	shm_mq	   *in_queue = (shm_mq *) to;
	shm_mq	   *out_queue = (shm_mq *) (to + TO_WORKER_QUEUE_BYTES);
	shm_mq_handle *in;
	shm_mq_handle *out;
	LpWireReader reader = {schema_bytes, shared->schema_bytes, 0};
	LpSchema	schema;
	LpFile		view;
	LpType	  **types;
	uint32		num_top = 0;
	LpOutput   *output = NULL;
	LpFileWriter *writer = NULL;
	MemoryContext message_context;
	LpError		err;

	/* for the rest of the worker, which only writes */
	lp_pg_map_large_begin();
	lp_parallel_worker_show_query(toc);
	shm_mq_set_receiver(in_queue, MyProc);
	shm_mq_set_sender(out_queue, MyProc);
	in = shm_mq_attach(in_queue, seg, NULL);
	out = shm_mq_attach(out_queue, seg, NULL);

	/* the top-level fields' types, as the leader's batches have them */
	lp_wire_take_schema(&reader, &schema);
	memset(&view, 0, sizeof(view));
	view.name = "the parallel write";
	view.schema = schema;
	types = palloc0(sizeof(LpType *) * Max(schema.num_fields, 1));
	for (uint32 i = 0; i < schema.num_fields; i++)
		if (schema.fields[i].parent_id == -1)
		{
			if (!lp_type_from_field(&view, i, &types[num_top], &err))
				lp_raise(&err);
			types[num_top]->nullable = schema.fields[i].nullable;
			num_top++;
		}

	message_context = AllocSetContextCreate(CurrentMemoryContext, "lance_parts write worker message",
											ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		Size		len;
		void	   *data;
		const char *message;
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(message_context);
		/* the leader detaches once every file is given: then we are done */
		if (shm_mq_receive(in, &len, &data, false) != SHM_MQ_SUCCESS)
			break;
		if (len < WRITE_MSG_HEADER_BYTES)
			elog(ERROR, "message of %zu bytes for a lance_parts write worker", len);
		old = MemoryContextSwitchTo(message_context);
		message = aligned_message(data, len);
		MemoryContextSwitchTo(old);
		switch (message[0])
		{
			case WRITE_MSG_OPEN:
				{
					const char *name = message + WRITE_MSG_HEADER_BYTES;
					Size		name_len = strnlen(name, len - WRITE_MSG_HEADER_BYTES);
					LpStore    *store;

					if (writer != NULL || name_len == len - WRITE_MSG_HEADER_BYTES)
						elog(ERROR, "unexpected file for a lance_parts write worker");
					/* the output's name picks the store that shares it */
					store = lp_store_for_uri(name, NULL);
					output = store->ops->open_shared_output(store, name + name_len + 1,
															len - WRITE_MSG_HEADER_BYTES - name_len - 1,
															&err);
					if (output == NULL)
						lp_raise(&err);
					writer = lp_file_writer_open(output, &schema, shared->version, &err);
					if (writer == NULL)
						lp_raise(&err);
					break;
				}
			case WRITE_MSG_BATCH:
				{
					LpWireReader body = {message, len, WRITE_MSG_HEADER_BYTES};
					uint64		num_arrays;
					int			num_nodes = 0;
					const LpArray **arrays;
					LpWireReader headers;
					LpWireReader buffers;

					if (writer == NULL)
						elog(ERROR, "batch without a file for a lance_parts write worker");
					memcpy(&num_arrays, lp_wire_take(&body, sizeof(num_arrays)), sizeof(num_arrays));
					if (num_arrays != num_top)
						elog(ERROR, "batch of %llu arrays for a lance_parts write worker of %u fields",
							 (unsigned long long) num_arrays, num_top);
					old = MemoryContextSwitchTo(message_context);
					arrays = palloc0(sizeof(LpArray *) * Max(num_top, 1));
					/* the headers end where the buffers begin: one per node of the types */
					for (uint32 i = 0; i < num_top; i++)
						num_nodes += count_type_nodes(types[i]);
					headers = body;
					buffers = body;
					(void) lp_wire_take(&buffers, sizeof(NodeHeader) * (Size) num_nodes);
					for (uint32 i = 0; i < num_top; i++)
						arrays[i] = take_array(&headers, &buffers, types[i]);
					/* the writer's pages outlive the message */
					MemoryContextSwitchTo(old);
					if (!lp_file_writer_write(writer, arrays, num_top, &err))
						lp_raise(&err);
					break;
				}
			case WRITE_MSG_FINISH:
				{
					uint64		size_bytes;

					if (writer == NULL)
						elog(ERROR, "finish without a file for a lance_parts write worker");
					if (!lp_file_writer_finish(writer, &size_bytes, &err))
						lp_raise(&err);
					lp_file_writer_free(writer);
					writer = NULL;
					/* a shared output's abort only closes it: the leader publishes */
					output->ops->abort(output);
					output = NULL;
					if (shm_mq_send(out, sizeof(size_bytes), &size_bytes, false, true) != SHM_MQ_SUCCESS)
						return;
					break;
				}
			default:
				elog(ERROR, "unknown message '%c' for a lance_parts write worker", message[0]);
		}
	}
	if (writer != NULL)
		elog(ERROR, "the leader of a parallel write left a file unfinished");
}
