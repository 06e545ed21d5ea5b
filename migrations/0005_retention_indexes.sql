-- Retention's and the admin listing's indexes (src/store/d1/sweep.ts, src/store/d1/admin.ts).

-- Body pruning walks this one: it holds only the done rows whose body is still there, and a row
-- leaves it when its body is cleared, so a run reads none of the rows pruned before (walking
-- (status, received_at) read every pruned done row again, every minute). Cost: one index write
-- when a row becomes done, one when its body is cleared; other rows are not in it.
CREATE INDEX deliveries_done_with_body ON deliveries (received_at) WHERE status = 'done' AND body IS NOT NULL;

-- Retention now deletes only settled rows, through (status, received_at); the age index is left
-- to the admin listing, which pages newest first by (received_at, source, id). On received_at
-- alone the planner scanned and sorted the whole table for a first page; on the full sort key a
-- page is a walk of the index. Same write cost: written on insert, removed on delete, since
-- none of its columns ever changes.
DROP INDEX deliveries_by_age;
CREATE INDEX deliveries_by_age ON deliveries (received_at, source, id);
