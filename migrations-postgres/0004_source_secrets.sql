-- Rotation: when a source's previous secret last verified a delivery (D1: 0010). Written only when the
-- previous secret matched, at most about once a minute per source and isolate.
CREATE TABLE source_secrets (
  source              text COLLATE "C" NOT NULL PRIMARY KEY,
  previous_matched_at text COLLATE "C" NOT NULL
);
