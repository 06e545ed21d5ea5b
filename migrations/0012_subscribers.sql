-- Subscribers (issue 26): one delivery, several places, each with its own progress.
--
-- A delivery with one subscriber (or none) keeps its progress in its own row, as before: no row
-- more is written for it. A delivery with several is fanned out once (src/store/d1/subscriber-runs.ts):
-- a row here per subscriber, each claimed, retried, failed, committed and replayed on its own under
-- its own lease, and the delivery's row then only summarises them (`fanout`, its status and error).

-- How many subscribers the delivery was fanned out to; NULL: it has one (or none), and this row is its progress.
ALTER TABLE deliveries ADD COLUMN fanout INTEGER;
-- The subscriber whose progress this row is, when it has one (written with its result: no row more).
ALTER TABLE deliveries ADD COLUMN subscriber TEXT;

-- One subscriber's progress on one delivery: the lifecycle columns of `deliveries`, with the same
-- meaning and the same fence (store/d1/lifecycle.ts says why each is as it is). The body, headers
-- and event type stay on the delivery's row, read by the claim.
CREATE TABLE subscriber_runs (
  source       TEXT    NOT NULL,
  id           TEXT    NOT NULL,
  subscriber   TEXT    NOT NULL,                     -- its name: a code subscriber's, or a forward destination's
  status       TEXT    NOT NULL DEFAULT 'received'
               CHECK (status IN ('received', 'processing', 'done', 'failed')),
  attempts     INTEGER NOT NULL DEFAULT 0,
  error        TEXT,
  handled      INTEGER,
  received_at  TEXT    NOT NULL,                     -- the delivery's: runs wait and list in order of arrival
  updated_at   TEXT    NOT NULL,
  lease_token  INTEGER,
  commit_token INTEGER,
  attempt_log  TEXT,
  PRIMARY KEY (source, id, subscriber)
) WITHOUT ROWID;

-- What is still to do, as deliveries_pending (0006): the sweeper's stranded runs.
CREATE INDEX subscriber_runs_pending ON subscriber_runs (received_at) WHERE status IN ('received', 'processing');
-- A subscriber's failed runs, for its listing and its bulk replay by time range.
CREATE INDEX subscriber_runs_failed ON subscriber_runs (subscriber, received_at) WHERE status = 'failed';

-- The same fence as deliveries_lease_fence (0006), for a subscriber's done mark.
CREATE TRIGGER subscriber_runs_lease_fence
BEFORE UPDATE OF commit_token ON subscriber_runs
WHEN OLD.status NOT IN ('received', 'processing')
  OR NOT (coalesce(OLD.lease_token, 0) < NEW.commit_token OR (OLD.lease_token = NEW.commit_token AND OLD.status = 'processing'))
BEGIN
  SELECT RAISE(ABORT, 'lease_lost');
END;

-- A delivery's runs go with it (retention, or by hand). Only a fanned-out delivery has any, so the
-- common delete pays nothing for this.
CREATE TRIGGER deliveries_drop_subscriber_runs
AFTER DELETE ON deliveries
WHEN OLD.fanout IS NOT NULL
BEGIN
  DELETE FROM subscriber_runs WHERE source = OLD.source AND id = OLD.id;
END;
