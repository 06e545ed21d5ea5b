-- Filtered deliveries (docs/filters.md, src/store/filtered.ts): stored finished in existing
-- columns, as in D1 (migrations/0013): status 'done' with handled NULL and the reason in error. The
-- same representation in both stores, so the reads are the same. This partial index serves the
-- listing filtered by status `filtered` and the overview's count of them.
CREATE INDEX deliveries_filtered ON deliveries (received_at, source, id) WHERE status = 'done' AND handled IS NULL;
