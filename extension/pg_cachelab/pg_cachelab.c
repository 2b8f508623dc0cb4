/*-------------------------------------------------------------------------
 *
 * pg_cachelab.c
 *	  Per-relation aggregates of shared_buffers in one pass over the buffer
 *	  descriptors, for pgcachelab's `inspect` (issue 7, seed 003).
 *
 * pg_buffercache returns one row per buffer (32 bytes each, materialised in
 * a tuplestore) and leaves the grouping to the query; at 8GB of
 * shared_buffers that is a million rows to hash.  Here the grouping happens
 * during the scan, in a backend-local hash table keyed by (database,
 * tablespace, relfilenumber, fork): memory grows with the number of relation
 * forks in the cache, never with NBuffers.
 *
 * Four modes, named for what they promise (seed 003 proposed the last
 * three under the names consistent, semiconsistent and nonconsistent):
 *
 * consistent: every buffer header is read under its header spinlock, as
 *	  pg_buffercache_pages() does since PostgreSQL 10: one lock at a time,
 *	  held only for copying the tag and the state word.  Each buffer's tag,
 *	  flags, usage count and pin count belong together; buffers are not read
 *	  at the same instant, so the whole is not a snapshot (nor is
 *	  pg_buffercache's).
 *
 * fast: no lock at all.  The state word is read atomically, the tag copied,
 *	  and the state read again; when the header was locked or the state
 *	  changed in between the read is retried a few times, then the last copy
 *	  is used as it is.  What it can show that `consistent` cannot: a buffer
 *	  being re-tagged at that moment counted under its old or new relation,
 *	  or with flags (dirty, pinned, usage count) from just before or after
 *	  the tag it is counted under.  Tags only change under the header lock,
 *	  and a re-tag also changes the state word, so this needs the buffer to
 *	  change hands during the few nanoseconds of the read and the retries.
 *
 * semiconsistent: the buffer-mapping partitions are taken one at a time, in
 *	  shared mode, and under partition P's lock every buffer whose tag maps
 *	  to P is counted (its header read under its spinlock, as consistent).
 *	  A buffer enters or leaves a partition only under that partition's lock
 *	  held exclusively, so while P is held the set of pages P maps is frozen:
 *	  each partition's part of the count is a snapshot of that partition, and
 *	  no moment holds more than one partition lock (a backend that misses
 *	  shared_buffers waits only if its page maps to the one partition held).
 *	  A buffer is counted once at most (a bitmap of the buffers counted): one
 *	  that moves from a partition already read to one not yet read counts
 *	  for its first page only, and one that moves the other way is missed.
 *	  It costs one pass over all buffer headers per partition (128 passes;
 *	  buffers already counted are skipped): slower to take than the others,
 *	  as the seed found, and it grows with shared_buffers.
 *
 * snapshot: every buffer-mapping partition lock taken, in shared mode and in
 *	  order (as pg_buffercache did before PostgreSQL 10, the seed's
 *	  "consistent"), for one pass: no page can enter or leave shared_buffers
 *	  meanwhile, so which pages are cached is an exact snapshot; a page's
 *	  flags (dirty, pinned, usage count) and a read in progress becoming
 *	  valid still change, as they need no partition lock.  Every backend
 *	  that misses shared_buffers waits for the whole pass: this is the
 *	  reference the other modes are measured against, not a monitoring mode.
 *
 * None of them ever holds more than one buffer header lock, calls
 * CHECK_FOR_INTERRUPTS() or allocates memory while holding one.  consistent
 * and fast check for interrupts every few thousand buffers, semiconsistent
 * between partitions (an LWLock holds interrupts off), so a cancel or a
 * shutdown's SIGTERM ends a scan promptly; snapshot's one pass cannot be
 * interrupted.
 *
 * Supported: PostgreSQL 15 to 18 (BufferTag changed in 16; the state word
 * becomes 64-bit in 19).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/tuplestore.h"

#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 190000
#error "pg_cachelab supports PostgreSQL 15 to 18"
#endif

#if PG_VERSION_NUM >= 180000
PG_MODULE_MAGIC_EXT(.name = "pg_cachelab", .version = "1.0");
#else
PG_MODULE_MAGIC;
#endif

/* 15.0 called it SetSingleFuncCall; renamed in 15.1 (commit 9e98583898). */
#if PG_VERSION_NUM < 150001
#define InitMaterializedSRF SetSingleFuncCall
#endif

