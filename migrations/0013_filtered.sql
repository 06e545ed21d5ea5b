-- Filtered deliveries (docs/filters.md, src/store/filtered.ts): kept out by their source's filter,
-- stored finished in existing columns, because the status column's CHECK cannot change without
-- rebuilding the table: status 'done' with handled NULL (every done mark sets it) and the reason in
-- error. This partial index serves the listing filtered by status `filtered` and the overview's
-- count of them (each query repeats its WHERE term, as SQLite requires to use it). Cost: one index
-- entry per filtered row, written by its insert in place of the entry a received row puts in
-- deliveries_pending; other rows are not in it.
CREATE INDEX deliveries_filtered ON deliveries (received_at) WHERE status = 'done' AND handled IS NULL;
