// The source filter (`<SOURCE>_FILTER`, docs/filters.md) end to end on the real store: a delivery
// it keeps out is stored as `filtered` with the failed clause and the value seen, never enqueued,
// counted, listed by status in the admin API and the dashboard, and a replay runs it once.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { defineHandlers } from "../../src/handler-api";
import { app } from "../../src/http/app";
import { sweep } from "../../src/processing/sweeper";
import { openStore } from "../../src/store";
import { capturingQueue, consume } from "../helpers/processing";
import { BASE_URL, stripeSignature, unique } from "../helpers/provider-signers";
import { deliveryRow } from "../helpers/store-db";
import { adminWithEnv } from "./admin/client";
import { ui } from "./ui/client";

const INVOICES_OVER_100_EUR = JSON.stringify({
  all: [
    { field: "type", oneOf: ["invoice.paid", "invoice.payment_failed"] },
    { field: "body.data.object.currency", equals: "eur" },
    { field: "body.data.object.amount_due", gt: 10000 },
  ],
});

/** A signed Stripe event posted with STRIPE_FILTER set and a capturing DELIVERIES queue. */
async function postStripe(event: { id: string; type: string; currency?: string; amount?: number; note?: string }, filter = INVOICES_OVER_100_EUR) {
  const body = JSON.stringify({ id: event.id, object: "event", type: event.type, data: { object: { currency: event.currency ?? "eur", amount_due: event.amount ?? 20000, note: event.note } } });
  const queue = capturingQueue();
  const ctx = createExecutionContext();
  const request = new Request(`${BASE_URL}/webhooks/stripe`, {
    method: "POST",
    headers: { "stripe-signature": await stripeSignature(body), "content-type": "application/json" },
    body,
  });
  const response = await app.fetch(request, { ...env, STRIPE_FILTER: filter, DELIVERIES: queue.producer } as Env, ctx);
  await waitOnExecutionContext(ctx);
  return { status: response.status, json: (await response.json()) as Record<string, unknown>, sent: queue.sent };
}

async function filteredCount(): Promise<number> {
  return (await openStore(env).stats(Date.now())).bySource.stripe?.filtered ?? 0;
}