#define RELATIONS_COLUMNS 13
#define TOTALS_COLUMNS 5
#define INTERRUPT_CHECK_INTERVAL 4096	/* buffers; a power of two */
#define FAST_MODE_RETRIES 3
#define INITIAL_RELATIONS 1024

typedef enum CachelabMode
{
	CACHELAB_CONSISTENT,
	CACHELAB_FAST,
	CACHELAB_SEMICONSISTENT,
	CACHELAB_SNAPSHOT,
} CachelabMode;

/* Called once per buffer that holds a valid page, with its tag and state word. */
typedef void (*BufferVisitor) (const BufferTag *tag, uint32 state, void *arg);

/* Hashed as raw bytes (HASH_BLOBS): four 4-byte fields, no padding. */
typedef struct CachelabRelationKey
{
	Oid			database;
	Oid			tablespace;
	Oid			relnumber;		/* RelFileNumber from 16, relNode before */
	int32		fork;
} CachelabRelationKey;

typedef struct CachelabRelation
{
	CachelabRelationKey key;	/* first: dynahash's requirement */
	int64		buffers;
	int64		dirty;
	int64		pinned;
	int64		usage_counts[BM_MAX_USAGE_COUNT + 1];
} CachelabRelation;

typedef struct CachelabTotals
{
	int64		used;
	int64		dirty;
	int64		pinned;
} CachelabTotals;

PG_FUNCTION_INFO_V1(pg_cachelab_relations);
PG_FUNCTION_INFO_V1(pg_cachelab_totals);

static CachelabMode
parse_mode(text *mode_text)
{
	char	   *mode = text_to_cstring(mode_text);

	if (strcmp(mode, "consistent") == 0)
		return CACHELAB_CONSISTENT;
	if (strcmp(mode, "fast") == 0)
		return CACHELAB_FAST;
	if (strcmp(mode, "semiconsistent") == 0)
		return CACHELAB_SEMICONSISTENT;
	if (strcmp(mode, "snapshot") == 0)
		return CACHELAB_SNAPSHOT;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid pg_cachelab mode: \"%s\"", mode),
			 errhint("Valid modes are \"consistent\", \"fast\", \"semiconsistent\" and "
					 "\"snapshot\".")));
	return CACHELAB_CONSISTENT; /* keep the compiler quiet */
}

/*
 * Copy one buffer's tag into *tag and return its state word.
 *
 * fast takes no lock (see the file header for what that can show); every
 * other mode takes and releases the buffer's header spinlock, and nothing
 * else happens while it is held.
 */
static inline uint32
read_buffer_header(BufferDesc *desc, CachelabMode mode, BufferTag *tag)
{
	uint32		state;

	if (mode != CACHELAB_FAST)
	{
		state = LockBufHdr(desc);
		*tag = desc->tag;
		UnlockBufHdr(desc, state);
		return state;
	}

	for (int attempt = 0;; attempt++)
	{
		uint32		before = pg_atomic_read_u32(&desc->state);

		pg_read_barrier();
		memcpy(tag, &desc->tag, sizeof(BufferTag));
		pg_read_barrier();
		state = pg_atomic_read_u32(&desc->state);
		if ((state == before && !(state & BM_LOCKED)) || attempt >= FAST_MODE_RETRIES)
			return state;
	}
}

/*
 * Refuse a caller whose row type does not have the columns this library
 * fills: an SQL definition of another version of the extension than the
 * library loaded (or a function made by hand on this symbol).  Without the
 * check the values would be formed into a row of other types.
 */
static void
check_columns(TupleDesc tupdesc, int columns, const char *function)
{
	if (tupdesc->natts != columns)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("function %s returns %d columns, but its caller expects %d",
						function, columns, tupdesc->natts),
				 errhint("Update the extension's SQL definition to match its library: "
						 "ALTER EXTENSION pg_cachelab UPDATE.")));
}

/* What pg_buffercache calls isvalid: a page of some relation is in the buffer. */
static inline bool
buffer_in_use(uint32 state)
{
	return (state & BM_VALID) && (state & BM_TAG_VALID);
}

static inline void
relation_key(const BufferTag *tag, CachelabRelationKey *key)
{
	memset(key, 0, sizeof(*key));
#if PG_VERSION_NUM >= 160000
	key->database = tag->dbOid;
	key->tablespace = tag->spcOid;
	key->relnumber = BufTagGetRelNumber(tag);
	key->fork = (int32) BufTagGetForkNum(tag);
#else
	key->database = tag->rnode.dbNode;
	key->tablespace = tag->rnode.spcNode;
	key->relnumber = tag->rnode.relNode;
	key->fork = (int32) tag->forkNum;
#endif
}

