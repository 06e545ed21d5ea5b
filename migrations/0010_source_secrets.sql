-- Rotation: when a source's previous secret (<NAME>_WEBHOOK_SECRET_PREVIOUS) last verified a delivery,
-- so that the admin API can say whether the provider still signs with it (src/http/admin/sources.ts).
-- Written only when the previous secret matched, at most about once a minute per source and isolate:
-- nothing on the hot path outside a rotation.
CREATE TABLE source_secrets (
  source              TEXT NOT NULL PRIMARY KEY,
  previous_matched_at TEXT NOT NULL
) WITHOUT ROWID;

-- Provider messages that are not deliveries, counted apart (src/http/handshake.ts): lifecycle messages
-- (Twitch revocation, Graph reauthorizationRequired/missed, SNS UnsubscribeConfirmation) and handshakes
-- with an outbound step (SNS SubscriptionConfirmation, confirmed). One row per source and kind: how many,
-- when the last one came, and what it said (signed text from the provider, shown escaped).
CREATE TABLE provider_messages (
  source      TEXT NOT NULL,
  kind        TEXT NOT NULL,
  count       INTEGER NOT NULL,
  last_at     TEXT NOT NULL,
  last_detail TEXT NOT NULL,
  PRIMARY KEY (source, kind)
) WITHOUT ROWID;
