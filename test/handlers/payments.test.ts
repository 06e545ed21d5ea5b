import { describe, expect, it } from "vitest";
import { HANDLERS } from "../../src/handlers";
import { sql } from "../../src/sql";
import { consume, storeDelivery } from "../helpers/processing";
import { count, deliveryRow, firstRow } from "../helpers/store-db";

function paymentIntent(id: string, object: Record<string, unknown>) {
  return { id, type: "payment_intent.succeeded", data: { object: { id: `pi_${id}`, ...object } } };
}

describe("the example payment handler", () => {
  it("records a payment_intent.succeeded in payments, keyed by the delivery", async () => {
    const ref = { source: "stripe", id: "evt_pay_1" };
    await storeDelivery(ref, paymentIntent("evt_pay_1", { amount: 2500, currency: "eur", customer: "cus_1" }), "payment_intent.succeeded");
    const { outcomes } = await consume([ref], HANDLERS);
    expect(outcomes[0]!.reason).toBe("done");
    const payment = await firstRow(sql`SELECT delivery_id, customer, amount, currency FROM payments WHERE delivery_id = ${ref.id}`);
    expect(payment).toEqual({ delivery_id: "evt_pay_1", customer: "cus_1", amount: 2500, currency: "eur" });
  });

  it("fails a payment without an amount at once, naming the missing field", async () => {
    const ref = { source: "stripe", id: "evt_pay_broken" };
    await storeDelivery(ref, paymentIntent("evt_pay_broken", { currency: "eur" }), "payment_intent.succeeded");
    const { outcomes } = await consume([ref], HANDLERS);
    expect(outcomes[0]!.reason).toBe("failed");
    const row = await deliveryRow(ref.source, ref.id);
    expect(row).toMatchObject({ status: "failed", attempts: 1 });
    expect(row!.error).toContain("data.object.amount");
    expect(await count(sql`SELECT COUNT(*) AS n FROM payments WHERE delivery_id = ${ref.id}`)).toBe(0);
  });

  it("leaves other Stripe events done and unhandled", async () => {
    const ref = { source: "stripe", id: "evt_other" };
    await storeDelivery(ref, { id: "evt_other", type: "customer.created", data: { object: {} } }, "customer.created");
    const { outcomes } = await consume([ref], HANDLERS);
    expect(outcomes[0]!.reason).toBe("unhandled");
  });
});