static inline int
tag_partition(const BufferTag *tag)
{
	return (int) BufTableHashPartition(BufTableHashCode((BufferTag *) tag));
}

/* One pass over every buffer header: consistent, fast and, under all partition locks, snapshot. */
static void
scan_in_one_pass(CachelabMode mode, BufferVisitor visit, void *arg)
{
	for (int i = 0; i < NBuffers; i++)
	{
		BufferTag	tag;
		uint32		state;

		/* never while a header lock is held: read_buffer_header releases it */
		if ((i & (INTERRUPT_CHECK_INTERVAL - 1)) == 0)
			CHECK_FOR_INTERRUPTS();
		state = read_buffer_header(GetBufferDescriptor(i), mode, &tag);
		if (buffer_in_use(state))
			visit(&tag, state, arg);
	}
}

/*
 * semiconsistent: partition by partition, each buffer mapped to the partition
 * held.  The unlocked read of a tag only chooses which headers to lock: a
 * buffer mapped to the partition held cannot change its tag meanwhile, so its
 * unlocked read is exact, and one that seemed to map there but does not (a
 * torn read of a buffer changing hands elsewhere) is dropped once its locked
 * read says so.
 */
static void
scan_by_partition(BufferVisitor visit, void *arg)
{
	bits8	   *counted = palloc0((NBuffers + 7) / 8);

	for (int partition = 0; partition < NUM_BUFFER_PARTITIONS; partition++)
	{
		LWLock	   *lock = BufMappingPartitionLockByIndex(partition);

		CHECK_FOR_INTERRUPTS();
		LWLockAcquire(lock, LW_SHARED);
		for (int i = 0; i < NBuffers; i++)
		{
			BufferDesc *desc;
			BufferTag	tag;
			uint32		state;

			if (counted[i / 8] & (1 << (i % 8)))
				continue;
			desc = GetBufferDescriptor(i);
			if (!(pg_atomic_read_u32(&desc->state) & BM_TAG_VALID))
				continue;
			memcpy(&tag, &desc->tag, sizeof(BufferTag));
			if (tag_partition(&tag) != partition)
				continue;
			state = read_buffer_header(desc, CACHELAB_SEMICONSISTENT, &tag);
			if (!(state & BM_TAG_VALID) || tag_partition(&tag) != partition)
				continue;
			counted[i / 8] |= (1 << (i % 8));
			if (buffer_in_use(state))
				visit(&tag, state, arg);
		}
		LWLockRelease(lock);
	}
	pfree(counted);
}

/* Every buffer that holds a valid page, read as `mode` promises, given to `visit`. */
static void
scan_buffers(CachelabMode mode, BufferVisitor visit, void *arg)
{
	switch (mode)
	{
		case CACHELAB_CONSISTENT:
		case CACHELAB_FAST:
			scan_in_one_pass(mode, visit, arg);
			break;
		case CACHELAB_SEMICONSISTENT:
			scan_by_partition(visit, arg);
			break;
		case CACHELAB_SNAPSHOT:
			/* in order, as every other taker of several of them does (no deadlock) */
			for (int partition = 0; partition < NUM_BUFFER_PARTITIONS; partition++)
				LWLockAcquire(BufMappingPartitionLockByIndex(partition), LW_SHARED);
			scan_in_one_pass(mode, visit, arg);
			for (int partition = NUM_BUFFER_PARTITIONS - 1; partition >= 0; partition--)
				LWLockRelease(BufMappingPartitionLockByIndex(partition));
			break;
	}
}

/*
 * Add one valid buffer to its relation's counters.  Neighbouring buffers
 * usually hold the same relation (a scan or a prewarm fills consecutive
 * victims), so the previous entry is tried before the hash table: dynahash
 * never moves an entry, and nothing is removed during the scan.
 */
typedef struct RelationCounts
{
	HTAB	   *relations;
	CachelabRelation *previous;
} RelationCounts;

