-- Rotation: when a source's previous secret last verified a delivery (D1: 0010). Written only when the
-- previous secret matched, at most about once a minute per source and isolate.
CREATE TABLE source_secrets (
  source              text COLLATE "C" NOT NULL PRIMARY KEY,
  previous_matched_at text COLLATE "C" NOT NULL
);

-- Provider messages that are not deliveries, counted apart (D1: 0010).
CREATE TABLE provider_messages (
  source      text COLLATE "C" NOT NULL,
  kind        text COLLATE "C" NOT NULL,
  count       bigint NOT NULL,
  last_at     text COLLATE "C" NOT NULL,
  last_detail text NOT NULL,
  PRIMARY KEY (source, kind)
);
