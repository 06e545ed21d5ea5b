-- Fewer rows written per delivery (issue 12). Each row written is billed, and D1 runs one query
-- at a time per database, so the writes of one delivery are also the inbox's throughput ceiling.
-- D1 counts a row for the table and one for each index entry a statement inserts (removing an
-- entry costs nothing), measured in test/store/d1/write-cost.test.ts. Before: 9 rows per delivery
-- on the hot path (insert 4: the rowid table, its primary-key index, two indexes; the
-- `processing` mark 2; the `done` mark 3, with the body-pruning index). After: 4.
--
--   insert      the table (WITHOUT ROWID: the primary key is the table) + deliveries_by_age
--               + deliveries_pending                                                    3 rows
--   done mark   the table; leaving deliveries_pending is free                           1 row
--
-- The first claim of a delivery no longer writes D1 at all (src/store/d1/lifecycle.ts: the lease
-- object knows who holds it; D1 records only takeovers), and body pruning walks the age index from
-- a watermark instead of a partial index that every done row entered.
--
-- The table is rebuilt once, in this migration: every row is copied.

CREATE TABLE deliveries_new (
  source         TEXT    NOT NULL,
  id             TEXT    NOT NULL,
  event_type     TEXT,
  status         TEXT    NOT NULL DEFAULT 'received'
                 CHECK (status IN ('received', 'processing', 'done', 'failed')),
  -- Handler runs that ended: with a result (done, a retryable failure, failed), or vanished
  -- (counted by the takeover that found their lease expired). Reset by a replay.
  attempts       INTEGER NOT NULL DEFAULT 0,
  error          TEXT,
  handled        INTEGER,
  body           BLOB,
  received_at    TEXT    NOT NULL,
  updated_at     TEXT    NOT NULL,
  -- The token of the last claim D1 knows of: a takeover's, or the run whose result was recorded last.
  lease_token    INTEGER,
  commit_token   INTEGER,
  content_digest BLOB,
  PRIMARY KEY (source, id)
) WITHOUT ROWID;

INSERT INTO deliveries_new (source, id, event_type, status, attempts, error, handled, body, received_at, updated_at, lease_token, commit_token, content_digest)
SELECT source, id, event_type, status,
       -- A run in progress was counted when it started; from now on runs count when they end.
       CASE WHEN status = 'processing' THEN max(0, attempts - 1) ELSE attempts END,
       error, handled, body, received_at, updated_at, lease_token, commit_token, content_digest FROM deliveries;

-- Drops the old table's indexes and its fence trigger with it.
DROP TABLE deliveries;
ALTER TABLE deliveries_new RENAME TO deliveries;

-- Newest-first listing (its entries end with the primary key, so they sort by (received_at,
-- source, id)), retention's delete, and body pruning from its watermark. Written once, at insert.
CREATE INDEX deliveries_by_age ON deliveries (received_at);
-- What is still to do: the sweeper's stranded deliveries, the oldest waiting, the listing of
-- received or processing ones. A row enters it at insert and leaves it, for free, when settled.
CREATE INDEX deliveries_pending ON deliveries (received_at) WHERE status IN ('received', 'processing');
-- Failed deliveries, for their listing and bulk replay: only a failure pays for it.
CREATE INDEX deliveries_failed ON deliveries (received_at) WHERE status = 'failed';
-- As in 0004: deduplication on content, for the sources whose delivery id is not signed.
CREATE UNIQUE INDEX deliveries_by_content_digest ON deliveries (source, content_digest) WHERE content_digest IS NOT NULL;

-- The lease fence, for claims that D1 mostly does not see. A handler's effects commit in one batch
-- that starts by writing commit_token = <the worker's lease token> (src/store/d1/lifecycle.ts
-- markDone). It commits only while the delivery is unsettled and no later claim is recorded:
-- its own token is newer than any D1 knows, or it is the recorded takeover itself. Tokens only
-- grow, and every takeover is recorded before its handler runs, so a worker whose lease ran out
-- and was taken over commits nothing; an abort rolls back the whole batch, effects included.
CREATE TRIGGER deliveries_lease_fence
BEFORE UPDATE OF commit_token ON deliveries
WHEN OLD.status NOT IN ('received', 'processing')
  OR NOT (coalesce(OLD.lease_token, 0) < NEW.commit_token OR (OLD.lease_token = NEW.commit_token AND OLD.status = 'processing'))
BEGIN
  SELECT RAISE(ABORT, 'lease_lost');
END;

-- Progress marks of the sweeper's bounded walks, e.g. how far body pruning has come
-- (src/store/d1/sweep.ts). A few rows, written at most once per sweep.
CREATE TABLE inbox_marks (
  name   TEXT NOT NULL PRIMARY KEY,
  value  TEXT NOT NULL
) WITHOUT ROWID;
