-- One row less per delivery (issue 28): a new delivery no longer enters an index of unfinished rows.
--
-- deliveries_pending (0006) held every unfinished row, so every insert paid for an entry in it: 3
-- rows to store a delivery (the table, the age index, the pending index). Nearly every delivery is
-- done within a second by its first run, which D1 never sees start (src/store/d1/lifecycle.ts), so
-- the entry was written only to be removed. Now:
--
--   insert      the table + deliveries_by_age                                           2 rows
--   done mark   the table                                                               1 row
--
-- Unfinished rows are of two kinds:
-- - waiting: something has touched the row since its insert (a takeover, a retry's result, a
--   deferral, a fan-out, a replay, the sweeper): each of those sets lease_token, and the row is in
--   deliveries_waiting below, as it was in deliveries_pending;
-- - untouched: `received` with lease_token NULL, as its insert left it. These are found by walking
--   the age index from the `fresh_from` mark (src/store/d1/fresh.ts): the sweeper takes those older
--   than its cutoff (setting lease_token 0, which fences nothing: the fence reads coalesce(lease_token, 0))
--   and moves the mark up to the first untouched row left, so each walk reads about a sweep's rows.
CREATE INDEX deliveries_waiting ON deliveries (received_at) WHERE status IN ('received', 'processing') AND lease_token IS NOT NULL;

-- Every unfinished row there is now goes into the new index, so the walk starts where the
-- overview's count is (rows stored from here on are never dated before it: src/store/d1/record.ts).
UPDATE deliveries SET lease_token = 0 WHERE status IN ('received', 'processing') AND lease_token IS NULL;
INSERT INTO inbox_marks (name, value)
  SELECT 'fresh_from', coalesce((SELECT value FROM inbox_marks WHERE name = 'counted_through'), '') WHERE true
  ON CONFLICT DO NOTHING;

-- The Worker of before this migration names deliveries_pending in its overview, and its sweeper
-- has no other index for its backlog query: deploy right after applying it (docs/deploy.md, "Upgrading").
DROP INDEX deliveries_pending;
