-- The out-of-order guard (src/processing/order-guard.ts): per entity, the newest version applied.
-- Providers do not promise order; a handler asks whether its event is newer than what is applied,
-- and the answer is recorded in the same transaction as the handler's effects.
CREATE TABLE entity_versions (
  entity       TEXT    NOT NULL PRIMARY KEY,   -- chosen by the handler, e.g. 'stripe:customer:cus_123'
  version      INTEGER NOT NULL,               -- e.g. the event's created timestamp or a sequence number
  source       TEXT    NOT NULL,               -- the delivery that applied it
  delivery_id  TEXT    NOT NULL,
  updated_at   TEXT    NOT NULL
);

-- Versions only move forward. If a newer event committed between a handler's check and its
-- commit, this aborts the commit (and its effects); the retry then sees the event is stale.
CREATE TRIGGER entity_versions_forward_only
BEFORE UPDATE OF version ON entity_versions
WHEN NEW.version <= OLD.version
BEGIN
  SELECT RAISE(ABORT, 'stale_version');
END;
