/**
 * A delivery that waits for long on purpose (deferred again and again, or retried by its handler)
 * never uses up the queue's own retry limit: from the FRESH_MESSAGE_AFTER-th delivery of a message,
 * its wait goes on as a fresh message with the same delay (src/processing/requeue.ts). Without it,
 * such a message reached the dead-letter queue and came back 5 minutes later, out of its turn.
 * An infrastructure retry keeps its message; a fresh message that cannot be sent falls back to the retry.
 */
import { describe, expect, it } from "vitest";
import { DeferredError, defineHandlers, RetryAfterError } from "../../src/handler-api";
import { FRESH_MESSAGE_AFTER } from "../../src/processing/requeue";
import { faultyQueue } from "../helpers/faults";
import { consume, storeDelivery } from "../helpers/processing";
import { deliveryRow } from "../helpers/store-db";
import { unreachableStore } from "../helpers/store-faults";

const deferring = defineHandlers({
  waits: {
    "*": () => {
      throw new DeferredError("an older delivery to the forward destination goes first", 7);
    },
  },
});

describe("a delivery that waits for long", () => {
  it("is retried on its message while the message is young, and goes on as a fresh message with the same delay from then on", async () => {
    const ref = { source: "waits", id: "w-1" };
    await storeDelivery(ref);
    const queue = faultyQueue(null);

    const young = await consume([ref], deferring, { DELIVERIES: queue.queue }, { attempts: FRESH_MESSAGE_AFTER - 1 });
    expect(young.outcomes.map((outcome) => outcome.reason)).toEqual(["deferred"]);
    expect(young.result.retryMessages).toHaveLength(1);
    expect(young.retryDelays).toEqual([7]);
    expect(queue.sent).toEqual([]);

    const old = await consume([ref], deferring, { DELIVERIES: queue.queue }, { attempts: FRESH_MESSAGE_AFTER });
    expect(old.outcomes.map((outcome) => outcome.reason)).toEqual(["deferred"]);
    expect(old.result.retryMessages).toEqual([]);
    expect(old.result.explicitAcks).toHaveLength(1);
    expect(queue.sent).toEqual([ref]);
    expect(queue.delays).toEqual([7]);
    // Nothing counted: deferred, waiting.
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", attempts: 0 });
  });

  it("does the same for its handler's retry after the backoff, and the delivery's attempts are counted once each", async () => {
    const ref = { source: "flaky", id: "f-1" };
    await storeDelivery(ref);
    const queue = faultyQueue(null);
    const handlers = defineHandlers({
      flaky: {
        "*": () => {
          throw new RetryAfterError("the ledger said 503", 42);
        },
      },
    });
    const old = await consume([ref], handlers, { DELIVERIES: queue.queue }, { attempts: FRESH_MESSAGE_AFTER + 3 });
    expect(old.outcomes).toEqual([expect.objectContaining({ action: "retry", reason: "handler_error" })]);
    expect(old.result.explicitAcks).toHaveLength(1);
    expect(queue.sent).toEqual([ref]);
    expect(queue.delays).toEqual([(old.outcomes[0] as { delaySeconds: number }).delaySeconds]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", attempts: 1 });
  });

  it("is retried on its message when the fresh one cannot be sent: never dropped", async () => {
    const ref = { source: "waits", id: "w-2" };
    await storeDelivery(ref);
    const queue = faultyQueue(null, () => "throw");
    const old = await consume([ref], deferring, { DELIVERIES: queue.queue }, { attempts: FRESH_MESSAGE_AFTER + 1 });
    expect(old.result.explicitAcks).toEqual([]);
    expect(old.result.retryMessages).toHaveLength(1);
    expect(old.retryDelays).toEqual([7]);
  });

  it("keeps its message for an infrastructure retry, whose backoff grows with it", async () => {
    const ref = { source: "waits", id: "w-3" };
    await storeDelivery(ref);
    const queue = faultyQueue(null);
    const old = await consume([ref], deferring, { ...unreachableStore().bindings, DELIVERIES: queue.queue }, { attempts: FRESH_MESSAGE_AFTER + 2 });
    expect(old.outcomes).toEqual([expect.objectContaining({ action: "retry", reason: "infrastructure" })]);
    expect(old.result.retryMessages).toHaveLength(1);
    expect(queue.sent).toEqual([]);
  });
});
