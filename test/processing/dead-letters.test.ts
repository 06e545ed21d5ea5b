import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { recordDeadLetters, REQUEUE_DELAY_SECONDS } from "../../src/processing/dead-letters";
import { sql } from "../../src/sql";
import { faultyQueue } from "../helpers/faults";
import { defineHandlers } from "../../src/handler-api";
import { PermanentError } from "../../src/handler-api";
import { consume, expireLease, leaseFor, recordingQueue, storeDelivery } from "../helpers/processing";
import { rebindObject } from "../helpers/faults";
import { deliveryRow, exec } from "../helpers/store-db";
import { unreachableStore } from "../helpers/store-faults";

async function deliverDeadLetters(bodies: unknown[], overrides: Partial<Env> = {}) {
  const batch = createMessageBatch("webhook-deliveries-dlq", bodies.map((body, index) => ({ id: `dl-${index}`, timestamp: new Date(), attempts: 1, body })));
  const ctx = createExecutionContext();
  await recordDeadLetters(batch, { ...env, ...overrides } as Env);
  return getQueueResult(batch, ctx);
}

describe("the dead-letter recorder", () => {
  it("puts a delivery the queue gave up on back on the processing queue, after a pause, without failing it", async () => {
    const ref = { source: "dlq", id: "queue-gave-up" };
    await storeDelivery(ref);
    const queue = faultyQueue(null);
    // The database may still be down when the queue gives up (that is why it gave up): the recorder needs none of it.
    const down = unreachableStore();
    const result = await deliverDeadLetters([ref], { DELIVERIES: queue.queue, ...down.bindings });
    expect(result.explicitAcks).toEqual(["dl-0"]);
    expect(queue.sent).toEqual([ref]);
    expect(queue.delays).toEqual([REQUEUE_DELAY_SECONDS]);
    expect(down.calls).toEqual([]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", error: null });
  });

  it("does not fail a delivery that a live worker holds: its lease stays as it was", async () => {
    const ref = { source: "dlq", id: "held" };
    await storeDelivery(ref);
    const lease = leaseFor(env, ref);
    const claim = await lease.claim(ref);
    if (claim.kind !== "granted") throw new Error("expected a grant");
    const queue = faultyQueue(null);
    await deliverDeadLetters([ref], { DELIVERIES: queue.queue });
    expect((await deliveryRow(ref.source, ref.id))!.status).toBe("received");
    // The holder can still settle with its token: nobody reset the lease under it.
    expect(await lease.renew(claim.token)).toBe(true);
  });

  it("retries its own message when the requeue fails, acking nothing", async () => {
    const ref = { source: "dlq", id: "requeue-fails" };
    const queue = faultyQueue(null, () => "throw");
    const result = await deliverDeadLetters([ref], { DELIVERIES: queue.queue });
    expect(result.explicitAcks).toEqual([]);
    expect(result.retryMessages).toEqual([{ msgId: "dl-0" }]);
  });

  it("only logs its own dead letters, so a replay made since is not undone", async () => {
    const ref = { source: "dlq", id: "replayed-meanwhile" };
    await storeDelivery(ref); // failed, then replayed: `received` again by the time its dead letter lands
    const queue = faultyQueue(null);
    const result = await deliverDeadLetters([{ ...ref, error: "PermanentError: bad" }], { DELIVERIES: queue.queue });
    expect(result.explicitAcks).toEqual(["dl-0"]);
    expect(queue.sent).toEqual([]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", error: null });
  });

  it("never turns a done delivery into a failed one", async () => {
    const ref = { source: "dlq", id: "done-meanwhile" };
    await storeDelivery(ref);
    await exec(sql`UPDATE deliveries SET status = 'done' WHERE id = ${ref.id}`);
    await deliverDeadLetters([ref], { DELIVERIES: faultyQueue(null).queue });
    expect((await deliveryRow(ref.source, ref.id))!.status).toBe("done");
  });
});

describe("a failed delivery's dead letter", () => {
  it("is sent once the dead-letter queue works again when it was down at the failure: the lease stays unsettled and its alarm brings it back", async () => {
    const ref = { source: "dlqdown", id: "alert-kept" };
    await storeDelivery(ref);
    const handlers = defineHandlers({ dlqdown: { "*": () => Promise.reject(new PermanentError("card_declined is final")) } });
    const down = faultyQueue(null, () => "throw");
    const failed = await consume([ref], handlers, { DEAD_LETTERS: down.queue });
    expect(failed.outcomes[0]).toMatchObject({ action: "ack", reason: "failed" });
    expect(down.faulted).toHaveLength(1);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "failed", attempts: 1 });

    // The lease was left unsettled: its alarm requeues the delivery, whose next claim finds it failed
    // under the old token and sends the dead letter, leaving the row as it was.
    await rebindObject(leaseFor(env, ref), { DELIVERIES: faultyQueue(null).queue });
    expect(await expireLease(leaseFor(env, ref))).toBe(true);
    const deadLetters = recordingQueue(env.DEAD_LETTERS);
    const again = await consume([ref], handlers, { DEAD_LETTERS: deadLetters.producer });
    expect(again.outcomes[0]).toMatchObject({ action: "ack", reason: "exhausted" });
    expect(deadLetters.sent).toEqual([{ ...ref, error: "PermanentError: card_declined is final" }]);
    const row = await deliveryRow(ref.source, ref.id);
    expect(row).toMatchObject({ status: "failed", attempts: 1, error: "PermanentError: card_declined is final" });
    // Sent: now the lease is settled, and nothing comes back.
    expect(await leaseFor(env, ref).claim(ref)).toMatchObject({ kind: "settled" });
  });
});
