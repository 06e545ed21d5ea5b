import { createMessageBatch, createExecutionContext, getQueueResult, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { recordDeadLetters } from "../../src/processing/dead-letters";
import { deliveryRow } from "../helpers/db";
import { leaseFor, storeDelivery } from "../helpers/processing";

async function deliverDeadLetters(bodies: unknown[]) {
  const batch = createMessageBatch("webhook-deliveries-dlq", bodies.map((body, index) => ({ id: `dl-${index}`, timestamp: new Date(), attempts: 1, body })));
  const ctx = createExecutionContext();
  await recordDeadLetters(batch, env);
  return getQueueResult(batch, ctx);
}

describe("the dead-letter recorder", () => {
  it("marks a delivery the queue dead-lettered as failed and clears its lease", async () => {
    const ref = { source: "dlq", id: "queue-gave-up" };
    await storeDelivery(ref);
    await leaseFor(env, ref).claim(ref); // a holder that never reported back
    const result = await deliverDeadLetters([ref]);
    expect(result.explicitAcks).toEqual(["dl-0"]);
    const row = await deliveryRow(ref.source, ref.id);
    expect(row!.status).toBe("failed");
    expect(row!.error).toMatch(/dead-lettered by the queue/);
    expect(await runDurableObjectAlarm(leaseFor(env, ref))).toBe(false);
  });

  it("only logs its own dead letters, so a replay made since is not undone", async () => {
    const ref = { source: "dlq", id: "replayed-meanwhile" };
    await storeDelivery(ref); // failed, then replayed: `received` again by the time its dead letter lands
    const result = await deliverDeadLetters([{ ...ref, error: "PermanentError: bad" }]);
    expect(result.explicitAcks).toEqual(["dl-0"]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", error: null });
  });

  it("never turns a done delivery into a failed one", async () => {
    const ref = { source: "dlq", id: "done-meanwhile" };
    await storeDelivery(ref);
    await env.DB.prepare("UPDATE deliveries SET status = 'done' WHERE id = ?").bind(ref.id).run();
    await deliverDeadLetters([ref]);
    expect((await deliveryRow(ref.source, ref.id))!.status).toBe("done");
  });
});
