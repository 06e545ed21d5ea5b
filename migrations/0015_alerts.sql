-- Alerting (issue 27, src/alerts): incidents, the outbox of their messages, and the counters the
-- rules read, so that no rule ever scans the deliveries table.
--
-- Failed deliveries per (source, subscriber, error): kept by the triggers below, on the failure path
-- only (a delivery or a subscriber's run entering or leaving `failed`, or deleted while failed). A
-- delivery done writes nothing more: its rows written stay as they were (test/store/d1/write-cost.test.ts).
-- The error's key is its first 160 characters with every run of digits made one '#' (runs of up to
-- 32), so that "payment 123 not found" and "payment 4567 not found" are one incident, and "gave up
-- after 5 attempts" one whatever the count. `subscriber` is the subscriber that failed: a
-- delivery's own row names it when it has one subscriber (its `subscriber` column, '' when none
-- is named); a fanned-out delivery's failures are its runs' (0012), and its summary row counts only
-- towards the source's total.
CREATE TABLE alert_failures (
  source      TEXT    NOT NULL,
  subscriber  TEXT    NOT NULL DEFAULT '',
  error_key   TEXT    NOT NULL,
  failed_now  INTEGER NOT NULL DEFAULT 0,
  -- When failed_now last rose from 0: since when the incident's failures have been there.
  since       TEXT    NOT NULL,
  last_at     TEXT    NOT NULL,
  PRIMARY KEY (source, subscriber, error_key)
) WITHOUT ROWID;

-- Failures ever, the failure rate's numerators (a replay does not take one back): per source, its
-- failed deliveries (`subscriber` ''; a fanned-out delivery counts when one of its runs fails while
-- none other is failed); and per source and subscriber, that subscriber's failures (a one-subscriber
-- delivery's, or a run's).
CREATE TABLE alert_failure_totals (
  source      TEXT    NOT NULL,
  subscriber  TEXT    NOT NULL DEFAULT '',
  failed_ever INTEGER NOT NULL,
  PRIMARY KEY (source, subscriber)
) WITHOUT ROWID;

CREATE TRIGGER deliveries_alert_failed
AFTER UPDATE OF status ON deliveries
WHEN NEW.status = 'failed' AND OLD.status <> 'failed' AND OLD.fanout IS NULL
BEGIN
  INSERT INTO alert_failures (source, subscriber, error_key, failed_now, since, last_at)
  VALUES (NEW.source, coalesce(NEW.subscriber, ''), replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(substr(coalesce(NEW.error, ''), 1, 160), '0', '#'), '1', '#'), '2', '#'), '3', '#'), '4', '#'), '5', '#'), '6', '#'), '7', '#'), '8', '#'), '9', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#'), 1, NEW.updated_at, NEW.updated_at)
  ON CONFLICT (source, subscriber, error_key) DO UPDATE
    SET since = CASE WHEN failed_now = 0 THEN excluded.since ELSE since END,
        failed_now = failed_now + 1, last_at = excluded.last_at;
  INSERT INTO alert_failure_totals (source, subscriber, failed_ever) VALUES (NEW.source, '', 1)
  ON CONFLICT (source, subscriber) DO UPDATE SET failed_ever = failed_ever + 1;
  INSERT INTO alert_failure_totals (source, subscriber, failed_ever)
  SELECT NEW.source, NEW.subscriber, 1 WHERE NEW.subscriber IS NOT NULL
  ON CONFLICT (source, subscriber) DO UPDATE SET failed_ever = failed_ever + 1;
END;

-- A failed delivery replayed (or put back any other way) is no longer failed.
CREATE TRIGGER deliveries_alert_unfailed
AFTER UPDATE OF status ON deliveries
WHEN OLD.status = 'failed' AND NEW.status <> 'failed' AND OLD.fanout IS NULL
BEGIN
  UPDATE alert_failures SET failed_now = max(0, failed_now - 1)
   WHERE source = OLD.source AND subscriber = coalesce(OLD.subscriber, '') AND error_key = replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(substr(coalesce(OLD.error, ''), 1, 160), '0', '#'), '1', '#'), '2', '#'), '3', '#'), '4', '#'), '5', '#'), '6', '#'), '7', '#'), '8', '#'), '9', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#');
END;

-- Retention deleting a failed delivery (a fanned-out one's runs go with it, below).
CREATE TRIGGER deliveries_alert_failed_deleted
AFTER DELETE ON deliveries
WHEN OLD.status = 'failed' AND OLD.fanout IS NULL
BEGIN
  UPDATE alert_failures SET failed_now = max(0, failed_now - 1)
   WHERE source = OLD.source AND subscriber = coalesce(OLD.subscriber, '') AND error_key = replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(substr(coalesce(OLD.error, ''), 1, 160), '0', '#'), '1', '#'), '2', '#'), '3', '#'), '4', '#'), '5', '#'), '6', '#'), '7', '#'), '8', '#'), '9', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#');
END;

