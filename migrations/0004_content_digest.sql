-- Deduplication on content, for providers whose delivery id is not signed (GitHub, Shopify,
-- GitLab, Twilio, a custom source with a header id): whoever holds one signed request could
-- resend it under a fresh id. content_digest is the SHA-256 of the signed content; a second row
-- with the same (source, content_digest) conflicts here, so the ingest insert's
-- `ON CONFLICT DO NOTHING` answers it "duplicate", in the same statement as the id check.
-- NULL for providers whose id is signed and for sources that switched it off: the partial index
-- then neither holds nor costs anything for them. The digest lives and goes with its row
-- (retention), so a replay is recognised for as long as the original is kept.
ALTER TABLE deliveries ADD COLUMN content_digest BLOB;

CREATE UNIQUE INDEX deliveries_by_content_digest ON deliveries (source, content_digest) WHERE content_digest IS NOT NULL;
