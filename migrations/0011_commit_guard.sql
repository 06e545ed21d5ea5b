-- The done commit's guard for a delivery whose row is gone (deleted under a worker, e.g. by hand):
-- the fenced done mark then matches no row, so the lease fence (deliveries_lease_fence, 0006)
-- never fires, and the handler's effects would commit without it. The commit's batch inserts into
-- this table when its delivery is not done under its token right after the mark
-- (store/d1/lifecycle.ts `requireDone`); the trigger aborts that insert, and the whole batch rolls
-- back, as Postgres's commit does when its mark finds no row. Nothing is ever stored here.
CREATE TABLE commit_guard (source TEXT, id TEXT);

CREATE TRIGGER commit_guard_refuses
BEFORE INSERT ON commit_guard
BEGIN
  SELECT RAISE(ABORT, 'lease_lost');
END;