-- The same three for a fanned-out delivery's runs, each under its subscriber.
CREATE TRIGGER subscriber_runs_alert_failed
AFTER UPDATE OF status ON subscriber_runs
WHEN NEW.status = 'failed' AND OLD.status <> 'failed'
BEGIN
  INSERT INTO alert_failures (source, subscriber, error_key, failed_now, since, last_at)
  VALUES (NEW.source, NEW.subscriber, replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(substr(coalesce(NEW.error, ''), 1, 160), '0', '#'), '1', '#'), '2', '#'), '3', '#'), '4', '#'), '5', '#'), '6', '#'), '7', '#'), '8', '#'), '9', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#'), 1, NEW.updated_at, NEW.updated_at)
  ON CONFLICT (source, subscriber, error_key) DO UPDATE
    SET since = CASE WHEN failed_now = 0 THEN excluded.since ELSE since END,
        failed_now = failed_now + 1, last_at = excluded.last_at;
  -- The delivery counts once towards its source's failures: when its first run fails (a summary
  -- that turns failed again, after a replay of another run, is no new failure).
  INSERT INTO alert_failure_totals (source, subscriber, failed_ever)
  SELECT NEW.source, '', 1
   WHERE NOT EXISTS (SELECT 1 FROM subscriber_runs WHERE source = NEW.source AND id = NEW.id AND subscriber <> NEW.subscriber AND status = 'failed')
  ON CONFLICT (source, subscriber) DO UPDATE SET failed_ever = failed_ever + 1;
  INSERT INTO alert_failure_totals (source, subscriber, failed_ever) VALUES (NEW.source, NEW.subscriber, 1)
  ON CONFLICT (source, subscriber) DO UPDATE SET failed_ever = failed_ever + 1;
END;

CREATE TRIGGER subscriber_runs_alert_unfailed
AFTER UPDATE OF status ON subscriber_runs
WHEN OLD.status = 'failed' AND NEW.status <> 'failed'
BEGIN
  UPDATE alert_failures SET failed_now = max(0, failed_now - 1)
   WHERE source = OLD.source AND subscriber = OLD.subscriber AND error_key = replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(substr(coalesce(OLD.error, ''), 1, 160), '0', '#'), '1', '#'), '2', '#'), '3', '#'), '4', '#'), '5', '#'), '6', '#'), '7', '#'), '8', '#'), '9', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#');
END;

CREATE TRIGGER subscriber_runs_alert_failed_deleted
AFTER DELETE ON subscriber_runs
WHEN OLD.status = 'failed'
BEGIN
  UPDATE alert_failures SET failed_now = max(0, failed_now - 1)
   WHERE source = OLD.source AND subscriber = OLD.subscriber AND error_key = replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(substr(coalesce(OLD.error, ''), 1, 160), '0', '#'), '1', '#'), '2', '#'), '3', '#'), '4', '#'), '5', '#'), '6', '#'), '7', '#'), '8', '#'), '9', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#');
END;

-- What failed before this migration, counted once.
INSERT INTO alert_failures (source, subscriber, error_key, failed_now, since, last_at)
SELECT source, coalesce(subscriber, ''), replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(substr(coalesce(error, ''), 1, 160), '0', '#'), '1', '#'), '2', '#'), '3', '#'), '4', '#'), '5', '#'), '6', '#'), '7', '#'), '8', '#'), '9', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#'), COUNT(*), MIN(updated_at), MAX(updated_at)
  FROM deliveries WHERE status = 'failed' AND fanout IS NULL GROUP BY 1, 2, 3;
INSERT INTO alert_failures (source, subscriber, error_key, failed_now, since, last_at)
SELECT source, subscriber, replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(substr(coalesce(error, ''), 1, 160), '0', '#'), '1', '#'), '2', '#'), '3', '#'), '4', '#'), '5', '#'), '6', '#'), '7', '#'), '8', '#'), '9', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#'), COUNT(*), MIN(updated_at), MAX(updated_at)
  FROM subscriber_runs WHERE status = 'failed' GROUP BY 1, 2, 3;

-- Signature failures per source and minute ('YYYY-MM-DDTHH:MM'), written after the 401 by the
-- receiver (at most one write per source a second and isolate, src/http/signature-failures.ts);
-- minutes older than 30 days are dropped by the alert beat (src/alerts/beat.ts ALERT_HISTORY_MS).
CREATE TABLE alert_signature_failures (
  source  TEXT    NOT NULL,
  minute  TEXT    NOT NULL,
  count   INTEGER NOT NULL,
  PRIMARY KEY (source, minute)
) WITHOUT ROWID;

-- Incidents: opened when a rule first holds, resolved when it stops (src/alerts/incidents.ts). At
-- most one open incident per key (rule, source, subscriber, error), whoever evaluates.
CREATE TABLE incidents (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  key          TEXT    NOT NULL,
  rule         TEXT    NOT NULL,
  source       TEXT,
  subscriber   TEXT,
  error_key    TEXT,
  status       TEXT    NOT NULL CHECK (status IN ('open', 'resolved')),
  summary      TEXT    NOT NULL,
  count        INTEGER NOT NULL,
  since        TEXT    NOT NULL,
  opened_at    TEXT    NOT NULL,
  notified_at  TEXT    NOT NULL,
  last_seen_at TEXT    NOT NULL,
  resolved_at  TEXT
);
CREATE UNIQUE INDEX incidents_open_key ON incidents (key) WHERE status = 'open';
CREATE INDEX incidents_by_opening ON incidents (opened_at);

-- The outbox: one row per message and channel, sent by the sweeper's beat with retries
-- (src/alerts/outbox.ts); `body` is the message as JSON (src/alerts/message.ts).
CREATE TABLE alert_messages (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  incident_id  INTEGER NOT NULL,
  kind         TEXT    NOT NULL CHECK (kind IN ('opened', 'reminder', 'resolved')),
  channel      TEXT    NOT NULL,
  body         TEXT    NOT NULL,
  status       TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
  attempts     INTEGER NOT NULL DEFAULT 0,
  created_at   TEXT    NOT NULL,
  next_at      TEXT    NOT NULL,
  sent_at      TEXT,
  last_error   TEXT
);
CREATE INDEX alert_messages_due ON alert_messages (next_at) WHERE status = 'pending';
CREATE INDEX alert_messages_by_incident ON alert_messages (incident_id);