static void
count_buffer(const BufferTag *tag, uint32 state, void *arg)
{
	RelationCounts *counts = (RelationCounts *) arg;
	CachelabRelationKey key;
	CachelabRelation *relation = counts->previous;
	bool		found;
	uint32		usage_count;

	relation_key(tag, &key);
	if (relation == NULL || memcmp(&relation->key, &key, sizeof(key)) != 0)
	{
		relation = (CachelabRelation *) hash_search(counts->relations, &key, HASH_ENTER, &found);
		if (!found)
		{
			relation->buffers = 0;
			relation->dirty = 0;
			relation->pinned = 0;
			memset(relation->usage_counts, 0, sizeof(relation->usage_counts));
		}
	}
	relation->buffers++;
	if (state & BM_DIRTY)
		relation->dirty++;
	if (BUF_STATE_GET_REFCOUNT(state) > 0)
		relation->pinned++;
	usage_count = BUF_STATE_GET_USAGECOUNT(state);
	relation->usage_counts[Min(usage_count, BM_MAX_USAGE_COUNT)]++;
	counts->previous = relation;
}

/*
 * pg_cachelab_relations(mode text) returns one row per relation fork with at
 * least one valid buffer: its buffers, dirty buffers, pinned buffers and the
 * usage-count histogram, read as the mode promises (see the file header).
 */
Datum
pg_cachelab_relations(PG_FUNCTION_ARGS)
{
	CachelabMode mode = parse_mode(PG_GETARG_TEXT_PP(0));
	ReturnSetInfo *rsinfo;
	HASHCTL		hash_control;
	RelationCounts counts = {0};
	HASH_SEQ_STATUS cursor;
	CachelabRelation *relation;

	InitMaterializedSRF(fcinfo, 0);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	check_columns(rsinfo->setDesc, RELATIONS_COLUMNS, "pg_cachelab_relations");

	memset(&hash_control, 0, sizeof(hash_control));
	hash_control.keysize = sizeof(CachelabRelationKey);
	hash_control.entrysize = sizeof(CachelabRelation);
	hash_control.hcxt = CurrentMemoryContext;
	counts.relations = hash_create("pg_cachelab relations", INITIAL_RELATIONS, &hash_control,
								   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	scan_buffers(mode, count_buffer, &counts);

	hash_seq_init(&cursor, counts.relations);
	while ((relation = (CachelabRelation *) hash_seq_search(&cursor)) != NULL)
	{
		Datum		values[RELATIONS_COLUMNS];
		bool		nulls[RELATIONS_COLUMNS];

		memset(nulls, 0, sizeof(nulls));
		values[0] = ObjectIdGetDatum(relation->key.database);
		values[1] = ObjectIdGetDatum(relation->key.tablespace);
		values[2] = ObjectIdGetDatum(relation->key.relnumber);
		values[3] = Int16GetDatum((int16) relation->key.fork);
		values[4] = Int64GetDatum(relation->buffers);
		values[5] = Int64GetDatum(relation->dirty);
		values[6] = Int64GetDatum(relation->pinned);
		for (int usage = 0; usage <= BM_MAX_USAGE_COUNT; usage++)
			values[7 + usage] = Int64GetDatum(relation->usage_counts[usage]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	hash_destroy(counts.relations);

	return (Datum) 0;
}

static void
add_to_totals(const BufferTag *tag, uint32 state, void *arg)
{
	CachelabTotals *totals = (CachelabTotals *) arg;

	totals->used++;
	if (state & BM_DIRTY)
		totals->dirty++;
	if (BUF_STATE_GET_REFCOUNT(state) > 0)
		totals->pinned++;
}

/*
 * pg_cachelab_totals(mode text) returns one row: all buffers, used ones
 * (holding a valid page), free ones, and the dirty and pinned among the
 * used, so that the per-relation rows of a quiet server add up to it.  Same
 * locking as pg_cachelab_relations; no memory beyond the row (semiconsistent:
 * and its bitmap, one bit per buffer).
 */
Datum
pg_cachelab_totals(PG_FUNCTION_ARGS)
{
	CachelabMode mode = parse_mode(PG_GETARG_TEXT_PP(0));
	CachelabTotals totals = {0};
	TupleDesc	tupdesc;
	Datum		values[TOTALS_COLUMNS];
	bool		nulls[TOTALS_COLUMNS];

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	check_columns(tupdesc, TOTALS_COLUMNS, "pg_cachelab_totals");

	scan_buffers(mode, add_to_totals, &totals);

	memset(nulls, 0, sizeof(nulls));
	values[0] = Int64GetDatum((int64) NBuffers);
	values[1] = Int64GetDatum(totals.used);
	values[2] = Int64GetDatum((int64) NBuffers - totals.used);
	values[3] = Int64GetDatum(totals.dirty);
	values[4] = Int64GetDatum(totals.pinned);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
