-- What the dashboard needs (issue 13), at no extra row written on the hot path.
--
-- A delivery's request headers and its attempt history are columns of its own row: the insert and
-- the result marks write that row anyway, and D1 bills rows, not bytes (test/store/write-cost.test.ts).
-- Credential headers are never stored (src/store/headers.ts); retention clears `headers` with the body.
ALTER TABLE deliveries ADD COLUMN headers TEXT;
-- A JSON array, oldest first, of the last 50 runs and replays (src/store/attempt-log.ts).
ALTER TABLE deliveries ADD COLUMN attempt_log TEXT;

-- Done deliveries that no handler matched, for the overview's and the metrics' "unhandled" count
-- without a scan. Only such a delivery pays for it: one row more, when it is marked done.
CREATE INDEX deliveries_unhandled ON deliveries (received_at) WHERE status = 'done' AND handled = 0;

-- How many deliveries each source has stored: the overview's and the metrics' totals, so that
-- neither counts the table per request. The sweeper adds the rows received before the
-- `counted_through` mark as it moves it along the age index (a few statements a sweep, not a row
-- per delivery) and retention takes back what it deletes (src/store/overview.ts).
CREATE TABLE inbox_counts (
  source  TEXT    NOT NULL PRIMARY KEY,
  total   INTEGER NOT NULL
) WITHOUT ROWID;

-- Deliveries received per hour ('YYYY-MM-DDTHH', UTC), for the overview's chart: added by the
-- same walk; hours older than two days are dropped.
CREATE TABLE inbox_hours (
  hour      TEXT    NOT NULL PRIMARY KEY,
  received  INTEGER NOT NULL
) WITHOUT ROWID;
