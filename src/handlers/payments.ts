/**
 * The example handler: record a Stripe payment (the seed's `record_payment`). Replace it.
 *
 * The effect is one insert keyed by the delivery id (`ON CONFLICT DO NOTHING`), returned to the
 * consumer so it commits in the same transaction as the delivery's `done` mark: it happens exactly
 * when the delivery is done. Written with `ctx.sql`, it runs unchanged on D1 and on Postgres. A payment without an amount can never succeed, so it is a `PermanentError`
 * (failed at once, no retries) whose message names the missing field.
 */
import { isoTime, PermanentError, type Handler } from "../handler-api";

interface PaymentIntentEvent {
  readonly data?: { readonly object?: { readonly amount?: unknown; readonly currency?: unknown; readonly customer?: unknown } };
}

export const recordPayment: Handler<PaymentIntentEvent> = (event, ctx) => {
  const intent = event?.data?.object;
  if (typeof intent?.amount !== "number" || !Number.isInteger(intent.amount)) {
    throw new PermanentError("payment_intent.succeeded has no integer data.object.amount");
  }
  if (typeof intent.currency !== "string") throw new PermanentError("payment_intent.succeeded has no data.object.currency");
  const customer = typeof intent.customer === "string" ? intent.customer : null;
  return [
    ctx.sql`INSERT INTO payments (delivery_id, customer, amount, currency, created_at)
            VALUES (${ctx.deliveryId}, ${customer}, ${intent.amount}, ${intent.currency}, ${isoTime(Date.now())})
            ON CONFLICT DO NOTHING`,
  ];
};
