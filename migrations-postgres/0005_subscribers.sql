-- Subscribers (issue 26; D1: migrations/0012, which says what each column means): one delivery,
-- several places, each with its own progress. A delivery with one subscriber keeps its progress in
-- its own row; one with several is fanned out to a row here per subscriber, and its own row then
-- only summarises them.

ALTER TABLE deliveries ADD COLUMN fanout integer;
ALTER TABLE deliveries ADD COLUMN subscriber text COLLATE "C";

CREATE TABLE subscriber_runs (
  source       text COLLATE "C" NOT NULL,
  id           text COLLATE "C" NOT NULL,
  subscriber   text COLLATE "C" NOT NULL,
  status       text COLLATE "C" NOT NULL DEFAULT 'received'
               CHECK (status IN ('received', 'processing', 'done', 'failed')),
  attempts     integer NOT NULL DEFAULT 0,
  error        text COLLATE "C",
  handled      boolean,
  received_at  text COLLATE "C" NOT NULL,
  updated_at   text COLLATE "C" NOT NULL,
  lease_token  bigint,
  commit_token bigint,
  attempt_log  jsonb CHECK (jsonb_typeof(attempt_log) = 'array'),
  PRIMARY KEY (source, id, subscriber),
  -- A delivery's runs go with it (retention, or by hand).
  FOREIGN KEY (source, id) REFERENCES deliveries (source, id) ON DELETE CASCADE
);

CREATE INDEX subscriber_runs_pending ON subscriber_runs (received_at) WHERE status IN ('received', 'processing');
CREATE INDEX subscriber_runs_failed ON subscriber_runs (subscriber, received_at) WHERE status = 'failed';

CREATE FUNCTION subscriber_runs_lease_lost() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'lease_lost'
    USING DETAIL = format('subscriber %s of delivery (%s, %s) is %s under lease token %s; commit token %s may not commit',
                          OLD.subscriber, OLD.source, OLD.id, OLD.status, coalesce(OLD.lease_token::text, 'none'), NEW.commit_token);
END
$$;

CREATE TRIGGER subscriber_runs_lease_fence
BEFORE UPDATE OF commit_token ON subscriber_runs
FOR EACH ROW
WHEN (OLD.status NOT IN ('received', 'processing')
  OR NOT (coalesce(OLD.lease_token, 0) < NEW.commit_token OR (OLD.lease_token = NEW.commit_token AND OLD.status = 'processing')))
EXECUTE FUNCTION subscriber_runs_lease_lost();
