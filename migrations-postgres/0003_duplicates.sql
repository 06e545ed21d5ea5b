-- Duplicates leave a trace (issue 29; the D1 store's migrations/0009 says why and what it costs):
-- each delivery counts the copies answered "duplicate" and when the last came; each source keeps a
-- running total. Written only for a duplicate (src/store/postgres/duplicates.ts), never by the
-- insert of a new delivery; neither column is one the lease fence or the unhandled triggers watch.
ALTER TABLE deliveries ADD COLUMN duplicates integer NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN last_duplicate_at text;

ALTER TABLE inbox_counts ADD COLUMN duplicates bigint NOT NULL DEFAULT 0;
