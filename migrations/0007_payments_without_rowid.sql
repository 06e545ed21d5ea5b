-- The example handler's table as the inbox's own (migrations/0006): WITHOUT ROWID, so that its
-- primary key is the table and one payment is one row written, not two (the rowid table and its
-- primary-key index). The same holds for a handler table of yours keyed by a text id.
CREATE TABLE payments_new (
  delivery_id  TEXT    NOT NULL PRIMARY KEY,
  customer     TEXT,
  amount       INTEGER NOT NULL,   -- in the currency's smallest unit, as Stripe sends it
  currency     TEXT    NOT NULL,
  created_at   TEXT    NOT NULL
) WITHOUT ROWID;
INSERT INTO payments_new (delivery_id, customer, amount, currency, created_at)
SELECT delivery_id, customer, amount, currency, created_at FROM payments;
DROP TABLE payments;
ALTER TABLE payments_new RENAME TO payments;
