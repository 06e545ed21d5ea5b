-- The example handler's table (src/handlers/payments.ts; D1: 0003, 0007), in a migration of its own so
-- that it is easy to leave out: delete this file before the first `npm run migrate:postgres` when your
-- database has a `payments` table of its own, or when you do not use the example handler. Your own
-- tables sit beside the inbox's, in the same database, so that a handler's effects commit in the
-- transaction of the delivery's done mark (README "Postgres (Hyperdrive)").
--
-- delivery_id is the primary key: the effect is keyed by the delivery, so it cannot happen twice.
CREATE TABLE payments (
  delivery_id  text COLLATE "C" NOT NULL PRIMARY KEY,
  customer     text COLLATE "C",
  amount       bigint NOT NULL,            -- in the currency's smallest unit, as Stripe sends it
  currency     text COLLATE "C" NOT NULL,
  created_at   text COLLATE "C" NOT NULL
);

