-- Alerting (issue 27; the D1 store's migrations/0015 says what each table is for and what it costs).
CREATE TABLE alert_failures (
  source      text COLLATE "C" NOT NULL,
  subscriber  text COLLATE "C" NOT NULL DEFAULT '',
  error_key   text COLLATE "C" NOT NULL,
  failed_now  bigint NOT NULL DEFAULT 0,
  since       text COLLATE "C" NOT NULL,
  last_at     text COLLATE "C" NOT NULL,
  PRIMARY KEY (source, subscriber, error_key)
);

-- '' : the source's failed deliveries; a name: that subscriber's failures (D1's 0015 says how each counts).
CREATE TABLE alert_failure_totals (
  source      text COLLATE "C" NOT NULL,
  subscriber  text COLLATE "C" NOT NULL DEFAULT '',
  failed_ever bigint NOT NULL,
  PRIMARY KEY (source, subscriber)
);

-- A failure group's key: an error's first 160 characters with every run of digits (up to 32) one
-- '#' (D1's 0015 spells the same expression out at each use: SQLite has no functions of its own).
CREATE FUNCTION alert_error_key(error text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(substr(coalesce(error, ''), 1, 160), '0', '#'), '1', '#'), '2', '#'), '3', '#'), '4', '#'), '5', '#'), '6', '#'), '7', '#'), '8', '#'), '9', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#'), '##', '#')
$$;

-- A delivery or a subscriber's run entering `failed`, leaving it, or deleted while failed (one
-- function for both tables and the three cases; which subscriber failed as in the D1 migration:
-- a fanned-out delivery's failures are its runs', its summary counts only towards the total).
-- `SET search_path FROM CURRENT`: the tables of the schema it was made in (as 0001's triggers).
CREATE FUNCTION alert_failures_follow() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
  is_summary boolean;
BEGIN
  IF TG_TABLE_NAME = 'deliveries' THEN
    is_summary := OLD.fanout IS NOT NULL;
  ELSE
    is_summary := false;
  END IF;
  IF TG_OP = 'UPDATE' AND NEW.status = 'failed' AND OLD.status <> 'failed' THEN
    IF NOT is_summary THEN
      INSERT INTO alert_failures AS f (source, subscriber, error_key, failed_now, since, last_at)
      VALUES (NEW.source, coalesce(NEW.subscriber, ''), alert_error_key(NEW.error), 1, NEW.updated_at, NEW.updated_at)
      ON CONFLICT (source, subscriber, error_key) DO UPDATE
        SET since = CASE WHEN f.failed_now = 0 THEN excluded.since ELSE f.since END,
            failed_now = f.failed_now + 1, last_at = excluded.last_at;
    END IF;
    -- A delivery counts once towards its source's failures: a one-subscriber one when it fails, a
    -- fanned-out one when a run fails while none other is failed (its summary never counts).
    IF (TG_TABLE_NAME = 'deliveries' AND NOT is_summary)
       OR (TG_TABLE_NAME = 'subscriber_runs'
           AND NOT EXISTS (SELECT 1 FROM subscriber_runs AS r WHERE r.source = NEW.source AND r.id = NEW.id AND r.subscriber <> NEW.subscriber AND r.status = 'failed')) THEN
      INSERT INTO alert_failure_totals AS t (source, subscriber, failed_ever) VALUES (NEW.source, '', 1)
      ON CONFLICT (source, subscriber) DO UPDATE SET failed_ever = t.failed_ever + 1;
    END IF;
    -- And the subscriber that failed, when one is named (a summary names none).
    IF NOT is_summary AND NEW.subscriber IS NOT NULL THEN
      INSERT INTO alert_failure_totals AS t (source, subscriber, failed_ever) VALUES (NEW.source, NEW.subscriber, 1)
      ON CONFLICT (source, subscriber) DO UPDATE SET failed_ever = t.failed_ever + 1;
    END IF;
  ELSIF OLD.status = 'failed' AND (TG_OP = 'DELETE' OR NEW.status <> 'failed') AND NOT is_summary THEN
    UPDATE alert_failures SET failed_now = greatest(0, failed_now - 1)
     WHERE source = OLD.source AND subscriber = coalesce(OLD.subscriber, '') AND error_key = alert_error_key(OLD.error);
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER deliveries_alert_failures_update AFTER UPDATE OF status ON deliveries
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND (OLD.status = 'failed' OR NEW.status = 'failed'))
  EXECUTE FUNCTION alert_failures_follow();
CREATE TRIGGER deliveries_alert_failures_delete AFTER DELETE ON deliveries
  FOR EACH ROW WHEN (OLD.status = 'failed')
  EXECUTE FUNCTION alert_failures_follow();
CREATE TRIGGER subscriber_runs_alert_failures_update AFTER UPDATE OF status ON subscriber_runs
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND (OLD.status = 'failed' OR NEW.status = 'failed'))
  EXECUTE FUNCTION alert_failures_follow();
CREATE TRIGGER subscriber_runs_alert_failures_delete AFTER DELETE ON subscriber_runs
  FOR EACH ROW WHEN (OLD.status = 'failed')
  EXECUTE FUNCTION alert_failures_follow();

-- What failed before this migration, counted once: one-subscriber deliveries and fanned-out runs.
INSERT INTO alert_failures (source, subscriber, error_key, failed_now, since, last_at)
SELECT source, subscriber, alert_error_key(error), count(*), min(updated_at), max(updated_at)
  FROM (SELECT source, coalesce(subscriber, '') AS subscriber, error, updated_at FROM deliveries WHERE status = 'failed' AND fanout IS NULL
        UNION ALL
        SELECT source, subscriber, error, updated_at FROM subscriber_runs WHERE status = 'failed') AS failed
 GROUP BY 1, 2, 3;

CREATE TABLE alert_signature_failures (
  source  text COLLATE "C" NOT NULL,
  minute  text COLLATE "C" NOT NULL,
  count   bigint NOT NULL,
  PRIMARY KEY (source, minute)
);

CREATE TABLE incidents (
  id           bigserial PRIMARY KEY,
  key          text COLLATE "C" NOT NULL,
  rule         text COLLATE "C" NOT NULL,
  source       text COLLATE "C",
  subscriber   text COLLATE "C",
  error_key    text,
  status       text COLLATE "C" NOT NULL CHECK (status IN ('open', 'resolved')),
  summary      text NOT NULL,
  count        bigint NOT NULL,
  since        text COLLATE "C" NOT NULL,
  opened_at    text COLLATE "C" NOT NULL,
  notified_at  text COLLATE "C" NOT NULL,
  last_seen_at text COLLATE "C" NOT NULL,
  resolved_at  text COLLATE "C"
);
CREATE UNIQUE INDEX incidents_open_key ON incidents (key) WHERE status = 'open';
CREATE INDEX incidents_by_opening ON incidents (opened_at);

CREATE TABLE alert_messages (
  id           bigserial PRIMARY KEY,
  incident_id  bigint NOT NULL,
  kind         text COLLATE "C" NOT NULL CHECK (kind IN ('opened', 'reminder', 'resolved')),
  channel      text COLLATE "C" NOT NULL,
  body         text NOT NULL,
  status       text COLLATE "C" NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
  attempts     integer NOT NULL DEFAULT 0,
  created_at   text COLLATE "C" NOT NULL,
  next_at      text COLLATE "C" NOT NULL,
  sent_at      text COLLATE "C",
  last_error   text
);
CREATE INDEX alert_messages_due ON alert_messages (next_at) WHERE status = 'pending';
CREATE INDEX alert_messages_by_incident ON alert_messages (incident_id);
