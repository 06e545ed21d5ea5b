-- One row per delivery a provider sent us, keyed by the provider's own delivery id.
-- The primary key is what makes the inbox idempotent: a retry of the same delivery
-- conflicts here and is answered "duplicate" without a second row.
CREATE TABLE deliveries (
  source       TEXT    NOT NULL,                    -- the configured source name, e.g. 'stripe'
  id           TEXT    NOT NULL,                    -- the provider's delivery id (stable across its retries)
  event_type   TEXT,                                -- the provider's event type, when it names one
  status       TEXT    NOT NULL DEFAULT 'received'
               CHECK (status IN ('received', 'processing', 'done', 'failed')),
  attempts     INTEGER NOT NULL DEFAULT 0,          -- handler runs started (claims), reset by a replay
  error        TEXT,                                -- the last error; cleared when the delivery is done
  handled      INTEGER,                             -- on done: 1 a handler ran, 0 no handler matched (unhandled)
  body         BLOB,                                -- the raw request bytes, exactly as signed; NULL once pruned
  received_at  TEXT    NOT NULL,                    -- ISO-8601 UTC, e.g. 2026-12-03T07:41:45.123Z
  updated_at   TEXT    NOT NULL,                    -- ISO-8601 UTC, last state change
  lease_token  INTEGER,                             -- fencing token of the current claim (see processing/lease.ts)
  commit_token INTEGER,                             -- set only by the fenced "done" write; checked by the trigger below
  PRIMARY KEY (source, id)
);

-- Listing and counting by state and age (admin API, sweeper, `wrangler d1 execute`).
CREATE INDEX deliveries_by_status_age ON deliveries (status, received_at);
-- Retention deletes by age regardless of state.
CREATE INDEX deliveries_by_age ON deliveries (received_at);

-- The lease fence. A handler's effects are committed in one D1 batch that starts by writing
-- commit_token = <the worker's lease token>. If that token is not the current lease, this
-- trigger aborts the statement, and with it the whole batch: a worker whose lease ran out
-- (and was taken over) commits nothing.
CREATE TRIGGER deliveries_lease_fence
BEFORE UPDATE OF commit_token ON deliveries
WHEN NEW.commit_token IS NOT OLD.lease_token OR OLD.status IS NOT 'processing'
BEGIN
  SELECT RAISE(ABORT, 'lease_lost');
END;
