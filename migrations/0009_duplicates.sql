-- Duplicates leave a trace (issue 29): a provider's retries are why the inbox exists, so each
-- delivery counts the copies that were answered "duplicate", with when the last one came, and each
-- source keeps a running total for /admin/metrics and the overview.
--
-- Cost: nothing on the hot path. A new delivery's insert is unchanged (3 rows written, see 0006);
-- only a duplicate, the rare path, pays: one UPDATE of the original's row (no indexed column
-- changes, so 1 row) and one of its source's counter (1 row), in one batch after the insert said
-- "duplicate" (src/store/d1/duplicates.ts). Neither touches commit_token or status, so the lease
-- fence (0006) and the unhandled counters (0008) do not fire, and updated_at is left alone (the
-- sweeper reads it as "last progress").
ALTER TABLE deliveries ADD COLUMN duplicates INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN last_duplicate_at TEXT;

-- Per source, every duplicate ever answered: a counter (retention does not take it back).
ALTER TABLE inbox_counts ADD COLUMN duplicates INTEGER NOT NULL DEFAULT 0;
