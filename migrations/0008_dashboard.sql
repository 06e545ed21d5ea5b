-- What the dashboard needs (issue 13), at no extra row written on the hot path.
--
-- A delivery's request headers and its attempt history are columns of its own row: the insert and
-- the result marks write that row anyway, and D1 bills rows, not bytes (test/store/d1/write-cost.test.ts).
-- Credential headers are never stored (src/store/headers.ts); retention clears `headers` with the body.
ALTER TABLE deliveries ADD COLUMN headers TEXT;
-- A JSON array, oldest first, of the last 50 runs and replays (src/store/d1/attempt-log.ts).
ALTER TABLE deliveries ADD COLUMN attempt_log TEXT;

-- How many deliveries each source has stored, and how many of them are done with no handler
-- matched: the overview's and the metrics' totals, so that neither counts the table per request.
-- `total`: the sweeper adds the rows received before the `counted_through` mark as it moves the mark
-- along the age index (a few statements a sweep, not a row per delivery), and retention takes back
-- what it deletes (src/store/d1/overview.ts, src/store/d1/sweep.ts).
-- `unhandled`: kept exact by the triggers below, and by retention for what it deletes.
CREATE TABLE inbox_counts (
  source     TEXT    NOT NULL PRIMARY KEY,
  total      INTEGER NOT NULL DEFAULT 0,
  unhandled  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- A done mark with no handler matched counts one unhandled delivery: one row written, paid by those
-- deliveries only (a handled one writes nothing more). A rerun of the mark is aborted by the fence
-- trigger before this one fires, so nothing is counted twice.
CREATE TRIGGER deliveries_count_unhandled
AFTER UPDATE OF commit_token ON deliveries
WHEN NEW.status = 'done' AND NEW.handled = 0
BEGIN
  UPDATE inbox_counts SET unhandled = unhandled + 1 WHERE source = NEW.source;
  INSERT INTO inbox_counts (source, total, unhandled) SELECT NEW.source, 0, 1
   WHERE NOT EXISTS (SELECT 1 FROM inbox_counts WHERE source = NEW.source);
END;

-- An unhandled delivery replayed is no longer one (until its new run ends).
CREATE TRIGGER deliveries_uncount_unhandled
AFTER UPDATE OF status ON deliveries
WHEN OLD.status = 'done' AND OLD.handled = 0 AND NEW.status <> 'done'
BEGIN
  UPDATE inbox_counts SET unhandled = unhandled - 1 WHERE source = NEW.source;
END;

-- Deliveries received per hour ('YYYY-MM-DDTHH', UTC), for the overview's chart: added by the
-- same walk; hours older than two days are dropped.
CREATE TABLE inbox_hours (
  hour      TEXT    NOT NULL PRIMARY KEY,
  received  INTEGER NOT NULL
) WITHOUT ROWID;

-- An inbox upgraded with deliveries already stored: they are counted once, here, up to a mark two
-- minutes back (the walk's lag), so that the overview does not count them on every refresh until
-- the sweeper's walk has caught up. (An empty inbox starts without a mark: the walk sets it.)
INSERT INTO inbox_marks (name, value)
SELECT 'counted_through', strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-2 minutes') WHERE EXISTS (SELECT 1 FROM deliveries)
  ON CONFLICT (name) DO NOTHING;
INSERT INTO inbox_counts (source, total, unhandled)
SELECT source,
       SUM(received_at < coalesce((SELECT value FROM inbox_marks WHERE name = 'counted_through'), '')),
       SUM(status = 'done' AND handled IS 0)
  FROM deliveries GROUP BY source;
INSERT INTO inbox_hours (hour, received)
SELECT substr(received_at, 1, 13), COUNT(*) FROM deliveries
 WHERE received_at >= strftime('%Y-%m-%dT%H', 'now', '-2 days')
   AND received_at < (SELECT value FROM inbox_marks WHERE name = 'counted_through')
 GROUP BY 1;
