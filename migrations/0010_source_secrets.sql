-- Rotation: when a source's previous secret (<NAME>_WEBHOOK_SECRET_PREVIOUS) last verified a delivery,
-- so that the admin API can say whether the provider still signs with it (src/http/admin/sources.ts).
-- Written only when the previous secret matched, at most about once a minute per source and isolate:
-- nothing on the hot path outside a rotation.
CREATE TABLE source_secrets (
  source              TEXT NOT NULL PRIMARY KEY,
  previous_matched_at TEXT NOT NULL
) WITHOUT ROWID;
