/**
 * Deliveries stored together share one queue message (a bundle: src/processing/messages.ts), and
 * three queue operations instead of three each; each run of it is still processed, retried and
 * dead-lettered on its own (src/processing/bundles.ts).
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { defineHandlers, PermanentError } from "../../src/handler-api";
import { recordDeadLetters, REQUEUE_DELAY_SECONDS } from "../../src/processing/dead-letters";
import { sendRuns } from "../../src/processing/enqueue";
import { MAX_RUNS_PER_MESSAGE, packRuns, type RunRef } from "../../src/processing/messages";
import { faultyQueue } from "../helpers/faults";
import { consume, leaseFor, storeDelivery } from "../helpers/processing";
import { recordingProducer } from "../helpers/recording-producer";
import { deliveryRow } from "../helpers/store-db";

function refs(prefix: string, n: number): RunRef[] {
  return Array.from({ length: n }, (_, index) => ({ source: "bundled", id: `${prefix}-${index}` }));
}

describe("packing runs into messages", () => {
  it("a run alone is the message it always was; several share messages of at most MAX_RUNS_PER_MESSAGE", () => {
    expect(packRuns(refs("one", 1))).toEqual([{ source: "bundled", id: "one-0" }]);
    const bodies = packRuns([...refs("many", 2 * MAX_RUNS_PER_MESSAGE + 3), { source: "bundled", id: "sub", subscriber: "crm" }]);
    expect(bodies.map((body) => ("runs" in body ? body.runs.length : 1))).toEqual([MAX_RUNS_PER_MESSAGE, MAX_RUNS_PER_MESSAGE, 4]);
    expect("runs" in bodies[2]! && bodies[2].runs[3]).toEqual({ source: "bundled", id: "sub", subscriber: "crm" });
  });

  it("sends 60 runs as 6 messages in one call, and the longest ids still fit the queue's limits", async () => {
    const producer = recordingProducer();
    await sendRuns(producer.queue, refs("sixty", 60));
    expect(producer.messages).toHaveLength(60 / MAX_RUNS_PER_MESSAGE);
    expect(producer.sent).toHaveLength(60);
    const long = Array.from({ length: MAX_RUNS_PER_MESSAGE }, (_, index) => ({ source: "s".repeat(64), id: `${index}`.padEnd(255, "x") }));
    const [body] = packRuns(long);
    // One 64 KB queue operation per message, and well under the 128 KB message limit.
    expect(new TextEncoder().encode(JSON.stringify(body)).length).toBeLessThan(64 * 1024);
  });
});

const counting = () => {
  const ran: string[] = [];
  const handlers = defineHandlers({
    bundled: {
      "*": (_event, ctx) => {
        ran.push(ctx.deliveryId);
        if (ctx.deliveryId.includes("flaky")) throw new Error("the backend is down");
        if (ctx.deliveryId.includes("poison")) throw new PermanentError("cannot be handled");
      },
    },
  });
  return { ran, handlers };
};

describe("a bundle on the consumer", () => {
  it("processes each run on its own and acks the bundle once all are done", async () => {
    const runs = refs("all-done", 3);
    for (const ref of runs) await storeDelivery(ref);
    const { ran, handlers } = counting();
    const queue = faultyQueue(null);
    const { outcomes, result } = await consume([{ runs }], handlers, { DELIVERIES: queue.queue });
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["done", "done", "done"]);
    expect(ran.sort()).toEqual(runs.map((ref) => ref.id));
    expect(result.explicitAcks).toHaveLength(1);
    expect(result.retryMessages).toEqual([]);
    expect(queue.sent).toEqual([]);
    for (const ref of runs) expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });
  });

  it("a run to be retried leaves the bundle as its own message with its own delay; a failed one is failed alone; the bundle is acked", async () => {
    const runs = [{ source: "bundled", id: "mixed-ok" }, { source: "bundled", id: "mixed-flaky" }, { source: "bundled", id: "mixed-poison" }];
    for (const ref of runs) await storeDelivery(ref);
    const { handlers } = counting();
    const queue = faultyQueue(null);
    const { outcomes, result } = await consume([{ runs }], handlers, { DELIVERIES: queue.queue });
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["done", "handler_error", "failed"]);
    expect(result.explicitAcks).toHaveLength(1);
    expect(result.retryMessages).toEqual([]);
    // Only the flaky run goes back, alone, with the delay its retry schedule gave it.
    expect(queue.sent).toEqual([{ source: "bundled", id: "mixed-flaky" }]);
    const retry = outcomes[1]!;
    expect(retry.action === "retry" && queue.delays).toEqual([retry.action === "retry" ? retry.delaySeconds : -1]);
    expect(queue.delays[0]).toBeGreaterThan(0);
    expect(await deliveryRow("bundled", "mixed-ok")).toMatchObject({ status: "done" });
    expect(await deliveryRow("bundled", "mixed-flaky")).toMatchObject({ status: "received", attempts: 1 });
    expect(await deliveryRow("bundled", "mixed-poison")).toMatchObject({ status: "failed" });
  });

  it("a run another worker holds is left to it, as a message of its own would be", async () => {
    const runs = refs("held", 2);
    for (const ref of runs) await storeDelivery(ref);
    const claim = await leaseFor(env, runs[0]!).claim(runs[0]!);
    expect(claim.kind).toBe("granted");
    const { ran, handlers } = counting();
    const queue = faultyQueue(null);
    const { outcomes, result } = await consume([{ runs }], handlers, { DELIVERIES: queue.queue });
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["busy", "done"]);
    expect(ran).toEqual(["held-1"]);
    expect(result.explicitAcks).toHaveLength(1);
    expect(queue.sent).toEqual([]);
  });

  it("a bundle delivered again is not processed as a whole: each run goes back alone, so a run that killed the invocation is isolated", async () => {
    const runs = refs("again", 3);
    for (const ref of runs) await storeDelivery(ref);
    const { ran, handlers } = counting();
    const queue = faultyQueue(null);
    const { outcomes, result } = await consume([{ runs }], handlers, { DELIVERIES: queue.queue }, { attempts: 2 });
    expect(outcomes).toEqual([]);
    expect(ran).toEqual([]);
    expect(queue.sent).toEqual(runs);
    expect(queue.delays).toEqual([undefined, undefined, undefined]);
    expect(result.explicitAcks).toHaveLength(1);
    for (const ref of runs) expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", attempts: 0 });
  });

  it("when the runs cannot be split out (the queue erring), the bundle is retried, never acked with a run lost", async () => {
    const runs = [{ source: "bundled", id: "nosplit-ok" }, { source: "bundled", id: "nosplit-flaky" }];
    for (const ref of runs) await storeDelivery(ref);
    const { handlers } = counting();
    const broken = faultyQueue(null, () => "throw");
    const first = await consume([{ runs }], handlers, { DELIVERIES: broken.queue });
    expect(first.outcomes.map((outcome) => outcome.reason)).toEqual(["done", "handler_error"]);
    expect(first.result.explicitAcks).toEqual([]);
    expect(first.result.retryMessages).toHaveLength(1);
    const again = await consume([{ runs }], handlers, { DELIVERIES: broken.queue }, { attempts: 2 });
    expect(again.result.explicitAcks).toEqual([]);
    expect(again.result.retryMessages).toHaveLength(1);
    expect(await deliveryRow("bundled", "nosplit-flaky")).toMatchObject({ status: "received", attempts: 1 });
  });

  it("a malformed run is dropped loudly and the others are processed", async () => {
    const good = { source: "bundled", id: "among-malformed" };
    await storeDelivery(good);
    const { handlers } = counting();
    const { outcomes, result } = await consume([{ runs: [{ source: "" }, good, 42] } as never], handlers);
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["done"]);
    expect(result.explicitAcks).toHaveLength(1);
  });
});

describe("a bundle on the dead-letter queue", () => {
  it("(its split failed ten times over) puts each run back alone, after the same pause as any", async () => {
    const runs = refs("dlq", 2);
    const queue = faultyQueue(null);
    const batch = createMessageBatch("webhook-deliveries-dlq", [{ id: "dl-bundle", timestamp: new Date(), attempts: 1, body: { runs } }]);
    const ctx = createExecutionContext();
    await recordDeadLetters(batch, { ...env, DELIVERIES: queue.queue } as Env);
    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(["dl-bundle"]);
    expect(queue.sent).toEqual(runs);
    expect(queue.delays).toEqual([REQUEUE_DELAY_SECONDS, REQUEUE_DELAY_SECONDS]);
  });
});