describe("a source filter", () => {
  it("stores a delivery it keeps out as filtered, with the clause and the value seen, and does not enqueue it", async () => {
    const id = unique("evt_filtered_");
    const before = await filteredCount();
    const reply = await postStripe({ id, type: "customer.created" });
    expect(reply).toEqual({ status: 200, json: { status: "filtered", source: "stripe", id }, sent: [] });
    // Stored finished in existing columns (store/filtered.ts): done, handled NULL, the reason in error.
    expect(await deliveryRow("stripe", id)).toMatchObject({
      status: "done",
      handled: null,
      attempts: 0,
      error: 'filtered: type oneOf ["invoice.paid","invoice.payment_failed"]; saw "customer.created"',
    });
    const detail = await openStore(env).get({ source: "stripe", id });
    expect(detail).toMatchObject({ status: "filtered", handled: null, error: expect.stringContaining("saw \"customer.created\"") });
    expect(await filteredCount()).toBe(before + 1);
  });

  it("enqueues a delivery that matches, as without a filter", async () => {
    const id = unique("evt_kept_");
    const reply = await postStripe({ id, type: "invoice.paid", amount: 25000 });
    expect(reply).toEqual({ status: 200, json: { status: "stored", source: "stripe", id }, sent: [{ source: "stripe", id }] });
    expect(await deliveryRow("stripe", id)).toMatchObject({ status: "received", error: null });
  });

  it("reports a numeric clause and the number it saw", async () => {
    const id = unique("evt_small_");
    expect((await postStripe({ id, type: "invoice.paid", amount: 500 })).json.status).toBe("filtered");
    expect((await deliveryRow("stripe", id))?.error).toBe("filtered: body.data.object.amount_due gt 10000; saw 500");
  });

  it("answers a copy of a filtered delivery duplicate, and does not run or enqueue it", async () => {
    const id = unique("evt_filtered_copy_");
    expect((await postStripe({ id, type: "charge.succeeded" })).json.status).toBe("filtered");
    const copy = await postStripe({ id, type: "charge.succeeded" });
    expect(copy).toEqual({ status: 200, json: { status: "duplicate", source: "stripe", id }, sent: [] });
    expect(await deliveryRow("stripe", id)).toMatchObject({ status: "done", handled: null });
  });

  it("is listed by status filtered in the admin API, and not as done", async () => {
    const id = unique("evt_listed_");
    await postStripe({ id, type: "customer.updated" });
    const filtered = await adminWithEnv("/deliveries?status=filtered&source=stripe&limit=200", {});
    expect(filtered.status).toBe(200);
    const listed = filtered.json.deliveries.find((delivery: { id: string }) => delivery.id === id);
    expect(listed).toMatchObject({ status: "filtered", error: expect.stringContaining("customer.updated") });
    expect(filtered.json.deliveries.every((delivery: { status: string }) => delivery.status === "filtered")).toBe(true);
    const done = await adminWithEnv("/deliveries?status=done&source=stripe&limit=200", {});
    expect(done.json.deliveries.some((delivery: { id: string }) => delivery.id === id)).toBe(false);
    const stats = await adminWithEnv("/stats", {});
    expect(stats.json.bySource.stripe.filtered).toBeGreaterThanOrEqual(1);
  });

  it("shows in the dashboard with its reason escaped, and counts on the overview", async () => {
    const id = unique("evt_dashboard_");
    // The clause that fails reads a value an attacker controls: the reason must reach the page as text.
    const filter = JSON.stringify({ field: "body.data.object.note", equals: "ok" });
    await postStripe({ id, type: "invoice.paid", note: "<script>alert(1)</script>" }, filter);
    const list = await ui("/ui/deliveries?status=filtered&source=stripe");
    expect(list.status).toBe(200);
    expect(list.text).toContain(id);
    expect(list.text).toContain("badge-filtered");
    expect(list.text).not.toContain("<script>alert(1)</script>");
    expect(list.text).toContain("&lt;script&gt;");
    const page = await ui(`/ui/deliveries/stripe/${encodeURIComponent(id)}`);
    expect(page.text).toContain("its source&#39;s filter kept it out");
    expect(page.text).not.toContain("<script>alert(1)</script>");
    const overview = await openStore(env).overview(Date.now());
    expect(overview.bySource.stripe?.filtered).toBeGreaterThanOrEqual(1);
    expect(overview.counts.filtered).toBeGreaterThanOrEqual(1);
  });

  it("is replayed without force, runs its handler once, and ends done", async () => {
    const id = unique("evt_replayed_");
    await postStripe({ id, type: "customer.created" });
    const queue = capturingQueue();
    const replay = await adminWithEnv(`/deliveries/stripe/${encodeURIComponent(id)}/replay`, { DELIVERIES: queue.producer }, { method: "POST" });
    expect(replay.status).toBe(202);
    expect(queue.sent).toEqual([{ source: "stripe", id }]);
    expect(await deliveryRow("stripe", id)).toMatchObject({ status: "received", error: null, handled: null });
    const ran: string[] = [];
    const handlers = defineHandlers({ stripe: { "*": (_event, ctx) => { ran.push(ctx.deliveryId); } } });
    const { outcomes } = await consume(queue.take(), handlers);
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["done"]);
    expect(ran).toEqual([id]);
    expect((await openStore(env).get({ source: "stripe", id }))?.status).toBe("done");
    // Done now: a second replay without force is refused as done, not as filtered.
    const again = await adminWithEnv(`/deliveries/stripe/${encodeURIComponent(id)}/replay`, {}, { method: "POST" });
    expect(again.status).toBe(409);
  });

  it("is never picked up by the sweeper, which does re-enqueue a received delivery left waiting", async () => {
    const kept = unique("evt_sweep_kept_");
    const filtered = unique("evt_sweep_filtered_");
    expect((await postStripe({ id: kept, type: "invoice.paid" })).json.status).toBe("stored");
    expect((await postStripe({ id: filtered, type: "customer.created" })).json.status).toBe("filtered");
    const queue = capturingQueue();
    // An hour on: far past SWEEP_AFTER_SECONDS for anything still waiting.
    await sweep({ ...env, DELIVERIES: queue.producer } as Env, Date.now() + 3_600_000);
    expect(queue.sent).toContainEqual({ source: "stripe", id: kept });
    expect(queue.sent).not.toContainEqual({ source: "stripe", id: filtered });
    expect(await deliveryRow("stripe", filtered)).toMatchObject({ status: "done", handled: null });
  });

  it("answers 503 config_invalid for a filter var that is not a valid filter, naming the var and the clause", async () => {
    for (const [filter, problem] of [
      ["{not json", "must be JSON"],
      [JSON.stringify({ all: [{ field: "type", eq: "x" }] }), 'filter.all[0]: unknown key "eq"'],
    ] as const) {
      const reply = await postStripe({ id: unique("evt_bad_filter_"), type: "invoice.paid" }, filter);
      expect(reply.status).toBe(503);
      expect(reply.json.error).toBe("config_invalid");
      expect(reply.sent).toEqual([]);
      const health = await app.fetch(new Request(`${BASE_URL}/health`), { ...env, STRIPE_FILTER: filter } as Env, createExecutionContext());
      const text = await health.text();
      expect(text).toContain("STRIPE_FILTER");
      expect(text).toContain(problem.replaceAll('"', '\\"'));
    }
  });
});
