// A source with both a code handler and a forward URL (two subscribers), and forward() as a handler in the registry.
import { beforeAll, describe, expect, it } from "vitest";
import { forward, MISCONFIGURED_WAIT_SECONDS } from "../../src/forwarding/forward";
import { PermanentError } from "../../src/handler-api";
import { defineHandlers, type Handler } from "../../src/handler-api";
import { sql } from "../../src/sql";
import { backendCalls, FORWARD_SECRET, forwardingTo, planBackend } from "../helpers/forward-backend";
import { capturingQueue, consume, createEffectTables, runRow, storeDelivery } from "../helpers/processing";
import { count, deliveryRow } from "../helpers/store-db";

beforeAll(createEffectTables);

describe("a source with a code handler and a forward URL: two subscribers, each with its own progress", () => {
  it("fans the delivery out once; the forward's retries never re-run the handler, whose effects commit once", async () => {
    const ref = { source: "standard", id: "both-then" };
    await storeDelivery(ref, { type: "invoice.paid" }, "invoice.paid");
    const url = await planBackend("/both", { status: 503 }, { status: 200 });
    let runs = 0;
    const record: Handler = (_event, ctx) => {
      runs++;
      return [ctx.sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'both')`];
    };
    const handlers = defineHandlers({ standard: { "*": record } });
    const queue = capturingQueue();
    const vars = { ...forwardingTo("standard", url), DELIVERIES: queue.producer } as Partial<Env>;
    expect((await consume([ref], handlers, vars)).outcomes[0]!.reason).toBe("fanned");
    expect(queue.sent).toEqual([
      { ...ref, subscriber: "handler" },
      { ...ref, subscriber: "forward" },
    ]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "processing", fanout: 2 });
    // Each run on its own: the handler's is done, the forward's meets a 503 and waits for its retry.
    const first = await consume(queue.take(), handlers, vars);
    expect(first.outcomes.map((outcome) => outcome.reason)).toEqual(["done", "handler_error"]);
    expect(runs).toBe(1);
    expect(await count(sql`SELECT COUNT(*) AS n FROM keyed_effects WHERE delivery_id = ${ref.id}`)).toBe(1);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "processing" });
    // The forward's retry: the handler does not run again.
    expect((await consume([{ ...ref, subscriber: "forward" }], handlers, vars)).outcomes[0]!.reason).toBe("done");
    expect(runs).toBe(1);
    expect((await backendCalls("/both")).calls).toHaveLength(2);
    expect(await runRow(ref, "handler")).toMatchObject({ status: "done", attempts: 1 });
    expect(await runRow(ref, "forward")).toMatchObject({ status: "done", attempts: 2 });
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", error: null });
  });

  it("a handler that fails, fails alone: the forward still goes out, and the delivery says which subscriber failed", async () => {
    const ref = { source: "standard", id: "both-handler-fails" };
    await storeDelivery(ref, { type: "invoice.paid" }, "invoice.paid");
    const url = await planBackend("/both-handler-fails", { status: 200 });
    const handlers = defineHandlers({
      standard: {
        "*": () => {
          throw new PermanentError("invoice has no customer");
        },
      },
    });
    const queue = capturingQueue();
    const vars = { ...forwardingTo("standard", url), DELIVERIES: queue.producer } as Partial<Env>;
    expect((await consume([ref], handlers, vars)).outcomes[0]!.reason).toBe("fanned");
    expect((await consume(queue.take(), handlers, vars)).outcomes.map((outcome) => outcome.reason)).toEqual(["failed", "done"]);
    expect((await backendCalls("/both-handler-fails")).calls).toHaveLength(1);
    expect(await runRow(ref, "handler")).toMatchObject({ status: "failed", error: "PermanentError: invoice has no customer" });
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "failed", error: "handler: PermanentError: invoice has no customer" });
  });
});

describe("forward() in the registry", () => {
  it("forwards only the event types it is registered for", async () => {
    const url = await planBackend("/billing", { status: 200 });
    const handlers = defineHandlers({ standard: { "invoice.paid": forward({ url, secret: () => FORWARD_SECRET }) } });
    const invoice = { source: "standard", id: "routed-invoice" };
    const other = { source: "standard", id: "routed-other" };
    await storeDelivery(invoice, { type: "invoice.paid" }, "invoice.paid");
    await storeDelivery(other, { type: "customer.updated" }, "customer.updated");
    const { outcomes } = await consume([invoice, other], handlers);
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["done", "unhandled"]);
    const { calls } = await backendCalls("/billing");
    expect(calls.map((call) => call.headers["webhook-inbox-delivery-id"])).toEqual(["routed-invoice"]);
  });

  it("reads its url and secret from the env, and lets deliveries wait, counting nothing, while a var is unset", async () => {
    // Named off the <NAME>_FORWARD_URL convention, which the config check would catch first (config.test.ts).
    const url = await planBackend("/from-vars", { status: 200 });
    const vars = (env: Env) => env as unknown as Record<string, string | undefined>;
    const handler = forward({ url: (env) => vars(env).BILLING_URL, secret: (env) => vars(env).BILLING_SIGNING_SECRET });
    const handlers = defineHandlers({ standard: { "*": handler } });
    const ref = { source: "standard", id: "from-vars" };
    await storeDelivery(ref, { type: "invoice.paid" }, "invoice.paid");
    const waiting = await consume([ref], handlers, { BILLING_URL: url } as Partial<Env>);
    expect(waiting.outcomes[0]).toEqual({ action: "retry", reason: "deferred", delaySeconds: MISCONFIGURED_WAIT_SECONDS });
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", attempts: 0 });
    const sent = await consume([ref], handlers, { BILLING_URL: url, BILLING_SIGNING_SECRET: FORWARD_SECRET } as Partial<Env>);
    expect(sent.outcomes[0]!.reason).toBe("done");
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });
  });

  it("throws at once for literal options that cannot work", () => {
    expect(() => forward({ url: "http://billing.example.com/", secret: FORWARD_SECRET })).toThrow(/url must be an absolute https:\/\/ URL/);
    expect(() => forward({ url: "https://billing.example.com/", secret: "plain-secret" })).toThrow(/secret must be a Standard Webhooks secret/);
    expect(() => forward({ url: "https://billing.example.com/", secret: FORWARD_SECRET, concurrency: 0 })).toThrow(/concurrency/);
    expect(() => forward({ url: "https://billing.example.com/", secret: FORWARD_SECRET, timeoutSeconds: 1.5 })).toThrow(/timeoutSeconds/);
    expect(() => forward({ url: "https://billing.example.com/", secret: FORWARD_SECRET })).not.toThrow();
  });
});
