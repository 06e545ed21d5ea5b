-- The example handler's table (src/handlers/payments.ts). Replace it with your own.
-- delivery_id is the primary key: the effect is keyed by the delivery, so it cannot happen twice.
CREATE TABLE payments (
  delivery_id  TEXT    NOT NULL PRIMARY KEY,
  customer     TEXT,
  amount       INTEGER NOT NULL,   -- in the currency's smallest unit, as Stripe sends it
  currency     TEXT    NOT NULL,
  created_at   TEXT    NOT NULL
);
