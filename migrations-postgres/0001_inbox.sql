-- The inbox's schema in Postgres: the D1 schema as migrations/0001..0008 leave it, in one migration
-- (src/store/postgres/ is its store). Same tables, columns, uniqueness, indexes and triggers, so that
-- both stores keep the same promises (src/store/store.ts); only the types are Postgres's own:
--
-- * Every text column is COLLATE "C": SQLite compares text byte by byte (BINARY), and so does "C",
--   whatever the database's locale. Ids and sources then sort and page the same in both stores, and
--   the btree indexes compare bytes instead of calling the locale's collation.
-- * Times stay text: ISO-8601 UTC with milliseconds ("2026-12-03T07:41:45.123Z", src/store/clock.ts),
--   exactly as in D1, so every query, mark (inbox_marks) and cursor speaks one format in both stores,
--   and under "C" text order is time order. A CHECK keeps the deliveries' times in that one shape
--   (another shape, a timestamptz's text say, would compare wrong without any error).
-- * Raw bytes are bytea (body, content_digest); headers and attempt_log are jsonb holding the same
--   JSON as D1's text columns (src/store/headers.ts, src/store/attempts.ts); tokens are bigint
--   (they start from the lease object's clock in ms, past integer); handled is boolean. pg returns
--   bigint as a string: the store converts.
-- * Nothing here, nor in the store, keeps session state (no SET, temporary table, prepared statement
--   by name or advisory lock): Hyperdrive pools connections by transaction, so two statements of one
--   client may run on two server connections unless they are in one transaction.
-- * The triggers are D1's, in PL/pgSQL, each with its WHEN clause on the trigger itself (as in D1),
--   so that a write that passes the fence calls no function at all. An exception raised by a
--   trigger has SQLSTATE P0001 (raise_exception): the store tells `lease_lost` from the handler's
--   own `stale_version` by its message (src/store/postgres/client.ts).
--
-- No rows are copied: a Postgres inbox starts empty (D1's migrations 0006 and 0008 carried rows of
-- earlier versions forward; there are none here).

-- One row per delivery a provider sent us, keyed by the provider's own delivery id (D1: 0001, 0004,
-- 0006, 0008). The primary key is what makes the inbox idempotent: a retry of the same delivery
-- conflicts here and is answered "duplicate" without a second row.
CREATE TABLE deliveries (
  source         text COLLATE "C" NOT NULL,        -- the configured source name, e.g. 'stripe'
  id             text COLLATE "C" NOT NULL,        -- the provider's delivery id (stable across its retries)
  event_type     text COLLATE "C",                 -- the provider's event type, when it names one
  status         text COLLATE "C" NOT NULL DEFAULT 'received'
                 CHECK (status IN ('received', 'processing', 'done', 'failed')),
  -- Handler runs that ended: with a result (done, a retryable failure, failed), or vanished
  -- (counted by the takeover that found their lease expired). Reset by a replay.
  attempts       integer NOT NULL DEFAULT 0,
  error          text COLLATE "C",                 -- the last error; cleared when the delivery is done
  handled        boolean,                          -- on done: true a handler ran, false none matched (unhandled)
  body           bytea,                            -- the raw request bytes, exactly as signed; NULL once pruned
  received_at    text COLLATE "C" NOT NULL
                 CHECK (received_at ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$'),
  updated_at     text COLLATE "C" NOT NULL          -- last state change
                 CHECK (updated_at ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$'),
  -- The token of the last claim the database knows of: a takeover's, or the run whose result was
  -- recorded last (src/store/d1/lifecycle.ts).
  lease_token    bigint,
  commit_token   bigint,                           -- set only by the fenced "done" write; checked by the fence below
  -- SHA-256 of the signed content, for providers whose delivery id is not signed (D1: 0004); NULL otherwise.
  content_digest bytea,
  -- The request headers kept (credentials never): [[name, value], …], names lower-cased; NULL once pruned.
  headers        jsonb CHECK (jsonb_typeof(headers) = 'array'),
  -- The last 50 runs and replays, oldest first (src/store/attempts.ts).
  attempt_log    jsonb CHECK (jsonb_typeof(attempt_log) = 'array'),
  PRIMARY KEY (source, id)
);

-- Deduplication on content: a second row with the same (source, content_digest) conflicts here, so
-- the ingest insert's `ON CONFLICT DO NOTHING` (no conflict target: every unique index counts)
-- answers it "duplicate" in the same statement as the id check. Partial: no entry for the rows
-- without a digest. The digest lives and goes with its row (retention).
CREATE UNIQUE INDEX deliveries_by_content_digest ON deliveries (source, content_digest) WHERE content_digest IS NOT NULL;

-- Newest-first listing by (received_at, source, id), retention's delete, body pruning from its
-- watermark, and the overview's walk. Written once, at insert: none of its columns changes. (In
-- D1 the table is WITHOUT ROWID and every index entry ends with the primary key; here it is spelled out.)
CREATE INDEX deliveries_by_age ON deliveries (received_at, source, id);
-- What is still to do: the sweeper's stranded deliveries, the oldest waiting, the listing of
-- received or processing ones. A row enters it at insert and leaves it when settled.
CREATE INDEX deliveries_pending ON deliveries (received_at, source, id) WHERE status IN ('received', 'processing');
-- Failed deliveries, for their listing and bulk replay: only a failure pays for it.
CREATE INDEX deliveries_failed ON deliveries (received_at, source, id) WHERE status = 'failed';

-- The lease fence (D1: 0006). A handler's effects commit in one transaction that starts by writing
-- commit_token = <the worker's lease token> (src/store/postgres/lifecycle.ts commitDone). It commits
-- only while the delivery is unsettled and no later claim is recorded: its own token is newer than
-- any the database knows, or it is the recorded takeover itself. Tokens only grow, and every
-- takeover is recorded before its handler runs, so a worker whose lease ran out and was taken over
-- commits nothing; the exception rolls back the whole transaction, effects included. (A NULL
-- commit_token makes the condition NULL, which does not fire the trigger: the same in SQLite.)
CREATE FUNCTION deliveries_lease_lost() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'lease_lost'
    USING DETAIL = format('delivery (%s, %s) is %s under lease token %s; commit token %s may not commit',
                          OLD.source, OLD.id, OLD.status, coalesce(OLD.lease_token::text, 'none'), NEW.commit_token);
END
$$;

CREATE TRIGGER deliveries_lease_fence
BEFORE UPDATE OF commit_token ON deliveries
FOR EACH ROW
WHEN (OLD.status NOT IN ('received', 'processing')
  OR NOT (coalesce(OLD.lease_token, 0) < NEW.commit_token OR (OLD.lease_token = NEW.commit_token AND OLD.status = 'processing')))
EXECUTE FUNCTION deliveries_lease_lost();

-- The out-of-order guard (src/processing/order-guard.ts; D1: 0002): per entity, the newest version
-- applied. A handler asks whether its event is newer than what is applied, and the answer is
-- recorded in the same transaction as its effects.
CREATE TABLE entity_versions (
  entity       text COLLATE "C" NOT NULL PRIMARY KEY,  -- chosen by the handler, e.g. 'stripe:customer:cus_123'
  version      bigint NOT NULL,                        -- e.g. the event's created timestamp or a sequence number
  source       text COLLATE "C" NOT NULL,              -- the delivery that applied it
  delivery_id  text COLLATE "C" NOT NULL,
  updated_at   text COLLATE "C" NOT NULL
);

-- Versions only move forward. If a newer event committed between a handler's check and its commit,
-- this aborts the commit (and its effects); the retry then sees the event is stale. It fires on the
-- guard's upsert too: `INSERT … ON CONFLICT (entity) DO UPDATE SET version = …` is an UPDATE OF version.
CREATE FUNCTION entity_versions_stale_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'stale_version'
    USING DETAIL = format('entity %s is at version %s; version %s is not newer', OLD.entity, OLD.version, NEW.version);
END
$$;

CREATE TRIGGER entity_versions_forward_only
BEFORE UPDATE OF version ON entity_versions
FOR EACH ROW
WHEN (NEW.version <= OLD.version)
EXECUTE FUNCTION entity_versions_stale_version();

-- Progress marks of the sweeper's bounded walks and the overview's snapshot (src/store/d1/marks.ts,
-- src/store/d1/overview.ts; D1: 0006), e.g. how far body pruning and the count have come. A few rows.
CREATE TABLE inbox_marks (
  name   text COLLATE "C" NOT NULL PRIMARY KEY,
  value  text COLLATE "C" NOT NULL
);

-- How many deliveries each source has stored, and how many of them are done with no handler
-- matched (D1: 0008): the overview's and the metrics' totals, so that neither counts the table per
-- request. `total`: the sweeper adds the rows received before the `counted_through` mark as it moves
-- the mark along the age index, and retention takes back what it deletes. `unhandled`: kept exact by
-- the triggers below, and by retention for what it deletes. bigint, like COUNT(*).
CREATE TABLE inbox_counts (
  source     text COLLATE "C" NOT NULL PRIMARY KEY,
  total      bigint NOT NULL DEFAULT 0,
  unhandled  bigint NOT NULL DEFAULT 0
);

-- A done mark with no handler matched counts one unhandled delivery. A rerun of the mark is aborted
-- by the fence before this fires (a BEFORE trigger's exception ends the statement), so nothing is
-- counted twice. One upsert where D1 has an UPDATE and a guarded INSERT: two first unhandled
-- deliveries of a source committing at once would otherwise both insert. The source's row stays
-- locked until the done transaction ends: no effects ride with an unhandled delivery, so that is short.
-- `SET search_path FROM CURRENT`: the function finds the inbox_counts of the schema it was made in,
-- whatever the connection's search_path.
CREATE FUNCTION deliveries_count_unhandled() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO inbox_counts AS counts (source, total, unhandled) VALUES (NEW.source, 0, 1)
    ON CONFLICT (source) DO UPDATE SET unhandled = counts.unhandled + 1;
  RETURN NULL;
END
$$;

CREATE TRIGGER deliveries_count_unhandled
AFTER UPDATE OF commit_token ON deliveries
FOR EACH ROW
WHEN (NEW.status = 'done' AND NEW.handled = false)
EXECUTE FUNCTION deliveries_count_unhandled();

-- An unhandled delivery replayed is no longer one (until its new run ends).
CREATE FUNCTION deliveries_uncount_unhandled() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  UPDATE inbox_counts SET unhandled = unhandled - 1 WHERE source = NEW.source;
  RETURN NULL;
END
$$;

CREATE TRIGGER deliveries_uncount_unhandled
AFTER UPDATE OF status ON deliveries
FOR EACH ROW
WHEN (OLD.status = 'done' AND OLD.handled = false AND NEW.status <> 'done')
EXECUTE FUNCTION deliveries_uncount_unhandled();

-- Deliveries received per hour ('YYYY-MM-DDTHH', UTC), for the overview's chart: added by the
-- sweeper's counting walk; hours older than two days are dropped.
CREATE TABLE inbox_hours (
  hour      text COLLATE "C" NOT NULL PRIMARY KEY,
  received  bigint NOT NULL
);
